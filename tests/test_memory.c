/* Device and pinned host memory, synchronous and stream-ordered copies, fills. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "common.h"

#include <stdlib.h>
#include <string.h>

/* struct test_fixture, test_setup() and test_teardown() come from common.h: a context and one stream. */

static int sentinel_storage;
#define SENTINEL ((void *)&sentinel_storage)

static void fill_pattern(unsigned char *p, size_t n, unsigned seed) {
  for (size_t i = 0; i < n; i++) p[i] = (unsigned char)((i * 131u + seed * 17u + 7u) & 0xFFu);
}

/* Writes n bytes of `byte` to device memory through a synchronous copy. */
static void dev_set(gcap_context *ctx, void *d, unsigned char byte, size_t n) {
  unsigned char *h = malloc(n);
  assert_non_null(h);
  memset(h, byte, n);
  assert_ok(gcap_memcpy(ctx, d, h, n, GCAP_MEMCPY_HOST_TO_DEVICE));
  free(h);
}

/* Reads n bytes of device memory into a fresh malloc'd buffer. */
static unsigned char *dev_read(gcap_context *ctx, const void *d, size_t n) {
  unsigned char *h = malloc(n);
  assert_non_null(h);
  memset(h, 0xEE, n);
  assert_ok(gcap_memcpy(ctx, h, d, n, GCAP_MEMCPY_DEVICE_TO_HOST));
  return h;
}

static void assert_all_bytes(const unsigned char *p, size_t n, unsigned char byte) {
  for (size_t i = 0; i < n; i++) {
    if (p[i] != byte) fail_msg("byte %zu is 0x%02x, expected 0x%02x", i, p[i], byte);
  }
}

/* ----------------------------------------------------------- allocation */

static void test_mem_alloc_free(void **state) {
  struct test_fixture *f = *state;
  void *d = SENTINEL;
  assert_ok(gcap_mem_alloc(f->ctx, 256, &d));
  assert_non_null(d);
  assert_true(d != SENTINEL);
  assert_string_equal(gcap_last_error_message(), "");
  void *d2 = NULL;
  assert_ok(gcap_mem_alloc(f->ctx, 1, &d2));
  assert_non_null(d2);
  assert_true(d2 != d);
  /* The allocation is usable over its whole length. */
  unsigned char in[256];
  fill_pattern(in, sizeof in, 1);
  assert_ok(gcap_memcpy(f->ctx, d, in, sizeof in, GCAP_MEMCPY_HOST_TO_DEVICE));
  unsigned char *out = dev_read(f->ctx, d, sizeof in);
  assert_memory_equal(in, out, sizeof in);
  free(out);
  assert_ok(gcap_mem_free(f->ctx, d));
  assert_string_equal(gcap_last_error_message(), "");
  assert_ok(gcap_mem_free(f->ctx, d2));
}

static void test_mem_alloc_errors(void **state) {
  struct test_fixture *f = *state;
  void *d = SENTINEL;
  assert_status(gcap_mem_alloc(f->ctx, 0, &d), GCAP_ERROR_INVALID_VALUE);
  assert_null(d);
  test_assert_message_contains("gcap_mem_alloc");
  assert_status(gcap_mem_alloc(f->ctx, 16, NULL), GCAP_ERROR_INVALID_VALUE);
  test_assert_message_contains("gcap_mem_alloc");
  d = SENTINEL;
  assert_status(gcap_mem_alloc(NULL, 16, &d), GCAP_ERROR_INVALID_HANDLE);
  assert_null(d);
  test_assert_message_contains("gcap_mem_alloc");
  /* Handles are checked before the other arguments. */
  assert_status(gcap_mem_alloc(NULL, 0, NULL), GCAP_ERROR_INVALID_HANDLE);

  gcap_context *dead = test_context_create();
  gcap_context_destroy(dead);
  d = SENTINEL;
  assert_status(gcap_mem_alloc(dead, 16, &d), GCAP_ERROR_INVALID_HANDLE);
  assert_null(d);

  /* More than the device holds (1 EiB): refused as a GPU does, the host never asked. */
  d = SENTINEL;
  assert_status(gcap_mem_alloc(f->ctx, (size_t)1 << 60, &d), GCAP_ERROR_OUT_OF_MEMORY);
  assert_null(d);
  test_assert_message_contains("gcap_mem_alloc");
  if (test_on_sim()) test_assert_message_contains("more than the simulated device's 80 GiB");
  assert_status(gcap_mem_alloc_managed(f->ctx, (size_t)1 << 60, &d), GCAP_ERROR_OUT_OF_MEMORY);
  if (test_on_sim()) test_assert_message_contains("more than the simulated device's 80 GiB");
}

static void test_mem_free_errors(void **state) {
  struct test_fixture *f = *state;
  assert_ok(gcap_mem_free(f->ctx, NULL));
  assert_string_equal(gcap_last_error_message(), "");

  unsigned char *d = test_dev_alloc(f->ctx, 128);
  /* Interior pointer: not the base. */
  assert_status(gcap_mem_free(f->ctx, d + 1), GCAP_ERROR_INVALID_VALUE);
  test_assert_message_contains("gcap_mem_free");
  assert_status(gcap_mem_free(f->ctx, d + 64), GCAP_ERROR_INVALID_VALUE);
  /* Host memory of any kind. */
  unsigned char stack_buf[16];
  assert_status(gcap_mem_free(f->ctx, stack_buf), GCAP_ERROR_INVALID_VALUE);
  void *h = NULL;
  assert_ok(gcap_host_alloc(f->ctx, 64, &h));
  assert_status(gcap_mem_free(f->ctx, h), GCAP_ERROR_INVALID_VALUE);
  assert_ok(gcap_host_free(f->ctx, h));
  /* NULL context. */
  assert_status(gcap_mem_free(NULL, d), GCAP_ERROR_INVALID_HANDLE);
  assert_status(gcap_mem_free(NULL, NULL), GCAP_ERROR_INVALID_HANDLE);

  /* The failed frees left the allocation alive. */
  unsigned char in[128];
  fill_pattern(in, sizeof in, 2);
  assert_ok(gcap_memcpy(f->ctx, d, in, sizeof in, GCAP_MEMCPY_HOST_TO_DEVICE));
  unsigned char *out = dev_read(f->ctx, d, sizeof in);
  assert_memory_equal(in, out, sizeof in);
  free(out);

  assert_ok(gcap_mem_free(f->ctx, d));
  /* Double free. */
  assert_status(gcap_mem_free(f->ctx, d), GCAP_ERROR_INVALID_VALUE);
  test_assert_message_contains("gcap_mem_free");

  /* Destroyed context. */
  gcap_context *dead = test_context_create();
  gcap_context_destroy(dead);
  assert_status(gcap_mem_free(dead, NULL), GCAP_ERROR_INVALID_HANDLE);
}

