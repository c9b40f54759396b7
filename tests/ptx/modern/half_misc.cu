// nvcc-archs: 80 90
// Half-precision arithmetic (half2 __hfma2, __hmul2), atomics on packed halves and bfloat16
// pairs, an int8 quantised matrix-vector product with __dp4a, and the tf32 rounding of the
// CUDA C++ wmma API.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <mma.h>

// Residual scaling in half2: out = x * alpha + residual with one rounding (__hfma2), and the
// scaled value alone (__hmul2), on pairs of columns.
extern "C" __global__ void residual_scale_f16(__half *out, __half *scaled, const __half *x, const __half *residual,
                                              __half alpha, int n2) {
  int p = blockIdx.x * blockDim.x + threadIdx.x;
  if (p >= n2) return;
  __half2 a = __half2half2(alpha), xv = ((const __half2 *)x)[p];
  ((__half2 *)out)[p] = __hfma2(xv, a, ((const __half2 *)residual)[p]);
  ((__half2 *)scaled)[p] = __hmul2(xv, a);
}

// GELU (tanh form) forward in half2: loads and stores of packed halves, arithmetic in f32.
extern "C" __global__ void gelu_f16_fwd(__half *out, const __half *inp, int n2) {
  int p = blockIdx.x * blockDim.x + threadIdx.x;
  if (p >= n2) return;
  float2 x = __half22float2(((const __half2 *)inp)[p]);
  float y0 = 0.5f * x.x * (1.0f + tanhf(0.7978845608028654f * (x.x + 0.044715f * x.x * x.x * x.x)));
  float y1 = 0.5f * x.y * (1.0f + tanhf(0.7978845608028654f * (x.y + 0.044715f * x.y * x.y * x.y)));
  ((__half2 *)out)[p] = __floats2half2_rn(y0, y1);
}

// Per-bucket sums of half2 pairs by atomicAdd on __half2 (gradient accumulation of an
// embedding table): values and sums are exact in f16, so the order does not matter.
extern "C" __global__ void atomic_half2_sum(__half2 *buckets, const __half2 *vals, const int *keys, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) atomicAdd(&buckets[keys[i]], vals[i]);
}

// The same with __nv_bfloat162 pairs.
extern "C" __global__ void atomic_bf162_sum(__nv_bfloat162 *buckets, const __nv_bfloat162 *vals, const int *keys,
                                           int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) atomicAdd(&buckets[keys[i]], vals[i]);
}

// Quantised GEMV: int8 rows and vector packed four to an int, __dp4a, one warp per row with a
// shuffle reduction; y = acc exactly and yf = acc * row_scale * x_scale.
extern "C" __global__ void dp4a_gemv_s8(int *y, float *yf, const int *a, const int *x, const float *row_scale,
                                       float x_scale, int rows, int cols4) {
  int lane = threadIdx.x & 31;
  int r = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
  if (r >= rows) return;
  int acc = 0;
  for (int c = lane; c < cols4; c += 32) acc = __dp4a(a[(size_t)r * cols4 + c], x[c], acc);
  for (int d = 16; d > 0; d >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, d);
  if (lane == 0) {
    y[r] = acc;
    yf[r] = (float)acc * row_scale[r] * x_scale;
  }
}

// Rounding of f32 values to tf32 (cvt.rna.tf32.f32), as before a tf32 wmma product.
extern "C" __global__ void tf32_round(float *out, const float *in, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = nvcuda::wmma::__float_to_tf32(in[i]);
}
