/*
 * Graphs: create/destroy, enumeration (rules.md#graph-enumerate, rules.md#graph-edges), edges, node
 * removal, clone, child graphs.
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

/* Distinct non-NULL values that failing calls must overwrite (handles) or leave alone (buffers). */
static int sentinel_storage[4];
#define SENTINEL_GRAPH ((gcap_graph *)(void *)&sentinel_storage[0])
#define SENTINEL_NODE ((gcap_node *)(void *)&sentinel_storage[1])
#define SENTINEL_NODE2 ((gcap_node *)(void *)&sentinel_storage[2])

#define MAX_LIST 512

/* Fails unless `expr` returns `expected` and the message names `fn`. */
#define assert_fails(expr, expected, fn)                                                                               \
  do {                                                                                                                 \
    assert_status((expr), (expected));                                                                                 \
    assert_true(strlen(gcap_last_error_message()) > 0);                                                                \
    test_assert_message_contains(fn);                                                                                  \
  } while (0)

/* ----------------------------------------------------------------- fixtures */

static int setup_ctx(void **state) {
  *state = test_context_create();
  return *state != NULL ? 0 : -1;
}

static int teardown_ctx(void **state) {
  gcap_context_destroy(*state);
  return 0;
}

static gcap_node *add_empty(gcap_graph *g, gcap_node *const *deps, size_t n) {
  gcap_node *out = NULL;
  assert_ok(gcap_graph_add_empty_node(g, deps, n, &out));
  assert_non_null(out);
  return out;
}

static void add_edge(gcap_graph *g, gcap_node *from, gcap_node *to) {
  assert_ok(gcap_graph_add_dependencies(g, &from, &to, 1));
}

/* ---------------------------------------------------------- expectations */

static void expect_nodes(const gcap_graph *g, gcap_node *const *expected, size_t n) {
  size_t count = 12345;
  assert_ok(gcap_graph_get_nodes(g, NULL, &count));
  assert_int_equal(count, n);
  assert_int_equal(gcap_graph_node_count(g), n);
  assert_true(n < MAX_LIST);
  gcap_node *buf[MAX_LIST];
  count = n;
  assert_ok(gcap_graph_get_nodes(g, buf, &count));
  assert_int_equal(count, n);
  for (size_t i = 0; i < n; i++) assert_ptr_equal(buf[i], expected[i]);
}

static void expect_roots(const gcap_graph *g, gcap_node *const *expected, size_t n) {
  size_t count = 12345;
  assert_ok(gcap_graph_get_root_nodes(g, NULL, &count));
  assert_int_equal(count, n);
  assert_true(n < MAX_LIST);
  gcap_node *buf[MAX_LIST];
  count = n;
  assert_ok(gcap_graph_get_root_nodes(g, buf, &count));
  assert_int_equal(count, n);
  for (size_t i = 0; i < n; i++) assert_ptr_equal(buf[i], expected[i]);
}

typedef gcap_status (*node_enum_fn)(const gcap_node *n, gcap_node **deps, size_t *count);

static void expect_node_list(node_enum_fn fn, const gcap_node *node, gcap_node *const *expected, size_t n) {
  size_t count = 12345;
  assert_ok(fn(node, NULL, &count));
  assert_int_equal(count, n);
  assert_true(n < MAX_LIST);
  gcap_node *buf[MAX_LIST];
  count = n;
  assert_ok(fn(node, buf, &count));
  assert_int_equal(count, n);
  for (size_t i = 0; i < n; i++) assert_ptr_equal(buf[i], expected[i]);
}

static void expect_deps(const gcap_node *node, gcap_node *const *expected, size_t n) {
  expect_node_list(gcap_node_get_dependencies, node, expected, n);
}

static void expect_dependents(const gcap_node *node, gcap_node *const *expected, size_t n) {
  expect_node_list(gcap_node_get_dependents, node, expected, n);
}

/* A graph's edges, caller frees both arrays. */
static size_t get_edges(const gcap_graph *g, gcap_node ***from, gcap_node ***to) {
  size_t count = 12345;
  assert_ok(gcap_graph_get_edges(g, NULL, NULL, &count));
  assert_int_equal(count, gcap_graph_edge_count(g));
  *from = calloc(count + 1, sizeof **from);
  *to = calloc(count + 1, sizeof **to);
  assert_non_null(*from);
  assert_non_null(*to);
  size_t n = count;
  assert_ok(gcap_graph_get_edges(g, *from, *to, &n));
  assert_int_equal(n, count);
  return count;
}

static void expect_edges(const gcap_graph *g, gcap_node *const *from, gcap_node *const *to, size_t n) {
  gcap_node **f, **t;
  size_t count = get_edges(g, &f, &t);
  assert_int_equal(count, n);
  assert_int_equal(gcap_graph_edge_count(g), n);
  for (size_t i = 0; i < n; i++) {
    assert_ptr_equal(f[i], from[i]);
    assert_ptr_equal(t[i], to[i]);
  }
  free(f);
  free(t);
}

/* ================================================================ create */

static void test_create_and_destroy(void **state) {
  gcap_context *ctx = *state;
  gcap_graph *g = SENTINEL_GRAPH;
  assert_ok(gcap_graph_create(ctx, &g));
  assert_non_null(g);
  assert_true(g != SENTINEL_GRAPH);
  assert_string_equal(gcap_last_error_message(), "");
  assert_int_equal(gcap_graph_node_count(g), 0);
  assert_int_equal(gcap_graph_edge_count(g), 0);
  size_t count = 99;
  assert_ok(gcap_graph_get_nodes(g, NULL, &count));
  assert_int_equal(count, 0);
  count = 99;
  assert_ok(gcap_graph_get_root_nodes(g, NULL, &count));
  assert_int_equal(count, 0);
  count = 99;
  assert_ok(gcap_graph_get_edges(g, NULL, NULL, &count));
  assert_int_equal(count, 0);

  gcap_graph *g2 = test_graph_create(ctx);
  assert_true(g2 != g);
  gcap_graph_destroy(g2);
  gcap_graph_destroy(g);
  gcap_graph_destroy(NULL); /* no-op */
}

static void test_create_bad_args(void **state) {
  gcap_context *ctx = *state;
  gcap_graph *g = SENTINEL_GRAPH;
  assert_fails(gcap_graph_create(NULL, &g), GCAP_ERROR_INVALID_HANDLE, "gcap_graph_create");
  assert_null(g);

  /* Handles are checked before the output pointer. */
  assert_fails(gcap_graph_create(NULL, NULL), GCAP_ERROR_INVALID_HANDLE, "gcap_graph_create");
  assert_fails(gcap_graph_create(ctx, NULL), GCAP_ERROR_INVALID_VALUE, "gcap_graph_create");

  gcap_context *dead = test_context_create();
  gcap_context_destroy(dead);
  g = SENTINEL_GRAPH;
  assert_fails(gcap_graph_create(dead, &g), GCAP_ERROR_INVALID_HANDLE, "gcap_graph_create");
  assert_null(g);
}

static void test_counts_of_invalid_graphs(void **state) {
  gcap_context *ctx = *state;
  assert_int_equal(gcap_graph_node_count(NULL), 0);
  assert_int_equal(gcap_graph_edge_count(NULL), 0);

  gcap_graph *g = test_graph_create(ctx);
  gcap_node *a = add_empty(g, NULL, 0);
  add_empty(g, &a, 1);
  assert_int_equal(gcap_graph_node_count(g), 2);
  assert_int_equal(gcap_graph_edge_count(g), 1);
  gcap_graph_destroy(g);
  assert_int_equal(gcap_graph_node_count(g), 0);
  assert_int_equal(gcap_graph_edge_count(g), 0);
  size_t count = 7;
  assert_fails(gcap_graph_get_nodes(g, NULL, &count), GCAP_ERROR_INVALID_HANDLE, "gcap_graph_get_nodes");
  assert_int_equal(count, 7);
}

static void test_counts_follow_edits(void **state) {
  gcap_context *ctx = *state;
  gcap_graph *g = test_graph_create(ctx);
  gcap_node *a = add_empty(g, NULL, 0);
  gcap_node *b = add_empty(g, NULL, 0);
  gcap_node *ab[2] = {a, b};
  gcap_node *c = add_empty(g, ab, 2);
  assert_int_equal(gcap_graph_node_count(g), 3);
  assert_int_equal(gcap_graph_edge_count(g), 2);
  add_edge(g, a, b);
  assert_int_equal(gcap_graph_edge_count(g), 3);
  assert_ok(gcap_graph_remove_dependencies(g, &a, &c, 1));
  assert_int_equal(gcap_graph_edge_count(g), 2);
  assert_ok(gcap_graph_destroy_node(b));
  assert_int_equal(gcap_graph_node_count(g), 2);
  assert_int_equal(gcap_graph_edge_count(g), 0);
  gcap_graph_destroy(g);
}

/* ========================================================== enumeration */

static void test_get_nodes_buffers(void **state) {
  gcap_context *ctx = *state;
  gcap_graph *g = test_graph_create(ctx);
  gcap_node *n[3];
  n[0] = add_empty(g, NULL, 0);
  n[1] = add_empty(g, &n[0], 1);
  n[2] = add_empty(g, NULL, 0);

  /* NULL array: the count. */
  size_t count = 0;
  assert_ok(gcap_graph_get_nodes(g, NULL, &count));
  assert_int_equal(count, 3);
  assert_string_equal(gcap_last_error_message(), "");

  /* Exact. */
  gcap_node *buf[6];
  count = 3;
  assert_ok(gcap_graph_get_nodes(g, buf, &count));
  assert_int_equal(count, 3);
  for (size_t i = 0; i < 3; i++) assert_ptr_equal(buf[i], n[i]);

  /* Too large: filled, padded with NULL, count set to the actual number. */
  for (size_t i = 0; i < 6; i++) buf[i] = SENTINEL_NODE;
  count = 5;
  assert_ok(gcap_graph_get_nodes(g, buf, &count));
  assert_int_equal(count, 3);
  for (size_t i = 0; i < 3; i++) assert_ptr_equal(buf[i], n[i]);
  assert_null(buf[3]);
  assert_null(buf[4]);
  assert_ptr_equal(buf[5], SENTINEL_NODE); /* beyond the given count: untouched */

  /* Too small: the first entries, count unchanged. */
  for (size_t i = 0; i < 6; i++) buf[i] = SENTINEL_NODE;
  count = 2;
  assert_ok(gcap_graph_get_nodes(g, buf, &count));
  assert_int_equal(count, 2);
  assert_ptr_equal(buf[0], n[0]);
  assert_ptr_equal(buf[1], n[1]);
  assert_ptr_equal(buf[2], SENTINEL_NODE);

  /* Zero entries asked. */
  buf[0] = SENTINEL_NODE;
  count = 0;
  assert_ok(gcap_graph_get_nodes(g, buf, &count));
  assert_int_equal(count, 0);
  assert_ptr_equal(buf[0], SENTINEL_NODE);

  /* Bad arguments. */
  assert_fails(gcap_graph_get_nodes(g, NULL, NULL), GCAP_ERROR_INVALID_VALUE, "gcap_graph_get_nodes");
  assert_fails(gcap_graph_get_nodes(g, buf, NULL), GCAP_ERROR_INVALID_VALUE, "gcap_graph_get_nodes");
  count = 3;
  assert_fails(gcap_graph_get_nodes(NULL, buf, &count), GCAP_ERROR_INVALID_HANDLE, "gcap_graph_get_nodes");
  assert_int_equal(count, 3);
  assert_fails(gcap_graph_get_nodes(NULL, NULL, NULL), GCAP_ERROR_INVALID_HANDLE, "gcap_graph_get_nodes");
  gcap_graph_destroy(g);
}

