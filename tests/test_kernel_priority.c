/*
 * Kernel node priorities (GCAP_KERNEL_NODE_ATTR_PRIORITY) and GCAP_INSTANTIATE_USE_NODE_PRIORITY:
 * the attribute itself, the simulator's order among ready nodes, update, DOT and capture.
 */
#define _POSIX_C_SOURCE 200809L /* mkstemp, fdopen */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "common.h"

/* log[0] counts the kernels that ran; log[1 + k] is the id of the k-th. Params: int32_t *log, int32_t id. */
static void note_sim(const gcap_sim_thread *t, void *const *args) {
  int32_t *log, id;
  memcpy(&log, args[0], sizeof log);
  memcpy(&id, args[1], sizeof id);
  if (t->thread_idx.x == 0 && t->block_idx.x == 0) log[1 + log[0]++] = id;
}

static const size_t note_sizes[] = {sizeof(int32_t *), sizeof(int32_t)};

struct fx {
  gcap_context *ctx;
  gcap_stream *s;
  gcap_kernel *note;
  int32_t *log;
};

/* In capture order (not shuffled, whatever the environment says): the order is the plan's. */
static int setup(void **state) {
  struct fx *f = calloc(1, sizeof *f);
  gcap_sim_options so;
  gcap_sim_options_init(&so);
  f->ctx = test_on_sim() ? test_sim_context_create(&so) : test_context_create();
  f->s = test_stream_create(f->ctx);
  const gcap_kernel_def def = {.name = "note", .sim_fn = note_sim, .num_params = 2, .param_sizes = note_sizes};
  gcap_module_desc d = {.kernels = &def, .num_kernels = 1};
  gcap_module *m = NULL;
  assert_ok(test_module_load(f->ctx, &d, &m));
  f->note = test_kernel_of(m, "note");
  f->log = test_dev_alloc(f->ctx, 8 * sizeof(int32_t));
  *state = f;
  return 0;
}

static int teardown(void **state) {
  struct fx *f = *state;
  gcap_context_destroy(f->ctx);
  free(f);
  return 0;
}

static gcap_node *add_note(struct fx *f, gcap_graph *g, gcap_node *dep, int32_t id, int priority) {
  void *args[] = {&f->log, &id};
  gcap_kernel_node_params p = {f->note, {1, 1, 1}, {1, 1, 1}, 0, args};
  gcap_node *n = NULL;
  assert_ok(gcap_graph_add_kernel_node(g, dep ? &dep : NULL, dep ? 1 : 0, &p, &n));
  gcap_kernel_node_attr_value v = {.priority = priority};
  if (priority) assert_ok(gcap_graph_kernel_node_set_attribute(n, GCAP_KERNEL_NODE_ATTR_PRIORITY, &v));
  return n;
}

/* A root, then kernels 1, 2, 3 all ready at once, of priorities 0, -1 and -2. */
static gcap_graph *three_ready(struct fx *f) {
  gcap_graph *g = test_graph_create(f->ctx);
  gcap_node *root = NULL;
  assert_ok(gcap_graph_add_empty_node(g, NULL, 0, &root));
  add_note(f, g, root, 1, 0);
  add_note(f, g, root, 2, -1);
  add_note(f, g, root, 3, -2);
  return g;
}

/* Launches x once on a cleared log and returns the ids in the order they ran (as one number: 123). */
static int run_order(struct fx *f, gcap_exec *x) {
  int32_t log[8] = {0};
  assert_ok(gcap_memcpy(f->ctx, f->log, log, sizeof log, GCAP_MEMCPY_HOST_TO_DEVICE));
  assert_ok(gcap_exec_launch(x, f->s));
  assert_ok(gcap_stream_synchronize(f->s));
  assert_ok(gcap_memcpy(f->ctx, log, f->log, sizeof log, GCAP_MEMCPY_DEVICE_TO_HOST));
  int order = 0;
  for (int i = 0; i < log[0]; i++) order = order * 10 + log[1 + i];
  return order;
}

