// nvcc-archs: 80 90
// Asynchronous copies into shared memory, as GEMM tutorials and the CUDA C++ programming guide
// write them: a tiled f32 GEMM double-buffered with the pipeline primitives (cp.async,
// commit_group, wait_group, zero-fill past the matrix's edge), the same GEMM with
// cuda::memcpy_async completing on a cuda::barrier per stage (mbarrier), and producer and
// consumer warps handing tiles over through cuda::barrier pairs. One kernel holds a planted bug
// (a tile read before its copies are waited for), which the race check must find.
#include <cuda/barrier>
#include <cuda_pipeline.h>

#define TILE 16

// A barrier in shared memory is initialised by init(), not by a constructor.
#pragma nv_diag_suppress static_var_with_dynamic_init

// C = A B (M x K times K x N, row-major), 16 x 16 tiles, one output a thread. Stage s + 1 is
// copied while stage s is multiplied; elements past an edge are zero-filled by the copy
// (src-size 0) from a valid address.
extern "C" __global__ void gemm_f32_pipeline(float *c, const float *a, const float *b, int M, int N, int K) {
  __shared__ float as[2][TILE][TILE], bs[2][TILE][TILE];
  int tx = threadIdx.x, ty = threadIdx.y;
  int row = blockIdx.y * TILE + ty, col = blockIdx.x * TILE + tx;
  int tiles = (K + TILE - 1) / TILE;
  auto load = [&](int t, int stage) {
    int ka = t * TILE + tx, kb = t * TILE + ty;
    bool ina = row < M && ka < K, inb = kb < K && col < N;
    __pipeline_memcpy_async(&as[stage][ty][tx], ina ? &a[(size_t)row * K + ka] : a, sizeof(float),
                            ina ? 0 : sizeof(float));
    __pipeline_memcpy_async(&bs[stage][ty][tx], inb ? &b[(size_t)kb * N + col] : b, sizeof(float),
                            inb ? 0 : sizeof(float));
    __pipeline_commit();
  };
  float acc = 0.0f;
  load(0, 0);
  for (int t = 0; t < tiles; t++) {
    if (t + 1 < tiles) {
      load(t + 1, (t + 1) & 1);
      __pipeline_wait_prior(1);
    } else {
      __pipeline_wait_prior(0);
    }
    __syncthreads();
    for (int k = 0; k < TILE; k++) acc += as[t & 1][ty][k] * bs[t & 1][k][tx];
    __syncthreads();
  }
  if (row < M && col < N) c[(size_t)row * N + col] = acc;
}

// Planted bug: the pipeline GEMM waiting for all groups but the newest one at every step, also
// at the last, whose tile it then reads before its copies have landed.
extern "C" __global__ void gemm_f32_nowait(float *c, const float *a, const float *b, int M, int N, int K) {
  __shared__ float as[2][TILE][TILE], bs[2][TILE][TILE];
  int tx = threadIdx.x, ty = threadIdx.y;
  int row = blockIdx.y * TILE + ty, col = blockIdx.x * TILE + tx;
  int tiles = (K + TILE - 1) / TILE;
  auto load = [&](int t, int stage) {
    int ka = t * TILE + tx, kb = t * TILE + ty;
    bool ina = row < M && ka < K, inb = kb < K && col < N;
    __pipeline_memcpy_async(&as[stage][ty][tx], ina ? &a[(size_t)row * K + ka] : a, sizeof(float),
                            ina ? 0 : sizeof(float));
    __pipeline_memcpy_async(&bs[stage][ty][tx], inb ? &b[(size_t)kb * N + col] : b, sizeof(float),
                            inb ? 0 : sizeof(float));
    __pipeline_commit();
  };
  float acc = 0.0f;
  load(0, 0);
  for (int t = 0; t < tiles; t++) {
    if (t + 1 < tiles) load(t + 1, (t + 1) & 1);
    __pipeline_wait_prior(1);
    __syncthreads();
    for (int k = 0; k < TILE; k++) acc += as[t & 1][ty][k] * bs[t & 1][k][tx]; // BUG
    __syncthreads();
  }
  if (row < M && col < N) c[(size_t)row * N + col] = acc;
}

// The same product with cuda::memcpy_async on a block-scoped cuda::barrier for each of the two
// stages: each thread copies its two elements and arrives; arrive_and_wait completes the stage.
// M, N and K are multiples of 16.
extern "C" __global__ void gemm_f32_barrier(float *c, const float *a, const float *b, int M, int N, int K) {
  using barrier = cuda::barrier<cuda::thread_scope_block>;
  __shared__ float as[2][TILE][TILE], bs[2][TILE][TILE];
  __shared__ barrier bar[2];
  int tx = threadIdx.x, ty = threadIdx.y;
  if (tx == 0 && ty == 0) {
    init(&bar[0], blockDim.x * blockDim.y);
    init(&bar[1], blockDim.x * blockDim.y);
  }
  __syncthreads();
  int row = blockIdx.y * TILE + ty, col = blockIdx.x * TILE + tx;
  int tiles = K / TILE;
  auto load = [&](int t, int stage) {
    cuda::memcpy_async(&as[stage][ty][tx], &a[(size_t)row * K + t * TILE + tx], cuda::aligned_size_t<4>(4),
                       bar[stage]);
    cuda::memcpy_async(&bs[stage][ty][tx], &b[(size_t)(t * TILE + ty) * N + col], cuda::aligned_size_t<4>(4),
                       bar[stage]);
  };
  float acc = 0.0f;
  load(0, 0);
  for (int t = 0; t < tiles; t++) {
    if (t + 1 < tiles) load(t + 1, (t + 1) & 1);
    bar[t & 1].arrive_and_wait();
    for (int k = 0; k < TILE; k++) acc += as[t & 1][ty][k] * bs[t & 1][k][tx];
    __syncthreads(); /* stage t & 1 is refilled next round */
  }
  c[(size_t)row * N + col] = acc;
}

// Warp specialisation: warp 0 produces chunks of 64 values (x * 3 + round) into a two-slot
// shared ring, warps 1 and 2 consume them (each thread one value) and sum what they saw. Slot
// hand-over through cuda::barrier pairs: `filled` (the producer's writes are visible) and
// `ready` (the consumers are done with the slot); every thread of the block arrives on both.
extern "C" __global__ void mbarrier_prodcons(int *out, const int *in, int rounds) {
  using barrier = cuda::barrier<cuda::thread_scope_block>;
  __shared__ int ring[2][64];
  __shared__ barrier filled[2], ready[2];
  if (threadIdx.x == 0)
    for (int s = 0; s < 2; s++) {
      init(&filled[s], blockDim.x);
      init(&ready[s], blockDim.x);
    }
  __syncthreads();
  const int *chunk = in + (size_t)blockIdx.x * rounds * 64;
  int warp = threadIdx.x / 32, lane = threadIdx.x & 31;
  int sum = 0;
  for (int r = 0; r < rounds; r++) {
    int s = r & 1;
    if (warp == 0) {
      if (r >= 2) ready[s].arrive_and_wait(); /* the consumers released the slot */
      ring[s][lane] = chunk[r * 64 + lane] * 3 + r;
      ring[s][lane + 32] = chunk[r * 64 + lane + 32] * 3 + r;
      (void)filled[s].arrive();
    } else {
      filled[s].arrive_and_wait();
      sum += ring[s][threadIdx.x - 32];
      if (r + 2 < rounds) (void)ready[s].arrive();
    }
  }
  if (warp != 0) out[blockIdx.x * 64 + threadIdx.x - 32] = sum;
}
