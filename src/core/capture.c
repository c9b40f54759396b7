#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "dispatch.h"
#include "capture.h"
#include "pool.h"

static pthread_mutex_t capture_lock = PTHREAD_MUTEX_INITIALIZER;
static struct gcap__link all_seqs = {&all_seqs, &all_seqs};
static atomic_uint_fast64_t next_id = 1;

static const char *mode_name(gcap_capture_mode m) {
  static const char *const names[] = {"GLOBAL", "THREAD_LOCAL", "RELAXED"};
  return (unsigned)m <= GCAP_CAPTURE_MODE_RELAXED ? names[m] : "?";
}

static const char *short_status(gcap_status st) {
  const char *name = gcap_status_name(st);
  return strncmp(name, "GCAP_ERROR_", 11) == 0 ? name + 11 : name;
}

static struct gcap__seq *seq_of_link(struct gcap__link *l, bool global) {
  return global ? GCAP__CONTAINER(l, struct gcap__seq, global_link) : GCAP__CONTAINER(l, struct gcap__seq, ctx_link);
}

/* A live sequence of ctx by id (an event's sequence may have ended since it was recorded). */
static struct gcap__seq *find_seq(struct gcap_context *ctx, uint64_t id) {
  for (struct gcap__link *l = ctx->seqs.next; l != &ctx->seqs; l = l->next)
    if (seq_of_link(l, false)->id == id) return seq_of_link(l, false);
  return NULL;
}

/* The detail of this thread's current message, without the "gcap_x: " prefix. */
static const char *current_detail(void) {
  const char *msg = gcap_last_error_message();
  size_t n = strlen(gcap__api_function());
  return strncmp(msg, gcap__api_function(), n) == 0 && msg[n] == ':' ? msg + n + 2 : msg;
}

/* Records the first offence; capture lock held. `node` is the index the call would have taken, or SIZE_MAX. */
static void invalidate_locked(struct gcap__seq *q, gcap_status why, const char *kind, const void *obj, size_t node,
                              const char *detail) {
  if (atomic_load(&q->invalidated)) return;
  atomic_store(&q->invalidated, true);
  char where[64] = "";
  if (node != SIZE_MAX) snprintf(where, sizeof where, " (it would have been node %zu)", node);
  snprintf(q->offense, sizeof q->offense, "%s(%s %p) on thread %u: %s%s%s%s", gcap__api_function(), kind, obj,
           gcap__thread_number(), short_status(why), where, detail && *detail ? ": " : "", detail ? detail : "");
}

static void invalidate(struct gcap__seq *q, gcap_status why, const char *kind, const void *obj, size_t node,
                       const char *detail) {
  pthread_mutex_lock(&capture_lock);
  invalidate_locked(q, why, kind, obj, node, detail);
  pthread_mutex_unlock(&capture_lock);
}

/* Once set, never cleared: a plain atomic read answers without the capture lock. */
static bool is_invalidated(struct gcap__seq *q) { return atomic_load(&q->invalidated); }

/* The message every later call on an invalidated capture gets: which call broke it. */
static gcap_status report_invalidated(struct gcap__seq *q) {
  char offense[sizeof q->offense];
  pthread_mutex_lock(&capture_lock);
  memcpy(offense, q->offense, sizeof offense);
  pthread_mutex_unlock(&capture_lock);
  return gcap__fail(GCAP_ERROR_STREAM_CAPTURE_INVALIDATED, "capture %llu was invalidated by %s",
                    (unsigned long long)q->id, offense);
}

/* --------------------------------------------------------- stream-ordered calls */

static gcap_status route(struct gcap_stream *s, gcap_status checked, bool *record) {
  *record = false;
  struct gcap__seq *q = s->seq;
  if (!q) return checked;
  if (checked != GCAP_SUCCESS) {
    invalidate(q, checked, "stream", s, q->graph->nodes.count, current_detail());
    return checked;
  }
  if (is_invalidated(q)) return report_invalidated(q);
  *record = true;
  return GCAP_SUCCESS;
}

/* Then the legacy stream's ordering for work that runs (not recorded). */
gcap_status gcap__capture_route(struct gcap_stream *s, gcap_status checked, bool *record) {
  gcap_status st = route(s, checked, record);
  return st == GCAP_SUCCESS && !*record ? gcap__stream_before_work(s) : st;
}

gcap_status gcap__capture_check_legacy(struct gcap_stream *s, bool issue) {
  if (s->role != GCAP__STREAM_LEGACY) return GCAP_SUCCESS;
  struct gcap_stream *capturing = NULL;
  uint64_t id = 0;
  for (struct gcap__link *l = s->ctx->seqs.next; l != &s->ctx->seqs; l = l->next) {
    struct gcap__seq *q = seq_of_link(l, false);
    for (size_t i = 0; i < q->member_count; i++) {
      if (q->members[i]->flags & GCAP_STREAM_NON_BLOCKING) continue;
      if (!capturing) {
        capturing = q->members[i];
        id = q->id;
      }
      if (issue)
        invalidate(q, GCAP_ERROR_STREAM_CAPTURE_IMPLICIT, "stream", s, SIZE_MAX,
                   "the legacy stream was used while a blocking stream captures");
      break;
    }
  }
  if (!capturing) return GCAP_SUCCESS;
  return gcap__fail(GCAP_ERROR_STREAM_CAPTURE_IMPLICIT,
                    "the legacy stream %p synchronizes implicitly with blocking stream %p, which is capturing "
                    "(capture %llu)%s",
                    (void *)s, (void *)capturing, (unsigned long long)id,
                    issue ? "; the capture is now invalidated" : "");
}

