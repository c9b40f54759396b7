/*
 * CUDA C to PTX through NVRTC (src/ptx/nvrtc.c). The tests that compile skip themselves where no
 * libnvrtc is found. Run with the argument "missing" and GCAP_NVRTC naming a file that is not
 * there (Meson does both), it checks what a program without NVRTC is told instead.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "common.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../src/ptx/nvrtc.h"
#include "alloc.h"
#include "error.h"

#define MAX_STEPS 100 /* allocation points one compile may have */

static const char add_one_source[] = "extern \"C\" __global__ void add_one(int *p) {\n"
                                     "  p[threadIdx.x] += 1;\n"
                                     "}\n";

static const char fill_source[] = "#ifndef N\n"
                                  "#define N 1\n"
                                  "#endif\n"
                                  "extern \"C\" __global__ void fill(int *p) { p[threadIdx.x] = N * 1000 + 7; }\n";

/* The ';' after `int x = 1` is missing on line 3. */
static const char broken_source[] = "extern \"C\" __global__ void broken(int *p) {\n"
                                    "  int x = 1\n"
                                    "  p[0] = x;\n"
                                    "}\n";

/* The compile as a gcap API call does it, so that messages have their prefix. */
static gcap_status compile(const char *source, const char *const *options, size_t n, char **ptx, size_t *size) {
  gcap__enter("gcap_module_load");
  return gcap__nvrtc_compile(source, options, n, ptx, size);
}

static void require_nvrtc(void) {
  if (gcap__nvrtc_available()) return;
  char *ptx = NULL;
  size_t size = 0;
  compile("", NULL, 0, &ptx, &size);
  print_message("NVRTC is not available, skipping: %s\n", gcap_last_error_message());
  skip();
}

/* Compiles source (asserted to succeed) and returns the PTX, checking its size. */
static char *compile_ok(const char *source, const char *const *options, size_t n) {
  char *ptx = NULL;
  size_t size = 0;
  assert_ok(compile(source, options, n, &ptx, &size));
  test_assert_message_empty();
  assert_non_null(ptx);
  assert_int_equal(size, strlen(ptx) + 1);
  return ptx;
}

static void assert_contains(const char *text, const char *needle) {
  if (text && strstr(text, needle)) return;
  print_error("the PTX does not contain \"%s\":\n%s\n", needle, text ? text : "(no PTX)");
  fail();
}

static void test_kernel_compiles_to_an_entry(void **state) {
  (void)state;
  require_nvrtc();
  char *ptx = compile_ok(add_one_source, NULL, 0);
  assert_contains(ptx, ".visible .entry add_one(");
  assert_contains(ptx, ".target sm_75"); /* the default architecture */
  gcap__free(ptx);
}

static void test_options_reach_nvrtc(void **state) {
  (void)state;
  require_nvrtc();
  const char *const define[] = {"-DN=4"};
  char *plain = compile_ok(fill_source, NULL, 0);
  char *four = compile_ok(fill_source, define, 1);
  assert_string_not_equal(plain, four);
  assert_contains(plain, "1007");
  assert_contains(four, "4007");
  gcap__free(plain);
  gcap__free(four);
}

static void test_architecture_options(void **state) {
  (void)state;
  require_nvrtc();
  const char *const short_form[] = {"-arch=compute_80"};
  char *ptx = compile_ok(add_one_source, short_form, 1);
  assert_contains(ptx, ".target sm_80");
  gcap__free(ptx);
  const char *const long_form[] = {"-DN=2", "--gpu-architecture=compute_90"};
  ptx = compile_ok(add_one_source, long_form, 2);
  assert_contains(ptx, ".target sm_90");
  gcap__free(ptx);
}

