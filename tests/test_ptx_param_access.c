/*
 * Parameter access read from PTX (src/ptx/access.c): what each entry's pointer parameters are used
 * for, when the analysis gives up (UNKNOWN), and what race analysis makes of it for kernels
 * loaded from PTX without definitions; definitions given with the image keep theirs.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "ptx/ptx.h"

#define U GCAP_ACCESS_UNKNOWN
#define N GCAP_ACCESS_NONE
#define R GCAP_ACCESS_READ
#define W GCAP_ACCESS_WRITE
#define RW GCAP_ACCESS_READ_WRITE

/* clang-format off */
static const char kernels_ptx[] =
    ".version 7.0\n"
    ".target sm_80\n"
    ".address_size 64\n"
    "\n"
    ".func helper(.param .b64 helper_param_0)\n"
    "{\n"
    "\tret;\n"
    "}\n"
    "\n"
    /* dst[i] = src[i] for i < n */
    ".visible .entry copy(.param .u64 copy_param_0, .param .u64 copy_param_1, .param .u32 copy_param_2)\n"
    "{\n"
    "\t.reg .pred %p<2>;\n"
    "\t.reg .b32 %r<4>;\n"
    "\t.reg .f32 %f<2>;\n"
    "\t.reg .b64 %rd<8>;\n"
    "\tld.param.u64 %rd1, [copy_param_0];\n"
    "\tld.param.u64 %rd2, [copy_param_1];\n"
    "\tld.param.u32 %r1, [copy_param_2];\n"
    "\tmov.u32 %r2, %tid.x;\n"
    "\tsetp.ge.u32 %p1, %r2, %r1;\n"
    "\t@%p1 bra $L_done;\n"
    "\tcvta.to.global.u64 %rd3, %rd1;\n"
    "\tcvta.to.global.u64 %rd4, %rd2;\n"
    "\tmul.wide.u32 %rd5, %r2, 4;\n"
    "\tadd.s64 %rd6, %rd4, %rd5;\n"
    "\tld.global.f32 %f1, [%rd6];\n"
    "\tadd.s64 %rd7, %rd3, %rd5;\n"
    "\tst.global.f32 [%rd7], %f1;\n"
    "$L_done:\n"
    "\tret;\n"
    "}\n"
    "\n"
    /* p[i] *= 2 in place */
    ".visible .entry scale(.param .u64 scale_param_0)\n"
    "{\n"
    "\t.reg .b32 %r<2>;\n"
    "\t.reg .f32 %f<3>;\n"
    "\t.reg .b64 %rd<5>;\n"
    "\tld.param.u64 %rd1, [scale_param_0];\n"
    "\tcvta.to.global.u64 %rd2, %rd1;\n"
    "\tmov.u32 %r1, %tid.x;\n"
    "\tmul.wide.u32 %rd3, %r1, 4;\n"
    "\tadd.s64 %rd4, %rd2, %rd3;\n"
    "\tld.global.f32 %f1, [%rd4];\n"
    "\tadd.f32 %f2, %f1, %f1;\n"
    "\tst.global.f32 [%rd4], %f2;\n"
    "\tret;\n"
    "}\n"
    "\n"
    /* atomicAdd(counter, 1); red on the second */
    ".visible .entry count(.param .u64 count_param_0, .param .u64 count_param_1)\n"
    "{\n"
    "\t.reg .b32 %r<2>;\n"
    "\t.reg .b64 %rd<5>;\n"
    "\tld.param.u64 %rd1, [count_param_0];\n"
    "\tcvta.to.global.u64 %rd2, %rd1;\n"
    "\tatom.global.add.u32 %r1, [%rd2], 1;\n"
    "\tld.param.u64 %rd3, [count_param_1];\n"
    "\tred.global.add.u32 [%rd3], 1;\n"
    "\tret;\n"
    "}\n"
    "\n"
    /* *slot = p: p escapes; slot is written */
    ".visible .entry leak(.param .u64 leak_param_0, .param .u64 leak_param_1)\n"
    "{\n"
    "\t.reg .b64 %rd<4>;\n"
    "\tld.param.u64 %rd1, [leak_param_0];\n"
    "\tld.param.u64 %rd2, [leak_param_1];\n"
    "\tcvta.to.global.u64 %rd3, %rd2;\n"
    "\tst.global.u64 [%rd3], %rd1;\n"
    "\tret;\n"
    "}\n"
    "\n"
    /* helper(p): p escapes; the callee touches no global memory */
    ".visible .entry pass(.param .u64 pass_param_0, .param .u64 pass_param_1)\n"
    "{\n"
    "\t.reg .b32 %r<2>;\n"
    "\t.reg .b64 %rd<3>;\n"
    "\tld.param.u64 %rd1, [pass_param_0];\n"
    "\tld.param.u64 %rd2, [pass_param_1];\n"
    "\tld.global.u32 %r1, [%rd2];\n"
    "\t{\n"
    "\t.param .b64 param0;\n"
    "\tst.param.b64 [param0], %rd1;\n"
    "\tcall.uni helper, (param0);\n"
    "\t}\n"
    "\tret;\n"
    "}\n"
    "\n"
    ".func poke(.param .b64 poke_param_0)\n"
    "{\n"
    "\t.reg .b64 %rd<2>;\n"
    "\tld.param.u64 %rd1, [poke_param_0];\n"
    "\tst.global.u32 [%rd1], 0;\n"
    "\tret;\n"
    "}\n"
    "\n"
    /* poke(p): a callee that writes global memory could write anything */
    ".visible .entry pass_poke(.param .u64 pass_poke_param_0, .param .u64 pass_poke_param_1)\n"
    "{\n"
    "\t.reg .b32 %r<2>;\n"
    "\t.reg .b64 %rd<3>;\n"
    "\tld.param.u64 %rd1, [pass_poke_param_0];\n"
    "\tld.param.u64 %rd2, [pass_poke_param_1];\n"
    "\tld.global.u32 %r1, [%rd2];\n"
    "\t{\n"
    "\t.param .b64 param0;\n"
    "\tst.param.b64 [param0], %rd1;\n"
    "\tcall.uni poke, (param0);\n"
    "\t}\n"
    "\tret;\n"
    "}\n"
    "\n"
    /* *out = **table: a read through a loaded pointer may read any allocation, q's included */
    ".visible .entry peek(.param .u64 peek_param_0, .param .u64 peek_param_1, .param .u64 peek_param_2)\n"
    "{\n"
    "\t.reg .b32 %r<2>;\n"
    "\t.reg .b64 %rd<5>;\n"
    "\tld.param.u64 %rd1, [peek_param_0];\n"
    "\tld.param.u64 %rd4, [peek_param_2];\n"
    "\tld.global.u64 %rd2, [%rd1];\n"
    "\tld.global.u32 %r1, [%rd2];\n"
    "\tst.global.u32 [%rd4], %r1;\n"
    "\tret;\n"
    "}\n";

