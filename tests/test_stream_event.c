/* Streams, events, host callbacks, stream order, and the capture queries outside capture. */
#define _POSIX_C_SOURCE 200809L

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <time.h>

#include "common.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* struct test_fixture, test_setup() and test_teardown() come from common.h: a context and one stream. */

static int sentinel_storage;
#define SENTINEL_STREAM ((gcap_stream *)(void *)&sentinel_storage)
#define SENTINEL_EVENT ((gcap_event *)(void *)&sentinel_storage)

static void host_noop(void *user_data) { (void)user_data; }

/* ----------------------------------------------------------------- streams */

static void test_stream_lifecycle(void **state) {
  struct test_fixture *f = *state;
  gcap_stream *s = SENTINEL_STREAM;
  assert_ok(gcap_stream_create(f->ctx, &s));
  assert_non_null(s);
  assert_true(s != SENTINEL_STREAM);
  assert_true(s != f->s);
  assert_string_equal(gcap_last_error_message(), "");
  assert_ok(gcap_stream_query(s));
  assert_ok(gcap_stream_synchronize(s));
  assert_ok(gcap_launch_host_func(s, host_noop, NULL));
  assert_ok(gcap_stream_synchronize(s));
  assert_ok(gcap_stream_query(s));
  assert_string_equal(gcap_last_error_message(), "");
  assert_ok(gcap_stream_destroy(s));
  assert_string_equal(gcap_last_error_message(), "");
  /* NULL is a no-op success. */
  assert_ok(gcap_stream_destroy(NULL));
}

static void test_stream_errors(void **state) {
  struct test_fixture *f = *state;
  gcap_stream *s = SENTINEL_STREAM;
  assert_status(gcap_stream_create(NULL, &s), GCAP_ERROR_INVALID_HANDLE);
  assert_null(s);
  test_assert_message_contains("gcap_stream_create");
  assert_status(gcap_stream_create(f->ctx, NULL), GCAP_ERROR_INVALID_VALUE);
  test_assert_message_contains("gcap_stream_create");
  assert_status(gcap_stream_create(NULL, NULL), GCAP_ERROR_INVALID_HANDLE);

  assert_status(gcap_stream_synchronize(NULL), GCAP_ERROR_INVALID_HANDLE);
  test_assert_message_contains("gcap_stream_synchronize");
  assert_status(gcap_stream_query(NULL), GCAP_ERROR_INVALID_HANDLE);
  test_assert_message_contains("gcap_stream_query");

  assert_ok(gcap_stream_create(f->ctx, &s));
  assert_ok(gcap_stream_destroy(s));
  assert_status(gcap_stream_synchronize(s), GCAP_ERROR_INVALID_HANDLE);
  assert_status(gcap_stream_query(s), GCAP_ERROR_INVALID_HANDLE);
  assert_status(gcap_stream_destroy(s), GCAP_ERROR_INVALID_HANDLE);
  test_assert_message_contains("gcap_stream_destroy");
  assert_status(gcap_launch_host_func(s, host_noop, NULL), GCAP_ERROR_INVALID_HANDLE);

  gcap_context *dead = test_context_create();
  gcap_context_destroy(dead);
  s = SENTINEL_STREAM;
  assert_status(gcap_stream_create(dead, &s), GCAP_ERROR_INVALID_HANDLE);
  assert_null(s);
}

static void test_streams_of_other_context(void **state) {
  struct test_fixture *f = *state;
  gcap_context *other = test_context_create();
  gcap_stream *os = NULL;
  gcap_event *oe = NULL, *e = NULL;
  assert_ok(gcap_stream_create(other, &os));
  assert_ok(gcap_event_create(other, &oe));
  assert_ok(gcap_event_create(f->ctx, &e));
  /* A stream is usable on its own whatever context others belong to. */
  assert_ok(gcap_stream_synchronize(os));
  assert_ok(gcap_stream_query(os));
  /* Mixing contexts. */
  assert_status(gcap_stream_wait_event(f->s, oe), GCAP_ERROR_INVALID_HANDLE);
  test_assert_message_contains("gcap_stream_wait_event");
  assert_status(gcap_stream_wait_event(os, e), GCAP_ERROR_INVALID_HANDLE);
  assert_status(gcap_event_record(e, os), GCAP_ERROR_INVALID_HANDLE);
  test_assert_message_contains("gcap_event_record");
  assert_status(gcap_event_record(oe, f->s), GCAP_ERROR_INVALID_HANDLE);
  /* Same context is fine. */
  assert_ok(gcap_event_record(oe, os));
  assert_ok(gcap_stream_wait_event(os, oe));
  assert_ok(gcap_event_record(e, f->s));
  assert_ok(gcap_stream_wait_event(f->s, e));
  assert_ok(gcap_event_destroy(e));
  assert_ok(gcap_event_destroy(oe));
  assert_ok(gcap_stream_destroy(os));
  gcap_context_destroy(other);
}

