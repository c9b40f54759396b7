/*
 * gcap_exec_child_graph_node_set_params: an executable's child-graph node takes the parameters
 * of another graph of the same shape; every mismatch is refused with the executable unchanged.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "common.h"

#define BYTES 64

/* p[i] += v for i < n. Params: float *p, float v, uint32_t n. */
static void add_sim(const gcap_sim_thread *t, void *const *args) {
  float *p;
  float v;
  uint32_t n;
  memcpy(&p, args[0], sizeof p);
  memcpy(&v, args[1], sizeof v);
  memcpy(&n, args[2], sizeof n);
  uint32_t i = t->block_idx.x * t->block_dim.x + t->thread_idx.x;
  if (i < n) p[i] += v;
}

static void nothing(void *u) { (void)u; }

static const size_t add_sizes[] = {sizeof(float *), sizeof(float), sizeof(uint32_t)};

struct fx {
  gcap_context *ctx;
  gcap_stream *s;
  unsigned char *dev, *dev2;
  gcap_kernel *add;
};

static int setup(void **state) {
  struct fx *f = calloc(1, sizeof *f);
  f->ctx = test_context_create();
  f->s = test_stream_create(f->ctx);
  f->dev = test_dev_alloc(f->ctx, BYTES);
  f->dev2 = test_dev_alloc(f->ctx, BYTES);
  const gcap_kernel_def def = {.name = "add", .sim_fn = add_sim, .num_params = 3, .param_sizes = add_sizes};
  gcap_module_desc d = {.kernels = &def, .num_kernels = 1};
  gcap_module *m = NULL;
  assert_ok(test_module_load(f->ctx, &d, &m));
  f->add = test_kernel_of(m, "add");
  *state = f;
  return 0;
}

static int teardown(void **state) {
  struct fx *f = *state;
  gcap_context_destroy(f->ctx);
  free(f);
  return 0;
}

/* A child: a fill of dst with `value`, then a copy of dst's first half to dst2 (a chain of two). */
static gcap_graph *fill_then_copy(struct fx *f, unsigned char value, size_t fill_bytes) {
  gcap_graph *c = test_graph_create(f->ctx);
  gcap_node *fill = NULL, *copy = NULL;
  gcap_memset_node_params mp = {f->dev, value, 1, fill_bytes, 1, 0};
  gcap_memcpy_node_params cp = {f->dev2, f->dev, BYTES / 2, GCAP_MEMCPY_DEVICE_TO_DEVICE};
  assert_ok(gcap_graph_add_memset_node(c, NULL, 0, &mp, &fill));
  assert_ok(gcap_graph_add_memcpy_node(c, &fill, 1, &cp, &copy));
  return c;
}

/* A parent: an empty root, then a child-graph node made from `child`, then an empty sink. */
static gcap_graph *parent_of(struct fx *f, const gcap_graph *child, gcap_node **child_node) {
  gcap_graph *g = test_graph_create(f->ctx);
  gcap_node *root = NULL, *sink = NULL;
  assert_ok(gcap_graph_add_empty_node(g, NULL, 0, &root));
  assert_ok(gcap_graph_add_child_graph_node(g, &root, 1, child, child_node));
  assert_ok(gcap_graph_add_empty_node(g, child_node, 1, &sink));
  return g;
}

static void run(struct fx *f, gcap_exec *x) {
  assert_ok(gcap_exec_launch(x, f->s));
  assert_ok(gcap_stream_synchronize(f->s));
}

static void assert_bytes(struct fx *f, const unsigned char *dev, unsigned char want, size_t bytes) {
  unsigned char h[BYTES];
  assert_ok(gcap_memcpy(f->ctx, h, dev, bytes, GCAP_MEMCPY_DEVICE_TO_HOST));
  for (size_t i = 0; i < bytes; i++) assert_int_equal(h[i], want);
}

