// The fast approximate single-precision operations (the .approx PTX forms). The test checks each
// within the bound the PTX ISA and the CUDA Programming Guide state for it. x is an angle in
// [-pi, pi]; y is positive and normal.

#define OPS 12

extern "C" __global__ void f32_approx(const float *a, const float *b, float *out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float x = a[i], y = b[i];
  float *o = out + i * OPS;
  o[0] = __fdividef(x, y);
  o[1] = __sinf(x);
  o[2] = __cosf(x);
  o[3] = __expf(x);
  o[4] = __log2f(y);
  o[5] = __logf(y);
  o[6] = rsqrtf(y);
  o[7] = __exp10f(x);
  float r;
  asm("sqrt.approx.f32 %0, %1;" : "=f"(r) : "f"(y));
  o[8] = r;
  asm("rcp.approx.f32 %0, %1;" : "=f"(r) : "f"(y));
  o[9] = r;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x));
  o[10] = r;
  asm("tanh.approx.f32 %0, %1;" : "=f"(r) : "f"(x));
  o[11] = r;
}
