/*
 * The pattern corpus (tests/ptx/patterns, see the README there): kernels written in the ways
 * real CUDA code is written (cooperative groups, warp-aggregated atomics, warps and lanes that
 * wait on each other, transformer kernels, shared-memory tiles), each compiled by nvcc for
 * sm_75, sm_80 and sm_90. Every kernel runs on each architecture's PTX with every check off and
 * with every check on, in IMMEDIATE and in DEFERRED mode, against a C reference: integers
 * exactly, floats within a tolerance for their order of operations. One kernel holds a planted
 * bug (a histogram whose shared bins are never zeroed), which must be found.
 */
#define _POSIX_C_SOURCE 200809L

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "ptx_util.h"

#define ARGS(...) ((void *[]){__VA_ARGS__})
#define COUNT(a) (sizeof(a) / sizeof((a)[0]))
#define DIM1(x) GCAP_DIM3((x), 1, 1)

/*
 * PENDING: kernels that need simulator features not there yet; their tests skip. Empty this as
 * the features land (GCAP_TEST_PENDING=1 in the environment runs them anyway).
 */
static const char *const pending[] = {
    NULL, /* none: every kernel runs */
};

/*
 * Kernels whose threads hand data over through a barrier of their own (atomics and acquire
 * loads), which the race check does not see (it orders shared memory by bar.sync and
 * __syncwarp only): "all" checks leave it out for them. Cooperative groups' tiles of several
 * warps meet that way.
 */
static const char *const own_barriers[] = {"cg_multiwarp_sum"};

static bool has_own_barrier(const char *kernel) {
  for (size_t i = 0; i < COUNT(own_barriers); i++)
    if (strcmp(own_barriers[i], kernel) == 0) return true;
  return false;
}

static bool is_pending(const char *kernel) {
  for (size_t i = 0; i < COUNT(pending); i++)
    if (pending[i] != NULL && strcmp(pending[i], kernel) == 0) return true;
  return false;
}

/* One run of a kernel: its context (checks, mode), stream and module, and a label for messages. */
struct run {
  struct ptx_fixture f;
  const char *kernel;
  unsigned checks;
  char label[128];
};

typedef void (*case_fn)(struct run *r);

enum { SM75 = 1, SM80 = 2, SM90 = 4, ALL_SM = SM75 | SM80 | SM90 };

struct pattern {
  const char *file; /* tests/ptx/patterns/<file>.sm_XX.ptx */
  const char *kernel;
  unsigned archs;
  case_fn fn;
};

static gcap_context *make_context(unsigned checks, bool deferred) {
  if (!test_on_sim()) return test_context_create();
  gcap_sim_options so;
  gcap_sim_options_init(&so);
  so.kernels = GCAP_SIM_KERNELS_PTX;
  so.checks = checks;
  so.exec = deferred ? GCAP_SIM_EXEC_DEFERRED : GCAP_SIM_EXEC_IMMEDIATE;
  so.threads = 1;
  so.kernel_timeout_ms = 5000; /* a kernel that hangs fails in seconds */
  return test_sim_context_create(&so);
}

/* Launches r's kernel and waits for it (DEFERRED runs it in the wait); returns the first failure. */
static gcap_status launch(struct run *r, gcap_dim3 grid, gcap_dim3 block, uint32_t shared, void **args) {
  gcap_status st = ptx_launch(&r->f, r->kernel, grid, block, shared, args);
  if (st == GCAP_SUCCESS) st = gcap_stream_synchronize(r->f.s);
  return st;
}

static void run_ok(struct run *r, gcap_dim3 grid, gcap_dim3 block, uint32_t shared, void **args) {
  gcap_status st = launch(r, grid, block, shared, args);
  if (st != GCAP_SUCCESS) {
    print_error("%s: %s (%s)\n", r->label, gcap_status_name(st), gcap_last_error_message());
    fail();
  }
}

static void *dev(struct run *r, const void *host, size_t bytes) { return ptx_dev(r->f.ctx, host, bytes); }
static void get(struct run *r, void *host, const void *d, size_t bytes) { ptx_get(r->f.ctx, host, d, bytes); }

static void *xcalloc(size_t n, size_t size) {
  void *p = calloc(n, size);
  assert_non_null(p);
  return p;
}

/* n ints in [lo, lo + span), from seed. */
static int *rand_ints(size_t n, int lo, int span, uint64_t seed) {
  int *v = xcalloc(n, sizeof *v);
  uint64_t st = seed;
  for (size_t i = 0; i < n; i++) v[i] = lo + (int)(ptx_rand32(&st) % (uint32_t)span);
  return v;
}

/* n floats in [lo, hi), from seed. */
static float *rand_floats(size_t n, float lo, float hi, uint64_t seed) {
  float *v = xcalloc(n, sizeof *v);
  uint64_t st = seed;
  for (size_t i = 0; i < n; i++) v[i] = lo + (hi - lo) * (float)(ptx_rand32(&st) >> 8) / 16777216.0f;
  return v;
}

static int cmp_int(const void *a, const void *b) {
  int x = *(const int *)a, y = *(const int *)b;
  return (x > y) - (x < y);
}

/* Whether got[0..n) and want[0..n) hold the same values in any order (sorts both). */
static bool same_multiset(int *got, int *want, size_t n) {
  qsort(got, n, sizeof *got, cmp_int);
  qsort(want, n, sizeof *want, cmp_int);
  return memcmp(got, want, n * sizeof *got) == 0;
}

static void expect_int(struct run *r, const char *what, size_t i, long long got, long long want) {
  ptx_expect(got == want, r->label, what, i, "got %lld, expected %lld", got, want);
}

