/*
 * Fibers: cooperatively scheduled contexts with small stacks of their own (ucontext), on which
 * the threads of a block that calls gcap_sim_syncthreads run, so that a thread can wait at the
 * barrier while the others catch up.
 *
 * A fiber runs one simulated thread from a fresh start (sim_fiber_prepare) to its end, and then
 * leaves for good; nothing stays suspended across blocks, so no fiber ever moves to another OS
 * thread while it holds frames. The sanitizers and valgrind are told of every stack and switch:
 * AddressSanitizer through __sanitizer_start/finish_switch_fiber, ThreadSanitizer through its
 * fiber contexts (each switch orders the fibers, as the one OS thread running them does), and
 * valgrind through VALGRIND_STACK_REGISTER when its header was found at build time.
 */
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#include "base/alloc.h"
#include "sim_internal.h"

#define SIM_ASAN 0
#define SIM_TSAN 0
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#undef SIM_ASAN
#define SIM_ASAN 1
#endif
#if __has_feature(thread_sanitizer)
#undef SIM_TSAN
#define SIM_TSAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) && !SIM_ASAN
#undef SIM_ASAN
#define SIM_ASAN 1
#endif
#if defined(__SANITIZE_THREAD__) && !SIM_TSAN
#undef SIM_TSAN
#define SIM_TSAN 1
#endif

#if SIM_ASAN
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#endif
#if SIM_TSAN
#include <sanitizer/tsan_interface.h>
#endif
#ifndef GCAP_HAVE_VALGRIND
#define GCAP_HAVE_VALGRIND 0
#endif
#if GCAP_HAVE_VALGRIND
#include <valgrind/valgrind.h>
#endif

/*
 * The function that starts a fiber must push no ThreadSanitizer frame: it never returns, so a
 * pushed frame would stay on the fiber's shadow stack, one more per thread it ever runs.
 */
#if SIM_TSAN && defined(__clang__)
#define SIM_NO_TSAN_FRAME __attribute__((disable_sanitizer_instrumentation))
#elif SIM_TSAN
#define SIM_NO_TSAN_FRAME __attribute__((no_sanitize_thread))
#else
#define SIM_NO_TSAN_FRAME
#endif

/* Instrumented code needs more stack: redzones around every local. */
#if SIM_ASAN || SIM_TSAN
#define SIM_FIBER_STACK_BYTES (256u << 10)
#else
#define SIM_FIBER_STACK_BYTES (64u << 10)
#endif

struct sim_fiber {
  ucontext_t uc;
  unsigned char *map; /* a guard page, then the stack; NULL for a host fiber */
  size_t map_bytes;
  const void *stack; /* lowest address; a host's is learnt from AddressSanitizer at its first switch */
  size_t stack_bytes;
  sim_fiber_body body;
  void *arg;
  void *tsan;            /* ThreadSanitizer's context: the fiber's own, or a host's OS thread */
  void *asan_fake_stack; /* AddressSanitizer's fake frames while the fiber is switched away */
  unsigned valgrind_id;
};

/* The switch in progress on this OS thread: a fiber's first code learns from it who it is. */
static _Thread_local struct sim_fiber *switch_from, *switch_to;
/* The signal mask of the OS thread that adopted a host last: fibers started here run with it. */
static _Thread_local sigset_t thread_mask;

static size_t page_bytes(void) {
  long page = sysconf(_SC_PAGESIZE);
  return page > 0 ? (size_t)page : 4096;
}