static void test_new_values_run_and_the_graph_keeps_its_own(void **state) {
  struct fx *f = *state;
  gcap_graph *child = fill_then_copy(f, 1, BYTES), *other = fill_then_copy(f, 7, BYTES);
  gcap_node *cn = NULL;
  gcap_graph *g = parent_of(f, child, &cn);
  gcap_exec *x = NULL;
  assert_ok(gcap_graph_instantiate(g, 0, &x));
  run(f, x);
  assert_bytes(f, f->dev2, 1, BYTES / 2);

  assert_ok(gcap_exec_child_graph_node_set_params(x, cn, other));
  test_assert_message_empty();
  run(f, x);
  assert_bytes(f, f->dev, 7, BYTES);
  assert_bytes(f, f->dev2, 7, BYTES / 2);
  assert_int_equal(gcap_exec_node_count(x), 5);

  /* The graph's own child is untouched: a new executable fills with 1 again. */
  gcap_graph *embedded = NULL;
  gcap_node *nodes[2];
  size_t count = 2;
  gcap_memset_node_params got;
  assert_ok(gcap_node_get_child_graph(cn, &embedded));
  assert_ok(gcap_graph_get_nodes(embedded, nodes, &count));
  assert_ok(gcap_node_get_memset_params(nodes[0], &got));
  assert_int_equal(got.value, 1);

  /* The generic setter reaches the same call. */
  gcap_graph *third = fill_then_copy(f, 9, BYTES / 2);
  gcap_node_params p = {.type = GCAP_NODE_GRAPH, .u.child_graph = third};
  assert_ok(gcap_exec_node_set_params(x, cn, &p));
  run(f, x);
  assert_bytes(f, f->dev2, 9, BYTES / 2);

  gcap_exec_destroy(x);
  gcap_graph_destroy(g);
  gcap_graph_destroy(child);
  gcap_graph_destroy(other);
  gcap_graph_destroy(third);
}

/* Kernel arguments of the new child are copied by the call: changing the caller's values later does nothing. */
static void test_kernel_arguments_are_copied(void **state) {
  struct fx *f = *state;
  float *buf = test_dev_alloc(f->ctx, 4 * sizeof(float));
  float zero[4] = {0}, v = 1.0f;
  uint32_t n = 4;
  void *args[] = {&buf, &v, &n};
  gcap_kernel_node_params kp = {f->add, {1, 1, 1}, {4, 1, 1}, 0, args};
  gcap_graph *child = test_graph_create(f->ctx), *other = test_graph_create(f->ctx);
  assert_ok(gcap_graph_add_kernel_node(child, NULL, 0, &kp, &(gcap_node *){NULL}));
  v = 2.5f;
  assert_ok(gcap_graph_add_kernel_node(other, NULL, 0, &kp, &(gcap_node *){NULL}));
  gcap_node *cn = NULL;
  gcap_graph *g = parent_of(f, child, &cn);
  gcap_exec *x = NULL;
  assert_ok(gcap_graph_instantiate(g, 0, &x));
  assert_ok(gcap_exec_child_graph_node_set_params(x, cn, other));
  gcap_graph_destroy(other); /* read, not kept */
  assert_ok(gcap_memcpy(f->ctx, buf, zero, sizeof zero, GCAP_MEMCPY_HOST_TO_DEVICE));
  run(f, x);
  run(f, x);
  float got[4];
  assert_ok(gcap_memcpy(f->ctx, got, buf, sizeof got, GCAP_MEMCPY_DEVICE_TO_HOST));
  if (test_on_sim())
    for (int i = 0; i < 4; i++) assert_true(got[i] == 5.0f);
  gcap_exec_destroy(x);
  gcap_graph_destroy(g);
  gcap_graph_destroy(child);
}

