/*
 * Graph-owned memory (rules.md#record-mem-alloc, rules.md#exec-one-at-a-time,
 * rules.md#exec-launch-errors, rules.md#mem-alloc-node through rules.md#mem-accounting; pools and
 * their figures as memory.md#pools describes them):
 * MEM_ALLOC/MEM_FREE nodes from capture, fixed addresses, lifetimes across launches, frees
 * inside and outside graphs, the restrictions on graphs holding such nodes, stream-ordered
 * allocation outside capture, and pools with their exact figures.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The out-of-memory test asks for 2^62 bytes: under ASan that must fail, not abort. */
#if defined(__SANITIZE_ADDRESS__)
#define TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TEST_ASAN 1
#endif
#endif
#ifdef TEST_ASAN
const char *__asan_default_options(void);
const char *__asan_default_options(void) { return "allocator_may_return_null=1"; }
#endif

#define HUGE_BYTES ((size_t)1 << 62)

/* ------------------------------------------------------------------ helpers */

static void assert_message_nonempty(void) { assert_true(gcap_last_error_message()[0] != '\0'); }

static void assert_bytes(const uint8_t *p, uint8_t v, size_t n) {
  for (size_t i = 0; i < n; i++) {
    if (p[i] != v) {
      print_error("byte %zu is 0x%02x, expected 0x%02x\n", i, p[i], v);
      fail();
    }
  }
}

/* Reads device memory with a synchronous D2H copy and checks every byte is v. */
static void assert_device_bytes(gcap_context *ctx, const void *d, uint8_t v, size_t n) {
  uint8_t *h = malloc(n);
  assert_non_null(h);
  memset(h, (uint8_t)~v, n);
  assert_ok(gcap_memcpy(ctx, h, d, n, GCAP_MEMCPY_DEVICE_TO_HOST));
  assert_bytes(h, v, n);
  free(h);
}

static gcap_sim_stats sim_stats(gcap_context *ctx) {
  gcap_sim_stats st;
  memset(&st, 0, sizeof st);
  if (test_on_sim()) assert_ok(gcap_sim_get_stats(ctx, &st));
  return st;
}

static void assert_same_sim_stats(const gcap_sim_stats *a, const gcap_sim_stats *b) {
  assert_int_equal(a->graph_launches, b->graph_launches);
  assert_int_equal(a->nodes_executed, b->nodes_executed);
  assert_int_equal(a->bytes_copied, b->bytes_copied);
  assert_int_equal(a->bytes_set, b->bytes_set);
  assert_int_equal(a->kernels_executed, b->kernels_executed);
}

static gcap_pool_stats pool_stats(const gcap_pool *p) {
  gcap_pool_stats st;
  memset(&st, 0xff, sizeof st);
  assert_ok(gcap_pool_get_stats(p, &st));
  return st;
}

#define assert_pool(p, reserved, used, peak, attached)                                                                 \
  do {                                                                                                                 \
    gcap_pool_stats ps_ = pool_stats(p);                                                                               \
    assert_int_equal(ps_.reserved_bytes, (reserved));                                                                  \
    assert_int_equal(ps_.used_bytes, (used));                                                                          \
    assert_int_equal(ps_.peak_bytes, (peak));                                                                          \
    assert_int_equal(ps_.attached_execs, (attached));                                                                  \
  } while (0)

static void begin(gcap_stream *s) { assert_ok(gcap_stream_begin_capture(s, GCAP_CAPTURE_MODE_GLOBAL)); }

static gcap_graph *end(gcap_stream *s) {
  gcap_graph *g = NULL;
  assert_ok(gcap_stream_end_capture(s, &g));
  assert_non_null(g);
  return g;
}

static gcap_capture *begin_pool(gcap_stream *s, gcap_pool *pool) {
  gcap_capture_options o;
  gcap_capture_options_init(&o);
  o.pool = pool;
  gcap_capture *c = NULL;
  assert_ok(gcap_capture_begin(s, &o, &c));
  assert_non_null(c);
  return c;
}

static gcap_graph *end_pool(gcap_capture *c) {
  gcap_graph *g = NULL;
  assert_ok(gcap_capture_end(c, &g));
  assert_non_null(g);
  gcap_capture_destroy(c);
  return g;
}

static gcap_exec *instantiate(gcap_graph *g, unsigned flags) {
  gcap_exec *x = NULL;
  assert_ok(gcap_graph_instantiate(g, flags, &x));
  assert_non_null(x);
  return x;
}

static void launch(gcap_exec *x, gcap_stream *s) {
  assert_ok(gcap_exec_launch(x, s));
  test_assert_message_empty();
  assert_ok(gcap_stream_synchronize(s));
}

static gcap_capture_status capture_status(gcap_stream *s) {
  gcap_capture_status st = (gcap_capture_status)-1;
  assert_ok(gcap_stream_is_capturing(s, &st));
  return st;
}

/* The capture was invalidated: ending it reports so and hands out no graph. */
static void assert_capture_invalidated(gcap_stream *s) {
  assert_int_equal(capture_status(s), GCAP_CAPTURE_STATUS_INVALIDATED);
  gcap_graph *g = (gcap_graph *)&g;
  assert_status(gcap_stream_end_capture(s, &g), GCAP_ERROR_STREAM_CAPTURE_INVALIDATED);
  assert_null(g);
  assert_int_equal(capture_status(s), GCAP_CAPTURE_STATUS_NONE);
}

/*
 * Records on s (capturing): p = alloc(bytes); memset(p, v); D2H p -> host; free(p) when free_it.
 */
static void *record_fill_read(gcap_stream *s, size_t bytes, uint8_t v, uint8_t *host, bool free_it) {
  void *p = NULL;
  assert_ok(gcap_mem_alloc_async(s, bytes, &p));
  assert_non_null(p);
  test_assert_message_empty();
  assert_ok(gcap_memset_async(s, p, v, bytes));
  assert_ok(gcap_memcpy_async(s, host, p, bytes, GCAP_MEMCPY_DEVICE_TO_HOST));
  if (free_it) assert_ok(gcap_mem_free_async(s, p));
  return p;
}

/* A captured graph (no pool) of record_fill_read. */
static gcap_graph *capture_fill_read(gcap_stream *s, size_t bytes, uint8_t v, uint8_t *host, bool free_it,
                                     void **p_out) {
  begin(s);
  void *p = record_fill_read(s, bytes, v, host, free_it);
  if (p_out) *p_out = p;
  return end(s);
}

static void node_types(gcap_graph *g, const gcap_node_type *want, size_t n) {
  gcap_node *nodes[16] = {NULL};
  size_t count = 16;
  assert_true(n <= 16);
  assert_ok(gcap_graph_get_nodes(g, nodes, &count));
  assert_int_equal(count, n);
  for (size_t i = 0; i < n; i++) assert_int_equal(gcap_node_get_type(nodes[i]), want[i]);
}

/* ------------------------------------------------------------------ rules.md#record-mem-alloc */

static void test_record_mem_alloc_free_in_capture(void **state) {
  struct test_fixture *f = *state;
  uint8_t host[256];
  memset(host, 0, sizeof host);
  begin(f->s);
  void *p = record_fill_read(f->s, sizeof host, 0x5a, host, true);
  test_assert_message_empty();
  assert_bytes(host, 0, sizeof host); /* capture runs nothing */
  gcap_graph *g = end(f->s);

  const gcap_node_type want[] = {GCAP_NODE_MEM_ALLOC, GCAP_NODE_MEMSET, GCAP_NODE_MEMCPY, GCAP_NODE_MEM_FREE};
  node_types(g, want, 4);
  assert_int_equal(gcap_graph_edge_count(g), 3);
  gcap_node *nodes[4], *from[3], *to[3];
  size_t count = 4;
  assert_ok(gcap_graph_get_nodes(g, nodes, &count));
  count = 3;
  assert_ok(gcap_graph_get_edges(g, from, to, &count));
  assert_int_equal(count, 3);
  for (size_t i = 0; i < 3; i++) {
    assert_ptr_equal(from[i], nodes[i]);
    assert_ptr_equal(to[i], nodes[i + 1]);
  }
  /* The memset node writes to the address the capture returned. */
  gcap_memset_node_params mp;
  assert_ok(gcap_node_get_memset_params(nodes[1], &mp));
  assert_ptr_equal(mp.dst, p);
  assert_int_equal(mp.width, sizeof host);

  gcap_exec *x = instantiate(g, 0);
  assert_int_equal(gcap_exec_node_count(x), 4);
  gcap_sim_stats before = sim_stats(f->ctx);
  launch(x, f->s);
  assert_bytes(host, 0x5a, sizeof host);
  if (test_on_sim()) {
    gcap_sim_stats after = sim_stats(f->ctx);
    assert_int_equal(after.graph_launches, before.graph_launches + 1);
    assert_int_equal(after.nodes_executed, before.nodes_executed + 4);
    assert_int_equal(after.bytes_set, before.bytes_set + sizeof host);
    assert_int_equal(after.bytes_copied, before.bytes_copied + sizeof host);
  }
  gcap_exec_destroy(x);
  gcap_graph_destroy(g);
}

