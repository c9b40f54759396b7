/* Race analysis (gcap_graph_find_races) and the simulator's check_races. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"

#define BYTES 4096u

struct fx {
  gcap_context *ctx;
  gcap_graph *g;
  unsigned char *a, *b; /* device buffers of BYTES */
};

static int setup(void **state) {
  struct fx *f = calloc(1, sizeof *f);
  if (!f) return -1;
  f->ctx = test_context_create();
  if (gcap_graph_create(f->ctx, &f->g) != GCAP_SUCCESS) return -1;
  f->a = test_dev_alloc(f->ctx, BYTES);
  f->b = test_dev_alloc(f->ctx, BYTES);
  *state = f;
  return 0;
}

static int teardown(void **state) {
  struct fx *f = *state;
  gcap_graph_destroy(f->g);
  gcap_context_destroy(f->ctx);
  free(f);
  return 0;
}

static gcap_node *fill(gcap_graph *g, void *dst, size_t bytes, gcap_node *const *deps, size_t n) {
  gcap_memset_node_params p = {dst, 1, 1, bytes, 1, 0};
  gcap_node *node = NULL;
  assert_ok(gcap_graph_add_memset_node(g, deps, n, &p, &node));
  return node;
}

static gcap_node *copy(gcap_graph *g, void *dst, const void *src, size_t bytes, gcap_node *const *deps, size_t n) {
  gcap_memcpy_node_params p = {dst, src, bytes, GCAP_MEMCPY_DEVICE_TO_DEVICE};
  gcap_node *node = NULL;
  assert_ok(gcap_graph_add_memcpy_node(g, deps, n, &p, &node));
  return node;
}

static size_t race_count(const gcap_graph *g) {
  size_t n = 12345;
  assert_ok(gcap_graph_find_races(g, NULL, &n));
  test_assert_message_empty();
  return n;
}

/* The only race of g. */
static gcap_race only_race(const gcap_graph *g) {
  gcap_race r[2];
  size_t n = 2;
  assert_ok(gcap_graph_find_races(g, r, &n));
  assert_int_equal(n, 1);
  assert_null(r[1].first); /* the rest of the array is cleared (rules.md#graph-enumerate) */
  return r[0];
}

static void assert_race(gcap_race r, gcap_node *first, gcap_node *second, const void *addr, size_t bytes) {
  assert_ptr_equal(r.first, first);
  assert_ptr_equal(r.second, second);
  assert_ptr_equal(r.addr, addr);
  assert_int_equal(r.bytes, bytes);
}

/* ---------------------------------------------------------------- copies and fills */

static void test_unordered_writes_race(void **state) {
  struct fx *f = *state;
  gcap_node *x = fill(f->g, f->a, 100, NULL, 0);
  gcap_node *y = fill(f->g, f->a + 60, 100, NULL, 0);
  assert_race(only_race(f->g), x, y, f->a + 60, 40); /* the overlap only */
}

static void test_ordered_writes_do_not_race(void **state) {
  struct fx *f = *state;
  gcap_node *x = fill(f->g, f->a, BYTES, NULL, 0);
  gcap_node *y = fill(f->g, f->a, BYTES, &x, 1);
  fill(f->g, f->a, BYTES, &y, 1);
  assert_int_equal(race_count(f->g), 0);
}

static void test_disjoint_ranges_do_not_race(void **state) {
  struct fx *f = *state;
  fill(f->g, f->a, 64, NULL, 0);
  fill(f->g, f->a + 64, 64, NULL, 0);
  fill(f->g, f->b, BYTES, NULL, 0);
  assert_int_equal(race_count(f->g), 0);
}

static void test_shared_reads_do_not_race(void **state) {
  struct fx *f = *state;
  copy(f->g, f->b, f->a, 64, NULL, 0);
  copy(f->g, f->b + 64, f->a, 64, NULL, 0);
  copy(f->g, f->b + 128, f->a + 32, 64, NULL, 0);
  assert_int_equal(race_count(f->g), 0);
}

