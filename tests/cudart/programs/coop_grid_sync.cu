// A multi-phase grid reduction synchronised by cooperative_groups::this_grid().sync(), launched
// with cudaLaunchCooperativeKernel over as many blocks as the occupancy calculator says fit, and
// through cudaLaunchKernelExC's cooperative attribute; the device reports cooperative launches;
// a grid one block larger than fits is cudaErrorCooperativeLaunchTooLarge and runs nothing.
#include "check.h"

#include <cooperative_groups.h>
namespace cg = cooperative_groups;

// Each phase: every block sums its stripe of in (scaled by the phase) into partial[block]; after
// the grid syncs, block 0 adds the partials into out[phase]; the grid syncs before the next phase
// overwrites them.
__global__ void phases(const int *in, int *partial, int *out, int n, int count) {
  cg::grid_group g = cg::this_grid();
  __shared__ int s[256];
  for (int p = 0; p < count; p++) {
    int acc = 0;
    for (unsigned long long i = g.thread_rank(); i < (unsigned long long)n; i += g.size()) acc += in[i] * (p + 1);
    s[threadIdx.x] = acc;
    __syncthreads();
    for (unsigned k = blockDim.x / 2; k; k >>= 1) {
      if (threadIdx.x < k) s[threadIdx.x] += s[threadIdx.x + k];
      __syncthreads();
    }
    if (threadIdx.x == 0) partial[blockIdx.x] = s[0];
    g.sync();
    if (blockIdx.x == 0 && threadIdx.x == 0) {
      int t = 0;
      for (unsigned b = 0; b < gridDim.x; b++) t += partial[b];
      out[p] = t;
    }
    g.sync();
  }
}

int main() {
  int device = 0, coop = 0, sms = 0, per_sm = 0;
  CHECK(cudaGetDevice(&device));
  CHECK(cudaDeviceGetAttribute(&coop, cudaDevAttrCooperativeLaunch, device));
  EXPECT(coop == 1);
  CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, phases, 256, 0));
  EXPECT(per_sm >= 1);
  const int n = 100000, count = 4;
  // A grid that fits, kept small enough to run quickly: one block per multiprocessor.
  int blocks = sms;
  int *in, *partial, *out;
  CHECK(cudaMallocManaged(&in, n * sizeof(int)));
  CHECK(cudaMallocManaged(&partial, sms * per_sm * sizeof(int) + sizeof(int)));
  CHECK(cudaMallocManaged(&out, count * sizeof(int)));
  long long sum = 0;
  for (int i = 0; i < n; i++) sum += in[i] = i % 17 - 8;
  for (int p = 0; p < count; p++) out[p] = -1;
  int nn = n, cc = count;
  void *args[] = {&in, &partial, &out, &nn, &cc};
  CHECK(cudaLaunchCooperativeKernel((const void *)phases, dim3(blocks), dim3(256), args, 0, 0));
  CHECK(cudaDeviceSynchronize());
  for (int p = 0; p < count; p++) EXPECT(out[p] == (p + 1) * sum);

  // The same through cudaLaunchKernelExC and its cooperative attribute.
  for (int p = 0; p < count; p++) out[p] = -1;
  cudaLaunchAttribute attr;
  attr.id = cudaLaunchAttributeCooperative;
  attr.val.cooperative = 1;
  cudaLaunchConfig_t config = {};
  config.gridDim = dim3(blocks);
  config.blockDim = dim3(256);
  config.attrs = &attr;
  config.numAttrs = 1;
  CHECK(cudaLaunchKernelExC(&config, (const void *)phases, args));
  CHECK(cudaDeviceSynchronize());
  for (int p = 0; p < count; p++) EXPECT(out[p] == (p + 1) * sum);

  // One block more than the device holds at once: refused, nothing runs, not sticky.
  for (int p = 0; p < count; p++) out[p] = -1;
  CHECK_ERROR(cudaLaunchCooperativeKernel((const void *)phases, dim3(sms * per_sm + 1), dim3(256), args, 0, 0),
              cudaErrorCooperativeLaunchTooLarge);
  CHECK_ERROR(cudaGetLastError(), cudaErrorCooperativeLaunchTooLarge);
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());
  for (int p = 0; p < count; p++) EXPECT(out[p] == -1);

  CHECK(cudaFree(in));
  CHECK(cudaFree(partial));
  CHECK(cudaFree(out));
  return passed();
}
