/*
 * The worker pool of a simulator context with threads >= 2: threads - 1 OS threads that run a
 * kernel's blocks beside the calling thread. They sleep on a condition variable between
 * launches; a launch wakes them all, and returns once each has run out of blocks. Launches on
 * one context never overlap (the core runs them under the context's lock), so one job at a time.
 */
#include <pthread.h>

#include "base/alloc.h"
#include "sim_internal.h"

struct pool_thread {
  struct sim_pool *pool;
  struct sim_worker *worker;
  pthread_t id;
  bool started;
};

struct sim_pool {
  pthread_mutex_t lock;
  pthread_cond_t wake, done;
  struct sim_job *job; /* the launch in progress */
  uint64_t generation; /* +1 per launch: a thread runs each launch once */
  unsigned busy;       /* threads still on the launch */
  bool quit;
  unsigned count;
  struct pool_thread *threads;
};

static void *pool_thread_main(void *arg) {
  struct pool_thread *pt = arg;
  struct sim_pool *p = pt->pool;
  uint64_t seen = 0;
  pthread_mutex_lock(&p->lock);
  for (;;) {
    while (!p->quit && p->generation == seen) pthread_cond_wait(&p->wake, &p->lock);
    if (p->quit) break;
    seen = p->generation;
    struct sim_job *job = p->job;
    pthread_mutex_unlock(&p->lock);
    sim_worker_run(pt->worker, job);
    pthread_mutex_lock(&p->lock);
    if (--p->busy == 0) pthread_cond_signal(&p->done);
  }
  pthread_mutex_unlock(&p->lock);
  return NULL;
}

/* Stops and joins the threads that were started, then frees everything. */
void sim_pool_destroy(struct sim_pool *p) {
  if (!p) return;
  pthread_mutex_lock(&p->lock);
  p->quit = true;
  pthread_cond_broadcast(&p->wake);
  pthread_mutex_unlock(&p->lock);
  for (unsigned i = 0; i < p->count; i++) {
    if (p->threads[i].started) pthread_join(p->threads[i].id, NULL);
    sim_worker_destroy(p->threads[i].worker);
  }
  pthread_cond_destroy(&p->done);
  pthread_cond_destroy(&p->wake);
  pthread_mutex_destroy(&p->lock);
  gcap__free(p->threads);
  gcap__free(p);
}

static bool start_threads(struct sim_pool *p) {
  for (unsigned i = 0; i < p->count; i++) {
    struct pool_thread *pt = &p->threads[i];
    pt->pool = p;
    if (!(pt->worker = sim_worker_create())) return false;
    if (pthread_create(&pt->id, NULL, pool_thread_main, pt) != 0) return false;
    pt->started = true;
    pthread_setname_np(pt->id, "gcap-sim-worker");
  }
  return true;
}

struct sim_pool *sim_pool_create(unsigned threads) {
  struct sim_pool *p = gcap__calloc(1, sizeof *p);
  if (p) p->threads = gcap__calloc(threads - 1, sizeof *p->threads);
  if (!p || !p->threads) {
    gcap__free(p);
    return NULL;
  }
  p->count = threads - 1;
  pthread_mutex_init(&p->lock, NULL);
  pthread_cond_init(&p->wake, NULL);
  pthread_cond_init(&p->done, NULL);
  if (!start_threads(p)) {
    sim_pool_destroy(p);
    return NULL;
  }
  return p;
}

struct sim_counts sim_pool_run(struct sim_pool *p, struct sim_worker *caller, struct sim_job *job) {
  pthread_mutex_lock(&p->lock);
  p->job = job;
  p->busy = p->count;
  p->generation++;
  pthread_cond_broadcast(&p->wake);
  pthread_mutex_unlock(&p->lock);
  sim_worker_run(caller, job);
  pthread_mutex_lock(&p->lock);
  while (p->busy > 0) pthread_cond_wait(&p->done, &p->lock);
  p->job = NULL;
  pthread_mutex_unlock(&p->lock);
  struct sim_counts sum = {0, 0, 0};
  for (unsigned i = 0; i < p->count; i++) {
    struct sim_counts c = sim_worker_take_counts(p->threads[i].worker);
    sum.barriers_passed += c.barriers_passed;
    sum.blocks += c.blocks;
    sum.ptx_instructions += c.ptx_instructions;
  }
  return sum;
}