static void test_record_mem_alloc_bad_alloc_invalidates_capture(void **state) {
  struct test_fixture *f = *state;
  void *p = (void *)&p;
  begin(f->s);
  assert_status(gcap_mem_alloc_async(f->s, 0, &p), GCAP_ERROR_INVALID_VALUE);
  assert_null(p);
  assert_message_nonempty();
  test_assert_message_contains("gcap_mem_alloc_async");
  assert_capture_invalidated(f->s);

  begin(f->s);
  assert_status(gcap_mem_alloc_async(f->s, 64, NULL), GCAP_ERROR_INVALID_VALUE);
  assert_message_nonempty();
  assert_capture_invalidated(f->s);

  assert_status(gcap_mem_alloc_async(NULL, 64, &p), GCAP_ERROR_INVALID_HANDLE);
  assert_null(p);
  assert_message_nonempty();
}

static void test_record_mem_alloc_sim_stats_mem_nodes_move_nothing(void **state) {
  struct test_fixture *f = *state;
  test_require_sim(); /* gcap_sim_get_stats counters */
  begin(f->s);
  void *p = NULL;
  assert_ok(gcap_mem_alloc_async(f->s, 4096, &p));
  assert_ok(gcap_mem_free_async(f->s, p));
  gcap_graph *g = end(f->s);
  const gcap_node_type want[] = {GCAP_NODE_MEM_ALLOC, GCAP_NODE_MEM_FREE};
  node_types(g, want, 2);
  gcap_exec *x = instantiate(g, 0);
  gcap_sim_stats before = sim_stats(f->ctx);
  launch(x, f->s);
  launch(x, f->s);
  gcap_sim_stats after = sim_stats(f->ctx);
  assert_int_equal(after.graph_launches, before.graph_launches + 2);
  assert_int_equal(after.nodes_executed, before.nodes_executed + 4);
  assert_int_equal(after.bytes_copied, before.bytes_copied);
  assert_int_equal(after.bytes_set, before.bytes_set);
  assert_int_equal(after.kernels_executed, before.kernels_executed);
  gcap_exec_destroy(x);
  gcap_graph_destroy(g);
}

/* x[i] += 1 for i < n. Params: uint32_t *x, uint32_t n. */
static void inc_sim(const gcap_sim_thread *t, void *const *args) {
  uint32_t *x;
  uint32_t n;
  memcpy(&x, args[0], sizeof x);
  memcpy(&n, args[1], sizeof n);
  uint32_t i = t->block_idx.x * t->block_dim.x + t->thread_idx.x;
  if (i < n) x[i] += 1;
}

static void test_record_mem_alloc_kernel_uses_graph_allocation(void **state) {
  struct test_fixture *f = *state;
  test_require_sim(); /* checks what inc_sim computed, and the counters */
  static const size_t sizes[] = {sizeof(uint32_t *), sizeof(uint32_t)};
  const gcap_kernel_def def = {.name = "inc", .sim_fn = inc_sim, .num_params = 2, .param_sizes = sizes};
  gcap_module_desc d = {.image = NULL, .image_size = 0, .kernels = &def, .num_kernels = 1};
  gcap_module *m = NULL;
  assert_ok(test_module_load(f->ctx, &d, &m));
  gcap_kernel *k = NULL;
  assert_ok(gcap_module_get_kernel(m, "inc", &k));

  uint32_t host[64];
  uint32_t n = 64;
  begin(f->s);
  uint32_t *p = NULL;
  assert_ok(gcap_mem_alloc_async(f->s, sizeof host, (void **)&p));
  assert_ok(gcap_memset_d32_async(f->s, p, 41, n));
  void *args[] = {&p, &n};
  assert_ok(gcap_launch_kernel(f->s, k, GCAP_DIM3(2, 1, 1), GCAP_DIM3(32, 1, 1), 0, args));
  assert_ok(gcap_memcpy_async(f->s, host, p, sizeof host, GCAP_MEMCPY_DEVICE_TO_HOST));
  assert_ok(gcap_mem_free_async(f->s, p));
  gcap_graph *g = end(f->s);
  gcap_exec *x = instantiate(g, 0);
  for (int round = 0; round < 2; round++) {
    memset(host, 0, sizeof host);
    gcap_sim_stats before = sim_stats(f->ctx);
    launch(x, f->s);
    for (uint32_t i = 0; i < n; i++) assert_int_equal(host[i], 42);
    gcap_sim_stats after = sim_stats(f->ctx);
    assert_int_equal(after.kernels_executed, before.kernels_executed + 1);
    assert_int_equal(after.nodes_executed, before.nodes_executed + 5);
  }
  gcap_exec_destroy(x);
  gcap_graph_destroy(g);
  assert_ok(gcap_module_unload(m));
}

/* ------------------------------------------------------------------ rules.md#mem-alloc-node */

static void test_mem_alloc_node_address_fixed_across_launches(void **state) {
  struct test_fixture *f = *state;
  begin(f->s);
  void *p = NULL;
  assert_ok(gcap_mem_alloc_async(f->s, 128, &p));
  assert_ok(gcap_memset_async(f->s, p, 0x11, 128));
  gcap_graph *g = end(f->s);
  gcap_exec *x = instantiate(g, 0);
  for (int round = 0; round < 3; round++) {
    launch(x, f->s);
    assert_device_bytes(f->ctx, p, 0x11, 128);
    /* Overwrite it outside the graph; the next launch writes the same address again. */
    assert_ok(gcap_memset_async(f->s, p, 0, 128));
    assert_ok(gcap_stream_synchronize(f->s));
    assert_device_bytes(f->ctx, p, 0, 128);
    assert_ok(gcap_mem_free_async(f->s, p));
    test_assert_message_empty();
  }
  /* The same address across instantiations too. */
  gcap_exec_destroy(x);
  x = instantiate(g, 0);
  launch(x, f->s);
  assert_device_bytes(f->ctx, p, 0x11, 128);
  assert_ok(gcap_mem_free(f->ctx, p));
  gcap_exec_destroy(x);
  gcap_graph_destroy(g);
}

static void test_mem_alloc_node_graph_destroyed_after_instantiate(void **state) {
  struct test_fixture *f = *state;
  uint8_t host[300];
  gcap_graph *g = capture_fill_read(f->s, sizeof host, 0x6c, host, true, NULL);
  gcap_exec *x = instantiate(g, 0);
  gcap_graph_destroy(g); /* the exec keeps the memory */
  for (int round = 0; round < 3; round++) {
    memset(host, 0, sizeof host);
    launch(x, f->s);
    assert_bytes(host, 0x6c, sizeof host);
  }
  gcap_exec_destroy(x);
}

/* ------------------------------------------------------------------ rules.md#mem-lifetime */

static void test_mem_lifetime_free_in_graph_relaunch(void **state) {
  struct test_fixture *f = *state;
  uint8_t host[512];
  gcap_graph *g = capture_fill_read(f->s, sizeof host, 0x3c, host, true, NULL);
  gcap_exec *x = instantiate(g, 0);
  for (int round = 0; round < 4; round++) {
    memset(host, 0, sizeof host);
    launch(x, f->s);
    assert_bytes(host, 0x3c, sizeof host);
  }
  gcap_exec_destroy(x);
  gcap_graph_destroy(g);
}

static void test_mem_lifetime_unfreed_relaunch_refused(void **state) {
  struct test_fixture *f = *state;
  uint8_t host[128];
  void *p = NULL;
  gcap_graph *g = capture_fill_read(f->s, sizeof host, 0x22, host, false, &p);
  gcap_exec *x = instantiate(g, 0);
  memset(host, 0, sizeof host);
  launch(x, f->s);
  assert_bytes(host, 0x22, sizeof host);
  assert_device_bytes(f->ctx, p, 0x22, sizeof host);

  memset(host, 0, sizeof host);
  gcap_sim_stats before = sim_stats(f->ctx);
  assert_status(gcap_exec_launch(x, f->s), GCAP_ERROR_INVALID_VALUE);
  assert_message_nonempty();
  test_assert_message_contains("gcap_exec_launch");
  assert_ok(gcap_stream_synchronize(f->s));
  assert_bytes(host, 0, sizeof host); /* nothing of the launch ran */
  gcap_sim_stats after = sim_stats(f->ctx);
  assert_same_sim_stats(&before, &after);
  /* Still refused: the allocation is still live. */
  assert_status(gcap_exec_launch(x, f->s), GCAP_ERROR_INVALID_VALUE);

  assert_ok(gcap_mem_free_async(f->s, p));
  launch(x, f->s);
  assert_bytes(host, 0x22, sizeof host);
  assert_ok(gcap_mem_free(f->ctx, p));
  gcap_exec_destroy(x);
  gcap_graph_destroy(g);
}

