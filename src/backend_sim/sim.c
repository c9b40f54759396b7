#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/error.h"
#include "backend_sim/ptx/ptx_exec.h"
#include "sim_internal.h"

struct sim_context *sim_context_from(struct gcap__backend_ctx *b) {
  assert(b->ops == &gcap__sim_ops);
  return (struct sim_context *)b;
}

void gcap_sim_options_init(gcap_sim_options *o) {
  if (!o) return;
  memset(o, 0, sizeof *o);
  o->order = GCAP_SIM_ORDER_CAPTURE;
  o->kernels = GCAP_SIM_KERNELS_AUTO;
  o->checks = GCAP_SIM_CHECK_MEMORY | GCAP_SIM_CHECK_SYNC;
  o->kernel_timeout_ms = GCAP_SIM_KERNEL_TIMEOUT_DEFAULT_MS;
}

static gcap_status sim_available(void) { return GCAP_SUCCESS; }

/* A u64 in decimal, all of it: strtoull alone would take " -1" as 2^64 - 1. */
static bool parse_u64(const char *text, uint64_t *out) {
  if (text[0] < '0' || text[0] > '9') return false;
  char *end = NULL;
  errno = 0;
  unsigned long long v = strtoull(text, &end, 10);
  if (errno != 0 || *end != '\0') return false;
  *out = v;
  return true;
}

/* "0" or "1", as every boolean GCAP_SIM_* variable. */
static gcap_status parse_flag(const char *name, const char *text, bool *out) {
  if (strcmp(text, "1") != 0 && strcmp(text, "0") != 0)
    return gcap__fail(GCAP_ERROR_INVALID_VALUE, "%s=\"%s\" is not 0 or 1", name, gcap__quoted(text));
  *out = text[0] == '1';
  return GCAP_SUCCESS;
}

static const char *env(const char *name) {
  const char *v = getenv(name);
  return v && *v ? v : NULL;
}

static gcap_status order_from_environment(gcap_sim_options *o) {
  const char *order = env("GCAP_SIM_ORDER"), *seed = env("GCAP_SIM_SEED");
  if (order) {
    if (strcmp(order, "shuffle") == 0) o->order = GCAP_SIM_ORDER_SHUFFLE;
    else if (strcmp(order, "capture") != 0)
      return gcap__fail(GCAP_ERROR_INVALID_VALUE, "GCAP_SIM_ORDER=\"%s\" is not capture or shuffle",
                        gcap__quoted(order));
  }
  if (seed && !parse_u64(seed, &o->seed))
    return gcap__fail(GCAP_ERROR_INVALID_VALUE, "GCAP_SIM_SEED=\"%s\" is not a decimal number below 2^64",
                      gcap__quoted(seed));
  return GCAP_SUCCESS;
}

static gcap_status execution_from_environment(gcap_sim_options *o) {
  const char *exec = env("GCAP_SIM_EXEC"), *threads = env("GCAP_SIM_THREADS");
  if (exec) {
    if (strcmp(exec, "deferred") == 0) o->exec = GCAP_SIM_EXEC_DEFERRED;
    else if (strcmp(exec, "immediate") != 0)
      return gcap__fail(GCAP_ERROR_INVALID_VALUE, "GCAP_SIM_EXEC=\"%s\" is not immediate or deferred",
                        gcap__quoted(exec));
  }
  uint64_t n = 0;
  if (threads && (!parse_u64(threads, &n) || n > SIM_MAX_THREADS))
    return gcap__fail(GCAP_ERROR_INVALID_VALUE, "GCAP_SIM_THREADS=\"%s\" is not a number from 0 to %u",
                      gcap__quoted(threads), SIM_MAX_THREADS);
  if (threads) o->threads = (unsigned)n;
  const char *timeout = env("GCAP_SIM_KERNEL_TIMEOUT");
  if (timeout && (!parse_u64(timeout, &n) || n > UINT32_MAX))
    return gcap__fail(GCAP_ERROR_INVALID_VALUE,
                      "GCAP_SIM_KERNEL_TIMEOUT=\"%s\" is not a number of milliseconds from 0 (no watchdog) to %u",
                      gcap__quoted(timeout), UINT32_MAX);
  if (timeout) o->kernel_timeout_ms = (uint32_t)n;
  return GCAP_SUCCESS;
}

#define ALL_CHECKS (GCAP_SIM_CHECK_MEMORY | GCAP_SIM_CHECK_SYNC | GCAP_SIM_CHECK_SHARED_RACES | GCAP_SIM_CHECK_INIT)