static void test_mem_free_foreign_context(void **state) {
  struct test_fixture *f = *state;
  gcap_context *other = test_context_create();
  void *d = test_dev_alloc(other, 64);
  assert_status(gcap_mem_free(f->ctx, d), GCAP_ERROR_INVALID_VALUE);
  test_assert_message_contains("gcap_mem_free");
  assert_ok(gcap_mem_free(other, d));
  void *h = NULL;
  assert_ok(gcap_host_alloc(other, 64, &h));
  assert_status(gcap_host_free(f->ctx, h), GCAP_ERROR_INVALID_VALUE);
  assert_ok(gcap_host_free(other, h));
  gcap_context_destroy(other);
}

static void test_host_alloc_free(void **state) {
  struct test_fixture *f = *state;
  void *h = SENTINEL;
  assert_ok(gcap_host_alloc(f->ctx, 300, &h));
  assert_non_null(h);
  assert_true(h != SENTINEL);
  assert_string_equal(gcap_last_error_message(), "");
  /* Host memory is directly usable. */
  memset(h, 0x5A, 300);
  assert_all_bytes(h, 300, 0x5A);
  assert_ok(gcap_host_free(f->ctx, h));
  assert_ok(gcap_host_free(f->ctx, NULL));
  assert_string_equal(gcap_last_error_message(), "");
}

static void test_host_alloc_errors(void **state) {
  struct test_fixture *f = *state;
  void *h = SENTINEL;
  assert_status(gcap_host_alloc(f->ctx, 0, &h), GCAP_ERROR_INVALID_VALUE);
  assert_null(h);
  test_assert_message_contains("gcap_host_alloc");
  assert_status(gcap_host_alloc(f->ctx, 8, NULL), GCAP_ERROR_INVALID_VALUE);
  h = SENTINEL;
  assert_status(gcap_host_alloc(NULL, 8, &h), GCAP_ERROR_INVALID_HANDLE);
  assert_null(h);
  gcap_context *dead = test_context_create();
  gcap_context_destroy(dead);
  h = SENTINEL;
  assert_status(gcap_host_alloc(dead, 8, &h), GCAP_ERROR_INVALID_HANDLE);
  assert_null(h);
  assert_status(gcap_host_free(dead, NULL), GCAP_ERROR_INVALID_HANDLE);
  assert_status(gcap_host_free(NULL, NULL), GCAP_ERROR_INVALID_HANDLE);

  unsigned char *p = NULL;
  assert_ok(gcap_host_alloc(f->ctx, 64, (void **)&p));
  assert_status(gcap_host_free(f->ctx, p + 8), GCAP_ERROR_INVALID_VALUE);
  test_assert_message_contains("gcap_host_free");
  unsigned char stack_buf[8];
  assert_status(gcap_host_free(f->ctx, stack_buf), GCAP_ERROR_INVALID_VALUE);
  void *d = test_dev_alloc(f->ctx, 64);
  assert_status(gcap_host_free(f->ctx, d), GCAP_ERROR_INVALID_VALUE);
  assert_ok(gcap_mem_free(f->ctx, d));
  /* Still alive after the failed frees. */
  memset(p, 1, 64);
  assert_ok(gcap_host_free(f->ctx, p));
  assert_status(gcap_host_free(f->ctx, p), GCAP_ERROR_INVALID_VALUE);
  test_assert_message_contains("gcap_host_free");
}

/* --------------------------------------------------------- synchronous copies */

static void check_roundtrip(gcap_context *ctx, gcap_memcpy_kind to_dev, gcap_memcpy_kind d2d, gcap_memcpy_kind to_host,
                            unsigned seed) {
  enum { N = 1000 };
  unsigned char in[N], out[N];
  fill_pattern(in, N, seed);
  memset(out, 0, N);
  void *a = test_dev_alloc(ctx, N);
  void *b = test_dev_alloc(ctx, N);
  dev_set(ctx, b, 0, N);
  assert_ok(gcap_memcpy(ctx, a, in, N, to_dev));
  assert_ok(gcap_memcpy(ctx, b, a, N, d2d));
  assert_string_equal(gcap_last_error_message(), "");
  assert_ok(gcap_memcpy(ctx, out, b, N, to_host));
  assert_memory_equal(in, out, N);
  /* The source of the D2D copy is intact. */
  memset(out, 0, N);
  assert_ok(gcap_memcpy(ctx, out, a, N, to_host));
  assert_memory_equal(in, out, N);
  assert_ok(gcap_mem_free(ctx, a));
  assert_ok(gcap_mem_free(ctx, b));
}

static void test_memcpy_explicit_kinds(void **state) {
  struct test_fixture *f = *state;
  check_roundtrip(f->ctx, GCAP_MEMCPY_HOST_TO_DEVICE, GCAP_MEMCPY_DEVICE_TO_DEVICE, GCAP_MEMCPY_DEVICE_TO_HOST, 3);
}

static void test_memcpy_default_kinds(void **state) {
  struct test_fixture *f = *state;
  check_roundtrip(f->ctx, GCAP_MEMCPY_DEFAULT, GCAP_MEMCPY_DEFAULT, GCAP_MEMCPY_DEFAULT, 4);
  /* Mixed: explicit one way, inferred the other. */
  check_roundtrip(f->ctx, GCAP_MEMCPY_HOST_TO_DEVICE, GCAP_MEMCPY_DEFAULT, GCAP_MEMCPY_DEFAULT, 5);
  check_roundtrip(f->ctx, GCAP_MEMCPY_DEFAULT, GCAP_MEMCPY_DEVICE_TO_DEVICE, GCAP_MEMCPY_DEVICE_TO_HOST, 6);
}

