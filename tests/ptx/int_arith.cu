// Integer arithmetic of 32 and 64 bits. Each thread applies every operation to its pair (a[i],
// b[i]) and writes one result per operation; the test divides by no zero and never divides the
// most negative value by -1 (PTX leaves both unspecified). Wrapping operations are done on
// unsigned values so that they stay defined in C++.

#define OPS32 24
#define OPS64 20

extern "C" __global__ void int32_ops(const int *a, const int *b, int *out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  int x = a[i], y = b[i];
  unsigned ux = x, uy = y;
  int *o = out + i * OPS32;
  o[0] = ux + uy;
  o[1] = ux - uy;
  o[2] = ux * uy;
  o[3] = __mulhi(x, y);
  o[4] = __umulhi(ux, uy);
  o[5] = ux * uy + (uy ^ 0x55u);
  o[6] = x / y;
  o[7] = ux / uy;
  o[8] = ux << (uy & 31);
  o[9] = x >> (y & 31);
  o[10] = ux >> (uy & 31);
  o[11] = min(x, y);
  o[12] = max(x, y);
  o[13] = min(ux, uy);
  o[14] = max(ux, uy);
  o[15] = abs(x);
  o[16] = 0u - ux;
  long long w = (long long)x * y;
  o[17] = (int)w;
  o[18] = (int)(w >> 32);
  unsigned long long uw = (unsigned long long)ux * uy;
  o[19] = (int)uw;
  o[20] = (int)(uw >> 32);
  o[21] = __sad(x, y, uy & 0xffu);
  o[22] = __mul24(x, y);
  o[23] = __umul24(ux, uy);
}

// Remainders in a kernel of their own: next to the matching division nvcc would compute them
// as x - (x / y) * y and emit no rem at all.
extern "C" __global__ void int32_rem(const int *a, const int *b, int *out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  int x = a[i], y = b[i];
  out[4 * i + 0] = x % y;
  out[4 * i + 1] = (unsigned)x % (unsigned)y;
  out[4 * i + 2] = x / 7;            // division by a constant becomes mul.hi and shifts
  out[4 * i + 3] = (unsigned)x % 10u;
}

extern "C" __global__ void int64_ops(const long long *a, const long long *b, long long *out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  long long x = a[i], y = b[i];
  unsigned long long ux = x, uy = y;
  long long *o = out + i * OPS64;
  o[0] = ux + uy;
  o[1] = ux - uy;
  o[2] = ux * uy;
  o[3] = __mul64hi(x, y);
  o[4] = __umul64hi(ux, uy);
  o[5] = ux * uy + (uy ^ 0x5555ull);
  o[6] = x / y;
  o[7] = ux / uy;
  o[8] = ux << (uy & 63);
  o[9] = x >> (y & 63);
  o[10] = ux >> (uy & 63);
  o[11] = min(x, y);
  o[12] = max(x, y);
  o[13] = min(ux, uy);
  o[14] = max(ux, uy);
  o[15] = llabs(x);
  o[16] = 0ull - ux;
  o[17] = (long long)(int)x * (long long)(int)y; // mul.wide.s32 again, from 64-bit operands
  o[18] = ux + (unsigned)uy;                     // zero extension of a 32-bit half
  o[19] = x + (int)y;                            // sign extension of a 32-bit half
}

extern "C" __global__ void int64_rem(const long long *a, const long long *b, long long *out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  long long x = a[i], y = b[i];
  out[2 * i + 0] = x % y;
  out[2 * i + 1] = (unsigned long long)x % (unsigned long long)y;
}