static void test_get_root_nodes_buffers(void **state) {
  gcap_context *ctx = *state;
  gcap_graph *g = test_graph_create(ctx);
  gcap_node *r0 = add_empty(g, NULL, 0);
  gcap_node *c0 = add_empty(g, &r0, 1);
  gcap_node *r1 = add_empty(g, NULL, 0);
  gcap_node *r2 = add_empty(g, NULL, 0);
  add_empty(g, &c0, 1);
  gcap_node *roots[3] = {r0, r1, r2};
  expect_roots(g, roots, 3);

  gcap_node *buf[6];
  for (size_t i = 0; i < 6; i++) buf[i] = SENTINEL_NODE;
  size_t count = 5;
  assert_ok(gcap_graph_get_root_nodes(g, buf, &count));
  assert_int_equal(count, 3);
  for (size_t i = 0; i < 3; i++) assert_ptr_equal(buf[i], roots[i]);
  assert_null(buf[3]);
  assert_null(buf[4]);
  assert_ptr_equal(buf[5], SENTINEL_NODE);

  for (size_t i = 0; i < 6; i++) buf[i] = SENTINEL_NODE;
  count = 1;
  assert_ok(gcap_graph_get_root_nodes(g, buf, &count));
  assert_int_equal(count, 1);
  assert_ptr_equal(buf[0], r0);
  assert_ptr_equal(buf[1], SENTINEL_NODE);

  assert_fails(gcap_graph_get_root_nodes(g, buf, NULL), GCAP_ERROR_INVALID_VALUE, "gcap_graph_get_root_nodes");
  assert_fails(gcap_graph_get_root_nodes(g, NULL, NULL), GCAP_ERROR_INVALID_VALUE, "gcap_graph_get_root_nodes");
  count = 2;
  assert_fails(gcap_graph_get_root_nodes(NULL, buf, &count), GCAP_ERROR_INVALID_HANDLE, "gcap_graph_get_root_nodes");

  /* An edge into a root takes it off the list; removing it puts it back in creation order. */
  add_edge(g, r0, r1);
  gcap_node *roots2[2] = {r0, r2};
  expect_roots(g, roots2, 2);
  assert_ok(gcap_graph_remove_dependencies(g, &r0, &r1, 1));
  expect_roots(g, roots, 3);
  gcap_graph_destroy(g);
}

static void test_get_edges_buffers(void **state) {
  gcap_context *ctx = *state;
  gcap_graph *g = test_graph_create(ctx);
  gcap_node *a = add_empty(g, NULL, 0);
  gcap_node *b = add_empty(g, &a, 1);
  gcap_node *c = add_empty(g, &a, 1);
  gcap_node *from_exp[3] = {a, a, b};
  gcap_node *to_exp[3] = {b, c, c};
  add_edge(g, b, c);

  size_t count = 0;
  assert_ok(gcap_graph_get_edges(g, NULL, NULL, &count));
  assert_int_equal(count, 3);
  assert_string_equal(gcap_last_error_message(), "");
  expect_edges(g, from_exp, to_exp, 3);

  gcap_node *f[6], *t[6];
  for (size_t i = 0; i < 6; i++) f[i] = t[i] = SENTINEL_NODE;
  count = 5;
  assert_ok(gcap_graph_get_edges(g, f, t, &count));
  assert_int_equal(count, 3);
  for (size_t i = 0; i < 3; i++) {
    assert_ptr_equal(f[i], from_exp[i]);
    assert_ptr_equal(t[i], to_exp[i]);
  }
  assert_null(f[3]);
  assert_null(t[3]);
  assert_null(f[4]);
  assert_null(t[4]);
  assert_ptr_equal(f[5], SENTINEL_NODE);
  assert_ptr_equal(t[5], SENTINEL_NODE);

  for (size_t i = 0; i < 6; i++) f[i] = t[i] = SENTINEL_NODE;
  count = 2;
  assert_ok(gcap_graph_get_edges(g, f, t, &count));
  assert_int_equal(count, 2);
  assert_ptr_equal(f[0], a);
  assert_ptr_equal(t[0], b);
  assert_ptr_equal(f[1], a);
  assert_ptr_equal(t[1], c);
  assert_ptr_equal(f[2], SENTINEL_NODE);
  assert_ptr_equal(t[2], SENTINEL_NODE);

  /* Exactly one array NULL. */
  for (size_t i = 0; i < 6; i++) f[i] = t[i] = SENTINEL_NODE;
  count = 3;
  assert_fails(gcap_graph_get_edges(g, f, NULL, &count), GCAP_ERROR_INVALID_VALUE, "gcap_graph_get_edges");
  assert_int_equal(count, 3);
  assert_ptr_equal(f[0], SENTINEL_NODE);
  assert_fails(gcap_graph_get_edges(g, NULL, t, &count), GCAP_ERROR_INVALID_VALUE, "gcap_graph_get_edges");
  assert_ptr_equal(t[0], SENTINEL_NODE);
  assert_fails(gcap_graph_get_edges(g, f, t, NULL), GCAP_ERROR_INVALID_VALUE, "gcap_graph_get_edges");
  assert_fails(gcap_graph_get_edges(g, NULL, NULL, NULL), GCAP_ERROR_INVALID_VALUE, "gcap_graph_get_edges");
  assert_fails(gcap_graph_get_edges(NULL, f, t, &count), GCAP_ERROR_INVALID_HANDLE, "gcap_graph_get_edges");
  gcap_graph_destroy(g);
}

static void test_node_dependency_buffers(void **state) {
  gcap_context *ctx = *state;
  gcap_graph *g = test_graph_create(ctx);
  gcap_node *p[3];
  for (size_t i = 0; i < 3; i++) p[i] = add_empty(g, NULL, 0);
  gcap_node *c = add_empty(g, p, 3);
  gcap_node *d = add_empty(g, NULL, 0);
  add_edge(g, p[0], d);

  gcap_node *buf[6];
  size_t count = 0;
  assert_ok(gcap_node_get_dependencies(c, NULL, &count));
  assert_int_equal(count, 3);
  for (size_t i = 0; i < 6; i++) buf[i] = SENTINEL_NODE;
  count = 5;
  assert_ok(gcap_node_get_dependencies(c, buf, &count));
  assert_int_equal(count, 3);
  for (size_t i = 0; i < 3; i++) assert_ptr_equal(buf[i], p[i]);
  assert_null(buf[3]);
  assert_null(buf[4]);
  assert_ptr_equal(buf[5], SENTINEL_NODE);
  for (size_t i = 0; i < 6; i++) buf[i] = SENTINEL_NODE;
  count = 2;
  assert_ok(gcap_node_get_dependencies(c, buf, &count));
  assert_int_equal(count, 2);
  assert_ptr_equal(buf[0], p[0]);
  assert_ptr_equal(buf[1], p[1]);
  assert_ptr_equal(buf[2], SENTINEL_NODE);

  /* Dependents of p[0]: c (from its deps array), then d (add_dependencies). */
  gcap_node *dep0[2] = {c, d};
  expect_dependents(p[0], dep0, 2);
  for (size_t i = 0; i < 6; i++) buf[i] = SENTINEL_NODE;
  count = 4;
  assert_ok(gcap_node_get_dependents(p[0], buf, &count));
  assert_int_equal(count, 2);
  assert_ptr_equal(buf[0], c);
  assert_ptr_equal(buf[1], d);
  assert_null(buf[2]);
  assert_null(buf[3]);
  assert_ptr_equal(buf[4], SENTINEL_NODE);
  count = 1;
  assert_ok(gcap_node_get_dependents(p[0], buf, &count));
  assert_int_equal(count, 1);
  assert_ptr_equal(buf[0], c);

  /* A node with none. */
  count = 9;
  assert_ok(gcap_node_get_dependents(c, NULL, &count));
  assert_int_equal(count, 0);
  count = 9;
  assert_ok(gcap_node_get_dependencies(p[1], NULL, &count));
  assert_int_equal(count, 0);

  assert_fails(gcap_node_get_dependencies(c, buf, NULL), GCAP_ERROR_INVALID_VALUE, "gcap_node_get_dependencies");
  assert_fails(gcap_node_get_dependents(c, NULL, NULL), GCAP_ERROR_INVALID_VALUE, "gcap_node_get_dependents");
  count = 1;
  assert_fails(gcap_node_get_dependencies(NULL, buf, &count), GCAP_ERROR_INVALID_HANDLE, "gcap_node_get_dependencies");
  assert_fails(gcap_node_get_dependents(NULL, buf, &count), GCAP_ERROR_INVALID_HANDLE, "gcap_node_get_dependents");
  gcap_graph_destroy(g);
}

static void test_creation_order(void **state) {
  gcap_context *ctx = *state;
  gcap_graph *g = test_graph_create(ctx);
  gcap_node *a = add_empty(g, NULL, 0);
  gcap_node *b = add_empty(g, NULL, 0);
  gcap_node *c = add_empty(g, NULL, 0);
  /* Dependencies given in an order that is not creation order. */
  gcap_node *cba[3] = {c, a, b};
  gcap_node *d = add_empty(g, cba, 3);
  gcap_node *ba[2] = {b, a};
  gcap_node *e = add_empty(g, ba, 2);
  gcap_node *f = add_empty(g, NULL, 0);
  /* Then explicit edges: into d (already has deps), out of a and f. */
  gcap_node *from[3] = {f, a, f};
  gcap_node *to[3] = {d, f, e};
  assert_ok(gcap_graph_add_dependencies(g, from, to, 3));

  gcap_node *nodes[6] = {a, b, c, d, e, f};
  expect_nodes(g, nodes, 6);
  gcap_node *roots[3] = {a, b, c};
  expect_roots(g, roots, 3);

  gcap_node *d_deps[4] = {c, a, b, f};
  expect_deps(d, d_deps, 4);
  gcap_node *e_deps[3] = {b, a, f};
  expect_deps(e, e_deps, 3);
  gcap_node *f_deps[1] = {a};
  expect_deps(f, f_deps, 1);

  gcap_node *a_out[3] = {d, e, f};
  expect_dependents(a, a_out, 3);
  gcap_node *b_out[2] = {d, e};
  expect_dependents(b, b_out, 2);
  gcap_node *c_out[1] = {d};
  expect_dependents(c, c_out, 1);
  gcap_node *f_out[2] = {d, e};
  expect_dependents(f, f_out, 2);

  gcap_node *ef[8] = {c, a, b, b, a, f, a, f};
  gcap_node *et[8] = {d, d, d, e, e, d, f, e};
  expect_edges(g, ef, et, 8);

  /* Removing an edge keeps the others in order; adding it back puts it last. */
  assert_ok(gcap_graph_remove_dependencies(g, &a, &d, 1));
  gcap_node *d_deps2[3] = {c, b, f};
  expect_deps(d, d_deps2, 3);
  add_edge(g, a, d);
  gcap_node *d_deps3[4] = {c, b, f, a};
  expect_deps(d, d_deps3, 4);
  gcap_node *a_out2[3] = {e, f, d};
  expect_dependents(a, a_out2, 3);
  gcap_node *ef2[8] = {c, b, b, a, f, a, f, a};
  gcap_node *et2[8] = {d, d, e, e, d, f, e, d};
  expect_edges(g, ef2, et2, 8);

  /* Destroying a node keeps the creation order of the rest. */
  assert_ok(gcap_graph_destroy_node(b));
  gcap_node *nodes2[5] = {a, c, d, e, f};
  expect_nodes(g, nodes2, 5);
  gcap_graph_destroy(g);
}

