/* Graph nodes: every add_*_node, their checks, parameter getters and setters, node types. */
#define _POSIX_C_SOURCE 200809L

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "common.h"

#include <stdlib.h>
#include <string.h>

static int sentinel_storage[2];
#define SENTINEL_NODE ((gcap_node *)(void *)&sentinel_storage[0])

#define DEV_BYTES 4096
#define SMALL_BYTES 256

#define assert_fails(expr, expected, fn)                                                                               \
  do {                                                                                                                 \
    assert_status((expr), (expected));                                                                                 \
    assert_true(strlen(gcap_last_error_message()) > 0);                                                                \
    test_assert_message_contains(fn);                                                                                  \
  } while (0)

/* ---------------------------------------------------------------- kernels */

/* store(int32_t value, int32_t *dst): dst[global thread index] = value. */
static void store_sim(const gcap_sim_thread *t, void *const *args) {
  int32_t value;
  int32_t *dst;
  memcpy(&value, args[0], sizeof value);
  memcpy(&dst, args[1], sizeof dst);
  size_t idx = (size_t)t->block_idx.x * t->block_dim.x + t->thread_idx.x;
  dst[idx] = value;
}

static const size_t store_sizes[2] = {sizeof(int32_t), sizeof(void *)};

struct fixture {
  gcap_context *ctx, *other;
  gcap_module *module;
  gcap_kernel *store;        /* 2 parameters, with sim_fn */
  gcap_kernel *noargs;       /* 0 parameters, stub */
  gcap_kernel *other_kernel; /* of the other context */
  void *dev;                 /* DEV_BYTES of device memory */
  void *small;               /* SMALL_BYTES of device memory */
  void *host;                /* DEV_BYTES of page-locked host memory */
  void *other_dev;           /* device memory of the other context */
  gcap_event *event, *other_event;
  gcap_stream *stream;
  gcap_graph *g; /* a graph with one empty node `root` */
  gcap_node *root;
};

static void load_module(gcap_context *ctx, gcap_module **m) {
  gcap_kernel_def defs[2] = {
      {.name = "store", .sim_fn = store_sim, .num_params = 2, .param_sizes = store_sizes},
      {.name = "noargs", .sim_fn = NULL, .num_params = 0, .param_sizes = NULL},
  };
  gcap_module_desc desc = {.image = NULL, .image_size = 0, .kernels = defs, .num_kernels = 2};
  assert_ok(test_module_load(ctx, &desc, m));
}

static int setup(void **state) {
  struct fixture *fx = calloc(1, sizeof *fx);
  if (fx == NULL) return -1;
  *state = fx;
  fx->ctx = test_context_create();
  fx->other = test_context_create();
  load_module(fx->ctx, &fx->module);
  assert_ok(gcap_module_get_kernel(fx->module, "store", &fx->store));
  assert_ok(gcap_module_get_kernel(fx->module, "noargs", &fx->noargs));
  gcap_module *om = NULL;
  load_module(fx->other, &om);
  assert_ok(gcap_module_get_kernel(om, "store", &fx->other_kernel));
  assert_ok(gcap_mem_alloc(fx->ctx, DEV_BYTES, &fx->dev));
  assert_ok(gcap_mem_alloc(fx->ctx, SMALL_BYTES, &fx->small));
  assert_ok(gcap_host_alloc(fx->ctx, DEV_BYTES, &fx->host));
  assert_ok(gcap_mem_alloc(fx->other, DEV_BYTES, &fx->other_dev));
  assert_ok(gcap_event_create(fx->ctx, &fx->event));
  assert_ok(gcap_event_create(fx->other, &fx->other_event));
  assert_ok(gcap_stream_create(fx->ctx, &fx->stream));
  assert_ok(gcap_graph_create(fx->ctx, &fx->g));
  assert_ok(gcap_graph_add_empty_node(fx->g, NULL, 0, &fx->root));
  return 0;
}

/* The contexts free everything they own. */
static int teardown(void **state) {
  struct fixture *fx = *state;
  gcap_context_destroy(fx->ctx);
  gcap_context_destroy(fx->other);
  free(fx);
  return 0;
}

static void host_fn_a(void *user_data) { (void)user_data; }
static void host_fn_b(void *user_data) { (void)user_data; }

static int32_t kvalue = 42;
static void *kptr;
static void *kargs[2] = {&kvalue, &kptr};

static gcap_kernel_node_params kernel_params(struct fixture *fx) {
  kptr = fx->dev;
  gcap_kernel_node_params p = {.kernel = fx->store,
                               .grid = GCAP_DIM3(2, 1, 1),
                               .block = GCAP_DIM3(64, 1, 1),
                               .shared_mem_bytes = 0,
                               .args = kargs};
  return p;
}

static gcap_memcpy_node_params memcpy_params(struct fixture *fx) {
  gcap_memcpy_node_params p = {.dst = fx->dev, .src = fx->host, .bytes = 128, .kind = GCAP_MEMCPY_HOST_TO_DEVICE};
  return p;
}

static gcap_memset_node_params memset_params(struct fixture *fx) {
  gcap_memset_node_params p = {
      .dst = fx->dev, .value = 0x5a5a5a5a, .element_size = 4, .width = 32, .height = 1, .pitch = 0};
  return p;
}

/* ------------------------------------------------------------ every kind */

enum kind { K_KERNEL, K_MEMCPY, K_MEMSET, K_HOST, K_EMPTY, K_CHILD, K_RECORD, K_WAIT, K_COUNT };

static const char *const kind_fn[K_COUNT] = {
    "gcap_graph_add_kernel_node",       "gcap_graph_add_memcpy_node",     "gcap_graph_add_memset_node",
    "gcap_graph_add_host_node",         "gcap_graph_add_empty_node",      "gcap_graph_add_child_graph_node",
    "gcap_graph_add_event_record_node", "gcap_graph_add_event_wait_node",
};

static const gcap_node_type kind_type[K_COUNT] = {
    GCAP_NODE_KERNEL, GCAP_NODE_MEMCPY, GCAP_NODE_MEMSET,       GCAP_NODE_HOST,
    GCAP_NODE_EMPTY,  GCAP_NODE_GRAPH,  GCAP_NODE_EVENT_RECORD, GCAP_NODE_EVENT_WAIT,
};

static gcap_graph *child_template;

/* Made before any handle is destroyed in a test, so it cannot take a dead handle's address. */
static void make_child_template(struct fixture *fx) {
  child_template = NULL;
  assert_ok(gcap_graph_create(fx->ctx, &child_template));
  gcap_node *c = NULL;
  assert_ok(gcap_graph_add_empty_node(child_template, NULL, 0, &c));
}

/* Adds a node of `kind` with valid parameters. */
static gcap_status add_kind(struct fixture *fx, enum kind k, gcap_graph *g, gcap_node *const *deps, size_t n,
                            gcap_node **out) {
  switch (k) {
  case K_KERNEL: {
    gcap_kernel_node_params p = kernel_params(fx);
    return gcap_graph_add_kernel_node(g, deps, n, &p, out);
  }
  case K_MEMCPY: {
    gcap_memcpy_node_params p = memcpy_params(fx);
    return gcap_graph_add_memcpy_node(g, deps, n, &p, out);
  }
  case K_MEMSET: {
    gcap_memset_node_params p = memset_params(fx);
    return gcap_graph_add_memset_node(g, deps, n, &p, out);
  }
  case K_HOST: {
    gcap_host_node_params p = {.fn = host_fn_a, .user_data = fx};
    return gcap_graph_add_host_node(g, deps, n, &p, out);
  }
  case K_EMPTY: return gcap_graph_add_empty_node(g, deps, n, out);
  case K_CHILD: {
    assert_non_null(child_template);
    return gcap_graph_add_child_graph_node(g, deps, n, child_template, out);
  }
  case K_RECORD: return gcap_graph_add_event_record_node(g, deps, n, fx->event, out);
  case K_WAIT: return gcap_graph_add_event_wait_node(g, deps, n, fx->event, out);
  default: fail();
  }
  return GCAP_ERROR_BACKEND;
}

static void test_add_every_kind(void **state) {
  struct fixture *fx = *state;
  make_child_template(fx);
  gcap_node *nodes[K_COUNT];
  for (int k = 0; k < K_COUNT; k++) {
    gcap_node *out = SENTINEL_NODE;
    /* Each new node depends on root and on the previous one, in that order. */
    gcap_node *deps[2] = {fx->root, k > 0 ? nodes[k - 1] : NULL};
    assert_ok(add_kind(fx, (enum kind)k, fx->g, deps, k > 0 ? 2 : 1, &out));
    assert_string_equal(gcap_last_error_message(), "");
    assert_true(out != NULL && out != SENTINEL_NODE);
    nodes[k] = out;
    assert_int_equal(gcap_node_get_type(out), kind_type[k]);
    assert_int_equal(gcap_graph_node_count(fx->g), (size_t)k + 2);
    assert_int_equal(gcap_graph_edge_count(fx->g), (size_t)(2 * k + 1));
    gcap_node *got[2];
    size_t count = 2;
    assert_ok(gcap_node_get_dependencies(out, got, &count));
    assert_int_equal(count, k > 0 ? 2 : 1);
    assert_ptr_equal(got[0], fx->root);
    if (k > 0) assert_ptr_equal(got[1], nodes[k - 1]);
  }
  /* And as roots. */
  for (int k = 0; k < K_COUNT; k++) {
    gcap_node *out = NULL;
    assert_ok(add_kind(fx, (enum kind)k, fx->g, NULL, 0, &out));
    size_t count = 5;
    assert_ok(gcap_node_get_dependencies(out, NULL, &count));
    assert_int_equal(count, 0);
  }
  assert_int_equal(gcap_graph_node_count(fx->g), 1 + 2 * K_COUNT);
  size_t roots = 0;
  assert_ok(gcap_graph_get_root_nodes(fx->g, NULL, &roots));
  assert_int_equal(roots, 1 + K_COUNT);
  gcap_graph_destroy(child_template);
  child_template = NULL;
}

