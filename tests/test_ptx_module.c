#define _POSIX_C_SOURCE 200809L
/*
 * Modules made from PTX and run from it on the simulator: kernels listed from the image's
 * entries, module variables, what runs under each GCAP_SIM_KERNELS mode, the instruction count,
 * and a kernel fault's report and stickiness. The kernels' instruction families are covered by
 * test_ptx_corpus; the checks by test_ptx_bugs.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "common.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/*
 * nvcc -ptx -arch=compute_75 -lineinfo of:
 *   __device__ int counter = 5;
 *   __constant__ float coef[4] = {1.0f, 2.0f, 3.0f, 4.0f};
 *   extern "C" __global__ void scale(float *out, const float *in, int n) {
 *     int i = blockIdx.x * blockDim.x + threadIdx.x;
 *     if (i < n) out[i] = in[i] * coef[i % 4] + (float)counter;
 *   }
 *   extern "C" __global__ void bump(int by) { atomicAdd(&counter, by); }
 *   extern "C" __global__ void poke(int *p, int at) { p[threadIdx.x + at] = 1; }
 */
static const char mod_ptx[] =
    ".version 9.0\n"
    ".target sm_75\n"
    ".address_size 64\n"
    ".global .align 4 .u32 counter = 5;\n"
    ".const .align 4 .b8 coef[16] = {0, 0, 128, 63, 0, 0, 0, 64, 0, 0, 64, 64, 0, 0, 128, 64};\n"
    ".visible .entry scale(\n"
    ".param .u64 scale_param_0,\n"
    ".param .u64 scale_param_1,\n"
    ".param .u32 scale_param_2\n"
    ")\n"
    "{\n"
    ".reg .pred  %p<2>;\n"
    ".reg .f32  %f<5>;\n"
    ".reg .b32  %r<12>;\n"
    ".reg .b64  %rd<11>;\n"
    ".loc 1 3 0\n"
    "ld.param.u64  %rd1, [scale_param_0];\n"
    "ld.param.u64  %rd2, [scale_param_1];\n"
    "ld.param.u32  %r2, [scale_param_2];\n"
    ".loc 1 4 3\n"
    "mov.u32  %r3, %ctaid.x;\n"
    "mov.u32  %r4, %ntid.x;\n"
    "mov.u32  %r5, %tid.x;\n"
    "mad.lo.s32  %r1, %r3, %r4, %r5;\n"
    ".loc 1 5 3\n"
    "setp.ge.s32  %p1, %r1, %r2;\n"
    "@%p1 bra  $L__BB0_2;\n"
    ".loc 1 4 3\n"
    "cvta.to.global.u64  %rd3, %rd2;\n"
    ".loc 1 5 3\n"
    "mul.wide.s32  %rd4, %r1, 4;\n"
    "add.s64  %rd5, %rd3, %rd4;\n"
    "shr.s32  %r6, %r1, 31;\n"
    "shr.u32  %r7, %r6, 30;\n"
    "add.s32  %r8, %r1, %r7;\n"
    "and.b32   %r9, %r8, -4;\n"
    "sub.s32  %r10, %r1, %r9;\n"
    "mul.wide.s32  %rd6, %r10, 4;\n"
    "mov.u64  %rd7, coef;\n"
    "add.s64  %rd8, %rd7, %rd6;\n"
    "ld.const.f32  %f1, [%rd8];\n"
    "ld.global.f32  %f2, [%rd5];\n"
    "ld.global.u32  %r11, [counter];\n"
    "cvt.rn.f32.s32  %f3, %r11;\n"
    "fma.rn.f32  %f4, %f2, %f1, %f3;\n"
    ".loc 1 4 3\n"
    "cvta.to.global.u64  %rd9, %rd1;\n"
    ".loc 1 5 3\n"
    "add.s64  %rd10, %rd9, %rd4;\n"
    "st.global.f32  [%rd10], %f4;\n"
    "$L__BB0_2:\n"
    ".loc 1 6 1\n"
    "ret;\n"
    "}\n"
    ".visible .entry bump(\n"
    ".param .u32 bump_param_0\n"
    ")\n"
    "{\n"
    ".reg .b32  %r<3>;\n"
    ".reg .b64  %rd<2>;\n"
    ".loc 1 7 0\n"
    "ld.param.u32  %r1, [bump_param_0];\n"
    ".loc 1 7 41\n"
    ".loc 2 107 3, function_name $L__info_string0, inlined_at 1 7 41\n"
    "mov.u64  %rd1, counter;\n"
    "atom.global.add.u32  %r2, [%rd1], %r1;\n"
    ".loc 1 7 41\n"
    "ret;\n"
    "}\n"
    ".visible .entry poke(\n"
    ".param .u64 poke_param_0,\n"
    ".param .u32 poke_param_1\n"
    ")\n"
    "{\n"
    ".reg .b32  %r<5>;\n"
    ".reg .b64  %rd<5>;\n"
    ".loc 1 8 0\n"
    "ld.param.u64  %rd1, [poke_param_0];\n"
    "ld.param.u32  %r1, [poke_param_1];\n"
    ".loc 1 8 41\n"
    "cvta.to.global.u64  %rd2, %rd1;\n"
    "mov.u32  %r2, %tid.x;\n"
    "add.s32  %r3, %r2, %r1;\n"
    "mul.wide.u32  %rd3, %r3, 4;\n"
    "add.s64  %rd4, %rd2, %rd3;\n"
    "mov.u32  %r4, 1;\n"
    "st.global.u32  [%rd4], %r4;\n"
    "ret;\n"
    "}\n"
    ".file 1 \"/tmp/k/mod.cu\"\n"
    ".file 2 \"/usr/local/cuda/bin/../targets/x86_64-linux/include/device_atomic_functions.hpp\"\n"
    ".section .debug_str\n"
    "{\n"
    "$L__info_string0:\n"
    ".b8 95,90,78,51,53,95,73,78,84,69,82,78,65,76,95,55,102,50,51,99,101,102,53,95,54,95,109,111,100,95,99,117,95,99,111,117,110,116,101,114\n"
    ".b8 57,97,116,111,109,105,99,65,100,100,69,80,105,105,0\n"
    "}\n";

static gcap_context *sim_context(gcap_sim_kernels kernels, gcap_sim_exec exec) {
  gcap_sim_options so;
  gcap_sim_options_init(&so);
  so.kernels = kernels;
  so.exec = exec;
  return test_sim_context_create(&so);
}

