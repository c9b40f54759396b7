/* Streams, host functions and callbacks, stream capture: each a gcap stream call, with CUDA's
 * documented errors. Every function taking a stream has its _ptsz twin, where 0 is the calling
 * thread's per-thread stream. */
#include "cudart.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

cudaError_t cudaStreamSynchronize_ptsz(cudaStream_t stream);
cudaError_t cudaStreamQuery_ptsz(cudaStream_t stream);
cudaError_t cudaStreamWaitEvent_ptsz(cudaStream_t stream, cudaEvent_t event, unsigned int flags);
cudaError_t cudaStreamGetFlags_ptsz(cudaStream_t stream, unsigned int *flags);
cudaError_t cudaStreamGetPriority_ptsz(cudaStream_t stream, int *priority);
cudaError_t cudaStreamGetId_ptsz(cudaStream_t stream, unsigned long long *id);
cudaError_t cudaStreamGetDevice_ptsz(cudaStream_t stream, int *device);
cudaError_t cudaStreamAddCallback_ptsz(cudaStream_t stream, cudaStreamCallback_t callback, void *user_data,
                                       unsigned int flags);
cudaError_t cudaLaunchHostFunc_ptsz(cudaStream_t stream, cudaHostFn_t fn, void *user_data);
cudaError_t cudaStreamGetAttribute_ptsz(cudaStream_t stream, cudaStreamAttrID attr, cudaStreamAttrValue *value);
cudaError_t cudaStreamSetAttribute_ptsz(cudaStream_t stream, cudaStreamAttrID attr, const cudaStreamAttrValue *value);
cudaError_t cudaStreamCopyAttributes_ptsz(cudaStream_t dst, cudaStream_t src);
cudaError_t cudaStreamBeginCapture_ptsz(cudaStream_t stream, enum cudaStreamCaptureMode mode);
cudaError_t cudaStreamBeginCaptureToGraph_ptsz(cudaStream_t stream, cudaGraph_t graph,
                                               const cudaGraphNode_t *dependencies,
                                               const cudaGraphEdgeData *dependency_data, size_t num_dependencies,
                                               enum cudaStreamCaptureMode mode);
cudaError_t cudaStreamEndCapture_ptsz(cudaStream_t stream, cudaGraph_t *graph);
cudaError_t cudaStreamIsCapturing_ptsz(cudaStream_t stream, enum cudaStreamCaptureStatus *status);
cudaError_t cudaStreamGetCaptureInfo_ptsz(cudaStream_t stream, enum cudaStreamCaptureStatus *status_out,
                                          unsigned long long *id_out, cudaGraph_t *graph_out,
                                          const cudaGraphNode_t **dependencies_out,
                                          const cudaGraphEdgeData **edge_data_out, size_t *num_dependencies_out);
cudaError_t cudaStreamUpdateCaptureDependencies_ptsz(cudaStream_t stream, cudaGraphNode_t *dependencies,
                                                     const cudaGraphEdgeData *dependency_data, size_t num_dependencies,
                                                     unsigned int flags);

/* ---- Creation and properties ---- */

static cudaError_t create(const char *fn, cudaStream_t *out, unsigned flags, int priority) {
  gcap_context *ctx;
  cudaError_t e = gcap__rt_enter(&ctx);
  if (e) return e;
  if (!out) return gcap__rt_fail(fn, cudaErrorInvalidValue, "pStream is NULL");
  if (flags & ~(unsigned)cudaStreamNonBlocking)
    return gcap__rt_fail(fn, cudaErrorInvalidValue, "flags 0x%x is not cudaStreamDefault or cudaStreamNonBlocking",
                         flags);
  gcap_stream *s = NULL;
  e = gcap__rt_done(fn, gcap_stream_create_with_flags(ctx, flags, priority, &s));
  if (!e) *out = (cudaStream_t)(void *)s;
  return e;
}

/* As CUDA's: a blocking stream (it synchronizes with the legacy stream). */
cudaError_t cudaStreamCreate(cudaStream_t *stream) { return create(__func__, stream, cudaStreamDefault, 0); }

cudaError_t cudaStreamCreateWithFlags(cudaStream_t *stream, unsigned int flags) {
  return create(__func__, stream, flags, 0);
}

cudaError_t cudaStreamCreateWithPriority(cudaStream_t *stream, unsigned int flags, int priority) {
  return create(__func__, stream, flags, priority);
}

cudaError_t cudaDeviceGetStreamPriorityRange(int *least, int *greatest) {
  gcap_context *ctx;
  cudaError_t e = gcap__rt_enter(&ctx);
  if (e) return e;
  return gcap__rt_done(__func__, gcap_context_stream_priority_range(ctx, least, greatest));
}

