#include <string.h>

#include "base/alloc.h"
#include "base/error.h"
#include "sim_internal.h"

void sim_run_copy(struct sim_context *sc, const struct gcap__copy *c) {
  const struct gcap__copy_shape *s = c->shape;
  if (sc->init) sim_init_mark_copy(sc, c);
  if (!s) {
    memmove(c->dst, c->src, c->bytes);
    sc->stats.bytes_copied += c->bytes;
    return;
  }
  size_t rows = s->height * s->depth;
  for (size_t r = 0; r < rows; r++)
    memmove((unsigned char *)c->dst + gcap__copy_row_offset(r, s->height, s->dst_pitch, s->dst_rows),
            (const unsigned char *)c->src + gcap__copy_row_offset(r, s->height, s->src_pitch, s->src_rows), c->bytes);
  sc->stats.bytes_copied += (uint64_t)rows * c->bytes;
}

/* Short fills (most fill nodes) as word stores the compiler can keep inline, not a libc call each. */
static void fill_bytes(unsigned char *dst, unsigned char byte, size_t n) {
  if (n > 256) {
    memset(dst, byte, n);
    return;
  }
  uint64_t word = 0x0101010101010101ULL * byte;
  size_t i = 0;
  for (; i + 8 <= n; i += 8) memcpy(dst + i, &word, 8);
  for (; i < n; i++) dst[i] = byte;
}

static void fill_row(unsigned char *row, uint32_t value, unsigned element_size, size_t width) {
  if (element_size == 1) {
    fill_bytes(row, (unsigned char)(value & 0xffu), width);
  } else if (element_size == 2) {
    uint16_t v = (uint16_t)value;
    for (size_t i = 0; i < width; i++) memcpy(row + 2 * i, &v, 2);
  } else {
    for (size_t i = 0; i < width; i++) memcpy(row + 4 * i, &value, 4);
  }
}

void sim_run_fill(struct sim_context *sc, const struct gcap__fill *f) {
  unsigned char *row = f->dst;
  if (sc->init) sim_init_mark_fill(sc, f);
  for (size_t r = 0; r < f->height; r++, row += f->pitch) fill_row(row, f->value, f->element_size, f->width);
  sc->stats.bytes_set += (uint64_t)f->width * f->element_size * f->height;
}

/* The checks against memory gcap_mem_free_async freed run only while there is such memory. */
gcap_status sim_run_checked_copy(struct sim_context *sc, const struct gcap__copy *c) {
  gcap_status st = sc->freed_count ? sim_check_copy_alive(sc, c) : GCAP_SUCCESS;
  if (st == GCAP_SUCCESS) sim_run_copy(sc, c);
  return st;
}

gcap_status sim_run_checked_fill(struct sim_context *sc, const struct gcap__fill *f) {
  gcap_status st = sc->freed_count ? sim_check_fill_alive(sc, f) : GCAP_SUCCESS;
  if (st == GCAP_SUCCESS) sim_run_fill(sc, f);
  return st;
}

gcap_status sim_run_checked_kernel(struct sim_context *sc, const struct gcap__launch *l) {
  gcap_status st = sc->freed_count ? sim_check_kernel_alive(sc, l) : GCAP_SUCCESS;
  return st == GCAP_SUCCESS ? sim_run_kernel(sc, l) : st;
}

void sim_run_host(struct sim_context *sc, gcap_host_fn fn, void *user_data) {
  sc->stats.host_calls++;
  if (sc->init) sim_init_mark_all(sc);
  unsigned open = sim_work_pause(sc);
  gcap__run_host_fn(fn, user_data);
  sim_work_resume(sc, open);
}

/*
 * Per-executable state, made once so a launch allocates nothing. SHUFFLE: the dependents of
 * every entry (CSR), how many dependencies each still waits for, the ready set. DEFERRED: the
 * mark of its latest launch (launches of one executable run one after another, as on CUDA) and
 * how far the running launch has got.
 */
struct sim_exec {
  size_t *first_dependent; /* count + 1 offsets into dependents */
  size_t *dependents;
  size_t *waiting;
  size_t *ready;
  size_t ready_count; /* SHUFFLE: entries in ready */
  size_t next;        /* CAPTURE: the next entry to run */
  size_t remaining;   /* entries of the running launch not run yet */
  struct sim_mark last;
};

