/*
 * The planted bugs of tests/ptx/bugs (see the README there), run on the simulator's PTX engine.
 * Each must fail its launch with the status of its kind, with a message that names the kernel,
 * the block and thread, the PTX instruction and the source line marked "// BUG"; the fault
 * stays on the context (the next wait returns it too). A bug that only an optional check finds
 * runs silently without that check. The correct twin of each bug (a fixed kernel, or the same
 * kernel launched correctly) passes every check and computes the right values.
 */
#define _POSIX_C_SOURCE 200809L

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "ptx_util.h"

#define ARGS(...) ((void *[]){__VA_ARGS__})
#define DIM1(x) GCAP_DIM3((x), 1, 1)

enum { N = 100, MAX_WORDS = 4 };

/* How a case launches its kernel, on f (whose module is the case's PTX); `bug` picks the buggy launch. */
typedef gcap_status (*launch_fn)(struct ptx_fixture *f, const char *kernel, bool bug);

struct bug_case {
  const char *name;             /* tests/ptx/bugs/<name>.cu and .ptx */
  const char *kernel;           /* the buggy kernel */
  const char *fixed_kernel;     /* its correct twin; NULL: the same kernel, launched correctly */
  unsigned check;               /* the check that finds the bug; 0: found with every check off */
  gcap_status status;           /* what the launch returns */
  const char *words[MAX_WORDS]; /* more text the message holds: the instruction, the thread */
  launch_fn launch;
  double (*expected)(size_t i); /* what the twin's launch leaves in element i of its output */
  size_t count;                 /* elements of that output */
  bool floats;                  /* the output is float (fresults), not int32_t (results) */
};

/* ------------------------------------------------------------- launches */

static int32_t *ints(size_t n, int32_t scale, int32_t offset) {
  int32_t *v = malloc(sizeof(int32_t) * n);
  assert_non_null(v);
  for (size_t i = 0; i < n; i++) v[i] = (int32_t)i * scale + offset;
  return v;
}

/* out[i] from the launch, for the twin's check; kept by the launches that produce one. */
static int32_t results[128];
static float fresults[128];

static gcap_status launch_oob(struct ptx_fixture *f, const char *kernel, bool bug) {
  float in[N];
  for (size_t i = 0; i < N; i++) in[i] = (float)i * 0.5f;
  void *din = ptx_dev(f->ctx, in, sizeof in), *dout = ptx_dev(f->ctx, NULL, sizeof in);
  int n = N;
  gcap_status st = ptx_launch(f, kernel, DIM1(2), DIM1(64), 0, ARGS(&din, &dout, &n));
  if (st == GCAP_SUCCESS && !bug) ptx_get(f->ctx, fresults, dout, sizeof in);
  return st;
}

static gcap_status launch_use_after_free(struct ptx_fixture *f, const char *kernel, bool bug) {
  float in[N];
  for (size_t i = 0; i < N; i++) in[i] = (float)i;
  void *din = ptx_dev(f->ctx, in, sizeof in), *dout = ptx_dev(f->ctx, NULL, sizeof in);
  if (bug) assert_ok(gcap_mem_free(f->ctx, din));
  int n = N;
  gcap_status st = ptx_launch(f, kernel, DIM1(2), DIM1(64), 0, ARGS(&din, &dout, &n));
  if (st == GCAP_SUCCESS && !bug) ptx_get(f->ctx, fresults, dout, sizeof in);
  return st;
}

static gcap_status launch_misaligned(struct ptx_fixture *f, const char *kernel, bool bug) {
  int32_t *words = ints(N + 1, 3, 1);
  void *dbase = ptx_dev(f->ctx, words, sizeof(int32_t) * (N + 1)), *dout = ptx_dev(f->ctx, NULL, sizeof(int32_t) * N);
  free(words);
  int offset = bug ? 2 : 4, n = N;
  gcap_status st = ptx_launch(f, kernel, DIM1(2), DIM1(64), 0, ARGS(&dbase, &offset, &dout, &n));
  if (st == GCAP_SUCCESS && !bug) ptx_get(f->ctx, results, dout, sizeof(int32_t) * N);
  return st;
}

