/*
 * Kernels on the CPU. A kernel's blocks run in one of three forms:
 *  - per block (sim_block_fn): one call per block, which loops over the block's threads itself;
 *  - plain loop (sim_fn): every thread called in turn on the worker's own stack, the fast form;
 *  - fibers (sim_fn that calls gcap_sim_syncthreads): every thread of a block on a fiber of its
 *    own, run in turn until it reaches the barrier or returns, so a barrier holds each thread
 *    until the whole block has reached it.
 * Which per-thread functions need fibers is learnt by running: the first launch of a function on
 * a context runs its first block as fibers, and whether any thread called the barrier is kept
 * per function for every later launch (barrier_use). A function that calls it only in some
 * blocks or launches is caught when a plain-loop thread calls it: that launch fails, the next
 * ones run as fibers.
 * Blocks are handed out in contiguous chunks, through an atomic counter, to workers: the calling
 * thread's, and with threads >= 2 those of the pool (sim_pool.c). Each worker has its own shared
 * memory and fibers; its counts are added to the stats after the launch.
 */
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "base/alloc.h"
#include "base/error.h"
#include "backend_sim/ptx/ptx_exec.h"
#include "sim_internal.h"

enum sim_form { FORM_BLOCK, FORM_PLAIN, FORM_FIBERS, FORM_PTX };

/* One launch's blocks. Written by the launching thread before any worker starts on it. */
struct sim_job {
  const struct gcap__launch *l;
  enum sim_form form;
  unsigned threads;    /* per block */
  unsigned fibers;     /* made by a worker before its first block, when the form is FIBERS */
  uint64_t end, chunk; /* blocks [next, end) are left, handed out `chunk` at a time */
  atomic_uint_fast64_t next;
  atomic_bool failed;                            /* a block failed: the others stop */
  uint64_t instructions;                         /* lane-instructions the worker threads executed (run_rest) */
  uintptr_t pending_frees[SIM_PENDING_FREES][2]; /* px_launch.pending_frees */
  atomic_bool barrier_in_plain;                  /* a plain-loop thread called gcap_sim_syncthreads */
  gcap_status status;                            /* the first failure, written by the worker that set `failed` */
  char message[GCAP__MESSAGE_BYTES];
  struct px_launch ptx;                    /* FORM_PTX */
  const struct gcap__backend_ctx *backend; /* the launch's context (conditional handles must be its own) */
  uint64_t deadline_ns;                    /* the watchdog: CLOCK_MONOTONIC time to stop at; 0: none */
  uint32_t timeout_ms;
  unsigned interrupts; /* gcap_sim_interrupt's count when the launch began */
};

enum slot_state { SLOT_IDLE, SLOT_RUNNABLE, SLOT_WAITING, SLOT_DONE };

/* One thread of a block run as fibers. */
struct sim_slot {
  gcap_sim_thread t;
  struct sim_worker *w;
  struct sim_fiber *fiber; /* from its start until it returns */
  unsigned index;
  enum slot_state state;
};

enum block_end { BLOCK_OK, BLOCK_BARRIER_MISMATCH, BLOCK_NO_FIBER };

struct sim_worker {
  unsigned char *shared_mem; /* shared_cap bytes: the dynamic shared memory of the block it runs */
  size_t shared_cap;         /* grown to the most a launch it ran asked for */
  struct sim_fiber *host;    /* its OS thread, while the block's threads run as fibers */
  struct sim_fiber **spare;  /* fibers running no thread (every one, between blocks) */
  size_t num_spare, spare_cap, fibers_made;
  struct sim_slot *slots; /* grown to the largest block run as fibers */
  size_t slots_cap;
  struct sim_job *job;          /* the launch it works on */
  const gcap_sim_thread *plain; /* the thread a plain loop runs */
  /* The block running as fibers. */
  unsigned threads, current, arrived, returned;
  enum block_end end;
  bool misused; /* a plain-loop or per-block function called gcap_sim_syncthreads */
  gcap_dim3 misuse_thread;
  bool reached_barrier; /* a thread called gcap_sim_syncthreads since this was last cleared */
  struct sim_counts counts;
  struct px_worker *px;     /* PTX kernels' warps and memories, made on its first PTX block */
  struct px_coop_pool coop; /* the resident blocks of cooperative launches, kept between them */
};

/* Per-thread functions seen on this context, and whether they call gcap_sim_syncthreads. */
struct barrier_use {
  gcap_sim_kernel_fn fn; /* NULL: a free entry */
  bool calls;
};

struct sim_kernels {
  struct sim_worker *caller; /* the calling thread's */
  struct sim_pool *pool;     /* threads >= 2, made on the first kernel with more than one block */
  struct barrier_use *uses;  /* open addressing, a power of two entries, at most half used */
  size_t uses_cap, uses_count;
};