static void test_read_against_write_races(void **state) {
  struct fx *f = *state;
  gcap_node *w = fill(f->g, f->a + 10, 20, NULL, 0);
  gcap_node *r = copy(f->g, f->b, f->a, 64, NULL, 0); /* reads a[0..64), writes b */
  assert_race(only_race(f->g), w, r, f->a + 10, 20);
}

static void test_copy_destination_races_with_reader(void **state) {
  struct fx *f = *state;
  gcap_node *c = copy(f->g, f->b, f->a, 64, NULL, 0);
  gcap_node *r = copy(f->g, f->a + 512, f->b + 32, 64, NULL, 0);
  assert_race(only_race(f->g), c, r, f->b + 32, 32);
}

/* A diamond: the branches race with each other, the join and what follows are ordered. */
static void test_fork_join(void **state) {
  struct fx *f = *state;
  gcap_node *top = fill(f->g, f->a, BYTES, NULL, 0);
  gcap_node *left = fill(f->g, f->a, 8, &top, 1);
  gcap_node *right = fill(f->g, f->a + 4, 8, &top, 1);
  gcap_node *both[] = {left, right};
  gcap_node *join = copy(f->g, f->b, f->a, BYTES, both, 2);
  fill(f->g, f->a, BYTES, &join, 1);
  assert_race(only_race(f->g), left, right, f->a + 4, 4);
}

/* Reachability through a long path of nodes that touch other memory. */
static void test_order_through_unrelated_nodes(void **state) {
  struct fx *f = *state;
  gcap_node *first = fill(f->g, f->a, BYTES, NULL, 0);
  gcap_node *prev = first;
  for (int i = 0; i < 50; i++) prev = fill(f->g, f->b + i, 1, &prev, 1);
  gcap_node *side = fill(f->g, f->b + 100, 1, &first, 1); /* ordered after first only */
  fill(f->g, f->a, BYTES, &prev, 1);
  assert_int_equal(race_count(f->g), 0);
  gcap_node *late = fill(f->g, f->a + 7, 1, &side, 1); /* not ordered with the last fill of a */
  gcap_node *nodes[60];
  size_t n = 60;
  assert_ok(gcap_graph_get_nodes(f->g, nodes, &n));
  assert_race(only_race(f->g), nodes[52], late, f->a + 7, 1);
}

/* A 2D fill touches its rows, not the gaps between them. */
static void test_pitched_fill_rows(void **state) {
  struct fx *f = *state;
  gcap_memset_node_params p = {f->a, 0, 1, 16, 4, 64};
  gcap_node *rows = NULL;
  assert_ok(gcap_graph_add_memset_node(f->g, NULL, 0, &p, &rows));
  fill(f->g, f->a + 16, 48, NULL, 0); /* the gap after row 0 */
  assert_int_equal(race_count(f->g), 0);
  gcap_node *hit = fill(f->g, f->a + 64 * 3 + 8, 4, NULL, 0); /* inside row 3 */
  assert_race(only_race(f->g), rows, hit, f->a + 64 * 3 + 8, 4);
}

/* Every pair of unordered writers is reported, once, in creation order. */
static void test_every_pair_reported(void **state) {
  struct fx *f = *state;
  enum { N = 40 };
  gcap_node *w[N];
  for (int i = 0; i < N; i++) w[i] = fill(f->g, f->a, 16, NULL, 0);
  size_t n = 0;
  assert_ok(gcap_graph_find_races(f->g, NULL, &n));
  assert_int_equal(n, N * (N - 1) / 2);
  gcap_race *r = calloc(n, sizeof *r);
  assert_non_null(r);
  assert_ok(gcap_graph_find_races(f->g, r, &n));
  size_t k = 0;
  for (int i = 0; i < N; i++)
    for (int j = i + 1; j < N; j++, k++) assert_race(r[k], w[i], w[j], f->a, 16);
  free(r);
}

/* A long ordered chain on one buffer, with many readers: no race, and quickly. */
static void test_long_chain(void **state) {
  struct fx *f = *state;
  gcap_node *prev = fill(f->g, f->a, BYTES, NULL, 0);
  for (int i = 0; i < 20000; i++) {
    gcap_node *r = copy(f->g, f->b + (i % 64) * 64, f->a, 64, &prev, 1);
    prev = i % 8 == 7 ? fill(f->g, f->a, BYTES, &r, 1) : r;
  }
  assert_int_equal(race_count(f->g), 0);
}

