/*
 * Regression tests of the defects an outside audit found: status codes of setters, handles of
 * another context, and messages that quote environment values.
 */
#define _POSIX_C_SOURCE 200809L
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "common.h"

#include <stdlib.h>
#include <string.h>

static void noop_sim(const gcap_sim_thread *t, void *const *args) {
  (void)t;
  (void)args;
}

static gcap_kernel *load_kernels(gcap_context *ctx) {
  static const gcap_kernel_def defs[] = {TEST_COUNTDOWN_KERNEL, {.name = "noop", .sim_fn = noop_sim}};
  gcap_module_desc d = {.kernels = defs, .num_kernels = 2};
  gcap_module *m = NULL;
  assert_ok(test_module_load(ctx, &d, &m));
  return test_kernel_of(m, "noop");
}

/* An executable setter checks its executable first: NULL or destroyed is INVALID_HANDLE. */
static void test_exec_setters_check_the_executable_first(void **state) {
  (void)state;
  gcap_context *ctx = test_context_create();
  gcap_graph *g = test_graph_create(ctx);
  gcap_node *empty = NULL, *child_node = NULL;
  assert_ok(gcap_graph_add_empty_node(g, NULL, 0, &empty));
  gcap_graph *child = test_graph_create(ctx);
  assert_ok(gcap_graph_add_child_graph_node(g, NULL, 0, child, &child_node));
  gcap_exec *x = NULL;
  assert_ok(gcap_graph_instantiate(g, 0, &x));
  gcap_node_params p = {.type = GCAP_NODE_EMPTY};
  assert_status(gcap_exec_node_set_params(NULL, empty, &p), GCAP_ERROR_INVALID_HANDLE);
  test_assert_message_contains("exec");
  assert_status(gcap_exec_child_graph_node_set_params(x, child_node, NULL), GCAP_ERROR_INVALID_HANDLE);
  test_assert_message_contains("child");
  gcap_exec_destroy(x);
  assert_status(gcap_exec_node_set_params(x, empty, &p), GCAP_ERROR_INVALID_HANDLE);
  gcap_graph_destroy(child);
  gcap_graph_destroy(g);
  gcap_context_destroy(ctx);
}

/* A kernel of another context is INVALID_HANDLE whatever the node's type. */
static void test_foreign_kernel_in_a_setter(void **state) {
  (void)state;
  gcap_context *ctx = test_context_create(), *other = test_context_create();
  gcap_kernel *foreign = load_kernels(other);
  gcap_graph *g = test_graph_create(ctx);
  gcap_node *empty = NULL;
  assert_ok(gcap_graph_add_empty_node(g, NULL, 0, &empty));
  gcap_kernel_node_params kp = {foreign, GCAP_DIM3(1, 1, 1), GCAP_DIM3(1, 1, 1), 0, NULL};
  assert_status(gcap_node_set_kernel_params(empty, &kp), GCAP_ERROR_INVALID_HANDLE);
  test_assert_message_contains("params->kernel");
  gcap_context_destroy(ctx);
  gcap_context_destroy(other);
}

/* A kernel that sets a conditional handle of another context fails its launch. */
static void test_handle_of_another_context(void **state) {
  (void)state;
  test_require_sim();
  gcap_context *ctx = test_context_create(), *other = test_context_create();
  gcap_graph *og = test_graph_create(other);
  gcap_conditional_handle h = 0;
  assert_ok(gcap_graph_conditional_handle_create(og, 1, 0, &h));
  load_kernels(ctx);
  gcap_kernel *countdown = NULL;
  assert_ok(gcap_context_find_kernel(ctx, "countdown", &countdown));
  uint32_t *counter = test_dev_alloc(ctx, sizeof *counter);
  gcap_stream *s = test_stream_create(ctx);
  assert_ok(gcap_memset_d32_async(s, counter, 3, 1));
  void *args[] = {&counter, &h};
  gcap_status launched = gcap_launch_kernel(s, countdown, GCAP_DIM3(1, 1, 1), GCAP_DIM3(1, 1, 1), 0, args);
  const char *exec = getenv("GCAP_SIM_EXEC");
  if (exec && strcmp(exec, "deferred") == 0) { /* the kernel runs, and fails, at the wait */
    assert_ok(launched);
    assert_status(gcap_stream_synchronize(s), GCAP_ERROR_INVALID_VALUE);
  } else {
    assert_int_equal(launched, GCAP_ERROR_INVALID_VALUE);
  }
  test_assert_message_contains("of its context");
  gcap_graph_destroy(og);
  gcap_context_destroy(ctx);
  gcap_context_destroy(other);
}

/* An environment value is quoted on one line, its control characters escaped. */
static void test_environment_values_are_escaped(void **state) {
  (void)state;
  test_require_sim();
  gcap_context_options o;
  gcap_context_options_init(&o);
  o.backend = GCAP_BACKEND_SIM;
  gcap_context *ctx = NULL;
  assert_int_equal(setenv("GCAP_SIM_ORDER", "shuffle\nseed=\"3\"\t\\", 1), 0);
  assert_status(gcap_context_create(&o, &ctx), GCAP_ERROR_INVALID_VALUE);
  const char *m = gcap_last_error_message();
  assert_null(strchr(m, '\n'));
  test_assert_message_contains("GCAP_SIM_ORDER=\"shuffle\\nseed=\\\"3\\\"\\t\\\\\" is not");
  unsetenv("GCAP_SIM_ORDER");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_exec_setters_check_the_executable_first),
      cmocka_unit_test(test_foreign_kernel_in_a_setter),
      cmocka_unit_test(test_handle_of_another_context),
      cmocka_unit_test(test_environment_values_are_escaped),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
