/* Executable graphs: instantiation, snapshots, launch order, node counts, launch errors, simulator counters. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "common.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ helpers */

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

static gcap_module *load_kernels(gcap_context *ctx) {
  const gcap_kernel_def defs[] = {
      {.name = "axpb", .sim_fn = axpb_sim, .num_params = 2, .param_sizes = axpb_sizes},
      {.name = "fill", .sim_fn = fill_sim, .num_params = 3, .param_sizes = fill_sizes},
      {.name = "stub", .sim_fn = NULL, .num_params = 0, .param_sizes = NULL},
  };
  gcap_module_desc d = {.image = NULL, .image_size = 0, .kernels = defs, .num_kernels = 3};
  gcap_module *m = NULL;
  assert_ok(test_module_load(ctx, &d, &m));
  assert_non_null(m);
  return m;
}

/* Fills device memory with `byte` through a synchronous copy (no fill path involved). */
static void dev_fill_bytes(gcap_context *ctx, void *d, unsigned char byte, size_t bytes) {
  unsigned char *h = malloc(bytes);
  assert_non_null(h);
  memset(h, byte, bytes);
  assert_ok(gcap_memcpy(ctx, d, h, bytes, GCAP_MEMCPY_HOST_TO_DEVICE));
  free(h);
}

/* Asserts every byte of device range [d, d+bytes) equals `byte`. */
static void assert_dev_bytes(gcap_context *ctx, const void *d, unsigned char byte, size_t bytes) {
  unsigned char *h = malloc(bytes);
  assert_non_null(h);
  assert_ok(gcap_memcpy(ctx, h, d, bytes, GCAP_MEMCPY_DEVICE_TO_HOST));
  for (size_t i = 0; i < bytes; i++) {
    if (h[i] != byte) {
      print_error("byte %zu is 0x%02x, expected 0x%02x\n", i, h[i], byte);
      free(h);
      fail();
    }
  }
  free(h);
}

static gcap_memset_node_params memset1d(void *dst, uint32_t value, size_t bytes) {
  gcap_memset_node_params p = {.dst = dst, .value = value, .element_size = 1, .width = bytes, .height = 1, .pitch = 0};
  return p;
}

/* A host callback counting its calls. */
static void count_cb(void *p) {
  int *n = p;
  (*n)++;
}

static gcap_node *add_counter(gcap_graph *g, gcap_node *const *deps, size_t n, int *counter) {
  gcap_host_node_params hp = {.fn = count_cb, .user_data = counter};
  gcap_node *node = NULL;
  assert_ok(gcap_graph_add_host_node(g, deps, n, &hp, &node));
  return node;
}

static void launch_sync(gcap_exec *x, gcap_stream *s) {
  assert_ok(gcap_exec_launch(x, s));
  assert_ok(gcap_stream_synchronize(s));
}

/* Ordered log written by host nodes (locked: the order of concurrent nodes is the library's choice). */
#define LOG_MAX 1024
struct order_log {
  pthread_mutex_t lock;
  int entries[LOG_MAX];
  size_t count;
};
struct log_item {
  struct order_log *log;
  int id;
};

static void log_cb(void *p) {
  struct log_item *it = p;
  pthread_mutex_lock(&it->log->lock);
  if (it->log->count < LOG_MAX) it->log->entries[it->log->count] = it->id;
  it->log->count++;
  pthread_mutex_unlock(&it->log->lock);
}

static void log_init(struct order_log *l) {
  memset(l, 0, sizeof *l);
  pthread_mutex_init(&l->lock, NULL);
}

static void log_reset(struct order_log *l) { l->count = 0; }

static gcap_node *add_logger(gcap_graph *g, gcap_node *const *deps, size_t n, struct log_item *it) {
  gcap_host_node_params hp = {.fn = log_cb, .user_data = it};
  gcap_node *node = NULL;
  assert_ok(gcap_graph_add_host_node(g, deps, n, &hp, &node));
  return node;
}

/* Position of `id` in the log; fails when absent or repeated. */
static size_t log_pos(const struct order_log *l, int id) {
  size_t found = SIZE_MAX;
  for (size_t i = 0; i < l->count; i++) {
    if (l->entries[i] != id) continue;
    if (found != SIZE_MAX) {
      print_error("id %d logged twice\n", id);
      fail();
    }
    found = i;
  }
  if (found == SIZE_MAX) {
    print_error("id %d not logged\n", id);
    fail();
  }
  return found;
}

static void assert_before(const struct order_log *l, int a, int b) {
  size_t pa = log_pos(l, a), pb = log_pos(l, b);
  if (pa >= pb) {
    print_error("id %d ran at %zu, not before id %d at %zu\n", a, pa, b, pb);
    fail();
  }
}

static gcap_sim_stats sim_stats(gcap_context *ctx) {
  gcap_sim_stats st;
  memset(&st, 0, sizeof st);
  assert_ok(gcap_sim_get_stats(ctx, &st));
  return st;
}

/* ------------------------------------------------------------ instantiate */

static void test_instantiate_arguments(void **state) {
  (void)state;
  gcap_context *ctx = test_context_create();
  gcap_graph *g = NULL;
  assert_ok(gcap_graph_create(ctx, &g));
  gcap_exec *x = (gcap_exec *)&x; /* poison: must be overwritten with NULL on failure */

  assert_status(gcap_graph_instantiate(NULL, 0, &x), GCAP_ERROR_INVALID_HANDLE);
  assert_null(x);
  test_assert_message_set();
  test_assert_message_contains("gcap_graph_instantiate");

  assert_status(gcap_graph_instantiate(g, 0, NULL), GCAP_ERROR_INVALID_VALUE);
  test_assert_message_set();
  /* A NULL handle is reported before a NULL output (handles first). */
  assert_status(gcap_graph_instantiate(NULL, 0, NULL), GCAP_ERROR_INVALID_HANDLE);

  const unsigned bad_flags[] = {2u, 0x100u, 3u, 0x10u, 0x80000000u};
  for (size_t i = 0; i < sizeof bad_flags / sizeof bad_flags[0]; i++) {
    x = (gcap_exec *)&x;
    assert_status(gcap_graph_instantiate(g, bad_flags[i], &x), GCAP_ERROR_INVALID_VALUE);
    assert_null(x);
    test_assert_message_contains("gcap_graph_instantiate");
  }

  assert_status(gcap_graph_instantiate(g, GCAP_INSTANTIATE_DEVICE_LAUNCH, &x), GCAP_ERROR_NOT_SUPPORTED);
  test_assert_message_contains("gcap_graph_instantiate: flags 0x4: device launch");

  gcap_exec *auto_free = NULL;
  assert_ok(gcap_graph_instantiate(g, GCAP_INSTANTIATE_AUTO_FREE_ON_LAUNCH, &auto_free));
  assert_non_null(auto_free);
  test_assert_message_empty();

  /* An empty graph instantiates and launches. */
  gcap_exec *empty = NULL;
  assert_ok(gcap_graph_instantiate(g, 0, &empty));
  assert_non_null(empty);
  assert_true(empty != auto_free);
  assert_int_equal(gcap_exec_node_count(empty), 0);
  gcap_stream *s = NULL;
  assert_ok(gcap_stream_create(ctx, &s));
  assert_ok(gcap_exec_launch(empty, s));
  test_assert_message_empty();
  assert_ok(gcap_exec_launch(auto_free, s));
  assert_ok(gcap_stream_synchronize(s));
  assert_ok(gcap_stream_query(s));

  /* A destroyed graph is an invalid handle. */
  gcap_graph *dead = NULL;
  assert_ok(gcap_graph_create(ctx, &dead));
  gcap_graph_destroy(dead);
  x = (gcap_exec *)&x;
  assert_status(gcap_graph_instantiate(dead, 0, &x), GCAP_ERROR_INVALID_HANDLE);
  assert_null(x);

  gcap_exec_destroy(empty);
  gcap_exec_destroy(auto_free);
  gcap_graph_destroy(g);
  assert_ok(gcap_stream_destroy(s));
  gcap_context_destroy(ctx);
}

/* -------------------------------------------------------------- snapshots */

