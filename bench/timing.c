#define _POSIX_C_SOURCE 200809L
#include "timing.h"

#include <stdlib.h>
#include <time.h>

#define MIN_REGION_NS 20e6

double now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int by_value(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

double region_ns(work_fn fn, void *arg) {
  long calls = 0;
  double start = now_ns(), elapsed;
  do {
    fn(arg);
    calls++;
    elapsed = now_ns() - start;
  } while (elapsed < MIN_REGION_NS);
  return elapsed / (double)calls;
}

double median_of_n(double *samples, int count) {
  qsort(samples, (size_t)count, sizeof *samples, by_value);
  return samples[count / 2];
}

void median_pair_of(work_fn subject, void *subject_arg, work_fn baseline, void *baseline_arg, int reps,
                    void (*progress)(double started, int r), double *subject_ns, double *baseline_ns) {
  double a[BENCH_MAX_REPS], b[BENCH_MAX_REPS];
  double started = now_ns();
  for (int r = 0; r < reps; r++) {
    a[r] = region_ns(subject, subject_arg);
    b[r] = region_ns(baseline, baseline_arg);
    if (progress) progress(started, r);
  }
  *subject_ns = median_of_n(a, reps);
  *baseline_ns = median_of_n(b, reps);
}
