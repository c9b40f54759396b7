/*
 * Large dynamic shared memory: gcap_kernel_set_attribute(GCAP_KERNEL_ATTR_MAX_DYNAMIC_SHARED_SIZE)
 * lets a kernel ask for more than 48 KiB, up to the device's limit; launches, kernel nodes
 * (added, set, updated, captured) check against it; the simulator runs such blocks, PTX and CPU
 * ones, with every check. And the special registers that describe a launch: %smid, %nsmid,
 * %gridid, %dynamic_smem_size, %total_smem_size.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "ptx_util.h"

#define KIB 1024u
#define DEVICE_LIMIT 232448u /* the simulated H100's shared memory a block: 227 KiB */
#define BIG (96u * KIB)
#define THREADS 256u

/* `reverse` fills `words` words of dynamic shared memory, then writes them out backwards. `tile`
 * has 1 KiB of static shared memory. `sregs` writes what describes its launch, per block. */
static const char smem_ptx[] = ".version 8.0\n"
                               ".target sm_80\n"
                               ".address_size 64\n"
                               ".extern .shared .align 16 .b8 dyn[];\n"
                               ".visible .entry reverse(.param .u64 out, .param .u32 words)\n"
                               "{\n"
                               ".reg .pred %p<2>;\n"
                               ".reg .b32 %r<10>;\n"
                               ".reg .b64 %rd<4>;\n"
                               "ld.param.u64 %rd1, [out];\n"
                               "cvta.to.global.u64 %rd1, %rd1;\n"
                               "ld.param.u32 %r1, [words];\n"
                               "mov.u32 %r2, %tid.x;\n"
                               "mov.u32 %r3, %ntid.x;\n"
                               "mov.u32 %r4, dyn;\n"
                               "mov.u32 %r5, %r2;\n"
                               "FILL:\n"
                               "setp.ge.u32 %p1, %r5, %r1;\n"
                               "@%p1 bra FILLED;\n"
                               "shl.b32 %r6, %r5, 2;\n"
                               "add.s32 %r6, %r6, %r4;\n"
                               "mul.lo.u32 %r7, %r5, 40503;\n"
                               "xor.b32 %r7, %r7, 1515870810;\n"
                               "st.shared.u32 [%r6], %r7;\n"
                               "add.s32 %r5, %r5, %r3;\n"
                               "bra FILL;\n"
                               "FILLED:\n"
                               "bar.sync 0;\n"
                               "mov.u32 %r5, %r2;\n"
                               "OUT:\n"
                               "setp.ge.u32 %p1, %r5, %r1;\n"
                               "@%p1 bra DONE;\n"
                               "sub.s32 %r8, %r1, 1;\n"
                               "sub.s32 %r8, %r8, %r5;\n"
                               "shl.b32 %r6, %r8, 2;\n"
                               "add.s32 %r6, %r6, %r4;\n"
                               "ld.shared.u32 %r7, [%r6];\n"
                               "mul.wide.u32 %rd2, %r5, 4;\n"
                               "add.s64 %rd3, %rd1, %rd2;\n"
                               "st.global.u32 [%rd3], %r7;\n"
                               "add.s32 %r5, %r5, %r3;\n"
                               "bra OUT;\n"
                               "DONE:\n"
                               "ret;\n"
                               "}\n"
                               ".visible .entry tile(.param .u64 out)\n"
                               "{\n"
                               ".shared .align 4 .b8 buf[1024];\n"
                               "ret;\n"
                               "}\n"
                               ".visible .entry sregs(.param .u64 out)\n"
                               "{\n"
                               ".shared .align 4 .b8 bytes[100];\n"
                               ".reg .b32 %r<8>;\n"
                               ".reg .b64 %rd<8>;\n"
                               "ld.param.u64 %rd1, [out];\n"
                               "cvta.to.global.u64 %rd1, %rd1;\n"
                               "mov.u32 %r1, %ctaid.x;\n"
                               "mov.u32 %r6, %ctaid.y;\n"
                               "mov.u32 %r7, %nctaid.x;\n"
                               "mad.lo.s32 %r1, %r6, %r7, %r1;\n"
                               "mul.wide.u32 %rd2, %r1, 24;\n"
                               "add.s64 %rd3, %rd1, %rd2;\n"
                               "mov.u32 %r2, %smid;\n"
                               "mov.u32 %r3, %nsmid;\n"
                               "mov.u32 %r4, %dynamic_smem_size;\n"
                               "mov.u32 %r5, %total_smem_size;\n"
                               "mov.u64 %rd4, %gridid;\n"
                               "st.global.u32 [%rd3], %r2;\n"
                               "st.global.u32 [%rd3+4], %r3;\n"
                               "st.global.u32 [%rd3+8], %r4;\n"
                               "st.global.u32 [%rd3+12], %r5;\n"
                               "st.global.u64 [%rd3+16], %rd4;\n"
                               "ret;\n"
                               "}\n";

