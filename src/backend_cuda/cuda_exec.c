/*
 * Executables on CUDA: the core's plan, materialised node by node into a CUgraph with the
 * explicit node API and instantiated. The template graph stays alive: its nodes name the
 * executable's nodes in every per-node setter.
 */
#include <string.h>

#include "base/alloc.h"
#include "cuda_internal.h"
#include "base/error.h"

struct cuda_exec {
  CUgraph graph;
  void *holder; /* the conditional handles' holder the graph belongs to (then not the executable's), or NULL */
  CUgraphExec exec;
  CUgraphNode *nodes; /* one per plan entry */
  size_t count;
  struct cuda_host_call *host_calls; /* every record a host node was ever given */
  CUevent done;                      /* recorded after each launch: exec_wait waits on it */
  bool launched;
  bool untracked;                  /* a launch's event could not be recorded: it may run for ever, as far as we know */
  struct cuda_exec *next_deferred; /* in the context's list of executables to destroy later */
};

struct materialized {
  CUgraph graph;
  CUgraphNode *nodes;
  struct cuda_host_call *host_calls;
  bool borrowed; /* the graph is the conditional handles' holder's: discard leaves it */
};

static gcap_status add_entries(struct cuda_context *c, struct materialized *m, const struct gcap__plan *plan);

/* The driver makes the bodies (phGraph_out); each is filled from its own plan. */
static gcap_status add_conditional(struct cuda_context *c, struct materialized *m, const struct gcap__cond_plan *cp,
                                   CUgraphNode *node, const CUgraphNode *deps, size_t n, size_t index) {
  if (!c->d->cuGraphAddNode)
    return gcap__fail(GCAP_ERROR_NOT_SUPPORTED, "plan entry %zu: the CUDA driver has no conditional nodes", index);
  CUgraphNodeParams p;
  memset(&p, 0, sizeof p);
  p.type = CU_GRAPH_NODE_TYPE_CONDITIONAL;
  p.conditional.handle = cp->cond->handle;
  p.conditional.type = (CUgraphConditionalNodeType)cp->type;
  p.conditional.size = cp->size;
  p.conditional.ctx = c->ctx;
  gcap_status st = gcap__cuda_check(c->d->cuGraphAddNode(node, m->graph, deps, n, &p),
                                    "cuGraphAddNode(plan entry %zu, conditional)", index);
  for (unsigned b = 0; st == GCAP_SUCCESS && b < cp->size; b++) {
    struct materialized body = {p.conditional.phGraph_out[b], NULL, NULL, true};
    body.nodes = gcap__calloc(cp->bodies[b].count ? cp->bodies[b].count : 1, sizeof *body.nodes);
    st = body.nodes ? add_entries(c, &body, &cp->bodies[b])
                    : gcap__fail(GCAP_ERROR_OUT_OF_MEMORY, "no memory for a conditional body's nodes");
    gcap__free(body.nodes);
    cuda_free_host_calls(body.host_calls); /* bodies hold no host nodes */
  }
  return st;
}

static struct cuda_host_call *new_host_call(struct cuda_host_call **list, gcap_host_fn fn, void *user_data) {
  struct cuda_host_call *call = gcap__malloc(sizeof *call);
  if (!call) return NULL;
  *call = (struct cuda_host_call){fn, user_data, *list, NULL};
  *list = call;
  return call;
}

static CUDA_KERNEL_NODE_PARAMS kernel_params(const struct gcap__launch *l) {
  CUDA_KERNEL_NODE_PARAMS p;
  memset(&p, 0, sizeof p);
  p.func = l->kernel->impl;
  p.gridDimX = l->grid.x, p.gridDimY = l->grid.y, p.gridDimZ = l->grid.z;
  p.blockDimX = l->block.x, p.blockDimY = l->block.y, p.blockDimZ = l->block.z;
  p.sharedMemBytes = l->shared_mem_bytes;
  p.kernelParams = (void **)l->args;
  return p;
}

/*
 * One side of a copy. A side the core resolved as device memory is typed DEVICE, and gcap's own
 * page-locked host memory HOST. Any other side is UNIFIED, whatever kind the caller named: the
 * core cannot tell pageable host memory from another library's device memory, and the driver
 * finds out from the address what it is.
 */
