/*
 * Regression tests, one per defect: graph memory under allocation failure and after its graph
 * is gone, copies re-checked at relaunch, handle checks racing node creation, status codes,
 * update after a node was destroyed, and what host callbacks may do.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>

#include "base/alloc.h"
#include "common.h"
#include "core/internal.h"

static gcap_context *sim_context(void) { return test_sim_context_create(NULL); }

static void assert_device_bytes(gcap_context *ctx, const void *dev, uint8_t value, size_t bytes) {
  uint8_t host[256];
  assert_true(bytes <= sizeof host);
  assert_ok(gcap_memcpy(ctx, host, dev, bytes, GCAP_MEMCPY_DEVICE_TO_HOST));
  for (size_t i = 0; i < bytes; i++) assert_int_equal(host[i], value);
}

/* ============================================ graph memory under allocation failure */

/*
 * A MEM_FREE node that cannot be recorded: the allocation keeps the reference of its MEM_ALLOC
 * node, so it stays in the allocation table until the capture's graph goes.
 */
static void test_free_async_out_of_memory_keeps_the_allocation(void **state) {
  (void)state;
  bool recorded = false;
  for (long n = 0; !recorded && n < 64; n++) {
    gcap_context *ctx = sim_context();
    gcap_stream *s = NULL;
    assert_ok(gcap_stream_create(ctx, &s));
    assert_ok(gcap_stream_begin_capture(s, GCAP_CAPTURE_MODE_GLOBAL));
    void *p = NULL;
    assert_ok(gcap_mem_alloc_async(s, 256, &p));
    gcap__alloc_fail_after(n);
    gcap_status st = gcap_mem_free_async(s, p);
    gcap__alloc_fail_after(-1);
    recorded = st == GCAP_SUCCESS;
    if (!recorded) {
      assert_int_equal(st, GCAP_ERROR_OUT_OF_MEMORY);
      test_assert_message_contains("gcap_mem_free_async");
    }
    assert_non_null(gcap__find_allocation(ctx, p)); /* the MEM_ALLOC node still holds it */
    gcap_graph *g = NULL;
    assert_status(gcap_stream_end_capture(s, &g), recorded ? GCAP_SUCCESS : GCAP_ERROR_STREAM_CAPTURE_INVALIDATED);
    assert_true((g != NULL) == recorded);
    gcap_graph_destroy(g);
    assert_null(gcap__find_allocation(ctx, p)); /* never launched: gone with its graph */
    gcap_context_destroy(ctx);
  }
  assert_true(recorded);
}

/* A MEM_ALLOC node that cannot be made: the reserved block, its record and table entry go back. */
static void test_alloc_async_out_of_memory_releases_the_reservation(void **state) {
  (void)state;
  bool recorded = false;
  for (long n = 0; !recorded && n < 64; n++) {
    gcap_context *ctx = sim_context();
    gcap_stream *s = NULL;
    assert_ok(gcap_stream_create(ctx, &s));
    gcap_pool *pool = NULL;
    assert_ok(gcap_pool_create(ctx, &pool));
    gcap_capture_options o;
    gcap_capture_options_init(&o);
    o.pool = pool;
    gcap_capture *c = NULL;
    assert_ok(gcap_capture_begin(s, &o, &c));
    size_t entries = ctx->allocs.count;
    void *p = (void *)1;
    gcap__alloc_fail_after(n);
    gcap_status st = gcap_mem_alloc_async(s, 512, &p);
    gcap__alloc_fail_after(-1);
    recorded = st == GCAP_SUCCESS;
    gcap_pool_stats ps;
    assert_ok(gcap_pool_get_stats(pool, &ps));
    if (!recorded) {
      assert_int_equal(st, GCAP_ERROR_OUT_OF_MEMORY);
      assert_null(p);
      assert_int_equal(ctx->allocs.count, entries);
      assert_int_equal(ps.used_bytes, 0);
    } else {
      assert_int_equal(ctx->allocs.count, entries + 1);
    }
    gcap_capture_destroy(c);
    gcap_pool_release(pool);
    gcap_context_destroy(ctx); /* valgrind and LeakSanitizer see anything left behind */
  }
  assert_true(recorded);
}

