/*
 * Graph-owned memory (rules.md#mem-alloc-node through rules.md#mem-accounting) and capture pools.
 * A MEM_ALLOC node's memory is reserved when it is captured and keeps its address for the life of
 * the graph and of every executable made from it; launches only mark it allocated (live) and freed.
 */
#ifndef GCAP_CORE_POOL_H
#define GCAP_CORE_POOL_H

#include "internal.h"

struct gcap__block {
  void *ptr;
  size_t bytes;
};

struct gcap_pool {
  struct gcap__link link; /* ctx->pools */
  struct gcap_context *ctx;
  unsigned refs;      /* the user's plus every graph allocation and executable holding it */
  unsigned user_refs; /* gcap_pool_create / gcap_pool_retain minus gcap_pool_release */
  bool released;      /* the user let go: the handle is gone */
  size_t reserved, used, peak, attached_execs;
  struct gcap__block *spare; /* reserved, not held by any graph allocation: reused first */
  size_t spare_count, spare_cap;
};

struct gcap__galloc {
  struct gcap_context *ctx;
  void *ptr;
  size_t bytes;           /* as requested: the range copies may touch, and what used_bytes counts */
  size_t block_bytes;     /* the reserved block, which may be a larger spare one */
  uint64_t owner_serial;  /* the graph whose MEM_ALLOC node made it */
  struct gcap_pool *pool; /* NULL: memory straight from the backend */
  unsigned refs;          /* the MEM_ALLOC node, MEM_FREE nodes and executables' entries; 0 while an
                             allocated block outlives them all */
  unsigned exec_refs;     /* of refs, executables' entries */
  bool trimmed;           /* its pages went back (a trim while only graphs held it): not reserved */
  bool live;              /* allocated by a launch (or the capture) and not freed since */
  bool freed_in_graph;    /* a MEM_FREE node of its own graph names it */
  bool freed_elsewhere;   /* a MEM_FREE node of another graph names it (one free node in all: rules.md#mem-free-node) */
};

/* Reserves memory for a captured allocation (from `pool` when given) and enters it in the allocation table. */
gcap_status gcap__galloc_new(struct gcap_context *ctx, struct gcap_pool *pool, size_t bytes, struct gcap__galloc **out);
void gcap__galloc_retain(struct gcap__galloc *a);
/* An executable's entry holds a: its memory is reserved again if a trim gave it back. */
void gcap__galloc_retain_for_exec(struct gcap__galloc *a);
void gcap__galloc_release_for_exec(struct gcap__galloc *a);
/* A free node needs an address an alloc node returned, freed by no other free node (rules.md#mem-free-node). */
gcap_status gcap__check_graph_free(struct gcap_context *ctx, const void *p, struct gcap__galloc **out);
/* A MEM_FREE node of graph `g` now names a, or no longer does. */
void gcap__galloc_mark_freed(struct gcap__galloc *a, const struct gcap_graph *g, bool freed);
/* Drops a reference; the last one frees the memory unless it is allocated now (it then waits for a free). */
void gcap__galloc_release(struct gcap__galloc *a);
/* gcap_mem_free or an eager gcap_mem_free_async: marks it freed, and frees it when no graph holds it. */
void gcap__galloc_free_outside(struct gcap__galloc *a);
/* Context destroy, after its graphs and executables: frees the graph memory still allocated. */
void gcap__galloc_destroy_orphans(struct gcap_context *ctx);
/* Marks it allocated or freed, keeping its pool's figures exact. */
void gcap__galloc_set_live(struct gcap__galloc *a, bool live);

void gcap__pool_retain(struct gcap_pool *p);
void gcap__pool_unref(struct gcap_pool *p);
gcap_status gcap__check_pool(const gcap_pool *p, const char *what);
void gcap__pool_destroy_all(struct gcap_context *ctx);

#endif