/* Stream ids, unique over the process's lifetime as CUDA's are: a stream gets the next number
 * when it is first asked for its id, and loses it when it is destroyed (or when cudaDeviceReset
 * ends the generation it belongs to), so that a stream made later at the same address gets a new
 * one. */
struct stream_id {
  gcap_stream *s;
  unsigned long generation;
  unsigned long long id;
};
static pthread_mutex_t ids_lock = PTHREAD_MUTEX_INITIALIZER;
static struct stream_id *ids;
static size_t ids_count, ids_cap;
static unsigned long long next_id = 1;

/* 0 when out of memory. */
static unsigned long long id_of(gcap_stream *s) {
  unsigned long gen = gcap__rt_generation();
  unsigned long long id = 0;
  pthread_mutex_lock(&ids_lock);
  for (size_t i = 0; i < ids_count && !id;) {
    if (ids[i].generation != gen) ids[i] = ids[--ids_count]; /* a stream of an earlier context */
    else if (ids[i].s == s) id = ids[i].id;
    else i++;
  }
  if (!id && ids_count == ids_cap) {
    size_t cap = ids_cap ? 2 * ids_cap : 16;
    struct stream_id *n = realloc(ids, cap * sizeof *n);
    if (n) ids = n, ids_cap = cap;
  }
  if (!id && ids_count < ids_cap) {
    id = next_id++;
    ids[ids_count++] = (struct stream_id){s, gen, id};
  }
  pthread_mutex_unlock(&ids_lock);
  return id;
}

static void forget_id(gcap_stream *s) {
  pthread_mutex_lock(&ids_lock);
  for (size_t i = 0; i < ids_count; i++)
    if (ids[i].s == s) {
      ids[i] = ids[--ids_count];
      break;
    }
  pthread_mutex_unlock(&ids_lock);
}

/* The legacy stream and the per-thread streams are not the program's to destroy (gcap refuses
 * them as invalid handles, as CUDA does). */
cudaError_t cudaStreamDestroy(cudaStream_t stream) {
  gcap_stream *s;
  cudaError_t e = gcap__rt_stream(stream, GCAP__RT_LEGACY, &s);
  if (e) return e;
  gcap_status st = gcap_stream_destroy(s);
  /* Refused (not a stream, the legacy or a per-thread stream, capturing): it stays. Otherwise it
   * is gone, also when the work it waited for failed. */
  if (st != GCAP_ERROR_INVALID_HANDLE && st != GCAP_ERROR_ILLEGAL_STATE) forget_id(s);
  return gcap__rt_done(__func__, st);
}

static cudaError_t get_flags(const char *fn, cudaStream_t stream, enum gcap__rt_default d, unsigned *flags) {
  gcap_stream *s;
  cudaError_t e = gcap__rt_stream(stream, d, &s);
  if (e) return e;
  if (!flags) return gcap__rt_fail(fn, cudaErrorInvalidValue, "flags is NULL");
  return gcap__rt_done(fn, gcap_stream_get_flags(s, flags));
}

cudaError_t cudaStreamGetFlags(cudaStream_t stream, unsigned int *flags) {
  return get_flags(__func__, stream, GCAP__RT_LEGACY, flags);
}
cudaError_t cudaStreamGetFlags_ptsz(cudaStream_t stream, unsigned int *flags) {
  return get_flags(__func__, stream, GCAP__RT_PER_THREAD, flags);
}

static cudaError_t get_priority(const char *fn, cudaStream_t stream, enum gcap__rt_default d, int *priority) {
  gcap_stream *s;
  cudaError_t e = gcap__rt_stream(stream, d, &s);
  if (e) return e;
  if (!priority) return gcap__rt_fail(fn, cudaErrorInvalidValue, "priority is NULL");
  return gcap__rt_done(fn, gcap_stream_get_priority(s, priority));
}

cudaError_t cudaStreamGetPriority(cudaStream_t stream, int *priority) {
  return get_priority(__func__, stream, GCAP__RT_LEGACY, priority);
}
cudaError_t cudaStreamGetPriority_ptsz(cudaStream_t stream, int *priority) {
  return get_priority(__func__, stream, GCAP__RT_PER_THREAD, priority);
}