static void test_memcpy_host_to_host(void **state) {
  struct test_fixture *f = *state;
  unsigned char a[77], b[77];
  fill_pattern(a, sizeof a, 8);
  memset(b, 0, sizeof b);
  assert_ok(gcap_memcpy(f->ctx, b, a, sizeof a, GCAP_MEMCPY_HOST_TO_HOST));
  assert_memory_equal(a, b, sizeof a);
  fill_pattern(a, sizeof a, 9);
  assert_ok(gcap_memcpy(f->ctx, b, a, sizeof a, GCAP_MEMCPY_DEFAULT));
  assert_memory_equal(a, b, sizeof a);
  /* malloc'd memory and pinned memory are host too. */
  unsigned char *m = malloc(77);
  void *p = NULL;
  assert_non_null(m);
  assert_ok(gcap_host_alloc(f->ctx, 77, &p));
  memset(p, 0, 77);
  assert_ok(gcap_memcpy(f->ctx, m, a, 77, GCAP_MEMCPY_HOST_TO_HOST));
  assert_ok(gcap_memcpy(f->ctx, p, m, 77, GCAP_MEMCPY_DEFAULT));
  assert_memory_equal(p, a, 77);
  free(m);
  assert_ok(gcap_host_free(f->ctx, p));
}

static void test_memcpy_kind_mismatch(void **state) {
  struct test_fixture *f = *state;
  enum { N = 64 };
  unsigned char h[N], h2[N];
  fill_pattern(h, N, 10);
  memset(h2, 0x11, N);
  unsigned char *d = test_dev_alloc(f->ctx, N);
  unsigned char *d2 = test_dev_alloc(f->ctx, N);
  dev_set(f->ctx, d, 0x22, N);
  dev_set(f->ctx, d2, 0x33, N);

  /* H2D: dst must be device, src host. */
  assert_status(gcap_memcpy(f->ctx, d, d2, N, GCAP_MEMCPY_HOST_TO_DEVICE), GCAP_ERROR_INVALID_VALUE);
  test_assert_message_contains("gcap_memcpy");
  assert_status(gcap_memcpy(f->ctx, h2, d, N, GCAP_MEMCPY_HOST_TO_DEVICE), GCAP_ERROR_INVALID_VALUE);
  /* D2H: src device, dst host. */
  assert_status(gcap_memcpy(f->ctx, d, d2, N, GCAP_MEMCPY_DEVICE_TO_HOST), GCAP_ERROR_INVALID_VALUE);
  assert_status(gcap_memcpy(f->ctx, d, h, N, GCAP_MEMCPY_DEVICE_TO_HOST), GCAP_ERROR_INVALID_VALUE);
  /* D2D: both device. */
  assert_status(gcap_memcpy(f->ctx, h2, d, N, GCAP_MEMCPY_DEVICE_TO_DEVICE), GCAP_ERROR_INVALID_VALUE);
  /* Plain host memory where device memory is needed: only the simulator knows every device pointer (eager.md#memory).
   */
  if (test_on_sim()) {
    assert_status(gcap_memcpy(f->ctx, h2, h, N, GCAP_MEMCPY_HOST_TO_DEVICE), GCAP_ERROR_INVALID_VALUE);
    assert_status(gcap_memcpy(f->ctx, h2, h, N, GCAP_MEMCPY_DEVICE_TO_HOST), GCAP_ERROR_INVALID_VALUE);
    assert_status(gcap_memcpy(f->ctx, d, h, N, GCAP_MEMCPY_DEVICE_TO_DEVICE), GCAP_ERROR_INVALID_VALUE);
    assert_status(gcap_memcpy(f->ctx, h2, h, N, GCAP_MEMCPY_DEVICE_TO_DEVICE), GCAP_ERROR_INVALID_VALUE);
  }
  /* H2H: both host. */
  assert_status(gcap_memcpy(f->ctx, d, h, N, GCAP_MEMCPY_HOST_TO_HOST), GCAP_ERROR_INVALID_VALUE);
  assert_status(gcap_memcpy(f->ctx, h2, d, N, GCAP_MEMCPY_HOST_TO_HOST), GCAP_ERROR_INVALID_VALUE);
  assert_status(gcap_memcpy(f->ctx, d, d2, N, GCAP_MEMCPY_HOST_TO_HOST), GCAP_ERROR_INVALID_VALUE);
  /* Pinned host memory is not device memory. */
  void *p = NULL;
  assert_ok(gcap_host_alloc(f->ctx, N, &p));
  memset(p, 0x44, N);
  assert_status(gcap_memcpy(f->ctx, p, h, N, GCAP_MEMCPY_HOST_TO_DEVICE), GCAP_ERROR_INVALID_VALUE);
  assert_status(gcap_memcpy(f->ctx, h2, p, N, GCAP_MEMCPY_DEVICE_TO_HOST), GCAP_ERROR_INVALID_VALUE);

  /* Nothing was written by any of them. */
  assert_all_bytes(h2, N, 0x11);
  assert_all_bytes(p, N, 0x44);
  unsigned char *r = dev_read(f->ctx, d, N);
  assert_all_bytes(r, N, 0x22);
  free(r);
  r = dev_read(f->ctx, d2, N);
  assert_all_bytes(r, N, 0x33);
  free(r);
  assert_ok(gcap_host_free(f->ctx, p));
}

