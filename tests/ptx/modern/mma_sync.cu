// nvcc-archs: 80 90
// Tensor cores through inline PTX, as the CUTLASS-style GEMM tutorials and flash-attention
// write-ups use them: tiles staged in shared memory, fragments loaded with ldmatrix (.trans
// for a row-major B), products by mma.sync.aligned (m16n8k16 f16 and bf16, m16n8k32 s8,
// m16n8k8 tf32).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

__device__ unsigned smem(const void *p) { return (unsigned)__cvta_generic_to_shared(p); }

__device__ void ldsm_x4(unsigned r[4], const void *p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem(p)));
}

__device__ void ldsm_x4_trans(unsigned r[4], const void *p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem(p)));
}

// d += a b for one m16n8k16 tile: a four registers of f16x2 (bf16x2), b two.
template <bool BF16> __device__ void mma16816(float d[4], const unsigned a[4], unsigned b0, unsigned b1) {
  if (BF16)
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
                 "{%8, %9}, {%0, %1, %2, %3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  else
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
                 "{%8, %9}, {%0, %1, %2, %3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// C (f32) = A B, A M x K and B K x N row-major in 16-bit floats T; blocks of 4 warps compute
// 32 x 32 tiles, each warp 16 x 16 (two m16n8 products a k-step). N and K are multiples of 32
// and 16; rows past M are loaded as zeros and not stored.
template <typename T, bool BF16> __device__ void mma_gemm(float *c, const T *a, const T *b, int M, int N, int K) {
  __shared__ __align__(16) T as[32][24]; /* rows padded to 48 bytes: 16-byte aligned, fewer conflicts */
  __shared__ __align__(16) T bs[16][40];
  int tid = threadIdx.x, warp = tid / 32, lane = tid & 31;
  int wm = warp / 2, wn = warp % 2;
  int row0 = blockIdx.y * 32, col0 = blockIdx.x * 32;
  float acc[2][4] = {};
  for (int k0 = 0; k0 < K; k0 += 16) {
    for (int e = tid; e < 32 * 16; e += blockDim.x) {
      int r = e / 16, k = e % 16;
      as[r][k] = row0 + r < M ? a[(size_t)(row0 + r) * K + k0 + k] : T(0.0f);
      int kb = e / 32, n = e % 32;
      bs[kb][n] = b[(size_t)(k0 + kb) * N + col0 + n];
    }
    __syncthreads();
    unsigned af[4], bf[4];
    ldsm_x4(af, &as[wm * 16 + lane % 16][(lane / 16) * 8]);
    ldsm_x4_trans(bf, &bs[lane % 16][wn * 16 + (lane / 16) * 8]);
    mma16816<BF16>(acc[0], af, bf[0], bf[1]);
    mma16816<BF16>(acc[1], af, bf[2], bf[3]);
    __syncthreads();
  }
  int g = lane / 4, t = lane % 4;
  for (int nb = 0; nb < 2; nb++)
    for (int h = 0; h < 2; h++) {
      int r = row0 + wm * 16 + g + 8 * h, col = col0 + wn * 16 + nb * 8 + 2 * t;
      if (r < M) {
        c[(size_t)r * N + col] = acc[nb][2 * h];
        c[(size_t)r * N + col + 1] = acc[nb][2 * h + 1];
      }
    }
}

extern "C" __global__ void mma_gemm_f16(float *c, const __half *a, const __half *b, int M, int N, int K) {
  mma_gemm<__half, false>(c, a, b, M, N, K);
}

extern "C" __global__ void mma_gemm_bf16(float *c, const __nv_bfloat16 *a, const __nv_bfloat16 *b, int M, int N,
                                         int K) {
  mma_gemm<__nv_bfloat16, true>(c, a, b, M, N, K);
}

// C (s32) = A B for int8 A (M x K, row-major) and B given as B^T (N x K, row-major: the "TN"
// layout of int8 GEMMs), by mma.sync.m16n8k32.s32.s8.s8.s32 on ldmatrix fragments (8-bit
// elements go through ldmatrix as pairs of bytes; the same layout without .trans serves B^T).
// Blocks of 4 warps compute 32 x 32 tiles; N and K multiples of 32, rows past M are zeros.
extern "C" __global__ void mma_gemm_s8(int *c, const signed char *a, const signed char *bt, int M, int N, int K) {
  __shared__ __align__(16) signed char as[32][48], bs[32][48]; /* 32 bytes of k a row, padded */
  int tid = threadIdx.x, warp = tid / 32, lane = tid & 31;
  int wm = warp / 2, wn = warp % 2;
  int row0 = blockIdx.y * 32, col0 = blockIdx.x * 32;
  int acc[2][4] = {};
  for (int k0 = 0; k0 < K; k0 += 32) {
    for (int e = tid; e < 32 * 8; e += blockDim.x) { /* a word (4 bytes of k) each */
      int r = e / 8, w = e % 8;
      *(int *)&as[r][4 * w] = row0 + r < M ? *(const int *)&a[(size_t)(row0 + r) * K + k0 + 4 * w] : 0;
      *(int *)&bs[r][4 * w] = *(const int *)&bt[(size_t)(col0 + r) * K + k0 + 4 * w];
    }
    __syncthreads();
    unsigned af[4], bf[4];
    ldsm_x4(af, &as[wm * 16 + lane % 16][(lane / 16) * 16]);
    ldsm_x4(bf, &bs[wn * 16 + (lane / 16) * 8 + lane % 8][((lane / 8) % 2) * 16]);
    for (int nb = 0; nb < 2; nb++)
      asm volatile("mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
                   "{%8, %9}, {%0, %1, %2, %3};\n"
                   : "+r"(acc[nb][0]), "+r"(acc[nb][1]), "+r"(acc[nb][2]), "+r"(acc[nb][3])
                   : "r"(af[0]), "r"(af[1]), "r"(af[2]), "r"(af[3]), "r"(bf[2 * nb]), "r"(bf[2 * nb + 1]));
    __syncthreads();
  }
  int g = lane / 4, t = lane % 4;
  for (int nb = 0; nb < 2; nb++)
    for (int h = 0; h < 2; h++) {
      int r = row0 + wm * 16 + g + 8 * h, col = col0 + wn * 16 + nb * 8 + 2 * t;
      if (r < M) {
        c[(size_t)r * N + col] = acc[nb][2 * h];
        c[(size_t)r * N + col + 1] = acc[nb][2 * h + 1];
      }
    }
}

__device__ unsigned to_tf32(float x) {
  unsigned r;
  asm("cvt.rna.tf32.f32 %0, %1;\n" : "=r"(r) : "f"(x));
  return r;
}

// C = A B in tf32 (A M x K, B K x N, row-major f32), fragments gathered straight from global
// memory in the m16n8k8 layout and rounded by cvt.rna.tf32.f32; mma.sync.m16n8k8 with f32
// accumulators. Blocks of 4 warps compute 32 x 32 tiles; M, N multiples of 32, K of 8.
extern "C" __global__ void mma_gemm_tf32(float *c, const float *a, const float *b, int M, int N, int K) {
  int warp = threadIdx.x / 32, lane = threadIdx.x & 31, g = lane / 4, t = lane % 4;
  int row = blockIdx.y * 32 + (warp / 2) * 16, col = blockIdx.x * 32 + (warp % 2) * 16;
  float acc[2][4] = {};
  for (int k = 0; k < K; k += 8) {
    unsigned af[4];
    for (int i = 0; i < 4; i++) af[i] = to_tf32(a[(size_t)(row + g + 8 * (i & 1)) * K + k + t + 4 * (i >> 1)]);
    for (int nb = 0; nb < 2; nb++) {
      unsigned b0 = to_tf32(b[(size_t)(k + t) * N + col + nb * 8 + g]);
      unsigned b1 = to_tf32(b[(size_t)(k + t + 4) * N + col + nb * 8 + g]);
      asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
                   "{%8, %9}, {%0, %1, %2, %3};\n"
                   : "+f"(acc[nb][0]), "+f"(acc[nb][1]), "+f"(acc[nb][2]), "+f"(acc[nb][3])
                   : "r"(af[0]), "r"(af[1]), "r"(af[2]), "r"(af[3]), "r"(b0), "r"(b1));
    }
  }
  for (int nb = 0; nb < 2; nb++)
    for (int h = 0; h < 2; h++) {
      size_t at = (size_t)(row + g + 8 * h) * N + col + nb * 8 + 2 * t;
      c[at] = acc[nb][2 * h];
      c[at + 1] = acc[nb][2 * h + 1];
    }
}

