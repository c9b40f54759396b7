#include <stdint.h>
/*
 * Changing what an executable does without instantiating again: per-node setters and enable
 * (rules.md#update-enable through rules.md#update-host) and whole-graph update
 * (rules.md#update-pairing through rules.md#update-scope). Only future launches see a change.
 */
#include <string.h>

#include "dispatch.h"
#include "capture.h"
#include "exec.h"
#include "stream_race.h"

static struct gcap_module *module_of(const struct gcap__kernel_info *info) {
  return GCAP__CONTAINER(info, struct gcap_kernel, info)->module;
}

/* The plan entry made from n, a node of the graph x was instantiated from (rules.md#update-setter). */
static bool made_from(const struct gcap__plan_node *pn, const gcap_node *n) {
  return pn->counted && pn->source == n && pn->source_id == n->id;
}

static gcap_status find_entry(struct gcap_exec *x, const gcap_node *n, struct gcap__plan_node **out) {
  /* Where the node's last instantiation put it: the same place in every plan of its graph. */
  if (n->plan_index < x->plan.count && made_from(&x->plan.nodes[n->plan_index], n))
    return *out = &x->plan.nodes[n->plan_index], GCAP_SUCCESS;
  for (size_t i = 0; i < x->plan.count; i++) {
    struct gcap__plan_node *pn = &x->plan.nodes[i];
    if (made_from(pn, n)) return *out = pn, GCAP_SUCCESS;
  }
  return gcap__fail(GCAP_ERROR_INVALID_VALUE,
                    "node %p is not in executable %p (added after instantiation, or of another graph)", (const void *)n,
                    (void *)x);
}

/* Both handles live, and n of x's context. */
static gcap_status check_exec_node(const gcap_exec *x, const gcap_node *n) {
  gcap_status st = gcap__check_exec(x, "exec");
  if (st == GCAP_SUCCESS) st = gcap__check_node(n, "node");
  if (st == GCAP_SUCCESS) st = gcap__check_same_context(x->ctx, n->graph->ctx, "node");
  return st;
}

/*
 * Handles (x, n and, for kernel params, p->kernel), then params, then the node's membership
 * and type; locks ctx on success.
 */
static gcap_status begin_set(gcap_exec *x, gcap_node *n, const void *p, gcap_node_type want,
                             struct gcap__plan_node **pn) {
  gcap_status st = check_exec_node(x, n);
  if (st == GCAP_SUCCESS) st = gcap__refuse_in_host_callback();
  if (st == GCAP_SUCCESS && p && want == GCAP_NODE_KERNEL) {
    const struct gcap_kernel *k = ((const gcap_kernel_node_params *)p)->kernel;
    st = gcap__check_kernel(k, "params->kernel");
    if (st == GCAP_SUCCESS) st = gcap__check_same_context(x->ctx, k->module->ctx, "params->kernel");
  }
  if (st != GCAP_SUCCESS) return st;
  if (!p) return gcap__fail(GCAP_ERROR_INVALID_VALUE, "params is NULL");
  gcap__lock(x->ctx);
  st = gcap__exec_wait_other_launch(x); /* before the entry is found: the plan may change meanwhile */
  if (st == GCAP_SUCCESS) st = find_entry(x, n, pn);
  if (st == GCAP_SUCCESS && (*pn)->type != want)
    st = gcap__fail(GCAP_ERROR_INVALID_VALUE, "node %p is %s %s node, not %s %s node", (void *)n,
                    gcap__article((*pn)->type), gcap__node_type_name((*pn)->type), gcap__article(want),
                    gcap__node_type_name(want));
  if (st == GCAP_SUCCESS && x->running)
    st = gcap__fail(GCAP_ERROR_ILLEGAL_STATE, "executable %p is running; change it between launches", (void *)x);
  if (st != GCAP_SUCCESS) gcap__unlock(x->ctx);
  return st;
}

static bool has_shaped_copy(const struct gcap__plan_node *nodes, size_t count) {
  for (size_t i = 0; i < count; i++)
    if (nodes[i].type == GCAP_NODE_MEMCPY && nodes[i].u.copy.shape) return true;
  return false;
}

/*
 * A driver sets a copy with rows only through a whole-graph update (CUDA's executable copy
 * setter takes 1-D copies): entries [index, index + count) with such a copy, old or new, reach the
 * backend as one update of the whole plan with their parameters changed, so that no entry's
 * update undoes another's.
 */
static gcap_status offer_whole(struct gcap_exec *x, size_t index, const struct gcap__plan_node *entries, size_t count) {
  struct gcap__plan_node *nodes = gcap__malloc(x->plan.count * sizeof *nodes);
  if (!nodes) return gcap__fail(GCAP_ERROR_OUT_OF_MEMORY, "no memory to update a copy with rows");
  memcpy(nodes, x->plan.nodes, x->plan.count * sizeof *nodes);
  for (size_t j = 0; j < count; j++) /* the parameters only: a child's deps and depth are its own */
    nodes[index + j].u = entries[j].u;
  struct gcap__plan merged = x->plan;
  merged.nodes = nodes;
  struct gcap__update_refusal refusal = {0, SIZE_MAX, SIZE_MAX};
  gcap_status st = gcap__backend_exec_update(x->ctx, x->impl, &x->plan, &merged, &refusal);
  gcap__free(nodes);
  return st;
}

