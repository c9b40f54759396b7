/*
 * gcap: record GPU stream work into graphs, instantiate them and replay them,
 * on the CUDA driver or on a CPU simulator.
 *
 * Conventions: every fallible function returns gcap_status; outputs come last
 * and are written only on success (handle outputs are set to NULL on failure).
 * After any failure gcap_last_error_message() explains it for this thread.
 */
#ifndef GCAP_GCAP_H
#define GCAP_GCAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(GCAP_BUILDING_LIBRARY) && defined(__GNUC__)
#define GCAP_API __attribute__((visibility("default")))
#else
#define GCAP_API
#endif

#define GCAP_VERSION_MAJOR 0
#define GCAP_VERSION_MINOR 1
#define GCAP_VERSION_PATCH 0

/* Opaque handles. */
typedef struct gcap_context gcap_context;
typedef struct gcap_stream gcap_stream;
typedef struct gcap_event gcap_event;
typedef struct gcap_module gcap_module;
typedef struct gcap_kernel gcap_kernel;
typedef struct gcap_graph gcap_graph;
typedef struct gcap_node gcap_node;
typedef struct gcap_exec gcap_exec;
typedef struct gcap_capture gcap_capture;
typedef struct gcap_pool gcap_pool;
typedef struct gcap_user_object gcap_user_object;

/* ------------------------------------------------------------------ status */

/* The one table of status codes: name, value, short sentence. */
#define GCAP_STATUS_MAP(X)                                                                                             \
  X(GCAP_SUCCESS, 0, "no error")                                                                                       \
  X(GCAP_ERROR_INVALID_VALUE, 1, "an argument is invalid or out of range")                                             \
  X(GCAP_ERROR_OUT_OF_MEMORY, 2, "a host or device allocation failed")                                                 \
  X(GCAP_ERROR_NOT_INITIALIZED, 3, "the requested backend cannot start")                                               \
  X(GCAP_ERROR_INVALID_HANDLE, 4, "a handle is NULL, destroyed or of another context")                                 \
  X(GCAP_ERROR_NOT_SUPPORTED, 5, "the backend or this build does not support the operation")                           \
  X(GCAP_ERROR_NOT_FOUND, 6, "no loaded module has a kernel of that name")                                             \
  X(GCAP_ERROR_NOT_READY, 7, "work is still pending")                                                                  \
  X(GCAP_ERROR_ILLEGAL_STATE, 8, "the object is in the wrong state for the operation")                                 \
  X(GCAP_ERROR_INVALID_PTX, 218, "the PTX does not parse or is not valid")                                             \
  X(GCAP_ERROR_INVALID_SOURCE, 300, "NVRTC could not compile the CUDA C source")                                       \
  X(GCAP_ERROR_ILLEGAL_ADDRESS, 700, "a kernel accessed memory outside what it may touch")                             \
  X(GCAP_ERROR_LAUNCH_TIMEOUT, 702, "a kernel ran past the simulator's watchdog")                                      \
  X(GCAP_ERROR_ASSERT, 710, "a device-side assert failed")                                                             \
  X(GCAP_ERROR_ILLEGAL_INSTRUCTION, 715, "a kernel executed an instruction that cannot run")                           \
  X(GCAP_ERROR_MISALIGNED_ADDRESS, 716, "a kernel accessed memory at a misaligned address")                            \
  X(GCAP_ERROR_LAUNCH_FAILURE, 719, "a kernel failed while it ran (trap, or a simulator check)")                       \
  X(GCAP_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE, 720, "the grid does not fit on the device at once")                       \
  X(GCAP_ERROR_STREAM_CAPTURE_UNSUPPORTED, 900, "the operation is not permitted while capturing")                      \
  X(GCAP_ERROR_STREAM_CAPTURE_INVALIDATED, 901, "the capture was invalidated by an earlier error")                     \
  X(GCAP_ERROR_STREAM_CAPTURE_MERGE, 902, "the operation would merge two independent captures")                        \
  X(GCAP_ERROR_STREAM_CAPTURE_UNMATCHED, 903, "the capture was not begun on this stream or has already ended")         \
  X(GCAP_ERROR_STREAM_CAPTURE_UNJOINED, 904, "forked work was not joined back into the origin stream")                 \
  X(GCAP_ERROR_STREAM_CAPTURE_ISOLATION, 905, "a dependency would cross the capture boundary")                         \
  X(GCAP_ERROR_STREAM_CAPTURE_IMPLICIT, 906, "implicit dependency on a capturing stream")                              \
  X(GCAP_ERROR_CAPTURED_EVENT, 907, "the event was last recorded during a capture")                                    \
  X(GCAP_ERROR_STREAM_CAPTURE_WRONG_THREAD, 908, "the capture must be ended on the thread that began it")              \
  X(GCAP_ERROR_GRAPH_EXEC_UPDATE_FAILURE, 910, "the executable graph update was refused")                              \
  X(GCAP_ERROR_BACKEND, 999, "the backend failed with an error gcap has no code for")

typedef enum gcap_status {
#define GCAP_STATUS_ENUM_(name, value, text) name = value,
  GCAP_STATUS_MAP(GCAP_STATUS_ENUM_)
#undef GCAP_STATUS_ENUM_
} gcap_status;

/** Enum name of @p s ("GCAP_ERROR_INVALID_VALUE"); "GCAP_UNKNOWN_STATUS" for other values. */
GCAP_API const char *gcap_status_name(gcap_status s);
/** A short English sentence for @p s; never NULL. */
GCAP_API const char *gcap_status_string(gcap_status s);
/** This thread's explanation of its last failing call; "" after a success. Valid until the next gcap call. */
GCAP_API const char *gcap_last_error_message(void);
/** The library's version; NULL outputs are skipped. */
GCAP_API void gcap_version(int *major, int *minor, int *patch);

/* ---------------------------------------------------------------- context */

typedef enum gcap_backend_kind {
  GCAP_BACKEND_AUTO = 0, /* GCAP_BACKEND environment variable, then CUDA if built and usable */
  GCAP_BACKEND_SIM = 1,
  GCAP_BACKEND_CUDA = 2,
} gcap_backend_kind;

struct gcap_sim_options;

typedef struct gcap_context_options {
  gcap_backend_kind backend;
  int device;                         /* CUDA device ordinal; ignored by SIM */
  const struct gcap_sim_options *sim; /* NULL: defaults; see gcap/sim.h */
} gcap_context_options;

/** Fills @p o with AUTO, device 0 and no simulator options. */
GCAP_API void gcap_context_options_init(gcap_context_options *o);
/**
 * Creates a context on the backend @p o chooses (NULL: defaults).
 * INVALID_VALUE for a bad option or GCAP_BACKEND value, NOT_SUPPORTED for a backend
 * not compiled in, NOT_INITIALIZED when it cannot start, OUT_OF_MEMORY.
 */
GCAP_API gcap_status gcap_context_create(const gcap_context_options *o, gcap_context **out);
/** Destroys @p ctx and everything it still owns; NULL does nothing. */
GCAP_API void gcap_context_destroy(gcap_context *ctx);
/** The backend @p ctx runs on (never AUTO); AUTO for an invalid handle. */
GCAP_API gcap_backend_kind gcap_context_backend(const gcap_context *ctx);
/** Waits for all work of @p ctx. STREAM_CAPTURE_UNSUPPORTED while any of its streams captures. */
GCAP_API gcap_status gcap_context_synchronize(gcap_context *ctx);
/** "auto", "sim", "cuda"; "unknown" for other values. */
GCAP_API const char *gcap_backend_name(gcap_backend_kind k);
/** SUCCESS, NOT_SUPPORTED (not compiled in) or NOT_INITIALIZED (no driver or device). */
GCAP_API gcap_status gcap_backend_available(gcap_backend_kind k);

/* ----------------------------------------------------------------- memory */

/* values equal cudaMemcpyKind */
typedef enum gcap_memcpy_kind {
  GCAP_MEMCPY_HOST_TO_HOST = 0,
  GCAP_MEMCPY_HOST_TO_DEVICE = 1,
  GCAP_MEMCPY_DEVICE_TO_HOST = 2,
  GCAP_MEMCPY_DEVICE_TO_DEVICE = 3,
  GCAP_MEMCPY_DEFAULT = 4, /* inferred from the pointers */
} gcap_memcpy_kind;