/* ====================================================== memory of another context */

/*
 * Another context's device memory is refused on either side of a copy and as a fill's target:
 * taken for host memory, it was read past its end.
 */
static void test_memory_of_another_context_is_refused_as_host_memory_too(void **state) {
  (void)state;
  gcap_context *a = sim_context(), *b = sim_context();
  gcap_stream *s = NULL;
  assert_ok(gcap_stream_create(b, &s));
  uint8_t *foreign = test_dev_alloc(a, 64);
  static uint8_t host[4096];
  gcap_sim_stats before, after;
  assert_ok(gcap_sim_get_stats(b, &before));
  assert_status(gcap_memcpy_async(s, host, foreign, sizeof host, GCAP_MEMCPY_DEFAULT), GCAP_ERROR_INVALID_VALUE);
  test_assert_message_contains("src");
  test_assert_message_contains("is inside an allocation of another context");
  assert_status(gcap_memcpy_async(s, host, foreign, sizeof host, GCAP_MEMCPY_HOST_TO_HOST), GCAP_ERROR_INVALID_VALUE);
  assert_status(gcap_memcpy_async(s, foreign, host, 64, GCAP_MEMCPY_HOST_TO_DEVICE), GCAP_ERROR_INVALID_VALUE);
  test_assert_message_contains("gcap_memcpy_async: dst");
  assert_status(gcap_memset_async(s, foreign + 8, 0, 8), GCAP_ERROR_INVALID_VALUE);
  assert_ok(gcap_sim_get_stats(b, &after));
  assert_int_equal(after.bytes_copied, before.bytes_copied);
  assert_int_equal(after.bytes_set, before.bytes_set);
  assert_ok(gcap_mem_free(a, foreign));
  gcap_context_destroy(a);
  gcap_context_destroy(b);
}

/* ===================================================== copies re-checked at relaunch */

/* A DEFAULT copy keeps the direction it was instantiated with: freed device memory is not host memory. */
static void test_default_copy_with_freed_source_is_refused(void **state) {
  (void)state;
  gcap_context *ctx = sim_context();
  gcap_stream *s = NULL;
  assert_ok(gcap_stream_create(ctx, &s));
  uint8_t host[64];
  static const gcap_memcpy_kind kinds[] = {GCAP_MEMCPY_DEVICE_TO_HOST, GCAP_MEMCPY_DEFAULT};
  for (size_t k = 0; k < 2; k++) {
    gcap_memcpy_kind kind = kinds[k];
    void *dev = test_dev_alloc(ctx, sizeof host);
    gcap_graph *g = NULL;
    assert_ok(gcap_graph_create(ctx, &g));
    gcap_memcpy_node_params cp = {host, dev, sizeof host, kind};
    gcap_node *n = NULL;
    assert_ok(gcap_graph_add_memcpy_node(g, NULL, 0, &cp, &n));
    gcap_exec *x = NULL;
    assert_ok(gcap_graph_instantiate(g, 0, &x));
    assert_ok(gcap_mem_free(ctx, dev));
    gcap_sim_stats before, after;
    assert_ok(gcap_sim_get_stats(ctx, &before));
    assert_status(gcap_exec_launch(x, s), GCAP_ERROR_INVALID_VALUE);
    test_assert_message_contains("not inside a live device allocation");
    assert_ok(gcap_sim_get_stats(ctx, &after));
    assert_int_equal(after.bytes_copied, before.bytes_copied); /* nothing was read */
    gcap_exec_destroy(x);
    gcap_graph_destroy(g);
  }
  gcap_context_destroy(ctx);
}

/* ================================================ graph memory outlives its graph */

