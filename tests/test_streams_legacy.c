/*
 * Stream flags and priorities, the legacy stream's implicit ordering with blocking streams, its
 * capture rules, and the per-thread stream: orderings are asserted by what host functions log,
 * in IMMEDIATE and DEFERRED mode and over shuffled seeds.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "common.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

static gcap_context *sim_context(gcap_sim_exec exec, uint64_t seed, bool check_races) {
  gcap_sim_options so;
  gcap_sim_options_init(&so);
  so.exec = exec;
  so.seed = seed;
  so.order = GCAP_SIM_ORDER_SHUFFLE;
  so.check_races = check_races;
  return test_sim_context_create(&so);
}

static gcap_stream *make_stream(gcap_context *ctx, unsigned flags, int priority) {
  gcap_stream *s = NULL;
  assert_ok(gcap_stream_create_with_flags(ctx, flags, priority, &s));
  assert_non_null(s);
  return s;
}

static gcap_stream *legacy_of(gcap_context *ctx) {
  gcap_stream *s = NULL;
  assert_ok(gcap_context_legacy_stream(ctx, &s));
  assert_non_null(s);
  return s;
}

/* A log of host functions, each appending its tag. */
struct log {
  int tags[64];
  int count;
};
struct entry {
  struct log *log;
  int tag;
};
static void append(void *user_data) {
  struct entry *e = user_data;
  e->log->tags[e->log->count++] = e->tag;
}

static void assert_log(const struct log *log, const int *want, int n) {
  if (log->count != n) fail_msg("the log holds %d tags, expected %d", log->count, n);
  for (int i = 0; i < n; i++)
    if (log->tags[i] != want[i]) fail_msg("tag %d is %d, expected %d", i, log->tags[i], want[i]);
}

static const gcap_sim_exec modes[] = {GCAP_SIM_EXEC_IMMEDIATE, GCAP_SIM_EXEC_DEFERRED};

/* ------------------------------------------------------------ flags and priorities */

static void test_flags_and_priorities(void **state) {
  (void)state;
  gcap_context *ctx = test_context_create();
  int least = 99, greatest = 99;
  assert_ok(gcap_context_stream_priority_range(ctx, &least, &greatest));
  assert_int_equal(least, 0);
  assert_int_equal(greatest, -5);
  assert_ok(gcap_context_stream_priority_range(ctx, NULL, &greatest));
  assert_status(gcap_context_stream_priority_range(NULL, &least, &greatest), GCAP_ERROR_INVALID_HANDLE);

  gcap_stream *plain = test_stream_create(ctx);
  unsigned flags = 99;
  int priority = 99;
  assert_ok(gcap_stream_get_flags(plain, &flags));
  assert_int_equal(flags, GCAP_STREAM_NON_BLOCKING);
  assert_ok(gcap_stream_get_priority(plain, &priority));
  assert_int_equal(priority, 0);

  gcap_stream *blocking = make_stream(ctx, GCAP_STREAM_DEFAULT, -3);
  assert_ok(gcap_stream_get_flags(blocking, &flags));
  assert_int_equal(flags, GCAP_STREAM_DEFAULT);
  assert_ok(gcap_stream_get_priority(blocking, &priority));
  assert_int_equal(priority, -3);

  gcap_stream *urgent = make_stream(ctx, GCAP_STREAM_NON_BLOCKING, -100); /* clamped, as CUDA */
  assert_ok(gcap_stream_get_priority(urgent, &priority));
  assert_int_equal(priority, -5);
  gcap_stream *lazy = make_stream(ctx, GCAP_STREAM_NON_BLOCKING, 7);
  assert_ok(gcap_stream_get_priority(lazy, &priority));
  assert_int_equal(priority, 0);

  gcap_stream *s = plain;
  assert_status(gcap_stream_create_with_flags(ctx, 4, 0, &s), GCAP_ERROR_INVALID_VALUE);
  test_assert_message_contains("gcap_stream_create_with_flags");
  test_assert_message_contains("flags 0x4 is not GCAP_STREAM_DEFAULT or GCAP_STREAM_NON_BLOCKING");
  assert_null(s);
  assert_status(gcap_stream_create_with_flags(ctx, 0, 0, NULL), GCAP_ERROR_INVALID_VALUE);
  test_assert_message_contains("out is NULL");
  assert_status(gcap_stream_create_with_flags(NULL, 0, 0, &s), GCAP_ERROR_INVALID_HANDLE);
  assert_status(gcap_stream_get_flags(plain, NULL), GCAP_ERROR_INVALID_VALUE);
  test_assert_message_contains("gcap_stream_get_flags");
  test_assert_message_contains("flags is NULL");
  assert_status(gcap_stream_get_priority(plain, NULL), GCAP_ERROR_INVALID_VALUE);
  test_assert_message_contains("gcap_stream_get_priority");
  test_assert_message_contains("priority is NULL");
  assert_status(gcap_stream_get_flags(NULL, &flags), GCAP_ERROR_INVALID_HANDLE);
  assert_status(gcap_stream_get_priority(NULL, &priority), GCAP_ERROR_INVALID_HANDLE);

  gcap_stream *legacy = legacy_of(ctx);
  assert_ok(gcap_stream_get_flags(legacy, &flags));
  assert_int_equal(flags, GCAP_STREAM_DEFAULT);
  assert_ok(gcap_stream_get_priority(legacy, &priority));
  assert_int_equal(priority, 0);
  gcap_context_destroy(ctx);
}

