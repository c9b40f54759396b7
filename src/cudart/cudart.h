/* The runtime stand-in's one header: what its files share. src/cudart uses gcap only through
 * the public headers (include/gcap), as the Python and Rust bindings do. */
#ifndef GCAP_CUDART_CUDART_H
#define GCAP_CUDART_CUDART_H

#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime_api.h>
#include <gcap/gcap.h>

/* Says once per name on stderr "gcap-cudart: NAME is not supported by gcap" (*said records
 * that it was said) and returns cudaErrorNotSupported. The stubs of every runtime function
 * not implemented yet call it. */
int gcap__cudart_unsupported(unsigned char *said, const char *name);

/* ---- Fatbins: the device code nvcc embeds (fatbin.c) ---- */

/* The wrapper nvcc passes to __cudaRegisterFatBinary (section .nvFatBinSegment). */
#define GCAP__FATBIN_WRAPPER_MAGIC 0x466243b1u
/* A fatbin container's magic. */
#define GCAP__FATBIN_MAGIC 0xba55ed50u

enum gcap__fatbin_kind { GCAP__FATBIN_PTX = 1, GCAP__FATBIN_ELF = 2 };
enum gcap__fatbin_compression { GCAP__FATBIN_PLAIN, GCAP__FATBIN_LZ4, GCAP__FATBIN_ZSTD };

struct gcap__fatbin_entry {
  unsigned kind;      /* GCAP__FATBIN_PTX, GCAP__FATBIN_ELF, or another kind, listed as is */
  unsigned arch;      /* 75 for sm_75 (ELF) or compute_75 (PTX) */
  unsigned ptx_major; /* the PTX ISA version nvcc records */
  unsigned ptx_minor;
  uint64_t flags;
  enum gcap__fatbin_compression compression;
  const unsigned char *payload; /* inside the caller's fatbin */
  size_t stored_size;           /* bytes of payload that hold the (compressed) code */
  size_t uncompressed_size;     /* when compressed: the size of the code once decompressed */
  unsigned unit;                /* 0: the main fatbin; i + 1: relocatable fatbin i (wrapper version 2) */
};

/* The entries of one registered fatbin; points into the caller's memory, which must outlive it. */
struct gcap__fatbin {
  struct gcap__fatbin_entry *entries;
  size_t count;
  size_t capacity;
  unsigned units; /* 1 + the number of relocatable fatbins */
};

/* Appends the entries of the containers laid back to back in [data, data + size) to *fb, as
 * unit `unit`; trailing zero padding is allowed. Returns 0, or -1 with a message in err (nothing
 * appended) when the bytes are not a well-formed fatbin: nothing outside the range is read.
 * Either way *fb may hold memory: gcap__fatbin_free releases it. */
int gcap__fatbin_parse(struct gcap__fatbin *fb, const void *data, size_t size, unsigned unit, char *err,
                       size_t err_size);

/* Reads what __cudaRegisterFatBinary receives: the wrapper (magic, version 1 or 2) and the
 * container it points to (its size taken from the container's header), and with version 2 also
 * each relocatable fatbin of its NULL-terminated list. Fills *fb (zeroed first); 0 or -1 with err. */
int gcap__fatbin_from_wrapper(struct gcap__fatbin *fb, const void *wrapper, char *err, size_t err_size);

void gcap__fatbin_free(struct gcap__fatbin *fb);

/* The PTX entry that best fits compute capability cc (major * 10 + minor, 90 for 9.0): the
 * highest architecture not above cc, in unit `unit` (any unit when unit < 0). NULL with a
 * message in err when there is none (the message says what the fatbin holds). */
const struct gcap__fatbin_entry *gcap__fatbin_pick_ptx(const struct gcap__fatbin *fb, unsigned cc, int unit, char *err,
                                                       size_t err_size);

/* The text of a PTX entry, decompressed with libzstd or liblz4 loaded at run time when needed:
 * malloc'ed and NUL-terminated, its length without the NUL in *len; NULL with err when the
 * library is missing, the data do not decompress, or memory runs out. */
char *gcap__fatbin_ptx_text(const struct gcap__fatbin_entry *e, size_t *len, char *err, size_t err_size);

/* "PTX compute_80 (zstd)", "ELF sm_90", "ELF sm_80 (zstd)" and the like, into buf. */
void gcap__fatbin_describe(const struct gcap__fatbin_entry *e, char *buf, size_t size);

