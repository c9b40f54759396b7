// nvcc: -fmad=false
// IEEE single-precision arithmetic with every rounding of the correctly rounded operations.
// -fmad=false keeps each product and sum rounded on its own, as the C reference rounds them;
// fused results come only from explicit fmaf calls.

#define OPS 30

extern "C" __global__ void f32_ops(const float *a, const float *b, const float *c, float *out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float x = a[i], y = b[i], z = c[i];
  float *o = out + i * OPS;
  o[0] = x + y;
  o[1] = x - y;
  o[2] = x * y;
  o[3] = x / y;
  o[4] = sqrtf(x);
  o[5] = fmaf(x, y, z);
  o[6] = __frcp_rn(x);
  o[7] = fminf(x, y);
  o[8] = fmaxf(x, y);
  o[9] = fabsf(x);
  o[10] = -x;
  o[11] = x * y + z;
  o[12] = __fadd_rz(x, y);
  o[13] = __fadd_rd(x, y);
  o[14] = __fadd_ru(x, y);
  o[15] = __fmul_rz(x, y);
  o[16] = __fmul_rd(x, y);
  o[17] = __fmul_ru(x, y);
  o[18] = __fdiv_rz(x, y);
  o[19] = __fdiv_rd(x, y);
  o[20] = __fdiv_ru(x, y);
  o[21] = __fsqrt_rz(x);
  o[22] = __fsqrt_rd(x);
  o[23] = __fsqrt_ru(x);
  o[24] = __fmaf_rz(x, y, z);
  o[25] = __fmaf_rd(x, y, z);
  o[26] = __fmaf_ru(x, y, z);
  o[27] = __frcp_rz(x);
  o[28] = __frcp_rd(x);
  o[29] = __frcp_ru(x);
}
