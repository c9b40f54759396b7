/*
 * The C side of bench/python_overhead.py: ns per gcap_memset_async of 64 bytes on a simulator
 * stream (IMMEDIATE), the call the Python binding's Stream.memset makes, over `regions` regions.
 *
 * usage: bench_call [regions]     prints one median, in ns per call
 */
#include <gcap/gcap.h>
#include <gcap/sim.h>

#include <stdio.h>
#include <stdlib.h>

#include "timing.h"

struct fixture {
  gcap_stream *s;
  void *buf;
};

static void one_memset(void *arg) {
  struct fixture *f = arg;
  if (gcap_memset_async(f->s, f->buf, 7, 64) != GCAP_SUCCESS) abort();
}

int main(int argc, char **argv) {
  int regions = argc > 1 ? atoi(argv[1]) : 5;
  if (regions < 1 || regions > BENCH_MAX_REPS) regions = 5;
  gcap_sim_options so;
  gcap_sim_options_init(&so);
  gcap_context_options o;
  gcap_context_options_init(&o);
  o.backend = GCAP_BACKEND_SIM;
  o.sim = &so;
  gcap_context *ctx = NULL;
  struct fixture f = {NULL, NULL};
  if (gcap_context_create(&o, &ctx) != GCAP_SUCCESS || gcap_stream_create(ctx, &f.s) != GCAP_SUCCESS ||
      gcap_mem_alloc(ctx, 64, &f.buf) != GCAP_SUCCESS) {
    fprintf(stderr, "bench_call: %s\n", gcap_last_error_message());
    return 1;
  }
  double samples[BENCH_MAX_REPS];
  for (int r = 0; r < regions; r++) samples[r] = region_ns(one_memset, &f);
  printf("%.1f\n", median_of_n(samples, regions));
  gcap_context_destroy(ctx);
  return 0;
}
