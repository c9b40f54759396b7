/*
 * Kernels on the simulator: per-block functions (sim_block_fn), barriers (gcap_sim_syncthreads)
 * and their errors, and worker threads (threads, GCAP_SIM_THREADS), eager and in graphs.
 */
#define _POSIX_C_SOURCE 200809L /* setenv */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "common.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ indices and arguments */

static void *arg_ptr(void *const *args, int i) {
  void *v;
  memcpy(&v, args[i], sizeof v);
  return v;
}

static uint32_t arg_u32(void *const *args, int i) {
  uint32_t v;
  memcpy(&v, args[i], sizeof v);
  return v;
}

static uint32_t count3(gcap_dim3 d) { return d.x * d.y * d.z; }
static uint32_t linear3(gcap_dim3 i, gcap_dim3 d) { return (i.z * d.y + i.y) * d.x + i.x; }
static uint32_t thread_linear(const gcap_sim_thread *t) { return linear3(t->thread_idx, t->block_dim); }
static uint32_t block_linear(gcap_dim3 block_idx, gcap_dim3 grid) { return linear3(block_idx, grid); }

/* The value element i of the inputs holds (what the reductions sum). */
static uint32_t input_value(uint32_t i) { return (i * 2654435761u) % 1000u; }

/* ------------------------------------------------------------------ kernels */

/* iota(uint32_t *out, uint32_t *hits, uint32_t n): out[g] = 3g + 1, hits[g]++ for the global thread g < n. */
static void iota_fn(const gcap_sim_thread *t, void *const *args) {
  uint32_t *out = arg_ptr(args, 0), *hits = arg_ptr(args, 1), n = arg_u32(args, 2);
  uint32_t g = block_linear(t->block_idx, t->grid_dim) * count3(t->block_dim) + thread_linear(t);
  if (g >= n) return;
  out[g] = 3 * g + 1;
  hits[g]++;
}

/* The same, one call per block. */
static void iota_block_fn(const gcap_sim_block *b, void *const *args) {
  uint32_t *out = arg_ptr(args, 0), *hits = arg_ptr(args, 1), n = arg_u32(args, 2);
  uint32_t threads = count3(b->block_dim), first = block_linear(b->block_idx, b->grid_dim) * threads;
  for (uint32_t g = first; g < first + threads && g < n; g++) {
    out[g] = 3 * g + 1;
    hits[g]++;
  }
}
static const size_t iota_sizes[] = {sizeof(void *), sizeof(void *), sizeof(uint32_t)};

static atomic_uint block_calls, thread_calls;

/* both(uint32_t *blocks): the block form records the block's index and dimensions; the thread form must never run. */
static void both_block_fn(const gcap_sim_block *b, void *const *args) {
  uint32_t *rec = arg_ptr(args, 0);
  uint32_t *r = rec + 10 * block_linear(b->block_idx, b->grid_dim);
  const uint32_t v[10] = {r[0] + 1,      b->block_idx.x, b->block_idx.y,       b->block_idx.z,        b->grid_dim.x,
                          b->grid_dim.y, b->grid_dim.z,  count3(b->block_dim), b->shared_mem != NULL, 0};
  memcpy(r, v, sizeof v);
  atomic_fetch_add(&block_calls, 1);
}
static void both_thread_fn(const gcap_sim_thread *t, void *const *args) {
  (void)t;
  (void)args;
  atomic_fetch_add(&thread_calls, 1);
}
static const size_t one_ptr[] = {sizeof(void *)};

/* Smallest power of two >= n. */
static uint32_t pow2_at_least(uint32_t n) {
  uint32_t p = 1;
  while (p < n) p *= 2;
  return p;
}

/*
 * reduce(const uint32_t *in, uint64_t *partial, uint32_t n): each block sums the elements of its
 * threads, a tree in shared memory with a barrier after every step; any block size (the partner
 * of a thread past the end is skipped).
 */
static void reduce_fn(const gcap_sim_thread *t, void *const *args) {
  const uint32_t *in = arg_ptr(args, 0);
  uint64_t *partial = arg_ptr(args, 1), *sh = t->shared_mem;
  uint32_t n = arg_u32(args, 2), threads = count3(t->block_dim), tid = thread_linear(t);
  uint32_t block = block_linear(t->block_idx, t->grid_dim), g = block * threads + tid;
  sh[tid] = g < n ? in[g] : 0;
  gcap_sim_syncthreads(t);
  for (uint32_t s = pow2_at_least(threads) / 2; s > 0; s /= 2) {
    if (tid < s && tid + s < threads) sh[tid] += sh[tid + s];
    gcap_sim_syncthreads(t);
  }
  if (tid == 0) partial[block] = sh[0];
}

