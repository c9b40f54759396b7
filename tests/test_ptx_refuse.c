/*
 * A kernel the simulator cannot run is refused when it is launched or its node is added, not when
 * its module loads: the module's other kernels load and run. Launching it (eagerly, in either
 * execution mode, or into a capture), adding a kernel node for it, or switching a node or an
 * executable's entry to it fails with NOT_SUPPORTED, naming the call, the kernel, the instruction
 * and its PTX line; a kernel that calls (through other functions) a .func the simulator cannot run
 * is refused the same way. PTX that does not parse or is not valid still fails the load.
 */
#define _POSIX_C_SOURCE 200809L

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "ptx_util.h"

#define ARGS(...) ((void *[]){__VA_ARGS__})
#define DIM1(x) GCAP_DIM3((x), 1, 1)
#define CHECKS_ALL (GCAP_SIM_CHECK_MEMORY | GCAP_SIM_CHECK_SYNC | GCAP_SIM_CHECK_SHARED_RACES | GCAP_SIM_CHECK_INIT)
#define N 64

#define TEX_LINE "  tex.2d.v4.f32.f32 {%f1, %f2, %f3, %f4}, [%rd1, {%f1, %f2}];\n"
#define SHFL_LINE "  shfl.up.b32 %r2, %r1, 1, 0;\n"

/*
 * add_one and triple (which calls the runnable .func `times3`) run; uses_tex uses an instruction
 * the simulator lacks; calls_shfl calls `middle`, which calls `old_shfl`, whose shuffle without
 * .sync the simulator does not run.
 */
static const char mixed_ptx[] =
    ".version 7.0\n.target sm_70\n.address_size 64\n"
    ".func (.param .b32 r) times3(.param .b32 a)\n{\n  .reg .b32 %r<3>;\n"
    "  ld.param.b32 %r1, [a];\n  mul.lo.s32 %r2, %r1, 3;\n  st.param.b32 [r], %r2;\n"
    "  ret;\n}\n"
    ".func old_shfl(.param .b32 a)\n{\n  .reg .b32 %r<3>;\n  ld.param.b32 %r1, [a];\n" SHFL_LINE "  ret;\n}\n"
    ".func middle(.param .b32 a)\n{\n  .reg .b32 %r<2>;\n  ld.param.b32 %r1, [a];\n"
    "  {\n  .param .b32 p;\n  st.param.b32 [p], %r1;\n  call old_shfl, (p);\n  }\n"
    "  ret;\n}\n"
    ".visible .entry add_one(.param .u64 p_out)\n{\n"
    "  .reg .b32 %r<4>;\n  .reg .b64 %rd<5>;\n"
    "  ld.param.u64 %rd1, [p_out];\n  cvta.to.global.u64 %rd2, %rd1;\n"
    "  mov.u32 %r1, %tid.x;\n  mul.wide.u32 %rd3, %r1, 4;\n  add.s64 %rd4, %rd2, %rd3;\n"
    "  ld.global.u32 %r2, [%rd4];\n  add.s32 %r3, %r2, 1;\n  st.global.u32 [%rd4], %r3;\n"
    "  ret;\n}\n"
    ".visible .entry uses_tex(.param .u64 p_out)\n{\n"
    "  .reg .f32 %f<5>;\n  .reg .b64 %rd<2>;\n  ld.param.u64 %rd1, [p_out];\n"
    "  mov.f32 %f1, 0f00000000;\n  mov.f32 %f2, 0f00000000;\n" TEX_LINE "  ret;\n}\n"
    ".visible .entry triple(.param .u64 p_out)\n{\n"
    "  .reg .b32 %r<4>;\n  .reg .b64 %rd<5>;\n"
    "  ld.param.u64 %rd1, [p_out];\n  cvta.to.global.u64 %rd2, %rd1;\n"
    "  mov.u32 %r1, %tid.x;\n  mul.wide.u32 %rd3, %r1, 4;\n  add.s64 %rd4, %rd2, %rd3;\n"
    "  ld.global.u32 %r2, [%rd4];\n"
    "  {\n  .param .b32 a;\n  .param .b32 r;\n  st.param.b32 [a], %r2;\n"
    "  call (r), times3, (a);\n  ld.param.b32 %r3, [r];\n  }\n"
    "  st.global.u32 [%rd4], %r3;\n  ret;\n}\n"
    ".visible .entry calls_shfl(.param .u64 p_out)\n{\n"
    "  .reg .b32 %r<2>;\n  mov.u32 %r1, %tid.x;\n"
    "  {\n  .param .b32 p;\n  st.param.b32 [p], %r1;\n  call middle, (p);\n  }\n"
    "  ret;\n}\n";