/* A failed add: the status, the message, *out NULL and the graph unchanged. */
static void expect_add_fails(struct fixture *fx, enum kind k, gcap_graph *g, gcap_node *const *deps, size_t n,
                             gcap_status expected) {
  size_t nodes = gcap_graph_node_count(g), edges = gcap_graph_edge_count(g);
  gcap_node *out = SENTINEL_NODE;
  assert_fails(add_kind(fx, k, g, deps, n, &out), expected, kind_fn[k]);
  assert_null(out);
  assert_int_equal(gcap_graph_node_count(g), nodes);
  assert_int_equal(gcap_graph_edge_count(g), edges);
}

static void test_add_common_bad_inputs(void **state) {
  struct fixture *fx = *state;
  make_child_template(fx);
  gcap_graph *h = NULL;
  assert_ok(gcap_graph_create(fx->ctx, &h));
  gcap_node *x = NULL;
  assert_ok(gcap_graph_add_empty_node(h, NULL, 0, &x));
  gcap_graph *og = NULL;
  assert_ok(gcap_graph_create(fx->other, &og));
  gcap_node *ox = NULL;
  assert_ok(gcap_graph_add_empty_node(og, NULL, 0, &ox));
  gcap_node *dead = NULL;
  assert_ok(gcap_graph_add_empty_node(fx->g, &fx->root, 1, &dead));
  assert_ok(gcap_graph_destroy_node(dead));
  gcap_graph *dead_graph = NULL;
  assert_ok(gcap_graph_create(fx->ctx, &dead_graph));
  gcap_graph_destroy(dead_graph);

  for (int ki = 0; ki < K_COUNT; ki++) {
    enum kind k = (enum kind)ki;
    expect_add_fails(fx, k, NULL, NULL, 0, GCAP_ERROR_INVALID_HANDLE);
    expect_add_fails(fx, k, dead_graph, NULL, 0, GCAP_ERROR_INVALID_HANDLE);
    assert_fails(add_kind(fx, k, fx->g, NULL, 0, NULL), GCAP_ERROR_INVALID_VALUE, kind_fn[k]);
    assert_fails(add_kind(fx, k, NULL, NULL, 0, NULL), GCAP_ERROR_INVALID_HANDLE, kind_fn[k]);
    expect_add_fails(fx, k, fx->g, NULL, 2, GCAP_ERROR_INVALID_VALUE);
    gcap_node *dup[2] = {fx->root, fx->root};
    expect_add_fails(fx, k, fx->g, dup, 2, GCAP_ERROR_INVALID_VALUE);
    expect_add_fails(fx, k, fx->g, &x, 1, GCAP_ERROR_INVALID_VALUE);
    gcap_node *mixed[2] = {fx->root, x};
    expect_add_fails(fx, k, fx->g, mixed, 2, GCAP_ERROR_INVALID_VALUE);
    expect_add_fails(fx, k, fx->g, &dead, 1, GCAP_ERROR_INVALID_HANDLE);
    gcap_node *with_null[2] = {fx->root, NULL};
    expect_add_fails(fx, k, fx->g, with_null, 2, GCAP_ERROR_INVALID_HANDLE);
    expect_add_fails(fx, k, fx->g, &ox, 1, GCAP_ERROR_INVALID_HANDLE); /* another context */
    /* Handles first: a destroyed node after a foreign-graph one is still INVALID_HANDLE. */
    gcap_node *order[2] = {x, dead};
    expect_add_fails(fx, k, fx->g, order, 2, GCAP_ERROR_INVALID_HANDLE);
    /* A NULL out and a bad dep handle: the handle wins. */
    assert_fails(add_kind(fx, k, fx->g, &dead, 1, NULL), GCAP_ERROR_INVALID_HANDLE, kind_fn[k]);
  }
  assert_int_equal(gcap_graph_node_count(fx->g), 1);
  assert_int_equal(gcap_graph_edge_count(fx->g), 0);
  assert_int_equal(gcap_graph_node_count(h), 1);
  gcap_graph_destroy(child_template);
  child_template = NULL;
  gcap_graph_destroy(h);
  gcap_graph_destroy(og);
}

static void test_add_null_params(void **state) {
  struct fixture *fx = *state;
  gcap_node *out = SENTINEL_NODE;
  assert_fails(gcap_graph_add_kernel_node(fx->g, NULL, 0, NULL, &out), GCAP_ERROR_INVALID_VALUE,
               "gcap_graph_add_kernel_node");
  assert_null(out);
  out = SENTINEL_NODE;
  assert_fails(gcap_graph_add_memcpy_node(fx->g, NULL, 0, NULL, &out), GCAP_ERROR_INVALID_VALUE,
               "gcap_graph_add_memcpy_node");
  assert_null(out);
  out = SENTINEL_NODE;
  assert_fails(gcap_graph_add_memset_node(fx->g, NULL, 0, NULL, &out), GCAP_ERROR_INVALID_VALUE,
               "gcap_graph_add_memset_node");
  assert_null(out);
  out = SENTINEL_NODE;
  assert_fails(gcap_graph_add_host_node(fx->g, NULL, 0, NULL, &out), GCAP_ERROR_INVALID_VALUE,
               "gcap_graph_add_host_node");
  assert_null(out);
  /* The graph handle is checked before the params. */
  assert_fails(gcap_graph_add_kernel_node(NULL, NULL, 0, NULL, &out), GCAP_ERROR_INVALID_HANDLE,
               "gcap_graph_add_kernel_node");
  assert_fails(gcap_graph_add_memcpy_node(NULL, NULL, 0, NULL, NULL), GCAP_ERROR_INVALID_HANDLE,
               "gcap_graph_add_memcpy_node");
  /* A bad dep handle before NULL params. */
  gcap_node *null_dep = NULL;
  assert_fails(gcap_graph_add_memset_node(fx->g, &null_dep, 1, NULL, &out), GCAP_ERROR_INVALID_HANDLE,
               "gcap_graph_add_memset_node");
  assert_int_equal(gcap_graph_node_count(fx->g), 1);
}

/* ================================================================ kernel */

static void expect_kernel_fails(struct fixture *fx, const gcap_kernel_node_params *p, gcap_status expected) {
  gcap_node *out = SENTINEL_NODE;
  assert_fails(gcap_graph_add_kernel_node(fx->g, &fx->root, 1, p, &out), expected, "gcap_graph_add_kernel_node");
  assert_null(out);
  assert_int_equal(gcap_graph_node_count(fx->g), 1);
  assert_int_equal(gcap_graph_edge_count(fx->g), 0);
}

static void test_kernel_node_bad_kernel(void **state) {
  struct fixture *fx = *state;
  gcap_kernel_node_params p = kernel_params(fx);
  p.kernel = NULL;
  expect_kernel_fails(fx, &p, GCAP_ERROR_INVALID_HANDLE);
  p.kernel = fx->other_kernel;
  expect_kernel_fails(fx, &p, GCAP_ERROR_INVALID_HANDLE);

  gcap_module *m2 = NULL;
  load_module(fx->ctx, &m2);
  gcap_kernel *k2 = NULL;
  assert_ok(gcap_module_get_kernel(m2, "store", &k2));
  assert_ok(gcap_module_unload(m2));
  p.kernel = k2;
  expect_kernel_fails(fx, &p, GCAP_ERROR_INVALID_HANDLE);

  /* The kernel handle comes before the other arguments (bad grid, NULL out). */
  p.kernel = NULL;
  p.grid = GCAP_DIM3(0, 0, 0);
  expect_kernel_fails(fx, &p, GCAP_ERROR_INVALID_HANDLE);
  assert_fails(gcap_graph_add_kernel_node(fx->g, NULL, 0, &p, NULL), GCAP_ERROR_INVALID_HANDLE,
               "gcap_graph_add_kernel_node");
}

