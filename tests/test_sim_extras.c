/* The simulator's extras: shuffled replay, the timeline, options from the environment. */
#define _POSIX_C_SOURCE 200809L /* open_memstream, setenv */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common.h"

/* ---------------------------------------------------------------- a graph that logs its order */

#define MAX_NODES 32
#define LAUNCHES 40

struct order_log {
  int ids[MAX_NODES];
  size_t count;
};

struct tag {
  struct order_log *log;
  int id;
};

static void log_id(void *user_data) {
  struct tag *t = user_data;
  t->log->ids[t->log->count++] = t->id;
}

struct logged_graph {
  gcap_graph *g;
  struct tag tags[MAX_NODES];
  int edges[64][2]; /* ids: from runs before to */
  size_t num_edges;
  int count;
  struct order_log log;
};

static gcap_node *host(struct logged_graph *lg, gcap_graph *into, gcap_node *const *deps, size_t n) {
  struct tag *t = &lg->tags[lg->count];
  *t = (struct tag){&lg->log, lg->count};
  gcap_host_node_params p = {log_id, t};
  gcap_node *node = NULL;
  assert_ok(gcap_graph_add_host_node(into, deps, n, &p, &node));
  for (size_t i = 0; i < n; i++) {
    gcap_host_node_params dp;
    if (gcap_node_get_type(deps[i]) != GCAP_NODE_HOST) continue;
    assert_ok(gcap_node_get_host_params(deps[i], &dp));
    lg->edges[lg->num_edges][0] = ((struct tag *)dp.user_data)->id;
    lg->edges[lg->num_edges++][1] = lg->count;
  }
  lg->count++;
  return node;
}

/*
 * root -> 8 independent nodes -> join -> child graph (a -> b, and c, d beside) -> last.
 * The child's nodes must run after the join and before `last`.
 */
static void build_logged(gcap_context *ctx, struct logged_graph *lg) {
  memset(lg, 0, sizeof *lg);
  assert_ok(gcap_graph_create(ctx, &lg->g));
  gcap_node *root = host(lg, lg->g, NULL, 0), *wide[8];
  for (int i = 0; i < 8; i++) wide[i] = host(lg, lg->g, &root, 1);
  gcap_node *join = host(lg, lg->g, wide, 8);
  gcap_graph *child = NULL;
  assert_ok(gcap_graph_create(ctx, &child));
  int first_child = lg->count;
  gcap_node *a = host(lg, child, NULL, 0);
  host(lg, child, &a, 1);
  host(lg, child, NULL, 0);
  host(lg, child, NULL, 0);
  int after_child = lg->count;
  gcap_node *sub = NULL;
  assert_ok(gcap_graph_add_child_graph_node(lg->g, &join, 1, child, &sub));
  gcap_graph_destroy(child);
  host(lg, lg->g, &sub, 1);
  for (int c = first_child; c < after_child; c++) {
    lg->edges[lg->num_edges][0] = 9, lg->edges[lg->num_edges++][1] = c;           /* join before */
    lg->edges[lg->num_edges][0] = c, lg->edges[lg->num_edges++][1] = after_child; /* last after */
  }
}

static size_t position(const struct order_log *log, int id) {
  for (size_t i = 0; i < log->count; i++)
    if (log->ids[i] == id) return i;
  fail_msg("node %d did not run", id);
  return 0;
}

static void assert_edges_respected(const struct logged_graph *lg) {
  assert_int_equal(lg->log.count, (size_t)lg->count);
  for (size_t e = 0; e < lg->num_edges; e++)
    assert_true(position(&lg->log, lg->edges[e][0]) < position(&lg->log, lg->edges[e][1]));
}

static gcap_context *sim_context(gcap_sim_order order, uint64_t seed, FILE *trace) {
  gcap_sim_options so;
  gcap_sim_options_init(&so);
  so.order = order, so.seed = seed, so.trace = trace;
  return test_sim_context_create(&so);
}