/* ---------------------------------------------------------------- child graphs */

static void test_child_graph_contents(void **state) {
  struct fx *f = *state;
  gcap_graph *child = NULL;
  assert_ok(gcap_graph_create(f->ctx, &child));
  gcap_node *inner = fill(child, f->a, 32, NULL, 0);
  gcap_node *node = NULL;
  assert_ok(gcap_graph_add_child_graph_node(f->g, NULL, 0, child, &node));
  gcap_graph_destroy(child);
  gcap_graph *embedded = NULL;
  assert_ok(gcap_node_get_child_graph(node, &embedded));
  gcap_node *inner_copy = NULL;
  size_t one = 1;
  assert_ok(gcap_graph_get_nodes(embedded, &inner_copy, &one));
  assert_ptr_not_equal(inner_copy, inner); /* the node holds a clone */

  gcap_node *after = fill(f->g, f->a, 32, &node, 1);
  assert_int_equal(race_count(f->g), 0);                        /* ordered after the whole child */
  gcap_node *beside = copy(f->g, f->b, f->a + 16, 32, NULL, 0); /* unordered with both writers */
  gcap_race r[2];
  size_t n = 2;
  assert_ok(gcap_graph_find_races(f->g, r, &n));
  assert_int_equal(n, 2);
  assert_race(r[0], inner_copy, beside, f->a + 16, 16);
  assert_race(r[1], after, beside, f->a + 16, 16);
}

static void test_race_inside_child(void **state) {
  struct fx *f = *state;
  gcap_graph *child = NULL;
  assert_ok(gcap_graph_create(f->ctx, &child));
  fill(child, f->b, 8, NULL, 0);
  fill(child, f->b + 4, 8, NULL, 0);
  assert_int_equal(race_count(child), 1);
  gcap_node *node = NULL;
  gcap_node *root = fill(f->g, f->a, 8, NULL, 0);
  assert_ok(gcap_graph_add_child_graph_node(f->g, &root, 1, child, &node));
  gcap_graph_destroy(child);
  gcap_graph *embedded = NULL;
  assert_ok(gcap_node_get_child_graph(node, &embedded));
  gcap_node *inner[2];
  size_t n = 2;
  assert_ok(gcap_graph_get_nodes(embedded, inner, &n));
  assert_race(only_race(f->g), inner[0], inner[1], f->b + 4, 4);
}

/* ---------------------------------------------------------------- kernels */

static void nop_sim(const gcap_sim_thread *t, void *const *args) {
  (void)t;
  (void)args;
}

static const size_t ptr_int_sizes[] = {sizeof(void *), sizeof(void *), sizeof(int)};

static gcap_kernel *kernel(struct fx *f, const char *name, const gcap_param_access *access) {
  gcap_kernel_def def = {
      .name = name, .sim_fn = nop_sim, .num_params = 3, .param_sizes = ptr_int_sizes, .param_access = access};
  gcap_module_desc d = {.kernels = &def, .num_kernels = 1};
  gcap_module *m = NULL;
  assert_ok(test_module_load(f->ctx, &d, &m));
  return test_kernel_of(m, name);
}

static gcap_node *launch(struct fx *f, gcap_kernel *k, void *p, void *q, gcap_node *const *deps, size_t n) {
  int i = 3;
  void *args[] = {&p, &q, &i};
  gcap_kernel_node_params kp = {k, {1, 1, 1}, {1, 1, 1}, 0, args};
  gcap_node *node = NULL;
  assert_ok(gcap_graph_add_kernel_node(f->g, deps, n, &kp, &node));
  return node;
}

