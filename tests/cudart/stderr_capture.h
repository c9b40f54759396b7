/* What the runtime says on stderr, for the tests of src/cudart: between stderr_listen() and
 * stderr_heard(), fd 2 goes to a temporary file, whose text stderr_heard() returns
 * (NUL-terminated, in a static buffer the next call reuses). Include after <cmocka.h>. */
#ifndef GCAP_TESTS_CUDART_STDERR_CAPTURE_H
#define GCAP_TESTS_CUDART_STDERR_CAPTURE_H

#include <stdio.h>
#include <unistd.h>

static FILE *stderr_file;
static int stderr_saved = -1;

static inline void stderr_listen(void) {
  stderr_file = tmpfile();
  assert_non_null(stderr_file);
  fflush(stderr);
  stderr_saved = dup(2);
  assert_true(stderr_saved >= 0);
  assert_true(dup2(fileno(stderr_file), 2) >= 0);
}

static inline const char *stderr_heard(void) {
  static char heard[4096];
  fflush(stderr);
  assert_true(dup2(stderr_saved, 2) >= 0);
  close(stderr_saved);
  rewind(stderr_file);
  size_t n = fread(heard, 1, sizeof heard - 1, stderr_file);
  heard[n] = '\0';
  fclose(stderr_file);
  return heard;
}

#endif
