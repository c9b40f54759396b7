/*
 * The private contract between the core and a backend. The core validates every argument and
 * owns all bookkeeping; a backend only does the work, through this ops table.
 */
#ifndef GCAP_CORE_BACKEND_H
#define GCAP_CORE_BACKEND_H

#include <gcap/config.h>
#include <gcap/gcap.h>
#include <gcap/sim.h>
#include <stdatomic.h>

/* What a backend embeds first in its context struct (wlroots-style base). */
struct gcap__backend_ctx {
  const struct gcap_backend_ops *ops;
  struct gcap_context *core; /* the context that owns it, set by the core once it is made */
};

/* What the core knows of an address, for the simulator's memory check of kernels. */
enum gcap__mem_state { GCAP__MEM_NONE = 0, GCAP__MEM_DEVICE, GCAP__MEM_HOST, GCAP__MEM_FREED };
struct gcap__mem_view {
  uintptr_t base;
  size_t bytes;
  enum gcap__mem_state state;
};
/*
 * The allocation of b's context that holds p (live device or page-locked host memory, or one of
 * the last frees), and else the live allocation nearest to p (state NONE when there is none).
 * Returns true when p lies in live memory. For running kernels: it reads the view that
 * gcap__work_release made current, which other threads' allocations keep current, without a lock.
 */
bool gcap__memory_view(const struct gcap__backend_ctx *b, uintptr_t p, struct gcap__mem_view *out);
/* The same for a thread that holds the context's lock outside a kernel: brings the view up to
   date first (without memory for that, p counts as in no live memory). */
bool gcap__memory_view_locked(const struct gcap__backend_ctx *b, uintptr_t p, struct gcap__mem_view *out);

/*
 * A kernel's blocks are about to run (context lock held). Makes the memory view current
 * (OUT_OF_MEMORY, message set, when it cannot) and, when `may_release` and the public call may let
 * other threads in meanwhile (a wait, a query, an eager launch) and the lock is held once, releases
 * the lock: *released says so. gcap__work_reacquire takes it back. While released, other threads may
 * allocate and issue (the backend makes whatever else they do wait, as CUDA does); nothing frees.
 */
gcap_status gcap__work_release(struct gcap__backend_ctx *b, bool may_release, bool *released);
void gcap__work_reacquire(struct gcap__backend_ctx *b, bool released);
/*
 * Gives the context lock up entirely (however deep this thread holds it) so that other threads
 * can finish what this one waits for; gcap__lock_resume takes it back to the same depth.
 */
unsigned gcap__lock_suspend(struct gcap__backend_ctx *b);
void gcap__lock_resume(struct gcap__backend_ctx *b, unsigned depth);

/* True when a module image of `size` bytes is PTX text (rather than a cubin or fatbin). */
bool gcap__image_is_ptx(const void *image, size_t size);

/* A kernel as the backend sees it: the core's copy of its definition plus the backend's handle. */
struct gcap__kernel_info {
  const char *name;
  gcap_sim_kernel_fn sim_fn;
  gcap_sim_block_fn sim_block_fn;
  size_t num_params;
  const size_t *param_sizes;
  void *impl; /* backend function handle, NULL on the simulator */
};

struct gcap__launch {
  const struct gcap__kernel_info *kernel;
  gcap_dim3 grid, block;
  uint32_t shared_mem_bytes;
  int priority;      /* the node's priority attribute (0 for stream launches) */
  void *const *args; /* one pointer per parameter */
  bool cooperative;  /* a cooperative launch: every block resident at once (the node's attribute) */
};

/* The layout of a 2-D or 3-D copy: `height` rows of gcap__copy.bytes in each of `depth` slices. */
struct gcap__copy_shape {
  size_t height, depth;
  size_t dst_pitch, src_pitch; /* bytes from the start of a row to the next's */
  size_t dst_rows, src_rows;   /* rows from the start of a slice to the next's (depth > 1) */
};

struct gcap__copy {
  void *dst; /* the first row's first byte */
  const void *src;
  size_t bytes;                         /* of each row: all of them for a 1-D copy */
  gcap_memcpy_kind kind;                /* as given */
  gcap_memcpy_kind resolved;            /* never DEFAULT */
  const struct gcap__copy_shape *shape; /* NULL for a 1-D copy */
};

/* The row `row` (0 .. height * depth - 1) of a shaped copy, at `pitch` and `rows` per slice. */
static inline size_t gcap__copy_row_offset(size_t row, size_t height, size_t pitch, size_t rows) {
  return (row / height) * rows * pitch + (row % height) * pitch;
}

