/*
 * One stream's log for the stream race check (stream_race.c): a record per byte range its eager
 * operations touched, oldest first. A new record replaces (as a dead entry, skipped and compacted
 * away) the stream's previous record of the same bytes and access, so a stream that repeats work
 * on the same buffers keeps one record per buffer however long it goes unsynchronized.
 */
#ifndef GCAP_CORE_STREAM_RACE_LOG_H
#define GCAP_CORE_STREAM_RACE_LOG_H

#include "internal.h"

#define GCAP__SR_READ 1u
#define GCAP__SR_WRITE 2u

/* What an operation was, for messages. */
struct gcap__sr_op {
  const char *func; /* its public function */
  const void *what; /* gcap_launch_kernel: its kernel, whose module a record holds; gcap_exec_launch: the
                       executable, printed and never followed; else NULL */
  bool kernel;
};

struct gcap__sr_record {
  uintptr_t lo, hi; /* [lo, hi) */
  uint64_t tick;    /* of its operation on the log's stream */
  struct gcap__sr_op op;
  unsigned mode; /* GCAP__SR_READ, GCAP__SR_WRITE or both; 0: dead (replaced) */
};

struct gcap__sr_key;

struct gcap__sr_log {
  struct gcap__sr_record *rec; /* rec[head, end), by tick */
  size_t head, end, cap;
  size_t dead;                /* dead records in [head, end) */
  uint64_t seq0;              /* the sequence number of rec[0]: index entries name records by it */
  struct gcap__sr_key *index; /* newest record per (bytes, access), open addressing */
  size_t index_cap, index_used;
  unsigned index_gen;
};

int gcap__sr_log_make_room(struct gcap__sr_log *l, size_t n);
static inline bool gcap__sr_index_has_room(const struct gcap__sr_log *l, size_t n) {
  return (l->index_used + n) * 2 <= l->index_cap;
}
/* Room for n more records (OUT_OF_MEMORY: -1); only capacity and layout change. */
static inline int gcap__sr_log_reserve(struct gcap__sr_log *l, size_t n) {
  return l->cap - l->end >= n && gcap__sr_index_has_room(l, n) ? 0 : gcap__sr_log_make_room(l, n);
}
/* Appends *rec (room reserved), replacing the previous record of the same bytes and access. */
void gcap__sr_log_append(struct gcap__sr_log *l, const struct gcap__sr_record *rec);
/* Drops the records with tick <= upto (everything to come is ordered after them). */
void gcap__sr_log_prune(struct gcap__sr_log *l, uint64_t upto);
/* Drops the records that touch [lo, hi) (freed memory). */
void gcap__sr_log_forget(struct gcap__sr_log *l, uintptr_t lo, uintptr_t hi);
/* Drops every record; the log stays usable. */
void gcap__sr_log_clear(struct gcap__sr_log *l);
void gcap__sr_log_free(struct gcap__sr_log *l);

static inline bool gcap__sr_log_empty(const struct gcap__sr_log *l) { return l->head == l->end; }
static inline uint64_t gcap__sr_log_newest_tick(const struct gcap__sr_log *l) { return l->rec[l->end - 1].tick; }

#endif
