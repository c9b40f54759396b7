#include <stdatomic.h>
#include <string.h>

#include "capture.h"

gcap_status gcap__check_graph(const gcap_graph *g, const char *what) {
  if (!g) return gcap__fail(GCAP_ERROR_INVALID_HANDLE, "%s is NULL", what);
  if (!gcap__registry_has(g, GCAP__H_GRAPH))
    return gcap__fail(GCAP_ERROR_INVALID_HANDLE, "%s (graph %p) is not a live graph handle", what, (const void *)g);
  return gcap__refuse_faulted(g->ctx);
}

/* A destroyed node stays in its chunk (and DEAD) until its graph goes, so its address is not reused meanwhile. */
gcap_status gcap__check_node(const gcap_node *n, const char *what) { return gcap__check_node_near(NULL, n, what); }

gcap_status gcap__check_node_near(const struct gcap_graph *g, const gcap_node *n, const char *what) {
  if (!n) return gcap__fail(GCAP_ERROR_INVALID_HANDLE, "%s is NULL", what);
  if (!gcap__is_node_slot_near(g, n) || (n->magic != GCAP__NODE_LIVE && n->magic != GCAP__NODE_DEAD))
    return gcap__fail(GCAP_ERROR_INVALID_HANDLE, "%s (%p) is not a node of a live graph", what, (const void *)n);
  if (n->magic == GCAP__NODE_DEAD)
    return gcap__fail(GCAP_ERROR_INVALID_HANDLE, "%s (node %p) was destroyed", what, (const void *)n);
  return gcap__refuse_faulted(n->graph->ctx);
}

int gcap__node_vec_push(struct gcap__node_vec *v, struct gcap_node *n) {
  if (gcap__grow((void **)&v->items, &v->cap, v->count + 1, sizeof *v->items) != 0) return -1;
  v->items[v->count++] = n;
  return 0;
}

static int vec_push(struct gcap__node_vec *v, struct gcap_node *n) { return gcap__node_vec_push(v, n); }

bool gcap__node_vec_contains(const struct gcap__node_vec *v, const struct gcap_node *n) {
  for (size_t i = 0; i < v->count; i++)
    if (v->items[i] == n) return true;
  return false;
}

static bool vec_contains(const struct gcap__node_vec *v, const struct gcap_node *n) {
  return gcap__node_vec_contains(v, n);
}

int gcap__nlist_reserve(struct gcap_graph *g, struct gcap__node_list *l, size_t need) {
  if (need <= l->cap) return 0;
  if (need == 1) { /* cap 0: the one item lives in the node */
    l->cap = 1;
    return 0;
  }
  size_t cap = 2;
  while (cap < need) cap *= 2;
  if (cap > UINT32_MAX) return -1;
  struct gcap_node **grown = gcap__arena_alloc(&g->arena, cap * sizeof *grown);
  if (!grown) return -1;
  if (l->count) memcpy(grown, gcap__nlist_items(l), l->count * sizeof *grown);
  if (l->cap > 1) gcap__arena_give_back(&g->arena, l->u.many, l->cap * sizeof *grown);
  l->u.many = grown;
  l->cap = (uint32_t)cap;
  return 0;
}

bool gcap__nlist_contains(const struct gcap__node_list *l, const struct gcap_node *n) {
  struct gcap_node **items = gcap__nlist_items(l);
  for (uint32_t i = 0; i < l->count; i++)
    if (items[i] == n) return true;
  return false;
}

void gcap__nlist_remove(struct gcap__node_list *l, const struct gcap_node *n) {
  struct gcap_node **items = gcap__nlist_items(l);
  for (uint32_t i = 0; i < l->count; i++) {
    if (items[i] == n) {
      memmove(&items[i], &items[i + 1], (l->count - i - 1) * sizeof *items);
      l->count--;
      return;
    }
  }
}

void gcap__nlist_release(struct gcap_graph *g, struct gcap__node_list *l) {
  if (l->cap > 1) gcap__arena_give_back(&g->arena, l->u.many, l->cap * sizeof *l->u.many);
  memset(l, 0, sizeof *l);
}