/* Bytes from a side's first byte to one past its last (`dst` side or src side). */
static inline size_t gcap__copy_span(const struct gcap__copy *c, int dst) {
  const struct gcap__copy_shape *s = c->shape;
  if (!s || c->bytes == 0 || s->height == 0 || s->depth == 0) return s ? 0 : c->bytes;
  size_t pitch = dst ? s->dst_pitch : s->src_pitch, rows = dst ? s->dst_rows : s->src_rows;
  return gcap__copy_row_offset(s->height * s->depth - 1, s->height, pitch, rows) + c->bytes;
}

/* The rows a side of a copy touches: 1 when they touch each other (or there is one), height * depth otherwise. */
static inline size_t gcap__copy_side_rows(const struct gcap__copy *c, int dst) {
  const struct gcap__copy_shape *s = c->shape;
  if (!s) return 1;
  size_t pitch = dst ? s->dst_pitch : s->src_pitch, rows = dst ? s->dst_rows : s->src_rows;
  return pitch == c->bytes && (s->depth == 1 || rows == s->height) ? 1 : s->height * s->depth;
}

/* Row r (of gcap__copy_side_rows) of a side: its offset from the side's first byte, and its bytes. */
static inline size_t gcap__copy_side_row(const struct gcap__copy *c, int dst, size_t r, size_t *bytes) {
  const struct gcap__copy_shape *s = c->shape;
  if (gcap__copy_side_rows(c, dst) == 1) {
    *bytes = s ? c->bytes * s->height * s->depth : c->bytes;
    return 0;
  }
  *bytes = c->bytes;
  return gcap__copy_row_offset(r, s->height, dst ? s->dst_pitch : s->src_pitch, dst ? s->dst_rows : s->src_rows);
}

/* True when the copy moves no byte. */
static inline int gcap__copy_empty(const struct gcap__copy *c) {
  return c->bytes == 0 || (c->shape && (c->shape->height == 0 || c->shape->depth == 0));
}

struct gcap__fill {
  void *dst;
  uint32_t value;
  unsigned element_size; /* 1, 2 or 4 */
  size_t width, height, pitch;
};

struct gcap__galloc;

/*
 * A conditional handle. The core makes it on a top-level graph; kernels of a launch set its
 * value (gcap_sim_set_conditional), and the conditional nodes read it when they run.
 */
struct gcap__cond {
  _Atomic unsigned value;
  unsigned default_value, flags;
  unsigned refs;                         /* its graph's, and each plan's that uses it (under the context lock) */
  uint64_t handle;                       /* what the user holds: the backend's value (CUDA), or this object's address */
  const struct gcap__backend_ctx *owner; /* its graph's context: kernels of another cannot set it */
};

/* The live handle h, or NULL (for the simulator's gcap_sim_set_conditional: no lock needed). */
struct gcap__cond *gcap__cond_lookup(uint64_t h);

struct gcap__plan;

/*
 * A child graph made outside gcap (gcap_cuda_graph_add_native_child): reported as GRAPH to
 * users, carried as this internal type so no code mistakes it for a gcap child graph.
 */
#define GCAP__NODE_NATIVE ((gcap_node_type)64)

/*
 * Why a backend refused a whole-graph update the core allowed: the driver's result (a
 * gcap_exec_update_result: CUDA's values) and the entries of `fresh` it names, the failing one
 * and the one an edge comes from (SIZE_MAX: none).
 */
struct gcap__update_refusal {
  int result;
  size_t entry, from_entry;
};

/* What a backend knows of a kernel it found by name in a loaded module. */
struct gcap__kernel_found {
  void *fn;
  bool sizes_known; /* false when the driver cannot tell parameter sizes */
  size_t num_params;
  size_t *param_sizes; /* gcap__malloc'd (sizes_known, num_params > 0); the caller frees it */
};

/* One entry of an executable's flat, topologically ordered plan. */
struct gcap__plan_node {
  gcap_node_type type;     /* GRAPH entries and child exits run nothing */
  bool counted;            /* false for the synthetic exit of a child graph */
  bool disabled;           /* gcap_exec_node_set_enabled: runs as an empty node, keeps its edges */
  const gcap_node *source; /* the graph node it was made from (an address only: it may be gone) */
  uint64_t source_id;      /* that node's unique id, so a later node at the same address never matches */
  uint32_t source_index;   /* that node's creation index in its own graph */
  uint32_t depth;          /* 0 for the top-level graph, +1 inside each child graph */
  union {
    struct gcap__launch kernel;
    struct gcap__copy copy;
    struct gcap__fill fill;
    struct {
      gcap_host_fn fn;
      void *user_data;
    } host;
    struct {
      void *impl;
      gcap_event *handle; /* the core's object, kept alive by the plan */
    } event;
    struct gcap__galloc *mem;     /* MEM_ALLOC, MEM_FREE: the core marks them; backends run nothing */
    struct gcap__cond_plan *cond; /* CONDITIONAL */
    void *native;                 /* GCAP__NODE_NATIVE: the plan's own clone of the native graph */
  } u;
  uint32_t first_dep, num_deps; /* into gcap__plan.deps: indices of earlier entries */
};

