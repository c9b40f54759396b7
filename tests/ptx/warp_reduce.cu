// nvcc: -arch=compute_80
// The warp reductions of sm_80 (redux.sync): add, min and max on signed and unsigned values,
// and the bitwise ones, over the whole warp and over the lanes of a partial mask.

#define FULL 0xffffffffu

extern "C" __global__ void warp_reduce(const int *a, unsigned *out) {
  int i = blockIdx.x * blockDim.x + threadIdx.x, lane = threadIdx.x & 31;
  int v = a[i];
  unsigned u = (unsigned)v;
  unsigned *o = out + 8 * i;
  o[0] = __reduce_add_sync(FULL, u);
  o[1] = (unsigned)__reduce_min_sync(FULL, v);
  o[2] = (unsigned)__reduce_max_sync(FULL, v);
  o[3] = __reduce_min_sync(FULL, u);
  o[4] = __reduce_max_sync(FULL, u);
  o[5] = __reduce_and_sync(FULL, u) ^ __reduce_or_sync(FULL, u);
  o[6] = __reduce_xor_sync(FULL, u);
  o[7] = 0;
  if (lane & 1) o[7] = __reduce_add_sync(0xaaaaaaaau, u); // the odd lanes only
}
