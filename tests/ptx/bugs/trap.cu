// __trap() in the threads that find a negative value.

extern "C" __global__ void trap_negative(const int *in, int *out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  if (in[i] < 0) __trap(); // BUG: the test plants one negative value
  out[i] = in[i];
}