/** Allocates @p bytes (> 0) of device memory. Potentially unsafe during capture. */
GCAP_API gcap_status gcap_mem_alloc(gcap_context *ctx, size_t bytes, void **dptr);
/** Frees device memory from gcap_mem_alloc; NULL is a no-op success. */
GCAP_API gcap_status gcap_mem_free(gcap_context *ctx, void *dptr);
/**
 * Allocates @p bytes (> 0) of managed memory: device memory for kernels, copies and graphs that
 * host code may read and write too (also under strict memory). Free it with gcap_mem_free.
 */
GCAP_API gcap_status gcap_mem_alloc_managed(gcap_context *ctx, size_t bytes, void **out);
/** Allocates @p bytes (> 0) of page-locked host memory. */
GCAP_API gcap_status gcap_host_alloc(gcap_context *ctx, size_t bytes, void **hptr);
/** Frees memory from gcap_host_alloc; NULL is a no-op success. */
GCAP_API gcap_status gcap_host_free(gcap_context *ctx, void *hptr);
/** Synchronous copy; every device range must lie inside one live allocation. */
GCAP_API gcap_status gcap_memcpy(gcap_context *ctx, void *dst, const void *src, size_t bytes, gcap_memcpy_kind kind);
/** Stream-ordered copy; in capture, a MEMCPY node. */
GCAP_API gcap_status gcap_memcpy_async(gcap_stream *s, void *dst, const void *src, size_t bytes, gcap_memcpy_kind kind);
/** Stream-ordered fill of @p bytes with the low byte of @p value. */
GCAP_API gcap_status gcap_memset_async(gcap_stream *s, void *dst, int value, size_t bytes);
/** Stream-ordered fill of @p count 16-bit elements; @p dst 2-byte aligned. */
GCAP_API gcap_status gcap_memset_d16_async(gcap_stream *s, void *dst, uint16_t value, size_t count);
/** Stream-ordered fill of @p count 32-bit elements; @p dst 4-byte aligned. */
GCAP_API gcap_status gcap_memset_d32_async(gcap_stream *s, void *dst, uint32_t value, size_t count);
/*
 * 2-D and 3-D copies of linear memory (cudaMemcpy3DParms without arrays). Linear memory only:
 * gcap has no CUDA arrays. Widths and x positions are in bytes.
 */
typedef struct gcap_pitched_ptr { /* cudaPitchedPtr */
  void *ptr;
  size_t pitch; /* bytes from a row to the next */
  size_t xsize; /* the row's logical width in bytes (not checked, as by CUDA for linear memory) */
  size_t ysize; /* rows from a slice to the next */
} gcap_pitched_ptr;
typedef struct gcap_pos {
  size_t x, y, z; /* x in bytes */
} gcap_pos;
typedef struct gcap_extent {
  size_t width, height, depth; /* width in bytes */
} gcap_extent;
typedef struct gcap_memcpy_3d_params {
  gcap_pitched_ptr src;
  gcap_pos src_pos;
  gcap_pitched_ptr dst;
  gcap_pos dst_pos;
  gcap_extent extent;
  gcap_memcpy_kind kind;
} gcap_memcpy_3d_params;
/**
 * Allocates @p height rows of at least @p width bytes (both > 0) of device memory; *@p pitch is
 * the bytes from a row to the next, @p width rounded up to a multiple of 512 (cudaMallocPitch).
 */
GCAP_API gcap_status gcap_mem_alloc_pitch(gcap_context *ctx, size_t width, size_t height, void **dptr, size_t *pitch);
/**
 * Stream-ordered copy of @p height rows of @p width bytes, rows @p dpitch and @p spitch bytes apart
 * (cudaMemcpy2DAsync); each pitch at least @p width, for one row too. In capture, a MEMCPY node
 * with 3-D parameters (gcap_node_get_memcpy_3d_params).
 */
GCAP_API gcap_status gcap_memcpy_2d_async(gcap_stream *s, void *dst, size_t dpitch, const void *src, size_t spitch,
                                          size_t width, size_t height, gcap_memcpy_kind kind);
/** Stream-ordered allocation; in capture, a MEM_ALLOC node. */
GCAP_API gcap_status gcap_mem_alloc_async(gcap_stream *s, size_t bytes, void **dptr);
/** Stream-ordered free; in capture, a MEM_FREE node. */
GCAP_API gcap_status gcap_mem_free_async(gcap_stream *s, void *dptr);

/* ------------------------------------------------------- streams and events */

/** Creates a non-blocking stream of priority 0 (gcap_stream_create_with_flags with GCAP_STREAM_NON_BLOCKING). */
GCAP_API gcap_status gcap_stream_create(gcap_context *ctx, gcap_stream **out);
/* Flags of gcap_stream_create_with_flags (cudaStreamCreateWithFlags). */
#define GCAP_STREAM_DEFAULT 0u      /* blocking: synchronizes with the legacy stream (cudaStreamDefault) */
#define GCAP_STREAM_NON_BLOCKING 1u /* cudaStreamNonBlocking; what gcap_stream_create makes */
/**
 * A stream with @p flags (GCAP_STREAM_DEFAULT or GCAP_STREAM_NON_BLOCKING) and @p priority (lower
 * is more urgent; a value outside gcap_context_stream_priority_range is clamped, as CUDA does).
 */
GCAP_API gcap_status gcap_stream_create_with_flags(gcap_context *ctx, unsigned flags, int priority, gcap_stream **out);
/** The flags @p s was made with (the legacy and per-thread streams: GCAP_STREAM_DEFAULT). */
GCAP_API gcap_status gcap_stream_get_flags(gcap_stream *s, unsigned *flags);
/** The priority of @p s, after clamping. */
GCAP_API gcap_status gcap_stream_get_priority(gcap_stream *s, int *priority);
/** CUDA's numbers: @p least 0, @p greatest -5 (lower is more urgent); either pointer may be NULL. */
GCAP_API gcap_status gcap_context_stream_priority_range(gcap_context *ctx, int *least, int *greatest);
/**
 * The context's legacy (NULL) stream: its work waits for all earlier work of the context's
 * blocking streams, and their later work waits for its work. It cannot be captured or destroyed.
 */
GCAP_API gcap_status gcap_context_legacy_stream(gcap_context *ctx, gcap_stream **out);
/**
 * The calling thread's per-thread default stream: a blocking stream of its own for each host
 * thread, made on first use, that lives until the context is destroyed.
 */
GCAP_API gcap_status gcap_context_per_thread_stream(gcap_context *ctx, gcap_stream **out);
/** Destroys @p s after its work; NULL is a no-op success; ILLEGAL_STATE while it is the origin of
 * a capture; a stream that joined a capture loses its handle now and goes when the capture ends;
 * INVALID_HANDLE for the legacy or a per-thread stream. */
GCAP_API gcap_status gcap_stream_destroy(gcap_stream *s);
/** Waits for all work issued to @p s. */
GCAP_API gcap_status gcap_stream_synchronize(gcap_stream *s);
/** SUCCESS when all work of @p s is done, NOT_READY otherwise. */
GCAP_API gcap_status gcap_stream_query(gcap_stream *s);
/** Makes later work of @p s wait for the work @p e last captured. */
GCAP_API gcap_status gcap_stream_wait_event(gcap_stream *s, gcap_event *e);
/** Creates an event (never recorded: queries succeed). */
GCAP_API gcap_status gcap_event_create(gcap_context *ctx, gcap_event **out);
/* Flags of gcap_event_create_with_flags (cudaEventCreateWithFlags); gcap_event_create is DEFAULT. */
#define GCAP_EVENT_DEFAULT 0u
#define GCAP_EVENT_BLOCKING_SYNC 1u  /* accepted: waits already block the calling thread */
#define GCAP_EVENT_DISABLE_TIMING 2u /* no timestamps: gcap_event_elapsed_time refuses it */
#define GCAP_EVENT_INTERPROCESS 4u   /* NOT_SUPPORTED; other bits INVALID_VALUE */
/** An event with @p flags. */
GCAP_API gcap_status gcap_event_create_with_flags(gcap_context *ctx, unsigned flags, gcap_event **out);
/**
 * Milliseconds between the completions of the latest records of @p start and @p end
 * (cudaEventElapsedTime, outputs last): NOT_READY while either is pending; INVALID_HANDLE for an
 * event made with GCAP_EVENT_DISABLE_TIMING or never recorded. On the simulator the times are
 * the host's clock when the records ran, not GPU time.
 */
