// A 4-byte load from an address that is 2 bytes past a 4-byte boundary (the offset comes from
// the host, so nvcc cannot split the access into bytes).

extern "C" __global__ void misaligned(const char *base, int offset, int *out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const int *p = (const int *)(base + offset) + i;
  out[i] = *p; // BUG: misaligned unless offset is a multiple of 4
}
