#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dispatch.h"
#include "capture.h"
#include "exec.h"
#include "pool.h"
#include "stream_race.h"

void gcap__list_init(struct gcap__link *head) { head->prev = head->next = head; }

void gcap__list_push(struct gcap__link *head, struct gcap__link *item) {
  item->prev = head->prev;
  item->next = head;
  head->prev->next = item;
  head->prev = item;
}

void gcap__list_unlink(struct gcap__link *item) {
  item->prev->next = item->next;
  item->next->prev = item->prev;
  item->prev = item->next = item;
}

void gcap__lock(struct gcap_context *ctx) {
  pthread_mutex_lock(&ctx->lock);
  ctx->lock_depth++;
}

/* The outermost unlock runs the destructors of user objects whose last reference went meanwhile. */
void gcap__unlock(struct gcap_context *ctx) {
  if (ctx->lock_depth == 1 && ctx->dying) {
    gcap__user_objects_destroy_dying(ctx);
    return;
  }
  ctx->lock_depth--;
  pthread_mutex_unlock(&ctx->lock);
}

/* Set by the calls that may let other threads in while a kernel runs (gcap__release_kernels). */
static _Thread_local bool release_ok;

bool gcap__release_kernels(bool allow) {
  bool was = release_ok;
  release_ok = allow;
  return was;
}

unsigned gcap__lock_suspend(struct gcap__backend_ctx *b) {
  struct gcap_context *ctx = b->core;
  unsigned depth = ctx->lock_depth;
  ctx->lock_depth = 0;
  for (unsigned i = 0; i < depth; i++) pthread_mutex_unlock(&ctx->lock);
  return depth;
}

void gcap__lock_resume(struct gcap__backend_ctx *b, unsigned depth) {
  struct gcap_context *ctx = b->core;
  for (unsigned i = 0; i < depth; i++) pthread_mutex_lock(&ctx->lock);
  ctx->lock_depth = depth;
}

/*
 * Only where nothing of the call's own state can change under it: the calls that set
 * release_ok, the lock held once, and no stream race check (its bookkeeping brackets each
 * operation).
 */
gcap_status gcap__work_release(struct gcap__backend_ctx *b, bool may_release, bool *released) {
  struct gcap_context *ctx = b->core;
  *released = false;
  if (!gcap__alloc_snap_refresh(ctx))
    return gcap__fail(GCAP_ERROR_OUT_OF_MEMORY, "no memory for the memory check's view of the allocations");
  if (!may_release || !release_ok || ctx->lock_depth != 1 || ctx->races) return GCAP_SUCCESS;
  ctx->kernels_out++;
  *released = true;
  gcap__lock_suspend(b);
  return GCAP_SUCCESS;
}

void gcap__work_reacquire(struct gcap__backend_ctx *b, bool released) {
  if (!released) return;
  struct gcap_context *ctx = b->core;
  gcap__lock_resume(b, 1);
  if (--ctx->kernels_out == 0) gcap__alloc_snap_free(ctx, false);
}

static gcap_status check_handle(const void *h, enum gcap__handle_type type, const char *kind, const char *what) {
  if (h == NULL) return gcap__fail(GCAP_ERROR_INVALID_HANDLE, "%s is NULL", what);
  if (!gcap__registry_has(h, type))
    return gcap__fail(GCAP_ERROR_INVALID_HANDLE, "%s (%s %p) is not a live %s handle", what, kind, h, kind);
  return GCAP_SUCCESS;
}

static bool is_sticky(gcap_status st) {
  return st == GCAP_ERROR_ILLEGAL_ADDRESS || st == GCAP_ERROR_ASSERT || st == GCAP_ERROR_ILLEGAL_INSTRUCTION ||
         st == GCAP_ERROR_MISALIGNED_ADDRESS || st == GCAP_ERROR_LAUNCH_FAILURE || st == GCAP_ERROR_LAUNCH_TIMEOUT;
}

gcap_status gcap__note_fault(struct gcap_context *ctx, gcap_status st) {
  if (!is_sticky(st) || atomic_load(&ctx->fault) != 0) return st;
  snprintf(ctx->fault_message, sizeof ctx->fault_message, "%s", gcap_last_error_message());
  atomic_store(&ctx->fault, (int)st);
  return st;
}

