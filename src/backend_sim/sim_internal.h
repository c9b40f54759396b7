/* The CPU simulator: a model of a GPU that executes stream work on the calling thread. */
#ifndef GCAP_SIM_INTERNAL_H
#define GCAP_SIM_INTERNAL_H

#include "backend.h"

#define SIM_SHARED_MEM_BYTES 49152u

struct sim_context {
  struct gcap__backend_ctx base; /* first: the core holds a pointer to it */
  gcap_sim_options options;
  gcap_sim_stats stats;
  unsigned char *shared_mem; /* one block's dynamic shared memory; blocks run one at a time */
  uint64_t rng;              /* SHUFFLE: advances across launches, so a seed fixes the whole sequence */
};

struct sim_stream {
  uint64_t issued; /* operations executed on it */
};

struct sim_event {
  uint64_t records; /* how often it was recorded; the recorded work is always complete */
};

struct sim_context *sim_context_from(struct gcap__backend_ctx *b);

void sim_run_copy(struct sim_context *sc, const struct gcap__copy *c);
void sim_run_fill(struct sim_context *sc, const struct gcap__fill *f);
void sim_run_kernel(struct sim_context *sc, const struct gcap__launch *l);
void sim_run_host(struct sim_context *sc, gcap_host_fn fn, void *user_data);

gcap_status sim_exec_create(struct gcap__backend_ctx *b, const struct gcap__plan *plan, void **out);
void sim_exec_destroy(struct gcap__backend_ctx *b, void *exec);
gcap_status sim_exec_upload(struct gcap__backend_ctx *b, void *exec, void *stream);
gcap_status sim_exec_launch(struct gcap__backend_ctx *b, void *exec, const struct gcap__plan *plan, void *stream);

#endif
