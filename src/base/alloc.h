/* The one internal allocator: every allocation goes through it so tests can make the N-th one fail. */
#ifndef GCAP_CORE_ALLOC_H
#define GCAP_CORE_ALLOC_H

#include <stddef.h>

void *gcap__malloc(size_t bytes);
void *gcap__calloc(size_t count, size_t bytes);
void *gcap__realloc(void *p, size_t bytes);
/* `bytes` at an address aligned to `alignment` (a power of two); free with gcap__free. */
void *gcap__aligned_alloc(size_t alignment, size_t bytes);
void gcap__free(void *p);
char *gcap__strdup(const char *s);

/*
 * Fault injection for tests: after `n` more successful allocations every allocation fails
 * (n < 0 disables). Returns how many allocations have been made since the last call (counting
 * starts with the first call: a program that never calls it pays nothing for it).
 */
long gcap__alloc_fail_after(long n);

/* Grows *array (of elem bytes each) so it holds at least `need` elements; 0 or -1 on OOM. */
int gcap__grow(void **array, size_t *cap, size_t need, size_t elem);

#endif
