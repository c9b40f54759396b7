// The second unit of rdc_templates: the same templates as rdc_templates_a.cu, instantiated here
// too, and launched from this unit's host code.
#include <cuda_runtime.h>

template <typename T> __device__ __noinline__ T combine(T a, T b) { return a * 2 + b; }
__device__ __noinline__ inline int bump(int x) { return x + 5; }
template <typename T> __global__ void fill(T *p, T v, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) p[i] = combine(v, T(i));
}

void b_fill_int(int *p, int v, int n, cudaStream_t s) { fill<int><<<(n + 63) / 64, 64, 0, s>>>(p, v, n); }
void b_fill_double(double *p, double v, int n, cudaStream_t s) { fill<double><<<(n + 63) / 64, 64, 0, s>>>(p, v, n); }
cudaError_t b_kernel_attributes(cudaFuncAttributes *a) { return cudaFuncGetAttributes(a, fill<int>); }
