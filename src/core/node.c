#include <stdatomic.h>
#include <string.h>

#include "dispatch.h"
#include "graph.h"
#include "pool.h"

#define NODES_PER_CHUNK ((GCAP__CHUNK_BYTES - GCAP__CHUNK_HEADER) / sizeof(struct gcap_node))

static struct gcap_node *chunk_node(struct gcap__node_chunk *c, size_t i) {
  return (struct gcap_node *)(void *)((unsigned char *)c + GCAP__CHUNK_HEADER) + i;
}

#define MAX_SPARE_CHUNKS 512 /* 4 MiB per context */

static struct gcap__node_chunk *new_chunk(struct gcap_graph *g) {
  struct gcap__node_chunk *c = g->ctx->spare_chunks;
  if (c) {
    g->ctx->spare_chunks = c->next;
    g->ctx->spare_chunk_count--;
  } else if (!(c = gcap__aligned_alloc(GCAP__CHUNK_BYTES, GCAP__CHUNK_BYTES))) {
    return NULL;
  } else if (gcap__registry_add(c, GCAP__H_NODE_CHUNK) != 0) {
    gcap__free(c);
    return NULL;
  }
  c->next = g->chunks;
  c->graph = g;
  atomic_init(&c->used, 0);
  g->chunks = c;
  atomic_store_explicit(&g->newest_chunk, c, memory_order_relaxed);
  return c;
}

/* Node ids are unique in the process; a context takes them in blocks, so a node costs no atomic. */
static uint64_t next_node_id(struct gcap_context *ctx) {
  static atomic_uint_fast64_t next_block = 1;
  if (ctx->next_node_id == ctx->node_id_end) {
    ctx->next_node_id = atomic_fetch_add(&next_block, 4096);
    ctx->node_id_end = ctx->next_node_id + 4096;
  }
  return ctx->next_node_id++;
}

struct gcap_node *gcap__node_alloc(struct gcap_graph *g, gcap_node_type type) {
  struct gcap_node *n = g->spare;
  if (n) {
    g->spare = n->p.next_spare;
  } else {
    struct gcap__node_chunk *c = g->chunks;
    size_t used = c ? atomic_load_explicit(&c->used, memory_order_relaxed) : NODES_PER_CHUNK;
    if (used == NODES_PER_CHUNK) {
      if (!(c = new_chunk(g))) return NULL;
      used = 0;
    }
    n = chunk_node(c, used);
    atomic_store_explicit(&c->used, used + 1, memory_order_relaxed);
  }
  memset(n, 0, sizeof *n);
  n->magic = GCAP__NODE_LIVE;
  n->type = type;
  n->id = next_node_id(g->ctx);
  return n;
}

struct gcap__node_chunk *gcap__chunk_of(const struct gcap_node *n) {
  return (struct gcap__node_chunk *)((uintptr_t)n & ~(uintptr_t)(GCAP__CHUNK_BYTES - 1));
}

void gcap__node_unalloc(struct gcap_node *n) {
  struct gcap_graph *g = gcap__chunk_of(n)->graph;
  gcap__nlist_release(g, &n->deps);
  gcap__nlist_release(g, &n->dependents);
  memset(n, 0, sizeof *n); /* magic 0: not a handle */
  n->p.next_spare = g->spare;
  g->spare = n;
}

bool gcap__is_node_slot(const void *p) { return gcap__is_node_slot_near(NULL, p); }

/* The newest chunk of a live graph needs no registry lookup: deps are mostly the nodes just added. */
bool gcap__is_node_slot_near(const struct gcap_graph *g, const void *p) {
  const struct gcap__node_chunk *c =
      (const struct gcap__node_chunk *)((uintptr_t)p & ~(uintptr_t)(GCAP__CHUNK_BYTES - 1));
  bool newest = g && c == atomic_load_explicit(&g->newest_chunk, memory_order_relaxed);
  if (!newest && !gcap__registry_has(c, GCAP__H_NODE_CHUNK)) return false;
  size_t offset = (size_t)((uintptr_t)p - (uintptr_t)c);
  if (offset < GCAP__CHUNK_HEADER || (offset - GCAP__CHUNK_HEADER) % sizeof(struct gcap_node) != 0) return false;
  /* Relaxed: the caller got p from a call that returned after the slot was handed out. */
  return (offset - GCAP__CHUNK_HEADER) / sizeof(struct gcap_node) <
         atomic_load_explicit(&c->used, memory_order_relaxed);
}

static void chunk_free(struct gcap__node_chunk *c) {
  gcap__registry_remove(c);
  gcap__free(c);
}

/* A spare chunk hands out no slot: every handle into it is refused until a graph takes it again. */
void gcap__graph_free_chunks(struct gcap_graph *g) {
  struct gcap_context *ctx = g->ctx;
  while (g->chunks) {
    struct gcap__node_chunk *c = g->chunks;
    g->chunks = c->next;
    if (ctx->spare_chunk_count == MAX_SPARE_CHUNKS) {
      chunk_free(c);
      continue;
    }
    atomic_store_explicit(&c->used, 0, memory_order_relaxed);
    c->graph = NULL;
    c->next = ctx->spare_chunks;
    ctx->spare_chunks = c;
    ctx->spare_chunk_count++;
  }
}

