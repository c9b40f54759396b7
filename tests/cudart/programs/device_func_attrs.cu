// What programs ask about their kernels before they size a launch: cudaFuncGetAttributes (static
// shared, constant and local memory, launch bounds, versions), the occupancy a block size gets,
// and cudaOccupancyMaxPotentialBlockSize, the header's helper built on both; then the launch so
// sized runs. Rerun with GCAP_CUDART_CC=8.0, the figures follow the A100's multiprocessor.
#include "check.h"

#include <cstring>
#include <string>
#include <sys/wait.h>
#include <unistd.h>

__constant__ float weights[32];

// A tiled reduction with launch bounds: 4 KiB of static shared memory.
__global__ void __launch_bounds__(256) tile_sum(const float *in, float *out, int n) {
  __shared__ float tile[1024];
  float sum = 0;
  for (int i = threadIdx.x; i < 1024; i += blockDim.x) {
    int at = blockIdx.x * 1024 + i;
    tile[i] = at < n ? in[at] * weights[i % 32] : 0.0f;
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    for (int i = 0; i < 1024; i++) sum += tile[i];
    out[blockIdx.x] = sum;
  }
}

// A per-thread array indexed at run time: it lives in local memory.
__global__ void histogram_local(const int *in, int *out, int n) {
  int counts[16];
  for (int b = 0; b < 16; b++) counts[b] = 0;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) counts[in[i] & 15]++;
  for (int b = 0; b < 16; b++) atomicAdd(&out[b], counts[b]);
}

__global__ void plain(int *out) { out[blockIdx.x * blockDim.x + threadIdx.x] = 1; }

struct device {
  int cc, shared_per_sm, sms;
};

static void check(const device &d) {
  cudaFuncAttributes a;
  std::memset(&a, 0xff, sizeof a);
  CHECK(cudaFuncGetAttributes(&a, tile_sum));
  std::printf("tile_sum: shared %zu, const %zu, local %zu, threads %d, regs %d, ptx %d, binary %d, dynamic %d\n",
              a.sharedSizeBytes, a.constSizeBytes, a.localSizeBytes, a.maxThreadsPerBlock, a.numRegs, a.ptxVersion,
              a.binaryVersion, a.maxDynamicSharedSizeBytes);
  EXPECT(a.sharedSizeBytes == 4096);
  EXPECT(a.constSizeBytes == sizeof weights);
  EXPECT(a.maxThreadsPerBlock == 256);
  EXPECT(a.numRegs == 32);  // the simulator allocates no registers: a fixed count
  EXPECT(a.ptxVersion == 80);  // built with -arch=sm_80
  EXPECT(a.binaryVersion == d.cc);  // the PTX as compiled for the device it runs on
  EXPECT(a.maxDynamicSharedSizeBytes == 48 * 1024 - 4096);
  EXPECT(a.localSizeBytes == 0);

  CHECK(cudaFuncGetAttributes(&a, histogram_local));
  EXPECT(a.sharedSizeBytes == 0 && a.maxThreadsPerBlock == 1024 && a.maxDynamicSharedSizeBytes == 48 * 1024);
  EXPECT(a.localSizeBytes >= 16 * sizeof(int) && a.localSizeBytes % 16 == 0);

  // Occupancy: threads bound the plain kernel, shared memory the tiled one.
  int blocks = -1;
  CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, plain, 256, 0));
  EXPECT(blocks == 2048 / 256);
  CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, plain, 32, 0));
  EXPECT(blocks == 32);
  const int reserved = 1024, dynamic = 40 * 1024;
  CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, tile_sum, 256, dynamic));
  EXPECT(blocks == d.shared_per_sm / (4096 + dynamic + reserved));
  CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, tile_sum, 256, 48 * 1024 - 4096 + 1));
  EXPECT(blocks == 0);  // more than the kernel may ask for without opting in
  CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, tile_sum, 512, 0));
  EXPECT(blocks == 0);  // past its launch bounds
  CHECK_ERROR(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, tile_sum, 0, 0), cudaErrorInvalidValue);
  CHECK_ERROR(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, (const void *)check, 256, 0),
              cudaErrorInvalidDeviceFunction);
  CHECK_ERROR(cudaFuncGetAttributes(&a, (const void *)check), cudaErrorInvalidDeviceFunction);
  CHECK_ERROR(cudaGetLastError(), cudaErrorInvalidDeviceFunction);

  // The header's helper: the largest block that keeps the multiprocessors full.
  int min_grid = 0, block = 0;
  CHECK(cudaOccupancyMaxPotentialBlockSize(&min_grid, &block, plain, 0, 0));
  EXPECT(block == 1024 && min_grid == 2 * d.sms);
  CHECK(cudaOccupancyMaxPotentialBlockSize(&min_grid, &block, tile_sum, 0, 0));
  EXPECT(block == 256 && min_grid == 8 * d.sms);

  // A launch sized so runs and sums right.
  const int n = 3 * 1024 + 17;
  float *in, *out;
  CHECK(cudaMallocManaged(&in, n * sizeof(float)));
  CHECK(cudaMallocManaged(&out, 4 * sizeof(float)));
  for (int i = 0; i < n; i++) in[i] = 1.0f;
  float w[32];
  for (int i = 0; i < 32; i++) w[i] = float(i % 2);
  CHECK(cudaMemcpyToSymbol(weights, w, sizeof w));
  tile_sum<<<(n + 1023) / 1024, block>>>(in, out, n);
  CHECK(cudaDeviceSynchronize());
  EXPECT(out[0] == 512.0f && out[1] == 512.0f && out[2] == 512.0f && out[3] == 8.0f);
  CHECK(cudaFree(in));
  CHECK(cudaFree(out));
}

int main(int argc, char **argv) {
  if (argc > 1 && std::string(argv[1]) == "8.0") {
    check({80, 164 * 1024, 108});
    return passed();
  }
  unsetenv("GCAP_CUDART_CC");
  check({90, 228 * 1024, 132});
  std::fflush(stdout);
  pid_t pid = fork();
  EXPECT(pid >= 0);
  if (pid == 0) {
    setenv("GCAP_CUDART_CC", "8.0", 1);
    execl(argv[0], argv[0], "8.0", (char *)nullptr);
    _exit(127);
  }
  int status = 0;
  EXPECT(waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0);
  return passed();
}
