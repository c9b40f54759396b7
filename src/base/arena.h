/*
 * Memory that lives as long as one graph: its nodes' dependency lists and kernel argument copies.
 * Pieces are carved from a few large blocks and all freed with them in one go, so building and
 * destroying a graph costs a handful of malloc calls instead of several per node. A piece given
 * back (a list that grew, a node destroyed) waits on its size class's free list for the next
 * request of that class.
 */
#ifndef GCAP_CORE_ARENA_H
#define GCAP_CORE_ARENA_H

#include <stddef.h>

#define GCAP__ARENA_CLASSES 48 /* 16 << 47 bytes: more than any request can be */

struct gcap__arena_block;

struct gcap__arena {
  struct gcap__arena_block *blocks; /* newest first */
  unsigned char *next, *end;        /* the free tail of the newest block */
  size_t block_bytes;               /* the size of the next block */
  void *free_list[GCAP__ARENA_CLASSES];
};

/* The bytes a request of `bytes` really gets (its size class): 16, 32, 64, ... */
size_t gcap__arena_class_bytes(size_t bytes);
/* A piece of at least `bytes` (16-byte aligned), or NULL when out of memory. */
void *gcap__arena_alloc(struct gcap__arena *a, size_t bytes);
/* Gives back a piece gcap__arena_alloc made for the same `bytes`. */
void gcap__arena_give_back(struct gcap__arena *a, void *p, size_t bytes);
/* Frees every block; the arena is empty and usable again. */
void gcap__arena_free_all(struct gcap__arena *a);

#endif
