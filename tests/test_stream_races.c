/*
 * The simulator's stream race check (check_races on eager work): pairs of operations on two
 * streams that nothing orders, refused with both named; and the orderings that make them safe.
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

#define BYTES 4096u
#define HINT_FMT "record an event on stream %p after %s and make stream %p wait on it (or synchronize stream %p first)"

struct fx {
  gcap_context *ctx;
  gcap_stream *s1, *s2, *s3;
  gcap_event *e1, *e2;
  unsigned char *a, *b; /* device buffers of BYTES */
  gcap_kernel *rw;      /* rw(const void *src READ, void *dst WRITE, uint32_t n) */
};

static void copy_fn(const gcap_sim_thread *t, void *const *args) {
  const unsigned char *src;
  unsigned char *dst;
  uint32_t n;
  memcpy(&src, args[0], sizeof src);
  memcpy(&dst, args[1], sizeof dst);
  memcpy(&n, args[2], sizeof n);
  if (t->block_idx.x == 0 && t->thread_idx.x == 0) memcpy(dst, src, n);
}

static const size_t rw_sizes[] = {sizeof(void *), sizeof(void *), sizeof(uint32_t)};
static const gcap_param_access rw_access[] = {GCAP_ACCESS_READ, GCAP_ACCESS_WRITE, GCAP_ACCESS_NONE};

static gcap_context *context_with(bool check) {
  gcap_sim_options so;
  gcap_sim_options_init(&so);
  so.check_races = check; /* explicit options: GCAP_SIM_CHECK_RACES does not apply */
  return test_sim_context_create(&so);
}

static int setup_with(void **state, bool check) {
  if (!test_on_sim()) return 0; /* each test skips itself */
  struct fx *f = calloc(1, sizeof *f);
  if (!f) return -1;
  f->ctx = context_with(check);
  assert_ok(gcap_stream_create(f->ctx, &f->s1));
  assert_ok(gcap_stream_create(f->ctx, &f->s2));
  assert_ok(gcap_stream_create(f->ctx, &f->s3));
  assert_ok(gcap_event_create(f->ctx, &f->e1));
  assert_ok(gcap_event_create(f->ctx, &f->e2));
  f->a = test_dev_alloc(f->ctx, BYTES);
  f->b = test_dev_alloc(f->ctx, BYTES);
  static const gcap_kernel_def def = {
      .name = "rw", .sim_fn = copy_fn, .num_params = 3, .param_sizes = rw_sizes, .param_access = rw_access};
  gcap_module_desc d = {.kernels = &def, .num_kernels = 1};
  gcap_module *m = NULL;
  assert_ok(gcap_module_load(f->ctx, &d, &m));
  f->rw = test_kernel_of(m, "rw");
  *state = f;
  return 0;
}

static int setup(void **state) { return setup_with(state, true); }
static int setup_unchecked(void **state) { return setup_with(state, false); }

static int teardown(void **state) {
  struct fx *f = *state;
  if (!f) return 0;
  gcap_context_destroy(f->ctx);
  free(f);
  return 0;
}

static uint64_t refused(const struct fx *f) {
  gcap_sim_stats st;
  assert_ok(gcap_sim_get_stats(f->ctx, &st));
  return st.stream_races;
}

static void launch_rw(gcap_stream *s, gcap_kernel *k, const void *src, void *dst, gcap_status want) {
  uint32_t n = 16;
  void *args[] = {&src, &dst, &n};
  assert_status(gcap_launch_kernel(s, k, GCAP_DIM3(1, 1, 1), GCAP_DIM3(1, 1, 1), 0, args), want);
}

