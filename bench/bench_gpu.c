/*
 * GPU figures of the CUDA backend, each against a baseline measured in the same run:
 *   - 1000 empty kernels: per-op launches vs one graph launch (host submit, and end to end);
 *   - the first launch of a fresh executable vs later ones, and with gcap_exec_upload first;
 *   - gcap_exec_launch vs a raw cuGraphLaunch of the same CUgraphExec (gcap's overhead).
 * Medians of REPS repetitions; JSON lines on stdout, a table on stderr. Exits 77 without a GPU.
 *
 * usage: bench_gpu [--quick]
 */
#define _GNU_SOURCE
#include <gcap/cuda.h>

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define KERNELS 1000

static int reps = 7;

static const char empty_ptx[] =
    ".version 7.0\n"
    ".target sm_52\n"
    ".address_size 64\n"
    ".visible .entry gcap_empty()\n"
    "{\n"
    "  ret;\n"
    "}\n";

#define CHECK(call)                                                                                        \
  do {                                                                                                     \
    gcap_status st_ = (call);                                                                              \
    if (st_ != GCAP_SUCCESS) {                                                                             \
      fprintf(stderr, "bench_gpu: %s: %s: %s\n", #call, gcap_status_name(st_), gcap_last_error_message()); \
      exit(1);                                                                                             \
    }                                                                                                      \
  } while (0)

static double now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static int by_value(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, by_value);
  return v[n / 2];
}

static void report(const char *metric, double value, const char *unit, const char *baseline, double base) {
  double ratio = base > 0 ? value / base : 0;
  printf("{\"metric\":\"%s\",\"value\":%.3f,\"unit\":\"%s\",\"baseline\":\"%s\",\"baseline_value\":%.3f,\"ratio\":%.3f}\n",
         metric, value, unit, baseline, base, ratio);
  fflush(stdout);
  fprintf(stderr, "%-34s %12.3f %-4s %-26s %12.3f %8.3f\n", metric, value, unit, baseline, base, ratio);
}

struct gpu {
  gcap_context *ctx;
  gcap_stream *s;
  gcap_kernel *empty;
  CUresult (*graph_launch)(CUgraphExec, CUstream);
};

static void issue_kernels(struct gpu *g) {
  for (int i = 0; i < KERNELS; i++)
    CHECK(gcap_launch_kernel(g->s, g->empty, GCAP_DIM3(1, 1, 1), GCAP_DIM3(1, 1, 1), 0, NULL));
}

static gcap_exec *captured(struct gpu *g) {
  gcap_graph *graph;
  gcap_exec *x;
  CHECK(gcap_stream_begin_capture(g->s, GCAP_CAPTURE_MODE_GLOBAL));
  issue_kernels(g);
  CHECK(gcap_stream_end_capture(g->s, &graph));
  CHECK(gcap_graph_instantiate(graph, 0, &x));
  gcap_graph_destroy(graph);
  return x;
}

static void per_op_vs_graph(struct gpu *g) {
  double submit_ops[16], total_ops[16], submit_graph[16], total_graph[16];
  gcap_exec *x = captured(g);
  CHECK(gcap_exec_launch(x, g->s)); /* warm up both paths */
  issue_kernels(g);
  CHECK(gcap_stream_synchronize(g->s));
  for (int r = 0; r < reps; r++) {
    double t0 = now_us();
    issue_kernels(g);
    double t1 = now_us();
    CHECK(gcap_stream_synchronize(g->s));
    double t2 = now_us();
    CHECK(gcap_exec_launch(x, g->s));
    double t3 = now_us();
    CHECK(gcap_stream_synchronize(g->s));
    double t4 = now_us();
    submit_ops[r] = t1 - t0, total_ops[r] = t2 - t0, submit_graph[r] = t3 - t2, total_graph[r] = t4 - t2;
  }
  double so = median(submit_ops, reps), to = median(total_ops, reps);
  report("submit_1000_kernels_graph", median(submit_graph, reps), "us", "per-op launches", so);
  report("end_to_end_1000_kernels_graph", median(total_graph, reps), "us", "per-op launches", to);
  gcap_exec_destroy(x);
}

static double first_launch(struct gpu *g, bool upload) {
  gcap_exec *x = captured(g);
  CHECK(gcap_stream_synchronize(g->s));
  double t0 = now_us();
  if (upload) CHECK(gcap_exec_upload(x, g->s));
  CHECK(gcap_exec_launch(x, g->s));
  CHECK(gcap_stream_synchronize(g->s));
  double t = now_us() - t0;
  gcap_exec_destroy(x);
  return t;
}

