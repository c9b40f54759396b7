#include "dispatch.h"
#include "capture.h"
#include "exec.h"
#include "stream_race.h"

gcap_status gcap_stream_create(gcap_context *ctx, gcap_stream **out) {
  GCAP_ENTER();
  if (out) *out = NULL;
  gcap_status st = gcap__check_context(ctx, "ctx");
  if (st == GCAP_SUCCESS) st = gcap__refuse_in_host_callback();
  if (st != GCAP_SUCCESS) return st;
  if (!out) return gcap__fail(GCAP_ERROR_INVALID_VALUE, "out is NULL");
  struct gcap_stream *s = gcap__calloc(1, sizeof *s);
  if (!s) return gcap__fail(GCAP_ERROR_OUT_OF_MEMORY, "no memory for the stream");
  s->ctx = ctx;
  gcap__lock(ctx);
  st = gcap__backend_stream_create(ctx, &s->impl);
  if (st == GCAP_SUCCESS && gcap__registry_add(s, GCAP__H_STREAM) != 0) {
    gcap__backend_stream_destroy(ctx, s->impl);
    st = gcap__fail(GCAP_ERROR_OUT_OF_MEMORY, "no memory to register the stream");
  }
  if (st == GCAP_SUCCESS) gcap__list_push(&ctx->streams, &s->link);
  gcap__unlock(ctx);
  if (st != GCAP_SUCCESS) {
    gcap__free(s);
    return st;
  }
  *out = s;
  return GCAP_SUCCESS;
}

/* The handle is gone already; the backend stream and the object go now. */
static void stream_free(struct gcap_stream *s) {
  gcap__sr_stream_end(s);
  gcap__backend_stream_destroy(s->ctx, s->impl);
  gcap__free(s);
}

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
  struct gcap_context *ctx = s->ctx;
  gcap__lock(ctx);
  if (s->seq) { /* CUDA would tear the capture down; gcap changes nothing */
    st = gcap__fail(GCAP_ERROR_ILLEGAL_STATE, "stream %p is part of capture %llu; end the capture first", (void *)s,
                    (unsigned long long)s->seq->id);
  } else {
    gcap__registry_remove(s);
    gcap__list_unlink(&s->link);
  }
  gcap__unlock(ctx);
  if (st != GCAP_SUCCESS) return st;
  st = gcap__backend_stream_synchronize(ctx, s->impl); /* without the lock, as every wait */
  gcap__lock(ctx);
  stream_free(s);
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
  st = gcap__capture_check_stream_wait(s);
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
  st = gcap__capture_check_stream_wait(s);
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
  st = gcap__capture_stream_wait_event(s, e, &handled);
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