/* The whole message, exactly: "<call>: <new op> on stream S <verb> [lo, hi) while <old op> ... first". */
static void assert_message(const char *call, const char *mine, const gcap_stream *me, const char *verb, const void *lo,
                           size_t bytes, const char *theirs, const char *their_func, const gcap_stream *them,
                           const char *their_verb, const void *rlo, size_t rbytes) {
  char want[1024], hint[400];
  snprintf(hint, sizeof hint, HINT_FMT, (const void *)them, their_func, (const void *)me, (const void *)them);
  snprintf(want, sizeof want,
           "%s: %s on stream %p %s [%p, %p) while %s on stream %p %s [%p, %p) with nothing ordering them: %s", call,
           mine, (const void *)me, verb, lo, (const void *)((const char *)lo + bytes), theirs, (const void *)them,
           their_verb, rlo, (const void *)((const char *)rlo + rbytes), hint);
  assert_string_equal(gcap_last_error_message(), want);
}

/* The bytes of p, read back once nothing is outstanding. */
static void read_back(struct fx *f, const void *p, unsigned char *out, size_t n) {
  assert_ok(gcap_context_synchronize(f->ctx));
  assert_ok(gcap_memcpy(f->ctx, out, p, n, GCAP_MEMCPY_DEVICE_TO_HOST));
}

static void assert_bytes(const unsigned char *got, size_t n, unsigned char want) {
  for (size_t i = 0; i < n; i++)
    if (got[i] != want) fail_msg("byte %zu is 0x%02x, expected 0x%02x", i, got[i], want);
}

/* ------------------------------------------------------------ races */

static void test_fill_fill(void **state) {
  test_require_sim();
  struct fx *f = *state;
  assert_ok(gcap_memset_async(f->s1, f->a, 0x11, 256));
  assert_status(gcap_memset_async(f->s2, f->a + 128, 0x22, 64), GCAP_ERROR_INVALID_VALUE);
  assert_message("gcap_memset_async", "gcap_memset_async", f->s2, "writes", f->a + 128, 64, "gcap_memset_async",
                 "gcap_memset_async", f->s1, "wrote", f->a, 256);
  assert_int_equal(refused(f), 1);
  assert_status(gcap_memset_d32_async(f->s3, f->a + 252, 7u, 2), GCAP_ERROR_INVALID_VALUE);
  assert_message("gcap_memset_d32_async", "gcap_memset_d32_async", f->s3, "writes", f->a + 252, 8, "gcap_memset_async",
                 "gcap_memset_async", f->s1, "wrote", f->a, 256);
  assert_status(gcap_memset_d16_async(f->s2, f->a, 7u, 1), GCAP_ERROR_INVALID_VALUE);
  test_assert_message_contains("gcap_memset_d16_async on stream");
  assert_int_equal(refused(f), 3);
  unsigned char got[256];
  read_back(f, f->a, got, sizeof got); /* nothing of the refused fills ran */
  assert_bytes(got, sizeof got, 0x11);
}

static void test_copy_fill(void **state) {
  test_require_sim();
  struct fx *f = *state;
  assert_ok(gcap_memset_async(f->s2, f->b, 0x33, BYTES));
  assert_ok(gcap_stream_synchronize(f->s2));
  assert_ok(gcap_memset_async(f->s1, f->a, 0x44, 512));
  /* a copy reading what s1 writes */
  assert_status(gcap_memcpy_async(f->s2, f->b, f->a + 64, 64, GCAP_MEMCPY_DEVICE_TO_DEVICE), GCAP_ERROR_INVALID_VALUE);
  assert_message("gcap_memcpy_async", "gcap_memcpy_async", f->s2, "reads", f->a + 64, 64, "gcap_memset_async",
                 "gcap_memset_async", f->s1, "wrote", f->a, 512);
  /* a fill writing what a copy on s2 reads */
  assert_ok(gcap_memcpy_async(f->s2, f->a + 1024, f->b, 128, GCAP_MEMCPY_DEVICE_TO_DEVICE));
  assert_status(gcap_memset_async(f->s1, f->b + 100, 0, 1), GCAP_ERROR_INVALID_VALUE);
  assert_message("gcap_memset_async", "gcap_memset_async", f->s1, "writes", f->b + 100, 1, "gcap_memcpy_async",
                 "gcap_memcpy_async", f->s2, "read", f->b, 128);
  assert_int_equal(refused(f), 2);
  unsigned char got[BYTES];
  read_back(f, f->b, got, BYTES);
  assert_bytes(got, BYTES, 0x33);
}