gcap_status gcap__refuse_faulted(const struct gcap_context *ctx) {
  int fault = atomic_load(&((struct gcap_context *)ctx)->fault);
  if (fault == 0 || gcap__call_releases()) return GCAP_SUCCESS;
  return gcap__fail((gcap_status)fault,
                    "the context has a sticky error from an earlier kernel fault (destroy the "
                    "context to go on): %s",
                    ctx->fault_message);
}

gcap_status gcap__check_context(const gcap_context *ctx, const char *what) {
  gcap_status st = check_handle(ctx, GCAP__H_CONTEXT, "context", what);
  return st == GCAP_SUCCESS ? gcap__refuse_faulted(ctx) : st;
}
gcap_status gcap__check_stream(const gcap_stream *s, const char *what) {
  gcap_status st = check_handle(s, GCAP__H_STREAM, "stream", what);
  return st == GCAP_SUCCESS ? gcap__refuse_faulted(s->ctx) : st;
}
gcap_status gcap__check_event(const gcap_event *e, const char *what) {
  gcap_status st = check_handle(e, GCAP__H_EVENT, "event", what);
  return st == GCAP_SUCCESS ? gcap__refuse_faulted(e->ctx) : st;
}
gcap_status gcap__check_kernel(const gcap_kernel *k, const char *what) {
  gcap_status st = check_handle(k, GCAP__H_KERNEL, "kernel", what);
  return st == GCAP_SUCCESS ? gcap__refuse_faulted(k->module->ctx) : st;
}

gcap_status gcap__check_same_context(const struct gcap_context *ctx, const struct gcap_context *other,
                                     const char *what) {
  if (ctx == other) return GCAP_SUCCESS;
  return gcap__fail(GCAP_ERROR_INVALID_HANDLE, "%s belongs to another context (%p, not %p)", what, (const void *)other,
                    (const void *)ctx);
}

const char *gcap_backend_name(gcap_backend_kind k) {
  switch (k) {
  case GCAP_BACKEND_AUTO: return "auto";
  case GCAP_BACKEND_SIM: return "sim";
  case GCAP_BACKEND_CUDA: return "cuda";
  }
  return "unknown";
}

static gcap_status cuda_available(void) {
#if GCAP_HAS_CUDA
  return gcap__cuda_ops.available();
#else
  return gcap__fail(GCAP_ERROR_NOT_SUPPORTED, "this build of gcap has no CUDA backend (configure with -Dcuda=enabled)");
#endif
}

gcap_status gcap_backend_available(gcap_backend_kind k) {
  GCAP_ENTER();
  switch (k) {
  case GCAP_BACKEND_SIM: return GCAP_SUCCESS;
  case GCAP_BACKEND_CUDA: return cuda_available();
  case GCAP_BACKEND_AUTO: break;
  }
  return gcap__fail(GCAP_ERROR_INVALID_VALUE, "backend kind %d is not SIM (1) or CUDA (2)", (int)k);
}

void gcap_context_options_init(gcap_context_options *o) {
  if (!o) return;
  memset(o, 0, sizeof *o);
  o->backend = GCAP_BACKEND_AUTO;
}

/* AUTO resolution, exactly as documented (eager.md#contexts-and-the-backend). */
static gcap_status resolve_auto(gcap_backend_kind *out) {
  const char *env = getenv("GCAP_BACKEND");
  if (env && *env) {
    if (strcmp(env, "sim") == 0) return *out = GCAP_BACKEND_SIM, GCAP_SUCCESS;
    if (strcmp(env, "cuda") == 0) return *out = GCAP_BACKEND_CUDA, GCAP_SUCCESS;
    if (strcmp(env, "auto") != 0)
      return gcap__fail(GCAP_ERROR_INVALID_VALUE, "GCAP_BACKEND=\"%s\" is not one of sim, cuda, auto",
                        gcap__quoted(env));
  }
#if GCAP_HAS_CUDA
  gcap_status st = gcap__cuda_ops.available();
  if (st != GCAP_SUCCESS) {
    char reason[600];
    snprintf(reason, sizeof reason, "%s", gcap_last_error_message());
    return gcap__fail(GCAP_ERROR_NOT_INITIALIZED,
                      "the CUDA backend cannot start (%s); set GCAP_BACKEND=sim to run on the simulator", reason);
  }
  return *out = GCAP_BACKEND_CUDA, GCAP_SUCCESS;
#else
  return *out = GCAP_BACKEND_SIM, GCAP_SUCCESS;
#endif
}