static void expect_near(struct run *r, const char *what, size_t i, double got, double want, double tol) {
  ptx_expect(fabs(got - want) <= tol, r->label, what, i, "got %.9g, expected %.9g (tolerance %.3g)", got, want, tol);
}

/* ====================================================== warp votes and shuffles */

static void run_partial_warp_scan(struct run *r) {
  enum { N = 300, B = 120, G = 3 };
  int *in = rand_ints(N, -50, 100, 1), out[N], total[G];
  void *din = dev(r, in, sizeof(int) * N), *dout = dev(r, NULL, sizeof out), *dtot = dev(r, NULL, sizeof total);
  int n = N;
  run_ok(r, DIM1(G), DIM1(B), 0, ARGS(&din, &dout, &dtot, &n));
  get(r, out, dout, sizeof out);
  get(r, total, dtot, sizeof total);
  for (int b = 0; b < G; b++) {
    int s = 0;
    for (int t = 0; t < B; t++) {
      int i = b * B + t;
      if (i < N) {
        s += in[i];
        expect_int(r, "inclusive scan", (size_t)i, out[i], s);
      }
    }
    expect_int(r, "block total", (size_t)b, total[b], s);
  }
  free(in);
}

static void run_vote_partial(struct run *r) {
  enum { N = 230, B = 120, G = 2 };
  int *in = rand_ints(N, -5, 21, 2), out[4 * N];
  for (int i = 0; i < 64; i++) in[i] = i + 1; /* whole warps of positive values: all() holds */
  void *din = dev(r, in, sizeof(int) * N), *dout = dev(r, NULL, sizeof out);
  int n = N;
  run_ok(r, DIM1(G), DIM1(B), 0, ARGS(&din, &dout, &n));
  get(r, out, dout, sizeof out);
  for (int i = 0; i < N; i++) {
    int b = i / B, t = i % B, w0 = t & ~31; /* the warp's first thread in the block */
    unsigned ballot = 0, exists = 0;
    for (int l = 0; l < 32 && w0 + l < B; l++) {
      int j = b * B + w0 + l;
      exists |= 1u << l;
      if (j < N && in[j] > 0) ballot |= 1u << l;
    }
    int first = b * B + w0 < N ? in[b * B + w0] : -1;
    expect_int(r, "ballot", (size_t)i, (unsigned)out[4 * i], ballot);
    expect_int(r, "any", (size_t)i, out[4 * i + 1], ballot != 0);
    expect_int(r, "all", (size_t)i, out[4 * i + 2], ballot == exists);
    expect_int(r, "lane 0's value", (size_t)i, out[4 * i + 3], first);
  }
  free(in);
}

static bool is_odd(int v) { return v & 1; }
static bool is_positive(int v) { return v > 0; }

/*
 * A stream compaction: n inputs drawn from [lo, lo + span) with `seed`, the kernel keeps those `keep`
 * accepts, in any order, and counts them.
 */
static void check_filter(struct run *r, int n, int lo, int span, unsigned seed, unsigned block, bool (*keep)(int),
                         const char *what) {
  int *in = rand_ints((size_t)n, lo, span, seed), *out = xcalloc((size_t)n, sizeof(int));
  int *want = xcalloc((size_t)n, sizeof(int)), count = 0;
  size_t k = 0;
  for (int i = 0; i < n; i++)
    if (keep(in[i])) want[k++] = in[i];
  void *din = dev(r, in, sizeof(int) * (size_t)n), *dout = dev(r, NULL, sizeof(int) * (size_t)n);
  void *dcount = dev(r, NULL, sizeof(int));
  run_ok(r, DIM1(3), DIM1(block), 0, ARGS(&din, &dout, &dcount, &n));
  get(r, &count, dcount, sizeof count);
  get(r, out, dout, sizeof(int) * (size_t)n);
  expect_int(r, "count", 0, count, (long long)k);
  ptx_expect(same_multiset(out, want, k), r->label, "kept values", 0, "%s", what);
  free(in);
  free(out);
  free(want);
}

static void run_ballot_compact(struct run *r) { check_filter(r, 1000, 0, 1000, 3, 64, is_odd, "not the odd inputs"); }

static void run_match_count(struct run *r) {
  enum { N = 150, K = 16 };
  int *keys = rand_ints(N, 0, K, 4), counts[K], want[K] = {0};
  for (int i = 0; i < N; i++) want[keys[i]]++;
  void *dk = dev(r, keys, sizeof(int) * N), *dc = dev(r, NULL, sizeof counts);
  int n = N;
  run_ok(r, DIM1(3), DIM1(64), 0, ARGS(&dk, &dc, &n));
  get(r, counts, dc, sizeof counts);
  for (int k = 0; k < K; k++) expect_int(r, "count of key", (size_t)k, counts[k], want[k]);
  free(keys);
}

static void run_agg_filter(struct run *r) {
  check_filter(r, 200, -30, 60, 5, 96, is_positive, "not the positive inputs");
}

static void run_labeled_filter(struct run *r) {
  enum { N = 200, CAP = N };
  int *in = rand_ints(N, -10, 50, 6), *out = xcalloc(4 * CAP, sizeof(int)), *want = xcalloc(CAP, sizeof(int));
  int counts[4];
  void *din = dev(r, in, sizeof(int) * N), *dout = dev(r, NULL, sizeof(int) * 4 * CAP);
  void *dc = dev(r, NULL, sizeof counts);
  int n = N, cap = CAP;
  run_ok(r, DIM1(4), DIM1(64), 0, ARGS(&din, &dout, &dc, &cap, &n));
  get(r, counts, dc, sizeof counts);
  get(r, out, dout, sizeof(int) * 4 * CAP);
  for (int key = 0; key < 4; key++) {
    size_t k = 0;
    for (int i = 0; i < N; i++)
      if (in[i] >= 0 && in[i] % 4 == key) want[k++] = in[i];
    expect_int(r, "bucket count", (size_t)key, counts[key], (long long)k);
    ptx_expect(same_multiset(out + key * CAP, want, k), r->label, "bucket values", (size_t)key,
               "not the inputs of that key");
  }
  free(in);
  free(out);
  free(want);
}

