#include "dispatch.h"
#include "capture.h"
#include "exec.h"
#include "stream_race.h"

#define PRIORITY_LEAST 0
#define PRIORITY_GREATEST (-5)

/* Makes a stream of ctx (context lock held). */
static gcap_status make_stream(gcap_context *ctx, unsigned flags, int priority, enum gcap__stream_role role,
                               struct gcap_stream **out) {
  struct gcap_stream *s = gcap__calloc(1, sizeof *s);
  if (!s) return gcap__fail(GCAP_ERROR_OUT_OF_MEMORY, "no memory for the stream");
  s->ctx = ctx;
  s->flags = flags;
  s->priority = priority < PRIORITY_GREATEST ? PRIORITY_GREATEST
                : priority > PRIORITY_LEAST  ? PRIORITY_LEAST
                                             : priority;
  s->role = role;
  s->thread = pthread_self();
  gcap_status st = gcap__backend_stream_create(ctx, s->priority, &s->impl);
  if (st == GCAP_SUCCESS && gcap__registry_add(s, GCAP__H_STREAM) != 0) {
    gcap__backend_stream_destroy(ctx, s->impl);
    st = gcap__fail(GCAP_ERROR_OUT_OF_MEMORY, "no memory to register the stream");
  }
  if (st != GCAP_SUCCESS) {
    gcap__free(s);
    return st;
  }
  gcap__list_push(&ctx->streams, &s->link);
  *out = s;
  return GCAP_SUCCESS;
}

static gcap_status create(gcap_context *ctx, unsigned flags, int priority, gcap_stream **out) {
  if (out) *out = NULL;
  gcap_status st = gcap__check_context(ctx, "ctx");
  if (st == GCAP_SUCCESS) st = gcap__refuse_in_host_callback();
  if (st != GCAP_SUCCESS) return st;
  if (!out) return gcap__fail(GCAP_ERROR_INVALID_VALUE, "out is NULL");
  if (flags & ~GCAP_STREAM_NON_BLOCKING)
    return gcap__fail(GCAP_ERROR_INVALID_VALUE, "flags 0x%x is not GCAP_STREAM_DEFAULT or GCAP_STREAM_NON_BLOCKING",
                      flags);
  gcap__lock(ctx);
  st = make_stream(ctx, flags, priority, GCAP__STREAM_USER, out);
  gcap__unlock(ctx);
  return st;
}

gcap_status gcap_stream_create(gcap_context *ctx, gcap_stream **out) {
  GCAP_ENTER();
  return create(ctx, GCAP_STREAM_NON_BLOCKING, 0, out);
}

gcap_status gcap_stream_create_with_flags(gcap_context *ctx, unsigned flags, int priority, gcap_stream **out) {
  GCAP_ENTER();
  return create(ctx, flags, priority, out);
}

gcap_status gcap_stream_get_flags(gcap_stream *s, unsigned *flags) {
  GCAP_ENTER();
  gcap_status st = gcap__check_stream(s, "stream");
  if (st != GCAP_SUCCESS) return st;
  if (!flags) return gcap__fail(GCAP_ERROR_INVALID_VALUE, "flags is NULL");
  *flags = s->flags;
  return GCAP_SUCCESS;
}

gcap_status gcap_stream_get_priority(gcap_stream *s, int *priority) {
  GCAP_ENTER();
  gcap_status st = gcap__check_stream(s, "stream");
  if (st != GCAP_SUCCESS) return st;
  if (!priority) return gcap__fail(GCAP_ERROR_INVALID_VALUE, "priority is NULL");
  *priority = s->priority;
  return GCAP_SUCCESS;
}

gcap_status gcap_context_stream_priority_range(gcap_context *ctx, int *least, int *greatest) {
  GCAP_ENTER();
  gcap_status st = gcap__check_context(ctx, "ctx");
  if (st != GCAP_SUCCESS) return st;
  if (least) *least = PRIORITY_LEAST;
  if (greatest) *greatest = PRIORITY_GREATEST;
  return GCAP_SUCCESS;
}

/* The legacy stream or the calling thread's per-thread stream, made on first use. */
static gcap_status default_stream(gcap_context *ctx, enum gcap__stream_role role, gcap_stream **out) {
  if (out) *out = NULL;
  gcap_status st = gcap__check_context(ctx, "ctx");
  if (st == GCAP_SUCCESS) st = gcap__refuse_in_host_callback();
  if (st != GCAP_SUCCESS) return st;
  if (!out) return gcap__fail(GCAP_ERROR_INVALID_VALUE, "out is NULL");
  gcap__lock(ctx);
  struct gcap_stream *found = role == GCAP__STREAM_LEGACY ? ctx->legacy : NULL;
  for (struct gcap__link *l = ctx->streams.next; role == GCAP__STREAM_PER_THREAD && !found && l != &ctx->streams;
       l = l->next) {
    struct gcap_stream *s = GCAP__CONTAINER(l, struct gcap_stream, link);
    if (s->role == GCAP__STREAM_PER_THREAD && pthread_equal(s->thread, pthread_self())) found = s;
  }
  if (!found) st = make_stream(ctx, GCAP_STREAM_DEFAULT, 0, role, &found);
  if (st == GCAP_SUCCESS && role == GCAP__STREAM_LEGACY) ctx->legacy = found;
  gcap__unlock(ctx);
  if (st == GCAP_SUCCESS) *out = found;
  return st;
}