/* ------------------------------------------------------------------ events */

static void test_event_lifecycle(void **state) {
  struct test_fixture *f = *state;
  gcap_event *e = SENTINEL_EVENT;
  assert_ok(gcap_event_create(f->ctx, &e));
  assert_non_null(e);
  assert_true(e != SENTINEL_EVENT);
  assert_string_equal(gcap_last_error_message(), "");
  /* Never recorded: queries succeed. */
  assert_ok(gcap_event_query(e));
  assert_ok(gcap_event_synchronize(e));
  /* Waiting on a never-recorded event is a no-op. */
  assert_ok(gcap_stream_wait_event(f->s, e));
  assert_ok(gcap_launch_host_func(f->s, host_noop, NULL));
  assert_ok(gcap_event_record(e, f->s));
  assert_string_equal(gcap_last_error_message(), "");
  assert_ok(gcap_event_synchronize(e));
  assert_ok(gcap_event_query(e));
  assert_ok(gcap_stream_wait_event(f->s, e));
  /* Recording again is fine. */
  assert_ok(gcap_event_record(e, f->s));
  assert_ok(gcap_event_synchronize(e)); /* a query right after the record may find it pending on a GPU */
  assert_ok(gcap_event_query(e));
  assert_ok(gcap_event_destroy(e));
  assert_ok(gcap_event_destroy(NULL));
}

static void test_event_query_after_work_on_sim(void **state) {
  (void)state;
  test_require_sim();
  /* IMMEDIATE runs work when issued: no NOT_READY after work (DEFERRED has its own tests). */
  gcap_sim_options so;
  gcap_sim_options_init(&so);
  gcap_context *ctx = test_sim_context_create(&so);
  gcap_stream *s = NULL;
  gcap_event *e = NULL;
  void *d = NULL;
  assert_ok(gcap_stream_create(ctx, &s));
  assert_ok(gcap_event_create(ctx, &e));
  assert_ok(gcap_mem_alloc(ctx, 4096, &d));
  assert_ok(gcap_memset_async(s, d, 1, 4096));
  assert_ok(gcap_stream_query(s));
  assert_ok(gcap_event_record(e, s));
  assert_ok(gcap_event_query(e));
  assert_ok(gcap_mem_free(ctx, d));
  assert_ok(gcap_event_destroy(e));
  gcap_context_destroy(ctx);
}

/* A host function that takes about 3 ms: what the events around it time. */
static void take_3ms(void *user_data) {
  (void)user_data;
  struct timespec t = {0, 3000000};
  while (nanosleep(&t, &t) != 0) {}
}

static void assert_about_3ms(gcap_event *start, gcap_event *end) {
  float ms = -1, back = 1;
  assert_ok(gcap_event_elapsed_time(start, end, &ms));
  assert_true(ms >= 2.5f && ms < 2000.0f);
  assert_ok(gcap_event_elapsed_time(end, start, &back)); /* the other way round: negative */
  assert_true(back <= -2.5f);
  assert_ok(gcap_event_elapsed_time(start, start, &ms));
  assert_true(ms == 0.0f);
}