/* The backend sees the new values of entry pn first: a refusal there leaves everything as it was. */
static gcap_status offer(struct gcap_exec *x, const struct gcap__plan_node *pn, const struct gcap__plan_node *fresh) {
  gcap__sr_exec_changed(x);
  gcap_status st = gcap__backend_exec_before_change(x->ctx, x->impl);
  if (st != GCAP_SUCCESS) return st;
  size_t index = (size_t)(pn - x->plan.nodes);
  if (fresh->disabled == pn->disabled && (has_shaped_copy(fresh, 1) || has_shaped_copy(pn, 1)))
    return offer_whole(x, index, fresh, 1);
  return gcap__backend_exec_set_entry(x->ctx, x->impl, &x->plan, index, fresh);
}

gcap_status gcap_exec_kernel_node_set_params(gcap_exec *x, gcap_node *n, const gcap_kernel_node_params *p) {
  GCAP_ENTER();
  struct gcap__plan_node *pn = NULL;
  gcap_status st = begin_set(x, n, p, GCAP_NODE_KERNEL, &pn);
  if (st != GCAP_SUCCESS) return st;
  st = gcap__check_launch(p->kernel, p->grid, p->block, p->shared_mem_bytes, p->args);
  if (st == GCAP_SUCCESS && pn->u.kernel.cooperative)
    st = gcap__check_cooperative(p->kernel, p->grid, p->block, p->shared_mem_bytes);
  if (st == GCAP_SUCCESS) st = gcap__check_kernel_pointers(x->ctx, p->kernel, p->args);
  void **args = NULL;
  if (st == GCAP_SUCCESS) st = gcap__kernel_args_copy(p->kernel, p->args, &args);
  struct gcap__plan_node fresh = *pn;
  fresh.u.kernel =
      (struct gcap__launch){&p->kernel->info, p->grid, p->block, p->shared_mem_bytes, pn->u.kernel.priority, args};
  fresh.u.kernel.cooperative = pn->u.kernel.cooperative; /* an attribute: new parameters keep it */
  if (st == GCAP_SUCCESS && (st = offer(x, pn, &fresh)) != GCAP_SUCCESS) gcap__free(args);
  if (st == GCAP_SUCCESS) {
    gcap__module_retain(p->kernel->module);
    gcap__module_release(module_of(pn->u.kernel.kernel));
    gcap__plan_free_owned(&x->plan, pn->u.kernel.args);
    pn->u.kernel = fresh.u.kernel;
  }
  gcap__unlock(x->ctx);
  return st;
}

/* A copy entry's shape of its own (NULL stays NULL). */
static gcap_status own_shape(struct gcap__plan_node *b) {
  if (!b->u.copy.shape) return GCAP_SUCCESS;
  struct gcap__copy_shape *shape = gcap__malloc(sizeof *shape);
  if (!shape) return gcap__fail(GCAP_ERROR_OUT_OF_MEMORY, "no memory for the copy's shape");
  *shape = *b->u.copy.shape;
  b->u.copy.shape = shape; /* gcap__plan_free_owned frees it, being outside the block */
  return GCAP_SUCCESS;
}

/* The backend takes c (its shape a copy of the caller's); then the entry does. */
static gcap_status offer_copy(struct gcap_exec *x, struct gcap__plan_node *pn, const struct gcap__copy *c) {
  struct gcap__plan_node fresh = *pn;
  fresh.u.copy = *c;
  gcap_status st = own_shape(&fresh);
  if (st != GCAP_SUCCESS) return st;
  if ((st = offer(x, pn, &fresh)) != GCAP_SUCCESS) {
    gcap__free((void *)fresh.u.copy.shape);
    return st;
  }
  gcap__plan_free_owned(&x->plan, pn->u.copy.shape);
  pn->u.copy = fresh.u.copy;
  return GCAP_SUCCESS;
}

/* A copy's kind stays, and so does the direction its operands give (rules.md#update-memcpy). */
static gcap_status check_same_direction(const struct gcap__plan_node *pn, struct gcap_exec *x, struct gcap__copy *c) {
  if (c->kind != pn->u.copy.kind) /* any change of kind, even to or from DEFAULT */
    return gcap__fail(GCAP_ERROR_INVALID_VALUE, "kind %d differs from the node's kind %d", (int)c->kind,
                      (int)pn->u.copy.kind);
  gcap_status st = gcap__check_copy(x->ctx, c, false);
  if (st == GCAP_SUCCESS && c->resolved != pn->u.copy.resolved)
    st = gcap__fail(GCAP_ERROR_INVALID_VALUE, "the new operands change the copy's direction");
  return st;
}

gcap_status gcap_exec_memcpy_node_set_params(gcap_exec *x, gcap_node *n, const gcap_memcpy_node_params *p) {
  GCAP_ENTER();
  struct gcap__plan_node *pn = NULL;
  gcap_status st = begin_set(x, n, p, GCAP_NODE_MEMCPY, &pn);
  if (st != GCAP_SUCCESS) return st;
  struct gcap__copy c = gcap__copy_of(p);
  st = check_same_direction(pn, x, &c);
  if (st == GCAP_SUCCESS) st = offer_copy(x, pn, &c);
  gcap__unlock(x->ctx);
  return st;
}

gcap_status gcap_exec_memcpy_3d_node_set_params(gcap_exec *x, gcap_node *n, const gcap_memcpy_3d_params *p) {
  GCAP_ENTER();
  struct gcap__plan_node *pn = NULL;
  gcap_status st = begin_set(x, n, p, GCAP_NODE_MEMCPY, &pn);
  if (st != GCAP_SUCCESS) return st;
  struct gcap__copy c;
  struct gcap__copy_shape shape;
  st = gcap__copy_from_3d(p, &c, &shape);
  if (st == GCAP_SUCCESS) st = check_same_direction(pn, x, &c);
  if (st == GCAP_SUCCESS) st = offer_copy(x, pn, &c);
  gcap__unlock(x->ctx);
  return st;
}

