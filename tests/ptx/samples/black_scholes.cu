// European call and put prices (Black-Scholes) with the polynomial approximation of the normal
// cumulative distribution, in single precision with the accurate library expf, logf and sqrtf.

__device__ float cnd(float d) {
  const float a1 = 0.31938153f, a2 = -0.356563782f, a3 = 1.781477937f, a4 = -1.821255978f, a5 = 1.330274429f;
  const float rsqrt2pi = 0.39894228040143267794f;
  float k = 1.0f / (1.0f + 0.2316419f * fabsf(d));
  float c = rsqrt2pi * expf(-0.5f * d * d) * (k * (a1 + k * (a2 + k * (a3 + k * (a4 + k * a5)))));
  return d > 0 ? 1.0f - c : c;
}

extern "C" __global__ void black_scholes(const float *price, const float *strike, const float *years, float *call,
                                         float *put, float riskfree, float volatility, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float s = price[i], x = strike[i], t = years[i];
  float sqrt_t = sqrtf(t);
  float d1 = (logf(s / x) + (riskfree + 0.5f * volatility * volatility) * t) / (volatility * sqrt_t);
  float d2 = d1 - volatility * sqrt_t;
  float discount = expf(-riskfree * t);
  call[i] = s * cnd(d1) - x * discount * cnd(d2);
  put[i] = x * discount * (1.0f - cnd(d2)) - s * (1.0f - cnd(d1));
}
