/*
 * Managed memory (gcap_mem_alloc_managed): device memory for kernels, copies and graphs that
 * host code reads and writes directly, also under strict memory, where plain device memory
 * still faults. Simulator only, but for the bad inputs, which every backend refuses alike.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "common.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#define N 96u /* words of the test buffers */

/* out[i] = in[i] + k for i < n. Params: uint32_t *out, const uint32_t *in, uint32_t k, uint32_t n. */
static const char addk_ptx[] = ".version 7.0\n"
                               ".target sm_70\n"
                               ".address_size 64\n"
                               ".visible .entry addk(\n"
                               ".param .u64 addk_param_0,\n"
                               ".param .u64 addk_param_1,\n"
                               ".param .u32 addk_param_2,\n"
                               ".param .u32 addk_param_3\n"
                               ")\n"
                               "{\n"
                               ".reg .pred %p<2>;\n"
                               ".reg .b32 %r<9>;\n"
                               ".reg .b64 %rd<8>;\n"
                               "ld.param.u64 %rd1, [addk_param_0];\n"
                               "ld.param.u64 %rd2, [addk_param_1];\n"
                               "ld.param.u32 %r5, [addk_param_2];\n"
                               "ld.param.u32 %r6, [addk_param_3];\n"
                               "mov.u32 %r1, %ctaid.x;\n"
                               "mov.u32 %r2, %ntid.x;\n"
                               "mov.u32 %r3, %tid.x;\n"
                               "mad.lo.s32 %r4, %r1, %r2, %r3;\n"
                               "setp.ge.u32 %p1, %r4, %r6;\n"
                               "@%p1 bra $DONE;\n"
                               "cvta.to.global.u64 %rd3, %rd2;\n"
                               "mul.wide.u32 %rd4, %r4, 4;\n"
                               "add.s64 %rd5, %rd3, %rd4;\n"
                               "ld.global.u32 %r7, [%rd5];\n"
                               "add.s32 %r8, %r7, %r5;\n"
                               "cvta.to.global.u64 %rd6, %rd1;\n"
                               "add.s64 %rd7, %rd6, %rd4;\n"
                               "st.global.u32 [%rd7], %r8;\n"
                               "$DONE:\n"
                               "ret;\n"
                               "}\n";

static void addk_sim(const gcap_sim_thread *t, void *const *args) {
  uint32_t *out;
  const uint32_t *in;
  uint32_t k, n;
  memcpy(&out, args[0], sizeof out);
  memcpy(&in, args[1], sizeof in);
  memcpy(&k, args[2], sizeof k);
  memcpy(&n, args[3], sizeof n);
  uint32_t i = t->block_idx.x * t->block_dim.x + t->thread_idx.x;
  if (i < n) out[i] = in[i] + k;
}

static const size_t addk_sizes[] = {sizeof(void *), sizeof(void *), sizeof(uint32_t), sizeof(uint32_t)};
static const gcap_kernel_def addk_def = {
    .name = "addk", .sim_fn = addk_sim, .num_params = 4, .param_sizes = addk_sizes};

enum impl { CPU, PTX };

struct opts {
  bool strict;
  bool deferred;
  unsigned checks;
};

static gcap_context *sim_context(struct opts o) {
  gcap_sim_options so;
  gcap_sim_options_init(&so);
  so.strict_memory = o.strict;
  so.exec = o.deferred ? GCAP_SIM_EXEC_DEFERRED : GCAP_SIM_EXEC_IMMEDIATE;
  so.checks |= o.checks;
  return test_sim_context_create(&so);
}

static gcap_kernel *addk_kernel(gcap_context *ctx, enum impl impl) {
  gcap_module_desc cpu = {.kernels = &addk_def, .num_kernels = 1};
  gcap_module_desc ptx = {.image = addk_ptx, .image_size = sizeof addk_ptx};
  gcap_module *m = NULL;
  assert_ok(gcap_module_load(ctx, impl == CPU ? &cpu : &ptx, &m));
  return test_kernel_of(m, "addk");
}

static void *managed(gcap_context *ctx, size_t bytes) {
  void *p = NULL;
  assert_ok(gcap_mem_alloc_managed(ctx, bytes, &p));
  assert_non_null(p);
  assert_int_equal((uintptr_t)p % 256, 0);
  return p;
}

static gcap_status launch_addk(gcap_stream *s, gcap_kernel *k, void *out, const void *in, uint32_t add) {
  uint32_t n = N;
  void *args[] = {&out, &in, &add, &n};
  return gcap_launch_kernel(s, k, GCAP_DIM3((N + 31) / 32, 1, 1), GCAP_DIM3(32, 1, 1), 0, args);
}

