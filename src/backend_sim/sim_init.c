/*
 * What the INIT check knows of device memory: a bit per byte of each device allocation made while
 * the check is on, set by copies, fills and PTX stores. Memory the simulator cannot follow counts
 * as written, so that the check never reports a byte a program did write: page-locked host memory
 * (host code writes it), graph allocations, and everything once a CPU implementation of a kernel
 * or a host function has run (they write through plain pointers).
 */
#include <stdatomic.h>
#include <string.h>

#include "base/alloc.h"
#include "sim_internal.h"

struct sim_init_entry {
  uintptr_t base;
  size_t bytes;
  unsigned char *bits;
};

/* The entries, sorted by base; replaced rather than changed while a kernel may read it. */
struct sim_init_table {
  struct sim_init_table *next_retired;
  size_t count, cap;
  struct sim_init_entry items[];
};

/*
 * Kernels running with the context lock released (sim_kernel.c) read the table without the lock:
 * while one does, a change makes a new table, and the old one waits in `retired` until none runs.
 * Bits are set with atomics by kernels and work alike.
 */
struct sim_init_map {
  struct sim_init_table *_Atomic table;
  struct sim_init_table *retired;
};

static bool tracking(const struct sim_context *sc) { return sc->options.checks & GCAP_SIM_CHECK_INIT; }

static struct sim_init_table *table_of(const struct sim_init_map *m) {
  return m ? atomic_load_explicit(&((struct sim_init_map *)m)->table, memory_order_acquire) : NULL;
}

