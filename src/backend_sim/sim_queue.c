/*
 * DEFERRED execution: stream work is queued per stream and runs only when the host waits for
 * it. Then the streams' ready operations run interleaved in an order drawn from the seed, bound
 * only by stream order, event waits and the order of an executable's launches, so that a
 * program missing a synchronize or an event finds it out every time, not by luck. Only the work
 * the waited-for point depends on runs: a stream nobody waited for keeps its work queued.
 *
 * Every backend call reaches here with the core's context lock held (the simulator's waits
 * take it too), so the queues need no lock of their own. A kernel's blocks may run with the lock
 * released (sim_kernel.c): other threads may then queue work and make streams, but not drain:
 * one drain at a time, and a query during another thread's drain runs nothing (NOT_READY).
 */
#include <string.h>

#include "base/alloc.h"
#include "base/error.h"
#include "sim_internal.h"

/* A queued kernel launch, in one allocation with its argument values. */
struct sim_kernel_op {
  struct gcap__launch launch;
  struct gcap__kernel_info info; /* a copy: the kernel's module may go before the launch runs */
  void *args[];                  /* one pointer per parameter, then the values */
};

/* A queued graph launch. */
struct sim_launch_op {
  void *exec;
  const struct gcap__plan *plan;
  struct sim_mark after; /* the executable's previous launch */
  uint64_t launch;       /* its launch number (trace, messages) */
  bool started;
  struct sim_record *done; /* what its event record nodes record: complete with the launch */
  size_t num_waits;
  struct sim_record *waits[]; /* the records its event wait nodes wait for */
};

/* Kept small: a program may queue a million of them before it waits. */
struct sim_op {
  struct sim_op *next;
  int kind;           /* enum of struct sim_work */
  uint64_t number;    /* in issue order across the context: the trace's "op" */
  const char *issuer; /* the public call that issued it */
  union {
    struct gcap__copy copy;
    struct gcap__fill fill;
    struct sim_kernel_op *kernel;
    struct {
      gcap_host_fn fn;
      void *user_data;
    } host;
    struct sim_record *record; /* RECORD: the record it completes; WAIT: the record it waits for */
    struct {
      void *ptr;
      size_t bytes;
    } free;
    struct sim_launch_op *launch;
  } u;
};

#define OPS_PER_CHUNK 1024
struct sim_op_chunk {
  struct sim_op_chunk *next;
  struct sim_op ops[OPS_PER_CHUNK];
};

/* ------------------------------------------------------------------ marks */

struct sim_timeline *sim_timeline_new(struct sim_stream *owner) {
  struct sim_timeline *tl = gcap__calloc(1, sizeof *tl);
  if (!tl) return NULL;
  tl->refs = 1;
  tl->owner = owner;
  return tl;
}

void sim_timeline_release(struct sim_timeline *tl) {
  if (tl && --tl->refs == 0) gcap__free(tl);
}

void sim_mark_set(struct sim_mark *m, struct sim_timeline *tl, uint64_t seq) {
  if (tl) tl->refs++;
  sim_timeline_release(m->tl);
  m->tl = tl;
  m->seq = seq;
}

void sim_mark_clear(struct sim_mark *m) { sim_mark_set(m, NULL, 0); }

void sim_record_release(struct sim_record *r) {
  if (!r || --r->refs > 0) return;
  sim_mark_clear(&r->at);
  gcap__free(r);
}

struct sim_mark sim_stream_end(const struct sim_stream *s) {
  return (struct sim_mark){s->tl, s->issued};
}

/* ------------------------------------------------------------------ freed memory */

/* Memory a queued free released while other work was still queued: kept until no work is left. */
struct sim_freed {
  uintptr_t base;
  size_t bytes;
  uint64_t op; /* the free's operation number */
  unsigned tid;
};

/* Room is made when the free is queued, so running it allocates nothing (memory is open then). */
static gcap_status reserve_freed(struct sim_context *sc) {
  size_t want = sc->freed_count + sc->frees_queued + 1;
  if (want <= sc->freed_cap) return GCAP_SUCCESS;
  struct sim_freed *grown = gcap__realloc(sc->freed, 2 * want * sizeof *grown);
  if (!grown) return gcap__fail(GCAP_ERROR_OUT_OF_MEMORY, "no memory to queue the free");
  sc->freed = grown;
  sc->freed_cap = 2 * want;
  return GCAP_SUCCESS;
}