/* A block of 64 threads over 64 values: the shared-memory and barrier cases. */
static gcap_status launch_block64(struct ptx_fixture *f, const char *kernel, bool bug) {
  int32_t *in = ints(64, 5, -7);
  void *din = ptx_dev(f->ctx, in, sizeof(int32_t) * 64), *dout = ptx_dev(f->ctx, NULL, sizeof(int32_t) * 64);
  free(in);
  gcap_status st = ptx_launch(f, kernel, DIM1(1), DIM1(64), 0, ARGS(&din, &dout));
  if (st == GCAP_SUCCESS && !bug) ptx_get(f->ctx, results, dout, sizeof(int32_t) * 64);
  return st;
}

static gcap_status launch_shared_oob(struct ptx_fixture *f, const char *kernel, bool bug) {
  float in[128];
  for (size_t i = 0; i < 128; i++) in[i] = (float)i;
  void *din = ptx_dev(f->ctx, in, sizeof in), *dout = ptx_dev(f->ctx, NULL, sizeof in);
  gcap_status st = ptx_launch(f, kernel, DIM1(2), DIM1(64), 64 * sizeof(float), ARGS(&din, &dout));
  if (st == GCAP_SUCCESS && !bug) ptx_get(f->ctx, fresults, dout, sizeof in);
  return st;
}

enum { PLANTED = 37, TRAPPED = 77, ASSERTED = 42 };

static gcap_status launch_local_overflow(struct ptx_fixture *f, const char *kernel, bool bug) {
  int32_t *in = ints(N, 1, 1), *idx = ints(N, 3, 0);
  for (size_t i = 0; i < N; i++) idx[i] %= 8;
  if (bug) idx[PLANTED] = 100000; /* 400 KB past the array: outside any thread's frame */
  void *din = ptx_dev(f->ctx, in, sizeof(int32_t) * N), *didx = ptx_dev(f->ctx, idx, sizeof(int32_t) * N);
  void *dout = ptx_dev(f->ctx, NULL, sizeof(int32_t) * N);
  free(in);
  free(idx);
  int n = N;
  gcap_status st = ptx_launch(f, kernel, DIM1(2), DIM1(64), 0, ARGS(&din, &didx, &dout, &n));
  if (st == GCAP_SUCCESS && !bug) ptx_get(f->ctx, results, dout, sizeof(int32_t) * N);
  return st;
}

static gcap_status launch_warp32(struct ptx_fixture *f, const char *kernel, bool bug) {
  int32_t *in = ints(32, 7, 3);
  void *din = ptx_dev(f->ctx, in, sizeof(int32_t) * 32), *dout = ptx_dev(f->ctx, NULL, sizeof(int32_t) * 32);
  free(in);
  gcap_status st = ptx_launch(f, kernel, DIM1(1), DIM1(32), 0, ARGS(&din, &dout));
  if (st == GCAP_SUCCESS && !bug) ptx_get(f->ctx, results, dout, sizeof(int32_t) * 32);
  return st;
}

static gcap_status launch_uninit_global(struct ptx_fixture *f, const char *kernel, bool bug) {
  void *din = NULL;
  if (bug) {
    din = test_dev_alloc(f->ctx, sizeof(int32_t) * N); /* never written */
  } else {
    int32_t *in = ints(N, 2, 0);
    din = ptx_dev(f->ctx, in, sizeof(int32_t) * N);
    free(in);
  }
  void *dout = ptx_dev(f->ctx, NULL, sizeof(int32_t) * N);
  int n = N;
  gcap_status st = ptx_launch(f, kernel, DIM1(2), DIM1(64), 0, ARGS(&din, &dout, &n));
  if (st == GCAP_SUCCESS && !bug) ptx_get(f->ctx, results, dout, sizeof(int32_t) * N);
  return st;
}

