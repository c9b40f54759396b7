// __syncthreads in a branch that half of the first warp takes: bar.sync must be executed by
// all threads of a warp together.

extern "C" __global__ void divergent_barrier(const int *in, int *out) {
  __shared__ int s[64];
  int t = threadIdx.x;
  s[t] = in[t];
  if (t < 16) __syncthreads(); // BUG: only lanes 0-15 of warp 0 arrive
  out[t] = s[t] + 1;
}

extern "C" __global__ void divergent_barrier_ok(const int *in, int *out) {
  __shared__ int s[64];
  int t = threadIdx.x;
  s[t] = in[t];
  __syncthreads();
  out[t] = s[63 - t] + 1;
}
