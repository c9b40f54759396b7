// Prefix sums within a block. scan_hillis_steele: inclusive, double-buffered in dynamic shared
// memory (2 * blockDim.x ints). scan_blelloch: exclusive, up-sweep and down-sweep over 2 *
// blockDim.x elements (each thread loads two; blockDim.x a power of two).

extern "C" __global__ void scan_hillis_steele(const int *in, int *out) {
  extern __shared__ int buf[];
  int t = threadIdx.x, m = blockDim.x, base = blockIdx.x * m;
  int src = 0;
  buf[t] = in[base + t];
  __syncthreads();
  for (int d = 1; d < m; d *= 2) {
    int dst = 1 - src;
    buf[dst * m + t] = t >= d ? buf[src * m + t] + buf[src * m + t - d] : buf[src * m + t];
    __syncthreads();
    src = dst;
  }
  out[base + t] = buf[src * m + t];
}

extern "C" __global__ void scan_blelloch(const int *in, int *out) {
  extern __shared__ int s[];
  int t = threadIdx.x, len = 2 * blockDim.x, base = blockIdx.x * len;
  s[2 * t] = in[base + 2 * t];
  s[2 * t + 1] = in[base + 2 * t + 1];
  int offset = 1;
  for (int d = len >> 1; d > 0; d >>= 1) {
    __syncthreads();
    if (t < d) {
      int ai = offset * (2 * t + 1) - 1, bi = offset * (2 * t + 2) - 1;
      s[bi] += s[ai];
    }
    offset *= 2;
  }
  if (t == 0) s[len - 1] = 0;
  for (int d = 1; d < len; d *= 2) {
    offset >>= 1;
    __syncthreads();
    if (t < d) {
      int ai = offset * (2 * t + 1) - 1, bi = offset * (2 * t + 2) - 1;
      int x = s[ai];
      s[ai] = s[bi];
      s[bi] += x;
    }
  }
  __syncthreads();
  out[base + 2 * t] = s[2 * t];
  out[base + 2 * t + 1] = s[2 * t + 1];
}
