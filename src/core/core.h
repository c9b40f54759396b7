/*
 * The core as the layers above it see it (src/io: saved graphs and DOT output): the objects'
 * internals (internal.h, graph.h), the memory a graph owns (pool.h) and the extents its kernels
 * were recorded with (race.h). Only the core itself includes its other headers; backends enter
 * through backend.h.
 */
#ifndef GCAP_CORE_CORE_H
#define GCAP_CORE_CORE_H

#include "graph.h"
#include "internal.h"
#include "pool.h"
#include "race.h"

#endif
