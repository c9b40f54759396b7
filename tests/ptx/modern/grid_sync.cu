// nvcc-archs: 80 90
// Grid-synchronised kernels of the cooperative groups documentation, launched cooperatively
// (cudaLaunchCooperativeKernel) so that every block is resident and this_grid().sync() can
// complete: a multi-phase reduction that centres its data, and Jacobi sweeps of a 1-D Poisson
// problem with a grid barrier between sweeps.
#include <cooperative_groups.h>
namespace cg = cooperative_groups;

__device__ float block_sum(float v, float *scratch) {
  for (int d = 16; d > 0; d >>= 1) v += __shfl_xor_sync(0xffffffffu, v, d);
  if ((threadIdx.x & 31) == 0) scratch[threadIdx.x / 32] = v;
  __syncthreads();
  float s = 0.0f;
  if (threadIdx.x == 0)
    for (int w = 0; w < (int)(blockDim.x / 32); w++) s += scratch[w];
  __syncthreads();
  return s; /* thread 0's is the block's */
}

// Phase 1: each block sums its grid-stride share into partial[block]; the grid syncs; phase 2:
// block 0 adds the partials into *mean (divided by n); the grid syncs; phase 3: x -= mean.
extern "C" __global__ void grid_center(float *x, float *partial, float *mean, int n) {
  __shared__ float scratch[32];
  cg::grid_group grid = cg::this_grid();
  float s = 0.0f;
  for (int i = grid.thread_rank(); i < n; i += grid.size()) s += x[i];
  s = block_sum(s, scratch);
  if (threadIdx.x == 0) partial[blockIdx.x] = s;
  grid.sync();
  if (blockIdx.x == 0) {
    float t = 0.0f;
    for (int b = threadIdx.x; b < gridDim.x; b += blockDim.x) t += partial[b];
    t = block_sum(t, scratch);
    if (threadIdx.x == 0) *mean = t / n;
  }
  grid.sync();
  float m = *mean;
  for (int i = grid.thread_rank(); i < n; i += grid.size()) x[i] -= m;
}

// `sweeps` Jacobi sweeps of -u'' = f on n points with u = 0 beyond both ends: u_new[i] =
// (u[i-1] + u[i+1] + h2f[i]) * 0.5, ping-ponging between u and tmp (an even number of sweeps
// ends in u), one grid barrier a sweep.
extern "C" __global__ void jacobi_coop(float *u, float *tmp, const float *h2f, int n, int sweeps) {
  cg::grid_group grid = cg::this_grid();
  for (int s = 0; s < sweeps; s++) {
    const float *src = (s & 1) ? tmp : u;
    float *dst = (s & 1) ? u : tmp;
    for (int i = grid.thread_rank(); i < n; i += grid.size()) {
      float l = i > 0 ? src[i - 1] : 0.0f, r = i + 1 < n ? src[i + 1] : 0.0f;
      dst[i] = (l + r + h2f[i]) * 0.5f;
    }
    grid.sync();
  }
}
