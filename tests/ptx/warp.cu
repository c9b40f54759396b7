// Warp-level primitives: the four shuffles (also with width < 32 and on 64-bit values), votes,
// __activemask in divergent code, and __match_any/__match_all. Kernels with a full mask run in
// blocks that are whole warps; partial_warp is the one meant for a partial last warp and names
// only the lanes that exist.

#define FULL 0xffffffffu

extern "C" __global__ void shuffles(const int *a, int *out) {
  int i = blockIdx.x * blockDim.x + threadIdx.x, lane = threadIdx.x & 31;
  int v = a[i];
  int *o = out + 12 * i;
  o[0] = __shfl_sync(FULL, v, (lane * 7 + 3) & 31);
  o[1] = __shfl_up_sync(FULL, v, 3);
  o[2] = __shfl_down_sync(FULL, v, 5);
  o[3] = __shfl_xor_sync(FULL, v, 6);
  o[4] = __shfl_sync(FULL, v, lane + 2, 8);  // within groups of 8 lanes, wrapping
  o[5] = __shfl_up_sync(FULL, v, 1, 16);
  o[6] = __shfl_down_sync(FULL, v, 2, 8);
  o[7] = __shfl_xor_sync(FULL, v, 4, 16);
  o[8] = __shfl_sync(FULL, v, 40);          // lane 40 is lane 8 of the warp
  double d = (double)v * 1.5;
  o[9] = (int)__shfl_xor_sync(FULL, d, 1);  // a 64-bit value: two shuffles
  float f = __shfl_down_sync(FULL, (float)v, 31);
  o[10] = (int)f;
  o[11] = __shfl_up_sync(FULL, v, 32);      // a delta of a whole warp moves nothing
}

extern "C" __global__ void votes(const int *a, unsigned *out) {
  int i = blockIdx.x * blockDim.x + threadIdx.x, lane = threadIdx.x & 31;
  int v = a[i];
  unsigned *o = out + 6 * i;
  o[0] = __ballot_sync(FULL, v > 0);
  o[1] = __all_sync(FULL, v > -1000);
  o[2] = __any_sync(FULL, v == 7);
  o[3] = __all_sync(FULL, v > 0);
  unsigned m = 0;
  if (lane % 3 == 0) m = __activemask();
  else if (v & 1) m = __activemask();
  o[4] = m;
  o[5] = __ballot_sync(FULL, v & 1) ^ __ballot_sync(FULL, lane < 16);
}

extern "C" __global__ void matches(const int *a, unsigned *out) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int v = a[i];
  int pred = 0;
  out[3 * i + 0] = __match_any_sync(FULL, v);
  out[3 * i + 1] = __match_all_sync(FULL, v, &pred);
  out[3 * i + 2] = pred;
}

// Launched with a block of 48 threads: the second warp has 16 lanes. The mask comes from
// __activemask, and every shuffle reads from a lane that exists.
extern "C" __global__ void partial_warp(const int *a, int *out) {
  int i = blockIdx.x * blockDim.x + threadIdx.x, lane = threadIdx.x & 31;
  unsigned m = __activemask();
  int width = __popc(m);
  int v = a[i];
  int s = v;
  for (int d = 1; d < 32; d *= 2) {
    int u = __shfl_up_sync(m, s, d);
    if (lane >= d) s += u;                // inclusive prefix sum over the existing lanes
  }
  out[4 * i + 0] = s;
  out[4 * i + 1] = __shfl_sync(m, v, width - 1);
  out[4 * i + 2] = __ballot_sync(m, v & 1);
  out[4 * i + 3] = m;
}
