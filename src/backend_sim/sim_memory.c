/*
 * Strict memory (gcap_sim_options.strict_memory): device memory that host code cannot touch.
 *
 * Device allocations come from reserved mappings, regions, that stay PROT_NONE except while the
 * simulator runs work (sim_work_begin .. sim_work_end), so that a host dereference of a device
 * pointer faults as it does on a GPU. A unit of work opens the used part of every region, or,
 * for an eager copy or fill, only the memory it touches. A region is either a chunk that many
 * allocations share or, for an allocation larger than a chunk, a mapping of its own. Inside a
 * chunk, extents tile the mapping in address order: allocation takes the first free extent large
 * enough (first fit), freeing merges an extent with its free neighbours and gives whole free
 * pages back to the kernel (MADV_DONTNEED), so memory does not grow with churn. The bookkeeping
 * lives outside the regions, in ordinary memory, where the host may read it at any time.
 *
 * Every call comes with the core's context lock held, and each context has its own regions.
 */
#include <assert.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/error.h"
#include "sim_internal.h"

#define SIM_ALIGN ((size_t)256) /* as cuMemAlloc */
/* A transparent huge page. Protection changes cover whole ones, so that they never split one. */
#define SIM_HUGE ((size_t)2 << 20)
/* Chunks start small, so that tests with many contexts reserve little, and double up to a maximum. */
#define SIM_CHUNK_MIN ((size_t)64 << 20)
#define SIM_CHUNK_MAX ((size_t)1 << 30)

struct sim_extent {
  size_t offset, bytes;
  bool used;
};

struct sim_region {
  struct sim_region *next;
  unsigned char *base;
  size_t bytes;
  bool dedicated;             /* one allocation's own mapping: unmapped when it is freed */
  size_t free_bytes;          /* lets a search skip a full chunk at once */
  size_t opened;              /* [base, base + opened) is readable and writable now */
  struct sim_extent *extents; /* tile [0, bytes) in address order; no two free ones are neighbours */
  size_t count, cap;
};

static size_t page_bytes(void) { return (size_t)sysconf(_SC_PAGESIZE); }

static size_t round_up(size_t n, size_t to) { return (n + to - 1) / to * to; }

/*
 * Changing the protection of whole pages of a mapping we made fails only when the kernel runs
 * out of memory for its own structures; the work would then fault, or the check silently lapse,
 * so stop.
 */
static void protect(unsigned char *p, size_t bytes, bool open) {
  if (bytes == 0 || mprotect(p, bytes, open ? PROT_READ | PROT_WRITE : PROT_NONE) == 0) return;
  fprintf(stderr, "gcap simulator: strict memory: mprotect of %zu bytes of device memory failed (%s)\n", bytes,
          strerror(errno));
  abort();
}

/* Where the last allocation of r ends, rounded up to a huge page: what opening r opens. */
static size_t used_end(const struct sim_region *r) {
  const struct sim_extent *last = &r->extents[r->count - 1];
  size_t end = round_up(last->used ? r->bytes : last->offset, SIM_HUGE);
  return end < r->bytes ? end : r->bytes;
}

static void open_region(struct sim_region *r) {
  size_t end = used_end(r);
  if (end <= r->opened) return;
  protect(r->base + r->opened, end - r->opened, true);
  r->opened = end;
}

static void close_region(struct sim_region *r) {
  protect(r->base, r->opened, false);
  r->opened = 0;
}

/* The size of the next chunk: twice the last one while chunks are alive, up to SIM_CHUNK_MAX. */
static size_t chunk_bytes(const struct sim_memory *m) {
  size_t bytes = SIM_CHUNK_MIN;
  for (size_t i = 0; i < m->chunks && bytes < SIM_CHUNK_MAX; i++) bytes *= 2;
  return bytes;
}

/*
 * A chunk is mostly unused, so it reserves address space only (MAP_NORESERVE). A dedicated
 * region is all one allocation, so it is charged against the commit limit like malloc'd memory;
 * the kernel does that when a mapping first becomes writable, so it is made writable once here:
 * an allocation the system cannot back fails now, as a too large cuMemAlloc does, and never in
 * sim_work_begin. (Under strict overcommit, which ignores MAP_NORESERVE, a chunk is charged as
 * it is opened, and an open the system refuses stops the process in protect.)
 */
