/* The parameters of a graph's nodes (getters and setters), conditional nodes, user objects and
 * the graph's dot file. */
#include "cudart.h"

#include <stdlib.h>
#include <string.h>

/* Enters and checks the node argument every getter and setter has. */
static cudaError_t node_begin(const char *fn, cudaGraphNode_t node, const void *params, const char *what) {
  gcap_context *ctx;
  cudaError_t e = gcap__rt_enter(&ctx);
  if (e) return e;
  if (!node) return gcap__rt_fail(fn, cudaErrorInvalidValue, "node is NULL");
  if (!params) return gcap__rt_fail(fn, cudaErrorInvalidValue, "%s is NULL", what);
  return cudaSuccess;
}

#define NODE(n) gcap__rt_node(n)

/* ---- Kernel nodes ---- */

cudaError_t cudaGraphKernelNodeGetParams(cudaGraphNode_t node, struct cudaKernelNodeParams *pNodeParams) {
  cudaError_t e = node_begin(__func__, node, pNodeParams, "pNodeParams");
  if (e) return e;
  gcap_kernel_node_params p;
  gcap_status st = gcap_node_get_kernel_params(NODE(node), &p);
  if (st == GCAP_SUCCESS) gcap__rt_kernel_params_out(&p, pNodeParams);
  return gcap__rt_graph_done(__func__, st);
}

cudaError_t cudaGraphKernelNodeSetParams(cudaGraphNode_t node, const struct cudaKernelNodeParams *pNodeParams) {
  gcap_kernel_node_params p;
  cudaError_t e = node_begin(__func__, node, pNodeParams, "pNodeParams");
  if (!e) e = gcap__rt_kernel_params_in(__func__, pNodeParams, &p);
  if (e) return e;
  return gcap__rt_graph_done(__func__, gcap_node_set_kernel_params(NODE(node), &p));
}

static cudaError_t check_attr(const char *fn, cudaKernelNodeAttrID attr) {
  if (attr == cudaLaunchAttributePriority) return cudaSuccess;
  return gcap__rt_fail(fn, cudaErrorNotSupported,
                       "attribute %d: gcap's kernel nodes have only cudaLaunchAttributePriority", (int)attr);
}

cudaError_t cudaGraphKernelNodeGetAttribute(cudaGraphNode_t hNode, cudaKernelNodeAttrID attr,
                                            cudaKernelNodeAttrValue *value_out) {
  cudaError_t e = node_begin(__func__, hNode, value_out, "value_out");
  if (!e) e = check_attr(__func__, attr);
  if (e) return e;
  gcap_kernel_node_attr_value v;
  gcap_status st = gcap_graph_kernel_node_get_attribute(NODE(hNode), GCAP_KERNEL_NODE_ATTR_PRIORITY, &v);
  if (st == GCAP_SUCCESS) value_out->priority = v.priority;
  return gcap__rt_graph_done(__func__, st);
}

cudaError_t cudaGraphKernelNodeSetAttribute(cudaGraphNode_t hNode, cudaKernelNodeAttrID attr,
                                            const cudaKernelNodeAttrValue *value) {
  cudaError_t e = node_begin(__func__, hNode, value, "value");
  if (!e) e = check_attr(__func__, attr);
  if (e) return e;
  gcap_kernel_node_attr_value v = {.priority = value->priority};
  return gcap__rt_graph_done(__func__,
                             gcap_graph_kernel_node_set_attribute(NODE(hNode), GCAP_KERNEL_NODE_ATTR_PRIORITY, &v));
}

