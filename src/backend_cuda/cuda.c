/*
 * The CUDA driver backend: every op of the table on the driver API. The core has checked every
 * argument; what fails here is the driver, and its CUresult becomes a gcap status at this boundary.
 */
#include <assert.h>
#include <string.h>

#include "alloc.h"
#include "cuda_internal.h"
#include "error.h"

struct cuda_context *cuda_context_from(struct gcap__backend_ctx *b) {
  assert(b->ops == &gcap__cuda_ops);
  return (struct cuda_context *)b;
}

gcap_status cuda_enter(struct cuda_context *c) {
  CUcontext current = NULL;
  if (c->d->cuCtxGetCurrent(&current) == CUDA_SUCCESS && current == c->ctx) return GCAP_SUCCESS;
  return gcap__cuda_check(c->d->cuCtxSetCurrent(c->ctx), "cuCtxSetCurrent");
}

/* Enters b's context or returns the failure: the first line of every op. */
#define ENTER(b)                                                                                                       \
  struct cuda_context *c = cuda_context_from(b);                                                                       \
  do {                                                                                                                 \
    gcap_status entered = cuda_enter(c);                                                                               \
    if (entered != GCAP_SUCCESS) return entered;                                                                       \
  } while (0)

void CUDA_CB cuda_host_trampoline(void *record) {
  const struct cuda_host_call *call = record;
  gcap__run_host_fn(call->fn, call->user_data);
}

/* Eager host functions own their record and free it once they have run. */
static void CUDA_CB host_once(void *record) {
  cuda_host_trampoline(record);
  gcap__free(record);
}

static gcap_status cuda_available(void) {
  const struct gcap__cuda_driver *d = NULL;
  return gcap__cuda_driver(&d);
}

static gcap_status cuda_context_create(const gcap_context_options *o, struct gcap__backend_ctx **out) {
  const struct gcap__cuda_driver *d = NULL;
  gcap_status st = gcap__cuda_driver(&d);
  if (st != GCAP_SUCCESS) return st;
  if (o->device < 0 || o->device >= d->device_count)
    return gcap__fail(GCAP_ERROR_INVALID_VALUE, "options->device %d: this machine has %d CUDA device(s)", o->device,
                      d->device_count);
  struct cuda_context *c = gcap__calloc(1, sizeof *c);
  if (!c) return gcap__fail(GCAP_ERROR_OUT_OF_MEMORY, "no memory for the CUDA context");
  c->base.ops = &gcap__cuda_ops;
  c->d = d;
  st = gcap__cuda_check(d->cuDeviceGet(&c->device, o->device), "cuDeviceGet(%d)", o->device);
  if (st == GCAP_SUCCESS)
    st = gcap__cuda_check(d->cuDevicePrimaryCtxRetain(&c->ctx, c->device), "cuDevicePrimaryCtxRetain(device %d)",
                          o->device);
  if (st != GCAP_SUCCESS) {
    gcap__free(c);
    return st;
  }
  *out = &c->base;
  return GCAP_SUCCESS;
}

static void cuda_context_destroy(struct gcap__backend_ctx *b) {
  struct cuda_context *c = cuda_context_from(b);
  c->d->cuDevicePrimaryCtxRelease(c->device);
  gcap__free(c);
}

static gcap_status cuda_context_synchronize(struct gcap__backend_ctx *b) {
  ENTER(b);
  return gcap__cuda_check(c->d->cuCtxSynchronize(), "cuCtxSynchronize");
}

static gcap_status cuda_mem_alloc(struct gcap__backend_ctx *b, size_t bytes, void **out) {
  ENTER(b);
  CUdeviceptr p = 0;
  gcap_status st = gcap__cuda_check(c->d->cuMemAlloc(&p, bytes), "cuMemAlloc(%zu bytes)", bytes);
  if (st == GCAP_SUCCESS) *out = (void *)(uintptr_t)p;
  return st;
}

static gcap_status cuda_mem_free(struct gcap__backend_ctx *b, void *p) {
  ENTER(b);
  return gcap__cuda_check(c->d->cuMemFree(cuda_dptr(p)), "cuMemFree(%p)", p);
}

static gcap_status cuda_host_alloc(struct gcap__backend_ctx *b, size_t bytes, void **out) {
  ENTER(b);
  return gcap__cuda_check(c->d->cuMemAllocHost(out, bytes), "cuMemAllocHost(%zu bytes)", bytes);
}

static gcap_status cuda_host_free(struct gcap__backend_ctx *b, void *p) {
  ENTER(b);
  return gcap__cuda_check(c->d->cuMemFreeHost(p), "cuMemFreeHost(%p)", p);
}

