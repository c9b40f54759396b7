// Conversions: float to integer and back with each rounding, float to and from double, float to
// and from half, rounding to integral values, and integer narrowing with and without saturation.
// PTX float-to-integer conversions saturate and turn NaN into 0; the intrinsics used here have
// exactly that behaviour, where a C++ cast would be undefined out of range.
#include <cuda_fp16.h>

extern "C" __global__ void f32_to_int(const float *a, int *o32, long long *o64, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float x = a[i];
  int *p = o32 + 8 * i;
  p[0] = __float2int_rn(x);
  p[1] = __float2int_rz(x);
  p[2] = __float2int_rd(x);
  p[3] = __float2int_ru(x);
  p[4] = __float2uint_rn(x);
  p[5] = __float2uint_rz(x);
  p[6] = __float2uint_rd(x);
  p[7] = __float2uint_ru(x);
  long long *q = o64 + 8 * i;
  q[0] = __float2ll_rn(x);
  q[1] = __float2ll_rz(x);
  q[2] = __float2ll_rd(x);
  q[3] = __float2ll_ru(x);
  q[4] = __float2ull_rn(x);
  q[5] = __float2ull_rz(x);
  q[6] = __float2ull_rd(x);
  q[7] = __float2ull_ru(x);
}

extern "C" __global__ void f64_to_int(const double *a, int *o32, long long *o64, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  double x = a[i];
  int *p = o32 + 8 * i;
  p[0] = __double2int_rn(x);
  p[1] = __double2int_rz(x);
  p[2] = __double2int_rd(x);
  p[3] = __double2int_ru(x);
  p[4] = __double2uint_rn(x);
  p[5] = __double2uint_rz(x);
  p[6] = __double2uint_rd(x);
  p[7] = __double2uint_ru(x);
  long long *q = o64 + 8 * i;
  q[0] = __double2ll_rn(x);
  q[1] = __double2ll_rz(x);
  q[2] = __double2ll_rd(x);
  q[3] = __double2ll_ru(x);
  q[4] = __double2ull_rn(x);
  q[5] = __double2ull_rz(x);
  q[6] = __double2ull_rd(x);
  q[7] = __double2ull_ru(x);
}

// From a 64-bit integer: the low half as signed and unsigned 32-bit, and the whole value.
extern "C" __global__ void int_to_float(const long long *a, float *of, double *od, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  long long v = a[i];
  int s = (int)v;
  unsigned u = (unsigned)v;
  unsigned long long uv = (unsigned long long)v;
  float *p = of + 16 * i;
  p[0] = __int2float_rn(s);
  p[1] = __int2float_rz(s);
  p[2] = __int2float_rd(s);
  p[3] = __int2float_ru(s);
  p[4] = __uint2float_rn(u);
  p[5] = __uint2float_rz(u);
  p[6] = __uint2float_rd(u);
  p[7] = __uint2float_ru(u);
  p[8] = __ll2float_rn(v);
  p[9] = __ll2float_rz(v);
  p[10] = __ll2float_rd(v);
  p[11] = __ll2float_ru(v);
  p[12] = __ull2float_rn(uv);
  p[13] = __ull2float_rz(uv);
  p[14] = __ull2float_rd(uv);
  p[15] = __ull2float_ru(uv);
  double *q = od + 10 * i;
  q[0] = __int2double_rn(s);
  q[1] = __uint2double_rn(u);
  q[2] = __ll2double_rn(v);
  q[3] = __ll2double_rz(v);
  q[4] = __ll2double_rd(v);
  q[5] = __ll2double_ru(v);
  q[6] = __ull2double_rn(uv);
  q[7] = __ull2double_rz(uv);
  q[8] = __ull2double_rd(uv);
  q[9] = __ull2double_ru(uv);
}

// Between float and double, and from a value to the integral values near it.
extern "C" __global__ void float_double(const double *a, float *of, double *od, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  double x = a[i];
  float *p = of + 9 * i;
  p[0] = __double2float_rn(x);
  p[1] = __double2float_rz(x);
  p[2] = __double2float_rd(x);
  p[3] = __double2float_ru(x);
  float f = p[0];
  p[4] = rintf(f);
  p[5] = truncf(f);
  p[6] = floorf(f);
  p[7] = ceilf(f);
  p[8] = __saturatef(f);
  double *q = od + 5 * i;
  q[0] = (double)f;
  q[1] = rint(x);
  q[2] = trunc(x);
  q[3] = floor(x);
  q[4] = ceil(x);
}

// Single to half with each rounding, and each result back to single (exactly).
extern "C" __global__ void half_convert(const float *a, unsigned short *oh, float *of, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float x = a[i];
  __half h[4] = {__float2half_rn(x), __float2half_rz(x), __float2half_rd(x), __float2half_ru(x)};
  for (int k = 0; k < 4; k++) {
    oh[4 * i + k] = __half_as_ushort(h[k]);
    of[4 * i + k] = __half2float(h[k]);
  }
}

// Integer narrowing: plain (truncating, then extended back) and saturating (cvt.sat, which nvcc
// only emits for some patterns, hence inline PTX).
extern "C" __global__ void int_narrow(const long long *a, int *out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  long long v = a[i];
  int s = (int)v;
  int *o = out + 12 * i;
  o[0] = (signed char)s;
  o[1] = (unsigned char)s;
  o[2] = (short)s;
  o[3] = (unsigned short)s;
  int r;
  asm("cvt.sat.s8.s32 %0, %1;" : "=r"(r) : "r"(s));
  o[4] = r;
  asm("cvt.sat.u8.s32 %0, %1;" : "=r"(r) : "r"(s));
  o[5] = r;
  asm("cvt.sat.s16.s32 %0, %1;" : "=r"(r) : "r"(s));
  o[6] = r;
  asm("cvt.sat.u16.s32 %0, %1;" : "=r"(r) : "r"(s));
  o[7] = r;
  asm("cvt.sat.s32.s64 %0, %1;" : "=r"(r) : "l"(v));
  o[8] = r;
  asm("cvt.sat.u32.s64 %0, %1;" : "=r"(r) : "l"(v));
  o[9] = r;
  asm("cvt.sat.s32.u32 %0, %1;" : "=r"(r) : "r"(s));
  o[10] = r;
  asm("cvt.rni.sat.s8.f32 %0, %1;" : "=r"(r) : "f"((float)s * 0.01f));
  o[11] = r;
}
