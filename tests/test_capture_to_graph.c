/*
 * Capture into an existing graph (gcap_stream_begin_capture_to_graph) and changing a capturing
 * stream's dependencies (gcap_stream_update_capture_dependencies): where the recorded nodes go,
 * what they depend on, what the graph may do meanwhile, every refused argument, and replay.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "common.h"

#include <string.h>

/* What host nodes saw at replay. */
static struct {
  int values[32];
  size_t count;
} host_log;

static void log_value(void *user_data) {
  if (host_log.count < 32) host_log.values[host_log.count++] = (int)(intptr_t)user_data;
}

static int setup(void **state) {
  host_log.count = 0;
  *state = test_context_create();
  return *state ? 0 : -1;
}

static int teardown(void **state) {
  gcap_context_destroy(*state);
  return 0;
}

static gcap_node *add_host(gcap_graph *g, gcap_node *const *deps, size_t num_deps, int value) {
  gcap_host_node_params p = {log_value, (void *)(intptr_t)value};
  gcap_node *n = NULL;
  assert_ok(gcap_graph_add_host_node(g, deps, num_deps, &p, &n));
  return n;
}

static void assert_deps(const gcap_node *n, gcap_node *const *expected, size_t count) {
  gcap_node *got[8];
  size_t have = 8;
  assert_ok(gcap_node_get_dependencies(n, got, &have));
  assert_int_equal(have, count);
  for (size_t i = 0; i < count; i++) assert_ptr_equal(got[i], expected[i]);
}

/* The nodes of g added after its first `before` ones (creation order). */
static gcap_node *node_at(const gcap_graph *g, size_t index) {
  gcap_node *nodes[32];
  size_t count = 32;
  assert_ok(gcap_graph_get_nodes(g, nodes, &count));
  assert_true(index < count);
  return nodes[index];
}

static void replay(gcap_graph *g, gcap_stream *s) {
  gcap_exec *x = NULL;
  host_log.count = 0;
  assert_ok(gcap_graph_instantiate(g, 0, &x));
  assert_ok(gcap_exec_launch(x, s));
  assert_ok(gcap_stream_synchronize(s));
  gcap_exec_destroy(x);
}

static size_t position_of(int value) {
  for (size_t i = 0; i < host_log.count; i++)
    if (host_log.values[i] == value) return i;
  fail_msg("host node %d did not run", value);
  return 0;
}

/* ------------------------------------------------------------- capture to graph */

static void test_recorded_work_follows_the_given_nodes(void **state) {
  gcap_context *ctx = *state;
  gcap_stream *s = test_stream_create(ctx);
  gcap_graph *g = test_graph_create(ctx);
  gcap_node *a = add_host(g, NULL, 0, 1);
  gcap_node *b = add_host(g, NULL, 0, 2);

  assert_ok(gcap_stream_begin_capture_to_graph(s, g, &a, 1, GCAP_CAPTURE_MODE_GLOBAL));
  gcap_capture_info info;
  assert_ok(gcap_stream_get_capture_info(s, &info));
  assert_int_equal(info.status, GCAP_CAPTURE_STATUS_ACTIVE);
  assert_ptr_equal(info.graph, g);
  assert_int_equal(info.num_dependencies, 1);
  assert_ptr_equal(info.dependencies[0], a);
  assert_ok(gcap_launch_host_func(s, log_value, (void *)(intptr_t)3));
  assert_ok(gcap_launch_host_func(s, log_value, (void *)(intptr_t)4));
  gcap_graph *out = NULL;
  assert_ok(gcap_stream_end_capture(s, &out));
  assert_ptr_equal(out, g);

  assert_int_equal(gcap_graph_node_count(g), 4);
  assert_int_equal(gcap_graph_edge_count(g), 2);
  gcap_node *third = node_at(g, 2), *fourth = node_at(g, 3);
  assert_deps(third, &a, 1);
  assert_deps(fourth, &third, 1);
  assert_deps(b, NULL, 0);
  replay(g, s);
  assert_int_equal(host_log.count, 4);
  assert_true(position_of(1) < position_of(3));
  assert_true(position_of(3) < position_of(4));

  /* The graph is the caller's as before: it grows by hand and takes a second capture. */
  gcap_node *e = add_host(g, &fourth, 1, 5);
  assert_ok(gcap_stream_begin_capture_to_graph(s, g, &e, 1, GCAP_CAPTURE_MODE_RELAXED));
  assert_ok(gcap_launch_host_func(s, log_value, (void *)(intptr_t)6));
  assert_ok(gcap_stream_end_capture(s, NULL)); /* the graph is known: no need to receive it */
  assert_int_equal(gcap_graph_node_count(g), 6);
  assert_deps(node_at(g, 5), &e, 1);
  replay(g, s);
  assert_int_equal(host_log.count, 6);
  assert_true(position_of(5) < position_of(6));
  gcap_graph_destroy(g);
  assert_ok(gcap_stream_destroy(s));
}

