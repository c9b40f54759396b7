/*
 * Capture rules: the prohibition predicate (rules.md#capture-prohibition), invalidation and the
 * first offender (rules.md#capture-invalidation), conflicts in every mode (rules.md#capture-conflicts),
 * potentially unsafe calls (rules.md#capture-unsafe-calls, rules.md#capture-unsafe-invalidates),
 * what stays allowed (rules.md#capture-allowed), executables launched into a capture
 * (rules.md#capture-unsupported-work) and failed validation (rules.md#capture-failed-call).
 *
 * Thread rules run their calls on helper threads driven one job at a time by the test thread,
 * so every ordering is fixed. cmocka's asserts run on the test thread only.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "common.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ thread runner */

typedef void (*job_fn)(void *arg);

struct runner {
  pthread_t thread;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  job_fn job;
  void *arg;
  bool pending;
  bool quit;
};

static void *runner_main(void *p) {
  struct runner *r = p;
  pthread_mutex_lock(&r->mu);
  for (;;) {
    while (!r->pending && !r->quit) pthread_cond_wait(&r->cv, &r->mu);
    if (!r->pending) break;
    job_fn job = r->job;
    void *arg = r->arg;
    pthread_mutex_unlock(&r->mu);
    job(arg);
    pthread_mutex_lock(&r->mu);
    r->pending = false;
    pthread_cond_broadcast(&r->cv);
  }
  pthread_mutex_unlock(&r->mu);
  return NULL;
}

static void runner_start(struct runner *r) {
  memset(r, 0, sizeof *r);
  assert_int_equal(pthread_mutex_init(&r->mu, NULL), 0);
  assert_int_equal(pthread_cond_init(&r->cv, NULL), 0);
  assert_int_equal(pthread_create(&r->thread, NULL, runner_main, r), 0);
}

/* Runs job(arg) on the runner's thread and waits until it has returned. */
static void runner_do(struct runner *r, job_fn job, void *arg) {
  pthread_mutex_lock(&r->mu);
  r->job = job;
  r->arg = arg;
  r->pending = true;
  pthread_cond_broadcast(&r->cv);
  while (r->pending) pthread_cond_wait(&r->cv, &r->mu);
  pthread_mutex_unlock(&r->mu);
}

static void runner_stop(struct runner *r) {
  pthread_mutex_lock(&r->mu);
  r->quit = true;
  pthread_cond_broadcast(&r->cv);
  pthread_mutex_unlock(&r->mu);
  assert_int_equal(pthread_join(r->thread, NULL), 0);
  pthread_cond_destroy(&r->cv);
  pthread_mutex_destroy(&r->mu);
}

/* One call made on a runner thread: inputs, then the status and message it produced. */
struct op {
  gcap_context *ctx;
  gcap_stream *s;
  gcap_capture_mode mode;
  void *p;
  gcap_graph *graph;
  gcap_status st;
  char msg[1024];
};

static void op_done(struct op *o, gcap_status st) {
  o->st = st;
  snprintf(o->msg, sizeof o->msg, "%s", gcap_last_error_message());
}

static void job_exchange_mode(void *a) {
  struct op *o = a;
  gcap_capture_mode m = o->mode;
  gcap_status st = gcap_thread_exchange_capture_mode(&m);
  o->mode = m; /* the previous mode */
  op_done(o, st);
}
static void job_begin(void *a) {
  struct op *o = a;
  op_done(o, gcap_stream_begin_capture(o->s, o->mode));
}
static void job_end(void *a) {
  struct op *o = a;
  o->graph = NULL;
  op_done(o, gcap_stream_end_capture(o->s, &o->graph));
}
static void job_mem_alloc(void *a) {
  struct op *o = a;
  o->p = NULL;
  op_done(o, gcap_mem_alloc(o->ctx, 64, &o->p));
}
static void job_mem_free(void *a) {
  struct op *o = a;
  op_done(o, gcap_mem_free(o->ctx, o->p));
}
static void job_stream_sync(void *a) {
  struct op *o = a;
  op_done(o, gcap_stream_synchronize(o->s));
}
static void job_context_sync(void *a) {
  struct op *o = a;
  op_done(o, gcap_context_synchronize(o->ctx));
}
static void job_memset(void *a) {
  struct op *o = a;
  op_done(o, gcap_memset_async(o->s, o->p, 0x5a, 16));
}

/* Runs one op on r and returns its status. */
static gcap_status on(struct runner *r, job_fn job, struct op *o) {
  runner_do(r, job, o);
  return o->st;
}

/* ------------------------------------------------------------------ helpers */

static gcap_capture_status capture_status(gcap_stream *s) {
  gcap_capture_status st = (gcap_capture_status)-1;
  assert_ok(gcap_stream_is_capturing(s, &st));
  return st;
}

static uint64_t capture_id(gcap_stream *s) {
  gcap_capture_info info;
  assert_ok(gcap_stream_get_capture_info(s, &info));
  assert_int_not_equal(info.status, GCAP_CAPTURE_STATUS_NONE);
  assert_true(info.id != 0);
  return info.id;
}

static gcap_graph *capture_graph(gcap_stream *s) {
  gcap_capture_info info;
  assert_ok(gcap_stream_get_capture_info(s, &info));
  assert_non_null(info.graph);
  return info.graph;
}

/* The thread number a first-offender message names ("... on thread <n>: ..."). */
static unsigned offender_thread(const char *msg) {
  const char *at = strstr(msg, " on thread ");
  if (!at) {
    print_error("message \"%s\" names no thread\n", msg);
    fail();
  }
  char *end = NULL;
  unsigned long n = strtoul(at + strlen(" on thread "), &end, 10);
  assert_true(end != at + strlen(" on thread "));
  assert_true(*end == ':');
  assert_true(n >= 1 && n < 100000);
  return (unsigned)n;
}

/* Ends the capture of s expecting `expected`; destroys a returned graph. The end's message is left as it is. */
static void end_expect(gcap_stream *s, gcap_status expected) {
  gcap_graph *g = (gcap_graph *)(uintptr_t)1;
  assert_status(gcap_stream_end_capture(s, &g), expected);
  if (expected == GCAP_SUCCESS) {
    assert_non_null(g);
    gcap_graph_destroy(g);
  } else {
    assert_null(g);
  }
}

static void set_mode(gcap_capture_mode m) {
  gcap_capture_mode x = m;
  assert_ok(gcap_thread_exchange_capture_mode(&x));
}

/* Reads `bytes` of device memory at d into out (outside capture). */
static void read_device(gcap_context *ctx, void *out, const void *d, size_t bytes) {
  assert_ok(gcap_memcpy(ctx, out, d, bytes, GCAP_MEMCPY_DEVICE_TO_HOST));
}

static void assert_bytes(const uint8_t *p, uint8_t v, size_t n) {
  for (size_t i = 0; i < n; i++) {
    if (p[i] != v) {
      print_error("byte %zu is 0x%02x, expected 0x%02x\n", i, p[i], v);
      fail();
    }
  }
}

/* A simulated kernel: x[i] = v for i < n. Params: uint32_t *x, uint32_t v, uint32_t n. */
static void fill_sim(const gcap_sim_thread *t, void *const *args) {
  uint32_t *x, v, n;
  memcpy(&x, args[0], sizeof x);
  memcpy(&v, args[1], sizeof v);
  memcpy(&n, args[2], sizeof n);
  uint32_t i = t->block_idx.x * t->block_dim.x + t->thread_idx.x;
  if (i < n) x[i] = v;
}

static const size_t fill_sizes[] = {sizeof(uint32_t *), sizeof(uint32_t), sizeof(uint32_t)};

static gcap_module_desc fill_desc(const gcap_kernel_def *defs) {
  gcap_module_desc d = {.image = NULL, .image_size = 0, .kernels = defs, .num_kernels = 1};
  return d;
}

static gcap_module *load_fill(gcap_context *ctx, const char *name) {
  const gcap_kernel_def defs[] = {{.name = name, .sim_fn = fill_sim, .num_params = 3, .param_sizes = fill_sizes}};
  gcap_module_desc d = fill_desc(defs);
  gcap_module *m = NULL;
  assert_ok(test_module_load(ctx, &d, &m));
  return m;
}

static void count_cb(void *p) { (*(int *)p)++; }

/* ------------------------------------------------------------------ rules.md#capture-prohibition */

struct r7_row {
  gcap_capture_mode thread_mode; /* the calling thread's mode */
  gcap_capture_mode capture_mode;
  bool own;        /* the calling thread began the capture */
  bool prohibited; /* rules.md#capture-prohibition, written out by hand */
};

static const struct r7_row r7_rows[] = {
    {GCAP_CAPTURE_MODE_GLOBAL, GCAP_CAPTURE_MODE_GLOBAL, true, true},
    {GCAP_CAPTURE_MODE_GLOBAL, GCAP_CAPTURE_MODE_THREAD_LOCAL, true, true},
    {GCAP_CAPTURE_MODE_GLOBAL, GCAP_CAPTURE_MODE_RELAXED, true, false},
    {GCAP_CAPTURE_MODE_THREAD_LOCAL, GCAP_CAPTURE_MODE_GLOBAL, true, true},
    {GCAP_CAPTURE_MODE_THREAD_LOCAL, GCAP_CAPTURE_MODE_THREAD_LOCAL, true, true},
    {GCAP_CAPTURE_MODE_THREAD_LOCAL, GCAP_CAPTURE_MODE_RELAXED, true, false},
    {GCAP_CAPTURE_MODE_RELAXED, GCAP_CAPTURE_MODE_GLOBAL, true, false},
    {GCAP_CAPTURE_MODE_RELAXED, GCAP_CAPTURE_MODE_THREAD_LOCAL, true, false},
    {GCAP_CAPTURE_MODE_RELAXED, GCAP_CAPTURE_MODE_RELAXED, true, false},
    {GCAP_CAPTURE_MODE_GLOBAL, GCAP_CAPTURE_MODE_GLOBAL, false, true},
    {GCAP_CAPTURE_MODE_GLOBAL, GCAP_CAPTURE_MODE_THREAD_LOCAL, false, false},
    {GCAP_CAPTURE_MODE_GLOBAL, GCAP_CAPTURE_MODE_RELAXED, false, false},
    {GCAP_CAPTURE_MODE_THREAD_LOCAL, GCAP_CAPTURE_MODE_GLOBAL, false, false},
    {GCAP_CAPTURE_MODE_THREAD_LOCAL, GCAP_CAPTURE_MODE_THREAD_LOCAL, false, false},
    {GCAP_CAPTURE_MODE_THREAD_LOCAL, GCAP_CAPTURE_MODE_RELAXED, false, false},
    {GCAP_CAPTURE_MODE_RELAXED, GCAP_CAPTURE_MODE_GLOBAL, false, false},
    {GCAP_CAPTURE_MODE_RELAXED, GCAP_CAPTURE_MODE_THREAD_LOCAL, false, false},
    {GCAP_CAPTURE_MODE_RELAXED, GCAP_CAPTURE_MODE_RELAXED, false, false},
};