static void test_mem_lifetime_auto_free_on_launch(void **state) {
  struct test_fixture *f = *state;
  gcap_pool *pool = NULL;
  assert_ok(gcap_pool_create(f->ctx, &pool));
  uint8_t host[512];
  gcap_capture *c = begin_pool(f->s, pool);
  void *p = record_fill_read(f->s, sizeof host, 0x33, host, false);
  gcap_graph *g = end_pool(c);
  gcap_exec *x = instantiate(g, GCAP_INSTANTIATE_AUTO_FREE_ON_LAUNCH);
  assert_pool(pool, 512, 0, 0, 1);
  for (int round = 0; round < 3; round++) {
    memset(host, 0, sizeof host);
    launch(x, f->s);
    assert_bytes(host, 0x33, sizeof host);
    assert_device_bytes(f->ctx, p, 0x33, sizeof host);
    assert_pool(pool, 512, 512, 512, 1);
  }
  /* It may still be freed outside between launches. */
  assert_ok(gcap_mem_free(f->ctx, p));
  assert_pool(pool, 512, 0, 512, 1);
  assert_status(gcap_mem_free(f->ctx, p), GCAP_ERROR_INVALID_VALUE);
  launch(x, f->s);
  assert_pool(pool, 512, 512, 512, 1);
  gcap_exec_destroy(x);
  gcap_graph_destroy(g);
  assert_pool(pool, 512, 512, 512, 0); /* allocated memory outlives its graph */
  assert_device_bytes(f->ctx, p, 0x33, sizeof host);
  assert_ok(gcap_mem_free(f->ctx, p));
  assert_pool(pool, 512, 0, 512, 0);
  gcap_pool_release(pool);
}

static uint64_t graph_mem(gcap_context *ctx, gcap_graph_mem_attribute attr) {
  uint64_t v = UINT64_MAX;
  assert_ok(gcap_context_get_graph_mem_attribute(ctx, attr, &v));
  return v;
}

/* The context's graph memory figures follow reservation, launches, frees and trimming. */
static void test_mem_context_attributes_and_trim(void **state) {
  struct test_fixture *f = *state;
  gcap_pool *pool = NULL;
  assert_ok(gcap_pool_create(f->ctx, &pool));
  assert_int_equal(graph_mem(f->ctx, GCAP_GRAPH_MEM_ATTR_USED_MEM_CURRENT), 0);
  assert_int_equal(graph_mem(f->ctx, GCAP_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT), 0);
  uint8_t host[512];
  gcap_capture *c = begin_pool(f->s, pool);
  void *p = record_fill_read(f->s, sizeof host, 0x44, host, false);
  gcap_graph *g = end_pool(c);
  assert_int_equal(graph_mem(f->ctx, GCAP_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT), 512); /* reserved at capture */
  assert_int_equal(graph_mem(f->ctx, GCAP_GRAPH_MEM_ATTR_USED_MEM_CURRENT), 0);
  gcap_exec *x = instantiate(g, 0);
  launch(x, f->s);
  assert_int_equal(graph_mem(f->ctx, GCAP_GRAPH_MEM_ATTR_USED_MEM_CURRENT), 512); /* allocated, not freed */
  assert_int_equal(graph_mem(f->ctx, GCAP_GRAPH_MEM_ATTR_USED_MEM_HIGH), 512);
  assert_ok(gcap_mem_free(f->ctx, p));
  assert_int_equal(graph_mem(f->ctx, GCAP_GRAPH_MEM_ATTR_USED_MEM_CURRENT), 0);
  assert_int_equal(graph_mem(f->ctx, GCAP_GRAPH_MEM_ATTR_USED_MEM_HIGH), 512);
  assert_ok(gcap_context_set_graph_mem_attribute(f->ctx, GCAP_GRAPH_MEM_ATTR_USED_MEM_HIGH, 0));
  assert_int_equal(graph_mem(f->ctx, GCAP_GRAPH_MEM_ATTR_USED_MEM_HIGH), 0);

  gcap_exec_destroy(x);
  gcap_graph_destroy(g);
  assert_int_equal(graph_mem(f->ctx, GCAP_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT), 512); /* a spare of the pool */
  assert_ok(gcap_context_graph_mem_trim(f->ctx));
  assert_int_equal(graph_mem(f->ctx, GCAP_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT), 0);
  assert_int_equal(graph_mem(f->ctx, GCAP_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH), 512);
  assert_ok(gcap_context_set_graph_mem_attribute(f->ctx, GCAP_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH, 0));
  assert_int_equal(graph_mem(f->ctx, GCAP_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH), 0);
  assert_pool(pool, 0, 0, 512, 0);

  uint64_t v = 0;
  assert_status(gcap_context_get_graph_mem_attribute(f->ctx, (gcap_graph_mem_attribute)4, &v),
                GCAP_ERROR_INVALID_VALUE);
  test_assert_message_contains("attr 4 is not a gcap_graph_mem_attribute");
  assert_status(gcap_context_get_graph_mem_attribute(f->ctx, GCAP_GRAPH_MEM_ATTR_USED_MEM_CURRENT, NULL),
                GCAP_ERROR_INVALID_VALUE);
  assert_status(gcap_context_set_graph_mem_attribute(f->ctx, GCAP_GRAPH_MEM_ATTR_USED_MEM_CURRENT, 0),
                GCAP_ERROR_INVALID_VALUE);
  test_assert_message_contains("only the two high marks");
  assert_status(gcap_context_set_graph_mem_attribute(f->ctx, GCAP_GRAPH_MEM_ATTR_USED_MEM_HIGH, 5),
                GCAP_ERROR_INVALID_VALUE);
  test_assert_message_contains("can only be reset, with 0");
  assert_status(gcap_context_get_graph_mem_attribute(NULL, GCAP_GRAPH_MEM_ATTR_USED_MEM_CURRENT, &v),
                GCAP_ERROR_INVALID_HANDLE);
  assert_status(gcap_context_graph_mem_trim(NULL), GCAP_ERROR_INVALID_HANDLE);
  gcap_pool_release(pool);
}

/*
 * A trim gives back the blocks of graphs whose executables are gone (cudaDeviceGraphMemTrim):
 * the address stays the graph's, and a new executable reserves and runs it again. Allocated
 * memory and blocks an executable holds stay. The CUDA backend keeps a living graph's blocks.
 */
static void test_mem_trim_after_exec_destroy(void **state) {
  struct test_fixture *f = *state;
  enum { BYTES = 3 * 4096 };
  gcap_pool *pool = NULL;
  assert_ok(gcap_pool_create(f->ctx, &pool));
  static uint8_t host[BYTES], kept_host[256];
  gcap_capture *c = begin_pool(f->s, pool);
  void *p = record_fill_read(f->s, BYTES, 0x5a, host, true);
  gcap_graph *g = end_pool(c);
  void *kept = NULL;
  gcap_graph *live = capture_fill_read(f->s, sizeof kept_host, 0x11, kept_host, false, &kept);
  gcap_exec *x = instantiate(g, 0), *y = instantiate(live, 0);
  launch(x, f->s);
  launch(y, f->s);
  gcap_exec_destroy(y); /* its allocation is allocated still: it stays */
  const uint64_t both = BYTES + sizeof kept_host;
  assert_int_equal(graph_mem(f->ctx, GCAP_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT), both);
  assert_ok(gcap_context_graph_mem_trim(f->ctx));
  assert_int_equal(graph_mem(f->ctx, GCAP_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT), both); /* x holds p's block */

  gcap_exec_destroy(x);
  assert_ok(gcap_context_graph_mem_trim(f->ctx));
  uint64_t trimmed = test_on_sim() ? sizeof kept_host : both;
  assert_int_equal(graph_mem(f->ctx, GCAP_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT), trimmed);
  assert_pool(pool, trimmed - sizeof kept_host, 0, BYTES, 0);
  assert_ok(gcap_context_graph_mem_trim(f->ctx)); /* twice: nothing more goes */
  assert_int_equal(graph_mem(f->ctx, GCAP_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT), trimmed);

  x = instantiate(g, 0); /* reserves the block again, at the same address */
  assert_int_equal(graph_mem(f->ctx, GCAP_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT), both);
  memset(host, 0, sizeof host);
  launch(x, f->s);
  assert_bytes(host, 0x5a, BYTES);
  gcap_exec_destroy(x);
  assert_ok(gcap_context_graph_mem_trim(f->ctx));
  gcap_graph_destroy(g); /* a trimmed block goes straight back */
  assert_int_equal(graph_mem(f->ctx, GCAP_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT), sizeof kept_host);
  assert_pool(pool, 0, 0, BYTES, 0);
  assert_device_bytes(f->ctx, kept, 0x11, sizeof kept_host);
  assert_ok(gcap_mem_free(f->ctx, kept));
  gcap_graph_destroy(live);
  assert_int_equal(graph_mem(f->ctx, GCAP_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT), 0);
  (void)p;
  gcap_pool_release(pool);
}

