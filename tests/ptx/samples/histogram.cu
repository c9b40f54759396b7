// A 64-bin histogram of bytes: each block counts into shared bins with shared atomics, then
// adds its bins to the global ones. A grid-stride loop covers the input.

#define BINS 64

extern "C" __global__ void histogram64(const unsigned char *data, unsigned *bins, int n) {
  __shared__ unsigned local[BINS];
  for (int b = threadIdx.x; b < BINS; b += blockDim.x) local[b] = 0;
  __syncthreads();
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
    atomicAdd(&local[data[i] % BINS], 1u);
  __syncthreads();
  for (int b = threadIdx.x; b < BINS; b += blockDim.x) atomicAdd(&bins[b], local[b]);
}