/* The orders of LAUNCHES launches on ctx, one row each; destroys ctx. */
static void record_orders_on(gcap_context *ctx, int orders[LAUNCHES][MAX_NODES]) {
  gcap_stream *s = NULL;
  assert_ok(gcap_stream_create(ctx, &s));
  struct logged_graph *lg = calloc(1, sizeof *lg);
  assert_non_null(lg);
  build_logged(ctx, lg);
  gcap_exec *x = NULL;
  assert_ok(gcap_graph_instantiate(lg->g, 0, &x));
  for (int l = 0; l < LAUNCHES; l++) {
    lg->log.count = 0;
    assert_ok(gcap_exec_launch(x, s));
    assert_ok(gcap_stream_synchronize(s));
    assert_edges_respected(lg);
    memcpy(orders[l], lg->log.ids, sizeof orders[l]);
  }
  gcap_exec_destroy(x);
  gcap_graph_destroy(lg->g);
  free(lg);
  assert_ok(gcap_stream_destroy(s));
  gcap_context_destroy(ctx);
}

static void record_orders(gcap_sim_order order, uint64_t seed, int orders[LAUNCHES][MAX_NODES]) {
  record_orders_on(sim_context(order, seed, NULL), orders);
}

static size_t distinct_orders(int orders[LAUNCHES][MAX_NODES]) {
  size_t distinct = 0;
  for (int l = 0; l < LAUNCHES; l++) {
    bool seen = false;
    for (int k = 0; k < l && !seen; k++) seen = memcmp(orders[k], orders[l], sizeof orders[l]) == 0;
    distinct += !seen;
  }
  return distinct;
}

static void test_shuffle_respects_edges_and_varies(void **state) {
  (void)state;
  static int orders[LAUNCHES][MAX_NODES];
  record_orders(GCAP_SIM_ORDER_SHUFFLE, 7, orders);
  assert_true(distinct_orders(orders) > LAUNCHES / 2); /* 8! * 4! / 2 orders to draw from */
}

static void test_same_seed_same_sequence(void **state) {
  (void)state;
  static int a[LAUNCHES][MAX_NODES], b[LAUNCHES][MAX_NODES], c[LAUNCHES][MAX_NODES];
  record_orders(GCAP_SIM_ORDER_SHUFFLE, 1234, a);
  record_orders(GCAP_SIM_ORDER_SHUFFLE, 1234, b);
  record_orders(GCAP_SIM_ORDER_SHUFFLE, 1235, c);
  assert_memory_equal(a, b, sizeof a);
  assert_memory_not_equal(a, c, sizeof a);
}

static void test_capture_order_is_fixed(void **state) {
  (void)state;
  static int orders[LAUNCHES][MAX_NODES];
  record_orders(GCAP_SIM_ORDER_CAPTURE, 99, orders); /* the seed does not matter */
  assert_int_equal(distinct_orders(orders), 1);
  for (int i = 0; i < 10; i++) assert_int_equal(orders[0][i], i); /* ready nodes in creation order */
  static const int child_then_last[] = {10, 12, 13, 11, 14};      /* a, c, d ready first; b once a ran */
  for (int i = 0; i < 5; i++) assert_int_equal(orders[0][10 + i], child_then_last[i]);
}

static gcap_exec *copy_exec(gcap_context *ctx, void *dst, const void *src) {
  gcap_graph *g = NULL;
  assert_ok(gcap_graph_create(ctx, &g));
  gcap_memcpy_node_params p = {dst, src, 64, GCAP_MEMCPY_DEVICE_TO_DEVICE};
  gcap_node *n = NULL;
  assert_ok(gcap_graph_add_memcpy_node(g, NULL, 0, &p, &n));
  gcap_exec *x = NULL;
  assert_ok(gcap_graph_instantiate(g, 0, &x));
  gcap_graph_destroy(g);
  return x;
}

