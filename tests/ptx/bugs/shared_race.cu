// Each thread reads the value another warp wrote, with no barrier in between.

extern "C" __global__ void shared_race(const int *in, int *out) {
  __shared__ int s[64];
  int t = threadIdx.x;
  s[t] = in[t];                // BUG: written here...
  out[t] = s[(t + 32) % 64];   // BUG: ...and read here by a thread of the other warp
}

extern "C" __global__ void shared_race_ok(const int *in, int *out) {
  __shared__ int s[64];
  int t = threadIdx.x;
  s[t] = in[t];
  __syncthreads();
  out[t] = s[(t + 32) % 64];
}
