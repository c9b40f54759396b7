/*
 * Conditional nodes (IF, IF/ELSE, WHILE, SWITCH) and their handles: kernels set the value with
 * gcap_sim_set_conditional, bodies filled by hand and by capture, nesting, a conditional added
 * inside a stream capture, and the restrictions CUDA places on graphs holding them.
 */
#define _POSIX_C_SOURCE 200809L /* mkstemp */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "common.h"

static char sentinel_storage[8];
#define SENTINEL_NODE ((gcap_node *)(void *)&sentinel_storage[1])

/* set(h, v): the handle takes v. */
static void set_sim(const gcap_sim_thread *t, void *const *args) {
  gcap_conditional_handle h;
  uint32_t v;
  memcpy(&h, args[0], sizeof h);
  memcpy(&v, args[1], sizeof v);
  if (t->thread_idx.x == 0) gcap_sim_set_conditional(h, v);
}

/* add(p, v): *p += v. */
static void add_sim(const gcap_sim_thread *t, void *const *args) {
  uint32_t *p, v;
  memcpy(&p, args[0], sizeof p);
  memcpy(&v, args[1], sizeof v);
  if (t->thread_idx.x == 0) *p += v;
}

static const size_t set_sizes[] = {sizeof(gcap_conditional_handle), sizeof(uint32_t)};
static const size_t add_sizes[] = {sizeof(uint32_t *), sizeof(uint32_t)};

struct fx {
  gcap_context *ctx;
  gcap_stream *s;
  gcap_kernel *set, *countdown, *add;
  uint32_t *words; /* device: [0] counter, [1] sum, [2] other */
};

static int setup(void **state) {
  struct fx *f = calloc(1, sizeof *f);
  f->ctx = test_context_create();
  f->s = test_stream_create(f->ctx);
  const gcap_kernel_def defs[] = {
      {.name = "set", .sim_fn = set_sim, .num_params = 2, .param_sizes = set_sizes},
      TEST_COUNTDOWN_KERNEL,
      {.name = "add", .sim_fn = add_sim, .num_params = 2, .param_sizes = add_sizes},
  };
  gcap_module_desc d = {.kernels = defs, .num_kernels = 3};
  gcap_module *m = NULL;
  assert_ok(test_module_load(f->ctx, &d, &m));
  f->set = test_kernel_of(m, "set");
  f->countdown = test_kernel_of(m, "countdown");
  f->add = test_kernel_of(m, "add");
  f->words = test_dev_alloc(f->ctx, 4 * sizeof(uint32_t));
  *state = f;
  return 0;
}

static int teardown(void **state) {
  struct fx *f = *state;
  gcap_context_destroy(f->ctx);
  free(f);
  return 0;
}

static gcap_node *add_kernel(gcap_graph *g, gcap_node *dep, gcap_kernel *k, void *a, void *b) {
  void *args[] = {a, b};
  gcap_kernel_node_params p = {k, {1, 1, 1}, {1, 1, 1}, 0, args};
  gcap_node *n = NULL;
  assert_ok(gcap_graph_add_kernel_node(g, dep ? &dep : NULL, dep ? 1 : 0, &p, &n));
  return n;
}

static gcap_node *add_to(struct fx *f, gcap_graph *g, gcap_node *dep, size_t word, uint32_t v) {
  uint32_t *p = f->words + word;
  return add_kernel(g, dep, f->add, &p, &v);
}

static gcap_node *set_value(struct fx *f, gcap_graph *g, gcap_node *dep, gcap_conditional_handle h, uint32_t v) {
  return add_kernel(g, dep, f->set, &h, &v);
}

static gcap_node *add_cond(gcap_graph *g, gcap_node *dep, gcap_conditional_handle h, gcap_conditional_type type,
                           unsigned size, gcap_graph **bodies) {
  gcap_conditional_node_params p = {h, type, size, bodies};
  gcap_node *n = NULL;
  assert_ok(gcap_graph_add_conditional_node(g, dep ? &dep : NULL, dep ? 1 : 0, &p, &n));
  return n;
}