gcap_status gcap__capture_append(struct gcap_stream *s, struct gcap_node *n) {
  struct gcap__seq *q = s->seq;
  struct gcap__node_vec *f = &s->frontier;
  size_t index = q->graph->nodes.count;
  gcap_status st = GCAP_SUCCESS;
  if (gcap__grow((void **)&q->shadow, &q->shadow_cap, q->shadow_count + f->count, sizeof *q->shadow) != 0 ||
      gcap__grow((void **)&f->items, &f->cap, 1, sizeof *f->items) != 0)
    st = gcap__fail(GCAP_ERROR_OUT_OF_MEMORY, "no memory to record the node");
  if (st == GCAP_SUCCESS) st = gcap__node_append(q->graph, n, f->items, f->count, true); /* the eager call checked it */
  if (st != GCAP_SUCCESS) {
    gcap__node_discard(n);
    invalidate(q, st, "stream", s, index, current_detail());
    return st;
  }
  for (size_t i = 0; i < f->count; i++) q->shadow[q->shadow_count++] = (struct gcap__edge){f->items[i], n};
  f->items[0] = n;
  f->count = 1;
  q->recorded++;
  return GCAP_SUCCESS;
}

gcap_status gcap__capture_record_value(struct gcap_stream *s, gcap_node_type type, const void *params, size_t size) {
  struct gcap_node *n = NULL;
  gcap_status st = gcap__node_make_value(s->seq->graph, type, params, size, &n);
  if (st == GCAP_SUCCESS) return gcap__capture_append(s, n);       /* a failed append discards n and its reference */
  if (type == GCAP_NODE_MEM_ALLOC || type == GCAP_NODE_MEM_FREE) { /* no node took the reference: drop it here */
    struct gcap__galloc *a;
    memcpy(&a, params, sizeof a);
    gcap__galloc_release(a);
  }
  invalidate(s->seq, st, "stream", s, s->seq->graph->nodes.count, "out of memory");
  return gcap__fail(st, "no memory to record the node");
}

/* A node made for the capture (st its making's status) joins it, or the capture is invalidated. */
static gcap_status record_made(struct gcap_stream *s, gcap_status st, struct gcap_node *n, const char *what) {
  if (st == GCAP_SUCCESS) return gcap__capture_append(s, n);
  invalidate(s->seq, st, "stream", s, s->seq->graph->nodes.count, "out of memory");
  return gcap__fail(st, "no memory to record the %s node", what);
}

gcap_status gcap__capture_record_kernel(struct gcap_stream *s, const gcap_kernel_node_params *p, bool cooperative) {
  struct gcap_node *n = NULL;
  gcap_status st = gcap__node_make_kernel(s->seq->graph, p, &n);
  if (st == GCAP_SUCCESS) n->p.kernel.priority = s->priority; /* as CUDA: the capturing stream's priority */
  if (st == GCAP_SUCCESS) n->p.kernel.cooperative = cooperative;
  return record_made(s, st, n, "kernel");
}

gcap_status gcap__capture_record_copy_3d(struct gcap_stream *s, const gcap_memcpy_3d_params *p) {
  struct gcap_node *n = NULL;
  gcap_status st = gcap__node_make_copy_3d(s->seq->graph, p, &n);
  return record_made(s, st, n, "copy");
}

/* ------------------------------------------------------------ prohibitions */

gcap_status gcap__capture_prohibit(const char *kind, const void *obj) {
  gcap_capture_mode mine = *gcap__thread_capture_mode();
  if (mine == GCAP_CAPTURE_MODE_RELAXED) return GCAP_SUCCESS;
  pthread_t me = pthread_self();
  bool found = false;
  uint64_t id = 0;
  const void *origin = NULL;
  gcap_capture_mode mode = GCAP_CAPTURE_MODE_GLOBAL;
  pthread_mutex_lock(&capture_lock);
  for (struct gcap__link *l = all_seqs.next; l != &all_seqs; l = l->next) {
    struct gcap__seq *q = seq_of_link(l, true);
    if (atomic_load(&q->invalidated)) continue; /* only ACTIVE captures prohibit (rules.md#capture-prohibition) */
    bool own = pthread_equal(q->owner, me);
    bool prohibits = own ? q->mode != GCAP_CAPTURE_MODE_RELAXED
                         : mine == GCAP_CAPTURE_MODE_GLOBAL && q->mode == GCAP_CAPTURE_MODE_GLOBAL;
    if (!prohibits) continue;
    if (!found) found = true, id = q->id, origin = q->origin, mode = q->mode;
    invalidate_locked(q, GCAP_ERROR_STREAM_CAPTURE_UNSUPPORTED, kind, obj, SIZE_MAX, "a potentially unsafe call");
  }
  pthread_mutex_unlock(&capture_lock);
  if (!found) return GCAP_SUCCESS;
  return gcap__fail(GCAP_ERROR_STREAM_CAPTURE_UNSUPPORTED,
                    "not permitted while stream %p is capturing in %s mode (capture %llu is now invalidated; "
                    "this thread is in %s mode)",
                    origin, mode_name(mode), (unsigned long long)id, mode_name(mine));
}

gcap_status gcap__capture_check_stream_wait(struct gcap_stream *s) {
  struct gcap__seq *q = s->seq;
  if (!q) return gcap__capture_prohibit("stream", s);
  if (is_invalidated(q)) return report_invalidated(q);
  invalidate(q, GCAP_ERROR_STREAM_CAPTURE_UNSUPPORTED, "stream", s, SIZE_MAX, "the stream is capturing");
  return gcap__fail(GCAP_ERROR_STREAM_CAPTURE_UNSUPPORTED,
                    "stream %p is capturing (capture %llu): it cannot be synchronized or queried in any mode; "
                    "the capture is now invalidated",
                    (void *)s, (unsigned long long)q->id);
}

