// capture_guard.c's kernels for the CUDA backend (scale_sim, square_sim, accumulate_sim there).
#include <stdint.h>

extern "C" __global__ void scale(int32_t *a, int32_t k, uint32_t n) {
  uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) a[i] *= k;
}

extern "C" __global__ void square(const int32_t *a, int32_t *out, uint32_t n) {
  uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = a[i] * a[i];
}

extern "C" __global__ void accumulate(int32_t *b, const int32_t *a, const int32_t *c, uint32_t n) {
  uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) b[i] += a[i] + c[i];
}
