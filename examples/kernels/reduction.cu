// reduction.c's kernel for the CUDA backend; reduce_sim there is its CPU version and must compute
// the same sums. blockDim.x must be a power of two.
#include <stdint.h>

// out[b] = the sum of in[2 * blockDim.x * b ...] (2 * blockDim.x values, those below n), a tree in shared memory.
extern "C" __global__ void reduce(const uint32_t *in, uint32_t *out, uint32_t n) {
  extern __shared__ uint32_t partial[];
  uint32_t tid = threadIdx.x, i = blockIdx.x * blockDim.x * 2u + tid;
  uint32_t v = i < n ? in[i] : 0u;
  if (i + blockDim.x < n) v += in[i + blockDim.x];
  partial[tid] = v;
  __syncthreads();
  for (uint32_t s = blockDim.x / 2u; s > 0u; s /= 2u) {
    if (tid < s) partial[tid] += partial[tid + s];
    __syncthreads();
  }
  if (tid == 0u) out[blockIdx.x] = partial[0];
}