static void test_mem_lifetime_free_outside_after_launch(void **state) {
  struct test_fixture *f = *state;
  void *p = NULL;
  begin(f->s);
  assert_ok(gcap_mem_alloc_async(f->s, 256, &p));
  assert_ok(gcap_memset_async(f->s, p, 0x7e, 256));
  gcap_graph *g = end(f->s);
  gcap_exec *x = instantiate(g, 0);

  /* Not allocated before the first launch. */
  assert_status(gcap_mem_free(f->ctx, p), GCAP_ERROR_INVALID_VALUE);
  assert_message_nonempty();
  assert_status(gcap_mem_free_async(f->s, p), GCAP_ERROR_INVALID_VALUE);
  assert_message_nonempty();

  /* gcap_mem_free_async. */
  launch(x, f->s);
  assert_device_bytes(f->ctx, p, 0x7e, 256);
  assert_status(gcap_mem_free_async(f->s, (uint8_t *)p + 16), GCAP_ERROR_INVALID_VALUE);
  assert_ok(gcap_mem_free_async(f->s, p));
  test_assert_message_empty();
  assert_status(gcap_mem_free_async(f->s, p), GCAP_ERROR_INVALID_VALUE);
  assert_status(gcap_mem_free(f->ctx, p), GCAP_ERROR_INVALID_VALUE);

  /* gcap_mem_free, after synchronizing. */
  launch(x, f->s);
  assert_device_bytes(f->ctx, p, 0x7e, 256);
  assert_status(gcap_mem_free(f->ctx, (uint8_t *)p + 1), GCAP_ERROR_INVALID_VALUE);
  assert_ok(gcap_mem_free(f->ctx, p));
  test_assert_message_empty();
  assert_status(gcap_mem_free(f->ctx, p), GCAP_ERROR_INVALID_VALUE);
  test_assert_message_contains("gcap_mem_free");
  assert_status(gcap_mem_free_async(f->s, p), GCAP_ERROR_INVALID_VALUE);

  /* The graph still owns the address. */
  launch(x, f->s);
  assert_device_bytes(f->ctx, p, 0x7e, 256);
  assert_ok(gcap_mem_free_async(f->s, p));
  gcap_exec_destroy(x);
  gcap_graph_destroy(g);
}

static void test_mem_lifetime_free_in_separate_graph(void **state) {
  struct test_fixture *f = *state;
  uint8_t host[256];
  void *p = NULL;
  begin(f->s);
  assert_ok(gcap_mem_alloc_async(f->s, sizeof host, &p));
  assert_ok(gcap_memset_async(f->s, p, 0x44, sizeof host));
  gcap_graph *ga = end(f->s);
  begin(f->s);
  assert_ok(gcap_memcpy_async(f->s, host, p, sizeof host, GCAP_MEMCPY_DEVICE_TO_HOST));
  assert_ok(gcap_mem_free_async(f->s, p));
  gcap_graph *gb = end(f->s);
  const gcap_node_type want_b[] = {GCAP_NODE_MEMCPY, GCAP_NODE_MEM_FREE};
  node_types(gb, want_b, 2);
  gcap_exec *xa = instantiate(ga, 0);
  gcap_exec *xb = instantiate(gb, 0);

  /* B frees what A allocates: before A runs, B's free has nothing to free. */
  memset(host, 0, sizeof host);
  gcap_sim_stats before = sim_stats(f->ctx);
  assert_status(gcap_exec_launch(xb, f->s), GCAP_ERROR_INVALID_VALUE);
  assert_message_nonempty();
  gcap_sim_stats after = sim_stats(f->ctx);
  assert_same_sim_stats(&before, &after);
  assert_bytes(host, 0, sizeof host);

  for (int round = 0; round < 3; round++) {
    memset(host, 0, sizeof host);
    launch(xa, f->s);
    launch(xb, f->s);
    assert_bytes(host, 0x44, sizeof host);
  }
  /* B already freed it. */
  assert_status(gcap_exec_launch(xb, f->s), GCAP_ERROR_INVALID_VALUE);
  /* A may run again since B freed it; B then frees it again. */
  launch(xa, f->s);
  launch(xb, f->s);
  gcap_graph_destroy(ga); /* B's free node and the execs keep the allocation */
  gcap_exec_destroy(xa);
  gcap_exec_destroy(xb);
  gcap_graph_destroy(gb);
}

/* A free node in another graph does not stop a free outside (CUDA: only the own graph's free does). */
static void test_mem_lifetime_free_outside_when_another_graph_frees(void **state) {
  struct test_fixture *f = *state;
  void *p = NULL;
  begin(f->s);
  assert_ok(gcap_mem_alloc_async(f->s, 64, &p));
  assert_ok(gcap_memset_async(f->s, p, 0x19, 64));
  gcap_graph *ga = end(f->s);
  begin(f->s);
  assert_ok(gcap_mem_free_async(f->s, p));
  gcap_graph *gb = end(f->s);
  gcap_exec *xa = instantiate(ga, 0);
  gcap_exec *xb = instantiate(gb, 0);
  launch(xa, f->s);
  assert_device_bytes(f->ctx, p, 0x19, 64);
  assert_ok(gcap_mem_free_async(f->s, p));
  /* Freed already: B has nothing to free. */
  assert_status(gcap_exec_launch(xb, f->s), GCAP_ERROR_INVALID_VALUE);
  launch(xa, f->s);
  launch(xb, f->s);
  gcap_exec_destroy(xa);
  gcap_exec_destroy(xb);
  gcap_graph_destroy(ga);
  gcap_graph_destroy(gb);
}

/* ------------------------------------------------------------------ rules.md#mem-free-node */

static void test_mem_free_node_double_free_in_graph(void **state) {
  struct test_fixture *f = *state;
  void *p = NULL;
  begin(f->s);
  assert_ok(gcap_mem_alloc_async(f->s, 64, &p));
  assert_ok(gcap_mem_free_async(f->s, p));
  assert_status(gcap_mem_free_async(f->s, p), GCAP_ERROR_INVALID_VALUE);
  assert_message_nonempty();
  test_assert_message_contains("gcap_mem_free_async");
  assert_capture_invalidated(f->s);
  /* The discarded graph's allocation is gone: no later capture may free it. */
  begin(f->s);
  assert_status(gcap_mem_free_async(f->s, p), GCAP_ERROR_INVALID_VALUE);
  assert_capture_invalidated(f->s);
}

static void test_mem_free_node_free_non_graph_pointer(void **state) {
  struct test_fixture *f = *state;
  void *d = NULL, *h = NULL, *p = NULL;
  uint8_t stack[32];
  assert_ok(gcap_mem_alloc(f->ctx, 64, &d));
  assert_ok(gcap_host_alloc(f->ctx, 64, &h));

  begin(f->s);
  assert_status(gcap_mem_free_async(f->s, d), GCAP_ERROR_INVALID_VALUE); /* a gcap_mem_alloc pointer */
  assert_message_nonempty();
  assert_capture_invalidated(f->s);

  begin(f->s);
  assert_status(gcap_mem_free_async(f->s, h), GCAP_ERROR_INVALID_VALUE);
  assert_capture_invalidated(f->s);

  begin(f->s);
  assert_status(gcap_mem_free_async(f->s, stack), GCAP_ERROR_INVALID_VALUE);
  assert_capture_invalidated(f->s);

  begin(f->s);
  assert_ok(gcap_mem_alloc_async(f->s, 64, &p));
  assert_status(gcap_mem_free_async(f->s, (uint8_t *)p + 8), GCAP_ERROR_INVALID_VALUE); /* interior */
  assert_capture_invalidated(f->s);

  /* The refused frees freed nothing. */
  assert_ok(gcap_memset_async(f->s, d, 0x01, 64));
  assert_ok(gcap_stream_synchronize(f->s));
  assert_device_bytes(f->ctx, d, 0x01, 64);
  assert_ok(gcap_mem_free(f->ctx, d));
  assert_ok(gcap_host_free(f->ctx, h));
}

static void test_mem_free_node_free_null(void **state) {
  struct test_fixture *f = *state;
  begin(f->s);
  assert_status(gcap_mem_free_async(f->s, NULL), GCAP_ERROR_INVALID_VALUE);
  assert_message_nonempty();
  assert_capture_invalidated(f->s);
  /* Outside capture too. */
  assert_status(gcap_mem_free_async(f->s, NULL), GCAP_ERROR_INVALID_VALUE);
  assert_message_nonempty();
  assert_status(gcap_mem_free_async(NULL, NULL), GCAP_ERROR_INVALID_HANDLE);
}

static void test_mem_free_node_own_graph_frees_cannot_free_outside(void **state) {
  struct test_fixture *f = *state;
  uint8_t host[64];
  void *p = NULL;
  gcap_graph *g = capture_fill_read(f->s, sizeof host, 0x4d, host, true, &p);
  gcap_exec *x = instantiate(g, 0);
  assert_status(gcap_mem_free(f->ctx, p), GCAP_ERROR_INVALID_VALUE);
  assert_message_nonempty();
  assert_status(gcap_mem_free_async(f->s, p), GCAP_ERROR_INVALID_VALUE);
  assert_message_nonempty();
  for (int round = 0; round < 2; round++) {
    memset(host, 0, sizeof host);
    launch(x, f->s);
    assert_bytes(host, 0x4d, sizeof host);
    assert_status(gcap_mem_free(f->ctx, p), GCAP_ERROR_INVALID_VALUE);
    assert_status(gcap_mem_free_async(f->s, p), GCAP_ERROR_INVALID_VALUE);
  }
  gcap_exec_destroy(x);
  gcap_graph_destroy(g);
}

