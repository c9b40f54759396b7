/* Copies and sets: 1-D, 2-D and 3-D (linear memory only: gcap has no CUDA arrays), to and from
 * __device__ variables, between "peers" (device 0 with itself), and fills.
 *
 * A synchronous call is issued on the default stream (the legacy stream, or the thread's own for
 * the _ptds twins of -default-stream per-thread programs) and returns when its work is done,
 * except a device-to-device copy and a fill of device memory, which CUDA leaves asynchronous
 * with respect to the host (they still come after all earlier work of the stream). */
#include "cudart.h"

#include <string.h>

static int bad_kind(enum cudaMemcpyKind kind) { return (unsigned)kind > cudaMemcpyDefault; }

static int capturing(gcap_stream *s) {
  gcap_capture_status cs = GCAP_CAPTURE_STATUS_NONE;
  return gcap_stream_is_capturing(s, &cs) == GCAP_SUCCESS && cs != GCAP_CAPTURE_STATUS_NONE;
}

/* The end of a synchronous call: waits for the stream unless the work may stay asynchronous. */
static cudaError_t finish_sync(const char *fn, gcap_stream *s, cudaError_t e, int async_ok) {
  if (e || async_ok || capturing(s)) return e;
  return gcap__rt_done(fn, gcap_stream_synchronize(s));
}

/* Whether p is pageable host memory as far as the runtime knows: nothing it allocated or registered. */
static int pageable(const void *p) { return gcap__rt_mem_type(p) == GCAP__RT_MEM_UNKNOWN; }

/* The end of an asynchronous copy. CUDA returns from one whose host side is pageable memory only
 * once the program may reuse that memory: a copy to pageable memory has completed, one from it
 * has been staged; a host-to-host copy is fully synchronous. The simulator waits for the stream
 * instead of staging: a little more than CUDA, which no correct program can tell, and what keeps
 * such programs right in DEFERRED mode. Page-locked, registered and managed memory stay asynchronous. */
static cudaError_t finish_async(const char *fn, gcap_stream *s, cudaError_t e, const void *dst, const void *src,
                                enum cudaMemcpyKind kind) {
  int wait = kind == cudaMemcpyHostToHost || (kind == cudaMemcpyHostToDevice && pageable(src)) ||
             (kind == cudaMemcpyDeviceToHost && pageable(dst)) ||
             (kind == cudaMemcpyDefault && (pageable(src) || pageable(dst)));
  if (e || !wait || capturing(s)) return e;
  return gcap__rt_done(fn, gcap_stream_synchronize(s));
}

/* ---- 1-D copies ---- */

static cudaError_t copy_async(const char *fn, void *dst, const void *src, size_t count, enum cudaMemcpyKind kind,
                              gcap_stream *s) {
  if (bad_kind(kind)) return gcap__rt_fail(fn, cudaErrorInvalidMemcpyDirection, "kind %d", (int)kind);
  if (!count) return cudaSuccess;
  return gcap__rt_done(fn, gcap_memcpy_async(s, dst, src, count, (gcap_memcpy_kind)kind));
}

static cudaError_t memcpy_sync(const char *fn, void *dst, const void *src, size_t count, enum cudaMemcpyKind kind,
                               enum gcap__rt_default d) {
  gcap_stream *s;
  cudaError_t e = gcap__rt_stream(0, d, &s);
  if (e) return e;
  e = copy_async(fn, dst, src, count, kind, s);
  return finish_sync(fn, s, e, kind == cudaMemcpyDeviceToDevice);
}

cudaError_t cudaMemcpy(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind) {
  return memcpy_sync(__func__, dst, src, count, kind, GCAP__RT_LEGACY);
}

cudaError_t cudaMemcpy_ptds(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind);
cudaError_t cudaMemcpy_ptds(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind) {
  return memcpy_sync(__func__, dst, src, count, kind, GCAP__RT_PER_THREAD);
}

static cudaError_t memcpy_async(const char *fn, void *dst, const void *src, size_t count, enum cudaMemcpyKind kind,
                                cudaStream_t stream, enum gcap__rt_default d) {
  gcap_stream *s;
  cudaError_t e = gcap__rt_stream(stream, d, &s);
  if (e) return e;
  e = copy_async(fn, dst, src, count, kind, s);
  return count ? finish_async(fn, s, e, dst, src, kind) : e;
}

cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind, cudaStream_t stream) {
  return memcpy_async(__func__, dst, src, count, kind, stream, GCAP__RT_LEGACY);
}

cudaError_t cudaMemcpyAsync_ptsz(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind,
                                 cudaStream_t stream);
cudaError_t cudaMemcpyAsync_ptsz(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind,
                                 cudaStream_t stream) {
  return memcpy_async(__func__, dst, src, count, kind, stream, GCAP__RT_PER_THREAD);
}

/* ---- Peers: the simulator has one device ---- */

static cudaError_t check_peers(const char *fn, int dst_device, int src_device) {
  if (dst_device != 0 || src_device != 0)
    return gcap__rt_fail(fn, cudaErrorInvalidDevice, "device %d: the simulator has device 0 only",
                         dst_device != 0 ? dst_device : src_device);
  return cudaSuccess;
}

cudaError_t cudaMemcpyPeer(void *dst, int dst_device, const void *src, int src_device, size_t count) {
  gcap_context *ctx;
  cudaError_t e = gcap__rt_enter(&ctx);
  if (!e) e = check_peers(__func__, dst_device, src_device);
  return e ? e : memcpy_sync(__func__, dst, src, count, cudaMemcpyDeviceToDevice, GCAP__RT_LEGACY);
}

cudaError_t cudaMemcpyPeerAsync(void *dst, int dst_device, const void *src, int src_device, size_t count,
                                cudaStream_t stream) {
  gcap_context *ctx;
  cudaError_t e = gcap__rt_enter(&ctx);
  if (!e) e = check_peers(__func__, dst_device, src_device);
  return e ? e : memcpy_async(__func__, dst, src, count, cudaMemcpyDeviceToDevice, stream, GCAP__RT_LEGACY);
}

/* ---- 2-D and 3-D copies ---- */

static cudaError_t copy_2d(const char *fn, void *dst, size_t dpitch, const void *src, size_t spitch, size_t width,
                           size_t height, enum cudaMemcpyKind kind, gcap_stream *s) {
  if (bad_kind(kind)) return gcap__rt_fail(fn, cudaErrorInvalidMemcpyDirection, "kind %d", (int)kind);
  if (!width || !height) return cudaSuccess;
  if (dpitch < width || spitch < width)
    return gcap__rt_fail(fn, cudaErrorInvalidPitchValue, "%s %zu is below width %zu",
                         dpitch < width ? "dpitch" : "spitch", dpitch < width ? dpitch : spitch, width);
  return gcap__rt_done(fn, gcap_memcpy_2d_async(s, dst, dpitch, src, spitch, width, height, (gcap_memcpy_kind)kind));
}

static cudaError_t memcpy_2d(const char *fn, void *dst, size_t dpitch, const void *src, size_t spitch, size_t width,
                             size_t height, enum cudaMemcpyKind kind, cudaStream_t stream, enum gcap__rt_default d,
                             int sync) {
  gcap_stream *s;
  cudaError_t e = gcap__rt_stream(stream, d, &s);
  if (e) return e;
  e = copy_2d(fn, dst, dpitch, src, spitch, width, height, kind, s);
  if (sync) return finish_sync(fn, s, e, kind == cudaMemcpyDeviceToDevice);
  return width && height ? finish_async(fn, s, e, dst, src, kind) : e;
}

cudaError_t cudaMemcpy2D(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width, size_t height,
                         enum cudaMemcpyKind kind) {
  return memcpy_2d(__func__, dst, dpitch, src, spitch, width, height, kind, 0, GCAP__RT_LEGACY, 1);
}

cudaError_t cudaMemcpy2D_ptds(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width, size_t height,
                              enum cudaMemcpyKind kind);
cudaError_t cudaMemcpy2D_ptds(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width, size_t height,
                              enum cudaMemcpyKind kind) {
  return memcpy_2d(__func__, dst, dpitch, src, spitch, width, height, kind, 0, GCAP__RT_PER_THREAD, 1);
}

cudaError_t cudaMemcpy2DAsync(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width, size_t height,
                              enum cudaMemcpyKind kind, cudaStream_t stream) {
  return memcpy_2d(__func__, dst, dpitch, src, spitch, width, height, kind, stream, GCAP__RT_LEGACY, 0);
}