gcap_status gcap__capture_check_event_wait(struct gcap_event *e) {
  if (e->state == GCAP__EVENT_NEVER) return GCAP_SUCCESS;
  if (e->state == GCAP__EVENT_NORMAL) return gcap__capture_prohibit("event", e);
  struct gcap__seq *q = find_seq(e->ctx, e->captured_id);
  if (q && !is_invalidated(q)) {
    invalidate(q, GCAP_ERROR_CAPTURED_EVENT, "event", e, SIZE_MAX, "the event was recorded in this capture");
    return gcap__fail(GCAP_ERROR_CAPTURED_EVENT,
                      "event %p was last recorded in capture %llu, which is now invalidated; "
                      "captured events cannot be synchronized or queried",
                      (void *)e, (unsigned long long)q->id);
  }
  return gcap__fail(GCAP_ERROR_CAPTURED_EVENT,
                    "event %p was last recorded in capture %llu; record it outside capture before waiting on it",
                    (void *)e, (unsigned long long)e->captured_id);
}

gcap_status gcap__capture_check_context_sync(struct gcap_context *ctx) {
  uint64_t first = 0;
  for (struct gcap__link *l = ctx->seqs.next; l != &ctx->seqs; l = l->next) {
    struct gcap__seq *q = seq_of_link(l, false);
    if (is_invalidated(q)) continue;
    if (!first) first = q->id;
    invalidate(q, GCAP_ERROR_STREAM_CAPTURE_UNSUPPORTED, "ctx", ctx, SIZE_MAX, "the context has capturing streams");
  }
  if (!first) return GCAP_SUCCESS;
  return gcap__fail(GCAP_ERROR_STREAM_CAPTURE_UNSUPPORTED,
                    "context %p has capturing streams (capture %llu and any others are now invalidated)", (void *)ctx,
                    (unsigned long long)first);
}

gcap_status gcap__capture_check_launch(struct gcap_stream *s) {
  struct gcap__seq *q = s->seq;
  if (!q) return gcap__stream_before_work(s);
  if (is_invalidated(q)) return report_invalidated(q);
  invalidate(q, GCAP_ERROR_STREAM_CAPTURE_UNSUPPORTED, "stream", s, SIZE_MAX, "executables cannot be captured");
  return gcap__fail(GCAP_ERROR_STREAM_CAPTURE_UNSUPPORTED,
                    "stream %p is capturing (capture %llu): an executable cannot be launched into it; add it as a "
                    "child graph instead (the capture is now invalidated)",
                    (void *)s, (unsigned long long)q->id);
}

gcap_status gcap__capture_check_graph_edit(const struct gcap_graph *g, const char *what) {
  const struct gcap_graph *top = gcap__graph_top(g);
  if (!top->capturing) return GCAP_SUCCESS;
  return gcap__fail(GCAP_ERROR_STREAM_CAPTURE_UNSUPPORTED,
                    "graph %p is being built by capture %llu; %s is not permitted until the capture ends",
                    (const void *)g, (unsigned long long)top->capturing->id, what);
}

/* ------------------------------------------------------------ events */

static gcap_status remember_frontier(struct gcap_event *e, struct gcap_stream *s) {
  struct gcap__node_vec copy = {0};
  if (gcap__node_vec_union(&copy, &s->frontier) != 0)
    return gcap__fail(GCAP_ERROR_OUT_OF_MEMORY, "no memory for the event");
  gcap__node_vec_free(&e->captured);
  e->captured = copy;
  e->state = GCAP__EVENT_CAPTURED;
  e->captured_id = s->seq->id;
  return GCAP_SUCCESS;
}

gcap_status gcap__capture_event_record(struct gcap_event *e, struct gcap_stream *s, bool *handled) {
  bool record = false;
  gcap_status st = gcap__capture_route(s, GCAP_SUCCESS, &record);
  *handled = s->seq != NULL;
  if (!record) return st;
  st = remember_frontier(e, s);
  if (st != GCAP_SUCCESS) invalidate(s->seq, st, "stream", s, SIZE_MAX, current_detail());
  return st;
}

/* While s is part of a capture, the backend holds a watch on its native stream (CUDA: a native capture). */
static gcap_status watch_native(struct gcap_stream *s) {
  gcap_status st = gcap__backend_stream_capture_begin(s->ctx, s->impl);
  s->native_watch = st == GCAP_SUCCESS;
  return st;
}

/* Ends the watch; the number of operations that reached the native stream behind gcap's back. */
static size_t unwatch_native(struct gcap_stream *s) {
  size_t foreign = 0;
  if (s->native_watch) gcap__backend_stream_capture_end(s->ctx, s->impl, &foreign);
  s->native_watch = false;
  return foreign;
}

static gcap_status join(struct gcap_stream *s, struct gcap__seq *q, const struct gcap__node_vec *nodes) {
  gcap_status st = watch_native(s);
  if (st != GCAP_SUCCESS) return st;
  if (gcap__grow((void **)&q->members, &q->member_cap, q->member_count + 1, sizeof *q->members) != 0 ||
      gcap__node_vec_union(&s->frontier, nodes) != 0) {
    gcap__node_vec_free(&s->frontier);
    unwatch_native(s);
    return gcap__fail(GCAP_ERROR_OUT_OF_MEMORY, "no memory to join the capture");
  }
  q->members[q->member_count++] = s;
  s->seq = q;
  return GCAP_SUCCESS;
}

