// nvcc-archs: 75 80 90
// A 64-bin histogram with per-block bins in shared memory, merged into global bins with
// atomics, as the CUDA samples' histogram does; the first kernel forgets to zero the shared
// bins (a planted bug: on a GPU shared memory starts with whatever the last block left there).

// bins[b] += how many in[i] have (in[i] & 63) == b. BUG: the shared bins are never zeroed.
extern "C" __global__ void hist_unzeroed(const unsigned char *in, unsigned *bins, int n) {
  __shared__ unsigned s[64];
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    atomicAdd(&s[in[i] & 63], 1u); // BUG
  __syncthreads();
  for (int b = threadIdx.x; b < 64; b += blockDim.x) atomicAdd(&bins[b], s[b]);
}

// The same, with the bins zeroed first.
extern "C" __global__ void hist_zeroed(const unsigned char *in, unsigned *bins, int n) {
  __shared__ unsigned s[64];
  for (int b = threadIdx.x; b < 64; b += blockDim.x) s[b] = 0;
  __syncthreads();
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) atomicAdd(&s[in[i] & 63], 1u);
  __syncthreads();
  for (int b = threadIdx.x; b < 64; b += blockDim.x) atomicAdd(&bins[b], s[b]);
}