/*
 * A failing shuffled launch names what replays it: launches are numbered per context, across
 * executables, and one refused before it ran takes no number.
 */
static void test_shuffled_failure_names_seed_and_launch(void **state) {
  (void)state;
  gcap_context *ctx = sim_context(GCAP_SIM_ORDER_SHUFFLE, 42, NULL);
  gcap_stream *s = NULL;
  assert_ok(gcap_stream_create(ctx, &s));
  void *a = test_dev_alloc(ctx, 64), *b = test_dev_alloc(ctx, 64), *c = test_dev_alloc(ctx, 64);
  gcap_exec *good = copy_exec(ctx, c, a), *bad = copy_exec(ctx, b, a);
  assert_ok(gcap_exec_launch(good, s));
  assert_ok(gcap_mem_free(ctx, b));
  assert_status(gcap_exec_launch(bad, s), GCAP_ERROR_INVALID_VALUE);
  test_assert_message_contains("shuffled order, seed 42, launch 2");
  assert_ok(gcap_exec_launch(good, s));
  assert_status(gcap_exec_launch(bad, s), GCAP_ERROR_INVALID_VALUE);
  test_assert_message_contains("shuffled order, seed 42, launch 3");
  gcap_exec_destroy(good);
  gcap_exec_destroy(bad);
  assert_ok(gcap_stream_destroy(s));
  gcap_context_destroy(ctx);
}

/* Under CAPTURE order a failure needs no seed to be replayed, and says none. */
static void test_capture_failure_names_no_order(void **state) {
  (void)state;
  gcap_context *ctx = sim_context(GCAP_SIM_ORDER_CAPTURE, 42, NULL);
  gcap_stream *s = NULL;
  assert_ok(gcap_stream_create(ctx, &s));
  void *a = test_dev_alloc(ctx, 64), *b = test_dev_alloc(ctx, 64);
  gcap_exec *bad = copy_exec(ctx, b, a);
  assert_ok(gcap_mem_free(ctx, b));
  assert_status(gcap_exec_launch(bad, s), GCAP_ERROR_INVALID_VALUE);
  test_assert_message_contains("not inside a live device allocation");
  assert_null(strstr(gcap_last_error_message(), "shuffled"));
  assert_null(strstr(gcap_last_error_message(), "seed"));
  gcap_exec_destroy(bad);
  assert_ok(gcap_stream_destroy(s));
  gcap_context_destroy(ctx);
}

/* ---------------------------------------------------------------- the timeline */

static void scale_sim(const gcap_sim_thread *t, void *const *args) {
  float *y;
  memcpy(&y, args[0], sizeof y);
  y[t->thread_idx.x] *= 2.0f;
}

static void nothing(void *user_data) { (void)user_data; }

/* Brackets and braces balance outside strings, and nothing follows the top-level object. */
static void assert_json_shape(const char *text) {
  int depth = 0;
  bool in_string = false;
  const char *p = text;
  for (; *p && !(depth == 0 && p > text && !in_string); p++) {
    if (in_string) {
      if (*p == '\\') p++;
      else if (*p == '"') in_string = false;
      continue;
    }
    if (*p == '"') in_string = true;
    else if (*p == '{' || *p == '[') depth++;
    else if (*p == '}' || *p == ']') assert_true(--depth >= 0);
  }
  assert_int_equal(depth, 0);
  assert_false(in_string);
  assert_string_equal(p, "\n");
}

/* One event line of the trace: the writer puts each event on a line of its own. */
struct trace_event {
  char name[32], cat[8], ph;
  long tid, node, depth, launch, op; /* -1 when absent */
  bool disabled;
  double ts, dur;
};

#define MAX_EVENTS 64

struct trace {
  struct trace_event events[MAX_EVENTS];
  size_t count, complete; /* all events, "X" events */
};

static long field(const char *line, const char *key) {
  const char *p = strstr(line, key);
  return p ? strtol(p + strlen(key), NULL, 10) : -1;
}

