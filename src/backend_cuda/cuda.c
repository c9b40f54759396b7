/*
 * The CUDA driver backend: every op of the table on the driver API. The core has checked every
 * argument; what fails here is the driver, and its CUresult becomes a gcap status at this boundary.
 */
#include <assert.h>
#include <string.h>

#include "base/alloc.h"
#include "cuda_internal.h"
#include "base/error.h"

struct cuda_context *cuda_context_from(struct gcap__backend_ctx *b) {
  assert(b->ops == &gcap__cuda_ops);
  return (struct cuda_context *)b;
}

gcap_status cuda_enter(struct cuda_context *c, struct cuda_scope *scope) {
  *scope = (struct cuda_scope){c, NULL, false};
  /* Host functions run on a driver thread, and the driver forbids CUDA calls there. */
  if (gcap__in_host_callback())
    return gcap__fail(GCAP_ERROR_ILLEGAL_STATE,
                      "called from a host function, which runs on a CUDA driver thread where no CUDA call may be made");
  CUresult r = c->d->cuCtxGetCurrent(&scope->previous);
  if (r == CUDA_SUCCESS && scope->previous == c->ctx) return GCAP_SUCCESS;
  if (r != CUDA_SUCCESS) scope->previous = NULL;
  gcap_status st = gcap__cuda_check(c->d->cuCtxSetCurrent(c->ctx), "cuCtxSetCurrent");
  scope->switched = st == GCAP_SUCCESS;
  return st;
}

gcap_status cuda_leave(struct cuda_scope *scope, gcap_status st) {
  if (!scope->switched) return st;
  scope->switched = false;
  CUresult r = scope->c->d->cuCtxSetCurrent(scope->previous);
  if (st != GCAP_SUCCESS) return st;
  return gcap__cuda_check(r, "cuCtxSetCurrent(%p) to restore the calling thread's context", (void *)scope->previous);
}

/* Enters b's context or returns the failure: the first line of every op; LEAVE(st) returns through it. */
#define ENTER(b)                                                                                                       \
  struct cuda_context *c = cuda_context_from(b);                                                                       \
  struct cuda_scope scope;                                                                                             \
  do {                                                                                                                 \
    gcap_status entered = cuda_enter(c, &scope);                                                                       \
    if (entered != GCAP_SUCCESS) return entered;                                                                       \
  } while (0)
#define LEAVE(st) return cuda_leave(&scope, (st))

void CUDA_CB cuda_host_trampoline(void *record) {
  const struct cuda_host_call *call = record;
  gcap__run_host_fn(call->fn, call->user_data);
}

void cuda_free_host_calls(struct cuda_host_call *call) {
  while (call) {
    struct cuda_host_call *next = call->next;
    gcap__free(call);
    call = next;
  }
}

void cuda_adopt_orphans(struct cuda_context *c, struct cuda_host_call *calls) {
  if (!calls) return;
  struct cuda_host_call *tail = calls;
  while (tail->next) tail = tail->next;
  pthread_mutex_lock(&c->lock);
  tail->next = c->orphans;
  c->orphans = calls;
  pthread_mutex_unlock(&c->lock);
}

/* An eager host function's record, linked into its context until it has run. */
struct eager_call {
  struct cuda_host_call call; /* first: the trampoline reads it */
  struct cuda_context *c;
};

/* Runs on the driver thread: no CUDA call here, only the context's own lock, held briefly. */
static void CUDA_CB host_once(void *record) {
  struct eager_call *e = record;
  cuda_host_trampoline(&e->call);
  pthread_mutex_lock(&e->c->lock);
  e->call.prev->next = e->call.next;
  e->call.next->prev = e->call.prev;
  pthread_mutex_unlock(&e->c->lock);
  gcap__free(e);
}

static gcap_status cuda_available(void) {
  const struct gcap__cuda_driver *d = NULL;
  return gcap__cuda_driver(&d);
}

static gcap_status create_sync_stream(struct cuda_context *c) {
  struct cuda_scope scope;
  gcap_status st = cuda_enter(c, &scope);
  if (st != GCAP_SUCCESS) return st;
  st = gcap__cuda_check(c->d->cuStreamCreate(&c->sync_stream, CU_STREAM_NON_BLOCKING),
                        "cuStreamCreate (the context's stream for synchronous copies)");
  return cuda_leave(&scope, st);
}

