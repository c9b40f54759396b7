/*
 * A stream's log of records (stream_race_log.h). Records are named by sequence numbers
 * (seq0 + position) so that the index survives the log dropping its oldest records; when records
 * move any other way, they are numbered anew and the index is made again from them.
 */
#include <string.h>

#include "stream_race_log.h"

struct gcap__sr_key {
  uintptr_t lo, hi;
  uint64_t seq; /* the newest record of these bytes and access (it may have been dropped since) */
  unsigned mode;
  unsigned gen; /* an entry of another generation than the index's is empty */
};

#define MIN_INDEX 16u
/* Records a log may hold before dead ones are compacted away: compacting a few at a time costs more. */
#define MIN_COMPACT 256u

static const struct gcap_kernel *kernel_of(const struct gcap__sr_record *r) { return r->op.what; }

/* A live record lets go of what it holds. */
static void release(struct gcap__sr_record *r) {
  if (r->mode && r->op.kernel) gcap__module_release(kernel_of(r)->module);
}

/* Addresses share their low bits (alignment): every bit of the key is mixed in (splitmix64's finalizer). */
static size_t hash(uintptr_t lo, uintptr_t hi, unsigned mode) {
  uint64_t h = (uint64_t)lo ^ ((uint64_t)(hi - lo) << 40) ^ ((uint64_t)mode << 62);
  h = (h ^ (h >> 30)) * 0xbf58476d1ce4e5b9u;
  h = (h ^ (h >> 27)) * 0x94d049bb133111ebu;
  return (size_t)(h ^ (h >> 31));
}

static bool key_empty(const struct gcap__sr_log *l, const struct gcap__sr_key *k) { return k->gen != l->index_gen; }

/* The entry of (lo, hi, mode), or the empty entry where it goes (the index always has empty ones). */
static struct gcap__sr_key *find_key(const struct gcap__sr_log *l, uintptr_t lo, uintptr_t hi, unsigned mode) {
  size_t mask = l->index_cap - 1;
  for (size_t i = hash(lo, hi, mode) & mask;; i = (i + 1) & mask) {
    struct gcap__sr_key *k = &l->index[i];
    if (key_empty(l, k) || (k->lo == lo && k->hi == hi && k->mode == mode)) return k;
  }
}

/* The record numbered seq dies, when it is still in the log and alive. */
static void kill(struct gcap__sr_log *l, uint64_t seq) {
  if (seq < l->seq0 + l->head || seq >= l->seq0 + l->end) return;
  struct gcap__sr_record *old = &l->rec[seq - l->seq0];
  if (!old->mode) return;
  release(old);
  old->mode = 0;
  l->dead++;
}

/* Enters record i in the index; the record it replaces (same bytes and access) dies. */
static void index_put(struct gcap__sr_log *l, size_t i) {
  const struct gcap__sr_record *rec = &l->rec[i];
  struct gcap__sr_key *k = find_key(l, rec->lo, rec->hi, rec->mode);
  if (!key_empty(l, k)) {
    kill(l, k->seq);
  } else {
    *k = (struct gcap__sr_key){rec->lo, rec->hi, 0, rec->mode, l->index_gen};
    l->index_used++;
  }
  k->seq = l->seq0 + i;
}

/* Every entry empty at once: a new generation (a whole pass over the index when the count wraps). */
static void empty_index(struct gcap__sr_log *l) {
  l->index_used = 0;
  if (++l->index_gen != 0) return;
  memset(l->index, 0, l->index_cap * sizeof *l->index);
  l->index_gen = 1;
}

/* The index made again from the live records (it has room for them: it held them before). */
static void reindex(struct gcap__sr_log *l) {
  if (!l->index) return;
  empty_index(l);
  for (size_t i = l->head; i < l->end; i++)
    if (l->rec[i].mode) index_put(l, i);
}

/* Keeps the live records for which keep() is true, in order, numbered anew from the start. */
static void compact(struct gcap__sr_log *l, bool (*keep)(const struct gcap__sr_record *, uintptr_t, uintptr_t),
                    uintptr_t lo, uintptr_t hi) {
  size_t kept = 0;
  for (size_t i = l->head; i < l->end; i++) {
    struct gcap__sr_record *rec = &l->rec[i];
    if (rec->mode && keep(rec, lo, hi)) l->rec[kept++] = *rec;
    else release(rec);
  }
  l->seq0 += l->end; /* numbers no index entry can hold */
  l->head = 0;
  l->end = kept;
  l->dead = 0;
  reindex(l);
}

