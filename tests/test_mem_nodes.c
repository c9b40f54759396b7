/*
 * MEM_ALLOC and MEM_FREE nodes added by hand (gcap_graph_add_mem_alloc_node and
 * gcap_graph_add_mem_free_node): addresses fixed at creation, launches that allocate and free,
 * the rules graphs with such nodes follow, and every refused argument.
 */
#define _POSIX_C_SOURCE 200809L /* open_memstream */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "common.h"

#define BYTES 256

static char sentinel_storage[8];
#define SENTINEL_NODE ((gcap_node *)(void *)&sentinel_storage[1])

static int setup(void **state) { return test_setup(state); }
static int teardown(void **state) { return test_teardown(state); }

/* alloc -> fill with `value` -> copy to host -> (free, when `with_free`). */
struct chain {
  gcap_graph *g;
  gcap_node *alloc, *fill, *copy, *free;
  void *dptr;
  unsigned char host[BYTES];
};

static void make_chain(gcap_context *ctx, struct chain *c, unsigned char value, bool with_free) {
  memset(c, 0, sizeof *c);
  c->g = test_graph_create(ctx);
  gcap_mem_alloc_node_params ap = {BYTES, NULL, NULL};
  assert_ok(gcap_graph_add_mem_alloc_node(c->g, NULL, 0, &ap, &c->alloc));
  assert_non_null(ap.dptr);
  c->dptr = ap.dptr;
  gcap_memset_node_params fp = {c->dptr, value, 1, BYTES, 1, 0};
  assert_ok(gcap_graph_add_memset_node(c->g, &c->alloc, 1, &fp, &c->fill));
  gcap_memcpy_node_params cp = {c->host, c->dptr, BYTES, GCAP_MEMCPY_DEVICE_TO_HOST};
  assert_ok(gcap_graph_add_memcpy_node(c->g, &c->fill, 1, &cp, &c->copy));
  if (with_free) assert_ok(gcap_graph_add_mem_free_node(c->g, &c->copy, 1, c->dptr, &c->free));
}

static void launch(struct test_fixture *f, gcap_exec *x) {
  assert_ok(gcap_exec_launch(x, f->s));
  assert_ok(gcap_stream_synchronize(f->s));
}

static uint64_t attr(gcap_context *ctx, gcap_graph_mem_attribute a) {
  uint64_t v = 0;
  assert_ok(gcap_context_get_graph_mem_attribute(ctx, a, &v));
  return v;
}

static void test_alloc_fill_copy_free(void **state) {
  struct test_fixture *f = *state;
  struct chain c;
  make_chain(f->ctx, &c, 0x5a, true);
  assert_int_equal(gcap_node_get_type(c.alloc), GCAP_NODE_MEM_ALLOC);
  assert_int_equal(gcap_node_get_type(c.free), GCAP_NODE_MEM_FREE);
  gcap_mem_alloc_node_params got;
  void *freed = NULL;
  assert_ok(gcap_node_get_mem_alloc_params(c.alloc, &got));
  assert_int_equal(got.bytes, BYTES);
  assert_null(got.pool);
  assert_ptr_equal(got.dptr, c.dptr);
  assert_ok(gcap_node_get_mem_free_params(c.free, &freed));
  assert_ptr_equal(freed, c.dptr);
  assert_true(attr(f->ctx, GCAP_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT) >= BYTES);

  gcap_exec *x = NULL;
  assert_ok(gcap_graph_instantiate(c.g, 0, &x));
  for (int i = 0; i < 2; i++) { /* freed in the graph: every launch allocates again */
    memset(c.host, 0, BYTES);
    launch(f, x);
    for (size_t b = 0; b < BYTES; b++) assert_int_equal(c.host[b], 0x5a);
    assert_int_equal(attr(f->ctx, GCAP_GRAPH_MEM_ATTR_USED_MEM_CURRENT), 0);
  }
  assert_true(attr(f->ctx, GCAP_GRAPH_MEM_ATTR_USED_MEM_HIGH) >= BYTES);
  assert_ok(gcap_node_get_mem_alloc_params(c.alloc, &got));
  assert_ptr_equal(got.dptr, c.dptr); /* the same address for ever */
  gcap_exec_destroy(x);
  gcap_graph_destroy(c.g);
}