/* "none", "all", or a comma list of memory, sync, shared, init. */
static bool parse_checks(const char *text, unsigned *out) {
  static const struct {
    const char *name;
    unsigned bit;
  } names[] = {{"memory", GCAP_SIM_CHECK_MEMORY},
               {"sync", GCAP_SIM_CHECK_SYNC},
               {"shared", GCAP_SIM_CHECK_SHARED_RACES},
               {"init", GCAP_SIM_CHECK_INIT}};
  if (strcmp(text, "none") == 0 || strcmp(text, "all") == 0) {
    *out = text[0] == 'a' ? ALL_CHECKS : 0;
    return true;
  }
  unsigned bits = 0;
  for (const char *p = text;; p++) {
    size_t len = strcspn(p, ",");
    size_t i = 0;
    while (i < sizeof names / sizeof names[0] && (strlen(names[i].name) != len || strncmp(names[i].name, p, len) != 0))
      i++;
    if (i == sizeof names / sizeof names[0]) return false;
    bits |= names[i].bit;
    p += len;
    if (*p == '\0') break;
  }
  *out = bits;
  return true;
}

static gcap_status kernels_from_environment(gcap_sim_options *o) {
  const char *kernels = env("GCAP_SIM_KERNELS"), *checks = env("GCAP_SIM_CHECKS");
  if (kernels) {
    if (strcmp(kernels, "cpu") == 0) o->kernels = GCAP_SIM_KERNELS_CPU;
    else if (strcmp(kernels, "ptx") == 0) o->kernels = GCAP_SIM_KERNELS_PTX;
    else if (strcmp(kernels, "auto") != 0)
      return gcap__fail(GCAP_ERROR_INVALID_VALUE, "GCAP_SIM_KERNELS=\"%s\" is not auto, cpu or ptx",
                        gcap__quoted(kernels));
  }
  if (checks && !parse_checks(checks, &o->checks))
    return gcap__fail(GCAP_ERROR_INVALID_VALUE,
                      "GCAP_SIM_CHECKS=\"%s\" is not none, all, or a comma list of memory, sync, shared, init",
                      gcap__quoted(checks));
  return GCAP_SUCCESS;
}

/*
 * Without explicit options, the GCAP_SIM_* variables set them, so that a whole test suite can
 * run shuffled, deferred, race-checked and with strict memory.
 */
static gcap_status options_from_environment(gcap_sim_options *o, const char **trace_path) {
  const char *races = env("GCAP_SIM_CHECK_RACES"), *strict = env("GCAP_SIM_STRICT_MEMORY");
  const char *zero = env("GCAP_SIM_ZERO_BLOCK_MEMORY"), *poison = env("GCAP_SIM_POISON_ALLOCATIONS");
  gcap_status st = order_from_environment(o);
  if (st == GCAP_SUCCESS) st = execution_from_environment(o);
  if (st == GCAP_SUCCESS) st = kernels_from_environment(o);
  if (st == GCAP_SUCCESS && races) st = parse_flag("GCAP_SIM_CHECK_RACES", races, &o->check_races);
  if (st == GCAP_SUCCESS && strict) st = parse_flag("GCAP_SIM_STRICT_MEMORY", strict, &o->strict_memory);
  if (st == GCAP_SUCCESS && zero) st = parse_flag("GCAP_SIM_ZERO_BLOCK_MEMORY", zero, &o->zero_block_memory);
  if (st == GCAP_SUCCESS && poison) st = parse_flag("GCAP_SIM_POISON_ALLOCATIONS", poison, &o->poison_allocations);
  *trace_path = env("GCAP_SIM_TRACE");
  return st;
}

static gcap_status check_options(const gcap_sim_options *so) {
  if (so->order != GCAP_SIM_ORDER_CAPTURE && so->order != GCAP_SIM_ORDER_SHUFFLE)
    return gcap__fail(GCAP_ERROR_INVALID_VALUE, "options->sim->order %d is not CAPTURE or SHUFFLE", (int)so->order);
  if (so->exec != GCAP_SIM_EXEC_IMMEDIATE && so->exec != GCAP_SIM_EXEC_DEFERRED)
    return gcap__fail(GCAP_ERROR_INVALID_VALUE, "options->sim->exec %d is not IMMEDIATE or DEFERRED", (int)so->exec);
  if (so->threads > SIM_MAX_THREADS)
    return gcap__fail(GCAP_ERROR_INVALID_VALUE, "options->sim->threads %u is above %u", so->threads, SIM_MAX_THREADS);
  if ((unsigned)so->kernels > GCAP_SIM_KERNELS_PTX)
    return gcap__fail(GCAP_ERROR_INVALID_VALUE, "options->sim->kernels %d is not AUTO, CPU or PTX", (int)so->kernels);
  if (so->checks & ~ALL_CHECKS)
    return gcap__fail(GCAP_ERROR_INVALID_VALUE, "options->sim->checks 0x%x has bits other than GCAP_SIM_CHECK_*",
                      so->checks);
  return GCAP_SUCCESS;
}