/* The event of a record or wait node; the executable holds a reference to it from then on. */
static gcap_status set_event(gcap_exec *x, gcap_node *n, gcap_event *e, gcap_node_type want) {
  gcap_status st = gcap__check_exec(x, "exec");
  if (st == GCAP_SUCCESS) st = gcap__check_event(e, "event");
  if (st == GCAP_SUCCESS) st = gcap__check_same_context(x->ctx, e->ctx, "event");
  if (st != GCAP_SUCCESS) return st;
  struct gcap__plan_node *pn = NULL;
  st = begin_set(x, n, e, want, &pn);
  if (st != GCAP_SUCCESS) return st;
  struct gcap__plan_node fresh = *pn;
  fresh.u.event.impl = e->impl, fresh.u.event.handle = e;
  st = offer(x, pn, &fresh);
  if (st == GCAP_SUCCESS) {
    gcap__event_retain(e);
    gcap__event_release(pn->u.event.handle);
    pn->u.event = fresh.u.event;
  }
  gcap__unlock(x->ctx);
  return st;
}

gcap_status gcap_exec_event_record_node_set_event(gcap_exec *x, gcap_node *n, gcap_event *e) {
  GCAP_ENTER();
  return set_event(x, n, e, GCAP_NODE_EVENT_RECORD);
}

gcap_status gcap_exec_event_wait_node_set_event(gcap_exec *x, gcap_node *n, gcap_event *e) {
  GCAP_ENTER();
  return set_event(x, n, e, GCAP_NODE_EVENT_WAIT);
}

/* A 2-D fill keeps its shape; a 1-D fill stays 1-D but may change width and element size
 * (rules.md#update-memset, rules.md#update-allowed). */
static bool fill_shape_ok(const struct gcap__fill *a, const struct gcap__fill *b) {
  if (a->height > 1)
    return a->element_size == b->element_size && a->width == b->width && a->height == b->height && a->pitch == b->pitch;
  return b->height == 1;
}

static gcap_status check_fill_shape(const struct gcap__fill *old, const struct gcap__fill *f) {
  if (fill_shape_ok(old, f)) return GCAP_SUCCESS;
  if (old->height > 1) return gcap__fail(GCAP_ERROR_INVALID_VALUE, "a 2-D memset node may change only dst and value");
  return gcap__fail(GCAP_ERROR_INVALID_VALUE, "height %zu: a 1-D memset node cannot become 2-D", f->height);
}

gcap_status gcap_exec_memset_node_set_params(gcap_exec *x, gcap_node *n, const gcap_memset_node_params *p) {
  GCAP_ENTER();
  struct gcap__plan_node *pn = NULL;
  gcap_status st = begin_set(x, n, p, GCAP_NODE_MEMSET, &pn);
  if (st != GCAP_SUCCESS) return st;
  struct gcap__fill f = gcap__fill_of(p);
  st = gcap__check_fill(x->ctx, &f, false);
  if (st == GCAP_SUCCESS) st = check_fill_shape(&pn->u.fill, &f);
  struct gcap__plan_node fresh = *pn;
  fresh.u.fill = f;
  if (st == GCAP_SUCCESS) st = offer(x, pn, &fresh);
  if (st == GCAP_SUCCESS) pn->u.fill = f;
  gcap__unlock(x->ctx);
  return st;
}

gcap_status gcap_exec_host_node_set_params(gcap_exec *x, gcap_node *n, const gcap_host_node_params *p) {
  GCAP_ENTER();
  struct gcap__plan_node *pn = NULL;
  gcap_status st = begin_set(x, n, p, GCAP_NODE_HOST, &pn);
  if (st != GCAP_SUCCESS) return st;
  struct gcap__plan_node fresh = *pn;
  fresh.u.host.fn = p->fn, fresh.u.host.user_data = p->user_data;
  if (!p->fn) st = gcap__fail(GCAP_ERROR_INVALID_VALUE, "params->fn is NULL");
  if (st == GCAP_SUCCESS) st = offer(x, pn, &fresh);
  if (st == GCAP_SUCCESS) pn->u.host = fresh.u.host;
  gcap__unlock(x->ctx);
  return st;
}

static bool can_be_disabled(gcap_node_type type) {
  return type == GCAP_NODE_KERNEL || type == GCAP_NODE_MEMCPY || type == GCAP_NODE_MEMSET;
}

static gcap_status refuse_disabling(const gcap_node *n, gcap_node_type type) {
  return gcap__fail(GCAP_ERROR_INVALID_VALUE,
                    "node %p is a %s node: only kernel, memcpy and memset nodes can be disabled", (const void *)n,
                    gcap__node_type_name(type));
}

gcap_status gcap_exec_node_get_enabled(gcap_exec *x, gcap_node *n, bool *enabled) {
  GCAP_ENTER();
  struct gcap__plan_node *pn = NULL;
  gcap_status st = check_exec_node(x, n);
  if (st != GCAP_SUCCESS) return st;
  if (!enabled) return gcap__fail(GCAP_ERROR_INVALID_VALUE, "enabled is NULL");
  gcap__lock(x->ctx);
  st = find_entry(x, n, &pn);
  if (st == GCAP_SUCCESS && !can_be_disabled(pn->type)) st = refuse_disabling(n, pn->type);
  if (st == GCAP_SUCCESS) *enabled = !pn->disabled;
  gcap__unlock(x->ctx);
  return st;
}