/* ====================================================== cooperative groups */

static void run_cg_tile16_sum(struct run *r) {
  enum { N = 150, B = 96, G = 2, TILES = G * B / 16 };
  int *in = rand_ints(N, -1000, 2000, 7), out[TILES];
  void *din = dev(r, in, sizeof(int) * N), *dout = dev(r, NULL, sizeof out);
  int n = N;
  run_ok(r, DIM1(G), DIM1(B), 0, ARGS(&din, &dout, &n));
  get(r, out, dout, sizeof out);
  for (int t = 0; t < TILES; t++) {
    int s = 0;
    for (int i = 16 * t; i < 16 * t + 16 && i < N; i++) s += in[i];
    expect_int(r, "tile sum", (size_t)t, out[t], s);
  }
  free(in);
}

static void run_cg_block_sum(struct run *r) {
  enum { N = 300, B = 128, G = 3 };
  float *in = rand_floats(N, -1.0f, 1.0f, 8), out[2 * G];
  void *din = dev(r, in, sizeof(float) * N), *dout = dev(r, NULL, sizeof out);
  int n = N;
  run_ok(r, DIM1(G), DIM1(B), 0, ARGS(&din, &dout, &n));
  get(r, out, dout, sizeof out);
  for (int b = 0; b < G; b++) {
    double s = 0, mag = 0;
    float m = -1e30f;
    for (int i = b * B; i < (b + 1) * B && i < N; i++) {
      s += in[i];
      mag += fabs(in[i]);
      if (in[i] > m) m = in[i];
    }
    expect_near(r, "block sum", (size_t)b, out[2 * b], s, 1e-6 * mag + 1e-6);
    ptx_expect(ptx_same_f32(out[2 * b + 1], m), r->label, "block max", (size_t)b, "got %.9g, expected %.9g",
               out[2 * b + 1], m);
  }
  free(in);
}

static void run_cg_multiwarp_sum(struct run *r) {
  enum { N = 500, B = 256, G = 2, TILES = G * B / 128 };
  int *in = rand_ints(N, -1000, 2000, 9), out[TILES], *scaled = xcalloc(N, sizeof(int));
  void *din = dev(r, in, sizeof(int) * N), *dout = dev(r, NULL, sizeof out), *ds = dev(r, NULL, sizeof(int) * N);
  int n = N;
  run_ok(r, DIM1(G), DIM1(B), 0, ARGS(&din, &dout, &ds, &n));
  get(r, out, dout, sizeof out);
  get(r, scaled, ds, sizeof(int) * N);
  for (int t = 0; t < TILES; t++) {
    int s = 0;
    for (int i = 128 * t; i < 128 * t + 128 && i < N; i++) s += in[i];
    expect_int(r, "tile sum", (size_t)t, out[t], s);
  }
  for (int i = 0; i < N; i++) expect_int(r, "value times tile size", (size_t)i, scaled[i], in[i] * 128);
  free(in);
  free(scaled);
}

static void run_redux_ops(struct run *r) {
  enum { N = 200, B = 64, G = 4, WARPS = G * B / 32 };
  int *in = xcalloc(N, sizeof(int)), out[7 * WARPS];
  uint64_t st = 10;
  for (int i = 0; i < N; i++) in[i] = (int)ptx_rand32(&st);
  void *din = dev(r, in, sizeof(int) * N), *dout = dev(r, NULL, sizeof out);
  int n = N;
  run_ok(r, DIM1(G), DIM1(B), 0, ARGS(&din, &dout, &n));
  get(r, out, dout, sizeof out);
  static const char *const names[7] = {"add", "min.s32", "max.s32", "min.u32", "and", "or", "xor"};
  for (int w = 0; w < WARPS; w++) {
    uint32_t add = 0, umin = UINT32_MAX, and = UINT32_MAX, or = 0, xor = 0;
    int smin = INT32_MAX, smax = INT32_MIN;
    for (int l = 0; l < 32; l++) {
      int i = 32 * w + l, v = i < N ? in[i] : 0;
      uint32_t u = (uint32_t)v;
      add += u;
      if (v < smin) smin = v;
      if (v > smax) smax = v;
      if (u < umin) umin = u;
      and &= u;
      or |= u;
      xor ^= u;
    }
    int want[7] = {(int)add, smin, smax, (int)umin, (int)and, (int) or, (int)xor};
    for (int k = 0; k < 7; k++) expect_int(r, names[k], (size_t)w, out[7 * w + k], want[k]);
  }
  free(in);
}

static void run_labeled_max(struct run *r) {
  enum { N = 200 };
  int *in = rand_ints(N, 0, 1000, 11), maxes[8], want[8] = {0};
  for (int i = 0; i < N; i++)
    if (in[i] > want[in[i] % 8]) want[in[i] % 8] = in[i];
  void *din = dev(r, in, sizeof(int) * N), *dm = dev(r, NULL, sizeof maxes);
  int n = N;
  run_ok(r, DIM1(4), DIM1(64), 0, ARGS(&din, &dm, &n));
  get(r, maxes, dm, sizeof maxes);
  for (int k = 0; k < 8; k++) expect_int(r, "bucket max", (size_t)k, maxes[k], want[k]);
  free(in);
}

/* ====================================================== threads that wait on each other */