static gcap_status sim_context_create(const gcap_context_options *o, struct gcap__backend_ctx **out) {
  gcap_sim_options so;
  const char *trace_path = NULL;
  gcap_sim_options_init(&so);
  if (o->sim) so = *o->sim;
  else if (options_from_environment(&so, &trace_path) != GCAP_SUCCESS) return GCAP_ERROR_INVALID_VALUE;
  if (check_options(&so) != GCAP_SUCCESS) return GCAP_ERROR_INVALID_VALUE;
  FILE *owned = trace_path ? fopen(trace_path, "w") : NULL;
  if (trace_path && !owned)
    return gcap__fail(GCAP_ERROR_INVALID_VALUE, "GCAP_SIM_TRACE=\"%s\": cannot open it for writing (%s)",
                      gcap__quoted(trace_path), strerror(errno));
  struct sim_context *sc = gcap__calloc(1, sizeof *sc);
  struct sim_kernels *kernels = sc ? sim_kernels_create() : NULL;
  if (!kernels) {
    gcap__free(sc);
    if (owned) fclose(owned);
    return gcap__fail(GCAP_ERROR_OUT_OF_MEMORY, "no memory for the simulator");
  }
  sc->base.ops = &gcap__sim_ops;
  sc->options = so;
  sc->rng = so.seed;
  sc->interleave_rng = so.seed ^ 0x243f6a8885a308d3ULL;
  sc->kernels = kernels;
  sim_wait_init(sc);
  sc->trace = owned ? owned : so.trace;
  sc->trace_owned = owned != NULL;
  if (sc->trace) sim_trace_open(sc);
  *out = &sc->base;
  return GCAP_SUCCESS;
}

static void sim_context_destroy(struct gcap__backend_ctx *b) {
  struct sim_context *sc = sim_context_from(b);
  if (sc->trace) sim_trace_close(sc);
  if (sc->trace_owned) fclose(sc->trace);
  sim_queue_release_freed(sc);
  sim_queue_destroy(sc);
  gcap__free(sc->ready);
  sim_kernels_destroy(sc->kernels); /* joins the worker threads */
  sim_init_destroy(sc);
  sim_memory_destroy(sc); /* after the held frees above went back to it */
  sim_wait_destroy(sc);
  gcap__free(sc);
}

/* IMMEDIATE: every stream's work already ran when it was issued, but for a kernel running on another thread. */
static gcap_status sim_context_synchronize(struct gcap__backend_ctx *b) {
  struct sim_context *sc = sim_context_from(b);
  if (sim_deferred(sc)) return sim_drain_all(sc);
  sim_wait_kernels(sc);
  return GCAP_SUCCESS;
}

/*
 * DEFERRED: as cudaFree, freeing waits for all work first. A failure of the work it ran goes to
 * the next wait (the freeing call's own message stays as it was); a wait that could not run all
 * the work (no memory for it) fails the free, which must then free nothing the work still uses.
 */
static gcap_status wait_before_free(struct sim_context *sc) {
  sim_wait_idle(sc);                        /* IMMEDIATE: another thread's kernel and the work waiting for it */
  if (sim_deferred(sc)) sim_wait_drain(sc); /* DEFERRED: another thread's drain, which runs the kernels */
  if (!sim_deferred(sc) || sc->draining || sim_queues_empty(sc)) return GCAP_SUCCESS;
  char saved[GCAP__MESSAGE_BYTES];
  snprintf(saved, sizeof saved, "%s", gcap_last_error_message());
  gcap_status st = sim_drain_all(sc);
  if (st != GCAP_SUCCESS && !sim_queues_empty(sc)) return st;
  sim_keep_unreported(sc, st);
  gcap__restore_message(saved);
  return GCAP_SUCCESS;
}

static gcap_status sim_before_release(struct gcap__backend_ctx *b) { return wait_before_free(sim_context_from(b)); }

static gcap_status aligned(size_t alignment, size_t bytes, void **out) {
  void *p = NULL;
  if (posix_memalign(&p, alignment, bytes) != 0 || !p)
    return gcap__fail(GCAP_ERROR_OUT_OF_MEMORY, "the simulator could not allocate %zu bytes", bytes);
  *out = p;
  return GCAP_SUCCESS;
}

/* 256-byte alignment, as cuMemAlloc guarantees. */
static void release_device(struct sim_context *sc, void *p) {
  if (sc->options.strict_memory) sim_device_free(sc, p);
  else free(p);
}

/*
 * poison_allocations: fresh device memory holds the poison pattern of the context's seed (as a
 * caching allocator's reused blocks hold old data), written as a fill would be, so that strict
 * memory opens just these bytes. The INIT check still counts them as never written.
 */
static void poison(struct sim_context *sc, void *p, size_t bytes) {
  struct gcap__fill f = {p, 0, 1, bytes, 1, bytes};
  sim_work_begin_for(sc, NULL, &f);
  px_poison_fill(p, bytes, 0, px_poison_word(sc->options.seed ^ 0xa110ca7e0000a110ull));
  sim_work_end(sc);
}

/* The simulated device's memory, an H100's 80 GiB (as its module variables count it too): an
 * allocation larger than all of it fails as on such a GPU, without asking the host for it. */
#define SIM_DEVICE_BYTES ((size_t)80 << 30)

