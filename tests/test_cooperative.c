/*
 * Cooperative launches (gcap_launch_cooperative_kernel, GCAP_KERNEL_NODE_ATTR_COOPERATIVE): a
 * grid-wide barrier as nvcc lowers cooperative_groups::this_grid().sync() (tests/ptx/coop) completes
 * in IMMEDIATE and DEFERRED modes and with worker threads; the same kernel launched normally traps;
 * a grid larger than the simulated device holds is COOPERATIVE_LAUNCH_TOO_LARGE and runs nothing;
 * captures record the attribute and replays run cooperatively; bad arguments are named.
 */
#define _POSIX_C_SOURCE 200809L

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "ptx_util.h"

#define N 5000
#define ROUNDS 3
#define BLOCKS 12
#define THREADS 128

/* What grid_sum needs: its input, partial sums, results, and the arguments pointing at them. */
struct sum_run {
  gcap_context *ctx;
  gcap_module *m;
  gcap_kernel *k;
  int *in, *partial, *out;
  int n, rounds;
  void *args[5];
  long long want;
};

static void sum_setup(struct sum_run *r, gcap_context *ctx) {
  memset(r, 0, sizeof *r);
  r->ctx = ctx;
  r->m = ptx_load(ctx, "coop/grid_sync.ptx");
  r->k = test_kernel_of(r->m, "grid_sum");
  int host[N];
  r->want = 0;
  for (int i = 0; i < N; i++) {
    host[i] = (i * 7919) % 23 - 11;
    r->want += host[i];
  }
  r->in = ptx_dev(ctx, host, sizeof host);
  r->partial = ptx_dev(ctx, NULL, BLOCKS * sizeof(int));
  int minus[ROUNDS];
  for (int i = 0; i < ROUNDS; i++) minus[i] = -1;
  r->out = ptx_dev(ctx, minus, sizeof minus);
  r->n = N;
  r->rounds = ROUNDS;
  r->args[0] = &r->in;
  r->args[1] = &r->partial;
  r->args[2] = &r->out;
  r->args[3] = &r->n;
  r->args[4] = &r->rounds;
}

static void sum_expect(const struct sum_run *r) {
  int got[ROUNDS];
  ptx_get(r->ctx, got, r->out, sizeof got);
  for (int i = 0; i < ROUNDS; i++)
    ptx_expect(got[i] == (i + 1) * r->want, "grid_sum", "out", (size_t)i, "got %d, want %lld", got[i],
               (i + 1) * r->want);
}

static gcap_context *sim_ctx(gcap_sim_exec exec, unsigned threads, unsigned checks) {
  gcap_sim_options so;
  ptx_sim_options(&so, checks);
  so.exec = exec;
  so.threads = threads;
  return test_sim_context_create(&so);
}

static void grid_sum_in(gcap_sim_exec exec, unsigned threads, unsigned checks) {
  test_require_sim();
  gcap_context *ctx = sim_ctx(exec, threads, checks);
  struct sum_run r;
  sum_setup(&r, ctx);
  gcap_stream *s = test_stream_create(ctx);
  assert_ok(gcap_launch_cooperative_kernel(s, r.k, (gcap_dim3){BLOCKS, 1, 1}, (gcap_dim3){THREADS, 1, 1}, 0, r.args));
  assert_ok(gcap_stream_synchronize(s));
  sum_expect(&r);
  gcap_sim_stats st;
  assert_ok(gcap_sim_get_stats(ctx, &st));
  assert_int_equal(st.kernels_executed, 1);
  gcap_context_destroy(ctx);
}

static void grid_sum_immediate(void **state) {
  (void)state;
  grid_sum_in(GCAP_SIM_EXEC_IMMEDIATE, 1, PTX_CHECKS_ALL);
}

static void grid_sum_deferred(void **state) {
  (void)state;
  grid_sum_in(GCAP_SIM_EXEC_DEFERRED, 1, PTX_CHECKS_ALL);
}