static void test_exec_is_snapshot(void **state) {
  (void)state;
  gcap_context *ctx = test_context_create();
  gcap_stream *s = NULL;
  assert_ok(gcap_stream_create(ctx, &s));
  const size_t n = 64;
  void *a = test_dev_alloc(ctx, n), *b = test_dev_alloc(ctx, n);
  dev_fill_bytes(ctx, a, 0, n);
  dev_fill_bytes(ctx, b, 0, n);

  gcap_graph *g = NULL;
  assert_ok(gcap_graph_create(ctx, &g));
  gcap_memset_node_params mp = memset1d(a, 0x11, n);
  gcap_node *fill_a = NULL;
  assert_ok(gcap_graph_add_memset_node(g, NULL, 0, &mp, &fill_a));
  gcap_exec *x = NULL;
  assert_ok(gcap_graph_instantiate(g, 0, &x));
  assert_int_equal(gcap_exec_node_count(x), 1);

  /* Edit the graph after instantiation: new value, a new node. */
  mp.value = 0x22;
  assert_ok(gcap_node_set_memset_params(fill_a, &mp));
  gcap_memset_node_params mpb = memset1d(b, 0x33, n);
  gcap_node *fill_b = NULL;
  assert_ok(gcap_graph_add_memset_node(g, &fill_a, 1, &mpb, &fill_b));
  assert_int_equal(gcap_graph_node_count(g), 2);
  assert_int_equal(gcap_exec_node_count(x), 1);

  launch_sync(x, s);
  assert_dev_bytes(ctx, a, 0x11, n);
  assert_dev_bytes(ctx, b, 0x00, n);

  /* The edited graph gives a different executable. */
  gcap_exec *x2 = NULL;
  assert_ok(gcap_graph_instantiate(g, 0, &x2));
  assert_int_equal(gcap_exec_node_count(x2), 2);
  launch_sync(x2, s);
  assert_dev_bytes(ctx, a, 0x22, n);
  assert_dev_bytes(ctx, b, 0x33, n);

  /* Destroying the graph changes neither executable. */
  gcap_graph_destroy(g);
  dev_fill_bytes(ctx, a, 0, n);
  dev_fill_bytes(ctx, b, 0, n);
  launch_sync(x, s);
  assert_dev_bytes(ctx, a, 0x11, n);
  assert_dev_bytes(ctx, b, 0x00, n);
  launch_sync(x2, s);
  assert_dev_bytes(ctx, a, 0x22, n);
  assert_dev_bytes(ctx, b, 0x33, n);
  assert_int_equal(gcap_exec_node_count(x), 1);
  assert_int_equal(gcap_exec_node_count(x2), 2);

  gcap_exec_destroy(x);
  gcap_exec_destroy(x2);
  assert_ok(gcap_mem_free(ctx, a));
  assert_ok(gcap_mem_free(ctx, b));
  assert_ok(gcap_stream_destroy(s));
  gcap_context_destroy(ctx);
}

/* Host node params are snapshotted too: a callback replaced after instantiation is not called by the exec. */
static void test_exec_snapshot_host_params(void **state) {
  (void)state;
  gcap_context *ctx = test_context_create();
  gcap_stream *s = NULL;
  assert_ok(gcap_stream_create(ctx, &s));
  gcap_graph *g = NULL;
  assert_ok(gcap_graph_create(ctx, &g));
  int first = 0, second = 0;
  gcap_node *h = add_counter(g, NULL, 0, &first);
  gcap_exec *x = NULL;
  assert_ok(gcap_graph_instantiate(g, 0, &x));
  gcap_host_node_params hp = {.fn = count_cb, .user_data = &second};
  assert_ok(gcap_node_set_host_params(h, &hp));
  assert_ok(gcap_graph_destroy_node(h));
  assert_int_equal(gcap_graph_node_count(g), 0);
  launch_sync(x, s);
  launch_sync(x, s);
  assert_int_equal(first, 2);
  assert_int_equal(second, 0);
  assert_int_equal(gcap_exec_node_count(x), 1);
  gcap_exec_destroy(x);
  gcap_graph_destroy(g);
  gcap_context_destroy(ctx);
}

/* --------------------------------------------------------------- pipeline */

#define PIPE_N 100u
struct pipe_state {
  const float *in;
  const float *out;
  int calls;
  int mismatches;
};

static void pipe_check_cb(void *p) {
  struct pipe_state *st = p;
  st->calls++;
  for (uint32_t i = 0; i < PIPE_N; i++)
    if (st->out[i] != st->in[i] * 4.0f + 3.0f) st->mismatches++;
}

static void test_pipeline_replay(void **state) {
  (void)state;
  test_require_sim(); /* checks what axpb_sim computed */
  gcap_context *ctx = test_context_create();
  gcap_module *m = load_kernels(ctx);
  gcap_kernel *axpb = test_kernel_of(m, "axpb");
  gcap_stream *s = NULL;
  assert_ok(gcap_stream_create(ctx, &s));

  const size_t bytes = PIPE_N * sizeof(float);
  void *hin_mem = NULL, *hout_mem = NULL;
  assert_ok(gcap_host_alloc(ctx, bytes, &hin_mem));
  assert_ok(gcap_host_alloc(ctx, bytes, &hout_mem));
  float *hin = hin_mem, *hout = hout_mem;
  float *d = test_dev_alloc(ctx, bytes);

  gcap_graph *g = NULL;
  assert_ok(gcap_graph_create(ctx, &g));
  gcap_node *up = NULL, *k1 = NULL, *k2 = NULL, *down = NULL, *check = NULL;
  gcap_memcpy_node_params cp = {.dst = d, .src = hin, .bytes = bytes, .kind = GCAP_MEMCPY_HOST_TO_DEVICE};
  assert_ok(gcap_graph_add_memcpy_node(g, NULL, 0, &cp, &up));
  uint32_t n = PIPE_N;
  void *args[] = {&d, &n};
  gcap_kernel_node_params kp = {
      .kernel = axpb, .grid = GCAP_DIM3(2, 1, 1), .block = GCAP_DIM3(64, 1, 1), .shared_mem_bytes = 0, .args = args};
  assert_ok(gcap_graph_add_kernel_node(g, &up, 1, &kp, &k1));
  assert_ok(gcap_graph_add_kernel_node(g, &k1, 1, &kp, &k2));
  gcap_memcpy_node_params dp = {.dst = hout, .src = d, .bytes = bytes, .kind = GCAP_MEMCPY_DEVICE_TO_HOST};
  assert_ok(gcap_graph_add_memcpy_node(g, &k2, 1, &dp, &down));
  struct pipe_state ps = {.in = hin, .out = hout, .calls = 0, .mismatches = 0};
  gcap_host_node_params hp = {.fn = pipe_check_cb, .user_data = &ps};
  assert_ok(gcap_graph_add_host_node(g, &down, 1, &hp, &check));
  assert_int_equal(gcap_graph_node_count(g), 5);
  assert_int_equal(gcap_graph_edge_count(g), 4);

  gcap_exec *x = NULL;
  assert_ok(gcap_graph_instantiate(g, 0, &x));
  gcap_graph_destroy(g);
  assert_int_equal(gcap_exec_node_count(x), 5);

  for (int iter = 0; iter < 100; iter++) {
    for (uint32_t i = 0; i < PIPE_N; i++) hin[i] = (float)((int)i - 50 + iter);
    memset(hout, 0xff, bytes);
    launch_sync(x, s);
    assert_int_equal(ps.calls, iter + 1);
    assert_int_equal(ps.mismatches, 0);
    for (uint32_t i = 0; i < PIPE_N; i++) {
      float want = (float)((int)i - 50 + iter) * 4.0f + 3.0f;
      if (hout[i] != want) {
        print_error("launch %d: out[%u] = %g, expected %g\n", iter, i, (double)hout[i], (double)want);
        fail();
      }
    }
  }

  gcap_exec_destroy(x);
  assert_ok(gcap_mem_free(ctx, d));
  assert_ok(gcap_host_free(ctx, hin));
  assert_ok(gcap_host_free(ctx, hout));
  assert_ok(gcap_module_unload(m));
  assert_ok(gcap_stream_destroy(s));
  gcap_context_destroy(ctx);
}

/* ------------------------------------------------------- random DAG order */

#define DAG_N 200
struct dag {
  unsigned char adj[DAG_N][DAG_N];
  int from[DAG_N * 8], to[DAG_N * 8];
  size_t edges;
  gcap_node *nodes[DAG_N];
  struct log_item items[DAG_N];
};

static uint64_t rng_next(uint64_t *st) {
  *st ^= *st << 13;
  *st ^= *st >> 7;
  *st ^= *st << 17;
  return *st;
}

/* True when `to` is reachable from `from` over the edges recorded so far. */
static bool dag_reaches(const struct dag *d, int from, int to) {
  int stack[DAG_N];
  bool seen[DAG_N];
  memset(seen, 0, sizeof seen);
  int top = 0;
  stack[top++] = from;
  seen[from] = true;
  while (top > 0) {
    int v = stack[--top];
    if (v == to) return true;
    for (int w = 0; w < DAG_N; w++) {
      if (d->adj[v][w] && !seen[w]) {
        seen[w] = true;
        stack[top++] = w;
      }
    }
  }
  return false;
}

static void dag_note_edge(struct dag *d, int a, int b) {
  assert_true(d->edges < sizeof d->from / sizeof d->from[0]);
  d->adj[a][b] = 1;
  d->from[d->edges] = a;
  d->to[d->edges] = b;
  d->edges++;
}

