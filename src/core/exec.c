#include <string.h>

#include "dispatch.h"
#include "capture.h"
#include "exec.h"
#include "pool.h"
#include "race.h"
#include "stream_race.h"

gcap_status gcap__check_exec(const gcap_exec *x, const char *what) {
  if (!x) return gcap__fail(GCAP_ERROR_INVALID_HANDLE, "%s is NULL", what);
  if (!gcap__registry_has(x, GCAP__H_EXEC))
    return gcap__fail(GCAP_ERROR_INVALID_HANDLE, "%s (exec %p) is not a live executable graph", what, (const void *)x);
  return gcap__refuse_faulted(x->ctx);
}

/* ------------------------------------------------------------- building */

struct builder {
  struct gcap__plan *plan;
  struct gcap_context *ctx;
  unsigned depth;
  bool trusted;             /* the graph being emitted had its ranges checked since memory was last freed */
  unsigned char *args_next; /* where the next kernel entry's argument copy goes in the plan's block */
};

struct plan_size {
  size_t entries, deps, args;
};

static size_t round16(size_t bytes) { return (bytes + 15) / 16 * 16; }

/* The entries and dependencies g's plan has (inside a child graph, roots wait for the child's entry). */
static void plan_size(const struct gcap_graph *g, bool child, struct plan_size *size) {
  for (size_t i = 0; i < g->nodes.count; i++) {
    const struct gcap_node *n = g->nodes.items[i];
    size->entries++;
    size->deps += n->deps.count ? n->deps.count : child;
    if (n->type == GCAP_NODE_KERNEL) size->args += round16(gcap__kernel_args_bytes(n->p.kernel.kernel));
    if (n->type == GCAP_NODE_MEMCPY && n->p.memcpy.p3) size->args += round16(sizeof(struct gcap__copy_shape));
    if (n->type != GCAP_NODE_GRAPH) continue;
    const struct gcap_graph *c = n->p.child;
    size->entries++; /* the child's exit, waiting for its sinks (or its entry when it is empty) */
    for (size_t j = 0; j < c->nodes.count; j++) size->deps += c->nodes.items[j]->dependents.count == 0;
    size->deps += c->nodes.count == 0;
    plan_size(c, true, size);
  }
}

/* Every dependency has its room already (plan_size). */
static gcap_status push_dep(struct builder *b, size_t index) {
  b->plan->deps[b->plan->num_deps++] = index;
  return GCAP_SUCCESS;
}

static int priority_of(const struct gcap_node *n) { return n->type == GCAP_NODE_KERNEL ? n->p.kernel.priority : 0; }

/* Ready nodes by priority, then creation order: a binary heap of the nodes it holds. */
struct ready_heap {
  struct gcap_node **items;
  size_t count;
};

static bool runs_before(const struct gcap_node *a, const struct gcap_node *b) {
  int pa = priority_of(a), pb = priority_of(b);
  return pa != pb ? pa < pb : a->index < b->index;
}

static void heap_push(struct ready_heap *h, struct gcap_node *n) {
  size_t i = h->count++;
  for (; i > 0 && runs_before(n, h->items[(i - 1) / 2]); i = (i - 1) / 2) h->items[i] = h->items[(i - 1) / 2];
  h->items[i] = n;
}

static struct gcap_node *heap_pop(struct ready_heap *h) {
  struct gcap_node *top = h->items[0], *last = h->items[--h->count];
  size_t i = 0;
  for (;;) {
    size_t c = 2 * i + 1;
    if (c >= h->count) break;
    if (c + 1 < h->count && runs_before(h->items[c + 1], h->items[c])) c++;
    if (!runs_before(h->items[c], last)) break;
    h->items[i] = h->items[c];
    i = c;
  }
  if (h->count) h->items[i] = last;
  return top;
}

/* Kahn's algorithm with a heap: the ready node of highest priority first (USE_NODE_PRIORITY). */
static size_t order_by_priority(const struct gcap_graph *g, uint32_t *waiting, struct gcap_node **order,
                                struct gcap_node **heap_items) {
  struct ready_heap h = {heap_items, 0};
  size_t tail = 0;
  for (size_t i = 0; i < g->nodes.count; i++)
    if (waiting[i] == 0) heap_push(&h, g->nodes.items[i]);
  while (h.count) {
    struct gcap_node *done = order[tail++] = heap_pop(&h);
    for (size_t i = 0; i < done->dependents.count; i++) {
      struct gcap_node *next = gcap__nlist_items(&done->dependents)[i];
      if (--waiting[next->index] == 0) heap_push(&h, next);
    }
  }
  return tail;
}

