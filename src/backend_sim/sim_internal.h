/*
 * The CPU simulator: a model of a GPU that executes stream work on the calling thread (a kernel's
 * blocks also on worker threads, with threads >= 2).
 */
#ifndef GCAP_SIM_INTERNAL_H
#define GCAP_SIM_INTERNAL_H

#include <pthread.h>
#include <stdio.h>

#include "base/error.h"
#include "core/backend.h"

#define SIM_MAX_THREADS 256u

struct sim_region;

struct sim_span {
  unsigned char *base;
  size_t bytes;
};

/* Strict memory's device memory (sim_memory.c): empty, and never opened, without strict_memory. */
struct sim_memory {
  struct sim_region *regions;
  size_t chunks;  /* shared regions alive; each new one is twice as large as the last, up to a maximum */
  unsigned depth; /* sim_work_begin calls not yet ended: memory is open while it is above 0 */
  bool narrow;    /* the open work opened only spans[] (an eager copy or fill), not every region */
  struct sim_span spans[2];
  unsigned span_count;
};

struct sim_context {
  struct gcap__backend_ctx base; /* first: the core holds a pointer to it */
  gcap_sim_options options;
  gcap_sim_stats stats;
  struct sim_kernels *kernels; /* sim_kernel.c: workers, fibers, what is known of kernels' barriers */
  uint64_t rng;                /* SHUFFLE: advances across launches, so a seed fixes the whole sequence */
  uint64_t interleave_rng;     /* DEFERRED: which stream runs next; apart, so launches shuffle as in IMMEDIATE */
  FILE *trace;                 /* options.trace, or the file GCAP_SIM_TRACE names (then owned) */
  bool trace_owned;
  bool trace_started;         /* an event was written: the next one needs a comma */
  double trace_origin_ns;     /* timestamps count from context creation */
  uint64_t eager_ops;         /* stream operations issued, for the trace */
  uint64_t launches_begun;    /* graph launches started; a host node may start one inside another */
  unsigned streams_made;      /* streams are numbered 1, 2, ... in the trace */
  struct sim_stream *streams; /* DEFERRED: every live stream, newest first */
  struct sim_op *free_ops;    /* DEFERRED: operations to reuse, from op_chunks */
  struct sim_op_chunk *op_chunks;
  struct sim_stream **ready; /* DEFERRED: scratch for the streams a step may pick from */
  size_t ready_cap;
  bool draining;           /* DEFERRED: work is running; a free inside it must not start another drain */
  struct sim_freed *freed; /* DEFERRED: memory queued frees released while other work was still queued */
  size_t freed_count, freed_cap, frees_queued;
  gcap_status unreported; /* DEFERRED: a failure of work run by a call that could not report it */
  char unreported_message[GCAP__MESSAGE_BYTES];
  struct sim_memory mem;
  struct sim_init_map *init; /* INIT check: what device memory has been written (sim_init.c) */
  bool halted;               /* a kernel was stopped (watchdog, gcap_sim_interrupt): no more kernels run */
  /*
   * Other threads (sim_wait.c). A kernel's blocks may run with the context lock released
   * (gcap__work_release); the rest of the simulator's state stays under that lock. run_mu and
   * run_cv wake the threads waiting for such a kernel, or for another thread's drain, to end.
   */
  unsigned kernels_out;            /* kernels running with the lock released (one at a time) */
  unsigned issuers_waiting;        /* IMMEDIATE work waiting for such a kernel (sim_wait_to_issue) */
  struct sim_stream *eager_stream; /* IMMEDIATE: the stream whose operation is running */
  pthread_t drainer;               /* DEFERRED, while draining: the thread whose drain runs */
  pthread_mutex_t run_mu;
  pthread_cond_t run_cv;
  uint64_t run_gen;     /* +1 (under run_mu) whenever such a kernel or drain ends */
  unsigned run_waiters; /* threads in sim_wait.c's waits (under the context lock) */
};

