/* Simulator extras: options for contexts on GCAP_BACKEND_SIM and its counters. */
#ifndef GCAP_SIM_H
#define GCAP_SIM_H

#include <gcap/gcap.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum gcap_sim_order {
  GCAP_SIM_ORDER_CAPTURE = 0, /* a fixed topological order (creation order where edges allow) */
  GCAP_SIM_ORDER_SHUFFLE = 1  /* a seeded random topological order per launch */
} gcap_sim_order;

typedef struct gcap_sim_options {
  gcap_sim_order order;
  uint64_t seed;
  bool check_races; /* instantiate fails (INVALID_VALUE) when gcap_graph_find_races finds any */
  FILE *trace;      /* NULL, or a stream for a Chrome trace-event JSON of executed work */
} gcap_sim_options;

/** CAPTURE order, seed 0, no race check, no trace. */
GCAP_API void gcap_sim_options_init(gcap_sim_options *o);

typedef struct gcap_sim_stats {
  uint64_t graph_launches, nodes_executed, kernels_executed, kernels_stubbed, bytes_copied, bytes_set, host_calls;
} gcap_sim_stats;

/**
 * The simulator's counters since the context was created. nodes_executed counts graph
 * nodes run by launches; the other counters include eager work too. NOT_SUPPORTED on CUDA.
 */
GCAP_API gcap_status gcap_sim_get_stats(const gcap_context *ctx, gcap_sim_stats *out);

#ifdef __cplusplus
}
#endif

#endif /* GCAP_SIM_H */