/* Tests: the shared library dlopen'ed for a compression (NULL restores "libzstd.so.1" /
 * "liblz4.so.1"). */
void gcap__fatbin_set_library(enum gcap__fatbin_compression c, const char *soname);

/* Links the PTX texts of an -rdc program's units (each a whole module) into one module: a
 * function or variable one unit declares .extern and another defines is resolved by name.
 * malloc'ed and NUL-terminated, its length in *len; NULL with err (link.c). */
char *gcap__cudart_link_ptx(const char *const *texts, const size_t *lens, size_t n, size_t *len, char *err,
                            size_t err_size);

/* ---- Registration (register.c) ---- */

/* One registered fatbin; __cudaRegisterFatBinary returns &handle. */
struct gcap__cudart_module {
  void *handle; /* first: the handle nvcc keeps points here */
  const void *wrapper;
  struct gcap__fatbin fatbin;
  int bad; /* the fatbin could not be read: error says why */
  char error[256];
  int ended; /* __cudaRegisterFatBinaryEnd was called */
  /* Loaded into the runtime's context on first use (load.c, under its lock): */
  gcap_module *loaded;
  unsigned long generation; /* the context's generation it was loaded into */
  cudaError_t load_error;   /* cudaSuccess, or why it cannot load in this generation */
  struct gcap__cudart_module *next;
};

enum gcap__cudart_symbol_kind { GCAP__CUDART_FUNCTION, GCAP__CUDART_VARIABLE, GCAP__CUDART_MANAGED };

/* A kernel (by its host stub) or a variable (by its host shadow) of a module. */
struct gcap__cudart_symbol {
  enum gcap__cudart_symbol_kind kind;
  struct gcap__cudart_module *module;
  const void *host; /* the host stub, the shadow variable, or (managed) the address of its pointer */
  const char *name; /* the PTX name, owned by the program */
  size_t size;      /* variables */
  int constant;     /* __constant__ */
  /* Kernels: the gcap kernel in the context of `generation` (load.c). */
  gcap_kernel *kernel;
  unsigned long generation;
  struct gcap__cudart_symbol *next;
};

/* The kernel or variable registered with this host address; NULL when there is none. */
struct gcap__cudart_symbol *gcap__cudart_symbol_of(const void *host);

/* Calls fn for every registered module (under the registry's lock: fn must not register). */
void gcap__cudart_each_module(void (*fn)(struct gcap__cudart_module *m, void *arg), void *arg);
/* Calls fn for every symbol of module m, or of every module when m is NULL (under the
 * registry's lock). */
void gcap__cudart_each_symbol(const struct gcap__cudart_module *m, void (*fn)(struct gcap__cudart_symbol *s, void *arg),
                              void *arg);

/* The simulated compute capability (major * 10 + minor) from GCAP_CUDART_CC, 90 ("9.0") when it
 * is unset; a value that is not "M.m" is said once on stderr and 9.0 used. */
unsigned gcap__cudart_cc(void);

/* ---- The runtime's state (runtime.c) ----
 * Every runtime function starts with gcap__rt_enter (or gcap__rt_stream, which enters too) and
 * ends with gcap__rt_done or gcap__rt_fail: between them they keep CUDA's error rules (the calling
 * thread's last error; a sticky error after a kernel fault, returned by every later call until
 * cudaDeviceReset). */

/* What a stream argument of 0 means: the legacy stream (the plain functions) or the calling
 * thread's per-thread stream (their _ptsz/_ptds twins, which -default-stream per-thread calls). */
enum gcap__rt_default { GCAP__RT_LEGACY, GCAP__RT_PER_THREAD };

/* The sticky error if there is one, else the process's context (created on first use from the
 * environment: GCAP_BACKEND and the simulator's GCAP_SIM_* variables). */
cudaError_t gcap__rt_enter(gcap_context **ctx);
/* gcap__rt_enter, then the gcap stream of s: 0 as `d` says, cudaStreamLegacy, cudaStreamPerThread,
 * or a stream cudaStreamCreate made. */
cudaError_t gcap__rt_stream(cudaStream_t s, enum gcap__rt_default d, gcap_stream **out);
/* The runtime's code for a gcap status (not recorded). */
cudaError_t gcap__rt_error_of(gcap_status st);
/* Ends call `fn`: success passes; a failure becomes the runtime's code, the thread's last error
 * (a kernel fault also the sticky error, said on stderr with gcap's report), and is returned. */