/* Builds the DAG in ctx, launches it `launches` times; returns how many launches ran in an order unlike the first. */
static int run_random_dag(gcap_context *ctx, int launches) {
  struct dag *d = calloc(1, sizeof *d);
  assert_non_null(d);
  struct order_log *log = malloc(sizeof *log);
  assert_non_null(log);
  log_init(log);
  uint64_t rng = 0x9e3779b97f4a7c15u;

  gcap_graph *g = NULL;
  assert_ok(gcap_graph_create(ctx, &g));
  for (int i = 0; i < DAG_N; i++) {
    gcap_node *deps[4];
    size_t nd = 0;
    if (i > 0) {
      int want = (int)(rng_next(&rng) % 4);
      for (int k = 0; k < want; k++) {
        int j = (int)(rng_next(&rng) % (uint64_t)i);
        if (d->adj[j][i]) continue;
        deps[nd++] = d->nodes[j];
        dag_note_edge(d, j, i);
      }
    }
    d->items[i].log = log;
    d->items[i].id = i;
    d->nodes[i] = add_logger(g, nd ? deps : NULL, nd, &d->items[i]);
  }

  /* Edges from a higher index to a lower one, added later, where they close no cycle. */
  int added_late = 0, refused = 0;
  for (int attempt = 0; attempt < 600; attempt++) {
    int a = (int)(rng_next(&rng) % DAG_N), b = (int)(rng_next(&rng) % DAG_N);
    int hi = a > b ? a : b, lo = a > b ? b : a;
    if (hi == lo || d->adj[hi][lo] || d->adj[lo][hi]) continue;
    if (dag_reaches(d, lo, hi)) {
      if (refused < 3) {
        size_t before = gcap_graph_edge_count(g);
        assert_status(gcap_graph_add_dependencies(g, &d->nodes[hi], &d->nodes[lo], 1), GCAP_ERROR_INVALID_VALUE);
        assert_int_equal(gcap_graph_edge_count(g), before);
        refused++;
      }
      continue;
    }
    assert_ok(gcap_graph_add_dependencies(g, &d->nodes[hi], &d->nodes[lo], 1));
    dag_note_edge(d, hi, lo);
    added_late++;
  }
  assert_true(added_late > 20);
  assert_int_equal(gcap_graph_node_count(g), DAG_N);
  assert_int_equal(gcap_graph_edge_count(g), d->edges);

  gcap_exec *x = NULL;
  assert_ok(gcap_graph_instantiate(g, 0, &x));
  gcap_graph_destroy(g);
  assert_int_equal(gcap_exec_node_count(x), DAG_N);
  gcap_stream *s = NULL;
  assert_ok(gcap_stream_create(ctx, &s));

  int *first = malloc(DAG_N * sizeof *first);
  assert_non_null(first);
  int differing = 0;
  for (int l = 0; l < launches; l++) {
    log_reset(log);
    launch_sync(x, s);
    assert_int_equal(log->count, DAG_N);
    size_t pos[DAG_N];
    bool seen[DAG_N];
    memset(seen, 0, sizeof seen);
    for (size_t i = 0; i < DAG_N; i++) {
      int id = log->entries[i];
      assert_in_range(id, 0, DAG_N - 1);
      if (seen[id]) {
        print_error("launch %d: node %d ran twice\n", l, id);
        fail();
      }
      seen[id] = true;
      pos[id] = i;
    }
    for (size_t e = 0; e < d->edges; e++) {
      if (pos[d->from[e]] >= pos[d->to[e]]) {
        print_error("launch %d: edge %d -> %d not respected (%zu >= %zu)\n", l, d->from[e], d->to[e], pos[d->from[e]],
                    pos[d->to[e]]);
        fail();
      }
    }
    if (l == 0) memcpy(first, log->entries, DAG_N * sizeof *first);
    else if (memcmp(first, log->entries, DAG_N * sizeof *first) != 0) differing++;
  }

  free(first);
  gcap_exec_destroy(x);
  assert_ok(gcap_stream_destroy(s));
  pthread_mutex_destroy(&log->lock);
  free(log);
  free(d);
  return differing;
}

static void test_random_dag_order(void **state) {
  (void)state;
  gcap_context *ctx = test_context_create();
  int differing = run_random_dag(ctx, 5);
  /* CAPTURE order (the default) runs every launch in one order; SHUFFLE (GCAP_SIM_ORDER) or a GPU need not. */
  const char *order = getenv("GCAP_SIM_ORDER");
  if (test_on_sim() && (!order || strcmp(order, "shuffle") != 0)) assert_int_equal(differing, 0);
  gcap_context_destroy(ctx);
}

static void test_random_dag_order_shuffled(void **state) {
  (void)state;
  test_require_sim(); /* GCAP_SIM_ORDER_SHUFFLE */
  gcap_sim_options so;
  gcap_sim_options_init(&so);
  so.order = GCAP_SIM_ORDER_SHUFFLE;
  so.seed = 20240611u;
  gcap_context *ctx = test_sim_context_create(&so);
  int differing = run_random_dag(ctx, 6);
  /* A random topological order per launch: six identical orders of 200 loosely ordered nodes means no shuffle. */
  assert_true(differing > 0);
  gcap_context_destroy(ctx);
}

/* ------------------------------------------------------------ child graphs */

static void test_child_graph_order(void **state) {
  (void)state;
  gcap_context *ctx = test_context_create();
  gcap_stream *s = NULL;
  assert_ok(gcap_stream_create(ctx, &s));
  struct order_log log;
  log_init(&log);
  struct log_item it[16];
  for (int i = 0; i < 16; i++) {
    it[i].log = &log;
    it[i].id = i;
  }

  /* child: 10 -> 11, 10 -> 12 */
  gcap_graph *child = NULL;
  assert_ok(gcap_graph_create(ctx, &child));
  gcap_node *c0 = add_logger(child, NULL, 0, &it[10]);
  add_logger(child, &c0, 1, &it[11]);
  add_logger(child, &c0, 1, &it[12]);

  /* parent: 0 -> [child] -> 1, and 2 after 0 only */
  gcap_graph *g = NULL;
  assert_ok(gcap_graph_create(ctx, &g));
  gcap_node *a = add_logger(g, NULL, 0, &it[0]);
  gcap_node *cn = NULL;
  assert_ok(gcap_graph_add_child_graph_node(g, &a, 1, child, &cn));
  add_logger(g, &cn, 1, &it[1]);
  add_logger(g, &a, 1, &it[2]);

  /* Edits of the original child are not seen; edits of the embedded one are. */
  add_logger(child, NULL, 0, &it[14]);
  gcap_graph *embedded = NULL;
  assert_ok(gcap_node_get_child_graph(cn, &embedded));
  assert_non_null(embedded);
  assert_int_equal(gcap_graph_node_count(embedded), 3);
  gcap_node *emb_nodes[3] = {NULL, NULL, NULL};
  size_t cnt = 3;
  assert_ok(gcap_graph_get_nodes(embedded, emb_nodes, &cnt));
  assert_int_equal(cnt, 3);
  add_logger(embedded, &emb_nodes[1], 1, &it[13]); /* 11 -> 13 */

  gcap_exec *x = NULL;
  assert_ok(gcap_graph_instantiate(g, 0, &x));
  assert_int_equal(gcap_exec_node_count(x), 4 + 4);

  for (int l = 0; l < 3; l++) {
    log_reset(&log);
    launch_sync(x, s);
    assert_int_equal(log.count, 7);
    for (int c = 10; c <= 13; c++) {
      assert_before(&log, 0, c);
      assert_before(&log, c, 1);
    }
    assert_before(&log, 10, 11);
    assert_before(&log, 10, 12);
    assert_before(&log, 11, 13);
    assert_before(&log, 0, 2);
  }

  gcap_exec_destroy(x);
  gcap_graph_destroy(g);
  gcap_graph_destroy(child);
  assert_ok(gcap_stream_destroy(s));
  pthread_mutex_destroy(&log.lock);
  gcap_context_destroy(ctx);
}

static void test_nested_child_graph_order(void **state) {
  (void)state;
  gcap_context *ctx = test_context_create();
  gcap_stream *s = NULL;
  assert_ok(gcap_stream_create(ctx, &s));
  struct order_log log;
  log_init(&log);
  struct log_item it[40];
  for (int i = 0; i < 40; i++) {
    it[i].log = &log;
    it[i].id = i;
  }
  gcap_graph *inner = NULL, *middle = NULL, *outer = NULL;
  assert_ok(gcap_graph_create(ctx, &inner));
  gcap_node *i0 = add_logger(inner, NULL, 0, &it[20]);
  add_logger(inner, &i0, 1, &it[21]);

  assert_ok(gcap_graph_create(ctx, &middle));
  gcap_node *m0 = add_logger(middle, NULL, 0, &it[30]);
  gcap_node *mc = NULL;
  assert_ok(gcap_graph_add_child_graph_node(middle, &m0, 1, inner, &mc));
  add_logger(middle, &mc, 1, &it[31]);

  assert_ok(gcap_graph_create(ctx, &outer));
  gcap_node *o0 = add_logger(outer, NULL, 0, &it[0]);
  gcap_node *oc = NULL;
  assert_ok(gcap_graph_add_child_graph_node(outer, &o0, 1, middle, &oc));
  add_logger(outer, &oc, 1, &it[1]);
  gcap_graph_destroy(inner);
  gcap_graph_destroy(middle);

  gcap_exec *x = NULL;
  assert_ok(gcap_graph_instantiate(outer, 0, &x));
  assert_int_equal(gcap_graph_node_count(outer), 3);
  assert_int_equal(gcap_exec_node_count(x), 3 + 2 + 1 + 2);
  const int want[] = {0, 30, 20, 21, 31, 1};
  for (int l = 0; l < 3; l++) {
    log_reset(&log);
    launch_sync(x, s);
    assert_int_equal(log.count, 6);
    for (size_t i = 0; i < 6; i++) assert_int_equal(log.entries[i], want[i]);
  }
  gcap_exec_destroy(x);
  gcap_graph_destroy(outer);
  assert_ok(gcap_stream_destroy(s));
  pthread_mutex_destroy(&log.lock);
  gcap_context_destroy(ctx);
}

/* ---------------------------------------------------------- node counting */

static size_t count_of(gcap_graph *g) {
  gcap_exec *x = NULL;
  assert_ok(gcap_graph_instantiate(g, 0, &x));
  size_t n = gcap_exec_node_count(x);
  gcap_exec_destroy(x);
  return n;
}