/* The same sums, one call per block. */
static void reduce_block_fn(const gcap_sim_block *b, void *const *args) {
  const uint32_t *in = arg_ptr(args, 0);
  uint64_t *partial = arg_ptr(args, 1);
  uint32_t n = arg_u32(args, 2), threads = count3(b->block_dim), block = block_linear(b->block_idx, b->grid_dim);
  uint64_t sum = 0;
  for (uint32_t g = block * threads; g < (block + 1) * threads && g < n; g++) sum += in[g];
  partial[block] = sum;
}
static const size_t reduce_sizes[] = {sizeof(void *), sizeof(void *), sizeof(uint32_t)};

/* partial(uint32_t bad_block): in that block only the even threads reach the barrier. */
static void partial_fn(const gcap_sim_thread *t, void *const *args) {
  if (t->block_idx.x != arg_u32(args, 0) || thread_linear(t) % 2 == 0) gcap_sim_syncthreads(t);
}
static const size_t one_u32[] = {sizeof(uint32_t)};

/* Every thread passes one barrier; then thread 0 returns while the others wait at a second one. */
static void return_early_fn(const gcap_sim_thread *t, void *const *args) {
  (void)args;
  gcap_sim_syncthreads(t);
  if (thread_linear(t) == 0) return;
  gcap_sim_syncthreads(t);
}

/* A per-block function may not wait: it runs the block's threads itself. */
static void block_sync_fn(const gcap_sim_block *b, void *const *args) {
  (void)args;
  gcap_sim_thread t = {b->grid_dim, b->block_dim, b->block_idx, {0, 0, 0}, b->shared_mem};
  gcap_sim_syncthreads(&t);
}

/* maybe_sync(uint32_t flag, uint32_t *out): calls the barrier only when flag is set; out[g] = g + flag. */
static void maybe_sync_fn(const gcap_sim_thread *t, void *const *args) {
  uint32_t flag = arg_u32(args, 0), *out = arg_ptr(args, 1);
  if (flag) gcap_sim_syncthreads(t);
  uint32_t g = block_linear(t->block_idx, t->grid_dim) * count3(t->block_dim) + thread_linear(t);
  out[g] = g + flag;
}
static const size_t u32_ptr[] = {sizeof(uint32_t), sizeof(void *)};

/*
 * shared_check(uint32_t *bad, uintptr_t *where): each thread writes its slot of shared memory,
 * waits, then checks its neighbour's slot; a block that saw another block's values counts them.
 * Thread 0 records the block's shared memory address.
 */
static void shared_check_fn(const gcap_sim_thread *t, void *const *args) {
  uint32_t *bad = arg_ptr(args, 0), threads = count3(t->block_dim), tid = thread_linear(t);
  uintptr_t *where = arg_ptr(args, 1);
  uint32_t block = block_linear(t->block_idx, t->grid_dim), *sh = t->shared_mem;
  sh[tid] = block * 10000u + tid;
  gcap_sim_syncthreads(t);
  uint32_t other = (tid + 1) % threads;
  if (sh[other] != block * 10000u + other) bad[block]++; /* the block's threads run on one OS thread */
  gcap_sim_syncthreads(t);
  if (tid == 0) where[block] = (uintptr_t)t->shared_mem;
}
static const size_t two_ptr[] = {sizeof(void *), sizeof(void *)};

static const gcap_kernel_def kernel_defs[] = {
    {.name = "iota", .sim_fn = iota_fn, .num_params = 3, .param_sizes = iota_sizes},
    {.name = "iota_block", .sim_block_fn = iota_block_fn, .num_params = 3, .param_sizes = iota_sizes},
    {.name = "both", .sim_fn = both_thread_fn, .sim_block_fn = both_block_fn, .num_params = 1, .param_sizes = one_ptr},
    {.name = "reduce", .sim_fn = reduce_fn, .num_params = 3, .param_sizes = reduce_sizes},
    {.name = "reduce_block", .sim_block_fn = reduce_block_fn, .num_params = 3, .param_sizes = reduce_sizes},
    {.name = "partial", .sim_fn = partial_fn, .num_params = 1, .param_sizes = one_u32},
    {.name = "return_early", .sim_fn = return_early_fn},
    {.name = "block_sync", .sim_block_fn = block_sync_fn},
    {.name = "maybe_sync", .sim_fn = maybe_sync_fn, .num_params = 2, .param_sizes = u32_ptr},
    {.name = "shared_check", .sim_fn = shared_check_fn, .num_params = 2, .param_sizes = two_ptr},
};