GCAP_API gcap_status gcap_event_elapsed_time(gcap_event *start, gcap_event *end, float *ms);
/** Destroys @p e; NULL is a no-op success. Graph nodes that use it keep working. */
GCAP_API gcap_status gcap_event_destroy(gcap_event *e);
/** Records in @p e the work issued to @p s so far. */
GCAP_API gcap_status gcap_event_record(gcap_event *e, gcap_stream *s);
/** Waits for the work recorded in @p e. */
GCAP_API gcap_status gcap_event_synchronize(gcap_event *e);
/** SUCCESS when the work recorded in @p e is done, NOT_READY otherwise. */
GCAP_API gcap_status gcap_event_query(gcap_event *e);

/* ------------------------------------------------- kernels and host callbacks */

typedef struct gcap_dim3 {
  uint32_t x, y, z;
} gcap_dim3;
#ifdef __cplusplus
#define GCAP_DIM3(x, y, z) (gcap_dim3{(x), (y), (z)})
#else
#define GCAP_DIM3(x, y, z) ((gcap_dim3){(x), (y), (z)})
#endif

/** What one simulated kernel thread sees. */
typedef struct gcap_sim_thread {
  gcap_dim3 grid_dim, block_dim, block_idx, thread_idx;
  void *shared_mem; /* dynamic shared memory of this block */
} gcap_sim_thread;
/** CPU implementation of a kernel, called once per thread; args[i] points at parameter i. */
typedef void (*gcap_sim_kernel_fn)(const gcap_sim_thread *t, void *const *args);

/** What a per-block CPU implementation sees: it loops over the block's threads itself. */
typedef struct gcap_sim_block {
  gcap_dim3 grid_dim, block_dim, block_idx;
  void *shared_mem; /* dynamic shared memory of this block */
} gcap_sim_block;
/** CPU implementation of a kernel, called once per block (the fast form). */
typedef void (*gcap_sim_block_fn)(const gcap_sim_block *b, void *const *args);

/* how a kernel uses a pointer parameter (race analysis) */
typedef enum gcap_param_access {
  GCAP_ACCESS_UNKNOWN = 0, /* pointer-sized value inside a live allocation: read+write of all of it */
  GCAP_ACCESS_NONE = 1,
  GCAP_ACCESS_READ = 2,
  GCAP_ACCESS_WRITE = 3,
  GCAP_ACCESS_READ_WRITE = 4,
} gcap_param_access;

typedef struct gcap_kernel_def {
  const char *name;          /* entry name, as in the PTX/cubin image */
  gcap_sim_kernel_fn sim_fn; /* CPU implementation; NULL: a stub that runs nothing */
  size_t num_params;
  const size_t *param_sizes;             /* bytes of each parameter */
  const gcap_param_access *param_access; /* NULL: all UNKNOWN; else num_params entries */
  gcap_sim_block_fn sim_block_fn;        /* per-block CPU implementation; given, it runs instead of sim_fn */
} gcap_kernel_def;

typedef struct gcap_module_desc {
  const void *image; /* PTX text (either backend), cubin or fatbin (CUDA); may be NULL */
  size_t image_size;
  /* NULL (and num_kernels 0) with a PTX image or a source: the kernels are the PTX's .visible
   * .entry functions, with parameter sizes from their .param lists. */
  const gcap_kernel_def *kernels;
  size_t num_kernels;
  const char *source;         /* CUDA C, compiled to PTX with NVRTC at load (either backend); NULL: none */
  const char *const *options; /* NVRTC options ("-arch=compute_80", "-DN=4"); may be NULL */
  size_t num_options;
  /* The source's name ("mykernels.cu"), as reports and NVRTC's log show it (NVRTC's program name);
   * NULL: "<nvrtc source>". Only with a source. */
  const char *name;
} gcap_module_desc;

/**
 * Loads a module; copies @p d, its names and sizes. Potentially unsafe during capture.
 * INVALID_PTX (naming the line, column and instruction) for PTX that does not parse or, on the
 * simulator, uses what it cannot run, and, as CUDA's driver reads any image that is not a cubin
 * (ELF) or a fatbin as PTX, for such an image that is not PTX text when no kernels are defined;
 * INVALID_SOURCE with NVRTC's log for a source NVRTC refuses;
 * NOT_FOUND for a source when no libnvrtc is found (GCAP_NVRTC names one); INVALID_VALUE for an
 * image and a source both given, or a name without a source.
 */
GCAP_API gcap_status gcap_module_load(gcap_context *ctx, const gcap_module_desc *d, gcap_module **out);
/** Unloads @p m; its kernel handles become invalid; graphs using them keep working. NULL: INVALID_HANDLE. */
GCAP_API gcap_status gcap_module_unload(gcap_module *m);
/** Finds kernel @p name in @p m; NOT_FOUND if absent. */
GCAP_API gcap_status gcap_module_get_kernel(gcap_module *m, const char *name, gcap_kernel **out);
/** Finds kernel @p name in the modules of @p ctx, earliest loaded first; NOT_FOUND if absent. */
GCAP_API gcap_status gcap_context_find_kernel(gcap_context *ctx, const char *name, gcap_kernel **out);
/**
 * A .global or .const variable of @p m (cuModuleGetGlobal): its device address in @p dptr and
 * its size in @p bytes (may be NULL). It is device memory for copies, fills and kernels, set
 * from the PTX's initialiser at load; each loaded module has its own. INVALID_HANDLE for a bad
 * module, INVALID_VALUE for a NULL name or dptr, NOT_FOUND for an unknown name; @p dptr and
 * @p bytes are written only on success.
 */
GCAP_API gcap_status gcap_module_get_global(gcap_module *m, const char *name, void **dptr, size_t *bytes);
/** The kernel's entry name (owned by its module); NULL for an invalid handle. */
GCAP_API const char *gcap_kernel_name(const gcap_kernel *k);
/**
 * What gcap_kernel_get_attribute reports of a kernel; the values are CUDA's CUfunction_attribute.
 * Only MAX_DYNAMIC_SHARED_SIZE may be set (gcap_kernel_set_attribute).
 */
typedef enum gcap_kernel_attr {
  GCAP_KERNEL_ATTR_MAX_THREADS_PER_BLOCK = 0,   /* the most threads a block may have: .reqntid, .maxntid or 1024 */
  GCAP_KERNEL_ATTR_SHARED_SIZE_BYTES = 1,       /* bytes of static shared memory (__shared__ variables) */
  GCAP_KERNEL_ATTR_CONST_SIZE_BYTES = 2,        /* bytes of constant memory (its module's __constant__ variables) */
  GCAP_KERNEL_ATTR_LOCAL_SIZE_BYTES = 3,        /* bytes of local memory a thread */
  GCAP_KERNEL_ATTR_NUM_REGS = 4,                /* registers a thread (simulator: .maxnreg, else 32) */
  GCAP_KERNEL_ATTR_PTX_VERSION = 5,             /* the PTX's target: 80 for .target sm_80 (0: no PTX) */
  GCAP_KERNEL_ATTR_BINARY_VERSION = 6,          /* the code's architecture (simulator: the PTX's target) */
  GCAP_KERNEL_ATTR_MAX_DYNAMIC_SHARED_SIZE = 8, /* the most dynamic shared memory a launch may ask for: 48 KiB
                                                   less the static until set */
} gcap_kernel_attr;
/**
 * Reads attribute @p attr of @p k into @p value: on CUDA what the driver reports
 * (cuFuncGetAttribute), on the simulator what the kernel's PTX says (a kernel defined by a CPU
 * function only: no shared, constant or local memory, versions 0). INVALID_HANDLE for a bad
 * kernel; INVALID_VALUE for a NULL @p value or an attribute not listed.
 */