int gcap__node_vec_union(struct gcap__node_vec *v, const struct gcap__node_vec *more) {
  if (gcap__grow((void **)&v->items, &v->cap, v->count + more->count, sizeof *v->items) != 0) return -1;
  for (size_t i = 0; i < more->count; i++)
    if (!vec_contains(v, more->items[i])) v->items[v->count++] = more->items[i];
  return 0;
}

void gcap__node_vec_free(struct gcap__node_vec *v) {
  gcap__free(v->items);
  v->items = NULL;
  v->count = v->cap = 0;
}

const struct gcap_graph *gcap__graph_top(const struct gcap_graph *g) {
  while (g->owner) g = g->owner->graph;
  return g;
}

bool gcap__graph_has_mem_nodes(const struct gcap_graph *g) { return g->mem_nodes > 0; }

static gcap_status refuse_mem_graph(const struct gcap_graph *g, const char *what) {
  return gcap__fail(GCAP_ERROR_NOT_SUPPORTED,
                    "graph %p holds graph allocations (MEM_ALLOC/MEM_FREE nodes): %s is not supported", (const void *)g,
                    what);
}

gcap_status gcap__graph_new(struct gcap_context *ctx, struct gcap_node *owner, struct gcap_graph **out) {
  static atomic_uint_fast64_t next_serial = 1;
  struct gcap_graph *g = gcap__calloc(1, sizeof *g);
  if (!g || gcap__registry_add(g, GCAP__H_GRAPH) != 0) {
    gcap__free(g);
    return gcap__fail(GCAP_ERROR_OUT_OF_MEMORY, "no memory for a graph");
  }
  g->ctx = ctx;
  g->owner = owner;
  g->serial = atomic_fetch_add(&next_serial, 1);
  g->ranges_known = true; /* no node yet */
  g->ranges_epoch = gcap__alloc_epoch();
  gcap__list_init(&g->link);
  if (!owner) gcap__list_push(&ctx->graphs, &g->link);
  *out = g;
  return GCAP_SUCCESS;
}

void gcap__graph_free(struct gcap_graph *g) {
  gcap__registry_remove(g);
  gcap__list_unlink(&g->link);
  for (size_t i = 0; i < g->nodes.count; i++) gcap__node_release_for_graph_free(g->nodes.items[i]);
  gcap__graph_free_chunks(g);
  gcap__arena_free_all(&g->arena);
  gcap__uo_refs_release(&g->user_objects);
  gcap__graph_release_conds(g);
  gcap__free(g->nodes.items);
  gcap__free(g->edges);
  gcap__free(g->recorded);
  gcap__free(g);
}

static void trim_array(void **items, size_t *cap, size_t count, size_t elem) {
  if (count == 0 || count == *cap) return;
  void *fit = gcap__realloc(*items, count * elem);
  if (!fit) return;
  *items = fit;
  *cap = count;
}

void gcap__graph_trim(struct gcap_graph *g) {
  trim_array((void **)&g->nodes.items, &g->nodes.cap, g->nodes.count, sizeof *g->nodes.items);
  trim_array((void **)&g->edges, &g->edge_cap, g->edge_count, sizeof *g->edges);
}

void gcap__graph_destroy_all(struct gcap_context *ctx) {
  while (ctx->graphs.next != &ctx->graphs) gcap__graph_free(GCAP__CONTAINER(ctx->graphs.next, struct gcap_graph, link));
}

gcap_status gcap_graph_create(gcap_context *ctx, gcap_graph **out) {
  GCAP_ENTER();
  if (out) *out = NULL;
  gcap_status st = gcap__check_context(ctx, "ctx");
  if (st != GCAP_SUCCESS) return st;
  if (!out) return gcap__fail(GCAP_ERROR_INVALID_VALUE, "out is NULL");
  gcap__lock(ctx);
  st = gcap__graph_new(ctx, NULL, out);
  gcap__unlock(ctx);
  return st;
}

void gcap_graph_destroy(gcap_graph *g) {
  GCAP_ENTER_RELEASE();
  if (!g || gcap__check_graph(g, "graph") != GCAP_SUCCESS) return;
  struct gcap_context *ctx = g->ctx;
  gcap__lock(ctx);
  if (g->owner)
    gcap__fail(GCAP_ERROR_ILLEGAL_STATE, "graph %p belongs to %s %s node; destroy that node instead", (void *)g,
               gcap__article(g->owner->type), gcap__node_type_name(g->owner->type));
  else if (g->capturing) gcap__capture_check_graph_edit(g, "destroying it");
  else gcap__graph_free(g);
  gcap__unlock(ctx);
}

