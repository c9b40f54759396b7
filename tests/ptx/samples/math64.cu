// 64-bit integer and double-precision work: the splitmix64 hash, and a degree-8 polynomial in
// double by Horner's rule (nvcc contracts each step into fma.rn.f64, so the reference uses fma)
// followed by a normalisation with division and square root.

extern "C" __global__ void splitmix64(const unsigned long long *seed, unsigned long long *out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  unsigned long long z = seed[i] + 0x9e3779b97f4a7c15ull * (unsigned long long)(i + 1);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  out[i] = z ^ (z >> 31);
}

extern "C" __global__ void poly64(const double *x, const double *coef, double *out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  double v = x[i], acc = coef[8];
  for (int k = 7; k >= 0; k--) acc = acc * v + coef[k];
  out[2 * i] = acc;
  out[2 * i + 1] = acc / sqrt(1.0 + v * v);
}