/* ------------------------------------------------------------ kernels and the host */

/* A kernel writes managed memory, the host reads it; the host writes it, a kernel reads it. */
static void check_host_and_kernel(struct opts o, enum impl impl) {
  gcap_context *ctx = sim_context(o);
  gcap_kernel *k = addk_kernel(ctx, impl);
  gcap_stream *s = test_stream_create(ctx);
  uint32_t *a = managed(ctx, N * sizeof *a), *b = managed(ctx, N * sizeof *b);
  for (uint32_t i = 0; i < N; i++) a[i] = 3 * i; /* the host writes it directly */
  assert_ok(launch_addk(s, k, b, a, 7));
  assert_ok(gcap_stream_synchronize(s));
  for (uint32_t i = 0; i < N; i++) assert_int_equal(b[i], 3 * i + 7); /* and reads it directly */
  for (uint32_t i = 0; i < N; i++) b[i] = i;
  assert_ok(launch_addk(s, k, a, b, 1));
  assert_ok(gcap_stream_synchronize(s));
  for (uint32_t i = 0; i < N; i++) assert_int_equal(a[i], i + 1);
  assert_ok(gcap_mem_free(ctx, a));
  assert_ok(gcap_mem_free(ctx, b));
  assert_ok(gcap_stream_destroy(s));
  gcap_context_destroy(ctx);
}

static void test_cpu_kernel(void **state) {
  (void)state;
  check_host_and_kernel((struct opts){0}, CPU);
}

static void test_ptx_kernel(void **state) {
  (void)state;
  check_host_and_kernel((struct opts){0}, PTX);
}

static void test_strict_memory_kernels(void **state) {
  (void)state;
  check_host_and_kernel((struct opts){.strict = true}, CPU);
  check_host_and_kernel((struct opts){.strict = true}, PTX);
}

static void test_deferred(void **state) {
  (void)state;
  check_host_and_kernel((struct opts){.deferred = true}, CPU);
  check_host_and_kernel((struct opts){.deferred = true, .strict = true}, PTX);
  /* DEFERRED: the kernel has run only once the host waited for it. */
  gcap_context *ctx = sim_context((struct opts){.deferred = true});
  gcap_kernel *k = addk_kernel(ctx, PTX);
  gcap_stream *s = test_stream_create(ctx);
  uint32_t *a = managed(ctx, N * sizeof *a), *b = managed(ctx, N * sizeof *b);
  for (uint32_t i = 0; i < N; i++) a[i] = i, b[i] = 0;
  assert_ok(launch_addk(s, k, b, a, 2));
  assert_int_equal(b[5], 0);
  assert_ok(gcap_stream_synchronize(s));
  assert_int_equal(b[5], 7);
  assert_ok(gcap_mem_free_async(s, a)); /* stream-ordered free of managed memory */
  assert_ok(gcap_stream_synchronize(s));
  assert_ok(gcap_mem_free(ctx, b));
  assert_ok(gcap_stream_destroy(s));
  gcap_context_destroy(ctx);
}

/* ------------------------------------------------------------ strict memory */

struct touch {
  volatile uint32_t *p;
};

static void touch(const struct touch *t) { t->p[0] = t->p[1] + 1; }

/* Runs touch in a forked child; true when the child faulted (as tests/test_strict_memory.c). */
static bool touch_faults(void *p) {
  struct touch t = {p};
  fflush(NULL);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    struct rlimit none = {0, 0};
    setrlimit(RLIMIT_CORE, &none);
    signal(SIGSEGV, SIG_DFL);
    touch(&t);
    _exit(0);
  }
  int status = 0;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  if (WIFSIGNALED(status)) return WTERMSIG(status) == SIGSEGV;
  return WIFEXITED(status) && WEXITSTATUS(status) != 0;
}

static void test_strict_memory_host_access(void **state) {
  (void)state;
  gcap_context *ctx = sim_context((struct opts){.strict = true});
  void *dev = test_dev_alloc(ctx, 4096);
  uint32_t *m = managed(ctx, 4096);
  assert_true(touch_faults(dev)); /* plain device memory still faults */
  assert_false(touch_faults(m));  /* managed memory does not */
  m[0] = 41;
  m[1] = 1;
  touch(&(struct touch){m});
  assert_int_equal(m[0], 2);
  /* between allocations of both kinds, and after a free and a new allocation */
  uint32_t *m2 = managed(ctx, (size_t)3 << 20);
  m2[((size_t)3 << 20) / 4 - 1] = 9;
  assert_ok(gcap_mem_free(ctx, dev));
  dev = test_dev_alloc(ctx, 64);
  assert_true(touch_faults(dev));
  assert_int_equal(m2[((size_t)3 << 20) / 4 - 1], 9);
  assert_ok(gcap_mem_free(ctx, m2));
  assert_ok(gcap_mem_free(ctx, m));
  assert_ok(gcap_mem_free(ctx, dev));
  gcap_context_destroy(ctx);
}

