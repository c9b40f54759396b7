/* Kernel launches: CUDA 13's <<<>>> path (push/pop a call configuration, __cudaGetKernel,
 * __cudaLaunchKernel), cudaLaunchKernel, cudaLaunchKernelExC, cudaLaunchCooperativeKernel, and
 * what programs ask about their kernels (attributes, occupancy). */
#include "cudart.h"

#include <stdio.h>
#include <string.h>

unsigned __cudaPushCallConfiguration(dim3 grid, dim3 block, size_t shared_mem, struct CUstream_st *stream);
cudaError_t __cudaPopCallConfiguration(dim3 *grid, dim3 *block, size_t *shared_mem, void *stream);
cudaError_t __cudaGetKernel(cudaKernel_t *kernel, const void *stub);
cudaError_t __cudaLaunchKernel(cudaKernel_t kernel, dim3 grid, dim3 block, void **args, size_t shared_mem,
                               cudaStream_t stream);
cudaError_t __cudaLaunchKernel_ptsz(cudaKernel_t kernel, dim3 grid, dim3 block, void **args, size_t shared_mem,
                                    cudaStream_t stream);
cudaError_t cudaLaunchKernel_ptsz(const void *func, dim3 grid, dim3 block, void **args, size_t shared_mem,
                                  cudaStream_t stream);
cudaError_t cudaLaunchKernelExC_ptsz(const cudaLaunchConfig_t *config, const void *func, void **args);
cudaError_t cudaLaunchCooperativeKernel_ptsz(const void *func, dim3 grid, dim3 block, void **args, size_t shared_mem,
                                             cudaStream_t stream);

/* <<<>>> pushes its configuration, the stub pops it: nested launches in argument lists nest. */
#define CONFIG_DEPTH 16
struct call_config {
  dim3 grid, block;
  size_t shared_mem;
  cudaStream_t stream;
};
static _Thread_local struct call_config configs[CONFIG_DEPTH];
static _Thread_local unsigned config_depth;

unsigned __cudaPushCallConfiguration(dim3 grid, dim3 block, size_t shared_mem, struct CUstream_st *stream) {
  if (config_depth == CONFIG_DEPTH) {
    gcap__rt_fail(__func__, cudaErrorLaunchFailure, "more than %d launches nested in argument lists", CONFIG_DEPTH);
    return 1; /* the stub is not called */
  }
  configs[config_depth++] = (struct call_config){grid, block, shared_mem, stream};
  return 0;
}

cudaError_t __cudaPopCallConfiguration(dim3 *grid, dim3 *block, size_t *shared_mem, void *stream) {
  if (!config_depth) return gcap__rt_fail(__func__, cudaErrorMissingConfiguration, "no configuration was pushed");
  const struct call_config *c = &configs[--config_depth];
  *grid = c->grid;
  *block = c->block;
  *shared_mem = c->shared_mem;
  *(cudaStream_t *)stream = c->stream;
  return cudaSuccess;
}

/* The handle is the host stub itself: kernels are found by it. The stub launches whatever this
 * returns, so on failure the handle is still the stub: the launch then fails with the same
 * error (cudaErrorNoKernelImageForDevice, say) rather than an invalid device function. */
cudaError_t __cudaGetKernel(cudaKernel_t *kernel, const void *stub) {
  if (!kernel) return gcap__rt_fail(__func__, cudaErrorInvalidValue, "kernel is NULL");
  gcap_kernel *k;
  cudaError_t e = gcap__rt_kernel(stub, &k);
  *kernel = (cudaKernel_t)(uintptr_t)stub;
  return e;
}

cudaError_t cudaGetKernel(cudaKernel_t *kernel, const void *entry) { return __cudaGetKernel(kernel, entry); }

/* What CUDA refuses as a launch configuration before the kernel is looked at. */
static cudaError_t check_shape(const char *fn, dim3 grid, dim3 block, size_t shared_mem) {
  unsigned long long threads = (unsigned long long)block.x * block.y * block.z;
  if (!grid.x || !grid.y || !grid.z || !block.x || !block.y || !block.z || threads > 1024 || block.z > 64 ||
      grid.y > 65535 || grid.z > 65535 || grid.x > 0x7fffffffu)
    return gcap__rt_fail(fn, cudaErrorInvalidConfiguration, "grid (%u, %u, %u), block (%u, %u, %u)", grid.x, grid.y,
                         grid.z, block.x, block.y, block.z);
  if (shared_mem > UINT32_MAX)
    return gcap__rt_fail(fn, cudaErrorInvalidValue, "%zu bytes of dynamic shared memory", shared_mem);
  return cudaSuccess;
}