static const char more_ptx[] =
    ".version 7.0\n"
    ".target sm_80\n"
    ".address_size 64\n"
    "\n"
    /* reads p, never touches q */
    ".visible .entry unused(.param .u64 unused_param_0, .param .u64 unused_param_1)\n"
    "{\n"
    "\t.reg .b32 %r<2>;\n"
    "\t.reg .b64 %rd<3>;\n"
    "\tld.param.u64 %rd1, [unused_param_0];\n"
    "\tld.param.u64 %rd2, [unused_param_1];\n"
    "\tld.global.u32 %r1, [%rd1];\n"
    "\tret;\n"
    "}\n"
    "\n"
    /* *(c ? a : b) = 0 (both written), through a register set on a branch and used before it */
    ".visible .entry choose(.param .u64 choose_param_0, .param .u64 choose_param_1, .param .u32 choose_param_2)\n"
    "{\n"
    "\t.reg .pred %p<2>;\n"
    "\t.reg .b32 %r<2>;\n"
    "\t.reg .b64 %rd<6>;\n"
    "\tld.param.u64 %rd1, [choose_param_0];\n"
    "\tld.param.u32 %r1, [choose_param_2];\n"
    "\tsetp.ne.u32 %p1, %r1, 0;\n"
    "\tmov.u64 %rd4, %rd1;\n"
    "\t@%p1 bra $L_store;\n"
    "\tld.param.u64 %rd2, [choose_param_1];\n"
    "\tmov.u64 %rd5, %rd2;\n"
    "\tbra.uni $L_swap;\n"
    "$L_store:\n"
    "\tst.global.u32 [%rd4], 0;\n"
    "\tret;\n"
    "$L_swap:\n"
    "\tmov.u64 %rd4, %rd5;\n"
    "\tbra.uni $L_store;\n"
    "}\n"
    "\n"
    /* **pp = 0: a write through a pointer loaded from memory could land anywhere */
    ".visible .entry chase(.param .u64 chase_param_0, .param .u64 chase_param_1)\n"
    "{\n"
    "\t.reg .b32 %r<2>;\n"
    "\t.reg .b64 %rd<4>;\n"
    "\tld.param.u64 %rd1, [chase_param_0];\n"
    "\tld.param.u64 %rd3, [chase_param_1];\n"
    "\tld.global.u32 %r1, [%rd3];\n"
    "\tld.global.u64 %rd2, [%rd1];\n"
    "\tst.global.u32 [%rd2], 0;\n"
    "\tret;\n"
    "}\n"
    "\n"
    /* the parameter's own address taken */
    ".visible .entry addressed(.param .u64 addressed_param_0)\n"
    "{\n"
    "\t.reg .b32 %r<2>;\n"
    "\t.reg .b64 %rd<3>;\n"
    "\tmov.u64 %rd1, addressed_param_0;\n"
    "\tld.param.u64 %rd2, [%rd1];\n"
    "\tld.global.u32 %r1, [%rd2];\n"
    "\tret;\n"
    "}\n"
    "\n"
    /* a prefetch is no access; a pointer spilled to the stack escapes */
    ".visible .entry hints(.param .u64 hints_param_0, .param .u64 hints_param_1)\n"
    "{\n"
    "\t.local .align 8 .b8 depot[8];\n"
    "\t.reg .b32 %r<2>;\n"
    "\t.reg .b64 %rd<5>;\n"
    "\tld.param.u64 %rd1, [hints_param_0];\n"
    "\tprefetch.global.L2 [%rd1];\n"
    "\tld.param.u64 %rd2, [hints_param_1];\n"
    "\tmov.u64 %rd3, depot;\n"
    "\tst.local.u64 [%rd3], %rd2;\n"
    "\tret;\n"
    "}\n"
    "\n"
    /* a tile of a copied in by cp.async, fragments of b through wmma.load and out to c by
     * wmma.store, ldmatrix, mma and an mbarrier on shared memory; d never touched */
    ".visible .entry tensor(.param .u64 tensor_param_0, .param .u64 tensor_param_1, .param .u64 tensor_param_2,\n"
    "\t.param .u64 tensor_param_3)\n"
    "{\n"
    "\t.shared .align 16 .b8 tile[512];\n"
    "\t.shared .align 8 .b64 bar;\n"
    "\t.reg .b32 %r<8>;\n"
    "\t.reg .f32 %f<16>;\n"
    "\t.reg .b64 %rd<8>;\n"
    "\tld.param.u64 %rd1, [tensor_param_0];\n"
    "\tld.param.u64 %rd2, [tensor_param_1];\n"
    "\tld.param.u64 %rd3, [tensor_param_2];\n"
    "\tld.param.u64 %rd4, [tensor_param_3];\n"
    "\tcvta.to.global.u64 %rd5, %rd1;\n"
    "\tmov.u32 %r1, tile;\n"
    "\tcp.async.ca.shared.global [%r1], [%rd5], 16;\n"
    "\tcp.async.commit_group;\n"
    "\tcp.async.wait_all;\n"
    "\tmov.u32 %r2, bar;\n"
    "\tmbarrier.init.shared.b64 [%r2], 1;\n"
    "\tldmatrix.sync.aligned.m8n8.x2.shared.b16 {%r3, %r4}, [%r1];\n"
    "\tmma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32 {%f1, %f2, %f3, %f4}, {%r3, %r4}, {%r3}, {%f1, %f2, %f3, %f4};\n"
    "\tcvta.to.global.u64 %rd6, %rd2;\n"
    "\twmma.load.c.sync.aligned.row.m16n16k16.global.f32 {%f1, %f2, %f3, %f4, %f5, %f6, %f7, %f8}, [%rd6], 16;\n"
    "\tcvta.to.global.u64 %rd7, %rd3;\n"
    "\twmma.store.d.sync.aligned.row.m16n16k16.global.f32 [%rd7], {%f1, %f2, %f3, %f4, %f5, %f6, %f7, %f8}, 16;\n"
    "\tret;\n"
    "}\n";
