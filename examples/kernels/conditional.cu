// conditional.c's kernels for the CUDA backend (jacobi_sim, residual_sim and check_sim there).
// check calls cudaGraphSetConditional, a device-runtime function: the CUDA backend links the PTX
// with the toolkit's libcudadevrt.a when it loads it.
#include <cuda_runtime.h>
#include <stdint.h>

extern "C" __global__ void jacobi(const float *x_old, float *x_new, const float *rhs, uint32_t n) {
  uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  if (i == 0 || i == n - 1)
    x_new[i] = x_old[i];
  else
    x_new[i] = 0.5f * (x_old[i - 1] + x_old[i + 1] + rhs[i]);
}

// One thread adds in index order, as the CPU version does, so every run rounds alike.
extern "C" __global__ void residual(const float *x_old, const float *x_new, double *sum, uint32_t n) {
  if (blockIdx.x != 0 || threadIdx.x != 0) return;
  double s = 0.0;
#pragma unroll 1 // one addition per element, in order, and a short PTX text
  for (uint32_t i = 0; i < n; i++) s += fabs((double)x_new[i] - (double)x_old[i]);
  *sum = s;
}

// Two more sweeps done; the loop goes on while the residual is above tol and the budget lasts.
extern "C" __global__ void check(const double *sum, double tol, uint32_t *sweeps, uint32_t max_sweeps,
                                 cudaGraphConditionalHandle again) {
  if (blockIdx.x != 0 || threadIdx.x != 0) return;
  *sweeps += 2;
  cudaGraphSetConditional(again, *sum > tol && *sweeps < max_sweeps);
}