static bool has_priorities(const struct gcap_graph *g) {
  for (size_t i = 0; i < g->nodes.count; i++)
    if (priority_of(g->nodes.items[i])) return true;
  return false;
}

/* Kahn's algorithm, ready nodes taken in creation order. */
static size_t order_by_creation(const struct gcap_graph *g, uint32_t *waiting, struct gcap_node **order) {
  size_t head = 0, tail = 0;
  for (size_t i = 0; i < g->nodes.count; i++)
    if (waiting[i] == 0) order[tail++] = g->nodes.items[i];
  while (head < tail) {
    struct gcap_node *done = order[head++];
    for (size_t i = 0; i < done->dependents.count; i++) {
      struct gcap_node *next = gcap__nlist_items(&done->dependents)[i];
      if (--waiting[next->index] == 0) order[tail++] = next;
    }
  }
  return tail;
}

gcap_status gcap__topological_order(const struct gcap_graph *g, bool by_priority, struct gcap_node ***out) {
  size_t n = g->nodes.count;
  by_priority = by_priority && has_priorities(g);
  struct gcap_node **order = gcap__malloc(n * sizeof *order);
  struct gcap_node **heap = by_priority ? gcap__malloc(n * sizeof *heap) : NULL;
  uint32_t *waiting = gcap__malloc(n * sizeof *waiting);
  if (!order || !waiting || (by_priority && !heap)) {
    gcap__free(order);
    gcap__free(heap);
    gcap__free(waiting);
    return gcap__fail(GCAP_ERROR_OUT_OF_MEMORY, "no memory to order the graph");
  }
  for (size_t i = 0; i < n; i++) waiting[i] = g->nodes.items[i]->deps.count;
  size_t ordered = by_priority ? order_by_priority(g, waiting, order, heap) : order_by_creation(g, waiting, order);
  gcap__free(heap);
  gcap__free(waiting);
  if (ordered < n) {
    gcap__free(order);
    return gcap__fail(GCAP_ERROR_INVALID_VALUE, "the graph has a cycle");
  }
  *out = order;
  return GCAP_SUCCESS;
}

static gcap_status snapshot_params(struct builder *b, struct gcap__plan_node *pn, const struct gcap_node *n) {
  if (n->type == GCAP__NODE_NATIVE) /* its own copy: the node may be destroyed while the executable lives */
    return gcap__backend_native_graph_clone(b->ctx, n->p.native.handle, &pn->u.native);
  switch (n->type) {
  case GCAP_NODE_KERNEL: {
    const struct gcap__kernel_params *k = &n->p.kernel;
    void **args = NULL;
    gcap_status st = GCAP_SUCCESS;
    if (!b->trusted)
      st = gcap__check_kernel_pointers(b->ctx, k->kernel, k->args); /* memory freed since the node was made */
    if (st == GCAP_SUCCESS && k->cooperative)
      st = gcap__check_cooperative(k->kernel, k->grid, k->block, k->shared_mem_bytes);
    if (st != GCAP_SUCCESS) return st;
    size_t bytes = gcap__kernel_args_bytes(k->kernel);
    if (bytes) { /* without parameters there is nothing to copy, and maybe no block at all */
      args = gcap__kernel_args_fill(k->kernel, k->args, b->args_next);
      b->args_next += round16(bytes);
    }
    gcap__module_retain(k->kernel->module);
    pn->u.kernel = (struct gcap__launch){&k->kernel->info, k->grid, k->block, k->shared_mem_bytes, k->priority, args};
    pn->u.kernel.cooperative = k->cooperative;
    return GCAP_SUCCESS;
  }
  case GCAP_NODE_MEMCPY: { /* a DEFAULT copy's direction is inferred again here */
    struct gcap__copy_shape shape;
    pn->u.copy = gcap__copy_of_node(n, &shape);
    if (pn->u.copy.shape) { /* the plan's own, in its block */
      void *slot = b->args_next;
      b->args_next += round16(sizeof shape);
      pn->u.copy.shape = memcpy(slot, &shape, sizeof shape);
    }
    bool checked = b->trusted && pn->u.copy.kind != GCAP_MEMCPY_DEFAULT && pn->u.copy.bytes != 0;
    return checked ? GCAP_SUCCESS : gcap__check_copy(b->ctx, &pn->u.copy, false);
  }
  case GCAP_NODE_MEMSET: {
    pn->u.fill = gcap__fill_of(&n->p.memset);
    bool checked = b->trusted && pn->u.fill.width != 0 && pn->u.fill.height != 0;
    return checked ? GCAP_SUCCESS : gcap__check_fill(b->ctx, &pn->u.fill, false);
  }
  case GCAP_NODE_HOST: pn->u.host.fn = n->p.host.fn, pn->u.host.user_data = n->p.host.user_data; return GCAP_SUCCESS;
  case GCAP_NODE_MEM_ALLOC:
  case GCAP_NODE_MEM_FREE:
    gcap__galloc_retain_for_exec(n->p.mem);
    pn->u.mem = n->p.mem;
    return GCAP_SUCCESS;
  case GCAP_NODE_CONDITIONAL: return gcap__cond_plan_build(b->ctx, n, b->plan->flags, &pn->u.cond);
  case GCAP_NODE_EVENT_RECORD:
  case GCAP_NODE_EVENT_WAIT:
    gcap__event_retain(n->p.event);
    pn->u.event.impl = n->p.event->impl;
    pn->u.event.handle = n->p.event;
    return GCAP_SUCCESS;
  default: return GCAP_SUCCESS;
  }
}

