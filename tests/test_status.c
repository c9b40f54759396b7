/* Status codes, their names and strings, the version and backend names, and the last-error message. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "common.h"

#include <stdio.h>
#include <string.h>

struct status_row {
  gcap_status code;
  int value;
  const char *name;
};

/* Written out by hand so that a change of the header's table is caught. */
static const struct status_row expected_statuses[] = {
    {GCAP_SUCCESS, 0, "GCAP_SUCCESS"},
    {GCAP_ERROR_INVALID_VALUE, 1, "GCAP_ERROR_INVALID_VALUE"},
    {GCAP_ERROR_OUT_OF_MEMORY, 2, "GCAP_ERROR_OUT_OF_MEMORY"},
    {GCAP_ERROR_NOT_INITIALIZED, 3, "GCAP_ERROR_NOT_INITIALIZED"},
    {GCAP_ERROR_INVALID_HANDLE, 4, "GCAP_ERROR_INVALID_HANDLE"},
    {GCAP_ERROR_NOT_SUPPORTED, 5, "GCAP_ERROR_NOT_SUPPORTED"},
    {GCAP_ERROR_NOT_FOUND, 6, "GCAP_ERROR_NOT_FOUND"},
    {GCAP_ERROR_NOT_READY, 7, "GCAP_ERROR_NOT_READY"},
    {GCAP_ERROR_ILLEGAL_STATE, 8, "GCAP_ERROR_ILLEGAL_STATE"},
    {GCAP_ERROR_STREAM_CAPTURE_UNSUPPORTED, 900, "GCAP_ERROR_STREAM_CAPTURE_UNSUPPORTED"},
    {GCAP_ERROR_STREAM_CAPTURE_INVALIDATED, 901, "GCAP_ERROR_STREAM_CAPTURE_INVALIDATED"},
    {GCAP_ERROR_STREAM_CAPTURE_MERGE, 902, "GCAP_ERROR_STREAM_CAPTURE_MERGE"},
    {GCAP_ERROR_STREAM_CAPTURE_UNMATCHED, 903, "GCAP_ERROR_STREAM_CAPTURE_UNMATCHED"},
    {GCAP_ERROR_STREAM_CAPTURE_UNJOINED, 904, "GCAP_ERROR_STREAM_CAPTURE_UNJOINED"},
    {GCAP_ERROR_STREAM_CAPTURE_ISOLATION, 905, "GCAP_ERROR_STREAM_CAPTURE_ISOLATION"},
    {GCAP_ERROR_STREAM_CAPTURE_IMPLICIT, 906, "GCAP_ERROR_STREAM_CAPTURE_IMPLICIT"},
    {GCAP_ERROR_CAPTURED_EVENT, 907, "GCAP_ERROR_CAPTURED_EVENT"},
    {GCAP_ERROR_STREAM_CAPTURE_WRONG_THREAD, 908, "GCAP_ERROR_STREAM_CAPTURE_WRONG_THREAD"},
    {GCAP_ERROR_GRAPH_EXEC_UPDATE_FAILURE, 910, "GCAP_ERROR_GRAPH_EXEC_UPDATE_FAILURE"},
    {GCAP_ERROR_BACKEND, 999, "GCAP_ERROR_BACKEND"},
};
#define NUM_STATUSES (sizeof expected_statuses / sizeof expected_statuses[0])

/* Values that are not status codes. */
static const int unknown_values[] = {-1, 9, 10, 899, 909, 911, 998, 1000, 3000};
#define NUM_UNKNOWN (sizeof unknown_values / sizeof unknown_values[0])

