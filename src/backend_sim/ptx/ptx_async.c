/*
 * Asynchronous copies and mbarriers: cp.async (its groups, cp.async.mbarrier.arrive), the bulk
 * copy cp.async.bulk with an mbarrier's transaction count, and the mbarrier.* family.
 *
 * A cp.async copies when its thread waits for it (cp.async.wait_group, wait_all) or asks an
 * mbarrier to track it (cp.async.mbarrier.arrive): until then the destination holds what it held,
 * as a GPU may leave it, so a kernel that reads it early sees stale data. Each thread keeps its
 * copies in flight in order, each tagged with the group it joins at the next commit_group. The
 * checks take them at issue (the source and destination ranges under MEMORY; under SHARED_RACES
 * the destination counts as a write then, and any access to it before completion is a race), and
 * at completion (the destination is written by the issuing thread, and initialised for INIT).
 * Copies a block never waits for land at its end (unseen: its shared memory ends with it).
 *
 * An mbarrier is the 64-bit object in shared memory the PTX ISA describes, in the simulator's own
 * encoding: bits 0-20 the pending arrivals of the current phase, 21-41 the expected arrivals,
 * 42-62 the transaction count (signed), bit 63 the phase's parity. The state an arrive returns
 * holds the parity of the phase it arrived in (bit 63) and the arrivals then still pending (bits
 * 0-20), which mbarrier.pending_count reads. cp.async.bulk copies when issued and completes its
 * bytes on the mbarrier's transaction count at once (nvcc's order, copy then expect_tx, leaves it
 * negative for a moment: the phase completes only when both counts are zero). A completed phase
 * orders shared memory for the race check as a barrier does: the check cannot tell which threads
 * took part. A wait that finds its phase incomplete lets the block's other warps run.
 */
#include <stdio.h>

#include "base/alloc.h"
#include "ptx_internal.h"

#define HANDLER(name) static void name(struct px_warp *w, const struct px_ins *in, uint32_t m)

#define NO_COPY UINT32_MAX
#define MB_COUNT_MAX 0xfffffu /* arrival and transaction counts: at most 2^20 - 1 */

struct px_copy {
  uint64_t src;            /* global address */
  const struct px_ins *in; /* the cp.async, for reports */
  uint32_t dst;            /* shared offset */
  uint32_t group;          /* the thread's commit count at issue: the group it joins */
  uint32_t next;           /* the thread's next copy, or NO_COPY */
  uint8_t size, src_size;
};

struct px_async {
  struct px_copy *copies; /* a pool: in flight, or on the free list */
  size_t num_copies, cap_copies;
  uint32_t free_list;
  uint32_t *head, *tail; /* per thread: its copies in flight, oldest first */
  uint32_t *committed;   /* per thread: commit_groups done */
  size_t cap_threads;
  unsigned threads;  /* threads of the block being run (how far the arrays are in use) */
  uint16_t *pending; /* SHARED_RACES: per shared byte, copies into it in flight */
  uint64_t *inited;  /* per 8 shared bytes: an mbarrier that init set up (and inval did not end) */
  size_t cap_shared; /* bytes the two maps cover */
  uint32_t in_flight;
  bool used_maps; /* the maps may hold nonzero entries */
};

/* ---------------------------------------------------------------- state */

void px_async_free(struct px_async *a) {
  if (!a) return;
  gcap__free(a->copies);
  gcap__free(a->head);
  gcap__free(a->tail);
  gcap__free(a->committed);
  gcap__free(a->pending);
  gcap__free(a->inited);
  gcap__free(a);
}

static bool grow_threads(struct px_async *a, unsigned threads) {
  if (threads <= a->cap_threads) return true;
  uint32_t *h = gcap__realloc(a->head, threads * sizeof *h);
  if (h) a->head = h;
  uint32_t *t = gcap__realloc(a->tail, threads * sizeof *t);
  if (t) a->tail = t;
  uint32_t *c = gcap__realloc(a->committed, threads * sizeof *c);
  if (c) a->committed = c;
  if (!h || !t || !c) return false;
  for (size_t i = a->cap_threads; i < threads; i++) a->head[i] = a->tail[i] = NO_COPY, a->committed[i] = 0;
  a->cap_threads = threads;
  return true;
}

static bool grow_shared(struct px_async *a, uint32_t bytes) {
  size_t cap = ((size_t)bytes + 511u) / 512u * 512u;
  if (cap <= a->cap_shared) return true;
  uint16_t *p = gcap__calloc(cap, sizeof *p);
  uint64_t *q = gcap__calloc(cap / 512u, sizeof *q);
  if (!p || !q) {
    gcap__free(p);
    gcap__free(q);
    return false;
  }
  if (a->cap_shared) {
    memcpy(p, a->pending, a->cap_shared * sizeof *p);
    memcpy(q, a->inited, a->cap_shared / 512u * sizeof *q);
  }
  gcap__free(a->pending);
  gcap__free(a->inited);
  a->pending = p;
  a->inited = q;
  a->cap_shared = cap;
  return true;
}

/* The block's state, made or grown for it on first use; NULL after a fault (no memory). */
static struct px_async *state(struct px_warp *w, const struct px_ins *in) {
  struct px_block *b = w->blk;
  struct px_async *a = b->async;
  if (!a) {
    if (!(a = b->async = gcap__calloc(1, sizeof *a))) goto oom;
    a->free_list = NO_COPY;
  }
  if (!grow_threads(a, b->threads) || !grow_shared(a, b->shared_bytes)) goto oom;
  a->threads = b->threads;
  a->used_maps = true;
  if (b->checks & GCAP_SIM_CHECK_SHARED_RACES) b->async_pending = a->pending;
  return a;
oom:
  px_fault(w, in, (unsigned)__builtin_ctz(w->group ? w->group : 1u), GCAP_ERROR_OUT_OF_MEMORY,
           "no memory for the asynchronous copies and barriers of a block");
  return NULL;
}