/* A kernel reads and writes the whole allocations its READ and WRITE arguments point into. */
static void test_kernel_copy(void **state) {
  test_require_sim();
  struct fx *f = *state;
  unsigned char host[64];
  assert_ok(gcap_memset_async(f->s3, f->a, 0x5a, BYTES));
  assert_ok(gcap_memset_async(f->s3, f->b, 0x77, BYTES));
  assert_ok(gcap_stream_synchronize(f->s3));
  launch_rw(f->s1, f->rw, f->a, f->b, GCAP_SUCCESS);
  /* reading what the kernel reads: fine */
  assert_ok(gcap_memcpy_async(f->s2, host, f->a + 8, sizeof host, GCAP_MEMCPY_DEVICE_TO_HOST));
  /* reading what it writes, and writing what it reads: refused */
  assert_status(gcap_memcpy_async(f->s2, host, f->b + 8, sizeof host, GCAP_MEMCPY_DEVICE_TO_HOST),
                GCAP_ERROR_INVALID_VALUE);
  assert_message("gcap_memcpy_async", "gcap_memcpy_async", f->s2, "reads", f->b + 8, sizeof host,
                 "gcap_launch_kernel (kernel \"rw\")", "gcap_launch_kernel", f->s1, "wrote", f->b, BYTES);
  memset(host, 0xee, sizeof host);
  assert_status(gcap_memcpy_async(f->s2, f->a + 8, host, 8, GCAP_MEMCPY_HOST_TO_DEVICE), GCAP_ERROR_INVALID_VALUE);
  assert_message("gcap_memcpy_async", "gcap_memcpy_async", f->s2, "writes", f->a + 8, 8,
                 "gcap_launch_kernel (kernel \"rw\")", "gcap_launch_kernel", f->s1, "read", f->a, BYTES);
  /* the other way round: the kernel is the second operation */
  launch_rw(f->s2, f->rw, f->b, f->a + 512, GCAP_ERROR_INVALID_VALUE);
  assert_message("gcap_launch_kernel", "gcap_launch_kernel (kernel \"rw\")", f->s2, "reads", f->b, BYTES,
                 "gcap_launch_kernel (kernel \"rw\")", "gcap_launch_kernel", f->s1, "wrote", f->b, BYTES);
  assert_ok(gcap_context_synchronize(f->ctx));
  assert_ok(gcap_memset_async(f->s3, f->a + BYTES - 1, 0, 1));
  launch_rw(f->s2, f->rw, f->b, f->a + 512, GCAP_ERROR_INVALID_VALUE);
  assert_message("gcap_launch_kernel", "gcap_launch_kernel (kernel \"rw\")", f->s2, "writes", f->a, BYTES,
                 "gcap_memset_async", "gcap_memset_async", f->s3, "wrote", f->a + BYTES - 1, 1);
  assert_int_equal(refused(f), 4);
  unsigned char got[BYTES];
  read_back(f, f->a, got, BYTES - 1); /* neither the refused copy nor the refused kernels wrote a */
  assert_bytes(got, BYTES - 1, 0x5a);
}

static gcap_exec *fill_graph(struct fx *f, void *dst, size_t bytes) {
  gcap_graph *g = NULL;
  gcap_node *n = NULL;
  gcap_exec *x = NULL;
  assert_ok(gcap_graph_create(f->ctx, &g));
  gcap_memset_node_params p = {dst, 0x55, 1, bytes, 1, bytes};
  assert_ok(gcap_graph_add_memset_node(g, NULL, 0, &p, &n));
  assert_ok(gcap_graph_instantiate(g, 0, &x));
  gcap_graph_destroy(g);
  return x;
}