/* ------------------------------------------------------------------ fixture */

struct kfx {
  gcap_context *ctx;
  gcap_stream *s;
  gcap_module *m;
};

static void kfx_attach(struct kfx *f, gcap_context *ctx) {
  f->ctx = ctx;
  assert_ok(gcap_stream_create(f->ctx, &f->s));
  gcap_module_desc d = {NULL, 0, kernel_defs, sizeof kernel_defs / sizeof kernel_defs[0]};
  assert_ok(gcap_module_load(f->ctx, &d, &f->m));
}

/* A simulator context running kernels on `threads` worker threads, with the module loaded. */
static void kfx_open(struct kfx *f, unsigned threads) {
  gcap_sim_options so;
  gcap_sim_options_init(&so);
  so.threads = threads;
  kfx_attach(f, test_sim_context_create(&so));
}

static void kfx_close(struct kfx *f) {
  assert_ok(gcap_stream_destroy(f->s));
  gcap_context_destroy(f->ctx);
}

static gcap_status launch(struct kfx *f, const char *name, gcap_dim3 grid, gcap_dim3 block, uint32_t shared,
                          void **args) {
  return gcap_launch_kernel(f->s, test_kernel_of(f->m, name), grid, block, shared, args);
}

static gcap_sim_stats stats_of(gcap_context *ctx) {
  gcap_sim_stats st;
  assert_ok(gcap_sim_get_stats(ctx, &st));
  return st;
}

/* Device memory holding a copy of `bytes` of src (zeros for NULL). */
static void *dev_with(struct kfx *f, const void *src, size_t bytes) {
  void *d = test_dev_alloc(f->ctx, bytes);
  if (src) assert_ok(gcap_memcpy(f->ctx, d, src, bytes, GCAP_MEMCPY_HOST_TO_DEVICE));
  else assert_ok(gcap_memset_async(f->s, d, 0, bytes));
  assert_ok(gcap_stream_synchronize(f->s));
  return d;
}

/* Waits for the fixture's stream first: a synchronous copy does not (gcap's streams are non-blocking). */
static void download(struct kfx *f, void *dst, const void *dev, size_t bytes) {
  assert_ok(gcap_stream_synchronize(f->s));
  assert_ok(gcap_memcpy(f->ctx, dst, dev, bytes, GCAP_MEMCPY_DEVICE_TO_HOST));
}

static uint32_t *inputs(uint32_t n) {
  uint32_t *in = malloc(n * sizeof *in);
  assert_non_null(in);
  for (uint32_t i = 0; i < n; i++) in[i] = input_value(i);
  return in;
}

/* What reduce computes for block b of `threads` threads over n inputs. */
static uint64_t expected_partial(uint32_t b, uint32_t threads, uint32_t n) {
  uint64_t sum = 0;
  for (uint32_t g = b * threads; g < (b + 1) * threads && g < n; g++) sum += input_value(g);
  return sum;
}

/* ------------------------------------------------------------------ per-block form */

static void test_block_form_once_per_block_and_wins(void **state) {
  (void)state;
  struct kfx f;
  kfx_open(&f, 1);
  const gcap_dim3 grid = GCAP_DIM3(3, 2, 2), block = GCAP_DIM3(4, 2, 1);
  uint32_t *rec = dev_with(&f, NULL, 12 * 10 * sizeof(uint32_t));
  void *args[] = {&rec};
  atomic_store(&block_calls, 0);
  atomic_store(&thread_calls, 0);
  assert_ok(launch(&f, "both", grid, block, 16, args));
  assert_int_equal(atomic_load(&block_calls), 12);
  assert_int_equal(atomic_load(&thread_calls), 0);
  uint32_t got[12][10];
  download(&f, got, rec, sizeof got);
  for (uint32_t z = 0, b = 0; z < 2; z++)
    for (uint32_t y = 0; y < 2; y++)
      for (uint32_t x = 0; x < 3; x++, b++) {
        const uint32_t want[10] = {1, x, y, z, 3, 2, 2, 8, 1, 0};
        assert_memory_equal(got[b], want, sizeof want);
      }
  gcap_sim_stats st = stats_of(f.ctx);
  assert_int_equal(st.kernels_executed, 1);
  assert_int_equal(st.kernels_stubbed, 0);
  assert_int_equal(st.barriers_passed, 0);
  kfx_close(&f);
}