void px_async_block_end(struct px_block *b) {
  struct px_async *a = b->async;
  if (!a || !a->used_maps) return;
  for (unsigned t = 0; t < a->threads; t++) {
    if (b->status == GCAP_SUCCESS) /* copies never waited for land, unseen: the block's shared memory ends with it */
      for (uint32_t i = a->head[t]; i != NO_COPY; i = a->copies[i].next) {
        const struct px_copy *c = &a->copies[i];
        if (c->src_size) memcpy(b->shared + c->dst, (const void *)(uintptr_t)c->src, c->src_size);
        memset(b->shared + c->dst + c->src_size, 0, (size_t)(c->size - c->src_size));
      }
    a->head[t] = a->tail[t] = NO_COPY, a->committed[t] = 0;
  }
  a->num_copies = 0;
  a->free_list = NO_COPY;
  size_t used = b->shared_bytes < a->cap_shared ? b->shared_bytes : a->cap_shared;
  if (used && a->in_flight) memset(a->pending, 0, used * sizeof *a->pending); /* else every count is back at 0 */
  if (used) memset(a->inited, 0, (used + 511u) / 512u * sizeof *a->inited);
  a->in_flight = 0;
  a->used_maps = false;
  b->async_pending = NULL;
}

/* ---------------------------------------------------------------- copies */

static uint32_t new_copy(struct px_async *a) {
  if (a->free_list != NO_COPY) {
    uint32_t i = a->free_list;
    a->free_list = a->copies[i].next;
    return i;
  }
  if (a->num_copies >= NO_COPY - 1u) return NO_COPY;
  if (gcap__grow((void **)&a->copies, &a->cap_copies, a->num_copies + 1, sizeof *a->copies) != 0) return NO_COPY;
  return (uint32_t)a->num_copies++;
}

/* Thread t's oldest copy lands (t is lane l of warp w); false after a fault. */
static bool complete_oldest(struct px_warp *w, struct px_async *a, unsigned t, unsigned l) {
  uint32_t i = a->head[t];
  struct px_copy *c = &a->copies[i];
  a->head[t] = c->next;
  if (a->head[t] == NO_COPY) a->tail[t] = NO_COPY;
  c->next = a->free_list;
  a->free_list = i;
  a->in_flight--;
  struct px_block *b = w->blk;
  b->access_seq++; /* each copy lands on its own */
  if ((b->checks & (GCAP_SIM_CHECK_SHARED_RACES | GCAP_SIM_CHECK_INIT)) &&
      !px_async_dest(w, c->in, l, c->dst, c->size, true))
    return false;
  unsigned char *d = b->shared + c->dst;
  if (c->src_size) memcpy(d, (const void *)(uintptr_t)c->src, c->src_size);
  memset(d + c->src_size, 0, (size_t)(c->size - c->src_size));
  return true;
}

/* Thread t's copies of groups before `below` land (all: UINT32_MAX); false after a fault. */
static bool complete_groups(struct px_warp *w, struct px_async *a, unsigned l, uint32_t below) {
  unsigned t = px_thread(w, l);
  while (a->head[t] != NO_COPY && a->copies[a->head[t]].group < below)
    if (!complete_oldest(w, a, t, l)) return false;
  return true;
}

/* Whether lane l's global source [src, src + bytes) may be read: MEMORY and INIT (px_resolve); false after a fault. */
static bool source_ok(struct px_warp *w, const struct px_ins *in, unsigned l, uint64_t src, unsigned bytes,
                      unsigned align) {
  if ((w->blk->checks & GCAP_SIM_CHECK_MEMORY) && (src & (align - 1u))) {
    px_fault(w, in, l, GCAP_ERROR_MISALIGNED_ADDRESS,
             "read of %u bytes at global address 0x%llx, which is not a multiple of %u", bytes, (unsigned long long)src,
             align);
    return false;
  }
  if (!(w->blk->checks & (GCAP_SIM_CHECK_MEMORY | GCAP_SIM_CHECK_INIT))) return true;
  if (bytes == align) return px_resolve(w, in, l, src, PTX_SPACE_GLOBAL, bytes, false) != NULL;
  for (unsigned i = 0; i < bytes; i++)
    if (!px_resolve(w, in, l, src + i, PTX_SPACE_GLOBAL, 1, false)) return false;
  return true;
}

static inline uint64_t address_in(const struct px_warp *w, uint16_t base, uint16_t off, unsigned l) {
  return w->f->R[base][l] + w->f->R[off][l];
}

/*
 * cp.async.{ca,cg}: a the destination's base (imm its offset), b and e the source's base and
 * offset slots, size the cp-size, c the src-size slot (PX_NONE: cp-size), pd2 the ignore-src
 * predicate (PX_NONE: none; neg_c: negated).
 */