static void test_status_values(void **state) {
  (void)state;
  for (size_t i = 0; i < NUM_STATUSES; i++)
    assert_int_equal((int)expected_statuses[i].code, expected_statuses[i].value);
  assert_int_equal(GCAP_SUCCESS, 0);
  assert_int_equal(GCAP_ERROR_INVALID_VALUE, 1);
  assert_int_equal(GCAP_ERROR_OUT_OF_MEMORY, 2);
  assert_int_equal(GCAP_ERROR_NOT_INITIALIZED, 3);
  assert_int_equal(GCAP_ERROR_INVALID_HANDLE, 4);
  assert_int_equal(GCAP_ERROR_NOT_SUPPORTED, 5);
  assert_int_equal(GCAP_ERROR_NOT_FOUND, 6);
  assert_int_equal(GCAP_ERROR_NOT_READY, 7);
  assert_int_equal(GCAP_ERROR_ILLEGAL_STATE, 8);
  assert_int_equal(GCAP_ERROR_STREAM_CAPTURE_UNSUPPORTED, 900);
  assert_int_equal(GCAP_ERROR_STREAM_CAPTURE_INVALIDATED, 901);
  assert_int_equal(GCAP_ERROR_STREAM_CAPTURE_MERGE, 902);
  assert_int_equal(GCAP_ERROR_STREAM_CAPTURE_UNMATCHED, 903);
  assert_int_equal(GCAP_ERROR_STREAM_CAPTURE_UNJOINED, 904);
  assert_int_equal(GCAP_ERROR_STREAM_CAPTURE_ISOLATION, 905);
  assert_int_equal(GCAP_ERROR_STREAM_CAPTURE_IMPLICIT, 906);
  assert_int_equal(GCAP_ERROR_CAPTURED_EVENT, 907);
  assert_int_equal(GCAP_ERROR_STREAM_CAPTURE_WRONG_THREAD, 908);
  assert_int_equal(GCAP_ERROR_GRAPH_EXEC_UPDATE_FAILURE, 910);
  assert_int_equal(GCAP_ERROR_BACKEND, 999);
}

static void test_status_names(void **state) {
  (void)state;
  for (size_t i = 0; i < NUM_STATUSES; i++) {
    const char *name = gcap_status_name(expected_statuses[i].code);
    assert_non_null(name);
    assert_string_equal(name, expected_statuses[i].name);
  }
  for (size_t i = 0; i < NUM_UNKNOWN; i++) {
    const char *name = gcap_status_name((gcap_status)unknown_values[i]);
    assert_non_null(name);
    assert_string_equal(name, "GCAP_UNKNOWN_STATUS");
  }
}

static void test_status_strings(void **state) {
  (void)state;
  for (size_t i = 0; i < NUM_STATUSES; i++) {
    const char *a = gcap_status_string(expected_statuses[i].code);
    assert_non_null(a);
    assert_true(strlen(a) > 0);
    /* A sentence, not the enum name. */
    assert_string_not_equal(a, expected_statuses[i].name);
    for (size_t j = 0; j < i; j++) {
      const char *b = gcap_status_string(expected_statuses[j].code);
      assert_non_null(b);
      assert_string_not_equal(a, b);
    }
  }
  for (size_t i = 0; i < NUM_UNKNOWN; i++) {
    const char *s = gcap_status_string((gcap_status)unknown_values[i]);
    assert_non_null(s);
    assert_true(strlen(s) > 0);
  }
}

static void test_version(void **state) {
  (void)state;
  assert_int_equal(GCAP_VERSION_MAJOR, 0);
  assert_int_equal(GCAP_VERSION_MINOR, 1);
  assert_int_equal(GCAP_VERSION_PATCH, 0);

  int major = -7, minor = -7, patch = -7;
  gcap_version(&major, &minor, &patch);
  assert_int_equal(major, GCAP_VERSION_MAJOR);
  assert_int_equal(minor, GCAP_VERSION_MINOR);
  assert_int_equal(patch, GCAP_VERSION_PATCH);

  /* NULL outputs are skipped; the others are still written. */
  gcap_version(NULL, NULL, NULL);
  minor = -7;
  gcap_version(NULL, &minor, NULL);
  assert_int_equal(minor, GCAP_VERSION_MINOR);
  major = -7;
  patch = -7;
  gcap_version(&major, NULL, &patch);
  assert_int_equal(major, GCAP_VERSION_MAJOR);
  assert_int_equal(patch, GCAP_VERSION_PATCH);
}