static void words_set(struct fx *f, uint32_t counter, uint32_t sum, uint32_t other) {
  uint32_t w[4] = {counter, sum, other, 0};
  assert_ok(gcap_memcpy(f->ctx, f->words, w, sizeof w, GCAP_MEMCPY_HOST_TO_DEVICE));
}

static uint32_t word(struct fx *f, size_t i) {
  uint32_t w[4];
  assert_ok(gcap_memcpy(f->ctx, w, f->words, sizeof w, GCAP_MEMCPY_DEVICE_TO_HOST));
  return w[i];
}

static void run(struct fx *f, gcap_exec *x) {
  assert_ok(gcap_exec_launch(x, f->s));
  assert_ok(gcap_stream_synchronize(f->s));
}

static void test_handle_arguments(void **state) {
  test_require_sim();
  struct fx *f = *state;
  gcap_graph *g = test_graph_create(f->ctx);
  gcap_conditional_handle h = 0;
  assert_status(gcap_graph_conditional_handle_create(g, 0, 2, &h), GCAP_ERROR_INVALID_VALUE);
  test_assert_message_contains("gcap_graph_conditional_handle_create: flags 0x2 has unknown bits 0x2");
  assert_status(gcap_graph_conditional_handle_create(g, 0, 0, NULL), GCAP_ERROR_INVALID_VALUE);
  test_assert_message_contains("out is NULL");
  assert_status(gcap_graph_conditional_handle_create(NULL, 0, 0, &h), GCAP_ERROR_INVALID_HANDLE);
  gcap_conditional_handle a = 0, b = 0;
  assert_ok(gcap_graph_conditional_handle_create(g, 1, GCAP_GRAPH_COND_ASSIGN_DEFAULT, &a));
  assert_ok(gcap_graph_conditional_handle_create(g, 0, 0, &b));
  assert_true(a != 0 && b != 0 && a != b);
  gcap_graph_destroy(g);
}

/* IF with one body, and IF/ELSE, each way; the value comes from a kernel before the node. */
static void test_if_and_else(void **state) {
  test_require_sim();
  struct fx *f = *state;
  for (uint32_t v = 0; v < 2; v++) {
    gcap_graph *g = test_graph_create(f->ctx), *bodies[2] = {NULL, NULL}, *one[1] = {NULL};
    gcap_conditional_handle h = 0;
    assert_ok(gcap_graph_conditional_handle_create(g, 0, 0, &h));
    gcap_node *set = set_value(f, g, NULL, h, v);
    gcap_node *if_else = add_cond(g, set, h, GCAP_CONDITIONAL_IF, 2, bodies);
    add_to(f, bodies[0], NULL, 1, 10); /* then: sum += 10 */
    add_to(f, bodies[1], NULL, 2, 1);  /* else: other += 1 */
    add_cond(g, if_else, h, GCAP_CONDITIONAL_IF, 1, one);
    add_to(f, one[0], NULL, 1, 100);
    gcap_exec *x = NULL;
    assert_ok(gcap_graph_instantiate(g, 0, &x));
    words_set(f, 0, 0, 0);
    run(f, x);
    assert_int_equal(word(f, 1), v ? 110 : 0);
    assert_int_equal(word(f, 2), v ? 0 : 1);
    assert_int_equal(gcap_exec_node_count(x), 3);
    gcap_exec_destroy(x);
    gcap_graph_destroy(g);
  }
}

/* A do-while (ASSIGN_DEFAULT 1) counting down from 5: five passes, and five again at the next launch. */
static void test_while_loop(void **state) {
  test_require_sim();
  struct fx *f = *state;
  gcap_graph *g = test_graph_create(f->ctx), *body[1] = {NULL};
  gcap_conditional_handle h = 0;
  assert_ok(gcap_graph_conditional_handle_create(g, 1, GCAP_GRAPH_COND_ASSIGN_DEFAULT, &h));
  add_cond(g, NULL, h, GCAP_CONDITIONAL_WHILE, 1, body);
  gcap_node *sum = add_to(f, body[0], NULL, 1, 3);
  add_kernel(body[0], sum, f->countdown, &(uint32_t *){f->words}, &h);
  gcap_exec *x = NULL;
  assert_ok(gcap_graph_instantiate(g, 0, &x));
  gcap_sim_stats before, after;
  assert_ok(gcap_sim_get_stats(f->ctx, &before));
  words_set(f, 5, 0, 0);
  run(f, x);
  assert_int_equal(word(f, 0), 0);
  assert_int_equal(word(f, 1), 15);
  assert_ok(gcap_sim_get_stats(f->ctx, &after));
  assert_int_equal(after.nodes_executed - before.nodes_executed, 1 + 5 * 2);
  words_set(f, 2, 0, 0);
  run(f, x); /* the handle is 0 after the last pass, and 1 again at the launch's start */
  assert_int_equal(word(f, 1), 6);
  gcap_exec_destroy(x);
  gcap_graph_destroy(g);
}