static void run_free(struct sim_context *sc, const struct sim_op *op, unsigned tid) {
  sc->freed[sc->freed_count++] = (struct sim_freed){(uintptr_t)op->u.free.ptr, op->u.free.bytes, op->number, tid};
}

size_t sim_pending_frees(const struct sim_context *sc, uintptr_t (*out)[2], size_t max) {
  size_t n = 0;
  for (const struct sim_stream *s = sc->streams; s; s = s->next)
    for (const struct sim_op *op = s->head; op && n < max; op = op->next)
      if (op->kind == SIM_WORK_FREE && op->u.free.ptr) {
        out[n][0] = (uintptr_t)op->u.free.ptr;
        out[n++][1] = op->u.free.bytes;
      }
  return n;
}

bool sim_queues_empty(const struct sim_context *sc) {
  for (const struct sim_stream *s = sc->streams; s; s = s->next)
    if (s->head) return false;
  return true;
}

/* Once nothing is queued, nothing can touch the freed memory any more. */
static void release_freed(struct sim_context *sc) {
  for (size_t i = 0; i < sc->freed_count; i++) sim_free_now(sc, (void *)sc->freed[i].base);
  sc->freed_count = 0;
}

void sim_queue_release_freed(struct sim_context *sc) {
  release_freed(sc);
  gcap__free(sc->freed);
  sc->freed = NULL;
  sc->freed_cap = 0;
}

static const struct sim_freed *freed_at(const struct sim_context *sc, uintptr_t first, uintptr_t last) {
  for (size_t i = 0; i < sc->freed_count; i++)
    if (first < sc->freed[i].base + sc->freed[i].bytes && sc->freed[i].base <= last) return &sc->freed[i];
  return NULL;
}

static gcap_status check_alive(const struct sim_context *sc, const void *p, size_t bytes, const char *how) {
  if (sc->freed_count == 0 || bytes == 0) return GCAP_SUCCESS;
  const struct sim_freed *f = freed_at(sc, (uintptr_t)p, (uintptr_t)p + bytes - 1);
  if (!f) return GCAP_SUCCESS;
  return gcap__fail(GCAP_ERROR_INVALID_VALUE,
                    "it %s [%p, +%zu bytes), which gcap_mem_free_async freed on stream %u (operation %llu) before it "
                    "ran: nothing ordered that free after this work (an event, or the same stream, would)",
                    how, p, bytes, f->tid, (unsigned long long)f->op);
}

gcap_status sim_check_copy_alive(const struct sim_context *sc, const struct gcap__copy *c) {
  gcap_status st = check_alive(sc, c->src, gcap__copy_span(c, 0), "reads");
  return st != GCAP_SUCCESS ? st : check_alive(sc, c->dst, gcap__copy_span(c, 1), "writes");
}

gcap_status sim_check_fill_alive(const struct sim_context *sc, const struct gcap__fill *f) {
  if (f->height == 0) return GCAP_SUCCESS;
  return check_alive(sc, f->dst, (f->height - 1) * f->pitch + f->width * f->element_size, "writes");
}

/* A kernel touches what its pointer-sized arguments point into, as race analysis takes it. */
gcap_status sim_check_kernel_alive(const struct sim_context *sc, const struct gcap__launch *l) {
  if (sc->freed_count == 0) return GCAP_SUCCESS;
  for (size_t i = 0; i < l->kernel->num_params; i++) {
    void *p = NULL;
    if (l->kernel->param_sizes && l->kernel->param_sizes[i] != sizeof p) continue;
    memcpy(&p, l->args[i], sizeof p);
    gcap_status st = check_alive(sc, p, 1, "points into");
    if (st != GCAP_SUCCESS) return st;
  }
  return GCAP_SUCCESS;
}

/* ------------------------------------------------------------------ issuing */

/* Operations come from chunks that stay with the context, so a steady program allocates nothing. */
static struct sim_op *op_new(struct sim_context *sc) {
  if (!sc->free_ops) {
    struct sim_op_chunk *c = gcap__malloc(sizeof *c);
    if (!c) return NULL;
    c->next = sc->op_chunks;
    sc->op_chunks = c;
    for (size_t i = OPS_PER_CHUNK; i-- > 0;) {
      c->ops[i].next = sc->free_ops;
      sc->free_ops = &c->ops[i];
    }
  }
  struct sim_op *op = sc->free_ops;
  sc->free_ops = op->next;
  op->next = NULL;
  return op;
}

