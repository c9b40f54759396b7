// The deviceQuery pattern: print every property of every device, each checked against
// cudaDeviceGetAttribute for the same quantity, then pick a launch shape from them. The program
// runs itself again with GCAP_CUDART_CC set (8.0, 8.6, 7.5) to see the device follow it; built
// for sm_80, it cannot run kernels on a 7.5 device, as on a T4.
#include "check.h"

#include <cstring>
#include <string>
#include <sys/wait.h>
#include <unistd.h>

__global__ void fill(int *out, int n, int value) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) out[i] = value + i;
}

static int attr(cudaDeviceAttr a, int dev = 0) {
  int v = -12345;
  CHECK(cudaDeviceGetAttribute(&v, a, dev));
  return v;
}

#define SAME(field, a)                                                                                                 \
  do {                                                                                                                 \
    long long f_ = (long long)(field), a_ = (long long)attr(a);                                                       \
    std::printf("  %-40s %lld\n", #field, f_);                                                                         \
    if (f_ != a_) {                                                                                                    \
      std::fprintf(stderr, "%s is %lld but %s is %lld\n", #field, f_, #a, a_);                                         \
      std::exit(1);                                                                                                    \
    }                                                                                                                  \
  } while (0)

struct expected {
  int major, minor, sms, threads_per_sm, blocks_per_sm;
  size_t shared_per_sm, shared_optin;
  int l2;
};

static void query(const expected &x) {
  int count = 0, driver = 0, runtime = 0, dev = -1;
  CHECK(cudaGetDeviceCount(&count));
  EXPECT(count == 1);
  CHECK(cudaDriverGetVersion(&driver));
  CHECK(cudaRuntimeGetVersion(&runtime));
  EXPECT(driver == CUDART_VERSION && runtime == CUDART_VERSION);
  std::printf("CUDA driver %d.%d, runtime %d.%d\n", driver / 1000, driver % 1000 / 10, runtime / 1000,
              runtime % 1000 / 10);
  CHECK(cudaSetDevice(0));
  CHECK(cudaGetDevice(&dev));
  EXPECT(dev == 0);

  cudaDeviceProp p;
  std::memset(&p, 0xab, sizeof p);
  CHECK(cudaGetDeviceProperties(&p, 0));
  std::printf("Device 0: \"%s\"\n", p.name);
  char name[64];
  std::snprintf(name, sizeof name, "gcap simulator (sm_%d%d)", x.major, x.minor);
  EXPECT(std::strcmp(p.name, name) == 0);
  EXPECT(p.totalGlobalMem == (size_t)80 << 30);
  size_t free_bytes = 0, total_bytes = 0;
  CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
  EXPECT(total_bytes == p.totalGlobalMem && free_bytes <= total_bytes);
  SAME(p.major, cudaDevAttrComputeCapabilityMajor);
  SAME(p.minor, cudaDevAttrComputeCapabilityMinor);
  EXPECT(p.major == x.major && p.minor == x.minor);
  SAME(p.multiProcessorCount, cudaDevAttrMultiProcessorCount);
  EXPECT(p.multiProcessorCount == x.sms);
  SAME(p.maxThreadsPerMultiProcessor, cudaDevAttrMaxThreadsPerMultiProcessor);
  EXPECT(p.maxThreadsPerMultiProcessor == x.threads_per_sm);
  SAME(p.maxBlocksPerMultiProcessor, cudaDevAttrMaxBlocksPerMultiprocessor);
  EXPECT(p.maxBlocksPerMultiProcessor == x.blocks_per_sm);
  SAME(p.sharedMemPerMultiprocessor, cudaDevAttrMaxSharedMemoryPerMultiprocessor);
  EXPECT(p.sharedMemPerMultiprocessor == x.shared_per_sm);
  SAME(p.sharedMemPerBlockOptin, cudaDevAttrMaxSharedMemoryPerBlockOptin);
  EXPECT(p.sharedMemPerBlockOptin == x.shared_optin);
  SAME(p.l2CacheSize, cudaDevAttrL2CacheSize);
  EXPECT(p.l2CacheSize == x.l2);
  SAME(p.sharedMemPerBlock, cudaDevAttrMaxSharedMemoryPerBlock);
  EXPECT(p.sharedMemPerBlock == 48 * 1024);
  SAME(p.totalConstMem, cudaDevAttrTotalConstantMemory);
  EXPECT(p.totalConstMem == 64 * 1024);
  SAME(p.warpSize, cudaDevAttrWarpSize);
  EXPECT(p.warpSize == 32);
  SAME(p.maxThreadsPerBlock, cudaDevAttrMaxThreadsPerBlock);
  EXPECT(p.maxThreadsPerBlock == 1024);
  SAME(p.maxThreadsDim[0], cudaDevAttrMaxBlockDimX);
  SAME(p.maxThreadsDim[1], cudaDevAttrMaxBlockDimY);
  SAME(p.maxThreadsDim[2], cudaDevAttrMaxBlockDimZ);
  EXPECT(p.maxThreadsDim[0] == 1024 && p.maxThreadsDim[1] == 1024 && p.maxThreadsDim[2] == 64);
  SAME(p.maxGridSize[0], cudaDevAttrMaxGridDimX);
  SAME(p.maxGridSize[1], cudaDevAttrMaxGridDimY);
  SAME(p.maxGridSize[2], cudaDevAttrMaxGridDimZ);
  EXPECT(p.maxGridSize[0] == 2147483647 && p.maxGridSize[1] == 65535 && p.maxGridSize[2] == 65535);
  SAME(p.regsPerBlock, cudaDevAttrMaxRegistersPerBlock);
  SAME(p.regsPerMultiprocessor, cudaDevAttrMaxRegistersPerMultiprocessor);
  SAME(p.memPitch, cudaDevAttrMaxPitch);
  SAME(p.textureAlignment, cudaDevAttrTextureAlignment);
  SAME(p.texturePitchAlignment, cudaDevAttrTexturePitchAlignment);
  SAME(p.surfaceAlignment, cudaDevAttrSurfaceAlignment);
  SAME(p.maxTexture1D, cudaDevAttrMaxTexture1DWidth);
  SAME(p.maxTexture2D[0], cudaDevAttrMaxTexture2DWidth);
  SAME(p.maxTexture2D[1], cudaDevAttrMaxTexture2DHeight);
  SAME(p.maxTexture3D[0], cudaDevAttrMaxTexture3DWidth);
  SAME(p.maxTexture3D[2], cudaDevAttrMaxTexture3DDepth);
  SAME(p.maxTexture2DLayered[2], cudaDevAttrMaxTexture2DLayeredLayers);
  SAME(p.maxSurface2D[0], cudaDevAttrMaxSurface2DWidth);
  SAME(p.maxSurfaceCubemapLayered[1], cudaDevAttrMaxSurfaceCubemapLayeredLayers);
  SAME(p.integrated, cudaDevAttrIntegrated);
  SAME(p.canMapHostMemory, cudaDevAttrCanMapHostMemory);
  SAME(p.concurrentKernels, cudaDevAttrConcurrentKernels);
  SAME(p.ECCEnabled, cudaDevAttrEccEnabled);
  SAME(p.pciDomainID, cudaDevAttrPciDomainId);
  SAME(p.pciBusID, cudaDevAttrPciBusId);
  SAME(p.pciDeviceID, cudaDevAttrPciDeviceId);
  SAME(p.tccDriver, cudaDevAttrTccDriver);
  SAME(p.asyncEngineCount, cudaDevAttrAsyncEngineCount);
  SAME(p.unifiedAddressing, cudaDevAttrUnifiedAddressing);
  EXPECT(p.unifiedAddressing == 1);
  SAME(p.memoryBusWidth, cudaDevAttrGlobalMemoryBusWidth);
  SAME(p.persistingL2CacheMaxSize, cudaDevAttrMaxPersistingL2CacheSize);
  SAME(p.streamPrioritiesSupported, cudaDevAttrStreamPrioritiesSupported);
  SAME(p.globalL1CacheSupported, cudaDevAttrGlobalL1CacheSupported);
  SAME(p.localL1CacheSupported, cudaDevAttrLocalL1CacheSupported);
  SAME(p.managedMemory, cudaDevAttrManagedMemory);
  EXPECT(p.managedMemory == 1);
  SAME(p.isMultiGpuBoard, cudaDevAttrIsMultiGpuBoard);
  SAME(p.pageableMemoryAccess, cudaDevAttrPageableMemoryAccess);
  SAME(p.concurrentManagedAccess, cudaDevAttrConcurrentManagedAccess);
  SAME(p.computePreemptionSupported, cudaDevAttrComputePreemptionSupported);
  SAME(p.cooperativeLaunch, cudaDevAttrCooperativeLaunch);
  SAME(p.directManagedMemAccessFromHost, cudaDevAttrDirectManagedMemAccessFromHost);
  SAME(p.accessPolicyMaxWindowSize, cudaDevAttrMaxAccessPolicyWindowSize);
  SAME(p.reservedSharedMemPerBlock, cudaDevAttrReservedSharedMemoryPerBlock);
  SAME(p.hostRegisterSupported, cudaDevAttrHostRegisterSupported);
  SAME(p.memoryPoolsSupported, cudaDevAttrMemoryPoolsSupported);
  EXPECT(p.memoryPoolsSupported == 1);
  SAME(p.memoryPoolSupportedHandleTypes, cudaDevAttrMemoryPoolSupportedHandleTypes);
  SAME(p.clusterLaunch, cudaDevAttrClusterLaunch);
  SAME(p.deviceNumaConfig, cudaDevAttrNumaConfig);
  SAME(p.deviceNumaId, cudaDevAttrNumaId);
  SAME(p.hostNumaId, cudaDevAttrHostNumaId);
  SAME(p.gpuPciDeviceID, cudaDevAttrGpuPciDeviceId);
  EXPECT((p.gpuPciDeviceID & 0xffff) == 0x10de);
  // Clock rates left the struct in CUDA 13; the attributes remain, in kHz.
  std::printf("  GPU clock %d MHz, memory clock %d MHz\n", attr(cudaDevAttrClockRate) / 1000,
              attr(cudaDevAttrMemoryClockRate) / 1000);
  EXPECT(attr(cudaDevAttrClockRate) > 500000 && attr(cudaDevAttrMemoryClockRate) > 500000);
  EXPECT(attr(cudaDevAttrComputeMode) == cudaComputeModeDefault);

  // Every attribute the header names answers; the gaps, reserved and unknown values do not.
  int v = 0;
  CHECK_ERROR(cudaDeviceGetAttribute(&v, (cudaDeviceAttr)0, 0), cudaErrorInvalidValue);
  CHECK_ERROR(cudaGetLastError(), cudaErrorInvalidValue);
  CHECK_ERROR(cudaDeviceGetAttribute(&v, (cudaDeviceAttr)44, 0), cudaErrorInvalidValue);
  CHECK_ERROR(cudaDeviceGetAttribute(&v, cudaDevAttrMax, 0), cudaErrorInvalidValue);
  CHECK_ERROR(cudaDeviceGetAttribute(&v, (cudaDeviceAttr)100000, 0), cudaErrorInvalidValue);
  CHECK_ERROR(cudaDeviceGetAttribute(&v, cudaDevAttrWarpSize, 1), cudaErrorInvalidDevice);
  CHECK_ERROR(cudaDeviceGetAttribute(nullptr, cudaDevAttrWarpSize, 0), cudaErrorInvalidValue);
  CHECK_ERROR(cudaGetDeviceProperties(&p, 1), cudaErrorInvalidDevice);
  CHECK_ERROR(cudaGetDeviceProperties(nullptr, 0), cudaErrorInvalidValue);
  CHECK_ERROR(cudaSetDevice(1), cudaErrorInvalidDevice);
  CHECK_ERROR(cudaSetDevice(-1), cudaErrorInvalidDevice);
  CHECK_ERROR(cudaGetLastError(), cudaErrorInvalidDevice);
  CHECK(cudaGetLastError());

  // One device: no peer, and its PCI address leads back to it.
  int can = -1;
  CHECK(cudaDeviceCanAccessPeer(&can, 0, 0));
  EXPECT(can == 0);
  CHECK_ERROR(cudaDeviceCanAccessPeer(&can, 0, 1), cudaErrorInvalidDevice);
  char bus[32];
  CHECK(cudaDeviceGetPCIBusId(bus, sizeof bus, 0));
  std::printf("  PCI bus id %s\n", bus);
  EXPECT(std::strcmp(bus, "0000:01:00.0") == 0);
  dev = -1;
  CHECK(cudaDeviceGetByPCIBusId(&dev, bus));
  EXPECT(dev == 0);
  CHECK(cudaDeviceGetByPCIBusId(&dev, "01:00.0"));
  CHECK_ERROR(cudaDeviceGetByPCIBusId(&dev, "0000:02:00.0"), cudaErrorInvalidDevice);
  CHECK_ERROR(cudaDeviceGetByPCIBusId(&dev, "bus one"), cudaErrorInvalidValue);
  CHECK_ERROR(cudaGetLastError(), cudaErrorInvalidValue);
  CHECK(cudaChooseDevice(&dev, &p));
  EXPECT(dev == 0);
  int valid[2] = {0, 1};
  CHECK(cudaSetValidDevices(valid, 1));
  CHECK(cudaSetValidDevices(nullptr, 0));
  CHECK_ERROR(cudaSetValidDevices(valid, 2), cudaErrorInvalidDevice);
  CHECK_ERROR(cudaSetValidDevices(nullptr, 1), cudaErrorInvalidValue);
  CHECK_ERROR(cudaGetLastError(), cudaErrorInvalidValue);
  CHECK(cudaGetLastError());
}

// Device-wide settings: kept until cudaDeviceReset, which restores the defaults.
static void settings() {
  size_t v = 0;
  CHECK(cudaDeviceGetLimit(&v, cudaLimitStackSize));
  EXPECT(v == 1024);
  CHECK(cudaDeviceGetLimit(&v, cudaLimitPrintfFifoSize));
  EXPECT(v == 1 << 20);
  CHECK(cudaDeviceGetLimit(&v, cudaLimitMallocHeapSize));
  EXPECT(v == 8 << 20);
  CHECK(cudaDeviceSetLimit(cudaLimitMallocHeapSize, 64 << 20));
  CHECK(cudaDeviceSetLimit(cudaLimitStackSize, 4096));
  CHECK(cudaDeviceGetLimit(&v, cudaLimitMallocHeapSize));
  EXPECT(v == 64 << 20);
  CHECK(cudaDeviceGetLimit(&v, cudaLimitStackSize));
  EXPECT(v == 4096);
  CHECK_ERROR(cudaDeviceSetLimit(cudaLimitMaxL2FetchGranularity, 96), cudaErrorInvalidValue);
  CHECK_ERROR(cudaDeviceGetLimit(&v, (cudaLimit)99), cudaErrorUnsupportedLimit);
  CHECK_ERROR(cudaDeviceSetLimit((cudaLimit)99, 1), cudaErrorUnsupportedLimit);

  cudaFuncCache cache = cudaFuncCachePreferEqual;
  CHECK(cudaDeviceGetCacheConfig(&cache));
  EXPECT(cache == cudaFuncCachePreferNone);
  CHECK(cudaDeviceSetCacheConfig(cudaFuncCachePreferShared));
  CHECK(cudaDeviceGetCacheConfig(&cache));
  EXPECT(cache == cudaFuncCachePreferShared);
  CHECK_ERROR(cudaDeviceSetCacheConfig((cudaFuncCache)7), cudaErrorInvalidValue);

  unsigned flags = 0;
  CHECK(cudaGetDeviceFlags(&flags));
  EXPECT(flags == cudaDeviceMapHost);
  CHECK(cudaSetDeviceFlags(cudaDeviceScheduleBlockingSync));
  CHECK(cudaGetDeviceFlags(&flags));
  EXPECT(flags == (cudaDeviceScheduleBlockingSync | cudaDeviceMapHost));
  CHECK_ERROR(cudaSetDeviceFlags(cudaDeviceScheduleSpin | cudaDeviceScheduleYield), cudaErrorInvalidValue);
  CHECK_ERROR(cudaSetDeviceFlags(0x100), cudaErrorInvalidValue);
  CHECK(cudaInitDevice(0, cudaDeviceScheduleYield, cudaInitDeviceFlagsAreValid));
  CHECK(cudaGetDeviceFlags(&flags));
  EXPECT(flags == (cudaDeviceScheduleYield | cudaDeviceMapHost));
  CHECK_ERROR(cudaInitDevice(1, 0, 0), cudaErrorInvalidDevice);
  CHECK_ERROR(cudaGetLastError(), cudaErrorInvalidDevice);

  CHECK(cudaDeviceReset());
  CHECK(cudaDeviceGetLimit(&v, cudaLimitMallocHeapSize));
  EXPECT(v == 8 << 20);
  CHECK(cudaDeviceGetCacheConfig(&cache));
  EXPECT(cache == cudaFuncCachePreferNone);
  CHECK(cudaGetDeviceFlags(&flags));
  EXPECT(flags == cudaDeviceMapHost);
}

// Sizes a launch from the properties, as programs do, and checks the kernel ran.
static cudaError_t run_kernel(const cudaDeviceProp &p) {
  const int n = 10000;
  int *d = nullptr;
  CHECK(cudaMalloc(&d, n * sizeof(int)));
  fill<<<2 * p.multiProcessorCount, 128>>>(d, n, 7);
  cudaError_t e = cudaGetLastError();
  if (e == cudaSuccess) {
    int h[n];
    CHECK(cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost));
    for (int i = 0; i < n; i++) EXPECT(h[i] == 7 + i);
  }
  CHECK(cudaFree(d));
  return e;
}

// Runs this program again with GCAP_CUDART_CC=cc; it must pass.
static void again(const char *self, const char *cc) {
  std::fflush(stdout);
  pid_t pid = fork();
  EXPECT(pid >= 0);
  if (pid == 0) {
    setenv("GCAP_CUDART_CC", cc, 1);
    execl(self, self, cc, (char *)nullptr);
    _exit(127);
  }
  int status = 0;
  EXPECT(waitpid(pid, &status, 0) == pid);
  EXPECT(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

int main(int argc, char **argv) {
  cudaDeviceProp p;
  if (argc > 1) {  // a run with GCAP_CUDART_CC set
    std::string cc = argv[1];
    if (cc == "8.0") query({8, 0, 108, 2048, 32, 164 * 1024, 163 * 1024, 40 << 20});
    else if (cc == "8.6") query({8, 6, 82, 1536, 16, 100 * 1024, 99 * 1024, 6 << 20});
    else if (cc == "7.5") query({7, 5, 40, 1024, 16, 64 * 1024, 64 * 1024, 4 << 20});
    else EXPECT(!"a known capability");
    CHECK(cudaGetDeviceProperties(&p, 0));
    // The binary holds sm_80 code only: a 7.5 device has no image for it.
    cudaError_t e = run_kernel(p);
    EXPECT(e == (cc == "7.5" ? cudaErrorNoKernelImageForDevice : cudaSuccess));
    return 0;
  }
  unsetenv("GCAP_CUDART_CC");  // before the first runtime call: the default device, 9.0
  query({9, 0, 132, 2048, 32, 228 * 1024, 227 * 1024, 50 << 20});
  settings();
  CHECK(cudaGetDeviceProperties(&p, 0));
  CHECK(run_kernel(p));
  again(argv[0], "8.0");
  again(argv[0], "8.6");
  again(argv[0], "7.5");
  return passed();
}