static void test_mem_free_node_other_graph_cannot_free_what_own_graph_frees(void **state) {
  struct test_fixture *f = *state;
  uint8_t host[64];
  void *p = NULL;
  gcap_graph *g = capture_fill_read(f->s, sizeof host, 0x12, host, true, &p);
  begin(f->s);
  assert_status(gcap_mem_free_async(f->s, p), GCAP_ERROR_INVALID_VALUE);
  assert_message_nonempty();
  assert_capture_invalidated(f->s);
  gcap_exec *x = instantiate(g, 0);
  launch(x, f->s);
  assert_bytes(host, 0x12, sizeof host);
  gcap_exec_destroy(x);
  gcap_graph_destroy(g);
}

static void test_mem_free_node_only_one_other_graph_frees(void **state) {
  struct test_fixture *f = *state;
  void *p = NULL;
  begin(f->s);
  assert_ok(gcap_mem_alloc_async(f->s, 64, &p));
  gcap_graph *ga = end(f->s);
  begin(f->s);
  assert_ok(gcap_mem_free_async(f->s, p));
  gcap_graph *gb = end(f->s);
  begin(f->s);
  assert_status(gcap_mem_free_async(f->s, p), GCAP_ERROR_INVALID_VALUE);
  assert_capture_invalidated(f->s);
  gcap_graph_destroy(gb);
  gcap_graph_destroy(ga);
}

/* A free node of a discarded capture frees nothing and claims nothing: a later graph may free it. */
static void test_mem_free_node_discarded_free_node_claims_nothing(void **state) {
  struct test_fixture *f = *state;
  void *p = NULL;
  begin(f->s);
  assert_ok(gcap_mem_alloc_async(f->s, 64, &p));
  gcap_graph *ga = end(f->s);
  begin(f->s);
  assert_ok(gcap_mem_free_async(f->s, p));
  assert_status(gcap_mem_alloc_async(f->s, 0, &(void *){NULL}), GCAP_ERROR_INVALID_VALUE);
  assert_capture_invalidated(f->s); /* the graph with the free node is gone */
  begin(f->s);
  assert_ok(gcap_mem_free_async(f->s, p));
  gcap_graph *gb = end(f->s);
  gcap_exec *xa = instantiate(ga, 0);
  gcap_exec *xb = instantiate(gb, 0);
  launch(xa, f->s);
  launch(xb, f->s);
  gcap_exec_destroy(xa);
  gcap_exec_destroy(xb);
  gcap_graph_destroy(ga);
  gcap_graph_destroy(gb);
}

/* ------------------------------------------------------------------ rules.md#mem-restrictions */

static gcap_graph *mem_graph(gcap_stream *s, uint8_t *host, size_t bytes) {
  return capture_fill_read(s, bytes, 0x5e, host, true, NULL);
}

static void test_mem_restrictions_clone_refused(void **state) {
  struct test_fixture *f = *state;
  uint8_t host[32];
  gcap_graph *g = mem_graph(f->s, host, sizeof host);
  gcap_graph *c = (gcap_graph *)&c;
  assert_status(gcap_graph_clone(g, &c), GCAP_ERROR_NOT_SUPPORTED);
  assert_null(c);
  assert_message_nonempty();
  test_assert_message_contains("gcap_graph_clone");

  /* A graph holding only a free node is refused as well. */
  void *p = NULL;
  begin(f->s);
  assert_ok(gcap_mem_alloc_async(f->s, 32, &p));
  gcap_graph *ga = end(f->s);
  assert_status(gcap_graph_clone(ga, &c), GCAP_ERROR_NOT_SUPPORTED);
  begin(f->s);
  assert_ok(gcap_mem_free_async(f->s, p));
  gcap_graph *gb = end(f->s);
  assert_status(gcap_graph_clone(gb, &c), GCAP_ERROR_NOT_SUPPORTED);
  assert_null(c);

  /* The graph is unchanged and runs. */
  assert_int_equal(gcap_graph_node_count(g), 4);
  gcap_exec *x = instantiate(g, 0);
  memset(host, 0, sizeof host);
  launch(x, f->s);
  assert_bytes(host, 0x5e, sizeof host);
  gcap_exec_destroy(x);
  gcap_graph_destroy(g);
  gcap_graph_destroy(gb);
  gcap_graph_destroy(ga);
}

static void test_mem_restrictions_child_refused(void **state) {
  struct test_fixture *f = *state;
  uint8_t host[32];
  gcap_graph *g = mem_graph(f->s, host, sizeof host);
  gcap_graph *parent = NULL;
  assert_ok(gcap_graph_create(f->ctx, &parent));
  gcap_node *n = (gcap_node *)&n;
  assert_status(gcap_graph_add_child_graph_node(parent, NULL, 0, g, &n), GCAP_ERROR_NOT_SUPPORTED);
  assert_null(n);
  assert_message_nonempty();
  assert_int_equal(gcap_graph_node_count(parent), 0);
  assert_int_equal(gcap_graph_node_count(g), 4);
  gcap_graph_destroy(parent);
  gcap_graph_destroy(g);
}

static void test_mem_restrictions_remove_edge_refused(void **state) {
  struct test_fixture *f = *state;
  uint8_t host[32];
  gcap_graph *g = mem_graph(f->s, host, sizeof host);
  gcap_node *from[3], *to[3];
  size_t count = 3;
  assert_ok(gcap_graph_get_edges(g, from, to, &count));
  assert_int_equal(count, 3);
  assert_status(gcap_graph_remove_dependencies(g, &from[1], &to[1], 1), GCAP_ERROR_NOT_SUPPORTED);
  assert_message_nonempty();
  assert_int_equal(gcap_graph_edge_count(g), 3);
  gcap_exec *x = instantiate(g, 0);
  memset(host, 0, sizeof host);
  launch(x, f->s);
  assert_bytes(host, 0x5e, sizeof host);
  gcap_exec_destroy(x);
  gcap_graph_destroy(g);
}

static void test_mem_restrictions_destroy_node_refused(void **state) {
  struct test_fixture *f = *state;
  uint8_t host[32];
  gcap_graph *g = mem_graph(f->s, host, sizeof host);
  gcap_node *nodes[4];
  size_t count = 4;
  assert_ok(gcap_graph_get_nodes(g, nodes, &count));
  for (size_t i = 0; i < 4; i++) {
    assert_status(gcap_graph_destroy_node(nodes[i]), GCAP_ERROR_NOT_SUPPORTED);
    assert_message_nonempty();
  }
  assert_int_equal(gcap_graph_node_count(g), 4);
  assert_int_equal(gcap_graph_edge_count(g), 3);
  assert_int_equal(gcap_node_get_type(nodes[0]), GCAP_NODE_MEM_ALLOC);
  assert_int_equal(gcap_node_get_type(nodes[3]), GCAP_NODE_MEM_FREE);
  gcap_exec *x = instantiate(g, 0);
  memset(host, 0, sizeof host);
  launch(x, f->s);
  assert_bytes(host, 0x5e, sizeof host);
  gcap_exec_destroy(x);
  gcap_graph_destroy(g);
}

/* ------------------------------------------------------------------ rules.md#exec-one-at-a-time */

static void test_exec_one_at_a_time(void **state) {
  struct test_fixture *f = *state;
  uint8_t host[48];
  gcap_graph *g = mem_graph(f->s, host, sizeof host);
  gcap_exec *x1 = instantiate(g, 0);
  gcap_exec *x2 = (gcap_exec *)&x2;
  assert_status(gcap_graph_instantiate(g, 0, &x2), GCAP_ERROR_NOT_SUPPORTED);
  assert_null(x2);
  assert_message_nonempty();
  test_assert_message_contains("gcap_graph_instantiate");
  assert_status(gcap_graph_instantiate(g, GCAP_INSTANTIATE_AUTO_FREE_ON_LAUNCH, &x2), GCAP_ERROR_NOT_SUPPORTED);
  memset(host, 0, sizeof host);
  launch(x1, f->s); /* the first exec is unaffected */
  assert_bytes(host, 0x5e, sizeof host);
  gcap_exec_destroy(x1);
  x2 = instantiate(g, 0);
  memset(host, 0, sizeof host);
  launch(x2, f->s);
  assert_bytes(host, 0x5e, sizeof host);
  gcap_exec_destroy(x2);

  /* A graph without graph memory may have several executables. */
  void *d = NULL;
  assert_ok(gcap_mem_alloc(f->ctx, 16, &d));
  begin(f->s);
  assert_ok(gcap_memset_async(f->s, d, 0x09, 16));
  gcap_graph *plain = end(f->s);
  gcap_exec *a = instantiate(plain, 0);
  gcap_exec *b = instantiate(plain, 0);
  launch(b, f->s);
  assert_device_bytes(f->ctx, d, 0x09, 16);
  gcap_exec_destroy(a);
  gcap_exec_destroy(b);
  gcap_graph_destroy(plain);
  assert_ok(gcap_mem_free(f->ctx, d));
  gcap_graph_destroy(g);
}

/* ------------------------------------------------------------------ pools */

