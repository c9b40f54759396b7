/*
 * Whole-graph update against re-instantiation of the same graph, for chains of stub kernel
 * nodes with two parameters, measured in one run. Each figure is the median of 7 repetitions
 * of a region of at least 20 ms. JSON lines on stdout, a table on stderr.
 *
 * usage: bench_update [N ...]      (default: 1000 8192 10000)
 */
#define _POSIX_C_SOURCE 200809L
#include <gcap/gcap.h>

#include <stdio.h>
#include <stdlib.h>
#include "timing.h"

#define REPS 7

#define CHECK(call)                                                                                           \
  do {                                                                                                        \
    gcap_status st_ = (call);                                                                                 \
    if (st_ != GCAP_SUCCESS) {                                                                                \
      fprintf(stderr, "bench_update: %s: %s: %s\n", #call, gcap_status_name(st_), gcap_last_error_message()); \
      exit(1);                                                                                                \
    }                                                                                                         \
  } while (0)

static gcap_graph *chain(gcap_context *ctx, gcap_kernel *k, size_t n, int arg) {
  gcap_graph *g;
  CHECK(gcap_graph_create(ctx, &g));
  gcap_node *prev = NULL;
  int a = arg;
  float b = 1.0f;
  void *args[] = {&a, &b};
  for (size_t i = 0; i < n; i++) {
    gcap_kernel_node_params p = {k, GCAP_DIM3(1, 1, 1), GCAP_DIM3(32, 1, 1), 0, args};
    gcap_node *node;
    CHECK(gcap_graph_add_kernel_node(g, prev ? &prev : NULL, prev ? 1 : 0, &p, &node));
    prev = node;
  }
  return g;
}

struct ctx {
  gcap_graph *g, *other;
  gcap_exec *x;
};

static void do_instantiate(void *arg) {
  struct ctx *c = arg;
  gcap_exec *x;
  CHECK(gcap_graph_instantiate(c->g, 0, &x));
  gcap_exec_destroy(x);
}

static void do_update(void *arg) {
  struct ctx *c = arg;
  gcap_exec_update_info info;
  CHECK(gcap_exec_update(c->x, c->other, &info));
}

/* Median ns per call over REPS regions (timing.c). */
static double median_ns(work_fn fn, struct ctx *c) {
  double samples[REPS];
  for (int r = 0; r < REPS; r++) samples[r] = region_ns(fn, c);
  return median_of_n(samples, REPS);
}

int main(int argc, char **argv) {
  size_t defaults[] = {1000, 8192, 10000};
  size_t count = argc > 1 ? (size_t)(argc - 1) : sizeof defaults / sizeof *defaults;
  gcap_context_options o;
  gcap_context_options_init(&o);
  o.backend = GCAP_BACKEND_SIM;
  gcap_context *ctx;
  CHECK(gcap_context_create(&o, &ctx));
  static const size_t sizes[] = {sizeof(int), sizeof(float)};
  gcap_kernel_def def = {.name = "stub", .num_params = 2, .param_sizes = sizes};
  gcap_module_desc d = {.kernels = &def, .num_kernels = 1};
  gcap_module *m;
  gcap_kernel *k;
  CHECK(gcap_module_load(ctx, &d, &m));
  CHECK(gcap_module_get_kernel(m, "stub", &k));
  fprintf(stderr, "%8s %16s %14s %8s %14s\n", "nodes", "instantiate ns", "update ns", "ratio", "update ns/node");
  for (size_t i = 0; i < count; i++) {
    size_t n = argc > 1 ? strtoul(argv[i + 1], NULL, 10) : defaults[i];
    struct ctx c = {chain(ctx, k, n, 1), chain(ctx, k, n, 2), NULL};
    CHECK(gcap_graph_instantiate(c.g, 0, &c.x));
    double inst = median_ns(do_instantiate, &c);
    double upd = median_ns(do_update, &c);
    printf("{\"metric\":\"exec_update_vs_instantiate\",\"nodes\":%zu,\"instantiate_ns\":%.0f,\"update_ns\":%.0f,"
           "\"ratio\":%.2f,\"update_ns_per_node\":%.1f}\n",
           n, inst, upd, inst / upd, upd / (double)n);
    fprintf(stderr, "%8zu %16.0f %14.0f %7.2fx %14.1f\n", n, inst, upd, inst / upd, upd / (double)n);
    gcap_exec_destroy(c.x);
    gcap_graph_destroy(c.g);
    gcap_graph_destroy(c.other);
  }
  gcap_context_destroy(ctx);
  return 0;
}
