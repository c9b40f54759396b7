// A thread's local array of 8 ints read at an index from the data: the test plants an index far
// past the array (and past the thread's frame) for one thread.

extern "C" __global__ void local_overflow(const int *in, const int *idx, int *out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  int v[8];
  for (int k = 0; k < 8; k++) v[k] = in[i] * (k + 1);
  out[i] = v[idx[i]]; // BUG: idx[i] >= 8 for the planted thread
}

extern "C" __global__ void local_overflow_ok(const int *in, const int *idx, int *out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  int v[8];
  for (int k = 0; k < 8; k++) v[k] = in[i] * (k + 1);
  out[i] = v[idx[i] & 7];
}
