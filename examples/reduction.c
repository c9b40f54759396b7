/*
 * gcap reduction: the sum of N numbers by a tree in shared memory, whose steps wait at a barrier.
 *
 *   upload x -> reduce (N values -> N/512 partials) -> reduce (partials -> 4) -> download -> the host adds 4
 *
 * Every block of 256 threads sums 512 values: each thread adds two of them into shared memory,
 * then the block halves the values step by step, every thread waiting at the barrier
 * (gcap_sim_syncthreads on the simulator, __syncthreads on a GPU) until the whole block has
 * finished the step. The pipeline is captured into a graph and launched once; the result is
 * checked against a sum on the CPU.
 *
 * Runs on the CPU simulator unless the GCAP_BACKEND environment variable is set (then the backend
 * it names is used); GCAP_SIM_THREADS=2 spreads the simulator's blocks over two threads.
 * Exit status: 0 when the sum matches the CPU's, 1 otherwise.
 */
#include <gcap/gcap.h>
#include <gcap/sim.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/reduction_ptx.h" /* the same kernel for the CUDA backend, from kernels/reduction.cu */

#define N (1u << 20)          /* values to sum */
#define BLOCK 256u            /* threads per block: a power of two */
#define PER_BLOCK (2u * BLOCK) /* values each block sums */

#define CHECK(call)                                                                              \
  do {                                                                                           \
    gcap_status st_ = (call);                                                                    \
    if (st_ != GCAP_SUCCESS) {                                                                   \
      fprintf(stderr, "reduction: %s failed: %s: %s\n", #call, gcap_status_name(st_),            \
              gcap_last_error_message());                                                        \
      goto done;                                                                                 \
    }                                                                                            \
  } while (0)

/*
 * reduce(const uint32_t *in, uint32_t *out, uint32_t n): out[b] = the sum of the PER_BLOCK values
 * of block b (those below n). The simulator calls it once per thread; the threads of a block
 * share t->shared_mem and wait for each other at gcap_sim_syncthreads.
 */
static void reduce_sim(const gcap_sim_thread *t, void *const *args) {
  const uint32_t *in;
  uint32_t *out, n;
  memcpy(&in, args[0], sizeof in);
  memcpy(&out, args[1], sizeof out);
  memcpy(&n, args[2], sizeof n);
  uint32_t *partial = t->shared_mem;
  uint32_t tid = t->thread_idx.x, i = t->block_idx.x * t->block_dim.x * 2u + tid;
  uint32_t v = i < n ? in[i] : 0u;
  if (i + t->block_dim.x < n) v += in[i + t->block_dim.x];
  partial[tid] = v;
  gcap_sim_syncthreads(t); /* every value is in shared memory before any thread adds */
  for (uint32_t s = t->block_dim.x / 2u; s > 0u; s /= 2u) {
    if (tid < s) partial[tid] += partial[tid + s];
    gcap_sim_syncthreads(t); /* the step is done before the next one reads it */
  }
  if (tid == 0u) out[t->block_idx.x] = partial[0];
}

/* Blocks that sum n values. */
static uint32_t blocks_for(uint32_t n) { return (n + PER_BLOCK - 1u) / PER_BLOCK; }

/* The context: the simulator, unless GCAP_BACKEND names another backend. */
static gcap_status context_create(gcap_context **ctx) {
  const char *env = getenv("GCAP_BACKEND");
  gcap_context_options opts;
  gcap_context_options_init(&opts);
  opts.backend = (env != NULL && *env != '\0') ? GCAP_BACKEND_AUTO : GCAP_BACKEND_SIM;
  return gcap_context_create(&opts, ctx);
}

/* On the simulator: how many barriers its blocks passed (each block passes 1 + log2(BLOCK)). */
static void print_counters(gcap_context *ctx) {
  gcap_sim_stats st;
  if (gcap_context_backend(ctx) != GCAP_BACKEND_SIM || gcap_sim_get_stats(ctx, &st) != GCAP_SUCCESS) return;
  printf("simulator: %llu kernels, %llu barriers passed, %llu blocks on worker threads\n",
         (unsigned long long)st.kernels_executed, (unsigned long long)st.barriers_passed,
         (unsigned long long)st.blocks_parallel);
}

