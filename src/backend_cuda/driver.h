/*
 * The CUDA driver, loaded at run time: libcuda.so.1 with dlopen, every entry point through
 * cuGetProcAddress at the ABI version this file names, so a driver newer than the headers
 * still hands out the functions these prototypes describe.
 */
#ifndef GCAP_CUDA_DRIVER_H
#define GCAP_CUDA_DRIVER_H

#include <cuda.h>
#include <cudaTypedefs.h>
#include <stdbool.h>

#include <gcap/gcap.h>

#define GCAP_CUDA_MIN_DRIVER 12000 /* cuGetProcAddress_v2 and the v12000 graph ABIs */

/* X(name, ABI version): the entry points the backend needs; a missing one refuses the driver. */
#define GCAP_CUDA_REQUIRED(X)                                                                                          \
  X(cuInit, 2000)                                                                                                      \
  X(cuDeviceGetCount, 2000)                                                                                            \
  X(cuDeviceGet, 2000)                                                                                                 \
  X(cuDeviceGetName, 2000)                                                                                             \
  X(cuGetErrorName, 6000)                                                                                              \
  X(cuGetErrorString, 6000)                                                                                            \
  X(cuDevicePrimaryCtxRetain, 7000)                                                                                    \
  X(cuDevicePrimaryCtxRelease, 11000)                                                                                  \
  X(cuCtxSetCurrent, 4000)                                                                                             \
  X(cuCtxGetCurrent, 4000)                                                                                             \
  X(cuMemAlloc, 3020)                                                                                                  \
  X(cuMemFree, 3020)                                                                                                   \
  X(cuMemAllocHost, 3020)                                                                                              \
  X(cuMemFreeHost, 2000)                                                                                               \
  X(cuMemcpy, 4000)                                                                                                    \
  X(cuMemcpyAsync, 4000)                                                                                               \
  X(cuMemcpy3DAsync, 3020)                                                                                             \
  X(cuMemsetD8Async, 3020)                                                                                             \
  X(cuMemsetD16Async, 3020)                                                                                            \
  X(cuMemsetD32Async, 3020)                                                                                            \
  X(cuMemsetD2D8Async, 3020)                                                                                           \
  X(cuMemsetD2D16Async, 3020)                                                                                          \
  X(cuMemsetD2D32Async, 3020)                                                                                          \
  X(cuStreamCreate, 2000)                                                                                              \
  X(cuStreamCreateWithPriority, 5050)                                                                                  \
  X(cuStreamDestroy, 4000)                                                                                             \
  X(cuStreamSynchronize, 2000)                                                                                         \
  X(cuStreamQuery, 2000)                                                                                               \
  X(cuStreamWaitEvent, 3020)                                                                                           \
  X(cuLaunchHostFunc, 10000)                                                                                           \
  X(cuLaunchKernel, 4000)                                                                                              \
  X(cuLaunchCooperativeKernel, 9000)                                                                                   \
  X(cuEventCreate, 2000)                                                                                               \
  X(cuEventDestroy, 4000)                                                                                              \
  X(cuEventRecord, 2000)                                                                                               \
  X(cuEventSynchronize, 2000)                                                                                          \
  X(cuEventQuery, 2000)                                                                                                \
  X(cuEventElapsedTime, 2000)                                                                                          \
  X(cuModuleLoadData, 2000)                                                                                            \
  X(cuModuleUnload, 2000)                                                                                              \
  X(cuModuleGetFunction, 2000)                                                                                         \
  X(cuModuleGetGlobal, 3020)                                                                                           \
  X(cuGraphCreate, 10000)                                                                                              \
  X(cuGraphDestroy, 10000)                                                                                             \
  X(cuGraphAddKernelNode, 12000)                                                                                       \
  X(cuGraphKernelNodeSetAttribute, 11000)                                                                              \
  X(cuGraphAddMemcpyNode, 10000)                                                                                       \
  X(cuGraphAddMemsetNode, 10000)                                                                                       \
  X(cuGraphAddHostNode, 10000)                                                                                         \
  X(cuGraphAddEmptyNode, 10000)                                                                                        \
  X(cuGraphAddEventRecordNode, 11010)                                                                                  \
  X(cuGraphAddEventWaitNode, 11010)                                                                                    \
  X(cuGraphAddChildGraphNode, 10000)                                                                                   \
  X(cuGraphInstantiateWithFlags, 11040)                                                                                \
  X(cuGraphExecDestroy, 10000)                                                                                         \
  X(cuGraphLaunch, 10000)                                                                                              \
  X(cuGraphUpload, 11010)                                                                                              \
  X(cuGraphExecKernelNodeSetParams, 12000)                                                                             \
  X(cuGraphExecMemcpyNodeSetParams, 10020)                                                                             \
  X(cuGraphExecMemsetNodeSetParams, 10020)                                                                             \
  X(cuGraphExecHostNodeSetParams, 10020)                                                                               \
  X(cuGraphExecEventRecordNodeSetEvent, 11010)                                                                         \
  X(cuGraphExecEventWaitNodeSetEvent, 11010)                                                                           \
  X(cuGraphNodeSetEnabled, 11060)                                                                                      \
  X(cuGraphExecUpdate, 12000)                                                                                          \
  X(cuGraphClone, 10000)                                                                                               \
  X(cuGraphGetNodes, 10000)                                                                                            \
  X(cuStreamBeginCapture, 10010)                                                                                       \
  X(cuStreamEndCapture, 10000)

/* Entry points the backend can do without (NULL when the driver is older). */
#define GCAP_CUDA_OPTIONAL(X)                                                                                          \
  X(cuFuncGetParamInfo, 12040)                                                                                         \
  X(cuFuncGetAttribute, 2020)                                                                                          \
  X(cuFuncSetAttribute, 9000)                                                                                          \
  X(cuGraphConditionalHandleCreate, 12030)                                                                             \
  X(cuGraphAddNode, 12020)                                                                                             \
  X(cuGraphDestroyNode, 10000)                                                                                         \
  X(cuLinkCreate, 6050)                                                                                                \
  X(cuLinkAddData, 6050)                                                                                               \
  X(cuLinkAddFile, 6050)                                                                                               \
  X(cuLinkComplete, 5050)                                                                                              \
  X(cuLinkDestroy, 5050)                                                                                               \
  X(cuMemAllocManaged, 6000)

#define GCAP_CUDA_FIELD(name, version) PFN_##name##_v##version name;
struct gcap__cuda_driver {
  int version; /* cuDriverGetVersion: 12040 for CUDA 12.4 */
  int device_count;
  GCAP_CUDA_REQUIRED(GCAP_CUDA_FIELD)
  GCAP_CUDA_OPTIONAL(GCAP_CUDA_FIELD)
};
#undef GCAP_CUDA_FIELD

/*
 * Loads and initialises the driver once per process. SUCCESS with *out set, or
 * NOT_INITIALIZED with the reason (no libcuda.so.1, driver too old, cuInit failed, no device)
 * as the thread's message; the outcome is remembered, so every later call answers alike.
 */
gcap_status gcap__cuda_driver(const struct gcap__cuda_driver **out);

/* The gcap status of the same meaning as r (docs/cuda.md lists them), GCAP_ERROR_BACKEND when none. */
gcap_status gcap__cuda_status(CUresult r);

/*
 * SUCCESS for CUDA_SUCCESS; otherwise fails with gcap__cuda_status(r) and a message naming the
 * driver call and the error: "cuMemAlloc(1048576 bytes): CUDA_ERROR_OUT_OF_MEMORY (out of memory)".
 */
gcap_status gcap__cuda_check(CUresult r, const char *call_fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

#endif