static void test_graph_launch_fill(void **state) {
  test_require_sim();
  struct fx *f = *state;
  gcap_exec *x = fill_graph(f, f->a, 256);
  char mine[64];
  snprintf(mine, sizeof mine, "gcap_exec_launch (executable %p)", (void *)x);
  assert_ok(gcap_exec_launch(x, f->s1));
  assert_status(gcap_memset_async(f->s2, f->a + 255, 0x66, 2), GCAP_ERROR_INVALID_VALUE);
  assert_message("gcap_memset_async", "gcap_memset_async", f->s2, "writes", f->a + 255, 2, mine, "gcap_exec_launch",
                 f->s1, "wrote", f->a, 256);
  assert_ok(gcap_stream_synchronize(f->s1));
  assert_ok(gcap_memset_async(f->s2, f->a + 100, 0x66, 8));
  gcap_sim_stats before, after;
  assert_ok(gcap_sim_get_stats(f->ctx, &before));
  assert_status(gcap_exec_launch(x, f->s3), GCAP_ERROR_INVALID_VALUE);
  assert_message("gcap_exec_launch", mine, f->s3, "writes", f->a, 256, "gcap_memset_async", "gcap_memset_async", f->s2,
                 "wrote", f->a + 100, 8);
  assert_ok(gcap_sim_get_stats(f->ctx, &after));
  assert_int_equal(after.graph_launches, before.graph_launches); /* nothing launched */
  assert_int_equal(after.stream_races, before.stream_races + 1);
  unsigned char got[256];
  read_back(f, f->a, got, sizeof got);
  assert_bytes(got + 100, 8, 0x66);
  gcap_exec_destroy(x);
}

/*
 * A graph's event nodes order as eager records and waits do: a launch whose record node follows
 * its fill orders the fill before a stream that waits on the event, and a launch whose wait node
 * waits on an event recorded after another stream's fill is ordered after that fill.
 */
static void test_graph_event_nodes_order(void **state) {
  test_require_sim();
  struct fx *f = *state;
  gcap_graph *g = NULL;
  gcap_node *fill = NULL, *rec = NULL;
  gcap_exec *x = NULL;
  assert_ok(gcap_graph_create(f->ctx, &g));
  gcap_memset_node_params p = {f->a, 0x55, 1, 256, 1, 256};
  assert_ok(gcap_graph_add_memset_node(g, NULL, 0, &p, &fill));
  assert_ok(gcap_graph_add_event_record_node(g, &fill, 1, f->e1, &rec));
  assert_ok(gcap_graph_instantiate(g, 0, &x));
  gcap_graph_destroy(g);
  assert_ok(gcap_exec_launch(x, f->s1));
  assert_ok(gcap_stream_wait_event(f->s2, f->e1));
  assert_ok(gcap_memset_async(f->s2, f->a, 0x66, 256)); /* ordered by the record node */
  gcap_exec_destroy(x);

  gcap_node *wait = NULL, *fill2 = NULL;
  assert_ok(gcap_graph_create(f->ctx, &g));
  assert_ok(gcap_graph_add_event_wait_node(g, NULL, 0, f->e2, &wait));
  gcap_memset_node_params q = {f->b, 0x77, 1, 256, 1, 256};
  assert_ok(gcap_graph_add_memset_node(g, &wait, 1, &q, &fill2));
  assert_ok(gcap_graph_instantiate(g, 0, &x));
  gcap_graph_destroy(g);
  assert_ok(gcap_memset_async(f->s3, f->b, 0x11, 256));
  assert_ok(gcap_event_record(f->e2, f->s3));
  assert_ok(gcap_exec_launch(x, f->s1)); /* ordered by the wait node */
  assert_int_equal(refused(f), 0);
  /* A fill of s3 after the event's record is not ordered before the next launch: a race. */
  assert_ok(gcap_stream_synchronize(f->s1));
  assert_ok(gcap_memset_async(f->s3, f->b, 0x22, 256));
  assert_status(gcap_exec_launch(x, f->s1), GCAP_ERROR_INVALID_VALUE);
  assert_int_equal(refused(f), 1);
  unsigned char got[256];
  read_back(f, f->b, got, sizeof got);
  assert_bytes(got, sizeof got, 0x22);
  gcap_exec_destroy(x);
}

