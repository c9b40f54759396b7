/*
 * gcap fork/join: three streams, one graph, made by stream capture.
 *
 *              s0: upload x ──► record fork
 *                                │
 *             ┌──────────────────┴──────────────────┐
 *   s1: wait fork, damp (first half)     s2: wait fork, wave (second half)
 *       record left                          record right
 *             └──────────────────┬──────────────────┘
 *              s0: wait left, wait right ──► download y ──► step (host callback)
 *
 * The same calls run twice: once eagerly (each call executes), 100 times in a row, and once
 * inside gcap_stream_begin_capture / gcap_stream_end_capture on s0, which turns them into a
 * five-node graph. The graph is printed, written as DOT, instantiated and replayed 100 times;
 * every replay's result must equal the eager run's result of the same iteration, bit for bit,
 * and the eager run must match a plain CPU computation.
 *
 * Runs on the CPU simulator unless the GCAP_BACKEND environment variable is set (then the backend
 * it names is used). Usage: fork_join [file.dot]   (default: fork_join.dot in the current directory)
 * Exit status: 0 when every result matches, 1 otherwise.
 */
#include <gcap/gcap.h>

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/fork_join_ptx.h" /* the same kernels for the CUDA backend, from kernels/fork_join.cu */

#define N 1024u        /* elements; s1 owns [0, N/2), s2 owns [N/2, N) */
#define HALF (N / 2u)
#define BLOCK 128u     /* threads per block */
#define RUNS 100       /* eager iterations, and graph replays */

/* Prints what failed and jumps to the cleanup at the end of main(). */
#define CHECK(call)                                                                              \
  do {                                                                                           \
    gcap_status st_ = (call);                                                                    \
    if (st_ != GCAP_SUCCESS) {                                                                   \
      fprintf(stderr, "fork_join: %s failed: %s: %s\n", #call, gcap_status_name(st_),            \
              gcap_last_error_message());                                                        \
      goto done;                                                                                 \
    }                                                                                            \
  } while (0)

/* ---- CPU implementations of the two kernels (the simulator calls them once per thread). ---- */

static uint32_t global_index(const gcap_sim_thread *t) { return t->block_idx.x * t->block_dim.x + t->thread_idx.x; }

/* The element formulas, shared by the kernels and the CPU reference so both round alike. */
static float damp(float y, float x) { return 0.5f * y + x; }
static float wave(float y, float x) { return 0.25f * y + x * x - 1.0f; }

/* damp(const float *x, float *y, uint32_t n): y[i] = 0.5 y[i] + x[i] */
static void damp_sim(const gcap_sim_thread *t, void *const *args) {
  const float *x;
  float *y;
  uint32_t n;
  memcpy(&x, args[0], sizeof x);
  memcpy(&y, args[1], sizeof y);
  memcpy(&n, args[2], sizeof n);
  uint32_t i = global_index(t);
  if (i < n) y[i] = damp(y[i], x[i]);
}

/* wave(const float *x, float *y, uint32_t n): y[i] = 0.25 y[i] + x[i]^2 - 1 */
static void wave_sim(const gcap_sim_thread *t, void *const *args) {
  const float *x;
  float *y;
  uint32_t n;
  memcpy(&x, args[0], sizeof x);
  memcpy(&y, args[1], sizeof y);
  memcpy(&n, args[2], sizeof n);
  uint32_t i = global_index(t);
  if (i < n) y[i] = wave(y[i], x[i]);
}

/* ---- The host callback: keeps each iteration's result and changes the input for the next. ---- */

struct run_log {
  float *x;           /* pinned host input, uploaded at the start of every iteration */
  const float *y;     /* pinned host output, written by the download */
  float (*results)[N];/* RUNS rows: y after each iteration */
  int iterations;
};

static void initial_input(float *x) {
  for (uint32_t i = 0; i < N; i++) x[i] = (float)(i % 8u) * 0.125f;
}

static void step_cb(void *user_data) {
  struct run_log *log = user_data;
  if (log->iterations < RUNS) memcpy(log->results[log->iterations], log->y, sizeof log->results[0]);
  log->iterations++;
  for (uint32_t i = 0; i < N; i++) log->x[i] = fmodf(log->x[i] + 0.375f, 2.0f);
}

/* ---- The work: the same calls, eager or captured. ---- */

struct work {
  gcap_stream *s0, *s1, *s2;
  gcap_event *fork, *left, *right;
  gcap_kernel *damp, *wave;
  float *hx, *hy, *dx, *dy;
  struct run_log *log;
};

