/*
 * The simulator's DEFERRED execution: stream work waits until the host waits for it, then runs
 * interleaved by the seed, bound only by stream order and event waits.
 */
#define _POSIX_C_SOURCE 200809L /* setenv */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static gcap_context *deferred_context(uint64_t seed, gcap_sim_order order, FILE *trace) {
  gcap_sim_options so;
  gcap_sim_options_init(&so);
  so.exec = GCAP_SIM_EXEC_DEFERRED;
  so.seed = seed;
  so.order = order;
  so.trace = trace;
  return test_sim_context_create(&so);
}

static gcap_event *new_event(gcap_context *ctx) {
  gcap_event *e = NULL;
  assert_ok(gcap_event_create(ctx, &e));
  return e;
}

static unsigned char device_byte(gcap_context *ctx, const void *d) {
  unsigned char b = 0;
  assert_ok(gcap_memcpy(ctx, &b, d, 1, GCAP_MEMCPY_DEVICE_TO_HOST));
  return b;
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

static void test_options_and_environment(void **state) {
  (void)state;
  gcap_sim_options so;
  gcap_sim_options_init(&so);
  assert_int_equal(so.exec, GCAP_SIM_EXEC_IMMEDIATE);
  assert_int_equal(GCAP_SIM_EXEC_IMMEDIATE, 0);
  assert_int_equal(GCAP_SIM_EXEC_DEFERRED, 1);
  so.exec = (gcap_sim_exec)7;
  gcap_context_options o;
  gcap_context_options_init(&o);
  o.backend = GCAP_BACKEND_SIM;
  o.sim = &so;
  gcap_context *ctx = NULL;
  assert_status(gcap_context_create(&o, &ctx), GCAP_ERROR_INVALID_VALUE);
  test_assert_message_contains("options->sim->exec 7 is not IMMEDIATE or DEFERRED");
  assert_null(ctx);

  o.sim = NULL;
  setenv("GCAP_SIM_EXEC", "later", 1);
  assert_status(gcap_context_create(&o, &ctx), GCAP_ERROR_INVALID_VALUE);
  test_assert_message_contains("GCAP_SIM_EXEC=\"later\" is not immediate or deferred");
  setenv("GCAP_SIM_EXEC", "deferred", 1);
  assert_ok(gcap_context_create(&o, &ctx));
  unsetenv("GCAP_SIM_EXEC");
  gcap_stream *s = test_stream_create(ctx);
  struct log log = {{0}, 0};
  struct entry e = {&log, 1};
  assert_ok(gcap_launch_host_func(s, append, &e));
  assert_int_equal(log.count, 0); /* the variable made the context DEFERRED */
  assert_ok(gcap_stream_synchronize(s));
  assert_int_equal(log.count, 1);
  gcap_context_destroy(ctx);
}

/* The bug DEFERRED exists for: results read before the stream was waited for are not there, every time. */
static void test_forgotten_synchronize_finds_host_buffer_unwritten(void **state) {
  (void)state;
  for (uint64_t seed = 0; seed < 4; seed++) {
    gcap_context *ctx = deferred_context(seed, GCAP_SIM_ORDER_CAPTURE, NULL);
    gcap_stream *s = test_stream_create(ctx);
    void *d = test_dev_alloc(ctx, 256);
    unsigned char host[256];
    memset(host, 0, sizeof host);
    assert_ok(gcap_memset_async(s, d, 0x5a, 256));
    assert_ok(gcap_memcpy_async(s, host, d, 256, GCAP_MEMCPY_DEVICE_TO_HOST));
    assert_int_equal(host[0], 0);
    assert_int_equal(host[255], 0);
    assert_ok(gcap_stream_synchronize(s));
    for (size_t i = 0; i < sizeof host; i++) assert_int_equal(host[i], 0x5a);
    gcap_sim_stats st;
    assert_ok(gcap_sim_get_stats(ctx, &st));
    assert_int_equal(st.ops_deferred, 2);
    assert_int_equal(st.bytes_set, 256);
    assert_int_equal(st.bytes_copied, 256);
    gcap_context_destroy(ctx);
  }
}

/* A context of `seed` whose stream a fills 64 bytes at d with 1; stream b follows a only with_event. */
struct two_streams {
  gcap_context *ctx;
  gcap_stream *a, *b;
  void *d;
};

static struct two_streams fill_on_a(uint64_t seed, bool with_event) {
  struct two_streams f = {deferred_context(seed, GCAP_SIM_ORDER_CAPTURE, NULL), NULL, NULL, NULL};
  f.a = test_stream_create(f.ctx), f.b = test_stream_create(f.ctx);
  gcap_event *e = new_event(f.ctx);
  f.d = test_dev_alloc(f.ctx, 64);
  assert_ok(gcap_memset_async(f.a, f.d, 1, 64));
  if (with_event) {
    assert_ok(gcap_event_record(e, f.a));
    assert_ok(gcap_stream_wait_event(f.b, e));
  }
  return f;
}

/* Two streams with no event between them: which fill lands last depends on the seed, and only on it. */
static int last_writer(uint64_t seed, bool with_event) {
  struct two_streams f = fill_on_a(seed, with_event);
  gcap_context *ctx = f.ctx;
  void *d = f.d;
  assert_ok(gcap_memset_async(f.b, d, 2, 64));
  assert_ok(gcap_context_synchronize(ctx));
  int v = device_byte(ctx, d);
  gcap_context_destroy(ctx);
  return v;
}

static void test_unordered_streams_run_in_either_order_by_seed(void **state) {
  (void)state;
  int seen[3] = {0};
  for (uint64_t seed = 0; seed < 32; seed++) {
    int v = last_writer(seed, false);
    assert_true(v == 1 || v == 2);
    assert_int_equal(last_writer(seed, false), v); /* the same seed, the same order */
    seen[v]++;
  }
  assert_true(seen[1] > 0);
  assert_true(seen[2] > 0);
  for (uint64_t seed = 0; seed < 32; seed++) assert_int_equal(last_writer(seed, true), 2);
}

/* Waiting for one stream runs only what it depends on: other streams keep their work queued. */
static void test_synchronize_runs_only_what_it_waits_for(void **state) {
  (void)state;
  gcap_context *ctx = deferred_context(3, GCAP_SIM_ORDER_CAPTURE, NULL);
  gcap_stream *a = test_stream_create(ctx), *b = test_stream_create(ctx);
  gcap_event *e = new_event(ctx);
  struct log log = {{0}, 0};
  struct entry b1 = {&log, 1}, b2 = {&log, 2}, a1 = {&log, 3};
  assert_ok(gcap_launch_host_func(b, append, &b1));
  assert_ok(gcap_event_record(e, b));
  assert_ok(gcap_launch_host_func(b, append, &b2)); /* after the record: a does not wait for it */
  assert_ok(gcap_stream_wait_event(a, e));
  assert_ok(gcap_launch_host_func(a, append, &a1));
  assert_ok(gcap_stream_synchronize(a));
  assert_int_equal(log.count, 2);
  assert_int_equal(log.tags[0], 1);
  assert_int_equal(log.tags[1], 3);
  assert_status(gcap_stream_query(b), GCAP_ERROR_NOT_READY);
  test_assert_message_contains("still has pending work");
  assert_ok(gcap_event_synchronize(e)); /* reached already */
  assert_ok(gcap_stream_synchronize(b));
  assert_int_equal(log.count, 3);
  assert_int_equal(log.tags[2], 2);
  gcap_context_destroy(ctx);
}

/* A query returns NOT_READY while work is pending and runs a step each time, so polling ends. */
static void test_query_polls_to_completion(void **state) {
  (void)state;
  gcap_context *ctx = deferred_context(0, GCAP_SIM_ORDER_CAPTURE, NULL);
  gcap_stream *s = test_stream_create(ctx);
  gcap_event *e = new_event(ctx);
  struct log log = {{0}, 0};
  struct entry en[5];
  for (int i = 0; i < 5; i++) {
    en[i] = (struct entry){&log, i};
    assert_ok(gcap_launch_host_func(s, append, &en[i]));
  }
  assert_ok(gcap_event_record(e, s));
  int polls = 0;
  gcap_status st;
  while ((st = gcap_event_query(e)) == GCAP_ERROR_NOT_READY) {
    polls++;
    assert_int_equal(log.count, polls < 5 ? polls : 5); /* one step per query */
    assert_true(polls < 100);
  }
  assert_ok(st);
  assert_int_equal(polls, 6); /* five host functions and the record */
  assert_ok(gcap_stream_query(s));
  assert_ok(gcap_event_query(e));
  gcap_context_destroy(ctx);
}

/* A launch is one operation of its stream; its nodes interleave with other streams' work. */
static void test_graph_launch_interleaves_with_other_streams(void **state) {
  (void)state;
  int interleaved = 0;
  for (uint64_t seed = 0; seed < 16; seed++) {
    gcap_context *ctx = deferred_context(seed, GCAP_SIM_ORDER_CAPTURE, NULL);
    gcap_stream *a = test_stream_create(ctx), *b = test_stream_create(ctx);
    struct log log = {{0}, 0};
    struct entry g1 = {&log, 1}, g2 = {&log, 2}, g3 = {&log, 3}, other = {&log, 9};
    gcap_graph *g = NULL;
    assert_ok(gcap_graph_create(ctx, &g));
    gcap_node *n1 = NULL, *n2 = NULL, *n3 = NULL;
    gcap_host_node_params p1 = {append, &g1}, p2 = {append, &g2}, p3 = {append, &g3};
    assert_ok(gcap_graph_add_host_node(g, NULL, 0, &p1, &n1));
    assert_ok(gcap_graph_add_host_node(g, &n1, 1, &p2, &n2));
    assert_ok(gcap_graph_add_host_node(g, &n2, 1, &p3, &n3));
    gcap_exec *x = NULL;
    assert_ok(gcap_graph_instantiate(g, 0, &x));
    assert_ok(gcap_exec_launch(x, a));
    assert_ok(gcap_launch_host_func(b, append, &other));
    assert_int_equal(log.count, 0);
    assert_ok(gcap_context_synchronize(ctx));
    assert_int_equal(log.count, 4);
    int at = -1, k = 0;
    for (int i = 0; i < 4; i++) {
      if (log.tags[i] == 9) at = i;
      else assert_int_equal(log.tags[i], ++k); /* the graph's edges hold */
    }
    interleaved += at == 1 || at == 2;
    gcap_sim_stats st;
    assert_ok(gcap_sim_get_stats(ctx, &st));
    assert_int_equal(st.graph_launches, 1);
    assert_int_equal(st.nodes_executed, 3);
    assert_int_equal(st.ops_deferred, 2);
    gcap_exec_destroy(x);
    gcap_graph_destroy(g);
    gcap_context_destroy(ctx);
  }
  assert_true(interleaved > 0);
}

static void fill_graph(gcap_context *ctx, void *d, unsigned char value, gcap_graph **g, gcap_node **n) {
  assert_ok(gcap_graph_create(ctx, g));
  gcap_memset_node_params mp = {d, value, 1, 64, 1, 64};
  assert_ok(gcap_graph_add_memset_node(*g, NULL, 0, &mp, n));
}

/* Launches of one executable run one after another, even on two streams, as on CUDA. */
static void test_launches_of_one_executable_are_ordered(void **state) {
  (void)state;
  for (uint64_t seed = 0; seed < 8; seed++) {
    gcap_context *ctx = deferred_context(seed, GCAP_SIM_ORDER_SHUFFLE, NULL);
    gcap_stream *a = test_stream_create(ctx), *b = test_stream_create(ctx);
    void *d = test_dev_alloc(ctx, 64);
    gcap_graph *g = NULL;
    gcap_node *n = NULL;
    fill_graph(ctx, d, 1, &g, &n);
    gcap_exec *x = NULL;
    assert_ok(gcap_graph_instantiate(g, 0, &x));
    assert_ok(gcap_exec_launch(x, a));
    /* b's launch comes after a's: a's fill is changed to 1 -> 7 only for the second launch */
    gcap_memset_node_params mp = {d, 7, 1, 64, 1, 64};
    assert_ok(gcap_exec_memset_node_set_params(x, n, &mp)); /* runs the queued launch first */
    assert_int_equal(device_byte(ctx, d), 1);
    assert_ok(gcap_exec_launch(x, b));
    assert_ok(gcap_stream_synchronize(b));
    assert_int_equal(device_byte(ctx, d), 7);
    gcap_exec_destroy(x);
    gcap_graph_destroy(g);
    gcap_context_destroy(ctx);
  }
}

/* Destroying an executable, a stream or an event with queued work: the work runs, nothing dangles. */
static void test_destroy_runs_or_outlives_queued_work(void **state) {
  (void)state;
  gcap_context *ctx = deferred_context(1, GCAP_SIM_ORDER_CAPTURE, NULL);
  gcap_stream *a = test_stream_create(ctx), *b = test_stream_create(ctx);
  struct log log = {{0}, 0};
  struct entry h = {&log, 5}, w = {&log, 6};
  gcap_graph *g = NULL;
  assert_ok(gcap_graph_create(ctx, &g));
  gcap_host_node_params hp = {append, &h};
  gcap_node *n = NULL;
  assert_ok(gcap_graph_add_host_node(g, NULL, 0, &hp, &n));
  gcap_exec *x = NULL;
  assert_ok(gcap_graph_instantiate(g, 0, &x));
  assert_ok(gcap_exec_launch(x, a));
  gcap_exec_destroy(x); /* as CUDA: the launch finishes first */
  assert_int_equal(log.count, 1);

  gcap_event *e = new_event(ctx);
  assert_ok(gcap_event_record(e, a));
  assert_ok(gcap_stream_wait_event(b, e));
  assert_ok(gcap_event_destroy(e)); /* the wait still refers to the record */
  assert_ok(gcap_launch_host_func(b, append, &w));
  assert_ok(gcap_stream_destroy(a));
  assert_ok(gcap_stream_destroy(b)); /* runs b's work */
  assert_int_equal(log.count, 2);
  assert_int_equal(log.tags[1], 6);
  gcap_graph_destroy(g);
  gcap_context_destroy(ctx);
}

/* A stream-ordered free takes effect when the stream reaches it; gcap_mem_free waits for all work. */
static void test_frees_wait_for_queued_work(void **state) {
  (void)state;
  gcap_context *ctx = deferred_context(0, GCAP_SIM_ORDER_CAPTURE, NULL);
  gcap_stream *s = test_stream_create(ctx);
  unsigned char host[64];
  memset(host, 0, sizeof host);
  void *d = NULL;
  assert_ok(gcap_mem_alloc_async(s, 64, &d));
  assert_ok(gcap_memset_async(s, d, 0x33, 64));
  assert_ok(gcap_memcpy_async(s, host, d, 64, GCAP_MEMCPY_DEVICE_TO_HOST));
  assert_ok(gcap_mem_free_async(s, d)); /* the queued fill and copy still reach the memory (ASan watches) */
  assert_status(gcap_memset_async(s, d, 0, 64), GCAP_ERROR_INVALID_VALUE); /* freed in stream order */
  assert_int_equal(host[0], 0);
  assert_ok(gcap_stream_synchronize(s));
  assert_int_equal(host[63], 0x33);

  void *e = test_dev_alloc(ctx, 64);
  assert_ok(gcap_memset_async(s, e, 0x44, 64));
  assert_ok(gcap_memcpy_async(s, host, e, 64, GCAP_MEMCPY_DEVICE_TO_HOST));
  assert_ok(gcap_mem_free(ctx, e)); /* as cudaFree: waits for the work first */
  assert_int_equal(host[0], 0x44);
  gcap_context_destroy(ctx);
}

/*
 * A free on another stream with nothing ordering it after the work: on a GPU the work may find
 * its memory gone. Under the seeds where the free runs first, the wait reports it and the work
 * does not run; with an event it never happens.
 */
static gcap_status free_races_fill(uint64_t seed, bool with_event) {
  struct two_streams f = fill_on_a(seed, with_event);
  gcap_context *ctx = f.ctx;
  void *d = f.d;
  assert_ok(gcap_mem_free_async(f.b, d));
  gcap_status st = gcap_context_synchronize(ctx);
  if (st != GCAP_SUCCESS) {
    char expected[256];
    snprintf(expected, sizeof expected,
             "gcap_context_synchronize: operation 1 (memset, issued by gcap_memset_async on stream 1) failed when it "
             "ran: it writes [%p, +64 bytes), which gcap_mem_free_async freed on stream 2 (operation 2) before it ran",
             d);
    test_assert_message_contains(expected);
    gcap_sim_stats stats;
    assert_ok(gcap_sim_get_stats(ctx, &stats));
    assert_int_equal(stats.bytes_set, 0); /* the fill did not run */
  }
  assert_ok(gcap_context_synchronize(ctx)); /* reported once */
  gcap_context_destroy(ctx);
  return st;
}

static void test_free_on_another_stream_before_the_work_is_reported(void **state) {
  (void)state;
  int failed = 0;
  for (uint64_t seed = 0; seed < 16; seed++) {
    gcap_status st = free_races_fill(seed, false);
    assert_true(st == GCAP_SUCCESS || st == GCAP_ERROR_INVALID_VALUE);
    failed += st != GCAP_SUCCESS;
    assert_ok(free_races_fill(seed, true));
  }
  assert_true(failed > 0 && failed < 16);
}

/*
 * Calls that wait for work before they free something cannot report the work's failure: the next
 * wait does, and the call leaves no message. (A stream destroy reports the failure of the stream's
 * own work, as cudaStreamDestroy reports earlier asynchronous errors; the stream is gone all the same.)
 */
static gcap_status unload_after_racing_free(uint64_t seed) {
  struct two_streams f = fill_on_a(seed, false);
  gcap_context *ctx = f.ctx;
  static const size_t sizes[1] = {sizeof(int)};
  gcap_kernel_def def = {.name = "k", .num_params = 1, .param_sizes = sizes};
  gcap_module_desc desc = {.kernels = &def, .num_kernels = 1};
  gcap_module *m = NULL;
  assert_ok(gcap_module_load(ctx, &desc, &m));
  assert_ok(gcap_mem_free_async(f.b, f.d));
  assert_ok(gcap_module_unload(m)); /* runs all the work first */
  test_assert_message_empty();
  gcap_status st = gcap_context_synchronize(ctx);
  if (st != GCAP_SUCCESS) test_assert_message_contains("work run by an earlier call failed");
  assert_ok(gcap_context_synchronize(ctx)); /* reported once */
  gcap_context_destroy(ctx);
  return st;
}

static void test_waits_before_a_free_report_the_work_once(void **state) {
  (void)state;
  int failed = 0;
  for (uint64_t seed = 0; seed < 16; seed++) {
    gcap_status st = unload_after_racing_free(seed);
    assert_true(st == GCAP_SUCCESS || st == GCAP_ERROR_INVALID_VALUE);
    failed += st != GCAP_SUCCESS;
  }
  assert_true(failed > 0 && failed < 16);
}

/*
 * A synchronous copy runs at once and waits for no stream (gcap's streams are non-blocking, so
 * on CUDA it does not either): reading results with it before waiting is the same bug.
 */
static void test_synchronous_copy_does_not_wait_for_streams(void **state) {
  (void)state;
  gcap_context *ctx = deferred_context(0, GCAP_SIM_ORDER_CAPTURE, NULL);
  gcap_stream *a = test_stream_create(ctx);
  void *d = test_dev_alloc(ctx, 64);
  static const unsigned char zeros[64];
  assert_ok(gcap_memcpy(ctx, d, zeros, sizeof zeros, GCAP_MEMCPY_HOST_TO_DEVICE));
  assert_ok(gcap_memset_async(a, d, 0x11, 64));
  assert_int_equal(device_byte(ctx, d), 0);
  assert_status(gcap_stream_query(a), GCAP_ERROR_NOT_READY);
  assert_ok(gcap_stream_synchronize(a));
  assert_int_equal(device_byte(ctx, d), 0x11);
  gcap_context_destroy(ctx);
}

/* Half the block reaches the barrier, half returns: the launch fails, when it runs. */
static void half_barrier(const gcap_sim_thread *t, void *const *args) {
  (void)args;
  if (t->thread_idx.x < t->block_dim.x / 2) gcap_sim_syncthreads(t);
}

static void test_kernel_failing_when_it_runs_is_reported_by_the_wait(void **state) {
  (void)state;
  gcap_context *ctx = deferred_context(0, GCAP_SIM_ORDER_CAPTURE, NULL);
  gcap_stream *s = test_stream_create(ctx);
  static const gcap_kernel_def defs[] = {{.name = "half", .sim_fn = half_barrier}};
  gcap_module_desc desc = {.kernels = defs, .num_kernels = 1};
  gcap_module *m = NULL;
  assert_ok(gcap_module_load(ctx, &desc, &m));
  gcap_kernel *k = test_kernel_of(m, "half");
  struct log log = {{0}, 0};
  struct entry after = {&log, 1};
  assert_ok(gcap_launch_kernel(s, k, GCAP_DIM3(2, 1, 1), GCAP_DIM3(8, 1, 1), 0, NULL));
  assert_ok(gcap_launch_host_func(s, append, &after));
  assert_status(gcap_stream_synchronize(s), GCAP_ERROR_BACKEND); /* the kernel failed, as a driver error would */
  test_assert_message_contains("gcap_stream_synchronize: operation 1 (half, issued by gcap_launch_kernel on stream 1) "
                               "failed when it ran: ");
  test_assert_message_contains("kernel \"half\" block (0,0,0)");
  assert_int_equal(log.count, 1); /* the wait still ran what followed */
  assert_ok(gcap_stream_synchronize(s));
  assert_ok(gcap_module_unload(m));
  gcap_context_destroy(ctx);
}

/* The stream race check works on queued work as on work that already ran: it decides at issue. */
static void test_stream_race_check_with_deferred_work(void **state) {
  (void)state;
  gcap_sim_options so;
  gcap_sim_options_init(&so);
  so.exec = GCAP_SIM_EXEC_DEFERRED;
  so.check_races = true;
  so.strict_memory = true;
  so.threads = 2;
  gcap_context *ctx = test_sim_context_create(&so);
  gcap_stream *a = test_stream_create(ctx), *b = test_stream_create(ctx);
  gcap_event *e = new_event(ctx);
  void *d = test_dev_alloc(ctx, 64);
  assert_ok(gcap_memset_async(a, d, 1, 64));
  assert_status(gcap_memset_async(b, d, 2, 64), GCAP_ERROR_INVALID_VALUE);
  test_assert_message_contains("record an event on stream");
  assert_ok(gcap_event_record(e, a));
  assert_ok(gcap_stream_wait_event(b, e));
  assert_ok(gcap_memset_async(b, d, 2, 64));
  gcap_sim_stats st;
  assert_ok(gcap_sim_get_stats(ctx, &st));
  assert_int_equal(st.stream_races, 1);
  assert_int_equal(st.ops_deferred, 4); /* the refused fill queued nothing */
  assert_int_equal(st.bytes_set, 0);
  assert_ok(gcap_stream_synchronize(b));
  assert_int_equal(device_byte(ctx, d), 2);
  gcap_context_destroy(ctx);
}

/* Host functions run on the thread that waits, still under the callback rules. */
struct refusal {
  gcap_stream *s;
  gcap_status got;
};
static void try_synchronize(void *user_data) {
  struct refusal *r = user_data;
  r->got = gcap_stream_synchronize(r->s);
}

static void test_host_functions_keep_the_callback_rules(void **state) {
  (void)state;
  gcap_context *ctx = deferred_context(0, GCAP_SIM_ORDER_CAPTURE, NULL);
  gcap_stream *s = test_stream_create(ctx);
  struct refusal r = {s, GCAP_SUCCESS};
  assert_ok(gcap_launch_host_func(s, try_synchronize, &r));
  assert_ok(gcap_stream_synchronize(s));
  assert_int_equal(r.got, GCAP_ERROR_ILLEGAL_STATE);
  test_assert_message_empty();
  gcap_context_destroy(ctx);
}

/* Capture records, it queues nothing; the graph launched later runs deferred like any launch. */
static void test_capture_then_deferred_launch(void **state) {
  (void)state;
  gcap_context *ctx = deferred_context(2, GCAP_SIM_ORDER_SHUFFLE, NULL);
  gcap_stream *s = test_stream_create(ctx);
  void *d = test_dev_alloc(ctx, 64);
  unsigned char host[64];
  memset(host, 0, sizeof host);
  assert_ok(gcap_stream_begin_capture(s, GCAP_CAPTURE_MODE_GLOBAL));
  assert_ok(gcap_memset_async(s, d, 0x66, 64));
  assert_ok(gcap_memcpy_async(s, host, d, 64, GCAP_MEMCPY_DEVICE_TO_HOST));
  gcap_graph *g = NULL;
  assert_ok(gcap_stream_end_capture(s, &g));
  gcap_sim_stats st;
  assert_ok(gcap_sim_get_stats(ctx, &st));
  assert_int_equal(st.ops_deferred, 0);
  gcap_exec *x = NULL;
  assert_ok(gcap_graph_instantiate(g, 0, &x));
  assert_ok(gcap_exec_launch(x, s));
  assert_int_equal(host[0], 0);
  assert_ok(gcap_stream_synchronize(s));
  assert_int_equal(host[0], 0x66);
  gcap_exec_destroy(x);
  gcap_graph_destroy(g);
  gcap_context_destroy(ctx);
}

/* The trace shows deferred work when it ran, one row per stream, with an arrow for each event wait. */
static void test_trace_shows_rows_and_arrows(void **state) {
  (void)state;
  FILE *trace = tmpfile();
  assert_non_null(trace);
  gcap_context *ctx = deferred_context(0, GCAP_SIM_ORDER_CAPTURE, trace);
  gcap_stream *a = test_stream_create(ctx), *b = test_stream_create(ctx);
  gcap_event *e = new_event(ctx);
  void *d = test_dev_alloc(ctx, 64);
  assert_ok(gcap_memset_async(a, d, 1, 64));
  assert_ok(gcap_event_record(e, a));
  assert_ok(gcap_stream_wait_event(b, e));
  assert_ok(gcap_memset_async(b, d, 2, 64));
  assert_ok(gcap_context_synchronize(ctx));
  gcap_context_destroy(ctx);
  rewind(trace);
  static char text[8192];
  size_t n = fread(text, 1, sizeof text - 1, trace);
  text[n] = '\0';
  fclose(trace);
  assert_non_null(strstr(text, "\"name\":\"stream 1\""));
  assert_non_null(strstr(text, "\"name\":\"stream 2\""));
  assert_non_null(strstr(text, "\"name\":\"memset\",\"cat\":\"stream\",\"ph\":\"X\""));
  assert_non_null(strstr(text, "\"name\":\"event record\""));
  assert_non_null(strstr(text, "\"op\":3,\"waits_for_op\":2}"));        /* the wait, on stream 2 */
  assert_non_null(strstr(text, "\"ph\":\"s\",\"id\":3,"));              /* the arrow leaves the record ... */
  assert_non_null(strstr(text, "\"ph\":\"f\",\"bp\":\"e\",\"id\":3,")); /* ... and reaches the wait */
  const char *first = strstr(text, "\"name\":\"memset\""), *record = strstr(text, "\"name\":\"event record\"");
  assert_true(first < record); /* written as they ran, in stream order */
}

int main(void) {
  test_require_backend();
  if (!test_on_sim()) return 77;
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_options_and_environment),
      cmocka_unit_test(test_forgotten_synchronize_finds_host_buffer_unwritten),
      cmocka_unit_test(test_unordered_streams_run_in_either_order_by_seed),
      cmocka_unit_test(test_synchronize_runs_only_what_it_waits_for),
      cmocka_unit_test(test_query_polls_to_completion),
      cmocka_unit_test(test_graph_launch_interleaves_with_other_streams),
      cmocka_unit_test(test_launches_of_one_executable_are_ordered),
      cmocka_unit_test(test_destroy_runs_or_outlives_queued_work),
      cmocka_unit_test(test_frees_wait_for_queued_work),
      cmocka_unit_test(test_free_on_another_stream_before_the_work_is_reported),
      cmocka_unit_test(test_waits_before_a_free_report_the_work_once),
      cmocka_unit_test(test_synchronous_copy_does_not_wait_for_streams),
      cmocka_unit_test(test_kernel_failing_when_it_runs_is_reported_by_the_wait),
      cmocka_unit_test(test_stream_race_check_with_deferred_work),
      cmocka_unit_test(test_host_functions_keep_the_callback_rules),
      cmocka_unit_test(test_capture_then_deferred_launch),
      cmocka_unit_test(test_trace_shows_rows_and_arrows),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
