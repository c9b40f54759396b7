/*
 * What the INIT check knows of device memory: a bit per byte of each device allocation made while
 * the check is on, set by copies, fills and PTX stores. Memory the simulator cannot follow counts
 * as written, so that the check never reports a byte a program did write: page-locked host memory
 * (host code writes it), graph allocations, and everything once a CPU implementation of a kernel
 * or a host function has run (they write through plain pointers).
 */
#include <string.h>

#include "alloc.h"
#include "sim_internal.h"

struct sim_init_entry {
  uintptr_t base;
  size_t bytes;
  unsigned char *bits;
};

struct sim_init_map {
  struct sim_init_entry *items; /* sorted by base */
  size_t count, cap;
};

static bool tracking(const struct sim_context *sc) { return sc->options.checks & GCAP_SIM_CHECK_INIT; }

static size_t first_above(const struct sim_init_map *m, uintptr_t p) {
  size_t lo = 0, hi = m->count;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (m->items[mid].base <= p) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

static struct sim_init_entry *find(const struct sim_init_map *m, uintptr_t p) {
  size_t i = m ? first_above(m, p) : 0;
  if (i == 0) return NULL;
  struct sim_init_entry *e = &m->items[i - 1];
  return p - e->base < e->bytes ? e : NULL;
}

gcap_status sim_init_track(struct sim_context *sc, void *p, size_t bytes, bool written) {
  if (!tracking(sc)) return GCAP_SUCCESS;
  struct sim_init_map *m = sc->init;
  if (!m && !(m = sc->init = gcap__calloc(1, sizeof *m))) goto oom;
  unsigned char *bits = gcap__calloc((bytes + 7) / 8 + 1, 1);
  if (!bits || gcap__grow((void **)&m->items, &m->cap, m->count + 1, sizeof *m->items) != 0) {
    gcap__free(bits);
    goto oom;
  }
  if (written) memset(bits, 0xff, (bytes + 7) / 8);
  size_t i = first_above(m, (uintptr_t)p);
  memmove(&m->items[i + 1], &m->items[i], (m->count - i) * sizeof *m->items);
  m->items[i] = (struct sim_init_entry){(uintptr_t)p, bytes, bits};
  m->count++;
  return GCAP_SUCCESS;
oom:
  return GCAP_ERROR_OUT_OF_MEMORY;
}

void sim_init_forget(struct sim_context *sc, const void *p) {
  struct sim_init_map *m = sc->init;
  struct sim_init_entry *e = find(m, (uintptr_t)p);
  if (!e) return;
  gcap__free(e->bits);
  size_t i = (size_t)(e - m->items);
  memmove(e, e + 1, (m->count - i - 1) * sizeof *e);
  m->count--;
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
  struct sim_init_map *m = sc->init;
  for (size_t i = 0; m && i < m->count; i++) memset(m->items[i].bits, 0xff, (m->items[i].bytes + 7) / 8);
}

unsigned char *sim_init_bits(void *ctx, uintptr_t base) {
  struct sim_init_entry *e = find(((struct sim_context *)ctx)->init, base);
  return e && e->base == base ? e->bits : NULL;
}

void sim_init_destroy(struct sim_context *sc) {
  struct sim_init_map *m = sc->init;
  for (size_t i = 0; m && i < m->count; i++) gcap__free(m->items[i].bits);
  if (m) gcap__free(m->items);
  gcap__free(m);
  sc->init = NULL;
}