void gcap__context_free_spare_chunks(struct gcap_context *ctx) {
  while (ctx->spare_chunks) {
    struct gcap__node_chunk *c = ctx->spare_chunks;
    ctx->spare_chunks = c->next;
    chunk_free(c);
  }
  ctx->spare_chunk_count = 0;
}

/* An argument copy: the table of num_params pointers, then the values they point to. */
static size_t args_table_bytes(const struct gcap_kernel *k) {
  return (k->info.num_params * sizeof(void *) + 15) / 16 * 16;
}
static size_t args_copy_bytes(const struct gcap_kernel *k) { return args_table_bytes(k) + k->args_bytes; }

static void **args_fill(const struct gcap_kernel *k, void *const *args, void **copy);

size_t gcap__kernel_args_bytes(const struct gcap_kernel *k) { return k->info.num_params ? args_copy_bytes(k) : 0; }

void **gcap__kernel_args_fill(const struct gcap_kernel *k, void *const *args, void *copy) {
  return k->info.num_params ? args_fill(k, args, copy) : NULL;
}

static void **args_fill(const struct gcap_kernel *k, void *const *args, void **copy) {
  unsigned char *values = (unsigned char *)copy + args_table_bytes(k);
  for (size_t i = 0; i < k->info.num_params; i++) {
    copy[i] = values + k->param_offsets[i];
    memcpy(copy[i], args[i], k->param_sizes[i]);
  }
  return copy;
}

static gcap_status args_missing(const struct gcap_kernel *k) {
  return gcap__fail(GCAP_ERROR_OUT_OF_MEMORY, "no memory for the kernel's %zu argument values", k->info.num_params);
}

gcap_status gcap__kernel_args_copy(const struct gcap_kernel *k, void *const *args, void ***out) {
  *out = NULL;
  if (k->info.num_params == 0) return GCAP_SUCCESS;
  void **copy = gcap__malloc(args_copy_bytes(k));
  if (!copy) return args_missing(k);
  *out = args_fill(k, args, copy);
  return GCAP_SUCCESS;
}

/* A node's argument copy lives in its graph's arena. */
static gcap_status node_args_copy(struct gcap_node *n, const struct gcap_kernel *k, void *const *args, void ***out) {
  *out = NULL;
  if (k->info.num_params == 0) return GCAP_SUCCESS;
  void **copy = gcap__arena_alloc(&gcap__chunk_of(n)->graph->arena, args_copy_bytes(k));
  if (!copy) return args_missing(k);
  *out = args_fill(k, args, copy);
  return GCAP_SUCCESS;
}

static void node_args_free(struct gcap_node *n) {
  const struct gcap_kernel *k = n->p.kernel.kernel;
  if (n->p.kernel.args) gcap__arena_give_back(&gcap__chunk_of(n)->graph->arena, n->p.kernel.args, args_copy_bytes(k));
}

/* `graph_going`: the graph frees its arena next, and the node with it. */
static void release_params(struct gcap_node *n, bool graph_going) {
  if (n->type == GCAP__NODE_NATIVE && n->p.native.ctx)
    gcap__backend_native_graph_destroy(n->p.native.ctx, n->p.native.handle);
  switch (n->type) {
  case GCAP_NODE_KERNEL:
    if (!graph_going) node_args_free(n);
    gcap__module_release(n->p.kernel.kernel->module);
    break;
  case GCAP_NODE_GRAPH: gcap__graph_free(n->p.child); break;
  case GCAP_NODE_EVENT_RECORD:
  case GCAP_NODE_EVENT_WAIT: gcap__event_release(n->p.event); break;
  case GCAP_NODE_MEMCPY:
    if (!graph_going) gcap__node_drop_copy_3d(n);
    break;
  case GCAP_NODE_MEM_FREE:
    if (n->graph) gcap__galloc_mark_freed(n->p.mem, n->graph, false); /* appended nodes only */
    gcap__galloc_release(n->p.mem);
    break;
  case GCAP_NODE_MEM_ALLOC: gcap__galloc_release(n->p.mem); break;
  case GCAP_NODE_CONDITIONAL: gcap__cond_node_free(n); break;
  default: break;
  }
  if (!graph_going) memset(&n->p, 0, sizeof n->p);
}

void gcap__node_release_params(struct gcap_node *n) { release_params(n, false); }

void gcap__node_release_for_graph_free(struct gcap_node *n) {
  if (n->type != GCAP_NODE_MEMCPY && n->type != GCAP_NODE_MEMSET && n->type != GCAP_NODE_HOST &&
      n->type != GCAP_NODE_EMPTY)
    release_params(n, true);
}

