/*
 * The stream race check (simulator.md#stream-race-check). How it works:
 *
 * Every stream that did something gets a slot: an index into every clock. A clock says, per
 * slot, up to which tick the holder is ordered after that slot's operations. Issuing work on
 * stream S joins the host clock into S's clock (the host issued it after everything it waited
 * for) and gives the work the next tick of S's slot. Recording an event copies S's clock into
 * it; waiting on an event joins its clock into the waiting stream; every wait of the host
 * (synchronize, a successful query, a blocking free) joins into the host clock.
 *
 * Each operation leaves records (byte range, read or write, tick) in its slot's log, oldest
 * first (stream_race_log.c). New work on S is compared, for every other slot T, with T's records
 * newer than what S (with the host, the events a graph waits on and the executable's previous
 * launch) is ordered after: a suffix of T's log. Records the host clock has passed are ordered
 * before all future work and are dropped, so programs that synchronize keep few; work on S never
 * looks at S's own records. A record replaces the slot's previous one of the same bytes and
 * access, so repeating work on the same buffers without synchronizing does not pile records up.
 *
 * A slot freed by a destroyed stream is given to the next new stream with its tick count kept,
 * so ticks the clocks still hold keep meaning the old stream's work. Nothing here holds a
 * stream or event pointer beyond the object's life: records name their stream by slot, and a
 * kernel record holds its module as executables do.
 */
#include <stdlib.h>
#include <string.h>

#include "dispatch.h"
#include "exec.h"
#include "graph.h"
#include "pool.h"
#include "stream_race.h"
#include "stream_race_log.h"

#define SR_READ GCAP__SR_READ
#define SR_WRITE GCAP__SR_WRITE

struct sr_access {
  uintptr_t lo, hi; /* [lo, hi) */
  unsigned mode;    /* SR_READ, SR_WRITE or both */
};

struct sr_slot {
  const struct gcap_stream *stream; /* NULL: free */
  uint64_t *clock;                  /* races->cap entries */
  uint64_t last;                    /* the newest tick issued on this slot, by any stream that had it */
  uint64_t host_seen;               /* races->host_version when the host clock was last joined in */
  struct gcap__sr_log log;
};

/*
 * An executable's part: what its last launch was ordered after (CUDA orders every launch of an
 * executable after the previous ones), and what one launch touches: the union of its enabled
 * entries' accesses, and the events it waits on and records.
 */
struct gcap__sr_exec {
  struct gcap__sr_clock *after; /* its last launch's stream clock, with that launch */
  bool valid;                   /* the access list is made */
  uint64_t epoch;               /* gcap__alloc_epoch() when made: kernel arguments map to allocations */
  struct sr_access *acc;
  size_t count;
  struct gcap_event **waits, **records; /* held by the executable's plan */
  size_t num_waits, num_records;
};

/* An operation about to be issued. */
struct sr_issue {
  size_t slot;                      /* its stream's slot, or SIZE_MAX: none yet (or the host) */
  const struct gcap_stream *stream; /* NULL: the host */
  struct gcap_event *const *waits;  /* graph wait entries */
  size_t num_waits;
  const struct gcap__sr_clock *after; /* a graph launch: the executable's previous launch */
  struct gcap__sr_op op;
  const struct sr_access *acc;
  size_t count;
};

struct gcap__stream_races {
  struct sr_slot *slots;
  size_t count, cap; /* slots handed out (free ones included), and the length of every clock */
  uint64_t *host;
  uint64_t host_version; /* moves whenever the host clock does */
  uint64_t refused;
  struct sr_access small[2]; /* a copy's or fill's accesses */
  struct sr_access *scratch; /* an eager kernel's accesses */
  size_t scratch_cap;
  bool pending; /* checked, not yet done: `issue` waits for the work's outcome */
  struct sr_issue issue;
  struct gcap__sr_exec *pending_exec;
};

