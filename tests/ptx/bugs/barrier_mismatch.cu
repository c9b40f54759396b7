// Warp 0 waits at one __syncthreads, warp 1 at another: the two call sites are different
// barriers in the program, so neither is reached by the whole block.

extern "C" __global__ void barrier_mismatch(const int *in, int *out) {
  __shared__ int s[64];
  int t = threadIdx.x;
  if (t < 32) {
    s[t] = in[t] + 1;
    __syncthreads(); // BUG: warp 0 only
    out[t] = s[t + 32] * 2;
  } else {
    s[t] = in[t] - 1;
    __syncthreads(); // BUG: warp 1 only
    out[t] = s[t - 32] * 3;
  }
}

extern "C" __global__ void barrier_mismatch_ok(const int *in, int *out) {
  __shared__ int s[64];
  int t = threadIdx.x;
  s[t] = t < 32 ? in[t] + 1 : in[t] - 1;
  __syncthreads();
  out[t] = t < 32 ? s[t + 32] * 2 : s[t - 32] * 3;
}
