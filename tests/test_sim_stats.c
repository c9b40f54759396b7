/* The simulator's counters (gcap_sim_get_stats) after eager work, and gcap_sim_options_init. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "common.h"

#include <stdlib.h>
#include <string.h>

/* struct test_fixture, test_setup() and test_teardown() come from common.h: a context and one stream. */

static gcap_sim_stats stats(gcap_context *ctx) {
  gcap_sim_stats st;
  memset(&st, 0xFF, sizeof st);
  assert_ok(gcap_sim_get_stats(ctx, &st));
  return st;
}

static void assert_stats(const gcap_sim_stats *st, uint64_t kernels_executed, uint64_t kernels_stubbed,
                         uint64_t bytes_copied, uint64_t bytes_set, uint64_t host_calls) {
  assert_int_equal(st->graph_launches, 0);
  assert_int_equal(st->nodes_executed, 0);
  assert_int_equal(st->kernels_executed, kernels_executed);
  assert_int_equal(st->kernels_stubbed, kernels_stubbed);
  assert_int_equal(st->bytes_copied, bytes_copied);
  assert_int_equal(st->bytes_set, bytes_set);
  assert_int_equal(st->host_calls, host_calls);
}

static void noop_fn(const gcap_sim_thread *t, void *const *args) {
  (void)t;
  (void)args;
}

static void host_count(void *user_data) { (*(int *)user_data)++; }

static void test_options_init_defaults(void **state) {
  (void)state;
  gcap_sim_options o;
  memset(&o, 0xA5, sizeof o);
  gcap_sim_options_init(&o);
  assert_int_equal(o.order, GCAP_SIM_ORDER_CAPTURE);
  assert_true(o.seed == 0);
  assert_false(o.check_races);
  assert_null(o.trace);
  assert_int_equal(o.exec, GCAP_SIM_EXEC_IMMEDIATE);
  assert_false(o.strict_memory);
  assert_int_equal(o.threads, 0);
  assert_int_equal(GCAP_SIM_ORDER_CAPTURE, 0);
  assert_int_equal(GCAP_SIM_ORDER_SHUFFLE, 1);
}

static void test_get_stats_errors(void **state) {
  struct test_fixture *f = *state;
  test_require_sim(); /* gcap_sim_get_stats errors (NOT_SUPPORTED elsewhere) */
  gcap_sim_stats st;
  memset(&st, 0x11, sizeof st);
  assert_status(gcap_sim_get_stats(NULL, &st), GCAP_ERROR_INVALID_HANDLE);
  test_assert_message_contains("gcap_sim_get_stats");
  assert_status(gcap_sim_get_stats(f->ctx, NULL), GCAP_ERROR_INVALID_VALUE);
  test_assert_message_contains("gcap_sim_get_stats");
  assert_status(gcap_sim_get_stats(NULL, NULL), GCAP_ERROR_INVALID_HANDLE);
  gcap_context *dead = test_context_create();
  gcap_context_destroy(dead);
  assert_status(gcap_sim_get_stats(dead, &st), GCAP_ERROR_INVALID_HANDLE);
  /* The output is not written on failure. */
  gcap_sim_stats untouched;
  memset(&untouched, 0x11, sizeof untouched);
  assert_memory_equal(&st, &untouched, sizeof st);
}

static void test_get_stats_not_on_cuda(void **state) {
  struct test_fixture *f = *state;
  if (test_on_sim()) skip();
  gcap_sim_stats st;
  assert_status(gcap_sim_get_stats(f->ctx, &st), GCAP_ERROR_NOT_SUPPORTED);
}

static void test_fresh_context_zero(void **state) {
  struct test_fixture *f = *state;
  test_require_sim(); /* the simulator's counters */
  gcap_sim_stats st = stats(f->ctx);
  assert_string_equal(gcap_last_error_message(), "");
  assert_stats(&st, 0, 0, 0, 0, 0);
  /* Allocations, streams, events, syncs count nothing. */
  void *d = NULL, *h = NULL;
  gcap_event *e = NULL;
  assert_ok(gcap_mem_alloc(f->ctx, 128, &d));
  assert_ok(gcap_host_alloc(f->ctx, 128, &h));
  assert_ok(gcap_event_create(f->ctx, &e));
  assert_ok(gcap_event_record(e, f->s));
  assert_ok(gcap_stream_wait_event(f->s, e));
  assert_ok(gcap_stream_synchronize(f->s));
  assert_ok(gcap_context_synchronize(f->ctx));
  st = stats(f->ctx);
  assert_stats(&st, 0, 0, 0, 0, 0);
  assert_ok(gcap_event_destroy(e));
  assert_ok(gcap_mem_free(f->ctx, d));
  assert_ok(gcap_host_free(f->ctx, h));
}