static void copy_side(CUmemorytype type, const void *ptr, CUmemorytype *type_out, CUdeviceptr *dptr,
                      const void **hptr) {
  *type_out = type;
  if (type == CU_MEMORYTYPE_HOST) *hptr = ptr;
  else *dptr = cuda_dptr(ptr);
}

static CUmemorytype side_type(const struct gcap__backend_ctx *b, const void *ptr, bool device) {
  if (device) return CU_MEMORYTYPE_DEVICE;
  struct gcap__mem_view v;
  return gcap__memory_view_locked(b, (uintptr_t)ptr, &v) && v.state == GCAP__MEM_HOST ? CU_MEMORYTYPE_HOST
                                                                                      : CU_MEMORYTYPE_UNIFIED;
}

static CUDA_MEMCPY3D copy_params(const struct cuda_context *cc, const struct gcap__copy *c) {
  CUDA_MEMCPY3D p;
  memset(&p, 0, sizeof p);
  bool src_device = c->resolved == GCAP_MEMCPY_DEVICE_TO_HOST || c->resolved == GCAP_MEMCPY_DEVICE_TO_DEVICE;
  bool dst_device = c->resolved == GCAP_MEMCPY_HOST_TO_DEVICE || c->resolved == GCAP_MEMCPY_DEVICE_TO_DEVICE;
  const void *dst_host = NULL;
  copy_side(side_type(&cc->base, c->src, src_device), c->src, &p.srcMemoryType, &p.srcDevice, &p.srcHost);
  copy_side(side_type(&cc->base, c->dst, dst_device), c->dst, &p.dstMemoryType, &p.dstDevice, &dst_host);
  p.dstHost = (void *)dst_host;
  cuda_set_copy_shape(&p, c);
  return p;
}

void cuda_set_copy_shape(CUDA_MEMCPY3D *p, const struct gcap__copy *c) {
  const struct gcap__copy_shape *s = c->shape;
  p->WidthInBytes = c->bytes;
  p->Height = s ? s->height : 1;
  p->Depth = s ? s->depth : 1;
  if (!s) return;
  p->srcPitch = s->src_pitch, p->srcHeight = s->depth > 1 ? s->src_rows : 0;
  p->dstPitch = s->dst_pitch, p->dstHeight = s->depth > 1 ? s->dst_rows : 0;
}

static CUDA_MEMSET_NODE_PARAMS fill_params(const struct gcap__fill *f) {
  CUDA_MEMSET_NODE_PARAMS p;
  memset(&p, 0, sizeof p);
  p.dst = cuda_dptr(f->dst);
  p.elementSize = f->element_size;
  p.width = f->width;
  p.height = f->height;
  p.pitch = f->height > 1 ? f->pitch : f->width * f->element_size;
  p.value = f->value;
  return p;
}

