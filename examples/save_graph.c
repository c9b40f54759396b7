/*
 * gcap save_graph: captures two small graphs, checks their shapes, and saves the second one
 * for gcap-inspect.
 *
 *   chain:          upload ──► produce ──► download ──► host callback      (4 nodes, 3 edges)
 *
 *   origin branch:  upload ──► damp (on s0) ──┐
 *                      └─────► wave (on s1) ──┴──► download                (4 nodes, 4 edges)
 *
 * Both kernels read the upload; each writes its own allocation, so gcap-inspect finds no race.
 *
 * Saved graphs need jansson: in a build without it gcap_graph_save returns
 * GCAP_ERROR_NOT_SUPPORTED, and the program says so and still exits 0.
 *
 * Always runs on the CPU simulator (its kernels have CPU implementations only).
 * Usage: save_graph [file.json]   (default: save_graph.json in the current directory)
 *   then: gcap-inspect --svg graph.svg save_graph.json
 * Exit status: 0 when both graphs have the shapes above (and the file was written, where it can
 * be), 1 otherwise.
 */
#include <gcap/gcap.h>

#include <stdint.h>
#include <stdio.h>

#define N 256u

/* y = x / 2 over the first n elements. */
static void damp_sim(const gcap_sim_thread *t, void *const *args) {
  const float *x = *(float *const *)args[0];
  float *y = *(float *const *)args[1];
  uint32_t i = t->block_idx.x * t->block_dim.x + t->thread_idx.x;
  if (i < *(const uint32_t *)args[2]) y[i] = x[i] * 0.5f;
}

/* y = -x over the first n elements. */
static void wave_sim(const gcap_sim_thread *t, void *const *args) {
  const float *x = *(float *const *)args[0];
  float *y = *(float *const *)args[1];
  uint32_t i = t->block_idx.x * t->block_dim.x + t->thread_idx.x;
  if (i < *(const uint32_t *)args[2]) y[i] = -x[i];
}

/* x[i] = i. */
static void produce_sim(const gcap_sim_thread *t, void *const *args) {
  float *x = *(float *const *)args[0];
  uint32_t i = t->block_idx.x * t->block_dim.x + t->thread_idx.x;
  x[i] = (float)i;
}

static const size_t three_sizes[] = {sizeof(float *), sizeof(float *), sizeof(uint32_t)};
/* Declared accesses let the race analysis (and gcap-inspect) see which ranges each kernel touches. */
static const gcap_param_access in_out[] = {GCAP_ACCESS_READ, GCAP_ACCESS_WRITE, GCAP_ACCESS_NONE};
static const size_t one_size[] = {sizeof(float *)};
static const gcap_param_access out_only[] = {GCAP_ACCESS_WRITE};
static const gcap_kernel_def defs[] = {
    {.name = "damp", .sim_fn = damp_sim, .num_params = 3, .param_sizes = three_sizes, .param_access = in_out},
    {.name = "wave", .sim_fn = wave_sim, .num_params = 3, .param_sizes = three_sizes, .param_access = in_out},
    {.name = "produce", .sim_fn = produce_sim, .num_params = 1, .param_sizes = one_size, .param_access = out_only},
};

struct work {
  gcap_context *ctx;
  gcap_stream *s0, *s1;
  gcap_event *e0, *e1;
  gcap_kernel *damp, *wave, *produce;
  float *dx, *dy, *dz; /* device: the input and two outputs, N floats each */
  float hx[N], hy[N];
};

static void host_cb(void *user_data) { (void)user_data; }

static gcap_status shape_is(const char *what, gcap_graph *g, size_t nodes, size_t edges) {
  size_t n = gcap_graph_node_count(g), e = gcap_graph_edge_count(g);
  printf("%s: %zu nodes, %zu edges\n", what, n, e);
  if (n == nodes && e == edges) return GCAP_SUCCESS;
  fprintf(stderr, "save_graph: %s: want %zu nodes and %zu edges\n", what, nodes, edges);
  return GCAP_ERROR_INVALID_VALUE;
}

/* One stream is a chain: each call is a node after the previous one. */
static gcap_status capture_chain(struct work *w, gcap_graph **out) {
  gcap_stream *s0 = w->s0;
  gcap_kernel *produce = w->produce;
  float *dev = w->dx, *host = w->hx;
  void *args[] = {&dev};
  gcap_status st = gcap_stream_begin_capture(s0, GCAP_CAPTURE_MODE_GLOBAL);
  if (st != GCAP_SUCCESS) return st;
  /* Statuses are checked once, at the end: a failed call invalidates the capture. */
  gcap_memcpy_async(s0, dev, host, sizeof w->hx, GCAP_MEMCPY_HOST_TO_DEVICE);        /* node 0, a root */
  gcap_launch_kernel(s0, produce, GCAP_DIM3(N / 32, 1, 1), GCAP_DIM3(32, 1, 1), 0, args); /* node 1, after 0 */
  gcap_memcpy_async(s0, host, dev, sizeof w->hx, GCAP_MEMCPY_DEVICE_TO_HOST);        /* node 2, after 1 */
  gcap_launch_host_func(s0, host_cb, NULL);                                          /* node 3, after 2 */
  return gcap_stream_end_capture(s0, out); /* 4 nodes, 3 edges; the caller owns the graph */
}