static size_t first_above(const struct sim_init_table *t, uintptr_t p) {
  size_t lo = 0, hi = t ? t->count : 0;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (t->items[mid].base <= p) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

static struct sim_init_entry *find(const struct sim_init_map *m, uintptr_t p) {
  struct sim_init_table *t = table_of(m);
  size_t i = first_above(t, p);
  if (i == 0) return NULL;
  struct sim_init_entry *e = &t->items[i - 1];
  return p - e->base < e->bytes ? e : NULL;
}

static void free_retired(struct sim_init_map *m) {
  while (m->retired) {
    struct sim_init_table *t = m->retired;
    m->retired = t->next_retired;
    gcap__free(t);
  }
}

/* A table with room for `count` entries holding the current ones: the current table itself when no kernel reads it. */
static struct sim_init_table *writable(struct sim_context *sc, size_t count) {
  struct sim_init_map *m = sc->init;
  struct sim_init_table *t = table_of(m);
  bool shared = sc->kernels_out > 0;
  if (!shared) free_retired(m);
  if (t && !shared && count <= t->cap) return t;
  size_t cap = t && t->cap * 2 >= count ? t->cap * 2 : count + 8;
  struct sim_init_table *n = gcap__malloc(sizeof *n + cap * sizeof n->items[0]);
  if (!n) return NULL;
  n->next_retired = NULL;
  n->cap = cap;
  n->count = t ? t->count : 0;
  if (t) memcpy(n->items, t->items, t->count * sizeof t->items[0]);
  atomic_store_explicit(&m->table, n, memory_order_release);
  if (t && shared) {
    t->next_retired = m->retired;
    m->retired = t;
  } else {
    gcap__free(t);
  }
  return n;
}

/* While a kernel reads the table, entries are put in place with the table already complete (a copy). */
gcap_status sim_init_track(struct sim_context *sc, void *p, size_t bytes, bool written) {
  if (!tracking(sc)) return GCAP_SUCCESS;
  struct sim_init_map *m = sc->init;
  if (!m && !(m = sc->init = gcap__calloc(1, sizeof *m))) goto oom;
  unsigned char *bits = gcap__calloc((bytes + 7) / 8 + 1, 1);
  if (!bits) goto oom;
  if (sc->kernels_out > 0) { /* build the new table whole, then publish it */
    struct sim_init_table *t = table_of(m);
    size_t count = t ? t->count : 0, i = first_above(t, (uintptr_t)p);
    struct sim_init_table *n = gcap__malloc(sizeof *n + (count + 8) * sizeof n->items[0]);
    if (!n) {
      gcap__free(bits);
      goto oom;
    }
    if (written) memset(bits, 0xff, (bytes + 7) / 8);
    n->next_retired = NULL;
    n->cap = count + 8;
    n->count = count + 1;
    if (t) memcpy(n->items, t->items, i * sizeof t->items[0]);
    n->items[i] = (struct sim_init_entry){(uintptr_t)p, bytes, bits};
    if (t) memcpy(&n->items[i + 1], &t->items[i], (count - i) * sizeof t->items[0]);
    atomic_store_explicit(&m->table, n, memory_order_release);
    if (t) {
      t->next_retired = m->retired;
      m->retired = t;
    }
    return GCAP_SUCCESS;
  }
  struct sim_init_table *t = writable(sc, (table_of(m) ? table_of(m)->count : 0) + 1);
  if (!t) {
    gcap__free(bits);
    goto oom;
  }
  if (written) memset(bits, 0xff, (bytes + 7) / 8);
  size_t i = first_above(t, (uintptr_t)p);
  memmove(&t->items[i + 1], &t->items[i], (t->count - i) * sizeof *t->items);
  t->items[i] = (struct sim_init_entry){(uintptr_t)p, bytes, bits};
  t->count++;
  return GCAP_SUCCESS;
oom:
  return GCAP_ERROR_OUT_OF_MEMORY;
}

/* Memory is freed only while no kernel runs (frees wait for them): the table changes in place. */
void sim_init_forget(struct sim_context *sc, const void *p) {
  struct sim_init_map *m = sc->init;
  struct sim_init_entry *e = find(m, (uintptr_t)p);
  if (!e) return;
  struct sim_init_table *t = table_of(m);
  gcap__free(e->bits);
  size_t i = (size_t)(e - t->items);
  memmove(e, e + 1, (t->count - i - 1) * sizeof *e);
  t->count--;
}

static void set_bits(unsigned char *bits, size_t from, size_t n) {
  for (size_t i = from; i < from + n; i++) bits[i / 8] |= (unsigned char)(1u << (i % 8));
}

void sim_init_mark(struct sim_context *sc, const void *p, size_t bytes) {
  struct sim_init_entry *e = find(sc->init, (uintptr_t)p);
  if (!e || bytes == 0) return;
  size_t from = (uintptr_t)p - e->base;
  set_bits(e->bits, from, bytes > e->bytes - from ? e->bytes - from : bytes);
}

void sim_init_mark_copy(struct sim_context *sc, const struct gcap__copy *c) {
  if (!sc->init) return;
  const struct gcap__copy_shape *s = c->shape;
  if (!s) {
    sim_init_mark(sc, c->dst, c->bytes);
    return;
  }
  for (size_t r = 0; r < s->height * s->depth; r++)
    sim_init_mark(sc, (unsigned char *)c->dst + gcap__copy_row_offset(r, s->height, s->dst_pitch, s->dst_rows),
                  c->bytes);
}

void sim_init_mark_fill(struct sim_context *sc, const struct gcap__fill *f) {
  if (!sc->init) return;
  for (size_t r = 0; r < f->height; r++)
    sim_init_mark(sc, (unsigned char *)f->dst + r * f->pitch, f->width * f->element_size);
}

void sim_init_mark_all(struct sim_context *sc) {
  struct sim_init_table *t = table_of(sc->init);
  for (size_t i = 0; t && i < t->count; i++) memset(t->items[i].bits, 0xff, (t->items[i].bytes + 7) / 8);
}

unsigned char *sim_init_bits(void *ctx, uintptr_t base) {
  struct sim_init_entry *e = find(((struct sim_context *)ctx)->init, base);
  return e && e->base == base ? e->bits : NULL;
}

void sim_init_destroy(struct sim_context *sc) {
  struct sim_init_map *m = sc->init;
  struct sim_init_table *t = table_of(m);
  for (size_t i = 0; t && i < t->count; i++) gcap__free(t->items[i].bits);
  if (m) free_retired(m);
  gcap__free(t);
  gcap__free(m);
  sc->init = NULL;
}