struct gcap__plan {
  unsigned flags; /* GCAP_INSTANTIATE_*: with USE_NODE_PRIORITY, kernel priorities order ready nodes */
  /* A top-level plan: its graph's conditional handles, which launches reset (ASSIGN_DEFAULT). */
  struct gcap__cond **conds;
  size_t num_conds;
  void *cond_native; /* the backend's object for them (CUDA: the graph they were made on), or NULL */
  struct gcap__plan_node *nodes;
  size_t count;
  size_t counted; /* gcap_exec_node_count */
  uint32_t *deps; /* plan indices: an executable holds fewer than 2^32 entries and edges */
  size_t num_deps;
  /* The kernel entries' argument copies made at instantiation, in one block (a setter's
   * replacement is an allocation of its own: see gcap__plan_free_owned). */
  unsigned char *args_block;
  size_t args_block_bytes;
};

/* A conditional node's entry: each body a plan of its own, run as the value says. */
struct gcap__cond_plan {
  struct gcap__cond *cond;
  gcap_conditional_type type;
  unsigned size;
  struct gcap__plan *bodies; /* size of them */
};

/* Resets the handles of a top-level plan that take their default at every launch. */
static inline void gcap__plan_reset_conds(const struct gcap__plan *p) {
  for (size_t i = 0; i < p->num_conds; i++)
    if (p->conds[i]->flags & GCAP_GRAPH_COND_ASSIGN_DEFAULT) p->conds[i]->value = p->conds[i]->default_value;
}

struct gcap_backend_ops {
  const char *name;
  /* True when every valid device pointer is a gcap allocation (the simulator). */
  bool knows_all_device_memory;
  /*
   * True when waiting runs the pending work on the waiting thread (the simulator's DEFERRED
   * mode): the core then holds the context lock through every wait, so that the work's host
   * functions, which may call back into gcap, and other threads' calls never overlap it.
   */
  bool waits_run_work;
  /*
   * True when a kernel the desc defines may be missing from the module's image (the simulator
   * runs definitions' CPU implementations): kernel_find's NOT_FOUND then only means "no PTX".
   */
  bool runs_definitions;

  gcap_status (*available)(void);
  gcap_status (*context_create)(const gcap_context_options *o, struct gcap__backend_ctx **out);
  void (*context_destroy)(struct gcap__backend_ctx *b);
  gcap_status (*context_synchronize)(struct gcap__backend_ctx *b);

  gcap_status (*mem_alloc)(struct gcap__backend_ctx *b, size_t bytes, void **out);
  gcap_status (*mem_free)(struct gcap__backend_ctx *b, void *p);
  /* Optional (NULL: NOT_SUPPORTED): device memory host code may touch too; mem_free frees it. */
  gcap_status (*mem_alloc_managed)(struct gcap__backend_ctx *b, size_t bytes, void **out);
  /* Optional (NULL: mem_free at once): frees p (`bytes` long) when `stream` reaches this point. */
  gcap_status (*mem_free_async)(struct gcap__backend_ctx *b, void *stream, void *p, size_t bytes);
  /*
   * Optional (NULL: a graph keeps its blocks until it goes): gives back the pages of p (`bytes`
   * long, from mem_alloc) while the address stays usable; touched again, they come back zeroed.
   */
  void (*mem_discard)(struct gcap__backend_ctx *b, void *p, size_t bytes);
  gcap_status (*host_alloc)(struct gcap__backend_ctx *b, size_t bytes, void **out);
  gcap_status (*host_free)(struct gcap__backend_ctx *b, void *p);

  /* Every backend stream is non-blocking: the core orders the legacy stream itself. priority: in
   * gcap_context_stream_priority_range (lower is more urgent). */
  gcap_status (*stream_create)(struct gcap__backend_ctx *b, int priority, void **out);
  void (*stream_destroy)(struct gcap__backend_ctx *b, void *stream);
  gcap_status (*stream_synchronize)(struct gcap__backend_ctx *b, void *stream);
  gcap_status (*stream_query)(struct gcap__backend_ctx *b, void *stream);