GCAP_API gcap_status gcap_kernel_get_attribute(gcap_kernel *k, gcap_kernel_attr attr, int *value);
/**
 * Sets attribute @p attr of @p k to @p value (cuFuncSetAttribute). Only
 * GCAP_KERNEL_ATTR_MAX_DYNAMIC_SHARED_SIZE may be set: a kernel opts into more than 48 KiB of
 * dynamic shared memory, up to the device's limit for a block less the kernel's static shared
 * memory (the simulator models an H100: 232448 bytes, 227 KiB, a block). Launches, kernel nodes
 * (added, set, updated, captured) and executable updates then check their dynamic shared bytes
 * against it. INVALID_HANDLE for a bad kernel; INVALID_VALUE for another attribute, a negative
 * value or one past the limit, and nothing changes.
 */
GCAP_API gcap_status gcap_kernel_set_attribute(gcap_kernel *k, gcap_kernel_attr attr, int value);

/**
 * Launches @p k on @p s. @p args as cuLaunchKernel: one pointer per parameter (NULL if
 * none); the values are copied now. Zero dimensions, a block over 1024 threads or too
 * much shared memory: INVALID_VALUE.
 */
GCAP_API gcap_status gcap_launch_kernel(gcap_stream *s, gcap_kernel *k, gcap_dim3 grid, gcap_dim3 block,
                                        uint32_t shared_mem_bytes, void **args);
/**
 * Launches @p k on @p s as a cooperative launch (cuLaunchCooperativeKernel): every block of the
 * grid is resident at once, so the blocks may wait for each other (a grid-wide barrier,
 * cooperative_groups::this_grid().sync()). Arguments and checks as gcap_launch_kernel; a grid
 * with more blocks than the device holds at once is COOPERATIVE_LAUNCH_TOO_LARGE, and nothing
 * runs. A capture records a kernel node with GCAP_KERNEL_NODE_ATTR_COOPERATIVE set.
 */
GCAP_API gcap_status gcap_launch_cooperative_kernel(gcap_stream *s, gcap_kernel *k, gcap_dim3 grid, gcap_dim3 block,
                                                    uint32_t shared_mem_bytes, void **args);
typedef void (*gcap_host_fn)(void *user_data);
/**
 * Runs @p fn(@p user_data) on a host thread in stream order. As in CUDA, @p fn (and a host
 * node's function) must not use the device: gcap calls made from it that block, allocate, free
 * or issue work return ILLEGAL_STATE and do nothing; graph building is allowed; gcap_exec_destroy
 * drops the handle and frees the executable later. A refused call leaves no message behind.
 */
GCAP_API gcap_status gcap_launch_host_func(gcap_stream *s, gcap_host_fn fn, void *user_data);

/* ------------------------------------------------------ capture, stream level */

typedef enum gcap_capture_mode {
  GCAP_CAPTURE_MODE_GLOBAL = 0,
  GCAP_CAPTURE_MODE_THREAD_LOCAL = 1,
  GCAP_CAPTURE_MODE_RELAXED = 2
} gcap_capture_mode;
typedef enum gcap_capture_status {
  GCAP_CAPTURE_STATUS_NONE = 0,
  GCAP_CAPTURE_STATUS_ACTIVE = 1,
  GCAP_CAPTURE_STATUS_INVALIDATED = 2
} gcap_capture_status;
typedef struct gcap_capture_info {
  gcap_capture_status status;
  uint64_t id;                          /* unique per capture sequence, never 0 while capturing */
  gcap_graph *graph;                    /* the graph being built (borrowed) */
  const gcap_node *const *dependencies; /* the stream's current frontier (borrowed) */
  size_t num_dependencies;
} gcap_capture_info;

/** Makes @p s the origin of a new capture sequence in @p mode. */
GCAP_API gcap_status gcap_stream_begin_capture(gcap_stream *s, gcap_capture_mode mode);
/** Ends the capture begun on @p s and hands its graph to the caller. */
GCAP_API gcap_status gcap_stream_end_capture(gcap_stream *s, gcap_graph **graph);
/** Capture state of @p s; SUCCESS with status NONE when not capturing. */
GCAP_API gcap_status gcap_stream_get_capture_info(gcap_stream *s, gcap_capture_info *info);
/** NONE, ACTIVE or INVALIDATED. */
GCAP_API gcap_status gcap_stream_is_capturing(gcap_stream *s, gcap_capture_status *status);
/**
 * Like gcap_stream_begin_capture, but the work is recorded into @p graph, an existing top-level
 * graph of the stream's context, after the nodes @p deps (cudaStreamBeginCaptureToGraph; CUDA's
 * per-edge data has no equivalent). gcap_stream_end_capture then returns @p graph itself and
 * may be passed NULL for it. @p graph cannot be destroyed or instantiated until the capture
 * ends; if the capture fails, the nodes it recorded stay in @p graph.
 */
GCAP_API gcap_status gcap_stream_begin_capture_to_graph(gcap_stream *s, gcap_graph *graph, gcap_node *const *deps,
                                                        size_t num_deps, gcap_capture_mode mode);
typedef enum gcap_capture_dependencies_flags {
  GCAP_STREAM_ADD_CAPTURE_DEPENDENCIES = 0, /* the stream's dependencies gain the nodes */
  GCAP_STREAM_SET_CAPTURE_DEPENDENCIES = 1  /* the stream's dependencies become the nodes */
} gcap_capture_dependencies_flags;
/**
 * Changes what the next work captured on @p s depends on (cudaStreamUpdateCaptureDependencies):
 * nodes of the capture's graph, @p flags ADD or SET. A count of 0 changes nothing. A node a SET
 * drops no longer counts as unjoined work at the end of the capture.
 */
GCAP_API gcap_status gcap_stream_update_capture_dependencies(gcap_stream *s, gcap_node *const *deps, size_t num_deps,
                                                             unsigned flags);
/** Swaps this thread's capture mode with *@p mode (as cuThreadExchangeStreamCaptureMode). */
GCAP_API gcap_status gcap_thread_exchange_capture_mode(gcap_capture_mode *mode);

/* --------------------------------------------------------- capture object */

typedef struct gcap_capture_options {
  gcap_capture_mode mode; /* default GCAP_CAPTURE_MODE_GLOBAL */
  gcap_pool *pool;        /* NULL: none; else allocations in this capture come from it */
} gcap_capture_options;
/** GLOBAL mode, no pool. */
GCAP_API void gcap_capture_options_init(gcap_capture_options *o);
/** Begins a capture on @p s owned by a capture object (NULL options: defaults). */
GCAP_API gcap_status gcap_capture_begin(gcap_stream *s, const gcap_capture_options *o, gcap_capture **out);
/** Records a launch of the kernel named @p function_name (gcap_context_find_kernel). */
GCAP_API gcap_status gcap_capture_record_kernel(gcap_capture *c, const char *function_name, gcap_dim3 grid,
                                                gcap_dim3 block, uint32_t shared_mem_bytes, void **args);
/** Records a copy on the capture's stream. */
GCAP_API gcap_status gcap_capture_record_memcpy(gcap_capture *c, void *dst, const void *src, size_t bytes,
                                                gcap_memcpy_kind kind);
/** Records a byte fill on the capture's stream. */
GCAP_API gcap_status gcap_capture_record_memset(gcap_capture *c, void *dst, uint8_t value, size_t bytes);
/** Nodes recorded so far, from every joined stream. */
GCAP_API size_t gcap_capture_recorded_count(const gcap_capture *c);
/** True while the capture has not been ended. */
GCAP_API bool gcap_capture_is_active(const gcap_capture *c);
/** NONE after end, else ACTIVE or INVALIDATED. */
GCAP_API gcap_status gcap_capture_get_status(const gcap_capture *c, gcap_capture_status *status);
/** Ends the capture; a second call: STREAM_CAPTURE_UNMATCHED. */
GCAP_API gcap_status gcap_capture_end(gcap_capture *c, gcap_graph **graph);
/** End + instantiate; the graph is released. */
GCAP_API gcap_status gcap_capture_finish(gcap_capture *c, unsigned instantiate_flags, gcap_exec **exec);
/** If still active: end best-effort and discard the graph; the stream is usable again. NULL: no-op. */
GCAP_API void gcap_capture_destroy(gcap_capture *c);
/** gcap_capture_destroy(*c) and *c = NULL; for GCAP_SCOPED_CAPTURE. */
GCAP_API void gcap_capture_cleanup(gcap_capture **c);
#if defined(__GNUC__) || defined(__clang__)
#define GCAP_SCOPED_CAPTURE __attribute__((cleanup(gcap_capture_cleanup)))
#endif