static gcap_status no_memory(void) {
  return gcap__fail(GCAP_ERROR_OUT_OF_MEMORY, "no memory for the stream race check");
}

/* ------------------------------------------------------------ the state */

gcap_status gcap__sr_context_init(struct gcap_context *ctx) {
  if (!gcap__backend_wants_race_check(ctx)) return GCAP_SUCCESS;
  ctx->races = gcap__calloc(1, sizeof *ctx->races);
  return ctx->races ? GCAP_SUCCESS : no_memory();
}

void gcap__sr_context_free(struct gcap_context *ctx) {
  struct gcap__stream_races *r = ctx->races;
  if (!r) return;
  for (size_t i = 0; i < r->count; i++) {
    gcap__free(r->slots[i].clock);
    gcap__sr_log_free(&r->slots[i].log);
  }
  gcap__free(r->slots);
  gcap__free(r->host);
  gcap__free(r->scratch);
  gcap__free(r);
  ctx->races = NULL;
}

uint64_t gcap__sr_refused(const struct gcap_context *ctx) { return ctx->races->refused; }

/* *clock grows to `cap` entries, the new ones 0. Entries past the old length are never in use. */
static int widen(uint64_t **clock, size_t old, size_t cap) {
  uint64_t *grown = gcap__realloc(*clock, cap * sizeof *grown);
  if (!grown) return -1;
  memset(grown + old, 0, (cap - old) * sizeof *grown);
  *clock = grown;
  return 0;
}

/* Room for more slots: every clock grows. A failure leaves some arrays longer than cap: harmless. */
static int grow_clocks(struct gcap__stream_races *r) {
  size_t cap = r->cap ? 2 * r->cap : 8;
  struct sr_slot *slots = gcap__realloc(r->slots, cap * sizeof *slots);
  if (!slots) return -1;
  memset(slots + r->cap, 0, (cap - r->cap) * sizeof *slots);
  r->slots = slots;
  if (widen(&r->host, r->cap, cap) != 0) return -1;
  for (size_t i = 0; i < r->count; i++)
    if (widen(&r->slots[i].clock, r->cap, cap) != 0) return -1;
  r->cap = cap;
  return 0;
}

/* A slot for s, which has none: a free one, else a new one. */
static gcap_status new_slot(struct gcap_stream *s, size_t *out) {
  struct gcap__stream_races *r = s->ctx->races;
  size_t i = 0;
  while (i < r->count && r->slots[i].stream) i++;
  if (i == r->cap && grow_clocks(r) != 0) return no_memory();
  struct sr_slot *sl = &r->slots[i];
  if (!sl->clock && !(sl->clock = gcap__calloc(r->cap, sizeof *sl->clock))) return no_memory();
  memset(sl->clock, 0, r->cap * sizeof *sl->clock);
  sl->stream = s;
  sl->host_seen = 0;
  if (i == r->count) r->count++;
  s->race_slot = i + 1;
  *out = i;
  return GCAP_SUCCESS;
}

/* s's slot, given to it at its first use. */
static inline gcap_status slot_of(struct gcap_stream *s, size_t *out) {
  if (!s->race_slot) return new_slot(s, out);
  *out = s->race_slot - 1;
  return GCAP_SUCCESS;
}

/* ------------------------------------------------------------ clocks */

static bool join(uint64_t *into, const uint64_t *from, size_t n) {
  bool moved = false;
  for (size_t i = 0; i < n; i++) {
    if (from[i] <= into[i]) continue;
    into[i] = from[i];
    moved = true;
  }
  return moved;
}

/* The event's clock when it is one a wait can use (a capture's record says nothing about eager work). */
static const struct gcap__sr_clock *usable_clock(const struct gcap_event *e) {
  return e->state == GCAP__EVENT_CAPTURED ? NULL : e->race_clock;
}

