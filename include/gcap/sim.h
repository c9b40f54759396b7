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

typedef enum gcap_sim_exec {
  GCAP_SIM_EXEC_IMMEDIATE = 0, /* stream work runs when it is issued, on the calling thread */
  GCAP_SIM_EXEC_DEFERRED = 1   /* stream work waits until the host waits for it, then runs interleaved */
} gcap_sim_exec;

typedef enum gcap_sim_kernels {
  GCAP_SIM_KERNELS_AUTO = 0, /* a kernel's CPU implementation where it has one, else its PTX, else a stub */
  GCAP_SIM_KERNELS_CPU = 1,  /* CPU implementations only; kernels without one are stubs */
  GCAP_SIM_KERNELS_PTX = 2   /* the PTX, even where a CPU implementation exists */
} gcap_sim_kernels;

/* Checks made while PTX kernels run (gcap_sim_options.checks), as compute-sanitizer's tools. */
#define GCAP_SIM_CHECK_MEMORY 1u       /* every access inside live memory of its state space (memcheck) */
#define GCAP_SIM_CHECK_SYNC 2u         /* barriers and warp operations used as PTX requires (synccheck) */
#define GCAP_SIM_CHECK_SHARED_RACES 4u /* shared-memory hazards not ordered by a barrier (racecheck) */
#define GCAP_SIM_CHECK_INIT 8u         /* reads of device memory never written (initcheck) */

typedef struct gcap_sim_options {
  gcap_sim_order order;
  uint64_t seed;    /* SHUFFLE's launch orders and DEFERRED's interleavings */
  bool check_races; /* instantiate fails (INVALID_VALUE) when gcap_graph_find_races finds any, and so
                       does eager stream work that overlaps unordered work of another stream */
  FILE *trace;      /* NULL, or a stream for a Chrome trace-event JSON of executed work */
  gcap_sim_exec exec;
  bool strict_memory;       /* device memory faults (SIGSEGV) when host code touches it */
  unsigned threads;         /* threads running a kernel's blocks (the caller and threads - 1 workers), at
                               most 256; 0 or 1: the calling thread only */
  gcap_sim_kernels kernels; /* what runs a kernel: its CPU implementation or its PTX */
  unsigned checks;          /* GCAP_SIM_CHECK_* bits, for PTX kernels */
  /* The watchdog: a kernel running longer fails with GCAP_ERROR_LAUNCH_TIMEOUT (sticky); 0: none. */
  uint32_t kernel_timeout_ms;
  /* PTX kernels: shared memory and each thread's local memory start every block as zeros, not as the
     poison pattern a GPU's leftovers stand for (a 64-bit word drawn from the launch's seed). */
  bool zero_block_memory;
  /* Fresh device allocations (gcap_mem_alloc, graph and stream-ordered allocations) start as a poison
     pattern drawn from seed, as a caching allocator's reused memory does, not as whatever the host
     gave; this writes every byte, so it costs the allocation's pages at once. */
  bool poison_allocations;
} gcap_sim_options;

/** The watchdog's default (gcap_sim_options.kernel_timeout_ms): one minute. */
#define GCAP_SIM_KERNEL_TIMEOUT_DEFAULT_MS 60000u

/**
 * CAPTURE order, seed 0, no race check, no trace, IMMEDIATE, no strict memory, one thread, AUTO
 * kernels, MEMORY | SYNC checks, a watchdog of GCAP_SIM_KERNEL_TIMEOUT_DEFAULT_MS, poisoned block
 * memory, unpoisoned allocations.
 */
GCAP_API void gcap_sim_options_init(gcap_sim_options *o);

typedef struct gcap_sim_stats {
  uint64_t graph_launches, nodes_executed, kernels_executed, kernels_stubbed, bytes_copied, bytes_set, host_calls;
  uint64_t ops_deferred;     /* stream operations queued by DEFERRED (graph launches count one) */
  uint64_t stream_races;     /* eager operations refused by the stream race check */
  uint64_t barriers_passed;  /* gcap_sim_syncthreads barriers every thread of a block passed */
  uint64_t blocks_parallel;  /* blocks of launches spread over threads (threads >= 2, more than one block) */
  uint64_t ptx_instructions; /* lane-instructions executed by PTX kernels */
} gcap_sim_stats;

/**
 * The simulator's counters since the context was created. nodes_executed counts graph
 * nodes run by launches; the other counters include eager work too. NOT_SUPPORTED on CUDA.
 */
GCAP_API gcap_status gcap_sim_get_stats(const gcap_context *ctx, gcap_sim_stats *out);

typedef struct gcap_sim_kernel_stats {
  uint64_t launches;         /* times its PTX ran: stream launches and kernel nodes of graph launches */
  uint64_t ptx_instructions; /* lane-instructions those runs executed */
} gcap_sim_kernel_stats;

/**
 * The counters of one kernel of @p ctx since its module was loaded: what a profiler's per-kernel
 * summary shows. Kernels run by a CPU implementation count nothing. INVALID_HANDLE for a kernel
 * of another context; NOT_SUPPORTED on CUDA.
 */
GCAP_API gcap_status gcap_sim_get_kernel_stats(const gcap_context *ctx, const gcap_kernel *k,
                                               gcap_sim_kernel_stats *out);

/**
 * __syncthreads for per-thread CPU kernels (gcap_sim_kernel_fn): every thread of t's block
 * reaches it before any goes on. Threads of a kernel that calls it run as cooperatively
 * scheduled fibers (the first launch of each sim_fn on a context finds out whether it does). The
 * launch fails with GCAP_ERROR_BACKEND when some threads of a block wait at it while others
 * have returned, when a per-block function (gcap_sim_block_fn) calls it, and when a sim_fn whose
 * first block never called it does so later (its next launches run as fibers). Called from
 * outside a simulated kernel (a host thread), it does nothing.
 */
GCAP_API void gcap_sim_syncthreads(const gcap_sim_thread *t);

/**
 * Stops every kernel running in the process now, on any context, at its next check point (PTX:
 * within a millisecond or so; a CPU implementation: between blocks), as the watchdog does: the
 * launch (or the wait that ran it) fails with GCAP_ERROR_LAUNCH_TIMEOUT, sticky, its message saying
 * it was interrupted. Kernels that start later are not affected. Async-signal-safe: a SIGINT
 * handler may call it (the Python package does, for Ctrl-C).
 */
GCAP_API void gcap_sim_interrupt(void);

/**
 * cudaGraphSetConditional for CPU kernels: sets the value of conditional handle @p h, which the
 * conditional nodes using it read when they run. Racing calls leave one of the values, as on a
 * GPU. A kernel passing a value that is not a live handle fails its launch (INVALID_VALUE);
 * called outside a kernel, it does nothing.
 */
GCAP_API void gcap_sim_set_conditional(gcap_conditional_handle h, unsigned value);

#ifdef __cplusplus
}
#endif

#endif /* GCAP_SIM_H */
