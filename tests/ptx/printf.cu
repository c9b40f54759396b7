// printf from a kernel (vprintf): integers of both widths, a double, a string and a character.
#include <cstdio>

extern "C" __global__ void hello(const int *a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n || a[i] < 0) return;
  printf("ptx-corpus thread %d block %u value %lld half %.2f %s%c\n", i, blockIdx.x, (long long)a[i] * 1000000007LL,
         a[i] * 0.5, "tag", 'A' + (i & 7));
}
