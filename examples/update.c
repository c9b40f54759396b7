/*
 * gcap update: an iterative solver that changes its executable instead of instantiating again,
 * in the style of NVIDIA's jacobiCudaGraphs sample.
 *
 * The problem is the 1-D Poisson equation -u'' = f on N points, u(0) = 1, u(1) = 0, solved by
 * Jacobi relaxation with two buffers a and b that swap roles every iteration:
 *
 *     x_new[i] = (x_old[i-1] + x_old[i+1] + h^2 f[i]) / 2        (boundary values stay fixed)
 *
 * One iteration is four pieces of stream work, which capture turns into a four-node chain:
 *
 *     zero the residual ──► jacobi(x_old, x_new) ──► residual(x_old, x_new) ──► download the residual
 *
 * The download goes into pageable host memory, which must stay valid for every replay (rules.md#record-memcpy).
 * The last iteration also copies the solution into a checkpoint buffer (a fifth node).
 *
 * The same ITERS iterations run three ways, each from the same starting state:
 *   eager      every call executes as it is issued;
 *   variant 1  capture one iteration once, instantiate once; before every launch swap the kernels'
 *              pointer arguments with gcap_exec_kernel_node_set_params (the last checkpoint is an
 *              eager copy after the loop);
 *   variant 2  capture every iteration again and move it into the executable with gcap_exec_update;
 *              when the update is refused (the last iteration has one node more), destroy the
 *              executable and instantiate the new graph instead. Each path is counted.
 * Both variants must reproduce the eager run bit for bit: every iteration's residual, the
 * solution and the checkpoint.
 *
 * Runs on the CPU simulator unless the GCAP_BACKEND environment variable is set.
 * Exit status: 0 when both variants match the eager run and each path ran as expected, 1 otherwise.
 */
#include <gcap/gcap.h>

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/update_ptx.h" /* the same kernels for the CUDA backend, from kernels/update.cu */

#define N 32u       /* grid points, boundaries included */
#define BLOCK 16u   /* threads per block of the jacobi kernel */
#define ITERS 1500  /* iterations of every run */

#define CHECK(call)                                                                              \
  do {                                                                                           \
    gcap_status st_ = (call);                                                                    \
    if (st_ != GCAP_SUCCESS) {                                                                   \
      fprintf(stderr, "update: %s failed: %s: %s\n", #call, gcap_status_name(st_),               \
              gcap_last_error_message());                                                        \
      goto done;                                                                                 \
    }                                                                                            \
  } while (0)

/* ---- CPU implementations of the two kernels (the simulator calls them once per thread). ---- */

/* jacobi(const float *x_old, float *x_new, const float *rhs, uint32_t n): one relaxation sweep */
static void jacobi_sim(const gcap_sim_thread *t, void *const *args) {
  const float *x_old, *rhs;
  float *x_new;
  uint32_t n;
  memcpy(&x_old, args[0], sizeof x_old);
  memcpy(&x_new, args[1], sizeof x_new);
  memcpy(&rhs, args[2], sizeof rhs);
  memcpy(&n, args[3], sizeof n);
  uint32_t i = t->block_idx.x * t->block_dim.x + t->thread_idx.x;
  if (i >= n) return;
  if (i == 0 || i == n - 1)
    x_new[i] = x_old[i];
  else
    x_new[i] = 0.5f * (x_old[i - 1] + x_old[i + 1] + rhs[i]);
}

/* residual(const float *x_old, const float *x_new, double *sum, uint32_t n): *sum += sum |x_new - x_old|,
 * by one thread in index order, so every run adds in the same order and rounds alike. */
static void residual_sim(const gcap_sim_thread *t, void *const *args) {
  const float *x_old, *x_new;
  double *sum;
  uint32_t n;
  (void)t;
  memcpy(&x_old, args[0], sizeof x_old);
  memcpy(&x_new, args[1], sizeof x_new);
  memcpy(&sum, args[2], sizeof sum);
  memcpy(&n, args[3], sizeof n);
  double s = 0.0;
  for (uint32_t i = 0; i < n; i++) s += fabs((double)x_new[i] - (double)x_old[i]);
  *sum += s;
}

/* ---- The solver's state and one iteration of work ---- */

