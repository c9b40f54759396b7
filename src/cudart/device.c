/* The simulated device: one table answers cudaDeviceGetAttribute, and cudaGetDeviceProperties
 * fills its struct from the same table, so the two always agree. Also the version queries, the
 * device's flags, limits and cache configuration.
 *
 * The device is one GPU whose compute capability comes from GCAP_CUDART_CC (9.0 by default).
 * What depends on the architecture follows a real GPU of that capability, as NVIDIA's
 * deviceQuery sample reports it and the CUDA C++ Programming Guide's table "Technical
 * Specifications per Compute Capability" gives it:
 *   7.x        Tesla T4 (sm_75):        40 SMs,  64 KiB shared per SM,  16 blocks,  1024 threads per SM, 4 MiB L2
 *   8.0        A100 SXM4 80GB (sm_80): 108 SMs, 164 KiB shared per SM,  32 blocks,  2048 threads per SM, 40 MiB L2
 *   8.6 - 8.8  GeForce RTX 3090 (sm_86): 82 SMs, 100 KiB shared per SM, 16 blocks,  1536 threads per SM, 6 MiB L2
 *   8.9        GeForce RTX 4090 (sm_89): 128 SMs, 100 KiB shared per SM, 24 blocks, 1536 threads per SM, 72 MiB L2
 *   9.0 and up H100 SXM5 80GB (sm_90):  132 SMs, 228 KiB shared per SM,  32 blocks,  2048 threads per SM, 50 MiB L2
 * A capability below 7.5 gets the T4's figures and one above 9.0 the H100's, with the capability
 * reported as asked. The global memory is 80 GiB whatever the capability (what cudaMemGetInfo
 * reports too, GCAP__RT_TOTAL_GLOBAL_MEM). Features say what gcap offers rather than what the
 * GPU has: cooperative launches but no cluster launch yet, no mapped or registered host memory, no
 * textures' hardware (their limits are the GPU's, for programs that print them), managed memory
 * without concurrent host access, stream-ordered memory pools. */
#include "cudart.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

/* What differs between the modelled GPUs: shared memory and L2 in bytes, clocks in kHz (the
 * attributes' units), fp64_ratio is single- to double-precision throughput, pci_device the GPU's
 * PCI device ID. The persisting-L2 and access-window maxima are those deviceQuery reports on an
 * A100; the H100's persisting maximum is taken as about 62% of its L2, as the A100's is 75%. */
struct arch {
  int sms, shared_per_sm, shared_optin, reserved_shared, blocks_per_sm, threads_per_sm, l2, persisting_l2,
      access_window, clock_khz, memory_clock_khz, bus_width, fp64_ratio, sync_domains, pci_device;
};

static const struct arch t4 = {
    .sms = 40,
    .shared_per_sm = 65536,
    .shared_optin = 65536,
    .reserved_shared = 0,
    .blocks_per_sm = 16,
    .threads_per_sm = 1024,
    .l2 = 4194304,
    .persisting_l2 = 0,
    .access_window = 0,
    .clock_khz = 1590000,
    .memory_clock_khz = 5001000,
    .bus_width = 256,
    .fp64_ratio = 32,
    .sync_domains = 1,
    .pci_device = 0x1eb8,
};
static const struct arch a100 = {
    .sms = 108,
    .shared_per_sm = 167936,
    .shared_optin = 166912,
    .reserved_shared = 1024,
    .blocks_per_sm = 32,
    .threads_per_sm = 2048,
    .l2 = 41943040,
    .persisting_l2 = 31457280,
    .access_window = 134213632,
    .clock_khz = 1410000,
    .memory_clock_khz = 1593000,
    .bus_width = 5120,
    .fp64_ratio = 2,
    .sync_domains = 1,
    .pci_device = 0x20b2,
};
static const struct arch ga102 = {
    .sms = 82,
    .shared_per_sm = 102400,
    .shared_optin = 101376,
    .reserved_shared = 1024,
    .blocks_per_sm = 16,
    .threads_per_sm = 1536,
    .l2 = 6291456,
    .persisting_l2 = 0,
    .access_window = 134213632,
    .clock_khz = 1695000,
    .memory_clock_khz = 9751000,
    .bus_width = 384,
    .fp64_ratio = 32,
    .sync_domains = 1,
    .pci_device = 0x2204,
};
static const struct arch ad102 = {
    .sms = 128,
    .shared_per_sm = 102400,
    .shared_optin = 101376,
    .reserved_shared = 1024,
    .blocks_per_sm = 24,
    .threads_per_sm = 1536,
    .l2 = 75497472,
    .persisting_l2 = 0,
    .access_window = 134213632,
    .clock_khz = 2520000,
    .memory_clock_khz = 10501000,
    .bus_width = 384,
    .fp64_ratio = 32,
    .sync_domains = 1,
    .pci_device = 0x2684,
};
static const struct arch h100 = {
    .sms = 132,
    .shared_per_sm = 233472,
    .shared_optin = 232448,
    .reserved_shared = 1024,
    .blocks_per_sm = 32,
    .threads_per_sm = 2048,
    .l2 = 52428800,
    .persisting_l2 = 32505856,
    .access_window = 134213632,
    .clock_khz = 1980000,
    .memory_clock_khz = 2619000,
    .bus_width = 5120,
    .fp64_ratio = 2,
    .sync_domains = 4,
    .pci_device = 0x2330,
};

