/* The CPU simulator: a model of a GPU that executes stream work on the calling thread. */
#ifndef GCAP_SIM_INTERNAL_H
#define GCAP_SIM_INTERNAL_H

#include <stdio.h>

#include "backend.h"

#define SIM_SHARED_MEM_BYTES 49152u
#define SIM_MAX_THREADS 256u

struct sim_region;

struct sim_span {
  unsigned char *base;
  size_t bytes;
};

/* Strict memory's device memory (sim_memory.c): empty, and never opened, without strict_memory. */
struct sim_memory {
  struct sim_region *regions;
  size_t chunks;             /* shared regions alive; each new one is twice as large as the last, up to a maximum */
  unsigned depth;            /* sim_work_begin calls not yet ended: memory is open while it is above 0 */
  bool narrow;               /* the open work opened only spans[] (an eager copy or fill), not every region */
  struct sim_span spans[2];
  unsigned span_count;
};

struct sim_context {
  struct gcap__backend_ctx base; /* first: the core holds a pointer to it */
  gcap_sim_options options;
  gcap_sim_stats stats;
  unsigned char *shared_mem; /* one block's dynamic shared memory; blocks run one at a time */
  uint64_t rng;              /* SHUFFLE: advances across launches, so a seed fixes the whole sequence */
  FILE *trace;               /* options.trace, or the file GCAP_SIM_TRACE names (then owned) */
  bool trace_owned;
  bool trace_started;        /* an event was written: the next one needs a comma */
  double trace_origin_ns;    /* timestamps count from context creation */
  uint64_t eager_ops;        /* stream operations issued, for the trace */
  uint64_t launches_begun;   /* graph launches started; a host node may start one inside another */
  unsigned streams_made;     /* streams are numbered 1, 2, ... in the trace */
  struct sim_memory mem;
};

struct sim_stream {
  uint64_t issued; /* operations executed on it */
  unsigned number; /* 1, 2, ... in creation order: the trace's thread id */
};

/* The timeline (sim_trace.c): Chrome trace-event JSON, written only when sc->trace is set. */
double sim_trace_now(const struct sim_context *sc);
void sim_trace_open(struct sim_context *sc);
void sim_trace_close(struct sim_context *sc);
void sim_trace_stream_created(struct sim_context *sc, unsigned number);
/*
 * Stream operation number `op` (1-based, in issue order: sim_trace_next_op when it began), that
 * started at `start` (sim_trace_now) and has just finished.
 */
uint64_t sim_trace_next_op(struct sim_context *sc);
void sim_trace_stream_op(struct sim_context *sc, const char *name, unsigned tid, uint64_t op, double start);
/* One graph entry of launch number `launch` (1-based), issued on stream `tid`, that started at `start`. */
void sim_trace_graph_entry(struct sim_context *sc, const struct gcap__plan_node *pn, uint64_t launch, unsigned tid,
                           double start);

struct sim_event {
  uint64_t records; /* how often it was recorded; the recorded work is always complete */
};

struct sim_context *sim_context_from(struct gcap__backend_ctx *b);

/*
 * Strict memory (sim_memory.c). With options.strict_memory, device allocations come from
 * mappings that host code cannot touch (PROT_NONE) except between sim_work_begin and
 * sim_work_end, which bracket every unit of simulated work and nest; sim_work_begin_for(sc,
 * copy, fill) begins an eager copy or fill (one of them given), which opens only the memory it
 * touches. A host function runs between sim_work_pause and sim_work_resume (given what pause
 * returned): its code is host code. Without strict_memory all of these are no-ops.
 */
gcap_status sim_device_alloc(struct sim_context *sc, size_t bytes, void **out);
void sim_device_free(struct sim_context *sc, void *p);
void sim_memory_destroy(struct sim_context *sc);
void sim_work_begin(struct sim_context *sc);
void sim_work_begin_for(struct sim_context *sc, const struct gcap__copy *c, const struct gcap__fill *f);
void sim_work_end(struct sim_context *sc);
unsigned sim_work_pause(struct sim_context *sc);
void sim_work_resume(struct sim_context *sc, unsigned depth);

void sim_run_copy(struct sim_context *sc, const struct gcap__copy *c);
void sim_run_fill(struct sim_context *sc, const struct gcap__fill *f);
/* A kernel's blocks; fails (message set) when a block misuses gcap_sim_syncthreads. */
gcap_status sim_run_kernel(struct sim_context *sc, const struct gcap__launch *l);
void sim_run_host(struct sim_context *sc, gcap_host_fn fn, void *user_data);

gcap_status sim_exec_create(struct gcap__backend_ctx *b, const struct gcap__plan *plan, void **out);
void sim_exec_destroy(struct gcap__backend_ctx *b, void *exec);
gcap_status sim_exec_upload(struct gcap__backend_ctx *b, void *exec, void *stream);
gcap_status sim_exec_launch(struct gcap__backend_ctx *b, void *exec, const struct gcap__plan *plan, void *stream);

#endif
