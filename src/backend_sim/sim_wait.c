/*
 * Threads waiting for the simulator's work on other threads. A kernel's blocks may run with the
 * context lock released (gcap__work_release), so that other threads can allocate, issue, query
 * and make objects meanwhile; what must not overlap the running kernel (IMMEDIATE work, a second
 * drain, frees and everything CUDA makes synchronous) waits here, with the context lock given up,
 * until the kernel or the drain ends.
 */
#include "sim_internal.h"

void sim_wait_init(struct sim_context *sc) {
  pthread_mutex_init(&sc->run_mu, NULL);
  pthread_cond_init(&sc->run_cv, NULL);
}

void sim_wait_destroy(struct sim_context *sc) {
  pthread_cond_destroy(&sc->run_cv);
  pthread_mutex_destroy(&sc->run_mu);
}

/*
 * The generation is read under run_mu before the context lock goes, and bumped under run_mu by a
 * thread that changed the state under the context lock: no wake-up is lost in between. A waiter
 * is counted under the context lock from before it gives the lock up until it has it back, so
 * sim_wake, called under that lock, skips run_mu when no one waits (every kernel of a graph
 * launch ends with a wake).
 */
static void wait_while(struct sim_context *sc, bool (*busy)(const struct sim_context *)) {
  while (busy(sc)) {
    sc->run_waiters++;
    pthread_mutex_lock(&sc->run_mu);
    uint64_t gen = sc->run_gen;
    unsigned depth = gcap__lock_suspend(&sc->base);
    while (sc->run_gen == gen) pthread_cond_wait(&sc->run_cv, &sc->run_mu);
    pthread_mutex_unlock(&sc->run_mu);
    gcap__lock_resume(&sc->base, depth);
    sc->run_waiters--;
  }
}

static bool kernel_out(const struct sim_context *sc) { return sc->kernels_out > 0; }

void sim_wait_kernels(struct sim_context *sc) { wait_while(sc, kernel_out); }

/*
 * The core checked the work's memory before it came here: while it waits, a free must not
 * release that memory, so frees wait for the work too (sim_wait_idle).
 */
void sim_wait_to_issue(struct sim_context *sc) {
  if (!kernel_out(sc)) return;
  sc->issuers_waiting++;
  wait_while(sc, kernel_out);
  sc->issuers_waiting--;
  sim_wake(sc);
}

static bool busy(const struct sim_context *sc) { return sc->kernels_out > 0 || sc->issuers_waiting > 0; }

void sim_wait_idle(struct sim_context *sc) { wait_while(sc, busy); }

bool sim_drained_elsewhere(const struct sim_context *sc) {
  return sc->draining && !pthread_equal(sc->drainer, pthread_self());
}

void sim_wait_drain(struct sim_context *sc) { wait_while(sc, sim_drained_elsewhere); }

void sim_wake(struct sim_context *sc) {
  if (sc->run_waiters == 0) return;
  pthread_mutex_lock(&sc->run_mu);
  sc->run_gen++;
  pthread_cond_broadcast(&sc->run_cv);
  pthread_mutex_unlock(&sc->run_mu);
}