/* iota as per-thread and per-block functions over a 3-D grid of 3-D blocks: the same values, each element once. */
static void test_block_form_equals_thread_form(void **state) {
  (void)state;
  struct kfx f;
  kfx_open(&f, 1);
  const gcap_dim3 grid = GCAP_DIM3(5, 3, 2), block = GCAP_DIM3(4, 3, 2);
  const uint32_t n = 30 * 24 - 7; /* the last block is partly past the end */
  uint32_t *out[2], *hits[2];
  const char *names[2] = {"iota", "iota_block"};
  for (int k = 0; k < 2; k++) {
    out[k] = dev_with(&f, NULL, 720 * sizeof(uint32_t));
    hits[k] = dev_with(&f, NULL, 720 * sizeof(uint32_t));
    uint32_t nn = n;
    void *args[] = {&out[k], &hits[k], &nn};
    assert_ok(launch(&f, names[k], grid, block, 0, args));
  }
  static uint32_t o[2][720], h[2][720];
  for (int k = 0; k < 2; k++) {
    download(&f, o[k], out[k], sizeof o[k]);
    download(&f, h[k], hits[k], sizeof h[k]);
  }
  assert_memory_equal(o[0], o[1], sizeof o[0]);
  assert_memory_equal(h[0], h[1], sizeof h[0]);
  for (uint32_t g = 0; g < 720; g++) {
    assert_int_equal(o[0][g], g < n ? 3 * g + 1 : 0);
    assert_int_equal(h[0][g], g < n ? 1 : 0);
  }
  kfx_close(&f);
}

/* ------------------------------------------------------------------ barriers */

/* Launches reduce over n inputs with `block` threads per block on enough blocks of `grid`'s shape (x grows). */
static void check_reduction(struct kfx *f, gcap_dim3 grid, gcap_dim3 block, uint32_t n) {
  uint32_t threads = count3(block), blocks = count3(grid);
  assert_true((uint64_t)blocks * threads >= n);
  uint32_t *in = inputs(n);
  uint32_t *din = dev_with(f, in, n * sizeof *in);
  uint64_t *dpart = dev_with(f, NULL, blocks * sizeof(uint64_t));
  void *args[] = {&din, &dpart, &n};
  gcap_sim_stats before = stats_of(f->ctx);
  assert_ok(launch(f, "reduce", grid, block, threads * (uint32_t)sizeof(uint64_t), args));
  uint64_t *part = malloc(blocks * sizeof *part);
  assert_non_null(part);
  download(f, part, dpart, blocks * sizeof *part);
  uint64_t total = 0, want = 0;
  for (uint32_t b = 0; b < blocks; b++) {
    assert_int_equal(part[b], expected_partial(b, threads, n));
    total += part[b];
  }
  for (uint32_t i = 0; i < n; i++) want += in[i];
  assert_int_equal(total, want);
  /* One barrier after the loads and one per step of the tree, in every block. */
  uint32_t steps = 0;
  for (uint32_t s = pow2_at_least(threads) / 2; s > 0; s /= 2) steps++;
  gcap_sim_stats after = stats_of(f->ctx);
  assert_int_equal(after.barriers_passed - before.barriers_passed, (uint64_t)blocks * (1 + steps));
  assert_int_equal(after.kernels_executed - before.kernels_executed, 1);
  free(part);
  free(in);
  assert_ok(gcap_mem_free(f->ctx, din));
  assert_ok(gcap_mem_free(f->ctx, dpart));
}

static void test_reduction_exact_sums(void **state) {
  (void)state;
  struct kfx f;
  kfx_open(&f, 1);
  static const uint32_t sizes[] = {1, 2, 3, 7, 30, 64, 100, 128, 255, 256, 1000, 1024};
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
    uint32_t t = sizes[i];
    check_reduction(&f, GCAP_DIM3(1, 1, 1), GCAP_DIM3(t, 1, 1), t);
    check_reduction(&f, GCAP_DIM3(7, 1, 1), GCAP_DIM3(t, 1, 1), 7 * t - t / 2);
  }
  check_reduction(&f, GCAP_DIM3(40, 1, 1), GCAP_DIM3(256, 1, 1), 40 * 256);
  /* 3-D blocks (a power of two, and not) in a 3-D grid. */
  check_reduction(&f, GCAP_DIM3(3, 2, 2), GCAP_DIM3(4, 4, 4), 12 * 64 - 5);
  check_reduction(&f, GCAP_DIM3(3, 2, 2), GCAP_DIM3(5, 3, 2), 12 * 30);
  check_reduction(&f, GCAP_DIM3(2, 2, 3), GCAP_DIM3(8, 8, 16), 12 * 1024 - 1000);
  kfx_close(&f);
}