static gcap_status larger_than_device(size_t bytes, const char *what) {
  return gcap__fail(GCAP_ERROR_OUT_OF_MEMORY, "%zu bytes of %s are more than the simulated device's %zu GiB", bytes,
                    what, SIM_DEVICE_BYTES >> 30);
}

static gcap_status sim_mem_alloc(struct gcap__backend_ctx *b, size_t bytes, void **out) {
  struct sim_context *sc = sim_context_from(b);
  if (bytes > SIM_DEVICE_BYTES) return larger_than_device(bytes, "device memory");
  gcap_status st = sc->options.strict_memory ? sim_device_alloc(sc, bytes, out) : aligned(256, bytes, out);
  if (st == GCAP_SUCCESS && sim_init_track(sc, *out, bytes, false) != GCAP_SUCCESS) {
    release_device(sc, *out);
    *out = NULL;
    st = gcap__fail(GCAP_ERROR_OUT_OF_MEMORY, "no memory for the INIT check's record of %zu bytes", bytes);
  }
  if (st == GCAP_SUCCESS && sc->options.poison_allocations) poison(sc, *out, bytes);
  return st;
}

/*
 * Managed memory is ordinary memory, strict or not: host code may touch it at any time. The INIT
 * check cannot follow host stores, so it counts managed memory as written from the start.
 */
static gcap_status sim_mem_alloc_managed(struct gcap__backend_ctx *b, size_t bytes, void **out) {
  struct sim_context *sc = sim_context_from(b);
  gcap_status st = bytes > SIM_DEVICE_BYTES ? larger_than_device(bytes, "managed memory") : aligned(256, bytes, out);
  if (st == GCAP_SUCCESS && sim_init_track(sc, *out, bytes, true) != GCAP_SUCCESS) {
    free(*out);
    *out = NULL;
    st = gcap__fail(GCAP_ERROR_OUT_OF_MEMORY, "no memory for the INIT check's record of %zu bytes", bytes);
  }
  if (st == GCAP_SUCCESS && sc->options.poison_allocations) poison(sc, *out, bytes);
  return st;
}

void sim_free_now(struct sim_context *sc, void *p) {
  if (sc->init) sim_init_forget(sc, p);
  if (sc->options.strict_memory && sim_device_owns(sc, p)) sim_device_free(sc, p);
  else free(p);
}

static void sim_mem_discard(struct gcap__backend_ctx *b, void *p, size_t bytes) {
  (void)b;
  sim_discard_pages(p, bytes);
}

static gcap_status sim_mem_free(struct gcap__backend_ctx *b, void *p) {
  struct sim_context *sc = sim_context_from(b);
  gcap_status st = wait_before_free(sc);
  if (st == GCAP_SUCCESS) sim_free_now(sc, p);
  return st;
}

/* DEFERRED: the memory goes when the stream reaches the free. */
static gcap_status sim_mem_free_async(struct gcap__backend_ctx *b, void *stream, void *p, size_t bytes) {
  struct sim_context *sc = sim_context_from(b);
  if (sim_deferred(sc))
    return sim_enqueue(sc, stream, &(struct sim_work){.kind = SIM_WORK_FREE, .ptr = p, .bytes = bytes});
  sim_wait_idle(sc);
  sim_free_now(sc, p);
  ((struct sim_stream *)stream)->issued++;
  return GCAP_SUCCESS;
}

/* Page-locked host memory stays ordinary memory, strict or not. */
static gcap_status sim_host_alloc(struct gcap__backend_ctx *b, size_t bytes, void **out) {
  return aligned(4096, bytes, out);
}

static size_t count_streams(const struct sim_context *sc) {
  size_t n = 0;
  for (const struct sim_stream *s = sc->streams; s; s = s->next) n++;
  return n;
}

/* DEFERRED: a timeline, a place among the streams a drain looks at, and room in its scratch. */
static gcap_status join_queue(struct sim_context *sc, struct sim_stream *s) {
  size_t want = count_streams(sc) + 1;
  if (want > sc->ready_cap) {
    struct sim_stream **grown = gcap__realloc(sc->ready, 2 * want * sizeof *grown);
    if (!grown) return gcap__fail(GCAP_ERROR_OUT_OF_MEMORY, "no memory for the stream");
    sc->ready = grown;
    sc->ready_cap = 2 * want;
  }
  s->tl = sim_timeline_new(s);
  if (!s->tl) return gcap__fail(GCAP_ERROR_OUT_OF_MEMORY, "no memory for the stream");
  s->next = sc->streams;
  sc->streams = s;
  return GCAP_SUCCESS;
}

static gcap_status sim_host_free(struct gcap__backend_ctx *b, void *p) {
  gcap_status st = wait_before_free(sim_context_from(b));
  if (st == GCAP_SUCCESS) free(p);
  return st;
}

