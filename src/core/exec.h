/* Executables: the core's snapshot of a graph, shared by instantiation, launch and update. */
#ifndef GCAP_CORE_EXEC_H
#define GCAP_CORE_EXEC_H

#include "graph.h"

struct gcap_exec {
  struct gcap__link link;
  struct gcap_context *ctx;
  void *impl;
  struct gcap__plan plan;
  unsigned flags;
  uint64_t checked_epoch;       /* allocation-table epoch the plan's ranges were last checked against */
  bool running;                 /* a launch is executing it (a host node may call back into gcap; other
                                   threads wait for it: gcap__exec_wait_other_launch) */
  atomic_bool destroy_pending;  /* destroyed from a host callback: freed later, outside callbacks */
  size_t mem_entries;           /* MEM_ALLOC and MEM_FREE entries: the launch marks their allocations */
  struct gcap_graph *mem_graph; /* with mem_entries: the graph it holds the one executable of
                                   (rules.md#exec-one-at-a-time) */
  uint64_t mem_graph_serial;
  struct gcap_pool *pool;            /* the pool its allocations come from, held while it lives */
  struct gcap__sr_exec *race_acc;    /* stream race check: what a launch touches, made at the first launch */
  struct gcap__uo_refs user_objects; /* its graph's (and child graphs') user objects, held while it lives */
};

gcap_status gcap__check_exec(const gcap_exec *x, const char *what);
/*
 * Context lock held: waits until a launch of x on another thread has ended (the simulator runs an
 * IMMEDIATE launch's kernels with the lock released). x->running stays true only for a launch on
 * the calling thread.
 */
gcap_status gcap__exec_wait_other_launch(struct gcap_exec *x);
/*
 * Frees the executables host callbacks destroyed, once their launches are done. Called without
 * the context lock, outside callbacks, by the calls that wait for work.
 */
void gcap__exec_reap(struct gcap_context *ctx);
/*
 * g's nodes in the order a launch runs them (Kahn, ready nodes in creation order, or
 * `by_priority`: kernel nodes of higher priority, a lower value, first); *out is gcap__malloc'ed.
 */
gcap_status gcap__topological_order(const struct gcap_graph *g, bool by_priority, struct gcap_node ***out);
/* Builds the flat plan of g (parameters copied and checked) for GCAP_INSTANTIATE_* `flags`; on failure nothing is left
 * to free. */
gcap_status gcap__build_plan(struct gcap_context *ctx, const struct gcap_graph *g, unsigned flags,
                             struct gcap__plan *plan);
/* Frees a kernel entry's argument copy or a copy entry's shape, unless it lies in the plan's block. */
void gcap__plan_free_owned(const struct gcap__plan *p, const void *piece);
/* Releases what a plan's entries hold (argument copies, kernel and event references). */
void gcap__plan_release(struct gcap_context *ctx, struct gcap__plan *p);

#endif