/* A number with exactly three fractional digits, as the trace writes microseconds. */
static double decimal3(const char *line, const char *key) {
  const char *p = strstr(line, key);
  assert_non_null(p);
  char *end = NULL;
  double v = strtod(p + strlen(key), &end);
  const char *dot = strchr(p, '.');
  assert_true(dot && dot < end && end - dot == 4);
  return v;
}

static void copy_quoted(char *out, size_t size, const char *line, const char *key) {
  const char *p = strstr(line, key);
  assert_non_null(p);
  p += strlen(key);
  size_t n = strcspn(p, "\"");
  assert_true(n < size);
  memcpy(out, p, n);
  out[n] = '\0';
}

static void parse_event(struct trace_event *e, const char *line) {
  copy_quoted(e->name, sizeof e->name, line, "{\"name\":\"");
  e->ph = strstr(line, "\"ph\":\"X\"") ? 'X' : strstr(line, "\"ph\":\"M\"") ? 'M' : '?';
  assert_true(e->ph != '?');
  assert_int_equal(field(line, "\"pid\":"), 1);
  e->tid = field(line, "\"tid\":");
  if (e->ph == 'M') return;
  copy_quoted(e->cat, sizeof e->cat, line, "\"cat\":\"");
  e->ts = decimal3(line, "\"ts\":");
  e->dur = decimal3(line, "\"dur\":");
  e->node = field(line, "\"node\":");
  e->depth = field(line, "\"depth\":");
  e->launch = field(line, "\"launch\":");
  e->op = field(line, "\"op\":");
  e->disabled = strstr(line, "\"disabled\":true") != NULL;
}

static void parse_trace(const char *text, struct trace *t) {
  assert_true(strncmp(text, "{\"traceEvents\":[", 16) == 0);
  assert_json_shape(text);
  memset(t, 0, sizeof *t);
  for (const char *line = strstr(text, "\n{\"name\":"); line; line = strstr(line + 1, "\n{\"name\":")) {
    assert_true(t->count < MAX_EVENTS);
    struct trace_event *e = &t->events[t->count++];
    const char *eol = strchr(line + 1, '\n');
    assert_non_null(eol);
    char buf[512];
    assert_true((size_t)(eol - line) < sizeof buf);
    memcpy(buf, line + 1, (size_t)(eol - line - 1));
    buf[eol - line - 1] = '\0';
    parse_event(e, buf);
    t->complete += e->ph == 'X';
  }
}

static const struct trace_event *find_event(const struct trace *t, long launch, long depth, long node) {
  const struct trace_event *found = NULL;
  for (size_t i = 0; i < t->count; i++) {
    const struct trace_event *e = &t->events[i];
    if (e->launch != launch || e->depth != depth || e->node != node) continue;
    assert_null(found); /* one event per node and launch */
    found = e;
  }
  assert_non_null(found);
  return found;
}

/* One thread_name event per stream, written when the stream was made. */
static void assert_stream_named(const struct trace *t, long tid) {
  size_t n = 0;
  for (size_t i = 0; i < t->count; i++)
    n += t->events[i].ph == 'M' && t->events[i].tid == tid && strcmp(t->events[i].name, "thread_name") == 0;
  assert_int_equal(n, 1);
}

struct traced_work {
  gcap_context *ctx;
  gcap_stream *s1, *s2;
  gcap_event *e;
  gcap_module *m;
  gcap_kernel *k;
  float *y, host[64];
  void *args[1];
};