static gcap_module *load_ptx(gcap_context *ctx) {
  gcap_module_desc d = {.image = mod_ptx, .image_size = sizeof mod_ptx};
  gcap_module *m = NULL;
  assert_ok(gcap_module_load(ctx, &d, &m));
  return m;
}

static void run_scale(gcap_context *ctx, gcap_module *m, int n, float add) {
  gcap_stream *s = test_stream_create(ctx);
  float in[100], out[100];
  for (int i = 0; i < n; i++) in[i] = 0.5f * (float)i - 7.0f;
  void *din = test_dev_alloc(ctx, sizeof in), *dout = test_dev_alloc(ctx, sizeof out);
  assert_ok(gcap_memcpy(ctx, din, in, sizeof in, GCAP_MEMCPY_HOST_TO_DEVICE));
  assert_ok(gcap_memset_async(s, dout, 0, sizeof out));
  void *args[] = {&dout, &din, &n};
  assert_ok(gcap_launch_kernel(s, test_kernel_of(m, "scale"), GCAP_DIM3(2, 1, 1), GCAP_DIM3(64, 1, 1), 0, args));
  assert_ok(gcap_stream_synchronize(s));
  assert_ok(gcap_memcpy(ctx, out, dout, sizeof out, GCAP_MEMCPY_DEVICE_TO_HOST));
  static const float coef[4] = {1.0f, 2.0f, 3.0f, 4.0f};
  for (int i = 0; i < n; i++) assert_true(out[i] == fmaf(in[i], coef[i % 4], add));
  assert_ok(gcap_mem_free(ctx, din));
  assert_ok(gcap_mem_free(ctx, dout));
  assert_ok(gcap_stream_destroy(s));
}

/* No gcap_kernel_def: the kernels are the entries, with their parameter sizes. */
static void test_kernels_from_entries(void **state) {
  (void)state;
  gcap_context *ctx = sim_context(GCAP_SIM_KERNELS_AUTO, GCAP_SIM_EXEC_IMMEDIATE);
  gcap_module *m = load_ptx(ctx);
  gcap_kernel *k = NULL;
  assert_ok(gcap_module_get_kernel(m, "scale", &k));
  assert_string_equal(gcap_kernel_name(k), "scale");
  assert_ok(gcap_context_find_kernel(ctx, "poke", &k));
  assert_status(gcap_module_get_kernel(m, "scale_param_0", &k), GCAP_ERROR_NOT_FOUND);
  run_scale(ctx, m, 100, 5.0f);
  gcap_sim_stats st;
  assert_ok(gcap_sim_get_stats(ctx, &st));
  assert_int_equal(st.kernels_executed, 1);
  assert_int_equal(st.kernels_stubbed, 0);
  assert_true(st.ptx_instructions > 100 * 20);
  gcap_context_destroy(ctx);
}

/* Module variables: initialised from the PTX, device memory for copies and kernels alike. */
static void test_module_globals(void **state) {
  (void)state;
  gcap_context *ctx = sim_context(GCAP_SIM_KERNELS_AUTO, GCAP_SIM_EXEC_IMMEDIATE);
  gcap_module *m = load_ptx(ctx);
  void *counter = NULL, *coef = NULL;
  size_t bytes = 0;
  assert_ok(gcap_module_get_global(m, "counter", &counter, &bytes));
  assert_int_equal(bytes, 4);
  assert_ok(gcap_module_get_global(m, "coef", &coef, NULL));
  float c[4];
  assert_ok(gcap_memcpy(ctx, c, coef, sizeof c, GCAP_MEMCPY_DEVICE_TO_HOST));
  assert_true(c[0] == 1.0f && c[3] == 4.0f);
  int v = 0;
  assert_ok(gcap_memcpy(ctx, &v, counter, 4, GCAP_MEMCPY_DEVICE_TO_HOST));
  assert_int_equal(v, 5);
  v = -3;
  assert_ok(gcap_memcpy(ctx, counter, &v, 4, GCAP_MEMCPY_HOST_TO_DEVICE));
  run_scale(ctx, m, 77, -3.0f);

  gcap_stream *s = test_stream_create(ctx);
  int by = 2;
  void *args[] = {&by};
  assert_ok(gcap_launch_kernel(s, test_kernel_of(m, "bump"), GCAP_DIM3(3, 1, 1), GCAP_DIM3(50, 1, 1), 0, args));
  assert_ok(gcap_memcpy(ctx, &v, counter, 4, GCAP_MEMCPY_DEVICE_TO_HOST));
  assert_int_equal(v, -3 + 2 * 150);
  gcap_sim_stats st;
  assert_ok(gcap_sim_get_stats(ctx, &st));
  assert_int_equal(st.ptx_instructions % 2, 0); /* (every count below is even) */

  assert_status(gcap_mem_free(ctx, counter), GCAP_ERROR_INVALID_VALUE);
  test_assert_message_contains("module variable");
  assert_status(gcap_module_get_global(m, "nothing", &counter, NULL), GCAP_ERROR_NOT_FOUND);
  test_assert_message_contains("\"nothing\"");
  assert_status(gcap_module_get_global(m, NULL, &counter, NULL), GCAP_ERROR_INVALID_VALUE);
  test_assert_message_contains("name");
  assert_status(gcap_module_get_global(m, "counter", NULL, NULL), GCAP_ERROR_INVALID_VALUE);
  test_assert_message_contains("dptr");
  assert_status(gcap_module_get_global(NULL, "counter", &counter, NULL), GCAP_ERROR_INVALID_HANDLE);
  assert_ok(gcap_stream_destroy(s));
  /* Each load has its own variables. */
  gcap_module *m2 = load_ptx(ctx);
  void *counter2 = NULL;
  assert_ok(gcap_module_get_global(m2, "counter", &counter2, NULL));
  assert_ptr_not_equal(counter, counter2);
  assert_ok(gcap_memcpy(ctx, &v, counter2, 4, GCAP_MEMCPY_DEVICE_TO_HOST));
  assert_int_equal(v, 5);
  assert_ok(gcap_module_unload(m2));
  assert_status(gcap_memcpy(ctx, &v, counter2, 4, GCAP_MEMCPY_DEVICE_TO_HOST), GCAP_ERROR_INVALID_VALUE);
  gcap_context_destroy(ctx);
}