/* ------------------------------------------------------- graphs and nodes */

/* values equal CUgraphNodeType */
typedef enum gcap_node_type {
  GCAP_NODE_KERNEL = 0,
  GCAP_NODE_MEMCPY = 1,
  GCAP_NODE_MEMSET = 2,
  GCAP_NODE_HOST = 3,
  GCAP_NODE_GRAPH = 4,
  GCAP_NODE_EMPTY = 5,
  GCAP_NODE_EVENT_WAIT = 6,
  GCAP_NODE_EVENT_RECORD = 7,
  GCAP_NODE_MEM_ALLOC = 10,
  GCAP_NODE_MEM_FREE = 11,
  GCAP_NODE_CONDITIONAL = 13,
} gcap_node_type;

typedef struct gcap_kernel_node_params {
  gcap_kernel *kernel;
  gcap_dim3 grid, block;
  uint32_t shared_mem_bytes;
  void **args;
} gcap_kernel_node_params;
typedef struct gcap_memcpy_node_params {
  void *dst;
  const void *src;
  size_t bytes;
  gcap_memcpy_kind kind;
} gcap_memcpy_node_params;
typedef struct gcap_memset_node_params {
  void *dst;
  uint32_t value;
  unsigned element_size; /* 1, 2 or 4 */
  size_t width;          /* elements */
  size_t height;         /* rows, >= 1 */
  size_t pitch;          /* bytes, when height > 1 */
} gcap_memset_node_params;
typedef struct gcap_host_node_params {
  gcap_host_fn fn;
  void *user_data;
} gcap_host_node_params;

/** Creates an empty graph. */
GCAP_API gcap_status gcap_graph_create(gcap_context *ctx, gcap_graph **out);
/** Destroys @p g and its nodes; executables made from it are unaffected. NULL: no-op. */
GCAP_API void gcap_graph_destroy(gcap_graph *g);
/** Deep copy of nodes, parameters, edges and child graphs, keeping every order. */
GCAP_API gcap_status gcap_graph_clone(const gcap_graph *g, gcap_graph **out);
/** Live nodes of @p g (child graphs count as one); 0 for an invalid handle. */
GCAP_API size_t gcap_graph_node_count(const gcap_graph *g);
/** Edges of @p g; 0 for an invalid handle. */
GCAP_API size_t gcap_graph_edge_count(const gcap_graph *g);
/**
 * Enumeration, in creation order: @p nodes NULL returns the count in *@p count; otherwise fills
 * min(*count, actual) entries; a larger array is padded with NULL and *count set to actual, a
 * smaller one keeps *count (rules.md#graph-enumerate).
 */
GCAP_API gcap_status gcap_graph_get_nodes(const gcap_graph *g, gcap_node **nodes, size_t *count);
/** Nodes without dependencies, as gcap_graph_get_nodes. */
GCAP_API gcap_status gcap_graph_get_root_nodes(const gcap_graph *g, gcap_node **nodes, size_t *count);
/**
 * Edges in creation order: both arrays NULL counts; exactly one NULL is INVALID_VALUE; otherwise
 * filled and padded as gcap_graph_get_nodes (rules.md#graph-edges).
 */
GCAP_API gcap_status gcap_graph_get_edges(const gcap_graph *g, gcap_node **from, gcap_node **to, size_t *count);
/** Adds a kernel node; argument values are copied. */
GCAP_API gcap_status gcap_graph_add_kernel_node(gcap_graph *g, gcap_node *const *deps, size_t num_deps,
                                                const gcap_kernel_node_params *p, gcap_node **out);
/** Adds a 1-D copy node. */
GCAP_API gcap_status gcap_graph_add_memcpy_node(gcap_graph *g, gcap_node *const *deps, size_t num_deps,
                                                const gcap_memcpy_node_params *p, gcap_node **out);
/**
 * Adds a copy node with 3-D parameters (cudaGraphAddMemcpyNode): extent.height rows of
 * extent.width bytes in each of extent.depth slices. Each side's pitch must hold its x position
 * plus the width when there is more than one row, and its ysize its y position plus the height
 * when there is more than one slice; every row of a device side must lie in one allocation.
 */
GCAP_API gcap_status gcap_graph_add_memcpy_3d_node(gcap_graph *g, gcap_node *const *deps, size_t num_deps,
                                                   const gcap_memcpy_3d_params *p, gcap_node **out);
/** Adds a fill node (1-D, or 2-D with height > 1 and pitch). */
GCAP_API gcap_status gcap_graph_add_memset_node(gcap_graph *g, gcap_node *const *deps, size_t num_deps,
                                                const gcap_memset_node_params *p, gcap_node **out);
/** Adds a host callback node; what its function may call is as for gcap_launch_host_func. */
GCAP_API gcap_status gcap_graph_add_host_node(gcap_graph *g, gcap_node *const *deps, size_t num_deps,
                                              const gcap_host_node_params *p, gcap_node **out);
/** Adds a node that does nothing but order. */
GCAP_API gcap_status gcap_graph_add_empty_node(gcap_graph *g, gcap_node *const *deps, size_t num_deps, gcap_node **out);
/** Adds a node running a clone of @p child; later edits of @p child are not seen. */
GCAP_API gcap_status gcap_graph_add_child_graph_node(gcap_graph *g, gcap_node *const *deps, size_t num_deps,
                                                     const gcap_graph *child, gcap_node **out);
/** Adds a node that records @p e when it runs. */
GCAP_API gcap_status gcap_graph_add_event_record_node(gcap_graph *g, gcap_node *const *deps, size_t num_deps,
                                                      gcap_event *e, gcap_node **out);
/** Adds a node that waits for the work last recorded in @p e. */
GCAP_API gcap_status gcap_graph_add_event_wait_node(gcap_graph *g, gcap_node *const *deps, size_t num_deps,
                                                    gcap_event *e, gcap_node **out);
/* A graph allocation made by hand (cudaGraphAddMemAllocNode). */
typedef struct gcap_mem_alloc_node_params {
  size_t bytes;    /* > 0 */
  gcap_pool *pool; /* NULL, or the pool whose memory it takes (as a capture with this pool would) */
  void *dptr;      /* out: the address, fixed from the node's creation on */
} gcap_mem_alloc_node_params;
/**
 * Adds a MEM_ALLOC node: memory is reserved now and @p p->dptr set to its address, which every
 * launch of every executable made from @p g allocates. As for captured allocation nodes, @p g
 * then refuses clone, use as a child graph, and node or edge removal; a child graph's graph
 * refuses the node (NOT_SUPPORTED).
 */
GCAP_API gcap_status gcap_graph_add_mem_alloc_node(gcap_graph *g, gcap_node *const *deps, size_t num_deps,
                                                   gcap_mem_alloc_node_params *p, gcap_node **out);
/** Adds a MEM_FREE node for @p dptr, an address an allocation node (of any graph) returned and no free node names. */
GCAP_API gcap_status gcap_graph_add_mem_free_node(gcap_graph *g, gcap_node *const *deps, size_t num_deps, void *dptr,
                                                  gcap_node **out);
/** Adds edges from[i] -> to[i]; a cycle, duplicate or self edge is INVALID_VALUE and adds nothing. */
GCAP_API gcap_status gcap_graph_add_dependencies(gcap_graph *g, gcap_node *const *from, gcap_node *const *to, size_t n);
/** Removes edges from[i] -> to[i]; an edge that does not exist is INVALID_VALUE and removes nothing. */
GCAP_API gcap_status gcap_graph_remove_dependencies(gcap_graph *g, gcap_node *const *from, gcap_node *const *to,
                                                    size_t n);