static void test_attribute_set_get_and_kept(void **state) {
  struct fx *f = *state;
  gcap_graph *g = test_graph_create(f->ctx);
  gcap_node *k = add_note(f, g, NULL, 1, 0), *e = NULL;
  gcap_kernel_node_attr_value v = {.priority = 7};
  assert_ok(gcap_graph_kernel_node_get_attribute(k, GCAP_KERNEL_NODE_ATTR_PRIORITY, &v));
  assert_int_equal(v.priority, 0);
  v.priority = -3;
  assert_ok(gcap_graph_kernel_node_set_attribute(k, GCAP_KERNEL_NODE_ATTR_PRIORITY, &v));
  /* New kernel parameters keep the attribute, and so does a clone. */
  gcap_kernel_node_params p;
  assert_ok(gcap_node_get_kernel_params(k, &p));
  assert_ok(gcap_node_set_kernel_params(k, &p));
  gcap_graph *clone = NULL;
  gcap_node *copy = NULL;
  assert_ok(gcap_graph_clone(g, &clone));
  assert_ok(gcap_graph_node_find_in_clone(clone, k, &copy));
  gcap_node *both[] = {k, copy};
  for (int i = 0; i < 2; i++) {
    v.priority = 0;
    assert_ok(gcap_graph_kernel_node_get_attribute(both[i], GCAP_KERNEL_NODE_ATTR_PRIORITY, &v));
    assert_int_equal(v.priority, -3);
  }

  assert_ok(gcap_graph_add_empty_node(g, NULL, 0, &e));
  assert_status(gcap_graph_kernel_node_set_attribute(e, GCAP_KERNEL_NODE_ATTR_PRIORITY, &v), GCAP_ERROR_INVALID_VALUE);
  test_assert_message_contains("gcap_graph_kernel_node_set_attribute: node ");
  test_assert_message_contains("is an empty node, not a kernel node");
  assert_status(gcap_graph_kernel_node_set_attribute(k, (gcap_kernel_node_attr)1, &v), GCAP_ERROR_INVALID_VALUE);
  test_assert_message_contains("attr 1 is not a gcap_kernel_node_attr");
  assert_status(gcap_graph_kernel_node_get_attribute(k, GCAP_KERNEL_NODE_ATTR_PRIORITY, NULL),
                GCAP_ERROR_INVALID_VALUE);
  test_assert_message_contains("gcap_graph_kernel_node_get_attribute: value is NULL");
  assert_status(gcap_graph_kernel_node_set_attribute(NULL, GCAP_KERNEL_NODE_ATTR_PRIORITY, &v),
                GCAP_ERROR_INVALID_HANDLE);
  test_assert_message_contains("node");
  gcap_graph_destroy(clone);
  gcap_graph_destroy(g);
}

/* Without the flag, ready nodes run in creation order; with it, the most urgent first. */
static void test_priority_orders_ready_nodes_on_the_simulator(void **state) {
  test_require_sim();
  struct fx *f = *state;
  gcap_graph *g = three_ready(f);
  gcap_exec *plain = NULL, *prioritized = NULL;
  unsigned flags = 0;
  assert_ok(gcap_graph_instantiate(g, 0, &plain));
  assert_ok(gcap_graph_instantiate(g, GCAP_INSTANTIATE_USE_NODE_PRIORITY, &prioritized));
  assert_ok(gcap_exec_get_flags(prioritized, &flags));
  assert_int_equal(flags, GCAP_INSTANTIATE_USE_NODE_PRIORITY);
  assert_int_equal(run_order(f, plain), 123);
  assert_int_equal(run_order(f, prioritized), 321);

  /* Priorities never break an edge: 1 -> 3 keeps 1 first. */
  gcap_node *nodes[4];
  size_t count = 4;
  assert_ok(gcap_graph_get_nodes(g, nodes, &count));
  assert_ok(gcap_graph_add_dependencies(g, &nodes[1], &nodes[3], 1));
  gcap_exec *ordered = NULL;
  gcap_instantiate_params ip = {GCAP_INSTANTIATE_USE_NODE_PRIORITY, NULL, NULL, GCAP_INSTANTIATE_ERROR};
  assert_ok(gcap_graph_instantiate_with_params(g, &ip, &ordered));
  assert_int_equal(run_order(f, ordered), 213);
  gcap_exec_destroy(ordered);
  gcap_exec_destroy(plain);
  gcap_exec_destroy(prioritized);
  gcap_graph_destroy(g);
}

/* Under the flag a priority may not change by update (ATTRIBUTES_CHANGED); without it, it may. */
static void test_update_and_priorities(void **state) {
  struct fx *f = *state;
  gcap_graph *g = three_ready(f), *changed = NULL;
  assert_ok(gcap_graph_clone(g, &changed));
  gcap_node *nodes[4];
  size_t count = 4;
  assert_ok(gcap_graph_get_nodes(changed, nodes, &count));
  gcap_kernel_node_attr_value v = {.priority = -5};
  assert_ok(gcap_graph_kernel_node_set_attribute(nodes[1], GCAP_KERNEL_NODE_ATTR_PRIORITY, &v));

  gcap_exec *x = NULL, *y = NULL;
  gcap_exec_update_info info;
  assert_ok(gcap_graph_instantiate(g, GCAP_INSTANTIATE_USE_NODE_PRIORITY, &x));
  assert_status(gcap_exec_update(x, changed, &info), GCAP_ERROR_GRAPH_EXEC_UPDATE_FAILURE);
  assert_int_equal(info.result, GCAP_EXEC_UPDATE_ERROR_ATTRIBUTES_CHANGED);
  assert_ptr_equal(info.error_node, nodes[1]);
  test_assert_message_contains("a kernel's priority changed");
  if (test_on_sim()) assert_int_equal(run_order(f, x), 321); /* unchanged */

  assert_ok(gcap_graph_instantiate(g, 0, &y));
  assert_ok(gcap_exec_update(y, changed, &info));
  assert_int_equal(info.result, GCAP_EXEC_UPDATE_SUCCESS);
  gcap_exec_destroy(x);
  gcap_exec_destroy(y);
  gcap_graph_destroy(changed);
  gcap_graph_destroy(g);
}