cudaError_t cudaMemcpy2DAsync_ptsz(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width,
                                   size_t height, enum cudaMemcpyKind kind, cudaStream_t stream);
cudaError_t cudaMemcpy2DAsync_ptsz(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width,
                                   size_t height, enum cudaMemcpyKind kind, cudaStream_t stream) {
  return memcpy_2d(__func__, dst, dpitch, src, spitch, width, height, kind, stream, GCAP__RT_PER_THREAD, 0);
}

/* The address of byte (x, y, z) of a pitched pointer. */
static char *at3(struct cudaPitchedPtr p, size_t x, size_t y, size_t z) {
  return (char *)p.ptr + (z * p.ysize + y) * p.pitch + x;
}

/* A 3-D copy of linear memory is one 2-D copy per slice (in capture: one node per slice). */
static cudaError_t memcpy_3d(const char *fn, const struct cudaMemcpy3DParms *p, cudaStream_t stream,
                             enum gcap__rt_default d, int sync) {
  gcap_stream *s;
  cudaError_t e = gcap__rt_stream(stream, d, &s);
  if (e) return e;
  if (!p) return gcap__rt_fail(fn, cudaErrorInvalidValue, "p is NULL");
  if (p->srcArray || p->dstArray)
    return gcap__rt_fail(fn, cudaErrorNotSupported, "CUDA arrays: the simulator copies linear memory only");
  if (p->extent.depth > 1 &&
      (p->srcPtr.ysize < p->srcPos.y + p->extent.height || p->dstPtr.ysize < p->dstPos.y + p->extent.height))
    return gcap__rt_fail(fn, cudaErrorInvalidValue, "a slice of %zu rows does not fit a pitched pointer's ysize",
                         p->extent.height);
  for (size_t z = 0; z < p->extent.depth && !e; z++)
    e = copy_2d(fn, at3(p->dstPtr, p->dstPos.x, p->dstPos.y, p->dstPos.z + z), p->dstPtr.pitch,
                at3(p->srcPtr, p->srcPos.x, p->srcPos.y, p->srcPos.z + z), p->srcPtr.pitch, p->extent.width,
                p->extent.height, p->kind, s);
  if (sync) return finish_sync(fn, s, e, p->kind == cudaMemcpyDeviceToDevice);
  return p->extent.width && p->extent.height && p->extent.depth
             ? finish_async(fn, s, e, p->dstPtr.ptr, p->srcPtr.ptr, p->kind)
             : e;
}

cudaError_t cudaMemcpy3D(const struct cudaMemcpy3DParms *p) { return memcpy_3d(__func__, p, 0, GCAP__RT_LEGACY, 1); }

cudaError_t cudaMemcpy3D_ptds(const struct cudaMemcpy3DParms *p);
cudaError_t cudaMemcpy3D_ptds(const struct cudaMemcpy3DParms *p) {
  return memcpy_3d(__func__, p, 0, GCAP__RT_PER_THREAD, 1);
}

cudaError_t cudaMemcpy3DAsync(const struct cudaMemcpy3DParms *p, cudaStream_t stream) {
  return memcpy_3d(__func__, p, stream, GCAP__RT_LEGACY, 0);
}

cudaError_t cudaMemcpy3DAsync_ptsz(const struct cudaMemcpy3DParms *p, cudaStream_t stream);
cudaError_t cudaMemcpy3DAsync_ptsz(const struct cudaMemcpy3DParms *p, cudaStream_t stream) {
  return memcpy_3d(__func__, p, stream, GCAP__RT_PER_THREAD, 0);
}

/* ---- __device__ and __constant__ variables ---- */

cudaError_t cudaGetSymbolAddress(void **dev_ptr, const void *symbol) {
  gcap_context *ctx;
  cudaError_t e = gcap__rt_enter(&ctx);
  if (e) return e;
  if (!dev_ptr) return gcap__rt_fail(__func__, cudaErrorInvalidValue, "devPtr is NULL");
  size_t size = 0;
  return gcap__rt_symbol(symbol, dev_ptr, &size);
}

