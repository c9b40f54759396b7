/*
 * The stream race check (simulator.md#stream-race-check): with check_races, eager work on one
 * stream that overlaps unordered work of another stream is refused before it is issued.
 *
 * Ordering is known at issue time from vector clocks: one per stream, one per recorded event and
 * one for the host (every host thread of the context together: gcap cannot see the program's own
 * locks). Each eager operation leaves a record of the bytes it touches on its stream; a new
 * operation is compared only with the records of other streams that its clock does not cover.
 *
 * Every hook below is one branch when the context has no check (ctx->races NULL). The check and
 * its records live under the context lock; the hooks that follow a wait take it themselves.
 */
#ifndef GCAP_CORE_STREAM_RACE_H
#define GCAP_CORE_STREAM_RACE_H

#include "exec.h"

struct gcap__stream_races;
struct gcap__sr_exec;

/* An event's clock: a snapshot of its stream's clock when it was last recorded (n 0: never). */
struct gcap__sr_clock {
  size_t n, cap; /* entries set, entries allocated */
  uint64_t v[];
};

/* Context create: the state when the backend wants race checks (OUT_OF_MEMORY with the message). */
gcap_status gcap__sr_context_init(struct gcap_context *ctx);
void gcap__sr_context_free(struct gcap_context *ctx);

/* The out-of-line parts; call the inline hooks instead. */
gcap_status gcap__sr_check_copy(struct gcap_stream *s, const struct gcap__copy *c);
gcap_status gcap__sr_check_fill(struct gcap_stream *s, const struct gcap__fill *f);
gcap_status gcap__sr_check_kernel(struct gcap_stream *s, const struct gcap_kernel *k, void *const *args);
gcap_status gcap__sr_check_launch(struct gcap_exec *x, struct gcap_stream *s);
gcap_status gcap__sr_check_free(struct gcap_stream *s, const struct gcap__allocation *a);
gcap_status gcap__sr_check_host_copy(struct gcap_context *ctx, const struct gcap__copy *c);
void gcap__sr_commit(struct gcap_context *ctx, gcap_status st);
gcap_status gcap__sr_prepare_stream(struct gcap_stream *s);
gcap_status gcap__sr_prepare_record(struct gcap_event *e, struct gcap_stream *s);
void gcap__sr_recorded(struct gcap_event *e, struct gcap_stream *s);
void gcap__sr_waited(struct gcap_stream *s, const struct gcap_event *e);
void gcap__sr_stream_synced(struct gcap_stream *s);
void gcap__sr_event_synced(struct gcap_event *e);
void gcap__sr_all_synced(struct gcap_context *ctx);
void gcap__sr_stream_gone(struct gcap_stream *s);
void gcap__sr_forget(const struct gcap_context *ctx, uintptr_t base, size_t bytes);
void gcap__sr_exec_free(struct gcap_exec *x, bool all);
uint64_t gcap__sr_refused(const struct gcap_context *ctx);

/*
 * Eager work on s, before its backend call: INVALID_VALUE (naming both operations) when it races
 * with unordered work of another stream, OUT_OF_MEMORY, or SUCCESS. After a SUCCESS the caller
 * issues the work and must call gcap__sr_done with the outcome, the lock still held.
 */
static inline gcap_status gcap__sr_copy(struct gcap_stream *s, const struct gcap__copy *c) {
  return s->ctx->races ? gcap__sr_check_copy(s, c) : GCAP_SUCCESS;
}
static inline gcap_status gcap__sr_fill(struct gcap_stream *s, const struct gcap__fill *f) {
  return s->ctx->races ? gcap__sr_check_fill(s, f) : GCAP_SUCCESS;
}
static inline gcap_status gcap__sr_kernel(struct gcap_stream *s, const struct gcap_kernel *k, void *const *args) {
  return s->ctx->races ? gcap__sr_check_kernel(s, k, args) : GCAP_SUCCESS;
}
/* A graph launch: the union of its enabled entries' accesses (kept per executable). */
static inline gcap_status gcap__sr_launch(struct gcap_exec *x, struct gcap_stream *s) {
  return s->ctx->races ? gcap__sr_check_launch(x, s) : GCAP_SUCCESS;
}
/* The outcome of the work checked last: records it on SUCCESS, forgets it otherwise. */
static inline void gcap__sr_done(struct gcap_context *ctx, gcap_status st) {
  if (ctx->races) gcap__sr_commit(ctx, st);
}