static gcap_status cuda_context_create(const gcap_context_options *o, struct gcap__backend_ctx **out) {
  const struct gcap__cuda_driver *d = NULL;
  gcap_status st = gcap__cuda_driver(&d);
  if (st != GCAP_SUCCESS) return st;
  if (o->device < 0 || o->device >= d->device_count)
    return gcap__fail(GCAP_ERROR_INVALID_VALUE, "options->device %d: this machine has %d CUDA device(s)", o->device,
                      d->device_count);
  struct cuda_context *c = gcap__calloc(1, sizeof *c);
  if (!c) return gcap__fail(GCAP_ERROR_OUT_OF_MEMORY, "no memory for the CUDA context");
  c->base.ops = &gcap__cuda_ops;
  c->d = d;
  c->pending.next = c->pending.prev = &c->pending;
  pthread_mutex_init(&c->lock, NULL);
  bool retained = false;
  st = gcap__cuda_check(d->cuDeviceGet(&c->device, o->device), "cuDeviceGet(%d)", o->device);
  if (st == GCAP_SUCCESS)
    st = gcap__cuda_check(d->cuDevicePrimaryCtxRetain(&c->ctx, c->device), "cuDevicePrimaryCtxRetain(device %d)",
                          o->device);
  retained = st == GCAP_SUCCESS;
  if (st == GCAP_SUCCESS) st = create_sync_stream(c);
  if (st != GCAP_SUCCESS) {
    if (retained) d->cuDevicePrimaryCtxRelease(c->device);
    pthread_mutex_destroy(&c->lock);
    gcap__free(c);
    return st;
  }
  *out = &c->base;
  return GCAP_SUCCESS;
}

/*
 * The core has synchronized the context and destroyed its objects: eager host functions still
 * pending will never run (the context failed), and no launch can call an orphaned record.
 */
static void free_leftover_records(struct cuda_context *c) {
  while (c->pending.next != &c->pending) {
    struct cuda_host_call *call = c->pending.next;
    c->pending.next = call->next;
    gcap__free(call);
  }
  cuda_free_host_calls(c->orphans);
  c->orphans = NULL;
}

static void reap_late_frees(struct cuda_context *c, bool wait);

static void cuda_context_destroy(struct gcap__backend_ctx *b) {
  struct cuda_context *c = cuda_context_from(b);
  struct cuda_scope scope;
  if (cuda_enter(c, &scope) == GCAP_SUCCESS) {
    cuda_exec_destroy_deferred(c);
    reap_late_frees(c, true); /* the context goes: every queued free happens */
    c->d->cuStreamSynchronize(c->sync_stream);
    c->d->cuStreamDestroy(c->sync_stream);
    cuda_leave(&scope, GCAP_SUCCESS);
  }
  free_leftover_records(c);
  c->d->cuDevicePrimaryCtxRelease(c->device);
  gcap__free(c->streams);
  pthread_mutex_destroy(&c->lock);
  gcap__free(c);
}

/* One event per listed stream, recorded now: waiting on them needs no lock and no live stream. */
static gcap_status record_stream_marks(struct cuda_context *c, CUevent *marks, size_t *count) {
  gcap_status st = GCAP_SUCCESS;
  *count = 0;
  for (size_t i = 0; st == GCAP_SUCCESS && i < c->num_streams; i++) {
    if (c->streams[i].capturing) continue; /* its work is being recorded, not run */
    CUevent e = NULL;
    st = gcap__cuda_check(c->d->cuEventCreate(&e, CU_EVENT_DISABLE_TIMING), "cuEventCreate");
    if (st == GCAP_SUCCESS) {
      marks[(*count)++] = e;
      st = gcap__cuda_check(c->d->cuEventRecord(e, c->streams[i].stream), "cuEventRecord(stream %p)",
                            (void *)c->streams[i].stream);
    }
  }
  return st;
}

/*
 * The context's own streams, one by one, not cuCtxSynchronize: the primary context is shared by
 * every gcap context on the device (and other libraries), and a context-wide wait fails, without
 * waiting, while any of their streams captures, and invalidates those captures.
 */
static gcap_status cuda_context_synchronize(struct gcap__backend_ctx *b) {
  ENTER(b);
  pthread_mutex_lock(&c->lock);
  size_t n = c->num_streams;
  CUevent *marks = gcap__calloc(n ? n : 1, sizeof *marks);
  size_t count = 0;
  gcap_status st = marks ? record_stream_marks(c, marks, &count)
                         : gcap__fail(GCAP_ERROR_OUT_OF_MEMORY, "no memory to wait for %zu streams", n);
  pthread_mutex_unlock(&c->lock);
  for (size_t i = 0; i < count; i++) {
    if (st == GCAP_SUCCESS) st = gcap__cuda_check(c->d->cuEventSynchronize(marks[i]), "cuEventSynchronize");
    c->d->cuEventDestroy(marks[i]);
  }
  gcap__free(marks);
  if (st == GCAP_SUCCESS)
    st = gcap__cuda_check(c->d->cuStreamSynchronize(c->sync_stream), "cuStreamSynchronize (synchronous copies)");
  if (st == GCAP_SUCCESS) reap_late_frees(c, false);
  LEAVE(st);
}

/* Whether a stream of the context captures: no driver free may run then (it would invalidate the capture). */
static bool any_capturing(struct cuda_context *c) {
  pthread_mutex_lock(&c->lock);
  bool capturing = false;
  for (size_t i = 0; i < c->num_streams; i++) capturing |= c->streams[i].capturing;
  pthread_mutex_unlock(&c->lock);
  return capturing;
}

