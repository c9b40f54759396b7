/* The runtime functions gcap does not implement yet: called through the toolkit's own
 * declarations, each returns cudaErrorNotSupported and says so on stderr, once per name. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "stderr_capture.h"

#include <cuda_runtime_api.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static const char *said = "";

/* Runs fn; what it wrote on stderr lands in `said`. */
static void capture_stderr(void (*fn)(void)) {
  stderr_listen();
  fn();
  said = stderr_heard();
}

static cudaError_t results[4];

static void call_twice(void) {
  results[0] = cudaGraphicsMapResources(0, NULL, 0);
  results[1] = cudaGraphicsMapResources(1, NULL, 0);
  results[2] = cudaGraphicsUnregisterResource(NULL);
  results[3] = cudaGraphicsMapResources(2, NULL, 0);
}

static void stub_returns_not_supported_once(void **state) {
  (void)state;
  capture_stderr(call_twice);
  for (int i = 0; i < 4; i++) assert_int_equal(results[i], cudaErrorNotSupported);
  assert_int_equal(cudaErrorNotSupported, 801);
  assert_string_equal(said, "gcap-cudart: cudaGraphicsMapResources is not supported by gcap\n"
                            "gcap-cudart: cudaGraphicsUnregisterResource is not supported by gcap\n");
}

static void *unmap(void *arg) {
  *(cudaError_t *)arg = cudaGraphicsUnmapResources(0, NULL, 0);
  return NULL;
}

static void from_threads(void) {
  pthread_t t[8];
  cudaError_t r[8];
  for (int i = 0; i < 8; i++) assert_int_equal(pthread_create(&t[i], NULL, unmap, &r[i]), 0);
  for (int i = 0; i < 8; i++) assert_int_equal(pthread_join(t[i], NULL), 0);
  for (int i = 0; i < 8; i++) assert_int_equal(r[i], cudaErrorNotSupported);
}

/* Many threads meeting the same stub at once: still one line. */
static void once_across_threads(void **state) {
  (void)state;
  capture_stderr(from_threads);
  assert_string_equal(said, "gcap-cudart: cudaGraphicsUnmapResources is not supported by gcap\n");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(stub_returns_not_supported_once),
      cmocka_unit_test(once_across_threads),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