/* Strict memory: module variables are device memory host code cannot touch, set at load all the same. */
static void test_module_globals_strict(void **state) {
  (void)state;
  gcap_sim_options so;
  gcap_sim_options_init(&so);
  so.strict_memory = true;
  so.checks = GCAP_SIM_CHECK_MEMORY | GCAP_SIM_CHECK_SYNC | GCAP_SIM_CHECK_INIT;
  gcap_context *ctx = test_sim_context_create(&so);
  gcap_module *m = load_ptx(ctx);
  void *counter = NULL;
  assert_ok(gcap_module_get_global(m, "counter", &counter, NULL));
  int v = 0;
  assert_ok(gcap_memcpy(ctx, &v, counter, 4, GCAP_MEMCPY_DEVICE_TO_HOST));
  assert_int_equal(v, 5);
  run_scale(ctx, m, 64, 5.0f);
  gcap_context_destroy(ctx);
}

/* Exactly the lane-instructions executed: bump is 4 instructions per thread. */
static void test_instruction_count(void **state) {
  (void)state;
  gcap_context *ctx = sim_context(GCAP_SIM_KERNELS_PTX, GCAP_SIM_EXEC_IMMEDIATE);
  gcap_module *m = load_ptx(ctx);
  gcap_stream *s = test_stream_create(ctx);
  int by = 1;
  void *args[] = {&by};
  assert_ok(gcap_launch_kernel(s, test_kernel_of(m, "bump"), GCAP_DIM3(2, 1, 1), GCAP_DIM3(40, 1, 1), 0, args));
  gcap_sim_stats st;
  assert_ok(gcap_sim_get_stats(ctx, &st));
  assert_int_equal(st.ptx_instructions, 4 * 80);
  assert_ok(gcap_stream_destroy(s));
  gcap_context_destroy(ctx);
}

/* Blocks spread over two worker threads: global atomics add up, every block's stores land. */
static void test_two_threads(void **state) {
  (void)state;
  gcap_sim_options so;
  gcap_sim_options_init(&so);
  so.threads = 2;
  so.checks = GCAP_SIM_CHECK_MEMORY | GCAP_SIM_CHECK_SYNC | GCAP_SIM_CHECK_SHARED_RACES | GCAP_SIM_CHECK_INIT;
  gcap_context *ctx = test_sim_context_create(&so);
  gcap_module *m = load_ptx(ctx);
  gcap_stream *s = test_stream_create(ctx);
  int by = 3;
  void *args[] = {&by};
  assert_ok(gcap_launch_kernel(s, test_kernel_of(m, "bump"), GCAP_DIM3(64, 1, 1), GCAP_DIM3(96, 1, 1), 0, args));
  void *counter = NULL;
  assert_ok(gcap_module_get_global(m, "counter", &counter, NULL));
  int v = 0;
  assert_ok(gcap_memcpy(ctx, &v, counter, 4, GCAP_MEMCPY_DEVICE_TO_HOST));
  assert_int_equal(v, 5 + 3 * 64 * 96);
  gcap_sim_stats st;
  assert_ok(gcap_sim_get_stats(ctx, &st));
  assert_int_equal(st.ptx_instructions, 4 * 64 * 96);
  assert_true(st.blocks_parallel > 0);
  assert_ok(gcap_stream_destroy(s));
  gcap_context_destroy(ctx);
}

/* Per-kernel counters: stream launches and graph replays, the blocks worker threads ran included;
 * a kernel that never ran counts nothing. */
static void test_kernel_stats(void **state) {
  (void)state;
  gcap_sim_options so;
  gcap_sim_options_init(&so);
  so.threads = 2;
  gcap_context *ctx = test_sim_context_create(&so);
  gcap_module *m = load_ptx(ctx);
  gcap_stream *s = test_stream_create(ctx);
  gcap_kernel *bump = test_kernel_of(m, "bump"), *scale = test_kernel_of(m, "scale");
  int by = 1;
  void *args[] = {&by};
  assert_ok(gcap_launch_kernel(s, bump, GCAP_DIM3(16, 1, 1), GCAP_DIM3(64, 1, 1), 0, args));
  gcap_graph *g = NULL;
  gcap_exec *x = NULL;
  assert_ok(gcap_stream_begin_capture(s, GCAP_CAPTURE_MODE_GLOBAL));
  assert_ok(gcap_launch_kernel(s, bump, GCAP_DIM3(1, 1, 1), GCAP_DIM3(32, 1, 1), 0, args));
  assert_ok(gcap_stream_end_capture(s, &g));
  assert_ok(gcap_graph_instantiate(g, 0, &x));
  for (int i = 0; i < 3; i++) assert_ok(gcap_exec_launch(x, s));
  assert_ok(gcap_stream_synchronize(s));
  gcap_sim_kernel_stats ks = {99, 99};
  assert_ok(gcap_sim_get_kernel_stats(ctx, bump, &ks));
  assert_int_equal(ks.launches, 4);
  assert_int_equal(ks.ptx_instructions, 4 * (16 * 64 + 3 * 32));
  assert_ok(gcap_sim_get_kernel_stats(ctx, scale, &ks));
  assert_int_equal(ks.launches, 0);
  assert_int_equal(ks.ptx_instructions, 0);
  assert_status(gcap_sim_get_kernel_stats(ctx, bump, NULL), GCAP_ERROR_INVALID_VALUE);
  assert_string_equal(gcap_last_error_message(), "gcap_sim_get_kernel_stats: out is NULL");
  gcap_context *other = test_sim_context_create(NULL);
  assert_status(gcap_sim_get_kernel_stats(other, bump, &ks), GCAP_ERROR_INVALID_HANDLE);
  gcap_context_destroy(other);
  gcap_exec_destroy(x);
  gcap_graph_destroy(g);
  assert_ok(gcap_stream_destroy(s));
  gcap_context_destroy(ctx);
}

/* DEFERRED: a kernel issued before a stream-ordered free of its memory runs before the free, and
 * its memory check sees the memory as the allocation it still is; the copy back after the kernel
 * and before the free reads the kernel's results. */