/* Frees the stream-ordered frees whose streams have got there (all of them with `wait`). */
static void reap_late_frees(struct cuda_context *c, bool wait) {
  if (!c->late_frees || (!wait && any_capturing(c))) return;
  for (struct cuda_late_free **at = &c->late_frees; *at;) {
    struct cuda_late_free *f = *at;
    CUresult r = wait ? c->d->cuEventSynchronize(f->reached) : c->d->cuEventQuery(f->reached);
    if (r == CUDA_ERROR_NOT_READY) {
      at = &f->next;
      continue;
    }
    c->d->cuMemFree(cuda_dptr(f->p));
    c->d->cuEventDestroy(f->reached);
    *at = f->next;
    gcap__free(f);
  }
}

/* Stream-ordered: an event marks the point, and the memory goes once the stream has reached it. */
static gcap_status cuda_mem_free_async(struct gcap__backend_ctx *b, void *stream, void *p, size_t bytes) {
  ENTER(b);
  (void)bytes;
  struct cuda_late_free *f = gcap__calloc(1, sizeof *f);
  if (!f) LEAVE(gcap__fail(GCAP_ERROR_OUT_OF_MEMORY, "no memory to queue the free of %p", p));
  gcap_status st = gcap__cuda_check(c->d->cuEventCreate(&f->reached, CU_EVENT_DISABLE_TIMING), "cuEventCreate");
  if (st == GCAP_SUCCESS)
    st = gcap__cuda_check(c->d->cuEventRecord(f->reached, stream), "cuEventRecord(stream %p) for the free of %p",
                          stream, p);
  if (st != GCAP_SUCCESS) {
    if (f->reached) c->d->cuEventDestroy(f->reached);
    gcap__free(f);
    LEAVE(st);
  }
  f->p = p;
  f->next = c->late_frees;
  c->late_frees = f;
  reap_late_frees(c, false);
  LEAVE(GCAP_SUCCESS);
}

static gcap_status cuda_mem_alloc(struct gcap__backend_ctx *b, size_t bytes, void **out) {
  ENTER(b);
  reap_late_frees(c, false); /* memory the streams are done with first */
  CUdeviceptr p = 0;
  gcap_status st = gcap__cuda_check(c->d->cuMemAlloc(&p, bytes), "cuMemAlloc(%zu bytes)", bytes);
  if (st == GCAP_SUCCESS) *out = (void *)(uintptr_t)p;
  LEAVE(st);
}

static gcap_status cuda_mem_free(struct gcap__backend_ctx *b, void *p) {
  ENTER(b);
  reap_late_frees(c, false);
  LEAVE(gcap__cuda_check(c->d->cuMemFree(cuda_dptr(p)), "cuMemFree(%p)", p));
}

static gcap_status cuda_mem_alloc_managed(struct gcap__backend_ctx *b, size_t bytes, void **out) {
  ENTER(b);
  if (!c->d->cuMemAllocManaged) LEAVE(gcap__fail(GCAP_ERROR_NOT_SUPPORTED, "the CUDA driver has no cuMemAllocManaged"));
  reap_late_frees(c, false);
  CUdeviceptr p = 0;
  gcap_status st = gcap__cuda_check(c->d->cuMemAllocManaged(&p, bytes, CU_MEM_ATTACH_GLOBAL),
                                    "cuMemAllocManaged(%zu bytes, CU_MEM_ATTACH_GLOBAL)", bytes);
  if (st == GCAP_SUCCESS) *out = (void *)(uintptr_t)p;
  LEAVE(st);
}

static gcap_status cuda_host_alloc(struct gcap__backend_ctx *b, size_t bytes, void **out) {
  ENTER(b);
  LEAVE(gcap__cuda_check(c->d->cuMemAllocHost(out, bytes), "cuMemAllocHost(%zu bytes)", bytes));
}

static gcap_status cuda_host_free(struct gcap__backend_ctx *b, void *p) {
  ENTER(b);
  LEAVE(gcap__cuda_check(c->d->cuMemFreeHost(p), "cuMemFreeHost(%p)", p));
}

static struct cuda_stream_entry *find_stream(struct cuda_context *c, CUstream s) {
  for (size_t i = 0; i < c->num_streams; i++)
    if (c->streams[i].stream == s) return &c->streams[i];
  return NULL;
}

static gcap_status list_stream(struct cuda_context *c, CUstream s) {
  pthread_mutex_lock(&c->lock);
  gcap_status st = GCAP_SUCCESS;
  if (c->num_streams == c->cap_streams) {
    size_t cap = c->cap_streams ? 2 * c->cap_streams : 8;
    struct cuda_stream_entry *grown = gcap__realloc(c->streams, cap * sizeof *grown);
    if (grown) c->streams = grown, c->cap_streams = cap;
    else st = gcap__fail(GCAP_ERROR_OUT_OF_MEMORY, "no memory to list %zu streams", cap);
  }
  if (st == GCAP_SUCCESS) c->streams[c->num_streams++] = (struct cuda_stream_entry){s, false};
  pthread_mutex_unlock(&c->lock);
  return st;
}