static gcap_status pick_ops(gcap_backend_kind kind, const struct gcap_backend_ops **ops) {
  if (kind == GCAP_BACKEND_SIM) return *ops = &gcap__sim_ops, GCAP_SUCCESS;
#if GCAP_HAS_CUDA
  gcap_status st = gcap__cuda_ops.available();
  if (st != GCAP_SUCCESS) return st;
  return *ops = &gcap__cuda_ops, GCAP_SUCCESS;
#else
  return gcap__fail(GCAP_ERROR_NOT_SUPPORTED, "this build of gcap has no CUDA backend (configure with -Dcuda=enabled)");
#endif
}

static struct gcap_context *context_new(void) {
  struct gcap_context *ctx = gcap__calloc(1, sizeof *ctx);
  if (!ctx) return NULL;
  pthread_mutexattr_t attr;
  pthread_mutexattr_init(&attr);
  pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_RECURSIVE);
  pthread_mutex_init(&ctx->lock, &attr);
  pthread_mutexattr_destroy(&attr);
  gcap__list_init(&ctx->streams);
  gcap__list_init(&ctx->events);
  gcap__list_init(&ctx->modules);
  gcap__list_init(&ctx->graphs);
  gcap__list_init(&ctx->execs);
  gcap__list_init(&ctx->seqs);
  gcap__list_init(&ctx->captures);
  gcap__list_init(&ctx->pools);
  gcap__list_init(&ctx->user_objects);
  return ctx;
}

static void context_free(struct gcap_context *ctx) {
  gcap__alloc_snap_free(ctx, true);
  gcap__context_free_spare_chunks(ctx);
  gcap__sr_context_free(ctx);
  pthread_mutex_destroy(&ctx->lock);
  gcap__free(ctx);
}

gcap_status gcap_context_create(const gcap_context_options *o, gcap_context **out) {
  GCAP_ENTER();
  if (out) *out = NULL;
  if (!out) return gcap__fail(GCAP_ERROR_INVALID_VALUE, "out is NULL");
  gcap_context_options defaults;
  gcap_context_options_init(&defaults);
  if (!o) o = &defaults;
  gcap_backend_kind kind = o->backend;
  if (kind != GCAP_BACKEND_AUTO && kind != GCAP_BACKEND_SIM && kind != GCAP_BACKEND_CUDA)
    return gcap__fail(GCAP_ERROR_INVALID_VALUE, "options->backend %d is not AUTO, SIM or CUDA", (int)kind);
  gcap_status st = GCAP_SUCCESS;
  if (kind == GCAP_BACKEND_AUTO) st = resolve_auto(&kind);
  const struct gcap_backend_ops *ops = NULL;
  if (st == GCAP_SUCCESS && kind == GCAP_BACKEND_CUDA && o->device < 0)
    st = gcap__fail(GCAP_ERROR_INVALID_VALUE, "options->device %d is negative", o->device);
  if (st == GCAP_SUCCESS) st = pick_ops(kind, &ops);
  if (st != GCAP_SUCCESS) return st;

  struct gcap_context *ctx = context_new();
  if (!ctx) return gcap__fail(GCAP_ERROR_OUT_OF_MEMORY, "no memory for the context");
  ctx->ops = ops;
  ctx->kind = kind;
  st = gcap__backend_context_create(ops, o, &ctx->backend);
  if (st == GCAP_SUCCESS) ctx->backend->core = ctx;
  if (st == GCAP_SUCCESS && (st = gcap__sr_context_init(ctx)) != GCAP_SUCCESS) gcap__backend_context_destroy(ctx);
  if (st == GCAP_SUCCESS && gcap__registry_add(ctx, GCAP__H_CONTEXT) != 0) {
    gcap__backend_context_destroy(ctx);
    st = gcap__fail(GCAP_ERROR_OUT_OF_MEMORY, "no memory to register the context");
  }
  if (st != GCAP_SUCCESS) {
    context_free(ctx);
    return st;
  }
  *out = ctx;
  return GCAP_SUCCESS;
}

static void destroy_all_in(struct gcap__link *head, size_t offset, void (*destroy)(void *)) {
  while (head->next != head) destroy((char *)head->next - offset);
}

static void destroy_stream_item(void *s) { gcap__stream_destroy_locked(s); }
static void destroy_event_item(void *e) { gcap__event_destroy_locked(e); }
static void destroy_module_item(void *m) { gcap__module_unload_locked(m); }