gcap_status gcap_exec_get_flags(const gcap_exec *x, unsigned *flags) {
  GCAP_ENTER();
  gcap_status st = gcap__check_exec(x, "exec");
  if (st != GCAP_SUCCESS) return st;
  if (!flags) return gcap__fail(GCAP_ERROR_INVALID_VALUE, "flags is NULL");
  *flags = x->flags; /* set at instantiation, never changed */
  return GCAP_SUCCESS;
}

gcap_status gcap_exec_node_set_enabled(gcap_exec *x, gcap_node *n, bool enabled) {
  GCAP_ENTER();
  struct gcap__plan_node *pn = NULL;
  gcap_status st = check_exec_node(x, n);
  if (st == GCAP_SUCCESS) st = gcap__refuse_in_host_callback();
  if (st != GCAP_SUCCESS) return st;
  gcap__lock(x->ctx);
  st = gcap__exec_wait_other_launch(x);
  if (st == GCAP_SUCCESS) st = find_entry(x, n, &pn);
  if (st == GCAP_SUCCESS && x->running)
    st = gcap__fail(GCAP_ERROR_ILLEGAL_STATE, "executable %p is running; change it between launches", (void *)x);
  if (st == GCAP_SUCCESS && !can_be_disabled(pn->type)) st = refuse_disabling(n, pn->type);
  struct gcap__plan_node fresh = st == GCAP_SUCCESS ? *pn : (struct gcap__plan_node){0};
  fresh.disabled = !enabled;
  if (st == GCAP_SUCCESS && pn->disabled != fresh.disabled) st = offer(x, pn, &fresh);
  if (st == GCAP_SUCCESS) pn->disabled = !enabled;
  gcap__unlock(x->ctx);
  return st;
}

/* ------------------------------------------------------------ whole graph */

/* The driver refused what the core allowed: its result, and the nodes it named, mapped back to gcap's. */
static void driver_refused(gcap_exec_update_info *info, const struct gcap__update_refusal *r,
                           const struct gcap__plan *current, const struct gcap__plan *fresh) {
  info->result = r->result != GCAP_EXEC_UPDATE_SUCCESS ? (gcap_exec_update_result)r->result : GCAP_EXEC_UPDATE_ERROR;
  info->error_node = r->entry < fresh->count ? (gcap_node *)fresh->nodes[r->entry].source : NULL;
  info->error_from_node = r->from_entry < fresh->count ? (gcap_node *)fresh->nodes[r->from_entry].source : NULL;
  (void)current;
}

static gcap_status refuse(gcap_exec_update_info *info, gcap_exec_update_result why, const struct gcap__plan_node *at,
                          const struct gcap__plan_node *from, const char *what) {
  info->result = why;
  info->error_node = at ? (gcap_node *)at->source : NULL;
  info->error_from_node = from ? (gcap_node *)from->source : NULL;
  if (!at) return gcap__fail(GCAP_ERROR_GRAPH_EXEC_UPDATE_FAILURE, "%s; the executable is unchanged", what);
  return gcap__fail(GCAP_ERROR_GRAPH_EXEC_UPDATE_FAILURE,
                    "%s (%s node %p of the new graph); the executable is unchanged", what,
                    gcap__node_type_name(at->source->type), (const void *)at->source);
}

/* The top-level entries of a plan by creation index, the order update pairs nodes in (rules.md#update-pairing). */
static struct gcap__plan_node **top_level(const struct gcap__plan *p, size_t *count) {
  size_t n = 0;
  for (size_t i = 0; i < p->count; i++) n += p->nodes[i].depth == 0 && p->nodes[i].counted;
  struct gcap__plan_node **top = gcap__calloc(n, sizeof *top);
  if (!top) return NULL;
  for (size_t i = 0; i < p->count; i++)
    if (p->nodes[i].depth == 0 && p->nodes[i].counted && p->nodes[i].source_index < n)
      top[p->nodes[i].source_index] = &p->nodes[i];
  *count = n;
  return top;
}

static const struct gcap__plan_node *dep_of(const struct gcap__plan *p, const struct gcap__plan_node *pn, size_t d) {
  return &p->nodes[p->deps[pn->first_dep + d]];
}

/* Top level in creation order; a dependency is named by the creation index of the node it comes from. */
static gcap_status compare_top_level(const struct gcap__plan *old, const struct gcap__plan *fresh,
                                     struct gcap__plan_node **a_top, struct gcap__plan_node **b_top, size_t n,
                                     gcap_exec_update_info *info) {
  for (size_t i = 0; i < n; i++) {
    const struct gcap__plan_node *a = a_top[i], *b = b_top[i];
    if (a->num_deps != b->num_deps)
      return refuse(info, GCAP_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED, b, NULL, "a node has a different dependency count");
    for (size_t d = 0; d < a->num_deps; d++)
      if (dep_of(old, a, d)->source_index != dep_of(fresh, b, d)->source_index)
        return refuse(info, GCAP_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED, b, dep_of(fresh, b, d), "a dependency differs");
  }
  return GCAP_SUCCESS;
}

/* The topology must match exactly, dependency order included, before types are compared
 * (rules.md#update-pairing, rules.md#update-result). */