static void sim_exec_free(struct sim_exec *x) {
  if (!x) return;
  sim_mark_clear(&x->last);
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

static gcap_status make_shuffle_scratch(struct sim_exec *x, const struct gcap__plan *plan) {
  x->first_dependent = gcap__calloc(plan->count + 1, sizeof *x->first_dependent);
  x->dependents = gcap__calloc(plan->num_deps, sizeof *x->dependents);
  x->waiting = gcap__calloc(plan->count, sizeof *x->waiting);
  x->ready = gcap__calloc(plan->count, sizeof *x->ready);
  if (!x->first_dependent || !x->dependents || !x->waiting || !x->ready)
    return gcap__fail(GCAP_ERROR_OUT_OF_MEMORY, "no memory for the simulator's shuffled replay");
  build_dependents(x, plan);
  return GCAP_SUCCESS;
}

gcap_status sim_exec_create(struct gcap__backend_ctx *b, const struct gcap__plan *plan, void **out) {
  struct sim_context *sc = sim_context_from(b);
  bool shuffle = sc->options.order == GCAP_SIM_ORDER_SHUFFLE;
  *out = NULL;
  if (!shuffle && !sim_deferred(sc)) return GCAP_SUCCESS;
  struct sim_exec *x = gcap__calloc(1, sizeof *x);
  if (!x) return gcap__fail(GCAP_ERROR_OUT_OF_MEMORY, "no memory for the simulator's executable");
  gcap_status st = shuffle ? make_shuffle_scratch(x, plan) : GCAP_SUCCESS;
  if (st != GCAP_SUCCESS) {
    sim_exec_free(x);
    return st;
  }
  *out = x;
  return GCAP_SUCCESS;
}

void sim_exec_destroy(struct gcap__backend_ctx *b, void *exec) { sim_exec_free(exec); }

gcap_status sim_exec_upload(struct gcap__backend_ctx *b, void *exec, void *stream) { return GCAP_SUCCESS; }

const struct sim_mark *sim_exec_last(void *exec) { return &((struct sim_exec *)exec)->last; }

void sim_exec_set_last(void *exec, struct sim_timeline *tl, uint64_t seq) {
  sim_mark_set(&((struct sim_exec *)exec)->last, tl, seq);
}

/* DEFERRED: launches queued before an executable changes or goes run first (they use its plan). */
static gcap_status run_queued_launches(struct gcap__backend_ctx *b, void *exec) {
  struct sim_context *sc = sim_context_from(b);
  if (!exec || !sim_deferred(sc)) return GCAP_SUCCESS;
  return sim_drain(sc, sim_exec_last(exec), 1);
}

/* Before a destroy, which reports nothing: a failure goes to the next wait. */
gcap_status sim_exec_wait(struct gcap__backend_ctx *b, void *exec) {
  sim_wait_idle(sim_context_from(b));
  sim_keep_unreported(sim_context_from(b), run_queued_launches(b, exec));
  return GCAP_SUCCESS;
}

gcap_status sim_exec_before_change(struct gcap__backend_ctx *b, void *exec) {
  sim_wait_idle(sim_context_from(b));
  return run_queued_launches(b, exec);
}

static uint64_t next_random(uint64_t *state) { /* splitmix64 */
  uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

static gcap_status run_entry(struct sim_context *sc, const struct gcap__plan_node *pn);

/* A body runs in plan order, its entries counted as the launch's nodes. */
static gcap_status run_body(struct sim_context *sc, const struct gcap__plan *body) {
  gcap_status st = GCAP_SUCCESS;
  for (size_t i = 0; st == GCAP_SUCCESS && i < body->count; i++) st = run_entry(sc, &body->nodes[i]);
  sc->stats.nodes_executed += body->counted;
  return st;
}

/* The value is read when the node runs, and by WHILE again after every pass of its body. */
static gcap_status run_conditional(struct sim_context *sc, const struct gcap__cond_plan *cp) {
  unsigned v = atomic_load(&cp->cond->value);
  switch (cp->type) {
  case GCAP_CONDITIONAL_IF:
    if (v) return run_body(sc, &cp->bodies[0]);
    return cp->size == 2 ? run_body(sc, &cp->bodies[1]) : GCAP_SUCCESS;
  case GCAP_CONDITIONAL_WHILE: {
    gcap_status st = GCAP_SUCCESS;
    while (st == GCAP_SUCCESS && atomic_load(&cp->cond->value)) st = run_body(sc, &cp->bodies[0]);
    return st;
  }
  default: return v < cp->size ? run_body(sc, &cp->bodies[v]) : GCAP_SUCCESS;
  }
}

static gcap_status run_entry(struct sim_context *sc, const struct gcap__plan_node *pn) {
  if (pn->disabled) return GCAP_SUCCESS;
  switch (pn->type) {
  case GCAP_NODE_CONDITIONAL: return run_conditional(sc, pn->u.cond);
  case GCAP_NODE_KERNEL: return sim_run_checked_kernel(sc, &pn->u.kernel);
  case GCAP_NODE_MEMCPY: return sim_run_checked_copy(sc, &pn->u.copy);
  case GCAP_NODE_MEMSET: return sim_run_checked_fill(sc, &pn->u.fill);
  case GCAP_NODE_HOST: sim_run_host(sc, pn->u.host.fn, pn->u.host.user_data); break;
  case GCAP_NODE_EVENT_RECORD:
    if (!sim_deferred(sc)) sim_event_ran(sc, pn->u.event.impl); /* DEFERRED counts it when queued */
    break;
  default: break; /* empty, child-graph entry and exit, event wait: ordering only */
  }
  return GCAP_SUCCESS;
}

/* run_entry, with the commonest node of all (a short 1-D byte fill) kept inline in the launch loop. */
static inline gcap_status run_entry_inline(struct sim_context *sc, const struct gcap__plan_node *pn,
                                           uint64_t *bytes_set) {
  const struct gcap__fill *f = &pn->u.fill;
  if (pn->type != GCAP_NODE_MEMSET || pn->disabled || f->height != 1 || f->element_size != 1 || sc->freed_count)
    return run_entry(sc, pn);
  fill_bytes(f->dst, (unsigned char)(f->value & 0xffu), f->width);
  *bytes_set += f->width;
  return GCAP_SUCCESS;
}

/* Child-graph entries and exits only order; every node the launch counts is one trace event. */
/* DEFERRED: a record node stamps its event, while this launch's record is the event's latest. */
static void stamp_record(struct sim_context *sc, const struct sim_launch_ctx *lc, const struct gcap__plan_node *pn) {
  struct sim_event *e = pn->u.event.impl;
  if (lc->done && !pn->disabled && e->latest == lc->done) e->recorded_ns = sim_trace_now(sc);
}

static gcap_status run(struct sim_context *sc, const struct sim_launch_ctx *lc, const struct gcap__plan_node *pn) {
  if (pn->type == GCAP_NODE_EVENT_RECORD) stamp_record(sc, lc, pn);
  if (!sc->trace) return run_entry(sc, pn);
  double start = sim_trace_now(sc);
  gcap_status st = run_entry(sc, pn);
  if (pn->counted && pn->type != GCAP_NODE_GRAPH) sim_trace_graph_entry(sc, pn, lc->number, lc->tid, start);
  return st;
}

void sim_launch_start(struct sim_context *sc, const struct sim_launch_ctx *lc) {
  struct sim_exec *x = lc->exec;
  const struct gcap__plan *plan = lc->plan;
  gcap__plan_reset_conds(plan);
  x->next = 0;
  x->remaining = plan->count;
  x->ready_count = 0;
  if (sc->options.order != GCAP_SIM_ORDER_SHUFFLE) return;
  for (size_t i = 0; i < plan->count; i++) {
    x->waiting[i] = plan->nodes[i].num_deps;
    if (x->waiting[i] == 0) x->ready[x->ready_count++] = i;
  }
}

/* SHUFFLE: Kahn's algorithm taking a random ready entry each step, so any topological order may come out. */
static size_t pick_shuffled(struct sim_context *sc, struct sim_exec *x) {
  size_t pick = (size_t)(next_random(&sc->rng) % x->ready_count);
  size_t e = x->ready[pick];
  x->ready[pick] = x->ready[--x->ready_count];
  return e;
}

static void release_dependents(struct sim_exec *x, size_t e) {
  for (size_t d = x->first_dependent[e]; d < x->first_dependent[e + 1]; d++)
    if (--x->waiting[x->dependents[d]] == 0) x->ready[x->ready_count++] = x->dependents[d];
}

static void count_launch(struct sim_context *sc, const struct gcap__plan *plan) {
  sc->stats.graph_launches++;
  sc->stats.nodes_executed += plan->counted;
}

gcap_status sim_launch_step(struct sim_context *sc, const struct sim_launch_ctx *lc, bool *finished) {
  struct sim_exec *x = lc->exec;
  bool shuffle = sc->options.order == GCAP_SIM_ORDER_SHUFFLE;
  gcap_status st = GCAP_SUCCESS;
  if (x->remaining > 0) {
    size_t e = shuffle ? pick_shuffled(sc, x) : x->next++;
    st = run(sc, lc, &lc->plan->nodes[e]);
    if (shuffle) release_dependents(x, e);
    x->remaining--;
  }
  *finished = x->remaining == 0;
  if (*finished && st == GCAP_SUCCESS) count_launch(sc, lc->plan);
  return st;
}

void sim_launch_abandon(struct sim_context *sc, const struct sim_launch_ctx *lc) {
  struct sim_exec *x = lc->exec;
  x->remaining = 0;
  x->ready_count = 0;
  count_launch(sc, lc->plan);
}

/*
 * IMMEDIATE: the plan runs here. A kernel entry's blocks run with the context lock released where
 * the call allows it (sim_kernel.c); every other entry (copies, fills, host nodes, event records,
 * conditionals) runs with the lock held, taken back after each kernel: they change the simulator's
 * state (the INIT map, events, counters) and a host node may call back into gcap. While the launch
 * runs, another thread holds the lock only while one of its kernels is out (kernels_out), so
 * another thread's work, a free and a change or destroy of the executable all wait for the whole
 * launch (sim_wait.c, gcap__exec_wait_other_launch): none comes between its entries.
 */
gcap_status sim_exec_launch(struct gcap__backend_ctx *b, void *exec, const struct gcap__plan *plan, void *stream) {
  struct sim_context *sc = sim_context_from(b);
  struct sim_stream *s = stream;
  if (sim_deferred(sc))
    return sim_enqueue(sc, s, &(struct sim_work){.kind = SIM_WORK_LAUNCH, .exec = exec, .plan = plan});
  sim_wait_to_issue(sc); /* another thread's kernel first */
  const struct sim_launch_ctx lc = {exec, plan, ++sc->launches_begun, s->number};
  gcap_status st = GCAP_SUCCESS;
  s->issued++;
  struct sim_stream *outer = sc->eager_stream;
  sc->eager_stream = s; /* while its kernels run, a query of s says NOT_READY and a synchronize waits */
  gcap__plan_reset_conds(plan);
  sim_work_begin(sc);
  if (!sc->trace && (!exec || sc->options.order != GCAP_SIM_ORDER_SHUFFLE)) {
    /* In plan order, start to end, nothing to trace: the tightest loop (no per-step bookkeeping). */
    uint64_t bytes_set = 0;
    for (size_t i = 0; st == GCAP_SUCCESS && i < plan->count; i++)
      st = run_entry_inline(sc, &plan->nodes[i], &bytes_set);
    sc->stats.bytes_set += bytes_set;
    count_launch(sc, plan);
  } else if (!exec) {
    for (size_t i = 0; st == GCAP_SUCCESS && i < plan->count; i++) st = run(sc, &lc, &plan->nodes[i]);
    count_launch(sc, plan);
  } else {
    sim_launch_start(sc, &lc);
    bool finished = false;
    while (!finished && st == GCAP_SUCCESS) st = sim_launch_step(sc, &lc, &finished);
    if (st != GCAP_SUCCESS) sim_launch_abandon(sc, &lc);
  }
  sim_work_end(sc);
  sc->eager_stream = outer;
  return st;
}