/* Without a free node the allocation outlives the launch, until a free outside or another graph's. */
static void test_unfreed_allocation_and_a_free_graph(void **state) {
  struct test_fixture *f = *state;
  struct chain c;
  make_chain(f->ctx, &c, 0x11, false);
  gcap_exec *x = NULL, *fx = NULL;
  assert_ok(gcap_graph_instantiate(c.g, 0, &x));
  launch(f, x);
  assert_int_equal(attr(f->ctx, GCAP_GRAPH_MEM_ATTR_USED_MEM_CURRENT), BYTES);
  assert_status(gcap_exec_launch(x, f->s), GCAP_ERROR_INVALID_VALUE); /* still allocated, no AUTO_FREE */
  test_assert_message_contains("gcap_exec_launch");

  gcap_graph *freer = test_graph_create(f->ctx);
  gcap_node *fn = NULL;
  assert_ok(gcap_graph_add_mem_free_node(freer, NULL, 0, c.dptr, &fn));
  assert_status(gcap_graph_add_mem_free_node(c.g, NULL, 0, c.dptr, &(gcap_node *){NULL}), GCAP_ERROR_INVALID_VALUE);
  test_assert_message_contains("already has a free node");
  assert_ok(gcap_graph_instantiate(freer, 0, &fx));
  launch(f, fx);
  assert_int_equal(attr(f->ctx, GCAP_GRAPH_MEM_ATTR_USED_MEM_CURRENT), 0);
  launch(f, x); /* free again: it may allocate */
  assert_ok(gcap_mem_free(f->ctx, c.dptr));
  gcap_exec_destroy(fx);
  gcap_exec_destroy(x);
  gcap_graph_destroy(freer);
  gcap_graph_destroy(c.g);
}

/* A graph with allocation nodes: no clone, no child use, no removal, one executable at a time. */
static void test_graph_rules(void **state) {
  struct test_fixture *f = *state;
  struct chain c;
  make_chain(f->ctx, &c, 1, true);
  gcap_graph *clone = NULL, *parent = test_graph_create(f->ctx);
  assert_status(gcap_graph_clone(c.g, &clone), GCAP_ERROR_NOT_SUPPORTED);
  assert_status(gcap_graph_add_child_graph_node(parent, NULL, 0, c.g, &(gcap_node *){NULL}), GCAP_ERROR_NOT_SUPPORTED);
  assert_status(gcap_graph_destroy_node(c.copy), GCAP_ERROR_NOT_SUPPORTED);
  gcap_exec *x = NULL, *y = NULL;
  assert_ok(gcap_graph_instantiate(c.g, 0, &x));
  assert_status(gcap_graph_instantiate(c.g, 0, &y), GCAP_ERROR_NOT_SUPPORTED);
  gcap_exec_destroy(x);

  /* A child graph's graph takes no allocation or free node. */
  gcap_graph *empty = test_graph_create(f->ctx), *inner = NULL;
  gcap_node *child = NULL;
  assert_ok(gcap_graph_add_child_graph_node(parent, NULL, 0, empty, &child));
  assert_ok(gcap_node_get_child_graph(child, &inner));
  gcap_mem_alloc_node_params ap = {64, NULL, NULL};
  assert_status(gcap_graph_add_mem_alloc_node(inner, NULL, 0, &ap, &(gcap_node *){NULL}), GCAP_ERROR_NOT_SUPPORTED);
  test_assert_message_contains("is the graph of a child-graph node");
  assert_null(ap.dptr);
  assert_int_equal(gcap_graph_node_count(inner), 0);
  gcap_graph_destroy(empty);
  gcap_graph_destroy(parent);
  gcap_graph_destroy(c.g);
}