static gcap_status wait_captured(struct gcap_stream *s, struct gcap_event *e) {
  struct gcap__seq *mine = s->seq;
  struct gcap__seq *theirs = find_seq(s->ctx, e->captured_id);
  if (!theirs) {
    gcap_status st = gcap__fail(GCAP_ERROR_INVALID_VALUE,
                                "event %p was recorded in capture %llu, which has ended; record it again first",
                                (void *)e, (unsigned long long)e->captured_id);
    if (mine) invalidate(mine, st, "stream", s, SIZE_MAX, current_detail());
    return st;
  }
  bool theirs_invalid = is_invalidated(theirs);
  if (!mine && theirs_invalid)
    return gcap__fail(GCAP_ERROR_INVALID_VALUE,
                      "event %p belongs to capture %llu, which is invalidated; stream %p does not join it", (void *)e,
                      (unsigned long long)theirs->id, (void *)s);
  if (mine && mine != theirs) {
    invalidate(mine, GCAP_ERROR_STREAM_CAPTURE_MERGE, "stream", s, SIZE_MAX, "waited on another capture's event");
    invalidate(theirs, GCAP_ERROR_STREAM_CAPTURE_MERGE, "stream", s, SIZE_MAX, "another capture waited on its event");
    return gcap__fail(GCAP_ERROR_STREAM_CAPTURE_MERGE,
                      "stream %p (capture %llu) waited on event %p of capture %llu: both captures are now invalidated",
                      (void *)s, (unsigned long long)mine->id, (void *)e, (unsigned long long)theirs->id);
  }
  if (mine) {
    if (gcap__node_vec_union(&s->frontier, &e->captured) == 0) return GCAP_SUCCESS;
    gcap_status st = gcap__fail(GCAP_ERROR_OUT_OF_MEMORY, "no memory to merge the frontier");
    invalidate(mine, st, "stream", s, SIZE_MAX, current_detail());
    return st;
  }
  return join(s, theirs, &e->captured);
}

gcap_status gcap__capture_stream_wait_event(struct gcap_stream *s, struct gcap_event *e, bool *handled) {
  struct gcap__seq *mine = s->seq;
  *handled = true;
  if (mine && is_invalidated(mine)) return report_invalidated(mine);
  switch (e->state) {
  case GCAP__EVENT_NEVER: /* nothing to wait for (rules.md#capture-isolation) */
    *handled = mine != NULL;
    return GCAP_SUCCESS;
  case GCAP__EVENT_NORMAL:
    *handled = mine != NULL;
    if (!mine) return GCAP_SUCCESS;
    invalidate(mine, GCAP_ERROR_STREAM_CAPTURE_ISOLATION, "stream", s, SIZE_MAX, "waited on uncaptured work");
    return gcap__fail(GCAP_ERROR_STREAM_CAPTURE_ISOLATION,
                      "event %p was recorded outside capture; capturing stream %p cannot wait on uncaptured work "
                      "(capture %llu is now invalidated)",
                      (void *)e, (void *)s, (unsigned long long)mine->id);
  case GCAP__EVENT_CAPTURED: return wait_captured(s, e);
  }
  return GCAP_SUCCESS;
}

/* ------------------------------------------------------------ sequences */

gcap_status gcap_thread_exchange_capture_mode(gcap_capture_mode *mode) {
  GCAP_ENTER();
  if (!mode) return gcap__fail(GCAP_ERROR_INVALID_VALUE, "mode is NULL");
  if ((unsigned)*mode > GCAP_CAPTURE_MODE_RELAXED)
    return gcap__fail(GCAP_ERROR_INVALID_VALUE, "*mode %d is not GLOBAL, THREAD_LOCAL or RELAXED", (int)*mode);
  gcap_capture_mode *mine = gcap__thread_capture_mode();
  gcap_capture_mode old = *mine;
  *mine = *mode;
  *mode = old;
  return GCAP_SUCCESS;
}

struct gcap_pool *gcap__capture_pool(const struct gcap_stream *s) {
  return s->seq ? s->seq->pool : NULL;
}

/* Where a capture records: a new graph, or the caller's (`into`) after `deps`, already checked. */
struct capture_target {
  struct gcap_graph *into;
  gcap_node *const *deps;
  size_t num_deps;
};

static gcap_status begin(struct gcap_stream *s, gcap_capture_mode mode, struct gcap_pool *pool,
                         const struct capture_target *target, uint64_t *id) {
  struct gcap_context *ctx = s->ctx;
  if (s->role == GCAP__STREAM_LEGACY)
    return gcap__fail(GCAP_ERROR_INVALID_VALUE, "stream %p is the legacy stream, which cannot be captured", (void *)s);
  if (s->seq)
    return gcap__fail(GCAP_ERROR_ILLEGAL_STATE, "stream %p is already part of capture %llu", (void *)s,
                      (unsigned long long)s->seq->id);
  gcap_status st = watch_native(s);
  if (st != GCAP_SUCCESS) return st;
  struct gcap__seq *q = gcap__calloc(1, sizeof *q);
  struct gcap_stream **members = gcap__calloc(4, sizeof *members);
  struct gcap_graph *g = target ? target->into : NULL;
  size_t num_deps = target ? target->num_deps : 0;
  bool fits = gcap__grow((void **)&s->frontier.items, &s->frontier.cap, num_deps, sizeof *s->frontier.items) == 0;
  if (!q || !members || !fits || (!g && gcap__graph_new(ctx, NULL, &g) != GCAP_SUCCESS)) {
    gcap__free(q);
    gcap__free(members);
    unwatch_native(s);
    return gcap__fail(GCAP_ERROR_OUT_OF_MEMORY, "no memory to begin a capture");
  }
  *q = (struct gcap__seq){.id = atomic_fetch_add(&next_id, 1),
                          .ctx = ctx,
                          .origin = s,
                          .mode = mode,
                          .owner = pthread_self(),
                          .owner_number = gcap__thread_number(),
                          .graph = g,
                          .into_user_graph = target != NULL,
                          .members = members,
                          .member_count = 1,
                          .member_cap = 4,
                          .pool = pool};
  if (pool) gcap__pool_retain(pool);
  members[0] = s;
  g->capturing = q;
  s->seq = q;
  s->frontier.count = num_deps;
  if (num_deps) memcpy(s->frontier.items, target->deps, num_deps * sizeof *s->frontier.items);
  gcap__list_push(&ctx->seqs, &q->ctx_link);
  pthread_mutex_lock(&capture_lock);
  gcap__list_push(&all_seqs, &q->global_link);
  pthread_mutex_unlock(&capture_lock);
  *id = q->id;
  return GCAP_SUCCESS;
}

