/*
 * The generic node calls (cudaGraphAddNode, cudaGraphNodeSetParams, cudaGraphExecNodeSetParams):
 * one tagged parameter struct, dispatched to the call of each node type. A failure is reported
 * as the generic call's own.
 */
#include <string.h>

#include "exec.h"
#include "graph.h"

/* Puts the generic call's name back in front of what the typed call said. */
static gcap_status as_generic(const char *api, gcap_status st) {
  char detail[GCAP__MESSAGE_BYTES] = "";
  if (st != GCAP_SUCCESS) {
    const char *m = gcap_last_error_message(), *colon = strstr(m, ": ");
    snprintf(detail, sizeof detail, "%s", colon ? colon + 2 : m);
  }
  gcap__enter(api);
  return st == GCAP_SUCCESS ? st : gcap__fail(st, "%s", detail);
}

static gcap_status no_params(const char *what) {
  return gcap__fail(GCAP_ERROR_INVALID_VALUE, "params is NULL%s", what);
}

static gcap_status add(gcap_graph *g, gcap_node *const *deps, size_t n, gcap_node_params *p, gcap_node **out) {
  switch (p->type) {
  case GCAP_NODE_KERNEL: return gcap_graph_add_kernel_node(g, deps, n, &p->u.kernel, out);
  case GCAP_NODE_MEMCPY: return gcap_graph_add_memcpy_node(g, deps, n, &p->u.copy, out);
  case GCAP_NODE_MEMSET: return gcap_graph_add_memset_node(g, deps, n, &p->u.fill, out);
  case GCAP_NODE_HOST: return gcap_graph_add_host_node(g, deps, n, &p->u.host, out);
  case GCAP_NODE_GRAPH: return gcap_graph_add_child_graph_node(g, deps, n, p->u.child_graph, out);
  case GCAP_NODE_EMPTY: return gcap_graph_add_empty_node(g, deps, n, out);
  case GCAP_NODE_EVENT_RECORD: return gcap_graph_add_event_record_node(g, deps, n, p->u.event, out);
  case GCAP_NODE_EVENT_WAIT: return gcap_graph_add_event_wait_node(g, deps, n, p->u.event, out);
  case GCAP_NODE_MEM_ALLOC: return gcap_graph_add_mem_alloc_node(g, deps, n, &p->u.mem_alloc, out);
  case GCAP_NODE_MEM_FREE: return gcap_graph_add_mem_free_node(g, deps, n, p->u.mem_free, out);
  case GCAP_NODE_CONDITIONAL: return gcap_graph_add_conditional_node(g, deps, n, &p->u.conditional, out);
  default: return gcap__fail(GCAP_ERROR_INVALID_VALUE, "params->type %d is not a gcap_node_type", (int)p->type);
  }
}

gcap_status gcap_graph_add_node(gcap_graph *g, gcap_node *const *deps, size_t num_deps, gcap_node_params *p,
                                gcap_node **out) {
  GCAP_ENTER();
  if (out) *out = NULL;
  gcap_status st = gcap__check_graph(g, "graph");
  if (st != GCAP_SUCCESS) return st;
  if (!p) return no_params("");
  return as_generic(__func__, add(g, deps, num_deps, p, out));
}

static gcap_status set(gcap_node *n, const gcap_node_params *p) {
  gcap_node_type type = gcap__node_public_type(n); /* n checked by the caller */
  if (p->type != type)
    return gcap__fail(GCAP_ERROR_INVALID_VALUE, "params->type %d differs from the node's type %d", (int)p->type,
                      (int)type);
  switch (type) {
  case GCAP_NODE_KERNEL: return gcap_node_set_kernel_params(n, &p->u.kernel);
  case GCAP_NODE_MEMCPY: return gcap_node_set_memcpy_params(n, &p->u.copy);
  case GCAP_NODE_MEMSET: return gcap_node_set_memset_params(n, &p->u.fill);
  case GCAP_NODE_HOST: return gcap_node_set_host_params(n, &p->u.host);
  case GCAP_NODE_EVENT_RECORD:
  case GCAP_NODE_EVENT_WAIT: return gcap_node_set_event(n, p->u.event);
  default:
    return gcap__fail(GCAP_ERROR_NOT_SUPPORTED, "a %s node's parameters cannot be set", gcap__node_type_name(type));
  }
}

gcap_status gcap_node_set_params(gcap_node *n, const gcap_node_params *p) {
  GCAP_ENTER();
  gcap_status st = gcap__check_node(n, "node");
  if (st != GCAP_SUCCESS) return st;
  if (!p) return no_params("");
  return as_generic(__func__, set(n, p));
}

static gcap_status exec_set(gcap_exec *x, gcap_node *n, const gcap_node_params *p) {
  gcap_node_type type = gcap__node_public_type(n); /* n checked by the caller */
  if (p->type != type)
    return gcap__fail(GCAP_ERROR_INVALID_VALUE, "params->type %d differs from the node's type %d", (int)p->type,
                      (int)type);
  switch (type) {
  case GCAP_NODE_KERNEL: return gcap_exec_kernel_node_set_params(x, n, &p->u.kernel);
  case GCAP_NODE_MEMCPY: return gcap_exec_memcpy_node_set_params(x, n, &p->u.copy);
  case GCAP_NODE_MEMSET: return gcap_exec_memset_node_set_params(x, n, &p->u.fill);
  case GCAP_NODE_HOST: return gcap_exec_host_node_set_params(x, n, &p->u.host);
  case GCAP_NODE_EVENT_RECORD: return gcap_exec_event_record_node_set_event(x, n, p->u.event);
  case GCAP_NODE_EVENT_WAIT: return gcap_exec_event_wait_node_set_event(x, n, p->u.event);
  case GCAP_NODE_GRAPH: return gcap_exec_child_graph_node_set_params(x, n, p->u.child_graph);
  case GCAP_NODE_EMPTY: return gcap__fail(GCAP_ERROR_INVALID_VALUE, "an empty node has no parameters to set");
  default:
    return gcap__fail(GCAP_ERROR_NOT_SUPPORTED, "a %s node's parameters cannot be set in an executable",
                      gcap__node_type_name(type));
  }
}

gcap_status gcap_exec_node_set_params(gcap_exec *x, gcap_node *n, const gcap_node_params *p) {
  GCAP_ENTER();
  gcap_status st = gcap__check_exec(x, "exec"); /* before anything else, as every exec setter */
  if (st == GCAP_SUCCESS) st = gcap__check_node(n, "node");
  if (st != GCAP_SUCCESS) return st;
  if (!p) return no_params("");
  return as_generic(__func__, exec_set(x, n, p));
}