/* A launch, cooperative or not: a cooperative grid larger than the device holds at once is
 * gcap's COOPERATIVE_LAUNCH_TOO_LARGE, which is cudaErrorCooperativeLaunchTooLarge. */
static cudaError_t launch_as(const char *fn, const void *stub, dim3 grid, dim3 block, void **args, size_t shared_mem,
                             cudaStream_t stream, enum gcap__rt_default d, int cooperative) {
  gcap_stream *s;
  gcap_kernel *k;
  cudaError_t e = gcap__rt_stream(stream, d, &s);
  if (!e) e = check_shape(fn, grid, block, shared_mem);
  if (!e) e = gcap__rt_kernel(stub, &k);
  if (e) return e;
  gcap_dim3 g = {grid.x, grid.y, grid.z}, b = {block.x, block.y, block.z};
  return gcap__rt_done(fn, cooperative ? gcap_launch_cooperative_kernel(s, k, g, b, (uint32_t)shared_mem, args)
                                       : gcap_launch_kernel(s, k, g, b, (uint32_t)shared_mem, args));
}

static cudaError_t launch(const char *fn, const void *stub, dim3 grid, dim3 block, void **args, size_t shared_mem,
                          cudaStream_t stream, enum gcap__rt_default d) {
  return launch_as(fn, stub, grid, block, args, shared_mem, stream, d, 0);
}

cudaError_t __cudaLaunchKernel(cudaKernel_t kernel, dim3 grid, dim3 block, void **args, size_t shared_mem,
                               cudaStream_t stream) {
  return launch(__func__, kernel, grid, block, args, shared_mem, stream, GCAP__RT_LEGACY);
}

cudaError_t __cudaLaunchKernel_ptsz(cudaKernel_t kernel, dim3 grid, dim3 block, void **args, size_t shared_mem,
                                    cudaStream_t stream) {
  return launch(__func__, kernel, grid, block, args, shared_mem, stream, GCAP__RT_PER_THREAD);
}

cudaError_t cudaLaunchKernel(const void *func, dim3 grid, dim3 block, void **args, size_t shared_mem,
                             cudaStream_t stream) {
  return launch(__func__, func, grid, block, args, shared_mem, stream, GCAP__RT_LEGACY);
}

cudaError_t cudaLaunchKernel_ptsz(const void *func, dim3 grid, dim3 block, void **args, size_t shared_mem,
                                  cudaStream_t stream) {
  return launch(__func__, func, grid, block, args, shared_mem, stream, GCAP__RT_PER_THREAD);
}

cudaError_t cudaLaunchCooperativeKernel(const void *func, dim3 grid, dim3 block, void **args, size_t shared_mem,
                                        cudaStream_t stream) {
  return launch_as(__func__, func, grid, block, args, shared_mem, stream, GCAP__RT_LEGACY, 1);
}

cudaError_t cudaLaunchCooperativeKernel_ptsz(const void *func, dim3 grid, dim3 block, void **args, size_t shared_mem,
                                             cudaStream_t stream) {
  return launch_as(__func__, func, grid, block, args, shared_mem, stream, GCAP__RT_PER_THREAD, 1);
}

static const char *launch_attribute_name(cudaLaunchAttributeID id) {
  static const char *const names[] = {
      "cudaLaunchAttributeIgnore",
      "cudaLaunchAttributeAccessPolicyWindow",
      "cudaLaunchAttributeCooperative",
      "cudaLaunchAttributeSynchronizationPolicy",
      "cudaLaunchAttributeClusterDimension",
      "cudaLaunchAttributeClusterSchedulingPolicyPreference",
      "cudaLaunchAttributeProgrammaticStreamSerialization",
      "cudaLaunchAttributeProgrammaticEvent",
      "cudaLaunchAttributePriority",
      "cudaLaunchAttributeMemSyncDomainMap",
      "cudaLaunchAttributeMemSyncDomain",
      "cudaLaunchAttributePreferredClusterDimension",
  };
  return (unsigned)id < sizeof names / sizeof names[0] ? names[id] : "an unknown launch attribute";
}

