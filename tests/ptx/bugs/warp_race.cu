// Lanes of one warp exchange values through shared memory without __syncwarp: nothing orders
// a lane's write before another lane's read.

extern "C" __global__ void warp_race(const int *in, int *out) {
  __shared__ int s[32];
  int lane = threadIdx.x & 31;
  s[lane] = in[lane];          // BUG: written here...
  out[lane] = s[31 - lane];    // BUG: ...and read here by another lane
}

extern "C" __global__ void warp_race_ok(const int *in, int *out) {
  __shared__ int s[32];
  int lane = threadIdx.x & 31;
  s[lane] = in[lane];
  __syncwarp();
  out[lane] = s[31 - lane];
}
