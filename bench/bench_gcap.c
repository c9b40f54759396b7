/*
 * How fast gcap records, instantiates and replays graphs on the simulator, each figure against a
 * baseline measured in the same run (these machines are shared and noisy). Every figure is the
 * median of REPS repetitions of a region of at least 20 ms. JSON lines on stdout, a table on
 * stderr, progress on stderr for long runs.
 *
 * usage: bench_gcap [--quick] [--max N] [metric ...]
 *   metrics: record instantiate replay eager bandwidth memory update races stream_check deferred strict add
 *            destroy fills setter peer (default: all; peer only where oneTBB was found at build time)
 *   --quick  3 repetitions, N up to 1e4 (a smoke run); --max N caps the graph sizes (default 1e6)
 */
#define _GNU_SOURCE
#include <gcap/gcap.h>
#include <gcap/sim.h>

#include <malloc.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "timing.h"
#ifdef GCAP_BENCH_PEER
#include "peer.h"
#endif

#define WIDTH 4 /* streams of the fork/join shape */

static int reps = 7;
static size_t max_nodes = 1000000;

#define CHECK(call)                                                                                         \
  do {                                                                                                      \
    gcap_status st_ = (call);                                                                               \
    if (st_ != GCAP_SUCCESS) {                                                                              \
      fprintf(stderr, "bench_gcap: %s: %s: %s\n", #call, gcap_status_name(st_), gcap_last_error_message()); \
      exit(1);                                                                                              \
    }                                                                                                       \
  } while (0)

static double median_of(double *samples) { return median_of_n(samples, reps); }

static void progress(double started, const char *what, int r) {
  if (now_ns() - started > 2e9) fprintf(stderr, "\r  %s: repetition %d/%d ", what, r + 1, reps);
}

static void progress_done(double started) {
  if (now_ns() - started > 2e9) fprintf(stderr, "\r%*s\r", 60, "");
}

/* Median ns of one call of fn over `reps` regions. */
static double median_ns(work_fn fn, void *arg, const char *what) {
  double samples[16];
  double started = now_ns();
  for (int r = 0; r < reps; r++) {
    samples[r] = region_ns(fn, arg);
    progress(started, what, r);
  }
  progress_done(started);
  return median_of(samples);
}

static const char *pair_what; /* what median_pair_ns is measuring, for its progress line */

static void pair_progress(double started, int r) { progress(started, pair_what, r); }

/* median_pair_of with one argument for both, and a progress line on long runs. */
static void median_pair_ns(work_fn subject, work_fn baseline, void *arg, const char *what, double *subject_ns,
                           double *baseline_ns) {
  double started = now_ns();
  pair_what = what;
  median_pair_of(subject, arg, baseline, arg, reps, pair_progress, subject_ns, baseline_ns);
  progress_done(started);
}

static void report(const char *metric, const char *shape, size_t n, const char *unit, double value,
                   const char *baseline, double baseline_value, double target, bool lower_is_better) {
  double ratio = baseline_value > 0 ? value / baseline_value : 0;
  printf("{\"metric\":\"%s\",\"shape\":\"%s\",\"n\":%zu,\"unit\":\"%s\",\"value\":%.3f,\"baseline\":\"%s\","
         "\"baseline_value\":%.3f,\"ratio\":%.3f",
         metric, shape, n, unit, value, baseline, baseline_value, ratio);
  const char *verdict = "";
  if (target > 0) {
    bool met = lower_is_better ? value <= target : value >= target;
    printf(",\"target\":%.3f,\"met\":%s", target, met ? "true" : "false");
    verdict = met ? "met" : "MISSED";
  }
  printf("}\n");
  fflush(stdout);
  fprintf(stderr, "%-22s %-9s %8zu %12.2f %-10s %-16s %12.2f %8.3f %8s\n", metric, shape, n, value, unit, baseline,
          baseline_value, ratio, verdict);
}

/* ------------------------------------------------------------ fixture */

struct bench {
  gcap_context *ctx;
  gcap_stream *s[WIDTH];
  gcap_event *fork, *join[WIDTH];
  gcap_kernel *stub;
  unsigned char *dev_a, *dev_b; /* 64 MiB each */
  unsigned char *host_a, *host_b; /* the libc baselines' buffers: host code may not touch device memory */
};

#define BUFFER (64u << 20)

static void bench_open(struct bench *b) {
  memset(b, 0, sizeof *b);
  gcap_context_options o;
  gcap_context_options_init(&o);
  o.backend = GCAP_BACKEND_SIM;
  CHECK(gcap_context_create(&o, &b->ctx));
  for (int i = 0; i < WIDTH; i++) {
    CHECK(gcap_stream_create(b->ctx, &b->s[i]));
    CHECK(gcap_event_create(b->ctx, &b->join[i]));
  }
  CHECK(gcap_event_create(b->ctx, &b->fork));
  static const size_t sizes[] = {sizeof(int), sizeof(float)};
  gcap_kernel_def def = {.name = "stub", .num_params = 2, .param_sizes = sizes};
  gcap_module_desc d = {.kernels = &def, .num_kernels = 1};
  gcap_module *m;
  CHECK(gcap_module_load(b->ctx, &d, &m));
  CHECK(gcap_module_get_kernel(m, "stub", &b->stub));
  CHECK(gcap_mem_alloc(b->ctx, BUFFER, (void **)&b->dev_a));
  CHECK(gcap_mem_alloc(b->ctx, BUFFER, (void **)&b->dev_b));
  CHECK(gcap_host_alloc(b->ctx, BUFFER, (void **)&b->host_a));
  CHECK(gcap_host_alloc(b->ctx, BUFFER, (void **)&b->host_b));
  CHECK(gcap_memset_async(b->s[0], b->dev_a, 1, BUFFER));
  CHECK(gcap_stream_synchronize(b->s[0]));
  memset(b->host_a, 2, BUFFER);
}

static void bench_close(struct bench *b) { gcap_context_destroy(b->ctx); }

/* The recorded mix: memset, memcpy, stub kernel with two parameters, in turn. */
static void issue_one(struct bench *b, gcap_stream *s, size_t i) {
  static int a = 1;
  static float f = 2.0f;
  void *args[] = {&a, &f};
  switch (i % 3) {
  case 0: CHECK(gcap_memset_async(s, b->dev_a + (i % 64) * 64, 0, 64)); break;
  case 1: CHECK(gcap_memcpy_async(s, b->dev_b + (i % 64) * 64, b->dev_a, 64, GCAP_MEMCPY_DEVICE_TO_DEVICE)); break;
  default: CHECK(gcap_launch_kernel(s, b->stub, GCAP_DIM3(1, 1, 1), GCAP_DIM3(1, 1, 1), 0, args)); break;
  }
}

/* n nodes as one chain, or as WIDTH chains forked from and joined into the first stream. */
static void issue_shape(struct bench *b, size_t n, bool fork_join) {
  if (!fork_join) {
    for (size_t i = 0; i < n; i++) issue_one(b, b->s[0], i);
    return;
  }
  CHECK(gcap_event_record(b->fork, b->s[0]));
  for (int w = 1; w < WIDTH; w++) CHECK(gcap_stream_wait_event(b->s[w], b->fork));
  for (size_t i = 0; i < n; i++) issue_one(b, b->s[i % WIDTH], i / WIDTH);
  for (int w = 1; w < WIDTH; w++) {
    CHECK(gcap_event_record(b->join[w], b->s[w]));
    CHECK(gcap_stream_wait_event(b->s[0], b->join[w]));
  }
}

static gcap_graph *record(struct bench *b, size_t n, bool fork_join) {
  gcap_graph *g;
  CHECK(gcap_stream_begin_capture(b->s[0], GCAP_CAPTURE_MODE_GLOBAL));
  issue_shape(b, n, fork_join);
  CHECK(gcap_stream_end_capture(b->s[0], &g));
  return g;
}

/* ------------------------------------------------------ record, instantiate */

struct shape_run {
  struct bench *b;
  size_t n;
  bool fork_join;
  gcap_graph *g;
};

static void do_record(void *arg) {
  struct shape_run *r = arg;
  gcap_graph_destroy(record(r->b, r->n, r->fork_join));
}

static void do_eager_issue(void *arg) {
  struct shape_run *r = arg;
  issue_shape(r->b, r->n, r->fork_join);
}

static void do_instantiate(void *arg) {
  struct shape_run *r = arg;
  gcap_exec *x;
  CHECK(gcap_graph_instantiate(r->g, 0, &x));
  gcap_exec_destroy(x);
}

static size_t sizes_list(size_t *out) {
  static const size_t all[] = {1000, 10000, 100000, 1000000};
  size_t k = 0;
  for (size_t i = 0; i < 4; i++)
    if (all[i] <= max_nodes) out[k++] = all[i];
  return k;
}

/* The phase figures by size, kept for the growth report. */
static double record_ns[2][4], instantiate_ns[2][4];

static void bench_record_instantiate(struct bench *b, bool do_rec, bool do_inst) {
  size_t sizes[4];
  size_t count = sizes_list(sizes);
  for (int shape = 0; shape < 2; shape++) {
    const char *name = shape ? "forkjoin4" : "chain";
    for (size_t i = 0; i < count; i++) {
      struct shape_run r = {b, sizes[i], shape == 1, NULL};
      char what[64];
      snprintf(what, sizeof what, "record %s %zu", name, sizes[i]);
      double rec = 0, eager = 0;
      if (do_rec) median_pair_ns(do_record, do_eager_issue, &r, what, &rec, &eager);
      else rec = median_ns(do_record, &r, what);
      rec /= (double)sizes[i];
      eager /= (double)sizes[i];
      if (do_rec) {
        report("record", name, sizes[i], "ns/node", rec, "eager issue", eager, 50, true);
        report("record_vs_eager", name, sizes[i], "x", rec / eager, "eager issue", 1, 1.5, true);
      }
      record_ns[shape][i] = rec;
      if (!do_inst) continue;
      r.g = record(b, sizes[i], shape == 1);
      snprintf(what, sizeof what, "instantiate %s %zu", name, sizes[i]);
      double inst = median_ns(do_instantiate, &r, what) / (double)sizes[i];
      instantiate_ns[shape][i] = inst;
      report("instantiate", name, sizes[i], "ns/node", inst, "record", rec, 15, true);
      gcap_graph_destroy(r.g);
    }
  }
  for (int shape = 0; shape < 2 && count > 1; shape++) {
    const char *name = shape ? "forkjoin4" : "chain";
    size_t last = count - 1;
    if (do_rec)
      report("growth_record", name, sizes[last], "x", record_ns[shape][last] / record_ns[shape][0], "n=1000", 1, 1.3,
             true);
    if (do_inst)
      report("growth_instantiate", name, sizes[last], "x", instantiate_ns[shape][last] / instantiate_ns[shape][0],
             "n=1000", 1, 1.5, true);
  }
  for (size_t i = 0; do_rec && i < count; i++)
    report("forkjoin_vs_chain", "record", sizes[i], "x", record_ns[1][i] / record_ns[0][i], "chain", 1, 1.2, true);
}

/* ------------------------------------------------------------ explicit add */

/* n 64-byte fills, each depending on the one before, added by hand, then the graph destroyed. */
static void do_explicit_add(void *arg) {
  struct shape_run *r = arg;
  gcap_graph *g;
  CHECK(gcap_graph_create(r->b->ctx, &g));
  gcap_node *prev = NULL, *n = NULL;
  for (size_t i = 0; i < r->n; i++, prev = n) {
    gcap_memset_node_params p = {r->b->dev_a + (i % 64) * 64, 0, 1, 64, 1, 64};
    CHECK(gcap_graph_add_memset_node(g, prev ? &prev : NULL, prev ? 1 : 0, &p, &n));
  }
  gcap_graph_destroy(g);
}

/* The same chain of fills recorded by capture. */
static void do_record_fills(void *arg) {
  struct shape_run *r = arg;
  gcap_graph *g;
  CHECK(gcap_stream_begin_capture(r->b->s[0], GCAP_CAPTURE_MODE_GLOBAL));
  for (size_t i = 0; i < r->n; i++) CHECK(gcap_memset_async(r->b->s[0], r->b->dev_a + (i % 64) * 64, 0, 64));
  CHECK(gcap_stream_end_capture(r->b->s[0], &g));
  gcap_graph_destroy(g);
}

static void bench_explicit_add(struct bench *b) {
  size_t sizes[4];
  size_t count = sizes_list(sizes);
  for (size_t i = 0; i < count; i++) {
    struct shape_run r = {b, sizes[i], false, NULL};
    char what[64];
    snprintf(what, sizeof what, "add chain %zu", sizes[i]);
    double add = 0, rec = 0;
    median_pair_ns(do_explicit_add, do_record_fills, &r, what, &add, &rec);
    report("add", "chain", sizes[i], "ns/node", add / (double)sizes[i], "record by capture", rec / (double)sizes[i],
           50, true);
  }
}

/* --------------------------------------------------------------- replay */

struct copies {
  struct bench *b;
  size_t n, bytes;
  gcap_exec *x;
};

static gcap_exec *copy_chain(struct bench *b, size_t n, size_t bytes) {
  gcap_graph *g;
  CHECK(gcap_graph_create(b->ctx, &g));
  gcap_node *prev = NULL;
  for (size_t i = 0; i < n; i++) {
    gcap_memcpy_node_params p = {b->dev_b, b->dev_a, bytes, GCAP_MEMCPY_DEVICE_TO_DEVICE};
    gcap_node *node;
    CHECK(gcap_graph_add_memcpy_node(g, prev ? &prev : NULL, prev ? 1 : 0, &p, &node));
    prev = node;
  }
  gcap_exec *x;
  CHECK(gcap_graph_instantiate(g, 0, &x));
  gcap_graph_destroy(g);
  return x;
}

static void do_direct_copies(void *arg) {
  struct copies *c = arg;
  for (size_t i = 0; i < c->n; i++) memcpy(c->b->host_b, c->b->host_a, c->bytes);
  __asm__ volatile("" ::: "memory");
}

static void do_eager_copies(void *arg) {
  struct copies *c = arg;
  for (size_t i = 0; i < c->n; i++)
    CHECK(gcap_memcpy_async(c->b->s[0], c->b->dev_b, c->b->dev_a, c->bytes, GCAP_MEMCPY_DEVICE_TO_DEVICE));
  CHECK(gcap_stream_synchronize(c->b->s[0]));
}

static void do_replay(void *arg) {
  struct copies *c = arg;
  CHECK(gcap_exec_launch(c->x, c->b->s[0]));
  CHECK(gcap_stream_synchronize(c->b->s[0]));
}

static void bench_replay(struct bench *b, bool vs_direct, bool vs_eager) {
  size_t sizes[4];
  size_t count = sizes_list(sizes);
  for (size_t i = 0; i < count; i++) {
    size_t n = sizes[i];
    struct copies c = {b, n, 4096, copy_chain(b, n, 4096)};
    char what[64];
    snprintf(what, sizeof what, "replay %zu", n);
    double graph = 0, direct = 0, eager = 0;
    if (vs_direct) {
      median_pair_ns(do_replay, do_direct_copies, &c, what, &graph, &direct);
      report("replay_overhead", "chain", n, "ns/node", (graph - direct) / (double)n, "direct memcpy loop",
             direct / (double)n, 5, true);
      report("replay_ratio", "chain", n, "x", graph / direct, "direct memcpy loop", 1, 1.05, true);
    }
    if (vs_eager) {
      median_pair_ns(do_replay, do_eager_copies, &c, what, &graph, &eager);
      report("replay_vs_eager", "chain", n, "ns/node", graph / (double)n, "eager gcap_memcpy_async", eager / (double)n,
             0, true);
    }
    gcap_exec_destroy(c.x);
  }
}

/* ------------------------------------------------------------ bandwidth */

struct one_node {
  struct bench *b;
  size_t bytes;
  gcap_exec *x;
};

static gcap_exec *single(struct bench *b, size_t bytes, bool fill) {
  gcap_graph *g;
  gcap_node *n;
  CHECK(gcap_graph_create(b->ctx, &g));
  if (fill) {
    gcap_memset_node_params p = {b->dev_b, 7, 1, bytes, 1, 0};
    CHECK(gcap_graph_add_memset_node(g, NULL, 0, &p, &n));
  } else {
    gcap_memcpy_node_params p = {b->dev_b, b->host_a, bytes, GCAP_MEMCPY_HOST_TO_DEVICE};
    CHECK(gcap_graph_add_memcpy_node(g, NULL, 0, &p, &n));
  }
  gcap_exec *x;
  CHECK(gcap_graph_instantiate(g, 0, &x));
  gcap_graph_destroy(g);
  return x;
}

static void do_launch_one(void *arg) {
  struct one_node *o = arg;
  CHECK(gcap_exec_launch(o->x, o->b->s[0]));
}

static void do_libc_memcpy(void *arg) {
  struct one_node *o = arg;
  memcpy(o->b->host_b, o->b->host_a, o->bytes);
  __asm__ volatile("" ::: "memory");
}

static void do_libc_memset(void *arg) {
  struct one_node *o = arg;
  memset(o->b->host_b, 7, o->bytes);
  __asm__ volatile("" ::: "memory");
}

static void bench_bandwidth(struct bench *b) {
  static const size_t sizes[] = {64u << 10, 1u << 20, 16u << 20, 64u << 20};
  for (size_t i = 0; i < 4; i++) {
    size_t bytes = sizes[i];
    if (max_nodes < 100000 && bytes > (1u << 20)) break; /* --quick */
    for (int fill = 0; fill < 2; fill++) {
      struct one_node o = {b, bytes, single(b, bytes, fill)};
      double node = 0, libc = 0;
      median_pair_ns(do_launch_one, fill ? do_libc_memset : do_libc_memcpy, &o, "bandwidth", &node, &libc);
      double gbps = (double)bytes / node, base = (double)bytes / libc;
      report(fill ? "fill_bandwidth" : "copy_bandwidth", "1 node", bytes, "GB/s", gbps,
             fill ? "libc memset" : "libc memcpy", base, 0, false);
      gcap_exec_destroy(o.x);
    }
  }
}

/* --------------------------------------------------------------- memory */

static size_t heap_in_use(void) {
  struct mallinfo2 mi = mallinfo2();
  return mi.uordblks + mi.hblkhd;
}

/* n 64-byte fills recorded by capture: one chain, or WIDTH chains forked from and joined into s[0]. */
static gcap_graph *record_fills(struct bench *b, size_t n, bool fork_join) {
  gcap_graph *g;
  CHECK(gcap_stream_begin_capture(b->s[0], GCAP_CAPTURE_MODE_GLOBAL));
  if (fork_join) {
    CHECK(gcap_event_record(b->fork, b->s[0]));
    for (int w = 1; w < WIDTH; w++) CHECK(gcap_stream_wait_event(b->s[w], b->fork));
  }
  for (size_t i = 0; i < n; i++)
    CHECK(gcap_memset_async(b->s[fork_join ? i % WIDTH : 0], b->dev_a + (i % 64) * 64, 0, 64));
  for (int w = 1; fork_join && w < WIDTH; w++) {
    CHECK(gcap_event_record(b->join[w], b->s[w]));
    CHECK(gcap_stream_wait_event(b->s[0], b->join[w]));
  }
  CHECK(gcap_stream_end_capture(b->s[0], &g));
  return g;
}

struct bytes {
  size_t graph, exec;
  double edges_per_node;
};

/*
 * Heap bytes of a graph of n nodes (shape 0: a chain of fills, 1: fills in fork/join, 2: the mix)
 * and of its executable, on a fresh context: a context keeps the node chunks of graphs it freed.
 */
static struct bytes bytes_of(size_t n, int shape) {
  struct bench fresh;
  bench_open(&fresh);
  size_t before = heap_in_use();
  gcap_graph *g = shape == 2 ? record(&fresh, n, false) : record_fills(&fresh, n, shape == 1);
  struct bytes out = {heap_in_use() - before, 0, (double)gcap_graph_edge_count(g) / (double)n};
  gcap_exec *x;
  CHECK(gcap_graph_instantiate(g, 0, &x));
  out.exec = heap_in_use() - before - out.graph;
  gcap_exec_destroy(x);
  gcap_graph_destroy(g);
  bench_close(&fresh);
  return out;
}

static void bench_memory(void) {
  size_t sizes[4];
  size_t count = sizes_list(sizes);
  for (int shape = 0; shape < 3; shape++) {
    static const char *const names[] = {"fills", "forkjoin4", "mix"};
    for (size_t i = 0; i < count; i++) {
      size_t n = sizes[i];
      struct bytes by = bytes_of(n, shape);
      double graph_target = 64 + 8 * by.edges_per_node;
      report("graph_bytes", names[shape], n, "B/node", (double)by.graph / (double)n, "target", graph_target,
             graph_target, true);
      report("exec_bytes", names[shape], n, "B/node", (double)by.exec / (double)n, "target", 48, shape == 0 ? 48 : 0,
             true);
    }
  }
}

/* ------------------------------------------------------- replay of fills */

struct fill_run {
  struct bench *b;
  size_t n;
  gcap_exec *x;
  gcap_graph *g;
  gcap_node **nodes; /* the setters' targets */
};

static void do_replay_fills(void *arg) {
  struct fill_run *f = arg;
  CHECK(gcap_exec_launch(f->x, f->b->s[0]));
  CHECK(gcap_stream_synchronize(f->b->s[0]));
}

/* The same 64-byte fills as a plain C loop on host memory. */
static void do_plain_fills(void *arg) {
  struct fill_run *f = arg;
  for (size_t i = 0; i < f->n; i++) memset(f->b->host_b + (i % 64) * 64, 0, 64);
  __asm__ volatile("" ::: "memory");
}

static void bench_fills(struct bench *b) {
  size_t sizes[4];
  size_t count = sizes_list(sizes);
  for (size_t i = 0; i < count; i++) {
    struct fill_run f = {b, sizes[i], NULL, record_fills(b, sizes[i], false), NULL};
    CHECK(gcap_graph_instantiate(f.g, 0, &f.x));
    double graph = 0, plain = 0;
    median_pair_ns(do_replay_fills, do_plain_fills, &f, "replay fills", &graph, &plain);
    report("replay_fills", "chain", sizes[i], "ns/node", graph / (double)sizes[i], "plain C loop",
           plain / (double)sizes[i], 0, true);
    report("replay_fills_ratio", "chain", sizes[i], "x", graph / plain, "plain C loop", 1, 1.5, true);
    gcap_exec_destroy(f.x);
    gcap_graph_destroy(f.g);
  }
}

/* ------------------------------------------------------------- destroy */

/* ns per node to destroy graphs of n recorded nodes (the mix), over at least 1e5 nodes per sample. */
static double destroy_ns(struct bench *b, size_t n) {
  size_t graphs = n >= 100000 ? 1 : 100000 / n;
  gcap_graph **gs = malloc(graphs * sizeof *gs);
  double samples[BENCH_MAX_REPS];
  if (!gs) exit(1);
  for (int r = 0; r < reps; r++) {
    for (size_t k = 0; k < graphs; k++) gs[k] = record(b, n, false);
    double started = now_ns();
    for (size_t k = 0; k < graphs; k++) gcap_graph_destroy(gs[k]);
    samples[r] = (now_ns() - started) / (double)(graphs * n);
  }
  free(gs);
  return median_of(samples);
}

static void bench_destroy(struct bench *b) {
  size_t sizes[4];
  size_t count = sizes_list(sizes);
  for (size_t i = 0; i < count; i++) {
    struct shape_run r = {b, sizes[i], false, NULL};
    double rec = median_ns(do_record, &r, "record") / (double)sizes[i];
    report("destroy", "chain", sizes[i], "ns/node", destroy_ns(b, sizes[i]), "record and destroy", rec, 10, true);
  }
}

/* -------------------------------------------------------------- setters */

#define SETTER_CALLS 10000

static void do_exec_setter(void *arg) {
  struct fill_run *f = arg;
  for (size_t i = 0; i < SETTER_CALLS; i++) {
    gcap_memset_node_params p = {f->b->dev_a + (i % 64) * 64, (uint32_t)i, 1, 64, 1, 64};
    CHECK(gcap_exec_memset_node_set_params(f->x, f->nodes[i % f->n], &p));
  }
}

static void do_graph_setter(void *arg) {
  struct fill_run *f = arg;
  for (size_t i = 0; i < SETTER_CALLS; i++) {
    gcap_memset_node_params p = {f->b->dev_a + (i % 64) * 64, (uint32_t)i, 1, 64, 1, 64};
    CHECK(gcap_node_set_memset_params(f->nodes[i % f->n], &p));
  }
}

/* gcap_exec_memset_node_set_params on an executable of 1e4 fills, against the graph node's setter. */
static void bench_setter(struct bench *b) {
  struct fill_run f = {b, 10000, NULL, record_fills(b, 10000, false), malloc(10000 * sizeof(gcap_node *))};
  size_t count = f.n;
  if (!f.nodes) exit(1);
  CHECK(gcap_graph_get_nodes(f.g, f.nodes, &count));
  CHECK(gcap_graph_instantiate(f.g, 0, &f.x));
  double exec = 0, graph = 0;
  median_pair_ns(do_exec_setter, do_graph_setter, &f, "setter", &exec, &graph);
  report("exec_setter", "memset", f.n, "ns/call", exec / SETTER_CALLS, "graph node setter", graph / SETTER_CALLS, 30,
         true);
  gcap_exec_destroy(f.x);
  gcap_graph_destroy(f.g);
  free(f.nodes);
}

/* ----------------------------------------------------------------- peer */

#ifdef GCAP_BENCH_PEER
struct peer_run {
  struct bench *b;
  size_t n;
  bool fork_join;
  peer_graph *pg;
  gcap_exec *x;
};

static void do_gcap_build(void *arg) {
  struct peer_run *p = arg;
  gcap_graph_destroy(record_fills(p->b, p->n, p->fork_join));
}

static void do_peer_build(void *arg) {
  struct peer_run *p = arg;
  peer_destroy(peer_build(p->n, p->fork_join, WIDTH, p->b->host_b));
}

static void do_gcap_run(void *arg) {
  struct peer_run *p = arg;
  CHECK(gcap_exec_launch(p->x, p->b->s[0]));
  CHECK(gcap_stream_synchronize(p->b->s[0]));
}

static void do_peer_run(void *arg) { peer_run(((struct peer_run *)arg)->pg); }

/* The same task graphs of 64-byte fills built, run and held in memory by gcap and by the peer. */
static void bench_peer(struct bench *b) {
  size_t sizes[4];
  size_t count = sizes_list(sizes);
  for (int shape = 0; shape < 2; shape++) {
    const char *name = shape ? "forkjoin4" : "chain";
    for (size_t i = 0; i < count; i++) {
      size_t n = sizes[i];
      struct peer_run p = {b, n, shape == 1, NULL, NULL};
      double ours = 0, theirs = 0;
      median_pair_ns(do_gcap_build, do_peer_build, &p, "peer build", &ours, &theirs);
      report("peer_build", name, n, "ns/node", ours / (double)n, peer_name(), theirs / (double)n, 0, true);
      struct bytes by = bytes_of(n, shape);
      gcap_graph *g = record_fills(b, n, shape == 1);
      CHECK(gcap_graph_instantiate(g, 0, &p.x));
      size_t before = heap_in_use();
      p.pg = peer_build(n, shape == 1, WIDTH, b->host_b);
      size_t peer = heap_in_use() - before;
      if (!p.pg) exit(1);
      report("peer_graph_bytes", name, n, "B/node", (double)by.graph / (double)n, peer_name(),
             (double)peer / (double)n, 0, true);
      report("peer_exec_bytes", name, n, "B/node", (double)by.exec / (double)n, peer_name(), (double)peer / (double)n,
             0, true);
      median_pair_ns(do_gcap_run, do_peer_run, &p, "peer run", &ours, &theirs);
      report("peer_run", name, n, "ns/node", ours / (double)n, peer_name(), theirs / (double)n, 0, true);
      peer_destroy(p.pg);
      gcap_exec_destroy(p.x);
      gcap_graph_destroy(g);
    }
  }
}
#endif

/* --------------------------------------------------------------- update */

struct update_run {
  gcap_graph *g, *other;
  gcap_exec *x;
};

static gcap_graph *kernel_chain(struct bench *b, size_t n, int arg) {
  gcap_graph *g;
  CHECK(gcap_graph_create(b->ctx, &g));
  gcap_node *prev = NULL;
  float f = 1.0f;
  void *args[] = {&arg, &f};
  for (size_t i = 0; i < n; i++) {
    gcap_kernel_node_params p = {b->stub, GCAP_DIM3(1, 1, 1), GCAP_DIM3(32, 1, 1), 0, args};
    gcap_node *node;
    CHECK(gcap_graph_add_kernel_node(g, prev ? &prev : NULL, prev ? 1 : 0, &p, &node));
    prev = node;
  }
  return g;
}

static void do_update(void *arg) {
  struct update_run *u = arg;
  gcap_exec_update_info info;
  CHECK(gcap_exec_update(u->x, u->other, &info));
}

static void do_reinstantiate(void *arg) {
  struct update_run *u = arg;
  gcap_exec *x;
  CHECK(gcap_graph_instantiate(u->g, 0, &x));
  gcap_exec_destroy(x);
}

static void bench_update(struct bench *b) {
  size_t sizes[4];
  size_t count = sizes_list(sizes);
  for (size_t i = 0; i < count && sizes[i] <= 100000; i++) {
    struct update_run u = {kernel_chain(b, sizes[i], 1), kernel_chain(b, sizes[i], 2), NULL};
    CHECK(gcap_graph_instantiate(u.g, 0, &u.x));
    double upd = 0, inst = 0;
    median_pair_ns(do_update, do_reinstantiate, &u, "update", &upd, &inst);
    report("update_speedup", "chain", sizes[i], "x", inst / upd, "instantiate", 1, 10, false);
    gcap_exec_destroy(u.x);
    gcap_graph_destroy(u.g);
    gcap_graph_destroy(u.other);
  }
}

/* ------------------------------------------------------------ strict memory */

/* The same work on a context with strict_memory ([1]) and one without ([0]). */
struct strict_run {
  gcap_context *ctx[2];
  gcap_stream *s[2];
  unsigned char *dev[2];
  gcap_exec *x[2];
};

static void strict_open(struct strict_run *r, int strict, size_t resident) {
  gcap_sim_options so;
  gcap_sim_options_init(&so);
  so.strict_memory = strict;
  gcap_context_options o;
  gcap_context_options_init(&o);
  o.backend = GCAP_BACKEND_SIM;
  o.sim = &so;
  CHECK(gcap_context_create(&o, &r->ctx[strict]));
  CHECK(gcap_stream_create(r->ctx[strict], &r->s[strict]));
  CHECK(gcap_mem_alloc(r->ctx[strict], resident, (void **)&r->dev[strict]));
  CHECK(gcap_memset_async(r->s[strict], r->dev[strict], 1, resident)); /* every page resident */
  CHECK(gcap_stream_synchronize(r->s[strict]));
  gcap_graph *g;
  gcap_node *n;
  gcap_memset_node_params p = {r->dev[strict], 7, 1, 64, 1, 0};
  CHECK(gcap_graph_create(r->ctx[strict], &g));
  CHECK(gcap_graph_add_memset_node(g, NULL, 0, &p, &n));
  CHECK(gcap_graph_instantiate(g, 0, &r->x[strict]));
  gcap_graph_destroy(g);
}

static void do_fill(struct strict_run *r, int strict) { CHECK(gcap_memset_async(r->s[strict], r->dev[strict], 0, 64)); }
static void do_strict_fill(void *arg) { do_fill(arg, 1); }
static void do_plain_fill(void *arg) { do_fill(arg, 0); }
static void do_strict_launch(void *arg) {
  struct strict_run *r = arg;
  CHECK(gcap_exec_launch(r->x[1], r->s[1]));
}
static void do_plain_launch(void *arg) {
  struct strict_run *r = arg;
  CHECK(gcap_exec_launch(r->x[0], r->s[0]));
}

/* What strict memory adds to a unit of work (an eager 64-byte fill, a launch of one fill node), by memory in use. */
static void bench_strict(void) {
  static const size_t sizes[] = {4096, 16u << 20, 256u << 20};
  for (size_t i = 0; i < 3 && (i < 2 || max_nodes >= 100000); i++) {
    struct strict_run r;
    strict_open(&r, 0, sizes[i]);
    strict_open(&r, 1, sizes[i]);
    double strict = 0, plain = 0;
    median_pair_ns(do_strict_fill, do_plain_fill, &r, "strict", &strict, &plain);
    report("strict_eager_op", "resident", sizes[i], "ns/op", strict, "without strict", plain, 0, true);
    median_pair_ns(do_strict_launch, do_plain_launch, &r, "strict", &strict, &plain);
    report("strict_launch", "resident", sizes[i], "ns/op", strict, "without strict", plain, 0, true);
    for (int k = 0; k < 2; k++) gcap_context_destroy(r.ctx[k]);
  }
}

/* ----------------------------------------------------------------- main */

static bool wanted(int argc, char **argv, int first, const char *metric) {
  bool any = false;
  for (int i = first; i < argc; i++) {
    if (strcmp(argv[i], metric) == 0 || strcmp(argv[i], "all") == 0) return true;
    any = true;
  }
  return !any;
}

/* ------------------------------------------------------------ race analysis */

/* WIDTH branches between a fork and a join node, each filling its own part of dev_a and reading dev_b. */
static gcap_graph *branches(struct bench *b, size_t n) {
  gcap_graph *g;
  gcap_node *fork, *tails[WIDTH];
  CHECK(gcap_graph_create(b->ctx, &g));
  CHECK(gcap_graph_add_empty_node(g, NULL, 0, &fork));
  for (int w = 0; w < WIDTH; w++) tails[w] = fork;
  for (size_t i = 0; i < n; i++) {
    int w = (int)(i % WIDTH);
    unsigned char *part = b->dev_a + (size_t)w * (BUFFER / WIDTH) + (i / WIDTH % 64) * 64;
    gcap_node *node;
    if (i / WIDTH % 2 == 0) {
      gcap_memset_node_params p = {part, 0, 1, 64, 1, 0};
      CHECK(gcap_graph_add_memset_node(g, &tails[w], 1, &p, &node));
    } else {
      gcap_memcpy_node_params p = {part, b->dev_b, 64, GCAP_MEMCPY_DEVICE_TO_DEVICE};
      CHECK(gcap_graph_add_memcpy_node(g, &tails[w], 1, &p, &node));
    }
    tails[w] = node;
  }
  gcap_node *join;
  CHECK(gcap_graph_add_empty_node(g, tails, WIDTH, &join));
  return g;
}

struct race_run {
  gcap_graph *g;
  size_t races;
};

static void do_find_races(void *arg) {
  struct race_run *r = arg;
  CHECK(gcap_graph_find_races(r->g, NULL, &r->races));
}

static void do_instantiate_graph(void *arg) {
  struct race_run *r = arg;
  gcap_exec *x;
  CHECK(gcap_graph_instantiate(r->g, 0, &x));
  gcap_exec_destroy(x);
}

static void bench_races(struct bench *b) {
  size_t sizes[4];
  size_t count = sizes_list(sizes);
  for (int shape = 0; shape < 2; shape++) {
    for (size_t i = 0; i < count; i++) {
      size_t n = sizes[i];
      struct race_run r = {shape ? branches(b, n) : record(b, n, false), 0};
      char what[64];
      snprintf(what, sizeof what, "races %zu", n);
      double found = 0, inst = 0;
      median_pair_ns(do_find_races, do_instantiate_graph, &r, what, &found, &inst);
      if (r.races != 0) {
        fprintf(stderr, "bench_gcap: the %s graph of %zu nodes has %zu races; it should have none\n",
                shape ? "forkjoin4" : "chain", n, r.races);
        exit(1);
      }
      report("races", shape ? "forkjoin4" : "chain", n, "ns/node", found / (double)n, "instantiate",
             inst / (double)n, 0, true);
      report("races_total", shape ? "forkjoin4" : "chain", n, "ms", found / 1e6, "instantiate", inst / 1e6, 0, true);
      gcap_graph_destroy(r.g);
    }
  }
}

/* ------------------------------------------------------------ stream race check */

#define FILLS 100000

/* One stream on a simulator context with or without check_races, and `buffers` pieces of 64 bytes. */
struct fills {
  gcap_context *ctx;
  gcap_stream *s;
  unsigned char *dev;
  size_t buffers;
};

static void fills_open_as(struct fills *f, bool check, gcap_sim_exec exec, size_t buffers) {
  gcap_sim_options so;
  gcap_sim_options_init(&so);
  so.check_races = check;
  so.exec = exec;
  gcap_context_options o;
  gcap_context_options_init(&o);
  o.backend = GCAP_BACKEND_SIM;
  o.sim = &so;
  void *dev = NULL;
  CHECK(gcap_context_create(&o, &f->ctx));
  CHECK(gcap_stream_create(f->ctx, &f->s));
  CHECK(gcap_mem_alloc(f->ctx, buffers * 64, &dev));
  f->dev = dev;
  f->buffers = buffers;
}

static void fills_open(struct fills *f, bool check, size_t buffers) {
  fills_open_as(f, check, GCAP_SIM_EXEC_IMMEDIATE, buffers);
}

/* FILLS fills of 64 bytes on one stream, synchronized once at the end. */
static void issue_fills(const struct fills *f) {
  for (size_t i = 0; i < FILLS; i++) CHECK(gcap_memset_async(f->s, f->dev + (i % f->buffers) * 64, (int)i, 64));
  CHECK(gcap_stream_synchronize(f->s));
}

static void do_fills_subject(void *arg) { issue_fills(&((struct fills *)arg)[0]); }
static void do_fills_baseline(void *arg) { issue_fills(&((struct fills *)arg)[1]); }

static void bench_stream_check(void) {
  static const size_t buffers[] = {1, 8, 1024};
  for (size_t i = 0; i < 3; i++) {
    struct fills f[2];
    fills_open(&f[0], true, buffers[i]);
    fills_open(&f[1], false, buffers[i]);
    char shape[32], what[64];
    snprintf(shape, sizeof shape, "%zubuf", buffers[i]);
    snprintf(what, sizeof what, "stream_check %s", shape);
    double checked = 0, unchecked = 0;
    median_pair_ns(do_fills_subject, do_fills_baseline, f, what, &checked, &unchecked);
    report("stream_check", shape, FILLS, "ns/op", checked / FILLS, "no check", unchecked / FILLS, 0, true);
    report("stream_check_ratio", shape, FILLS, "x", checked / unchecked, "no check", 1, 2, true);
    gcap_context_destroy(f[0].ctx);
    gcap_context_destroy(f[1].ctx);
  }
}

/*
 * DEFERRED against IMMEDIATE on the same workload: every fill is queued, then the synchronize
 * runs them all. The first round warms the queue's memory, which a context keeps and reuses.
 */
static void bench_deferred(void) {
  struct fills f[2];
  fills_open_as(&f[0], false, GCAP_SIM_EXEC_DEFERRED, 1);
  fills_open_as(&f[1], false, GCAP_SIM_EXEC_IMMEDIATE, 1);
  issue_fills(&f[0]);
  double deferred = 0, immediate = 0;
  median_pair_ns(do_fills_subject, do_fills_baseline, f, "deferred", &deferred, &immediate);
  report("deferred", "1stream", FILLS, "ns/op", deferred / FILLS, "immediate", immediate / FILLS, 0, true);
  report("deferred_ratio", "1stream", FILLS, "x", deferred / immediate, "immediate", 1, 1.5, true);
  gcap_context_destroy(f[0].ctx);
  gcap_context_destroy(f[1].ctx);
}

int main(int argc, char **argv) {
  int first = 1;
  while (first < argc && strncmp(argv[first], "--", 2) == 0) {
    if (strcmp(argv[first], "--quick") == 0) {
      reps = 3, max_nodes = 10000;
    } else if (strcmp(argv[first], "--max") == 0 && first + 1 < argc) {
      max_nodes = strtoul(argv[++first], NULL, 10);
    } else {
      fprintf(stderr,
              "usage: %s [--quick] [--max N] [record instantiate replay eager bandwidth memory update races "
              "stream_check deferred strict add destroy fills setter peer]\n",
              argv[0]);
      return 2;
    }
    first++;
  }
  struct bench b;
  bench_open(&b);
  fprintf(stderr, "%-22s %-9s %8s %12s %-10s %-16s %12s %8s %8s\n", "metric", "shape", "n", "value", "unit",
          "baseline", "base value", "ratio", "target");
  bool rec = wanted(argc, argv, first, "record"), inst = wanted(argc, argv, first, "instantiate");
  if (rec || inst) bench_record_instantiate(&b, rec, inst);
  bool direct = wanted(argc, argv, first, "replay"), eager = wanted(argc, argv, first, "eager");
  if (direct || eager) bench_replay(&b, direct, eager);
  if (wanted(argc, argv, first, "bandwidth")) bench_bandwidth(&b);
  if (wanted(argc, argv, first, "memory")) bench_memory();
  if (wanted(argc, argv, first, "update")) bench_update(&b);
  if (wanted(argc, argv, first, "races")) bench_races(&b);
  if (wanted(argc, argv, first, "stream_check")) bench_stream_check();
  if (wanted(argc, argv, first, "deferred")) bench_deferred();
  if (wanted(argc, argv, first, "add")) bench_explicit_add(&b);
  if (wanted(argc, argv, first, "strict")) bench_strict();
  if (wanted(argc, argv, first, "destroy")) bench_destroy(&b);
  if (wanted(argc, argv, first, "fills")) bench_fills(&b);
  if (wanted(argc, argv, first, "setter")) bench_setter(&b);
#ifdef GCAP_BENCH_PEER
  if (wanted(argc, argv, first, "peer")) bench_peer(&b);
#endif
  bench_close(&b);
  return 0;
}
