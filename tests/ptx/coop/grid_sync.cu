// Grid-synchronised kernels for tests/test_cooperative.c: cooperative_groups::this_grid().sync()
// between the phases of a grid reduction (nvcc -arch=sm_80 -ptx grid_sync.cu).
#include <cooperative_groups.h>
namespace cg = cooperative_groups;

// out[r] = (r + 1) * (in[0] + ... + in[n - 1]) for r < rounds: each round, every block sums its
// stripe into partial[block], the grid syncs, thread 0 of the grid adds the partials, the grid
// syncs again (so no block overwrites a partial before it was read).
extern "C" __global__ void grid_sum(const int *in, int *partial, int *out, int n, int rounds) {
  cg::grid_group g = cg::this_grid();
  __shared__ int s[256];
  for (int r = 0; r < rounds; r++) {
    int acc = 0;
    for (unsigned long long i = g.thread_rank(); i < (unsigned long long)n; i += g.size()) acc += in[i] * (r + 1);
    s[threadIdx.x] = acc;
    __syncthreads();
    for (unsigned k = blockDim.x / 2; k; k >>= 1) {
      if (threadIdx.x < k) s[threadIdx.x] += s[threadIdx.x + k];
      __syncthreads();
    }
    if (threadIdx.x == 0) partial[blockIdx.x] = s[0];
    g.sync();
    if (g.thread_rank() == 0) {
      int t = 0;
      for (unsigned b = 0; b < gridDim.x; b++) t += partial[b];
      out[r] = t;
    }
    g.sync();
  }
}

// A grid sync that some blocks never reach: block 0 returns first, the others wait for ever.
extern "C" __global__ void grid_deadlock(int *out) {
  cg::grid_group g = cg::this_grid();
  if (blockIdx.x == 0) return;
  g.sync();
  out[blockIdx.x] = 1;
}

// Every thread of the grid counts itself before the barrier; after it, each block reads the count.
extern "C" __global__ void grid_count(unsigned *count, unsigned *out) {
  cg::grid_group g = cg::this_grid();
  atomicAdd(count, 1u);
  g.sync();
  if (threadIdx.x == 0) out[blockIdx.x] = atomicAdd(count, 0u);
}