static gcap_status compare_topology(const struct gcap__plan *old, const struct gcap__plan *fresh,
                                    gcap_exec_update_info *info) {
  size_t na = 0, nb = 0;
  struct gcap__plan_node **a_top = top_level(old, &na), **b_top = top_level(fresh, &nb);
  gcap_status st = GCAP_SUCCESS;
  if (!a_top || !b_top) st = gcap__fail(GCAP_ERROR_OUT_OF_MEMORY, "no memory to pair the graphs");
  else if (na != nb || old->counted != fresh->counted || old->count != fresh->count)
    st = refuse(info, GCAP_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED, NULL, NULL, "the graphs have different node counts");
  if (st == GCAP_SUCCESS) st = compare_top_level(old, fresh, a_top, b_top, na, info);
  for (size_t i = 0; st == GCAP_SUCCESS && i < na; i++)
    if (a_top[i]->type != b_top[i]->type)
      st = refuse(info, GCAP_EXEC_UPDATE_ERROR_NODE_TYPE_CHANGED, b_top[i], NULL, "a node changed type");
  gcap__free(a_top);
  gcap__free(b_top);
  /* Same top level: child graphs' contents, in the (now identical) plan order. */
  for (size_t i = 0; st == GCAP_SUCCESS && i < old->count; i++) {
    const struct gcap__plan_node *a = &old->nodes[i], *b = &fresh->nodes[i];
    if (a->num_deps != b->num_deps || a->counted != b->counted || a->depth != b->depth)
      return refuse(info, GCAP_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED, b, NULL, "a child graph's topology differs");
    for (size_t d = 0; d < a->num_deps; d++)
      if (old->deps[a->first_dep + d] != fresh->deps[b->first_dep + d])
        return refuse(info, GCAP_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED, b, dep_of(fresh, b, d),
                      "a dependency inside a child graph differs");
  }
  return st;
}

/* What each node type may change (rules.md#update-allowed), over `count` paired entries. */
static gcap_status compare_entries(const struct gcap__plan_node *old, const struct gcap__plan_node *fresh, size_t count,
                                   unsigned flags, gcap_exec_update_info *info) {
  for (size_t i = 0; i < count; i++)
    if (old[i].type != fresh[i].type)
      return refuse(info, GCAP_EXEC_UPDATE_ERROR_NODE_TYPE_CHANGED, &fresh[i], NULL, "a node changed type");
  for (size_t i = 0; i < count; i++) {
    const struct gcap__plan_node *a = &old[i], *b = &fresh[i];
    if (a->type == GCAP_NODE_MEMCPY && (a->u.copy.kind != b->u.copy.kind || a->u.copy.resolved != b->u.copy.resolved))
      return refuse(info, GCAP_EXEC_UPDATE_ERROR_PARAMETERS_CHANGED, b, NULL, "a copy changed its direction or kind");
    if (a->type == GCAP_NODE_MEMSET && !fill_shape_ok(&a->u.fill, &b->u.fill))
      return refuse(info, GCAP_EXEC_UPDATE_ERROR_PARAMETERS_CHANGED, b, NULL, "a memset node changed its shape");
    if (a->type == GCAP_NODE_CONDITIONAL)
      return refuse(info, GCAP_EXEC_UPDATE_ERROR_NOT_SUPPORTED, b, NULL,
                    "executables with conditional nodes cannot be updated in this version of gcap");
    if ((a->type == GCAP_NODE_MEM_ALLOC || a->type == GCAP_NODE_MEM_FREE) && a->u.mem != b->u.mem)
      return refuse(info, GCAP_EXEC_UPDATE_ERROR_NOT_SUPPORTED, b, NULL, "allocation and free nodes cannot be updated");
    if (a->type == GCAP_NODE_KERNEL && (flags & GCAP_INSTANTIATE_USE_NODE_PRIORITY) &&
        a->u.kernel.priority != b->u.kernel.priority)
      return refuse(
          info, GCAP_EXEC_UPDATE_ERROR_ATTRIBUTES_CHANGED, b, NULL,
          "a kernel's priority changed in an executable instantiated with GCAP_INSTANTIATE_USE_NODE_PRIORITY");
  }
  return GCAP_SUCCESS;
}

/*
 * Entry a takes b's parameters, keeping which source node it names, whether it is enabled and
 * where it stands in the plan; b takes a's old values, for its plan to release.
 */
static void take_entry(struct gcap__plan_node *a, struct gcap__plan_node *b) {
  struct gcap__plan_node kept = *a;
  *a = *b;
  a->source = kept.source, a->source_id = kept.source_id, a->disabled = kept.disabled;
  a->first_dep = kept.first_dep, a->num_deps = kept.num_deps, a->depth = kept.depth;
  *b = kept;
}

/*
 * The common case without building a second plan: a graph without child graphs whose kernel
 * nodes keep their kernels. Entries pair with g's nodes by creation index; *done is false when
 * the general path must decide.
 */
