/* Graphs built by hand: the runtime's graph and node calls over gcap's graphs, and the
 * translation of the runtime's node parameter structs that graph_exec.c shares. */
#include "cudart.h"

#include <stdlib.h>
#include <string.h>

/* ---- Parameter translation ---- */

cudaError_t gcap__rt_kernel_params_in(const char *fn, const struct cudaKernelNodeParams *p,
                                      gcap_kernel_node_params *out) {
  if (!p) return gcap__rt_fail(fn, cudaErrorInvalidValue, "the kernel node parameters are NULL");
  if (p->extra && p->kernelParams)
    return gcap__rt_fail(fn, cudaErrorInvalidValue, "both kernelParams and extra are set");
  if (p->extra)
    return gcap__rt_fail(fn, cudaErrorNotSupported, "extra (packed kernel arguments) is not supported by gcap");
  gcap_kernel *k;
  cudaError_t e = gcap__rt_kernel(p->func, &k);
  if (e) return e;
  *out = (gcap_kernel_node_params){.kernel = k,
                                   .grid = {p->gridDim.x, p->gridDim.y, p->gridDim.z},
                                   .block = {p->blockDim.x, p->blockDim.y, p->blockDim.z},
                                   .shared_mem_bytes = p->sharedMemBytes,
                                   .args = p->kernelParams};
  return cudaSuccess;
}

void gcap__rt_kernel_params_out(const gcap_kernel_node_params *p, struct cudaKernelNodeParams *out) {
  memset(out, 0, sizeof *out);
  out->func = (void *)(uintptr_t)gcap__rt_stub_of(p->kernel);
  out->gridDim = (dim3){p->grid.x, p->grid.y, p->grid.z};
  out->blockDim = (dim3){p->block.x, p->block.y, p->block.z};
  out->sharedMemBytes = p->shared_mem_bytes;
  out->kernelParams = p->args;
  out->extra = NULL;
}

cudaError_t gcap__rt_memcpy_kind_in(const char *fn, enum cudaMemcpyKind kind, gcap_memcpy_kind *out) {
  switch (kind) {
  case cudaMemcpyHostToHost: *out = GCAP_MEMCPY_HOST_TO_HOST; return cudaSuccess;
  case cudaMemcpyHostToDevice: *out = GCAP_MEMCPY_HOST_TO_DEVICE; return cudaSuccess;
  case cudaMemcpyDeviceToHost: *out = GCAP_MEMCPY_DEVICE_TO_HOST; return cudaSuccess;
  case cudaMemcpyDeviceToDevice: *out = GCAP_MEMCPY_DEVICE_TO_DEVICE; return cudaSuccess;
  case cudaMemcpyDefault: *out = GCAP_MEMCPY_DEFAULT; return cudaSuccess;
  }
  return gcap__rt_fail(fn, cudaErrorInvalidMemcpyDirection, "kind %d is no cudaMemcpyKind", (int)kind);
}

cudaError_t gcap__rt_memcpy3d_params_in(const char *fn, const struct cudaMemcpy3DParms *p,
                                        gcap_memcpy_3d_params *out) {
  if (!p) return gcap__rt_fail(fn, cudaErrorInvalidValue, "the copy parameters are NULL");
  if (p->srcArray || p->dstArray)
    return gcap__rt_fail(fn, cudaErrorNotSupported, "%s is a CUDA array: gcap copies linear memory only",
                         p->srcArray ? "srcArray" : "dstArray");
  gcap_memcpy_kind kind;
  cudaError_t e = gcap__rt_memcpy_kind_in(fn, p->kind, &kind);
  if (e) return e;
  *out = (gcap_memcpy_3d_params){
      .src = {p->srcPtr.ptr, p->srcPtr.pitch, p->srcPtr.xsize, p->srcPtr.ysize},
      .src_pos = {p->srcPos.x, p->srcPos.y, p->srcPos.z},
      .dst = {p->dstPtr.ptr, p->dstPtr.pitch, p->dstPtr.xsize, p->dstPtr.ysize},
      .dst_pos = {p->dstPos.x, p->dstPos.y, p->dstPos.z},
      .extent = {p->extent.width, p->extent.height, p->extent.depth},
      .kind = kind,
  };
  return cudaSuccess;
}