/* Appends one plan entry waiting on `deps` (plan indices taken from nodes' plan_index). */
static gcap_status push_entry(struct builder *b, const struct gcap_node *n, gcap_node_type type, bool counted,
                              size_t *entry) {
  struct gcap__plan *p = b->plan;
  struct gcap__plan_node *pn = &p->nodes[p->count];
  memset(pn, 0, sizeof *pn);
  pn->type = type;
  pn->counted = counted;
  pn->source = n;
  pn->source_id = n->id;
  pn->source_index = n->index;
  pn->depth = b->depth;
  pn->first_dep = p->num_deps;
  *entry = p->count;
  gcap_status st = type == n->type ? snapshot_params(b, pn, n) : GCAP_SUCCESS;
  if (st != GCAP_SUCCESS) {
    pn->type = GCAP_NODE_EMPTY; /* nothing to release */
    b->ctx->failed_node = n;
    return gcap__fail_context(st, "node %zu (%s)", n->index, gcap__node_type_name(n->type));
  }
  p->count++;
  if (counted) p->counted++;
  return GCAP_SUCCESS;
}

static gcap_status add_node_deps(struct builder *b, const struct gcap_node *n, size_t entry_of_parent) {
  gcap_status st = GCAP_SUCCESS;
  struct gcap_node **deps = gcap__nlist_items(&n->deps);
  for (size_t i = 0; st == GCAP_SUCCESS && i < n->deps.count; i++) st = push_dep(b, deps[i]->plan_index);
  if (st == GCAP_SUCCESS && n->deps.count == 0 && entry_of_parent != SIZE_MAX) st = push_dep(b, entry_of_parent);
  return st;
}

static void close_deps(struct builder *b, size_t entry) {
  struct gcap__plan_node *pn = &b->plan->nodes[entry];
  pn->num_deps = b->plan->num_deps - pn->first_dep;
}

static gcap_status emit_graph(struct builder *b, const struct gcap_graph *g, size_t entry_of_parent);

/* A child graph becomes: its own entry, the child's plan, and a synthetic exit its dependents wait for. */
static gcap_status emit_child(struct builder *b, struct gcap_node *n, size_t entry) {
  b->depth++;
  gcap_status st = emit_graph(b, n->p.child, entry);
  b->depth--;
  size_t exit = 0;
  const struct gcap_graph *child = n->p.child;
  if (st == GCAP_SUCCESS) st = push_entry(b, n, GCAP_NODE_EMPTY, false, &exit);
  for (size_t i = 0; st == GCAP_SUCCESS && i < child->nodes.count; i++)
    if (child->nodes.items[i]->dependents.count == 0) st = push_dep(b, child->nodes.items[i]->plan_index);
  if (st == GCAP_SUCCESS && child->nodes.count == 0) st = push_dep(b, entry);
  if (st == GCAP_SUCCESS) close_deps(b, exit);
  n->plan_index = exit;
  return st;
}

static gcap_status emit_graph(struct builder *b, const struct gcap_graph *g, size_t entry_of_parent) {
  struct gcap_node **order = NULL;
  bool outer_trusted = b->trusted;
  b->trusted = g->ranges_known && g->ranges_epoch == gcap__alloc_epoch();
  gcap_status st = gcap__topological_order(g, b->plan->flags & GCAP_INSTANTIATE_USE_NODE_PRIORITY, &order);
  for (size_t i = 0; st == GCAP_SUCCESS && i < g->nodes.count; i++) {
    struct gcap_node *n = order[i];
    size_t entry = 0;
    st = push_entry(b, n, n->type, true, &entry);
    if (st == GCAP_SUCCESS) st = add_node_deps(b, n, entry_of_parent);
    if (st != GCAP_SUCCESS) break;
    close_deps(b, entry);
    n->plan_index = entry;
    if (n->type == GCAP_NODE_GRAPH) st = emit_child(b, n, entry);
  }
  gcap__free(order);
  b->trusted = outer_trusted;
  return st;
}

