// nvcc-archs: 75 80 90
// Shared-memory building blocks as the CUDA samples and the CUDA C++ best practices guide
// teach them: a transpose through a padded tile, a 1-D stencil with halo cells, a bitonic sort
// of key-value pairs, a work-efficient (Blelloch) scan, a block radix-sort pass, an
// atomicCAS-based float maximum, and a grid-stride loop.

// out (w x h) = the transpose of in (h x w), through a 32 x 33 tile; blocks of 32 x 8 threads.
extern "C" __global__ void transpose_padded(const float *in, float *out, int w, int h) {
  __shared__ float tile[32][33];
  int x = blockIdx.x * 32 + threadIdx.x, y = blockIdx.y * 32 + threadIdx.y;
  for (int j = 0; j < 32; j += 8)
    if (x < w && y + j < h) tile[threadIdx.y + j][threadIdx.x] = in[(size_t)(y + j) * w + x];
  __syncthreads();
  x = blockIdx.y * 32 + threadIdx.x;
  y = blockIdx.x * 32 + threadIdx.y;
  for (int j = 0; j < 32; j += 8)
    if (x < h && y + j < w) out[(size_t)(y + j) * h + x] = tile[threadIdx.x][threadIdx.y + j];
}

#define RADIUS 3

// out[i] = sum over k in [-3, 3] of (k + 4) * in[i + k] (zero outside [0, n)), through a shared
// copy of the block's values with 3 halo cells on each side. Dynamic shared memory:
// (blockDim.x + 6) ints.
extern "C" __global__ void stencil_halo(const int *in, int *out, int n) {
  extern __shared__ int s[];
  int t = threadIdx.x, i = blockIdx.x * blockDim.x + t;
  s[t + RADIUS] = i < n ? in[i] : 0;
  if (t < RADIUS) {
    int l = i - RADIUS, r = i + blockDim.x;
    s[t] = l >= 0 && l < n ? in[l] : 0;
    s[t + RADIUS + blockDim.x] = r < n ? in[r] : 0;
  }
  __syncthreads();
  if (i >= n) return;
  int acc = 0;
  for (int k = -RADIUS; k <= RADIUS; k++) acc += (k + 4) * s[t + RADIUS + k];
  out[i] = acc;
}

// Sorts each segment of 2 * blockDim.x (a power of two) key-value pairs by key, ascending,
// with a bitonic network in shared memory; a short last segment is padded with INT_MAX keys.
extern "C" __global__ void bitonic_kv(int *keys, int *vals, int n) {
  extern __shared__ int sh[];
  int seg = 2 * blockDim.x;
  int *sk = sh, *sv = sh + seg;
  int base = blockIdx.x * seg;
  for (int j = threadIdx.x; j < seg; j += blockDim.x) {
    bool in = base + j < n;
    sk[j] = in ? keys[base + j] : 0x7fffffff;
    sv[j] = in ? vals[base + j] : -1;
  }
  __syncthreads();
  for (int size = 2; size <= seg; size <<= 1) {
    for (int stride = size / 2; stride > 0; stride >>= 1) {
      int t = threadIdx.x;
      int lo = 2 * t - (t & (stride - 1)), hi = lo + stride;
      bool up = (lo & size) == 0;
      if ((sk[lo] > sk[hi]) == up) {
        int k = sk[lo], v = sv[lo];
        sk[lo] = sk[hi];
        sv[lo] = sv[hi];
        sk[hi] = k;
        sv[hi] = v;
      }
      __syncthreads();
    }
  }
  for (int j = threadIdx.x; j < seg; j += blockDim.x)
    if (base + j < n) {
      keys[base + j] = sk[j];
      vals[base + j] = sv[j];
    }
}