static void test_no_dependencies_makes_roots(void **state) {
  gcap_context *ctx = *state;
  gcap_stream *s = test_stream_create(ctx);
  gcap_graph *g = test_graph_create(ctx);
  add_host(g, NULL, 0, 1);
  assert_ok(gcap_stream_begin_capture_to_graph(s, g, NULL, 0, GCAP_CAPTURE_MODE_GLOBAL));
  assert_ok(gcap_launch_host_func(s, log_value, (void *)(intptr_t)2));
  assert_ok(gcap_stream_end_capture(s, NULL));
  size_t roots = 0;
  assert_ok(gcap_graph_get_root_nodes(g, NULL, &roots));
  assert_int_equal(roots, 2);
  gcap_graph_destroy(g);
  assert_ok(gcap_stream_destroy(s));
}

static void test_fork_and_join_inside_the_graph(void **state) {
  gcap_context *ctx = *state;
  gcap_stream *s = NULL, *t = NULL;
  gcap_event *fork = NULL, *join = NULL;
  assert_ok(gcap_stream_create(ctx, &s));
  assert_ok(gcap_stream_create(ctx, &t));
  assert_ok(gcap_event_create(ctx, &fork));
  assert_ok(gcap_event_create(ctx, &join));
  gcap_graph *g = NULL;
  assert_ok(gcap_graph_create(ctx, &g));
  gcap_node *a = add_host(g, NULL, 0, 1);

  assert_ok(gcap_stream_begin_capture_to_graph(s, g, &a, 1, GCAP_CAPTURE_MODE_GLOBAL));
  assert_ok(gcap_event_record(fork, s));
  assert_ok(gcap_stream_wait_event(t, fork));
  assert_ok(gcap_launch_host_func(s, log_value, (void *)(intptr_t)2));
  assert_ok(gcap_launch_host_func(t, log_value, (void *)(intptr_t)3));
  assert_ok(gcap_event_record(join, t));
  assert_ok(gcap_stream_wait_event(s, join));
  assert_ok(gcap_launch_host_func(s, log_value, (void *)(intptr_t)4));
  assert_ok(gcap_stream_end_capture(s, NULL));

  gcap_node *two = node_at(g, 1), *three = node_at(g, 2), *four = node_at(g, 3);
  assert_deps(two, &a, 1);
  assert_deps(three, &a, 1);
  gcap_node *both[2] = {two, three};
  assert_deps(four, both, 2);
  replay(g, s);
  assert_true(position_of(1) < position_of(3));
  assert_true(position_of(3) < position_of(4) && position_of(2) < position_of(4));

  /* A fork that never joins is refused at the end; the graph keeps what was recorded. */
  assert_ok(gcap_stream_begin_capture_to_graph(s, g, &four, 1, GCAP_CAPTURE_MODE_GLOBAL));
  assert_ok(gcap_event_record(fork, s));
  assert_ok(gcap_stream_wait_event(t, fork));
  assert_ok(gcap_launch_host_func(t, log_value, (void *)(intptr_t)5));
  assert_status(gcap_stream_end_capture(s, NULL), GCAP_ERROR_STREAM_CAPTURE_UNJOINED);
  test_assert_message_contains("never joined");
  gcap_capture_status status;
  assert_ok(gcap_stream_is_capturing(t, &status));
  assert_int_equal(status, GCAP_CAPTURE_STATUS_NONE);
  assert_int_equal(gcap_graph_node_count(g), 5);

  gcap_graph_destroy(g);
  assert_ok(gcap_event_destroy(fork));
  assert_ok(gcap_event_destroy(join));
  assert_ok(gcap_stream_destroy(s));
  assert_ok(gcap_stream_destroy(t));
}