static void test_exec_node_count(void **state) {
  (void)state;
  gcap_context *ctx = test_context_create();
  int calls = 0;

  gcap_graph *flat = NULL;
  assert_ok(gcap_graph_create(ctx, &flat));
  gcap_node *e0 = NULL, *e1 = NULL, *e2 = NULL;
  assert_ok(gcap_graph_add_empty_node(flat, NULL, 0, &e0));
  assert_ok(gcap_graph_add_empty_node(flat, &e0, 1, &e1));
  add_counter(flat, &e1, 1, &calls);
  add_counter(flat, NULL, 0, &calls);
  assert_ok(gcap_graph_add_empty_node(flat, &e0, 1, &e2));
  assert_int_equal(count_of(flat), 5);

  /* one level: 2 nodes + child node (1) + its 5 nodes */
  gcap_graph *one = NULL;
  assert_ok(gcap_graph_create(ctx, &one));
  gcap_node *c = NULL;
  add_counter(one, NULL, 0, &calls);
  assert_ok(gcap_graph_add_child_graph_node(one, NULL, 0, flat, &c));
  add_counter(one, &c, 1, &calls);
  assert_int_equal(gcap_graph_node_count(one), 3);
  assert_int_equal(count_of(one), 2 + 1 + 5);

  /* two levels: 1 node + child(one) (1 + 8) + child(flat) (1 + 5) */
  gcap_graph *two = NULL;
  assert_ok(gcap_graph_create(ctx, &two));
  add_counter(two, NULL, 0, &calls);
  gcap_node *c2 = NULL;
  assert_ok(gcap_graph_add_child_graph_node(two, NULL, 0, one, &c));
  assert_ok(gcap_graph_add_child_graph_node(two, &c, 1, flat, &c2));
  assert_int_equal(gcap_graph_node_count(two), 3);
  assert_int_equal(count_of(two), 1 + (1 + 8) + (1 + 5));

  /* An empty child graph counts 1. */
  gcap_graph *none = NULL, *holder = NULL;
  assert_ok(gcap_graph_create(ctx, &none));
  assert_ok(gcap_graph_create(ctx, &holder));
  assert_ok(gcap_graph_add_child_graph_node(holder, NULL, 0, none, &c));
  assert_int_equal(count_of(holder), 1);

  /* Launch the two-level graph: every host node runs once: 1 in two, 2 + 2 in one, 2 in flat. */
  gcap_stream *s = NULL;
  assert_ok(gcap_stream_create(ctx, &s));
  gcap_exec *x = NULL;
  assert_ok(gcap_graph_instantiate(two, 0, &x));
  calls = 0;
  launch_sync(x, s);
  assert_int_equal(calls, 7);

  assert_int_equal(gcap_exec_node_count(NULL), 0);
  gcap_exec_destroy(x);
  assert_int_equal(gcap_exec_node_count(x), 0);

  gcap_graph_destroy(flat);
  gcap_graph_destroy(one);
  gcap_graph_destroy(two);
  gcap_graph_destroy(none);
  gcap_graph_destroy(holder);
  assert_ok(gcap_stream_destroy(s));
  gcap_context_destroy(ctx);
}

/* ---------------------------------------------------- event and empty nodes */

static void test_event_nodes(void **state) {
  (void)state;
  gcap_context *ctx = test_context_create();
  gcap_stream *s1 = NULL, *s2 = NULL;
  assert_ok(gcap_stream_create(ctx, &s1));
  assert_ok(gcap_stream_create(ctx, &s2));
  gcap_event *e = NULL;
  assert_ok(gcap_event_create(ctx, &e));
  const size_t n = 32;
  void *a = test_dev_alloc(ctx, n), *b = test_dev_alloc(ctx, n);
  dev_fill_bytes(ctx, a, 0, n);
  dev_fill_bytes(ctx, b, 0, n);

  /* producer: fill a, then record e */
  gcap_graph *gp = NULL;
  assert_ok(gcap_graph_create(ctx, &gp));
  gcap_memset_node_params mpa = memset1d(a, 0x5a, n);
  gcap_node *fa = NULL, *rec = NULL;
  assert_ok(gcap_graph_add_memset_node(gp, NULL, 0, &mpa, &fa));
  assert_ok(gcap_graph_add_event_record_node(gp, &fa, 1, e, &rec));
  assert_int_equal(gcap_node_get_type(rec), GCAP_NODE_EVENT_RECORD);

  /* consumer: wait e, then copy a -> b */
  gcap_graph *gc = NULL;
  assert_ok(gcap_graph_create(ctx, &gc));
  gcap_node *wait = NULL, *cp = NULL;
  assert_ok(gcap_graph_add_event_wait_node(gc, NULL, 0, e, &wait));
  assert_int_equal(gcap_node_get_type(wait), GCAP_NODE_EVENT_WAIT);
  gcap_memcpy_node_params cpp = {.dst = b, .src = a, .bytes = n, .kind = GCAP_MEMCPY_DEVICE_TO_DEVICE};
  assert_ok(gcap_graph_add_memcpy_node(gc, &wait, 1, &cpp, &cp));

  gcap_exec *xp = NULL, *xc = NULL;
  assert_ok(gcap_graph_instantiate(gp, 0, &xp));
  assert_ok(gcap_graph_instantiate(gc, 0, &xc));
  assert_int_equal(gcap_exec_node_count(xp), 2);
  assert_int_equal(gcap_exec_node_count(xc), 2);

  assert_ok(gcap_exec_launch(xp, s1));
  assert_ok(gcap_exec_launch(xc, s2));
  assert_ok(gcap_stream_synchronize(s2));
  assert_dev_bytes(ctx, b, 0x5a, n);
  /* The record node recorded e: it can be waited on and queried. */
  assert_ok(gcap_event_synchronize(e));
  assert_ok(gcap_event_query(e));
  assert_ok(gcap_stream_wait_event(s1, e));

  /* Destroying the event keeps both execs working. */
  assert_ok(gcap_event_destroy(e));
  dev_fill_bytes(ctx, a, 0, n);
  dev_fill_bytes(ctx, b, 0, n);
  assert_ok(gcap_exec_launch(xp, s1));
  assert_ok(gcap_stream_synchronize(s1));
  assert_ok(gcap_exec_launch(xc, s2));
  assert_ok(gcap_stream_synchronize(s2));
  assert_dev_bytes(ctx, a, 0x5a, n);
  assert_dev_bytes(ctx, b, 0x5a, n);

  gcap_exec_destroy(xp);
  gcap_exec_destroy(xc);
  gcap_graph_destroy(gp);
  gcap_graph_destroy(gc);
  assert_ok(gcap_stream_destroy(s1));
  assert_ok(gcap_stream_destroy(s2));
  gcap_context_destroy(ctx);
}

static void test_empty_nodes(void **state) {
  (void)state;
  gcap_context *ctx = test_context_create();
  gcap_stream *s = NULL;
  assert_ok(gcap_stream_create(ctx, &s));
  struct order_log log;
  log_init(&log);
  struct log_item it[4];
  for (int i = 0; i < 4; i++) {
    it[i].log = &log;
    it[i].id = i;
  }
  /* 0, 1 -> join (empty) -> 2 ; 3 after a lone empty root */
  gcap_graph *g = NULL;
  assert_ok(gcap_graph_create(ctx, &g));
  gcap_node *roots[2];
  roots[0] = add_logger(g, NULL, 0, &it[0]);
  roots[1] = add_logger(g, NULL, 0, &it[1]);
  gcap_node *join = NULL, *lone = NULL;
  assert_ok(gcap_graph_add_empty_node(g, roots, 2, &join));
  assert_int_equal(gcap_node_get_type(join), GCAP_NODE_EMPTY);
  add_logger(g, &join, 1, &it[2]);
  assert_ok(gcap_graph_add_empty_node(g, NULL, 0, &lone));
  add_logger(g, &lone, 1, &it[3]);

  gcap_exec *x = NULL;
  assert_ok(gcap_graph_instantiate(g, 0, &x));
  assert_int_equal(gcap_exec_node_count(x), 6);
  gcap_sim_stats before, after;
  if (test_on_sim()) before = sim_stats(ctx);
  launch_sync(x, s);
  assert_int_equal(log.count, 4);
  assert_before(&log, 0, 2);
  assert_before(&log, 1, 2);
  (void)log_pos(&log, 3);
  if (test_on_sim()) {
    after = sim_stats(ctx);
    assert_int_equal(after.nodes_executed - before.nodes_executed, 6);
    assert_int_equal(after.host_calls - before.host_calls, 4);
    assert_int_equal(after.bytes_copied - before.bytes_copied, 0);
    assert_int_equal(after.bytes_set - before.bytes_set, 0);
    assert_int_equal(after.kernels_executed - before.kernels_executed, 0);
  }

  /* A graph made only of empty nodes launches and runs nothing. */
  gcap_graph *ge = NULL;
  assert_ok(gcap_graph_create(ctx, &ge));
  gcap_node *e0 = NULL, *e1 = NULL;
  assert_ok(gcap_graph_add_empty_node(ge, NULL, 0, &e0));
  assert_ok(gcap_graph_add_empty_node(ge, &e0, 1, &e1));
  gcap_exec *xe = NULL;
  assert_ok(gcap_graph_instantiate(ge, 0, &xe));
  assert_int_equal(gcap_exec_node_count(xe), 2);
  launch_sync(xe, s);

  gcap_exec_destroy(x);
  gcap_exec_destroy(xe);
  gcap_graph_destroy(g);
  gcap_graph_destroy(ge);
  assert_ok(gcap_stream_destroy(s));
  pthread_mutex_destroy(&log.lock);
  gcap_context_destroy(ctx);
}

