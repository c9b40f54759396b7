/*
 * Memory nothing wrote, on the simulator's PTX engine: shared memory and each thread's local
 * memory start every block as a poison pattern drawn from the launch's seed (zeros with
 * zero_block_memory), fresh device allocations hold one with poison_allocations, and atomics and
 * reductions read their old value, so the INIT check reports them on memory nothing wrote.
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

/*
 * Each thread stores what it reads before writing: shared word tid, local word 0 of the entry
 * frame, and local word 0 of a .func's frame, read on the .func's second call after its first
 * wrote it (a new frame holds poison again, never the last call's bytes).
 */
static const char unwritten_ptx[] = ".version 7.0\n"
                                    ".target sm_75\n"
                                    ".address_size 64\n"
                                    ".func (.param .u32 r) peek(.param .u32 x)\n"
                                    "{\n"
                                    "  .local .align 4 .b8 fbuf[8];\n"
                                    "  .reg .u32 %a<3>;\n"
                                    "  ld.param.u32 %a0, [x];\n"
                                    "  ld.local.u32 %a1, [fbuf];\n"
                                    "  st.local.u32 [fbuf], %a0;\n"
                                    "  st.param.u32 [r], %a1;\n"
                                    "  ret;\n"
                                    "}\n"
                                    ".visible .entry unwritten(.param .u64 out)\n"
                                    "{\n"
                                    "  .shared .align 8 .b8 sbuf[256];\n"
                                    "  .local .align 4 .b8 lbuf[16];\n"
                                    "  .reg .u32 %r<8>;\n"
                                    "  .reg .u64 %rd<6>;\n"
                                    "  ld.param.u64 %rd1, [out];\n"
                                    "  cvta.to.global.u64 %rd2, %rd1;\n"
                                    "  mov.u32 %r1, %tid.x;\n"
                                    "  mul.wide.u32 %rd3, %r1, 4;\n"
                                    "  mov.u64 %rd4, sbuf;\n"
                                    "  add.u64 %rd4, %rd4, %rd3;\n"
                                    "  ld.shared.u32 %r2, [%rd4];\n"
                                    "  ld.local.u32 %r3, [lbuf+4];\n"
                                    "  {\n"
                                    "  .param .u32 pr;\n"
                                    "  .param .u32 px;\n"
                                    "  st.param.u32 [px], 12345;\n"
                                    "  call (pr), peek, (px);\n"
                                    "  ld.param.u32 %r4, [pr];\n"
                                    "  }\n"
                                    "  {\n"
                                    "  .param .u32 pr;\n"
                                    "  .param .u32 px;\n"
                                    "  st.param.u32 [px], 777;\n"
                                    "  call (pr), peek, (px);\n"
                                    "  ld.param.u32 %r5, [pr];\n"
                                    "  }\n"
                                    "  mul.wide.u32 %rd3, %r1, 16;\n"
                                    "  add.u64 %rd5, %rd2, %rd3;\n"
                                    "  st.global.v4.u32 [%rd5], {%r2, %r3, %r4, %r5};\n"
                                    "  ret;\n"
                                    "}\n";

enum { UNWRITTEN_THREADS = 64 };

/* Runs `unwritten` on a context of these options; out: 4 words per thread. */
static void run_unwritten(const gcap_sim_options *so, uint32_t *out) {
  struct ptx_fixture f = {.ctx = test_sim_context_create(so), .file = "unwritten_ptx"};
  f.s = test_stream_create(f.ctx);
  gcap_module_desc d = {.image = unwritten_ptx, .image_size = sizeof unwritten_ptx};
  gcap_status st = gcap_module_load(f.ctx, &d, &f.m);
  if (st != GCAP_SUCCESS) print_error("%s\n", gcap_last_error_message());
  assert_int_equal(st, GCAP_SUCCESS);
  size_t bytes = UNWRITTEN_THREADS * 4 * sizeof *out;
  void *dout = ptx_dev(f.ctx, NULL, bytes);
  ptx_run(&f, "unwritten", DIM1(1), DIM1(UNWRITTEN_THREADS), 0, ARGS(&dout));
  ptx_get(f.ctx, out, dout, bytes);
  gcap_context_destroy(f.ctx);
}