/* Without declarations a pointer argument reads and writes its whole allocation. */
static void test_kernel_unknown_access(void **state) {
  struct fx *f = *state;
  gcap_kernel *k = kernel(f, "opaque", NULL);
  gcap_node *x = launch(f, k, f->a + 100, NULL, NULL, 0);
  gcap_node *y = fill(f->g, f->a + BYTES - 1, 1, NULL, 0);
  assert_race(only_race(f->g), x, y, f->a + BYTES - 1, 1);
  gcap_node *z = launch(f, k, f->b, (void *)(uintptr_t)0x10, &y, 1); /* 0x10 is in no allocation */
  assert_int_equal(race_count(f->g), 1);
  (void)z;
}

static void test_kernel_declared_reads_share(void **state) {
  struct fx *f = *state;
  static const gcap_param_access ro[] = {GCAP_ACCESS_READ, GCAP_ACCESS_WRITE, GCAP_ACCESS_NONE};
  gcap_kernel *k = kernel(f, "reader", ro);
  /* A WRITE parameter must point into memory of the context: each reader writes its own output. */
  launch(f, k, f->a, test_dev_alloc(f->ctx, BYTES), NULL, 0);
  launch(f, k, f->a, test_dev_alloc(f->ctx, BYTES), NULL, 0);
  assert_int_equal(race_count(f->g), 0);
  gcap_node *x = launch(f, k, f->b, f->a, NULL, 0); /* writes a: races with both readers */
  gcap_node *nodes[3];
  size_t n = 3;
  assert_ok(gcap_graph_get_nodes(f->g, nodes, &n));
  gcap_race r[2];
  n = 2;
  assert_ok(gcap_graph_find_races(f->g, r, &n));
  assert_int_equal(n, 2);
  assert_race(r[0], nodes[0], x, f->a, BYTES);
  assert_race(r[1], nodes[1], x, f->a, BYTES);
}

static void test_kernel_access_none_ignored(void **state) {
  struct fx *f = *state;
  static const gcap_param_access none[] = {GCAP_ACCESS_NONE, GCAP_ACCESS_NONE, GCAP_ACCESS_UNKNOWN};
  gcap_kernel *k = kernel(f, "passive", none);
  launch(f, k, f->a, f->a, NULL, 0);
  fill(f->g, f->a, BYTES, NULL, 0);
  assert_int_equal(race_count(f->g), 0);
}

/* ---------------------------------------------------------------- graph memory */

static void test_graph_allocation_races_with_unordered_user(void **state) {
  struct fx *f = *state;
  gcap_stream *s = NULL;
  assert_ok(gcap_stream_create(f->ctx, &s));
  assert_ok(gcap_stream_begin_capture(s, GCAP_CAPTURE_MODE_GLOBAL));
  void *p = NULL;
  assert_ok(gcap_mem_alloc_async(s, 256, &p));
  assert_ok(gcap_memset_async(s, p, 0, 256));
  gcap_graph *g = NULL;
  assert_ok(gcap_stream_end_capture(s, &g));
  assert_int_equal(race_count(g), 0);
  gcap_node *nodes[2];
  size_t n = 2;
  assert_ok(gcap_graph_get_nodes(g, nodes, &n));
  gcap_memset_node_params mp = {(unsigned char *)p + 8, 0, 1, 8, 1, 0};
  gcap_node *loose = NULL;
  assert_ok(gcap_graph_add_memset_node(g, NULL, 0, &mp, &loose));
  gcap_race r[2];
  n = 2;
  assert_ok(gcap_graph_find_races(g, r, &n));
  assert_int_equal(n, 2); /* with the allocation and with the captured fill */
  assert_race(r[0], nodes[0], loose, (unsigned char *)p + 8, 8);
  assert_race(r[1], nodes[1], loose, (unsigned char *)p + 8, 8);
  gcap_graph_destroy(g);
  assert_ok(gcap_stream_destroy(s));
}

/* ---------------------------------------------------------------- enumeration and errors */

static void test_enumeration_r51(void **state) {
  struct fx *f = *state;
  fill(f->g, f->a, 8, NULL, 0);
  fill(f->g, f->a, 8, NULL, 0);
  fill(f->g, f->a, 8, NULL, 0); /* three pairs */
  gcap_race r[5];
  memset(r, 0xff, sizeof r);
  size_t n = 2;
  assert_ok(gcap_graph_find_races(f->g, r, &n));
  assert_int_equal(n, 2); /* min(count, actual) filled, count left */
  assert_non_null(r[1].first);
  assert_int_equal(r[2].bytes, (size_t)-1); /* untouched */
  n = 5;
  assert_ok(gcap_graph_find_races(f->g, r, &n));
  assert_int_equal(n, 3);
  assert_null(r[3].first);
  assert_null(r[4].second);
  assert_int_equal(r[4].bytes, 0);
}

