/*
 * The CPU simulator: a model of a GPU that executes stream work on the calling thread (a kernel's
 * blocks also on worker threads, with threads >= 2).
 */
#ifndef GCAP_SIM_INTERNAL_H
#define GCAP_SIM_INTERNAL_H

#include <stdio.h>

#include "backend.h"

#define SIM_SHARED_MEM_BYTES 49152u
#define SIM_MAX_THREADS 256u

struct sim_context {
  struct gcap__backend_ctx base; /* first: the core holds a pointer to it */
  gcap_sim_options options;
  gcap_sim_stats stats;
  struct sim_kernels *kernels; /* sim_kernel.c: workers, fibers, what is known of kernels' barriers */
  uint64_t rng;              /* SHUFFLE: advances across launches, so a seed fixes the whole sequence */
  FILE *trace;               /* options.trace, or the file GCAP_SIM_TRACE names (then owned) */
  bool trace_owned;
  bool trace_started;        /* an event was written: the next one needs a comma */
  double trace_origin_ns;    /* timestamps count from context creation */
  uint64_t eager_ops;        /* stream operations issued, for the trace */
  uint64_t launches_begun;   /* graph launches started; a host node may start one inside another */
  unsigned streams_made;     /* streams are numbered 1, 2, ... in the trace */
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

void sim_run_copy(struct sim_context *sc, const struct gcap__copy *c);
void sim_run_fill(struct sim_context *sc, const struct gcap__fill *f);
/* A kernel's blocks; fails (message set) when a block misuses gcap_sim_syncthreads. */
gcap_status sim_run_kernel(struct sim_context *sc, const struct gcap__launch *l);
/* What runs kernels (sim_kernel.c), made with the context; NULL when out of memory. */
struct sim_kernels *sim_kernels_create(void);
void sim_kernels_destroy(struct sim_kernels *k);

/*
 * Workers (sim_kernel.c): what runs a kernel's blocks on one OS thread, with its own shared
 * memory and fibers. A job is one launch's blocks, handed out to workers in chunks.
 */
struct sim_worker;
struct sim_job;
struct sim_worker *sim_worker_create(void); /* NULL: out of memory */
void sim_worker_destroy(struct sim_worker *w);
/* Runs chunks of the job's blocks until none is left or a block failed. */
void sim_worker_run(struct sim_worker *w, struct sim_job *job);

/* Counts a worker adds up while it runs blocks, taken (and reset) after a launch. */
struct sim_counts {
  uint64_t barriers_passed;
  uint64_t blocks;
};
struct sim_counts sim_worker_take_counts(struct sim_worker *w);

/*
 * The worker pool (sim_pool.c), threads >= 2: threads - 1 OS threads, each with a worker; the
 * calling thread makes up the last one.
 */
struct sim_pool;
struct sim_pool *sim_pool_create(unsigned threads); /* NULL: no memory or threads for it */
void sim_pool_destroy(struct sim_pool *p);
/* Runs `job` on every pool thread and, as `caller`, on the calling thread; returns the pool threads' counts. */
struct sim_counts sim_pool_run(struct sim_pool *p, struct sim_worker *caller, struct sim_job *job);

/*
 * Fibers (sim_fiber.c): contexts with small stacks of their own, switched cooperatively on one OS
 * thread, for the threads of blocks that call gcap_sim_syncthreads.
 */
struct sim_fiber;
/* What a fiber runs; it returns the fiber to switch to once its thread is done. */
typedef struct sim_fiber *(*sim_fiber_body)(void *arg);
/* A fiber with a stack (a guard page below it), or NULL when out of memory. */
struct sim_fiber *sim_fiber_create(void);
/* A fiber without a stack that stands for an OS thread: what its fibers switch back to. */
struct sim_fiber *sim_fiber_create_host(void);
void sim_fiber_destroy(struct sim_fiber *f);
/* Makes `host` stand for the calling OS thread, before it switches to fibers. */
void sim_fiber_adopt_thread(struct sim_fiber *host);
/* The next switch to `f` starts body(arg) on f's stack from scratch. */
void sim_fiber_prepare(struct sim_fiber *f, sim_fiber_body body, void *arg);
/* Switches from the running `from` to `to`; returns once a switch comes back to `from`. */
void sim_fiber_switch(struct sim_fiber *from, struct sim_fiber *to);
/* `f` was left suspended and will never resume: its frames are forgotten before it is prepared again. */
void sim_fiber_abandon(struct sim_fiber *f);
void sim_run_host(struct sim_context *sc, gcap_host_fn fn, void *user_data);

gcap_status sim_exec_create(struct gcap__backend_ctx *b, const struct gcap__plan *plan, void **out);
void sim_exec_destroy(struct gcap__backend_ctx *b, void *exec);
gcap_status sim_exec_upload(struct gcap__backend_ctx *b, void *exec, void *stream);
gcap_status sim_exec_launch(struct gcap__backend_ctx *b, void *exec, const struct gcap__plan *plan, void *stream);

#endif
