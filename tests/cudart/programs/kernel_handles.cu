// What programs ask about their kernels by the kernel's address: a cudaKernel_t for it, its
// name, and how much dynamic shared memory a block may have so that a given number of blocks
// fit on one multiprocessor (the occupancy calculator's question asked the other way round).
#include "check.h"

#include <cstring>

__global__ void tile_sum(const float *in, float *out) {
  extern __shared__ float tile[];
  tile[threadIdx.x] = in[blockIdx.x * blockDim.x + threadIdx.x];
  __syncthreads();
  if (threadIdx.x == 0) {
    float s = 0;
    for (unsigned i = 0; i < blockDim.x; i++) s += tile[i];
    out[blockIdx.x] = s;
  }
}

__global__ void with_static_tile(float *out) {
  __shared__ float fixed[1024];  // 4 KiB of static shared memory
  fixed[threadIdx.x] = float(threadIdx.x);
  __syncthreads();
  out[threadIdx.x] = fixed[blockDim.x - 1 - threadIdx.x];
}

int main() {
  cudaKernel_t handle = nullptr;
  CHECK(cudaGetKernel(&handle, reinterpret_cast<const void *>(tile_sum)));
  EXPECT(handle != nullptr);
  CHECK_ERROR(cudaGetKernel(&handle, reinterpret_cast<const void *>(&main)), cudaErrorInvalidDeviceFunction);
  CHECK_ERROR(cudaGetKernel(nullptr, reinterpret_cast<const void *>(tile_sum)), cudaErrorInvalidValue);
  CHECK_ERROR(cudaGetLastError(), cudaErrorInvalidValue);

  const char *name = nullptr;
  CHECK(cudaFuncGetName(&name, reinterpret_cast<const void *>(tile_sum)));
  EXPECT(name && std::strcmp(name, "_Z8tile_sumPKfPf") == 0);
  CHECK_ERROR(cudaFuncGetName(nullptr, reinterpret_cast<const void *>(tile_sum)), cudaErrorInvalidValue);
  CHECK_ERROR(cudaFuncGetName(&name, reinterpret_cast<const void *>(&main)), cudaErrorInvalidDeviceFunction);
  cudaGetLastError();

  int per_sm = 0, reserved = 0;
  CHECK(cudaDeviceGetAttribute(&per_sm, cudaDevAttrMaxSharedMemoryPerMultiprocessor, 0));
  CHECK(cudaDeviceGetAttribute(&reserved, cudaDevAttrReservedSharedMemoryPerBlock, 0));
  cudaFuncAttributes attr;
  CHECK(cudaFuncGetAttributes(&attr, reinterpret_cast<const void *>(tile_sum)));
  size_t avail = 0;
  // Eight blocks share the multiprocessor's shared memory; two would get more than a kernel may ask.
  CHECK(cudaOccupancyAvailableDynamicSMemPerBlock(&avail, reinterpret_cast<const void *>(tile_sum), 8, 256));
  EXPECT(avail == size_t(per_sm / 8 - reserved));
  CHECK(cudaOccupancyAvailableDynamicSMemPerBlock(&avail, reinterpret_cast<const void *>(tile_sum), 2, 256));
  EXPECT(avail == size_t(attr.maxDynamicSharedSizeBytes));
  // What it says fits, fits: the calculator agrees that eight blocks run at once with that much.
  int blocks = 0;
  CHECK(cudaOccupancyAvailableDynamicSMemPerBlock(&avail, reinterpret_cast<const void *>(tile_sum), 8, 256));
  CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, reinterpret_cast<const void *>(tile_sum), 256, avail));
  EXPECT(blocks >= 8);
  CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, reinterpret_cast<const void *>(tile_sum), 256,
                                                      avail + 1024));
  EXPECT(blocks < 8);
  // Static shared memory counts against the share.
  CHECK(cudaOccupancyAvailableDynamicSMemPerBlock(&avail, reinterpret_cast<const void *>(with_static_tile), 8, 256));
  EXPECT(avail == size_t(per_sm / 8 - reserved - 4096));
  // More threads than a multiprocessor holds: no block size makes them fit.
  CHECK(cudaOccupancyAvailableDynamicSMemPerBlock(&avail, reinterpret_cast<const void *>(tile_sum), 64, 1024));
  EXPECT(avail == 0);
  CHECK_ERROR(cudaOccupancyAvailableDynamicSMemPerBlock(&avail, reinterpret_cast<const void *>(tile_sum), 0, 256),
              cudaErrorInvalidValue);
  cudaGetLastError();

  // The handle and the launch it stands for run the kernel, with the shared memory it was given.
  const int threads = 128, n = 4 * threads;
  float host[n], sums[4];
  for (int i = 0; i < n; i++) host[i] = float(i % 7);
  float *in, *out;
  CHECK(cudaMalloc(&in, sizeof host));
  CHECK(cudaMalloc(&out, sizeof sums));
  CHECK(cudaMemcpy(in, host, sizeof host, cudaMemcpyHostToDevice));
  void *args[] = {&in, &out};
  CHECK(cudaLaunchKernel(reinterpret_cast<const void *>(tile_sum), dim3(4), dim3(threads), args,
                         threads * sizeof(float), 0));
  CHECK(cudaMemcpy(sums, out, sizeof sums, cudaMemcpyDeviceToHost));
  for (int b = 0; b < 4; b++) {
    float want = 0;
    for (int i = 0; i < threads; i++) want += host[b * threads + i];
    EXPECT(sums[b] == want);
  }
  CHECK(cudaFree(in));
  CHECK(cudaFree(out));
  return passed();
}