/* Elapsed time between records on a stream, and between the record nodes of a graph. */
static void test_event_elapsed_time(void **state) {
  struct test_fixture *f = *state;
  gcap_event *start = NULL, *end = NULL;
  assert_ok(gcap_event_create(f->ctx, &start));
  assert_ok(gcap_event_create_with_flags(f->ctx, GCAP_EVENT_BLOCKING_SYNC, &end));
  assert_ok(gcap_event_record(start, f->s));
  assert_ok(gcap_launch_host_func(f->s, take_3ms, NULL));
  assert_ok(gcap_event_record(end, f->s));
  assert_ok(gcap_event_synchronize(end));
  assert_about_3ms(start, end);

  gcap_graph *g = NULL;
  gcap_node *n[3];
  gcap_host_node_params hp = {take_3ms, NULL};
  assert_ok(gcap_graph_create(f->ctx, &g));
  assert_ok(gcap_graph_add_event_record_node(g, NULL, 0, start, &n[0]));
  assert_ok(gcap_graph_add_host_node(g, &n[0], 1, &hp, &n[1]));
  assert_ok(gcap_graph_add_event_record_node(g, &n[1], 1, end, &n[2]));
  gcap_exec *x = NULL;
  assert_ok(gcap_graph_instantiate(g, 0, &x));
  assert_ok(gcap_exec_launch(x, f->s));
  assert_ok(gcap_stream_synchronize(f->s));
  assert_about_3ms(start, end);
  gcap_exec_destroy(x);
  gcap_graph_destroy(g);
  assert_ok(gcap_event_destroy(start));
  assert_ok(gcap_event_destroy(end));
}

static void test_event_elapsed_time_refusals(void **state) {
  struct test_fixture *f = *state;
  gcap_event *timed = NULL, *untimed = NULL, *never = NULL, *out = SENTINEL_EVENT;
  float ms = 0;
  assert_status(gcap_event_create_with_flags(f->ctx, 8, &out), GCAP_ERROR_INVALID_VALUE);
  test_assert_message_contains("gcap_event_create_with_flags: flags 0x8 has unknown bits 0x8");
  assert_null(out);
  assert_status(gcap_event_create_with_flags(f->ctx, GCAP_EVENT_INTERPROCESS | GCAP_EVENT_DISABLE_TIMING, &out),
                GCAP_ERROR_NOT_SUPPORTED);
  test_assert_message_contains("interprocess");
  assert_status(gcap_event_create_with_flags(NULL, 0, &out), GCAP_ERROR_INVALID_HANDLE);
  assert_status(gcap_event_create_with_flags(f->ctx, 0, NULL), GCAP_ERROR_INVALID_VALUE);

  assert_ok(gcap_event_create(f->ctx, &timed));
  assert_ok(gcap_event_create_with_flags(f->ctx, GCAP_EVENT_DISABLE_TIMING, &untimed));
  assert_ok(gcap_event_create(f->ctx, &never));
  assert_ok(gcap_event_record(timed, f->s));
  assert_ok(gcap_event_record(untimed, f->s));
  assert_ok(gcap_stream_synchronize(f->s));

  assert_status(gcap_event_elapsed_time(timed, untimed, &ms), GCAP_ERROR_INVALID_HANDLE);
  test_assert_message_contains("end (event");
  test_assert_message_contains("GCAP_EVENT_DISABLE_TIMING");
  assert_status(gcap_event_elapsed_time(untimed, timed, &ms), GCAP_ERROR_INVALID_HANDLE);
  test_assert_message_contains("start (event");
  assert_status(gcap_event_elapsed_time(timed, never, &ms), GCAP_ERROR_INVALID_HANDLE);
  assert_status(gcap_event_elapsed_time(timed, timed, NULL), GCAP_ERROR_INVALID_VALUE);
  test_assert_message_contains("gcap_event_elapsed_time: ms is NULL");
  assert_status(gcap_event_elapsed_time(NULL, timed, &ms), GCAP_ERROR_INVALID_HANDLE);
  test_assert_message_contains("start is NULL");
  assert_status(gcap_event_elapsed_time(timed, NULL, &ms), GCAP_ERROR_INVALID_HANDLE);
  test_assert_message_contains("end is NULL");

  gcap_context *other = test_context_create();
  gcap_event *foreign = NULL;
  assert_ok(gcap_event_create(other, &foreign));
  assert_status(gcap_event_elapsed_time(timed, foreign, &ms), GCAP_ERROR_INVALID_HANDLE);
  test_assert_message_contains("end belongs to another context");
  assert_ok(gcap_event_destroy(foreign));
  gcap_context_destroy(other);

  /* Recorded in a capture that is still going: as a query of it, CAPTURED_EVENT, and the capture is invalidated. */
  assert_ok(gcap_stream_begin_capture(f->s, GCAP_CAPTURE_MODE_RELAXED));
  assert_ok(gcap_event_record(never, f->s));
  assert_status(gcap_event_elapsed_time(timed, never, &ms), GCAP_ERROR_CAPTURED_EVENT);
  gcap_graph *g = NULL;
  assert_status(gcap_stream_end_capture(f->s, &g), GCAP_ERROR_STREAM_CAPTURE_INVALIDATED);

  assert_ok(gcap_event_destroy(timed));
  assert_ok(gcap_event_destroy(untimed));
  assert_ok(gcap_event_destroy(never));
}

