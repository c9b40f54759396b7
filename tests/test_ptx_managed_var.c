/*
 * PTX module variables with `.attribute(.managed)` (nvcc's __managed__ variables): on the
 * simulator they are managed memory, which host code reads and writes through the address
 * gcap_module_get_global returns, also under strict memory, where the module's other variables
 * stay closed to it. The attribute belongs to .global variables only.
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

#define THREADS 64u

/* Each thread adds 1 to counter and `plain` to its word of table; the managed ones as nvcc emits them. */
static const char bump_ptx[] = ".version 7.0\n"
                               ".target sm_70\n"
                               ".address_size 64\n"
                               ".visible .global .attribute(.managed) .align 4 .u32 counter = 5;\n"
                               ".visible .global .attribute(.managed) .align 4 .b8 table[256];\n"
                               ".visible .global .align 4 .u32 plain = 9;\n"
                               ".visible .entry bump()\n"
                               "{\n"
                               ".reg .b32 %r<6>;\n"
                               ".reg .b64 %rd<4>;\n"
                               "mov.u32 %r1, %tid.x;\n"
                               "atom.global.add.u32 %r2, [counter], 1;\n"
                               "mov.u64 %rd1, table;\n"
                               "mul.wide.u32 %rd2, %r1, 4;\n"
                               "add.s64 %rd3, %rd1, %rd2;\n"
                               "ld.global.u32 %r3, [%rd3];\n"
                               "ld.global.u32 %r5, [plain];\n"
                               "add.s32 %r4, %r3, %r5;\n"
                               "st.global.u32 [%rd3], %r4;\n"
                               "ret;\n"
                               "}\n";

struct opts {
  bool strict;
  bool deferred;
};

static gcap_context *sim_context(struct opts o) {
  gcap_sim_options so;
  gcap_sim_options_init(&so);
  so.strict_memory = o.strict;
  so.exec = o.deferred ? GCAP_SIM_EXEC_DEFERRED : GCAP_SIM_EXEC_IMMEDIATE;
  so.checks |= GCAP_SIM_CHECK_MEMORY | GCAP_SIM_CHECK_INIT;
  return test_sim_context_create(&so);
}

static void *global_of(gcap_module *m, const char *name, size_t want_bytes) {
  void *p = NULL;
  size_t bytes = 0;
  assert_ok(gcap_module_get_global(m, name, &p, &bytes));
  assert_non_null(p);
  assert_int_equal(bytes, want_bytes);
  return p;
}

/* Runs `p[0] = p[0] + 1` in a forked child; true when the child faulted (as tests/test_strict_memory.c). */
static bool touch_faults(void *p) {
  volatile uint32_t *w = p;
  fflush(NULL);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    struct rlimit none = {0, 0};
    setrlimit(RLIMIT_CORE, &none);
    signal(SIGSEGV, SIG_DFL);
    w[0] = w[0] + 1;
    _exit(0);
  }
  int status = 0;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  if (WIFSIGNALED(status)) return WTERMSIG(status) == SIGSEGV;
  return WIFEXITED(status) && WEXITSTATUS(status) != 0;
}

/* The host reads the initial values, writes them, a kernel updates them, the host reads the result. */
static void check_host_and_kernel(struct opts o) {
  gcap_context *ctx = sim_context(o);
  gcap_module *m = NULL;
  gcap_module_desc d = {.image = bump_ptx, .image_size = sizeof bump_ptx};
  assert_ok(gcap_module_load(ctx, &d, &m));
  gcap_kernel *k = test_kernel_of(m, "bump");
  gcap_stream *s = test_stream_create(ctx);
  uint32_t *counter = global_of(m, "counter", 4), *table = global_of(m, "table", 4 * THREADS);
  assert_int_equal((uintptr_t)counter % 4, 0);
  assert_int_equal(*counter, 5); /* the initialiser, read directly */
  for (uint32_t i = 0; i < THREADS; i++) assert_int_equal(table[i], 0);
  *counter = 100;
  for (uint32_t i = 0; i < THREADS; i++) table[i] = 2 * i;
  assert_ok(gcap_launch_kernel(s, k, GCAP_DIM3(1, 1, 1), GCAP_DIM3(THREADS, 1, 1), 0, NULL));
  assert_ok(gcap_stream_synchronize(s));
  assert_int_equal(*counter, 100 + THREADS);
  for (uint32_t i = 0; i < THREADS; i++) assert_int_equal(table[i], 2 * i + 9);
  /* A second launch sees the host's next write. */
  *counter = 1;
  assert_ok(gcap_launch_kernel(s, k, GCAP_DIM3(1, 1, 1), GCAP_DIM3(THREADS, 1, 1), 0, NULL));
  assert_ok(gcap_stream_synchronize(s));
  assert_int_equal(*counter, 1 + THREADS);
  assert_int_equal(table[THREADS - 1], 2 * (THREADS - 1) + 18);
  /* Managed memory is both sides of a copy, as gcap_mem_alloc_managed's is; the plain variable is device memory. */
  uint32_t got = 0;
  assert_ok(gcap_memcpy(ctx, &got, counter, sizeof got, GCAP_MEMCPY_HOST_TO_HOST));
  assert_int_equal(got, 1 + THREADS);
  void *plain = global_of(m, "plain", 4);
  assert_status(gcap_memcpy(ctx, &got, plain, sizeof got, GCAP_MEMCPY_HOST_TO_HOST), GCAP_ERROR_INVALID_VALUE);
  test_assert_message_contains("is device memory but kind HOST_TO_HOST needs host memory");
  assert_ok(gcap_memcpy(ctx, &got, plain, sizeof got, GCAP_MEMCPY_DEVICE_TO_HOST));
  assert_int_equal(got, 9);
  if (o.strict) { /* the plain variable stays closed to host code; the managed one is open */
    assert_true(touch_faults(plain));
    assert_false(touch_faults(counter));
  }
  assert_ok(gcap_stream_destroy(s));
  assert_ok(gcap_module_unload(m));
  gcap_context_destroy(ctx);
}