struct solver {
  gcap_stream *s;
  gcap_kernel *jacobi, *residual;
  float *a, *b, *rhs, *checkpoint; /* device */
  double *d_sum;                   /* device */
  double h_sum;                    /* pageable host memory: the captured download writes here */
};

/* What a run leaves behind; the three runs are compared field by field. */
struct result {
  double residual[ITERS];
  float x[N];
  float checkpoint[N];
};

static const gcap_dim3 jacobi_grid = {(N + BLOCK - 1) / BLOCK, 1, 1}, jacobi_block = {BLOCK, 1, 1};
static const gcap_dim3 one = {1, 1, 1};

/* Iteration k reads a and writes b when k is even, the other way round when k is odd. */
static float *x_old_of(const struct solver *w, int k) { return k % 2 == 0 ? w->a : w->b; }
static float *x_new_of(const struct solver *w, int k) { return k % 2 == 0 ? w->b : w->a; }

/* One iteration on w->s. While the stream captures nothing runs: each call adds a node. */
static gcap_status issue(struct solver *w, int k, int with_checkpoint) {
  gcap_status st;
  uint32_t n = N;
  float *x_old = x_old_of(w, k), *x_new = x_new_of(w, k);
  void *jacobi_args[] = {&x_old, &x_new, &w->rhs, &n}; /* the values are copied by the call */
  void *residual_args[] = {&x_old, &x_new, &w->d_sum, &n};
  if ((st = gcap_memset_async(w->s, w->d_sum, 0, sizeof(double))) != GCAP_SUCCESS) return st;
  if ((st = gcap_launch_kernel(w->s, w->jacobi, jacobi_grid, jacobi_block, 0, jacobi_args)) != GCAP_SUCCESS)
    return st;
  if ((st = gcap_launch_kernel(w->s, w->residual, one, one, 0, residual_args)) != GCAP_SUCCESS) return st;
  if ((st = gcap_memcpy_async(w->s, &w->h_sum, w->d_sum, sizeof(double), GCAP_MEMCPY_DEVICE_TO_HOST)) != GCAP_SUCCESS)
    return st;
  if (with_checkpoint)
    st = gcap_memcpy_async(w->s, w->checkpoint, x_new, N * sizeof(float), GCAP_MEMCPY_DEVICE_TO_DEVICE);
  return st;
}

/* Every run starts from x = 0 inside, u(0) = 1, u(1) = 0 in both buffers, and an empty checkpoint. */
static gcap_status reset(gcap_context *ctx, struct solver *w) {
  float x[N] = {0};
  x[0] = 1.0f;
  gcap_status st = gcap_memcpy(ctx, w->a, x, sizeof x, GCAP_MEMCPY_HOST_TO_DEVICE);
  if (st == GCAP_SUCCESS) st = gcap_memcpy(ctx, w->b, x, sizeof x, GCAP_MEMCPY_HOST_TO_DEVICE);
  if (st == GCAP_SUCCESS) st = gcap_memset_async(w->s, w->checkpoint, 0, N * sizeof(float));
  if (st == GCAP_SUCCESS) st = gcap_stream_synchronize(w->s);
  w->h_sum = -1.0;
  return st;
}

/* After ITERS iterations the solution is in the buffer the last iteration wrote. */
static gcap_status collect(gcap_context *ctx, const struct solver *w, struct result *r) {
  gcap_status st = gcap_memcpy(ctx, r->x, x_new_of(w, ITERS - 1), sizeof r->x, GCAP_MEMCPY_DEVICE_TO_HOST);
  if (st == GCAP_SUCCESS) st = gcap_memcpy(ctx, r->checkpoint, w->checkpoint, sizeof r->checkpoint, GCAP_MEMCPY_DEVICE_TO_HOST);
  return st;
}

