// nvcc-archs: 75 80 90
// A single-pass grid reduction in the style of the CUDA samples' threadfence reduction: each
// block reduces into dynamic shared memory and publishes a partial sum; the block that retires
// last (a static __shared__ flag beside the dynamic array) adds the partial sums.

// *out = the sum of in[0..n); partial holds gridDim.x ints, *retired starts at 0 and is 0
// again afterwards. blockDim.x a power of two; dynamic shared memory of blockDim.x ints.
extern "C" __global__ void last_block_sum(const int *in, int *partial, unsigned *retired, int *out, int n) {
  extern __shared__ int sdata[];
  __shared__ bool am_last;
  unsigned t = threadIdx.x;
  int s = 0;
  for (int i = blockIdx.x * blockDim.x + t; i < n; i += gridDim.x * blockDim.x) s += in[i];
  sdata[t] = s;
  __syncthreads();
  for (unsigned d = blockDim.x / 2; d > 0; d >>= 1) {
    if (t < d) sdata[t] += sdata[t + d];
    __syncthreads();
  }
  if (t == 0) {
    partial[blockIdx.x] = sdata[0];
    __threadfence();
    unsigned ticket = atomicInc(retired, gridDim.x);
    am_last = ticket == gridDim.x - 1;
  }
  __syncthreads();
  if (am_last) {
    s = 0;
    for (unsigned b = t; b < gridDim.x; b += blockDim.x) s += ((volatile int *)partial)[b];
    sdata[t] = s;
    __syncthreads();
    for (unsigned d = blockDim.x / 2; d > 0; d >>= 1) {
      if (t < d) sdata[t] += sdata[t + d];
      __syncthreads();
    }
    if (t == 0) {
      *out = sdata[0];
      *retired = 0;
    }
  }
}