static void run_ping_pong(struct run *r) {
  enum { G = 3, ROUNDS = 4, N = G * ROUNDS * 32 };
  int *in = rand_ints(N, -1000, 2000, 12), out[N], flags[2 * G];
  void *din = dev(r, in, sizeof(int) * N), *dout = dev(r, NULL, sizeof out);
  void *dscratch = dev(r, NULL, sizeof(int) * 32 * G), *dflags = dev(r, NULL, sizeof flags);
  int rounds = ROUNDS;
  run_ok(r, DIM1(G), DIM1(64), 0, ARGS(&din, &dout, &dscratch, &dflags, &rounds));
  get(r, out, dout, sizeof out);
  get(r, flags, dflags, sizeof flags);
  for (int i = 0; i < N; i++)
    expect_int(r, "consumed value", (size_t)i, out[i], 3 * in[i] + (i / 32) % ROUNDS + i % 32);
  for (int k = 0; k < 2 * G; k++) expect_int(r, "final flag", (size_t)k, flags[k], ROUNDS);
  free(in);
}

static void run_handoff_acquire(struct run *r) {
  enum { G = 3, N = G * 32 };
  int *in = rand_ints(N, -1000, 2000, 13), out[N];
  void *din = dev(r, in, sizeof(int) * N), *dout = dev(r, NULL, sizeof out);
  void *dscratch = dev(r, NULL, sizeof(int) * N), *dflags = dev(r, NULL, sizeof(int) * G);
  run_ok(r, DIM1(G), DIM1(64), 0, ARGS(&din, &dout, &dscratch, &dflags));
  get(r, out, dout, sizeof out);
  for (int i = 0; i < N; i++) expect_int(r, "handed-over value", (size_t)i, out[i], in[i] * in[i] - i % 32);
  free(in);
}

static void run_locked_insert(struct run *r) {
  enum { N = 150, NB = 7, CAP = N };
  int *keys = rand_ints(N, 0, 10000, 14), *slots = xcalloc(NB * CAP, sizeof(int)), *want = xcalloc(CAP, sizeof(int));
  int fill[NB], locks[NB];
  void *dk = dev(r, keys, sizeof(int) * N), *ds = dev(r, NULL, sizeof(int) * NB * CAP);
  void *df = dev(r, NULL, sizeof fill), *dl = dev(r, NULL, sizeof locks);
  int nb = NB, cap = CAP, n = N;
  run_ok(r, DIM1(3), DIM1(64), 0, ARGS(&dk, &ds, &df, &dl, &nb, &cap, &n));
  get(r, slots, ds, sizeof(int) * NB * CAP);
  get(r, fill, df, sizeof fill);
  get(r, locks, dl, sizeof locks);
  for (int b = 0; b < NB; b++) {
    size_t k = 0;
    for (int i = 0; i < N; i++)
      if (keys[i] % NB == b) want[k++] = keys[i];
    expect_int(r, "bucket fill", (size_t)b, fill[b], (long long)k);
    expect_int(r, "lock released", (size_t)b, locks[b], 0);
    ptx_expect(same_multiset(slots + b * CAP, want, k), r->label, "bucket keys", (size_t)b,
               "not the keys of the bucket");
  }
  free(keys);
  free(slots);
  free(want);
}

static void run_lockfree_push(struct run *r) {
  enum { N = 150 };
  int next[N], head = -1;
  bool seen[N] = {false};
  void *dn = dev(r, NULL, sizeof next), *dh = dev(r, &head, sizeof head);
  int n = N;
  run_ok(r, DIM1(3), DIM1(64), 0, ARGS(&dn, &dh, &n));
  get(r, next, dn, sizeof next);
  get(r, &head, dh, sizeof head);
  int steps = 0;
  for (int at = head; at != -1; at = next[at], steps++) {
    ptx_expect(at >= 0 && at < N && !seen[at] && steps < N, r->label, "list node", (size_t)steps,
               "node %d is out of range or seen before", at);
    seen[at] = true;
  }
  expect_int(r, "list length", 0, steps, N);
}

static void run_ticket_lock_sum(struct run *r) {
  enum { N = 300, G = 5 };
  int *in = rand_ints(N, -1000, 2000, 15), acc[2 + G], tickets[2], want = 0;
  for (int i = 0; i < N; i++) want += in[i];
  void *din = dev(r, in, sizeof(int) * N), *dacc = dev(r, NULL, sizeof acc), *dt = dev(r, NULL, sizeof tickets);
  int n = N;
  run_ok(r, DIM1(G), DIM1(64), 0, ARGS(&din, &dacc, &dt, &n));
  get(r, acc, dacc, sizeof acc);
  get(r, tickets, dt, sizeof tickets);
  expect_int(r, "sum", 0, acc[0], want);
  expect_int(r, "blocks", 0, acc[1], G);
  expect_int(r, "tickets taken", 0, tickets[0], G);
  expect_int(r, "tickets served", 0, tickets[1], G);
  bool came[G] = {false};
  for (int k = 0; k < G; k++) {
    ptx_expect(acc[2 + k] >= 0 && acc[2 + k] < G && !came[acc[2 + k]], r->label, "arrival order", (size_t)k,
               "block %d twice or out of range", acc[2 + k]);
    came[acc[2 + k]] = true;
  }
  free(in);
}