/* ------------------------------------------------------------------- edges */

/* Grows every vector an edge needs first, so adding it cannot fail half-way. */
static int reserve_edge(struct gcap_graph *g, struct gcap_node *from, struct gcap_node *to) {
  if (gcap__grow((void **)&g->edges, &g->edge_cap, g->edge_count + 1, sizeof *g->edges) != 0) return -1;
  if (gcap__nlist_reserve(g, &from->dependents, from->dependents.count + 1) != 0) return -1;
  return gcap__nlist_reserve(g, &to->deps, to->deps.count + 1);
}

static int add_edge(struct gcap_graph *g, struct gcap_node *from, struct gcap_node *to) {
  if (reserve_edge(g, from, to) != 0) return -1;
  g->edges[g->edge_count++] = (struct gcap__edge){from, to};
  gcap__nlist_items(&from->dependents)[from->dependents.count++] = to;
  gcap__nlist_items(&to->deps)[to->deps.count++] = from;
  return 0;
}

/* Undoes the most recent add_edge. */
static void pop_edge(struct gcap_graph *g) {
  struct gcap__edge e = g->edges[--g->edge_count];
  e.from->dependents.count--;
  e.to->deps.count--;
}

static void remove_edge(struct gcap_graph *g, struct gcap_node *from, struct gcap_node *to) {
  gcap__nlist_remove(&from->dependents, to);
  gcap__nlist_remove(&to->deps, from);
  for (size_t i = 0; i < g->edge_count; i++) {
    if (g->edges[i].from == from && g->edges[i].to == to) {
      memmove(&g->edges[i], &g->edges[i + 1], (g->edge_count - i - 1) * sizeof *g->edges);
      g->edge_count--;
      return;
    }
  }
}

/* True when `target` can be reached from `start` along dependents (an edge target->start would close a cycle). */
static bool reaches(struct gcap_graph *g, struct gcap_node *start, struct gcap_node *target, int *oom) {
  size_t mark = ++g->visit_mark;
  struct gcap__node_vec stack = {0};
  bool found = false;
  if (vec_push(&stack, start) != 0) return *oom = 1, false;
  start->scratch = mark;
  while (stack.count && !found) {
    struct gcap_node *n = stack.items[--stack.count];
    if (n == target) found = true;
    for (size_t i = 0; i < n->dependents.count && !found; i++) {
      struct gcap_node *next = gcap__nlist_items(&n->dependents)[i];
      if (next->scratch == mark) continue;
      next->scratch = mark;
      if (vec_push(&stack, next) != 0) {
        *oom = 1;
        break;
      }
    }
  }
  gcap__free(stack.items);
  return found;
}

static gcap_status check_pair_handles(const struct gcap_graph *g, gcap_node *const *from, gcap_node *const *to,
                                      size_t n) {
  char what[48];
  for (size_t i = 0; i < n; i++) {
    snprintf(what, sizeof what, "from[%zu]", i);
    gcap_status st = gcap__check_node(from[i], what);
    if (st == GCAP_SUCCESS) st = gcap__check_same_context(g->ctx, from[i]->graph->ctx, what);
    snprintf(what, sizeof what, "to[%zu]", i);
    if (st == GCAP_SUCCESS) st = gcap__check_node(to[i], what);
    if (st == GCAP_SUCCESS) st = gcap__check_same_context(g->ctx, to[i]->graph->ctx, what);
    if (st != GCAP_SUCCESS) return st;
  }
  for (size_t i = 0; i < n; i++)
    if (from[i]->graph != g || to[i]->graph != g)
      return gcap__fail(GCAP_ERROR_INVALID_VALUE, "pair %zu names a node of another graph", i);
  return GCAP_SUCCESS;
}

static gcap_status check_pair_arrays(const gcap_graph *g, gcap_node *const *from, gcap_node *const *to, size_t n) {
  gcap_status st = gcap__check_graph(g, "graph");
  if (st != GCAP_SUCCESS || n == 0) return st;
  if (!from || !to) return gcap__fail(GCAP_ERROR_INVALID_VALUE, "%s is NULL with n = %zu", from ? "to" : "from", n);
  return GCAP_SUCCESS;
}