struct gcap_capture {
  struct gcap__link link; /* ctx->captures */
  struct gcap_context *ctx;
  struct gcap_stream *stream;
  struct gcap__seq *seq; /* NULL once the capture has ended, however it ended */
  uint64_t id;
  size_t recorded;   /* frozen when the capture ends */
  char failure[600]; /* the offence that invalidated it, once known */
};

static void freeze_object(struct gcap_capture *c, struct gcap__seq *q) {
  c->recorded = q->recorded;
  c->seq = NULL;
  pthread_mutex_lock(&capture_lock);
  if (q->invalidated) snprintf(c->failure, sizeof c->failure, "%s", q->offense);
  pthread_mutex_unlock(&capture_lock);
}

/* Ends q: every member leaves capture; the graph is discarded unless the caller takes it. */
static void terminate(struct gcap__seq *q, bool keep_graph) {
  for (size_t i = 0; i < q->member_count; i++) {
    struct gcap_stream *t = q->members[i];
    t->seq = NULL;
    gcap__node_vec_free(&t->frontier);
    unwatch_native(t);
    if (t->destroy_pending) gcap__stream_free_pending(t);
  }
  pthread_mutex_lock(&capture_lock);
  gcap__list_unlink(&q->global_link);
  pthread_mutex_unlock(&capture_lock);
  gcap__list_unlink(&q->ctx_link);
  q->graph->capturing = NULL;
  if (q->object) freeze_object(q->object, q);
  if (!keep_graph && !q->into_user_graph) gcap__graph_free(q->graph); /* the caller's keeps what was recorded */
  gcap__free(q->members);
  gcap__free(q->shadow);
  if (q->pool) gcap__pool_unref(q->pool);
  gcap__free(q);
}

/*
 * The nodes that reach the origin's frontier through capture-made edges are joined; a member
 * whose frontier holds any other node has work that never rejoined the origin
 * (rules.md#capture-joined). Capture appends a node's edges when it appends the node, after the
 * nodes it depends on, so one backward pass over the edges marks every joined node: when the
 * edges into a node are reached, all edges that could mark it have been seen.
 */
static bool check_joined(struct gcap__seq *q, struct gcap_stream **culprit, struct gcap_node **node) {
  size_t mark = ++q->graph->visit_mark;
  const struct gcap__node_vec *joined = &q->origin->frontier;
  for (size_t i = 0; i < joined->count; i++) joined->items[i]->scratch = mark;
  for (size_t i = q->shadow_count; i-- > 0;)
    if (q->shadow[i].to->scratch == mark) q->shadow[i].from->scratch = mark;
  for (size_t m = 0; m < q->member_count; m++) {
    struct gcap_stream *t = q->members[m];
    for (size_t i = 0; t != q->origin && i < t->frontier.count; i++) {
      if (t->frontier.items[i]->scratch == mark) continue;
      *culprit = t;
      *node = t->frontier.items[i];
      return false;
    }
  }
  return true;
}

/* Work issued on a member's native stream behind gcap's back was captured natively and is dropped: say so. */
static gcap_status check_foreign_work(struct gcap__seq *q) {
  gcap_status st = GCAP_SUCCESS;
  for (size_t i = 0; i < q->member_count; i++) {
    struct gcap_stream *s = q->members[i];
    size_t foreign = unwatch_native(s);
    if (foreign && st == GCAP_SUCCESS)
      st =
          gcap__fail(GCAP_ERROR_STREAM_CAPTURE_UNSUPPORTED,
                     "%zu operation(s) were issued directly on the native stream of gcap stream %p while capture %llu "
                     "recorded it; they are not in the graph and did not run, and the capture is discarded: issue them "
                     "through gcap, or capture them natively and add the graph with gcap_cuda_graph_add_native_child",
                     foreign, (void *)s, (unsigned long long)q->id);
  }
  return st;
}

/* End of capture, checks in the order of rules.md#capture-end-order; `graph` already known non-NULL. */
static gcap_status end(struct gcap_stream *s, gcap_graph **graph) {
  struct gcap__seq *q = s->seq;
  *graph = NULL;
  if (q->mode != GCAP_CAPTURE_MODE_RELAXED && !pthread_equal(q->owner, pthread_self()))
    return gcap__fail(GCAP_ERROR_STREAM_CAPTURE_WRONG_THREAD,
                      "capture %llu was begun on thread %u in %s mode; only that thread may end it",
                      (unsigned long long)q->id, q->owner_number, mode_name(q->mode));
  if (s != q->origin) {
    invalidate(q, GCAP_ERROR_STREAM_CAPTURE_UNMATCHED, "stream", s, SIZE_MAX,
               "ended on a stream that is not the origin");
    return gcap__fail(GCAP_ERROR_STREAM_CAPTURE_UNMATCHED,
                      "stream %p joined capture %llu but did not begin it; end it on its origin stream %p "
                      "(the capture is now invalidated)",
                      (void *)s, (unsigned long long)q->id, (void *)q->origin);
  }
  if (is_invalidated(q)) {
    gcap_status st = report_invalidated(q);
    terminate(q, false);
    return st;
  }
  gcap_status st = check_foreign_work(q);
  if (st != GCAP_SUCCESS) {
    terminate(q, false);
    return st;
  }
  struct gcap_stream *culprit = NULL;
  struct gcap_node *node = NULL;
  if (q->member_count > 1 && !check_joined(q, &culprit, &node)) { /* one stream never forked */
    st = gcap__fail(GCAP_ERROR_STREAM_CAPTURE_UNJOINED,
                    "stream %p forked from capture %llu and its work (node %zu, %s) was never joined back into the "
                    "origin stream %p: record an event on it and make the origin wait on that event before ending",
                    (void *)culprit, (unsigned long long)q->id, node->index, gcap__node_type_name(node->type),
                    (void *)q->origin);
    terminate(q, false);
    return st;
  }
  *graph = q->graph;
  gcap__graph_trim(q->graph); /* a captured graph is mostly launched from now on, rarely grown */
  terminate(q, true);
  return GCAP_SUCCESS;
}

