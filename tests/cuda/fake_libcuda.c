/*
 * A stand-in libcuda.so.1 for testing how gcap loads the driver on machines without one. It
 * answers only what loading needs, steered by environment variables:
 *   FAKE_CUDA_VERSION  cuDriverGetVersion's answer (default 12040)
 *   FAKE_CUDA_INIT     cuInit's CUresult (default 0)
 *   FAKE_CUDA_DEVICES  cuDeviceGetCount's answer (default 1)
 *   FAKE_CUDA_MISSING  one entry point cuGetProcAddress reports as not found
 *   FAKE_CUDA_RETAIN   cuDevicePrimaryCtxRetain's CUresult (default 2, out of memory)
 * Every other entry point fails with CUDA_ERROR_NOT_SUPPORTED; gcap must never get that far.
 */
#include <cuda.h>
#include <stdlib.h>
#include <string.h>

static int env_int(const char *name, int fallback) {
  const char *v = getenv(name);
  return v && *v ? atoi(v) : fallback;
}

CUresult CUDAAPI cuDriverGetVersion(int *version) {
  *version = env_int("FAKE_CUDA_VERSION", 12040);
  return CUDA_SUCCESS;
}

static CUresult CUDAAPI fake_init(unsigned flags) {
  (void)flags;
  return (CUresult)env_int("FAKE_CUDA_INIT", 0);
}

static CUresult CUDAAPI fake_device_count(int *count) {
  *count = env_int("FAKE_CUDA_DEVICES", 1);
  return CUDA_SUCCESS;
}

static CUresult CUDAAPI fake_device_get(CUdevice *device, int ordinal) {
  *device = ordinal;
  return CUDA_SUCCESS;
}

static CUresult CUDAAPI fake_retain(CUcontext *ctx, CUdevice device) {
  (void)device;
  *ctx = NULL;
  return (CUresult)env_int("FAKE_CUDA_RETAIN", CUDA_ERROR_OUT_OF_MEMORY);
}

static CUresult CUDAAPI fake_error_name(CUresult r, const char **name) {
  switch (r) {
  case CUDA_ERROR_OUT_OF_MEMORY: *name = "CUDA_ERROR_OUT_OF_MEMORY"; return CUDA_SUCCESS;
  case CUDA_ERROR_NO_DEVICE: *name = "CUDA_ERROR_NO_DEVICE"; return CUDA_SUCCESS;
  case CUDA_ERROR_NOT_SUPPORTED: *name = "CUDA_ERROR_NOT_SUPPORTED"; return CUDA_SUCCESS;
  default: return CUDA_ERROR_INVALID_VALUE;
  }
}

static CUresult CUDAAPI fake_error_string(CUresult r, const char **text) {
  (void)r;
  *text = "fake driver";
  return CUDA_SUCCESS;
}

static CUresult CUDAAPI not_supported(void) { return CUDA_ERROR_NOT_SUPPORTED; }

struct entry {
  const char *name;
  void (*fn)(void);
};

#define ENTRY(name, fn) {name, (void (*)(void))(fn)}
static const struct entry entries[] = {
    ENTRY("cuInit", fake_init),
    ENTRY("cuDeviceGetCount", fake_device_count),
    ENTRY("cuDeviceGet", fake_device_get),
    ENTRY("cuDevicePrimaryCtxRetain", fake_retain),
    ENTRY("cuGetErrorName", fake_error_name),
    ENTRY("cuGetErrorString", fake_error_string),
};

CUresult CUDAAPI cuGetProcAddress(const char *symbol, void **pfn, int version, cuuint64_t flags,
                                  CUdriverProcAddressQueryResult *status) {
  (void)version, (void)flags;
  const char *missing = getenv("FAKE_CUDA_MISSING");
  if (missing && strcmp(missing, symbol) == 0) {
    *pfn = NULL;
    *status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    return CUDA_ERROR_NOT_FOUND;
  }
  void (*fn)(void) = (void (*)(void))not_supported;
  for (size_t i = 0; i < sizeof entries / sizeof entries[0]; i++)
    if (strcmp(entries[i].name, symbol) == 0) fn = entries[i].fn;
  memcpy(pfn, &fn, sizeof fn);
  *status = CU_GET_PROC_ADDRESS_SUCCESS;
  return CUDA_SUCCESS;
}