/* Without ASSIGN_DEFAULT a launch starts from the value the last one left; the default comes first. */
static void test_value_kept_without_assign_default(void **state) {
  test_require_sim();
  struct fx *f = *state;
  gcap_graph *g = test_graph_create(f->ctx), *body[1] = {NULL};
  gcap_conditional_handle h = 0;
  assert_ok(gcap_graph_conditional_handle_create(g, 1, 0, &h));
  gcap_node *n = add_cond(g, NULL, h, GCAP_CONDITIONAL_IF, 1, body);
  add_to(f, body[0], NULL, 1, 1);
  set_value(f, g, n, h, 0); /* after the IF: the next launch skips it */
  gcap_exec *x = NULL;
  assert_ok(gcap_graph_instantiate(g, 0, &x));
  words_set(f, 0, 0, 0);
  run(f, x);
  run(f, x);
  assert_int_equal(word(f, 1), 1);
  gcap_exec_destroy(x);
  gcap_graph_destroy(g);
}

static void test_switch(void **state) {
  test_require_sim();
  struct fx *f = *state;
  uint32_t values[] = {0, 2, 3, 9};
  uint32_t want_sum[] = {1, 100, 0, 0};
  for (size_t i = 0; i < 4; i++) {
    gcap_graph *g = test_graph_create(f->ctx), *bodies[3];
    gcap_conditional_handle h = 0;
    assert_ok(gcap_graph_conditional_handle_create(g, 0, 0, &h));
    gcap_node *set = set_value(f, g, NULL, h, values[i]);
    add_cond(g, set, h, GCAP_CONDITIONAL_SWITCH, 3, bodies);
    add_to(f, bodies[0], NULL, 1, 1);
    add_to(f, bodies[1], NULL, 1, 10);
    add_to(f, bodies[2], NULL, 1, 100);
    gcap_exec *x = NULL;
    assert_ok(gcap_graph_instantiate(g, 0, &x));
    words_set(f, 0, 0, 0);
    run(f, x);
    assert_int_equal(word(f, 1), want_sum[i]);
    gcap_exec_destroy(x);
    gcap_graph_destroy(g);
  }
}

/* A WHILE whose body holds an IF on a second handle (made on the top-level graph), and a child graph. */
static void test_nesting(void **state) {
  test_require_sim();
  struct fx *f = *state;
  gcap_graph *g = test_graph_create(f->ctx), *loop[1], *inner[1], *child = test_graph_create(f->ctx);
  gcap_conditional_handle again = 0, odd = 0;
  assert_ok(gcap_graph_conditional_handle_create(g, 1, GCAP_GRAPH_COND_ASSIGN_DEFAULT, &again));
  assert_ok(gcap_graph_conditional_handle_create(g, 0, 0, &odd));
  add_cond(g, NULL, again, GCAP_CONDITIONAL_WHILE, 1, loop);
  add_to(f, child, NULL, 2, 1); /* other += 1 per pass, through a child graph */
  gcap_node *c = NULL;
  assert_ok(gcap_graph_add_child_graph_node(loop[0], NULL, 0, child, &c));
  gcap_node *toggle = set_value(f, loop[0], c, odd, 1);
  gcap_node *iff = add_cond(loop[0], toggle, odd, GCAP_CONDITIONAL_IF, 1, inner);
  add_to(f, inner[0], NULL, 1, 5);
  add_kernel(loop[0], iff, f->countdown, &(uint32_t *){f->words}, &again);
  gcap_exec *x = NULL;
  assert_ok(gcap_graph_instantiate(g, 0, &x));
  words_set(f, 4, 0, 0);
  run(f, x);
  assert_int_equal(word(f, 0), 0);
  assert_int_equal(word(f, 1), 20);
  assert_int_equal(word(f, 2), 4);
  gcap_exec_destroy(x);
  gcap_graph_destroy(child);
  gcap_graph_destroy(g);
}

