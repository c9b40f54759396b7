/*
 * Conditional handles on CUDA. A kernel sets a handle with cudaGraphSetConditional, so the value
 * gcap gives the user must be the driver's, and the driver ties a handle to the CUgraph it was
 * made on: every handle of one top-level gcap graph is made on one CUgraph (the holder), and
 * that graph's executables are built in it, one at a time, as the core allows.
 */
#include <stdatomic.h>

#include "base/alloc.h"
#include "cuda_internal.h"
#include "base/error.h"

struct cuda_cond_holder {
  CUgraph graph;
  atomic_uint refs; /* the gcap graph's, and each plan's */
};

gcap_status cuda_cond_create(struct gcap__backend_ctx *b, void **native, unsigned default_value, unsigned flags,
                             uint64_t *handle) {
  struct cuda_context *c = cuda_context_from(b);
  if (!c->d->cuGraphConditionalHandleCreate || !c->d->cuGraphAddNode || !c->d->cuGraphDestroyNode)
    return gcap__fail(GCAP_ERROR_NOT_SUPPORTED,
                      "the CUDA driver (version %d) has no conditional nodes; they need CUDA 12.3 or later",
                      c->d->version);
  struct cuda_scope scope;
  gcap_status st = cuda_enter(c, &scope);
  if (st != GCAP_SUCCESS) return st;
  struct cuda_cond_holder *h = *native;
  bool made = !h;
  if (made && !(h = gcap__calloc(1, sizeof *h)))
    return cuda_leave(&scope, gcap__fail(GCAP_ERROR_OUT_OF_MEMORY, "no memory for the conditional handles' graph"));
  if (made) {
    atomic_init(&h->refs, 1);
    st = gcap__cuda_check(c->d->cuGraphCreate(&h->graph, 0), "cuGraphCreate (conditional handles)");
  }
  CUgraphConditionalHandle value = 0;
  if (st == GCAP_SUCCESS)
    st = gcap__cuda_check(c->d->cuGraphConditionalHandleCreate(&value, h->graph, c->ctx, default_value, flags),
                          "cuGraphConditionalHandleCreate(default %u, flags %u)", default_value, flags);
  if (st == GCAP_SUCCESS) {
    *native = h;
    *handle = value;
  } else if (made) {
    if (h->graph) c->d->cuGraphDestroy(h->graph);
    gcap__free(h);
  }
  return cuda_leave(&scope, st);
}

void cuda_cond_native_retain(struct gcap__backend_ctx *b, void *native) {
  (void)b;
  atomic_fetch_add(&((struct cuda_cond_holder *)native)->refs, 1);
}

void cuda_cond_native_release(struct gcap__backend_ctx *b, void *native) {
  struct cuda_cond_holder *h = native;
  if (atomic_fetch_sub(&h->refs, 1) != 1) return;
  struct cuda_context *c = cuda_context_from(b);
  struct cuda_scope scope;
  if (cuda_enter(c, &scope) == GCAP_SUCCESS) { /* else the driver keeps it until the process ends */
    c->d->cuGraphDestroy(h->graph);
    cuda_leave(&scope, GCAP_SUCCESS);
  }
  gcap__free(h);
}

gcap_status cuda_cond_holder_graph(struct cuda_context *c, void *native, CUgraph *out) {
  struct cuda_cond_holder *h = native;
  size_t count = 0;
  gcap_status st =
      gcap__cuda_check(c->d->cuGraphGetNodes(h->graph, NULL, &count), "cuGraphGetNodes (conditional handles' graph)");
  CUgraphNode *nodes = st == GCAP_SUCCESS && count ? gcap__calloc(count, sizeof *nodes) : NULL;
  if (count && !nodes && st == GCAP_SUCCESS) st = gcap__fail(GCAP_ERROR_OUT_OF_MEMORY, "no memory to clear a graph");
  if (nodes) st = gcap__cuda_check(c->d->cuGraphGetNodes(h->graph, nodes, &count), "cuGraphGetNodes");
  /* The previous executable's nodes go (it is gone: one at a time); the handles stay. */
  for (size_t i = 0; st == GCAP_SUCCESS && i < count; i++)
    st = gcap__cuda_check(c->d->cuGraphDestroyNode(nodes[i]), "cuGraphDestroyNode (clearing the handles' graph)");
  gcap__free(nodes);
  if (st == GCAP_SUCCESS) *out = h->graph;
  return st;
}