static size_t clock_len(const struct gcap__stream_races *r, const struct gcap__sr_clock *c) {
  return c->n < r->count ? c->n : r->count;
}

/* The host waited for what `clock` covers: records every future operation is ordered after go. */
static void host_join(struct gcap__stream_races *r, const uint64_t *clock, size_t n) {
  if (!join(r->host, clock, n)) return;
  r->host_version++;
  for (size_t i = 0; i < r->count; i++) gcap__sr_log_prune(&r->slots[i].log, r->host[i]);
}

/* A stream's clock catches up with the host's before it issues anything. */
static void catch_up(struct gcap__stream_races *r, struct sr_slot *sl) {
  if (sl->host_seen == r->host_version) return;
  join(sl->clock, r->host, r->count);
  sl->host_seen = r->host_version;
}

/* Up to which tick of slot t the operation is ordered after. */
static uint64_t ordered_upto(const struct gcap__stream_races *r, const struct sr_issue *is, size_t t) {
  uint64_t v = r->host[t];
  if (is->slot != SIZE_MAX && r->slots[is->slot].clock[t] > v) v = r->slots[is->slot].clock[t];
  for (size_t i = 0; i < is->num_waits; i++) {
    const struct gcap__sr_clock *c = usable_clock(is->waits[i]);
    if (c && t < c->n && c->v[t] > v) v = c->v[t];
  }
  if (is->after && t < is->after->n && is->after->v[t] > v) v = is->after->v[t];
  return v;
}

/* ------------------------------------------------------------ messages */

static const char *verb(unsigned mode, bool past) {
  if (mode == (SR_READ | SR_WRITE)) return past ? "read and wrote" : "reads and writes";
  if (mode == SR_WRITE) return past ? "wrote" : "writes";
  return past ? "read" : "reads";
}

/* "gcap_memset_async", "gcap_launch_kernel (kernel \"scale\")", "gcap_exec_launch (executable 0x...)". */
static void describe(const struct gcap__sr_op *op, char *buf, size_t size) {
  const struct gcap_kernel *k = op->what;
  if (op->kernel) snprintf(buf, size, "%s (kernel \"%s\")", op->func, k->name);
  else if (op->what) snprintf(buf, size, "%s (executable %p)", op->func, op->what);
  else snprintf(buf, size, "%s", op->func);
}

static gcap_status refuse(struct gcap__stream_races *r, const struct sr_issue *is, const struct sr_access *a,
                          const struct sr_slot *other, const struct gcap__sr_record *rec) {
  char mine[200], theirs[200];
  describe(&is->op, mine, sizeof mine);
  describe(&rec->op, theirs, sizeof theirs);
  const void *them = other->stream, *lo = (const void *)a->lo, *hi = (const void *)a->hi;
  const void *rlo = (const void *)rec->lo, *rhi = (const void *)rec->hi;
  r->refused++;
  if (!is->stream)
    return gcap__fail(GCAP_ERROR_INVALID_VALUE,
                      "%s %s [%p, %p) while %s on stream %p %s [%p, %p) with nothing ordering them: synchronize "
                      "stream %p (or an event recorded on it after %s) first",
                      mine, verb(a->mode, false), lo, hi, theirs, them, verb(rec->mode, true), rlo, rhi, them,
                      rec->op.func);
  const void *me = is->stream;
  return gcap__fail(GCAP_ERROR_INVALID_VALUE,
                    "%s on stream %p %s [%p, %p) while %s on stream %p %s [%p, %p) with nothing ordering them: record "
                    "an event on stream %p after %s and make stream %p wait on it (or synchronize stream %p first)",
                    mine, me, verb(a->mode, false), lo, hi, theirs, them, verb(rec->mode, true), rlo, rhi, them,
                    rec->op.func, me, them);
}

/* ------------------------------------------------------------ the check */