static void unlist_stream(struct cuda_context *c, CUstream s) {
  pthread_mutex_lock(&c->lock);
  struct cuda_stream_entry *e = find_stream(c, s);
  if (e) *e = c->streams[--c->num_streams];
  pthread_mutex_unlock(&c->lock);
}

static void mark_capturing(struct cuda_context *c, CUstream s, bool capturing) {
  pthread_mutex_lock(&c->lock);
  struct cuda_stream_entry *e = find_stream(c, s);
  if (e) e->capturing = capturing;
  pthread_mutex_unlock(&c->lock);
}

/* Every gcap stream is non-blocking: the core orders the legacy stream and blocking streams itself. */
static gcap_status cuda_stream_create(struct gcap__backend_ctx *b, int priority, void **out) {
  ENTER(b);
  CUstream s = NULL;
  gcap_status st = gcap__cuda_check(c->d->cuStreamCreateWithPriority(&s, CU_STREAM_NON_BLOCKING, priority),
                                    "cuStreamCreateWithPriority");
  if (st == GCAP_SUCCESS) st = list_stream(c, s);
  if (st == GCAP_SUCCESS) *out = s;
  else if (s) c->d->cuStreamDestroy(s);
  LEAVE(st);
}

/* Void ops inside a host function make no driver call: the core refuses those calls first. */
static void cuda_stream_destroy(struct gcap__backend_ctx *b, void *stream) {
  struct cuda_context *c = cuda_context_from(b);
  struct cuda_scope scope;
  unlist_stream(c, stream);
  if (cuda_enter(c, &scope) != GCAP_SUCCESS) return;
  c->d->cuStreamDestroy(stream);
  cuda_leave(&scope, GCAP_SUCCESS);
}

static gcap_status cuda_stream_synchronize(struct gcap__backend_ctx *b, void *stream) {
  ENTER(b);
  gcap_status st = gcap__cuda_check(c->d->cuStreamSynchronize(stream), "cuStreamSynchronize(%p)", stream);
  if (st == GCAP_SUCCESS) reap_late_frees(c, false);
  LEAVE(st);
}

static gcap_status cuda_stream_query(struct gcap__backend_ctx *b, void *stream) {
  ENTER(b);
  CUresult r = c->d->cuStreamQuery(stream);
  if (r == CUDA_ERROR_NOT_READY) LEAVE(gcap__fail(GCAP_ERROR_NOT_READY, "stream %p has work pending", stream));
  LEAVE(gcap__cuda_check(r, "cuStreamQuery(%p)", stream));
}

/*
 * A synchronous copy is complete on return. cuMemcpy is not (from pageable memory it may return
 * once the data is staged, and device-to-device it does not wait at all), so the copy runs on
 * the context's private stream, which is then waited for.
 */
static gcap_status cuda_memcpy(struct gcap__backend_ctx *b, void *stream, const struct gcap__copy *cp) {
  ENTER(b);
  CUstream on = stream ? stream : c->sync_stream;
  gcap_status st;
  if (cp->shape) { /* unified addressing tells the driver which side is where, as for cuMemcpyAsync */
    CUDA_MEMCPY3D p;
    memset(&p, 0, sizeof p);
    p.srcMemoryType = p.dstMemoryType = CU_MEMORYTYPE_UNIFIED;
    p.srcDevice = cuda_dptr(cp->src), p.dstDevice = cuda_dptr(cp->dst);
    cuda_set_copy_shape(&p, cp);
    st = gcap__cuda_check(c->d->cuMemcpy3DAsync(&p, on), "cuMemcpy3DAsync(%p <- %p, %zu x %zu x %zu)", cp->dst, cp->src,
                          cp->bytes, cp->shape->height, cp->shape->depth);
  } else {
    CUresult r = c->d->cuMemcpyAsync(cuda_dptr(cp->dst), cuda_dptr(cp->src), cp->bytes, on);
    st = gcap__cuda_check(r, "cuMemcpyAsync(%p <- %p, %zu bytes)", cp->dst, cp->src, cp->bytes);
  }
  if (st == GCAP_SUCCESS && !stream)
    st = gcap__cuda_check(c->d->cuStreamSynchronize(on), "cuStreamSynchronize (synchronous copy)");
  LEAVE(st);
}

gcap_status cuda_check_fill_alignment(const struct gcap__fill *f) {
  unsigned es = f->element_size;
  if ((uintptr_t)f->dst % es != 0)
    return gcap__fail(GCAP_ERROR_INVALID_VALUE, "dst %p is not aligned to its %u-byte elements", f->dst, es);
  if (f->height > 1 && f->pitch % es != 0)
    return gcap__fail(GCAP_ERROR_INVALID_VALUE,
                      "pitch %zu is not a multiple of the %u-byte element size, which the CUDA driver needs for "
                      "2-D fills",
                      f->pitch, es);
  return GCAP_SUCCESS;
}

