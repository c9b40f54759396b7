#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#include "dispatch.h"
#include "capture.h"
#include "pool.h"
#include "stream_race.h"

/* ------------------------------------------------------------ allocation table */

size_t gcap__first_above(const void *items, size_t count, size_t stride, uintptr_t p) {
  size_t lo = 0, hi = count;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    uintptr_t base;
    memcpy(&base, (const char *)items + mid * stride, sizeof base);
    if (base <= p) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/* Index of the first allocation whose base is above p. */
static size_t upper_bound(const struct gcap__alloc_table *t, uintptr_t p) {
  return gcap__first_above(t->items, t->count, sizeof *t->items, p);
}

static const struct gcap__allocation *table_find(const struct gcap__alloc_table *t, const void *p) {
  uintptr_t addr = (uintptr_t)p;
  size_t i = upper_bound(t, addr);
  if (i == 0) return NULL;
  const struct gcap__allocation *a = &t->items[i - 1];
  return addr - a->base < a->bytes ? a : NULL;
}

const struct gcap__allocation *gcap__find_allocation(const struct gcap_context *ctx, const void *p) {
  return table_find(&ctx->allocs, p);
}

/*
 * Every context's allocations, so that a pointer into another context's memory is refused as
 * such instead of being taken for ordinary host memory (which a copy would then read past the
 * end of). Its lock is taken last, after a context lock, and never held while taking another.
 */
static struct gcap__alloc_table every_context;
static pthread_mutex_t every_context_lock = PTHREAD_MUTEX_INITIALIZER;
/* Bumped by every free in any context, so executables know when to re-check their ranges. */
static atomic_uint_fast64_t free_epoch;

uint64_t gcap__alloc_epoch(void) { return atomic_load(&free_epoch); }

static int table_insert(struct gcap__alloc_table *t, const struct gcap_context *owner, void *p, size_t bytes,
                        enum gcap__alloc_kind kind) {
  if (gcap__grow((void **)&t->items, &t->cap, t->count + 1, sizeof *t->items) != 0) return -1;
  size_t i = upper_bound(t, (uintptr_t)p);
  memmove(&t->items[i + 1], &t->items[i], (t->count - i) * sizeof *t->items);
  t->items[i] = (struct gcap__allocation){(uintptr_t)p, bytes, kind, NULL, owner, false, false};
  t->count++;
  return 0;
}

static void table_remove_at(struct gcap__alloc_table *t, size_t i) {
  memmove(&t->items[i], &t->items[i + 1], (t->count - i - 1) * sizeof *t->items);
  t->count--;
}

/* By owner too: another context may already have been given the same address back. */
static void forget_everywhere(const struct gcap_context *owner, uintptr_t base) {
  pthread_mutex_lock(&every_context_lock);
  for (size_t i = upper_bound(&every_context, base); i-- > 0 && every_context.items[i].base == base;) {
    if (every_context.items[i].owner != owner) continue;
    table_remove_at(&every_context, i);
    break;
  }
  if (every_context.count == 0) {
    gcap__free(every_context.items);
    memset(&every_context, 0, sizeof every_context);
  }
  pthread_mutex_unlock(&every_context_lock);
}

/* An allocation enters its context's table and the table of every context, or neither. */
static int record_allocation(struct gcap_context *ctx, void *p, size_t bytes, enum gcap__alloc_kind kind) {
  if (table_insert(&ctx->allocs, ctx, p, bytes, kind) != 0) return -1;
  pthread_mutex_lock(&every_context_lock);
  int failed = table_insert(&every_context, ctx, p, bytes, kind);
  pthread_mutex_unlock(&every_context_lock);
  if (failed) table_remove_at(&ctx->allocs, (size_t)(gcap__find_allocation(ctx, p) - ctx->allocs.items));
  else gcap__allocs_changed(ctx);
  return failed;
}

static void table_remove(struct gcap__alloc_table *t, const struct gcap__allocation *a) {
  uintptr_t base = a->base;
  struct gcap_context *owner = (struct gcap_context *)a->owner;
  gcap__sr_allocation_gone(owner, base, a->bytes);
  table_remove_at(t, (size_t)(a - t->items));
  forget_everywhere(owner, base);
  atomic_fetch_add(&free_epoch, 1);
  gcap__allocs_changed(owner);
}

int gcap__alloc_table_insert(struct gcap_context *ctx, void *p, size_t bytes, struct gcap__galloc *graph) {
  if (record_allocation(ctx, p, bytes, GCAP__ALLOC_DEVICE) != 0) return -1;
  ((struct gcap__allocation *)gcap__find_allocation(ctx, p))->graph = graph;
  return 0;
}

int gcap__alloc_table_insert_module(struct gcap_context *ctx, void *p, size_t bytes, bool managed) {
  if (record_allocation(ctx, p, bytes, GCAP__ALLOC_DEVICE) != 0) return -1;
  struct gcap__allocation *a = (struct gcap__allocation *)gcap__find_allocation(ctx, p);
  a->module_var = true;
  a->managed = managed;
  return 0;
}

void gcap__alloc_table_erase(struct gcap_context *ctx, const void *p) {
  const struct gcap__allocation *a = gcap__find_allocation(ctx, p);
  if (a) table_remove(&ctx->allocs, a);
}

void gcap__alloc_table_free(struct gcap__alloc_table *t) {
  for (size_t i = 0; i < t->count; i++) forget_everywhere(t->items[i].owner, t->items[i].base);
  if (t->count) atomic_fetch_add(&free_epoch, 1);
  gcap__free(t->items);
  memset(t, 0, sizeof *t);
}

/* The allocation holding p: this context's, else (copied into *other, on the simulator) another context's. */
static const struct gcap__allocation *find_any(const struct gcap_context *ctx, const void *p,
                                               struct gcap__allocation *other) {
  const struct gcap__allocation *a = gcap__find_allocation(ctx, p);
  if (a || !ctx->ops->knows_all_device_memory) return a; /* on CUDA such a pointer goes to the driver */
  pthread_mutex_lock(&every_context_lock);
  const struct gcap__allocation *e = table_find(&every_context, p);
  if (e) *other = (struct gcap__allocation){e->base, e->bytes, e->kind, NULL, e->owner, e->module_var, e->managed};
  pthread_mutex_unlock(&every_context_lock);
  return e ? other : NULL;
}

static gcap_status check_own(const struct gcap_context *ctx, const struct gcap__allocation *a, const void *p,
                             const char *what) {
  if (!a || a->owner == ctx) return GCAP_SUCCESS;
  return gcap__fail(GCAP_ERROR_INVALID_VALUE, "%s %p is inside an allocation of another context (%p)", what, p,
                    (const void *)a->owner);
}

/* --------------------------------------------------------------- range checks */

static bool is_device(const struct gcap__allocation *a) { return a && a->kind == GCAP__ALLOC_DEVICE; }

static gcap_status check_fits(const struct gcap__allocation *a, const void *p, size_t bytes, const char *what) {
  if (!a) return GCAP_SUCCESS;
  size_t room = a->bytes - ((uintptr_t)p - a->base);
  if (bytes <= room) return GCAP_SUCCESS;
  return gcap__fail(GCAP_ERROR_INVALID_VALUE,
                    "%s range [%p, +%zu bytes) runs %zu bytes past the end of its allocation [%p, +%zu bytes)", what, p,
                    bytes, bytes - room, (void *)a->base, a->bytes);
}

/* The pointer's side must be device memory (want_device) or host memory; managed memory is both. */
static gcap_status check_side(const struct gcap_context *ctx, const struct gcap__allocation *a, const void *p,
                              bool want_device, const char *what, const char *kind_name) {
  if (a && a->managed) return GCAP_SUCCESS;
  if (want_device && !is_device(a)) {
    if (a)
      return gcap__fail(GCAP_ERROR_INVALID_VALUE, "%s %p is page-locked host memory but kind %s needs device memory",
                        what, p, kind_name);
    if (ctx->ops->knows_all_device_memory)
      return gcap__fail(GCAP_ERROR_INVALID_VALUE, "%s %p is not inside a live device allocation (kind %s)", what, p,
                        kind_name);
  }
  if (!want_device && is_device(a))
    return gcap__fail(GCAP_ERROR_INVALID_VALUE, "%s %p is device memory but kind %s needs host memory", what, p,
                      kind_name);
  return GCAP_SUCCESS;
}

static const char *kind_name(gcap_memcpy_kind k) {
  static const char *const names[] = {"HOST_TO_HOST", "HOST_TO_DEVICE", "DEVICE_TO_HOST", "DEVICE_TO_DEVICE",
                                      "DEFAULT"};
  return (unsigned)k <= GCAP_MEMCPY_DEFAULT ? names[k] : "?";
}

gcap_status gcap__check_copy(const struct gcap_context *ctx, struct gcap__copy *c, bool allow_empty) {
  if ((unsigned)c->kind > GCAP_MEMCPY_DEFAULT)
    return gcap__fail(GCAP_ERROR_INVALID_VALUE, "kind %d is not a gcap_memcpy_kind", (int)c->kind);
  if (gcap__copy_empty(c)) {
    c->resolved = c->kind == GCAP_MEMCPY_DEFAULT ? GCAP_MEMCPY_HOST_TO_HOST : c->kind;
    return allow_empty ? GCAP_SUCCESS
                       : gcap__fail(GCAP_ERROR_INVALID_VALUE, c->bytes ? "the copy has no rows" : "bytes is 0");
  }
  if (!c->dst) return gcap__fail(GCAP_ERROR_INVALID_VALUE, "dst is NULL");
  if (!c->src) return gcap__fail(GCAP_ERROR_INVALID_VALUE, "src is NULL");
  size_t dst_span = gcap__copy_span(c, 1),
         src_span = gcap__copy_span(c, 0); /* a shape's rows are checked by their span */
  if ((uintptr_t)c->dst + dst_span < (uintptr_t)c->dst || (uintptr_t)c->src + src_span < (uintptr_t)c->src)
    return gcap__fail(GCAP_ERROR_INVALID_VALUE, "a range of %zu bytes wraps the address space",
                      dst_span > src_span ? dst_span : src_span);
  struct gcap__allocation dst_other, src_other;
  const struct gcap__allocation *da = find_any(ctx, c->dst, &dst_other);
  const struct gcap__allocation *sa = find_any(ctx, c->src, &src_other);
  gcap_status st = check_own(ctx, da, c->dst, "dst");
  if (st == GCAP_SUCCESS) st = check_own(ctx, sa, c->src, "src");
  if (st != GCAP_SUCCESS) return st;
  gcap_memcpy_kind k = c->kind;
  if (k == GCAP_MEMCPY_DEFAULT) {
    static const gcap_memcpy_kind inferred[2][2] = {
        {GCAP_MEMCPY_HOST_TO_HOST, GCAP_MEMCPY_DEVICE_TO_HOST},
        {GCAP_MEMCPY_HOST_TO_DEVICE, GCAP_MEMCPY_DEVICE_TO_DEVICE},
    };
    k = inferred[is_device(da)][is_device(sa)];
  }
  bool dst_device = k == GCAP_MEMCPY_HOST_TO_DEVICE || k == GCAP_MEMCPY_DEVICE_TO_DEVICE;
  bool src_device = k == GCAP_MEMCPY_DEVICE_TO_HOST || k == GCAP_MEMCPY_DEVICE_TO_DEVICE;
  st = check_side(ctx, da, c->dst, dst_device, "dst", kind_name(c->kind));
  if (st == GCAP_SUCCESS) st = check_side(ctx, sa, c->src, src_device, "src", kind_name(c->kind));
  if (st == GCAP_SUCCESS) st = check_fits(da, c->dst, dst_span, "dst");
  if (st == GCAP_SUCCESS) st = check_fits(sa, c->src, src_span, "src");
  if (st == GCAP_SUCCESS) c->resolved = k;
  return st;
}

gcap_status gcap__check_fill(const struct gcap_context *ctx, const struct gcap__fill *f, bool allow_empty) {
  unsigned es = f->element_size;
  if (es != 1 && es != 2 && es != 4)
    return gcap__fail(GCAP_ERROR_INVALID_VALUE, "element_size %u is not 1, 2 or 4", es);
  if (f->width == 0 && allow_empty) return GCAP_SUCCESS;
  if (f->width == 0) return gcap__fail(GCAP_ERROR_INVALID_VALUE, "width is 0");
  if (f->height == 0) return gcap__fail(GCAP_ERROR_INVALID_VALUE, "height is 0");
  if (!f->dst) return gcap__fail(GCAP_ERROR_INVALID_VALUE, "dst is NULL");
  if ((uintptr_t)f->dst % es != 0)
    return gcap__fail(GCAP_ERROR_INVALID_VALUE, "dst %p is not aligned to its %u-byte elements", f->dst, es);
  if (f->width > SIZE_MAX / es) return gcap__fail(GCAP_ERROR_INVALID_VALUE, "width %zu is too large", f->width);
  size_t row = f->width * es;
  size_t extent = row;
  if (f->height > 1) {
    if (f->pitch < row)
      return gcap__fail(GCAP_ERROR_INVALID_VALUE, "pitch %zu is below width * element_size = %zu", f->pitch, row);
    if (f->pitch % es != 0) /* cuMemsetD2D16/32: every row starts aligned to its elements */
      return gcap__fail(GCAP_ERROR_INVALID_VALUE, "pitch %zu is not a multiple of the %u-byte element size", f->pitch,
                        es);
    if ((f->height - 1) > (SIZE_MAX - row) / f->pitch)
      return gcap__fail(GCAP_ERROR_INVALID_VALUE, "pitch * height overflows");
    extent = (f->height - 1) * f->pitch + row;
  }
  if ((uintptr_t)f->dst + extent < (uintptr_t)f->dst)
    return gcap__fail(GCAP_ERROR_INVALID_VALUE, "a range of %zu bytes wraps the address space", extent);
  struct gcap__allocation other;
  const struct gcap__allocation *a = find_any(ctx, f->dst, &other);
  gcap_status st = check_own(ctx, a, f->dst, "dst");
  if (st != GCAP_SUCCESS) return st;
  if (a && a->kind != GCAP__ALLOC_DEVICE)
    return gcap__fail(GCAP_ERROR_INVALID_VALUE, "dst %p is page-locked host memory; fills need device memory", f->dst);
  if (!a && ctx->ops->knows_all_device_memory)
    return gcap__fail(GCAP_ERROR_INVALID_VALUE, "dst %p is not inside a live device allocation", f->dst);
  return check_fits(a, f->dst, extent, "dst");
}

/* ------------------------------------------------------------ synchronous API */

/* Context lock held; arguments checked. `managed`: device memory from gcap_mem_alloc_managed. */
static gcap_status allocate_locked(gcap_context *ctx, size_t bytes, void **out, enum gcap__alloc_kind kind,
                                   bool managed) {
  void *p = NULL;
  gcap_status st = managed                      ? gcap__backend_mem_alloc_managed(ctx, bytes, &p)
                   : kind == GCAP__ALLOC_DEVICE ? gcap__backend_mem_alloc(ctx, bytes, &p)
                                                : gcap__backend_host_alloc(ctx, bytes, &p);
  if (st == GCAP_SUCCESS && record_allocation(ctx, p, bytes, kind) != 0) {
    if (kind == GCAP__ALLOC_DEVICE) gcap__backend_mem_free(ctx, p);
    else gcap__backend_host_free(ctx, p);
    st = gcap__fail(GCAP_ERROR_OUT_OF_MEMORY, "no memory to record the allocation");
  }
  if (st == GCAP_SUCCESS && managed) ((struct gcap__allocation *)gcap__find_allocation(ctx, p))->managed = true;
  if (st == GCAP_SUCCESS) *out = p;
  return st;
}

static gcap_status allocate(gcap_context *ctx, size_t bytes, void **out, enum gcap__alloc_kind kind, bool managed) {
  if (out) *out = NULL;
  gcap_status st = gcap__check_context(ctx, "ctx");
  if (st == GCAP_SUCCESS) st = gcap__refuse_in_host_callback();
  if (st != GCAP_SUCCESS) return st;
  if (bytes == 0) return gcap__fail(GCAP_ERROR_INVALID_VALUE, "bytes is 0");
  if (!out) return gcap__fail(GCAP_ERROR_INVALID_VALUE, managed ? "out is NULL" : "the output pointer is NULL");
  gcap__lock(ctx);
  st = gcap__capture_prohibit("ctx", ctx);
  if (st == GCAP_SUCCESS) st = allocate_locked(ctx, bytes, out, kind, managed);
  gcap__unlock(ctx);
  return st;
}

/* The checks of a free: p must start a live allocation of `kind`. */
static gcap_status check_free(gcap_context *ctx, const void *p, enum gcap__alloc_kind kind,
                              const struct gcap__allocation **out) {
  const char *what = kind == GCAP__ALLOC_DEVICE ? "device" : "page-locked host";
  const struct gcap__allocation *a = gcap__find_allocation(ctx, p);
  if (a && a->kind == kind && a->base != (uintptr_t)p)
    return gcap__fail(GCAP_ERROR_INVALID_VALUE, "%p is inside the %s allocation at %p, not its start", p, what,
                      (void *)a->base);
  if (!a || a->kind != kind)
    return gcap__fail(GCAP_ERROR_INVALID_VALUE, "%p is not a live %s allocation of this context", p, what);
  if (a->module_var)
    return gcap__fail(GCAP_ERROR_INVALID_VALUE,
                      "%p is a module variable (gcap_module_get_global); it goes with its module", p);
  if (a->graph && a->graph->freed_in_graph)
    return gcap__fail(GCAP_ERROR_INVALID_VALUE,
                      "%p is a graph allocation its own graph frees; it cannot be freed outside it", p);
  if (a->graph && !a->graph->live)
    return gcap__fail(GCAP_ERROR_INVALID_VALUE, "graph allocation %p is not allocated now (launch its graph first)", p);
  *out = a;
  return GCAP_SUCCESS;
}

/*
 * Context lock held, checks passed. A graph allocation held by a graph is only marked freed: its
 * memory stays the graph's. `stream`: the backend stream of gcap_mem_free_async, else NULL.
 */
static gcap_status free_locked(gcap_context *ctx, const struct gcap__allocation *a, void *stream) {
  if (a->graph) {
    gcap__galloc_free_outside(a->graph);
    return GCAP_SUCCESS;
  }
  void *p = (void *)a->base;
  size_t bytes = a->bytes;
  gcap_status st = a->kind == GCAP__ALLOC_HOST ? gcap__backend_host_free(ctx, p)
                   : stream                    ? gcap__backend_mem_free_async(ctx, stream, p, a->bytes)
                                               : gcap__backend_mem_free(ctx, p);
  if (st == GCAP_SUCCESS) {
    ctx->freed[ctx->freed_next++ % 16] = (struct gcap__freed_range){(uintptr_t)p, bytes};
    table_remove(&ctx->allocs, gcap__find_allocation(ctx, p)); /* the table may have moved meanwhile */
  }
  return st;
}

/* -------------------------------------------------- what running kernels see */

struct gcap__alloc_snap {
  struct gcap__alloc_snap *next; /* in ctx->retired */
  uint64_t version;
  struct gcap__freed_range freed[16];
  unsigned freed_next;
  size_t count;
  struct gcap__mem_view items[]; /* sorted by base */
};

static struct gcap__alloc_snap *snap_of(const struct gcap_context *ctx) {
  return atomic_load_explicit(&((struct gcap_context *)ctx)->snap, memory_order_acquire);
}

bool gcap__alloc_snap_refresh(struct gcap_context *ctx) {
  struct gcap__alloc_snap *old = snap_of(ctx);
  if (old && old->version == ctx->allocs_version) return true;
  const struct gcap__alloc_table *t = &ctx->allocs;
  struct gcap__alloc_snap *s = gcap__malloc(sizeof *s + t->count * sizeof s->items[0]);
  if (!s) return false;
  s->next = NULL;
  s->version = ctx->allocs_version;
  memcpy(s->freed, ctx->freed, sizeof s->freed);
  s->freed_next = ctx->freed_next;
  s->count = t->count;
  for (size_t i = 0; i < t->count; i++)
    s->items[i] = (struct gcap__mem_view){t->items[i].base, t->items[i].bytes,
                                          t->items[i].kind == GCAP__ALLOC_HOST ? GCAP__MEM_HOST : GCAP__MEM_DEVICE};
  atomic_store_explicit(&ctx->snap, s, memory_order_release);
  if (old && ctx->kernels_out > 0) {
    old->next = ctx->retired;
    ctx->retired = old;
  } else {
    gcap__free(old);
  }
  return true;
}

/* Without memory for a new snapshot, running kernels keep the old one: it lacks only what came since. */
void gcap__allocs_changed(struct gcap_context *ctx) {
  ctx->allocs_version++;
  if (ctx->kernels_out > 0) (void)gcap__alloc_snap_refresh(ctx);
}

void gcap__alloc_snap_free(struct gcap_context *ctx, bool all) {
  while (ctx->retired) {
    struct gcap__alloc_snap *s = ctx->retired;
    ctx->retired = s->next;
    gcap__free(s);
  }
  if (!all) return;
  gcap__free(snap_of(ctx));
  atomic_store(&ctx->snap, NULL);
}

/* Reads the snapshot only: other threads may allocate while a kernel runs (gcap__work_release). */
bool gcap__memory_view(const struct gcap__backend_ctx *b, uintptr_t p, struct gcap__mem_view *out) {
  const struct gcap__alloc_snap *s = snap_of(b->core);
  size_t count = s ? s->count : 0;
  size_t i = s ? gcap__first_above(s->items, count, sizeof s->items[0], p) : 0;
  *out = (struct gcap__mem_view){0, 0, GCAP__MEM_NONE};
  if (i > 0 && p - s->items[i - 1].base < s->items[i - 1].bytes) {
    *out = s->items[i - 1];
    return true;
  }
  for (unsigned k = 0; s && k < 16; k++) {
    const struct gcap__freed_range *f = &s->freed[(s->freed_next - 1 - k) % 16];
    if (f->bytes && p - f->base < f->bytes) {
      *out = (struct gcap__mem_view){f->base, f->bytes, GCAP__MEM_FREED};
      return false;
    }
  }
  const struct gcap__mem_view *below = i > 0 ? &s->items[i - 1] : NULL, *above = i < count ? &s->items[i] : NULL;
  const struct gcap__mem_view *near = below;
  if (!below || (above && above->base - p < p - (below->base + below->bytes))) near = above;
  if (near) *out = *near;
  return false;
}

bool gcap__memory_view_locked(const struct gcap__backend_ctx *b, uintptr_t p, struct gcap__mem_view *out) {
  if (gcap__alloc_snap_refresh(b->core)) return gcap__memory_view(b, p, out);
  *out = (struct gcap__mem_view){0, 0, GCAP__MEM_NONE};
  return false;
}

static gcap_status release(gcap_context *ctx, void *p, enum gcap__alloc_kind kind) {
  gcap_status st = gcap__check_context(ctx, "ctx");
  if (st == GCAP_SUCCESS) st = gcap__refuse_in_host_callback();
  if (st != GCAP_SUCCESS) return st;
  gcap__lock(ctx);
  const struct gcap__allocation *a = NULL;
  if (p) st = check_free(ctx, p, kind, &a);
  if (st == GCAP_SUCCESS) st = gcap__capture_prohibit("ctx", ctx); /* freeing NULL does nothing, but is still a free */
  if (st == GCAP_SUCCESS && a) st = free_locked(ctx, a, NULL);
  if (st == GCAP_SUCCESS && a) gcap__sr_host_waited_all(ctx); /* a blocking free waits for the device (CUDA) */
  gcap__unlock(ctx);
  return st;
}

/* -------------------------------------------------- stream-ordered allocation */

static gcap_status capture_alloc(struct gcap_stream *s, size_t bytes, void **dptr) {
  struct gcap__galloc *a = NULL;
  gcap_status st = gcap__galloc_new(s->ctx, gcap__capture_pool(s), bytes, &a);
  if (st != GCAP_SUCCESS) {
    bool record;
    return gcap__capture_route(s, st, &record);
  }
  a->owner_serial = s->seq->graph->serial;
  void *ptr = a->ptr;
  st = gcap__capture_record_value(s, GCAP_NODE_MEM_ALLOC, &a, sizeof a); /* takes the reference, even on failure */
  if (st == GCAP_SUCCESS) *dptr = ptr;
  return st;
}

gcap_status gcap_mem_alloc_async(gcap_stream *s, size_t bytes, void **dptr) {
  GCAP_ENTER();
  if (dptr) *dptr = NULL;
  gcap_status st = gcap__check_stream(s, "stream");
  if (st == GCAP_SUCCESS) st = gcap__refuse_in_host_callback();
  if (st != GCAP_SUCCESS) return st;
  gcap__lock(s->ctx);
  if (bytes == 0) st = gcap__fail(GCAP_ERROR_INVALID_VALUE, "bytes is 0");
  else if (!dptr) st = gcap__fail(GCAP_ERROR_INVALID_VALUE, "dptr is NULL");
  bool record = false;
  st = gcap__capture_route(s, st, &record);
  if (st == GCAP_SUCCESS)
    st = record ? capture_alloc(s, bytes, dptr) : allocate_locked(s->ctx, bytes, dptr, GCAP__ALLOC_DEVICE, false);
  gcap__unlock(s->ctx);
  return st;
}

gcap_status gcap__check_graph_free(struct gcap_context *ctx, const void *p, struct gcap__galloc **out) {
  const struct gcap__allocation *a = gcap__find_allocation(ctx, p);
  if (!a || !a->graph || a->base != (uintptr_t)p)
    return gcap__fail(GCAP_ERROR_INVALID_VALUE, "%p is not an address an allocation node returned", p);
  if (a->graph->freed_in_graph || a->graph->freed_elsewhere)
    return gcap__fail(GCAP_ERROR_INVALID_VALUE, "graph allocation %p already has a free node", p);
  *out = a->graph;
  return GCAP_SUCCESS;
}

static gcap_status capture_free(struct gcap_stream *s, struct gcap__galloc *a) {
  gcap__galloc_retain(a); /* the node's, taken over by the recording even when it fails */
  gcap_status st = gcap__capture_record_value(s, GCAP_NODE_MEM_FREE, &a, sizeof a);
  if (st != GCAP_SUCCESS) return st;
  gcap__galloc_mark_freed(a, s->seq->graph, true);
  return GCAP_SUCCESS;
}

/* An eager free writes the whole allocation, in stream order. */
static gcap_status free_eager(struct gcap_stream *s, const struct gcap__allocation *a) {
  gcap_status st = gcap__sr_free(s, a);
  return st == GCAP_SUCCESS ? free_locked(s->ctx, a, s->impl) : st;
}

gcap_status gcap_mem_free_async(gcap_stream *s, void *dptr) {
  GCAP_ENTER_RELEASE();
  gcap_status st = gcap__check_stream(s, "stream");
  if (st == GCAP_SUCCESS) st = gcap__refuse_in_host_callback();
  if (st != GCAP_SUCCESS) return st;
  struct gcap_context *ctx = s->ctx;
  gcap__lock(ctx);
  struct gcap__galloc *g = NULL;
  const struct gcap__allocation *a = NULL;
  if (!dptr) st = gcap__fail(GCAP_ERROR_INVALID_VALUE, "dptr is NULL");
  else if (s->seq) st = gcap__check_graph_free(ctx, dptr, &g);
  else st = check_free(ctx, dptr, GCAP__ALLOC_DEVICE, &a);
  bool record = false;
  st = gcap__capture_route(s, st, &record);
  if (st == GCAP_SUCCESS) st = record ? capture_free(s, g) : free_eager(s, a);
  gcap__unlock(ctx);
  return st;
}

gcap_status gcap__mem_alloc_device(gcap_context *ctx, size_t bytes, void **dptr) {
  return allocate(ctx, bytes, dptr, GCAP__ALLOC_DEVICE, false);
}

gcap_status gcap_mem_alloc(gcap_context *ctx, size_t bytes, void **dptr) {
  GCAP_ENTER();
  return gcap__mem_alloc_device(ctx, bytes, dptr);
}

gcap_status gcap_mem_free(gcap_context *ctx, void *dptr) {
  GCAP_ENTER_RELEASE();
  return release(ctx, dptr, GCAP__ALLOC_DEVICE);
}

gcap_status gcap_mem_alloc_managed(gcap_context *ctx, size_t bytes, void **out) {
  GCAP_ENTER();
  return allocate(ctx, bytes, out, GCAP__ALLOC_DEVICE, true);
}

gcap_status gcap_host_alloc(gcap_context *ctx, size_t bytes, void **hptr) {
  GCAP_ENTER();
  return allocate(ctx, bytes, hptr, GCAP__ALLOC_HOST, false);
}

gcap_status gcap_host_free(gcap_context *ctx, void *hptr) {
  GCAP_ENTER_RELEASE();
  return release(ctx, hptr, GCAP__ALLOC_HOST);
}

gcap_status gcap_memcpy(gcap_context *ctx, void *dst, const void *src, size_t bytes, gcap_memcpy_kind kind) {
  GCAP_ENTER();
  gcap_status st = gcap__check_context(ctx, "ctx");
  if (st == GCAP_SUCCESS) st = gcap__refuse_in_host_callback();
  if (st != GCAP_SUCCESS) return st;
  struct gcap__copy c = {dst, src, bytes, kind, kind, NULL};
  gcap__lock(ctx);
  st = gcap__check_copy(ctx, &c, true);
  if (st == GCAP_SUCCESS) st = gcap__capture_prohibit("ctx", ctx);
  if (st == GCAP_SUCCESS && bytes > 0) st = gcap__sr_host_copy(ctx, &c);
  if (st == GCAP_SUCCESS && bytes > 0) st = gcap__backend_memcpy(ctx, NULL, &c);
  gcap__unlock(ctx);
  return st;
}

/* ------------------------------------------------------------ stream-ordered */

/* Eager work goes through the stream race check (a no-op without check_races). */
gcap_status gcap__copy_eager(struct gcap_stream *s, const struct gcap__copy *c) {
  gcap_status st = gcap__sr_copy(s, c);
  if (st == GCAP_SUCCESS) st = gcap__backend_memcpy(s->ctx, s->impl, c);
  gcap__sr_done(s->ctx, st);
  return st;
}

static gcap_status fill_eager(struct gcap_stream *s, const struct gcap__fill *f) {
  gcap_status st = gcap__sr_fill(s, f);
  if (st == GCAP_SUCCESS) st = gcap__backend_memset(s->ctx, s->impl, f);
  gcap__sr_done(s->ctx, st);
  return st;
}

gcap_status gcap__memcpy_async(struct gcap_stream *s, void *dst, const void *src, size_t bytes, gcap_memcpy_kind kind) {
  gcap_status st = gcap__check_stream(s, "stream");
  if (st == GCAP_SUCCESS) st = gcap__refuse_in_host_callback();
  if (st != GCAP_SUCCESS) return st;
  struct gcap_context *ctx = s->ctx;
  struct gcap__copy c = {dst, src, bytes, kind, kind, NULL};
  bool record = false;
  gcap__lock(ctx);
  st = gcap__check_copy(ctx, &c, true);
  if (st == GCAP_SUCCESS && s->seq && bytes > 0)
    st = gcap__check_body_copy(s->seq->graph, &c); /* capturing into a body */
  st = gcap__capture_route(s, st, &record);
  if (st == GCAP_SUCCESS && bytes > 0) {
    gcap_memcpy_node_params p = {dst, src, bytes, kind};
    st = record ? gcap__capture_record_value(s, GCAP_NODE_MEMCPY, &p, sizeof p) : gcap__copy_eager(s, &c);
  }
  gcap__unlock(ctx);
  return st;
}

gcap_status gcap_memcpy_async(gcap_stream *s, void *dst, const void *src, size_t bytes, gcap_memcpy_kind kind) {
  GCAP_ENTER();
  return gcap__memcpy_async(s, dst, src, bytes, kind);
}

gcap_status gcap__fill_async(struct gcap_stream *s, void *dst, uint32_t value, unsigned element_size, size_t count) {
  gcap_status st = gcap__check_stream(s, "stream");
  if (st == GCAP_SUCCESS) st = gcap__refuse_in_host_callback();
  if (st != GCAP_SUCCESS) return st;
  struct gcap_context *ctx = s->ctx;
  struct gcap__fill f = {dst, value, element_size, count, 1, count * element_size};
  bool record = false;
  gcap__lock(ctx);
  st = gcap__capture_route(s, gcap__check_fill(ctx, &f, true), &record);
  if (st == GCAP_SUCCESS && count > 0) {
    gcap_memset_node_params p = {dst, value, element_size, count, 1, count * element_size};
    st = record ? gcap__capture_record_value(s, GCAP_NODE_MEMSET, &p, sizeof p) : fill_eager(s, &f);
  }
  gcap__unlock(ctx);
  return st;
}

gcap_status gcap_memset_async(gcap_stream *s, void *dst, int value, size_t bytes) {
  GCAP_ENTER();
  return gcap__fill_async(s, dst, (uint32_t)value & 0xffu, 1, bytes);
}

gcap_status gcap_memset_d16_async(gcap_stream *s, void *dst, uint16_t value, size_t count) {
  GCAP_ENTER();
  return gcap__fill_async(s, dst, value, 2, count);
}

gcap_status gcap_memset_d32_async(gcap_stream *s, void *dst, uint32_t value, size_t count) {
  GCAP_ENTER();
  return gcap__fill_async(s, dst, value, 4, count);
}