/* ====================================================== add_dependencies */

static void test_add_dependencies_batch(void **state) {
  gcap_context *ctx = *state;
  gcap_graph *g = test_graph_create(ctx);
  gcap_node *n[5];
  for (size_t i = 0; i < 5; i++) n[i] = add_empty(g, NULL, 0);
  gcap_node *from[4] = {n[0], n[0], n[1], n[3]};
  gcap_node *to[4] = {n[1], n[2], n[4], n[4]};
  assert_ok(gcap_graph_add_dependencies(g, from, to, 4));
  assert_string_equal(gcap_last_error_message(), "");
  expect_edges(g, from, to, 4);
  gcap_node *n4_deps[2] = {n[1], n[3]};
  expect_deps(n[4], n4_deps, 2);
  gcap_node *n0_out[2] = {n[1], n[2]};
  expect_dependents(n[0], n0_out, 2);
  gcap_node *roots[2] = {n[0], n[3]};
  expect_roots(g, roots, 2);

  /* n = 0 is a no-op whatever the pointers. */
  assert_ok(gcap_graph_add_dependencies(g, NULL, NULL, 0));
  assert_ok(gcap_graph_add_dependencies(g, from, NULL, 0));
  assert_ok(gcap_graph_add_dependencies(g, NULL, to, 0));
  assert_ok(gcap_graph_add_dependencies(g, from, to, 0));
  expect_edges(g, from, to, 4);
  gcap_graph_destroy(g);
}

static void test_add_dependencies_bad_arrays(void **state) {
  gcap_context *ctx = *state;
  gcap_graph *g = test_graph_create(ctx);
  gcap_node *a = add_empty(g, NULL, 0);
  gcap_node *b = add_empty(g, NULL, 0);
  assert_fails(gcap_graph_add_dependencies(g, NULL, &b, 1), GCAP_ERROR_INVALID_VALUE, "gcap_graph_add_dependencies");
  assert_fails(gcap_graph_add_dependencies(g, &a, NULL, 1), GCAP_ERROR_INVALID_VALUE, "gcap_graph_add_dependencies");
  assert_fails(gcap_graph_add_dependencies(g, NULL, NULL, 2), GCAP_ERROR_INVALID_VALUE, "gcap_graph_add_dependencies");
  assert_int_equal(gcap_graph_edge_count(g), 0);

  /* NULL graph, NULL node inside the arrays. */
  assert_fails(gcap_graph_add_dependencies(NULL, &a, &b, 1), GCAP_ERROR_INVALID_HANDLE, "gcap_graph_add_dependencies");
  gcap_node *with_null[2] = {a, NULL};
  gcap_node *tos[2] = {b, b};
  assert_fails(gcap_graph_add_dependencies(g, with_null, tos, 2), GCAP_ERROR_INVALID_HANDLE,
               "gcap_graph_add_dependencies");
  gcap_node *froms[2] = {a, a};
  assert_fails(gcap_graph_add_dependencies(g, froms, with_null, 2), GCAP_ERROR_INVALID_HANDLE,
               "gcap_graph_add_dependencies");
  assert_int_equal(gcap_graph_edge_count(g), 0);
  gcap_graph_destroy(g);
}

/* Asserts a rejected batch changed nothing: same edges, same order. */
static void expect_rejected(gcap_graph *g, gcap_node *const *from, gcap_node *const *to, size_t n,
                            gcap_status expected) {
  gcap_node **f0, **t0;
  size_t before = get_edges(g, &f0, &t0);
  assert_fails(gcap_graph_add_dependencies(g, from, to, n), expected, "gcap_graph_add_dependencies");
  expect_edges(g, f0, t0, before);
  free(f0);
  free(t0);
}

static void test_add_dependencies_rejects_whole_batch(void **state) {
  gcap_context *ctx = *state;
  gcap_graph *g = test_graph_create(ctx);
  gcap_node *a = add_empty(g, NULL, 0);
  gcap_node *b = add_empty(g, &a, 1);
  gcap_node *c = add_empty(g, NULL, 0);
  gcap_node *d = add_empty(g, NULL, 0);

  /* Self edge, alone and after a valid pair. */
  expect_rejected(g, &c, &c, 1, GCAP_ERROR_INVALID_VALUE);
  gcap_node *f1[2] = {c, d};
  gcap_node *t1[2] = {d, d};
  expect_rejected(g, f1, t1, 2, GCAP_ERROR_INVALID_VALUE);

  /* Duplicate of an existing edge. */
  expect_rejected(g, &a, &b, 1, GCAP_ERROR_INVALID_VALUE);
  gcap_node *f2[3] = {c, b, a};
  gcap_node *t2[3] = {d, c, b};
  expect_rejected(g, f2, t2, 3, GCAP_ERROR_INVALID_VALUE);

  /* Duplicate inside one batch. */
  gcap_node *f3[3] = {c, b, c};
  gcap_node *t3[3] = {d, d, d};
  expect_rejected(g, f3, t3, 3, GCAP_ERROR_INVALID_VALUE);

  /* Direct cycle with an existing edge: b -> a while a -> b. */
  expect_rejected(g, &b, &a, 1, GCAP_ERROR_INVALID_VALUE);
  gcap_node *f4[2] = {c, b};
  gcap_node *t4[2] = {d, a};
  expect_rejected(g, f4, t4, 2, GCAP_ERROR_INVALID_VALUE);

  /* A cycle made only by pairs of the same batch: c -> d, d -> c. */
  gcap_node *f5[2] = {c, d};
  gcap_node *t5[2] = {d, c};
  expect_rejected(g, f5, t5, 2, GCAP_ERROR_INVALID_VALUE);
  /* b -> c, c -> d, d -> a closes a -> b -> c -> d -> a. */
  gcap_node *f6[3] = {b, c, d};
  gcap_node *t6[3] = {c, d, a};
  expect_rejected(g, f6, t6, 3, GCAP_ERROR_INVALID_VALUE);

  /* Every rejection left the graph as it was; the valid pairs still go in. */
  gcap_node *ef[1] = {a};
  gcap_node *et[1] = {b};
  expect_edges(g, ef, et, 1);
  gcap_node *f7[2] = {b, c};
  gcap_node *t7[2] = {c, d};
  assert_ok(gcap_graph_add_dependencies(g, f7, t7, 2));
  assert_int_equal(gcap_graph_edge_count(g), 3);
  gcap_graph_destroy(g);
}

static void test_add_dependencies_cycle_through_chain(void **state) {
  gcap_context *ctx = *state;
  gcap_graph *g = test_graph_create(ctx);
  gcap_node *n[5];
  n[0] = add_empty(g, NULL, 0);
  for (size_t i = 1; i < 5; i++) n[i] = add_empty(g, &n[i - 1], 1);
  gcap_node *side = add_empty(g, NULL, 0);
  assert_int_equal(gcap_graph_edge_count(g), 4);

  /* Every back edge along the chain closes a cycle. */
  for (size_t i = 0; i < 5; i++)
    for (size_t j = i + 1; j < 5; j++) expect_rejected(g, &n[j], &n[i], 1, GCAP_ERROR_INVALID_VALUE);
  /* Through a side node: n4 -> side -> n0. */
  gcap_node *f[2] = {n[4], side};
  gcap_node *t[2] = {side, n[0]};
  expect_rejected(g, f, t, 2, GCAP_ERROR_INVALID_VALUE);
  /* After adding n4 -> side on its own, side -> n0 is a cycle of 6. */
  add_edge(g, n[4], side);
  expect_rejected(g, &side, &n[0], 1, GCAP_ERROR_INVALID_VALUE);
  /* Forward shortcuts are fine. */
  add_edge(g, n[0], n[4]);
  add_edge(g, n[1], side);
  assert_int_equal(gcap_graph_edge_count(g), 7);

  /* The cycle check is on the current graph: cut the chain and the back edge is allowed. */
  assert_ok(gcap_graph_remove_dependencies(g, &n[2], &n[3], 1));
  add_edge(g, n[3], n[0]);
  assert_int_equal(gcap_graph_edge_count(g), 7);
  expect_rejected(g, &n[2], &n[3], 1, GCAP_ERROR_INVALID_VALUE); /* n3 -> n0 -> n1 -> n2 */
  gcap_graph_destroy(g);
}

static void test_add_dependencies_foreign_and_destroyed(void **state) {
  gcap_context *ctx = *state;
  gcap_graph *g = test_graph_create(ctx);
  gcap_graph *h = test_graph_create(ctx);
  gcap_node *a = add_empty(g, NULL, 0);
  gcap_node *b = add_empty(g, NULL, 0);
  gcap_node *x = add_empty(h, NULL, 0);
  gcap_node *y = add_empty(h, NULL, 0);

  expect_rejected(g, &a, &x, 1, GCAP_ERROR_INVALID_VALUE);
  expect_rejected(g, &x, &a, 1, GCAP_ERROR_INVALID_VALUE);
  expect_rejected(g, &x, &y, 1, GCAP_ERROR_INVALID_VALUE); /* both of h, given to g */
  gcap_node *f[2] = {a, a};
  gcap_node *t[2] = {b, x};
  expect_rejected(g, f, t, 2, GCAP_ERROR_INVALID_VALUE);
  assert_int_equal(gcap_graph_edge_count(h), 0);

  gcap_node *dead = add_empty(g, NULL, 0);
  assert_ok(gcap_graph_destroy_node(dead));
  expect_rejected(g, &a, &dead, 1, GCAP_ERROR_INVALID_HANDLE);
  expect_rejected(g, &dead, &b, 1, GCAP_ERROR_INVALID_HANDLE);
  gcap_node *t2[2] = {b, dead};
  expect_rejected(g, f, t2, 2, GCAP_ERROR_INVALID_HANDLE);

  /* A destroyed handle is reported before a foreign node (handles first). */
  gcap_node *f3[2] = {a, dead};
  gcap_node *t3[2] = {x, b};
  expect_rejected(g, f3, t3, 2, GCAP_ERROR_INVALID_HANDLE);

  assert_int_equal(gcap_graph_edge_count(g), 0);
  assert_ok(gcap_graph_add_dependencies(h, &x, &y, 1));
  assert_int_equal(gcap_graph_edge_count(h), 1);
  gcap_graph_destroy(h);
  gcap_graph_destroy(g);
}