/* How far a stream has run. It outlives the stream while waits and events still refer to it. */
struct sim_timeline {
  uint64_t done; /* operations of the stream that have run */
  unsigned refs;
  struct sim_stream *owner; /* NULL once the stream is gone (all its work had run) */
};

/* A point in a stream's order: reached once the stream has run `seq` operations. */
struct sim_mark {
  struct sim_timeline *tl; /* NULL: nothing to wait for */
  uint64_t seq;
};

struct sim_op;
struct sim_freed;
struct sim_op_chunk;
struct sim_record;

struct sim_stream {
  uint64_t issued; /* operations issued on it (IMMEDIATE: they have all run) */
  unsigned number; /* 1, 2, ... in creation order: the trace's thread id */
  int priority;    /* lower is more urgent: DEFERRED runs the most urgent ready stream's work first */
  /* DEFERRED */
  struct sim_timeline *tl;
  struct sim_op *head, *tail; /* queued operations, oldest first */
  uint64_t need;              /* while draining: run at least this many of its operations */
  struct sim_stream *next;    /* sc->streams */
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
/* An arrow from the record a wait waited for to the wait, which ran on stream `tid` as operation `op`. */
void sim_trace_arrow(struct sim_context *sc, const struct sim_record *r, unsigned tid, uint64_t op);
void sim_trace_graph_entry(struct sim_context *sc, const struct gcap__plan_node *pn, uint64_t launch, unsigned tid,
                           double start);

/* DEFERRED: one gcap_event_record (or a launch of a graph with an event record node). */
struct sim_record {
  unsigned refs;      /* the event while it is the latest record, its RECORD operation, waits on it */
  struct sim_mark at; /* the recorded work is complete when this is reached */
  uint64_t op;        /* the recording operation's number, for the trace's arrows */
  unsigned tid;
  double ran_at;  /* sim_trace_now when it ran (trace, elapsed time), negative before */
  bool by_launch; /* made by a graph launch: each record node stamps its event's recorded_ns */
};

struct sim_event {
  uint64_t records;          /* how often it was recorded */
  struct sim_record *latest; /* DEFERRED: the most recent record, NULL if never recorded */
  double recorded_ns;        /* sim_trace_now when its latest record ran (DEFERRED: a graph's record node) */
};

struct sim_context *sim_context_from(struct gcap__backend_ctx *b);
/* An IMMEDIATE record of e ran now. */
void sim_event_ran(struct sim_context *sc, struct sim_event *e);

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
/* True when p lies in strict memory's device regions (managed memory lies outside them). */
bool sim_device_owns(const struct sim_context *sc, const void *p);
/* Gives back the whole pages inside [p, p + bytes); the addresses stay usable and read zero. */
void sim_discard_pages(void *p, size_t bytes);
void sim_memory_destroy(struct sim_context *sc);
void sim_work_begin(struct sim_context *sc);
void sim_work_begin_for(struct sim_context *sc, const struct gcap__copy *c, const struct gcap__fill *f);
void sim_work_end(struct sim_context *sc);
unsigned sim_work_pause(struct sim_context *sc);
void sim_work_resume(struct sim_context *sc, unsigned depth);

/*
 * The INIT check's view of device memory (sim_init.c), kept only while that check is on. An
 * allocation is tracked from sim_init_track (`written`: as if filled) to sim_init_forget.
 */
struct sim_init_map;
gcap_status sim_init_track(struct sim_context *sc, void *p, size_t bytes, bool written);
void sim_init_forget(struct sim_context *sc, const void *p);
void sim_init_mark(struct sim_context *sc, const void *p, size_t bytes);
void sim_init_mark_copy(struct sim_context *sc, const struct gcap__copy *c);
void sim_init_mark_fill(struct sim_context *sc, const struct gcap__fill *f);
/* Work the simulator cannot follow ran (a CPU kernel, a host function): everything counts as written. */
void sim_init_mark_all(struct sim_context *sc);
/* The written-bits of the tracked allocation starting at base (ctx: the sim_context), or NULL. */
unsigned char *sim_init_bits(void *ctx, uintptr_t base);
void sim_init_destroy(struct sim_context *sc);

void sim_run_copy(struct sim_context *sc, const struct gcap__copy *c);
void sim_run_fill(struct sim_context *sc, const struct gcap__fill *f);
/* A kernel's blocks; fails (message set) when a block misuses gcap_sim_syncthreads. */
gcap_status sim_run_kernel(struct sim_context *sc, const struct gcap__launch *l);
/*
 * NOT_SUPPORTED (message: the kernel, the instruction and its PTX line) when the kernel would run
 * from PTX the executor cannot run (backend op kernel_check); SUCCESS otherwise.
 */
gcap_status sim_kernel_check(const struct gcap__backend_ctx *b, const struct gcap__kernel_info *k);
/* COOPERATIVE_LAUNCH_TOO_LARGE when cooperative launch l does not fit on the simulated device (sim_device.c). */
gcap_status sim_cooperative_check(const struct gcap__backend_ctx *b, const struct gcap__launch *l, int regs,
                                  int static_shared);
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
  uint64_t ptx_instructions; /* lane-instructions of PTX blocks */
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
/* The same after the check that no queued free released their memory first (DEFERRED). */
gcap_status sim_run_checked_copy(struct sim_context *sc, const struct gcap__copy *c);
gcap_status sim_run_checked_fill(struct sim_context *sc, const struct gcap__fill *f);
gcap_status sim_run_checked_kernel(struct sim_context *sc, const struct gcap__launch *l);

/* Waiting for other threads' work (sim_wait.c); each gives the context lock up while it waits. */
void sim_wait_init(struct sim_context *sc);
void sim_wait_destroy(struct sim_context *sc);
/* Until no kernel runs with the context lock released (blocking calls). */
void sim_wait_kernels(struct sim_context *sc);
/* The same for IMMEDIATE work, which the core checked already: frees wait for it (sim_wait_idle). */
void sim_wait_to_issue(struct sim_context *sc);
/* Until no kernel runs and no checked work waits to run (frees, unloads). */
void sim_wait_idle(struct sim_context *sc);
/* Until no other thread drains (DEFERRED). */
void sim_wait_drain(struct sim_context *sc);
/* True while another thread's drain runs. */
bool sim_drained_elsewhere(const struct sim_context *sc);
/* A kernel or a drain ended (context lock held): the waiting threads look again. */
void sim_wake(struct sim_context *sc);

/* Deferred execution (sim_queue.c). */
static inline bool sim_deferred(const struct sim_context *sc) { return sc->options.exec == GCAP_SIM_EXEC_DEFERRED; }
struct sim_timeline *sim_timeline_new(struct sim_stream *owner);
void sim_timeline_release(struct sim_timeline *tl);
void sim_mark_set(struct sim_mark *m, struct sim_timeline *tl, uint64_t seq); /* takes a reference */
void sim_mark_clear(struct sim_mark *m);
static inline bool sim_mark_reached(const struct sim_mark *m) { return !m->tl || m->tl->done >= m->seq; }
void sim_record_release(struct sim_record *r);

/* One stream operation as a caller describes it; the queue copies what it needs. */
struct sim_work {
  enum {
    SIM_WORK_COPY,
    SIM_WORK_FILL,
    SIM_WORK_KERNEL,
    SIM_WORK_HOST,
    SIM_WORK_RECORD,
    SIM_WORK_WAIT,
    SIM_WORK_FREE,
    SIM_WORK_LAUNCH
  } kind;
  const struct gcap__copy *copy;
  const struct gcap__fill *fill;
  const struct gcap__launch *launch;
  gcap_host_fn fn;
  void *user_data;
  struct sim_event *event; /* RECORD, WAIT */
  void *ptr;               /* FREE */
  size_t bytes;
  void *exec; /* LAUNCH: the sim_exec */
  const struct gcap__plan *plan;
};
/* Queues `w` on s (DEFERRED). */
gcap_status sim_enqueue(struct sim_context *sc, struct sim_stream *s, const struct sim_work *w);
/* Runs queued work until every mark is reached (interleaving streams by the seed); the first failure is returned. */
gcap_status sim_drain(struct sim_context *sc, const struct sim_mark *marks, size_t count);
/* Runs until every queued operation has run. */
gcap_status sim_drain_all(struct sim_context *sc);
bool sim_queues_empty(const struct sim_context *sc);
/* The ranges (base, bytes) queued stream-ordered frees will release, at most max of them; a
 * kernel remembers SIM_PENDING_FREES (beyond them, its memory check may fault on such memory). */
#define SIM_PENDING_FREES 64
size_t sim_pending_frees(const struct sim_context *sc, uintptr_t (*out)[2], size_t max);
/* NOT_READY after running one step toward `m`, SUCCESS when it is reached already. */
gcap_status sim_advance(struct sim_context *sc, const struct sim_mark *m);
/* For calls that drain but cannot report (frees, unloads, waits before a destroy): kept for the next wait. */
void sim_keep_unreported(struct sim_context *sc, gcap_status st);
void sim_queue_stream_gone(struct sim_context *sc, struct sim_stream *s);
/* Context destroy: the operations' memory. */
void sim_queue_destroy(struct sim_context *sc);
/* Frees the memory queued frees released (nothing is queued any more). */
void sim_queue_release_freed(struct sim_context *sc);
/* The mark of everything queued on s so far. */
struct sim_mark sim_stream_end(const struct sim_stream *s);

/*
 * DEFERRED: SUCCESS unless the work touches memory a queued free released before it ran (the
 * message says which free); such work is not run. Cheap while no such memory is held.
 */
gcap_status sim_check_copy_alive(const struct sim_context *sc, const struct gcap__copy *c);
gcap_status sim_check_fill_alive(const struct sim_context *sc, const struct gcap__fill *f);
gcap_status sim_check_kernel_alive(const struct sim_context *sc, const struct gcap__launch *l);

/* Runs a queued gcap_mem_free_async (sim.c). */
void sim_free_now(struct sim_context *sc, void *p);

/* Executables (sim_exec.c). */
/* The mark of the executable's latest launch: the next one starts after it. */
const struct sim_mark *sim_exec_last(void *exec);
void sim_exec_set_last(void *exec, struct sim_timeline *tl, uint64_t seq);
/* One queued launch while it runs, node by node (an executable runs one launch at a time). */
struct sim_launch_ctx {
  void *exec;
  const struct gcap__plan *plan;
  uint64_t number;
  unsigned tid;
  const struct sim_record *done; /* DEFERRED: what its event record nodes recorded, or NULL */
};
void sim_launch_start(struct sim_context *sc, const struct sim_launch_ctx *lc);
/* Runs one ready node; *finished when it was the last. */
gcap_status sim_launch_step(struct sim_context *sc, const struct sim_launch_ctx *lc, bool *finished);
/* A node failed: the launch ends here (its counters say what ran). */
void sim_launch_abandon(struct sim_context *sc, const struct sim_launch_ctx *lc);
gcap_status sim_exec_create(struct gcap__backend_ctx *b, const struct gcap__plan *plan, void **out);
void sim_exec_destroy(struct gcap__backend_ctx *b, void *exec);
gcap_status sim_exec_upload(struct gcap__backend_ctx *b, void *exec, void *stream);
gcap_status sim_exec_launch(struct gcap__backend_ctx *b, void *exec, const struct gcap__plan *plan, void *stream);
gcap_status sim_exec_wait(struct gcap__backend_ctx *b, void *exec);
gcap_status sim_exec_before_change(struct gcap__backend_ctx *b, void *exec);

#endif