HANDLER(async_copy) {
  struct px_async *a = state(w, in);
  if (!a) return;
  struct px_block *b = w->blk;
  const uint64_t *A = px_slot(w, in->a);
  unsigned size = in->size;
  uint32_t ignore = in->pd2 != PX_NONE ? w->f->P[in->pd2] ^ (in->neg_c ? PX_FULL : 0) : 0;
  b->access_seq++; /* the lanes of one instruction never race with each other */
  PX_LANES(m, {
    unsigned src_size = in->c != PX_NONE ? (unsigned)(uint32_t)px_slot(w, in->c)[l] : size;
    if (ignore >> l & 1) src_size = 0;
    if (src_size > size) {
      px_fault(w, in, l, GCAP_ERROR_LAUNCH_FAILURE, "cp.async with a src-size of %u bytes, more than its cp-size of %u",
               src_size, size);
      return;
    }
    uint64_t src = address_in(w, in->b, in->e, l);
    unsigned char *d = px_resolve(w, in, l, A[l] + (uint64_t)in->imm, PTX_SPACE_SHARED, size, true);
    if (!d || (src_size && !source_ok(w, in, l, src, src_size, size))) return;
    uint32_t off = (uint32_t)(d - b->shared);
    if ((b->checks & GCAP_SIM_CHECK_SHARED_RACES) && !px_async_dest(w, in, l, off, size, false)) return;
    uint32_t i = new_copy(a);
    if (i == NO_COPY) {
      px_fault(w, in, l, GCAP_ERROR_OUT_OF_MEMORY, "no memory for another asynchronous copy");
      return;
    }
    unsigned t = px_thread(w, l);
    a->copies[i] = (struct px_copy){.src = src,
                                    .in = in,
                                    .dst = off,
                                    .group = a->committed[t],
                                    .next = NO_COPY,
                                    .size = (uint8_t)size,
                                    .src_size = (uint8_t)src_size};
    if (a->tail[t] == NO_COPY) a->head[t] = i;
    else a->copies[a->tail[t]].next = i;
    a->tail[t] = i;
    a->in_flight++;
  });
}

HANDLER(async_commit) {
  struct px_async *a = state(w, in);
  if (!a) return;
  PX_LANES(m, a->committed[px_thread(w, l)]++);
}

/* cp.async.wait_group N (imm N), wait_all (kind 1: commit, then wait for every group). */
HANDLER(async_wait) {
  struct px_async *a = state(w, in);
  if (!a) return;
  uint64_t n = (uint64_t)in->imm;
  PX_LANES(m, {
    unsigned t = px_thread(w, l);
    if (in->kind) a->committed[t]++;
    uint32_t c = a->committed[t];
    if (a->head[t] != NO_COPY && c > n && !complete_groups(w, a, l, (uint32_t)(c - n))) return;
  });
}

static void thread_name(const struct px_block *b, unsigned t, char *buf, size_t size) {
  gcap_dim3 bd = b->l->block;
  snprintf(buf, size, "thread (%u,%u,%u)", t % bd.x, t / bd.x % bd.y, t / bd.x / bd.y);
}

void px_async_race(struct px_warp *w, const struct px_ins *in, unsigned l, uint32_t off, bool write) {
  struct px_block *b = w->blk;
  const struct px_async *a = b->async;
  unsigned t = px_thread(w, l), issuer = 0;
  uint32_t line = 0;
  for (unsigned u = 0; a && u < a->threads && !line; u++)
    for (uint32_t i = a->head[u]; i != NO_COPY && !line; i = a->copies[i].next) {
      const struct px_copy *c = &a->copies[i];
      if (off - c->dst < c->size) issuer = u, line = c->in->src ? c->in->src->line : 0;
    }
  char me[64], them[64], at[400];
  thread_name(b, t, me, sizeof me);
  thread_name(b, issuer, them, sizeof them);
  px_describe_line(b, line, at, sizeof at);
  px_fault(w, in, l, GCAP_ERROR_LAUNCH_FAILURE,
           "shared-memory race on byte 0x%x: this %s by %s and a cp.async into it by %s at %s, whose group %s not "
           "waited for (cp.async.wait_group, cp.async.wait_all)",
           off, write ? "write" : "read", me, them, at, issuer == t ? "this thread has" : "that thread had");
}

/* ---------------------------------------------------------------- mbarrier objects */

static inline uint32_t mb_pending(uint64_t v) { return (uint32_t)(v & 0x1fffffu); }
static inline uint32_t mb_expected(uint64_t v) { return (uint32_t)(v >> 21 & 0x1fffffu); }
static inline int32_t mb_tx(uint64_t v) { return (int32_t)((uint32_t)(v >> 42 & 0x1fffffu) << 11) >> 11; }
static inline unsigned mb_phase(uint64_t v) { return (unsigned)(v >> 63); }
static inline uint64_t mb_make(uint32_t pending, uint32_t expected, int32_t tx, unsigned phase) {
  return (uint64_t)pending | (uint64_t)expected << 21 | (uint64_t)((uint32_t)tx & 0x1fffffu) << 42 |
         (uint64_t)(phase & 1u) << 63;
}

/* The shared offset of lane l's mbarrier at addr in `space` (shared or generic); UINT32_MAX after a fault. */
static uint32_t mbar_at(struct px_warp *w, const struct px_ins *in, unsigned l, uint64_t addr, unsigned space) {
  struct px_block *b = w->blk;
  if (space != PTX_SPACE_SHARED) {
    if ((addr & ~(PX_WINDOW_BYTES - 1)) != PX_SHARED_WINDOW) {
      px_fault(w, in, l, GCAP_ERROR_ILLEGAL_ADDRESS,
               "mbarrier object at generic address 0x%llx, which is not in shared memory (an mbarrier lives there)",
               (unsigned long long)addr);
      return UINT32_MAX;
    }
    addr -= PX_SHARED_WINDOW;
  }
  if (addr & 7u) {
    px_fault(w, in, l, GCAP_ERROR_MISALIGNED_ADDRESS,
             "mbarrier object at shared address 0x%llx, which is not a multiple of 8", (unsigned long long)addr);
    return UINT32_MAX;
  }
  if (addr >= b->shared_bytes || b->shared_bytes - addr < 8) {
    px_fault(w, in, l, GCAP_ERROR_ILLEGAL_ADDRESS,
             "mbarrier object at shared address 0x%llx, past the block's %u bytes of shared memory",
             (unsigned long long)addr, b->shared_bytes);
    return UINT32_MAX;
  }
  return (uint32_t)addr;
}