static void test_event_errors(void **state) {
  struct test_fixture *f = *state;
  gcap_event *e = SENTINEL_EVENT;
  assert_status(gcap_event_create(NULL, &e), GCAP_ERROR_INVALID_HANDLE);
  assert_null(e);
  test_assert_message_contains("gcap_event_create");
  assert_status(gcap_event_create(f->ctx, NULL), GCAP_ERROR_INVALID_VALUE);
  gcap_context *dead = test_context_create();
  gcap_context_destroy(dead);
  e = SENTINEL_EVENT;
  assert_status(gcap_event_create(dead, &e), GCAP_ERROR_INVALID_HANDLE);
  assert_null(e);

  assert_status(gcap_event_record(NULL, f->s), GCAP_ERROR_INVALID_HANDLE);
  test_assert_message_contains("gcap_event_record");
  assert_status(gcap_event_synchronize(NULL), GCAP_ERROR_INVALID_HANDLE);
  test_assert_message_contains("gcap_event_synchronize");
  assert_status(gcap_event_query(NULL), GCAP_ERROR_INVALID_HANDLE);
  test_assert_message_contains("gcap_event_query");
  assert_status(gcap_stream_wait_event(f->s, NULL), GCAP_ERROR_INVALID_HANDLE);
  test_assert_message_contains("gcap_stream_wait_event");

  assert_ok(gcap_event_create(f->ctx, &e));
  assert_status(gcap_event_record(e, NULL), GCAP_ERROR_INVALID_HANDLE);
  assert_status(gcap_stream_wait_event(NULL, e), GCAP_ERROR_INVALID_HANDLE);
  gcap_stream *ds = NULL;
  assert_ok(gcap_stream_create(f->ctx, &ds));
  assert_ok(gcap_stream_destroy(ds));
  assert_status(gcap_event_record(e, ds), GCAP_ERROR_INVALID_HANDLE);
  assert_status(gcap_stream_wait_event(ds, e), GCAP_ERROR_INVALID_HANDLE);

  assert_ok(gcap_event_destroy(e));
  assert_status(gcap_event_record(e, f->s), GCAP_ERROR_INVALID_HANDLE);
  assert_status(gcap_event_synchronize(e), GCAP_ERROR_INVALID_HANDLE);
  assert_status(gcap_event_query(e), GCAP_ERROR_INVALID_HANDLE);
  assert_status(gcap_stream_wait_event(f->s, e), GCAP_ERROR_INVALID_HANDLE);
  assert_status(gcap_event_destroy(e), GCAP_ERROR_INVALID_HANDLE);
  test_assert_message_contains("gcap_event_destroy");
}

/* ------------------------------------------------------- order on a stream */

struct log {
  int entries[64];
  int n;
};

struct log_item {
  struct log *log;
  int id;
};

static void append_to_log(void *user_data) {
  struct log_item *it = user_data;
  if (it->log->n < 64) it->log->entries[it->log->n] = it->id;
  it->log->n++;
}