/* The worker this OS thread is running a kernel for; NULL outside kernels. */
static _Thread_local struct sim_worker *running;

/* How often gcap_sim_interrupt was called: a launch stops when it changes (lock-free: signal-safe). */
static atomic_uint interrupts;

void gcap_sim_interrupt(void) { atomic_fetch_add_explicit(&interrupts, 1, memory_order_relaxed); }

static uint64_t now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* Whether the launch must stop, and why: another block failed, an interrupt, the watchdog. */
static enum px_stop job_poll(const struct sim_job *job) {
  if (atomic_load_explicit(&job->failed, memory_order_relaxed)) return PX_STOP_FAILED;
  if (atomic_load_explicit(&interrupts, memory_order_relaxed) != job->interrupts) return PX_STOP_INTERRUPT;
  if (job->deadline_ns && now_ns() >= job->deadline_ns) return PX_STOP_TIMEOUT;
  return PX_GO;
}

static enum px_stop ptx_poll(const struct px_launch *l) {
  return job_poll((const struct sim_job *)(const void *)((const char *)l - offsetof(struct sim_job, ptx)));
}

#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
static void
job_fail(struct sim_job *job, gcap_status st, const char *fmt, ...) {
  if (atomic_exchange(&job->failed, true)) return; /* an earlier failure wins */
  job->status = st;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(job->message, sizeof job->message, fmt, ap);
  va_end(ap);
}

/* ------------------------------------------------------------ indices */

static gcap_dim3 index_at(gcap_dim3 dims, uint64_t i) {
  return (gcap_dim3){(uint32_t)(i % dims.x), (uint32_t)(i / dims.x % dims.y), (uint32_t)(i / dims.x / dims.y)};
}

static void next_index(gcap_dim3 *i, gcap_dim3 dims) {
  if (++i->x < dims.x) return;
  i->x = 0;
  if (++i->y < dims.y) return;
  i->y = 0;
  i->z++;
}

static void *shared_of(const struct sim_worker *w, const struct gcap__launch *l) {
  return l->shared_mem_bytes ? w->shared_mem : NULL;
}

/* ------------------------------------------------------------ workers */

struct sim_worker *sim_worker_create(void) {
  return gcap__calloc(1, sizeof(struct sim_worker)); /* shared memory comes per launch (shared_ready) */
}

void sim_worker_destroy(struct sim_worker *w) {
  if (!w) return;
  for (size_t i = 0; i < w->num_spare; i++) sim_fiber_destroy(w->spare[i]);
  sim_fiber_destroy(w->host);
  px_worker_destroy(w->px);
  px_coop_pool_free(&w->coop);
  gcap__free(w->spare);
  gcap__free(w->slots);
  gcap__free(w->shared_mem);
  gcap__free(w);
}

struct sim_counts sim_worker_take_counts(struct sim_worker *w) {
  struct sim_counts c = w->counts;
  w->counts = (struct sim_counts){0, 0, 0};
  return c;
}

/* ------------------------------------------------------------ plain loop and per-block form */

/* Stops early when a thread called the barrier: the block cannot go on as the kernel meant. */
static void plain_threads(struct sim_worker *w, const struct gcap__launch *l, gcap_sim_thread *t) {
  gcap_sim_kernel_fn fn = l->kernel->sim_fn;
  for (t->thread_idx.z = 0; t->thread_idx.z < l->block.z; t->thread_idx.z++)
    for (t->thread_idx.y = 0; t->thread_idx.y < l->block.y; t->thread_idx.y++)
      for (t->thread_idx.x = 0; t->thread_idx.x < l->block.x; t->thread_idx.x++) {
        fn(t, l->args);
        if (w->misused) return;
      }
}

static void run_plain(struct sim_worker *w, const struct gcap__launch *l, gcap_dim3 block_idx) {
  gcap_sim_thread t = {.grid_dim = l->grid, .block_dim = l->block, .block_idx = block_idx};
  t.shared_mem = shared_of(w, l);
  w->plain = &t;
  plain_threads(w, l, &t);
  w->plain = NULL;
}

static void run_block_fn(struct sim_worker *w, const struct gcap__launch *l, gcap_dim3 block_idx) {
  const gcap_sim_block b = {l->grid, l->block, block_idx, shared_of(w, l)};
  l->kernel->sim_block_fn(&b, l->args);
}

/* A barrier called where no thread can wait: recorded, and the launch fails once the block ends. */
static void note_misuse(struct sim_worker *w) {
  if (w->misused) return;
  w->misused = true;
  w->misuse_thread = w->job->form == FORM_PLAIN ? w->plain->thread_idx : (gcap_dim3){0, 0, 0};
}