static const struct arch *arch_of(unsigned cc) {
  if (cc < 80) return &t4;
  if (cc == 80) return &a100;
  if (cc < 89) return &ga102;
  if (cc == 89) return &ad102;
  return &h100;
}

#define PCI_DOMAIN 0
#define PCI_BUS 1
#define PCI_DEVICE 0

/* The value of attribute `attr` of the device of capability cc; -1 when the header's enum has no
 * such attribute (the reserved values too). Each case is the device's answer, the same for
 * cudaDeviceGetAttribute and the struct. */
static int attribute(unsigned cc, int attr, int *v) {
  const struct arch *a = arch_of(cc);
  switch ((enum cudaDeviceAttr)attr) {
  case cudaDevAttrMaxThreadsPerBlock: *v = 1024; break;
  case cudaDevAttrMaxBlockDimX: *v = 1024; break;
  case cudaDevAttrMaxBlockDimY: *v = 1024; break;
  case cudaDevAttrMaxBlockDimZ: *v = 64; break;
  case cudaDevAttrMaxGridDimX: *v = 2147483647; break;
  case cudaDevAttrMaxGridDimY: *v = 65535; break;
  case cudaDevAttrMaxGridDimZ: *v = 65535; break;
  case cudaDevAttrMaxSharedMemoryPerBlock: *v = 49152; break;
  case cudaDevAttrTotalConstantMemory: *v = 65536; break;
  case cudaDevAttrWarpSize: *v = 32; break;
  case cudaDevAttrMaxPitch: *v = 2147483647; break;
  case cudaDevAttrMaxRegistersPerBlock: *v = 65536; break;
  case cudaDevAttrClockRate: *v = a->clock_khz; break;
  case cudaDevAttrTextureAlignment: *v = 512; break;
  case cudaDevAttrGpuOverlap: *v = 1; break;
  case cudaDevAttrMultiProcessorCount: *v = a->sms; break;
  case cudaDevAttrKernelExecTimeout: *v = 0; break;
  case cudaDevAttrIntegrated: *v = 0; break;
  case cudaDevAttrCanMapHostMemory: *v = 0; break; /* gcap has no mapped host memory */
  case cudaDevAttrComputeMode: *v = cudaComputeModeDefault; break;
  case cudaDevAttrMaxTexture1DWidth: *v = 131072; break;
  case cudaDevAttrMaxTexture2DWidth: *v = 131072; break;
  case cudaDevAttrMaxTexture2DHeight: *v = 65536; break;
  case cudaDevAttrMaxTexture3DWidth: *v = 16384; break;
  case cudaDevAttrMaxTexture3DHeight: *v = 16384; break;
  case cudaDevAttrMaxTexture3DDepth: *v = 16384; break;
  case cudaDevAttrMaxTexture2DLayeredWidth: *v = 32768; break;
  case cudaDevAttrMaxTexture2DLayeredHeight: *v = 32768; break;
  case cudaDevAttrMaxTexture2DLayeredLayers: *v = 2048; break;
  case cudaDevAttrSurfaceAlignment: *v = 512; break;
  case cudaDevAttrConcurrentKernels: *v = 1; break;
  case cudaDevAttrEccEnabled: *v = 0; break;
  case cudaDevAttrPciBusId: *v = PCI_BUS; break;
  case cudaDevAttrPciDeviceId: *v = PCI_DEVICE; break;
  case cudaDevAttrTccDriver: *v = 0; break;
  case cudaDevAttrMemoryClockRate: *v = a->memory_clock_khz; break;
  case cudaDevAttrGlobalMemoryBusWidth: *v = a->bus_width; break;
  case cudaDevAttrL2CacheSize: *v = a->l2; break;
  case cudaDevAttrMaxThreadsPerMultiProcessor: *v = a->threads_per_sm; break;
  case cudaDevAttrAsyncEngineCount: *v = 2; break;
  case cudaDevAttrUnifiedAddressing: *v = 1; break;
  case cudaDevAttrMaxTexture1DLayeredWidth: *v = 32768; break;
  case cudaDevAttrMaxTexture1DLayeredLayers: *v = 2048; break;
  case cudaDevAttrMaxTexture2DGatherWidth: *v = 32768; break;
  case cudaDevAttrMaxTexture2DGatherHeight: *v = 32768; break;
  case cudaDevAttrMaxTexture3DWidthAlt: *v = 8192; break;
  case cudaDevAttrMaxTexture3DHeightAlt: *v = 8192; break;
  case cudaDevAttrMaxTexture3DDepthAlt: *v = 32768; break;
  case cudaDevAttrPciDomainId: *v = PCI_DOMAIN; break;
  case cudaDevAttrTexturePitchAlignment: *v = 32; break;
  case cudaDevAttrMaxTextureCubemapWidth: *v = 32768; break;
  case cudaDevAttrMaxTextureCubemapLayeredWidth: *v = 32768; break;
  case cudaDevAttrMaxTextureCubemapLayeredLayers: *v = 2046; break;
  case cudaDevAttrMaxSurface1DWidth: *v = 32768; break;
  case cudaDevAttrMaxSurface2DWidth: *v = 131072; break;
  case cudaDevAttrMaxSurface2DHeight: *v = 65536; break;
  case cudaDevAttrMaxSurface3DWidth: *v = 16384; break;
  case cudaDevAttrMaxSurface3DHeight: *v = 16384; break;
  case cudaDevAttrMaxSurface3DDepth: *v = 16384; break;
  case cudaDevAttrMaxSurface1DLayeredWidth: *v = 32768; break;
  case cudaDevAttrMaxSurface1DLayeredLayers: *v = 2048; break;
  case cudaDevAttrMaxSurface2DLayeredWidth: *v = 32768; break;
  case cudaDevAttrMaxSurface2DLayeredHeight: *v = 32768; break;
  case cudaDevAttrMaxSurface2DLayeredLayers: *v = 2048; break;
  case cudaDevAttrMaxSurfaceCubemapWidth: *v = 32768; break;
  case cudaDevAttrMaxSurfaceCubemapLayeredWidth: *v = 32768; break;
  case cudaDevAttrMaxSurfaceCubemapLayeredLayers: *v = 2046; break;
  case cudaDevAttrMaxTexture1DLinearWidth: *v = 268435456; break;
  case cudaDevAttrMaxTexture2DLinearWidth: *v = 131072; break;
  case cudaDevAttrMaxTexture2DLinearHeight: *v = 65000; break;
  case cudaDevAttrMaxTexture2DLinearPitch: *v = 2097120; break;
  case cudaDevAttrMaxTexture2DMipmappedWidth: *v = 32768; break;
  case cudaDevAttrMaxTexture2DMipmappedHeight: *v = 32768; break;
  case cudaDevAttrComputeCapabilityMajor: *v = (int)(cc / 10); break;
  case cudaDevAttrComputeCapabilityMinor: *v = (int)(cc % 10); break;
  case cudaDevAttrMaxTexture1DMipmappedWidth: *v = 32768; break;
  case cudaDevAttrStreamPrioritiesSupported: *v = 1; break;
  case cudaDevAttrGlobalL1CacheSupported: *v = 1; break;
  case cudaDevAttrLocalL1CacheSupported: *v = 1; break;
  case cudaDevAttrMaxSharedMemoryPerMultiprocessor: *v = a->shared_per_sm; break;
  case cudaDevAttrMaxRegistersPerMultiprocessor: *v = 65536; break;
  case cudaDevAttrManagedMemory: *v = 1; break;
  case cudaDevAttrIsMultiGpuBoard: *v = 0; break;
  case cudaDevAttrMultiGpuBoardGroupID: *v = 0; break;
  case cudaDevAttrHostNativeAtomicSupported: *v = 0; break;
  case cudaDevAttrSingleToDoublePrecisionPerfRatio: *v = a->fp64_ratio; break;
  case cudaDevAttrPageableMemoryAccess: *v = 0; break;
  /* The host may touch managed memory only while no kernel runs, as on a GPU without this. */
  case cudaDevAttrConcurrentManagedAccess: *v = 0; break;
  case cudaDevAttrComputePreemptionSupported: *v = 1; break;
  case cudaDevAttrCanUseHostPointerForRegisteredMem: *v = 0; break;
  case cudaDevAttrCooperativeLaunch: *v = 1; break; /* gcap_launch_cooperative_kernel */
  case cudaDevAttrMaxSharedMemoryPerBlockOptin: *v = a->shared_optin; break;
  case cudaDevAttrCanFlushRemoteWrites: *v = 0; break;
  case cudaDevAttrHostRegisterSupported: *v = 0; break;
  case cudaDevAttrPageableMemoryAccessUsesHostPageTables: *v = 0; break;
  case cudaDevAttrDirectManagedMemAccessFromHost: *v = 0; break;
  case cudaDevAttrMaxBlocksPerMultiprocessor: *v = a->blocks_per_sm; break;
  case cudaDevAttrMaxPersistingL2CacheSize: *v = a->persisting_l2; break;
  case cudaDevAttrMaxAccessPolicyWindowSize: *v = a->access_window; break;
  case cudaDevAttrReservedSharedMemoryPerBlock: *v = a->reserved_shared; break;
  case cudaDevAttrSparseCudaArraySupported: *v = 0; break;
  case cudaDevAttrHostRegisterReadOnlySupported: *v = 0; break;
  case cudaDevAttrTimelineSemaphoreInteropSupported: *v = 0; break;
  case cudaDevAttrMemoryPoolsSupported: *v = 1; break;
  case cudaDevAttrGPUDirectRDMASupported: *v = 0; break;
  case cudaDevAttrGPUDirectRDMAFlushWritesOptions: *v = 0; break;
  case cudaDevAttrGPUDirectRDMAWritesOrdering: *v = 0; break;
  case cudaDevAttrMemoryPoolSupportedHandleTypes: *v = 0; break; /* no IPC */
  case cudaDevAttrClusterLaunch: *v = 0; break;                  /* not yet: gcap has no clusters */
  case cudaDevAttrDeferredMappingCudaArraySupported: *v = 0; break;
  case cudaDevAttrIpcEventSupport: *v = 0; break;
  case cudaDevAttrMemSyncDomainCount: *v = a->sync_domains; break;
  case cudaDevAttrNumaConfig: *v = cudaDeviceNumaConfigNone; break;
  case cudaDevAttrNumaId: *v = -1; break;
  case cudaDevAttrMpsEnabled: *v = 0; break;
  case cudaDevAttrHostNumaId: *v = -1; break;
  case cudaDevAttrD3D12CigSupported: *v = 0; break;
  case cudaDevAttrVulkanCigSupported: *v = 0; break;
  /* NVIDIA's vendor ID in the low half, the modelled GPU's device ID in the high half. */
  case cudaDevAttrGpuPciDeviceId: *v = (int)(((unsigned)a->pci_device << 16) | 0x10deu); break;
  case cudaDevAttrGpuPciSubsystemId: *v = 0; break;
  case cudaDevAttrHostNumaMemoryPoolsSupported: *v = 0; break;
  case cudaDevAttrHostNumaMultinodeIpcSupported: *v = 0; break;
  case cudaDevAttrHostMemoryPoolsSupported: *v = 0; break;
  case cudaDevAttrOnlyPartialHostNativeAtomicSupported: *v = 0; break;
  default: return -1;
  }
  return 0;
}