static void first_vs_repeat(struct gpu *g) {
  double first[16], uploaded[16], repeat[16];
  for (int r = 0; r < reps; r++) first[r] = first_launch(g, false), uploaded[r] = first_launch(g, true);
  gcap_exec *x = captured(g);
  CHECK(gcap_exec_launch(x, g->s));
  CHECK(gcap_stream_synchronize(g->s));
  for (int r = 0; r < reps; r++) {
    double t0 = now_us();
    CHECK(gcap_exec_launch(x, g->s));
    CHECK(gcap_stream_synchronize(g->s));
    repeat[r] = now_us() - t0;
  }
  gcap_exec_destroy(x);
  double rep = median(repeat, reps);
  report("first_launch_1000_kernels", median(first, reps), "us", "repeat launch", rep);
  report("upload_then_first_launch", median(uploaded, reps), "us", "repeat launch", rep);
}

static void overhead_over_raw(struct gpu *g) {
  enum { LAUNCHES = 2000 };
  gcap_graph *graph;
  gcap_exec *x;
  gcap_node *n;
  CHECK(gcap_graph_create(g->ctx, &graph));
  CHECK(gcap_graph_add_empty_node(graph, NULL, 0, &n));
  CHECK(gcap_graph_instantiate(graph, 0, &x));
  CUgraphExec raw = gcap_cuda_graph_exec(x);
  CUstream s = gcap_cuda_stream(g->s);
  double ours[16], theirs[16];
  for (int r = 0; r < reps; r++) {
    double t0 = now_us();
    for (int i = 0; i < LAUNCHES; i++) CHECK(gcap_exec_launch(x, g->s));
    double t1 = now_us();
    CHECK(gcap_stream_synchronize(g->s));
    double t2 = now_us();
    for (int i = 0; i < LAUNCHES; i++)
      if (g->graph_launch(raw, s) != CUDA_SUCCESS) exit(1);
    double t3 = now_us();
    CHECK(gcap_stream_synchronize(g->s));
    ours[r] = (t1 - t0) / LAUNCHES, theirs[r] = (t3 - t2) / LAUNCHES;
  }
  double a = median(ours, reps), b = median(theirs, reps);
  report("gcap_exec_launch_submit", a, "us", "raw cuGraphLaunch", b);
  report("gcap_overhead_per_launch", a - b, "us", "target 0.5 us", 0.5);
  gcap_exec_destroy(x);
  gcap_graph_destroy(graph);
}

static void *driver_symbol(void *lib, const char *name) {
  void *p = lib ? dlsym(lib, name) : NULL;
  if (!p) {
    fprintf(stderr, "bench_gpu: libcuda.so.1 has no %s\n", name);
    exit(1);
  }
  return p;
}

int main(int argc, char **argv) {
  setvbuf(stdout, NULL, _IOLBF, 0); /* a run stopped by its time limit keeps the figures it printed */
  if (argc > 1 && strcmp(argv[1], "--quick") == 0) reps = 3;
  gcap_context_options o;
  gcap_context_options_init(&o);
  o.backend = GCAP_BACKEND_CUDA;
  struct gpu g;
  gcap_status st = gcap_context_create(&o, &g.ctx);
  if (st == GCAP_ERROR_NOT_INITIALIZED || st == GCAP_ERROR_NOT_SUPPORTED) {
    fprintf(stderr, "skipped: %s\n", gcap_last_error_message());
    return 77;
  }
  CHECK(st);
  void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  void *get_version = driver_symbol(lib, "cuDriverGetVersion"), *launch = driver_symbol(lib, "cuGraphLaunch");
  CUresult (*version_fn)(int *);
  memcpy(&version_fn, &get_version, sizeof get_version);
  memcpy(&g.graph_launch, &launch, sizeof launch);
  int version = 0;
  version_fn(&version);
  fprintf(stderr, "CUDA driver %d.%d\n", version / 1000, version % 1000 / 10);
  printf("{\"metric\":\"driver_version\",\"value\":%d}\n", version);

  gcap_module_desc d = {empty_ptx, sizeof empty_ptx, NULL, 0};
  gcap_module *m;
  CHECK(gcap_stream_create(g.ctx, &g.s));
  CHECK(gcap_module_load(g.ctx, &d, &m));
  st = gcap_module_get_kernel(m, "gcap_empty", &g.empty);
  if (st == GCAP_ERROR_NOT_SUPPORTED) { /* a driver before 12.4 cannot tell sizes: define it */
    CHECK(gcap_module_unload(m));
    gcap_kernel_def def = {.name = "gcap_empty"};
    d.kernels = &def, d.num_kernels = 1;
    CHECK(gcap_module_load(g.ctx, &d, &m));
    st = gcap_module_get_kernel(m, "gcap_empty", &g.empty);
  }
  CHECK(st);
  fprintf(stderr, "%-34s %12s %-4s %-26s %12s %8s\n", "metric", "value", "unit", "baseline", "base value", "ratio");
  per_op_vs_graph(&g);
  first_vs_repeat(&g);
  overhead_over_raw(&g);
  gcap_context_destroy(g.ctx);
  dlclose(lib);
  return 0;
}
