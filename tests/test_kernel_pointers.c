/*
 * Kernel pointer arguments on the simulator: a READ, WRITE or READ_WRITE parameter must point into
 * a device allocation or page-locked host memory of the context, at every place a kernel's
 * arguments enter (eager launch, node addition and setters, capture, instantiation, launch).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"

#define BYTES 256u

static void nop_fn(const gcap_sim_thread *t, void *const *args) {
  (void)t;
  (void)args;
}

/* k(in READ, out WRITE, both READ_WRITE, opaque UNKNOWN, tag NONE, n) */
static const size_t k_sizes[] = {sizeof(void *), sizeof(void *), sizeof(void *),
                                 sizeof(void *), sizeof(void *), sizeof(uint32_t)};
static const gcap_param_access k_access[] = {GCAP_ACCESS_READ,    GCAP_ACCESS_WRITE, GCAP_ACCESS_READ_WRITE,
                                             GCAP_ACCESS_UNKNOWN, GCAP_ACCESS_NONE,  GCAP_ACCESS_NONE};
static const char *const k_access_names[] = {"READ", "WRITE", "READ_WRITE"};

struct fx {
  gcap_context *ctx;
  gcap_stream *s;
  gcap_kernel *k;
  void *dev, *pinned, *heap; /* heap: malloc'ed, unknown to gcap */
  void *ptr[5];              /* the pointer arguments */
  uint32_t n;
  void *args[6];
};

static void args_point_at(struct fx *f, void *p) {
  for (size_t i = 0; i < 5; i++) f->ptr[i] = p;
}

static int setup(void **state) {
  if (!test_on_sim()) return 0; /* each test skips itself */
  struct fx *f = calloc(1, sizeof *f);
  if (!f) return -1;
  f->ctx = test_context_create();
  assert_ok(gcap_stream_create(f->ctx, &f->s));
  static const gcap_kernel_def def = {
      .name = "k", .sim_fn = nop_fn, .num_params = 6, .param_sizes = k_sizes, .param_access = k_access};
  gcap_module_desc d = {.kernels = &def, .num_kernels = 1};
  gcap_module *m = NULL;
  assert_ok(gcap_module_load(f->ctx, &d, &m));
  f->k = test_kernel_of(m, "k");
  f->dev = test_dev_alloc(f->ctx, BYTES);
  assert_ok(gcap_host_alloc(f->ctx, BYTES, &f->pinned));
  f->heap = malloc(BYTES);
  for (size_t i = 0; i < 5; i++) f->args[i] = &f->ptr[i];
  f->args[5] = &f->n;
  args_point_at(f, f->dev);
  *state = f;
  return 0;
}

static int teardown(void **state) {
  struct fx *f = *state;
  if (!f) return 0;
  gcap_context_destroy(f->ctx);
  free(f->heap);
  free(f);
  return 0;
}

static gcap_status launch(struct fx *f) {
  return gcap_launch_kernel(f->s, f->k, GCAP_DIM3(1, 1, 1), GCAP_DIM3(1, 1, 1), 0, f->args);
}

static gcap_kernel_node_params node_params(struct fx *f) {
  return (gcap_kernel_node_params){f->k, GCAP_DIM3(1, 1, 1), GCAP_DIM3(1, 1, 1), 0, f->args};
}

static void assert_refused_message(const char *call, size_t param, const void *p) {
  char want[400];
  snprintf(want, sizeof want,
           "%s: kernel \"k\" parameter %zu (%s) is %p, which is in no device allocation or page-locked host memory "
           "of this context (a host pointer passed as a device pointer?)",
           call, param, k_access_names[param], p);
  assert_string_equal(gcap_last_error_message(), want);
}

/* ------------------------------------------------------------ eager launches */

static void test_heap_pointer_refused_for_declared_params(void **state) {
  test_require_sim();
  struct fx *f = *state;
  gcap_sim_stats before, after;
  assert_ok(gcap_sim_get_stats(f->ctx, &before));
  for (size_t i = 0; i < 3; i++) {
    args_point_at(f, f->dev);
    f->ptr[i] = f->heap;
    assert_status(launch(f), GCAP_ERROR_INVALID_VALUE);
    assert_refused_message("gcap_launch_kernel", i, f->heap);
  }
  assert_ok(gcap_sim_get_stats(f->ctx, &after));
  assert_int_equal(after.kernels_executed, before.kernels_executed); /* nothing ran */
}

static void test_null_refused(void **state) {
  test_require_sim();
  struct fx *f = *state;
  f->ptr[1] = NULL;
  assert_status(launch(f), GCAP_ERROR_INVALID_VALUE);
  assert_string_equal(gcap_last_error_message(),
                      "gcap_launch_kernel: kernel \"k\" parameter 1 (WRITE) is NULL, which is in no device allocation "
                      "or page-locked host memory of this context");
}

static void test_memory_of_the_context_accepted(void **state) {
  test_require_sim();
  struct fx *f = *state;
  args_point_at(f, (char *)f->dev + BYTES - 1); /* inside, not only the start */
  assert_ok(launch(f));
  args_point_at(f, f->pinned);
  assert_ok(launch(f));
  /* UNKNOWN and NONE are not checked */
  args_point_at(f, f->dev);
  f->ptr[3] = f->heap;
  f->ptr[4] = NULL;
  assert_ok(launch(f));
  f->ptr[3] = NULL;
  f->ptr[4] = f->heap;
  assert_ok(launch(f));
}