static gcap_status add_one_dependency(struct gcap_graph *g, struct gcap_node *from, struct gcap_node *to, size_t i) {
  if (from == to) return gcap__fail(GCAP_ERROR_INVALID_VALUE, "pair %zu is a self edge on node %p", i, (void *)from);
  if (gcap__nlist_contains(&from->dependents, to))
    return gcap__fail(GCAP_ERROR_INVALID_VALUE, "pair %zu: the edge %p -> %p already exists", i, (void *)from,
                      (void *)to);
  int oom = 0;
  bool cycle = reaches(g, to, from, &oom);
  if (oom || (!cycle && add_edge(g, from, to) != 0))
    return gcap__fail(GCAP_ERROR_OUT_OF_MEMORY, "no memory for the edge of pair %zu", i);
  if (cycle)
    return gcap__fail(GCAP_ERROR_INVALID_VALUE, "pair %zu: the edge %p -> %p would close a cycle", i, (void *)from,
                      (void *)to);
  return GCAP_SUCCESS;
}

gcap_status gcap__graph_add_edge(struct gcap_graph *g, struct gcap_node *from, struct gcap_node *to) {
  if (from == to)
    return gcap__fail(GCAP_ERROR_INVALID_VALUE, "the edge %zu -> %zu is a self edge", from->index, to->index);
  if (gcap__nlist_contains(&from->dependents, to))
    return gcap__fail(GCAP_ERROR_INVALID_VALUE, "the edge %zu -> %zu is there twice", from->index, to->index);
  int oom = 0;
  bool cycle = reaches(g, to, from, &oom);
  if (oom || (!cycle && add_edge(g, from, to) != 0))
    return gcap__fail(GCAP_ERROR_OUT_OF_MEMORY, "no memory for an edge");
  if (cycle)
    return gcap__fail(GCAP_ERROR_INVALID_VALUE, "the edge %zu -> %zu closes a cycle through node %zu", from->index,
                      to->index, from->index);
  return GCAP_SUCCESS;
}

gcap_status gcap_graph_add_dependencies(gcap_graph *g, gcap_node *const *from, gcap_node *const *to, size_t n) {
  GCAP_ENTER();
  gcap_status st = check_pair_arrays(g, from, to, n);
  if (st != GCAP_SUCCESS || n == 0) return st;
  gcap__lock(g->ctx);
  st = check_pair_handles(g, from, to, n);
  size_t added = 0;
  for (; st == GCAP_SUCCESS && added < n; added++) st = add_one_dependency(g, from[added], to[added], added);
  if (st != GCAP_SUCCESS)
    for (size_t i = added; i-- > 1;) pop_edge(g); /* the failed pair added nothing */
  gcap__unlock(g->ctx);
  return st;
}

static bool pair_repeats(gcap_node *const *from, gcap_node *const *to, size_t i) {
  for (size_t j = 0; j < i; j++)
    if (from[j] == from[i] && to[j] == to[i]) return true;
  return false;
}

gcap_status gcap_graph_remove_dependencies(gcap_graph *g, gcap_node *const *from, gcap_node *const *to, size_t n) {
  GCAP_ENTER();
  gcap_status st = check_pair_arrays(g, from, to, n);
  if (st != GCAP_SUCCESS || n == 0) return st;
  gcap__lock(g->ctx);
  st = check_pair_handles(g, from, to, n);
  if (st == GCAP_SUCCESS && gcap__graph_has_mem_nodes(g)) st = refuse_mem_graph(g, "removing edges");
  for (size_t i = 0; st == GCAP_SUCCESS && i < n; i++) {
    if (!gcap__nlist_contains(&from[i]->dependents, to[i]) || pair_repeats(from, to, i))
      st = gcap__fail(GCAP_ERROR_INVALID_VALUE, "pair %zu: there is no edge %p -> %p%s", i, (void *)from[i],
                      (void *)to[i], pair_repeats(from, to, i) ? " (it repeats an earlier pair)" : "");
  }
  for (size_t i = 0; st == GCAP_SUCCESS && i < n; i++) remove_edge(g, from[i], to[i]);
  gcap__unlock(g->ctx);
  return st;
}

