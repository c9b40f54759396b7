// More than 48 KiB of dynamic shared memory, as the tensor-core samples use it: refused until the
// kernel opts in with cudaFuncSetAttribute(cudaFuncAttributeMaxDynamicSharedMemorySize), then
// a 96 KiB launch runs and every byte of its shared memory holds what the block wrote; the
// attribute is what cudaFuncGetAttributes and the occupancy calculator report, and the device's
// opt-in limit bounds it.
#include "check.h"

#include <cstdint>

// Fills `words` words of dynamic shared memory, then writes them out backwards.
__global__ void reverse(unsigned *out, unsigned words) {
  extern __shared__ unsigned buf[];
  for (unsigned i = threadIdx.x; i < words; i += blockDim.x) buf[i] = i * 40503u ^ 0x5a5a5a5au;
  __syncthreads();
  for (unsigned i = threadIdx.x; i < words; i += blockDim.x) out[blockIdx.x * words + i] = buf[words - 1 - i];
}

static bool reversed(const unsigned *out, unsigned blocks, unsigned words) {
  for (unsigned b = 0; b < blocks; b++)
    for (unsigned i = 0; i < words; i++)
      if (out[b * words + i] != ((words - 1 - i) * 40503u ^ 0x5a5a5a5au)) {
        std::fprintf(stderr, "block %u word %u: %#x\n", b, i, out[b * words + i]);
        return false;
      }
  return true;
}

int main() {
  const unsigned big = 96 * 1024, words = big / 4, blocks = 3;
  unsigned *out;
  CHECK(cudaMallocManaged(&out, blocks * big));

  // Without the attribute: 48 KiB at most, and the launch is refused as CUDA refuses it.
  cudaFuncAttributes a;
  CHECK(cudaFuncGetAttributes(&a, reverse));
  EXPECT(a.maxDynamicSharedSizeBytes == 48 * 1024);
  reverse<<<blocks, 256, big>>>(out, words);
  CHECK_ERROR(cudaGetLastError(), cudaErrorInvalidValue);
  CHECK(cudaGetLastError()); // not sticky

  // Opted in: the launch runs.
  CHECK(cudaFuncSetAttribute(reverse, cudaFuncAttributeMaxDynamicSharedMemorySize, big));
  CHECK(cudaFuncGetAttributes(&a, reverse));
  EXPECT(a.maxDynamicSharedSizeBytes == (int)big);
  reverse<<<blocks, 256, big>>>(out, words);
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());
  EXPECT(reversed(out, blocks, words));
  reverse<<<1, 256, big + 4>>>(out, words + 1); // past what it opted into
  CHECK_ERROR(cudaGetLastError(), cudaErrorInvalidValue);

  // The occupancy calculator counts the opted-in bytes; two such blocks fit an H100's multiprocessor.
  int device = 0, optin = 0, per_sm = 0, reserved = 0, n = -1;
  CHECK(cudaGetDevice(&device));
  CHECK(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
  CHECK(cudaDeviceGetAttribute(&per_sm, cudaDevAttrMaxSharedMemoryPerMultiprocessor, device));
  CHECK(cudaDeviceGetAttribute(&reserved, cudaDevAttrReservedSharedMemoryPerBlock, device));
  CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, reverse, 256, big));
  EXPECT(n == per_sm / (int)(big + reserved));

  // The device's limit: all of it may be asked for, not a byte more.
  CHECK_ERROR(cudaFuncSetAttribute(reverse, cudaFuncAttributeMaxDynamicSharedMemorySize, optin + 1),
              cudaErrorInvalidValue);
  CHECK_ERROR(cudaFuncSetAttribute(reverse, cudaFuncAttributeMaxDynamicSharedMemorySize, -1), cudaErrorInvalidValue);
  CHECK_ERROR(cudaGetLastError(), cudaErrorInvalidValue); // the last error, not sticky
  CHECK(cudaFuncGetAttributes(&a, reverse));
  EXPECT(a.maxDynamicSharedSizeBytes == (int)big); // unchanged by the refusals
  CHECK(cudaFuncSetAttribute(reverse, cudaFuncAttributeMaxDynamicSharedMemorySize, optin));
  reverse<<<1, 1024, optin>>>(out, optin / 4);
  CHECK(cudaDeviceSynchronize());
  EXPECT(reversed(out, 1, optin / 4));

  CHECK(cudaFree(out));
  return passed();
}