/* clang-format on */

/* ---------------------------------------------------------------- the analysis itself */

static void expect_access(const struct ptx_module *m, const char *name, const gcap_param_access *want, size_t n) {
  const struct ptx_func *f = ptx_find_func(m, name);
  assert_non_null(f);
  assert_int_equal(f->num_params, n);
  gcap_param_access got[8];
  assert_true(n <= 8);
  assert_true(ptx_param_access(m, f, got));
  for (size_t p = 0; p < n; p++) {
    if (got[p] != want[p]) print_error("%s parameter %zu: got %d, want %d\n", name, p, (int)got[p], (int)want[p]);
    assert_int_equal(got[p], want[p]);
  }
}

static void test_inferred_per_parameter(void **state) {
  (void)state;
  struct ptx_error err;
  struct ptx_module *m = ptx_parse(kernels_ptx, sizeof kernels_ptx, PTX_PARSE_FULL, &err);
  if (!m) print_error("line %u, column %u: %s\n", err.line, err.column, err.message);
  assert_non_null(m);
  expect_access(m, "copy", (const gcap_param_access[]){W, R, U}, 3); /* a 4-byte parameter stays UNKNOWN */
  expect_access(m, "scale", (const gcap_param_access[]){RW}, 1);
  expect_access(m, "count", (const gcap_param_access[]){RW, RW}, 2);
  expect_access(m, "leak", (const gcap_param_access[]){U, W}, 2);
  expect_access(m, "pass", (const gcap_param_access[]){U, R}, 2); /* helper touches no global memory */
  expect_access(m, "pass_poke", (const gcap_param_access[]){U, U}, 2);
  expect_access(m, "peek", (const gcap_param_access[]){R, R, RW}, 3);
  ptx_module_free(m);
  m = ptx_parse(more_ptx, sizeof more_ptx, PTX_PARSE_FULL, &err);
  if (!m) print_error("line %u, column %u: %s\n", err.line, err.column, err.message);
  assert_non_null(m);
  expect_access(m, "unused", (const gcap_param_access[]){R, N}, 2);
  expect_access(m, "choose", (const gcap_param_access[]){W, W, U}, 3);
  expect_access(m, "chase", (const gcap_param_access[]){U, U}, 2);
  expect_access(m, "addressed", (const gcap_param_access[]){U}, 1);
  expect_access(m, "hints", (const gcap_param_access[]){N, U}, 2);
  expect_access(m, "tensor", (const gcap_param_access[]){R, R, W, N}, 4);
  ptx_module_free(m);
}