static void test_syntax_error_gives_the_log(void **state) {
  (void)state;
  require_nvrtc();
  char *ptx = (char *)add_one_source; /* must be overwritten */
  size_t size = 99;
  assert_status(compile(broken_source, NULL, 0, &ptx, &size), GCAP_ERROR_INVALID_SOURCE);
  assert_null(ptx);
  assert_int_equal(size, 0);
  test_assert_message_contains("gcap_module_load: NVRTC could not compile the source: ");
  test_assert_message_contains("source.cu(3): error: expected a \";\"");
  const char *msg = gcap_last_error_message();
  size_t n = strlen(msg);
  assert_true(n > 0 && msg[n - 1] != '\n' && msg[n - 1] != ' '); /* trimmed */
}

static void test_long_log_is_cut(void **state) {
  (void)state;
  require_nvrtc();
  /* Many errors (NVRTC reports each undefined name once): a log far longer than a message holds. */
  char source[4096] = "extern \"C\" __global__ void many(int *p) {\n";
  size_t used = strlen(source);
  for (int i = 0; i < 40; i++)
    used += (size_t)snprintf(source + used, sizeof source - used, "  p[0] = undeclared_name_%02d;\n", i);
  snprintf(source + used, sizeof source - used, "}\n");
  char *ptx = NULL;
  size_t size = 0;
  assert_status(compile(source, NULL, 0, &ptx, &size), GCAP_ERROR_INVALID_SOURCE);
  test_assert_message_contains("identifier \"undeclared_name_00\" is undefined");
  test_assert_message_contains("[log cut]");
}

static void test_unknown_option_is_invalid_value(void **state) {
  (void)state;
  require_nvrtc();
  const char *const options[] = {"--no-such-option-here"};
  char *ptx = NULL;
  size_t size = 0;
  assert_status(compile(add_one_source, options, 1, &ptx, &size), GCAP_ERROR_INVALID_VALUE);
  assert_null(ptx);
  test_assert_message_contains("NVRTC refused an option");
  test_assert_message_contains("no-such-option-here");
}

/* Checked before NVRTC is looked for: these hold with or without it. */
static void test_invalid_arguments(void **state) {
  (void)state;
  const char *const options[] = {"-DN=1", NULL};
  char *ptx = (char *)add_one_source;
  size_t size = 99;
  assert_status(compile(add_one_source, options, 2, &ptx, &size), GCAP_ERROR_INVALID_VALUE);
  test_assert_message_contains("gcap_module_load: options[1] is NULL");
  assert_null(ptx);
  assert_int_equal(size, 0);
  assert_status(compile(add_one_source, NULL, 1, &ptx, &size), GCAP_ERROR_INVALID_VALUE);
  test_assert_message_contains("options is NULL");
  assert_status(compile(NULL, NULL, 0, &ptx, &size), GCAP_ERROR_INVALID_VALUE);
  test_assert_message_contains("source is NULL");
  assert_status(compile(add_one_source, NULL, 0, NULL, &size), GCAP_ERROR_INVALID_VALUE);
  test_assert_message_contains("ptx is NULL");
  assert_status(compile(add_one_source, NULL, 0, &ptx, NULL), GCAP_ERROR_INVALID_VALUE);
  test_assert_message_contains("ptx_size is NULL");
}

/*
 * Allocation n fails, for n = 0, 1, ... until the compile gets through: each step is
 * OUT_OF_MEMORY with a message and no output (leaks show under valgrind and ASan).
 */
static void compile_under_faults(const char *source, const char *const *options, size_t n, gcap_status done) {
  for (long step = 0;; step++) {
    assert_true(step < MAX_STEPS);
    char *ptx = (char *)add_one_source;
    size_t size = 99;
    gcap__alloc_fail_after(-1);
    gcap__alloc_fail_after(step);
    gcap_status st = compile(source, options, n, &ptx, &size);
    gcap__alloc_fail_after(-1);
    if (st == done) {
      gcap__free(ptx);
      assert_true(step > 0); /* every path allocates at least once */
      return;
    }
    assert_status(st, GCAP_ERROR_OUT_OF_MEMORY);
    test_assert_message_contains("gcap_module_load: ");
    assert_null(ptx);
    assert_int_equal(size, 0);
  }
}