cudaError_t cudaGraphKernelNodeCopyAttributes(cudaGraphNode_t hDst, cudaGraphNode_t hSrc) {
  cudaError_t e = node_begin(__func__, hDst, hSrc, "hSrc");
  if (e) return e;
  gcap_kernel_node_attr_value v;
  gcap_status st = gcap_graph_kernel_node_get_attribute(NODE(hSrc), GCAP_KERNEL_NODE_ATTR_PRIORITY, &v);
  if (st == GCAP_SUCCESS) {
    /* Both must be kernel nodes before anything changes. */
    gcap_kernel_node_attr_value old;
    st = gcap_graph_kernel_node_get_attribute(NODE(hDst), GCAP_KERNEL_NODE_ATTR_PRIORITY, &old);
  }
  if (st == GCAP_SUCCESS) st = gcap_graph_kernel_node_set_attribute(NODE(hDst), GCAP_KERNEL_NODE_ATTR_PRIORITY, &v);
  return gcap__rt_graph_done(__func__, st);
}

/* ---- Copy nodes ---- */

cudaError_t cudaGraphMemcpyNodeGetParams(cudaGraphNode_t node, struct cudaMemcpy3DParms *pNodeParams) {
  cudaError_t e = node_begin(__func__, node, pNodeParams, "pNodeParams");
  if (e) return e;
  gcap_memcpy_3d_params p;
  gcap_status st = gcap_node_get_memcpy_3d_params(NODE(node), &p);
  if (st == GCAP_SUCCESS) gcap__rt_memcpy3d_params_out(&p, pNodeParams);
  return gcap__rt_graph_done(__func__, st);
}

cudaError_t cudaGraphMemcpyNodeSetParams(cudaGraphNode_t node, const struct cudaMemcpy3DParms *pNodeParams) {
  gcap_memcpy_3d_params p;
  cudaError_t e = node_begin(__func__, node, pNodeParams, "pNodeParams");
  if (!e) e = gcap__rt_memcpy3d_params_in(__func__, pNodeParams, &p);
  if (e) return e;
  return gcap__rt_graph_done(__func__, gcap_node_set_memcpy_3d_params(NODE(node), &p));
}

static cudaError_t set_copy_1d(const char *fn, cudaGraphNode_t node, void *dst, const void *src, size_t count,
                               enum cudaMemcpyKind kind) {
  gcap_memcpy_node_params p = {.dst = dst, .src = src, .bytes = count};
  cudaError_t e = gcap__rt_memcpy_kind_in(fn, kind, &p.kind);
  if (e) return e;
  return gcap__rt_graph_done(fn, gcap_node_set_memcpy_params(NODE(node), &p));
}

cudaError_t cudaGraphMemcpyNodeSetParams1D(cudaGraphNode_t node, void *dst, const void *src, size_t count,
                                           enum cudaMemcpyKind kind) {
  cudaError_t e = node_begin(__func__, node, "", "");
  if (e) return e;
  return set_copy_1d(__func__, node, dst, src, count, kind);
}

cudaError_t cudaGraphMemcpyNodeSetParamsToSymbol(cudaGraphNode_t node, const void *symbol, const void *src,
                                                 size_t count, size_t offset, enum cudaMemcpyKind kind) {
  void *dst;
  cudaError_t e = node_begin(__func__, node, "", "");
  if (!e) e = gcap__rt_symbol_span(__func__, symbol, count, offset, 1, kind, &dst);
  if (e) return e;
  return set_copy_1d(__func__, node, dst, src, count, kind);
}

cudaError_t cudaGraphMemcpyNodeSetParamsFromSymbol(cudaGraphNode_t node, void *dst, const void *symbol, size_t count,
                                                   size_t offset, enum cudaMemcpyKind kind) {
  void *src;
  cudaError_t e = node_begin(__func__, node, "", "");
  if (!e) e = gcap__rt_symbol_span(__func__, symbol, count, offset, 0, kind, &src);
  if (e) return e;
  return set_copy_1d(__func__, node, dst, src, count, kind);
}

/* ---- Memset and host nodes ---- */