static CUresult fill_1d(const struct gcap__cuda_driver *d, const struct gcap__fill *f, CUstream s) {
  switch (f->element_size) {
  case 1: return d->cuMemsetD8Async(cuda_dptr(f->dst), (unsigned char)f->value, f->width, s);
  case 2: return d->cuMemsetD16Async(cuda_dptr(f->dst), (unsigned short)f->value, f->width, s);
  default: return d->cuMemsetD32Async(cuda_dptr(f->dst), f->value, f->width, s);
  }
}

static CUresult fill_2d(const struct gcap__cuda_driver *d, const struct gcap__fill *f, CUstream s) {
  switch (f->element_size) {
  case 1: return d->cuMemsetD2D8Async(cuda_dptr(f->dst), f->pitch, (unsigned char)f->value, f->width, f->height, s);
  case 2: return d->cuMemsetD2D16Async(cuda_dptr(f->dst), f->pitch, (unsigned short)f->value, f->width, f->height, s);
  default: return d->cuMemsetD2D32Async(cuda_dptr(f->dst), f->pitch, f->value, f->width, f->height, s);
  }
}

/* Synchronous fills, like synchronous copies, run on the private stream and are waited for. */
static gcap_status cuda_memset(struct gcap__backend_ctx *b, void *stream, const struct gcap__fill *f) {
  ENTER(b);
  gcap_status st = cuda_check_fill_alignment(f);
  if (st != GCAP_SUCCESS) LEAVE(st);
  CUstream on = stream ? stream : c->sync_stream;
  CUresult r = f->height > 1 ? fill_2d(c->d, f, on) : fill_1d(c->d, f, on);
  st = gcap__cuda_check(r, "cuMemsetD%s%uAsync(%p, %zu x %zu elements)", f->height > 1 ? "2D" : "", f->element_size * 8,
                        f->dst, f->width, f->height);
  if (st == GCAP_SUCCESS && !stream)
    st = gcap__cuda_check(c->d->cuStreamSynchronize(on), "cuStreamSynchronize (synchronous fill)");
  LEAVE(st);
}

static gcap_status cuda_launch_kernel(struct gcap__backend_ctx *b, void *stream, const struct gcap__launch *l) {
  ENTER(b);
  if (l->cooperative) { /* the driver checks that the grid fits (CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE) */
    CUresult r = c->d->cuLaunchCooperativeKernel(l->kernel->impl, l->grid.x, l->grid.y, l->grid.z, l->block.x,
                                                 l->block.y, l->block.z, l->shared_mem_bytes, stream, (void **)l->args);
    LEAVE(gcap__cuda_check(r, "cuLaunchCooperativeKernel(\"%s\")", l->kernel->name));
  }
  CUresult r = c->d->cuLaunchKernel(l->kernel->impl, l->grid.x, l->grid.y, l->grid.z, l->block.x, l->block.y,
                                    l->block.z, l->shared_mem_bytes, stream, (void **)l->args, NULL);
  LEAVE(gcap__cuda_check(r, "cuLaunchKernel(\"%s\")", l->kernel->name));
}

/* The record is linked into the context until it has run, so a failed context still frees it. */
static gcap_status cuda_launch_host_func(struct gcap__backend_ctx *b, void *stream, gcap_host_fn fn, void *user_data) {
  ENTER(b);
  struct eager_call *e = gcap__malloc(sizeof *e);
  if (!e) LEAVE(gcap__fail(GCAP_ERROR_OUT_OF_MEMORY, "no memory for the host function's record"));
  e->call = (struct cuda_host_call){fn, user_data, NULL, NULL};
  e->c = c;
  pthread_mutex_lock(&c->lock);
  e->call.next = c->pending.next, e->call.prev = &c->pending;
  c->pending.next->prev = &e->call, c->pending.next = &e->call;
  pthread_mutex_unlock(&c->lock);
  gcap_status st = gcap__cuda_check(c->d->cuLaunchHostFunc(stream, host_once, e), "cuLaunchHostFunc");
  if (st != GCAP_SUCCESS) {
    pthread_mutex_lock(&c->lock);
    e->call.prev->next = e->call.next, e->call.next->prev = e->call.prev;
    pthread_mutex_unlock(&c->lock);
    gcap__free(e);
  }
  LEAVE(st);
}