static void grid_sum_threads(void **state) {
  (void)state;
  grid_sum_in(GCAP_SIM_EXEC_IMMEDIATE, 4, PTX_CHECKS_DEFAULT);
  grid_sum_in(GCAP_SIM_EXEC_DEFERRED, 4, 0);
}

/* Launches of other shapes (blocks of a power of two threads: the reduction halves them) one after
 * another reuse the resident blocks of the ones before. */
static void repeated_launches(void **state) {
  (void)state;
  test_require_sim();
  static const unsigned shapes[][2] = {{BLOCKS, THREADS}, {5, 64}, {BLOCKS, 32}, {3, 256}, {BLOCKS, THREADS}};
  gcap_context *ctx = sim_ctx(GCAP_SIM_EXEC_IMMEDIATE, 1, PTX_CHECKS_ALL);
  struct sum_run r;
  sum_setup(&r, ctx);
  gcap_stream *s = test_stream_create(ctx);
  for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
    int minus[ROUNDS] = {-1, -1, -1};
    ptx_put(ctx, r.out, minus, sizeof minus);
    assert_ok(gcap_launch_cooperative_kernel(s, r.k, (gcap_dim3){shapes[i][0], 1, 1}, (gcap_dim3){shapes[i][1], 1, 1},
                                             0, r.args));
    assert_ok(gcap_stream_synchronize(s));
    sum_expect(&r);
  }
  gcap_context_destroy(ctx);
}

/* Launched as an ordinary kernel, the grid workspace pointer (%envreg1:%envreg2) is 0: cooperative groups traps. */
static void ordinary_launch_traps(void **state) {
  (void)state;
  test_require_sim();
  gcap_context *ctx = sim_ctx(GCAP_SIM_EXEC_IMMEDIATE, 1, PTX_CHECKS_DEFAULT);
  struct sum_run r;
  sum_setup(&r, ctx);
  gcap_stream *s = test_stream_create(ctx);
  assert_status(gcap_launch_kernel(s, r.k, (gcap_dim3){BLOCKS, 1, 1}, (gcap_dim3){THREADS, 1, 1}, 0, r.args),
                GCAP_ERROR_LAUNCH_FAILURE);
  test_assert_message_contains("gcap_launch_kernel: ");
  test_assert_message_contains("kernel \"grid_sum\" block (0,0,0)");
  test_assert_message_contains("trap executed");
  gcap_context_destroy(ctx);
}

/* %envreg0..31: 0 in an ordinary launch; in a cooperative one 1 and 2 give the zeroed workspace. */
static const char envreg_ptx[] = ".version 7.8\n.target sm_80\n.address_size 64\n"
                                 ".visible .entry env(.param .u64 p_out)\n{\n"
                                 "  .reg .pred %p<2>;\n  .reg .b32 %r<8>;\n  .reg .b64 %rd<6>;\n"
                                 "  ld.param.u64 %rd1, [p_out];\n"
                                 "  mov.u32 %r1, %envreg0;\n  st.global.u32 [%rd1], %r1;\n"
                                 "  mov.u32 %r2, %envreg1;\n  st.global.u32 [%rd1+4], %r2;\n"
                                 "  mov.u32 %r3, %envreg2;\n  st.global.u32 [%rd1+8], %r3;\n"
                                 "  mov.u32 %r4, %envreg31;\n  st.global.u32 [%rd1+12], %r4;\n"
                                 "  cvt.u64.u32 %rd2, %r3;\n  cvt.u64.u32 %rd3, %r2;\n"
                                 "  bfi.b64 %rd4, %rd3, %rd2, 32, 32;\n"
                                 "  setp.eq.u64 %p1, %rd4, 0;\n  @%p1 bra DONE;\n"
                                 "  ld.global.u32 %r5, [%rd4+4];\n  st.global.u32 [%rd1+16], %r5;\n"
                                 "DONE:\n  ret;\n}\n";