void gcap__rt_memcpy3d_params_out(const gcap_memcpy_3d_params *p, struct cudaMemcpy3DParms *out) {
  memset(out, 0, sizeof *out);
  out->srcPtr = (struct cudaPitchedPtr){(void *)(uintptr_t)p->src.ptr, p->src.pitch, p->src.xsize, p->src.ysize};
  out->srcPos = (struct cudaPos){p->src_pos.x, p->src_pos.y, p->src_pos.z};
  out->dstPtr = (struct cudaPitchedPtr){p->dst.ptr, p->dst.pitch, p->dst.xsize, p->dst.ysize};
  out->dstPos = (struct cudaPos){p->dst_pos.x, p->dst_pos.y, p->dst_pos.z};
  out->extent = (struct cudaExtent){p->extent.width, p->extent.height, p->extent.depth};
  out->kind = (enum cudaMemcpyKind)p->kind;
}

cudaError_t gcap__rt_memset_params_in(const char *fn, const struct cudaMemsetParams *p, gcap_memset_node_params *out) {
  if (!p) return gcap__rt_fail(fn, cudaErrorInvalidValue, "the memset parameters are NULL");
  if (p->elementSize != 1 && p->elementSize != 2 && p->elementSize != 4)
    return gcap__rt_fail(fn, cudaErrorInvalidValue, "elementSize %u is not 1, 2 or 4", p->elementSize);
  *out = (gcap_memset_node_params){.dst = p->dst,
                                   .value = p->value,
                                   .element_size = p->elementSize,
                                   .width = p->width,
                                   .height = p->height,
                                   .pitch = p->pitch};
  return cudaSuccess;
}

void gcap__rt_memset_params_out(const gcap_memset_node_params *p, struct cudaMemsetParams *out) {
  memset(out, 0, sizeof *out);
  out->dst = p->dst;
  out->pitch = p->pitch;
  out->value = p->value;
  out->elementSize = p->element_size;
  out->width = p->width;
  out->height = p->height;
}

cudaError_t gcap__rt_host_params_in(const char *fn, const struct cudaHostNodeParams *p, gcap_host_node_params *out) {
  if (!p) return gcap__rt_fail(fn, cudaErrorInvalidValue, "the host node parameters are NULL");
  if (!p->fn) return gcap__rt_fail(fn, cudaErrorInvalidValue, "the host node's fn is NULL");
  *out = (gcap_host_node_params){.fn = p->fn, .user_data = p->userData};
  return cudaSuccess;
}

cudaError_t gcap__rt_edges_in(const char *fn, const cudaGraphEdgeData *edges, size_t n) {
  static const cudaGraphEdgeData zero;
  for (size_t i = 0; edges && i < n; i++)
    if (memcmp(&edges[i], &zero, sizeof zero))
      return gcap__rt_fail(fn, cudaErrorNotSupported,
                           "edge data %zu (type %u, from_port %u, to_port %u): gcap has only default edges", i,
                           edges[i].type, edges[i].from_port, edges[i].to_port);
  return cudaSuccess;
}

static int all_zero(const void *p, size_t n) {
  const unsigned char *b = p;
  for (size_t i = 0; i < n; i++)
    if (b[i]) return 0;
  return 1;
}

static cudaError_t mem_alloc_params_in(const char *fn, const struct cudaMemPoolProps *props,
                                       const struct cudaMemAccessDesc *descs, size_t ndescs, size_t bytes,
                                       gcap_mem_alloc_node_params *out) {
  if (props->allocType != cudaMemAllocationTypePinned)
    return gcap__rt_fail(fn, cudaErrorInvalidValue, "poolProps.allocType %d is not cudaMemAllocationTypePinned",
                         (int)props->allocType);
  if (props->handleTypes != cudaMemHandleTypeNone)
    return gcap__rt_fail(fn, cudaErrorInvalidValue, "poolProps.handleTypes %d: graph allocations cannot be exported",
                         (int)props->handleTypes);
  if (props->location.type != cudaMemLocationTypeDevice || props->location.id != 0)
    return gcap__rt_fail(fn, cudaErrorInvalidValue, "poolProps.location (type %d, id %d) is not device 0",
                         (int)props->location.type, props->location.id);
  if (ndescs && !descs) return gcap__rt_fail(fn, cudaErrorInvalidValue, "accessDescCount %zu with accessDescs NULL", ndescs);
  if (ndescs > 1) return gcap__rt_fail(fn, cudaErrorInvalidValue, "accessDescCount %zu exceeds the 1 device", ndescs);
  if (ndescs && (descs[0].location.type != cudaMemLocationTypeDevice || descs[0].location.id != 0 ||
                 descs[0].flags != cudaMemAccessFlagsProtReadWrite))
    return gcap__rt_fail(fn, cudaErrorInvalidValue, "accessDescs[0] is not read-write access by device 0");
  if (!bytes) return gcap__rt_fail(fn, cudaErrorInvalidValue, "bytesize is 0");
  *out = (gcap_mem_alloc_node_params){.bytes = bytes, .pool = NULL, .dptr = NULL};
  return cudaSuccess;
}

