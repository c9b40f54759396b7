/* The core's objects. Only src/core sees these; backends see backend.h. */
#ifndef GCAP_CORE_INTERNAL_H
#define GCAP_CORE_INTERNAL_H

#include <pthread.h>

#include "base/alloc.h"
#include "backend.h"
#include "base/error.h"
#include "base/registry.h"

/* Intrusive doubly linked list (a context's streams, events, ...). */
struct gcap__link {
  struct gcap__link *prev, *next;
};
void gcap__list_init(struct gcap__link *head);
void gcap__list_push(struct gcap__link *head, struct gcap__link *item);
void gcap__list_unlink(struct gcap__link *item);
#define GCAP__CONTAINER(ptr, type, member) ((type *)(void *)((char *)(ptr)-offsetof(type, member)))

struct gcap_node;
struct gcap__seq;

/* An ordered array of nodes (dependency lists, capture frontiers). */
struct gcap__node_vec {
  struct gcap_node **items;
  size_t count, cap;
};
int gcap__node_vec_push(struct gcap__node_vec *v, struct gcap_node *n);
bool gcap__node_vec_contains(const struct gcap__node_vec *v, const struct gcap_node *n);
/* Appends the nodes of `more` that v does not hold yet (a set union keeping order). */
int gcap__node_vec_union(struct gcap__node_vec *v, const struct gcap__node_vec *more);
void gcap__node_vec_free(struct gcap__node_vec *v);

struct gcap__edge {
  struct gcap_node *from, *to;
};

enum gcap__alloc_kind { GCAP__ALLOC_DEVICE = 1, GCAP__ALLOC_HOST = 2 };

struct gcap__galloc;

struct gcap__allocation {
  uintptr_t base;
  size_t bytes;
  enum gcap__alloc_kind kind;
  struct gcap__galloc *graph; /* a graph allocation (MEM_ALLOC node), or NULL */
  const struct gcap_context *owner;
  bool module_var; /* a module's .global/.const variable: it goes with its module */
  bool managed;    /* gcap_mem_alloc_managed: device memory the host may touch too */
};

/* Sorted by base; every gcap allocation of a context, device and page-locked host. */
struct gcap__alloc_table {
  struct gcap__allocation *items;
  size_t count, cap;
};

struct gcap_context {
  const struct gcap_backend_ops *ops;
  struct gcap__backend_ctx *backend;
  gcap_backend_kind kind;
  pthread_mutex_t lock; /* recursive: host callbacks may call back into gcap */
  struct gcap__link streams, events, modules, graphs, execs, seqs, captures, pools;
  struct gcap_stream *legacy; /* the legacy stream, made on first use, or NULL */
  struct gcap__alloc_table allocs;
  struct gcap__stream_races *races; /* the stream race check's state (stream_race.c), or NULL without it */
  /* Node chunks of freed graphs, kept (registered, empty) for the next graphs: no allocation and no
   * page faults on fresh memory when graphs are built and destroyed over and over. */
  struct gcap__node_chunk *spare_chunks;
  size_t spare_chunk_count;
  uint64_t next_node_id, node_id_end;  /* a block of the process's node ids, taken 4096 at a time */
  const struct gcap_node *failed_node; /* the node whose entry the last failed instantiation could not make */
  unsigned lock_depth;                 /* how deeply the owning thread holds `lock` */
  struct gcap_user_object *dying;      /* user objects with no reference left: destroyed at the outermost unlock */
  struct gcap__link user_objects;      /* live ones */
  /* Graph memory (MEM_ALLOC nodes): bytes allocated by launches now, and reserved for them; highs. */
  size_t graph_mem_used, graph_mem_used_high, graph_mem_reserved, graph_mem_reserved_high;
  /* The last frees, so that the simulator's memory check names a use after free as such. */
  struct gcap__freed_range {
    uintptr_t base;
    size_t bytes;
  } freed[16];
  unsigned freed_next;
  /* A kernel fault (illegal address, assert, trap, a simulator check): sticky, as on CUDA. */
  _Atomic int fault;
  char fault_message[GCAP__MESSAGE_BYTES];
  /*
   * What kernels' memory checks read (gcap__memory_view), kept current while kernels run with the
   * lock released (gcap__work_release): a copy of allocs and freed, replaced, never changed in place.
   */
  struct gcap__alloc_snap *_Atomic snap;
  struct gcap__alloc_snap *retired; /* replaced while kernels ran: freed once none runs */
  uint64_t allocs_version;          /* +1 at every change of allocs or freed */
  unsigned kernels_out;             /* kernels running with the lock released */
};

