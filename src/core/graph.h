/* Graphs and nodes: the core's single source of truth for every graph. */
#ifndef GCAP_CORE_GRAPH_H
#define GCAP_CORE_GRAPH_H

#include <stdatomic.h>

#include "base/arena.h"
#include "internal.h"

#define GCAP__NODE_LIVE 0x6e6f6465u /* "node" */
#define GCAP__NODE_DEAD 0x64656164u /* "dead" */

struct gcap__kernel_params {
  struct gcap_kernel *kernel;
  gcap_dim3 grid, block;
  uint32_t shared_mem_bytes;
  int priority;     /* GCAP_KERNEL_NODE_ATTR_PRIORITY: 0 unless set */
  void **args;      /* num_params pointers into the same allocation, followed by the values */
  bool cooperative; /* GCAP_KERNEL_NODE_ATTR_COOPERATIVE: false unless set */
};

/*
 * A node's dependencies or dependents in edge creation order. Most nodes of real graphs have one
 * of each: it lives in the node itself; longer lists live in the graph's arena.
 */
struct gcap__node_list {
  union {
    struct gcap_node *one;   /* cap 0 or 1 */
    struct gcap_node **many; /* cap > 1: `cap` slots from the graph's arena */
  } u;
  uint32_t count, cap;
};

/* The list's items, `count` of them. */
static inline struct gcap_node **gcap__nlist_items(const struct gcap__node_list *l) {
  return l->cap > 1 ? l->u.many : (struct gcap_node **)&l->u.one;
}

struct gcap_node {
  uint32_t magic; /* LIVE, or DEAD once destroyed (the memory lives until its graph does) */
  gcap_node_type type;
  uint64_t id; /* unique in the process: executables name their source nodes by it */
  struct gcap_graph *graph;
  size_t index; /* position in graph->nodes: creation order among live nodes */
  struct gcap__node_list deps, dependents;
  union {
    struct gcap__kernel_params kernel;
    struct {
      gcap_memcpy_node_params flat; /* a 3-D copy's first row (its pointers, row bytes and kind) */
      gcap_memcpy_3d_params *p3;    /* a 3-D copy's parameters, in the graph's arena; NULL for 1-D */
    } memcpy;
    gcap_memset_node_params memset;
    gcap_host_node_params host;
    struct gcap_graph *child;
    struct gcap_event *event;
    struct gcap__galloc *mem;     /* MEM_ALLOC and MEM_FREE */
    struct gcap__cond_node *cond; /* CONDITIONAL */
    struct {
      void *handle;               /* the backend's native graph, owned by the node */
      struct gcap_context *ctx;   /* whose backend frees it */
    } native;                     /* GCAP__NODE_NATIVE */
    struct gcap_node *next_spare; /* a node never handed out, on its graph's spare list */
  } p;
  size_t scratch;      /* visit mark of graph walks (reaches()) */
  uint32_t plan_index; /* instantiation: the plan entry its dependents wait for */
  uint32_t clone_of;   /* in a clone: 1 + the index its source node had when the graph was cloned, else 0 */
};

/* An address range: an allocation's extent or the bytes a node touches. */
struct gcap__extent {
  uintptr_t base;
  size_t bytes;
};

