// Comparisons and selections: setp in its ordered and unordered forms, selp, slct, set, testp
// and copysign. Each thread packs its predicates into one word, bit k for comparison k.

__device__ unsigned bit(bool p, int k) { return (unsigned)p << k; }

extern "C" __global__ void f32_compare(const float *a, const float *b, unsigned *mask, float *sel, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float x = a[i], y = b[i];
  unsigned m = bit(x < y, 0) | bit(x <= y, 1) | bit(x > y, 2) | bit(x >= y, 3) | bit(x == y, 4) |
               bit(x != y, 5) | bit(!(x < y), 6) | bit(!(x >= y), 7) | bit(isnan(x) || isnan(y), 8) |
               bit(!isnan(x) && !isnan(y), 9) | bit(isinf(x), 10) | bit(isfinite(x), 11) | bit(signbit(x), 12);
  unsigned t;
  asm("{ .reg .pred p; testp.finite.f32 p, %1; selp.u32 %0, 1, 0, p; }" : "=r"(t) : "f"(x));
  m |= t << 16;
  asm("{ .reg .pred p; testp.infinite.f32 p, %1; selp.u32 %0, 1, 0, p; }" : "=r"(t) : "f"(x));
  m |= t << 17;
  asm("{ .reg .pred p; testp.number.f32 p, %1; selp.u32 %0, 1, 0, p; }" : "=r"(t) : "f"(x));
  m |= t << 18;
  asm("{ .reg .pred p; testp.notanumber.f32 p, %1; selp.u32 %0, 1, 0, p; }" : "=r"(t) : "f"(x));
  m |= t << 19;
  asm("{ .reg .pred p; testp.normal.f32 p, %1; selp.u32 %0, 1, 0, p; }" : "=r"(t) : "f"(x));
  m |= t << 20;
  asm("{ .reg .pred p; testp.subnormal.f32 p, %1; selp.u32 %0, 1, 0, p; }" : "=r"(t) : "f"(x));
  m |= t << 21;
  asm("set.gtu.u32.f32 %0, %1, %2;" : "=r"(t) : "f"(x), "f"(y)); // all ones or zero
  m |= (t & 1u) << 22;
  mask[i] = m;
  float r;
  sel[4 * i + 0] = x < y ? x : y;
  asm("slct.f32.f32 %0, %1, %2, %3;" : "=f"(r) : "f"(x), "f"(y), "f"(x - y));
  sel[4 * i + 1] = r;
  asm("copysign.f32 %0, %1, %2;" : "=f"(r) : "f"(x), "f"(y)); // y with the sign of x
  sel[4 * i + 2] = r;
  sel[4 * i + 3] = copysignf(y, x);
}

extern "C" __global__ void f64_compare(const double *a, const double *b, unsigned *mask, double *sel, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  double x = a[i], y = b[i];
  unsigned m = bit(x < y, 0) | bit(x <= y, 1) | bit(x > y, 2) | bit(x >= y, 3) | bit(x == y, 4) |
               bit(x != y, 5) | bit(!(x < y), 6) | bit(!(x >= y), 7) | bit(isnan(x) || isnan(y), 8) |
               bit(!isnan(x) && !isnan(y), 9) | bit(isinf(x), 10) | bit(isfinite(x), 11) | bit(signbit(x), 12);
  mask[i] = m;
  double r;
  sel[3 * i + 0] = x < y ? x : y;
  asm("slct.f64.s32 %0, %1, %2, %3;" : "=d"(r) : "d"(x), "d"(y), "r"((int)i - 40));
  sel[3 * i + 1] = r;
  sel[3 * i + 2] = copysign(y, x);
}

extern "C" __global__ void int_compare(const long long *a, const long long *b, unsigned *mask, int *sel, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  long long x = a[i], y = b[i];
  int sx = (int)x, sy = (int)y;
  unsigned ux = sx, uy = sy;
  unsigned long long vx = x, vy = y;
  mask[i] = bit(sx < sy, 0) | bit(sx <= sy, 1) | bit(sx > sy, 2) | bit(sx >= sy, 3) | bit(sx == sy, 4) |
            bit(sx != sy, 5) | bit(ux < uy, 6) | bit(ux <= uy, 7) | bit(ux > uy, 8) | bit(ux >= uy, 9) |
            bit(x < y, 10) | bit(x >= y, 11) | bit(vx < vy, 12) | bit(vx >= vy, 13) | bit(x == y, 14);
  int r;
  sel[3 * i + 0] = sx > sy ? sx - sy : sy - sx;
  asm("slct.s32.s32 %0, %1, %2, %3;" : "=r"(r) : "r"(sx), "r"(sy), "r"(sx ^ sy));
  sel[3 * i + 1] = r;
  asm("set.lt.s32.u32 %0, %1, %2;" : "=r"(r) : "r"(ux), "r"(uy));
  sel[3 * i + 2] = r;
}
