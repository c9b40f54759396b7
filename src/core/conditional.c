/*
 * Conditional nodes and their handles (cudaGraphConditionalHandleCreate, cudaGraphAddNode with
 * cudaConditionalNodeParams): a node owning one or more body graphs, which a launch runs as the
 * handle's value says (rules.md#conditional-handles through rules.md#conditional-restrictions).
 */
#include <string.h>

#include "dispatch.h"
#include "exec.h"
#include "graph.h"
#include "base/registry.h"

static const char *const type_names[] = {"IF", "WHILE", "SWITCH"};

/* ------------------------------------------------------------ handles */

struct gcap__cond *gcap__cond_lookup(uint64_t h) {
  void *p = (void *)(uintptr_t)h;
  return gcap__registry_has(p, GCAP__H_COND) ? p : NULL;
}

static void cond_release(struct gcap__cond *c) {
  if (--c->refs > 0) return;
  gcap__registry_remove(c);
  gcap__free(c);
}

void gcap__graph_release_conds(struct gcap_graph *g) {
  for (size_t i = 0; i < g->num_conds; i++) cond_release(g->conds[i]);
  gcap__free(g->conds);
  if (g->cond_native) gcap__backend_cond_native_release(g->ctx, g->cond_native);
  g->conds = NULL, g->num_conds = g->conds_cap = 0, g->cond_native = NULL;
}

/* The handle of g's top-level graph whose value the user holds, or NULL. */
static struct gcap__cond *find_cond(const struct gcap_graph *g, uint64_t handle) {
  const struct gcap_graph *top = gcap__graph_top(g);
  for (size_t i = 0; i < top->num_conds; i++)
    if (top->conds[i]->handle == handle) return top->conds[i];
  return NULL;
}

gcap_status gcap__cond_new(struct gcap_graph *g, unsigned default_value, unsigned flags, struct gcap__cond **out) {
  struct gcap__cond *c = gcap__calloc(1, sizeof *c);
  if (!c || gcap__grow((void **)&g->conds, &g->conds_cap, g->num_conds + 1, sizeof *g->conds) != 0 ||
      gcap__registry_add(c, GCAP__H_COND) != 0) {
    gcap__free(c);
    return gcap__fail(GCAP_ERROR_OUT_OF_MEMORY, "no memory for the conditional handle");
  }
  atomic_init(&c->value, default_value);
  c->default_value = default_value, c->flags = flags, c->refs = 1, c->handle = (uint64_t)(uintptr_t)c;
  c->owner = g->ctx->backend;
  gcap_status st = gcap__backend_cond_create(g->ctx, &g->cond_native, default_value, flags, &c->handle);
  if (st != GCAP_SUCCESS) {
    gcap__registry_remove(c);
    gcap__free(c);
    return st;
  }
  g->conds[g->num_conds++] = c;
  *out = c;
  return GCAP_SUCCESS;
}

gcap_status gcap_graph_conditional_handle_create(gcap_graph *g, unsigned default_value, unsigned flags,
                                                 gcap_conditional_handle *out) {
  GCAP_ENTER();
  gcap_status st = gcap__check_graph(g, "graph");
  if (st != GCAP_SUCCESS) return st;
  if (!out) return gcap__fail(GCAP_ERROR_INVALID_VALUE, "out is NULL");
  if (flags & ~GCAP_GRAPH_COND_ASSIGN_DEFAULT)
    return gcap__fail(GCAP_ERROR_INVALID_VALUE, "flags 0x%x has unknown bits 0x%x", flags,
                      flags & ~GCAP_GRAPH_COND_ASSIGN_DEFAULT);
  gcap__lock(g->ctx);
  struct gcap_graph *top = (struct gcap_graph *)gcap__graph_top(g); /* a body's handles are its graph's */
  struct gcap__cond *c = NULL;
  st = top->mem_exec ? gcap__fail(GCAP_ERROR_NOT_SUPPORTED, "graph %p has executable %p; destroy it first", (void *)top,
                                  (void *)top->mem_exec)
                     : gcap__cond_new(top, default_value, flags, &c);
  if (st == GCAP_SUCCESS) *out = c->handle;
  gcap__unlock(g->ctx);
  return st;
}

/* ------------------------------------------------------------ nodes */

static gcap_status check_params(const gcap_conditional_node_params *p) {
  if ((unsigned)p->type > GCAP_CONDITIONAL_SWITCH)
    return gcap__fail(GCAP_ERROR_INVALID_VALUE, "params->type %d is not IF, WHILE or SWITCH", (int)p->type);
  bool fits = p->type == GCAP_CONDITIONAL_IF      ? p->size == 1 || p->size == 2
              : p->type == GCAP_CONDITIONAL_WHILE ? p->size == 1
                                                  : p->size >= 1;
  if (!fits)
    return gcap__fail(GCAP_ERROR_INVALID_VALUE,
                      "params->size %u does not fit a %s node (IF: 1 or 2, WHILE: 1, SWITCH: 1 or more)", p->size,
                      type_names[p->type]);
  if (!p->body_out) return gcap__fail(GCAP_ERROR_INVALID_VALUE, "params->body_out is NULL");
  return GCAP_SUCCESS;
}