static void run_mutex_blocks(struct run *r) {
  enum { N = 300, B = 64, G = 5 };
  int *in = rand_ints(N, -100000, 200000, 35), log[1 + G], lock = 0, want[G];
  for (int b = 0; b < G; b++) {
    want[b] = INT32_MIN;
    for (int i = b * B; i < (b + 1) * B && i < N; i++) want[b] = in[i] > want[b] ? in[i] : want[b];
  }
  void *din = dev(r, in, sizeof(int) * N), *dlog = dev(r, NULL, sizeof log), *dlock = dev(r, NULL, sizeof lock);
  int n = N;
  run_ok(r, DIM1(G), DIM1(B), 0, ARGS(&din, &dlog, &dlock, &n));
  get(r, log, dlog, sizeof log);
  get(r, &lock, dlock, sizeof lock);
  expect_int(r, "entries", 0, log[0], G);
  expect_int(r, "lock released", 0, lock, 0);
  ptx_expect(same_multiset(log + 1, want, G), r->label, "block maxima", 0, "not the maxima of the blocks");
  free(in);
}

static void run_last_block_sum(struct run *r) {
  enum { N = 1000, B = 64, G = 4 };
  int *in = rand_ints(N, -1000, 2000, 16), want = 0, out = 0;
  unsigned retired = 1;
  for (int i = 0; i < N; i++) want += in[i];
  void *din = dev(r, in, sizeof(int) * N), *dp = dev(r, NULL, sizeof(int) * G), *dr = dev(r, NULL, sizeof retired);
  void *dout = dev(r, NULL, sizeof out);
  int n = N;
  for (int rep = 0; rep < 2; rep++) { /* the last block leaves the counter ready for the next launch */
    run_ok(r, DIM1(G), DIM1(B), B * sizeof(int), ARGS(&din, &dp, &dr, &dout, &n));
    get(r, &out, dout, sizeof out);
    get(r, &retired, dr, sizeof retired);
    expect_int(r, "sum", (size_t)rep, out, want);
    expect_int(r, "retired blocks counter", (size_t)rep, retired, 0);
  }
  free(in);
}

/* ====================================================== histograms */

enum { HIST_N = 700, HIST_G = 3 };

static void hist_inputs(struct run *r, unsigned char *in, unsigned want[64], void **din, void **dbins) {
  uint64_t st = 17;
  memset(want, 0, 64 * sizeof *want);
  for (int i = 0; i < HIST_N; i++) {
    in[i] = (unsigned char)ptx_rand32(&st);
    want[in[i] & 63]++;
  }
  *din = dev(r, in, HIST_N);
  *dbins = dev(r, NULL, 64 * sizeof(unsigned));
}

static void run_hist_zeroed(struct run *r) {
  unsigned char in[HIST_N];
  unsigned want[64], bins[64];
  void *din, *dbins;
  hist_inputs(r, in, want, &din, &dbins);
  int n = HIST_N;
  run_ok(r, DIM1(HIST_G), DIM1(64), 0, ARGS(&din, &dbins, &n));
  get(r, bins, dbins, sizeof bins);
  for (int b = 0; b < 64; b++) expect_int(r, "bin", (size_t)b, bins[b], want[b]);
}

/*
 * The planted bug: with the INIT check, the first atomicAdd on a shared bin is a read of
 * uninitialised shared memory; without it, the bins start from the poison pattern that shared
 * memory holds at a block's start (as on a GPU, not zeros), so the counts are wrong.
 */
static void run_hist_unzeroed(struct run *r) {
  unsigned char in[HIST_N];
  unsigned want[64], bins[64];
  void *din, *dbins;
  hist_inputs(r, in, want, &din, &dbins);
  int n = HIST_N;
  gcap_status st = launch(r, DIM1(HIST_G), DIM1(64), 0, ARGS(&din, &dbins, &n));
  if (!test_on_sim()) return; /* a GPU leaves whatever it leaves */
  if (r->checks & GCAP_SIM_CHECK_INIT) {
    const char *msg = gcap_last_error_message();
    if (st != GCAP_ERROR_LAUNCH_FAILURE) {
      print_error("%s: the launch returned %s, expected LAUNCH_FAILURE (message: \"%s\")\n", r->label,
                  gcap_status_name(st), msg);
      fail();
    }
    int lines[2];
    assert_int_equal(ptx_marked_lines("patterns/histogram.cu", lines, 2), 1);
    char where[64];
    snprintf(where, sizeof where, "histogram.cu:%d", lines[0]);
    const char *words[] = {"hist_unzeroed", "shared.add", "uninitialised", where};
    for (size_t i = 0; i < COUNT(words); i++)
      if (strstr(msg, words[i]) == NULL) {
        print_error("%s: \"%s\" is not in the message \"%s\"\n", r->label, words[i], msg);
        fail();
      }
    return;
  }
  if (st != GCAP_SUCCESS) {
    print_error("%s: %s (%s)\n", r->label, gcap_status_name(st), gcap_last_error_message());
    fail();
  }
  get(r, bins, dbins, sizeof bins);
  int wrong = 0;
  for (int b = 0; b < 64; b++) wrong += bins[b] != want[b];
  ptx_expect(wrong > 0, r->label, "bins", 0, "every bin is right: the shared bins started as zeros");
}

/* ====================================================== transformer kernels */

static void run_softmax_rows(struct run *r) {
  enum { ROWS = 10, COLS = 80 };
  float *x = rand_floats(ROWS * COLS, -4.0f, 4.0f, 18), *out = xcalloc(ROWS * COLS, sizeof(float));
  void *dx = dev(r, x, sizeof(float) * ROWS * COLS), *dout = dev(r, NULL, sizeof(float) * ROWS * COLS);
  int rows = ROWS, cols = COLS;
  run_ok(r, DIM1(3), DIM1(128), 0, ARGS(&dx, &dout, &rows, &cols));
  get(r, out, dout, sizeof(float) * ROWS * COLS);
  for (int i = 0; i < ROWS; i++) {
    double m = -INFINITY, s = 0;
    for (int c = 0; c < COLS; c++) m = fmax(m, x[i * COLS + c]);
    for (int c = 0; c < COLS; c++) s += exp(x[i * COLS + c] - m);
    for (int c = 0; c < COLS; c++) {
      double want = exp(x[i * COLS + c] - m) / s;
      expect_near(r, "softmax", (size_t)(i * COLS + c), out[i * COLS + c], want, 1e-5 * want + 1e-9);
    }
  }
  free(x);
  free(out);
}