/* Freed and foreign pointers are in no allocation of this context: the simulator refuses them (eager.md#memory). */
static void test_memcpy_freed_and_foreign_pointers(void **state) {
  struct test_fixture *f = *state;
  test_require_sim();
  unsigned char h[32];
  memset(h, 0x55, sizeof h);
  void *d = test_dev_alloc(f->ctx, 32);
  assert_ok(gcap_mem_free(f->ctx, d));
  /* A freed allocation is no longer device memory. */
  assert_status(gcap_memcpy(f->ctx, d, h, 32, GCAP_MEMCPY_HOST_TO_DEVICE), GCAP_ERROR_INVALID_VALUE);
  assert_status(gcap_memcpy(f->ctx, h, d, 32, GCAP_MEMCPY_DEVICE_TO_HOST), GCAP_ERROR_INVALID_VALUE);
  assert_all_bytes(h, sizeof h, 0x55);

  /* Another context's allocation is not device memory of this one. */
  gcap_context *other = test_context_create();
  void *od = test_dev_alloc(other, 32);
  dev_set(other, od, 0x66, 32);
  assert_status(gcap_memcpy(f->ctx, od, h, 32, GCAP_MEMCPY_HOST_TO_DEVICE), GCAP_ERROR_INVALID_VALUE);
  assert_status(gcap_memcpy(f->ctx, h, od, 32, GCAP_MEMCPY_DEVICE_TO_HOST), GCAP_ERROR_INVALID_VALUE);
  void *md = test_dev_alloc(f->ctx, 32);
  assert_status(gcap_memcpy(f->ctx, md, od, 32, GCAP_MEMCPY_DEVICE_TO_DEVICE), GCAP_ERROR_INVALID_VALUE);
  unsigned char *r = dev_read(other, od, 32);
  assert_all_bytes(r, 32, 0x66);
  free(r);
  assert_ok(gcap_mem_free(f->ctx, md));
  gcap_context_destroy(other);
}

static void test_memcpy_out_of_range(void **state) {
  struct test_fixture *f = *state;
  enum { N = 64 };
  unsigned char h[2 * N], h2[2 * N];
  fill_pattern(h, sizeof h, 12);
  memset(h2, 0x77, sizeof h2);
  unsigned char *d = test_dev_alloc(f->ctx, N);
  unsigned char *d2 = test_dev_alloc(f->ctx, N);
  dev_set(f->ctx, d, 0x10, N);
  dev_set(f->ctx, d2, 0x20, N);

  gcap_memcpy_kind kinds[] = {GCAP_MEMCPY_DEFAULT, 0};
  for (int k = 0; k < 2; k++) {
    /* dst side past the end. */
    kinds[1] = GCAP_MEMCPY_HOST_TO_DEVICE;
    assert_status(gcap_memcpy(f->ctx, d, h, N + 1, kinds[k]), GCAP_ERROR_INVALID_VALUE);
    test_assert_message_contains("gcap_memcpy");
    assert_status(gcap_memcpy(f->ctx, d + 32, h, 33, kinds[k]), GCAP_ERROR_INVALID_VALUE);
    assert_status(gcap_memcpy(f->ctx, d + N - 1, h, 2, kinds[k]), GCAP_ERROR_INVALID_VALUE);
    /* src side past the end. */
    kinds[1] = GCAP_MEMCPY_DEVICE_TO_HOST;
    assert_status(gcap_memcpy(f->ctx, h2, d, N + 1, kinds[k]), GCAP_ERROR_INVALID_VALUE);
    assert_status(gcap_memcpy(f->ctx, h2, d + 60, 8, kinds[k]), GCAP_ERROR_INVALID_VALUE);
    /* D2D, either side. */
    kinds[1] = GCAP_MEMCPY_DEVICE_TO_DEVICE;
    assert_status(gcap_memcpy(f->ctx, d2 + 1, d, N, kinds[k]), GCAP_ERROR_INVALID_VALUE);
    assert_status(gcap_memcpy(f->ctx, d2, d + 1, N, kinds[k]), GCAP_ERROR_INVALID_VALUE);
    assert_status(gcap_memcpy(f->ctx, d2, d, N + 1, kinds[k]), GCAP_ERROR_INVALID_VALUE);
  }

  /* Nothing changed anywhere. */
  assert_all_bytes(h2, sizeof h2, 0x77);
  unsigned char *r = dev_read(f->ctx, d, N);
  assert_all_bytes(r, N, 0x10);
  free(r);
  r = dev_read(f->ctx, d2, N);
  assert_all_bytes(r, N, 0x20);
  free(r);

  /* Exactly to the end is fine. */
  assert_ok(gcap_memcpy(f->ctx, d + 60, h, 4, GCAP_MEMCPY_HOST_TO_DEVICE));
  assert_ok(gcap_memcpy(f->ctx, h2, d + 60, 4, GCAP_MEMCPY_DEVICE_TO_HOST));
  assert_memory_equal(h2, h, 4);
  assert_ok(gcap_mem_free(f->ctx, d));
  assert_ok(gcap_mem_free(f->ctx, d2));
}

static void test_memcpy_offsets(void **state) {
  struct test_fixture *f = *state;
  enum { N = 256 };
  unsigned char *d = test_dev_alloc(f->ctx, N);
  dev_set(f->ctx, d, 0, N);
  unsigned char in[32];
  fill_pattern(in, sizeof in, 13);
  assert_ok(gcap_memcpy(f->ctx, d + 16, in, 32, GCAP_MEMCPY_HOST_TO_DEVICE));
  /* Inside one allocation, D2D from one part to another. */
  assert_ok(gcap_memcpy(f->ctx, d + 200, d + 16, 32, GCAP_MEMCPY_DEVICE_TO_DEVICE));
  unsigned char *r = dev_read(f->ctx, d, N);
  assert_all_bytes(r, 16, 0);
  assert_memory_equal(r + 16, in, 32);
  assert_all_bytes(r + 48, 200 - 48, 0);
  assert_memory_equal(r + 200, in, 32);
  assert_all_bytes(r + 232, N - 232, 0);
  free(r);
  /* Reading a piece from the middle. */
  unsigned char piece[8];
  assert_ok(gcap_memcpy(f->ctx, piece, d + 20, sizeof piece, GCAP_MEMCPY_DEFAULT));
  assert_memory_equal(piece, in + 4, sizeof piece);
  assert_ok(gcap_mem_free(f->ctx, d));
}