static void traced_setup(struct traced_work *w, FILE *trace) {
  memset(w, 0, sizeof *w);
  w->ctx = sim_context(GCAP_SIM_ORDER_CAPTURE, 0, trace);
  assert_ok(gcap_stream_create(w->ctx, &w->s1));
  assert_ok(gcap_stream_create(w->ctx, &w->s2));
  assert_ok(gcap_event_create(w->ctx, &w->e));
  static const size_t sizes[] = {sizeof(float *)};
  static const gcap_kernel_def def = {.name = "scale", .sim_fn = scale_sim, .num_params = 1, .param_sizes = sizes};
  gcap_module_desc d = {.kernels = &def, .num_kernels = 1};
  assert_ok(gcap_module_load(w->ctx, &d, &w->m));
  w->k = test_kernel_of(w->m, "scale");
  w->y = test_dev_alloc(w->ctx, 64 * sizeof *w->y);
  w->args[0] = &w->y;
}

static void traced_teardown(struct traced_work *w) {
  assert_ok(gcap_event_destroy(w->e));
  assert_ok(gcap_stream_destroy(w->s1));
  assert_ok(gcap_stream_destroy(w->s2));
  gcap_context_destroy(w->ctx);
}

/* Seven operations: five on stream 1, a wait on stream 2, a synchronous copy (thread 0). */
static void traced_eager(struct traced_work *w) {
  assert_ok(gcap_memcpy_async(w->s1, w->y, w->host, sizeof w->host, GCAP_MEMCPY_HOST_TO_DEVICE));
  assert_ok(gcap_memset_async(w->s1, w->y, 0, 16));
  assert_ok(gcap_launch_kernel(w->s1, w->k, GCAP_DIM3(1, 1, 1), GCAP_DIM3(64, 1, 1), 0, w->args));
  assert_ok(gcap_launch_host_func(w->s1, nothing, NULL));
  assert_ok(gcap_event_record(w->e, w->s1));
  assert_ok(gcap_stream_wait_event(w->s2, w->e));
  assert_ok(gcap_memcpy(w->ctx, w->host, w->y, sizeof w->host, GCAP_MEMCPY_DEVICE_TO_HOST));
}

/*
 * kernel (0) -> host (1) -> child graph (2: one fill) ; host -> empty (3) -> event record (4);
 * a copy (5) beside them. Launched on stream 1, on stream 1 with the copy disabled, on stream 2.
 */
static void traced_graph(struct traced_work *w) {
  gcap_graph *g = NULL, *child = NULL;
  assert_ok(gcap_graph_create(w->ctx, &g));
  assert_ok(gcap_graph_create(w->ctx, &child));
  gcap_memset_node_params mp = {w->y, 0, 4, 64, 1, 0};
  gcap_node *fill = NULL, *kn = NULL, *hn = NULL, *sub = NULL, *empty = NULL, *rec = NULL, *copy = NULL;
  assert_ok(gcap_graph_add_memset_node(child, NULL, 0, &mp, &fill));
  gcap_kernel_node_params kp = {w->k, {1, 1, 1}, {64, 1, 1}, 0, w->args};
  assert_ok(gcap_graph_add_kernel_node(g, NULL, 0, &kp, &kn));
  gcap_host_node_params hp = {nothing, NULL};
  assert_ok(gcap_graph_add_host_node(g, &kn, 1, &hp, &hn));
  assert_ok(gcap_graph_add_child_graph_node(g, &hn, 1, child, &sub));
  assert_ok(gcap_graph_add_empty_node(g, &hn, 1, &empty));
  assert_ok(gcap_graph_add_event_record_node(g, &empty, 1, w->e, &rec));
  gcap_memcpy_node_params cp = {w->host, w->y, sizeof w->host, GCAP_MEMCPY_DEVICE_TO_HOST};
  assert_ok(gcap_graph_add_memcpy_node(g, NULL, 0, &cp, &copy));
  gcap_exec *x = NULL;
  assert_ok(gcap_graph_instantiate(g, 0, &x));
  assert_ok(gcap_exec_launch(x, w->s1));
  assert_ok(gcap_exec_node_set_enabled(x, copy, false));
  assert_ok(gcap_exec_launch(x, w->s1));
  assert_ok(gcap_exec_launch(x, w->s2));
  gcap_exec_destroy(x);
  gcap_graph_destroy(child);
  gcap_graph_destroy(g);
}