static gcap_sim_options options(uint64_t seed, unsigned checks) {
  gcap_sim_options so;
  gcap_sim_options_init(&so);
  so.kernels = GCAP_SIM_KERNELS_PTX;
  so.seed = seed;
  so.checks = checks;
  return so;
}

static void test_block_memory_poisoned(void **state) {
  (void)state;
  gcap_sim_options so = options(42, PTX_CHECKS_DEFAULT);
  assert_false(so.zero_block_memory); /* poison is the default */
  uint32_t a[UNWRITTEN_THREADS * 4], b[UNWRITTEN_THREADS * 4], c[UNWRITTEN_THREADS * 4];
  run_unwritten(&so, a);
  /* A 64-bit word repeated: even words alike, odd words alike; no zero byte. */
  uint32_t lo = a[0], hi = a[UNWRITTEN_THREADS > 1 ? 4 : 0];
  for (unsigned t = 0; t < UNWRITTEN_THREADS; t++) {
    assert_int_equal(a[t * 4], t % 2 ? hi : lo);  /* shared word t */
    assert_int_equal(a[t * 4 + 1], hi);           /* local byte 4 of the entry frame: the odd word */
    assert_int_equal(a[t * 4 + 2], a[t * 4 + 3]); /* a .func's frame: poison on both calls */
    assert_true(a[t * 4 + 2] == lo || a[t * 4 + 2] == hi);
    assert_int_not_equal(a[t * 4 + 3], 12345); /* not the first call's leftover */
  }
  for (unsigned i = 0; i < 4; i++) {
    assert_int_not_equal((lo >> (8 * i)) & 0xff, 0);
    assert_int_not_equal((hi >> (8 * i)) & 0xff, 0);
  }
  /* Each 32-bit half is a NaN as a float and far from zero as an integer of any width. */
  for (unsigned k = 0; k < 2; k++) {
    uint32_t v = k ? hi : lo;
    assert_int_equal(v & 0x7f800000u, 0x7f800000u);
    assert_int_not_equal(v & 0x007fffffu, 0);
    assert_true((int32_t)v > 2000000000);
    assert_true((int16_t)(v & 0xffffu) < -16000);
    assert_true((int8_t)(v & 0xffu) < -64);
  }
  run_unwritten(&so, b); /* the same seed: the same pattern */
  assert_memory_equal(a, b, sizeof a);
  so = options(43, PTX_CHECKS_DEFAULT);
  run_unwritten(&so, c);
  assert_true(memcmp(a, c, sizeof a) != 0); /* another seed: another word */
}

static void test_block_memory_zero_option(void **state) {
  (void)state;
  gcap_sim_options so = options(42, PTX_CHECKS_DEFAULT);
  so.zero_block_memory = true;
  uint32_t a[UNWRITTEN_THREADS * 4];
  run_unwritten(&so, a);
  for (unsigned i = 0; i < UNWRITTEN_THREADS * 4; i++) assert_int_equal(a[i], 0);
}

/* Strict memory: fresh mappings read as zeros, so the poison (or its absence) is all the option's. */
static void read_fresh_allocation(bool poison, unsigned char *out, size_t bytes) {
  gcap_sim_options so = options(7, PTX_CHECKS_DEFAULT);
  so.strict_memory = true;
  so.poison_allocations = poison;
  gcap_context *ctx = test_sim_context_create(&so);
  void *d = NULL;
  assert_int_equal(gcap_mem_alloc(ctx, bytes, &d), GCAP_SUCCESS);
  assert_int_equal(gcap_memcpy(ctx, out, d, bytes, GCAP_MEMCPY_DEVICE_TO_HOST), GCAP_SUCCESS);
  gcap_context_destroy(ctx);
}