  /* stream NULL: synchronous. */
  gcap_status (*memcpy)(struct gcap__backend_ctx *b, void *stream, const struct gcap__copy *c);
  gcap_status (*memset)(struct gcap__backend_ctx *b, void *stream, const struct gcap__fill *f);
  gcap_status (*launch_kernel)(struct gcap__backend_ctx *b, void *stream, const struct gcap__launch *l);
  gcap_status (*launch_host_func)(struct gcap__backend_ctx *b, void *stream, gcap_host_fn fn, void *user_data);

  gcap_status (*event_create)(struct gcap__backend_ctx *b, unsigned flags /* GCAP_EVENT_* */, void **out);
  void (*event_destroy)(struct gcap__backend_ctx *b, void *event);
  gcap_status (*event_record)(struct gcap__backend_ctx *b, void *event, void *stream);
  gcap_status (*stream_wait_event)(struct gcap__backend_ctx *b, void *stream, void *event);
  gcap_status (*event_synchronize)(struct gcap__backend_ctx *b, void *event);
  gcap_status (*event_query)(struct gcap__backend_ctx *b, void *event);
  /* Both events made with timing; NOT_READY while either's latest record is pending. */
  gcap_status (*event_elapsed_time)(struct gcap__backend_ctx *b, void *start, void *end, float *ms);

  gcap_status (*module_load)(struct gcap__backend_ctx *b, const gcap_module_desc *d, void **out);
  void (*module_unload)(struct gcap__backend_ctx *b, void *module);
  /* Optional: waits until no queued work can still use what a release is about to unload; on a
   * failure nothing may be released. */
  gcap_status (*before_release)(struct gcap__backend_ctx *b);
  /*
   * Optional: find kernel `name` in a loaded module (NOT_FOUND when it has none). NULL: the
   * backend knows only the kernels the desc defines (the simulator).
   */
  gcap_status (*kernel_find)(struct gcap__backend_ctx *b, void *module, const char *name,
                             struct gcap__kernel_found *out);
  /*
   * Optional (NULL: every kernel runs): NOT_SUPPORTED, with a message naming the kernel and what
   * it uses, when the backend cannot run kernel k (the simulator: valid PTX its executor lacks).
   * Called for every launch and kernel node the core checks, with or without the context lock.
   */
  gcap_status (*kernel_check)(const struct gcap__backend_ctx *b, const struct gcap__kernel_info *k);
  /*
   * Optional (NULL: the launch itself finds out, as the driver does): COOPERATIVE_LAUNCH_TOO_LARGE,
   * with a message giving the numbers, when the grid of cooperative launch l (args unused) has
   * more blocks than the device holds at once, blocks of kernels with `regs` registers a thread
   * and `static_shared` bytes of static shared memory.
   */
  gcap_status (*cooperative_check)(const struct gcap__backend_ctx *b, const struct gcap__launch *l, int regs,
                                   int static_shared);
  /*
   * Optional: attribute `attr` of kernel k where the backend knows it better than the core, whose
   * answer (from the PTX's declarations) *value holds on entry; NOT_FOUND (no message) keeps it.
   */
  gcap_status (*kernel_attribute)(struct gcap__backend_ctx *b, const struct gcap__kernel_info *k, gcap_kernel_attr attr,
                                  int *value);
  /*
   * Optional (NULL: the core refuses every value): sets GCAP_KERNEL_ATTR_MAX_DYNAMIC_SHARED_SIZE of
   * kernel k to `value` (>= 0), INVALID_VALUE with a message naming `value` and the device's limit
   * when the device cannot give a block that much beside the kernel's static shared memory.
   */
  gcap_status (*kernel_set_attribute)(struct gcap__backend_ctx *b, const struct gcap__kernel_info *k,
                                      gcap_kernel_attr attr, int value);
  /* A .global or .const variable of a loaded module (cuModuleGetGlobal); NOT_FOUND without a message. */
  gcap_status (*module_global)(struct gcap__backend_ctx *b, void *module, const char *name, void **dptr, size_t *bytes);