static gcap_status add_node(struct cuda_context *c, struct materialized *m, const struct gcap__plan_node *pn,
                            size_t index, const CUgraphNode *deps) {
  const struct gcap__cuda_driver *d = c->d;
  CUgraphNode *node = &m->nodes[index];
  size_t n = pn->num_deps;
  CUresult r;
  switch ((int)pn->type) {
  case GCAP_NODE_KERNEL: {
    CUDA_KERNEL_NODE_PARAMS p = kernel_params(&pn->u.kernel);
    r = d->cuGraphAddKernelNode(node, m->graph, deps, n, &p);
    if (r == CUDA_SUCCESS && pn->u.kernel.priority) {
      CUkernelNodeAttrValue v;
      memset(&v, 0, sizeof v);
      v.priority = pn->u.kernel.priority;
      r = d->cuGraphKernelNodeSetAttribute(*node, CU_LAUNCH_ATTRIBUTE_PRIORITY, &v);
    }
    if (r == CUDA_SUCCESS && pn->u.kernel.cooperative) { /* CUDA 12's kernel node attribute */
      CUkernelNodeAttrValue v;
      memset(&v, 0, sizeof v);
      v.cooperative = 1;
      r = d->cuGraphKernelNodeSetAttribute(*node, CU_LAUNCH_ATTRIBUTE_COOPERATIVE, &v);
    }
    break;
  }
  case GCAP_NODE_MEMCPY: {
    CUDA_MEMCPY3D p = copy_params(c, &pn->u.copy);
    r = d->cuGraphAddMemcpyNode(node, m->graph, deps, n, &p, c->ctx);
    break;
  }
  case GCAP_NODE_MEMSET: {
    gcap_status aligned = cuda_check_fill_alignment(&pn->u.fill);
    if (aligned != GCAP_SUCCESS) return gcap__fail_context(aligned, "plan entry %zu (memset)", index);
    CUDA_MEMSET_NODE_PARAMS p = fill_params(&pn->u.fill);
    r = d->cuGraphAddMemsetNode(node, m->graph, deps, n, &p, c->ctx);
    break;
  }
  case GCAP_NODE_HOST: {
    struct cuda_host_call *call = new_host_call(&m->host_calls, pn->u.host.fn, pn->u.host.user_data);
    if (!call) return gcap__fail(GCAP_ERROR_OUT_OF_MEMORY, "no memory for a host node's record");
    CUDA_HOST_NODE_PARAMS p = {cuda_host_trampoline, call};
    r = d->cuGraphAddHostNode(node, m->graph, deps, n, &p);
    break;
  }
  case GCAP_NODE_EVENT_RECORD: r = d->cuGraphAddEventRecordNode(node, m->graph, deps, n, pn->u.event.impl); break;
  case GCAP_NODE_EVENT_WAIT: r = d->cuGraphAddEventWaitNode(node, m->graph, deps, n, pn->u.event.impl); break;
  case GCAP__NODE_NATIVE: r = d->cuGraphAddChildGraphNode(node, m->graph, deps, n, pn->u.native); break;
  case GCAP_NODE_CONDITIONAL: return add_conditional(c, m, pn->u.cond, node, deps, n, index);
  /*
   * Child-graph entries and their exits order only; MEM_ALLOC and MEM_FREE reserve nothing here:
   * the core made the allocation when it was captured, so the node keeps its address.
   */
  default: r = d->cuGraphAddEmptyNode(node, m->graph, deps, n); break;
  }
  return gcap__cuda_check(r, "cuGraphAdd*Node(plan entry %zu, %s)", index, gcap__node_type_name(pn->type));
}

static void discard(struct cuda_context *c, struct materialized *m) {
  if (m->graph && !m->borrowed) c->d->cuGraphDestroy(m->graph); /* a holder's nodes go at its next use */
  gcap__free(m->nodes);
  cuda_free_host_calls(m->host_calls);
  memset(m, 0, sizeof *m);
}

/* Every entry of plan into m->graph, m->nodes[i] the node of entry i. */
static gcap_status add_entries(struct cuda_context *c, struct materialized *m, const struct gcap__plan *plan) {
  CUgraphNode *deps = gcap__calloc(plan->num_deps ? plan->num_deps : 1, sizeof *deps);
  if (!deps) return gcap__fail(GCAP_ERROR_OUT_OF_MEMORY, "no memory for %zu CUDA graph edges", plan->num_deps);
  gcap_status st = GCAP_SUCCESS;
  for (size_t i = 0; st == GCAP_SUCCESS && i < plan->count; i++) {
    const struct gcap__plan_node *pn = &plan->nodes[i];
    for (size_t k = 0; k < pn->num_deps; k++) deps[k] = m->nodes[plan->deps[pn->first_dep + k]];
    st = add_node(c, m, pn, i, deps);
  }
  gcap__free(deps);
  return st;
}

/* A graph with conditional handles is built in the CUgraph they were made on (cuda_cond.c). */
static gcap_status materialize(struct cuda_context *c, const struct gcap__plan *plan, struct materialized *m) {
  memset(m, 0, sizeof *m);
  m->nodes = gcap__calloc(plan->count ? plan->count : 1, sizeof *m->nodes);
  gcap_status st =
      m->nodes ? GCAP_SUCCESS : gcap__fail(GCAP_ERROR_OUT_OF_MEMORY, "no memory for %zu CUDA graph nodes", plan->count);
  m->borrowed = plan->cond_native != NULL;
  if (st == GCAP_SUCCESS && m->borrowed) st = cuda_cond_holder_graph(c, plan->cond_native, &m->graph);
  else if (st == GCAP_SUCCESS) st = gcap__cuda_check(c->d->cuGraphCreate(&m->graph, 0), "cuGraphCreate");
  if (st == GCAP_SUCCESS) st = add_entries(c, m, plan);
  if (st != GCAP_SUCCESS) discard(c, m);
  return st;
}