static void launch_op_free(struct sim_launch_op *l) {
  if (!l) return;
  sim_mark_clear(&l->after);
  sim_record_release(l->done);
  for (size_t i = 0; i < l->num_waits; i++) sim_record_release(l->waits[i]);
  gcap__free(l);
}

static void op_free(struct sim_context *sc, struct sim_op *op) {
  switch (op->kind) {
  case SIM_WORK_FREE: sc->frees_queued -= op->u.free.ptr != NULL; break;
  case SIM_WORK_KERNEL: gcap__free(op->u.kernel); break;
  case SIM_WORK_COPY: gcap__free((void *)op->u.copy.shape); break;
  case SIM_WORK_RECORD:
  case SIM_WORK_WAIT: sim_record_release(op->u.record); break;
  case SIM_WORK_LAUNCH: launch_op_free(op->u.launch); break;
  default: break;
  }
  op->next = sc->free_ops;
  sc->free_ops = op;
}

void sim_queue_destroy(struct sim_context *sc) {
  while (sc->op_chunks) {
    struct sim_op_chunk *c = sc->op_chunks;
    sc->op_chunks = c->next;
    gcap__free(c);
  }
  sc->free_ops = NULL;
}

/* The argument values are copied: the caller's may change as soon as the launch call returns. */
static size_t value_room(size_t bytes) { return (bytes + 15) / 16 * 16; }

static gcap_status copy_kernel(struct sim_op *op, const struct gcap__launch *l) {
  const struct gcap__kernel_info *k = l->kernel;
  size_t n = k->num_params, pointers = value_room(n * sizeof(void *)), sizes = value_room(n * sizeof(size_t));
  size_t bytes = sizeof(struct sim_kernel_op) + pointers + sizes;
  for (size_t i = 0; i < n; i++) bytes += value_room(k->param_sizes[i]);
  struct sim_kernel_op *ko = gcap__malloc(bytes);
  if (!ko) return gcap__fail(GCAP_ERROR_OUT_OF_MEMORY, "no memory to queue the kernel launch");
  size_t *param_sizes = (size_t *)(void *)((unsigned char *)ko->args + pointers); /* 16-byte aligned */
  unsigned char *value = (unsigned char *)param_sizes + sizes;
  if (n) memcpy(param_sizes, k->param_sizes, n * sizeof *param_sizes);
  for (size_t i = 0; i < n; i++) {
    memcpy(value, l->args[i], k->param_sizes[i]);
    ko->args[i] = value;
    value += value_room(k->param_sizes[i]);
  }
  ko->info = *k;
  ko->info.param_sizes = param_sizes;
  ko->launch = *l;
  ko->launch.kernel = &ko->info;
  ko->launch.args = ko->args;
  op->u.kernel = ko;
  return GCAP_SUCCESS;
}

/* A record made by the event's latest gcap_event_record, or by a launch recording it. */
static struct sim_record *record_new(struct sim_stream *s, uint64_t seq, uint64_t op) {
  struct sim_record *r = gcap__calloc(1, sizeof *r);
  if (!r) return NULL;
  r->refs = 1;
  sim_mark_set(&r->at, s->tl, seq);
  r->op = op;
  r->tid = s->number;
  r->ran_at = -1;
  return r;
}

static void event_takes(struct sim_event *e, struct sim_record *r) {
  r->refs++;
  sim_record_release(e->latest);
  e->latest = r;
}

static gcap_status prepare_record(struct sim_op *op, struct sim_stream *s, struct sim_event *e) {
  op->u.record = record_new(s, s->issued + 1, op->number);
  if (!op->u.record) return gcap__fail(GCAP_ERROR_OUT_OF_MEMORY, "no memory to queue the event record");
  event_takes(e, op->u.record);
  e->records++;
  return GCAP_SUCCESS;
}

static void prepare_wait(struct sim_op *op, struct sim_event *e) {
  op->u.record = e->latest; /* NULL: never recorded, nothing to wait for */
  if (op->u.record) op->u.record->refs++;
}

