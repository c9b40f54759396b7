/*
 * A stand-in libcuda.so.1: how gcap loads the driver, and a recording fake of the part of the
 * driver API gcap uses, for machines without a GPU. Steered by environment variables:
 *   FAKE_CUDA_VERSION  cuDriverGetVersion's answer (default 12040)
 *   FAKE_CUDA_INIT     cuInit's CUresult (default 0)
 *   FAKE_CUDA_DEVICES  cuDeviceGetCount's answer (default 1)
 *   FAKE_CUDA_MISSING  one entry point cuGetProcAddress reports as not found
 *   FAKE_CUDA_RETAIN   cuDevicePrimaryCtxRetain's CUresult (default 2, out of memory)
 *   FAKE_CUDA_TRACE    set: every call is also printed to stderr
 * With FAKE_CUDA_RETAIN=0 a whole gcap context runs on it. Every call is recorded with its
 * parameters; the preconditions the driver reference documents (handles created before use and
 * destroyed once, pointers non-NULL, values in range, a current context, no CUDA call from a host
 * function) are checked, and each broken one is kept as a violation for the tests to read
 * (fake_libcuda.h). Device memory is host memory; work queues in issue order and runs on one
 * device thread when something waits for it, so a call that returns before its work is done is
 * visible as such. Kernels run nothing: the fake only counts them.
 */
#define _POSIX_C_SOURCE 200809L /* strdup */
#include <cudaTypedefs.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fake_libcuda.h"

static int env_int(const char *name, int fallback) {
  const char *v = getenv(name);
  return v && *v ? atoi(v) : fallback;
}

/* ------------------------------------------------------------ recording */

static pthread_mutex_t state_lock = PTHREAD_MUTEX_INITIALIZER; /* every table below */
static char **call_log, **violation_log;
static size_t num_calls, cap_calls, num_violations, cap_violations;
static _Thread_local bool in_host_function;

__attribute__((format(printf, 4, 0))) static void append(char ***lines, size_t *count, size_t *cap, const char *fmt,
                                                         va_list ap) {
  char line[512];
  vsnprintf(line, sizeof line, fmt, ap);
  if (*count == *cap) {
    *cap = *cap ? 2 * *cap : 256;
    *lines = realloc(*lines, *cap * sizeof **lines);
    if (!*lines) abort();
  }
  (*lines)[(*count)++] = strdup(line);
}

__attribute__((format(printf, 1, 2))) static void record(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  append(&call_log, &num_calls, &cap_calls, fmt, ap);
  va_end(ap);
  if (getenv("FAKE_CUDA_TRACE")) fprintf(stderr, "fake: %s\n", call_log[num_calls - 1]);
}

__attribute__((format(printf, 1, 2))) static void violation(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  append(&violation_log, &num_violations, &cap_violations, fmt, ap);
  va_end(ap);
}

/* ------------------------------------------------------------ handles */

enum kind {
  K_CONTEXT,
  K_STREAM,
  K_EVENT,
  K_MODULE,
  K_FUNCTION,
  K_GRAPH,
  K_NODE,
  K_EXEC,
  K_MEMORY,
  K_HOST_MEMORY,
  K_LINK
};
static const char *const kind_names[] = {"context",       "stream",      "event",      "module",
                                         "function",      "graph",       "graph node", "graph exec",
                                         "device memory", "host memory", "link state"};

/* Handles are never freed: a destroyed one stays readable, so a late use is reported, not a crash. */
struct handle {
  enum kind kind;
  bool live;
  unsigned id;
};

static struct handle **handles;
static size_t num_handles, cap_handles;

static void *new_handle(enum kind kind, size_t size) {
  struct handle *h = calloc(1, size);
  if (!h) abort();
  if (num_handles == cap_handles) {
    cap_handles = cap_handles ? 2 * cap_handles : 256;
    handles = realloc(handles, cap_handles * sizeof *handles);
    if (!handles) abort();
  }
  *h = (struct handle){kind, true, (unsigned)num_handles + 1};
  handles[num_handles++] = h;
  return h;
}

/* The live handle of `kind` at p, or NULL after reporting why not. */
static void *use(const char *fn, const char *arg, const void *p, enum kind kind) {
  for (size_t i = 0; p && i < num_handles; i++) {
    if ((const void *)handles[i] != p) continue;
    if (handles[i]->kind != kind) break;
    if (!handles[i]->live) {
      violation("%s: %s is %s %u, already destroyed", fn, arg, kind_names[kind], handles[i]->id);
      return NULL;
    }
    return handles[i];
  }
  violation("%s: %s %p is not a %s this driver made", fn, arg, p, kind_names[kind]);
  return NULL;
}

static bool destroy(const char *fn, const void *p, enum kind kind) {
  struct handle *h = use(fn, "the handle", p, kind);
  if (h) h->live = false;
  return h != NULL;
}

/* ------------------------------------------------------------ objects */

struct context {
  struct handle h;
  int device;
  int retained;
};

struct memory {
  struct handle h;
  unsigned char *base;
  size_t size;
};

struct function {
  struct handle h;
  char name[64];
  size_t num_params;
  size_t sizes[16], offsets[16], args_size;
  int max_dynamic_shared; /* cuFuncSetAttribute's MAX_DYNAMIC_SHARED_SIZE_BYTES; -1 until set */
};

#define FAKE_SHARED_OPTIN 232448 /* an H100's cudaDevAttrMaxSharedMemoryPerBlockOptin */

/* Figures of its own: a kernel "k_8_4" has 256 bytes of static shared memory a parameter. */
static int static_shared_of(const struct function *fn) { return 256 * (int)fn->num_params; }

static int max_dynamic_of(const struct function *fn) {
  return fn->max_dynamic_shared >= 0 ? fn->max_dynamic_shared : 48 * 1024 - static_shared_of(fn);
}

enum node_type { N_KERNEL, N_MEMCPY, N_MEMSET, N_HOST, N_EMPTY, N_EVENT_RECORD, N_EVENT_WAIT, N_CHILD, N_COND };
static const char *const node_type_names[] = {"kernel",       "memcpy",     "memset", "host",       "empty",
                                              "event_record", "event_wait", "child",  "conditional"};

struct graph;

struct node {
  struct handle h;
  struct graph *graph;
  size_t index; /* in its graph: an executable's copy has the same */
  enum node_type type;
  struct node **deps;
  size_t num_deps;
  bool enabled;
  CUDA_KERNEL_NODE_PARAMS kernel;
  unsigned char args[256]; /* the kernel's parameter values, copied when given (as the driver does) */
  CUDA_MEMCPY3D copy;
  CUDA_MEMSET_NODE_PARAMS fill;
  CUDA_HOST_NODE_PARAMS host;
  struct handle *event;
  struct graph *child;               /* the driver's own clone */
  int priority;                      /* CU_LAUNCH_ATTRIBUTE_PRIORITY of a kernel node */
  int cooperative;                   /* CU_LAUNCH_ATTRIBUTE_COOPERATIVE of a kernel node */
  CUDA_CONDITIONAL_NODE_PARAMS cond; /* N_COND: phGraph_out points at bodies */
  CUgraph bodies[8];
};

struct graph {
  struct handle h;
  struct node **nodes;
  size_t count, cap;
  struct graph *parent;                 /* a conditional body's: the graph its node is in */
  CUgraphConditionalHandle handles[16]; /* made on it by cuGraphConditionalHandleCreate */
  size_t num_handles;
};

struct exec {
  struct handle h;
  struct graph *tmpl;
  struct node *nodes; /* copies of the template's nodes, by index */
  size_t count;
};

struct stream {
  struct handle h;
  bool capturing, invalidated;
  struct graph *capture;
  size_t last; /* the queue number of its last work */
  int priority;
};

struct event {
  struct handle h;
  size_t seq; /* complete once the device thread has run this much of the queue */
  unsigned flags;
  bool recorded; /* by cuEventRecord on a stream (graph record nodes are not timed here) */
  double ms;     /* the host clock at that record call */
};

static struct context contexts[8];
static struct memory **memories;
static size_t num_memories, cap_memories;
static struct stream **capturing_streams; /* every stream ever captured */
static size_t num_capturing, cap_capturing;
static _Thread_local struct context *current;

/* The allocation holding [p, p + bytes), or NULL. */
static struct memory *memory_at(uintptr_t p, size_t bytes) {
  for (size_t i = 0; i < num_memories; i++) {
    struct memory *m = memories[i];
    uintptr_t base = (uintptr_t)m->base;
    if (m->h.live && p >= base && p - base <= m->size && bytes <= m->size - (p - base)) return m;
  }
  return NULL;
}

/* ------------------------------------------------------------ the device thread */

enum work_type { W_COPY, W_FILL, W_HOST, W_GRAPH, W_KERNEL, W_COPY3D };
struct work {
  enum work_type type;
  void *dst;
  const void *src;
  size_t bytes;
  CUDA_MEMSET_NODE_PARAMS fill;
  CUhostFn fn;
  void *user_data;
  struct node *nodes; /* W_GRAPH: a snapshot of the executable at launch */
  size_t count;
  CUDA_MEMCPY3D copy3d; /* W_COPY3D */
};

static struct work *queue;
static double *done_at; /* the host clock (ms) when each queued work finished, for event timing */
static size_t queued, done, requested, cap_queue, kernel_runs;

static double clock_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}
static pthread_cond_t queue_changed = PTHREAD_COND_INITIALIZER;

static void run_fill(const CUDA_MEMSET_NODE_PARAMS *f) {
  for (size_t r = 0; r < f->height; r++) {
    unsigned char *row = (unsigned char *)(uintptr_t)f->dst + r * f->pitch;
    for (size_t i = 0; i < f->width; i++) memcpy(row + i * f->elementSize, &f->value, f->elementSize);
  }
}

static void run_host(CUhostFn fn, void *user_data) {
  in_host_function = true;
  fn(user_data);
  in_host_function = false;
}

static void run_nodes(const struct node *nodes, size_t count);

/* Row by row, slice by slice (linear memory: the pointers are the sides' first bytes). */
static void run_copy3d(const CUDA_MEMCPY3D *c) {
  unsigned char *dst = c->dstMemoryType == CU_MEMORYTYPE_HOST ? c->dstHost : (void *)(uintptr_t)c->dstDevice;
  const unsigned char *src =
      c->srcMemoryType == CU_MEMORYTYPE_HOST ? c->srcHost : (const void *)(uintptr_t)c->srcDevice;
  for (size_t z = 0; z < c->Depth; z++)
    for (size_t y = 0; y < c->Height; y++)
      memmove(dst + (z * c->dstHeight + y) * c->dstPitch, src + (z * c->srcHeight + y) * c->srcPitch, c->WidthInBytes);
}

static void run_node(const struct node *n) {
  if (!n->enabled) return;
  switch (n->type) {
  case N_KERNEL: kernel_runs++; break;
  case N_MEMCPY: run_copy3d(&n->copy); break;
  case N_MEMSET: run_fill(&n->fill); break;
  case N_HOST: run_host(n->host.fn, n->host.userData); break;
  case N_CHILD: {
    struct node *copies = calloc(n->child->count ? n->child->count : 1, sizeof *copies);
    for (size_t i = 0; i < n->child->count; i++) copies[i] = *n->child->nodes[i];
    run_nodes(copies, n->child->count);
    free(copies);
    break;
  }
  default: break;
  }
}

/* Nodes were added after their dependencies, so their order is a topological one. */
static void run_nodes(const struct node *nodes, size_t count) {
  for (size_t i = 0; i < count; i++) run_node(&nodes[i]);
}

static void run_work(struct work *w) {
  switch (w->type) {
  case W_COPY: memmove(w->dst, w->src, w->bytes); break;
  case W_COPY3D: run_copy3d(&w->copy3d); break;
  case W_FILL: run_fill(&w->fill); break;
  case W_HOST: run_host(w->fn, w->user_data); break;
  case W_KERNEL: kernel_runs++; break;
  case W_GRAPH:
    run_nodes(w->nodes, w->count);
    free(w->nodes);
    break;
  }
}

static bool device_stopping; /* the process exits: the device thread ends once idle */

