// A correct kernel; the test allocates `in` and never writes it before the launch.

extern "C" __global__ void uninit_global(const int *in, int *out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  out[i] = in[i] + 1; // BUG: in holds no data
}
