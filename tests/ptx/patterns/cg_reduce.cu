// nvcc-archs: 75 80 90
// Cooperative-groups reductions as the cooperative groups documentation shows them: cg::reduce
// over tiles of 16 and 32 threads, and a block sum through one value per warp.
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
namespace cg = cooperative_groups;

// out[tile] = the sum of the 16 values of each tile of 16 threads (blocks of whole tiles).
extern "C" __global__ void cg_tile16_sum(const int *in, int *out, int n) {
  cg::thread_block block = cg::this_thread_block();
  cg::thread_block_tile<16> tile = cg::tiled_partition<16>(block);
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int s = cg::reduce(tile, i < n ? in[i] : 0, cg::plus<int>());
  if (tile.thread_rank() == 0) out[i / 16] = s;
}

// out[b] = the sum and max of block b's floats: tiles of 32 reduce, then the first tile
// reduces their results.
extern "C" __global__ void cg_block_sum(const float *in, float *out, int n) {
  __shared__ float sums[32], maxes[32];
  cg::thread_block block = cg::this_thread_block();
  cg::thread_block_tile<32> warp = cg::tiled_partition<32>(block);
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  float v = i < n ? in[i] : 0.0f;
  float s = cg::reduce(warp, v, cg::plus<float>());
  float m = cg::reduce(warp, i < n ? v : -1e30f, cg::greater<float>());
  if (warp.thread_rank() == 0) {
    sums[warp.meta_group_rank()] = s;
    maxes[warp.meta_group_rank()] = m;
  }
  block.sync();
  if (warp.meta_group_rank() == 0) {
    unsigned k = warp.thread_rank();
    bool have = k < warp.meta_group_size();
    s = cg::reduce(warp, have ? sums[k] : 0.0f, cg::plus<float>());
    m = cg::reduce(warp, have ? maxes[k] : -1e30f, cg::greater<float>());
    if (k == 0) {
      out[2 * blockIdx.x] = s;
      out[2 * blockIdx.x + 1] = m;
    }
  }
}