static void *device_thread(void *unused) {
  (void)unused;
  pthread_mutex_lock(&state_lock);
  for (;;) {
    while (done >= requested && !device_stopping) pthread_cond_wait(&queue_changed, &state_lock);
    if (done >= requested) break;
    struct work w = queue[done];
    pthread_mutex_unlock(&state_lock); /* host functions may call the fake (and are reported) */
    run_work(&w);
    pthread_mutex_lock(&state_lock);
    done_at[done] = clock_ms();
    done++;
    pthread_cond_broadcast(&queue_changed);
  }
  pthread_mutex_unlock(&state_lock);
  return NULL;
}

/* State lock held. Returns the work's queue number. */
static size_t enqueue(struct work w, struct stream *s) {
  if (queued == cap_queue) {
    cap_queue = cap_queue ? 2 * cap_queue : 256;
    queue = realloc(queue, cap_queue * sizeof *queue);
    done_at = realloc(done_at, cap_queue * sizeof *done_at);
    if (!queue || !done_at) abort();
  }
  queue[queued++] = w;
  if (s) s->last = queued;
  return queued;
}

/* State lock held: lets the device thread run the queue up to `upto` and waits for it. */
static void wait_for(size_t upto) {
  if (in_host_function) return; /* reported by the entry check; waiting here would never end */
  if (upto > requested) requested = upto;
  pthread_cond_broadcast(&queue_changed);
  while (done < upto) pthread_cond_wait(&queue_changed, &state_lock);
}

/* ------------------------------------------------------------ entry checks */

#define BEGIN(...)                                                                                                     \
  pthread_mutex_lock(&state_lock);                                                                                     \
  record(__VA_ARGS__);                                                                                                 \
  if (in_host_function) violation("%s called from a host function (the driver forbids CUDA calls there)", __func__ + 2)
#define END(r)                                                                                                         \
  do {                                                                                                                 \
    CUresult end_result = (r);                                                                                         \
    pthread_mutex_unlock(&state_lock);                                                                                 \
    return end_result;                                                                                                 \
  } while (0)
#define NEED(cond, ...)                                                                                                \
  do {                                                                                                                 \
    if (!(cond)) {                                                                                                     \
      violation(__VA_ARGS__);                                                                                          \
      END(CUDA_ERROR_INVALID_VALUE);                                                                                   \
    }                                                                                                                  \
  } while (0)
#define NEED_HANDLE(var, p, kind, fn, arg)                                                                             \
  var = use(fn, arg, p, kind);                                                                                         \
  if (!var) END(CUDA_ERROR_INVALID_HANDLE)
#define NEED_CONTEXT(fn)                                                                                               \
  if (!current || !current->retained) {                                                                                \
    violation("%s: no current context", fn);                                                                           \
    END(CUDA_ERROR_INVALID_CONTEXT);                                                                                   \
  }

/* A stream argument: NULL (the legacy stream) or a live stream. */
static bool stream_arg(const char *fn, CUstream s, struct stream **out) {
  *out = NULL;
  if (!s) return true;
  *out = use(fn, "hStream", s, K_STREAM);
  return *out != NULL;
}

/* ------------------------------------------------------------ loading, devices, contexts */

CUresult CUDAAPI cuDriverGetVersion(int *version) {
  *version = env_int("FAKE_CUDA_VERSION", 12040);
  return CUDA_SUCCESS;
}

static CUresult CUDAAPI f_cuInit(unsigned flags) {
  (void)flags;
  return (CUresult)env_int("FAKE_CUDA_INIT", 0);
}

static pthread_once_t device_once = PTHREAD_ONCE_INIT;
static pthread_t device_worker;
static bool device_started;
static void start_device(void) { device_started = pthread_create(&device_worker, NULL, device_thread, NULL) == 0; }

/* Joined at exit, so that leak checkers see no thread left behind. */
__attribute__((destructor)) static void stop_device(void) {
  if (!device_started) return;
  pthread_mutex_lock(&state_lock);
  device_stopping = true;
  pthread_cond_broadcast(&queue_changed);
  pthread_mutex_unlock(&state_lock);
  pthread_join(device_worker, NULL);
}

static CUresult CUDAAPI f_cuDeviceGetCount(int *count) {
  *count = env_int("FAKE_CUDA_DEVICES", 1);
  return CUDA_SUCCESS;
}

static CUresult CUDAAPI f_cuDeviceGet(CUdevice *device, int ordinal) {
  *device = ordinal;
  return CUDA_SUCCESS;
}

static CUresult CUDAAPI f_cuDeviceGetName(char *name, int len, CUdevice dev) {
  snprintf(name, (size_t)len, "fake device %d", dev);
  return CUDA_SUCCESS;
}

static CUresult CUDAAPI f_cuDevicePrimaryCtxRetain(CUcontext *ctx, CUdevice device) {
  *ctx = NULL;
  CUresult r = (CUresult)env_int("FAKE_CUDA_RETAIN", CUDA_ERROR_OUT_OF_MEMORY);
  if (r != CUDA_SUCCESS) return r;
  pthread_once(&device_once, start_device);
  BEGIN("cuDevicePrimaryCtxRetain(device=%d)", device);
  NEED(device >= 0 && device < env_int("FAKE_CUDA_DEVICES", 1) && device < 8,
       "cuDevicePrimaryCtxRetain: device %d does not exist", device);
  struct context *c = &contexts[device];
  c->h = (struct handle){K_CONTEXT, true, (unsigned)device + 1};
  c->device = device;
  c->retained++;
  *ctx = (CUcontext)c;
  END(CUDA_SUCCESS);
}

static CUresult CUDAAPI f_cuDevicePrimaryCtxRelease(CUdevice device) {
  BEGIN("cuDevicePrimaryCtxRelease(device=%d)", device);
  NEED(device >= 0 && device < 8 && contexts[device].retained > 0,
       "cuDevicePrimaryCtxRelease: device %d's primary context is not retained", device);
  contexts[device].retained--;
  END(CUDA_SUCCESS);
}

static struct context *context_arg(CUcontext ctx) {
  for (size_t i = 0; i < 8; i++)
    if ((CUcontext)&contexts[i] == ctx && contexts[i].retained > 0) return &contexts[i];
  return NULL;
}

static CUresult CUDAAPI f_cuCtxSetCurrent(CUcontext ctx) {
  BEGIN("cuCtxSetCurrent(%p)", (void *)ctx);
  struct context *c = context_arg(ctx);
  NEED(!ctx || c, "cuCtxSetCurrent: %p is not a retained context", (void *)ctx);
  current = c;
  END(CUDA_SUCCESS);
}

static CUresult CUDAAPI f_cuCtxGetCurrent(CUcontext *ctx) {
  BEGIN("cuCtxGetCurrent");
  NEED(ctx, "cuCtxGetCurrent: pctx is NULL");
  *ctx = (CUcontext)current;
  END(CUDA_SUCCESS);
}

/* State lock held: invalidates every capture going on, as a device-wide wait does. */
static bool break_captures(void) {
  bool any = false;
  for (size_t i = 0; i < num_capturing; i++)
    if (capturing_streams[i]->capturing) capturing_streams[i]->invalidated = any = true;
  return any;
}