static bool keep_all(const struct gcap__sr_record *rec, uintptr_t lo, uintptr_t hi) {
  (void)rec, (void)lo, (void)hi;
  return true;
}

static bool keep_outside(const struct gcap__sr_record *rec, uintptr_t lo, uintptr_t hi) {
  return rec->hi <= lo || hi <= rec->lo;
}

/* The index has room for n more keys, at most half full (short probes). */
static int reserve_index(struct gcap__sr_log *l, size_t n) {
  if (gcap__sr_index_has_room(l, n)) return 0;
  size_t live = l->end - l->head - l->dead, cap = l->index_cap ? l->index_cap : MIN_INDEX;
  while ((live + n) * 3 > cap) cap *= 2;
  if (cap != l->index_cap) {
    struct gcap__sr_key *grown = gcap__calloc(cap, sizeof *grown); /* generation 0: empty */
    if (!grown) return -1;
    gcap__free(l->index);
    l->index = grown;
    l->index_cap = cap;
    l->index_gen = 0;
  }
  reindex(l); /* drops the entries of records gone since */
  return 0;
}

int gcap__sr_log_make_room(struct gcap__sr_log *l, size_t n) {
  if (l->cap - l->end < n && l->cap >= MIN_COMPACT && l->dead * 2 > l->end - l->head) {
    compact(l, keep_all, 0, 0);
  } else if (l->cap - l->end < n && l->head > 0) {
    memmove(l->rec, l->rec + l->head, (l->end - l->head) * sizeof *l->rec);
    l->seq0 += l->head; /* every record keeps its number */
    l->end -= l->head;
    l->head = 0;
  }
  if (gcap__grow((void **)&l->rec, &l->cap, l->end + n, sizeof *l->rec) != 0) return -1;
  return reserve_index(l, n);
}

static bool same_key(const struct gcap__sr_record *a, const struct gcap__sr_record *b) {
  return a->lo == b->lo && a->hi == b->hi && a->mode == b->mode;
}

void gcap__sr_log_append(struct gcap__sr_log *l, const struct gcap__sr_record *rec) {
  if (rec->op.kernel) gcap__module_retain(kernel_of(rec)->module);
  struct gcap__sr_record *last = l->head < l->end ? &l->rec[l->end - 1] : NULL;
  if (last && same_key(last, rec)) { /* the same work again: the newest record takes its place and number */
    release(last);
    *last = *rec;
    return;
  }
  l->rec[l->end] = *rec;
  index_put(l, l->end++);
}

static void reset_if_empty(struct gcap__sr_log *l) {
  if (l->head != l->end) return;
  l->seq0 += l->end;
  l->head = l->end = l->dead = 0;
}

void gcap__sr_log_prune(struct gcap__sr_log *l, uint64_t upto) {
  while (l->head < l->end && l->rec[l->head].tick <= upto) {
    struct gcap__sr_record *rec = &l->rec[l->head++];
    if (!rec->mode) l->dead--;
    release(rec);
  }
  reset_if_empty(l);
}

void gcap__sr_log_forget(struct gcap__sr_log *l, uintptr_t lo, uintptr_t hi) {
  for (size_t i = l->head; i < l->end; i++) {
    if (!l->rec[i].mode || keep_outside(&l->rec[i], lo, hi)) continue;
    compact(l, keep_outside, lo, hi);
    return;
  }
}

void gcap__sr_log_clear(struct gcap__sr_log *l) {
  for (size_t i = l->head; i < l->end; i++) release(&l->rec[i]);
  l->head = l->end;
  reset_if_empty(l);
  if (l->index) empty_index(l);
}

/* Context destroy: every stream cleared its log when it went, so no record holds a module. */
void gcap__sr_log_free(struct gcap__sr_log *l) {
  gcap__free(l->rec);
  gcap__free(l->index);
  memset(l, 0, sizeof *l);
}