/* ------------------------------------------------------------ upload/launch */

static void test_exec_upload(void **state) {
  (void)state;
  gcap_context *ctx = test_context_create();
  gcap_context *other = test_context_create();
  gcap_stream *s = NULL, *so = NULL, *dead = NULL;
  assert_ok(gcap_stream_create(ctx, &s));
  assert_ok(gcap_stream_create(other, &so));
  assert_ok(gcap_stream_create(ctx, &dead));
  assert_ok(gcap_stream_destroy(dead));
  gcap_graph *g = NULL;
  assert_ok(gcap_graph_create(ctx, &g));
  int calls = 0;
  add_counter(g, NULL, 0, &calls);
  gcap_exec *x = NULL;
  assert_ok(gcap_graph_instantiate(g, 0, &x));

  assert_ok(gcap_exec_upload(x, s));
  test_assert_message_empty();
  assert_ok(gcap_stream_synchronize(s));
  assert_int_equal(calls, 0); /* upload runs nothing */
  assert_ok(gcap_exec_upload(x, s));

  assert_status(gcap_exec_upload(NULL, s), GCAP_ERROR_INVALID_HANDLE);
  test_assert_message_set();
  test_assert_message_contains("gcap_exec_upload");
  assert_status(gcap_exec_upload(x, NULL), GCAP_ERROR_INVALID_HANDLE);
  test_assert_message_set();
  assert_status(gcap_exec_upload(NULL, NULL), GCAP_ERROR_INVALID_HANDLE);
  assert_status(gcap_exec_upload(x, dead), GCAP_ERROR_INVALID_HANDLE);
  assert_status(gcap_exec_upload(x, so), GCAP_ERROR_INVALID_HANDLE);
  assert_int_equal(calls, 0);

  launch_sync(x, s);
  assert_int_equal(calls, 1);

  gcap_exec_destroy(x);
  assert_status(gcap_exec_upload(x, s), GCAP_ERROR_INVALID_HANDLE);
  gcap_graph_destroy(g);
  assert_ok(gcap_stream_destroy(s));
  assert_ok(gcap_stream_destroy(so));
  gcap_context_destroy(ctx);
  gcap_context_destroy(other);
}

static void test_exec_launch_arguments(void **state) {
  (void)state;
  gcap_context *ctx = test_context_create();
  gcap_context *other = test_context_create();
  gcap_stream *s = NULL, *so = NULL, *dead = NULL;
  assert_ok(gcap_stream_create(ctx, &s));
  assert_ok(gcap_stream_create(other, &so));
  assert_ok(gcap_stream_create(ctx, &dead));
  assert_ok(gcap_stream_destroy(dead));
  gcap_graph *g = NULL;
  assert_ok(gcap_graph_create(ctx, &g));
  int calls = 0;
  add_counter(g, NULL, 0, &calls);
  gcap_exec *x = NULL;
  assert_ok(gcap_graph_instantiate(g, 0, &x));

  assert_status(gcap_exec_launch(NULL, s), GCAP_ERROR_INVALID_HANDLE);
  test_assert_message_set();
  test_assert_message_contains("gcap_exec_launch");
  assert_status(gcap_exec_launch(x, NULL), GCAP_ERROR_INVALID_HANDLE);
  test_assert_message_set();
  assert_status(gcap_exec_launch(NULL, NULL), GCAP_ERROR_INVALID_HANDLE);
  assert_status(gcap_exec_launch(x, dead), GCAP_ERROR_INVALID_HANDLE);
  /* exec of ctx, stream of another context */
  assert_status(gcap_exec_launch(x, so), GCAP_ERROR_INVALID_HANDLE);
  test_assert_message_contains("gcap_exec_launch");
  assert_ok(gcap_stream_synchronize(so));
  assert_int_equal(calls, 0);

  launch_sync(x, s);
  test_assert_message_empty();
  assert_int_equal(calls, 1);

  /* The same in reverse: an exec of `other` on a stream of ctx. */
  gcap_graph *go = NULL;
  assert_ok(gcap_graph_create(other, &go));
  int other_calls = 0;
  add_counter(go, NULL, 0, &other_calls);
  gcap_exec *xo = NULL;
  assert_ok(gcap_graph_instantiate(go, 0, &xo));
  assert_status(gcap_exec_launch(xo, s), GCAP_ERROR_INVALID_HANDLE);
  assert_ok(gcap_stream_synchronize(s));
  assert_int_equal(other_calls, 0);
  launch_sync(xo, so);
  assert_int_equal(other_calls, 1);

  /* Destroyed exec. */
  gcap_exec_destroy(x);
  assert_status(gcap_exec_launch(x, s), GCAP_ERROR_INVALID_HANDLE);
  test_assert_message_set();
  assert_ok(gcap_stream_synchronize(s));
  assert_int_equal(calls, 1);

  gcap_exec_destroy(xo);
  gcap_graph_destroy(g);
  gcap_graph_destroy(go);
  assert_ok(gcap_stream_destroy(s));
  assert_ok(gcap_stream_destroy(so));
  gcap_context_destroy(ctx);
  gcap_context_destroy(other);
}

struct self_launch {
  gcap_exec *x;
  gcap_stream *s, *s2;
  gcap_status same_stream, other_stream;
  int calls;
  char msg[256];
};

static void self_launch_cb(void *p) {
  struct self_launch *st = p;
  st->calls++;
  st->same_stream = gcap_exec_launch(st->x, st->s);
  snprintf(st->msg, sizeof st->msg, "%s", gcap_last_error_message());
  st->other_stream = gcap_exec_launch(st->x, st->s2);
}

static void test_launch_from_own_host_node(void **state) {
  (void)state;
  gcap_context *ctx = test_context_create();
  gcap_stream *s = NULL, *s2 = NULL;
  assert_ok(gcap_stream_create(ctx, &s));
  assert_ok(gcap_stream_create(ctx, &s2));
  gcap_graph *g = NULL;
  assert_ok(gcap_graph_create(ctx, &g));
  struct self_launch st;
  memset(&st, 0, sizeof st);
  st.same_stream = st.other_stream = GCAP_SUCCESS;
  gcap_host_node_params hp = {.fn = self_launch_cb, .user_data = &st};
  gcap_node *h = NULL;
  assert_ok(gcap_graph_add_host_node(g, NULL, 0, &hp, &h));
  assert_ok(gcap_graph_instantiate(g, 0, &st.x));
  st.s = s;
  st.s2 = s2;

  launch_sync(st.x, s);
  assert_ok(gcap_stream_synchronize(s2));
  assert_int_equal(st.calls, 1);
  assert_int_equal(st.same_stream, GCAP_ERROR_ILLEGAL_STATE);
  assert_int_equal(st.other_stream, GCAP_ERROR_ILLEGAL_STATE);
  assert_true(strlen(st.msg) > 0);

  /* The exec is still usable afterwards. */
  launch_sync(st.x, s2);
  assert_int_equal(st.calls, 2);
  assert_int_equal(st.same_stream, GCAP_ERROR_ILLEGAL_STATE);

  gcap_exec_destroy(st.x);
  gcap_graph_destroy(g);
  assert_ok(gcap_stream_destroy(s));
  assert_ok(gcap_stream_destroy(s2));
  gcap_context_destroy(ctx);
}

struct self_destroy {
  gcap_exec *x;
  int calls;
};

static void self_destroy_cb(void *p) {
  struct self_destroy *st = p;
  st->calls++;
  gcap_exec_destroy(st->x);
}

/* As cuGraphExecDestroy: an exec destroyed while it runs finishes its launch, then it is gone. */
static void test_destroy_from_own_host_node(void **state) {
  (void)state;
  gcap_context *ctx = test_context_create();
  gcap_stream *s = NULL;
  assert_ok(gcap_stream_create(ctx, &s));
  gcap_graph *g = NULL;
  assert_ok(gcap_graph_create(ctx, &g));
  struct self_destroy st = {NULL, 0};
  gcap_host_node_params hp = {.fn = self_destroy_cb, .user_data = &st};
  gcap_node *h = NULL;
  assert_ok(gcap_graph_add_host_node(g, NULL, 0, &hp, &h));
  int after = 0;
  add_counter(g, &h, 1, &after);
  assert_ok(gcap_graph_instantiate(g, 0, &st.x));
  launch_sync(st.x, s);
  assert_int_equal(st.calls, 1);
  assert_int_equal(after, 1);
  assert_status(gcap_exec_launch(st.x, s), GCAP_ERROR_INVALID_HANDLE);
  assert_int_equal(gcap_exec_node_count(st.x), 0);
  assert_int_equal(st.calls, 1);
  gcap_graph_destroy(g);
  assert_ok(gcap_stream_destroy(s));
  gcap_context_destroy(ctx);
}

struct blocking_calls {
  gcap_context *ctx;
  gcap_stream *s, *other;
  gcap_event *e;
  void *dev;
  gcap_status stream_sync, ctx_sync, event_sync, copy, destroy;
  int calls;
};

static void blocking_cb(void *p) {
  struct blocking_calls *b = p;
  unsigned char h[8] = {0};
  b->calls++;
  b->stream_sync = gcap_stream_synchronize(b->s);
  b->ctx_sync = gcap_context_synchronize(b->ctx);
  b->event_sync = gcap_event_synchronize(b->e);
  b->copy = gcap_memcpy(b->ctx, h, b->dev, sizeof h, GCAP_MEMCPY_DEVICE_TO_HOST);
  b->destroy = gcap_stream_destroy(b->other);
}