/* Dead records (mode 0) conflict with nothing. */
static bool conflicts(const struct gcap__sr_record *rec, const struct sr_access *a) {
  return rec->mode && rec->lo < a->hi && a->lo < rec->hi && ((rec->mode | a->mode) & SR_WRITE);
}

/* The newest record of l that is not ordered before the operation and conflicts with one of its accesses. */
static const struct gcap__sr_record *find_conflict(const struct gcap__sr_log *l, uint64_t upto,
                                                   const struct sr_issue *is, const struct sr_access **with) {
  for (size_t i = l->end; i-- > l->head && l->rec[i].tick > upto;)
    for (size_t j = 0; j < is->count; j++)
      if (conflicts(&l->rec[i], &is->acc[j])) return *with = &is->acc[j], &l->rec[i];
  return NULL;
}

static gcap_status check(struct gcap__stream_races *r, const struct sr_issue *is) {
  for (size_t t = 0; t < r->count; t++) {
    const struct sr_slot *sl = &r->slots[t];
    if (gcap__sr_log_empty(&sl->log) || t == is->slot) continue;
    uint64_t upto = ordered_upto(r, is, t);
    if (gcap__sr_log_newest_tick(&sl->log) <= upto) continue;
    const struct sr_access *with = NULL;
    const struct gcap__sr_record *rec = find_conflict(&sl->log, upto, is, &with);
    if (rec) return refuse(r, is, with, sl, rec);
  }
  return GCAP_SUCCESS;
}

/* Checks the operation on s described in r->issue; on success it is pending until gcap__sr_commit. */
static gcap_status check_and_hold(struct gcap_stream *s) {
  struct gcap__stream_races *r = s->ctx->races;
  struct sr_issue *is = &r->issue;
  gcap_status st = slot_of(s, &is->slot);
  if (st == GCAP_SUCCESS && gcap__sr_log_reserve(&r->slots[is->slot].log, is->count) != 0) st = no_memory();
  if (st == GCAP_SUCCESS) st = check(r, is);
  r->pending = st == GCAP_SUCCESS;
  return st;
}

/* r->issue describes an operation of `func` on s (NULL: the host) touching acc[0, count). */
static struct sr_issue *issue_on(struct gcap__stream_races *r, const struct gcap_stream *s, const char *func,
                                 const struct sr_access *acc, size_t count) {
  struct sr_issue *is = &r->issue;
  is->slot = SIZE_MAX;
  is->stream = s;
  is->waits = NULL;
  is->num_waits = 0;
  is->after = NULL;
  is->op = (struct gcap__sr_op){func, NULL, false};
  is->acc = acc;
  is->count = count;
  return is;
}

/* Each side's span: an eager 2-D copy's rows are checked together, with what lies between them. */
static void copy_accesses(const struct gcap__copy *c, struct sr_access acc[2]) {
  acc[0] = (struct sr_access){(uintptr_t)c->src, (uintptr_t)c->src + gcap__copy_span(c, 0), SR_READ};
  acc[1] = (struct sr_access){(uintptr_t)c->dst, (uintptr_t)c->dst + gcap__copy_span(c, 1), SR_WRITE};
}

gcap_status gcap__sr_check_copy(struct gcap_stream *s, const struct gcap__copy *c) {
  struct gcap__stream_races *r = s->ctx->races;
  copy_accesses(c, r->small);
  issue_on(r, s, "gcap_memcpy_async", r->small, 2);
  return check_and_hold(s);
}

gcap_status gcap__sr_check_host_copy(struct gcap_context *ctx, const struct gcap__copy *c) {
  struct gcap__stream_races *r = ctx->races;
  copy_accesses(c, r->small);
  return check(r, issue_on(r, NULL, "gcap_memcpy", r->small, 2));
}