gcap_status gcap_stream_begin_capture(gcap_stream *s, gcap_capture_mode mode) {
  GCAP_ENTER();
  gcap_status st = gcap__check_stream(s, "stream");
  if (st == GCAP_SUCCESS) st = gcap__refuse_in_host_callback();
  if (st != GCAP_SUCCESS) return st;
  if ((unsigned)mode > GCAP_CAPTURE_MODE_RELAXED)
    return gcap__fail(GCAP_ERROR_INVALID_VALUE, "mode %d is not GLOBAL, THREAD_LOCAL or RELAXED", (int)mode);
  uint64_t id;
  gcap__lock(s->ctx);
  st = begin(s, mode, NULL, NULL, &id);
  gcap__unlock(s->ctx);
  return st;
}

gcap_status gcap_stream_end_capture(gcap_stream *s, gcap_graph **graph) {
  GCAP_ENTER();
  if (graph) *graph = NULL;
  gcap_status st = gcap__check_stream(s, "stream");
  if (st == GCAP_SUCCESS) st = gcap__refuse_in_host_callback();
  if (st != GCAP_SUCCESS) return st;
  gcap__lock(s->ctx);
  gcap_graph *ignored = NULL; /* a capture into the caller's graph may leave `graph` NULL */
  if (!s->seq) st = gcap__fail(GCAP_ERROR_ILLEGAL_STATE, "stream %p is not capturing", (void *)s);
  else if (!graph && !s->seq->into_user_graph) st = gcap__fail(GCAP_ERROR_INVALID_VALUE, "graph is NULL");
  else st = end(s, graph ? graph : &ignored);
  gcap__unlock(s->ctx);
  return st;
}

/* ------------------------------------------------- capture into a graph */

/* The graph a capture may record into: the caller's, top-level, of s's context, not being captured into. */
static gcap_status check_target_graph(const struct gcap_stream *s, const struct gcap_graph *g) {
  gcap_status st = gcap__check_same_context(s->ctx, g->ctx, "graph");
  if (st != GCAP_SUCCESS) return st;
  if (g->owner && g->owner->type != GCAP_NODE_CONDITIONAL) /* a conditional node's bodies are filled so */
    return gcap__fail(GCAP_ERROR_INVALID_VALUE,
                      "graph %p belongs to a child-graph node; capture into a graph of your own", (const void *)g);
  if (g->capturing)
    return gcap__fail(GCAP_ERROR_ILLEGAL_STATE, "graph %p is already being recorded into by capture %llu",
                      (const void *)g, (unsigned long long)g->capturing->id);
  if (g->mem_exec)
    return gcap__fail(GCAP_ERROR_NOT_SUPPORTED,
                      "graph %p holds graph allocations and has executable %p; destroy it before adding to the graph",
                      (const void *)g, (void *)g->mem_exec);
  return GCAP_SUCCESS;
}

gcap_status gcap_stream_begin_capture_to_graph(gcap_stream *s, gcap_graph *graph, gcap_node *const *deps,
                                               size_t num_deps, gcap_capture_mode mode) {
  GCAP_ENTER();
  gcap_status st = gcap__check_stream(s, "stream");
  if (st == GCAP_SUCCESS) st = gcap__refuse_in_host_callback();
  if (st != GCAP_SUCCESS) return st;
  if (!graph) return gcap__fail(GCAP_ERROR_INVALID_VALUE, "graph is NULL");
  if ((st = gcap__check_graph(graph, "graph")) != GCAP_SUCCESS) return st;
  if ((st = gcap__node_check_dep_handles(graph, deps, num_deps)) != GCAP_SUCCESS) return st;
  if ((unsigned)mode > GCAP_CAPTURE_MODE_RELAXED)
    return gcap__fail(GCAP_ERROR_INVALID_VALUE, "mode %d is not GLOBAL, THREAD_LOCAL or RELAXED", (int)mode);
  uint64_t id;
  gcap__lock(s->ctx);
  st = check_target_graph(s, graph);
  if (st == GCAP_SUCCESS) st = gcap__node_check_deps(graph, deps, num_deps);
  struct capture_target target = {graph, deps, num_deps};
  if (st == GCAP_SUCCESS) st = begin(s, mode, NULL, &target, &id);
  gcap__unlock(s->ctx);
  return st;
}

/* ADD: the frontier gains the nodes it lacks; SET: it becomes them (rules.md R17). */
static gcap_status update_frontier(struct gcap_stream *s, gcap_node *const *deps, size_t num_deps, unsigned flags) {
  struct gcap__node_vec *f = &s->frontier;
  size_t keep = flags == GCAP_STREAM_SET_CAPTURE_DEPENDENCIES ? 0 : f->count;
  if (gcap__grow((void **)&f->items, &f->cap, keep + num_deps, sizeof *f->items) != 0)
    return gcap__fail(GCAP_ERROR_OUT_OF_MEMORY, "no memory for the stream's dependencies");
  f->count = keep;
  for (size_t i = 0; i < num_deps; i++)
    if (!gcap__node_vec_contains(f, deps[i])) f->items[f->count++] = deps[i];
  return GCAP_SUCCESS;
}