static void test_copy_and_fill_counters(void **state) {
  struct test_fixture *f = *state;
  test_require_sim(); /* the simulator's counters */
  enum { N = 256 };
  unsigned char h[N], h2[N];
  memset(h, 1, sizeof h);
  unsigned char *a = NULL, *b = NULL;
  assert_ok(gcap_mem_alloc(f->ctx, N, (void **)&a));
  assert_ok(gcap_mem_alloc(f->ctx, N, (void **)&b));

  /* Synchronous copies. */
  assert_ok(gcap_memcpy(f->ctx, a, h, 100, GCAP_MEMCPY_HOST_TO_DEVICE));
  assert_ok(gcap_memcpy(f->ctx, h2, a, 50, GCAP_MEMCPY_DEVICE_TO_HOST));
  assert_ok(gcap_memcpy(f->ctx, b, a, 25, GCAP_MEMCPY_DEFAULT));
  gcap_sim_stats st = stats(f->ctx);
  assert_stats(&st, 0, 0, 175, 0, 0);

  /* Stream-ordered copies add to the same counter. */
  assert_ok(gcap_memcpy_async(f->s, b + 10, h, 30, GCAP_MEMCPY_HOST_TO_DEVICE));
  assert_ok(gcap_memcpy_async(f->s, h2, b, 7, GCAP_MEMCPY_DEVICE_TO_HOST));
  assert_ok(gcap_memcpy_async(f->s, a, b, N, GCAP_MEMCPY_DEVICE_TO_DEVICE));
  assert_ok(gcap_stream_synchronize(f->s));
  st = stats(f->ctx);
  assert_stats(&st, 0, 0, 175 + 30 + 7 + N, 0, 0);

  /* Fills: bytes, d16 two bytes per element, d32 four. */
  assert_ok(gcap_memset_async(f->s, a, 0x1AB, 10));
  assert_ok(gcap_memset_d16_async(f->s, a, 0xFFFF, 5));
  assert_ok(gcap_memset_d32_async(f->s, b, 7, 3));
  assert_ok(gcap_stream_synchronize(f->s));
  st = stats(f->ctx);
  assert_stats(&st, 0, 0, 175 + 30 + 7 + N, 10 + 10 + 12, 0);

  /* Zero sizes and failed calls count nothing. */
  assert_ok(gcap_memcpy(f->ctx, a, h, 0, GCAP_MEMCPY_HOST_TO_DEVICE));
  assert_ok(gcap_memcpy_async(f->s, a, h, 0, GCAP_MEMCPY_HOST_TO_DEVICE));
  assert_ok(gcap_memset_async(f->s, a, 0, 0));
  assert_ok(gcap_memset_d16_async(f->s, a, 0, 0));
  assert_ok(gcap_memset_d32_async(f->s, a, 0, 0));
  assert_status(gcap_memcpy(f->ctx, a, h, N + 1, GCAP_MEMCPY_HOST_TO_DEVICE), GCAP_ERROR_INVALID_VALUE);
  assert_status(gcap_memcpy_async(f->s, h2, a + 1, N, GCAP_MEMCPY_DEVICE_TO_HOST), GCAP_ERROR_INVALID_VALUE);
  assert_status(gcap_memset_async(f->s, a, 0, N + 1), GCAP_ERROR_INVALID_VALUE);
  assert_status(gcap_memset_d16_async(f->s, a + 1, 0, 2), GCAP_ERROR_INVALID_VALUE);
  assert_status(gcap_memset_d32_async(f->s, a, 0, N / 4 + 1), GCAP_ERROR_INVALID_VALUE);
  assert_ok(gcap_stream_synchronize(f->s));
  st = stats(f->ctx);
  assert_stats(&st, 0, 0, 175 + 30 + 7 + N, 32, 0);

  assert_ok(gcap_mem_free(f->ctx, a));
  assert_ok(gcap_mem_free(f->ctx, b));
}

static void test_host_to_host_copies_count(void **state) {
  struct test_fixture *f = *state;
  test_require_sim(); /* the simulator's counters */
  unsigned char x[40] = {0}, y[40];
  assert_ok(gcap_memcpy(f->ctx, y, x, 40, GCAP_MEMCPY_HOST_TO_HOST));
  assert_ok(gcap_memcpy_async(f->s, y, x, 12, GCAP_MEMCPY_DEFAULT));
  assert_ok(gcap_stream_synchronize(f->s));
  gcap_sim_stats st = stats(f->ctx);
  assert_stats(&st, 0, 0, 52, 0, 0);
}