static void test_allocations_poisoned_on_request(void **state) {
  (void)state;
  enum { BYTES = 1000 };
  unsigned char plain[BYTES], poisoned[BYTES];
  gcap_sim_options so;
  gcap_sim_options_init(&so);
  assert_false(so.poison_allocations); /* off by default */
  read_fresh_allocation(false, plain, BYTES);
  read_fresh_allocation(true, poisoned, BYTES);
  for (size_t i = 0; i < BYTES; i++) {
    assert_int_equal(plain[i], 0);
    assert_int_not_equal(poisoned[i], 0);
    assert_int_equal(poisoned[i], poisoned[i % 8]); /* a 64-bit word repeated */
  }
}

/*
 * A histogram of 16 shared bins over 256 values: `hist_add` (atom.shared.add) and `hist_red`
 * (red.shared.add) never zero their bins; `hist_zeroed` does, then waits at a barrier.
 */
#define HIST_KERNEL(NAME, ZERO, OP)                                                                                    \
  ".visible .entry " NAME "(.param .u64 in, .param .u64 out)\n"                                                        \
  "{\n"                                                                                                                \
  "  .shared .align 4 .b8 bins[64];\n"                                                                                 \
  "  .reg .pred %p<2>;\n"                                                                                              \
  "  .reg .u32 %r<8>;\n"                                                                                               \
  "  .reg .u64 %rd<8>;\n"                                                                                              \
  "  ld.param.u64 %rd1, [in];\n"                                                                                       \
  "  ld.param.u64 %rd2, [out];\n"                                                                                      \
  "  cvta.to.global.u64 %rd1, %rd1;\n"                                                                                 \
  "  cvta.to.global.u64 %rd2, %rd2;\n"                                                                                 \
  "  mov.u32 %r1, %tid.x;\n"                                                                                           \
  "  mov.u64 %rd3, bins;\n"                                                                                            \
  "  setp.lt.u32 %p1, %r1, 16;\n" ZERO "  mul.wide.u32 %rd4, %r1, 4;\n"                                                \
  "  add.u64 %rd5, %rd1, %rd4;\n"                                                                                      \
  "  ld.global.u32 %r2, [%rd5];\n"                                                                                     \
  "  and.b32 %r2, %r2, 15;\n"                                                                                          \
  "  mul.wide.u32 %rd6, %r2, 4;\n"                                                                                     \
  "  add.u64 %rd6, %rd3, %rd6;\n" OP "  bar.sync 0;\n"                                                                 \
  "  @!%p1 bra DONE;\n"                                                                                                \
  "  add.u64 %rd7, %rd3, %rd4;\n"                                                                                      \
  "  ld.shared.u32 %r4, [%rd7];\n"                                                                                     \
  "  add.u64 %rd7, %rd2, %rd4;\n"                                                                                      \
  "  st.global.u32 [%rd7], %r4;\n"                                                                                     \
  "DONE:\n"                                                                                                            \
  "  ret;\n"                                                                                                           \
  "}\n"
#define NO_ZERO ""
#define ZERO_BINS                                                                                                      \
  "  @!%p1 bra SKIP;\n"                                                                                                \
  "  mul.wide.u32 %rd7, %r1, 4;\n"                                                                                     \
  "  add.u64 %rd7, %rd3, %rd7;\n"                                                                                      \
  "  st.shared.u32 [%rd7], 0;\n"                                                                                       \
  "SKIP:\n"                                                                                                            \
  "  bar.sync 0;\n"
#define ATOM_ADD "  atom.shared.add.u32 %r3, [%rd6], 1;\n"
#define RED_ADD "  red.shared.add.u32 [%rd6], 1;\n"

static const char hist_ptx[] =
    ".version 7.0\n"
    ".target sm_75\n"
    ".address_size 64\n" HIST_KERNEL("hist_add", NO_ZERO, ATOM_ADD) HIST_KERNEL("hist_red", NO_ZERO, RED_ADD)
        HIST_KERNEL("hist_zeroed", ZERO_BINS, ATOM_ADD) HIST_KERNEL("hist_zeroed_red", ZERO_BINS, RED_ADD);

enum { HIST_N = 256 };

