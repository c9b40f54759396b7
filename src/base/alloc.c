#include "alloc.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static atomic_long fail_countdown = -1;
static atomic_long allocations_made = 0;
static atomic_bool armed; /* a test called gcap__alloc_fail_after: until then nothing is counted */

static int should_fail(void) {
  if (!atomic_load_explicit(&armed, memory_order_relaxed)) return 0; /* programs pay one plain load */
  atomic_fetch_add(&allocations_made, 1);
  long left = atomic_load(&fail_countdown);
  while (left >= 0) {
    if (left == 0) return 1;
    if (atomic_compare_exchange_weak(&fail_countdown, &left, left - 1)) return 0;
  }
  return 0;
}

long gcap__alloc_fail_after(long n) {
  atomic_store(&armed, true);
  atomic_store(&fail_countdown, n);
  return atomic_exchange(&allocations_made, 0);
}

void *gcap__aligned_alloc(size_t alignment, size_t bytes) {
  void *p = NULL;
  if (should_fail() || posix_memalign(&p, alignment, bytes ? bytes : 1) != 0) return NULL;
  return p;
}

void *gcap__malloc(size_t bytes) {
  if (should_fail()) return NULL;
  return malloc(bytes ? bytes : 1);
}

void *gcap__calloc(size_t count, size_t bytes) {
  if (should_fail()) return NULL;
  if (count == 0 || bytes == 0) return calloc(1, 1);
  return calloc(count, bytes);
}

void *gcap__realloc(void *p, size_t bytes) {
  if (should_fail()) return NULL;
  return realloc(p, bytes ? bytes : 1);
}

void gcap__free(void *p) { free(p); }

char *gcap__strdup(const char *s) {
  size_t n = strlen(s) + 1;
  char *copy = gcap__malloc(n);
  if (copy) memcpy(copy, s, n);
  return copy;
}

int gcap__grow(void **array, size_t *cap, size_t need, size_t elem) {
  if (need <= *cap) return 0;
  size_t next = *cap ? *cap : 4;
  while (next < need) {
    if (next > SIZE_MAX / 2) return -1;
    next *= 2;
  }
  if (next > SIZE_MAX / elem) return -1;
  void *grown = gcap__realloc(*array, next * elem);
  if (!grown) return -1;
  *array = grown;
  *cap = next;
  return 0;
}