struct fixture {
  gcap_context *ctx;
  gcap_stream *s;
  gcap_module *m;
  gcap_kernel *reverse, *tile;
};

static int setup(void **state) {
  struct fixture *f = calloc(1, sizeof *f);
  if (!f) return -1;
  f->ctx = ptx_context(GCAP_SIM_CHECK_MEMORY | GCAP_SIM_CHECK_SYNC | GCAP_SIM_CHECK_SHARED_RACES | GCAP_SIM_CHECK_INIT);
  if (!f->ctx || gcap_stream_create(f->ctx, &f->s) != GCAP_SUCCESS) return -1;
  f->m = ptx_load_text(f->ctx, smem_ptx);
  f->reverse = test_kernel_of(f->m, "reverse");
  f->tile = test_kernel_of(f->m, "tile");
  *state = f;
  return 0;
}

static int teardown(void **state) {
  struct fixture *f = *state;
  gcap_context_destroy(f->ctx);
  free(f);
  return 0;
}

static int max_dynamic(gcap_kernel *k) {
  int v = -1;
  assert_ok(gcap_kernel_get_attribute(k, GCAP_KERNEL_ATTR_MAX_DYNAMIC_SHARED_SIZE, &v));
  return v;
}

static uint32_t expected_word(uint32_t i) { return (i * 40503u) ^ 1515870810u; }

/* Runs `reverse` over `words` words of dynamic shared memory and checks what it wrote. */
static void check_reverse(gcap_context *ctx, uint32_t words, void *dout) {
  uint32_t *out = calloc(words, sizeof *out);
  assert_non_null(out);
  ptx_get(ctx, out, dout, words * sizeof *out);
  for (uint32_t i = 0; i < words; i++)
    if (out[i] != expected_word(words - 1 - i))
      fail_msg("word %u: %#x, want %#x", i, out[i], expected_word(words - 1 - i));
  free(out);
}

static void test_set_and_get(void **state) {
  struct fixture *f = *state;
  assert_int_equal(max_dynamic(f->reverse), 48 * KIB);
  assert_int_equal(max_dynamic(f->tile), 48 * KIB - KIB); /* 48 KiB less the static */
  assert_ok(gcap_kernel_set_attribute(f->reverse, GCAP_KERNEL_ATTR_MAX_DYNAMIC_SHARED_SIZE, (int)BIG));
  assert_int_equal(max_dynamic(f->reverse), BIG);
  assert_int_equal(max_dynamic(f->tile), 48 * KIB - KIB); /* per kernel */
  assert_ok(gcap_kernel_set_attribute(f->reverse, GCAP_KERNEL_ATTR_MAX_DYNAMIC_SHARED_SIZE, 1000));
  assert_int_equal(max_dynamic(f->reverse), 1000); /* may also shrink */
  if (test_on_sim()) {                             /* the device's limit, less the static */
    assert_ok(gcap_kernel_set_attribute(f->tile, GCAP_KERNEL_ATTR_MAX_DYNAMIC_SHARED_SIZE, (int)(DEVICE_LIMIT - KIB)));
    assert_int_equal(max_dynamic(f->tile), DEVICE_LIMIT - KIB);
    assert_status(
        gcap_kernel_set_attribute(f->tile, GCAP_KERNEL_ATTR_MAX_DYNAMIC_SHARED_SIZE, (int)DEVICE_LIMIT - 1023),
        GCAP_ERROR_INVALID_VALUE);
    test_assert_message_contains("gcap_kernel_set_attribute");
    test_assert_message_contains("value 231425");
    test_assert_message_contains("231424");
    assert_int_equal(max_dynamic(f->tile), DEVICE_LIMIT - KIB); /* unchanged */
    assert_ok(gcap_kernel_set_attribute(f->reverse, GCAP_KERNEL_ATTR_MAX_DYNAMIC_SHARED_SIZE, (int)DEVICE_LIMIT));
  }
}