void gcap__plan_free_owned(const struct gcap__plan *p, const void *piece) {
  const unsigned char *a = piece;
  bool in_block = p->args_block && a >= p->args_block && a < p->args_block + p->args_block_bytes;
  if (!in_block) gcap__free((void *)piece);
}

void gcap__plan_release(struct gcap_context *ctx, struct gcap__plan *p) {
  for (size_t i = 0; i < p->count; i++) {
    struct gcap__plan_node *pn = &p->nodes[i];
    if (pn->type == GCAP_NODE_KERNEL) {
      gcap__plan_free_owned(p, pn->u.kernel.args);
      gcap__module_release(GCAP__CONTAINER(pn->u.kernel.kernel, struct gcap_kernel, info)->module);
    } else if (pn->type == GCAP_NODE_MEMCPY) {
      gcap__plan_free_owned(p, pn->u.copy.shape);
    } else if (pn->type == GCAP_NODE_EVENT_RECORD || pn->type == GCAP_NODE_EVENT_WAIT) {
      gcap__event_release(pn->u.event.handle);
    } else if (pn->type == GCAP_NODE_MEM_ALLOC || pn->type == GCAP_NODE_MEM_FREE) {
      gcap__galloc_release_for_exec(pn->u.mem);
    } else if (pn->type == GCAP__NODE_NATIVE) {
      gcap__backend_native_graph_destroy(ctx, pn->u.native);
    } else if (pn->type == GCAP_NODE_CONDITIONAL) {
      gcap__cond_plan_free(ctx, pn->u.cond);
    }
  }
  gcap__plan_drop_conds(ctx, p);
  gcap__free(p->nodes);
  gcap__free(p->deps);
  gcap__free(p->args_block);
  memset(p, 0, sizeof *p);
}

gcap_status gcap__build_plan(struct gcap_context *ctx, const struct gcap_graph *g, unsigned flags,
                             struct gcap__plan *plan) {
  memset(plan, 0, sizeof *plan);
  plan->flags = flags;
  struct plan_size size = {0, 0};
  plan_size(g, false, &size);
  if (size.entries > UINT32_MAX || size.deps > UINT32_MAX)
    return gcap__fail(GCAP_ERROR_NOT_SUPPORTED, "an executable holds at most 2^32 - 1 nodes and edges (%zu and %zu)",
                      size.entries, size.deps);
  plan->nodes = gcap__malloc(size.entries * sizeof *plan->nodes); /* each entry is cleared as it is pushed */
  plan->deps = gcap__malloc(size.deps * sizeof *plan->deps);
  plan->args_block = size.args ? gcap__aligned_alloc(16, size.args) : NULL;
  plan->args_block_bytes = size.args;
  if (!plan->nodes || !plan->deps || (size.args && !plan->args_block)) {
    gcap__plan_release(ctx, plan);
    return gcap__fail(GCAP_ERROR_OUT_OF_MEMORY, "no memory for the executable's %zu nodes", size.entries);
  }
  struct builder b = {plan, ctx, 0, false, plan->args_block};
  gcap_status st = emit_graph(&b, g, SIZE_MAX);
  if (st != GCAP_SUCCESS) gcap__plan_release(ctx, plan);
  return st;
}

static void exec_free(struct gcap_exec *x) {
  struct gcap_graph *g = x->mem_graph;
  if (g && gcap__registry_has(g, GCAP__H_GRAPH) && g->serial == x->mem_graph_serial) g->mem_exec = NULL;
  if (x->pool) {
    x->pool->attached_execs--;
    gcap__pool_unref(x->pool);
  }
  gcap__registry_remove(x);
  gcap__list_unlink(&x->link);
  gcap__sr_exec_end(x);
  if (x->impl) gcap__backend_exec_destroy(x->ctx, x->impl);
  gcap__plan_release(x->ctx, &x->plan);
  gcap__uo_refs_release(&x->user_objects);
  gcap__free(x);
}

/* The executable holds the user objects of its graph and of every child graph in it. */
static int hold_user_objects(struct gcap__uo_refs *refs, const struct gcap_graph *g) {
  if (gcap__uo_refs_copy(refs, &g->user_objects) != 0) return -1;
  for (size_t i = 0; g->child_graph_nodes && i < g->nodes.count; i++)
    if (g->nodes.items[i]->type == GCAP_NODE_GRAPH && hold_user_objects(refs, g->nodes.items[i]->p.child) != 0)
      return -1;
  return 0;
}

