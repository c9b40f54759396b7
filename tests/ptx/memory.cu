// State spaces and access widths: __constant__ tables and __device__ variables with
// initialisers (the test also reads and writes them through gcap_module_get_global), vector
// loads and stores, 8- and 16-bit accesses with sign and zero extension, the non-coherent load
// (__ldg), and generic pointers that a callee cannot tell apart (shared or global).

__constant__ float coeffs[8] = {1.0f, -2.0f, 0.5f, 4.0f, -0.25f, 8.0f, 3.0f, -1.5f};
__constant__ int table[16] = {3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8, 9, 7, 9, 3};
__device__ int bias = 42;
__device__ double scales[3] = {0.5, 2.0, -3.0};
__device__ unsigned long long launches; // zero-initialised; counts the threads that ran

// Horner's rule over the constant coefficients, then a table lookup at a data-dependent index.
extern "C" __global__ void constants(const float *x, float *y, int *z, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float v = x[i], acc = 0.0f;
  for (int k = 7; k >= 0; k--) acc = __fadd_rn(__fmul_rn(acc, v), coeffs[k]);
  y[i] = acc;
  z[i] = table[(i * 5) & 15] + bias;
  atomicAdd(&launches, 1ull);
}

extern "C" __global__ void globals(double *out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  out[i] = scales[i % 3] * (double)(i + bias);
}

// float4 and int2 copies with a change on the way.
extern "C" __global__ void vectors(const float4 *a, float4 *b, const int2 *c, int2 *d, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float4 v = a[i];
  b[i] = make_float4(v.w, v.z, v.y, v.x);
  int2 p = c[i];
  d[i] = make_int2(p.x + p.y, p.x - p.y);
}

extern "C" __global__ void narrow(const signed char *s8, const unsigned char *u8, const short *s16,
                                  const unsigned short *u16, int *out, unsigned char *bytes, short *halves, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  out[4 * i + 0] = s8[i];
  out[4 * i + 1] = u8[i];
  out[4 * i + 2] = s16[i];
  out[4 * i + 3] = u16[i];
  bytes[i] = (unsigned char)(u8[i] + 1);
  halves[i] = (short)(s16[i] * 3);
}

extern "C" __global__ void readonly(const float *__restrict__ a, float *__restrict__ b, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  b[i] = __ldg(&a[i]) + __ldg(&a[(i + 1) % n]);
}

// Not inlined, so the pointer stays generic: the same code reads shared memory and global memory.
__device__ __noinline__ float sum3(const float *p, unsigned *where) {
  *where = (__isShared(p) ? 1u : 0u) | (__isGlobal(p) ? 2u : 0u) | (__isLocal(p) ? 4u : 0u);
  return p[0] + p[1] + p[2];
}

extern "C" __global__ void generic(const float *a, float *out, unsigned *where, int n) {
  __shared__ float tile[66];
  int t = threadIdx.x, i = blockIdx.x * blockDim.x + t;
  tile[t] = i < n ? a[i] : 0.0f;
  if (t < 2) tile[blockDim.x + t] = i + blockDim.x < n ? a[i + blockDim.x] : 0.0f;
  __syncthreads();
  if (i + 2 >= n) return;
  float local3[3] = {a[i], 2.0f * a[i], 3.0f * a[i]};
  out[3 * i + 0] = sum3(&tile[t], &where[3 * i + 0]);
  out[3 * i + 1] = sum3(&a[i], &where[3 * i + 1]);
  out[3 * i + 2] = sum3(local3, &where[3 * i + 2]);
}