gcap_status gcap__node_copy_params(struct gcap_node *dst, const struct gcap_node *src) {
  dst->p = src->p;
  if (src->type == GCAP__NODE_NATIVE) {
    struct gcap_context *ctx = src->p.native.ctx;
    gcap_status st = gcap__backend_native_graph_clone(ctx, src->p.native.handle, &dst->p.native.handle);
    if (st != GCAP_SUCCESS) dst->p.native.ctx = NULL; /* nothing to free */
    return st;
  }
  switch (src->type) {
  case GCAP_NODE_KERNEL: {
    gcap_status st = node_args_copy(dst, src->p.kernel.kernel, src->p.kernel.args, &dst->p.kernel.args);
    if (st != GCAP_SUCCESS) return st;
    gcap__module_retain(src->p.kernel.kernel->module);
    return GCAP_SUCCESS;
  }
  case GCAP_NODE_GRAPH: return gcap__graph_clone(src->p.child, dst, &dst->p.child);
  case GCAP_NODE_MEMCPY:
    dst->p.memcpy.p3 = NULL; /* src's, in another graph's arena */
    return src->p.memcpy.p3 ? gcap__node_keep_copy_3d(dst, src->p.memcpy.p3) : GCAP_SUCCESS;
  case GCAP_NODE_EVENT_RECORD:
  case GCAP_NODE_EVENT_WAIT: gcap__event_retain(src->p.event); return GCAP_SUCCESS;
  default: return GCAP_SUCCESS;
  }
}

/* Handle checks of a dependency array: NULL, destroyed, or of another context's graph. */
static gcap_status check_dep_handle(const struct gcap_graph *g, const gcap_node *dep, const char *what) {
  gcap_status st = gcap__check_node_near(g, dep, what);
  return st == GCAP_SUCCESS ? gcap__check_same_context(g->ctx, dep->graph->ctx, what) : st;
}

/* The argument's name is formatted only for a failure: the checks run again to say it. */
gcap_status gcap__node_check_dep_handles(const struct gcap_graph *g, gcap_node *const *deps, size_t num_deps) {
  for (size_t i = 0; deps && i < num_deps; i++) {
    if (check_dep_handle(g, deps[i], "deps[i]") == GCAP_SUCCESS) continue;
    char what[32];
    snprintf(what, sizeof what, "deps[%zu]", i);
    return check_dep_handle(g, deps[i], what);
  }
  return GCAP_SUCCESS;
}

gcap_status gcap__node_check_deps(const struct gcap_graph *g, gcap_node *const *deps, size_t num_deps) {
  if (num_deps > 0 && !deps) return gcap__fail(GCAP_ERROR_INVALID_VALUE, "deps is NULL with num_deps = %zu", num_deps);
  for (size_t i = 0; i < num_deps; i++) {
    if (deps[i]->graph != g)
      return gcap__fail(GCAP_ERROR_INVALID_VALUE, "deps[%zu] (%p) is a node of another graph", i, (void *)deps[i]);
    for (size_t j = 0; j < i; j++)
      if (deps[j] == deps[i])
        return gcap__fail(GCAP_ERROR_INVALID_VALUE, "deps[%zu] repeats deps[%zu] (%p)", i, j, (void *)deps[i]);
  }
  return GCAP_SUCCESS;
}

gcap_status gcap__node_append(struct gcap_graph *g, struct gcap_node *n, gcap_node *const *deps, size_t num_deps,
                              bool checked) {
  if (gcap__grow((void **)&g->nodes.items, &g->nodes.cap, g->nodes.count + 1, sizeof *g->nodes.items) != 0 ||
      gcap__nlist_reserve(g, &n->deps, num_deps) != 0 ||
      gcap__grow((void **)&g->edges, &g->edge_cap, g->edge_count + num_deps, sizeof *g->edges) != 0)
    goto oom;
  for (size_t i = 0; i < num_deps; i++)
    if (gcap__nlist_reserve(g, &deps[i]->dependents, deps[i]->dependents.count + 1) != 0) goto oom;
  n->graph = g;
  n->index = g->nodes.count;
  g->nodes.items[g->nodes.count++] = n;
  for (size_t i = 0; i < num_deps; i++) {
    gcap__nlist_items(&n->deps)[n->deps.count++] = deps[i];
    gcap__nlist_items(&deps[i]->dependents)[deps[i]->dependents.count++] = n;
    g->edges[g->edge_count++] = (struct gcap__edge){deps[i], n};
  }
  gcap__graph_note_ranges(g, n, checked);
  g->child_graph_nodes += n->type == GCAP_NODE_GRAPH;
  g->cond_nodes += n->type == GCAP_NODE_CONDITIONAL;
  g->mem_nodes += n->type == GCAP_NODE_MEM_ALLOC || n->type == GCAP_NODE_MEM_FREE;
  return GCAP_SUCCESS;
oom:
  gcap__nlist_release(g, &n->deps);
  return gcap__fail(GCAP_ERROR_OUT_OF_MEMORY, "no memory for the node");
}

/* ------------------------------------------------------- parameter checks */

static gcap_status check_kernel_params(const struct gcap_graph *g, const gcap_kernel_node_params *p) {
  gcap_status st = gcap__check_kernel(p->kernel, "params->kernel");
  if (st == GCAP_SUCCESS) st = gcap__check_same_context(g->ctx, p->kernel->module->ctx, "params->kernel");
  if (st == GCAP_SUCCESS) st = gcap__check_launch(p->kernel, p->grid, p->block, p->shared_mem_bytes, p->args);
  if (st == GCAP_SUCCESS) st = gcap__check_kernel_pointers(g->ctx, p->kernel, p->args);
  return st;
}