/* The priority a launch asks for, if any, and whether it is cooperative (the last of each attribute
 * counts, as CUDA takes it); other attributes are refused by name, as gcap cannot honour them yet. */
static cudaError_t launch_priority(const char *fn, const cudaLaunchConfig_t *c, int *priority, int *has,
                                   int *cooperative) {
  *has = 0;
  *cooperative = 0;
  if (c->numAttrs && !c->attrs)
    return gcap__rt_fail(fn, cudaErrorInvalidValue, "numAttrs %u with attrs NULL", c->numAttrs);
  for (unsigned i = 0; i < c->numAttrs; i++) {
    const cudaLaunchAttribute *a = &c->attrs[i];
    if (a->id == cudaLaunchAttributeIgnore) continue;
    if (a->id == cudaLaunchAttributeCooperative) {
      *cooperative = a->val.cooperative != 0;
      continue;
    }
    if (a->id != cudaLaunchAttributePriority)
      return gcap__rt_fail(fn, cudaErrorNotSupported, "attrs[%u]: %s (%d) is not supported by gcap", i,
                           launch_attribute_name(a->id), (int)a->id);
    *priority = a->val.priority;
    *has = 1;
  }
  return cudaSuccess;
}

/* A captured launch's node takes the priority; an eager launch runs in its stream's order. */
static cudaError_t apply_priority(const char *fn, gcap_stream *s, int priority) {
  gcap_capture_info info;
  if (gcap_stream_get_capture_info(s, &info) != GCAP_SUCCESS || info.status != GCAP_CAPTURE_STATUS_ACTIVE ||
      info.num_dependencies != 1)
    return cudaSuccess;
  gcap_kernel_node_attr_value v = {.priority = priority};
  return gcap__rt_done(fn, gcap_graph_kernel_node_set_attribute((gcap_node *)(uintptr_t)info.dependencies[0],
                                                                GCAP_KERNEL_NODE_ATTR_PRIORITY, &v));
}

static cudaError_t launch_ex(const char *fn, const cudaLaunchConfig_t *c, const void *func, void **args,
                             enum gcap__rt_default d) {
  if (!c) return gcap__rt_fail(fn, cudaErrorInvalidValue, "config is NULL");
  int priority = 0, has = 0, cooperative = 0;
  cudaError_t e = launch_priority(fn, c, &priority, &has, &cooperative);
  if (!e) e = launch_as(fn, func, c->gridDim, c->blockDim, args, c->dynamicSmemBytes, c->stream, d, cooperative);
  if (e || !has) return e;
  gcap_stream *s;
  e = gcap__rt_stream(c->stream, d, &s);
  return e ? e : apply_priority(fn, s, priority);
}

cudaError_t cudaLaunchKernelExC(const cudaLaunchConfig_t *config, const void *func, void **args) {
  return launch_ex(__func__, config, func, args, GCAP__RT_LEGACY);
}

cudaError_t cudaLaunchKernelExC_ptsz(const cudaLaunchConfig_t *config, const void *func, void **args) {
  return launch_ex(__func__, config, func, args, GCAP__RT_PER_THREAD);
}

/* ---- What programs ask about their kernels ---- */

/* What gcap reports of kernel k, by gcap_kernel_attr value (v has 9 entries). */
static cudaError_t kernel_attributes(const char *fn, gcap_kernel *k, int v[9]) {
  static const gcap_kernel_attr wanted[] = {
      GCAP_KERNEL_ATTR_MAX_THREADS_PER_BLOCK,
      GCAP_KERNEL_ATTR_SHARED_SIZE_BYTES,
      GCAP_KERNEL_ATTR_CONST_SIZE_BYTES,
      GCAP_KERNEL_ATTR_LOCAL_SIZE_BYTES,
      GCAP_KERNEL_ATTR_NUM_REGS,
      GCAP_KERNEL_ATTR_PTX_VERSION,
      GCAP_KERNEL_ATTR_BINARY_VERSION,
      GCAP_KERNEL_ATTR_MAX_DYNAMIC_SHARED_SIZE,
  };
  for (size_t i = 0; i < sizeof wanted / sizeof wanted[0]; i++) {
    gcap_status st = gcap_kernel_get_attribute(k, wanted[i], &v[wanted[i]]);
    if (st != GCAP_SUCCESS) return gcap__rt_done(fn, st);
  }
  return cudaSuccess;
}