static inline bool mb_inited(const struct px_async *a, uint32_t off) {
  return a->inited[off / 512] >> (off / 8 % 64) & 1;
}

static inline uint64_t mb_load(const struct px_block *b, uint32_t off) {
  uint64_t v;
  memcpy(&v, b->shared + off, 8);
  return v;
}

static inline void mb_store(struct px_block *b, uint32_t off, uint64_t v) { memcpy(b->shared + off, &v, 8); }

/*
 * Lane l's mbarrier at off is about to be used by `what`: under SYNC it must have been
 * initialised; the INIT and race checks take the access (reads and updates are atomic). False after a fault.
 */
static bool mb_use(struct px_warp *w, const struct px_ins *in, struct px_async *a, unsigned l, uint32_t off,
                   const char *what, bool update) {
  struct px_block *b = w->blk;
  if ((b->checks & GCAP_SIM_CHECK_SYNC) && !mb_inited(a, off)) {
    px_fault(w, in, l, GCAP_ERROR_LAUNCH_FAILURE,
             "%s on the mbarrier at shared address 0x%x, which no mbarrier.init set up (or mbarrier.inval ended)", what,
             off);
    return false;
  }
  if (!(b->checks & (GCAP_SIM_CHECK_SHARED_RACES | GCAP_SIM_CHECK_INIT))) return true;
  b->access_seq++;
  return px_shared_access(w, in, l, off, 8, false, true) && (!update || px_shared_access(w, in, l, off, 8, true, true));
}

/* A phase completed: shared memory is ordered for the race check as after a barrier. */
static void phase_done(struct px_block *b) {
  b->epoch++;
  if (b->clean) memset(b->clean, 0, (b->shared_bytes + 127) / 128 * sizeof *b->clean);
}

/* The phase completes when no arrival and no transaction is pending: the next begins. */
static uint64_t mb_settle(struct px_block *b, uint64_t v) {
  if (mb_pending(v) != 0 || mb_tx(v) != 0) return v;
  phase_done(b);
  return mb_make(mb_expected(v), mb_expected(v), 0, mb_phase(v) ^ 1u);
}

/* Adds tx to the transaction count of lane l's mbarrier value *v; false after a fault (out of range). */
static bool mb_add_tx(struct px_warp *w, const struct px_ins *in, unsigned l, uint32_t off, uint64_t *v, int64_t tx) {
  int64_t n = (int64_t)mb_tx(*v) + tx;
  if (n > (int64_t)MB_COUNT_MAX || n < -(int64_t)MB_COUNT_MAX) {
    px_fault(w, in, l, GCAP_ERROR_LAUNCH_FAILURE,
             "the transaction count of the mbarrier at shared address 0x%x would be %lld, outside -(2^20-1)..2^20-1",
             off, (long long)n);
    return false;
  }
  *v = mb_make(mb_pending(*v), mb_expected(*v), (int32_t)n, mb_phase(*v));
  return true;
}

/*
 * `count` arrivals of lane l (drop: the expected count of later phases goes down as well), after
 * tx expected transaction bytes. *token: the state an arrive returns. False after a fault.
 */
static bool mb_arrive(struct px_warp *w, const struct px_ins *in, unsigned l, uint32_t off, uint32_t count, bool drop,
                      int64_t tx, uint64_t *token) {
  struct px_block *b = w->blk;
  uint64_t v = mb_load(b, off);
  if (tx && !mb_add_tx(w, in, l, off, &v, tx)) return false;
  uint32_t pending = mb_pending(v), expected = mb_expected(v);
  if (count > pending || (drop && count > expected)) {
    if (b->checks & GCAP_SIM_CHECK_SYNC) {
      px_fault(w, in, l, GCAP_ERROR_LAUNCH_FAILURE,
               "%u arrivals on the mbarrier at shared address 0x%x, whose phase %u waits for only %u more (it expects "
               "%u a phase): more arrivals than its count",
               count, off, mb_phase(v), pending, expected);
      return false;
    }
    count = pending < count ? pending : count; /* undefined on a GPU: the phase completes */
  }
  pending -= count;
  if (drop) expected -= count < expected ? count : expected;
  *token = (uint64_t)mb_phase(v) << 63 | pending;
  mb_store(b, off, mb_settle(b, mb_make(pending, expected, mb_tx(v), mb_phase(v))));
  return true;
}

/* ---------------------------------------------------------------- mbarrier instructions */

/* The mbarrier address of lane l: a the base slot (imm the offset), space its state space. */
static inline uint64_t mbar_address(const struct px_warp *w, const struct px_ins *in, unsigned l) {
  return w->f->R[in->a][l] + (uint64_t)in->imm;
}

/* mbarrier.init: b the count. */
HANDLER(mbar_init) {
  struct px_async *a = state(w, in);
  if (!a) return;
  struct px_block *b = w->blk;
  const uint64_t *B = px_slot(w, in->b);
  b->access_seq++;
  PX_LANES(m, {
    uint32_t off = mbar_at(w, in, l, mbar_address(w, in, l), in->space);
    if (off == UINT32_MAX) return;
    uint32_t count = (uint32_t)B[l];
    if (count == 0 || count > MB_COUNT_MAX) {
      px_fault(w, in, l, GCAP_ERROR_LAUNCH_FAILURE,
               "mbarrier.init with a count of %u at shared address 0x%x (the count must be 1 to 2^20-1)", count, off);
      return;
    }
    if (!px_shared_access(w, in, l, off, 8, true, false)) return;
    mb_store(b, off, mb_make(count, count, 0, 0));
    a->inited[off / 512] |= 1ull << (off / 8 % 64);
  });
}

