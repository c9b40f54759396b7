#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"

void test_check_status_(gcap_status got, gcap_status expected, const char *expr, const char *file, int line) {
  if (got == expected) return;
  print_error("%s:%d: %s returned %s, expected %s (message: \"%s\")\n", file, line, expr, gcap_status_name(got),
                 gcap_status_name(expected), gcap_last_error_message());
  _fail(file, line);
}

static gcap_backend_kind selected_backend(void) {
  const char *env = getenv("GCAP_BACKEND");
  if (env == NULL || *env == '\0') return GCAP_BACKEND_SIM;
  if (strcmp(env, "cuda") == 0) return GCAP_BACKEND_CUDA;
  if (strcmp(env, "auto") == 0) return GCAP_BACKEND_AUTO;
  return GCAP_BACKEND_SIM;
}

bool test_on_sim(void) { return selected_backend() == GCAP_BACKEND_SIM; }

void test_require_backend(void) {
  gcap_backend_kind k = selected_backend();
  if (k == GCAP_BACKEND_SIM) return;
  if (gcap_backend_available(GCAP_BACKEND_CUDA) != GCAP_SUCCESS) {
    fprintf(stderr, "skipped: GCAP_BACKEND=%s but CUDA cannot start here: %s\n", getenv("GCAP_BACKEND"),
            gcap_last_error_message());
    exit(77);
  }
}

gcap_context *test_context_create(void) {
  gcap_context_options o;
  gcap_context_options_init(&o);
  o.backend = selected_backend();
  gcap_context *ctx = NULL;
  gcap_status s = gcap_context_create(&o, &ctx);
  if (s != GCAP_SUCCESS) {
    print_error("gcap_context_create failed: %s (%s)\n", gcap_status_name(s), gcap_last_error_message());
    fail();
  }
  return ctx;
}

void test_assert_message_contains(const char *needle) {
  const char *msg = gcap_last_error_message();
  if (strstr(msg, needle) != NULL) return;
  print_error("last error message \"%s\" does not contain \"%s\"\n", msg, needle);
  fail();
}

int test_setup(void **state) {
  struct test_fixture *f = calloc(1, sizeof *f);
  if (f == NULL) return -1;
  f->ctx = test_context_create();
  if (gcap_stream_create(f->ctx, &f->s) != GCAP_SUCCESS) return -1;
  *state = f;
  return 0;
}

int test_teardown(void **state) {
  struct test_fixture *f = *state;
  if (f == NULL) return 0;
  if (gcap_stream_destroy(f->s) != GCAP_SUCCESS) return -1;
  gcap_context_destroy(f->ctx);
  free(f);
  return 0;
}