/* ------------------------------------------------------------ the INIT check */

static void test_init_check_sees_host_writes(void **state) {
  (void)state;
  gcap_context *ctx = sim_context((struct opts){.checks = GCAP_SIM_CHECK_INIT});
  gcap_kernel *k = addk_kernel(ctx, PTX);
  gcap_stream *s = test_stream_create(ctx);
  uint32_t *a = managed(ctx, N * sizeof *a), *b = managed(ctx, N * sizeof *b);
  for (uint32_t i = 0; i < N; i++) a[i] = i;
  assert_ok(launch_addk(s, k, b, a, 5)); /* the host's writes count as writes */
  assert_ok(gcap_stream_synchronize(s));
  assert_int_equal(b[N - 1], N - 1 + 5);
  /* while a read of plain device memory nothing wrote is still reported */
  void *dev = test_dev_alloc(ctx, N * sizeof *a);
  gcap_status st = launch_addk(s, k, b, dev, 5);
  if (st == GCAP_SUCCESS) st = gcap_stream_synchronize(s);
  assert_int_equal(st, GCAP_ERROR_LAUNCH_FAILURE);
  test_assert_message_contains("uninitialised");
  gcap_context_destroy(ctx);
}

/* ------------------------------------------------------------ copies, fills, graphs */

static void test_copies(void **state) {
  (void)state;
  gcap_context *ctx = sim_context((struct opts){.strict = true});
  gcap_stream *s = test_stream_create(ctx);
  uint32_t host[N], back[N];
  for (uint32_t i = 0; i < N; i++) host[i] = 1000 + i;
  uint32_t *m = managed(ctx, sizeof host);
  void *dev = test_dev_alloc(ctx, sizeof host);
  /* every kind works with managed memory on either side, as unified addressing allows */
  static const gcap_memcpy_kind kinds[] = {GCAP_MEMCPY_DEFAULT, GCAP_MEMCPY_HOST_TO_DEVICE, GCAP_MEMCPY_HOST_TO_HOST};
  for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
    memset(m, 0, sizeof host);
    assert_ok(gcap_memcpy(ctx, m, host, sizeof host, kinds[i]));
    assert_memory_equal(m, host, sizeof host);
  }
  assert_ok(gcap_memcpy(ctx, dev, m, sizeof host, GCAP_MEMCPY_DEFAULT)); /* managed to device */
  memset(m, 0, sizeof host);
  assert_ok(gcap_memcpy(ctx, m, dev, sizeof host, GCAP_MEMCPY_DEVICE_TO_DEVICE)); /* device to managed */
  assert_memory_equal(m, host, sizeof host);
  memset(back, 0, sizeof back);
  assert_ok(gcap_memcpy(ctx, back, m, sizeof back, GCAP_MEMCPY_DEVICE_TO_HOST));
  assert_memory_equal(back, host, sizeof back);
  assert_ok(gcap_memcpy_async(s, m, host, sizeof host / 2, GCAP_MEMCPY_DEFAULT));
  assert_ok(gcap_memset_async(s, m + N / 2, 0xab, sizeof host / 2));
  assert_ok(gcap_stream_synchronize(s));
  assert_memory_equal(m, host, sizeof host / 2);
  assert_int_equal(m[N - 1], 0xababababu);
  /* ranges are still checked against the allocation */
  assert_status(gcap_memcpy(ctx, m + 1, host, sizeof host, GCAP_MEMCPY_DEFAULT), GCAP_ERROR_INVALID_VALUE);
  test_assert_message_contains("past the end of its allocation");
  assert_ok(gcap_mem_free(ctx, m));
  assert_ok(gcap_mem_free(ctx, dev));
  assert_ok(gcap_stream_destroy(s));
  gcap_context_destroy(ctx);
}