/* Attributes the table knows for certain: an unknown value is a bug here, so the struct is
 * filled through this. */
static int attr_of(unsigned cc, enum cudaDeviceAttr attr) {
  int v = 0;
  (void)attribute(cc, (int)attr, &v);
  return v;
}

static cudaError_t check_device(const char *fn, int device) {
  if (device != 0)
    return gcap__rt_fail(fn, cudaErrorInvalidDevice, "device %d: the simulator has one device, 0", device);
  return cudaSuccess;
}

static void fill_properties(struct cudaDeviceProp *p, unsigned cc) {
#define A(attr) attr_of(cc, cudaDevAttr##attr)
  memset(p, 0, sizeof *p);
  snprintf(p->name, sizeof p->name, "gcap simulator (sm_%u)", cc);
  /* A fixed identity: "gcap-sim-0000000" plus the capability, as bytes. */
  memcpy(p->uuid.bytes, "gcap-sim-0000000", 16);
  p->uuid.bytes[15] = (char)cc;
  p->totalGlobalMem = GCAP__RT_TOTAL_GLOBAL_MEM;
  p->sharedMemPerBlock = (size_t)A(MaxSharedMemoryPerBlock);
  p->regsPerBlock = A(MaxRegistersPerBlock);
  p->warpSize = A(WarpSize);
  p->memPitch = (size_t)A(MaxPitch);
  p->maxThreadsPerBlock = A(MaxThreadsPerBlock);
  p->maxThreadsDim[0] = A(MaxBlockDimX);
  p->maxThreadsDim[1] = A(MaxBlockDimY);
  p->maxThreadsDim[2] = A(MaxBlockDimZ);
  p->maxGridSize[0] = A(MaxGridDimX);
  p->maxGridSize[1] = A(MaxGridDimY);
  p->maxGridSize[2] = A(MaxGridDimZ);
  p->totalConstMem = (size_t)A(TotalConstantMemory);
  p->major = A(ComputeCapabilityMajor);
  p->minor = A(ComputeCapabilityMinor);
  p->textureAlignment = (size_t)A(TextureAlignment);
  p->texturePitchAlignment = (size_t)A(TexturePitchAlignment);
  p->multiProcessorCount = A(MultiProcessorCount);
  p->integrated = A(Integrated);
  p->canMapHostMemory = A(CanMapHostMemory);
  p->maxTexture1D = A(MaxTexture1DWidth);
  p->maxTexture1DMipmap = A(MaxTexture1DMipmappedWidth);
  p->maxTexture2D[0] = A(MaxTexture2DWidth);
  p->maxTexture2D[1] = A(MaxTexture2DHeight);
  p->maxTexture2DMipmap[0] = A(MaxTexture2DMipmappedWidth);
  p->maxTexture2DMipmap[1] = A(MaxTexture2DMipmappedHeight);
  p->maxTexture2DLinear[0] = A(MaxTexture2DLinearWidth);
  p->maxTexture2DLinear[1] = A(MaxTexture2DLinearHeight);
  p->maxTexture2DLinear[2] = A(MaxTexture2DLinearPitch);
  p->maxTexture2DGather[0] = A(MaxTexture2DGatherWidth);
  p->maxTexture2DGather[1] = A(MaxTexture2DGatherHeight);
  p->maxTexture3D[0] = A(MaxTexture3DWidth);
  p->maxTexture3D[1] = A(MaxTexture3DHeight);
  p->maxTexture3D[2] = A(MaxTexture3DDepth);
  p->maxTexture3DAlt[0] = A(MaxTexture3DWidthAlt);
  p->maxTexture3DAlt[1] = A(MaxTexture3DHeightAlt);
  p->maxTexture3DAlt[2] = A(MaxTexture3DDepthAlt);
  p->maxTextureCubemap = A(MaxTextureCubemapWidth);
  p->maxTexture1DLayered[0] = A(MaxTexture1DLayeredWidth);
  p->maxTexture1DLayered[1] = A(MaxTexture1DLayeredLayers);
  p->maxTexture2DLayered[0] = A(MaxTexture2DLayeredWidth);
  p->maxTexture2DLayered[1] = A(MaxTexture2DLayeredHeight);
  p->maxTexture2DLayered[2] = A(MaxTexture2DLayeredLayers);
  p->maxTextureCubemapLayered[0] = A(MaxTextureCubemapLayeredWidth);
  p->maxTextureCubemapLayered[1] = A(MaxTextureCubemapLayeredLayers);
  p->maxSurface1D = A(MaxSurface1DWidth);
  p->maxSurface2D[0] = A(MaxSurface2DWidth);
  p->maxSurface2D[1] = A(MaxSurface2DHeight);
  p->maxSurface3D[0] = A(MaxSurface3DWidth);
  p->maxSurface3D[1] = A(MaxSurface3DHeight);
  p->maxSurface3D[2] = A(MaxSurface3DDepth);
  p->maxSurface1DLayered[0] = A(MaxSurface1DLayeredWidth);
  p->maxSurface1DLayered[1] = A(MaxSurface1DLayeredLayers);
  p->maxSurface2DLayered[0] = A(MaxSurface2DLayeredWidth);
  p->maxSurface2DLayered[1] = A(MaxSurface2DLayeredHeight);
  p->maxSurface2DLayered[2] = A(MaxSurface2DLayeredLayers);
  p->maxSurfaceCubemap = A(MaxSurfaceCubemapWidth);
  p->maxSurfaceCubemapLayered[0] = A(MaxSurfaceCubemapLayeredWidth);
  p->maxSurfaceCubemapLayered[1] = A(MaxSurfaceCubemapLayeredLayers);
  p->surfaceAlignment = (size_t)A(SurfaceAlignment);
  p->concurrentKernels = A(ConcurrentKernels);
  p->ECCEnabled = A(EccEnabled);
  p->pciBusID = A(PciBusId);
  p->pciDeviceID = A(PciDeviceId);
  p->pciDomainID = A(PciDomainId);
  p->tccDriver = A(TccDriver);
  p->asyncEngineCount = A(AsyncEngineCount);
  p->unifiedAddressing = A(UnifiedAddressing);
  p->memoryBusWidth = A(GlobalMemoryBusWidth);
  p->l2CacheSize = A(L2CacheSize);
  p->persistingL2CacheMaxSize = A(MaxPersistingL2CacheSize);
  p->maxThreadsPerMultiProcessor = A(MaxThreadsPerMultiProcessor);
  p->streamPrioritiesSupported = A(StreamPrioritiesSupported);
  p->globalL1CacheSupported = A(GlobalL1CacheSupported);
  p->localL1CacheSupported = A(LocalL1CacheSupported);
  p->sharedMemPerMultiprocessor = (size_t)A(MaxSharedMemoryPerMultiprocessor);
  p->regsPerMultiprocessor = A(MaxRegistersPerMultiprocessor);
  p->managedMemory = A(ManagedMemory);
  p->isMultiGpuBoard = A(IsMultiGpuBoard);
  p->multiGpuBoardGroupID = A(MultiGpuBoardGroupID);
  p->hostNativeAtomicSupported = A(HostNativeAtomicSupported);
  p->pageableMemoryAccess = A(PageableMemoryAccess);
  p->concurrentManagedAccess = A(ConcurrentManagedAccess);
  p->computePreemptionSupported = A(ComputePreemptionSupported);
  p->canUseHostPointerForRegisteredMem = A(CanUseHostPointerForRegisteredMem);
  p->cooperativeLaunch = A(CooperativeLaunch);
  p->sharedMemPerBlockOptin = (size_t)A(MaxSharedMemoryPerBlockOptin);
  p->pageableMemoryAccessUsesHostPageTables = A(PageableMemoryAccessUsesHostPageTables);
  p->directManagedMemAccessFromHost = A(DirectManagedMemAccessFromHost);
  p->maxBlocksPerMultiProcessor = A(MaxBlocksPerMultiprocessor);
  p->accessPolicyMaxWindowSize = A(MaxAccessPolicyWindowSize);
  p->reservedSharedMemPerBlock = (size_t)A(ReservedSharedMemoryPerBlock);
  p->hostRegisterSupported = A(HostRegisterSupported);
  p->sparseCudaArraySupported = A(SparseCudaArraySupported);
  p->hostRegisterReadOnlySupported = A(HostRegisterReadOnlySupported);
  p->timelineSemaphoreInteropSupported = A(TimelineSemaphoreInteropSupported);
  p->memoryPoolsSupported = A(MemoryPoolsSupported);
  p->gpuDirectRDMASupported = A(GPUDirectRDMASupported);
  p->gpuDirectRDMAFlushWritesOptions = (unsigned)A(GPUDirectRDMAFlushWritesOptions);
  p->gpuDirectRDMAWritesOrdering = A(GPUDirectRDMAWritesOrdering);
  p->memoryPoolSupportedHandleTypes = (unsigned)A(MemoryPoolSupportedHandleTypes);
  p->deferredMappingCudaArraySupported = A(DeferredMappingCudaArraySupported);
  p->ipcEventSupported = A(IpcEventSupport);
  p->clusterLaunch = A(ClusterLaunch);
  p->unifiedFunctionPointers = 0;
  p->deviceNumaConfig = A(NumaConfig);
  p->deviceNumaId = A(NumaId);
  p->mpsEnabled = A(MpsEnabled);
  p->hostNumaId = A(HostNumaId);
  p->gpuPciDeviceID = (unsigned)A(GpuPciDeviceId);
  p->gpuPciSubsystemID = (unsigned)A(GpuPciSubsystemId);
  p->hostNumaMultinodeIpcSupported = A(HostNumaMultinodeIpcSupported);
#undef A
}

