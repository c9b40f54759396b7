/*
 * gcap quickstart: build a small graph by hand, look at it, replay it 1000 times.
 *
 *   upload x (host -> device) -> saxpy (y = a*x + y) -> scale (y = s*y) -> download y -> check on the host
 *
 * Runs on the CPU simulator unless the GCAP_BACKEND environment variable is set (then the backend
 * it names is used). Usage: quickstart [file.dot]   (default: quickstart.dot in the current directory)
 * Exit status: 0 when every number matches the CPU reference, 1 otherwise.
 */
#include <gcap/gcap.h>
#include <gcap/sim.h>

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/quickstart_ptx.h" /* the same kernels for the CUDA backend, from kernels/quickstart.cu */

#define N 1024u     /* elements */
#define BLOCK 256u  /* threads per block */
#define REPLAYS 1000
#define A 0.5f      /* saxpy factor */
#define S 0.99f     /* scale factor */

/* Prints what failed and jumps to the cleanup at the end of main(). */
#define CHECK(call)                                                                              \
  do {                                                                                           \
    gcap_status st_ = (call);                                                                    \
    if (st_ != GCAP_SUCCESS) {                                                                   \
      fprintf(stderr, "quickstart: %s failed: %s: %s\n", #call, gcap_status_name(st_),           \
              gcap_last_error_message());                                                        \
      goto done;                                                                                 \
    }                                                                                            \
  } while (0)

/* ---- CPU implementations of the kernels: the simulator calls them once per thread. ---- */

static uint32_t global_index(const gcap_sim_thread *t) { return t->block_idx.x * t->block_dim.x + t->thread_idx.x; }

/* saxpy(float a, const float *x, float *y, uint32_t n): y[i] = a * x[i] + y[i] */
static void saxpy_sim(const gcap_sim_thread *t, void *const *args) {
  float a;
  const float *x;
  float *y;
  uint32_t n;
  memcpy(&a, args[0], sizeof a);
  memcpy(&x, args[1], sizeof x);
  memcpy(&y, args[2], sizeof y);
  memcpy(&n, args[3], sizeof n);
  uint32_t i = global_index(t);
  if (i < n) y[i] = a * x[i] + y[i];
}

/* scale(float *y, float s, uint32_t n): y[i] = s * y[i] */
static void scale_sim(const gcap_sim_thread *t, void *const *args) {
  float *y;
  float s;
  uint32_t n;
  memcpy(&y, args[0], sizeof y);
  memcpy(&s, args[1], sizeof s);
  memcpy(&n, args[2], sizeof n);
  uint32_t i = global_index(t);
  if (i < n) y[i] = s * y[i];
}

/* ---- The host node: compares each download with a reference advanced on the CPU. ---- */

struct checker {
  const float *x;   /* host input */
  const float *y;   /* host copy of the device result, written by the download node */
  float ref[N];     /* the CPU's own y */
  int launches;
  long mismatches;
  double checksum;  /* sum of every value checked */
};

static int close_enough(float got, float want) { return fabsf(got - want) <= 1e-5f * fmaxf(1.0f, fabsf(want)); }

static void check_cb(void *user_data) {
  struct checker *c = user_data;
  for (uint32_t i = 0; i < N; i++) {
    c->ref[i] = S * (A * c->x[i] + c->ref[i]);
    if (!close_enough(c->y[i], c->ref[i])) c->mismatches++;
    c->checksum += c->y[i];
  }
  c->launches++;
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

static const char *copy_direction(gcap_memcpy_kind k) {
  switch (k) {
  case GCAP_MEMCPY_HOST_TO_HOST: return "host -> host";
  case GCAP_MEMCPY_HOST_TO_DEVICE: return "host -> device";
  case GCAP_MEMCPY_DEVICE_TO_HOST: return "device -> host";
  case GCAP_MEMCPY_DEVICE_TO_DEVICE: return "device -> device";
  case GCAP_MEMCPY_DEFAULT: return "inferred";
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
      snprintf(what, sizeof what, "%-6s grid %u x block %u", gcap_kernel_name(kp.kernel), kp.grid.x, kp.block.x);
    } else if (t == GCAP_NODE_MEMCPY) {
      gcap_memcpy_node_params cp;
      if ((st = gcap_node_get_memcpy_params(nodes[i], &cp)) != GCAP_SUCCESS) return st;
      snprintf(what, sizeof what, "%s, %zu bytes", copy_direction(cp.kind), cp.bytes);
    } else if (t == GCAP_NODE_HOST) {
      snprintf(what, sizeof what, "check_cb (CPU)");
    }
    gcap_node *deps[16];
    size_t nd = 16;
    if ((st = gcap_node_get_dependencies(nodes[i], deps, &nd)) != GCAP_SUCCESS) return st;
    char after[64] = "-";
    size_t used = 0;
    for (size_t d = 0; d < nd && d < 16; d++) {
      int w = snprintf(after + used, sizeof after - used, "%s%d", d ? ", " : "", index_of(nodes, count, deps[d]));
      if (w < 0 || (size_t)w >= sizeof after - used) break;
      used += (size_t)w;
    }
    printf("  [%zu] %-7s %-28s after: %s\n", i, type_name(t), what, after);
  }
  return GCAP_SUCCESS;
}