static void test_free_async_after_kernel(void **state) {
  (void)state;
  gcap_context *ctx = sim_context(GCAP_SIM_KERNELS_PTX, GCAP_SIM_EXEC_DEFERRED);
  gcap_module *m = load_ptx(ctx);
  gcap_stream *s = test_stream_create(ctx);
  int n = 64;
  float in[64], out[64];
  for (int i = 0; i < n; i++) in[i] = (float)i;
  void *din = NULL, *dout = NULL;
  assert_ok(gcap_mem_alloc_async(s, sizeof in, &din));
  assert_ok(gcap_mem_alloc_async(s, sizeof out, &dout));
  assert_ok(gcap_memcpy_async(s, din, in, sizeof in, GCAP_MEMCPY_HOST_TO_DEVICE));
  void *args[] = {&dout, &din, &n};
  assert_ok(gcap_launch_kernel(s, test_kernel_of(m, "scale"), GCAP_DIM3(1, 1, 1), GCAP_DIM3(64, 1, 1), 0, args));
  assert_ok(gcap_mem_free_async(s, din));
  assert_ok(gcap_memcpy_async(s, out, dout, sizeof out, GCAP_MEMCPY_DEVICE_TO_HOST));
  assert_ok(gcap_mem_free_async(s, dout));
  assert_ok(gcap_stream_synchronize(s));
  static const float coef[4] = {1.0f, 2.0f, 3.0f, 4.0f};
  for (int i = 0; i < n; i++) assert_true(out[i] == fmaf(in[i], coef[i % 4], 5.0f)); /* counter starts at 5 */
  assert_ok(gcap_stream_destroy(s));
  gcap_context_destroy(ctx);
}

static void cpu_scale(const gcap_sim_thread *t, void *const *args) {
  (void)t;
  (void)args;
}
static const size_t scale_sizes[] = {8, 8, 4};
static const size_t other_sizes[] = {4};

/* AUTO runs a definition's CPU version, PTX its PTX; a definition PTX lacks cannot run under PTX. */
static void test_kernel_modes(void **state) {
  (void)state;
  gcap_kernel_def defs[] = {{.name = "scale", .sim_fn = cpu_scale, .num_params = 3, .param_sizes = scale_sizes},
                            {.name = "other", .sim_fn = cpu_scale, .num_params = 1, .param_sizes = other_sizes}};
  gcap_module_desc d = {.image = mod_ptx, .image_size = sizeof mod_ptx, .kernels = defs, .num_kernels = 2};
  for (int mode = GCAP_SIM_KERNELS_AUTO; mode <= GCAP_SIM_KERNELS_PTX; mode++) {
    gcap_context *ctx = sim_context((gcap_sim_kernels)mode, GCAP_SIM_EXEC_IMMEDIATE);
    gcap_module *m = NULL;
    assert_ok(gcap_module_load(ctx, &d, &m));
    gcap_stream *s = test_stream_create(ctx);
    float *buf = test_dev_alloc(ctx, 64 * sizeof *buf);
    assert_ok(gcap_memset_async(s, buf, 0, 64 * sizeof *buf));
    int n = 64, x = 1;
    void *args[] = {&buf, &buf, &n};
    assert_ok(gcap_launch_kernel(s, test_kernel_of(m, "scale"), GCAP_DIM3(1, 1, 1), GCAP_DIM3(64, 1, 1), 0, args));
    float out[64];
    assert_ok(gcap_memcpy(ctx, out, buf, sizeof out, GCAP_MEMCPY_DEVICE_TO_HOST));
    /* The CPU twin here does nothing, the PTX adds the counter (5). */
    assert_true(out[10] == (mode == GCAP_SIM_KERNELS_PTX ? 5.0f : 0.0f));
    void *args1[] = {&x};
    gcap_status want = mode == GCAP_SIM_KERNELS_PTX ? GCAP_ERROR_NOT_SUPPORTED : GCAP_SUCCESS;
    assert_status(gcap_launch_kernel(s, test_kernel_of(m, "other"), GCAP_DIM3(1, 1, 1), GCAP_DIM3(1, 1, 1), 0, args1),
                  want);
    if (want) test_assert_message_contains("\"other\" has no PTX");
    /* Not defined but in the PTX: found there, as on CUDA. */
    gcap_kernel *k = NULL;
    assert_status(gcap_module_get_kernel(m, "bump", &k),
                  mode == GCAP_SIM_KERNELS_CPU ? GCAP_ERROR_NOT_FOUND : GCAP_SUCCESS);
    assert_ok(gcap_mem_free(ctx, buf));
    assert_ok(gcap_stream_destroy(s));
    gcap_context_destroy(ctx);
  }
}

/* A definition whose sizes disagree with the PTX is refused at load, as the driver's would be. */
static void test_sizes_must_agree(void **state) {
  (void)state;
  static const size_t wrong[] = {8, 8, 8};
  gcap_kernel_def def = {.name = "scale", .num_params = 3, .param_sizes = wrong};
  gcap_module_desc d = {.image = mod_ptx, .image_size = sizeof mod_ptx, .kernels = &def, .num_kernels = 1};
  gcap_context *ctx = sim_context(GCAP_SIM_KERNELS_AUTO, GCAP_SIM_EXEC_IMMEDIATE);
  gcap_module *m = NULL;
  assert_status(gcap_module_load(ctx, &d, &m), GCAP_ERROR_INVALID_VALUE);
  test_assert_message_contains("parameter 2 is 4 bytes in the image");
  assert_null(m);
  gcap_context_destroy(ctx);
}

static void test_bad_descs(void **state) {
  (void)state;
  gcap_context *ctx = sim_context(GCAP_SIM_KERNELS_AUTO, GCAP_SIM_EXEC_IMMEDIATE);
  gcap_module *m = NULL;
  gcap_module_desc both = {.image = mod_ptx, .image_size = sizeof mod_ptx, .source = "__global__ void k() {}"};
  assert_status(gcap_module_load(ctx, &both, &m), GCAP_ERROR_INVALID_VALUE);
  test_assert_message_contains("both");
  const char *opts[] = {"-DX=1", NULL};
  gcap_module_desc no_source = {.image = mod_ptx, .options = opts, .num_options = 1};
  assert_status(gcap_module_load(ctx, &no_source, &m), GCAP_ERROR_INVALID_VALUE);
  test_assert_message_contains("desc->source");
  gcap_module_desc null_opt = {.source = "x", .options = opts, .num_options = 2};
  assert_status(gcap_module_load(ctx, &null_opt, &m), GCAP_ERROR_INVALID_VALUE);
  test_assert_message_contains("desc->options[1]");
  static const char bad[] =
      ".version 8.0\n.target sm_75\n.address_size 64\n.visible .entry k()\n{\n  frobnicate.u32 %r1;\n}\n";
  gcap_module_desc broken = {.image = bad, .image_size = sizeof bad};
  assert_status(gcap_module_load(ctx, &broken, &m), GCAP_ERROR_INVALID_PTX);
  test_assert_message_contains("line 6");
  test_assert_message_contains("frobnicate");
  assert_null(m);
  gcap_context_destroy(ctx);
}

