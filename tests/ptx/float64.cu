// nvcc: -fmad=false
// IEEE double-precision arithmetic with every rounding of the correctly rounded operations;
// -fmad=false as in float32.cu.

#define OPS 30

extern "C" __global__ void f64_ops(const double *a, const double *b, const double *c, double *out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  double x = a[i], y = b[i], z = c[i];
  double *o = out + i * OPS;
  o[0] = x + y;
  o[1] = x - y;
  o[2] = x * y;
  o[3] = x / y;
  o[4] = sqrt(x);
  o[5] = fma(x, y, z);
  o[6] = __drcp_rn(x);
  o[7] = fmin(x, y);
  o[8] = fmax(x, y);
  o[9] = fabs(x);
  o[10] = -x;
  o[11] = x * y + z;
  o[12] = __dadd_rz(x, y);
  o[13] = __dadd_rd(x, y);
  o[14] = __dadd_ru(x, y);
  o[15] = __dmul_rz(x, y);
  o[16] = __dmul_rd(x, y);
  o[17] = __dmul_ru(x, y);
  o[18] = __ddiv_rz(x, y);
  o[19] = __ddiv_rd(x, y);
  o[20] = __ddiv_ru(x, y);
  o[21] = __dsqrt_rz(x);
  o[22] = __dsqrt_rd(x);
  o[23] = __dsqrt_ru(x);
  o[24] = __fma_rz(x, y, z);
  o[25] = __fma_rd(x, y, z);
  o[26] = __fma_ru(x, y, z);
  o[27] = __drcp_rz(x);
  o[28] = __drcp_rd(x);
  o[29] = __drcp_ru(x);
}