static void test_memcpy_bad_arguments(void **state) {
  struct test_fixture *f = *state;
  unsigned char h[16] = {0}, h2[16];
  memset(h2, 0x3C, sizeof h2);
  void *d = test_dev_alloc(f->ctx, 16);
  const int bad_kinds[] = {5, 9, -1};
  for (size_t i = 0; i < sizeof bad_kinds / sizeof bad_kinds[0]; i++) {
    assert_status(gcap_memcpy(f->ctx, h2, h, 16, (gcap_memcpy_kind)bad_kinds[i]), GCAP_ERROR_INVALID_VALUE);
    test_assert_message_contains("gcap_memcpy");
    assert_status(gcap_memcpy(f->ctx, d, h, 16, (gcap_memcpy_kind)bad_kinds[i]), GCAP_ERROR_INVALID_VALUE);
  }
  assert_all_bytes(h2, sizeof h2, 0x3C);
  assert_status(gcap_memcpy(f->ctx, NULL, h, 16, GCAP_MEMCPY_DEFAULT), GCAP_ERROR_INVALID_VALUE);
  assert_status(gcap_memcpy(f->ctx, h2, NULL, 16, GCAP_MEMCPY_DEFAULT), GCAP_ERROR_INVALID_VALUE);
  assert_status(gcap_memcpy(NULL, h2, h, 16, GCAP_MEMCPY_DEFAULT), GCAP_ERROR_INVALID_HANDLE);
  test_assert_message_contains("gcap_memcpy");
  gcap_context *dead = test_context_create();
  gcap_context_destroy(dead);
  assert_status(gcap_memcpy(dead, h2, h, 16, GCAP_MEMCPY_HOST_TO_HOST), GCAP_ERROR_INVALID_HANDLE);
  assert_all_bytes(h2, sizeof h2, 0x3C);

  /* Zero bytes: success, nothing happens. */
  assert_ok(gcap_memcpy(f->ctx, d, h, 0, GCAP_MEMCPY_HOST_TO_DEVICE));
  assert_string_equal(gcap_last_error_message(), "");
  assert_ok(gcap_memcpy(f->ctx, h2, d, 0, GCAP_MEMCPY_DEVICE_TO_HOST));
  assert_ok(gcap_memcpy(f->ctx, h2, h, 0, GCAP_MEMCPY_DEFAULT));
  assert_all_bytes(h2, sizeof h2, 0x3C);
  assert_ok(gcap_mem_free(f->ctx, d));
}

static void test_pinned_host_side(void **state) {
  struct test_fixture *f = *state;
  enum { N = 4096 };
  unsigned char *src = NULL, *dst = NULL;
  assert_ok(gcap_host_alloc(f->ctx, N, (void **)&src));
  assert_ok(gcap_host_alloc(f->ctx, N, (void **)&dst));
  fill_pattern(src, N, 14);
  void *d = test_dev_alloc(f->ctx, N);

  memset(dst, 0, N);
  assert_ok(gcap_memcpy(f->ctx, d, src, N, GCAP_MEMCPY_HOST_TO_DEVICE));
  assert_ok(gcap_memcpy(f->ctx, dst, d, N, GCAP_MEMCPY_DEVICE_TO_HOST));
  assert_memory_equal(src, dst, N);

  memset(dst, 0, N);
  fill_pattern(src, N, 15);
  assert_ok(gcap_memcpy(f->ctx, d, src, N, GCAP_MEMCPY_DEFAULT));
  assert_ok(gcap_memcpy(f->ctx, dst, d, N, GCAP_MEMCPY_DEFAULT));
  assert_memory_equal(src, dst, N);

  memset(dst, 0, N);
  fill_pattern(src, N, 16);
  assert_ok(gcap_memcpy_async(f->s, d, src, N, GCAP_MEMCPY_HOST_TO_DEVICE));
  assert_ok(gcap_memcpy_async(f->s, dst, d, N, GCAP_MEMCPY_DEVICE_TO_HOST));
  assert_ok(gcap_stream_synchronize(f->s));
  assert_memory_equal(src, dst, N);

  memset(dst, 0, N);
  fill_pattern(src, N, 17);
  assert_ok(gcap_memcpy_async(f->s, d, src, N, GCAP_MEMCPY_DEFAULT));
  assert_ok(gcap_memcpy_async(f->s, dst, d, N, GCAP_MEMCPY_DEFAULT));
  assert_ok(gcap_stream_synchronize(f->s));
  assert_memory_equal(src, dst, N);

  assert_ok(gcap_mem_free(f->ctx, d));
  assert_ok(gcap_host_free(f->ctx, src));
  assert_ok(gcap_host_free(f->ctx, dst));
}

static void test_large_copy(void **state) {
  struct test_fixture *f = *state;
  const size_t n = (size_t)8 << 20;
  unsigned char *in = malloc(n), *out = malloc(n);
  assert_non_null(in);
  assert_non_null(out);
  for (size_t i = 0; i < n; i++) in[i] = (unsigned char)((i ^ (i >> 8) ^ (i >> 16)) & 0xFF);
  memset(out, 0, n);
  void *a = test_dev_alloc(f->ctx, n);
  void *b = test_dev_alloc(f->ctx, n);
  assert_ok(gcap_memcpy(f->ctx, a, in, n, GCAP_MEMCPY_HOST_TO_DEVICE));
  assert_ok(gcap_memcpy(f->ctx, b, a, n, GCAP_MEMCPY_DEVICE_TO_DEVICE));
  assert_ok(gcap_memcpy(f->ctx, out, b, n, GCAP_MEMCPY_DEVICE_TO_HOST));
  assert_true(memcmp(in, out, n) == 0);
  memset(out, 0, n);
  assert_ok(gcap_memcpy_async(f->s, b, a, n, GCAP_MEMCPY_DEFAULT));
  assert_ok(gcap_memcpy_async(f->s, out, b, n, GCAP_MEMCPY_DEFAULT));
  assert_ok(gcap_stream_synchronize(f->s));
  assert_true(memcmp(in, out, n) == 0);
  assert_ok(gcap_mem_free(f->ctx, a));
  assert_ok(gcap_mem_free(f->ctx, b));
  free(in);
  free(out);
}

/* -------------------------------------------------------- stream-ordered copies */