gcap_status gcap_graph_destroy_node(gcap_node *n) {
  GCAP_ENTER_RELEASE();
  gcap_status st = gcap__check_node(n, "node");
  if (st != GCAP_SUCCESS) return st;
  struct gcap_graph *g = n->graph;
  gcap__lock(g->ctx);
  if ((st = gcap__capture_check_graph_edit(g, "destroying its nodes")) != GCAP_SUCCESS ||
      (gcap__graph_has_mem_nodes(g) && (st = refuse_mem_graph(g, "destroying nodes")) != GCAP_SUCCESS)) {
    gcap__unlock(g->ctx);
    return st;
  }
  while (n->deps.count) remove_edge(g, gcap__nlist_items(&n->deps)[0], n);
  while (n->dependents.count) remove_edge(g, n, gcap__nlist_items(&n->dependents)[0]);
  memmove(&g->nodes.items[n->index], &g->nodes.items[n->index + 1],
          (g->nodes.count - n->index - 1) * sizeof *g->nodes.items);
  g->nodes.count--;
  for (size_t i = n->index; i < g->nodes.count; i++) g->nodes.items[i]->index = i;
  g->child_graph_nodes -= n->type == GCAP_NODE_GRAPH; /* graphs with memory nodes refuse this */
  g->cond_nodes -= n->type == GCAP_NODE_CONDITIONAL;
  gcap__node_release_params(n);
  gcap__nlist_release(g, &n->deps);
  gcap__nlist_release(g, &n->dependents);
  n->magic = GCAP__NODE_DEAD; /* its slot stays until the graph goes */
  g->node_destroyed = true;
  g->nodes_destroyed++;
  gcap__unlock(g->ctx);
  return GCAP_SUCCESS;
}

void gcap__graph_note_ranges(struct gcap_graph *g, const struct gcap_node *n, bool checked) {
  if (n->type != GCAP_NODE_KERNEL && n->type != GCAP_NODE_MEMCPY && n->type != GCAP_NODE_MEMSET) return;
  uint64_t now = gcap__alloc_epoch();
  bool alone = g->nodes.count == 1;
  g->ranges_known = checked && (alone || (g->ranges_known && g->ranges_epoch == now));
  g->ranges_epoch = now;
}

/* -------------------------------------------------------------------- clone */

gcap_status gcap__graph_clone(const struct gcap_graph *g, struct gcap_node *owner, struct gcap_graph **out) {
  if (gcap__graph_has_mem_nodes(g)) return refuse_mem_graph(g, owner ? "use as a child graph" : "cloning");
  if (gcap__graph_has_conditionals(g))
    return gcap__fail(GCAP_ERROR_NOT_SUPPORTED, "graph %p holds conditional nodes or handles: %s is not supported",
                      (const void *)g, owner ? "use as a child graph" : "cloning");
  struct gcap_graph *copy = NULL;
  gcap_status st = gcap__graph_new(g->ctx, owner, &copy);
  if (st != GCAP_SUCCESS) return st;
  for (size_t i = 0; st == GCAP_SUCCESS && i < g->nodes.count; i++) {
    const struct gcap_node *src = g->nodes.items[i];
    struct gcap_node *n = gcap__node_alloc(copy, src->type);
    if (!n) st = gcap__fail(GCAP_ERROR_OUT_OF_MEMORY, "no memory to clone a node");
    if (st == GCAP_SUCCESS && (st = gcap__node_copy_params(n, src)) != GCAP_SUCCESS) gcap__node_unalloc(n);
    if (st == GCAP_SUCCESS && (st = gcap__node_append(copy, n, NULL, 0, false)) != GCAP_SUCCESS) {
      gcap__node_release_params(n);
      gcap__node_unalloc(n);
    }
  }
  /* Replaying edges in creation order recreates every node's dependency and dependent order. */
  for (size_t i = 0; st == GCAP_SUCCESS && i < g->edge_count; i++) {
    struct gcap_node *from = copy->nodes.items[g->edges[i].from->index];
    struct gcap_node *to = copy->nodes.items[g->edges[i].to->index];
    if (add_edge(copy, from, to) != 0) st = gcap__fail(GCAP_ERROR_OUT_OF_MEMORY, "no memory to clone an edge");
  }
  if (st == GCAP_SUCCESS && gcap__uo_refs_copy(&copy->user_objects, &g->user_objects) != 0)
    st = gcap__fail(GCAP_ERROR_OUT_OF_MEMORY, "no memory for the clone's user object references");
  if (st != GCAP_SUCCESS) {
    gcap__graph_free(copy);
    return st;
  }
  copy->ranges_known = g->ranges_known;
  copy->ranges_epoch = g->ranges_epoch;
  copy->cloned_from = g->serial;
  copy->cloned_count = g->nodes.count;
  copy->cloned_destroyed = g->nodes_destroyed;
  for (size_t i = 0; i < copy->nodes.count; i++) copy->nodes.items[i]->clone_of = (uint32_t)(i + 1);
  *out = copy;
  return GCAP_SUCCESS;
}

