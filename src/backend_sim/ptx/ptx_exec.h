/*
 * The simulator's PTX executor: a module's PTX lowered once at load into compact code, run warp
 * by warp (32 lanes in lockstep under an active mask) with the memory, barrier, race and
 * initialisation checks of gcap_sim_options.checks. sim.c loads programs; sim_kernel.c runs
 * their blocks on its workers. The rest of the simulator sees only this header.
 */
#ifndef GCAP_SIM_PTX_EXEC_H
#define GCAP_SIM_PTX_EXEC_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/backend.h"

struct px_program;
struct px_kernel;
struct px_worker;

/*
 * The simulated device, an H100 SXM5: the shared memory a block may have (static and dynamic,
 * 227 KiB, CUDA's sharedMemPerBlockOptin; the 1 KiB the system reserves comes on top) and its
 * multiprocessors (%nsmid).
 */
#define PX_DEVICE_SHARED_BYTES 232448u
#define PX_DEVICE_SMS 132u
/*
 * What one of its multiprocessors holds at once, as CUDA's occupancy calculator counts it (the
 * cooperative launch's size check, sim_device.c): threads, blocks, 32-bit registers (allocated
 * 256 a warp), shared memory (each block's static and dynamic plus the PX_RESERVED_SMEM the
 * system reserves for it).
 */
#define PX_DEVICE_THREADS_PER_SM 2048u
#define PX_DEVICE_BLOCKS_PER_SM 32u
#define PX_DEVICE_REGS_PER_SM 65536u
#define PX_DEVICE_SHARED_PER_SM 233472u
#define PX_DEVICE_RESERVED_PER_BLOCK 1024u

/*
 * How a program gets and returns device memory for its module variables (.global, .const), and
 * writes their initial values (device memory may be closed to host code: strict memory).
 * alloc_managed: for `.attribute(.managed)` variables, memory host code may touch as well (as
 * gcap_mem_alloc_managed's); free returns either kind.
 */
struct px_memory_ops {
  void *ctx;
  gcap_status (*alloc)(void *ctx, size_t bytes, void **out);
  gcap_status (*alloc_managed)(void *ctx, size_t bytes, void **out);
  void (*free)(void *ctx, void *p);
  void (*write)(void *ctx, void *dst, const void *src, size_t bytes);
  /* Zeros [dst, dst + bytes) without committing memory: untouched pages read as zeros (lazily). */
  void (*zero)(void *ctx, void *dst, size_t bytes);
};

/*
 * Parses and lowers PTX text. INVALID_PTX (message: line, column, instruction) for text that does
 * not parse or is not valid PTX (bad operands, sizes past CUDA's limits); valid PTX the executor
 * cannot run only marks the kernels that use it (px_kernel_unrunnable). OUT_OF_MEMORY, also when
 * the module's variables need more than the simulated device's memory (PX_DEVICE_MEMORY). Module
 * variables get device memory through `mem`, initialised from the PTX; zeros cost no memory until
 * written.
 */
gcap_status px_program_load(const char *text, size_t size, const struct px_memory_ops *mem, struct px_program **out);
void px_program_free(struct px_program *p);
/* The entry `name` (any linkage), or NULL. */
const struct px_kernel *px_program_kernel(const struct px_program *p, const char *name);
/* The program an entry belongs to. */
const struct px_program *px_kernel_program(const struct px_kernel *k);
/*
 * NULL when the entry runs; else why it cannot: "kernel \"K\": <what> at PTX line N \"<instruction>\""
 * (and the .func it is in, when a function it calls holds it). Owned by the program.
 */
const char *px_kernel_unrunnable(const struct px_kernel *k);
/* Counts one run of the entry that executed `instructions` lane-instructions (under the context's
 * lock), and reads the counts (gcap_sim_get_kernel_stats). */
void px_kernel_count_run(const struct px_kernel *k, uint64_t instructions);
void px_kernel_runs(const struct px_kernel *k, uint64_t *runs, uint64_t *instructions);
/* The entry's parameter count and sizes (owned by the program). */
size_t px_kernel_params(const struct px_kernel *k, const size_t **sizes);
/* The entry's static shared memory (module and entry scope) and its frame of local memory a thread. */
void px_kernel_memory(const struct px_kernel *k, uint32_t *static_shared, uint32_t *local_bytes);
/* A module variable's device address and size; NOT_FOUND (no message) when absent. */
gcap_status px_program_global(const struct px_program *p, const char *name, void **addr, size_t *bytes);
/* The i-th module variable of .global or .const space (i from 0): false past the last. */
bool px_program_global_at(const struct px_program *p, size_t i, void **addr, size_t *bytes);

