/* Timing shared by the benchmarks: regions of repeated calls, medians, alternating pairs. */
#ifndef GCAP_BENCH_TIMING_H
#define GCAP_BENCH_TIMING_H

#define BENCH_MAX_REPS 16

typedef void (*work_fn)(void *arg);

double now_ns(void);
/* ns per call of fn over one region that repeats it until 20 ms have passed. */
double region_ns(work_fn fn, void *arg);
/* The median of `count` samples (sorted in place). */
double median_of_n(double *samples, int count);
/*
 * Medians over `reps` regions of a subject and its baseline, their regions alternating, so that
 * a neighbour's load on a shared machine falls on both alike and their ratio stays meaningful.
 * progress (may be NULL) is called after each repetition with the time the pair started.
 */
void median_pair_of(work_fn subject, void *subject_arg, work_fn baseline, void *baseline_arg, int reps,
                    void (*progress)(double started, int r), double *subject_ns, double *baseline_ns);

#endif