static char *trace_of(void (*work)(struct traced_work *), gcap_sim_stats *stats) {
  char *text = NULL;
  size_t size = 0;
  FILE *file = open_memstream(&text, &size);
  assert_non_null(file);
  struct traced_work w;
  traced_setup(&w, file);
  work(&w);
  assert_ok(gcap_sim_get_stats(w.ctx, stats));
  traced_teardown(&w);
  assert_int_equal(fclose(file), 0); /* gcap left the stream open */
  return text;
}

static void eager_and_graph(struct traced_work *w) {
  traced_eager(w);
  traced_graph(w);
}

static void assert_eager_events(const struct trace *t) {
  static const char *const names[] = {"memcpy", "memset", "scale", "host", "event record", "event wait", "memcpy"};
  static const long tids[] = {1, 1, 1, 1, 1, 2, 0};
  long op = 0;
  for (size_t i = 0; i < t->count; i++) {
    const struct trace_event *e = &t->events[i];
    if (e->ph != 'X' || strcmp(e->cat, "stream") != 0) continue;
    assert_true(op < 7);
    assert_int_equal(e->op, op + 1);
    assert_string_equal(e->name, names[op]);
    assert_int_equal(e->tid, tids[op]);
    assert_int_equal(e->launch, -1);
    op++;
  }
  assert_int_equal(op, 7);
}

static void assert_graph_events(const struct trace *t) {
  /* The kernel's name, else gcap__node_type_name; node 2 is the child graph. */
  static const char *const names[] = {"scale", "host", "", "empty", "event record", "memcpy"};
  for (long launch = 1; launch <= 3; launch++) {
    for (long node = 0; node < 6; node++) {
      if (node == 2) continue; /* the child graph's entry is not an event; its fill is */
      const struct trace_event *e = find_event(t, launch, 0, node);
      assert_string_equal(e->cat, "graph");
      assert_string_equal(e->name, names[node]);
      assert_int_equal(e->tid, launch == 3 ? 2 : 1);
      assert_int_equal(e->disabled, node == 5 && launch > 1);
      assert_true(e->ts >= 0 && e->dur >= 0);
    }
    const struct trace_event *fill = find_event(t, launch, 1, 0);
    assert_string_equal(fill->name, "memset");
    assert_false(fill->disabled);
  }
}

static void test_trace_events(void **state) {
  (void)state;
  gcap_sim_stats stats;
  char *text = trace_of(eager_and_graph, &stats);
  struct trace t;
  parse_trace(text, &t);
  assert_int_equal(stats.nodes_executed, 3 * 7);
  assert_int_equal(t.complete, 7 + stats.nodes_executed - 3); /* the child-graph node itself ran nothing */
  assert_eager_events(&t);
  assert_graph_events(&t);
  assert_stream_named(&t, 1);
  assert_stream_named(&t, 2);
  assert_non_null(strstr(text, "\"tid\":1,\"args\":{\"name\":\"stream 1\"}}"));
  assert_non_null(strstr(text, "\"tid\":2,\"args\":{\"name\":\"stream 2\"}}"));
  for (size_t i = 1; i < t.count; i++) /* nothing nests here: events finish in the order they start */
    if (t.events[i].ph == 'X' && t.events[i - 1].ph == 'X') assert_true(t.events[i - 1].ts <= t.events[i].ts);
  free(text);
}

/* ---------------------------------------------------------------- the environment */

static gcap_status create_from_environment(gcap_context **ctx) {
  gcap_context_options o;
  gcap_context_options_init(&o);
  o.backend = GCAP_BACKEND_SIM;
  *ctx = NULL;
  return gcap_context_create(&o, ctx);
}