/** Removes @p n and its edges from its graph. NULL: INVALID_HANDLE. */
GCAP_API gcap_status gcap_graph_destroy_node(gcap_node *n);

/** Type of @p n; (gcap_node_type)-1 for an invalid handle. */
GCAP_API gcap_node_type gcap_node_get_type(const gcap_node *n);
/** Dependencies of @p n in edge creation order, enumerated as gcap_graph_get_nodes. */
GCAP_API gcap_status gcap_node_get_dependencies(const gcap_node *n, gcap_node **deps, size_t *count);
/** Dependents of @p n in edge creation order, enumerated as gcap_graph_get_nodes. */
GCAP_API gcap_status gcap_node_get_dependents(const gcap_node *n, gcap_node **deps, size_t *count);
/** Kernel parameters; p->args is borrowed from the node. INVALID_VALUE for another node type. */
GCAP_API gcap_status gcap_node_get_kernel_params(const gcap_node *n, gcap_kernel_node_params *p);
/** A copy node's 1-D parameters; a 3-D copy gives its first row (INVALID_VALUE unless it is one row). */
GCAP_API gcap_status gcap_node_get_memcpy_params(const gcap_node *n, gcap_memcpy_node_params *p);
/** A copy node's 3-D parameters; a 1-D copy reads as one row of its bytes, pitches 0. */
GCAP_API gcap_status gcap_node_get_memcpy_3d_params(const gcap_node *n, gcap_memcpy_3d_params *p);
GCAP_API gcap_status gcap_node_get_memset_params(const gcap_node *n, gcap_memset_node_params *p);
GCAP_API gcap_status gcap_node_get_host_params(const gcap_node *n, gcap_host_node_params *p);
/** Replace a node's parameters, checked as at creation; nothing changes on failure. */
GCAP_API gcap_status gcap_node_set_kernel_params(gcap_node *n, const gcap_kernel_node_params *p);
GCAP_API gcap_status gcap_node_set_memcpy_params(gcap_node *n, const gcap_memcpy_node_params *p);
GCAP_API gcap_status gcap_node_set_memcpy_3d_params(gcap_node *n, const gcap_memcpy_3d_params *p);
GCAP_API gcap_status gcap_node_set_memset_params(gcap_node *n, const gcap_memset_node_params *p);
GCAP_API gcap_status gcap_node_set_host_params(gcap_node *n, const gcap_host_node_params *p);
/* Kernel node attributes (cudaGraphKernelNodeSetAttribute); values equal CUlaunchAttributeID. */
typedef enum gcap_kernel_node_attr {
  GCAP_KERNEL_NODE_ATTR_COOPERATIVE = 2, /* value.cooperative: 1 runs the node as a cooperative launch; 0 unless set */
  GCAP_KERNEL_NODE_ATTR_PRIORITY = 8     /* value.priority: lower is more urgent, as stream priorities; 0 unless set */
} gcap_kernel_node_attr;
typedef union gcap_kernel_node_attr_value {
  int priority;
  int cooperative; /* 0 or 1 */
} gcap_kernel_node_attr_value;
/**
 * Sets an attribute of kernel node @p n. A priority takes effect in executables instantiated
 * with GCAP_INSTANTIATE_USE_NODE_PRIORITY: among nodes ready at once, the more urgent starts
 * first (on the simulator's plan order; on CUDA, the driver's scheduling). Kernel parameters set
 * later keep it.
 */
GCAP_API gcap_status gcap_graph_kernel_node_set_attribute(gcap_node *n, gcap_kernel_node_attr attr,
                                                          const gcap_kernel_node_attr_value *value);
GCAP_API gcap_status gcap_graph_kernel_node_get_attribute(const gcap_node *n, gcap_kernel_node_attr attr,
                                                          gcap_kernel_node_attr_value *value);
/* ------------------------------------------------------- conditional nodes */

/* A conditional handle (cudaGraphConditionalHandle): kernels of a launch set its value. */
typedef uint64_t gcap_conditional_handle;
#define GCAP_GRAPH_COND_ASSIGN_DEFAULT 1u /* every launch starts with the default value */
typedef enum gcap_conditional_type {      /* values equal cudaGraphConditionalNodeType */
                                     GCAP_CONDITIONAL_IF =
                                         0, /* size 1: body 0 runs when the value is not 0; size 2: else body 1 */
                                     GCAP_CONDITIONAL_WHILE =
                                         1, /* size 1: body 0 runs while the value is not 0, tested before each pass */
                                     GCAP_CONDITIONAL_SWITCH =
                                         2, /* size >= 1: body v runs when the value v is below size */
} gcap_conditional_type;
typedef struct gcap_conditional_node_params {
  gcap_conditional_handle handle; /* of the graph the node is added to, or of a graph it is in */
  gcap_conditional_type type;
  unsigned size;         /* bodies */
  gcap_graph **body_out; /* `size` entries the call fills: the body graphs, owned by the node */
} gcap_conditional_node_params;
/**
 * A handle for conditional nodes in @p g or in the bodies of its conditional nodes
 * (cudaGraphConditionalHandleCreate). Its value starts as @p default_value, and with
 * GCAP_GRAPH_COND_ASSIGN_DEFAULT each launch starts with it; otherwise a launch starts with the
 * last value set. A graph holding handles has one executable at a time and refuses clone and
 * use as a child graph (NOT_SUPPORTED). Set it from a kernel: gcap_sim_set_conditional on the
 * simulator, cudaGraphSetConditional on a GPU.
 */
GCAP_API gcap_status gcap_graph_conditional_handle_create(gcap_graph *g, unsigned default_value, unsigned flags,
                                                          gcap_conditional_handle *out);
/**
 * Adds a conditional node (cudaGraphAddNode with cudaConditionalNodeParams) and writes its
 * @p p->size empty body graphs to @p p->body_out: fill them with nodes or by capture
 * (gcap_stream_begin_capture_to_graph). Bodies hold kernel, empty, child-graph, memset, memcpy
 * and conditional nodes only; instantiation refuses others (INVALID_VALUE).
 */
GCAP_API gcap_status gcap_graph_add_conditional_node(gcap_graph *g, gcap_node *const *deps, size_t num_deps,
                                                     gcap_conditional_node_params *p, gcap_node **out);
/** A conditional node's handle, type and size; its bodies too when @p p->body_out is not NULL. */
GCAP_API gcap_status gcap_node_get_conditional_params(const gcap_node *n, gcap_conditional_node_params *p);

/** The bytes, pool and address of a MEM_ALLOC node (cudaGraphMemAllocNodeGetParams). */
GCAP_API gcap_status gcap_node_get_mem_alloc_params(const gcap_node *n, gcap_mem_alloc_node_params *p);
/** The address a MEM_FREE node frees (cudaGraphMemFreeNodeGetParams). */
GCAP_API gcap_status gcap_node_get_mem_free_params(const gcap_node *n, void **dptr);
/** The graph embedded in a child-graph node (borrowed; edits change the node). */
GCAP_API gcap_status gcap_node_get_child_graph(const gcap_node *n, gcap_graph **child);
/** The event of an event record or wait node. */
GCAP_API gcap_status gcap_node_get_event(const gcap_node *n, gcap_event **e);
/**
 * The node of @p clone that gcap_graph_clone made from @p original (cudaGraphNodeFindInClone):
 * INVALID_VALUE when @p clone was not cloned from @p original's graph, @p original was added after,
 * its copy was destroyed, or nodes of the original graph were destroyed since the cloning.
 */
GCAP_API gcap_status gcap_graph_node_find_in_clone(const gcap_graph *clone, const gcap_node *original, gcap_node **out);
/* The generic node calls (cudaGraphAddNode, cudaGraphNodeSetParams, cudaGraphExecNodeSetParams): `type`
 * says which member of `u` holds the parameters (none for EMPTY). */