/* trap_negative and assert_positive: one negative value planted at `at` when bug. */
static gcap_status launch_negative_at(struct ptx_fixture *f, const char *kernel, bool bug, size_t at) {
  int32_t *in = ints(N, 1, 0);
  if (bug) in[at] = -5;
  void *din = ptx_dev(f->ctx, in, sizeof(int32_t) * N), *dout = ptx_dev(f->ctx, NULL, sizeof(int32_t) * N);
  free(in);
  int n = N;
  gcap_status st = ptx_launch(f, kernel, DIM1(2), DIM1(64), 0, ARGS(&din, &dout, &n));
  if (st == GCAP_SUCCESS && !bug) ptx_get(f->ctx, results, dout, sizeof(int32_t) * N);
  return st;
}

static gcap_status launch_trap(struct ptx_fixture *f, const char *kernel, bool bug) {
  return launch_negative_at(f, kernel, bug, TRAPPED);
}

static gcap_status launch_assert(struct ptx_fixture *f, const char *kernel, bool bug) {
  return launch_negative_at(f, kernel, bug, ASSERTED);
}

/* ------------------------------------------- what the correct twins compute */

static double in64(size_t i) { return (double)((int32_t)i * 5 - 7); } /* launch_block64's input */

static double want_oob_read(size_t i) { return (double)i * 0.5 + (i + 1 < N ? (double)(i + 1) * 0.5 : 0.0); }
static double want_oob_write(size_t i) { return (double)i; }
static double want_use_after_free(size_t i) { return (double)i * 3.0; }
static double want_misaligned(size_t i) { return (double)(i + 1) * 3 + 1; }
static double want_shared_oob(size_t i) { return (double)i + (double)(i / 64 * 64 + (i % 64 + 1) % 64); }
static double want_local_overflow(size_t i) { return (double)(i + 1) * (double)(i * 3 % 8 + 1); }
static double want_divergent_barrier(size_t i) { return in64(63 - i) + 1; }
static double want_barrier_mismatch(size_t i) { return i < 32 ? (in64(i + 32) - 1) * 2 : (in64(i - 32) + 1) * 3; }
static double want_shared_race(size_t i) { return in64((i + 32) % 64); }
static double want_warp_race(size_t i) { return (double)(31 - i) * 7 + 3; }
static double want_uninit_shared(size_t i) { return i < 32 ? in64(i) : 0; }
static double want_uninit_global(size_t i) { return (double)i * 2 + 1; }
static double want_copy(size_t i) { return (double)i; }

/* Lanes 0-14 add their right neighbour, lane 15 itself (width 16), the other lanes keep theirs. */
static double want_shfl_inactive(size_t i) {
  size_t lane = i % 32;
  return lane < 15 ? in64(i) + in64(i + 1) : lane == 15 ? 2 * in64(i) : in64(i);
}

/* ---------------------------------------------------------------- cases */