int gcap__rt_device_attribute(int attr, int *value) { return attribute(gcap__cudart_cc(), attr, value); }

/* ---- Queries that need no context: they answer after a kernel fault too, as CUDA's do ---- */

cudaError_t cudaGetDeviceCount(int *count) {
  if (!count) return gcap__rt_fail(__func__, cudaErrorInvalidValue, "count is NULL");
  *count = 1;
  return cudaSuccess;
}

cudaError_t cudaGetDevice(int *device) {
  if (!device) return gcap__rt_fail(__func__, cudaErrorInvalidValue, "device is NULL");
  *device = 0;
  return cudaSuccess;
}

cudaError_t cudaGetDeviceProperties(struct cudaDeviceProp *prop, int device) {
  if (!prop) return gcap__rt_fail(__func__, cudaErrorInvalidValue, "prop is NULL");
  cudaError_t e = check_device(__func__, device);
  if (e) return e;
  fill_properties(prop, gcap__cudart_cc());
  return cudaSuccess;
}

cudaError_t cudaDeviceGetAttribute(int *value, enum cudaDeviceAttr attr, int device) {
  if (!value) return gcap__rt_fail(__func__, cudaErrorInvalidValue, "value is NULL");
  cudaError_t e = check_device(__func__, device);
  if (e) return e;
  if (attribute(gcap__cudart_cc(), (int)attr, value) < 0)
    return gcap__rt_fail(__func__, cudaErrorInvalidValue, "attr %d is no cudaDeviceAttr", (int)attr);
  return cudaSuccess;
}