/* memory.c: allocs or freed changed (context lock held); the snapshot follows at once while kernels run. */
void gcap__allocs_changed(struct gcap_context *ctx);
/* A current snapshot for a kernel about to run; false when out of memory. */
bool gcap__alloc_snap_refresh(struct gcap_context *ctx);
/* Frees the replaced snapshots (no kernel runs), and with `all` the current one (context destroy). */
void gcap__alloc_snap_free(struct gcap_context *ctx, bool all);

/* Records st as the context's sticky fault when it is one (the first one stays); returns st. */
gcap_status gcap__note_fault(struct gcap_context *ctx, gcap_status st);
/* The context's sticky fault, with its message, for any call but those that release; else SUCCESS. */
gcap_status gcap__refuse_faulted(const struct gcap_context *ctx);

struct gcap_stream {
  struct gcap__link link;
  struct gcap_context *ctx;
  void *impl;
  struct gcap__seq *seq;          /* the capture sequence it is a member of, or NULL */
  struct gcap__node_vec frontier; /* while capturing: the next captured node's dependencies */
  bool native_watch;              /* the backend watches its native stream for foreign work */
  size_t race_slot;               /* stream race check: 1 + its index in the clocks, 0 before its first use */
  unsigned flags;                 /* GCAP_STREAM_*: DEFAULT streams take part in the legacy stream's ordering */
  int priority;                   /* clamped to the context's range */
  enum gcap__stream_role { GCAP__STREAM_USER = 0, GCAP__STREAM_LEGACY, GCAP__STREAM_PER_THREAD } role;
  pthread_t thread;         /* PER_THREAD: the host thread it belongs to */
  uint64_t issued;          /* work issued to it outside capture (the legacy stream's ordering) */
  uint64_t legacy_seen;     /* a blocking stream: the legacy stream's `issued` when it last waited for it;
                               the legacy stream: unused */
  uint64_t seen_by_legacy;  /* a blocking stream: its `issued` when the legacy stream last waited for it */
  struct gcap_event *order; /* the event the implicit waits for its work use, made on first need */
  bool destroy_pending;     /* destroyed while a member of a capture: freed when the capture ends */
};

enum gcap__event_state {
  GCAP__EVENT_NEVER = 0, /* never recorded: complete */
  GCAP__EVENT_NORMAL,    /* recorded outside capture */
  GCAP__EVENT_CAPTURED,  /* last recorded in capture sequence `captured_id` */
};

struct gcap_event {
  struct gcap__link link;
  struct gcap_context *ctx;
  void *impl;
  unsigned refs;  /* the user's handle plus every node and plan entry using it */
  bool destroyed; /* the handle is gone; the object lives while refs > 0 */
  enum gcap__event_state state;
  uint64_t captured_id;              /* CAPTURED: the sequence's id (it may have ended since) */
  struct gcap__node_vec captured;    /* CAPTURED: the frontier it remembers */
  struct gcap__sr_clock *race_clock; /* stream race check: what it was recorded after, or NULL */
  unsigned flags;                    /* GCAP_EVENT_*, as created */
};

struct gcap_kernel {
  struct gcap_module *module;
  struct gcap__kernel_info info;
  char *name;
  size_t *param_sizes;
  size_t *param_offsets; /* of each value in a node's argument buffer */
  size_t args_bytes;
  gcap_param_access *param_access;
  bool access_inferred;           /* param_access read from the PTX, not declared: races only, no pointer checks */
  bool max_dynamic_set;           /* gcap_kernel_set_attribute gave max_dynamic_shared */
  uint32_t max_dynamic_shared;    /* the most dynamic shared memory a launch may ask for, once set */
  struct gcap_kernel *next_found; /* in module->found */
};