/* ---------------------------------------------------------------- what race analysis makes of it */

#define BYTES 256u

static gcap_module *load_ptx(gcap_context *ctx) {
  gcap_module_desc d = {.image = kernels_ptx, .image_size = sizeof kernels_ptx};
  gcap_module *m = NULL;
  assert_ok(gcap_module_load(ctx, &d, &m));
  return m;
}

static gcap_node *add_kernel(gcap_graph *g, gcap_kernel *k, void **args) {
  gcap_kernel_node_params kp = {k, {1, 1, 1}, {BYTES / 4, 1, 1}, 0, args};
  gcap_node *node = NULL;
  assert_ok(gcap_graph_add_kernel_node(g, NULL, 0, &kp, &node));
  return node;
}

static gcap_node *add_copy(gcap_graph *g, gcap_kernel *copy, void *dst, void *src) {
  static unsigned n = BYTES / 4;
  void *args[] = {&dst, &src, &n};
  return add_kernel(g, copy, args);
}

static gcap_node *add_scale(gcap_graph *g, gcap_kernel *scale, void *p) {
  void *args[] = {&p};
  return add_kernel(g, scale, args);
}

static size_t race_count(const gcap_graph *g) {
  size_t n = 12345;
  assert_ok(gcap_graph_find_races(g, NULL, &n));
  return n;
}

