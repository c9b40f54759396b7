#ifndef GCAP_BENCH_PEER_H
#define GCAP_BENCH_PEER_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A peer task-graph library built beside gcap for same-run comparisons (oneTBB's flow graph). */
typedef struct peer_graph peer_graph;

/* "oneTBB flow graph" */
const char *peer_name(void);

/* Builds a graph of n tasks, each a 64-byte memset of buf + (i % 64) * 64 to 0 (buf >= 4096 bytes):
   fork_join false: one chain t0 -> t1 -> ...; fork_join true: a root, then `width` chains of the
   n tasks dealt round-robin (task i on chain i % width), all joined into one final node.
   Returns NULL when out of memory, when buf is NULL, or when fork_join is set and width < 1. */
peer_graph *peer_build(size_t n, int fork_join, int width, unsigned char *buf);

/* Runs every task once and waits for all; a graph may be run any number of times. */
void peer_run(peer_graph *g);

/* Frees the graph and all its nodes; NULL is allowed. */
void peer_destroy(peer_graph *g);

#ifdef __cplusplus
}
#endif

#endif