/* One iteration, issued on three streams. On capturing streams nothing runs: each call adds a node. */
static gcap_status issue(struct work *w) {
  gcap_status st;
  const size_t bytes = N * sizeof(float);
  if ((st = gcap_memcpy_async(w->s0, w->dx, w->hx, bytes, GCAP_MEMCPY_HOST_TO_DEVICE)) != GCAP_SUCCESS) return st;
  if ((st = gcap_event_record(w->fork, w->s0)) != GCAP_SUCCESS) return st;

  /* fork: s1 and s2 wait for the upload (while capturing, this is where they join the capture) */
  if ((st = gcap_stream_wait_event(w->s1, w->fork)) != GCAP_SUCCESS) return st;
  if ((st = gcap_stream_wait_event(w->s2, w->fork)) != GCAP_SUCCESS) return st;

  uint32_t n = HALF;
  float *x_lo = w->dx, *y_lo = w->dy, *x_hi = w->dx + HALF, *y_hi = w->dy + HALF;
  void *lo_args[] = {&x_lo, &y_lo, &n}; /* argument values are copied by the call */
  void *hi_args[] = {&x_hi, &y_hi, &n};
  const gcap_dim3 grid = GCAP_DIM3((HALF + BLOCK - 1) / BLOCK, 1, 1), block = GCAP_DIM3(BLOCK, 1, 1);
  if ((st = gcap_launch_kernel(w->s1, w->damp, grid, block, 0, lo_args)) != GCAP_SUCCESS) return st;
  if ((st = gcap_launch_kernel(w->s2, w->wave, grid, block, 0, hi_args)) != GCAP_SUCCESS) return st;
  if ((st = gcap_event_record(w->left, w->s1)) != GCAP_SUCCESS) return st;
  if ((st = gcap_event_record(w->right, w->s2)) != GCAP_SUCCESS) return st;

  /* join: s0 waits for both halves */
  if ((st = gcap_stream_wait_event(w->s0, w->left)) != GCAP_SUCCESS) return st;
  if ((st = gcap_stream_wait_event(w->s0, w->right)) != GCAP_SUCCESS) return st;
  if ((st = gcap_memcpy_async(w->s0, w->hy, w->dy, bytes, GCAP_MEMCPY_DEVICE_TO_HOST)) != GCAP_SUCCESS) return st;
  return gcap_launch_host_func(w->s0, step_cb, w->log);
}

/* Every iteration starts from the same state: the first input, y = 0 on the device. */
static gcap_status reset(struct work *w) {
  initial_input(w->hx);
  memset(w->hy, 0, N * sizeof(float));
  w->log->iterations = 0;
  gcap_status st = gcap_memset_async(w->s0, w->dy, 0, N * sizeof(float));
  return st == GCAP_SUCCESS ? gcap_stream_synchronize(w->s0) : st;
}

/* ---- Printing ---- */

static const char *type_name(gcap_node_type t) {
  switch (t) {
  case GCAP_NODE_KERNEL: return "kernel";
  case GCAP_NODE_MEMCPY: return "memcpy";
  case GCAP_NODE_MEMSET: return "memset";
  case GCAP_NODE_HOST: return "host";
  case GCAP_NODE_GRAPH: return "graph";
  case GCAP_NODE_EMPTY: return "empty";
  case GCAP_NODE_EVENT_WAIT: return "event wait";
  case GCAP_NODE_EVENT_RECORD: return "event record";
  case GCAP_NODE_MEM_ALLOC: return "mem alloc";
  case GCAP_NODE_MEM_FREE: return "mem free";
  case GCAP_NODE_CONDITIONAL: return "conditional";
  }
  return "?";
}

static int index_of(gcap_node *const *nodes, size_t count, const gcap_node *n) {
  for (size_t i = 0; i < count; i++)
    if (nodes[i] == n) return (int)i;
  return -1;
}