/* 0 when a and b are equal bit for bit; else prints the first difference. */
static int differ(const char *name, const struct result *a, const struct result *b) {
  for (int k = 0; k < ITERS; k++)
    if (memcmp(&a->residual[k], &b->residual[k], sizeof(double)) != 0) {
      fprintf(stderr, "update: %s: residual of iteration %d is %.17g, eager %.17g\n", name, k, b->residual[k],
              a->residual[k]);
      return 1;
    }
  if (memcmp(a->x, b->x, sizeof a->x) != 0) {
    fprintf(stderr, "update: %s: the solution differs from the eager run\n", name);
    return 1;
  }
  if (memcmp(a->checkpoint, b->checkpoint, sizeof a->checkpoint) != 0) {
    fprintf(stderr, "update: %s: the checkpoint differs from the eager run\n", name);
    return 1;
  }
  return 0;
}

static const char *update_result_name(gcap_exec_update_result r) {
  switch (r) {
  case GCAP_EXEC_UPDATE_SUCCESS: return "SUCCESS";
  case GCAP_EXEC_UPDATE_ERROR: return "ERROR";
  case GCAP_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED: return "TOPOLOGY_CHANGED";
  case GCAP_EXEC_UPDATE_ERROR_NODE_TYPE_CHANGED: return "NODE_TYPE_CHANGED";
  case GCAP_EXEC_UPDATE_ERROR_FUNCTION_CHANGED: return "FUNCTION_CHANGED";
  case GCAP_EXEC_UPDATE_ERROR_PARAMETERS_CHANGED: return "PARAMETERS_CHANGED";
  case GCAP_EXEC_UPDATE_ERROR_NOT_SUPPORTED: return "NOT_SUPPORTED";
  case GCAP_EXEC_UPDATE_ERROR_UNSUPPORTED_FUNCTION_CHANGE: return "UNSUPPORTED_FUNCTION_CHANGE";
  case GCAP_EXEC_UPDATE_ERROR_ATTRIBUTES_CHANGED: return "ATTRIBUTES_CHANGED";
  }
  return "?";
}