static void test_allocation_failures(void **state) {
  (void)state;
  require_nvrtc();
  const char *const arch[] = {"-arch=compute_80"};
  const char *const define[] = {"-DN=3"};
  compile_under_faults(add_one_source, NULL, 0, GCAP_SUCCESS);
  compile_under_faults(add_one_source, arch, 1, GCAP_SUCCESS);
  compile_under_faults(fill_source, define, 1, GCAP_SUCCESS);
  compile_under_faults(broken_source, NULL, 0, GCAP_ERROR_INVALID_SOURCE);
}

static int reset_injection(void **state) {
  (void)state;
  gcap__alloc_fail_after(-1);
  return 0;
}

struct thread_job {
  const char *arch;
  const char *want;
  bool ok;
};

static void *compile_in_thread(void *arg) {
  struct thread_job *job = arg;
  const char *const options[] = {job->arch};
  char *ptx = NULL;
  size_t size = 0;
  job->ok = compile(add_one_source, options, 1, &ptx, &size) == GCAP_SUCCESS && strstr(ptx, job->want) != NULL;
  gcap__free(ptx);
  return NULL;
}

static void test_threads_compile_at_once(void **state) {
  (void)state;
  require_nvrtc();
  struct thread_job jobs[4] = {{"-arch=compute_75", ".target sm_75", false},
                               {"-arch=compute_80", ".target sm_80", false},
                               {"-arch=compute_86", ".target sm_86", false},
                               {"-arch=compute_90", ".target sm_90", false}};
  pthread_t threads[4];
  for (int i = 0; i < 4; i++) assert_int_equal(pthread_create(&threads[i], NULL, compile_in_thread, &jobs[i]), 0);
  for (int i = 0; i < 4; i++) assert_int_equal(pthread_join(threads[i], NULL), 0);
  for (int i = 0; i < 4; i++) assert_true(jobs[i].ok);
}

/* ---------------------------------------------------- without NVRTC ("missing") */

static void test_missing_library_is_not_found(void **state) {
  (void)state;
  const char *given = getenv("GCAP_NVRTC");
  assert_non_null(given);
  assert_false(gcap__nvrtc_available());
  for (int i = 0; i < 2; i++) { /* the second call answers from the cached lookup */
    char *ptx = (char *)add_one_source;
    size_t size = 99;
    assert_status(compile(add_one_source, NULL, 0, &ptx, &size), GCAP_ERROR_NOT_FOUND);
    assert_null(ptx);
    assert_int_equal(size, 0);
    test_assert_message_contains("gcap_module_load: GCAP_NVRTC=");
    test_assert_message_contains(given);
    test_assert_message_contains("install the CUDA toolkit's NVRTC");
    test_assert_message_contains("cuda-nvrtc");
    test_assert_message_contains("point GCAP_NVRTC at libnvrtc.so");
  }
}

int main(int argc, char **argv) {
  if (argc > 1 && strcmp(argv[1], "missing") == 0) {
    const struct CMUnitTest missing[] = {
        cmocka_unit_test(test_missing_library_is_not_found),
        cmocka_unit_test(test_invalid_arguments),
    };
    return cmocka_run_group_tests(missing, NULL, NULL);
  }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_invalid_arguments),
      cmocka_unit_test(test_kernel_compiles_to_an_entry),
      cmocka_unit_test(test_options_reach_nvrtc),
      cmocka_unit_test(test_architecture_options),
      cmocka_unit_test(test_syntax_error_gives_the_log),
      cmocka_unit_test(test_long_log_is_cut),
      cmocka_unit_test(test_unknown_option_is_invalid_value),
      cmocka_unit_test_teardown(test_allocation_failures, reset_injection),
      cmocka_unit_test(test_threads_compile_at_once),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