/* The executable whose launch this thread is inside (its CPU kernels may call back into gcap). */
static _Thread_local const struct gcap_exec *launching;

/*
 * The simulator runs the kernels of an IMMEDIATE launch with the context lock released
 * (gcap__work_release), so another thread may find x running: it waits until that launch has
 * ended, as CUDA orders its call after the launch. exec_before_change returns only once no kernel
 * runs with the lock released, which is never the case between a launch's entries (the launching
 * thread holds the lock there). The launching thread itself cannot wait for its own launch: it
 * still finds x running. A DEFERRED launch runs inside another thread's wait with x->running
 * false: exec_before_change, which every change calls before it writes the plan (update.c), and
 * exec_wait before a destroy wait for that thread's drain to end, then run x's queued launches.
 */
gcap_status gcap__exec_wait_other_launch(struct gcap_exec *x) {
  if (!x->running || launching == x) return GCAP_SUCCESS;
  return gcap__backend_exec_before_change(x->ctx, x->impl);
}

/*
 * Called without the lock: x is out of the registry and of ctx's list, so nobody else reaches it
 * but a launch of it still running, which ends first (or, from that launch's own thread, frees it).
 */
static void exec_wait_and_free(struct gcap_exec *x) {
  struct gcap_context *ctx = x->ctx;
  if (x->impl) gcap__backend_exec_wait(ctx, x->impl);
  gcap__lock(ctx);
  (void)gcap__exec_wait_other_launch(x); /* a destroy goes ahead whatever the wait reports */
  if (x->running) atomic_store(&x->destroy_pending, true);
  else exec_free(x);
  gcap__unlock(ctx);
}

void gcap__exec_reap(struct gcap_context *ctx) {
  for (;;) {
    struct gcap_exec *doomed = NULL;
    gcap__lock(ctx);
    for (struct gcap__link *l = ctx->execs.next; l != &ctx->execs && !doomed; l = l->next) {
      struct gcap_exec *x = GCAP__CONTAINER(l, struct gcap_exec, link);
      if (atomic_load(&x->destroy_pending) && !x->running) doomed = x;
    }
    if (doomed) gcap__list_unlink(&doomed->link);
    gcap__unlock(ctx);
    if (!doomed) return;
    exec_wait_and_free(doomed);
  }
}

void gcap__exec_destroy_all(struct gcap_context *ctx) {
  while (ctx->execs.next != &ctx->execs) exec_free(GCAP__CONTAINER(ctx->execs.next, struct gcap_exec, link));
}

/* Graph memory: one executable at a time (rules.md#exec-one-at-a-time), and it holds the allocations' pool. */
static void attach_graph_memory(struct gcap_exec *x, struct gcap_graph *g) {
  for (size_t i = 0; i < x->plan.count; i++) {
    struct gcap__plan_node *pn = &x->plan.nodes[i];
    if (pn->type != GCAP_NODE_MEM_ALLOC && pn->type != GCAP_NODE_MEM_FREE) continue;
    x->mem_entries++;
    if (!x->pool && pn->u.mem->pool) {
      x->pool = pn->u.mem->pool;
      gcap__pool_retain(x->pool);
      x->pool->attached_execs++;
    }
  }
  /* One executable at a time: graph memory as CUDA (rules.md#exec-one-at-a-time); conditionals are
   * gcap's own rule, as a handle's value lives with the graph, where CUDA gives each executable one. */
  if (x->mem_entries || gcap__graph_has_conditionals(g)) {
    g->mem_exec = x;
    x->mem_graph = g;
    x->mem_graph_serial = g->serial;
  }
}

