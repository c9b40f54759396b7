// nvcc-archs: 80 90
// Warp reductions with the redux.sync instruction of sm_80 (__reduce_*_sync), over whole warps
// and over the groups of labeled_partition, as the CUDA programming guide describes them.
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
namespace cg = cooperative_groups;

// Per warp (blocks of whole warps): add, min, max (signed and unsigned), and, or, xor of the
// warp's values, written by lane 0 to out[7 * warp ...].
extern "C" __global__ void redux_ops(const int *in, int *out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int v = i < n ? in[i] : 0;
  unsigned u = (unsigned)v;
  int r[7];
  r[0] = (int)__reduce_add_sync(0xffffffffu, u);
  r[1] = __reduce_min_sync(0xffffffffu, v);
  r[2] = __reduce_max_sync(0xffffffffu, v);
  r[3] = (int)__reduce_min_sync(0xffffffffu, u);
  r[4] = (int)__reduce_and_sync(0xffffffffu, u);
  r[5] = (int)__reduce_or_sync(0xffffffffu, u);
  r[6] = (int)__reduce_xor_sync(0xffffffffu, u);
  if ((threadIdx.x & 31) == 0)
    for (int k = 0; k < 7; k++) out[7 * (i / 32) + k] = r[k];
}

// maxes[k] = the largest value whose key (value % 8) is k: the lanes of a warp split by key with
// labeled_partition, cg::reduce (redux.sync.max with each group's mask) finds each group's
// maximum, and the group's first lane folds it in with atomicMax.
extern "C" __global__ void labeled_max(const int *in, int *maxes, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  int v = in[i];
  int key = v % 8;
  cg::coalesced_group g = cg::labeled_partition(cg::coalesced_threads(), key);
  int m = cg::reduce(g, v, cg::greater<int>());
  if (g.thread_rank() == 0) atomicMax(&maxes[key], m);
}