int main(void) {
  int ok = 0;
  gcap_context *ctx = NULL;
  gcap_module *mod = NULL;
  gcap_stream *stream = NULL;
  gcap_graph *graph = NULL;
  gcap_exec *exec = NULL;
  uint32_t *x = NULL, *sums = NULL, *dx = NULL, *dpartial = NULL, *dsums = NULL;

  gcap_status created = context_create(&ctx);
  if (created == GCAP_ERROR_NOT_SUPPORTED || created == GCAP_ERROR_NOT_INITIALIZED) {
    fprintf(stderr, "reduction: skipped: %s\n", gcap_last_error_message());
    return 77; /* the backend GCAP_BACKEND names cannot start here (Meson's "skipped") */
  }
  CHECK(created);
  printf("gcap reduction on the %s backend: %u values, blocks of %u threads summing %u each\n",
         gcap_backend_name(gcap_context_backend(ctx)), N, BLOCK, PER_BLOCK);

  const size_t params[] = {sizeof(const uint32_t *), sizeof(uint32_t *), sizeof(uint32_t)};
  const gcap_kernel_def def = {.name = "reduce", .sim_fn = reduce_sim, .num_params = 3, .param_sizes = params};
  const gcap_module_desc desc = {.image = reduction_ptx, .image_size = sizeof reduction_ptx, .kernels = &def,
                                 .num_kernels = 1};
  CHECK(gcap_module_load(ctx, &desc, &mod));
  gcap_kernel *reduce = NULL;
  CHECK(gcap_module_get_kernel(mod, "reduce", &reduce));

  const uint32_t first = blocks_for(N), second = blocks_for(first);
  CHECK(gcap_host_alloc(ctx, N * sizeof *x, (void **)&x));
  CHECK(gcap_host_alloc(ctx, second * sizeof *sums, (void **)&sums));
  CHECK(gcap_mem_alloc(ctx, N * sizeof *dx, (void **)&dx));
  CHECK(gcap_mem_alloc(ctx, first * sizeof *dpartial, (void **)&dpartial));
  CHECK(gcap_mem_alloc(ctx, second * sizeof *dsums, (void **)&dsums));
  uint64_t want = 0;
  for (uint32_t i = 0; i < N; i++) {
    x[i] = (i * 2654435761u) >> 22; /* 0 to 1023: the sum stays below 2^32 */
    want += x[i];
  }

  /* Upload, two reductions, download: captured once into a graph. */
  CHECK(gcap_stream_create(ctx, &stream));
  CHECK(gcap_stream_begin_capture(stream, GCAP_CAPTURE_MODE_GLOBAL));
  CHECK(gcap_memcpy_async(stream, dx, x, N * sizeof *x, GCAP_MEMCPY_HOST_TO_DEVICE));
  uint32_t n1 = N, n2 = first;
  void *args1[] = {&dx, &dpartial, &n1}, *args2[] = {&dpartial, &dsums, &n2};
  const uint32_t shared = BLOCK * sizeof(uint32_t);
  CHECK(gcap_launch_kernel(stream, reduce, GCAP_DIM3(first, 1, 1), GCAP_DIM3(BLOCK, 1, 1), shared, args1));
  CHECK(gcap_launch_kernel(stream, reduce, GCAP_DIM3(second, 1, 1), GCAP_DIM3(BLOCK, 1, 1), shared, args2));
  CHECK(gcap_memcpy_async(stream, sums, dsums, second * sizeof *sums, GCAP_MEMCPY_DEVICE_TO_HOST));
  CHECK(gcap_stream_end_capture(stream, &graph));
  CHECK(gcap_graph_instantiate(graph, 0, &exec));
  CHECK(gcap_exec_launch(exec, stream));
  CHECK(gcap_stream_synchronize(stream));

  uint64_t got = 0;
  for (uint32_t b = 0; b < second; b++) got += sums[b];
  printf("sum: %llu in %u + %u blocks, then %u partials on the host; CPU: %llu\n", (unsigned long long)got, first,
         second, second, (unsigned long long)want);
  print_counters(ctx);
  if (got != want) {
    fprintf(stderr, "reduction: the sum differs from the CPU's\n");
    goto done;
  }
  ok = 1;

done:
  /* Destroying the context frees whatever is left. */
  gcap_exec_destroy(exec);
  gcap_graph_destroy(graph);
  gcap_context_destroy(ctx);
  if (!ok) {
    fprintf(stderr, "reduction: FAILED\n");
    return 1;
  }
  printf("OK: the sum matches the CPU's\n");
  return 0;
}
