/*
 * Stream capture. This version has the per-thread capture mode and the queries; beginning a
 * capture is not supported yet, so no stream is ever capturing.
 */
#include <string.h>

#include "internal.h"

static gcap_status not_yet(void) {
  return gcap__fail(GCAP_ERROR_NOT_SUPPORTED, "stream capture is not supported by this version of gcap");
}

gcap_status gcap_thread_exchange_capture_mode(gcap_capture_mode *mode) {
  GCAP_ENTER();
  if (!mode) return gcap__fail(GCAP_ERROR_INVALID_VALUE, "mode is NULL");
  if ((unsigned)*mode > GCAP_CAPTURE_MODE_RELAXED)
    return gcap__fail(GCAP_ERROR_INVALID_VALUE, "*mode %d is not GLOBAL, THREAD_LOCAL or RELAXED", (int)*mode);
  gcap_capture_mode *mine = gcap__thread_capture_mode();
  gcap_capture_mode old = *mine;
  *mine = *mode;
  *mode = old;
  return GCAP_SUCCESS;
}

gcap_status gcap_stream_begin_capture(gcap_stream *s, gcap_capture_mode mode) {
  GCAP_ENTER();
  gcap_status st = gcap__check_stream(s, "stream");
  if (st != GCAP_SUCCESS) return st;
  if ((unsigned)mode > GCAP_CAPTURE_MODE_RELAXED)
    return gcap__fail(GCAP_ERROR_INVALID_VALUE, "mode %d is not GLOBAL, THREAD_LOCAL or RELAXED", (int)mode);
  return not_yet();
}

gcap_status gcap_stream_end_capture(gcap_stream *s, gcap_graph **graph) {
  GCAP_ENTER();
  gcap_status st = gcap__check_stream(s, "stream");
  if (st != GCAP_SUCCESS) return st;
  if (graph) *graph = NULL;
  return gcap__fail(GCAP_ERROR_ILLEGAL_STATE, "stream %p is not capturing", (void *)s);
}

gcap_status gcap_stream_get_capture_info(gcap_stream *s, gcap_capture_info *info) {
  GCAP_ENTER();
  gcap_status st = gcap__check_stream(s, "stream");
  if (st != GCAP_SUCCESS) return st;
  if (!info) return gcap__fail(GCAP_ERROR_INVALID_VALUE, "info is NULL");
  memset(info, 0, sizeof *info);
  info->status = GCAP_CAPTURE_STATUS_NONE;
  return GCAP_SUCCESS;
}

gcap_status gcap_stream_is_capturing(gcap_stream *s, gcap_capture_status *status) {
  GCAP_ENTER();
  gcap_status st = gcap__check_stream(s, "stream");
  if (st != GCAP_SUCCESS) return st;
  if (!status) return gcap__fail(GCAP_ERROR_INVALID_VALUE, "status is NULL");
  *status = GCAP_CAPTURE_STATUS_NONE;
  return GCAP_SUCCESS;
}

void gcap_capture_options_init(gcap_capture_options *o) {
  if (!o) return;
  memset(o, 0, sizeof *o);
  o->mode = GCAP_CAPTURE_MODE_GLOBAL;
}

gcap_status gcap_capture_begin(gcap_stream *s, const gcap_capture_options *o, gcap_capture **out) {
  GCAP_ENTER();
  if (out) *out = NULL;
  gcap_status st = gcap__check_stream(s, "stream");
  if (st != GCAP_SUCCESS) return st;
  if (!out) return gcap__fail(GCAP_ERROR_INVALID_VALUE, "out is NULL");
  return not_yet();
}

/* No capture object can exist yet, so every call on one names an invalid handle. */
static gcap_status no_capture(const gcap_capture *c) {
  return gcap__fail(GCAP_ERROR_INVALID_HANDLE, "capture %p is not a live capture object", (const void *)c);
}

gcap_status gcap_capture_record_kernel(gcap_capture *c, const char *function_name, gcap_dim3 grid, gcap_dim3 block,
                                       uint32_t shared_mem_bytes, void **args) {
  GCAP_ENTER();
  return no_capture(c);
}

gcap_status gcap_capture_record_memcpy(gcap_capture *c, void *dst, const void *src, size_t bytes,
                                       gcap_memcpy_kind kind) {
  GCAP_ENTER();
  return no_capture(c);
}

gcap_status gcap_capture_record_memset(gcap_capture *c, void *dst, uint8_t value, size_t bytes) {
  GCAP_ENTER();
  return no_capture(c);
}

size_t gcap_capture_recorded_count(const gcap_capture *c) {
  GCAP_ENTER();
  no_capture(c);
  return 0;
}

bool gcap_capture_is_active(const gcap_capture *c) {
  GCAP_ENTER();
  no_capture(c);
  return false;
}

gcap_status gcap_capture_get_status(const gcap_capture *c, gcap_capture_status *status) {
  GCAP_ENTER();
  return no_capture(c);
}

gcap_status gcap_capture_end(gcap_capture *c, gcap_graph **graph) {
  GCAP_ENTER();
  if (graph) *graph = NULL;
  return no_capture(c);
}

gcap_status gcap_capture_finish(gcap_capture *c, unsigned instantiate_flags, gcap_exec **exec) {
  GCAP_ENTER();
  if (exec) *exec = NULL;
  return no_capture(c);
}

void gcap_capture_destroy(gcap_capture *c) {
  GCAP_ENTER();
  if (c) no_capture(c);
}

void gcap_capture_cleanup(gcap_capture **c) {
  if (!c) return;
  gcap_capture_destroy(*c);
  *c = NULL;
}