/* Why a block stops before it ends (px_launch.poll). */
enum px_stop {
  PX_GO = 0,         /* go on */
  PX_STOP_FAILED,    /* another block of the launch failed: stop without a report */
  PX_STOP_TIMEOUT,   /* the launch ran past the watchdog (px_launch.timeout_ms) */
  PX_STOP_INTERRUPT, /* gcap_sim_interrupt was called */
};

/* One launch, shared by every worker that runs its blocks. */
struct px_launch {
  const struct px_program *program;
  const struct px_kernel *kernel;
  const char *name;
  gcap_dim3 grid, block;
  uint32_t dynamic_shared;
  unsigned checks;                         /* GCAP_SIM_CHECK_* */
  uint64_t seed;                           /* the order of a block's warps between barriers */
  const struct gcap__backend_ctx *backend; /* for the memory check's view of allocations */
  unsigned char *params;                   /* the kernel's parameter buffer, laid out as the PTX declares */
  atomic_bool *failed;                     /* set by the first block that faults: the others stop */
  uint64_t serial;                         /* unique per launch: workers keep per-launch state by it */
  void *init_ctx; /* INIT: the written-bits of the allocation at base, or NULL (counts as written) */
  unsigned char *(*init_bits)(void *init_ctx, uintptr_t base);
  /*
   * The watchdog, or NULL: polled by each block every so many control instructions (branches,
   * calls, barriers: every loop has one), so the check costs a counter in the interpreter.
   */
  enum px_stop (*poll)(const struct px_launch *l);
  uint32_t timeout_ms; /* for the report of PX_STOP_TIMEOUT */
  bool zero_memory;    /* shared and local memory start each block as zeros, not poison (px_poison_word) */
  /*
   * DEFERRED: the memory stream-ordered frees still queued when the kernel started will release
   * (base, bytes pairs). The core forgets such memory when the free is issued, but a kernel issued
   * before it may still use it. Looked at only where the memory check would fault.
   */
  const uintptr_t (*pending_frees)[2];
  size_t num_pending_frees;
  /*
   * A cooperative launch: the device address of its grid workspace (zeroed device memory the
   * launch owns, where cooperative groups' grid barrier counts arrivals), which %envreg1 (high
   * 32 bits) and %envreg2 (low) hold; 0 for an ordinary launch, as on a GPU.
   */
  uint64_t grid_workspace;
};
#define PX_GRID_WORKSPACE_BYTES 16u /* the grid workspace's size: cooperative groups uses bytes 4..7 */

/*
 * The poison pattern of memory nothing wrote yet: a 64-bit word drawn from a seed, repeated from
 * every 8-byte boundary (little-endian). No byte of it is zero, so poison never reads as cleared
 * memory; an integer of it of any width is far from zero, an aligned float of it a NaN and a
 * double about 1e306, so counts and sums that start from it stay visibly wrong.
 */
uint64_t px_poison_word(uint64_t seed);
/* Fills [p, p + bytes), p at `offset` in its memory: the byte at offset o holds byte o % 8 of word. */
void px_poison_fill(void *p, size_t bytes, size_t offset, uint64_t word);

/* A launch's serial number (px_launch.serial). */
uint64_t px_next_serial(void);

/* Builds the parameter buffer of a launch (px_launch.params, freed with gcap__free); NULL: no memory. */
unsigned char *px_launch_params(const struct px_kernel *k, void *const *args);
/* Shared memory a block needs beyond the dynamic part: INVALID_VALUE (message set) when it cannot fit. */
gcap_status px_launch_check(const struct px_launch *l);

struct px_worker *px_worker_create(void);
void px_worker_destroy(struct px_worker *w);
/*
 * The workers of cooperative launches, one per resident block, kept from one launch to the next
 * (their stacks, registers and shared memory are set up once, not per launch). Zero-initialised:
 * empty.
 */
struct px_coop_pool {
  struct px_worker **workers;
  size_t count;
};
/*
 * Runs one block. On a fault returns its status with the report in msg (the launch fails);
 * lane-instructions executed are added to *instructions.
 */
gcap_status px_run_block(struct px_worker *w, const struct px_launch *l, gcap_dim3 block_idx, char *msg, size_t size,
                         uint64_t *instructions);
/*
 * Runs every block of cooperative launch l on the calling thread, all resident at once: each
 * takes its turn (its warps run until they wait, finish or spin a turn) and the next block runs,
 * so blocks waiting for each other (a grid barrier) make progress. The block checks (a block
 * that can never finish) and the watchdog apply as to ordinary blocks. Returns as px_run_block.
 */
gcap_status px_run_cooperative(const struct px_launch *l, struct px_coop_pool *pool, char *msg, size_t size,
                               uint64_t *instructions);
/* Frees the workers a pool keeps; the pool is then empty. */
void px_coop_pool_free(struct px_coop_pool *pool);

#endif /* GCAP_SIM_PTX_EXEC_H */