static void report_misuse(struct sim_worker *w, struct sim_job *job, gcap_dim3 b) {
  const char *name = job->l->kernel->name;
  gcap_dim3 t = w->misuse_thread;
  w->misused = false;
  if (job->form == FORM_BLOCK) {
    job_fail(job, GCAP_ERROR_BACKEND,
             "kernel \"%s\" block (%u,%u,%u): its per-block function (sim_block_fn) called gcap_sim_syncthreads, "
             "which only a per-thread function (sim_fn) may call",
             name, b.x, b.y, b.z);
    return;
  }
  atomic_store(&job->barrier_in_plain, true);
  job_fail(job, GCAP_ERROR_BACKEND,
           "kernel \"%s\" block (%u,%u,%u): thread (%u,%u,%u) called gcap_sim_syncthreads where the block's threads "
           "run one after another (no thread of the kernel's first block on this context called it); its next "
           "launches run every block's threads as fibers, where the barrier works",
           name, b.x, b.y, b.z, t.x, t.y, t.z);
}

/* ------------------------------------------------------------ fibers */

/* One more fiber, with its place in `spare` reserved so that giving it back cannot fail. */
static struct sim_fiber *make_fiber(struct sim_worker *w) {
  if (gcap__grow((void **)&w->spare, &w->spare_cap, w->fibers_made + 1, sizeof *w->spare) != 0) return NULL;
  struct sim_fiber *f = sim_fiber_create();
  if (f) w->fibers_made++;
  return f;
}

/* A fiber that runs no thread; NULL when none is left and no more can be made. */
static struct sim_fiber *take_spare(struct sim_worker *w) {
  return w->num_spare > 0 ? w->spare[--w->num_spare] : make_fiber(w);
}

static void put_spare(struct sim_worker *w, struct sim_fiber *f) { w->spare[w->num_spare++] = f; }

static struct sim_fiber *thread_main(void *arg);

/* The fiber of thread j, which is about to run; NULL when a fiber is needed and none can be made. */
static struct sim_fiber *wake(struct sim_worker *w, unsigned j) {
  struct sim_slot *s = &w->slots[j];
  if (s->state == SLOT_IDLE) {
    if (!(s->fiber = take_spare(w))) return NULL;
    sim_fiber_prepare(s->fiber, thread_main, s);
    s->state = SLOT_RUNNABLE;
  }
  w->current = j;
  return s->fiber;
}

/*
 * Who runs after thread i stops (at the barrier or returning): the next thread in ring order that
 * has not reached the barrier yet, or the host, for the block's end, when no fiber can be made.
 * Called only while some thread has not reached the barrier or returned.
 */
static struct sim_fiber *next_fiber(struct sim_worker *w, unsigned i) {
  for (unsigned k = 1; k <= w->threads; k++) {
    unsigned j = (i + k) % w->threads;
    if (w->slots[j].state != SLOT_IDLE && w->slots[j].state != SLOT_RUNNABLE) continue;
    struct sim_fiber *f = wake(w, j);
    if (f) return f;
    break;
  }
  w->end = BLOCK_NO_FIBER;
  return w->host;
}

/* Every thread reached the barrier: they all go on, the last one to arrive first. */
static void release(struct sim_worker *w) {
  for (unsigned i = 0; i < w->threads; i++)
    if (w->slots[i].state == SLOT_WAITING) w->slots[i].state = SLOT_RUNNABLE;
  w->arrived = 0;
  w->counts.barriers_passed++;
}

static void barrier_arrive(struct sim_worker *w) {
  struct sim_slot *s = &w->slots[w->current];
  w->reached_barrier = true;
  s->state = SLOT_WAITING;
  if (++w->arrived + w->returned < w->threads) {
    sim_fiber_switch(s->fiber, next_fiber(w, s->index));
    return; /* resumed: the barrier was passed */
  }
  if (w->returned == 0) {
    release(w);
    return;
  }
  w->end = BLOCK_BARRIER_MISMATCH;
  sim_fiber_switch(s->fiber, w->host); /* the block is abandoned: this never resumes */
}

/* Thread s returned; the fiber to switch to next. Its own fiber goes back after the next one is taken. */
static struct sim_fiber *thread_returned(struct sim_worker *w, struct sim_slot *s) {
  struct sim_fiber *own = s->fiber, *next = w->host;
  s->state = SLOT_DONE;
  s->fiber = NULL;
  if (++w->returned + w->arrived < w->threads) next = next_fiber(w, s->index);
  else if (w->arrived > 0) w->end = BLOCK_BARRIER_MISMATCH;
  put_spare(w, own);
  return next;
}

static struct sim_fiber *thread_main(void *arg) {
  struct sim_slot *s = arg;
  const struct gcap__launch *l = s->w->job->l;
  l->kernel->sim_fn(&s->t, l->args);
  return thread_returned(s->w, s);
}

