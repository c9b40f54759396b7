/* Memory: allocation of every kind, what a pointer is, the device's memory figures, stream-ordered
 * allocation and pools, and the hints of managed memory. Copies and sets are in memcpy.c.
 *
 * gcap's core knows its allocations but has no public query for them, so the runtime keeps its
 * own table of what it handed out (cudaPointerGetAttributes, cudaMemGetInfo, cudaHostGetFlags,
 * cudaHostRegister) and of its pools' stream-ordered use; both are emptied by cudaDeviceReset. */
#include "cudart.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct rt_alloc {
  uintptr_t base;
  size_t bytes;
  enum gcap__rt_mem_type type;
  unsigned flags;  /* cudaHostAlloc's or cudaHostRegister's */
  gcap_pool *pool; /* stream-ordered allocations: the pool they count against */
};

/* A pool's figures the core does not keep: stream-ordered allocations outside capture come from
 * gcap_mem_alloc_async (the core's pools hold graph memory only), so the runtime counts them. */
struct rt_pool {
  gcap_pool *pool;
  uint64_t release_threshold;
  int reuse[3]; /* cudaMemPoolReuse*: policies the simulator does not need; kept for the getters */
  size_t used;  /* stream-ordered bytes allocated now */
  size_t used_high, reserved_high;
  struct rt_pool *next;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct rt_alloc *allocs; /* sorted by base */
static size_t alloc_count, alloc_cap;
static struct rt_pool *pools;
static gcap_pool *default_pool, *current_pool;
static unsigned long table_generation;

static void clear_pools(void) {
  while (pools) {
    struct rt_pool *p = pools;
    pools = p->next;
    free(p);
  }
  default_pool = current_pool = NULL;
}

/* Under lock: what belonged to an earlier context (before cudaDeviceReset) is forgotten. */
static void refresh(void) {
  unsigned long gen = gcap__rt_generation();
  if (gen == table_generation) return;
  table_generation = gen;
  alloc_count = 0;
  clear_pools(); /* their gcap pools went with the context */
}

__attribute__((destructor)) static void end_tables(void) {
  free(allocs);
  allocs = NULL;
  alloc_count = alloc_cap = 0;
  clear_pools();
}

/* Index of the first allocation whose base is above p. */
static size_t above(uintptr_t p) {
  size_t lo = 0, hi = alloc_count;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (allocs[mid].base <= p) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/* Under lock: the allocation holding p, or NULL. */
static struct rt_alloc *find(const void *p) {
  uintptr_t a = (uintptr_t)p;
  size_t i = above(a);
  if (i == 0) return NULL;
  struct rt_alloc *r = &allocs[i - 1];
  return a - r->base < (r->bytes ? r->bytes : 1) ? r : NULL;
}

static struct rt_pool *pool_info(gcap_pool *p) {
  for (struct rt_pool *q = pools; q; q = q->next)
    if (q->pool == p) return q;
  return NULL;
}

/* Records an allocation; 0, or -1 when there is no memory for the record. */
static int remember(void *p, size_t bytes, enum gcap__rt_mem_type type, unsigned flags, gcap_pool *pool) {
  pthread_mutex_lock(&lock);
  refresh();
  int r = 0;
  if (alloc_count == alloc_cap) {
    size_t cap = alloc_cap ? 2 * alloc_cap : 64;
    struct rt_alloc *n = realloc(allocs, cap * sizeof *n);
    if (!n) r = -1;
    else allocs = n, alloc_cap = cap;
  }
  if (r == 0) {
    size_t i = above((uintptr_t)p);
    memmove(&allocs[i + 1], &allocs[i], (alloc_count - i) * sizeof *allocs);
    allocs[i] = (struct rt_alloc){(uintptr_t)p, bytes, type, flags, pool};
    alloc_count++;
    struct rt_pool *q = pool ? pool_info(pool) : NULL;
    if (q) {
      q->used += bytes;
      if (q->used > q->used_high) q->used_high = q->used;
    }
  }
  pthread_mutex_unlock(&lock);
  return r;
}

/* Forgets the allocation starting at p (if the runtime made it). */
static void forget(const void *p) {
  pthread_mutex_lock(&lock);
  refresh();
  struct rt_alloc *r = find(p);
  if (r && r->base == (uintptr_t)p) {
    struct rt_pool *q = r->pool ? pool_info(r->pool) : NULL;
    if (q) q->used -= r->bytes;
    size_t i = (size_t)(r - allocs);
    memmove(&allocs[i], &allocs[i + 1], (alloc_count - i - 1) * sizeof *allocs);
    alloc_count--;
  }
  pthread_mutex_unlock(&lock);
}

void gcap__rt_mem_note_managed(void *p, size_t bytes) {
  if (remember(p, bytes, GCAP__RT_MEM_MANAGED, 0, NULL))
    fprintf(stderr, "gcap-cudart: out of memory recording a __managed__ variable\n");
}

enum gcap__rt_mem_type gcap__rt_mem_type(const void *p) {
  pthread_mutex_lock(&lock);
  refresh();
  const struct rt_alloc *r = find(p);
  enum gcap__rt_mem_type t = r ? r->type : GCAP__RT_MEM_UNKNOWN;
  pthread_mutex_unlock(&lock);
  return t;
}

/* ---- Allocation ---- */

cudaError_t cudaMalloc(void **dev_ptr, size_t size) {
  gcap_context *ctx;
  cudaError_t e = gcap__rt_enter(&ctx);
  if (e) return e;
  if (!dev_ptr) return gcap__rt_fail(__func__, cudaErrorInvalidValue, "devPtr is NULL");
  if (!size) return *dev_ptr = NULL, cudaSuccess;
  e = gcap__rt_done(__func__, gcap_mem_alloc(ctx, size, dev_ptr));
  if (!e && remember(*dev_ptr, size, GCAP__RT_MEM_DEVICE, 0, NULL) != 0) {
    gcap_mem_free(ctx, *dev_ptr);
    *dev_ptr = NULL;
    return gcap__rt_fail(__func__, cudaErrorMemoryAllocation, "no memory to record the allocation");
  }
  return e;
}

/* Frees device memory of any kind the runtime hands out for cudaFree: cudaMalloc, cudaMallocPitch,
 * cudaMalloc3D, cudaMallocManaged, and cudaMallocAsync (which cudaFree may free too). */
cudaError_t cudaFree(void *dev_ptr) {
  gcap_context *ctx;
  cudaError_t e = gcap__rt_enter(&ctx);
  if (e || !dev_ptr) return e;
  e = gcap__rt_done(__func__, gcap_mem_free(ctx, dev_ptr));
  if (!e) forget(dev_ptr);
  return e;
}

static cudaError_t host_alloc(const char *fn, void **ptr, size_t size, unsigned flags) {
  gcap_context *ctx;
  cudaError_t e = gcap__rt_enter(&ctx);
  if (e) return e;
  if (!ptr) return gcap__rt_fail(fn, cudaErrorInvalidValue, "the output pointer is NULL");
  *ptr = NULL;
  if (flags & ~(unsigned)(cudaHostAllocPortable | cudaHostAllocMapped | cudaHostAllocWriteCombined))
    return gcap__rt_fail(fn, cudaErrorInvalidValue, "flags 0x%x has bits no cudaHostAlloc flag has", flags);
  if (!size) return cudaSuccess;
  e = gcap__rt_done(fn, gcap_host_alloc(ctx, size, ptr));
  if (!e && remember(*ptr, size, GCAP__RT_MEM_HOST, flags, NULL) != 0) {
    gcap_host_free(ctx, *ptr);
    *ptr = NULL;
    return gcap__rt_fail(fn, cudaErrorMemoryAllocation, "no memory to record the allocation");
  }
  return e;
}

/* Page-locked memory is mapped and portable on every device with unified addressing. */
cudaError_t cudaMallocHost(void **ptr, size_t size) {
  return host_alloc(__func__, ptr, size, cudaHostAllocPortable | cudaHostAllocMapped);
}

/* The flags are accepted; the simulator's page-locked memory is always mapped (kernels may use
 * it at the same address) and never write-combined. */
cudaError_t cudaHostAlloc(void **ptr, size_t size, unsigned int flags) {
  return host_alloc(__func__, ptr, size, flags);
}

cudaError_t cudaFreeHost(void *ptr) {
  gcap_context *ctx;
  cudaError_t e = gcap__rt_enter(&ctx);
  if (e || !ptr) return e;
  e = gcap__rt_done(__func__, gcap_host_free(ctx, ptr));
  if (!e) forget(ptr);
  return e;
}

/* Page-locked and managed memory is reached by kernels at its host address (unified addressing). */
cudaError_t cudaHostGetDevicePointer(void **device, void *host, unsigned int flags) {
  gcap_context *ctx;
  cudaError_t e = gcap__rt_enter(&ctx);
  if (e) return e;
  if (!device) return gcap__rt_fail(__func__, cudaErrorInvalidValue, "pDevice is NULL");
  *device = NULL;
  if (flags) return gcap__rt_fail(__func__, cudaErrorInvalidValue, "flags is %u, not 0", flags);
  switch (gcap__rt_mem_type(host)) {
  case GCAP__RT_MEM_HOST:
  case GCAP__RT_MEM_MANAGED: *device = host; return cudaSuccess;
  case GCAP__RT_MEM_REGISTERED:
    return gcap__rt_fail(__func__, cudaErrorNotSupported,
                         "%p was registered with cudaHostRegister: the simulator's kernels reach only memory gcap "
                         "allocated; allocate it with cudaHostAlloc instead",
                         host);
  default: return gcap__rt_fail(__func__, cudaErrorInvalidValue, "%p is not page-locked memory of cudaHostAlloc", host);
  }
}

cudaError_t cudaHostGetFlags(unsigned int *flags, void *host) {
  gcap_context *ctx;
  cudaError_t e = gcap__rt_enter(&ctx);
  if (e) return e;
  if (!flags) return gcap__rt_fail(__func__, cudaErrorInvalidValue, "pFlags is NULL");
  pthread_mutex_lock(&lock);
  refresh();
  const struct rt_alloc *r = find(host);
  int ok = r && (r->type == GCAP__RT_MEM_HOST || r->type == GCAP__RT_MEM_REGISTERED);
  if (ok) *flags = r->flags;
  pthread_mutex_unlock(&lock);
  if (!ok) return gcap__rt_fail(__func__, cudaErrorInvalidValue, "%p is not page-locked host memory", host);
  return cudaSuccess;
}

/* The simulator cannot pin pageable memory, nor does it need to: a registration is recorded (so
 * that cudaPointerGetAttributes, cudaHostGetFlags and cudaHostUnregister answer as CUDA does) and
 * copies to and from the range work as from any host memory. Kernels cannot reach it. */
cudaError_t cudaHostRegister(void *ptr, size_t size, unsigned int flags) {
  gcap_context *ctx;
  cudaError_t e = gcap__rt_enter(&ctx);
  if (e) return e;
  if (!ptr) return gcap__rt_fail(__func__, cudaErrorInvalidValue, "ptr is NULL");
  if (!size) return gcap__rt_fail(__func__, cudaErrorInvalidValue, "size is 0");
  if (flags & ~(unsigned)(cudaHostRegisterPortable | cudaHostRegisterMapped | cudaHostRegisterIoMemory |
                          cudaHostRegisterReadOnly))
    return gcap__rt_fail(__func__, cudaErrorInvalidValue, "flags 0x%x has bits no cudaHostRegister flag has", flags);
  if (flags & cudaHostRegisterIoMemory)
    return gcap__rt_fail(__func__, cudaErrorNotSupported, "cudaHostRegisterIoMemory: the simulator has no I/O space");
  uintptr_t lo = (uintptr_t)ptr;
  if (lo + size < lo) return gcap__rt_fail(__func__, cudaErrorInvalidValue, "the range wraps the address space");
  pthread_mutex_lock(&lock);
  refresh();
  size_t i = above(lo + size - 1); /* the allocations starting at or below the range's last byte */
  const struct rt_alloc *r = i > 0 ? &allocs[i - 1] : NULL;
  int overlaps = r && r->base + (r->bytes ? r->bytes : 1) > lo;
  enum gcap__rt_mem_type t = overlaps ? r->type : GCAP__RT_MEM_UNKNOWN;
  pthread_mutex_unlock(&lock);
  if (t == GCAP__RT_MEM_REGISTERED || t == GCAP__RT_MEM_HOST)
    return gcap__rt_fail(__func__, cudaErrorHostMemoryAlreadyRegistered,
                         "[%p, +%zu bytes) overlaps page-locked memory at %p", ptr, size, (void *)r->base);
  if (overlaps)
    return gcap__rt_fail(__func__, cudaErrorInvalidValue, "[%p, +%zu bytes) overlaps device memory at %p", ptr, size,
                         (void *)r->base);
  if (remember(ptr, size, GCAP__RT_MEM_REGISTERED, flags, NULL) != 0)
    return gcap__rt_fail(__func__, cudaErrorMemoryAllocation, "no memory to record the registration");
  return cudaSuccess;
}

cudaError_t cudaHostUnregister(void *ptr) {
  gcap_context *ctx;
  cudaError_t e = gcap__rt_enter(&ctx);
  if (e) return e;
  pthread_mutex_lock(&lock);
  refresh();
  const struct rt_alloc *r = find(ptr);
  int ok = r && r->type == GCAP__RT_MEM_REGISTERED && r->base == (uintptr_t)ptr;
  pthread_mutex_unlock(&lock);
  if (!ok)
    return gcap__rt_fail(__func__, cudaErrorHostMemoryNotRegistered, "%p does not start a range cudaHostRegister took",
                         ptr);
  forget(ptr);
  return cudaSuccess;
}

/* Managed memory: one address for host and kernels. cudaMemAttachHost only changes which streams
 * may touch it on devices without concurrent managed access; the simulator has no such limit. */
cudaError_t cudaMallocManaged(void **dev_ptr, size_t size, unsigned int flags) {
  gcap_context *ctx;
  cudaError_t e = gcap__rt_enter(&ctx);
  if (e) return e;
  if (!dev_ptr) return gcap__rt_fail(__func__, cudaErrorInvalidValue, "devPtr is NULL");
  *dev_ptr = NULL;
  if (flags != cudaMemAttachGlobal && flags != cudaMemAttachHost)
    return gcap__rt_fail(__func__, cudaErrorInvalidValue,
                         "flags %u is neither cudaMemAttachGlobal nor cudaMemAttachHost", flags);
  if (!size) return gcap__rt_fail(__func__, cudaErrorInvalidValue, "size is 0");
  e = gcap__rt_done(__func__, gcap_mem_alloc_managed(ctx, size, dev_ptr));
  if (!e && remember(*dev_ptr, size, GCAP__RT_MEM_MANAGED, flags, NULL) != 0) {
    gcap_mem_free(ctx, *dev_ptr);
    *dev_ptr = NULL;
    return gcap__rt_fail(__func__, cudaErrorMemoryAllocation, "no memory to record the allocation");
  }
  return e;
}

static cudaError_t alloc_pitch(const char *fn, void **dev_ptr, size_t *pitch, size_t width, size_t height) {
  gcap_context *ctx;
  cudaError_t e = gcap__rt_enter(&ctx);
  if (e) return e;
  if (!dev_ptr || !pitch) return gcap__rt_fail(fn, cudaErrorInvalidValue, "%s is NULL", dev_ptr ? "pitch" : "devPtr");
  *dev_ptr = NULL;
  *pitch = 0;
  if (!width || !height) return cudaSuccess;
  e = gcap__rt_done(fn, gcap_mem_alloc_pitch(ctx, width, height, dev_ptr, pitch));
  if (!e && remember(*dev_ptr, *pitch * height, GCAP__RT_MEM_DEVICE, 0, NULL) != 0) {
    gcap_mem_free(ctx, *dev_ptr);
    *dev_ptr = NULL;
    return gcap__rt_fail(fn, cudaErrorMemoryAllocation, "no memory to record the allocation");
  }
  return e;
}

cudaError_t cudaMallocPitch(void **dev_ptr, size_t *pitch, size_t width, size_t height) {
  return alloc_pitch(__func__, dev_ptr, pitch, width, height);
}

cudaError_t cudaMalloc3D(struct cudaPitchedPtr *p, struct cudaExtent extent) {
  if (!p) {
    gcap_context *ctx;
    cudaError_t e = gcap__rt_enter(&ctx);
    return e ? e : gcap__rt_fail(__func__, cudaErrorInvalidValue, "pitchedDevPtr is NULL");
  }
  if (extent.depth && extent.height > SIZE_MAX / extent.depth)
    return gcap__rt_fail(__func__, cudaErrorMemoryAllocation, "height * depth overflows");
  void *ptr = NULL;
  size_t pitch = 0;
  cudaError_t e = alloc_pitch(__func__, &ptr, &pitch, extent.width, extent.height * extent.depth);
  if (!e) *p = (struct cudaPitchedPtr){.ptr = ptr, .pitch = pitch, .xsize = extent.width, .ysize = extent.height};
  return e;
}

/* ---- What the device holds ---- */

cudaError_t cudaMemGetInfo(size_t *free_bytes, size_t *total) {
  gcap_context *ctx;
  cudaError_t e = gcap__rt_enter(&ctx);
  if (e) return e;
  if (!free_bytes || !total)
    return gcap__rt_fail(__func__, cudaErrorInvalidValue, "%s is NULL", total ? "free" : "total");
  uint64_t graph = 0; /* graph memory the core reserves (captured and graph-node allocations) */
  if (gcap_context_get_graph_mem_attribute(ctx, GCAP_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT, &graph) != GCAP_SUCCESS)
    graph = 0;
  size_t used = (size_t)graph;
  pthread_mutex_lock(&lock);
  refresh();
  for (size_t i = 0; i < alloc_count; i++)
    if (allocs[i].type == GCAP__RT_MEM_DEVICE || allocs[i].type == GCAP__RT_MEM_MANAGED) used += allocs[i].bytes;
  pthread_mutex_unlock(&lock);
  *total = GCAP__RT_TOTAL_GLOBAL_MEM;
  *free_bytes = used < *total ? *total - used : 0;
  return cudaSuccess;
}

cudaError_t cudaPointerGetAttributes(struct cudaPointerAttributes *a, const void *ptr) {
  gcap_context *ctx;
  cudaError_t e = gcap__rt_enter(&ctx);
  if (e) return e;
  if (!a) return gcap__rt_fail(__func__, cudaErrorInvalidValue, "attributes is NULL");
  memset(a, 0, sizeof *a);
  void *p = (void *)(uintptr_t)ptr;
  switch (gcap__rt_mem_type(ptr)) {
  case GCAP__RT_MEM_DEVICE:
    *a = (struct cudaPointerAttributes){.type = cudaMemoryTypeDevice, .devicePointer = p};
    break;
  case GCAP__RT_MEM_HOST:
    *a = (struct cudaPointerAttributes){.type = cudaMemoryTypeHost, .devicePointer = p, .hostPointer = p};
    break;
  case GCAP__RT_MEM_REGISTERED:
    *a = (struct cudaPointerAttributes){.type = cudaMemoryTypeHost, .hostPointer = p};
    break;
  case GCAP__RT_MEM_MANAGED:
    *a = (struct cudaPointerAttributes){.type = cudaMemoryTypeManaged, .devicePointer = p, .hostPointer = p};
    break;
  default: a->type = cudaMemoryTypeUnregistered, a->device = cudaInvalidDeviceId; break;
  }
  return cudaSuccess;
}

/* ---- Pools and stream-ordered allocation ----
 * A cudaMemPool_t is a gcap_pool. Outside capture a stream-ordered allocation is device memory
 * from gcap_mem_alloc_async, counted against the pool it came from; during capture it becomes a
 * MEM_ALLOC node of the captured graph (a MEM_FREE node for cudaFreeAsync), with the capture's pool.
 * The simulator frees at once what a GPU's pool would keep up to its release threshold, so the
 * pool's reserved bytes equal its used bytes (plus the graph memory the core reserves in it). */

/* Under lock: the pool's record, made on first sight. NULL without memory. */
static struct rt_pool *track(gcap_pool *p) {
  struct rt_pool *q = pool_info(p);
  if (q) return q;
  q = calloc(1, sizeof *q);
  if (!q) return NULL;
  q->pool = p;
  q->reuse[0] = q->reuse[1] = q->reuse[2] = 1;
  q->next = pools;
  pools = q;
  return q;
}

/* The device's default pool (made on first use in each context), or its current one. */
static cudaError_t device_pool(const char *fn, int device, int current, gcap_pool **out) {
  gcap_context *ctx;
  cudaError_t e = gcap__rt_enter(&ctx);
  if (e) return e;
  if (device != 0)
    return gcap__rt_fail(fn, cudaErrorInvalidDevice, "device %d: the simulator has device 0 only", device);
  pthread_mutex_lock(&lock);
  refresh();
  gcap_status st = GCAP_SUCCESS;
  if (!default_pool) {
    gcap_pool *p = NULL;
    st = gcap_pool_create(ctx, &p);
    if (st == GCAP_SUCCESS && !track(p)) {
      gcap_pool_release(p);
      st = GCAP_ERROR_OUT_OF_MEMORY;
    }
    if (st == GCAP_SUCCESS) default_pool = p;
  }
  *out = current && current_pool ? current_pool : default_pool;
  pthread_mutex_unlock(&lock);
  if (st == GCAP_ERROR_OUT_OF_MEMORY) return gcap__rt_fail(fn, cudaErrorMemoryAllocation, "no memory for the pool");
  return gcap__rt_done(fn, st);
}

/* Whether p is a pool of the current context. */
static int known_pool(gcap_pool *p) {
  pthread_mutex_lock(&lock);
  refresh();
  int ok = p && pool_info(p) != NULL;
  pthread_mutex_unlock(&lock);
  return ok;
}

cudaError_t cudaDeviceGetDefaultMemPool(cudaMemPool_t *pool, int device) {
  if (!pool) return gcap__rt_fail(__func__, cudaErrorInvalidValue, "memPool is NULL");
  gcap_pool *p = NULL;
  cudaError_t e = device_pool(__func__, device, 0, &p);
  if (!e) *pool = (cudaMemPool_t)(void *)p;
  return e;
}

cudaError_t cudaDeviceGetMemPool(cudaMemPool_t *pool, int device) {
  if (!pool) return gcap__rt_fail(__func__, cudaErrorInvalidValue, "memPool is NULL");
  gcap_pool *p = NULL;
  cudaError_t e = device_pool(__func__, device, 1, &p);
  if (!e) *pool = (cudaMemPool_t)(void *)p;
  return e;
}

cudaError_t cudaDeviceSetMemPool(int device, cudaMemPool_t pool) {
  gcap_pool *d = NULL;
  cudaError_t e = device_pool(__func__, device, 0, &d);
  if (e) return e;
  gcap_pool *p = (gcap_pool *)(void *)pool;
  if (!known_pool(p)) return gcap__rt_fail(__func__, cudaErrorInvalidValue, "memPool %p is not a pool", (void *)p);
  pthread_mutex_lock(&lock);
  current_pool = p == default_pool ? NULL : p;
  pthread_mutex_unlock(&lock);
  return cudaSuccess;
}

/* CUDA 13's pools by location: the simulator has the device's pinned pools only. */
static cudaError_t location_pool(const char *fn, const struct cudaMemLocation *loc, enum cudaMemAllocationType type) {
  if (!loc) return gcap__rt_fail(fn, cudaErrorInvalidValue, "location is NULL");
  int host = loc->type == cudaMemLocationTypeHost || loc->type == cudaMemLocationTypeHostNuma;
  if (type == cudaMemAllocationTypePinned && loc->type == cudaMemLocationTypeDevice)
    return loc->id == 0
               ? cudaSuccess
               : gcap__rt_fail(fn, cudaErrorInvalidDevice, "location.id %d: the simulator has device 0 only", loc->id);
  if ((type == cudaMemAllocationTypePinned && host) ||
      (type == cudaMemAllocationTypeManaged &&
       (host || loc->type == cudaMemLocationTypeDevice || loc->type == cudaMemLocationTypeNone)))
    return gcap__rt_fail(fn, cudaErrorNotSupported,
                         "the simulator has pools of device memory only (location.type %d, type %d)", (int)loc->type,
                         (int)type);
  return gcap__rt_fail(fn, cudaErrorInvalidValue, "location.type %d with allocation type %d", (int)loc->type,
                       (int)type);
}

cudaError_t cudaMemGetDefaultMemPool(cudaMemPool_t *pool, struct cudaMemLocation *location,
                                     enum cudaMemAllocationType type) {
  gcap_context *ctx;
  cudaError_t e = gcap__rt_enter(&ctx);
  if (!e && !pool) e = gcap__rt_fail(__func__, cudaErrorInvalidValue, "memPool is NULL");
  if (!e) e = location_pool(__func__, location, type);
  return e ? e : cudaDeviceGetDefaultMemPool(pool, 0);
}

cudaError_t cudaMemGetMemPool(cudaMemPool_t *pool, struct cudaMemLocation *location, enum cudaMemAllocationType type) {
  gcap_context *ctx;
  cudaError_t e = gcap__rt_enter(&ctx);
  if (!e && !pool) e = gcap__rt_fail(__func__, cudaErrorInvalidValue, "memPool is NULL");
  if (!e) e = location_pool(__func__, location, type);
  return e ? e : cudaDeviceGetMemPool(pool, 0);
}

cudaError_t cudaMemSetMemPool(struct cudaMemLocation *location, enum cudaMemAllocationType type, cudaMemPool_t pool) {
  gcap_context *ctx;
  cudaError_t e = gcap__rt_enter(&ctx);
  if (!e) e = location_pool(__func__, location, type);
  return e ? e : cudaDeviceSetMemPool(0, pool);
}

cudaError_t cudaMemPoolCreate(cudaMemPool_t *pool, const struct cudaMemPoolProps *props) {
  gcap_context *ctx;
  cudaError_t e = gcap__rt_enter(&ctx);
  if (e) return e;
  if (!pool || !props)
    return gcap__rt_fail(__func__, cudaErrorInvalidValue, "%s is NULL", pool ? "poolProps" : "memPool");
  if (props->allocType != cudaMemAllocationTypePinned)
    return gcap__rt_fail(__func__, cudaErrorInvalidValue, "allocType %d is not cudaMemAllocationTypePinned",
                         (int)props->allocType);
  if (props->location.type != cudaMemLocationTypeDevice)
    return gcap__rt_fail(__func__, cudaErrorNotSupported, "location.type %d: the simulator's pools hold device memory",
                         (int)props->location.type);
  if (props->location.id != 0)
    return gcap__rt_fail(__func__, cudaErrorInvalidDevice, "location.id %d: the simulator has device 0 only",
                         props->location.id);
  if (props->handleTypes != cudaMemHandleTypeNone)
    return gcap__rt_fail(__func__, cudaErrorNotSupported, "handleTypes %d: the simulator cannot share memory",
                         (int)props->handleTypes);
  gcap_pool *p = NULL;
  e = gcap__rt_done(__func__, gcap_pool_create(ctx, &p));
  if (e) return e;
  pthread_mutex_lock(&lock);
  refresh();
  struct rt_pool *q = track(p);
  pthread_mutex_unlock(&lock);
  if (!q) {
    gcap_pool_release(p);
    return gcap__rt_fail(__func__, cudaErrorMemoryAllocation, "no memory for the pool");
  }
  *pool = (cudaMemPool_t)(void *)p;
  return cudaSuccess;
}

/* A pool that is the device's current one gives way to the default pool, as CUDA does. Memory
 * still allocated from it stays valid until freed (the core keeps the pool until then). */
cudaError_t cudaMemPoolDestroy(cudaMemPool_t pool) {
  gcap_context *ctx;
  cudaError_t e = gcap__rt_enter(&ctx);
  if (e) return e;
  gcap_pool *p = (gcap_pool *)(void *)pool;
  pthread_mutex_lock(&lock);
  refresh();
  struct rt_pool **at = &pools;
  while (*at && (*at)->pool != p) at = &(*at)->next;
  int is_default = p && p == default_pool;
  struct rt_pool *q = is_default ? NULL : *at;
  if (q) {
    *at = q->next;
    if (current_pool == p) current_pool = NULL;
    for (size_t i = 0; i < alloc_count; i++) /* its live allocations count against nothing now */
      if (allocs[i].pool == p) allocs[i].pool = NULL;
  }
  pthread_mutex_unlock(&lock);
  if (is_default)
    return gcap__rt_fail(__func__, cudaErrorInvalidValue, "the device's default pool cannot be destroyed");
  if (!q) return gcap__rt_fail(__func__, cudaErrorInvalidValue, "memPool %p is not a pool", (void *)p);
  free(q);
  gcap_pool_release(p);
  return cudaSuccess;
}

static cudaError_t alloc_async(const char *fn, void **ptr, size_t size, gcap_pool *pool, cudaStream_t stream,
                               enum gcap__rt_default d) {
  gcap_stream *s;
  cudaError_t e = gcap__rt_stream(stream, d, &s);
  if (e) return e;
  if (!ptr) return gcap__rt_fail(fn, cudaErrorInvalidValue, "ptr is NULL");
  *ptr = NULL;
  if (!pool) {
    e = device_pool(fn, 0, 1, &pool);
    if (e) return e;
  } else if (!known_pool(pool)) {
    return gcap__rt_fail(fn, cudaErrorInvalidValue, "memPool %p is not a pool", (void *)pool);
  }
  gcap_capture_status cs = GCAP_CAPTURE_STATUS_NONE;
  (void)gcap_stream_is_capturing(s, &cs);
  e = gcap__rt_done(fn, gcap_mem_alloc_async(s, size, ptr));
  /* A captured allocation is the graph's: the core keeps it, and it is not counted here. */
  if (!e && cs == GCAP_CAPTURE_STATUS_NONE && remember(*ptr, size, GCAP__RT_MEM_DEVICE, 0, pool) != 0) {
    (void)gcap_mem_free_async(s, *ptr);
    *ptr = NULL;
    return gcap__rt_fail(fn, cudaErrorMemoryAllocation, "no memory to record the allocation");
  }
  return e;
}

cudaError_t cudaMallocAsync(void **ptr, size_t size, cudaStream_t stream) {
  return alloc_async(__func__, ptr, size, NULL, stream, GCAP__RT_LEGACY);
}

cudaError_t cudaMallocAsync_ptsz(void **ptr, size_t size, cudaStream_t stream);
cudaError_t cudaMallocAsync_ptsz(void **ptr, size_t size, cudaStream_t stream) {
  return alloc_async(__func__, ptr, size, NULL, stream, GCAP__RT_PER_THREAD);
}

/* During capture the allocation takes the capture's pool, whatever memPool says (the core's
 * capture chooses the pool of its graph allocations). */
cudaError_t cudaMallocFromPoolAsync(void **ptr, size_t size, cudaMemPool_t pool, cudaStream_t stream) {
  if (!pool) return gcap__rt_fail(__func__, cudaErrorInvalidValue, "memPool is NULL");
  return alloc_async(__func__, ptr, size, (gcap_pool *)(void *)pool, stream, GCAP__RT_LEGACY);
}

cudaError_t cudaMallocFromPoolAsync_ptsz(void **ptr, size_t size, cudaMemPool_t pool, cudaStream_t stream);
cudaError_t cudaMallocFromPoolAsync_ptsz(void **ptr, size_t size, cudaMemPool_t pool, cudaStream_t stream) {
  if (!pool) return gcap__rt_fail(__func__, cudaErrorInvalidValue, "memPool is NULL");
  return alloc_async(__func__, ptr, size, (gcap_pool *)(void *)pool, stream, GCAP__RT_PER_THREAD);
}

static cudaError_t free_async(const char *fn, void *ptr, cudaStream_t stream, enum gcap__rt_default d) {
  gcap_stream *s;
  cudaError_t e = gcap__rt_stream(stream, d, &s);
  if (e) return e;
  gcap_capture_status cs = GCAP_CAPTURE_STATUS_NONE;
  (void)gcap_stream_is_capturing(s, &cs);
  e = gcap__rt_done(fn, gcap_mem_free_async(s, ptr));
  if (!e && cs == GCAP_CAPTURE_STATUS_NONE) forget(ptr);
  return e;
}

cudaError_t cudaFreeAsync(void *ptr, cudaStream_t stream) { return free_async(__func__, ptr, stream, GCAP__RT_LEGACY); }

cudaError_t cudaFreeAsync_ptsz(void *ptr, cudaStream_t stream);
cudaError_t cudaFreeAsync_ptsz(void *ptr, cudaStream_t stream) {
  return free_async(__func__, ptr, stream, GCAP__RT_PER_THREAD);
}

static cudaError_t pool_attr(const char *fn, gcap_pool *p, enum cudaMemPoolAttr attr, void *value, int set) {
  gcap_context *ctx;
  cudaError_t e = gcap__rt_enter(&ctx);
  if (e) return e;
  if (!value) return gcap__rt_fail(fn, cudaErrorInvalidValue, "value is NULL");
  gcap_pool_stats st = {0};
  if (!known_pool(p) || gcap_pool_get_stats(p, &st) != GCAP_SUCCESS)
    return gcap__rt_fail(fn, cudaErrorInvalidValue, "memPool %p is not a pool", (void *)p);
  pthread_mutex_lock(&lock);
  refresh();
  struct rt_pool *q = pool_info(p);
  if (!q) { /* cudaDeviceReset ran meanwhile */
    pthread_mutex_unlock(&lock);
    return gcap__rt_fail(fn, cudaErrorInvalidValue, "memPool %p is not a pool", (void *)p);
  }
  size_t used = q->used + st.used_bytes, reserved = q->used + st.reserved_bytes;
  if (used > q->used_high) q->used_high = used;
  if (reserved > q->reserved_high) q->reserved_high = reserved;
  uint64_t *u64 = value; /* cuuint64_t */
  int *flag = value;
  e = cudaSuccess;
  switch (attr) {
  case cudaMemPoolReuseFollowEventDependencies:
  case cudaMemPoolReuseAllowOpportunistic:
  case cudaMemPoolReuseAllowInternalDependencies:
    if (set) q->reuse[attr - cudaMemPoolReuseFollowEventDependencies] = *flag != 0;
    else *flag = q->reuse[attr - cudaMemPoolReuseFollowEventDependencies];
    break;
  case cudaMemPoolAttrReleaseThreshold:
    if (set) q->release_threshold = *u64;
    else *u64 = q->release_threshold;
    break;
  case cudaMemPoolAttrReservedMemCurrent:
  case cudaMemPoolAttrUsedMemCurrent:
    if (set) e = cudaErrorInvalidValue;
    else *u64 = attr == cudaMemPoolAttrUsedMemCurrent ? used : reserved;
    break;
  case cudaMemPoolAttrReservedMemHigh:
  case cudaMemPoolAttrUsedMemHigh:
    if (set && *u64 != 0) e = cudaErrorInvalidValue;
    else if (set && attr == cudaMemPoolAttrUsedMemHigh) q->used_high = used;
    else if (set) q->reserved_high = reserved;
    else *u64 = attr == cudaMemPoolAttrUsedMemHigh ? q->used_high : q->reserved_high;
    break;
  default: e = cudaErrorNotSupported; break;
  }
  pthread_mutex_unlock(&lock);
  if (e == cudaErrorNotSupported)
    return gcap__rt_fail(fn, cudaErrorInvalidValue, "attribute %d is not a cudaMemPoolAttr", (int)attr);
  if (e)
    return gcap__rt_fail(fn, e, "attribute %d %s", (int)attr,
                         attr == cudaMemPoolAttrReservedMemHigh || attr == cudaMemPoolAttrUsedMemHigh
                             ? "can only be reset, with 0"
                             : "cannot be set");
  return cudaSuccess;
}

cudaError_t cudaMemPoolGetAttribute(cudaMemPool_t pool, enum cudaMemPoolAttr attr, void *value) {
  return pool_attr(__func__, (gcap_pool *)(void *)pool, attr, value, 0);
}

cudaError_t cudaMemPoolSetAttribute(cudaMemPool_t pool, enum cudaMemPoolAttr attr, void *value) {
  return pool_attr(__func__, (gcap_pool *)(void *)pool, attr, value, 1);
}

/* The simulator keeps no unused memory in a pool outside graphs; the graph memory the core keeps
 * spare goes back with gcap_context_graph_mem_trim (cudaDeviceGraphMemTrim), not here. */
cudaError_t cudaMemPoolTrimTo(cudaMemPool_t pool, size_t min_bytes_to_keep) {
  gcap_context *ctx;
  cudaError_t e = gcap__rt_enter(&ctx);
  if (e) return e;
  (void)min_bytes_to_keep;
  if (!known_pool((gcap_pool *)(void *)pool))
    return gcap__rt_fail(__func__, cudaErrorInvalidValue, "memPool %p is not a pool", (void *)pool);
  return cudaSuccess;
}

/* ---- Hints: checked, then nothing to do (the simulator has one memory for host and device) ---- */

static cudaError_t check_location(const char *fn, struct cudaMemLocation loc, int none_ok) {
  switch (loc.type) {
  case cudaMemLocationTypeDevice:
    if (loc.id != 0)
      return gcap__rt_fail(fn, cudaErrorInvalidDevice, "location.id %d: the simulator has device 0 only", loc.id);
    return cudaSuccess;
  case cudaMemLocationTypeHost:
  case cudaMemLocationTypeHostNuma:
  case cudaMemLocationTypeHostNumaCurrent: return cudaSuccess;
  default:
    if (none_ok && loc.type == cudaMemLocationTypeInvalid) return cudaSuccess;
    return gcap__rt_fail(fn, cudaErrorInvalidValue, "location.type %d is not a location", (int)loc.type);
  }
}

/* A hinted range must lie in one managed allocation. */
static cudaError_t check_managed(const char *fn, const void *p, size_t count) {
  if (!p) return gcap__rt_fail(fn, cudaErrorInvalidValue, "devPtr is NULL");
  if (!count) return gcap__rt_fail(fn, cudaErrorInvalidValue, "count is 0");
  pthread_mutex_lock(&lock);
  refresh();
  const struct rt_alloc *r = find(p);
  int managed = r && r->type == GCAP__RT_MEM_MANAGED;
  int fits = managed && count <= r->bytes - ((uintptr_t)p - r->base);
  pthread_mutex_unlock(&lock);
  if (!managed) return gcap__rt_fail(fn, cudaErrorInvalidValue, "%p is not managed memory of cudaMallocManaged", p);
  if (!fits) return gcap__rt_fail(fn, cudaErrorInvalidValue, "[%p, +%zu bytes) runs past its allocation", p, count);
  return cudaSuccess;
}

static cudaError_t prefetch(const char *fn, const void *p, size_t count, struct cudaMemLocation loc, unsigned flags,
                            cudaStream_t stream, enum gcap__rt_default d) {
  gcap_stream *s;
  cudaError_t e = gcap__rt_stream(stream, d, &s);
  if (e) return e;
  if (flags) return gcap__rt_fail(fn, cudaErrorInvalidValue, "flags is %u, not 0", flags);
  e = check_location(fn, loc, 0);
  return e ? e : check_managed(fn, p, count);
}

cudaError_t cudaMemPrefetchAsync(const void *dev_ptr, size_t count, struct cudaMemLocation location, unsigned int flags,
                                 cudaStream_t stream) {
  return prefetch(__func__, dev_ptr, count, location, flags, stream, GCAP__RT_LEGACY);
}

cudaError_t cudaMemPrefetchAsync_ptsz(const void *dev_ptr, size_t count, struct cudaMemLocation location,
                                      unsigned int flags, cudaStream_t stream);
cudaError_t cudaMemPrefetchAsync_ptsz(const void *dev_ptr, size_t count, struct cudaMemLocation location,
                                      unsigned int flags, cudaStream_t stream) {
  return prefetch(__func__, dev_ptr, count, location, flags, stream, GCAP__RT_PER_THREAD);
}

cudaError_t cudaMemAdvise(const void *dev_ptr, size_t count, enum cudaMemoryAdvise advice,
                          struct cudaMemLocation location) {
  gcap_context *ctx;
  cudaError_t e = gcap__rt_enter(&ctx);
  if (e) return e;
  if (advice < cudaMemAdviseSetReadMostly || advice > cudaMemAdviseUnsetAccessedBy)
    return gcap__rt_fail(__func__, cudaErrorInvalidValue, "advice %d is not a cudaMemoryAdvise", (int)advice);
  int needs_location = advice == cudaMemAdviseSetPreferredLocation || advice == cudaMemAdviseSetAccessedBy ||
                       advice == cudaMemAdviseUnsetAccessedBy;
  e = check_location(__func__, location, !needs_location);
  return e ? e : check_managed(__func__, dev_ptr, count);
}

static cudaError_t attach(const char *fn, cudaStream_t stream, void *p, size_t length, unsigned flags,
                          enum gcap__rt_default d) {
  gcap_stream *s;
  cudaError_t e = gcap__rt_stream(stream, d, &s);
  if (e) return e;
  if (flags != cudaMemAttachGlobal && flags != cudaMemAttachHost && flags != cudaMemAttachSingle)
    return gcap__rt_fail(fn, cudaErrorInvalidValue, "flags %u is not one cudaMemAttach flag", flags);
  if (!p) return gcap__rt_fail(fn, cudaErrorInvalidValue, "devPtr is NULL");
  pthread_mutex_lock(&lock);
  refresh();
  const struct rt_alloc *r = find(p);
  int managed = r && r->type == GCAP__RT_MEM_MANAGED;
  int whole = managed && r->base == (uintptr_t)p && (length == 0 || length == r->bytes);
  pthread_mutex_unlock(&lock);
  if (!managed) return gcap__rt_fail(fn, cudaErrorInvalidValue, "%p is not managed memory of cudaMallocManaged", p);
  if (!whole)
    return gcap__rt_fail(fn, cudaErrorInvalidValue, "devPtr and length must name the whole allocation (length 0 does)");
  return cudaSuccess;
}

cudaError_t cudaStreamAttachMemAsync(cudaStream_t stream, void *dev_ptr, size_t length, unsigned int flags) {
  return attach(__func__, stream, dev_ptr, length, flags, GCAP__RT_LEGACY);
}

cudaError_t cudaStreamAttachMemAsync_ptsz(cudaStream_t stream, void *dev_ptr, size_t length, unsigned int flags);
cudaError_t cudaStreamAttachMemAsync_ptsz(cudaStream_t stream, void *dev_ptr, size_t length, unsigned int flags) {
  return attach(__func__, stream, dev_ptr, length, flags, GCAP__RT_PER_THREAD);
}
