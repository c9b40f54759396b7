// The kernels bench_sim runs from their PTX, each beside a CPU twin in bench_sim.c.
#include <stdint.h>

// y[i] = a * x[i] + y[i]
extern "C" __global__ void saxpy(float a, const float *x, float *y, uint32_t n) {
  uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}

// out[b] = the sum of block b's slice of in: a tree in shared memory (blockDim.x a power of two, at most 256).
extern "C" __global__ void reduce_shared(const uint32_t *in, uint32_t *out, uint32_t n) {
  __shared__ uint32_t part[256];
  uint32_t t = threadIdx.x, i = blockIdx.x * blockDim.x + t;
  part[t] = i < n ? in[i] : 0u;
  __syncthreads();
  for (uint32_t s = blockDim.x / 2; s > 0; s >>= 1) {
    if (t < s) part[t] += part[t + s];
    __syncthreads();
  }
  if (t == 0) out[blockIdx.x] = part[0];
}

// The same sums with warp shuffles, then one shared slot per warp.
extern "C" __global__ void reduce_shuffle(const uint32_t *in, uint32_t *out, uint32_t n) {
  __shared__ uint32_t warps[32];
  uint32_t t = threadIdx.x, i = blockIdx.x * blockDim.x + t;
  uint32_t v = i < n ? in[i] : 0u;
  for (int d = 16; d > 0; d >>= 1) v += __shfl_down_sync(0xffffffffu, v, d);
  if ((t & 31) == 0) warps[t / 32] = v;
  __syncthreads();
  if (t < 32) {
    v = t < blockDim.x / 32 ? warps[t] : 0u;
    for (int d = 16; d > 0; d >>= 1) v += __shfl_down_sync(0xffffffffu, v, d);
    if (t == 0) out[blockIdx.x] = v;
  }
}

#define TILE 16
// c = a * b for n x n matrices (n a multiple of TILE), 16x16 tiles in shared memory.
extern "C" __global__ void matmul(const float *a, const float *b, float *c, uint32_t n) {
  __shared__ float ta[TILE][TILE], tb[TILE][TILE];
  uint32_t row = blockIdx.y * TILE + threadIdx.y, col = blockIdx.x * TILE + threadIdx.x;
  float sum = 0.0f;
  for (uint32_t k = 0; k < n; k += TILE) {
    ta[threadIdx.y][threadIdx.x] = a[row * n + k + threadIdx.x];
    tb[threadIdx.y][threadIdx.x] = b[(k + threadIdx.y) * n + col];
    __syncthreads();
    for (uint32_t j = 0; j < TILE; j++) sum = fmaf(ta[threadIdx.y][j], tb[j][threadIdx.x], sum);
    __syncthreads();
  }
  c[row * n + col] = sum;
}