static gcap_status set_kernel_params(struct gcap_node *n, const gcap_kernel_node_params *p) {
  void **args = NULL;
  gcap_status st = node_args_copy(n, p->kernel, p->args, &args);
  if (st != GCAP_SUCCESS) return st;
  gcap__module_retain(p->kernel->module);
  int priority = n->p.kernel.kernel ? n->p.kernel.priority : 0; /* attributes: new parameters keep them */
  bool cooperative = n->p.kernel.kernel ? n->p.kernel.cooperative : false;
  if (n->p.kernel.kernel) gcap__node_release_params(n);
  n->p.kernel =
      (struct gcap__kernel_params){p->kernel, p->grid, p->block, p->shared_mem_bytes, priority, args, cooperative};
  return GCAP_SUCCESS;
}

/* Whether g is a conditional node's body, or a child graph inside one. */
static bool in_conditional_body(const struct gcap_graph *g) {
  for (; g && g->owner; g = g->owner->graph)
    if (g->owner->type == GCAP_NODE_CONDITIONAL) return true;
  return false;
}

gcap_status gcap__check_body_copy(const struct gcap_graph *g, const struct gcap__copy *c) {
  if (!in_conditional_body(g)) return GCAP_SUCCESS;
  /* DEFAULT on CUDA: pointers gcap does not know are the driver's to type (unified addressing). */
  if (c->kind == GCAP_MEMCPY_DEFAULT && !g->ctx->ops->knows_all_device_memory) return GCAP_SUCCESS;
  gcap_memcpy_kind k = c->resolved;
  const void *sides[2] = {k == GCAP_MEMCPY_HOST_TO_DEVICE || k == GCAP_MEMCPY_HOST_TO_HOST ? c->src : NULL,
                          k == GCAP_MEMCPY_DEVICE_TO_HOST || k == GCAP_MEMCPY_HOST_TO_HOST ? c->dst : NULL};
  for (int i = 0; i < 2; i++) {
    const struct gcap__allocation *a = sides[i] ? gcap__find_allocation(g->ctx, sides[i]) : NULL;
    if (sides[i] && (!a || a->kind != GCAP__ALLOC_HOST))
      return gcap__fail(GCAP_ERROR_INVALID_VALUE,
                        "params->%s %p is pageable host memory: copies in a conditional node's body may touch only "
                        "device memory and page-locked host memory (gcap_host_alloc), as CUDA requires",
                        i ? "dst" : "src", sides[i]);
  }
  return GCAP_SUCCESS;
}

static gcap_status check_memcpy_params(const struct gcap_graph *g, const gcap_memcpy_node_params *p) {
  struct gcap__copy c = gcap__copy_of(p);
  gcap_status st = gcap__check_copy(g->ctx, &c, false);
  return st == GCAP_SUCCESS ? gcap__check_body_copy(g, &c) : st;
}

static gcap_status check_memset_params(const struct gcap_graph *g, const gcap_memset_node_params *p) {
  struct gcap__fill f = gcap__fill_of(p);
  return gcap__check_fill(g->ctx, &f, false);
}

static gcap_status check_host_params(const gcap_host_node_params *p) {
  return p->fn ? GCAP_SUCCESS : gcap__fail(GCAP_ERROR_INVALID_VALUE, "params->fn is NULL");
}

static struct gcap_node *new_node(struct gcap_graph *g, gcap_node_type type) {
  struct gcap_node *n = gcap__node_alloc(g, type);
  if (!n) gcap__fail(GCAP_ERROR_OUT_OF_MEMORY, "no memory for the node");
  return n;
}

/* Nodes for stream capture, whose parameters the eager call has already checked. */
gcap_status gcap__node_make_kernel(struct gcap_graph *g, const gcap_kernel_node_params *p, struct gcap_node **out) {
  struct gcap_node *n = new_node(g, GCAP_NODE_KERNEL);
  if (!n) return GCAP_ERROR_OUT_OF_MEMORY;
  gcap_status st = set_kernel_params(n, p);
  if (st != GCAP_SUCCESS) {
    gcap__node_unalloc(n);
    return st;
  }
  *out = n;
  return GCAP_SUCCESS;
}

gcap_status gcap__node_make_value(struct gcap_graph *g, gcap_node_type type, const void *p, size_t size,
                                  struct gcap_node **out) {
  struct gcap_node *n = new_node(g, type);
  if (!n) return GCAP_ERROR_OUT_OF_MEMORY;
  memcpy(&n->p, p, size);
  *out = n;
  return GCAP_SUCCESS;
}

void gcap__node_discard(struct gcap_node *n) {
  gcap__node_release_params(n);
  gcap__node_unalloc(n);
}

/* -------------------------------------------------------------- add nodes */

/* What every add_*_node checks before its own parameters: graph, deps' handles, out. */
gcap_status gcap__node_begin_add(gcap_graph *g, gcap_node *const *deps, size_t num_deps, gcap_node **out) {
  if (out) *out = NULL;
  gcap_status st = gcap__check_graph(g, "graph");
  if (st == GCAP_SUCCESS) st = gcap__node_check_dep_handles(g, deps, num_deps);
  return st;
}

gcap_status gcap__node_finish_checks(gcap_graph *g, gcap_node *const *deps, size_t num_deps, const void *params,
                                     gcap_node **out) {
  if (!out) return gcap__fail(GCAP_ERROR_INVALID_VALUE, "out is NULL");
  if (!params) return gcap__fail(GCAP_ERROR_INVALID_VALUE, "params is NULL");
  return gcap__node_check_deps(g, deps, num_deps);
}

