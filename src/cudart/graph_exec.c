/* Executable graphs: instantiation, upload, launch, whole-graph update, the executable's
 * per-node setters and switches, and the device's graph memory. */
#include "cudart.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

cudaError_t cudaGraphInstantiateWithParams_ptsz(cudaGraphExec_t *exec, cudaGraph_t graph,
                                                cudaGraphInstantiateParams *params);
cudaError_t cudaGraphLaunch_ptsz(cudaGraphExec_t exec, cudaStream_t stream);
cudaError_t cudaGraphUpload_ptsz(cudaGraphExec_t exec, cudaStream_t stream);

/* CUDA documents cudaErrorInvalidValue for a bad executable, graph or node handle in these calls,
 * where the generic mapping would give cudaErrorInvalidResourceHandle. */
static cudaError_t done(const char *fn, gcap_status st) {
  if (st == GCAP_ERROR_INVALID_HANDLE) return gcap__rt_fail(fn, cudaErrorInvalidValue, "%s", gcap_last_error_message());
  return gcap__rt_done(fn, st);
}

/* ---- Instantiation ---- */

#define KNOWN_FLAGS                                                                                                    \
  ((unsigned long long)(cudaGraphInstantiateFlagAutoFreeOnLaunch | cudaGraphInstantiateFlagUpload |                    \
                        cudaGraphInstantiateFlagDeviceLaunch | cudaGraphInstantiateFlagUseNodePriority))

/* gcap's flags for CUDA's; the upload flag only where `upload` allows it. */
static cudaError_t instantiate_flags(const char *fn, unsigned long long flags, int upload, unsigned *out) {
  unsigned long long allowed = KNOWN_FLAGS & ~(upload ? 0ull : (unsigned long long)cudaGraphInstantiateFlagUpload);
  if (flags & ~allowed)
    return gcap__rt_fail(fn, cudaErrorInvalidValue, "flags 0x%llx has unknown bits 0x%llx%s", flags, flags & ~allowed,
                         flags & ~allowed & cudaGraphInstantiateFlagUpload
                             ? " (cudaGraphInstantiateFlagUpload is for cudaGraphInstantiateWithParams)"
                             : "");
  if (flags & cudaGraphInstantiateFlagDeviceLaunch)
    return gcap__rt_fail(fn, cudaErrorNotSupported,
                         "flags 0x%llx: cudaGraphInstantiateFlagDeviceLaunch is not supported by gcap (graphs are "
                         "launched from the host only)",
                         flags);
  unsigned f = 0;
  if (flags & cudaGraphInstantiateFlagAutoFreeOnLaunch) f |= GCAP_INSTANTIATE_AUTO_FREE_ON_LAUNCH;
  if (flags & cudaGraphInstantiateFlagUpload) f |= GCAP_INSTANTIATE_UPLOAD;
  if (flags & cudaGraphInstantiateFlagUseNodePriority) f |= GCAP_INSTANTIATE_USE_NODE_PRIORITY;
  *out = f;
  return cudaSuccess;
}

/* With GCAP_CUDART_GRAPHS=DIR, every instantiated graph is written to DIR as DOT, named by the
 * instantiation's order and the graph's node count (gcap-run --graphs). A failure to write is
 * said once and does not fail the instantiation. */
static unsigned long instantiations;

static void write_graph(const gcap_graph *g) {
  unsigned long order = __atomic_add_fetch(&instantiations, 1, __ATOMIC_RELAXED);
  const char *dir = getenv("GCAP_CUDART_GRAPHS");
  if (!dir || !*dir) return;
  static int said;
  char path[4096];
  int n = snprintf(path, sizeof path, "%s/graph-%03lu-%zunodes.dot", dir, order, gcap_graph_node_count(g));
  const char *why = NULL;
  FILE *f = NULL;
  if (n < 0 || (size_t)n >= sizeof path) why = "the path is too long";
  else if (!(f = fopen(path, "w"))) why = strerror(errno);
  else {
    gcap_status st = gcap_graph_write_dot(g, f, GCAP_DOT_VERBOSE);
    if (fclose(f) != 0 && st == GCAP_SUCCESS) why = strerror(errno);
    else if (st != GCAP_SUCCESS) why = gcap_last_error_message();
  }
  if (why && !__atomic_exchange_n(&said, 1, __ATOMIC_RELAXED))
    fprintf(stderr, "gcap-cudart: GCAP_CUDART_GRAPHS: cannot write %s: %s (graphs are not written)\n",
            n > 0 && (size_t)n < sizeof path ? path : dir, why);
}