/* The devices a thread may pick from, in order: only device 0 is there to list. */
cudaError_t cudaSetValidDevices(int *devices, int len) {
  if (len < 0 || (len > 0 && !devices))
    return gcap__rt_fail(__func__, cudaErrorInvalidValue, "device_arr %s, len %d", devices ? "given" : "NULL", len);
  for (int i = 0; i < len; i++)
    if (devices[i] != 0)
      return gcap__rt_fail(__func__, cudaErrorInvalidDevice, "device_arr[%d] is %d: the simulator has one device, 0", i,
                           devices[i]);
  return cudaSuccess;
}

cudaError_t cudaChooseDevice(int *device, const struct cudaDeviceProp *prop) {
  if (!device) return gcap__rt_fail(__func__, cudaErrorInvalidValue, "device is NULL");
  if (!prop) return gcap__rt_fail(__func__, cudaErrorInvalidValue, "prop is NULL");
  *device = 0; /* the only one, whatever fits best */
  return cudaSuccess;
}

cudaError_t cudaDriverGetVersion(int *version) {
  if (!version) return gcap__rt_fail(__func__, cudaErrorInvalidValue, "driverVersion is NULL");
  *version = CUDART_VERSION;
  return cudaSuccess;
}

cudaError_t cudaRuntimeGetVersion(int *version) {
  if (!version) return gcap__rt_fail(__func__, cudaErrorInvalidValue, "runtimeVersion is NULL");
  *version = CUDART_VERSION;
  return cudaSuccess;
}