static void envreg_values(void **state) {
  (void)state;
  test_require_sim();
  gcap_context *ctx = sim_ctx(GCAP_SIM_EXEC_IMMEDIATE, 1, PTX_CHECKS_ALL);
  gcap_module *m = ptx_load_text(ctx, envreg_ptx);
  gcap_kernel *k = test_kernel_of(m, "env");
  uint32_t init[5] = {7, 7, 7, 7, 7}, got[5];
  uint32_t *out = ptx_dev(ctx, init, sizeof init);
  void *args[] = {&out};
  gcap_stream *s = test_stream_create(ctx);
  assert_ok(gcap_launch_kernel(s, k, (gcap_dim3){1, 1, 1}, (gcap_dim3){1, 1, 1}, 0, args));
  ptx_get(ctx, got, out, sizeof got);
  assert_int_equal(got[0], 0);
  assert_int_equal(got[1], 0);
  assert_int_equal(got[2], 0);
  assert_int_equal(got[3], 0);
  assert_int_equal(got[4], 7);
  assert_ok(gcap_launch_cooperative_kernel(s, k, (gcap_dim3){1, 1, 1}, (gcap_dim3){1, 1, 1}, 0, args));
  ptx_get(ctx, got, out, sizeof got);
  assert_int_equal(got[0], 0);
  assert_true(got[1] != 0 || got[2] != 0);
  assert_int_equal(got[2] % 256, 0);
  assert_int_equal(got[3], 0);
  assert_int_equal(got[4], 0); /* the workspace starts as zeros */
  gcap_context_destroy(ctx);
}

/* 1024 threads a block: 2 a multiprocessor, 264 on the 132 of the simulated H100. */
static void too_large(void **state) {
  (void)state;
  test_require_sim();
  gcap_context *ctx = sim_ctx(GCAP_SIM_EXEC_IMMEDIATE, 1, PTX_CHECKS_DEFAULT);
  struct sum_run r;
  sum_setup(&r, ctx);
  gcap_stream *s = test_stream_create(ctx);
  assert_status(gcap_launch_cooperative_kernel(s, r.k, (gcap_dim3){265, 1, 1}, (gcap_dim3){1024, 1, 1}, 0, r.args),
                GCAP_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE);
  test_assert_message_contains("gcap_launch_cooperative_kernel: kernel \"grid_sum\": grid (265, 1, 1) has 265 "
                               "blocks, but the simulated device holds at most 264 at once (2 a multiprocessor, "
                               "bound by its threads, x 132 multiprocessors");
  /* in two dimensions, bound by shared memory: 1024 static + 40000 dynamic + 1024 reserved fit 5 times */
  assert_status(gcap_launch_cooperative_kernel(s, r.k, (gcap_dim3){6, 111, 1}, (gcap_dim3){32, 1, 1}, 40000, r.args),
                GCAP_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE);
  test_assert_message_contains("grid (6, 111, 1) has 666 blocks, but the simulated device holds at most 660 at once "
                               "(5 a multiprocessor, bound by its shared memory");
  assert_string_equal(gcap_status_string(GCAP_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE),
                      "the grid does not fit on the device at once");
  /* nothing ran: the results are untouched, no kernel counted, and the stream goes on */
  int got[ROUNDS];
  ptx_get(ctx, got, r.out, sizeof got);
  for (int i = 0; i < ROUNDS; i++) assert_int_equal(got[i], -1);
  gcap_sim_stats st;
  assert_ok(gcap_sim_get_stats(ctx, &st));
  assert_int_equal(st.kernels_executed, 0);
  /* the largest grid that fits runs, every thread of it resident at the barrier (bound by shared
   * memory, 5 blocks of 32 threads a multiprocessor, so that it stays quick under valgrind) */
  enum { FIT = 660, FIT_THREADS = 32 };
  gcap_kernel *count = test_kernel_of(r.m, "grid_count");
  unsigned *counter = ptx_dev(ctx, NULL, sizeof(unsigned)), *seen = ptx_dev(ctx, NULL, FIT * sizeof(unsigned));
  void *args[] = {&counter, &seen};
  assert_status(
      gcap_launch_cooperative_kernel(s, count, (gcap_dim3){FIT + 1, 1, 1}, (gcap_dim3){FIT_THREADS, 1, 1}, 40000, args),
      GCAP_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE);
  assert_ok(
      gcap_launch_cooperative_kernel(s, count, (gcap_dim3){FIT, 1, 1}, (gcap_dim3){FIT_THREADS, 1, 1}, 40000, args));
  assert_ok(gcap_stream_synchronize(s));
  unsigned got_seen[FIT];
  ptx_get(ctx, got_seen, seen, sizeof got_seen);
  for (int i = 0; i < FIT; i++) assert_int_equal(got_seen[i], FIT * FIT_THREADS);
  gcap_context_destroy(ctx);
}