static void run_layernorm_rows(struct run *r) {
  enum { ROWS = 7, COLS = 100 };
  float *x = rand_floats(ROWS * COLS, -2.0f, 3.0f, 19), *w = rand_floats(COLS, 0.5f, 1.5f, 20);
  float *b = rand_floats(COLS, -0.5f, 0.5f, 21), *out = xcalloc(ROWS * COLS, sizeof(float)), mean[ROWS], rstd[ROWS];
  void *dx = dev(r, x, sizeof(float) * ROWS * COLS), *dw = dev(r, w, sizeof(float) * COLS);
  void *db = dev(r, b, sizeof(float) * COLS), *dout = dev(r, NULL, sizeof(float) * ROWS * COLS);
  void *dm = dev(r, NULL, sizeof mean), *drs = dev(r, NULL, sizeof rstd);
  int rows = ROWS, cols = COLS;
  run_ok(r, DIM1(4), DIM1(64), 0, ARGS(&dx, &dw, &db, &dout, &dm, &drs, &rows, &cols));
  get(r, out, dout, sizeof(float) * ROWS * COLS);
  get(r, mean, dm, sizeof mean);
  get(r, rstd, drs, sizeof rstd);
  for (int i = 0; i < ROWS; i++) {
    double mu = 0, var = 0;
    for (int c = 0; c < COLS; c++) mu += x[i * COLS + c];
    mu /= COLS;
    for (int c = 0; c < COLS; c++) var += (x[i * COLS + c] - mu) * (x[i * COLS + c] - mu);
    double rs = 1.0 / sqrt(var / COLS + 1e-5);
    expect_near(r, "mean", (size_t)i, mean[i], mu, 1e-5);
    expect_near(r, "rstd", (size_t)i, rstd[i], rs, 1e-5 * rs);
    for (int c = 0; c < COLS; c++) {
      double want = (x[i * COLS + c] - mu) * rs * w[c] + b[c];
      expect_near(r, "normalised", (size_t)(i * COLS + c), out[i * COLS + c], want, 1e-4);
    }
  }
  free(x);
  free(w);
  free(b);
  free(out);
}

static void run_gemv_warp(struct run *r) {
  enum { ROWS = 13, COLS = 70 };
  float *a = rand_floats(ROWS * COLS, -1.0f, 1.0f, 22), *x = rand_floats(COLS, -1.0f, 1.0f, 23), y[ROWS];
  void *da = dev(r, a, sizeof(float) * ROWS * COLS), *dx = dev(r, x, sizeof(float) * COLS),
       *dy = dev(r, NULL, sizeof y);
  int rows = ROWS, cols = COLS;
  run_ok(r, DIM1(5), DIM1(96), 0, ARGS(&da, &dx, &dy, &rows, &cols));
  get(r, y, dy, sizeof y);
  for (int i = 0; i < ROWS; i++) {
    double s = 0, mag = 0;
    for (int c = 0; c < COLS; c++) {
      s += (double)a[i * COLS + c] * x[c];
      mag += fabs((double)a[i * COLS + c] * x[c]);
    }
    expect_near(r, "y", (size_t)i, y[i], s, 1e-6 * mag + 1e-7);
  }
  free(a);
  free(x);
}

static void run_matmul_tiled2(struct run *r) {
  enum { M = 37, N = 29, K = 45 };
  float *a = rand_floats(M * K, -1.0f, 1.0f, 24), *b = rand_floats(K * N, -1.0f, 1.0f, 25);
  float *c = xcalloc(M * N, sizeof(float));
  void *da = dev(r, a, sizeof(float) * M * K), *db = dev(r, b, sizeof(float) * K * N);
  void *dc = dev(r, NULL, sizeof(float) * M * N);
  int m = M, n = N, k = K;
  run_ok(r, GCAP_DIM3(2, 3, 1), GCAP_DIM3(16, 8, 1), 0, ARGS(&da, &db, &dc, &m, &n, &k));
  get(r, c, dc, sizeof(float) * M * N);
  for (int i = 0; i < M; i++)
    for (int j = 0; j < N; j++) {
      double s = 0, mag = 0;
      for (int t = 0; t < K; t++) {
        s += (double)a[i * K + t] * b[t * N + j];
        mag += fabs((double)a[i * K + t] * b[t * N + j]);
      }
      expect_near(r, "C", (size_t)(i * N + j), c[i * N + j], s, 1e-6 * mag + 1e-7);
    }
  free(a);
  free(b);
  free(c);
}

/* ====================================================== shared-memory tiles */

static void run_transpose_padded(struct run *r) {
  enum { W = 70, H = 45 };
  float *in = rand_floats(W * H, -100.0f, 100.0f, 26), *out = xcalloc(W * H, sizeof(float));
  void *din = dev(r, in, sizeof(float) * W * H), *dout = dev(r, NULL, sizeof(float) * W * H);
  int w = W, h = H;
  run_ok(r, GCAP_DIM3(3, 2, 1), GCAP_DIM3(32, 8, 1), 0, ARGS(&din, &dout, &w, &h));
  get(r, out, dout, sizeof(float) * W * H);
  for (int y = 0; y < H; y++)
    for (int x = 0; x < W; x++)
      ptx_expect(ptx_same_f32(out[x * H + y], in[y * W + x]), r->label, "transposed", (size_t)(x * H + y),
                 "got %g, expected %g", out[x * H + y], in[y * W + x]);
  free(in);
  free(out);
}