/* "PTX line N" of the line of mixed_ptx that starts with `line`. */
static void line_of(const char *line, char *buf, size_t size) {
  const char *at = strstr(mixed_ptx, line);
  assert_non_null(at);
  unsigned n = 1;
  for (const char *c = mixed_ptx; c < at; c++) n += *c == '\n';
  snprintf(buf, size, "PTX line %u ", n);
}

static gcap_context *ctx_with(gcap_sim_exec exec, unsigned checks) {
  gcap_sim_options so;
  ptx_sim_options(&so, checks);
  so.exec = exec;
  return test_sim_context_create(&so);
}

struct setup {
  gcap_context *ctx;
  gcap_module *m;
  gcap_stream *s;
  void *dout;
};

static void set_up(struct setup *t, gcap_sim_exec exec, unsigned checks) {
  t->ctx = ctx_with(exec, checks);
  t->m = ptx_load_text(t->ctx, mixed_ptx);
  t->s = test_stream_create(t->ctx);
  t->dout = test_dev_alloc(t->ctx, N * sizeof(uint32_t));
  uint32_t v[N];
  for (unsigned i = 0; i < N; i++) v[i] = i;
  assert_ok(gcap_memcpy(t->ctx, t->dout, v, sizeof v, GCAP_MEMCPY_HOST_TO_DEVICE));
}

/* dout after add_one then triple: (i + 1) * 3 for each i. */
static void check_values(struct setup *t, unsigned runs) {
  uint32_t v[N];
  assert_ok(gcap_memcpy(t->ctx, v, t->dout, sizeof v, GCAP_MEMCPY_DEVICE_TO_HOST));
  for (unsigned i = 0; i < N; i++) {
    uint32_t want = i;
    for (unsigned r = 0; r < runs; r++) want = (want + 1) * 3;
    assert_int_equal(v[i], want);
  }
}

/* The message of a refusal of `kernel`: the call, the kernel, the instruction and its line. */
static void check_refusal(const char *call, const char *kernel) {
  char say[64], line[32];
  test_assert_message_contains(call);
  snprintf(say, sizeof say, "kernel \"%s\"", kernel);
  test_assert_message_contains(say);
  bool tex = strcmp(kernel, "uses_tex") == 0;
  line_of(tex ? TEX_LINE : SHFL_LINE, line, sizeof line);
  test_assert_message_contains(line);
  test_assert_message_contains(tex ? "tex.2d.v4.f32.f32" : "shfl.up.b32");
  if (!tex) test_assert_message_contains("\"old_shfl\"");
}

static void launch_in(gcap_sim_exec exec, unsigned checks) {
  struct setup t;
  set_up(&t, exec, checks);
  gcap_kernel *bad = NULL;
  assert_ok(gcap_module_get_kernel(t.m, "uses_tex", &bad)); /* found, as CUDA finds it */
  assert_non_null(bad);
  assert_status(gcap_launch_kernel(t.s, bad, DIM1(1), DIM1(N), 0, ARGS(&t.dout)), GCAP_ERROR_NOT_SUPPORTED);
  check_refusal("gcap_launch_kernel", "uses_tex");
  assert_status(gcap_launch_kernel(t.s, test_kernel_of(t.m, "calls_shfl"), DIM1(1), DIM1(N), 0, ARGS(&t.dout)),
                GCAP_ERROR_NOT_SUPPORTED);
  check_refusal("gcap_launch_kernel", "calls_shfl");
  /* The good kernels of the same module run, on the same stream, after the refusals. */
  assert_ok(gcap_launch_kernel(t.s, test_kernel_of(t.m, "add_one"), DIM1(1), DIM1(N), 0, ARGS(&t.dout)));
  assert_ok(gcap_launch_kernel(t.s, test_kernel_of(t.m, "triple"), DIM1(1), DIM1(N), 0, ARGS(&t.dout)));
  assert_ok(gcap_stream_synchronize(t.s));
  check_values(&t, 1);
  gcap_context_destroy(t.ctx);
}