/* Two branches reading the same buffer into their own outputs do not race; one writing it does. */
static void test_parallel_readers_do_not_race(void **state) {
  (void)state;
  gcap_context *ctx = test_context_create();
  gcap_module *m = load_ptx(ctx);
  void *a = test_dev_alloc(ctx, BYTES), *b = test_dev_alloc(ctx, BYTES), *c = test_dev_alloc(ctx, BYTES);
  gcap_graph *g = test_graph_create(ctx);
  gcap_node *x = add_copy(g, test_kernel_of(m, "copy"), b, a);
  gcap_node *y = add_copy(g, test_kernel_of(m, "copy"), c, a);
  assert_int_equal(race_count(g), 0);
  gcap_node *z = add_scale(g, test_kernel_of(m, "scale"), a);
  gcap_race r[3];
  size_t n = 3;
  assert_ok(gcap_graph_find_races(g, r, &n));
  assert_int_equal(n, 2);
  assert_ptr_equal(r[0].first, x);
  assert_ptr_equal(r[0].second, z);
  assert_ptr_equal(r[1].first, y);
  assert_ptr_equal(r[1].second, z);
  assert_ptr_equal(r[0].addr, a);
  assert_int_equal(r[0].bytes, BYTES);
  gcap_graph_destroy(g);
  assert_ok(gcap_module_unload(m));
  gcap_context_destroy(ctx);
}

/* Two writers of separate outputs from one input race when both write the same output. */
static void test_parallel_writers_of_one_buffer_race(void **state) {
  (void)state;
  gcap_context *ctx = test_context_create();
  gcap_module *m = load_ptx(ctx);
  void *a = test_dev_alloc(ctx, BYTES), *b = test_dev_alloc(ctx, BYTES);
  gcap_graph *g = test_graph_create(ctx);
  gcap_node *x = add_copy(g, test_kernel_of(m, "copy"), b, a);
  gcap_node *y = add_copy(g, test_kernel_of(m, "copy"), b, a);
  gcap_race r[2];
  size_t n = 2;
  assert_ok(gcap_graph_find_races(g, r, &n));
  assert_int_equal(n, 1);
  assert_ptr_equal(r[0].first, x);
  assert_ptr_equal(r[0].second, y);
  assert_ptr_equal(r[0].addr, b);
  gcap_graph_destroy(g);
  assert_ok(gcap_module_unload(m));
  gcap_context_destroy(ctx);
}

/* Definitions given with the image keep their param_access (NULL: every pointer UNKNOWN). */
static void test_explicit_definitions_keep_theirs(void **state) {
  (void)state;
  gcap_context *ctx = test_context_create();
  static const size_t sizes[] = {8, 8, 4};
  gcap_kernel_def def = {.name = "copy", .num_params = 3, .param_sizes = sizes};
  gcap_module_desc d = {.image = kernels_ptx, .image_size = sizeof kernels_ptx, .kernels = &def, .num_kernels = 1};
  gcap_module *m = NULL;
  assert_ok(gcap_module_load(ctx, &d, &m));
  void *a = test_dev_alloc(ctx, BYTES), *b = test_dev_alloc(ctx, BYTES), *c = test_dev_alloc(ctx, BYTES);
  gcap_graph *g = test_graph_create(ctx);
  add_copy(g, test_kernel_of(m, "copy"), b, a);
  add_copy(g, test_kernel_of(m, "copy"), c, a);
  assert_int_equal(race_count(g), 1); /* both "write" a */
  gcap_graph_destroy(g);
  assert_ok(gcap_module_unload(m));
  gcap_context_destroy(ctx);
}

/* An inferred READ does not make a NULL argument an error (only declared accesses are checked). */
static void test_inferred_access_is_not_checked_at_launch(void **state) {
  (void)state;
  gcap_context *ctx = test_context_create();
  gcap_module *m = load_ptx(ctx);
  gcap_graph *g = test_graph_create(ctx);
  void *b = test_dev_alloc(ctx, BYTES);
  void *null = NULL;
  unsigned zero = 0;
  void *args[] = {&b, &null, &zero}; /* n = 0: src is never read */
  gcap_kernel_node_params kp = {test_kernel_of(m, "copy"), {1, 1, 1}, {1, 1, 1}, 0, args};
  gcap_node *node = NULL;
  assert_ok(gcap_graph_add_kernel_node(g, NULL, 0, &kp, &node));
  gcap_stream *s = test_stream_create(ctx);
  assert_ok(gcap_launch_kernel(s, kp.kernel, kp.grid, kp.block, 0, args));
  assert_ok(gcap_stream_synchronize(s));
  gcap_stream_destroy(s);
  gcap_graph_destroy(g);
  assert_ok(gcap_module_unload(m));
  gcap_context_destroy(ctx);
}