typedef struct gcap_node_params {
  gcap_node_type type;
  union {
    gcap_kernel_node_params kernel;
    gcap_memcpy_node_params copy;
    gcap_memset_node_params fill;
    gcap_host_node_params host;
    const gcap_graph *child_graph;            /* GRAPH: cloned into the node */
    gcap_event *event;                        /* EVENT_RECORD, EVENT_WAIT */
    gcap_mem_alloc_node_params mem_alloc;     /* MEM_ALLOC: its dptr is written back */
    void *mem_free;                           /* MEM_FREE: the address it frees */
    gcap_conditional_node_params conditional; /* CONDITIONAL: its bodies are written back */
  } u;
} gcap_node_params;
/** The add_*_node call of @p p's type; what that call writes back (an allocation's address) lands in @p p. */
GCAP_API gcap_status gcap_graph_add_node(gcap_graph *g, gcap_node *const *deps, size_t num_deps, gcap_node_params *p,
                                         gcap_node **out);
/** The node setter of @p n's type, which @p p must have; child-graph and empty nodes: NOT_SUPPORTED. */
GCAP_API gcap_status gcap_node_set_params(gcap_node *n, const gcap_node_params *p);
/** The executable's setter of @p n's type, which @p p must have. */
GCAP_API gcap_status gcap_exec_node_set_params(gcap_exec *x, gcap_node *n, const gcap_node_params *p);
/** Makes event record or wait node @p n use @p e (cudaGraphEventRecordNodeSetEvent, ...WaitNodeSetEvent). */
GCAP_API gcap_status gcap_node_set_event(gcap_node *n, gcap_event *e);

typedef struct gcap_race {   /* two nodes with no path between them touching overlapping bytes, one writing */
  gcap_node *first, *second; /* in creation order */
  const void *addr;          /* the overlap */
  size_t bytes;
} gcap_race;
/** Race analysis; @p races is filled as gcap_graph_get_nodes fills its array. */
GCAP_API gcap_status gcap_graph_find_races(const gcap_graph *g, gcap_race *races, size_t *count);

/** Versioned JSON: nodes, params, edges; kernels by name. */
GCAP_API gcap_status gcap_graph_save(const gcap_graph *g, FILE *out);
/** Loads a saved graph; kernels resolved by name among loaded modules (NOT_FOUND otherwise). */
GCAP_API gcap_status gcap_graph_load(gcap_context *ctx, FILE *in, gcap_graph **out);

#define GCAP_DOT_VERBOSE 1u /* node parameters in labels */
/** Writes @p g as one Graphviz digraph; unknown flag bits or a write error: INVALID_VALUE. */
GCAP_API gcap_status gcap_graph_write_dot(const gcap_graph *g, FILE *out, unsigned flags);

/* Flags of gcap_graph_debug_dot_print, CUDA's cudaGraphDebugDotFlags bit for bit. */
#define GCAP_GRAPH_DEBUG_DOT_FLAGS_VERBOSE (1u << 0)       /* everything below */
#define GCAP_GRAPH_DEBUG_DOT_FLAGS_RUNTIME_TYPES (1u << 1) /* cudaGraphNodeType names instead of CUgraphNodeType */
#define GCAP_GRAPH_DEBUG_DOT_FLAGS_KERNEL_NODE_PARAMS (1u << 2)
#define GCAP_GRAPH_DEBUG_DOT_FLAGS_MEMCPY_NODE_PARAMS (1u << 3)
#define GCAP_GRAPH_DEBUG_DOT_FLAGS_MEMSET_NODE_PARAMS (1u << 4)
#define GCAP_GRAPH_DEBUG_DOT_FLAGS_HOST_NODE_PARAMS (1u << 5)
#define GCAP_GRAPH_DEBUG_DOT_FLAGS_EVENT_NODE_PARAMS (1u << 6)
#define GCAP_GRAPH_DEBUG_DOT_FLAGS_EXT_SEMAS_SIGNAL_NODE_PARAMS (1u << 7) /* accepted; gcap has no such nodes */
#define GCAP_GRAPH_DEBUG_DOT_FLAGS_EXT_SEMAS_WAIT_NODE_PARAMS (1u << 8)   /* accepted; gcap has no such nodes */
#define GCAP_GRAPH_DEBUG_DOT_FLAGS_KERNEL_NODE_ATTRIBUTES (1u << 9)
#define GCAP_GRAPH_DEBUG_DOT_FLAGS_HANDLES (1u << 10) /* node and kernel handles */
#define GCAP_GRAPH_DEBUG_DOT_FLAGS_MEM_ALLOC_NODE_PARAMS (1u << 11)
#define GCAP_GRAPH_DEBUG_DOT_FLAGS_MEM_FREE_NODE_PARAMS (1u << 12)
#define GCAP_GRAPH_DEBUG_DOT_FLAGS_BATCH_MEM_OP_NODE_PARAMS (1u << 13) /* accepted; gcap has no such nodes */
#define GCAP_GRAPH_DEBUG_DOT_FLAGS_EXTRA_TOPO_INFO (1u << 14)          /* edges numbered */
#define GCAP_GRAPH_DEBUG_DOT_FLAGS_CONDITIONAL_NODE_PARAMS (1u << 15)
/**
 * Writes @p g to the file @p path as cudaGraphDebugDotPrint does: one cluster per graph (child
 * graphs nested), each node labelled with its index and type, and its parameters as @p flags
 * ask. Unknown bits: INVALID_VALUE; a file that cannot be written: INVALID_VALUE naming it.
 */
GCAP_API gcap_status gcap_graph_debug_dot_print(const gcap_graph *g, const char *path, unsigned flags);

/* ----------------------------------------------------------- user objects */

/*
 * A resource whose destructor runs once the last reference to it is gone: the caller's, and
 * those graphs, their clones and child graphs, and executables hold (cudaUserObjectCreate).
 * The destructor runs on the thread whose gcap call dropped the last reference, after that call
 * has released its locks, so it may call gcap.
 */
#define GCAP_USER_OBJECT_NO_DESTRUCTOR_SYNC 1u /* required, as by CUDA: nothing waits for the destructor */
#define GCAP_GRAPH_USER_OBJECT_MOVE 1u         /* the graph takes over references the caller holds */
/** A user object holding @p initial_refcount references of the caller's. */
GCAP_API gcap_status gcap_user_object_create(gcap_context *ctx, void *ptr, gcap_host_fn destroy,
                                             unsigned initial_refcount, unsigned flags, gcap_user_object **out);
/** The caller takes @p count more references. */
GCAP_API gcap_status gcap_user_object_retain(gcap_user_object *obj, unsigned count);
/** The caller gives up @p count of its references (INVALID_VALUE for more than it holds). */
GCAP_API gcap_status gcap_user_object_release(gcap_user_object *obj, unsigned count);
/** @p g takes @p count references: new ones, or the caller's with GCAP_GRAPH_USER_OBJECT_MOVE. */
GCAP_API gcap_status gcap_graph_retain_user_object(gcap_graph *g, gcap_user_object *obj, unsigned count,
                                                   unsigned flags);
/** @p g gives up @p count of the references it holds. */
GCAP_API gcap_status gcap_graph_release_user_object(gcap_graph *g, gcap_user_object *obj, unsigned count);

/* ------------------------------------------------------- executable graphs */

#define GCAP_INSTANTIATE_AUTO_FREE_ON_LAUNCH 1u /* other bits: INVALID_VALUE */
#define GCAP_INSTANTIATE_UPLOAD 2u        /* gcap_graph_instantiate_with_params only: upload to params->upload_stream */
#define GCAP_INSTANTIATE_DEVICE_LAUNCH 4u /* NOT_SUPPORTED */
#define GCAP_INSTANTIATE_USE_NODE_PRIORITY 8u /* kernel nodes' priority attributes order ready work */
typedef enum gcap_instantiate_result {
  GCAP_INSTANTIATE_SUCCESS = 0,
  GCAP_INSTANTIATE_ERROR = 1,             /* a node's parameters failed: see error_node_out */
  GCAP_INSTANTIATE_INVALID_STRUCTURE = 2, /* not returned by gcap: its graphs cannot hold a cycle */
  GCAP_INSTANTIATE_NODE_OPERATION_NOT_SUPPORTED = 3,
  GCAP_INSTANTIATE_MULTIPLE_DEVICES_NOT_SUPPORTED = 4 /* not returned: a context has one device */
} gcap_instantiate_result;
typedef struct gcap_instantiate_params {
  unsigned flags;                     /* GCAP_INSTANTIATE_* */
  gcap_stream *upload_stream;         /* with GCAP_INSTANTIATE_UPLOAD */
  gcap_node *error_node_out;          /* after a failure: the node that caused it, or NULL */
  gcap_instantiate_result result_out; /* set by every call that got past its handle checks */
} gcap_instantiate_params;
/**
 * gcap_graph_instantiate with CUDA's cudaGraphInstantiateWithParams: flags, an upload stream, and
 * the result and the failing node written back into @p params.
 */
