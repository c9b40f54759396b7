/* Race analysis: gcap_graph_find_races (API.md) and the simulator's check at instantiation. */
#include <string.h>

#include "race.h"

gcap_status gcap_graph_find_races(const gcap_graph *g, gcap_race *races, size_t *count) {
  GCAP_ENTER();
  return gcap__fail(GCAP_ERROR_NOT_SUPPORTED, "race analysis is not supported by this version of gcap");
}

static const struct gcap_graph *top_level(const struct gcap_graph *g) {
  while (g->owner) g = g->owner->graph;
  return g;
}

/* Index of the first recorded extent whose base is above p. */
static size_t recorded_upper_bound(const struct gcap_graph *g, uintptr_t p) {
  size_t lo = 0, hi = g->recorded_count;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (g->recorded[mid].base <= p) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

bool gcap__graph_extent_of(const struct gcap_graph *g, uintptr_t p, struct gcap__extent *out) {
  const struct gcap__allocation *a = gcap__find_allocation(g->ctx, (const void *)p);
  if (a) {
    *out = (struct gcap__extent){a->base, a->bytes};
    return true;
  }
  const struct gcap_graph *top = top_level(g);
  size_t i = recorded_upper_bound(top, p);
  if (i == 0 || p - top->recorded[i - 1].base >= top->recorded[i - 1].bytes) return false;
  *out = top->recorded[i - 1];
  return true;
}

int gcap__graph_record_extent(struct gcap_graph *g, struct gcap__extent e) {
  if (gcap__grow((void **)&g->recorded, &g->recorded_cap, g->recorded_count + 1, sizeof *g->recorded) != 0) return -1;
  size_t i = recorded_upper_bound(g, e.base);
  memmove(&g->recorded[i + 1], &g->recorded[i], (g->recorded_count - i) * sizeof *g->recorded);
  g->recorded[i] = e;
  g->recorded_count++;
  return 0;
}
