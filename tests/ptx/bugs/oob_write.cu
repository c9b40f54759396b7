// Writes one element past the end of `out`: the bound check uses <= instead of <.

extern "C" __global__ void oob_write(const float *in, float *out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i > n) return;
  float v = in[i < n ? i : 0];
  out[i] = 2.0f * v; // BUG: out[n] for thread n
}

extern "C" __global__ void oob_write_ok(const float *in, float *out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  out[i] = 2.0f * in[i];
}