/*
 * Captures "allocate 256 bytes, fill them with `value`", launches it once, then destroys the
 * executable and the graph: the allocation they leave behind.
 */
static void *leave_allocated(gcap_stream *s, gcap_pool *pool, uint8_t value) {
  gcap_capture_options o;
  gcap_capture_options_init(&o);
  o.pool = pool;
  gcap_capture *cap = NULL;
  void *p = NULL;
  gcap_graph *g = NULL;
  gcap_exec *x = NULL;
  assert_ok(gcap_capture_begin(s, &o, &cap));
  assert_ok(gcap_mem_alloc_async(s, 256, &p));
  assert_ok(gcap_memset_async(s, p, value, 256));
  assert_ok(gcap_capture_end(cap, &g));
  gcap_capture_destroy(cap);
  assert_ok(gcap_graph_instantiate(g, 0, &x));
  assert_ok(gcap_exec_launch(x, s));
  assert_ok(gcap_stream_synchronize(s));
  gcap_exec_destroy(x);
  gcap_graph_destroy(g);
  return p;
}

/* A graph of one free node for p, captured on s. */
static gcap_graph *capture_free_of(gcap_stream *s, void *p) {
  gcap_graph *g = NULL;
  assert_ok(gcap_stream_begin_capture(s, GCAP_CAPTURE_MODE_GLOBAL));
  assert_ok(gcap_mem_free_async(s, p));
  assert_ok(gcap_stream_end_capture(s, &g));
  return g;
}

static void assert_used(gcap_pool *pool, size_t used, size_t reserved) {
  gcap_pool_stats ps;
  assert_ok(gcap_pool_get_stats(pool, &ps));
  assert_int_equal(ps.used_bytes, used);
  assert_int_equal(ps.reserved_bytes, reserved);
}

/* Capture, replay, drop the graph and its executable, keep the output buffer; gcap_mem_free ends it. */
static void test_graph_memory_outlives_graph_and_executable(void **state) {
  (void)state;
  gcap_context *ctx = sim_context();
  gcap_stream *s = NULL;
  assert_ok(gcap_stream_create(ctx, &s));
  gcap_pool *pool = NULL;
  assert_ok(gcap_pool_create(ctx, &pool));
  void *p = leave_allocated(s, pool, 0x5a);
  assert_used(pool, 256, 256);
  assert_device_bytes(ctx, p, 0x5a, 256);
  assert_ok(gcap_memset_async(s, p, 0x21, 256)); /* stream work may still use it */
  assert_ok(gcap_stream_synchronize(s));
  assert_device_bytes(ctx, p, 0x21, 256);
  assert_ok(gcap_mem_free(ctx, p));
  assert_used(pool, 0, 256); /* the block stays in the pool for the next capture */
  assert_status(gcap_mem_free(ctx, p), GCAP_ERROR_INVALID_VALUE);
  assert_status(gcap_memset_async(s, p, 0, 256), GCAP_ERROR_INVALID_VALUE);
  gcap_pool_release(pool);
  gcap_context_destroy(ctx);
}

/* The free node of another graph frees memory whose own graph is gone. */
static void test_graph_memory_freed_by_another_graph(void **state) {
  (void)state;
  gcap_context *ctx = sim_context();
  gcap_stream *s = NULL;
  assert_ok(gcap_stream_create(ctx, &s));
  void *p = leave_allocated(s, NULL, 0x33);
  gcap_graph *g = capture_free_of(s, p);
  assert_device_bytes(ctx, p, 0x33, 256); /* not freed until the free node runs */
  gcap_exec *x = NULL;
  assert_ok(gcap_graph_instantiate(g, 0, &x));
  assert_ok(gcap_exec_launch(x, s));
  assert_ok(gcap_stream_synchronize(s));
  assert_status(gcap_mem_free(ctx, p), GCAP_ERROR_INVALID_VALUE); /* freed already */
  gcap_exec_destroy(x);
  gcap_graph_destroy(g);
  assert_null(gcap__find_allocation(ctx, p)); /* freed, and no graph holds it any more */
  assert_status(gcap_memset_async(s, p, 0, 256), GCAP_ERROR_INVALID_VALUE);
  gcap_context_destroy(ctx);
}