static void test_kernel_and_host_counters(void **state) {
  struct test_fixture *f = *state;
  test_require_sim(); /* the simulator's counters */
  static const size_t sizes[] = {sizeof(uint32_t)};
  const gcap_kernel_def defs[] = {
      {"run", noop_fn, 1, sizes, NULL},
      {"stub", NULL, 1, sizes, NULL},
  };
  gcap_module_desc md = {NULL, 0, defs, 2};
  gcap_module *m = NULL;
  assert_ok(test_module_load(f->ctx, &md, &m));
  gcap_kernel *run = NULL, *stub = NULL;
  assert_ok(gcap_module_get_kernel(m, "run", &run));
  assert_ok(gcap_module_get_kernel(m, "stub", &stub));
  uint32_t v = 5;
  void *args[] = {&v};

  /* One per launch, not per thread. */
  assert_ok(gcap_launch_kernel(f->s, run, GCAP_DIM3(4, 2, 1), GCAP_DIM3(32, 1, 2), 0, args));
  assert_ok(gcap_launch_kernel(f->s, run, GCAP_DIM3(1, 1, 1), GCAP_DIM3(1, 1, 1), 0, args));
  assert_ok(gcap_launch_kernel(f->s, stub, GCAP_DIM3(8, 1, 1), GCAP_DIM3(64, 1, 1), 0, args));
  assert_ok(gcap_stream_synchronize(f->s));
  gcap_sim_stats st = stats(f->ctx);
  assert_stats(&st, 2, 1, 0, 0, 0);

  int calls = 0;
  for (int i = 0; i < 3; i++) assert_ok(gcap_launch_host_func(f->s, host_count, &calls));
  assert_ok(gcap_stream_synchronize(f->s));
  assert_int_equal(calls, 3);
  st = stats(f->ctx);
  assert_stats(&st, 2, 1, 0, 0, 3);

  /* Failed launches and host funcs count nothing. */
  assert_status(gcap_launch_kernel(f->s, run, GCAP_DIM3(0, 1, 1), GCAP_DIM3(1, 1, 1), 0, args),
                GCAP_ERROR_INVALID_VALUE);
  assert_status(gcap_launch_kernel(f->s, stub, GCAP_DIM3(1, 1, 1), GCAP_DIM3(2048, 1, 1), 0, args),
                GCAP_ERROR_INVALID_VALUE);
  assert_status(gcap_launch_kernel(f->s, run, GCAP_DIM3(1, 1, 1), GCAP_DIM3(1, 1, 1), 0, NULL),
                GCAP_ERROR_INVALID_VALUE);
  assert_status(gcap_launch_host_func(f->s, NULL, NULL), GCAP_ERROR_INVALID_VALUE);
  assert_ok(gcap_stream_synchronize(f->s));
  st = stats(f->ctx);
  assert_stats(&st, 2, 1, 0, 0, 3);

  assert_ok(gcap_module_unload(m));
}

static void test_counters_are_per_context(void **state) {
  struct test_fixture *f = *state;
  test_require_sim(); /* the simulator's counters */
  gcap_context *other = test_context_create();
  void *d = NULL;
  unsigned char h[64] = {0};
  assert_ok(gcap_mem_alloc(f->ctx, 64, &d));
  assert_ok(gcap_memcpy(f->ctx, d, h, 64, GCAP_MEMCPY_HOST_TO_DEVICE));
  assert_ok(gcap_memset_async(f->s, d, 0, 64));
  int calls = 0;
  assert_ok(gcap_launch_host_func(f->s, host_count, &calls));
  assert_ok(gcap_stream_synchronize(f->s));
  gcap_sim_stats st = stats(f->ctx);
  assert_stats(&st, 0, 0, 64, 64, 1);
  st = stats(other);
  assert_stats(&st, 0, 0, 0, 0, 0);
  gcap_context_destroy(other);
  /* Reading the counters does not reset them. */
  st = stats(f->ctx);
  assert_stats(&st, 0, 0, 64, 64, 1);
  assert_ok(gcap_mem_free(f->ctx, d));
}

int main(void) {
  test_require_backend();
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_options_init_defaults),
      cmocka_unit_test_setup_teardown(test_get_stats_errors, test_setup, test_teardown),
      cmocka_unit_test_setup_teardown(test_get_stats_not_on_cuda, test_setup, test_teardown),
      cmocka_unit_test_setup_teardown(test_fresh_context_zero, test_setup, test_teardown),
      cmocka_unit_test_setup_teardown(test_copy_and_fill_counters, test_setup, test_teardown),
      cmocka_unit_test_setup_teardown(test_host_to_host_copies_count, test_setup, test_teardown),
      cmocka_unit_test_setup_teardown(test_kernel_and_host_counters, test_setup, test_teardown),
      cmocka_unit_test_setup_teardown(test_counters_are_per_context, test_setup, test_teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