/* DEFERRED: of the ready streams, the most urgent runs first, whatever the seed. */
static void test_priorities_order_deferred_work(void **state) {
  (void)state;
  for (uint64_t seed = 1; seed <= 16; seed++) {
    gcap_context *ctx = sim_context(GCAP_SIM_EXEC_DEFERRED, seed, false);
    gcap_stream *lo = make_stream(ctx, GCAP_STREAM_NON_BLOCKING, 0);
    gcap_stream *mid = make_stream(ctx, GCAP_STREAM_NON_BLOCKING, -2);
    gcap_stream *hi = make_stream(ctx, GCAP_STREAM_NON_BLOCKING, -5);
    struct log log = {{0}, 0};
    struct entry e[9];
    gcap_stream *order[] = {lo, mid, hi};
    for (int i = 0; i < 9; i++) {
      e[i] = (struct entry){&log, i};
      assert_ok(gcap_launch_host_func(order[i / 3], append, &e[i]));
    }
    assert_ok(gcap_context_synchronize(ctx));
    static const int want[] = {6, 7, 8, 3, 4, 5, 0, 1, 2};
    assert_log(&log, want, 9);
    gcap_context_destroy(ctx);
  }
}

static void nop_kernel(const gcap_sim_thread *t, void *const *args) {
  (void)t;
  (void)args;
}

static void test_captured_kernels_take_the_stream_priority(void **state) {
  (void)state;
  gcap_context *ctx = test_context_create();
  static const gcap_kernel_def def = {.name = "nop", .sim_fn = nop_kernel};
  gcap_module_desc d = {.kernels = &def, .num_kernels = 1};
  gcap_module *m = NULL;
  assert_ok(test_module_load(ctx, &d, &m));
  gcap_kernel *k = test_kernel_of(m, "nop");
  gcap_stream *s = make_stream(ctx, GCAP_STREAM_NON_BLOCKING, -4);
  assert_ok(gcap_stream_begin_capture(s, GCAP_CAPTURE_MODE_GLOBAL));
  assert_ok(gcap_launch_kernel(s, k, GCAP_DIM3(1, 1, 1), GCAP_DIM3(1, 1, 1), 0, NULL));
  gcap_graph *g = NULL;
  assert_ok(gcap_stream_end_capture(s, &g));
  gcap_node *n = NULL;
  size_t count = 1;
  assert_ok(gcap_graph_get_nodes(g, &n, &count));
  assert_int_equal(count, 1);
  gcap_kernel_node_attr_value v = {.priority = 0};
  assert_ok(gcap_graph_kernel_node_get_attribute(n, GCAP_KERNEL_NODE_ATTR_PRIORITY, &v));
  assert_int_equal(v.priority, -4);
  gcap_graph_destroy(g);
  gcap_context_destroy(ctx);
}

/* ------------------------------------------------------------ the legacy stream */