gcap_status gcap__sr_check_fill(struct gcap_stream *s, const struct gcap__fill *f) {
  static const char *const names[] = {"gcap_memset_async", "gcap_memset_d16_async", "gcap_memset_d32_async"};
  struct gcap__stream_races *r = s->ctx->races;
  size_t row = f->width * f->element_size; /* eager fills are one row */
  r->small[0] = (struct sr_access){(uintptr_t)f->dst, (uintptr_t)f->dst + row, SR_WRITE};
  issue_on(r, s, names[f->element_size / 2], r->small, 1);
  return check_and_hold(s);
}

gcap_status gcap__sr_check_free(struct gcap_stream *s, const struct gcap__allocation *a) {
  struct gcap__stream_races *r = s->ctx->races;
  r->small[0] = (struct sr_access){a->base, a->base + a->bytes, SR_WRITE};
  struct sr_issue *is = issue_on(r, s, "gcap_mem_free_async", r->small, 1);
  is->slot = s->race_slot ? s->race_slot - 1 : SIZE_MAX; /* a stream without a slot is ordered after the host only */
  return check(r, is);
}

/* As race analysis reads kernels (race.c): each pointer-sized argument not NONE, the whole allocation it points into.
 */
static unsigned kernel_param_mode(gcap_param_access how) {
  if (how == GCAP_ACCESS_READ) return SR_READ;
  return how == GCAP_ACCESS_WRITE ? SR_WRITE : SR_READ | SR_WRITE;
}

static gcap_status push_access(struct sr_access **v, size_t *count, size_t *cap, struct sr_access a) {
  if (gcap__grow((void **)v, cap, *count + 1, sizeof **v) != 0) return no_memory();
  (*v)[(*count)++] = a;
  return GCAP_SUCCESS;
}

static gcap_status kernel_accesses(const struct gcap_context *ctx, const struct gcap_kernel *k, void *const *args,
                                   struct sr_access **v, size_t *count, size_t *cap) {
  gcap_status st = GCAP_SUCCESS;
  for (size_t i = 0; st == GCAP_SUCCESS && i < k->info.num_params; i++) {
    gcap_param_access how = k->param_access[i];
    if (k->param_sizes[i] != sizeof(void *) || how == GCAP_ACCESS_NONE) continue;
    void *value;
    memcpy(&value, args[i], sizeof value);
    const struct gcap__allocation *a = gcap__find_allocation(ctx, value);
    if (a) st = push_access(v, count, cap, (struct sr_access){a->base, a->base + a->bytes, kernel_param_mode(how)});
  }
  return st;
}

gcap_status gcap__sr_check_kernel(struct gcap_stream *s, const struct gcap_kernel *k, void *const *args) {
  struct gcap__stream_races *r = s->ctx->races;
  size_t count = 0;
  gcap_status st = kernel_accesses(s->ctx, k, args, &r->scratch, &count, &r->scratch_cap);
  if (st != GCAP_SUCCESS) return st;
  struct sr_issue *is = issue_on(r, s, "gcap_launch_kernel", r->scratch, count);
  is->op = (struct gcap__sr_op){"gcap_launch_kernel", k, true};
  return check_and_hold(s);
}

/* ------------------------------------------------------------ graph launches */

/* The access list goes (`all`: with the rest, the executable is gone). */
void gcap__sr_exec_free(struct gcap_exec *x, bool all) {
  struct gcap__sr_exec *c = x->race_acc;
  if (!c) return;
  gcap__free(c->acc);
  gcap__free(c->waits);
  gcap__free(c->records);
  c->acc = NULL, c->waits = c->records = NULL;
  c->count = c->num_waits = c->num_records = 0;
  c->valid = false;
  if (!all) return;
  gcap__free(c->after);
  gcap__free(c);
  x->race_acc = NULL;
}

struct acc_builder {
  struct gcap__sr_exec *c;
  size_t acc_cap, waits_cap, records_cap;
};

static gcap_status push_event(struct gcap_event ***v, size_t *count, size_t *cap, struct gcap_event *e) {
  if (gcap__grow((void **)v, cap, *count + 1, sizeof **v) != 0) return no_memory();
  (*v)[(*count)++] = e;
  return GCAP_SUCCESS;
}