/* A blocking call from a host node returns ILLEGAL_STATE instead of deadlocking. */
static void test_blocking_calls_in_host_node(void **state) {
  (void)state;
  gcap_context *ctx = test_context_create();
  struct blocking_calls b;
  memset(&b, 0, sizeof b);
  b.ctx = ctx;
  assert_ok(gcap_stream_create(ctx, &b.s));
  assert_ok(gcap_stream_create(ctx, &b.other));
  assert_ok(gcap_event_create(ctx, &b.e));
  b.dev = test_dev_alloc(ctx, 8);
  gcap_graph *g = NULL;
  assert_ok(gcap_graph_create(ctx, &g));
  gcap_host_node_params hp = {.fn = blocking_cb, .user_data = &b};
  gcap_node *h = NULL;
  assert_ok(gcap_graph_add_host_node(g, NULL, 0, &hp, &h));
  gcap_exec *x = NULL;
  assert_ok(gcap_graph_instantiate(g, 0, &x));
  launch_sync(x, b.s);
  assert_int_equal(b.calls, 1);
  assert_int_equal(b.stream_sync, GCAP_ERROR_ILLEGAL_STATE);
  assert_int_equal(b.ctx_sync, GCAP_ERROR_ILLEGAL_STATE);
  assert_int_equal(b.event_sync, GCAP_ERROR_ILLEGAL_STATE);
  assert_int_equal(b.copy, GCAP_ERROR_ILLEGAL_STATE);
  assert_int_equal(b.destroy, GCAP_ERROR_ILLEGAL_STATE);
  /* The stream the callback tried to destroy is still there. */
  assert_ok(gcap_stream_synchronize(b.other));
  assert_ok(gcap_stream_destroy(b.other));
  gcap_exec_destroy(x);
  gcap_graph_destroy(g);
  assert_ok(gcap_event_destroy(b.e));
  assert_ok(gcap_mem_free(ctx, b.dev));
  assert_ok(gcap_stream_destroy(b.s));
  gcap_context_destroy(ctx);
}

/*
 * Instantiation skips re-checking ranges that were checked since memory was last freed; any free
 * since (of that buffer or another) makes it check them all again.
 */
static void test_instantiate_rechecks_ranges_after_a_free(void **state) {
  (void)state;
  test_require_sim(); /* only the simulator knows every device allocation */
  gcap_context *ctx = test_context_create();
  gcap_stream *s = NULL;
  assert_ok(gcap_stream_create(ctx, &s));
  const size_t n = 64;
  void *a = test_dev_alloc(ctx, n), *b = test_dev_alloc(ctx, n), *other = test_dev_alloc(ctx, n);
  gcap_graph *g = NULL, *captured = NULL, *copy = NULL;
  assert_ok(gcap_graph_create(ctx, &g));
  gcap_memset_node_params fill = memset1d(a, 0x5a, n);
  gcap_node *node = NULL;
  assert_ok(gcap_graph_add_memset_node(g, NULL, 0, &fill, &node));
  assert_ok(gcap_stream_begin_capture(s, GCAP_CAPTURE_MODE_GLOBAL));
  assert_ok(gcap_memcpy_async(s, b, a, n, GCAP_MEMCPY_DEVICE_TO_DEVICE));
  assert_ok(gcap_stream_end_capture(s, &captured));
  gcap_exec *x = NULL;
  assert_ok(gcap_graph_instantiate(g, 0, &x));
  gcap_exec_destroy(x);
  assert_ok(gcap_graph_clone(g, &copy));

  assert_ok(gcap_mem_free(ctx, other)); /* unrelated: everything is checked again, and still valid */
  assert_ok(gcap_graph_instantiate(g, 0, &x));
  gcap_exec_destroy(x);

  assert_ok(gcap_mem_free(ctx, a));
  x = NULL;
  assert_status(gcap_graph_instantiate(g, 0, &x), GCAP_ERROR_INVALID_VALUE);
  assert_null(x);
  test_assert_message_contains("node 0 (memset)");
  assert_status(gcap_graph_instantiate(copy, 0, &x), GCAP_ERROR_INVALID_VALUE);
  test_assert_message_contains("node 0 (memset)");
  assert_status(gcap_graph_instantiate(captured, 0, &x), GCAP_ERROR_INVALID_VALUE);
  test_assert_message_contains("node 0 (memcpy)");

  fill.dst = b; /* a valid range again: instantiation succeeds and runs it */
  assert_ok(gcap_node_set_memset_params(node, &fill));
  assert_ok(gcap_graph_instantiate(g, 0, &x));
  launch_sync(x, s);
  assert_dev_bytes(ctx, b, 0x5a, n);
  gcap_exec_destroy(x);

  gcap_graph_destroy(g);
  gcap_graph_destroy(copy);
  gcap_graph_destroy(captured);
  assert_ok(gcap_mem_free(ctx, b));
  assert_ok(gcap_stream_destroy(s));
  gcap_context_destroy(ctx);
}

/* gcap_graph_instantiate_with_params: flags, an upload stream, the result and the failing node. */
static void test_instantiate_with_params(void **state) {
  (void)state;
  gcap_context *ctx = test_context_create();
  gcap_stream *s = NULL;
  assert_ok(gcap_stream_create(ctx, &s));
  void *d = test_dev_alloc(ctx, 64);
  gcap_graph *g = NULL;
  assert_ok(gcap_graph_create(ctx, &g));
  gcap_memset_node_params fill = memset1d(d, 0x3c, 64);
  gcap_node *node = NULL;
  assert_ok(gcap_graph_add_memset_node(g, NULL, 0, &fill, &node));

  gcap_instantiate_params p = {GCAP_INSTANTIATE_AUTO_FREE_ON_LAUNCH | GCAP_INSTANTIATE_UPLOAD, s, node, 99};
  gcap_exec *x = NULL;
  assert_ok(gcap_graph_instantiate_with_params(g, &p, &x));
  assert_int_equal(p.result_out, GCAP_INSTANTIATE_SUCCESS);
  assert_null(p.error_node_out);
  unsigned flags = 0;
  assert_ok(gcap_exec_get_flags(x, &flags));
  assert_int_equal(flags, GCAP_INSTANTIATE_AUTO_FREE_ON_LAUNCH | GCAP_INSTANTIATE_UPLOAD);
  launch_sync(x, s);
  assert_dev_bytes(ctx, d, 0x3c, 64);
  gcap_exec_destroy(x);

  p = (gcap_instantiate_params){0, NULL, NULL, GCAP_INSTANTIATE_SUCCESS};
  assert_ok(gcap_graph_instantiate_with_params(g, &p, &x)); /* no upload: no stream needed */
  gcap_exec_destroy(x);

  /* Refusals: the flags, the upload stream, and a node whose range is gone (named in the params). */
  p.flags = 16;
  x = NULL;
  assert_status(gcap_graph_instantiate_with_params(g, &p, &x), GCAP_ERROR_INVALID_VALUE);
  test_assert_message_contains("params->flags 0x10 has unknown bits 0x10");
  assert_null(x);
  assert_int_equal(p.result_out, GCAP_INSTANTIATE_ERROR);
  p.flags = GCAP_INSTANTIATE_DEVICE_LAUNCH;
  assert_status(gcap_graph_instantiate_with_params(g, &p, &x), GCAP_ERROR_NOT_SUPPORTED);
  p.flags = GCAP_INSTANTIATE_UPLOAD;
  p.upload_stream = NULL;
  assert_status(gcap_graph_instantiate_with_params(g, &p, &x), GCAP_ERROR_INVALID_HANDLE);
  test_assert_message_contains("params->upload_stream is NULL");
  assert_status(gcap_graph_instantiate_with_params(g, NULL, &x), GCAP_ERROR_INVALID_VALUE);
  test_assert_message_contains("params is NULL");
  p.flags = 0;
  assert_status(gcap_graph_instantiate_with_params(g, &p, NULL), GCAP_ERROR_INVALID_VALUE);
  assert_status(gcap_graph_instantiate_with_params(NULL, &p, &x), GCAP_ERROR_INVALID_HANDLE);

  if (test_on_sim()) { /* only the simulator knows every allocation */
    gcap_node *second = NULL;
    void *gone = test_dev_alloc(ctx, 64);
    gcap_memset_node_params late = memset1d(gone, 1, 64);
    assert_ok(gcap_graph_add_memset_node(g, &node, 1, &late, &second));
    assert_ok(gcap_mem_free(ctx, gone));
    assert_status(gcap_graph_instantiate_with_params(g, &p, &x), GCAP_ERROR_INVALID_VALUE);
    assert_int_equal(p.result_out, GCAP_INSTANTIATE_ERROR);
    assert_ptr_equal(p.error_node_out, second);
    assert_null(x);
  }
  gcap_graph_destroy(g);
  assert_ok(gcap_mem_free(ctx, d));
  assert_ok(gcap_stream_destroy(s));
  gcap_context_destroy(ctx);
}