/* =================================================== remove_dependencies */

static void test_remove_dependencies(void **state) {
  gcap_context *ctx = *state;
  gcap_graph *g = test_graph_create(ctx);
  gcap_node *a = add_empty(g, NULL, 0);
  gcap_node *b = add_empty(g, &a, 1);
  gcap_node *c = add_empty(g, &a, 1);
  gcap_node *bc[2] = {b, c};
  gcap_node *d = add_empty(g, bc, 2);
  assert_int_equal(gcap_graph_edge_count(g), 4);

  /* A batch of two. */
  gcap_node *f[2] = {a, c};
  gcap_node *t[2] = {b, d};
  assert_ok(gcap_graph_remove_dependencies(g, f, t, 2));
  assert_string_equal(gcap_last_error_message(), "");
  gcap_node *ef[2] = {a, b};
  gcap_node *et[2] = {c, d};
  expect_edges(g, ef, et, 2);
  gcap_node *d_deps[1] = {b};
  expect_deps(d, d_deps, 1);
  gcap_node *a_out[1] = {c};
  expect_dependents(a, a_out, 1);
  gcap_node *roots[2] = {a, b};
  expect_roots(g, roots, 2);

  /* Already removed, never existed, reversed: INVALID_VALUE, nothing removed. */
  assert_fails(gcap_graph_remove_dependencies(g, &a, &b, 1), GCAP_ERROR_INVALID_VALUE,
               "gcap_graph_remove_dependencies");
  assert_fails(gcap_graph_remove_dependencies(g, &a, &d, 1), GCAP_ERROR_INVALID_VALUE,
               "gcap_graph_remove_dependencies");
  assert_fails(gcap_graph_remove_dependencies(g, &c, &a, 1), GCAP_ERROR_INVALID_VALUE,
               "gcap_graph_remove_dependencies");
  gcap_node *f2[2] = {a, a};
  gcap_node *t2[2] = {c, d}; /* a -> c exists, a -> d does not */
  assert_fails(gcap_graph_remove_dependencies(g, f2, t2, 2), GCAP_ERROR_INVALID_VALUE,
               "gcap_graph_remove_dependencies");
  gcap_node *f3[3] = {b, c, a};
  gcap_node *t3[3] = {d, c, c}; /* middle pair is a self edge that does not exist */
  assert_fails(gcap_graph_remove_dependencies(g, f3, t3, 3), GCAP_ERROR_INVALID_VALUE,
               "gcap_graph_remove_dependencies");
  expect_edges(g, ef, et, 2);

  /* Bad arrays, NULL and foreign handles. */
  assert_ok(gcap_graph_remove_dependencies(g, NULL, NULL, 0));
  assert_fails(gcap_graph_remove_dependencies(g, NULL, &c, 1), GCAP_ERROR_INVALID_VALUE,
               "gcap_graph_remove_dependencies");
  assert_fails(gcap_graph_remove_dependencies(g, &a, NULL, 1), GCAP_ERROR_INVALID_VALUE,
               "gcap_graph_remove_dependencies");
  assert_fails(gcap_graph_remove_dependencies(NULL, &a, &c, 1), GCAP_ERROR_INVALID_HANDLE,
               "gcap_graph_remove_dependencies");
  gcap_node *null_node = NULL;
  assert_fails(gcap_graph_remove_dependencies(g, &null_node, &c, 1), GCAP_ERROR_INVALID_HANDLE,
               "gcap_graph_remove_dependencies");
  gcap_graph *h = test_graph_create(ctx);
  gcap_node *x = add_empty(h, NULL, 0);
  assert_fails(gcap_graph_remove_dependencies(g, &a, &x, 1), GCAP_ERROR_INVALID_VALUE,
               "gcap_graph_remove_dependencies");
  expect_edges(g, ef, et, 2);

  /* The rest goes. */
  assert_ok(gcap_graph_remove_dependencies(g, ef, et, 2));
  assert_int_equal(gcap_graph_edge_count(g), 0);
  gcap_node *all[4] = {a, b, c, d};
  expect_roots(g, all, 4);
  gcap_graph_destroy(h);
  gcap_graph_destroy(g);
}

/* ========================================================== destroy_node */

static void test_destroy_node(void **state) {
  gcap_context *ctx = *state;
  gcap_graph *g = test_graph_create(ctx);
  gcap_node *a = add_empty(g, NULL, 0);
  gcap_node *z = add_empty(g, NULL, 0);
  gcap_node *az[2] = {a, z};
  gcap_node *b = add_empty(g, az, 2);
  gcap_node *c = add_empty(g, &b, 1);
  gcap_node *d = add_empty(g, &b, 1);
  add_edge(g, a, d);
  assert_int_equal(gcap_graph_node_count(g), 5);
  assert_int_equal(gcap_graph_edge_count(g), 5);

  assert_ok(gcap_graph_destroy_node(b));
  assert_string_equal(gcap_last_error_message(), "");
  assert_int_equal(gcap_graph_node_count(g), 4);
  assert_int_equal(gcap_graph_edge_count(g), 1);
  gcap_node *nodes[4] = {a, z, c, d};
  expect_nodes(g, nodes, 4);
  gcap_node *roots[3] = {a, z, c};
  expect_roots(g, roots, 3);
  gcap_node *a_out[1] = {d};
  expect_dependents(a, a_out, 1);
  expect_dependents(z, NULL, 0);
  expect_deps(c, NULL, 0);
  gcap_node *d_deps[1] = {a};
  expect_deps(d, d_deps, 1);
  gcap_node *ef[1] = {a};
  gcap_node *et[1] = {d};
  expect_edges(g, ef, et, 1);

  /* The handle is dead in every node function. */
  assert_true(gcap_node_get_type(b) == (gcap_node_type)-1);
  gcap_node *buf[4];
  size_t count = 4;
  assert_fails(gcap_node_get_dependencies(b, buf, &count), GCAP_ERROR_INVALID_HANDLE, "gcap_node_get_dependencies");
  assert_int_equal(count, 4);
  assert_fails(gcap_node_get_dependents(b, NULL, &count), GCAP_ERROR_INVALID_HANDLE, "gcap_node_get_dependents");
  assert_fails(gcap_graph_add_dependencies(g, &b, &c, 1), GCAP_ERROR_INVALID_HANDLE, "gcap_graph_add_dependencies");
  assert_fails(gcap_graph_add_dependencies(g, &a, &b, 1), GCAP_ERROR_INVALID_HANDLE, "gcap_graph_add_dependencies");
  assert_fails(gcap_graph_remove_dependencies(g, &a, &b, 1), GCAP_ERROR_INVALID_HANDLE,
               "gcap_graph_remove_dependencies");
  assert_fails(gcap_graph_destroy_node(b), GCAP_ERROR_INVALID_HANDLE, "gcap_graph_destroy_node");
  gcap_node *out = SENTINEL_NODE;
  assert_fails(gcap_graph_add_empty_node(g, &b, 1, &out), GCAP_ERROR_INVALID_HANDLE, "gcap_graph_add_empty_node");
  assert_null(out);
  gcap_graph *child = SENTINEL_GRAPH;
  assert_fails(gcap_node_get_child_graph(b, &child), GCAP_ERROR_INVALID_HANDLE, "gcap_node_get_child_graph");
  assert_int_equal(gcap_graph_node_count(g), 4);
  assert_int_equal(gcap_graph_edge_count(g), 1);

  assert_fails(gcap_graph_destroy_node(NULL), GCAP_ERROR_INVALID_HANDLE, "gcap_graph_destroy_node");

  /* Roots and sinks go too. */
  assert_ok(gcap_graph_destroy_node(a));
  assert_int_equal(gcap_graph_edge_count(g), 0);
  expect_deps(d, NULL, 0);
  assert_ok(gcap_graph_destroy_node(d));
  gcap_node *rest[2] = {z, c};
  expect_nodes(g, rest, 2);
  expect_roots(g, rest, 2);
  gcap_graph_destroy(g);
}

/* ================================================================= clone */

