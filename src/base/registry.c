#include "registry.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "alloc.h"

/*
 * Open addressing with linear probing. Every public call checks its handles here, so lookups take
 * no lock: writers (creation and destruction) serialize on a mutex, readers only load.
 *   - A removed key leaves a tombstone, never an empty slot, so no probe run a reader is walking
 *     is ever cut short; a live key never moves within a table. A new key takes the first
 *     tombstone of its run, so a handle destroyed and made again at the same address (a graph
 *     built and freed in a loop) does not grow the run.
 *   - When live keys and tombstones fill a third of the table, a table at least twice as large,
 *     holding the live keys only, is built and published at once. Old tables stay readable
 *     until the registry is empty, as a reader may still be probing one; each is at most half
 *     the next, so together they are smaller than the current one. A table never shrinks:
 *     one retired at the same size or smaller on every sweep would add up without bound.
 *     Tombstones are reused by the keys whose runs hold them, and malloc hands freed addresses
 *     out again, so the table follows the most handles ever alive, not how many were made.
 * A handle created before a check (happens-before, as any correct use of it is) is found in the
 * table the check loads; one destroyed before it is a tombstone there, or absent.
 */
#define TOMBSTONE ((uintptr_t)1)

struct slot {
  _Atomic uintptr_t key; /* 0 empty, TOMBSTONE, or a handle's address */
  _Atomic unsigned type;
};

struct table {
  size_t count;          /* a power of two */
  struct table *retired; /* older tables, kept for readers that loaded them */
  struct slot slots[];
};

static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic(struct table *) current;
static size_t used, tombstones; /* under the lock */
static atomic_ulong chunks;     /* entries of type GCAP__H_NODE_CHUNK */
static atomic_ulong live;

/* MurmurHash3's finalizer: handles are aligned (node chunks to 8 KiB), so every bit must mix. */
static size_t hash_of(uintptr_t key) {
  uint64_t x = (uint64_t)key;
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ULL;
  x ^= x >> 33;
  return (size_t)x;
}

/* The slot holding key, or the empty slot that ends its probe run. */
static struct slot *probe(struct table *t, uintptr_t key) {
  size_t mask = t->count - 1;
  for (size_t i = hash_of(key) & mask;; i = (i + 1) & mask) {
    uintptr_t k = atomic_load_explicit(&t->slots[i].key, memory_order_acquire);
    if (k == key || k == 0) return &t->slots[i];
  }
}

/* Writers: the slot holding key, else where it goes: the first tombstone of its run, or the empty slot ending it. */
static struct slot *slot_for(struct table *t, uintptr_t key) {
  size_t mask = t->count - 1;
  struct slot *grave = NULL;
  for (size_t i = hash_of(key) & mask;; i = (i + 1) & mask) {
    uintptr_t k = atomic_load_explicit(&t->slots[i].key, memory_order_relaxed);
    if (k == key) return &t->slots[i];
    if (k == TOMBSTONE && !grave) grave = &t->slots[i];
    if (k == 0) return grave ? grave : &t->slots[i];
  }
}

static void free_tables(struct table *t) {
  while (t) {
    struct table *older = t->retired;
    gcap__free(t);
    t = older;
  }
}

/* A table of new_count slots holding the live keys of the current one; published when complete. */
static int rehash(size_t new_count) {
  struct table *fresh = gcap__calloc(1, sizeof *fresh + new_count * sizeof(struct slot));
  if (!fresh) return -1;
  fresh->count = new_count;
  struct table *old = atomic_load_explicit(&current, memory_order_relaxed);
  for (size_t i = 0; old && i < old->count; i++) {
    uintptr_t k = atomic_load_explicit(&old->slots[i].key, memory_order_relaxed);
    if (k == 0 || k == TOMBSTONE) continue;
    struct slot *s = probe(fresh, k);
    atomic_store_explicit(&s->type, atomic_load_explicit(&old->slots[i].type, memory_order_relaxed),
                          memory_order_relaxed);
    atomic_store_explicit(&s->key, k, memory_order_relaxed);
  }
  fresh->retired = old;
  tombstones = 0;
  atomic_store_explicit(&current, fresh, memory_order_release);
  return 0;
}

int gcap__registry_add(const void *handle, enum gcap__handle_type type) {
  if (handle == NULL) return -1; /* 0 marks an empty slot */
  uintptr_t key = (uintptr_t)handle;
  int rc = 0;
  pthread_mutex_lock(&registry_lock);
  struct table *t = atomic_load_explicit(&current, memory_order_relaxed);
  if (!t || (used + tombstones + 1) * 3 > t->count) { /* short probe runs: at most a third full */
    size_t count = t ? t->count * 2 : 64;
    while ((used + 1) * 4 > count) count *= 2; /* live keys fill at most a quarter of it */
    rc = rehash(count);
    t = atomic_load_explicit(&current, memory_order_relaxed);
  }
  if (rc == 0) {
    struct slot *s = slot_for(t, key);
    uintptr_t was = atomic_load_explicit(&s->key, memory_order_relaxed);
    bool fresh = was != key;
    if (was == TOMBSTONE) tombstones--;
    atomic_store_explicit(&s->type, (unsigned)type, memory_order_relaxed);
    if (fresh) {
      used++;
      if (type == GCAP__H_NODE_CHUNK) atomic_fetch_add_explicit(&chunks, 1, memory_order_relaxed);
      else atomic_fetch_add_explicit(&live, 1, memory_order_relaxed);
      atomic_store_explicit(&s->key, key, memory_order_release);
    }
  }
  pthread_mutex_unlock(&registry_lock);
  return rc;
}

void gcap__registry_remove(const void *handle) {
  if (handle == NULL) return;
  uintptr_t key = (uintptr_t)handle;
  pthread_mutex_lock(&registry_lock);
  struct table *t = atomic_load_explicit(&current, memory_order_relaxed);
  struct slot *s = t ? probe(t, key) : NULL;
  if (s && atomic_load_explicit(&s->key, memory_order_relaxed) == key) {
    if (atomic_load_explicit(&s->type, memory_order_relaxed) == GCAP__H_NODE_CHUNK)
      atomic_fetch_sub_explicit(&chunks, 1, memory_order_relaxed);
    else atomic_fetch_sub_explicit(&live, 1, memory_order_relaxed);
    atomic_store_explicit(&s->key, TOMBSTONE, memory_order_release);
    used--;
    tombstones++;
    if (used == 0) { /* nothing left to look up: every table can go */
      atomic_store_explicit(&current, NULL, memory_order_release);
      free_tables(t);
      tombstones = 0;
    }
  }
  pthread_mutex_unlock(&registry_lock);
}

bool gcap__registry_has(const void *handle, enum gcap__handle_type type) {
  struct table *t = atomic_load_explicit(&current, memory_order_acquire);
  if (handle == NULL || !t) return false;
  struct slot *s = probe(t, (uintptr_t)handle);
  return atomic_load_explicit(&s->key, memory_order_relaxed) == (uintptr_t)handle &&
         atomic_load_explicit(&s->type, memory_order_relaxed) == (unsigned)type;
}

unsigned long gcap__registry_slots(void) {
  pthread_mutex_lock(&registry_lock);
  unsigned long slots = 0;
  for (struct table *t = atomic_load_explicit(&current, memory_order_relaxed); t; t = t->retired)
    slots += (unsigned long)t->count;
  pthread_mutex_unlock(&registry_lock);
  return slots;
}

unsigned long gcap__registry_size(void) { return atomic_load_explicit(&live, memory_order_relaxed); }