struct gcap_graph {
  struct gcap__link link; /* in ctx->graphs for top-level graphs */
  struct gcap_context *ctx;
  struct gcap_node *owner;     /* the child-graph node that embeds it, or NULL */
  struct gcap__node_vec nodes; /* live, creation order */
  struct gcap__edge *edges;    /* creation order */
  size_t edge_count, edge_cap;
  size_t visit_mark;
  struct gcap__seq *capturing; /* the capture sequence recording into it, or NULL */
  uint64_t serial;             /* unique in the process (an executable's link back, rules.md#exec-one-at-a-time) */
  struct gcap_exec *mem_exec;  /* with MEM_ALLOC/MEM_FREE nodes: its one executable, or NULL */
  bool node_destroyed; /* one of its nodes was destroyed: whole-graph update refuses it, as CUDA's driver does */
  /*
   * Every node's memory ranges were found valid at allocation epoch ranges_epoch (when they were
   * added or set, or at the last instantiation): instantiation re-checks them only when memory
   * was freed since.
   */
  bool ranges_known;
  uint64_t ranges_epoch;
  size_t child_graph_nodes, mem_nodes; /* GRAPH, and MEM_ALLOC/MEM_FREE nodes among its nodes */
  size_t nodes_destroyed;              /* how many of its nodes were destroyed (indices shift then) */
  /* A clone: its source's serial, node count and nodes_destroyed when it was cloned. */
  uint64_t cloned_from;
  size_t cloned_count, cloned_destroyed;
  struct gcap__node_chunk *chunks; /* where its nodes live, newest first */
  /* chunks, for handle checks that run before the context lock is taken */
  _Atomic(struct gcap__node_chunk *) newest_chunk;
  struct gcap__arena arena; /* its nodes' longer lists and kernel argument copies */
  struct gcap_node *spare;  /* nodes allocated but never appended, for reuse */
  /* A loaded graph: the allocations its file recorded (sorted by base), for race analysis. */
  struct gcap__extent *recorded;
  size_t recorded_count, recorded_cap;
  struct gcap__uo_refs user_objects; /* references it holds (gcap_graph_retain_user_object) */
  /* A top-level graph's conditional handles, and the backend's object they were made on. */
  struct gcap__cond **conds;
  size_t num_conds, conds_cap;
  void *cond_native;
  size_t cond_nodes; /* CONDITIONAL nodes among its nodes */
};

/* A conditional node's parameters and the bodies it owns. */
struct gcap__cond_node {
  struct gcap__cond *cond;
  gcap_conditional_type type;
  unsigned size;
  struct gcap_graph *bodies[]; /* size of them, owned by the node */
};

/*
 * A graph's nodes live in aligned chunks: one allocation and one registry entry per chunk, and
 * a node handle is checked by finding its chunk, never by reading memory that may be gone.
 * Nodes stay (destroyed ones as DEAD tombstones) until their graph is freed.
 */
#define GCAP__CHUNK_BYTES 8192u
#define GCAP__CHUNK_HEADER 64u
struct gcap__node_chunk {
  struct gcap__node_chunk *next;
  struct gcap_graph *graph;
  /* Slots handed out. Written under the context lock, read by handle checks without it. */
  atomic_size_t used;
};

/* The type gcap_node_get_type reports: a native CUDA child graph is a child-graph node. */
static inline gcap_node_type gcap__node_public_type(const struct gcap_node *n) {
  return n->type == GCAP__NODE_NATIVE ? GCAP_NODE_GRAPH : n->type;
}

/* The top-level graph g is part of (g itself unless g belongs to a child-graph node). */
const struct gcap_graph *gcap__graph_top(const struct gcap_graph *g);

/* Graphs holding MEM_ALLOC/MEM_FREE nodes refuse clone, child use and node or edge removal
 * (rules.md#mem-restrictions). */
bool gcap__graph_has_mem_nodes(const struct gcap_graph *g);

/* Gives back the room g's node and edge arrays grew into beyond what they hold (nothing on failure). */
void gcap__graph_trim(struct gcap_graph *g);

/* Handle checks (set the message, return INVALID_HANDLE). */
gcap_status gcap__check_graph(const gcap_graph *g, const char *what);
gcap_status gcap__check_node(const gcap_node *n, const char *what);
/* gcap__check_node for a node expected in the live graph g (a dependency of a node added to g). */
gcap_status gcap__check_node_near(const struct gcap_graph *g, const gcap_node *n, const char *what);

