// y = a * x + y with a grid-stride loop (fewer threads than elements). nvcc contracts the
// product and the sum into one fma.rn.f32, so the reference uses fmaf.

extern "C" __global__ void saxpy(int n, float a, const float *x, float *y) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) y[i] = a * x[i] + y[i];
}