cudaError_t cudaGetSymbolSize(size_t *size, const void *symbol) {
  gcap_context *ctx;
  cudaError_t e = gcap__rt_enter(&ctx);
  if (e) return e;
  if (!size) return gcap__rt_fail(__func__, cudaErrorInvalidValue, "size is NULL");
  void *dptr = NULL;
  return gcap__rt_symbol(symbol, &dptr, size);
}

/* The device address of [offset, offset + count) of a variable; cudaErrorInvalidValue when the
 * range runs past it. `to`: a copy to the variable (kind host-to-device or device-to-device). */
static cudaError_t symbol_range(const char *fn, const void *symbol, size_t count, size_t offset,
                                enum cudaMemcpyKind kind, int to, char **out) {
  if (bad_kind(kind) || kind == cudaMemcpyHostToHost || kind == (to ? cudaMemcpyDeviceToHost : cudaMemcpyHostToDevice))
    return gcap__rt_fail(fn, cudaErrorInvalidMemcpyDirection, "kind %d for a copy %s a symbol", (int)kind,
                         to ? "to" : "from");
  void *dptr = NULL;
  size_t size = 0;
  cudaError_t e = gcap__rt_symbol(symbol, &dptr, &size);
  if (e) return e;
  if (offset > size || count > size - offset)
    return gcap__rt_fail(fn, cudaErrorInvalidValue, "offset %zu + count %zu runs past the variable's %zu bytes", offset,
                         count, size);
  *out = (char *)dptr + offset;
  return cudaSuccess;
}

static cudaError_t to_symbol(const char *fn, const void *symbol, const void *src, size_t count, size_t offset,
                             enum cudaMemcpyKind kind, cudaStream_t stream, enum gcap__rt_default d, int sync) {
  gcap_stream *s;
  cudaError_t e = gcap__rt_stream(stream, d, &s);
  char *dst = NULL;
  if (!e) e = symbol_range(fn, symbol, count, offset, kind, 1, &dst);
  if (!e) e = copy_async(fn, dst, src, count, kind, s);
  if (sync) return finish_sync(fn, s, e, kind == cudaMemcpyDeviceToDevice);
  return count ? finish_async(fn, s, e, dst, src, kind) : e;
}

static cudaError_t from_symbol(const char *fn, void *dst, const void *symbol, size_t count, size_t offset,
                               enum cudaMemcpyKind kind, cudaStream_t stream, enum gcap__rt_default d, int sync) {
  gcap_stream *s;
  cudaError_t e = gcap__rt_stream(stream, d, &s);
  char *src = NULL;
  if (!e) e = symbol_range(fn, symbol, count, offset, kind, 0, &src);
  if (!e) e = copy_async(fn, dst, src, count, kind, s);
  if (sync) return finish_sync(fn, s, e, kind == cudaMemcpyDeviceToDevice);
  return count ? finish_async(fn, s, e, dst, src, kind) : e;
}

cudaError_t cudaMemcpyToSymbol(const void *symbol, const void *src, size_t count, size_t offset,
                               enum cudaMemcpyKind kind) {
  return to_symbol(__func__, symbol, src, count, offset, kind, 0, GCAP__RT_LEGACY, 1);
}

cudaError_t cudaMemcpyToSymbol_ptds(const void *symbol, const void *src, size_t count, size_t offset,
                                    enum cudaMemcpyKind kind);
cudaError_t cudaMemcpyToSymbol_ptds(const void *symbol, const void *src, size_t count, size_t offset,
                                    enum cudaMemcpyKind kind) {
  return to_symbol(__func__, symbol, src, count, offset, kind, 0, GCAP__RT_PER_THREAD, 1);
}

cudaError_t cudaMemcpyToSymbolAsync(const void *symbol, const void *src, size_t count, size_t offset,
                                    enum cudaMemcpyKind kind, cudaStream_t stream) {
  return to_symbol(__func__, symbol, src, count, offset, kind, stream, GCAP__RT_LEGACY, 0);
}

cudaError_t cudaMemcpyToSymbolAsync_ptsz(const void *symbol, const void *src, size_t count, size_t offset,
                                         enum cudaMemcpyKind kind, cudaStream_t stream);