cudaError_t cudaGraphMemsetNodeGetParams(cudaGraphNode_t node, struct cudaMemsetParams *pNodeParams) {
  cudaError_t e = node_begin(__func__, node, pNodeParams, "pNodeParams");
  if (e) return e;
  gcap_memset_node_params p;
  gcap_status st = gcap_node_get_memset_params(NODE(node), &p);
  if (st == GCAP_SUCCESS) gcap__rt_memset_params_out(&p, pNodeParams);
  return gcap__rt_graph_done(__func__, st);
}

cudaError_t cudaGraphMemsetNodeSetParams(cudaGraphNode_t node, const struct cudaMemsetParams *pNodeParams) {
  gcap_memset_node_params p;
  cudaError_t e = node_begin(__func__, node, pNodeParams, "pNodeParams");
  if (!e) e = gcap__rt_memset_params_in(__func__, pNodeParams, &p);
  if (e) return e;
  return gcap__rt_graph_done(__func__, gcap_node_set_memset_params(NODE(node), &p));
}

cudaError_t cudaGraphHostNodeGetParams(cudaGraphNode_t node, struct cudaHostNodeParams *pNodeParams) {
  cudaError_t e = node_begin(__func__, node, pNodeParams, "pNodeParams");
  if (e) return e;
  gcap_host_node_params p;
  gcap_status st = gcap_node_get_host_params(NODE(node), &p);
  if (st == GCAP_SUCCESS) *pNodeParams = (struct cudaHostNodeParams){.fn = p.fn, .userData = p.user_data};
  return gcap__rt_graph_done(__func__, st);
}

cudaError_t cudaGraphHostNodeSetParams(cudaGraphNode_t node, const struct cudaHostNodeParams *pNodeParams) {
  gcap_host_node_params p;
  cudaError_t e = node_begin(__func__, node, pNodeParams, "pNodeParams");
  if (!e) e = gcap__rt_host_params_in(__func__, pNodeParams, &p);
  if (e) return e;
  return gcap__rt_graph_done(__func__, gcap_node_set_host_params(NODE(node), &p));
}

/* ---- Child graph, event and memory nodes ---- */

cudaError_t cudaGraphChildGraphNodeGetGraph(cudaGraphNode_t node, cudaGraph_t *pGraph) {
  cudaError_t e = node_begin(__func__, node, pGraph, "pGraph");
  if (e) return e;
  gcap_graph *g;
  gcap_status st = gcap_node_get_child_graph(NODE(node), &g);
  if (st == GCAP_SUCCESS) *pGraph = (cudaGraph_t)(void *)g;
  return gcap__rt_graph_done(__func__, st);
}

/* The event of a record (want GCAP_NODE_EVENT_RECORD) or wait node. */
static cudaError_t get_event(const char *fn, cudaGraphNode_t node, cudaEvent_t *out, gcap_node_type want) {
  cudaError_t e = node_begin(fn, node, out, "event_out");
  if (e) return e;
  gcap_node_type t = gcap_node_get_type(NODE(node));
  if (t == (gcap_node_type)-1) return gcap__rt_fail(fn, cudaErrorInvalidValue, "%s", gcap_last_error_message());
  if (t != want)
    return gcap__rt_fail(fn, cudaErrorInvalidValue, "node is no event %s node (its type is %d)",
                         want == GCAP_NODE_EVENT_RECORD ? "record" : "wait", (int)t);
  gcap_event *ev;
  gcap_status st = gcap_node_get_event(NODE(node), &ev);
  if (st == GCAP_SUCCESS) *out = (cudaEvent_t)(void *)ev;
  return gcap__rt_graph_done(fn, st);
}

static cudaError_t set_event(const char *fn, cudaGraphNode_t node, cudaEvent_t event, gcap_node_type want) {
  cudaError_t e = node_begin(fn, node, event, "event");
  if (e) return e;
  gcap_node_type t = gcap_node_get_type(NODE(node));
  if (t == (gcap_node_type)-1) return gcap__rt_fail(fn, cudaErrorInvalidValue, "%s", gcap_last_error_message());
  if (t != want)
    return gcap__rt_fail(fn, cudaErrorInvalidValue, "node is no event %s node (its type is %d)",
                         want == GCAP_NODE_EVENT_RECORD ? "record" : "wait", (int)t);
  return gcap__rt_graph_done(fn, gcap_node_set_event(NODE(node), gcap__rt_event(event)));
}