static gcap_status sim_stream_create(struct gcap__backend_ctx *b, int priority, void **out) {
  struct sim_context *sc = sim_context_from(b);
  struct sim_stream *s = gcap__calloc(1, sizeof *s);
  if (!s) return gcap__fail(GCAP_ERROR_OUT_OF_MEMORY, "no memory for the stream");
  s->priority = priority;
  if (sim_deferred(sc) && join_queue(sc, s) != GCAP_SUCCESS) {
    gcap__free(s);
    return GCAP_ERROR_OUT_OF_MEMORY;
  }
  s->number = ++sc->streams_made;
  if (sc->trace) sim_trace_stream_created(sc, s->number);
  *out = s;
  return GCAP_SUCCESS;
}

static void sim_stream_destroy(struct gcap__backend_ctx *b, void *stream) {
  struct sim_context *sc = sim_context_from(b);
  if (sim_deferred(sc)) sim_queue_stream_gone(sc, stream);
  gcap__free(stream);
}

static gcap_status sim_stream_synchronize(struct gcap__backend_ctx *b, void *stream) {
  struct sim_context *sc = sim_context_from(b);
  if (!sim_deferred(sc)) {
    if (sc->kernels_out && sc->eager_stream == stream) sim_wait_kernels(sc);
    return GCAP_SUCCESS;
  }
  sim_wait_drain(sc);
  struct sim_mark end = sim_stream_end(stream);
  return sim_drain(sc, &end, 1);
}

static gcap_status sim_stream_query(struct gcap__backend_ctx *b, void *stream) {
  struct sim_context *sc = sim_context_from(b);
  if (!sim_deferred(sc)) return sc->kernels_out && sc->eager_stream == stream ? GCAP_ERROR_NOT_READY : GCAP_SUCCESS;
  struct sim_mark end = sim_stream_end(stream);
  return sim_advance(sc, &end);
}

/* One stream operation, described so that a single check decides whether it is timed for the trace. */
struct eager_op {
  enum { EAGER_COPY, EAGER_FILL, EAGER_KERNEL, EAGER_HOST } kind;
  const struct gcap__copy *copy;
  const struct gcap__fill *fill;
  const struct gcap__launch *launch;
  gcap_host_fn fn;
  void *user_data;
};

static gcap_status perform(struct sim_context *sc, const struct eager_op *op) {
  switch (op->kind) {
  case EAGER_COPY: sim_run_copy(sc, op->copy); break;
  case EAGER_FILL: sim_run_fill(sc, op->fill); break;
  case EAGER_KERNEL: return sim_run_kernel(sc, op->launch);
  case EAGER_HOST: sim_run_host(sc, op->fn, op->user_data); break;
  }
  return GCAP_SUCCESS;
}

static const char *op_name(const struct eager_op *op) {
  static const char *const names[] = {[EAGER_COPY] = "memcpy", [EAGER_FILL] = "memset", [EAGER_HOST] = "host"};
  return op->kind == EAGER_KERNEL ? op->launch->kernel->name : names[op->kind];
}

/* Numbered when issued: a host function's own stream work finishes, and is written, first. */
static gcap_status perform_traced(struct sim_context *sc, struct sim_stream *s, const struct eager_op *op) {
  uint64_t number = sim_trace_next_op(sc);
  double start = sim_trace_now(sc);
  gcap_status st = perform(sc, op);
  sim_trace_stream_op(sc, op_name(op), s ? s->number : 0, number, start);
  return st;
}

static gcap_status enqueue(struct sim_context *sc, struct sim_stream *s, const struct eager_op *op) {
  static const int kinds[] = {[EAGER_COPY] = SIM_WORK_COPY,
                              [EAGER_FILL] = SIM_WORK_FILL,
                              [EAGER_KERNEL] = SIM_WORK_KERNEL,
                              [EAGER_HOST] = SIM_WORK_HOST};
  struct sim_work w = {
      .copy = op->copy, .fill = op->fill, .launch = op->launch, .fn = op->fn, .user_data = op->user_data};
  w.kind = kinds[op->kind];
  return sim_enqueue(sc, s, &w);
}

/*
 * stream NULL: a synchronous copy, on the trace's thread 0. It runs at once in both modes and
 * waits for no stream: gcap's streams are non-blocking, so on CUDA it does not either.
 */
static gcap_status issue(struct gcap__backend_ctx *b, struct sim_stream *s, const struct eager_op *op) {
  struct sim_context *sc = sim_context_from(b);
  if (sim_deferred(sc) && s) return enqueue(sc, s, op);
  sim_wait_to_issue(sc); /* the simulated device runs one operation at a time */
  sc->eager_stream = s;
  sim_work_begin_for(sc, op->copy, op->fill);
  gcap_status st = sc->trace ? perform_traced(sc, s, op) : perform(sc, op);
  sim_work_end(sc);
  sc->eager_stream = NULL;
  if (s) s->issued++;
  return st;
}

static gcap_status sim_memcpy(struct gcap__backend_ctx *b, void *stream, const struct gcap__copy *c) {
  return issue(b, stream, &(struct eager_op){.kind = EAGER_COPY, .copy = c});
}

static gcap_status sim_memset(struct gcap__backend_ctx *b, void *stream, const struct gcap__fill *f) {
  return issue(b, stream, &(struct eager_op){.kind = EAGER_FILL, .fill = f});
}

