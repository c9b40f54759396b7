// A shuffle whose member mask names all 32 lanes, executed by lanes 0-15 only.

extern "C" __global__ void shfl_inactive(const int *in, int *out) {
  int t = threadIdx.x, lane = t & 31;
  int v = in[t];
  if (lane < 16) v += __shfl_down_sync(0xffffffffu, v, 1); // BUG: lanes 16-31 are not there
  out[t] = v;
}

// The mask names the lanes that are there, and width 16 keeps lane 15 from reading lane 16
// (it gets its own value back).
extern "C" __global__ void shfl_inactive_ok(const int *in, int *out) {
  int t = threadIdx.x, lane = t & 31;
  int v = in[t];
  if (lane < 16) v += __shfl_down_sync(0x0000ffffu, v, 1, 16);
  out[t] = v;
}
