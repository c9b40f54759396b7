// Reads one element past the end of `in`: the last thread adds in[n].

extern "C" __global__ void oob_read(const float *in, float *out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  out[i] = in[i] + in[i + 1]; // BUG: in[n] for the last thread
}

extern "C" __global__ void oob_read_ok(const float *in, float *out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  out[i] = in[i] + (i + 1 < n ? in[i + 1] : 0.0f);
}