/* Runs a histogram kernel with `checks`; its status, the bins in out and the message in msg. */
static gcap_status run_hist(const char *kernel, unsigned checks, uint32_t out[16], char *msg, size_t size) {
  gcap_sim_options so = options(5, checks);
  struct ptx_fixture f = {.ctx = test_sim_context_create(&so), .file = "hist_ptx"};
  f.s = test_stream_create(f.ctx);
  gcap_module_desc d = {.image = hist_ptx, .image_size = sizeof hist_ptx};
  gcap_status st = gcap_module_load(f.ctx, &d, &f.m);
  if (st != GCAP_SUCCESS) print_error("%s\n", gcap_last_error_message());
  assert_int_equal(st, GCAP_SUCCESS);
  uint32_t in[HIST_N];
  for (unsigned i = 0; i < HIST_N; i++) in[i] = i * 7 + i / 3;
  void *din = ptx_dev(f.ctx, in, sizeof in), *dout = ptx_dev(f.ctx, NULL, 16 * sizeof *out);
  st = ptx_launch(&f, kernel, DIM1(1), DIM1(HIST_N), 0, ARGS(&din, &dout));
  if (st == GCAP_SUCCESS) st = gcap_stream_synchronize(f.s);
  snprintf(msg, size, "%s", gcap_last_error_message());
  if (st == GCAP_SUCCESS) ptx_get(f.ctx, out, dout, 16 * sizeof *out);
  gcap_context_destroy(f.ctx);
  return st;
}

static void hist_reference(uint32_t want[16]) {
  memset(want, 0, 16 * sizeof *want);
  for (unsigned i = 0; i < HIST_N; i++) want[(i * 7 + i / 3) & 15]++;
}

static void check_unzeroed(const char *kernel, const char *op) {
  uint32_t want[16], got[16];
  char msg[1024];
  hist_reference(want);
  /* Checks off: the bins started as poison, so the counts are off, as on a GPU. */
  assert_int_equal(run_hist(kernel, 0, got, msg, sizeof msg), GCAP_SUCCESS);
  assert_true(memcmp(got, want, sizeof want) != 0);
  /* INIT: the first atomic on a bin reads what nothing wrote. */
  assert_int_equal(run_hist(kernel, GCAP_SIM_CHECK_INIT, got, msg, sizeof msg), GCAP_ERROR_LAUNCH_FAILURE);
  if (!strstr(msg, op) || !strstr(msg, "uninitialised") || !strstr(msg, "read of 4 bytes at shared address"))
    print_error("message: %s\n", msg);
  assert_non_null(strstr(msg, op));
  assert_non_null(strstr(msg, "uninitialised"));
  assert_non_null(strstr(msg, "read of 4 bytes at shared address"));
}

static void test_hist_atom_unzeroed(void **state) {
  (void)state;
  check_unzeroed("hist_add", "\"atom.shared.add.u32");
}

static void test_hist_red_unzeroed(void **state) {
  (void)state;
  check_unzeroed("hist_red", "\"red.shared.add.u32");
}

static void test_hist_zeroed_passes_all_checks(void **state) {
  (void)state;
  const char *kernels[] = {"hist_zeroed", "hist_zeroed_red"};
  uint32_t want[16], got[16];
  char msg[1024];
  hist_reference(want);
  for (unsigned k = 0; k < 2; k++) {
    gcap_status st = run_hist(kernels[k], PTX_CHECKS_ALL, got, msg, sizeof msg);
    if (st != GCAP_SUCCESS) print_error("%s: %s\n", kernels[k], msg);
    assert_int_equal(st, GCAP_SUCCESS);
    assert_memory_equal(got, want, sizeof want);
  }
}

