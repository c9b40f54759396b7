// nvcc-archs: 80 90
// A transformer's training kernels in bfloat16, in the style of small GPT training code bases:
// activations and parameters in bf16, arithmetic in f32 (reductions by warp shuffles) or in
// packed bf16x2 (__hadd2, __hmul2, __hfma2), results rounded with __float2bfloat16.
#include <cuda_bf16.h>

typedef __nv_bfloat16 bf16;
typedef __nv_bfloat162 bf162;

#define GELU_SCALE 0.7978845608028654f /* sqrt(2 / pi) */

__device__ float warp_sum(float v) {
  for (int d = 16; d > 0; d >>= 1) v += __shfl_xor_sync(0xffffffffu, v, d);
  return v;
}

__device__ float warp_max(float v) {
  for (int d = 16; d > 0; d >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, d));
  return v;
}

// Layer norm forward, one warp per row: out = (x - mean) * rstd * w + b in f32, rounded to bf16;
// mean and rstd kept in f32 for the backward pass.
extern "C" __global__ void layernorm_bf16_fwd(bf16 *out, float *mean, float *rstd, const bf16 *inp,
                                              const bf16 *weight, const bf16 *bias, int rows, int cols) {
  int lane = threadIdx.x & 31;
  int r = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
  if (r >= rows) return;
  const bf16 *x = inp + (size_t)r * cols;
  float s = 0.0f;
  for (int c = lane; c < cols; c += 32) s += __bfloat162float(x[c]);
  float m = warp_sum(s) / cols;
  float v = 0.0f;
  for (int c = lane; c < cols; c += 32) {
    float d = __bfloat162float(x[c]) - m;
    v += d * d;
  }
  float rs = rsqrtf(warp_sum(v) / cols + 1e-5f);
  bf16 *o = out + (size_t)r * cols;
  for (int c = lane; c < cols; c += 32) {
    float n = rs * (__bfloat162float(x[c]) - m);
    o[c] = __float2bfloat16(n * __bfloat162float(weight[c]) + __bfloat162float(bias[c]));
  }
  if (lane == 0) {
    mean[r] = m;
    rstd[r] = rs;
  }
}

// Layer norm backward, one warp per row, from the forward pass's mean and rstd: dinp in bf16
// (overwritten), dweight and dbias in f32 accumulated across rows with atomicAdd.
extern "C" __global__ void layernorm_bf16_bwd(bf16 *dinp, float *dweight, float *dbias, const bf16 *dout,
                                              const bf16 *inp, const bf16 *weight, const float *mean,
                                              const float *rstd, int rows, int cols) {
  int lane = threadIdx.x & 31;
  int r = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
  if (r >= rows) return;
  const bf16 *x = inp + (size_t)r * cols, *dy = dout + (size_t)r * cols;
  float m = mean[r], rs = rstd[r];
  float dmean = 0.0f, dnorm_mean = 0.0f;
  for (int c = lane; c < cols; c += 32) {
    float n = (__bfloat162float(x[c]) - m) * rs;
    float dn = __bfloat162float(weight[c]) * __bfloat162float(dy[c]);
    dmean += dn;
    dnorm_mean += dn * n;
  }
  dmean = warp_sum(dmean) / cols;
  dnorm_mean = warp_sum(dnorm_mean) / cols;
  for (int c = lane; c < cols; c += 32) {
    float n = (__bfloat162float(x[c]) - m) * rs, g = __bfloat162float(dy[c]);
    float dn = __bfloat162float(weight[c]) * g;
    atomicAdd(&dbias[c], g);
    atomicAdd(&dweight[c], n * g);
    dinp[(size_t)r * cols + c] = __float2bfloat16((dn - dmean - n * dnorm_mean) * rs);
  }
}

// Attention scores: scale, causal mask (key > query is -inf) and softmax of each row of a
// (T x T) score matrix per head, one warp per row, in f32, rounded to bf16.
extern "C" __global__ void attn_softmax_bf16(bf16 *out, const bf16 *scores, int rows, int T, float scale) {
  int lane = threadIdx.x & 31;
  int r = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
  if (r >= rows) return;
  int q = r % T; /* the query's position: keys 0..q are visible */
  const bf16 *x = scores + (size_t)r * T;
  float m = -INFINITY;
  for (int c = lane; c <= q; c += 32) m = fmaxf(m, scale * __bfloat162float(x[c]));
  m = warp_max(m);
  float s = 0.0f;
  for (int c = lane; c <= q; c += 32) s += expf(scale * __bfloat162float(x[c]) - m);
  float inv = 1.0f / warp_sum(s);
  bf16 *o = out + (size_t)r * T;
  for (int c = lane; c < T; c += 32)
    o[c] = __float2bfloat16(c <= q ? expf(scale * __bfloat162float(x[c]) - m) * inv : 0.0f);
}

__device__ float gelu(float x) {
  float cube = 0.044715f * x * x * x;
  return 0.5f * x * (1.0f + tanhf(GELU_SCALE * (x + cube)));
}

// GELU (tanh form) forward, two values a thread through bf16x2 loads; an odd tail alone.
extern "C" __global__ void gelu_bf16_fwd(bf16 *out, const bf16 *inp, int n) {
  int i = 2 * (blockIdx.x * blockDim.x + threadIdx.x);
  if (i + 1 < n) {
    float2 x = __bfloat1622float2(*(const bf162 *)(inp + i));
    *(bf162 *)(out + i) = __floats2bfloat162_rn(gelu(x.x), gelu(x.y));
  } else if (i < n) {
    out[i] = __float2bfloat16(gelu(__bfloat162float(inp[i])));
  }
}

