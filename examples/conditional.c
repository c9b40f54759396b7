/*
 * gcap conditional: an iterative solver that runs until it has converged, in one graph launch.
 *
 * The problem is update.c's: the 1-D Poisson equation -u'' = f on N points, u(0) = 1, u(1) = 0,
 * solved by Jacobi relaxation with two buffers a and b. One pass of the loop is two sweeps (a into
 * b, then b into a), the residual of the second one, and a check:
 *
 *     WHILE again:   jacobi(a, b) ──► jacobi(b, a) ──► residual(b, a, sum) ──► check(sum, sweeps, again)
 *
 * check counts the sweeps and sets the conditional handle `again` to "the residual is above TOL
 * and the budget is not spent" (gcap_sim_set_conditional on the simulator, cudaGraphSetConditional
 * on a GPU). The handle starts every launch at 1 (GCAP_GRAPH_COND_ASSIGN_DEFAULT), so the body
 * runs at least once: a do-while loop, decided on the device, with no round trip to the host.
 *
 * The same solver also runs eagerly, the host reading the residual back after every pass and
 * deciding; both must take the same number of sweeps and end with the same solution, bit for bit.
 *
 * Runs on the CPU simulator unless the GCAP_BACKEND environment variable is set; on CUDA the
 * kernels come from kernels/conditional.cu, whose PTX the backend links with libcudadevrt.
 * Exit status: 0 when the graph reproduces the eager run, 1 otherwise, 77 when the backend
 * GCAP_BACKEND names cannot start here.
 */
#include <gcap/gcap.h>
#include <gcap/sim.h>

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/conditional_ptx.h" /* the same kernels for the CUDA backend, from kernels/conditional.cu */

#define N 32u             /* grid points, boundaries included */
#define BLOCK 16u         /* threads per block of the jacobi kernel */
#define TOL 1e-4          /* the loop stops once a sweep changes the solution by less than this in all */
#define MAX_SWEEPS 20000u /* or after this many sweeps */

#define CHECK(call)                                                                              \
  do {                                                                                           \
    gcap_status st_ = (call);                                                                    \
    if (st_ != GCAP_SUCCESS) {                                                                   \
      fprintf(stderr, "conditional: %s failed: %s: %s\n", #call, gcap_status_name(st_),          \
              gcap_last_error_message());                                                        \
      goto done;                                                                                 \
    }                                                                                            \
  } while (0)

/* ---- CPU implementations of the kernels (the simulator calls them once per thread). ---- */

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

/* residual(const float *x_old, const float *x_new, double *sum, uint32_t n): *sum = sum |x_new - x_old|,
 * by one thread in index order, so every run adds in the same order and rounds alike. */
static void residual_sim(const gcap_sim_thread *t, void *const *args) {
  const float *x_old, *x_new;
  double *sum;
  uint32_t n;
  if (t->thread_idx.x != 0 || t->block_idx.x != 0) return;
  memcpy(&x_old, args[0], sizeof x_old);
  memcpy(&x_new, args[1], sizeof x_new);
  memcpy(&sum, args[2], sizeof sum);
  memcpy(&n, args[3], sizeof n);
  double s = 0.0;
  for (uint32_t i = 0; i < n; i++) s += fabs((double)x_new[i] - (double)x_old[i]);
  *sum = s;
}

/* check(const double *sum, double tol, uint32_t *sweeps, uint32_t max_sweeps, handle again) */
static void check_sim(const gcap_sim_thread *t, void *const *args) {
  const double *sum;
  double tol;
  uint32_t *sweeps, max_sweeps;
  gcap_conditional_handle again;
  if (t->thread_idx.x != 0 || t->block_idx.x != 0) return;
  memcpy(&sum, args[0], sizeof sum);
  memcpy(&tol, args[1], sizeof tol);
  memcpy(&sweeps, args[2], sizeof sweeps);
  memcpy(&max_sweeps, args[3], sizeof max_sweeps);
  memcpy(&again, args[4], sizeof again);
  *sweeps += 2;
  gcap_sim_set_conditional(again, *sum > tol && *sweeps < max_sweeps);
}

/* ---- The solver ---- */

struct solver {
  gcap_context *ctx;
  gcap_stream *s;
  gcap_kernel *jacobi, *residual, *check;
  float *a, *b, *rhs; /* device */
  double *sum;        /* device */
  uint32_t *sweeps;   /* device */
};

struct result {
  uint32_t sweeps;
  double residual;
  float x[N];
};

static const gcap_dim3 jacobi_grid = {(N + BLOCK - 1) / BLOCK, 1, 1}, jacobi_block = {BLOCK, 1, 1};
static const gcap_dim3 one = {1, 1, 1};

/* x = 0 inside, u(0) = 1, u(1) = 0 in both buffers; no sweep done. */
static gcap_status reset(struct solver *w) {
  float x[N] = {0};
  uint32_t none = 0;
  x[0] = 1.0f;
  gcap_status st = gcap_memcpy(w->ctx, w->a, x, sizeof x, GCAP_MEMCPY_HOST_TO_DEVICE);
  if (st == GCAP_SUCCESS) st = gcap_memcpy(w->ctx, w->b, x, sizeof x, GCAP_MEMCPY_HOST_TO_DEVICE);
  if (st == GCAP_SUCCESS) st = gcap_memcpy(w->ctx, w->sweeps, &none, sizeof none, GCAP_MEMCPY_HOST_TO_DEVICE);
  return st;
}

