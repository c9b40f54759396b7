// Only the first warp fills the shared array; the second reads slots nobody wrote.

extern "C" __global__ void uninit_shared(const int *in, int *out) {
  __shared__ int s[64];
  int t = threadIdx.x;
  if (t < 32) s[t] = in[t];
  __syncthreads();
  out[t] = s[t]; // BUG: s[32..63] were never written
}

extern "C" __global__ void uninit_shared_ok(const int *in, int *out) {
  __shared__ int s[64];
  int t = threadIdx.x;
  if (t < 32) s[t] = in[t];
  else s[t] = 0;
  __syncthreads();
  out[t] = s[t];
}