/* mbarrier.inval: the object is memory again. */
HANDLER(mbar_inval) {
  struct px_async *a = state(w, in);
  if (!a) return;
  PX_LANES(m, {
    uint32_t off = mbar_at(w, in, l, mbar_address(w, in, l), in->space);
    if (off == UINT32_MAX || !mb_use(w, in, a, l, off, "mbarrier.inval", true)) return;
    a->inited[off / 512] &= ~(1ull << (off / 8 % 64));
  });
}

/*
 * mbarrier.arrive, arrive_drop, arrive.expect_tx (kind the mode): d the state (PX_NONE: a sink),
 * b the count slot, c the transaction bytes (expect_tx).
 */
HANDLER(mbar_arrive) {
  struct px_async *a = state(w, in);
  if (!a) return;
  const uint64_t *B = px_slot(w, in->b);
  uint64_t *D = in->d != PX_NONE ? px_slot(w, in->d) : NULL;
  bool drop = in->kind == PTX_MBAR_ARRIVE_DROP;
  PX_LANES(m, {
    uint32_t off = mbar_at(w, in, l, mbar_address(w, in, l), in->space);
    if (off == UINT32_MAX || !mb_use(w, in, a, l, off, "mbarrier.arrive", true)) return;
    uint32_t count = (uint32_t)B[l];
    if (count == 0 || count > MB_COUNT_MAX) {
      px_fault(w, in, l, GCAP_ERROR_LAUNCH_FAILURE, "mbarrier arrival count of %u (it must be 1 to 2^20-1)", count);
      return;
    }
    int64_t tx = in->c != PX_NONE ? (int64_t)(uint32_t)px_slot(w, in->c)[l] : 0;
    uint64_t token;
    if (!mb_arrive(w, in, l, off, count, drop, tx, &token)) return;
    if (D) D[l] = token;
  });
}

/* mbarrier.expect_tx (kind) and complete_tx: c the bytes. */
HANDLER(mbar_tx) {
  struct px_async *a = state(w, in);
  if (!a) return;
  struct px_block *b = w->blk;
  const uint64_t *C = px_slot(w, in->c);
  bool expect = in->kind == PTX_MBAR_EXPECT_TX;
  PX_LANES(m, {
    uint32_t off = mbar_at(w, in, l, mbar_address(w, in, l), in->space);
    if (off == UINT32_MAX || !mb_use(w, in, a, l, off, expect ? "mbarrier.expect_tx" : "mbarrier.complete_tx", true))
      return;
    uint64_t v = mb_load(b, off);
    int64_t tx = (int64_t)(uint32_t)C[l];
    if (!mb_add_tx(w, in, l, off, &v, expect ? tx : -tx)) return;
    mb_store(b, off, mb_settle(b, v));
  });
}

/*
 * mbarrier.test_wait / try_wait (.parity: kind): d the predicate, b the state or the parity. A
 * lane whose phase has not completed makes the warp yield (control: PX_CTL_POLL).
 */
HANDLER(mbar_wait) {
  struct px_async *a = state(w, in);
  if (!a) return;
  const uint64_t *B = px_slot(w, in->b);
  bool parity = in->kind == PTX_MBAR_TEST_WAIT_PARITY || in->kind == PTX_MBAR_TRY_WAIT_PARITY;
  uint32_t done = 0;
  PX_LANES(m, {
    uint32_t off = mbar_at(w, in, l, mbar_address(w, in, l), in->space);
    if (off == UINT32_MAX || !mb_use(w, in, a, l, off, "mbarrier.test_wait", false)) return;
    unsigned want = parity ? (unsigned)(B[l] & 1u) : (unsigned)(B[l] >> 63);
    if (mb_phase(mb_load(w->blk, off)) != want) done |= 1u << l;
  });
  uint32_t *P = w->f->P;
  P[in->d] = (P[in->d] & ~m) | done;
  if (done != m) w->yield = true;
}

/* mbarrier.pending_count: d the count, b the state. */
HANDLER(mbar_pending_count) {
  uint64_t *D = px_slot(w, in->d);
  const uint64_t *B = px_slot(w, in->b);
  PX_LANES(m, D[l] = B[l] & 0x1fffffu);
}

/*
 * cp.async.mbarrier.arrive (kind: .noinc or not): the thread's copies land now; then an arrival
 * that the mbarrier counted in advance (.noinc), or none (the pending count went up and down).
 */
HANDLER(async_mbar_arrive) {
  struct px_async *a = state(w, in);
  if (!a) return;
  bool noinc = in->kind == PTX_CP_ASYNC_MBAR_ARRIVE_NOINC;
  PX_LANES(m, {
    uint32_t off = mbar_at(w, in, l, mbar_address(w, in, l), in->space);
    if (off == UINT32_MAX || !mb_use(w, in, a, l, off, "cp.async.mbarrier.arrive", true)) return;
    if (!complete_groups(w, a, l, UINT32_MAX)) return;
    uint64_t token;
    if (noinc && !mb_arrive(w, in, l, off, 1, false, 0, &token)) return;
  });
}