static void test_memcpy_async_kinds(void **state) {
  struct test_fixture *f = *state;
  enum { N = 500 };
  const gcap_memcpy_kind h2d[] = {GCAP_MEMCPY_HOST_TO_DEVICE, GCAP_MEMCPY_DEFAULT};
  const gcap_memcpy_kind d2d[] = {GCAP_MEMCPY_DEVICE_TO_DEVICE, GCAP_MEMCPY_DEFAULT};
  const gcap_memcpy_kind d2h[] = {GCAP_MEMCPY_DEVICE_TO_HOST, GCAP_MEMCPY_DEFAULT};
  const gcap_memcpy_kind h2h[] = {GCAP_MEMCPY_HOST_TO_HOST, GCAP_MEMCPY_DEFAULT};
  void *a = test_dev_alloc(f->ctx, N);
  void *b = test_dev_alloc(f->ctx, N);
  for (int k = 0; k < 2; k++) {
    unsigned char in[N], out[N], out2[N];
    fill_pattern(in, N, 20 + (unsigned)k);
    memset(out, 0, N);
    memset(out2, 0, N);
    assert_ok(gcap_memcpy_async(f->s, a, in, N, h2d[k]));
    assert_string_equal(gcap_last_error_message(), "");
    assert_ok(gcap_memcpy_async(f->s, b, a, N, d2d[k]));
    assert_ok(gcap_memcpy_async(f->s, out, b, N, d2h[k]));
    assert_ok(gcap_stream_synchronize(f->s));
    assert_memory_equal(in, out, N);
    assert_ok(gcap_memcpy_async(f->s, out2, out, N, h2h[k]));
    assert_ok(gcap_stream_synchronize(f->s));
    assert_memory_equal(in, out2, N);
  }
  assert_ok(gcap_mem_free(f->ctx, a));
  assert_ok(gcap_mem_free(f->ctx, b));
}

static void test_memcpy_async_errors(void **state) {
  struct test_fixture *f = *state;
  enum { N = 64 };
  unsigned char h[2 * N], h2[2 * N];
  fill_pattern(h, sizeof h, 30);
  memset(h2, 0x61, sizeof h2);
  unsigned char *d = test_dev_alloc(f->ctx, N);
  dev_set(f->ctx, d, 0x62, N);

  assert_status(gcap_memcpy_async(NULL, d, h, N, GCAP_MEMCPY_HOST_TO_DEVICE), GCAP_ERROR_INVALID_HANDLE);
  test_assert_message_contains("gcap_memcpy_async");
  gcap_stream *dead = NULL;
  assert_ok(gcap_stream_create(f->ctx, &dead));
  assert_ok(gcap_stream_destroy(dead));
  assert_status(gcap_memcpy_async(dead, d, h, N, GCAP_MEMCPY_HOST_TO_DEVICE), GCAP_ERROR_INVALID_HANDLE);
  assert_status(gcap_memcpy_async(f->s, NULL, h, N, GCAP_MEMCPY_DEFAULT), GCAP_ERROR_INVALID_VALUE);
  assert_status(gcap_memcpy_async(f->s, h2, NULL, N, GCAP_MEMCPY_DEFAULT), GCAP_ERROR_INVALID_VALUE);
  assert_status(gcap_memcpy_async(f->s, d, h, N, (gcap_memcpy_kind)9), GCAP_ERROR_INVALID_VALUE);
  test_assert_message_contains("gcap_memcpy_async");
  /* Ranges past the end, both sides. */
  assert_status(gcap_memcpy_async(f->s, d, h, N + 1, GCAP_MEMCPY_HOST_TO_DEVICE), GCAP_ERROR_INVALID_VALUE);
  assert_status(gcap_memcpy_async(f->s, d + 8, h, N, GCAP_MEMCPY_DEFAULT), GCAP_ERROR_INVALID_VALUE);
  assert_status(gcap_memcpy_async(f->s, h2, d + 1, N, GCAP_MEMCPY_DEVICE_TO_HOST), GCAP_ERROR_INVALID_VALUE);
  if (test_on_sim()) {
    assert_status(gcap_memcpy_async(f->s, h2, h, N, GCAP_MEMCPY_HOST_TO_DEVICE), GCAP_ERROR_INVALID_VALUE);
    assert_status(gcap_memcpy_async(f->s, d, h, N, GCAP_MEMCPY_DEVICE_TO_HOST), GCAP_ERROR_INVALID_VALUE);
    assert_status(gcap_memcpy_async(f->s, d, h, N, GCAP_MEMCPY_HOST_TO_HOST), GCAP_ERROR_INVALID_VALUE);
    assert_status(gcap_memcpy_async(f->s, h2, d, N, GCAP_MEMCPY_DEVICE_TO_DEVICE), GCAP_ERROR_INVALID_VALUE);
  }
  assert_ok(gcap_stream_synchronize(f->s));
  assert_all_bytes(h2, sizeof h2, 0x61);
  unsigned char *r = dev_read(f->ctx, d, N);
  assert_all_bytes(r, N, 0x62);
  free(r);

  /* Zero bytes: success, nothing happens. */
  assert_ok(gcap_memcpy_async(f->s, d, h, 0, GCAP_MEMCPY_HOST_TO_DEVICE));
  assert_ok(gcap_memcpy_async(f->s, h2, d, 0, GCAP_MEMCPY_DEFAULT));
  assert_ok(gcap_stream_synchronize(f->s));
  assert_all_bytes(h2, sizeof h2, 0x61);
  assert_ok(gcap_mem_free(f->ctx, d));
}

/* ------------------------------------------------------------------ fills */

static void test_memset_async(void **state) {
  struct test_fixture *f = *state;
  enum { N = 100 };
  unsigned char *d = test_dev_alloc(f->ctx, N);
  dev_set(f->ctx, d, 0x01, N);
  /* Only the low byte of value counts. */
  assert_ok(gcap_memset_async(f->s, d + 10, 0x1AB, 50));
  assert_string_equal(gcap_last_error_message(), "");
  assert_ok(gcap_stream_synchronize(f->s));
  unsigned char *r = dev_read(f->ctx, d, N);
  assert_all_bytes(r, 10, 0x01);
  assert_all_bytes(r + 10, 50, 0xAB);
  assert_all_bytes(r + 60, N - 60, 0x01);
  free(r);
  assert_ok(gcap_memset_async(f->s, d, -1, N));
  assert_ok(gcap_stream_synchronize(f->s));
  r = dev_read(f->ctx, d, N);
  assert_all_bytes(r, N, 0xFF);
  free(r);
  assert_ok(gcap_memset_async(f->s, d, 0x100, N));
  assert_ok(gcap_stream_synchronize(f->s));
  r = dev_read(f->ctx, d, N);
  assert_all_bytes(r, N, 0x00);
  free(r);
  assert_ok(gcap_mem_free(f->ctx, d));
}