gcap_status gcap_stream_update_capture_dependencies(gcap_stream *s, gcap_node *const *deps, size_t num_deps,
                                                    unsigned flags) {
  GCAP_ENTER();
  gcap_status st = gcap__check_stream(s, "stream");
  if (st != GCAP_SUCCESS) return st;
  if (flags > GCAP_STREAM_SET_CAPTURE_DEPENDENCIES)
    return gcap__fail(GCAP_ERROR_INVALID_VALUE, "flags %u is not ADD (0) or SET (1)", flags);
  gcap__lock(s->ctx);
  struct gcap__seq *q = s->seq;
  if (!q) st = gcap__fail(GCAP_ERROR_ILLEGAL_STATE, "stream %p is not capturing", (void *)s);
  else if (is_invalidated(q)) st = report_invalidated(q);
  if (st == GCAP_SUCCESS) st = gcap__node_check_dep_handles(q->graph, deps, num_deps);
  if (st == GCAP_SUCCESS) st = gcap__node_check_deps(q->graph, deps, num_deps);
  if (st == GCAP_SUCCESS && num_deps) st = update_frontier(s, deps, num_deps, flags);
  gcap__unlock(s->ctx);
  return st;
}

static gcap_capture_status status_of(struct gcap__seq *q) {
  if (!q) return GCAP_CAPTURE_STATUS_NONE;
  return is_invalidated(q) ? GCAP_CAPTURE_STATUS_INVALIDATED : GCAP_CAPTURE_STATUS_ACTIVE;
}

gcap_status gcap_stream_get_capture_info(gcap_stream *s, gcap_capture_info *info) {
  GCAP_ENTER();
  gcap_status st = gcap__check_stream(s, "stream");
  if (st != GCAP_SUCCESS) return st;
  if (!info) return gcap__fail(GCAP_ERROR_INVALID_VALUE, "info is NULL");
  gcap__lock(s->ctx);
  st = gcap__capture_check_legacy(s, false);
  if (st != GCAP_SUCCESS) {
    gcap__unlock(s->ctx);
    return st;
  }
  struct gcap__seq *q = s->seq;
  memset(info, 0, sizeof *info);
  info->status = status_of(q);
  if (q) {
    info->id = q->id;
    info->graph = q->graph;
    info->dependencies = (const gcap_node *const *)s->frontier.items;
    info->num_dependencies = s->frontier.count;
  }
  gcap__unlock(s->ctx);
  return GCAP_SUCCESS;
}

gcap_status gcap_stream_is_capturing(gcap_stream *s, gcap_capture_status *status) {
  GCAP_ENTER();
  gcap_status st = gcap__check_stream(s, "stream");
  if (st != GCAP_SUCCESS) return st;
  if (!status) return gcap__fail(GCAP_ERROR_INVALID_VALUE, "status is NULL");
  gcap__lock(s->ctx);
  st = gcap__capture_check_legacy(s, false);
  if (st == GCAP_SUCCESS) *status = status_of(s->seq);
  gcap__unlock(s->ctx);
  return st;
}

/* --------------------------------------------------------- capture objects */

static gcap_status check_capture(const gcap_capture *c) {
  if (!c) return gcap__fail(GCAP_ERROR_INVALID_HANDLE, "capture is NULL");
  if (!gcap__registry_has(c, GCAP__H_CAPTURE))
    return gcap__fail(GCAP_ERROR_INVALID_HANDLE, "capture %p is not a live capture object", (const void *)c);
  return GCAP_SUCCESS;
}

static gcap_status ended(const gcap_capture *c) {
  return gcap__fail(GCAP_ERROR_STREAM_CAPTURE_UNMATCHED, "capture object %p (capture %llu) has already ended%s%s%s",
                    (const void *)c, (unsigned long long)c->id, c->failure[0] ? " (it was invalidated by " : "",
                    c->failure, c->failure[0] ? ")" : "");
}

void gcap_capture_options_init(gcap_capture_options *o) {
  if (!o) return;
  memset(o, 0, sizeof *o);
  o->mode = GCAP_CAPTURE_MODE_GLOBAL;
}

gcap_status gcap_capture_begin(gcap_stream *s, const gcap_capture_options *o, gcap_capture **out) {
  GCAP_ENTER();
  if (out) *out = NULL;
  gcap_status st = gcap__check_stream(s, "stream");
  if (st == GCAP_SUCCESS) st = gcap__refuse_in_host_callback();
  if (st != GCAP_SUCCESS) return st;
  gcap_capture_options defaults;
  gcap_capture_options_init(&defaults);
  if (!o) o = &defaults;
  if (o->pool && (st = gcap__check_pool(o->pool, "options->pool")) != GCAP_SUCCESS) return st;
  if (o->pool && (st = gcap__check_same_context(s->ctx, o->pool->ctx, "options->pool")) != GCAP_SUCCESS) return st;
  if (!out) return gcap__fail(GCAP_ERROR_INVALID_VALUE, "out is NULL");
  if ((unsigned)o->mode > GCAP_CAPTURE_MODE_RELAXED)
    return gcap__fail(GCAP_ERROR_INVALID_VALUE, "options->mode %d is not GLOBAL, THREAD_LOCAL or RELAXED",
                      (int)o->mode);
  struct gcap_capture *c = gcap__calloc(1, sizeof *c);
  if (!c || gcap__registry_add(c, GCAP__H_CAPTURE) != 0) {
    gcap__free(c);
    return gcap__fail(GCAP_ERROR_OUT_OF_MEMORY, "no memory for the capture object");
  }
  c->ctx = s->ctx;
  c->stream = s;
  gcap__lock(s->ctx);
  st = begin(s, o->mode, o->pool, NULL, &c->id);
  if (st == GCAP_SUCCESS) {
    c->seq = s->seq;
    c->seq->object = c;
    gcap__list_push(&s->ctx->captures, &c->link);
  }
  gcap__unlock(s->ctx);
  if (st != GCAP_SUCCESS) {
    gcap__registry_remove(c);
    gcap__free(c);
    return st;
  }
  *out = c;
  return GCAP_SUCCESS;
}