static void assert_env_refused(const char *name, const char *value) {
  setenv(name, value, 1);
  gcap_context *ctx = (gcap_context *)&ctx;
  assert_status(create_from_environment(&ctx), GCAP_ERROR_INVALID_VALUE);
  assert_null(ctx);
  test_assert_message_contains(name);
  unsetenv(name);
}

static void test_environment_bad_values(void **state) {
  (void)state;
  assert_env_refused("GCAP_SIM_ORDER", "bogus");
  assert_env_refused("GCAP_SIM_SEED", "12x");
  assert_env_refused("GCAP_SIM_SEED", "-1");
  assert_env_refused("GCAP_SIM_SEED", " -1");
  assert_env_refused("GCAP_SIM_SEED", "+5");
  assert_env_refused("GCAP_SIM_SEED", "99999999999999999999999");
  assert_env_refused("GCAP_SIM_CHECK_RACES", "yes");
  assert_env_refused("GCAP_SIM_TRACE", "/nonexistent-directory/trace.json");
}

/* GCAP_SIM_ORDER=shuffle with GCAP_SIM_SEED replays what the same explicit options give. */
static void test_environment_shuffle_replays_seed(void **state) {
  (void)state;
  static int from_env[LAUNCHES][MAX_NODES], explicit[LAUNCHES][MAX_NODES];
  setenv("GCAP_SIM_ORDER", "shuffle", 1);
  setenv("GCAP_SIM_SEED", "1234", 1);
  gcap_context *ctx = NULL;
  assert_ok(create_from_environment(&ctx));
  unsetenv("GCAP_SIM_ORDER");
  unsetenv("GCAP_SIM_SEED");
  record_orders_on(ctx, from_env);
  record_orders(GCAP_SIM_ORDER_SHUFFLE, 1234, explicit);
  assert_memory_equal(from_env, explicit, sizeof from_env);
  assert_true(distinct_orders(from_env) > 1);
}

static void test_environment_shuffle_and_races(void **state) {
  (void)state;
  setenv("GCAP_SIM_ORDER", "shuffle", 1);
  setenv("GCAP_SIM_SEED", "5", 1);
  setenv("GCAP_SIM_CHECK_RACES", "1", 1);
  gcap_context *ctx = NULL;
  assert_ok(create_from_environment(&ctx));
  unsetenv("GCAP_SIM_ORDER");
  unsetenv("GCAP_SIM_SEED");
  unsetenv("GCAP_SIM_CHECK_RACES");
  void *a = test_dev_alloc(ctx, 64);
  gcap_graph *g = NULL;
  assert_ok(gcap_graph_create(ctx, &g));
  gcap_memset_node_params p = {a, 0, 1, 64, 1, 0};
  gcap_node *n1 = NULL, *n2 = NULL;
  assert_ok(gcap_graph_add_memset_node(g, NULL, 0, &p, &n1));
  gcap_exec *x = NULL;
  gcap_stream *s = NULL;
  assert_ok(gcap_stream_create(ctx, &s));
  assert_ok(gcap_graph_instantiate(g, 0, &x));
  assert_ok(gcap_mem_free(ctx, a));
  assert_status(gcap_exec_launch(x, s), GCAP_ERROR_INVALID_VALUE);
  test_assert_message_contains("shuffled order, seed 5, launch 1");
  gcap_exec_destroy(x);
  a = test_dev_alloc(ctx, 64);
  p.dst = a;
  gcap_graph_destroy(g);
  assert_ok(gcap_graph_create(ctx, &g));
  assert_ok(gcap_graph_add_memset_node(g, NULL, 0, &p, &n1));
  assert_ok(gcap_graph_add_memset_node(g, NULL, 0, &p, &n2));
  assert_status(gcap_graph_instantiate(g, 0, &x), GCAP_ERROR_INVALID_VALUE); /* check_races from the environment */
  test_assert_message_contains("node 0 (memset) and node 1 (memset)");
  assert_ok(gcap_stream_destroy(s));
  gcap_graph_destroy(g);
  gcap_context_destroy(ctx);
}

