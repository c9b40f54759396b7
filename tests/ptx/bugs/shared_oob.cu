// Dynamic shared memory of blockDim.x floats; the last thread reads one past its end.

extern "C" __global__ void shared_oob(const float *in, float *out) {
  extern __shared__ float s[];
  int t = threadIdx.x, i = blockIdx.x * blockDim.x + t;
  s[t] = in[i];
  __syncthreads();
  out[i] = s[t] + s[t + 1]; // BUG: s[blockDim.x] for the last thread
}

extern "C" __global__ void shared_oob_ok(const float *in, float *out) {
  extern __shared__ float s[];
  int t = threadIdx.x, i = blockIdx.x * blockDim.x + t;
  s[t] = in[i];
  __syncthreads();
  out[i] = s[t] + s[(t + 1) % blockDim.x];
}