static void test_backend_names(void **state) {
  (void)state;
  assert_string_equal(gcap_backend_name(GCAP_BACKEND_AUTO), "auto");
  assert_string_equal(gcap_backend_name(GCAP_BACKEND_SIM), "sim");
  assert_string_equal(gcap_backend_name(GCAP_BACKEND_CUDA), "cuda");
  assert_string_equal(gcap_backend_name((gcap_backend_kind)3), "unknown");
  assert_string_equal(gcap_backend_name((gcap_backend_kind)-1), "unknown");
}

/* Causes a failure on this thread and returns a copy of its message. */
static void cause_failure(char *buf, size_t size) {
  gcap_stream *s = (gcap_stream *)buf; /* any non-NULL value: must be reset */
  assert_status(gcap_stream_create(NULL, &s), GCAP_ERROR_INVALID_HANDLE);
  assert_null(s);
  const char *msg = gcap_last_error_message();
  assert_non_null(msg);
  assert_true(strlen(msg) > 0);
  assert_true(strlen(msg) < size);
  strcpy(buf, msg);
}

static void test_last_error_after_failure_and_success(void **state) {
  (void)state;
  char msg[1024];
  cause_failure(msg, sizeof msg);
  test_assert_message_contains("gcap_stream_create");
  /* Reading the message does not clear it. */
  assert_string_equal(gcap_last_error_message(), msg);
  assert_string_equal(gcap_last_error_message(), msg);

  /* A following successful call clears it. */
  assert_ok(gcap_backend_available(GCAP_BACKEND_SIM));
  assert_string_equal(gcap_last_error_message(), "");

  cause_failure(msg, sizeof msg);
  gcap_context_options o;
  gcap_context_options_init(&o);
  o.backend = GCAP_BACKEND_SIM;
  gcap_context *ctx = NULL;
  assert_ok(gcap_context_create(&o, &ctx));
  assert_string_equal(gcap_last_error_message(), "");
  assert_ok(gcap_context_synchronize(ctx));
  assert_string_equal(gcap_last_error_message(), "");
  gcap_context_destroy(ctx);
}

static void test_five_functions_keep_message(void **state) {
  (void)state;
  char msg[1024];
  cause_failure(msg, sizeof msg);

  for (size_t i = 0; i < NUM_STATUSES; i++) {
    (void)gcap_status_name(expected_statuses[i].code);
    (void)gcap_status_string(expected_statuses[i].code);
  }
  (void)gcap_status_name((gcap_status)3000);
  (void)gcap_status_string((gcap_status)3000);
  (void)gcap_status_name((gcap_status)-1);
  (void)gcap_status_string((gcap_status)-1);
  assert_string_equal(gcap_last_error_message(), msg);

  int major = 0, minor = 0, patch = 0;
  gcap_version(&major, &minor, &patch);
  gcap_version(NULL, NULL, NULL);
  assert_string_equal(gcap_last_error_message(), msg);

  (void)gcap_backend_name(GCAP_BACKEND_AUTO);
  (void)gcap_backend_name(GCAP_BACKEND_SIM);
  (void)gcap_backend_name(GCAP_BACKEND_CUDA);
  (void)gcap_backend_name((gcap_backend_kind)42);
  assert_string_equal(gcap_last_error_message(), msg);

  (void)gcap_last_error_message();
  assert_string_equal(gcap_last_error_message(), msg);

  /* After a success the message is "", and the five leave it "". */
  assert_ok(gcap_backend_available(GCAP_BACKEND_SIM));
  assert_string_equal(gcap_last_error_message(), "");
  (void)gcap_status_name((gcap_status)3000);
  (void)gcap_status_string((gcap_status)3000);
  gcap_version(NULL, NULL, NULL);
  (void)gcap_backend_name((gcap_backend_kind)42);
  assert_string_equal(gcap_last_error_message(), "");
}

int main(void) {
  test_require_backend();
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_status_values),
      cmocka_unit_test(test_status_names),
      cmocka_unit_test(test_status_strings),
      cmocka_unit_test(test_version),
      cmocka_unit_test(test_backend_names),
      cmocka_unit_test(test_last_error_after_failure_and_success),
      cmocka_unit_test(test_five_functions_keep_message),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
