/*
 * gcap pools: two graphs that share one memory pool, the way PyTorch shares a graph pool.
 *
 *   graph A:  alloc scratch ──► upload x into scratch ──► square(scratch) ──► copy scratch to mid ──► free scratch
 *   graph B:  alloc tmp ──► blend(mid, tmp) ──► download tmp to y ──► free tmp
 *
 * Both graphs are captured on the same stream, one after the other, by capture objects begun
 * with the same pool (gcap_capture_options.pool). Their temporaries come from
 * gcap_mem_alloc_async and go back with gcap_mem_free_async inside the capture, so each graph
 * owns a MEM_ALLOC and a MEM_FREE node and an address fixed at capture. Both captures are
 * finished with GCAP_INSTANTIATE_AUTO_FREE_ON_LAUNCH (as PyTorch's capture_end), which
 * instantiates and releases the graph. The user then lets go of the pool: the two executables
 * keep it, and its memory, alive. A then B (the capture order) are replayed RUNS times with a new
 * input every time, and every output is checked against the same formulas computed on the CPU.
 * The pool's figures are printed after every step that changes them, while the user still holds
 * the pool.
 *
 * Runs on the CPU simulator unless the GCAP_BACKEND environment variable is set.
 * Exit status: 0 when every figure and every result is as expected, 1 otherwise.
 */
#include <gcap/gcap.h>
#include <gcap/sim.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/pools_ptx.h" /* the same kernels for the CUDA backend, from kernels/pools.cu */

#define N 1024u    /* floats in every buffer */
#define BLOCK 128u /* threads per block */
#define RUNS 100   /* replays of A then B */

#define CHECK(call)                                                                              \
  do {                                                                                           \
    gcap_status st_ = (call);                                                                    \
    if (st_ != GCAP_SUCCESS) {                                                                   \
      fprintf(stderr, "pools: %s failed: %s: %s\n", #call, gcap_status_name(st_),                \
              gcap_last_error_message());                                                        \
      goto done;                                                                                 \
    }                                                                                            \
  } while (0)

/* ---- The element formulas, shared by the kernels and the CPU reference so both round alike. ---- */

static float square_plus_one(float v) { return v * v + 1.0f; }
static float blend(float mid_i, float mid_mirror) { return 0.5f * mid_mirror - 0.25f * mid_i; }

static uint32_t global_index(const gcap_sim_thread *t) { return t->block_idx.x * t->block_dim.x + t->thread_idx.x; }

/* square(float *v, uint32_t n): v[i] = v[i]^2 + 1, in place */
static void square_sim(const gcap_sim_thread *t, void *const *args) {
  float *v;
  uint32_t n;
  memcpy(&v, args[0], sizeof v);
  memcpy(&n, args[1], sizeof n);
  uint32_t i = global_index(t);
  if (i < n) v[i] = square_plus_one(v[i]);
}

/* blend(const float *mid, float *out, uint32_t n): out[i] = 0.5 mid[n-1-i] - 0.25 mid[i] */
static void blend_sim(const gcap_sim_thread *t, void *const *args) {
  const float *mid;
  float *out;
  uint32_t n;
  memcpy(&mid, args[0], sizeof mid);
  memcpy(&out, args[1], sizeof out);
  memcpy(&n, args[2], sizeof n);
  uint32_t i = global_index(t);
  if (i < n) out[i] = blend(mid[i], mid[n - 1u - i]);
}

/* ---- The pool's figures ---- */

/*
 * reserved: bytes the pool holds from the backend (reserved when a capture allocates);
 * used:     bytes of graph allocations allocated right now (by a launch, not freed since);
 * peak:     the highest `used` since the pool was created;
 * execs:    executables drawing from the pool (each holds a reference to it).
 */