static gcap_status cuda_event_create(struct gcap__backend_ctx *b, unsigned flags, void **out) {
  ENTER(b);
  CUevent e = NULL;
  unsigned cu_flags = (flags & GCAP_EVENT_DISABLE_TIMING ? CU_EVENT_DISABLE_TIMING : CU_EVENT_DEFAULT) |
                      (flags & GCAP_EVENT_BLOCKING_SYNC ? CU_EVENT_BLOCKING_SYNC : 0);
  gcap_status st = gcap__cuda_check(c->d->cuEventCreate(&e, cu_flags), "cuEventCreate(flags 0x%x)", cu_flags);
  if (st == GCAP_SUCCESS) *out = e;
  LEAVE(st);
}

static void cuda_event_destroy(struct gcap__backend_ctx *b, void *event) {
  struct cuda_context *c = cuda_context_from(b);
  struct cuda_scope scope;
  if (cuda_enter(c, &scope) != GCAP_SUCCESS) return;
  c->d->cuEventDestroy(event);
  cuda_leave(&scope, GCAP_SUCCESS);
}

static gcap_status cuda_event_record(struct gcap__backend_ctx *b, void *event, void *stream) {
  ENTER(b);
  LEAVE(gcap__cuda_check(c->d->cuEventRecord(event, stream), "cuEventRecord(%p, stream %p)", event, stream));
}

static gcap_status cuda_stream_wait_event(struct gcap__backend_ctx *b, void *stream, void *event) {
  ENTER(b);
  LEAVE(gcap__cuda_check(c->d->cuStreamWaitEvent(stream, event, 0), "cuStreamWaitEvent(stream %p, %p)", stream, event));
}

static gcap_status cuda_event_synchronize(struct gcap__backend_ctx *b, void *event) {
  ENTER(b);
  LEAVE(gcap__cuda_check(c->d->cuEventSynchronize(event), "cuEventSynchronize(%p)", event));
}

static gcap_status cuda_event_query(struct gcap__backend_ctx *b, void *event) {
  ENTER(b);
  CUresult r = c->d->cuEventQuery(event);
  if (r == CUDA_ERROR_NOT_READY) LEAVE(gcap__fail(GCAP_ERROR_NOT_READY, "event %p has work pending", event));
  LEAVE(gcap__cuda_check(r, "cuEventQuery(%p)", event));
}

static gcap_status cuda_event_elapsed_time(struct gcap__backend_ctx *b, void *start, void *end, float *ms) {
  ENTER(b);
  CUresult r = c->d->cuEventElapsedTime(ms, start, end);
  if (r == CUDA_ERROR_NOT_READY) LEAVE(gcap__fail(GCAP_ERROR_NOT_READY, "event %p or %p has work pending", start, end));
  LEAVE(gcap__cuda_check(r, "cuEventElapsedTime(%p, %p)", start, end));
}

/* cuModuleLoadData reads PTX up to its NUL; an ELF cubin or a fatbin carries its own size. */
/* A cubin (ELF) or fatbin, as opposed to PTX text. */
static bool is_binary(const unsigned char *image, size_t size) {
  static const unsigned char elf[4] = {0x7f, 'E', 'L', 'F'};
  static const unsigned char fatbin[4] = {0x50, 0xed, 0x55, 0xba};
  return size >= 4 && (memcmp(image, elf, 4) == 0 || memcmp(image, fatbin, 4) == 0);
}

static bool needs_terminator(const unsigned char *image, size_t size) {
  return !is_binary(image, size) && size > 0 && image[size - 1] != '\0';
}

static gcap_status cuda_module_load(struct gcap__backend_ctx *b, const gcap_module_desc *desc, void **out) {
  ENTER(b);
  if (!desc->image || desc->image_size == 0)
    LEAVE(gcap__fail(GCAP_ERROR_INVALID_VALUE,
                     "desc->image is %s: the CUDA backend loads kernels from PTX text, a cubin or a fatbin",
                     desc->image ? "empty" : "NULL"));
  const void *image = desc->image;
  char *copy = NULL;
  if (needs_terminator(desc->image, desc->image_size)) {
    copy = gcap__malloc(desc->image_size + 1);
    if (!copy) LEAVE(gcap__fail(GCAP_ERROR_OUT_OF_MEMORY, "no memory to terminate the PTX text"));
    memcpy(copy, desc->image, desc->image_size);
    copy[desc->image_size] = '\0';
    image = copy;
  }
  CUmodule m = NULL;
  bool text = !is_binary(desc->image, desc->image_size);
  gcap_status st =
      text && cuda_ptx_needs_devrt(image)
          ? cuda_link_ptx(c, image, &m)
          : gcap__cuda_check(c->d->cuModuleLoadData(&m, image), "cuModuleLoadData(%zu-byte image)", desc->image_size);
  gcap__free(copy);
  if (st == GCAP_SUCCESS) *out = m;
  LEAVE(st);
}

static void cuda_module_unload(struct gcap__backend_ctx *b, void *module) {
  struct cuda_context *c = cuda_context_from(b);
  struct cuda_scope scope;
  if (cuda_enter(c, &scope) != GCAP_SUCCESS) return;
  c->d->cuModuleUnload(module);
  cuda_leave(&scope, GCAP_SUCCESS);
}

