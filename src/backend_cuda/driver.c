#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "driver.h"
#include "base/error.h"

static struct gcap__cuda_driver driver;
static gcap_status load_status;
static char load_reason[400];
static pthread_once_t load_once = PTHREAD_ONCE_INIT;

gcap_status gcap__cuda_status(CUresult r) {
  switch (r) {
  case CUDA_SUCCESS: return GCAP_SUCCESS;
  case CUDA_ERROR_INVALID_VALUE: return GCAP_ERROR_INVALID_VALUE;
  case CUDA_ERROR_OUT_OF_MEMORY: return GCAP_ERROR_OUT_OF_MEMORY;
  case CUDA_ERROR_NOT_INITIALIZED:
  case CUDA_ERROR_DEINITIALIZED:
  case CUDA_ERROR_NO_DEVICE:
  case CUDA_ERROR_SYSTEM_DRIVER_MISMATCH:
  case CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE: return GCAP_ERROR_NOT_INITIALIZED;
  case CUDA_ERROR_INVALID_DEVICE:
  case CUDA_ERROR_INVALID_IMAGE:
  case CUDA_ERROR_INVALID_PTX:
  case CUDA_ERROR_NO_BINARY_FOR_GPU:
  case CUDA_ERROR_INVALID_SOURCE: return GCAP_ERROR_INVALID_VALUE;
  case CUDA_ERROR_INVALID_HANDLE:
  case CUDA_ERROR_INVALID_CONTEXT:
  case CUDA_ERROR_CONTEXT_IS_DESTROYED: return GCAP_ERROR_INVALID_HANDLE;
  case CUDA_ERROR_NOT_SUPPORTED: return GCAP_ERROR_NOT_SUPPORTED;
  case CUDA_ERROR_NOT_FOUND: return GCAP_ERROR_NOT_FOUND;
  case CUDA_ERROR_NOT_READY: return GCAP_ERROR_NOT_READY;
  case CUDA_ERROR_ILLEGAL_STATE:
  case CUDA_ERROR_NOT_PERMITTED: return GCAP_ERROR_ILLEGAL_STATE;
  case CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED: return GCAP_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  case CUDA_ERROR_STREAM_CAPTURE_INVALIDATED: return GCAP_ERROR_STREAM_CAPTURE_INVALIDATED;
  case CUDA_ERROR_STREAM_CAPTURE_MERGE: return GCAP_ERROR_STREAM_CAPTURE_MERGE;
  case CUDA_ERROR_STREAM_CAPTURE_UNMATCHED: return GCAP_ERROR_STREAM_CAPTURE_UNMATCHED;
  case CUDA_ERROR_STREAM_CAPTURE_UNJOINED: return GCAP_ERROR_STREAM_CAPTURE_UNJOINED;
  case CUDA_ERROR_STREAM_CAPTURE_ISOLATION: return GCAP_ERROR_STREAM_CAPTURE_ISOLATION;
  case CUDA_ERROR_STREAM_CAPTURE_IMPLICIT: return GCAP_ERROR_STREAM_CAPTURE_IMPLICIT;
  case CUDA_ERROR_CAPTURED_EVENT: return GCAP_ERROR_CAPTURED_EVENT;
  case CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD: return GCAP_ERROR_STREAM_CAPTURE_WRONG_THREAD;
  case CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE: return GCAP_ERROR_GRAPH_EXEC_UPDATE_FAILURE;
  case CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE: return GCAP_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE;
  default: return GCAP_ERROR_BACKEND;
  }
}

static const char *error_name(CUresult r) {
  const char *name = NULL;
  if (driver.cuGetErrorName && driver.cuGetErrorName(r, &name) == CUDA_SUCCESS && name) return name;
  return "an unknown CUDA error";
}

static const char *error_text(CUresult r) {
  const char *text = NULL;
  if (driver.cuGetErrorString && driver.cuGetErrorString(r, &text) == CUDA_SUCCESS && text) return text;
  return "no description";
}

gcap_status gcap__cuda_check(CUresult r, const char *call_fmt, ...) {
  if (r == CUDA_SUCCESS) return GCAP_SUCCESS;
  char call[256];
  va_list ap;
  va_start(ap, call_fmt);
  vsnprintf(call, sizeof call, call_fmt, ap);
  va_end(ap);
  return gcap__fail(gcap__cuda_status(r), "%s failed: %s (%d, %s)", call, error_name(r), (int)r, error_text(r));
}

