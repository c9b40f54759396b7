/* Memory: allocation of every kind, copies and sets, symbols. */
#include "cudart.h"

cudaError_t cudaMemcpy_ptds(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind);

cudaError_t cudaMalloc(void **dev_ptr, size_t size) {
  gcap_context *ctx;
  cudaError_t e = gcap__rt_enter(&ctx);
  if (e) return e;
  if (!dev_ptr) return gcap__rt_fail(__func__, cudaErrorInvalidValue, "devPtr is NULL");
  if (!size) return *dev_ptr = NULL, cudaSuccess;
  return gcap__rt_done(__func__, gcap_mem_alloc(ctx, size, dev_ptr));
}

cudaError_t cudaFree(void *dev_ptr) {
  gcap_context *ctx;
  cudaError_t e = gcap__rt_enter(&ctx);
  if (e || !dev_ptr) return e;
  return gcap__rt_done(__func__, gcap_mem_free(ctx, dev_ptr));
}

/* A synchronous copy is issued on the default stream and, unless it is device to device,
 * returns when it is done. */
static cudaError_t memcpy_sync(const char *fn, void *dst, const void *src, size_t count, enum cudaMemcpyKind kind,
                               enum gcap__rt_default d) {
  gcap_stream *s;
  cudaError_t e = gcap__rt_stream(0, d, &s);
  if (e) return e;
  if ((unsigned)kind > cudaMemcpyDefault)
    return gcap__rt_fail(fn, cudaErrorInvalidMemcpyDirection, "kind %d", (int)kind);
  e = gcap__rt_done(fn, gcap_memcpy_async(s, dst, src, count, (gcap_memcpy_kind)kind));
  if (e || kind == cudaMemcpyDeviceToDevice) return e;
  return gcap__rt_done(fn, gcap_stream_synchronize(s));
}

cudaError_t cudaMemcpy(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind) {
  return memcpy_sync(__func__, dst, src, count, kind, GCAP__RT_LEGACY);
}

cudaError_t cudaMemcpy_ptds(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind) {
  return memcpy_sync(__func__, dst, src, count, kind, GCAP__RT_PER_THREAD);
}
