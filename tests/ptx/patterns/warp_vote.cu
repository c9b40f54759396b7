// nvcc-archs: 75 80 90
// Warp-level voting, shuffles and warp-aggregated atomics, as the CUDA programming guide and
// the warp-aggregation write-ups show them: full-mask shuffles in a partial last warp, ballot
// compaction, match_any grouping, and filters whose atomics one leader lane per group does.
#include <cooperative_groups.h>
namespace cg = cooperative_groups;

// Inclusive scan of each block's values; blocks of any size (120 threads leave the last warp
// 24 lanes). A full-mask shfl_up only reads lower lanes, so lanes past the block's end are never
// read. block_total[b] gets the block's sum.
extern "C" __global__ void partial_warp_scan(const int *in, int *out, int *block_total, int n) {
  __shared__ int warp_sums[32];
  int t = threadIdx.x, i = blockIdx.x * blockDim.x + t, lane = t & 31, w = t >> 5;
  int nwarps = (blockDim.x + 31) >> 5;
  int v = i < n ? in[i] : 0;
  for (int d = 1; d < 32; d <<= 1) {
    int up = __shfl_up_sync(0xffffffffu, v, d);
    if (lane >= d) v += up;
  }
  int last = min(31, (int)blockDim.x - 1 - w * 32);
  if (lane == last) warp_sums[w] = v;
  __syncthreads();
  if (w == 0) {
    int s = lane < nwarps ? warp_sums[lane] : 0;
    for (int d = 1; d < 32; d <<= 1) {
      int up = __shfl_up_sync(0xffffffffu, s, d);
      if (lane >= d) s += up;
    }
    if (lane < nwarps) warp_sums[lane] = s;
  }
  __syncthreads();
  if (w > 0) v += warp_sums[w - 1];
  if (i < n) out[i] = v;
  if (t == blockDim.x - 1) block_total[blockIdx.x] = v;
}

// Per thread: the ballot of in[i] > 0 over its warp, any/all of it, and lane 0's value, all
// with the full mask, in blocks whose last warp is partial.
extern "C" __global__ void vote_partial(const int *in, int *out, int n) {
  int t = threadIdx.x, i = blockIdx.x * blockDim.x + t;
  int v = i < n ? in[i] : -1;
  bool pos = v > 0;
  unsigned b = __ballot_sync(0xffffffffu, pos);
  int any = __any_sync(0xffffffffu, pos);
  int all = __all_sync(0xffffffffu, pos);
  int first = __shfl_sync(0xffffffffu, v, 0);
  if (i < n) {
    out[4 * i] = (int)b;
    out[4 * i + 1] = any;
    out[4 * i + 2] = all;
    out[4 * i + 3] = first;
  }
}

// Stream compaction of the odd values: one atomicAdd per warp (the lane 0 of a ballot), a
// grid-stride loop whose trip count is the same for the whole block. Blocks of whole warps.
extern "C" __global__ void ballot_compact(const int *in, int *out, int *count, int n) {
  int lane = threadIdx.x & 31;
  for (int base = blockIdx.x * blockDim.x; base < n; base += gridDim.x * blockDim.x) {
    int i = base + threadIdx.x;
    int v = i < n ? in[i] : 0;
    bool keep = i < n && (v & 1);
    unsigned m = __ballot_sync(0xffffffffu, keep);
    int pos = 0;
    if (lane == 0 && m != 0) pos = atomicAdd(count, __popc(m));
    pos = __shfl_sync(0xffffffffu, pos, 0);
    if (keep) out[pos + __popc(m & ((1u << lane) - 1))] = v;
  }
}

// counts[k] += how many threads hold key k: lanes with equal keys find each other with
// match_any, and the lowest of them adds the group's size.
extern "C" __global__ void match_count(const int *keys, int *counts, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  int k = keys[i];
  unsigned peers = __match_any_sync(__activemask(), k);
  int leader = __ffs(peers) - 1;
  if ((int)(threadIdx.x & 31) == leader) atomicAdd(&counts[k], __popc(peers));
}

// The classic warp-aggregated increment: the coalesced threads elect one lane that adds the
// group's size, then each takes its own slot.
__device__ int aggregated_inc(int *ctr) {
  cg::coalesced_group g = cg::coalesced_threads();
  int prev = 0;
  if (g.thread_rank() == 0) prev = atomicAdd(ctr, (int)g.size());
  return g.shfl(prev, 0) + (int)g.thread_rank();
}

// Keeps the positive values (in any order) in out; *count gets how many.
extern "C" __global__ void agg_filter(const int *in, int *out, int *count, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n && in[i] > 0) out[aggregated_inc(count)] = in[i];
}

// Sorts the non-negative values into 4 buckets by value % 4 (bucket k at out[k * cap]), one
// atomicAdd per bucket and warp: the coalesced threads split by key with labeled_partition.
extern "C" __global__ void labeled_filter(const int *in, int *out, int *counts, int cap, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  int v = in[i];
  if (v < 0) return;
  int key = v % 4;
  cg::coalesced_group g = cg::labeled_partition(cg::coalesced_threads(), key);
  int base = 0;
  if (g.thread_rank() == 0) base = atomicAdd(&counts[key], (int)g.size());
  base = g.shfl(base, 0);
  out[key * cap + base + (int)g.thread_rank()] = v;
}
