/*
 * MEM_ALLOC and MEM_FREE nodes added by hand (cudaGraphAddMemAllocNode, cudaGraphAddMemFreeNode):
 * the same graph allocations a capture makes (pool.c), with the same rules
 * (rules.md#mem-alloc-node, rules.md#mem-free-node).
 */
#include "graph.h"
#include "pool.h"

/* Allocation nodes belong to top-level graphs: a child graph with them could not be one. */
static gcap_status check_top_level(const struct gcap_graph *g) {
  if (!g->owner) return GCAP_SUCCESS;
  return gcap__fail(GCAP_ERROR_NOT_SUPPORTED,
                    "graph %p is the graph of a child-graph node, which cannot hold allocation or free nodes",
                    (const void *)g);
}

static gcap_status check_alloc_params(const gcap_graph *g, const gcap_mem_alloc_node_params *p) {
  gcap_status st = GCAP_SUCCESS;
  if (p && p->pool) st = gcap__check_pool(p->pool, "params->pool");
  if (st == GCAP_SUCCESS && p && p->pool) st = gcap__check_same_context(g->ctx, p->pool->ctx, "params->pool");
  if (st == GCAP_SUCCESS && p && p->bytes == 0) st = gcap__fail(GCAP_ERROR_INVALID_VALUE, "params->bytes is 0");
  return st;
}

gcap_status gcap_graph_add_mem_alloc_node(gcap_graph *g, gcap_node *const *deps, size_t num_deps,
                                          gcap_mem_alloc_node_params *p, gcap_node **out) {
  GCAP_ENTER();
  gcap_status st = gcap__node_begin_add(g, deps, num_deps, out);
  if (st == GCAP_SUCCESS) st = check_alloc_params(g, p);
  if (st == GCAP_SUCCESS) st = gcap__refuse_in_host_callback();
  if (st == GCAP_SUCCESS) st = gcap__node_finish_checks(g, deps, num_deps, p, out);
  if (st != GCAP_SUCCESS) return st;
  gcap__lock(g->ctx);
  struct gcap__galloc *a = NULL;
  st = check_top_level(g);
  if (st == GCAP_SUCCESS) st = gcap__galloc_new(g->ctx, p->pool, p->bytes, &a);
  struct gcap_node *n = st == GCAP_SUCCESS ? gcap__node_alloc(g, GCAP_NODE_MEM_ALLOC) : NULL;
  if (a && !n) {
    gcap__galloc_release(a);
    st = gcap__fail(GCAP_ERROR_OUT_OF_MEMORY, "no memory for the node");
  }
  if (n) {
    a->owner_serial = g->serial;
    n->p.mem = a; /* the node's reference, released by commit on failure */
    void *ptr = a->ptr;
    st = gcap__node_commit(g, n, deps, num_deps, out);
    if (st == GCAP_SUCCESS) p->dptr = ptr;
  }
  gcap__unlock(g->ctx);
  return st;
}

gcap_status gcap_graph_add_mem_free_node(gcap_graph *g, gcap_node *const *deps, size_t num_deps, void *dptr,
                                         gcap_node **out) {
  GCAP_ENTER();
  gcap_status st = gcap__node_begin_add(g, deps, num_deps, out);
  if (st == GCAP_SUCCESS && !dptr) st = gcap__fail(GCAP_ERROR_INVALID_VALUE, "dptr is NULL");
  if (st == GCAP_SUCCESS) st = gcap__node_finish_checks(g, deps, num_deps, dptr, out);
  if (st != GCAP_SUCCESS) return st;
  gcap__lock(g->ctx);
  struct gcap__galloc *a = NULL;
  st = check_top_level(g);
  if (st == GCAP_SUCCESS) st = gcap__check_graph_free(g->ctx, dptr, &a);
  struct gcap_node *n = st == GCAP_SUCCESS ? gcap__node_alloc(g, GCAP_NODE_MEM_FREE) : NULL;
  if (st == GCAP_SUCCESS && !n) st = gcap__fail(GCAP_ERROR_OUT_OF_MEMORY, "no memory for the node");
  if (n) {
    gcap__galloc_retain(a);
    n->p.mem = a;
    st = gcap__node_commit(g, n, deps, num_deps, out);
    if (st == GCAP_SUCCESS) gcap__galloc_mark_freed(a, g, true);
  }
  gcap__unlock(g->ctx);
  return st;
}

gcap_status gcap_node_get_mem_alloc_params(const gcap_node *n, gcap_mem_alloc_node_params *p) {
  GCAP_ENTER();
  gcap_status st = gcap__node_check_typed(n, GCAP_NODE_MEM_ALLOC, p);
  if (st == GCAP_SUCCESS) *p = (gcap_mem_alloc_node_params){n->p.mem->bytes, n->p.mem->pool, n->p.mem->ptr};
  return st;
}

gcap_status gcap_node_get_mem_free_params(const gcap_node *n, void **dptr) {
  GCAP_ENTER();
  gcap_status st = gcap__node_check_typed(n, GCAP_NODE_MEM_FREE, n); /* dptr is no "params" */
  if (st == GCAP_SUCCESS && !dptr) st = gcap__fail(GCAP_ERROR_INVALID_VALUE, "dptr is NULL");
  if (st == GCAP_SUCCESS) *dptr = n->p.mem->ptr;
  return st;
}