static void test_bad_arguments(void **state) {
  struct fx *f = *state;
  size_t n = 0;
  assert_status(gcap_graph_find_races(f->g, NULL, NULL), GCAP_ERROR_INVALID_VALUE);
  test_assert_message_contains("count");
  assert_status(gcap_graph_find_races(NULL, NULL, &n), GCAP_ERROR_INVALID_HANDLE);
  test_assert_message_set();
  assert_status(gcap_graph_find_races((gcap_graph *)&n, NULL, &n), GCAP_ERROR_INVALID_HANDLE);
  test_assert_message_set();
}

/* ---------------------------------------------------------------- check_races */

static void test_check_races_on_instantiate(void **state) {
  (void)state;
  test_require_sim();
  gcap_sim_options so;
  gcap_sim_options_init(&so);
  so.check_races = true;
  gcap_context *ctx = test_sim_context_create(&so);
  unsigned char *a = test_dev_alloc(ctx, 64);
  gcap_graph *g = NULL;
  assert_ok(gcap_graph_create(ctx, &g));
  gcap_node *x = fill(g, a, 64, NULL, 0);
  gcap_exec *e = NULL;
  assert_ok(gcap_graph_instantiate(g, 0, &e));
  gcap_exec_destroy(e);
  fill(g, a, 64, &x, 1);
  fill(g, a + 32, 8, &x, 1); /* races with node 1 */
  e = (gcap_exec *)&e;
  assert_status(gcap_graph_instantiate(g, 0, &e), GCAP_ERROR_INVALID_VALUE);
  assert_null(e);
  test_assert_message_contains("1 race");
  test_assert_message_contains("node 1 (memset) and node 2 (memset)");
  test_assert_message_contains("8 bytes");
  gcap_graph_destroy(g);
  gcap_context_destroy(ctx);
}

int main(void) {
  test_require_backend();
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_unordered_writes_race, setup, teardown),
      cmocka_unit_test_setup_teardown(test_ordered_writes_do_not_race, setup, teardown),
      cmocka_unit_test_setup_teardown(test_disjoint_ranges_do_not_race, setup, teardown),
      cmocka_unit_test_setup_teardown(test_shared_reads_do_not_race, setup, teardown),
      cmocka_unit_test_setup_teardown(test_read_against_write_races, setup, teardown),
      cmocka_unit_test_setup_teardown(test_copy_destination_races_with_reader, setup, teardown),
      cmocka_unit_test_setup_teardown(test_fork_join, setup, teardown),
      cmocka_unit_test_setup_teardown(test_order_through_unrelated_nodes, setup, teardown),
      cmocka_unit_test_setup_teardown(test_pitched_fill_rows, setup, teardown),
      cmocka_unit_test_setup_teardown(test_every_pair_reported, setup, teardown),
      cmocka_unit_test_setup_teardown(test_long_chain, setup, teardown),
      cmocka_unit_test_setup_teardown(test_child_graph_contents, setup, teardown),
      cmocka_unit_test_setup_teardown(test_race_inside_child, setup, teardown),
      cmocka_unit_test_setup_teardown(test_kernel_unknown_access, setup, teardown),
      cmocka_unit_test_setup_teardown(test_kernel_declared_reads_share, setup, teardown),
      cmocka_unit_test_setup_teardown(test_kernel_access_none_ignored, setup, teardown),
      cmocka_unit_test_setup_teardown(test_graph_allocation_races_with_unordered_user, setup, teardown),
      cmocka_unit_test_setup_teardown(test_enumeration_r51, setup, teardown),
      cmocka_unit_test_setup_teardown(test_bad_arguments, setup, teardown),
      cmocka_unit_test(test_check_races_on_instantiate),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