static gcap_status sim_launch_kernel(struct gcap__backend_ctx *b, void *stream, const struct gcap__launch *l) {
  return issue(b, stream, &(struct eager_op){.kind = EAGER_KERNEL, .launch = l});
}

static gcap_status sim_launch_host_func(struct gcap__backend_ctx *b, void *stream, gcap_host_fn fn, void *user_data) {
  return issue(b, stream, &(struct eager_op){.kind = EAGER_HOST, .fn = fn, .user_data = user_data});
}

void sim_event_ran(struct sim_context *sc, struct sim_event *e) {
  e->records++;
  e->recorded_ns = sim_trace_now(sc);
}

static gcap_status sim_event_create(struct gcap__backend_ctx *b, unsigned flags, void **out) {
  struct sim_event *e = gcap__calloc(1, sizeof *e);
  if (!e) return gcap__fail(GCAP_ERROR_OUT_OF_MEMORY, "no memory for the event");
  *out = e;
  return GCAP_SUCCESS;
}

static void sim_event_destroy(struct gcap__backend_ctx *b, void *event) {
  sim_record_release(((struct sim_event *)event)->latest);
  gcap__free(event);
}

/* Recording and waiting take no time here: their trace events mark the moment. */
static void trace_instant(struct sim_context *sc, const char *name, const struct sim_stream *s) {
  sim_trace_stream_op(sc, name, s->number, sim_trace_next_op(sc), sim_trace_now(sc));
}

static gcap_status sim_event_record(struct gcap__backend_ctx *b, void *event, void *stream) {
  struct sim_context *sc = sim_context_from(b);
  if (sim_deferred(sc)) return sim_enqueue(sc, stream, &(struct sim_work){.kind = SIM_WORK_RECORD, .event = event});
  sim_wait_to_issue(sc); /* after the running kernel, which may be this stream's */
  sim_event_ran(sc, event);
  if (sc->trace) trace_instant(sc, "event record", stream);
  return GCAP_SUCCESS;
}

/* The recorded work is complete, so waiting orders nothing further. */
static gcap_status sim_stream_wait_event(struct gcap__backend_ctx *b, void *stream, void *event) {
  struct sim_context *sc = sim_context_from(b);
  if (sim_deferred(sc)) return sim_enqueue(sc, stream, &(struct sim_work){.kind = SIM_WORK_WAIT, .event = event});
  if (sc->trace) trace_instant(sc, "event wait", stream);
  return GCAP_SUCCESS;
}

/*
 * The record is held while the work runs: with the context lock released for a kernel, another
 * thread may record the event again, which lets go of the record it had.
 */
static gcap_status sim_event_synchronize(struct gcap__backend_ctx *b, void *event) {
  struct sim_context *sc = sim_context_from(b);
  if (!sim_deferred(sc)) return GCAP_SUCCESS;
  sim_wait_drain(sc);
  struct sim_record *r = ((struct sim_event *)event)->latest;
  if (!r) return GCAP_SUCCESS;
  r->refs++;
  gcap_status st = sim_drain(sc, &r->at, 1);
  sim_record_release(r);
  return st;
}

static gcap_status advance_to(struct sim_context *sc, struct sim_record *r) {
  r->refs++;
  gcap_status st = sim_advance(sc, &r->at);
  sim_record_release(r);
  return st;
}

static gcap_status sim_event_query(struct gcap__backend_ctx *b, void *event) {
  struct sim_context *sc = sim_context_from(b);
  struct sim_record *r = ((struct sim_event *)event)->latest;
  if (!sim_deferred(sc) || !r) return GCAP_SUCCESS;
  return advance_to(sc, r);
}

/* When the event's latest record ran (DEFERRED: once it has run; each call runs one step, as a query). */
static gcap_status record_time(struct sim_context *sc, const struct sim_event *e, const char *what, double *ns) {
  if (e->records == 0) return gcap__fail(GCAP_ERROR_INVALID_HANDLE, "%s was never recorded", what);
  struct sim_record *r = e->latest;
  if (!sim_deferred(sc) || !r) {
    *ns = e->recorded_ns;
    return GCAP_SUCCESS;
  }
  if (sim_mark_reached(&r->at)) {
    *ns = r->by_launch ? e->recorded_ns : r->ran_at;
    return advance_to(sc, r); /* hands over a kept failure, as before */
  }
  return advance_to(sc, r);
}

static gcap_status sim_event_elapsed_time(struct gcap__backend_ctx *b, void *start, void *end, float *ms) {
  struct sim_context *sc = sim_context_from(b);
  double from = 0, to = 0;
  gcap_status st = record_time(sc, start, "start", &from);
  if (st == GCAP_SUCCESS) st = record_time(sc, end, "end", &to);
  if (st == GCAP_SUCCESS) *ms = (float)((to - from) / 1e6);
  return st;
}

/*
 * Module variables start out written (their initialiser, or zeros), so the INIT check does not
 * follow them: a bit per byte of a large zero variable would cost what its lazy zeros save.
 */