cudaError_t gcap__rt_done(const char *fn, gcap_status st);
/* Ends call `fn` with the runtime's code e (recorded as gcap__rt_done does) and a message for
 * GCAP_CUDART_VERBOSE=1 (printf-style; NULL: none). */
cudaError_t gcap__rt_fail(const char *fn, cudaError_t e, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* The generation of the current context: it grows with every cudaDeviceReset. */
unsigned long gcap__rt_generation(void);

/* The runtime's handles are gcap's objects. */
static inline gcap_event *gcap__rt_event(cudaEvent_t e) { return (gcap_event *)(void *)e; }
static inline gcap_graph *gcap__rt_graph(cudaGraph_t g) { return (gcap_graph *)(void *)g; }
static inline gcap_node *gcap__rt_node(cudaGraphNode_t n) { return (gcap_node *)(void *)n; }
static inline gcap_exec *gcap__rt_exec(cudaGraphExec_t x) { return (gcap_exec *)(void *)x; }

/* ---- The report at exit (report.c): GCAP_CUDART_REPORT=1, gcap-run --report ---- */

enum gcap__rt_counter { GCAP__RT_CAPTURES, GCAP__RT_INSTANTIATIONS, GCAP__RT_GRAPH_LAUNCHES, GCAP__RT_COUNTERS };
/* Whether the report is asked for; the calls below do nothing otherwise. */
int gcap__rt_reporting(void);
/* Counts a capture ended, a graph instantiated, a graph launched. */
void gcap__rt_count(enum gcap__rt_counter c);
/* Counts an error a call returned; the first sticky one's message is kept. */
void gcap__rt_report_error(cudaError_t e, int sticky, const char *message);
/* Notes a runtime function gcap does not support that the program called. */
void gcap__rt_report_unsupported(const char *name);
/* Adds the kernels' counters of ctx (before it is destroyed), then prints everything on stderr. */
void gcap__rt_report_collect(gcap_context *ctx);
void gcap__rt_report_print(void);

/* ---- Modules and kernels (load.c) ---- */

/* The gcap kernel of a host stub (what <<<>>>, cudaLaunchKernel and kernel nodes pass as func)
 * or of a handle __cudaGetKernel gave: loads its module into the context on first use.
 * cudaErrorInvalidDeviceFunction for an address that is no kernel; the module's load error
 * (cudaErrorNoKernelImageForDevice when its fatbin has no PTX, said on stderr naming the kernel). */
cudaError_t gcap__rt_kernel(const void *stub, gcap_kernel **out);
/* The host stub a gcap kernel was registered with (NULL when none), for the getters. */
const void *gcap__rt_stub_of(const gcap_kernel *k);
/* The device address and size of a __device__ / __constant__ / __managed__ variable, by its host
 * shadow; cudaErrorInvalidSymbol when the address is no registered variable. */
cudaError_t gcap__rt_symbol(const void *shadow, void **dptr, size_t *size);

/* ---- Graph node parameters (graph.c) ----
 * The runtime's node parameter structs read into gcap's. Each checks what the stand-in must
 * refuse itself and ends the call `fn` with gcap__rt_fail when it refuses (so the caller just
 * returns the error); what gcap checks (shapes, sizes, pointers) is left to gcap's call. */

/* The runtime's user objects are gcap's. */
static inline gcap_user_object *gcap__rt_user_object(cudaUserObject_t o) { return (gcap_user_object *)(void *)o; }

/* func (a host stub, via gcap__rt_kernel), grid, block, shared memory and kernelParams.
 * `extra` is refused (cudaErrorNotSupported) unless NULL; both set: cudaErrorInvalidValue. */
cudaError_t gcap__rt_kernel_params_in(const char *fn, const struct cudaKernelNodeParams *p,
                                      gcap_kernel_node_params *out);
/* The reverse, for getters: func is the host stub (gcap__rt_stub_of), extra NULL. */
void gcap__rt_kernel_params_out(const gcap_kernel_node_params *p, struct cudaKernelNodeParams *out);
/* A memcpy kind: cudaErrorInvalidMemcpyDirection for a value that is none. */
cudaError_t gcap__rt_memcpy_kind_in(const char *fn, enum cudaMemcpyKind kind, gcap_memcpy_kind *out);
/* 3-D copy parameters of linear memory; CUDA arrays are refused (cudaErrorNotSupported). */
cudaError_t gcap__rt_memcpy3d_params_in(const char *fn, const struct cudaMemcpy3DParms *p, gcap_memcpy_3d_params *out);
void gcap__rt_memcpy3d_params_out(const gcap_memcpy_3d_params *p, struct cudaMemcpy3DParms *out);
cudaError_t gcap__rt_memset_params_in(const char *fn, const struct cudaMemsetParams *p, gcap_memset_node_params *out);
void gcap__rt_memset_params_out(const gcap_memset_node_params *p, struct cudaMemsetParams *out);
cudaError_t gcap__rt_host_params_in(const char *fn, const struct cudaHostNodeParams *p, gcap_host_node_params *out);
/* Checks edge data as CUDA 13's calls take it: NULL, or `n` entries that must all be zero
 * (default edges). A to_port, reserved bytes or an unknown type are cudaErrorInvalidValue, as
 * by CUDA; programmatic edges (a type or from_port CUDA knows) cudaErrorNotSupported. */
cudaError_t gcap__rt_edges_in(const char *fn, const cudaGraphEdgeData *edges, size_t n);

/* A cudaGraphNodeParams read for gcap. A copy is in copy3d (copy_3d set: call the *_3d_* gcap
 * function, e.g. gcap_exec_memcpy_3d_node_set_params) since gcap_node_params holds only 1-D
 * copies; every other type is in p, ready for gcap_graph_add_node / gcap_node_set_params /
 * gcap_exec_node_set_params. */
struct gcap__rt_node_params {
  gcap_node_params p;
  int copy_3d;
  gcap_memcpy_3d_params copy3d;
};
/* Reserved fields must be zero (cudaErrorInvalidValue); unsupported types (external semaphores)
 * and options (child graph ownership Move) are cudaErrorNotSupported; a conditional node's
 * handle and bodies are left to gcap__rt_add_conditional. */
cudaError_t gcap__rt_node_params_in(const char *fn, const struct cudaGraphNodeParams *p,
                                    struct gcap__rt_node_params *out);
/* gcap__rt_done for the graph calls: an invalid graph, node or event handle is
 * cudaErrorInvalidValue there, as CUDA's graph calls document, not cudaErrorInvalidResourceHandle. */
cudaError_t gcap__rt_graph_done(const char *fn, gcap_status st);
/* The device address of count bytes at offset in a __device__ variable, for copies to
 * (to_symbol) or from it with `kind`: cudaErrorInvalidSymbol, cudaErrorInvalidValue for a span
 * past its end, cudaErrorInvalidMemcpyDirection for a kind that cannot reach it. */
cudaError_t gcap__rt_symbol_span(const char *fn, const void *symbol, size_t count, size_t offset, int to_symbol,
                                 enum cudaMemcpyKind kind, void **addr);
/* Adds a conditional node: its bodies are written to an array the node's graph owns (freed
 * once the graph and the executables made from it are gone), *bodies. */
cudaError_t gcap__rt_add_conditional(const char *fn, gcap_context *ctx, gcap_graph *g, gcap_node *const *deps,
                                     size_t ndeps, gcap_conditional_node_params *p, cudaGraph_t **bodies,
                                     gcap_node **out);

/* ---- The simulated device (device.c) ---- */

/* The device's global memory: cudaGetDeviceProperties's totalGlobalMem and cudaMemGetInfo's total. */
#define GCAP__RT_TOTAL_GLOBAL_MEM ((size_t)80 << 30)
/* The value of cudaDeviceAttr `attr` of the simulated device (the table cudaDeviceGetAttribute
 * answers from); -1 when attr is no attribute. */
int gcap__rt_device_attribute(int attr, int *value);

/* ---- Memory (memory.c, memcpy.c) ---- */

/* What the runtime handed out at an address: cudaMalloc/cudaMallocPitch/cudaMalloc3D/cudaMallocAsync
 * (DEVICE), cudaMallocHost/cudaHostAlloc (HOST), cudaMallocManaged (MANAGED), cudaHostRegister
 * (REGISTERED); UNKNOWN for anything else (graph allocations and variables included). */
enum gcap__rt_mem_type {
  GCAP__RT_MEM_UNKNOWN,
  GCAP__RT_MEM_DEVICE,
  GCAP__RT_MEM_HOST,
  GCAP__RT_MEM_MANAGED,
  GCAP__RT_MEM_REGISTERED
};
/* The type of the allocation or registration holding p. */
enum gcap__rt_mem_type gcap__rt_mem_type(const void *p);
/* Records a __managed__ variable's memory as managed (load.c, when its module loads). */
void gcap__rt_mem_note_managed(void *p, size_t bytes);

#endif