cudaError_t cudaDeviceCanAccessPeer(int *can_access, int device, int peer) {
  if (!can_access) return gcap__rt_fail(__func__, cudaErrorInvalidValue, "canAccessPeer is NULL");
  cudaError_t e = check_device(__func__, device);
  if (!e) e = check_device(__func__, peer);
  if (e) return e;
  *can_access = 0; /* there is no other device */
  return cudaSuccess;
}

cudaError_t cudaDeviceGetPCIBusId(char *bus_id, int len, int device) {
  if (!bus_id || len <= 0)
    return gcap__rt_fail(__func__, cudaErrorInvalidValue, "pciBusId %s, len %d", bus_id ? "given" : "NULL", len);
  cudaError_t e = check_device(__func__, device);
  if (e) return e;
  snprintf(bus_id, (size_t)len, "%04x:%02x:%02x.0", PCI_DOMAIN, PCI_BUS, PCI_DEVICE);
  return cudaSuccess;
}

/* "[domain]:[bus]:[device].[function]" or "[bus]:[device].[function]", in hexadecimal. */
cudaError_t cudaDeviceGetByPCIBusId(int *device, const char *bus_id) {
  if (!device || !bus_id)
    return gcap__rt_fail(__func__, cudaErrorInvalidValue, "%s is NULL", device ? "pciBusId" : "device");
  unsigned domain = 0, bus, dev, function;
  char extra;
  int ok = sscanf(bus_id, "%x:%x:%x.%x%c", &domain, &bus, &dev, &function, &extra) == 4;
  if (!ok) {
    domain = 0;
    ok = sscanf(bus_id, "%x:%x.%x%c", &bus, &dev, &function, &extra) == 3;
  }
  if (!ok) return gcap__rt_fail(__func__, cudaErrorInvalidValue, "pciBusId \"%s\" is no PCI bus id", bus_id);
  if (domain != PCI_DOMAIN || bus != PCI_BUS || dev != PCI_DEVICE || function != 0)
    return gcap__rt_fail(__func__, cudaErrorInvalidDevice, "no device at \"%s\"", bus_id);
  *device = 0;
  return cudaSuccess;
}