static void test_refusals(void **state) {
  struct fixture *f = *state;
  assert_status(gcap_kernel_set_attribute(NULL, GCAP_KERNEL_ATTR_MAX_DYNAMIC_SHARED_SIZE, 1),
                GCAP_ERROR_INVALID_HANDLE);
  test_assert_message_contains("gcap_kernel_set_attribute");
  assert_status(gcap_kernel_set_attribute(f->reverse, GCAP_KERNEL_ATTR_MAX_DYNAMIC_SHARED_SIZE, -1),
                GCAP_ERROR_INVALID_VALUE);
  test_assert_message_contains("value -1");
  assert_status(gcap_kernel_set_attribute(f->reverse, GCAP_KERNEL_ATTR_MAX_DYNAMIC_SHARED_SIZE, 1 << 30),
                GCAP_ERROR_INVALID_VALUE);
  test_assert_message_contains("gcap_kernel_set_attribute");
  assert_status(gcap_kernel_set_attribute(f->reverse, GCAP_KERNEL_ATTR_SHARED_SIZE_BYTES, 0), GCAP_ERROR_INVALID_VALUE);
  test_assert_message_contains("attr 1 cannot be set");
  assert_status(gcap_kernel_set_attribute(f->reverse, GCAP_KERNEL_ATTR_MAX_THREADS_PER_BLOCK, 64),
                GCAP_ERROR_INVALID_VALUE);
  assert_status(gcap_kernel_set_attribute(f->reverse, (gcap_kernel_attr)9, 64), GCAP_ERROR_INVALID_VALUE);
  assert_int_equal(max_dynamic(f->reverse), 48 * KIB); /* nothing changed */
}

/* 96 KiB: refused without the attribute (as CUDA), run with it, PTX blocks with every check. */
static void test_launch(void **state) {
  struct fixture *f = *state;
  uint32_t words = BIG / 4;
  void *dout = ptx_dev(f->ctx, NULL, BIG);
  void *args[] = {&dout, &words};
  assert_status(gcap_launch_kernel(f->s, f->reverse, GCAP_DIM3(2, 1, 1), GCAP_DIM3(THREADS, 1, 1), BIG, args),
                GCAP_ERROR_INVALID_VALUE);
  test_assert_message_contains("shared_mem_bytes 98304 exceeds 49152");
  test_assert_message_contains("GCAP_KERNEL_ATTR_MAX_DYNAMIC_SHARED_SIZE");
  uint32_t small = 1024; /* 4 KiB, then 96 KiB: the worker's buffers grow */
  void *small_args[] = {&dout, &small};
  assert_ok(gcap_launch_kernel(f->s, f->reverse, GCAP_DIM3(1, 1, 1), GCAP_DIM3(THREADS, 1, 1), small * 4, small_args));
  assert_ok(gcap_stream_synchronize(f->s));
  check_reverse(f->ctx, small, dout);
  assert_ok(gcap_kernel_set_attribute(f->reverse, GCAP_KERNEL_ATTR_MAX_DYNAMIC_SHARED_SIZE, (int)BIG));
  assert_ok(gcap_launch_kernel(f->s, f->reverse, GCAP_DIM3(2, 1, 1), GCAP_DIM3(THREADS, 1, 1), BIG, args));
  assert_ok(gcap_stream_synchronize(f->s));
  check_reverse(f->ctx, words, dout);
  assert_status(gcap_launch_kernel(f->s, f->reverse, GCAP_DIM3(1, 1, 1), GCAP_DIM3(THREADS, 1, 1), BIG + 4, args),
                GCAP_ERROR_INVALID_VALUE);
  test_assert_message_contains("shared_mem_bytes 98308 exceeds the 98304 bytes kernel \"reverse\" opted into");
  /* without opting in, static and dynamic together stay within 48 KiB */
  void *tile_args[] = {&dout};
  assert_status(gcap_launch_kernel(f->s, f->tile, GCAP_DIM3(1, 1, 1), GCAP_DIM3(32, 1, 1), 48 * KIB, tile_args),
                GCAP_ERROR_INVALID_VALUE);
  test_assert_message_contains("48128");
  assert_ok(gcap_launch_kernel(f->s, f->tile, GCAP_DIM3(1, 1, 1), GCAP_DIM3(32, 1, 1), 47 * KIB, tile_args));
  assert_ok(gcap_stream_synchronize(f->s));
}

