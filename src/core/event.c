#include "dispatch.h"
#include "capture.h"
#include "exec.h"
#include "stream_race.h"

static gcap_status create(gcap_context *ctx, unsigned flags, gcap_event **out) {
  if (out) *out = NULL;
  gcap_status st = gcap__check_context(ctx, "ctx");
  if (st == GCAP_SUCCESS) st = gcap__refuse_in_host_callback();
  if (st != GCAP_SUCCESS) return st;
  unsigned known = GCAP_EVENT_BLOCKING_SYNC | GCAP_EVENT_DISABLE_TIMING | GCAP_EVENT_INTERPROCESS;
  if (flags & ~known)
    return gcap__fail(GCAP_ERROR_INVALID_VALUE, "flags 0x%x has unknown bits 0x%x", flags, flags & ~known);
  if (flags & GCAP_EVENT_INTERPROCESS)
    return gcap__fail(GCAP_ERROR_NOT_SUPPORTED, "flags 0x%x: interprocess events are not supported", flags);
  if (!out) return gcap__fail(GCAP_ERROR_INVALID_VALUE, "out is NULL");
  return gcap__event_new(ctx, flags, out);
}

gcap_status gcap_event_create(gcap_context *ctx, gcap_event **out) {
  GCAP_ENTER();
  return create(ctx, GCAP_EVENT_DEFAULT, out);
}

gcap_status gcap_event_create_with_flags(gcap_context *ctx, unsigned flags, gcap_event **out) {
  GCAP_ENTER();
  return create(ctx, flags, out);
}

gcap_status gcap__event_new(struct gcap_context *ctx, unsigned flags, struct gcap_event **out) {
  gcap_status st;
  struct gcap_event *e = gcap__calloc(1, sizeof *e);
  if (!e) return gcap__fail(GCAP_ERROR_OUT_OF_MEMORY, "no memory for the event");
  e->ctx = ctx;
  e->refs = 1;
  e->flags = flags;
  gcap__lock(ctx);
  st = gcap__backend_event_create(ctx, flags, &e->impl);
  if (st == GCAP_SUCCESS && gcap__registry_add(e, GCAP__H_EVENT) != 0) {
    gcap__backend_event_destroy(ctx, e->impl);
    st = gcap__fail(GCAP_ERROR_OUT_OF_MEMORY, "no memory to register the event");
  }
  if (st == GCAP_SUCCESS) gcap__list_push(&ctx->events, &e->link);
  gcap__unlock(ctx);
  if (st != GCAP_SUCCESS) {
    gcap__free(e);
    return st;
  }
  *out = e;
  return GCAP_SUCCESS;
}

void gcap__event_retain(struct gcap_event *e) { e->refs++; }

void gcap__event_release(struct gcap_event *e) {
  if (--e->refs > 0) return;
  gcap__list_unlink(&e->link);
  gcap__node_vec_free(&e->captured);
  gcap__sr_event_end(e);
  gcap__backend_event_destroy(e->ctx, e->impl);
  gcap__free(e);
}

/* Drops the user's handle; nodes and executables that use the event keep it alive. */
void gcap__event_destroy_locked(struct gcap_event *e) {
  if (e->destroyed) return;
  e->destroyed = true;
  gcap__registry_remove(e);
  gcap__event_release(e);
}

gcap_status gcap_event_destroy(gcap_event *e) {
  GCAP_ENTER_RELEASE();
  if (!e) return GCAP_SUCCESS;
  gcap_status st = gcap__check_event(e, "event");
  if (st == GCAP_SUCCESS) st = gcap__refuse_in_host_callback();
  if (st != GCAP_SUCCESS) return st;
  struct gcap_context *ctx = e->ctx;
  gcap__lock(ctx);
  gcap__event_destroy_locked(e);
  gcap__unlock(ctx);
  return GCAP_SUCCESS;
}

