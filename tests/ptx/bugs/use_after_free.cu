// A correct kernel; the test frees `in` before launching it, so its first load touches freed
// memory.

extern "C" __global__ void use_after_free(const float *in, float *out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  out[i] = in[i] * 3.0f; // BUG: in was freed by the host
}