static cudaError_t instantiate(const char *fn, cudaGraphExec_t *exec, cudaGraph_t graph, unsigned long long flags) {
  gcap_context *ctx;
  cudaError_t e = gcap__rt_enter(&ctx);
  if (e) return e;
  if (!exec) return gcap__rt_fail(fn, cudaErrorInvalidValue, "pGraphExec is NULL");
  *exec = NULL;
  if (!graph) return gcap__rt_fail(fn, cudaErrorInvalidValue, "graph is NULL");
  unsigned f = 0;
  if ((e = instantiate_flags(fn, flags, 0, &f))) return e;
  gcap_exec *x;
  if ((e = done(fn, gcap_graph_instantiate(gcap__rt_graph(graph), f, &x)))) return e;
  write_graph(gcap__rt_graph(graph));
  gcap__rt_count(GCAP__RT_INSTANTIATIONS);
  *exec = (cudaGraphExec_t)(void *)x;
  return cudaSuccess;
}

cudaError_t cudaGraphInstantiate(cudaGraphExec_t *exec, cudaGraph_t graph, unsigned long long flags) {
  return instantiate(__func__, exec, graph, flags);
}

cudaError_t cudaGraphInstantiateWithFlags(cudaGraphExec_t *exec, cudaGraph_t graph, unsigned long long flags) {
  return instantiate(__func__, exec, graph, flags);
}

static cudaError_t instantiate_with_params(const char *fn, cudaGraphExec_t *exec, cudaGraph_t graph,
                                           cudaGraphInstantiateParams *params, enum gcap__rt_default d) {
  gcap_context *ctx;
  cudaError_t e = gcap__rt_enter(&ctx);
  if (e) return e;
  if (!params) return gcap__rt_fail(fn, cudaErrorInvalidValue, "instantiateParams is NULL");
  params->errNode_out = NULL;
  params->result_out = cudaGraphInstantiateError;
  if (!exec) return gcap__rt_fail(fn, cudaErrorInvalidValue, "pGraphExec is NULL");
  *exec = NULL;
  if (!graph) return gcap__rt_fail(fn, cudaErrorInvalidValue, "graph is NULL");
  gcap_instantiate_params p = {0};
  if ((e = instantiate_flags(fn, params->flags, 1, &p.flags))) return e;
  if ((p.flags & GCAP_INSTANTIATE_UPLOAD) && (e = gcap__rt_stream(params->uploadStream, d, &p.upload_stream))) return e;
  gcap_exec *x;
  gcap_status st = gcap_graph_instantiate_with_params(gcap__rt_graph(graph), &p, &x);
  params->errNode_out = (cudaGraphNode_t)(void *)p.error_node_out;
  params->result_out = (cudaGraphInstantiateResult)p.result_out;
  if ((e = done(fn, st))) return e;
  write_graph(gcap__rt_graph(graph));
  gcap__rt_count(GCAP__RT_INSTANTIATIONS);
  *exec = (cudaGraphExec_t)(void *)x;
  return cudaSuccess;
}

cudaError_t cudaGraphInstantiateWithParams(cudaGraphExec_t *exec, cudaGraph_t graph,
                                           cudaGraphInstantiateParams *params) {
  return instantiate_with_params(__func__, exec, graph, params, GCAP__RT_LEGACY);
}

cudaError_t cudaGraphInstantiateWithParams_ptsz(cudaGraphExec_t *exec, cudaGraph_t graph,
                                                cudaGraphInstantiateParams *params) {
  return instantiate_with_params(__func__, exec, graph, params, GCAP__RT_PER_THREAD);
}

cudaError_t cudaGraphExecGetFlags(cudaGraphExec_t exec, unsigned long long *flags) {
  gcap_context *ctx;
  cudaError_t e = gcap__rt_enter(&ctx);
  if (e) return e;
  if (!flags) return gcap__rt_fail(__func__, cudaErrorInvalidValue, "flags is NULL");
  unsigned f = 0;
  if ((e = done(__func__, gcap_exec_get_flags(gcap__rt_exec(exec), &f)))) return e;
  /* CUDA leaves out the upload flag: it does not change the executable. */
  *flags = 0;
  if (f & GCAP_INSTANTIATE_AUTO_FREE_ON_LAUNCH) *flags |= cudaGraphInstantiateFlagAutoFreeOnLaunch;
  if (f & GCAP_INSTANTIATE_USE_NODE_PRIORITY) *flags |= cudaGraphInstantiateFlagUseNodePriority;
  return cudaSuccess;
}