static gcap_status fill_accesses(struct acc_builder *b, const struct gcap__fill *f) {
  size_t row = f->width * f->element_size;
  struct gcap__sr_exec *c = b->c;
  gcap_status st = GCAP_SUCCESS;
  for (size_t i = 0; st == GCAP_SUCCESS && i < f->height; i++) {
    uintptr_t lo = (uintptr_t)f->dst + i * f->pitch;
    st = push_access(&c->acc, &c->count, &b->acc_cap, (struct sr_access){lo, lo + row, SR_WRITE});
  }
  return st;
}

/* A graph's copy, row by row (one range per side when its rows touch). */
static gcap_status copy_row_accesses(struct acc_builder *b, const struct gcap__copy *cp) {
  struct gcap__sr_exec *c = b->c;
  gcap_status st = GCAP_SUCCESS;
  if (gcap__copy_empty(cp)) return st;
  for (int dst = 0; dst < 2; dst++) {
    uintptr_t base = dst ? (uintptr_t)cp->dst : (uintptr_t)cp->src;
    for (size_t r = 0, bytes = 0; st == GCAP_SUCCESS && r < gcap__copy_side_rows(cp, dst); r++) {
      uintptr_t lo = base + gcap__copy_side_row(cp, dst, r, &bytes);
      st = push_access(&c->acc, &c->count, &b->acc_cap, (struct sr_access){lo, lo + bytes, dst ? SR_WRITE : SR_READ});
    }
  }
  return st;
}

static gcap_status entry_accesses(struct acc_builder *b, const struct gcap_context *ctx,
                                  const struct gcap__plan_node *pn) {
  struct gcap__sr_exec *c = b->c;
  switch (pn->type) {
  case GCAP_NODE_KERNEL: {
    const struct gcap_kernel *k = GCAP__CONTAINER(pn->u.kernel.kernel, struct gcap_kernel, info);
    return kernel_accesses(ctx, k, pn->u.kernel.args, &c->acc, &c->count, &b->acc_cap);
  }
  case GCAP_NODE_MEMCPY: return copy_row_accesses(b, &pn->u.copy);
  case GCAP_NODE_MEMSET: return fill_accesses(b, &pn->u.fill);
  case GCAP_NODE_MEM_ALLOC:
  case GCAP_NODE_MEM_FREE: {
    uintptr_t lo = (uintptr_t)pn->u.mem->ptr;
    return push_access(&c->acc, &c->count, &b->acc_cap, (struct sr_access){lo, lo + pn->u.mem->bytes, SR_WRITE});
  }
  case GCAP_NODE_EVENT_WAIT: return push_event(&c->waits, &c->num_waits, &b->waits_cap, pn->u.event.handle);
  case GCAP_NODE_EVENT_RECORD: return push_event(&c->records, &c->num_records, &b->records_cap, pn->u.event.handle);
  default: return GCAP_SUCCESS;
  }
}

static int by_mode_then_address(const void *x, const void *y) {
  const struct sr_access *a = x, *b = y;
  if (a->mode != b->mode) return a->mode < b->mode ? -1 : 1;
  return a->lo < b->lo ? -1 : a->lo > b->lo;
}

/* The union: reads and writes each merged into disjoint ranges (a read-write access counts as a write). */
static void merge_accesses(struct gcap__sr_exec *c) {
  for (size_t i = 0; i < c->count; i++)
    if (c->acc[i].mode & SR_WRITE) c->acc[i].mode = SR_WRITE;
  if (c->count > 1) qsort(c->acc, c->count, sizeof *c->acc, by_mode_then_address); /* acc is NULL when empty */
  size_t n = 0;
  for (size_t i = 0; i < c->count; i++) {
    struct sr_access *last = n ? &c->acc[n - 1] : NULL;
    if (last && last->mode == c->acc[i].mode && c->acc[i].lo <= last->hi) {
      if (c->acc[i].hi > last->hi) last->hi = c->acc[i].hi;
      continue;
    }
    c->acc[n++] = c->acc[i];
  }
  c->count = n;
}

