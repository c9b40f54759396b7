// fork_join.c's kernels for the CUDA backend (damp_sim and wave_sim there). Built with
// -fmad=false so the GPU rounds each product and sum separately, as the CPU reference does.
#include <stdint.h>

extern "C" __global__ void damp(const float *x, float *y, uint32_t n) {
  uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = 0.5f * y[i] + x[i];
}

extern "C" __global__ void wave(const float *x, float *y, uint32_t n) {
  uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = 0.25f * y[i] + x[i] * x[i] - 1.0f;
}
