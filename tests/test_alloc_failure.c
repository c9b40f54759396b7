/*
 * Fault injection: every scenario runs with allocation 1, 2, 3, ... failing (gcap__alloc_fail_after)
 * until it completes without a failure. At every step each call must return SUCCESS or
 * OUT_OF_MEMORY with a message, write NULL to its handle output on failure and leave no
 * half-made state. Leaks are caught by running this test under valgrind and ASan.
 * The same scenarios run again with backend call 1, 2, 3, ... failing (gcap__backend_fail_after):
 * then each call must return SUCCESS or the backend's failure, with the same guarantees.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "common.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "core/dispatch.h"
#include "core/graph.h"
#include "core/internal.h"
#include "base/registry.h"

/* Every scenario must complete within this many fault points. */
#define MAX_STEPS 2000
#define N 64 /* elements of the test buffers */

/* A non-NULL value that failing calls must overwrite with NULL. */
static max_align_t sentinel_storage;
#define SENTINEL ((void *)&sentinel_storage)

/* The fault point of the current iteration, for messages. */
static long fault_point;
/* Allocations the last injected stretch made (inject_end). */
static long allocations_made;

/* What fails: allocations (OUT_OF_MEMORY) or, for the backend tests, calls into the backend. */
static bool backend_faults;
static gcap_status injected_status(void) { return backend_faults ? GCAP_ERROR_BACKEND : GCAP_ERROR_OUT_OF_MEMORY; }

static void inject_begin(long n) {
  if (backend_faults) {
    gcap__backend_fail_after((unsigned long)n + 1); /* resets the count */
    return;
  }
  gcap__alloc_fail_after(-1); /* resets the count */
  gcap__alloc_fail_after(n);
}

static void inject_end(void) {
  allocations_made = backend_faults ? (long)gcap__backend_fail_after(0) : gcap__alloc_fail_after(-1);
}

static void stop_injecting(void) {
  gcap__alloc_fail_after(-1);
  gcap__backend_fail_after(0);
}

/* Injection must never outlive a test, even one that failed half-way. */
static int reset_injection(void **state) {
  (void)state;
  stop_injecting();
  backend_faults = false;
  return 0;
}

static int inject_backend(void **state) {
  reset_injection(state);
  backend_faults = true;
  return 0;
}

/* ------------------------------------------------------------- call checks */

/*
 * Checks one call made while allocations may fail: SUCCESS with an empty message, or OUT_OF_MEMORY
 * with a message naming `fn` and no handle registered or unregistered. Returns true on success.
 */
static bool check_call_(gcap_status st, const char *fn, const char *expr, unsigned long registry_before,
                        const char *file, int line) {
  const char *msg = gcap_last_error_message();
  if (st == GCAP_SUCCESS) {
    if (msg[0] != '\0') {
      stop_injecting();
      print_error("%s:%d: fault point %ld: %s succeeded but the message is \"%s\"\n", file, line, fault_point, expr,
                  msg);
      _fail(file, line);
    }
    return true;
  }
  if (st != injected_status()) {
    stop_injecting();
    print_error("%s:%d: fault point %ld: %s returned %s (\"%s\"); only SUCCESS or %s are right\n", file, line,
                fault_point, expr, gcap_status_name(st), msg, gcap_status_name(injected_status()));
    _fail(file, line);
  }
  if (msg[0] == '\0' || strstr(msg, fn) == NULL) {
    stop_injecting();
    print_error("%s:%d: fault point %ld: %s failed with %s, but the message \"%s\" does not name %s\n", file, line,
                fault_point, expr, gcap_status_name(st), msg, fn);
    _fail(file, line);
  }
  unsigned long now = gcap__registry_size();
  if (now != registry_before) {
    stop_injecting();
    print_error("%s:%d: fault point %ld: %s failed but the live handles went from %lu to %lu\n", file, line,
                fault_point, expr, registry_before, now);
    _fail(file, line);
  }
  return false;
}

static void check_null_out_(bool is_null, const char *var, const char *expr, const char *file, int line) {
  if (is_null) return;
  print_error("%s:%d: fault point %ld: %s failed but did not set %s to NULL\n", file, line, fault_point, expr, var);
  _fail(file, line);
}