void gcap_context_destroy(gcap_context *ctx) {
  GCAP_ENTER_RELEASE();
  if (!ctx || gcap__check_context(ctx, "ctx") != GCAP_SUCCESS) return;
  if (gcap__refuse_in_host_callback() != GCAP_SUCCESS) return;
  gcap__registry_remove(ctx);
  gcap__backend_context_synchronize(ctx); /* without the lock: host nodes still running may call gcap */
  gcap__lock(ctx);
  gcap__capture_context_destroy(ctx);
  /* Executables and graphs first: they hold references to events and modules. */
  gcap__exec_destroy_all(ctx);
  gcap__graph_destroy_all(ctx);
  gcap__user_objects_context_destroy(ctx); /* destructors run at the unlock below */
  gcap__galloc_destroy_orphans(ctx);
  gcap__pool_destroy_all(ctx);
  destroy_all_in(&ctx->streams, offsetof(struct gcap_stream, link), destroy_stream_item);
  destroy_all_in(&ctx->events, offsetof(struct gcap_event, link), destroy_event_item);
  destroy_all_in(&ctx->modules, offsetof(struct gcap_module, link), destroy_module_item);
  for (size_t i = ctx->allocs.count; i-- > 0;) {
    struct gcap__allocation *a = &ctx->allocs.items[i];
    if (a->kind == GCAP__ALLOC_DEVICE) gcap__backend_mem_free(ctx, (void *)a->base);
    else gcap__backend_host_free(ctx, (void *)a->base);
  }
  gcap__alloc_table_free(&ctx->allocs);
  gcap__backend_context_destroy(ctx);
  gcap__unlock(ctx);
  context_free(ctx);
}

gcap_backend_kind gcap_context_backend(const gcap_context *ctx) {
  GCAP_ENTER();
  if (gcap__check_context(ctx, "ctx") != GCAP_SUCCESS) return GCAP_BACKEND_AUTO;
  return ctx->kind;
}

gcap_status gcap_context_synchronize(gcap_context *ctx) {
  GCAP_ENTER();
  gcap_status st = gcap__check_context(ctx, "ctx");
  if (st == GCAP_SUCCESS) st = gcap__refuse_in_host_callback();
  if (st != GCAP_SUCCESS) return st;
  gcap__lock(ctx);
  st = gcap__capture_check_context_sync(ctx);
  gcap__unlock(ctx);
  /* Without the lock: on CUDA host nodes may call gcap meanwhile. */
  if (st == GCAP_SUCCESS) st = gcap__backend_context_synchronize(ctx);
  if (st == GCAP_SUCCESS) gcap__sr_host_waited_all(ctx);
  if (st == GCAP_SUCCESS) gcap__exec_reap(ctx);
  return st;
}

gcap_status gcap_sim_get_kernel_stats(const gcap_context *ctx, const gcap_kernel *k, gcap_sim_kernel_stats *out) {
  GCAP_ENTER();
  gcap_status st = gcap__check_context(ctx, "ctx");
  if (st == GCAP_SUCCESS) st = gcap__check_kernel(k, "k");
  if (st == GCAP_SUCCESS) st = gcap__check_same_context(ctx, k->module->ctx, "k");
  if (st != GCAP_SUCCESS) return st;
  if (!out) return gcap__fail(GCAP_ERROR_INVALID_VALUE, "out is NULL");
  if (!ctx->ops->sim_kernel_stats)
    return gcap__fail(GCAP_ERROR_NOT_SUPPORTED, "kernel statistics exist only on the simulator backend");
  gcap__lock((gcap_context *)ctx);
  st = ctx->ops->sim_kernel_stats(ctx->backend, &k->info, out);
  gcap__unlock((gcap_context *)ctx);
  return st;
}

gcap_status gcap_sim_get_stats(const gcap_context *ctx, gcap_sim_stats *out) {
  GCAP_ENTER();
  gcap_status st = gcap__check_context(ctx, "ctx");
  if (st != GCAP_SUCCESS) return st;
  if (!out) return gcap__fail(GCAP_ERROR_INVALID_VALUE, "out is NULL");
  if (!ctx->ops->sim_get_stats)
    return gcap__fail(GCAP_ERROR_NOT_SUPPORTED, "simulator statistics exist only on the simulator backend");
  gcap__lock((gcap_context *)ctx);
  st = gcap__backend_sim_get_stats((gcap_context *)ctx, out);
  if (st == GCAP_SUCCESS) out->stream_races += gcap__sr_refused_count(ctx); /* the core's own count */
  gcap__unlock((gcap_context *)ctx);
  return st;
}