/* A graph that frees it but is never launched leaves it allocated; context destroy frees it (no leak). */
static void test_graph_memory_left_allocated_at_context_destroy(void **state) {
  (void)state;
  gcap_context *ctx = sim_context();
  gcap_stream *s = NULL;
  assert_ok(gcap_stream_create(ctx, &s));
  gcap_pool *pool = NULL;
  assert_ok(gcap_pool_create(ctx, &pool));
  void *p = leave_allocated(s, pool, 0x11);
  gcap_graph_destroy(capture_free_of(s, p)); /* never launched: the memory is still allocated */
  assert_used(pool, 256, 256);
  assert_device_bytes(ctx, p, 0x11, 256);
  gcap_pool_release(pool); /* the allocation keeps the pool's memory */
  gcap_context_destroy(ctx);
}

/* A 2-D fill's rows start aligned to its elements, as the CUDA driver needs: both backends refuse it alike. */
static void test_fill_pitch_must_keep_rows_aligned(void **state) {
  (void)state;
  gcap_context *ctx = sim_context();
  void *dev = test_dev_alloc(ctx, 256);
  gcap_graph *g = NULL;
  assert_ok(gcap_graph_create(ctx, &g));
  gcap_memset_node_params mp = {dev, 7, 4, 4, 3, 18};
  gcap_node *n = NULL;
  assert_status(gcap_graph_add_memset_node(g, NULL, 0, &mp, &n), GCAP_ERROR_INVALID_VALUE);
  test_assert_message_contains("pitch 18 is not a multiple of the 4-byte element size");
  assert_null(n);
  mp.pitch = 20;
  assert_ok(gcap_graph_add_memset_node(g, NULL, 0, &mp, &n));
  gcap_context_destroy(ctx);
}

/* ============================================= handle checks racing node creation */

struct adder {
  gcap_graph *g;
  int nodes;
};

static void *add_nodes(void *arg) {
  struct adder *a = arg;
  for (int i = 0; i < a->nodes; i++) {
    gcap_node *n = NULL;
    if (gcap_graph_add_empty_node(a->g, NULL, 0, &n) != GCAP_SUCCESS) return arg;
  }
  return NULL;
}

/* ThreadSanitizer reports the race this used to be: a chunk's use count read without the lock. */
static void test_node_checks_while_another_thread_adds_nodes(void **state) {
  (void)state;
  gcap_context *ctx = sim_context();
  gcap_graph *g = NULL;
  assert_ok(gcap_graph_create(ctx, &g));
  gcap_node *first = NULL;
  assert_ok(gcap_graph_add_empty_node(g, NULL, 0, &first));
  struct adder a = {g, 3000};
  pthread_t t;
  assert_int_equal(pthread_create(&t, NULL, add_nodes, &a), 0);
  for (int i = 0; i < 3000; i++) assert_int_equal(gcap_node_get_type(first), GCAP_NODE_EMPTY);
  void *failed = NULL;
  assert_int_equal(pthread_join(t, &failed), 0);
  assert_null(failed);
  size_t count = 0;
  assert_ok(gcap_graph_get_nodes(g, NULL, &count));
  assert_int_equal(count, 3001);
  gcap_context_destroy(ctx);
}

/* =========================================================== status codes */

static void noop_sim(const gcap_sim_thread *t, void *const *args) { (void)t, (void)args; }

static gcap_kernel *load_noop(gcap_context *ctx) {
  static const gcap_kernel_def def = {.name = "noop", .sim_fn = noop_sim};
  gcap_module_desc d = {.kernels = &def, .num_kernels = 1};
  gcap_module *m = NULL;
  assert_ok(gcap_module_load(ctx, &d, &m));
  return test_kernel_of(m, "noop");
}

