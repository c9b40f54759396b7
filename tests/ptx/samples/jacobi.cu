// nvcc: -fmad=false
// One sweep of Jacobi relaxation for -u'' = f on a 1-D grid with fixed ends:
// out[i] = (in[i-1] + in[i+1] + h2 * f[i]) * 0.5. The host runs several sweeps, swapping buffers.

extern "C" __global__ void jacobi_sweep(const float *in, const float *f, float *out, float h2, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  if (i == 0 || i == n - 1) {
    out[i] = in[i];
    return;
  }
  out[i] = (in[i - 1] + in[i + 1] + h2 * f[i]) * 0.5f;
}