static cudaError_t get_id(const char *fn, cudaStream_t stream, enum gcap__rt_default d, unsigned long long *id) {
  gcap_stream *s;
  cudaError_t e = gcap__rt_stream(stream, d, &s);
  if (e) return e;
  if (!id) return gcap__rt_fail(fn, cudaErrorInvalidValue, "streamId is NULL");
  unsigned flags;
  e = gcap__rt_done(fn, gcap_stream_get_flags(s, &flags)); /* checks the handle */
  if (e) return e;
  unsigned long long n = id_of(s);
  if (!n) return gcap__rt_fail(fn, cudaErrorMemoryAllocation, "no memory to number the stream");
  *id = n;
  return cudaSuccess;
}

cudaError_t cudaStreamGetId(cudaStream_t stream, unsigned long long *id) {
  return get_id(__func__, stream, GCAP__RT_LEGACY, id);
}
cudaError_t cudaStreamGetId_ptsz(cudaStream_t stream, unsigned long long *id) {
  return get_id(__func__, stream, GCAP__RT_PER_THREAD, id);
}

/* The stand-in has one device, 0. */
static cudaError_t get_device(const char *fn, cudaStream_t stream, enum gcap__rt_default d, int *device) {
  gcap_stream *s;
  cudaError_t e = gcap__rt_stream(stream, d, &s);
  if (e) return e;
  if (!device) return gcap__rt_fail(fn, cudaErrorInvalidValue, "device is NULL");
  unsigned flags;
  e = gcap__rt_done(fn, gcap_stream_get_flags(s, &flags));
  if (!e) *device = 0;
  return e;
}

cudaError_t cudaStreamGetDevice(cudaStream_t stream, int *device) {
  return get_device(__func__, stream, GCAP__RT_LEGACY, device);
}
cudaError_t cudaStreamGetDevice_ptsz(cudaStream_t stream, int *device) {
  return get_device(__func__, stream, GCAP__RT_PER_THREAD, device);
}

/* ---- Attributes: the priority is the one gcap has; it is fixed when the stream is made ---- */

static cudaError_t get_attribute(const char *fn, cudaStream_t stream, enum gcap__rt_default d, cudaStreamAttrID attr,
                                 cudaStreamAttrValue *value) {
  gcap_stream *s;
  cudaError_t e = gcap__rt_stream(stream, d, &s);
  if (e) return e;
  if (!value) return gcap__rt_fail(fn, cudaErrorInvalidValue, "value_out is NULL");
  if (attr != cudaStreamAttributePriority)
    return gcap__rt_fail(fn, cudaErrorNotSupported,
                         "stream attribute %d is not supported by gcap (only cudaStreamAttributePriority)", (int)attr);
  int priority;
  e = gcap__rt_done(fn, gcap_stream_get_priority(s, &priority));
  if (!e) value->priority = priority;
  return e;
}

cudaError_t cudaStreamGetAttribute(cudaStream_t stream, cudaStreamAttrID attr, cudaStreamAttrValue *value) {
  return get_attribute(__func__, stream, GCAP__RT_LEGACY, attr, value);
}
cudaError_t cudaStreamGetAttribute_ptsz(cudaStream_t stream, cudaStreamAttrID attr, cudaStreamAttrValue *value) {
  return get_attribute(__func__, stream, GCAP__RT_PER_THREAD, attr, value);
}

/* Setting the priority a stream already has succeeds; gcap cannot change it afterwards. */
static cudaError_t set_attribute(const char *fn, cudaStream_t stream, enum gcap__rt_default d, cudaStreamAttrID attr,
                                 const cudaStreamAttrValue *value) {
  gcap_stream *s;
  cudaError_t e = gcap__rt_stream(stream, d, &s);
  if (e) return e;
  if (!value) return gcap__rt_fail(fn, cudaErrorInvalidValue, "value is NULL");
  if (attr != cudaStreamAttributePriority)
    return gcap__rt_fail(fn, cudaErrorNotSupported,
                         "stream attribute %d is not supported by gcap (only cudaStreamAttributePriority)", (int)attr);
  int priority, least, greatest;
  e = gcap__rt_done(fn, gcap_stream_get_priority(s, &priority));
  if (!e) {
    gcap_context *ctx;
    e = gcap__rt_enter(&ctx);
    if (!e) e = gcap__rt_done(fn, gcap_context_stream_priority_range(ctx, &least, &greatest));
  }
  if (e) return e;
  int wanted = value->priority < greatest ? greatest : value->priority > least ? least : value->priority;
  if (wanted == priority) return cudaSuccess;
  return gcap__rt_fail(fn, cudaErrorNotSupported,
                       "cudaStreamAttributePriority %d: gcap cannot change the priority of a stream (%d) after it "
                       "is made; create it with cudaStreamCreateWithPriority",
                       value->priority, priority);
}