__device__ unsigned pack_half2(float lo, float hi) {
  __half2 h = __floats2half2_rn(lo, hi);
  return *(unsigned *)&h;
}

// Causal attention forward, flash-attention style: Q, K, V (heads x T x 64, f16), O (f32).
// A block of 2 warps takes 32 queries of one head, each warp 16; K and V tiles of 16 keys go
// through shared memory. S = Q K^T by mma.sync, scaled, masked; an online softmax keeps each
// row's running maximum and sum; P (rounded to f16) times V by mma.sync, reusing S's
// accumulator layout as the A fragment. T is a multiple of 32.
extern "C" __global__ void flash_attn_fwd(float *out, const __half *q, const __half *k, const __half *v, int T,
                                          float scale) {
  __shared__ __align__(16) __half qs[32][72], ks[16][72], vs[16][72];
  int tid = threadIdx.x, warp = tid / 32, lane = tid & 31, g = lane / 4, t = lane % 4;
  int head = blockIdx.y, q0 = blockIdx.x * 32;
  const __half *qh = q + (size_t)head * T * 64, *kh = k + (size_t)head * T * 64, *vh = v + (size_t)head * T * 64;
  for (int e = tid; e < 32 * 32; e += blockDim.x) {
    int r = e / 32, c = 2 * (e % 32);
    *(__half2 *)&qs[r][c] = *(const __half2 *)&qh[(size_t)(q0 + r) * 64 + c];
  }
  __syncthreads();
  unsigned qa[4][4];
  for (int kk = 0; kk < 4; kk++) ldsm_x4(qa[kk], &qs[warp * 16 + lane % 16][kk * 16 + (lane / 16) * 8]);
  float o[8][4] = {}, m[2] = {-INFINITY, -INFINITY}, l[2] = {0.0f, 0.0f};
  int rowq[2] = {q0 + warp * 16 + g, q0 + warp * 16 + g + 8};
  int tiles = (q0 + 31) / 16 + 1;
  for (int kt = 0; kt < tiles; kt++) {
    __syncthreads(); /* the previous tile is consumed */
    for (int e = tid; e < 16 * 32; e += blockDim.x) {
      int r = e / 32, c = 2 * (e % 32);
      *(__half2 *)&ks[r][c] = *(const __half2 *)&kh[(size_t)(kt * 16 + r) * 64 + c];
      *(__half2 *)&vs[r][c] = *(const __half2 *)&vh[(size_t)(kt * 16 + r) * 64 + c];
    }
    __syncthreads();
    float s[2][4] = {};
    for (int kk = 0; kk < 4; kk++) {
      unsigned kb[4];
      ldsm_x4(kb, &ks[(lane / 16) * 8 + lane % 8][kk * 16 + ((lane / 8) % 2) * 8]);
      mma16816<false>(s[0], qa[kk], kb[0], kb[1]);
      mma16816<false>(s[1], qa[kk], kb[2], kb[3]);
    }
    float mx[2] = {-INFINITY, -INFINITY};
    for (int nb = 0; nb < 2; nb++)
      for (int j = 0; j < 4; j++) {
        int key = kt * 16 + nb * 8 + 2 * t + (j & 1);
        s[nb][j] = key <= rowq[j / 2] ? s[nb][j] * scale : -INFINITY;
        mx[j / 2] = fmaxf(mx[j / 2], s[nb][j]);
      }
    float corr[2], sum[2] = {0.0f, 0.0f};
    for (int h = 0; h < 2; h++) {
      mx[h] = fmaxf(mx[h], __shfl_xor_sync(0xffffffffu, mx[h], 1));
      mx[h] = fmaxf(mx[h], __shfl_xor_sync(0xffffffffu, mx[h], 2));
      float mnew = fmaxf(m[h], mx[h]);
      corr[h] = __expf(m[h] - mnew);
      m[h] = mnew;
    }
    for (int nb = 0; nb < 2; nb++)
      for (int j = 0; j < 4; j++) {
        s[nb][j] = __expf(s[nb][j] - m[j / 2]);
        sum[j / 2] += s[nb][j];
      }
    for (int h = 0; h < 2; h++) l[h] = l[h] * corr[h] + sum[h];
    for (int nb = 0; nb < 8; nb++)
      for (int j = 0; j < 4; j++) o[nb][j] *= corr[j / 2];
    unsigned pa[4] = {pack_half2(s[0][0], s[0][1]), pack_half2(s[0][2], s[0][3]), pack_half2(s[1][0], s[1][1]),
                      pack_half2(s[1][2], s[1][3])};
    for (int np = 0; np < 4; np++) {
      unsigned vb[4];
      ldsm_x4_trans(vb, &vs[lane % 16][np * 16 + (lane / 16) * 8]);
      mma16816<false>(o[2 * np], pa, vb[0], vb[1]);
      mma16816<false>(o[2 * np + 1], pa, vb[2], vb[3]);
    }
  }
  for (int h = 0; h < 2; h++) {
    l[h] += __shfl_xor_sync(0xffffffffu, l[h], 1);
    l[h] += __shfl_xor_sync(0xffffffffu, l[h], 2);
  }
  float *oh = out + (size_t)head * T * 64;
  for (int nb = 0; nb < 8; nb++)
    for (int j = 0; j < 4; j++) oh[(size_t)rowq[j / 2] * 64 + nb * 8 + 2 * t + (j & 1)] = o[nb][j] / l[j / 2];
}