static gcap_status update_in_place(struct gcap_exec *x, const struct gcap_graph *g, gcap_exec_update_info *info,
                                   bool *done) {
  struct gcap__plan *p = &x->plan;
  *done = false;
  if (p->count != g->nodes.count) return GCAP_SUCCESS;
  bool trusted = g->ranges_known && g->ranges_epoch == gcap__alloc_epoch(); /* checked since the last free */
  for (size_t i = 0; i < p->count; i++) {
    const struct gcap__plan_node *pn = &p->nodes[i];
    const struct gcap_node *n = g->nodes.items[pn->source_index];
    if (pn->type == GCAP_NODE_GRAPH || pn->type == GCAP_NODE_CONDITIONAL || n->deps.count != pn->num_deps ||
        n->type != pn->type)
      return GCAP_SUCCESS;
    for (size_t d = 0; d < pn->num_deps; d++)
      if (gcap__nlist_items(&n->deps)[d]->index != p->nodes[p->deps[pn->first_dep + d]].source_index)
        return GCAP_SUCCESS;
    if (n->type == GCAP_NODE_KERNEL && &n->p.kernel.kernel->info != pn->u.kernel.kernel) return GCAP_SUCCESS;
    if (n->type == GCAP_NODE_KERNEL && n->p.kernel.priority != pn->u.kernel.priority) return GCAP_SUCCESS;
    if (n->type == GCAP_NODE_KERNEL && n->p.kernel.cooperative != pn->u.kernel.cooperative) return GCAP_SUCCESS;
    if (n->type == GCAP_NODE_MEMCPY && (n->p.memcpy.p3 || pn->u.copy.shape))
      return GCAP_SUCCESS; /* shapes: a plan's own */
    if ((n->type == GCAP_NODE_MEM_ALLOC || n->type == GCAP_NODE_MEM_FREE) && n->p.mem != pn->u.mem) return GCAP_SUCCESS;
    gcap_status st = GCAP_SUCCESS;
    struct gcap__copy copy; /* the new values, checked (a whole plan entry would be a large copy per node) */
    struct gcap__fill fill;
    if (n->type == GCAP_NODE_MEMCPY) {
      copy = gcap__copy_of(&n->p.memcpy.flat);
      if (!trusted || copy.kind == GCAP_MEMCPY_DEFAULT || copy.bytes == 0) st = gcap__check_copy(x->ctx, &copy, false);
    } else if (n->type == GCAP_NODE_MEMSET) {
      fill = gcap__fill_of(&n->p.memset);
      if (!trusted || fill.width == 0 || fill.height == 0) st = gcap__check_fill(x->ctx, &fill, false);
    } else if (n->type == GCAP_NODE_KERNEL && !trusted) {
      st = gcap__check_kernel_pointers(x->ctx, n->p.kernel.kernel, n->p.kernel.args);
    }
    if (st == GCAP_SUCCESS && n->type == GCAP_NODE_KERNEL && n->p.kernel.cooperative) {
      const struct gcap__kernel_params *k = &n->p.kernel;
      st = gcap__check_cooperative(k->kernel, k->grid, k->block, k->shared_mem_bytes);
    }
    if (st != GCAP_SUCCESS) return GCAP_SUCCESS; /* the general path reports it */
    if (n->type == GCAP_NODE_MEMCPY && (copy.kind != pn->u.copy.kind || copy.resolved != pn->u.copy.resolved))
      return GCAP_SUCCESS;
    if (n->type == GCAP_NODE_MEMSET && !fill_shape_ok(&pn->u.fill, &fill)) return GCAP_SUCCESS;
  }
  /* Every check passed: take the new values; nothing below can fail. */
  for (size_t i = 0; i < p->count; i++) {
    struct gcap__plan_node *pn = &p->nodes[i];
    const struct gcap_node *n = g->nodes.items[pn->source_index];
    switch (n->type) {
    case GCAP_NODE_KERNEL: {
      const struct gcap__kernel_params *k = &n->p.kernel;
      if (k->kernel->info.num_params) { /* the same kernel: both copies lay the values out alike */
        size_t first = k->kernel->param_offsets[0];
        memcpy((unsigned char *)pn->u.kernel.args[0] - first, (const unsigned char *)k->args[0] - first,
               k->kernel->args_bytes);
      }
      pn->u.kernel.grid = k->grid, pn->u.kernel.block = k->block, pn->u.kernel.shared_mem_bytes = k->shared_mem_bytes;
      break;
    }
    case GCAP_NODE_MEMCPY:
      pn->u.copy.dst = n->p.memcpy.flat.dst, pn->u.copy.src = n->p.memcpy.flat.src,
      pn->u.copy.bytes = n->p.memcpy.flat.bytes;
      break;
    case GCAP_NODE_MEMSET: pn->u.fill = gcap__fill_of(&n->p.memset); break;
    case GCAP_NODE_HOST: pn->u.host.fn = n->p.host.fn, pn->u.host.user_data = n->p.host.user_data; break;
    case GCAP_NODE_EVENT_RECORD:
    case GCAP_NODE_EVENT_WAIT:
      gcap__event_retain(n->p.event);
      gcap__event_release(pn->u.event.handle);
      pn->u.event.handle = n->p.event, pn->u.event.impl = n->p.event->impl;
      break;
    default: break;
    }
  }
  x->checked_epoch = gcap__alloc_epoch();
  *info = (gcap_exec_update_info){GCAP_EXEC_UPDATE_SUCCESS, NULL, NULL};
  *done = true;
  return GCAP_SUCCESS;
}

static bool lost_a_node(const struct gcap_graph *g) {
  if (g->node_destroyed) return true;
  for (size_t i = 0; g->child_graph_nodes && i < g->nodes.count; i++)
    if (g->nodes.items[i]->type == GCAP_NODE_GRAPH && lost_a_node(g->nodes.items[i]->p.child)) return true;
  return false;
}

/*
 * CUDA's driver refuses a source graph any of whose nodes was destroyed, whatever it looks like
 * now: as a changed topology when the node counts differ (what NVIDIA's driver reports, as in
 * hip-tests' CountDiffer_2), else as not supported.
 */
static gcap_status check_no_destroyed_nodes(const struct gcap_exec *x, const struct gcap_graph *g,
                                            gcap_exec_update_info *info) {
  if (!lost_a_node(g)) return GCAP_SUCCESS;
  size_t top = 0;
  for (size_t i = 0; i < x->plan.count; i++) top += x->plan.nodes[i].depth == 0 && x->plan.nodes[i].counted;
  if (top != g->nodes.count)
    return refuse(info, GCAP_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED, NULL, NULL,
                  "a node of the graph was destroyed and the graphs have different node counts");
  return refuse(info, GCAP_EXEC_UPDATE_ERROR_NOT_SUPPORTED, NULL, NULL,
                "a node of the graph (or of one of its child graphs) was destroyed; instantiate it instead");
}

