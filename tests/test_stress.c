/*
 * Concurrency stress, meant for ThreadSanitizer as much as for its own assertions: threads
 * adding and destroying nodes of one graph while others enumerate and query it, and one
 * executable launched from two threads while a third updates it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "common.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#define WRITERS 2
#define READERS 2
#define CHAIN 200    /* nodes each writer leaves in the graph */
#define LAUNCHES 100 /* per launching thread */
#define UPDATES 100
#define ELEMS 64u

/* The first failure of any thread, reported by the main thread (cmocka asserts are not thread-safe). */
static _Atomic int failures;
static char failure[512];

static void thread_fail(const char *what, gcap_status st) {
  if (atomic_fetch_add(&failures, 1) == 0)
    snprintf(failure, sizeof failure, "%s -> %s (%s)", what, gcap_status_name(st), gcap_last_error_message());
}

#define T_OK(expr)                                                                                                     \
  do {                                                                                                                 \
    gcap_status st_ = (expr);                                                                                          \
    if (st_ != GCAP_SUCCESS) return thread_fail(#expr, st_), NULL;                                                     \
  } while (0)
#define T_CHECK(cond)                                                                                                  \
  do {                                                                                                                 \
    if (!(cond)) return thread_fail(#cond, GCAP_SUCCESS), NULL;                                                        \
  } while (0)

static void join_all(pthread_t *th, size_t n) {
  for (size_t i = 0; i < n; i++) assert_int_equal(pthread_join(th[i], NULL), 0);
  if (atomic_load(&failures)) print_error("%s\n", failure);
  assert_int_equal(atomic_load(&failures), 0);
}

/* --------------------------------------------- builders and readers of one graph */

struct shared_graph {
  gcap_graph *g;
  _Atomic int writers_left;
};

/* A chain of CHAIN empty nodes, with a throw-away node made and destroyed beside every tenth. */
static void *writer_main(void *p) {
  struct shared_graph *sg = p;
  gcap_node *prev = NULL, *node = NULL, *spare = NULL;
  for (int i = 0; i < CHAIN; i++) {
    T_OK(gcap_graph_add_empty_node(sg->g, prev ? &prev : NULL, prev != NULL, &node));
    prev = node;
    if (i % 10 != 0) continue;
    T_OK(gcap_graph_add_empty_node(sg->g, &prev, 1, &spare));
    T_OK(gcap_graph_destroy_node(spare));
  }
  atomic_fetch_sub(&sg->writers_left, 1);
  return NULL;
}

/* Enumerates while the writers add: every node it sees is an empty node, or one destroyed since. */
static void *reader_main(void *p) {
  struct shared_graph *sg = p;
  gcap_node *nodes[WRITERS * CHAIN + WRITERS];
  size_t last = 0;
  do { /* at least one pass, however fast the writers were */
    size_t count = sizeof nodes / sizeof nodes[0];
    T_OK(gcap_graph_get_nodes(sg->g, nodes, &count));
    T_CHECK(count <= sizeof nodes / sizeof nodes[0]);
    size_t chain_nodes = gcap_graph_node_count(sg->g);
    T_CHECK(chain_nodes + WRITERS >= last); /* only the spares ever go away */
    last = chain_nodes;
    for (size_t i = 0; i < count; i++) {
      gcap_node_type t = gcap_node_get_type(nodes[i]);
      T_CHECK(t == GCAP_NODE_EMPTY || t == (gcap_node_type)-1);
      size_t deps = 0;
      gcap_status st = gcap_node_get_dependencies(nodes[i], NULL, &deps);
      T_CHECK(st == GCAP_SUCCESS || st == GCAP_ERROR_INVALID_HANDLE);
      T_CHECK(deps <= 1);
    }
    size_t roots = 0, edges = 0;
    T_OK(gcap_graph_get_root_nodes(sg->g, NULL, &roots));
    T_CHECK(roots <= WRITERS);
    T_OK(gcap_graph_get_edges(sg->g, NULL, NULL, &edges));
    (void)gcap_graph_edge_count(sg->g);
  } while (atomic_load(&sg->writers_left) > 0);
  return NULL;
}

static void test_stress_build_while_reading(void **state) {
  (void)state;
  atomic_store(&failures, 0);
  gcap_context *ctx = test_context_create();
  struct shared_graph sg;
  assert_ok(gcap_graph_create(ctx, &sg.g));
  atomic_init(&sg.writers_left, WRITERS);
  pthread_t th[WRITERS + READERS];
  for (int i = 0; i < WRITERS + READERS; i++) /* readers first, so that they overlap the writers */
    assert_int_equal(pthread_create(&th[i], NULL, i < READERS ? reader_main : writer_main, &sg), 0);
  join_all(th, WRITERS + READERS);
  assert_int_equal(gcap_graph_node_count(sg.g), WRITERS * CHAIN);
  assert_int_equal(gcap_graph_edge_count(sg.g), WRITERS * (CHAIN - 1));
  size_t roots = 0;
  assert_ok(gcap_graph_get_root_nodes(sg.g, NULL, &roots));
  assert_int_equal(roots, WRITERS);
  gcap_graph_destroy(sg.g);
  gcap_context_destroy(ctx);
}

/* ------------------------------------- one executable, two launchers, one updater */

/* p[i] = v for i < n. Params: uint32_t *p, uint32_t v, uint32_t n. */
static void set_sim(const gcap_sim_thread *t, void *const *args) {
  uint32_t *p, v, n;
  memcpy(&p, args[0], sizeof p);
  memcpy(&v, args[1], sizeof v);
  memcpy(&n, args[2], sizeof n);
  uint32_t i = t->block_idx.x * t->block_dim.x + t->thread_idx.x;
  if (i < n) p[i] = v;
}

static const size_t set_sizes[] = {sizeof(uint32_t *), sizeof(uint32_t), sizeof(uint32_t)};

struct shared_exec {
  gcap_context *ctx;
  gcap_exec *x;
  gcap_graph *g; /* the graph x came from: the updater edits it */
  gcap_node *set;
  gcap_kernel *kernel;
  uint32_t *buf;  /* device memory, ELEMS words */
  uint32_t *seen; /* page-locked: what a launch copied back from buf, for its host node to read */
  _Atomic int host_calls, torn, launchers_left;
};

/*
 * The host node after the kernel and the copy back: a launch sees one value everywhere, never a
 * mix of two updates. It reads the copy, as host code on a GPU must.
 */
static void after_set(void *p) {
  struct shared_exec *sh = p;
  atomic_fetch_add(&sh->host_calls, 1);
  for (uint32_t i = 1; i < ELEMS; i++)
    if (sh->seen[i] != sh->seen[0] || (sh->seen[0] != 1u && sh->seen[0] != 2u)) {
      atomic_fetch_add(&sh->torn, 1);
      return;
    }
}

static void *launcher_main(void *p) {
  struct shared_exec *sh = p;
  gcap_stream *s = NULL;
  T_OK(gcap_stream_create(sh->ctx, &s));
  for (int i = 0; i < LAUNCHES; i++) {
    T_OK(gcap_exec_launch(sh->x, s));
    if (i % 10 == 0) T_OK(gcap_stream_synchronize(s));
  }
  T_OK(gcap_stream_synchronize(s));
  T_OK(gcap_stream_destroy(s));
  atomic_fetch_sub(&sh->launchers_left, 1);
  return NULL;
}

/* Alternates the value between 1 and 2: per-node setter, then whole-graph update. */
static void *updater_main(void *p) {
  struct shared_exec *sh = p;
  uint32_t n = ELEMS;
  for (uint32_t i = 0; i < UPDATES || atomic_load(&sh->launchers_left) > 0; i++) {
    uint32_t v = 1u + i % 2u;
    void *args[] = {&sh->buf, &v, &n};
    gcap_kernel_node_params kp = {sh->kernel, GCAP_DIM3(2, 1, 1), GCAP_DIM3(32, 1, 1), 0, args};
    if (i % 2 == 0) {
      T_OK(gcap_exec_kernel_node_set_params(sh->x, sh->set, &kp));
    } else {
      gcap_exec_update_info info;
      T_OK(gcap_node_set_kernel_params(sh->set, &kp));
      T_OK(gcap_exec_update(sh->x, sh->g, &info));
      T_CHECK(info.result == GCAP_EXEC_UPDATE_SUCCESS);
    }
    if (i >= 100000) break; /* the launchers are stuck: they report it */
  }
  return NULL;
}

static void test_stress_launch_while_updating(void **state) {
  (void)state;
  test_require_sim();
  atomic_store(&failures, 0);
  struct shared_exec sh;
  memset(&sh, 0, sizeof sh);
  sh.ctx = test_context_create();
  const gcap_kernel_def def = {.name = "set", .sim_fn = set_sim, .num_params = 3, .param_sizes = set_sizes};
  gcap_module_desc d = {.kernels = &def, .num_kernels = 1};
  gcap_module *m = NULL;
  assert_ok(gcap_module_load(sh.ctx, &d, &m));
  assert_ok(gcap_module_get_kernel(m, "set", &sh.kernel));
  void *mem = NULL;
  assert_ok(gcap_mem_alloc(sh.ctx, ELEMS * sizeof(uint32_t), &mem));
  sh.buf = mem;
  assert_ok(gcap_host_alloc(sh.ctx, ELEMS * sizeof(uint32_t), &mem));
  sh.seen = mem;
  uint32_t n = ELEMS, one = 1;
  void *args[] = {&sh.buf, &one, &n};
  gcap_kernel_node_params kp = {sh.kernel, GCAP_DIM3(2, 1, 1), GCAP_DIM3(32, 1, 1), 0, args};
  gcap_memcpy_node_params cp = {sh.seen, sh.buf, ELEMS * sizeof(uint32_t), GCAP_MEMCPY_DEVICE_TO_HOST};
  gcap_host_node_params hp = {after_set, &sh};
  gcap_node *copy = NULL, *check = NULL;
  assert_ok(gcap_graph_create(sh.ctx, &sh.g));
  assert_ok(gcap_graph_add_kernel_node(sh.g, NULL, 0, &kp, &sh.set));
  assert_ok(gcap_graph_add_memcpy_node(sh.g, &sh.set, 1, &cp, &copy));
  assert_ok(gcap_graph_add_host_node(sh.g, &copy, 1, &hp, &check));
  assert_ok(gcap_graph_instantiate(sh.g, 0, &sh.x));
  atomic_init(&sh.launchers_left, 2);

  pthread_t th[3];
  assert_int_equal(pthread_create(&th[0], NULL, launcher_main, &sh), 0);
  assert_int_equal(pthread_create(&th[1], NULL, launcher_main, &sh), 0);
  assert_int_equal(pthread_create(&th[2], NULL, updater_main, &sh), 0);
  join_all(th, 3);
  assert_ok(gcap_context_synchronize(sh.ctx));
  assert_int_equal(atomic_load(&sh.host_calls), 2 * LAUNCHES);
  assert_int_equal(atomic_load(&sh.torn), 0);

  gcap_exec_destroy(sh.x);
  gcap_graph_destroy(sh.g);
  assert_ok(gcap_mem_free(sh.ctx, sh.buf));
  assert_ok(gcap_host_free(sh.ctx, sh.seen));
  assert_ok(gcap_module_unload(m));
  gcap_context_destroy(sh.ctx);
}

int main(void) {
  test_require_backend();
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_stress_build_while_reading),
      cmocka_unit_test(test_stress_launch_while_updating),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