static const char *const mode_names[] = {"GLOBAL", "THREAD_LOCAL", "RELAXED"};

/*
 * For every (thread mode, capture mode, own/other) combination: whether gcap_mem_alloc is
 * prohibited, and that exactly the prohibiting capture is invalidated. Each row also has a
 * RELAXED bystander capture on the other thread of the pair, which never prohibits and must
 * stay ACTIVE. An invalidated capture no longer prohibits (only ACTIVE ones do).
 */
static void test_capture_prohibition_predicate_table(void **state) {
  (void)state;
  for (size_t i = 0; i < sizeof r7_rows / sizeof r7_rows[0]; i++) {
    const struct r7_row *row = &r7_rows[i];
    gcap_context *ctx = test_context_create();
    gcap_stream *target = NULL, *bystander = NULL;
    assert_ok(gcap_stream_create(ctx, &target));
    assert_ok(gcap_stream_create(ctx, &bystander));
    struct runner caller, other;
    runner_start(&caller);
    runner_start(&other);
    struct runner *target_owner = row->own ? &caller : &other;
    struct runner *bystander_owner = row->own ? &other : &caller;

    struct op o = {.ctx = ctx, .s = target, .mode = row->capture_mode};
    assert_ok(on(target_owner, job_begin, &o));
    o = (struct op){.ctx = ctx, .s = bystander, .mode = GCAP_CAPTURE_MODE_RELAXED};
    assert_ok(on(bystander_owner, job_begin, &o));

    o = (struct op){.mode = row->thread_mode};
    assert_ok(on(&caller, job_exchange_mode, &o));
    assert_int_equal(o.mode, GCAP_CAPTURE_MODE_GLOBAL); /* a new thread starts in GLOBAL */

    uint64_t id = capture_id(target);
    struct op a = {.ctx = ctx};
    gcap_status st = on(&caller, job_mem_alloc, &a);
    if (row->prohibited) {
      if (st != GCAP_ERROR_STREAM_CAPTURE_UNSUPPORTED) {
        print_error("row %zu (thread %s, capture %s, %s): gcap_mem_alloc returned %s, expected 900 (%s)\n", i,
                    mode_names[row->thread_mode], mode_names[row->capture_mode], row->own ? "own" : "other",
                    gcap_status_name(st), a.msg);
        fail();
      }
      assert_null(a.p);
      assert_non_null(strstr(a.msg, "gcap_mem_alloc"));
      assert_non_null(strstr(a.msg, "not permitted"));
      char want[64];
      snprintf(want, sizeof want, "capture %" PRIu64, id);
      assert_non_null(strstr(a.msg, want));
      assert_int_equal(capture_status(target), GCAP_CAPTURE_STATUS_INVALIDATED);
      /* The invalidated capture no longer prohibits anything. */
      assert_ok(on(&caller, job_mem_alloc, &a));
      assert_non_null(a.p);
    } else {
      if (st != GCAP_SUCCESS) {
        print_error("row %zu (thread %s, capture %s, %s): gcap_mem_alloc returned %s, expected SUCCESS (%s)\n", i,
                    mode_names[row->thread_mode], mode_names[row->capture_mode], row->own ? "own" : "other",
                    gcap_status_name(st), a.msg);
        fail();
      }
      assert_non_null(a.p);
      assert_string_equal(a.msg, "");
      assert_int_equal(capture_status(target), GCAP_CAPTURE_STATUS_ACTIVE);
    }
    assert_int_equal(capture_status(bystander), GCAP_CAPTURE_STATUS_ACTIVE);
    assert_ok(on(&caller, job_mem_free, &a));

    o = (struct op){.s = target};
    assert_status(on(target_owner, job_end, &o),
                  row->prohibited ? GCAP_ERROR_STREAM_CAPTURE_INVALIDATED : GCAP_SUCCESS);
    if (row->prohibited) assert_null(o.graph);
    else assert_int_equal(gcap_graph_node_count(o.graph), 0);
    gcap_graph_destroy(o.graph);
    o = (struct op){.s = bystander};
    assert_ok(on(bystander_owner, job_end, &o));
    gcap_graph_destroy(o.graph);

    runner_stop(&caller);
    runner_stop(&other);
    gcap_context_destroy(ctx);
  }
}

/* Both an own capture and another thread's capture at once: the two halves of the prohibition
 * (rules.md#capture-prohibition, rules.md#capture-unsafe-invalidates) together. */
static void test_capture_prohibition_predicate_own_and_other_together(void **state) {
  (void)state;
  for (int tm = 0; tm <= 2; tm++) {
    for (int own_mode = 0; own_mode <= 2; own_mode++) {
      for (int other_mode = 0; other_mode <= 2; other_mode++) {
        gcap_context *ctx = test_context_create();
        gcap_stream *mine = NULL, *theirs = NULL;
        assert_ok(gcap_stream_create(ctx, &mine));
        assert_ok(gcap_stream_create(ctx, &theirs));
        struct runner caller, other;
        runner_start(&caller);
        runner_start(&other);
        struct op o = {.s = mine, .mode = (gcap_capture_mode)own_mode};
        assert_ok(on(&caller, job_begin, &o));
        o = (struct op){.s = theirs, .mode = (gcap_capture_mode)other_mode};
        assert_ok(on(&other, job_begin, &o));
        o = (struct op){.mode = (gcap_capture_mode)tm};
        assert_ok(on(&caller, job_exchange_mode, &o));

        bool own_prohibits = tm != GCAP_CAPTURE_MODE_RELAXED && own_mode != GCAP_CAPTURE_MODE_RELAXED;
        bool other_prohibits = tm == GCAP_CAPTURE_MODE_GLOBAL && other_mode == GCAP_CAPTURE_MODE_GLOBAL;
        struct op a = {.ctx = ctx};
        gcap_status st = on(&caller, job_mem_alloc, &a);
        bool prohibited = own_prohibits || other_prohibits;
        if (st != (prohibited ? GCAP_ERROR_STREAM_CAPTURE_UNSUPPORTED : GCAP_SUCCESS)) {
          print_error("thread %s, own %s, other %s: gcap_mem_alloc returned %s (%s)\n", mode_names[tm],
                      mode_names[own_mode], mode_names[other_mode], gcap_status_name(st), a.msg);
          fail();
        }
        assert_int_equal(capture_status(mine),
                         own_prohibits ? GCAP_CAPTURE_STATUS_INVALIDATED : GCAP_CAPTURE_STATUS_ACTIVE);
        assert_int_equal(capture_status(theirs),
                         other_prohibits ? GCAP_CAPTURE_STATUS_INVALIDATED : GCAP_CAPTURE_STATUS_ACTIVE);
        if (a.p) assert_ok(on(&caller, job_mem_free, &a));

        o = (struct op){.s = mine};
        assert_status(on(&caller, job_end, &o), own_prohibits ? GCAP_ERROR_STREAM_CAPTURE_INVALIDATED : GCAP_SUCCESS);
        gcap_graph_destroy(o.graph);
        o = (struct op){.s = theirs};
        assert_status(on(&other, job_end, &o), other_prohibits ? GCAP_ERROR_STREAM_CAPTURE_INVALIDATED : GCAP_SUCCESS);
        gcap_graph_destroy(o.graph);
        runner_stop(&caller);
        runner_stop(&other);
        gcap_context_destroy(ctx);
      }
    }
  }
}

/* ------------------------------------------------------------------ rules.md#capture-invalidation */

/* Every stream-ordered call on an invalidated member: 901, no node, the first offence named. */
static void assert_poisoned(gcap_stream *s, void *d, gcap_kernel *k, gcap_event *e_rec, gcap_event *e_wait,
                            const char *first) {
  uint8_t host[16] = {0};
  int calls = 0;
  uint32_t *x = d, v = 3, n = 4;
  void *args[] = {&x, &v, &n};
  assert_status(gcap_memcpy_async(s, d, host, sizeof host, GCAP_MEMCPY_HOST_TO_DEVICE),
                GCAP_ERROR_STREAM_CAPTURE_INVALIDATED);
  test_assert_message_contains(first);
  test_assert_message_contains("gcap_memcpy_async");
  assert_status(gcap_memset_async(s, d, 1, 16), GCAP_ERROR_STREAM_CAPTURE_INVALIDATED);
  test_assert_message_contains(first);
  assert_status(gcap_memset_d16_async(s, d, 1, 8), GCAP_ERROR_STREAM_CAPTURE_INVALIDATED);
  test_assert_message_contains(first);
  assert_status(gcap_memset_d32_async(s, d, 1, 4), GCAP_ERROR_STREAM_CAPTURE_INVALIDATED);
  test_assert_message_contains(first);
  if (k) {
    assert_status(gcap_launch_kernel(s, k, GCAP_DIM3(1, 1, 1), GCAP_DIM3(4, 1, 1), 0, args),
                  GCAP_ERROR_STREAM_CAPTURE_INVALIDATED);
    test_assert_message_contains(first);
  }
  assert_status(gcap_launch_host_func(s, count_cb, &calls), GCAP_ERROR_STREAM_CAPTURE_INVALIDATED);
  test_assert_message_contains(first);
  assert_status(gcap_event_record(e_rec, s), GCAP_ERROR_STREAM_CAPTURE_INVALIDATED);
  test_assert_message_contains(first);
  assert_status(gcap_stream_wait_event(s, e_wait), GCAP_ERROR_STREAM_CAPTURE_INVALIDATED);
  test_assert_message_contains(first);
  assert_int_equal(calls, 0);
}

