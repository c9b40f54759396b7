// nvcc-arch: compute_80
// The tensor-core and asynchronous-copy kernels bench_sim runs from their PTX (compute_80).
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <cuda_pipeline.h>
#include <mma.h>
#include <stdint.h>

using namespace nvcuda;

// c = a * b, n x n (n a multiple of 32): a row-major f16, b column-major f16, c row-major f32.
// Blocks of 4 warps, each warp one 16x16 tile of a 32x32 block tile, through wmma m16n16k16.
extern "C" __global__ void wmma_gemm(const __half *a, const __half *b, float *c, uint32_t n) {
  uint32_t warp = threadIdx.x / 32;
  uint32_t row = blockIdx.y * 32 + (warp / 2) * 16, col = blockIdx.x * 32 + (warp % 2) * 16;
  wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> fa;
  wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::col_major> fb;
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
  wmma::fill_fragment(acc, 0.0f);
  for (uint32_t k = 0; k < n; k += 16) {
    wmma::load_matrix_sync(fa, a + row * n + k, n);
    wmma::load_matrix_sync(fb, b + col * n + k, n);
    wmma::mma_sync(acc, fa, fb, acc);
  }
  wmma::store_matrix_sync(c + row * n + col, acc, n, wmma::mem_row_major);
}

// The same product through ldmatrix + mma.sync.m16n8k16 in bf16: each warp a 16x16 tile (two
// m16n8 halves), the block's 32x32 tile of a and b staged in shared memory per 16-wide k step.
extern "C" __global__ void mma_gemm(const __nv_bfloat16 *a, const __nv_bfloat16 *b, float *c, uint32_t n) {
  __shared__ __align__(16) __nv_bfloat16 sa[32][16 + 8], sb[32][16 + 8];  // b stored as [col][k]
  uint32_t warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  uint32_t wr = (warp / 2) * 16, wc = (warp % 2) * 16;
  float acc[2][4] = {};
  for (uint32_t k = 0; k < n; k += 16) {
    for (uint32_t i = threadIdx.x; i < 32 * 16; i += blockDim.x) {
      uint32_t r = i / 16, kk = i % 16;
      sa[r][kk] = a[(blockIdx.y * 32 + r) * n + k + kk];
      sb[r][kk] = b[(blockIdx.x * 32 + r) * n + k + kk];
    }
    __syncthreads();
    uint32_t fa[4], fb[4];
    uint32_t pa = (uint32_t)__cvta_generic_to_shared(&sa[wr + lane % 16][(lane / 16) * 8]);
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
                 : "=r"(fa[0]), "=r"(fa[1]), "=r"(fa[2]), "=r"(fa[3]) : "r"(pa));
    uint32_t pb = (uint32_t)__cvta_generic_to_shared(&sb[wc + (lane / 16) * 8 + lane % 8][((lane / 8) % 2) * 8]);
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
                 : "=r"(fb[0]), "=r"(fb[1]), "=r"(fb[2]), "=r"(fb[3]) : "r"(pb));
    for (int h = 0; h < 2; h++)
      asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                   "{%0,%1,%2,%3};"
                   : "+f"(acc[h][0]), "+f"(acc[h][1]), "+f"(acc[h][2]), "+f"(acc[h][3])
                   : "r"(fa[0]), "r"(fa[1]), "r"(fa[2]), "r"(fa[3]), "r"(fb[2 * h]), "r"(fb[2 * h + 1]));
    __syncthreads();
  }
  for (int h = 0; h < 2; h++) {
    uint32_t r = blockIdx.y * 32 + wr + lane / 4, cc = blockIdx.x * 32 + wc + h * 8 + (lane % 4) * 2;
    c[r * n + cc] = acc[h][0];
    c[r * n + cc + 1] = acc[h][1];
    c[(r + 8) * n + cc] = acc[h][2];
    c[(r + 8) * n + cc + 1] = acc[h][3];
  }
}

#define TILE 16
// bench's 16x16 tiled f32 matmul with its tiles fetched by cp.async, double-buffered.
extern "C" __global__ void cp_async_matmul(const float *a, const float *b, float *c, uint32_t n) {
  __shared__ float ta[2][TILE][TILE], tb[2][TILE][TILE];
  uint32_t ty = threadIdx.y, tx = threadIdx.x;
  uint32_t row = blockIdx.y * TILE + ty, col = blockIdx.x * TILE + tx;
  float sum = 0.0f;
  __pipeline_memcpy_async(&ta[0][ty][tx], &a[row * n + tx], 4);
  __pipeline_memcpy_async(&tb[0][ty][tx], &b[ty * n + col], 4);
  __pipeline_commit();
  for (uint32_t k = 0, s = 0; k < n; k += TILE, s ^= 1) {
    if (k + TILE < n) {
      __pipeline_memcpy_async(&ta[s ^ 1][ty][tx], &a[row * n + k + TILE + tx], 4);
      __pipeline_memcpy_async(&tb[s ^ 1][ty][tx], &b[(k + TILE + ty) * n + col], 4);
    }
    __pipeline_commit();
    __pipeline_wait_prior(1);
    __syncthreads();
    for (uint32_t j = 0; j < TILE; j++) sum = fmaf(ta[s][ty][j], tb[s][j][tx], sum);
    __syncthreads();
  }
  c[row * n + col] = sum;
}