/* An out-of-bounds store: ILLEGAL_ADDRESS naming all there is to name, then sticky. */
static void test_fault_report_and_sticky(void **state) {
  (void)state;
  gcap_context *ctx = sim_context(GCAP_SIM_KERNELS_AUTO, GCAP_SIM_EXEC_IMMEDIATE);
  gcap_context *other = sim_context(GCAP_SIM_KERNELS_AUTO, GCAP_SIM_EXEC_IMMEDIATE);
  gcap_module *m = load_ptx(ctx);
  gcap_stream *s = test_stream_create(ctx);
  /* 4 KiB, a size of its own: a size-class allocator (ThreadSanitizer's) puts no module variable right after it. */
  int *p = test_dev_alloc(ctx, 1024 * sizeof *p);
  int at = 1000;
  void *args[] = {&p, &at};
  assert_status(gcap_launch_kernel(s, test_kernel_of(m, "poke"), GCAP_DIM3(1, 1, 1), GCAP_DIM3(32, 1, 1), 0, args),
                GCAP_ERROR_ILLEGAL_ADDRESS);
  test_assert_message_contains("kernel \"poke\" block (0,0,0) thread (24,0,0)");
  test_assert_message_contains("st.global.u32");
  test_assert_message_contains("mod.cu:8)");
  test_assert_message_contains("write of 4 bytes");
  test_assert_message_contains("0 bytes after the end of the nearest allocation, 4096 bytes");
  char original[1024];
  snprintf(original, sizeof original, "%s", gcap_last_error_message());
  int v = 0;
  assert_status(gcap_memcpy(ctx, &v, p, 4, GCAP_MEMCPY_DEVICE_TO_HOST), GCAP_ERROR_ILLEGAL_ADDRESS);
  test_assert_message_contains("sticky");
  test_assert_message_contains(strstr(original, "kernel \"poke\""));
  assert_status(gcap_stream_synchronize(s), GCAP_ERROR_ILLEGAL_ADDRESS);
  gcap_graph *g = NULL;
  assert_status(gcap_graph_create(ctx, &g), GCAP_ERROR_ILLEGAL_ADDRESS);
  /* Releasing still works. */
  assert_ok(gcap_mem_free(ctx, p));
  assert_ok(gcap_stream_destroy(s));
  assert_ok(gcap_module_unload(m));
  /* Other contexts go on. */
  void *q = test_dev_alloc(other, 16);
  assert_ok(gcap_mem_free(other, q));
  gcap_context_destroy(ctx);
  gcap_context_destroy(other);
}

/* trap and brkpt, with every check off: LAUNCH_FAILURE and ILLEGAL_INSTRUCTION, from the lane that ran it. */
static void test_trap_and_brkpt(void **state) {
  (void)state;
  static const char ptx[] = ".version 8.0\n.target sm_75\n.address_size 64\n"
                            ".visible .entry stop(.param .u32 how)\n{\n"
                            "  .reg .pred %p<3>;\n  .reg .b32 %r<3>;\n"
                            "  ld.param.u32 %r1, [how];\n  mov.u32 %r2, %tid.x;\n"
                            "  setp.ne.u32 %p1, %r2, 5;\n  @%p1 bra DONE;\n"
                            "  setp.eq.u32 %p2, %r1, 0;\n  @%p2 trap;\n  brkpt;\nDONE:\n  ret;\n}\n";
  gcap_status want[] = {GCAP_ERROR_LAUNCH_FAILURE, GCAP_ERROR_ILLEGAL_INSTRUCTION};
  const char *says[] = {"trap executed", "brkpt executed"};
  for (unsigned how = 0; how < 2; how++) {
    gcap_sim_options so;
    gcap_sim_options_init(&so);
    so.checks = 0;
    gcap_context *ctx = test_sim_context_create(&so);
    gcap_module_desc d = {.image = ptx, .image_size = sizeof ptx};
    gcap_module *m = NULL;
    assert_ok(gcap_module_load(ctx, &d, &m));
    gcap_stream *s = test_stream_create(ctx);
    void *args[] = {&how};
    assert_status(gcap_launch_kernel(s, test_kernel_of(m, "stop"), GCAP_DIM3(1, 1, 1), GCAP_DIM3(32, 1, 1), 0, args),
                  want[how]);
    test_assert_message_contains(says[how]);
    test_assert_message_contains("thread (5,0,0)");
    assert_status(gcap_stream_synchronize(s), want[how]);
    gcap_context_destroy(ctx);
  }
}

/* Page-locked host memory is the kernel's to use (zero-copy); any other host pointer is not. */
static void test_host_memory(void **state) {
  (void)state;
  gcap_context *ctx = sim_context(GCAP_SIM_KERNELS_AUTO, GCAP_SIM_EXEC_IMMEDIATE);
  gcap_module *m = load_ptx(ctx);
  gcap_stream *s = test_stream_create(ctx);
  int *pinned = NULL, at = 0;
  assert_ok(gcap_host_alloc(ctx, 32 * sizeof *pinned, (void **)&pinned));
  void *args[] = {&pinned, &at};
  assert_ok(gcap_launch_kernel(s, test_kernel_of(m, "poke"), GCAP_DIM3(1, 1, 1), GCAP_DIM3(32, 1, 1), 0, args));
  assert_int_equal(pinned[31], 1);
  static int plain[32];
  int *p = plain;
  void *args2[] = {&p, &at};
  assert_status(gcap_launch_kernel(s, test_kernel_of(m, "poke"), GCAP_DIM3(1, 1, 1), GCAP_DIM3(32, 1, 1), 0, args2),
                GCAP_ERROR_ILLEGAL_ADDRESS);
  test_assert_message_contains("write of 4 bytes at global address");
  assert_int_equal(plain[0], 0);
  assert_ok(gcap_host_free(ctx, pinned));
  gcap_context_destroy(ctx);
}