/* As CUDA's graphConditionalNodes sample: a WHILE added in the middle of a stream capture, its body captured. */
static void test_conditional_inside_a_capture(void **state) {
  test_require_sim();
  struct fx *f = *state;
  gcap_stream *side = test_stream_create(f->ctx);
  words_set(f, 3, 0, 0);
  uint32_t *counter = f->words, *sum = f->words + 1, one = 1;
  void *add_args[] = {&sum, &one};
  assert_ok(gcap_stream_begin_capture(f->s, GCAP_CAPTURE_MODE_GLOBAL));
  assert_ok(gcap_launch_kernel(f->s, f->add, GCAP_DIM3(1, 1, 1), GCAP_DIM3(1, 1, 1), 0, add_args));
  gcap_capture_info info;
  assert_ok(gcap_stream_get_capture_info(f->s, &info));
  gcap_conditional_handle h = 0;
  assert_ok(gcap_graph_conditional_handle_create(info.graph, 1, GCAP_GRAPH_COND_ASSIGN_DEFAULT, &h));
  gcap_graph *body[1];
  gcap_node_params p = {.type = GCAP_NODE_CONDITIONAL};
  p.u.conditional = (gcap_conditional_node_params){h, GCAP_CONDITIONAL_WHILE, 1, body};
  gcap_node *loop = NULL;
  assert_ok(gcap_graph_add_node(info.graph, (gcap_node *const *)info.dependencies, info.num_dependencies, &p, &loop));
  assert_ok(gcap_stream_update_capture_dependencies(f->s, &loop, 1, GCAP_STREAM_SET_CAPTURE_DEPENDENCIES));
  /* The body, by capture on another stream. */
  void *count_args[] = {&counter, &h};
  assert_ok(gcap_stream_begin_capture_to_graph(side, body[0], NULL, 0, GCAP_CAPTURE_MODE_RELAXED));
  assert_ok(gcap_launch_kernel(side, f->add, GCAP_DIM3(1, 1, 1), GCAP_DIM3(1, 1, 1), 0, add_args));
  assert_ok(gcap_launch_kernel(side, f->countdown, GCAP_DIM3(1, 1, 1), GCAP_DIM3(1, 1, 1), 0, count_args));
  assert_ok(gcap_stream_end_capture(side, NULL));
  assert_ok(gcap_launch_kernel(f->s, f->add, GCAP_DIM3(1, 1, 1), GCAP_DIM3(1, 1, 1), 0, add_args));
  gcap_graph *g = NULL;
  assert_ok(gcap_stream_end_capture(f->s, &g));
  assert_int_equal(gcap_graph_node_count(g), 3);
  assert_int_equal(gcap_graph_node_count(body[0]), 2);
  gcap_conditional_node_params got = {0};
  gcap_graph *got_body[1] = {NULL};
  got.body_out = got_body;
  assert_ok(gcap_node_get_conditional_params(loop, &got));
  assert_int_equal(got.handle, h);
  assert_int_equal(got.type, GCAP_CONDITIONAL_WHILE);
  assert_int_equal(got.size, 1);
  assert_ptr_equal(got_body[0], body[0]);
  gcap_exec *x = NULL;
  assert_ok(gcap_graph_instantiate(g, 0, &x));
  run(f, x);
  assert_int_equal(word(f, 1), 1 + 3 + 1);
  gcap_exec_destroy(x);
  gcap_graph_destroy(g);
  assert_ok(gcap_stream_destroy(side));
}

/* What CUDA forbids, each with its status and a message that says why. */
/* Copies in a body touch device and page-locked host memory only: pageable host memory is refused when the node is
 * made. */