/* The most the simulated device gives a block: 227 KiB, every byte used. */
static void test_device_limit(void **state) {
  struct fixture *f = *state;
  test_require_sim();
  uint32_t words = DEVICE_LIMIT / 4;
  void *dout = ptx_dev(f->ctx, NULL, DEVICE_LIMIT);
  void *args[] = {&dout, &words};
  assert_ok(gcap_kernel_set_attribute(f->reverse, GCAP_KERNEL_ATTR_MAX_DYNAMIC_SHARED_SIZE, (int)DEVICE_LIMIT));
  assert_ok(gcap_launch_kernel(f->s, f->reverse, GCAP_DIM3(1, 1, 1), GCAP_DIM3(1024, 1, 1), DEVICE_LIMIT, args));
  assert_ok(gcap_stream_synchronize(f->s));
  check_reverse(f->ctx, words, dout);
}

/* Kernel nodes: added, set, captured, updated and set in an executable graph, checked alike. */
static void test_nodes(void **state) {
  struct fixture *f = *state;
  uint32_t words = BIG / 4;
  void *dout = ptx_dev(f->ctx, NULL, BIG);
  void *args[] = {&dout, &words};
  gcap_kernel_node_params big = {f->reverse, GCAP_DIM3(1, 1, 1), GCAP_DIM3(THREADS, 1, 1), BIG, args};
  gcap_kernel_node_params small = big;
  small.shared_mem_bytes = 4 * KIB;
  gcap_graph *g = NULL;
  gcap_node *n = NULL;
  assert_ok(gcap_graph_create(f->ctx, &g));
  assert_status(gcap_graph_add_kernel_node(g, NULL, 0, &big, &n), GCAP_ERROR_INVALID_VALUE);
  test_assert_message_contains("gcap_graph_add_kernel_node");
  test_assert_message_contains("shared_mem_bytes 98304");
  assert_ok(gcap_graph_add_kernel_node(g, NULL, 0, &small, &n));
  assert_status(gcap_node_set_kernel_params(n, &big), GCAP_ERROR_INVALID_VALUE);
  gcap_exec *x = NULL;
  assert_ok(gcap_graph_instantiate(g, 0, &x));
  assert_status(gcap_exec_kernel_node_set_params(x, n, &big), GCAP_ERROR_INVALID_VALUE);
  /* a capture records the launch after the same check */
  assert_ok(gcap_stream_begin_capture(f->s, GCAP_CAPTURE_MODE_THREAD_LOCAL));
  assert_status(gcap_launch_kernel(f->s, f->reverse, big.grid, big.block, BIG, args), GCAP_ERROR_INVALID_VALUE);
  gcap_graph *captured = NULL;
  assert_status(gcap_stream_end_capture(f->s, &captured), GCAP_ERROR_STREAM_CAPTURE_INVALIDATED);
  gcap_graph_destroy(captured);

  assert_ok(gcap_kernel_set_attribute(f->reverse, GCAP_KERNEL_ATTR_MAX_DYNAMIC_SHARED_SIZE, (int)BIG));
  assert_ok(gcap_exec_kernel_node_set_params(x, n, &big));
  assert_ok(gcap_exec_launch(x, f->s));
  assert_ok(gcap_stream_synchronize(f->s));
  check_reverse(f->ctx, words, dout);
  assert_ok(gcap_node_set_kernel_params(n, &big));
  gcap_graph *g2 = NULL;
  gcap_node *n2 = NULL;
  assert_ok(gcap_graph_create(f->ctx, &g2));
  assert_ok(gcap_graph_add_kernel_node(g2, NULL, 0, &big, &n2));
  gcap_exec_update_info info;
  assert_ok(gcap_exec_update(x, g2, &info));
  assert_ok(gcap_stream_begin_capture(f->s, GCAP_CAPTURE_MODE_THREAD_LOCAL));
  assert_ok(gcap_launch_kernel(f->s, f->reverse, big.grid, big.block, BIG, args));
  assert_ok(gcap_stream_end_capture(f->s, &captured));
  gcap_node *nodes[2];
  size_t count = 2;
  assert_ok(gcap_graph_get_nodes(captured, nodes, &count));
  assert_int_equal(count, 1);
  gcap_kernel_node_params got;
  assert_ok(gcap_node_get_kernel_params(nodes[0], &got));
  assert_int_equal(got.shared_mem_bytes, BIG);
  gcap_exec *cx = NULL;
  assert_ok(gcap_graph_instantiate(captured, 0, &cx));
  ptx_put(f->ctx, dout, (uint32_t[1]){0}, 4);
  assert_ok(gcap_exec_launch(cx, f->s));
  assert_ok(gcap_stream_synchronize(f->s));
  check_reverse(f->ctx, words, dout);
  gcap_exec_destroy(cx);
  gcap_exec_destroy(x);
  gcap_graph_destroy(captured);
  gcap_graph_destroy(g2);
  gcap_graph_destroy(g);
}