gcap_status gcap_context_legacy_stream(gcap_context *ctx, gcap_stream **out) {
  GCAP_ENTER();
  return default_stream(ctx, GCAP__STREAM_LEGACY, out);
}

gcap_status gcap_context_per_thread_stream(gcap_context *ctx, gcap_stream **out) {
  GCAP_ENTER();
  return default_stream(ctx, GCAP__STREAM_PER_THREAD, out);
}

/* Later work of s waits for the work issued to `from` so far, through from's ordering event. */
static gcap_status implicit_wait(struct gcap_stream *s, struct gcap_stream *from) {
  struct gcap_context *ctx = s->ctx;
  gcap_status st = from->order ? GCAP_SUCCESS : gcap__event_new(ctx, GCAP_EVENT_DISABLE_TIMING, &from->order);
  struct gcap_event *e = from->order;
  if (st == GCAP_SUCCESS) st = gcap__sr_record_prepare(e, from);
  if (st == GCAP_SUCCESS) st = gcap__backend_event_record(ctx, e->impl, from->impl);
  if (st == GCAP_SUCCESS) {
    e->state = GCAP__EVENT_NORMAL;
    gcap__sr_record_done(e, from);
    st = gcap__sr_wait_prepare(s);
  }
  if (st == GCAP_SUCCESS) st = gcap__backend_stream_wait_event(ctx, s->impl, e->impl);
  if (st == GCAP_SUCCESS) gcap__sr_wait_done(s, e);
  return st;
}

gcap_status gcap__stream_before_work(struct gcap_stream *s) {
  if (s->flags & GCAP_STREAM_NON_BLOCKING) return GCAP_SUCCESS;
  struct gcap_context *ctx = s->ctx;
  gcap_status st = gcap__capture_check_legacy(s, true);
  if (st != GCAP_SUCCESS) return st;
  if (s->role == GCAP__STREAM_LEGACY) {
    for (struct gcap__link *l = ctx->streams.next; st == GCAP_SUCCESS && l != &ctx->streams; l = l->next) {
      struct gcap_stream *b = GCAP__CONTAINER(l, struct gcap_stream, link);
      if (b == s || (b->flags & GCAP_STREAM_NON_BLOCKING) || b->issued == b->seen_by_legacy) continue;
      st = implicit_wait(s, b);
      if (st == GCAP_SUCCESS) b->seen_by_legacy = b->issued;
    }
  } else if (ctx->legacy && ctx->legacy->issued != s->legacy_seen) {
    st = implicit_wait(s, ctx->legacy);
    if (st == GCAP_SUCCESS) s->legacy_seen = ctx->legacy->issued;
  }
  if (st == GCAP_SUCCESS) s->issued++;
  return st;
}

/* The handle is gone already; the backend stream and the object go now. */
static void stream_free(struct gcap_stream *s) {
  if (s->ctx->legacy == s) s->ctx->legacy = NULL;
  if (s->order) gcap__event_destroy_locked(s->order);
  gcap__sr_stream_end(s);
  gcap__backend_stream_destroy(s->ctx, s->impl);
  gcap__free(s);
}

void gcap__stream_free_pending(struct gcap_stream *s) { stream_free(s); }

/* Context destroy: the context was synchronized first. */
void gcap__stream_destroy_locked(struct gcap_stream *s) {
  gcap__registry_remove(s);
  gcap__list_unlink(&s->link);
  stream_free(s);
}

gcap_status gcap_stream_destroy(gcap_stream *s) {
  GCAP_ENTER_RELEASE();
  if (!s) return GCAP_SUCCESS;
  gcap_status st = gcap__check_stream(s, "stream");
  if (st == GCAP_SUCCESS) st = gcap__refuse_in_host_callback();
  if (st != GCAP_SUCCESS) return st;
  if (s->role != GCAP__STREAM_USER)
    return gcap__fail(GCAP_ERROR_INVALID_HANDLE, "stream %p is the context's %s stream, which cannot be destroyed",
                      (void *)s, s->role == GCAP__STREAM_LEGACY ? "legacy" : "per-thread");
  struct gcap_context *ctx = s->ctx;
  gcap__lock(ctx);
  if (s->seq && s == s->seq->origin) { /* CUDA would tear the capture down; gcap changes nothing */
    st = gcap__fail(GCAP_ERROR_ILLEGAL_STATE, "stream %p is part of capture %llu; end the capture first", (void *)s,
                    (unsigned long long)s->seq->id);
  } else { /* a stream that joined a capture: the handle goes now, the stream when the capture ends */
    gcap__registry_remove(s);
    gcap__list_unlink(&s->link);
  }
  gcap__unlock(ctx);
  if (st != GCAP_SUCCESS) return st;
  st = gcap__backend_stream_synchronize(ctx, s->impl); /* without the lock, as every wait */
  gcap__lock(ctx);
  if (s->seq) s->destroy_pending = true; /* its frontier still counts when the capture ends */
  else stream_free(s);
  gcap__unlock(ctx);
  /* As cudaStreamDestroy, the failure of work it waited for is reported here; the stream is gone all the same. */
  if (st != GCAP_SUCCESS) return gcap__fail_context(st, "stream %p is destroyed, but its work failed", (void *)s);
  return GCAP_SUCCESS;
}