static void run_stencil_halo(struct run *r) {
  enum { N = 300, B = 64 };
  int *in = rand_ints(N, -1000, 2000, 27), out[N];
  void *din = dev(r, in, sizeof(int) * N), *dout = dev(r, NULL, sizeof out);
  int n = N;
  run_ok(r, ptx_grid_for(N, B), DIM1(B), (B + 6) * sizeof(int), ARGS(&din, &dout, &n));
  get(r, out, dout, sizeof out);
  for (int i = 0; i < N; i++) {
    int s = 0;
    for (int k = -3; k <= 3; k++)
      if (i + k >= 0 && i + k < N) s += (k + 4) * in[i + k];
    expect_int(r, "stencil", (size_t)i, out[i], s);
  }
  free(in);
}

static void run_bitonic_kv(struct run *r) {
  enum { N = 300, B = 64, SEG = 2 * B };
  int keys[N], vals[N], gk[N], gv[N];
  uint64_t st = 28;
  for (int i = 0; i < N; i++) keys[i] = 3 * i - 100;
  for (int i = N - 1; i > 0; i--) { /* distinct keys, shuffled */
    int j = (int)(ptx_rand32(&st) % (uint32_t)(i + 1)), t = keys[i];
    keys[i] = keys[j];
    keys[j] = t;
  }
  for (int i = 0; i < N; i++) vals[i] = i;
  void *dk = dev(r, keys, sizeof keys), *dv = dev(r, vals, sizeof vals);
  int n = N;
  run_ok(r, ptx_grid_for(N, SEG), DIM1(B), 2 * SEG * sizeof(int), ARGS(&dk, &dv, &n));
  get(r, gk, dk, sizeof gk);
  get(r, gv, dv, sizeof gv);
  for (int s = 0; s < N; s += SEG) {
    int end = s + SEG < N ? s + SEG : N;
    for (int i = s; i < end; i++) {
      int smaller = 0; /* the rank of keys[i] in its segment */
      for (int j = s; j < end; j++) smaller += keys[j] < keys[i];
      expect_int(r, "sorted key", (size_t)(s + smaller), gk[s + smaller], keys[i]);
      expect_int(r, "its value", (size_t)(s + smaller), gv[s + smaller], vals[i]);
    }
  }
}

static void run_blelloch_scan(struct run *r) {
  enum { N = 300, B = 64, SEG = 2 * B, G = (N + SEG - 1) / SEG };
  int *in = rand_ints(N, -1000, 2000, 29), out[N], sums[G];
  void *din = dev(r, in, sizeof(int) * N), *dout = dev(r, NULL, sizeof out), *ds = dev(r, NULL, sizeof sums);
  int n = N;
  run_ok(r, DIM1(G), DIM1(B), SEG * sizeof(int), ARGS(&din, &dout, &ds, &n));
  get(r, out, dout, sizeof out);
  get(r, sums, ds, sizeof sums);
  for (int g = 0; g < G; g++) {
    int s = 0;
    for (int i = g * SEG; i < (g + 1) * SEG && i < N; i++) {
      expect_int(r, "exclusive scan", (size_t)i, out[i], s);
      s += in[i];
    }
    expect_int(r, "segment sum", (size_t)g, sums[g], s);
  }
  free(in);
}

static void run_radix_pass(struct run *r) {
  enum { N = 200, B = 64, G = 4, SHIFT = 4 };
  unsigned in[N], out[N], want[B];
  int digits[16 * G];
  uint64_t st = 30;
  for (int i = 0; i < N; i++) in[i] = ptx_rand32(&st) >> 1;
  void *din = dev(r, in, sizeof in), *dout = dev(r, NULL, sizeof out), *dd = dev(r, NULL, sizeof digits);
  int shift = SHIFT, n = N;
  run_ok(r, DIM1(G), DIM1(B), 0, ARGS(&din, &dout, &dd, &shift, &n));
  get(r, out, dout, sizeof out);
  get(r, digits, dd, sizeof digits);
  for (int g = 0; g < G; g++) {
    int lo = g * B, hi = lo + B < N ? lo + B : N, k = 0;
    for (unsigned d = 0; d < 16; d++) { /* a stable sort by the digit */
      int count = 0;
      for (int i = lo; i < hi; i++)
        if (((in[i] >> SHIFT) & 15) == d) {
          want[k++] = in[i];
          count++;
        }
      expect_int(r, "digit count", (size_t)(16 * g + (int)d), digits[16 * g + (int)d], count);
    }
    for (int i = lo; i < hi; i++) expect_int(r, "sorted key", (size_t)i, out[i], want[i - lo]);
  }
}

static void run_float_max(struct run *r) {
  enum { N = 500 };
  for (int rep = 0; rep < 2; rep++) { /* mixed signs, then all negative */
    float *in = rand_floats(N, -100.0f, rep == 0 ? 100.0f : -1.0f, 31 + (uint64_t)rep), result = -INFINITY;
    float want = -INFINITY;
    for (int i = 0; i < N; i++) want = in[i] > want ? in[i] : want;
    void *din = dev(r, in, sizeof(float) * N), *dres = dev(r, &result, sizeof result);
    int n = N;
    run_ok(r, DIM1(2), DIM1(64), 0, ARGS(&din, &dres, &n));
    get(r, &result, dres, sizeof result);
    ptx_expect(ptx_same_f32(result, want), r->label, "maximum", (size_t)rep, "got %.9g, expected %.9g", result, want);
    free(in);
  }
}