/* A node or kernel of another context is a bad handle, found before any other argument. */
static void test_foreign_handles_are_invalid_handles(void **state) {
  (void)state;
  gcap_context *ctx = sim_context(), *other = sim_context();
  gcap_graph *g = NULL, *og = NULL;
  assert_ok(gcap_graph_create(ctx, &g));
  assert_ok(gcap_graph_create(other, &og));
  gcap_node *mine = NULL, *foreign = NULL;
  assert_ok(gcap_graph_add_empty_node(g, NULL, 0, &mine));
  assert_ok(gcap_graph_add_empty_node(og, NULL, 0, &foreign));
  gcap_exec *x = NULL;
  assert_ok(gcap_graph_instantiate(g, 0, &x));
  uint8_t host[4];
  gcap_memcpy_node_params cp = {host, host, sizeof host, GCAP_MEMCPY_HOST_TO_HOST};
  assert_status(gcap_exec_memcpy_node_set_params(x, foreign, &cp), GCAP_ERROR_INVALID_HANDLE);
  test_assert_message_contains("node belongs to another context");
  assert_status(gcap_exec_memcpy_node_set_params(x, foreign, NULL), GCAP_ERROR_INVALID_HANDLE);
  assert_status(gcap_exec_node_set_enabled(x, foreign, false), GCAP_ERROR_INVALID_HANDLE);
  test_assert_message_contains("gcap_exec_node_set_enabled: node belongs to another context");

  gcap_kernel *k = load_noop(other);
  gcap_kernel_node_params kp = {k, GCAP_DIM3(1, 1, 1), GCAP_DIM3(1, 1, 1), 0, NULL};
  assert_status(gcap_graph_add_kernel_node(g, NULL, 0, &kp, NULL), GCAP_ERROR_INVALID_HANDLE);
  test_assert_message_contains("params->kernel belongs to another context");
  assert_status(gcap_exec_kernel_node_set_params(x, mine, &kp), GCAP_ERROR_INVALID_HANDLE);
  test_assert_message_contains("params->kernel belongs to another context");
  gcap_context_destroy(ctx);
  gcap_context_destroy(other);
}

/* ========================================== update from a graph that lost a node */

/* As NVIDIA's driver: a graph that lost a node is NOT_SUPPORTED, or TOPOLOGY_CHANGED when the counts differ. */
static void test_update_from_graph_with_destroyed_node_is_refused(void **state) {
  (void)state;
  gcap_context *ctx = sim_context();
  gcap_graph *a = NULL, *b = NULL;
  assert_ok(gcap_graph_create(ctx, &a));
  assert_ok(gcap_graph_create(ctx, &b));
  gcap_node *n = NULL;
  assert_ok(gcap_graph_add_empty_node(a, NULL, 0, &n));
  assert_ok(gcap_graph_add_empty_node(a, NULL, 0, &n));
  assert_ok(gcap_graph_destroy_node(n));
  assert_ok(gcap_graph_add_empty_node(b, NULL, 0, &n));
  gcap_exec *x = NULL;
  assert_ok(gcap_graph_instantiate(b, 0, &x));
  gcap_exec_update_info info = {GCAP_EXEC_UPDATE_SUCCESS, n, n};
  assert_status(gcap_exec_update(x, a, &info), GCAP_ERROR_GRAPH_EXEC_UPDATE_FAILURE);
  assert_int_equal(info.result, GCAP_EXEC_UPDATE_ERROR_NOT_SUPPORTED);
  assert_null(info.error_node);
  assert_null(info.error_from_node);
  test_assert_message_contains("was destroyed");
  assert_ok(gcap_exec_update(x, b, &info)); /* a graph that lost nothing still updates */
  assert_int_equal(info.result, GCAP_EXEC_UPDATE_SUCCESS);
  /* With node counts that differ, it is a changed topology, with no node to name (hip-tests' CountDiffer_2). */
  gcap_exec *two = NULL;
  gcap_graph *c = NULL;
  assert_ok(gcap_graph_create(ctx, &c));
  assert_ok(gcap_graph_add_empty_node(c, NULL, 0, &n));
  assert_ok(gcap_graph_add_empty_node(c, NULL, 0, &n));
  assert_ok(gcap_graph_instantiate(c, 0, &two));
  info = (gcap_exec_update_info){GCAP_EXEC_UPDATE_SUCCESS, n, n};
  assert_status(gcap_exec_update(two, a, &info), GCAP_ERROR_GRAPH_EXEC_UPDATE_FAILURE);
  assert_int_equal(info.result, GCAP_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED);
  assert_null(info.error_node);
  assert_null(info.error_from_node);
  gcap_context_destroy(ctx);
}

