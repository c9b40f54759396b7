/* Events: each a gcap event call, with CUDA's documented errors. cudaEventRecord has its _ptsz
 * twin, where 0 is the calling thread's per-thread stream. */
#include "cudart.h"

cudaError_t cudaEventRecord_ptsz(cudaEvent_t event, cudaStream_t stream);
cudaError_t cudaEventRecordWithFlags_ptsz(cudaEvent_t event, cudaStream_t stream, unsigned int flags);

static cudaError_t create(const char *fn, cudaEvent_t *out, unsigned flags) {
  gcap_context *ctx;
  cudaError_t e = gcap__rt_enter(&ctx);
  if (e) return e;
  if (!out) return gcap__rt_fail(fn, cudaErrorInvalidValue, "event is NULL");
  const unsigned known = cudaEventBlockingSync | cudaEventDisableTiming | cudaEventInterprocess;
  if (flags & ~known) return gcap__rt_fail(fn, cudaErrorInvalidValue, "flags 0x%x has unknown bits", flags);
  if ((flags & cudaEventInterprocess) && !(flags & cudaEventDisableTiming))
    return gcap__rt_fail(fn, cudaErrorInvalidValue, "cudaEventInterprocess needs cudaEventDisableTiming");
  /* gcap's flags are CUDA's numbers. */
  gcap_event *ev = NULL;
  e = gcap__rt_done(fn, gcap_event_create_with_flags(ctx, flags, &ev));
  if (!e) *out = (cudaEvent_t)(void *)ev;
  return e;
}

cudaError_t cudaEventCreate(cudaEvent_t *event) { return create(__func__, event, cudaEventDefault); }

cudaError_t cudaEventCreateWithFlags(cudaEvent_t *event, unsigned int flags) { return create(__func__, event, flags); }

/* A NULL event is an invalid handle, as in CUDA (gcap takes NULL as a no-op). */
cudaError_t cudaEventDestroy(cudaEvent_t event) {
  gcap_context *ctx;
  cudaError_t e = gcap__rt_enter(&ctx);
  if (e) return e;
  if (!event) return gcap__rt_fail(__func__, cudaErrorInvalidResourceHandle, "event is NULL");
  return gcap__rt_done(__func__, gcap_event_destroy(gcap__rt_event(event)));
}

/* cudaEventRecordExternal asks for an event record node when the stream captures: gcap's
 * captures keep records as edges only, so it is refused there; outside capture it is a record. */
static cudaError_t record(const char *fn, cudaEvent_t event, cudaStream_t stream, unsigned flags,
                          enum gcap__rt_default d) {
  gcap_stream *s;
  cudaError_t e = gcap__rt_stream(stream, d, &s);
  if (e) return e;
  if (flags & ~(unsigned)cudaEventRecordExternal)
    return gcap__rt_fail(fn, cudaErrorInvalidValue,
                         "flags 0x%x is not cudaEventRecordDefault or cudaEventRecordExternal", flags);
  if (flags & cudaEventRecordExternal) {
    gcap_capture_status status = GCAP_CAPTURE_STATUS_NONE;
    if (gcap_stream_is_capturing(s, &status) == GCAP_SUCCESS && status != GCAP_CAPTURE_STATUS_NONE)
      return gcap__rt_fail(fn, cudaErrorNotSupported,
                           "cudaEventRecordExternal in a capture (an event record node) is not supported by gcap");
  }
  return gcap__rt_done(fn, gcap_event_record(gcap__rt_event(event), s));
}

cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream) {
  return record(__func__, event, stream, 0, GCAP__RT_LEGACY);
}
cudaError_t cudaEventRecord_ptsz(cudaEvent_t event, cudaStream_t stream) {
  return record(__func__, event, stream, 0, GCAP__RT_PER_THREAD);
}
cudaError_t cudaEventRecordWithFlags(cudaEvent_t event, cudaStream_t stream, unsigned int flags) {
  return record(__func__, event, stream, flags, GCAP__RT_LEGACY);
}
cudaError_t cudaEventRecordWithFlags_ptsz(cudaEvent_t event, cudaStream_t stream, unsigned int flags) {
  return record(__func__, event, stream, flags, GCAP__RT_PER_THREAD);
}

cudaError_t cudaEventSynchronize(cudaEvent_t event) {
  gcap_context *ctx;
  cudaError_t e = gcap__rt_enter(&ctx);
  if (e) return e;
  return gcap__rt_done(__func__, gcap_event_synchronize(gcap__rt_event(event)));
}

/* cudaErrorNotReady is an answer, not an error: it does not become the thread's last error. */
cudaError_t cudaEventQuery(cudaEvent_t event) {
  gcap_context *ctx;
  cudaError_t e = gcap__rt_enter(&ctx);
  if (e) return e;
  gcap_status st = gcap_event_query(gcap__rt_event(event));
  return st == GCAP_ERROR_NOT_READY ? cudaErrorNotReady : gcap__rt_done(__func__, st);
}

/* CUDA 13's signature (the result first). An event made with cudaEventDisableTiming, or never
 * recorded: cudaErrorInvalidResourceHandle (gcap's INVALID_HANDLE); pending: cudaErrorNotReady. */
cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t start, cudaEvent_t end) {
  gcap_context *ctx;
  cudaError_t e = gcap__rt_enter(&ctx);
  if (e) return e;
  if (!ms) return gcap__rt_fail(__func__, cudaErrorInvalidValue, "ms is NULL");
  gcap_status st = gcap_event_elapsed_time(gcap__rt_event(start), gcap__rt_event(end), ms);
  return st == GCAP_ERROR_NOT_READY ? cudaErrorNotReady : gcap__rt_done(__func__, st);
}