/* An eager free of a on s writes all of it (no gcap__sr_done: the memory is gone afterwards). */
static inline gcap_status gcap__sr_free(struct gcap_stream *s, const struct gcap__allocation *a) {
  return s->ctx->races ? gcap__sr_check_free(s, a) : GCAP_SUCCESS;
}
/* gcap_memcpy: host-side, ordered after what the host synchronized with; nothing to record. */
static inline gcap_status gcap__sr_host_copy(struct gcap_context *ctx, const struct gcap__copy *c) {
  return ctx->races ? gcap__sr_check_host_copy(ctx, c) : GCAP_SUCCESS;
}

/* Before a stream waits on an event: what the wait will need (OUT_OF_MEMORY), then after it succeeded. */
static inline gcap_status gcap__sr_wait_prepare(struct gcap_stream *s) {
  return s->ctx->races ? gcap__sr_prepare_stream(s) : GCAP_SUCCESS;
}
static inline void gcap__sr_wait_done(struct gcap_stream *s, const struct gcap_event *e) {
  if (s->ctx->races) gcap__sr_waited(s, e);
}
/* Before an event is recorded on s (OUT_OF_MEMORY), then after it was. */
static inline gcap_status gcap__sr_record_prepare(struct gcap_event *e, struct gcap_stream *s) {
  return s->ctx->races ? gcap__sr_prepare_record(e, s) : GCAP_SUCCESS;
}
static inline void gcap__sr_record_done(struct gcap_event *e, struct gcap_stream *s) {
  if (s->ctx->races) gcap__sr_recorded(e, s);
}

/* The host waited for s, for e, or for everything (context synchronize, gcap_mem_free). */
static inline void gcap__sr_host_waited_stream(struct gcap_stream *s) {
  if (s->ctx->races) gcap__sr_stream_synced(s);
}
static inline void gcap__sr_host_waited_event(struct gcap_event *e) {
  if (e->ctx->races) gcap__sr_event_synced(e);
}
static inline void gcap__sr_host_waited_all(struct gcap_context *ctx) {
  if (ctx->races) gcap__sr_all_synced(ctx);
}

/* Object ends: a stream (its work was waited for), an event, an executable. */
static inline void gcap__sr_stream_end(struct gcap_stream *s) {
  if (s->ctx->races && s->race_slot) gcap__sr_stream_gone(s);
}
static inline void gcap__sr_event_end(struct gcap_event *e) {
  if (e->race_clock) gcap__free(e->race_clock);
}
static inline void gcap__sr_exec_end(struct gcap_exec *x) {
  if (x->race_acc) gcap__sr_exec_free(x, true);
}
/* An executable's entries changed (setters, update): its access list is made again. */
static inline void gcap__sr_exec_changed(struct gcap_exec *x) {
  if (x->race_acc) gcap__sr_exec_free(x, false);
}

/* An allocation left the table: records of its bytes can go. */
static inline void gcap__sr_allocation_gone(const struct gcap_context *ctx, uintptr_t base, size_t bytes) {
  if (ctx->races) gcap__sr_forget(ctx, base, bytes);
}

/* gcap_sim_get_stats' stream_races. */
static inline uint64_t gcap__sr_refused_count(const struct gcap_context *ctx) {
  return ctx->races ? gcap__sr_refused(ctx) : 0;
}

#endif
