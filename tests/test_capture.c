/*
 * Stream capture: beginning and ending (rules.md#capture-begin through
 * rules.md#capture-stream-destroyed), cross-stream capture through events (rules.md#capture-chain
 * through rules.md#capture-again) and what capture records (rules.md#record-node-types through
 * rules.md#record-mem-alloc). Every successful capture is instantiated and
 * launched, and the test checks the memory or host callbacks the replay produced.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "common.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ helpers */

static const gcap_capture_mode all_modes[3] = {GCAP_CAPTURE_MODE_GLOBAL, GCAP_CAPTURE_MODE_THREAD_LOCAL,
                                               GCAP_CAPTURE_MODE_RELAXED};
static const char *const mode_names[3] = {"GLOBAL", "THREAD_LOCAL", "RELAXED"};

/* What host callbacks saw at replay (only the main thread launches graphs). */
static struct {
  int values[64];
  size_t count;
} host_log;

static void log_value(void *user_data) {
  if (host_log.count < 64) host_log.values[host_log.count++] = (int)(intptr_t)user_data;
}

static void log_deref(void *user_data) {
  if (host_log.count < 64) host_log.values[host_log.count++] = *(const int *)user_data;
}

static void assert_log(const int *expected, size_t count) {
  assert_int_equal(host_log.count, count);
  for (size_t i = 0; i < count; i++) assert_int_equal(host_log.values[i], expected[i]);
}

static int setup(void **state) {
  host_log.count = 0;
  *state = test_context_create();
  return *state ? 0 : -1;
}

static int teardown(void **state) {
  gcap_capture_mode m = GCAP_CAPTURE_MODE_GLOBAL; /* a failed test may have left the thread RELAXED */
  gcap_thread_exchange_capture_mode(&m);
  gcap_context_destroy(*state);
  return 0;
}

static gcap_event *new_event(gcap_context *ctx) {
  gcap_event *e = NULL;
  assert_ok(gcap_event_create(ctx, &e));
  assert_non_null(e);
  return e;
}

/* Device memory set to zero, aligned for any type (callers cast it through void *). */
static unsigned char *dev_alloc(gcap_context *ctx, size_t bytes) {
  void *p = NULL;
  assert_ok(gcap_mem_alloc(ctx, bytes, &p));
  assert_non_null(p);
  unsigned char *zero = calloc(1, bytes);
  assert_non_null(zero);
  assert_ok(gcap_memcpy(ctx, p, zero, bytes, GCAP_MEMCPY_HOST_TO_DEVICE));
  free(zero);
  return p;
}

static void dev_zero(gcap_context *ctx, void *d, size_t bytes) {
  unsigned char *zero = calloc(1, bytes);
  assert_non_null(zero);
  assert_ok(gcap_memcpy(ctx, d, zero, bytes, GCAP_MEMCPY_HOST_TO_DEVICE));
  free(zero);
}

/* Fails unless device bytes [off, off+n) all equal `byte`. */
static void assert_dev_bytes(gcap_context *ctx, const unsigned char *d, size_t off, size_t n, unsigned char byte) {
  unsigned char buf[256];
  assert_true(n <= sizeof buf);
  assert_ok(gcap_memcpy(ctx, buf, d + off, n, GCAP_MEMCPY_DEVICE_TO_HOST));
  for (size_t i = 0; i < n; i++) {
    if (buf[i] != byte) {
      print_error("device byte %zu is 0x%02x, expected 0x%02x\n", off + i, buf[i], byte);
      fail();
    }
  }
}

static gcap_capture_status cap_status(gcap_stream *s) {
  gcap_capture_status st = (gcap_capture_status)77;
  assert_ok(gcap_stream_is_capturing(s, &st));
  return st;
}

static gcap_capture_info cap_info(gcap_stream *s) {
  gcap_capture_info info;
  memset(&info, 0xab, sizeof info);
  assert_ok(gcap_stream_get_capture_info(s, &info));
  return info;
}

/* The graph's nodes in creation order; returns the count. */
static size_t graph_nodes(const gcap_graph *g, gcap_node **out, size_t max) {
  size_t n = max;
  assert_ok(gcap_graph_get_nodes(g, out, &n));
  size_t count = gcap_graph_node_count(g);
  assert_true(count <= max);
  return count;
}

static void assert_deps(const gcap_node *n, gcap_node *const *expected, size_t count) {
  gcap_node *deps[16];
  size_t got = 16;
  assert_ok(gcap_node_get_dependencies(n, deps, &got));
  assert_int_equal(got, count);
  for (size_t i = 0; i < count; i++) assert_ptr_equal(deps[i], expected[i]);
}

static void assert_edges(const gcap_graph *g, gcap_node *const *from, gcap_node *const *to, size_t count) {
  gcap_node *f[32], *t[32];
  size_t got = 32;
  assert_ok(gcap_graph_get_edges(g, f, t, &got));
  assert_int_equal(got, count);
  assert_int_equal(gcap_graph_edge_count(g), count);
  for (size_t i = 0; i < count; i++) {
    assert_ptr_equal(f[i], from[i]);
    assert_ptr_equal(t[i], to[i]);
  }
}

static void assert_frontier(gcap_stream *s, gcap_node *const *expected, size_t count) {
  gcap_capture_info info = cap_info(s);
  assert_int_equal(info.status, GCAP_CAPTURE_STATUS_ACTIVE);
  assert_int_equal(info.num_dependencies, count);
  for (size_t i = 0; i < count; i++) assert_ptr_equal(info.dependencies[i], expected[i]);
}

/* The node most recently added to the graph s is capturing into. */
static gcap_node *last_node(gcap_stream *s) {
  gcap_capture_info info = cap_info(s);
  assert_non_null(info.graph);
  gcap_node *nodes[32];
  size_t n = graph_nodes(info.graph, nodes, 32);
  assert_true(n > 0);
  return nodes[n - 1];
}

/* Instantiates g, launches it once on s and waits. */
static void run_graph(gcap_graph *g, gcap_stream *s) {
  gcap_exec *x = NULL;
  assert_ok(gcap_graph_instantiate(g, 0, &x));
  assert_non_null(x);
  assert_ok(gcap_exec_launch(x, s));
  assert_ok(gcap_stream_synchronize(s));
  gcap_exec_destroy(x);
}

/* Ends the capture on s successfully and returns the graph. */
static gcap_graph *end_ok(gcap_stream *s) {
  gcap_graph *g = NULL;
  assert_ok(gcap_stream_end_capture(s, &g));
  assert_non_null(g);
  test_assert_message_empty();
  return g;
}

/* "capture <id> was invalidated by <fn>(stream <s>) on thread <n>: <STATUS>" */
static void assert_offence(uint64_t id, const char *fn, const char *kind, const void *obj, const char *thread,
                           const char *status) {
  char needle[256];
  snprintf(needle, sizeof needle, "capture %llu was invalidated by %s(%s %p) on thread %s: %s", (unsigned long long)id,
           fn, kind, obj, thread, status);
  test_assert_message_contains(needle);
}

/*
 * Ends an invalidated capture: INVALIDATED, *graph NULL, the message naming the first offence
 * (fn NULL: not checked), and the stream back to NONE.
 */
static void end_invalidated(gcap_stream *s, uint64_t id, const char *fn, const char *kind, const void *obj,
                            const char *status) {
  gcap_graph *g = (gcap_graph *)&g;
  assert_status(gcap_stream_end_capture(s, &g), GCAP_ERROR_STREAM_CAPTURE_INVALIDATED);
  assert_null(g);
  if (fn) assert_offence(id, fn, kind, obj, "1", status);
  assert_int_equal(cap_status(s), GCAP_CAPTURE_STATUS_NONE);
}

/* fork: t joins the capture of s at s's current frontier. */
static void fork_to(gcap_stream *s, gcap_stream *t, gcap_event *e) {
  assert_ok(gcap_event_record(e, s));
  assert_ok(gcap_stream_wait_event(t, e));
}

/* --------------------------------------------------------------- kernels */

/* p[i] += v for i < n. Params: int32_t *p, int32_t v, uint32_t n. */
static void add_sim(const gcap_sim_thread *t, void *const *args) {
  int32_t *p;
  int32_t v;
  uint32_t n;
  memcpy(&p, args[0], sizeof p);
  memcpy(&v, args[1], sizeof v);
  memcpy(&n, args[2], sizeof n);
  uint32_t i = t->block_idx.x * t->block_dim.x + t->thread_idx.x;
  if (i < n) p[i] += v;
}

static const size_t add_sizes[] = {sizeof(int32_t *), sizeof(int32_t), sizeof(uint32_t)};

static gcap_kernel *load_add(gcap_context *ctx) {
  const gcap_kernel_def defs[] = {{.name = "add", .sim_fn = add_sim, .num_params = 3, .param_sizes = add_sizes}};
  gcap_module_desc d = {.image = NULL, .image_size = 0, .kernels = defs, .num_kernels = 1};
  gcap_module *m = NULL;
  assert_ok(test_module_load(ctx, &d, &m));
  gcap_kernel *k = NULL;
  assert_ok(gcap_module_get_kernel(m, "add", &k));
  return k;
}

/* --------------------------------------------------------------- threads */

struct worker {
  gcap_context *ctx;
  gcap_stream *s;
  gcap_capture_mode mode;
  bool pass_graph_ptr;
  gcap_status status;
  gcap_graph *graph;
  gcap_capture_status seen;
  bool message_ok;
  void *ptr;
  uint64_t id;
  unsigned char *dst;
  int value;
};

/* A reusable barrier (pthread_barrier_t is not in strict C11 headers). */
struct barrier {
  pthread_mutex_t lock;
  pthread_cond_t cond;
  unsigned parties, waiting, round;
};

static void barrier_init(struct barrier *b, unsigned parties) {
  pthread_mutex_init(&b->lock, NULL);
  pthread_cond_init(&b->cond, NULL);
  b->parties = parties;
  b->waiting = 0;
  b->round = 0;
}

static void barrier_wait(struct barrier *b) {
  pthread_mutex_lock(&b->lock);
  unsigned round = b->round;
  if (++b->waiting == b->parties) {
    b->waiting = 0;
    b->round++;
    pthread_cond_broadcast(&b->cond);
  } else {
    while (round == b->round) pthread_cond_wait(&b->cond, &b->lock);
  }
  pthread_mutex_unlock(&b->lock);
}

static void barrier_destroy(struct barrier *b) {
  pthread_mutex_destroy(&b->lock);
  pthread_cond_destroy(&b->cond);
}

static void *end_worker(void *arg) {
  struct worker *w = arg;
  w->graph = (gcap_graph *)&w->graph;
  w->status = gcap_stream_end_capture(w->s, w->pass_graph_ptr ? &w->graph : NULL);
  w->message_ok = strstr(gcap_last_error_message(), "gcap_stream_end_capture") != NULL || w->status == GCAP_SUCCESS;
  return NULL;
}

static void *alloc_worker(void *arg) {
  struct worker *w = arg;
  gcap_capture_mode m = w->mode;
  if (gcap_thread_exchange_capture_mode(&m) != GCAP_SUCCESS) return NULL;
  w->ptr = NULL;
  w->status = gcap_mem_alloc(w->ctx, 64, &w->ptr);
  w->message_ok = w->status == GCAP_SUCCESS ? gcap_last_error_message()[0] == '\0'
                                            : strstr(gcap_last_error_message(), "gcap_mem_alloc") != NULL;
  if (w->status == GCAP_SUCCESS && gcap_mem_free(w->ctx, w->ptr) != GCAP_SUCCESS) w->status = GCAP_ERROR_BACKEND;
  return NULL;
}

static void *query_worker(void *arg) {
  struct worker *w = arg;
  gcap_capture_info info;
  w->status = gcap_stream_is_capturing(w->s, &w->seen);
  if (w->status == GCAP_SUCCESS) w->status = gcap_stream_get_capture_info(w->s, &info);
  if (w->status == GCAP_SUCCESS) w->id = info.id;
  return NULL;
}

static void run_thread(void *(*fn)(void *), struct worker *w) {
  pthread_t t;
  assert_int_equal(pthread_create(&t, NULL, fn, w), 0);
  assert_int_equal(pthread_join(t, NULL), 0);
}

/* ============================================================ 1. begin and end */

static void test_capture_begin_ids_nonzero_unique(void **state) {
  gcap_context *ctx = *state;
  gcap_stream *a = test_stream_create(ctx), *b = test_stream_create(ctx);
  uint64_t prev = 0;
  for (int m = 0; m < 3; m++) {
    assert_ok(gcap_stream_begin_capture(a, all_modes[m]));
    test_assert_message_empty();
    assert_ok(gcap_stream_begin_capture(b, all_modes[m]));
    gcap_capture_info ia = cap_info(a), ib = cap_info(b);
    assert_int_equal(ia.status, GCAP_CAPTURE_STATUS_ACTIVE);
    assert_int_equal(ib.status, GCAP_CAPTURE_STATUS_ACTIVE);
    assert_true(ia.id != 0);
    assert_true(ia.id > prev);
    assert_true(ib.id > ia.id);
    assert_non_null(ia.graph);
    assert_non_null(ib.graph);
    assert_ptr_not_equal(ia.graph, ib.graph);
    assert_int_equal(ia.num_dependencies, 0);
    prev = ib.id;
    gcap_graph *ga = end_ok(a), *gb = end_ok(b);
    assert_ptr_equal(ga, ia.graph);
    assert_ptr_equal(gb, ib.graph);
    assert_int_equal(gcap_graph_node_count(ga), 0);
    run_graph(ga, a);
    gcap_graph_destroy(ga);
    gcap_graph_destroy(gb);
  }
  /* ids are unique across the process, not per context */
  gcap_context *other = test_context_create();
  gcap_stream *c = test_stream_create(other);
  assert_ok(gcap_stream_begin_capture(c, GCAP_CAPTURE_MODE_GLOBAL));
  gcap_capture_info ic = cap_info(c);
  assert_true(ic.id > prev);
  gcap_graph_destroy(end_ok(c));
  gcap_context_destroy(other);
}