static void test_kernel_node_bad_configs(void **state) {
  struct fixture *fx = *state;
  static const struct {
    gcap_dim3 grid, block;
    uint32_t shared;
  } bad[] = {
      {{0, 1, 1}, {1, 1, 1}, 0},     {{1, 0, 1}, {1, 1, 1}, 0},     {{1, 1, 0}, {1, 1, 1}, 0},
      {{1, 1, 1}, {0, 1, 1}, 0},     {{1, 1, 1}, {1, 0, 1}, 0},     {{1, 1, 1}, {1, 1, 0}, 0},
      {{1, 1, 1}, {1025, 1, 1}, 0},  {{1, 1, 1}, {1, 1025, 1}, 0},  {{1, 1, 1}, {1, 1, 65}, 0},
      {{1, 1, 1}, {32, 32, 2}, 0},   {{1, 1, 1}, {512, 3, 1}, 0},   {{1, 65536, 1}, {1, 1, 1}, 0},
      {{1, 1, 65536}, {1, 1, 1}, 0}, {{1, 1, 1}, {1, 1, 1}, 49153}, {{1, 1, 1}, {1, 1, 1}, UINT32_MAX},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    gcap_kernel_node_params p = kernel_params(fx);
    p.grid = bad[i].grid;
    p.block = bad[i].block;
    p.shared_mem_bytes = bad[i].shared;
    expect_kernel_fails(fx, &p, GCAP_ERROR_INVALID_VALUE);
  }
  /* Arguments: NULL for a kernel with parameters, or one NULL entry. */
  gcap_kernel_node_params p = kernel_params(fx);
  p.args = NULL;
  expect_kernel_fails(fx, &p, GCAP_ERROR_INVALID_VALUE);
  void *half[2] = {&kvalue, NULL};
  p.args = half;
  expect_kernel_fails(fx, &p, GCAP_ERROR_INVALID_VALUE);
  void *first_null[2] = {NULL, &kptr};
  p.args = first_null;
  expect_kernel_fails(fx, &p, GCAP_ERROR_INVALID_VALUE);

  /* The limits themselves are fine. */
  static const struct {
    gcap_dim3 grid, block;
    uint32_t shared;
  } good[] = {
      {{1, 1, 1}, {1024, 1, 1}, 0}, {{1, 1, 1}, {1, 1024, 1}, 0},      {{1, 1, 1}, {1, 1, 64}, 0},
      {{1, 1, 1}, {16, 16, 4}, 0},  {{1, 65535, 65535}, {1, 1, 1}, 0}, {{1, 1, 1}, {1, 1, 1}, 49152},
  };
  for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
    gcap_kernel_node_params q = kernel_params(fx);
    q.grid = good[i].grid;
    q.block = good[i].block;
    q.shared_mem_bytes = good[i].shared;
    gcap_node *out = NULL;
    assert_ok(gcap_graph_add_kernel_node(fx->g, NULL, 0, &q, &out));
    gcap_kernel_node_params got;
    assert_ok(gcap_node_get_kernel_params(out, &got));
    assert_memory_equal(&got.grid, &good[i].grid, sizeof got.grid);
    assert_memory_equal(&got.block, &good[i].block, sizeof got.block);
    assert_int_equal(got.shared_mem_bytes, good[i].shared);
  }
  assert_int_equal(gcap_graph_node_count(fx->g), 7);
}

static void test_kernel_node_copies_args(void **state) {
  struct fixture *fx = *state;
  int32_t value = 1234;
  void *ptr = fx->dev;
  void *args[2] = {&value, &ptr};
  gcap_kernel_node_params p = {.kernel = fx->store,
                               .grid = GCAP_DIM3(3, 2, 1),
                               .block = GCAP_DIM3(8, 4, 2),
                               .shared_mem_bytes = 256,
                               .args = args};
  gcap_node *n = NULL;
  assert_ok(gcap_graph_add_kernel_node(fx->g, &fx->root, 1, &p, &n));
  /* Change everything the caller owns. */
  value = -1;
  ptr = NULL;
  args[0] = NULL;
  args[1] = NULL;
  memset(&p, 0, sizeof p);

  gcap_kernel_node_params got;
  memset(&got, 0, sizeof got);
  assert_ok(gcap_node_get_kernel_params(n, &got));
  assert_string_equal(gcap_last_error_message(), "");
  assert_ptr_equal(got.kernel, fx->store);
  assert_int_equal(got.grid.x, 3);
  assert_int_equal(got.grid.y, 2);
  assert_int_equal(got.grid.z, 1);
  assert_int_equal(got.block.x, 8);
  assert_int_equal(got.block.y, 4);
  assert_int_equal(got.block.z, 2);
  assert_int_equal(got.shared_mem_bytes, 256);
  assert_non_null(got.args);
  assert_true(got.args != args);
  assert_non_null(got.args[0]);
  assert_non_null(got.args[1]);
  assert_true(got.args[0] != (void *)&value);
  assert_true(got.args[1] != (void *)&ptr);
  int32_t v;
  void *pv;
  memcpy(&v, got.args[0], sizeof v);
  memcpy(&pv, got.args[1], sizeof pv);
  assert_int_equal(v, 1234);
  assert_ptr_equal(pv, fx->dev);

  /* The same borrowed copy on every call. */
  gcap_kernel_node_params again;
  assert_ok(gcap_node_get_kernel_params(n, &again));
  assert_ptr_equal(again.args, got.args);
}

static void test_kernel_node_copied_args_run(void **state) {
  struct fixture *fx = *state;
  test_require_sim(); /* checks what store_sim wrote */
  int32_t value = 77;
  void *ptr = fx->dev;
  void *args[2] = {&value, &ptr};
  gcap_kernel_node_params p = {.kernel = fx->store,
                               .grid = GCAP_DIM3(2, 1, 1),
                               .block = GCAP_DIM3(16, 1, 1),
                               .shared_mem_bytes = 0,
                               .args = args};
  gcap_node *n = NULL;
  assert_ok(gcap_graph_add_kernel_node(fx->g, &fx->root, 1, &p, &n));
  value = 5;
  ptr = fx->small;
  gcap_exec *x = NULL;
  assert_ok(gcap_graph_instantiate(fx->g, 0, &x));
  assert_ok(gcap_memset_async(fx->stream, fx->dev, 0, DEV_BYTES));
  assert_ok(gcap_memset_async(fx->stream, fx->small, 0, SMALL_BYTES));
  assert_ok(gcap_exec_launch(x, fx->stream));
  assert_ok(gcap_stream_synchronize(fx->stream));
  int32_t out[40];
  assert_ok(gcap_memcpy(fx->ctx, out, fx->dev, sizeof out, GCAP_MEMCPY_DEVICE_TO_HOST));
  for (size_t i = 0; i < 32; i++) assert_int_equal(out[i], 77);
  for (size_t i = 32; i < 40; i++) assert_int_equal(out[i], 0);
  assert_ok(gcap_memcpy(fx->ctx, out, fx->small, sizeof out, GCAP_MEMCPY_DEVICE_TO_HOST));
  for (size_t i = 0; i < 40; i++) assert_int_equal(out[i], 0);
  gcap_exec_destroy(x);
}

static void test_kernel_node_without_params(void **state) {
  struct fixture *fx = *state;
  gcap_kernel_node_params p = {.kernel = fx->noargs,
                               .grid = GCAP_DIM3(1, 1, 1),
                               .block = GCAP_DIM3(1, 1, 1),
                               .shared_mem_bytes = 0,
                               .args = NULL};
  gcap_node *n = NULL;
  assert_ok(gcap_graph_add_kernel_node(fx->g, NULL, 0, &p, &n));
  gcap_kernel_node_params got;
  assert_ok(gcap_node_get_kernel_params(n, &got));
  assert_ptr_equal(got.kernel, fx->noargs);
  assert_int_equal(gcap_node_get_type(n), GCAP_NODE_KERNEL);

  /* An unloaded module's kernel keeps working in a node that already uses it. */
  gcap_module *m2 = NULL;
  load_module(fx->ctx, &m2);
  gcap_kernel *k2 = NULL;
  assert_ok(gcap_module_get_kernel(m2, "noargs", &k2));
  p.kernel = k2;
  gcap_node *n2 = NULL;
  assert_ok(gcap_graph_add_kernel_node(fx->g, &n, 1, &p, &n2));
  assert_ok(gcap_module_unload(m2));
  assert_ok(gcap_node_get_kernel_params(n2, &got));
  assert_ptr_equal(got.kernel, k2);
  gcap_exec *x = NULL;
  assert_ok(gcap_graph_instantiate(fx->g, 0, &x));
  assert_ok(gcap_exec_launch(x, fx->stream));
  assert_ok(gcap_stream_synchronize(fx->stream));
  gcap_exec_destroy(x);
}

/* ================================================================ memcpy */

static void expect_memcpy_ok(struct fixture *fx, void *dst, const void *src, size_t bytes, gcap_memcpy_kind kind) {
  gcap_memcpy_node_params p = {.dst = dst, .src = src, .bytes = bytes, .kind = kind};
  gcap_node *n = NULL;
  assert_ok(gcap_graph_add_memcpy_node(fx->g, NULL, 0, &p, &n));
  gcap_memcpy_node_params got;
  memset(&got, 0, sizeof got);
  assert_ok(gcap_node_get_memcpy_params(n, &got));
  assert_ptr_equal(got.dst, dst);
  assert_ptr_equal(got.src, src);
  assert_int_equal(got.bytes, bytes);
  assert_int_equal(got.kind, kind);
  assert_int_equal(gcap_node_get_type(n), GCAP_NODE_MEMCPY);
}

static void expect_memcpy_fails(struct fixture *fx, void *dst, const void *src, size_t bytes, gcap_memcpy_kind kind) {
  gcap_memcpy_node_params p = {.dst = dst, .src = src, .bytes = bytes, .kind = kind};
  size_t before = gcap_graph_node_count(fx->g);
  gcap_node *out = SENTINEL_NODE;
  assert_fails(gcap_graph_add_memcpy_node(fx->g, &fx->root, 1, &p, &out), GCAP_ERROR_INVALID_VALUE,
               "gcap_graph_add_memcpy_node");
  assert_null(out);
  assert_int_equal(gcap_graph_node_count(fx->g), before);
}

