// nvcc-archs: 75 80 90
// A reduction over tiles larger than a warp (cg::tiled_partition<128>), as cooperative groups
// allow since CUDA 11: the tile's warps exchange their partial results through memory the
// library reserves (below sm_80, a block_tile_memory the kernel declares), waiting on each other.
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
namespace cg = cooperative_groups;

// out[t] = the sum of the values of tile t of 128 threads (blocks of 256), and each thread's
// value times the tile's size in scaled[i].
extern "C" __global__ void cg_multiwarp_sum(const int *in, int *out, int *scaled, int n) {
#if __CUDA_ARCH__ < 800
  __shared__ cg::block_tile_memory<256> tile_mem;
  cg::thread_block block = cg::this_thread_block(tile_mem);
#else
  cg::thread_block block = cg::this_thread_block();
#endif
  cg::thread_block_tile<128> tile = cg::tiled_partition<128>(block);
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int v = i < n ? in[i] : 0;
  int s = cg::reduce(tile, v, cg::plus<int>());
  if (tile.thread_rank() == 0) out[i / 128] = s;
  if (i < n) scaled[i] = v * (int)tile.num_threads();
}
