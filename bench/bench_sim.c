/*
 * How fast the simulator runs kernels, each figure against a baseline measured in the same run
 * (these machines are shared and noisy): per-block functions against a plain C loop, worker
 * threads against one thread, barriers, per-thread dispatch, and kernels run from their PTX. Every figure is the median
 * of REPS repetitions of a region of at least 20 ms, subject and baseline alternating. JSON lines on stdout, a table on
 * stderr.
 *
 * usage: bench_sim [--quick] [benchmark ...]
 *   benchmarks: the names in `benchmarks` below (default: all)
 *   --quick  3 repetitions (a smoke run)
 */
#define _GNU_SOURCE
#include <gcap/gcap.h>
#include <gcap/sim.h>

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "timing.h"
#include "kernels/ptx_bench_ptx.h"
#include "kernels/ptx_modern_ptx.h"

static int reps = 7;

#define CHECK(call)                                                                                                    \
  do {                                                                                                                 \
    gcap_status st_ = (call);                                                                                          \
    if (st_ != GCAP_SUCCESS) {                                                                                         \
      fprintf(stderr, "bench_sim: %s: %s: %s\n", #call, gcap_status_name(st_), gcap_last_error_message());             \
      exit(1);                                                                                                         \
    }                                                                                                                  \
  } while (0)

/* The same pair of medians, over this program's repetitions. */
static void median_pair_ns(work_fn subject, void *subject_arg, work_fn baseline, void *baseline_arg, double *subject_ns,
                           double *baseline_ns) {
  median_pair_of(subject, subject_arg, baseline, baseline_arg, reps, NULL, subject_ns, baseline_ns);
}

/*
 * One figure: JSON on stdout, a table row on stderr. ratio = value / baseline_value; a target
 * (> 0) is met when the ratio is at most it (lower_is_better) or at least it.
 */
static void report(const char *metric, size_t n, const char *unit, double value, const char *baseline,
                   double baseline_value, double target, bool lower_is_better) {
  double ratio = baseline_value > 0 ? value / baseline_value : 0;
  printf("{\"metric\":\"%s\",\"n\":%zu,\"unit\":\"%s\",\"value\":%.3f,\"baseline\":\"%s\",\"baseline_value\":%.3f,"
         "\"ratio\":%.3f",
         metric, n, unit, value, baseline, baseline_value, ratio);
  const char *verdict = "";
  if (target > 0) {
    bool met = lower_is_better ? ratio <= target : ratio >= target;
    printf(",\"target\":%.3f,\"met\":%s", target, met ? "true" : "false");
    verdict = met ? "met" : "MISSED";
  }
  printf("}\n");
  fflush(stdout);
  fprintf(stderr, "%-18s %9zu %10.3f %-12s %-14s %10.3f %7.3f %6s\n", metric, n, value, unit, baseline, baseline_value,
          ratio, verdict);
}

/* ------------------------------------------------------------- kernels */

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

/* y[i] = a * x[i] + y[i] for i in [begin, end): the work of the kernels and of the plain loop alike. */
__attribute__((noinline)) static void saxpy_range(float a, const float *x, float *y, size_t begin, size_t end) {
  for (size_t i = begin; i < end; i++) y[i] = a * x[i] + y[i];
}

/* saxpy(float a, const float *x, float *y, uint32_t n, uint32_t per_thread), one call per block. */
static void saxpy_block(const gcap_sim_block *b, void *const *args) {
  float a;
  memcpy(&a, args[0], sizeof a);
  uint32_t n = arg_u32(args, 3), per_block = b->block_dim.x * arg_u32(args, 4);
  size_t begin = (size_t)b->block_idx.x * per_block, end = begin + per_block < n ? begin + per_block : n;
  saxpy_range(a, arg_ptr(args, 1), arg_ptr(args, 2), begin, end);
}
static const size_t saxpy_sizes[] = {sizeof(float), sizeof(void *), sizeof(void *), sizeof(uint32_t), sizeof(uint32_t)};

/* y[i] = p(x[i]), p of degree POLY_DEGREE by Horner's rule: arithmetic, where saxpy moves memory. */
#define POLY_DEGREE 32
__attribute__((noinline)) static void poly_range(const float *x, float *y, size_t begin, size_t end) {
  for (size_t i = begin; i < end; i++) {
    float v = 0.0f, xi = x[i];
    for (int d = 0; d < POLY_DEGREE; d++) v = v * xi + 1.0f / (float)(d + 1);
    y[i] = v;
  }
}

/* poly(float unused, const float *x, float *y, uint32_t n, uint32_t per_thread): saxpy's parameters. */
static void poly_block(const gcap_sim_block *b, void *const *args) {
  uint32_t n = arg_u32(args, 3), per_block = b->block_dim.x * arg_u32(args, 4);
  size_t begin = (size_t)b->block_idx.x * per_block, end = begin + per_block < n ? begin + per_block : n;
  poly_range(arg_ptr(args, 1), arg_ptr(args, 2), begin, end);
}

/* out[i] = i: next to nothing, so what is measured is the call of each thread. */
static void index_thread(const gcap_sim_thread *t, void *const *args) {
  uint32_t *out = arg_ptr(args, 0);
  uint32_t i = t->block_idx.x * t->block_dim.x + t->thread_idx.x;
  out[i] = i;
}
static const size_t one_ptr[] = {sizeof(void *)};

#define BARRIERS 64 /* per thread of the barrier kernel */

/* BARRIERS barriers, each after a write to shared memory, as a reduction's steps are. */
static void barriers_thread(const gcap_sim_thread *t, void *const *args) {
  (void)args;
  uint32_t *sh = t->shared_mem;
  for (uint32_t i = 0; i < BARRIERS; i++) {
    sh[t->thread_idx.x] = i;
    gcap_sim_syncthreads(t);
  }
}

static const gcap_kernel_def kernel_defs[] = {
    {.name = "saxpy", .sim_block_fn = saxpy_block, .num_params = 5, .param_sizes = saxpy_sizes},
    {.name = "poly", .sim_block_fn = poly_block, .num_params = 5, .param_sizes = saxpy_sizes},
    {.name = "index", .sim_fn = index_thread, .num_params = 1, .param_sizes = one_ptr},
    {.name = "barriers", .sim_fn = barriers_thread},
};

/* ------------------------------------------------------------- fixture */

struct sim {
  gcap_context *ctx;
  gcap_stream *s;
  gcap_module *m;
};

static void context_open(struct sim *sm, const gcap_sim_options *so, const gcap_module_desc *d) {
  gcap_context_options o;
  gcap_context_options_init(&o);
  o.backend = GCAP_BACKEND_SIM;
  o.sim = so;
  CHECK(gcap_context_create(&o, &sm->ctx));
  CHECK(gcap_stream_create(sm->ctx, &sm->s));
  CHECK(gcap_module_load(sm->ctx, d, &sm->m));
}

static void sim_open(struct sim *sm, unsigned threads) {
  gcap_sim_options so;
  gcap_sim_options_init(&so);
  so.threads = threads;
  gcap_module_desc d = {.kernels = kernel_defs, .num_kernels = sizeof kernel_defs / sizeof kernel_defs[0]};
  context_open(sm, &so, &d);
}

static void sim_close(struct sim *sm) { gcap_context_destroy(sm->ctx); }

/* Device memory is filled by a copy, as on a GPU, so that the INIT check sees it written. */
static void *dev_copy(struct sim *sm, const void *host, size_t bytes) {
  void *p;
  CHECK(gcap_mem_alloc(sm->ctx, bytes, &p));
  CHECK(gcap_memcpy(sm->ctx, p, host, bytes, GCAP_MEMCPY_HOST_TO_DEVICE));
  return p;
}

static void *dev_floats(struct sim *sm, size_t n, float value) {
  float *h = malloc(n * sizeof *h);
  if (!h) exit(1);
  for (size_t i = 0; i < n; i++) h[i] = value;
  void *p = dev_copy(sm, h, n * sizeof *h);
  free(h);
  return p;
}

static void launch(struct sim *sm, const char *name, uint32_t grid, uint32_t block, uint32_t shared, void **args) {
  gcap_kernel *k;
  CHECK(gcap_module_get_kernel(sm->m, name, &k));
  CHECK(gcap_launch_kernel(sm->s, k, GCAP_DIM3(grid, 1, 1), GCAP_DIM3(block, 1, 1), shared, args));
  CHECK(gcap_stream_synchronize(sm->s));
}

/* ------------------------------------------------------------- saxpy: per-block form, threads */

struct saxpy_run {
  struct sim *sm;
  const char *kernel; /* saxpy or poly */
  float a, *x, *y;
  uint32_t n, block, per_thread, grid;
};

static void saxpy_setup(struct saxpy_run *r, struct sim *sm, const char *kernel, uint32_t n, uint32_t grid,
                        uint32_t block) {
  *r = (struct saxpy_run){sm, kernel, 0.5f, dev_floats(sm, n, 1.0f), dev_floats(sm, n, 2.0f), n, block, 0, grid};
  r->per_thread = (n + grid * block - 1) / (grid * block);
}

static void do_saxpy_kernel(void *arg) {
  struct saxpy_run *r = arg;
  void *args[] = {&r->a, &r->x, &r->y, &r->n, &r->per_thread};
  launch(r->sm, r->kernel, r->grid, r->block, 0, args);
}

static void do_saxpy_loop(void *arg) {
  struct saxpy_run *r = arg;
  saxpy_range(r->a, r->x, r->y, 0, r->n);
}

/* A per-block function over 1e6 elements against the same loop in plain C. */
static void bench_block_form(void) {
  struct sim sm;
  sim_open(&sm, 1);
  struct saxpy_run r;
  saxpy_setup(&r, &sm, "saxpy", 1000000, (1000000 + 255) / 256, 256);
  double kernel = 0, loop = 0;
  median_pair_ns(do_saxpy_kernel, &r, do_saxpy_loop, &r, &kernel, &loop);
  report("block_form_saxpy", r.n, "ns/elem", kernel / r.n, "C loop", loop / r.n, 1.2, true);
  sim_close(&sm);
}

/* 1000 blocks over 1e7 elements on two worker threads against one; the figure is the speedup. */
static void threads_speedup(const char *kernel) {
  struct sim one, two;
  sim_open(&one, 1);
  sim_open(&two, 2);
  struct saxpy_run r1, r2;
  saxpy_setup(&r1, &one, kernel, 10000000, 1000, 1000);
  saxpy_setup(&r2, &two, kernel, 10000000, 1000, 1000);
  double t1 = 0, t2 = 0;
  median_pair_ns(do_saxpy_kernel, &r1, do_saxpy_kernel, &r2, &t1, &t2);
  char metric[32];
  snprintf(metric, sizeof metric, "threads2_%s", kernel);
  report(metric, r1.n, "x faster", t1 / t2, "threads=1", 1.0, 1.6, false);
  sim_close(&one);
  sim_close(&two);
}

/* The arithmetic kernel shows the threads; saxpy, bound by memory bandwidth, what two cores share. */
static void bench_threads(void) {
  threads_speedup("poly");
  threads_speedup("saxpy");
}

/* ------------------------------------------------------------- barriers, dispatch */

struct plain_run {
  struct sim *sm;
  uint32_t *out;
  uint32_t grid, block;
};

static void do_barriers(void *arg) {
  struct plain_run *r = arg;
  launch(r->sm, "barriers", r->grid, r->block, r->block * 4, NULL);
}

static void do_index(void *arg) {
  struct plain_run *r = arg;
  void *args[] = {&r->out};
  launch(r->sm, "index", r->grid, r->block, 0, args);
}

static void do_index_loop(void *arg) {
  struct plain_run *r = arg;
  uint32_t n = r->grid * r->block;
  for (uint32_t i = 0; i < n; i++) r->out[i] = i;
  __asm__ volatile("" ::: "memory");
}

/* ns per barrier per thread, against a per-thread dispatch (a thread's call with no barrier). */
static void bench_barrier(void) {
  struct sim sm;
  sim_open(&sm, 1);
  struct plain_run r = {&sm, NULL, 64, 256};
  CHECK(gcap_mem_alloc(sm.ctx, 64 * 256 * sizeof *r.out, (void **)&r.out));
  double barriers = 0, index = 0;
  median_pair_ns(do_barriers, &r, do_index, &r, &barriers, &index);
  double threads = 64.0 * 256;
  report("barrier", BARRIERS, "ns/barrier/thread", barriers / (threads * BARRIERS), "dispatch/thread", index / threads,
         0, true);
  sim_close(&sm);
}

/* A per-thread function's call, over 1e6 threads, against a C loop writing the same values. */
static void bench_dispatch(void) {
  struct sim sm;
  sim_open(&sm, 1);
  struct plain_run r = {&sm, NULL, 3907, 256};
  CHECK(gcap_mem_alloc(sm.ctx, (size_t)r.grid * r.block * sizeof *r.out, (void **)&r.out));
  double kernel = 0, loop = 0;
  median_pair_ns(do_index, &r, do_index_loop, &r, &kernel, &loop);
  double threads = (double)r.grid * r.block;
  report("dispatch_thread", (size_t)threads, "ns/thread", kernel / threads, "C loop", loop / threads, 0, true);
  sim_close(&sm);
}

/* ------------------------------------------------------------- PTX kernels */

/*
 * The kernels of kernels/ptx_bench.cu run from their PTX, each against its CPU twin (a per-block
 * function computing the same): lane-instructions per second per core, time per launch, the
 * cost of the checks and of a second thread. The twins are checked to give the same results.
 */
static void twin_reduce(const gcap_sim_block *b, void *const *args) {
  const uint32_t *in = arg_ptr(args, 0);
  uint32_t *out = arg_ptr(args, 1), n = arg_u32(args, 2), sum = 0;
  for (uint32_t t = 0; t < b->block_dim.x; t++) {
    uint32_t i = b->block_idx.x * b->block_dim.x + t;
    sum += i < n ? in[i] : 0u;
  }
  out[b->block_idx.x] = sum;
}

static void twin_saxpy(const gcap_sim_block *b, void *const *args) {
  float a;
  memcpy(&a, args[0], sizeof a);
  uint32_t n = arg_u32(args, 3);
  size_t begin = (size_t)b->block_idx.x * b->block_dim.x, end = begin + b->block_dim.x < n ? begin + b->block_dim.x : n;
  saxpy_range(a, arg_ptr(args, 1), arg_ptr(args, 2), begin, end);
}

/* The tiled kernel's order of operations: a chain of fmaf over k, as each thread's sum is. */
static void twin_matmul(const gcap_sim_block *b, void *const *args) {
  const float *x = arg_ptr(args, 0), *y = arg_ptr(args, 1);
  float *c = arg_ptr(args, 2);
  uint32_t n = arg_u32(args, 3);
  for (uint32_t ty = 0; ty < 16; ty++)
    for (uint32_t tx = 0; tx < 16; tx++) {
      uint32_t row = b->block_idx.y * 16 + ty, col = b->block_idx.x * 16 + tx;
      float sum = 0.0f;
      for (uint32_t k = 0; k < n; k++) sum = fmaf(x[row * n + k], y[k * n + col], sum);
      c[row * n + col] = sum;
    }
}

static const size_t saxpy4_sizes[] = {sizeof(float), sizeof(void *), sizeof(void *), sizeof(uint32_t)};
static const size_t reduce_sizes[] = {sizeof(void *), sizeof(void *), sizeof(uint32_t)};
static const size_t matmul_sizes[] = {sizeof(void *), sizeof(void *), sizeof(void *), sizeof(uint32_t)};
static const gcap_kernel_def ptx_defs[] = {
    {.name = "saxpy", .sim_block_fn = twin_saxpy, .num_params = 4, .param_sizes = saxpy4_sizes},
    {.name = "reduce_shared", .sim_block_fn = twin_reduce, .num_params = 3, .param_sizes = reduce_sizes},
    {.name = "reduce_shuffle", .sim_block_fn = twin_reduce, .num_params = 3, .param_sizes = reduce_sizes},
    {.name = "matmul", .sim_block_fn = twin_matmul, .num_params = 4, .param_sizes = matmul_sizes},
};

static void ptx_open(struct sim *sm, unsigned threads, gcap_sim_kernels kernels, unsigned checks) {
  gcap_sim_options so;
  gcap_sim_options_init(&so);
  so.threads = threads;
  so.kernels = kernels;
  so.checks = checks;
  gcap_module_desc d = {.image = ptx_bench_ptx,
                        .image_size = sizeof ptx_bench_ptx,
                        .kernels = ptx_defs,
                        .num_kernels = sizeof ptx_defs / sizeof ptx_defs[0]};
  context_open(sm, &so, &d);
}

/* One kernel's launch on one context: its arguments, and buffers filled for it. */
struct ptx_run {
  struct sim sm;
  const char *kernel;
  gcap_dim3 grid, block;
  float a;
  void *p0, *p1, *p2;
  uint32_t n;
  void *args[4];
};

static void *dev_fill_u32(struct sim *sm, size_t n, uint32_t seed) {
  uint32_t *h = malloc(n * sizeof *h);
  if (!h) exit(1);
  for (size_t i = 0; i < n; i++) h[i] = (uint32_t)(i * 2654435761u + seed) % 1000u;
  void *p = dev_copy(sm, h, n * sizeof *h);
  free(h);
  return p;
}

static void ptx_setup(struct ptx_run *r, const char *kernel, unsigned threads, gcap_sim_kernels kernels,
                      unsigned checks) {
  memset(r, 0, sizeof *r);
  ptx_open(&r->sm, threads, kernels, checks);
  r->kernel = kernel;
  r->a = 0.5f;
  if (strcmp(kernel, "saxpy") == 0) {
    r->n = 1u << 18;
    r->p0 = dev_floats(&r->sm, r->n, 1.0f);
    r->p1 = dev_floats(&r->sm, r->n, 2.0f);
    r->grid = GCAP_DIM3(r->n / 256, 1, 1);
    r->block = GCAP_DIM3(256, 1, 1);
    r->args[0] = &r->a, r->args[1] = &r->p0, r->args[2] = &r->p1, r->args[3] = &r->n;
  } else if (strcmp(kernel, "matmul") == 0) {
    r->n = 128;
    r->p0 = dev_floats(&r->sm, r->n * r->n, 0.25f);
    r->p1 = dev_floats(&r->sm, r->n * r->n, 0.5f);
    r->p2 = dev_floats(&r->sm, r->n * r->n, 0.0f);
    r->grid = GCAP_DIM3(r->n / 16, r->n / 16, 1);
    r->block = GCAP_DIM3(16, 16, 1);
    r->args[0] = &r->p0, r->args[1] = &r->p1, r->args[2] = &r->p2, r->args[3] = &r->n;
  } else {
    r->n = 1u << 18;
    r->p0 = dev_fill_u32(&r->sm, r->n, 7);
    r->p1 = dev_fill_u32(&r->sm, r->n / 256, 0);
    r->grid = GCAP_DIM3(r->n / 256, 1, 1);
    r->block = GCAP_DIM3(256, 1, 1);
    r->args[0] = &r->p0, r->args[1] = &r->p1, r->args[2] = &r->n;
  }
}

static void do_ptx(void *arg) {
  struct ptx_run *r = arg;
  gcap_kernel *k;
  CHECK(gcap_module_get_kernel(r->sm.m, r->kernel, &k));
  CHECK(gcap_launch_kernel(r->sm.s, k, r->grid, r->block, 0, r->args));
  CHECK(gcap_stream_synchronize(r->sm.s));
}

static uint64_t ptx_instructions(struct ptx_run *r) {
  gcap_sim_stats st;
  CHECK(gcap_sim_get_stats(r->sm.ctx, &st));
  return st.ptx_instructions;
}

/* The PTX and the twin leave the same output (the first launch of each, on fresh buffers). */
static void check_twin(const char *kernel) {
  struct ptx_run p, c;
  ptx_setup(&p, kernel, 1, GCAP_SIM_KERNELS_PTX, GCAP_SIM_CHECK_MEMORY | GCAP_SIM_CHECK_SYNC);
  ptx_setup(&c, kernel, 1, GCAP_SIM_KERNELS_CPU, 0);
  do_ptx(&p);
  do_ptx(&c);
  void *out_p = strcmp(kernel, "matmul") == 0 ? p.p2 : p.p1, *out_c = strcmp(kernel, "matmul") == 0 ? c.p2 : c.p1;
  size_t bytes = strcmp(kernel, "matmul") == 0  ? (size_t)p.n * p.n * 4
                 : strcmp(kernel, "saxpy") == 0 ? p.n * 4u
                                                : p.n / 64u;
  if (memcmp(out_p, out_c, bytes) != 0) {
    fprintf(stderr, "bench_sim: kernel %s: the PTX and the CPU twin disagree\n", kernel);
    exit(1);
  }
  sim_close(&p.sm);
  sim_close(&c.sm);
}

/* Lane-instructions per second of one thread with checks off, and the launch against the CPU twin. */
static void ptx_speed(const char *kernel) {
  check_twin(kernel);
  struct ptx_run p, c;
  ptx_setup(&p, kernel, 1, GCAP_SIM_KERNELS_PTX, 0);
  ptx_setup(&c, kernel, 1, GCAP_SIM_KERNELS_CPU, 0);
  uint64_t before = ptx_instructions(&p);
  do_ptx(&p);
  double per_launch = (double)(ptx_instructions(&p) - before);
  double tp = 0, tc = 0;
  median_pair_ns(do_ptx, &p, do_ptx, &c, &tp, &tc);
  char metric[48];
  snprintf(metric, sizeof metric, "ptx_%s", kernel);
  report(metric, (size_t)per_launch, "Minstr/s", per_launch / tp * 1e3, "300 Minstr/s", 300.0, 1.0, false);
  snprintf(metric, sizeof metric, "ptx_%s_launch", kernel);
  report(metric, (size_t)per_launch, "us/launch", tp / 1e3, "CPU twin us", tc / 1e3, 0, true);
  sim_close(&p.sm);
  sim_close(&c.sm);
}

/* The checks' cost: the default ones (MEMORY | SYNC) and all four, against none. */
static void ptx_checks(const char *kernel) {
  static const struct {
    const char *name;
    unsigned checks;
    double target;
  } sets[] = {
      {"default", GCAP_SIM_CHECK_MEMORY | GCAP_SIM_CHECK_SYNC, 2.0},
      {"all", GCAP_SIM_CHECK_MEMORY | GCAP_SIM_CHECK_SYNC | GCAP_SIM_CHECK_SHARED_RACES | GCAP_SIM_CHECK_INIT, 4.0}};
  struct ptx_run none;
  ptx_setup(&none, kernel, 1, GCAP_SIM_KERNELS_PTX, 0);
  for (size_t i = 0; i < 2; i++) {
    struct ptx_run with;
    ptx_setup(&with, kernel, 1, GCAP_SIM_KERNELS_PTX, sets[i].checks);
    double tw = 0, tn = 0;
    median_pair_ns(do_ptx, &with, do_ptx, &none, &tw, &tn);
    char metric[48];
    snprintf(metric, sizeof metric, "ptx_%s_checks_%s", kernel, sets[i].name);
    report(metric, 0, "us/launch", tw / 1e3, "no checks us", tn / 1e3, sets[i].target, true);
    sim_close(&with.sm);
  }
  sim_close(&none.sm);
}

static void ptx_threads(const char *kernel) {
  struct ptx_run one, two;
  ptx_setup(&one, kernel, 1, GCAP_SIM_KERNELS_PTX, 0);
  ptx_setup(&two, kernel, 2, GCAP_SIM_KERNELS_PTX, 0);
  double t1 = 0, t2 = 0;
  median_pair_ns(do_ptx, &one, do_ptx, &two, &t1, &t2);
  char metric[48];
  snprintf(metric, sizeof metric, "ptx_%s_threads2", kernel);
  report(metric, 0, "x faster", t1 / t2, "threads=1", 1.0, 1.6, false);
  sim_close(&one.sm);
  sim_close(&two.sm);
}

/*
 * The per-launch floor: saxpy on 128 elements, one block of 4 warps, checks off, against the
 * same launch of its CPU twin (the launch path without the PTX engine).
 */
static void ptx_floor(void) {
  struct ptx_run p, c;
  ptx_setup(&p, "saxpy", 1, GCAP_SIM_KERNELS_PTX, 0);
  ptx_setup(&c, "saxpy", 1, GCAP_SIM_KERNELS_CPU, 0);
  p.n = c.n = 128;
  p.grid = c.grid = GCAP_DIM3(1, 1, 1);
  p.block = c.block = GCAP_DIM3(128, 1, 1);
  double tp = 0, tc = 0;
  median_pair_ns(do_ptx, &p, do_ptx, &c, &tp, &tc);
  report("ptx_launch_floor_4_warps", 128, "us/launch", tp / 1e3, "CPU twin us", tc / 1e3, 0, true);
  sim_close(&p.sm);
  sim_close(&c.sm);
}

static const char *const ptx_kernels[] = {"saxpy", "reduce_shared", "matmul", "reduce_shuffle"};

static void bench_ptx(void) {
  for (size_t i = 0; i < 4; i++) ptx_speed(ptx_kernels[i]);
  ptx_floor();
}

static void bench_ptx_checks(void) {
  for (size_t i = 0; i < 4; i++) ptx_checks(ptx_kernels[i]);
}

static void bench_ptx_threads(void) {
  for (size_t i = 0; i < 4; i++) ptx_threads(ptx_kernels[i]);
}

/* ------------------------------------------------------------- tensor cores and asynchronous copies */

/*
 * The kernels of kernels/ptx_modern.cu (compute_80 PTX): a 128 x 128 x 128 product through wmma
 * in f16, through ldmatrix + mma.sync in bf16, and the tiled f32 matmul above with its tiles
 * fetched by cp.async, double-buffered; each beside the plain tiled matmul of the same run, the
 * baseline. Inputs are multiples of 1/8 in [-1, 1), so every product and sum is exact in f32 and
 * each result is checked against the exact product first.
 */
#define MODERN_N 128u

struct modern_run {
  struct sim sm;
  const char *kernel;
  gcap_dim3 grid, block;
  void *a, *b, *c;
  uint32_t n;
  void *args[4];
};

static float modern_value(uint32_t i, uint32_t seed) {
  return (float)((int)((i * 2654435761u + seed) >> 28) - 8) / 8.0f;
}

/* The 16-bit pattern of f, which is 0 or a normal number exactly representable in half or bfloat16. */
static uint16_t modern_bits16(float f, bool bf16) {
  uint32_t u;
  memcpy(&u, &f, 4);
  if (bf16) return (uint16_t)(u >> 16);
  if ((u & 0x7fffffffu) == 0) return (uint16_t)(u >> 16);
  uint32_t exp = ((u >> 23) & 0xffu) - 127u + 15u;
  return (uint16_t)(((u >> 16) & 0x8000u) | (exp << 10) | ((u >> 13) & 0x3ffu));
}

/* a row-major, b column-major (b_t[col][k]) in the kernel's element type; c zeroed. */
static void modern_setup(struct modern_run *r, const char *kernel, unsigned checks) {
  memset(r, 0, sizeof *r);
  gcap_sim_options so;
  gcap_sim_options_init(&so);
  so.checks = checks;
  bool is_f32 = strcmp(kernel, "wmma_gemm") != 0 && strcmp(kernel, "mma_gemm") != 0;
  gcap_module_desc d = {.image = ptx_modern_ptx, .image_size = sizeof ptx_modern_ptx};
  if (strcmp(kernel, "matmul") == 0) d = (gcap_module_desc){.image = ptx_bench_ptx, .image_size = sizeof ptx_bench_ptx};
  context_open(&r->sm, &so, &d);
  r->kernel = kernel;
  r->n = MODERN_N;
  size_t nn = (size_t)r->n * r->n;
  float *a = malloc(nn * 4), *b = malloc(nn * 4);
  uint16_t *a16 = malloc(nn * 2), *b16 = malloc(nn * 2);
  if (!a || !b || !a16 || !b16) exit(1);
  for (size_t i = 0; i < nn; i++) a[i] = modern_value((uint32_t)i, 1), b[i] = modern_value((uint32_t)i, 2);
  if (is_f32) { /* the f32 kernels read b row-major: b[k][col] = b_t[col][k] */
    float *t = malloc(nn * 4);
    if (!t) exit(1);
    for (size_t k = 0; k < r->n; k++)
      for (size_t col = 0; col < r->n; col++) t[k * r->n + col] = b[col * r->n + k];
    r->a = dev_copy(&r->sm, a, nn * 4);
    r->b = dev_copy(&r->sm, t, nn * 4);
    free(t);
    r->grid = GCAP_DIM3(r->n / 16, r->n / 16, 1);
    r->block = GCAP_DIM3(16, 16, 1);
  } else {
    bool bf16 = strcmp(kernel, "mma_gemm") == 0;
    for (size_t i = 0; i < nn; i++) a16[i] = modern_bits16(a[i], bf16), b16[i] = modern_bits16(b[i], bf16);
    r->a = dev_copy(&r->sm, a16, nn * 2);
    r->b = dev_copy(&r->sm, b16, nn * 2);
    r->grid = GCAP_DIM3(r->n / 32, r->n / 32, 1);
    r->block = GCAP_DIM3(128, 1, 1);
  }
  r->c = dev_floats(&r->sm, nn, 0.0f);
  r->args[0] = &r->a, r->args[1] = &r->b, r->args[2] = &r->c, r->args[3] = &r->n;
  free(a), free(b), free(a16), free(b16);
}

static void do_modern(void *arg) {
  struct modern_run *r = arg;
  gcap_kernel *k;
  CHECK(gcap_module_get_kernel(r->sm.m, r->kernel, &k));
  CHECK(gcap_launch_kernel(r->sm.s, k, r->grid, r->block, 0, r->args));
  CHECK(gcap_stream_synchronize(r->sm.s));
}

/* The first launch (all checks on) leaves the exact product. */
static void modern_check(const char *kernel) {
  struct modern_run r;
  modern_setup(&r, kernel,
               GCAP_SIM_CHECK_MEMORY | GCAP_SIM_CHECK_SYNC | GCAP_SIM_CHECK_SHARED_RACES | GCAP_SIM_CHECK_INIT);
  do_modern(&r);
  size_t nn = (size_t)r.n * r.n;
  float *c = malloc(nn * 4);
  if (!c) exit(1);
  CHECK(gcap_memcpy(r.sm.ctx, c, r.c, nn * 4, GCAP_MEMCPY_DEVICE_TO_HOST));
  for (size_t row = 0; row < r.n; row++)
    for (size_t col = 0; col < r.n; col++) {
      double want = 0;
      for (size_t k = 0; k < r.n; k++)
        want += (double)modern_value((uint32_t)(row * r.n + k), 1) * modern_value((uint32_t)(col * r.n + k), 2);
      if ((double)c[row * r.n + col] != want) {
        fprintf(stderr, "bench_sim: kernel %s: c[%zu][%zu] = %g, want %g\n", kernel, row, col, c[row * r.n + col],
                want);
        exit(1);
      }
    }
  free(c);
  sim_close(&r.sm);
}

static uint64_t modern_instructions(struct modern_run *r) {
  gcap_sim_stats st;
  CHECK(gcap_sim_get_stats(r->sm.ctx, &st));
  return st.ptx_instructions;
}

/* Lane-instructions per second and time per launch of each kernel, against the plain tiled matmul. */
static void bench_ptx_modern(void) {
  static const char *const kernels[] = {"wmma_gemm", "mma_gemm", "cp_async_matmul"};
  for (size_t i = 0; i < sizeof kernels / sizeof kernels[0]; i++) {
    modern_check(kernels[i]);
    struct modern_run m, base;
    modern_setup(&m, kernels[i], 0);
    modern_setup(&base, "matmul", 0);
    uint64_t before = modern_instructions(&m), base_before = modern_instructions(&base);
    do_modern(&m);
    do_modern(&base);
    double per_launch = (double)(modern_instructions(&m) - before);
    double base_per_launch = (double)(modern_instructions(&base) - base_before);
    double tm = 0, tb = 0;
    median_pair_ns(do_modern, &m, do_modern, &base, &tm, &tb);
    char metric[48];
    snprintf(metric, sizeof metric, "ptx_%s", kernels[i]);
    report(metric, (size_t)per_launch, "Minstr/s", per_launch / tm * 1e3, "matmul Minstr/s", base_per_launch / tb * 1e3,
           0, false);
    snprintf(metric, sizeof metric, "ptx_%s_launch", kernels[i]);
    report(metric, (size_t)per_launch, "us/launch", tm / 1e3, "matmul us", tb / 1e3, 0, true);
    sim_close(&m.sm);
    sim_close(&base.sm);
  }
}

/* ------------------------------------------------------------- main */

static const struct benchmark {
  const char *name;
  void (*run)(void);
} benchmarks[] = {
    {"block_form", bench_block_form},
    {"threads", bench_threads},
    {"barrier", bench_barrier},
    {"dispatch", bench_dispatch},
    {"ptx", bench_ptx},
    {"ptx_checks", bench_ptx_checks},
    {"ptx_threads", bench_ptx_threads},
    {"ptx_modern", bench_ptx_modern},
};

static bool wanted(int argc, char **argv, int first, const char *name) {
  for (int i = first; i < argc; i++)
    if (strcmp(argv[i], name) == 0 || strcmp(argv[i], "all") == 0) return true;
  return first >= argc;
}

int main(int argc, char **argv) {
  int first = 1;
  if (first < argc && strcmp(argv[first], "--quick") == 0) {
    reps = 3;
    first++;
  }
  size_t count = sizeof benchmarks / sizeof benchmarks[0];
  for (int i = first; i < argc; i++) {
    bool known = strcmp(argv[i], "all") == 0;
    for (size_t b = 0; b < count; b++) known = known || strcmp(argv[i], benchmarks[b].name) == 0;
    if (!known) {
      fprintf(stderr,
              "usage: %s [--quick] [block_form threads barrier dispatch ptx ptx_checks ptx_threads ptx_modern | all]\n",
              argv[0]);
      return 2;
    }
  }
  fprintf(stderr, "%-18s %9s %10s %-12s %-14s %10s %7s %6s\n", "metric", "n", "value", "unit", "baseline", "base value",
          "ratio", "target");
  for (size_t b = 0; b < count; b++)
    if (wanted(argc, argv, first, benchmarks[b].name)) benchmarks[b].run();
  return 0;
}