cudaError_t cudaGraphEventRecordNodeGetEvent(cudaGraphNode_t node, cudaEvent_t *event_out) {
  return get_event(__func__, node, event_out, GCAP_NODE_EVENT_RECORD);
}

cudaError_t cudaGraphEventRecordNodeSetEvent(cudaGraphNode_t node, cudaEvent_t event) {
  return set_event(__func__, node, event, GCAP_NODE_EVENT_RECORD);
}

cudaError_t cudaGraphEventWaitNodeGetEvent(cudaGraphNode_t node, cudaEvent_t *event_out) {
  return get_event(__func__, node, event_out, GCAP_NODE_EVENT_WAIT);
}

cudaError_t cudaGraphEventWaitNodeSetEvent(cudaGraphNode_t node, cudaEvent_t event) {
  return set_event(__func__, node, event, GCAP_NODE_EVENT_WAIT);
}

cudaError_t cudaGraphMemAllocNodeGetParams(cudaGraphNode_t node, struct cudaMemAllocNodeParams *params_out) {
  cudaError_t e = node_begin(__func__, node, params_out, "params_out");
  if (e) return e;
  gcap_mem_alloc_node_params p;
  gcap_status st = gcap_node_get_mem_alloc_params(NODE(node), &p);
  if (st == GCAP_SUCCESS) {
    memset(params_out, 0, sizeof *params_out);
    params_out->poolProps.allocType = cudaMemAllocationTypePinned;
    params_out->poolProps.handleTypes = cudaMemHandleTypeNone;
    params_out->poolProps.location.type = cudaMemLocationTypeDevice;
    params_out->poolProps.location.id = 0;
    params_out->bytesize = p.bytes;
    params_out->dptr = p.dptr;
  }
  return gcap__rt_graph_done(__func__, st);
}

cudaError_t cudaGraphMemFreeNodeGetParams(cudaGraphNode_t node, void *dptr_out) {
  cudaError_t e = node_begin(__func__, node, dptr_out, "dptr_out");
  if (e) return e;
  void *p;
  gcap_status st = gcap_node_get_mem_free_params(NODE(node), &p);
  if (st == GCAP_SUCCESS) memcpy(dptr_out, &p, sizeof p);
  return gcap__rt_graph_done(__func__, st);
}

/* ---- Generic parameters ---- */

cudaError_t cudaGraphNodeSetParams(cudaGraphNode_t node, struct cudaGraphNodeParams *nodeParams) {
  struct gcap__rt_node_params p;
  cudaError_t e = node_begin(__func__, node, nodeParams, "nodeParams");
  if (!e) e = gcap__rt_node_params_in(__func__, nodeParams, &p);
  if (e) return e;
  gcap_node_type t = gcap_node_get_type(NODE(node));
  if (t == (gcap_node_type)-1) return gcap__rt_fail(__func__, cudaErrorInvalidValue, "%s", gcap_last_error_message());
  if (t != p.p.type)
    return gcap__rt_fail(__func__, cudaErrorInvalidValue, "nodeParams->type %d is not the node's type %d",
                         (int)p.p.type, (int)t);
  if (p.copy_3d) return gcap__rt_graph_done(__func__, gcap_node_set_memcpy_3d_params(NODE(node), &p.copy3d));
  return gcap__rt_graph_done(__func__, gcap_node_set_params(NODE(node), &p.p));
}

/* ---- Conditional nodes ---- */