static void bad_arguments(void **state) {
  (void)state;
  test_require_sim();
  gcap_context *ctx = sim_ctx(GCAP_SIM_EXEC_IMMEDIATE, 1, PTX_CHECKS_DEFAULT);
  struct sum_run r;
  sum_setup(&r, ctx);
  gcap_stream *s = test_stream_create(ctx);
  gcap_dim3 g = {BLOCKS, 1, 1}, b = {THREADS, 1, 1};
  assert_status(gcap_launch_cooperative_kernel(NULL, r.k, g, b, 0, r.args), GCAP_ERROR_INVALID_HANDLE);
  test_assert_message_contains("gcap_launch_cooperative_kernel: ");
  test_assert_message_contains("stream");
  assert_status(gcap_launch_cooperative_kernel(s, NULL, g, b, 0, r.args), GCAP_ERROR_INVALID_HANDLE);
  test_assert_message_contains("gcap_launch_cooperative_kernel: ");
  test_assert_message_contains("kernel");
  assert_status(gcap_launch_cooperative_kernel(s, r.k, g, b, 0, NULL), GCAP_ERROR_INVALID_VALUE);
  test_assert_message_contains("gcap_launch_cooperative_kernel: args is NULL but kernel \"grid_sum\" takes 5");
  assert_status(gcap_launch_cooperative_kernel(s, r.k, (gcap_dim3){0, 1, 1}, b, 0, r.args), GCAP_ERROR_INVALID_VALUE);
  test_assert_message_contains("gcap_launch_cooperative_kernel: grid (0, 1, 1) has a zero dimension");
  int got[ROUNDS];
  ptx_get(ctx, got, r.out, sizeof got);
  for (int i = 0; i < ROUNDS; i++) assert_int_equal(got[i], -1);
  gcap_context_destroy(ctx);
}

static gcap_node *only_node(gcap_graph *g) {
  gcap_node *n[2];
  size_t count = 2;
  assert_ok(gcap_graph_get_nodes(g, n, &count));
  assert_int_equal(count, 1);
  return n[0];
}