/* The per-block form computes the reduction's partials too. */
static void test_reduction_block_form_equals(void **state) {
  (void)state;
  struct kfx f;
  kfx_open(&f, 1);
  uint32_t n = 50 * 96 - 33, blocks = 50;
  uint32_t *in = inputs(n);
  uint32_t *din = dev_with(&f, in, n * sizeof *in);
  uint64_t *dp[2];
  const char *names[2] = {"reduce", "reduce_block"};
  for (int k = 0; k < 2; k++) {
    dp[k] = dev_with(&f, NULL, blocks * sizeof(uint64_t));
    void *args[] = {&din, &dp[k], &n};
    assert_ok(launch(&f, names[k], GCAP_DIM3(blocks, 1, 1), GCAP_DIM3(96, 1, 1), 96 * 8, args));
  }
  uint64_t a[50], b[50];
  download(&f, a, dp[0], sizeof a);
  download(&f, b, dp[1], sizeof b);
  assert_memory_equal(a, b, sizeof a);
  free(in);
  kfx_close(&f);
}

/* Each block sees its own shared memory, the same for all of its threads. */
static void check_shared_separate(unsigned threads) {
  struct kfx f;
  kfx_open(&f, threads);
  const uint32_t blocks = 64;
  uint32_t *bad = dev_with(&f, NULL, blocks * sizeof(uint32_t));
  uintptr_t *where = dev_with(&f, NULL, blocks * sizeof(uintptr_t));
  void *args[] = {&bad, &where};
  assert_ok(launch(&f, "shared_check", GCAP_DIM3(blocks, 1, 1), GCAP_DIM3(128, 1, 1), 128 * 4, args));
  uint32_t b[64];
  uintptr_t w[64];
  download(&f, b, bad, sizeof b);
  download(&f, w, where, sizeof w);
  for (uint32_t i = 0; i < blocks; i++) {
    assert_int_equal(b[i], 0);
    assert_true(w[i] != 0);
  }
  kfx_close(&f);
}

static void test_shared_memory_per_block(void **state) {
  (void)state;
  check_shared_separate(1);
  check_shared_separate(4);
}

static void expect_partial_fails(struct kfx *f, uint32_t bad_block, unsigned grid_x) {
  void *args[] = {&bad_block};
  assert_status(launch(f, "partial", GCAP_DIM3(grid_x, 1, 1), GCAP_DIM3(256, 1, 1), 0, args), GCAP_ERROR_BACKEND);
  char want[200];
  snprintf(want, sizeof want,
           "gcap_launch_kernel: kernel \"partial\" block (%u,0,0): 128 of 256 threads reached gcap_sim_syncthreads "
           "while 128 returned (a barrier every thread of the block must reach)",
           bad_block);
  assert_string_equal(gcap_last_error_message(), want);
}

/* A barrier that half of a block's threads skip fails the launch; the context keeps working. */
static void test_partial_barrier_fails(void **state) {
  (void)state;
  struct kfx f;
  kfx_open(&f, 1);
  expect_partial_fails(&f, 3, 6);
  gcap_sim_stats st = stats_of(f.ctx);
  assert_int_equal(st.barriers_passed, 3); /* blocks 0 to 2 passed theirs; block 4 and 5 never ran */
  expect_partial_fails(&f, 0, 1);
  /* The next launches work: the same kernel, and another with barriers. */
  uint32_t none = 99;
  void *args[] = {&none};
  assert_ok(launch(&f, "partial", GCAP_DIM3(4, 1, 1), GCAP_DIM3(256, 1, 1), 0, args));
  test_assert_message_empty();
  check_reduction(&f, GCAP_DIM3(5, 1, 1), GCAP_DIM3(64, 1, 1), 300);
  kfx_close(&f);
}

static void test_return_while_others_wait_fails(void **state) {
  (void)state;
  struct kfx f;
  kfx_open(&f, 1);
  assert_status(launch(&f, "return_early", GCAP_DIM3(2, 1, 1), GCAP_DIM3(8, 4, 1), 0, NULL), GCAP_ERROR_BACKEND);
  test_assert_message_contains(
      "kernel \"return_early\" block (0,0,0): 31 of 32 threads reached gcap_sim_syncthreads while 1 returned");
  assert_int_equal(stats_of(f.ctx).barriers_passed, 1);
  /* One thread per block: it never waits for anybody. */
  assert_ok(launch(&f, "return_early", GCAP_DIM3(2, 1, 1), GCAP_DIM3(1, 1, 1), 0, NULL));
  assert_int_equal(stats_of(f.ctx).barriers_passed, 1 + 2 * 1);
  check_reduction(&f, GCAP_DIM3(3, 1, 1), GCAP_DIM3(33, 1, 1), 99);
  kfx_close(&f);
}