/* ---- Launch ---- */

static cudaError_t launch(const char *fn, cudaGraphExec_t exec, cudaStream_t stream, enum gcap__rt_default d,
                          gcap_status (*op)(gcap_exec *, gcap_stream *)) {
  gcap_stream *s;
  cudaError_t e = gcap__rt_stream(stream, d, &s);
  if (e) return e;
  if (!exec) return gcap__rt_fail(fn, cudaErrorInvalidValue, "graphExec is NULL");
  e = done(fn, op(gcap__rt_exec(exec), s));
  if (!e && op == gcap_exec_launch) gcap__rt_count(GCAP__RT_GRAPH_LAUNCHES);
  return e;
}

cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t stream) {
  return launch(__func__, exec, stream, GCAP__RT_LEGACY, gcap_exec_launch);
}

cudaError_t cudaGraphLaunch_ptsz(cudaGraphExec_t exec, cudaStream_t stream) {
  return launch(__func__, exec, stream, GCAP__RT_PER_THREAD, gcap_exec_launch);
}

cudaError_t cudaGraphUpload(cudaGraphExec_t exec, cudaStream_t stream) {
  return launch(__func__, exec, stream, GCAP__RT_LEGACY, gcap_exec_upload);
}

cudaError_t cudaGraphUpload_ptsz(cudaGraphExec_t exec, cudaStream_t stream) {
  return launch(__func__, exec, stream, GCAP__RT_PER_THREAD, gcap_exec_upload);
}

cudaError_t cudaGraphExecDestroy(cudaGraphExec_t exec) {
  gcap_context *ctx;
  cudaError_t e = gcap__rt_enter(&ctx);
  if (e) return e;
  if (!exec) return gcap__rt_fail(__func__, cudaErrorInvalidValue, "graphExec is NULL");
  unsigned f = 0;
  /* gcap_exec_destroy takes anything; CUDA refuses what is no executable. */
  if (gcap_exec_get_flags(gcap__rt_exec(exec), &f) != GCAP_SUCCESS)
    return gcap__rt_fail(__func__, cudaErrorInvalidValue, "graphExec %p is not a live executable graph (%s)",
                         (void *)exec, gcap_last_error_message());
  gcap_exec_destroy(gcap__rt_exec(exec));
  return cudaSuccess;
}

/* ---- Update ---- */

cudaError_t cudaGraphExecUpdate(cudaGraphExec_t exec, cudaGraph_t graph, cudaGraphExecUpdateResultInfo *info) {
  gcap_context *ctx;
  cudaError_t e = gcap__rt_enter(&ctx);
  if (e) return e;
  if (!info) return gcap__rt_fail(__func__, cudaErrorInvalidValue, "resultInfo is NULL");
  *info = (cudaGraphExecUpdateResultInfo){.result = cudaGraphExecUpdateError};
  if (!exec) return gcap__rt_fail(__func__, cudaErrorInvalidValue, "hGraphExec is NULL");
  if (!graph) return gcap__rt_fail(__func__, cudaErrorInvalidValue, "hGraph is NULL");
  gcap_exec_update_info i = {0};
  gcap_status st = gcap_exec_update(gcap__rt_exec(exec), gcap__rt_graph(graph), &i);
  if (st == GCAP_SUCCESS || st == GCAP_ERROR_GRAPH_EXEC_UPDATE_FAILURE) {
    info->result = (enum cudaGraphExecUpdateResult)i.result;
    info->errorNode = (cudaGraphNode_t)(void *)i.error_node;
    info->errorFromNode = (cudaGraphNode_t)(void *)i.error_from_node;
  }
  return done(__func__, st);
}

/* ---- The executable's per-node setters ---- */

static cudaError_t enter_node(const char *fn, cudaGraphExec_t exec, cudaGraphNode_t node) {
  gcap_context *ctx;
  cudaError_t e = gcap__rt_enter(&ctx);
  if (e) return e;
  if (!exec) return gcap__rt_fail(fn, cudaErrorInvalidValue, "hGraphExec is NULL");
  if (!node) return gcap__rt_fail(fn, cudaErrorInvalidValue, "node is NULL");
  return cudaSuccess;
}