static void test_host_funcs_run_in_order(void **state) {
  struct test_fixture *f = *state;
  struct log log = {{0}, 0};
  struct log_item items[10];
  for (int i = 0; i < 10; i++) {
    items[i].log = &log;
    items[i].id = 100 + i;
    assert_ok(gcap_launch_host_func(f->s, append_to_log, &items[i]));
    assert_string_equal(gcap_last_error_message(), "");
  }
  assert_ok(gcap_stream_synchronize(f->s));
  assert_int_equal(log.n, 10);
  for (int i = 0; i < 10; i++) assert_int_equal(log.entries[i], 100 + i);

  /* Across two streams joined by an event, the order still holds. */
  gcap_stream *s2 = NULL;
  gcap_event *e = NULL;
  assert_ok(gcap_stream_create(f->ctx, &s2));
  assert_ok(gcap_event_create(f->ctx, &e));
  log.n = 0;
  assert_ok(gcap_launch_host_func(f->s, append_to_log, &items[0]));
  assert_ok(gcap_event_record(e, f->s));
  assert_ok(gcap_stream_wait_event(s2, e));
  assert_ok(gcap_launch_host_func(s2, append_to_log, &items[1]));
  assert_ok(gcap_stream_synchronize(s2));
  assert_ok(gcap_stream_synchronize(f->s));
  assert_int_equal(log.n, 2);
  assert_int_equal(log.entries[0], 100);
  assert_int_equal(log.entries[1], 101);
  assert_ok(gcap_event_destroy(e));
  assert_ok(gcap_stream_destroy(s2));
}

struct peek {
  const unsigned char *buf;
  size_t n;
  int seen_first;
  int calls;
};

static void peek_host_buffer(void *user_data) {
  struct peek *p = user_data;
  p->seen_first = p->buf[0];
  for (size_t i = 1; i < p->n; i++)
    if (p->buf[i] != p->buf[0]) p->seen_first = -1;
  p->calls++;
}

static void test_memset_then_copy_sees_fill(void **state) {
  struct test_fixture *f = *state;
  enum { N = 256 };
  void *d = NULL;
  unsigned char h[N];
  memset(h, 0, sizeof h);
  assert_ok(gcap_mem_alloc(f->ctx, N, &d));
  assert_ok(gcap_memset_async(f->s, d, 0x3D, N));
  assert_ok(gcap_memcpy_async(f->s, h, d, N, GCAP_MEMCPY_DEVICE_TO_HOST));
  /* A host callback after the copy sees its result. */
  struct peek p = {h, N, 0, 0};
  assert_ok(gcap_launch_host_func(f->s, peek_host_buffer, &p));
  assert_ok(gcap_stream_synchronize(f->s));
  for (size_t i = 0; i < N; i++) assert_int_equal(h[i], 0x3D);
  assert_int_equal(p.calls, 1);
  assert_int_equal(p.seen_first, 0x3D);

  /* Fill, copy, fill again, copy again: each copy sees the fill before it. */
  unsigned char h2[N];
  assert_ok(gcap_memset_async(f->s, d, 0x01, N));
  assert_ok(gcap_memcpy_async(f->s, h, d, N, GCAP_MEMCPY_DEFAULT));
  assert_ok(gcap_memset_async(f->s, d, 0x02, N));
  assert_ok(gcap_memcpy_async(f->s, h2, d, N, GCAP_MEMCPY_DEFAULT));
  assert_ok(gcap_stream_synchronize(f->s));
  for (size_t i = 0; i < N; i++) {
    assert_int_equal(h[i], 0x01);
    assert_int_equal(h2[i], 0x02);
  }
  assert_ok(gcap_mem_free(f->ctx, d));
}

static void test_host_func_errors(void **state) {
  struct test_fixture *f = *state;
  int token = 0;
  assert_status(gcap_launch_host_func(f->s, NULL, &token), GCAP_ERROR_INVALID_VALUE);
  test_assert_message_contains("gcap_launch_host_func");
  assert_status(gcap_launch_host_func(NULL, host_noop, &token), GCAP_ERROR_INVALID_HANDLE);
  test_assert_message_contains("gcap_launch_host_func");
  assert_status(gcap_launch_host_func(NULL, NULL, NULL), GCAP_ERROR_INVALID_HANDLE);
  /* The stream is still fine. */
  assert_ok(gcap_launch_host_func(f->s, host_noop, NULL));
  assert_ok(gcap_stream_synchronize(f->s));
}

/* --------------------------------------------- blocking calls from a callback */

