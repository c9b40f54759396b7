/*
 * How gcap loads the CUDA driver, against a fake libcuda.so.1 (fake_libcuda.c): every way the
 * driver can be unusable gives NOT_INITIALIZED with the reason, and nothing falls back. Also the
 * CUresult -> gcap_status table. argv[1] names the scenario; Meson runs each with its setup.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common.h"
#include "backend_cuda/driver.h"

static const char *expected_reason[2]; /* substrings the NOT_INITIALIZED message must hold */

static gcap_status create(gcap_backend_kind kind, int device, gcap_context **ctx) {
  gcap_context_options o;
  gcap_context_options_init(&o);
  o.backend = kind;
  o.device = device;
  *ctx = (gcap_context *)(uintptr_t)1;
  return gcap_context_create(&o, ctx);
}

static void assert_reason(void) {
  for (size_t i = 0; i < 2; i++)
    if (expected_reason[i]) test_assert_message_contains(expected_reason[i]);
}

static void test_unusable_driver(void **state) {
  (void)state;
  gcap_context *ctx;
  assert_status(gcap_backend_available(GCAP_BACKEND_CUDA), GCAP_ERROR_NOT_INITIALIZED);
  test_assert_message_contains("gcap_backend_available");
  assert_reason();
  /* The outcome is remembered: a second question gets the same answer and reason. */
  assert_status(gcap_backend_available(GCAP_BACKEND_CUDA), GCAP_ERROR_NOT_INITIALIZED);
  assert_reason();

  assert_status(create(GCAP_BACKEND_CUDA, 0, &ctx), GCAP_ERROR_NOT_INITIALIZED);
  assert_null(ctx);
  assert_reason();
  unsetenv("GCAP_BACKEND");
  assert_status(create(GCAP_BACKEND_AUTO, 0, &ctx), GCAP_ERROR_NOT_INITIALIZED);
  assert_null(ctx);
  test_assert_message_contains("GCAP_BACKEND=sim");
  assert_reason();

  /* The same binary still runs on the simulator. */
  assert_ok(create(GCAP_BACKEND_SIM, 0, &ctx));
  assert_int_equal(gcap_context_backend(ctx), GCAP_BACKEND_SIM);
  gcap_context_destroy(ctx);
}

/* The fake driver loads and initialises, but retaining the primary context fails. */
static void test_context_failure_is_mapped(void **state) {
  (void)state;
  gcap_context *ctx;
  assert_ok(gcap_backend_available(GCAP_BACKEND_CUDA));
  assert_status(create(GCAP_BACKEND_CUDA, 0, &ctx), GCAP_ERROR_OUT_OF_MEMORY);
  assert_null(ctx);
  test_assert_message_contains("cuDevicePrimaryCtxRetain");
  test_assert_message_contains("CUDA_ERROR_OUT_OF_MEMORY");

  assert_status(create(GCAP_BACKEND_CUDA, 3, &ctx), GCAP_ERROR_INVALID_VALUE);
  assert_null(ctx);
  test_assert_message_contains("1 CUDA device");
  assert_status(create(GCAP_BACKEND_CUDA, -1, &ctx), GCAP_ERROR_INVALID_VALUE);

  /* AUTO picks the usable driver and reports its failure: no fallback to the simulator. */
  unsetenv("GCAP_BACKEND");
  assert_status(create(GCAP_BACKEND_AUTO, 0, &ctx), GCAP_ERROR_OUT_OF_MEMORY);
  assert_null(ctx);
}