cudaError_t cudaGraphExecKernelNodeSetParams(cudaGraphExec_t exec, cudaGraphNode_t node,
                                             const struct cudaKernelNodeParams *params) {
  cudaError_t e = enter_node(__func__, exec, node);
  if (e) return e;
  if (!params) return gcap__rt_fail(__func__, cudaErrorInvalidValue, "pNodeParams is NULL");
  gcap_kernel_node_params p;
  if ((e = gcap__rt_kernel_params_in(__func__, params, &p))) return e;
  return done(__func__, gcap_exec_kernel_node_set_params(gcap__rt_exec(exec), gcap__rt_node(node), &p));
}

cudaError_t cudaGraphExecMemcpyNodeSetParams(cudaGraphExec_t exec, cudaGraphNode_t node,
                                             const struct cudaMemcpy3DParms *params) {
  cudaError_t e = enter_node(__func__, exec, node);
  if (e) return e;
  if (!params) return gcap__rt_fail(__func__, cudaErrorInvalidValue, "pNodeParams is NULL");
  gcap_memcpy_3d_params p;
  if ((e = gcap__rt_memcpy3d_params_in(__func__, params, &p))) return e;
  return done(__func__, gcap_exec_memcpy_3d_node_set_params(gcap__rt_exec(exec), gcap__rt_node(node), &p));
}

static cudaError_t set_copy_1d(const char *fn, cudaGraphExec_t exec, cudaGraphNode_t node, void *dst, const void *src,
                               size_t count, enum cudaMemcpyKind kind) {
  gcap_memcpy_node_params p = {.dst = dst, .src = src, .bytes = count};
  cudaError_t e = gcap__rt_memcpy_kind_in(fn, kind, &p.kind);
  return e ? e : done(fn, gcap_exec_memcpy_node_set_params(gcap__rt_exec(exec), gcap__rt_node(node), &p));
}

cudaError_t cudaGraphExecMemcpyNodeSetParams1D(cudaGraphExec_t exec, cudaGraphNode_t node, void *dst, const void *src,
                                               size_t count, enum cudaMemcpyKind kind) {
  cudaError_t e = enter_node(__func__, exec, node);
  return e ? e : set_copy_1d(__func__, exec, node, dst, src, count, kind);
}

/* The symbol's bytes [offset, offset + count), or cudaErrorInvalidValue naming the range. */
static cudaError_t symbol_range(const char *fn, const void *symbol, size_t count, size_t offset, char **at) {
  void *base;
  size_t size;
  cudaError_t e = gcap__rt_symbol(symbol, &base, &size);
  if (e) return e; /* said by gcap__rt_symbol */
  if (offset > size || count > size - offset)
    return gcap__rt_fail(fn, cudaErrorInvalidValue, "count %zu at offset %zu passes the symbol's %zu bytes", count,
                         offset, size);
  *at = (char *)base + offset;
  return cudaSuccess;
}

cudaError_t cudaGraphExecMemcpyNodeSetParamsToSymbol(cudaGraphExec_t exec, cudaGraphNode_t node, const void *symbol,
                                                     const void *src, size_t count, size_t offset,
                                                     enum cudaMemcpyKind kind) {
  char *at = NULL;
  cudaError_t e = enter_node(__func__, exec, node);
  if (!e) e = symbol_range(__func__, symbol, count, offset, &at);
  if (!e && kind != cudaMemcpyHostToDevice && kind != cudaMemcpyDeviceToDevice && kind != cudaMemcpyDefault)
    e = gcap__rt_fail(__func__, cudaErrorInvalidMemcpyDirection, "kind %d: a copy to a symbol", (int)kind);
  return e ? e : set_copy_1d(__func__, exec, node, at, src, count, kind);
}

cudaError_t cudaGraphExecMemcpyNodeSetParamsFromSymbol(cudaGraphExec_t exec, cudaGraphNode_t node, void *dst,
                                                       const void *symbol, size_t count, size_t offset,
                                                       enum cudaMemcpyKind kind) {
  char *at = NULL;
  cudaError_t e = enter_node(__func__, exec, node);
  if (!e) e = symbol_range(__func__, symbol, count, offset, &at);
  if (!e && kind != cudaMemcpyDeviceToHost && kind != cudaMemcpyDeviceToDevice && kind != cudaMemcpyDefault)
    e = gcap__rt_fail(__func__, cudaErrorInvalidMemcpyDirection, "kind %d: a copy from a symbol", (int)kind);
  return e ? e : set_copy_1d(__func__, exec, node, dst, at, count, kind);
}