/* The node of `clone` made from `original` when its graph was cloned (rules: cudaGraphNodeFindInClone). */
static gcap_status find_in_clone(const struct gcap_graph *clone, const struct gcap_node *original, gcap_node **out) {
  const struct gcap_graph *from = original->graph;
  if (clone->cloned_from != from->serial)
    return gcap__fail(GCAP_ERROR_INVALID_VALUE, "graph %p was not cloned from the graph of original node %p",
                      (const void *)clone, (const void *)original);
  if (from->nodes_destroyed != clone->cloned_destroyed)
    return gcap__fail(
        GCAP_ERROR_INVALID_VALUE,
        "nodes of the original graph were destroyed since it was cloned: its nodes no longer pair with the "
        "clone's");
  if (original->index >= clone->cloned_count)
    return gcap__fail(GCAP_ERROR_INVALID_VALUE, "original node %p was added after the graph was cloned",
                      (const void *)original);
  uint32_t want = (uint32_t)(original->index + 1);
  for (size_t i = 0; i < clone->nodes.count; i++) {
    if (clone->nodes.items[i]->clone_of != want) continue;
    *out = clone->nodes.items[i];
    return GCAP_SUCCESS;
  }
  return gcap__fail(GCAP_ERROR_INVALID_VALUE, "the clone of original node %p was destroyed", (const void *)original);
}

gcap_status gcap_graph_node_find_in_clone(const gcap_graph *clone, const gcap_node *original, gcap_node **out) {
  GCAP_ENTER();
  if (out) *out = NULL;
  gcap_status st = gcap__check_graph(clone, "clone");
  if (st == GCAP_SUCCESS) st = gcap__check_node(original, "original");
  if (st == GCAP_SUCCESS) st = gcap__check_same_context(clone->ctx, original->graph->ctx, "original");
  if (st != GCAP_SUCCESS) return st;
  if (!out) return gcap__fail(GCAP_ERROR_INVALID_VALUE, "out is NULL");
  gcap__lock(clone->ctx);
  st = find_in_clone(clone, original, out);
  gcap__unlock(clone->ctx);
  return st;
}

gcap_status gcap_graph_clone(const gcap_graph *g, gcap_graph **out) {
  GCAP_ENTER();
  if (out) *out = NULL;
  gcap_status st = gcap__check_graph(g, "graph");
  if (st != GCAP_SUCCESS) return st;
  if (!out) return gcap__fail(GCAP_ERROR_INVALID_VALUE, "out is NULL");
  gcap__lock(g->ctx);
  st = gcap__graph_clone(g, NULL, out);
  gcap__unlock(g->ctx);
  return st;
}

/* ---------------------------------------------------------------- queries */

size_t gcap_graph_node_count(const gcap_graph *g) {
  GCAP_ENTER();
  if (gcap__check_graph(g, "graph") != GCAP_SUCCESS) return 0;
  gcap__lock(g->ctx);
  size_t n = g->nodes.count;
  gcap__unlock(g->ctx);
  return n;
}

size_t gcap_graph_edge_count(const gcap_graph *g) {
  GCAP_ENTER();
  if (gcap__check_graph(g, "graph") != GCAP_SUCCESS) return 0;
  gcap__lock(g->ctx);
  size_t n = g->edge_count;
  gcap__unlock(g->ctx);
  return n;
}