/* A new, empty graph of ctx; `owner` NULL for a top-level graph. */
gcap_status gcap__graph_new(struct gcap_context *ctx, struct gcap_node *owner, struct gcap_graph **out);
/* INVALID_VALUE naming a conditional handle of top-level graph g that no conditional node uses. */
gcap_status gcap__check_conds_used(const struct gcap_graph *g);
/* A checked copy for a node of g: in a conditional node's body, its host sides must be page-locked. */
gcap_status gcap__check_body_copy(const struct gcap_graph *g, const struct gcap__copy *c);
void gcap__graph_free(struct gcap_graph *g);
/* Deep copy into a graph owned by `owner` (NULL: top level). */
gcap_status gcap__graph_clone(const struct gcap_graph *g, struct gcap_node *owner, struct gcap_graph **out);

/* Handle checks of a dependency array (NULL, destroyed, another context's), naming "deps[i]". */
gcap_status gcap__node_check_dep_handles(const struct gcap_graph *g, gcap_node *const *deps, size_t num_deps);
/* Node creation used by the add_* functions: validates deps, appends the node and its edges. */
gcap_status gcap__node_check_deps(const struct gcap_graph *g, gcap_node *const *deps, size_t num_deps);
/* `checked`: the node's ranges were checked by the caller, under the context lock, just now. */
gcap_status gcap__node_append(struct gcap_graph *g, struct gcap_node *n, gcap_node *const *deps, size_t num_deps,
                              bool checked);
/* A node of g had its parameters set (`checked`: and its ranges checked) just now. */
void gcap__graph_note_ranges(struct gcap_graph *g, const struct gcap_node *n, bool checked);
/* A zeroed LIVE node from g's chunks (not yet appended: n->graph is NULL), or NULL when out of memory. */
struct gcap_node *gcap__node_alloc(struct gcap_graph *g, gcap_node_type type);
/* Gives back a node gcap__node_alloc made that was never appended (its params already released). */
void gcap__node_unalloc(struct gcap_node *n);
struct gcap__node_chunk *gcap__chunk_of(const struct gcap_node *n);
/* True when p is a node slot of a live graph's chunk (it may be DEAD); never reads p itself. */
bool gcap__is_node_slot(const void *p);
/* The same, where g is a live graph p may well be a node of (it is checked without a lookup then). */
bool gcap__is_node_slot_near(const struct gcap_graph *g, const void *p);
/* Frees g's chunks and with them every node. */
void gcap__graph_free_chunks(struct gcap_graph *g);
/* Frees what a node's parameters own (argument buffers, child graphs, references). */
void gcap__node_release_params(struct gcap_node *n);
/* The same for a graph being freed: what lives in its arena is left to go with it. */
void gcap__node_release_for_graph_free(struct gcap_node *n);
/* Copies params of src into dst (a fresh node of the same type); child graphs are cloned. */
gcap_status gcap__node_copy_params(struct gcap_node *dst, const struct gcap_node *src);

/*
 * The add_*_node calls' steps: handle checks of g, deps and out (before the lock); the NULL
 * checks and the dependencies' (still before it); appending a node whose parameters are set
 * (under it: on failure the parameters are released and the node given back).
 */
gcap_status gcap__node_begin_add(gcap_graph *g, gcap_node *const *deps, size_t num_deps, gcap_node **out);
gcap_status gcap__node_finish_checks(gcap_graph *g, gcap_node *const *deps, size_t num_deps, const void *params,
                                     gcap_node **out);
gcap_status gcap__node_commit(gcap_graph *g, struct gcap_node *n, gcap_node *const *deps, size_t num_deps,
                              gcap_node **out);

/* Copies with 3-D parameters (copy3d.c): p checked into the first row c and its shape (no range check). */
gcap_status gcap__copy_from_3d(const gcap_memcpy_3d_params *p, struct gcap__copy *c, struct gcap__copy_shape *shape);
/* The same, and the ranges checked against ctx's allocations. */
gcap_status gcap__check_copy_3d(const struct gcap_context *ctx, const gcap_memcpy_3d_params *p, struct gcap__copy *c,
                                struct gcap__copy_shape *shape);