static void test_legacy_stream_is_one_and_not_destroyable(void **state) {
  (void)state;
  gcap_context *ctx = test_context_create();
  gcap_stream *a = legacy_of(ctx), *b = legacy_of(ctx);
  assert_ptr_equal(a, b);
  assert_status(gcap_stream_destroy(a), GCAP_ERROR_INVALID_HANDLE);
  test_assert_message_contains("gcap_stream_destroy");
  test_assert_message_contains("is the context's legacy stream, which cannot be destroyed");
  assert_ok(gcap_stream_synchronize(a)); /* nothing changed */
  gcap_stream *p = NULL, *q = NULL;
  assert_ok(gcap_context_per_thread_stream(ctx, &p));
  assert_ok(gcap_context_per_thread_stream(ctx, &q));
  assert_ptr_equal(p, q);
  assert_ptr_not_equal(p, a);
  assert_status(gcap_stream_destroy(p), GCAP_ERROR_INVALID_HANDLE);
  test_assert_message_contains("is the context's per-thread stream, which cannot be destroyed");
  unsigned flags = 9;
  assert_ok(gcap_stream_get_flags(p, &flags));
  assert_int_equal(flags, GCAP_STREAM_DEFAULT);
  assert_status(gcap_context_legacy_stream(ctx, NULL), GCAP_ERROR_INVALID_VALUE);
  test_assert_message_contains("gcap_context_legacy_stream");
  test_assert_message_contains("out is NULL");
  assert_status(gcap_context_per_thread_stream(ctx, NULL), GCAP_ERROR_INVALID_VALUE);
  test_assert_message_contains("gcap_context_per_thread_stream");
  gcap_stream *none = a;
  assert_status(gcap_context_legacy_stream(NULL, &none), GCAP_ERROR_INVALID_HANDLE);
  assert_null(none);
  gcap_context_destroy(ctx);
}

/* Legacy work waits for earlier blocking work; later blocking work waits for legacy work. */
static void test_legacy_orders_blocking_streams(void **state) {
  (void)state;
  for (size_t m = 0; m < 2; m++) {
    for (uint64_t seed = 1; seed <= 8; seed++) {
      gcap_context *ctx = sim_context(modes[m], seed, false);
      gcap_stream *legacy = legacy_of(ctx);
      gcap_stream *a = make_stream(ctx, GCAP_STREAM_DEFAULT, 0);
      gcap_stream *b = make_stream(ctx, GCAP_STREAM_DEFAULT, -5);
      struct log log = {{0}, 0};
      struct entry e[5] = {{&log, 1}, {&log, 2}, {&log, 3}, {&log, 4}, {&log, 5}};
      assert_ok(gcap_launch_host_func(a, append, &e[0]));
      assert_ok(gcap_launch_host_func(b, append, &e[1]));
      assert_ok(gcap_launch_host_func(legacy, append, &e[2]));
      /* Waiting for the legacy stream alone runs the blocking work before it. */
      assert_ok(gcap_stream_synchronize(legacy));
      assert_int_equal(log.count, 3);
      assert_int_equal(log.tags[2], 3);
      assert_ok(gcap_launch_host_func(legacy, append, &e[3]));
      assert_ok(gcap_launch_host_func(a, append, &e[4]));
      /* Waiting for a blocking stream alone runs the legacy work before it. */
      assert_ok(gcap_stream_synchronize(a));
      assert_int_equal(log.count, 5);
      assert_int_equal(log.tags[3], 4);
      assert_int_equal(log.tags[4], 5);
      gcap_context_destroy(ctx);
    }
  }
}

/* DEFERRED: a non-blocking stream takes no part; its work stays queued when the legacy stream is waited for. */
static void test_non_blocking_streams_take_no_part(void **state) {
  (void)state;
  gcap_context *ctx = sim_context(GCAP_SIM_EXEC_DEFERRED, 3, false);
  gcap_stream *legacy = legacy_of(ctx);
  gcap_stream *n = test_stream_create(ctx);
  struct log log = {{0}, 0};
  struct entry e[2] = {{&log, 1}, {&log, 2}};
  assert_ok(gcap_launch_host_func(n, append, &e[0]));
  assert_ok(gcap_launch_host_func(legacy, append, &e[1]));
  assert_ok(gcap_stream_synchronize(legacy));
  static const int want[] = {2};
  assert_log(&log, want, 1);
  assert_ok(gcap_context_synchronize(ctx));
  gcap_context_destroy(ctx);
}