static void test_launch_refused_others_run(void **state) {
  (void)state;
  launch_in(GCAP_SIM_EXEC_IMMEDIATE, 0);
  launch_in(GCAP_SIM_EXEC_DEFERRED, 0);
  launch_in(GCAP_SIM_EXEC_IMMEDIATE, CHECKS_ALL);
  launch_in(GCAP_SIM_EXEC_DEFERRED, CHECKS_ALL);
}

/* Adding a node for it, or switching a node or an executable's entry to it, fails and changes nothing. */
static void test_node_refused(void **state) {
  (void)state;
  struct setup t;
  set_up(&t, GCAP_SIM_EXEC_DEFERRED, 0);
  gcap_graph *g = test_graph_create(t.ctx);
  gcap_kernel_node_params good = {test_kernel_of(t.m, "add_one"), DIM1(1), DIM1(N), 0, ARGS(&t.dout)};
  gcap_kernel_node_params good2 = {test_kernel_of(t.m, "triple"), DIM1(1), DIM1(N), 0, ARGS(&t.dout)};
  gcap_node *first = NULL, *second = NULL, *none = NULL;
  assert_ok(gcap_graph_add_kernel_node(g, NULL, 0, &good, &first));
  const char *bad_names[] = {"uses_tex", "calls_shfl"};
  for (size_t i = 0; i < 2; i++) {
    gcap_kernel_node_params bad = {test_kernel_of(t.m, bad_names[i]), DIM1(1), DIM1(N), 0, ARGS(&t.dout)};
    assert_status(gcap_graph_add_kernel_node(g, &first, 1, &bad, &none), GCAP_ERROR_NOT_SUPPORTED);
    check_refusal("gcap_graph_add_kernel_node", bad_names[i]);
    assert_null(none);
    assert_int_equal(gcap_graph_node_count(g), 1);
  }
  assert_ok(gcap_graph_add_kernel_node(g, &first, 1, &good2, &second));
  gcap_kernel_node_params bad = {test_kernel_of(t.m, "uses_tex"), DIM1(1), DIM1(N), 0, ARGS(&t.dout)};
  assert_status(gcap_node_set_kernel_params(second, &bad), GCAP_ERROR_NOT_SUPPORTED);
  check_refusal("gcap_node_set_kernel_params", "uses_tex");
  gcap_kernel_node_params now;
  assert_ok(gcap_node_get_kernel_params(second, &now));
  assert_ptr_equal(now.kernel, good2.kernel);
  gcap_exec *x = NULL;
  assert_ok(gcap_graph_instantiate(g, 0, &x));
  gcap_kernel_node_params bad2 = {test_kernel_of(t.m, "calls_shfl"), DIM1(1), DIM1(N), 0, ARGS(&t.dout)};
  assert_status(gcap_exec_kernel_node_set_params(x, second, &bad2), GCAP_ERROR_NOT_SUPPORTED);
  check_refusal("gcap_exec_kernel_node_set_params", "calls_shfl");
  /* The executable still runs add_one then triple. */
  assert_ok(gcap_exec_launch(x, t.s));
  assert_ok(gcap_stream_synchronize(t.s));
  check_values(&t, 1);
  gcap_exec_destroy(x);
  gcap_graph_destroy(g);
  gcap_context_destroy(t.ctx);
}