gcap_status gcap_capture_record_kernel(gcap_capture *c, const char *function_name, gcap_dim3 grid, gcap_dim3 block,
                                       uint32_t shared_mem_bytes, void **args) {
  GCAP_ENTER();
  gcap_status st = check_capture(c);
  if (st != GCAP_SUCCESS) return st;
  gcap__lock(c->ctx);
  if (!c->seq) {
    st = ended(c);
  } else {
    struct gcap_kernel *k = NULL;
    if (!function_name) st = gcap__fail(GCAP_ERROR_INVALID_VALUE, "function_name is NULL");
    else st = gcap__find_kernel(c->ctx, function_name, &k);
    if (st != GCAP_SUCCESS) {
      bool record;
      st = gcap__capture_route(c->stream, st, &record);
    } else {
      st = gcap__launch_kernel(c->stream, k, grid, block, shared_mem_bytes, args);
    }
  }
  gcap__unlock(c->ctx);
  return st;
}

gcap_status gcap_capture_record_memcpy(gcap_capture *c, void *dst, const void *src, size_t bytes,
                                       gcap_memcpy_kind kind) {
  GCAP_ENTER();
  gcap_status st = check_capture(c);
  if (st != GCAP_SUCCESS) return st;
  gcap__lock(c->ctx);
  st = c->seq ? gcap__memcpy_async(c->stream, dst, src, bytes, kind) : ended(c);
  gcap__unlock(c->ctx);
  return st;
}

gcap_status gcap_capture_record_memset(gcap_capture *c, void *dst, uint8_t value, size_t bytes) {
  GCAP_ENTER();
  gcap_status st = check_capture(c);
  if (st != GCAP_SUCCESS) return st;
  gcap__lock(c->ctx);
  st = c->seq ? gcap__fill_async(c->stream, dst, value, 1, bytes) : ended(c);
  gcap__unlock(c->ctx);
  return st;
}

size_t gcap_capture_recorded_count(const gcap_capture *c) {
  GCAP_ENTER();
  if (check_capture(c) != GCAP_SUCCESS) return 0;
  gcap__lock(c->ctx);
  size_t n = c->seq ? c->seq->recorded : c->recorded;
  gcap__unlock(c->ctx);
  return n;
}

bool gcap_capture_is_active(const gcap_capture *c) {
  GCAP_ENTER();
  if (check_capture(c) != GCAP_SUCCESS) return false;
  gcap__lock(c->ctx);
  bool active = c->seq != NULL;
  gcap__unlock(c->ctx);
  return active;
}

gcap_status gcap_capture_get_status(const gcap_capture *c, gcap_capture_status *status) {
  GCAP_ENTER();
  gcap_status st = check_capture(c);
  if (st != GCAP_SUCCESS) return st;
  if (!status) return gcap__fail(GCAP_ERROR_INVALID_VALUE, "status is NULL");
  gcap__lock(c->ctx);
  *status = status_of(c->seq);
  gcap__unlock(c->ctx);
  return GCAP_SUCCESS;
}

/* The end shared by gcap_capture_end and gcap_capture_finish. */
static gcap_status end_object(gcap_capture *c, gcap_graph **graph) { return c->seq ? end(c->stream, graph) : ended(c); }

gcap_status gcap_capture_end(gcap_capture *c, gcap_graph **graph) {
  GCAP_ENTER();
  if (graph) *graph = NULL;
  gcap_status st = check_capture(c);
  if (st == GCAP_SUCCESS) st = gcap__refuse_in_host_callback();
  if (st != GCAP_SUCCESS) return st;
  if (!graph) return gcap__fail(GCAP_ERROR_INVALID_VALUE, "graph is NULL");
  gcap__lock(c->ctx);
  st = end_object(c, graph);
  gcap__unlock(c->ctx);
  return st;
}

gcap_status gcap_capture_finish(gcap_capture *c, unsigned instantiate_flags, gcap_exec **exec) {
  GCAP_ENTER();
  if (exec) *exec = NULL;
  gcap_status st = check_capture(c);
  if (st == GCAP_SUCCESS) st = gcap__refuse_in_host_callback();
  if (st != GCAP_SUCCESS) return st;
  if (!exec) return gcap__fail(GCAP_ERROR_INVALID_VALUE, "exec is NULL");
  st = gcap__check_instantiate_flags(instantiate_flags, GCAP__INSTANTIATE_FLAGS, "instantiate_flags");
  if (st != GCAP_SUCCESS) return st;
  gcap__lock(c->ctx);
  gcap_graph *g = NULL;
  st = end_object(c, &g);
  if (st == GCAP_SUCCESS) {
    st = gcap__instantiate(g, instantiate_flags, exec);
    gcap__graph_free(g);
  }
  gcap__unlock(c->ctx);
  return st;
}

static void capture_free(struct gcap_capture *c) {
  if (c->seq) terminate(c->seq, false); /* never instantiate what is thrown away */
  gcap__registry_remove(c);
  gcap__list_unlink(&c->link);
  gcap__free(c);
}

void gcap_capture_destroy(gcap_capture *c) {
  GCAP_ENTER_RELEASE();
  if (!c || check_capture(c) != GCAP_SUCCESS) return;
  struct gcap_context *ctx = c->ctx;
  gcap__lock(ctx);
  capture_free(c);
  gcap__unlock(ctx);
}

/* Runs at scope exit, unseen: it keeps the message of the call that made the scope give up. */
void gcap_capture_cleanup(gcap_capture **c) {
  if (!c) return;
  char kept[GCAP__MESSAGE_BYTES];
  snprintf(kept, sizeof kept, "%s", gcap_last_error_message());
  gcap_capture_destroy(*c);
  *c = NULL;
  gcap__restore_message(kept);
}

void gcap__capture_context_destroy(struct gcap_context *ctx) {
  while (ctx->captures.next != &ctx->captures)
    capture_free(GCAP__CONTAINER(ctx->captures.next, struct gcap_capture, link));
  while (ctx->seqs.next != &ctx->seqs) terminate(seq_of_link(ctx->seqs.next, false), false);
}
