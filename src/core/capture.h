/*
 * Stream capture: capture sequences, the per-stream frontier, fork/join through events, the
 * prohibition predicate and invalidation (rules.md#capture-begin through rules.md#record-mem-alloc).
 *
 * Locking: a sequence's members, frontiers and graph are guarded by its context's lock. Whether
 * a sequence is invalidated (and by what) is guarded by the process-wide capture lock, because a
 * potentially unsafe call on one context may invalidate captures of any context
 * (rules.md#capture-unsafe-invalidates). The context lock is always taken before the capture lock.
 */
#ifndef GCAP_CORE_CAPTURE_H
#define GCAP_CORE_CAPTURE_H

#include <stdatomic.h>

#include "graph.h"

struct gcap__seq {
  struct gcap__link global_link; /* every sequence of the process (capture lock) */
  struct gcap__link ctx_link;    /* ctx->seqs */
  uint64_t id;
  struct gcap_context *ctx;
  struct gcap_stream *origin;
  gcap_capture_mode mode;
  pthread_t owner;
  unsigned owner_number;
  struct gcap_graph *graph;
  bool into_user_graph; /* gcap_stream_begin_capture_to_graph: the graph is the caller's, never freed here */
  struct gcap_stream **members;
  size_t member_count, member_cap;
  struct gcap__edge *shadow; /* edges capture created (rules.md#capture-joined), whatever graph edits did since */
  size_t shadow_count, shadow_cap;
  size_t recorded;             /* nodes capture created, from every member */
  struct gcap_capture *object; /* the capture object that began it, or NULL */
  struct gcap_pool *pool;      /* where its MEM_ALLOC nodes reserve memory, or NULL */
  atomic_bool invalidated;     /* set under the capture lock; read without it on every recorded call */
  char offense[512];           /* capture lock: the first call that invalidated it */
};

/*
 * For a stream-ordered call on `s` whose own argument checks returned `checked`: the status the
 * call returns. A failed check on a capturing stream invalidates its capture (rules.md#capture-failed-call); an
 * invalidated member gives STREAM_CAPTURE_INVALIDATED. *record is true when the work must be
 * recorded with gcap__capture_append instead of run.
 */
gcap_status gcap__capture_route(struct gcap_stream *s, gcap_status checked, bool *record);
/*
 * The legacy stream s (nothing for other streams) while a blocking stream of its context
 * captures: STREAM_CAPTURE_IMPLICIT; `issue` (work or a synchronize) invalidates those captures.
 */
gcap_status gcap__capture_check_legacy(struct gcap_stream *s, bool issue);
/* Appends n after the stream's frontier, which becomes {n}. On failure discards n and invalidates. */
gcap_status gcap__capture_append(struct gcap_stream *s, struct gcap_node *n);

/*
 * Make a node of an already checked stream-ordered call and append it (invalidating on failure).
 * The reference a MEM_ALLOC or MEM_FREE node's params carry is taken over whether it succeeds or not.
 */
gcap_status gcap__capture_record_value(struct gcap_stream *s, gcap_node_type type, const void *params, size_t size);
gcap_status gcap__capture_record_kernel(struct gcap_stream *s, const gcap_kernel_node_params *p, bool cooperative);
/* A copy with 3-D parameters (checked already). */
gcap_status gcap__capture_record_copy_3d(struct gcap_stream *s, const gcap_memcpy_3d_params *p);

/* The pool the capture s belongs to draws graph allocations from (NULL: none). */
struct gcap_pool *gcap__capture_pool(const struct gcap_stream *s);

/* Potentially unsafe calls (rules.md#capture-prohibition, rules.md#capture-unsafe-calls,
 * rules.md#capture-unsafe-invalidates): SUCCESS, or STREAM_CAPTURE_UNSUPPORTED after invalidating. */
gcap_status gcap__capture_prohibit(const char *kind, const void *obj);
/* Synchronize or query of a stream (rules.md#capture-conflicts, rules.md#capture-unsafe-calls). */
gcap_status gcap__capture_check_stream_wait(struct gcap_stream *s);
/* Synchronize or query of an event (rules.md#capture-conflicts, rules.md#capture-unsafe-calls,
 * rules.md#captured-event-after-end). */
gcap_status gcap__capture_check_event_wait(struct gcap_event *e);
/* gcap_context_synchronize (rules.md#capture-conflicts). */
gcap_status gcap__capture_check_context_sync(struct gcap_context *ctx);
/* Launching or uploading an executable into a stream (rules.md#capture-unsupported-work). */
gcap_status gcap__capture_check_launch(struct gcap_stream *s);
/* Event record on s (rules.md#capture-event-record). *handled: the capture took it, the backend must not record. */
gcap_status gcap__capture_event_record(struct gcap_event *e, struct gcap_stream *s, bool *handled);
/* Stream wait on e (rules.md#capture-fork through rules.md#capture-wait-invalidated). *handled: the capture took it. */
gcap_status gcap__capture_stream_wait_event(struct gcap_stream *s, struct gcap_event *e, bool *handled);
/* Graph edits that a capture forbids on its own graph (rules.md#capture-graph-edits): destroying it or its
 * nodes, instantiating it. */
gcap_status gcap__capture_check_graph_edit(const struct gcap_graph *g, const char *what);

/* Context destroy: ends every capture of ctx, discarding graphs, and frees capture objects. */
void gcap__capture_context_destroy(struct gcap_context *ctx);

#endif