static int print_stats(const gcap_pool *pool, const char *when, const gcap_pool_stats *want) {
  gcap_pool_stats s;
  gcap_status st = gcap_pool_get_stats(pool, &s);
  if (st != GCAP_SUCCESS) {
    fprintf(stderr, "pools: gcap_pool_get_stats failed: %s: %s\n", gcap_status_name(st), gcap_last_error_message());
    return 0;
  }
  printf("  %-34s reserved %6zu  used %6zu  peak %6zu  execs %zu\n", when, s.reserved_bytes, s.used_bytes,
         s.peak_bytes, s.attached_execs);
  if (memcmp(&s, want, sizeof s) != 0) {
    fprintf(stderr, "pools: expected reserved %zu, used %zu, peak %zu, execs %zu\n", want->reserved_bytes,
            want->used_bytes, want->peak_bytes, want->attached_execs);
    return 0;
  }
  return 1;
}

/* ---- The two captures ---- */

struct work {
  gcap_stream *s;
  gcap_pool *pool;
  gcap_kernel *square, *blend;
  float *hx, *hy; /* pinned host input and output */
  float *mid;     /* A's result, B's input: an ordinary device allocation */
  void *scratch;  /* A's temporary, returned by the capture */
  void *tmp;      /* B's temporary */
};

static const gcap_dim3 grid = {(N + BLOCK - 1) / BLOCK, 1, 1}, block = {BLOCK, 1, 1};

/* Graph A: its scratch buffer lives from the alloc node to the free node of every launch. */
static gcap_status capture_a(struct work *w, gcap_capture **c, gcap_exec **exec) {
  const size_t bytes = N * sizeof(float);
  gcap_capture_options o;
  gcap_capture_options_init(&o);
  o.pool = w->pool;
  gcap_status st = gcap_capture_begin(w->s, &o, c);
  if (st != GCAP_SUCCESS) return st;
  if ((st = gcap_mem_alloc_async(w->s, bytes, &w->scratch)) != GCAP_SUCCESS) return st; /* MEM_ALLOC node */
  float *scratch = w->scratch;
  uint32_t n = N;
  void *args[] = {&scratch, &n};
  if ((st = gcap_memcpy_async(w->s, scratch, w->hx, bytes, GCAP_MEMCPY_HOST_TO_DEVICE)) != GCAP_SUCCESS) return st;
  if ((st = gcap_launch_kernel(w->s, w->square, grid, block, 0, args)) != GCAP_SUCCESS) return st;
  if ((st = gcap_memcpy_async(w->s, w->mid, scratch, bytes, GCAP_MEMCPY_DEVICE_TO_DEVICE)) != GCAP_SUCCESS) return st;
  if ((st = gcap_mem_free_async(w->s, scratch)) != GCAP_SUCCESS) return st; /* MEM_FREE node */
  return gcap_capture_finish(*c, GCAP_INSTANTIATE_AUTO_FREE_ON_LAUNCH, exec);
}

/* Graph B: same stream, same pool, its own temporary. */
static gcap_status capture_b(struct work *w, gcap_capture **c, gcap_exec **exec) {
  const size_t bytes = N * sizeof(float);
  gcap_capture_options o;
  gcap_capture_options_init(&o);
  o.pool = w->pool;
  gcap_status st = gcap_capture_begin(w->s, &o, c);
  if (st != GCAP_SUCCESS) return st;
  if ((st = gcap_mem_alloc_async(w->s, bytes, &w->tmp)) != GCAP_SUCCESS) return st;
  float *mid = w->mid, *tmp = w->tmp;
  uint32_t n = N;
  void *args[] = {&mid, &tmp, &n};
  if ((st = gcap_launch_kernel(w->s, w->blend, grid, block, 0, args)) != GCAP_SUCCESS) return st;
  if ((st = gcap_memcpy_async(w->s, w->hy, tmp, bytes, GCAP_MEMCPY_DEVICE_TO_HOST)) != GCAP_SUCCESS) return st;
  if ((st = gcap_mem_free_async(w->s, tmp)) != GCAP_SUCCESS) return st;
  return gcap_capture_finish(*c, GCAP_INSTANTIATE_AUTO_FREE_ON_LAUNCH, exec);
}