/* Appends a node whose parameters are already set; on failure releases them. */
gcap_status gcap__node_commit(gcap_graph *g, struct gcap_node *n, gcap_node *const *deps, size_t num_deps,
                              gcap_node **out) {
  gcap_status st = gcap__node_append(g, n, deps, num_deps, true);
  if (st != GCAP_SUCCESS) {
    gcap__node_release_params(n);
    gcap__node_unalloc(n);
    return st;
  }
  *out = n;
  return GCAP_SUCCESS;
}

gcap_status gcap_graph_add_kernel_node(gcap_graph *g, gcap_node *const *deps, size_t num_deps,
                                       const gcap_kernel_node_params *p, gcap_node **out) {
  GCAP_ENTER();
  gcap_status st = gcap__node_begin_add(g, deps, num_deps, out);
  if (st == GCAP_SUCCESS && p) st = gcap__check_kernel(p->kernel, "params->kernel");
  if (st == GCAP_SUCCESS && p) st = gcap__check_same_context(g->ctx, p->kernel->module->ctx, "params->kernel");
  if (st == GCAP_SUCCESS) st = gcap__node_finish_checks(g, deps, num_deps, p, out);
  if (st != GCAP_SUCCESS) return st;
  gcap__lock(g->ctx);
  st = check_kernel_params(g, p);
  struct gcap_node *n = st == GCAP_SUCCESS ? new_node(g, GCAP_NODE_KERNEL) : NULL;
  if (st == GCAP_SUCCESS && !n) st = GCAP_ERROR_OUT_OF_MEMORY;
  if (n && (st = set_kernel_params(n, p)) != GCAP_SUCCESS) gcap__node_unalloc(n);
  else if (n) st = gcap__node_commit(g, n, deps, num_deps, out);
  gcap__unlock(g->ctx);
  return st;
}

/* Memcpy, memset and host nodes: parameters that are plain values, checked, then stored as given. */
typedef gcap_status (*value_check)(const struct gcap_graph *g, const void *params);

static gcap_status add_value_node(gcap_graph *g, gcap_node *const *deps, size_t num_deps, gcap_node_type type,
                                  const void *p, size_t size, value_check check, gcap_node **out) {
  gcap_status st = gcap__node_begin_add(g, deps, num_deps, out);
  if (st == GCAP_SUCCESS) st = gcap__node_finish_checks(g, deps, num_deps, p, out);
  if (st != GCAP_SUCCESS) return st;
  gcap__lock(g->ctx);
  st = check(g, p);
  struct gcap_node *n = st == GCAP_SUCCESS ? new_node(g, type) : NULL;
  if (st == GCAP_SUCCESS && !n) st = GCAP_ERROR_OUT_OF_MEMORY;
  if (n) {
    memcpy(&n->p, p, size);
    st = gcap__node_commit(g, n, deps, num_deps, out);
  }
  gcap__unlock(g->ctx);
  return st;
}

static gcap_status check_memcpy_value(const struct gcap_graph *g, const void *p) { return check_memcpy_params(g, p); }
static gcap_status check_memset_value(const struct gcap_graph *g, const void *p) { return check_memset_params(g, p); }
static gcap_status check_host_value(const struct gcap_graph *g, const void *p) { return check_host_params(p); }

gcap_status gcap_graph_add_memcpy_node(gcap_graph *g, gcap_node *const *deps, size_t num_deps,
                                       const gcap_memcpy_node_params *p, gcap_node **out) {
  GCAP_ENTER();
  return add_value_node(g, deps, num_deps, GCAP_NODE_MEMCPY, p, sizeof *p, check_memcpy_value, out);
}

gcap_status gcap_graph_add_memset_node(gcap_graph *g, gcap_node *const *deps, size_t num_deps,
                                       const gcap_memset_node_params *p, gcap_node **out) {
  GCAP_ENTER();
  return add_value_node(g, deps, num_deps, GCAP_NODE_MEMSET, p, sizeof *p, check_memset_value, out);
}

gcap_status gcap_graph_add_host_node(gcap_graph *g, gcap_node *const *deps, size_t num_deps,
                                     const gcap_host_node_params *p, gcap_node **out) {
  GCAP_ENTER();
  return add_value_node(g, deps, num_deps, GCAP_NODE_HOST, p, sizeof *p, check_host_value, out);
}

gcap_status gcap_graph_add_empty_node(gcap_graph *g, gcap_node *const *deps, size_t num_deps, gcap_node **out) {
  GCAP_ENTER();
  static const int no_params = 0;
  gcap_status st = gcap__node_begin_add(g, deps, num_deps, out);
  if (st == GCAP_SUCCESS) st = gcap__node_finish_checks(g, deps, num_deps, &no_params, out);
  if (st != GCAP_SUCCESS) return st;
  gcap__lock(g->ctx);
  struct gcap_node *n = new_node(g, GCAP_NODE_EMPTY);
  st = n ? gcap__node_commit(g, n, deps, num_deps, out) : GCAP_ERROR_OUT_OF_MEMORY;
  gcap__unlock(g->ctx);
  return st;
}