static void test_body_copies_need_page_locked_host_memory(void **state) {
  struct fx *f = *state;
  gcap_graph *g = test_graph_create(f->ctx);
  gcap_conditional_handle h = 0;
  assert_ok(gcap_graph_conditional_handle_create(g, 1, 0, &h));
  gcap_graph *body[1];
  add_cond(g, NULL, h, GCAP_CONDITIONAL_IF, 1, body);
  static uint32_t pageable[4];
  uint32_t *pinned = NULL;
  assert_ok(gcap_host_alloc(f->ctx, sizeof pageable, (void **)&pinned));
  gcap_memcpy_node_params bad = {f->words, pageable, sizeof pageable, GCAP_MEMCPY_HOST_TO_DEVICE};
  gcap_node *n = NULL;
  assert_status(gcap_graph_add_memcpy_node(body[0], NULL, 0, &bad, &n), GCAP_ERROR_INVALID_VALUE);
  test_assert_message_contains("params->src");
  test_assert_message_contains("pageable host memory");
  gcap_memcpy_node_params back = {pageable, f->words, sizeof pageable, GCAP_MEMCPY_DEVICE_TO_HOST};
  assert_status(gcap_graph_add_memcpy_node(body[0], NULL, 0, &back, &n), GCAP_ERROR_INVALID_VALUE);
  test_assert_message_contains("params->dst");
  gcap_memcpy_node_params good = {f->words, pinned, sizeof pageable, GCAP_MEMCPY_HOST_TO_DEVICE};
  assert_ok(gcap_graph_add_memcpy_node(body[0], NULL, 0, &good, &n));
  assert_status(gcap_node_set_memcpy_params(n, &bad), GCAP_ERROR_INVALID_VALUE);
  gcap_memcpy_3d_params p3 = {{pageable, 16, 16, 1},     {0, 0, 0}, {f->words, 16, 16, 1}, {0, 0, 0}, {16, 1, 1},
                              GCAP_MEMCPY_HOST_TO_DEVICE};
  assert_status(gcap_graph_add_memcpy_3d_node(body[0], NULL, 0, &p3, &n), GCAP_ERROR_INVALID_VALUE);
  /* Outside a body, pageable memory is fine. */
  assert_ok(gcap_graph_add_memcpy_node(g, NULL, 0, &bad, &n));
  /* And captured into a body, the eager call is refused. */
  gcap_stream *side = test_stream_create(f->ctx);
  assert_ok(gcap_stream_begin_capture_to_graph(side, body[0], NULL, 0, GCAP_CAPTURE_MODE_RELAXED));
  assert_status(gcap_memcpy_async(side, f->words, pageable, sizeof pageable, GCAP_MEMCPY_HOST_TO_DEVICE),
                GCAP_ERROR_INVALID_VALUE);
  gcap_graph *ended = NULL;
  gcap_stream_end_capture(side, &ended);
  assert_ok(gcap_host_free(f->ctx, pinned));
  gcap_graph_destroy(g);
}

/* A handle no conditional node uses fails instantiation, naming it (CUDA may refuse such a graph). */
static void test_unused_handle(void **state) {
  struct fx *f = *state;
  gcap_graph *g = test_graph_create(f->ctx);
  gcap_conditional_handle used = 0, unused = 0;
  assert_ok(gcap_graph_conditional_handle_create(g, 0, 0, &used));
  assert_ok(gcap_graph_conditional_handle_create(g, 0, 0, &unused));
  gcap_graph *body[1];
  add_cond(g, NULL, used, GCAP_CONDITIONAL_IF, 1, body);
  gcap_exec *x = NULL;
  assert_status(gcap_graph_instantiate(g, 0, &x), GCAP_ERROR_INVALID_VALUE);
  char want[64];
  snprintf(want, sizeof want, "conditional handle 0x%llx", (unsigned long long)unused);
  test_assert_message_contains(want);
  assert_null(x);
  gcap_graph *inner[1];
  add_cond(body[0], NULL, unused, GCAP_CONDITIONAL_WHILE, 1, inner); /* used inside a body: enough */
  assert_ok(gcap_graph_instantiate(g, 0, &x));
  gcap_exec_destroy(x);
  gcap_graph_destroy(g);
}