static void test_captured_graph(void **state) {
  (void)state;
  for (int strict = 0; strict < 2; strict++) {
    gcap_context *ctx = sim_context((struct opts){.strict = strict});
    gcap_kernel *k = addk_kernel(ctx, PTX);
    gcap_stream *s = test_stream_create(ctx);
    uint32_t *a = managed(ctx, N * sizeof *a), *b = managed(ctx, N * sizeof *b);
    uint32_t host[N];
    for (uint32_t i = 0; i < N; i++) host[i] = 2 * i;
    assert_ok(gcap_stream_begin_capture(s, GCAP_CAPTURE_MODE_GLOBAL));
    assert_ok(gcap_memcpy_async(s, a, host, sizeof host, GCAP_MEMCPY_DEFAULT));
    assert_ok(launch_addk(s, k, b, a, 10));
    assert_ok(launch_addk(s, k, a, b, 100));
    gcap_graph *g = NULL;
    assert_ok(gcap_stream_end_capture(s, &g));
    assert_int_equal(gcap_graph_node_count(g), 3);
    gcap_exec *x = NULL;
    assert_ok(gcap_graph_instantiate(g, 0, &x));
    for (int round = 0; round < 2; round++) {
      memset(a, 0, N * sizeof *a);
      assert_ok(gcap_exec_launch(x, s));
      assert_ok(gcap_stream_synchronize(s));
      for (uint32_t i = 0; i < N; i++) {
        assert_int_equal(b[i], host[i] + 10);
        assert_int_equal(a[i], host[i] + 110);
      }
      host[0] = 1000; /* the next launch copies the host's new value */
    }
    assert_int_equal(a[0], 1110);
    gcap_exec_destroy(x);
    gcap_graph_destroy(g);
    assert_ok(gcap_mem_free(ctx, a));
    assert_ok(gcap_mem_free(ctx, b));
    assert_ok(gcap_stream_destroy(s));
    gcap_context_destroy(ctx);
  }
}

/* ------------------------------------------------------------ bad inputs */

static void test_bad_inputs(void **state) {
  (void)state;
  gcap_context *ctx = test_context_create();
  void *p = (void *)&p;
  assert_status(gcap_mem_alloc_managed(ctx, 0, &p), GCAP_ERROR_INVALID_VALUE); /* as cudaMallocManaged(0) */
  test_assert_message_contains("gcap_mem_alloc_managed: bytes is 0");
  assert_null(p);
  assert_status(gcap_mem_alloc_managed(ctx, 64, NULL), GCAP_ERROR_INVALID_VALUE);
  test_assert_message_contains("gcap_mem_alloc_managed: out is NULL");
  p = (void *)&p;
  assert_status(gcap_mem_alloc_managed(NULL, 64, &p), GCAP_ERROR_INVALID_HANDLE);
  test_assert_message_contains("gcap_mem_alloc_managed: ctx");
  assert_null(p);
  p = (void *)&p;
  assert_status(gcap_mem_alloc_managed(ctx, SIZE_MAX - 4096, &p), GCAP_ERROR_OUT_OF_MEMORY);
  test_assert_message_contains("gcap_mem_alloc_managed");
  assert_null(p);
  /* freed as device memory, not as page-locked host memory, and only from its start */
  char *m = NULL;
  assert_ok(gcap_mem_alloc_managed(ctx, 512, (void **)&m));
  assert_status(gcap_host_free(ctx, m), GCAP_ERROR_INVALID_VALUE);
  test_assert_message_contains("gcap_host_free");
  assert_status(gcap_mem_free(ctx, m + 8), GCAP_ERROR_INVALID_VALUE);
  test_assert_message_contains("not its start");
  assert_ok(gcap_mem_free(ctx, m));
  assert_status(gcap_mem_free(ctx, m), GCAP_ERROR_INVALID_VALUE); /* twice */
  test_assert_message_contains("gcap_mem_free");
  gcap_context_destroy(ctx);
}

/* Allocating while a stream captures is prohibited, as for gcap_mem_alloc. */
static void test_during_capture(void **state) {
  (void)state;
  gcap_context *ctx = test_context_create();
  gcap_stream *s = test_stream_create(ctx);
  assert_ok(gcap_stream_begin_capture(s, GCAP_CAPTURE_MODE_GLOBAL));
  void *p = NULL;
  assert_int_not_equal(gcap_mem_alloc_managed(ctx, 64, &p), GCAP_SUCCESS);
  test_assert_message_contains("gcap_mem_alloc_managed");
  assert_null(p);
  gcap_graph *g = NULL;
  (void)gcap_stream_end_capture(s, &g);
  if (g) gcap_graph_destroy(g);
  assert_ok(gcap_stream_destroy(s));
  gcap_context_destroy(ctx);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_cpu_kernel),
      cmocka_unit_test(test_ptx_kernel),
      cmocka_unit_test(test_strict_memory_kernels),
      cmocka_unit_test(test_deferred),
      cmocka_unit_test(test_strict_memory_host_access),
      cmocka_unit_test(test_init_check_sees_host_writes),
      cmocka_unit_test(test_copies),
      cmocka_unit_test(test_captured_graph),
      cmocka_unit_test(test_bad_inputs),
      cmocka_unit_test(test_during_capture),
  };
  return cmocka_run_group_tests(tests, test_setup, test_teardown);
}