static gcap_status collect(const struct solver *w, struct result *r) {
  gcap_status st = gcap_memcpy(w->ctx, r->x, w->a, sizeof r->x, GCAP_MEMCPY_DEVICE_TO_HOST);
  if (st == GCAP_SUCCESS) st = gcap_memcpy(w->ctx, &r->sweeps, w->sweeps, sizeof r->sweeps, GCAP_MEMCPY_DEVICE_TO_HOST);
  if (st == GCAP_SUCCESS) st = gcap_memcpy(w->ctx, &r->residual, w->sum, sizeof r->residual, GCAP_MEMCPY_DEVICE_TO_HOST);
  return st;
}

/* The eager reference: the same kernels, the host deciding after every pass. */
static gcap_status run_eager(struct solver *w, struct result *r) {
  uint32_t n = N;
  void *forth[] = {&w->a, &w->b, &w->rhs, &n}, *back[] = {&w->b, &w->a, &w->rhs, &n};
  void *res[] = {&w->b, &w->a, &w->sum, &n};
  gcap_status st = reset(w);
  uint32_t sweeps = 0;
  double sum = 0.0;
  do {
    if (st == GCAP_SUCCESS) st = gcap_launch_kernel(w->s, w->jacobi, jacobi_grid, jacobi_block, 0, forth);
    if (st == GCAP_SUCCESS) st = gcap_launch_kernel(w->s, w->jacobi, jacobi_grid, jacobi_block, 0, back);
    if (st == GCAP_SUCCESS) st = gcap_launch_kernel(w->s, w->residual, one, one, 0, res);
    if (st == GCAP_SUCCESS) st = gcap_memcpy_async(w->s, &sum, w->sum, sizeof sum, GCAP_MEMCPY_DEVICE_TO_HOST);
    if (st == GCAP_SUCCESS) st = gcap_stream_synchronize(w->s);
    sweeps += 2;
  } while (st == GCAP_SUCCESS && sum > TOL && sweeps < MAX_SWEEPS);
  if (st == GCAP_SUCCESS) st = gcap_memcpy(w->ctx, w->sweeps, &sweeps, sizeof sweeps, GCAP_MEMCPY_HOST_TO_DEVICE);
  return st == GCAP_SUCCESS ? collect(w, r) : st;
}

/* The graph: one WHILE node whose body is a pass; its handle starts every launch at 1. */
static gcap_status build(struct solver *w, gcap_graph *g) {
  gcap_conditional_handle again = 0;
  gcap_graph *body[1] = {NULL};
  gcap_node *loop = NULL, *sweep1 = NULL, *sweep2 = NULL, *res = NULL, *check = NULL;
  gcap_status st = gcap_graph_conditional_handle_create(g, 1, GCAP_GRAPH_COND_ASSIGN_DEFAULT, &again);
  gcap_conditional_node_params p = {again, GCAP_CONDITIONAL_WHILE, 1, body};
  if (st == GCAP_SUCCESS) st = gcap_graph_add_conditional_node(g, NULL, 0, &p, &loop);
  uint32_t n = N, max_sweeps = MAX_SWEEPS;
  double tol = TOL;
  void *forth[] = {&w->a, &w->b, &w->rhs, &n}, *back[] = {&w->b, &w->a, &w->rhs, &n};
  void *res_args[] = {&w->b, &w->a, &w->sum, &n}, *check_args[] = {&w->sum, &tol, &w->sweeps, &max_sweeps, &again};
  gcap_kernel_node_params k1 = {w->jacobi, jacobi_grid, jacobi_block, 0, forth};
  gcap_kernel_node_params k2 = {w->jacobi, jacobi_grid, jacobi_block, 0, back};
  gcap_kernel_node_params k3 = {w->residual, one, one, 0, res_args};
  gcap_kernel_node_params k4 = {w->check, one, one, 0, check_args};
  if (st == GCAP_SUCCESS) st = gcap_graph_add_kernel_node(body[0], NULL, 0, &k1, &sweep1);
  if (st == GCAP_SUCCESS) st = gcap_graph_add_kernel_node(body[0], &sweep1, 1, &k2, &sweep2);
  if (st == GCAP_SUCCESS) st = gcap_graph_add_kernel_node(body[0], &sweep2, 1, &k3, &res);
  if (st == GCAP_SUCCESS) st = gcap_graph_add_kernel_node(body[0], &res, 1, &k4, &check);
  return st;
}