static void test_memcpy_node_kinds(void **state) {
  struct fixture *fx = *state;
  char *d = fx->dev, *s = fx->small, *h = fx->host;
  char stack[64];
  char *heap = malloc(64);
  assert_non_null(heap);
  expect_memcpy_ok(fx, d, h, 100, GCAP_MEMCPY_HOST_TO_DEVICE);
  expect_memcpy_ok(fx, d, stack, sizeof stack, GCAP_MEMCPY_HOST_TO_DEVICE);
  expect_memcpy_ok(fx, h, d, 100, GCAP_MEMCPY_DEVICE_TO_HOST);
  expect_memcpy_ok(fx, heap, d + 8, 64, GCAP_MEMCPY_DEVICE_TO_HOST);
  expect_memcpy_ok(fx, d, s, SMALL_BYTES, GCAP_MEMCPY_DEVICE_TO_DEVICE);
  expect_memcpy_ok(fx, d + 1, d + 2048, 2048 - 1, GCAP_MEMCPY_DEVICE_TO_DEVICE);
  expect_memcpy_ok(fx, h, heap, 64, GCAP_MEMCPY_HOST_TO_HOST);
  expect_memcpy_ok(fx, stack, heap, 64, GCAP_MEMCPY_HOST_TO_HOST);
  expect_memcpy_ok(fx, d, h, 1, GCAP_MEMCPY_DEFAULT);
  expect_memcpy_ok(fx, h, d, 1, GCAP_MEMCPY_DEFAULT);
  expect_memcpy_ok(fx, d, s, 1, GCAP_MEMCPY_DEFAULT);
  expect_memcpy_ok(fx, heap, h, 1, GCAP_MEMCPY_DEFAULT);
  /* Exactly up to the end of the allocation. */
  expect_memcpy_ok(fx, d + DEV_BYTES - 16, h, 16, GCAP_MEMCPY_HOST_TO_DEVICE);
  expect_memcpy_ok(fx, h, s + SMALL_BYTES - 1, 1, GCAP_MEMCPY_DEFAULT);
  free(heap);
}

static void test_memcpy_node_bad(void **state) {
  struct fixture *fx = *state;
  char *d = fx->dev, *s = fx->small, *h = fx->host;
  char stack[64];

  /* Zero bytes, NULL pointers, unknown kinds. */
  expect_memcpy_fails(fx, d, h, 0, GCAP_MEMCPY_HOST_TO_DEVICE);
  expect_memcpy_fails(fx, d, h, 0, GCAP_MEMCPY_DEFAULT);
  expect_memcpy_fails(fx, NULL, h, 16, GCAP_MEMCPY_HOST_TO_HOST);
  expect_memcpy_fails(fx, h, NULL, 16, GCAP_MEMCPY_HOST_TO_HOST);
  expect_memcpy_fails(fx, d, h, 16, (gcap_memcpy_kind)5);
  expect_memcpy_fails(fx, d, h, 16, (gcap_memcpy_kind)99);
  expect_memcpy_fails(fx, d, h, 16, (gcap_memcpy_kind)-1);

  /* Ranges that start inside an allocation and run past its end. */
  expect_memcpy_fails(fx, d + DEV_BYTES - 16, h, 17, GCAP_MEMCPY_HOST_TO_DEVICE);
  expect_memcpy_fails(fx, h, s + 1, SMALL_BYTES, GCAP_MEMCPY_DEVICE_TO_HOST);
  expect_memcpy_fails(fx, d, s, SMALL_BYTES + 1, GCAP_MEMCPY_DEVICE_TO_DEVICE);
  expect_memcpy_fails(fx, s, d, SMALL_BYTES + 1, GCAP_MEMCPY_DEVICE_TO_DEVICE);
  expect_memcpy_fails(fx, d + DEV_BYTES - 1, h, 2, GCAP_MEMCPY_DEFAULT);
  expect_memcpy_fails(fx, h, d, DEV_BYTES + 1, GCAP_MEMCPY_DEFAULT);

  /* Kinds that do not match the pointers. */
  expect_memcpy_fails(fx, h, stack, 16, GCAP_MEMCPY_HOST_TO_DEVICE); /* dst host */
  expect_memcpy_fails(fx, d, s, 16, GCAP_MEMCPY_HOST_TO_DEVICE);     /* src device */
  expect_memcpy_fails(fx, d, s, 16, GCAP_MEMCPY_DEVICE_TO_HOST);     /* dst device */
  expect_memcpy_fails(fx, h, d, 16, GCAP_MEMCPY_DEVICE_TO_DEVICE);   /* dst host */
  expect_memcpy_fails(fx, d, h, 16, GCAP_MEMCPY_HOST_TO_HOST);
  expect_memcpy_fails(fx, h, d, 16, GCAP_MEMCPY_HOST_TO_HOST);

  /*
   * A device side in no allocation of this context (stack memory, another context's memory, freed
   * memory): the simulator refuses it; CUDA leaves pointers gcap does not know to the driver (eager.md#memory).
   */
  void *gone = NULL;
  assert_ok(gcap_mem_alloc(fx->ctx, 64, &gone));
  assert_ok(gcap_mem_free(fx->ctx, gone));
  if (test_on_sim()) {
    expect_memcpy_fails(fx, h, stack, 16, GCAP_MEMCPY_DEVICE_TO_HOST);   /* src host */
    expect_memcpy_fails(fx, d, stack, 16, GCAP_MEMCPY_DEVICE_TO_DEVICE); /* src host */
    expect_memcpy_fails(fx, fx->other_dev, h, 16, GCAP_MEMCPY_HOST_TO_DEVICE);
    expect_memcpy_fails(fx, d, fx->other_dev, 16, GCAP_MEMCPY_DEVICE_TO_DEVICE);
    expect_memcpy_fails(fx, h, fx->other_dev, 16, GCAP_MEMCPY_DEVICE_TO_HOST);
    expect_memcpy_fails(fx, gone, h, 16, GCAP_MEMCPY_HOST_TO_DEVICE);
    expect_memcpy_fails(fx, h, gone, 16, GCAP_MEMCPY_DEVICE_TO_HOST);
  }

  /* NULL params. */
  gcap_node *out = SENTINEL_NODE;
  assert_fails(gcap_graph_add_memcpy_node(fx->g, NULL, 0, NULL, &out), GCAP_ERROR_INVALID_VALUE,
               "gcap_graph_add_memcpy_node");
  assert_null(out);
  assert_int_equal(gcap_graph_node_count(fx->g), 1);
}

/* ================================================================ memset */

static gcap_memset_node_params ms(void *dst, uint32_t value, unsigned es, size_t w, size_t h, size_t pitch) {
  gcap_memset_node_params p = {.dst = dst, .value = value, .element_size = es, .width = w, .height = h, .pitch = pitch};
  return p;
}

static void expect_memset_ok(struct fixture *fx, gcap_memset_node_params p) {
  gcap_node *n = NULL;
  assert_ok(gcap_graph_add_memset_node(fx->g, NULL, 0, &p, &n));
  gcap_memset_node_params got;
  memset(&got, 0, sizeof got);
  assert_ok(gcap_node_get_memset_params(n, &got));
  assert_ptr_equal(got.dst, p.dst);
  assert_int_equal(got.value, p.value);
  assert_int_equal(got.element_size, p.element_size);
  assert_int_equal(got.width, p.width);
  assert_int_equal(got.height, p.height);
  if (p.height > 1) assert_int_equal(got.pitch, p.pitch);
  assert_int_equal(gcap_node_get_type(n), GCAP_NODE_MEMSET);
}

static void expect_memset_fails(struct fixture *fx, gcap_memset_node_params p) {
  size_t before = gcap_graph_node_count(fx->g);
  gcap_node *out = SENTINEL_NODE;
  assert_fails(gcap_graph_add_memset_node(fx->g, &fx->root, 1, &p, &out), GCAP_ERROR_INVALID_VALUE,
               "gcap_graph_add_memset_node");
  assert_null(out);
  assert_int_equal(gcap_graph_node_count(fx->g), before);
  assert_int_equal(gcap_graph_edge_count(fx->g), 0);
}

static void test_memset_node_valid(void **state) {
  struct fixture *fx = *state;
  char *d = fx->dev;
  expect_memset_ok(fx, ms(d, 0xab, 1, DEV_BYTES, 1, 0));
  expect_memset_ok(fx, ms(d + 1, 0xab, 1, DEV_BYTES - 1, 1, 0));
  expect_memset_ok(fx, ms(d + 2, 0xbeef, 2, 10, 1, 0));
  expect_memset_ok(fx, ms(d, 0xdeadbeef, 4, DEV_BYTES / 4, 1, 0));
  expect_memset_ok(fx, ms(d + 4, 0x1234, 4, 16, 8, 128));
  /* 2-D exactly filling the allocation: pitch*(h-1) + w*es == DEV_BYTES. */
  expect_memset_ok(fx, ms(d, 1, 1, 512, 8, 512));
  expect_memset_ok(fx, ms(d + 64, 1, 4, 16, 8, 504)); /* 504*7 + 64 + 64 = 3656 */
  /* pitch == width * element_size is allowed; pitch is ignored for one row. */
  expect_memset_ok(fx, ms(d, 2, 2, 32, 4, 64));
  expect_memset_ok(fx, ms(d, 2, 2, 32, 1, 0));
  expect_memset_ok(fx, ms(d, 2, 2, 32, 1, 7));
}