static void *map_region(size_t bytes, bool dedicated) {
  int flags = MAP_PRIVATE | MAP_ANONYMOUS | (dedicated ? 0 : MAP_NORESERVE);
  void *base = mmap(NULL, bytes, PROT_NONE, flags, -1, 0);
  if (base == MAP_FAILED) return NULL;
#ifdef MADV_HUGEPAGE
  /*
   * An mprotect costs in proportion to the page table entries it rewrites: ~45 ns per resident
   * 4 KiB page per open and close, one entry per 2 MiB with transparent huge pages. Without THP
   * in the kernel this fails, harmlessly.
   */
  madvise(base, bytes, MADV_HUGEPAGE);
#endif
  if (!dedicated) return base;
  if (mprotect(base, bytes, PROT_READ | PROT_WRITE) == 0 && mprotect(base, bytes, PROT_NONE) == 0) return base;
  int saved = errno;
  munmap(base, bytes);
  errno = saved;
  return NULL;
}

static void region_free(struct sim_region *r) {
  munmap(r->base, r->bytes);
  gcap__free(r->extents);
  gcap__free(r);
}

/* A closed region that is one free extent. */
static gcap_status region_new(size_t bytes, bool dedicated, struct sim_region **out) {
  struct sim_region *r = gcap__calloc(1, sizeof *r);
  struct sim_extent *e = gcap__calloc(4, sizeof *e);
  if (!r || !e) {
    gcap__free(r);
    gcap__free(e);
    return gcap__fail(GCAP_ERROR_OUT_OF_MEMORY, "no memory for the simulator's device memory bookkeeping");
  }
  unsigned char *base = map_region(bytes, dedicated);
  if (!base) {
    int err = errno;
    gcap__free(r);
    gcap__free(e);
    return gcap__fail(GCAP_ERROR_OUT_OF_MEMORY, "the simulator could not reserve %zu bytes of device memory (%s)",
                      bytes, strerror(err));
  }
  *r = (struct sim_region){
      .base = base, .bytes = bytes, .dedicated = dedicated, .free_bytes = bytes, .extents = e, .count = 1, .cap = 4};
  e[0] = (struct sim_extent){0, bytes, false};
  *out = r;
  return GCAP_SUCCESS;
}

/* The first free extent of at least `bytes`, or r->count. */
static size_t first_fit(const struct sim_region *r, size_t bytes) {
  size_t i = 0;
  while (i < r->count && (r->extents[i].used || r->extents[i].bytes < bytes)) i++;
  return i;
}

/* Takes the front `bytes` of free extent i; its rest stays free. Fails (changing nothing) only for bookkeeping. */
static gcap_status take(struct sim_region *r, size_t i, size_t bytes, void **out) {
  struct sim_extent *e = &r->extents[i];
  if (e->bytes > bytes) {
    if (gcap__grow((void **)&r->extents, &r->cap, r->count + 1, sizeof *r->extents) != 0)
      return gcap__fail(GCAP_ERROR_OUT_OF_MEMORY, "no memory for the simulator's device memory bookkeeping");
    e = &r->extents[i];
    memmove(e + 2, e + 1, (r->count - i - 1) * sizeof *e);
    e[1] = (struct sim_extent){e->offset + bytes, e->bytes - bytes, false};
    e->bytes = bytes;
    r->count++;
  }
  e->used = true;
  r->free_bytes -= bytes;
  *out = r->base + e->offset;
  return GCAP_SUCCESS;
}

static void remove_extent(struct sim_region *r, size_t i) {
  memmove(&r->extents[i], &r->extents[i + 1], (r->count - i - 1) * sizeof *r->extents);
  r->count--;
}

/*
 * Gives back the whole pages of the merged free extent m that lie in the huge pages the freed
 * block [offset, offset + bytes) overlapped. Other free pages went back when they became free;
 * a huge page may since have brought free neighbours of a live block back in, which its free
 * gives back.
 */