/* The edges are orderings for the stream race check too: a legacy copy after a blocking fill is no race. */
static void test_race_check_sees_the_implicit_order(void **state) {
  (void)state;
  for (size_t m = 0; m < 2; m++) {
    gcap_context *ctx = sim_context(modes[m], 5, true);
    gcap_stream *legacy = legacy_of(ctx);
    gcap_stream *a = make_stream(ctx, GCAP_STREAM_DEFAULT, 0);
    gcap_stream *n = test_stream_create(ctx);
    unsigned char *d = test_dev_alloc(ctx, 64);
    assert_ok(gcap_memset_async(a, d, 0x5a, 64));
    assert_ok(gcap_memset_async(legacy, d + 32, 0x11, 32));
    assert_ok(gcap_memset_async(a, d + 40, 0x22, 8));
    /* A non-blocking stream is not ordered: the check refuses it. */
    assert_status(gcap_memset_async(n, d, 0x33, 8), GCAP_ERROR_INVALID_VALUE);
    test_assert_message_contains("with nothing ordering them");
    assert_ok(gcap_context_synchronize(ctx));
    unsigned char got[64];
    assert_ok(gcap_memcpy(ctx, got, d, 64, GCAP_MEMCPY_DEVICE_TO_HOST));
    for (int i = 0; i < 64; i++) assert_int_equal(got[i], i < 32 ? 0x5a : i >= 40 && i < 48 ? 0x22 : 0x11);
    gcap_context_destroy(ctx);
  }
}

/* ------------------------------------------------------------ capture rules */

static void test_legacy_cannot_be_captured(void **state) {
  (void)state;
  gcap_context *ctx = test_context_create();
  gcap_stream *legacy = legacy_of(ctx);
  assert_status(gcap_stream_begin_capture(legacy, GCAP_CAPTURE_MODE_RELAXED), GCAP_ERROR_INVALID_VALUE);
  test_assert_message_contains("gcap_stream_begin_capture");
  test_assert_message_contains("is the legacy stream, which cannot be captured");
  gcap_capture_status cs = GCAP_CAPTURE_STATUS_ACTIVE;
  assert_ok(gcap_stream_is_capturing(legacy, &cs));
  assert_int_equal(cs, GCAP_CAPTURE_STATUS_NONE);
  gcap_context_destroy(ctx);
}

static void host_nop(void *p) { (void)p; }

/* Work on or a synchronize of the legacy stream while a blocking stream captures: 906, invalidating, in every mode. */
static void test_legacy_use_invalidates_blocking_captures(void **state) {
  (void)state;
  static const gcap_capture_mode cmodes[] = {GCAP_CAPTURE_MODE_GLOBAL, GCAP_CAPTURE_MODE_THREAD_LOCAL,
                                             GCAP_CAPTURE_MODE_RELAXED};
  for (size_t i = 0; i < 3; i++) {
    for (int sync = 0; sync < 2; sync++) {
      gcap_context *ctx = test_context_create();
      gcap_stream *legacy = legacy_of(ctx);
      gcap_stream *b = make_stream(ctx, GCAP_STREAM_DEFAULT, 0);
      assert_ok(gcap_stream_begin_capture(b, cmodes[i]));
      assert_ok(gcap_launch_host_func(b, host_nop, NULL));
      assert_status(sync ? gcap_stream_synchronize(legacy) : gcap_launch_host_func(legacy, host_nop, NULL),
                    GCAP_ERROR_STREAM_CAPTURE_IMPLICIT);
      test_assert_message_contains(sync ? "gcap_stream_synchronize" : "gcap_launch_host_func");
      test_assert_message_contains("which is capturing");
      test_assert_message_contains("the capture is now invalidated");
      gcap_graph *g = NULL;
      assert_status(gcap_stream_end_capture(b, &g), GCAP_ERROR_STREAM_CAPTURE_INVALIDATED);
      test_assert_message_contains("STREAM_CAPTURE_IMPLICIT");
      assert_null(g);
      /* After the capture the legacy stream works again. */
      assert_ok(gcap_launch_host_func(legacy, host_nop, NULL));
      assert_ok(gcap_stream_synchronize(legacy));
      gcap_context_destroy(ctx);
    }
  }
}