static void test_clone_keeps_every_order(void **state) {
  gcap_context *ctx = *state;
  gcap_graph *g = test_graph_create(ctx);
  gcap_node *n[6];
  n[0] = add_empty(g, NULL, 0);
  n[1] = add_empty(g, NULL, 0);
  gcap_node *d2[2] = {n[1], n[0]};
  n[2] = add_empty(g, d2, 2);
  n[3] = add_empty(g, &n[0], 1);
  gcap_node *d4[3] = {n[3], n[2], n[1]};
  n[4] = add_empty(g, d4, 3);
  n[5] = add_empty(g, NULL, 0);
  gcap_node *f[2] = {n[5], n[0]};
  gcap_node *t[2] = {n[2], n[5]};
  assert_ok(gcap_graph_add_dependencies(g, f, t, 2));

  gcap_graph *cl = SENTINEL_GRAPH;
  assert_ok(gcap_graph_clone(g, &cl));
  assert_non_null(cl);
  assert_true(cl != g && cl != SENTINEL_GRAPH);
  assert_string_equal(gcap_last_error_message(), "");
  assert_int_equal(gcap_graph_node_count(cl), 6);
  assert_int_equal(gcap_graph_edge_count(cl), gcap_graph_edge_count(g));

  gcap_node *cn[6];
  size_t count = 6;
  assert_ok(gcap_graph_get_nodes(cl, cn, &count));
  for (size_t i = 0; i < 6; i++) {
    assert_non_null(cn[i]);
    for (size_t j = 0; j < 6; j++) assert_true(cn[i] != n[j]);
  }

  /* Map an original node to its clone by creation index. */
  gcap_node **of, **ot, **cf, **ct;
  size_t ne = get_edges(g, &of, &ot);
  size_t ce = get_edges(cl, &cf, &ct);
  assert_int_equal(ne, 8);
  assert_int_equal(ce, ne);
  for (size_t e = 0; e < ne; e++) {
    size_t fi = 6, ti = 6;
    for (size_t i = 0; i < 6; i++) {
      if (of[e] == n[i]) fi = i;
      if (ot[e] == n[i]) ti = i;
    }
    assert_true(fi < 6 && ti < 6);
    assert_ptr_equal(cf[e], cn[fi]);
    assert_ptr_equal(ct[e], cn[ti]);
  }
  free(of);
  free(ot);
  free(cf);
  free(ct);

  for (size_t i = 0; i < 6; i++) {
    gcap_node *od[8], *cd[8];
    size_t on = 8, cnn = 8;
    assert_ok(gcap_node_get_dependencies(n[i], od, &on));
    assert_ok(gcap_node_get_dependencies(cn[i], cd, &cnn));
    assert_int_equal(on, cnn);
    for (size_t k = 0; k < on; k++)
      for (size_t j = 0; j < 6; j++)
        if (od[k] == n[j]) assert_ptr_equal(cd[k], cn[j]);
    on = cnn = 8;
    assert_ok(gcap_node_get_dependents(n[i], od, &on));
    assert_ok(gcap_node_get_dependents(cn[i], cd, &cnn));
    assert_int_equal(on, cnn);
    for (size_t k = 0; k < on; k++)
      for (size_t j = 0; j < 6; j++)
        if (od[k] == n[j]) assert_ptr_equal(cd[k], cn[j]);
  }
  gcap_node *croots[2] = {cn[0], cn[1]};
  expect_roots(cl, croots, 2);

  /* The clone's nodes belong to the clone. */
  gcap_node *o_to_c[1] = {cn[0]};
  expect_rejected(g, &n[5], o_to_c, 1, GCAP_ERROR_INVALID_VALUE);

  /* Independent: edit the clone, the original stays; and vice versa. */
  add_empty(cl, &cn[4], 1);
  assert_ok(gcap_graph_remove_dependencies(cl, &cn[0], &cn[3], 1));
  assert_int_equal(gcap_graph_node_count(g), 6);
  assert_int_equal(gcap_graph_edge_count(g), 8);
  expect_dependents(n[4], NULL, 0);
  gcap_node *n3_deps[1] = {n[0]};
  expect_deps(n[3], n3_deps, 1);

  assert_ok(gcap_graph_destroy_node(n[2]));
  assert_int_equal(gcap_graph_node_count(cl), 7);
  assert_int_equal(gcap_graph_edge_count(cl), 8);
  assert_int_equal(gcap_graph_edge_count(g), 4);
  gcap_node *c4_deps[3] = {cn[3], cn[2], cn[1]};
  expect_deps(cn[4], c4_deps, 3);

  /* The clone outlives its original. */
  gcap_graph_destroy(g);
  assert_int_equal(gcap_graph_node_count(cl), 7);
  assert_true(gcap_node_get_type(cn[0]) == GCAP_NODE_EMPTY);

  /* Bad arguments. */
  gcap_graph *out = SENTINEL_GRAPH;
  assert_fails(gcap_graph_clone(NULL, &out), GCAP_ERROR_INVALID_HANDLE, "gcap_graph_clone");
  assert_null(out);
  assert_fails(gcap_graph_clone(cl, NULL), GCAP_ERROR_INVALID_VALUE, "gcap_graph_clone");
  assert_fails(gcap_graph_clone(NULL, NULL), GCAP_ERROR_INVALID_HANDLE, "gcap_graph_clone");
  gcap_graph_destroy(cl);
  out = SENTINEL_GRAPH;
  assert_fails(gcap_graph_clone(cl, &out), GCAP_ERROR_INVALID_HANDLE, "gcap_graph_clone");
  assert_null(out);
}

static void host_fn_a(void *user_data) { (void)user_data; }
static void host_fn_b(void *user_data) { (void)user_data; }

struct typed_fixture {
  gcap_module *module;
  gcap_kernel *kernel;
  void *dev;
  void *host;
  gcap_event *event;
};

static void make_typed_fixture(gcap_context *ctx, struct typed_fixture *fx) {
  static const size_t sizes[2] = {sizeof(float), sizeof(void *)};
  gcap_kernel_def def = {.name = "scale", .sim_fn = NULL, .num_params = 2, .param_sizes = sizes};
  gcap_module_desc desc = {.image = NULL, .image_size = 0, .kernels = &def, .num_kernels = 1};
  assert_ok(test_module_load(ctx, &desc, &fx->module));
  assert_ok(gcap_module_get_kernel(fx->module, "scale", &fx->kernel));
  assert_ok(gcap_mem_alloc(ctx, 4096, &fx->dev));
  assert_ok(gcap_host_alloc(ctx, 4096, &fx->host));
  assert_ok(gcap_event_create(ctx, &fx->event));
}

/* One node of each kind; returns how many were added into `nodes` (creation order). */
static size_t build_typed_graph(gcap_context *ctx, gcap_graph *g, const struct typed_fixture *fx, gcap_node **nodes) {
  size_t k = 0;
  gcap_memcpy_node_params mc = {.dst = fx->dev, .src = fx->host, .bytes = 256, .kind = GCAP_MEMCPY_HOST_TO_DEVICE};
  assert_ok(gcap_graph_add_memcpy_node(g, NULL, 0, &mc, &nodes[k]));
  k++;
  gcap_memset_node_params ms = {
      .dst = (char *)fx->dev + 1024, .value = 0xABCD, .element_size = 2, .width = 16, .height = 4, .pitch = 64};
  assert_ok(gcap_graph_add_memset_node(g, &nodes[0], 1, &ms, &nodes[k]));
  k++;
  float scale = 2.5f;
  void *ptr = fx->dev;
  void *args[2] = {&scale, &ptr};
  gcap_kernel_node_params kp = {.kernel = fx->kernel,
                                .grid = GCAP_DIM3(4, 2, 1),
                                .block = GCAP_DIM3(32, 1, 1),
                                .shared_mem_bytes = 128,
                                .args = args};
  gcap_node *kdeps[2] = {nodes[1], nodes[0]};
  assert_ok(gcap_graph_add_kernel_node(g, kdeps, 2, &kp, &nodes[k]));
  k++;
  gcap_host_node_params hp = {.fn = host_fn_a, .user_data = (void *)fx};
  assert_ok(gcap_graph_add_host_node(g, &nodes[2], 1, &hp, &nodes[k]));
  k++;
  assert_ok(gcap_graph_add_event_record_node(g, &nodes[3], 1, fx->event, &nodes[k]));
  k++;
  assert_ok(gcap_graph_add_event_wait_node(g, NULL, 0, fx->event, &nodes[k]));
  k++;
  gcap_graph *child = test_graph_create(ctx);
  gcap_node *c0 = add_empty(child, NULL, 0);
  add_empty(child, &c0, 1);
  assert_ok(gcap_graph_add_child_graph_node(g, &nodes[5], 1, child, &nodes[k]));
  k++;
  gcap_graph_destroy(child);
  gcap_node *edeps[2] = {nodes[6], nodes[4]};
  assert_ok(gcap_graph_add_empty_node(g, edeps, 2, &nodes[k]));
  k++;
  return k;
}

/* Asserts node `a` of one graph and `b` of another are equal copies. */
static void expect_same_node(const gcap_node *a, const gcap_node *b) {
  gcap_node_type ta = gcap_node_get_type(a);
  assert_int_equal(ta, gcap_node_get_type(b));
  switch (ta) {
  case GCAP_NODE_MEMCPY: {
    gcap_memcpy_node_params pa, pb;
    assert_ok(gcap_node_get_memcpy_params(a, &pa));
    assert_ok(gcap_node_get_memcpy_params(b, &pb));
    assert_ptr_equal(pa.dst, pb.dst);
    assert_ptr_equal(pa.src, pb.src);
    assert_int_equal(pa.bytes, pb.bytes);
    assert_int_equal(pa.kind, pb.kind);
    break;
  }
  case GCAP_NODE_MEMSET: {
    gcap_memset_node_params pa, pb;
    assert_ok(gcap_node_get_memset_params(a, &pa));
    assert_ok(gcap_node_get_memset_params(b, &pb));
    assert_ptr_equal(pa.dst, pb.dst);
    assert_int_equal(pa.value, pb.value);
    assert_int_equal(pa.element_size, pb.element_size);
    assert_int_equal(pa.width, pb.width);
    assert_int_equal(pa.height, pb.height);
    assert_int_equal(pa.pitch, pb.pitch);
    break;
  }
  case GCAP_NODE_KERNEL: {
    gcap_kernel_node_params pa, pb;
    assert_ok(gcap_node_get_kernel_params(a, &pa));
    assert_ok(gcap_node_get_kernel_params(b, &pb));
    assert_ptr_equal(pa.kernel, pb.kernel);
    assert_memory_equal(&pa.grid, &pb.grid, sizeof pa.grid);
    assert_memory_equal(&pa.block, &pb.block, sizeof pa.block);
    assert_int_equal(pa.shared_mem_bytes, pb.shared_mem_bytes);
    assert_non_null(pa.args);
    assert_non_null(pb.args);
    assert_true(pa.args != pb.args); /* each graph owns its copy */
    assert_true(pa.args[0] != pb.args[0]);
    assert_memory_equal(pa.args[0], pb.args[0], sizeof(float));
    assert_memory_equal(pa.args[1], pb.args[1], sizeof(void *));
    break;
  }
  case GCAP_NODE_HOST: {
    gcap_host_node_params pa, pb;
    assert_ok(gcap_node_get_host_params(a, &pa));
    assert_ok(gcap_node_get_host_params(b, &pb));
    assert_true(pa.fn == pb.fn);
    assert_ptr_equal(pa.user_data, pb.user_data);
    break;
  }
  case GCAP_NODE_EVENT_RECORD:
  case GCAP_NODE_EVENT_WAIT: {
    gcap_event *ea = NULL, *eb = NULL;
    assert_ok(gcap_node_get_event(a, &ea));
    assert_ok(gcap_node_get_event(b, &eb));
    assert_non_null(ea);
    assert_ptr_equal(ea, eb);
    break;
  }
  case GCAP_NODE_GRAPH: {
    gcap_graph *ca = NULL, *cb = NULL;
    assert_ok(gcap_node_get_child_graph(a, &ca));
    assert_ok(gcap_node_get_child_graph(b, &cb));
    assert_non_null(ca);
    assert_non_null(cb);
    assert_true(ca != cb);
    assert_int_equal(gcap_graph_node_count(ca), gcap_graph_node_count(cb));
    assert_int_equal(gcap_graph_edge_count(ca), gcap_graph_edge_count(cb));
    break;
  }
  case GCAP_NODE_EMPTY: break;
  default: fail_msg("unexpected node type %d", (int)ta);
  }
}