/* A clock with room for every slot (capacity only: its entries keep their meaning). */
static gcap_status reserve_clock(const struct gcap__stream_races *r, struct gcap__sr_clock **clock) {
  struct gcap__sr_clock *c = *clock;
  if (c && c->cap >= r->cap) return GCAP_SUCCESS;
  size_t old = c ? c->cap : 0;
  c = gcap__realloc(c, sizeof *c + r->cap * sizeof *c->v);
  if (!c) return no_memory();
  memset(c->v + old, 0, (r->cap - old) * sizeof *c->v);
  if (!*clock) c->n = 0; /* not set yet */
  c->cap = r->cap;
  *clock = c;
  return GCAP_SUCCESS;
}

/* x's part, its access list made again when memory was freed since (kernel arguments map to allocations). */
static gcap_status exec_accesses(struct gcap_exec *x, struct gcap__sr_exec **out) {
  struct gcap__sr_exec *c = x->race_acc;
  if (!c && !(c = x->race_acc = gcap__calloc(1, sizeof *c))) return no_memory();
  gcap_status st = reserve_clock(x->ctx->races, &c->after);
  if (st != GCAP_SUCCESS || (c->valid && c->epoch == gcap__alloc_epoch())) return *out = c, st;
  gcap__sr_exec_free(x, false);
  struct acc_builder b = {c, 0, 0, 0};
  for (size_t i = 0; st == GCAP_SUCCESS && i < x->plan.count; i++)
    if (!x->plan.nodes[i].disabled) st = entry_accesses(&b, x->ctx, &x->plan.nodes[i]);
  if (st != GCAP_SUCCESS) {
    gcap__sr_exec_free(x, false);
    return st;
  }
  merge_accesses(c);
  c->valid = true;
  c->epoch = gcap__alloc_epoch();
  *out = c;
  return GCAP_SUCCESS;
}

gcap_status gcap__sr_check_launch(struct gcap_exec *x, struct gcap_stream *s) {
  struct gcap__stream_races *r = s->ctx->races;
  struct gcap__sr_exec *c = NULL;
  size_t slot = 0;
  gcap_status st = slot_of(s, &slot); /* first: it may widen the clocks the others must match */
  if (st == GCAP_SUCCESS) st = exec_accesses(x, &c);
  for (size_t i = 0; st == GCAP_SUCCESS && i < c->num_records; i++) st = reserve_clock(r, &c->records[i]->race_clock);
  if (st != GCAP_SUCCESS) return st;
  struct sr_issue *is = issue_on(r, s, "gcap_exec_launch", c->acc, c->count);
  is->waits = c->waits;
  is->num_waits = c->num_waits;
  is->after = c->after;
  is->op.what = x;
  st = check_and_hold(s);
  if (st == GCAP_SUCCESS) r->pending_exec = c;
  return st;
}

/* ------------------------------------------------------------ recording */

static void add_records(struct sr_slot *sl, const struct sr_issue *is, uint64_t tick) {
  for (size_t i = 0; i < is->count; i++) {
    const struct sr_access *a = &is->acc[i];
    gcap__sr_log_append(&sl->log, &(struct gcap__sr_record){a->lo, a->hi, tick, is->op, a->mode});
  }
}

/* *c = clock (its room was reserved). */
static void set_clock(const struct gcap__stream_races *r, struct gcap__sr_clock *c, const uint64_t *clock) {
  memcpy(c->v, clock, r->cap * sizeof *clock);
  c->n = r->cap;
}