/* Each mismatch: INVALID_VALUE, a message saying what differs, and the executable runs as before. */
static void test_mismatches_leave_the_executable_unchanged(void **state) {
  struct fx *f = *state;
  gcap_graph *child = fill_then_copy(f, 3, BYTES);
  gcap_node *cn = NULL;
  gcap_graph *g = parent_of(f, child, &cn);
  gcap_exec *x = NULL;
  assert_ok(gcap_graph_instantiate(g, 0, &x));

  gcap_graph *longer = fill_then_copy(f, 5, BYTES);
  assert_ok(gcap_graph_add_empty_node(longer, NULL, 0, &(gcap_node *){NULL}));
  assert_status(gcap_exec_child_graph_node_set_params(x, cn, longer), GCAP_ERROR_INVALID_VALUE);
  test_assert_message_contains("gcap_exec_child_graph_node_set_params: child ");
  test_assert_message_contains("does not match the node's graph: the graphs have different node counts");

  /* Same count, no edge: the copy is a root now. */
  gcap_graph *unlinked = test_graph_create(f->ctx);
  gcap_memset_node_params mp = {f->dev, 5, 1, BYTES, 1, 0};
  gcap_memcpy_node_params cp = {f->dev2, f->dev, BYTES / 2, GCAP_MEMCPY_DEVICE_TO_DEVICE};
  assert_ok(gcap_graph_add_memset_node(unlinked, NULL, 0, &mp, &(gcap_node *){NULL}));
  assert_ok(gcap_graph_add_memcpy_node(unlinked, NULL, 0, &cp, &(gcap_node *){NULL}));
  assert_status(gcap_exec_child_graph_node_set_params(x, cn, unlinked), GCAP_ERROR_INVALID_VALUE);
  test_assert_message_contains("the topology or node order differs");

  /* Same shape, a host node where the fill was. */
  gcap_graph *retyped = test_graph_create(f->ctx);
  gcap_node *h = NULL;
  gcap_host_node_params hp = {nothing, NULL};
  assert_ok(gcap_graph_add_host_node(retyped, NULL, 0, &hp, &h));
  assert_ok(gcap_graph_add_memcpy_node(retyped, &h, 1, &cp, &(gcap_node *){NULL}));
  assert_status(gcap_exec_child_graph_node_set_params(x, cn, retyped), GCAP_ERROR_INVALID_VALUE);
  test_assert_message_contains("a node changed type");

  /* The copy changes direction: device to host. */
  unsigned char host[BYTES];
  gcap_graph *redirected = test_graph_create(f->ctx);
  gcap_node *fill = NULL;
  gcap_memcpy_node_params d2h = {host, f->dev, BYTES / 2, GCAP_MEMCPY_DEVICE_TO_HOST};
  assert_ok(gcap_graph_add_memset_node(redirected, NULL, 0, &mp, &fill));
  assert_ok(gcap_graph_add_memcpy_node(redirected, &fill, 1, &d2h, &(gcap_node *){NULL}));
  assert_status(gcap_exec_child_graph_node_set_params(x, cn, redirected), GCAP_ERROR_INVALID_VALUE);
  test_assert_message_contains("a copy changed its direction or kind");

  run(f, x);
  assert_bytes(f, f->dev, 3, BYTES);
  assert_bytes(f, f->dev2, 3, BYTES / 2);
  gcap_graph *made[] = {longer, unlinked, retyped, redirected, child, g};
  for (size_t i = 0; i < sizeof made / sizeof made[0]; i++) gcap_graph_destroy(made[i]);
  gcap_exec_destroy(x);
}