gcap_status gcap_graph_add_child_graph_node(gcap_graph *g, gcap_node *const *deps, size_t num_deps,
                                            const gcap_graph *child, gcap_node **out) {
  GCAP_ENTER();
  gcap_status st = gcap__node_begin_add(g, deps, num_deps, out);
  if (st == GCAP_SUCCESS) st = gcap__check_graph(child, "child");
  if (st == GCAP_SUCCESS) st = gcap__check_same_context(g->ctx, child->ctx, "child");
  if (st == GCAP_SUCCESS) st = gcap__node_finish_checks(g, deps, num_deps, child, out);
  if (st != GCAP_SUCCESS) return st;
  gcap__lock(g->ctx);
  struct gcap_node *n = new_node(g, GCAP_NODE_GRAPH);
  st = n ? gcap__graph_clone(child, n, &n->p.child) : GCAP_ERROR_OUT_OF_MEMORY;
  if (n && st != GCAP_SUCCESS) gcap__node_unalloc(n);
  else if (n) st = gcap__node_commit(g, n, deps, num_deps, out);
  gcap__unlock(g->ctx);
  return st;
}

gcap_status gcap__graph_add_native(gcap_graph *g, gcap_node *const *deps, size_t num_deps, void *native,
                                   gcap_node **out) {
  gcap_status st = gcap__node_begin_add(g, deps, num_deps, out);
  if (st == GCAP_SUCCESS && !native) st = gcap__fail(GCAP_ERROR_INVALID_VALUE, "native is NULL");
  if (st == GCAP_SUCCESS && !g->ctx->ops->native_graph_clone)
    st = gcap__fail(GCAP_ERROR_NOT_SUPPORTED,
                    "graph %p belongs to a %s context: native CUDA graphs need the CUDA backend", (void *)g,
                    g->ctx->ops->name);
  if (st == GCAP_SUCCESS) st = gcap__node_finish_checks(g, deps, num_deps, native, out);
  if (st != GCAP_SUCCESS) return st;
  gcap__lock(g->ctx);
  struct gcap_node *n = new_node(g, GCAP__NODE_NATIVE);
  st = n ? gcap__backend_native_graph_clone(g->ctx, native, &n->p.native.handle) : GCAP_ERROR_OUT_OF_MEMORY;
  if (n && st != GCAP_SUCCESS) {
    gcap__node_unalloc(n);
  } else if (n) {
    n->p.native.ctx = g->ctx;
    st = gcap__node_commit(g, n, deps, num_deps, out);
  }
  gcap__unlock(g->ctx);
  return st;
}

static gcap_status add_event_node(gcap_graph *g, gcap_node *const *deps, size_t num_deps, gcap_event *e,
                                  gcap_node **out, gcap_node_type type) {
  gcap_status st = gcap__node_begin_add(g, deps, num_deps, out);
  if (st == GCAP_SUCCESS) st = gcap__check_event(e, "event");
  if (st == GCAP_SUCCESS) st = gcap__check_same_context(g->ctx, e->ctx, "event");
  if (st == GCAP_SUCCESS) st = gcap__node_finish_checks(g, deps, num_deps, e, out);
  if (st != GCAP_SUCCESS) return st;
  gcap__lock(g->ctx);
  struct gcap_node *n = new_node(g, type);
  st = n ? GCAP_SUCCESS : GCAP_ERROR_OUT_OF_MEMORY;
  if (n) {
    n->p.event = e;
    gcap__event_retain(e);
    st = gcap__node_commit(g, n, deps, num_deps, out);
  }
  gcap__unlock(g->ctx);
  return st;
}

gcap_status gcap_graph_add_event_record_node(gcap_graph *g, gcap_node *const *deps, size_t num_deps, gcap_event *e,
                                             gcap_node **out) {
  GCAP_ENTER();
  return add_event_node(g, deps, num_deps, e, out, GCAP_NODE_EVENT_RECORD);
}

gcap_status gcap_graph_add_event_wait_node(gcap_graph *g, gcap_node *const *deps, size_t num_deps, gcap_event *e,
                                           gcap_node **out) {
  GCAP_ENTER();
  return add_event_node(g, deps, num_deps, e, out, GCAP_NODE_EVENT_WAIT);
}

/* ------------------------------------------------------- params get / set */

static const char *type_name(gcap_node_type t) {
  if (t == GCAP__NODE_NATIVE) return "native CUDA graph";
  switch (t) {
  case GCAP_NODE_KERNEL: return "kernel";
  case GCAP_NODE_MEMCPY: return "memcpy";
  case GCAP_NODE_MEMSET: return "memset";
  case GCAP_NODE_HOST: return "host";
  case GCAP_NODE_GRAPH: return "child graph";
  case GCAP_NODE_EMPTY: return "empty";
  case GCAP_NODE_EVENT_WAIT: return "event wait";
  case GCAP_NODE_EVENT_RECORD: return "event record";
  case GCAP_NODE_MEM_ALLOC: return "mem alloc";
  case GCAP_NODE_MEM_FREE: return "mem free";
  case GCAP_NODE_CONDITIONAL: return "conditional";
  }
  return "unknown";
}