gcap_status gcap__instantiate(struct gcap_graph *g, unsigned flags, gcap_exec **out) {
  struct gcap_context *ctx = g->ctx;
  ctx->failed_node = NULL;
  uint64_t epoch = gcap__alloc_epoch(); /* frees in ctx wait for its lock: the plan's checks see this one */
  gcap_status st = gcap__capture_check_graph_edit(g, "instantiating it");
  if (st == GCAP_SUCCESS) st = gcap__check_conds_used(g);
  if (st == GCAP_SUCCESS && gcap__backend_wants_race_check(ctx)) st = gcap__check_no_races(g);
  if (st != GCAP_SUCCESS) return st;
  if (g->mem_exec)
    return gcap__fail(GCAP_ERROR_NOT_SUPPORTED, "graph %p holds %s and already has executable %p; destroy it first",
                      (void *)g, g->mem_nodes ? "graph allocations" : "conditional nodes or handles",
                      (void *)g->mem_exec);
  struct gcap_exec *x = gcap__calloc(1, sizeof *x);
  if (!x) return gcap__fail(GCAP_ERROR_OUT_OF_MEMORY, "no memory for the executable");
  x->ctx = ctx;
  x->flags = flags;
  gcap__list_init(&x->link);
  st = gcap__build_plan(ctx, g, flags, &x->plan);
  if (st == GCAP_SUCCESS && gcap__plan_take_conds(&x->plan, g) != 0)
    st = gcap__fail(GCAP_ERROR_OUT_OF_MEMORY, "no memory for the executable's conditional handles");
  x->checked_epoch = gcap__alloc_epoch();
  if (st == GCAP_SUCCESS && hold_user_objects(&x->user_objects, g) != 0)
    st = gcap__fail(GCAP_ERROR_OUT_OF_MEMORY, "no memory for the executable's user object references");
  if (st == GCAP_SUCCESS) st = gcap__backend_exec_create(ctx, &x->plan, &x->impl);
  if (st == GCAP_SUCCESS && gcap__registry_add(x, GCAP__H_EXEC) != 0)
    st = gcap__fail(GCAP_ERROR_OUT_OF_MEMORY, "no memory to register the executable");
  if (st != GCAP_SUCCESS) {
    exec_free(x);
    return st;
  }
  gcap__list_push(&ctx->execs, &x->link);
  attach_graph_memory(x, g);
  g->ranges_known = true; /* every range was checked at `epoch` */
  g->ranges_epoch = epoch;
  *out = x;
  return GCAP_SUCCESS;
}

gcap_status gcap_graph_instantiate(gcap_graph *g, unsigned flags, gcap_exec **out) {
  GCAP_ENTER();
  if (out) *out = NULL;
  gcap_status st = gcap__check_graph(g, "graph");
  if (st == GCAP_SUCCESS) st = gcap__refuse_in_host_callback();
  if (st != GCAP_SUCCESS) return st;
  if (!out) return gcap__fail(GCAP_ERROR_INVALID_VALUE, "out is NULL");
  if ((st = gcap__check_instantiate_flags(flags, GCAP__INSTANTIATE_FLAGS, "flags")) != GCAP_SUCCESS) return st;
  gcap__lock(g->ctx);
  st = gcap__instantiate(g, flags, out);
  gcap__unlock(g->ctx);
  return st;
}

/*
 * The direction a DEFAULT copy was given at instantiation is the one it runs with: inferring it
 * again would take freed device memory for host memory.
 */
static gcap_status recheck_copy(const struct gcap_context *ctx, const struct gcap__copy *c) {
  struct gcap__copy as_resolved = *c;
  as_resolved.kind = c->resolved;
  return gcap__check_copy(ctx, &as_resolved, false);
}

static gcap_status recheck_kernel(const struct gcap_context *ctx, const struct gcap__launch *l) {
  return gcap__check_kernel_pointers(ctx, GCAP__CONTAINER(l->kernel, struct gcap_kernel, info), l->args);
}

/* Memory freed since the last check may have been under a copy, fill or kernel: check every range again. */
static gcap_status recheck_ranges(struct gcap_exec *x) {
  struct gcap_context *ctx = x->ctx;
  if (x->checked_epoch == gcap__alloc_epoch()) return GCAP_SUCCESS;
  for (size_t i = 0; i < x->plan.count; i++) {
    struct gcap__plan_node *pn = &x->plan.nodes[i];
    gcap_status st = GCAP_SUCCESS;
    if (pn->type == GCAP_NODE_MEMCPY) st = recheck_copy(ctx, &pn->u.copy);
    else if (pn->type == GCAP_NODE_MEMSET) st = gcap__check_fill(ctx, &pn->u.fill, false);
    else if (pn->type == GCAP_NODE_KERNEL) st = recheck_kernel(ctx, &pn->u.kernel);
    if (st != GCAP_SUCCESS)
      return gcap__fail_context(st, "executable %p, entry %zu (%s), no longer valid; nothing was launched", (void *)x,
                                i, gcap__node_type_name(pn->type));
  }
  x->checked_epoch = gcap__alloc_epoch();
  return GCAP_SUCCESS;
}

static bool allocated_earlier(const struct gcap__plan *p, size_t before, const struct gcap__galloc *a) {
  for (size_t i = 0; i < before; i++)
    if (p->nodes[i].type == GCAP_NODE_MEM_ALLOC && p->nodes[i].u.mem == a) return true;
  return false;
}

/* An allocation a previous launch left live blocks the next unless AUTO_FREE_ON_LAUNCH
 * (rules.md#mem-lifetime, rules.md#exec-launch-errors). */