/* A range freed after instantiation fails the whole launch (simulator re-check). */
static void test_launch_after_buffer_freed(void **state) {
  (void)state;
  test_require_sim(); /* only the simulator re-checks ranges at launch (eager.md#memory) */
  gcap_context *ctx = test_context_create();
  gcap_stream *s = NULL;
  assert_ok(gcap_stream_create(ctx, &s));
  const size_t n = 48;
  void *keep = test_dev_alloc(ctx, n), *gone = test_dev_alloc(ctx, n);

  /* host root -> fill keep ; fill gone ; host after both */
  gcap_graph *g = NULL;
  assert_ok(gcap_graph_create(ctx, &g));
  int calls = 0;
  gcap_node *h0 = add_counter(g, NULL, 0, &calls);
  gcap_memset_node_params pk = memset1d(keep, 0x42, n), pg = memset1d(gone, 0x24, n);
  gcap_node *mk = NULL, *mg = NULL;
  assert_ok(gcap_graph_add_memset_node(g, &h0, 1, &pk, &mk));
  assert_ok(gcap_graph_add_memset_node(g, NULL, 0, &pg, &mg));
  gcap_node *tail[2] = {mk, mg};
  add_counter(g, tail, 2, &calls);
  gcap_exec *x = NULL;
  assert_ok(gcap_graph_instantiate(g, 0, &x));
  gcap_graph_destroy(g);

  launch_sync(x, s);
  assert_int_equal(calls, 2);
  assert_dev_bytes(ctx, keep, 0x42, n);

  assert_ok(gcap_mem_free(ctx, gone));
  dev_fill_bytes(ctx, keep, 0, n);
  gcap_sim_stats before = sim_stats(ctx);
  assert_status(gcap_exec_launch(x, s), GCAP_ERROR_INVALID_VALUE);
  test_assert_message_set();
  assert_ok(gcap_stream_synchronize(s));
  gcap_sim_stats after = sim_stats(ctx);
  assert_int_equal(calls, 2);
  assert_dev_bytes(ctx, keep, 0x00, n);
  assert_int_equal(after.nodes_executed, before.nodes_executed);
  assert_int_equal(after.host_calls, before.host_calls);
  assert_int_equal(after.bytes_set, before.bytes_set);
  assert_status(gcap_exec_launch(x, s), GCAP_ERROR_INVALID_VALUE);
  assert_int_equal(calls, 2);

  /* The same for a copy node whose device source was freed. */
  void *src = test_dev_alloc(ctx, n);
  unsigned char host[48];
  memset(host, 0x77, sizeof host);
  gcap_graph *g2 = NULL;
  assert_ok(gcap_graph_create(ctx, &g2));
  int calls2 = 0;
  gcap_node *r = add_counter(g2, NULL, 0, &calls2);
  gcap_memcpy_node_params cp = {.dst = host, .src = src, .bytes = n, .kind = GCAP_MEMCPY_DEVICE_TO_HOST};
  gcap_node *c = NULL;
  assert_ok(gcap_graph_add_memcpy_node(g2, &r, 1, &cp, &c));
  gcap_exec *x2 = NULL;
  assert_ok(gcap_graph_instantiate(g2, 0, &x2));
  gcap_graph_destroy(g2);
  assert_ok(gcap_mem_free(ctx, src));
  assert_status(gcap_exec_launch(x2, s), GCAP_ERROR_INVALID_VALUE);
  assert_ok(gcap_stream_synchronize(s));
  assert_int_equal(calls2, 0);
  for (size_t i = 0; i < sizeof host; i++) assert_int_equal(host[i], 0x77);

  /* The stream still works for other execs. */
  gcap_graph *g3 = NULL;
  assert_ok(gcap_graph_create(ctx, &g3));
  int calls3 = 0;
  add_counter(g3, NULL, 0, &calls3);
  gcap_exec *x3 = NULL;
  assert_ok(gcap_graph_instantiate(g3, 0, &x3));
  launch_sync(x3, s);
  assert_int_equal(calls3, 1);

  gcap_exec_destroy(x);
  gcap_exec_destroy(x2);
  gcap_exec_destroy(x3);
  gcap_graph_destroy(g3);
  assert_ok(gcap_mem_free(ctx, keep));
  assert_ok(gcap_stream_destroy(s));
  gcap_context_destroy(ctx);
}

static void test_exec_destroy(void **state) {
  (void)state;
  gcap_exec_destroy(NULL);
  gcap_context *ctx = test_context_create();
  gcap_stream *s = NULL;
  assert_ok(gcap_stream_create(ctx, &s));
  gcap_graph *g = NULL;
  assert_ok(gcap_graph_create(ctx, &g));
  int calls = 0;
  add_counter(g, NULL, 0, &calls);
  gcap_exec *x = NULL;
  assert_ok(gcap_graph_instantiate(g, 0, &x));
  assert_int_equal(gcap_exec_node_count(x), 1);
  launch_sync(x, s);
  gcap_exec_destroy(x);
  assert_status(gcap_exec_launch(x, s), GCAP_ERROR_INVALID_HANDLE);
  assert_status(gcap_exec_upload(x, s), GCAP_ERROR_INVALID_HANDLE);
  assert_int_equal(gcap_exec_node_count(x), 0);
  assert_ok(gcap_stream_synchronize(s));
  assert_int_equal(calls, 1);
  /* The graph is unaffected by destroying its exec. */
  assert_int_equal(gcap_graph_node_count(g), 1);
  assert_ok(gcap_graph_instantiate(g, 0, &x));
  launch_sync(x, s);
  assert_int_equal(calls, 2);
  /* An exec left alive is freed with its context. */
  gcap_graph_destroy(g);
  assert_ok(gcap_stream_destroy(s));
  gcap_context_destroy(ctx);
}

static void test_two_execs_independent(void **state) {
  (void)state;
  gcap_context *ctx = test_context_create();
  gcap_stream *s = NULL;
  assert_ok(gcap_stream_create(ctx, &s));
  const size_t n = 16;
  void *a = test_dev_alloc(ctx, n);
  gcap_graph *g = NULL;
  assert_ok(gcap_graph_create(ctx, &g));
  gcap_memset_node_params mp = memset1d(a, 1, n);
  gcap_node *m = NULL;
  assert_ok(gcap_graph_add_memset_node(g, NULL, 0, &mp, &m));
  int calls = 0;
  add_counter(g, &m, 1, &calls);

  gcap_exec *x1 = NULL, *x2 = NULL;
  assert_ok(gcap_graph_instantiate(g, 0, &x1));
  mp.value = 2;
  assert_ok(gcap_node_set_memset_params(m, &mp));
  assert_ok(gcap_graph_instantiate(g, 0, &x2));
  assert_non_null(x1);
  assert_non_null(x2);
  assert_true(x1 != x2);
  assert_int_equal(gcap_exec_node_count(x1), 2);
  assert_int_equal(gcap_exec_node_count(x2), 2);

  launch_sync(x2, s);
  assert_dev_bytes(ctx, a, 2, n);
  launch_sync(x1, s);
  assert_dev_bytes(ctx, a, 1, n);
  assert_int_equal(calls, 2);

  gcap_exec_destroy(x1);
  assert_status(gcap_exec_launch(x1, s), GCAP_ERROR_INVALID_HANDLE);
  launch_sync(x2, s);
  assert_dev_bytes(ctx, a, 2, n);
  assert_int_equal(calls, 3);

  gcap_exec_destroy(x2);
  gcap_graph_destroy(g);
  assert_ok(gcap_mem_free(ctx, a));
  assert_ok(gcap_stream_destroy(s));
  gcap_context_destroy(ctx);
}

/* ------------------------------------------------------------- sim stats */