/* A block whose threads wait at a barrier no thread can complete is reported, not hung. */
static void test_block_that_cannot_finish(void **state) {
  (void)state;
  /* Warp 0 waits at barrier 1 for 64 threads; warp 1 waits at barrier 2 for 64: neither fills. */
  static const char ptx[] = ".version 8.0\n.target sm_75\n.address_size 64\n"
                            ".visible .entry stuck()\n{\n"
                            "  .reg .pred %p<2>;\n  .reg .b32 %r<2>;\n"
                            "  mov.u32 %r1, %tid.x;\n  setp.ge.u32 %p1, %r1, 32;\n  @%p1 bra OTHER;\n"
                            "  bar.sync 1, 64;\n  ret;\nOTHER:\n  bar.sync 2, 64;\n  ret;\n}\n";
  for (unsigned checks = 0; checks <= GCAP_SIM_CHECK_SYNC; checks += GCAP_SIM_CHECK_SYNC) {
    gcap_sim_options so;
    gcap_sim_options_init(&so);
    so.checks = checks;
    gcap_context *ctx = test_sim_context_create(&so);
    gcap_module_desc d = {.image = ptx, .image_size = sizeof ptx};
    gcap_module *m = NULL;
    assert_ok(gcap_module_load(ctx, &d, &m));
    gcap_stream *s = test_stream_create(ctx);
    assert_status(gcap_launch_kernel(s, test_kernel_of(m, "stuck"), GCAP_DIM3(1, 1, 1), GCAP_DIM3(64, 1, 1), 0, NULL),
                  GCAP_ERROR_LAUNCH_FAILURE);
    test_assert_message_contains("can never finish");
    test_assert_message_contains("32 threads wait at barrier");
    gcap_context_destroy(ctx);
  }
}

/* DEFERRED: the wait that ran the faulting kernel reports it. */
static void test_fault_deferred(void **state) {
  (void)state;
  gcap_context *ctx = sim_context(GCAP_SIM_KERNELS_AUTO, GCAP_SIM_EXEC_DEFERRED);
  gcap_module *m = load_ptx(ctx);
  gcap_stream *s = test_stream_create(ctx);
  int *p = test_dev_alloc(ctx, 16 * sizeof *p);
  int at = 0;
  void *args[] = {&p, &at};
  assert_ok(gcap_launch_kernel(s, test_kernel_of(m, "poke"), GCAP_DIM3(1, 1, 1), GCAP_DIM3(32, 1, 1), 0, args));
  assert_status(gcap_stream_synchronize(s), GCAP_ERROR_ILLEGAL_ADDRESS);
  test_assert_message_contains("thread (16,0,0)");
  assert_status(gcap_stream_synchronize(s), GCAP_ERROR_ILLEGAL_ADDRESS);
  assert_ok(gcap_mem_free(ctx, p));
  gcap_context_destroy(ctx);
}

/* The variables that choose kernels and checks. */
static void test_environment(void **state) {
  (void)state;
  gcap_context_options o;
  gcap_context_options_init(&o);
  o.backend = GCAP_BACKEND_SIM;
  gcap_context *ctx = NULL;
  setenv("GCAP_SIM_KERNELS", "gpu", 1);
  assert_status(gcap_context_create(&o, &ctx), GCAP_ERROR_INVALID_VALUE);
  test_assert_message_contains("GCAP_SIM_KERNELS=\"gpu\"");
  setenv("GCAP_SIM_KERNELS", "ptx", 1);
  setenv("GCAP_SIM_CHECKS", "memory,races", 1);
  assert_status(gcap_context_create(&o, &ctx), GCAP_ERROR_INVALID_VALUE);
  test_assert_message_contains("GCAP_SIM_CHECKS=\"memory,races\"");
  const char *good[] = {"none", "all", "memory", "sync,shared,init"};
  for (size_t i = 0; i < 4; i++) {
    setenv("GCAP_SIM_CHECKS", good[i], 1);
    assert_ok(gcap_context_create(&o, &ctx));
    gcap_context_destroy(ctx);
  }
  unsetenv("GCAP_SIM_KERNELS");
  unsetenv("GCAP_SIM_CHECKS");
  gcap_sim_options so;
  gcap_sim_options_init(&so);
  assert_int_equal(so.kernels, GCAP_SIM_KERNELS_AUTO);
  assert_int_equal(so.checks, GCAP_SIM_CHECK_MEMORY | GCAP_SIM_CHECK_SYNC);
  so.checks = 16;
  o.sim = &so;
  assert_status(gcap_context_create(&o, &ctx), GCAP_ERROR_INVALID_VALUE);
  test_assert_message_contains("checks");
  so.checks = 0;
  so.kernels = (gcap_sim_kernels)3;
  assert_status(gcap_context_create(&o, &ctx), GCAP_ERROR_INVALID_VALUE);
  test_assert_message_contains("kernels");
}

/* The load's status for PTX text; on failure the last error message must hold each of `says`. */
static gcap_status load_text(const char *text, const char *const *says, size_t num_says) {
  gcap_context *ctx = sim_context(GCAP_SIM_KERNELS_AUTO, GCAP_SIM_EXEC_IMMEDIATE);
  gcap_module_desc d = {.image = text, .image_size = strlen(text) + 1};
  gcap_module *m = NULL;
  gcap_status st = gcap_module_load(ctx, &d, &m);
  for (size_t i = 0; st != GCAP_SUCCESS && i < num_says; i++) test_assert_message_contains(says[i]);
  if (st != GCAP_SUCCESS) assert_null(m);
  gcap_context_destroy(ctx);
  return st;
}

#define PTX_HEAD ".version 8.0\n.target sm_75\n.address_size 64\n"

/* CUDA's limit on a kernel's parameters (32,764 bytes, laid out with their alignment) holds at
 * load; a function's other declarations cannot add up past what an offset can hold. */