static void test_memset_node_bad(void **state) {
  struct fixture *fx = *state;
  char *d = fx->dev;
  char stack[64];
  /* Element sizes. */
  expect_memset_fails(fx, ms(d, 0, 0, 16, 1, 0));
  expect_memset_fails(fx, ms(d, 0, 3, 16, 1, 0));
  expect_memset_fails(fx, ms(d, 0, 5, 16, 1, 0));
  expect_memset_fails(fx, ms(d, 0, 8, 16, 1, 0));
  /* Zero width or height. */
  expect_memset_fails(fx, ms(d, 0, 1, 0, 1, 0));
  expect_memset_fails(fx, ms(d, 0, 4, 0, 4, 64));
  expect_memset_fails(fx, ms(d, 0, 1, 16, 0, 16));
  /* Pitch too small for more than one row. */
  expect_memset_fails(fx, ms(d, 0, 4, 16, 2, 63));
  expect_memset_fails(fx, ms(d, 0, 1, 16, 2, 0));
  expect_memset_fails(fx, ms(d, 0, 2, 16, 3, 31));
  /* Ranges outside the allocation. */
  expect_memset_fails(fx, ms(d, 0, 1, DEV_BYTES + 1, 1, 0));
  expect_memset_fails(fx, ms(d + DEV_BYTES - 8, 0, 4, 3, 1, 0));
  expect_memset_fails(fx, ms(d, 0, 1, 512, 9, 512));     /* 4608 bytes */
  expect_memset_fails(fx, ms(d, 0, 4, 16, 8, 600));      /* 600*7 + 64 */
  expect_memset_fails(fx, ms(d + 1, 0, 1, 512, 8, 512)); /* one past */
  expect_memset_fails(fx, ms(fx->small, 0, 4, 64, 2, 256));
  /* Not device memory (stack and another context's memory: only the simulator knows: eager.md#memory). */
  expect_memset_fails(fx, ms(fx->host, 0, 1, 16, 1, 0));
  expect_memset_fails(fx, ms(NULL, 0, 1, 16, 1, 0));
  if (test_on_sim()) {
    expect_memset_fails(fx, ms(stack, 0, 1, 16, 1, 0));
    expect_memset_fails(fx, ms(fx->other_dev, 0, 1, 16, 1, 0));
  }
  /* Misaligned for the element size. */
  expect_memset_fails(fx, ms(d + 1, 0, 2, 16, 1, 0));
  expect_memset_fails(fx, ms(d + 1, 0, 4, 16, 1, 0));
  expect_memset_fails(fx, ms(d + 2, 0, 4, 16, 1, 0));
  expect_memset_fails(fx, ms(d + 3, 0, 4, 16, 1, 0));
}

/* ============================================================ host node */

static void test_host_node(void **state) {
  struct fixture *fx = *state;
  gcap_host_node_params p = {.fn = NULL, .user_data = fx};
  gcap_node *out = SENTINEL_NODE;
  assert_fails(gcap_graph_add_host_node(fx->g, &fx->root, 1, &p, &out), GCAP_ERROR_INVALID_VALUE,
               "gcap_graph_add_host_node");
  assert_null(out);
  assert_int_equal(gcap_graph_node_count(fx->g), 1);

  p.fn = host_fn_a;
  p.user_data = NULL; /* allowed */
  assert_ok(gcap_graph_add_host_node(fx->g, &fx->root, 1, &p, &out));
  gcap_host_node_params got = {.fn = host_fn_b, .user_data = fx};
  assert_ok(gcap_node_get_host_params(out, &got));
  assert_true(got.fn == host_fn_a);
  assert_null(got.user_data);
  assert_int_equal(gcap_node_get_type(out), GCAP_NODE_HOST);
}

/* =========================================================== event nodes */

static void test_event_nodes(void **state) {
  struct fixture *fx = *state;
  gcap_event *dead = NULL;
  assert_ok(gcap_event_create(fx->ctx, &dead));
  assert_ok(gcap_event_destroy(dead));
  gcap_event *bad[3] = {NULL, dead, fx->other_event};
  for (size_t i = 0; i < 3; i++) {
    gcap_node *out = SENTINEL_NODE;
    assert_fails(gcap_graph_add_event_record_node(fx->g, &fx->root, 1, bad[i], &out), GCAP_ERROR_INVALID_HANDLE,
                 "gcap_graph_add_event_record_node");
    assert_null(out);
    out = SENTINEL_NODE;
    assert_fails(gcap_graph_add_event_wait_node(fx->g, &fx->root, 1, bad[i], &out), GCAP_ERROR_INVALID_HANDLE,
                 "gcap_graph_add_event_wait_node");
    assert_null(out);
    /* The event handle is checked before the output. */
    assert_fails(gcap_graph_add_event_wait_node(fx->g, NULL, 0, bad[i], NULL), GCAP_ERROR_INVALID_HANDLE,
                 "gcap_graph_add_event_wait_node");
  }
  assert_int_equal(gcap_graph_node_count(fx->g), 1);
  assert_int_equal(gcap_graph_edge_count(fx->g), 0);

  gcap_node *rec = NULL, *wait = NULL;
  assert_ok(gcap_graph_add_event_record_node(fx->g, &fx->root, 1, fx->event, &rec));
  assert_ok(gcap_graph_add_event_wait_node(fx->g, &rec, 1, fx->event, &wait));
  assert_int_equal(gcap_node_get_type(rec), GCAP_NODE_EVENT_RECORD);
  assert_int_equal(gcap_node_get_type(wait), GCAP_NODE_EVENT_WAIT);
  gcap_event *e = NULL;
  assert_ok(gcap_node_get_event(rec, &e));
  assert_ptr_equal(e, fx->event);
  assert_string_equal(gcap_last_error_message(), "");
  e = NULL;
  assert_ok(gcap_node_get_event(wait, &e));
  assert_ptr_equal(e, fx->event);

  e = (gcap_event *)(void *)&sentinel_storage[1];
  assert_fails(gcap_node_get_event(fx->root, &e), GCAP_ERROR_INVALID_VALUE, "gcap_node_get_event");
  assert_null(e);
  assert_fails(gcap_node_get_event(rec, NULL), GCAP_ERROR_INVALID_VALUE, "gcap_node_get_event");
  assert_fails(gcap_node_get_event(NULL, &e), GCAP_ERROR_INVALID_HANDLE, "gcap_node_get_event");
}

static void test_destroyed_event_keeps_nodes_working(void **state) {
  struct fixture *fx = *state;
  gcap_event *e = NULL;
  assert_ok(gcap_event_create(fx->ctx, &e));
  gcap_node *rec = NULL, *wait = NULL, *fill = NULL, *copy = NULL;
  assert_ok(gcap_graph_add_event_record_node(fx->g, &fx->root, 1, e, &rec));
  assert_ok(gcap_graph_add_event_wait_node(fx->g, &rec, 1, e, &wait));
  gcap_memset_node_params mp = ms(fx->dev, 0x3c, 1, 64, 1, 0);
  assert_ok(gcap_graph_add_memset_node(fx->g, &wait, 1, &mp, &fill));
  unsigned char out[64];
  memset(out, 0, sizeof out);
  gcap_memcpy_node_params cp = {.dst = out, .src = fx->dev, .bytes = sizeof out, .kind = GCAP_MEMCPY_DEVICE_TO_HOST};
  assert_ok(gcap_graph_add_memcpy_node(fx->g, &fill, 1, &cp, &copy));

  assert_ok(gcap_event_destroy(e));
  gcap_event *got = NULL;
  assert_ok(gcap_node_get_event(rec, &got));
  assert_ptr_equal(got, e);
  got = NULL;
  assert_ok(gcap_node_get_event(wait, &got));
  assert_ptr_equal(got, e);
  /* The user's handle is gone. */
  assert_fails(gcap_event_query(e), GCAP_ERROR_INVALID_HANDLE, "gcap_event_query");

  gcap_exec *x = NULL;
  assert_ok(gcap_graph_instantiate(fx->g, 0, &x));
  assert_ok(gcap_exec_launch(x, fx->stream));
  assert_ok(gcap_stream_synchronize(fx->stream));
  for (size_t i = 0; i < sizeof out; i++) assert_int_equal(out[i], 0x3c);

  /* A clone of the graph still refers to the event, and the graph can go first. */
  gcap_graph *cl = NULL;
  assert_ok(gcap_graph_clone(fx->g, &cl));
  gcap_graph_destroy(fx->g);
  fx->g = NULL;
  assert_ok(gcap_exec_launch(x, fx->stream));
  assert_ok(gcap_stream_synchronize(fx->stream));
  gcap_exec_destroy(x);
  x = NULL;
  assert_ok(gcap_graph_instantiate(cl, 0, &x));
  assert_ok(gcap_exec_launch(x, fx->stream));
  assert_ok(gcap_stream_synchronize(fx->stream));
  gcap_exec_destroy(x);
  gcap_graph_destroy(cl);
}

/* ================================================= getters on wrong types */