static void test_clone_deep_copy_of_every_type(void **state) {
  gcap_context *ctx = *state;
  struct typed_fixture fx;
  make_typed_fixture(ctx, &fx);
  gcap_graph *g = test_graph_create(ctx);
  gcap_node *n[8];
  size_t k = build_typed_graph(ctx, g, &fx, n);
  assert_int_equal(k, 8);
  assert_int_equal(gcap_graph_edge_count(g), 8);

  gcap_graph *cl = NULL;
  assert_ok(gcap_graph_clone(g, &cl));
  gcap_node *cn[8];
  size_t count = 8;
  assert_ok(gcap_graph_get_nodes(cl, cn, &count));
  assert_int_equal(count, 8);
  assert_int_equal(gcap_graph_edge_count(cl), 8);
  static const gcap_node_type types[8] = {GCAP_NODE_MEMCPY, GCAP_NODE_MEMSET,       GCAP_NODE_KERNEL,
                                          GCAP_NODE_HOST,   GCAP_NODE_EVENT_RECORD, GCAP_NODE_EVENT_WAIT,
                                          GCAP_NODE_GRAPH,  GCAP_NODE_EMPTY};
  for (size_t i = 0; i < 8; i++) {
    assert_int_equal(gcap_node_get_type(n[i]), types[i]);
    expect_same_node(n[i], cn[i]);
  }
  gcap_node *k_deps[2] = {cn[1], cn[0]};
  expect_deps(cn[2], k_deps, 2);
  gcap_node *e_deps[2] = {cn[6], cn[4]};
  expect_deps(cn[7], e_deps, 2);

  /* Edit clone parameters: the original keeps its own. */
  gcap_memset_node_params ms = {.dst = fx.dev, .value = 7, .element_size = 1, .width = 10, .height = 1, .pitch = 0};
  assert_ok(gcap_node_set_memset_params(cn[1], &ms));
  gcap_host_node_params hp = {.fn = host_fn_b, .user_data = NULL};
  assert_ok(gcap_node_set_host_params(cn[3], &hp));
  gcap_memset_node_params got;
  assert_ok(gcap_node_get_memset_params(n[1], &got));
  assert_int_equal(got.value, 0xABCD);
  assert_int_equal(got.element_size, 2);
  assert_int_equal(got.width, 16);
  gcap_host_node_params hgot;
  assert_ok(gcap_node_get_host_params(n[3], &hgot));
  assert_true(hgot.fn == host_fn_a);

  /* And the other way: the original's kernel args change, the clone's stay. */
  float other = -1.0f;
  void *optr = fx.host;
  void *args[2] = {&other, &optr};
  gcap_kernel_node_params kp = {.kernel = fx.kernel,
                                .grid = GCAP_DIM3(1, 1, 1),
                                .block = GCAP_DIM3(1, 1, 1),
                                .shared_mem_bytes = 0,
                                .args = args};
  assert_ok(gcap_node_set_kernel_params(n[2], &kp));
  gcap_kernel_node_params ck;
  assert_ok(gcap_node_get_kernel_params(cn[2], &ck));
  float cv;
  memcpy(&cv, ck.args[0], sizeof cv);
  assert_true(cv == 2.5f);
  assert_int_equal(ck.grid.x, 4);
  assert_int_equal(ck.block.x, 32);
  assert_int_equal(ck.shared_mem_bytes, 128);

  /* Destroying the original leaves a clone that still instantiates. */
  gcap_graph_destroy(g);
  gcap_exec *x = NULL;
  assert_ok(gcap_graph_instantiate(cl, 0, &x));
  assert_int_equal(gcap_exec_node_count(x), 8 - 1 + 1 + 2); /* child counts 1 plus its 2 nodes */
  gcap_exec_destroy(x);
  gcap_graph_destroy(cl);
  assert_ok(gcap_event_destroy(fx.event));
  assert_ok(gcap_mem_free(ctx, fx.dev));
  assert_ok(gcap_host_free(ctx, fx.host));
  assert_ok(gcap_module_unload(fx.module));
}

/* ============================================================ child graph */

static void test_child_graph_is_cloned_at_add(void **state) {
  gcap_context *ctx = *state;
  gcap_graph *child = test_graph_create(ctx);
  gcap_node *c0 = add_empty(child, NULL, 0);
  add_empty(child, &c0, 1);

  gcap_graph *g = test_graph_create(ctx);
  gcap_node *pre = add_empty(g, NULL, 0);
  gcap_node *node = SENTINEL_NODE;
  assert_ok(gcap_graph_add_child_graph_node(g, &pre, 1, child, &node));
  assert_true(node != SENTINEL_NODE && node != NULL);
  assert_string_equal(gcap_last_error_message(), "");
  assert_int_equal(gcap_node_get_type(node), GCAP_NODE_GRAPH);
  /* The child counts as one node of g. */
  assert_int_equal(gcap_graph_node_count(g), 2);
  assert_int_equal(gcap_graph_edge_count(g), 1);

  gcap_graph *emb = NULL;
  assert_ok(gcap_node_get_child_graph(node, &emb));
  assert_non_null(emb);
  assert_true(emb != child);
  assert_int_equal(gcap_graph_node_count(emb), 2);
  assert_int_equal(gcap_graph_edge_count(emb), 1);

  /* Later edits of the original child are not seen. */
  add_empty(child, &c0, 1);
  add_empty(child, NULL, 0);
  assert_int_equal(gcap_graph_node_count(child), 4);
  gcap_graph *emb2 = NULL;
  assert_ok(gcap_node_get_child_graph(node, &emb2));
  assert_ptr_equal(emb2, emb);
  assert_int_equal(gcap_graph_node_count(emb2), 2);
  assert_int_equal(gcap_graph_edge_count(emb2), 1);
  gcap_graph_destroy(child);
  assert_int_equal(gcap_graph_node_count(emb), 2);

  /* The embedded graph is borrowed and editable: edits change the node. */
  gcap_node *en[2];
  size_t count = 2;
  assert_ok(gcap_graph_get_nodes(emb, en, &count));
  gcap_node *added = add_empty(emb, &en[1], 1);
  assert_int_equal(gcap_graph_node_count(emb), 3);
  assert_ok(gcap_node_get_child_graph(node, &emb2));
  assert_ptr_equal(emb2, emb);
  assert_int_equal(gcap_graph_node_count(emb2), 3);
  gcap_node *deps[1] = {en[1]};
  expect_deps(added, deps, 1);
  assert_int_equal(gcap_graph_node_count(g), 2); /* still one node in g */

  gcap_exec *x = NULL;
  assert_ok(gcap_graph_instantiate(g, 0, &x));
  assert_int_equal(gcap_exec_node_count(x), 1 + 1 + 3);
  gcap_exec_destroy(x);

  /* Nodes of the embedded graph are not nodes of g. */
  expect_rejected(g, &pre, &added, 1, GCAP_ERROR_INVALID_VALUE);
  gcap_graph_destroy(g);
}

static void test_child_graph_bad_args(void **state) {
  gcap_context *ctx = *state;
  gcap_graph *g = test_graph_create(ctx);
  gcap_graph *child = test_graph_create(ctx);
  add_empty(child, NULL, 0);
  gcap_node *out = SENTINEL_NODE;

  assert_fails(gcap_graph_add_child_graph_node(g, NULL, 0, NULL, &out), GCAP_ERROR_INVALID_HANDLE,
               "gcap_graph_add_child_graph_node");
  assert_null(out);

  gcap_context *other = test_context_create();
  gcap_graph *foreign = test_graph_create(other);
  add_empty(foreign, NULL, 0);
  out = SENTINEL_NODE;
  assert_fails(gcap_graph_add_child_graph_node(g, NULL, 0, foreign, &out), GCAP_ERROR_INVALID_HANDLE,
               "gcap_graph_add_child_graph_node");
  assert_null(out);
  gcap_context_destroy(other);

  gcap_graph *dead = test_graph_create(ctx);
  gcap_graph_destroy(dead);
  out = SENTINEL_NODE;
  assert_fails(gcap_graph_add_child_graph_node(g, NULL, 0, dead, &out), GCAP_ERROR_INVALID_HANDLE,
               "gcap_graph_add_child_graph_node");
  assert_null(out);

  assert_fails(gcap_graph_add_child_graph_node(NULL, NULL, 0, child, &out), GCAP_ERROR_INVALID_HANDLE,
               "gcap_graph_add_child_graph_node");
  assert_fails(gcap_graph_add_child_graph_node(g, NULL, 0, child, NULL), GCAP_ERROR_INVALID_VALUE,
               "gcap_graph_add_child_graph_node");
  /* Handle before output. */
  assert_fails(gcap_graph_add_child_graph_node(g, NULL, 0, NULL, NULL), GCAP_ERROR_INVALID_HANDLE,
               "gcap_graph_add_child_graph_node");
  assert_int_equal(gcap_graph_node_count(g), 0);

  /* gcap_node_get_child_graph on bad inputs. */
  gcap_node *empty = add_empty(g, NULL, 0);
  gcap_graph *got = SENTINEL_GRAPH;
  assert_fails(gcap_node_get_child_graph(empty, &got), GCAP_ERROR_INVALID_VALUE, "gcap_node_get_child_graph");
  assert_fails(gcap_node_get_child_graph(NULL, &got), GCAP_ERROR_INVALID_HANDLE, "gcap_node_get_child_graph");
  gcap_node *node = NULL;
  assert_ok(gcap_graph_add_child_graph_node(g, NULL, 0, child, &node));
  assert_fails(gcap_node_get_child_graph(node, NULL), GCAP_ERROR_INVALID_VALUE, "gcap_node_get_child_graph");

  /* An empty graph is a valid child. */
  gcap_graph *none = test_graph_create(ctx);
  assert_ok(gcap_graph_add_child_graph_node(g, &node, 1, none, &out));
  assert_ok(gcap_node_get_child_graph(out, &got));
  assert_int_equal(gcap_graph_node_count(got), 0);
  gcap_graph_destroy(none);
  gcap_graph_destroy(child);
  gcap_graph_destroy(g);
}