/* Querying it is 906 and invalidates nothing; a non-blocking capture takes no part. */
static void test_legacy_query_during_capture(void **state) {
  (void)state;
  gcap_context *ctx = test_context_create();
  gcap_stream *legacy = legacy_of(ctx);
  gcap_stream *b = make_stream(ctx, GCAP_STREAM_DEFAULT, 0);
  gcap_stream *n = test_stream_create(ctx);
  assert_ok(gcap_stream_begin_capture(n, GCAP_CAPTURE_MODE_RELAXED));
  assert_ok(gcap_launch_host_func(legacy, host_nop, NULL)); /* n is non-blocking */
  assert_ok(gcap_stream_synchronize(legacy));
  gcap_graph *g = NULL;
  assert_ok(gcap_stream_end_capture(n, &g));
  gcap_graph_destroy(g);

  assert_ok(gcap_stream_begin_capture(b, GCAP_CAPTURE_MODE_GLOBAL));
  assert_status(gcap_stream_query(legacy), GCAP_ERROR_STREAM_CAPTURE_IMPLICIT);
  test_assert_message_contains("gcap_stream_query");
  test_assert_message_contains("which is capturing");
  gcap_capture_status cs;
  assert_status(gcap_stream_is_capturing(legacy, &cs), GCAP_ERROR_STREAM_CAPTURE_IMPLICIT);
  gcap_capture_info info;
  assert_status(gcap_stream_get_capture_info(legacy, &info), GCAP_ERROR_STREAM_CAPTURE_IMPLICIT);
  assert_ok(gcap_launch_host_func(b, host_nop, NULL));
  g = NULL;
  assert_ok(gcap_stream_end_capture(b, &g));
  assert_non_null(g);
  gcap_graph_destroy(g);
  gcap_context_destroy(ctx);
}

/* ------------------------------------------------------------ the per-thread stream */

struct thread_arg {
  gcap_context *ctx;
  gcap_stream *got;
};
static void *per_thread(void *p) {
  struct thread_arg *a = p;
  if (gcap_context_per_thread_stream(a->ctx, &a->got) != GCAP_SUCCESS) a->got = NULL;
  return NULL;
}

static void test_per_thread_stream(void **state) {
  (void)state;
  for (size_t m = 0; m < 2; m++) {
    gcap_context *ctx = sim_context(modes[m], 9, false);
    gcap_stream *mine = NULL;
    assert_ok(gcap_context_per_thread_stream(ctx, &mine));
    struct thread_arg a = {ctx, NULL};
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, per_thread, &a), 0);
    assert_int_equal(pthread_join(t, NULL), 0);
    assert_non_null(a.got);
    assert_ptr_not_equal(a.got, mine);
    /* Blocking with respect to the legacy stream. */
    gcap_stream *legacy = legacy_of(ctx);
    struct log log = {{0}, 0};
    struct entry e[3] = {{&log, 1}, {&log, 2}, {&log, 3}};
    assert_ok(gcap_launch_host_func(mine, append, &e[0]));
    assert_ok(gcap_launch_host_func(legacy, append, &e[1]));
    assert_ok(gcap_launch_host_func(a.got, append, &e[2]));
    assert_ok(gcap_stream_synchronize(a.got));
    static const int want[] = {1, 2, 3};
    assert_log(&log, want, 3);
    gcap_context_destroy(ctx); /* the per-thread streams go with it */
  }
}

int main(void) {
  test_require_backend();
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_flags_and_priorities),
      cmocka_unit_test(test_priorities_order_deferred_work),
      cmocka_unit_test(test_captured_kernels_take_the_stream_priority),
      cmocka_unit_test(test_legacy_stream_is_one_and_not_destroyable),
      cmocka_unit_test(test_legacy_orders_blocking_streams),
      cmocka_unit_test(test_non_blocking_streams_take_no_part),
      cmocka_unit_test(test_race_check_sees_the_implicit_order),
      cmocka_unit_test(test_legacy_cannot_be_captured),
      cmocka_unit_test(test_legacy_use_invalidates_blocking_captures),
      cmocka_unit_test(test_legacy_query_during_capture),
      cmocka_unit_test(test_per_thread_stream),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