static void test_getters_on_wrong_types(void **state) {
  struct fixture *fx = *state;
  make_child_template(fx);
  gcap_node *nodes[K_COUNT];
  for (int k = 0; k < K_COUNT; k++) assert_ok(add_kind(fx, (enum kind)k, fx->g, NULL, 0, &nodes[k]));

  for (int k = 0; k < K_COUNT; k++) {
    gcap_node *n = nodes[k];
    unsigned char pattern[sizeof(gcap_kernel_node_params)];
    memset(pattern, 0xA5, sizeof pattern);

    gcap_kernel_node_params kp;
    memset(&kp, 0xA5, sizeof kp);
    gcap_status st = gcap_node_get_kernel_params(n, &kp);
    if (k == K_KERNEL) {
      assert_ok(st);
    } else {
      assert_status(st, GCAP_ERROR_INVALID_VALUE);
      test_assert_message_contains("gcap_node_get_kernel_params");
      assert_memory_equal(&kp, pattern, sizeof kp);
    }
    gcap_memcpy_node_params mc;
    memset(&mc, 0xA5, sizeof mc);
    st = gcap_node_get_memcpy_params(n, &mc);
    if (k == K_MEMCPY) {
      assert_ok(st);
    } else {
      assert_status(st, GCAP_ERROR_INVALID_VALUE);
      test_assert_message_contains("gcap_node_get_memcpy_params");
      assert_memory_equal(&mc, pattern, sizeof mc);
    }
    gcap_memset_node_params msp;
    memset(&msp, 0xA5, sizeof msp);
    st = gcap_node_get_memset_params(n, &msp);
    if (k == K_MEMSET) {
      assert_ok(st);
    } else {
      assert_status(st, GCAP_ERROR_INVALID_VALUE);
      test_assert_message_contains("gcap_node_get_memset_params");
      assert_memory_equal(&msp, pattern, sizeof msp);
    }
    gcap_host_node_params hp;
    memset(&hp, 0xA5, sizeof hp);
    st = gcap_node_get_host_params(n, &hp);
    if (k == K_HOST) {
      assert_ok(st);
    } else {
      assert_status(st, GCAP_ERROR_INVALID_VALUE);
      test_assert_message_contains("gcap_node_get_host_params");
      assert_memory_equal(&hp, pattern, sizeof hp);
    }
    gcap_graph *child = (gcap_graph *)(void *)pattern;
    st = gcap_node_get_child_graph(n, &child);
    if (k == K_CHILD) {
      assert_ok(st);
      assert_non_null(child);
    } else {
      assert_status(st, GCAP_ERROR_INVALID_VALUE);
      assert_null(child); /* a handle output is set to NULL on failure */
    }
    gcap_event *ev = (gcap_event *)(void *)pattern;
    st = gcap_node_get_event(n, &ev);
    if (k == K_RECORD || k == K_WAIT) {
      assert_ok(st);
      assert_ptr_equal(ev, fx->event);
    } else {
      assert_status(st, GCAP_ERROR_INVALID_VALUE);
      assert_null(ev);
    }
  }

  /* NULL outputs, NULL and destroyed nodes. */
  assert_fails(gcap_node_get_kernel_params(nodes[K_KERNEL], NULL), GCAP_ERROR_INVALID_VALUE,
               "gcap_node_get_kernel_params");
  assert_fails(gcap_node_get_memcpy_params(nodes[K_MEMCPY], NULL), GCAP_ERROR_INVALID_VALUE,
               "gcap_node_get_memcpy_params");
  assert_fails(gcap_node_get_memset_params(nodes[K_MEMSET], NULL), GCAP_ERROR_INVALID_VALUE,
               "gcap_node_get_memset_params");
  assert_fails(gcap_node_get_host_params(nodes[K_HOST], NULL), GCAP_ERROR_INVALID_VALUE, "gcap_node_get_host_params");
  gcap_kernel_node_params kp;
  gcap_memcpy_node_params mc;
  gcap_memset_node_params msp;
  gcap_host_node_params hp;
  assert_fails(gcap_node_get_kernel_params(NULL, &kp), GCAP_ERROR_INVALID_HANDLE, "gcap_node_get_kernel_params");
  assert_fails(gcap_node_get_memcpy_params(NULL, &mc), GCAP_ERROR_INVALID_HANDLE, "gcap_node_get_memcpy_params");
  assert_fails(gcap_node_get_memset_params(NULL, &msp), GCAP_ERROR_INVALID_HANDLE, "gcap_node_get_memset_params");
  assert_fails(gcap_node_get_host_params(NULL, &hp), GCAP_ERROR_INVALID_HANDLE, "gcap_node_get_host_params");
  assert_fails(gcap_node_get_kernel_params(NULL, NULL), GCAP_ERROR_INVALID_HANDLE, "gcap_node_get_kernel_params");

  assert_ok(gcap_graph_destroy_node(nodes[K_KERNEL]));
  assert_ok(gcap_graph_destroy_node(nodes[K_MEMCPY]));
  assert_ok(gcap_graph_destroy_node(nodes[K_MEMSET]));
  assert_ok(gcap_graph_destroy_node(nodes[K_HOST]));
  assert_ok(gcap_graph_destroy_node(nodes[K_RECORD]));
  assert_fails(gcap_node_get_kernel_params(nodes[K_KERNEL], &kp), GCAP_ERROR_INVALID_HANDLE,
               "gcap_node_get_kernel_params");
  assert_fails(gcap_node_get_memcpy_params(nodes[K_MEMCPY], &mc), GCAP_ERROR_INVALID_HANDLE,
               "gcap_node_get_memcpy_params");
  assert_fails(gcap_node_get_memset_params(nodes[K_MEMSET], &msp), GCAP_ERROR_INVALID_HANDLE,
               "gcap_node_get_memset_params");
  assert_fails(gcap_node_get_host_params(nodes[K_HOST], &hp), GCAP_ERROR_INVALID_HANDLE, "gcap_node_get_host_params");
  gcap_event *ev = NULL;
  assert_fails(gcap_node_get_event(nodes[K_RECORD], &ev), GCAP_ERROR_INVALID_HANDLE, "gcap_node_get_event");
  gcap_host_node_params hset = {.fn = host_fn_b, .user_data = NULL};
  assert_fails(gcap_node_set_host_params(nodes[K_HOST], &hset), GCAP_ERROR_INVALID_HANDLE, "gcap_node_set_host_params");
  gcap_graph_destroy(child_template);
  child_template = NULL;
}

/* ================================================================ setters */

static void test_set_kernel_params(void **state) {
  struct fixture *fx = *state;
  gcap_kernel_node_params p = kernel_params(fx);
  gcap_node *n = NULL;
  assert_ok(gcap_graph_add_kernel_node(fx->g, &fx->root, 1, &p, &n));

  int32_t value = 9;
  void *ptr = fx->small;
  void *args[2] = {&value, &ptr};
  gcap_kernel_node_params np = {.kernel = fx->store,
                                .grid = GCAP_DIM3(5, 1, 1),
                                .block = GCAP_DIM3(4, 4, 1),
                                .shared_mem_bytes = 64,
                                .args = args};
  assert_ok(gcap_node_set_kernel_params(n, &np));
  assert_string_equal(gcap_last_error_message(), "");
  value = 10;
  ptr = NULL;
  gcap_kernel_node_params got;
  assert_ok(gcap_node_get_kernel_params(n, &got));
  assert_ptr_equal(got.kernel, fx->store);
  assert_int_equal(got.grid.x, 5);
  assert_int_equal(got.block.x, 4);
  assert_int_equal(got.block.y, 4);
  assert_int_equal(got.shared_mem_bytes, 64);
  assert_true(got.args != args);
  assert_true(got.args[0] != (void *)&value);
  int32_t v;
  void *pv;
  memcpy(&v, got.args[0], sizeof v);
  memcpy(&pv, got.args[1], sizeof pv);
  assert_int_equal(v, 9);
  assert_ptr_equal(pv, fx->small);

  /* Failures leave the parameters as they were. */
  gcap_kernel_node_params badp = np;
  value = 11;
  badp.block = GCAP_DIM3(2048, 1, 1);
  assert_fails(gcap_node_set_kernel_params(n, &badp), GCAP_ERROR_INVALID_VALUE, "gcap_node_set_kernel_params");
  badp = np;
  badp.args = NULL;
  assert_fails(gcap_node_set_kernel_params(n, &badp), GCAP_ERROR_INVALID_VALUE, "gcap_node_set_kernel_params");
  badp = np;
  badp.shared_mem_bytes = 100000;
  assert_fails(gcap_node_set_kernel_params(n, &badp), GCAP_ERROR_INVALID_VALUE, "gcap_node_set_kernel_params");
  badp = np;
  badp.kernel = NULL;
  assert_fails(gcap_node_set_kernel_params(n, &badp), GCAP_ERROR_INVALID_HANDLE, "gcap_node_set_kernel_params");
  badp.kernel = fx->other_kernel;
  assert_fails(gcap_node_set_kernel_params(n, &badp), GCAP_ERROR_INVALID_HANDLE, "gcap_node_set_kernel_params");
  assert_fails(gcap_node_set_kernel_params(n, NULL), GCAP_ERROR_INVALID_VALUE, "gcap_node_set_kernel_params");
  assert_fails(gcap_node_set_kernel_params(NULL, &np), GCAP_ERROR_INVALID_HANDLE, "gcap_node_set_kernel_params");
  assert_fails(gcap_node_set_kernel_params(NULL, NULL), GCAP_ERROR_INVALID_HANDLE, "gcap_node_set_kernel_params");

  assert_ok(gcap_node_get_kernel_params(n, &got));
  assert_int_equal(got.grid.x, 5);
  assert_int_equal(got.block.x, 4);
  assert_int_equal(got.shared_mem_bytes, 64);
  memcpy(&v, got.args[0], sizeof v);
  memcpy(&pv, got.args[1], sizeof pv);
  assert_int_equal(v, 9);
  assert_ptr_equal(pv, fx->small);

  /* A different kernel, without parameters. */
  gcap_kernel_node_params zp = {.kernel = fx->noargs,
                                .grid = GCAP_DIM3(1, 1, 1),
                                .block = GCAP_DIM3(1, 1, 1),
                                .shared_mem_bytes = 0,
                                .args = NULL};
  assert_ok(gcap_node_set_kernel_params(n, &zp));
  assert_ok(gcap_node_get_kernel_params(n, &got));
  assert_ptr_equal(got.kernel, fx->noargs);
  assert_int_equal(gcap_node_get_type(n), GCAP_NODE_KERNEL);

  /* Setters of other types refuse a kernel node, and change nothing. */
  gcap_memcpy_node_params mc = memcpy_params(fx);
  assert_fails(gcap_node_set_memcpy_params(n, &mc), GCAP_ERROR_INVALID_VALUE, "gcap_node_set_memcpy_params");
  gcap_memset_node_params msp = memset_params(fx);
  assert_fails(gcap_node_set_memset_params(n, &msp), GCAP_ERROR_INVALID_VALUE, "gcap_node_set_memset_params");
  gcap_host_node_params hp = {.fn = host_fn_a, .user_data = NULL};
  assert_fails(gcap_node_set_host_params(n, &hp), GCAP_ERROR_INVALID_VALUE, "gcap_node_set_host_params");
  assert_ok(gcap_node_get_kernel_params(n, &got));
  assert_ptr_equal(got.kernel, fx->noargs);
  assert_int_equal(gcap_node_get_type(n), GCAP_NODE_KERNEL);
}

