// A device-side assert that one thread's value fails.
#include <cassert>

extern "C" __global__ void assert_positive(const int *in, int *out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  assert(in[i] >= 0); // BUG: the test plants one negative value
  out[i] = in[i];
}