static char *dot_text(const gcap_graph *g, bool debug, unsigned flags) {
  char path[] = "/tmp/gcap-priority-XXXXXX";
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  FILE *out = fdopen(fd, "w+");
  if (debug) {
    fclose(out);
    assert_ok(gcap_graph_debug_dot_print(g, path, flags));
    out = fopen(path, "r");
  } else {
    assert_ok(gcap_graph_write_dot(g, out, flags));
    rewind(out);
  }
  char *text = calloc(1, 65536);
  size_t n = fread(text, 1, 65535, out);
  text[n] = '\0';
  fclose(out);
  remove(path);
  return text;
}

static void test_dot_shows_priorities(void **state) {
  struct fx *f = *state;
  gcap_graph *g = three_ready(f);
  char *verbose = dot_text(g, false, GCAP_DOT_VERBOSE), *plain = dot_text(g, false, 0);
  char *attrs = dot_text(g, true, GCAP_GRAPH_DEBUG_DOT_FLAGS_KERNEL_NODE_ATTRIBUTES);
  char *params = dot_text(g, true, GCAP_GRAPH_DEBUG_DOT_FLAGS_KERNEL_NODE_PARAMS);
  assert_non_null(strstr(verbose, "\\npriority -2"));
  assert_non_null(strstr(verbose, "\\npriority -1"));
  assert_null(strstr(verbose, "priority 0")); /* the default is left out */
  assert_null(strstr(plain, "priority"));
  assert_non_null(strstr(attrs, "|priority: -2"));
  assert_non_null(strstr(attrs, "|priority: 0"));
  assert_null(strstr(params, "priority"));
  free(verbose), free(plain), free(attrs), free(params);
  gcap_graph_destroy(g);
}

/* Capture takes the flag at its end too; DEVICE_LAUNCH stays refused everywhere. */
static void test_flags_across_the_instantiating_calls(void **state) {
  struct fx *f = *state;
  gcap_capture *c = NULL;
  gcap_exec *x = NULL;
  int32_t id = 9;
  void *args[] = {&f->log, &id};
  assert_ok(gcap_capture_begin(f->s, NULL, &c));
  assert_ok(gcap_launch_kernel(f->s, f->note, GCAP_DIM3(1, 1, 1), GCAP_DIM3(1, 1, 1), 0, args));
  assert_ok(gcap_capture_finish(c, GCAP_INSTANTIATE_USE_NODE_PRIORITY | GCAP_INSTANTIATE_AUTO_FREE_ON_LAUNCH, &x));
  unsigned flags = 0;
  assert_ok(gcap_exec_get_flags(x, &flags));
  assert_int_equal(flags, GCAP_INSTANTIATE_USE_NODE_PRIORITY | GCAP_INSTANTIATE_AUTO_FREE_ON_LAUNCH);
  if (test_on_sim()) assert_int_equal(run_order(f, x), 9);
  gcap_exec_destroy(x);
  gcap_capture_destroy(c);

  gcap_graph *g = three_ready(f);
  gcap_instantiate_params ip = {GCAP_INSTANTIATE_DEVICE_LAUNCH, NULL, NULL, GCAP_INSTANTIATE_SUCCESS};
  assert_status(gcap_graph_instantiate_with_params(g, &ip, &x), GCAP_ERROR_NOT_SUPPORTED);
  test_assert_message_contains("params->flags 0x4: device launch");
  assert_int_equal(ip.result_out, GCAP_INSTANTIATE_ERROR);
  assert_status(gcap_graph_instantiate(g, GCAP_INSTANTIATE_UPLOAD, &x), GCAP_ERROR_INVALID_VALUE);
  test_assert_message_contains("flags 0x2 has unknown bits 0x2");
  gcap_graph_destroy(g);
}

int main(void) {
  test_require_backend();
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_attribute_set_get_and_kept, setup, teardown),
      cmocka_unit_test_setup_teardown(test_priority_orders_ready_nodes_on_the_simulator, setup, teardown),
      cmocka_unit_test_setup_teardown(test_update_and_priorities, setup, teardown),
      cmocka_unit_test_setup_teardown(test_dot_shows_priorities, setup, teardown),
      cmocka_unit_test_setup_teardown(test_flags_across_the_instantiating_calls, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