/* After a failed block: the fibers still suspended in it are taken back. */
static void block_failed(struct sim_worker *w, struct sim_job *job, gcap_dim3 b) {
  for (unsigned i = 0; i < w->threads; i++) {
    struct sim_slot *s = &w->slots[i];
    if (!s->fiber) continue;
    sim_fiber_abandon(s->fiber);
    put_spare(w, s->fiber);
    s->fiber = NULL;
  }
  const char *name = job->l->kernel->name;
  if (w->end == BLOCK_NO_FIBER)
    job_fail(job, GCAP_ERROR_OUT_OF_MEMORY,
             "kernel \"%s\" block (%u,%u,%u): no memory for the fibers of its %u threads", name, b.x, b.y, b.z,
             w->threads);
  else
    job_fail(job, GCAP_ERROR_BACKEND,
             "kernel \"%s\" block (%u,%u,%u): %u of %u threads reached gcap_sim_syncthreads while %u returned "
             "(a barrier every thread of the block must reach)",
             name, b.x, b.y, b.z, w->arrived, w->threads, w->returned);
}

static void run_fibers(struct sim_worker *w, const struct sim_job *job, gcap_dim3 block_idx) {
  const struct gcap__launch *l = job->l;
  w->threads = job->threads;
  w->arrived = w->returned = 0;
  w->end = BLOCK_OK;
  for (unsigned i = 0; i < w->threads; i++) {
    struct sim_slot *s = &w->slots[i];
    s->t = (gcap_sim_thread){l->grid, l->block, block_idx, index_at(l->block, i), shared_of(w, l)};
    s->state = SLOT_IDLE;
  }
  sim_fiber_adopt_thread(w->host);
  struct sim_fiber *first = wake(w, 0);
  if (first) sim_fiber_switch(w->host, first);
  else w->end = BLOCK_NO_FIBER;
}

/*
 * Room for blocks of `threads` threads as fibers, and `fibers` fibers made in advance, so that
 * a block fails for want of memory only when more of its threads wait at a barrier at once.
 */
static bool fibers_ready(struct sim_worker *w, unsigned threads, unsigned fibers) {
  if (!w->host && !(w->host = sim_fiber_create_host())) return false;
  size_t had = w->slots_cap;
  if (gcap__grow((void **)&w->slots, &w->slots_cap, threads, sizeof *w->slots) != 0) return false;
  for (size_t i = had; i < w->slots_cap; i++) w->slots[i] = (struct sim_slot){.w = w, .index = (unsigned)i};
  while (w->fibers_made < fibers) {
    struct sim_fiber *f = make_fiber(w);
    if (!f) return false;
    put_spare(w, f);
  }
  return true;
}

/* ------------------------------------------------------------ blocks and chunks */

static void run_ptx_block(struct sim_worker *w, struct sim_job *job, gcap_dim3 b) {
  char msg[GCAP__MESSAGE_BYTES];
  if (!w->px && !(w->px = px_worker_create())) {
    job_fail(job, GCAP_ERROR_OUT_OF_MEMORY, "kernel \"%s\": no memory to run PTX blocks", job->l->kernel->name);
    return;
  }
  gcap_status st = job->ptx.grid_workspace /* a cooperative launch: the whole grid, as one */
                       ? px_run_cooperative(&job->ptx, &w->coop, msg, sizeof msg, &w->counts.ptx_instructions)
                       : px_run_block(w->px, &job->ptx, b, msg, sizeof msg, &w->counts.ptx_instructions);
  if (st != GCAP_SUCCESS) job_fail(job, st, "%s", msg);
}

static void run_block(struct sim_worker *w, struct sim_job *job, gcap_dim3 b) {
  w->counts.blocks++;
  switch (job->form) {
  case FORM_PTX: run_ptx_block(w, job, b); return;
  case FORM_BLOCK: run_block_fn(w, job->l, b); break;
  case FORM_PLAIN: run_plain(w, job->l, b); break;
  case FORM_FIBERS:
    run_fibers(w, job, b);
    if (w->end != BLOCK_OK) block_failed(w, job, b);
    return;
  }
  if (w->misused) report_misuse(w, job, b);
}

static bool claim(struct sim_job *job, uint64_t *begin, uint64_t *end) {
  if (atomic_load_explicit(&job->failed, memory_order_relaxed)) return false;
  uint64_t b = atomic_fetch_add_explicit(&job->next, job->chunk, memory_order_relaxed);
  if (b >= job->end) return false;
  *begin = b;
  *end = job->end - b < job->chunk ? job->end : b + job->chunk;
  return true;
}

/*
 * A CPU implementation cannot be stopped inside a block: the watchdog and interrupts stop it
 * between blocks (the clock is read every 16 blocks; PTX blocks poll inside, in ptx_run.c).
 */