cudaError_t cudaStreamSetAttribute(cudaStream_t stream, cudaStreamAttrID attr, const cudaStreamAttrValue *value) {
  return set_attribute(__func__, stream, GCAP__RT_LEGACY, attr, value);
}
cudaError_t cudaStreamSetAttribute_ptsz(cudaStream_t stream, cudaStreamAttrID attr, const cudaStreamAttrValue *value) {
  return set_attribute(__func__, stream, GCAP__RT_PER_THREAD, attr, value);
}

/* No attribute can be set on a stand-in stream (the priority comes with the stream, and it is
 * not among the attributes copied), so there is nothing to copy: both handles are checked. */
static cudaError_t copy_attributes(const char *fn, cudaStream_t dst, cudaStream_t src, enum gcap__rt_default d) {
  gcap_stream *a, *b;
  unsigned flags;
  cudaError_t e = gcap__rt_stream(dst, d, &a);
  if (!e) e = gcap__rt_done(fn, gcap_stream_get_flags(a, &flags));
  if (!e) e = gcap__rt_stream(src, d, &b);
  if (!e) e = gcap__rt_done(fn, gcap_stream_get_flags(b, &flags));
  return e;
}

cudaError_t cudaStreamCopyAttributes(cudaStream_t dst, cudaStream_t src) {
  return copy_attributes(__func__, dst, src, GCAP__RT_LEGACY);
}
cudaError_t cudaStreamCopyAttributes_ptsz(cudaStream_t dst, cudaStream_t src) {
  return copy_attributes(__func__, dst, src, GCAP__RT_PER_THREAD);
}

/* ---- Waiting ---- */

static cudaError_t synchronize(const char *fn, cudaStream_t stream, enum gcap__rt_default d) {
  gcap_stream *s;
  cudaError_t e = gcap__rt_stream(stream, d, &s);
  if (e) return e;
  return gcap__rt_done(fn, gcap_stream_synchronize(s));
}

cudaError_t cudaStreamSynchronize(cudaStream_t stream) { return synchronize(__func__, stream, GCAP__RT_LEGACY); }
cudaError_t cudaStreamSynchronize_ptsz(cudaStream_t stream) {
  return synchronize(__func__, stream, GCAP__RT_PER_THREAD);
}

/* cudaErrorNotReady is an answer, not an error: it does not become the thread's last error. */
static cudaError_t query(const char *fn, cudaStream_t stream, enum gcap__rt_default d) {
  gcap_stream *s;
  cudaError_t e = gcap__rt_stream(stream, d, &s);
  if (e) return e;
  gcap_status st = gcap_stream_query(s);
  return st == GCAP_ERROR_NOT_READY ? cudaErrorNotReady : gcap__rt_done(fn, st);
}

cudaError_t cudaStreamQuery(cudaStream_t stream) { return query(__func__, stream, GCAP__RT_LEGACY); }
cudaError_t cudaStreamQuery_ptsz(cudaStream_t stream) { return query(__func__, stream, GCAP__RT_PER_THREAD); }

/* cudaEventWaitExternal asks for an event wait node when the stream captures: gcap's captures
 * record waits as edges only, so it is refused there; outside capture it is a plain wait. */
static cudaError_t wait_event(const char *fn, cudaStream_t stream, cudaEvent_t event, unsigned flags,
                              enum gcap__rt_default d) {
  gcap_stream *s;
  cudaError_t e = gcap__rt_stream(stream, d, &s);
  if (e) return e;
  if (flags & ~(unsigned)cudaEventWaitExternal)
    return gcap__rt_fail(fn, cudaErrorInvalidValue, "flags 0x%x is not cudaEventWaitDefault or cudaEventWaitExternal",
                         flags);
  if (flags & cudaEventWaitExternal) {
    gcap_capture_status status = GCAP_CAPTURE_STATUS_NONE;
    if (gcap_stream_is_capturing(s, &status) == GCAP_SUCCESS && status != GCAP_CAPTURE_STATUS_NONE)
      return gcap__rt_fail(fn, cudaErrorNotSupported,
                           "cudaEventWaitExternal in a capture (an event wait node) is not supported by gcap");
  }
  return gcap__rt_done(fn, gcap_stream_wait_event(s, gcap__rt_event(event)));
}

cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned int flags) {
  return wait_event(__func__, stream, event, flags, GCAP__RT_LEGACY);
}
cudaError_t cudaStreamWaitEvent_ptsz(cudaStream_t stream, cudaEvent_t event, unsigned int flags) {
  return wait_event(__func__, stream, event, flags, GCAP__RT_PER_THREAD);
}