/* Every gcap stream is non-blocking: there is no legacy NULL stream to synchronize with. */
static gcap_status cuda_stream_create(struct gcap__backend_ctx *b, void **out) {
  ENTER(b);
  CUstream s = NULL;
  gcap_status st = gcap__cuda_check(c->d->cuStreamCreate(&s, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
  if (st == GCAP_SUCCESS) *out = s;
  return st;
}

static void cuda_stream_destroy(struct gcap__backend_ctx *b, void *stream) {
  struct cuda_context *c = cuda_context_from(b);
  if (cuda_enter(c) == GCAP_SUCCESS) c->d->cuStreamDestroy(stream);
}

static gcap_status cuda_stream_synchronize(struct gcap__backend_ctx *b, void *stream) {
  ENTER(b);
  return gcap__cuda_check(c->d->cuStreamSynchronize(stream), "cuStreamSynchronize(%p)", stream);
}

static gcap_status cuda_stream_query(struct gcap__backend_ctx *b, void *stream) {
  ENTER(b);
  CUresult r = c->d->cuStreamQuery(stream);
  if (r == CUDA_ERROR_NOT_READY) return gcap__fail(GCAP_ERROR_NOT_READY, "stream %p has work pending", stream);
  return gcap__cuda_check(r, "cuStreamQuery(%p)", stream);
}

static gcap_status cuda_memcpy(struct gcap__backend_ctx *b, void *stream, const struct gcap__copy *cp) {
  ENTER(b);
  CUresult r = stream ? c->d->cuMemcpyAsync(cuda_dptr(cp->dst), cuda_dptr(cp->src), cp->bytes, stream)
                      : c->d->cuMemcpy(cuda_dptr(cp->dst), cuda_dptr(cp->src), cp->bytes);
  return gcap__cuda_check(r, "%s(%p <- %p, %zu bytes)", stream ? "cuMemcpyAsync" : "cuMemcpy", cp->dst, cp->src,
                          cp->bytes);
}

static CUresult fill_1d(const struct gcap__cuda_driver *d, const struct gcap__fill *f, CUstream s) {
  switch (f->element_size) {
  case 1: return d->cuMemsetD8Async(cuda_dptr(f->dst), (unsigned char)f->value, f->width, s);
  case 2: return d->cuMemsetD16Async(cuda_dptr(f->dst), (unsigned short)f->value, f->width, s);
  default: return d->cuMemsetD32Async(cuda_dptr(f->dst), f->value, f->width, s);
  }
}

static CUresult fill_2d(const struct gcap__cuda_driver *d, const struct gcap__fill *f, CUstream s) {
  switch (f->element_size) {
  case 1: return d->cuMemsetD2D8Async(cuda_dptr(f->dst), f->pitch, (unsigned char)f->value, f->width, f->height, s);
  case 2: return d->cuMemsetD2D16Async(cuda_dptr(f->dst), f->pitch, (unsigned short)f->value, f->width, f->height, s);
  default: return d->cuMemsetD2D32Async(cuda_dptr(f->dst), f->pitch, f->value, f->width, f->height, s);
  }
}

static gcap_status cuda_memset(struct gcap__backend_ctx *b, void *stream, const struct gcap__fill *f) {
  ENTER(b);
  CUresult r = f->height > 1 ? fill_2d(c->d, f, stream) : fill_1d(c->d, f, stream);
  if (r == CUDA_SUCCESS && !stream) r = c->d->cuStreamSynchronize(NULL); /* the synchronous form */
  return gcap__cuda_check(r, "cuMemsetD%s%uAsync(%p, %zu x %zu elements)", f->height > 1 ? "2D" : "",
                          f->element_size * 8, f->dst, f->width, f->height);
}

static gcap_status cuda_launch_kernel(struct gcap__backend_ctx *b, void *stream, const struct gcap__launch *l) {
  ENTER(b);
  CUresult r = c->d->cuLaunchKernel(l->kernel->impl, l->grid.x, l->grid.y, l->grid.z, l->block.x, l->block.y,
                                    l->block.z, l->shared_mem_bytes, stream, (void **)l->args, NULL);
  return gcap__cuda_check(r, "cuLaunchKernel(\"%s\")", l->kernel->name);
}

static gcap_status cuda_launch_host_func(struct gcap__backend_ctx *b, void *stream, gcap_host_fn fn, void *user_data) {
  ENTER(b);
  struct cuda_host_call *call = gcap__malloc(sizeof *call);
  if (!call) return gcap__fail(GCAP_ERROR_OUT_OF_MEMORY, "no memory for the host function's record");
  *call = (struct cuda_host_call){fn, user_data, NULL};
  gcap_status st = gcap__cuda_check(c->d->cuLaunchHostFunc(stream, host_once, call), "cuLaunchHostFunc");
  if (st != GCAP_SUCCESS) gcap__free(call);
  return st;
}

static gcap_status cuda_event_create(struct gcap__backend_ctx *b, void **out) {
  ENTER(b);
  CUevent e = NULL;
  gcap_status st = gcap__cuda_check(c->d->cuEventCreate(&e, CU_EVENT_DISABLE_TIMING), "cuEventCreate");
  if (st == GCAP_SUCCESS) *out = e;
  return st;
}

static void cuda_event_destroy(struct gcap__backend_ctx *b, void *event) {
  struct cuda_context *c = cuda_context_from(b);
  if (cuda_enter(c) == GCAP_SUCCESS) c->d->cuEventDestroy(event);
}

static gcap_status cuda_event_record(struct gcap__backend_ctx *b, void *event, void *stream) {
  ENTER(b);
  return gcap__cuda_check(c->d->cuEventRecord(event, stream), "cuEventRecord(%p, stream %p)", event, stream);
}

static gcap_status cuda_stream_wait_event(struct gcap__backend_ctx *b, void *stream, void *event) {
  ENTER(b);
  return gcap__cuda_check(c->d->cuStreamWaitEvent(stream, event, 0), "cuStreamWaitEvent(stream %p, %p)", stream, event);
}

static gcap_status cuda_event_synchronize(struct gcap__backend_ctx *b, void *event) {
  ENTER(b);
  return gcap__cuda_check(c->d->cuEventSynchronize(event), "cuEventSynchronize(%p)", event);
}

static gcap_status cuda_event_query(struct gcap__backend_ctx *b, void *event) {
  ENTER(b);
  CUresult r = c->d->cuEventQuery(event);
  if (r == CUDA_ERROR_NOT_READY) return gcap__fail(GCAP_ERROR_NOT_READY, "event %p has work pending", event);
  return gcap__cuda_check(r, "cuEventQuery(%p)", event);
}

/* cuModuleLoadData reads PTX up to its NUL; an ELF cubin or a fatbin carries its own size. */
static bool needs_terminator(const unsigned char *image, size_t size) {
  static const unsigned char elf[4] = {0x7f, 'E', 'L', 'F'};
  static const unsigned char fatbin[4] = {0x50, 0xed, 0x55, 0xba};
  if (size >= 4 && (memcmp(image, elf, 4) == 0 || memcmp(image, fatbin, 4) == 0)) return false;
  return size > 0 && image[size - 1] != '\0';
}

static gcap_status cuda_module_load(struct gcap__backend_ctx *b, const gcap_module_desc *desc, void **out) {
  ENTER(b);
  if (!desc->image || desc->image_size == 0)
    return gcap__fail(GCAP_ERROR_INVALID_VALUE,
                      "desc->image is %s: the CUDA backend loads kernels from PTX text, a cubin or a fatbin",
                      desc->image ? "empty" : "NULL");
  const void *image = desc->image;
  char *copy = NULL;
  if (needs_terminator(desc->image, desc->image_size)) {
    copy = gcap__malloc(desc->image_size + 1);
    if (!copy) return gcap__fail(GCAP_ERROR_OUT_OF_MEMORY, "no memory to terminate the PTX text");
    memcpy(copy, desc->image, desc->image_size);
    copy[desc->image_size] = '\0';
    image = copy;
  }
  CUmodule m = NULL;
  gcap_status st =
      gcap__cuda_check(c->d->cuModuleLoadData(&m, image), "cuModuleLoadData(%zu-byte image)", desc->image_size);
  gcap__free(copy);
  if (st == GCAP_SUCCESS) *out = m;
  return st;
}

static void cuda_module_unload(struct gcap__backend_ctx *b, void *module) {
  struct cuda_context *c = cuda_context_from(b);
  if (cuda_enter(c) == GCAP_SUCCESS) c->d->cuModuleUnload(module);
}

/* Parameter sizes from cuFuncGetParamInfo (CUDA 12.4): it answers INVALID_VALUE past the last one. */
static gcap_status param_sizes(const struct gcap__cuda_driver *d, CUfunction f, struct gcap__kernel_found *out) {
  size_t count = 0, offset = 0, size = 0;
  while (d->cuFuncGetParamInfo(f, count, &offset, &size) == CUDA_SUCCESS) count++;
  out->sizes_known = true;
  out->num_params = count;
  if (count == 0) return GCAP_SUCCESS;
  out->param_sizes = gcap__calloc(count, sizeof *out->param_sizes);
  if (!out->param_sizes) return gcap__fail(GCAP_ERROR_OUT_OF_MEMORY, "no memory for %zu parameter sizes", count);
  for (size_t i = 0; i < count; i++) {
    gcap_status st = gcap__cuda_check(d->cuFuncGetParamInfo(f, i, &offset, &out->param_sizes[i]),
                                      "cuFuncGetParamInfo(parameter %zu)", i);
    if (st != GCAP_SUCCESS) {
      gcap__free(out->param_sizes);
      out->param_sizes = NULL;
      return st;
    }
  }
  return GCAP_SUCCESS;
}

static gcap_status cuda_kernel_find(struct gcap__backend_ctx *b, void *module, const char *name,
                                    struct gcap__kernel_found *out) {
  ENTER(b);
  CUfunction f = NULL;
  CUresult r = c->d->cuModuleGetFunction(&f, module, name);
  if (r == CUDA_ERROR_NOT_FOUND) return gcap__fail(GCAP_ERROR_NOT_FOUND, "the module image has no kernel \"%s\"", name);
  gcap_status st = gcap__cuda_check(r, "cuModuleGetFunction(\"%s\")", name);
  if (st != GCAP_SUCCESS) return st;
  *out = (struct gcap__kernel_found){.fn = f};
  return c->d->cuFuncGetParamInfo ? param_sizes(c->d, f, out) : GCAP_SUCCESS;
}

/* A native capture in RELAXED mode holds the stream: anything issued on it lands in that graph. */
static gcap_status cuda_stream_capture_begin(struct gcap__backend_ctx *b, void *stream) {
  ENTER(b);
  return gcap__cuda_check(c->d->cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_RELAXED),
                          "cuStreamBeginCapture(stream %p) to watch for work issued behind gcap", stream);
}

static void cuda_stream_capture_end(struct gcap__backend_ctx *b, void *stream, size_t *foreign_work) {
  struct cuda_context *c = cuda_context_from(b);
  CUgraph g = NULL;
  *foreign_work = 0;
  if (cuda_enter(c) != GCAP_SUCCESS) return;
  CUresult r = c->d->cuStreamEndCapture(stream, &g);
  size_t count = 0;
  if (r != CUDA_SUCCESS) count = 1; /* the native capture was invalidated: something was issued */
  else if (g && c->d->cuGraphGetNodes(g, NULL, &count) != CUDA_SUCCESS) count = 1;
  if (g) c->d->cuGraphDestroy(g);
  *foreign_work = count;
}

static gcap_status cuda_native_graph_clone(struct gcap__backend_ctx *b, void *native, void **out) {
  ENTER(b);
  CUgraph g = NULL;
  gcap_status st = gcap__cuda_check(c->d->cuGraphClone(&g, native), "cuGraphClone(%p)", native);
  if (st == GCAP_SUCCESS) *out = g;
  return st;
}

static void cuda_native_graph_destroy(struct gcap__backend_ctx *b, void *native) {
  struct cuda_context *c = cuda_context_from(b);
  if (cuda_enter(c) == GCAP_SUCCESS) c->d->cuGraphDestroy(native);
}

const struct gcap_backend_ops gcap__cuda_ops = {
    .name = "cuda",
    .knows_all_device_memory = false,
    .available = cuda_available,
    .context_create = cuda_context_create,
    .context_destroy = cuda_context_destroy,
    .context_synchronize = cuda_context_synchronize,
    .mem_alloc = cuda_mem_alloc,
    .mem_free = cuda_mem_free,
    .host_alloc = cuda_host_alloc,
    .host_free = cuda_host_free,
    .stream_create = cuda_stream_create,
    .stream_destroy = cuda_stream_destroy,
    .stream_synchronize = cuda_stream_synchronize,
    .stream_query = cuda_stream_query,
    .memcpy = cuda_memcpy,
    .memset = cuda_memset,
    .launch_kernel = cuda_launch_kernel,
    .launch_host_func = cuda_launch_host_func,
    .event_create = cuda_event_create,
    .event_destroy = cuda_event_destroy,
    .event_record = cuda_event_record,
    .stream_wait_event = cuda_stream_wait_event,
    .event_synchronize = cuda_event_synchronize,
    .event_query = cuda_event_query,
    .module_load = cuda_module_load,
    .module_unload = cuda_module_unload,
    .kernel_find = cuda_kernel_find,
    .exec_create = cuda_exec_create,
    .exec_destroy = cuda_exec_destroy,
    .exec_upload = cuda_exec_upload,
    .exec_launch = cuda_exec_launch,
    .exec_set_entry = cuda_exec_set_entry,
    .exec_update = cuda_exec_update,
    .stream_capture_begin = cuda_stream_capture_begin,
    .stream_capture_end = cuda_stream_capture_end,
    .native_graph_clone = cuda_native_graph_clone,
    .native_graph_destroy = cuda_native_graph_destroy,
    .sim_get_stats = NULL,
};