/* A CPU implementation's blocks get their dynamic shared memory, however large; block b writes
 * the b-th run of `words` output words. */
static void cpu_reverse(const gcap_sim_block *b, void *const *args) {
  uint32_t words = *(const uint32_t *)args[1];
  uint32_t *out = *(uint32_t *const *)args[0] + (size_t)b->block_idx.x * words;
  uint32_t *sh = b->shared_mem;
  for (uint32_t i = 0; i < words; i++) sh[i] = expected_word(i);
  for (uint32_t i = 0; i < words; i++) out[i] = sh[words - 1 - i];
}

static void test_cpu_kernel(void **state) {
  (void)state;
  test_require_sim();
  static const size_t sizes[] = {8, 4};
  gcap_kernel_def def = {.name = "cpu_reverse", .num_params = 2, .param_sizes = sizes, .sim_block_fn = cpu_reverse};
  gcap_module_desc d = {.kernels = &def, .num_kernels = 1};
  gcap_sim_options so;
  gcap_sim_options_init(&so);
  so.threads = 2; /* the caller and a worker: each grows its own buffer */
  gcap_context *ctx = test_sim_context_create(&so);
  gcap_stream *s = NULL;
  assert_ok(gcap_stream_create(ctx, &s));
  gcap_module *m = NULL;
  assert_ok(gcap_module_load(ctx, &d, &m));
  gcap_kernel *k = test_kernel_of(m, "cpu_reverse");
  uint32_t words = 200u * KIB / 4;
  void *dout = ptx_dev(ctx, NULL, 2 * words * 4);
  void *args[] = {&dout, &words};
  assert_status(gcap_launch_kernel(s, k, GCAP_DIM3(2, 1, 1), GCAP_DIM3(1, 1, 1), words * 4, args),
                GCAP_ERROR_INVALID_VALUE);
  assert_ok(gcap_kernel_set_attribute(k, GCAP_KERNEL_ATTR_MAX_DYNAMIC_SHARED_SIZE, (int)(words * 4)));
  assert_int_equal(max_dynamic(k), words * 4);
  assert_ok(gcap_launch_kernel(s, k, GCAP_DIM3(2, 1, 1), GCAP_DIM3(1, 1, 1), words * 4, args));
  assert_ok(gcap_stream_synchronize(s));
  check_reverse(ctx, words, dout);
  check_reverse(ctx, words, (char *)dout + words * 4);
  assert_status(gcap_kernel_set_attribute(k, GCAP_KERNEL_ATTR_MAX_DYNAMIC_SHARED_SIZE, (int)DEVICE_LIMIT + 1),
                GCAP_ERROR_INVALID_VALUE);
  test_assert_message_contains("cpu_reverse");
  assert_ok(gcap_module_unload(m));
  gcap_context_destroy(ctx);
}

