/*
 * User objects (gcap_user_object_*): the destructor runs once, when the last reference held by
 * the caller, graphs, clones, child graphs or executables goes, outside gcap's locks; every
 * refused argument.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "common.h"

static char sentinel_storage[8];
#define SENTINEL_USER_OBJECT ((gcap_user_object *)(void *)&sentinel_storage[1])

struct resource {
  int destroyed;
  gcap_context *ctx;
  gcap_status inside; /* what a gcap call made from the destructor returned */
};

static void destroy(void *ptr) {
  struct resource *r = ptr;
  r->destroyed++;
  size_t count = 0;
  gcap_graph *g = NULL;
  r->inside = gcap_graph_create(r->ctx, &g); /* no lock is held: the call works */
  if (r->inside == GCAP_SUCCESS) {
    (void)gcap_graph_get_nodes(g, NULL, &count);
    gcap_graph_destroy(g);
  }
}

static int setup(void **state) {
  *state = test_context_create();
  return *state ? 0 : -1;
}

static int teardown(void **state) {
  gcap_context_destroy(*state);
  return 0;
}

static gcap_user_object *make(gcap_context *ctx, struct resource *r, unsigned refs) {
  gcap_user_object *obj = NULL;
  r->ctx = ctx;
  assert_ok(gcap_user_object_create(ctx, r, destroy, refs, GCAP_USER_OBJECT_NO_DESTRUCTOR_SYNC, &obj));
  return obj;
}

static void test_caller_references(void **state) {
  gcap_context *ctx = *state;
  struct resource r = {0};
  gcap_user_object *obj = make(ctx, &r, 2);
  assert_ok(gcap_user_object_retain(obj, 3));
  assert_ok(gcap_user_object_release(obj, 4));
  assert_int_equal(r.destroyed, 0);
  assert_ok(gcap_user_object_release(obj, 1));
  assert_int_equal(r.destroyed, 1);
  assert_int_equal(r.inside, GCAP_SUCCESS);
  assert_status(gcap_user_object_retain(obj, 1), GCAP_ERROR_INVALID_HANDLE); /* gone with its last reference */
}

/* A graph, its clone, a child graph made from it and an executable each keep the object alive. */
static void test_graphs_and_executables_hold_it(void **state) {
  gcap_context *ctx = *state;
  struct resource r = {0};
  gcap_user_object *obj = make(ctx, &r, 1);
  gcap_graph *g = NULL, *clone = NULL, *parent = NULL;
  gcap_node *child = NULL;
  assert_ok(gcap_graph_create(ctx, &g));
  assert_ok(gcap_graph_create(ctx, &parent));
  assert_ok(gcap_graph_retain_user_object(g, obj, 1, GCAP_GRAPH_USER_OBJECT_MOVE)); /* the caller's reference */
  assert_ok(gcap_graph_clone(g, &clone));
  assert_ok(gcap_graph_add_child_graph_node(parent, NULL, 0, g, &child));
  gcap_exec *x = NULL;
  assert_ok(gcap_graph_instantiate(parent, 0, &x));

  gcap_graph_destroy(g);
  gcap_graph_destroy(clone);
  gcap_graph_destroy(parent);
  assert_int_equal(r.destroyed, 0); /* the executable still holds it */
  gcap_exec_destroy(x);
  assert_int_equal(r.destroyed, 1);
  assert_int_equal(r.inside, GCAP_SUCCESS);
}

static void test_graph_release(void **state) {
  gcap_context *ctx = *state;
  struct resource r = {0};
  gcap_user_object *obj = make(ctx, &r, 1);
  gcap_graph *g = NULL;
  assert_ok(gcap_graph_create(ctx, &g));
  assert_ok(gcap_graph_retain_user_object(g, obj, 2, 0));
  assert_status(gcap_graph_release_user_object(g, obj, 3), GCAP_ERROR_INVALID_VALUE);
  test_assert_message_contains("count 3 is more than the 2 references graph");
  assert_ok(gcap_graph_release_user_object(g, obj, 2));
  assert_ok(gcap_user_object_release(obj, 1));
  assert_int_equal(r.destroyed, 1);
  gcap_graph_destroy(g);
}