static void test_pool_create_retain_release(void **state) {
  struct test_fixture *f = *state;
  gcap_pool *p = (gcap_pool *)&p;
  assert_status(gcap_pool_create(NULL, &p), GCAP_ERROR_INVALID_HANDLE);
  assert_null(p);
  assert_message_nonempty();
  test_assert_message_contains("gcap_pool_create");
  assert_status(gcap_pool_create(f->ctx, NULL), GCAP_ERROR_INVALID_VALUE);
  gcap_context *other = test_context_create();
  gcap_context_destroy(other);
  p = (gcap_pool *)&p;
  assert_status(gcap_pool_create(other, &p), GCAP_ERROR_INVALID_HANDLE);
  assert_null(p);

  assert_ok(gcap_pool_create(f->ctx, &p));
  assert_non_null(p);
  test_assert_message_empty();
  assert_pool(p, 0, 0, 0, 0);
  gcap_pool_stats st;
  assert_status(gcap_pool_get_stats(p, NULL), GCAP_ERROR_INVALID_VALUE);
  assert_status(gcap_pool_get_stats(NULL, &st), GCAP_ERROR_INVALID_HANDLE);
  assert_message_nonempty();

  assert_ptr_equal(gcap_pool_retain(p), p);
  assert_null(gcap_pool_retain(NULL));
  gcap_pool_release(NULL);
  gcap_pool_release(p); /* one reference left */
  assert_pool(p, 0, 0, 0, 0);
  gcap_pool_release(p); /* the user's last: the handle is gone */
  assert_status(gcap_pool_get_stats(p, &st), GCAP_ERROR_INVALID_HANDLE);
  assert_message_nonempty();
  gcap_pool_release(p); /* a stale handle is ignored */
}

static void test_pool_capture_option_errors(void **state) {
  struct test_fixture *f = *state;
  gcap_context *other = test_context_create();
  gcap_pool *foreign = NULL;
  assert_ok(gcap_pool_create(other, &foreign));
  gcap_capture_options o;
  gcap_capture_options_init(&o);
  assert_null(o.pool);
  o.pool = foreign;
  gcap_capture *c = (gcap_capture *)&c;
  assert_status(gcap_capture_begin(f->s, &o, &c), GCAP_ERROR_INVALID_HANDLE);
  assert_null(c);
  assert_message_nonempty();
  assert_int_equal(capture_status(f->s), GCAP_CAPTURE_STATUS_NONE);
  assert_pool(foreign, 0, 0, 0, 0);
  gcap_pool_release(foreign);
  gcap_context_destroy(other);

  gcap_pool *pool = NULL;
  assert_ok(gcap_pool_create(f->ctx, &pool));
  gcap_pool_release(pool);
  o.pool = pool; /* released */
  c = (gcap_capture *)&c;
  assert_status(gcap_capture_begin(f->s, &o, &c), GCAP_ERROR_INVALID_HANDLE);
  assert_null(c);
  assert_int_equal(capture_status(f->s), GCAP_CAPTURE_STATUS_NONE);
}

static void test_pool_stats_each_step(void **state) {
  struct test_fixture *f = *state;
  gcap_pool *pool = NULL;
  assert_ok(gcap_pool_create(f->ctx, &pool));
  uint8_t host[1024];
  assert_pool(pool, 0, 0, 0, 0);

  /* A graph that frees its allocation. */
  gcap_capture *c = begin_pool(f->s, pool);
  void *p = NULL;
  assert_ok(gcap_mem_alloc_async(f->s, 1024, &p));
  assert_pool(pool, 1024, 0, 0, 0); /* reserved at capture */
  assert_ok(gcap_memset_async(f->s, p, 0x71, 1024));
  assert_ok(gcap_memcpy_async(f->s, host, p, 1024, GCAP_MEMCPY_DEVICE_TO_HOST));
  assert_pool(pool, 1024, 0, 0, 0);
  assert_ok(gcap_mem_free_async(f->s, p));
  assert_pool(pool, 1024, 0, 0, 0);
  gcap_graph *g = end_pool(c);
  assert_pool(pool, 1024, 0, 0, 0);
  gcap_exec *x = instantiate(g, 0);
  assert_pool(pool, 1024, 0, 0, 1);
  memset(host, 0, sizeof host);
  launch(x, f->s);
  assert_bytes(host, 0x71, sizeof host);
  assert_pool(pool, 1024, 0, 1024, 1);
  memset(host, 0, sizeof host);
  launch(x, f->s);
  assert_bytes(host, 0x71, sizeof host);
  assert_pool(pool, 1024, 0, 1024, 1);
  gcap_graph_destroy(g);
  assert_pool(pool, 1024, 0, 1024, 1);
  gcap_exec_destroy(x);
  assert_pool(pool, 1024, 0, 1024, 0); /* the block stays reserved */

  /* A graph that leaves its allocation to be freed outside (bigger than the spare block). */
  c = begin_pool(f->s, pool);
  void *q = NULL;
  assert_ok(gcap_mem_alloc_async(f->s, 2048, &q));
  assert_pool(pool, 3072, 0, 1024, 0);
  assert_ok(gcap_memset_async(f->s, q, 0x72, 2048));
  g = end_pool(c);
  assert_pool(pool, 3072, 0, 1024, 0);
  x = instantiate(g, 0);
  assert_pool(pool, 3072, 0, 1024, 1);
  launch(x, f->s);
  assert_device_bytes(f->ctx, q, 0x72, 2048);
  assert_pool(pool, 3072, 2048, 2048, 1);
  assert_ok(gcap_mem_free_async(f->s, q));
  assert_ok(gcap_stream_synchronize(f->s));
  assert_pool(pool, 3072, 0, 2048, 1);
  launch(x, f->s);
  assert_pool(pool, 3072, 2048, 2048, 1);
  gcap_exec_destroy(x);
  assert_pool(pool, 3072, 2048, 2048, 0); /* the graph still holds the allocated memory */
  gcap_graph_destroy(g);
  assert_pool(pool, 3072, 2048, 2048, 0); /* and it outlives the graph until freed */
  assert_ok(gcap_mem_free_async(f->s, q));
  assert_ok(gcap_stream_synchronize(f->s));
  assert_pool(pool, 3072, 0, 2048, 0);
  gcap_pool_release(pool);
}

static void test_pool_shared_by_two_graphs(void **state) {
  struct test_fixture *f = *state;
  gcap_pool *pool = NULL;
  assert_ok(gcap_pool_create(f->ctx, &pool));
  uint8_t ha[256], hb[512];

  /* A: a (256, freed in A) and x (128, freed by B). */
  gcap_capture *c = begin_pool(f->s, pool);
  void *a = record_fill_read(f->s, sizeof ha, 0x11, ha, true);
  void *x = NULL;
  assert_ok(gcap_mem_alloc_async(f->s, 128, &x));
  assert_ok(gcap_memset_async(f->s, x, 0x33, 128));
  gcap_graph *ga = end_pool(c);
  assert_pool(pool, 384, 0, 0, 0);

  /* B: b (512) gets x's bytes and a fill, is read back and freed; x is freed. */
  c = begin_pool(f->s, pool);
  void *b = NULL;
  assert_ok(gcap_mem_alloc_async(f->s, 512, &b));
  assert_true(b != a && b != x);
  assert_ok(gcap_memset_async(f->s, b, 0x22, 512));
  assert_ok(gcap_memcpy_async(f->s, b, x, 128, GCAP_MEMCPY_DEVICE_TO_DEVICE));
  assert_ok(gcap_memcpy_async(f->s, hb, b, 512, GCAP_MEMCPY_DEVICE_TO_HOST));
  assert_ok(gcap_mem_free_async(f->s, b));
  assert_ok(gcap_mem_free_async(f->s, x));
  gcap_graph *gb = end_pool(c);
  assert_pool(pool, 896, 0, 0, 0);

  gcap_exec *xa = instantiate(ga, 0);
  gcap_exec *xb = instantiate(gb, 0);
  assert_pool(pool, 896, 0, 0, 2);
  gcap_graph_destroy(ga);
  gcap_graph_destroy(gb);
  assert_pool(pool, 896, 0, 0, 2);

  /* Out of capture order: x is not allocated yet. */
  assert_status(gcap_exec_launch(xb, f->s), GCAP_ERROR_INVALID_VALUE);
  assert_pool(pool, 896, 0, 0, 2);

  for (int round = 0; round < 3; round++) {
    memset(ha, 0, sizeof ha);
    memset(hb, 0, sizeof hb);
    launch(xa, f->s);
    assert_bytes(ha, 0x11, sizeof ha);
    assert_device_bytes(f->ctx, x, 0x33, 128);
    assert_pool(pool, 896, 128, round == 0 ? 256 : 640, 2);
    launch(xb, f->s);
    assert_bytes(hb, 0x33, 128);
    assert_bytes(hb + 128, 0x22, sizeof hb - 128);
    assert_pool(pool, 896, 0, 640, 2);
  }
  gcap_exec_destroy(xa);
  assert_pool(pool, 896, 0, 640, 1);
  gcap_exec_destroy(xb);
  assert_pool(pool, 896, 0, 640, 0);
  gcap_pool_release(pool);
}