/* Maps the stack below a PROT_NONE guard page: a thread that overflows it faults at once. */
static bool map_stack(struct sim_fiber *f) {
  size_t guard = page_bytes();
  f->map_bytes = guard + SIM_FIBER_STACK_BYTES;
  void *map = mmap(NULL, f->map_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
  if (map == MAP_FAILED) return false;
  if (mprotect(map, guard, PROT_NONE) != 0) {
    munmap(map, f->map_bytes);
    return false;
  }
  f->map = map;
  f->stack = f->map + guard;
  f->stack_bytes = SIM_FIBER_STACK_BYTES;
  return true;
}

struct sim_fiber *sim_fiber_create(void) {
  struct sim_fiber *f = gcap__calloc(1, sizeof *f);
  if (!f) return NULL;
  if (getcontext(&f->uc) != 0 || !map_stack(f)) {
    gcap__free(f);
    return NULL;
  }
#if GCAP_HAVE_VALGRIND
  f->valgrind_id = VALGRIND_STACK_REGISTER(f->stack, (const unsigned char *)f->stack + f->stack_bytes);
#endif
#if SIM_TSAN
  f->tsan = __tsan_create_fiber(0);
#endif
  return f;
}

struct sim_fiber *sim_fiber_create_host(void) {
  return gcap__calloc(1, sizeof(struct sim_fiber));
}

void sim_fiber_destroy(struct sim_fiber *f) {
  if (!f) return;
  if (f->map) {
#if GCAP_HAVE_VALGRIND
    VALGRIND_STACK_DEREGISTER(f->valgrind_id);
#endif
#if SIM_TSAN
    __tsan_destroy_fiber(f->tsan);
#endif
#if SIM_ASAN
    __asan_unpoison_memory_region(f->stack, f->stack_bytes); /* no stale redzones for whoever maps it next */
#endif
    munmap(f->map, f->map_bytes);
  }
  gcap__free(f);
}

void sim_fiber_adopt_thread(struct sim_fiber *host) {
  host->stack = NULL;
  host->stack_bytes = 0;
#if SIM_TSAN
  host->tsan = __tsan_get_current_fiber();
#endif
  pthread_sigmask(SIG_SETMASK, NULL, &thread_mask);
}

/* First thing on a fiber's stack after a switch into it; `fake_stack` as its switch away saved it. */
static void switch_done(void *fake_stack) {
#if SIM_ASAN
  const void *bottom = NULL;
  size_t size = 0;
  __sanitizer_finish_switch_fiber(fake_stack, &bottom, &size);
  struct sim_fiber *from = switch_from;
  if (from && !from->map && !from->stack) {
    from->stack = bottom;
    from->stack_bytes = size;
  }
#else
  (void)fake_stack;
#endif
}

/* Runs the body, then leaves for good: the fiber's frames end here. */
SIM_NO_TSAN_FRAME static void fiber_start(void) {
  struct sim_fiber *self = switch_to;
  switch_done(NULL); /* a fresh start has no fake frames to restore */
  struct sim_fiber *next = self->body(self->arg);
  switch_from = self;
  switch_to = next;
#if SIM_ASAN
  __sanitizer_start_switch_fiber(NULL, next->stack, next->stack_bytes); /* NULL: drop this run's fake frames */
#endif
#if SIM_TSAN
  __tsan_switch_to_fiber(next->tsan, 0);
#endif
  setcontext(&next->uc);
  abort(); /* setcontext returns only when it fails, and `next` is a context saved by a switch */
}

void sim_fiber_prepare(struct sim_fiber *f, sim_fiber_body body, void *arg) {
  f->body = body;
  f->arg = arg;
  f->uc.uc_stack.ss_sp = (void *)f->stack;
  f->uc.uc_stack.ss_size = f->stack_bytes;
  f->uc.uc_link = NULL;
  f->uc.uc_sigmask = thread_mask;
  makecontext(&f->uc, fiber_start, 0);
}

void sim_fiber_switch(struct sim_fiber *from, struct sim_fiber *to) {
  switch_from = from;
  switch_to = to;
#if SIM_ASAN
  __sanitizer_start_switch_fiber(&from->asan_fake_stack, to->stack, to->stack_bytes);
#endif
#if SIM_TSAN
  __tsan_switch_to_fiber(to->tsan, 0);
#endif
#if SIM_ASAN
  /*
   * Not swapcontext: AddressSanitizer's interceptor of it warns, once per process, of false
   * reports that fibers annotated as these are do not cause.
   */
  volatile bool resumed = false;
  getcontext(&from->uc);
  if (!resumed) {
    resumed = true;
    setcontext(&to->uc);
    abort(); /* setcontext returns only when it fails, for a context never made */
  }
#else
  if (swapcontext(&from->uc, &to->uc) != 0) abort(); /* fails only for a context never made */
#endif
  switch_done(from->asan_fake_stack);
}

void sim_fiber_abandon(struct sim_fiber *f) {
#if SIM_ASAN
  __asan_unpoison_memory_region(f->stack, f->stack_bytes);
  f->asan_fake_stack = NULL; /* with detect_stack_use_after_return, its fake frames are lost */
#endif
#if SIM_TSAN
  /* Its shadow stack still holds the abandoned frames: start over with a new context. */
  __tsan_destroy_fiber(f->tsan);
  f->tsan = __tsan_create_fiber(0);
#endif
  (void)f;
}
