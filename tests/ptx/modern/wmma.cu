// nvcc-archs: 80 90
// Tensor-core GEMMs through the CUDA C++ warp matrix API (nvcuda::wmma), as the programming
// guide and NVIDIA's samples write them: each warp computes 16 x 16 tiles of C from fragments
// loaded straight from global memory. f16 and bf16 (m16n16k16, f32 accumulators), tf32
// (m16n16k8, inputs rounded with __float_to_tf32) and s8 (m16n16k16, s32 accumulators).
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <mma.h>
using namespace nvcuda;

// C = A B + C0 (row-major, A M x K, B K x N; all multiples of the tile). Blocks of 4 warps
// cover 32 x 32 of C; warps loop over k. C0 is loaded as the accumulator's start.
template <typename T, typename Acc, int KT>
__device__ void wmma_gemm(Acc *c, const T *a, const T *b, const Acc *c0, int M, int N, int K) {
  int warp = threadIdx.x / 32;
  int row = blockIdx.y * 32 + (warp / 2) * 16, col = blockIdx.x * 32 + (warp % 2) * 16;
  if (row >= M || col >= N) return;
  wmma::fragment<wmma::matrix_a, 16, 16, KT, T, wmma::row_major> fa;
  wmma::fragment<wmma::matrix_b, 16, 16, KT, T, wmma::row_major> fb;
  wmma::fragment<wmma::accumulator, 16, 16, KT, Acc> fc;
  wmma::load_matrix_sync(fc, c0 + (size_t)row * N + col, N, wmma::mem_row_major);
  for (int k = 0; k < K; k += KT) {
    wmma::load_matrix_sync(fa, a + (size_t)row * K + k, K);
    wmma::load_matrix_sync(fb, b + (size_t)k * N + col, N);
    wmma::mma_sync(fc, fa, fb, fc);
  }
  wmma::store_matrix_sync(c + (size_t)row * N + col, fc, N, wmma::mem_row_major);
}

extern "C" __global__ void wmma_gemm_f16(float *c, const __half *a, const __half *b, const float *c0, int M, int N,
                                         int K) {
  wmma_gemm<__half, float, 16>(c, a, b, c0, M, N, K);
}

extern "C" __global__ void wmma_gemm_bf16(float *c, const __nv_bfloat16 *a, const __nv_bfloat16 *b, const float *c0,
                                          int M, int N, int K) {
  wmma_gemm<__nv_bfloat16, float, 16>(c, a, b, c0, M, N, K);
}

extern "C" __global__ void wmma_gemm_s8(int *c, const signed char *a, const signed char *b, const int *c0, int M,
                                        int N, int K) {
  wmma_gemm<signed char, int, 16>(c, a, b, c0, M, N, K);
}

// tf32: the fragments are loaded from f32 matrices and each element rounded to tf32 first.
// B is column-major here (K x N with ldb = K), the other layout of the API.
extern "C" __global__ void wmma_gemm_tf32(float *c, const float *a, const float *b, int M, int N, int K) {
  int warp = threadIdx.x / 32;
  int row = blockIdx.y * 32 + (warp / 2) * 16, col = blockIdx.x * 32 + (warp % 2) * 16;
  if (row >= M || col >= N) return;
  wmma::fragment<wmma::matrix_a, 16, 16, 8, wmma::precision::tf32, wmma::row_major> fa;
  wmma::fragment<wmma::matrix_b, 16, 16, 8, wmma::precision::tf32, wmma::col_major> fb;
  wmma::fragment<wmma::accumulator, 16, 16, 8, float> fc;
  wmma::fill_fragment(fc, 0.0f);
  for (int k = 0; k < K; k += 8) {
    wmma::load_matrix_sync(fa, a + (size_t)row * K + k, K);
    wmma::load_matrix_sync(fb, b + (size_t)col * K + k, K);
    for (int i = 0; i < fa.num_elements; i++) fa.x[i] = wmma::__float_to_tf32(fa.x[i]);
    for (int i = 0; i < fb.num_elements; i++) fb.x[i] = wmma::__float_to_tf32(fb.x[i]);
    wmma::mma_sync(fc, fa, fb, fc);
  }
  wmma::store_matrix_sync(c + (size_t)row * N + col, fc, N, wmma::mem_row_major);
}