static gcap_status check_graph_memory(const struct gcap_exec *x) {
  bool auto_free = x->flags & GCAP_INSTANTIATE_AUTO_FREE_ON_LAUNCH;
  for (size_t i = 0; i < x->plan.count && x->mem_entries; i++) {
    const struct gcap__plan_node *pn = &x->plan.nodes[i];
    const struct gcap__galloc *a = pn->u.mem;
    if (pn->type == GCAP_NODE_MEM_ALLOC && a->live && !auto_free)
      return gcap__fail(GCAP_ERROR_INVALID_VALUE,
                        "graph allocation %p from an earlier launch is still allocated: free it "
                        "(gcap_mem_free_async) or instantiate with GCAP_INSTANTIATE_AUTO_FREE_ON_LAUNCH",
                        a->ptr);
    if (pn->type == GCAP_NODE_MEM_FREE && !a->live && !allocated_earlier(&x->plan, i, a))
      return gcap__fail(GCAP_ERROR_INVALID_VALUE, "graph allocation %p is not allocated when this graph frees it",
                        a->ptr);
  }
  return GCAP_SUCCESS;
}

/* The launch's effect on graph memory, in the order the plan runs it. */
static void run_graph_memory(struct gcap_exec *x) {
  for (size_t i = 0; i < x->plan.count && x->mem_entries; i++) {
    struct gcap__plan_node *pn = &x->plan.nodes[i];
    if (pn->type == GCAP_NODE_MEM_ALLOC && (x->flags & GCAP_INSTANTIATE_AUTO_FREE_ON_LAUNCH))
      gcap__galloc_set_live(pn->u.mem, false);
  }
  for (size_t i = 0; i < x->plan.count && x->mem_entries; i++) {
    struct gcap__plan_node *pn = &x->plan.nodes[i];
    if (pn->type == GCAP_NODE_MEM_ALLOC) gcap__galloc_set_live(pn->u.mem, true);
    else if (pn->type == GCAP_NODE_MEM_FREE) gcap__galloc_set_live(pn->u.mem, false);
  }
}

static gcap_status check_exec_stream(const gcap_exec *x, const gcap_stream *s) {
  gcap_status st = gcap__check_exec(x, "exec");
  if (st == GCAP_SUCCESS) st = gcap__check_stream(s, "stream");
  if (st == GCAP_SUCCESS) st = gcap__check_same_context(x->ctx, s->ctx, "stream");
  return st;
}

/* A failure under a randomised order names what reproduces it (the simulator's seed and launch). */
static gcap_status name_launch_order(const struct gcap_context *ctx, gcap_status st) {
  char note[96];
  gcap__backend_describe_next_launch(ctx, note, sizeof note);
  return note[0] ? gcap__fail_context(st, "%s", note) : st;
}

gcap_status gcap_exec_launch(gcap_exec *x, gcap_stream *s) {
  GCAP_ENTER();
  gcap_status st = check_exec_stream(x, s);
  if (st == GCAP_SUCCESS) st = gcap__refuse_in_host_callback();
  if (st != GCAP_SUCCESS) return st;
  struct gcap_context *ctx = x->ctx;
  gcap__lock(ctx);
  st = gcap__exec_wait_other_launch(x);
  if (st == GCAP_SUCCESS && x->running)
    st = gcap__fail(GCAP_ERROR_ILLEGAL_STATE,
                    "executable %p is running (launched from one of its own host nodes); launches never overlap",
                    (void *)x);
  if (st == GCAP_SUCCESS) st = gcap__capture_check_launch(s);
  if (st == GCAP_SUCCESS) st = recheck_ranges(x);
  if (st == GCAP_SUCCESS) st = check_graph_memory(x);
  if (st == GCAP_SUCCESS) st = gcap__sr_launch(x, s);
  if (st == GCAP_SUCCESS) {
    run_graph_memory(x);
    x->running = true;
    const struct gcap_exec *outer = launching;
    launching = x;
    st = gcap__backend_exec_launch(ctx, x->impl, &x->plan, s->impl);
    launching = outer;
    x->running = false;
    gcap__sr_done(ctx, st);
    if (atomic_load(&x->destroy_pending)) exec_free(x);
  }
  if (st != GCAP_SUCCESS) st = name_launch_order(ctx, st);
  gcap__unlock(ctx);
  return st;
}

/* Context lock held. */
static gcap_status upload(gcap_exec *x, gcap_stream *s) {
  gcap_status st = gcap__capture_check_launch(s);
  return st == GCAP_SUCCESS ? gcap__backend_exec_upload(x->ctx, x->impl, s->impl) : st;
}