static void test_memset_d16_d32(void **state) {
  struct test_fixture *f = *state;
  enum { N = 128 };
  unsigned char *d = test_dev_alloc(f->ctx, N);
  dev_set(f->ctx, d, 0x00, N);
  assert_ok(gcap_memset_d16_async(f->s, d + 2, 0xBEEF, 10));
  assert_ok(gcap_stream_synchronize(f->s));
  unsigned char *r = dev_read(f->ctx, d, N);
  assert_all_bytes(r, 2, 0);
  for (size_t i = 0; i < 10; i++) {
    uint16_t v;
    memcpy(&v, r + 2 + 2 * i, sizeof v);
    assert_int_equal(v, 0xBEEF);
  }
  assert_all_bytes(r + 22, N - 22, 0);
  free(r);

  dev_set(f->ctx, d, 0x00, N);
  assert_ok(gcap_memset_d32_async(f->s, d + 4, 0xDEADBEEFu, 7));
  assert_ok(gcap_stream_synchronize(f->s));
  r = dev_read(f->ctx, d, N);
  assert_all_bytes(r, 4, 0);
  for (size_t i = 0; i < 7; i++) {
    uint32_t v;
    memcpy(&v, r + 4 + 4 * i, sizeof v);
    assert_int_equal(v, 0xDEADBEEFu);
  }
  assert_all_bytes(r + 32, N - 32, 0);
  free(r);

  /* To the very end of the allocation. */
  assert_ok(gcap_memset_d32_async(f->s, d, 0x01020304u, N / 4));
  assert_ok(gcap_memset_d16_async(f->s, d + N - 2, 0xA1A2, 1));
  assert_ok(gcap_stream_synchronize(f->s));
  r = dev_read(f->ctx, d, N);
  uint32_t w;
  memcpy(&w, r + N - 8, sizeof w);
  assert_int_equal(w, 0x01020304u);
  uint16_t hw;
  memcpy(&hw, r + N - 2, sizeof hw);
  assert_int_equal(hw, 0xA1A2);
  free(r);
  assert_ok(gcap_mem_free(f->ctx, d));
}

static void test_fill_errors(void **state) {
  struct test_fixture *f = *state;
  enum { N = 64 };
  unsigned char *d = test_dev_alloc(f->ctx, N);
  dev_set(f->ctx, d, 0x5E, N);

  /* Misaligned. */
  assert_status(gcap_memset_d16_async(f->s, d + 1, 1, 4), GCAP_ERROR_INVALID_VALUE);
  test_assert_message_contains("gcap_memset_d16_async");
  assert_status(gcap_memset_d32_async(f->s, d + 2, 1, 4), GCAP_ERROR_INVALID_VALUE);
  test_assert_message_contains("gcap_memset_d32_async");
  assert_status(gcap_memset_d32_async(f->s, d + 1, 1, 4), GCAP_ERROR_INVALID_VALUE);
  /* Out of range. */
  assert_status(gcap_memset_async(f->s, d, 0, N + 1), GCAP_ERROR_INVALID_VALUE);
  test_assert_message_contains("gcap_memset_async");
  assert_status(gcap_memset_async(f->s, d + 60, 0, 8), GCAP_ERROR_INVALID_VALUE);
  assert_status(gcap_memset_d16_async(f->s, d, 0, N / 2 + 1), GCAP_ERROR_INVALID_VALUE);
  assert_status(gcap_memset_d16_async(f->s, d + N - 2, 0, 2), GCAP_ERROR_INVALID_VALUE);
  assert_status(gcap_memset_d32_async(f->s, d, 0, N / 4 + 1), GCAP_ERROR_INVALID_VALUE);
  assert_status(gcap_memset_d32_async(f->s, d + N - 4, 0, 2), GCAP_ERROR_INVALID_VALUE);
  /* NULL destination. */
  assert_status(gcap_memset_async(f->s, NULL, 0, 4), GCAP_ERROR_INVALID_VALUE);
  assert_status(gcap_memset_d16_async(f->s, NULL, 0, 4), GCAP_ERROR_INVALID_VALUE);
  assert_status(gcap_memset_d32_async(f->s, NULL, 0, 4), GCAP_ERROR_INVALID_VALUE);
  /* NULL and destroyed streams. */
  assert_status(gcap_memset_async(NULL, d, 0, 4), GCAP_ERROR_INVALID_HANDLE);
  test_assert_message_contains("gcap_memset_async");
  assert_status(gcap_memset_d16_async(NULL, d, 0, 4), GCAP_ERROR_INVALID_HANDLE);
  assert_status(gcap_memset_d32_async(NULL, d, 0, 4), GCAP_ERROR_INVALID_HANDLE);
  gcap_stream *dead = NULL;
  assert_ok(gcap_stream_create(f->ctx, &dead));
  assert_ok(gcap_stream_destroy(dead));
  assert_status(gcap_memset_async(dead, d, 0, 4), GCAP_ERROR_INVALID_HANDLE);
  assert_status(gcap_memset_d16_async(dead, d, 0, 4), GCAP_ERROR_INVALID_HANDLE);
  assert_status(gcap_memset_d32_async(dead, d, 0, 4), GCAP_ERROR_INVALID_HANDLE);

  assert_ok(gcap_stream_synchronize(f->s));
  unsigned char *r = dev_read(f->ctx, d, N);
  assert_all_bytes(r, N, 0x5E);
  free(r);

  /* Zero counts: success, nothing set. */
  assert_ok(gcap_memset_async(f->s, d, 0, 0));
  assert_string_equal(gcap_last_error_message(), "");
  assert_ok(gcap_memset_d16_async(f->s, d, 0, 0));
  assert_ok(gcap_memset_d32_async(f->s, d, 0, 0));
  assert_ok(gcap_stream_synchronize(f->s));
  r = dev_read(f->ctx, d, N);
  assert_all_bytes(r, N, 0x5E);
  free(r);
  assert_ok(gcap_mem_free(f->ctx, d));
}