static gcap_status apply_disabled(struct cuda_context *c, struct cuda_exec *x, const struct gcap__plan *plan) {
  for (size_t i = 0; i < plan->count; i++) {
    if (!plan->nodes[i].disabled) continue;
    gcap_status st = gcap__cuda_check(c->d->cuGraphNodeSetEnabled(x->exec, x->nodes[i], 0),
                                      "cuGraphNodeSetEnabled(plan entry %zu, 0)", i);
    if (st != GCAP_SUCCESS) return st;
  }
  return GCAP_SUCCESS;
}

/*
 * AUTO_FREE stays with the core, which makes and frees graph allocations itself; priorities are
 * the driver's to honour.
 */
static unsigned long long instantiate_flags(const struct gcap__plan *plan) {
  return plan->flags & GCAP_INSTANTIATE_USE_NODE_PRIORITY ? CUDA_GRAPH_INSTANTIATE_FLAG_USE_NODE_PRIORITY : 0;
}

static gcap_status instantiate(struct cuda_context *c, const struct gcap__plan *plan, struct cuda_exec *x) {
  struct materialized m;
  gcap_status st = materialize(c, plan, &m);
  if (st == GCAP_SUCCESS)
    st = gcap__cuda_check(c->d->cuGraphInstantiateWithFlags(&x->exec, m.graph, instantiate_flags(plan)),
                          "cuGraphInstantiateWithFlags(%zu nodes)", plan->count);
  if (st != GCAP_SUCCESS) {
    if (m.graph) discard(c, &m);
    return st;
  }
  x->graph = m.graph, x->nodes = m.nodes, x->host_calls = m.host_calls, x->count = plan->count;
  if (m.borrowed) {
    x->holder = plan->cond_native;
    cuda_cond_native_retain(&c->base, x->holder);
  }
  return GCAP_SUCCESS;
}

static void release(struct cuda_context *c, struct cuda_exec *x);

gcap_status cuda_exec_create(struct gcap__backend_ctx *b, const struct gcap__plan *plan, void **out) {
  struct cuda_context *c = cuda_context_from(b);
  struct cuda_scope scope;
  gcap_status st = cuda_enter(c, &scope);
  if (st != GCAP_SUCCESS) return st;
  cuda_exec_destroy_deferred(c);
  struct cuda_exec *x = gcap__calloc(1, sizeof *x);
  if (!x) return cuda_leave(&scope, gcap__fail(GCAP_ERROR_OUT_OF_MEMORY, "no memory for the CUDA executable"));
  st = gcap__cuda_check(c->d->cuEventCreate(&x->done, CU_EVENT_DISABLE_TIMING), "cuEventCreate (launch tracking)");
  if (st == GCAP_SUCCESS) st = instantiate(c, plan, x);
  if (st == GCAP_SUCCESS) st = apply_disabled(c, x, plan);
  if (st != GCAP_SUCCESS) release(c, x);
  else *out = x;
  return cuda_leave(&scope, st);
}

CUgraphExec cuda_exec_native(void *exec) { return ((struct cuda_exec *)exec)->exec; }

/*
 * Context current, outside any host function. The driver frees an executable still running once
 * it finishes; only the host-node records are gcap's: a launch may still call them unless its
 * event says it is done, and then the context keeps them until it goes.
 */
static void release(struct cuda_context *c, struct cuda_exec *x) {
  bool finished = !x->launched || (!x->untracked && c->d->cuEventQuery(x->done) == CUDA_SUCCESS);
  if (x->exec) c->d->cuGraphExecDestroy(x->exec);
  if (x->graph && !x->holder) c->d->cuGraphDestroy(x->graph);
  if (x->done) c->d->cuEventDestroy(x->done);
  if (finished) cuda_free_host_calls(x->host_calls);
  else cuda_adopt_orphans(c, x->host_calls);
  if (x->holder) cuda_cond_native_release(&c->base, x->holder);
  gcap__free(x->nodes);
  gcap__free(x);
}