static void test_parameter_limits(void **state) {
  (void)state;
  const char *at_limit = PTX_HEAD ".visible .entry fits(.param .u32 a, .param .align 4 .b8 b[32760])\n{\n  ret;\n}\n";
  assert_ok(load_text(at_limit, NULL, 0));
  /* 1 + 3 bytes of padding + 32,761: one byte over */
  const char *over = PTX_HEAD ".visible .entry big(.param .u8 a, .param .align 4 .b8 b[32761])\n{\n  ret;\n}\n";
  const char *over_says[] = {"kernel \"big\"", "32765 bytes of parameters", "32764", "line 4"};
  assert_status(load_text(over, over_says, 4), GCAP_ERROR_INVALID_PTX);
  /* Five 1 GiB parameters: past 4 GiB, where 32-bit offsets would wrap. */
  const char *huge = PTX_HEAD ".visible .entry wraps(.param .b8 a[1073741824], .param .b8 b[1073741824],\n"
                              ".param .b8 c[1073741824], .param .b8 d[1073741824], .param .b8 e[1073741824])\n"
                              "{\n  ret;\n}\n";
  const char *huge_says[] = {"kernel \"wraps\"", "5368709120 bytes of parameters", "32764"};
  assert_status(load_text(huge, huge_says, 3), GCAP_ERROR_INVALID_PTX);
  /* An array past 4 GiB, and one whose element count overflows 64 bits. */
  const char *array = PTX_HEAD ".visible .entry k(.param .align 8 .b8 p[4294967296])\n{\n  ret;\n}\n";
  const char *array_says[] = {"\"p\" is too large"};
  assert_status(load_text(array, array_says, 1), GCAP_ERROR_INVALID_PTX);
  const char *dims = PTX_HEAD ".visible .entry k(.param .b32 p[4294967296][4294967297])\n{\n  ret;\n}\n";
  assert_status(load_text(dims, array_says, 1), GCAP_ERROR_INVALID_PTX);
  /* A .func's parameters and results, and a body's .local and .param variables. */
  const char *func = PTX_HEAD ".func f(.param .b8 a[1073741824], .param .b8 b[1073741824],\n"
                              ".param .b8 c[1073741824], .param .b8 d[1073741824], .param .b8 e[1073741824])\n"
                              "{\n  ret;\n}\n.visible .entry k()\n{\n  ret;\n}\n";
  const char *func_says[] = {"function \"f\"", "more than 1073741824 bytes", "line 4"};
  assert_status(load_text(func, func_says, 3), GCAP_ERROR_INVALID_PTX);
  const char *rets = PTX_HEAD ".func (.param .b8 r[1073741824]) f(.param .b8 a[1073741824])\n"
                              "{\n  ret;\n}\n.visible .entry k()\n{\n  ret;\n}\n";
  assert_status(load_text(rets, func_says, 3), GCAP_ERROR_INVALID_PTX);
  const char *locals =
      PTX_HEAD ".visible .entry k()\n{\n"
               "  .local .b8 a[1073741824];\n  .local .b8 b[1073741824];\n"
               "  .local .b8 c[1073741824];\n  .local .b8 d[1073741824];\n  .param .b8 e[1073741824];\n"
               "  ret;\n}\n";
  const char *locals_says[] = {"function \"k\"", "more than 1073741824 bytes", "line 7"};
  assert_status(load_text(locals, locals_says, 3), GCAP_ERROR_INVALID_PTX);
  const char *shared =
      PTX_HEAD ".visible .entry k()\n{\n"
               "  .shared .b8 a[1073741824];\n  .shared .b8 b[1073741824];\n"
               "  .shared .b8 c[1073741824];\n  .shared .b8 d[1073741824];\n  .shared .b8 e[1073741824];\n"
               "  ret;\n}\n";
  const char *shared_says[] = {"function \"k\"", ".shared", "line 7"};
  assert_status(load_text(shared, shared_says, 3), GCAP_ERROR_INVALID_PTX);
  const char *module_shared = PTX_HEAD ".shared .b8 a[1073741824];\n.shared .b8 b[1073741824];\n"
                                       ".shared .b8 c[1073741824];\n.shared .b8 d[1073741824];\n"
                                       ".shared .b8 e[1073741824];\n.visible .entry k()\n{\n  ret;\n}\n";
  const char *module_shared_says[] = {".shared", "more than 1073741824 bytes", "line 5"};
  assert_status(load_text(module_shared, module_shared_says, 3), GCAP_ERROR_INVALID_PTX);
}

/* PTX has no st.const: constant memory is read-only to kernels, and a store naming it is refused. */
static void test_store_to_const_refused(void **state) {
  (void)state;
  const char *ptx = PTX_HEAD ".const .align 4 .u32 c = 7;\n"
                             ".visible .entry k()\n{\n  .reg .b32 %r<2>;\n  mov.u32 %r1, 1;\n"
                             "  st.const.u32 [c], %r1;\n  ret;\n}\n";
  const char *says[] = {"line 9", "st.const.u32", "read-only"};
  assert_status(load_text(ptx, says, 3), GCAP_ERROR_INVALID_PTX);
  /* Loads from it are fine. */
  const char *reads = PTX_HEAD ".const .align 4 .u32 c = 7;\n"
                               ".visible .entry k()\n{\n  .reg .b32 %r<2>;\n  ld.const.u32 %r1, [c];\n  ret;\n}\n";
  assert_ok(load_text(reads, NULL, 0));
}

/* The bytes of a module variable, copied from the device. */
static void global_bytes(gcap_context *ctx, gcap_module *m, const char *name, unsigned char *out, size_t bytes) {
  void *addr = NULL;
  size_t size = 0;
  assert_ok(gcap_module_get_global(m, name, &addr, &size));
  assert_int_equal(size, bytes);
  assert_ok(gcap_memcpy(ctx, out, addr, bytes, GCAP_MEMCPY_DEVICE_TO_HOST));
}