static gcap_status program_alloc(void *ctx, size_t bytes, void **out) {
  struct sim_context *sc = ctx;
  return sc->options.strict_memory ? sim_device_alloc(sc, bytes, out) : aligned(256, bytes, out);
}

/* A __managed__ variable: ordinary memory, as sim_mem_alloc_managed's, that host code may touch under strict memory. */
static gcap_status program_alloc_managed(void *ctx, size_t bytes, void **out) {
  (void)ctx;
  return aligned(256, bytes, out);
}

static void program_free(void *ctx, void *p) { sim_free_now(ctx, p); }

/* An initial value written as a copy is, opening (strict memory) just what it writes. */
static void program_write(void *ctx, void *dst, const void *src, size_t bytes) {
  struct sim_context *sc = ctx;
  struct gcap__copy c = {dst, src, bytes, GCAP_MEMCPY_HOST_TO_DEVICE, GCAP_MEMCPY_HOST_TO_DEVICE, NULL};
  sim_work_begin_for(sc, &c, NULL);
  memcpy(dst, src, bytes);
  sim_work_end(sc);
}

/* Zeros that cost no memory: whole pages go back to the system (they read as zeros); the ends are written. */
static void program_zero(void *ctx, void *dst, size_t bytes) {
  static const unsigned char zeros[4096];
  uintptr_t from = (uintptr_t)dst, end = from + bytes, page = (uintptr_t)sysconf(_SC_PAGESIZE);
  uintptr_t lo = (from + page - 1) & ~(page - 1), hi = end & ~(page - 1);
  if (hi <= lo) lo = hi = end;
  for (uintptr_t p = from; p < end;) {
    if (p == lo) p = hi;
    size_t n = (size_t)((p < lo ? lo : end) - p);
    if (n > sizeof zeros) n = sizeof zeros;
    if (n) program_write(ctx, (void *)p, zeros, n);
    p += n;
  }
  sim_discard_pages(dst, bytes);
}

/* PTX text: what the simulator can run. A cubin or fatbin image is for the CUDA backend only. */
static bool is_ptx(const gcap_module_desc *d) { return d->image && gcap__image_is_ptx(d->image, d->image_size); }

/* The image's PTX is lowered at load unless only CPU implementations run (then it is not looked at). */
static gcap_status sim_module_load(struct gcap__backend_ctx *b, const gcap_module_desc *d, void **out) {
  struct sim_context *sc = sim_context_from(b);
  *out = NULL;
  if (!is_ptx(d) || sc->options.kernels == GCAP_SIM_KERNELS_CPU) {
    if (d->num_kernels == 0)
      return gcap__fail(GCAP_ERROR_INVALID_VALUE,
                        "the simulator needs desc->kernels or a PTX image (num_kernels is 0 and the image is %s)",
                        d->image ? "not PTX text" : "NULL");
    return GCAP_SUCCESS;
  }
  struct px_memory_ops mem = {sc, program_alloc, program_alloc_managed, program_free, program_write, program_zero};
  return px_program_load(d->image, d->image_size, &mem, (struct px_program **)out);
}

/* DEFERRED: queued launches of its kernels run first (a failure there goes to the next wait). */
static void sim_module_unload(struct gcap__backend_ctx *b, void *module) {
  (void)wait_before_free(sim_context_from(b)); /* gcap_module_unload waited (before_release): a no-op then */
  px_program_free(module);
}

/* A kernel of the module's PTX: its lowered entry and parameter sizes. */
static gcap_status sim_kernel_find(struct gcap__backend_ctx *b, void *module, const char *name,
                                   struct gcap__kernel_found *out) {
  const struct px_kernel *k = px_program_kernel(module, name);
  if (!k) return GCAP_ERROR_NOT_FOUND;
  const size_t *sizes = NULL;
  size_t n = px_kernel_params(k, &sizes);
  *out = (struct gcap__kernel_found){(void *)(uintptr_t)k, true, n, NULL};
  if (n && !(out->param_sizes = gcap__calloc(n, sizeof *sizes)))
    return gcap__fail(GCAP_ERROR_OUT_OF_MEMORY, "no memory for the parameters of kernel \"%s\"", name);
  if (n) memcpy(out->param_sizes, sizes, n * sizeof *sizes);
  return GCAP_SUCCESS;
}

/* What the executor's layout says better than the declarations: static shared and local memory. */
static gcap_status sim_kernel_attribute(struct gcap__backend_ctx *b, const struct gcap__kernel_info *k,
                                        gcap_kernel_attr attr, int *value) {
  (void)b;
  if (!k->impl) return GCAP_ERROR_NOT_FOUND; /* a CPU definition: the core's answer */
  uint32_t shared = 0, local = 0;
  px_kernel_memory(k->impl, &shared, &local);
  if (attr == GCAP_KERNEL_ATTR_SHARED_SIZE_BYTES) return *value = (int)shared, GCAP_SUCCESS;
  if (attr == GCAP_KERNEL_ATTR_LOCAL_SIZE_BYTES) return *value = (int)local, GCAP_SUCCESS;
  return GCAP_ERROR_NOT_FOUND;
}