/* Its event wait nodes wait for the records current now; its record nodes become the latest. */
static gcap_status prepare_launch(struct sim_context *sc, struct sim_op *op, struct sim_stream *s,
                                  const struct sim_work *w) {
  const struct gcap__plan *plan = w->plan;
  size_t waits = 0;
  for (size_t i = 0; i < plan->count; i++) waits += plan->nodes[i].type == GCAP_NODE_EVENT_WAIT;
  struct sim_launch_op *lo = gcap__calloc(1, sizeof *lo + waits * sizeof lo->waits[0]);
  if (!lo) return gcap__fail(GCAP_ERROR_OUT_OF_MEMORY, "no memory to queue the launch");
  op->u.launch = lo;
  lo->exec = w->exec;
  lo->plan = plan;
  lo->launch = ++sc->launches_begun;
  for (size_t i = 0; i < plan->count; i++) { /* first the waits: a record of this launch must not count */
    const struct gcap__plan_node *pn = &plan->nodes[i];
    struct sim_event *e = pn->type == GCAP_NODE_EVENT_WAIT && !pn->disabled ? pn->u.event.impl : NULL;
    if (e && e->latest) {
      lo->waits[lo->num_waits++] = e->latest;
      e->latest->refs++;
    }
  }
  struct sim_record *done = NULL;
  for (size_t i = 0; i < plan->count; i++) {
    const struct gcap__plan_node *pn = &plan->nodes[i];
    if (pn->type != GCAP_NODE_EVENT_RECORD || pn->disabled) continue;
    if (!done && !(done = record_new(s, s->issued + 1, op->number)))
      return gcap__fail(GCAP_ERROR_OUT_OF_MEMORY, "no memory to queue the launch");
    event_takes(pn->u.event.impl, done); /* waiting for it waits for the whole launch: a little more than CUDA */
    ((struct sim_event *)pn->u.event.impl)->records++;
  }
  if (done) done->by_launch = true;
  lo->done = done; /* its reference: the launch stamps the time it completed */
  sim_mark_set(&lo->after, sim_exec_last(w->exec)->tl, sim_exec_last(w->exec)->seq);
  sim_exec_set_last(w->exec, s->tl, s->issued + 1);
  return GCAP_SUCCESS;
}

/* A shaped copy's shape is the caller's until the call returns: the queued copy keeps its own. */
static gcap_status copy_copy(struct sim_op *op, const struct gcap__copy *c) {
  op->u.copy = *c;
  if (!c->shape) return GCAP_SUCCESS;
  struct gcap__copy_shape *shape = gcap__malloc(sizeof *shape);
  op->u.copy.shape = shape;
  if (!shape) return gcap__fail(GCAP_ERROR_OUT_OF_MEMORY, "no memory to queue the copy");
  *shape = *c->shape;
  return GCAP_SUCCESS;
}

static gcap_status prepare(struct sim_context *sc, struct sim_op *op, struct sim_stream *s, const struct sim_work *w) {
  switch (w->kind) {
  case SIM_WORK_COPY: return copy_copy(op, w->copy);
  case SIM_WORK_FILL: op->u.fill = *w->fill; return GCAP_SUCCESS;
  case SIM_WORK_KERNEL: return copy_kernel(op, w->launch);
  case SIM_WORK_HOST: op->u.host.fn = w->fn, op->u.host.user_data = w->user_data; return GCAP_SUCCESS;
  case SIM_WORK_RECORD: return prepare_record(op, s, w->event);
  case SIM_WORK_WAIT: prepare_wait(op, w->event); return GCAP_SUCCESS;
  case SIM_WORK_FREE: {
    gcap_status st = reserve_freed(sc);
    if (st == GCAP_SUCCESS) op->u.free.ptr = w->ptr, op->u.free.bytes = w->bytes, sc->frees_queued++;
    return st;
  }
  case SIM_WORK_LAUNCH: return prepare_launch(sc, op, s, w);
  }
  return GCAP_SUCCESS;
}

/* Each kind of stream work has one public call that issues it (fills: one per element size). */
static const char *issuer_of(const struct sim_work *w) {
  static const char *const calls[] = {
      [SIM_WORK_COPY] = "gcap_memcpy_async",      [SIM_WORK_KERNEL] = "gcap_launch_kernel",
      [SIM_WORK_HOST] = "gcap_launch_host_func",  [SIM_WORK_RECORD] = "gcap_event_record",
      [SIM_WORK_WAIT] = "gcap_stream_wait_event", [SIM_WORK_FREE] = "gcap_mem_free_async",
      [SIM_WORK_LAUNCH] = "gcap_exec_launch"};
  if (w->kind != SIM_WORK_FILL) return calls[w->kind];
  return w->fill->element_size == 4   ? "gcap_memset_d32_async"
         : w->fill->element_size == 2 ? "gcap_memset_d16_async"
                                      : "gcap_memset_async";
}