/* NULL array counts; a larger buffer is padded with NULL and *count set; a smaller one is filled
 * (rules.md#graph-enumerate). */
static void enumerate(struct gcap_node *const *items, size_t actual, gcap_node **out, size_t *count) {
  if (!out) {
    *count = actual;
    return;
  }
  size_t n = *count < actual ? *count : actual;
  if (n) memcpy(out, items, n * sizeof *out);
  if (*count > actual) {
    for (size_t i = actual; i < *count; i++) out[i] = NULL;
    *count = actual;
  }
}

gcap_status gcap_graph_get_nodes(const gcap_graph *g, gcap_node **nodes, size_t *count) {
  GCAP_ENTER();
  gcap_status st = gcap__check_graph(g, "graph");
  if (st != GCAP_SUCCESS) return st;
  if (!count) return gcap__fail(GCAP_ERROR_INVALID_VALUE, "count is NULL");
  gcap__lock(g->ctx);
  enumerate(g->nodes.items, g->nodes.count, nodes, count);
  gcap__unlock(g->ctx);
  return GCAP_SUCCESS;
}

gcap_status gcap_graph_get_root_nodes(const gcap_graph *g, gcap_node **nodes, size_t *count) {
  GCAP_ENTER();
  gcap_status st = gcap__check_graph(g, "graph");
  if (st != GCAP_SUCCESS) return st;
  if (!count) return gcap__fail(GCAP_ERROR_INVALID_VALUE, "count is NULL");
  gcap__lock(g->ctx);
  size_t roots = 0, room = nodes ? *count : 0;
  for (size_t i = 0; i < g->nodes.count; i++) {
    if (g->nodes.items[i]->deps.count) continue;
    if (roots < room) nodes[roots] = g->nodes.items[i];
    roots++;
  }
  if (!nodes || room > roots) {
    for (size_t i = roots; i < room; i++) nodes[i] = NULL;
    *count = roots;
  }
  gcap__unlock(g->ctx);
  return GCAP_SUCCESS;
}

gcap_status gcap_graph_get_edges(const gcap_graph *g, gcap_node **from, gcap_node **to, size_t *count) {
  GCAP_ENTER();
  gcap_status st = gcap__check_graph(g, "graph");
  if (st != GCAP_SUCCESS) return st;
  if (!count) return gcap__fail(GCAP_ERROR_INVALID_VALUE, "count is NULL");
  if (!from != !to)
    return gcap__fail(GCAP_ERROR_INVALID_VALUE, "%s is NULL but the other array is not", from ? "to" : "from");
  gcap__lock(g->ctx);
  size_t actual = g->edge_count;
  if (from) {
    size_t n = *count < actual ? *count : actual;
    for (size_t i = 0; i < n; i++) from[i] = g->edges[i].from, to[i] = g->edges[i].to;
    for (size_t i = actual; i < *count; i++) from[i] = to[i] = NULL;
  }
  if (!from || *count > actual) *count = actual;
  gcap__unlock(g->ctx);
  return GCAP_SUCCESS;
}

gcap_node_type gcap_node_get_type(const gcap_node *n) {
  GCAP_ENTER();
  if (gcap__check_node(n, "node") != GCAP_SUCCESS) return (gcap_node_type)-1;
  return gcap__node_public_type(n);
}

static gcap_status node_neighbours(const gcap_node *n, bool dependents, gcap_node **out, size_t *count) {
  gcap_status st = gcap__check_node(n, "node");
  if (st != GCAP_SUCCESS) return st;
  if (!count) return gcap__fail(GCAP_ERROR_INVALID_VALUE, "count is NULL");
  const struct gcap__node_list *v = dependents ? &n->dependents : &n->deps;
  gcap__lock(n->graph->ctx);
  enumerate(gcap__nlist_items(v), v->count, out, count);
  gcap__unlock(n->graph->ctx);
  return GCAP_SUCCESS;
}

gcap_status gcap_node_get_dependencies(const gcap_node *n, gcap_node **deps, size_t *count) {
  GCAP_ENTER();
  return node_neighbours(n, false, deps, count);
}

gcap_status gcap_node_get_dependents(const gcap_node *n, gcap_node **deps, size_t *count) {
  GCAP_ENTER();
  return node_neighbours(n, true, deps, count);
}