/* gcap_memcpy is the host's: ordered after what the host waited for, and nothing else. */
static void test_host_copy(void **state) {
  test_require_sim();
  struct fx *f = *state;
  unsigned char host[32];
  memset(host, 0xcc, sizeof host);
  assert_ok(gcap_memset_async(f->s1, f->a, 0x77, 64));
  assert_status(gcap_memcpy(f->ctx, host, f->a + 32, sizeof host, GCAP_MEMCPY_DEVICE_TO_HOST),
                GCAP_ERROR_INVALID_VALUE);
  assert_bytes(host, sizeof host, 0xcc); /* not copied */
  char want[600];
  snprintf(want, sizeof want,
           "gcap_memcpy: gcap_memcpy reads [%p, %p) while gcap_memset_async on stream %p wrote [%p, %p) with nothing "
           "ordering them: synchronize stream %p (or an event recorded on it after gcap_memset_async) first",
           (void *)(f->a + 32), (void *)(f->a + 64), (void *)f->s1, (void *)f->a, (void *)(f->a + 64), (void *)f->s1);
  assert_string_equal(gcap_last_error_message(), want);
  assert_int_equal(refused(f), 1);
  assert_ok(gcap_memcpy(f->ctx, host, f->a + 64, sizeof host, GCAP_MEMCPY_DEVICE_TO_HOST)); /* other bytes */
  assert_ok(gcap_event_record(f->e1, f->s1));
  assert_ok(gcap_event_synchronize(f->e1));
  assert_ok(gcap_memcpy(f->ctx, host, f->a + 32, sizeof host, GCAP_MEMCPY_DEVICE_TO_HOST));
  assert_bytes(host, sizeof host, 0x77);
}

/* An eager free writes the whole allocation. */
static void test_free_after_unordered_use(void **state) {
  test_require_sim();
  struct fx *f = *state;
  assert_ok(gcap_memset_async(f->s1, f->b + 16, 0, 16));
  assert_status(gcap_mem_free_async(f->s2, f->b), GCAP_ERROR_INVALID_VALUE);
  assert_message("gcap_mem_free_async", "gcap_mem_free_async", f->s2, "writes", f->b, BYTES, "gcap_memset_async",
                 "gcap_memset_async", f->s1, "wrote", f->b + 16, 16);
  assert_ok(gcap_memset_async(f->s1, f->b, 1, BYTES)); /* still allocated */
  assert_ok(gcap_event_record(f->e1, f->s1));
  assert_ok(gcap_stream_wait_event(f->s2, f->e1));
  assert_ok(gcap_mem_free_async(f->s2, f->b));
  /* its records went with it: new memory at any address starts clean */
  void *p = test_dev_alloc(f->ctx, BYTES);
  assert_ok(gcap_memset_async(f->s3, p, 0, BYTES));
}

/* ------------------------------------------------------------ what orders work */

static void test_same_stream(void **state) {
  test_require_sim();
  struct fx *f = *state;
  assert_ok(gcap_memset_async(f->s1, f->a, 1, BYTES));
  assert_ok(gcap_memcpy_async(f->s1, f->b, f->a, BYTES, GCAP_MEMCPY_DEVICE_TO_DEVICE));
  launch_rw(f->s1, f->rw, f->b, f->a, GCAP_SUCCESS);
  assert_ok(gcap_memset_async(f->s1, f->b, 2, BYTES));
  assert_int_equal(refused(f), 0);
}