static void test_refused_arguments(void **state) {
  struct test_fixture *f = *state;
  gcap_graph *g = test_graph_create(f->ctx);
  gcap_node *out = SENTINEL_NODE;
  gcap_mem_alloc_node_params ap = {0, NULL, NULL};
  assert_status(gcap_graph_add_mem_alloc_node(g, NULL, 0, &ap, &out), GCAP_ERROR_INVALID_VALUE);
  test_assert_message_contains("gcap_graph_add_mem_alloc_node: params->bytes is 0");
  assert_null(out);
  assert_status(gcap_graph_add_mem_alloc_node(g, NULL, 0, NULL, &out), GCAP_ERROR_INVALID_VALUE);
  test_assert_message_contains("params is NULL");
  ap.bytes = 64;
  assert_status(gcap_graph_add_mem_alloc_node(g, NULL, 0, &ap, NULL), GCAP_ERROR_INVALID_VALUE);
  test_assert_message_contains("out is NULL");
  assert_status(gcap_graph_add_mem_alloc_node(NULL, NULL, 0, &ap, &out), GCAP_ERROR_INVALID_HANDLE);
  ap.pool = (gcap_pool *)(void *)&sentinel_storage[2];
  assert_status(gcap_graph_add_mem_alloc_node(g, NULL, 0, &ap, &out), GCAP_ERROR_INVALID_HANDLE);
  test_assert_message_contains("params->pool");
  ap.pool = NULL;
  assert_status(gcap_graph_add_mem_alloc_node(g, &out, 1, &ap, &out),
                GCAP_ERROR_INVALID_HANDLE); /* out is NULL: deps[0] */
  test_assert_message_contains("deps[0]");
  assert_int_equal(gcap_graph_node_count(g), 0);
  assert_int_equal(attr(f->ctx, GCAP_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT), 0); /* nothing reserved by the refusals */

  void *plain = test_dev_alloc(f->ctx, 64);
  assert_status(gcap_graph_add_mem_free_node(g, NULL, 0, plain, &out), GCAP_ERROR_INVALID_VALUE);
  test_assert_message_contains("gcap_graph_add_mem_free_node: ");
  test_assert_message_contains("is not an address an allocation node returned");
  assert_status(gcap_graph_add_mem_free_node(g, NULL, 0, NULL, &out), GCAP_ERROR_INVALID_VALUE);
  test_assert_message_contains("dptr is NULL");
  gcap_node *a = NULL;
  assert_ok(gcap_graph_add_mem_alloc_node(g, NULL, 0, &ap, &a));
  assert_status(gcap_graph_add_mem_free_node(g, &a, 1, (char *)ap.dptr + 8, &out), GCAP_ERROR_INVALID_VALUE);
  test_assert_message_contains("is not an address an allocation node returned");

  /* Getters: wrong node types and NULL outputs. */
  gcap_mem_alloc_node_params got;
  void *dptr = NULL;
  assert_status(gcap_node_get_mem_free_params(a, &dptr), GCAP_ERROR_INVALID_VALUE);
  test_assert_message_contains("is a mem alloc node, not a mem free node");
  assert_status(gcap_node_get_mem_alloc_params(a, NULL), GCAP_ERROR_INVALID_VALUE);
  test_assert_message_contains("gcap_node_get_mem_alloc_params: params is NULL");
  assert_status(gcap_node_get_mem_alloc_params(NULL, &got), GCAP_ERROR_INVALID_HANDLE);
  assert_ok(gcap_mem_free(f->ctx, plain));
  gcap_graph_destroy(g);
  assert_int_equal(attr(f->ctx, GCAP_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT), 0); /* never allocated: given back */
}

/* From a pool, through the generic call; saved and drawn as captured ones are. */
static void test_pool_generic_call_save_and_dot(void **state) {
  struct test_fixture *f = *state;
  gcap_pool *pool = NULL;
  assert_ok(gcap_pool_create(f->ctx, &pool));
  gcap_graph *g = test_graph_create(f->ctx);
  gcap_node_params p = {.type = GCAP_NODE_MEM_ALLOC};
  p.u.mem_alloc = (gcap_mem_alloc_node_params){128, pool, NULL};
  gcap_node *a = NULL, *fr = NULL;
  assert_ok(gcap_graph_add_node(g, NULL, 0, &p, &a));
  assert_non_null(p.u.mem_alloc.dptr);
  gcap_pool_stats stats;
  assert_ok(gcap_pool_get_stats(pool, &stats));
  assert_true(stats.reserved_bytes >= 128);
  gcap_mem_alloc_node_params got;
  assert_ok(gcap_node_get_mem_alloc_params(a, &got));
  assert_ptr_equal(got.pool, pool);
  gcap_node_params q = {.type = GCAP_NODE_MEM_FREE, .u.mem_free = p.u.mem_alloc.dptr};
  assert_ok(gcap_graph_add_node(g, &a, 1, &q, &fr));
  assert_int_equal(gcap_node_get_type(fr), GCAP_NODE_MEM_FREE);

  char *text = NULL;
  size_t len = 0;
  FILE *out = open_memstream(&text, &len);
  gcap_status saved = gcap_graph_save(g, out);
  fclose(out);
  if (saved == GCAP_SUCCESS) {
    assert_non_null(strstr(text, "\"mem_alloc\""));
    assert_non_null(strstr(text, "\"mem_free\""));
  } else {
    assert_int_equal(saved, GCAP_ERROR_NOT_SUPPORTED); /* built without jansson */
  }
  free(text);
  text = NULL;
  out = open_memstream(&text, &len);
  assert_ok(gcap_graph_write_dot(g, out, GCAP_DOT_VERBOSE));
  fclose(out);
  char want[64];
  snprintf(want, sizeof want, "%p, 128 bytes", p.u.mem_alloc.dptr);
  assert_non_null(strstr(text, want));
  free(text);
  gcap_graph_destroy(g);
  gcap_pool_release(pool);
}

int main(void) {
  test_require_backend();
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_alloc_fill_copy_free, setup, teardown),
      cmocka_unit_test_setup_teardown(test_unfreed_allocation_and_a_free_graph, setup, teardown),
      cmocka_unit_test_setup_teardown(test_graph_rules, setup, teardown),
      cmocka_unit_test_setup_teardown(test_refused_arguments, setup, teardown),
      cmocka_unit_test_setup_teardown(test_pool_generic_call_save_and_dot, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