struct gcap_module {
  struct gcap__link link;
  struct gcap_context *ctx;
  void *impl;
  unsigned refs; /* the user's handle plus every kernel node and plan entry */
  bool unloaded;
  struct gcap_kernel *kernels; /* the desc's definitions */
  size_t num_kernels;
  struct gcap_kernel *found; /* kernels the backend found by name later (CUDA), newest first */
  struct ptx_module *decls;  /* the PTX image's declarations (NULL for other images) */
  char *compiled;            /* the PTX NVRTC made of desc->source, or NULL */
  void **vars;               /* the module variables' device addresses, entered in the allocation table */
  size_t num_vars;
};

/*
 * Locking: every public call holds its context's lock for its whole duration, except while a
 * kernel's blocks run on the simulator for the calls that allow it (gcap__release_kernels), and
 * while the simulator waits for such a kernel (gcap__lock_suspend).
 */
void gcap__lock(struct gcap_context *ctx);
/* For the calling thread's next backend calls: may a kernel run with the lock released? Returns the old value. */
bool gcap__release_kernels(bool allow);
void gcap__unlock(struct gcap_context *ctx);

/* Handle checks; they set the message and return INVALID_HANDLE on failure. */
gcap_status gcap__check_context(const gcap_context *ctx, const char *what);
gcap_status gcap__check_stream(const gcap_stream *s, const char *what);
gcap_status gcap__check_event(const gcap_event *e, const char *what);
gcap_status gcap__check_kernel(const gcap_kernel *k, const char *what);
/* The handle `what` must belong to ctx. */
gcap_status gcap__check_same_context(const struct gcap_context *ctx, const struct gcap_context *other,
                                     const char *what);

/* Memory checks shared by eager calls, nodes and launches (memory.c). */
/*
 * Binary search in an array sorted by a uintptr_t base that each element (of `stride` bytes)
 * starts with: the index of the first element whose base is above p.
 */
size_t gcap__first_above(const void *items, size_t count, size_t stride, uintptr_t p);
const struct gcap__allocation *gcap__find_allocation(const struct gcap_context *ctx, const void *p);
gcap_status gcap__check_copy(const struct gcap_context *ctx, struct gcap__copy *c, bool allow_empty);
gcap_status gcap__check_fill(const struct gcap_context *ctx, const struct gcap__fill *f, bool allow_empty);
/* Forgets every allocation of the table (context destroy). */
void gcap__alloc_table_free(struct gcap__alloc_table *t);
/* Changes with every free in any context: executables re-check their ranges when it moved. */
uint64_t gcap__alloc_epoch(void);
/* Graph allocations enter and leave the table here (their memory is the pool's, not the user's). */
int gcap__alloc_table_insert(struct gcap_context *ctx, void *p, size_t bytes, struct gcap__galloc *graph);
void gcap__alloc_table_erase(struct gcap_context *ctx, const void *p);
/* A module variable's memory (device memory that no free may release); managed: `.attribute(.managed)`. */
int gcap__alloc_table_insert_module(struct gcap_context *ctx, void *p, size_t bytes, bool managed);

/* A copy or fill node's parameters as the checks and backends take them. */
static inline struct gcap__copy gcap__copy_of(const gcap_memcpy_node_params *p) {
  return (struct gcap__copy){p->dst, p->src, p->bytes, p->kind, p->kind, NULL};
}
static inline struct gcap__fill gcap__fill_of(const gcap_memset_node_params *p) {
  return (struct gcap__fill){p->dst, p->value, p->element_size, p->width, p->height, p->pitch};
}

/* Kernel launch checks (module.c). */
gcap_status gcap__check_launch(const struct gcap_kernel *k, gcap_dim3 grid, gcap_dim3 block, uint32_t shared_mem_bytes,
                               void *const *args);
/*
 * Pointer arguments (kernel_pointers.c): a READ, WRITE or READ_WRITE parameter must point into an
 * allocation of ctx, where the backend knows all device memory. After gcap__check_launch.
 */
gcap_status gcap__check_kernel_pointers(const struct gcap_context *ctx, const struct gcap_kernel *k, void *const *args);