static void test_reads_share(void **state) {
  test_require_sim();
  struct fx *f = *state;
  unsigned char h1[64], h2[64];
  assert_ok(gcap_memcpy_async(f->s1, h1, f->a, 64, GCAP_MEMCPY_DEVICE_TO_HOST));
  assert_ok(gcap_memcpy_async(f->s2, h2, f->a, 64, GCAP_MEMCPY_DEVICE_TO_HOST));
  launch_rw(f->s3, f->rw, f->a, f->b, GCAP_SUCCESS);
  assert_int_equal(refused(f), 0);
}

static void test_disjoint_ranges(void **state) {
  test_require_sim();
  struct fx *f = *state;
  assert_ok(gcap_memset_async(f->s1, f->a, 1, 128));
  assert_ok(gcap_memset_async(f->s2, f->a + 128, 2, 128)); /* adjacent, not overlapping */
  assert_ok(gcap_memcpy_async(f->s3, f->b, f->a + 256, 64, GCAP_MEMCPY_DEVICE_TO_DEVICE));
  assert_int_equal(refused(f), 0);
}

static void test_event_orders(void **state) {
  test_require_sim();
  struct fx *f = *state;
  assert_ok(gcap_memset_async(f->s1, f->a, 1, BYTES));
  assert_ok(gcap_event_record(f->e1, f->s1));
  assert_ok(gcap_stream_wait_event(f->s2, f->e1));
  assert_ok(gcap_memset_async(f->s2, f->a, 2, BYTES));
  /* and it orders only what was recorded: s1's later work is unordered again */
  assert_ok(gcap_memset_async(f->s1, f->b, 3, BYTES));
  assert_status(gcap_memcpy_async(f->s2, f->a, f->b, 8, GCAP_MEMCPY_DEVICE_TO_DEVICE), GCAP_ERROR_INVALID_VALUE);
  assert_int_equal(refused(f), 1);
}

static void test_event_recorded_before_does_not_order(void **state) {
  test_require_sim();
  struct fx *f = *state;
  assert_ok(gcap_event_record(f->e1, f->s1));
  assert_ok(gcap_memset_async(f->s1, f->a, 1, 64));
  assert_ok(gcap_stream_wait_event(f->s2, f->e1));
  assert_status(gcap_memset_async(f->s2, f->a, 2, 64), GCAP_ERROR_INVALID_VALUE);
  /* an event never recorded orders nothing either */
  assert_ok(gcap_stream_wait_event(f->s3, f->e2));
  assert_status(gcap_memset_async(f->s3, f->a, 2, 64), GCAP_ERROR_INVALID_VALUE);
  assert_int_equal(refused(f), 2);
}

static void test_transitive_order(void **state) {
  test_require_sim();
  struct fx *f = *state;
  assert_ok(gcap_memset_async(f->s1, f->a, 1, BYTES));
  assert_ok(gcap_event_record(f->e1, f->s1));
  assert_ok(gcap_stream_wait_event(f->s2, f->e1));
  assert_ok(gcap_event_record(f->e2, f->s2)); /* s2 issued nothing itself */
  assert_ok(gcap_stream_wait_event(f->s3, f->e2));
  assert_ok(gcap_memcpy_async(f->s3, f->b, f->a, BYTES, GCAP_MEMCPY_DEVICE_TO_DEVICE));
  assert_int_equal(refused(f), 0);
}

static void test_stream_synchronize_orders(void **state) {
  test_require_sim();
  struct fx *f = *state;
  assert_ok(gcap_memset_async(f->s1, f->a, 1, BYTES));
  assert_ok(gcap_memset_async(f->s2, f->b, 1, BYTES));
  assert_ok(gcap_stream_synchronize(f->s1));
  assert_ok(gcap_memset_async(f->s3, f->a, 2, BYTES));
  assert_status(gcap_memset_async(f->s3, f->b, 2, BYTES), GCAP_ERROR_INVALID_VALUE); /* s2 was not waited for */
  assert_ok(gcap_stream_query(f->s2)); /* a query that says done orders too */
  assert_ok(gcap_memset_async(f->s3, f->b, 2, BYTES));
  assert_int_equal(refused(f), 1);
}