static void test_barrier_in_block_form_fails(void **state) {
  (void)state;
  struct kfx f;
  kfx_open(&f, 1);
  assert_status(launch(&f, "block_sync", GCAP_DIM3(2, 1, 1), GCAP_DIM3(32, 1, 1), 0, NULL), GCAP_ERROR_BACKEND);
  test_assert_message_contains("kernel \"block_sync\" block (0,0,0): its per-block function (sim_block_fn) called "
                               "gcap_sim_syncthreads");
  kfx_close(&f);
}

/*
 * A function whose first launch never reached the barrier runs as a plain loop: a later launch
 * that calls it fails, and the launches after that run as fibers.
 */
static void test_barrier_first_seen_late(void **state) {
  (void)state;
  struct kfx f;
  kfx_open(&f, 1);
  uint32_t *out = dev_with(&f, NULL, 4 * 64 * sizeof(uint32_t));
  uint32_t flag = 0;
  void *args[] = {&flag, &out};
  assert_ok(launch(&f, "maybe_sync", GCAP_DIM3(4, 1, 1), GCAP_DIM3(64, 1, 1), 0, args));
  flag = 1;
  assert_status(launch(&f, "maybe_sync", GCAP_DIM3(4, 1, 1), GCAP_DIM3(64, 1, 1), 0, args), GCAP_ERROR_BACKEND);
  test_assert_message_contains("kernel \"maybe_sync\" block (0,0,0): thread (0,0,0) called gcap_sim_syncthreads where "
                               "the block's threads run one after another");
  assert_ok(launch(&f, "maybe_sync", GCAP_DIM3(4, 1, 1), GCAP_DIM3(64, 1, 1), 0, args));
  uint32_t got[256];
  download(&f, got, out, sizeof got);
  for (uint32_t g = 0; g < 256; g++) assert_int_equal(got[g], g + 1);
  assert_int_equal(stats_of(f.ctx).barriers_passed, 4);
  kfx_close(&f);
}

static void test_syncthreads_from_host(void **state) {
  (void)state;
  struct kfx f;
  kfx_open(&f, 1);
  assert_status(launch(&f, "block_sync", GCAP_DIM3(1, 1, 1), GCAP_DIM3(1, 1, 1), 0, NULL), GCAP_ERROR_BACKEND);
  char before[512];
  snprintf(before, sizeof before, "%s", gcap_last_error_message());
  gcap_sim_thread t = {GCAP_DIM3(1, 1, 1), GCAP_DIM3(2, 1, 1), GCAP_DIM3(0, 0, 0), GCAP_DIM3(1, 0, 0), NULL};
  gcap_sim_syncthreads(&t);
  gcap_sim_syncthreads(NULL);
  assert_string_equal(gcap_last_error_message(), before);
  assert_int_equal(stats_of(f.ctx).barriers_passed, 0);
  kfx_close(&f);
}

/* ------------------------------------------------------------------ worker threads */

/* Everything the comparisons below compute: iota both ways, reduce both ways, over a 3-D grid. */
struct results {
  uint32_t out[2][6000], hits[2][6000];
  uint64_t part[2][250];
  gcap_sim_stats stats;
};

static void run_all(unsigned threads, struct results *r) {
  struct kfx f;
  kfx_open(&f, threads);
  const uint32_t n = 6000 - 17;
  const gcap_dim3 grid = GCAP_DIM3(5, 5, 10), block = GCAP_DIM3(6, 2, 2); /* 250 blocks of 24 */
  const char *iotas[2] = {"iota", "iota_block"}, *reduces[2] = {"reduce", "reduce_block"};
  uint32_t *in = inputs(n);
  uint32_t *din = dev_with(&f, in, n * sizeof *in);
  for (int k = 0; k < 2; k++) {
    uint32_t *out = dev_with(&f, NULL, sizeof r->out[k]), *hits = dev_with(&f, NULL, sizeof r->hits[k]);
    uint64_t *part = dev_with(&f, NULL, sizeof r->part[k]);
    uint32_t nn = n;
    void *iota_args[] = {&out, &hits, &nn}, *reduce_args[] = {&din, &part, &nn};
    assert_ok(launch(&f, iotas[k], grid, block, 0, iota_args));
    assert_ok(launch(&f, reduces[k], grid, block, 24 * 8, reduce_args));
    download(&f, r->out[k], out, sizeof r->out[k]);
    download(&f, r->hits[k], hits, sizeof r->hits[k]);
    download(&f, r->part[k], part, sizeof r->part[k]);
  }
  r->stats = stats_of(f.ctx);
  free(in);
  kfx_close(&f);
}

