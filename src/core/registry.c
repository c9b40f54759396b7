#include "registry.h"

#include <pthread.h>
#include <stdint.h>

#include "alloc.h"

/* Open addressing with linear probing and backward-shift deletion (no tombstones). */
struct slot {
  const void *key;
  enum gcap__handle_type type;
};

static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static struct slot *slots;
static size_t slot_count; /* a power of two, or 0 */
static size_t used;
static size_t chunks; /* entries of type GCAP__H_NODE_CHUNK */

static size_t hash_of(const void *key) {
  uint64_t x = (uint64_t)(uintptr_t)key;
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  return (size_t)x;
}

static size_t find_slot(const void *key) {
  size_t mask = slot_count - 1;
  size_t i = hash_of(key) & mask;
  while (slots[i].key != NULL && slots[i].key != key) i = (i + 1) & mask;
  return i;
}

static int rehash(size_t new_count) {
  struct slot *fresh = gcap__calloc(new_count, sizeof *fresh);
  if (!fresh) return -1;
  struct slot *old = slots;
  size_t old_count = slot_count;
  slots = fresh;
  slot_count = new_count;
  for (size_t i = 0; i < old_count; i++)
    if (old[i].key) slots[find_slot(old[i].key)] = old[i];
  gcap__free(old);
  return 0;
}

int gcap__registry_add(const void *handle, enum gcap__handle_type type) {
  if (handle == NULL) return -1; /* NULL marks an empty slot */
  int rc = 0;
  pthread_mutex_lock(&registry_lock);
  if ((used + 1) * 2 > slot_count) rc = rehash(slot_count ? slot_count * 2 : 64);
  if (rc == 0) {
    size_t i = find_slot(handle);
    if (slots[i].key == NULL) used++, chunks += type == GCAP__H_NODE_CHUNK;
    slots[i].key = handle;
    slots[i].type = type;
  }
  pthread_mutex_unlock(&registry_lock);
  return rc;
}

void gcap__registry_remove(const void *handle) {
  if (handle == NULL) return;
  pthread_mutex_lock(&registry_lock);
  if (slot_count) {
    size_t mask = slot_count - 1;
    size_t hole = find_slot(handle);
    if (slots[hole].key == handle) {
      chunks -= slots[hole].type == GCAP__H_NODE_CHUNK;
      slots[hole].key = NULL;
      used--;
      /* Shift later members of the probe run back so lookups never stop at the hole. */
      for (size_t j = (hole + 1) & mask; slots[j].key; j = (j + 1) & mask) {
        size_t home = hash_of(slots[j].key) & mask;
        bool movable = hole <= j ? (home <= hole || home > j) : (home <= hole && home > j);
        if (movable) {
          slots[hole] = slots[j];
          slots[j].key = NULL;
          hole = j;
        }
      }
      if (used == 0) {
        gcap__free(slots);
        slots = NULL;
        slot_count = 0;
      }
    }
  }
  pthread_mutex_unlock(&registry_lock);
}

bool gcap__registry_has(const void *handle, enum gcap__handle_type type) {
  if (handle == NULL) return false;
  pthread_mutex_lock(&registry_lock);
  bool live = false;
  if (slot_count) {
    const struct slot *s = &slots[find_slot(handle)];
    live = s->key == handle && s->type == type;
  }
  pthread_mutex_unlock(&registry_lock);
  return live;
}

unsigned long gcap__registry_size(void) {
  pthread_mutex_lock(&registry_lock);
  unsigned long n = (unsigned long)(used - chunks);
  pthread_mutex_unlock(&registry_lock);
  return n;
}