/* The simulated device gives a block PX_DEVICE_SHARED_BYTES of shared memory, static and dynamic. */
static gcap_status sim_kernel_set_attribute(struct gcap__backend_ctx *b, const struct gcap__kernel_info *k,
                                            gcap_kernel_attr attr, int value) {
  (void)b;
  (void)attr; /* the core passes MAX_DYNAMIC_SHARED_SIZE only */
  uint32_t shared = 0, local = 0;
  if (k->impl) px_kernel_memory(k->impl, &shared, &local); /* a CPU definition has no static shared memory */
  if ((uint64_t)shared + (uint32_t)value > PX_DEVICE_SHARED_BYTES)
    return gcap__fail(GCAP_ERROR_INVALID_VALUE,
                      "value %d of GCAP_KERNEL_ATTR_MAX_DYNAMIC_SHARED_SIZE exceeds the %u bytes of shared memory the "
                      "simulated device gives a block of kernel \"%s\" beside its %u static",
                      value, PX_DEVICE_SHARED_BYTES - (shared < PX_DEVICE_SHARED_BYTES ? shared : 0), k->name, shared);
  return GCAP_SUCCESS;
}

static gcap_status sim_module_global(struct gcap__backend_ctx *b, void *module, const char *name, void **dptr,
                                     size_t *bytes) {
  (void)b;
  return px_program_global(module, name, dptr, bytes);
}

static gcap_status sim_get_stats(const struct gcap__backend_ctx *b, gcap_sim_stats *out) {
  *out = ((const struct sim_context *)b)->stats;
  return GCAP_SUCCESS;
}

static gcap_status sim_kernel_stats(const struct gcap__backend_ctx *b, const struct gcap__kernel_info *k,
                                    gcap_sim_kernel_stats *out) {
  (void)b;
  *out = (gcap_sim_kernel_stats){0, 0};
  if (k->impl) px_kernel_runs(k->impl, &out->launches, &out->ptx_instructions);
  return GCAP_SUCCESS;
}

static bool sim_wants_race_check(const struct gcap__backend_ctx *b) {
  return ((const struct sim_context *)b)->options.check_races;
}

static void sim_describe_next_launch(const struct gcap__backend_ctx *b, char *buf, size_t size) {
  const struct sim_context *sc = (const struct sim_context *)b;
  if (sc->options.order != GCAP_SIM_ORDER_SHUFFLE || size == 0) return;
  snprintf(buf, size, "shuffled order, seed %llu, launch %llu", (unsigned long long)sc->options.seed,
           (unsigned long long)sc->launches_begun + 1);
}

const struct gcap_backend_ops gcap__sim_ops = {
    .name = "sim",
    .knows_all_device_memory = true,
    .waits_run_work = true,
    .available = sim_available,
    .context_create = sim_context_create,
    .context_destroy = sim_context_destroy,
    .context_synchronize = sim_context_synchronize,
    .mem_alloc = sim_mem_alloc,
    .mem_free = sim_mem_free,
    .mem_alloc_managed = sim_mem_alloc_managed,
    .mem_free_async = sim_mem_free_async,
    .mem_discard = sim_mem_discard,
    .host_alloc = sim_host_alloc,
    .host_free = sim_host_free,
    .stream_create = sim_stream_create,
    .stream_destroy = sim_stream_destroy,
    .stream_synchronize = sim_stream_synchronize,
    .stream_query = sim_stream_query,
    .memcpy = sim_memcpy,
    .memset = sim_memset,
    .launch_kernel = sim_launch_kernel,
    .launch_host_func = sim_launch_host_func,
    .event_create = sim_event_create,
    .event_destroy = sim_event_destroy,
    .event_record = sim_event_record,
    .event_elapsed_time = sim_event_elapsed_time,
    .stream_wait_event = sim_stream_wait_event,
    .event_synchronize = sim_event_synchronize,
    .event_query = sim_event_query,
    .module_load = sim_module_load,
    .module_unload = sim_module_unload,
    .kernel_attribute = sim_kernel_attribute,
    .kernel_set_attribute = sim_kernel_set_attribute,
    .before_release = sim_before_release,
    .kernel_find = sim_kernel_find,
    .kernel_check = sim_kernel_check,
    .cooperative_check = sim_cooperative_check,
    .module_global = sim_module_global,
    .runs_definitions = true,
    .exec_create = sim_exec_create,
    .exec_destroy = sim_exec_destroy,
    .exec_upload = sim_exec_upload,
    .exec_launch = sim_exec_launch,
    .exec_wait = sim_exec_wait,
    .exec_before_change = sim_exec_before_change,
    .sim_get_stats = sim_get_stats,
    .wants_race_check = sim_wants_race_check,
    .sim_kernel_stats = sim_kernel_stats,
    .describe_next_launch = sim_describe_next_launch,
};