/*
 * How many parameters f has: cuFuncGetParamInfo (CUDA 12.4) answers INVALID_VALUE for the first
 * index past the last parameter; any other failure is a failure, not the end of the list.
 */
static gcap_status count_params(const struct gcap__cuda_driver *d, CUfunction f, size_t *count) {
  size_t offset = 0, size = 0;
  for (*count = 0;; ++*count) {
    CUresult r = d->cuFuncGetParamInfo(f, *count, &offset, &size);
    if (r == CUDA_ERROR_INVALID_VALUE) return GCAP_SUCCESS;
    if (r != CUDA_SUCCESS) return gcap__cuda_check(r, "cuFuncGetParamInfo(parameter %zu)", *count);
  }
}

static gcap_status param_sizes(const struct gcap__cuda_driver *d, CUfunction f, struct gcap__kernel_found *out) {
  size_t count = 0, offset = 0;
  gcap_status st = count_params(d, f, &count);
  if (st != GCAP_SUCCESS) return st;
  out->sizes_known = true;
  out->num_params = count;
  if (count == 0) return GCAP_SUCCESS;
  out->param_sizes = gcap__calloc(count, sizeof *out->param_sizes);
  if (!out->param_sizes) return gcap__fail(GCAP_ERROR_OUT_OF_MEMORY, "no memory for %zu parameter sizes", count);
  for (size_t i = 0; i < count && st == GCAP_SUCCESS; i++)
    st = gcap__cuda_check(d->cuFuncGetParamInfo(f, i, &offset, &out->param_sizes[i]),
                          "cuFuncGetParamInfo(parameter %zu)", i);
  if (st != GCAP_SUCCESS) {
    gcap__free(out->param_sizes);
    out->param_sizes = NULL;
  }
  return st;
}

static gcap_status cuda_kernel_find(struct gcap__backend_ctx *b, void *module, const char *name,
                                    struct gcap__kernel_found *out) {
  ENTER(b);
  CUfunction f = NULL;
  CUresult r = c->d->cuModuleGetFunction(&f, module, name);
  if (r == CUDA_ERROR_NOT_FOUND) LEAVE(gcap__fail(GCAP_ERROR_NOT_FOUND, "the module image has no kernel \"%s\"", name));
  gcap_status st = gcap__cuda_check(r, "cuModuleGetFunction(\"%s\")", name);
  if (st != GCAP_SUCCESS) LEAVE(st);
  *out = (struct gcap__kernel_found){.fn = f};
  LEAVE(c->d->cuFuncGetParamInfo ? param_sizes(c->d, f, out) : GCAP_SUCCESS);
}

/* The driver knows every attribute of a kernel it compiled. */
static gcap_status cuda_kernel_attribute(struct gcap__backend_ctx *b, const struct gcap__kernel_info *k,
                                         gcap_kernel_attr attr, int *value) {
  ENTER(b);
  if (!c->d->cuFuncGetAttribute || !k->impl) LEAVE(GCAP_ERROR_NOT_FOUND);
  int v = 0;
  gcap_status st = gcap__cuda_check(c->d->cuFuncGetAttribute(&v, (CUfunction_attribute)attr, k->impl),
                                    "cuFuncGetAttribute(%d) of kernel \"%s\"", (int)attr, k->name);
  if (st == GCAP_SUCCESS) *value = v;
  LEAVE(st);
}

/* The driver checks the value against the device's limit and the kernel's static shared memory. */
static gcap_status cuda_kernel_set_attribute(struct gcap__backend_ctx *b, const struct gcap__kernel_info *k,
                                             gcap_kernel_attr attr, int value) {
  ENTER(b);
  if (!c->d->cuFuncSetAttribute || !k->impl)
    LEAVE(gcap__fail(GCAP_ERROR_NOT_SUPPORTED, "the driver has no cuFuncSetAttribute for kernel \"%s\"", k->name));
  CUresult r = c->d->cuFuncSetAttribute(k->impl, (CUfunction_attribute)attr, value);
  if (r == CUDA_ERROR_INVALID_VALUE)
    LEAVE(gcap__fail(GCAP_ERROR_INVALID_VALUE,
                     "value %d of GCAP_KERNEL_ATTR_MAX_DYNAMIC_SHARED_SIZE is more than the device gives a block of "
                     "kernel \"%s\" beside its static shared memory (cuFuncSetAttribute refused it)",
                     value, k->name));
  LEAVE(gcap__cuda_check(r, "cuFuncSetAttribute(%d, %d) of kernel \"%s\"", (int)attr, value, k->name));
}