void gcap__sr_commit(struct gcap_context *ctx, gcap_status st) {
  struct gcap__stream_races *r = ctx->races;
  if (!r->pending) return;
  r->pending = false;
  struct gcap__sr_exec *c = r->pending_exec;
  r->pending_exec = NULL;
  if (st != GCAP_SUCCESS) return;
  const struct sr_issue *is = &r->issue;
  struct sr_slot *sl = &r->slots[is->slot];
  catch_up(r, sl);
  for (size_t i = 0; i < is->num_waits; i++) {
    const struct gcap__sr_clock *w = usable_clock(is->waits[i]);
    if (w) join(sl->clock, w->v, clock_len(r, w));
  }
  if (is->after) join(sl->clock, is->after->v, clock_len(r, is->after));
  uint64_t tick = ++sl->last;
  sl->clock[is->slot] = tick;
  add_records(sl, is, tick);
  if (!c) return;
  for (size_t i = 0; i < c->num_records; i++) set_clock(r, c->records[i]->race_clock, sl->clock);
  set_clock(r, c->after, sl->clock);
}

/* ------------------------------------------------------------ ordering */

gcap_status gcap__sr_prepare_stream(struct gcap_stream *s) {
  size_t slot;
  return slot_of(s, &slot);
}

gcap_status gcap__sr_prepare_record(struct gcap_event *e, struct gcap_stream *s) {
  size_t slot;
  gcap_status st = slot_of(s, &slot);
  return st == GCAP_SUCCESS ? reserve_clock(s->ctx->races, &e->race_clock) : st;
}

void gcap__sr_recorded(struct gcap_event *e, struct gcap_stream *s) {
  struct gcap__stream_races *r = s->ctx->races;
  struct sr_slot *sl = &r->slots[s->race_slot - 1];
  catch_up(r, sl);
  set_clock(r, e->race_clock, sl->clock);
}

void gcap__sr_waited(struct gcap_stream *s, const struct gcap_event *e) {
  struct gcap__stream_races *r = s->ctx->races;
  const struct gcap__sr_clock *c = usable_clock(e);
  if (c) join(r->slots[s->race_slot - 1].clock, c->v, clock_len(r, c));
}

void gcap__sr_stream_synced(struct gcap_stream *s) {
  gcap__lock(s->ctx);
  struct gcap__stream_races *r = s->ctx->races;
  if (s->race_slot) host_join(r, r->slots[s->race_slot - 1].clock, r->count);
  gcap__unlock(s->ctx);
}

void gcap__sr_event_synced(struct gcap_event *e) {
  gcap__lock(e->ctx);
  struct gcap__stream_races *r = e->ctx->races;
  const struct gcap__sr_clock *c = usable_clock(e);
  if (c) host_join(r, c->v, clock_len(r, c));
  gcap__unlock(e->ctx);
}

void gcap__sr_all_synced(struct gcap_context *ctx) {
  gcap__lock(ctx);
  struct gcap__stream_races *r = ctx->races;
  for (size_t i = 0; i < r->count; i++)
    if (r->slots[i].stream) host_join(r, r->slots[i].clock, r->count);
  gcap__unlock(ctx);
}

/* The stream's work was waited for (gcap_stream_destroy synchronizes it): the host is after all of it. */
void gcap__sr_stream_gone(struct gcap_stream *s) {
  gcap__lock(s->ctx);
  struct gcap__stream_races *r = s->ctx->races;
  struct sr_slot *sl = &r->slots[s->race_slot - 1];
  host_join(r, sl->clock, r->count);
  gcap__sr_log_clear(&sl->log);
  sl->stream = NULL;
  s->race_slot = 0;
  gcap__unlock(s->ctx);
}

void gcap__sr_forget(const struct gcap_context *ctx, uintptr_t base, size_t bytes) {
  struct gcap__stream_races *r = ctx->races;
  for (size_t i = 0; i < r->count; i++) gcap__sr_log_forget(&r->slots[i].log, base, base + bytes);
}