gcap_status gcap_exec_update(gcap_exec *x, const gcap_graph *g, gcap_exec_update_info *info) {
  GCAP_ENTER();
  gcap_status st = gcap__check_exec(x, "exec");
  if (st == GCAP_SUCCESS) st = gcap__check_graph(g, "graph");
  if (st == GCAP_SUCCESS) st = gcap__check_same_context(x->ctx, g->ctx, "graph");
  if (st == GCAP_SUCCESS) st = gcap__refuse_in_host_callback();
  if (st != GCAP_SUCCESS) return st;
  if (!info) return gcap__fail(GCAP_ERROR_INVALID_VALUE, "info is NULL");
  *info = (gcap_exec_update_info){GCAP_EXEC_UPDATE_ERROR, NULL, NULL};
  gcap__lock(x->ctx);
  st = gcap__exec_wait_other_launch(x);
  if (st == GCAP_SUCCESS)
    st = x->running ? gcap__fail(GCAP_ERROR_ILLEGAL_STATE, "executable %p is running", (void *)x)
                    : gcap__capture_check_graph_edit(g, "updating from it");
  if (st == GCAP_SUCCESS) gcap__sr_exec_changed(x);
  if (st == GCAP_SUCCESS) st = check_no_destroyed_nodes(x, g, info);
  if (st == GCAP_SUCCESS) st = gcap__backend_exec_before_change(x->ctx, x->impl);
  bool done = false;
  /* A backend that keeps its own copy (CUDA) must see the new values first: the general path. */
  if (st == GCAP_SUCCESS && !x->ctx->ops->exec_update) st = update_in_place(x, g, info, &done);
  if (st == GCAP_SUCCESS && done) {
    gcap__unlock(x->ctx);
    return GCAP_SUCCESS;
  }
  struct gcap__plan fresh = {0};
  if (st == GCAP_SUCCESS) {
    st = gcap__build_plan(x->ctx, g, x->flags, &fresh);
    if (st != GCAP_SUCCESS && st != GCAP_ERROR_OUT_OF_MEMORY)
      st = gcap__fail_context(GCAP_ERROR_GRAPH_EXEC_UPDATE_FAILURE, "the new graph is not valid");
  }
  if (st == GCAP_SUCCESS) st = compare_topology(&x->plan, &fresh, info);
  if (st == GCAP_SUCCESS) st = compare_entries(x->plan.nodes, fresh.nodes, x->plan.count, x->flags, info);
  if (st == GCAP_SUCCESS && x->ctx->ops->exec_update) {
    struct gcap__update_refusal refusal = {GCAP_EXEC_UPDATE_ERROR, SIZE_MAX, SIZE_MAX};
    st = gcap__backend_exec_update(x->ctx, x->impl, &x->plan, &fresh, &refusal);
    if (st == GCAP_ERROR_GRAPH_EXEC_UPDATE_FAILURE) driver_refused(info, &refusal, &x->plan, &fresh);
  }
  if (st == GCAP_SUCCESS) {
    for (size_t i = 0; i < x->plan.count; i++)
      take_entry(&x->plan.nodes[i], &fresh.nodes[i]); /* old values: `fresh`'s */
    /* The argument copies changed plans with their entries: so do the blocks that hold them. */
    unsigned char *block = x->plan.args_block;
    size_t block_bytes = x->plan.args_block_bytes;
    x->plan.args_block = fresh.args_block, x->plan.args_block_bytes = fresh.args_block_bytes;
    fresh.args_block = block, fresh.args_block_bytes = block_bytes;
    x->checked_epoch = gcap__alloc_epoch();
    *info = (gcap_exec_update_info){GCAP_EXEC_UPDATE_SUCCESS, NULL, NULL};
  }
  gcap__plan_release(x->ctx, &fresh);
  gcap__unlock(x->ctx);
  return st;
}

/* ------------------------------------------------------ child-graph setter */

/* The exit of the child graph whose GRAPH entry is p->nodes[first]: its entries lie in between. */
static size_t child_exit(const struct gcap__plan *p, size_t first) {
  const struct gcap__plan_node *g = &p->nodes[first];
  size_t i = first + 1;
  while (p->nodes[i].counted || p->nodes[i].depth != g->depth || p->nodes[i].source_id != g->source_id) i++;
  return i;
}

/*
 * The fresh plan of the new child graph against the old one's entries (first + 1 up to exit):
 * the same nodes in the same creation order and plan order, with the same edges (a root of the
 * child waits for the child's entry in x), and changes each type allows.
 */
static gcap_status compare_child(const struct gcap__plan *old, size_t first, size_t exit,
                                 const struct gcap__plan *fresh, gcap_exec_update_info *info) {
  if (exit - first - 1 != fresh->count)
    return refuse(info, GCAP_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED, NULL, NULL, "the graphs have different node counts");
  uint32_t depth = old->nodes[first].depth + 1;
  for (size_t j = 0; j < fresh->count; j++) {
    const struct gcap__plan_node *a = &old->nodes[first + 1 + j], *b = &fresh->nodes[j];
    bool root = b->num_deps == 0 && b->depth == 0;
    if (a->counted != b->counted || a->depth != depth + b->depth || a->source_index != b->source_index ||
        a->num_deps != (root ? 1 : b->num_deps) || (root && old->deps[a->first_dep] != first))
      return refuse(info, GCAP_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED, b, NULL, "the topology or node order differs");
    for (size_t d = 0; !root && d < b->num_deps; d++)
      if (old->deps[a->first_dep + d] != first + 1 + fresh->deps[b->first_dep + d])
        return refuse(info, GCAP_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED, b, dep_of(fresh, b, d), "a dependency differs");
    if (a->type == GCAP__NODE_NATIVE)
      return refuse(info, GCAP_EXEC_UPDATE_ERROR_NOT_SUPPORTED, b, NULL, "a native CUDA child graph cannot be set");
  }
  return compare_entries(&old->nodes[first + 1], fresh->nodes, fresh->count, fresh->flags, info);
}

