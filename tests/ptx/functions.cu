// nvcc-G
// Calls: a non-inlined device function with parameters of several types and a return value,
// a recursive one, one that takes a pointer to the caller's local array (a generic pointer into
// the local window), and per-thread local arrays indexed with values known only at run time.

struct pair {
  int lo;
  float hi;
};

__device__ __noinline__ float mix(int a, long long b, float c, double d, pair p) {
  return (float)(a + b) * c + (float)d + (float)p.lo * p.hi;
}

// Not a tail call: nvcc keeps the recursion as calls.
__device__ __noinline__ int fib(int n) {
  if (n < 2) return n;
  return fib(n - 1) + fib(n - 2);
}

// Each call leaves a frame with an array of its own on the per-thread stack.
__device__ __noinline__ unsigned depth_sum(unsigned n, unsigned seed) {
  volatile unsigned frame[4];
  for (int k = 0; k < 4; k++) frame[k] = seed + n * 4 + k;
  if (n == 0) return frame[seed & 3];
  return frame[(seed + n) & 3] + depth_sum(n - 1, seed * 3 + 1);
}

__device__ __noinline__ void insertion_sort(int *v, int len) {
  for (int k = 1; k < len; k++) {
    int x = v[k], j = k - 1;
    while (j >= 0 && v[j] > x) {
      v[j + 1] = v[j];
      j--;
    }
    v[j + 1] = x;
  }
}

extern "C" __global__ void calls(const int *a, float *fout, int *iout, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  int x = a[i];
  pair p = {x & 7, 0.5f};
  fout[i] = mix(x, (long long)x << 20, 0.25f, (double)i, p);
  iout[2 * i] = fib(x & 15);
  iout[2 * i + 1] = (int)depth_sum((unsigned)(x & 7), (unsigned)i);
}

// A thread's array of 16 ints, filled and read at indices from the data; a callee sorts its first
// 9 to 16 elements (a length from the data, so that nvcc cannot specialise the callee).
extern "C" __global__ void local_array(const int *a, const int *idx, int *out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  int v[16];
  for (int k = 0; k < 16; k++) v[k] = a[(i + k * 7) % n] ^ k;
  int picked = v[idx[i] & 15];
  v[idx[i] & 15] = -picked;
  insertion_sort(v, 9 + ((idx[i] >> 4) & 7));
  out[17 * i] = picked;
  for (int k = 0; k < 16; k++) out[17 * i + 1 + k] = v[k];
}