gcap_status gcap_exec_upload(gcap_exec *x, gcap_stream *s) {
  GCAP_ENTER();
  gcap_status st = check_exec_stream(x, s);
  if (st == GCAP_SUCCESS) st = gcap__refuse_in_host_callback();
  if (st != GCAP_SUCCESS) return st;
  gcap__lock(x->ctx);
  st = upload(x, s);
  gcap__unlock(x->ctx);
  return st;
}

gcap_status gcap__check_instantiate_flags(unsigned flags, unsigned allowed, const char *what) {
  unsigned unknown = flags & ~(allowed | GCAP_INSTANTIATE_DEVICE_LAUNCH);
  if (unknown) return gcap__fail(GCAP_ERROR_INVALID_VALUE, "%s 0x%x has unknown bits 0x%x", what, flags, unknown);
  if (flags & GCAP_INSTANTIATE_DEVICE_LAUNCH)
    return gcap__fail(GCAP_ERROR_NOT_SUPPORTED,
                      "%s 0x%x: device launch (GCAP_INSTANTIATE_DEVICE_LAUNCH) is not supported", what, flags);
  return GCAP_SUCCESS;
}

static gcap_status check_instantiate_params(const gcap_graph *g, const gcap_instantiate_params *p) {
  gcap_status st =
      gcap__check_instantiate_flags(p->flags, GCAP__INSTANTIATE_FLAGS | GCAP_INSTANTIATE_UPLOAD, "params->flags");
  if (st != GCAP_SUCCESS || !(p->flags & GCAP_INSTANTIATE_UPLOAD)) return st;
  st = gcap__check_stream(p->upload_stream, "params->upload_stream");
  return st == GCAP_SUCCESS ? gcap__check_same_context(g->ctx, p->upload_stream->ctx, "params->upload_stream") : st;
}

gcap_status gcap_graph_instantiate_with_params(gcap_graph *g, gcap_instantiate_params *params, gcap_exec **out) {
  GCAP_ENTER();
  if (out) *out = NULL;
  gcap_status st = gcap__check_graph(g, "graph");
  if (st == GCAP_SUCCESS) st = gcap__refuse_in_host_callback();
  if (st != GCAP_SUCCESS) return st;
  if (!params) return gcap__fail(GCAP_ERROR_INVALID_VALUE, "params is NULL");
  params->error_node_out = NULL;
  params->result_out = GCAP_INSTANTIATE_ERROR;
  if (!out) return gcap__fail(GCAP_ERROR_INVALID_VALUE, "out is NULL");
  if ((st = check_instantiate_params(g, params)) != GCAP_SUCCESS) return st;
  gcap__lock(g->ctx);
  st = gcap__instantiate(g, params->flags, out); /* gcap_exec_get_flags reports them all */
  bool uploads = params->flags & GCAP_INSTANTIATE_UPLOAD;
  if (st == GCAP_SUCCESS && uploads && (st = upload(*out, params->upload_stream)) != GCAP_SUCCESS) {
    exec_free(*out);
    *out = NULL;
  }
  if (st == GCAP_SUCCESS) {
    params->result_out = GCAP_INSTANTIATE_SUCCESS;
  } else {
    params->error_node_out = (gcap_node *)g->ctx->failed_node;
    if (st == GCAP_ERROR_NOT_SUPPORTED) params->result_out = GCAP_INSTANTIATE_NODE_OPERATION_NOT_SUPPORTED;
  }
  gcap__unlock(g->ctx);
  return st;
}

/*
 * From a host callback (which may run inside a launch of x, and on CUDA on a driver thread
 * while another thread holds the lock) the handle goes at once, without the context lock, and
 * the executable is freed after its launch, or by the next call that waits for work.
 */
void gcap_exec_destroy(gcap_exec *x) {
  GCAP_ENTER_RELEASE();
  if (!x || gcap__check_exec(x, "exec") != GCAP_SUCCESS) return;
  struct gcap_context *ctx = x->ctx;
  if (gcap__in_host_callback()) {
    gcap__registry_remove(x);
    atomic_store(&x->destroy_pending, true);
    return;
  }
  gcap__lock(ctx);
  gcap__registry_remove(x);
  gcap__list_unlink(&x->link);
  gcap__unlock(ctx);
  exec_wait_and_free(x); /* as CUDA: launches already issued finish first */
  gcap__exec_reap(ctx);
}

size_t gcap_exec_node_count(const gcap_exec *x) {
  GCAP_ENTER();
  if (gcap__check_exec(x, "exec") != GCAP_SUCCESS) return 0;
  return x->plan.counted;
}