/*
 * Kernel entries of `fresh` get argument copies of their own, and copy entries their shapes:
 * its block goes when it is released.
 */
static gcap_status own_block_parts(struct gcap__plan *fresh) {
  for (size_t j = 0; j < fresh->count; j++) {
    struct gcap__plan_node *b = &fresh->nodes[j];
    if (b->type == GCAP_NODE_MEMCPY) {
      gcap_status st = own_shape(b);
      if (st != GCAP_SUCCESS) return st;
    }
    if (b->type != GCAP_NODE_KERNEL || !b->u.kernel.kernel->num_params) continue;
    void **copy = NULL;
    const struct gcap_kernel *k = GCAP__CONTAINER(b->u.kernel.kernel, struct gcap_kernel, info);
    gcap_status st = gcap__kernel_args_copy(k, b->u.kernel.args, &copy);
    if (st != GCAP_SUCCESS) return st;
    b->u.kernel.args = copy; /* gcap__plan_free_owned frees it, being outside the block */
  }
  return GCAP_SUCCESS;
}

/* The backend takes the new entries one by one; on a refusal, those taken are set back. */
static gcap_status offer_child(struct gcap_exec *x, size_t first, struct gcap__plan *fresh) {
  gcap__sr_exec_changed(x);
  gcap_status st = gcap__backend_exec_before_change(x->ctx, x->impl);
  for (size_t j = 0; j < fresh->count; j++) fresh->nodes[j].disabled = x->plan.nodes[first + 1 + j].disabled;
  if (st == GCAP_SUCCESS &&
      (has_shaped_copy(fresh->nodes, fresh->count) || has_shaped_copy(x->plan.nodes + first + 1, fresh->count)))
    return offer_whole(x, first + 1, fresh->nodes, fresh->count);
  size_t j = 0;
  for (; st == GCAP_SUCCESS && j < fresh->count; j++)
    st = gcap__backend_exec_set_entry(x->ctx, x->impl, &x->plan, first + 1 + j, &fresh->nodes[j]);
  for (size_t k = 0; st != GCAP_SUCCESS && k + 1 < j; k++) /* best effort: the values it had */
    (void)gcap__backend_exec_set_entry(x->ctx, x->impl, &x->plan, first + 1 + k, &x->plan.nodes[first + 1 + k]);
  return st;
}

/* Entry by entry, as whole-graph update does: the old values go to `fresh`, released with it. */
static void take_child(struct gcap_exec *x, size_t first, struct gcap__plan *fresh) {
  for (size_t j = 0; j < fresh->count; j++) {
    struct gcap__plan_node *b = &fresh->nodes[j];
    take_entry(&x->plan.nodes[first + 1 + j], b);
    if (b->type == GCAP_NODE_KERNEL) { /* freed here, by the plan that knows where it lies */
      gcap__plan_free_owned(&x->plan, b->u.kernel.args);
      b->u.kernel.args = NULL;
    } else if (b->type == GCAP_NODE_MEMCPY) {
      gcap__plan_free_owned(&x->plan, b->u.copy.shape);
      b->u.copy.shape = NULL;
    }
  }
  x->checked_epoch = gcap__alloc_epoch();
}

gcap_status gcap_exec_child_graph_node_set_params(gcap_exec *x, gcap_node *n, const gcap_graph *child) {
  GCAP_ENTER();
  gcap_status st = check_exec_node(x, n);
  if (st == GCAP_SUCCESS) st = gcap__check_graph(child, "child"); /* NULL too: INVALID_HANDLE */
  if (st == GCAP_SUCCESS) st = gcap__check_same_context(x->ctx, child->ctx, "child");
  if (st != GCAP_SUCCESS) return st;
  struct gcap__plan_node *pn = NULL;
  st = begin_set(x, n, child, GCAP_NODE_GRAPH, &pn);
  if (st != GCAP_SUCCESS) return st;
  st = gcap__capture_check_graph_edit(child, "setting it into a child-graph node");
  if (st == GCAP_SUCCESS && gcap__graph_has_mem_nodes(child))
    st = gcap__fail(GCAP_ERROR_NOT_SUPPORTED, "child %p holds allocation or free nodes", (const void *)child);
  size_t first = (size_t)(pn - x->plan.nodes), exit = first;
  struct gcap__plan fresh = {0};
  gcap_exec_update_info info;
  if (st == GCAP_SUCCESS) {
    exit = child_exit(&x->plan, first);
    st = gcap__build_plan(x->ctx, child, x->flags, &fresh);
  }
  if (st == GCAP_SUCCESS && compare_child(&x->plan, first, exit, &fresh, &info) != GCAP_SUCCESS)
    st = gcap__fail_context(GCAP_ERROR_INVALID_VALUE, "child %p does not match the node's graph", (const void *)child);
  if (st == GCAP_SUCCESS) st = own_block_parts(&fresh);
  if (st == GCAP_SUCCESS) st = offer_child(x, first, &fresh);
  if (st == GCAP_SUCCESS) take_child(x, first, &fresh);
  gcap__plan_release(x->ctx, &fresh);
  gcap__unlock(x->ctx);
  return st;
}