struct sregs {
  uint32_t smid, nsmid, dynamic, total;
  uint64_t gridid;
};

/* %smid, %nsmid, %gridid, %dynamic_smem_size, %total_smem_size of every block of two launches. */
static void test_special_registers(void **state) {
  struct fixture *f = *state;
  enum { X = 200, Y = 2, BLOCKS = X * Y, DYNAMIC = 300 };
  gcap_kernel *k = test_kernel_of(f->m, "sregs");
  void *dout = ptx_dev(f->ctx, NULL, 2 * BLOCKS * sizeof(struct sregs));
  void *dsecond = (char *)dout + BLOCKS * sizeof(struct sregs);
  void *args[] = {&dout}, *second_args[] = {&dsecond};
  assert_ok(gcap_launch_kernel(f->s, k, GCAP_DIM3(X, Y, 1), GCAP_DIM3(32, 1, 1), DYNAMIC, args));
  assert_ok(gcap_launch_kernel(f->s, k, GCAP_DIM3(X, Y, 1), GCAP_DIM3(32, 1, 1), 0, second_args));
  assert_ok(gcap_stream_synchronize(f->s));
  struct sregs *out = calloc(2 * BLOCKS, sizeof *out);
  assert_non_null(out);
  ptx_get(f->ctx, out, dout, 2 * BLOCKS * sizeof *out);
  for (unsigned i = 0; i < 2 * BLOCKS; i++) {
    const struct sregs *r = &out[i];
    bool first = i < BLOCKS;
    assert_true(r->smid < r->nsmid);
    assert_int_equal(r->dynamic, first ? DYNAMIC : 0);
    assert_int_equal(r->gridid, out[first ? 0 : BLOCKS].gridid); /* one a launch */
    if (!test_on_sim()) continue;
    assert_int_equal(r->nsmid, 132); /* the simulated H100 */
    assert_int_equal(r->smid, (i % BLOCKS) % 132);
    /* static (100 bytes, 16-aligned for the dynamic array) and dynamic, in 128-byte units */
    assert_int_equal(r->total, first ? (112 + DYNAMIC + 127) / 128 * 128 : 128);
  }
  assert_true(out[0].gridid != out[BLOCKS].gridid);
  free(out);
}

int main(void) {
  test_require_backend();
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_set_and_get, setup, teardown),
      cmocka_unit_test_setup_teardown(test_refusals, setup, teardown),
      cmocka_unit_test_setup_teardown(test_launch, setup, teardown),
      cmocka_unit_test_setup_teardown(test_device_limit, setup, teardown),
      cmocka_unit_test_setup_teardown(test_nodes, setup, teardown),
      cmocka_unit_test_setup_teardown(test_cpu_kernel, setup, teardown),
      cmocka_unit_test_setup_teardown(test_special_registers, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