void cuda_exec_destroy_deferred(struct cuda_context *c) {
  pthread_mutex_lock(&c->lock);
  struct cuda_exec *x = c->deferred;
  c->deferred = NULL;
  pthread_mutex_unlock(&c->lock);
  while (x) {
    struct cuda_exec *next = x->next_deferred;
    release(c, x);
    x = next;
  }
}

void cuda_exec_destroy(struct gcap__backend_ctx *b, void *exec) {
  struct cuda_context *c = cuda_context_from(b);
  struct cuda_exec *x = exec;
  struct cuda_scope scope;
  if (cuda_enter(c, &scope) != GCAP_SUCCESS) {
    /*
     * The context cannot be entered (the core never destroys from a host function, but
     * cuCtxSetCurrent may fail): the next instantiation or the context's end destroys it.
     */
    pthread_mutex_lock(&c->lock);
    x->next_deferred = c->deferred;
    c->deferred = x;
    pthread_mutex_unlock(&c->lock);
    return;
  }
  release(c, x);
  cuda_exec_destroy_deferred(c);
  cuda_leave(&scope, GCAP_SUCCESS);
}

/* The core calls this without its lock: host nodes of the launches waited for may call gcap. */
gcap_status cuda_exec_wait(struct gcap__backend_ctx *b, void *exec) {
  struct cuda_context *c = cuda_context_from(b);
  struct cuda_exec *x = exec;
  struct cuda_scope scope;
  gcap_status st = cuda_enter(c, &scope);
  if (st != GCAP_SUCCESS) return st;
  st = gcap__cuda_check(c->d->cuEventSynchronize(x->done), "cuEventSynchronize (the executable's last launch)");
  return cuda_leave(&scope, st);
}

gcap_status cuda_exec_upload(struct gcap__backend_ctx *b, void *exec, void *stream) {
  struct cuda_context *c = cuda_context_from(b);
  struct cuda_scope scope;
  gcap_status st = cuda_enter(c, &scope);
  if (st != GCAP_SUCCESS) return st;
  st = gcap__cuda_check(c->d->cuGraphUpload(((struct cuda_exec *)exec)->exec, stream), "cuGraphUpload");
  return cuda_leave(&scope, st);
}

gcap_status cuda_exec_launch(struct gcap__backend_ctx *b, void *exec, const struct gcap__plan *plan, void *stream) {
  (void)plan;
  struct cuda_context *c = cuda_context_from(b);
  struct cuda_exec *x = exec;
  struct cuda_scope scope;
  gcap_status st = cuda_enter(c, &scope);
  if (st != GCAP_SUCCESS) return st;
  st = gcap__cuda_check(c->d->cuGraphLaunch(x->exec, stream), "cuGraphLaunch");
  if (st == GCAP_SUCCESS) {
    x->launched = true;
    st = gcap__cuda_check(c->d->cuEventRecord(x->done, stream), "cuEventRecord (after cuGraphLaunch)");
    x->untracked = x->untracked || st != GCAP_SUCCESS;
  }
  return cuda_leave(&scope, st);
}

static gcap_status set_params(struct cuda_context *c, struct cuda_exec *x, size_t index,
                              const struct gcap__plan_node *e) {
  const struct gcap__cuda_driver *d = c->d;
  CUgraphNode node = x->nodes[index];
  CUresult r = CUDA_SUCCESS;
  switch ((int)e->type) {
  case GCAP_NODE_KERNEL: {
    CUDA_KERNEL_NODE_PARAMS p = kernel_params(&e->u.kernel);
    r = d->cuGraphExecKernelNodeSetParams(x->exec, node, &p);
    break;
  }
  case GCAP_NODE_MEMCPY: {
    CUDA_MEMCPY3D p = copy_params(c, &e->u.copy);
    r = d->cuGraphExecMemcpyNodeSetParams(x->exec, node, &p, c->ctx);
    break;
  }
  case GCAP_NODE_MEMSET: {
    gcap_status aligned = cuda_check_fill_alignment(&e->u.fill);
    if (aligned != GCAP_SUCCESS) return aligned;
    CUDA_MEMSET_NODE_PARAMS p = fill_params(&e->u.fill);
    r = d->cuGraphExecMemsetNodeSetParams(x->exec, node, &p, c->ctx);
    break;
  }
  case GCAP_NODE_HOST: {
    /* A fresh record: a launch in flight may still read the old one. */
    struct cuda_host_call *call = new_host_call(&x->host_calls, e->u.host.fn, e->u.host.user_data);
    if (!call) return gcap__fail(GCAP_ERROR_OUT_OF_MEMORY, "no memory for a host node's record");
    CUDA_HOST_NODE_PARAMS p = {cuda_host_trampoline, call};
    r = d->cuGraphExecHostNodeSetParams(x->exec, node, &p);
    break;
  }
  case GCAP_NODE_EVENT_RECORD: r = d->cuGraphExecEventRecordNodeSetEvent(x->exec, node, e->u.event.impl); break;
  case GCAP_NODE_EVENT_WAIT: r = d->cuGraphExecEventWaitNodeSetEvent(x->exec, node, e->u.event.impl); break;
  default: break;
  }
  return gcap__cuda_check(r, "cuGraphExec*NodeSetParams(plan entry %zu, %s)", index, gcap__node_type_name(e->type));
}