struct blocking_probe {
  gcap_context *ctx;
  gcap_stream *s, *other;
  gcap_event *e;
  void *d;
  unsigned char host[16];
  gcap_status sync_same, sync_other, memcpy_st, ctx_sync, event_sync, stream_destroy;
  int calls;
};

static void call_blocking(void *user_data) {
  struct blocking_probe *p = user_data;
  p->sync_same = gcap_stream_synchronize(p->s);
  p->sync_other = gcap_stream_synchronize(p->other);
  p->memcpy_st = gcap_memcpy(p->ctx, p->host, p->d, sizeof p->host, GCAP_MEMCPY_DEVICE_TO_HOST);
  p->ctx_sync = gcap_context_synchronize(p->ctx);
  p->event_sync = gcap_event_synchronize(p->e);
  p->stream_destroy = gcap_stream_destroy(p->other);
  p->calls++;
}

static void test_blocking_calls_in_callback(void **state) {
  struct test_fixture *f = *state;
  struct blocking_probe p;
  memset(&p, 0, sizeof p);
  p.ctx = f->ctx;
  p.s = f->s;
  assert_ok(gcap_stream_create(f->ctx, &p.other));
  assert_ok(gcap_event_create(f->ctx, &p.e));
  assert_ok(gcap_mem_alloc(f->ctx, sizeof p.host, &p.d));
  assert_ok(gcap_memset_async(f->s, p.d, 0x42, sizeof p.host));
  assert_ok(gcap_event_record(p.e, f->s));
  memset(p.host, 0x99, sizeof p.host);
  p.sync_same = p.sync_other = p.memcpy_st = p.ctx_sync = p.event_sync = p.stream_destroy = GCAP_SUCCESS;

  assert_ok(gcap_launch_host_func(f->s, call_blocking, &p));
  assert_ok(gcap_stream_synchronize(f->s));
  assert_int_equal(p.calls, 1);
  assert_int_equal(p.sync_same, GCAP_ERROR_ILLEGAL_STATE);
  assert_int_equal(p.sync_other, GCAP_ERROR_ILLEGAL_STATE);
  assert_int_equal(p.memcpy_st, GCAP_ERROR_ILLEGAL_STATE);
  assert_int_equal(p.ctx_sync, GCAP_ERROR_ILLEGAL_STATE);
  assert_int_equal(p.event_sync, GCAP_ERROR_ILLEGAL_STATE);
  assert_int_equal(p.stream_destroy, GCAP_ERROR_ILLEGAL_STATE);
  /* The refused copy copied nothing. */
  for (size_t i = 0; i < sizeof p.host; i++) assert_int_equal(p.host[i], 0x99);

  /* Outside the callback everything works again, and the stream was not destroyed. */
  assert_ok(gcap_stream_synchronize(f->s));
  assert_ok(gcap_stream_synchronize(p.other));
  assert_ok(gcap_context_synchronize(f->ctx));
  assert_ok(gcap_event_synchronize(p.e));
  assert_ok(gcap_memcpy(f->ctx, p.host, p.d, sizeof p.host, GCAP_MEMCPY_DEVICE_TO_HOST));
  for (size_t i = 0; i < sizeof p.host; i++) assert_int_equal(p.host[i], 0x42);
  assert_ok(gcap_stream_destroy(p.other));
  assert_ok(gcap_event_destroy(p.e));
  assert_ok(gcap_mem_free(f->ctx, p.d));
}

/* ------------------------------------------------------------ capture mode */

static void restore_global_mode(void) {
  gcap_capture_mode m = GCAP_CAPTURE_MODE_GLOBAL;
  assert_ok(gcap_thread_exchange_capture_mode(&m));
}