/* ---- Host functions and callbacks ---- */

/* A host function is a gcap host function as it is (a host node when the stream captures). */
static cudaError_t host_func(const char *fn, cudaStream_t stream, cudaHostFn_t f, void *user_data,
                             enum gcap__rt_default d) {
  gcap_stream *s;
  cudaError_t e = gcap__rt_stream(stream, d, &s);
  if (e) return e;
  if (!f) return gcap__rt_fail(fn, cudaErrorInvalidValue, "fn is NULL");
  return gcap__rt_done(fn, gcap_launch_host_func(s, f, user_data));
}

cudaError_t cudaLaunchHostFunc(cudaStream_t stream, cudaHostFn_t fn, void *user_data) {
  return host_func(__func__, stream, fn, user_data, GCAP__RT_LEGACY);
}
cudaError_t cudaLaunchHostFunc_ptsz(cudaStream_t stream, cudaHostFn_t fn, void *user_data) {
  return host_func(__func__, stream, fn, user_data, GCAP__RT_PER_THREAD);
}

/* A callback takes (stream, status, userData): a record of them, freed once it has run. The
 * records not run yet stay on a list, so that one whose work never runs is not lost. */
struct callback {
  cudaStreamCallback_t fn;
  cudaStream_t stream; /* as the program passed it */
  void *user_data;
  struct callback *prev, *next;
};

static pthread_mutex_t callbacks_lock = PTHREAD_MUTEX_INITIALIZER;
static struct callback *pending;

static void run_callback(void *arg) {
  struct callback *c = arg;
  pthread_mutex_lock(&callbacks_lock);
  if (c->prev) c->prev->next = c->next;
  else pending = c->next;
  if (c->next) c->next->prev = c->prev;
  pthread_mutex_unlock(&callbacks_lock);
  /* The status CUDA passes: the device's sticky error (a kernel fault), if any. Read without
   * entering the runtime, which would start a context again while cudaDeviceReset drains this one. */
  cudaError_t status = cudaPeekAtLastError();
  switch (status) {
  case cudaErrorIllegalAddress:
  case cudaErrorLaunchTimeout:
  case cudaErrorAssert:
  case cudaErrorIllegalInstruction:
  case cudaErrorMisalignedAddress:
  case cudaErrorLaunchFailure: break;
  default: status = cudaSuccess;
  }
  c->fn(c->stream, status, c->user_data);
  free(c);
}

static cudaError_t add_callback(const char *fn, cudaStream_t stream, cudaStreamCallback_t callback, void *user_data,
                                unsigned flags, enum gcap__rt_default d) {
  gcap_stream *s;
  cudaError_t e = gcap__rt_stream(stream, d, &s);
  if (e) return e;
  if (!callback) return gcap__rt_fail(fn, cudaErrorInvalidValue, "callback is NULL");
  if (flags) return gcap__rt_fail(fn, cudaErrorInvalidValue, "flags 0x%x is not 0", flags);
  /* A callback cannot be captured (cudaLaunchHostFunc can): CUDA refuses it and invalidates the
   * capture. gcap's query of a capturing stream does both (the legacy stream, with a blocking
   * stream capturing, is left to gcap_launch_host_func: cudaErrorStreamCaptureImplicit). */
  gcap_capture_status status = GCAP_CAPTURE_STATUS_NONE;
  gcap_status st = gcap_stream_is_capturing(s, &status);
  if (st == GCAP_SUCCESS && status != GCAP_CAPTURE_STATUS_NONE) {
    st = gcap_stream_query(s);
    return gcap__rt_fail(fn,
                         st == GCAP_ERROR_STREAM_CAPTURE_INVALIDATED ? cudaErrorStreamCaptureInvalidated
                                                                     : cudaErrorStreamCaptureUnsupported,
                         "stream %p is capturing: a callback cannot be captured (use cudaLaunchHostFunc); the "
                         "capture is now invalidated",
                         (void *)stream);
  }
  if (st != GCAP_SUCCESS && st != GCAP_ERROR_STREAM_CAPTURE_IMPLICIT) return gcap__rt_done(fn, st);
  struct callback *c = malloc(sizeof *c);
  if (!c) return gcap__rt_fail(fn, cudaErrorMemoryAllocation, "no memory for the callback");
  *c = (struct callback){callback, stream, user_data, NULL, NULL};
  pthread_mutex_lock(&callbacks_lock);
  c->next = pending;
  if (pending) pending->prev = c;
  pending = c;
  pthread_mutex_unlock(&callbacks_lock);
  st = gcap_launch_host_func(s, run_callback, c);
  if (st != GCAP_SUCCESS) { /* never queued: nobody else knows c */
    pthread_mutex_lock(&callbacks_lock);
    if (c->prev) c->prev->next = c->next;
    else pending = c->next;
    if (c->next) c->next->prev = c->prev;
    pthread_mutex_unlock(&callbacks_lock);
    free(c);
  }
  return gcap__rt_done(fn, st);
}