static void test_host_and_kernel(void **state) {
  (void)state;
  check_host_and_kernel((struct opts){0});
}

static void test_strict_memory(void **state) {
  (void)state;
  check_host_and_kernel((struct opts){.strict = true});
}

static void test_deferred_strict(void **state) {
  (void)state;
  check_host_and_kernel((struct opts){.strict = true, .deferred = true});
}

/* An `.extern` declaration with the attribute and a definition without it are one managed variable. */
static void test_extern_declaration(void **state) {
  (void)state;
  static const char ptx[] = ".version 7.0\n"
                            ".target sm_70\n"
                            ".address_size 64\n"
                            ".extern .global .attribute(.managed) .align 4 .u32 n;\n"
                            ".visible .global .align 4 .u32 n = 3;\n"
                            ".visible .entry twice()\n"
                            "{\n"
                            ".reg .b32 %r<3>;\n"
                            "ld.global.u32 %r1, [n];\n"
                            "add.s32 %r2, %r1, %r1;\n"
                            "st.global.u32 [n], %r2;\n"
                            "ret;\n"
                            "}\n";
  gcap_context *ctx = sim_context((struct opts){.strict = true});
  gcap_module *m = NULL;
  gcap_module_desc d = {.image = ptx, .image_size = sizeof ptx};
  assert_ok(gcap_module_load(ctx, &d, &m));
  uint32_t *n = global_of(m, "n", 4);
  assert_int_equal(*n, 3);
  *n = 21;
  gcap_stream *s = test_stream_create(ctx);
  assert_ok(gcap_launch_kernel(s, test_kernel_of(m, "twice"), GCAP_DIM3(1, 1, 1), GCAP_DIM3(1, 1, 1), 0, NULL));
  assert_ok(gcap_stream_synchronize(s));
  assert_int_equal(*n, 42);
  assert_ok(gcap_stream_destroy(s));
  assert_ok(gcap_module_unload(m));
  gcap_context_destroy(ctx);
}

/* Other attributes, such as `.unified(uuid1, uuid2)`, are skipped: the variable stays device memory. */
static void test_other_attributes(void **state) {
  (void)state;
  static const char ptx[] = ".version 7.8\n"
                            ".target sm_90\n"
                            ".address_size 64\n"
                            ".visible .global .attribute(.unified(19, 95)) .align 4 .u32 u = 4;\n"
                            ".visible .entry k()\n"
                            "{\n"
                            "ret;\n"
                            "}\n";
  gcap_context *ctx = sim_context((struct opts){.strict = true});
  gcap_module *m = NULL;
  gcap_module_desc d = {.image = ptx, .image_size = sizeof ptx};
  assert_ok(gcap_module_load(ctx, &d, &m));
  void *u = global_of(m, "u", 4);
  uint32_t got = 0;
  assert_ok(gcap_memcpy(ctx, &got, u, sizeof got, GCAP_MEMCPY_DEVICE_TO_HOST));
  assert_int_equal(got, 4);
  assert_true(touch_faults(u));
  assert_ok(gcap_module_unload(m));
  gcap_context_destroy(ctx);
}

/* ptxas refuses `.attribute(.managed)` outside the .global state space ("Illegal attribute"). */
static void refused(const char *decl, const char *body, const char *where) {
  char ptx[512];
  snprintf(ptx, sizeof ptx,
           ".version 7.0\n.target sm_70\n.address_size 64\n%s\n.visible .entry k(%s)\n{\n%s\nret;\n}\n",
           where[0] == 'm' ? decl : "", where[0] == 'p' ? decl : "", where[0] == 'b' ? body : "");
  gcap_context *ctx = sim_context((struct opts){0});
  gcap_module *m = NULL;
  gcap_module_desc d = {.image = ptx, .image_size = strlen(ptx) + 1};
  assert_status(gcap_module_load(ctx, &d, &m), GCAP_ERROR_INVALID_PTX);
  assert_null(m);
  test_assert_message_contains(".attribute(.managed) is only for .global variables");
  test_assert_message_contains(where[0] == 'b' ? "line 7" : where[0] == 'p' ? "line 5" : "line 4");
  gcap_context_destroy(ctx);
}

static void test_refused_outside_global(void **state) {
  (void)state;
  refused(".const .attribute(.managed) .u32 c;", "", "module");
  refused(".shared .attribute(.managed) .u32 c;", "", "module");
  refused(".param .attribute(.managed) .u32 c", "", "param");
  refused("", ".shared .attribute(.managed) .u32 c;", "body");
  refused("", ".local .attribute(.managed) .u32 c;", "body");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_host_and_kernel),  cmocka_unit_test(test_strict_memory),
      cmocka_unit_test(test_deferred_strict),  cmocka_unit_test(test_extern_declaration),
      cmocka_unit_test(test_other_attributes), cmocka_unit_test(test_refused_outside_global),
  };
  return cmocka_run_group_tests(tests, test_setup, test_teardown);
}
