// nvcc-archs: 75 80 90
// Kernels of a transformer's forward pass, in the style of small training code bases: a
// softmax with one warp per row, a layer norm with one warp per row through cooperative groups,
// a matrix-vector product with one warp per row, and a tiled matrix product where each thread
// computes two outputs.
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
namespace cg = cooperative_groups;

// out[r][c] = exp(x[r][c] - max_r) / sum_r, one warp per row (blocks of whole warps; warps
// past the last row return).
extern "C" __global__ void softmax_rows(const float *x, float *out, int rows, int cols) {
  int lane = threadIdx.x & 31;
  int r = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
  if (r >= rows) return;
  const float *row = x + (size_t)r * cols;
  float m = -INFINITY;
  for (int c = lane; c < cols; c += 32) m = fmaxf(m, row[c]);
  for (int d = 16; d > 0; d >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, d));
  float s = 0.0f;
  for (int c = lane; c < cols; c += 32) s += expf(row[c] - m);
  for (int d = 16; d > 0; d >>= 1) s += __shfl_xor_sync(0xffffffffu, s, d);
  float inv = 1.0f / s;
  for (int c = lane; c < cols; c += 32) out[(size_t)r * cols + c] = expf(row[c] - m) * inv;
}

// Layer norm of each row of x (one warp per row, cg::reduce): out = (x - mean) * rstd * w + b,
// with mean[r] and rstd[r] kept for a backward pass.
extern "C" __global__ void layernorm_rows(const float *x, const float *w, const float *b, float *out, float *mean,
                                          float *rstd, int rows, int cols) {
  cg::thread_block block = cg::this_thread_block();
  cg::thread_block_tile<32> warp = cg::tiled_partition<32>(block);
  int r = blockIdx.x * warp.meta_group_size() + warp.meta_group_rank();
  if (r >= rows) return;
  const float *row = x + (size_t)r * cols;
  float s = 0.0f;
  for (int c = warp.thread_rank(); c < cols; c += 32) s += row[c];
  float mu = cg::reduce(warp, s, cg::plus<float>()) / cols;
  float v = 0.0f;
  for (int c = warp.thread_rank(); c < cols; c += 32) {
    float d = row[c] - mu;
    v += d * d;
  }
  float rs = rsqrtf(cg::reduce(warp, v, cg::plus<float>()) / cols + 1e-5f);
  for (int c = warp.thread_rank(); c < cols; c += 32) out[(size_t)r * cols + c] = (row[c] - mu) * rs * w[c] + b[c];
  if (warp.thread_rank() == 0) {
    mean[r] = mu;
    rstd[r] = rs;
  }
}

// y = A x for a rows x cols matrix A, one warp per row.
extern "C" __global__ void gemv_warp(const float *a, const float *x, float *y, int rows, int cols) {
  int lane = threadIdx.x & 31;
  int r = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
  if (r >= rows) return;
  float s = 0.0f;
  for (int c = lane; c < cols; c += 32) s += a[(size_t)r * cols + c] * x[c];
  for (int d = 16; d > 0; d >>= 1) s += __shfl_down_sync(0xffffffffu, s, d);
  if (lane == 0) y[r] = s;
}

// C = A B (A: m x k, B: k x n, row-major) with 16 x 16 tiles in shared memory; blocks of
// 16 x 8 threads, each computing the outputs of rows ty and ty + 8 of its tile.
extern "C" __global__ void matmul_tiled2(const float *a, const float *b, float *c, int m, int n, int k) {
  __shared__ float ta[16][16], tb[16][16];
  int tx = threadIdx.x, ty = threadIdx.y;
  int col = blockIdx.x * 16 + tx, row0 = blockIdx.y * 16 + ty, row1 = row0 + 8;
  float acc0 = 0.0f, acc1 = 0.0f;
  for (int t = 0; t < k; t += 16) {
    ta[ty][tx] = row0 < m && t + tx < k ? a[(size_t)row0 * k + t + tx] : 0.0f;
    ta[ty + 8][tx] = row1 < m && t + tx < k ? a[(size_t)row1 * k + t + tx] : 0.0f;
    tb[ty][tx] = t + ty < k && col < n ? b[(size_t)(t + ty) * n + col] : 0.0f;
    tb[ty + 8][tx] = t + ty + 8 < k && col < n ? b[(size_t)(t + ty + 8) * n + col] : 0.0f;
    __syncthreads();
    for (int j = 0; j < 16; j++) {
      acc0 += ta[ty][j] * tb[j][tx];
      acc1 += ta[ty + 8][j] * tb[j][tx];
    }
    __syncthreads();
  }
  if (col < n && row0 < m) c[(size_t)row0 * n + col] = acc0;
  if (col < n && row1 < m) c[(size_t)row1 * n + col] = acc1;
}