GCAP_API gcap_status gcap_graph_instantiate_with_params(gcap_graph *g, gcap_instantiate_params *params,
                                                        gcap_exec **out);
/** Validates @p g and snapshots it; the exec is independent of @p g afterwards. */
GCAP_API gcap_status gcap_graph_instantiate(gcap_graph *g, unsigned flags, gcap_exec **out);
/** Prepares @p x for launch on @p s (stream-ordered; runs nothing). */
GCAP_API gcap_status gcap_exec_upload(gcap_exec *x, gcap_stream *s);
/** Replays @p x on @p s; launches of one exec never overlap. */
GCAP_API gcap_status gcap_exec_launch(gcap_exec *x, gcap_stream *s);
/** Destroys @p x after its launches (waiting for them without holding any gcap lock); NULL: no-op. */
GCAP_API void gcap_exec_destroy(gcap_exec *x);
/** Nodes a launch of @p x runs: every node, child graphs counted with their contents; 0 if invalid. */
GCAP_API size_t gcap_exec_node_count(const gcap_exec *x);

/* values equal CUgraphExecUpdateResult */
typedef enum gcap_exec_update_result {
  GCAP_EXEC_UPDATE_SUCCESS = 0,
  GCAP_EXEC_UPDATE_ERROR = 1,
  GCAP_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED = 2,
  GCAP_EXEC_UPDATE_ERROR_NODE_TYPE_CHANGED = 3,
  GCAP_EXEC_UPDATE_ERROR_FUNCTION_CHANGED = 4,
  GCAP_EXEC_UPDATE_ERROR_PARAMETERS_CHANGED = 5,
  GCAP_EXEC_UPDATE_ERROR_NOT_SUPPORTED = 6,
  GCAP_EXEC_UPDATE_ERROR_UNSUPPORTED_FUNCTION_CHANGE = 7, /* not returned by gcap */
  GCAP_EXEC_UPDATE_ERROR_ATTRIBUTES_CHANGED = 8,          /* a kernel's priority, under USE_NODE_PRIORITY */
} gcap_exec_update_result;
typedef struct gcap_exec_update_info {
  gcap_exec_update_result result;
  gcap_node *error_node;
  gcap_node *error_from_node;
} gcap_exec_update_info;
/**
 * Updates @p x in place from @p g, pairing nodes in creation order; the topology must match
 * exactly. A mismatch is GCAP_ERROR_GRAPH_EXEC_UPDATE_FAILURE with @p x unchanged and the reason
 * in *@p info. Only future launches see the change (rules.md#update-pairing through
 * rules.md#update-scope).
 */
GCAP_API gcap_status gcap_exec_update(gcap_exec *x, const gcap_graph *g, gcap_exec_update_info *info);
/** Per-node setters; @p n names the node of the graph @p x was instantiated from. */
GCAP_API gcap_status gcap_exec_kernel_node_set_params(gcap_exec *x, gcap_node *n, const gcap_kernel_node_params *p);
GCAP_API gcap_status gcap_exec_memcpy_node_set_params(gcap_exec *x, gcap_node *n, const gcap_memcpy_node_params *p);
GCAP_API gcap_status gcap_exec_memcpy_3d_node_set_params(gcap_exec *x, gcap_node *n, const gcap_memcpy_3d_params *p);
GCAP_API gcap_status gcap_exec_memset_node_set_params(gcap_exec *x, gcap_node *n, const gcap_memset_node_params *p);
GCAP_API gcap_status gcap_exec_host_node_set_params(gcap_exec *x, gcap_node *n, const gcap_host_node_params *p);
/** The event of an event record (wait) node in @p x (cudaGraphExecEventRecordNodeSetEvent, ...WaitNodeSetEvent). */
GCAP_API gcap_status gcap_exec_event_record_node_set_event(gcap_exec *x, gcap_node *n, gcap_event *e);
GCAP_API gcap_status gcap_exec_event_wait_node_set_event(gcap_exec *x, gcap_node *n, gcap_event *e);
/**
 * Gives child-graph node @p n of @p x the parameters of the nodes of @p child
 * (cudaGraphExecChildGraphNodeSetParams): @p child must have the node's graph's topology and
 * node creation order, and each node may change only what whole-graph update allows, else
 * INVALID_VALUE with @p x unchanged; a NULL or destroyed @p child is INVALID_HANDLE. @p child is read, not kept.
 */
GCAP_API gcap_status gcap_exec_child_graph_node_set_params(gcap_exec *x, gcap_node *n, const gcap_graph *child);
GCAP_API gcap_status gcap_exec_node_set_enabled(gcap_exec *x, gcap_node *n, bool enabled);
/** Whether node @p n (of the graph @p x came from) runs in @p x (cudaGraphNodeGetEnabled): kernel, memcpy and
 *  memset nodes only, as for the setter. */
GCAP_API gcap_status gcap_exec_node_get_enabled(gcap_exec *x, gcap_node *n, bool *enabled);
/** The flags @p x was instantiated with (cudaGraphExecGetFlags). */
GCAP_API gcap_status gcap_exec_get_flags(const gcap_exec *x, unsigned *flags);

/* ------------------------------------------------------------ memory pools */

typedef struct gcap_pool_stats {
  size_t reserved_bytes, used_bytes, peak_bytes;
  size_t attached_execs;
} gcap_pool_stats;
/** Creates a pool with reference count 1. */
GCAP_API gcap_status gcap_pool_create(gcap_context *ctx, gcap_pool **out);
/** Adds a reference; returns @p p (NULL for NULL). */
GCAP_API gcap_pool *gcap_pool_retain(gcap_pool *p);
/** Drops a reference; memory returns when the last holder releases. NULL: no-op. */
GCAP_API void gcap_pool_release(gcap_pool *p);
GCAP_API gcap_status gcap_pool_get_stats(const gcap_pool *p, gcap_pool_stats *out);

/* Graph memory of a context (cudaDeviceGetGraphMemAttribute, per context rather than per device). */
typedef enum gcap_graph_mem_attribute {
  GCAP_GRAPH_MEM_ATTR_USED_MEM_CURRENT = 0,     /* bytes of graph allocations allocated by launches now */
  GCAP_GRAPH_MEM_ATTR_USED_MEM_HIGH = 1,        /* the most since the context began or the mark was reset */
  GCAP_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT = 2, /* bytes reserved for graph allocations, pools' spares included */
  GCAP_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH = 3
} gcap_graph_mem_attribute;
GCAP_API gcap_status gcap_context_get_graph_mem_attribute(gcap_context *ctx, gcap_graph_mem_attribute attr,
                                                          uint64_t *value);
/** Resets a high mark (USED_MEM_HIGH or RESERVED_MEM_HIGH) to the current figure; @p value must be 0. */
GCAP_API gcap_status gcap_context_set_graph_mem_attribute(gcap_context *ctx, gcap_graph_mem_attribute attr,
                                                          uint64_t value);
/**
 * Gives back reserved graph memory no executable needs (cudaDeviceGraphMemTrim): the pools' spare
 * blocks and, where the backend can keep an address without its memory (the simulator), the
 * blocks of graphs that have no executable, when their allocation is not allocated.
 */
GCAP_API gcap_status gcap_context_graph_mem_trim(gcap_context *ctx);

#ifdef __cplusplus
}
#endif

#endif /* GCAP_GCAP_H */
