// nvcc-G
// Sums of a block's values, two ways: a shared-memory tree (blockDim a power of two), and warp
// shuffles then one value per warp in shared memory (any multiple of 32). Out-of-range threads
// contribute zero. Each block writes its sum to out[blockIdx.x].

extern "C" __global__ void reduce_tree(const int *in, int *out, int n) {
  extern __shared__ int s[];
  int t = threadIdx.x, i = blockIdx.x * blockDim.x + t;
  s[t] = i < n ? in[i] : 0;
  __syncthreads();
  for (unsigned stride = blockDim.x / 2; stride > 0; stride >>= 1) {
    if (t < stride) s[t] += s[t + stride];
    __syncthreads();
  }
  if (t == 0) out[blockIdx.x] = s[0];
}

__device__ int warp_sum(int v) {
  for (int d = 16; d > 0; d >>= 1) v += __shfl_down_sync(0xffffffffu, v, d);
  return v;
}

extern "C" __global__ void reduce_warp(const int *in, int *out, int n) {
  __shared__ int per_warp[32];
  int t = threadIdx.x, i = blockIdx.x * blockDim.x + t, lane = t & 31, w = t >> 5;
  int v = warp_sum(i < n ? in[i] : 0);
  if (lane == 0) per_warp[w] = v;
  __syncthreads();
  if (w == 0) {
    v = lane < (int)(blockDim.x >> 5) ? per_warp[lane] : 0;
    v = warp_sum(v);
    if (lane == 0) out[blockIdx.x] = v;
  }
}