static const struct bug_case cases[] = {
    {"oob_read",
     "oob_read",
     "oob_read_ok",
     GCAP_SIM_CHECK_MEMORY,
     GCAP_ERROR_ILLEGAL_ADDRESS,
     {"ld.global", "block (1,", "thread (35,"},
     launch_oob,
     want_oob_read,
     N,
     true},
    {"oob_write",
     "oob_write",
     "oob_write_ok",
     GCAP_SIM_CHECK_MEMORY,
     GCAP_ERROR_ILLEGAL_ADDRESS,
     {"st.global", "block (1,", "thread (36,"},
     launch_oob,
     want_oob_write,
     N,
     true},
    {"use_after_free",
     "use_after_free",
     NULL,
     GCAP_SIM_CHECK_MEMORY,
     GCAP_ERROR_ILLEGAL_ADDRESS,
     {"ld.global"},
     launch_use_after_free,
     want_use_after_free,
     N,
     true},
    {"misaligned",
     "misaligned",
     NULL,
     GCAP_SIM_CHECK_MEMORY,
     GCAP_ERROR_MISALIGNED_ADDRESS,
     {"ld.global"},
     launch_misaligned,
     want_misaligned,
     N,
     false},
    {"shared_oob",
     "shared_oob",
     "shared_oob_ok",
     GCAP_SIM_CHECK_MEMORY,
     GCAP_ERROR_ILLEGAL_ADDRESS,
     {"ld.shared", "thread (63,"},
     launch_shared_oob,
     want_shared_oob,
     128,
     true},
    {"local_overflow",
     "local_overflow",
     "local_overflow_ok",
     GCAP_SIM_CHECK_MEMORY,
     GCAP_ERROR_ILLEGAL_ADDRESS,
     {"ld.local", "block (0,", "thread (37,"},
     launch_local_overflow,
     want_local_overflow,
     N,
     false},
    {"divergent_barrier",
     "divergent_barrier",
     "divergent_barrier_ok",
     GCAP_SIM_CHECK_SYNC,
     GCAP_ERROR_LAUNCH_FAILURE,
     {"bar.sync"},
     launch_block64,
     want_divergent_barrier,
     64,
     false},
    {"barrier_mismatch",
     "barrier_mismatch",
     "barrier_mismatch_ok",
     GCAP_SIM_CHECK_SYNC,
     GCAP_ERROR_LAUNCH_FAILURE,
     {"bar.sync"},
     launch_block64,
     want_barrier_mismatch,
     64,
     false},
    {"shfl_inactive",
     "shfl_inactive",
     "shfl_inactive_ok",
     GCAP_SIM_CHECK_SYNC,
     GCAP_ERROR_LAUNCH_FAILURE,
     {"shfl.sync"},
     launch_block64,
     want_shfl_inactive,
     64,
     false},
    {"shared_race",
     "shared_race",
     "shared_race_ok",
     GCAP_SIM_CHECK_SHARED_RACES,
     GCAP_ERROR_LAUNCH_FAILURE,
     {".shared"},
     launch_block64,
     want_shared_race,
     64,
     false},
    {"warp_race",
     "warp_race",
     "warp_race_ok",
     GCAP_SIM_CHECK_SHARED_RACES,
     GCAP_ERROR_LAUNCH_FAILURE,
     {".shared"},
     launch_warp32,
     want_warp_race,
     32,
     false},
    {"uninit_shared",
     "uninit_shared",
     "uninit_shared_ok",
     GCAP_SIM_CHECK_INIT,
     GCAP_ERROR_LAUNCH_FAILURE,
     {"ld.shared", "thread (32,"},
     launch_block64,
     want_uninit_shared,
     64,
     false},
    {"uninit_global",
     "uninit_global",
     NULL,
     GCAP_SIM_CHECK_INIT,
     GCAP_ERROR_LAUNCH_FAILURE,
     {"ld.global"},
     launch_uninit_global,
     want_uninit_global,
     N,
     false},
    {"trap",
     "trap_negative",
     NULL,
     0,
     GCAP_ERROR_LAUNCH_FAILURE,
     {"trap", "block (1,", "thread (13,"},
     launch_trap,
     want_copy,
     N,
     false},
    {"assert_fail",
     "assert_positive",
     NULL,
     0,
     GCAP_ERROR_ASSERT,
     {"in[i] >= 0", "block (0,", "thread (42,"},
     launch_assert,
     want_copy,
     N,
     false},
};

/* ------------------------------------------------------------- fixtures */

static void open_case(struct ptx_fixture *f, const struct bug_case *c, unsigned checks) {
  static char file[64];
  snprintf(file, sizeof file, "bugs/%s.ptx", c->name);
  f->file = file;
  f->ctx = ptx_context(checks);
  f->s = test_stream_create(f->ctx);
  f->m = ptx_load(f->ctx, f->file);
}

static void close_case(struct ptx_fixture *f) { gcap_context_destroy(f->ctx); }

/* Fails unless msg names the file at one of the lines marked "// BUG" in the case's source. */
static void expect_marked_line(const struct bug_case *c, const char *msg) {
  char cu[64], where[96];
  int lines[4];
  snprintf(cu, sizeof cu, "bugs/%s.cu", c->name);
  size_t count = ptx_marked_lines(cu, lines, 4);
  assert_true(count > 0);
  for (size_t i = 0; i < count; i++) {
    snprintf(where, sizeof where, "%s.cu:%d", c->name, lines[i]);
    if (strstr(msg, where) != NULL) return;
  }
  print_error("%s: the message names none of the lines marked BUG (first: %s.cu:%d): \"%s\"\n", c->name, c->name,
              lines[0], msg);
  fail();
}