static void make_input(float *x, int run) {
  for (uint32_t i = 0; i < N; i++) x[i] = (float)(i % 16u) * 0.0625f + (float)run * 0.03125f;
}

int main(void) {
  int ok = 0;
  gcap_context *ctx = NULL;
  gcap_module *mod = NULL;
  gcap_capture *cap_a = NULL, *cap_b = NULL;
  gcap_exec *exec_a = NULL, *exec_b = NULL;
  struct work w = {0};
  void *hx = NULL, *hy = NULL, *mid = NULL;
  const size_t bytes = N * sizeof(float);

  /* 1. A context (the simulator unless GCAP_BACKEND says otherwise), two kernels, one stream. */
  const char *env = getenv("GCAP_BACKEND");
  gcap_context_options opts;
  gcap_context_options_init(&opts);
  opts.backend = (env != NULL && *env != '\0') ? GCAP_BACKEND_AUTO : GCAP_BACKEND_SIM;
  gcap_status created = gcap_context_create(&opts, &ctx);
  if (created == GCAP_ERROR_NOT_SUPPORTED || created == GCAP_ERROR_NOT_INITIALIZED) {
    fprintf(stderr, "pools: skipped: %s\n", gcap_last_error_message());
    return 77; /* the backend GCAP_BACKEND names cannot start here (Meson's "skipped") */
  }
  CHECK(created);
  printf("gcap pools on the %s backend: two graphs, one pool, %u floats per buffer\n",
         gcap_backend_name(gcap_context_backend(ctx)), N);

  const size_t square_params[] = {sizeof(float *), sizeof(uint32_t)};
  const size_t blend_params[] = {sizeof(const float *), sizeof(float *), sizeof(uint32_t)};
  const gcap_kernel_def defs[] = {
      {.name = "square", .sim_fn = square_sim, .num_params = 2, .param_sizes = square_params},
      {.name = "blend", .sim_fn = blend_sim, .num_params = 3, .param_sizes = blend_params},
  };
  const gcap_module_desc desc = {.image = pools_ptx, .image_size = sizeof pools_ptx, .kernels = defs, .num_kernels = 2};
  CHECK(gcap_module_load(ctx, &desc, &mod));
  CHECK(gcap_module_get_kernel(mod, "square", &w.square));
  CHECK(gcap_module_get_kernel(mod, "blend", &w.blend));
  CHECK(gcap_stream_create(ctx, &w.s));

  /* Memory that outlives the graphs is allocated before any capture, as usual. */
  CHECK(gcap_host_alloc(ctx, bytes, &hx));
  CHECK(gcap_host_alloc(ctx, bytes, &hy));
  CHECK(gcap_mem_alloc(ctx, bytes, &mid));
  w.hx = hx, w.hy = hy, w.mid = mid;

  /* 2. The pool. The user holds the only reference; nothing is reserved yet. */
  printf("\npool figures (bytes):\n");
  CHECK(gcap_pool_create(ctx, &w.pool));
  if (!print_stats(w.pool, "created", &(gcap_pool_stats){0, 0, 0, 0})) goto done;

  /* 3. Capture A. Its scratch block is reserved now, at capture; nothing is allocated until a launch. */
  CHECK(capture_a(&w, &cap_a, &exec_a));
  gcap_capture_destroy(cap_a);
  cap_a = NULL;
  if (!print_stats(w.pool, "after capturing A", &(gcap_pool_stats){bytes, 0, 0, 1})) goto done;

  /* 4. Capture B on the same stream with the same pool. A's block belongs to A's executable,
   *    so B gets a block of its own: reserved grows, and the two addresses differ. */
  CHECK(capture_b(&w, &cap_b, &exec_b));
  gcap_capture_destroy(cap_b);
  cap_b = NULL;
  if (!print_stats(w.pool, "after capturing B", &(gcap_pool_stats){2 * bytes, 0, 0, 2})) goto done;
  printf("  A's scratch at %p, B's temporary at %p (fixed for the life of each executable)\n", w.scratch, w.tmp);
  if (w.scratch == w.tmp) {
    fprintf(stderr, "pools: the two graphs' temporaries share an address\n");
    goto done;
  }
  if (gcap_exec_node_count(exec_a) != 5 || gcap_exec_node_count(exec_b) != 4) {
    fprintf(stderr, "pools: A runs %zu nodes (expected 5), B %zu (expected 4)\n", gcap_exec_node_count(exec_a),
            gcap_exec_node_count(exec_b));
    goto done;
  }

  /* 5. The user lets go of the pool; the executables keep it. Its handle is dead from now on. */
  gcap_pool_release(w.pool);
  gcap_pool_stats after;
  gcap_status released = gcap_pool_get_stats(w.pool, &after);
  printf("  released by the user: gcap_pool_get_stats -> %s; the two executables keep its memory\n",
         gcap_status_name(released));
  w.pool = NULL;
  if (released != GCAP_ERROR_INVALID_HANDLE) {
    fprintf(stderr, "pools: a released pool still answers\n");
    goto done;
  }

  /* 6. Replay A then B, in capture order, with a new input each time. */
  long bad = 0;
  for (int r = 0; r < RUNS; r++) {
    make_input(w.hx, r);
    CHECK(gcap_exec_launch(exec_a, w.s));
    CHECK(gcap_exec_launch(exec_b, w.s));
    CHECK(gcap_stream_synchronize(w.s));
    float m[N];
    for (uint32_t i = 0; i < N; i++) m[i] = square_plus_one(w.hx[i]);
    for (uint32_t i = 0; i < N; i++) {
      float want = blend(m[i], m[N - 1u - i]);
      if (memcmp(&want, &w.hy[i], sizeof want) != 0) bad++;
    }
  }
  printf("\nreplayed A then B %d times: %ld of %d values differ from the CPU\n", RUNS, bad, RUNS * (int)N);
  printf("last run: y[0] = %.6f, y[%u] = %.6f\n", (double)w.hy[0], N - 1u, (double)w.hy[N - 1u]);
  if (bad != 0) goto done;

  if (gcap_context_backend(ctx) == GCAP_BACKEND_SIM) {
    gcap_sim_stats ss;
    CHECK(gcap_sim_get_stats(ctx, &ss));
    printf("simulator: %llu launches, %llu graph nodes run (the alloc and free nodes count, and move no bytes)\n",
           (unsigned long long)ss.graph_launches, (unsigned long long)ss.nodes_executed);
    if (ss.graph_launches != 2u * RUNS || ss.nodes_executed != 9u * RUNS) {
      fprintf(stderr, "pools: expected %d launches and %d nodes\n", 2 * RUNS, 9 * RUNS);
      goto done;
    }
  }

  /* 7. Clean up: the pool's memory goes back with the last executable. */
  gcap_exec_destroy(exec_a);
  exec_a = NULL;
  gcap_exec_destroy(exec_b);
  exec_b = NULL;
  CHECK(gcap_stream_destroy(w.s));
  CHECK(gcap_mem_free(ctx, mid));
  CHECK(gcap_host_free(ctx, hx));
  CHECK(gcap_host_free(ctx, hy));
  CHECK(gcap_module_unload(mod));
  ok = 1;

done:
  /* On failure, destroying the context frees whatever is left. */
  gcap_capture_destroy(cap_a);
  gcap_capture_destroy(cap_b);
  gcap_exec_destroy(exec_a);
  gcap_exec_destroy(exec_b);
  gcap_pool_release(w.pool);
  gcap_context_destroy(ctx);
  if (!ok) {
    fprintf(stderr, "pools: FAILED\n");
    return 1;
  }
  printf("\nOK: two graphs shared one pool, %d replays, every result equal to the CPU\n", RUNS);
  return 0;
}