static bool cpu_stopped(struct sim_job *job, uint64_t i, gcap_dim3 b) {
  if (job->form == FORM_PTX || i % 16 != 15) return false;
  enum px_stop why = job_poll(job);
  if (why == PX_GO || why == PX_STOP_FAILED) return why != PX_GO;
  const char *name = job->l->kernel->name;
  if (why == PX_STOP_TIMEOUT)
    job_fail(job, GCAP_ERROR_LAUNCH_TIMEOUT,
             "kernel \"%s\" ran past the simulator's watchdog (%u ms, kernel_timeout_ms or GCAP_SIM_KERNEL_TIMEOUT) "
             "and was stopped before block (%u,%u,%u) (a CPU implementation stops only between blocks)",
             name, job->timeout_ms, b.x, b.y, b.z);
  else
    job_fail(job, GCAP_ERROR_LAUNCH_TIMEOUT,
             "kernel \"%s\" was stopped by gcap_sim_interrupt before block (%u,%u,%u) (a CPU implementation stops "
             "only between blocks)",
             name, b.x, b.y, b.z);
  return true;
}

static void run_range(struct sim_worker *w, struct sim_job *job, uint64_t begin, uint64_t end) {
  gcap_dim3 b = index_at(job->l->grid, begin);
  for (uint64_t i = begin; i < end; i++, next_index(&b, job->l->grid)) {
    if (atomic_load_explicit(&job->failed, memory_order_relaxed) || cpu_stopped(job, i, b)) return;
    run_block(w, job, b);
  }
}

/* The dynamic shared memory of a CPU implementation's blocks: grown when a launch asks for more. */
static bool shared_ready(struct sim_worker *w, size_t bytes) {
  if (bytes <= w->shared_cap) return true;
  gcap__free(w->shared_mem);
  w->shared_cap = 0;
  if (!(w->shared_mem = gcap__malloc(bytes))) return false;
  w->shared_cap = bytes;
  return true;
}

void sim_worker_run(struct sim_worker *w, struct sim_job *job) {
  if (job->form == FORM_FIBERS && !fibers_ready(w, job->threads, job->fibers)) {
    job_fail(job, GCAP_ERROR_OUT_OF_MEMORY, "kernel \"%s\": no memory to run its %u threads per block as fibers",
             job->l->kernel->name, job->threads);
    return;
  }
  if (job->form != FORM_PTX && !shared_ready(w, job->l->shared_mem_bytes)) {
    job_fail(job, GCAP_ERROR_OUT_OF_MEMORY, "kernel \"%s\": no memory for the %u bytes of shared memory of a block",
             job->l->kernel->name, job->l->shared_mem_bytes);
    return;
  }
  struct sim_worker *outer = running; /* a kernel may launch one on another context */
  w->job = job;
  running = w;
  uint64_t begin, end;
  while (claim(job, &begin, &end)) run_range(w, job, begin, end);
  running = outer;
  w->job = NULL;
}

void gcap_sim_syncthreads(const gcap_sim_thread *t) {
  (void)t; /* the worker knows which thread runs; t may be a copy */
  struct sim_worker *w = running;
  if (!w) return; /* a host thread, outside any simulated kernel: no block to wait for */
  if (w->job->form == FORM_FIBERS) barrier_arrive(w);
  else note_misuse(w);
}

/* ------------------------------------------------------------ what is known of kernels' barriers */

static size_t use_index(gcap_sim_kernel_fn fn, size_t cap) {
  uint64_t h = (uint64_t)(uintptr_t)fn;
  h = (h ^ (h >> 29)) * 0x9e3779b97f4a7c15ULL;
  return (size_t)(h >> 32) & (cap - 1);
}

static struct barrier_use *find_use(struct barrier_use *uses, size_t cap, gcap_sim_kernel_fn fn) {
  if (cap == 0) return NULL;
  size_t i = use_index(fn, cap);
  while (uses[i].fn && uses[i].fn != fn) i = (i + 1) & (cap - 1);
  return &uses[i];
}

static bool grow_uses(struct sim_kernels *ks) {
  size_t cap = ks->uses_cap ? 2 * ks->uses_cap : 16;
  struct barrier_use *uses = gcap__calloc(cap, sizeof *uses);
  if (!uses) return false;
  for (size_t i = 0; i < ks->uses_cap; i++)
    if (ks->uses[i].fn) *find_use(uses, cap, ks->uses[i].fn) = ks->uses[i];
  gcap__free(ks->uses);
  ks->uses = uses;
  ks->uses_cap = cap;
  return true;
}

/* Room for one more function, taken before its first launch runs, so remembering cannot fail. */
static bool room_for_use(struct sim_kernels *ks) { return 2 * (ks->uses_count + 1) <= ks->uses_cap || grow_uses(ks); }