static void test_fill_needs_device_memory(void **state) {
  struct test_fixture *f = *state;
  /* Page-locked host memory is known to every backend. */
  void *p = NULL;
  assert_ok(gcap_host_alloc(f->ctx, 64, &p));
  memset(p, 0x13, 64);
  assert_status(gcap_memset_async(f->s, p, 0, 64), GCAP_ERROR_INVALID_VALUE);
  assert_status(gcap_memset_d32_async(f->s, p, 0, 16), GCAP_ERROR_INVALID_VALUE);
  /* Stack memory, another context's device memory and freed memory: only the simulator knows (eager.md#memory). */
  uint32_t stack_buf[16];
  memset(stack_buf, 0x12, sizeof stack_buf);
  gcap_context *other = test_context_create();
  void *od = test_dev_alloc(other, 64);
  dev_set(other, od, 0x14, 64);
  if (test_on_sim()) {
    assert_status(gcap_memset_async(f->s, stack_buf, 0, sizeof stack_buf), GCAP_ERROR_INVALID_VALUE);
    assert_status(gcap_memset_d16_async(f->s, stack_buf, 0, 4), GCAP_ERROR_INVALID_VALUE);
    assert_status(gcap_memset_d32_async(f->s, stack_buf, 0, 4), GCAP_ERROR_INVALID_VALUE);
    assert_status(gcap_memset_async(f->s, od, 0, 64), GCAP_ERROR_INVALID_VALUE);
    void *gone = test_dev_alloc(f->ctx, 64);
    assert_ok(gcap_mem_free(f->ctx, gone));
    assert_status(gcap_memset_async(f->s, gone, 0, 64), GCAP_ERROR_INVALID_VALUE);
  }
  assert_ok(gcap_stream_synchronize(f->s));

  unsigned char expect[sizeof stack_buf];
  memset(expect, 0x12, sizeof expect);
  assert_memory_equal(stack_buf, expect, sizeof expect);
  assert_all_bytes(p, 64, 0x13);
  unsigned char *r = dev_read(other, od, 64);
  assert_all_bytes(r, 64, 0x14);
  free(r);
  assert_ok(gcap_host_free(f->ctx, p));
  gcap_context_destroy(other);
}

static void test_async_stream_of_other_context(void **state) {
  struct test_fixture *f = *state;
  test_require_sim(); /* memory of another context is in no allocation of this one (eager.md#memory) */
  /* The stream decides the context: memory of f->ctx is not device memory for it. */
  gcap_context *other = test_context_create();
  gcap_stream *os = NULL;
  assert_ok(gcap_stream_create(other, &os));
  void *d = test_dev_alloc(f->ctx, 32);
  dev_set(f->ctx, d, 0x71, 32);
  unsigned char h[32];
  memset(h, 0x72, sizeof h);
  assert_status(gcap_memcpy_async(os, d, h, 32, GCAP_MEMCPY_HOST_TO_DEVICE), GCAP_ERROR_INVALID_VALUE);
  assert_status(gcap_memset_async(os, d, 0, 32), GCAP_ERROR_INVALID_VALUE);
  assert_ok(gcap_stream_synchronize(os));
  unsigned char *r = dev_read(f->ctx, d, 32);
  assert_all_bytes(r, 32, 0x71);
  free(r);
  assert_ok(gcap_stream_destroy(os));
  assert_ok(gcap_mem_free(f->ctx, d));
  gcap_context_destroy(other);
}

int main(void) {
  test_require_backend();
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_mem_alloc_free, test_setup, test_teardown),
      cmocka_unit_test_setup_teardown(test_mem_alloc_errors, test_setup, test_teardown),
      cmocka_unit_test_setup_teardown(test_mem_free_errors, test_setup, test_teardown),
      cmocka_unit_test_setup_teardown(test_mem_free_foreign_context, test_setup, test_teardown),
      cmocka_unit_test_setup_teardown(test_host_alloc_free, test_setup, test_teardown),
      cmocka_unit_test_setup_teardown(test_host_alloc_errors, test_setup, test_teardown),
      cmocka_unit_test_setup_teardown(test_memcpy_explicit_kinds, test_setup, test_teardown),
      cmocka_unit_test_setup_teardown(test_memcpy_default_kinds, test_setup, test_teardown),
      cmocka_unit_test_setup_teardown(test_memcpy_host_to_host, test_setup, test_teardown),
      cmocka_unit_test_setup_teardown(test_memcpy_kind_mismatch, test_setup, test_teardown),
      cmocka_unit_test_setup_teardown(test_memcpy_freed_and_foreign_pointers, test_setup, test_teardown),
      cmocka_unit_test_setup_teardown(test_memcpy_out_of_range, test_setup, test_teardown),
      cmocka_unit_test_setup_teardown(test_memcpy_offsets, test_setup, test_teardown),
      cmocka_unit_test_setup_teardown(test_memcpy_bad_arguments, test_setup, test_teardown),
      cmocka_unit_test_setup_teardown(test_pinned_host_side, test_setup, test_teardown),
      cmocka_unit_test_setup_teardown(test_large_copy, test_setup, test_teardown),
      cmocka_unit_test_setup_teardown(test_memcpy_async_kinds, test_setup, test_teardown),
      cmocka_unit_test_setup_teardown(test_memcpy_async_errors, test_setup, test_teardown),
      cmocka_unit_test_setup_teardown(test_memset_async, test_setup, test_teardown),
      cmocka_unit_test_setup_teardown(test_memset_d16_d32, test_setup, test_teardown),
      cmocka_unit_test_setup_teardown(test_fill_errors, test_setup, test_teardown),
      cmocka_unit_test_setup_teardown(test_fill_needs_device_memory, test_setup, test_teardown),
      cmocka_unit_test_setup_teardown(test_async_stream_of_other_context, test_setup, test_teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