static void test_exchange_capture_mode_swaps(void **state) {
  (void)state;
  gcap_capture_mode m = GCAP_CAPTURE_MODE_RELAXED;
  assert_ok(gcap_thread_exchange_capture_mode(&m));
  assert_string_equal(gcap_last_error_message(), "");
  assert_int_equal(m, GCAP_CAPTURE_MODE_GLOBAL); /* the default */
  m = GCAP_CAPTURE_MODE_THREAD_LOCAL;
  assert_ok(gcap_thread_exchange_capture_mode(&m));
  assert_int_equal(m, GCAP_CAPTURE_MODE_RELAXED);
  m = GCAP_CAPTURE_MODE_THREAD_LOCAL;
  assert_ok(gcap_thread_exchange_capture_mode(&m));
  assert_int_equal(m, GCAP_CAPTURE_MODE_THREAD_LOCAL);
  m = GCAP_CAPTURE_MODE_GLOBAL;
  assert_ok(gcap_thread_exchange_capture_mode(&m));
  assert_int_equal(m, GCAP_CAPTURE_MODE_THREAD_LOCAL);
  /* Back at GLOBAL. */
  m = GCAP_CAPTURE_MODE_GLOBAL;
  assert_ok(gcap_thread_exchange_capture_mode(&m));
  assert_int_equal(m, GCAP_CAPTURE_MODE_GLOBAL);
}

struct thread_mode_result {
  gcap_status st1, st2;
  gcap_capture_mode first, second;
};

static void *thread_mode_main(void *arg) {
  struct thread_mode_result *r = arg;
  gcap_capture_mode m = GCAP_CAPTURE_MODE_THREAD_LOCAL;
  r->st1 = gcap_thread_exchange_capture_mode(&m);
  r->first = m;
  m = GCAP_CAPTURE_MODE_RELAXED;
  r->st2 = gcap_thread_exchange_capture_mode(&m);
  r->second = m;
  return NULL;
}

static void test_exchange_capture_mode_per_thread(void **state) {
  (void)state;
  gcap_capture_mode m = GCAP_CAPTURE_MODE_RELAXED;
  assert_ok(gcap_thread_exchange_capture_mode(&m));
  assert_int_equal(m, GCAP_CAPTURE_MODE_GLOBAL);

  struct thread_mode_result r = {GCAP_ERROR_BACKEND, GCAP_ERROR_BACKEND, (gcap_capture_mode)-1, (gcap_capture_mode)-1};
  pthread_t t;
  assert_int_equal(pthread_create(&t, NULL, thread_mode_main, &r), 0);
  assert_int_equal(pthread_join(t, NULL), 0);
  assert_int_equal(r.st1, GCAP_SUCCESS);
  assert_int_equal(r.first, GCAP_CAPTURE_MODE_GLOBAL); /* not the main thread's RELAXED */
  assert_int_equal(r.st2, GCAP_SUCCESS);
  assert_int_equal(r.second, GCAP_CAPTURE_MODE_THREAD_LOCAL);

  /* The other thread's changes did not reach this one. */
  m = GCAP_CAPTURE_MODE_GLOBAL;
  assert_ok(gcap_thread_exchange_capture_mode(&m));
  assert_int_equal(m, GCAP_CAPTURE_MODE_RELAXED);
}

static void test_exchange_capture_mode_errors(void **state) {
  (void)state;
  assert_status(gcap_thread_exchange_capture_mode(NULL), GCAP_ERROR_INVALID_VALUE);
  test_assert_message_contains("gcap_thread_exchange_capture_mode");

  gcap_capture_mode m = GCAP_CAPTURE_MODE_RELAXED;
  assert_ok(gcap_thread_exchange_capture_mode(&m));
  assert_int_equal(m, GCAP_CAPTURE_MODE_GLOBAL);

  const int bad[] = {3, -1, 100};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    m = (gcap_capture_mode)bad[i];
    assert_status(gcap_thread_exchange_capture_mode(&m), GCAP_ERROR_INVALID_VALUE);
    test_assert_message_contains("gcap_thread_exchange_capture_mode");
    /* The output is not written on failure. */
    assert_int_equal((int)m, bad[i]);
  }
  /* The thread's mode is still RELAXED. */
  m = GCAP_CAPTURE_MODE_GLOBAL;
  assert_ok(gcap_thread_exchange_capture_mode(&m));
  assert_int_equal(m, GCAP_CAPTURE_MODE_RELAXED);
}

static int reset_mode_teardown(void **state) {
  (void)state;
  restore_global_mode();
  return 0;
}

/* ------------------------------------------------- capture queries, no capture */