static void test_capture_already_begin_on_member_is_illegal_state(void **state) {
  gcap_context *ctx = *state;
  gcap_stream *s0 = test_stream_create(ctx), *s1 = test_stream_create(ctx);
  gcap_event *e = new_event(ctx);
  unsigned char *d = dev_alloc(ctx, 16);
  for (int m = 0; m < 3; m++) {
    dev_zero(ctx, d, 16);
    /* origin and joined member of an ACTIVE capture */
    assert_ok(gcap_stream_begin_capture(s0, all_modes[m]));
    uint64_t id = cap_info(s0).id;
    assert_ok(gcap_memset_async(s0, d, 1, 16));
    for (int m2 = 0; m2 < 3; m2++) {
      assert_status(gcap_stream_begin_capture(s0, all_modes[m2]), GCAP_ERROR_ILLEGAL_STATE);
      test_assert_message_contains("gcap_stream_begin_capture");
    }
    fork_to(s0, s1, e);
    assert_status(gcap_stream_begin_capture(s1, all_modes[m]), GCAP_ERROR_ILLEGAL_STATE);
    gcap_capture *c = (gcap_capture *)&c;
    assert_status(gcap_capture_begin(s1, NULL, &c), GCAP_ERROR_ILLEGAL_STATE);
    assert_null(c);
    assert_status(gcap_capture_begin(s0, NULL, &c), GCAP_ERROR_ILLEGAL_STATE);
    assert_null(c);
    /* the existing capture is not invalidated */
    assert_int_equal(cap_status(s0), GCAP_CAPTURE_STATUS_ACTIVE);
    assert_int_equal(cap_status(s1), GCAP_CAPTURE_STATUS_ACTIVE);
    assert_int_equal(cap_info(s1).id, id);
    assert_ok(gcap_memset_async(s1, d + 8, 2, 8));
    fork_to(s1, s0, e);
    gcap_graph *g = end_ok(s0);
    assert_int_equal(gcap_graph_node_count(g), 2);
    assert_int_equal(gcap_graph_edge_count(g), 1);
    run_graph(g, s0);
    assert_dev_bytes(ctx, d, 0, 8, 1);
    assert_dev_bytes(ctx, d, 8, 8, 2);
    gcap_graph_destroy(g);

    /* members of an INVALIDATED capture that has not been ended */
    assert_ok(gcap_stream_begin_capture(s0, all_modes[m]));
    id = cap_info(s0).id;
    assert_ok(gcap_memset_async(s0, d, 3, 16));
    fork_to(s0, s1, e);
    assert_status(gcap_stream_query(s0), GCAP_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    assert_int_equal(cap_status(s0), GCAP_CAPTURE_STATUS_INVALIDATED);
    assert_status(gcap_stream_begin_capture(s0, all_modes[m]), GCAP_ERROR_ILLEGAL_STATE);
    assert_status(gcap_stream_begin_capture(s1, all_modes[m]), GCAP_ERROR_ILLEGAL_STATE);
    assert_int_equal(cap_status(s0), GCAP_CAPTURE_STATUS_INVALIDATED);
    assert_int_equal(cap_status(s1), GCAP_CAPTURE_STATUS_INVALIDATED);
    end_invalidated(s0, id, "gcap_stream_query", "stream", s0, "STREAM_CAPTURE_UNSUPPORTED");
    assert_int_equal(cap_status(s1), GCAP_CAPTURE_STATUS_NONE);
    assert_dev_bytes(ctx, d, 0, 8, 1); /* the invalidated capture ran nothing */
  }
  assert_ok(gcap_mem_free(ctx, d));
}

static void test_capture_begin_bad_mode(void **state) {
  gcap_context *ctx = *state;
  gcap_stream *s = test_stream_create(ctx), *dead = test_stream_create(ctx);
  assert_ok(gcap_stream_destroy(dead));
  assert_status(gcap_stream_begin_capture(s, (gcap_capture_mode)3), GCAP_ERROR_INVALID_VALUE);
  test_assert_message_contains("gcap_stream_begin_capture");
  assert_status(gcap_stream_begin_capture(s, (gcap_capture_mode)-1), GCAP_ERROR_INVALID_VALUE);
  assert_int_equal(cap_status(s), GCAP_CAPTURE_STATUS_NONE);
  assert_status(gcap_stream_begin_capture(NULL, GCAP_CAPTURE_MODE_GLOBAL), GCAP_ERROR_INVALID_HANDLE);
  assert_status(gcap_stream_begin_capture(NULL, (gcap_capture_mode)3), GCAP_ERROR_INVALID_HANDLE);
  assert_status(gcap_stream_begin_capture(dead, GCAP_CAPTURE_MODE_GLOBAL), GCAP_ERROR_INVALID_HANDLE);
  gcap_capture_options o;
  gcap_capture_options_init(&o);
  o.mode = (gcap_capture_mode)3;
  gcap_capture *c = (gcap_capture *)&c;
  assert_status(gcap_capture_begin(s, &o, &c), GCAP_ERROR_INVALID_VALUE);
  assert_null(c);
  assert_int_equal(cap_status(s), GCAP_CAPTURE_STATUS_NONE);
  /* arguments are checked before state: a bad mode on a capturing stream is INVALID_VALUE */
  assert_ok(gcap_stream_begin_capture(s, GCAP_CAPTURE_MODE_GLOBAL));
  assert_status(gcap_stream_begin_capture(s, (gcap_capture_mode)3), GCAP_ERROR_INVALID_VALUE);
  assert_int_equal(cap_status(s), GCAP_CAPTURE_STATUS_ACTIVE);
  gcap_graph *g = end_ok(s);
  run_graph(g, s);
  gcap_graph_destroy(g);
}

static void test_capture_mode_exchange(void **state) {
  (void)state;
  gcap_capture_mode m = GCAP_CAPTURE_MODE_THREAD_LOCAL;
  assert_ok(gcap_thread_exchange_capture_mode(&m));
  test_assert_message_empty();
  assert_int_equal(m, GCAP_CAPTURE_MODE_GLOBAL);
  m = GCAP_CAPTURE_MODE_RELAXED;
  assert_ok(gcap_thread_exchange_capture_mode(&m));
  assert_int_equal(m, GCAP_CAPTURE_MODE_THREAD_LOCAL);
  assert_status(gcap_thread_exchange_capture_mode(NULL), GCAP_ERROR_INVALID_VALUE);
  m = (gcap_capture_mode)3;
  assert_status(gcap_thread_exchange_capture_mode(&m), GCAP_ERROR_INVALID_VALUE);
  test_assert_message_contains("gcap_thread_exchange_capture_mode");
  assert_int_equal(m, 3);
  m = GCAP_CAPTURE_MODE_GLOBAL;
  assert_ok(gcap_thread_exchange_capture_mode(&m));
  assert_int_equal(m, GCAP_CAPTURE_MODE_RELAXED); /* the failed exchange changed nothing */
}

static void test_capture_prohibition_predicate(void **state) {
  gcap_context *ctx = *state;
  gcap_stream *s = test_stream_create(ctx);
  /* the capturing thread itself: prohibited unless its mode or the capture's is RELAXED */
  for (int t = 0; t < 3; t++) {
    for (int m = 0; m < 3; m++) {
      gcap_capture_mode mine = all_modes[t];
      assert_ok(gcap_thread_exchange_capture_mode(&mine));
      assert_ok(gcap_stream_begin_capture(s, all_modes[m]));
      uint64_t id = cap_info(s).id;
      bool prohibited = all_modes[t] != GCAP_CAPTURE_MODE_RELAXED && all_modes[m] != GCAP_CAPTURE_MODE_RELAXED;
      void *p = NULL;
      gcap_status st = gcap_mem_alloc(ctx, 64, &p);
      if (prohibited) {
        assert_status(st, GCAP_ERROR_STREAM_CAPTURE_UNSUPPORTED);
        assert_null(p);
        char needle[160];
        snprintf(needle, sizeof needle, "gcap_mem_alloc: not permitted while stream %p is capturing in %s mode",
                 (void *)s, mode_names[m]);
        test_assert_message_contains(needle);
        snprintf(needle, sizeof needle, "capture %llu is now invalidated", (unsigned long long)id);
        test_assert_message_contains(needle);
        assert_int_equal(cap_status(s), GCAP_CAPTURE_STATUS_INVALIDATED);
        end_invalidated(s, id, "gcap_mem_alloc", "ctx", ctx, "STREAM_CAPTURE_UNSUPPORTED");
      } else {
        assert_ok(st);
        assert_ok(gcap_mem_free(ctx, p));
        assert_int_equal(cap_status(s), GCAP_CAPTURE_STATUS_ACTIVE);
        gcap_graph_destroy(end_ok(s));
      }
      mine = GCAP_CAPTURE_MODE_GLOBAL;
      assert_ok(gcap_thread_exchange_capture_mode(&mine));
    }
  }
  /* another thread: prohibited only when both it and the capture are GLOBAL */
  for (int t = 0; t < 3; t++) {
    for (int m = 0; m < 3; m++) {
      assert_ok(gcap_stream_begin_capture(s, all_modes[m]));
      uint64_t id = cap_info(s).id;
      struct worker w = {.ctx = ctx, .mode = all_modes[t], .status = GCAP_ERROR_BACKEND};
      run_thread(alloc_worker, &w);
      assert_true(w.message_ok);
      if (all_modes[t] == GCAP_CAPTURE_MODE_GLOBAL && all_modes[m] == GCAP_CAPTURE_MODE_GLOBAL) {
        assert_int_equal(w.status, GCAP_ERROR_STREAM_CAPTURE_UNSUPPORTED);
        assert_null(w.ptr);
        assert_int_equal(cap_status(s), GCAP_CAPTURE_STATUS_INVALIDATED);
        gcap_graph *g = (gcap_graph *)&g;
        assert_status(gcap_stream_end_capture(s, &g), GCAP_ERROR_STREAM_CAPTURE_INVALIDATED);
        assert_null(g);
        char needle[128];
        snprintf(needle, sizeof needle, "capture %llu was invalidated by gcap_mem_alloc(ctx %p) on thread ",
                 (unsigned long long)id, (void *)ctx);
        test_assert_message_contains(needle);
        test_assert_message_contains(": STREAM_CAPTURE_UNSUPPORTED");
        assert_int_equal(cap_status(s), GCAP_CAPTURE_STATUS_NONE);
      } else {
        assert_int_equal(w.status, GCAP_SUCCESS);
        assert_int_equal(cap_status(s), GCAP_CAPTURE_STATUS_ACTIVE);
        gcap_graph_destroy(end_ok(s));
      }
    }
  }
  /* the prohibition is per thread, not per context: a capture on another context prohibits too */
  gcap_context *other = test_context_create();
  gcap_stream *os = test_stream_create(other);
  assert_ok(gcap_stream_begin_capture(os, GCAP_CAPTURE_MODE_GLOBAL));
  uint64_t oid = cap_info(os).id;
  void *q = NULL;
  assert_status(gcap_mem_alloc(ctx, 32, &q), GCAP_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  assert_null(q);
  assert_int_equal(cap_status(os), GCAP_CAPTURE_STATUS_INVALIDATED);
  end_invalidated(os, oid, "gcap_mem_alloc", "ctx", ctx, "STREAM_CAPTURE_UNSUPPORTED");
  /* a context destroyed mid-capture takes its captures with it: nothing is prohibited afterwards */
  assert_ok(gcap_stream_begin_capture(os, GCAP_CAPTURE_MODE_GLOBAL));
  gcap_stream *os2 = test_stream_create(other);
  gcap_event *oe = new_event(other);
  assert_ok(gcap_launch_host_func(os, log_value, NULL));
  fork_to(os, os2, oe);
  assert_ok(gcap_launch_host_func(os2, log_value, NULL));
  gcap_context_destroy(other);
  assert_ok(gcap_mem_alloc(ctx, 32, &q));
  assert_ok(gcap_mem_free(ctx, q));
  assert_int_equal(host_log.count, 0);

  /* only ACTIVE captures prohibit: once invalidated, the owner may allocate again */
  assert_ok(gcap_stream_begin_capture(s, GCAP_CAPTURE_MODE_GLOBAL));
  uint64_t id = cap_info(s).id;
  assert_status(gcap_stream_query(s), GCAP_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  void *p = NULL;
  assert_ok(gcap_mem_alloc(ctx, 32, &p));
  assert_ok(gcap_mem_free(ctx, p));
  end_invalidated(s, id, "gcap_stream_query", "stream", s, "STREAM_CAPTURE_UNSUPPORTED");
}

static void test_capture_end_returns_graph_members_none(void **state) {
  gcap_context *ctx = *state;
  gcap_stream *s0 = test_stream_create(ctx), *s1 = test_stream_create(ctx), *s2 = test_stream_create(ctx);
  gcap_event *e = new_event(ctx);
  unsigned char *d = dev_alloc(ctx, 32);
  for (int m = 0; m < 3; m++) {
    dev_zero(ctx, d, 32);
    host_log.count = 0;
    assert_ok(gcap_stream_begin_capture(s0, all_modes[m]));
    gcap_capture_info info = cap_info(s0);
    assert_ok(gcap_memset_async(s0, d, 1, 8));
    fork_to(s0, s1, e);
    fork_to(s0, s2, e);
    assert_ok(gcap_memset_async(s1, d + 8, 2, 8));
    assert_ok(gcap_launch_host_func(s2, log_value, (void *)(intptr_t)5));
    fork_to(s1, s0, e);
    fork_to(s2, s0, e);
    assert_ptr_equal(cap_info(s1).graph, info.graph);
    assert_ptr_equal(cap_info(s2).graph, info.graph);
    gcap_graph *g = end_ok(s0);
    assert_ptr_equal(g, info.graph);
    gcap_stream *all[3] = {s0, s1, s2};
    for (int i = 0; i < 3; i++) {
      assert_int_equal(cap_status(all[i]), GCAP_CAPTURE_STATUS_NONE);
      gcap_capture_info none = cap_info(all[i]);
      assert_int_equal(none.status, GCAP_CAPTURE_STATUS_NONE);
      assert_int_equal(none.id, 0);
      assert_null(none.graph);
      assert_null(none.dependencies);
      assert_int_equal(none.num_dependencies, 0);
      assert_ok(gcap_stream_query(all[i]));
      assert_ok(gcap_stream_synchronize(all[i]));
    }
    assert_int_equal(gcap_graph_node_count(g), 3);
    /* nothing ran at capture; the streams run eager work again */
    assert_dev_bytes(ctx, d, 0, 16, 0);
    assert_int_equal(host_log.count, 0);
    assert_ok(gcap_memset_async(s1, d + 16, 9, 8));
    assert_ok(gcap_stream_synchronize(s1));
    assert_dev_bytes(ctx, d, 16, 8, 9);
    run_graph(g, s2);
    assert_dev_bytes(ctx, d, 0, 8, 1);
    assert_dev_bytes(ctx, d, 8, 8, 2);
    const int expect[] = {5};
    assert_log(expect, 1);
    gcap_graph_destroy(g);
  }
}

static void test_capture_end_order_not_capturing(void **state) {
  gcap_context *ctx = *state;
  gcap_stream *s = test_stream_create(ctx), *dead = test_stream_create(ctx);
  assert_ok(gcap_stream_destroy(dead));
  gcap_graph *g = (gcap_graph *)&g;
  assert_status(gcap_stream_end_capture(s, &g), GCAP_ERROR_ILLEGAL_STATE);
  assert_null(g);
  test_assert_message_contains("gcap_stream_end_capture");
  assert_status(gcap_stream_end_capture(s, NULL), GCAP_ERROR_ILLEGAL_STATE);
  g = (gcap_graph *)&g;
  assert_status(gcap_stream_end_capture(NULL, &g), GCAP_ERROR_INVALID_HANDLE);
  assert_null(g);
  assert_status(gcap_stream_end_capture(dead, &g), GCAP_ERROR_INVALID_HANDLE);
  /* a capture that has ended is no longer there to end */
  assert_ok(gcap_stream_begin_capture(s, GCAP_CAPTURE_MODE_GLOBAL));
  assert_status(gcap_stream_end_capture(s, NULL), GCAP_ERROR_INVALID_VALUE);
  assert_int_equal(cap_status(s), GCAP_CAPTURE_STATUS_ACTIVE);
  gcap_graph *ok = end_ok(s);
  g = (gcap_graph *)&g;
  assert_status(gcap_stream_end_capture(s, &g), GCAP_ERROR_ILLEGAL_STATE);
  assert_null(g);
  run_graph(ok, s);
  gcap_graph_destroy(ok);
}

static void test_capture_end_order_wrong_thread(void **state) {
  gcap_context *ctx = *state;
  gcap_stream *s = test_stream_create(ctx);
  unsigned char *d = dev_alloc(ctx, 16);
  for (int m = 0; m < 2; m++) { /* GLOBAL and THREAD_LOCAL */
    dev_zero(ctx, d, 16);
    assert_ok(gcap_stream_begin_capture(s, all_modes[m]));
    uint64_t id = cap_info(s).id;
    assert_ok(gcap_memset_async(s, d, 4, 16));
    struct worker w = {.s = s, .pass_graph_ptr = true};
    run_thread(end_worker, &w);
    assert_int_equal(w.status, GCAP_ERROR_STREAM_CAPTURE_WRONG_THREAD);
    assert_null(w.graph);
    assert_true(w.message_ok);
    /* the capture stays ACTIVE and its owner ends it */
    assert_int_equal(cap_status(s), GCAP_CAPTURE_STATUS_ACTIVE);
    assert_int_equal(cap_info(s).id, id);
    assert_ok(gcap_memset_async(s, d, 5, 8));
    gcap_graph *g = end_ok(s);
    assert_int_equal(gcap_graph_node_count(g), 2);
    run_graph(g, s);
    assert_dev_bytes(ctx, d, 0, 8, 5);
    assert_dev_bytes(ctx, d, 8, 8, 4);
    gcap_graph_destroy(g);
  }
  assert_ok(gcap_mem_free(ctx, d));
}

static void *begin_relaxed_worker(void *arg) {
  struct worker *w = arg;
  w->status = gcap_stream_begin_capture(w->s, GCAP_CAPTURE_MODE_RELAXED);
  if (w->status == GCAP_SUCCESS) w->status = gcap_memset_async(w->s, w->dst, (int)w->value, 16);
  return NULL;
}

static void test_capture_end_order_relaxed_any_thread(void **state) {
  gcap_context *ctx = *state;
  gcap_stream *s = test_stream_create(ctx);
  unsigned char *d = dev_alloc(ctx, 16);
  /* begun here, ended by another thread */
  assert_ok(gcap_stream_begin_capture(s, GCAP_CAPTURE_MODE_RELAXED));
  assert_ok(gcap_memset_async(s, d, 6, 16));
  struct worker w = {.s = s, .pass_graph_ptr = true};
  run_thread(end_worker, &w);
  assert_int_equal(w.status, GCAP_SUCCESS);
  assert_non_null(w.graph);
  assert_int_equal(cap_status(s), GCAP_CAPTURE_STATUS_NONE);
  assert_int_equal(gcap_graph_node_count(w.graph), 1);
  run_graph(w.graph, s);
  assert_dev_bytes(ctx, d, 0, 16, 6);
  gcap_graph_destroy(w.graph);
  /* begun by another thread, ended here */
  struct worker b = {.s = s, .dst = d, .value = 7};
  run_thread(begin_relaxed_worker, &b);
  assert_int_equal(b.status, GCAP_SUCCESS);
  assert_int_equal(cap_status(s), GCAP_CAPTURE_STATUS_ACTIVE);
  gcap_graph *g = end_ok(s);
  assert_int_equal(gcap_graph_node_count(g), 1);
  run_graph(g, s);
  assert_dev_bytes(ctx, d, 0, 16, 7);
  gcap_graph_destroy(g);
  assert_ok(gcap_mem_free(ctx, d));
}

static void test_capture_end_order_on_member_unmatched(void **state) {
  gcap_context *ctx = *state;
  gcap_stream *s0 = test_stream_create(ctx), *s1 = test_stream_create(ctx);
  gcap_event *e = new_event(ctx);
  unsigned char *d = dev_alloc(ctx, 16);
  for (int m = 0; m < 3; m++) {
    assert_ok(gcap_stream_begin_capture(s0, all_modes[m]));
    uint64_t id = cap_info(s0).id;
    assert_ok(gcap_memset_async(s0, d, 1, 16));
    fork_to(s0, s1, e);
    assert_ok(gcap_memset_async(s1, d, 2, 16));
    fork_to(s1, s0, e);
    gcap_graph *g = (gcap_graph *)&g;
    assert_status(gcap_stream_end_capture(s1, &g), GCAP_ERROR_STREAM_CAPTURE_UNMATCHED);
    assert_null(g);
    test_assert_message_contains("gcap_stream_end_capture");
    assert_int_equal(cap_status(s0), GCAP_CAPTURE_STATUS_INVALIDATED);
    assert_int_equal(cap_status(s1), GCAP_CAPTURE_STATUS_INVALIDATED);
    end_invalidated(s0, id, "gcap_stream_end_capture", "stream", s1, "STREAM_CAPTURE_UNMATCHED");
    assert_int_equal(cap_status(s1), GCAP_CAPTURE_STATUS_NONE);
    assert_ok(gcap_stream_synchronize(s1));
  }
  assert_dev_bytes(ctx, d, 0, 16, 0);
}

static void test_capture_end_order_invalidated_resets(void **state) {
  gcap_context *ctx = *state;
  gcap_stream *s0 = test_stream_create(ctx), *s1 = test_stream_create(ctx);
  gcap_event *e = new_event(ctx);
  unsigned char *d = dev_alloc(ctx, 16);
  for (int m = 0; m < 3; m++) {
    assert_ok(gcap_stream_begin_capture(s0, all_modes[m]));
    uint64_t id = cap_info(s0).id;
    gcap_graph *capture_graph = cap_info(s0).graph;
    assert_ok(gcap_memset_async(s0, d, 1, 16));
    fork_to(s0, s1, e);
    assert_status(gcap_stream_query(s0), GCAP_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    /* later stream-ordered work fails and adds nothing */
    assert_status(gcap_memset_async(s1, d, 2, 16), GCAP_ERROR_STREAM_CAPTURE_INVALIDATED);
    assert_offence(id, "gcap_stream_query", "stream", s0, "1", "STREAM_CAPTURE_UNSUPPORTED");
    assert_int_equal(gcap_graph_node_count(cap_info(s0).graph), 1);
    gcap_graph *g = (gcap_graph *)&g;
    assert_status(gcap_stream_end_capture(s0, &g), GCAP_ERROR_STREAM_CAPTURE_INVALIDATED);
    assert_null(g);
    assert_offence(id, "gcap_stream_query", "stream", s0, "1", "STREAM_CAPTURE_UNSUPPORTED");
    /* the capture graph went with it */
    size_t count = 0;
    assert_status(gcap_graph_get_nodes(capture_graph, NULL, &count), GCAP_ERROR_INVALID_HANDLE);
    assert_int_equal(gcap_graph_node_count(capture_graph), 0);
    gcap_stream *all[2] = {s0, s1};
    for (int i = 0; i < 2; i++) {
      assert_int_equal(cap_status(all[i]), GCAP_CAPTURE_STATUS_NONE);
      assert_ok(gcap_stream_query(all[i]));
      assert_ok(gcap_stream_synchronize(all[i]));
    }
    assert_dev_bytes(ctx, d, 0, 16, 0);
    /* the streams work eagerly and can capture again */
    assert_ok(gcap_memset_async(s1, d, 3, 16));
    assert_ok(gcap_stream_synchronize(s1));
    assert_dev_bytes(ctx, d, 0, 16, 3);
    assert_ok(gcap_stream_begin_capture(s0, all_modes[m]));
    assert_true(cap_info(s0).id > id);
    assert_ok(gcap_memset_async(s0, d, 0, 16));
    g = end_ok(s0);
    run_graph(g, s0);
    assert_dev_bytes(ctx, d, 0, 16, 0);
    gcap_graph_destroy(g);
  }
}

static void test_capture_end_order_unjoined_resets(void **state) {
  gcap_context *ctx = *state;
  gcap_stream *s0 = test_stream_create(ctx), *s1 = test_stream_create(ctx);
  gcap_event *e = new_event(ctx);
  unsigned char *d = dev_alloc(ctx, 16);
  for (int m = 0; m < 3; m++) {
    assert_ok(gcap_stream_begin_capture(s0, all_modes[m]));
    assert_ok(gcap_memset_async(s0, d, 1, 8));
    fork_to(s0, s1, e);
    assert_ok(gcap_memset_async(s1, d + 8, 2, 8)); /* never joined back */
    gcap_graph *capture_graph = cap_info(s0).graph;
    gcap_graph *g = (gcap_graph *)&g;
    assert_status(gcap_stream_end_capture(s0, &g), GCAP_ERROR_STREAM_CAPTURE_UNJOINED);
    assert_null(g);
    test_assert_message_contains("gcap_stream_end_capture");
    size_t count = 0;
    assert_status(gcap_graph_get_nodes(capture_graph, NULL, &count), GCAP_ERROR_INVALID_HANDLE);
    assert_int_equal(cap_status(s0), GCAP_CAPTURE_STATUS_NONE);
    assert_int_equal(cap_status(s1), GCAP_CAPTURE_STATUS_NONE);
    assert_ok(gcap_stream_synchronize(s0));
    assert_ok(gcap_stream_query(s1));
    assert_dev_bytes(ctx, d, 0, 16, 0);
    assert_ok(gcap_memset_async(s1, d, 7, 16)); /* eager again */
    assert_ok(gcap_stream_synchronize(s1));
    assert_dev_bytes(ctx, d, 0, 16, 7);
    /* both can begin again */
    assert_ok(gcap_stream_begin_capture(s1, all_modes[m]));
    assert_ok(gcap_memset_async(s1, d, 0, 16));
    g = end_ok(s1);
    run_graph(g, s0);
    assert_dev_bytes(ctx, d, 0, 16, 0);
    gcap_graph_destroy(g);
  }
}

static void test_capture_end_order_check_order(void **state) {
  gcap_context *ctx = *state;
  gcap_stream *s0 = test_stream_create(ctx), *s1 = test_stream_create(ctx);
  gcap_event *e = new_event(ctx);
  unsigned char *d = dev_alloc(ctx, 16);
  gcap_graph *g;

  /* not capturing beats graph NULL */
  assert_status(gcap_stream_end_capture(s0, NULL), GCAP_ERROR_ILLEGAL_STATE);

  /* graph NULL beats wrong thread; wrong thread beats not-the-origin (and invalidates nothing) */
  assert_ok(gcap_stream_begin_capture(s0, GCAP_CAPTURE_MODE_GLOBAL));
  uint64_t id = cap_info(s0).id;
  assert_ok(gcap_memset_async(s0, d, 1, 16));
  fork_to(s0, s1, e);
  struct worker w = {.s = s0, .pass_graph_ptr = false};
  run_thread(end_worker, &w);
  assert_int_equal(w.status, GCAP_ERROR_INVALID_VALUE);
  w = (struct worker){.s = s1, .pass_graph_ptr = true};
  run_thread(end_worker, &w);
  assert_int_equal(w.status, GCAP_ERROR_STREAM_CAPTURE_WRONG_THREAD);
  assert_null(w.graph);
  assert_int_equal(cap_status(s0), GCAP_CAPTURE_STATUS_ACTIVE);
  /* wrong thread beats unjoined: s1 has unjoined work */
  assert_ok(gcap_memset_async(s1, d, 2, 8));
  w = (struct worker){.s = s0, .pass_graph_ptr = true};
  run_thread(end_worker, &w);
  assert_int_equal(w.status, GCAP_ERROR_STREAM_CAPTURE_WRONG_THREAD);
  assert_int_equal(cap_status(s0), GCAP_CAPTURE_STATUS_ACTIVE);
  assert_int_equal(cap_status(s1), GCAP_CAPTURE_STATUS_ACTIVE);
  /* graph NULL beats not-the-origin */
  assert_status(gcap_stream_end_capture(s1, NULL), GCAP_ERROR_INVALID_VALUE);
  assert_int_equal(cap_status(s0), GCAP_CAPTURE_STATUS_ACTIVE);
  /* the owner: not the origin -> UNMATCHED (it invalidates) */
  g = (gcap_graph *)&g;
  assert_status(gcap_stream_end_capture(s1, &g), GCAP_ERROR_STREAM_CAPTURE_UNMATCHED);
  assert_null(g);
  assert_int_equal(cap_status(s0), GCAP_CAPTURE_STATUS_INVALIDATED);
  /* not the origin beats invalidated */
  assert_status(gcap_stream_end_capture(s1, &g), GCAP_ERROR_STREAM_CAPTURE_UNMATCHED);
  assert_int_equal(cap_status(s1), GCAP_CAPTURE_STATUS_INVALIDATED);
  /* wrong thread beats invalidated */
  w = (struct worker){.s = s0, .pass_graph_ptr = true};
  run_thread(end_worker, &w);
  assert_int_equal(w.status, GCAP_ERROR_STREAM_CAPTURE_WRONG_THREAD);
  assert_int_equal(cap_status(s0), GCAP_CAPTURE_STATUS_INVALIDATED);
  /* invalidated beats unjoined; the first offence is still the one reported */
  end_invalidated(s0, id, "gcap_stream_end_capture", "stream", s1, "STREAM_CAPTURE_UNMATCHED");
  assert_int_equal(cap_status(s1), GCAP_CAPTURE_STATUS_NONE);

  /* invalidated beats unjoined, invalidated through a prohibited query */
  assert_ok(gcap_stream_begin_capture(s0, GCAP_CAPTURE_MODE_THREAD_LOCAL));
  id = cap_info(s0).id;
  assert_ok(gcap_memset_async(s0, d, 1, 16));
  fork_to(s0, s1, e);
  assert_ok(gcap_memset_async(s1, d, 2, 8));
  assert_status(gcap_stream_synchronize(s1), GCAP_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  end_invalidated(s0, id, "gcap_stream_synchronize", "stream", s1, "STREAM_CAPTURE_UNSUPPORTED");
  assert_int_equal(cap_status(s1), GCAP_CAPTURE_STATUS_NONE);

  /* a wrong-thread attempt leaves an unjoined capture to fail as UNJOINED for its owner */
  assert_ok(gcap_stream_begin_capture(s0, GCAP_CAPTURE_MODE_GLOBAL));
  assert_ok(gcap_memset_async(s0, d, 1, 16));
  fork_to(s0, s1, e);
  assert_ok(gcap_memset_async(s1, d, 2, 8));
  w = (struct worker){.s = s0, .pass_graph_ptr = true};
  run_thread(end_worker, &w);
  assert_int_equal(w.status, GCAP_ERROR_STREAM_CAPTURE_WRONG_THREAD);
  g = (gcap_graph *)&g;
  assert_status(gcap_stream_end_capture(s0, &g), GCAP_ERROR_STREAM_CAPTURE_UNJOINED);
  assert_null(g);
  assert_int_equal(cap_status(s1), GCAP_CAPTURE_STATUS_NONE);

  /* RELAXED has no owner check: from another thread, not-the-origin is the first failing check */
  assert_ok(gcap_stream_begin_capture(s0, GCAP_CAPTURE_MODE_RELAXED));
  id = cap_info(s0).id;
  assert_ok(gcap_memset_async(s0, d, 1, 16));
  fork_to(s0, s1, e);
  w = (struct worker){.s = s1, .pass_graph_ptr = true};
  run_thread(end_worker, &w);
  assert_int_equal(w.status, GCAP_ERROR_STREAM_CAPTURE_UNMATCHED);
  assert_null(w.graph);
  assert_int_equal(cap_status(s0), GCAP_CAPTURE_STATUS_INVALIDATED);
  g = (gcap_graph *)&g;
  assert_status(gcap_stream_end_capture(s0, &g), GCAP_ERROR_STREAM_CAPTURE_INVALIDATED);
  assert_null(g);
  test_assert_message_contains("gcap_stream_end_capture(stream ");
  test_assert_message_contains(": STREAM_CAPTURE_UNMATCHED");
  assert_int_equal(cap_status(s1), GCAP_CAPTURE_STATUS_NONE);

  /* after all that, a clean capture still works */
  assert_ok(gcap_stream_begin_capture(s0, GCAP_CAPTURE_MODE_GLOBAL));
  assert_ok(gcap_memset_async(s0, d, 8, 16));
  g = end_ok(s0);
  run_graph(g, s0);
  assert_dev_bytes(ctx, d, 0, 16, 8);
  gcap_graph_destroy(g);
}

static void test_capture_status_is_capturing(void **state) {
  gcap_context *ctx = *state;
  gcap_stream *s0 = test_stream_create(ctx), *s1 = test_stream_create(ctx), *dead = test_stream_create(ctx);
  gcap_event *e = new_event(ctx);
  assert_ok(gcap_stream_destroy(dead));
  gcap_capture_status st;
  assert_status(gcap_stream_is_capturing(s0, NULL), GCAP_ERROR_INVALID_VALUE);
  test_assert_message_contains("gcap_stream_is_capturing");
  assert_status(gcap_stream_is_capturing(NULL, &st), GCAP_ERROR_INVALID_HANDLE);
  assert_status(gcap_stream_is_capturing(dead, &st), GCAP_ERROR_INVALID_HANDLE);
  assert_int_equal(cap_status(s0), GCAP_CAPTURE_STATUS_NONE);
  test_assert_message_empty();
  for (int m = 0; m < 3; m++) {
    assert_ok(gcap_stream_begin_capture(s0, all_modes[m]));
    uint64_t id = cap_info(s0).id;
    assert_int_equal(cap_status(s0), GCAP_CAPTURE_STATUS_ACTIVE);
    assert_int_equal(cap_status(s1), GCAP_CAPTURE_STATUS_NONE);
    fork_to(s0, s1, e);
    assert_int_equal(cap_status(s1), GCAP_CAPTURE_STATUS_ACTIVE);
    /* another thread may ask, in its default GLOBAL mode, without invalidating anything */
    struct worker w = {.s = s1};
    run_thread(query_worker, &w);
    assert_int_equal(w.status, GCAP_SUCCESS);
    assert_int_equal(w.seen, GCAP_CAPTURE_STATUS_ACTIVE);
    assert_int_equal(w.id, id);
    assert_int_equal(cap_status(s0), GCAP_CAPTURE_STATUS_ACTIVE);
    assert_status(gcap_stream_query(s1), GCAP_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    assert_int_equal(cap_status(s0), GCAP_CAPTURE_STATUS_INVALIDATED);
    assert_int_equal(cap_status(s1), GCAP_CAPTURE_STATUS_INVALIDATED);
    w = (struct worker){.s = s0};
    run_thread(query_worker, &w);
    assert_int_equal(w.seen, GCAP_CAPTURE_STATUS_INVALIDATED);
    end_invalidated(s0, 0, NULL, NULL, NULL, NULL);
    assert_int_equal(cap_status(s1), GCAP_CAPTURE_STATUS_NONE);
  }
}

static void test_capture_status_capture_info_frontiers(void **state) {
  gcap_context *ctx = *state;
  gcap_stream *s0 = test_stream_create(ctx), *s1 = test_stream_create(ctx), *s2 = test_stream_create(ctx),
              *dead = test_stream_create(ctx);
  gcap_event *e0 = new_event(ctx), *e1 = new_event(ctx), *e2 = new_event(ctx);
  assert_ok(gcap_stream_destroy(dead));
  unsigned char *d = dev_alloc(ctx, 32);
  gcap_capture_info info;
  assert_status(gcap_stream_get_capture_info(s0, NULL), GCAP_ERROR_INVALID_VALUE);
  test_assert_message_contains("gcap_stream_get_capture_info");
  assert_status(gcap_stream_get_capture_info(NULL, &info), GCAP_ERROR_INVALID_HANDLE);
  assert_status(gcap_stream_get_capture_info(dead, &info), GCAP_ERROR_INVALID_HANDLE);
  info = cap_info(s0); /* pre-filled with garbage by cap_info */
  assert_int_equal(info.status, GCAP_CAPTURE_STATUS_NONE);
  assert_int_equal(info.id, 0);
  assert_null(info.graph);
  assert_null(info.dependencies);
  assert_int_equal(info.num_dependencies, 0);
  test_assert_message_empty();

  for (int m = 0; m < 3; m++) {
    dev_zero(ctx, d, 32);
    assert_ok(gcap_stream_begin_capture(s0, all_modes[m]));
    gcap_capture_info i0 = cap_info(s0);
    assert_frontier(s0, NULL, 0);
    assert_ok(gcap_memset_async(s0, d, 1, 32));
    gcap_node *a = last_node(s0);
    assert_frontier(s0, &a, 1);
    assert_ok(gcap_event_record(e0, s0));
    assert_ok(gcap_stream_wait_event(s1, e0));
    assert_ok(gcap_stream_wait_event(s2, e0));
    gcap_capture_info i1 = cap_info(s1), i2 = cap_info(s2);
    assert_int_equal(i1.id, i0.id);
    assert_int_equal(i2.id, i0.id);
    assert_ptr_equal(i1.graph, i0.graph);
    assert_ptr_equal(i2.graph, i0.graph);
    assert_frontier(s1, &a, 1);
    assert_frontier(s2, &a, 1);
    assert_ok(gcap_memset_async(s1, d, 2, 8));
    gcap_node *b = last_node(s1);
    assert_ok(gcap_memset_async(s2, d + 8, 3, 8));
    gcap_node *c = last_node(s2);
    assert_frontier(s1, &b, 1);
    assert_frontier(s2, &c, 1);
    assert_frontier(s0, &a, 1);
    assert_ok(gcap_event_record(e1, s1));
    assert_ok(gcap_event_record(e2, s2));
    /* frontier order is union order: C joins before B */
    assert_ok(gcap_stream_wait_event(s0, e2));
    gcap_node *ac[2] = {a, c};
    assert_frontier(s0, ac, 2);
    assert_ok(gcap_stream_wait_event(s0, e1));
    gcap_node *acb[3] = {a, c, b};
    assert_frontier(s0, acb, 3);
    assert_ok(gcap_memcpy_async(s0, d + 16, d, 16, GCAP_MEMCPY_DEVICE_TO_DEVICE));
    gcap_node *dn = last_node(s0);
    assert_deps(dn, acb, 3);
    assert_frontier(s0, &dn, 1);
    assert_frontier(s1, &b, 1);
    gcap_graph *g = end_ok(s0);
    assert_ptr_equal(g, i0.graph);
    assert_int_equal(gcap_graph_node_count(g), 4);
    gcap_node *from[5] = {a, a, a, c, b}, *to[5] = {b, c, dn, dn, dn};
    assert_edges(g, from, to, 5);
    run_graph(g, s0);
    assert_dev_bytes(ctx, d, 0, 8, 2);
    assert_dev_bytes(ctx, d, 8, 8, 3);
    assert_dev_bytes(ctx, d, 16, 8, 2);
    assert_dev_bytes(ctx, d, 24, 8, 3);
    gcap_graph_destroy(g);
  }
}

struct capture_job {
  gcap_stream *s;
  gcap_capture_mode mode;
  unsigned char *dst;
  int value;
  struct barrier *barrier;
  gcap_status status;
  uint64_t id;
  gcap_graph *graph;
  gcap_capture_status during;
};

static void *capture_worker(void *arg) {
  struct capture_job *j = arg;
  j->status = gcap_stream_begin_capture(j->s, j->mode);
  barrier_wait(j->barrier); /* every capture is active from here on */
  gcap_capture_info info;
  if (j->status == GCAP_SUCCESS) j->status = gcap_stream_get_capture_info(j->s, &info);
  if (j->status == GCAP_SUCCESS) j->id = info.id;
  if (j->status == GCAP_SUCCESS) j->status = gcap_memset_async(j->s, j->dst, j->value, 16);
  if (j->status == GCAP_SUCCESS) j->status = gcap_launch_host_func(j->s, log_value, (void *)(intptr_t)j->value);
  barrier_wait(j->barrier); /* every thread has recorded its work */
  if (j->status == GCAP_SUCCESS) j->status = gcap_stream_is_capturing(j->s, &j->during);
  if (j->status == GCAP_SUCCESS) j->status = gcap_stream_end_capture(j->s, &j->graph);
  return NULL;
}

static void test_capture_concurrent_captures_threads(void **state) {
  gcap_context *ctx = *state;
  enum { N = 3 };
  gcap_stream *s[N];
  for (int i = 0; i < N; i++) s[i] = test_stream_create(ctx);
  unsigned char *d = dev_alloc(ctx, 16 * N);
  for (int m = 0; m < 3; m++) {
    dev_zero(ctx, d, 16 * N);
    struct barrier barrier;
    barrier_init(&barrier, N);
    struct capture_job jobs[N];
    pthread_t threads[N];
    for (int i = 0; i < N; i++) {
      jobs[i] = (struct capture_job){.s = s[i],
                                     .mode = all_modes[m],
                                     .dst = d + 16 * i,
                                     .value = 10 * m + i + 1,
                                     .barrier = &barrier,
                                     .status = GCAP_ERROR_BACKEND};
      assert_int_equal(pthread_create(&threads[i], NULL, capture_worker, &jobs[i]), 0);
    }
    for (int i = 0; i < N; i++) assert_int_equal(pthread_join(threads[i], NULL), 0);
    barrier_destroy(&barrier);
    for (int i = 0; i < N; i++) {
      assert_int_equal(jobs[i].status, GCAP_SUCCESS);
      assert_int_equal(jobs[i].during, GCAP_CAPTURE_STATUS_ACTIVE);
      assert_true(jobs[i].id != 0);
      for (int k = 0; k < i; k++) assert_true(jobs[k].id != jobs[i].id);
      assert_int_equal(gcap_graph_node_count(jobs[i].graph), 2);
      assert_int_equal(gcap_graph_edge_count(jobs[i].graph), 1);
    }
    assert_dev_bytes(ctx, d, 0, 16 * N, 0);
    host_log.count = 0;
    for (int i = 0; i < N; i++) {
      run_graph(jobs[i].graph, s[0]);
      assert_dev_bytes(ctx, d, 16 * (size_t)i, 16, (unsigned char)jobs[i].value);
      gcap_graph_destroy(jobs[i].graph);
    }
    const int expect[N] = {10 * m + 1, 10 * m + 2, 10 * m + 3};
    assert_log(expect, N);
  }
  /* one thread, two independent captures at once */
  dev_zero(ctx, d, 16 * N);
  assert_ok(gcap_stream_begin_capture(s[0], GCAP_CAPTURE_MODE_GLOBAL));
  assert_ok(gcap_stream_begin_capture(s[1], GCAP_CAPTURE_MODE_THREAD_LOCAL));
  assert_true(cap_info(s[0]).id != cap_info(s[1]).id);
  assert_ok(gcap_memset_async(s[0], d, 1, 16));
  assert_ok(gcap_memset_async(s[1], d + 16, 2, 16));
  gcap_graph *g0 = end_ok(s[0]), *g1 = end_ok(s[1]);
  assert_int_equal(gcap_graph_node_count(g0), 1);
  assert_int_equal(gcap_graph_node_count(g1), 1);
  run_graph(g1, s[2]);
  assert_dev_bytes(ctx, d, 0, 16, 0);
  assert_dev_bytes(ctx, d, 16, 16, 2);
  run_graph(g0, s[2]);
  assert_dev_bytes(ctx, d, 0, 16, 1);
  gcap_graph_destroy(g0);
  gcap_graph_destroy(g1);
}

static void test_capture_stream_destroyed(void **state) {
  gcap_context *ctx = *state;
  gcap_stream *s0 = test_stream_create(ctx);
  gcap_event *e = new_event(ctx);
  unsigned char *d = dev_alloc(ctx, 16);
  for (int m = 0; m < 3; m++) {
    /* The origin cannot go; a stream that joined can, and the capture goes on without it. */
    gcap_stream *s1 = test_stream_create(ctx);
    dev_zero(ctx, d, 16);
    assert_ok(gcap_stream_begin_capture(s0, all_modes[m]));
    uint64_t id = cap_info(s0).id;
    assert_ok(gcap_memset_async(s0, d, 1, 16));
    gcap_node *a = last_node(s0);
    fork_to(s0, s1, e);
    assert_ok(gcap_memset_async(s1, d, 2, 8));
    assert_status(gcap_stream_destroy(s0), GCAP_ERROR_ILLEGAL_STATE);
    char needle[64];
    snprintf(needle, sizeof needle, "capture %llu", (unsigned long long)id);
    test_assert_message_contains("gcap_stream_destroy");
    test_assert_message_contains(needle);
    assert_int_equal(cap_status(s0), GCAP_CAPTURE_STATUS_ACTIVE);
    assert_frontier(s0, &a, 1);
    fork_to(s1, s0, e);
    assert_ok(gcap_stream_destroy(s1));
    assert_status(gcap_stream_query(s1), GCAP_ERROR_INVALID_HANDLE);
    assert_int_equal(cap_status(s0), GCAP_CAPTURE_STATUS_ACTIVE);
    gcap_graph *g = end_ok(s0);
    assert_int_equal(gcap_graph_node_count(g), 2);
    run_graph(g, s0);
    assert_dev_bytes(ctx, d, 0, 8, 2);
    assert_dev_bytes(ctx, d, 8, 8, 1);
    gcap_graph_destroy(g);
    /* Its work must still have rejoined the origin when the capture ends. */
    s1 = test_stream_create(ctx);
    assert_ok(gcap_stream_begin_capture(s0, all_modes[m]));
    fork_to(s0, s1, e);
    assert_ok(gcap_memset_async(s1, d, 3, 8));
    assert_ok(gcap_stream_destroy(s1));
    gcap_graph *none = NULL;
    assert_status(gcap_stream_end_capture(s0, &none), GCAP_ERROR_STREAM_CAPTURE_UNJOINED);
    assert_null(none);
    /* invalidated captures: the same */
    s1 = test_stream_create(ctx);
    assert_ok(gcap_stream_begin_capture(s0, all_modes[m]));
    fork_to(s0, s1, e);
    assert_status(gcap_stream_query(s0), GCAP_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    assert_status(gcap_stream_destroy(s0), GCAP_ERROR_ILLEGAL_STATE);
    assert_ok(gcap_stream_destroy(s1));
    assert_int_equal(cap_status(s0), GCAP_CAPTURE_STATUS_INVALIDATED);
    end_invalidated(s0, 0, NULL, NULL, NULL, NULL);
  }
  /* once the capture is over, the origin can be destroyed */
  assert_ok(gcap_stream_destroy(s0));
}

/* ============================================================ 3. cross-stream capture */

static void test_capture_chain(void **state) {
  gcap_context *ctx = *state;
  gcap_stream *s = test_stream_create(ctx);
  unsigned char *d = dev_alloc(ctx, 48);
  for (int m = 0; m < 3; m++) {
    dev_zero(ctx, d, 48);
    host_log.count = 0;
    assert_ok(gcap_stream_begin_capture(s, all_modes[m]));
    assert_ok(gcap_memset_async(s, d, 0x11, 16));
    gcap_node *a = last_node(s);
    /* zero-sized work: SUCCESS and no node */
    assert_ok(gcap_memcpy_async(s, d + 16, d, 0, GCAP_MEMCPY_DEVICE_TO_DEVICE));
    assert_ok(gcap_memset_async(s, d, 0, 0));
    assert_ok(gcap_memset_d16_async(s, d, 0, 0));
    assert_ok(gcap_memset_d32_async(s, d, 0, 0));
    assert_int_equal(gcap_graph_node_count(cap_info(s).graph), 1);
    assert_frontier(s, &a, 1);
    assert_ok(gcap_memcpy_async(s, d + 16, d, 16, GCAP_MEMCPY_DEVICE_TO_DEVICE));
    gcap_node *b = last_node(s);
    assert_ok(gcap_launch_host_func(s, log_value, (void *)(intptr_t)7));
    gcap_node *c = last_node(s);
    assert_ok(gcap_memset_d32_async(s, d + 32, 0x22222222u, 4));
    gcap_node *dn = last_node(s);
    assert_frontier(s, &dn, 1);
    gcap_graph *g = end_ok(s);
    gcap_node *nodes[8];
    assert_int_equal(graph_nodes(g, nodes, 8), 4);
    assert_ptr_equal(nodes[0], a);
    assert_ptr_equal(nodes[1], b);
    assert_ptr_equal(nodes[2], c);
    assert_ptr_equal(nodes[3], dn);
    gcap_node *roots[4];
    size_t nroots = 4;
    assert_ok(gcap_graph_get_root_nodes(g, roots, &nroots));
    assert_int_equal(nroots, 1);
    assert_ptr_equal(roots[0], a);
    assert_deps(a, NULL, 0);
    assert_deps(b, &a, 1);
    assert_deps(c, &b, 1);
    assert_deps(dn, &c, 1);
    gcap_node *from[3] = {a, b, c}, *to[3] = {b, c, dn};
    assert_edges(g, from, to, 3);
    assert_dev_bytes(ctx, d, 0, 48, 0);
    assert_int_equal(host_log.count, 0);
    run_graph(g, s);
    assert_dev_bytes(ctx, d, 0, 32, 0x11);
    assert_dev_bytes(ctx, d, 32, 16, 0x22);
    const int expect[] = {7};
    assert_log(expect, 1);
    gcap_graph_destroy(g);
  }
}

static void test_capture_event_record_no_node(void **state) {
  gcap_context *ctx = *state;
  gcap_context *other = test_context_create();
  gcap_event *foreign = new_event(other);
  gcap_stream *s0 = test_stream_create(ctx), *s1 = test_stream_create(ctx);
  gcap_event *e = new_event(ctx), *back = new_event(ctx);
  unsigned char *d = dev_alloc(ctx, 16);
  for (int m = 0; m < 3; m++) {
    dev_zero(ctx, d, 16);
    assert_ok(gcap_stream_begin_capture(s0, all_modes[m]));
    assert_ok(gcap_memset_async(s0, d, 1, 16));
    gcap_node *a = last_node(s0);
    assert_ok(gcap_event_record(e, s0));
    test_assert_message_empty();
    assert_int_equal(gcap_graph_node_count(cap_info(s0).graph), 1);
    assert_frontier(s0, &a, 1);
    assert_ok(gcap_memset_async(s0, d, 2, 8));
    gcap_node *b = last_node(s0);
    assert_ok(gcap_event_record(e, s0)); /* re-recording overwrites: e now holds {B} */
    assert_int_equal(gcap_graph_node_count(cap_info(s0).graph), 2);
    assert_status(gcap_event_record(foreign, s0), GCAP_ERROR_INVALID_HANDLE);
    assert_int_equal(gcap_graph_node_count(cap_info(s0).graph), 2);
    assert_ok(gcap_stream_wait_event(s1, e));
    assert_frontier(s1, &b, 1);
    assert_ok(gcap_memset_async(s1, d + 8, 3, 8));
    gcap_node *c = last_node(s1);
    fork_to(s1, s0, back);
    gcap_graph *g = end_ok(s0);
    assert_int_equal(gcap_graph_node_count(g), 3);
    gcap_node *from[2] = {a, b}, *to[2] = {b, c};
    assert_edges(g, from, to, 2);
    run_graph(g, s0);
    assert_dev_bytes(ctx, d, 0, 8, 2);
    assert_dev_bytes(ctx, d, 8, 8, 3);
    gcap_graph_destroy(g);
  }
  gcap_context_destroy(other);
}

static void test_capture_fork_and_join(void **state) {
  gcap_context *ctx = *state;
  gcap_stream *s0 = test_stream_create(ctx), *s1 = test_stream_create(ctx), *s2 = test_stream_create(ctx);
  gcap_event *e0 = new_event(ctx), *e1 = new_event(ctx), *e2 = new_event(ctx);
  unsigned char *d = dev_alloc(ctx, 48);
  for (int m = 0; m < 3; m++) {
    dev_zero(ctx, d, 48);
    assert_ok(gcap_stream_begin_capture(s0, all_modes[m]));
    uint64_t id = cap_info(s0).id;
    /* work on s1 before it joins runs eagerly and is not part of the graph */
    assert_ok(gcap_memset_async(s1, d + 32, 9, 16));
    assert_int_equal(cap_status(s1), GCAP_CAPTURE_STATUS_NONE);
    assert_ok(gcap_memset_async(s0, d, 1, 16));
    gcap_node *a = last_node(s0);
    assert_ok(gcap_event_record(e0, s0));
    assert_ok(gcap_stream_wait_event(s1, e0));
    assert_int_equal(cap_status(s1), GCAP_CAPTURE_STATUS_ACTIVE);
    assert_int_equal(cap_info(s1).id, id);
    assert_frontier(s1, &a, 1);
    assert_ok(gcap_memset_async(s1, d, 2, 8));
    gcap_node *b = last_node(s1);
    assert_deps(b, &a, 1);
    /* a joined stream forks further */
    assert_ok(gcap_event_record(e1, s1));
    assert_ok(gcap_stream_wait_event(s2, e1));
    assert_int_equal(cap_info(s2).id, id);
    assert_frontier(s2, &b, 1);
    assert_ok(gcap_memcpy_async(s2, d + 16, d, 16, GCAP_MEMCPY_DEVICE_TO_DEVICE));
    gcap_node *c = last_node(s2);
    assert_ok(gcap_event_record(e2, s2));
    assert_ok(gcap_stream_wait_event(s0, e2));
    gcap_node *ac[2] = {a, c};
    assert_frontier(s0, ac, 2);
    gcap_graph *g = end_ok(s0);
    assert_int_equal(cap_status(s2), GCAP_CAPTURE_STATUS_NONE);
    assert_int_equal(gcap_graph_node_count(g), 3);
    gcap_node *from[2] = {a, b}, *to[2] = {b, c};
    assert_edges(g, from, to, 2);
    assert_ok(gcap_stream_synchronize(s1)); /* the eager memset: gcap_memcpy waits for no stream */
    assert_dev_bytes(ctx, d, 32, 16, 9);
    dev_zero(ctx, d + 32, 16);
    run_graph(g, s0);
    assert_dev_bytes(ctx, d, 0, 8, 2);
    assert_dev_bytes(ctx, d, 8, 8, 1);
    assert_dev_bytes(ctx, d, 16, 8, 2);
    assert_dev_bytes(ctx, d, 24, 8, 1);
    assert_dev_bytes(ctx, d, 32, 16, 0); /* the pre-join memset is not in the graph */
    gcap_graph_destroy(g);
  }
}

static void test_capture_fork_join_three_stream_diamond(void **state) {
  gcap_context *ctx = *state;
  gcap_stream *s0 = test_stream_create(ctx), *s1 = test_stream_create(ctx), *s2 = test_stream_create(ctx);
  gcap_event *ea = new_event(ctx), *eb = new_event(ctx), *ec = new_event(ctx);
  unsigned char *d = dev_alloc(ctx, 64);
  for (int m = 0; m < 3; m++) {
    dev_zero(ctx, d, 64);
    host_log.count = 0;
    assert_ok(gcap_stream_begin_capture(s0, all_modes[m]));
    assert_ok(gcap_memset_async(s0, d, 1, 32)); /* A */
    gcap_node *a = last_node(s0);
    assert_ok(gcap_event_record(ea, s0));
    assert_ok(gcap_stream_wait_event(s1, ea));
    assert_ok(gcap_stream_wait_event(s2, ea));
    assert_ok(gcap_memset_async(s1, d, 2, 16)); /* B */
    gcap_node *b = last_node(s1);
    assert_ok(gcap_memset_async(s2, d + 16, 3, 16)); /* C */
    gcap_node *c = last_node(s2);
    assert_ok(gcap_event_record(eb, s1));
    assert_ok(gcap_event_record(ec, s2));
    assert_ok(gcap_stream_wait_event(s0, eb));
    assert_ok(gcap_stream_wait_event(s0, ec));
    assert_ok(gcap_memcpy_async(s0, d + 32, d, 32, GCAP_MEMCPY_DEVICE_TO_DEVICE)); /* D */
    gcap_node *dn = last_node(s0);
    assert_ok(gcap_launch_host_func(s0, log_value, (void *)(intptr_t)42)); /* E */
    gcap_node *en = last_node(s0);
    gcap_graph *g = end_ok(s0);
    gcap_node *nodes[8];
    assert_int_equal(graph_nodes(g, nodes, 8), 5);
    gcap_node *order[5] = {a, b, c, dn, en};
    for (int i = 0; i < 5; i++) assert_ptr_equal(nodes[i], order[i]);
    assert_int_equal(gcap_node_get_type(a), GCAP_NODE_MEMSET);
    assert_int_equal(gcap_node_get_type(dn), GCAP_NODE_MEMCPY);
    assert_int_equal(gcap_node_get_type(en), GCAP_NODE_HOST);
    assert_deps(a, NULL, 0);
    assert_deps(b, &a, 1);
    assert_deps(c, &a, 1);
    gcap_node *abc[3] = {a, b, c}; /* union, no transitive reduction: A stays */
    assert_deps(dn, abc, 3);
    assert_deps(en, &dn, 1);
    gcap_node *from[6] = {a, a, a, b, c, dn}, *to[6] = {b, c, dn, dn, dn, en};
    assert_edges(g, from, to, 6);
    gcap_node *deps[4];
    size_t n = 4;
    assert_ok(gcap_node_get_dependents(a, deps, &n));
    assert_int_equal(n, 3);
    assert_ptr_equal(deps[0], b);
    assert_ptr_equal(deps[1], c);
    assert_ptr_equal(deps[2], dn);
    run_graph(g, s2);
    assert_dev_bytes(ctx, d, 0, 16, 2);
    assert_dev_bytes(ctx, d, 16, 16, 3);
    assert_dev_bytes(ctx, d, 32, 16, 2);
    assert_dev_bytes(ctx, d, 48, 16, 3);
    const int expect[] = {42};
    assert_log(expect, 1);
    gcap_graph_destroy(g);
  }
}

static void test_capture_join_merge_within_sequence(void **state) {
  gcap_context *ctx = *state;
  gcap_stream *s0 = test_stream_create(ctx), *s1 = test_stream_create(ctx);
  gcap_event *e = new_event(ctx), *f = new_event(ctx);
  unsigned char *d = dev_alloc(ctx, 16);
  for (int m = 0; m < 3; m++) {
    dev_zero(ctx, d, 16);
    assert_ok(gcap_stream_begin_capture(s0, all_modes[m]));
    assert_ok(gcap_memset_async(s0, d, 1, 16));
    gcap_node *a = last_node(s0);
    /* record then wait on one's own event back to back: nothing changes */
    assert_ok(gcap_event_record(e, s0));
    assert_ok(gcap_stream_wait_event(s0, e));
    assert_frontier(s0, &a, 1);
    /* waiting twice on the same event: a set, no duplicate */
    assert_ok(gcap_stream_wait_event(s1, e));
    assert_ok(gcap_stream_wait_event(s1, e));
    assert_frontier(s1, &a, 1);
    assert_ok(gcap_memset_async(s0, d, 2, 8));
    gcap_node *b = last_node(s0);
    assert_deps(b, &a, 1);
    /* s1 merges s0's frontier {B} into its own {A} */
    assert_ok(gcap_event_record(f, s0));
    assert_ok(gcap_stream_wait_event(s1, f));
    gcap_node *ab[2] = {a, b};
    assert_frontier(s1, ab, 2);
    assert_ok(gcap_stream_wait_event(s1, f));
    assert_frontier(s1, ab, 2);
    assert_ok(gcap_memset_async(s1, d + 8, 3, 8));
    gcap_node *c = last_node(s1);
    assert_deps(c, ab, 2);
    fork_to(s1, s0, f);
    gcap_node *bc[2] = {b, c};
    assert_frontier(s0, bc, 2);
    gcap_graph *g = end_ok(s0);
    assert_int_equal(gcap_graph_node_count(g), 3);
    gcap_node *from[3] = {a, a, b}, *to[3] = {b, c, c};
    assert_edges(g, from, to, 3);
    run_graph(g, s0);
    assert_dev_bytes(ctx, d, 0, 8, 2);
    assert_dev_bytes(ctx, d, 8, 8, 3);
    gcap_graph_destroy(g);
  }
}

/* RS ...Positive_SelfWaitWithInterveningWork: A, record e, B, C, wait e, D -> 4 nodes, 4 edges. */
static void test_capture_join_self_wait_with_intervening_work(void **state) {
  gcap_context *ctx = *state;
  gcap_stream *s = test_stream_create(ctx);
  gcap_event *e = new_event(ctx);
  unsigned char *d = dev_alloc(ctx, 16);
  for (int m = 0; m < 3; m++) {
    dev_zero(ctx, d, 16);
    host_log.count = 0;
    assert_ok(gcap_stream_begin_capture(s, all_modes[m]));
    assert_ok(gcap_memset_async(s, d, 1, 16));
    gcap_node *a = last_node(s);
    assert_ok(gcap_event_record(e, s));
    assert_ok(gcap_memset_async(s, d, 2, 8));
    gcap_node *b = last_node(s);
    assert_ok(gcap_launch_host_func(s, log_value, (void *)(intptr_t)3));
    gcap_node *c = last_node(s);
    assert_ok(gcap_stream_wait_event(s, e));
    gcap_node *ca[2] = {c, a};
    assert_frontier(s, ca, 2);
    assert_ok(gcap_memset_async(s, d + 12, 4, 4));
    gcap_node *dn = last_node(s);
    gcap_graph *g = end_ok(s);
    assert_int_equal(gcap_graph_node_count(g), 4);
    assert_deps(dn, ca, 2);
    gcap_node *from[4] = {a, b, c, a}, *to[4] = {b, c, dn, dn};
    assert_edges(g, from, to, 4);
    run_graph(g, s);
    assert_dev_bytes(ctx, d, 0, 8, 2);
    assert_dev_bytes(ctx, d, 8, 4, 1);
    assert_dev_bytes(ctx, d, 12, 4, 4);
    const int expect[] = {3};
    assert_log(expect, 1);
    gcap_graph_destroy(g);
  }
}

static void test_capture_merge_across_captures(void **state) {
  gcap_context *ctx = *state;
  gcap_stream *s0 = test_stream_create(ctx), *s1 = test_stream_create(ctx);
  gcap_event *e = new_event(ctx);
  unsigned char *d = dev_alloc(ctx, 16);
  for (int m = 0; m < 3; m++) {
    assert_ok(gcap_stream_begin_capture(s0, all_modes[m]));
    assert_ok(gcap_stream_begin_capture(s1, all_modes[m]));
    uint64_t ida = cap_info(s0).id, idb = cap_info(s1).id;
    assert_ok(gcap_memset_async(s0, d, 1, 16));
    assert_ok(gcap_memset_async(s1, d, 2, 16));
    assert_ok(gcap_event_record(e, s1));
    assert_status(gcap_stream_wait_event(s0, e), GCAP_ERROR_STREAM_CAPTURE_MERGE);
    test_assert_message_contains("gcap_stream_wait_event");
    assert_int_equal(cap_status(s0), GCAP_CAPTURE_STATUS_INVALIDATED);
    assert_int_equal(cap_status(s1), GCAP_CAPTURE_STATUS_INVALIDATED);
    assert_int_equal(cap_info(s0).num_dependencies, 1);
    assert_status(gcap_memset_async(s1, d, 3, 16), GCAP_ERROR_STREAM_CAPTURE_INVALIDATED);
    end_invalidated(s0, ida, "gcap_stream_wait_event", "stream", s0, "STREAM_CAPTURE_MERGE");
    end_invalidated(s1, idb, "gcap_stream_wait_event", "stream", s0, "STREAM_CAPTURE_MERGE");
  }
  assert_dev_bytes(ctx, d, 0, 16, 0);
}

static void test_capture_isolation(void **state) {
  gcap_context *ctx = *state;
  gcap_stream *s0 = test_stream_create(ctx), *s1 = test_stream_create(ctx);
  gcap_event *outside = new_event(ctx), *never = new_event(ctx);
  unsigned char *d = dev_alloc(ctx, 16);
  for (int m = 0; m < 3; m++) {
    dev_zero(ctx, d, 16);
    assert_ok(gcap_memset_async(s1, d, 5, 16));
    assert_ok(gcap_event_record(outside, s1));
    assert_ok(gcap_stream_synchronize(s1)); /* done before the graph below writes d + 8 */
    assert_ok(gcap_stream_begin_capture(s0, all_modes[m]));
    uint64_t id = cap_info(s0).id;
    assert_ok(gcap_memset_async(s0, d, 1, 8));
    gcap_node *a = last_node(s0);
    /* a never-recorded event: nothing to wait for */
    assert_ok(gcap_stream_wait_event(s0, never));
    assert_frontier(s0, &a, 1);
    assert_status(gcap_stream_wait_event(s0, outside), GCAP_ERROR_STREAM_CAPTURE_ISOLATION);
    test_assert_message_contains("gcap_stream_wait_event");
    assert_int_equal(cap_status(s0), GCAP_CAPTURE_STATUS_INVALIDATED);
    assert_int_equal(gcap_graph_node_count(cap_info(s0).graph), 1);
    end_invalidated(s0, id, "gcap_stream_wait_event", "stream", s0, "STREAM_CAPTURE_ISOLATION");
    /* the never-recorded case alone leaves a capture that ends fine */
    assert_ok(gcap_stream_begin_capture(s0, all_modes[m]));
    assert_ok(gcap_stream_wait_event(s0, never));
    assert_ok(gcap_memset_async(s0, d + 8, 6, 8));
    assert_ok(gcap_stream_wait_event(s0, never));
    gcap_graph *g = end_ok(s0);
    assert_int_equal(gcap_graph_node_count(g), 1);
    run_graph(g, s0);
    assert_dev_bytes(ctx, d, 0, 8, 5);
    assert_dev_bytes(ctx, d, 8, 8, 6);
    gcap_graph_destroy(g);
  }
}

static void test_capture_wait_invalidated_event(void **state) {
  gcap_context *ctx = *state;
  gcap_stream *s0 = test_stream_create(ctx), *s1 = test_stream_create(ctx);
  gcap_event *e = new_event(ctx);
  unsigned char *d = dev_alloc(ctx, 16);
  for (int m = 0; m < 3; m++) {
    assert_ok(gcap_stream_begin_capture(s0, all_modes[m]));
    uint64_t id = cap_info(s0).id;
    assert_ok(gcap_memset_async(s0, d, 1, 16));
    assert_ok(gcap_event_record(e, s0));
    assert_status(gcap_stream_query(s0), GCAP_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    assert_status(gcap_stream_wait_event(s1, e), GCAP_ERROR_INVALID_VALUE);
    test_assert_message_contains("gcap_stream_wait_event");
    assert_int_equal(cap_status(s1), GCAP_CAPTURE_STATUS_NONE);
    assert_int_equal(cap_status(s0), GCAP_CAPTURE_STATUS_INVALIDATED);
    /* s1 did not join: it still runs eagerly */
    assert_ok(gcap_memset_async(s1, d, 4, 16));
    assert_ok(gcap_stream_synchronize(s1));
    end_invalidated(s0, id, "gcap_stream_query", "stream", s0, "STREAM_CAPTURE_UNSUPPORTED");
    assert_dev_bytes(ctx, d, 0, 16, 4);
    dev_zero(ctx, d, 16);
  }
}

static void test_captured_event_after_end(void **state) {
  gcap_context *ctx = *state;
  gcap_stream *s0 = test_stream_create(ctx), *s1 = test_stream_create(ctx), *s2 = test_stream_create(ctx);
  gcap_event *e = new_event(ctx);
  unsigned char *d = dev_alloc(ctx, 16);
  for (int m = 0; m < 3; m++) {
    dev_zero(ctx, d, 16);
    assert_ok(gcap_stream_begin_capture(s0, all_modes[m]));
    assert_ok(gcap_memset_async(s0, d, 1, 16));
    assert_ok(gcap_event_record(e, s0));
    gcap_graph *g = end_ok(s0);
    /* 907 with no side effect, even while another capture is active */
    assert_ok(gcap_stream_begin_capture(s2, all_modes[m]));
    uint64_t id2 = cap_info(s2).id;
    assert_status(gcap_event_query(e), GCAP_ERROR_CAPTURED_EVENT);
    test_assert_message_contains("gcap_event_query");
    assert_status(gcap_event_synchronize(e), GCAP_ERROR_CAPTURED_EVENT);
    assert_int_equal(cap_status(s2), GCAP_CAPTURE_STATUS_ACTIVE);
    /* waiting on it: INVALID_VALUE from any stream */
    assert_status(gcap_stream_wait_event(s1, e), GCAP_ERROR_INVALID_VALUE);
    assert_int_equal(cap_status(s1), GCAP_CAPTURE_STATUS_NONE);
    assert_int_equal(cap_status(s2), GCAP_CAPTURE_STATUS_ACTIVE);
    assert_status(gcap_stream_wait_event(s2, e), GCAP_ERROR_INVALID_VALUE);
    assert_int_equal(cap_status(s2), GCAP_CAPTURE_STATUS_INVALIDATED);
    end_invalidated(s2, id2, "gcap_stream_wait_event", "stream", s2, "INVALID_VALUE");
    assert_status(gcap_event_query(e), GCAP_ERROR_CAPTURED_EVENT);
    /* recorded again outside capture, the event is normal */
    assert_ok(gcap_event_record(e, s1));
    assert_ok(gcap_event_synchronize(e));
    assert_ok(gcap_event_query(e)); /* after the synchronize: on a GPU the record may still be pending before */
    assert_ok(gcap_stream_wait_event(s0, e));
    run_graph(g, s0);
    assert_dev_bytes(ctx, d, 0, 16, 1);
    gcap_graph_destroy(g);
    /* the graph its nodes lived in is gone: still 907 and INVALID_VALUE, nothing dangles */
    assert_ok(gcap_stream_begin_capture(s0, all_modes[m]));
    assert_ok(gcap_memset_async(s0, d, 2, 16));
    assert_ok(gcap_event_record(e, s0));
    gcap_graph_destroy(end_ok(s0));
    assert_status(gcap_event_synchronize(e), GCAP_ERROR_CAPTURED_EVENT);
    assert_status(gcap_stream_wait_event(s1, e), GCAP_ERROR_INVALID_VALUE);
    assert_int_equal(cap_status(s1), GCAP_CAPTURE_STATUS_NONE);
    assert_ok(gcap_event_record(e, s1));
  }
}

static void test_capture_joined_unjoined_formal(void **state) {
  gcap_context *ctx = *state;
  gcap_stream *s0 = test_stream_create(ctx), *s1 = test_stream_create(ctx);
  gcap_event *e = new_event(ctx), *back = new_event(ctx);
  unsigned char *d = dev_alloc(ctx, 16);
  gcap_graph *g;
  for (int m = 0; m < 3; m++) {
    /* joined with an empty frontier and did nothing: fine */
    assert_ok(gcap_stream_begin_capture(s0, all_modes[m]));
    fork_to(s0, s1, e);
    assert_int_equal(cap_status(s1), GCAP_CAPTURE_STATUS_ACTIVE);
    assert_frontier(s1, NULL, 0);
    assert_ok(gcap_memset_async(s0, d, 1, 16));
    g = end_ok(s0);
    assert_int_equal(gcap_graph_node_count(g), 1);
    assert_int_equal(cap_status(s1), GCAP_CAPTURE_STATUS_NONE);
    run_graph(g, s0);
    assert_dev_bytes(ctx, d, 0, 16, 1);
    gcap_graph_destroy(g);

    /* joined at the origin's node and did nothing: its frontier reaches the origin */
    assert_ok(gcap_stream_begin_capture(s0, all_modes[m]));
    assert_ok(gcap_memset_async(s0, d, 2, 16));
    fork_to(s0, s1, e);
    assert_ok(gcap_memset_async(s0, d, 3, 8));
    g = end_ok(s0);
    assert_int_equal(gcap_graph_node_count(g), 2);
    run_graph(g, s0);
    assert_dev_bytes(ctx, d, 0, 8, 3);
    assert_dev_bytes(ctx, d, 8, 8, 2);
    gcap_graph_destroy(g);

    /* fork work that never rejoined */
    assert_ok(gcap_stream_begin_capture(s0, all_modes[m]));
    assert_ok(gcap_memset_async(s0, d, 4, 16));
    fork_to(s0, s1, e);
    assert_ok(gcap_memset_async(s1, d, 5, 8));
    g = (gcap_graph *)&g;
    assert_status(gcap_stream_end_capture(s0, &g), GCAP_ERROR_STREAM_CAPTURE_UNJOINED);
    assert_null(g);

    /* rejoined, then more work on the fork */
    assert_ok(gcap_stream_begin_capture(s0, all_modes[m]));
    assert_ok(gcap_memset_async(s0, d, 4, 16));
    fork_to(s0, s1, e);
    assert_ok(gcap_memset_async(s1, d, 5, 8));
    fork_to(s1, s0, back);
    assert_ok(gcap_memset_async(s1, d + 8, 6, 8));
    assert_status(gcap_stream_end_capture(s0, &g), GCAP_ERROR_STREAM_CAPTURE_UNJOINED);
    assert_null(g);

    /* an edge added through the graph API does not join (only capture-made edges count) */
    assert_ok(gcap_stream_begin_capture(s0, all_modes[m]));
    assert_ok(gcap_memset_async(s0, d, 4, 16));
    fork_to(s0, s1, e);
    assert_ok(gcap_memset_async(s1, d, 5, 8));
    gcap_node *b = last_node(s1);
    assert_ok(gcap_memset_async(s0, d + 8, 6, 8));
    gcap_node *c = last_node(s0);
    assert_ok(gcap_graph_add_dependencies(cap_info(s0).graph, &b, &c, 1));
    assert_status(gcap_stream_end_capture(s0, &g), GCAP_ERROR_STREAM_CAPTURE_UNJOINED);
    assert_null(g);

    /* an edge removed through the graph API does not unjoin */
    dev_zero(ctx, d, 16);
    assert_ok(gcap_stream_begin_capture(s0, all_modes[m]));
    fork_to(s0, s1, e);
    assert_ok(gcap_memset_async(s1, d, 7, 8));
    b = last_node(s1);
    fork_to(s1, s0, back);
    assert_ok(gcap_memset_async(s0, d + 8, 8, 8));
    c = last_node(s0);
    assert_ok(gcap_graph_remove_dependencies(cap_info(s0).graph, &b, &c, 1));
    g = end_ok(s0);
    assert_int_equal(gcap_graph_node_count(g), 2);
    assert_int_equal(gcap_graph_edge_count(g), 0);
    run_graph(g, s0);
    assert_dev_bytes(ctx, d, 0, 8, 7);
    assert_dev_bytes(ctx, d, 8, 8, 8);
    gcap_graph_destroy(g);
    assert_int_equal(cap_status(s1), GCAP_CAPTURE_STATUS_NONE);
  }
}

static void test_capture_graph_edits_through_graph_api(void **state) {
  gcap_context *ctx = *state;
  gcap_stream *s = test_stream_create(ctx), *other = test_stream_create(ctx);
  unsigned char *d = dev_alloc(ctx, 32);
  for (int m = 0; m < 3; m++) {
    dev_zero(ctx, d, 32);
    assert_ok(gcap_stream_begin_capture(s, all_modes[m]));
    assert_ok(gcap_memset_async(s, d, 1, 16));
    gcap_node *a = last_node(s);
    gcap_capture_info info = cap_info(s);
    gcap_node *deps[4];
    assert_int_equal(info.num_dependencies, 1);
    memcpy(deps, info.dependencies, info.num_dependencies * sizeof *deps);
    gcap_memset_node_params p = {.dst = d + 16, .value = 2, .element_size = 1, .width = 16, .height = 1, .pitch = 16};
    gcap_node *x = NULL;
    assert_ok(gcap_graph_add_memset_node(info.graph, deps, info.num_dependencies, &p, &x));
    assert_non_null(x);
    assert_frontier(s, &a, 1); /* the graph API leaves the frontier alone */
    assert_ok(gcap_memset_async(s, d, 3, 8));
    gcap_node *b = last_node(s);
    assert_deps(b, &a, 1);
    /* destroying the capture graph does nothing */
    gcap_graph_destroy(info.graph);
    assert_int_equal(cap_status(s), GCAP_CAPTURE_STATUS_ACTIVE);
    assert_int_equal(gcap_graph_node_count(info.graph), 3);
    /* removing its nodes or instantiating it: 900, the capture survives */
    assert_status(gcap_graph_destroy_node(a), GCAP_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    test_assert_message_contains("gcap_graph_destroy_node");
    assert_int_equal(cap_status(s), GCAP_CAPTURE_STATUS_ACTIVE);
    gcap_exec *xe = (gcap_exec *)&xe;
    assert_status(gcap_graph_instantiate(info.graph, 0, &xe), GCAP_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    test_assert_message_contains("gcap_graph_instantiate");
    assert_null(xe);
    assert_int_equal(cap_status(s), GCAP_CAPTURE_STATUS_ACTIVE);
    /* other graphs are fine meanwhile (rules.md#capture-allowed) */
    gcap_graph *side = NULL;
    assert_ok(gcap_graph_create(ctx, &side));
    gcap_exec *sx = NULL;
    assert_ok(gcap_graph_instantiate(side, 0, &sx));
    assert_ok(gcap_exec_launch(sx, other));
    gcap_exec_destroy(sx);
    gcap_graph_destroy(side);
    assert_int_equal(cap_status(s), GCAP_CAPTURE_STATUS_ACTIVE);
    gcap_graph *g = end_ok(s);
    assert_ptr_equal(g, info.graph);
    gcap_node *nodes[4];
    assert_int_equal(graph_nodes(g, nodes, 4), 3);
    assert_ptr_equal(nodes[0], a);
    assert_ptr_equal(nodes[1], x);
    assert_ptr_equal(nodes[2], b);
    gcap_node *from[2] = {a, a}, *to[2] = {x, b};
    assert_edges(g, from, to, 2);
    run_graph(g, s);
    assert_dev_bytes(ctx, d, 0, 8, 3);
    assert_dev_bytes(ctx, d, 8, 8, 1);
    assert_dev_bytes(ctx, d, 16, 16, 2);
    /* after the end it is an ordinary graph */
    assert_ok(gcap_graph_destroy_node(x));
    assert_int_equal(gcap_graph_node_count(g), 2);
    gcap_graph_destroy(g);
  }
}

static void test_capture_empty(void **state) {
  gcap_context *ctx = *state;
  gcap_stream *s = test_stream_create(ctx);
  for (int m = 0; m < 3; m++) {
    assert_ok(gcap_stream_begin_capture(s, all_modes[m]));
    gcap_graph *g = end_ok(s);
    assert_int_equal(gcap_graph_node_count(g), 0);
    assert_int_equal(gcap_graph_edge_count(g), 0);
    size_t n = 3;
    gcap_node *nodes[3];
    nodes[0] = (gcap_node *)&n;
    assert_ok(gcap_graph_get_nodes(g, nodes, &n));
    assert_int_equal(n, 0);
    assert_null(nodes[0]); /* padded with NULL (rules.md#graph-enumerate) */
    gcap_exec *x = NULL;
    assert_ok(gcap_graph_instantiate(g, 0, &x));
    assert_int_equal(gcap_exec_node_count(x), 0);
    assert_ok(gcap_exec_launch(x, s));
    assert_ok(gcap_stream_synchronize(s));
    gcap_exec_destroy(x);
    gcap_graph_destroy(g);
  }
}

static void test_capture_again(void **state) {
  gcap_context *ctx = *state;
  gcap_stream *s = test_stream_create(ctx);
  unsigned char *d = dev_alloc(ctx, 16);
  for (int m = 0; m < 3; m++) {
    assert_ok(gcap_stream_begin_capture(s, all_modes[m]));
    uint64_t id1 = cap_info(s).id;
    assert_ok(gcap_memset_async(s, d, 1, 16));
    gcap_graph *g1 = end_ok(s);
    assert_ok(gcap_stream_begin_capture(s, all_modes[m]));
    uint64_t id2 = cap_info(s).id;
    assert_true(id2 > id1);
    assert_frontier(s, NULL, 0); /* the new capture starts empty, not after g1's node */
    assert_ok(gcap_memset_async(s, d + 8, 2, 8));
    assert_ok(gcap_launch_host_func(s, log_value, (void *)(intptr_t)m));
    gcap_graph *g2 = end_ok(s);
    assert_ptr_not_equal(g1, g2);
    assert_int_equal(gcap_graph_node_count(g1), 1);
    assert_int_equal(gcap_graph_node_count(g2), 2);
    assert_int_equal(gcap_graph_edge_count(g2), 1);
    run_graph(g1, s);
    gcap_graph_destroy(g1);
    assert_dev_bytes(ctx, d, 0, 16, 1);
    host_log.count = 0;
    run_graph(g2, s);
    assert_dev_bytes(ctx, d, 0, 8, 1);
    assert_dev_bytes(ctx, d, 8, 8, 2);
    const int expect[] = {m};
    assert_log(expect, 1);
    gcap_graph_destroy(g2);
    dev_zero(ctx, d, 16);
  }
}

/* ============================================================ 4. what capture records */

static void test_record_node_types(void **state) {
  gcap_context *ctx = *state;
  gcap_kernel *k = load_add(ctx);
  gcap_stream *s0 = test_stream_create(ctx), *s1 = test_stream_create(ctx);
  gcap_event *e = new_event(ctx);
  int32_t *d = (int32_t *)(void *)dev_alloc(ctx, 64);
  unsigned char host[16] = {0};
  for (int m = 0; m < 3; m++) {
    host_log.count = 0;
    dev_zero(ctx, d, 64);
    assert_ok(gcap_stream_begin_capture(s0, all_modes[m]));
    assert_ok(gcap_memset_d32_async(s0, d, 5, 4));
    int32_t v = 3;
    uint32_t n = 4;
    void *args[3] = {&d, &v, &n};
    assert_ok(gcap_launch_kernel(s0, k, GCAP_DIM3(1, 1, 1), GCAP_DIM3(4, 1, 1), 0, args));
    assert_ok(gcap_memcpy_async(s0, host, d, 16, GCAP_MEMCPY_DEVICE_TO_HOST));
    assert_ok(gcap_memset_async(s0, (unsigned char *)d + 16, 1, 16));
    assert_ok(gcap_memset_d16_async(s0, (unsigned char *)d + 32, 0x0202, 8));
    assert_ok(gcap_event_record(e, s0));
    assert_ok(gcap_stream_wait_event(s1, e));
    assert_ok(gcap_launch_host_func(s1, log_value, (void *)(intptr_t)11));
    fork_to(s1, s0, e);
    gcap_graph *g = end_ok(s0);
    gcap_node *nodes[8];
    assert_int_equal(graph_nodes(g, nodes, 8), 6);
    const gcap_node_type want[6] = {GCAP_NODE_MEMSET, GCAP_NODE_KERNEL, GCAP_NODE_MEMCPY,
                                    GCAP_NODE_MEMSET, GCAP_NODE_MEMSET, GCAP_NODE_HOST};
    for (int i = 0; i < 6; i++) assert_int_equal(gcap_node_get_type(nodes[i]), want[i]);
    assert_int_equal(gcap_graph_edge_count(g), 5);
    gcap_memcpy_node_params cp;
    assert_ok(gcap_node_get_memcpy_params(nodes[2], &cp));
    assert_ptr_equal(cp.dst, host);
    assert_ptr_equal(cp.src, d);
    assert_int_equal(cp.bytes, 16);
    assert_int_equal(cp.kind, GCAP_MEMCPY_DEVICE_TO_HOST);
    gcap_kernel_node_params kp;
    assert_ok(gcap_node_get_kernel_params(nodes[1], &kp));
    assert_ptr_equal(kp.kernel, k);
    assert_int_equal(kp.grid.x, 1);
    assert_int_equal(kp.block.x, 4);
    assert_int_equal(kp.shared_mem_bytes, 0);
    run_graph(g, s0);
    int32_t out[4];
    memcpy(out, host, sizeof out);
    for (int i = 0; i < 4; i++) assert_int_equal(out[i], test_on_sim() ? 8 : 5); /* add_sim ran; a stub does not */
    assert_dev_bytes(ctx, (unsigned char *)d, 16, 16, 1);
    assert_dev_bytes(ctx, (unsigned char *)d, 32, 16, 2);
    const int expect[] = {11};
    assert_log(expect, 1);
    gcap_graph_destroy(g);
  }
  assert_ok(gcap_mem_free(ctx, d));
}

static void test_record_kernel_args_copied_at_capture(void **state) {
  gcap_context *ctx = *state;
  gcap_kernel *k = load_add(ctx);
  gcap_stream *s = test_stream_create(ctx);
  int32_t *d = (int32_t *)(void *)dev_alloc(ctx, 4 * sizeof(int32_t));
  int32_t *other = (int32_t *)(void *)dev_alloc(ctx, 4 * sizeof(int32_t));
  for (int m = 0; m < 3; m++) {
    dev_zero(ctx, d, 16);
    dev_zero(ctx, other, 16);
    int32_t *ptr = d;
    int32_t v = 10;
    uint32_t n = 4;
    void *args[3] = {&ptr, &v, &n};
    assert_ok(gcap_stream_begin_capture(s, all_modes[m]));
    assert_ok(gcap_launch_kernel(s, k, GCAP_DIM3(1, 1, 1), GCAP_DIM3(4, 1, 1), 0, args));
    ptr = other;
    v = 1000;
    n = 1;
    gcap_graph *g = end_ok(s);
    gcap_node *node = NULL;
    size_t cnt = 1;
    assert_ok(gcap_graph_get_nodes(g, &node, &cnt));
    gcap_kernel_node_params kp;
    assert_ok(gcap_node_get_kernel_params(node, &kp));
    int32_t *kptr;
    int32_t kv;
    uint32_t kn;
    memcpy(&kptr, kp.args[0], sizeof kptr);
    memcpy(&kv, kp.args[1], sizeof kv);
    memcpy(&kn, kp.args[2], sizeof kn);
    assert_ptr_equal(kptr, d);
    assert_int_equal(kv, 10);
    assert_int_equal(kn, 4);
    assert_ptr_not_equal(kp.args[1], &v);
    run_graph(g, s);
    run_graph(g, s);
    int32_t out[4], untouched[4];
    assert_ok(gcap_memcpy(ctx, out, d, sizeof out, GCAP_MEMCPY_DEVICE_TO_HOST));
    assert_ok(gcap_memcpy(ctx, untouched, other, sizeof untouched, GCAP_MEMCPY_DEVICE_TO_HOST));
    for (int i = 0; i < 4; i++) {
      if (test_on_sim()) assert_int_equal(out[i], 20); /* add_sim ran twice with the captured values */
      assert_int_equal(untouched[i], 0);
    }
    gcap_graph_destroy(g);
  }
}

static void test_record_memset_element_sizes(void **state) {
  gcap_context *ctx = *state;
  gcap_stream *s = test_stream_create(ctx);
  unsigned char *d = dev_alloc(ctx, 64);
  for (int m = 0; m < 3; m++) {
    dev_zero(ctx, d, 64);
    assert_ok(gcap_stream_begin_capture(s, all_modes[m]));
    assert_ok(gcap_memset_async(s, d, 0x1ab, 12));               /* low byte only */
    assert_ok(gcap_memset_d16_async(s, d + 16, 0xbeef, 6));      /* 12 bytes */
    assert_ok(gcap_memset_d32_async(s, d + 32, 0x01020304u, 5)); /* 20 bytes */
    gcap_graph *g = end_ok(s);
    gcap_node *nodes[4];
    assert_int_equal(graph_nodes(g, nodes, 4), 3);
    const unsigned sizes[3] = {1, 2, 4};
    const size_t widths[3] = {12, 6, 5};
    const uint32_t values[3] = {0xab, 0xbeef, 0x01020304u};
    void *const dsts[3] = {d, d + 16, d + 32};
    for (int i = 0; i < 3; i++) {
      assert_int_equal(gcap_node_get_type(nodes[i]), GCAP_NODE_MEMSET);
      gcap_memset_node_params p;
      assert_ok(gcap_node_get_memset_params(nodes[i], &p));
      assert_ptr_equal(p.dst, dsts[i]);
      assert_int_equal(p.element_size, sizes[i]);
      assert_int_equal(p.width, widths[i]);
      assert_int_equal(p.height, 1);
      assert_int_equal(p.value, values[i]);
    }
    run_graph(g, s);
    unsigned char out[64];
    assert_ok(gcap_memcpy(ctx, out, d, 64, GCAP_MEMCPY_DEVICE_TO_HOST));
    for (int i = 0; i < 12; i++) assert_int_equal(out[i], 0xab);
    for (int i = 12; i < 16; i++) assert_int_equal(out[i], 0);
    for (int i = 0; i < 6; i++) {
      uint16_t v;
      memcpy(&v, out + 16 + 2 * i, 2);
      assert_int_equal(v, 0xbeef);
    }
    for (int i = 28; i < 32; i++) assert_int_equal(out[i], 0);
    for (int i = 0; i < 5; i++) {
      uint32_t v;
      memcpy(&v, out + 32 + 4 * i, 4);
      assert_int_equal(v, 0x01020304u);
    }
    for (int i = 52; i < 64; i++) assert_int_equal(out[i], 0);
    gcap_graph_destroy(g);
  }
}

static void test_record_memcpy_pageable_host_copy_at_replay(void **state) {
  gcap_context *ctx = *state;
  gcap_stream *s = test_stream_create(ctx);
  unsigned char *d = dev_alloc(ctx, 32);
  for (int m = 0; m < 3; m++) {
    unsigned char *heap = malloc(16);
    assert_non_null(heap);
    memset(heap, 0x5a, 16);
    uint32_t stack_word = 0;
    assert_ok(gcap_stream_begin_capture(s, all_modes[m]));
    assert_ok(gcap_memcpy_async(s, d, heap, 16, GCAP_MEMCPY_HOST_TO_DEVICE));
    assert_ok(gcap_memcpy_async(s, &stack_word, d + 16, sizeof stack_word, GCAP_MEMCPY_DEFAULT));
    gcap_graph *g = end_ok(s);
    /* nothing was copied at capture */
    assert_dev_bytes(ctx, d, 0, 16, 0);
    assert_int_equal(stack_word, 0);
    gcap_memcpy_node_params p;
    gcap_node *nodes[2];
    assert_int_equal(graph_nodes(g, nodes, 2), 2);
    assert_ok(gcap_node_get_memcpy_params(nodes[1], &p));
    assert_ptr_equal(p.dst, &stack_word);
    /* the replay copies what the buffers hold then */
    memset(heap, 0x6b, 16);
    const uint32_t word = 0xdeadbeefu;
    assert_ok(gcap_memcpy(ctx, d + 16, &word, sizeof word, GCAP_MEMCPY_HOST_TO_DEVICE));
    run_graph(g, s);
    assert_dev_bytes(ctx, d, 0, 16, 0x6b);
    assert_int_equal(stack_word, 0xdeadbeefu);
    free(heap);
    gcap_graph_destroy(g);
    dev_zero(ctx, d, 32);
  }
}

static void test_record_host_fn_null(void **state) {
  gcap_context *ctx = *state;
  gcap_stream *s = test_stream_create(ctx);
  unsigned char *d = dev_alloc(ctx, 16);
  for (int m = 0; m < 3; m++) {
    host_log.count = 0;
    assert_ok(gcap_stream_begin_capture(s, all_modes[m]));
    uint64_t id = cap_info(s).id;
    assert_ok(gcap_memset_async(s, d, 1, 16));
    assert_status(gcap_launch_host_func(s, NULL, &host_log), GCAP_ERROR_INVALID_VALUE);
    test_assert_message_contains("gcap_launch_host_func");
    assert_int_equal(gcap_graph_node_count(cap_info(s).graph), 1);
    assert_int_equal(cap_status(s), GCAP_CAPTURE_STATUS_INVALIDATED);
    assert_status(gcap_launch_host_func(s, log_value, NULL), GCAP_ERROR_STREAM_CAPTURE_INVALIDATED);
    end_invalidated(s, id, "gcap_launch_host_func", "stream", s, "INVALID_VALUE (it would have been node 1)");

    /* a HOST node stores fn and the user_data pointer, not what it points to */
    int value = 1;
    assert_ok(gcap_stream_begin_capture(s, all_modes[m]));
    assert_ok(gcap_launch_host_func(s, log_deref, &value));
    gcap_graph *g = end_ok(s);
    gcap_node *node = NULL;
    size_t n = 1;
    assert_ok(gcap_graph_get_nodes(g, &node, &n));
    assert_int_equal(gcap_node_get_type(node), GCAP_NODE_HOST);
    gcap_host_node_params hp;
    assert_ok(gcap_node_get_host_params(node, &hp));
    assert_true(hp.fn == log_deref);
    assert_ptr_equal(hp.user_data, &value);
    assert_int_equal(host_log.count, 0);
    value = 2;
    run_graph(g, s);
    value = 3;
    run_graph(g, s);
    const int expect[] = {2, 3};
    assert_log(expect, 2);
    gcap_graph_destroy(g);
  }
  assert_dev_bytes(ctx, d, 0, 16, 0);
}

/* A captured stream-ordered allocation is a MEM_ALLOC node whose address is fixed at capture
 * (rules.md#record-mem-alloc). */
static void test_record_mem_alloc_async_in_capture(void **state) {
  gcap_context *ctx = *state;
  gcap_stream *s = test_stream_create(ctx);
  unsigned char host[64];
  memset(host, 0, sizeof host);
  assert_ok(gcap_stream_begin_capture(s, GCAP_CAPTURE_MODE_GLOBAL));
  void *p = NULL;
  assert_ok(gcap_mem_alloc_async(s, 64, &p));
  assert_non_null(p);
  assert_ok(gcap_memset_async(s, p, 0x5A, 64));
  assert_ok(gcap_memcpy_async(s, host, p, 64, GCAP_MEMCPY_DEVICE_TO_HOST));
  assert_ok(gcap_mem_free_async(s, p));
  /* A second free of the same allocation, or a pointer no alloc node returned, is refused and invalidates. */
  gcap_graph *g = NULL;
  assert_ok(gcap_stream_end_capture(s, &g));
  assert_int_equal(gcap_graph_node_count(g), 4);
  gcap_node *nodes[4];
  size_t n = 4;
  assert_ok(gcap_graph_get_nodes(g, nodes, &n));
  assert_int_equal(gcap_node_get_type(nodes[0]), GCAP_NODE_MEM_ALLOC);
  assert_int_equal(gcap_node_get_type(nodes[3]), GCAP_NODE_MEM_FREE);
  gcap_exec *x = NULL;
  assert_ok(gcap_graph_instantiate(g, 0, &x));
  for (int launch = 0; launch < 3; launch++) { /* freed in the graph: relaunching needs no AUTO_FREE */
    memset(host, 0, sizeof host);
    assert_ok(gcap_exec_launch(x, s));
    assert_ok(gcap_stream_synchronize(s));
    assert_int_equal(host[0], 0x5A);
    assert_int_equal(host[63], 0x5A);
  }
  gcap_exec_destroy(x);
  gcap_graph_destroy(g);

  assert_ok(gcap_stream_begin_capture(s, GCAP_CAPTURE_MODE_GLOBAL));
  assert_ok(gcap_mem_alloc_async(s, 64, &p));
  assert_ok(gcap_mem_free_async(s, p));
  assert_status(gcap_mem_free_async(s, p), GCAP_ERROR_INVALID_VALUE);
  test_assert_message_contains("already has a free node");
  assert_status(gcap_stream_end_capture(s, &g), GCAP_ERROR_STREAM_CAPTURE_INVALIDATED);
  assert_null(g);
}

#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)

int main(void) {
  test_require_backend();
  const struct CMUnitTest tests[] = {
      T(test_capture_begin_ids_nonzero_unique),
      T(test_capture_already_begin_on_member_is_illegal_state),
      T(test_capture_begin_bad_mode),
      T(test_capture_mode_exchange),
      T(test_capture_prohibition_predicate),
      T(test_capture_end_returns_graph_members_none),
      T(test_capture_end_order_not_capturing),
      T(test_capture_end_order_wrong_thread),
      T(test_capture_end_order_relaxed_any_thread),
      T(test_capture_end_order_on_member_unmatched),
      T(test_capture_end_order_invalidated_resets),
      T(test_capture_end_order_unjoined_resets),
      T(test_capture_end_order_check_order),
      T(test_capture_status_is_capturing),
      T(test_capture_status_capture_info_frontiers),
      T(test_capture_concurrent_captures_threads),
      T(test_capture_stream_destroyed),
      T(test_capture_chain),
      T(test_capture_event_record_no_node),
      T(test_capture_fork_and_join),
      T(test_capture_fork_join_three_stream_diamond),
      T(test_capture_join_merge_within_sequence),
      T(test_capture_join_self_wait_with_intervening_work),
      T(test_capture_merge_across_captures),
      T(test_capture_isolation),
      T(test_capture_wait_invalidated_event),
      T(test_captured_event_after_end),
      T(test_capture_joined_unjoined_formal),
      T(test_capture_graph_edits_through_graph_api),
      T(test_capture_empty),
      T(test_capture_again),
      T(test_record_node_types),
      T(test_record_kernel_args_copied_at_capture),
      T(test_record_memset_element_sizes),
      T(test_record_memcpy_pageable_host_copy_at_replay),
      T(test_record_host_fn_null),
      T(test_record_mem_alloc_async_in_capture),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