gcap_status gcap_stream_synchronize(gcap_stream *s) {
  GCAP_ENTER();
  gcap_status st = gcap__check_stream(s, "stream");
  if (st == GCAP_SUCCESS) st = gcap__refuse_in_host_callback();
  if (st != GCAP_SUCCESS) return st;
  struct gcap_context *ctx = s->ctx;
  gcap__lock(ctx);
  st = gcap__capture_check_legacy(s, true);
  if (st == GCAP_SUCCESS) st = gcap__capture_check_stream_wait(s);
  gcap__unlock(ctx);
  /* Without the lock: on CUDA a host node of this stream may call gcap meanwhile. */
  if (st == GCAP_SUCCESS) st = gcap__backend_stream_synchronize(ctx, s->impl);
  if (st == GCAP_SUCCESS) gcap__sr_host_waited_stream(s);
  if (st == GCAP_SUCCESS) gcap__exec_reap(ctx);
  return st;
}

gcap_status gcap_stream_query(gcap_stream *s) {
  GCAP_ENTER();
  gcap_status st = gcap__check_stream(s, "stream");
  if (st == GCAP_SUCCESS) st = gcap__refuse_in_host_callback();
  if (st != GCAP_SUCCESS) return st;
  gcap__lock(s->ctx);
  st = gcap__capture_check_legacy(s, false);
  if (st == GCAP_SUCCESS) st = gcap__capture_check_stream_wait(s);
  if (st == GCAP_SUCCESS) st = gcap__backend_stream_query(s->ctx, s->impl);
  gcap__unlock(s->ctx);
  if (st == GCAP_SUCCESS) gcap__sr_host_waited_stream(s); /* done: the host is after its work */
  if (st == GCAP_ERROR_NOT_READY) gcap__fail(st, "stream %p still has pending work", (void *)s);
  return st;
}

gcap_status gcap_stream_wait_event(gcap_stream *s, gcap_event *e) {
  GCAP_ENTER();
  gcap_status st = gcap__check_stream(s, "stream");
  if (st == GCAP_SUCCESS) st = gcap__check_event(e, "event");
  if (st == GCAP_SUCCESS) st = gcap__check_same_context(s->ctx, e->ctx, "event");
  if (st == GCAP_SUCCESS) st = gcap__refuse_in_host_callback();
  if (st != GCAP_SUCCESS) return st;
  gcap__lock(s->ctx);
  bool handled = false;
  if (s->role == GCAP__STREAM_LEGACY && e->state == GCAP__EVENT_CAPTURED) {
    st = gcap__capture_check_legacy(s, true);
    if (st == GCAP_SUCCESS)
      st = gcap__fail(GCAP_ERROR_INVALID_VALUE,
                      "stream %p is the legacy stream, which cannot join the capture event %p was recorded in",
                      (void *)s, (void *)e);
    handled = true;
  }
  if (!handled) st = gcap__capture_stream_wait_event(s, e, &handled);
  if (st == GCAP_SUCCESS && !handled) st = gcap__stream_before_work(s);
  if (st == GCAP_SUCCESS && !handled) st = gcap__sr_wait_prepare(s);
  if (st == GCAP_SUCCESS && !handled) st = gcap__backend_stream_wait_event(s->ctx, s->impl, e->impl);
  if (st == GCAP_SUCCESS && !handled) gcap__sr_wait_done(s, e);
  gcap__unlock(s->ctx);
  return st;
}

gcap_status gcap_launch_host_func(gcap_stream *s, gcap_host_fn fn, void *user_data) {
  GCAP_ENTER();
  gcap_status st = gcap__check_stream(s, "stream");
  if (st == GCAP_SUCCESS) st = gcap__refuse_in_host_callback();
  if (st != GCAP_SUCCESS) return st;
  gcap__lock(s->ctx);
  bool record = false;
  st = gcap__capture_route(s, fn ? GCAP_SUCCESS : gcap__fail(GCAP_ERROR_INVALID_VALUE, "fn is NULL"), &record);
  gcap_host_node_params p = {fn, user_data};
  if (st == GCAP_SUCCESS)
    st = record ? gcap__capture_record_value(s, GCAP_NODE_HOST, &p, sizeof p)
                : gcap__backend_launch_host_func(s->ctx, s->impl, fn, user_data);
  gcap__unlock(s->ctx);
  return st;
}
