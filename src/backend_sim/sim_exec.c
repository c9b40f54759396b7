#include <string.h>

#include "alloc.h"
#include "error.h"
#include "sim_internal.h"

void sim_run_copy(struct sim_context *sc, const struct gcap__copy *c) {
  memmove(c->dst, c->src, c->bytes);
  sc->stats.bytes_copied += c->bytes;
}

static void fill_row(unsigned char *row, uint32_t value, unsigned element_size, size_t width) {
  if (element_size == 1) {
    memset(row, (int)(value & 0xffu), width);
  } else if (element_size == 2) {
    uint16_t v = (uint16_t)value;
    for (size_t i = 0; i < width; i++) memcpy(row + 2 * i, &v, 2);
  } else {
    for (size_t i = 0; i < width; i++) memcpy(row + 4 * i, &value, 4);
  }
}

void sim_run_fill(struct sim_context *sc, const struct gcap__fill *f) {
  unsigned char *row = f->dst;
  for (size_t r = 0; r < f->height; r++, row += f->pitch) fill_row(row, f->value, f->element_size, f->width);
  sc->stats.bytes_set += (uint64_t)f->width * f->element_size * f->height;
}

void sim_run_host(struct sim_context *sc, gcap_host_fn fn, void *user_data) {
  sc->stats.host_calls++;
  unsigned open = sim_work_pause(sc);
  gcap__run_host_fn(fn, user_data);
  sim_work_resume(sc, open);
}

/*
 * Per-executable scratch for shuffled replay, made once so a launch allocates nothing: the
 * dependents of every entry (CSR), how many dependencies each still waits for, the ready set.
 */
struct sim_exec {
  size_t *first_dependent; /* count + 1 offsets into dependents */
  size_t *dependents;
  size_t *waiting;
  size_t *ready;
};

static void sim_exec_free(struct sim_exec *x) {
  if (!x) return;
  gcap__free(x->first_dependent);
  gcap__free(x->dependents);
  gcap__free(x->waiting);
  gcap__free(x->ready);
  gcap__free(x);
}

static void build_dependents(struct sim_exec *x, const struct gcap__plan *plan) {
  for (size_t i = 0; i < plan->num_deps; i++) x->first_dependent[plan->deps[i] + 1]++;
  for (size_t i = 0; i < plan->count; i++) x->first_dependent[i + 1] += x->first_dependent[i];
  for (size_t i = 0; i < plan->count; i++) x->waiting[i] = 0; /* fill cursor per entry */
  for (size_t e = 0; e < plan->count; e++) {
    const struct gcap__plan_node *pn = &plan->nodes[e];
    for (size_t d = 0; d < pn->num_deps; d++) {
      size_t from = plan->deps[pn->first_dep + d];
      x->dependents[x->first_dependent[from] + x->waiting[from]++] = e;
    }
  }
}

gcap_status sim_exec_create(struct gcap__backend_ctx *b, const struct gcap__plan *plan, void **out) {
  *out = NULL;
  if (sim_context_from(b)->options.order != GCAP_SIM_ORDER_SHUFFLE) return GCAP_SUCCESS;
  struct sim_exec *x = gcap__calloc(1, sizeof *x);
  if (x) {
    x->first_dependent = gcap__calloc(plan->count + 1, sizeof *x->first_dependent);
    x->dependents = gcap__calloc(plan->num_deps, sizeof *x->dependents);
    x->waiting = gcap__calloc(plan->count, sizeof *x->waiting);
    x->ready = gcap__calloc(plan->count, sizeof *x->ready);
  }
  if (!x || !x->first_dependent || !x->dependents || !x->waiting || !x->ready) {
    sim_exec_free(x);
    return gcap__fail(GCAP_ERROR_OUT_OF_MEMORY, "no memory for the simulator's shuffled replay");
  }
  build_dependents(x, plan);
  *out = x;
  return GCAP_SUCCESS;
}

void sim_exec_destroy(struct gcap__backend_ctx *b, void *exec) { sim_exec_free(exec); }

gcap_status sim_exec_upload(struct gcap__backend_ctx *b, void *exec, void *stream) { return GCAP_SUCCESS; }

static uint64_t next_random(uint64_t *state) { /* splitmix64 */
  uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

/* What the trace says of the launch a node belongs to. */
struct launch_id {
  uint64_t number; /* 1-based, in the order launches start */
  unsigned tid;    /* the launch stream's number */
};

static gcap_status run_entry(struct sim_context *sc, const struct gcap__plan_node *pn) {
  if (pn->disabled) return GCAP_SUCCESS;
  switch (pn->type) {
  case GCAP_NODE_KERNEL: return sim_run_kernel(sc, &pn->u.kernel);
  case GCAP_NODE_MEMCPY: sim_run_copy(sc, &pn->u.copy); break;
  case GCAP_NODE_MEMSET: sim_run_fill(sc, &pn->u.fill); break;
  case GCAP_NODE_HOST: sim_run_host(sc, pn->u.host.fn, pn->u.host.user_data); break;
  case GCAP_NODE_EVENT_RECORD: ((struct sim_event *)pn->u.event.impl)->records++; break;
  default: break; /* empty, child-graph entry and exit, event wait: ordering only */
  }
  return GCAP_SUCCESS;
}

/* Child-graph entries and exits only order; every node the launch counts is one trace event. */
static gcap_status run_traced(struct sim_context *sc, const struct gcap__plan_node *pn, const struct launch_id *id) {
  double start = sim_trace_now(sc);
  gcap_status st = run_entry(sc, pn);
  if (pn->counted && pn->type != GCAP_NODE_GRAPH) sim_trace_graph_entry(sc, pn, id->number, id->tid, start);
  return st;
}

static gcap_status run(struct sim_context *sc, const struct gcap__plan_node *pn, const struct launch_id *id) {
  return sc->trace ? run_traced(sc, pn, id) : run_entry(sc, pn);
}

/* Kahn's algorithm taking a random ready entry each step: any topological order may come out. */
static gcap_status run_shuffled(struct sim_context *sc, struct sim_exec *x, const struct gcap__plan *plan,
                                const struct launch_id *id) {
  size_t ready = 0;
  for (size_t i = 0; i < plan->count; i++) {
    x->waiting[i] = plan->nodes[i].num_deps;
    if (x->waiting[i] == 0) x->ready[ready++] = i;
  }
  while (ready) {
    size_t pick = (size_t)(next_random(&sc->rng) % ready);
    size_t e = x->ready[pick];
    x->ready[pick] = x->ready[--ready];
    gcap_status st = run(sc, &plan->nodes[e], id);
    if (st != GCAP_SUCCESS) return st;
    for (size_t d = x->first_dependent[e]; d < x->first_dependent[e + 1]; d++)
      if (--x->waiting[x->dependents[d]] == 0) x->ready[ready++] = x->dependents[d];
  }
  return GCAP_SUCCESS;
}

gcap_status sim_exec_launch(struct gcap__backend_ctx *b, void *exec, const struct gcap__plan *plan, void *stream) {
  struct sim_context *sc = sim_context_from(b);
  struct sim_stream *s = stream;
  const struct launch_id id = {++sc->launches_begun, s->number};
  gcap_status st = GCAP_SUCCESS;
  sim_work_begin(sc);
  if (exec) st = run_shuffled(sc, exec, plan, &id);
  else for (size_t i = 0; st == GCAP_SUCCESS && i < plan->count; i++) st = run(sc, &plan->nodes[i], &id);
  sim_work_end(sc);
  sc->stats.graph_launches++;
  sc->stats.nodes_executed += plan->counted;
  s->issued++;
  return st;
}
