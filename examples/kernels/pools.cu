// pools.c's kernels for the CUDA backend (square_sim and blend_sim there).
#include <stdint.h>

extern "C" __global__ void square(float *v, uint32_t n) {
  uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) v[i] = v[i] * v[i] + 1.0f;
}

extern "C" __global__ void blend(const float *mid, float *out, uint32_t n) {
  uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = 0.5f * mid[n - 1u - i] - 0.25f * mid[i];
}