static void test_argument_errors(void **state) {
  struct fx *f = *state;
  gcap_graph *child = fill_then_copy(f, 3, BYTES);
  gcap_node *cn = NULL;
  gcap_graph *g = parent_of(f, child, &cn);
  gcap_exec *x = NULL;
  assert_ok(gcap_graph_instantiate(g, 0, &x));
  gcap_node *root = NULL;
  size_t one = 1;
  assert_ok(gcap_graph_get_root_nodes(g, &root, &one));

  assert_status(gcap_exec_child_graph_node_set_params(x, cn, NULL), GCAP_ERROR_INVALID_HANDLE);
  test_assert_message_contains("gcap_exec_child_graph_node_set_params: child is NULL");
  assert_status(gcap_exec_child_graph_node_set_params(NULL, cn, child), GCAP_ERROR_INVALID_HANDLE);
  test_assert_message_contains("exec");
  assert_status(gcap_exec_child_graph_node_set_params(x, NULL, child), GCAP_ERROR_INVALID_HANDLE);
  test_assert_message_contains("node");
  assert_status(gcap_exec_child_graph_node_set_params(x, cn, (gcap_graph *)(void *)f), GCAP_ERROR_INVALID_HANDLE);
  test_assert_message_contains("child");
  assert_status(gcap_exec_child_graph_node_set_params(x, root, child), GCAP_ERROR_INVALID_VALUE);
  test_assert_message_contains("is an empty node, not a child graph node");

  /* A child whose nodes are being captured into is not read. */
  gcap_graph *target = fill_then_copy(f, 4, BYTES);
  assert_ok(gcap_stream_begin_capture_to_graph(f->s, target, NULL, 0, GCAP_CAPTURE_MODE_GLOBAL));
  assert_status(gcap_exec_child_graph_node_set_params(x, cn, target), GCAP_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  test_assert_message_contains("setting it into a child-graph node is not permitted");
  assert_ok(gcap_stream_end_capture(f->s, NULL));
  assert_ok(gcap_exec_child_graph_node_set_params(x, cn, target));

  /* A child made by capture with an allocation in it. */
  gcap_graph *with_mem = NULL;
  void *p = NULL;
  assert_ok(gcap_stream_begin_capture(f->s, GCAP_CAPTURE_MODE_GLOBAL));
  assert_ok(gcap_mem_alloc_async(f->s, 64, &p));
  assert_ok(gcap_mem_free_async(f->s, p));
  assert_ok(gcap_stream_end_capture(f->s, &with_mem));
  assert_status(gcap_exec_child_graph_node_set_params(x, cn, with_mem), GCAP_ERROR_NOT_SUPPORTED);
  test_assert_message_contains("holds allocation or free nodes");

  gcap_graph *made[] = {target, with_mem, child, g};
  for (size_t i = 0; i < sizeof made / sizeof made[0]; i++) gcap_graph_destroy(made[i]);
  gcap_exec_destroy(x);
}

/* A child graph inside the child: the nested entries pair too. */
static void test_nested_child_graphs(void **state) {
  struct fx *f = *state;
  gcap_graph *inner = fill_then_copy(f, 2, BYTES), *inner2 = fill_then_copy(f, 6, BYTES);
  gcap_node *in1 = NULL, *in2 = NULL;
  gcap_graph *mid = parent_of(f, inner, &in1), *mid2 = parent_of(f, inner2, &in2);
  gcap_node *cn = NULL;
  gcap_graph *g = parent_of(f, mid, &cn);
  gcap_exec *x = NULL;
  assert_ok(gcap_graph_instantiate(g, 0, &x));
  assert_ok(gcap_exec_child_graph_node_set_params(x, cn, mid2));
  run(f, x);
  assert_bytes(f, f->dev2, 6, BYTES / 2);
  gcap_graph *made[] = {inner, inner2, mid, mid2, g};
  for (size_t i = 0; i < sizeof made / sizeof made[0]; i++) gcap_graph_destroy(made[i]);
  gcap_exec_destroy(x);
}

int main(void) {
  test_require_backend();
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_new_values_run_and_the_graph_keeps_its_own, setup, teardown),
      cmocka_unit_test_setup_teardown(test_kernel_arguments_are_copied, setup, teardown),
      cmocka_unit_test_setup_teardown(test_mismatches_leave_the_executable_unchanged, setup, teardown),
      cmocka_unit_test_setup_teardown(test_argument_errors, setup, teardown),
      cmocka_unit_test_setup_teardown(test_nested_child_graphs, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