// Exclusive scan of each segment of 2 * blockDim.x (a power of two) ints, up-sweep then
// down-sweep; sums[b] = the segment's total. Dynamic shared memory: 2 * blockDim.x ints.
extern "C" __global__ void blelloch_scan(const int *in, int *out, int *sums, int n) {
  extern __shared__ int s[];
  int t = threadIdx.x, seg = 2 * blockDim.x, base = blockIdx.x * seg;
  s[2 * t] = base + 2 * t < n ? in[base + 2 * t] : 0;
  s[2 * t + 1] = base + 2 * t + 1 < n ? in[base + 2 * t + 1] : 0;
  int offset = 1;
  for (int d = seg >> 1; d > 0; d >>= 1) {
    __syncthreads();
    if (t < d) {
      int a = offset * (2 * t + 1) - 1, b = offset * (2 * t + 2) - 1;
      s[b] += s[a];
    }
    offset <<= 1;
  }
  if (t == 0) {
    sums[blockIdx.x] = s[seg - 1];
    s[seg - 1] = 0;
  }
  for (int d = 1; d < seg; d <<= 1) {
    offset >>= 1;
    __syncthreads();
    if (t < d) {
      int a = offset * (2 * t + 1) - 1, b = offset * (2 * t + 2) - 1;
      int x = s[a];
      s[a] = s[b];
      s[b] += x;
    }
  }
  __syncthreads();
  if (base + 2 * t < n) out[base + 2 * t] = s[2 * t];
  if (base + 2 * t + 1 < n) out[base + 2 * t + 1] = s[2 * t + 1];
}

// One pass of a block radix sort: each block's keys (blockDim.x of them, whole warps; a short
// last block pads with 0xffffffff) are sorted stably by bits [shift, shift + 4) through four
// one-bit splits (ballot ranks within warps, warp totals in shared memory), and digits[16 * b
// + d] counts the block's keys of digit d.
extern "C" __global__ void radix_pass(const unsigned *in, unsigned *out, int *digits, int shift, int n) {
  __shared__ unsigned keys[1024];
  __shared__ int zeros_before[33];
  __shared__ int counts[16];
  int t = threadIdx.x, lane = t & 31, w = t >> 5, nwarps = blockDim.x >> 5;
  int i = blockIdx.x * blockDim.x + t;
  unsigned k = i < n ? in[i] : 0xffffffffu;
  if (t < 16) counts[t] = 0;
  for (int bit = shift; bit < shift + 4; bit++) {
    bool one = (k >> bit) & 1;
    unsigned zm = __ballot_sync(0xffffffffu, !one);
    if (lane == 0) zeros_before[w + 1] = __popc(zm);
    __syncthreads();
    if (t == 0) {
      zeros_before[0] = 0;
      for (int j = 1; j <= nwarps; j++) zeros_before[j] += zeros_before[j - 1];
    }
    __syncthreads();
    int total_zeros = zeros_before[nwarps];
    unsigned below = (1u << lane) - 1;
    int zrank = zeros_before[w] + __popc(zm & below);
    int orank = total_zeros + (w * 32 - zeros_before[w]) + __popc(~zm & below);
    keys[one ? orank : zrank] = k;
    __syncthreads();
    k = keys[t];
    __syncthreads();
  }
  // The padding keys (all bits set) sort after the block's real keys.
  int valid = min((int)blockDim.x, n - (int)(blockIdx.x * blockDim.x));
  if (t < valid) atomicAdd(&counts[(k >> shift) & 15], 1);
  __syncthreads();
  if (t < valid) out[i] = k;
  if (t < 16) digits[16 * blockIdx.x + t] = counts[t];
}

// *result = the largest of in[0..n) (floats, any signs), by a compare-and-swap loop on the
// bits of a float; grid-stride. *result starts at -INFINITY.
__device__ void atomic_max_float(float *addr, float v) {
  int *p = (int *)addr;
  int old = *(volatile int *)p;
  while (__int_as_float(old) < v) {
    int seen = atomicCAS(p, old, __float_as_int(v));
    if (seen == old) break;
    old = seen;
  }
}

extern "C" __global__ void float_max(const float *in, float *result, int n) {
  float m = -INFINITY;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) m = fmaxf(m, in[i]);
  atomic_max_float(result, m);
}

// y = a x + b y over n floats with a grid smaller than the data (grid-stride).
extern "C" __global__ void axpby_grid_stride(float a, const float *x, float b, float *y, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) y[i] = a * x[i] + b * y[i];
}