static void test_clone_recurses_into_child(void **state) {
  gcap_context *ctx = *state;
  gcap_graph *child = test_graph_create(ctx);
  gcap_node *c0 = add_empty(child, NULL, 0);
  add_empty(child, &c0, 1);
  /* A grandchild, to check the recursion goes all the way. */
  gcap_graph *grand = test_graph_create(ctx);
  add_empty(grand, NULL, 0);
  gcap_node *gc = NULL;
  assert_ok(gcap_graph_add_child_graph_node(child, &c0, 1, grand, &gc));
  gcap_graph_destroy(grand);

  gcap_graph *g = test_graph_create(ctx);
  gcap_node *node = NULL;
  assert_ok(gcap_graph_add_child_graph_node(g, NULL, 0, child, &node));
  gcap_graph_destroy(child);

  gcap_graph *cl = NULL;
  assert_ok(gcap_graph_clone(g, &cl));
  gcap_node *cnode = NULL;
  size_t count = 1;
  assert_ok(gcap_graph_get_nodes(cl, &cnode, &count));
  assert_int_equal(gcap_node_get_type(cnode), GCAP_NODE_GRAPH);

  gcap_graph *orig_child = NULL, *clone_child = NULL;
  assert_ok(gcap_node_get_child_graph(node, &orig_child));
  assert_ok(gcap_node_get_child_graph(cnode, &clone_child));
  assert_true(orig_child != clone_child);
  assert_int_equal(gcap_graph_node_count(clone_child), 3);
  assert_int_equal(gcap_graph_edge_count(clone_child), 2);

  /* Edit the clone's child: the original's is unchanged. */
  gcap_node *cc[3];
  count = 3;
  assert_ok(gcap_graph_get_nodes(clone_child, cc, &count));
  add_empty(clone_child, &cc[0], 1);
  assert_ok(gcap_graph_destroy_node(cc[1]));
  assert_int_equal(gcap_graph_node_count(clone_child), 3);
  assert_int_equal(gcap_graph_node_count(orig_child), 3);
  assert_int_equal(gcap_graph_edge_count(orig_child), 2);

  /* The grandchildren are distinct too. */
  assert_int_equal(gcap_node_get_type(cc[2]), GCAP_NODE_GRAPH);
  gcap_graph *cgrand = NULL, *ograndp = NULL;
  assert_ok(gcap_node_get_child_graph(cc[2], &cgrand));
  gcap_node *oc[3];
  count = 3;
  assert_ok(gcap_graph_get_nodes(orig_child, oc, &count));
  assert_ok(gcap_node_get_child_graph(oc[2], &ograndp));
  assert_true(cgrand != ograndp);
  add_empty(cgrand, NULL, 0);
  assert_int_equal(gcap_graph_node_count(cgrand), 2);
  assert_int_equal(gcap_graph_node_count(ograndp), 1);

  /* And the other way. */
  add_empty(orig_child, NULL, 0);
  add_empty(orig_child, NULL, 0);
  assert_int_equal(gcap_graph_node_count(orig_child), 5);
  assert_int_equal(gcap_graph_node_count(clone_child), 3);

  gcap_exec *x = NULL;
  assert_ok(gcap_graph_instantiate(cl, 0, &x));
  /* child node 1 + child's nodes: empty, empty(added), grandchild node 1 + its 2 */
  assert_int_equal(gcap_exec_node_count(x), 1 + 3 + 2);
  gcap_exec_destroy(x);
  gcap_graph_destroy(cl);
  gcap_graph_destroy(g);
}

/* ================================================ graphs of two contexts */

static void test_graphs_of_different_contexts(void **state) {
  gcap_context *ctx = *state;
  gcap_context *other = test_context_create();
  gcap_graph *g = test_graph_create(ctx);
  gcap_graph *h = test_graph_create(other);
  gcap_node *a = add_empty(g, NULL, 0);
  gcap_node *x = add_empty(h, NULL, 0);
  gcap_node *y = add_empty(h, &x, 1);

  /* A node of another context is a handle of another context. */
  gcap_node *out = SENTINEL_NODE;
  assert_fails(gcap_graph_add_empty_node(g, &x, 1, &out), GCAP_ERROR_INVALID_HANDLE, "gcap_graph_add_empty_node");
  assert_null(out);
  expect_rejected(g, &a, &x, 1, GCAP_ERROR_INVALID_HANDLE);
  expect_rejected(h, &y, &a, 1, GCAP_ERROR_INVALID_HANDLE);
  assert_int_equal(gcap_graph_node_count(g), 1);
  assert_int_equal(gcap_graph_node_count(h), 2);

  /* Destroying the other context frees its graphs, and this one is untouched. */
  gcap_context_destroy(other);
  assert_int_equal(gcap_graph_node_count(h), 0);
  assert_true(gcap_node_get_type(x) == (gcap_node_type)-1);
  assert_int_equal(gcap_graph_node_count(g), 1);
  assert_int_equal(gcap_node_get_type(a), GCAP_NODE_EMPTY);
  gcap_graph_destroy(g);
}

static void test_context_destroy_frees_graphs(void **state) {
  (void)state;
  /* Graphs, clones and children left behind: the context frees them (valgrind checks). */
  gcap_context *ctx = test_context_create();
  gcap_graph *g = test_graph_create(ctx);
  gcap_node *a = add_empty(g, NULL, 0);
  gcap_graph *child = test_graph_create(ctx);
  add_empty(child, NULL, 0);
  gcap_node *cn = NULL;
  assert_ok(gcap_graph_add_child_graph_node(g, &a, 1, child, &cn));
  gcap_graph *cl = NULL;
  assert_ok(gcap_graph_clone(g, &cl));
  gcap_context_destroy(ctx);
  assert_int_equal(gcap_graph_node_count(g), 0);
  assert_int_equal(gcap_graph_node_count(cl), 0);
  assert_int_equal(gcap_graph_node_count(child), 0);
}

/* ============================================================ random DAG */

#define RND_NODES 200
#define RND_MAX_EDGES 2000
#define RND_WORDS ((RND_NODES + 63) / 64)

static uint64_t rng_state;
static uint32_t rng_next(void) {
  rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
  return (uint32_t)(rng_state >> 33);
}

struct model {
  size_t deps[RND_NODES][RND_NODES];
  size_t ndeps[RND_NODES];
  size_t outs[RND_NODES][RND_NODES];
  size_t nouts[RND_NODES];
  size_t ef[RND_MAX_EDGES], et[RND_MAX_EDGES];
  size_t nedges;
  bool has[RND_NODES][RND_NODES];
};

static void model_add(struct model *m, size_t from, size_t to) {
  m->deps[to][m->ndeps[to]++] = from;
  m->outs[from][m->nouts[from]++] = to;
  m->ef[m->nedges] = from;
  m->et[m->nedges] = to;
  m->nedges++;
  m->has[from][to] = true;
}

static void model_check(const struct model *m, gcap_graph *g, gcap_node *const *n) {
  assert_int_equal(gcap_graph_node_count(g), RND_NODES);
  assert_int_equal(gcap_graph_edge_count(g), m->nedges);
  gcap_node **f, **t;
  size_t ne = get_edges(g, &f, &t);
  assert_int_equal(ne, m->nedges);
  for (size_t e = 0; e < ne; e++) {
    assert_ptr_equal(f[e], n[m->ef[e]]);
    assert_ptr_equal(t[e], n[m->et[e]]);
  }
  free(f);
  free(t);
  gcap_node *buf[RND_NODES];
  for (size_t i = 0; i < RND_NODES; i++) {
    for (size_t k = 0; k < m->ndeps[i]; k++) buf[k] = n[m->deps[i][k]];
    expect_deps(n[i], buf, m->ndeps[i]);
    for (size_t k = 0; k < m->nouts[i]; k++) buf[k] = n[m->outs[i][k]];
    expect_dependents(n[i], buf, m->nouts[i]);
  }
  size_t nroots = 0;
  for (size_t i = 0; i < RND_NODES; i++)
    if (m->ndeps[i] == 0) buf[nroots++] = n[i];
  expect_roots(g, buf, nroots);
}

static void test_random_dag(void **state) {
  gcap_context *ctx = *state;
  struct model *m = calloc(1, sizeof *m);
  assert_non_null(m);
  rng_state = 20240611u;
  gcap_graph *g = test_graph_create(ctx);
  gcap_node *n[RND_NODES];

  for (size_t i = 0; i < RND_NODES; i++) {
    size_t want = i == 0 ? 0 : rng_next() % 5;
    if (want > i) want = i;
    gcap_node *deps[5];
    size_t idx[5];
    size_t nd = 0;
    while (nd < want) {
      size_t j = rng_next() % i;
      bool dup = false;
      for (size_t k = 0; k < nd; k++) dup = dup || idx[k] == j;
      if (dup) continue;
      idx[nd] = j;
      deps[nd] = n[j];
      nd++;
    }
    assert_ok(gcap_graph_add_empty_node(g, deps, nd, &n[i]));
    for (size_t k = 0; k < nd; k++) model_add(m, idx[k], i);
  }
  model_check(m, g, n);

  /* Extra forward edges in batches of up to 4; a batch hitting an existing edge is refused whole. */
  size_t refused = 0;
  for (int round = 0; round < 80; round++) {
    size_t bn = 1 + rng_next() % 4;
    gcap_node *bf[4], *bt[4];
    size_t fi[4], ti[4];
    bool bad = false;
    for (size_t k = 0; k < bn; k++) {
      size_t a = rng_next() % RND_NODES, b = rng_next() % RND_NODES;
      if (a == b) b = (b + 1) % RND_NODES;
      if (a > b) {
        size_t tmp = a;
        a = b;
        b = tmp;
      }
      for (size_t q = 0; q < k; q++) bad = bad || (fi[q] == a && ti[q] == b);
      bad = bad || m->has[a][b];
      fi[k] = a;
      ti[k] = b;
      bf[k] = n[a];
      bt[k] = n[b];
    }
    if (bad) {
      assert_status(gcap_graph_add_dependencies(g, bf, bt, bn), GCAP_ERROR_INVALID_VALUE);
      refused++;
    } else {
      assert_ok(gcap_graph_add_dependencies(g, bf, bt, bn));
      for (size_t k = 0; k < bn; k++) model_add(m, fi[k], ti[k]);
    }
  }
  model_check(m, g, n);

  /* Back edges: refused exactly when a path exists (then it would close a cycle). */
  static uint64_t reach[RND_NODES][RND_WORDS];
  memset(reach, 0, sizeof reach);
  for (size_t i = RND_NODES; i-- > 0;) {
    for (size_t k = 0; k < m->nouts[i]; k++) {
      size_t j = m->outs[i][k];
      reach[i][j / 64] |= 1ull << (j % 64);
      for (size_t w = 0; w < RND_WORDS; w++) reach[i][w] |= reach[j][w];
    }
  }
  size_t cycles = 0;
  for (int round = 0; round < 300 && cycles < 60; round++) {
    size_t a = rng_next() % RND_NODES, b = rng_next() % RND_NODES;
    if (a >= b) continue;
    if ((reach[a][b / 64] >> (b % 64)) & 1u) {
      assert_status(gcap_graph_add_dependencies(g, &n[b], &n[a], 1), GCAP_ERROR_INVALID_VALUE);
      cycles++;
    }
  }
  assert_true(cycles > 0);
  model_check(m, g, n);
  (void)refused;

  gcap_graph *cl = NULL;
  assert_ok(gcap_graph_clone(g, &cl));
  gcap_node *cn[RND_NODES];
  size_t count = RND_NODES;
  assert_ok(gcap_graph_get_nodes(cl, cn, &count));
  model_check(m, cl, cn);
  gcap_graph_destroy(cl);
  gcap_graph_destroy(g);
  free(m);
}