static void release_pages(const struct sim_region *r, const struct sim_extent *m, size_t offset, size_t bytes) {
  uintptr_t base = (uintptr_t)r->base, page = page_bytes();
  uintptr_t lo = round_up(base + m->offset, page), hi = (base + m->offset + m->bytes) & ~(page - 1);
  uintptr_t near_lo = (base + offset) & ~(SIM_HUGE - 1), near_hi = round_up(base + offset + bytes, SIM_HUGE);
  if (near_lo > lo) lo = near_lo;
  if (near_hi < hi) hi = near_hi;
  if (hi > lo) madvise(r->base + (lo - base), hi - lo, MADV_DONTNEED);
}

/* Frees extent i and merges it with its free neighbours. */
static void give_back(struct sim_region *r, size_t i) {
  struct sim_extent freed = r->extents[i];
  r->extents[i].used = false;
  r->free_bytes += freed.bytes;
  if (i + 1 < r->count && !r->extents[i + 1].used) {
    r->extents[i].bytes += r->extents[i + 1].bytes;
    remove_extent(r, i + 1);
  }
  if (i > 0 && !r->extents[i - 1].used) {
    r->extents[i - 1].bytes += r->extents[i].bytes;
    remove_extent(r, i--);
  }
  release_pages(r, &r->extents[i], freed.offset, freed.bytes);
}

/* The extent starting at `offset` (binary search), or r->count. */
static size_t extent_at(const struct sim_region *r, size_t offset) {
  size_t lo = 0, hi = r->count;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (r->extents[mid].offset < offset) lo = mid + 1;
    else hi = mid;
  }
  return lo < r->count && r->extents[lo].offset == offset ? lo : r->count;
}

/* A fresh region for an allocation no chunk can hold: a chunk, or its own when it is larger than one. */
static gcap_status alloc_in_new_region(struct sim_memory *m, size_t bytes, void **out) {
  size_t chunk = chunk_bytes(m);
  bool dedicated = bytes > chunk;
  struct sim_region *r = NULL;
  gcap_status st = region_new(dedicated ? round_up(bytes, page_bytes()) : chunk, dedicated, &r);
  if (st == GCAP_SUCCESS) st = take(r, 0, bytes, out);
  if (st != GCAP_SUCCESS) {
    if (r) region_free(r);
    return st;
  }
  r->next = m->regions;
  m->regions = r;
  if (!dedicated) m->chunks++;
  return GCAP_SUCCESS;
}

/* Allocations and frees never happen while work runs (the core refuses them in host functions). */
gcap_status sim_device_alloc(struct sim_context *sc, size_t bytes, void **out) {
  struct sim_memory *m = &sc->mem;
  assert(m->depth == 0);
  if (bytes > SIZE_MAX / 2)
    return gcap__fail(GCAP_ERROR_OUT_OF_MEMORY, "the simulator could not reserve %zu bytes of device memory", bytes);
  size_t need = round_up(bytes ? bytes : 1, SIM_ALIGN);
  for (struct sim_region *r = m->regions; r; r = r->next) {
    if (r->dedicated || r->free_bytes < need) continue;
    size_t i = first_fit(r, need);
    if (i < r->count) return take(r, i, need, out);
  }
  return alloc_in_new_region(m, need, out);
}

/* An empty region goes back to the system, except the last chunk, which stays for the next allocations. */
static void drop_if_empty(struct sim_memory *m, struct sim_region **link) {
  struct sim_region *r = *link;
  if (r->free_bytes != r->bytes || (!r->dedicated && m->chunks == 1)) return;
  *link = r->next;
  if (!r->dedicated) m->chunks--;
  region_free(r);
}

void sim_device_free(struct sim_context *sc, void *p) {
  struct sim_memory *m = &sc->mem;
  assert(m->depth == 0);
  struct sim_region **link = &m->regions;
  while (*link && (uintptr_t)p - (uintptr_t)(*link)->base >= (*link)->bytes) link = &(*link)->next;
  if (!*link) return; /* the core frees only what it was given */
  size_t i = extent_at(*link, (size_t)((unsigned char *)p - (*link)->base));
  if (i == (*link)->count || !(*link)->extents[i].used) return;
  give_back(*link, i);
  drop_if_empty(m, link);
}

