// Barriers: __syncthreads in a loop, the reducing barriers (__syncthreads_count/and/or),
// __syncwarp between shared-memory phases of one warp, and __threadfence in the "last block
// finishes the job" pattern.

// Predicates over the block: how many threads have an odd value, whether all do, whether any
// does. Thread 0 of each block writes the three results.
extern "C" __global__ void vote_block(const int *a, int *out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int odd = i < n && (a[i] & 1);
  int count = __syncthreads_count(odd);
  int all = __syncthreads_and(odd);
  int any = __syncthreads_or(odd);
  if (threadIdx.x == 0) {
    out[3 * blockIdx.x + 0] = count;
    out[3 * blockIdx.x + 1] = all;
    out[3 * blockIdx.x + 2] = any;
  }
}

// Repeated smoothing of a block's values in shared memory: two barriers per step.
extern "C" __global__ void smooth(const int *in, int *out, int steps) {
  __shared__ int v[64];
  int t = threadIdx.x, m = blockDim.x, base = blockIdx.x * m;
  v[t] = in[base + t];
  __syncthreads();
  for (int s = 0; s < steps; s++) {
    int left = v[(t + m - 1) % m], right = v[(t + 1) % m];
    __syncthreads();
    v[t] = (left + 2 * v[t] + right) / 4;
    __syncthreads();
  }
  out[base + t] = v[t];
}

// Each warp reverses its 32 values through shared memory; __syncwarp orders the phases.
extern "C" __global__ void warp_reverse(const int *in, int *out) {
  __shared__ int s[128];
  int t = threadIdx.x, lane = t & 31, w = t & ~31;
  s[t] = in[blockIdx.x * blockDim.x + t];
  __syncwarp();
  int r = s[w + 31 - lane];
  __syncwarp();
  s[t] = r * 2;
  __syncwarp();
  out[blockIdx.x * blockDim.x + t] = s[w + (lane ^ 1)];
}

// Every block adds up its slice and publishes the sum; the last block to finish adds the sums.
// __threadfence makes the sum visible before the ticket is taken.
extern "C" __global__ void last_block_sum(const int *in, int *partial, unsigned *ticket, int *total, int n) {
  __shared__ int sum;
  __shared__ bool last;
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (threadIdx.x == 0) sum = 0;
  __syncthreads();
  if (i < n) atomicAdd(&sum, in[i]);
  __syncthreads();
  if (threadIdx.x == 0) {
    partial[blockIdx.x] = sum;
    __threadfence();
    last = atomicInc(ticket, gridDim.x) == gridDim.x - 1;
  }
  __syncthreads();
  if (last && threadIdx.x == 0) {
    int s = 0;
    for (unsigned b = 0; b < gridDim.x; b++) s += ((volatile int *)partial)[b];
    *total = s;
  }
}
