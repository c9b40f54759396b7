/* The runtime's state: the process's one gcap context, CUDA's error rules, stream handles, and
 * the calls that act on the whole device (reset, synchronize) or on errors. */
#include "cudart.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static pthread_mutex_t context_lock = PTHREAD_MUTEX_INITIALIZER;
static gcap_context *context; /* read without the lock (acquire), written under it */
static unsigned long generation = 1;
static int sticky; /* a kernel fault: every later call returns it until cudaDeviceReset */
static _Thread_local cudaError_t last_error;

unsigned long gcap__rt_generation(void) { return __atomic_load_n(&generation, __ATOMIC_ACQUIRE); }

static int verbose(void) {
  static int cached = -1;
  int v = __atomic_load_n(&cached, __ATOMIC_RELAXED);
  if (v < 0) {
    const char *e = getenv("GCAP_CUDART_VERBOSE");
    v = e && strcmp(e, "1") == 0;
    __atomic_store_n(&cached, v, __ATOMIC_RELAXED);
  }
  return v;
}

/* The errors after which CUDA's context is unusable: a kernel fault or a failed device assert. */
static int is_sticky(cudaError_t e) {
  switch (e) {
  case cudaErrorIllegalAddress:
  case cudaErrorLaunchTimeout:
  case cudaErrorAssert:
  case cudaErrorIllegalInstruction:
  case cudaErrorMisalignedAddress:
  case cudaErrorLaunchFailure: return 1;
  default: return 0;
  }
}

cudaError_t gcap__rt_error_of(gcap_status st) {
  switch (st) {
  case GCAP_SUCCESS: return cudaSuccess;
  case GCAP_ERROR_INVALID_VALUE: return cudaErrorInvalidValue;
  case GCAP_ERROR_OUT_OF_MEMORY: return cudaErrorMemoryAllocation;
  case GCAP_ERROR_NOT_INITIALIZED: return cudaErrorInitializationError;
  case GCAP_ERROR_INVALID_HANDLE: return cudaErrorInvalidResourceHandle;
  case GCAP_ERROR_NOT_SUPPORTED: return cudaErrorNotSupported;
  case GCAP_ERROR_NOT_FOUND: return cudaErrorSymbolNotFound;
  case GCAP_ERROR_NOT_READY: return cudaErrorNotReady;
  case GCAP_ERROR_ILLEGAL_STATE: return cudaErrorIllegalState;
  case GCAP_ERROR_BACKEND: return cudaErrorUnknown;
  default: break;
  }
  /* From 200 on gcap's codes are the runtime's (invalid PTX, faults, capture errors). */
  return (cudaError_t)st;
}