int main(void) {
  int ok = 0;
  gcap_context *ctx = NULL;
  gcap_module *mod = NULL;
  gcap_graph *graph = NULL;
  gcap_exec *exec = NULL;
  struct solver w = {0};
  struct result *eager = calloc(1, sizeof *eager), *v1 = calloc(1, sizeof *v1), *v2 = calloc(1, sizeof *v2);
  if (eager == NULL || v1 == NULL || v2 == NULL) {
    fprintf(stderr, "update: out of memory\n");
    free(eager);
    free(v1);
    free(v2);
    return 1;
  }

  /* 1. A context (the simulator unless GCAP_BACKEND says otherwise), the two kernels, a stream. */
  const char *env = getenv("GCAP_BACKEND");
  gcap_context_options opts;
  gcap_context_options_init(&opts);
  opts.backend = (env != NULL && *env != '\0') ? GCAP_BACKEND_AUTO : GCAP_BACKEND_SIM;
  gcap_status created = gcap_context_create(&opts, &ctx);
  if (created == GCAP_ERROR_NOT_SUPPORTED || created == GCAP_ERROR_NOT_INITIALIZED) {
    fprintf(stderr, "update: skipped: %s\n", gcap_last_error_message());
    free(eager);
    free(v1);
    free(v2);
    return 77; /* the backend GCAP_BACKEND names cannot start here (Meson's "skipped") */
  }
  CHECK(created);
  printf("gcap update on the %s backend: 1-D Poisson, %u points, %d Jacobi iterations\n",
         gcap_backend_name(gcap_context_backend(ctx)), N, ITERS);

  const size_t jacobi_params[] = {sizeof(const float *), sizeof(float *), sizeof(const float *), sizeof(uint32_t)};
  const size_t residual_params[] = {sizeof(const float *), sizeof(const float *), sizeof(double *), sizeof(uint32_t)};
  const gcap_kernel_def defs[] = {
      {.name = "jacobi", .sim_fn = jacobi_sim, .num_params = 4, .param_sizes = jacobi_params},
      {.name = "residual", .sim_fn = residual_sim, .num_params = 4, .param_sizes = residual_params},
  };
  const gcap_module_desc desc = {.image = update_ptx, .image_size = sizeof update_ptx, .kernels = defs, .num_kernels = 2};
  CHECK(gcap_module_load(ctx, &desc, &mod));
  CHECK(gcap_module_get_kernel(mod, "jacobi", &w.jacobi));
  CHECK(gcap_module_get_kernel(mod, "residual", &w.residual));
  CHECK(gcap_stream_create(ctx, &w.s));

  /* 2. Memory, allocated before any capture. The right-hand side h^2 f with f = 8. */
  void *a = NULL, *b = NULL, *rhs = NULL, *checkpoint = NULL, *d_sum = NULL;
  CHECK(gcap_mem_alloc(ctx, N * sizeof(float), &a));
  CHECK(gcap_mem_alloc(ctx, N * sizeof(float), &b));
  CHECK(gcap_mem_alloc(ctx, N * sizeof(float), &rhs));
  CHECK(gcap_mem_alloc(ctx, N * sizeof(float), &checkpoint));
  CHECK(gcap_mem_alloc(ctx, sizeof(double), &d_sum));
  w.a = a, w.b = b, w.rhs = rhs, w.checkpoint = checkpoint, w.d_sum = d_sum;
  {
    float f[N];
    const float h = 1.0f / (float)(N - 1);
    for (uint32_t i = 0; i < N; i++) f[i] = 8.0f * h * h;
    CHECK(gcap_memcpy(ctx, w.rhs, f, sizeof f, GCAP_MEMCPY_HOST_TO_DEVICE));
  }

  /* 3. The eager run: the reference. */
  CHECK(reset(ctx, &w));
  for (int k = 0; k < ITERS; k++) {
    CHECK(issue(&w, k, k == ITERS - 1));
    CHECK(gcap_stream_synchronize(w.s));
    eager->residual[k] = w.h_sum;
  }
  CHECK(collect(ctx, &w, eager));
  printf("eager:     residual %.3e after the first iteration, %.3e after the last\n", eager->residual[0],
         eager->residual[ITERS - 1]);

  /* 4. Variant 1: one capture, one instantiation, the pointer arguments swapped before every launch. */
  CHECK(reset(ctx, &w));
  CHECK(gcap_stream_begin_capture(w.s, GCAP_CAPTURE_MODE_GLOBAL));
  CHECK(issue(&w, 0, 0));
  CHECK(gcap_stream_end_capture(w.s, &graph));
  CHECK(gcap_graph_instantiate(graph, 0, &exec));
  gcap_node *nodes[4];
  size_t count = 4;
  CHECK(gcap_graph_get_nodes(graph, nodes, &count)); /* memset, jacobi, residual, download */
  if (count != 4 || gcap_node_get_type(nodes[1]) != GCAP_NODE_KERNEL || gcap_node_get_type(nodes[2]) != GCAP_NODE_KERNEL) {
    fprintf(stderr, "update: the captured iteration is not memset -> kernel -> kernel -> memcpy\n");
    goto done;
  }
  gcap_node *jacobi_node = nodes[1], *residual_node = nodes[2];
  int swaps = 0;
  for (int k = 0; k < ITERS; k++) {
    uint32_t n = N;
    float *x_old = x_old_of(&w, k), *x_new = x_new_of(&w, k);
    void *jacobi_args[] = {&x_old, &x_new, &w.rhs, &n};
    void *residual_args[] = {&x_old, &x_new, &w.d_sum, &n};
    gcap_kernel_node_params p;
    CHECK(gcap_node_get_kernel_params(jacobi_node, &p)); /* kernel, grid and block as captured */
    p.args = jacobi_args;                                /* copied by the call */
    CHECK(gcap_exec_kernel_node_set_params(exec, jacobi_node, &p));
    CHECK(gcap_node_get_kernel_params(residual_node, &p));
    p.args = residual_args;
    CHECK(gcap_exec_kernel_node_set_params(exec, residual_node, &p));
    swaps += 2;
    CHECK(gcap_exec_launch(exec, w.s));
    CHECK(gcap_stream_synchronize(w.s));
    v1->residual[k] = w.h_sum;
  }
  CHECK(gcap_memcpy_async(w.s, w.checkpoint, x_new_of(&w, ITERS - 1), N * sizeof(float), GCAP_MEMCPY_DEVICE_TO_DEVICE));
  CHECK(gcap_stream_synchronize(w.s));
  CHECK(collect(ctx, &w, v1));
  {
    /* The setters change the executable only: the graph's node still reads a and writes b. */
    gcap_kernel_node_params p;
    const float *captured_old;
    CHECK(gcap_node_get_kernel_params(jacobi_node, &p));
    memcpy(&captured_old, p.args[0], sizeof captured_old);
    if (captured_old != w.a) {
      fprintf(stderr, "update: the exec setter changed the source graph's node\n");
      goto done;
    }
  }
  gcap_exec_destroy(exec);
  exec = NULL;
  gcap_graph_destroy(graph);
  graph = NULL;
  printf("variant 1: 1 instantiation, %d launches, %d kernel node updates\n", ITERS, swaps);

  /* 5. Variant 2: capture every iteration; update the executable, or instantiate again when refused. */
  CHECK(reset(ctx, &w));
  int instantiated = 0, updated = 0, fell_back = 0;
  gcap_exec_update_result refused = GCAP_EXEC_UPDATE_SUCCESS;
  for (int k = 0; k < ITERS; k++) {
    CHECK(gcap_stream_begin_capture(w.s, GCAP_CAPTURE_MODE_GLOBAL));
    CHECK(issue(&w, k, k == ITERS - 1)); /* the last iteration has a fifth node: the checkpoint */
    CHECK(gcap_stream_end_capture(w.s, &graph));
    if (exec == NULL) {
      CHECK(gcap_graph_instantiate(graph, 0, &exec));
      instantiated++;
    } else {
      gcap_exec_update_info info;
      gcap_status st = gcap_exec_update(exec, graph, &info);
      if (st == GCAP_SUCCESS) {
        updated++;
      } else if (st == GCAP_ERROR_GRAPH_EXEC_UPDATE_FAILURE) {
        /* exec is unchanged and still valid; this graph does not fit it, so make a new one */
        refused = info.result;
        gcap_exec_destroy(exec);
        exec = NULL;
        CHECK(gcap_graph_instantiate(graph, 0, &exec));
        fell_back++;
      } else {
        CHECK(st);
      }
    }
    gcap_graph_destroy(graph); /* the exec does not need it */
    graph = NULL;
    CHECK(gcap_exec_launch(exec, w.s));
    CHECK(gcap_stream_synchronize(w.s));
    v2->residual[k] = w.h_sum;
  }
  CHECK(collect(ctx, &w, v2));
  gcap_exec_destroy(exec);
  exec = NULL;
  printf("variant 2: %d captures, %d instantiation, %d updates, %d refused (%s) and instantiated again\n", ITERS,
         instantiated, updated, fell_back, update_result_name(refused));

  /* 6. Both variants against the eager run, and the paths variant 2 took. */
  int bad = differ("variant 1", eager, v1) + differ("variant 2", eager, v2);
  if (instantiated != 1 || updated != ITERS - 2 || fell_back != 1 ||
      refused != GCAP_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED) {
    fprintf(stderr, "update: variant 2 expected 1 instantiation, %d updates and 1 refusal (TOPOLOGY_CHANGED)\n",
            ITERS - 2);
    bad++;
  }
  printf("u(1/2) = %.6f (exact solution 4x(1-x) + 1-x: 1.5); checkpoint %s the solution\n",
         (double)eager->x[N / 2], memcmp(eager->checkpoint, eager->x, sizeof eager->x) == 0 ? "equals" : "differs from");
  if (bad != 0) goto done;

  /* 7. Clean up. */
  CHECK(gcap_stream_destroy(w.s));
  CHECK(gcap_mem_free(ctx, a));
  CHECK(gcap_mem_free(ctx, b));
  CHECK(gcap_mem_free(ctx, rhs));
  CHECK(gcap_mem_free(ctx, checkpoint));
  CHECK(gcap_mem_free(ctx, d_sum));
  CHECK(gcap_module_unload(mod));
  ok = 1;

done:
  /* On failure, destroying the context frees whatever is left. */
  gcap_exec_destroy(exec);
  gcap_graph_destroy(graph);
  gcap_context_destroy(ctx);
  free(eager);
  free(v1);
  free(v2);
  if (!ok) {
    fprintf(stderr, "update: FAILED\n");
    return 1;
  }
  printf("\nOK: both variants equal the eager run bit for bit\n");
  return 0;
}