cudaError_t cudaGraphExecMemsetNodeSetParams(cudaGraphExec_t exec, cudaGraphNode_t node,
                                             const struct cudaMemsetParams *params) {
  cudaError_t e = enter_node(__func__, exec, node);
  if (e) return e;
  if (!params) return gcap__rt_fail(__func__, cudaErrorInvalidValue, "pNodeParams is NULL");
  gcap_memset_node_params p;
  if ((e = gcap__rt_memset_params_in(__func__, params, &p))) return e;
  return done(__func__, gcap_exec_memset_node_set_params(gcap__rt_exec(exec), gcap__rt_node(node), &p));
}

cudaError_t cudaGraphExecHostNodeSetParams(cudaGraphExec_t exec, cudaGraphNode_t node,
                                           const struct cudaHostNodeParams *params) {
  cudaError_t e = enter_node(__func__, exec, node);
  if (e) return e;
  if (!params) return gcap__rt_fail(__func__, cudaErrorInvalidValue, "pNodeParams is NULL");
  gcap_host_node_params p;
  if ((e = gcap__rt_host_params_in(__func__, params, &p))) return e;
  return done(__func__, gcap_exec_host_node_set_params(gcap__rt_exec(exec), gcap__rt_node(node), &p));
}

cudaError_t cudaGraphExecNodeSetParams(cudaGraphExec_t exec, cudaGraphNode_t node, struct cudaGraphNodeParams *params) {
  cudaError_t e = enter_node(__func__, exec, node);
  if (e) return e;
  if (!params) return gcap__rt_fail(__func__, cudaErrorInvalidValue, "nodeParams is NULL");
  struct gcap__rt_node_params p;
  if ((e = gcap__rt_node_params_in(__func__, params, &p))) return e;
  if (p.copy_3d)
    return done(__func__, gcap_exec_memcpy_3d_node_set_params(gcap__rt_exec(exec), gcap__rt_node(node), &p.copy3d));
  return done(__func__, gcap_exec_node_set_params(gcap__rt_exec(exec), gcap__rt_node(node), &p.p));
}

cudaError_t cudaGraphExecChildGraphNodeSetParams(cudaGraphExec_t exec, cudaGraphNode_t node, cudaGraph_t child) {
  cudaError_t e = enter_node(__func__, exec, node);
  if (e) return e;
  if (!child) return gcap__rt_fail(__func__, cudaErrorInvalidValue, "childGraph is NULL");
  return done(__func__,
              gcap_exec_child_graph_node_set_params(gcap__rt_exec(exec), gcap__rt_node(node), gcap__rt_graph(child)));
}

cudaError_t cudaGraphExecEventRecordNodeSetEvent(cudaGraphExec_t exec, cudaGraphNode_t node, cudaEvent_t event) {
  cudaError_t e = enter_node(__func__, exec, node);
  if (e) return e;
  if (!event) return gcap__rt_fail(__func__, cudaErrorInvalidValue, "event is NULL");
  return done(__func__,
              gcap_exec_event_record_node_set_event(gcap__rt_exec(exec), gcap__rt_node(node), gcap__rt_event(event)));
}

cudaError_t cudaGraphExecEventWaitNodeSetEvent(cudaGraphExec_t exec, cudaGraphNode_t node, cudaEvent_t event) {
  cudaError_t e = enter_node(__func__, exec, node);
  if (e) return e;
  if (!event) return gcap__rt_fail(__func__, cudaErrorInvalidValue, "event is NULL");
  return done(__func__,
              gcap_exec_event_wait_node_set_event(gcap__rt_exec(exec), gcap__rt_node(node), gcap__rt_event(event)));
}

cudaError_t cudaGraphNodeSetEnabled(cudaGraphExec_t exec, cudaGraphNode_t node, unsigned int enabled) {
  cudaError_t e = enter_node(__func__, exec, node);
  if (e) return e;
  return done(__func__, gcap_exec_node_set_enabled(gcap__rt_exec(exec), gcap__rt_node(node), enabled != 0));
}