/* A fork in which the origin stream does one branch itself, so no edge is redundant. */
static gcap_status capture_origin_branch(struct work *w, gcap_graph **out) {
  gcap_stream *s0 = w->s0, *s1 = w->s1;
  gcap_event *e0 = w->e0, *e1 = w->e1;
  gcap_kernel *damp = w->damp, *wave = w->wave;
  float *dev = w->dx, *damped = w->dy, *waved = w->dz, *host = w->hy;
  uint32_t n = N;
  void *damp_args[] = {&dev, &damped, &n}, *wave_args[] = {&dev, &waved, &n};
  const gcap_dim3 grid = GCAP_DIM3(N / 128, 1, 1), block = GCAP_DIM3(128, 1, 1);
  gcap_status st = gcap_stream_begin_capture(s0, GCAP_CAPTURE_MODE_GLOBAL);
  if (st != GCAP_SUCCESS) return st;
  gcap_memcpy_async(s0, dev, w->hx, sizeof w->hx, GCAP_MEMCPY_HOST_TO_DEVICE);
  gcap_event_record(e0, s0);
  gcap_stream_wait_event(s1, e0);                   /* fork */
  gcap_launch_kernel(s0, damp, grid, block, 0, damp_args);
  gcap_launch_kernel(s1, wave, grid, block, 0, wave_args);
  gcap_event_record(e1, s1);
  gcap_stream_wait_event(s0, e1);                   /* join: s0's frontier is {damp, wave} */
  gcap_memcpy_async(s0, host, damped, sizeof w->hy, GCAP_MEMCPY_DEVICE_TO_HOST);
  return gcap_stream_end_capture(s0, out); /* 4 nodes, 4 edges */
}

/* Writes g to path; a build without jansson cannot, and that is not a failure of this program. */
static gcap_status save(const gcap_graph *g, const char *path) {
  FILE *f = fopen(path, "w");
  if (!f) return perror(path), GCAP_ERROR_INVALID_VALUE;
  gcap_status st = gcap_graph_save(g, f);
  if (fclose(f) != 0 && st == GCAP_SUCCESS) st = GCAP_ERROR_INVALID_VALUE;
  if (st == GCAP_ERROR_NOT_SUPPORTED) {
    printf("this build has no JSON support (jansson): nothing saved\n");
    remove(path);
    return GCAP_SUCCESS;
  }
  if (st == GCAP_SUCCESS) printf("saved to %s; look at it with: gcap-inspect --svg graph.svg %s\n", path, path);
  return st;
}

static gcap_status setup(struct work *w) {
  gcap_context_options o;
  gcap_context_options_init(&o);
  o.backend = GCAP_BACKEND_SIM;
  gcap_module *m = NULL;
  gcap_module_desc desc = {.image = NULL, .image_size = 0, .kernels = defs, .num_kernels = 3};
  gcap_status st;
  if ((st = gcap_context_create(&o, &w->ctx)) != GCAP_SUCCESS) return st;
  if ((st = gcap_module_load(w->ctx, &desc, &m)) != GCAP_SUCCESS) return st;
  if ((st = gcap_module_get_kernel(m, "damp", &w->damp)) != GCAP_SUCCESS) return st;
  if ((st = gcap_module_get_kernel(m, "wave", &w->wave)) != GCAP_SUCCESS) return st;
  if ((st = gcap_module_get_kernel(m, "produce", &w->produce)) != GCAP_SUCCESS) return st;
  if ((st = gcap_stream_create(w->ctx, &w->s0)) != GCAP_SUCCESS) return st;
  if ((st = gcap_stream_create(w->ctx, &w->s1)) != GCAP_SUCCESS) return st;
  if ((st = gcap_event_create(w->ctx, &w->e0)) != GCAP_SUCCESS) return st;
  if ((st = gcap_event_create(w->ctx, &w->e1)) != GCAP_SUCCESS) return st;
  if ((st = gcap_mem_alloc(w->ctx, N * sizeof(float), (void **)&w->dx)) != GCAP_SUCCESS) return st;
  if ((st = gcap_mem_alloc(w->ctx, N * sizeof(float), (void **)&w->dy)) != GCAP_SUCCESS) return st;
  return gcap_mem_alloc(w->ctx, N * sizeof(float), (void **)&w->dz);
}

static gcap_status run(struct work *w, const char *path) {
  gcap_graph *chain = NULL, *branch = NULL;
  gcap_status st = setup(w);
  if (st == GCAP_SUCCESS) st = capture_chain(w, &chain);
  if (st == GCAP_SUCCESS) st = shape_is("chain", chain, 4, 3);
  if (st == GCAP_SUCCESS) st = capture_origin_branch(w, &branch);
  if (st == GCAP_SUCCESS) st = shape_is("origin branch", branch, 4, 4);
  if (st == GCAP_SUCCESS) st = save(branch, path);
  gcap_graph_destroy(chain);
  gcap_graph_destroy(branch);
  return st;
}

int main(int argc, char **argv) {
  static struct work w; /* static: two N-float host buffers */
  gcap_status st = run(&w, argc > 1 ? argv[1] : "save_graph.json");
  if (st != GCAP_SUCCESS)
    fprintf(stderr, "save_graph: %s: %s\n", gcap_status_name(st), gcap_last_error_message());
  gcap_context_destroy(w.ctx); /* frees the streams, events, module and memory with it */
  return st == GCAP_SUCCESS ? 0 : 1;
}