// GELU backward: dinp = gelu'(x) * dout, in f32, rounded to bf16.
extern "C" __global__ void gelu_bf16_bwd(bf16 *dinp, const bf16 *inp, const bf16 *dout, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float x = __bfloat162float(inp[i]);
  float cube = 0.044715f * x * x * x;
  float arg = GELU_SCALE * (x + cube);
  float th = tanhf(arg);
  float ch = coshf(arg);
  float sech2 = 1.0f / (ch * ch);
  float grad = 0.5f * (1.0f + th) + x * 0.5f * sech2 * GELU_SCALE * (1.0f + 3.0f * 0.044715f * x * x);
  dinp[i] = __float2bfloat16(grad * __bfloat162float(dout[i]));
}

// Residual connection with a bias: out = (x + bias) + residual in packed bf16x2 arithmetic,
// each addition rounded to bf16. cols is even.
extern "C" __global__ void residual_bias_bf16(bf16 *out, const bf16 *x, const bf16 *residual, const bf16 *bias,
                                              int rows, int cols) {
  int p = blockIdx.x * blockDim.x + threadIdx.x; /* a pair of columns */
  if (p >= rows * cols / 2) return;
  int c = (2 * p) % cols;
  bf162 xb = __hadd2(((const bf162 *)x)[p], *(const bf162 *)(bias + c));
  ((bf162 *)out)[p] = __hadd2(xb, ((const bf162 *)residual)[p]);
}

// Fused bias + GELU: t = x + bias in bf16x2 (rounded to bf16), GELU of t in f32, rounded.
extern "C" __global__ void bias_gelu_bf16(bf16 *out, const bf16 *x, const bf16 *bias, int rows, int cols) {
  int p = blockIdx.x * blockDim.x + threadIdx.x;
  if (p >= rows * cols / 2) return;
  int c = (2 * p) % cols;
  float2 t = __bfloat1622float2(__hadd2(((const bf162 *)x)[p], *(const bf162 *)(bias + c)));
  ((bf162 *)out)[p] = __floats2bfloat162_rn(gelu(t.x), gelu(t.y));
}

// Scale and shift in packed bf16: out = x * gamma + beta with one __hfma2 (one rounding), and
// the product alone with __hmul2.
extern "C" __global__ void scale_shift_bf16(bf16 *out, bf16 *prod, const bf16 *x, const bf16 *gamma,
                                            const bf16 *beta, int n2) {
  int p = blockIdx.x * blockDim.x + threadIdx.x;
  if (p >= n2) return;
  bf162 xv = ((const bf162 *)x)[p], g = ((const bf162 *)gamma)[p];
  ((bf162 *)out)[p] = __hfma2(xv, g, ((const bf162 *)beta)[p]);
  ((bf162 *)prod)[p] = __hmul2(xv, g);
}

// AdamW with bf16 parameters and f32 master weights and moments: the update runs on the master
// copy, which is then rounded into the bf16 parameters.
extern "C" __global__ void adamw_bf16(bf16 *params, float *master, const bf16 *grads, float *m, float *v, int n,
                                      float lr, float beta1, float beta2, float b1corr, float b2corr, float eps,
                                      float wd) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float g = __bfloat162float(grads[i]);
  float mm = beta1 * m[i] + (1.0f - beta1) * g;
  float vv = beta2 * v[i] + (1.0f - beta2) * g * g;
  m[i] = mm;
  v[i] = vv;
  float mhat = mm / b1corr, vhat = vv / b2corr;
  float w = master[i];
  w -= lr * (mhat / (sqrtf(vhat) + eps) + wd * w);
  master[i] = w;
  params[i] = __float2bfloat16(w);
}

// Fused cross-entropy forward and backward over bf16 logits, one warp per row: the loss
// log(sum exp) + max - logit[target] in f32, and dlogits = (softmax - onehot) / rows in bf16.
extern "C" __global__ void crossentropy_bf16(float *losses, bf16 *dlogits, const bf16 *logits, const int *targets,
                                             int rows, int V) {
  int lane = threadIdx.x & 31;
  int r = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
  if (r >= rows) return;
  const bf16 *x = logits + (size_t)r * V;
  float m = -INFINITY;
  for (int c = lane; c < V; c += 32) m = fmaxf(m, __bfloat162float(x[c]));
  m = warp_max(m);
  float s = 0.0f;
  for (int c = lane; c < V; c += 32) s += expf(__bfloat162float(x[c]) - m);
  s = warp_sum(s);
  int t = targets[r];
  if (lane == 0) losses[r] = logf(s) + m - __bfloat162float(x[t]);
  float inv = 1.0f / s, scale = 1.0f / rows;
  for (int c = lane; c < V; c += 32) {
    float p = expf(__bfloat162float(x[c]) - m) * inv;
    dlogits[(size_t)r * V + c] = __float2bfloat16((p - (c == t ? 1.0f : 0.0f)) * scale);
  }
}

// Warp reductions in packed bf16: each lane holds a bf16x2 pair, the warp sums (__hadd2) and
// takes the maximum (__hmax2) of the pairs by __shfl_xor_sync, rounding to bf16 at every step.
extern "C" __global__ void warp_reduce_bf16(bf162 *sums, bf162 *maxes, const bf162 *in, int n2) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  bf162 zero = __floats2bfloat162_rn(0.0f, 0.0f), lowest = __floats2bfloat162_rn(-INFINITY, -INFINITY);
  bf162 s = i < n2 ? in[i] : zero, m = i < n2 ? in[i] : lowest;
  for (int d = 16; d > 0; d >>= 1) {
    s = __hadd2(s, __shfl_xor_sync(0xffffffffu, s, d));
    m = __hmax2(m, __shfl_xor_sync(0xffffffffu, m, d));
  }
  if ((threadIdx.x & 31) == 0) {
    sums[i / 32] = s;
    maxes[i / 32] = m;
  }
}
