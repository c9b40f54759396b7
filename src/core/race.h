/* Race analysis (race.c): pairs of unordered nodes whose byte ranges overlap, one writing. */
#ifndef GCAP_CORE_RACE_H
#define GCAP_CORE_RACE_H

#include "graph.h"

/*
 * The allocation holding address p: a live allocation of g's context, or else one the
 * top-level graph above g recorded when it was loaded from a file. False when neither has it.
 */
bool gcap__graph_extent_of(const struct gcap_graph *g, uintptr_t p, struct gcap__extent *out);

/*
 * Adds an allocation extent to a top-level graph's recorded set (the loader calls it for each
 * allocation in the file); kept sorted by base. Nonzero when out of memory.
 */
int gcap__graph_record_extent(struct gcap_graph *g, struct gcap__extent e);

/*
 * The races of g (children included), deduplicated, sorted by (first, second) creation order.
 * *out is gcap__malloc'ed (NULL when none); on failure the message is set and nothing is left.
 */
gcap_status gcap__find_races(const struct gcap_graph *g, gcap_race **out, size_t *count);

/* The simulator's check_races: INVALID_VALUE naming the first race when g has any. */
gcap_status gcap__check_no_races(const struct gcap_graph *g);

#endif