static char *read_file(const char *path) {
  FILE *f = fopen(path, "r");
  assert_non_null(f);
  static char text[16384];
  size_t n = fread(text, 1, sizeof text - 1, f);
  assert_true(n < sizeof text - 1);
  text[n] = '\0';
  fclose(f);
  return text;
}

struct temp_dir {
  char dir[64], trace[96];
};

static void temp_dir_make(struct temp_dir *t) {
  snprintf(t->dir, sizeof t->dir, "/tmp/gcap-sim-extras-XXXXXX");
  assert_non_null(mkdtemp(t->dir));
  snprintf(t->trace, sizeof t->trace, "%s/trace.json", t->dir);
}

static void temp_dir_remove(struct temp_dir *t) {
  unlink(t->trace);
  assert_int_equal(rmdir(t->dir), 0);
}

/* GCAP_SIM_TRACE names a file the simulator writes from context creation to destruction. */
static void test_environment_trace(void **state) {
  (void)state;
  struct temp_dir t;
  temp_dir_make(&t);
  setenv("GCAP_SIM_TRACE", t.trace, 1);
  gcap_context *ctx = NULL;
  assert_ok(create_from_environment(&ctx));
  unsetenv("GCAP_SIM_TRACE");
  gcap_stream *s = NULL;
  assert_ok(gcap_stream_create(ctx, &s));
  void *a = test_dev_alloc(ctx, 64);
  assert_ok(gcap_memset_async(s, a, 1, 64));
  assert_ok(gcap_stream_destroy(s));
  gcap_context_destroy(ctx);
  static struct trace parsed;
  parse_trace(read_file(t.trace), &parsed);
  assert_int_equal(parsed.complete, 1);
  const struct trace_event *fill = &parsed.events[parsed.count - 1];
  assert_string_equal(fill->name, "memset");
  assert_int_equal(fill->op, 1);
  assert_int_equal(fill->tid, 1);
  temp_dir_remove(&t);
}

/* Explicit options win over the environment, a trace file included. */
static void test_explicit_options_ignore_environment(void **state) {
  (void)state;
  struct temp_dir t;
  temp_dir_make(&t);
  setenv("GCAP_SIM_ORDER", "bogus", 1);
  setenv("GCAP_SIM_TRACE", t.trace, 1);
  gcap_context *ctx = sim_context(GCAP_SIM_ORDER_CAPTURE, 0, NULL);
  unsetenv("GCAP_SIM_ORDER");
  unsetenv("GCAP_SIM_TRACE");
  gcap_context_destroy(ctx);
  assert_int_equal(access(t.trace, F_OK), -1);
  temp_dir_remove(&t);
}

int main(void) {
  if (!test_on_sim()) {
    fprintf(stderr, "skipped: these are the simulator's own features\n");
    return 77;
  }
  /* The environment tests set these themselves; a suite run under some of them must not leak in. */
  static const char *const variables[] = {"GCAP_SIM_ORDER", "GCAP_SIM_SEED", "GCAP_SIM_CHECK_RACES", "GCAP_SIM_TRACE"};
  for (size_t i = 0; i < sizeof variables / sizeof variables[0]; i++) unsetenv(variables[i]);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_shuffle_respects_edges_and_varies),
      cmocka_unit_test(test_same_seed_same_sequence),
      cmocka_unit_test(test_capture_order_is_fixed),
      cmocka_unit_test(test_shuffled_failure_names_seed_and_launch),
      cmocka_unit_test(test_capture_failure_names_no_order),
      cmocka_unit_test(test_trace_events),
      cmocka_unit_test(test_environment_bad_values),
      cmocka_unit_test(test_environment_shuffle_replays_seed),
      cmocka_unit_test(test_environment_shuffle_and_races),
      cmocka_unit_test(test_environment_trace),
      cmocka_unit_test(test_explicit_options_ignore_environment),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