static void expect_words(const struct bug_case *c, const char *msg) {
  const char *always[] = {c->kernel, "block (", "thread ("};
  for (size_t i = 0; i < 3; i++)
    if (strstr(msg, always[i]) == NULL) {
      print_error("%s: \"%s\" is not in the message \"%s\"\n", c->name, always[i], msg);
      fail();
    }
  for (size_t i = 0; i < MAX_WORDS && c->words[i] != NULL; i++)
    if (strstr(msg, c->words[i]) == NULL) {
      print_error("%s: \"%s\" is not in the message \"%s\"\n", c->name, c->words[i], msg);
      fail();
    }
  expect_marked_line(c, msg);
}

/* ---------------------------------------------------------------- tests */

/* The bug, with only its own check on: the status, the message, and the fault kept by the context. */
static void test_bug_found(void **state) {
  const struct bug_case *c = *state;
  struct ptx_fixture f;
  open_case(&f, c, c->check);
  gcap_status st = c->launch(&f, c->kernel, true);
  char *msg = strdup(gcap_last_error_message());
  assert_non_null(msg);
  if (st != c->status) {
    print_error("%s: the launch returned %s, expected %s (message: \"%s\")\n", c->name, gcap_status_name(st),
                gcap_status_name(c->status), msg);
    fail();
  }
  expect_words(c, msg);
  free(msg);
  assert_status(gcap_stream_synchronize(f.s), c->status);
  close_case(&f);
}

/* A bug that an optional check finds goes unnoticed without it (the kernel runs to the end). */
static void test_bug_unchecked(void **state) {
  const struct bug_case *c = *state;
  struct ptx_fixture f;
  open_case(&f, c, PTX_CHECKS_DEFAULT);
  assert_ok(c->launch(&f, c->kernel, true));
  assert_ok(gcap_stream_synchronize(f.s));
  close_case(&f);
}

/* The correct twin: every check on, no fault, the right values. */
static void test_twin_passes(void **state) {
  const struct bug_case *c = *state;
  struct ptx_fixture f;
  open_case(&f, c, PTX_CHECKS_ALL);
  const char *kernel = c->fixed_kernel != NULL ? c->fixed_kernel : c->kernel;
  gcap_status st = c->launch(&f, kernel, false);
  if (st != GCAP_SUCCESS) {
    print_error("%s: %s returned %s (message: \"%s\")\n", c->name, kernel, gcap_status_name(st),
                gcap_last_error_message());
    fail();
  }
  assert_ok(gcap_stream_synchronize(f.s));
  for (size_t i = 0; i < c->count; i++) {
    double got = c->floats ? (double)fresults[i] : (double)results[i], want = c->expected(i);
    if (got != want) {
      print_error("%s (%s): element %zu is %g, expected %g\n", c->name, kernel, i, got, want);
      fail();
    }
  }
  close_case(&f);
}

int main(void) {
  test_require_backend();
  if (!test_on_sim()) {
    fprintf(stderr, "skipped: the planted bugs need the simulator's checks\n");
    return 77;
  }
  enum { CASES = sizeof cases / sizeof cases[0] };
  struct CMUnitTest found[CASES], unchecked[CASES], twins[CASES];
  size_t optional = 0;
  for (size_t i = 0; i < CASES; i++) {
    found[i] = (struct CMUnitTest){cases[i].name, test_bug_found, NULL, NULL, (void *)&cases[i]};
    twins[i] = (struct CMUnitTest){cases[i].name, test_twin_passes, NULL, NULL, (void *)&cases[i]};
    if (cases[i].check == GCAP_SIM_CHECK_SHARED_RACES || cases[i].check == GCAP_SIM_CHECK_INIT)
      unchecked[optional++] = (struct CMUnitTest){cases[i].name, test_bug_unchecked, NULL, NULL, (void *)&cases[i]};
  }
  int failed = 0;
  failed += _cmocka_run_group_tests("planted bugs found", found, CASES, NULL, NULL);
  failed += _cmocka_run_group_tests("bugs of optional checks unnoticed without them", unchecked, optional, NULL, NULL);
  failed += _cmocka_run_group_tests("correct twins pass every check", twins, CASES, NULL, NULL);
  return failed;
}