static void test_status_table(void **state) {
  (void)state;
  /* The same numbers for 1, 2 and 900-910 where gcap has the code. */
  assert_int_equal(gcap__cuda_status(CUDA_SUCCESS), GCAP_SUCCESS);
  assert_int_equal(gcap__cuda_status(CUDA_ERROR_INVALID_VALUE), 1);
  assert_int_equal(gcap__cuda_status(CUDA_ERROR_OUT_OF_MEMORY), 2);
  for (int r = 900; r <= 908; r++) assert_int_equal(gcap__cuda_status((CUresult)r), r);
  assert_int_equal(gcap__cuda_status(CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE), 910);
  assert_int_equal(gcap__cuda_status(CUDA_ERROR_TIMEOUT), GCAP_ERROR_BACKEND); /* 909: no gcap code */

  assert_int_equal(gcap__cuda_status(CUDA_ERROR_NOT_INITIALIZED), GCAP_ERROR_NOT_INITIALIZED);
  assert_int_equal(gcap__cuda_status(CUDA_ERROR_NO_DEVICE), GCAP_ERROR_NOT_INITIALIZED);
  assert_int_equal(gcap__cuda_status(CUDA_ERROR_INVALID_HANDLE), GCAP_ERROR_INVALID_HANDLE);
  assert_int_equal(gcap__cuda_status(CUDA_ERROR_INVALID_CONTEXT), GCAP_ERROR_INVALID_HANDLE);
  assert_int_equal(gcap__cuda_status(CUDA_ERROR_NOT_FOUND), GCAP_ERROR_NOT_FOUND);
  assert_int_equal(gcap__cuda_status(CUDA_ERROR_NOT_READY), GCAP_ERROR_NOT_READY);
  assert_int_equal(gcap__cuda_status(CUDA_ERROR_NOT_SUPPORTED), GCAP_ERROR_NOT_SUPPORTED);
  assert_int_equal(gcap__cuda_status(CUDA_ERROR_ILLEGAL_STATE), GCAP_ERROR_ILLEGAL_STATE);
  assert_int_equal(gcap__cuda_status(CUDA_ERROR_INVALID_PTX), GCAP_ERROR_INVALID_VALUE);
  assert_int_equal(gcap__cuda_status(CUDA_ERROR_LAUNCH_FAILED), GCAP_ERROR_BACKEND);
  assert_int_equal(gcap__cuda_status(CUDA_ERROR_ILLEGAL_ADDRESS), GCAP_ERROR_BACKEND);
  assert_int_equal(gcap__cuda_status(CUDA_ERROR_UNKNOWN), GCAP_ERROR_BACKEND);
}

static void test_check_message(void **state) {
  (void)state;
  gcap_context *ctx;
  /* Any call sets the public function name the message starts with. */
  assert_ok(create(GCAP_BACKEND_SIM, 0, &ctx));
  assert_int_equal(gcap__cuda_check(CUDA_SUCCESS, "cuNothing"), GCAP_SUCCESS);
  assert_int_equal(gcap__cuda_check(CUDA_ERROR_NOT_READY, "cuStreamQuery(%p)", (void *)ctx), GCAP_ERROR_NOT_READY);
  test_assert_message_contains("cuStreamQuery(");
  test_assert_message_contains("failed");
  test_assert_message_contains("600");
  gcap_context_destroy(ctx);
}

int main(int argc, char **argv) {
  const char *scenario = argc > 1 ? argv[1] : "";
  if (strcmp(scenario, "status") == 0) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_status_table), cmocka_unit_test(test_check_message)};
    return cmocka_run_group_tests_name("cuda status table", tests, NULL, NULL);
  }
  if (strcmp(scenario, "context") == 0) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_context_failure_is_mapped)};
    return cmocka_run_group_tests_name("cuda context failure", tests, NULL, NULL);
  }
  if (strcmp(scenario, "none") == 0) {
    if (gcap_backend_available(GCAP_BACKEND_CUDA) == GCAP_SUCCESS) {
      fprintf(stderr, "skipped: a real CUDA driver is installed here\n");
      return 77;
    }
    expected_reason[0] = "libcuda.so.1";
  } else if (strcmp(scenario, "old") == 0) {
    expected_reason[0] = "11.8", expected_reason[1] = "12.0";
  } else if (strcmp(scenario, "init") == 0) {
    expected_reason[0] = "cuInit", expected_reason[1] = "CUDA_ERROR_NO_DEVICE";
  } else if (strcmp(scenario, "nodevice") == 0) {
    expected_reason[0] = "no device";
  } else if (strcmp(scenario, "missing") == 0) {
    expected_reason[0] = "cuGraphExecUpdate";
  } else {
    fprintf(stderr, "usage: %s status|context|none|old|init|nodevice|missing\n", argv[0]);
    return 2;
  }
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_unusable_driver)};
  return cmocka_run_group_tests_name(scenario, tests, NULL, NULL);
}