gcap_status gcap__node_check_typed(const gcap_node *n, gcap_node_type want, const void *p) {
  gcap_status st = gcap__check_node(n, "node");
  if (st != GCAP_SUCCESS) return st;
  if (!p) return gcap__fail(GCAP_ERROR_INVALID_VALUE, "params is NULL");
  if (n->type != want)
    return gcap__fail(GCAP_ERROR_INVALID_VALUE, "node %p is %s %s node, not %s %s node", (const void *)n,
                      gcap__article(n->type), type_name(n->type), gcap__article(want), type_name(want));
  return GCAP_SUCCESS;
}

gcap_status gcap_node_get_kernel_params(const gcap_node *n, gcap_kernel_node_params *p) {
  GCAP_ENTER();
  gcap_status st = gcap__node_check_typed(n, GCAP_NODE_KERNEL, p);
  if (st != GCAP_SUCCESS) return st;
  const struct gcap__kernel_params *k = &n->p.kernel;
  *p = (gcap_kernel_node_params){k->kernel, k->grid, k->block, k->shared_mem_bytes, k->args};
  return GCAP_SUCCESS;
}

gcap_status gcap_node_get_memcpy_params(const gcap_node *n, gcap_memcpy_node_params *p) {
  GCAP_ENTER();
  gcap_status st = gcap__node_check_typed(n, GCAP_NODE_MEMCPY, p);
  const gcap_memcpy_3d_params *p3 = st == GCAP_SUCCESS ? n->p.memcpy.p3 : NULL;
  if (p3 && (p3->extent.height > 1 || p3->extent.depth > 1))
    return gcap__fail(GCAP_ERROR_INVALID_VALUE,
                      "node %p copies %zu x %zu rows: read it with gcap_node_get_memcpy_3d_params", (const void *)n,
                      p3->extent.height, p3->extent.depth);
  if (st == GCAP_SUCCESS) *p = n->p.memcpy.flat;
  return st;
}

gcap_status gcap_node_get_memset_params(const gcap_node *n, gcap_memset_node_params *p) {
  GCAP_ENTER();
  gcap_status st = gcap__node_check_typed(n, GCAP_NODE_MEMSET, p);
  if (st == GCAP_SUCCESS) *p = n->p.memset;
  return st;
}

gcap_status gcap_node_get_host_params(const gcap_node *n, gcap_host_node_params *p) {
  GCAP_ENTER();
  gcap_status st = gcap__node_check_typed(n, GCAP_NODE_HOST, p);
  if (st == GCAP_SUCCESS) *p = n->p.host;
  return st;
}

static gcap_status check_attr(const gcap_node *n, gcap_kernel_node_attr attr, const void *value) {
  gcap_status st = gcap__node_check_typed(n, GCAP_NODE_KERNEL, n); /* value is checked below, with its own name */
  if (st == GCAP_SUCCESS && attr != GCAP_KERNEL_NODE_ATTR_PRIORITY && attr != GCAP_KERNEL_NODE_ATTR_COOPERATIVE)
    st = gcap__fail(GCAP_ERROR_INVALID_VALUE, "attr %d is not a gcap_kernel_node_attr", (int)attr);
  if (st == GCAP_SUCCESS && !value) st = gcap__fail(GCAP_ERROR_INVALID_VALUE, "value is NULL");
  return st;
}

gcap_status gcap_graph_kernel_node_set_attribute(gcap_node *n, gcap_kernel_node_attr attr,
                                                 const gcap_kernel_node_attr_value *value) {
  GCAP_ENTER();
  gcap_status st = check_attr(n, attr, value);
  if (st != GCAP_SUCCESS) return st;
  if (attr == GCAP_KERNEL_NODE_ATTR_COOPERATIVE && value->cooperative != 0 && value->cooperative != 1)
    return gcap__fail(GCAP_ERROR_INVALID_VALUE, "value->cooperative is %d (0 or 1)", value->cooperative);
  gcap__lock(n->graph->ctx);
  if (attr == GCAP_KERNEL_NODE_ATTR_COOPERATIVE) {
    const struct gcap__kernel_params *k = &n->p.kernel; /* a grid that cannot fit is refused now, unchanged */
    if (value->cooperative) st = gcap__check_cooperative(k->kernel, k->grid, k->block, k->shared_mem_bytes);
    if (st == GCAP_SUCCESS) n->p.kernel.cooperative = value->cooperative != 0;
  } else {
    n->p.kernel.priority = value->priority;
  }
  gcap__unlock(n->graph->ctx);
  return st;
}

gcap_status gcap_graph_kernel_node_get_attribute(const gcap_node *n, gcap_kernel_node_attr attr,
                                                 gcap_kernel_node_attr_value *value) {
  GCAP_ENTER();
  gcap_status st = check_attr(n, attr, value);
  if (st == GCAP_SUCCESS && attr == GCAP_KERNEL_NODE_ATTR_COOPERATIVE) value->cooperative = n->p.kernel.cooperative;
  else if (st == GCAP_SUCCESS) value->priority = n->p.kernel.priority;
  return st;
}