/* The simulator's check_races at instantiation agrees. */
static void test_check_races_on_instantiate(void **state) {
  (void)state;
  test_require_sim();
  gcap_sim_options so;
  gcap_sim_options_init(&so);
  so.check_races = true;
  gcap_context *ctx = test_sim_context_create(&so);
  gcap_module *m = load_ptx(ctx);
  void *a = test_dev_alloc(ctx, BYTES), *b = test_dev_alloc(ctx, BYTES), *c = test_dev_alloc(ctx, BYTES);
  gcap_graph *g = test_graph_create(ctx);
  add_copy(g, test_kernel_of(m, "copy"), b, a);
  add_copy(g, test_kernel_of(m, "copy"), c, a);
  gcap_exec *e = NULL;
  assert_ok(gcap_graph_instantiate(g, 0, &e));
  gcap_exec_destroy(e);
  add_scale(g, test_kernel_of(m, "scale"), a);
  e = (gcap_exec *)&e;
  assert_status(gcap_graph_instantiate(g, 0, &e), GCAP_ERROR_INVALID_VALUE);
  assert_null(e);
  test_assert_message_contains("2 races");
  gcap_graph_destroy(g);
  assert_ok(gcap_module_unload(m));
  gcap_context_destroy(ctx);
}

/* The stream race check (check_races on eager work) reads kernels the same way: two streams may
 * read one buffer at once, not read it while a third writes it. */
static void test_stream_race_check(void **state) {
  (void)state;
  test_require_sim();
  gcap_sim_options so;
  gcap_sim_options_init(&so);
  so.check_races = true;
  gcap_context *ctx = test_sim_context_create(&so);
  gcap_module *m = load_ptx(ctx);
  void *a = test_dev_alloc(ctx, BYTES), *b = test_dev_alloc(ctx, BYTES), *c = test_dev_alloc(ctx, BYTES);
  gcap_stream *s1 = test_stream_create(ctx), *s2 = test_stream_create(ctx), *s3 = test_stream_create(ctx);
  assert_ok(gcap_memset_async(s1, a, 0, BYTES));
  assert_ok(gcap_stream_synchronize(s1));
  unsigned n = BYTES / 4;
  gcap_kernel *copy = test_kernel_of(m, "copy"), *scale = test_kernel_of(m, "scale");
  void *args_b[] = {&b, &a, &n}, *args_c[] = {&c, &a, &n}, *args_a[] = {&a};
  assert_ok(gcap_launch_kernel(s1, copy, GCAP_DIM3(1, 1, 1), GCAP_DIM3(BYTES / 4, 1, 1), 0, args_b));
  assert_ok(gcap_launch_kernel(s2, copy, GCAP_DIM3(1, 1, 1), GCAP_DIM3(BYTES / 4, 1, 1), 0, args_c));
  assert_status(gcap_launch_kernel(s3, scale, GCAP_DIM3(1, 1, 1), GCAP_DIM3(BYTES / 4, 1, 1), 0, args_a),
                GCAP_ERROR_INVALID_VALUE);
  test_assert_message_contains("kernel \"copy\"");
  assert_ok(gcap_context_synchronize(ctx));
  gcap_stream_destroy(s1);
  gcap_stream_destroy(s2);
  gcap_stream_destroy(s3);
  assert_ok(gcap_module_unload(m));
  gcap_context_destroy(ctx);
}

int main(void) {
  test_require_backend();
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_inferred_per_parameter),
      cmocka_unit_test(test_parallel_readers_do_not_race),
      cmocka_unit_test(test_parallel_writers_of_one_buffer_race),
      cmocka_unit_test(test_explicit_definitions_keep_theirs),
      cmocka_unit_test(test_inferred_access_is_not_checked_at_launch),
      cmocka_unit_test(test_check_races_on_instantiate),
      cmocka_unit_test(test_stream_race_check),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