static void test_pool_reuses_spare_block(void **state) {
  struct test_fixture *f = *state;
  gcap_pool *pool = NULL;
  assert_ok(gcap_pool_create(f->ctx, &pool));
  uint8_t host[4096];

  /* Two blocks, 1024 and 4096, left spare by destroyed graphs. */
  gcap_capture *c = begin_pool(f->s, pool);
  record_fill_read(f->s, 1024, 0x01, host, true);
  record_fill_read(f->s, 4096, 0x02, host, true);
  gcap_graph *g = end_pool(c);
  assert_pool(pool, 5120, 0, 0, 0);
  gcap_exec *x = instantiate(g, 0);
  launch(x, f->s);
  assert_bytes(host, 0x02, 4096);
  gcap_exec_destroy(x);
  gcap_graph_destroy(g);
  assert_pool(pool, 5120, 0, 4096, 0); /* one at a time: each is freed before the next is allocated */

  /* Later captures take them (best fit) instead of reserving more. */
  c = begin_pool(f->s, pool);
  record_fill_read(f->s, 3000, 0x03, host, true);
  assert_pool(pool, 5120, 0, 4096, 0);
  record_fill_read(f->s, 1000, 0x04, host + 3000, true);
  assert_pool(pool, 5120, 0, 4096, 0);
  /* Nothing spare is left: a new block. */
  void *extra = NULL;
  assert_ok(gcap_mem_alloc_async(f->s, 16, &extra));
  assert_pool(pool, 5136, 0, 4096, 0);
  assert_ok(gcap_mem_free_async(f->s, extra));
  g = end_pool(c);
  x = instantiate(g, 0);
  memset(host, 0, sizeof host);
  launch(x, f->s);
  assert_bytes(host, 0x03, 3000);
  assert_bytes(host + 3000, 0x04, 1000);
  assert_pool(pool, 5136, 0, 4096, 1);
  gcap_exec_destroy(x);
  gcap_graph_destroy(g);

  /* A graph captured after the first is destroyed reuses its block: reserved does not grow. */
  c = begin_pool(f->s, pool);
  record_fill_read(f->s, 4096, 0x05, host, true);
  g = end_pool(c);
  assert_pool(pool, 5136, 0, 4096, 0);
  gcap_graph_destroy(g);
  c = begin_pool(f->s, pool);
  record_fill_read(f->s, 4096, 0x06, host, true);
  g = end_pool(c);
  assert_pool(pool, 5136, 0, 4096, 0);
  x = instantiate(g, 0);
  memset(host, 0, sizeof host);
  launch(x, f->s);
  assert_bytes(host, 0x06, 4096);
  gcap_exec_destroy(x);
  gcap_graph_destroy(g);
  gcap_pool_release(pool);
}

static void test_pool_outlives_user_release(void **state) {
  struct test_fixture *f = *state;
  gcap_pool *pool = NULL;
  assert_ok(gcap_pool_create(f->ctx, &pool));
  uint8_t host[700];
  gcap_capture *c = begin_pool(f->s, pool);
  void *q = NULL;
  record_fill_read(f->s, sizeof host, 0x2b, host, true);
  assert_ok(gcap_mem_alloc_async(f->s, 96, &q)); /* left allocated by each launch */
  assert_ok(gcap_memset_async(f->s, q, 0x2c, 96));
  gcap_graph *g = end_pool(c);
  gcap_exec *x = instantiate(g, GCAP_INSTANTIATE_AUTO_FREE_ON_LAUNCH);
  gcap_graph_destroy(g);
  gcap_pool_release(pool);
  gcap_pool_stats st;
  assert_status(gcap_pool_get_stats(pool, &st), GCAP_ERROR_INVALID_HANDLE);
  for (int round = 0; round < 3; round++) {
    memset(host, 0, sizeof host);
    launch(x, f->s);
    assert_bytes(host, 0x2b, sizeof host);
    assert_device_bytes(f->ctx, q, 0x2c, 96);
  }
  gcap_exec_destroy(x); /* the pool's memory goes with its last holder */
}

static void test_pool_released_during_capture(void **state) {
  struct test_fixture *f = *state;
  gcap_pool *pool = NULL;
  assert_ok(gcap_pool_create(f->ctx, &pool));
  uint8_t host[200];
  gcap_capture *c = begin_pool(f->s, pool);
  gcap_pool_release(pool); /* the capture holds it */
  record_fill_read(f->s, sizeof host, 0x66, host, true);
  gcap_graph *g = end_pool(c);
  gcap_exec *x = instantiate(g, 0);
  gcap_graph_destroy(g);
  memset(host, 0, sizeof host);
  launch(x, f->s);
  assert_bytes(host, 0x66, sizeof host);
  gcap_exec_destroy(x);
}

static void test_pool_finish_attaches_exec(void **state) {
  struct test_fixture *f = *state;
  gcap_pool *pool = NULL;
  assert_ok(gcap_pool_create(f->ctx, &pool));
  uint8_t host[100];
  gcap_capture *c = begin_pool(f->s, pool);
  record_fill_read(f->s, sizeof host, 0x0f, host, true);
  gcap_exec *x = NULL;
  assert_ok(gcap_capture_finish(c, 0, &x));
  gcap_capture_destroy(c);
  assert_pool(pool, 100, 0, 0, 1);
  memset(host, 0, sizeof host);
  launch(x, f->s);
  assert_bytes(host, 0x0f, sizeof host);
  assert_pool(pool, 100, 0, 100, 1);
  gcap_exec_destroy(x);
  assert_pool(pool, 100, 0, 100, 0);
  gcap_pool_release(pool);
}

static void test_pool_oom_leaves_nothing_half_made(void **state) {
  struct test_fixture *f = *state;
  gcap_pool *pool = NULL;
  assert_ok(gcap_pool_create(f->ctx, &pool));
  gcap_capture *c = begin_pool(f->s, pool);
  void *p = NULL;
  assert_ok(gcap_mem_alloc_async(f->s, 64, &p));
  assert_pool(pool, 64, 0, 0, 0);
  assert_int_equal(gcap_capture_recorded_count(c), 1);
  void *q = (void *)&q;
  assert_status(gcap_mem_alloc_async(f->s, HUGE_BYTES, &q), GCAP_ERROR_OUT_OF_MEMORY);
  assert_null(q);
  assert_message_nonempty();
  assert_pool(pool, 64, 0, 0, 0);
  assert_int_equal(gcap_capture_recorded_count(c), 1);
  gcap_capture_status cs;
  assert_ok(gcap_capture_get_status(c, &cs));
  assert_int_equal(cs, GCAP_CAPTURE_STATUS_INVALIDATED);
  gcap_graph *g = (gcap_graph *)&g;
  assert_status(gcap_capture_end(c, &g), GCAP_ERROR_STREAM_CAPTURE_INVALIDATED);
  assert_null(g);
  gcap_capture_destroy(c);
  assert_pool(pool, 64, 0, 0, 0); /* the discarded graph's block stays reserved */

  /* Without a pool as well. */
  begin(f->s);
  q = (void *)&q;
  assert_status(gcap_mem_alloc_async(f->s, HUGE_BYTES, &q), GCAP_ERROR_OUT_OF_MEMORY);
  assert_null(q);
  assert_capture_invalidated(f->s);
  gcap_pool_release(pool);
}

static void test_pool_context_destroy_frees_all(void **state) {
  (void)state;
  gcap_context *ctx = test_context_create();
  gcap_stream *s = NULL;
  assert_ok(gcap_stream_create(ctx, &s));
  gcap_pool *pool = NULL;
  assert_ok(gcap_pool_create(ctx, &pool));
  uint8_t host[64];
  gcap_capture *c = begin_pool(s, pool);
  void *q = NULL;
  record_fill_read(s, sizeof host, 0x55, host, true);
  assert_ok(gcap_mem_alloc_async(s, 32, &q));
  gcap_graph *g = end_pool(c);
  gcap_exec *x = instantiate(g, 0);
  launch(x, s);
  assert_bytes(host, 0x55, sizeof host);
  assert_pool(pool, 96, 32, 64, 1);
  void *eager = NULL;
  assert_ok(gcap_mem_alloc_async(s, 48, &eager));
  assert_ok(gcap_stream_synchronize(s));
  /* Everything (graph, exec, pool, allocations) goes with the context. */
  assert_ok(gcap_stream_destroy(s));
  gcap_context_destroy(ctx);
}

/* ------------------------------------------------------ outside capture */