static void test_restrictions(void **state) {
  struct fx *f = *state;
  gcap_graph *g = test_graph_create(f->ctx), *other = test_graph_create(f->ctx), *body[1];
  gcap_conditional_handle h = 0, foreign = 0;
  assert_ok(gcap_graph_conditional_handle_create(g, 0, 0, &h));
  assert_ok(gcap_graph_conditional_handle_create(other, 0, 0, &foreign));
  gcap_conditional_node_params p = {h, GCAP_CONDITIONAL_IF, 3, body};
  gcap_node *out = SENTINEL_NODE;
  assert_status(gcap_graph_add_conditional_node(g, NULL, 0, &p, &out), GCAP_ERROR_INVALID_VALUE);
  test_assert_message_contains("params->size 3 does not fit a IF node");
  assert_null(out);
  p.type = GCAP_CONDITIONAL_WHILE, p.size = 2;
  assert_status(gcap_graph_add_conditional_node(g, NULL, 0, &p, &out), GCAP_ERROR_INVALID_VALUE);
  p.type = GCAP_CONDITIONAL_SWITCH, p.size = 0;
  assert_status(gcap_graph_add_conditional_node(g, NULL, 0, &p, &out), GCAP_ERROR_INVALID_VALUE);
  p.type = (gcap_conditional_type)3, p.size = 1;
  assert_status(gcap_graph_add_conditional_node(g, NULL, 0, &p, &out), GCAP_ERROR_INVALID_VALUE);
  test_assert_message_contains("params->type 3 is not IF, WHILE or SWITCH");
  p.type = GCAP_CONDITIONAL_IF, p.body_out = NULL;
  assert_status(gcap_graph_add_conditional_node(g, NULL, 0, &p, &out), GCAP_ERROR_INVALID_VALUE);
  test_assert_message_contains("params->body_out is NULL");
  p.body_out = body, p.handle = foreign;
  assert_status(gcap_graph_add_conditional_node(g, NULL, 0, &p, &out), GCAP_ERROR_INVALID_VALUE);
  test_assert_message_contains("is not a handle of graph");
  assert_int_equal(gcap_graph_node_count(g), 0);

  p.handle = h;
  gcap_node *n = NULL;
  assert_ok(gcap_graph_add_conditional_node(g, NULL, 0, &p, &n));
  gcap_graph_destroy(body[0]); /* owned by the node: refused */
  test_assert_message_contains("belongs to a conditional node; destroy that node instead");
  gcap_graph *clone = NULL, *parent = test_graph_create(f->ctx);
  assert_status(gcap_graph_clone(g, &clone), GCAP_ERROR_NOT_SUPPORTED);
  test_assert_message_contains("holds conditional nodes or handles: cloning is not supported");
  assert_status(gcap_graph_add_child_graph_node(parent, NULL, 0, g, &out), GCAP_ERROR_NOT_SUPPORTED);
  /* A child graph's graph cannot hold one either. */
  gcap_graph *empty = test_graph_create(f->ctx), *inner = NULL;
  gcap_node *child = NULL;
  assert_ok(gcap_graph_add_child_graph_node(parent, NULL, 0, empty, &child));
  assert_ok(gcap_node_get_child_graph(child, &inner));
  gcap_conditional_handle ph = 0;
  assert_ok(gcap_graph_conditional_handle_create(parent, 0, 0, &ph));
  gcap_conditional_node_params cp = {ph, GCAP_CONDITIONAL_IF, 1, body};
  assert_status(gcap_graph_add_conditional_node(inner, NULL, 0, &cp, &out), GCAP_ERROR_NOT_SUPPORTED);
  test_assert_message_contains("the graph of a child-graph node, which cannot hold conditional nodes");

  /* Bodies hold kernel, empty, child-graph, memset, memcpy and conditional nodes only. */
  gcap_host_node_params hp = {(gcap_host_fn)(void (*)(void *))free, NULL};
  gcap_node *host = NULL;
  assert_ok(gcap_graph_add_host_node(body[0], NULL, 0, &hp, &host));
  gcap_exec *x = NULL, *y = NULL;
  assert_status(gcap_graph_instantiate(g, 0, &x), GCAP_ERROR_INVALID_VALUE);
  test_assert_message_contains("node 0 of a body of conditional node 0 is a host node");
  assert_ok(gcap_graph_destroy_node(host));
  assert_ok(gcap_graph_instantiate(g, 0, &x));
  assert_status(gcap_graph_instantiate(g, 0, &y), GCAP_ERROR_NOT_SUPPORTED);
  test_assert_message_contains("holds conditional nodes or handles and already has executable");
  gcap_exec_update_info info;
  assert_status(gcap_exec_update(x, g, &info), GCAP_ERROR_GRAPH_EXEC_UPDATE_FAILURE);
  assert_int_equal(info.result, GCAP_EXEC_UPDATE_ERROR_NOT_SUPPORTED);
  test_assert_message_contains("executables with conditional nodes cannot be updated");
  gcap_exec_destroy(x);
  assert_ok(gcap_graph_instantiate(g, 0, &y)); /* the first one is gone */
  gcap_exec_destroy(y);
  gcap_graph *made[] = {g, other, parent, empty};
  for (size_t i = 0; i < 4; i++) gcap_graph_destroy(made[i]);
}