cudaError_t gcap__rt_node_params_in(const char *fn, const struct cudaGraphNodeParams *p,
                                    struct gcap__rt_node_params *out) {
  if (!p) return gcap__rt_fail(fn, cudaErrorInvalidValue, "nodeParams is NULL");
  if (!all_zero(p->reserved0, sizeof p->reserved0) || p->reserved2)
    return gcap__rt_fail(fn, cudaErrorInvalidValue, "nodeParams' reserved fields are not zero");
  memset(out, 0, sizeof *out);
  out->p.type = (gcap_node_type)p->type;
  switch (p->type) {
  case cudaGraphNodeTypeKernel: {
    struct cudaKernelNodeParams k = {p->kernel.func,         p->kernel.gridDim,      p->kernel.blockDim,
                                     p->kernel.sharedMemBytes, p->kernel.kernelParams, p->kernel.extra};
    return gcap__rt_kernel_params_in(fn, &k, &out->p.u.kernel);
  }
  case cudaGraphNodeTypeMemcpy:
    if (p->memcpy.flags || !all_zero(p->memcpy.reserved, sizeof p->memcpy.reserved))
      return gcap__rt_fail(fn, cudaErrorInvalidValue, "memcpy.flags and memcpy.reserved must be zero");
    out->copy_3d = 1;
    return gcap__rt_memcpy3d_params_in(fn, &p->memcpy.copyParams, &out->copy3d);
  case cudaGraphNodeTypeMemset: {
    struct cudaMemsetParams m = {p->memset.dst,         p->memset.pitch, p->memset.value,
                                 p->memset.elementSize, p->memset.width, p->memset.height};
    return gcap__rt_memset_params_in(fn, &m, &out->p.u.fill);
  }
  case cudaGraphNodeTypeHost: {
    struct cudaHostNodeParams h = {p->host.fn, p->host.userData};
    return gcap__rt_host_params_in(fn, &h, &out->p.u.host);
  }
  case cudaGraphNodeTypeGraph:
    if (p->graph.ownership != cudaGraphChildGraphOwnershipClone)
      return gcap__rt_fail(fn, cudaErrorNotSupported,
                           "graph.ownership %d: gcap clones child graphs (cudaGraphChildGraphOwnershipClone) only",
                           (int)p->graph.ownership);
    if (!p->graph.graph) return gcap__rt_fail(fn, cudaErrorInvalidValue, "graph.graph is NULL");
    out->p.u.child_graph = gcap__rt_graph(p->graph.graph);
    return cudaSuccess;
  case cudaGraphNodeTypeEmpty: return cudaSuccess;
  case cudaGraphNodeTypeWaitEvent:
    if (!p->eventWait.event) return gcap__rt_fail(fn, cudaErrorInvalidResourceHandle, "eventWait.event is NULL");
    out->p.u.event = gcap__rt_event(p->eventWait.event);
    return cudaSuccess;
  case cudaGraphNodeTypeEventRecord:
    if (!p->eventRecord.event) return gcap__rt_fail(fn, cudaErrorInvalidResourceHandle, "eventRecord.event is NULL");
    out->p.u.event = gcap__rt_event(p->eventRecord.event);
    return cudaSuccess;
  case cudaGraphNodeTypeMemAlloc:
    return mem_alloc_params_in(fn, &p->alloc.poolProps, p->alloc.accessDescs, p->alloc.accessDescCount,
                               p->alloc.bytesize, &out->p.u.mem_alloc);
  case cudaGraphNodeTypeMemFree:
    if (!p->free.dptr) return gcap__rt_fail(fn, cudaErrorInvalidValue, "free.dptr is NULL");
    out->p.u.mem_free = p->free.dptr;
    return cudaSuccess;
  case cudaGraphNodeTypeConditional:
    out->p.u.conditional = (gcap_conditional_node_params){.handle = p->conditional.handle,
                                                          .type = (gcap_conditional_type)p->conditional.type,
                                                          .size = p->conditional.size,
                                                          .body_out = NULL};
    return cudaSuccess;
  case cudaGraphNodeTypeExtSemaphoreSignal:
  case cudaGraphNodeTypeExtSemaphoreWait:
    return gcap__rt_fail(fn, cudaErrorNotSupported, "external semaphore nodes are not supported by gcap");
  default: break;
  }
  return gcap__rt_fail(fn, cudaErrorInvalidValue, "nodeParams->type %d is no cudaGraphNodeType", (int)p->type);
}