cudaError_t cudaStreamAddCallback(cudaStream_t stream, cudaStreamCallback_t callback, void *user_data,
                                  unsigned int flags) {
  return add_callback(__func__, stream, callback, user_data, flags, GCAP__RT_LEGACY);
}
cudaError_t cudaStreamAddCallback_ptsz(cudaStream_t stream, cudaStreamCallback_t callback, void *user_data,
                                       unsigned int flags) {
  return add_callback(__func__, stream, callback, user_data, flags, GCAP__RT_PER_THREAD);
}

/* ---- Capture ---- */

static cudaError_t check_mode(const char *fn, int mode) {
  if (mode == cudaStreamCaptureModeGlobal || mode == cudaStreamCaptureModeThreadLocal ||
      mode == cudaStreamCaptureModeRelaxed)
    return cudaSuccess;
  return gcap__rt_fail(fn, cudaErrorInvalidValue, "capture mode %d", mode);
}

/* gcap has no edge data: all-zero (default) data is accepted, anything else refused. */
static cudaError_t check_edge_data(const char *fn, const cudaGraphEdgeData *data, size_t n) {
  static const cudaGraphEdgeData zero;
  for (size_t i = 0; data && i < n; i++)
    if (memcmp(&data[i], &zero, sizeof zero) != 0)
      return gcap__rt_fail(fn, cudaErrorNotSupported,
                           "dependencyData[%zu] is not default edge data (type %u, ports %u -> %u): gcap's graphs "
                           "have no edge data",
                           i, (unsigned)data[i].type, (unsigned)data[i].from_port, (unsigned)data[i].to_port);
  return cudaSuccess;
}

static cudaError_t begin_capture(const char *fn, cudaStream_t stream, enum cudaStreamCaptureMode mode,
                                 enum gcap__rt_default d) {
  gcap_stream *s;
  cudaError_t e = gcap__rt_stream(stream, d, &s);
  if (!e) e = check_mode(fn, (int)mode);
  if (e) return e;
  return gcap__rt_done(fn, gcap_stream_begin_capture(s, (gcap_capture_mode)mode));
}

cudaError_t cudaStreamBeginCapture(cudaStream_t stream, enum cudaStreamCaptureMode mode) {
  return begin_capture(__func__, stream, mode, GCAP__RT_LEGACY);
}
cudaError_t cudaStreamBeginCapture_ptsz(cudaStream_t stream, enum cudaStreamCaptureMode mode) {
  return begin_capture(__func__, stream, mode, GCAP__RT_PER_THREAD);
}

static cudaError_t begin_capture_to_graph(const char *fn, cudaStream_t stream, cudaGraph_t graph,
                                          const cudaGraphNode_t *deps, const cudaGraphEdgeData *data, size_t n,
                                          enum cudaStreamCaptureMode mode, enum gcap__rt_default d) {
  gcap_stream *s;
  cudaError_t e = gcap__rt_stream(stream, d, &s);
  if (!e) e = check_mode(fn, (int)mode);
  if (e) return e;
  if (n && !deps) return gcap__rt_fail(fn, cudaErrorInvalidValue, "numDependencies %zu with dependencies NULL", n);
  if (!n && data) return gcap__rt_fail(fn, cudaErrorInvalidValue, "dependencyData with numDependencies 0");
  e = check_edge_data(fn, data, n);
  if (e) return e;
  return gcap__rt_done(fn, gcap_stream_begin_capture_to_graph(s, gcap__rt_graph(graph),
                                                              (gcap_node *const *)(void *const *)deps, n,
                                                              (gcap_capture_mode)mode));
}

cudaError_t cudaStreamBeginCaptureToGraph(cudaStream_t stream, cudaGraph_t graph, const cudaGraphNode_t *dependencies,
                                          const cudaGraphEdgeData *dependency_data, size_t num_dependencies,
                                          enum cudaStreamCaptureMode mode) {
  return begin_capture_to_graph(__func__, stream, graph, dependencies, dependency_data, num_dependencies, mode,
                                GCAP__RT_LEGACY);
}
cudaError_t cudaStreamBeginCaptureToGraph_ptsz(cudaStream_t stream, cudaGraph_t graph,
                                               const cudaGraphNode_t *dependencies,
                                               const cudaGraphEdgeData *dependency_data, size_t num_dependencies,
                                               enum cudaStreamCaptureMode mode) {
  return begin_capture_to_graph(__func__, stream, graph, dependencies, dependency_data, num_dependencies, mode,
                                GCAP__RT_PER_THREAD);
}