static CUresult CUDAAPI f_cuCtxSynchronize(void) {
  BEGIN("cuCtxSynchronize");
  NEED_CONTEXT("cuCtxSynchronize");
  if (break_captures()) END(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  wait_for(queued);
  END(CUDA_SUCCESS);
}

static CUresult CUDAAPI f_cuGetErrorName(CUresult r, const char **name) {
  switch (r) {
  case CUDA_ERROR_INVALID_VALUE: *name = "CUDA_ERROR_INVALID_VALUE"; return CUDA_SUCCESS;
  case CUDA_ERROR_OUT_OF_MEMORY: *name = "CUDA_ERROR_OUT_OF_MEMORY"; return CUDA_SUCCESS;
  case CUDA_ERROR_NO_DEVICE: *name = "CUDA_ERROR_NO_DEVICE"; return CUDA_SUCCESS;
  case CUDA_ERROR_NOT_SUPPORTED: *name = "CUDA_ERROR_NOT_SUPPORTED"; return CUDA_SUCCESS;
  case CUDA_ERROR_INVALID_HANDLE: *name = "CUDA_ERROR_INVALID_HANDLE"; return CUDA_SUCCESS;
  case CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED: *name = "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED"; return CUDA_SUCCESS;
  case CUDA_ERROR_STREAM_CAPTURE_INVALIDATED: *name = "CUDA_ERROR_STREAM_CAPTURE_INVALIDATED"; return CUDA_SUCCESS;
  case CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE: *name = "CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE"; return CUDA_SUCCESS;
  default: return CUDA_ERROR_INVALID_VALUE;
  }
}

static CUresult CUDAAPI f_cuGetErrorString(CUresult r, const char **text) {
  (void)r;
  *text = "fake driver";
  return CUDA_SUCCESS;
}

/* ------------------------------------------------------------ memory */

static CUresult new_memory(enum kind kind, size_t bytes, void **out) {
  struct memory *m = new_handle(kind, sizeof *m);
  m->base = calloc(1, bytes);
  m->size = bytes;
  if (num_memories == cap_memories) {
    cap_memories = cap_memories ? 2 * cap_memories : 64;
    memories = realloc(memories, cap_memories * sizeof *memories);
    if (!memories) abort();
  }
  memories[num_memories++] = m;
  *out = m->base;
  return CUDA_SUCCESS;
}

/* The address may have been handed out before, freed and reused: the live allocation wins. */
static CUresult free_memory(const char *fn, void *p, enum kind kind) {
  bool freed_before = false;
  for (size_t i = 0; i < num_memories; i++) {
    struct memory *m = memories[i];
    if (m->base != p || m->h.kind != kind) continue;
    if (!m->h.live) {
      freed_before = true;
      continue;
    }
    m->h.live = false;
    free(m->base);
    return CUDA_SUCCESS;
  }
  if (freed_before) violation("%s: %p was freed already", fn, p);
  else violation("%s: %p is not the start of %s this driver allocated", fn, p, kind_names[kind]);
  return CUDA_ERROR_INVALID_VALUE;
}

static CUresult CUDAAPI f_cuMemAlloc(CUdeviceptr *dptr, size_t bytes) {
  BEGIN("cuMemAlloc(%zu)", bytes);
  NEED_CONTEXT("cuMemAlloc");
  NEED(dptr && bytes > 0, "cuMemAlloc: dptr is NULL or bytesize is 0");
  void *p = NULL;
  new_memory(K_MEMORY, bytes, &p);
  *dptr = (CUdeviceptr)(uintptr_t)p;
  END(CUDA_SUCCESS);
}

/* Managed memory is device memory the host may touch: here, as all of it, ordinary memory. */
static CUresult CUDAAPI f_cuMemAllocManaged(CUdeviceptr *dptr, size_t bytes, unsigned int flags) {
  BEGIN("cuMemAllocManaged(%zu, %u)", bytes, flags);
  NEED_CONTEXT("cuMemAllocManaged");
  NEED(dptr && bytes > 0, "cuMemAllocManaged: dptr is NULL or bytesize is 0");
  NEED(flags == CU_MEM_ATTACH_GLOBAL || flags == CU_MEM_ATTACH_HOST, "cuMemAllocManaged: flags is not GLOBAL or HOST");
  if (bytes > ((size_t)1 << 40)) END(CUDA_ERROR_OUT_OF_MEMORY);
  void *p = NULL;
  new_memory(K_MEMORY, bytes, &p);
  *dptr = (CUdeviceptr)(uintptr_t)p;
  END(CUDA_SUCCESS);
}

static CUresult CUDAAPI f_cuMemFree(CUdeviceptr p) {
  BEGIN("cuMemFree(%p)", (void *)(uintptr_t)p);
  NEED_CONTEXT("cuMemFree");
  END(free_memory("cuMemFree", (void *)(uintptr_t)p, K_MEMORY));
}

static CUresult CUDAAPI f_cuMemAllocHost(void **pp, size_t bytes) {
  BEGIN("cuMemAllocHost(%zu)", bytes);
  NEED_CONTEXT("cuMemAllocHost");
  NEED(pp && bytes > 0, "cuMemAllocHost: pp is NULL or bytesize is 0");
  END(new_memory(K_HOST_MEMORY, bytes, pp));
}

static CUresult CUDAAPI f_cuMemFreeHost(void *p) {
  BEGIN("cuMemFreeHost(%p)", p);
  NEED_CONTEXT("cuMemFreeHost");
  END(free_memory("cuMemFreeHost", p, K_HOST_MEMORY));
}

/* ------------------------------------------------------------ streams and events */

static CUresult CUDAAPI f_cuStreamCreate(CUstream *s, unsigned flags) {
  BEGIN("cuStreamCreate(flags=%u)", flags);
  NEED_CONTEXT("cuStreamCreate");
  NEED(s, "cuStreamCreate: phStream is NULL");
  NEED(flags == CU_STREAM_DEFAULT || flags == CU_STREAM_NON_BLOCKING, "cuStreamCreate: flags %u", flags);
  *s = (CUstream)new_handle(K_STREAM, sizeof(struct stream));
  END(CUDA_SUCCESS);
}

static CUresult CUDAAPI f_cuStreamCreateWithPriority(CUstream *s, unsigned flags, int priority) {
  BEGIN("cuStreamCreateWithPriority(flags=%u, priority=%d)", flags, priority);
  NEED_CONTEXT("cuStreamCreateWithPriority");
  NEED(s, "cuStreamCreateWithPriority: phStream is NULL");
  NEED(flags == CU_STREAM_DEFAULT || flags == CU_STREAM_NON_BLOCKING, "cuStreamCreateWithPriority: flags %u", flags);
  NEED(priority >= -5 && priority <= 0, "cuStreamCreateWithPriority: priority %d outside [-5, 0]", priority);
  *s = (CUstream)new_handle(K_STREAM, sizeof(struct stream));
  if (*s) ((struct stream *)*s)->priority = priority;
  END(CUDA_SUCCESS);
}

static CUresult CUDAAPI f_cuStreamDestroy(CUstream s) {
  BEGIN("cuStreamDestroy(%p)", (void *)s);
  NEED_CONTEXT("cuStreamDestroy");
  END(destroy("cuStreamDestroy", s, K_STREAM) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE);
}

/* Waiting on a capturing stream is illegal: the driver refuses and invalidates the capture. */
static CUresult wait_stream(struct stream *st) {
  if (st && st->capturing) {
    st->invalidated = true;
    return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  }
  wait_for(st ? st->last : queued);
  return CUDA_SUCCESS;
}

static CUresult CUDAAPI f_cuStreamSynchronize(CUstream s) {
  BEGIN("cuStreamSynchronize(%p)", (void *)s);
  NEED_CONTEXT("cuStreamSynchronize");
  struct stream *st;
  if (!stream_arg("cuStreamSynchronize", s, &st)) END(CUDA_ERROR_INVALID_HANDLE);
  END(wait_stream(st));
}

static CUresult CUDAAPI f_cuStreamQuery(CUstream s) {
  BEGIN("cuStreamQuery(%p)", (void *)s);
  NEED_CONTEXT("cuStreamQuery");
  struct stream *st;
  if (!stream_arg("cuStreamQuery", s, &st)) END(CUDA_ERROR_INVALID_HANDLE);
  END(done >= (st ? st->last : queued) ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY);
}

static CUresult CUDAAPI f_cuEventCreate(CUevent *e, unsigned flags) {
  BEGIN("cuEventCreate(flags=%u)", flags);
  NEED_CONTEXT("cuEventCreate");
  NEED(e, "cuEventCreate: phEvent is NULL");
  *e = (CUevent)new_handle(K_EVENT, sizeof(struct event));
  ((struct event *)*e)->flags = flags;
  END(CUDA_SUCCESS);
}

/* When the stream reached the event: after the work it follows finished, and not before the record. */
static double reached_ms(const struct event *e) {
  return e->seq && done_at[e->seq - 1] > e->ms ? done_at[e->seq - 1] : e->ms;
}

/* As the driver: a disabled-timing or never recorded event is an invalid handle here. */
static CUresult CUDAAPI f_cuEventElapsedTime(float *ms, CUevent start, CUevent end) {
  BEGIN("cuEventElapsedTime(%p, %p)", (void *)start, (void *)end);
  NEED_CONTEXT("cuEventElapsedTime");
  NEED(ms, "cuEventElapsedTime: pMilliseconds is NULL");
  struct event *a, *z;
  NEED_HANDLE(a, start, K_EVENT, "cuEventElapsedTime", "hStart");
  NEED_HANDLE(z, end, K_EVENT, "cuEventElapsedTime", "hEnd");
  if ((a->flags | z->flags) & CU_EVENT_DISABLE_TIMING || !a->recorded || !z->recorded) END(CUDA_ERROR_INVALID_HANDLE);
  if (done < a->seq || done < z->seq) END(CUDA_ERROR_NOT_READY);
  *ms = (float)(reached_ms(z) - reached_ms(a));
  END(CUDA_SUCCESS);
}

static CUresult CUDAAPI f_cuEventDestroy(CUevent e) {
  BEGIN("cuEventDestroy(%p)", (void *)e);
  NEED_CONTEXT("cuEventDestroy");
  END(destroy("cuEventDestroy", e, K_EVENT) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE);
}

static struct node *capture_node(struct stream *st, enum node_type type);

static CUresult CUDAAPI f_cuEventRecord(CUevent e, CUstream s) {
  BEGIN("cuEventRecord(%p, stream=%p)", (void *)e, (void *)s);
  NEED_CONTEXT("cuEventRecord");
  struct event *ev;
  struct stream *st;
  NEED_HANDLE(ev, e, K_EVENT, "cuEventRecord", "hEvent");
  if (!stream_arg("cuEventRecord", s, &st)) END(CUDA_ERROR_INVALID_HANDLE);
  if (st && st->capturing) capture_node(st, N_EVENT_RECORD);
  else ev->seq = st ? st->last : queued, ev->recorded = true, ev->ms = clock_ms();
  END(CUDA_SUCCESS);
}

static CUresult CUDAAPI f_cuStreamWaitEvent(CUstream s, CUevent e, unsigned flags) {
  BEGIN("cuStreamWaitEvent(stream=%p, %p, flags=%u)", (void *)s, (void *)e, flags);
  NEED_CONTEXT("cuStreamWaitEvent");
  struct event *ev;
  struct stream *st;
  NEED_HANDLE(ev, e, K_EVENT, "cuStreamWaitEvent", "hEvent");
  (void)ev;
  if (!stream_arg("cuStreamWaitEvent", s, &st)) END(CUDA_ERROR_INVALID_HANDLE);
  if (st && st->capturing) capture_node(st, N_EVENT_WAIT);
  END(CUDA_SUCCESS); /* one queue in issue order: every wait is already met */
}

static CUresult CUDAAPI f_cuEventSynchronize(CUevent e) {
  BEGIN("cuEventSynchronize(%p)", (void *)e);
  NEED_CONTEXT("cuEventSynchronize");
  struct event *ev;
  NEED_HANDLE(ev, e, K_EVENT, "cuEventSynchronize", "hEvent");
  wait_for(ev->seq);
  END(CUDA_SUCCESS);
}

static CUresult CUDAAPI f_cuEventQuery(CUevent e) {
  BEGIN("cuEventQuery(%p)", (void *)e);
  NEED_CONTEXT("cuEventQuery");
  struct event *ev;
  NEED_HANDLE(ev, e, K_EVENT, "cuEventQuery", "hEvent");
  END(done >= ev->seq ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY);
}

/* ------------------------------------------------------------ stream work */

/* Issues w on s, or records it into s's native capture. */
static CUresult issue(struct stream *st, struct work w, enum node_type captured_as) {
  if (st && st->capturing) capture_node(st, captured_as);
  else enqueue(w, st);
  return CUDA_SUCCESS;
}

/* cuMemcpy may return before the copy is done (device to device, or staged pageable memory): so does this. */
static CUresult CUDAAPI f_cuMemcpy(CUdeviceptr dst, CUdeviceptr src, size_t bytes) {
  BEGIN("cuMemcpy(%p <- %p, %zu)", (void *)(uintptr_t)dst, (void *)(uintptr_t)src, bytes);
  NEED_CONTEXT("cuMemcpy");
  NEED(dst && src, "cuMemcpy: a NULL pointer");
  END(issue(NULL,
            (struct work){.type = W_COPY, .dst = (void *)(uintptr_t)dst, .src = (void *)(uintptr_t)src, .bytes = bytes},
            N_MEMCPY));
}

static bool shape_ok(const char *fn, const CUDA_MEMCPY3D *p);

static CUresult CUDAAPI f_cuMemcpy3DAsync(const CUDA_MEMCPY3D *p, CUstream s) {
  BEGIN("cuMemcpy3DAsync(%zu x %zu x %zu, stream=%p)", p ? p->WidthInBytes : 0, p ? p->Height : 0, p ? p->Depth : 0,
        (void *)s);
  NEED_CONTEXT("cuMemcpy3DAsync");
  NEED(p, "cuMemcpy3DAsync: pCopy is NULL");
  NEED(shape_ok("cuMemcpy3DAsync", p), "cuMemcpy3DAsync: see above");
  NEED(p->srcMemoryType == CU_MEMORYTYPE_UNIFIED && p->dstMemoryType == CU_MEMORYTYPE_UNIFIED && p->srcDevice &&
           p->dstDevice,
       "cuMemcpy3DAsync: gcap passes unified pointers");
  struct stream *st;
  if (!stream_arg("cuMemcpy3DAsync", s, &st)) END(CUDA_ERROR_INVALID_HANDLE);
  END(issue(st, (struct work){.type = W_COPY3D, .copy3d = *p}, N_MEMCPY));
}

static CUresult CUDAAPI f_cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t bytes, CUstream s) {
  BEGIN("cuMemcpyAsync(%p <- %p, %zu, stream=%p)", (void *)(uintptr_t)dst, (void *)(uintptr_t)src, bytes, (void *)s);
  NEED_CONTEXT("cuMemcpyAsync");
  NEED(dst && src, "cuMemcpyAsync: a NULL pointer");
  struct stream *st;
  if (!stream_arg("cuMemcpyAsync", s, &st)) END(CUDA_ERROR_INVALID_HANDLE);
  END(issue(st,
            (struct work){.type = W_COPY, .dst = (void *)(uintptr_t)dst, .src = (void *)(uintptr_t)src, .bytes = bytes},
            N_MEMCPY));
}

/* Alignment as the reference states it: the pointer, and the pitch of 2-D fills, to the element size. */
static CUresult fill(const char *fn, CUdeviceptr dst, size_t pitch, unsigned value, unsigned es, size_t width,
                     size_t height, CUstream s) {
  struct stream *st;
  if (!current || !current->retained) {
    violation("%s: no current context", fn);
    return CUDA_ERROR_INVALID_CONTEXT;
  }
  if (!stream_arg(fn, s, &st)) return CUDA_ERROR_INVALID_HANDLE;
  if (dst % es || (height > 1 && pitch % es)) {
    violation("%s: dstDevice %p or dstPitch %zu is not %u-byte aligned", fn, (void *)(uintptr_t)dst, pitch, es);
    return CUDA_ERROR_INVALID_VALUE;
  }
  if (height > 1 && pitch < width * es) {
    violation("%s: dstPitch %zu is below the row's %zu bytes", fn, pitch, width * es);
    return CUDA_ERROR_INVALID_VALUE;
  }
  size_t extent = (height - 1) * pitch + width * es;
  if (!memory_at((uintptr_t)dst, extent)) {
    violation("%s: %zu bytes at %p are not device memory", fn, extent, (void *)(uintptr_t)dst);
    return CUDA_ERROR_INVALID_VALUE;
  }
  CUDA_MEMSET_NODE_PARAMS f = {dst, height > 1 ? pitch : width * es, value, es, width, height};
  return issue(st, (struct work){.type = W_FILL, .fill = f}, N_MEMSET);
}