/* ============================================================= host callbacks */

struct inside {
  gcap_context *ctx;
  gcap_stream *s, *other;
  gcap_exec *other_exec;
  gcap_event *e;
  gcap_pool *pool;
  void *victim;
  gcap_status st[16];
  char first_message[256];
  int calls;
};

static void try_everything(void *user_data) {
  struct inside *in = user_data;
  void *p = NULL, *h = NULL;
  gcap_stream *s = NULL;
  gcap_event *e = NULL;
  int i = 0;
  in->st[i++] = gcap_mem_free(in->ctx, in->victim);
  snprintf(in->first_message, sizeof in->first_message, "%s", gcap_last_error_message());
  in->st[i++] = gcap_mem_alloc(in->ctx, 64, &p);
  in->st[i++] = gcap_host_alloc(in->ctx, 64, &h);
  in->st[i++] = gcap_mem_alloc_async(in->other, 64, &p);
  in->st[i++] = gcap_mem_free_async(in->other, in->victim);
  in->st[i++] = gcap_memset_async(in->other, in->victim, 0, 64);
  in->st[i++] = gcap_exec_launch(in->other_exec, in->other);
  in->st[i++] = gcap_event_record(in->e, in->other);
  in->st[i++] = gcap_stream_create(in->ctx, &s);
  in->st[i++] = gcap_event_create(in->ctx, &e);
  in->st[i++] = gcap_stream_query(in->other);
  in->st[i++] = gcap_pool_create(in->ctx, &in->pool);
  assert_int_equal(i, 12);
  in->calls++;
}

/*
 * A host node that frees memory a later node writes: refused, like every call that blocks,
 * allocates, frees or issues work, and the enclosing launch still succeeds with "" as message.
 */
static void test_host_node_may_not_free_allocate_or_issue_work(void **state) {
  (void)state;
  struct inside in;
  memset(&in, 0, sizeof in);
  in.ctx = sim_context();
  assert_ok(gcap_stream_create(in.ctx, &in.s));
  assert_ok(gcap_stream_create(in.ctx, &in.other));
  assert_ok(gcap_event_create(in.ctx, &in.e));
  in.victim = test_dev_alloc(in.ctx, 64);
  gcap_graph *empty = NULL, *g = NULL;
  assert_ok(gcap_graph_create(in.ctx, &empty));
  assert_ok(gcap_graph_instantiate(empty, 0, &in.other_exec));
  assert_ok(gcap_graph_create(in.ctx, &g));
  gcap_host_node_params hp = {try_everything, &in};
  gcap_node *host = NULL, *fill = NULL;
  assert_ok(gcap_graph_add_host_node(g, NULL, 0, &hp, &host));
  gcap_memset_node_params mp = {in.victim, 0x7e, 1, 64, 1, 64};
  assert_ok(gcap_graph_add_memset_node(g, &host, 1, &mp, &fill));
  gcap_exec *x = NULL;
  assert_ok(gcap_graph_instantiate(g, 0, &x));
  gcap_sim_stats before, after;
  assert_ok(gcap_sim_get_stats(in.ctx, &before));

  assert_ok(gcap_exec_launch(x, in.s));
  assert_ok(gcap_stream_synchronize(in.s)); /* the host node has run */
  test_assert_message_empty();
  assert_int_equal(in.calls, 1);
  for (int i = 0; i < 12; i++) assert_int_equal(in.st[i], GCAP_ERROR_ILLEGAL_STATE);
  assert_string_equal(in.first_message, "gcap_mem_free: not allowed in a host callback: a callback may not block, "
                                        "allocate, free or issue device work (CUDA forbids API calls there); "
                                        "nothing was done");
  assert_null(in.pool);
  assert_ok(gcap_sim_get_stats(in.ctx, &after));
  assert_int_equal(after.graph_launches, before.graph_launches + 1); /* the other executable never ran */
  assert_int_equal(after.bytes_set, before.bytes_set + 64);          /* only the graph's own fill */
  assert_device_bytes(in.ctx, in.victim, 0x7e, 64);                  /* written while still allocated */
  assert_ok(gcap_mem_free(in.ctx, in.victim));

  /* Eager host functions follow the same rule, and leave no message behind either. */
  in.victim = test_dev_alloc(in.ctx, 64);
  assert_ok(gcap_launch_host_func(in.s, try_everything, &in));
  assert_ok(gcap_stream_synchronize(in.s));
  test_assert_message_empty();
  assert_int_equal(in.calls, 2);
  assert_ok(gcap_mem_free(in.ctx, in.victim));
  gcap_context_destroy(in.ctx);
}