gcap_status gcap_node_set_kernel_params(gcap_node *n, const gcap_kernel_node_params *p) {
  GCAP_ENTER();
  gcap_status st = gcap__check_node(n, "node");
  if (st == GCAP_SUCCESS && p) st = gcap__check_kernel(p->kernel, "params->kernel");
  /* A foreign kernel is INVALID_HANDLE whatever the node's type, as gcap_graph_add_kernel_node says. */
  if (st == GCAP_SUCCESS && p) st = gcap__check_same_context(n->graph->ctx, p->kernel->module->ctx, "params->kernel");
  if (st == GCAP_SUCCESS) st = gcap__node_check_typed(n, GCAP_NODE_KERNEL, p);
  if (st != GCAP_SUCCESS) return st;
  gcap__lock(n->graph->ctx);
  st = check_kernel_params(n->graph, p);
  if (st == GCAP_SUCCESS) st = set_kernel_params(n, p);
  if (st == GCAP_SUCCESS) gcap__graph_note_ranges(n->graph, n, true);
  gcap__unlock(n->graph->ctx);
  return st;
}

gcap_status gcap_node_set_memcpy_params(gcap_node *n, const gcap_memcpy_node_params *p) {
  GCAP_ENTER();
  gcap_status st = gcap__node_check_typed(n, GCAP_NODE_MEMCPY, p);
  if (st != GCAP_SUCCESS) return st;
  gcap__lock(n->graph->ctx);
  st = check_memcpy_params(n->graph, p);
  if (st == GCAP_SUCCESS) gcap__node_drop_copy_3d(n); /* a 1-D copy from now on */
  if (st == GCAP_SUCCESS) n->p.memcpy.flat = *p;
  if (st == GCAP_SUCCESS) gcap__graph_note_ranges(n->graph, n, true);
  gcap__unlock(n->graph->ctx);
  return st;
}

gcap_status gcap_node_set_memset_params(gcap_node *n, const gcap_memset_node_params *p) {
  GCAP_ENTER();
  gcap_status st = gcap__node_check_typed(n, GCAP_NODE_MEMSET, p);
  if (st != GCAP_SUCCESS) return st;
  gcap__lock(n->graph->ctx);
  st = check_memset_params(n->graph, p);
  if (st == GCAP_SUCCESS) n->p.memset = *p;
  if (st == GCAP_SUCCESS) gcap__graph_note_ranges(n->graph, n, true);
  gcap__unlock(n->graph->ctx);
  return st;
}

gcap_status gcap_node_set_host_params(gcap_node *n, const gcap_host_node_params *p) {
  GCAP_ENTER();
  gcap_status st = gcap__node_check_typed(n, GCAP_NODE_HOST, p);
  if (st == GCAP_SUCCESS) st = check_host_params(p);
  if (st != GCAP_SUCCESS) return st;
  gcap__lock(n->graph->ctx);
  n->p.host = *p;
  gcap__unlock(n->graph->ctx);
  return GCAP_SUCCESS;
}

gcap_status gcap_node_get_child_graph(const gcap_node *n, gcap_graph **child) {
  GCAP_ENTER();
  if (child) *child = NULL;
  gcap_status st = gcap__node_check_typed(n, GCAP_NODE_GRAPH, child);
  if (st == GCAP_ERROR_INVALID_VALUE && n->type == GCAP__NODE_NATIVE)
    st = gcap__fail(GCAP_ERROR_NOT_SUPPORTED, "node %p embeds a native CUDA graph, which is not a gcap graph",
                    (void *)n);
  if (st == GCAP_SUCCESS) *child = n->p.child;
  return st;
}

gcap_status gcap_node_get_event(const gcap_node *n, gcap_event **e) {
  GCAP_ENTER();
  if (e) *e = NULL;
  gcap_status st = gcap__check_node(n, "node");
  if (st != GCAP_SUCCESS) return st;
  if (!e) return gcap__fail(GCAP_ERROR_INVALID_VALUE, "e is NULL");
  if (n->type != GCAP_NODE_EVENT_RECORD && n->type != GCAP_NODE_EVENT_WAIT)
    return gcap__fail(GCAP_ERROR_INVALID_VALUE, "node %p is a %s node, not an event record or wait node",
                      (const void *)n, type_name(n->type));
  *e = n->p.event;
  return GCAP_SUCCESS;
}

gcap_status gcap_node_set_event(gcap_node *n, gcap_event *e) {
  GCAP_ENTER();
  gcap_status st = gcap__check_node(n, "node");
  if (st == GCAP_SUCCESS) st = gcap__check_event(e, "event");
  if (st == GCAP_SUCCESS) st = gcap__check_same_context(n->graph->ctx, e->ctx, "event");
  if (st != GCAP_SUCCESS) return st;
  if (n->type != GCAP_NODE_EVENT_RECORD && n->type != GCAP_NODE_EVENT_WAIT)
    return gcap__fail(GCAP_ERROR_INVALID_VALUE, "node %p is a %s node, not an event record or wait node",
                      (const void *)n, type_name(n->type));
  gcap__lock(e->ctx);
  gcap__event_retain(e);
  gcap__event_release(n->p.event);
  n->p.event = e;
  gcap__unlock(e->ctx);
  return GCAP_SUCCESS;
}

const char *gcap__node_type_name(gcap_node_type t) { return type_name(t); }

const char *gcap__article(gcap_node_type t) { return strchr("aeiou", type_name(t)[0]) ? "an" : "a"; }