cudaError_t cudaGraphNodeGetEnabled(cudaGraphExec_t exec, cudaGraphNode_t node, unsigned int *enabled) {
  cudaError_t e = enter_node(__func__, exec, node);
  if (e) return e;
  if (!enabled) return gcap__rt_fail(__func__, cudaErrorInvalidValue, "isEnabled is NULL");
  bool b;
  if ((e = done(__func__, gcap_exec_node_get_enabled(gcap__rt_exec(exec), gcap__rt_node(node), &b)))) return e;
  *enabled = b;
  return cudaSuccess;
}

/* ---- Graph memory of the device ---- */

static cudaError_t enter_device(const char *fn, int device, gcap_context **ctx) {
  cudaError_t e = gcap__rt_enter(ctx);
  if (e) return e;
  if (device != 0)
    return gcap__rt_fail(fn, cudaErrorInvalidDevice, "device %d: the simulated machine has one device, 0", device);
  return cudaSuccess;
}

static cudaError_t graph_mem_attribute(const char *fn, enum cudaGraphMemAttributeType attr,
                                       gcap_graph_mem_attribute *out) {
  switch (attr) {
  case cudaGraphMemAttrUsedMemCurrent: *out = GCAP_GRAPH_MEM_ATTR_USED_MEM_CURRENT; return cudaSuccess;
  case cudaGraphMemAttrUsedMemHigh: *out = GCAP_GRAPH_MEM_ATTR_USED_MEM_HIGH; return cudaSuccess;
  case cudaGraphMemAttrReservedMemCurrent: *out = GCAP_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT; return cudaSuccess;
  case cudaGraphMemAttrReservedMemHigh: *out = GCAP_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH; return cudaSuccess;
  default: return gcap__rt_fail(fn, cudaErrorInvalidValue, "attr %d is no cudaGraphMemAttributeType", (int)attr);
  }
}

cudaError_t cudaDeviceGraphMemTrim(int device) {
  gcap_context *ctx;
  cudaError_t e = enter_device(__func__, device, &ctx);
  return e ? e : gcap__rt_done(__func__, gcap_context_graph_mem_trim(ctx));
}

cudaError_t cudaDeviceGetGraphMemAttribute(int device, enum cudaGraphMemAttributeType attr, void *value) {
  gcap_context *ctx;
  gcap_graph_mem_attribute a = GCAP_GRAPH_MEM_ATTR_USED_MEM_CURRENT;
  cudaError_t e = enter_device(__func__, device, &ctx);
  if (!e) e = graph_mem_attribute(__func__, attr, &a);
  if (e) return e;
  if (!value) return gcap__rt_fail(__func__, cudaErrorInvalidValue, "value is NULL");
  uint64_t v;
  if ((e = gcap__rt_done(__func__, gcap_context_get_graph_mem_attribute(ctx, a, &v)))) return e;
  memcpy(value, &v, sizeof v); /* a cuuint64_t, which the caller need not have aligned */
  return cudaSuccess;
}

cudaError_t cudaDeviceSetGraphMemAttribute(int device, enum cudaGraphMemAttributeType attr, void *value) {
  gcap_context *ctx;
  gcap_graph_mem_attribute a = GCAP_GRAPH_MEM_ATTR_USED_MEM_CURRENT;
  cudaError_t e = enter_device(__func__, device, &ctx);
  if (!e) e = graph_mem_attribute(__func__, attr, &a);
  if (e) return e;
  if (!value) return gcap__rt_fail(__func__, cudaErrorInvalidValue, "value is NULL");
  if (a != GCAP_GRAPH_MEM_ATTR_USED_MEM_HIGH && a != GCAP_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH)
    return gcap__rt_fail(__func__, cudaErrorInvalidValue,
                         "attr %d: only the high marks (cudaGraphMemAttrUsedMemHigh, cudaGraphMemAttrReservedMemHigh) "
                         "can be set",
                         (int)attr);
  uint64_t v;
  memcpy(&v, value, sizeof v);
  if (v != 0)
    return gcap__rt_fail(__func__, cudaErrorInvalidValue, "value %llu: a high mark can only be reset, with 0",
                         (unsigned long long)v);
  return gcap__rt_done(__func__, gcap_context_set_graph_mem_attribute(ctx, a, v));
}