/* A detached copy node with 3-D parameters p (checked already). */
gcap_status gcap__node_make_copy_3d(struct gcap_graph *g, const gcap_memcpy_3d_params *p, struct gcap_node **out);
/* A copy node's own copy of 3-D parameters p, in its graph's arena, replacing any it had (n appended or not). */
gcap_status gcap__node_keep_copy_3d(struct gcap_node *n, const gcap_memcpy_3d_params *p);
/* Gives a copy node's 3-D parameters back to its graph's arena: it is a 1-D copy again. */
void gcap__node_drop_copy_3d(struct gcap_node *n);
/* A copy node's copy as checks and plans take it; its shape, if any, in *shape. */
struct gcap__copy gcap__copy_of_node(const struct gcap_node *n, struct gcap__copy_shape *shape);

/* Conditional nodes and handles (conditional.c). */
gcap_status gcap__cond_new(struct gcap_graph *g, unsigned default_value, unsigned flags, struct gcap__cond **out);
/* A detached conditional node with empty bodies (p checked by the caller, but for its handle). */
gcap_status gcap__cond_node_make(struct gcap_graph *g, const gcap_conditional_node_params *p, struct gcap_node **out);
void gcap__cond_node_free(struct gcap_node *n);
void gcap__graph_release_conds(struct gcap_graph *g);
/* True when g (or a body or child graph in it, at any depth) holds conditional nodes or handles. */
bool gcap__graph_has_conditionals(const struct gcap_graph *g);
/* The plan entry of conditional node n: its bodies built as plans; on failure nothing is left to free. */
gcap_status gcap__cond_plan_build(struct gcap_context *ctx, const struct gcap_node *n, unsigned flags,
                                  struct gcap__cond_plan **out);
void gcap__cond_plan_free(struct gcap_context *ctx, struct gcap__cond_plan *cp);
/* A top-level plan takes references to its graph's handles (0, or -1 when out of memory). */
int gcap__plan_take_conds(struct gcap__plan *p, const struct gcap_graph *g);
void gcap__plan_drop_conds(struct gcap_context *ctx, struct gcap__plan *p);

/* Handle check of n, then "params is NULL" when p is, then n's type (INVALID_VALUE naming both types). */
gcap_status gcap__node_check_typed(const gcap_node *n, gcap_node_type want, const void *p);

/* Detached nodes for stream capture (parameters already checked); append with gcap__node_append. */
gcap_status gcap__node_make_kernel(struct gcap_graph *g, const gcap_kernel_node_params *p, struct gcap_node **out);
gcap_status gcap__node_make_value(struct gcap_graph *g, gcap_node_type type, const void *p, size_t size,
                                  struct gcap_node **out);
void gcap__node_discard(struct gcap_node *n);

/* Node lists: room for `need` items (0, or -1 when out of memory), membership, removal, release. */
int gcap__nlist_reserve(struct gcap_graph *g, struct gcap__node_list *l, size_t need);
bool gcap__nlist_contains(const struct gcap__node_list *l, const struct gcap_node *n);
void gcap__nlist_remove(struct gcap__node_list *l, const struct gcap_node *n);
void gcap__nlist_release(struct gcap_graph *g, struct gcap__node_list *l);

/* One edge from -> to of g (both g's nodes): INVALID_VALUE for a self edge, a repeat or a cycle. */
gcap_status gcap__graph_add_edge(struct gcap_graph *g, struct gcap_node *from, struct gcap_node *to);

/* Kernel argument copies (node.c): one allocation each, or laid out in memory of the caller's. */
gcap_status gcap__kernel_args_copy(const struct gcap_kernel *k, void *const *args, void ***out);
/* The bytes of k's argument copy (0 without parameters), and one written to `copy` (16-byte aligned). */
size_t gcap__kernel_args_bytes(const struct gcap_kernel *k);
void **gcap__kernel_args_fill(const struct gcap_kernel *k, void *const *args, void *copy);

#endif