static void test_threads_same_results(void **state) {
  (void)state;
  static struct results one, many;
  run_all(1, &one);
  assert_memory_equal(one.out[0], one.out[1], sizeof one.out[0]);
  assert_memory_equal(one.part[0], one.part[1], sizeof one.part[0]);
  assert_int_equal(one.stats.blocks_parallel, 0);
  assert_int_equal(one.stats.kernels_executed, 4);
  assert_int_equal(one.stats.barriers_passed, 250 * (1 + 5));
  static const unsigned counts[] = {2, 4};
  for (size_t i = 0; i < 2; i++) {
    run_all(counts[i], &many);
    assert_memory_equal(one.out, many.out, sizeof one.out);
    assert_memory_equal(one.hits, many.hits, sizeof one.hits);
    assert_memory_equal(one.part, many.part, sizeof one.part);
    assert_int_equal(many.stats.blocks_parallel, 4 * 250);
    assert_int_equal(many.stats.kernels_executed, 4);
    assert_int_equal(many.stats.barriers_passed, one.stats.barriers_passed);
  }
}

/* With threads, one block runs on the calling thread alone; a failing block fails the launch all the same. */
static void test_threads_single_block_and_errors(void **state) {
  (void)state;
  struct kfx f;
  kfx_open(&f, 4);
  check_reduction(&f, GCAP_DIM3(1, 1, 1), GCAP_DIM3(100, 1, 1), 100);
  assert_int_equal(stats_of(f.ctx).blocks_parallel, 0);
  check_reduction(&f, GCAP_DIM3(9, 1, 1), GCAP_DIM3(100, 1, 1), 900);
  assert_int_equal(stats_of(f.ctx).blocks_parallel, 9);
  expect_partial_fails(&f, 37, 64);
  expect_partial_fails(&f, 0, 64);
  check_shared_separate(3);
  check_reduction(&f, GCAP_DIM3(64, 1, 1), GCAP_DIM3(128, 1, 1), 64 * 128);
  kfx_close(&f);
}

static gcap_status create_from_environment(gcap_context **ctx) {
  gcap_context_options o;
  gcap_context_options_init(&o);
  o.backend = GCAP_BACKEND_SIM;
  *ctx = NULL;
  return gcap_context_create(&o, ctx);
}

static void test_threads_from_environment(void **state) {
  (void)state;
  setenv("GCAP_SIM_THREADS", "3", 1);
  gcap_context *ctx = NULL;
  assert_ok(create_from_environment(&ctx));
  unsetenv("GCAP_SIM_THREADS");
  struct kfx f;
  kfx_attach(&f, ctx);
  check_reduction(&f, GCAP_DIM3(30, 1, 1), GCAP_DIM3(64, 1, 1), 30 * 64);
  assert_int_equal(stats_of(f.ctx).blocks_parallel, 30);
  kfx_close(&f);
  static const char *const bad[] = {"x", "1000", "-1", "257", "2x"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    setenv("GCAP_SIM_THREADS", bad[i], 1);
    ctx = (gcap_context *)&ctx;
    assert_status(create_from_environment(&ctx), GCAP_ERROR_INVALID_VALUE);
    assert_null(ctx);
    test_assert_message_contains("GCAP_SIM_THREADS");
  }
  unsetenv("GCAP_SIM_THREADS");
}

/* ------------------------------------------------------------------ graphs */

