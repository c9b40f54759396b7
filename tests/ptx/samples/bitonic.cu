// Bitonic sort of blockDim.x ints (a power of two) in shared memory, ascending, one block per
// independent array.

extern "C" __global__ void bitonic_sort(int *data) {
  extern __shared__ int s[];
  unsigned t = threadIdx.x, m = blockDim.x;
  int *d = data + blockIdx.x * m;
  s[t] = d[t];
  __syncthreads();
  for (unsigned k = 2; k <= m; k <<= 1) {
    for (unsigned j = k >> 1; j > 0; j >>= 1) {
      unsigned p = t ^ j;
      if (p > t) {
        int a = s[t], b = s[p];
        bool up = (t & k) == 0;
        if ((a > b) == up) {
          s[t] = b;
          s[p] = a;
        }
      }
      __syncthreads();
    }
  }
  d[t] = s[t];
}