/* A copy with rows never comes here: the core updates the whole plan for it (CUDA's executable
 * copy setter takes 1-D copies only). */
gcap_status cuda_exec_set_entry(struct gcap__backend_ctx *b, void *exec, const struct gcap__plan *plan, size_t index,
                                const struct gcap__plan_node *entry) {
  struct cuda_context *c = cuda_context_from(b);
  struct cuda_exec *x = exec;
  struct cuda_scope scope;
  gcap_status st = cuda_enter(c, &scope);
  if (st != GCAP_SUCCESS) return st;
  if (entry->disabled != plan->nodes[index].disabled)
    st = gcap__cuda_check(c->d->cuGraphNodeSetEnabled(x->exec, x->nodes[index], !entry->disabled),
                          "cuGraphNodeSetEnabled(plan entry %zu, %d)", index, !entry->disabled);
  else st = set_params(c, x, index, entry);
  return cuda_leave(&scope, st);
}

/* The new graph's host records join the executable's: a launch in flight may still call the old ones. */
static void keep_host_calls(struct cuda_exec *x, struct materialized *m) {
  if (!m->host_calls) return;
  struct cuda_host_call **tail = &m->host_calls;
  while (*tail) tail = &(*tail)->next;
  *tail = x->host_calls;
  x->host_calls = m->host_calls;
  m->host_calls = NULL;
}

/*
 * Whole-graph update: the new plan becomes a CUgraph and cuGraphExecUpdate takes it in one step.
 * The template graph keeps naming the executable's nodes.
 */
/* The entry of a materialized plan whose node is n, or SIZE_MAX. */
static size_t entry_of(const struct materialized *m, size_t count, CUgraphNode n) {
  for (size_t i = 0; n && i < count; i++)
    if (m->nodes[i] == n) return i;
  return SIZE_MAX;
}

gcap_status cuda_exec_update(struct gcap__backend_ctx *b, void *exec, const struct gcap__plan *current,
                             const struct gcap__plan *fresh, struct gcap__update_refusal *refusal) {
  struct cuda_context *c = cuda_context_from(b);
  struct cuda_exec *x = exec;
  struct cuda_scope scope;
  gcap_status st = cuda_enter(c, &scope);
  if (st != GCAP_SUCCESS) return st;
  struct materialized m;
  st = materialize(c, fresh, &m);
  if (st != GCAP_SUCCESS) return cuda_leave(&scope, st);
  CUgraphExecUpdateResultInfo info;
  memset(&info, 0, sizeof info);
  CUresult r = c->d->cuGraphExecUpdate(x->exec, m.graph, &info);
  /* The result code is known only once the call has returned. */
  st = gcap__cuda_check(r, "cuGraphExecUpdate (update result %d)", (int)info.result);
  if (r == CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE) { /* what the driver refused, in the core's terms */
    refusal->result = (int)info.result;
    refusal->entry = entry_of(&m, fresh->count, info.errorNode);
    refusal->from_entry = entry_of(&m, fresh->count, info.errorFromNode);
  }
  if (st == GCAP_SUCCESS) {
    keep_host_calls(x, &m);
    st = apply_disabled(c, x, current);
  }
  discard(c, &m);
  return cuda_leave(&scope, st);
}