static gcap_status cuda_module_global(struct gcap__backend_ctx *b, void *module, const char *name, void **dptr,
                                      size_t *bytes) {
  ENTER(b);
  CUdeviceptr p = 0;
  size_t size = 0;
  CUresult r = c->d->cuModuleGetGlobal(&p, &size, module, name);
  if (r == CUDA_ERROR_NOT_FOUND) LEAVE(GCAP_ERROR_NOT_FOUND);
  gcap_status st = gcap__cuda_check(r, "cuModuleGetGlobal(\"%s\")", name);
  if (st == GCAP_SUCCESS) {
    *dptr = (void *)(uintptr_t)p;
    if (bytes) *bytes = size;
  }
  LEAVE(st);
}

/* A native capture in RELAXED mode holds the stream: anything issued on it lands in that graph. */
static gcap_status cuda_stream_capture_begin(struct gcap__backend_ctx *b, void *stream) {
  ENTER(b);
  gcap_status st = gcap__cuda_check(c->d->cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_RELAXED),
                                    "cuStreamBeginCapture(stream %p) to watch for work issued behind gcap", stream);
  if (st == GCAP_SUCCESS) mark_capturing(c, stream, true);
  LEAVE(st);
}

static void cuda_stream_capture_end(struct gcap__backend_ctx *b, void *stream, size_t *foreign_work) {
  struct cuda_context *c = cuda_context_from(b);
  struct cuda_scope scope;
  CUgraph g = NULL;
  *foreign_work = 0;
  if (cuda_enter(c, &scope) != GCAP_SUCCESS) return;
  CUresult r = c->d->cuStreamEndCapture(stream, &g);
  mark_capturing(c, stream, false);
  size_t count = 0;
  if (r != CUDA_SUCCESS) count = 1; /* the native capture was invalidated: something was issued */
  else if (g && c->d->cuGraphGetNodes(g, NULL, &count) != CUDA_SUCCESS) count = 1;
  if (g) c->d->cuGraphDestroy(g);
  *foreign_work = count;
  cuda_leave(&scope, GCAP_SUCCESS);
}

static gcap_status cuda_native_graph_clone(struct gcap__backend_ctx *b, void *native, void **out) {
  ENTER(b);
  CUgraph g = NULL;
  gcap_status st = gcap__cuda_check(c->d->cuGraphClone(&g, native), "cuGraphClone(%p)", native);
  if (st == GCAP_SUCCESS) *out = g;
  LEAVE(st);
}

static void cuda_native_graph_destroy(struct gcap__backend_ctx *b, void *native) {
  struct cuda_context *c = cuda_context_from(b);
  struct cuda_scope scope;
  if (cuda_enter(c, &scope) != GCAP_SUCCESS) return;
  c->d->cuGraphDestroy(native);
  cuda_leave(&scope, GCAP_SUCCESS);
}

const struct gcap_backend_ops gcap__cuda_ops = {
    .name = "cuda",
    .knows_all_device_memory = false,
    .available = cuda_available,
    .context_create = cuda_context_create,
    .context_destroy = cuda_context_destroy,
    .context_synchronize = cuda_context_synchronize,
    .mem_alloc = cuda_mem_alloc,
    .mem_free = cuda_mem_free,
    .mem_alloc_managed = cuda_mem_alloc_managed,
    .mem_free_async = cuda_mem_free_async,
    .host_alloc = cuda_host_alloc,
    .host_free = cuda_host_free,
    .stream_create = cuda_stream_create,
    .stream_destroy = cuda_stream_destroy,
    .stream_synchronize = cuda_stream_synchronize,
    .stream_query = cuda_stream_query,
    .memcpy = cuda_memcpy,
    .memset = cuda_memset,
    .launch_kernel = cuda_launch_kernel,
    .launch_host_func = cuda_launch_host_func,
    .event_create = cuda_event_create,
    .event_elapsed_time = cuda_event_elapsed_time,
    .event_destroy = cuda_event_destroy,
    .event_record = cuda_event_record,
    .stream_wait_event = cuda_stream_wait_event,
    .event_synchronize = cuda_event_synchronize,
    .event_query = cuda_event_query,
    .module_load = cuda_module_load,
    .module_unload = cuda_module_unload,
    .kernel_find = cuda_kernel_find,
    .kernel_attribute = cuda_kernel_attribute,
    .kernel_set_attribute = cuda_kernel_set_attribute,
    .module_global = cuda_module_global,
    .exec_create = cuda_exec_create,
    .exec_destroy = cuda_exec_destroy,
    .exec_wait = cuda_exec_wait,
    .exec_upload = cuda_exec_upload,
    .exec_launch = cuda_exec_launch,
    .exec_set_entry = cuda_exec_set_entry,
    .exec_update = cuda_exec_update,
    .stream_capture_begin = cuda_stream_capture_begin,
    .stream_capture_end = cuda_stream_capture_end,
    .native_graph_clone = cuda_native_graph_clone,
    .native_graph_destroy = cuda_native_graph_destroy,
    .cond_create = cuda_cond_create,
    .cond_native_retain = cuda_cond_native_retain,
    .cond_native_release = cuda_cond_native_release,
    .sim_get_stats = NULL,
};