/* A kernel setting something that is not a handle fails its launch, naming the kernel. */
static void test_bad_handle_in_a_kernel(void **state) {
  test_require_sim();
  struct fx *f = *state;
  gcap_graph *g = test_graph_create(f->ctx);
  set_value(f, g, NULL, 0x1234, 1);
  gcap_exec *x = NULL;
  assert_ok(gcap_graph_instantiate(g, 0, &x));
  gcap_status st = gcap_exec_launch(x, f->s);
  if (st == GCAP_SUCCESS) st = gcap_stream_synchronize(f->s);
  assert_int_equal(st, GCAP_ERROR_INVALID_VALUE);
  test_assert_message_contains("kernel \"set\" called gcap_sim_set_conditional with 0x1234");
  gcap_sim_set_conditional(0x1234, 1); /* outside a kernel: nothing */
  gcap_exec_destroy(x);
  gcap_graph_destroy(g);
}

/* Race analysis sees into bodies: a body's write and an unordered node's write of the same word race. */
static void test_races_see_bodies(void **state) {
  struct fx *f = *state;
  gcap_graph *g = test_graph_create(f->ctx), *body[1];
  gcap_conditional_handle h = 0;
  assert_ok(gcap_graph_conditional_handle_create(g, 1, 0, &h));
  gcap_node *n = add_cond(g, NULL, h, GCAP_CONDITIONAL_IF, 1, body);
  gcap_memset_node_params fill = {f->words, 0, 4, 1, 1, 0};
  assert_ok(gcap_graph_add_memset_node(body[0], NULL, 0, &fill, &(gcap_node *){NULL}));
  gcap_node *outside = NULL;
  assert_ok(gcap_graph_add_memset_node(g, NULL, 0, &fill, &outside));
  gcap_race race;
  size_t count = 1;
  assert_ok(gcap_graph_find_races(g, &race, &count));
  assert_int_equal(count, 1);
  assert_ptr_equal(race.first, n);
  assert_ptr_equal(race.second, outside);
  assert_ok(gcap_graph_add_dependencies(g, &n, &outside, 1));
  assert_ok(gcap_graph_find_races(g, NULL, &count));
  assert_int_equal(count, 0);
  gcap_graph_destroy(g);
}

static char *text_of(FILE *f) {
  fflush(f);
  fseek(f, 0, SEEK_END);
  long len = ftell(f);
  char *text = calloc(1, (size_t)len + 1);
  rewind(f);
  assert_int_equal(fread(text, 1, (size_t)len, f), (size_t)len);
  return text;
}