/* A refused launch in a capture invalidates it, as any failed launch there does; the captures of good kernels run. */
static void test_capture_refused(void **state) {
  (void)state;
  struct setup t;
  set_up(&t, GCAP_SIM_EXEC_IMMEDIATE, 0);
  assert_ok(gcap_stream_begin_capture(t.s, GCAP_CAPTURE_MODE_GLOBAL));
  assert_ok(gcap_launch_kernel(t.s, test_kernel_of(t.m, "add_one"), DIM1(1), DIM1(N), 0, ARGS(&t.dout)));
  assert_status(gcap_launch_kernel(t.s, test_kernel_of(t.m, "calls_shfl"), DIM1(1), DIM1(N), 0, ARGS(&t.dout)),
                GCAP_ERROR_NOT_SUPPORTED);
  check_refusal("gcap_launch_kernel", "calls_shfl");
  gcap_capture_status cs;
  assert_ok(gcap_stream_is_capturing(t.s, &cs));
  assert_int_equal(cs, GCAP_CAPTURE_STATUS_INVALIDATED);
  gcap_graph *g = NULL;
  assert_status(gcap_stream_end_capture(t.s, &g), GCAP_ERROR_STREAM_CAPTURE_INVALIDATED);
  assert_null(g);
  /* A capture of the good kernels gives a graph that runs them. */
  assert_ok(gcap_stream_begin_capture(t.s, GCAP_CAPTURE_MODE_GLOBAL));
  assert_ok(gcap_launch_kernel(t.s, test_kernel_of(t.m, "add_one"), DIM1(1), DIM1(N), 0, ARGS(&t.dout)));
  assert_ok(gcap_launch_kernel(t.s, test_kernel_of(t.m, "triple"), DIM1(1), DIM1(N), 0, ARGS(&t.dout)));
  assert_ok(gcap_stream_end_capture(t.s, &g));
  gcap_exec *x = NULL;
  assert_ok(gcap_graph_instantiate(g, 0, &x));
  assert_ok(gcap_exec_launch(x, t.s));
  assert_ok(gcap_exec_launch(x, t.s));
  assert_ok(gcap_stream_synchronize(t.s));
  check_values(&t, 2);
  gcap_exec_destroy(x);
  gcap_graph_destroy(g);
  gcap_context_destroy(t.ctx);
}

/* Beside a CPU version (AUTO mode), the kernel runs that: only a kernel that would run its PTX is refused. */
static int cpu_runs;
static void tex_cpu(const gcap_sim_thread *th, void *const *args) {
  (void)th;
  (void)args;
  cpu_runs++;
}

static void test_cpu_version_runs(void **state) {
  (void)state;
  gcap_sim_options so;
  gcap_sim_options_init(&so);
  so.kernels = GCAP_SIM_KERNELS_AUTO;
  so.threads = 1;
  gcap_context *ctx = test_sim_context_create(&so);
  static const size_t sizes[] = {8};
  gcap_kernel_def def = {.name = "uses_tex", .sim_fn = tex_cpu, .num_params = 1, .param_sizes = sizes};
  gcap_module_desc d = {.image = mixed_ptx, .image_size = sizeof mixed_ptx, .kernels = &def, .num_kernels = 1};
  gcap_module *m = NULL;
  assert_ok(gcap_module_load(ctx, &d, &m));
  gcap_stream *s = test_stream_create(ctx);
  void *dout = test_dev_alloc(ctx, N * sizeof(uint32_t));
  cpu_runs = 0;
  assert_ok(gcap_launch_kernel(s, test_kernel_of(m, "uses_tex"), DIM1(1), DIM1(2), 0, ARGS(&dout)));
  assert_ok(gcap_stream_synchronize(s));
  assert_int_equal(cpu_runs, 2);
  assert_status(gcap_launch_kernel(s, test_kernel_of(m, "calls_shfl"), DIM1(1), DIM1(2), 0, ARGS(&dout)),
                GCAP_ERROR_NOT_SUPPORTED);
  check_refusal("gcap_launch_kernel", "calls_shfl");
  gcap_context_destroy(ctx);
}