/*
 * cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes: a the destination (imm),
 * vd[0]/vd[1] the source's base and offset slots, c the size slot, vd[2]/vd[3] the mbarrier's.
 * It copies at once and completes its bytes on the mbarrier.
 */
HANDLER(async_bulk) {
  struct px_async *a = state(w, in);
  if (!a) return;
  struct px_block *b = w->blk;
  const uint64_t *A = px_slot(w, in->a), *C = px_slot(w, in->c);
  PX_LANES(m, {
    uint64_t dst = A[l] + (uint64_t)in->imm, src = address_in(w, in->vd[0], in->vd[1], l);
    uint32_t size = (uint32_t)C[l];
    if (size % 16 || dst % 16 || src % 16) {
      px_fault(w, in, l, GCAP_ERROR_MISALIGNED_ADDRESS,
               "cp.async.bulk of %u bytes from global address 0x%llx to shared address 0x%llx: the size and both "
               "addresses must be multiples of 16",
               size, (unsigned long long)src, (unsigned long long)dst);
      return;
    }
    uint32_t off = mbar_at(w, in, l, address_in(w, in->vd[2], in->vd[3], l), PTX_SPACE_SHARED);
    if (off == UINT32_MAX || !mb_use(w, in, a, l, off, "cp.async.bulk's complete_tx", true)) return;
    if (size) {
      if (dst >= b->shared_bytes || b->shared_bytes - dst < size) {
        px_fault(w, in, l, GCAP_ERROR_ILLEGAL_ADDRESS,
                 "cp.async.bulk writes %u bytes at shared address 0x%llx, past the block's %u bytes of shared memory",
                 size, (unsigned long long)dst, b->shared_bytes);
        return;
      }
      if (b->checks & (GCAP_SIM_CHECK_MEMORY | GCAP_SIM_CHECK_INIT))
        for (uint32_t i = 0; i < size; i += 16)
          if (!px_resolve(w, in, l, src + i, PTX_SPACE_GLOBAL, 16, false)) return;
      b->access_seq++;
      if ((b->checks & (GCAP_SIM_CHECK_SHARED_RACES | GCAP_SIM_CHECK_INIT)) &&
          !px_shared_access(w, in, l, (uint32_t)dst, size, true, false))
        return;
      memcpy(b->shared + dst, (const void *)(uintptr_t)src, size);
    }
    uint64_t v = mb_load(b, off);
    if (!mb_add_tx(w, in, l, off, &v, -(int64_t)size)) return;
    mb_store(b, off, mb_settle(b, v));
  });
}

/*
 * cp.async.bulk.global.shared::cta.bulk_group: a the global destination (imm), vd[0]/vd[1] the
 * shared source's base and offset slots, c the size slot. It copies at once, so the bulk groups'
 * commit and wait have nothing left to wait for.
 */
HANDLER(async_bulk_store) {
  struct px_block *b = w->blk;
  const uint64_t *A = px_slot(w, in->a), *C = px_slot(w, in->c);
  b->access_seq++;
  PX_LANES(m, {
    uint64_t dst = A[l] + (uint64_t)in->imm, src = address_in(w, in->vd[0], in->vd[1], l);
    uint32_t size = (uint32_t)C[l];
    if (size % 16 || dst % 16 || src % 16) {
      px_fault(w, in, l, GCAP_ERROR_MISALIGNED_ADDRESS,
               "cp.async.bulk of %u bytes from shared address 0x%llx to global address 0x%llx: the size and both "
               "addresses must be multiples of 16",
               size, (unsigned long long)src, (unsigned long long)dst);
      return;
    }
    if (!size) continue;
    if (src >= b->shared_bytes || b->shared_bytes - src < size) {
      px_fault(w, in, l, GCAP_ERROR_ILLEGAL_ADDRESS,
               "cp.async.bulk reads %u bytes at shared address 0x%llx, past the block's %u bytes of shared memory",
               size, (unsigned long long)src, b->shared_bytes);
      return;
    }
    if ((b->checks & (GCAP_SIM_CHECK_SHARED_RACES | GCAP_SIM_CHECK_INIT)) &&
        !px_shared_access(w, in, l, (uint32_t)src, size, false, false))
      return;
    for (uint32_t i = 0; i < size; i += 16) /* MEMORY, INIT and constant memory, 16 bytes at a time */
      if (!px_resolve(w, in, l, dst + i, PTX_SPACE_GLOBAL, 16, true)) return;
    memcpy((void *)(uintptr_t)dst, b->shared + src, size);
  });
}

HANDLER(async_nop) {
  (void)w;
  (void)in;
  (void)m;
}

/* ---------------------------------------------------------------- lowering */

static bool is_addr(const struct ptx_operand *o) { return o->kind == PTX_OPND_ADDR; }

/* Address operand o as two slots, base and offset (px_address's base and immediate). */
static bool address_slots(struct px_lower *L, const struct ptx_operand *o, uint16_t *base, uint16_t *off) {
  struct px_ins t;
  memset(&t, 0, sizeof t);
  if (!px_address(L, o, &t)) return false;
  if (t.sym_local) {
    px_refuse(L, "an address in the thread's own stack cannot be used here");
    return false;
  }
  *base = t.a != PX_NONE ? t.a : px_const(L, 0);
  *off = px_const(L, (uint64_t)t.imm);
  return *base != PX_NONE && *off != PX_NONE;
}

/* The mbarrier (or destination) address operand o into a/imm; false after an error. */
static bool main_address(struct px_lower *L, const struct ptx_instr *pi, const struct ptx_operand *o,
                         struct px_ins *in) {
  if (!px_address(L, o, in)) return false;
  if (in->sym_local) {
    px_refuse(L, "an address in the thread's own stack cannot be used here");
    return false;
  }
  if (in->a == PX_NONE) in->a = px_const(L, 0);
  in->space = pi->space == PTX_SPACE_SHARED ? PTX_SPACE_SHARED : PTX_SPACE_GENERIC;
  return in->a != PX_NONE;
}