cudaError_t cudaGraphConditionalHandleCreate(cudaGraphConditionalHandle *pHandle_out, cudaGraph_t graph,
                                             unsigned int defaultLaunchValue, unsigned int flags) {
  gcap_context *ctx;
  cudaError_t e = gcap__rt_enter(&ctx);
  if (e) return e;
  if (!pHandle_out) return gcap__rt_fail(__func__, cudaErrorInvalidValue, "pHandle_out is NULL");
  if (!graph) return gcap__rt_fail(__func__, cudaErrorInvalidValue, "graph is NULL");
  gcap_conditional_handle h;
  gcap_status st = gcap_graph_conditional_handle_create(gcap__rt_graph(graph), defaultLaunchValue, flags, &h);
  if (st == GCAP_SUCCESS) *pHandle_out = (cudaGraphConditionalHandle)h;
  return gcap__rt_graph_done(__func__, st);
}

/* The body array of a conditional node: a user object of the node's graph frees it. */
static void free_bodies(void *bodies) { free(bodies); }

cudaError_t gcap__rt_add_conditional(const char *fn, gcap_context *ctx, gcap_graph *g, gcap_node *const *deps,
                                     size_t ndeps, gcap_conditional_node_params *p, cudaGraph_t **bodies,
                                     gcap_node **out) {
  _Static_assert(sizeof(cudaGraph_t) == sizeof(gcap_graph *), "graph handles are gcap's");
  cudaGraph_t *array = calloc(p->size ? p->size : 1, sizeof *array);
  if (!array) return gcap__rt_fail(fn, cudaErrorMemoryAllocation, "no memory for %u bodies", p->size);
  p->body_out = (gcap_graph **)(void *)array;
  gcap_node *n = NULL;
  gcap_status st = gcap_graph_add_conditional_node(g, deps, ndeps, p, &n);
  if (st != GCAP_SUCCESS) {
    free(array);
    return gcap__rt_graph_done(fn, st);
  }
  gcap_user_object *owner = NULL;
  st = gcap_user_object_create(ctx, array, free_bodies, 1, GCAP_USER_OBJECT_NO_DESTRUCTOR_SYNC, &owner);
  if (st == GCAP_SUCCESS) {
    st = gcap_graph_retain_user_object(g, owner, 1, GCAP_GRAPH_USER_OBJECT_MOVE);
    if (st != GCAP_SUCCESS) {
      char why[256];
      snprintf(why, sizeof why, "%s", gcap_last_error_message());
      gcap_graph_destroy_node(n);
      gcap_user_object_release(owner, 1); /* frees the array */
      return gcap__rt_fail(fn, gcap__rt_error_of(st), "%s", why);
    }
  } else {
    gcap_graph_destroy_node(n);
    free(array);
    return gcap__rt_graph_done(fn, st);
  }
  *bodies = array;
  *out = n;
  return cudaSuccess;
}

/* ---- The dot file ---- */

cudaError_t cudaGraphDebugDotPrint(cudaGraph_t graph, const char *path, unsigned int flags) {
  gcap_context *ctx;
  cudaError_t e = gcap__rt_enter(&ctx);
  if (e) return e;
  if (!graph) return gcap__rt_fail(__func__, cudaErrorInvalidValue, "graph is NULL");
  if (!path) return gcap__rt_fail(__func__, cudaErrorInvalidValue, "path is NULL");
  gcap_status st = gcap_graph_debug_dot_print(gcap__rt_graph(graph), path, flags);
  if (st == GCAP_ERROR_INVALID_VALUE && strstr(gcap_last_error_message(), path))
    return gcap__rt_fail(__func__, cudaErrorOperatingSystem, "%s", gcap_last_error_message());
  return gcap__rt_graph_done(__func__, st);
}

/* ---- User objects ---- */