/* Initialisers land little-endian, a .b128 element's upper half the sign of its 64-bit literal. */
static void test_wide_initialisers(void **state) {
  (void)state;
  static const char ptx[] = PTX_HEAD ".global .align 16 .b128 w[3] = {0x0102030405060708, -2, 0xfffffffffffffffe};\n"
                                     ".global .align 8 .u64 u[2] = {0x1122334455667788, -1};\n"
                                     ".const .align 8 .b64 b[2] = {-3, 0x8000000000000000};\n"
                                     ".visible .entry k()\n{\n  ret;\n}\n";
  gcap_context *ctx = sim_context(GCAP_SIM_KERNELS_AUTO, GCAP_SIM_EXEC_IMMEDIATE);
  gcap_module_desc d = {.image = ptx, .image_size = sizeof ptx};
  gcap_module *m = NULL;
  assert_ok(gcap_module_load(ctx, &d, &m));
  unsigned char w[48], u[16], b[16];
  global_bytes(ctx, m, "w", w, sizeof w);
  static const unsigned char want_w[48] = {8,    7,    6,    5,    4,    3,    2,    1,    0,    0,    0,    0,
                                           0,    0,    0,    0,    0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
                                           0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xfe, 0xff, 0xff, 0xff,
                                           0xff, 0xff, 0xff, 0xff, 0,    0,    0,    0,    0,    0,    0,    0};
  assert_memory_equal(w, want_w, sizeof w);
  global_bytes(ctx, m, "u", u, sizeof u);
  static const unsigned char want_u[16] = {0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11,
                                           0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
  assert_memory_equal(u, want_u, sizeof u);
  global_bytes(ctx, m, "b", b, sizeof b);
  static const unsigned char want_b[16] = {0xfd, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0, 0x80};
  assert_memory_equal(b, want_b, sizeof b);
  gcap_context_destroy(ctx);
}

/* An image that is neither a cubin (ELF) nor a fatbin is PTX to CUDA's driver: one that is not
 * PTX text fails as bad PTX. A cubin or fatbin the simulator cannot run needs definitions. */
static void test_image_not_ptx(void **state) {
  (void)state;
  gcap_context *ctx = sim_context(GCAP_SIM_KERNELS_AUTO, GCAP_SIM_EXEC_IMMEDIATE);
  static const unsigned char noise[] = {0x13, 0x9a, 0x00, 0xfe, 0x41, 0x00, 0x77, 0x08, 0xc3, 0x21};
  static const char text[] = "hello, this is not PTX";
  static const unsigned char elf[] = {0x7f, 'E', 'L', 'F', 2, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0};
  static const unsigned char fatbin[] = {0x50, 0xed, 0x55, 0xba, 1, 0, 0x10, 0, 0, 0, 0, 0, 0, 0, 0, 0};
  struct {
    const void *image;
    size_t size;
    gcap_status want;
  } cases[] = {
      {noise, sizeof noise, GCAP_ERROR_INVALID_PTX},
      {noise, 1, GCAP_ERROR_INVALID_PTX},
      {text, 0, GCAP_ERROR_INVALID_PTX},
      {text, sizeof text, GCAP_ERROR_INVALID_PTX},
      {"", 0, GCAP_ERROR_INVALID_PTX},
      {"\0\0\0\0", 4, GCAP_ERROR_INVALID_PTX},
      {elf, sizeof elf, GCAP_ERROR_INVALID_VALUE},
      {fatbin, sizeof fatbin, GCAP_ERROR_INVALID_VALUE},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    gcap_module_desc d = {.image = cases[i].image, .image_size = cases[i].size};
    gcap_module *m = (gcap_module *)&d;
    gcap_status st = gcap_module_load(ctx, &d, &m);
    if (st != cases[i].want)
      fail_msg("case %zu: %s, want %s", i, gcap_status_name(st), gcap_status_name(cases[i].want));
    assert_null(m);
    test_assert_message_contains(cases[i].want == GCAP_ERROR_INVALID_PTX ? "desc->image is not PTX text" : "PTX image");
  }
  /* With definitions, the simulator runs their CPU versions beside a cubin or fatbin. */
  gcap_kernel_def def = {.name = "k"};
  gcap_module_desc d = {.image = elf, .image_size = sizeof elf, .kernels = &def, .num_kernels = 1};
  gcap_module *m = NULL;
  assert_ok(gcap_module_load(ctx, &d, &m));
  assert_ok(gcap_module_unload(m));
  gcap_context_destroy(ctx);
}

/* A failed gcap_module_get_global leaves both outputs as they were. */
static void test_get_global_outputs_on_failure(void **state) {
  (void)state;
  gcap_context *ctx = sim_context(GCAP_SIM_KERNELS_AUTO, GCAP_SIM_EXEC_IMMEDIATE);
  gcap_module *m = load_ptx(ctx), *gone = load_ptx(ctx);
  assert_ok(gcap_module_unload(gone));
  void *const sentinel = (void *)(uintptr_t)0x5e17;
  struct {
    gcap_module *m;
    const char *name;
    bool with_dptr;
    gcap_status want;
  } cases[] = {
      {NULL, "counter", true, GCAP_ERROR_INVALID_HANDLE},
      {gone, "counter", true, GCAP_ERROR_INVALID_HANDLE},
      {(gcap_module *)ctx, "counter", true, GCAP_ERROR_INVALID_HANDLE},
      {m, NULL, true, GCAP_ERROR_INVALID_VALUE},
      {m, "counter", false, GCAP_ERROR_INVALID_VALUE},
      {m, "nothing", true, GCAP_ERROR_NOT_FOUND},
      {m, "scale", true, GCAP_ERROR_NOT_FOUND},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    void *dptr = sentinel;
    size_t bytes = 12345;
    gcap_status st = gcap_module_get_global(cases[i].m, cases[i].name, cases[i].with_dptr ? &dptr : NULL, &bytes);
    if (st != cases[i].want)
      fail_msg("case %zu: %s, want %s", i, gcap_status_name(st), gcap_status_name(cases[i].want));
    if (dptr != sentinel || bytes != 12345) fail_msg("case %zu wrote an output (%p, %zu)", i, dptr, bytes);
    test_assert_message_contains("gcap_module_get_global");
  }
  void *dptr = sentinel;
  size_t bytes = 12345;
  assert_ok(gcap_module_get_global(m, "counter", &dptr, &bytes));
  assert_true(dptr != sentinel && dptr != NULL);
  assert_int_equal(bytes, 4);
  gcap_context_destroy(ctx);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_kernels_from_entries),
      cmocka_unit_test(test_module_globals),
      cmocka_unit_test(test_instruction_count),
      cmocka_unit_test(test_kernel_modes),
      cmocka_unit_test(test_sizes_must_agree),
      cmocka_unit_test(test_bad_descs),
      cmocka_unit_test(test_fault_report_and_sticky),
      cmocka_unit_test(test_fault_deferred),
      cmocka_unit_test(test_trap_and_brkpt),
      cmocka_unit_test(test_two_threads),
      cmocka_unit_test(test_module_globals_strict),
      cmocka_unit_test(test_block_that_cannot_finish),
      cmocka_unit_test(test_host_memory),
      cmocka_unit_test(test_environment),
      cmocka_unit_test(test_parameter_limits),
      cmocka_unit_test(test_store_to_const_refused),
      cmocka_unit_test(test_wide_initialisers),
      cmocka_unit_test(test_image_not_ptx),
      cmocka_unit_test(test_get_global_outputs_on_failure),
      cmocka_unit_test(test_kernel_stats),
      cmocka_unit_test(test_free_async_after_kernel),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