static void test_sim_stats_per_launch(void **state) {
  (void)state;
  test_require_sim(); /* gcap_sim_get_stats counters */
  gcap_context *ctx = test_context_create();
  gcap_module *mod = load_kernels(ctx);
  gcap_stream *s = NULL;
  assert_ok(gcap_stream_create(ctx, &s));
  float *d = test_dev_alloc(ctx, 64);
  void *fillbuf = test_dev_alloc(ctx, 256);
  void *d2 = test_dev_alloc(ctx, 32);
  float host[16];
  for (int i = 0; i < 16; i++) host[i] = (float)i;

  gcap_graph *g = NULL;
  assert_ok(gcap_graph_create(ctx, &g));
  gcap_node *up = NULL, *k = NULL, *stub = NULL, *ms = NULL, *child = NULL, *empty = NULL;
  gcap_memcpy_node_params cp = {.dst = d, .src = host, .bytes = 64, .kind = GCAP_MEMCPY_HOST_TO_DEVICE};
  assert_ok(gcap_graph_add_memcpy_node(g, NULL, 0, &cp, &up));
  uint32_t n = 16;
  void *args[] = {&d, &n};
  gcap_kernel_node_params kp = {.kernel = test_kernel_of(mod, "axpb"),
                                .grid = GCAP_DIM3(1, 1, 1),
                                .block = GCAP_DIM3(16, 1, 1),
                                .shared_mem_bytes = 0,
                                .args = args};
  assert_ok(gcap_graph_add_kernel_node(g, &up, 1, &kp, &k));
  gcap_kernel_node_params sp = {.kernel = test_kernel_of(mod, "stub"),
                                .grid = GCAP_DIM3(2, 1, 1),
                                .block = GCAP_DIM3(8, 1, 1),
                                .shared_mem_bytes = 0,
                                .args = NULL};
  assert_ok(gcap_graph_add_kernel_node(g, &k, 1, &sp, &stub));
  gcap_memset_node_params mp = {
      .dst = fillbuf, .value = 0xdeadbeefu, .element_size = 4, .width = 8, .height = 3, .pitch = 64};
  assert_ok(gcap_graph_add_memset_node(g, NULL, 0, &mp, &ms));
  int calls = 0;
  add_counter(g, &ms, 1, &calls);

  gcap_graph *cg = NULL;
  assert_ok(gcap_graph_create(ctx, &cg));
  gcap_node *ch = add_counter(cg, NULL, 0, &calls);
  gcap_memcpy_node_params dd = {.dst = d2, .src = d, .bytes = 32, .kind = GCAP_MEMCPY_DEVICE_TO_DEVICE};
  gcap_node *cc = NULL;
  assert_ok(gcap_graph_add_memcpy_node(cg, &ch, 1, &dd, &cc));
  assert_ok(gcap_graph_add_child_graph_node(g, &stub, 1, cg, &child));
  gcap_graph_destroy(cg);
  assert_ok(gcap_graph_add_empty_node(g, &child, 1, &empty));

  gcap_exec *x = NULL;
  assert_ok(gcap_graph_instantiate(g, 0, &x));
  gcap_graph_destroy(g);
  const size_t nodes = gcap_exec_node_count(x);
  assert_int_equal(nodes, 6 + 1 + 2);

  gcap_sim_stats prev = sim_stats(ctx);
  for (int l = 1; l <= 3; l++) {
    launch_sync(x, s);
    gcap_sim_stats now = sim_stats(ctx);
    assert_int_equal(now.graph_launches - prev.graph_launches, 1);
    assert_int_equal(now.nodes_executed - prev.nodes_executed, nodes);
    assert_int_equal(now.kernels_executed - prev.kernels_executed, 1);
    assert_int_equal(now.kernels_stubbed - prev.kernels_stubbed, 1);
    assert_int_equal(now.bytes_copied - prev.bytes_copied, 64 + 32);
    assert_int_equal(now.bytes_set - prev.bytes_set, 8 * 4 * 3);
    assert_int_equal(now.host_calls - prev.host_calls, 2);
    assert_int_equal(calls, 2 * l);
    prev = now;
  }

  /* The work really happened: d = 2*host+1, d2 = first 8 floats of d, the 2-D fill left pitch gaps alone. */
  float back[16];
  assert_ok(gcap_memcpy(ctx, back, d, sizeof back, GCAP_MEMCPY_DEVICE_TO_HOST));
  for (int i = 0; i < 16; i++) assert_true(back[i] == host[i] * 2.0f + 1.0f);
  assert_ok(gcap_memcpy(ctx, back, d2, 32, GCAP_MEMCPY_DEVICE_TO_HOST));
  for (int i = 0; i < 8; i++) assert_true(back[i] == host[i] * 2.0f + 1.0f);

  gcap_exec_destroy(x);
  assert_ok(gcap_mem_free(ctx, d));
  assert_ok(gcap_mem_free(ctx, d2));
  assert_ok(gcap_mem_free(ctx, fillbuf));
  assert_ok(gcap_module_unload(mod));
  assert_ok(gcap_stream_destroy(s));
  gcap_context_destroy(ctx);
}

static void test_sim_memset2d_rows(void **state) {
  (void)state;
  gcap_context *ctx = test_context_create();
  gcap_stream *s = NULL;
  assert_ok(gcap_stream_create(ctx, &s));
  unsigned char *buf = test_dev_alloc(ctx, 160);
  dev_fill_bytes(ctx, buf, 0, 160);
  gcap_graph *g = NULL;
  assert_ok(gcap_graph_create(ctx, &g));
  gcap_memset_node_params mp = {
      .dst = buf, .value = 0x01020304u, .element_size = 4, .width = 8, .height = 3, .pitch = 64};
  gcap_node *ms = NULL;
  assert_ok(gcap_graph_add_memset_node(g, NULL, 0, &mp, &ms));
  gcap_exec *x = NULL;
  assert_ok(gcap_graph_instantiate(g, 0, &x));
  launch_sync(x, s);
  uint32_t back[40];
  assert_ok(gcap_memcpy(ctx, back, buf, 160, GCAP_MEMCPY_DEVICE_TO_HOST));
  for (size_t i = 0; i < 40; i++) {
    size_t off = i * 4;
    bool inside = (off % 64) < 32;
    assert_int_equal(back[i], inside ? 0x01020304u : 0u);
  }
  gcap_exec_destroy(x);
  gcap_graph_destroy(g);
  assert_ok(gcap_mem_free(ctx, buf));
  assert_ok(gcap_stream_destroy(s));
  gcap_context_destroy(ctx);
}

/* ----------------------------------------------------------- kernel args */

static void test_kernel_args_copied_at_add(void **state) {
  (void)state;
  test_require_sim(); /* checks what fill_sim wrote */
  gcap_context *ctx = test_context_create();
  gcap_module *mod = load_kernels(ctx);
  gcap_stream *s = NULL;
  assert_ok(gcap_stream_create(ctx, &s));
  const size_t bytes = 8 * sizeof(float);
  float *da = test_dev_alloc(ctx, bytes), *db = test_dev_alloc(ctx, bytes);
  dev_fill_bytes(ctx, da, 0, bytes);
  dev_fill_bytes(ctx, db, 0, bytes);

  float *p = da;
  float v = 3.5f;
  uint32_t n = 8;
  void **args = malloc(3 * sizeof *args);
  assert_non_null(args);
  args[0] = &p;
  args[1] = &v;
  args[2] = &n;
  gcap_graph *g = NULL;
  assert_ok(gcap_graph_create(ctx, &g));
  gcap_kernel_node_params kp = {.kernel = test_kernel_of(mod, "fill"),
                                .grid = GCAP_DIM3(1, 1, 1),
                                .block = GCAP_DIM3(8, 1, 1),
                                .shared_mem_bytes = 0,
                                .args = args};
  gcap_node *k = NULL;
  assert_ok(gcap_graph_add_kernel_node(g, NULL, 0, &kp, &k));
  /* Change everything the caller passed. */
  p = db;
  v = 7.0f;
  n = 1;
  args[0] = NULL;
  free(args);

  gcap_kernel_node_params got;
  memset(&got, 0, sizeof got);
  assert_ok(gcap_node_get_kernel_params(k, &got));
  assert_non_null(got.args);
  float gv = 0;
  memcpy(&gv, got.args[1], sizeof gv);
  assert_true(gv == 3.5f);
  float *gp = NULL;
  memcpy(&gp, got.args[0], sizeof gp);
  assert_ptr_equal(gp, da);

  gcap_exec *x = NULL;
  assert_ok(gcap_graph_instantiate(g, 0, &x));
  /* Node params replaced after instantiation: the exec keeps its copy. */
  float v2 = 9.0f;
  uint32_t n2 = 8;
  float *p2 = db;
  void *args2[] = {&p2, &v2, &n2};
  kp.args = args2;
  assert_ok(gcap_node_set_kernel_params(k, &kp));
  v2 = 11.0f;
  launch_sync(x, s);

  float back[8];
  assert_ok(gcap_memcpy(ctx, back, da, bytes, GCAP_MEMCPY_DEVICE_TO_HOST));
  for (int i = 0; i < 8; i++) assert_true(back[i] == 3.5f);
  assert_dev_bytes(ctx, db, 0, bytes);

  /* A new exec from the edited graph uses the values copied by set_kernel_params (9, not 11). */
  gcap_exec *x2 = NULL;
  assert_ok(gcap_graph_instantiate(g, 0, &x2));
  gcap_graph_destroy(g);
  launch_sync(x2, s);
  assert_ok(gcap_memcpy(ctx, back, db, bytes, GCAP_MEMCPY_DEVICE_TO_HOST));
  for (int i = 0; i < 8; i++) assert_true(back[i] == 9.0f);

  gcap_exec_destroy(x);
  gcap_exec_destroy(x2);
  assert_ok(gcap_mem_free(ctx, da));
  assert_ok(gcap_mem_free(ctx, db));
  assert_ok(gcap_module_unload(mod));
  assert_ok(gcap_stream_destroy(s));
  gcap_context_destroy(ctx);
}

int main(void) {
  test_require_backend();
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_instantiate_arguments),
      cmocka_unit_test(test_exec_is_snapshot),
      cmocka_unit_test(test_exec_snapshot_host_params),
      cmocka_unit_test(test_pipeline_replay),
      cmocka_unit_test(test_random_dag_order),
      cmocka_unit_test(test_random_dag_order_shuffled),
      cmocka_unit_test(test_child_graph_order),
      cmocka_unit_test(test_nested_child_graph_order),
      cmocka_unit_test(test_exec_node_count),
      cmocka_unit_test(test_event_nodes),
      cmocka_unit_test(test_empty_nodes),
      cmocka_unit_test(test_exec_upload),
      cmocka_unit_test(test_exec_launch_arguments),
      cmocka_unit_test(test_launch_from_own_host_node),
      cmocka_unit_test(test_destroy_from_own_host_node),
      cmocka_unit_test(test_blocking_calls_in_host_node),
      cmocka_unit_test(test_launch_after_buffer_freed),
      cmocka_unit_test(test_instantiate_rechecks_ranges_after_a_free),
      cmocka_unit_test(test_instantiate_with_params),
      cmocka_unit_test(test_exec_destroy),
      cmocka_unit_test(test_two_execs_independent),
      cmocka_unit_test(test_sim_stats_per_launch),
      cmocka_unit_test(test_sim_memset2d_rows),
      cmocka_unit_test(test_kernel_args_copied_at_add),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