static void test_set_kernel_params_run(void **state) {
  struct fixture *fx = *state;
  test_require_sim(); /* checks what store_sim wrote */
  gcap_kernel_node_params p = kernel_params(fx);
  gcap_node *n = NULL;
  assert_ok(gcap_graph_add_kernel_node(fx->g, NULL, 0, &p, &n));
  int32_t value = 31;
  void *ptr = fx->small;
  void *args[2] = {&value, &ptr};
  gcap_kernel_node_params np = {.kernel = fx->store,
                                .grid = GCAP_DIM3(1, 1, 1),
                                .block = GCAP_DIM3(8, 1, 1),
                                .shared_mem_bytes = 0,
                                .args = args};
  assert_ok(gcap_node_set_kernel_params(n, &np));
  value = 0;
  ptr = fx->dev;
  assert_ok(gcap_memset_async(fx->stream, fx->small, 0, SMALL_BYTES));
  assert_ok(gcap_memset_async(fx->stream, fx->dev, 0, DEV_BYTES));
  gcap_exec *x = NULL;
  assert_ok(gcap_graph_instantiate(fx->g, 0, &x));
  assert_ok(gcap_exec_launch(x, fx->stream));
  assert_ok(gcap_stream_synchronize(fx->stream));
  int32_t out[10];
  assert_ok(gcap_memcpy(fx->ctx, out, fx->small, sizeof out, GCAP_MEMCPY_DEVICE_TO_HOST));
  for (size_t i = 0; i < 8; i++) assert_int_equal(out[i], 31);
  assert_int_equal(out[8], 0);
  assert_ok(gcap_memcpy(fx->ctx, out, fx->dev, sizeof out, GCAP_MEMCPY_DEVICE_TO_HOST));
  for (size_t i = 0; i < 10; i++) assert_int_equal(out[i], 0);
  gcap_exec_destroy(x);
}

static void test_set_memcpy_params(void **state) {
  struct fixture *fx = *state;
  gcap_memcpy_node_params p = memcpy_params(fx);
  gcap_node *n = NULL;
  assert_ok(gcap_graph_add_memcpy_node(fx->g, NULL, 0, &p, &n));
  gcap_memcpy_node_params np = {.dst = fx->host, .src = fx->small, .bytes = 64, .kind = GCAP_MEMCPY_DEFAULT};
  assert_ok(gcap_node_set_memcpy_params(n, &np));
  assert_string_equal(gcap_last_error_message(), "");
  gcap_memcpy_node_params got;
  assert_ok(gcap_node_get_memcpy_params(n, &got));
  assert_ptr_equal(got.dst, fx->host);
  assert_ptr_equal(got.src, fx->small);
  assert_int_equal(got.bytes, 64);
  assert_int_equal(got.kind, GCAP_MEMCPY_DEFAULT);

  gcap_memcpy_node_params bad[5] = {
      {.dst = fx->host, .src = fx->small, .bytes = 0, .kind = GCAP_MEMCPY_DEVICE_TO_HOST},
      {.dst = fx->host, .src = fx->small, .bytes = SMALL_BYTES + 1, .kind = GCAP_MEMCPY_DEVICE_TO_HOST},
      {.dst = fx->dev, .src = fx->small, .bytes = 16, .kind = GCAP_MEMCPY_HOST_TO_DEVICE},
      {.dst = fx->dev, .src = fx->small, .bytes = 16, .kind = (gcap_memcpy_kind)7},
      {.dst = NULL, .src = fx->small, .bytes = 16, .kind = GCAP_MEMCPY_DEVICE_TO_HOST},
  };
  for (size_t i = 0; i < 5; i++)
    assert_fails(gcap_node_set_memcpy_params(n, &bad[i]), GCAP_ERROR_INVALID_VALUE, "gcap_node_set_memcpy_params");
  assert_fails(gcap_node_set_memcpy_params(n, NULL), GCAP_ERROR_INVALID_VALUE, "gcap_node_set_memcpy_params");
  assert_fails(gcap_node_set_memcpy_params(NULL, &np), GCAP_ERROR_INVALID_HANDLE, "gcap_node_set_memcpy_params");
  assert_ok(gcap_node_get_memcpy_params(n, &got));
  assert_ptr_equal(got.dst, fx->host);
  assert_ptr_equal(got.src, fx->small);
  assert_int_equal(got.bytes, 64);
  assert_int_equal(got.kind, GCAP_MEMCPY_DEFAULT);

  /* Wrong type. */
  gcap_memcpy_node_params ok = memcpy_params(fx);
  assert_fails(gcap_node_set_memcpy_params(fx->root, &ok), GCAP_ERROR_INVALID_VALUE, "gcap_node_set_memcpy_params");
  gcap_node *m = NULL;
  gcap_memset_node_params mp = memset_params(fx);
  assert_ok(gcap_graph_add_memset_node(fx->g, NULL, 0, &mp, &m));
  assert_fails(gcap_node_set_memcpy_params(m, &ok), GCAP_ERROR_INVALID_VALUE, "gcap_node_set_memcpy_params");
  assert_int_equal(gcap_node_get_type(m), GCAP_NODE_MEMSET);
}

static void test_set_memset_params(void **state) {
  struct fixture *fx = *state;
  gcap_memset_node_params p = memset_params(fx);
  gcap_node *n = NULL;
  assert_ok(gcap_graph_add_memset_node(fx->g, NULL, 0, &p, &n));
  gcap_memset_node_params np = ms((char *)fx->dev + 64, 0x7777, 2, 8, 3, 32);
  assert_ok(gcap_node_set_memset_params(n, &np));
  assert_string_equal(gcap_last_error_message(), "");
  gcap_memset_node_params got;
  assert_ok(gcap_node_get_memset_params(n, &got));
  assert_ptr_equal(got.dst, (char *)fx->dev + 64);
  assert_int_equal(got.value, 0x7777);
  assert_int_equal(got.element_size, 2);
  assert_int_equal(got.width, 8);
  assert_int_equal(got.height, 3);
  assert_int_equal(got.pitch, 32);

  gcap_memset_node_params bad[7] = {
      ms(fx->dev, 1, 3, 8, 1, 0),       ms(fx->dev, 1, 1, 0, 1, 0),  ms(fx->dev, 1, 1, 8, 0, 0),
      ms(fx->dev, 1, 4, 8, 2, 31),      ms(fx->host, 1, 1, 8, 1, 0), ms((char *)fx->dev + 2, 1, 4, 8, 1, 0),
      ms(fx->small, 1, 1, 128, 3, 128),
  };
  for (size_t i = 0; i < 7; i++)
    assert_fails(gcap_node_set_memset_params(n, &bad[i]), GCAP_ERROR_INVALID_VALUE, "gcap_node_set_memset_params");
  assert_fails(gcap_node_set_memset_params(n, NULL), GCAP_ERROR_INVALID_VALUE, "gcap_node_set_memset_params");
  assert_fails(gcap_node_set_memset_params(NULL, &np), GCAP_ERROR_INVALID_HANDLE, "gcap_node_set_memset_params");
  assert_ok(gcap_node_get_memset_params(n, &got));
  assert_ptr_equal(got.dst, (char *)fx->dev + 64);
  assert_int_equal(got.value, 0x7777);
  assert_int_equal(got.element_size, 2);
  assert_int_equal(got.width, 8);
  assert_int_equal(got.height, 3);
  assert_int_equal(got.pitch, 32);

  gcap_memset_node_params ok = memset_params(fx);
  gcap_node *c = NULL;
  gcap_memcpy_node_params cp = memcpy_params(fx);
  assert_ok(gcap_graph_add_memcpy_node(fx->g, NULL, 0, &cp, &c));
  assert_fails(gcap_node_set_memset_params(c, &ok), GCAP_ERROR_INVALID_VALUE, "gcap_node_set_memset_params");
  assert_fails(gcap_node_set_memset_params(fx->root, &ok), GCAP_ERROR_INVALID_VALUE, "gcap_node_set_memset_params");
  gcap_memcpy_node_params cgot;
  assert_ok(gcap_node_get_memcpy_params(c, &cgot));
  assert_int_equal(cgot.bytes, cp.bytes);
}