static void remember(struct sim_kernels *ks, gcap_sim_kernel_fn fn, bool calls) {
  struct barrier_use *u = find_use(ks->uses, ks->uses_cap, fn);
  if (!u->fn) ks->uses_count++;
  *u = (struct barrier_use){fn, calls};
}

/* ------------------------------------------------------------ launches */

struct sim_kernels *sim_kernels_create(void) {
  struct sim_kernels *ks = gcap__calloc(1, sizeof *ks);
  if (ks && !(ks->caller = sim_worker_create())) {
    gcap__free(ks);
    return NULL;
  }
  return ks;
}

void sim_kernels_destroy(struct sim_kernels *ks) {
  if (!ks) return;
  sim_pool_destroy(ks->pool);
  sim_worker_destroy(ks->caller);
  gcap__free(ks->uses);
  gcap__free(ks);
}

static void job_init(struct sim_job *job, const struct gcap__launch *l) {
  job->l = l;
  job->form = l->kernel->sim_block_fn ? FORM_BLOCK : FORM_PLAIN;
  job->threads = job->fibers = l->block.x * l->block.y * l->block.z;
  job->end = (uint64_t)l->grid.x * l->grid.y * l->grid.z;
  job->chunk = job->end;
  atomic_init(&job->next, 0);
  atomic_init(&job->failed, false);
  atomic_init(&job->barrier_in_plain, false);
  job->instructions = 0;
  job->status = GCAP_SUCCESS;
  job->message[0] = '\0';
  job->backend = NULL;
  job->deadline_ns = 0;
  job->timeout_ms = 0;
  job->interrupts = atomic_load(&interrupts);
}

/* The watchdog starts as the launch's first block is about to run. */
static void arm(const struct sim_context *sc, struct sim_job *job) {
  job->timeout_ms = sc->options.kernel_timeout_ms;
  job->deadline_ns = job->timeout_ms ? now_ns() + (uint64_t)job->timeout_ms * 1000000u : 0;
  job->ptx.poll = ptx_poll;
  job->ptx.timeout_ms = job->timeout_ms;
}

/*
 * The first launch of a per-thread function on this context: its first block runs as fibers on
 * the calling thread, and whether a thread called the barrier decides the form of the rest.
 */
static void probe(struct sim_kernels *ks, struct sim_job *job) {
  uint64_t blocks = job->end;
  job->form = FORM_FIBERS;
  job->end = job->chunk = 1;
  job->fibers = 2; /* all a block takes when no thread waits; more are made if one does */
  ks->caller->reached_barrier = false;
  sim_worker_run(ks->caller, job);
  job->fibers = job->threads;
  bool calls = ks->caller->reached_barrier;
  if (calls || !atomic_load(&job->failed)) remember(ks, job->l->kernel->sim_fn, calls);
  job->form = calls ? FORM_FIBERS : FORM_PLAIN;
  job->end = job->chunk = blocks;
  atomic_store(&job->next, 1);
}

static bool use_pool(const struct sim_context *sc, const struct sim_job *job) {
  return sc->options.threads >= 2 && job->end >= 2;
}

/*
 * The form of a per-thread function's blocks, when known, and whatever the launch needs made
 * before any block runs: a failure leaves the kernel's work untouched. A probe takes two fibers
 * (a block whose threads never wait needs no more) and the room to remember its answer.
 */
static gcap_status prepare(struct sim_context *sc, struct sim_job *job, bool *probe_first) {
  struct sim_kernels *ks = sc->kernels;
  const char *name = job->l->kernel->name;
  const struct barrier_use *u = find_use(ks->uses, ks->uses_cap, job->l->kernel->sim_fn);
  *probe_first = job->form == FORM_PLAIN && !(u && u->fn);
  if (job->form == FORM_PLAIN && !*probe_first) job->form = u->calls ? FORM_FIBERS : FORM_PLAIN;
  if (*probe_first && (!room_for_use(ks) || !fibers_ready(ks->caller, job->threads, 2)))
    return gcap__fail(GCAP_ERROR_OUT_OF_MEMORY, "kernel \"%s\": no memory for the fibers of its first block", name);
  if (use_pool(sc, job) && !ks->pool && !(ks->pool = sim_pool_create(sc->options.threads)))
    return gcap__fail(GCAP_ERROR_OUT_OF_MEMORY, "kernel \"%s\": the simulator could not start its %u worker threads",
                      name, sc->options.threads - 1);
  return GCAP_SUCCESS;
}

/* Chunks small enough that workers finishing early find more, large enough to keep the counter cold. */
static uint64_t chunk_for(uint64_t blocks, unsigned workers) {
  uint64_t chunk = blocks / ((uint64_t)workers * 4);
  return chunk ? chunk : 1;
}