static void test_capture_invalidation_poisons_sequence(void **state) {
  (void)state;
  gcap_context *ctx = test_context_create();
  gcap_stream *s0 = NULL, *s1 = NULL;
  gcap_event *e = NULL, *e2 = NULL, *never = NULL;
  assert_ok(gcap_stream_create(ctx, &s0));
  assert_ok(gcap_stream_create(ctx, &s1));
  assert_ok(gcap_event_create(ctx, &e));
  assert_ok(gcap_event_create(ctx, &e2));
  assert_ok(gcap_event_create(ctx, &never));
  void *d = NULL;
  assert_ok(gcap_mem_alloc(ctx, 256, &d));
  gcap_module *m = load_fill(ctx, "fill");
  gcap_kernel *k = NULL;
  assert_ok(gcap_module_get_kernel(m, "fill", &k));

  assert_ok(gcap_memset_async(s0, d, 0, 256));
  assert_ok(gcap_stream_synchronize(s0));
  assert_ok(gcap_stream_begin_capture(s0, GCAP_CAPTURE_MODE_GLOBAL));
  uint64_t id = capture_id(s0);
  gcap_graph *g = capture_graph(s0);
  assert_ok(gcap_memset_async(s0, d, 1, 64));
  assert_ok(gcap_event_record(e, s0));
  assert_ok(gcap_stream_wait_event(s1, e)); /* s1 joins */
  assert_ok(gcap_memset_async(s1, (char *)d + 64, 2, 64));
  assert_int_equal(capture_id(s1), id);
  assert_int_equal(gcap_graph_node_count(g), 2);

  /* The offence is on the non-origin member s1. */
  assert_status(gcap_stream_synchronize(s1), GCAP_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  test_assert_message_contains("gcap_stream_synchronize");
  assert_int_equal(capture_status(s0), GCAP_CAPTURE_STATUS_INVALIDATED);
  assert_int_equal(capture_status(s1), GCAP_CAPTURE_STATUS_INVALIDATED);

  char first[256];
  snprintf(first, sizeof first, "capture %" PRIu64 " was invalidated by gcap_stream_synchronize(stream %p) on thread ",
           id, (void *)s1);
  assert_poisoned(s0, d, k, e2, never, first);
  test_assert_message_contains("STREAM_CAPTURE_UNSUPPORTED");
  unsigned n = offender_thread(gcap_last_error_message());
  assert_poisoned(s1, d, k, e2, never, first);
  assert_int_equal(gcap_graph_node_count(g), 2);

  /* Second offences: they fail, but the first offence stays the one reported. */
  assert_status(gcap_stream_query(s0), GCAP_ERROR_STREAM_CAPTURE_INVALIDATED);
  test_assert_message_contains(first);
  assert_status(gcap_memset_async(s0, d, 0, 1u << 20), GCAP_ERROR_INVALID_VALUE); /* its own argument error */
  assert_status(gcap_launch_host_func(s1, NULL, NULL), GCAP_ERROR_INVALID_VALUE);
  void *p = NULL;
  assert_ok(gcap_mem_alloc(ctx, 16, &p)); /* an invalidated capture prohibits nothing */
  assert_ok(gcap_mem_free(ctx, p));
  gcap_graph *none = (gcap_graph *)(uintptr_t)1;
  assert_status(gcap_stream_end_capture(s1, &none), GCAP_ERROR_STREAM_CAPTURE_UNMATCHED);
  assert_null(none);
  assert_status(gcap_memset_async(s1, d, 1, 16), GCAP_ERROR_STREAM_CAPTURE_INVALIDATED);
  test_assert_message_contains(first);
  assert_null(strstr(gcap_last_error_message(), "gcap_memset_async(stream"));
  assert_null(strstr(gcap_last_error_message(), "gcap_launch_host_func("));
  assert_int_equal(offender_thread(gcap_last_error_message()), n);
  assert_int_equal(gcap_graph_node_count(g), 2);

  /* Ending on the origin terminates it; the members work normally again. */
  gcap_graph *out = (gcap_graph *)(uintptr_t)1;
  assert_status(gcap_stream_end_capture(s0, &out), GCAP_ERROR_STREAM_CAPTURE_INVALIDATED);
  assert_null(out);
  test_assert_message_contains(first);
  test_assert_message_contains("STREAM_CAPTURE_UNSUPPORTED");
  assert_int_equal(capture_status(s0), GCAP_CAPTURE_STATUS_NONE);
  assert_int_equal(capture_status(s1), GCAP_CAPTURE_STATUS_NONE);
  assert_ok(gcap_stream_synchronize(s0));
  assert_ok(gcap_stream_synchronize(s1));
  assert_ok(gcap_stream_query(s0));
  assert_ok(gcap_stream_query(s1));
  test_assert_message_empty();
  /* Nothing captured ran. */
  uint8_t back[256];
  read_device(ctx, back, d, sizeof back);
  assert_bytes(back, 0, sizeof back);
  gcap_context_destroy(ctx);
}

/* The main test thread was the first thread to call gcap in this process, so it is thread 1. */
static void test_capture_invalidation_thread_number_of_first_gcap_thread_is_1(void **state) {
  (void)state;
  gcap_context *ctx = test_context_create();
  gcap_stream *s = NULL;
  assert_ok(gcap_stream_create(ctx, &s));
  assert_ok(gcap_stream_begin_capture(s, GCAP_CAPTURE_MODE_GLOBAL));
  assert_status(gcap_stream_query(s), GCAP_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  assert_status(gcap_stream_end_capture(s, &(gcap_graph *){NULL}), GCAP_ERROR_STREAM_CAPTURE_INVALIDATED);
  test_assert_message_contains(") on thread 1: STREAM_CAPTURE_UNSUPPORTED");
  gcap_context_destroy(ctx);
}

/* The exact shape: "capture <id> was invalidated by <fn>(<kind> 0x...) on thread <n>: <STATUS>[ (it would have been
 * node <k>)]". */
static void test_capture_invalidation_first_offender_message_format(void **state) {
  (void)state;
  gcap_context *ctx = test_context_create();
  gcap_stream *s = NULL;
  gcap_event *e = NULL;
  assert_ok(gcap_stream_create(ctx, &s));
  assert_ok(gcap_event_create(ctx, &e));
  void *d = NULL;
  assert_ok(gcap_mem_alloc(ctx, 256, &d));
  char want[512];

  /* A synchronize: no node index. */
  assert_ok(gcap_stream_begin_capture(s, GCAP_CAPTURE_MODE_GLOBAL));
  uint64_t id = capture_id(s);
  assert_ok(gcap_memset_async(s, d, 1, 16));
  assert_status(gcap_stream_synchronize(s), GCAP_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  assert_status(gcap_memset_async(s, d, 1, 16), GCAP_ERROR_STREAM_CAPTURE_INVALIDATED);
  unsigned me = offender_thread(gcap_last_error_message());
  snprintf(want, sizeof want,
           "gcap_memset_async: capture %" PRIu64
           " was invalidated by gcap_stream_synchronize(stream %p) on thread %u: STREAM_CAPTURE_UNSUPPORTED",
           id, (void *)s, me);
  if (strncmp(gcap_last_error_message(), want, strlen(want)) != 0) {
    print_error("message \"%s\" does not start with \"%s\"\n", gcap_last_error_message(), want);
    fail();
  }
  assert_null(strstr(gcap_last_error_message(), "it would have been node"));
  assert_status(gcap_stream_end_capture(s, &(gcap_graph *){NULL}), GCAP_ERROR_STREAM_CAPTURE_INVALIDATED);
  test_assert_message_contains(want + strlen("gcap_memset_async: "));
  test_assert_message_contains("gcap_stream_end_capture");

  /* A stream-ordered offender: the node it would have been. */
  assert_ok(gcap_stream_begin_capture(s, GCAP_CAPTURE_MODE_GLOBAL));
  uint64_t id2 = capture_id(s);
  assert_true(id2 > id);
  assert_ok(gcap_memset_async(s, d, 1, 16));
  assert_ok(gcap_memset_async(s, d, 2, 16));
  assert_status(gcap_memset_async(s, (char *)d + 250, 3, 16), GCAP_ERROR_INVALID_VALUE);
  assert_status(gcap_memset_async(s, d, 1, 16), GCAP_ERROR_STREAM_CAPTURE_INVALIDATED);
  snprintf(want, sizeof want,
           "capture %" PRIu64 " was invalidated by gcap_memset_async(stream %p) on thread %u: INVALID_VALUE"
           " (it would have been node 2)",
           id2, (void *)s, me);
  test_assert_message_contains(want);
  assert_status(gcap_stream_end_capture(s, &(gcap_graph *){NULL}), GCAP_ERROR_STREAM_CAPTURE_INVALIDATED);
  test_assert_message_contains(want);

  /* The first node: node 0. */
  assert_ok(gcap_stream_begin_capture(s, GCAP_CAPTURE_MODE_RELAXED));
  uint64_t id3 = capture_id(s);
  assert_status(gcap_launch_host_func(s, NULL, NULL), GCAP_ERROR_INVALID_VALUE);
  assert_status(gcap_stream_end_capture(s, &(gcap_graph *){NULL}), GCAP_ERROR_STREAM_CAPTURE_INVALIDATED);
  snprintf(want, sizeof want,
           "capture %" PRIu64 " was invalidated by gcap_launch_host_func(stream %p) on thread %u: INVALID_VALUE"
           " (it would have been node 0)",
           id3, (void *)s, me);
  test_assert_message_contains(want);

  /* An event offender. */
  assert_ok(gcap_stream_begin_capture(s, GCAP_CAPTURE_MODE_THREAD_LOCAL));
  uint64_t id4 = capture_id(s);
  assert_ok(gcap_memset_async(s, d, 1, 16));
  assert_ok(gcap_event_record(e, s));
  assert_status(gcap_event_query(e), GCAP_ERROR_CAPTURED_EVENT);
  assert_status(gcap_stream_end_capture(s, &(gcap_graph *){NULL}), GCAP_ERROR_STREAM_CAPTURE_INVALIDATED);
  snprintf(want, sizeof want,
           "capture %" PRIu64 " was invalidated by gcap_event_query(event %p) on thread %u: CAPTURED_EVENT", id4,
           (void *)e, me);
  test_assert_message_contains(want);
  assert_ok(gcap_event_record(e, s)); /* normal again */

  /* A context offender. */
  assert_ok(gcap_stream_begin_capture(s, GCAP_CAPTURE_MODE_GLOBAL));
  uint64_t id5 = capture_id(s);
  assert_status(gcap_context_synchronize(ctx), GCAP_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  assert_status(gcap_stream_end_capture(s, &(gcap_graph *){NULL}), GCAP_ERROR_STREAM_CAPTURE_INVALIDATED);
  snprintf(want, sizeof want,
           "capture %" PRIu64 " was invalidated by gcap_context_synchronize(ctx %p) on thread %u: "
           "STREAM_CAPTURE_UNSUPPORTED",
           id5, (void *)ctx, me);
  test_assert_message_contains(want);

  /* An offender on another thread: its own number, not ours. */
  assert_ok(gcap_stream_begin_capture(s, GCAP_CAPTURE_MODE_GLOBAL));
  uint64_t id6 = capture_id(s);
  struct runner r;
  runner_start(&r);
  struct op a = {.ctx = ctx};
  assert_status(on(&r, job_mem_alloc, &a), GCAP_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  runner_stop(&r);
  assert_status(gcap_stream_end_capture(s, &(gcap_graph *){NULL}), GCAP_ERROR_STREAM_CAPTURE_INVALIDATED);
  snprintf(want, sizeof want, "capture %" PRIu64 " was invalidated by gcap_mem_alloc(ctx %p) on thread ", id6,
           (void *)ctx);
  test_assert_message_contains(want);
  test_assert_message_contains(": STREAM_CAPTURE_UNSUPPORTED");
  unsigned theirs = offender_thread(gcap_last_error_message());
  assert_int_not_equal(theirs, me);

  gcap_context_destroy(ctx);
}

/* ------------------------------------------------------------------ rules.md#capture-conflicts */

static void test_capture_conflicts_stream_sync_query_of_capturing_stream(void **state) {
  (void)state;
  gcap_context *ctx = test_context_create();
  gcap_stream *s = NULL, *fork = NULL;
  gcap_event *e = NULL;
  assert_ok(gcap_stream_create(ctx, &s));
  assert_ok(gcap_stream_create(ctx, &fork));
  assert_ok(gcap_event_create(ctx, &e));
  void *d = NULL;
  assert_ok(gcap_mem_alloc(ctx, 64, &d));
  for (int cm = 0; cm <= 2; cm++) {
    for (int tm = 0; tm <= 2; tm++) {
      for (int query = 0; query <= 1; query++) {
        for (int on_member = 0; on_member <= 1; on_member++) {
          gcap_status (*fn)(gcap_stream *) = query ? gcap_stream_query : gcap_stream_synchronize;
          const char *name = query ? "gcap_stream_query" : "gcap_stream_synchronize";
          set_mode((gcap_capture_mode)tm);
          assert_ok(gcap_stream_begin_capture(s, (gcap_capture_mode)cm));
          assert_ok(gcap_memset_async(s, d, 1, 16));
          gcap_stream *target = s;
          if (on_member) {
            assert_ok(gcap_event_record(e, s));
            assert_ok(gcap_stream_wait_event(fork, e));
            target = fork;
          }
          gcap_status st = fn(target);
          if (st != GCAP_ERROR_STREAM_CAPTURE_UNSUPPORTED) {
            print_error("capture %s, thread %s, %s on %s: %s, expected 900 (%s)\n", mode_names[cm], mode_names[tm],
                        name, on_member ? "member" : "origin", gcap_status_name(st), gcap_last_error_message());
            fail();
          }
          test_assert_message_contains(name);
          assert_int_equal(capture_status(s), GCAP_CAPTURE_STATUS_INVALIDATED);
          assert_int_equal(capture_status(fork),
                           on_member ? GCAP_CAPTURE_STATUS_INVALIDATED : GCAP_CAPTURE_STATUS_NONE);
          /* On an already invalidated member: INVALIDATED. */
          assert_status(fn(target), GCAP_ERROR_STREAM_CAPTURE_INVALIDATED);
          assert_status(fn(s), GCAP_ERROR_STREAM_CAPTURE_INVALIDATED);
          set_mode(GCAP_CAPTURE_MODE_GLOBAL);
          end_expect(s, GCAP_ERROR_STREAM_CAPTURE_INVALIDATED);
          test_assert_message_contains(name);
          assert_int_equal(capture_status(s), GCAP_CAPTURE_STATUS_NONE);
          assert_int_equal(capture_status(fork), GCAP_CAPTURE_STATUS_NONE);
          assert_ok(fn(s));
          assert_ok(fn(fork));
        }
      }
    }
  }
  gcap_context_destroy(ctx);
}

static void test_capture_conflicts_captured_event_sync_query(void **state) {
  (void)state;
  gcap_context *ctx = test_context_create();
  gcap_stream *s = NULL;
  gcap_event *e = NULL;
  assert_ok(gcap_stream_create(ctx, &s));
  assert_ok(gcap_event_create(ctx, &e));
  void *d = NULL;
  assert_ok(gcap_mem_alloc(ctx, 64, &d));
  const gcap_capture_mode thread_modes[] = {GCAP_CAPTURE_MODE_GLOBAL, GCAP_CAPTURE_MODE_RELAXED};
  for (int cm = 0; cm <= 2; cm++) {
    for (int t = 0; t < 2; t++) {
      for (int query = 0; query <= 1; query++) {
        gcap_status (*fn)(gcap_event *) = query ? gcap_event_query : gcap_event_synchronize;
        const char *name = query ? "gcap_event_query" : "gcap_event_synchronize";
        set_mode(thread_modes[t]);
        assert_ok(gcap_stream_begin_capture(s, (gcap_capture_mode)cm));
        assert_ok(gcap_memset_async(s, d, 1, 16));
        assert_ok(gcap_event_record(e, s));
        gcap_status st = fn(e);
        if (st != GCAP_ERROR_CAPTURED_EVENT) {
          print_error("capture %s, thread %s, %s: %s, expected 907 (%s)\n", mode_names[cm], mode_names[thread_modes[t]],
                      name, gcap_status_name(st), gcap_last_error_message());
          fail();
        }
        test_assert_message_contains(name);
        assert_int_equal(capture_status(s), GCAP_CAPTURE_STATUS_INVALIDATED);
        set_mode(GCAP_CAPTURE_MODE_GLOBAL);
        end_expect(s, GCAP_ERROR_STREAM_CAPTURE_INVALIDATED);
        char want[256];
        snprintf(want, sizeof want, "%s(event %p) on thread ", name, (void *)e);
        test_assert_message_contains(want);
        test_assert_message_contains("CAPTURED_EVENT");
        assert_int_equal(capture_status(s), GCAP_CAPTURE_STATUS_NONE);
        assert_ok(gcap_event_record(e, s));    /* outside capture: a normal event again */
        assert_ok(gcap_stream_synchronize(s)); /* so that a query finds the record done on a GPU too */
        assert_ok(fn(e));
      }
    }
  }
  gcap_context_destroy(ctx);
}

/*
 * gcap_context_synchronize from a thread that captures nothing, in RELAXED mode: 900, and every
 * capture of that context (whoever owns it, whatever its mode) is invalidated; a capture of
 * another context is not.
 */
static void test_capture_conflicts_context_synchronize_from_another_thread(void **state) {
  (void)state;
  gcap_context *ctx = test_context_create();
  gcap_context *ctx2 = test_context_create();
  gcap_stream *s1 = NULL, *s2 = NULL, *s3 = NULL;
  assert_ok(gcap_stream_create(ctx, &s1));
  assert_ok(gcap_stream_create(ctx, &s2));
  assert_ok(gcap_stream_create(ctx2, &s3));
  struct runner owner, syncer;
  runner_start(&owner);
  runner_start(&syncer);

  /* No capture yet: allowed. */
  struct op o = {.ctx = ctx};
  assert_ok(on(&syncer, job_context_sync, &o));

  assert_ok(gcap_stream_begin_capture(s1, GCAP_CAPTURE_MODE_GLOBAL));
  o = (struct op){.s = s2, .mode = GCAP_CAPTURE_MODE_THREAD_LOCAL};
  assert_ok(on(&owner, job_begin, &o));
  assert_ok(gcap_stream_begin_capture(s3, GCAP_CAPTURE_MODE_RELAXED));
  o = (struct op){.mode = GCAP_CAPTURE_MODE_RELAXED};
  assert_ok(on(&syncer, job_exchange_mode, &o));

  o = (struct op){.ctx = ctx};
  assert_status(on(&syncer, job_context_sync, &o), GCAP_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  assert_non_null(strstr(o.msg, "gcap_context_synchronize"));
  assert_int_equal(capture_status(s1), GCAP_CAPTURE_STATUS_INVALIDATED);
  assert_int_equal(capture_status(s2), GCAP_CAPTURE_STATUS_INVALIDATED);
  assert_int_equal(capture_status(s3), GCAP_CAPTURE_STATUS_ACTIVE);

  end_expect(s1, GCAP_ERROR_STREAM_CAPTURE_INVALIDATED);
  test_assert_message_contains("gcap_context_synchronize(ctx ");
  o = (struct op){.s = s2};
  assert_status(on(&owner, job_end, &o), GCAP_ERROR_STREAM_CAPTURE_INVALIDATED);
  assert_null(o.graph);
  assert_non_null(strstr(o.msg, "gcap_context_synchronize(ctx "));
  end_expect(s3, GCAP_SUCCESS);

  o = (struct op){.ctx = ctx};
  assert_ok(on(&syncer, job_context_sync, &o));
  assert_ok(gcap_context_synchronize(ctx));
  runner_stop(&owner);
  runner_stop(&syncer);
  gcap_context_destroy(ctx2);
  gcap_context_destroy(ctx);
}

/* ------------------------------------------------------------------ rules.md#capture-unsafe-calls */

struct unsafe_fx {
  gcap_context *ctx;
  gcap_stream *s;     /* captures */
  gcap_stream *other; /* never captures */
  gcap_event *normal; /* recorded outside capture */
  void *d;            /* a live device allocation */
  void *h;            /* a live page-locked host allocation */
  gcap_module *m;     /* a loaded module with kernel "fill" */
  void *got;          /* the output of an allocating call */
  gcap_module *got_module;
  uint8_t src[8], dst[8];
};

static gcap_status u_mem_alloc(struct unsafe_fx *f) { return gcap_mem_alloc(f->ctx, 64, &f->got); }
static gcap_status u_mem_free(struct unsafe_fx *f) { return gcap_mem_free(f->ctx, f->d); }
static gcap_status u_mem_free_null(struct unsafe_fx *f) { return gcap_mem_free(f->ctx, NULL); }
static gcap_status u_host_alloc(struct unsafe_fx *f) { return gcap_host_alloc(f->ctx, 64, &f->got); }
static gcap_status u_host_free(struct unsafe_fx *f) { return gcap_host_free(f->ctx, f->h); }
static gcap_status u_host_free_null(struct unsafe_fx *f) { return gcap_host_free(f->ctx, NULL); }
static gcap_status u_memcpy(struct unsafe_fx *f) {
  return gcap_memcpy(f->ctx, f->dst, f->src, sizeof f->dst, GCAP_MEMCPY_HOST_TO_HOST);
}
static gcap_status u_module_load(struct unsafe_fx *f) {
  const gcap_kernel_def defs[] = {{.name = "other", .sim_fn = fill_sim, .num_params = 3, .param_sizes = fill_sizes}};
  gcap_module_desc d = fill_desc(defs);
  return test_module_load(f->ctx, &d, &f->got_module);
}
static gcap_status u_module_unload(struct unsafe_fx *f) { return gcap_module_unload(f->m); }
static gcap_status u_stream_sync(struct unsafe_fx *f) { return gcap_stream_synchronize(f->other); }
static gcap_status u_stream_query(struct unsafe_fx *f) { return gcap_stream_query(f->other); }
static gcap_status u_event_sync(struct unsafe_fx *f) { return gcap_event_synchronize(f->normal); }
static gcap_status u_event_query(struct unsafe_fx *f) { return gcap_event_query(f->normal); }

enum obj_kind { OBJ_CTX, OBJ_STREAM_OTHER, OBJ_EVENT, OBJ_MODULE };

struct unsafe_call {
  const char *name;
  gcap_status (*fn)(struct unsafe_fx *f);
  enum obj_kind obj;
};

static const struct unsafe_call unsafe_calls[] = {
    {"gcap_mem_alloc", u_mem_alloc, OBJ_CTX},
    {"gcap_mem_free", u_mem_free, OBJ_CTX},
    {"gcap_mem_free", u_mem_free_null, OBJ_CTX},
    {"gcap_host_alloc", u_host_alloc, OBJ_CTX},
    {"gcap_host_free", u_host_free, OBJ_CTX},
    {"gcap_host_free", u_host_free_null, OBJ_CTX},
    {"gcap_memcpy", u_memcpy, OBJ_CTX},
    {"gcap_module_load", u_module_load, OBJ_CTX},
    {"gcap_module_unload", u_module_unload, OBJ_MODULE},
    {"gcap_stream_synchronize", u_stream_sync, OBJ_STREAM_OTHER},
    {"gcap_stream_query", u_stream_query, OBJ_STREAM_OTHER},
    {"gcap_event_synchronize", u_event_sync, OBJ_EVENT},
    {"gcap_event_query", u_event_query, OBJ_EVENT},
};

static void unsafe_setup(struct unsafe_fx *f) {
  memset(f, 0, sizeof *f);
  f->ctx = test_context_create();
  assert_ok(gcap_stream_create(f->ctx, &f->s));
  assert_ok(gcap_stream_create(f->ctx, &f->other));
  assert_ok(gcap_event_create(f->ctx, &f->normal));
  assert_ok(gcap_mem_alloc(f->ctx, 64, &f->d));
  assert_ok(gcap_host_alloc(f->ctx, 64, &f->h));
  f->m = load_fill(f->ctx, "fill");
  assert_ok(gcap_memset_async(f->other, f->d, 0, 64));
  assert_ok(gcap_event_record(f->normal, f->other));
  for (size_t i = 0; i < sizeof f->src; i++) f->src[i] = (uint8_t)(i + 1);
  memset(f->dst, 0xee, sizeof f->dst);
}

/* Each potentially unsafe call, prohibited by the caller's own GLOBAL or THREAD_LOCAL capture. */
static void test_capture_unsafe_calls_in_global_and_thread_local(void **state) {
  (void)state;
  const gcap_capture_mode modes[] = {GCAP_CAPTURE_MODE_GLOBAL, GCAP_CAPTURE_MODE_THREAD_LOCAL};
  for (size_t mi = 0; mi < 2; mi++) {
    for (size_t ci = 0; ci < sizeof unsafe_calls / sizeof unsafe_calls[0]; ci++) {
      const struct unsafe_call *c = &unsafe_calls[ci];
      struct unsafe_fx f;
      unsafe_setup(&f);
      assert_ok(gcap_stream_begin_capture(f.s, modes[mi]));
      uint64_t id = capture_id(f.s);
      f.got = (void *)&f; /* must be cleared by the refused call */
      f.got_module = (gcap_module *)(void *)&f;
      gcap_status st = c->fn(&f);
      if (st != GCAP_ERROR_STREAM_CAPTURE_UNSUPPORTED) {
        print_error("%s (row %zu) in a %s capture: %s, expected 900 (%s)\n", c->name, ci, mode_names[modes[mi]],
                    gcap_status_name(st), gcap_last_error_message());
        fail();
      }
      char want[256];
      snprintf(want, sizeof want,
               "%s: not permitted while stream %p is capturing in %s mode (capture %" PRIu64 " is now invalidated",
               c->name, (void *)f.s, mode_names[modes[mi]], id);
      test_assert_message_contains(want);
      assert_int_equal(capture_status(f.s), GCAP_CAPTURE_STATUS_INVALIDATED);
      if (c->fn == u_mem_alloc || c->fn == u_host_alloc) assert_null(f.got);
      if (c->fn == u_module_load) assert_null(f.got_module);

      gcap_graph *g = (gcap_graph *)(uintptr_t)1;
      assert_status(gcap_stream_end_capture(f.s, &g), GCAP_ERROR_STREAM_CAPTURE_INVALIDATED);
      assert_null(g);
      const void *obj = f.ctx;
      const char *kind = "ctx";
      if (c->obj == OBJ_STREAM_OTHER) obj = f.other, kind = "stream";
      if (c->obj == OBJ_EVENT) obj = f.normal, kind = "event";
      if (c->obj == OBJ_MODULE) obj = f.m, kind = "module";
      snprintf(want, sizeof want, "capture %" PRIu64 " was invalidated by %s(%s %p) on thread ", id, c->name, kind,
               obj);
      test_assert_message_contains(want);
      test_assert_message_contains("STREAM_CAPTURE_UNSUPPORTED");
      assert_null(strstr(gcap_last_error_message(), "it would have been node"));

      /* The refused call did nothing. */
      assert_bytes(f.dst, 0xee, sizeof f.dst);
      gcap_kernel *k = NULL;
      assert_ok(gcap_context_find_kernel(f.ctx, "fill", &k));
      assert_status(gcap_context_find_kernel(f.ctx, "other", &k), GCAP_ERROR_NOT_FOUND);
      assert_ok(gcap_module_unload(f.m));
      assert_ok(gcap_mem_free(f.ctx, f.d));  /* still live */
      assert_ok(gcap_host_free(f.ctx, f.h)); /* still live */
      /* And now, outside capture, the same call works. */
      if (c->fn == u_memcpy) {
        assert_ok(u_memcpy(&f));
        assert_memory_equal(f.dst, f.src, sizeof f.src);
      }
      gcap_context_destroy(f.ctx);
    }
  }
}

/* An event never recorded: its sync/query is allowed even while prohibited, and invalidates nothing. */
static void test_capture_unsafe_calls_never_recorded_event_allowed(void **state) {
  (void)state;
  gcap_context *ctx = test_context_create();
  gcap_stream *s = NULL;
  gcap_event *never = NULL;
  assert_ok(gcap_stream_create(ctx, &s));
  assert_ok(gcap_event_create(ctx, &never));
  for (int cm = 0; cm <= 1; cm++) {
    assert_ok(gcap_stream_begin_capture(s, (gcap_capture_mode)cm));
    assert_ok(gcap_event_query(never));
    test_assert_message_empty();
    assert_ok(gcap_event_synchronize(never));
    assert_int_equal(capture_status(s), GCAP_CAPTURE_STATUS_ACTIVE);
    end_expect(s, GCAP_SUCCESS);
  }
  gcap_context_destroy(ctx);
}

/* A potentially unsafe call that fails its own argument checks returns that error and invalidates nothing. */
static void test_capture_unsafe_calls_argument_errors_do_not_invalidate(void **state) {
  (void)state;
  struct unsafe_fx f;
  unsafe_setup(&f);
  for (int cm = 0; cm <= 1; cm++) {
    assert_ok(gcap_stream_begin_capture(f.s, (gcap_capture_mode)cm));
    void *p = (void *)&f;
    assert_status(gcap_mem_alloc(f.ctx, 0, &p), GCAP_ERROR_INVALID_VALUE);
    test_assert_message_contains("gcap_mem_alloc");
    assert_null(p);
    assert_status(gcap_mem_alloc(f.ctx, 16, NULL), GCAP_ERROR_INVALID_VALUE);
    assert_status(gcap_mem_alloc(NULL, 16, &p), GCAP_ERROR_INVALID_HANDLE);
    assert_status(gcap_host_alloc(f.ctx, 0, &p), GCAP_ERROR_INVALID_VALUE);
    assert_status(gcap_mem_free(f.ctx, (char *)f.d + 8), GCAP_ERROR_INVALID_VALUE); /* interior pointer */
    assert_status(gcap_mem_free(f.ctx, f.h), GCAP_ERROR_INVALID_VALUE);             /* host memory */
    assert_status(gcap_host_free(f.ctx, f.d), GCAP_ERROR_INVALID_VALUE);            /* device memory */
    assert_status(gcap_memcpy(f.ctx, f.dst, f.src, 8, (gcap_memcpy_kind)99), GCAP_ERROR_INVALID_VALUE);
    assert_status(gcap_memcpy(f.ctx, f.dst, f.d, 8, GCAP_MEMCPY_HOST_TO_DEVICE), GCAP_ERROR_INVALID_VALUE);
    assert_status(gcap_module_load(f.ctx, NULL, &f.got_module), GCAP_ERROR_INVALID_VALUE);
    assert_status(gcap_module_unload(NULL), GCAP_ERROR_INVALID_HANDLE);
    assert_status(gcap_stream_synchronize(NULL), GCAP_ERROR_INVALID_HANDLE);
    assert_status(gcap_stream_query(NULL), GCAP_ERROR_INVALID_HANDLE);
    assert_status(gcap_event_synchronize(NULL), GCAP_ERROR_INVALID_HANDLE);
    assert_status(gcap_event_query(NULL), GCAP_ERROR_INVALID_HANDLE);
    assert_status(gcap_context_synchronize(NULL), GCAP_ERROR_INVALID_HANDLE);
    assert_status(gcap_stream_is_capturing(f.s, NULL), GCAP_ERROR_INVALID_VALUE);
    assert_int_equal(capture_status(f.s), GCAP_CAPTURE_STATUS_ACTIVE);
    end_expect(f.s, GCAP_SUCCESS);
  }
  assert_bytes(f.dst, 0xee, sizeof f.dst);
  gcap_context_destroy(f.ctx);
}

/* ------------------------------------------------------------------ rules.md#capture-unsafe-invalidates */

/*
 * Another thread's potentially unsafe call is prohibited by (and invalidates) only GLOBAL
 * captures, and only while that thread is itself in GLOBAL mode. The owner holds a GLOBAL, a
 * THREAD_LOCAL and a RELAXED capture at once.
 */
static void test_capture_unsafe_invalidates_other_thread_global_only(void **state) {
  (void)state;
  for (int caller_mode = 0; caller_mode <= 2; caller_mode++) {
    gcap_context *ctx = test_context_create();
    gcap_stream *sg = NULL, *stl = NULL, *sr = NULL, *plain = NULL;
    assert_ok(gcap_stream_create(ctx, &sg));
    assert_ok(gcap_stream_create(ctx, &stl));
    assert_ok(gcap_stream_create(ctx, &sr));
    assert_ok(gcap_stream_create(ctx, &plain));
    struct runner owner, other;
    runner_start(&owner);
    runner_start(&other);
    struct op o = {.s = sg, .mode = GCAP_CAPTURE_MODE_GLOBAL};
    assert_ok(on(&owner, job_begin, &o));
    o = (struct op){.s = stl, .mode = GCAP_CAPTURE_MODE_THREAD_LOCAL};
    assert_ok(on(&owner, job_begin, &o));
    o = (struct op){.s = sr, .mode = GCAP_CAPTURE_MODE_RELAXED};
    assert_ok(on(&owner, job_begin, &o));
    o = (struct op){.mode = (gcap_capture_mode)caller_mode};
    assert_ok(on(&other, job_exchange_mode, &o));

    bool prohibited = caller_mode == GCAP_CAPTURE_MODE_GLOBAL;
    o = (struct op){.s = plain};
    assert_status(on(&other, job_stream_sync, &o), prohibited ? GCAP_ERROR_STREAM_CAPTURE_UNSUPPORTED : GCAP_SUCCESS);
    if (prohibited) {
      assert_non_null(strstr(o.msg, "gcap_stream_synchronize"));
      assert_non_null(strstr(o.msg, "GLOBAL mode"));
    } else {
      assert_string_equal(o.msg, "");
    }
    assert_int_equal(capture_status(sg), prohibited ? GCAP_CAPTURE_STATUS_INVALIDATED : GCAP_CAPTURE_STATUS_ACTIVE);
    assert_int_equal(capture_status(stl), GCAP_CAPTURE_STATUS_ACTIVE);
    assert_int_equal(capture_status(sr), GCAP_CAPTURE_STATUS_ACTIVE);

    /* A prohibited call in thread B makes thread A's GLOBAL end return 901. */
    o = (struct op){.s = sg};
    assert_status(on(&owner, job_end, &o), prohibited ? GCAP_ERROR_STREAM_CAPTURE_INVALIDATED : GCAP_SUCCESS);
    if (prohibited) {
      char want[160];
      snprintf(want, sizeof want, "gcap_stream_synchronize(stream %p) on thread ", (void *)plain);
      assert_non_null(strstr(o.msg, want));
    }
    gcap_graph_destroy(o.graph);
    o = (struct op){.s = stl};
    assert_ok(on(&owner, job_end, &o));
    gcap_graph_destroy(o.graph);
    o = (struct op){.s = sr};
    assert_ok(on(&owner, job_end, &o));
    gcap_graph_destroy(o.graph);
    runner_stop(&owner);
    runner_stop(&other);
    gcap_context_destroy(ctx);
  }
}

/* ------------------------------------------------------------------ rules.md#capture-allowed */

struct r25_job {
  gcap_stream *s;
  void *d;
  gcap_status st[3];
};

static void job_r25_async(void *a) {
  struct r25_job *j = a;
  j->st[0] = gcap_memset_async(j->s, j->d, 0x33, 8);
  gcap_capture_status cs;
  j->st[1] = gcap_stream_is_capturing(j->s, &cs);
  j->st[2] = cs == GCAP_CAPTURE_STATUS_NONE ? GCAP_SUCCESS : GCAP_ERROR_ILLEGAL_STATE;
}

static void test_capture_allowed_calls(void **state) {
  (void)state;
  gcap_context *ctx = test_context_create();
  gcap_stream *s = NULL, *s2 = NULL, *s3 = NULL;
  assert_ok(gcap_stream_create(ctx, &s));
  assert_ok(gcap_stream_create(ctx, &s2));
  assert_ok(gcap_stream_create(ctx, &s3));
  void *d = NULL, *d2 = NULL;
  assert_ok(gcap_mem_alloc(ctx, 64, &d));
  assert_ok(gcap_mem_alloc(ctx, 64, &d2));
  uint8_t host[64];
  memset(host, 0x44, sizeof host);
  gcap_module *m = load_fill(ctx, "fill");
  gcap_kernel *k = NULL;
  assert_ok(gcap_module_get_kernel(m, "fill", &k));
  gcap_graph *pre = NULL;
  gcap_exec *pre_x = NULL;
  assert_ok(gcap_graph_create(ctx, &pre));
  assert_ok(gcap_graph_instantiate(pre, 0, &pre_x));

  assert_ok(gcap_memset_async(s2, d, 0, 64));
  assert_ok(gcap_stream_synchronize(s2));
  assert_ok(gcap_stream_begin_capture(s, GCAP_CAPTURE_MODE_GLOBAL));
  uint64_t id = capture_id(s);
  assert_ok(gcap_memset_async(s, d, 1, 8));

  /* Async work on an unrelated stream, from the capturing thread. */
  int calls = 0;
  assert_ok(gcap_memcpy_async(s2, d2, host, 64, GCAP_MEMCPY_HOST_TO_DEVICE));
  assert_ok(gcap_memset_async(s2, (char *)d2 + 8, 0x55, 8));
  assert_ok(gcap_memset_d16_async(s2, (char *)d2 + 16, 0x6666, 4));
  assert_ok(gcap_memset_d32_async(s2, (char *)d2 + 24, 0x77777777u, 2));
  assert_ok(gcap_launch_host_func(s2, count_cb, &calls));
  uint32_t *x = (uint32_t *)d2 + 8, v = 0x11223344u, n = 2;
  void *args[] = {&x, &v, &n};
  assert_ok(gcap_launch_kernel(s2, k, GCAP_DIM3(1, 1, 1), GCAP_DIM3(2, 1, 1), 0, args));
  gcap_event *ev = NULL;
  assert_ok(gcap_event_create(ctx, &ev)); /* creating events and streams */
  gcap_stream *fresh = NULL;
  assert_ok(gcap_stream_create(ctx, &fresh));
  assert_ok(gcap_event_record(ev, s2));
  assert_ok(gcap_stream_wait_event(fresh, ev));

  /* Another capture; status queries. */
  assert_ok(gcap_stream_begin_capture(s3, GCAP_CAPTURE_MODE_GLOBAL));
  assert_true(capture_id(s3) != id);
  assert_int_equal(capture_status(s), GCAP_CAPTURE_STATUS_ACTIVE);
  assert_int_equal(capture_status(s2), GCAP_CAPTURE_STATUS_NONE);
  gcap_capture_info info;
  assert_ok(gcap_stream_get_capture_info(s2, &info));
  assert_int_equal(info.status, GCAP_CAPTURE_STATUS_NONE);

  /* The graph API on other graphs, and an exec of another graph launched on a non-capturing stream. */
  gcap_graph *g2 = NULL;
  assert_ok(gcap_graph_create(ctx, &g2));
  gcap_memset_node_params mp = {.dst = (char *)d2 + 40, .value = 0x99, .element_size = 1, .width = 8, .height = 1};
  gcap_node *node = NULL;
  assert_ok(gcap_graph_add_memset_node(g2, NULL, 0, &mp, &node));
  gcap_exec *x2 = NULL;
  assert_ok(gcap_graph_instantiate(g2, 0, &x2));
  assert_ok(gcap_exec_launch(x2, s2));
  gcap_graph_destroy(g2);
  gcap_exec_destroy(x2);
  gcap_exec_destroy(pre_x); /* void: never prohibited */
  gcap_graph_destroy(pre);

  /* Async work on an unrelated stream from another (GLOBAL) thread. */
  struct runner r;
  runner_start(&r);
  struct r25_job j = {.s = s2, .d = (char *)d2 + 48};
  runner_do(&r, job_r25_async, &j);
  runner_stop(&r);
  for (int i = 0; i < 3; i++) assert_ok(j.st[i]);

  assert_int_equal(capture_status(s), GCAP_CAPTURE_STATUS_ACTIVE);
  assert_int_equal(capture_status(s3), GCAP_CAPTURE_STATUS_ACTIVE);
  assert_ok(gcap_memset_async(s, d, 2, 8));
  gcap_graph *g = NULL;
  assert_ok(gcap_stream_end_capture(s, &g));
  assert_int_equal(gcap_graph_node_count(g), 2);
  assert_int_equal(gcap_graph_edge_count(g), 1);
  gcap_graph_destroy(g);
  end_expect(s3, GCAP_SUCCESS);

  /* Everything issued on s2 ran. */
  assert_ok(gcap_stream_synchronize(s2));
  assert_int_equal(calls, 1);
  uint8_t back[64];
  read_device(ctx, back, d2, 64);
  assert_bytes(back, 0x44, 8);
  assert_bytes(back + 8, 0x55, 8);
  assert_bytes(back + 16, 0x66, 8);
  assert_bytes(back + 24, 0x77, 8);
  if (test_on_sim()) { /* fill_sim ran; a stub writes nothing */
    uint32_t w[2];
    memcpy(w, back + 32, sizeof w);
    assert_int_equal(w[0], 0x11223344u);
    assert_int_equal(w[1], 0x11223344u);
  }
  assert_bytes(back + 40, 0x99, 8);
  assert_bytes(back + 48, 0x33, 8);
  /* The capture's work did not run eagerly. */
  read_device(ctx, back, d, 8);
  assert_bytes(back, 0, 8);
  gcap_context_destroy(ctx);
}

/* ------------------------------------------------------------------ rules.md#capture-unsupported-work */

static void test_capture_unsupported_work_exec_launch_into_capture(void **state) {
  (void)state;
  gcap_context *ctx = test_context_create();
  gcap_stream *s = NULL;
  assert_ok(gcap_stream_create(ctx, &s));
  void *d = NULL;
  assert_ok(gcap_mem_alloc(ctx, 16, &d));
  assert_ok(gcap_memset_async(s, d, 0, 16));
  assert_ok(gcap_stream_synchronize(s));
  gcap_graph *g = NULL;
  assert_ok(gcap_graph_create(ctx, &g));
  gcap_memset_node_params mp = {.dst = d, .value = 5, .element_size = 1, .width = 16, .height = 1};
  gcap_node *node = NULL;
  assert_ok(gcap_graph_add_memset_node(g, NULL, 0, &mp, &node));
  gcap_exec *x = NULL;
  assert_ok(gcap_graph_instantiate(g, 0, &x));
  gcap_sim_stats before = {0}, after = {0};
  if (test_on_sim()) assert_ok(gcap_sim_get_stats(ctx, &before));

  for (int cm = 0; cm <= 2; cm++) {
    for (int upload = 0; upload <= 1; upload++) {
      const char *name = upload ? "gcap_exec_upload" : "gcap_exec_launch";
      gcap_status (*fn)(gcap_exec *, gcap_stream *) = upload ? gcap_exec_upload : gcap_exec_launch;
      assert_ok(gcap_stream_begin_capture(s, (gcap_capture_mode)cm));
      uint64_t id = capture_id(s);
      assert_status(fn(x, s), GCAP_ERROR_STREAM_CAPTURE_UNSUPPORTED);
      test_assert_message_contains(name);
      assert_int_equal(capture_status(s), GCAP_CAPTURE_STATUS_INVALIDATED);
      assert_int_equal(gcap_graph_node_count(capture_graph(s)), 0);
      assert_status(fn(x, s), GCAP_ERROR_STREAM_CAPTURE_INVALIDATED);
      end_expect(s, GCAP_ERROR_STREAM_CAPTURE_INVALIDATED);
      char want[200];
      snprintf(want, sizeof want, "capture %" PRIu64 " was invalidated by %s(stream %p) on thread ", id, name,
               (void *)s);
      test_assert_message_contains(want);
      test_assert_message_contains("STREAM_CAPTURE_UNSUPPORTED");
      assert_int_equal(capture_status(s), GCAP_CAPTURE_STATUS_NONE);
    }
  }
  uint8_t back[16];
  read_device(ctx, back, d, 16);
  assert_bytes(back, 0, 16); /* no refused launch ran */
  if (test_on_sim()) {
    assert_ok(gcap_sim_get_stats(ctx, &after));
    assert_int_equal(after.graph_launches, before.graph_launches);
  }
  assert_ok(gcap_exec_launch(x, s));
  assert_ok(gcap_stream_synchronize(s));
  read_device(ctx, back, d, 16);
  assert_bytes(back, 5, 16);
  if (test_on_sim()) {
    assert_ok(gcap_sim_get_stats(ctx, &after));
    assert_int_equal(after.graph_launches, before.graph_launches + 1);
  }
  gcap_exec_destroy(x);
  gcap_graph_destroy(g);
  gcap_context_destroy(ctx);
}

/* ------------------------------------------------------------------ rules.md#capture-failed-call */

struct bad_fx {
  gcap_stream *s;
  gcap_capture *c; /* set when the row needs a capture object */
  void *d;         /* 256 bytes of device memory */
  gcap_kernel *k;
  uint8_t host[16];
};

static gcap_status b_memset_range(struct bad_fx *f) { return gcap_memset_async(f->s, (char *)f->d + 200, 0, 100); }
static gcap_status b_memcpy_kind(struct bad_fx *f) {
  return gcap_memcpy_async(f->s, f->d, f->host, 16, (gcap_memcpy_kind)99);
}
/* Device memory as the host side: every backend knows (plain host memory as the device side only the simulator). */
static gcap_status b_memcpy_mismatch(struct bad_fx *f) {
  return gcap_memcpy_async(f->s, f->d, (char *)f->d + 8, 8, GCAP_MEMCPY_HOST_TO_DEVICE);
}
static gcap_status b_memcpy_range(struct bad_fx *f) {
  return gcap_memcpy_async(f->s, (char *)f->d + 250, f->host, 16, GCAP_MEMCPY_HOST_TO_DEVICE);
}
static gcap_status b_d16_misaligned(struct bad_fx *f) { return gcap_memset_d16_async(f->s, (char *)f->d + 1, 1, 4); }
static gcap_status b_d32_range(struct bad_fx *f) { return gcap_memset_d32_async(f->s, f->d, 1, 65); }
static gcap_status b_host_null(struct bad_fx *f) { return gcap_launch_host_func(f->s, NULL, NULL); }
static gcap_status b_block_zero(struct bad_fx *f) {
  uint32_t *x = f->d, v = 1, n = 1;
  void *args[] = {&x, &v, &n};
  return gcap_launch_kernel(f->s, f->k, GCAP_DIM3(1, 1, 1), GCAP_DIM3(0, 1, 1), 0, args);
}
static gcap_status b_block_big(struct bad_fx *f) {
  uint32_t *x = f->d, v = 1, n = 1;
  void *args[] = {&x, &v, &n};
  return gcap_launch_kernel(f->s, f->k, GCAP_DIM3(1, 1, 1), GCAP_DIM3(2048, 1, 1), 0, args);
}
static gcap_status b_args_null(struct bad_fx *f) {
  return gcap_launch_kernel(f->s, f->k, GCAP_DIM3(1, 1, 1), GCAP_DIM3(1, 1, 1), 0, NULL);
}
static gcap_status b_shared_big(struct bad_fx *f) {
  uint32_t *x = f->d, v = 1, n = 1;
  void *args[] = {&x, &v, &n};
  return gcap_launch_kernel(f->s, f->k, GCAP_DIM3(1, 1, 1), GCAP_DIM3(1, 1, 1), 49153, args);
}
static gcap_status b_record_not_found(struct bad_fx *f) {
  uint32_t *x = f->d, v = 1, n = 1;
  void *args[] = {&x, &v, &n};
  return gcap_capture_record_kernel(f->c, "no_such_kernel", GCAP_DIM3(1, 1, 1), GCAP_DIM3(1, 1, 1), 0, args);
}
static gcap_status b_record_memset_range(struct bad_fx *f) {
  return gcap_capture_record_memset(f->c, (char *)f->d + 255, 0, 2);
}

struct bad_call {
  const char *name;
  gcap_status (*fn)(struct bad_fx *f);
  gcap_status expected;
  bool object; /* begun with gcap_capture_begin */
};

static const struct bad_call bad_calls[] = {
    {"gcap_memset_async", b_memset_range, GCAP_ERROR_INVALID_VALUE, false},
    {"gcap_memcpy_async", b_memcpy_kind, GCAP_ERROR_INVALID_VALUE, false},
    {"gcap_memcpy_async", b_memcpy_mismatch, GCAP_ERROR_INVALID_VALUE, false},
    {"gcap_memcpy_async", b_memcpy_range, GCAP_ERROR_INVALID_VALUE, false},
    {"gcap_memset_d16_async", b_d16_misaligned, GCAP_ERROR_INVALID_VALUE, false},
    {"gcap_memset_d32_async", b_d32_range, GCAP_ERROR_INVALID_VALUE, false},
    {"gcap_launch_host_func", b_host_null, GCAP_ERROR_INVALID_VALUE, false},
    {"gcap_launch_kernel", b_block_zero, GCAP_ERROR_INVALID_VALUE, false},
    {"gcap_launch_kernel", b_block_big, GCAP_ERROR_INVALID_VALUE, false},
    {"gcap_launch_kernel", b_args_null, GCAP_ERROR_INVALID_VALUE, false},
    {"gcap_launch_kernel", b_shared_big, GCAP_ERROR_INVALID_VALUE, false},
    {"gcap_capture_record_kernel", b_record_not_found, GCAP_ERROR_NOT_FOUND, true},
    {"gcap_capture_record_memset", b_record_memset_range, GCAP_ERROR_INVALID_VALUE, true},
};

static void test_capture_failed_call_invalidates(void **state) {
  (void)state;
  for (size_t i = 0; i < sizeof bad_calls / sizeof bad_calls[0]; i++) {
    const struct bad_call *b = &bad_calls[i];
    gcap_context *ctx = test_context_create();
    struct bad_fx f = {0};
    assert_ok(gcap_stream_create(ctx, &f.s));
    assert_ok(gcap_mem_alloc(ctx, 256, &f.d));
    gcap_module *m = load_fill(ctx, "fill");
    assert_ok(gcap_module_get_kernel(m, "fill", &f.k));
    if (b->object) assert_ok(gcap_capture_begin(f.s, NULL, &f.c));
    else assert_ok(gcap_stream_begin_capture(f.s, GCAP_CAPTURE_MODE_GLOBAL));
    uint64_t id = capture_id(f.s);
    gcap_graph *g = capture_graph(f.s);
    assert_ok(gcap_memset_async(f.s, f.d, 1, 16)); /* node 0 */

    gcap_status st = b->fn(&f);
    if (st != b->expected) {
      print_error("row %zu (%s): %s, expected %s (%s)\n", i, b->name, gcap_status_name(st),
                  gcap_status_name(b->expected), gcap_last_error_message());
      fail();
    }
    test_assert_message_contains(b->name);
    assert_int_equal(gcap_graph_node_count(g), 1);
    assert_int_equal(capture_status(f.s), GCAP_CAPTURE_STATUS_INVALIDATED);
    assert_status(gcap_memset_async(f.s, f.d, 1, 16), GCAP_ERROR_STREAM_CAPTURE_INVALIDATED);
    assert_int_equal(gcap_graph_node_count(g), 1);

    gcap_graph *out = (gcap_graph *)(uintptr_t)1;
    if (b->object) {
      assert_status(gcap_capture_end(f.c, &out), GCAP_ERROR_STREAM_CAPTURE_INVALIDATED);
    } else {
      assert_status(gcap_stream_end_capture(f.s, &out), GCAP_ERROR_STREAM_CAPTURE_INVALIDATED);
    }
    assert_null(out);
    char want[256];
    snprintf(want, sizeof want, "capture %" PRIu64 " was invalidated by %s(stream %p) on thread ", id, b->name,
             (void *)f.s);
    test_assert_message_contains(want);
    snprintf(want, sizeof want, ": %s (it would have been node 1)", gcap_status_name(b->expected) + 11);
    test_assert_message_contains(want);
    assert_int_equal(capture_status(f.s), GCAP_CAPTURE_STATUS_NONE);
    gcap_capture_destroy(f.c);
    gcap_context_destroy(ctx);
  }
}

/* ------------------------------------------------------------------ RELAXED escape (rules.md#capture-prohibition) */

static void test_relaxed_escape_via_exchange_capture_mode(void **state) {
  (void)state;
  struct unsafe_fx f;
  unsafe_setup(&f);
  assert_ok(gcap_stream_begin_capture(f.s, GCAP_CAPTURE_MODE_GLOBAL));

  gcap_capture_mode m = GCAP_CAPTURE_MODE_RELAXED;
  assert_ok(gcap_thread_exchange_capture_mode(&m));
  assert_int_equal(m, GCAP_CAPTURE_MODE_GLOBAL);
  /* Every potentially unsafe call is allowed now, and the capture survives. */
  void *p = NULL;
  assert_ok(gcap_mem_alloc(f.ctx, 32, &p));
  assert_non_null(p);
  assert_ok(gcap_mem_free(f.ctx, p));
  assert_ok(gcap_mem_free(f.ctx, NULL));
  assert_ok(gcap_host_alloc(f.ctx, 32, &p));
  assert_ok(gcap_host_free(f.ctx, p));
  assert_ok(gcap_memcpy(f.ctx, f.dst, f.src, 8, GCAP_MEMCPY_HOST_TO_HOST));
  assert_memory_equal(f.dst, f.src, 8);
  assert_ok(gcap_stream_synchronize(f.other));
  assert_ok(gcap_stream_query(f.other));
  assert_ok(gcap_event_synchronize(f.normal));
  assert_ok(gcap_event_query(f.normal));
  assert_ok(u_module_load(&f));
  assert_ok(gcap_module_unload(f.got_module));
  test_assert_message_empty();
  assert_int_equal(capture_status(f.s), GCAP_CAPTURE_STATUS_ACTIVE);

  /* Bad values change nothing. */
  assert_status(gcap_thread_exchange_capture_mode(NULL), GCAP_ERROR_INVALID_VALUE);
  test_assert_message_contains("gcap_thread_exchange_capture_mode");
  gcap_capture_mode bad = (gcap_capture_mode)3;
  assert_status(gcap_thread_exchange_capture_mode(&bad), GCAP_ERROR_INVALID_VALUE);
  assert_int_equal(bad, 3);
  assert_ok(gcap_mem_alloc(f.ctx, 32, &p)); /* still RELAXED */
  assert_ok(gcap_mem_free(f.ctx, p));

  /* Another GLOBAL thread is still blocked by this GLOBAL capture, until it too switches to RELAXED. */
  struct runner r;
  runner_start(&r);
  struct op o = {.mode = GCAP_CAPTURE_MODE_RELAXED};
  assert_ok(on(&r, job_exchange_mode, &o));
  assert_int_equal(o.mode, GCAP_CAPTURE_MODE_GLOBAL);
  struct op a = {.ctx = f.ctx};
  assert_ok(on(&r, job_mem_alloc, &a));
  assert_ok(on(&r, job_mem_free, &a));
  assert_int_equal(capture_status(f.s), GCAP_CAPTURE_STATUS_ACTIVE);
  runner_stop(&r);

  /* Capturing goes on as before. */
  assert_ok(gcap_memset_async(f.s, f.d, 1, 8));
  gcap_graph *g = capture_graph(f.s);
  assert_int_equal(gcap_graph_node_count(g), 1);

  /* Switching back restores the prohibition. */
  m = GCAP_CAPTURE_MODE_GLOBAL;
  assert_ok(gcap_thread_exchange_capture_mode(&m));
  assert_int_equal(m, GCAP_CAPTURE_MODE_RELAXED);
  assert_status(gcap_mem_alloc(f.ctx, 32, &p), GCAP_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  assert_int_equal(capture_status(f.s), GCAP_CAPTURE_STATUS_INVALIDATED);
  end_expect(f.s, GCAP_ERROR_STREAM_CAPTURE_INVALIDATED);

  /* In RELAXED mode, a sync of the capturing stream itself is still refused. */
  set_mode(GCAP_CAPTURE_MODE_RELAXED);
  assert_ok(gcap_stream_begin_capture(f.s, GCAP_CAPTURE_MODE_GLOBAL));
  assert_status(gcap_stream_synchronize(f.s), GCAP_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  assert_int_equal(capture_status(f.s), GCAP_CAPTURE_STATUS_INVALIDATED);
  end_expect(f.s, GCAP_ERROR_STREAM_CAPTURE_INVALIDATED);
  set_mode(GCAP_CAPTURE_MODE_GLOBAL);
  gcap_context_destroy(f.ctx);
}

/* A THREAD_LOCAL capture prohibits its owner only; its recorded work is unaffected by the other thread. */
static void test_capture_prohibition_thread_local_capture_prohibits_only_its_owner(void **state) {
  (void)state;
  gcap_context *ctx = test_context_create();
  gcap_stream *s = NULL;
  assert_ok(gcap_stream_create(ctx, &s));
  void *d = NULL;
  assert_ok(gcap_mem_alloc(ctx, 16, &d));
  struct runner owner;
  runner_start(&owner);
  struct op o = {.s = s, .mode = GCAP_CAPTURE_MODE_THREAD_LOCAL};
  assert_ok(on(&owner, job_begin, &o));
  o = (struct op){.s = s, .p = d};
  assert_ok(on(&owner, job_memset, &o));
  /* THREAD_LOCAL capture of another thread: this GLOBAL thread may allocate. */
  void *p = NULL;
  assert_ok(gcap_mem_alloc(ctx, 16, &p));
  assert_ok(gcap_mem_free(ctx, p));
  /* But the capturing thread itself may not. */
  struct op a = {.ctx = ctx};
  assert_status(on(&owner, job_mem_alloc, &a), GCAP_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  assert_non_null(strstr(a.msg, "THREAD_LOCAL mode"));
  o = (struct op){.s = s};
  assert_status(on(&owner, job_end, &o), GCAP_ERROR_STREAM_CAPTURE_INVALIDATED);
  runner_stop(&owner);
  gcap_context_destroy(ctx);
}

int main(void) {
  test_require_backend();
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_capture_prohibition_predicate_table),
      cmocka_unit_test(test_capture_prohibition_predicate_own_and_other_together),
      cmocka_unit_test(test_capture_prohibition_thread_local_capture_prohibits_only_its_owner),
      cmocka_unit_test(test_capture_invalidation_poisons_sequence),
      cmocka_unit_test(test_capture_invalidation_thread_number_of_first_gcap_thread_is_1),
      cmocka_unit_test(test_capture_invalidation_first_offender_message_format),
      cmocka_unit_test(test_capture_conflicts_stream_sync_query_of_capturing_stream),
      cmocka_unit_test(test_capture_conflicts_captured_event_sync_query),
      cmocka_unit_test(test_capture_conflicts_context_synchronize_from_another_thread),
      cmocka_unit_test(test_capture_unsafe_calls_in_global_and_thread_local),
      cmocka_unit_test(test_capture_unsafe_calls_never_recorded_event_allowed),
      cmocka_unit_test(test_capture_unsafe_calls_argument_errors_do_not_invalidate),
      cmocka_unit_test(test_capture_unsafe_invalidates_other_thread_global_only),
      cmocka_unit_test(test_capture_allowed_calls),
      cmocka_unit_test(test_capture_unsupported_work_exec_launch_into_capture),
      cmocka_unit_test(test_capture_failed_call_invalidates),
      cmocka_unit_test(test_relaxed_escape_via_exchange_capture_mode),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