static void test_another_contexts_memory_refused(void **state) {
  test_require_sim();
  struct fx *f = *state;
  gcap_context *other = test_context_create();
  void *theirs = test_dev_alloc(other, BYTES);
  f->ptr[2] = theirs;
  assert_status(launch(f), GCAP_ERROR_INVALID_VALUE);
  assert_refused_message("gcap_launch_kernel", 2, theirs);
  gcap_context_destroy(other);
}

static void test_one_past_the_end_refused(void **state) {
  test_require_sim();
  struct fx *f = *state;
  void *past = (char *)f->dev + BYTES;
  f->ptr[0] = past;
  gcap_status st = launch(f);
  if (st == GCAP_SUCCESS) return; /* another allocation happens to start right there */
  assert_int_equal(st, GCAP_ERROR_INVALID_VALUE);
  assert_refused_message("gcap_launch_kernel", 0, past);
}

/* ------------------------------------------------------------ graphs */

static void test_node_addition_and_setters(void **state) {
  test_require_sim();
  struct fx *f = *state;
  gcap_graph *g = NULL;
  gcap_node *n = NULL;
  gcap_exec *x = NULL;
  assert_ok(gcap_graph_create(f->ctx, &g));
  f->ptr[1] = f->heap;
  gcap_kernel_node_params p = node_params(f);
  assert_status(gcap_graph_add_kernel_node(g, NULL, 0, &p, &n), GCAP_ERROR_INVALID_VALUE);
  assert_refused_message("gcap_graph_add_kernel_node", 1, f->heap);
  assert_null(n);
  assert_int_equal(gcap_graph_node_count(g), 0);
  args_point_at(f, f->dev);
  assert_ok(gcap_graph_add_kernel_node(g, NULL, 0, &p, &n));
  f->ptr[0] = f->heap;
  assert_status(gcap_node_set_kernel_params(n, &p), GCAP_ERROR_INVALID_VALUE);
  assert_refused_message("gcap_node_set_kernel_params", 0, f->heap);
  args_point_at(f, f->dev);
  assert_ok(gcap_graph_instantiate(g, 0, &x));
  f->ptr[2] = f->heap;
  assert_status(gcap_exec_kernel_node_set_params(x, n, &p), GCAP_ERROR_INVALID_VALUE);
  assert_refused_message("gcap_exec_kernel_node_set_params", 2, f->heap);
  assert_ok(gcap_exec_launch(x, f->s)); /* the executable kept its arguments */
  gcap_exec_destroy(x);
  gcap_graph_destroy(g);
}

/* Memory freed between the node's addition and instantiation (or a launch) is refused there. */
static void test_freed_before_instantiation_and_launch(void **state) {
  test_require_sim();
  struct fx *f = *state;
  gcap_graph *g = NULL;
  gcap_node *n = NULL;
  gcap_exec *x = NULL;
  void *tmp = test_dev_alloc(f->ctx, BYTES);
  args_point_at(f, f->dev);
  f->ptr[1] = tmp;
  gcap_kernel_node_params p = node_params(f);
  assert_ok(gcap_graph_create(f->ctx, &g));
  assert_ok(gcap_graph_add_kernel_node(g, NULL, 0, &p, &n));
  assert_ok(gcap_graph_instantiate(g, 0, &x));
  assert_ok(gcap_mem_free(f->ctx, tmp));
  assert_status(gcap_exec_launch(x, f->s), GCAP_ERROR_INVALID_VALUE);
  test_assert_message_contains("no longer valid; nothing was launched");
  test_assert_message_contains("parameter 1 (WRITE)");
  gcap_exec_destroy(x);
  x = NULL;
  assert_status(gcap_graph_instantiate(g, 0, &x), GCAP_ERROR_INVALID_VALUE);
  assert_null(x);
  char want[300];
  snprintf(want, sizeof want, "node 0 (kernel): kernel \"k\" parameter 1 (WRITE) is %p, which is in no device", tmp);
  test_assert_message_contains(want);
  gcap_graph_destroy(g);
}

/* Capture records through the same checks: a refused argument invalidates the capture. */
static void test_capture(void **state) {
  test_require_sim();
  struct fx *f = *state;
  gcap_graph *g = NULL;
  assert_ok(gcap_stream_begin_capture(f->s, GCAP_CAPTURE_MODE_GLOBAL));
  void *graph_mem = NULL;
  assert_ok(gcap_mem_alloc_async(f->s, BYTES, &graph_mem));
  args_point_at(f, graph_mem); /* graph memory is device memory */
  assert_ok(launch(f));
  f->ptr[2] = f->heap;
  assert_status(launch(f), GCAP_ERROR_INVALID_VALUE);
  assert_refused_message("gcap_launch_kernel", 2, f->heap);
  assert_status(gcap_stream_end_capture(f->s, &g), GCAP_ERROR_STREAM_CAPTURE_INVALIDATED);
  assert_null(g);
}

int main(void) {
  test_require_backend();
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
  const struct CMUnitTest tests[] = {
      T(test_heap_pointer_refused_for_declared_params),
      T(test_null_refused),
      T(test_memory_of_the_context_accepted),
      T(test_another_contexts_memory_refused),
      T(test_one_past_the_end_refused),
      T(test_node_addition_and_setters),
      T(test_freed_before_instantiation_and_launch),
      T(test_capture),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