/*
 * The blocks not yet run: with threads >= 2 and several blocks, on the pool. Where the call
 * allows it, with the context lock released (other threads may allocate, issue and query
 * meanwhile; what must not overlap waits in sim_wait.c): strict memory keeps it, since every
 * region is open to the process while work runs and its allocator assumes none is
 * (docs/simulator.md, the watchdog). The counters are added once the lock is back.
 */
static gcap_status run_rest(struct sim_context *sc, struct sim_job *job) {
  struct sim_kernels *ks = sc->kernels;
  bool released = false;
  sc->kernels_out++; /* before the lock goes: other threads read it under the lock */
  gcap_status st = gcap__work_release(&sc->base, !sc->options.strict_memory, &released);
  if (!released) sc->kernels_out--;
  if (st != GCAP_SUCCESS) return st;
  struct sim_counts pool = {0, 0, 0};
  bool parallel = use_pool(sc, job);
  if (parallel) job->chunk = chunk_for(job->end, sc->options.threads);
  if (parallel) pool = sim_pool_run(ks->pool, ks->caller, job);
  else sim_worker_run(ks->caller, job);
  if (released) {
    gcap__work_reacquire(&sc->base, true);
    sc->kernels_out--;
    sim_wake(sc);
  }
  sc->stats.barriers_passed += pool.barriers_passed;
  sc->stats.ptx_instructions += pool.ptx_instructions;
  job->instructions += pool.ptx_instructions;
  if (parallel) sc->stats.blocks_parallel += pool.blocks + ks->caller->counts.blocks;
  return GCAP_SUCCESS;
}

/*
 * A misused barrier fails the launch with GCAP_ERROR_BACKEND: every argument was valid (so not
 * INVALID_VALUE) and no gcap object is in a wrong state (ILLEGAL_STATE); it is the kernel that
 * failed while it ran, which on CUDA reaches the caller as a driver error (a launch failure or a
 * hang), and gcap reports driver errors it has no code for as BACKEND.
 */
/* What runs a kernel: its CPU implementation, its PTX, or nothing (a stub). */
static enum sim_form form_of(const struct sim_context *sc, const struct gcap__kernel_info *k, bool *stub) {
  bool cpu = k->sim_fn || k->sim_block_fn;
  gcap_sim_kernels mode = sc->options.kernels;
  *stub = false;
  if (k->impl && (mode == GCAP_SIM_KERNELS_PTX || (mode == GCAP_SIM_KERNELS_AUTO && !cpu))) return FORM_PTX;
  if (mode != GCAP_SIM_KERNELS_PTX && cpu) return FORM_PLAIN;
  *stub = true;
  return FORM_PLAIN;
}

gcap_status sim_kernel_check(const struct gcap__backend_ctx *b, const struct gcap__kernel_info *k) {
  bool stub = false;
  const char *why = form_of((const struct sim_context *)b, k, &stub) == FORM_PTX ? px_kernel_unrunnable(k->impl) : NULL;
  if (!why) return GCAP_SUCCESS;
  return gcap__fail(GCAP_ERROR_NOT_SUPPORTED, "%s", why);
}

/* The blocks of a PTX kernel: their parameters in the PTX's layout, the checks the context asks for. */
static gcap_status run_ptx(struct sim_context *sc, struct sim_job *job) {
  const struct gcap__launch *l = job->l;
  const struct px_kernel *k = l->kernel->impl;
  if (px_kernel_unrunnable(k)) /* kernel_check refuses it at every launch and node: a guard, it has no code */
    return gcap__fail(GCAP_ERROR_NOT_SUPPORTED, "%s", px_kernel_unrunnable(k));
  job->form = FORM_PTX;
  job->ptx = (struct px_launch){px_kernel_program(k),
                                k,
                                l->kernel->name,
                                l->grid,
                                l->block,
                                l->shared_mem_bytes,
                                sc->options.checks,
                                sc->options.seed ^ sc->stats.kernels_executed,
                                &sc->base,
                                NULL,
                                &job->failed,
                                px_next_serial(),
                                sc,
                                sim_init_bits};
  job->ptx.zero_memory = sc->options.zero_block_memory;
  if (sc->frees_queued) {
    job->ptx.pending_frees = (const uintptr_t(*)[2])job->pending_frees;
    job->ptx.num_pending_frees = sim_pending_frees(sc, job->pending_frees, SIM_PENDING_FREES);
  }
  gcap_status st = px_launch_check(&job->ptx);
  if (st != GCAP_SUCCESS) return st;
  void *workspace = NULL; /* a cooperative launch's grid workspace: zeros, its own (docs/ptx.md, %envreg) */
  if (l->cooperative && !(workspace = gcap__aligned_alloc(256, PX_GRID_WORKSPACE_BYTES)))
    return gcap__fail(GCAP_ERROR_OUT_OF_MEMORY, "kernel \"%s\": no memory for its grid workspace", l->kernel->name);
  if (workspace) {
    memset(workspace, 0, PX_GRID_WORKSPACE_BYTES);
    job->ptx.grid_workspace = (uint64_t)(uintptr_t)workspace;
    job->end = job->chunk = 1; /* one "block" that runs them all, on the calling thread */
  }
  if (!(job->ptx.params = px_launch_params(k, l->args))) {
    gcap__free(workspace);
    return gcap__fail(GCAP_ERROR_OUT_OF_MEMORY, "kernel \"%s\": no memory for its parameters", l->kernel->name);
  }
  if (use_pool(sc, job) && !sc->kernels->pool && !(sc->kernels->pool = sim_pool_create(sc->options.threads))) {
    gcap__free(job->ptx.params);
    gcap__free(workspace);
    return gcap__fail(GCAP_ERROR_OUT_OF_MEMORY, "kernel \"%s\": the simulator could not start its %u worker threads",
                      l->kernel->name, sc->options.threads - 1);
  }
  sc->stats.kernels_executed++;
  arm(sc, job);
  st = run_rest(sc, job);
  uint64_t own = sim_worker_take_counts(sc->kernels->caller).ptx_instructions;
  sc->stats.ptx_instructions += own;
  px_kernel_count_run(k, job->instructions + own);
  gcap__free(job->ptx.params);
  gcap__free(workspace);
  if (st != GCAP_SUCCESS) return st;
  return atomic_load(&job->failed) ? gcap__fail(job->status, "%s", job->message) : GCAP_SUCCESS;
}