/* [dst], [src], cp-size{, src-size}{, ignore-src}{, cache-policy} */
static int lower_copy(struct px_lower *L, const struct ptx_instr *pi, struct px_ins *in) {
  unsigned n = pi->num_operands;
  bool hint = pi->text && strstr(pi->text, "cache_hint");
  if (hint) n--; /* the cache policy, last */
  if (n < 3 || n > 5 || !is_addr(&pi->opnd[0]) || !is_addr(&pi->opnd[1]) || pi->opnd[2].kind != PTX_OPND_IMM)
    return px_refuse(L, "cp.async takes [dst], [src], an immediate cp-size, then an optional src-size and ignore-src");
  if (pi->space != PTX_SPACE_SHARED) return px_refuse(L, "cp.async copies into .shared memory");
  int64_t size = pi->opnd[2].imm;
  if (size != 4 && size != 8 && size != 16)
    return px_refuse(L, "cp-size must be 4, 8 or 16, not %lld", (long long)size);
  if (pi->mode == PTX_CP_ASYNC_CG && size != 16) return px_refuse(L, "cp.async.cg copies 16 bytes");
  if (!main_address(L, pi, &pi->opnd[0], in) || !address_slots(L, &pi->opnd[1], &in->b, &in->e)) return -1;
  in->space = PTX_SPACE_SHARED;
  in->size = (uint8_t)size;
  for (unsigned i = 3; i < n; i++) {
    const struct ptx_operand *o = &pi->opnd[i];
    if (o->kind == PTX_OPND_REG && px_pred_reg(L, o) != PX_NONE) {
      if (in->pd2 != PX_NONE) return px_refuse(L, "two ignore-src predicates");
      in->pd2 = px_pred(L, o, &in->neg_c);
    } else if (i == 3 && (o->kind == PTX_OPND_REG || o->kind == PTX_OPND_IMM)) {
      in->c = px_value(L, o, PTX_T_U32);
    } else {
      return px_refuse(L, "operand %u: a src-size or an ignore-src predicate was expected", i + 1);
    }
  }
  in->fn = async_copy;
  return 1;
}

static int lower_cp(struct px_lower *L, const struct ptx_instr *pi, struct px_ins *in) {
  unsigned n = pi->num_operands;
  in->kind = pi->mode;
  switch (pi->mode) {
  case PTX_CP_ASYNC_CA:
  case PTX_CP_ASYNC_CG: return lower_copy(L, pi, in);
  case PTX_CP_ASYNC_COMMIT:
    if (n) return px_refuse(L, "cp.async.commit_group takes no operands");
    in->fn = async_commit;
    return 1;
  case PTX_CP_ASYNC_WAIT_GROUP:
    if (n != 1 || pi->opnd[0].kind != PTX_OPND_IMM || pi->opnd[0].imm < 0)
      return px_refuse(L, "cp.async.wait_group takes an immediate count of groups");
    in->imm = pi->opnd[0].imm;
    in->kind = 0;
    in->fn = async_wait;
    return 1;
  case PTX_CP_ASYNC_WAIT_ALL:
    if (n) return px_refuse(L, "cp.async.wait_all takes no operands");
    in->kind = 1;
    in->fn = async_wait;
    return 1;
  case PTX_CP_ASYNC_MBAR_ARRIVE:
  case PTX_CP_ASYNC_MBAR_ARRIVE_NOINC:
    if (n != 1 || !is_addr(&pi->opnd[0])) return px_refuse(L, "cp.async.mbarrier.arrive takes [mbarrier]");
    if (!main_address(L, pi, &pi->opnd[0], in)) return -1;
    in->fn = async_mbar_arrive;
    return 1;
  case PTX_CP_ASYNC_BULK: {
    bool group_op = pi->text && (strstr(pi->text, ".commit_group") || strstr(pi->text, ".wait_group"));
    if (group_op) { /* cp.async.bulk.commit_group, cp.async.bulk.wait_group[.read] N */
      bool wait = strstr(pi->text, ".wait_group") != NULL;
      if (n != (wait ? 1u : 0u) || (wait && (pi->opnd[0].kind != PTX_OPND_IMM || pi->opnd[0].imm < 0)))
        return px_refuse(L, wait ? "cp.async.bulk.wait_group takes an immediate count of groups"
                                 : "cp.async.bulk.commit_group takes no operands");
      in->fn = async_nop;
      return 1;
    }
    if (pi->space == PTX_SPACE_GLOBAL && pi->text && strstr(pi->text, ".bulk_group") &&
        !strstr(pi->text, "cache_hint") && !strstr(pi->text, "cp_mask")) {
      if (n != 3 || !is_addr(&pi->opnd[0]) || !is_addr(&pi->opnd[1]) || is_addr(&pi->opnd[2]))
        return px_refuse(L, "cp.async.bulk.global.shared::cta.bulk_group takes [dst], [src], size");
      if (!px_address(L, &pi->opnd[0], in) || !address_slots(L, &pi->opnd[1], &in->vd[0], &in->vd[1])) return -1;
      if (in->sym_local) return px_refuse(L, "an address in the thread's own stack cannot be used here");
      if (in->a == PX_NONE) in->a = px_const(L, 0);
      in->space = PTX_SPACE_GLOBAL;
      in->c = px_value(L, &pi->opnd[2], PTX_T_U32);
      in->fn = async_bulk_store;
      return 1;
    }
    bool plain = pi->text && strstr(pi->text, "shared::cluster.global.mbarrier::complete_tx::bytes") &&
                 !strstr(pi->text, "multicast") && !strstr(pi->text, "cache_hint");
    if (!plain) break;
    if (n != 4 || !is_addr(&pi->opnd[0]) || !is_addr(&pi->opnd[1]) || is_addr(&pi->opnd[2]) || !is_addr(&pi->opnd[3]))
      return px_refuse(L, "cp.async.bulk takes [dst], [src], size, [mbarrier]");
    if (!main_address(L, pi, &pi->opnd[0], in) || !address_slots(L, &pi->opnd[1], &in->vd[0], &in->vd[1]) ||
        !address_slots(L, &pi->opnd[3], &in->vd[2], &in->vd[3]))
      return -1;
    in->c = px_value(L, &pi->opnd[2], PTX_T_U32);
    in->fn = async_bulk;
    return 1;
  }
  default: break;
  }
  return px_unsupported(L, "this form of cp is not supported yet");
}