static void test_set_host_params(void **state) {
  struct fixture *fx = *state;
  gcap_host_node_params p = {.fn = host_fn_a, .user_data = fx};
  gcap_node *n = NULL;
  assert_ok(gcap_graph_add_host_node(fx->g, NULL, 0, &p, &n));
  gcap_host_node_params np = {.fn = host_fn_b, .user_data = &sentinel_storage[0]};
  assert_ok(gcap_node_set_host_params(n, &np));
  gcap_host_node_params got;
  assert_ok(gcap_node_get_host_params(n, &got));
  assert_true(got.fn == host_fn_b);
  assert_ptr_equal(got.user_data, &sentinel_storage[0]);

  gcap_host_node_params bad = {.fn = NULL, .user_data = fx};
  assert_fails(gcap_node_set_host_params(n, &bad), GCAP_ERROR_INVALID_VALUE, "gcap_node_set_host_params");
  assert_fails(gcap_node_set_host_params(n, NULL), GCAP_ERROR_INVALID_VALUE, "gcap_node_set_host_params");
  assert_fails(gcap_node_set_host_params(NULL, &np), GCAP_ERROR_INVALID_HANDLE, "gcap_node_set_host_params");
  assert_ok(gcap_node_get_host_params(n, &got));
  assert_true(got.fn == host_fn_b);
  assert_ptr_equal(got.user_data, &sentinel_storage[0]);

  /* Wrong type: an event node, a child node, an empty node. */
  gcap_node *rec = NULL;
  assert_ok(gcap_graph_add_event_record_node(fx->g, NULL, 0, fx->event, &rec));
  assert_fails(gcap_node_set_host_params(rec, &np), GCAP_ERROR_INVALID_VALUE, "gcap_node_set_host_params");
  assert_fails(gcap_node_set_host_params(fx->root, &np), GCAP_ERROR_INVALID_VALUE, "gcap_node_set_host_params");
  gcap_kernel_node_params kp = kernel_params(fx);
  assert_fails(gcap_node_set_kernel_params(n, &kp), GCAP_ERROR_INVALID_VALUE, "gcap_node_set_kernel_params");
  assert_ok(gcap_node_get_host_params(n, &got));
  assert_true(got.fn == host_fn_b);
}

static int host_calls;
static void count_call(void *user_data) { host_calls += *(int *)user_data; }

/* Parameters set on the graph are what a later instantiation runs. */
static void test_set_params_take_effect(void **state) {
  struct fixture *fx = *state;
  unsigned char out[256];
  gcap_memset_node_params mp = ms(fx->small, 0x11, 1, SMALL_BYTES, 1, 0);
  gcap_node *fill = NULL, *copy = NULL, *host = NULL;
  assert_ok(gcap_graph_add_memset_node(fx->g, NULL, 0, &mp, &fill));
  gcap_memcpy_node_params cp = {.dst = out, .src = fx->small, .bytes = sizeof out, .kind = GCAP_MEMCPY_DEVICE_TO_HOST};
  assert_ok(gcap_graph_add_memcpy_node(fx->g, &fill, 1, &cp, &copy));
  int one = 1, ten = 10;
  gcap_host_node_params hp = {.fn = count_call, .user_data = &one};
  assert_ok(gcap_graph_add_host_node(fx->g, &copy, 1, &hp, &host));

  host_calls = 0;
  memset(out, 0, sizeof out);
  gcap_exec *x = NULL;
  assert_ok(gcap_graph_instantiate(fx->g, 0, &x));
  assert_ok(gcap_exec_launch(x, fx->stream));
  assert_ok(gcap_stream_synchronize(fx->stream));
  gcap_exec_destroy(x);
  for (size_t i = 0; i < sizeof out; i++) assert_int_equal(out[i], 0x11);
  assert_int_equal(host_calls, 1);

  /* 2-D fill of 16-bit elements: rows of 8 elements every 32 bytes, 4 rows. */
  gcap_memset_node_params mp2 = ms(fx->small, 0xA1B2, 2, 8, 4, 32);
  assert_ok(gcap_node_set_memset_params(fill, &mp2));
  hp.user_data = &ten;
  assert_ok(gcap_node_set_host_params(host, &hp));
  assert_ok(gcap_memset_async(fx->stream, fx->small, 0, SMALL_BYTES));
  assert_ok(gcap_stream_synchronize(fx->stream));
  memset(out, 0xff, sizeof out);
  assert_ok(gcap_graph_instantiate(fx->g, 0, &x));
  assert_ok(gcap_exec_launch(x, fx->stream));
  assert_ok(gcap_stream_synchronize(fx->stream));
  gcap_exec_destroy(x);
  for (size_t i = 0; i < sizeof out; i++) {
    size_t row = i / 32, col = i % 32;
    if (row < 4 && col < 16) {
      uint16_t v;
      memcpy(&v, &out[i & ~(size_t)1], sizeof v);
      assert_int_equal(v, 0xA1B2);
    } else {
      assert_int_equal(out[i], 0);
    }
  }
  assert_int_equal(host_calls, 11);
}

/* ================================================================= types */

static void test_node_types(void **state) {
  struct fixture *fx = *state;
  /* Values equal CUgraphNodeType. */
  assert_int_equal(GCAP_NODE_KERNEL, 0);
  assert_int_equal(GCAP_NODE_MEMCPY, 1);
  assert_int_equal(GCAP_NODE_MEMSET, 2);
  assert_int_equal(GCAP_NODE_HOST, 3);
  assert_int_equal(GCAP_NODE_GRAPH, 4);
  assert_int_equal(GCAP_NODE_EMPTY, 5);
  assert_int_equal(GCAP_NODE_EVENT_WAIT, 6);
  assert_int_equal(GCAP_NODE_EVENT_RECORD, 7);
  assert_int_equal(GCAP_NODE_MEM_ALLOC, 10);
  assert_int_equal(GCAP_NODE_MEM_FREE, 11);

  make_child_template(fx);
  static const int numbers[K_COUNT] = {0, 1, 2, 3, 5, 4, 7, 6};
  for (int k = 0; k < K_COUNT; k++) {
    gcap_node *n = NULL;
    assert_ok(add_kind(fx, (enum kind)k, fx->g, NULL, 0, &n));
    assert_int_equal((int)gcap_node_get_type(n), numbers[k]);
    assert_string_equal(gcap_last_error_message(), "");
  }
  assert_true(gcap_node_get_type(NULL) == (gcap_node_type)-1);
  gcap_node *gone = NULL;
  assert_ok(gcap_graph_add_empty_node(fx->g, NULL, 0, &gone));
  assert_ok(gcap_graph_destroy_node(gone));
  assert_true(gcap_node_get_type(gone) == (gcap_node_type)-1);
  gcap_graph_destroy(child_template);
  child_template = NULL;
}

int main(void) {
  test_require_backend();
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_add_every_kind, setup, teardown),
      cmocka_unit_test_setup_teardown(test_add_common_bad_inputs, setup, teardown),
      cmocka_unit_test_setup_teardown(test_add_null_params, setup, teardown),
      cmocka_unit_test_setup_teardown(test_kernel_node_bad_kernel, setup, teardown),
      cmocka_unit_test_setup_teardown(test_kernel_node_bad_configs, setup, teardown),
      cmocka_unit_test_setup_teardown(test_kernel_node_copies_args, setup, teardown),
      cmocka_unit_test_setup_teardown(test_kernel_node_copied_args_run, setup, teardown),
      cmocka_unit_test_setup_teardown(test_kernel_node_without_params, setup, teardown),
      cmocka_unit_test_setup_teardown(test_memcpy_node_kinds, setup, teardown),
      cmocka_unit_test_setup_teardown(test_memcpy_node_bad, setup, teardown),
      cmocka_unit_test_setup_teardown(test_memset_node_valid, setup, teardown),
      cmocka_unit_test_setup_teardown(test_memset_node_bad, setup, teardown),
      cmocka_unit_test_setup_teardown(test_host_node, setup, teardown),
      cmocka_unit_test_setup_teardown(test_event_nodes, setup, teardown),
      cmocka_unit_test_setup_teardown(test_destroyed_event_keeps_nodes_working, setup, teardown),
      cmocka_unit_test_setup_teardown(test_getters_on_wrong_types, setup, teardown),
      cmocka_unit_test_setup_teardown(test_set_kernel_params, setup, teardown),
      cmocka_unit_test_setup_teardown(test_set_kernel_params_run, setup, teardown),
      cmocka_unit_test_setup_teardown(test_set_memcpy_params, setup, teardown),
      cmocka_unit_test_setup_teardown(test_set_memset_params, setup, teardown),
      cmocka_unit_test_setup_teardown(test_set_host_params, setup, teardown),
      cmocka_unit_test_setup_teardown(test_set_params_take_effect, setup, teardown),
      cmocka_unit_test_setup_teardown(test_node_types, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