static gcap_status run_kernel(struct sim_context *sc, const struct gcap__launch *l) {
  bool stub = false;
  enum sim_form form = form_of(sc, l->kernel, &stub);
  if (stub && sc->options.kernels == GCAP_SIM_KERNELS_PTX)
    return gcap__fail(GCAP_ERROR_NOT_SUPPORTED,
                      "kernel \"%s\" has no PTX to run (GCAP_SIM_KERNELS=ptx): load its module with a PTX image or "
                      "a source",
                      l->kernel->name);
  if (stub) {
    sc->stats.kernels_stubbed++;
    return GCAP_SUCCESS;
  }
  if (form == FORM_PTX) {
    struct sim_job job;
    job_init(&job, l);
    job.backend = &sc->base;
    return run_ptx(sc, &job);
  }
  if (sc->init) sim_init_mark_all(sc); /* a CPU implementation writes what the INIT check cannot see */
  struct sim_kernels *ks = sc->kernels;
  struct sim_job job;
  bool probe_first = false;
  job_init(&job, l);
  job.backend = &sc->base;
  gcap_status st = prepare(sc, &job, &probe_first);
  if (st != GCAP_SUCCESS) return st;
  sc->stats.kernels_executed++;
  arm(sc, &job);
  if (probe_first) probe(ks, &job);
  if (!atomic_load(&job.failed)) st = run_rest(sc, &job);
  if (atomic_load(&job.barrier_in_plain)) remember(ks, l->kernel->sim_fn, true);
  sc->stats.barriers_passed += sim_worker_take_counts(ks->caller).barriers_passed;
  if (st != GCAP_SUCCESS) return st;
  return atomic_load(&job.failed) ? gcap__fail(job.status, "%s", job.message) : GCAP_SUCCESS;
}

/*
 * A kernel stopped by the watchdog or an interrupt leaves the context faulted (sticky, as on a
 * GPU): work still queued (DEFERRED) runs no more kernels, so a wait ends at once.
 */
gcap_status sim_run_kernel(struct sim_context *sc, const struct gcap__launch *l) {
  if (sc->halted)
    return gcap__fail(GCAP_ERROR_LAUNCH_TIMEOUT,
                      "kernel \"%s\" did not run: an earlier kernel of the context was stopped (watchdog or "
                      "gcap_sim_interrupt)",
                      l->kernel->name);
  gcap_status st = run_kernel(sc, l);
  if (st == GCAP_ERROR_LAUNCH_TIMEOUT) sc->halted = true;
  return st;
}

void gcap_sim_set_conditional(gcap_conditional_handle h, unsigned value) {
  struct sim_worker *w = running;
  if (!w) return; /* device code only */
  struct gcap__cond *c = gcap__cond_lookup(h);
  if (!c || c->owner != w->job->backend) {
    job_fail(w->job, GCAP_ERROR_INVALID_VALUE,
             "kernel \"%s\" called gcap_sim_set_conditional with 0x%llx, which is not a live conditional handle%s",
             w->job->l->kernel->name, (unsigned long long)h, c ? " of its context" : "");
    return;
  }
  atomic_store(&c->value, value);
}