static void test_graph_is_locked_while_captured_into(void **state) {
  gcap_context *ctx = *state;
  gcap_stream *s = test_stream_create(ctx);
  gcap_graph *g = test_graph_create(ctx);
  gcap_node *a = add_host(g, NULL, 0, 1);
  assert_ok(gcap_stream_begin_capture_to_graph(s, g, &a, 1, GCAP_CAPTURE_MODE_RELAXED));
  gcap_exec *x = NULL;
  assert_status(gcap_graph_instantiate(g, 0, &x), GCAP_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  test_assert_message_contains("is being built by capture");
  assert_null(x);
  gcap_graph_destroy(g); /* refused: the graph lives on */
  test_assert_message_contains("capture");
  assert_status(gcap_graph_destroy_node(a), GCAP_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  assert_int_equal(gcap_graph_node_count(g), 1);
  assert_ok(gcap_launch_host_func(s, log_value, (void *)(intptr_t)2));
  assert_ok(gcap_stream_end_capture(s, NULL));
  replay(g, s);
  assert_int_equal(host_log.count, 2);
  gcap_graph_destroy(g);
  assert_ok(gcap_stream_destroy(s));
}

static void test_failed_capture_leaves_the_graph_usable(void **state) {
  gcap_context *ctx = *state;
  gcap_stream *s = test_stream_create(ctx);
  gcap_graph *g = test_graph_create(ctx);
  gcap_node *a = add_host(g, NULL, 0, 1);
  assert_ok(gcap_stream_begin_capture_to_graph(s, g, &a, 1, GCAP_CAPTURE_MODE_GLOBAL));
  assert_ok(gcap_launch_host_func(s, log_value, (void *)(intptr_t)2));
  assert_status(gcap_stream_synchronize(s), GCAP_ERROR_STREAM_CAPTURE_UNSUPPORTED); /* invalidates */
  gcap_graph *out = g;
  assert_status(gcap_stream_end_capture(s, &out), GCAP_ERROR_STREAM_CAPTURE_INVALIDATED);
  assert_null(out);
  gcap_capture_status status;
  assert_ok(gcap_stream_is_capturing(s, &status));
  assert_int_equal(status, GCAP_CAPTURE_STATUS_NONE);
  assert_int_equal(gcap_graph_node_count(g), 2); /* what was recorded stays */
  replay(g, s);
  assert_int_equal(host_log.count, 2);
  gcap_graph_destroy(g);
  assert_ok(gcap_stream_destroy(s));
}

static void test_refused_arguments(void **state) {
  gcap_context *ctx = *state;
  gcap_stream *s = NULL, *t = NULL;
  assert_ok(gcap_stream_create(ctx, &s));
  assert_ok(gcap_stream_create(ctx, &t));
  gcap_graph *g = NULL, *other = NULL, *parent = NULL;
  static char not_a_graph[64]; /* a destroyed graph's address may be a new object's by now */
  gcap_graph *gone = (gcap_graph *)(void *)not_a_graph;
  assert_ok(gcap_graph_create(ctx, &g));
  assert_ok(gcap_graph_create(ctx, &other));
  assert_ok(gcap_graph_create(ctx, &parent));
  gcap_node *a = add_host(g, NULL, 0, 1);
  gcap_node *foreign = add_host(other, NULL, 0, 2);
  gcap_node *child_node = NULL;
  assert_ok(gcap_graph_add_child_graph_node(parent, NULL, 0, other, &child_node));
  gcap_graph *child = NULL;
  assert_ok(gcap_node_get_child_graph(child_node, &child));
  gcap_node *twice[2] = {a, a};

  assert_status(gcap_stream_begin_capture_to_graph(NULL, g, NULL, 0, GCAP_CAPTURE_MODE_GLOBAL),
                GCAP_ERROR_INVALID_HANDLE);
  assert_status(gcap_stream_begin_capture_to_graph(s, NULL, NULL, 0, GCAP_CAPTURE_MODE_GLOBAL),
                GCAP_ERROR_INVALID_VALUE);
  test_assert_message_contains("gcap_stream_begin_capture_to_graph: graph is NULL");
  assert_status(gcap_stream_begin_capture_to_graph(s, gone, NULL, 0, GCAP_CAPTURE_MODE_GLOBAL),
                GCAP_ERROR_INVALID_HANDLE);
  assert_status(gcap_stream_begin_capture_to_graph(s, g, NULL, 2, GCAP_CAPTURE_MODE_GLOBAL), GCAP_ERROR_INVALID_VALUE);
  test_assert_message_contains("deps is NULL with num_deps = 2");
  assert_status(gcap_stream_begin_capture_to_graph(s, g, &foreign, 1, GCAP_CAPTURE_MODE_GLOBAL),
                GCAP_ERROR_INVALID_VALUE);
  test_assert_message_contains("deps[0]");
  assert_status(gcap_stream_begin_capture_to_graph(s, g, twice, 2, GCAP_CAPTURE_MODE_GLOBAL), GCAP_ERROR_INVALID_VALUE);
  test_assert_message_contains("deps[1] repeats deps[0]");
  assert_status(gcap_stream_begin_capture_to_graph(s, g, &a, 1, (gcap_capture_mode)7), GCAP_ERROR_INVALID_VALUE);
  test_assert_message_contains("mode 7");
  assert_status(gcap_stream_begin_capture_to_graph(s, child, NULL, 0, GCAP_CAPTURE_MODE_GLOBAL),
                GCAP_ERROR_INVALID_VALUE);
  test_assert_message_contains("child-graph node");

  /* None of them began anything. */
  gcap_capture_status status;
  assert_ok(gcap_stream_is_capturing(s, &status));
  assert_int_equal(status, GCAP_CAPTURE_STATUS_NONE);
  assert_int_equal(gcap_graph_node_count(g), 1);

  /* A stream already capturing, and a graph already captured into. */
  assert_ok(gcap_stream_begin_capture_to_graph(s, g, &a, 1, GCAP_CAPTURE_MODE_RELAXED));
  assert_status(gcap_stream_begin_capture_to_graph(s, other, NULL, 0, GCAP_CAPTURE_MODE_RELAXED),
                GCAP_ERROR_ILLEGAL_STATE);
  test_assert_message_contains("already part of capture");
  assert_status(gcap_stream_begin_capture_to_graph(t, g, NULL, 0, GCAP_CAPTURE_MODE_RELAXED), GCAP_ERROR_ILLEGAL_STATE);
  test_assert_message_contains("already being recorded into");
  assert_ok(gcap_stream_end_capture(s, NULL));

  /* An ordinary capture still needs somewhere to put its graph. */
  assert_ok(gcap_stream_begin_capture(s, GCAP_CAPTURE_MODE_RELAXED));
  assert_status(gcap_stream_end_capture(s, NULL), GCAP_ERROR_INVALID_VALUE);
  test_assert_message_contains("graph is NULL");
  gcap_graph *made = NULL;
  assert_ok(gcap_stream_end_capture(s, &made));
  gcap_graph_destroy(made);

  gcap_graph_destroy(g);
  gcap_graph_destroy(other);
  gcap_graph_destroy(parent);
  assert_ok(gcap_stream_destroy(s));
  assert_ok(gcap_stream_destroy(t));
}

static void test_graph_of_another_context_is_refused(void **state) {
  gcap_context *ctx = *state, *elsewhere = test_context_create();
  gcap_stream *s = NULL;
  assert_ok(gcap_stream_create(ctx, &s));
  gcap_graph *g = NULL;
  assert_ok(gcap_graph_create(elsewhere, &g));
  assert_status(gcap_stream_begin_capture_to_graph(s, g, NULL, 0, GCAP_CAPTURE_MODE_GLOBAL), GCAP_ERROR_INVALID_HANDLE);
  test_assert_message_contains("graph belongs to another context");
  gcap_graph_destroy(g);
  gcap_context_destroy(elsewhere);
  assert_ok(gcap_stream_destroy(s));
}

/* --------------------------------------------------- updating dependencies */

static void test_set_and_add_dependencies(void **state) {
  gcap_context *ctx = *state;
  gcap_stream *s = NULL;
  assert_ok(gcap_stream_create(ctx, &s));
  assert_ok(gcap_stream_begin_capture(s, GCAP_CAPTURE_MODE_GLOBAL));
  assert_ok(gcap_launch_host_func(s, log_value, (void *)(intptr_t)1));
  assert_ok(gcap_launch_host_func(s, log_value, (void *)(intptr_t)2));
  gcap_capture_info info;
  assert_ok(gcap_stream_get_capture_info(s, &info));
  gcap_graph *g = info.graph;
  gcap_node *one = node_at(g, 0), *two = node_at(g, 1);

  assert_ok(gcap_stream_update_capture_dependencies(s, &one, 1, GCAP_STREAM_SET_CAPTURE_DEPENDENCIES));
  assert_ok(gcap_stream_get_capture_info(s, &info));
  assert_int_equal(info.num_dependencies, 1);
  assert_ptr_equal(info.dependencies[0], one);
  assert_ok(gcap_launch_host_func(s, log_value, (void *)(intptr_t)3));
  gcap_node *three = node_at(g, 2);
  assert_deps(three, &one, 1);

  assert_ok(gcap_stream_update_capture_dependencies(s, &two, 1, GCAP_STREAM_ADD_CAPTURE_DEPENDENCIES));
  assert_ok(gcap_stream_update_capture_dependencies(s, &two, 1, GCAP_STREAM_ADD_CAPTURE_DEPENDENCIES)); /* no repeat */
  assert_ok(gcap_stream_get_capture_info(s, &info));
  assert_int_equal(info.num_dependencies, 2);
  assert_ok(gcap_stream_update_capture_dependencies(s, NULL, 0, GCAP_STREAM_SET_CAPTURE_DEPENDENCIES)); /* no-op */
  assert_ok(gcap_stream_get_capture_info(s, &info));
  assert_int_equal(info.num_dependencies, 2);
  assert_ok(gcap_launch_host_func(s, log_value, (void *)(intptr_t)4));
  gcap_node *both[2] = {three, two};
  assert_deps(node_at(g, 3), both, 2);

  gcap_graph *out = NULL;
  assert_ok(gcap_stream_end_capture(s, &out));
  assert_ptr_equal(out, g);
  replay(g, s);
  assert_int_equal(host_log.count, 4);
  assert_true(position_of(1) < position_of(3) && position_of(2) < position_of(4) && position_of(3) < position_of(4));
  gcap_graph_destroy(g);
  assert_ok(gcap_stream_destroy(s));
}

/* Work a SET drops from a forked stream's dependencies is not unjoined (SEMANTICS R17). */
static void test_set_exempts_dropped_work_from_the_join_check(void **state) {
  gcap_context *ctx = *state;
  gcap_stream *s = NULL, *t = NULL;
  gcap_event *fork = NULL;
  assert_ok(gcap_stream_create(ctx, &s));
  assert_ok(gcap_stream_create(ctx, &t));
  assert_ok(gcap_event_create(ctx, &fork));
  for (int drop = 0; drop < 2; drop++) {
    assert_ok(gcap_stream_begin_capture(s, GCAP_CAPTURE_MODE_GLOBAL));
    assert_ok(gcap_launch_host_func(s, log_value, (void *)(intptr_t)1));
    assert_ok(gcap_event_record(fork, s));
    assert_ok(gcap_stream_wait_event(t, fork));
    assert_ok(gcap_launch_host_func(t, log_value, (void *)(intptr_t)2));
    gcap_capture_info info;
    assert_ok(gcap_stream_get_capture_info(s, &info));
    gcap_node *first = node_at(info.graph, 0);
    if (drop) assert_ok(gcap_stream_update_capture_dependencies(t, &first, 1, GCAP_STREAM_SET_CAPTURE_DEPENDENCIES));
    gcap_graph *g = NULL;
    if (drop) {
      assert_ok(gcap_stream_end_capture(s, &g));
      assert_int_equal(gcap_graph_node_count(g), 2);
      gcap_graph_destroy(g);
    } else {
      assert_status(gcap_stream_end_capture(s, &g), GCAP_ERROR_STREAM_CAPTURE_UNJOINED);
      assert_null(g);
    }
  }
  assert_ok(gcap_event_destroy(fork));
  assert_ok(gcap_stream_destroy(s));
  assert_ok(gcap_stream_destroy(t));
}

static void test_update_dependencies_refusals(void **state) {
  gcap_context *ctx = *state;
  gcap_stream *s = test_stream_create(ctx);
  gcap_graph *other = test_graph_create(ctx);
  gcap_node *foreign = add_host(other, NULL, 0, 9);

  assert_status(gcap_stream_update_capture_dependencies(NULL, NULL, 0, 0), GCAP_ERROR_INVALID_HANDLE);
  assert_status(gcap_stream_update_capture_dependencies(s, &foreign, 1, GCAP_STREAM_ADD_CAPTURE_DEPENDENCIES),
                GCAP_ERROR_ILLEGAL_STATE);
  test_assert_message_contains("is not capturing");
  assert_ok(gcap_stream_begin_capture(s, GCAP_CAPTURE_MODE_GLOBAL));
  assert_ok(gcap_launch_host_func(s, log_value, (void *)(intptr_t)1));
  assert_status(gcap_stream_update_capture_dependencies(s, NULL, 0, 2), GCAP_ERROR_INVALID_VALUE);
  test_assert_message_contains("flags 2");
  assert_status(gcap_stream_update_capture_dependencies(s, NULL, 1, GCAP_STREAM_SET_CAPTURE_DEPENDENCIES),
                GCAP_ERROR_INVALID_VALUE);
  test_assert_message_contains("deps is NULL");
  assert_status(gcap_stream_update_capture_dependencies(s, &foreign, 1, GCAP_STREAM_SET_CAPTURE_DEPENDENCIES),
                GCAP_ERROR_INVALID_VALUE);
  test_assert_message_contains("another graph");
  gcap_capture_info info;
  assert_ok(gcap_stream_get_capture_info(s, &info));
  assert_int_equal(info.status, GCAP_CAPTURE_STATUS_ACTIVE); /* refusals do not invalidate the capture */
  assert_int_equal(info.num_dependencies, 1);

  assert_status(gcap_stream_synchronize(s), GCAP_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  assert_status(gcap_stream_update_capture_dependencies(s, NULL, 0, GCAP_STREAM_ADD_CAPTURE_DEPENDENCIES),
                GCAP_ERROR_STREAM_CAPTURE_INVALIDATED);
  gcap_graph *g = NULL;
  assert_status(gcap_stream_end_capture(s, &g), GCAP_ERROR_STREAM_CAPTURE_INVALIDATED);
  gcap_graph_destroy(other);
  assert_ok(gcap_stream_destroy(s));
}

int main(void) {
  test_require_backend();
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_recorded_work_follows_the_given_nodes, setup, teardown),
      cmocka_unit_test_setup_teardown(test_no_dependencies_makes_roots, setup, teardown),
      cmocka_unit_test_setup_teardown(test_fork_and_join_inside_the_graph, setup, teardown),
      cmocka_unit_test_setup_teardown(test_graph_is_locked_while_captured_into, setup, teardown),
      cmocka_unit_test_setup_teardown(test_failed_capture_leaves_the_graph_usable, setup, teardown),
      cmocka_unit_test_setup_teardown(test_refused_arguments, setup, teardown),
      cmocka_unit_test_setup_teardown(test_graph_of_another_context_is_refused, setup, teardown),
      cmocka_unit_test_setup_teardown(test_set_and_add_dependencies, setup, teardown),
      cmocka_unit_test_setup_teardown(test_set_exempts_dropped_work_from_the_join_check, setup, teardown),
      cmocka_unit_test_setup_teardown(test_update_dependencies_refusals, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