/* A capture records the attribute; instantiate, update and clone keep it; replays run cooperatively. */
static void capture_and_replay(gcap_sim_exec exec) {
  test_require_sim();
  gcap_context *ctx = sim_ctx(exec, 1, PTX_CHECKS_DEFAULT);
  struct sum_run r;
  sum_setup(&r, ctx);
  gcap_stream *s = test_stream_create(ctx);
  gcap_dim3 g = {BLOCKS, 1, 1}, b = {THREADS, 1, 1};
  assert_ok(gcap_stream_begin_capture(s, GCAP_CAPTURE_MODE_GLOBAL));
  assert_ok(gcap_launch_cooperative_kernel(s, r.k, g, b, 0, r.args));
  gcap_graph *graph = NULL;
  assert_ok(gcap_stream_end_capture(s, &graph));
  gcap_node *n = only_node(graph);
  gcap_kernel_node_attr_value v = {0};
  assert_ok(gcap_graph_kernel_node_get_attribute(n, GCAP_KERNEL_NODE_ATTR_COOPERATIVE, &v));
  assert_int_equal(v.cooperative, 1);
  /* new parameters keep it */
  gcap_kernel_node_params p = {r.k, g, b, 0, r.args};
  assert_ok(gcap_node_set_kernel_params(n, &p));
  assert_ok(gcap_graph_kernel_node_get_attribute(n, GCAP_KERNEL_NODE_ATTR_COOPERATIVE, &v));
  assert_int_equal(v.cooperative, 1);
  gcap_exec *x = NULL;
  assert_ok(gcap_graph_instantiate(graph, 0, &x));
  assert_ok(gcap_exec_launch(x, s));
  assert_ok(gcap_stream_synchronize(s));
  sum_expect(&r);
  /* the executable's new parameters keep it too */
  int minus[ROUNDS] = {-1, -1, -1};
  ptx_put(ctx, r.out, minus, sizeof minus);
  assert_ok(gcap_exec_kernel_node_set_params(x, n, &p));
  assert_ok(gcap_exec_launch(x, s));
  assert_ok(gcap_stream_synchronize(s));
  sum_expect(&r);
  /* a clone keeps it */
  gcap_graph *copy = NULL;
  assert_ok(gcap_graph_clone(graph, &copy));
  v.cooperative = 0;
  assert_ok(gcap_graph_kernel_node_get_attribute(only_node(copy), GCAP_KERNEL_NODE_ATTR_COOPERATIVE, &v));
  assert_int_equal(v.cooperative, 1);
  /* without it the replay traps, as an ordinary launch does */
  v.cooperative = 0;
  assert_ok(gcap_graph_kernel_node_set_attribute(only_node(copy), GCAP_KERNEL_NODE_ATTR_COOPERATIVE, &v));
  gcap_exec *plain = NULL;
  assert_ok(gcap_graph_instantiate(copy, 0, &plain));
  gcap_status st = gcap_exec_launch(plain, s);
  if (st == GCAP_SUCCESS) st = gcap_stream_synchronize(s);
  assert_int_equal(st, GCAP_ERROR_LAUNCH_FAILURE);
  test_assert_message_contains("trap executed");
  gcap_exec_destroy(plain);
  gcap_exec_destroy(x);
  gcap_graph_destroy(copy);
  gcap_graph_destroy(graph);
  gcap_context_destroy(ctx);
}

static void capture_records_immediate(void **state) {
  (void)state;
  capture_and_replay(GCAP_SIM_EXEC_IMMEDIATE);
}

static void capture_records_deferred(void **state) {
  (void)state;
  capture_and_replay(GCAP_SIM_EXEC_DEFERRED);
}