/* Global atomics of every kind on a word nothing wrote: INIT reports each; written first, none. */
static const char global_atom_ptx[] = ".version 7.0\n"
                                      ".target sm_75\n"
                                      ".address_size 64\n"
                                      ".visible .entry g(.param .u64 p, .param .u32 op)\n"
                                      "{\n"
                                      "  .reg .pred %p<8>;\n"
                                      "  .reg .u32 %r<4>;\n"
                                      "  .reg .u64 %rd<3>;\n"
                                      "  ld.param.u64 %rd1, [p];\n"
                                      "  cvta.to.global.u64 %rd1, %rd1;\n"
                                      "  ld.param.u32 %r1, [op];\n"
                                      "  setp.eq.u32 %p1, %r1, 0;\n"
                                      "  setp.eq.u32 %p2, %r1, 1;\n"
                                      "  setp.eq.u32 %p3, %r1, 2;\n"
                                      "  setp.eq.u32 %p4, %r1, 3;\n"
                                      "  setp.eq.u32 %p5, %r1, 4;\n"
                                      "  @%p1 atom.global.add.u32 %r2, [%rd1], 1;\n"
                                      "  @%p2 atom.global.exch.b32 %r2, [%rd1], 1;\n"
                                      "  @%p3 atom.global.cas.b32 %r2, [%rd1], 0, 1;\n"
                                      "  @%p4 red.global.max.u32 [%rd1], 1;\n"
                                      "  @%p5 atom.global.add.u64 %rd2, [%rd1+8], 1;\n"
                                      "  ret;\n"
                                      "}\n";

static void test_global_atomics_read_for_init(void **state) {
  (void)state;
  const char *ops[] = {"atom.global.add.u32 %r2", "atom.global.exch.b32 %r2", "atom.global.cas.b32 %r2",
                       "red.global.max.u32 [", "atom.global.add.u64 %rd2"};
  gcap_sim_options so = options(1, PTX_CHECKS_ALL);
  struct ptx_fixture f = {.ctx = test_sim_context_create(&so), .file = "global_atom_ptx"};
  f.s = test_stream_create(f.ctx);
  gcap_module_desc d = {.image = global_atom_ptx, .image_size = sizeof global_atom_ptx};
  assert_int_equal(gcap_module_load(f.ctx, &d, &f.m), GCAP_SUCCESS);
  for (uint32_t op = 0; op < 5; op++) {
    void *p = test_dev_alloc(f.ctx, 16);
    gcap_status st = ptx_launch(&f, "g", DIM1(1), DIM1(1), 0, ARGS(&p, &op));
    const char *msg = gcap_last_error_message();
    if (st != GCAP_ERROR_LAUNCH_FAILURE || !strstr(msg, ops[op]) || !strstr(msg, "uninitialised"))
      print_error("op %u: %s: %s\n", op, gcap_status_name(st), msg);
    assert_int_equal(st, GCAP_ERROR_LAUNCH_FAILURE);
    assert_non_null(strstr(msg, ops[op]));
    assert_non_null(strstr(msg, "which nothing wrote"));
    gcap_context_destroy(f.ctx); /* the failure is sticky: a fresh context for the next */
    f.ctx = test_sim_context_create(&so);
    f.s = test_stream_create(f.ctx);
    assert_int_equal(gcap_module_load(f.ctx, &d, &f.m), GCAP_SUCCESS);
  }
  /* Written first, every atomic runs, and then counts as a write: a load after it passes. */
  for (uint32_t op = 0; op < 5; op++) {
    void *p = ptx_dev(f.ctx, NULL, 16);
    ptx_run(&f, "g", DIM1(1), DIM1(1), 0, ARGS(&p, &op));
  }
  gcap_context_destroy(f.ctx);
}

int main(void) {
  test_require_backend();
  if (!test_on_sim()) {
    fprintf(stderr, "skipped: what unwritten memory holds is the simulator's\n");
    return 77;
  }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_block_memory_poisoned),
      cmocka_unit_test(test_block_memory_zero_option),
      cmocka_unit_test(test_allocations_poisoned_on_request),
      cmocka_unit_test(test_hist_atom_unzeroed),
      cmocka_unit_test(test_hist_red_unzeroed),
      cmocka_unit_test(test_hist_zeroed_passes_all_checks),
      cmocka_unit_test(test_global_atomics_read_for_init),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
