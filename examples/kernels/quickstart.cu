// The quickstart's kernels for the CUDA backend; saxpy_sim and scale_sim in quickstart.c are
// their CPU versions and must compute the same values.
#include <stdint.h>

extern "C" __global__ void saxpy(float a, const float *x, float *y, uint32_t n) {
  uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}

extern "C" __global__ void scale(float *y, float s, uint32_t n) {
  uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = s * y[i];
}