/* What the context still holds at its destroy goes with it. */
static void test_context_destroy_runs_the_rest(void **state) {
  (void)state;
  gcap_context *ctx = test_context_create();
  struct resource held_by_caller = {0}, held_by_graph = {0};
  make(ctx, &held_by_caller, 1);
  gcap_user_object *obj = make(ctx, &held_by_graph, 1);
  gcap_graph *g = NULL;
  assert_ok(gcap_graph_create(ctx, &g));
  assert_ok(gcap_graph_retain_user_object(g, obj, 1, GCAP_GRAPH_USER_OBJECT_MOVE));
  held_by_caller.ctx = held_by_graph.ctx = NULL; /* the destructors' gcap call meets a dead context */
  gcap_context_destroy(ctx);
  assert_int_equal(held_by_caller.destroyed, 1);
  assert_int_equal(held_by_graph.destroyed, 1);
  assert_int_equal(held_by_caller.inside, GCAP_ERROR_INVALID_HANDLE);
}

static void test_refusals(void **state) {
  gcap_context *ctx = *state;
  struct resource r = {0};
  gcap_user_object *obj = SENTINEL_USER_OBJECT;
  r.ctx = ctx;
  assert_status(gcap_user_object_create(NULL, &r, destroy, 1, GCAP_USER_OBJECT_NO_DESTRUCTOR_SYNC, &obj),
                GCAP_ERROR_INVALID_HANDLE);
  assert_null(obj);
  assert_status(gcap_user_object_create(ctx, &r, NULL, 1, GCAP_USER_OBJECT_NO_DESTRUCTOR_SYNC, &obj),
                GCAP_ERROR_INVALID_VALUE);
  test_assert_message_contains("gcap_user_object_create: destroy is NULL");
  assert_status(gcap_user_object_create(ctx, &r, destroy, 0, GCAP_USER_OBJECT_NO_DESTRUCTOR_SYNC, &obj),
                GCAP_ERROR_INVALID_VALUE);
  test_assert_message_contains("initial_refcount is 0");
  assert_status(gcap_user_object_create(ctx, &r, destroy, 1, 0, &obj), GCAP_ERROR_INVALID_VALUE);
  test_assert_message_contains("GCAP_USER_OBJECT_NO_DESTRUCTOR_SYNC");
  assert_status(gcap_user_object_create(ctx, &r, destroy, 1, GCAP_USER_OBJECT_NO_DESTRUCTOR_SYNC, NULL),
                GCAP_ERROR_INVALID_VALUE);

  obj = make(ctx, &r, 1);
  assert_status(gcap_user_object_retain(obj, 0), GCAP_ERROR_INVALID_VALUE);
  test_assert_message_contains("count is 0");
  assert_status(gcap_user_object_release(obj, 2), GCAP_ERROR_INVALID_VALUE);
  test_assert_message_contains("count 2 is more than the 1 references the caller holds");
  assert_status(gcap_user_object_retain(NULL, 1), GCAP_ERROR_INVALID_HANDLE);
  gcap_graph *g = NULL;
  assert_ok(gcap_graph_create(ctx, &g));
  assert_status(gcap_graph_retain_user_object(g, obj, 1, 2), GCAP_ERROR_INVALID_VALUE);
  test_assert_message_contains("flags 0x2 has unknown bits 0x2");
  assert_status(gcap_graph_retain_user_object(g, obj, 2, GCAP_GRAPH_USER_OBJECT_MOVE), GCAP_ERROR_INVALID_VALUE);
  test_assert_message_contains("references the caller holds to move");
  assert_status(gcap_graph_retain_user_object(g, obj, 0, 0), GCAP_ERROR_INVALID_VALUE);
  assert_status(gcap_graph_release_user_object(g, obj, 1), GCAP_ERROR_INVALID_VALUE);
  assert_status(gcap_graph_retain_user_object(NULL, obj, 1, 0), GCAP_ERROR_INVALID_HANDLE);
  assert_status(gcap_graph_retain_user_object(g, NULL, 1, 0), GCAP_ERROR_INVALID_HANDLE);
  gcap_context *other = test_context_create();
  gcap_graph *foreign = NULL;
  assert_ok(gcap_graph_create(other, &foreign));
  assert_status(gcap_graph_retain_user_object(foreign, obj, 1, 0), GCAP_ERROR_INVALID_HANDLE);
  test_assert_message_contains("obj belongs to another context");
  gcap_context_destroy(other);
  assert_int_equal(r.destroyed, 0); /* nothing refused took or dropped a reference */
  assert_ok(gcap_user_object_release(obj, 1));
  assert_int_equal(r.destroyed, 1);
  gcap_graph_destroy(g);
}

int main(void) {
  test_require_backend();
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_caller_references, setup, teardown),
      cmocka_unit_test_setup_teardown(test_graphs_and_executables_hold_it, setup, teardown),
      cmocka_unit_test_setup_teardown(test_graph_release, setup, teardown),
      cmocka_unit_test(test_context_destroy_runs_the_rest),
      cmocka_unit_test_setup_teardown(test_refusals, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