  gcap_status (*exec_create)(struct gcap__backend_ctx *b, const struct gcap__plan *plan, void **out);
  void (*exec_destroy)(struct gcap__backend_ctx *b, void *exec);
  /*
   * Optional (NULL: nothing to wait for): returns once every launch of `exec` issued so far has
   * finished. The core calls it before exec_destroy without holding the context lock, so host
   * nodes of those launches may still call into gcap meanwhile.
   */
  gcap_status (*exec_wait)(struct gcap__backend_ctx *b, void *exec);
  gcap_status (*exec_upload)(struct gcap__backend_ctx *b, void *exec, void *stream);
  gcap_status (*exec_launch)(struct gcap__backend_ctx *b, void *exec, const struct gcap__plan *plan, void *stream);
  /*
   * Optional (NULL: nothing to do): the plan of `exec` is about to change (a per-node setter or
   * gcap_exec_update). A backend whose queued launches still read the plan runs them first. A
   * backend that runs kernels with the context lock released (gcap__work_release) returns only
   * once none runs: the core calls it to wait for another thread's launch of `exec`.
   */
  gcap_status (*exec_before_change)(struct gcap__backend_ctx *b, void *exec);
  /*
   * Optional: plan entry `index` is about to take *entry's values (a per-node setter, or
   * enable/disable). On failure the core keeps the old values.
   */
  gcap_status (*exec_set_entry)(struct gcap__backend_ctx *b, void *exec, const struct gcap__plan *plan, size_t index,
                                const struct gcap__plan_node *entry);
  /*
   * Optional: the plan is about to take the parameters of `fresh`, a plan of the same shape
   * (gcap_exec_update; `current` keeps which entries are disabled). On failure nothing changes.
   */
  gcap_status (*exec_update)(struct gcap__backend_ctx *b, void *exec, const struct gcap__plan *current,
                             const struct gcap__plan *fresh, struct gcap__update_refusal *refusal);

  /*
   * Optional: `stream` joins a gcap capture, and leaves it. Between the two, work issued on the
   * native stream behind gcap's back is counted (*foreign_work), so it never runs outside the graph.
   */
  gcap_status (*stream_capture_begin)(struct gcap__backend_ctx *b, void *stream);
  void (*stream_capture_end)(struct gcap__backend_ctx *b, void *stream, size_t *foreign_work);

  /* Optional (NULL: native child graphs are NOT_SUPPORTED): copy and free a native graph. */
  gcap_status (*native_graph_clone)(struct gcap__backend_ctx *b, void *native, void **out);
  void (*native_graph_destroy)(struct gcap__backend_ctx *b, void *native);

  /*
   * Optional (NULL: a handle's value is its object's address): a conditional handle the device
   * can set, made on *native (the backend's object for one top-level graph's handles, made on
   * first use, reference-counted by the graph and by plans).
   */
  gcap_status (*cond_create)(struct gcap__backend_ctx *b, void **native, unsigned default_value, unsigned flags,
                             uint64_t *handle);
  void (*cond_native_retain)(struct gcap__backend_ctx *b, void *native);
  void (*cond_native_release)(struct gcap__backend_ctx *b, void *native);

  /* Optional (NULL: NOT_SUPPORTED). */
  gcap_status (*sim_get_stats)(const struct gcap__backend_ctx *b, gcap_sim_stats *out);
  /* Optional (NULL: NOT_SUPPORTED): one kernel's counters (gcap_sim_get_kernel_stats). */
  gcap_status (*sim_kernel_stats)(const struct gcap__backend_ctx *b, const struct gcap__kernel_info *k,
                                  gcap_sim_kernel_stats *out);
  /* Optional (NULL: false): instantiation must fail when the graph has races (check_races). */
  bool (*wants_race_check)(const struct gcap__backend_ctx *b);
  /*
   * Optional: writes into buf (NUL-terminated, at most size bytes) how the next launch will
   * order its nodes when that needs saying to reproduce a failure, e.g. "shuffled order, seed 7,
   * launch 3"; writes "" otherwise.
   */
  void (*describe_next_launch)(const struct gcap__backend_ctx *b, char *buf, size_t size);
};

/*
 * For a backend's public native-handle getters: the backend objects behind checked public
 * handles. Each returns NULL (and sets the message) for a bad handle.
 */
struct gcap__backend_ctx *gcap__context_backend(gcap_context *ctx);
void *gcap__stream_backend(gcap_stream *s, struct gcap__backend_ctx **b);
void *gcap__exec_backend(gcap_exec *x, struct gcap__backend_ctx **b);
/* gcap_cuda_graph_add_native_child's work, after GCAP_ENTER: checks as every add function. */
gcap_status gcap__graph_add_native(gcap_graph *g, gcap_node *const *deps, size_t num_deps, void *native,
                                   gcap_node **out);

/* "kernel", "memcpy", ...: for messages. */
const char *gcap__node_type_name(gcap_node_type t);
/* "a" or "an", as the type's name needs. */
const char *gcap__article(gcap_node_type t);

extern const struct gcap_backend_ops gcap__sim_ops;
#if GCAP_HAS_CUDA
extern const struct gcap_backend_ops gcap__cuda_ops;
#endif

#endif