/* ---- The device's settings: kept until cudaDeviceReset, which restores the defaults ---- */

static pthread_mutex_t settings_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
  unsigned long generation; /* of the context they were set in; another generation has the defaults */
  unsigned flags;
  size_t limits[cudaLimitPersistingL2CacheSize + 1];
  enum cudaFuncCache cache;
} settings;

/* CUDA's defaults: 1 KiB of stack a thread, 1 MiB of printf FIFO, 8 MiB of device heap, sync
 * depth 2, 2048 pending device launches, 64-byte L2 fetches, no persisting L2. */
static const size_t default_limits[] = {1024, 1048576, 8388608, 2, 2048, 64, 0};
_Static_assert(sizeof default_limits == sizeof settings.limits, "one default for each cudaLimit");

/* Under settings_lock: the settings of the current generation. */
static void current_settings(void) {
  unsigned long g = gcap__rt_generation();
  if (settings.generation == g) return;
  settings.generation = g;
  settings.flags = 0;
  memcpy(settings.limits, default_limits, sizeof settings.limits);
  settings.cache = cudaFuncCachePreferNone;
}

cudaError_t cudaSetDevice(int device) {
  cudaError_t e = check_device(__func__, device);
  if (e) return e;
  gcap_context *ctx; /* CUDA 12 and later start the device's context here */
  return gcap__rt_enter(&ctx);
}

static cudaError_t set_flags(const char *fn, unsigned flags) {
  unsigned schedule = flags & cudaDeviceScheduleMask;
  if ((flags & ~(unsigned)cudaDeviceMask) || (flags & 0x60u) ||
      (schedule != cudaDeviceScheduleAuto && schedule != cudaDeviceScheduleSpin &&
       schedule != cudaDeviceScheduleYield && schedule != cudaDeviceScheduleBlockingSync))
    return gcap__rt_fail(fn, cudaErrorInvalidValue, "flags 0x%x", flags);
  pthread_mutex_lock(&settings_lock);
  current_settings();
  settings.flags = flags;
  pthread_mutex_unlock(&settings_lock);
  return cudaSuccess;
}

cudaError_t cudaSetDeviceFlags(unsigned flags) {
  gcap_context *ctx;
  cudaError_t e = gcap__rt_enter(&ctx);
  return e ? e : set_flags(__func__, flags);
}

/* cudaDeviceMapHost is always among them: the runtime implies it. */
cudaError_t cudaGetDeviceFlags(unsigned *flags) {
  gcap_context *ctx;
  cudaError_t e = gcap__rt_enter(&ctx);
  if (e) return e;
  if (!flags) return gcap__rt_fail(__func__, cudaErrorInvalidValue, "flags is NULL");
  pthread_mutex_lock(&settings_lock);
  current_settings();
  *flags = settings.flags | cudaDeviceMapHost;
  pthread_mutex_unlock(&settings_lock);
  return cudaSuccess;
}