static void record(const char *fn, cudaError_t e, const char *message) {
  last_error = e;
  gcap__rt_report_error(e, is_sticky(e), message);
  if (is_sticky(e)) {
    int expected = 0;
    if (__atomic_compare_exchange_n(&sticky, &expected, (int)e, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
      fprintf(stderr, "gcap-cudart: %s: %s: %s\n", fn, cudaGetErrorName(e), message ? message : "");
    return;
  }
  if (verbose())
    fprintf(stderr, "gcap-cudart: %s: %s%s%s\n", fn, cudaGetErrorName(e), message ? ": " : "", message ? message : "");
}

cudaError_t gcap__rt_done(const char *fn, gcap_status st) {
  if (st == GCAP_SUCCESS) return cudaSuccess;
  cudaError_t e = gcap__rt_error_of(st);
  record(fn, e, gcap_last_error_message());
  return e;
}

cudaError_t gcap__rt_fail(const char *fn, cudaError_t e, const char *fmt, ...) {
  if (e == cudaSuccess) return e;
  char message[512];
  if (fmt) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(message, sizeof message, fmt, ap);
    va_end(ap);
  }
  record(fn, e, fmt ? message : NULL);
  return e;
}

/* Registered when the first context starts, so it runs before the exit handlers nvcc registered
 * earlier, which unregister the kernels the report names. */
static void report_at_exit(void) {
  gcap__rt_report_collect(__atomic_load_n(&context, __ATOMIC_ACQUIRE));
  gcap__rt_report_print();
}

/* The simulator unless GCAP_BACKEND names another backend: the stand-in exists to run CUDA
 * programs where there is no GPU. A failure to start is said once; every call then fails. */
static cudaError_t start_context(gcap_context **out) {
  static int said;
  pthread_mutex_lock(&context_lock);
  gcap_status st = GCAP_SUCCESS;
  if (!context) {
    gcap_context_options o;
    gcap_context_options_init(&o);
    const char *backend = getenv("GCAP_BACKEND");
    if (!backend || !*backend) o.backend = GCAP_BACKEND_SIM;
    gcap_context *c = NULL;
    st = gcap_context_create(&o, &c);
    static int report_registered;
    if (st == GCAP_SUCCESS && gcap__rt_reporting() && !report_registered++) atexit(report_at_exit);
    if (st == GCAP_SUCCESS) __atomic_store_n(&context, c, __ATOMIC_RELEASE);
    else if (!said++) fprintf(stderr, "gcap-cudart: gcap cannot start: %s\n", gcap_last_error_message());
  }
  *out = context;
  pthread_mutex_unlock(&context_lock);
  return st == GCAP_SUCCESS ? cudaSuccess : (last_error = cudaErrorInitializationError);
}

cudaError_t gcap__rt_enter(gcap_context **ctx) {
  int s = __atomic_load_n(&sticky, __ATOMIC_ACQUIRE);
  if (s) return last_error = (cudaError_t)s;
  gcap_context *c = __atomic_load_n(&context, __ATOMIC_ACQUIRE);
  if (c) return *ctx = c, cudaSuccess;
  return start_context(ctx);
}

cudaError_t gcap__rt_stream(cudaStream_t s, enum gcap__rt_default d, gcap_stream **out) {
  gcap_context *ctx;
  cudaError_t e = gcap__rt_enter(&ctx);
  if (e) return e;
  if (s == cudaStreamLegacy || (!s && d == GCAP__RT_LEGACY))
    return gcap__rt_done("stream", gcap_context_legacy_stream(ctx, out));
  if (s == cudaStreamPerThread || !s) return gcap__rt_done("stream", gcap_context_per_thread_stream(ctx, out));
  *out = (gcap_stream *)(void *)s;
  return cudaSuccess;
}

/* ---- Errors ---- */

cudaError_t cudaGetLastError(void) {
  int s = __atomic_load_n(&sticky, __ATOMIC_ACQUIRE);
  if (s) return (cudaError_t)s;
  cudaError_t e = last_error;
  last_error = cudaSuccess;
  return e;
}

cudaError_t cudaPeekAtLastError(void) {
  int s = __atomic_load_n(&sticky, __ATOMIC_ACQUIRE);
  return s ? (cudaError_t)s : last_error;
}

/* ---- The device as a whole ---- */

cudaError_t cudaDeviceSynchronize(void) {
  gcap_context *ctx;
  cudaError_t e = gcap__rt_enter(&ctx);
  return e ? e : gcap__rt_done(__func__, gcap_context_synchronize(ctx));
}

/* Destroys the context with everything the program made in it; the next call starts a fresh one.
 * Clears the sticky error, as a reset does on a GPU. */
cudaError_t cudaDeviceReset(void) {
  pthread_mutex_lock(&context_lock);
  gcap_context *c = context;
  __atomic_store_n(&context, NULL, __ATOMIC_RELEASE);
  __atomic_add_fetch(&generation, 1, __ATOMIC_ACQ_REL);
  __atomic_store_n(&sticky, 0, __ATOMIC_RELEASE);
  last_error = cudaSuccess;
  pthread_mutex_unlock(&context_lock);
  gcap__rt_report_collect(c);
  if (c) gcap_context_destroy(c);
  return cudaSuccess;
}

/* Programs rarely reset before they exit: the context goes when the library is unloaded, so its
 * worker threads stop and its memory is returned (leak checkers see nothing left). */
__attribute__((destructor)) static void end_context(void) {
  gcap_context *c = __atomic_exchange_n(&context, NULL, __ATOMIC_ACQ_REL);
  if (c) gcap_context_destroy(c);
}