/* Child graphs cannot hold conditional nodes: g must be a top-level graph or a body. */
static gcap_status check_container(const struct gcap_graph *g) {
  for (const struct gcap_graph *at = g; at->owner; at = at->owner->graph)
    if (at->owner->type == GCAP_NODE_GRAPH)
      return gcap__fail(GCAP_ERROR_NOT_SUPPORTED,
                        "graph %p is (inside) the graph of a child-graph node, which cannot hold conditional nodes",
                        (const void *)g);
  return GCAP_SUCCESS;
}

static gcap_status make_bodies(struct gcap_node *n, struct gcap__cond_node *cn) {
  for (unsigned i = 0; i < cn->size; i++) {
    gcap_status st = gcap__graph_new(n->graph ? n->graph->ctx : gcap__chunk_of(n)->graph->ctx, n, &cn->bodies[i]);
    if (st != GCAP_SUCCESS) return st;
  }
  return GCAP_SUCCESS;
}

void gcap__cond_node_free(struct gcap_node *n) {
  struct gcap__cond_node *cn = n->p.cond;
  if (!cn) return;
  for (unsigned i = 0; i < cn->size; i++)
    if (cn->bodies[i]) gcap__graph_free(cn->bodies[i]);
  cond_release(cn->cond);
  gcap__free(cn);
  n->p.cond = NULL;
}

gcap_status gcap_graph_add_conditional_node(gcap_graph *g, gcap_node *const *deps, size_t num_deps,
                                            gcap_conditional_node_params *p, gcap_node **out) {
  GCAP_ENTER();
  gcap_status st = gcap__node_begin_add(g, deps, num_deps, out);
  if (st == GCAP_SUCCESS && p) st = check_params(p);
  if (st == GCAP_SUCCESS) st = gcap__node_finish_checks(g, deps, num_deps, p, out);
  if (st != GCAP_SUCCESS) return st;
  gcap__lock(g->ctx);
  struct gcap_node *n = NULL;
  st = check_container(g);
  if (st == GCAP_SUCCESS) st = gcap__cond_node_make(g, p, &n);
  if (st == GCAP_SUCCESS) st = gcap__node_commit(g, n, deps, num_deps, out); /* releases the bodies on failure */
  for (unsigned i = 0; st == GCAP_SUCCESS && i < p->size; i++) p->body_out[i] = n->p.cond->bodies[i];
  gcap__unlock(g->ctx);
  return st;
}

gcap_status gcap__cond_node_make(struct gcap_graph *g, const gcap_conditional_node_params *p, struct gcap_node **out) {
  struct gcap__cond *c = find_cond(g, p->handle);
  if (!c)
    return gcap__fail(GCAP_ERROR_INVALID_VALUE,
                      "params->handle 0x%llx is not a handle of graph %p (or of the graph it is in)",
                      (unsigned long long)p->handle, (void *)gcap__graph_top(g));
  struct gcap__cond_node *cn = gcap__calloc(1, sizeof *cn + p->size * sizeof cn->bodies[0]);
  struct gcap_node *n = cn ? gcap__node_alloc(g, GCAP_NODE_CONDITIONAL) : NULL;
  if (!n) {
    gcap__free(cn);
    return gcap__fail(GCAP_ERROR_OUT_OF_MEMORY, "no memory for the conditional node");
  }
  *cn = (struct gcap__cond_node){c, p->type, p->size};
  c->refs++;
  n->p.cond = cn;
  gcap_status st = make_bodies(n, cn);
  if (st != GCAP_SUCCESS) {
    gcap__node_discard(n);
    return st;
  }
  *out = n;
  return GCAP_SUCCESS;
}

gcap_status gcap_node_get_conditional_params(const gcap_node *n, gcap_conditional_node_params *p) {
  GCAP_ENTER();
  gcap_status st = gcap__node_check_typed(n, GCAP_NODE_CONDITIONAL, p);
  if (st != GCAP_SUCCESS) return st;
  const struct gcap__cond_node *cn = n->p.cond;
  gcap_graph **body_out = p->body_out;
  *p = (gcap_conditional_node_params){cn->cond->handle, cn->type, cn->size, body_out};
  for (unsigned i = 0; body_out && i < cn->size; i++) body_out[i] = cn->bodies[i];
  return GCAP_SUCCESS;
}

bool gcap__graph_has_conditionals(const struct gcap_graph *g) {
  if (g->num_conds || g->cond_nodes) return true;
  for (size_t i = 0; g->child_graph_nodes && i < g->nodes.count; i++)
    if (g->nodes.items[i]->type == GCAP_NODE_GRAPH && gcap__graph_has_conditionals(g->nodes.items[i]->p.child))
      return true;
  return false;
}

/* ------------------------------------------------------------ plans */