gcap_status sim_enqueue(struct sim_context *sc, struct sim_stream *s, const struct sim_work *w) {
  struct sim_op *op = op_new(sc);
  if (!op) return gcap__fail(GCAP_ERROR_OUT_OF_MEMORY, "no memory to queue the operation");
  op->kind = (int)w->kind;
  op->u.kernel = NULL; /* what op_free releases, until prepare sets it */
  op->number = sim_trace_next_op(sc);
  op->issuer = issuer_of(w);
  gcap_status st = prepare(sc, op, s, w);
  if (st != GCAP_SUCCESS) {
    op_free(sc, op);
    return st;
  }
  if (s->tail) s->tail->next = op;
  else s->head = op;
  s->tail = op;
  s->issued++;
  sc->stats.ops_deferred++;
  return GCAP_SUCCESS;
}

/* ------------------------------------------------------------------ running */

static const char *op_name(const struct sim_op *op) {
  static const char *const names[] = {
      [SIM_WORK_COPY] = "memcpy",         [SIM_WORK_FILL] = "memset",     [SIM_WORK_HOST] = "host",
      [SIM_WORK_RECORD] = "event record", [SIM_WORK_WAIT] = "event wait", [SIM_WORK_FREE] = "free",
      [SIM_WORK_LAUNCH] = "graph launch"};
  return op->kind == SIM_WORK_KERNEL ? op->u.kernel->info.name : names[op->kind];
}

/* What must be reached before s's first operation may start. */
static const struct sim_mark *blocker(const struct sim_stream *s) {
  const struct sim_op *op = s->head;
  if (op->kind == SIM_WORK_WAIT && op->u.record && !sim_mark_reached(&op->u.record->at)) return &op->u.record->at;
  if (op->kind != SIM_WORK_LAUNCH || op->u.launch->started) return NULL;
  const struct sim_launch_op *lo = op->u.launch;
  if (!sim_mark_reached(&lo->after)) return &lo->after;
  for (size_t i = 0; i < lo->num_waits; i++)
    if (!sim_mark_reached(&lo->waits[i]->at)) return &lo->waits[i]->at;
  return NULL;
}

static void want(const struct sim_mark *m) {
  if (sim_mark_reached(m)) return;
  struct sim_stream *s = m->tl->owner; /* a stream with work left is alive */
  if (s->need < m->seq) s->need = m->seq;
}

static bool wanted(const struct sim_stream *s) { return s->head && s->tl->done < s->need; }

/*
 * The streams whose first operation may run now and is needed; raises the needs of the
 * streams those operations wait for until nothing changes.
 */
static size_t gather_ready(struct sim_context *sc) {
  for (;;) {
    size_t n = 0;
    bool raised = false;
    for (struct sim_stream *s = sc->streams; s; s = s->next) {
      if (!wanted(s)) continue;
      const struct sim_mark *b = blocker(s);
      if (!b) { /* of the streams that may run, only the most urgent are ready */
        if (n > 0 && s->priority < sc->ready[0]->priority) n = 0;
        if (n == 0 || s->priority == sc->ready[0]->priority) sc->ready[n++] = s;
      } else if (b->tl->owner->need < b->seq) {
        want(b);
        raised = true;
      }
    }
    if (!raised) return n;
  }
}