static cudaError_t end_capture(const char *fn, cudaStream_t stream, cudaGraph_t *graph, enum gcap__rt_default d) {
  gcap_stream *s;
  cudaError_t e = gcap__rt_stream(stream, d, &s);
  if (e) return e;
  if (!graph) return gcap__rt_fail(fn, cudaErrorInvalidValue, "pGraph is NULL");
  gcap_graph *g = NULL;
  e = gcap__rt_done(fn, gcap_stream_end_capture(s, &g));
  *graph = e ? NULL : (cudaGraph_t)(void *)g;
  if (!e) gcap__rt_count(GCAP__RT_CAPTURES);
  return e;
}

cudaError_t cudaStreamEndCapture(cudaStream_t stream, cudaGraph_t *graph) {
  return end_capture(__func__, stream, graph, GCAP__RT_LEGACY);
}
cudaError_t cudaStreamEndCapture_ptsz(cudaStream_t stream, cudaGraph_t *graph) {
  return end_capture(__func__, stream, graph, GCAP__RT_PER_THREAD);
}

/* gcap's capture statuses are CUDA's numbers. The legacy stream while a blocking stream captures:
 * cudaErrorStreamCaptureImplicit, and the capture goes on (gcap's rule too). */
static cudaError_t is_capturing(const char *fn, cudaStream_t stream, enum cudaStreamCaptureStatus *status,
                                enum gcap__rt_default d) {
  gcap_stream *s;
  cudaError_t e = gcap__rt_stream(stream, d, &s);
  if (e) return e;
  if (!status) return gcap__rt_fail(fn, cudaErrorInvalidValue, "pCaptureStatus is NULL");
  gcap_capture_status st = GCAP_CAPTURE_STATUS_NONE;
  e = gcap__rt_done(fn, gcap_stream_is_capturing(s, &st));
  if (!e) *status = (enum cudaStreamCaptureStatus)st;
  return e;
}

cudaError_t cudaStreamIsCapturing(cudaStream_t stream, enum cudaStreamCaptureStatus *status) {
  return is_capturing(__func__, stream, status, GCAP__RT_LEGACY);
}
cudaError_t cudaStreamIsCapturing_ptsz(cudaStream_t stream, enum cudaStreamCaptureStatus *status) {
  return is_capturing(__func__, stream, status, GCAP__RT_PER_THREAD);
}

/* Default (zeroed) edge data for edgeData_out, as many as a frontier has: never written, shared
 * by every thread, grown by new blocks (earlier pointers stay valid) and kept to the end. */
struct zero_block {
  struct zero_block *next;
  size_t count;
  cudaGraphEdgeData data[];
};
static pthread_mutex_t zeros_lock = PTHREAD_MUTEX_INITIALIZER;
static struct zero_block *zeros;

static const cudaGraphEdgeData *zero_edge_data(size_t n) {
  pthread_mutex_lock(&zeros_lock);
  if (!zeros || zeros->count < n) {
    size_t count = zeros && zeros->count * 2 > n ? zeros->count * 2 : n < 16 ? 16 : n;
    struct zero_block *b = calloc(1, sizeof *b + count * sizeof b->data[0]);
    if (b) {
      b->count = count;
      b->next = zeros;
      zeros = b;
    }
  }
  const cudaGraphEdgeData *d = zeros && zeros->count >= n ? zeros->data : NULL;
  pthread_mutex_unlock(&zeros_lock);
  return d;
}