/* The kernel's figures as gcap reports them: on the simulator from its PTX, whose code a GPU
 * would compile for itself when it loads (so binaryVersion is the simulated device's). */
cudaError_t cudaFuncGetAttributes(struct cudaFuncAttributes *attr, const void *func) {
  if (!attr) return gcap__rt_fail(__func__, cudaErrorInvalidValue, "attr is NULL");
  gcap_kernel *k;
  cudaError_t e = gcap__rt_kernel(func, &k);
  int v[9] = {0};
  if (!e) e = kernel_attributes(__func__, k, v);
  if (e) return e;
  memset(attr, 0, sizeof *attr);
  attr->sharedSizeBytes = (size_t)v[GCAP_KERNEL_ATTR_SHARED_SIZE_BYTES];
  attr->constSizeBytes = (size_t)v[GCAP_KERNEL_ATTR_CONST_SIZE_BYTES];
  attr->localSizeBytes = (size_t)v[GCAP_KERNEL_ATTR_LOCAL_SIZE_BYTES];
  attr->maxThreadsPerBlock = v[GCAP_KERNEL_ATTR_MAX_THREADS_PER_BLOCK];
  attr->numRegs = v[GCAP_KERNEL_ATTR_NUM_REGS];
  attr->ptxVersion = v[GCAP_KERNEL_ATTR_PTX_VERSION];
  gcap_context *ctx;
  int sim = gcap__rt_enter(&ctx) == cudaSuccess && gcap_context_backend(ctx) == GCAP_BACKEND_SIM;
  attr->binaryVersion = sim ? (int)gcap__cudart_cc() : v[GCAP_KERNEL_ATTR_BINARY_VERSION];
  attr->maxDynamicSharedSizeBytes = v[GCAP_KERNEL_ATTR_MAX_DYNAMIC_SHARED_SIZE];
  attr->preferredShmemCarveout = -1;
  return cudaSuccess;
}

cudaError_t cudaFuncSetAttribute(const void *func, enum cudaFuncAttribute attr, int value) {
  gcap_kernel *k;
  cudaError_t e = gcap__rt_kernel(func, &k);
  if (e) return e;
  switch (attr) {
  case cudaFuncAttributeMaxDynamicSharedMemorySize: /* gcap checks it, and launches against it */
    return gcap__rt_done(__func__, gcap_kernel_set_attribute(k, GCAP_KERNEL_ATTR_MAX_DYNAMIC_SHARED_SIZE, value));
  case cudaFuncAttributePreferredSharedMemoryCarveout:
    if (value < -1 || value > 100) return gcap__rt_fail(__func__, cudaErrorInvalidValue, "carveout %d", value);
    return cudaSuccess; /* a hint: the simulator has no L1 to share */
  default: return gcap__rt_fail(__func__, cudaErrorNotSupported, "attribute %d is not supported by gcap", (int)attr);
  }
}

cudaError_t cudaFuncSetCacheConfig(const void *func, enum cudaFuncCache config) {
  gcap_kernel *k;
  cudaError_t e = gcap__rt_kernel(func, &k);
  if (e) return e;
  if ((unsigned)config > cudaFuncCachePreferEqual)
    return gcap__rt_fail(__func__, cudaErrorInvalidValue, "cache configuration %d", (int)config);
  return cudaSuccess; /* a hint, as on a GPU */
}

static int device_attribute(enum cudaDeviceAttr a) {
  int v = 0;
  (void)gcap__rt_device_attribute((int)a, &v);
  return v;
}

static int min_int(int a, int b) { return a < b ? a : b; }

/* Blocks of block_size threads of a kernel with figures v (kernel_attributes) one multiprocessor
 * of the simulated device holds at once, as CUDA's occupancy calculator counts them: bounded by
 * its threads, its blocks, its registers (allocated 256 a warp) and its shared memory (the
 * kernel's static and dynamic shared memory plus what the system reserves for each block). */
