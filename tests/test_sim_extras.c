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
  gcap_context_options o;
  gcap_context_options_init(&o);
  o.backend = GCAP_BACKEND_SIM;
  o.sim = &so;
  gcap_context *ctx = NULL;
  assert_ok(gcap_context_create(&o, &ctx));
  return ctx;
}

/* The orders of LAUNCHES launches, one row each. */
static void record_orders(gcap_sim_order order, uint64_t seed, int orders[LAUNCHES][MAX_NODES]) {
  gcap_context *ctx = sim_context(order, seed, NULL);
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
    assert_edges_respected(lg);
    memcpy(orders[l], lg->log.ids, sizeof orders[l]);
  }
  gcap_exec_destroy(x);
  gcap_graph_destroy(lg->g);
  free(lg);
  assert_ok(gcap_stream_destroy(s));
  gcap_context_destroy(ctx);
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
  static const int child_then_last[] = {10, 12, 13, 11, 14};  /* a, c, d ready first; b once a ran */
  for (int i = 0; i < 5; i++) assert_int_equal(orders[0][10 + i], child_then_last[i]);
}

/* A failing shuffled launch names what replays it. */
static void test_shuffled_failure_names_seed_and_launch(void **state) {
  (void)state;
  gcap_context *ctx = sim_context(GCAP_SIM_ORDER_SHUFFLE, 42, NULL);
  gcap_stream *s = NULL;
  assert_ok(gcap_stream_create(ctx, &s));
  void *a = test_dev_alloc(ctx, 64), *b = test_dev_alloc(ctx, 64);
  gcap_graph *g = NULL;
  assert_ok(gcap_graph_create(ctx, &g));
  gcap_memcpy_node_params p = {b, a, 64, GCAP_MEMCPY_DEVICE_TO_DEVICE};
  gcap_node *n = NULL;
  assert_ok(gcap_graph_add_memcpy_node(g, NULL, 0, &p, &n));
  gcap_exec *x = NULL;
  assert_ok(gcap_graph_instantiate(g, 0, &x));
  assert_ok(gcap_exec_launch(x, s));
  assert_ok(gcap_mem_free(ctx, b));
  assert_status(gcap_exec_launch(x, s), GCAP_ERROR_INVALID_VALUE);
  test_assert_message_contains("shuffled order, seed 42, launch 2");
  gcap_exec_destroy(x);
  gcap_graph_destroy(g);
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

static size_t occurrences(const char *text, const char *needle) {
  size_t n = 0;
  for (const char *p = strstr(text, needle); p; p = strstr(p + 1, needle)) n++;
  return n;
}

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

static void test_trace_events(void **state) {
  (void)state;
  char *text = NULL;
  size_t size = 0;
  FILE *trace = open_memstream(&text, &size);
  assert_non_null(trace);
  gcap_context *ctx = sim_context(GCAP_SIM_ORDER_CAPTURE, 0, trace);
  gcap_stream *s = NULL;
  assert_ok(gcap_stream_create(ctx, &s));
  static const size_t sizes[] = {sizeof(float *)};
  gcap_kernel_def def = {.name = "scale", .sim_fn = scale_sim, .num_params = 1, .param_sizes = sizes};
  gcap_module_desc d = {.kernels = &def, .num_kernels = 1};
  gcap_module *m = NULL;
  assert_ok(gcap_module_load(ctx, &d, &m));
  gcap_kernel *k = test_kernel_of(m, "scale");
  float *y = test_dev_alloc(ctx, 64 * sizeof *y), host[64] = {1};
  void *args[] = {&y};

  /* Eager: four operations on stream 1. */
  assert_ok(gcap_memcpy_async(s, y, host, sizeof host, GCAP_MEMCPY_HOST_TO_DEVICE));
  assert_ok(gcap_memset_async(s, y, 0, 16));
  assert_ok(gcap_launch_kernel(s, k, GCAP_DIM3(1, 1, 1), GCAP_DIM3(64, 1, 1), 0, args));
  assert_ok(gcap_launch_host_func(s, nothing, NULL));

  /* A graph: kernel -> host, and a child graph holding one fill; launched twice. */
  gcap_graph *g = NULL, *child = NULL;
  assert_ok(gcap_graph_create(ctx, &g));
  assert_ok(gcap_graph_create(ctx, &child));
  gcap_memset_node_params mp = {y, 0, 4, 64, 1, 0};
  gcap_node *fill = NULL, *kn = NULL, *hn = NULL, *sub = NULL;
  assert_ok(gcap_graph_add_memset_node(child, NULL, 0, &mp, &fill));
  gcap_kernel_node_params kp = {k, {1, 1, 1}, {64, 1, 1}, 0, args};
  assert_ok(gcap_graph_add_kernel_node(g, NULL, 0, &kp, &kn));
  gcap_host_node_params hp = {nothing, NULL};
  assert_ok(gcap_graph_add_host_node(g, &kn, 1, &hp, &hn));
  assert_ok(gcap_graph_add_child_graph_node(g, &hn, 1, child, &sub));
  gcap_exec *x = NULL;
  assert_ok(gcap_graph_instantiate(g, 0, &x));
  assert_ok(gcap_exec_launch(x, s));
  assert_ok(gcap_exec_launch(x, s));
  gcap_exec_destroy(x);
  gcap_graph_destroy(child);
  gcap_graph_destroy(g);
  assert_ok(gcap_stream_destroy(s));
  gcap_context_destroy(ctx);
  assert_int_equal(fclose(trace), 0);

  assert_true(strncmp(text, "{\"traceEvents\":[", 16) == 0);
  assert_json_shape(text);
  assert_int_equal(occurrences(text, "\"ph\":\"X\""), 4 + 2 * 3); /* eager ops + 3 nodes per launch */
  assert_int_equal(occurrences(text, "\"cat\":\"stream\""), 4);
  assert_int_equal(occurrences(text, "\"cat\":\"graph\""), 6);
  assert_int_equal(occurrences(text, "\"name\":\"scale\""), 1 + 2);
  assert_int_equal(occurrences(text, "\"op\":4}"), 1);
  assert_int_equal(occurrences(text, "\"node\":0,\"depth\":0,\"launch\":1}"), 1); /* the kernel */
  assert_int_equal(occurrences(text, "\"node\":1,\"depth\":0,\"launch\":2}"), 1); /* the host node */
  assert_int_equal(occurrences(text, "\"node\":0,\"depth\":1,\"launch\":2}"), 1); /* the child's fill */
  assert_int_equal(occurrences(text, "\"tid\":1,"), 10 + 1);                       /* + the thread name */
  assert_int_equal(occurrences(text, "\"args\":{\"name\":\"stream 1\"}"), 1);
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
  assert_env_refused("GCAP_SIM_SEED", "99999999999999999999999");
  assert_env_refused("GCAP_SIM_CHECK_RACES", "yes");
  assert_env_refused("GCAP_SIM_TRACE", "/nonexistent-directory/trace.json");
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

/* Explicit options win over the environment. */
static void test_explicit_options_ignore_environment(void **state) {
  (void)state;
  setenv("GCAP_SIM_ORDER", "bogus", 1);
  gcap_context *ctx = sim_context(GCAP_SIM_ORDER_CAPTURE, 0, NULL);
  unsetenv("GCAP_SIM_ORDER");
  gcap_context_destroy(ctx);
}

int main(void) {
  if (!test_on_sim()) {
    fprintf(stderr, "skipped: these are the simulator's own features\n");
    return 77;
  }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_shuffle_respects_edges_and_varies),
      cmocka_unit_test(test_same_seed_same_sequence),
      cmocka_unit_test(test_capture_order_is_fixed),
      cmocka_unit_test(test_shuffled_failure_names_seed_and_launch),
      cmocka_unit_test(test_trace_events),
      cmocka_unit_test(test_environment_bad_values),
      cmocka_unit_test(test_environment_shuffle_and_races),
      cmocka_unit_test(test_explicit_options_ignore_environment),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