cudaError_t cudaMemcpyToSymbolAsync_ptsz(const void *symbol, const void *src, size_t count, size_t offset,
                                         enum cudaMemcpyKind kind, cudaStream_t stream) {
  return to_symbol(__func__, symbol, src, count, offset, kind, stream, GCAP__RT_PER_THREAD, 0);
}

cudaError_t cudaMemcpyFromSymbol(void *dst, const void *symbol, size_t count, size_t offset, enum cudaMemcpyKind kind) {
  return from_symbol(__func__, dst, symbol, count, offset, kind, 0, GCAP__RT_LEGACY, 1);
}

cudaError_t cudaMemcpyFromSymbol_ptds(void *dst, const void *symbol, size_t count, size_t offset,
                                      enum cudaMemcpyKind kind);
cudaError_t cudaMemcpyFromSymbol_ptds(void *dst, const void *symbol, size_t count, size_t offset,
                                      enum cudaMemcpyKind kind) {
  return from_symbol(__func__, dst, symbol, count, offset, kind, 0, GCAP__RT_PER_THREAD, 1);
}

cudaError_t cudaMemcpyFromSymbolAsync(void *dst, const void *symbol, size_t count, size_t offset,
                                      enum cudaMemcpyKind kind, cudaStream_t stream) {
  return from_symbol(__func__, dst, symbol, count, offset, kind, stream, GCAP__RT_LEGACY, 0);
}

cudaError_t cudaMemcpyFromSymbolAsync_ptsz(void *dst, const void *symbol, size_t count, size_t offset,
                                           enum cudaMemcpyKind kind, cudaStream_t stream);
cudaError_t cudaMemcpyFromSymbolAsync_ptsz(void *dst, const void *symbol, size_t count, size_t offset,
                                           enum cudaMemcpyKind kind, cudaStream_t stream) {
  return from_symbol(__func__, dst, symbol, count, offset, kind, stream, GCAP__RT_PER_THREAD, 0);
}

/* ---- Fills ----
 * Device and managed memory are filled in stream order. Page-locked host memory, which CUDA also
 * fills, is filled by the host once the stream's earlier work is done (the core fills device
 * memory only). A 2-D fill with rows apart is one fill per row (in capture: one node per row). */

/* Fills `height` rows of `width` bytes, `pitch` apart, on s (page-locked host memory: by the host). */
static cudaError_t fill_on(const char *fn, gcap_stream *s, void *dst, size_t pitch, int value, size_t width,
                           size_t height, enum gcap__rt_mem_type t) {
  if (height > 1 && pitch < width)
    return gcap__rt_fail(fn, cudaErrorInvalidPitchValue, "pitch %zu is below width %zu", pitch, width);
  if ((t == GCAP__RT_MEM_HOST || t == GCAP__RT_MEM_REGISTERED) && !capturing(s)) {
    cudaError_t e = gcap__rt_done(fn, gcap_stream_synchronize(s));
    for (size_t y = 0; y < height && !e; y++) memset((char *)dst + y * pitch, value, width);
    return e;
  }
  if (height == 1 || pitch == width) return gcap__rt_done(fn, gcap_memset_async(s, dst, value, width * height));
  cudaError_t e = cudaSuccess;
  for (size_t y = 0; y < height && !e; y++)
    e = gcap__rt_done(fn, gcap_memset_async(s, (char *)dst + y * pitch, value, width));
  return e;
}

/* `depth` slices of `height` rows each (`slice` bytes apart). */
static cudaError_t fill(const char *fn, void *dst, size_t pitch, int value, size_t width, size_t height, size_t depth,
                        size_t slice, cudaStream_t stream, enum gcap__rt_default d, int sync) {
  gcap_stream *s;
  cudaError_t e = gcap__rt_stream(stream, d, &s);
  if (e || !width || !height || !depth) return e;
  enum gcap__rt_mem_type t = gcap__rt_mem_type(dst);
  for (size_t z = 0; z < depth && !e; z++) e = fill_on(fn, s, (char *)dst + z * slice, pitch, value, width, height, t);
  /* The host may read managed memory as soon as a synchronous fill returns. */
  return sync ? finish_sync(fn, s, e, t != GCAP__RT_MEM_MANAGED) : e;
}

cudaError_t cudaMemset(void *dev_ptr, int value, size_t count) {
  return fill(__func__, dev_ptr, count, value, count, 1, 1, 0, 0, GCAP__RT_LEGACY, 1);
}