/* gcap_graph_node_find_in_clone pairs each node of a clone with the node it was copied from. */
static void test_find_in_clone(void **state) {
  gcap_context *ctx = *state;
  gcap_graph *g = NULL, *clone = NULL, *clone2 = NULL, *other = NULL;
  assert_ok(gcap_graph_create(ctx, &g));
  assert_ok(gcap_graph_create(ctx, &other));
  gcap_node *a = add_empty(g, NULL, 0), *b = add_empty(g, &a, 1), *c = add_empty(g, &b, 1);
  gcap_node *stranger = add_empty(other, NULL, 0);
  assert_ok(gcap_graph_clone(g, &clone));
  gcap_node *originals[3] = {a, b, c}, *copies[3] = {NULL};
  for (int i = 0; i < 3; i++) {
    assert_ok(gcap_graph_node_find_in_clone(clone, originals[i], &copies[i]));
    assert_non_null(copies[i]);
    assert_ptr_not_equal(copies[i], originals[i]);
  }
  gcap_node *dep = NULL;
  size_t count = 1;
  assert_ok(gcap_node_get_dependencies(copies[2], &dep, &count));
  assert_ptr_equal(dep, copies[1]); /* the copy of c hangs off the copy of b */

  gcap_node *later = add_empty(g, &c, 1), *out = SENTINEL_NODE;
  assert_status(gcap_graph_node_find_in_clone(clone, later, &out), GCAP_ERROR_INVALID_VALUE);
  test_assert_message_contains("added after the graph was cloned");
  assert_null(out);
  assert_status(gcap_graph_node_find_in_clone(clone, stranger, &out), GCAP_ERROR_INVALID_VALUE);
  test_assert_message_contains("was not cloned from the graph of original node");
  assert_status(gcap_graph_node_find_in_clone(g, a, &out), GCAP_ERROR_INVALID_VALUE); /* not a clone of itself */

  /* A clone of the clone pairs with the clone's nodes, not the original's. */
  assert_ok(gcap_graph_clone(clone, &clone2));
  assert_ok(gcap_graph_node_find_in_clone(clone2, copies[1], &out));
  assert_status(gcap_graph_node_find_in_clone(clone2, b, &out), GCAP_ERROR_INVALID_VALUE);

  /* The copy destroyed; then nodes of the original destroyed: no pairing any more. */
  assert_ok(gcap_graph_destroy_node(copies[0]));
  assert_status(gcap_graph_node_find_in_clone(clone, a, &out), GCAP_ERROR_INVALID_VALUE);
  test_assert_message_contains("was destroyed");
  assert_ok(gcap_graph_node_find_in_clone(clone, c, &out));
  assert_ptr_equal(out, copies[2]);
  assert_ok(gcap_graph_destroy_node(later));
  assert_status(gcap_graph_node_find_in_clone(clone, c, &out), GCAP_ERROR_INVALID_VALUE);
  test_assert_message_contains("destroyed since it was cloned");

  assert_status(gcap_graph_node_find_in_clone(clone, c, NULL), GCAP_ERROR_INVALID_VALUE);
  assert_status(gcap_graph_node_find_in_clone(NULL, c, &out), GCAP_ERROR_INVALID_HANDLE);
  assert_status(gcap_graph_node_find_in_clone(clone, NULL, &out), GCAP_ERROR_INVALID_HANDLE);
  gcap_graph_destroy(g);
  gcap_graph_destroy(clone);
  gcap_graph_destroy(clone2);
  gcap_graph_destroy(other);
}

static int generic_calls;
static void count_generic(void *u) {
  (void)u;
  generic_calls++;
}
static void count_generic_twice(void *u) {
  (void)u;
  generic_calls += 2;
}

/* gcap_graph_add_node, gcap_node_set_params and gcap_exec_node_set_params over gcap_node_params. */
static void test_generic_node_calls(void **state) {
  gcap_context *ctx = *state;
  gcap_graph *g = test_graph_create(ctx), *child = test_graph_create(ctx);
  add_empty(child, NULL, 0);
  gcap_event *e = NULL;
  assert_ok(gcap_event_create(ctx, &e));
  void *dev = test_dev_alloc(ctx, 64);
  gcap_node_params kinds[5] = {{.type = GCAP_NODE_EMPTY},
                               {.type = GCAP_NODE_HOST},
                               {.type = GCAP_NODE_EVENT_RECORD},
                               {.type = GCAP_NODE_MEMSET},
                               {.type = GCAP_NODE_GRAPH}};
  kinds[1].u.host = (gcap_host_node_params){count_generic, NULL};
  kinds[2].u.event = e;
  kinds[3].u.fill = (gcap_memset_node_params){dev, 7, 1, 64, 1, 64};
  kinds[4].u.child_graph = child;
  gcap_node *nodes[5];
  for (int i = 0; i < 5; i++) {
    assert_ok(gcap_graph_add_node(g, i ? &nodes[i - 1] : NULL, i ? 1 : 0, &kinds[i], &nodes[i]));
    assert_int_equal(gcap_node_get_type(nodes[i]), kinds[i].type);
  }
  gcap_event *got = NULL;
  assert_ok(gcap_node_get_event(nodes[2], &got));
  assert_ptr_equal(got, e);

  gcap_node_params host = {.type = GCAP_NODE_HOST};
  host.u.host = (gcap_host_node_params){count_generic_twice, NULL};
  assert_ok(gcap_node_set_params(nodes[1], &host));
  gcap_host_node_params hp;
  assert_ok(gcap_node_get_host_params(nodes[1], &hp));
  assert_true(hp.fn == count_generic_twice);
  assert_status(gcap_node_set_params(nodes[0], &host), GCAP_ERROR_INVALID_VALUE);
  test_assert_message_contains("gcap_node_set_params: params->type");
  assert_status(gcap_node_set_params(nodes[0], &kinds[0]), GCAP_ERROR_NOT_SUPPORTED);

  gcap_exec *x = NULL;
  gcap_stream *s = NULL;
  assert_ok(gcap_stream_create(ctx, &s));
  assert_ok(gcap_graph_instantiate(g, 0, &x));
  host.u.host = (gcap_host_node_params){count_generic, NULL};
  assert_ok(gcap_exec_node_set_params(x, nodes[1], &host));
  generic_calls = 0;
  assert_ok(gcap_exec_launch(x, s));
  assert_ok(gcap_stream_synchronize(s));
  assert_int_equal(generic_calls, 1);
  assert_status(gcap_exec_node_set_params(x, nodes[0], &kinds[0]), GCAP_ERROR_INVALID_VALUE);
  test_assert_message_contains("gcap_exec_node_set_params: an empty node has no parameters to set");
  assert_ok(gcap_exec_node_set_params(x, nodes[4], &kinds[4])); /* gcap_exec_child_graph_node_set_params */

  gcap_node_params bad = {.type = GCAP_NODE_MEMSET};
  bad.u.fill = (gcap_memset_node_params){dev, 7, 3, 64, 1, 64};
  gcap_node *out = SENTINEL_NODE;
  assert_status(gcap_graph_add_node(g, NULL, 0, &bad, &out), GCAP_ERROR_INVALID_VALUE);
  test_assert_message_contains("gcap_graph_add_node: element_size 3 is not 1, 2 or 4");
  assert_null(out);
  bad.type = (gcap_node_type)99;
  assert_status(gcap_graph_add_node(g, NULL, 0, &bad, &out), GCAP_ERROR_INVALID_VALUE);
  test_assert_message_contains("params->type 99 is not a gcap_node_type");
  bad.type = GCAP_NODE_MEM_ALLOC;
  bad.u.mem_alloc = (gcap_mem_alloc_node_params){0, NULL, NULL};
  assert_status(gcap_graph_add_node(g, NULL, 0, &bad, &out), GCAP_ERROR_INVALID_VALUE);
  test_assert_message_contains("gcap_graph_add_node: params->bytes is 0");
  assert_status(gcap_graph_add_node(g, NULL, 0, NULL, &out), GCAP_ERROR_INVALID_VALUE);
  test_assert_message_contains("gcap_graph_add_node: params is NULL");
  assert_status(gcap_graph_add_node(NULL, NULL, 0, &kinds[0], &out), GCAP_ERROR_INVALID_HANDLE);
  assert_status(gcap_node_set_params(NULL, &host), GCAP_ERROR_INVALID_HANDLE);
  assert_status(gcap_exec_node_set_params(x, nodes[1], NULL), GCAP_ERROR_INVALID_VALUE);
  assert_int_equal(gcap_graph_node_count(g), 5);

  gcap_exec_destroy(x);
  assert_ok(gcap_stream_destroy(s));
  gcap_graph_destroy(g);
  gcap_graph_destroy(child);
  assert_ok(gcap_event_destroy(e));
  assert_ok(gcap_mem_free(ctx, dev));
}

int main(void) {
  test_require_backend();
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_create_and_destroy, setup_ctx, teardown_ctx),
      cmocka_unit_test_setup_teardown(test_create_bad_args, setup_ctx, teardown_ctx),
      cmocka_unit_test_setup_teardown(test_find_in_clone, setup_ctx, teardown_ctx),
      cmocka_unit_test_setup_teardown(test_generic_node_calls, setup_ctx, teardown_ctx),
      cmocka_unit_test_setup_teardown(test_counts_of_invalid_graphs, setup_ctx, teardown_ctx),
      cmocka_unit_test_setup_teardown(test_counts_follow_edits, setup_ctx, teardown_ctx),
      cmocka_unit_test_setup_teardown(test_get_nodes_buffers, setup_ctx, teardown_ctx),
      cmocka_unit_test_setup_teardown(test_get_root_nodes_buffers, setup_ctx, teardown_ctx),
      cmocka_unit_test_setup_teardown(test_get_edges_buffers, setup_ctx, teardown_ctx),
      cmocka_unit_test_setup_teardown(test_node_dependency_buffers, setup_ctx, teardown_ctx),
      cmocka_unit_test_setup_teardown(test_creation_order, setup_ctx, teardown_ctx),
      cmocka_unit_test_setup_teardown(test_add_dependencies_batch, setup_ctx, teardown_ctx),
      cmocka_unit_test_setup_teardown(test_add_dependencies_bad_arrays, setup_ctx, teardown_ctx),
      cmocka_unit_test_setup_teardown(test_add_dependencies_rejects_whole_batch, setup_ctx, teardown_ctx),
      cmocka_unit_test_setup_teardown(test_add_dependencies_cycle_through_chain, setup_ctx, teardown_ctx),
      cmocka_unit_test_setup_teardown(test_add_dependencies_foreign_and_destroyed, setup_ctx, teardown_ctx),
      cmocka_unit_test_setup_teardown(test_remove_dependencies, setup_ctx, teardown_ctx),
      cmocka_unit_test_setup_teardown(test_destroy_node, setup_ctx, teardown_ctx),
      cmocka_unit_test_setup_teardown(test_clone_keeps_every_order, setup_ctx, teardown_ctx),
      cmocka_unit_test_setup_teardown(test_clone_deep_copy_of_every_type, setup_ctx, teardown_ctx),
      cmocka_unit_test_setup_teardown(test_child_graph_is_cloned_at_add, setup_ctx, teardown_ctx),
      cmocka_unit_test_setup_teardown(test_child_graph_bad_args, setup_ctx, teardown_ctx),
      cmocka_unit_test_setup_teardown(test_clone_recurses_into_child, setup_ctx, teardown_ctx),
      cmocka_unit_test_setup_teardown(test_graphs_of_different_contexts, setup_ctx, teardown_ctx),
      cmocka_unit_test(test_context_destroy_frees_graphs),
      cmocka_unit_test_setup_teardown(test_random_dag, setup_ctx, teardown_ctx),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
