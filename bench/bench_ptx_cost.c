/*
 * The PTX engine's cost in instructions, for machines whose clocks are too noisy to compare two
 * builds by time: each benchmark kernel of bench/kernels/ptx_bench.cu launched `launches` times
 * on one thread, IMMEDIATE, with the given checks. Run it under callgrind and count only what
 * the launches execute:
 *
 *   valgrind --tool=callgrind --callgrind-out-file=/dev/null --toggle-collect=gcap_launch_kernel \
 *     build/bench/bench_ptx_cost reduce_shuffle 3
 *
 * and compare the "Collected" figure of two builds. Usage: bench_ptx_cost KERNEL [CHECKS
 * [LAUNCHES]] with KERNEL saxpy, reduce_shared, reduce_shuffle, matmul or floor (saxpy on one
 * block of 4 warps: the per-launch floor), CHECKS the GCAP_SIM_CHECK_* bits (0).
 */
#include <gcap/gcap.h>
#include <gcap/sim.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/ptx_bench_ptx.h"

static void check(gcap_status st, const char *what) {
  if (st == GCAP_SUCCESS) return;
  fprintf(stderr, "bench_ptx_cost: %s: %s\n", what, gcap_last_error_message());
  exit(1);
}

/* n floats v, v + 1, ... v + 6, v, ... in new device memory. */
static void *floats(gcap_context *ctx, size_t n, float v) {
  float *h = malloc(n * sizeof *h);
  if (!h) exit(1);
  for (size_t i = 0; i < n; i++) h[i] = v + (float)(i % 7);
  void *d = NULL;
  check(gcap_mem_alloc(ctx, n * sizeof *h, &d), "gcap_mem_alloc");
  check(gcap_memcpy(ctx, d, h, n * sizeof *h, GCAP_MEMCPY_HOST_TO_DEVICE), "gcap_memcpy");
  free(h);
  return d;
}

struct launch {
  const char *kernel;
  gcap_dim3 grid, block;
  float a;
  uint32_t n;
  void *p[3];
  void *args[4];
};

/* The launch of `name` at the sizes of bench_sim's instruction counts (smaller than its timings). */
static int setup(gcap_context *ctx, const char *name, struct launch *l) {
  memset(l, 0, sizeof *l);
  l->a = 0.5f;
  if (strcmp(name, "saxpy") == 0 || strcmp(name, "floor") == 0) {
    bool one_block = name[0] == 'f';
    l->kernel = "saxpy";
    l->n = one_block ? 128 : 1u << 16;
    l->p[0] = floats(ctx, l->n, 1);
    l->p[1] = floats(ctx, l->n, 2);
    l->grid = GCAP_DIM3(one_block ? 1 : l->n / 256, 1, 1);
    l->block = GCAP_DIM3(one_block ? 128 : 256, 1, 1);
    l->args[0] = &l->a, l->args[1] = &l->p[0], l->args[2] = &l->p[1], l->args[3] = &l->n;
  } else if (strcmp(name, "matmul") == 0) {
    l->kernel = name;
    l->n = 64;
    l->p[0] = floats(ctx, l->n * l->n, 0.25f);
    l->p[1] = floats(ctx, l->n * l->n, 0.5f);
    l->p[2] = floats(ctx, l->n * l->n, 0);
    l->grid = GCAP_DIM3(l->n / 16, l->n / 16, 1);
    l->block = GCAP_DIM3(16, 16, 1);
    l->args[0] = &l->p[0], l->args[1] = &l->p[1], l->args[2] = &l->p[2], l->args[3] = &l->n;
  } else if (strcmp(name, "reduce_shared") == 0 || strcmp(name, "reduce_shuffle") == 0) {
    l->kernel = name;
    l->n = 1u << 16;
    l->p[0] = floats(ctx, l->n, 1);
    l->p[1] = floats(ctx, l->n / 256, 0);
    l->grid = GCAP_DIM3(l->n / 256, 1, 1);
    l->block = GCAP_DIM3(256, 1, 1);
    l->args[0] = &l->p[0], l->args[1] = &l->p[1], l->args[2] = &l->n;
  } else {
    return -1;
  }
  return 0;
}

int main(int argc, char **argv) {
  if (argc < 2 || argc > 4) {
    fprintf(stderr, "usage: %s saxpy|reduce_shared|reduce_shuffle|matmul|floor [CHECKS [LAUNCHES]]\n", argv[0]);
    return 2;
  }
  gcap_sim_options so;
  gcap_sim_options_init(&so);
  so.kernels = GCAP_SIM_KERNELS_PTX;
  so.checks = argc > 2 ? (unsigned)strtoul(argv[2], NULL, 0) : 0;
  so.exec = GCAP_SIM_EXEC_IMMEDIATE;
  so.threads = 1;
  int launches = argc > 3 ? atoi(argv[3]) : 3;
  gcap_context_options o;
  gcap_context_options_init(&o);
  o.backend = GCAP_BACKEND_SIM;
  o.sim = &so;
  gcap_context *ctx = NULL;
  check(gcap_context_create(&o, &ctx), "gcap_context_create");
  gcap_stream *s = NULL;
  check(gcap_stream_create(ctx, &s), "gcap_stream_create");
  gcap_module_desc d = {.image = ptx_bench_ptx, .image_size = sizeof ptx_bench_ptx};
  gcap_module *m = NULL;
  check(gcap_module_load(ctx, &d, &m), "gcap_module_load");
  struct launch l;
  if (setup(ctx, argv[1], &l) != 0) {
    fprintf(stderr, "bench_ptx_cost: no kernel \"%s\"\n", argv[1]);
    return 2;
  }
  gcap_kernel *k = NULL;
  check(gcap_module_get_kernel(m, l.kernel, &k), "gcap_module_get_kernel");
  for (int i = 0; i < launches; i++) check(gcap_launch_kernel(s, k, l.grid, l.block, 0, l.args), "gcap_launch_kernel");
  check(gcap_stream_synchronize(s), "gcap_stream_synchronize");
  gcap_context_destroy(ctx);
  return 0;
}