static void refuse(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;
static void refuse(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(load_reason, sizeof load_reason, fmt, ap);
  va_end(ap);
  load_status = GCAP_ERROR_NOT_INITIALIZED;
}

/* dlsym returns a data pointer; ISO C has no cast to a function pointer, so copy the bits (POSIX). */
static bool symbol(void *lib, const char *name, void *fn_slot, size_t size) {
  void *p = dlsym(lib, name);
  if (!p || size != sizeof p) return false;
  memcpy(fn_slot, &p, sizeof p);
  return true;
}

static bool resolve(PFN_cuGetProcAddress_v12000 get, const char *name, int version, void **slot, bool required) {
  CUdriverProcAddressQueryResult found = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  CUresult r = get(name, slot, version, CU_GET_PROC_ADDRESS_DEFAULT, &found);
  if (r == CUDA_SUCCESS && found == CU_GET_PROC_ADDRESS_SUCCESS && *slot) return true;
  *slot = NULL;
  if (required)
    refuse("the CUDA driver (version %d.%d) has no %s at ABI %d.%d", driver.version / 1000, driver.version % 1000 / 10,
           name, version / 1000, version % 1000 / 10);
  return !required;
}

static bool resolve_all(PFN_cuGetProcAddress_v12000 get) {
  bool ok = true;
#define GCAP_CUDA_RESOLVE(name, version) ok = ok && resolve(get, #name, version, (void **)&driver.name, true);
  GCAP_CUDA_REQUIRED(GCAP_CUDA_RESOLVE)
#undef GCAP_CUDA_RESOLVE
#define GCAP_CUDA_RESOLVE(name, version) ok = ok && resolve(get, #name, version, (void **)&driver.name, false);
  GCAP_CUDA_OPTIONAL(GCAP_CUDA_RESOLVE)
#undef GCAP_CUDA_RESOLVE
  return ok;
}

static void load(void) {
  void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char *why = dlerror();
    refuse("no CUDA driver: dlopen(\"libcuda.so.1\") failed (%s)", why ? why : "no reason given");
    return;
  }
  /* The library stays loaded for the life of the process: its functions may run on driver threads. */
  PFN_cuDriverGetVersion_v2020 get_version = NULL;
  if (!symbol(lib, "cuDriverGetVersion", &get_version, sizeof get_version) ||
      get_version(&driver.version) != CUDA_SUCCESS) {
    refuse("libcuda.so.1 has no working cuDriverGetVersion");
    return;
  }
  if (driver.version < GCAP_CUDA_MIN_DRIVER) {
    refuse("the CUDA driver is version %d.%d; gcap needs %d.%d or newer (cuGetProcAddress_v2)", driver.version / 1000,
           driver.version % 1000 / 10, GCAP_CUDA_MIN_DRIVER / 1000, GCAP_CUDA_MIN_DRIVER % 1000 / 10);
    return;
  }
  PFN_cuGetProcAddress_v12000 get = NULL;
  if (!symbol(lib, "cuGetProcAddress_v2", &get, sizeof get)) {
    refuse("the CUDA driver (version %d.%d) has no cuGetProcAddress_v2", driver.version / 1000,
           driver.version % 1000 / 10);
    return;
  }
  if (!resolve_all(get)) return;
  CUresult r = driver.cuInit(0);
  if (r != CUDA_SUCCESS) {
    refuse("cuInit failed: %s (%d, %s)", error_name(r), (int)r, error_text(r));
    return;
  }
  r = driver.cuDeviceGetCount(&driver.device_count);
  if (r != CUDA_SUCCESS || driver.device_count == 0) {
    refuse("the CUDA driver (version %d.%d) sees no device%s%s", driver.version / 1000, driver.version % 1000 / 10,
           r != CUDA_SUCCESS ? ": cuDeviceGetCount failed with " : "", r != CUDA_SUCCESS ? error_name(r) : "");
    return;
  }
  load_status = GCAP_SUCCESS;
}

gcap_status gcap__cuda_driver(const struct gcap__cuda_driver **out) {
  pthread_once(&load_once, load);
  if (load_status != GCAP_SUCCESS) return gcap__fail(load_status, "%s", load_reason);
  *out = &driver;
  return GCAP_SUCCESS;
}
