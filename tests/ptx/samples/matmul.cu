// nvcc-G
// C = A * B (row-major, A is m x k, B is k x n) with 16 x 16 tiles staged in shared memory.
// Sizes need not be multiples of 16: tiles are padded with zeros. The inner product runs in
// the order k = 0, 1, ... with fused multiply-adds (nvcc contracts them), as the reference does.

#define TILE 16

extern "C" __global__ void matmul_tiled(const float *A, const float *B, float *C, int m, int n, int k) {
  __shared__ float As[TILE][TILE];
  __shared__ float Bs[TILE][TILE];
  int tx = threadIdx.x, ty = threadIdx.y;
  int row = blockIdx.y * TILE + ty, col = blockIdx.x * TILE + tx;
  float sum = 0.0f;
  for (int t = 0; t < (k + TILE - 1) / TILE; t++) {
    int ak = t * TILE + tx, bk = t * TILE + ty;
    As[ty][tx] = row < m && ak < k ? A[row * k + ak] : 0.0f;
    Bs[ty][tx] = bk < k && col < n ? B[bk * n + col] : 0.0f;
    __syncthreads();
    for (int j = 0; j < TILE; j++) sum += As[ty][j] * Bs[j][tx];
    __syncthreads();
  }
  if (row < m && col < n) C[row * n + col] = sum;
}