#define FILL_1D(name, type, es)                                                                                        \
  static CUresult CUDAAPI f_##name(CUdeviceptr dst, type value, size_t n, CUstream s) {                                \
    BEGIN(#name "(%p, %u, %zu, stream=%p)", (void *)(uintptr_t)dst, (unsigned)value, n, (void *)s);                    \
    END(fill(#name, dst, 0, value, es, n, 1, s));                                                                      \
  }
#define FILL_2D(name, type, es)                                                                                        \
  static CUresult CUDAAPI f_##name(CUdeviceptr dst, size_t pitch, type value, size_t w, size_t h, CUstream s) {        \
    BEGIN(#name "(%p, pitch=%zu, %u, %zu x %zu, stream=%p)", (void *)(uintptr_t)dst, pitch, (unsigned)value, w, h,     \
          (void *)s);                                                                                                  \
    END(fill(#name, dst, pitch, value, es, w, h, s));                                                                  \
  }
FILL_1D(cuMemsetD8Async, unsigned char, 1)
FILL_1D(cuMemsetD16Async, unsigned short, 2)
FILL_1D(cuMemsetD32Async, unsigned int, 4)
FILL_2D(cuMemsetD2D8Async, unsigned char, 1)
FILL_2D(cuMemsetD2D16Async, unsigned short, 2)
FILL_2D(cuMemsetD2D32Async, unsigned int, 4)

static CUresult CUDAAPI f_cuLaunchHostFunc(CUstream s, CUhostFn fn, void *user_data) {
  BEGIN("cuLaunchHostFunc(stream=%p, %p)", (void *)s, user_data);
  NEED_CONTEXT("cuLaunchHostFunc");
  NEED(fn, "cuLaunchHostFunc: fn is NULL");
  struct stream *st;
  if (!stream_arg("cuLaunchHostFunc", s, &st)) END(CUDA_ERROR_INVALID_HANDLE);
  END(issue(st, (struct work){.type = W_HOST, .fn = fn, .user_data = user_data}, N_HOST));
}

/* "<fn> args=0x...,0x..." : each argument's bytes as the little-endian number they hold (at most 8). */
static void record_args(const char *fn, const struct function *f, void *const *params) {
  char line[512];
  int n = snprintf(line, sizeof line, "%s args=", fn);
  for (size_t i = 0; i < f->num_params && n > 0 && (size_t)n < sizeof line; i++) {
    uint64_t v = 0;
    memcpy(&v, params[i], f->sizes[i] < 8 ? f->sizes[i] : 8);
    n += snprintf(line + n, sizeof line - (size_t)n, "%s0x%llx", i ? "," : "", (unsigned long long)v);
  }
  record("%s", line);
}

static CUresult CUDAAPI f_cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                                         unsigned bz, unsigned shmem, CUstream s, void **params, void **extra) {
  BEGIN("cuLaunchKernel(%p, grid=%u,%u,%u, block=%u,%u,%u, shmem=%u, stream=%p)", (void *)f, gx, gy, gz, bx, by, bz,
        shmem, (void *)s);
  NEED_CONTEXT("cuLaunchKernel");
  struct function *fn;
  struct stream *st;
  NEED_HANDLE(fn, f, K_FUNCTION, "cuLaunchKernel", "f");
  NEED(gx && gy && gz && bx && by && bz, "cuLaunchKernel: a zero grid or block dimension");
  NEED(!extra && (params || fn->num_params == 0), "cuLaunchKernel: kernelParams is NULL or extra is set");
  NEED(shmem <= (unsigned)max_dynamic_of(fn),
       "cuLaunchKernel: %u bytes of dynamic shared memory, more than the %d of %s", shmem, max_dynamic_of(fn),
       fn->name);
  if (!stream_arg("cuLaunchKernel", s, &st)) END(CUDA_ERROR_INVALID_HANDLE);
  if (fn->num_params) record_args("cuLaunchKernel", fn, params);
  END(issue(st, (struct work){.type = W_KERNEL}, N_KERNEL));
}

/* The fake device holds FAKE_COOPERATIVE_THREADS threads at once (132 multiprocessors of 2048):
 * a cooperative grid with more is CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE, and nothing runs. */
#define FAKE_COOPERATIVE_THREADS (132ull * 2048ull)

static CUresult CUDAAPI f_cuLaunchCooperativeKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                                                    unsigned by, unsigned bz, unsigned shmem, CUstream s,
                                                    void **params) {
  BEGIN("cuLaunchCooperativeKernel(%p, grid=%u,%u,%u, block=%u,%u,%u, shmem=%u, stream=%p)", (void *)f, gx, gy, gz, bx,
        by, bz, shmem, (void *)s);
  NEED_CONTEXT("cuLaunchCooperativeKernel");
  struct function *fn;
  struct stream *st;
  NEED_HANDLE(fn, f, K_FUNCTION, "cuLaunchCooperativeKernel", "f");
  NEED(gx && gy && gz && bx && by && bz, "cuLaunchCooperativeKernel: a zero grid or block dimension");
  NEED(params || fn->num_params == 0, "cuLaunchCooperativeKernel: kernelParams is NULL");
  NEED(shmem <= (unsigned)max_dynamic_of(fn),
       "cuLaunchCooperativeKernel: %u bytes of dynamic shared memory, more than the %d of %s", shmem,
       max_dynamic_of(fn), fn->name);
  if (!stream_arg("cuLaunchCooperativeKernel", s, &st)) END(CUDA_ERROR_INVALID_HANDLE);
  unsigned long long threads = (unsigned long long)gx * gy * gz * bx * by * bz;
  if (threads > FAKE_COOPERATIVE_THREADS) END(CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE);
  if (fn->num_params) record_args("cuLaunchCooperativeKernel", fn, params);
  END(issue(st, (struct work){.type = W_KERNEL}, N_KERNEL));
}

/* ------------------------------------------------------------ modules */

/* A module's variables (cuModuleGetGlobal), made on first use: "g_16" is 16 bytes. */
struct module {
  struct handle h;
  struct {
    char name[64];
    void *p;
  } vars[8];
  unsigned num_vars;
};

static CUresult CUDAAPI f_cuModuleLoadData(CUmodule *m, const void *image) {
  BEGIN("cuModuleLoadData");
  NEED_CONTEXT("cuModuleLoadData");
  NEED(m && image, "cuModuleLoadData: module or image is NULL");
  *m = (CUmodule)new_handle(K_MODULE, sizeof(struct module));
  END(CUDA_SUCCESS);
}

static CUresult CUDAAPI f_cuModuleGetGlobal(CUdeviceptr *dptr, size_t *bytes, CUmodule m, const char *name) {
  BEGIN("cuModuleGetGlobal(%p, \"%s\")", (void *)m, name ? name : "(null)");
  NEED_CONTEXT("cuModuleGetGlobal");
  struct module *mod;
  NEED_HANDLE(mod, m, K_MODULE, "cuModuleGetGlobal", "hmod");
  NEED(name, "cuModuleGetGlobal: name is NULL");
  if (strncmp(name, "g_", 2) != 0) END(CUDA_ERROR_NOT_FOUND);
  size_t size = strtoul(name + 2, NULL, 10);
  unsigned i = 0;
  while (i < mod->num_vars && strcmp(mod->vars[i].name, name) != 0) i++;
  if (i == mod->num_vars) {
    NEED(i < 8 && size > 0, "cuModuleGetGlobal: the fake keeps 8 variables of a size its name gives");
    snprintf(mod->vars[i].name, sizeof mod->vars[i].name, "%s", name);
    new_memory(K_MEMORY, size, &mod->vars[i].p);
    mod->num_vars++;
  }
  if (dptr) *dptr = (CUdeviceptr)(uintptr_t)mod->vars[i].p;
  if (bytes) *bytes = size;
  END(CUDA_SUCCESS);
}

/* A link state: what the driver would turn into a cubin; here the PTX, with the library's path checked. */
struct link {
  struct handle h;
  char *ptx;
  bool library;
};

static CUresult CUDAAPI f_cuLinkCreate(unsigned n, CUjit_option *options, void **values, CUlinkState *out) {
  BEGIN("cuLinkCreate(%u options)", n);
  (void)options, (void)values;
  NEED_CONTEXT("cuLinkCreate");
  NEED(out, "cuLinkCreate: stateOut is NULL");
  *out = (CUlinkState)new_handle(K_LINK, sizeof(struct link));
  END(CUDA_SUCCESS);
}

static CUresult CUDAAPI f_cuLinkAddData(CUlinkState s, CUjitInputType type, void *data, size_t size, const char *name,
                                        unsigned n, CUjit_option *options, void **values) {
  BEGIN("cuLinkAddData(type %d, %zu bytes, %s)", (int)type, size, name ? name : "(null)");
  (void)n, (void)options, (void)values;
  struct link *l;
  NEED_HANDLE(l, s, K_LINK, "cuLinkAddData", "state");
  NEED(type == CU_JIT_INPUT_PTX && data && size && ((const char *)data)[size - 1] == '\0',
       "cuLinkAddData: gcap adds NUL-terminated PTX only");
  free(l->ptx);
  l->ptx = strdup(data);
  END(CUDA_SUCCESS);
}

static CUresult CUDAAPI f_cuLinkAddFile(CUlinkState s, CUjitInputType type, const char *path, unsigned n,
                                        CUjit_option *options, void **values) {
  BEGIN("cuLinkAddFile(type %d, %s)", (int)type, path ? path : "(null)");
  (void)n, (void)options, (void)values;
  struct link *l;
  NEED_HANDLE(l, s, K_LINK, "cuLinkAddFile", "state");
  FILE *file = path ? fopen(path, "rb") : NULL;
  NEED(type == CU_JIT_INPUT_LIBRARY && file, "cuLinkAddFile: a library that cannot be opened");
  fclose(file);
  l->library = true;
  END(CUDA_SUCCESS);
}

static CUresult CUDAAPI f_cuLinkComplete(CUlinkState s, void **cubin, size_t *size) {
  BEGIN("cuLinkComplete");
  struct link *l;
  NEED_HANDLE(l, s, K_LINK, "cuLinkComplete", "state");
  NEED(l->ptx && l->library && cubin && size, "cuLinkComplete: nothing to link, or no library for .extern functions");
  *cubin = l->ptx, *size = strlen(l->ptx) + 1;
  END(CUDA_SUCCESS);
}

static CUresult CUDAAPI f_cuLinkDestroy(CUlinkState s) {
  BEGIN("cuLinkDestroy");
  struct link *l;
  NEED_HANDLE(l, s, K_LINK, "cuLinkDestroy", "state");
  free(l->ptx);
  l->ptx = NULL;
  END(destroy("cuLinkDestroy", s, K_LINK) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE);
}

static CUresult CUDAAPI f_cuModuleUnload(CUmodule m) {
  BEGIN("cuModuleUnload(%p)", (void *)m);
  NEED_CONTEXT("cuModuleUnload");
  struct module *mod;
  NEED_HANDLE(mod, m, K_MODULE, "cuModuleUnload", "hmod");
  for (unsigned i = 0; i < mod->num_vars; i++) free_memory("cuModuleUnload", mod->vars[i].p, K_MEMORY);
  END(destroy("cuModuleUnload", m, K_MODULE) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE);
}

/* A kernel's parameter sizes are its name's: "k_8_4" takes an 8-byte and a 4-byte parameter. */
static CUresult CUDAAPI f_cuModuleGetFunction(CUfunction *f, CUmodule m, const char *name) {
  BEGIN("cuModuleGetFunction(%p, \"%s\")", (void *)m, name ? name : "(null)");
  NEED_CONTEXT("cuModuleGetFunction");
  struct handle *mod;
  NEED_HANDLE(mod, m, K_MODULE, "cuModuleGetFunction", "hmod");
  (void)mod;
  NEED(f && name, "cuModuleGetFunction: hfunc or name is NULL");
  if (strncmp(name, "k", 1) != 0) END(CUDA_ERROR_NOT_FOUND);
  struct function *fn = new_handle(K_FUNCTION, sizeof *fn);
  snprintf(fn->name, sizeof fn->name, "%s", name);
  fn->max_dynamic_shared = -1;
  for (const char *p = strchr(name, '_'); p && fn->num_params < 16; p = strchr(p + 1, '_')) {
    size_t size = strtoul(p + 1, NULL, 10);
    fn->args_size = (fn->args_size + size - 1) / size * size;
    fn->offsets[fn->num_params] = fn->args_size;
    fn->sizes[fn->num_params++] = size;
    fn->args_size += size;
  }
  *f = (CUfunction)fn;
  END(CUDA_SUCCESS);
}

static CUresult CUDAAPI f_cuFuncGetParamInfo(CUfunction f, size_t index, size_t *offset, size_t *size) {
  BEGIN("cuFuncGetParamInfo(%p, %zu)", (void *)f, index);
  struct function *fn;
  NEED_HANDLE(fn, f, K_FUNCTION, "cuFuncGetParamInfo", "func");
  if (index >= fn->num_params) END(CUDA_ERROR_INVALID_VALUE); /* the documented end of the list */
  *offset = fn->offsets[index];
  *size = fn->sizes[index];
  END(CUDA_SUCCESS);
}

/* Figures of its own, which a test tells apart from what gcap's core would answer: a kernel
 * "k_8_4" has 256 bytes of static shared memory a parameter, 16 of local memory, 40 registers. */
static CUresult CUDAAPI f_cuFuncGetAttribute(int *pi, CUfunction_attribute attrib, CUfunction f) {
  BEGIN("cuFuncGetAttribute(%d, %p)", (int)attrib, (void *)f);
  struct function *fn;
  NEED_HANDLE(fn, f, K_FUNCTION, "cuFuncGetAttribute", "hfunc");
  NEED(pi, "cuFuncGetAttribute: pi is NULL");
  int shared = static_shared_of(fn);
  switch (attrib) {
  case CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *pi = 768; break;
  case CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES: *pi = shared; break;
  case CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES: *pi = 0; break;
  case CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES: *pi = 16; break;
  case CU_FUNC_ATTRIBUTE_NUM_REGS: *pi = 40; break;
  case CU_FUNC_ATTRIBUTE_PTX_VERSION: *pi = 80; break;
  case CU_FUNC_ATTRIBUTE_BINARY_VERSION: *pi = 90; break;
  case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES: *pi = max_dynamic_of(fn); break;
  default: END(CUDA_ERROR_INVALID_VALUE);
  }
  END(CUDA_SUCCESS);
}

/* As the driver: only the settable attributes, MAX_DYNAMIC_SHARED_SIZE_BYTES up to the device's
 * opt-in limit less the kernel's static shared memory (CUDA_ERROR_INVALID_VALUE beyond it). */
static CUresult CUDAAPI f_cuFuncSetAttribute(CUfunction f, CUfunction_attribute attrib, int value) {
  BEGIN("cuFuncSetAttribute(%p, %d, %d)", (void *)f, (int)attrib, value);
  struct function *fn;
  NEED_HANDLE(fn, f, K_FUNCTION, "cuFuncSetAttribute", "hfunc");
  NEED(attrib == CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, "cuFuncSetAttribute: attribute %d", (int)attrib);
  if (value < 0 || value > FAKE_SHARED_OPTIN - static_shared_of(fn)) END(CUDA_ERROR_INVALID_VALUE);
  fn->max_dynamic_shared = value;
  END(CUDA_SUCCESS);
}

/* ------------------------------------------------------------ graphs */

static struct graph *new_graph(void) { return new_handle(K_GRAPH, sizeof(struct graph)); }

static struct node *add(struct graph *g, enum node_type type) {
  struct node *n = new_handle(K_NODE, sizeof *n);
  n->graph = g, n->type = type, n->enabled = true, n->index = g->count;
  if (g->count == g->cap) {
    g->cap = g->cap ? 2 * g->cap : 16;
    g->nodes = realloc(g->nodes, g->cap * sizeof *g->nodes);
    if (!g->nodes) abort();
  }
  g->nodes[g->count++] = n;
  return n;
}

static struct node *capture_node(struct stream *st, enum node_type type) { return add(st->capture, type); }

static CUresult CUDAAPI f_cuGraphCreate(CUgraph *g, unsigned flags) {
  BEGIN("cuGraphCreate(flags=%u)", flags);
  NEED(g && flags == 0, "cuGraphCreate: phGraph is NULL or flags %u is not 0", flags);
  *g = (CUgraph)new_graph();
  END(CUDA_SUCCESS);
}

/* A graph goes with its nodes and the clones its child-graph nodes own. */
static void kill_graph(struct graph *g) {
  g->h.live = false;
  for (size_t i = 0; i < g->count; i++) {
    g->nodes[i]->h.live = false;
    if (g->nodes[i]->child) kill_graph(g->nodes[i]->child);
    for (unsigned b = 0; g->nodes[i]->type == N_COND && b < g->nodes[i]->cond.size; b++)
      kill_graph((struct graph *)g->nodes[i]->bodies[b]);
  }
}

static CUresult CUDAAPI f_cuGraphDestroy(CUgraph g) {
  BEGIN("cuGraphDestroy(%p)", (void *)g);
  struct graph *gr;
  NEED_HANDLE(gr, g, K_GRAPH, "cuGraphDestroy", "hGraph");
  kill_graph(gr);
  END(CUDA_SUCCESS);
}

/* The checks every cuGraphAdd*Node makes before its own: a live graph, live distinct dependencies in it. */
static CUresult start_node(const char *fn, CUgraphNode *out, CUgraph g, const CUgraphNode *deps, size_t n,
                           enum node_type type, struct node **made) {
  struct graph *gr = use(fn, "hGraph", g, K_GRAPH);
  if (!gr) return CUDA_ERROR_INVALID_HANDLE;
  if (!out || (n > 0 && !deps)) {
    violation("%s: phGraphNode is NULL, or dependencies is NULL with %zu of them", fn, n);
    return CUDA_ERROR_INVALID_VALUE;
  }
  struct node **list = calloc(n ? n : 1, sizeof *list);
  for (size_t i = 0; i < n; i++) {
    list[i] = use(fn, "a dependency", deps[i], K_NODE);
    bool repeated = false;
    for (size_t k = 0; k < i; k++) repeated = repeated || list[k] == list[i];
    if (!list[i] || list[i]->graph != gr || repeated) {
      if (list[i]) violation("%s: dependency %zu is %s", fn, i, repeated ? "repeated" : "a node of another graph");
      free(list);
      return CUDA_ERROR_INVALID_VALUE;
    }
  }
  struct node *node = add(gr, type);
  node->deps = list, node->num_deps = n;
  *out = (CUgraphNode)node;
  *made = node;
  return CUDA_SUCCESS;
}

static bool kernel_ok(const char *fn, const CUDA_KERNEL_NODE_PARAMS *p, struct node *into) {
  if (!p) return violation("%s: nodeParams is NULL", fn), false;
  struct function *f = use(fn, "nodeParams->func", p->func, K_FUNCTION);
  if (!f) return false;
  if (!p->gridDimX || !p->gridDimY || !p->gridDimZ || !p->blockDimX || !p->blockDimY || !p->blockDimZ || p->extra ||
      p->kern || p->ctx || (f->num_params && !p->kernelParams))
    return violation("%s: a zero dimension, kernelParams NULL, or extra/kern/ctx set", fn), false;
  if (p->sharedMemBytes > (unsigned)max_dynamic_of(f))
    return violation("%s: %u bytes of dynamic shared memory, more than the %d of %s", fn, p->sharedMemBytes,
                     max_dynamic_of(f), f->name),
           false;
  into->kernel = *p;
  if (f->num_params) record_args(fn, f, p->kernelParams);
  for (size_t i = 0; i < f->num_params; i++) memcpy(into->args + f->offsets[i], p->kernelParams[i], f->sizes[i]);
  into->kernel.kernelParams = NULL;
  return true;
}

static bool side_ok(const char *fn, const char *side, CUmemorytype type, CUdeviceptr dptr, const void *hptr,
                    size_t bytes) {
  switch (type) {
  case CU_MEMORYTYPE_HOST:
    if (hptr) return true;
    break;
  case CU_MEMORYTYPE_DEVICE:
    if (memory_at((uintptr_t)dptr, bytes) && memory_at((uintptr_t)dptr, bytes)->h.kind == K_MEMORY) return true;
    break;
  case CU_MEMORYTYPE_UNIFIED:
    if (dptr) return true;
    break;
  default: break;
  }
  violation("%s: the %s side (type %d) does not name %zu bytes of that memory type", fn, side, (int)type, bytes);
  return false;
}

static const char *type_name(CUmemorytype t) {
  switch (t) {
  case CU_MEMORYTYPE_HOST: return "HOST";
  case CU_MEMORYTYPE_DEVICE: return "DEVICE";
  case CU_MEMORYTYPE_UNIFIED: return "UNIFIED";
  default: return "ARRAY";
  }
}

/* The bytes from a side's first to one past its last. */
static size_t span(const CUDA_MEMCPY3D *p, size_t pitch, size_t height) {
  return ((p->Depth - 1) * height + p->Height - 1) * pitch + p->WidthInBytes;
}

/* Linear memory only, positions folded into the pointers; pitches that hold the rows, heights the slices. */
static bool shape_ok(const char *fn, const CUDA_MEMCPY3D *p) {
  if (p->WidthInBytes == 0 || p->Height == 0 || p->Depth == 0)
    return violation("%s: a %zu x %zu x %zu copy", fn, p->WidthInBytes, p->Height, p->Depth), false;
  if (p->srcXInBytes || p->srcY || p->srcZ || p->dstXInBytes || p->dstY || p->dstZ || p->srcArray || p->dstArray)
    return violation("%s: positions or arrays, which gcap never passes", fn), false;
  bool rows = p->Height > 1 || p->Depth > 1;
  if (rows && (p->srcPitch < p->WidthInBytes || p->dstPitch < p->WidthInBytes))
    return violation("%s: a pitch (%zu, %zu) below WidthInBytes %zu", fn, p->srcPitch, p->dstPitch, p->WidthInBytes),
           false;
  if (p->Depth > 1 && (p->srcHeight < p->Height || p->dstHeight < p->Height))
    return violation("%s: a slice height (%zu, %zu) below Height %zu", fn, p->srcHeight, p->dstHeight, p->Height),
           false;
  return true;
}

static bool copy_ok(const char *fn, const CUDA_MEMCPY3D *p, CUcontext ctx, struct node *into) {
  if (!p) return violation("%s: copyParams is NULL", fn), false;
  record("%s copy dst=%s src=%s bytes=%zu", fn, type_name(p->dstMemoryType), type_name(p->srcMemoryType),
         p->WidthInBytes);
  if (!context_arg(ctx)) return violation("%s: ctx %p is not a retained context", fn, (void *)ctx), false;
  if (!shape_ok(fn, p)) return false;
  if (!side_ok(fn, "src", p->srcMemoryType, p->srcDevice, p->srcHost, span(p, p->srcPitch, p->srcHeight)) ||
      !side_ok(fn, "dst", p->dstMemoryType, p->dstDevice, p->dstHost, span(p, p->dstPitch, p->dstHeight)))
    return false;
  into->copy = *p;
  return true;
}

static bool fill_ok(const char *fn, const CUDA_MEMSET_NODE_PARAMS *p, CUcontext ctx, struct node *into) {
  if (!p) return violation("%s: memsetParams is NULL", fn), false;
  if (!context_arg(ctx)) return violation("%s: ctx %p is not a retained context", fn, (void *)ctx), false;
  unsigned es = p->elementSize;
  if ((es != 1 && es != 2 && es != 4) || p->width == 0 || p->height == 0)
    return violation("%s: elementSize %u, width %zu, height %zu", fn, es, p->width, p->height), false;
  if (p->dst % es || (p->height > 1 && (p->pitch % es || p->pitch < p->width * es)))
    return violation("%s: dst %p or pitch %zu does not suit %u-byte elements", fn, (void *)(uintptr_t)p->dst, p->pitch,
                     es),
           false;
  size_t extent = (p->height - 1) * p->pitch + p->width * es;
  if (!memory_at((uintptr_t)p->dst, extent))
    return violation("%s: %zu bytes at %p are not device memory", fn, extent, (void *)(uintptr_t)p->dst), false;
  into->fill = *p;
  return true;
}

static bool host_ok(const char *fn, const CUDA_HOST_NODE_PARAMS *p, struct node *into) {
  if (!p || !p->fn) return violation("%s: nodeParams or its fn is NULL", fn), false;
  into->host = *p;
  return true;
}

/* Adds the node, or takes it back when its parameters are refused. */
#define ADD_NODE(fn, type, check)                                                                                      \
  struct node *n = NULL;                                                                                               \
  CUresult r = start_node(fn, out, g, deps, num, type, &n);                                                            \
  if (r == CUDA_SUCCESS && !(check)) {                                                                                 \
    n->h.live = false;                                                                                                 \
    n->graph->count--;                                                                                                 \
    r = CUDA_ERROR_INVALID_VALUE;                                                                                      \
  }                                                                                                                    \
  END(r)

static CUresult CUDAAPI f_cuGraphAddKernelNode(CUgraphNode *out, CUgraph g, const CUgraphNode *deps, size_t num,
                                               const CUDA_KERNEL_NODE_PARAMS *p) {
  BEGIN("cuGraphAddKernelNode(%p, %zu deps)", (void *)g, num);
  ADD_NODE("cuGraphAddKernelNode", N_KERNEL, kernel_ok("cuGraphAddKernelNode", p, n));
}

static CUresult CUDAAPI f_cuGraphKernelNodeSetAttribute(CUgraphNode node, CUkernelNodeAttrID attr,
                                                        const CUkernelNodeAttrValue *value) {
  BEGIN("cuGraphKernelNodeSetAttribute(%p, %d)", (void *)node, (int)attr);
  struct node *n;
  NEED_HANDLE(n, node, K_NODE, "cuGraphKernelNodeSetAttribute", "hNode");
  NEED(n->type == N_KERNEL, "cuGraphKernelNodeSetAttribute: node %u is a %s node", n->h.id, node_type_names[n->type]);
  NEED(value, "cuGraphKernelNodeSetAttribute: value is NULL");
  NEED(attr == CU_LAUNCH_ATTRIBUTE_PRIORITY || attr == CU_LAUNCH_ATTRIBUTE_COOPERATIVE,
       "cuGraphKernelNodeSetAttribute: attribute %d is not simulated", (int)attr);
  if (attr == CU_LAUNCH_ATTRIBUTE_COOPERATIVE) n->cooperative = value->cooperative;
  else n->priority = value->priority;
  END(CUDA_SUCCESS);
}

static CUresult CUDAAPI f_cuGraphAddMemcpyNode(CUgraphNode *out, CUgraph g, const CUgraphNode *deps, size_t num,
                                               const CUDA_MEMCPY3D *p, CUcontext ctx) {
  BEGIN("cuGraphAddMemcpyNode(%p, %zu deps)", (void *)g, num);
  ADD_NODE("cuGraphAddMemcpyNode", N_MEMCPY, copy_ok("cuGraphAddMemcpyNode", p, ctx, n));
}

static CUresult CUDAAPI f_cuGraphAddMemsetNode(CUgraphNode *out, CUgraph g, const CUgraphNode *deps, size_t num,
                                               const CUDA_MEMSET_NODE_PARAMS *p, CUcontext ctx) {
  BEGIN("cuGraphAddMemsetNode(%p, %zu deps)", (void *)g, num);
  ADD_NODE("cuGraphAddMemsetNode", N_MEMSET, fill_ok("cuGraphAddMemsetNode", p, ctx, n));
}

static CUresult CUDAAPI f_cuGraphAddHostNode(CUgraphNode *out, CUgraph g, const CUgraphNode *deps, size_t num,
                                             const CUDA_HOST_NODE_PARAMS *p) {
  BEGIN("cuGraphAddHostNode(%p, %zu deps)", (void *)g, num);
  ADD_NODE("cuGraphAddHostNode", N_HOST, host_ok("cuGraphAddHostNode", p, n));
}

static CUresult CUDAAPI f_cuGraphAddEmptyNode(CUgraphNode *out, CUgraph g, const CUgraphNode *deps, size_t num) {
  BEGIN("cuGraphAddEmptyNode(%p, %zu deps)", (void *)g, num);
  ADD_NODE("cuGraphAddEmptyNode", N_EMPTY, true);
}

static CUresult CUDAAPI f_cuGraphAddEventRecordNode(CUgraphNode *out, CUgraph g, const CUgraphNode *deps, size_t num,
                                                    CUevent e) {
  BEGIN("cuGraphAddEventRecordNode(%p, %zu deps, %p)", (void *)g, num, (void *)e);
  ADD_NODE("cuGraphAddEventRecordNode", N_EVENT_RECORD,
           (n->event = use("cuGraphAddEventRecordNode", "event", e, K_EVENT)) != NULL);
}

static CUresult CUDAAPI f_cuGraphAddEventWaitNode(CUgraphNode *out, CUgraph g, const CUgraphNode *deps, size_t num,
                                                  CUevent e) {
  BEGIN("cuGraphAddEventWaitNode(%p, %zu deps, %p)", (void *)g, num, (void *)e);
  ADD_NODE("cuGraphAddEventWaitNode", N_EVENT_WAIT,
           (n->event = use("cuGraphAddEventWaitNode", "event", e, K_EVENT)) != NULL);
}

/* State lock held: a deep copy, as cuGraphClone and child-graph nodes make. */
static struct graph *clone_graph(const struct graph *from) {
  struct graph *g = new_graph();
  for (size_t i = 0; i < from->count; i++) {
    const struct node *src = from->nodes[i];
    struct node *n = add(g, src->type);
    struct handle keep = n->h;
    struct graph *owner = n->graph;
    *n = *src;
    n->h = keep, n->graph = owner, n->index = i;
    n->deps = calloc(src->num_deps ? src->num_deps : 1, sizeof *n->deps);
    for (size_t k = 0; k < src->num_deps; k++) n->deps[k] = g->nodes[src->deps[k]->index];
    if (src->child) n->child = clone_graph(src->child);
  }
  return g;
}

static CUresult CUDAAPI f_cuGraphAddChildGraphNode(CUgraphNode *out, CUgraph g, const CUgraphNode *deps, size_t num,
                                                   CUgraph child) {
  BEGIN("cuGraphAddChildGraphNode(%p, %zu deps, %p)", (void *)g, num, (void *)child);
  struct graph *c = use("cuGraphAddChildGraphNode", "childGraph", child, K_GRAPH);
  if (!c) END(CUDA_ERROR_INVALID_HANDLE);
  ADD_NODE("cuGraphAddChildGraphNode", N_CHILD, (n->child = clone_graph(c)) != NULL);
}

static CUgraphConditionalHandle next_handle = 0x100;

static CUresult CUDAAPI f_cuGraphConditionalHandleCreate(CUgraphConditionalHandle *out, CUgraph g, CUcontext ctx,
                                                         unsigned default_value, unsigned flags) {
  BEGIN("cuGraphConditionalHandleCreate(%p, default %u, flags %u)", (void *)g, default_value, flags);
  struct graph *gr;
  NEED_HANDLE(gr, g, K_GRAPH, "cuGraphConditionalHandleCreate", "hGraph");
  NEED(out, "cuGraphConditionalHandleCreate: pHandle_out is NULL");
  NEED(context_arg(ctx), "cuGraphConditionalHandleCreate: ctx %p is not a retained context", (void *)ctx);
  NEED(flags <= CU_GRAPH_COND_ASSIGN_DEFAULT, "cuGraphConditionalHandleCreate: flags %u", flags);
  NEED(gr->num_handles < 16, "cuGraphConditionalHandleCreate: the fake keeps 16 handles per graph");
  *out = gr->handles[gr->num_handles++] = next_handle++;
  END(CUDA_SUCCESS);
}

/* The handle was made on g or on a graph g is a body of (cuda.h: "this graph or one of its children"). */
static bool handle_of(const struct graph *g, CUgraphConditionalHandle h) {
  for (; g; g = g->parent)
    for (size_t i = 0; i < g->num_handles; i++)
      if (g->handles[i] == h) return true;
  return false;
}

static bool cond_ok(const CUgraphNodeParams *p, struct node *into) {
  const CUDA_CONDITIONAL_NODE_PARAMS *c = &p->conditional;
  if (p->type != CU_GRAPH_NODE_TYPE_CONDITIONAL)
    return violation("cuGraphAddNode: type %d, which the fake does not simulate", (int)p->type), false;
  if (!handle_of(into->graph, c->handle))
    return violation("cuGraphAddNode: handle %llu was not made on this graph or a graph it is in",
                     (unsigned long long)c->handle),
           false;
  bool fits = c->type == CU_GRAPH_COND_TYPE_IF      ? c->size == 1 || c->size == 2
              : c->type == CU_GRAPH_COND_TYPE_WHILE ? c->size == 1
                                                    : c->size >= 1 && c->size <= 8;
  if (!fits || !context_arg(c->ctx))
    return violation("cuGraphAddNode: a conditional of type %d and size %u", (int)c->type, c->size), false;
  into->cond = *c;
  for (unsigned b = 0; b < c->size; b++) {
    struct graph *body = new_graph();
    body->parent = into->graph;
    into->bodies[b] = (CUgraph)body;
  }
  into->cond.phGraph_out = into->bodies;
  return true;
}

static CUresult CUDAAPI f_cuGraphAddNode(CUgraphNode *out, CUgraph g, const CUgraphNode *deps, size_t num,
                                         CUgraphNodeParams *p) {
  BEGIN("cuGraphAddNode(%p, %zu deps, type %d)", (void *)g, num, p ? (int)p->type : -1);
  NEED(p, "cuGraphAddNode: nodeParams is NULL");
  ADD_NODE("cuGraphAddNode", N_COND, cond_ok(p, n) && (p->conditional.phGraph_out = n->bodies, true));
}

/* Removes the node, its edges and what it owns; the graph's other nodes keep their order. */
static CUresult CUDAAPI f_cuGraphDestroyNode(CUgraphNode node) {
  BEGIN("cuGraphDestroyNode(%p)", (void *)node);
  struct node *n;
  NEED_HANDLE(n, node, K_NODE, "cuGraphDestroyNode", "hNode");
  struct graph *g = n->graph;
  for (size_t i = n->index + 1; i < g->count; i++) (g->nodes[i - 1] = g->nodes[i])->index = i - 1;
  g->count--;
  for (size_t i = 0; i < g->count; i++) { /* edges into the node go with it */
    struct node *o = g->nodes[i];
    size_t kept = 0;
    for (size_t d = 0; d < o->num_deps; d++)
      if (o->deps[d] != n) o->deps[kept++] = o->deps[d];
    o->num_deps = kept;
  }
  n->h.live = false;
  if (n->child) kill_graph(n->child);
  for (unsigned b = 0; n->type == N_COND && b < n->cond.size; b++) kill_graph((struct graph *)n->bodies[b]);
  END(CUDA_SUCCESS);
}

static CUresult CUDAAPI f_cuGraphClone(CUgraph *out, CUgraph g) {
  BEGIN("cuGraphClone(%p)", (void *)g);
  struct graph *gr;
  NEED_HANDLE(gr, g, K_GRAPH, "cuGraphClone", "originalGraph");
  NEED(out, "cuGraphClone: phGraphClone is NULL");
  *out = (CUgraph)clone_graph(gr);
  END(CUDA_SUCCESS);
}

static CUresult CUDAAPI f_cuGraphGetNodes(CUgraph g, CUgraphNode *nodes, size_t *num) {
  BEGIN("cuGraphGetNodes(%p)", (void *)g);
  struct graph *gr;
  NEED_HANDLE(gr, g, K_GRAPH, "cuGraphGetNodes", "hGraph");
  NEED(num, "cuGraphGetNodes: numNodes is NULL");
  if (nodes)
    for (size_t i = 0; i < *num && i < gr->count; i++) nodes[i] = (CUgraphNode)gr->nodes[i];
  *num = gr->count;
  END(CUDA_SUCCESS);
}

static CUresult CUDAAPI f_cuGraphInstantiateWithFlags(CUgraphExec *out, CUgraph g, unsigned long long flags) {
  BEGIN("cuGraphInstantiateWithFlags(%p, flags=%llu)", (void *)g, flags);
  struct graph *gr;
  NEED_HANDLE(gr, g, K_GRAPH, "cuGraphInstantiateWithFlags", "hGraph");
  NEED(out, "cuGraphInstantiateWithFlags: phGraphExec is NULL");
  NEED(!(flags & ~(unsigned long long)(CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH |
                                       CUDA_GRAPH_INSTANTIATE_FLAG_USE_NODE_PRIORITY)),
       "cuGraphInstantiateWithFlags: flags %llu", flags);
  struct exec *x = new_handle(K_EXEC, sizeof *x);
  x->tmpl = gr, x->count = gr->count;
  x->nodes = calloc(gr->count ? gr->count : 1, sizeof *x->nodes);
  for (size_t i = 0; i < gr->count; i++) x->nodes[i] = *gr->nodes[i];
  *out = (CUgraphExec)x;
  END(CUDA_SUCCESS);
}

static CUresult CUDAAPI f_cuGraphExecDestroy(CUgraphExec x) {
  BEGIN("cuGraphExecDestroy(%p)", (void *)x);
  END(destroy("cuGraphExecDestroy", x, K_EXEC) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE);
}

static CUresult CUDAAPI f_cuGraphLaunch(CUgraphExec x, CUstream s) {
  BEGIN("cuGraphLaunch(%p, stream=%p)", (void *)x, (void *)s);
  NEED_CONTEXT("cuGraphLaunch");
  struct exec *ex;
  struct stream *st;
  NEED_HANDLE(ex, x, K_EXEC, "cuGraphLaunch", "hGraphExec");
  if (!stream_arg("cuGraphLaunch", s, &st)) END(CUDA_ERROR_INVALID_HANDLE);
  struct node *snapshot = calloc(ex->count ? ex->count : 1, sizeof *snapshot);
  memcpy(snapshot, ex->nodes, ex->count * sizeof *snapshot);
  END(issue(st, (struct work){.type = W_GRAPH, .nodes = snapshot, .count = ex->count}, N_CHILD));
}

static CUresult CUDAAPI f_cuGraphUpload(CUgraphExec x, CUstream s) {
  BEGIN("cuGraphUpload(%p, stream=%p)", (void *)x, (void *)s);
  struct exec *ex;
  struct stream *st;
  NEED_HANDLE(ex, x, K_EXEC, "cuGraphUpload", "hGraphExec");
  (void)ex;
  if (!stream_arg("cuGraphUpload", s, &st)) END(CUDA_ERROR_INVALID_HANDLE);
  END(CUDA_SUCCESS);
}

/* The executable's copy of template node `node`, checked to be of `type`. */
static struct node *exec_node(const char *fn, CUgraphExec x, CUgraphNode node, enum node_type type) {
  struct exec *ex = use(fn, "hGraphExec", x, K_EXEC);
  struct node *n = ex ? use(fn, "hNode", node, K_NODE) : NULL;
  if (!n) return NULL;
  if (n->graph != ex->tmpl || n->index >= ex->count) {
    violation("%s: node %u is not in the graph the executable was made from", fn, n->h.id);
    return NULL;
  }
  struct node *copy = &ex->nodes[n->index];
  if (type != (enum node_type) - 1 && copy->type != type) {
    violation("%s: node %u is a %s node", fn, n->h.id, node_type_names[copy->type]);
    return NULL;
  }
  return copy;
}

static CUresult CUDAAPI f_cuGraphExecKernelNodeSetParams(CUgraphExec x, CUgraphNode node,
                                                         const CUDA_KERNEL_NODE_PARAMS *p) {
  BEGIN("cuGraphExecKernelNodeSetParams(%p, %p)", (void *)x, (void *)node);
  struct node *n = exec_node("cuGraphExecKernelNodeSetParams", x, node, N_KERNEL);
  END(n && kernel_ok("cuGraphExecKernelNodeSetParams", p, n) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE);
}

static bool one_dimensional(const CUDA_MEMCPY3D *p) { return p->Height <= 1 && p->Depth <= 1; }

static CUresult CUDAAPI f_cuGraphExecMemcpyNodeSetParams(CUgraphExec x, CUgraphNode node, const CUDA_MEMCPY3D *p,
                                                         CUcontext ctx) {
  BEGIN("cuGraphExecMemcpyNodeSetParams(%p, %p)", (void *)x, (void *)node);
  struct node *n = exec_node("cuGraphExecMemcpyNodeSetParams", x, node, N_MEMCPY);
  if (n && p && !(one_dimensional(p) && one_dimensional(&n->copy))) { /* documented: 1-D copies only */
    record("cuGraphExecMemcpyNodeSetParams refused: a copy with rows");
    END(CUDA_ERROR_INVALID_VALUE);
  }
  END(n && copy_ok("cuGraphExecMemcpyNodeSetParams", p, ctx, n) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE);
}

static CUresult CUDAAPI f_cuGraphExecMemsetNodeSetParams(CUgraphExec x, CUgraphNode node,
                                                         const CUDA_MEMSET_NODE_PARAMS *p, CUcontext ctx) {
  BEGIN("cuGraphExecMemsetNodeSetParams(%p, %p)", (void *)x, (void *)node);
  struct node *n = exec_node("cuGraphExecMemsetNodeSetParams", x, node, N_MEMSET);
  END(n && fill_ok("cuGraphExecMemsetNodeSetParams", p, ctx, n) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE);
}

static CUresult CUDAAPI f_cuGraphExecHostNodeSetParams(CUgraphExec x, CUgraphNode node,
                                                       const CUDA_HOST_NODE_PARAMS *p) {
  BEGIN("cuGraphExecHostNodeSetParams(%p, %p)", (void *)x, (void *)node);
  struct node *n = exec_node("cuGraphExecHostNodeSetParams", x, node, N_HOST);
  END(n && host_ok("cuGraphExecHostNodeSetParams", p, n) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE);
}

static CUresult set_event(const char *fn, CUgraphExec x, CUgraphNode node, CUevent e, enum node_type type) {
  struct node *n = exec_node(fn, x, node, type);
  struct handle *ev = n ? use(fn, "event", e, K_EVENT) : NULL;
  if (!ev) return CUDA_ERROR_INVALID_VALUE;
  n->event = ev;
  return CUDA_SUCCESS;
}

static CUresult CUDAAPI f_cuGraphExecEventRecordNodeSetEvent(CUgraphExec x, CUgraphNode node, CUevent e) {
  BEGIN("cuGraphExecEventRecordNodeSetEvent(%p, %p, %p)", (void *)x, (void *)node, (void *)e);
  END(set_event("cuGraphExecEventRecordNodeSetEvent", x, node, e, N_EVENT_RECORD));
}

static CUresult CUDAAPI f_cuGraphExecEventWaitNodeSetEvent(CUgraphExec x, CUgraphNode node, CUevent e) {
  BEGIN("cuGraphExecEventWaitNodeSetEvent(%p, %p, %p)", (void *)x, (void *)node, (void *)e);
  END(set_event("cuGraphExecEventWaitNodeSetEvent", x, node, e, N_EVENT_WAIT));
}

/* Kernel, memcpy, memset, host and empty nodes may be disabled (the reference's list). */
static CUresult CUDAAPI f_cuGraphNodeSetEnabled(CUgraphExec x, CUgraphNode node, unsigned enabled) {
  BEGIN("cuGraphNodeSetEnabled(%p, %p, %u)", (void *)x, (void *)node, enabled);
  struct node *n = exec_node("cuGraphNodeSetEnabled", x, node, (enum node_type) - 1);
  if (!n) END(CUDA_ERROR_INVALID_VALUE);
  NEED(enabled <= 1, "cuGraphNodeSetEnabled: isEnabled %u", enabled);
  NEED(n->type <= N_EMPTY, "cuGraphNodeSetEnabled: a %s node cannot be disabled", node_type_names[n->type]);
  n->enabled = enabled;
  END(CUDA_SUCCESS);
}

/* Same nodes, types and edges, in the same order: then every node takes the new parameters. */
static CUresult CUDAAPI f_cuGraphExecUpdate(CUgraphExec x, CUgraph g, CUgraphExecUpdateResultInfo *info) {
  BEGIN("cuGraphExecUpdate(%p, %p)", (void *)x, (void *)g);
  struct exec *ex;
  struct graph *gr;
  NEED_HANDLE(ex, x, K_EXEC, "cuGraphExecUpdate", "hGraphExec");
  NEED_HANDLE(gr, g, K_GRAPH, "cuGraphExecUpdate", "hGraph");
  NEED(info, "cuGraphExecUpdate: resultInfo is NULL");
  info->result = CU_GRAPH_EXEC_UPDATE_SUCCESS;
  info->errorNode = info->errorFromNode = NULL;
  bool same = gr->count == ex->count;
  for (size_t i = 0; same && i < gr->count; i++) {
    const struct node *a = gr->nodes[i], *b = &ex->nodes[i];
    same = a->type == b->type && a->num_deps == b->num_deps;
    for (size_t k = 0; same && k < a->num_deps; k++) same = a->deps[k]->index == b->deps[k]->index;
  }
  if (!same) {
    info->result = CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED;
    END(CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE);
  }
  /* "Changing the width or element size of a 1-D memset may be refused": FAKE_CUDA_REFUSE_FILL_RESHAPE does. */
  for (size_t i = 0; getenv("FAKE_CUDA_REFUSE_FILL_RESHAPE") && i < gr->count; i++) {
    const struct node *a = gr->nodes[i], *b = &ex->nodes[i];
    if (a->type == N_MEMSET && a->fill.height == 1 &&
        (a->fill.width != b->fill.width || a->fill.elementSize != b->fill.elementSize)) {
      info->result = CU_GRAPH_EXEC_UPDATE_ERROR_PARAMETERS_CHANGED;
      info->errorNode = (CUgraphNode)gr->nodes[i];
      END(CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE);
    }
  }
  for (size_t i = 0; i < gr->count; i++) {
    struct node *b = &ex->nodes[i];
    struct node **deps = b->deps;
    bool enabled = b->enabled;
    struct handle h = b->h;
    *b = *gr->nodes[i];
    b->deps = deps, b->enabled = enabled, b->h = h, b->graph = ex->tmpl;
  }
  END(CUDA_SUCCESS);
}

/* ------------------------------------------------------------ native capture */

static CUresult CUDAAPI f_cuStreamBeginCapture(CUstream s, CUstreamCaptureMode mode) {
  BEGIN("cuStreamBeginCapture(%p, mode=%d)", (void *)s, (int)mode);
  NEED_CONTEXT("cuStreamBeginCapture");
  struct stream *st;
  NEED_HANDLE(st, s, K_STREAM, "cuStreamBeginCapture", "hStream");
  if (st->capturing) END(CUDA_ERROR_ILLEGAL_STATE);
  st->capturing = true, st->invalidated = false, st->capture = new_graph();
  if (num_capturing == cap_capturing) {
    cap_capturing = cap_capturing ? 2 * cap_capturing : 16;
    capturing_streams = realloc(capturing_streams, cap_capturing * sizeof *capturing_streams);
    if (!capturing_streams) abort();
  }
  capturing_streams[num_capturing++] = st;
  END(CUDA_SUCCESS);
}

static CUresult CUDAAPI f_cuStreamEndCapture(CUstream s, CUgraph *g) {
  BEGIN("cuStreamEndCapture(%p)", (void *)s);
  struct stream *st;
  NEED_HANDLE(st, s, K_STREAM, "cuStreamEndCapture", "hStream");
  NEED(g, "cuStreamEndCapture: phGraph is NULL");
  if (!st->capturing) END(CUDA_ERROR_ILLEGAL_STATE);
  st->capturing = false;
  *g = NULL;
  if (st->invalidated) {
    st->capture->h.live = false; /* the driver drops an invalidated capture's graph */
    END(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
  }
  *g = (CUgraph)st->capture;
  END(CUDA_SUCCESS);
}

/* ------------------------------------------------------------ for the tests */

static void describe_node(const struct node *n, char *line, size_t size) {
  int used = snprintf(line, size, "%s", node_type_names[n->type]);
  size_t rest = size - (size_t)used;
  char *at = line + used;
  switch (n->type) {
  case N_KERNEL: {
    const struct function *f = (const struct function *)n->kernel.func;
    used = snprintf(at, rest, " %s grid=%u,%u,%u block=%u,%u,%u shmem=%u args=", f->name, n->kernel.gridDimX,
                    n->kernel.gridDimY, n->kernel.gridDimZ, n->kernel.blockDimX, n->kernel.blockDimY,
                    n->kernel.blockDimZ, n->kernel.sharedMemBytes);
    for (size_t i = 0; i < f->args_size && (size_t)used + 3 < rest; i++)
      used += snprintf(at + used, rest - (size_t)used, "%02x", n->args[i]);
    if (n->priority && (size_t)used < rest)
      used += snprintf(at + used, rest - (size_t)used, " priority=%d", n->priority);
    if (n->cooperative && (size_t)used < rest)
      used += snprintf(at + used, rest - (size_t)used, " cooperative=%d", n->cooperative);
    break;
  }
  case N_MEMCPY: {
    const CUDA_MEMCPY3D *c = &n->copy;
    const void *dst = c->dstMemoryType == CU_MEMORYTYPE_HOST ? c->dstHost : (void *)(uintptr_t)c->dstDevice;
    const void *src = c->srcMemoryType == CU_MEMORYTYPE_HOST ? c->srcHost : (void *)(uintptr_t)c->srcDevice;
    used = snprintf(at, rest, " dst=%p src=%p bytes=%zu", dst, src, c->WidthInBytes);
    if (c->Height > 1 || c->Depth > 1)
      used += snprintf(at + used, rest - (size_t)used, " rows=%zu slices=%zu pitch=%zu,%zu height=%zu,%zu", c->Height,
                       c->Depth, c->dstPitch, c->srcPitch, c->dstHeight, c->srcHeight);
    break;
  }
  case N_MEMSET:
    used =
        snprintf(at, rest, " dst=%p value=%u element=%u width=%zu height=%zu pitch=%zu", (void *)(uintptr_t)n->fill.dst,
                 n->fill.value, n->fill.elementSize, n->fill.width, n->fill.height, n->fill.pitch);
    break;
  case N_CHILD: used = snprintf(at, rest, " nodes=%zu", n->child->count); break;
  case N_COND:
    used = snprintf(at, rest, " type=%d size=%u bodies", (int)n->cond.type, n->cond.size);
    for (unsigned b = 0; b < n->cond.size && (size_t)used < rest; b++)
      used += snprintf(at + used, rest - (size_t)used, "%s%zu", b ? "," : "=", ((struct graph *)n->bodies[b])->count);
    break;
  default: used = 0; break;
  }
  if (!n->enabled) snprintf(at + used, rest - (size_t)used, " [disabled]");
}

static int compare_lines(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* Sorted node and edge lines of nodes[0..count), as fake_libcuda.h describes. */
static size_t describe(const struct node *nodes, size_t count, char *buf, size_t size) {
  size_t edges = 0;
  for (size_t i = 0; i < count; i++) edges += nodes[i].num_deps;
  char **lines = calloc(count + edges + 1, sizeof *lines);
  char(*labels)[400] = calloc(count + 1, sizeof *labels);
  size_t n = 0;
  for (size_t i = 0; i < count; i++) {
    describe_node(&nodes[i], labels[i], sizeof labels[i]);
    lines[n++] = strdup(labels[i]);
  }
  for (size_t i = 0; i < count; i++)
    for (size_t k = 0; k < nodes[i].num_deps; k++) {
      char edge[820];
      snprintf(edge, sizeof edge, "%s -> %s", labels[nodes[i].deps[k]->index], labels[i]);
      lines[n++] = strdup(edge);
    }
  qsort(lines, n, sizeof *lines, compare_lines);
  size_t used = 0;
  if (size) buf[0] = '\0';
  for (size_t i = 0; i < n; i++) {
    if (used < size) used += (size_t)snprintf(buf + used, size - used, "%s\n", lines[i]);
    free(lines[i]);
  }
  free(lines);
  free(labels);
  return count;
}

size_t fake_cuda_describe_exec(CUgraphExec x, char *buf, size_t size) {
  pthread_mutex_lock(&state_lock);
  struct exec *ex = use("fake_cuda_describe_exec", "x", x, K_EXEC);
  size_t count = ex ? describe(ex->nodes, ex->count, buf, size) : 0;
  pthread_mutex_unlock(&state_lock);
  return count;
}

size_t fake_cuda_describe_graph(CUgraph g, char *buf, size_t size) {
  pthread_mutex_lock(&state_lock);
  struct graph *gr = use("fake_cuda_describe_graph", "g", g, K_GRAPH);
  size_t count = 0;
  if (gr) {
    struct node *copies = calloc(gr->count + 1, sizeof *copies);
    for (size_t i = 0; i < gr->count; i++) copies[i] = *gr->nodes[i];
    count = describe(copies, gr->count, buf, size);
    free(copies);
  }
  pthread_mutex_unlock(&state_lock);
  return count;
}

size_t fake_cuda_violations(char *buf, size_t size) {
  pthread_mutex_lock(&state_lock);
  size_t used = 0;
  if (size) buf[0] = '\0';
  for (size_t i = 0; i < num_violations && used < size; i++)
    used += (size_t)snprintf(buf + used, size - used, "%s\n", violation_log[i]);
  size_t n = num_violations;
  pthread_mutex_unlock(&state_lock);
  return n;
}

size_t fake_cuda_calls(const char *text) {
  pthread_mutex_lock(&state_lock);
  size_t n = 0;
  for (size_t i = 0; i < num_calls; i++) n += strstr(call_log[i], text) != NULL;
  pthread_mutex_unlock(&state_lock);
  return n;
}

void fake_cuda_log_clear(void) {
  pthread_mutex_lock(&state_lock);
  for (size_t i = 0; i < num_calls; i++) free(call_log[i]);
  num_calls = 0;
  pthread_mutex_unlock(&state_lock);
}

/* Nodes live and die with their graphs, functions with their modules: neither counts alone. */
size_t fake_cuda_live(char *buf, size_t size) {
  pthread_mutex_lock(&state_lock);
  size_t n = 0, used = 0;
  if (size) buf[0] = '\0';
  for (size_t i = 0; i < num_handles; i++) {
    const struct handle *h = handles[i];
    if (!h->live || h->kind == K_NODE || h->kind == K_FUNCTION) continue;
    n++;
    if (used < size) used += (size_t)snprintf(buf + used, size - used, "%s %u\n", kind_names[h->kind], h->id);
  }
  for (size_t i = 0; i < 8; i++)
    if (contexts[i].retained) {
      n++;
      if (used < size)
        used += (size_t)snprintf(buf + used, size - used, "device %zu's primary context (retained %d times)\n", i,
                                 contexts[i].retained);
    }
  pthread_mutex_unlock(&state_lock);
  return n;
}

void fake_cuda_drain(void) {
  pthread_mutex_lock(&state_lock);
  wait_for(queued);
  pthread_mutex_unlock(&state_lock);
}

size_t fake_cuda_kernel_runs(void) {
  pthread_mutex_lock(&state_lock);
  size_t n = kernel_runs;
  pthread_mutex_unlock(&state_lock);
  return n;
}

/* ------------------------------------------------------------ cuGetProcAddress */

static CUresult CUDAAPI not_supported(void) { return CUDA_ERROR_NOT_SUPPORTED; }

struct entry {
  const char *name;
  void (*fn)(void);
};

/* Each fake is assigned to the pointer type gcap asks for, so a wrong signature fails to compile. */
#define ENTRY(name, version)                                                                                           \
  {                                                                                                                    \
#name, (void (*)(void))(PFN_##name##_v##version) { f_##name }                                                      \
  }
#define ENTRIES                                                                                                        \
  ENTRY(cuInit, 2000), ENTRY(cuDeviceGetCount, 2000), ENTRY(cuDeviceGet, 2000), ENTRY(cuDeviceGetName, 2000),          \
      ENTRY(cuGetErrorName, 6000), ENTRY(cuGetErrorString, 6000), ENTRY(cuDevicePrimaryCtxRetain, 7000),               \
      ENTRY(cuDevicePrimaryCtxRelease, 11000), ENTRY(cuCtxSetCurrent, 4000), ENTRY(cuCtxGetCurrent, 4000),             \
      ENTRY(cuCtxSynchronize, 2000), ENTRY(cuMemAlloc, 3020), ENTRY(cuMemFree, 3020), ENTRY(cuMemAllocHost, 3020),     \
      ENTRY(cuMemFreeHost, 2000), ENTRY(cuMemcpy, 4000), ENTRY(cuMemcpyAsync, 4000), ENTRY(cuMemcpy3DAsync, 3020),     \
      ENTRY(cuMemsetD8Async, 3020), ENTRY(cuMemsetD16Async, 3020), ENTRY(cuMemsetD32Async, 3020),                      \
      ENTRY(cuMemsetD2D8Async, 3020), ENTRY(cuMemsetD2D16Async, 3020), ENTRY(cuMemsetD2D32Async, 3020),                \
      ENTRY(cuStreamCreate, 2000), ENTRY(cuStreamCreateWithPriority, 5050), ENTRY(cuStreamDestroy, 4000),              \
      ENTRY(cuStreamSynchronize, 2000), ENTRY(cuStreamQuery, 2000), ENTRY(cuStreamWaitEvent, 3020),                    \
      ENTRY(cuLaunchHostFunc, 10000), ENTRY(cuLaunchKernel, 4000), ENTRY(cuLaunchCooperativeKernel, 9000),             \
      ENTRY(cuEventCreate, 2000), ENTRY(cuEventDestroy, 4000), ENTRY(cuEventRecord, 2000),                             \
      ENTRY(cuEventSynchronize, 2000), ENTRY(cuEventQuery, 2000), ENTRY(cuEventElapsedTime, 2000),                     \
      ENTRY(cuModuleLoadData, 2000), ENTRY(cuModuleUnload, 2000), ENTRY(cuModuleGetFunction, 2000),                    \
      ENTRY(cuModuleGetGlobal, 3020), ENTRY(cuFuncGetParamInfo, 12040), ENTRY(cuGraphCreate, 10000),                   \
      ENTRY(cuGraphDestroy, 10000), ENTRY(cuGraphAddKernelNode, 12000), ENTRY(cuGraphConditionalHandleCreate, 12030),  \
      ENTRY(cuLinkCreate, 6050), ENTRY(cuLinkAddData, 6050), ENTRY(cuLinkAddFile, 6050), ENTRY(cuLinkComplete, 5050),  \
      ENTRY(cuLinkDestroy, 5050), ENTRY(cuGraphAddNode, 12020), ENTRY(cuGraphDestroyNode, 10000),                      \
      ENTRY(cuGraphKernelNodeSetAttribute, 11000), ENTRY(cuGraphAddMemcpyNode, 10000),                                 \
      ENTRY(cuGraphAddMemsetNode, 10000), ENTRY(cuGraphAddHostNode, 10000), ENTRY(cuGraphAddEmptyNode, 10000),         \
      ENTRY(cuGraphAddEventRecordNode, 11010), ENTRY(cuGraphAddEventWaitNode, 11010),                                  \
      ENTRY(cuGraphAddChildGraphNode, 10000), ENTRY(cuGraphInstantiateWithFlags, 11040),                               \
      ENTRY(cuGraphExecDestroy, 10000), ENTRY(cuGraphLaunch, 10000), ENTRY(cuGraphUpload, 11010),                      \
      ENTRY(cuGraphExecKernelNodeSetParams, 12000), ENTRY(cuGraphExecMemcpyNodeSetParams, 10020),                      \
      ENTRY(cuGraphExecMemsetNodeSetParams, 10020), ENTRY(cuGraphExecHostNodeSetParams, 10020),                        \
      ENTRY(cuGraphExecEventRecordNodeSetEvent, 11010), ENTRY(cuGraphExecEventWaitNodeSetEvent, 11010),                \
      ENTRY(cuGraphNodeSetEnabled, 11060), ENTRY(cuGraphExecUpdate, 12000), ENTRY(cuGraphClone, 10000),                \
      ENTRY(cuGraphGetNodes, 10000), ENTRY(cuStreamBeginCapture, 10010), ENTRY(cuStreamEndCapture, 10000),             \
      ENTRY(cuMemAllocManaged, 6000), ENTRY(cuFuncGetAttribute, 2020), ENTRY(cuFuncSetAttribute, 9000)

CUresult CUDAAPI cuGetProcAddress(const char *symbol, void **pfn, int version, cuuint64_t flags,
                                  CUdriverProcAddressQueryResult *status) {
  (void)version, (void)flags;
  const char *missing = getenv("FAKE_CUDA_MISSING");
  if (missing && strcmp(missing, symbol) == 0) {
    *pfn = NULL;
    *status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    return CUDA_ERROR_NOT_FOUND;
  }
  /* Automatic, because a compound literal is not a constant in C11. */
  const struct entry entries[] = {ENTRIES};
  void (*fn)(void) = (void (*)(void))not_supported;
  for (size_t i = 0; i < sizeof entries / sizeof entries[0]; i++)
    if (strcmp(entries[i].name, symbol) == 0) fn = entries[i].fn;
  memcpy(pfn, &fn, sizeof fn);
  *status = CU_GET_PROC_ADDRESS_SUCCESS;
  return CUDA_SUCCESS;
}
