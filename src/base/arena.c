#include "arena.h"

#include <stdint.h>
#include <string.h>

#include "alloc.h"

#if defined(__SANITIZE_ADDRESS__)
#define ARENA_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define ARENA_ASAN 1
#endif
#endif

#ifdef ARENA_ASAN
#include <sanitizer/asan_interface.h>
/* Pieces not handed out stay poisoned, so AddressSanitizer still sees overruns of a list. */
#define POISON(p, n) ASAN_POISON_MEMORY_REGION((p), (n))
#define UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION((p), (n))
#else
#define POISON(p, n) ((void)(p), (void)(n))
#define UNPOISON(p, n) ((void)(p), (void)(n))
#endif

#define FIRST_BLOCK 1024u
#define LARGEST_BLOCK (256u * 1024u)

struct gcap__arena_block {
  struct gcap__arena_block *next;
  size_t bytes; /* of the whole block, header included */
};
#define HEADER ((sizeof(struct gcap__arena_block) + 15u) / 16u * 16u)

static unsigned class_of(size_t bytes) {
  unsigned c = 0;
  while (((size_t)16 << c) < bytes) c++;
  return c;
}

size_t gcap__arena_class_bytes(size_t bytes) { return (size_t)16 << class_of(bytes); }

/* A new block for at least `piece` bytes; the rest of the current block is kept for nothing. */
static int new_block(struct gcap__arena *a, size_t piece) {
  size_t bytes = a->block_bytes ? a->block_bytes : FIRST_BLOCK;
  if (bytes - HEADER < piece) bytes = HEADER + piece;
  struct gcap__arena_block *b = gcap__malloc(bytes);
  if (!b) return -1;
  b->next = a->blocks;
  b->bytes = bytes;
  a->blocks = b;
  a->next = (unsigned char *)b + HEADER;
  a->end = (unsigned char *)b + bytes;
  POISON(a->next, (size_t)(a->end - a->next));
  if (a->block_bytes < LARGEST_BLOCK) a->block_bytes = a->block_bytes ? a->block_bytes * 2 : FIRST_BLOCK * 2;
  return 0;
}

void *gcap__arena_alloc(struct gcap__arena *a, size_t bytes) {
  if (bytes > ((size_t)16 << (GCAP__ARENA_CLASSES - 1))) return NULL;
  unsigned c = class_of(bytes);
  size_t piece = (size_t)16 << c;
  void *p = a->free_list[c];
  if (p) {
    UNPOISON(p, piece);
    memcpy(&a->free_list[c], p, sizeof(void *));
    return p;
  }
  if ((size_t)(a->end - a->next) < piece && new_block(a, piece) != 0) return NULL;
  p = a->next;
  a->next += piece;
  UNPOISON(p, piece);
  return p;
}

void gcap__arena_give_back(struct gcap__arena *a, void *p, size_t bytes) {
  if (!p) return;
  unsigned c = class_of(bytes);
  memcpy(p, &a->free_list[c], sizeof(void *));
  a->free_list[c] = p;
  POISON((unsigned char *)p + sizeof(void *), ((size_t)16 << c) - sizeof(void *));
}

void gcap__arena_free_all(struct gcap__arena *a) {
  while (a->blocks) {
    struct gcap__arena_block *b = a->blocks;
    a->blocks = b->next;
    UNPOISON(b, b->bytes);
    gcap__free(b);
  }
  memset(a, 0, sizeof *a);
}
