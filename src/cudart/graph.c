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

cudaError_t gcap__rt_memcpy3d_params_in(const char *fn, const struct cudaMemcpy3DParms *p, gcap_memcpy_3d_params *out) {
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
  for (size_t i = 0; edges && i < n; i++) {
    const cudaGraphEdgeData *d = &edges[i];
    int reserved = 0;
    for (size_t j = 0; j < sizeof d->reserved; j++) reserved |= d->reserved[j];
    /* What CUDA itself refuses: no node type has a to_port, and reserved bytes are zero. */
    if (d->to_port || reserved || d->type > cudaGraphDependencyTypeProgrammatic)
      return gcap__rt_fail(fn, cudaErrorInvalidValue,
                           "edge data %zu: to_port %u, type %u or reserved bytes are invalid", i, d->to_port, d->type);
    if (d->type || d->from_port)
      return gcap__rt_fail(fn, cudaErrorNotSupported,
                           "edge data %zu (type %u, from_port %u): gcap has only default edges", i, d->type,
                           d->from_port);
  }
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
  if (ndescs && !descs)
    return gcap__rt_fail(fn, cudaErrorInvalidValue, "accessDescCount %zu with accessDescs NULL", ndescs);
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
    struct cudaKernelNodeParams k = {p->kernel.func,           p->kernel.gridDim,      p->kernel.blockDim,
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
    if (!p->eventWait.event) return gcap__rt_fail(fn, cudaErrorInvalidValue, "eventWait.event is NULL");
    out->p.u.event = gcap__rt_event(p->eventWait.event);
    return cudaSuccess;
  case cudaGraphNodeTypeEventRecord:
    if (!p->eventRecord.event) return gcap__rt_fail(fn, cudaErrorInvalidValue, "eventRecord.event is NULL");
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

cudaError_t gcap__rt_graph_done(const char *fn, gcap_status st) {
  if (st == GCAP_ERROR_INVALID_HANDLE) return gcap__rt_fail(fn, cudaErrorInvalidValue, "%s", gcap_last_error_message());
  return gcap__rt_done(fn, st);
}

/* ---- Graphs ---- */

#define NODES(a) ((gcap_node *const *)(const void *)(a))

cudaError_t cudaGraphCreate(cudaGraph_t *pGraph, unsigned int flags) {
  gcap_context *ctx;
  cudaError_t e = gcap__rt_enter(&ctx);
  if (e) return e;
  if (!pGraph) return gcap__rt_fail(__func__, cudaErrorInvalidValue, "pGraph is NULL");
  if (flags) return gcap__rt_fail(__func__, cudaErrorInvalidValue, "flags %#x: must be 0", flags);
  gcap_graph *g;
  gcap_status st = gcap_graph_create(ctx, &g);
  if (st == GCAP_SUCCESS) *pGraph = (cudaGraph_t)(void *)g;
  return gcap__rt_graph_done(__func__, st);
}

/* Whether g is a live graph: its node count can be read. */
static cudaError_t check_graph(const char *fn, cudaGraph_t graph, const char *what) {
  if (!graph) return gcap__rt_fail(fn, cudaErrorInvalidValue, "%s is NULL", what);
  size_t n;
  return gcap__rt_graph_done(fn, gcap_graph_get_nodes(gcap__rt_graph(graph), NULL, &n));
}

cudaError_t cudaGraphDestroy(cudaGraph_t graph) {
  gcap_context *ctx;
  cudaError_t e = gcap__rt_enter(&ctx);
  if (!e) e = check_graph(__func__, graph, "graph");
  if (e) return e;
  gcap_graph_destroy(gcap__rt_graph(graph));
  return cudaSuccess;
}

cudaError_t cudaGraphClone(cudaGraph_t *pGraphClone, cudaGraph_t originalGraph) {
  gcap_context *ctx;
  cudaError_t e = gcap__rt_enter(&ctx);
  if (e) return e;
  if (!pGraphClone) return gcap__rt_fail(__func__, cudaErrorInvalidValue, "pGraphClone is NULL");
  if (!originalGraph) return gcap__rt_fail(__func__, cudaErrorInvalidValue, "originalGraph is NULL");
  gcap_graph *g;
  gcap_status st = gcap_graph_clone(gcap__rt_graph(originalGraph), &g);
  if (st == GCAP_SUCCESS) *pGraphClone = (cudaGraph_t)(void *)g;
  return gcap__rt_graph_done(__func__, st);
}

cudaError_t cudaGraphNodeFindInClone(cudaGraphNode_t *pNode, cudaGraphNode_t originalNode, cudaGraph_t clonedGraph) {
  gcap_context *ctx;
  cudaError_t e = gcap__rt_enter(&ctx);
  if (e) return e;
  if (!pNode) return gcap__rt_fail(__func__, cudaErrorInvalidValue, "pNode is NULL");
  if (!originalNode) return gcap__rt_fail(__func__, cudaErrorInvalidValue, "originalNode is NULL");
  if (!clonedGraph) return gcap__rt_fail(__func__, cudaErrorInvalidValue, "clonedGraph is NULL");
  gcap_node *n;
  gcap_status st = gcap_graph_node_find_in_clone(gcap__rt_graph(clonedGraph), gcap__rt_node(originalNode), &n);
  if (st == GCAP_SUCCESS) *pNode = (cudaGraphNode_t)(void *)n;
  return gcap__rt_graph_done(__func__, st);
}

/* ---- Adding nodes ---- */

/* What every cudaGraphAdd*Node checks first. */
static cudaError_t add_begin(const char *fn, gcap_context **ctx, cudaGraphNode_t *pGraphNode, cudaGraph_t graph,
                             const cudaGraphNode_t *deps, size_t n) {
  cudaError_t e = gcap__rt_enter(ctx);
  if (e) return e;
  if (!pGraphNode) return gcap__rt_fail(fn, cudaErrorInvalidValue, "pGraphNode is NULL");
  if (!graph) return gcap__rt_fail(fn, cudaErrorInvalidValue, "graph is NULL");
  if (n && !deps) return gcap__rt_fail(fn, cudaErrorInvalidValue, "numDependencies %zu with pDependencies NULL", n);
  return cudaSuccess;
}

static cudaError_t add_end(const char *fn, gcap_status st, gcap_node *n, cudaGraphNode_t *pGraphNode) {
  if (st == GCAP_SUCCESS) *pGraphNode = (cudaGraphNode_t)(void *)n;
  return gcap__rt_graph_done(fn, st);
}

cudaError_t cudaGraphAddKernelNode(cudaGraphNode_t *pGraphNode, cudaGraph_t graph, const cudaGraphNode_t *pDependencies,
                                   size_t numDependencies, const struct cudaKernelNodeParams *pNodeParams) {
  gcap_context *ctx;
  gcap_kernel_node_params p;
  cudaError_t e = add_begin(__func__, &ctx, pGraphNode, graph, pDependencies, numDependencies);
  if (!e) e = gcap__rt_kernel_params_in(__func__, pNodeParams, &p);
  if (e) return e;
  gcap_node *n = NULL;
  gcap_status st = gcap_graph_add_kernel_node(gcap__rt_graph(graph), NODES(pDependencies), numDependencies, &p, &n);
  return add_end(__func__, st, n, pGraphNode);
}

cudaError_t cudaGraphAddMemcpyNode(cudaGraphNode_t *pGraphNode, cudaGraph_t graph, const cudaGraphNode_t *pDependencies,
                                   size_t numDependencies, const struct cudaMemcpy3DParms *pCopyParams) {
  gcap_context *ctx;
  gcap_memcpy_3d_params p;
  cudaError_t e = add_begin(__func__, &ctx, pGraphNode, graph, pDependencies, numDependencies);
  if (!e) e = gcap__rt_memcpy3d_params_in(__func__, pCopyParams, &p);
  if (e) return e;
  gcap_node *n = NULL;
  gcap_status st = gcap_graph_add_memcpy_3d_node(gcap__rt_graph(graph), NODES(pDependencies), numDependencies, &p, &n);
  return add_end(__func__, st, n, pGraphNode);
}

static cudaError_t add_copy_1d(const char *fn, cudaGraphNode_t *pGraphNode, cudaGraph_t graph,
                               const cudaGraphNode_t *deps, size_t ndeps, void *dst, const void *src, size_t count,
                               enum cudaMemcpyKind kind) {
  gcap_context *ctx;
  gcap_memcpy_node_params p = {.dst = dst, .src = src, .bytes = count};
  cudaError_t e = add_begin(fn, &ctx, pGraphNode, graph, deps, ndeps);
  if (!e) e = gcap__rt_memcpy_kind_in(fn, kind, &p.kind);
  if (e) return e;
  gcap_node *n = NULL;
  gcap_status st = gcap_graph_add_memcpy_node(gcap__rt_graph(graph), NODES(deps), ndeps, &p, &n);
  return add_end(fn, st, n, pGraphNode);
}

cudaError_t cudaGraphAddMemcpyNode1D(cudaGraphNode_t *pGraphNode, cudaGraph_t graph,
                                     const cudaGraphNode_t *pDependencies, size_t numDependencies, void *dst,
                                     const void *src, size_t count, enum cudaMemcpyKind kind) {
  return add_copy_1d(__func__, pGraphNode, graph, pDependencies, numDependencies, dst, src, count, kind);
}

cudaError_t gcap__rt_symbol_span(const char *fn, const void *symbol, size_t count, size_t offset, int to_symbol,
                                 enum cudaMemcpyKind kind, void **addr) {
  void *base;
  size_t size;
  cudaError_t e = gcap__rt_symbol(symbol, &base, &size);
  if (e) return e;
  if (offset > size || count > size - offset)
    return gcap__rt_fail(fn, cudaErrorInvalidValue, "offset %zu + count %zu exceed the symbol's %zu bytes", offset,
                         count, size);
  int ok = kind == cudaMemcpyDefault || kind == cudaMemcpyDeviceToDevice ||
           kind == (to_symbol ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost);
  if (!ok)
    return gcap__rt_fail(fn, cudaErrorInvalidMemcpyDirection, "kind %d cannot copy %s a symbol", (int)kind,
                         to_symbol ? "to" : "from");
  *addr = (char *)base + offset;
  return cudaSuccess;
}

cudaError_t cudaGraphAddMemcpyNodeToSymbol(cudaGraphNode_t *pGraphNode, cudaGraph_t graph,
                                           const cudaGraphNode_t *pDependencies, size_t numDependencies,
                                           const void *symbol, const void *src, size_t count, size_t offset,
                                           enum cudaMemcpyKind kind) {
  gcap_context *ctx;
  void *dst;
  cudaError_t e = add_begin(__func__, &ctx, pGraphNode, graph, pDependencies, numDependencies);
  if (!e) e = gcap__rt_symbol_span(__func__, symbol, count, offset, 1, kind, &dst);
  if (e) return e;
  return add_copy_1d(__func__, pGraphNode, graph, pDependencies, numDependencies, dst, src, count, kind);
}

cudaError_t cudaGraphAddMemcpyNodeFromSymbol(cudaGraphNode_t *pGraphNode, cudaGraph_t graph,
                                             const cudaGraphNode_t *pDependencies, size_t numDependencies, void *dst,
                                             const void *symbol, size_t count, size_t offset,
                                             enum cudaMemcpyKind kind) {
  gcap_context *ctx;
  void *src;
  cudaError_t e = add_begin(__func__, &ctx, pGraphNode, graph, pDependencies, numDependencies);
  if (!e) e = gcap__rt_symbol_span(__func__, symbol, count, offset, 0, kind, &src);
  if (e) return e;
  return add_copy_1d(__func__, pGraphNode, graph, pDependencies, numDependencies, dst, src, count, kind);
}

cudaError_t cudaGraphAddMemsetNode(cudaGraphNode_t *pGraphNode, cudaGraph_t graph, const cudaGraphNode_t *pDependencies,
                                   size_t numDependencies, const struct cudaMemsetParams *pMemsetParams) {
  gcap_context *ctx;
  gcap_memset_node_params p;
  cudaError_t e = add_begin(__func__, &ctx, pGraphNode, graph, pDependencies, numDependencies);
  if (!e) e = gcap__rt_memset_params_in(__func__, pMemsetParams, &p);
  if (e) return e;
  gcap_node *n = NULL;
  gcap_status st = gcap_graph_add_memset_node(gcap__rt_graph(graph), NODES(pDependencies), numDependencies, &p, &n);
  return add_end(__func__, st, n, pGraphNode);
}

cudaError_t cudaGraphAddHostNode(cudaGraphNode_t *pGraphNode, cudaGraph_t graph, const cudaGraphNode_t *pDependencies,
                                 size_t numDependencies, const struct cudaHostNodeParams *pNodeParams) {
  gcap_context *ctx;
  gcap_host_node_params p;
  cudaError_t e = add_begin(__func__, &ctx, pGraphNode, graph, pDependencies, numDependencies);
  if (!e) e = gcap__rt_host_params_in(__func__, pNodeParams, &p);
  if (e) return e;
  gcap_node *n = NULL;
  gcap_status st = gcap_graph_add_host_node(gcap__rt_graph(graph), NODES(pDependencies), numDependencies, &p, &n);
  return add_end(__func__, st, n, pGraphNode);
}

cudaError_t cudaGraphAddEmptyNode(cudaGraphNode_t *pGraphNode, cudaGraph_t graph, const cudaGraphNode_t *pDependencies,
                                  size_t numDependencies) {
  gcap_context *ctx;
  cudaError_t e = add_begin(__func__, &ctx, pGraphNode, graph, pDependencies, numDependencies);
  if (e) return e;
  gcap_node *n = NULL;
  gcap_status st = gcap_graph_add_empty_node(gcap__rt_graph(graph), NODES(pDependencies), numDependencies, &n);
  return add_end(__func__, st, n, pGraphNode);
}

cudaError_t cudaGraphAddChildGraphNode(cudaGraphNode_t *pGraphNode, cudaGraph_t graph,
                                       const cudaGraphNode_t *pDependencies, size_t numDependencies,
                                       cudaGraph_t childGraph) {
  gcap_context *ctx;
  cudaError_t e = add_begin(__func__, &ctx, pGraphNode, graph, pDependencies, numDependencies);
  if (e) return e;
  if (!childGraph) return gcap__rt_fail(__func__, cudaErrorInvalidValue, "childGraph is NULL");
  gcap_node *n = NULL;
  gcap_status st = gcap_graph_add_child_graph_node(gcap__rt_graph(graph), NODES(pDependencies), numDependencies,
                                                   gcap__rt_graph(childGraph), &n);
  return add_end(__func__, st, n, pGraphNode);
}

cudaError_t cudaGraphAddEventRecordNode(cudaGraphNode_t *pGraphNode, cudaGraph_t graph,
                                        const cudaGraphNode_t *pDependencies, size_t numDependencies,
                                        cudaEvent_t event) {
  gcap_context *ctx;
  cudaError_t e = add_begin(__func__, &ctx, pGraphNode, graph, pDependencies, numDependencies);
  if (e) return e;
  if (!event) return gcap__rt_fail(__func__, cudaErrorInvalidValue, "event is NULL");
  gcap_node *n = NULL;
  gcap_status st = gcap_graph_add_event_record_node(gcap__rt_graph(graph), NODES(pDependencies), numDependencies,
                                                    gcap__rt_event(event), &n);
  return add_end(__func__, st, n, pGraphNode);
}

cudaError_t cudaGraphAddEventWaitNode(cudaGraphNode_t *pGraphNode, cudaGraph_t graph,
                                      const cudaGraphNode_t *pDependencies, size_t numDependencies, cudaEvent_t event) {
  gcap_context *ctx;
  cudaError_t e = add_begin(__func__, &ctx, pGraphNode, graph, pDependencies, numDependencies);
  if (e) return e;
  if (!event) return gcap__rt_fail(__func__, cudaErrorInvalidValue, "event is NULL");
  gcap_node *n = NULL;
  gcap_status st = gcap_graph_add_event_wait_node(gcap__rt_graph(graph), NODES(pDependencies), numDependencies,
                                                  gcap__rt_event(event), &n);
  return add_end(__func__, st, n, pGraphNode);
}

cudaError_t cudaGraphAddMemAllocNode(cudaGraphNode_t *pGraphNode, cudaGraph_t graph,
                                     const cudaGraphNode_t *pDependencies, size_t numDependencies,
                                     struct cudaMemAllocNodeParams *nodeParams) {
  gcap_context *ctx;
  gcap_mem_alloc_node_params p;
  cudaError_t e = add_begin(__func__, &ctx, pGraphNode, graph, pDependencies, numDependencies);
  if (e) return e;
  if (!nodeParams) return gcap__rt_fail(__func__, cudaErrorInvalidValue, "nodeParams is NULL");
  e = mem_alloc_params_in(__func__, &nodeParams->poolProps, nodeParams->accessDescs, nodeParams->accessDescCount,
                          nodeParams->bytesize, &p);
  if (e) return e;
  gcap_node *n = NULL;
  gcap_status st = gcap_graph_add_mem_alloc_node(gcap__rt_graph(graph), NODES(pDependencies), numDependencies, &p, &n);
  if (st == GCAP_SUCCESS) nodeParams->dptr = p.dptr;
  return add_end(__func__, st, n, pGraphNode);
}

cudaError_t cudaGraphAddMemFreeNode(cudaGraphNode_t *pGraphNode, cudaGraph_t graph,
                                    const cudaGraphNode_t *pDependencies, size_t numDependencies, void *dptr) {
  gcap_context *ctx;
  cudaError_t e = add_begin(__func__, &ctx, pGraphNode, graph, pDependencies, numDependencies);
  if (e) return e;
  gcap_node *n = NULL;
  gcap_status st = gcap_graph_add_mem_free_node(gcap__rt_graph(graph), NODES(pDependencies), numDependencies, dptr, &n);
  return add_end(__func__, st, n, pGraphNode);
}

cudaError_t cudaGraphAddNode(cudaGraphNode_t *pGraphNode, cudaGraph_t graph, const cudaGraphNode_t *pDependencies,
                             const cudaGraphEdgeData *dependencyData, size_t numDependencies,
                             struct cudaGraphNodeParams *nodeParams) {
  gcap_context *ctx;
  struct gcap__rt_node_params p;
  cudaError_t e = add_begin(__func__, &ctx, pGraphNode, graph, pDependencies, numDependencies);
  if (!e) e = gcap__rt_edges_in(__func__, dependencyData, numDependencies);
  if (!e) e = gcap__rt_node_params_in(__func__, nodeParams, &p);
  if (e) return e;
  gcap_graph *g = gcap__rt_graph(graph);
  gcap_node *n = NULL;
  gcap_status st;
  if (p.copy_3d) st = gcap_graph_add_memcpy_3d_node(g, NODES(pDependencies), numDependencies, &p.copy3d, &n);
  else if (p.p.type == GCAP_NODE_CONDITIONAL) {
    cudaGraph_t *bodies;
    e = gcap__rt_add_conditional(__func__, ctx, g, NODES(pDependencies), numDependencies, &p.p.u.conditional, &bodies,
                                 &n);
    if (e) return e;
    nodeParams->conditional.phGraph_out = bodies;
    *pGraphNode = (cudaGraphNode_t)(void *)n;
    return cudaSuccess;
  } else st = gcap_graph_add_node(g, NODES(pDependencies), numDependencies, &p.p, &n);
  if (st == GCAP_SUCCESS && p.p.type == GCAP_NODE_MEM_ALLOC) nodeParams->alloc.dptr = p.p.u.mem_alloc.dptr;
  return add_end(__func__, st, n, pGraphNode);
}

/* ---- Edges ---- */

cudaError_t cudaGraphAddDependencies(cudaGraph_t graph, const cudaGraphNode_t *from, const cudaGraphNode_t *to,
                                     const cudaGraphEdgeData *edgeData, size_t numDependencies) {
  gcap_context *ctx;
  cudaError_t e = gcap__rt_enter(&ctx);
  if (e) return e;
  if (!graph) return gcap__rt_fail(__func__, cudaErrorInvalidValue, "graph is NULL");
  if (!numDependencies) return cudaSuccess;
  if (!from || !to) return gcap__rt_fail(__func__, cudaErrorInvalidValue, "%s is NULL", from ? "to" : "from");
  e = gcap__rt_edges_in(__func__, edgeData, numDependencies);
  if (e) return e;
  return gcap__rt_graph_done(
      __func__, gcap_graph_add_dependencies(gcap__rt_graph(graph), NODES(from), NODES(to), numDependencies));
}

cudaError_t cudaGraphRemoveDependencies(cudaGraph_t graph, const cudaGraphNode_t *from, const cudaGraphNode_t *to,
                                        const cudaGraphEdgeData *edgeData, size_t numDependencies) {
  gcap_context *ctx;
  cudaError_t e = gcap__rt_enter(&ctx);
  if (e) return e;
  if (!graph) return gcap__rt_fail(__func__, cudaErrorInvalidValue, "graph is NULL");
  if (!numDependencies) return cudaSuccess;
  if (!from || !to) return gcap__rt_fail(__func__, cudaErrorInvalidValue, "%s is NULL", from ? "to" : "from");
  /* gcap's edges all have default data: an edge named with other data does not exist. */
  static const cudaGraphEdgeData zero;
  for (size_t i = 0; edgeData && i < numDependencies; i++)
    if (memcmp(&edgeData[i], &zero, sizeof zero))
      return gcap__rt_fail(__func__, cudaErrorInvalidValue, "pair %zu: there is no edge with edge data of type %u", i,
                           edgeData[i].type);
  return gcap__rt_graph_done(
      __func__, gcap_graph_remove_dependencies(gcap__rt_graph(graph), NODES(from), NODES(to), numDependencies));
}

cudaError_t cudaGraphDestroyNode(cudaGraphNode_t node) {
  gcap_context *ctx;
  cudaError_t e = gcap__rt_enter(&ctx);
  if (e) return e;
  if (!node) return gcap__rt_fail(__func__, cudaErrorInvalidValue, "node is NULL");
  return gcap__rt_graph_done(__func__, gcap_graph_destroy_node(gcap__rt_node(node)));
}

/* ---- Enumeration ---- */

cudaError_t cudaGraphGetNodes(cudaGraph_t graph, cudaGraphNode_t *nodes, size_t *numNodes) {
  gcap_context *ctx;
  cudaError_t e = gcap__rt_enter(&ctx);
  if (e) return e;
  if (!graph) return gcap__rt_fail(__func__, cudaErrorInvalidValue, "graph is NULL");
  if (!numNodes) return gcap__rt_fail(__func__, cudaErrorInvalidValue, "numNodes is NULL");
  return gcap__rt_graph_done(__func__,
                             gcap_graph_get_nodes(gcap__rt_graph(graph), (gcap_node **)(void *)nodes, numNodes));
}

cudaError_t cudaGraphGetRootNodes(cudaGraph_t graph, cudaGraphNode_t *pRootNodes, size_t *pNumRootNodes) {
  gcap_context *ctx;
  cudaError_t e = gcap__rt_enter(&ctx);
  if (e) return e;
  if (!graph) return gcap__rt_fail(__func__, cudaErrorInvalidValue, "graph is NULL");
  if (!pNumRootNodes) return gcap__rt_fail(__func__, cudaErrorInvalidValue, "pNumRootNodes is NULL");
  return gcap__rt_graph_done(
      __func__, gcap_graph_get_root_nodes(gcap__rt_graph(graph), (gcap_node **)(void *)pRootNodes, pNumRootNodes));
}

/* Edge data for the entries an enumeration filled (all default) and the padding. */
static void zero_edges(cudaGraphEdgeData *edgeData, size_t count) {
  if (edgeData && count) memset(edgeData, 0, count * sizeof *edgeData);
}

cudaError_t cudaGraphGetEdges(cudaGraph_t graph, cudaGraphNode_t *from, cudaGraphNode_t *to,
                              cudaGraphEdgeData *edgeData, size_t *numEdges) {
  gcap_context *ctx;
  cudaError_t e = gcap__rt_enter(&ctx);
  if (e) return e;
  if (!graph) return gcap__rt_fail(__func__, cudaErrorInvalidValue, "graph is NULL");
  if (!numEdges) return gcap__rt_fail(__func__, cudaErrorInvalidValue, "numEdges is NULL");
  if (edgeData && (!from || !to))
    return gcap__rt_fail(__func__, cudaErrorInvalidValue, "edgeData is given but %s is NULL", from ? "to" : "from");
  size_t room = *numEdges;
  e = gcap__rt_graph_done(__func__, gcap_graph_get_edges(gcap__rt_graph(graph), (gcap_node **)(void *)from,
                                                         (gcap_node **)(void *)to, numEdges));
  if (!e && from) zero_edges(edgeData, room);
  return e;
}

static cudaError_t neighbours(const char *fn, cudaGraphNode_t node, cudaGraphNode_t *nodes, cudaGraphEdgeData *edgeData,
                              size_t *count, const char *what, int dependents) {
  gcap_context *ctx;
  cudaError_t e = gcap__rt_enter(&ctx);
  if (e) return e;
  if (!node) return gcap__rt_fail(fn, cudaErrorInvalidValue, "node is NULL");
  if (!count) return gcap__rt_fail(fn, cudaErrorInvalidValue, "%s is NULL", what);
  if (edgeData && !nodes)
    return gcap__rt_fail(fn, cudaErrorInvalidValue, "edgeData is given but the array of nodes is NULL");
  size_t room = *count;
  gcap_node **out = (gcap_node **)(void *)nodes;
  gcap_status st = dependents ? gcap_node_get_dependents(gcap__rt_node(node), out, count)
                              : gcap_node_get_dependencies(gcap__rt_node(node), out, count);
  e = gcap__rt_graph_done(fn, st);
  if (!e && nodes) zero_edges(edgeData, room);
  return e;
}

cudaError_t cudaGraphNodeGetDependencies(cudaGraphNode_t node, cudaGraphNode_t *pDependencies,
                                         cudaGraphEdgeData *edgeData, size_t *pNumDependencies) {
  return neighbours(__func__, node, pDependencies, edgeData, pNumDependencies, "pNumDependencies", 0);
}

cudaError_t cudaGraphNodeGetDependentNodes(cudaGraphNode_t node, cudaGraphNode_t *pDependentNodes,
                                           cudaGraphEdgeData *edgeData, size_t *pNumDependentNodes) {
  return neighbours(__func__, node, pDependentNodes, edgeData, pNumDependentNodes, "pNumDependentNodes", 1);
}

cudaError_t cudaGraphNodeGetType(cudaGraphNode_t node, enum cudaGraphNodeType *pType) {
  gcap_context *ctx;
  cudaError_t e = gcap__rt_enter(&ctx);
  if (e) return e;
  if (!node) return gcap__rt_fail(__func__, cudaErrorInvalidValue, "node is NULL");
  if (!pType) return gcap__rt_fail(__func__, cudaErrorInvalidValue, "pType is NULL");
  gcap_node_type t = gcap_node_get_type(gcap__rt_node(node));
  if (t == (gcap_node_type)-1) return gcap__rt_fail(__func__, cudaErrorInvalidValue, "%s", gcap_last_error_message());
  *pType = (enum cudaGraphNodeType)t;
  return cudaSuccess;
}

_Static_assert(cudaGraphNodeTypeKernel == (int)GCAP_NODE_KERNEL && cudaGraphNodeTypeMemcpy == (int)GCAP_NODE_MEMCPY &&
                   cudaGraphNodeTypeMemset == (int)GCAP_NODE_MEMSET && cudaGraphNodeTypeHost == (int)GCAP_NODE_HOST &&
                   cudaGraphNodeTypeGraph == (int)GCAP_NODE_GRAPH && cudaGraphNodeTypeEmpty == (int)GCAP_NODE_EMPTY &&
                   cudaGraphNodeTypeWaitEvent == (int)GCAP_NODE_EVENT_WAIT &&
                   cudaGraphNodeTypeEventRecord == (int)GCAP_NODE_EVENT_RECORD &&
                   cudaGraphNodeTypeMemAlloc == (int)GCAP_NODE_MEM_ALLOC &&
                   cudaGraphNodeTypeMemFree == (int)GCAP_NODE_MEM_FREE &&
                   cudaGraphNodeTypeConditional == (int)GCAP_NODE_CONDITIONAL,
               "gcap's node types are the runtime's");
_Static_assert(cudaGraphCondTypeIf == (int)GCAP_CONDITIONAL_IF &&
                   cudaGraphCondTypeWhile == (int)GCAP_CONDITIONAL_WHILE &&
                   cudaGraphCondTypeSwitch == (int)GCAP_CONDITIONAL_SWITCH &&
                   cudaGraphCondAssignDefault == GCAP_GRAPH_COND_ASSIGN_DEFAULT,
               "gcap's conditional types and flags are the runtime's");
_Static_assert(cudaMemcpyDefault == (int)GCAP_MEMCPY_DEFAULT, "gcap's copy kinds are the runtime's");