static uint64_t next_random(uint64_t *state) { /* splitmix64 */
  uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

static gcap_status run_op(struct sim_context *sc, struct sim_stream *s, struct sim_op *op) {
  switch (op->kind) {
  case SIM_WORK_COPY: return sim_run_checked_copy(sc, &op->u.copy);
  case SIM_WORK_FILL: return sim_run_checked_fill(sc, &op->u.fill);
  case SIM_WORK_KERNEL: return sim_run_checked_kernel(sc, &op->u.kernel->launch);
  case SIM_WORK_HOST: sim_run_host(sc, op->u.host.fn, op->u.host.user_data); return GCAP_SUCCESS;
  case SIM_WORK_RECORD: op->u.record->ran_at = sim_trace_now(sc); return GCAP_SUCCESS;
  case SIM_WORK_WAIT:
    if (sc->trace && op->u.record) sim_trace_arrow(sc, op->u.record, s->number, op->number);
    return GCAP_SUCCESS;
  case SIM_WORK_FREE: run_free(sc, op, s->number); return GCAP_SUCCESS;
  default: return GCAP_SUCCESS;
  }
}

static void complete(struct sim_context *sc, struct sim_stream *s) {
  struct sim_op *op = s->head;
  s->head = op->next;
  if (!s->head) s->tail = NULL;
  s->tl->done++;
  op_free(sc, op);
}

/* Names the failed operation and the call that issued it, keeping the detail. */
static gcap_status failed(const struct sim_stream *s, const struct sim_op *op, gcap_status st) {
  if (op->kind == SIM_WORK_LAUNCH)
    return gcap__fail_context(st, "graph launch %llu (operation %llu, issued by %s on stream %u) failed when it ran",
                              (unsigned long long)op->u.launch->launch, (unsigned long long)op->number, op->issuer,
                              s->number);
  return gcap__fail_context(st, "operation %llu (%s, issued by %s on stream %u) failed when it ran",
                            (unsigned long long)op->number, op_name(op), op->issuer, s->number);
}

/* One step of a launch: one of its nodes; the launch completes with its last node. */
static gcap_status step_launch(struct sim_context *sc, struct sim_stream *s, struct sim_op *op) {
  struct sim_launch_op *lo = op->u.launch;
  struct sim_launch_ctx lc = {lo->exec, lo->plan, lo->launch, s->number, lo->done};
  if (!lo->started) {
    lo->started = true;
    sim_launch_start(sc, &lc);
  }
  bool finished = false;
  gcap_status st = sim_launch_step(sc, &lc, &finished);
  if (st != GCAP_SUCCESS) {
    st = failed(s, op, st);
    sim_launch_abandon(sc, &lc);
    finished = true;
  }
  if (finished && lo->done) lo->done->ran_at = sim_trace_now(sc);
  if (finished) complete(sc, s);
  return st;
}

static gcap_status step(struct sim_context *sc, struct sim_stream *s) {
  struct sim_op *op = s->head;
  if (op->kind == SIM_WORK_LAUNCH) return step_launch(sc, s, op);
  double start = sc->trace ? sim_trace_now(sc) : 0;
  gcap_status st = run_op(sc, s, op);
  if (sc->trace && op->kind != SIM_WORK_WAIT) sim_trace_stream_op(sc, op_name(op), s->number, op->number, start);
  if (st != GCAP_SUCCESS) st = failed(s, op, st);
  complete(sc, s);
  return st;
}

static bool all_reached(const struct sim_mark *marks, size_t count) {
  for (size_t i = 0; i < count; i++)
    if (!sim_mark_reached(&marks[i])) return false;
  return true;
}

static void forget_needs(struct sim_context *sc) {
  for (struct sim_stream *s = sc->streams; s; s = s->next) s->need = 0;
}

/* Hands over a failure kept by a call that could not report it. */
static gcap_status take_unreported(struct sim_context *sc) {
  gcap_status st = sc->unreported;
  if (st == GCAP_SUCCESS) return st;
  sc->unreported = GCAP_SUCCESS;
  return gcap__fail(st, "%s", sc->unreported_message);
}

/*
 * Runs steps toward the marks; max_steps 0: until they are reached. A failing operation is
 * consumed and the rest goes on, so a wait always ends; the first failure is returned.
 */
/* The first failure of a drain, with its message, kept while later work runs. */
struct first_failure {
  gcap_status status;
  char message[sizeof(((struct sim_context *)0)->unreported_message)];
};

static void note(struct first_failure *f, gcap_status st) {
  if (st == GCAP_SUCCESS || f->status != GCAP_SUCCESS) return;
  f->status = st;
  snprintf(f->message, sizeof f->message, "%s", gcap_last_error_message());
}

/*
 * Whether s's next operation may run with no new choice to make: s is the only stream that may
 * run, and only a completed record or launch can let another stream run (every wait is for one).
 */
static bool runs_alone_next(const struct sim_stream *s) {
  const struct sim_op *op = s->head;
  return op && s->tl->done < s->need && op->kind != SIM_WORK_WAIT && op->kind != SIM_WORK_RECORD &&
         op->kind != SIM_WORK_LAUNCH;
}

/*
 * Runs steps toward the marks; max_steps 0: until they are reached. A failing operation is
 * consumed and the rest goes on, so a wait always ends; the first failure is returned.
 */
static gcap_status run_until(struct sim_context *sc, const struct sim_mark *marks, size_t count, size_t max_steps) {
  struct first_failure first = {GCAP_SUCCESS, ""};
  sc->draining = true;
  sc->drainer = pthread_self();
  sim_work_begin(sc);
  for (size_t steps = 0; !all_reached(marks, count) && (max_steps == 0 || steps < max_steps); steps++) {
    for (size_t i = 0; i < count; i++) want(&marks[i]);
    size_t n = gather_ready(sc);
    if (n == 0) { /* cannot happen: waits only ever wait for work issued before them */
      note(&first, gcap__fail(GCAP_ERROR_ILLEGAL_STATE, "the simulator's queued work waits for itself"));
      break;
    }
    struct sim_stream *s = sc->ready[n == 1 ? 0 : next_random(&sc->interleave_rng) % n];
    note(&first, step(sc, s));
    while (n == 1 && max_steps == 0 && runs_alone_next(s)) note(&first, step(sc, s));
  }
  sim_work_end(sc);
  sc->draining = false;
  forget_needs(sc);
  if (sc->freed_count && sim_queues_empty(sc)) release_freed(sc);
  sim_wake(sc);
  if (first.status != GCAP_SUCCESS) gcap__restore_message(first.message);
  return first.status;
}

/* Another thread's drain runs first: the marks may be reached when it ends. */
gcap_status sim_drain(struct sim_context *sc, const struct sim_mark *marks, size_t count) {
  sim_wait_drain(sc);
  gcap_status st = sc->draining ? GCAP_SUCCESS : run_until(sc, marks, count, 0);
  gcap_status kept = take_unreported(sc);
  return st != GCAP_SUCCESS ? st : kept;
}

gcap_status sim_advance(struct sim_context *sc, const struct sim_mark *m) {
  gcap_status kept = take_unreported(sc);
  if (kept != GCAP_SUCCESS) return kept;
  if (sim_mark_reached(m)) return GCAP_SUCCESS;
  if (sc->draining) return GCAP_ERROR_NOT_READY;
  gcap_status st = run_until(sc, m, 1, 1);
  return st != GCAP_SUCCESS ? st : GCAP_ERROR_NOT_READY;
}

gcap_status sim_drain_all(struct sim_context *sc) {
  sim_wait_drain(sc); /* before the marks are taken: streams may come and go meanwhile */
  size_t count = 0;
  for (struct sim_stream *s = sc->streams; s; s = s->next) count++;
  struct sim_mark *marks = count ? gcap__calloc(count, sizeof *marks) : NULL;
  if (count && !marks) return gcap__fail(GCAP_ERROR_OUT_OF_MEMORY, "no memory to wait for the streams");
  size_t i = 0;
  for (struct sim_stream *s = sc->streams; s; s = s->next) marks[i++] = sim_stream_end(s);
  gcap_status st = sim_drain(sc, marks, count);
  gcap__free(marks);
  return st;
}

void sim_keep_unreported(struct sim_context *sc, gcap_status st) {
  if (st == GCAP_SUCCESS || sc->unreported != GCAP_SUCCESS) return;
  sc->unreported = st;
  const char *m = gcap_last_error_message();
  const char *colon = strstr(m, ": "); /* drop the name of the call that ran it: the reporter names itself */
  snprintf(sc->unreported_message, sizeof sc->unreported_message, "work run by an earlier call failed: %s",
           colon ? colon + 2 : m);
}

/* The stream's work has all run (the core waits first); waits on it may still hold its timeline. */
void sim_queue_stream_gone(struct sim_context *sc, struct sim_stream *s) {
  for (struct sim_stream **p = &sc->streams; *p; p = &(*p)->next)
    if (*p == s) {
      *p = s->next;
      break;
    }
  while (s->head) { /* none after a wait, which runs everything; a queued free still frees */
    if (s->head->kind == SIM_WORK_FREE && s->head->u.free.ptr) sim_free_now(sc, s->head->u.free.ptr);
    complete(sc, s);
  }
  s->tl->owner = NULL;
  sim_timeline_release(s->tl);
}