/* One line per node: index, type, what it does, which nodes it waits for. */
static gcap_status print_graph(const gcap_graph *g) {
  gcap_node *nodes[16];
  size_t count = 16;
  gcap_status st = gcap_graph_get_nodes(g, nodes, &count);
  if (st != GCAP_SUCCESS) return st;
  printf("graph: %zu nodes, %zu edges\n", gcap_graph_node_count(g), gcap_graph_edge_count(g));
  for (size_t i = 0; i < count && i < 16; i++) {
    char what[96] = "";
    gcap_node_type t = gcap_node_get_type(nodes[i]);
    if (t == GCAP_NODE_KERNEL) {
      gcap_kernel_node_params kp;
      if ((st = gcap_node_get_kernel_params(nodes[i], &kp)) != GCAP_SUCCESS) return st;
      snprintf(what, sizeof what, "%s, grid %u x block %u", gcap_kernel_name(kp.kernel), kp.grid.x, kp.block.x);
    } else if (t == GCAP_NODE_MEMCPY) {
      gcap_memcpy_node_params cp;
      if ((st = gcap_node_get_memcpy_params(nodes[i], &cp)) != GCAP_SUCCESS) return st;
      snprintf(what, sizeof what, "%s, %zu bytes",
               cp.kind == GCAP_MEMCPY_HOST_TO_DEVICE ? "host -> device" : "device -> host", cp.bytes);
    } else if (t == GCAP_NODE_HOST) {
      snprintf(what, sizeof what, "step_cb (CPU)");
    }
    gcap_node *deps[16];
    size_t nd = 16;
    if ((st = gcap_node_get_dependencies(nodes[i], deps, &nd)) != GCAP_SUCCESS) return st;
    char after[64] = "-";
    size_t used = 0;
    for (size_t d = 0; d < nd && d < 16; d++) {
      int wr = snprintf(after + used, sizeof after - used, "%s%d", d ? ", " : "", index_of(nodes, count, deps[d]));
      if (wr < 0 || (size_t)wr >= sizeof after - used) break;
      used += (size_t)wr;
    }
    printf("  [%zu] %-6s %-30s after: %s\n", i, type_name(t), what, after);
  }
  return GCAP_SUCCESS;
}

/*
 * The shape capture must have produced: 0 upload; 1, 2 the kernels after 0; 3 the download after
 * 0, 1 and 2, in that order; 4 the host callback after 3. The edge 0 -> 3 is redundant: s0's
 * frontier was {upload} when it waited on `left` and `right`, and a wait adds the event's nodes
 * to the frontier (a set union, no transitive reduction), as CUDA does. 5 nodes, 6 edges.
 */
static int shape_ok(const gcap_graph *g) {
  static const gcap_node_type want[] = {GCAP_NODE_MEMCPY, GCAP_NODE_KERNEL, GCAP_NODE_KERNEL, GCAP_NODE_MEMCPY,
                                        GCAP_NODE_HOST};
  gcap_node *nodes[5];
  size_t count = 5;
  if (gcap_graph_node_count(g) != 5 || gcap_graph_edge_count(g) != 6) return 0;
  if (gcap_graph_get_nodes(g, nodes, &count) != GCAP_SUCCESS || count != 5) return 0;
  for (size_t i = 0; i < 5; i++) {
    gcap_node *deps[4];
    size_t nd = 4;
    if (gcap_node_get_type(nodes[i]) != want[i]) return 0;
    if (gcap_node_get_dependencies(nodes[i], deps, &nd) != GCAP_SUCCESS) return 0;
    size_t expected = i == 0 ? 0 : i == 3 ? 3 : 1;
    if (nd != expected) return 0;
    if ((i == 1 || i == 2) && deps[0] != nodes[0]) return 0;
    if (i == 3 && (deps[0] != nodes[0] || deps[1] != nodes[1] || deps[2] != nodes[2])) return 0;
    if (i == 4 && deps[0] != nodes[3]) return 0;
  }
  return 1;
}

/* Writes the DOT file and, when Graphviz is installed, renders it next to it as SVG. */
static gcap_status write_pictures(const gcap_graph *g, const char *dot_path) {
  FILE *f = fopen(dot_path, "w");
  if (f == NULL) {
    fprintf(stderr, "fork_join: cannot open %s for writing\n", dot_path);
    return GCAP_ERROR_INVALID_VALUE;
  }
  gcap_status st = gcap_graph_write_dot(g, f, GCAP_DOT_VERBOSE);
  if (fclose(f) != 0 && st == GCAP_SUCCESS) st = GCAP_ERROR_INVALID_VALUE;
  if (st != GCAP_SUCCESS) return st;
  printf("wrote %s\n", dot_path);

  char svg[512], cmd[1200];
  size_t len = strlen(dot_path);
  if (len + 5 > sizeof svg || strchr(dot_path, '\'') != NULL) return GCAP_SUCCESS;
  memcpy(svg, dot_path, len + 1);
  if (len > 4 && strcmp(svg + len - 4, ".dot") == 0) svg[len - 4] = '\0';
  strcat(svg, ".svg");
  if (system("command -v dot >/dev/null 2>&1") != 0) {
    printf("Graphviz 'dot' is not on PATH: no %s (install graphviz to get a picture)\n", svg);
    return GCAP_SUCCESS;
  }
  snprintf(cmd, sizeof cmd, "dot -Tsvg '%s' -o '%s'", dot_path, svg);
  if (system(cmd) == 0)
    printf("rendered %s with Graphviz\n", svg);
  else
    printf("Graphviz failed to render %s (the .dot file is still there)\n", svg);
  return GCAP_SUCCESS;
}