void sim_discard_pages(void *p, size_t bytes) {
  uintptr_t page = page_bytes(), lo = round_up((uintptr_t)p, page), hi = ((uintptr_t)p + bytes) & ~(page - 1);
  if (hi > lo) madvise((void *)lo, hi - lo, MADV_DONTNEED); /* whole pages only: the rest may be a neighbour's */
}

void sim_memory_destroy(struct sim_context *sc) {
  while (sc->mem.regions) {
    struct sim_region *r = sc->mem.regions;
    sc->mem.regions = r->next;
    region_free(r);
  }
  sc->mem.chunks = 0;
}

/* ------------------------------------------------------------ opening and closing */

static struct sim_region *region_of(const struct sim_memory *m, const void *p) {
  struct sim_region *r = m->regions;
  while (r && (uintptr_t)p - (uintptr_t)r->base >= r->bytes) r = r->next;
  return r;
}

bool sim_device_owns(const struct sim_context *sc, const void *p) { return region_of(&sc->mem, p) != NULL; }

/* Opens the huge pages of [p, p + bytes) that are in a region (none when p is host or managed memory). */
static void open_span(struct sim_memory *m, const void *p, size_t bytes) {
  struct sim_region *r = region_of(m, p);
  if (!r) return;
  uintptr_t base = (uintptr_t)r->base, end = base + r->bytes;
  uintptr_t lo = (uintptr_t)p & ~(uintptr_t)(SIM_HUGE - 1);
  uintptr_t hi = ((uintptr_t)p + bytes + SIM_HUGE - 1) & ~(uintptr_t)(SIM_HUGE - 1);
  if (lo < base) lo = base;
  if (hi > end) hi = end;
  protect(r->base + (lo - base), hi - lo, true);
  m->spans[m->span_count++] = (struct sim_span){r->base + (lo - base), hi - lo};
}

static void open_all(struct sim_memory *m) {
  for (struct sim_region *r = m->regions; r; r = r->next) open_region(r);
  m->narrow = false;
}

static void close_open(struct sim_memory *m) {
  if (!m->narrow) {
    for (struct sim_region *r = m->regions; r; r = r->next) close_region(r);
    return;
  }
  for (unsigned i = 0; i < m->span_count; i++) protect(m->spans[i].base, m->spans[i].bytes, false);
  m->span_count = 0;
  m->narrow = false;
}

/* The bytes a fill writes, from its first to its last. */
static size_t fill_extent(const struct gcap__fill *f) {
  return (f->height - 1) * f->pitch + f->width * f->element_size;
}

/*
 * An eager copy or fill touches only its own ranges: opening those alone costs two small
 * mprotect calls whatever the context holds. Anything else may touch any device memory.
 */
void sim_work_begin_for(struct sim_context *sc, const struct gcap__copy *c, const struct gcap__fill *f) {
  struct sim_memory *m = &sc->mem;
  if (!sc->options.strict_memory) return;
  if (m->depth++ > 0) { /* work inside work: everything must be open */
    if (m->narrow) {
      close_open(m);
      open_all(m);
    }
    return;
  }
  m->narrow = c || f;
  if (c) {
    open_span(m, c->dst, gcap__copy_span(c, 1));
    open_span(m, c->src, gcap__copy_span(c, 0));
  } else if (f) {
    open_span(m, f->dst, fill_extent(f));
  } else {
    open_all(m);
  }
}

void sim_work_begin(struct sim_context *sc) { sim_work_begin_for(sc, NULL, NULL); }

void sim_work_end(struct sim_context *sc) {
  if (sc->options.strict_memory && --sc->mem.depth == 0) close_open(&sc->mem);
}

unsigned sim_work_pause(struct sim_context *sc) {
  unsigned depth = sc->mem.depth;
  if (depth == 0) return 0;
  close_open(&sc->mem);
  sc->mem.depth = 0;
  return depth;
}

/* Host functions run inside work that opened everything, so everything opens again. */
void sim_work_resume(struct sim_context *sc, unsigned depth) {
  if (depth == 0) return;
  sc->mem.depth = depth;
  open_all(&sc->mem);
}