static int lower_mbarrier(struct px_lower *L, const struct ptx_instr *pi, struct px_ins *in) {
  unsigned n = pi->num_operands;
  const struct ptx_operand *o = pi->opnd;
  in->kind = pi->mode;
  switch (pi->mode) {
  case PTX_MBAR_INIT:
    if (n != 2 || !is_addr(&o[0]) || is_addr(&o[1])) return px_refuse(L, "mbarrier.init takes [mbarrier], count");
    if (!main_address(L, pi, &o[0], in)) return -1;
    in->b = px_value(L, &o[1], PTX_T_U32);
    in->fn = mbar_init;
    return 1;
  case PTX_MBAR_INVAL:
    if (n != 1 || !is_addr(&o[0])) return px_refuse(L, "mbarrier.inval takes [mbarrier]");
    if (!main_address(L, pi, &o[0], in)) return -1;
    in->fn = mbar_inval;
    return 1;
  case PTX_MBAR_ARRIVE:
  case PTX_MBAR_ARRIVE_DROP:
  case PTX_MBAR_ARRIVE_EXPECT_TX: {
    bool tx = pi->mode == PTX_MBAR_ARRIVE_EXPECT_TX;
    if (n < 2 || n > 3 || !is_addr(&o[1]) || (n == 3 && is_addr(&o[2])) || (tx && n != 3) ||
        (o[0].kind != PTX_OPND_REG && o[0].kind != PTX_OPND_SINK))
      return px_refuse(L, tx ? "mbarrier.arrive.expect_tx takes state, [mbarrier], tx-count"
                             : "mbarrier.arrive takes state, [mbarrier] and an optional count");
    if (!main_address(L, pi, &o[1], in)) return -1;
    if (o[0].kind == PTX_OPND_REG) in->d = px_value(L, &o[0], PTX_T_B64);
    in->b = n == 3 && !tx ? px_value(L, &o[2], PTX_T_U32) : px_const(L, 1);
    if (tx) in->c = px_value(L, &o[2], PTX_T_U32);
    in->fn = mbar_arrive;
    return 1;
  }
  case PTX_MBAR_EXPECT_TX:
  case PTX_MBAR_COMPLETE_TX:
    if (n != 2 || !is_addr(&o[0]) || is_addr(&o[1])) return px_refuse(L, "takes [mbarrier], tx-count");
    if (!main_address(L, pi, &o[0], in)) return -1;
    in->c = px_value(L, &o[1], PTX_T_U32);
    in->fn = mbar_tx;
    return 1;
  case PTX_MBAR_TEST_WAIT:
  case PTX_MBAR_TEST_WAIT_PARITY:
  case PTX_MBAR_TRY_WAIT:
  case PTX_MBAR_TRY_WAIT_PARITY: {
    bool trying = pi->mode == PTX_MBAR_TRY_WAIT || pi->mode == PTX_MBAR_TRY_WAIT_PARITY;
    if (n < 3 || n > 3u + trying || !is_addr(&o[1]) || is_addr(&o[2]) || (n == 4 && is_addr(&o[3])))
      return px_refuse(L, "takes a predicate, [mbarrier], the state or phase parity%s",
                       trying ? " and an optional time limit" : "");
    in->d = px_pred(L, &o[0], NULL);
    if (!main_address(L, pi, &o[1], in)) return -1;
    bool parity = pi->mode == PTX_MBAR_TEST_WAIT_PARITY || pi->mode == PTX_MBAR_TRY_WAIT_PARITY;
    in->b = px_value(L, &o[2], parity ? PTX_T_U32 : PTX_T_B64);
    in->ctl = PX_CTL_POLL;
    in->fn = mbar_wait;
    return 1;
  }
  case PTX_MBAR_PENDING_COUNT:
    if (n != 2 || o[0].kind != PTX_OPND_REG || is_addr(&o[1]))
      return px_refuse(L, "mbarrier.pending_count takes count, state");
    in->d = px_value(L, &o[0], PTX_T_U32);
    in->b = px_value(L, &o[1], PTX_T_B64);
    in->fn = mbar_pending_count;
    return 1;
  default: break;
  }
  return px_unsupported(L, "this form of mbarrier is not supported yet");
}

int px_lower_async(struct px_lower *L, const struct ptx_instr *pi, struct px_ins *in) {
  switch ((enum ptx_op)pi->op) {
  case PTX_OP_CP: return lower_cp(L, pi, in);
  case PTX_OP_MBARRIER: return lower_mbarrier(L, pi, in);
  default: return 0;
  }
}