static int blocks_per_sm(const int v[9], int block_size, size_t dynamic_shared) {
  const int warp = 32;
  int warps = (block_size + warp - 1) / warp;
  int n = min_int(device_attribute(cudaDevAttrMaxThreadsPerMultiProcessor) / (warps * warp),
                  device_attribute(cudaDevAttrMaxBlocksPerMultiprocessor));
  int regs_per_warp = (v[GCAP_KERNEL_ATTR_NUM_REGS] * warp + 255) / 256 * 256;
  if (regs_per_warp) n = min_int(n, device_attribute(cudaDevAttrMaxRegistersPerMultiprocessor) / regs_per_warp / warps);
  size_t shared = (size_t)v[GCAP_KERNEL_ATTR_SHARED_SIZE_BYTES] + dynamic_shared +
                  (size_t)device_attribute(cudaDevAttrReservedSharedMemoryPerBlock);
  if (shared) n = min_int(n, (int)((size_t)device_attribute(cudaDevAttrMaxSharedMemoryPerMultiprocessor) / shared));
  return n;
}

cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(int *num_blocks, const void *func, int block_size,
                                                                   size_t dynamic_shared, unsigned flags) {
  if (!num_blocks) return gcap__rt_fail(__func__, cudaErrorInvalidValue, "numBlocks is NULL");
  if (block_size <= 0 || block_size > 1024)
    return gcap__rt_fail(__func__, cudaErrorInvalidValue, "blockSize %d is not from 1 to 1024", block_size);
  if (flags & ~(unsigned)cudaOccupancyDisableCachingOverride)
    return gcap__rt_fail(__func__, cudaErrorInvalidValue, "flags 0x%x", flags);
  gcap_kernel *k;
  cudaError_t e = gcap__rt_kernel(func, &k);
  int v[9] = {0};
  if (!e) e = kernel_attributes(__func__, k, v);
  if (e) return e;
  /* A block the kernel cannot have, or more dynamic shared memory than it may ask for: none fits. */
  if (block_size > v[GCAP_KERNEL_ATTR_MAX_THREADS_PER_BLOCK] ||
      dynamic_shared > (size_t)v[GCAP_KERNEL_ATTR_MAX_DYNAMIC_SHARED_SIZE])
    return *num_blocks = 0, cudaSuccess;
  *num_blocks = blocks_per_sm(v, block_size, dynamic_shared);
  return cudaSuccess;
}

cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessor(int *num_blocks, const void *func, int block_size,
                                                          size_t dynamic_shared) {
  return cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(num_blocks, func, block_size, dynamic_shared,
                                                                cudaOccupancyDefault);
}

/* The dynamic shared memory each of num_blocks blocks may have while all of them fit on one
 * multiprocessor at once: its shared memory shared out, less what each block reserves and the
 * kernel's static shared memory, at most what the kernel may ask for; 0 when the blocks do not
 * fit whatever their shared memory. */
cudaError_t cudaOccupancyAvailableDynamicSMemPerBlock(size_t *dynamic_shared, const void *func, int num_blocks,
                                                      int block_size) {
  if (!dynamic_shared) return gcap__rt_fail(__func__, cudaErrorInvalidValue, "dynamicSmemSize is NULL");
  if (num_blocks <= 0 || block_size <= 0 || block_size > 1024)
    return gcap__rt_fail(__func__, cudaErrorInvalidValue, "numBlocks %d, blockSize %d", num_blocks, block_size);
  gcap_kernel *k;
  cudaError_t e = gcap__rt_kernel(func, &k);
  int v[9] = {0};
  if (!e) e = kernel_attributes(__func__, k, v);
  if (e) return e;
  *dynamic_shared = 0;
  if (block_size > v[GCAP_KERNEL_ATTR_MAX_THREADS_PER_BLOCK] || blocks_per_sm(v, block_size, 0) < num_blocks)
    return cudaSuccess;
  size_t share = (size_t)device_attribute(cudaDevAttrMaxSharedMemoryPerMultiprocessor) / (size_t)num_blocks;
  size_t taken =
      (size_t)device_attribute(cudaDevAttrReservedSharedMemoryPerBlock) + (size_t)v[GCAP_KERNEL_ATTR_SHARED_SIZE_BYTES];
  size_t most = (size_t)v[GCAP_KERNEL_ATTR_MAX_DYNAMIC_SHARED_SIZE];
  if (share > taken) *dynamic_shared = share - taken < most ? share - taken : most;
  return cudaSuccess;
}

cudaError_t cudaFuncGetName(const char **name, const void *func) {
  if (!name) return gcap__rt_fail(__func__, cudaErrorInvalidValue, "name is NULL");
  gcap_kernel *k;
  cudaError_t e = gcap__rt_kernel(func, &k);
  if (e) return e;
  *name = gcap_kernel_name(k);
  return cudaSuccess;
}