int main(void) {
  int ok = 0;
  gcap_module *mod = NULL;
  gcap_graph *graph = NULL;
  gcap_exec *exec = NULL;
  struct solver w = {0};
  struct result eager, looped;
  memset(&eager, 0, sizeof eager);
  memset(&looped, 0, sizeof looped);

  /* 1. A context (the simulator unless GCAP_BACKEND says otherwise), the kernels, a stream. */
  const char *env = getenv("GCAP_BACKEND");
  gcap_context_options opts;
  gcap_context_options_init(&opts);
  opts.backend = (env != NULL && *env != '\0') ? GCAP_BACKEND_AUTO : GCAP_BACKEND_SIM;
  gcap_status created = gcap_context_create(&opts, &w.ctx);
  if (created == GCAP_ERROR_NOT_SUPPORTED || created == GCAP_ERROR_NOT_INITIALIZED) {
    fprintf(stderr, "conditional: skipped: %s\n", gcap_last_error_message());
    return 77;
  }
  CHECK(created);
  printf("gcap conditional on the %s backend: 1-D Poisson, %u points, Jacobi until the residual is below %g\n",
         gcap_backend_name(gcap_context_backend(w.ctx)), N, TOL);
  const size_t jacobi_params[] = {sizeof(const float *), sizeof(float *), sizeof(const float *), sizeof(uint32_t)};
  const size_t residual_params[] = {sizeof(const float *), sizeof(const float *), sizeof(double *), sizeof(uint32_t)};
  const size_t check_params[] = {sizeof(const double *), sizeof(double), sizeof(uint32_t *), sizeof(uint32_t),
                                 sizeof(gcap_conditional_handle)};
  const gcap_kernel_def defs[] = {
      {.name = "jacobi", .sim_fn = jacobi_sim, .num_params = 4, .param_sizes = jacobi_params},
      {.name = "residual", .sim_fn = residual_sim, .num_params = 4, .param_sizes = residual_params},
      {.name = "check", .sim_fn = check_sim, .num_params = 5, .param_sizes = check_params},
  };
  const gcap_module_desc desc = {.image = conditional_ptx, .image_size = sizeof conditional_ptx, .kernels = defs,
                                 .num_kernels = 3};
  CHECK(gcap_module_load(w.ctx, &desc, &mod));
  CHECK(gcap_module_get_kernel(mod, "jacobi", &w.jacobi));
  CHECK(gcap_module_get_kernel(mod, "residual", &w.residual));
  CHECK(gcap_module_get_kernel(mod, "check", &w.check));
  CHECK(gcap_stream_create(w.ctx, &w.s));

  /* 2. Memory. The right-hand side h^2 f with f = 8. */
  void *a = NULL, *b = NULL, *rhs = NULL, *sum = NULL, *sweeps = NULL;
  CHECK(gcap_mem_alloc(w.ctx, N * sizeof(float), &a));
  CHECK(gcap_mem_alloc(w.ctx, N * sizeof(float), &b));
  CHECK(gcap_mem_alloc(w.ctx, N * sizeof(float), &rhs));
  CHECK(gcap_mem_alloc(w.ctx, sizeof(double), &sum));
  CHECK(gcap_mem_alloc(w.ctx, sizeof(uint32_t), &sweeps));
  w.a = a, w.b = b, w.rhs = rhs, w.sum = sum, w.sweeps = sweeps;
  {
    float f[N];
    const float h = 1.0f / (float)(N - 1);
    for (uint32_t i = 0; i < N; i++) f[i] = 8.0f * h * h;
    CHECK(gcap_memcpy(w.ctx, w.rhs, f, sizeof f, GCAP_MEMCPY_HOST_TO_DEVICE));
  }

  /* 3. The eager reference. */
  CHECK(run_eager(&w, &eager));
  printf("eager: %u sweeps, %u synchronizations, residual %.3e\n", eager.sweeps, eager.sweeps / 2, eager.residual);

  /* 4. The graph: built once, launched once; the loop runs on the device. */
  CHECK(gcap_graph_create(w.ctx, &graph));
  CHECK(build(&w, graph));
  CHECK(gcap_graph_instantiate(graph, 0, &exec));
  CHECK(reset(&w));
  CHECK(gcap_exec_launch(exec, w.s));
  CHECK(gcap_stream_synchronize(w.s));
  CHECK(collect(&w, &looped));
  printf("graph: %u sweeps in 1 launch of %zu node (a WHILE node, 4 nodes in its body), residual %.3e\n",
         looped.sweeps, gcap_exec_node_count(exec), looped.residual);
  printf("u(1/2) = %f (exact solution 4x(1-x) + 1-x: 1.5)\n", (double)looped.x[N / 2]);

  if (looped.sweeps != eager.sweeps || memcmp(looped.x, eager.x, sizeof looped.x) != 0 ||
      memcmp(&looped.residual, &eager.residual, sizeof looped.residual) != 0) {
    fprintf(stderr, "conditional: the graph's run differs from the eager run\n");
    goto done;
  }
  if (looped.sweeps >= MAX_SWEEPS) {
    fprintf(stderr, "conditional: the solver did not converge in %u sweeps\n", MAX_SWEEPS);
    goto done;
  }
  printf("\nOK: one launch reproduces the eager run bit for bit\n");
  ok = 1;

done:
  gcap_exec_destroy(exec);
  gcap_graph_destroy(graph);
  gcap_context_destroy(w.ctx); /* frees the memory, module and stream too */
  return ok ? 0 : 1;
}