static void test_event_synchronize_orders(void **state) {
  test_require_sim();
  struct fx *f = *state;
  assert_ok(gcap_memset_async(f->s1, f->a, 1, BYTES));
  assert_ok(gcap_event_record(f->e1, f->s1));
  assert_ok(gcap_memset_async(f->s1, f->b, 1, BYTES));
  assert_ok(gcap_event_synchronize(f->e1));
  assert_ok(gcap_memset_async(f->s2, f->a, 2, BYTES));
  assert_status(gcap_memset_async(f->s2, f->b, 2, BYTES), GCAP_ERROR_INVALID_VALUE); /* after the record */
  assert_ok(gcap_event_record(f->e2, f->s1));
  assert_ok(gcap_event_query(f->e2));
  assert_ok(gcap_memset_async(f->s2, f->b, 2, BYTES));
  assert_int_equal(refused(f), 1);
}

static void test_context_synchronize_orders(void **state) {
  test_require_sim();
  struct fx *f = *state;
  assert_ok(gcap_memset_async(f->s1, f->a, 1, BYTES));
  assert_ok(gcap_memset_async(f->s2, f->b, 1, BYTES));
  assert_ok(gcap_context_synchronize(f->ctx));
  assert_ok(gcap_memcpy_async(f->s3, f->a, f->b, BYTES, GCAP_MEMCPY_DEVICE_TO_DEVICE));
  unsigned char host[16];
  assert_ok(gcap_stream_synchronize(f->s3));
  assert_ok(gcap_memcpy(f->ctx, host, f->a, sizeof host, GCAP_MEMCPY_DEVICE_TO_HOST));
  assert_int_equal(refused(f), 0);
}

/* gcap_mem_free waits for the device (as cuMemFree does), and a destroyed stream's work was waited for. */
static void test_blocking_free_and_stream_destroy_order(void **state) {
  test_require_sim();
  struct fx *f = *state;
  void *p = test_dev_alloc(f->ctx, 64);
  assert_ok(gcap_memset_async(f->s1, f->a, 1, BYTES));
  assert_ok(gcap_mem_free(f->ctx, p));
  assert_ok(gcap_memset_async(f->s2, f->a, 2, BYTES));
  assert_ok(gcap_memset_async(f->s3, f->b, 3, BYTES));
  assert_ok(gcap_stream_destroy(f->s3));
  f->s3 = NULL;
  gcap_stream *fresh = NULL;
  assert_ok(gcap_stream_create(f->ctx, &fresh)); /* may take the destroyed stream's place */
  assert_ok(gcap_memset_async(fresh, f->b, 4, BYTES));
  assert_status(gcap_memset_async(f->s1, f->b, 5, 1), GCAP_ERROR_INVALID_VALUE); /* fresh's own work is unordered */
  assert_int_equal(refused(f), 1);
}

/* CUDA orders every launch of an executable after the previous one, whatever the streams. */
static void test_launches_of_one_executable(void **state) {
  test_require_sim();
  struct fx *f = *state;
  gcap_exec *x = fill_graph(f, f->a, BYTES);
  assert_ok(gcap_exec_launch(x, f->s1));
  assert_ok(gcap_exec_launch(x, f->s2));
  assert_ok(gcap_exec_launch(x, f->s3));
  gcap_exec *y = fill_graph(f, f->a, 8);
  assert_status(gcap_exec_launch(y, f->s1), GCAP_ERROR_INVALID_VALUE); /* another executable is not ordered */
  assert_ok(gcap_event_record(f->e1, f->s3));
  assert_ok(gcap_stream_wait_event(f->s1, f->e1));
  assert_ok(gcap_exec_launch(y, f->s1));
  gcap_exec_destroy(x);
  gcap_exec_destroy(y);
}