/* Internal forms of public calls, for the capture object (no GCAP_ENTER; context lock held or not). */
gcap_status gcap__memcpy_async(struct gcap_stream *s, void *dst, const void *src, size_t bytes, gcap_memcpy_kind kind);
/* A checked copy run on s now (not captured), through the stream race check. */
gcap_status gcap__copy_eager(struct gcap_stream *s, const struct gcap__copy *c);
/* gcap_mem_alloc without its GCAP_ENTER: the caller's name stays in messages. */
gcap_status gcap__mem_alloc_device(gcap_context *ctx, size_t bytes, void **dptr);
gcap_status gcap__fill_async(struct gcap_stream *s, void *dst, uint32_t value, unsigned element_size, size_t count);
gcap_status gcap__launch_kernel(struct gcap_stream *s, struct gcap_kernel *k, gcap_dim3 grid, gcap_dim3 block,
                                uint32_t shared_mem_bytes, void **args);
/* COOPERATIVE_LAUNCH_TOO_LARGE when the grid does not fit on the device at once; context lock held. */
gcap_status gcap__check_cooperative(const struct gcap_kernel *k, gcap_dim3 grid, gcap_dim3 block,
                                    uint32_t shared_mem_bytes);
/* The kernel `name` of any loaded module: SUCCESS, NOT_FOUND, or the backend's failure to resolve it. */
gcap_status gcap__find_kernel(struct gcap_context *ctx, const char *name, struct gcap_kernel **out);
/* The flags every instantiation takes. */
#define GCAP__INSTANTIATE_FLAGS (GCAP_INSTANTIATE_AUTO_FREE_ON_LAUNCH | GCAP_INSTANTIATE_USE_NODE_PRIORITY)
gcap_status gcap__instantiate(struct gcap_graph *g, unsigned flags, gcap_exec **out);
/*
 * The instantiation flags of a call that takes `allowed` (UPLOAD only with parameters): other
 * bits INVALID_VALUE, DEVICE_LAUNCH NOT_SUPPORTED; the message names the argument `what`.
 */
gcap_status gcap__check_instantiate_flags(unsigned flags, unsigned allowed, const char *what);

/* gcap_event_create_with_flags after its argument checks. */
gcap_status gcap__event_new(struct gcap_context *ctx, unsigned flags, struct gcap_event **out);

/* User objects (user_object.c): references held by graphs and executables, as (object, count) lists. */
struct gcap__uo_ref {
  struct gcap_user_object *obj;
  unsigned count;
};
struct gcap__uo_refs {
  struct gcap__uo_ref *items;
  size_t count, cap;
};
/* `to` takes the references of `from` again (a clone, an executable); 0 or -1 when out of memory. */
int gcap__uo_refs_copy(struct gcap__uo_refs *to, const struct gcap__uo_refs *from);
/* Gives up every reference of the list (context lock held: destructors wait for the outermost unlock). */
void gcap__uo_refs_release(struct gcap__uo_refs *refs);
/* Context lock held by this thread at depth 1 and about to be released: runs what must not run under it. */
void gcap__user_objects_destroy_dying(struct gcap_context *ctx);
void gcap__user_objects_context_destroy(struct gcap_context *ctx);

/* Reference counts of shared objects. */
void gcap__event_retain(struct gcap_event *e);
void gcap__event_release(struct gcap_event *e);
void gcap__module_retain(struct gcap_module *m);
void gcap__module_release(struct gcap_module *m);

/* Destroy everything of one kind a context still owns (context destroy). */
void gcap__stream_destroy_locked(struct gcap_stream *s);
/* A stream gcap_stream_destroy left to its capture (destroy_pending), once the capture ends; context lock held. */
void gcap__stream_free_pending(struct gcap_stream *s);
/*
 * Work is about to be issued to s outside capture (context lock held): the legacy stream's
 * implicit ordering (the legacy stream waits for the blocking streams' earlier work, a blocking
 * stream for the legacy stream's), as event waits the backends, the stream race check and
 * DEFERRED mode all see. STREAM_CAPTURE_IMPLICIT (invalidating) for the legacy stream while a
 * blocking stream captures.
 */
gcap_status gcap__stream_before_work(struct gcap_stream *s);

void gcap__event_destroy_locked(struct gcap_event *e);
void gcap__module_unload_locked(struct gcap_module *m);
void gcap__graph_destroy_all(struct gcap_context *ctx);
void gcap__context_free_spare_chunks(struct gcap_context *ctx);
void gcap__exec_destroy_all(struct gcap_context *ctx);

#endif