cudaError_t cudaMemset_ptds(void *dev_ptr, int value, size_t count);
cudaError_t cudaMemset_ptds(void *dev_ptr, int value, size_t count) {
  return fill(__func__, dev_ptr, count, value, count, 1, 1, 0, 0, GCAP__RT_PER_THREAD, 1);
}

cudaError_t cudaMemsetAsync(void *dev_ptr, int value, size_t count, cudaStream_t stream) {
  return fill(__func__, dev_ptr, count, value, count, 1, 1, 0, stream, GCAP__RT_LEGACY, 0);
}

cudaError_t cudaMemsetAsync_ptsz(void *dev_ptr, int value, size_t count, cudaStream_t stream);
cudaError_t cudaMemsetAsync_ptsz(void *dev_ptr, int value, size_t count, cudaStream_t stream) {
  return fill(__func__, dev_ptr, count, value, count, 1, 1, 0, stream, GCAP__RT_PER_THREAD, 0);
}

cudaError_t cudaMemset2D(void *dev_ptr, size_t pitch, int value, size_t width, size_t height) {
  return fill(__func__, dev_ptr, pitch, value, width, height, 1, 0, 0, GCAP__RT_LEGACY, 1);
}

cudaError_t cudaMemset2D_ptds(void *dev_ptr, size_t pitch, int value, size_t width, size_t height);
cudaError_t cudaMemset2D_ptds(void *dev_ptr, size_t pitch, int value, size_t width, size_t height) {
  return fill(__func__, dev_ptr, pitch, value, width, height, 1, 0, 0, GCAP__RT_PER_THREAD, 1);
}

cudaError_t cudaMemset2DAsync(void *dev_ptr, size_t pitch, int value, size_t width, size_t height,
                              cudaStream_t stream) {
  return fill(__func__, dev_ptr, pitch, value, width, height, 1, 0, stream, GCAP__RT_LEGACY, 0);
}

cudaError_t cudaMemset2DAsync_ptsz(void *dev_ptr, size_t pitch, int value, size_t width, size_t height,
                                   cudaStream_t stream);
cudaError_t cudaMemset2DAsync_ptsz(void *dev_ptr, size_t pitch, int value, size_t width, size_t height,
                                   cudaStream_t stream) {
  return fill(__func__, dev_ptr, pitch, value, width, height, 1, 0, stream, GCAP__RT_PER_THREAD, 0);
}

static cudaError_t fill_3d(const char *fn, struct cudaPitchedPtr p, int value, struct cudaExtent e, cudaStream_t stream,
                           enum gcap__rt_default d, int sync) {
  if (e.depth > 1 && p.ysize < e.height)
    return gcap__rt_fail(fn, cudaErrorInvalidValue, "a slice of %zu rows does not fit ysize %zu", e.height, p.ysize);
  return fill(fn, p.ptr, p.pitch, value, e.width, e.height, e.depth, p.pitch * p.ysize, stream, d, sync);
}

cudaError_t cudaMemset3D(struct cudaPitchedPtr p, int value, struct cudaExtent extent) {
  return fill_3d(__func__, p, value, extent, 0, GCAP__RT_LEGACY, 1);
}

cudaError_t cudaMemset3D_ptds(struct cudaPitchedPtr p, int value, struct cudaExtent extent);
cudaError_t cudaMemset3D_ptds(struct cudaPitchedPtr p, int value, struct cudaExtent extent) {
  return fill_3d(__func__, p, value, extent, 0, GCAP__RT_PER_THREAD, 1);
}

cudaError_t cudaMemset3DAsync(struct cudaPitchedPtr p, int value, struct cudaExtent extent, cudaStream_t stream) {
  return fill_3d(__func__, p, value, extent, stream, GCAP__RT_LEGACY, 0);
}

cudaError_t cudaMemset3DAsync_ptsz(struct cudaPitchedPtr p, int value, struct cudaExtent extent, cudaStream_t stream);
cudaError_t cudaMemset3DAsync_ptsz(struct cudaPitchedPtr p, int value, struct cudaExtent extent, cudaStream_t stream) {
  return fill_3d(__func__, p, value, extent, stream, GCAP__RT_PER_THREAD, 0);
}