/* Runs a call; on failure checks it and jumps to `stop`. */
#define STEP(expr, fn)                                                                                                 \
  do {                                                                                                                 \
    unsigned long reg_ = gcap__registry_size();                                                                        \
    gcap_status st_ = (expr);                                                                                          \
    if (!check_call_(st_, (fn), #expr, reg_, __FILE__, __LINE__)) goto stop;                                           \
  } while (0)

/* As STEP, for a call with a handle output `var`, which must be NULL after a failure. */
#define STEP_OUT(expr, fn, var)                                                                                        \
  do {                                                                                                                 \
    (var) = SENTINEL;                                                                                                  \
    unsigned long reg_ = gcap__registry_size();                                                                        \
    gcap_status st_ = (expr);                                                                                          \
    if (!check_call_(st_, (fn), #expr, reg_, __FILE__, __LINE__)) {                                                    \
      check_null_out_((var) == NULL, #var, #expr, __FILE__, __LINE__);                                                 \
      goto stop;                                                                                                       \
    }                                                                                                                  \
  } while (0)

/* ------------------------------------------------------------ the fixture */

/* x[i] = x[i] * 2 + 1 for i < n. Params: float *x, uint32_t n. */
static void axpb_sim(const gcap_sim_thread *t, void *const *args) {
  float *x;
  uint32_t n;
  memcpy(&x, args[0], sizeof x);
  memcpy(&n, args[1], sizeof n);
  uint32_t i = t->block_idx.x * t->block_dim.x + t->thread_idx.x;
  if (i < n) x[i] = x[i] * 2.0f + 1.0f;
}

/* p[i] = v for i < n. Params: float *p, float v, uint32_t n. */
static void fill_sim(const gcap_sim_thread *t, void *const *args) {
  float *p;
  float v;
  uint32_t n;
  memcpy(&p, args[0], sizeof p);
  memcpy(&v, args[1], sizeof v);
  memcpy(&n, args[2], sizeof n);
  uint32_t i = t->block_idx.x * t->block_dim.x + t->thread_idx.x;
  if (i < n) p[i] = v;
}

static const size_t axpb_sizes[] = {sizeof(float *), sizeof(uint32_t)};
static const size_t fill_sizes[] = {sizeof(float *), sizeof(float), sizeof(uint32_t)};
static const gcap_param_access fill_access[] = {GCAP_ACCESS_WRITE, GCAP_ACCESS_NONE, GCAP_ACCESS_NONE};

static const gcap_kernel_def kernel_defs[] = {
    {.name = "axpb", .sim_fn = axpb_sim, .num_params = 2, .param_sizes = axpb_sizes},
    {.name = "fill", .sim_fn = fill_sim, .num_params = 3, .param_sizes = fill_sizes, .param_access = fill_access},
    {.name = "stub", .sim_fn = NULL, .num_params = 0, .param_sizes = NULL},
};
static const gcap_module_desc module_desc = {.image = NULL, .image_size = 0, .kernels = kernel_defs, .num_kernels = 3};

static void count_call(void *user_data) { (*(int *)user_data)++; }

struct fx {
  gcap_context *ctx;
  gcap_stream *s;
  gcap_event *e;
  gcap_module *m;
  gcap_kernel *axpb, *fill, *stub;
  float *dev_a, *dev_b;      /* N floats */
  uint32_t *dev_c;           /* N words */
  float *host_in, *host_out; /* page-locked, N floats */
  int host_calls;
};

/* The nodes build_graph makes, in creation order. */
struct built {
  gcap_graph *g, *child;
  gcap_node *c_fill, *c_empty, *c_host;
  gcap_node *h2d, *axpb, *set, *sub, *rec, *wait, *d2h, *host, *stub, *empty;
};

#define BUILT_NODES 10
#define BUILT_EDGES 12
#define CHILD_NODES 3
#define CHILD_EDGES 2
#define BUILT_EXEC_NODES (BUILT_NODES + CHILD_NODES)

static const gcap_node_type built_types[BUILT_NODES] = {
    GCAP_NODE_MEMCPY,     GCAP_NODE_KERNEL, GCAP_NODE_MEMSET, GCAP_NODE_GRAPH,  GCAP_NODE_EVENT_RECORD,
    GCAP_NODE_EVENT_WAIT, GCAP_NODE_MEMCPY, GCAP_NODE_HOST,   GCAP_NODE_KERNEL, GCAP_NODE_EMPTY,
};

static gcap_context *new_context(bool shuffle) {
  gcap_sim_options so;
  gcap_sim_options_init(&so);
  so.order = GCAP_SIM_ORDER_SHUFFLE;
  so.seed = 42;
  gcap_context_options o;
  gcap_context_options_init(&o);
  o.backend = test_on_sim() ? GCAP_BACKEND_SIM : GCAP_BACKEND_AUTO;
  if (shuffle && test_on_sim()) o.sim = &so;
  gcap_context *ctx = NULL;
  assert_ok(gcap_context_create(&o, &ctx));
  assert_non_null(ctx);
  return ctx;
}

static void reset_buffers(struct fx *f) {
  static const float zeros[N];
  for (size_t i = 0; i < N; i++) {
    f->host_in[i] = (float)i;
    f->host_out[i] = -1.0f;
  }
  assert_ok(gcap_memcpy(f->ctx, f->dev_a, zeros, sizeof zeros, GCAP_MEMCPY_HOST_TO_DEVICE));
  assert_ok(gcap_memcpy(f->ctx, f->dev_b, zeros, sizeof zeros, GCAP_MEMCPY_HOST_TO_DEVICE));
  assert_ok(gcap_memcpy(f->ctx, f->dev_c, zeros, sizeof zeros, GCAP_MEMCPY_HOST_TO_DEVICE));
  f->host_calls = 0;
}

/* Everything a graph needs, made with injection off. */
static void fx_setup(struct fx *f, bool shuffle) {
  memset(f, 0, sizeof *f);
  gcap__alloc_fail_after(-1);
  f->ctx = new_context(shuffle);
  assert_ok(gcap_stream_create(f->ctx, &f->s));
  assert_ok(gcap_event_create(f->ctx, &f->e));
  assert_ok(gcap_module_load(f->ctx, &module_desc, &f->m));
  assert_ok(gcap_module_get_kernel(f->m, "axpb", &f->axpb));
  assert_ok(gcap_module_get_kernel(f->m, "fill", &f->fill));
  assert_ok(gcap_module_get_kernel(f->m, "stub", &f->stub));
  void *p = NULL;
  assert_ok(gcap_mem_alloc(f->ctx, N * sizeof(float), &p));
  f->dev_a = p;
  assert_ok(gcap_mem_alloc(f->ctx, N * sizeof(float), &p));
  f->dev_b = p;
  assert_ok(gcap_mem_alloc(f->ctx, N * sizeof(uint32_t), &p));
  f->dev_c = p;
  assert_ok(gcap_host_alloc(f->ctx, N * sizeof(float), &p));
  f->host_in = p;
  assert_ok(gcap_host_alloc(f->ctx, N * sizeof(float), &p));
  f->host_out = p;
  reset_buffers(f);
}

static void fx_teardown(struct fx *f) {
  gcap__alloc_fail_after(-1);
  assert_ok(gcap_mem_free(f->ctx, f->dev_a));
  assert_ok(gcap_mem_free(f->ctx, f->dev_b));
  assert_ok(gcap_mem_free(f->ctx, f->dev_c));
  assert_ok(gcap_host_free(f->ctx, f->host_in));
  assert_ok(gcap_host_free(f->ctx, f->host_out));
  assert_ok(gcap_module_unload(f->m));
  assert_ok(gcap_event_destroy(f->e));
  assert_ok(gcap_stream_destroy(f->s));
  gcap_context_destroy(f->ctx);
  memset(f, 0, sizeof *f);
}

static void built_destroy(struct built *b) {
  gcap__alloc_fail_after(-1);
  gcap_graph_destroy(b->g);
  gcap_graph_destroy(b->child);
  memset(b, 0, sizeof *b);
}

/* ------------------------------------------------------ graph invariants */

/* The core's bookkeeping agrees with itself: indices, registrations, edges both ways, children. */
static void check_graph_invariants(const gcap_graph *g) {
  size_t deps = 0, dependents = 0;
  assert_true(gcap__registry_has(g, GCAP__H_GRAPH));
  for (size_t i = 0; i < g->nodes.count; i++) {
    const struct gcap_node *n = g->nodes.items[i];
    assert_int_equal(n->magic, GCAP__NODE_LIVE);
    assert_ptr_equal(n->graph, g);
    assert_int_equal(n->index, i);
    assert_true(gcap__is_node_slot(n) && n->magic == GCAP__NODE_LIVE);
    deps += n->deps.count;
    dependents += n->dependents.count;
    if (n->type == GCAP_NODE_GRAPH) {
      assert_non_null(n->p.child);
      assert_ptr_equal(n->p.child->owner, n);
      check_graph_invariants(n->p.child);
    }
  }
  assert_int_equal(deps, g->edge_count);
  assert_int_equal(dependents, g->edge_count);
  for (size_t i = 0; i < g->edge_count; i++) {
    const struct gcap_node *from = g->edges[i].from, *to = g->edges[i].to;
    assert_ptr_equal(from->graph, g);
    assert_ptr_equal(to->graph, g);
    assert_true(gcap__nlist_contains(&from->dependents, to));
    assert_true(gcap__nlist_contains(&to->deps, from));
  }
}

/* What a failed graph edit must leave exactly as it was. */
struct snap {
  size_t nodes, edges;
  unsigned module_refs, event_refs;
};

static struct snap take_snap(const struct fx *f, const gcap_graph *g) {
  struct snap s = {0, 0, f->m ? f->m->refs : 0, f->e ? f->e->refs : 0};
  if (g) {
    s.nodes = gcap_graph_node_count(g);
    s.edges = gcap_graph_edge_count(g);
  }
  return s;
}

static void check_unchanged_(const struct fx *f, const gcap_graph *g, const struct snap *before, const char *expr,
                             const char *file, int line) {
  struct snap now = take_snap(f, g);
  if (now.nodes != before->nodes || now.edges != before->edges || now.module_refs != before->module_refs ||
      now.event_refs != before->event_refs) {
    print_error("%s:%d: fault point %ld: %s failed but changed the graph: nodes %zu -> %zu, edges %zu -> %zu, "
                "module refs %u -> %u, event refs %u -> %u\n",
                file, line, fault_point, expr, before->nodes, now.nodes, before->edges, now.edges, before->module_refs,
                now.module_refs, before->event_refs, now.event_refs);
    _fail(file, line);
  }
  if (g) check_graph_invariants(g);
}

/* Adds a node to `g`; a failure must leave node and edge counts, references and invariants as they were. */
#define ADD_STEP(f, g, var, expr, fn)                                                                                  \
  do {                                                                                                                 \
    struct snap snap_ = take_snap((f), (g));                                                                           \
    (var) = SENTINEL;                                                                                                  \
    unsigned long reg_ = gcap__registry_size();                                                                        \
    gcap_status st_ = (expr);                                                                                          \
    if (!check_call_(st_, (fn), #expr, reg_, __FILE__, __LINE__)) {                                                    \
      check_null_out_((var) == NULL, #var, #expr, __FILE__, __LINE__);                                                 \
      check_unchanged_((f), (g), &snap_, #expr, __FILE__, __LINE__);                                                   \
      goto stop;                                                                                                       \
    }                                                                                                                  \
  } while (0)

/* Builds a graph with a node of every type, a child graph and an add_dependencies batch. */
static bool build_graph(struct fx *f, struct built *b) {
  memset(b, 0, sizeof *b);
  struct snap before = {0};
  bool in_batch = false;
  gcap_dim3 grid = GCAP_DIM3(N / 32, 1, 1), block = GCAP_DIM3(32, 1, 1), one = GCAP_DIM3(1, 1, 1);
  float *dev_a = f->dev_a, *dev_b = f->dev_b, three = 3.0f;
  uint32_t n = N;

  STEP_OUT(gcap_graph_create(f->ctx, &b->child), "gcap_graph_create", b->child);
  void *fill_args[] = {&dev_b, &three, &n};
  gcap_kernel_node_params kp = {f->fill, grid, block, 0, fill_args};
  ADD_STEP(f, b->child, b->c_fill, gcap_graph_add_kernel_node(b->child, NULL, 0, &kp, &b->c_fill),
           "gcap_graph_add_kernel_node");
  ADD_STEP(f, b->child, b->c_empty, gcap_graph_add_empty_node(b->child, &b->c_fill, 1, &b->c_empty),
           "gcap_graph_add_empty_node");
  gcap_host_node_params hp = {count_call, &f->host_calls};
  ADD_STEP(f, b->child, b->c_host, gcap_graph_add_host_node(b->child, &b->c_empty, 1, &hp, &b->c_host),
           "gcap_graph_add_host_node");

  STEP_OUT(gcap_graph_create(f->ctx, &b->g), "gcap_graph_create", b->g);
  gcap_memcpy_node_params h2d = {f->dev_a, f->host_in, N * sizeof(float), GCAP_MEMCPY_HOST_TO_DEVICE};
  ADD_STEP(f, b->g, b->h2d, gcap_graph_add_memcpy_node(b->g, NULL, 0, &h2d, &b->h2d), "gcap_graph_add_memcpy_node");
  void *axpb_args[] = {&dev_a, &n};
  gcap_kernel_node_params ap = {f->axpb, grid, block, 0, axpb_args};
  ADD_STEP(f, b->g, b->axpb, gcap_graph_add_kernel_node(b->g, &b->h2d, 1, &ap, &b->axpb), "gcap_graph_add_kernel_node");
  gcap_memset_node_params sp = {f->dev_c, 7u, 4, N, 1, 0};
  ADD_STEP(f, b->g, b->set, gcap_graph_add_memset_node(b->g, NULL, 0, &sp, &b->set), "gcap_graph_add_memset_node");
  ADD_STEP(f, b->g, b->sub, gcap_graph_add_child_graph_node(b->g, &b->set, 1, b->child, &b->sub),
           "gcap_graph_add_child_graph_node");
  ADD_STEP(f, b->g, b->rec, gcap_graph_add_event_record_node(b->g, &b->axpb, 1, f->e, &b->rec),
           "gcap_graph_add_event_record_node");
  ADD_STEP(f, b->g, b->wait, gcap_graph_add_event_wait_node(b->g, &b->rec, 1, f->e, &b->wait),
           "gcap_graph_add_event_wait_node");
  gcap_memcpy_node_params d2h = {f->host_out, f->dev_a, N * sizeof(float), GCAP_MEMCPY_DEFAULT};
  ADD_STEP(f, b->g, b->d2h, gcap_graph_add_memcpy_node(b->g, &b->wait, 1, &d2h, &b->d2h), "gcap_graph_add_memcpy_node");
  gcap_node *host_deps[] = {b->d2h, b->sub};
  ADD_STEP(f, b->g, b->host, gcap_graph_add_host_node(b->g, host_deps, 2, &hp, &b->host), "gcap_graph_add_host_node");
  gcap_kernel_node_params stub = {f->stub, one, one, 0, NULL};
  ADD_STEP(f, b->g, b->stub, gcap_graph_add_kernel_node(b->g, NULL, 0, &stub, &b->stub), "gcap_graph_add_kernel_node");
  gcap_node *empty_deps[] = {b->host, b->stub, b->set};
  ADD_STEP(f, b->g, b->empty, gcap_graph_add_empty_node(b->g, empty_deps, 3, &b->empty), "gcap_graph_add_empty_node");

  gcap_node *from[] = {b->h2d, b->set};
  gcap_node *to[] = {b->stub, b->stub};
  before = take_snap(f, b->g);
  in_batch = true;
  STEP(gcap_graph_add_dependencies(b->g, from, to, 2), "gcap_graph_add_dependencies");
  return true;
stop:
  if (in_batch) check_unchanged_(f, b->g, &before, "gcap_graph_add_dependencies", __FILE__, __LINE__);
  return false;
}

/* The graph build_graph makes, checked node by node. */
static void check_built(const struct built *b) {
  assert_int_equal(gcap_graph_node_count(b->g), BUILT_NODES);
  assert_int_equal(gcap_graph_edge_count(b->g), BUILT_EDGES);
  gcap_node *nodes[BUILT_NODES];
  size_t count = BUILT_NODES;
  assert_ok(gcap_graph_get_nodes(b->g, nodes, &count));
  assert_int_equal(count, BUILT_NODES);
  for (size_t i = 0; i < BUILT_NODES; i++) assert_int_equal(gcap_node_get_type(nodes[i]), built_types[i]);
  gcap_graph *embedded = NULL;
  assert_ok(gcap_node_get_child_graph(b->sub, &embedded));
  assert_int_equal(gcap_graph_node_count(embedded), CHILD_NODES);
  assert_int_equal(gcap_graph_edge_count(embedded), CHILD_EDGES);
  assert_int_equal(gcap_graph_node_count(b->child), CHILD_NODES);
  size_t deps = 0;
  assert_ok(gcap_node_get_dependencies(b->empty, NULL, &deps));
  assert_int_equal(deps, 3);
  assert_ok(gcap_node_get_dependencies(b->stub, NULL, &deps));
  assert_int_equal(deps, 2);
  check_graph_invariants(b->g);
  check_graph_invariants(b->child);
}

/*
 * DEFERRED runs work at the wait: an allocation failing then fails the work, not the launch
 * call, and leaves that launch unfinished. Call right after the scenario stopped.
 */
static bool stopped_in_work_that_ran(void) { return strstr(gcap_last_error_message(), "failed when it ran") != NULL; }

/*
 * What a launch of the built graph computes (host_calls counts the two host nodes per launch;
 * launches < 0: a launch was left unfinished, so only the values are known).
 */
static void check_launch_results(struct fx *f, int launches) {
  float b[N];
  uint32_t c[N];
  assert_ok(gcap_context_synchronize(f->ctx)); /* the scenario may have stopped before its own synchronize */
  assert_ok(gcap_memcpy(f->ctx, b, f->dev_b, sizeof b, GCAP_MEMCPY_DEVICE_TO_HOST));
  assert_ok(gcap_memcpy(f->ctx, c, f->dev_c, sizeof c, GCAP_MEMCPY_DEVICE_TO_HOST));
  for (size_t i = 0; i < N; i++) {
    assert_true(f->host_out[i] == (float)i * 2.0f + 1.0f);
    assert_true(b[i] == 3.0f);
    assert_int_equal(c[i], 7u);
  }
  if (launches >= 0) assert_int_equal(f->host_calls, 2 * launches);
}

/* -------------------------------------------------------------- the driver */

/* One run of a scenario with allocation n + 1 failing; true when it completed without a failure. */
typedef bool (*scenario_fn)(long n);

static const char *what(void) { return backend_faults ? "backend call" : "allocation"; }

static void run_with_faults(const char *name, scenario_fn once) {
  stop_injecting();
  unsigned long live = gcap__registry_size();
  for (long n = 0; n < MAX_STEPS; n++) {
    fault_point = n;
    allocations_made = 0;
    bool completed = once(n);
    stop_injecting();
    if (completed && allocations_made > n) {
      print_error("%s, fault point %ld: every call succeeded although %s %ld failed\n", name, n, what(), n + 1);
      fail();
    }
    if (!completed && allocations_made <= n) {
      print_error("%s, fault point %ld: a call failed with no %s failing (%ld made)\n", name, n, what(),
                  allocations_made);
      fail();
    }
    if (gcap__registry_size() != live) {
      print_error("%s, fault point %ld: %lu live handles after cleanup, %lu before\n", name, n, gcap__registry_size(),
                  live);
      fail();
    }
    if (completed) {
      print_message("%s: completed at fault point %ld (%ld %ss)\n", name, n, allocations_made, what());
      return;
    }
  }
  print_error("%s never completed within %d fault points\n", name, MAX_STEPS);
  fail();
}

/* -------------------------------------------------------------- scenarios */

static bool context_create_once(long n) {
  gcap_context_options o;
  gcap_context_options_init(&o);
  o.backend = test_on_sim() ? GCAP_BACKEND_SIM : GCAP_BACKEND_AUTO;
  gcap_context *ctx = NULL;
  bool ok = false;
  inject_begin(n);
  STEP_OUT(gcap_context_create(&o, &ctx), "gcap_context_create", ctx);
  ok = true;
stop:
  inject_end();
  if (ok)
    assert_int_equal(gcap_context_backend(ctx), o.backend == GCAP_BACKEND_SIM ? GCAP_BACKEND_SIM : GCAP_BACKEND_CUDA);
  gcap_context_destroy(ctx);
  return ok;
}

static void test_context_create_oom(void **state) {
  (void)state;
  run_with_faults("context create", context_create_once);
}

static bool stream_event_once(long n) {
  gcap_context *ctx = new_context(false);
  gcap_stream *s = NULL, *s2 = NULL;
  gcap_event *e = NULL, *e2 = NULL;
  bool ok = false;
  inject_begin(n);
  STEP_OUT(gcap_stream_create(ctx, &s), "gcap_stream_create", s);
  STEP_OUT(gcap_event_create(ctx, &e), "gcap_event_create", e);
  STEP_OUT(gcap_stream_create(ctx, &s2), "gcap_stream_create", s2);
  STEP_OUT(gcap_event_create(ctx, &e2), "gcap_event_create", e2);
  STEP(gcap_event_record(e, s), "gcap_event_record");
  STEP(gcap_stream_wait_event(s2, e), "gcap_stream_wait_event");
  STEP(gcap_event_record(e2, s2), "gcap_event_record");
  STEP(gcap_stream_synchronize(s2), "gcap_stream_synchronize");
  STEP(gcap_event_query(e2), "gcap_event_query");
  STEP(gcap_stream_query(s), "gcap_stream_query");
  ok = true;
stop:
  inject_end();
  assert_ok(gcap_event_destroy(e2));
  assert_ok(gcap_event_destroy(e));
  assert_ok(gcap_stream_destroy(s2));
  assert_ok(gcap_stream_destroy(s));
  gcap_context_destroy(ctx);
  return ok;
}

static void test_stream_event_oom(void **state) {
  (void)state;
  run_with_faults("stream/event create", stream_event_once);
}

#define NUM_DEV 6
#define NUM_HOST 3

static bool memory_once(long n) {
  gcap_context *ctx = new_context(false);
  void *dev[NUM_DEV] = {0}, *host[NUM_HOST] = {0};
  size_t live = 0;
  bool ok = false;
  inject_begin(n);
  for (size_t i = 0; i < NUM_DEV; i++) {
    STEP_OUT(gcap_mem_alloc(ctx, 256 * (i + 1), &dev[i]), "gcap_mem_alloc", dev[i]);
    assert_int_equal(ctx->allocs.count, ++live);
  }
  for (size_t i = 0; i < NUM_HOST; i++) {
    STEP_OUT(gcap_host_alloc(ctx, 100 * (i + 1), &host[i]), "gcap_host_alloc", host[i]);
    assert_int_equal(ctx->allocs.count, ++live);
  }
  memset(host[0], 0x5a, 100);
  STEP(gcap_memcpy(ctx, dev[5], host[0], 100, GCAP_MEMCPY_HOST_TO_DEVICE), "gcap_memcpy");
  STEP(gcap_memcpy(ctx, dev[4], dev[5], 100, GCAP_MEMCPY_DEFAULT), "gcap_memcpy");
  STEP(gcap_memcpy(ctx, host[2], dev[4], 100, GCAP_MEMCPY_DEVICE_TO_HOST), "gcap_memcpy");
  for (size_t i = 0; i < 100; i++) assert_int_equal(((unsigned char *)host[2])[i], 0x5a);
  ok = true;
stop:
  inject_end();
  /* A failed allocation left the table as it was: every earlier allocation is still there. */
  assert_int_equal(ctx->allocs.count, live);
  for (size_t i = 0; i < NUM_DEV; i++) assert_ok(gcap_mem_free(ctx, dev[i]));
  for (size_t i = 0; i < NUM_HOST; i++) assert_ok(gcap_host_free(ctx, host[i]));
  assert_int_equal(ctx->allocs.count, 0);
  gcap_context_destroy(ctx);
  return ok;
}

static void test_memory_oom(void **state) {
  (void)state;
  run_with_faults("mem_alloc + host_alloc", memory_once);
}

/* Managed memory, plain and under strict memory: a failure leaves no allocation behind. */
static bool managed_once(long n) {
  gcap_sim_options so;
  gcap_sim_options_init(&so);
  so.strict_memory = n % 2 != 0;
  so.checks |= GCAP_SIM_CHECK_INIT; /* the INIT check's record of it may fail too */
  gcap_context *ctx = test_sim_context_create(&so);
  void *m[3] = {0};
  size_t live = 0;
  bool ok = false;
  inject_begin(n);
  for (size_t i = 0; i < 3; i++) {
    STEP_OUT(gcap_mem_alloc_managed(ctx, 300 * (i + 1), &m[i]), "gcap_mem_alloc_managed", m[i]);
    assert_int_equal(ctx->allocs.count, ++live);
    memset(m[i], 0x5a, 300); /* the host may touch it */
  }
  STEP(gcap_memcpy(ctx, m[2], m[0], 300, GCAP_MEMCPY_DEFAULT), "gcap_memcpy");
  ok = true;
stop:
  inject_end();
  assert_int_equal(ctx->allocs.count, live);
  for (size_t i = 0; i < 3; i++) assert_ok(gcap_mem_free(ctx, m[i]));
  assert_int_equal(ctx->allocs.count, 0);
  gcap_context_destroy(ctx);
  return ok;
}

static void test_managed_oom(void **state) {
  (void)state;
  if (!test_on_sim()) skip();
  run_with_faults("mem_alloc_managed", managed_once);
}

/* ------------------------------------------------ strict memory's allocator */

#define NUM_STRICT 12

/*
 * Strict memory keeps its own books of the mappings device memory comes from (one per region,
 * plus an extent list that grows as blocks split): a failure there fails the allocation it was
 * for and leaves every earlier block, and its contents, as they were.
 */
static bool strict_memory_once(long n) {
  gcap_sim_options so;
  gcap_sim_options_init(&so);
  so.strict_memory = true;
  gcap_context *ctx = test_sim_context_create(&so);
  void *dev[NUM_STRICT] = {0};
  unsigned char host[512], back[512];
  memset(host, 0x5a, sizeof host);
  bool ok = false, written = false;
  inject_begin(n);
  for (size_t i = 0; i < NUM_STRICT; i++) { /* block 5 is larger than a chunk: a region of its own */
    size_t bytes = i == 5 ? ((size_t)65 << 20) : 100 + 1000 * i;
    STEP_OUT(gcap_mem_alloc(ctx, bytes, &dev[i]), "gcap_mem_alloc", dev[i]);
  }
  STEP(gcap_memcpy(ctx, dev[4], host, sizeof host, GCAP_MEMCPY_HOST_TO_DEVICE), "gcap_memcpy");
  written = true;
  STEP(gcap_mem_free(ctx, dev[3]), "gcap_mem_free");
  dev[3] = NULL;
  STEP(gcap_mem_free(ctx, dev[5]), "gcap_mem_free");
  dev[5] = NULL;
  STEP_OUT(gcap_mem_alloc(ctx, 300, &dev[3]), "gcap_mem_alloc", dev[3]); /* splits the hole dev[3] left */
  STEP(gcap_memcpy(ctx, dev[3], dev[4], 300, GCAP_MEMCPY_DEVICE_TO_DEVICE), "gcap_memcpy");
  STEP(gcap_memcpy(ctx, back, dev[3], 300, GCAP_MEMCPY_DEVICE_TO_HOST), "gcap_memcpy");
  assert_memory_equal(back, host, 300);
  ok = true;
stop:
  inject_end();
  if (written) { /* whatever failed later left it alone */
    memset(back, 0, sizeof back);
    assert_ok(gcap_memcpy(ctx, back, dev[4], sizeof back, GCAP_MEMCPY_DEVICE_TO_HOST));
    assert_memory_equal(back, host, sizeof back);
  }
  for (size_t i = 0; i < NUM_STRICT; i++)
    if (dev[i]) assert_ok(gcap_mem_free(ctx, dev[i]));
  gcap_context_destroy(ctx);
  return ok;
}

static void test_strict_memory_oom(void **state) {
  (void)state;
  if (!test_on_sim()) skip();
  run_with_faults("strict memory alloc + free", strict_memory_once);
}

static size_t list_length(const struct gcap__link *head) {
  size_t n = 0;
  for (const struct gcap__link *l = head->next; l != head; l = l->next) n++;
  return n;
}

static bool module_once(long n) {
  gcap_context *ctx = new_context(false);
  gcap_module *m = NULL, *m2 = NULL;
  gcap_kernel *k[3] = {0};
  gcap_kernel *found = NULL;
  bool ok = false;
  inject_begin(n);
  STEP_OUT(gcap_module_load(ctx, &module_desc, &m), "gcap_module_load", m);
  assert_int_equal(list_length(&ctx->modules), 1);
  STEP_OUT(gcap_module_get_kernel(m, "axpb", &k[0]), "gcap_module_get_kernel", k[0]);
  STEP_OUT(gcap_module_get_kernel(m, "fill", &k[1]), "gcap_module_get_kernel", k[1]);
  STEP_OUT(gcap_module_get_kernel(m, "stub", &k[2]), "gcap_module_get_kernel", k[2]);
  /* A second module with the same names: a failure must leave the first one alone. */
  STEP_OUT(gcap_module_load(ctx, &module_desc, &m2), "gcap_module_load", m2);
  STEP_OUT(gcap_context_find_kernel(ctx, "fill", &found), "gcap_context_find_kernel", found);
  assert_ptr_equal(found, k[1]);
  assert_string_equal(gcap_kernel_name(k[0]), "axpb");
  assert_string_equal(gcap_kernel_name(k[2]), "stub");
  ok = true;
stop:
  inject_end();
  assert_int_equal(list_length(&ctx->modules), (m != NULL) + (m2 != NULL));
  if (m) {
    assert_true(gcap__registry_has(m, GCAP__H_MODULE));
    for (size_t i = 0; i < 3; i++) assert_true(gcap__registry_has(&m->kernels[i], GCAP__H_KERNEL));
    assert_int_equal(m->refs, 1);
    assert_ok(gcap_module_unload(m));
  }
  if (m2) assert_ok(gcap_module_unload(m2));
  gcap_context_destroy(ctx);
  return ok;
}

static void test_module_load_oom(void **state) {
  (void)state;
  run_with_faults("module load (3 kernels)", module_once);
}

static bool build_graph_once(long n) {
  struct fx f;
  struct built b;
  fx_setup(&f, false);
  unsigned module_refs = f.m->refs, event_refs = f.e->refs;
  inject_begin(n);
  bool ok = build_graph(&f, &b);
  inject_end();
  if (ok) {
    check_built(&b);
    /* Four kernel nodes (one in the child, one in the embedded copy) and two event nodes hold references. */
    assert_int_equal(f.m->refs, module_refs + 4);
    assert_int_equal(f.e->refs, event_refs + 2);
  } else {
    if (b.g) check_graph_invariants(b.g);
    if (b.child) check_graph_invariants(b.child);
  }
  built_destroy(&b);
  assert_int_equal(f.m->refs, module_refs);
  assert_int_equal(f.e->refs, event_refs);
  fx_teardown(&f);
  return ok;
}

static void test_build_graph_oom(void **state) {
  (void)state;
  run_with_faults("graph of every node type", build_graph_once);
}

#define DEP_NODES 10
#define DEP_PAIRS 16

struct edge_list {
  gcap_node *from[64], *to[64];
  size_t count;
  gcap_node *deps[DEP_NODES][DEP_NODES], *dependents[DEP_NODES][DEP_NODES];
  size_t num_deps[DEP_NODES], num_dependents[DEP_NODES];
};

static void read_edges(gcap_graph *g, gcap_node *const *nodes, struct edge_list *l) {
  memset(l, 0, sizeof *l);
  l->count = 64;
  assert_ok(gcap_graph_get_edges(g, l->from, l->to, &l->count));
  for (size_t i = 0; i < DEP_NODES; i++) {
    l->num_deps[i] = DEP_NODES;
    assert_ok(gcap_node_get_dependencies(nodes[i], l->deps[i], &l->num_deps[i]));
    l->num_dependents[i] = DEP_NODES;
    assert_ok(gcap_node_get_dependents(nodes[i], l->dependents[i], &l->num_dependents[i]));
  }
}

static bool add_dependencies_once(long n) {
  gcap_context *ctx = new_context(false);
  gcap_graph *g = NULL;
  gcap_node *nodes[DEP_NODES];
  assert_ok(gcap_graph_create(ctx, &g));
  for (size_t i = 0; i < DEP_NODES; i++)
    assert_ok(gcap_graph_add_empty_node(g, i == 1 ? &nodes[0] : NULL, i == 1, &nodes[i]));
  /* A chain 1 -> 2 -> ... -> 9 and a fan 0 -> 2..9: acyclic, no duplicates, node 0 fans out to 9. */
  gcap_node *from[DEP_PAIRS], *to[DEP_PAIRS];
  for (size_t i = 0; i < 8; i++) {
    from[i] = nodes[i + 1];
    to[i] = nodes[i + 2];
    from[8 + i] = nodes[0];
    to[8 + i] = nodes[i + 2];
  }
  struct edge_list before, after;
  read_edges(g, nodes, &before);
  assert_int_equal(before.count, 1);
  bool ok = false;
  inject_begin(n);
  STEP(gcap_graph_add_dependencies(g, from, to, DEP_PAIRS), "gcap_graph_add_dependencies");
  ok = true;
stop:
  inject_end();
  read_edges(g, nodes, &after);
  check_graph_invariants(g);
  if (ok) {
    assert_int_equal(after.count, 1 + DEP_PAIRS);
    assert_ptr_equal(after.from[0], nodes[0]);
    assert_ptr_equal(after.to[0], nodes[1]);
    for (size_t i = 0; i < DEP_PAIRS; i++) {
      assert_ptr_equal(after.from[1 + i], from[i]);
      assert_ptr_equal(after.to[1 + i], to[i]);
    }
    assert_int_equal(after.num_dependents[0], 9);
  } else {
    /* Nothing of the batch was added: the edge list and every node's lists are as before. */
    assert_memory_equal(&before, &after, sizeof before);
  }
  gcap_graph_destroy(g);
  gcap_context_destroy(ctx);
  return ok;
}

static void test_add_dependencies_oom(void **state) {
  (void)state;
  run_with_faults("add_dependencies batch", add_dependencies_once);
}

static bool destroy_node_once(long n) {
  struct fx f;
  struct built b;
  fx_setup(&f, false);
  assert_true(build_graph(&f, &b));
  /* Six nodes of different kinds, so the graph's list of retired nodes has to grow twice. */
  gcap_node *victims[] = {b.axpb, b.sub, b.rec, b.host, b.h2d, b.empty};
  gcap_node_type types[6];
  for (size_t i = 0; i < 6; i++) types[i] = gcap_node_get_type(victims[i]);
  size_t destroyed = 0;
  bool ok = false;
  inject_begin(n);
  for (; destroyed < 6; destroyed++) {
    gcap_node *v = victims[destroyed];
    size_t in = 0, out = 0;
    assert_ok(gcap_node_get_dependencies(v, NULL, &in));
    assert_ok(gcap_node_get_dependents(v, NULL, &out));
    size_t nodes = gcap_graph_node_count(b.g), edges = gcap_graph_edge_count(b.g);
    unsigned mrefs = f.m->refs, erefs = f.e->refs;
    unsigned long reg = gcap__registry_size();
    gcap_status st = gcap_graph_destroy_node(v);
    if (!check_call_(st, "gcap_graph_destroy_node", "gcap_graph_destroy_node(victim)", reg, __FILE__, __LINE__)) {
      /* The node is untouched: still live, with its edges. */
      assert_int_equal(gcap_node_get_type(v), types[destroyed]);
      assert_int_equal(gcap_graph_node_count(b.g), nodes);
      assert_int_equal(gcap_graph_edge_count(b.g), edges);
      assert_int_equal(f.m->refs, mrefs);
      assert_int_equal(f.e->refs, erefs);
      check_graph_invariants(b.g);
      goto stop;
    }
    assert_int_equal(gcap_graph_node_count(b.g), nodes - 1);
    assert_int_equal(gcap_graph_edge_count(b.g), edges - in - out);
    assert_int_equal(gcap_node_get_type(v), (gcap_node_type)-1);
  }
  ok = true;
stop:
  inject_end();
  check_graph_invariants(b.g);
  for (size_t i = 0; i < 6; i++) {
    gcap_node_type t = gcap_node_get_type(victims[i]);
    assert_int_equal(t, i < destroyed ? (gcap_node_type)-1 : types[i]);
  }
  assert_int_equal(gcap_graph_node_count(b.g), BUILT_NODES - destroyed);
  built_destroy(&b);
  fx_teardown(&f);
  return ok;
}

static void test_destroy_node_oom(void **state) {
  (void)state;
  run_with_faults("destroy_node", destroy_node_once);
}

/* Same types, edges (by position) and kernel arguments. */
static void check_same_graph(const gcap_graph *a, const gcap_graph *b) {
  assert_int_equal(a->nodes.count, b->nodes.count);
  assert_int_equal(a->edge_count, b->edge_count);
  for (size_t i = 0; i < a->nodes.count; i++) {
    const struct gcap_node *x = a->nodes.items[i], *y = b->nodes.items[i];
    assert_int_equal(x->type, y->type);
    if (x->type == GCAP_NODE_KERNEL) {
      assert_ptr_equal(x->p.kernel.kernel, y->p.kernel.kernel);
      for (size_t p = 0; p < x->p.kernel.kernel->info.num_params; p++) {
        assert_ptr_not_equal(x->p.kernel.args[p], y->p.kernel.args[p]);
        assert_memory_equal(x->p.kernel.args[p], y->p.kernel.args[p], x->p.kernel.kernel->param_sizes[p]);
      }
    }
    if (x->type == GCAP_NODE_GRAPH) {
      assert_ptr_not_equal(x->p.child, y->p.child);
      check_same_graph(x->p.child, y->p.child);
    }
  }
  for (size_t i = 0; i < a->edge_count; i++) {
    assert_int_equal(a->edges[i].from->index, b->edges[i].from->index);
    assert_int_equal(a->edges[i].to->index, b->edges[i].to->index);
  }
}

static bool clone_once(long n) {
  struct fx f;
  struct built b;
  fx_setup(&f, false);
  assert_true(build_graph(&f, &b));
  unsigned module_refs = f.m->refs, event_refs = f.e->refs;
  gcap_graph *copy = NULL;
  bool ok = false;
  inject_begin(n);
  STEP_OUT(gcap_graph_clone(b.g, &copy), "gcap_graph_clone", copy);
  ok = true;
stop:
  inject_end();
  if (ok) {
    check_graph_invariants(copy);
    check_same_graph(b.g, copy);
    /* Kernel nodes: axpb, stub and the child's fill; event nodes: record and wait. */
    assert_int_equal(f.m->refs, module_refs + 3);
    assert_int_equal(f.e->refs, event_refs + 2);
  } else {
    assert_int_equal(f.m->refs, module_refs);
    assert_int_equal(f.e->refs, event_refs);
  }
  gcap_graph_destroy(copy);
  assert_int_equal(f.m->refs, module_refs);
  assert_int_equal(f.e->refs, event_refs);
  check_built(&b);
  built_destroy(&b);
  fx_teardown(&f);
  return ok;
}

static void test_clone_oom(void **state) {
  (void)state;
  run_with_faults("clone of a graph with a child graph", clone_once);
}

static bool instantiate_once(long n, bool shuffle) {
  struct fx f;
  struct built b;
  fx_setup(&f, shuffle);
  assert_true(build_graph(&f, &b));
  unsigned module_refs = f.m->refs, event_refs = f.e->refs;
  gcap_exec *x = NULL;
  int launches = 0;
  bool ok = false;
  inject_begin(n);
  STEP_OUT(gcap_graph_instantiate(b.g, 0, &x), "gcap_graph_instantiate", x);
  STEP(gcap_exec_launch(x, f.s), "gcap_exec_launch");
  launches++;
  STEP(gcap_stream_synchronize(f.s), "gcap_stream_synchronize");
  /* The executable is a snapshot: it keeps working after its graph is gone. */
  gcap_graph_destroy(b.g);
  b.g = NULL;
  STEP(gcap_exec_launch(x, f.s), "gcap_exec_launch");
  launches++;
  STEP(gcap_stream_synchronize(f.s), "gcap_stream_synchronize");
  ok = true;
stop:;
  bool unfinished = !ok && stopped_in_work_that_ran();
  inject_end();
  if (unfinished) { /* a complete launch writes every result again */
    assert_ok(gcap_exec_launch(x, f.s));
    assert_ok(gcap_stream_synchronize(f.s));
    launches = -1;
  }
  if (x == NULL) {
    assert_int_equal(f.host_calls, 0);
    assert_int_equal(f.m->refs, module_refs);
    assert_int_equal(f.e->refs, event_refs);
  } else {
    assert_int_equal(gcap_exec_node_count(x), BUILT_EXEC_NODES);
    if (launches != 0) check_launch_results(&f, launches);
  }
  gcap_exec_destroy(x);
  if (b.g) {
    assert_int_equal(f.m->refs, module_refs);
    assert_int_equal(f.e->refs, event_refs);
  }
  built_destroy(&b);
  fx_teardown(&f);
  return ok;
}

static bool instantiate_capture_order_once(long n) { return instantiate_once(n, false); }
static bool instantiate_shuffled_once(long n) { return instantiate_once(n, true); }

static void test_instantiate_launch_oom(void **state) {
  (void)state;
  run_with_faults("instantiate + launch", instantiate_capture_order_once);
}

static void test_instantiate_launch_shuffled_oom(void **state) {
  (void)state;
  if (!test_on_sim()) skip();
  run_with_faults("instantiate + launch (shuffled replay)", instantiate_shuffled_once);
}

static size_t count_arrows(FILE *fp) {
  rewind(fp);
  size_t arrows = 0;
  int prev = 0, c;
  while ((c = fgetc(fp)) != EOF) {
    if (prev == '-' && c == '>') arrows++;
    prev = c;
  }
  return arrows;
}

static bool write_dot_once(long n) {
  struct fx f;
  struct built b;
  fx_setup(&f, false);
  assert_true(build_graph(&f, &b));
  FILE *plain = tmpfile(), *verbose = tmpfile();
  assert_non_null(plain);
  assert_non_null(verbose);
  bool ok = false;
  inject_begin(n);
  STEP(gcap_graph_write_dot(b.g, plain, 0), "gcap_graph_write_dot");
  STEP(gcap_graph_write_dot(b.g, verbose, GCAP_DOT_VERBOSE), "gcap_graph_write_dot");
  ok = true;
stop:
  inject_end();
  if (ok) {
    assert_int_equal(count_arrows(plain), BUILT_EDGES);
    assert_int_equal(count_arrows(verbose), BUILT_EDGES);
    rewind(plain);
    char head[16] = {0};
    assert_non_null(fgets(head, sizeof head, plain));
    assert_non_null(strstr(head, "digraph"));
  }
  fclose(plain);
  fclose(verbose);
  check_built(&b);
  built_destroy(&b);
  fx_teardown(&f);
  return ok;
}

static void test_write_dot_oom(void **state) {
  (void)state;
  run_with_faults("write_dot to a tmpfile", write_dot_once);
}

/* Race analysis, save and load: each fails cleanly at every allocation, and the loaded copy matches. */
static bool races_and_saving_once(long n) {
  struct fx f;
  struct built b;
  fx_setup(&f, false);
  assert_true(build_graph(&f, &b));
  size_t want = SIZE_MAX, races = SIZE_MAX, nodes = 0, loaded_nodes = 0;
  assert_ok(gcap_graph_find_races(b.g, NULL, &want));
  assert_ok(gcap_graph_get_nodes(b.g, NULL, &nodes));
  FILE *file = tmpfile();
  assert_non_null(file);
  bool json = gcap_graph_save(b.g, file) != GCAP_ERROR_NOT_SUPPORTED; /* a build without jansson */
  rewind(file);
  gcap_graph *copy = NULL;
  bool ok = false;
  inject_begin(n);
  STEP(gcap_graph_find_races(b.g, NULL, &races), "gcap_graph_find_races");
  if (json) {
    STEP(gcap_graph_save(b.g, file), "gcap_graph_save");
    rewind(file);
    STEP_OUT(gcap_graph_load(f.ctx, file, &copy), "gcap_graph_load", copy);
  }
  ok = true;
stop:
  inject_end();
  if (ok) {
    assert_int_equal(races, want);
    if (json) {
      assert_ok(gcap_graph_get_nodes(copy, NULL, &loaded_nodes));
      assert_int_equal(loaded_nodes, nodes);
    }
  }
  gcap_graph_destroy(copy);
  fclose(file);
  check_built(&b);
  built_destroy(&b);
  fx_teardown(&f);
  return ok;
}

static void test_races_and_saving_oom(void **state) {
  (void)state;
  run_with_faults("find_races, save, load", races_and_saving_once);
}

/* ------------------------------------------- a realistic pooled fork/join scenario */

/* What the scenario holds, so that cleanup can free whatever a failure left. */
struct scenario {
  struct fx f;
  gcap_stream *s2, *s3;
  gcap_event *fork, *left, *right;
  gcap_pool *pool;
  gcap_capture *cap;
  gcap_graph *g, *loaded, *plain, *copy;
  gcap_exec *x;
  gcap_node *fill_node, *plain_empty, *plain_host;
  float *tmp; /* graph memory, allocated and freed inside the graph */
  int launches;
  float fill_value;     /* what the exec's fill node writes */
  float launched_value; /* what the last launch wrote */
};

static void scenario_setup(struct scenario *sc) {
  memset(sc, 0, sizeof *sc);
  fx_setup(&sc->f, false);
  assert_ok(gcap_stream_create(sc->f.ctx, &sc->s2));
  assert_ok(gcap_stream_create(sc->f.ctx, &sc->s3));
  sc->fill_value = 3.0f;
}

/*
 * s1 allocates tmp from the pool and copies host_in into it; s2 (forked) runs axpb on tmp;
 * s3 (forked) fills dev_c with 7 and runs fill(dev_b, 3) ; s1 joins both, copies tmp to host_out,
 * frees tmp and calls a host function.
 */
static bool scenario_capture(struct scenario *sc) {
  struct fx *f = &sc->f;
  gcap_stream *s1 = f->s;
  gcap_dim3 grid = GCAP_DIM3(N / 32, 1, 1), block = GCAP_DIM3(32, 1, 1);
  uint32_t n = N;
  void *tmp = NULL;
  gcap_capture_options o;
  gcap_capture_options_init(&o);
  o.pool = sc->pool;
  STEP_OUT(gcap_capture_begin(s1, &o, &sc->cap), "gcap_capture_begin", sc->cap);
  STEP_OUT(gcap_event_create(f->ctx, &sc->fork), "gcap_event_create", sc->fork);
  STEP(gcap_mem_alloc_async(s1, N * sizeof(float), &tmp), "gcap_mem_alloc_async");
  sc->tmp = tmp;
  STEP(gcap_memcpy_async(s1, sc->tmp, f->host_in, N * sizeof(float), GCAP_MEMCPY_HOST_TO_DEVICE), "gcap_memcpy_async");
  STEP(gcap_event_record(sc->fork, s1), "gcap_event_record");
  STEP(gcap_stream_wait_event(sc->s2, sc->fork), "gcap_stream_wait_event");
  STEP(gcap_stream_wait_event(sc->s3, sc->fork), "gcap_stream_wait_event");
  void *axpb_args[] = {&sc->tmp, &n};
  STEP(gcap_launch_kernel(sc->s2, f->axpb, grid, block, 0, axpb_args), "gcap_launch_kernel");
  STEP(gcap_memset_d32_async(sc->s3, f->dev_c, 7u, N), "gcap_memset_d32_async");
  float *dev_b = f->dev_b;
  void *fill_args[] = {&dev_b, &sc->fill_value, &n};
  STEP(gcap_launch_kernel(sc->s3, f->fill, grid, block, 0, fill_args), "gcap_launch_kernel");
  STEP_OUT(gcap_event_create(f->ctx, &sc->left), "gcap_event_create", sc->left);
  STEP_OUT(gcap_event_create(f->ctx, &sc->right), "gcap_event_create", sc->right);
  STEP(gcap_event_record(sc->left, sc->s2), "gcap_event_record");
  STEP(gcap_event_record(sc->right, sc->s3), "gcap_event_record");
  STEP(gcap_stream_wait_event(s1, sc->left), "gcap_stream_wait_event");
  STEP(gcap_stream_wait_event(s1, sc->right), "gcap_stream_wait_event");
  STEP(gcap_memcpy_async(s1, f->host_out, sc->tmp, N * sizeof(float), GCAP_MEMCPY_DEVICE_TO_HOST), "gcap_memcpy_async");
  STEP(gcap_mem_free_async(s1, sc->tmp), "gcap_mem_free_async");
  STEP(gcap_launch_host_func(s1, count_call, &f->host_calls), "gcap_launch_host_func");
  STEP_OUT(gcap_capture_end(sc->cap, &sc->g), "gcap_capture_end", sc->g);
  return true;
stop:
  return false;
}

#define SCENARIO_NODES 8
/* In capture order; edges: alloc->h2d->{axpb, memset}, memset->fill, {h2d, axpb, fill}->d2h->free->host
   (the joins add to s1's frontier, which still holds h2d). */
static const gcap_node_type scenario_types[SCENARIO_NODES] = {
    GCAP_NODE_MEM_ALLOC, GCAP_NODE_MEMCPY, GCAP_NODE_KERNEL,   GCAP_NODE_MEMSET,
    GCAP_NODE_KERNEL,    GCAP_NODE_MEMCPY, GCAP_NODE_MEM_FREE, GCAP_NODE_HOST,
};

/* Checks the captured graph's shape and finds its fill kernel node (dev_b's writer). */
static bool find_fill_node(struct scenario *sc) {
  gcap_node *nodes[16];
  size_t count = 16;
  STEP(gcap_graph_get_nodes(sc->g, nodes, &count), "gcap_graph_get_nodes");
  assert_int_equal(count, SCENARIO_NODES);
  assert_int_equal(gcap_graph_edge_count(sc->g), 9);
  for (size_t i = 0; i < count; i++) assert_int_equal(gcap_node_get_type(nodes[i]), scenario_types[i]);
  for (size_t i = 0; i < count; i++) {
    gcap_kernel_node_params kp;
    if (gcap_node_get_type(nodes[i]) != GCAP_NODE_KERNEL) continue;
    STEP(gcap_node_get_kernel_params(nodes[i], &kp), "gcap_node_get_kernel_params");
    if (kp.kernel == sc->f.fill) sc->fill_node = nodes[i];
  }
  assert_non_null(sc->fill_node);
  return true;
stop:
  return false;
}

static bool scenario_launch(struct scenario *sc) {
  STEP(gcap_exec_launch(sc->x, sc->f.s), "gcap_exec_launch");
  sc->launches++; /* IMMEDIATE runs the launch before it returns, DEFERRED at the synchronize */
  sc->launched_value = sc->fill_value;
  STEP(gcap_stream_synchronize(sc->f.s), "gcap_stream_synchronize");
  return true;
stop:
  return false;
}

/* Update the fill value three ways: exec setter, graph setter + whole-graph update. */
static bool scenario_update(struct scenario *sc) {
  float *dev_b = sc->f.dev_b;
  uint32_t n = N;
  float five = 5.0f, six = 6.0f;
  void *args5[] = {&dev_b, &five, &n}, *args6[] = {&dev_b, &six, &n};
  gcap_kernel_node_params kp = {sc->f.fill, GCAP_DIM3(N / 32, 1, 1), GCAP_DIM3(32, 1, 1), 0, args5};
  STEP(gcap_exec_kernel_node_set_params(sc->x, sc->fill_node, &kp), "gcap_exec_kernel_node_set_params");
  sc->fill_value = 5.0f;
  if (!scenario_launch(sc)) return false;
  kp.args = args6;
  STEP(gcap_node_set_kernel_params(sc->fill_node, &kp), "gcap_node_set_kernel_params");
  gcap_exec_update_info info;
  STEP(gcap_exec_update(sc->x, sc->g, &info), "gcap_exec_update");
  assert_int_equal(info.result, GCAP_EXEC_UPDATE_SUCCESS);
  sc->fill_value = 6.0f;
  return scenario_launch(sc);
stop:
  return false;
}

/* Race analysis, DOT, save and load of the captured graph; clone of a plain one. */
static bool scenario_outputs(struct scenario *sc) {
  size_t races = SIZE_MAX;
  FILE *dot = tmpfile(), *captured = tmpfile(), *saved = tmpfile();
  assert_non_null(dot);
  assert_non_null(captured);
  assert_non_null(saved);
  bool ok = false;
  STEP(gcap_graph_find_races(sc->g, NULL, &races), "gcap_graph_find_races");
  assert_int_equal(races, 0);
  STEP(gcap_graph_write_dot(sc->g, dot, GCAP_DOT_VERBOSE), "gcap_graph_write_dot");
  STEP_OUT(gcap_graph_create(sc->f.ctx, &sc->plain), "gcap_graph_create", sc->plain);
  STEP_OUT(gcap_graph_add_empty_node(sc->plain, NULL, 0, &sc->plain_empty), "gcap_graph_add_empty_node",
           sc->plain_empty);
  gcap_host_node_params hp = {count_call, &sc->f.host_calls};
  STEP_OUT(gcap_graph_add_host_node(sc->plain, &sc->plain_empty, 1, &hp, &sc->plain_host), "gcap_graph_add_host_node",
           sc->plain_host);
  STEP_OUT(gcap_graph_clone(sc->plain, &sc->copy), "gcap_graph_clone", sc->copy);
  assert_int_equal(gcap_graph_node_count(sc->copy), 2);
  assert_int_equal(gcap_graph_edge_count(sc->copy), 1);
  /* A graph that allocates saves, but cannot be loaded (its addresses would change): load the plain one. */
  gcap_status st = gcap_graph_save(sc->g, captured);
  if (st != GCAP_ERROR_NOT_SUPPORTED) { /* a build without jansson */
    STEP(st, "gcap_graph_save");
    STEP(gcap_graph_save(sc->plain, saved), "gcap_graph_save");
    rewind(saved);
    STEP_OUT(gcap_graph_load(sc->f.ctx, saved, &sc->loaded), "gcap_graph_load", sc->loaded);
    assert_int_equal(gcap_graph_node_count(sc->loaded), 2);
    assert_int_equal(gcap_graph_edge_count(sc->loaded), 1);
  }
  ok = true;
stop:
  fclose(dot);
  fclose(captured);
  fclose(saved);
  return ok;
}

static void check_scenario_memory(struct scenario *sc) {
  float b[N];
  uint32_t c[N];
  assert_ok(gcap_context_synchronize(sc->f.ctx)); /* the scenario may have stopped before its own synchronize */
  assert_ok(gcap_memcpy(sc->f.ctx, b, sc->f.dev_b, sizeof b, GCAP_MEMCPY_DEVICE_TO_HOST));
  assert_ok(gcap_memcpy(sc->f.ctx, c, sc->f.dev_c, sizeof c, GCAP_MEMCPY_DEVICE_TO_HOST));
  for (size_t i = 0; i < N; i++) {
    assert_true(sc->f.host_out[i] == (float)i * 2.0f + 1.0f);
    assert_true(b[i] == sc->launched_value);
    assert_int_equal(c[i], 7u);
  }
  assert_int_equal(sc->f.host_calls, sc->launches);
}

/* A stream destroy also reports queued work that failed at an earlier fault point (DEFERRED keeps it
 * for the next wait); the stream is gone either way. */
static void destroy_stream_after_faults(gcap_stream *s) {
  gcap_status st = gcap_stream_destroy(s);
  assert_true(st == GCAP_SUCCESS || st == GCAP_ERROR_OUT_OF_MEMORY);
  assert_int_equal(gcap_stream_query(s), GCAP_ERROR_INVALID_HANDLE);
}

static void scenario_teardown(struct scenario *sc) {
  stop_injecting();
  gcap_capture_destroy(sc->cap);
  gcap_exec_destroy(sc->x);
  gcap_graph_destroy(sc->g);
  gcap_graph_destroy(sc->loaded);
  gcap_graph_destroy(sc->plain);
  gcap_graph_destroy(sc->copy);
  gcap_pool_release(sc->pool);
  assert_ok(gcap_event_destroy(sc->fork));
  assert_ok(gcap_event_destroy(sc->left));
  assert_ok(gcap_event_destroy(sc->right));
  destroy_stream_after_faults(sc->s2);
  destroy_stream_after_faults(sc->s3);
  fx_teardown(&sc->f);
}

static bool pooled_scenario_once(long n) {
  struct scenario sc;
  scenario_setup(&sc);
  bool ok = false;
  inject_begin(n);
  STEP_OUT(gcap_pool_create(sc.f.ctx, &sc.pool), "gcap_pool_create", sc.pool);
  if (!scenario_capture(&sc)) goto stop;
  if (!find_fill_node(&sc)) goto stop;
  STEP_OUT(gcap_graph_instantiate(sc.g, 0, &sc.x), "gcap_graph_instantiate", sc.x);
  STEP(gcap_exec_upload(sc.x, sc.f.s), "gcap_exec_upload");
  if (!scenario_launch(&sc) || !scenario_update(&sc) || !scenario_outputs(&sc)) goto stop;
  ok = true;
stop:;
  bool unfinished = !ok && stopped_in_work_that_ran();
  inject_end();
  if (unfinished) { /* a complete launch writes every result again */
    assert_ok(gcap_exec_launch(sc.x, sc.f.s));
    assert_ok(gcap_stream_synchronize(sc.f.s));
  }
  if (sc.launches > 0) check_scenario_memory(&sc);
  if (sc.pool) {
    gcap_pool_stats stats;
    assert_ok(gcap_pool_get_stats(sc.pool, &stats));
    assert_int_equal(stats.used_bytes, 0); /* the graph freed tmp at the end of every launch */
  }
  scenario_teardown(&sc);
  return ok;
}

static void test_pooled_scenario_oom(void **state) {
  (void)state;
  run_with_faults("pooled fork/join capture, launch, update, outputs", pooled_scenario_once);
}

/* ------------------------------------------------------- stream race check */

#define RACE_STREAMS 10 /* more than the check's first clocks hold */

struct race_fx {
  gcap_context *ctx;
  gcap_kernel *fill;
  unsigned char *a, *b, *c; /* a: the kernel's; c: one piece per stream */
  gcap_exec *x;             /* a memset node on b */
};

static void race_fx_setup(struct race_fx *r) {
  gcap_sim_options so;
  gcap_sim_options_init(&so);
  so.check_races = true;
  r->ctx = test_sim_context_create(&so);
  gcap_module *m = NULL;
  assert_ok(gcap_module_load(r->ctx, &module_desc, &m));
  assert_ok(gcap_module_get_kernel(m, "fill", &r->fill));
  r->a = test_dev_alloc(r->ctx, N * sizeof(float));
  r->b = test_dev_alloc(r->ctx, 1024);
  r->c = test_dev_alloc(r->ctx, RACE_STREAMS * 8);
  gcap_graph *g = NULL;
  gcap_node *n = NULL;
  gcap_memset_node_params p = {r->b, 0, 1, 64, 1, 64};
  assert_ok(gcap_graph_create(r->ctx, &g));
  assert_ok(gcap_graph_add_memset_node(g, NULL, 0, &p, &n));
  assert_ok(gcap_graph_instantiate(g, 0, &r->x));
  gcap_graph_destroy(g);
}

/* Whatever failed, the check works on: after a synchronize, unordered work on a is refused, ordered work is not. */
static void check_race_state(struct race_fx *r, gcap_stream *s) {
  gcap_stream *mine = NULL, *t = NULL;
  if (!s) assert_ok(gcap_stream_create(r->ctx, &mine));
  assert_ok(gcap_stream_create(r->ctx, &t));
  assert_ok(gcap_context_synchronize(r->ctx));
  assert_ok(gcap_memset_async(s ? s : mine, r->a, 1, 8));
  assert_status(gcap_memset_async(t, r->a + 4, 2, 8), GCAP_ERROR_INVALID_VALUE);
  assert_ok(gcap_memset_async(t, r->a + 8, 2, 8));
  assert_ok(gcap_stream_destroy(t));
  assert_ok(gcap_stream_destroy(mine));
}

static bool stream_race_once(long n) {
  struct race_fx r;
  race_fx_setup(&r);
  gcap_stream *s[RACE_STREAMS] = {0};
  gcap_event *e = NULL;
  float *dev_a = (float *)(void *)r.a, three = 3.0f;
  uint32_t count = N;
  void *fill_args[] = {&dev_a, &three, &count};
  bool ok = false;
  inject_begin(n);
  for (size_t i = 0; i < RACE_STREAMS; i++) STEP_OUT(gcap_stream_create(r.ctx, &s[i]), "gcap_stream_create", s[i]);
  for (size_t i = 0; i < RACE_STREAMS; i++) STEP(gcap_memset_async(s[i], r.c + i * 8, 0, 8), "gcap_memset_async");
  STEP_OUT(gcap_event_create(r.ctx, &e), "gcap_event_create", e);
  STEP(gcap_launch_kernel(s[0], r.fill, GCAP_DIM3(1, 1, 1), GCAP_DIM3(N, 1, 1), 0, fill_args), "gcap_launch_kernel");
  STEP(gcap_event_record(e, s[0]), "gcap_event_record");
  STEP(gcap_stream_wait_event(s[1], e), "gcap_stream_wait_event");
  STEP(gcap_memcpy_async(s[1], r.b + 128, r.a, 64, GCAP_MEMCPY_DEVICE_TO_DEVICE), "gcap_memcpy_async");
  for (size_t i = 0; i < 40; i++) STEP(gcap_memset_async(s[2], r.b + 256 + (i % 12) * 8, 0, 8), "gcap_memset_async");
  STEP(gcap_exec_launch(r.x, s[3]), "gcap_exec_launch");
  STEP(gcap_exec_launch(r.x, s[4]), "gcap_exec_launch");
  STEP(gcap_stream_synchronize(s[2]), "gcap_stream_synchronize");
  ok = true;
stop:
  inject_end();
  check_race_state(&r, s[0]);
  for (size_t i = 0; i < RACE_STREAMS; i++)
    if (s[i]) assert_ok(gcap_stream_destroy(s[i]));
  if (e) assert_ok(gcap_event_destroy(e));
  gcap_exec_destroy(r.x);
  gcap_context_destroy(r.ctx);
  return ok;
}

static void test_stream_race_check_oom(void **state) {
  (void)state;
  if (!test_on_sim()) skip();
  run_with_faults("stream race check: ten streams, events, kernels, launches", stream_race_once);
}

/* ------------------------------------------ the CUDA 12 graph API: one scenario */

/*
 * A WHILE node counting down in its body, a 3-D copy, allocation nodes by hand, a kernel with a
 * priority, instantiation with the priority flag and a launch; then a child graph's executable
 * given another child's values, and an eager 2-D copy. Each call succeeds or fails cleanly.
 */
static bool graph_api_12_once(long n) {
  struct fx f;
  fx_setup(&f, false);
  const gcap_kernel_def def = TEST_COUNTDOWN_KERNEL;
  gcap_module_desc d = {.kernels = &def, .num_kernels = 1};
  gcap_module *m = NULL;
  gcap_kernel *countdown = NULL;
  assert_ok(gcap_module_load(f.ctx, &d, &m));
  assert_ok(gcap_module_get_kernel(m, "countdown", &countdown));
  uint32_t three = 3, *counter = f.dev_c;
  assert_ok(gcap_memcpy(f.ctx, counter, &three, sizeof three, GCAP_MEMCPY_HOST_TO_DEVICE));
  gcap_graph *g = NULL, *body[1] = {NULL}, *child = NULL, *other = NULL, *parent = NULL;
  gcap_node *loop = NULL, *tick = NULL, *copy = NULL, *alloc = NULL, *freed = NULL, *cn = NULL;
  gcap_exec *x = NULL, *px = NULL;
  gcap_conditional_handle h = 0;
  bool ok = false;
  inject_begin(n);
  STEP_OUT(gcap_graph_create(f.ctx, &g), "gcap_graph_create", g);
  STEP(gcap_graph_conditional_handle_create(g, 1, GCAP_GRAPH_COND_ASSIGN_DEFAULT, &h),
       "gcap_graph_conditional_handle_create");
  gcap_conditional_node_params cp = {h, GCAP_CONDITIONAL_WHILE, 1, body};
  STEP_OUT(gcap_graph_add_conditional_node(g, NULL, 0, &cp, &loop), "gcap_graph_add_conditional_node", loop);
  void *args[] = {&counter, &h};
  gcap_kernel_node_params kp = {countdown, {1, 1, 1}, {1, 1, 1}, 0, args};
  STEP_OUT(gcap_graph_add_kernel_node(body[0], NULL, 0, &kp, &tick), "gcap_graph_add_kernel_node", tick);
  gcap_kernel_node_attr_value urgent = {.priority = -1};
  STEP(gcap_graph_kernel_node_set_attribute(tick, GCAP_KERNEL_NODE_ATTR_PRIORITY, &urgent),
       "gcap_graph_kernel_node_set_attribute");
  gcap_memcpy_3d_params p3;
  memset(&p3, 0, sizeof p3);
  p3.src = (gcap_pitched_ptr){f.dev_a, 16 * sizeof(float), 16 * sizeof(float), 4};
  p3.dst = (gcap_pitched_ptr){f.dev_b, 16 * sizeof(float), 16 * sizeof(float), 4};
  p3.extent = (gcap_extent){8 * sizeof(float), 4, 1};
  p3.kind = GCAP_MEMCPY_DEVICE_TO_DEVICE;
  STEP_OUT(gcap_graph_add_memcpy_3d_node(g, &loop, 1, &p3, &copy), "gcap_graph_add_memcpy_3d_node", copy);
  gcap_mem_alloc_node_params ap = {256, NULL, NULL};
  STEP_OUT(gcap_graph_add_mem_alloc_node(g, &copy, 1, &ap, &alloc), "gcap_graph_add_mem_alloc_node", alloc);
  STEP_OUT(gcap_graph_add_mem_free_node(g, &alloc, 1, ap.dptr, &freed), "gcap_graph_add_mem_free_node", freed);
  STEP_OUT(gcap_graph_instantiate(g, GCAP_INSTANTIATE_USE_NODE_PRIORITY, &x), "gcap_graph_instantiate", x);
  STEP(gcap_exec_launch(x, f.s), "gcap_exec_launch");
  STEP(gcap_stream_synchronize(f.s), "gcap_stream_synchronize");
  /* An executable's child-graph node takes another graph's values. */
  STEP_OUT(gcap_graph_create(f.ctx, &child), "gcap_graph_create", child);
  STEP_OUT(gcap_graph_add_memcpy_3d_node(child, NULL, 0, &p3, &copy), "gcap_graph_add_memcpy_3d_node", copy);
  STEP_OUT(gcap_graph_clone(child, &other), "gcap_graph_clone", other);
  STEP_OUT(gcap_graph_create(f.ctx, &parent), "gcap_graph_create", parent);
  STEP_OUT(gcap_graph_add_child_graph_node(parent, NULL, 0, child, &cn), "gcap_graph_add_child_graph_node", cn);
  STEP_OUT(gcap_graph_instantiate(parent, 0, &px), "gcap_graph_instantiate", px);
  STEP(gcap_exec_child_graph_node_set_params(px, cn, other), "gcap_exec_child_graph_node_set_params");
  STEP(gcap_memcpy_2d_async(f.s, f.dev_b, 16 * sizeof(float), f.dev_a, 16 * sizeof(float), 8 * sizeof(float), 4,
                            GCAP_MEMCPY_DEVICE_TO_DEVICE),
       "gcap_memcpy_2d_async");
  STEP(gcap_stream_synchronize(f.s), "gcap_stream_synchronize");
  ok = true;
stop:
  inject_end();
  if (ok) {
    uint32_t left = 9;
    assert_ok(gcap_memcpy(f.ctx, &left, counter, sizeof left, GCAP_MEMCPY_DEVICE_TO_HOST));
    assert_int_equal(left, 0);
  }
  gcap_exec_destroy(x);
  gcap_exec_destroy(px);
  gcap_graph *made[] = {g, child, other, parent};
  for (size_t i = 0; i < 4; i++) gcap_graph_destroy(made[i]);
  fx_teardown(&f);
  return ok;
}

static void test_graph_api_12_oom(void **state) {
  (void)state;
  if (!test_on_sim()) skip(); /* kernels set conditionals only on the simulator */
  run_with_faults("conditional, 3-D copy, allocation nodes, priority, child setter, 2-D copy", graph_api_12_once);
}

/*
 * A kernel run from its PTX, every check on, blocks over two worker threads: the load (parse,
 * lowering, module variables), the launch (warps, stacks, shadow memory) and the variable's copy
 * under every fault. nvcc -ptx -arch=compute_75 of:
 *   __device__ unsigned total;
 *   __device__ __noinline__ unsigned twice(unsigned v) { return 2 * v; }
 *   extern "C" __global__ void sum(const unsigned *in, unsigned *out) {
 *     __shared__ unsigned part[64];  part[t] = twice(in[blockIdx.x * 64 + t]);  __syncthreads();
 *     if (t == 0) { s = the sum of part;  out[blockIdx.x] = s;  atomicAdd(&total, s); }
 *   }
 */
static const char sum_ptx[] = ".version 9.0\n"
                              ".target sm_75\n"
                              ".address_size 64\n"
                              ".global .align 4 .u32 total;\n"
                              ".func (.param .b32 func_retval0) _Z5twicej(\n"
                              ".param .b32 _Z5twicej_param_0\n"
                              ")\n"
                              "{\n"
                              ".reg .b32 %r<3>;\n"
                              "ld.param.u32 %r1, [_Z5twicej_param_0];\n"
                              "shl.b32 %r2, %r1, 1;\n"
                              "st.param.b32 [func_retval0+0], %r2;\n"
                              "ret;\n"
                              "}\n"
                              ".visible .entry sum(\n"
                              ".param .u64 sum_param_0,\n"
                              ".param .u64 sum_param_1\n"
                              ")\n"
                              "{\n"
                              ".reg .pred %p<3>;\n"
                              ".reg .b32 %r<24>;\n"
                              ".reg .b64 %rd<10>;\n"
                              ".shared .align 4 .b8 _ZZ3sumE4part[256];\n"
                              "ld.param.u64 %rd3, [sum_param_0];\n"
                              "ld.param.u64 %rd2, [sum_param_1];\n"
                              "mov.u32 %r1, %ctaid.x;\n"
                              "shl.b32 %r8, %r1, 6;\n"
                              "mov.u32 %r9, %tid.x;\n"
                              "add.s32 %r10, %r8, %r9;\n"
                              "cvta.to.global.u64 %rd4, %rd3;\n"
                              "mul.wide.u32 %rd5, %r10, 4;\n"
                              "add.s64 %rd6, %rd4, %rd5;\n"
                              "ld.global.u32 %r11, [%rd6];\n"
                              "{ // callseq 0, 0\n"
                              ".reg .b32 temp_param_reg;\n"
                              ".param .b32 param0;\n"
                              "st.param.b32 [param0+0], %r11;\n"
                              ".param .b32 retval0;\n"
                              "call.uni (retval0), \n"
                              "_Z5twicej, \n"
                              "(\n"
                              "param0\n"
                              ");\n"
                              "ld.param.b32 %r12, [retval0+0];\n"
                              "} // callseq 0\n"
                              "shl.b32 %r13, %r9, 2;\n"
                              "mov.u32 %r21, _ZZ3sumE4part;\n"
                              "add.s32 %r15, %r21, %r13;\n"
                              "st.shared.u32 [%r15], %r12;\n"
                              "bar.sync 0;\n"
                              "setp.ne.s32 %p1, %r9, 0;\n"
                              "@%p1 bra $L__BB1_4;\n"
                              "cvta.to.global.u64 %rd1, %rd2;\n"
                              "mov.u32 %r22, 0;\n"
                              "mov.u32 %r23, %r22;\n"
                              "$L__BB1_2:\n"
                              ".pragma \"nounroll\";\n"
                              "ld.shared.u32 %r19, [%r21];\n"
                              "add.s32 %r23, %r19, %r23;\n"
                              "add.s32 %r21, %r21, 4;\n"
                              "add.s32 %r22, %r22, 1;\n"
                              "setp.ne.s32 %p2, %r22, 64;\n"
                              "@%p2 bra $L__BB1_2;\n"
                              "mul.wide.u32 %rd7, %r1, 4;\n"
                              "add.s64 %rd8, %rd1, %rd7;\n"
                              "st.global.u32 [%rd8], %r23;\n"
                              "mov.u64 %rd9, total;\n"
                              "atom.global.add.u32 %r20, [%rd9], %r23;\n"
                              "$L__BB1_4:\n"
                              "ret;\n"
                              "}\n";

/* cooperative: the same blocks as one cooperative launch (all resident at once, a grid workspace). */
static bool ptx_run_once(long n, bool cooperative) {
  gcap_sim_options so;
  gcap_sim_options_init(&so);
  so.kernels = GCAP_SIM_KERNELS_PTX;
  so.checks = GCAP_SIM_CHECK_MEMORY | GCAP_SIM_CHECK_SYNC | GCAP_SIM_CHECK_SHARED_RACES | GCAP_SIM_CHECK_INIT;
  so.threads = 2;
  gcap_context_options o;
  gcap_context_options_init(&o);
  o.backend = GCAP_BACKEND_SIM;
  o.sim = &so;
  gcap_context *ctx = NULL;
  assert_ok(gcap_context_create(&o, &ctx));
  unsigned in[4 * 64], out[4] = {0}, total = 0;
  for (unsigned i = 0; i < 4 * 64; i++) in[i] = i;
  gcap_module_desc d = {.image = sum_ptx, .image_size = sizeof sum_ptx};
  gcap_module *m = NULL;
  gcap_kernel *k = NULL;
  gcap_stream *s = NULL;
  void *din = NULL, *dout = NULL, *dtotal = NULL;
  bool ok = false;
  inject_begin(n);
  STEP_OUT(gcap_module_load(ctx, &d, &m), "gcap_module_load", m);
  STEP_OUT(gcap_module_get_kernel(m, "sum", &k), "gcap_module_get_kernel", k);
  STEP(gcap_module_get_global(m, "total", &dtotal, NULL), "gcap_module_get_global");
  STEP(gcap_mem_alloc(ctx, sizeof in, &din), "gcap_mem_alloc");
  STEP(gcap_mem_alloc(ctx, sizeof out, &dout), "gcap_mem_alloc");
  STEP(gcap_memcpy(ctx, din, in, sizeof in, GCAP_MEMCPY_HOST_TO_DEVICE), "gcap_memcpy");
  STEP_OUT(gcap_stream_create(ctx, &s), "gcap_stream_create", s);
  void *args[] = {&din, &dout};
  if (cooperative)
    STEP(gcap_launch_cooperative_kernel(s, k, GCAP_DIM3(4, 1, 1), GCAP_DIM3(64, 1, 1), 0, args),
         "gcap_launch_cooperative_kernel");
  else STEP(gcap_launch_kernel(s, k, GCAP_DIM3(4, 1, 1), GCAP_DIM3(64, 1, 1), 0, args), "gcap_launch_kernel");
  STEP(gcap_stream_synchronize(s), "gcap_stream_synchronize");
  STEP(gcap_memcpy(ctx, out, dout, sizeof out, GCAP_MEMCPY_DEVICE_TO_HOST), "gcap_memcpy");
  STEP(gcap_memcpy(ctx, &total, dtotal, sizeof total, GCAP_MEMCPY_DEVICE_TO_HOST), "gcap_memcpy");
  ok = true;
stop:
  inject_end();
  if (ok) {
    for (unsigned b = 0; b < 4; b++) assert_int_equal(out[b], 2 * (64 * 64 * b + 63 * 64 / 2));
    assert_int_equal(total, 2 * (4 * 64) * (4 * 64 - 1) / 2);
  }
  gcap_context_destroy(ctx);
  return ok;
}

static bool ptx_once(long n) { return ptx_run_once(n, false); }
static bool ptx_cooperative_once(long n) { return ptx_run_once(n, true); }

static void test_ptx_oom(void **state) {
  (void)state;
  if (!test_on_sim()) skip();
  run_with_faults("PTX kernel", ptx_once);
}

static void test_ptx_cooperative_oom(void **state) {
  (void)state;
  if (!test_on_sim()) skip();
  run_with_faults("PTX kernel, cooperative launch", ptx_cooperative_once);
}

/*
 * DEFERRED: a free waits for the queued work first; when that wait cannot run (no memory for
 * it), the free fails and frees nothing, so the work still finds its memory and code.
 */
static gcap_context *deferred_strict_context(void) {
  gcap_sim_options so;
  gcap_sim_options_init(&so);
  so.exec = GCAP_SIM_EXEC_DEFERRED;
  so.strict_memory = true;
  so.kernels = GCAP_SIM_KERNELS_PTX;
  gcap_context_options o;
  gcap_context_options_init(&o);
  o.backend = GCAP_BACKEND_SIM;
  o.sim = &so;
  gcap_context *ctx = NULL;
  assert_ok(gcap_context_create(&o, &ctx));
  return ctx;
}

static void expect_wait_oom(gcap_status st, const char *function) {
  stop_injecting();
  assert_int_equal(st, GCAP_ERROR_OUT_OF_MEMORY);
  assert_non_null(strstr(gcap_last_error_message(), function));
  assert_non_null(strstr(gcap_last_error_message(), "no memory to wait for the streams"));
}

static void test_deferred_free_wait_oom(void **state) {
  (void)state;
  if (!test_on_sim()) skip();
  gcap_context *ctx = deferred_strict_context();
  enum { BYTES = 4096 };
  unsigned char *host = NULL, seen[BYTES];
  void *dev = NULL;
  gcap_stream *s = NULL;
  assert_ok(gcap_mem_alloc(ctx, BYTES, &dev));
  assert_ok(gcap_host_alloc(ctx, BYTES, (void **)&host));
  assert_ok(gcap_stream_create(ctx, &s));
  assert_ok(gcap_memset_async(s, dev, 0xab, BYTES));
  assert_ok(gcap_memcpy_async(s, host, dev, BYTES, GCAP_MEMCPY_DEVICE_TO_HOST));
  gcap__alloc_fail_after(-1);
  gcap__alloc_fail_after(0);
  expect_wait_oom(gcap_mem_free(ctx, dev), "gcap_mem_free");
  gcap__alloc_fail_after(-1);
  gcap__alloc_fail_after(0);
  expect_wait_oom(gcap_host_free(ctx, host), "gcap_host_free");
  assert_ok(gcap_stream_synchronize(s)); /* the queued fill and copy still had their memory */
  for (size_t i = 0; i < BYTES; i++) assert_int_equal(host[i], 0xab);
  assert_ok(gcap_memcpy(ctx, seen, dev, BYTES, GCAP_MEMCPY_DEVICE_TO_HOST));
  assert_int_equal(seen[BYTES - 1], 0xab);
  assert_ok(gcap_mem_free(ctx, dev));
  assert_ok(gcap_host_free(ctx, host));
  assert_ok(gcap_stream_destroy(s));
  gcap_context_destroy(ctx);
}

static void test_deferred_unload_wait_oom(void **state) {
  (void)state;
  if (!test_on_sim()) skip();
  gcap_context *ctx = deferred_strict_context();
  unsigned in[4 * 64], out[4] = {0};
  for (unsigned i = 0; i < 4 * 64; i++) in[i] = 1;
  gcap_module_desc d = {.image = sum_ptx, .image_size = sizeof sum_ptx};
  gcap_module *m = NULL;
  gcap_kernel *k = NULL;
  gcap_stream *s = NULL;
  void *din = NULL, *dout = NULL;
  assert_ok(gcap_module_load(ctx, &d, &m));
  assert_ok(gcap_module_get_kernel(m, "sum", &k));
  assert_ok(gcap_mem_alloc(ctx, sizeof in, &din));
  assert_ok(gcap_mem_alloc(ctx, sizeof out, &dout));
  assert_ok(gcap_memcpy(ctx, din, in, sizeof in, GCAP_MEMCPY_HOST_TO_DEVICE));
  assert_ok(gcap_stream_create(ctx, &s));
  void *args[] = {&din, &dout};
  assert_ok(gcap_launch_kernel(s, k, GCAP_DIM3(4, 1, 1), GCAP_DIM3(64, 1, 1), 0, args));
  gcap__alloc_fail_after(-1);
  gcap__alloc_fail_after(0);
  expect_wait_oom(gcap_module_unload(m), "gcap_module_unload");
  gcap_kernel *again = NULL;
  assert_ok(gcap_module_get_kernel(m, "sum", &again)); /* still loaded */
  assert_ok(gcap_stream_synchronize(s));
  assert_ok(gcap_memcpy(ctx, out, dout, sizeof out, GCAP_MEMCPY_DEVICE_TO_HOST));
  for (unsigned b = 0; b < 4; b++) assert_int_equal(out[b], 2 * 64);
  assert_ok(gcap_module_unload(m));
  gcap_context_destroy(ctx);
}

int main(void) {
  test_require_backend();
#define OOM_TEST(fn) cmocka_unit_test_setup_teardown(fn, reset_injection, reset_injection)
#define BACKEND_TEST(fn) cmocka_unit_test_setup_teardown(fn, inject_backend, reset_injection)
  const struct CMUnitTest tests[] = {
      OOM_TEST(test_context_create_oom),
      OOM_TEST(test_deferred_free_wait_oom),
      OOM_TEST(test_deferred_unload_wait_oom),
      OOM_TEST(test_stream_event_oom),
      OOM_TEST(test_memory_oom),
      OOM_TEST(test_managed_oom),
      OOM_TEST(test_strict_memory_oom),
      OOM_TEST(test_module_load_oom),
      OOM_TEST(test_build_graph_oom),
      OOM_TEST(test_add_dependencies_oom),
      OOM_TEST(test_destroy_node_oom),
      OOM_TEST(test_clone_oom),
      OOM_TEST(test_instantiate_launch_oom),
      OOM_TEST(test_instantiate_launch_shuffled_oom),
      OOM_TEST(test_write_dot_oom),
      OOM_TEST(test_races_and_saving_oom),
      OOM_TEST(test_pooled_scenario_oom),
      OOM_TEST(test_stream_race_check_oom),
      OOM_TEST(test_graph_api_12_oom),
      OOM_TEST(test_ptx_oom),
      OOM_TEST(test_ptx_cooperative_oom),
      /* The same scenarios with the backend failing instead: those that call it. */
      BACKEND_TEST(test_context_create_oom),
      BACKEND_TEST(test_stream_event_oom),
      BACKEND_TEST(test_memory_oom),
      BACKEND_TEST(test_managed_oom),
      BACKEND_TEST(test_strict_memory_oom),
      BACKEND_TEST(test_module_load_oom),
      BACKEND_TEST(test_instantiate_launch_oom),
      BACKEND_TEST(test_instantiate_launch_shuffled_oom),
      BACKEND_TEST(test_pooled_scenario_oom),
      BACKEND_TEST(test_stream_race_check_oom),
      BACKEND_TEST(test_graph_api_12_oom),
      BACKEND_TEST(test_ptx_oom),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