gcap_status gcap_event_record(gcap_event *e, gcap_stream *s) {
  GCAP_ENTER();
  gcap_status st = gcap__check_event(e, "event");
  if (st == GCAP_SUCCESS) st = gcap__check_stream(s, "stream");
  if (st == GCAP_SUCCESS) st = gcap__check_same_context(e->ctx, s->ctx, "stream");
  if (st == GCAP_SUCCESS) st = gcap__refuse_in_host_callback();
  if (st != GCAP_SUCCESS) return st;
  gcap__lock(e->ctx);
  bool handled = false;
  st = gcap__capture_event_record(e, s, &handled);
  if (st == GCAP_SUCCESS && !handled) st = gcap__sr_record_prepare(e, s);
  if (st == GCAP_SUCCESS && !handled) st = gcap__backend_event_record(e->ctx, e->impl, s->impl);
  if (st == GCAP_SUCCESS && !handled) {
    e->state = GCAP__EVENT_NORMAL;
    gcap__node_vec_free(&e->captured);
    gcap__sr_record_done(e, s);
  }
  gcap__unlock(e->ctx);
  return st;
}

gcap_status gcap_event_synchronize(gcap_event *e) {
  GCAP_ENTER();
  gcap_status st = gcap__check_event(e, "event");
  if (st == GCAP_SUCCESS) st = gcap__refuse_in_host_callback();
  if (st != GCAP_SUCCESS) return st;
  struct gcap_context *ctx = e->ctx;
  gcap__lock(ctx);
  st = gcap__capture_check_event_wait(e);
  gcap__unlock(ctx);
  /* Without the lock: on CUDA a host node may call gcap meanwhile. */
  if (st == GCAP_SUCCESS) st = gcap__backend_event_synchronize(ctx, e->impl);
  if (st == GCAP_SUCCESS) gcap__sr_host_waited_event(e);
  if (st == GCAP_SUCCESS) gcap__exec_reap(ctx);
  return st;
}

gcap_status gcap_event_query(gcap_event *e) {
  GCAP_ENTER();
  gcap_status st = gcap__check_event(e, "event");
  if (st == GCAP_SUCCESS) st = gcap__refuse_in_host_callback();
  if (st != GCAP_SUCCESS) return st;
  gcap__lock(e->ctx);
  st = gcap__capture_check_event_wait(e);
  if (st == GCAP_SUCCESS) st = gcap__backend_event_query(e->ctx, e->impl);
  gcap__unlock(e->ctx);
  if (st == GCAP_SUCCESS) gcap__sr_host_waited_event(e); /* complete: the host is after its work */
  if (st == GCAP_ERROR_NOT_READY) gcap__fail(st, "event %p: its recorded work is still pending", (void *)e);
  return st;
}

static gcap_status check_timed(const struct gcap_event *e, const char *what) {
  if (!(e->flags & GCAP_EVENT_DISABLE_TIMING)) return GCAP_SUCCESS;
  return gcap__fail(GCAP_ERROR_INVALID_HANDLE, "%s (event %p) was created with GCAP_EVENT_DISABLE_TIMING", what,
                    (const void *)e);
}

gcap_status gcap_event_elapsed_time(gcap_event *start, gcap_event *end, float *ms) {
  GCAP_ENTER();
  gcap_status st = gcap__check_event(start, "start");
  if (st == GCAP_SUCCESS) st = gcap__check_event(end, "end");
  if (st == GCAP_SUCCESS) st = gcap__check_same_context(start->ctx, end->ctx, "end");
  if (st == GCAP_SUCCESS) st = gcap__refuse_in_host_callback();
  if (st != GCAP_SUCCESS) return st;
  if (!ms) return gcap__fail(GCAP_ERROR_INVALID_VALUE, "ms is NULL");
  gcap__lock(start->ctx);
  st = check_timed(start, "start");
  if (st == GCAP_SUCCESS) st = check_timed(end, "end");
  if (st == GCAP_SUCCESS) st = gcap__capture_check_event_wait(start);
  if (st == GCAP_SUCCESS) st = gcap__capture_check_event_wait(end);
  if (st == GCAP_SUCCESS) st = gcap__backend_event_elapsed_time(start->ctx, start->impl, end->impl, ms);
  gcap__unlock(start->ctx);
  if (st == GCAP_ERROR_NOT_READY) gcap__fail(st, "the work recorded in start or end is still pending");
  return st;
}