struct doomed {
  gcap_exec *victim;
  gcap_status after;
};

static void destroy_victim(void *user_data) {
  struct doomed *d = user_data;
  gcap_exec_destroy(d->victim);
  d->after = gcap_exec_upload(d->victim, NULL);
}

/* An executable destroyed from a host callback: its handle goes at once, the object after the wait. */
static void test_exec_destroyed_from_callback_goes_after_the_wait(void **state) {
  (void)state;
  gcap_context *ctx = sim_context();
  gcap_stream *s = NULL;
  assert_ok(gcap_stream_create(ctx, &s));
  gcap_graph *g = NULL;
  assert_ok(gcap_graph_create(ctx, &g));
  struct doomed d = {NULL, GCAP_SUCCESS};
  assert_ok(gcap_graph_instantiate(g, 0, &d.victim));
  assert_ok(gcap_launch_host_func(s, destroy_victim, &d));
  assert_ok(gcap_stream_synchronize(s)); /* runs it, then frees the executable: valgrind sees no leak even
                                            without context destroy */
  test_assert_message_empty();
  assert_int_equal(d.after, GCAP_ERROR_INVALID_HANDLE);
  assert_status(gcap_exec_launch(d.victim, s), GCAP_ERROR_INVALID_HANDLE);
  assert_true(ctx->execs.next == &ctx->execs);
  gcap_graph_destroy(g);
  gcap_context_destroy(ctx);
}

int main(void) {
  test_require_backend();
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_free_async_out_of_memory_keeps_the_allocation),
      cmocka_unit_test(test_alloc_async_out_of_memory_releases_the_reservation),
      cmocka_unit_test(test_memory_of_another_context_is_refused_as_host_memory_too),
      cmocka_unit_test(test_default_copy_with_freed_source_is_refused),
      cmocka_unit_test(test_graph_memory_outlives_graph_and_executable),
      cmocka_unit_test(test_graph_memory_freed_by_another_graph),
      cmocka_unit_test(test_graph_memory_left_allocated_at_context_destroy),
      cmocka_unit_test(test_fill_pitch_must_keep_rows_aligned),
      cmocka_unit_test(test_node_checks_while_another_thread_adds_nodes),
      cmocka_unit_test(test_foreign_handles_are_invalid_handles),
      cmocka_unit_test(test_update_from_graph_with_destroyed_node_is_refused),
      cmocka_unit_test(test_host_node_may_not_free_allocate_or_issue_work),
      cmocka_unit_test(test_exec_destroyed_from_callback_goes_after_the_wait),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