static void test_capture_queries_without_capture(void **state) {
  struct test_fixture *f = *state;
  gcap_capture_status cs = (gcap_capture_status)77;
  assert_ok(gcap_stream_is_capturing(f->s, &cs));
  assert_int_equal(cs, GCAP_CAPTURE_STATUS_NONE);
  assert_string_equal(gcap_last_error_message(), "");
  assert_status(gcap_stream_is_capturing(f->s, NULL), GCAP_ERROR_INVALID_VALUE);
  test_assert_message_contains("gcap_stream_is_capturing");
  assert_status(gcap_stream_is_capturing(NULL, &cs), GCAP_ERROR_INVALID_HANDLE);

  gcap_capture_info info;
  memset(&info, 0x5C, sizeof info);
  assert_ok(gcap_stream_get_capture_info(f->s, &info));
  assert_int_equal(info.status, GCAP_CAPTURE_STATUS_NONE);
  assert_status(gcap_stream_get_capture_info(f->s, NULL), GCAP_ERROR_INVALID_VALUE);
  test_assert_message_contains("gcap_stream_get_capture_info");
  assert_status(gcap_stream_get_capture_info(NULL, &info), GCAP_ERROR_INVALID_HANDLE);

  gcap_graph *g = (gcap_graph *)(void *)&sentinel_storage;
  assert_status(gcap_stream_end_capture(f->s, &g), GCAP_ERROR_ILLEGAL_STATE);
  assert_null(g);
  test_assert_message_contains("gcap_stream_end_capture");
  /* Not capturing is reported before the NULL output. */
  assert_status(gcap_stream_end_capture(f->s, NULL), GCAP_ERROR_ILLEGAL_STATE);
  g = (gcap_graph *)(void *)&sentinel_storage;
  assert_status(gcap_stream_end_capture(NULL, &g), GCAP_ERROR_INVALID_HANDLE);

  /* Destroyed stream. */
  gcap_stream *ds = NULL;
  assert_ok(gcap_stream_create(f->ctx, &ds));
  assert_ok(gcap_stream_destroy(ds));
  assert_status(gcap_stream_is_capturing(ds, &cs), GCAP_ERROR_INVALID_HANDLE);
  assert_status(gcap_stream_get_capture_info(ds, &info), GCAP_ERROR_INVALID_HANDLE);
  assert_status(gcap_stream_end_capture(ds, &g), GCAP_ERROR_INVALID_HANDLE);

  /* The failed end did not disturb the stream. */
  assert_ok(gcap_launch_host_func(f->s, host_noop, NULL));
  assert_ok(gcap_stream_synchronize(f->s));
  assert_ok(gcap_stream_is_capturing(f->s, &cs));
  assert_int_equal(cs, GCAP_CAPTURE_STATUS_NONE);
}

int main(void) {
  test_require_backend();
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_stream_lifecycle, test_setup, test_teardown),
      cmocka_unit_test_setup_teardown(test_stream_errors, test_setup, test_teardown),
      cmocka_unit_test_setup_teardown(test_event_elapsed_time, test_setup, test_teardown),
      cmocka_unit_test_setup_teardown(test_event_elapsed_time_refusals, test_setup, test_teardown),
      cmocka_unit_test_setup_teardown(test_streams_of_other_context, test_setup, test_teardown),
      cmocka_unit_test_setup_teardown(test_event_lifecycle, test_setup, test_teardown),
      cmocka_unit_test_setup_teardown(test_event_query_after_work_on_sim, test_setup, test_teardown),
      cmocka_unit_test_setup_teardown(test_event_errors, test_setup, test_teardown),
      cmocka_unit_test_setup_teardown(test_host_funcs_run_in_order, test_setup, test_teardown),
      cmocka_unit_test_setup_teardown(test_memset_then_copy_sees_fill, test_setup, test_teardown),
      cmocka_unit_test_setup_teardown(test_host_func_errors, test_setup, test_teardown),
      cmocka_unit_test_setup_teardown(test_blocking_calls_in_callback, test_setup, test_teardown),
      cmocka_unit_test_teardown(test_exchange_capture_mode_swaps, reset_mode_teardown),
      cmocka_unit_test_teardown(test_exchange_capture_mode_per_thread, reset_mode_teardown),
      cmocka_unit_test_teardown(test_exchange_capture_mode_errors, reset_mode_teardown),
      cmocka_unit_test_setup_teardown(test_capture_queries_without_capture, test_setup, test_teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