cudaError_t cudaUserObjectCreate(cudaUserObject_t *object_out, void *ptr, cudaHostFn_t destroy,
                                 unsigned int initialRefcount, unsigned int flags) {
  gcap_context *ctx;
  cudaError_t e = gcap__rt_enter(&ctx);
  if (e) return e;
  if (!object_out) return gcap__rt_fail(__func__, cudaErrorInvalidValue, "object_out is NULL");
  if (!destroy) return gcap__rt_fail(__func__, cudaErrorInvalidValue, "destroy is NULL");
  if (!initialRefcount) return gcap__rt_fail(__func__, cudaErrorInvalidValue, "initialRefcount is 0");
  if (flags != cudaUserObjectNoDestructorSync)
    return gcap__rt_fail(__func__, cudaErrorInvalidValue, "flags %#x: cudaUserObjectNoDestructorSync is required",
                         flags);
  gcap_user_object *o;
  gcap_status st = gcap_user_object_create(ctx, ptr, destroy, initialRefcount, GCAP_USER_OBJECT_NO_DESTRUCTOR_SYNC, &o);
  if (st == GCAP_SUCCESS) *object_out = (cudaUserObject_t)(void *)o;
  return gcap__rt_graph_done(__func__, st);
}

cudaError_t cudaUserObjectRetain(cudaUserObject_t object, unsigned int count) {
  gcap_context *ctx;
  cudaError_t e = gcap__rt_enter(&ctx);
  if (e) return e;
  if (!object) return gcap__rt_fail(__func__, cudaErrorInvalidValue, "object is NULL");
  if (!count) return gcap__rt_fail(__func__, cudaErrorInvalidValue, "count is 0");
  return gcap__rt_graph_done(__func__, gcap_user_object_retain(gcap__rt_user_object(object), count));
}

cudaError_t cudaUserObjectRelease(cudaUserObject_t object, unsigned int count) {
  gcap_context *ctx;
  cudaError_t e = gcap__rt_enter(&ctx);
  if (e) return e;
  if (!object) return gcap__rt_fail(__func__, cudaErrorInvalidValue, "object is NULL");
  if (!count) return gcap__rt_fail(__func__, cudaErrorInvalidValue, "count is 0");
  return gcap__rt_graph_done(__func__, gcap_user_object_release(gcap__rt_user_object(object), count));
}

cudaError_t cudaGraphRetainUserObject(cudaGraph_t graph, cudaUserObject_t object, unsigned int count,
                                      unsigned int flags) {
  gcap_context *ctx;
  cudaError_t e = gcap__rt_enter(&ctx);
  if (e) return e;
  if (!graph) return gcap__rt_fail(__func__, cudaErrorInvalidValue, "graph is NULL");
  if (!object) return gcap__rt_fail(__func__, cudaErrorInvalidValue, "object is NULL");
  if (!count) return gcap__rt_fail(__func__, cudaErrorInvalidValue, "count is 0");
  if (flags & ~(unsigned)cudaGraphUserObjectMove)
    return gcap__rt_fail(__func__, cudaErrorInvalidValue, "flags %#x: only cudaGraphUserObjectMove is defined", flags);
  return gcap__rt_graph_done(__func__,
                             gcap_graph_retain_user_object(gcap__rt_graph(graph), gcap__rt_user_object(object), count,
                                                           flags ? GCAP_GRAPH_USER_OBJECT_MOVE : 0));
}

cudaError_t cudaGraphReleaseUserObject(cudaGraph_t graph, cudaUserObject_t object, unsigned int count) {
  gcap_context *ctx;
  cudaError_t e = gcap__rt_enter(&ctx);
  if (e) return e;
  if (!graph) return gcap__rt_fail(__func__, cudaErrorInvalidValue, "graph is NULL");
  if (!object) return gcap__rt_fail(__func__, cudaErrorInvalidValue, "object is NULL");
  if (!count) return gcap__rt_fail(__func__, cudaErrorInvalidValue, "count is 0");
  return gcap__rt_graph_done(
      __func__, gcap_graph_release_user_object(gcap__rt_graph(graph), gcap__rt_user_object(object), count));
}