/* Captured work is not eager: graph race analysis sees it at instantiation. */
static void test_capture_is_not_checked(void **state) {
  test_require_sim();
  struct fx *f = *state;
  gcap_graph *g = NULL;
  assert_ok(gcap_memset_async(f->s1, f->a, 1, BYTES));
  assert_ok(gcap_stream_begin_capture(f->s2, GCAP_CAPTURE_MODE_RELAXED));
  assert_ok(gcap_memset_async(f->s2, f->a, 2, BYTES));
  assert_ok(gcap_stream_end_capture(f->s2, &g));
  assert_int_equal(refused(f), 0);
  gcap_graph_destroy(g);
}

static void test_without_check_nothing_is_refused(void **state) {
  test_require_sim();
  struct fx *f = *state;
  unsigned char host[8];
  assert_ok(gcap_memset_async(f->s1, f->a, 1, BYTES));
  assert_ok(gcap_memset_async(f->s2, f->a, 2, BYTES));
  launch_rw(f->s3, f->rw, f->a, f->b, GCAP_SUCCESS);
  assert_ok(gcap_memcpy(f->ctx, host, f->b, sizeof host, GCAP_MEMCPY_DEVICE_TO_HOST));
  assert_int_equal(refused(f), 0);
}

/* ------------------------------------------------------------ scale */

/* Many operations on one stream that never synchronizes, over a few buffers: each check stays cheap. */
static void test_long_unsynchronized_stream(void **state) {
  test_require_sim();
  struct fx *f = *state;
  for (unsigned i = 0; i < 100000; i++) assert_ok(gcap_memset_async(f->s1, f->a + (i % 64) * 64, (int)i, 64));
  assert_ok(gcap_memset_async(f->s2, f->b, 0, BYTES)); /* one look at s1's records, which are few */
  assert_status(gcap_memset_async(f->s2, f->a + 63 * 64, 0, 1), GCAP_ERROR_INVALID_VALUE);
  assert_int_equal(refused(f), 1);
}

/* Two streams taking turns, ordered by events only: each sees only what is new since its last wait. */
static void test_many_ordered_cross_stream_operations(void **state) {
  test_require_sim();
  struct fx *f = *state;
  gcap_stream *s[2] = {f->s1, f->s2};
  gcap_event *e[2] = {f->e1, f->e2};
  for (unsigned i = 0; i < 1000; i++) {
    gcap_stream *me = s[i % 2];
    assert_ok(gcap_stream_wait_event(me, e[(i + 1) % 2]));
    assert_ok(gcap_memset_async(me, f->a, (int)i, BYTES));
    launch_rw(me, f->rw, f->a, f->b, GCAP_SUCCESS);
    assert_ok(gcap_event_record(e[i % 2], me));
  }
  assert_int_equal(refused(f), 0);
}

int main(void) {
  test_require_backend();
#define CHECKED(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
  const struct CMUnitTest tests[] = {
      CHECKED(test_fill_fill),
      CHECKED(test_copy_fill),
      CHECKED(test_kernel_copy),
      CHECKED(test_graph_launch_fill),
      CHECKED(test_graph_event_nodes_order),
      CHECKED(test_host_copy),
      CHECKED(test_free_after_unordered_use),
      CHECKED(test_same_stream),
      CHECKED(test_reads_share),
      CHECKED(test_disjoint_ranges),
      CHECKED(test_event_orders),
      CHECKED(test_event_recorded_before_does_not_order),
      CHECKED(test_transitive_order),
      CHECKED(test_stream_synchronize_orders),
      CHECKED(test_event_synchronize_orders),
      CHECKED(test_context_synchronize_orders),
      CHECKED(test_blocking_free_and_stream_destroy_order),
      CHECKED(test_launches_of_one_executable),
      CHECKED(test_capture_is_not_checked),
      cmocka_unit_test_setup_teardown(test_without_check_nothing_is_refused, setup_unchecked, teardown),
      CHECKED(test_long_unsynchronized_stream),
      CHECKED(test_many_ordered_cross_stream_operations),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