static void test_eager_alloc_async_free_async(void **state) {
  struct test_fixture *f = *state;
  void *p = (void *)&p;
  assert_status(gcap_mem_alloc_async(f->s, 0, &p), GCAP_ERROR_INVALID_VALUE);
  assert_null(p);
  assert_message_nonempty();
  assert_status(gcap_mem_alloc_async(f->s, 64, NULL), GCAP_ERROR_INVALID_VALUE);
  assert_status(gcap_mem_alloc_async(NULL, 64, &p), GCAP_ERROR_INVALID_HANDLE);

  assert_ok(gcap_mem_alloc_async(f->s, 333, &p));
  assert_non_null(p);
  test_assert_message_empty();
  uint8_t src[333], back[333];
  for (size_t i = 0; i < sizeof src; i++) src[i] = (uint8_t)(i * 7 + 1);
  assert_ok(gcap_memcpy_async(f->s, p, src, sizeof src, GCAP_MEMCPY_HOST_TO_DEVICE));
  assert_ok(gcap_memcpy_async(f->s, back, p, sizeof back, GCAP_MEMCPY_DEVICE_TO_HOST));
  assert_ok(gcap_stream_synchronize(f->s));
  assert_memory_equal(src, back, sizeof src);
  /* It is device memory: a range past its end is refused. */
  assert_status(gcap_memset_async(f->s, p, 0, 334), GCAP_ERROR_INVALID_VALUE);
  assert_ok(gcap_memset_async(f->s, p, 0xee, 333));
  assert_ok(gcap_stream_synchronize(f->s));
  assert_device_bytes(f->ctx, p, 0xee, 333);

  assert_status(gcap_mem_free_async(f->s, (uint8_t *)p + 1), GCAP_ERROR_INVALID_VALUE);
  assert_status(gcap_mem_free_async(f->s, src), GCAP_ERROR_INVALID_VALUE);
  assert_status(gcap_mem_free_async(NULL, p), GCAP_ERROR_INVALID_HANDLE);
  assert_ok(gcap_mem_free_async(f->s, p));
  test_assert_message_empty();
  assert_status(gcap_mem_free_async(f->s, p), GCAP_ERROR_INVALID_VALUE);
  test_assert_message_contains("gcap_mem_free_async");
  assert_status(gcap_mem_free(f->ctx, p), GCAP_ERROR_INVALID_VALUE);

  /* Either free takes memory from either allocator. */
  void *a = NULL, *b = NULL, *h = NULL;
  assert_ok(gcap_mem_alloc(f->ctx, 64, &a));
  assert_ok(gcap_mem_alloc_async(f->s, 64, &b));
  assert_ok(gcap_mem_free_async(f->s, a));
  assert_ok(gcap_stream_synchronize(f->s));
  assert_ok(gcap_mem_free(f->ctx, b));
  assert_ok(gcap_host_alloc(f->ctx, 64, &h));
  assert_status(gcap_mem_free_async(f->s, h), GCAP_ERROR_INVALID_VALUE);
  assert_ok(gcap_host_free(f->ctx, h));

  /* A device pointer of another context is not this context's. */
  gcap_context *other = test_context_create();
  gcap_stream *os = NULL;
  assert_ok(gcap_stream_create(other, &os));
  void *o = NULL;
  assert_ok(gcap_mem_alloc_async(os, 64, &o));
  assert_status(gcap_mem_free_async(f->s, o), GCAP_ERROR_INVALID_VALUE);
  assert_ok(gcap_mem_free_async(os, o));
  assert_ok(gcap_stream_destroy(os));
  gcap_context_destroy(other);
}

/* Stream-ordered allocation is not a potentially unsafe call: another stream's capture goes on. */
static void test_eager_alloc_async_not_prohibited(void **state) {
  struct test_fixture *f = *state;
  gcap_stream *s2 = NULL;
  assert_ok(gcap_stream_create(f->ctx, &s2));
  uint8_t host[64];
  begin(f->s);
  void *p = NULL;
  assert_ok(gcap_mem_alloc_async(s2, 64, &p));
  assert_int_equal(capture_status(f->s), GCAP_CAPTURE_STATUS_ACTIVE);
  assert_int_equal(capture_status(s2), GCAP_CAPTURE_STATUS_NONE);
  assert_ok(gcap_memset_async(f->s, p, 0x42, 64));
  assert_ok(gcap_memcpy_async(f->s, host, p, 64, GCAP_MEMCPY_DEVICE_TO_HOST));
  gcap_graph *g = end(f->s);
  const gcap_node_type want[] = {GCAP_NODE_MEMSET, GCAP_NODE_MEMCPY};
  node_types(g, want, 2);
  gcap_exec *x = instantiate(g, 0);
  memset(host, 0, sizeof host);
  launch(x, f->s);
  assert_bytes(host, 0x42, sizeof host);
  /* An eager free on a non-capturing stream does not disturb a capture either. */
  begin(f->s);
  assert_ok(gcap_mem_free_async(s2, p));
  assert_int_equal(capture_status(f->s), GCAP_CAPTURE_STATUS_ACTIVE);
  gcap_graph *empty = end(f->s);
  assert_int_equal(gcap_graph_node_count(empty), 0);
  gcap_graph_destroy(empty);
  gcap_exec_destroy(x);
  gcap_graph_destroy(g);
  assert_ok(gcap_stream_destroy(s2));
}

int main(void) {
  test_require_backend();
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_record_mem_alloc_free_in_capture, test_setup, test_teardown),
      cmocka_unit_test_setup_teardown(test_mem_context_attributes_and_trim, test_setup, test_teardown),
      cmocka_unit_test_setup_teardown(test_record_mem_alloc_bad_alloc_invalidates_capture, test_setup, test_teardown),
      cmocka_unit_test_setup_teardown(test_record_mem_alloc_sim_stats_mem_nodes_move_nothing, test_setup,
                                      test_teardown),
      cmocka_unit_test_setup_teardown(test_record_mem_alloc_kernel_uses_graph_allocation, test_setup, test_teardown),
      cmocka_unit_test_setup_teardown(test_mem_alloc_node_address_fixed_across_launches, test_setup, test_teardown),
      cmocka_unit_test_setup_teardown(test_mem_alloc_node_graph_destroyed_after_instantiate, test_setup, test_teardown),
      cmocka_unit_test_setup_teardown(test_mem_lifetime_free_in_graph_relaunch, test_setup, test_teardown),
      cmocka_unit_test_setup_teardown(test_mem_lifetime_unfreed_relaunch_refused, test_setup, test_teardown),
      cmocka_unit_test_setup_teardown(test_mem_lifetime_auto_free_on_launch, test_setup, test_teardown),
      cmocka_unit_test_setup_teardown(test_mem_trim_after_exec_destroy, test_setup, test_teardown),
      cmocka_unit_test_setup_teardown(test_mem_lifetime_free_outside_after_launch, test_setup, test_teardown),
      cmocka_unit_test_setup_teardown(test_mem_lifetime_free_in_separate_graph, test_setup, test_teardown),
      cmocka_unit_test_setup_teardown(test_mem_lifetime_free_outside_when_another_graph_frees, test_setup,
                                      test_teardown),
      cmocka_unit_test_setup_teardown(test_mem_free_node_double_free_in_graph, test_setup, test_teardown),
      cmocka_unit_test_setup_teardown(test_mem_free_node_free_non_graph_pointer, test_setup, test_teardown),
      cmocka_unit_test_setup_teardown(test_mem_free_node_free_null, test_setup, test_teardown),
      cmocka_unit_test_setup_teardown(test_mem_free_node_own_graph_frees_cannot_free_outside, test_setup,
                                      test_teardown),
      cmocka_unit_test_setup_teardown(test_mem_free_node_other_graph_cannot_free_what_own_graph_frees, test_setup,
                                      test_teardown),
      cmocka_unit_test_setup_teardown(test_mem_free_node_only_one_other_graph_frees, test_setup, test_teardown),
      cmocka_unit_test_setup_teardown(test_mem_free_node_discarded_free_node_claims_nothing, test_setup, test_teardown),
      cmocka_unit_test_setup_teardown(test_mem_restrictions_clone_refused, test_setup, test_teardown),
      cmocka_unit_test_setup_teardown(test_mem_restrictions_child_refused, test_setup, test_teardown),
      cmocka_unit_test_setup_teardown(test_mem_restrictions_remove_edge_refused, test_setup, test_teardown),
      cmocka_unit_test_setup_teardown(test_mem_restrictions_destroy_node_refused, test_setup, test_teardown),
      cmocka_unit_test_setup_teardown(test_exec_one_at_a_time, test_setup, test_teardown),
      cmocka_unit_test_setup_teardown(test_pool_create_retain_release, test_setup, test_teardown),
      cmocka_unit_test_setup_teardown(test_pool_capture_option_errors, test_setup, test_teardown),
      cmocka_unit_test_setup_teardown(test_pool_stats_each_step, test_setup, test_teardown),
      cmocka_unit_test_setup_teardown(test_pool_shared_by_two_graphs, test_setup, test_teardown),
      cmocka_unit_test_setup_teardown(test_pool_reuses_spare_block, test_setup, test_teardown),
      cmocka_unit_test_setup_teardown(test_pool_outlives_user_release, test_setup, test_teardown),
      cmocka_unit_test_setup_teardown(test_pool_released_during_capture, test_setup, test_teardown),
      cmocka_unit_test_setup_teardown(test_pool_finish_attaches_exec, test_setup, test_teardown),
      cmocka_unit_test_setup_teardown(test_pool_oom_leaves_nothing_half_made, test_setup, test_teardown),
      cmocka_unit_test(test_pool_context_destroy_frees_all),
      cmocka_unit_test_setup_teardown(test_eager_alloc_async_free_async, test_setup, test_teardown),
      cmocka_unit_test_setup_teardown(test_eager_alloc_async_not_prohibited, test_setup, test_teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