static cudaError_t get_capture_info(const char *fn, cudaStream_t stream, enum cudaStreamCaptureStatus *status_out,
                                    unsigned long long *id_out, cudaGraph_t *graph_out,
                                    const cudaGraphNode_t **deps_out, const cudaGraphEdgeData **edge_data_out,
                                    size_t *num_out, enum gcap__rt_default d) {
  gcap_stream *s;
  cudaError_t e = gcap__rt_stream(stream, d, &s);
  if (e) return e;
  if (!status_out) return gcap__rt_fail(fn, cudaErrorInvalidValue, "captureStatus_out is NULL");
  if (edge_data_out && !deps_out)
    return gcap__rt_fail(fn, cudaErrorInvalidValue, "edgeData_out is given without dependencies_out");
  gcap_capture_info info;
  e = gcap__rt_done(fn, gcap_stream_get_capture_info(s, &info));
  if (e) return e;
  const cudaGraphEdgeData *edges = NULL;
  if (edge_data_out && info.num_dependencies) {
    edges = zero_edge_data(info.num_dependencies);
    if (!edges) return gcap__rt_fail(fn, cudaErrorMemoryAllocation, "no memory for the edge data");
  }
  *status_out = (enum cudaStreamCaptureStatus)info.status;
  if (id_out) *id_out = info.id;
  if (graph_out) *graph_out = (cudaGraph_t)(void *)info.graph;
  if (deps_out) *deps_out = info.num_dependencies ? (const cudaGraphNode_t *)(const void *)info.dependencies : NULL;
  if (edge_data_out) *edge_data_out = edges;
  if (num_out) *num_out = info.num_dependencies;
  return cudaSuccess;
}

cudaError_t cudaStreamGetCaptureInfo(cudaStream_t stream, enum cudaStreamCaptureStatus *status_out,
                                     unsigned long long *id_out, cudaGraph_t *graph_out,
                                     const cudaGraphNode_t **dependencies_out, const cudaGraphEdgeData **edge_data_out,
                                     size_t *num_dependencies_out) {
  return get_capture_info(__func__, stream, status_out, id_out, graph_out, dependencies_out, edge_data_out,
                          num_dependencies_out, GCAP__RT_LEGACY);
}
cudaError_t cudaStreamGetCaptureInfo_ptsz(cudaStream_t stream, enum cudaStreamCaptureStatus *status_out,
                                          unsigned long long *id_out, cudaGraph_t *graph_out,
                                          const cudaGraphNode_t **dependencies_out,
                                          const cudaGraphEdgeData **edge_data_out, size_t *num_dependencies_out) {
  return get_capture_info(__func__, stream, status_out, id_out, graph_out, dependencies_out, edge_data_out,
                          num_dependencies_out, GCAP__RT_PER_THREAD);
}

static cudaError_t update_dependencies(const char *fn, cudaStream_t stream, cudaGraphNode_t *deps,
                                       const cudaGraphEdgeData *data, size_t n, unsigned flags,
                                       enum gcap__rt_default d) {
  gcap_stream *s;
  cudaError_t e = gcap__rt_stream(stream, d, &s);
  if (e) return e;
  if (n && !deps) return gcap__rt_fail(fn, cudaErrorInvalidValue, "numDependencies %zu with dependencies NULL", n);
  if (flags != cudaStreamAddCaptureDependencies && flags != cudaStreamSetCaptureDependencies)
    return gcap__rt_fail(fn, cudaErrorInvalidValue,
                         "flags %u is not cudaStreamAddCaptureDependencies or cudaStreamSetCaptureDependencies", flags);
  e = check_edge_data(fn, data, n);
  if (e) return e;
  return gcap__rt_done(fn,
                       gcap_stream_update_capture_dependencies(s, (gcap_node *const *)(void *const *)deps, n, flags));
}

cudaError_t cudaStreamUpdateCaptureDependencies(cudaStream_t stream, cudaGraphNode_t *dependencies,
                                                const cudaGraphEdgeData *dependency_data, size_t num_dependencies,
                                                unsigned int flags) {
  return update_dependencies(__func__, stream, dependencies, dependency_data, num_dependencies, flags, GCAP__RT_LEGACY);
}
cudaError_t cudaStreamUpdateCaptureDependencies_ptsz(cudaStream_t stream, cudaGraphNode_t *dependencies,
                                                     const cudaGraphEdgeData *dependency_data, size_t num_dependencies,
                                                     unsigned int flags) {
  return update_dependencies(__func__, stream, dependencies, dependency_data, num_dependencies, flags,
                             GCAP__RT_PER_THREAD);
}

cudaError_t cudaThreadExchangeStreamCaptureMode(enum cudaStreamCaptureMode *mode) {
  gcap_context *ctx;
  cudaError_t e = gcap__rt_enter(&ctx);
  if (e) return e;
  if (!mode) return gcap__rt_fail(__func__, cudaErrorInvalidValue, "mode is NULL");
  e = check_mode(__func__, (int)*mode);
  if (e) return e;
  gcap_capture_mode m = (gcap_capture_mode)*mode;
  e = gcap__rt_done(__func__, gcap_thread_exchange_capture_mode(&m));
  if (!e) *mode = (enum cudaStreamCaptureMode)m;
  return e;
}