/* The kernels captured into a graph and launched: the same results on one thread and on four. */
static void graph_results(unsigned threads, uint64_t part[100], uint32_t out[3200]) {
  struct kfx f;
  kfx_open(&f, threads);
  uint32_t n = 3200 - 50;
  uint32_t *in = inputs(n);
  uint32_t *din = dev_with(&f, in, n * sizeof *in);
  uint64_t *dpart = test_dev_alloc(f.ctx, 100 * sizeof(uint64_t));
  uint32_t *dout = test_dev_alloc(f.ctx, 3200 * sizeof(uint32_t)), *dhits = test_dev_alloc(f.ctx, 3200 * 4);
  void *reduce_args[] = {&din, &dpart, &n}, *iota_args[] = {&dout, &dhits, &n};
  gcap_graph *g = NULL;
  assert_ok(gcap_stream_begin_capture(f.s, GCAP_CAPTURE_MODE_GLOBAL));
  assert_ok(gcap_memset_async(f.s, dpart, 0, 100 * sizeof(uint64_t)));
  assert_ok(gcap_memset_async(f.s, dhits, 0, 3200 * 4));
  assert_ok(gcap_memset_async(f.s, dout, 0, 3200 * 4));
  assert_ok(launch(&f, "reduce", GCAP_DIM3(100, 1, 1), GCAP_DIM3(32, 1, 1), 32 * 8, reduce_args));
  assert_ok(launch(&f, "iota_block", GCAP_DIM3(50, 1, 1), GCAP_DIM3(64, 1, 1), 0, iota_args));
  assert_ok(gcap_stream_end_capture(f.s, &g));
  gcap_exec *x = NULL;
  assert_ok(gcap_graph_instantiate(g, 0, &x));
  for (int i = 0; i < 3; i++) assert_ok(gcap_exec_launch(x, f.s));
  assert_ok(gcap_stream_synchronize(f.s));
  download(&f, part, dpart, 100 * sizeof(uint64_t));
  download(&f, out, dout, 3200 * sizeof(uint32_t));
  gcap_sim_stats st = stats_of(f.ctx);
  assert_int_equal(st.graph_launches, 3);
  assert_int_equal(st.kernels_executed, 6);
  assert_int_equal(st.barriers_passed, 3 * 100 * (1 + 5));
  assert_int_equal(st.blocks_parallel, threads >= 2 ? 3 * (100 + 50) : 0);
  gcap_exec_destroy(x);
  gcap_graph_destroy(g);
  free(in);
  kfx_close(&f);
}

static void test_graph_launches(void **state) {
  (void)state;
  static uint64_t part[2][100];
  static uint32_t out[2][3200];
  graph_results(1, part[0], out[0]);
  graph_results(4, part[1], out[1]);
  assert_memory_equal(part[0], part[1], sizeof part[0]);
  assert_memory_equal(out[0], out[1], sizeof out[0]);
  for (uint32_t b = 0; b < 100; b++) assert_int_equal(part[0][b], expected_partial(b, 32, 3200 - 50));
  for (uint32_t g = 0; g < 3200 - 50; g++) assert_int_equal(out[0][g], 3 * g + 1);
}

/* A graph whose kernel misuses the barrier fails its launch; the executable launches again afterwards. */
static void test_graph_launch_barrier_error(void **state) {
  (void)state;
  struct kfx f;
  kfx_open(&f, 2);
  gcap_graph *g = NULL;
  uint32_t bad = 1;
  void *args[] = {&bad};
  assert_ok(gcap_stream_begin_capture(f.s, GCAP_CAPTURE_MODE_GLOBAL));
  assert_ok(launch(&f, "partial", GCAP_DIM3(8, 1, 1), GCAP_DIM3(256, 1, 1), 0, args));
  assert_ok(gcap_stream_end_capture(f.s, &g));
  gcap_exec *x = NULL;
  assert_ok(gcap_graph_instantiate(g, 0, &x));
  for (int i = 0; i < 2; i++) {
    assert_status(gcap_exec_launch(x, f.s), GCAP_ERROR_BACKEND);
    test_assert_message_contains("gcap_exec_launch: kernel \"partial\" block (1,0,0): 128 of 256 threads reached");
  }
  gcap_exec_destroy(x);
  gcap_graph_destroy(g);
  check_reduction(&f, GCAP_DIM3(8, 1, 1), GCAP_DIM3(256, 1, 1), 2048);
  kfx_close(&f);
}

int main(void) {
  if (!test_on_sim()) {
    fprintf(stderr, "skipped: these are the simulator's own kernels\n");
    return 77;
  }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_block_form_once_per_block_and_wins),
      cmocka_unit_test(test_block_form_equals_thread_form),
      cmocka_unit_test(test_reduction_exact_sums),
      cmocka_unit_test(test_reduction_block_form_equals),
      cmocka_unit_test(test_shared_memory_per_block),
      cmocka_unit_test(test_partial_barrier_fails),
      cmocka_unit_test(test_return_while_others_wait_fails),
      cmocka_unit_test(test_barrier_in_block_form_fails),
      cmocka_unit_test(test_barrier_first_seen_late),
      cmocka_unit_test(test_syncthreads_from_host),
      cmocka_unit_test(test_threads_same_results),
      cmocka_unit_test(test_threads_single_block_and_errors),
      cmocka_unit_test(test_threads_from_environment),
      cmocka_unit_test(test_graph_launches),
      cmocka_unit_test(test_graph_launch_barrier_error),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