/* A frame larger than the simulator's 16 KiB stack (CUDA gives a thread more) is refused at launch too. */
static void test_big_stack_refused_at_launch(void **state) {
  (void)state;
  gcap_context *ctx = ctx_with(GCAP_SIM_EXEC_IMMEDIATE, 0);
  static const char text[] = ".version 7.0\n.target sm_70\n.address_size 64\n"
                             ".visible .entry fine()\n{\n  ret;\n}\n"
                             ".visible .entry big_stack()\n{\n  .local .align 8 .b8 frame[32768];\n"
                             "  .reg .b32 %r<2>;\n  mov.u32 %r1, 1;\n  st.local.u32 [frame], %r1;\n  ret;\n}\n";
  gcap_module *m = ptx_load_text(ctx, text);
  gcap_stream *s = test_stream_create(ctx);
  assert_ok(gcap_launch_kernel(s, test_kernel_of(m, "fine"), DIM1(1), DIM1(32), 0, NULL));
  assert_status(gcap_launch_kernel(s, test_kernel_of(m, "big_stack"), DIM1(1), DIM1(32), 0, NULL),
                GCAP_ERROR_NOT_SUPPORTED);
  test_assert_message_contains("gcap_launch_kernel: kernel \"big_stack\"");
  test_assert_message_contains("32768 bytes of stack");
  assert_ok(gcap_stream_synchronize(s));
  gcap_context_destroy(ctx);
}

/* PTX that does not parse, or is not valid, still fails the load, whatever else the module holds. */
static void test_invalid_ptx_refused_at_load(void **state) {
  (void)state;
  gcap_context *ctx = ctx_with(GCAP_SIM_EXEC_IMMEDIATE, 0);
  static const char bad_operands[] = ".version 7.0\n.target sm_70\n.address_size 64\n"
                                     ".visible .entry fine()\n{\n  ret;\n}\n"
                                     ".visible .entry uses_tex()\n{\n  .reg .f32 %f<5>;\n  .reg .b64 %rd<2>;\n"
                                     "  mov.u64 %rd1, 0;\n" TEX_LINE "  ret;\n}\n"
                                     ".visible .entry broken()\n{\n  .reg .b32 %r<3>;\n"
                                     "  add.u32 %r1, %r2;\n  ret;\n}\n";
  /* Past an instruction it cannot run, the rest of a function is still checked. */
  static const char after_tex[] = ".version 7.0\n.target sm_70\n.address_size 64\n"
                                  ".func (.param .align 8 .b8 r[64]) wide()\n{\n  ret;\n}\n"
                                  ".visible .entry fine()\n{\n  ret;\n}\n"
                                  ".visible .entry tex_then_call()\n{\n  .reg .f32 %f<5>;\n  .reg .b64 %rd<3>;\n"
                                  "  mov.u64 %rd1, 0;\n" TEX_LINE "  call (%rd2), wide, ();\n  ret;\n}\n";
  static const char no_parse[] = ".version 7.0\n.target sm_70\n.address_size 64\n"
                                 ".visible .entry fine()\n{\n  ret;\n}\n"
                                 ".visible .entry k()\n{\n  frobnicate.u32 %r1;\n}\n";
  gcap_module *m = NULL;
  gcap_module_desc d = {.image = bad_operands, .image_size = sizeof bad_operands};
  assert_status(gcap_module_load(ctx, &d, &m), GCAP_ERROR_INVALID_PTX);
  test_assert_message_contains("line 19");
  test_assert_message_contains("add.u32");
  assert_null(m);
  d = (gcap_module_desc){.image = after_tex, .image_size = sizeof after_tex};
  assert_status(gcap_module_load(ctx, &d, &m), GCAP_ERROR_INVALID_PTX);
  test_assert_message_contains("line 18");
  test_assert_message_contains("\"wide\"");
  test_assert_message_contains("64 bytes");
  assert_null(m);
  d = (gcap_module_desc){.image = no_parse, .image_size = sizeof no_parse};
  assert_status(gcap_module_load(ctx, &d, &m), GCAP_ERROR_INVALID_PTX);
  test_assert_message_contains("frobnicate");
  assert_null(m);
  gcap_context_destroy(ctx);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_launch_refused_others_run),
      cmocka_unit_test(test_node_refused),
      cmocka_unit_test(test_capture_refused),
      cmocka_unit_test(test_cpu_version_runs),
      cmocka_unit_test(test_big_stack_refused_at_launch),
      cmocka_unit_test(test_invalid_ptx_refused_at_load),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