/* Writes the DOT file and, when Graphviz is installed, renders it next to it as SVG. */
static gcap_status write_pictures(const gcap_graph *g, const char *dot_path) {
  FILE *f = fopen(dot_path, "w");
  if (f == NULL) {
    fprintf(stderr, "quickstart: cannot open %s for writing\n", dot_path);
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
  const char *dot_path = argc > 1 ? argv[1] : "quickstart.dot";
  int ok = 0;
  gcap_context *ctx = NULL;
  gcap_module *mod = NULL;
  gcap_stream *stream = NULL;
  gcap_graph *graph = NULL;
  gcap_exec *exec = NULL;
  void *hx = NULL, *hy = NULL, *dx = NULL, *dy = NULL;
  struct checker *chk = calloc(1, sizeof *chk);
  if (chk == NULL) {
    fprintf(stderr, "quickstart: out of memory\n");
    return 1;
  }

  /* 1. A context: the simulator, unless GCAP_BACKEND asks for another backend. */
  const char *env = getenv("GCAP_BACKEND");
  gcap_context_options opts;
  gcap_context_options_init(&opts);
  opts.backend = (env != NULL && *env != '\0') ? GCAP_BACKEND_AUTO : GCAP_BACKEND_SIM;
  gcap_status created = gcap_context_create(&opts, &ctx);
  if (created == GCAP_ERROR_NOT_SUPPORTED || created == GCAP_ERROR_NOT_INITIALIZED) {
    fprintf(stderr, "quickstart: skipped: %s\n", gcap_last_error_message());
    free(chk);
    return 77; /* the backend GCAP_BACKEND names cannot start here (Meson's "skipped") */
  }
  CHECK(created);
  printf("gcap quickstart on the %s backend\n", gcap_backend_name(gcap_context_backend(ctx)));
  printf("pipeline: upload x -> saxpy (y = a*x + y) -> scale (y = s*y) -> download y -> check on the CPU\n");

  /* 2. A module with two kernels, described by their parameters and CPU implementations. */
  const size_t saxpy_params[] = {sizeof(float), sizeof(const float *), sizeof(float *), sizeof(uint32_t)};
  const size_t scale_params[] = {sizeof(float *), sizeof(float), sizeof(uint32_t)};
  const gcap_kernel_def defs[] = {
      {.name = "saxpy", .sim_fn = saxpy_sim, .num_params = 4, .param_sizes = saxpy_params},
      {.name = "scale", .sim_fn = scale_sim, .num_params = 3, .param_sizes = scale_params},
  };
  const gcap_module_desc desc = {.image = quickstart_ptx, .image_size = sizeof quickstart_ptx, .kernels = defs, .num_kernels = 2};
  CHECK(gcap_module_load(ctx, &desc, &mod));
  gcap_kernel *saxpy = NULL, *scale = NULL;
  CHECK(gcap_module_get_kernel(mod, "saxpy", &saxpy));
  CHECK(gcap_module_get_kernel(mod, "scale", &scale));

  /* 3. Memory: pinned host buffers and device buffers; x = 0, 0.25, ..., 3.75 repeating, y = 0. */
  const size_t bytes = N * sizeof(float);
  CHECK(gcap_host_alloc(ctx, bytes, &hx));
  CHECK(gcap_host_alloc(ctx, bytes, &hy));
  CHECK(gcap_mem_alloc(ctx, bytes, &dx));
  CHECK(gcap_mem_alloc(ctx, bytes, &dy));
  float *x = hx, *y = hy;
  for (uint32_t i = 0; i < N; i++) {
    x[i] = (float)(i % 16) * 0.25f;
    y[i] = 0.0f;
  }
  CHECK(gcap_memcpy(ctx, dy, hy, bytes, GCAP_MEMCPY_HOST_TO_DEVICE));
  chk->x = x;
  chk->y = y;

  /* 4. The graph, node by node; each node lists the nodes it depends on. */
  CHECK(gcap_graph_create(ctx, &graph));
  gcap_node *upload = NULL, *k_saxpy = NULL, *k_scale = NULL, *download = NULL, *check = NULL;
  const gcap_memcpy_node_params up = {.dst = dx, .src = hx, .bytes = bytes, .kind = GCAP_MEMCPY_HOST_TO_DEVICE};
  CHECK(gcap_graph_add_memcpy_node(graph, NULL, 0, &up, &upload));

  float a = A, s = S;
  uint32_t n = N;
  float *dxf = dx, *dyf = dy;
  void *saxpy_args[] = {&a, &dxf, &dyf, &n}; /* values are copied into the node */
  const gcap_kernel_node_params kp1 = {.kernel = saxpy, .grid = GCAP_DIM3((N + BLOCK - 1) / BLOCK, 1, 1),
                                       .block = GCAP_DIM3(BLOCK, 1, 1), .shared_mem_bytes = 0, .args = saxpy_args};
  CHECK(gcap_graph_add_kernel_node(graph, &upload, 1, &kp1, &k_saxpy));

  void *scale_args[] = {&dyf, &s, &n};
  const gcap_kernel_node_params kp2 = {.kernel = scale, .grid = GCAP_DIM3((N + BLOCK - 1) / BLOCK, 1, 1),
                                       .block = GCAP_DIM3(BLOCK, 1, 1), .shared_mem_bytes = 0, .args = scale_args};
  CHECK(gcap_graph_add_kernel_node(graph, &k_saxpy, 1, &kp2, &k_scale));

  const gcap_memcpy_node_params down = {.dst = hy, .src = dy, .bytes = bytes, .kind = GCAP_MEMCPY_DEVICE_TO_HOST};
  CHECK(gcap_graph_add_memcpy_node(graph, &k_scale, 1, &down, &download));

  const gcap_host_node_params hp = {.fn = check_cb, .user_data = chk};
  CHECK(gcap_graph_add_host_node(graph, &download, 1, &hp, &check));

  /* 5. Look at it: a listing here, a picture in the DOT file. */
  printf("\n");
  CHECK(print_graph(graph));
  CHECK(write_pictures(graph, dot_path));

  /* 6. Instantiate once, replay many times. The exec is a snapshot: the graph can go now. */
  CHECK(gcap_graph_instantiate(graph, 0, &exec));
  gcap_graph_destroy(graph);
  graph = NULL;
  CHECK(gcap_stream_create(ctx, &stream));
  printf("\ninstantiated: %zu nodes run per launch\n", gcap_exec_node_count(exec));
  printf("replaying %d times: y = %.2f * (%.1f * x + y) each time\n", REPLAYS, (double)S, (double)A);
  for (int r = 0; r < REPLAYS; r++) CHECK(gcap_exec_launch(exec, stream));
  CHECK(gcap_stream_synchronize(stream));

  /* 7. Check: the host node compared every launch; now recompute the end result from scratch. */
  float *want = calloc(N, sizeof *want);
  if (want == NULL) {
    fprintf(stderr, "quickstart: out of memory\n");
    goto done;
  }
  for (int r = 0; r < REPLAYS; r++)
    for (uint32_t i = 0; i < N; i++) want[i] = S * (A * ((float)(i % 16) * 0.25f) + want[i]);
  long final_bad = 0;
  for (uint32_t i = 0; i < N; i++)
    if (!close_enough(y[i], want[i])) final_bad++;
  printf("host node ran %d times, %ld mismatches; final y: %ld mismatches (y[15] = %.4f, expected %.4f)\n",
         chk->launches, chk->mismatches, final_bad, (double)y[15], (double)want[15]);
  printf("checksum of all values checked: %.1f\n", chk->checksum);
  free(want);
  if (chk->launches != REPLAYS || chk->mismatches != 0 || final_bad != 0) {
    fprintf(stderr, "quickstart: results differ from the CPU reference\n");
    goto done;
  }

  /* 8. What the simulator counted. */
  if (gcap_context_backend(ctx) == GCAP_BACKEND_SIM) {
    gcap_sim_stats st;
    CHECK(gcap_sim_get_stats(ctx, &st));
    printf("\nsimulator counters:\n");
    printf("  graph launches   %llu\n", (unsigned long long)st.graph_launches);
    printf("  nodes executed   %llu\n", (unsigned long long)st.nodes_executed);
    printf("  kernels executed %llu (stubs: %llu)\n", (unsigned long long)st.kernels_executed,
           (unsigned long long)st.kernels_stubbed);
    printf("  bytes copied     %llu\n", (unsigned long long)st.bytes_copied);
    printf("  bytes set        %llu\n", (unsigned long long)st.bytes_set);
    printf("  host calls       %llu\n", (unsigned long long)st.host_calls);
    if (st.graph_launches != REPLAYS || st.nodes_executed != 5u * REPLAYS) {
      fprintf(stderr, "quickstart: unexpected simulator counters\n");
      goto done;
    }
  }

  /* 9. Clean up, in reverse order. */
  gcap_exec_destroy(exec);
  exec = NULL;
  CHECK(gcap_stream_destroy(stream));
  stream = NULL;
  CHECK(gcap_mem_free(ctx, dx));
  CHECK(gcap_mem_free(ctx, dy));
  CHECK(gcap_host_free(ctx, hx));
  CHECK(gcap_host_free(ctx, hy));
  CHECK(gcap_module_unload(mod));
  mod = NULL;
  ok = 1;

done:
  /* On failure, destroying the context frees whatever is left. */
  gcap_exec_destroy(exec);
  gcap_graph_destroy(graph);
  gcap_context_destroy(ctx);
  free(chk);
  if (!ok) {
    fprintf(stderr, "quickstart: FAILED\n");
    return 1;
  }
  printf("\nOK: built once, instantiated once, replayed %d times; every result matches the CPU reference\n",
         REPLAYS);
  return 0;
}