/* DOT shows the node and its bodies; a saved graph loads with new handles of the same defaults. */
static void test_dot_and_saved_graphs(void **state) {
  struct fx *f = *state;
  gcap_graph *g = test_graph_create(f->ctx), *body[2];
  gcap_conditional_handle h = 0;
  assert_ok(gcap_graph_conditional_handle_create(g, 7, GCAP_GRAPH_COND_ASSIGN_DEFAULT, &h));
  add_cond(g, NULL, h, GCAP_CONDITIONAL_IF, 2, body);
  gcap_memset_node_params fill = {f->words, 0, 4, 1, 1, 0};
  assert_ok(gcap_graph_add_memset_node(body[1], NULL, 0, &fill, &(gcap_node *){NULL}));
  assert_ok(gcap_graph_add_memset_node(body[1], NULL, 0, &fill, &(gcap_node *){NULL}));

  FILE *dot = tmpfile();
  assert_ok(gcap_graph_write_dot(g, dot, GCAP_DOT_VERBOSE));
  char *text = text_of(dot);
  fclose(dot);
  assert_non_null(strstr(text, "0: conditional IF (bodies of 0, 2 nodes)\\nhandle 0x"));
  assert_non_null(strstr(text, "shape=diamond"));
  free(text);
  char path[] = "/tmp/gcap-conditional-XXXXXX";
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  close(fd);
  assert_ok(gcap_graph_debug_dot_print(g, path, GCAP_GRAPH_DEBUG_DOT_FLAGS_CONDITIONAL_NODE_PARAMS));
  FILE *in = fopen(path, "r");
  text = text_of(in);
  fclose(in);
  remove(path);
  assert_non_null(strstr(text, "|CONDITIONAL|type: cudaGraphCondTypeIf|size: 2|handle: 0x"));
  assert_non_null(strstr(text, "|default: 7|flags: 1"));
  size_t clusters = 0;
  for (const char *at = strstr(text, "subgraph cluster_"); at; at = strstr(at + 1, "subgraph cluster_")) clusters++;
  assert_int_equal(clusters, 3); /* the graph and its two bodies */
  free(text);

  FILE *saved = tmpfile();
  gcap_status st = gcap_graph_save(g, saved);
  if (st == GCAP_ERROR_NOT_SUPPORTED) { /* built without jansson */
    fclose(saved);
    gcap_graph_destroy(g);
    return;
  }
  assert_ok(st);
  text = text_of(saved);
  assert_non_null(strstr(text, "\"conditional_type\": \"if\""));
  rewind(saved);
  gcap_graph *loaded = NULL;
  assert_ok(gcap_graph_load(f->ctx, saved, &loaded));
  fclose(saved);
  gcap_node *n = NULL;
  size_t one = 1;
  assert_ok(gcap_graph_get_nodes(loaded, &n, &one));
  gcap_graph *got_bodies[2];
  gcap_conditional_node_params p = {.body_out = got_bodies};
  assert_ok(gcap_node_get_conditional_params(n, &p));
  assert_int_equal(p.type, GCAP_CONDITIONAL_IF);
  assert_int_equal(p.size, 2);
  assert_true(p.handle != h);
  assert_int_equal(gcap_graph_node_count(got_bodies[1]), 2);
  if (test_on_sim()) { /* the new handle starts at the saved default: 7 runs body 0, which is empty */
    gcap_exec *x = NULL;
    assert_ok(gcap_graph_instantiate(loaded, 0, &x));
    words_set(f, 0, 5, 0);
    run(f, x);
    assert_int_equal(word(f, 0), 0);
    gcap_exec_destroy(x);
  }
  free(text);
  gcap_graph_destroy(loaded);
  gcap_graph_destroy(g);
}

int main(void) {
  test_require_backend();
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_handle_arguments, setup, teardown),
      cmocka_unit_test_setup_teardown(test_if_and_else, setup, teardown),
      cmocka_unit_test_setup_teardown(test_while_loop, setup, teardown),
      cmocka_unit_test_setup_teardown(test_value_kept_without_assign_default, setup, teardown),
      cmocka_unit_test_setup_teardown(test_switch, setup, teardown),
      cmocka_unit_test_setup_teardown(test_nesting, setup, teardown),
      cmocka_unit_test_setup_teardown(test_conditional_inside_a_capture, setup, teardown),
      cmocka_unit_test_setup_teardown(test_restrictions, setup, teardown),
      cmocka_unit_test_setup_teardown(test_body_copies_need_page_locked_host_memory, setup, teardown),
      cmocka_unit_test_setup_teardown(test_unused_handle, setup, teardown),
      cmocka_unit_test_setup_teardown(test_bad_handle_in_a_kernel, setup, teardown),
      cmocka_unit_test_setup_teardown(test_races_see_bodies, setup, teardown),
      cmocka_unit_test_setup_teardown(test_dot_and_saved_graphs, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