int main(int argc, char **argv) {
  const char *dot_path = argc > 1 ? argv[1] : "fork_join.dot";
  int ok = 0;
  gcap_context *ctx = NULL;
  gcap_module *mod = NULL;
  gcap_graph *graph = NULL;
  gcap_exec *exec = NULL;
  struct work w = {0};
  struct run_log log = {0};
  float (*eager)[N] = calloc(RUNS, sizeof *eager);
  float (*replayed)[N] = calloc(RUNS, sizeof *replayed);
  if (eager == NULL || replayed == NULL) {
    fprintf(stderr, "fork_join: out of memory\n");
    free(eager);
    free(replayed);
    return 1;
  }
  w.log = &log;

  /* 1. A context (the simulator unless GCAP_BACKEND says otherwise), two kernels, three streams. */
  const char *env = getenv("GCAP_BACKEND");
  gcap_context_options opts;
  gcap_context_options_init(&opts);
  opts.backend = (env != NULL && *env != '\0') ? GCAP_BACKEND_AUTO : GCAP_BACKEND_SIM;
  gcap_status created = gcap_context_create(&opts, &ctx);
  if (created == GCAP_ERROR_NOT_SUPPORTED || created == GCAP_ERROR_NOT_INITIALIZED) {
    fprintf(stderr, "fork_join: skipped: %s\n", gcap_last_error_message());
    free(eager);
    free(replayed);
    return 77; /* the backend GCAP_BACKEND names cannot start here (Meson's "skipped") */
  }
  CHECK(created);
  printf("gcap fork_join on the %s backend\n", gcap_backend_name(gcap_context_backend(ctx)));

  const size_t params[] = {sizeof(const float *), sizeof(float *), sizeof(uint32_t)};
  const gcap_kernel_def defs[] = {
      {.name = "damp", .sim_fn = damp_sim, .num_params = 3, .param_sizes = params},
      {.name = "wave", .sim_fn = wave_sim, .num_params = 3, .param_sizes = params},
  };
  const gcap_module_desc desc = {.image = fork_join_ptx, .image_size = sizeof fork_join_ptx, .kernels = defs, .num_kernels = 2};
  CHECK(gcap_module_load(ctx, &desc, &mod));
  CHECK(gcap_module_get_kernel(mod, "damp", &w.damp));
  CHECK(gcap_module_get_kernel(mod, "wave", &w.wave));
  CHECK(gcap_stream_create(ctx, &w.s0));
  CHECK(gcap_stream_create(ctx, &w.s1));
  CHECK(gcap_stream_create(ctx, &w.s2));
  CHECK(gcap_event_create(ctx, &w.fork));
  CHECK(gcap_event_create(ctx, &w.left));
  CHECK(gcap_event_create(ctx, &w.right));

  /* 2. Memory, allocated before any capture (allocation is not permitted while capturing in GLOBAL mode). */
  const size_t bytes = N * sizeof(float);
  void *hx = NULL, *hy = NULL, *dx = NULL, *dy = NULL;
  CHECK(gcap_host_alloc(ctx, bytes, &hx));
  CHECK(gcap_host_alloc(ctx, bytes, &hy));
  CHECK(gcap_mem_alloc(ctx, bytes, &dx));
  CHECK(gcap_mem_alloc(ctx, bytes, &dy));
  w.hx = hx, w.hy = hy, w.dx = dx, w.dy = dy;
  log.x = w.hx;
  log.y = w.hy;

  /* 3. The eager run: RUNS iterations, each call executing as it is issued. */
  CHECK(reset(&w));
  log.results = eager;
  for (int r = 0; r < RUNS; r++) CHECK(issue(&w));
  CHECK(gcap_stream_synchronize(w.s0));
  if (log.iterations != RUNS) {
    fprintf(stderr, "fork_join: the eager host callback ran %d times, expected %d\n", log.iterations, RUNS);
    goto done;
  }
  printf("eager: %d iterations on s0, s1, s2\n", RUNS);

  /* The eager results against a plain CPU computation of the same formulas. */
  {
    float x[N], y[N] = {0};
    long bad = 0;
    initial_input(x);
    for (int r = 0; r < RUNS; r++) {
      for (uint32_t i = 0; i < N; i++) y[i] = i < HALF ? damp(y[i], x[i]) : wave(y[i], x[i]);
      for (uint32_t i = 0; i < N; i++)
        if (memcmp(&eager[r][i], &y[i], sizeof y[i]) != 0) bad++;
      for (uint32_t i = 0; i < N; i++) x[i] = fmodf(x[i] + 0.375f, 2.0f);
    }
    if (bad != 0) {
      fprintf(stderr, "fork_join: the eager run differs from the CPU in %ld values\n", bad);
      goto done;
    }
  }

  /* 4. The capture: the same calls on the same streams; s0 is the origin, s1 and s2 join at the fork. */
  log.iterations = 0;
  CHECK(gcap_stream_begin_capture(w.s0, GCAP_CAPTURE_MODE_GLOBAL));
  CHECK(issue(&w));
  gcap_capture_info info;
  CHECK(gcap_stream_get_capture_info(w.s1, &info));
  printf("\ncapture %llu: s1 is a member (status %s), its frontier is %zu node(s)\n", (unsigned long long)info.id,
         info.status == GCAP_CAPTURE_STATUS_ACTIVE ? "ACTIVE" : "not ACTIVE", info.num_dependencies);
  CHECK(gcap_stream_end_capture(w.s0, &graph));
  if (log.iterations != 0) {
    fprintf(stderr, "fork_join: the host callback ran during capture\n");
    goto done;
  }
  gcap_capture_status s1_status = GCAP_CAPTURE_STATUS_ACTIVE;
  CHECK(gcap_stream_is_capturing(w.s1, &s1_status));
  if (s1_status != GCAP_CAPTURE_STATUS_NONE) {
    fprintf(stderr, "fork_join: s1 still capturing after the end of the capture\n");
    goto done;
  }

  /* 5. Look at it, check its shape. */
  CHECK(print_graph(graph));
  if (!shape_ok(graph)) {
    fprintf(stderr, "fork_join: the captured graph is not upload -> {damp, wave} -> download -> step "
                    "(with the edge upload -> download)\n");
    goto done;
  }
  CHECK(write_pictures(graph, dot_path));

  /* 6. Instantiate, then replay RUNS times from the same starting state as the eager run. */
  CHECK(gcap_graph_instantiate(graph, 0, &exec));
  gcap_graph_destroy(graph);
  graph = NULL;
  CHECK(reset(&w));
  log.results = replayed;
  for (int r = 0; r < RUNS; r++) CHECK(gcap_exec_launch(exec, w.s0));
  CHECK(gcap_stream_synchronize(w.s0));
  printf("\nreplayed the graph %d times on s0 (%zu nodes per launch)\n", RUNS, gcap_exec_node_count(exec));

  /* 7. Every replay against the eager iteration of the same number. */
  long bad = 0;
  int first_bad = -1;
  for (int r = 0; r < RUNS; r++)
    if (memcmp(eager[r], replayed[r], sizeof eager[r]) != 0) {
      bad++;
      if (first_bad < 0) first_bad = r;
    }
  printf("host callback ran %d times; %ld of %d iterations differ from the eager run\n", log.iterations, bad, RUNS);
  printf("after the last iteration: y[1] = %.6f (damp), y[%u] = %.6f (wave)\n", (double)replayed[RUNS - 1][1],
         HALF + 1, (double)replayed[RUNS - 1][HALF + 1]);
  if (log.iterations != RUNS || bad != 0) {
    if (first_bad >= 0) fprintf(stderr, "fork_join: iteration %d differs from the eager run\n", first_bad);
    fprintf(stderr, "fork_join: the replays do not match the eager run\n");
    goto done;
  }

  /* 8. Clean up. */
  gcap_exec_destroy(exec);
  exec = NULL;
  CHECK(gcap_stream_destroy(w.s0));
  CHECK(gcap_stream_destroy(w.s1));
  CHECK(gcap_stream_destroy(w.s2));
  CHECK(gcap_event_destroy(w.fork));
  CHECK(gcap_event_destroy(w.left));
  CHECK(gcap_event_destroy(w.right));
  CHECK(gcap_mem_free(ctx, dx));
  CHECK(gcap_mem_free(ctx, dy));
  CHECK(gcap_host_free(ctx, hx));
  CHECK(gcap_host_free(ctx, hy));
  CHECK(gcap_module_unload(mod));
  ok = 1;

done:
  /* On failure, destroying the context frees whatever is left. */
  gcap_exec_destroy(exec);
  gcap_graph_destroy(graph);
  gcap_context_destroy(ctx);
  free(eager);
  free(replayed);
  if (!ok) {
    fprintf(stderr, "fork_join: FAILED\n");
    return 1;
  }
  printf("\nOK: one capture over three streams, %d replays, every result equal to the eager run\n", RUNS);
  return 0;
}