/* The attribute on a node made by hand: checked values, and a grid too large for it is refused now. */
static void node_attribute(void **state) {
  (void)state;
  test_require_sim();
  gcap_context *ctx = sim_ctx(GCAP_SIM_EXEC_IMMEDIATE, 1, PTX_CHECKS_DEFAULT);
  struct sum_run r;
  sum_setup(&r, ctx);
  gcap_stream *s = test_stream_create(ctx);
  gcap_graph *graph = test_graph_create(ctx);
  gcap_kernel_node_params p = {r.k, {BLOCKS, 1, 1}, {THREADS, 1, 1}, 0, r.args};
  gcap_node *n = NULL;
  assert_ok(gcap_graph_add_kernel_node(graph, NULL, 0, &p, &n));
  gcap_kernel_node_attr_value v = {.cooperative = 7};
  assert_ok(gcap_graph_kernel_node_get_attribute(n, GCAP_KERNEL_NODE_ATTR_COOPERATIVE, &v));
  assert_int_equal(v.cooperative, 0);
  v.cooperative = 2;
  assert_status(gcap_graph_kernel_node_set_attribute(n, GCAP_KERNEL_NODE_ATTR_COOPERATIVE, &v),
                GCAP_ERROR_INVALID_VALUE);
  test_assert_message_contains("gcap_graph_kernel_node_set_attribute: value->cooperative is 2 (0 or 1)");
  v.cooperative = 1;
  assert_ok(gcap_graph_kernel_node_set_attribute(n, GCAP_KERNEL_NODE_ATTR_COOPERATIVE, &v));
  /* the priority is its own */
  gcap_kernel_node_attr_value pr = {.priority = 5};
  assert_ok(gcap_graph_kernel_node_get_attribute(n, GCAP_KERNEL_NODE_ATTR_PRIORITY, &pr));
  assert_int_equal(pr.priority, 0);
  gcap_exec *x = NULL;
  assert_ok(gcap_graph_instantiate(graph, 0, &x));
  assert_ok(gcap_exec_launch(x, s));
  assert_ok(gcap_stream_synchronize(s));
  sum_expect(&r);
  /* a grid that cannot fit: the executable's parameters are refused, the node's instantiation too */
  gcap_kernel_node_params big = p;
  big.grid = (gcap_dim3){265, 1, 1};
  big.block = (gcap_dim3){1024, 1, 1};
  assert_status(gcap_exec_kernel_node_set_params(x, n, &big), GCAP_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE);
  test_assert_message_contains("gcap_exec_kernel_node_set_params: kernel \"grid_sum\": grid (265, 1, 1)");
  assert_ok(gcap_node_set_kernel_params(n, &big));
  gcap_exec *y = NULL;
  assert_status(gcap_graph_instantiate(graph, 0, &y), GCAP_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE);
  test_assert_message_contains("gcap_graph_instantiate: node 0 (kernel): kernel \"grid_sum\": grid (265, 1, 1)");
  assert_null(y);
  /* setting the attribute on a node whose grid cannot fit is refused, and the node stays as it was */
  v.cooperative = 0;
  assert_ok(gcap_graph_kernel_node_set_attribute(n, GCAP_KERNEL_NODE_ATTR_COOPERATIVE, &v));
  v.cooperative = 1;
  assert_status(gcap_graph_kernel_node_set_attribute(n, GCAP_KERNEL_NODE_ATTR_COOPERATIVE, &v),
                GCAP_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE);
  assert_ok(gcap_graph_kernel_node_get_attribute(n, GCAP_KERNEL_NODE_ATTR_COOPERATIVE, &v));
  assert_int_equal(v.cooperative, 0);
  gcap_exec_destroy(x);
  gcap_graph_destroy(graph);
  gcap_context_destroy(ctx);
}

/* A grid barrier some blocks never reach: the watchdog stops it (the block checks leave global spins alone). */
static void deadlock_hits_watchdog(void **state) {
  (void)state;
  test_require_sim();
  gcap_sim_options so;
  ptx_sim_options(&so, PTX_CHECKS_DEFAULT);
  so.kernel_timeout_ms = 200;
  gcap_context *ctx = test_sim_context_create(&so);
  gcap_module *m = ptx_load(ctx, "coop/grid_sync.ptx");
  gcap_kernel *k = test_kernel_of(m, "grid_deadlock");
  int *out = ptx_dev(ctx, NULL, 4 * sizeof(int));
  void *args[] = {&out};
  gcap_stream *s = test_stream_create(ctx);
  assert_status(gcap_launch_cooperative_kernel(s, k, (gcap_dim3){4, 1, 1}, (gcap_dim3){64, 1, 1}, 0, args),
                GCAP_ERROR_LAUNCH_TIMEOUT);
  test_assert_message_contains("kernel \"grid_deadlock\" block (");
  test_assert_message_contains("ran past the simulator's watchdog (200 ms");
  gcap_context_destroy(ctx);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(grid_sum_immediate),
      cmocka_unit_test(grid_sum_deferred),
      cmocka_unit_test(grid_sum_threads),
      cmocka_unit_test(repeated_launches),
      cmocka_unit_test(ordinary_launch_traps),
      cmocka_unit_test(envreg_values),
      cmocka_unit_test(too_large),
      cmocka_unit_test(bad_arguments),
      cmocka_unit_test(capture_records_immediate),
      cmocka_unit_test(capture_records_deferred),
      cmocka_unit_test(node_attribute),
      cmocka_unit_test(deadlock_hits_watchdog),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