/* What a body may hold (rules.md#conditional-bodies), checked through child graphs and nested bodies. */
static gcap_status check_body(const struct gcap_graph *body, const struct gcap_node *owner) {
  for (size_t i = 0; i < body->nodes.count; i++) {
    const struct gcap_node *n = body->nodes.items[i];
    switch (n->type) {
    case GCAP_NODE_KERNEL:
    case GCAP_NODE_EMPTY:
    case GCAP_NODE_MEMSET:
    case GCAP_NODE_MEMCPY:
    case GCAP_NODE_CONDITIONAL: continue; /* a nested one's bodies are checked when its plan is built */
    case GCAP_NODE_GRAPH: {
      gcap_status st = check_body(n->p.child, owner);
      if (st != GCAP_SUCCESS) return st;
      continue;
    }
    default:
      return gcap__fail(GCAP_ERROR_INVALID_VALUE,
                        "node %zu of a body of conditional node %zu is %s %s node; bodies hold kernel, empty, "
                        "child-graph, memset, memcpy and conditional nodes only",
                        n->index, owner->index, gcap__article(n->type), gcap__node_type_name(n->type));
    }
  }
  return GCAP_SUCCESS;
}

void gcap__cond_plan_free(struct gcap_context *ctx, struct gcap__cond_plan *cp) {
  if (!cp) return;
  for (unsigned i = 0; cp->bodies && i < cp->size; i++) gcap__plan_release(ctx, &cp->bodies[i]);
  if (cp->cond) cond_release(cp->cond);
  gcap__free(cp->bodies);
  gcap__free(cp);
}

gcap_status gcap__cond_plan_build(struct gcap_context *ctx, const struct gcap_node *n, unsigned flags,
                                  struct gcap__cond_plan **out) {
  const struct gcap__cond_node *cn = n->p.cond;
  struct gcap__cond_plan *cp = gcap__calloc(1, sizeof *cp);
  if (cp) cp->bodies = gcap__calloc(cn->size, sizeof *cp->bodies);
  if (!cp || !cp->bodies) {
    gcap__free(cp);
    return gcap__fail(GCAP_ERROR_OUT_OF_MEMORY, "no memory for conditional node %zu", n->index);
  }
  cp->type = cn->type, cp->size = cn->size, cp->cond = cn->cond;
  cn->cond->refs++;
  gcap_status st = GCAP_SUCCESS;
  for (unsigned i = 0; st == GCAP_SUCCESS && i < cn->size; i++) {
    st = check_body(cn->bodies[i], n);
    if (st == GCAP_SUCCESS) st = gcap__build_plan(ctx, cn->bodies[i], flags, &cp->bodies[i]);
  }
  if (st != GCAP_SUCCESS) {
    gcap__cond_plan_free(ctx, cp);
    return st;
  }
  *out = cp;
  return GCAP_SUCCESS;
}

/* Whether a conditional node in g, its child graphs or its bodies uses c. */
static bool cond_used_in(const struct gcap_graph *g, const struct gcap__cond *c) {
  for (size_t i = 0; i < g->nodes.count; i++) {
    const struct gcap_node *n = g->nodes.items[i];
    if (n->type == GCAP_NODE_GRAPH && cond_used_in(n->p.child, c)) return true;
    if (n->type != GCAP_NODE_CONDITIONAL) continue;
    if (n->p.cond->cond == c) return true;
    for (unsigned b = 0; b < n->p.cond->size; b++)
      if (cond_used_in(n->p.cond->bodies[b], c)) return true;
  }
  return false;
}

gcap_status gcap__check_conds_used(const struct gcap_graph *g) {
  for (size_t i = 0; i < g->num_conds; i++)
    if (!cond_used_in(g, g->conds[i]))
      return gcap__fail(GCAP_ERROR_INVALID_VALUE,
                        "conditional handle 0x%llx of graph %p is used by no conditional node (CUDA may refuse to "
                        "instantiate such a graph)",
                        (unsigned long long)g->conds[i]->handle, (const void *)g);
  return GCAP_SUCCESS;
}

int gcap__plan_take_conds(struct gcap__plan *p, const struct gcap_graph *g) {
  if (!g->num_conds) return 0;
  p->conds = gcap__malloc(g->num_conds * sizeof *p->conds);
  if (!p->conds) return -1;
  for (size_t i = 0; i < g->num_conds; i++) (p->conds[i] = g->conds[i])->refs++;
  p->num_conds = g->num_conds;
  p->cond_native = g->cond_native;
  if (p->cond_native) gcap__backend_cond_native_retain(g->ctx, p->cond_native);
  return 0;
}

void gcap__plan_drop_conds(struct gcap_context *ctx, struct gcap__plan *p) {
  for (size_t i = 0; i < p->num_conds; i++) cond_release(p->conds[i]);
  gcap__free(p->conds);
  if (p->cond_native) gcap__backend_cond_native_release(ctx, p->cond_native);
  p->conds = NULL, p->num_conds = 0, p->cond_native = NULL;
}