cudaError_t cudaInitDevice(int device, unsigned device_flags, unsigned flags) {
  cudaError_t e = check_device(__func__, device);
  if (e) return e;
  if (flags & ~(unsigned)cudaInitDeviceFlagsAreValid)
    return gcap__rt_fail(__func__, cudaErrorInvalidValue, "flags 0x%x", flags);
  gcap_context *ctx;
  e = gcap__rt_enter(&ctx);
  if (e || !(flags & cudaInitDeviceFlagsAreValid)) return e;
  return set_flags(__func__, device_flags);
}

cudaError_t cudaDeviceGetLimit(size_t *value, enum cudaLimit limit) {
  gcap_context *ctx;
  cudaError_t e = gcap__rt_enter(&ctx);
  if (e) return e;
  if (!value) return gcap__rt_fail(__func__, cudaErrorInvalidValue, "pValue is NULL");
  if ((unsigned)limit > cudaLimitPersistingL2CacheSize)
    return gcap__rt_fail(__func__, cudaErrorUnsupportedLimit, "limit %d", (int)limit);
  pthread_mutex_lock(&settings_lock);
  current_settings();
  *value = settings.limits[limit];
  pthread_mutex_unlock(&settings_lock);
  return cudaSuccess;
}

/* The values are kept and reported; the simulator's threads need no stack, FIFO or heap of a
 * fixed size, so they change nothing else. */
cudaError_t cudaDeviceSetLimit(enum cudaLimit limit, size_t value) {
  gcap_context *ctx;
  cudaError_t e = gcap__rt_enter(&ctx);
  if (e) return e;
  int max_persisting = 0;
  (void)gcap__rt_device_attribute(cudaDevAttrMaxPersistingL2CacheSize, &max_persisting);
  switch (limit) {
  case cudaLimitStackSize:
  case cudaLimitPrintfFifoSize:
  case cudaLimitMallocHeapSize:
  case cudaLimitDevRuntimePendingLaunchCount: break;
  case cudaLimitDevRuntimeSyncDepth:
    if (value > 24) return gcap__rt_fail(__func__, cudaErrorInvalidValue, "cudaLimitDevRuntimeSyncDepth %zu", value);
    break;
  case cudaLimitMaxL2FetchGranularity:
    if (value > 128 || (value & (value - 1)))
      return gcap__rt_fail(__func__, cudaErrorInvalidValue,
                           "cudaLimitMaxL2FetchGranularity %zu is not 0 or a power of two up to 128", value);
    break;
  case cudaLimitPersistingL2CacheSize:
    if (value > (size_t)max_persisting)
      return gcap__rt_fail(__func__, cudaErrorInvalidValue, "cudaLimitPersistingL2CacheSize %zu is above %d", value,
                           max_persisting);
    break;
  default: return gcap__rt_fail(__func__, cudaErrorUnsupportedLimit, "limit %d", (int)limit);
  }
  pthread_mutex_lock(&settings_lock);
  current_settings();
  settings.limits[limit] = value;
  pthread_mutex_unlock(&settings_lock);
  return cudaSuccess;
}

cudaError_t cudaDeviceGetCacheConfig(enum cudaFuncCache *config) {
  gcap_context *ctx;
  cudaError_t e = gcap__rt_enter(&ctx);
  if (e) return e;
  if (!config) return gcap__rt_fail(__func__, cudaErrorInvalidValue, "pCacheConfig is NULL");
  pthread_mutex_lock(&settings_lock);
  current_settings();
  *config = settings.cache;
  pthread_mutex_unlock(&settings_lock);
  return cudaSuccess;
}

/* A preference, kept and reported; the simulator has no L1 to divide. */
cudaError_t cudaDeviceSetCacheConfig(enum cudaFuncCache config) {
  gcap_context *ctx;
  cudaError_t e = gcap__rt_enter(&ctx);
  if (e) return e;
  if ((unsigned)config > cudaFuncCachePreferEqual)
    return gcap__rt_fail(__func__, cudaErrorInvalidValue, "cacheConfig %d", (int)config);
  pthread_mutex_lock(&settings_lock);
  current_settings();
  settings.cache = config;
  pthread_mutex_unlock(&settings_lock);
  return cudaSuccess;
}

/* Banks are four bytes wide on every device since compute capability 5.0; a request for eight
 * is accepted and has no effect, as there. */
cudaError_t cudaDeviceGetSharedMemConfig(enum cudaSharedMemConfig *config) {
  gcap_context *ctx;
  cudaError_t e = gcap__rt_enter(&ctx);
  if (e) return e;
  if (!config) return gcap__rt_fail(__func__, cudaErrorInvalidValue, "pConfig is NULL");
  *config = cudaSharedMemBankSizeFourByte;
  return cudaSuccess;
}

cudaError_t cudaDeviceSetSharedMemConfig(enum cudaSharedMemConfig config) {
  gcap_context *ctx;
  cudaError_t e = gcap__rt_enter(&ctx);
  if (e) return e;
  if ((unsigned)config > cudaSharedMemBankSizeEightByte)
    return gcap__rt_fail(__func__, cudaErrorInvalidValue, "config %d", (int)config);
  return cudaSuccess;
}