static void run_axpby_grid_stride(struct run *r) {
  enum { N = 1000 };
  float *x = rand_floats(N, -10.0f, 10.0f, 33), *y = rand_floats(N, -10.0f, 10.0f, 34),
        *got = xcalloc(N, sizeof(float));
  float a = 1.5f, b = -0.25f;
  void *dx = dev(r, x, sizeof(float) * N), *dy = dev(r, y, sizeof(float) * N);
  int n = N;
  run_ok(r, DIM1(2), DIM1(64), 0, ARGS(&a, &dx, &b, &dy, &n));
  get(r, got, dy, sizeof(float) * N);
  for (int i = 0; i < N; i++) {
    double want = (double)a * x[i] + (double)b * y[i];
    expect_near(r, "y", (size_t)i, got[i], want, 2 * ptx_ulp_f32(fabs(a * x[i]) + fabs(b * y[i])));
  }
  free(x);
  free(y);
  free(got);
}

/* ====================================================== the table */

static const struct pattern patterns[] = {
    {"warp_vote", "partial_warp_scan", ALL_SM, run_partial_warp_scan},
    {"warp_vote", "vote_partial", ALL_SM, run_vote_partial},
    {"warp_vote", "ballot_compact", ALL_SM, run_ballot_compact},
    {"warp_vote", "match_count", ALL_SM, run_match_count},
    {"warp_vote", "agg_filter", ALL_SM, run_agg_filter},
    {"warp_vote", "labeled_filter", ALL_SM, run_labeled_filter},
    {"cg_reduce", "cg_tile16_sum", ALL_SM, run_cg_tile16_sum},
    {"cg_reduce", "cg_block_sum", ALL_SM, run_cg_block_sum},
    {"cg_multiwarp", "cg_multiwarp_sum", ALL_SM, run_cg_multiwarp_sum},
    {"redux", "redux_ops", SM80 | SM90, run_redux_ops},
    {"redux", "labeled_max", SM80 | SM90, run_labeled_max},
    {"spin", "ping_pong", ALL_SM, run_ping_pong},
    {"spin", "handoff_acquire", ALL_SM, run_handoff_acquire},
    {"spin", "locked_insert", ALL_SM, run_locked_insert},
    {"spin", "lockfree_push", ALL_SM, run_lockfree_push},
    {"spin", "ticket_lock_sum", ALL_SM, run_ticket_lock_sum},
    {"spin", "mutex_blocks", ALL_SM, run_mutex_blocks},
    {"last_block", "last_block_sum", ALL_SM, run_last_block_sum},
    {"histogram", "hist_unzeroed", ALL_SM, run_hist_unzeroed},
    {"histogram", "hist_zeroed", ALL_SM, run_hist_zeroed},
    {"transformer", "softmax_rows", ALL_SM, run_softmax_rows},
    {"transformer", "layernorm_rows", ALL_SM, run_layernorm_rows},
    {"transformer", "gemv_warp", ALL_SM, run_gemv_warp},
    {"transformer", "matmul_tiled2", ALL_SM, run_matmul_tiled2},
    {"shared_tiles", "transpose_padded", ALL_SM, run_transpose_padded},
    {"shared_tiles", "stencil_halo", ALL_SM, run_stencil_halo},
    {"shared_tiles", "bitonic_kv", ALL_SM, run_bitonic_kv},
    {"shared_tiles", "blelloch_scan", ALL_SM, run_blelloch_scan},
    {"shared_tiles", "radix_pass", ALL_SM, run_radix_pass},
    {"shared_tiles", "float_max", ALL_SM, run_float_max},
    {"shared_tiles", "axpby_grid_stride", ALL_SM, run_axpby_grid_stride},
};

/* One kernel on each architecture's PTX, checks off and all on, IMMEDIATE and DEFERRED. */
static void test_pattern(void **state) {
  const struct pattern *p = *state;
  const char *run_pending = getenv("GCAP_TEST_PENDING");
  if (is_pending(p->kernel) && (run_pending == NULL || strcmp(run_pending, "1") != 0)) skip();
  static const int sms[] = {75, 80, 90};
  static const unsigned check_sets[] = {0, PTX_CHECKS_ALL};
  for (size_t a = 0; a < COUNT(sms); a++) {
    if (!(p->archs & (1u << a))) continue;
    char file[96];
    snprintf(file, sizeof file, "patterns/%s.sm_%d.ptx", p->file, sms[a]);
    for (size_t c = 0; c < COUNT(check_sets); c++)
      for (int deferred = 0; deferred < 2; deferred++) {
        if (!test_on_sim() && (c > 0 || deferred)) continue; /* a GPU runs each PTX once */
        unsigned checks = check_sets[c] & ~(has_own_barrier(p->kernel) ? GCAP_SIM_CHECK_SHARED_RACES : 0u);
        struct run r = {.kernel = p->kernel, .checks = checks};
        snprintf(r.label, sizeof r.label, "%s (sm_%d, checks %s, %s)", p->kernel, sms[a], c ? "all" : "off",
                 deferred ? "DEFERRED" : "IMMEDIATE");
        r.f.file = file;
        r.f.ctx = make_context(r.checks, deferred);
        r.f.s = test_stream_create(r.f.ctx);
        r.f.m = ptx_load(r.f.ctx, file);
        p->fn(&r);
        gcap_context_destroy(r.f.ctx);
      }
  }
}

int main(void) {
  test_require_backend();
  struct CMUnitTest tests[COUNT(patterns)];
  for (size_t i = 0; i < COUNT(patterns); i++) {
    struct CMUnitTest t = {patterns[i].kernel, test_pattern, NULL, NULL, (void *)&patterns[i]};
    tests[i] = t;
  }
  return cmocka_run_group_tests_name("ptx_patterns", tests, NULL, NULL);
}
