/*
 * Checks that judge an instruction's lanes together: the SYNC check counts the lanes a partial
 * last warp does not have as exited (a full member mask is legal there, as on a GPU), and the
 * SHARED_RACES check never reports two lanes of one instruction against each other, while it
 * still reports two instructions with no barrier between them.
 */
#define _POSIX_C_SOURCE 200809L

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "ptx_util.h"

#define ARGS(...) ((void *[]){__VA_ARGS__})
#define DIM1(x) GCAP_DIM3((x), 1, 1)
#define CHECKS_ALL (GCAP_SIM_CHECK_MEMORY | GCAP_SIM_CHECK_SYNC | GCAP_SIM_CHECK_SHARED_RACES | GCAP_SIM_CHECK_INIT)

static gcap_status launch(gcap_context *ctx, gcap_module *m, const char *kernel, unsigned threads, void **args) {
  return ptx_launch_on(ctx, m, kernel, DIM1(1), DIM1(threads), 0, args);
}

/* ------------------------------------------------------------- a partial last warp */

/*
 * Each warp sums in[] over its threads with a full-mask butterfly whose clamp is the warp's last
 * lane with a thread (so no lane reads a lane that does not exist), and lane 0 stores the sum in
 * out[warp]. Every .sync warp operation then runs with a full mask: out[4 + 8 * warp + k] holds
 * vote.ballot of true, redux.add of 1, match.any of a constant, activemask, and the lanes that
 * passed bar.warp.sync; between them every warp passes bar.sync 1 with a count of 128 (4 warps,
 * the last one partial) and warps 2 and 3 pass bar.sync 2 with a count of 64.
 */
#define BFLY_STEP(n)                                                                                                   \
  "  shfl.sync.bfly.b32 %r6|%p1, %r3, " #n ", %r5, -1;\n"                                                              \
  "  @%p1 add.u32 %r3, %r3, %r6;\n"

static const char warp_ptx[] =
    ".version 7.0\n.target sm_80\n.address_size 64\n"
    ".visible .entry bfly(.param .u64 p_in, .param .u64 p_out)\n{\n"
    "  .reg .b32 %r<20>;\n  .reg .b64 %rd<10>;\n  .reg .pred %p<4>;\n"
    "  ld.param.u64 %rd1, [p_in];\n  ld.param.u64 %rd2, [p_out];\n"
    "  mov.u32 %r1, %tid.x;\n  mov.u32 %r2, %ntid.x;\n"
    "  mul.wide.u32 %rd3, %r1, 4;\n  add.u64 %rd4, %rd1, %rd3;\n"
    "  ld.global.u32 %r3, [%rd4];\n"
    "  and.b32 %r4, %r1, -32;\n  sub.u32 %r5, %r2, %r4;\n  sub.u32 %r5, %r5, 1;\n"
    "  min.u32 %r5, %r5, 31;\n" BFLY_STEP(16) BFLY_STEP(8) BFLY_STEP(4) BFLY_STEP(2)
        BFLY_STEP(1) "  setp.eq.u32 %p2, %r4, %r1;\n"
                     "  shr.u32 %r7, %r1, 5;\n  mul.wide.u32 %rd5, %r7, 4;\n  add.u64 %rd6, %rd2, %rd5;\n"
                     "  @%p2 st.global.u32 [%rd6], %r3;\n"
                     "  setp.eq.u32 %p3, %r1, %r1;\n"
                     "  vote.sync.ballot.b32 %r8, %p3, -1;\n"
                     "  redux.sync.add.u32 %r9, 1, -1;\n"
                     "  mov.u32 %r10, 7;\n"
                     "  match.any.sync.b32 %r11, %r10, -1;\n"
                     "  activemask.b32 %r12;\n"
                     "  bar.sync 1, 128;\n"
                     "  bar.warp.sync -1;\n"
                     "  activemask.b32 %r13;\n"
                     "  setp.lt.u32 %p3, %r1, 64;\n"
                     "  @%p3 bra SKIP;\n"
                     "  bar.sync 2, 64;\n"
                     "SKIP:\n"
                     "  mul.lo.u32 %r14, %r7, 32;\n  cvt.u64.u32 %rd7, %r14;\n  add.u64 %rd8, %rd2, %rd7;\n"
                     "  @%p2 st.global.v4.u32 [%rd8+16], {%r8, %r9, %r11, %r12};\n"
                     "  @%p2 st.global.u32 [%rd8+32], %r13;\n"
                     "  ret;\n}\n";

/* 120 threads: the last warp has lanes 0..23; full masks are legal with every check, and the sums are right. */
static void test_partial_warp_full_masks(void **state) {
  (void)state;
  static const unsigned checks[] = {0, GCAP_SIM_CHECK_SYNC, CHECKS_ALL};
  uint32_t in[128];
  for (unsigned i = 0; i < 128; i++) in[i] = i * 7 + 3;
  for (size_t c = 0; c < sizeof checks / sizeof checks[0]; c++) {
    gcap_context *ctx = ptx_sim_context(checks[c]);
    gcap_module *m = ptx_load_text(ctx, warp_ptx);
    void *din = ptx_dev(ctx, in, sizeof in), *dout = ptx_dev(ctx, NULL, 36 * sizeof(uint32_t));
    gcap_status st = launch(ctx, m, "bfly", 120, ARGS(&din, &dout));
    if (st != GCAP_SUCCESS) fail_msg("checks 0x%x: %s", checks[c], gcap_last_error_message());
    uint32_t out[36];
    ptx_get(ctx, out, dout, sizeof out);
    for (unsigned w = 0; w < 4; w++) {
      unsigned lanes = w == 3 ? 24 : 32;
      uint32_t sum = 0, mask = lanes == 32 ? 0xffffffffu : (1u << lanes) - 1;
      for (unsigned l = 0; l < lanes; l++) sum += in[w * 32 + l];
      assert_int_equal(out[w], sum);
      assert_int_equal(out[4 + 8 * w], mask);      /* vote.ballot */
      assert_int_equal(out[4 + 8 * w + 1], lanes); /* redux.add */
      assert_int_equal(out[4 + 8 * w + 2], mask);  /* match.any */
      assert_int_equal(out[4 + 8 * w + 3], mask);  /* activemask */
      assert_int_equal(out[4 + 8 * w + 4], mask);  /* after bar.warp.sync */
    }
    gcap_context_destroy(ctx);
  }
}

/* ------------------------------------------------------------- races between lanes */

#define RACE_HEAD                                                                                                      \
  "{\n  .reg .b32 %r<10>;\n  .reg .b64 %rd<10>;\n  .reg .pred %p<4>;\n"                                                \
  "  ld.param.u64 %rd1, [p_out];\n  mov.u32 %r1, %tid.x;\n  mov.u32 %r2, %ntid.x;\n"                                   \
  "  mov.u64 %rd2, sm;\n  mul.wide.u32 %rd3, %r1, 4;\n  add.u64 %rd4, %rd1, %rd3;\n"

static const char race_ptx[] =
    ".version 7.0\n.target sm_70\n.address_size 64\n.shared .align 4 .b8 sm[1024];\n"
    /* one st.shared, each lane its own word; a barrier; each thread reads its neighbour's word */
    ".visible .entry distinct(.param .u64 p_out)\n" RACE_HEAD "  add.u64 %rd5, %rd2, %rd3;\n"
    "  st.shared.u32 [%rd5], %r1;\n  bar.sync 0;\n"
    "  add.u32 %r3, %r1, 1;\n  rem.u32 %r3, %r3, %r2;\n  mul.wide.u32 %rd6, %r3, 4;\n  add.u64 %rd7, %rd2, %rd6;\n"
    "  ld.shared.u32 %r4, [%rd7];\n  st.global.u32 [%rd4], %r4;\n  ret;\n}\n"
    /* one st.shared.u8 of a word's bytes by 4 lanes each, one st.shared.v2 per lane: distinct bytes */
    ".visible .entry bytes(.param .u64 p_out)\n" RACE_HEAD "  cvt.u64.u32 %rd5, %r1;\n  add.u64 %rd5, %rd2, %rd5;\n"
    "  st.shared.u8 [%rd5], %r1;\n  bar.sync 0;\n"
    "  and.b32 %r3, %r1, -4;\n  cvt.u64.u32 %rd6, %r3;\n  add.u64 %rd6, %rd2, %rd6;\n"
    "  ld.shared.u32 %r4, [%rd6];\n  st.global.u32 [%rd4], %r4;\n  ret;\n}\n"
    /* one warp: every lane stores to the same word in one instruction, then reads it after a barrier */
    ".visible .entry same(.param .u64 p_out)\n" RACE_HEAD "  st.shared.u32 [%rd2], %r1;\n  bar.sync 0;\n"
    "  ld.shared.u32 %r4, [%rd2];\n  st.global.u32 [%rd4], %r4;\n  ret;\n}\n"
    /* lanes of one atom.shared.exch and one atom.shared.add on one word */
    ".visible .entry atoms(.param .u64 p_out)\n" RACE_HEAD "  setp.eq.u32 %p1, %r1, 0;\n"
    "  @%p1 st.shared.u32 [%rd2], 0;\n  bar.sync 0;\n"
    "  atom.shared.add.u32 %r5, [%rd2], 1;\n  bar.sync 0;\n"
    "  ld.shared.u32 %r4, [%rd2];\n  st.global.u32 [%rd4], %r4;\n  ret;\n}\n"
    /* a true race: thread 0 writes a word, thread p_other reads it, no barrier between */
    ".visible .entry race(.param .u64 p_out, .param .u32 p_other)\n" RACE_HEAD "  ld.param.u32 %r5, [p_other];\n"
    "  setp.eq.u32 %p1, %r1, 0;\n  @%p1 st.shared.u32 [%rd2], 5;\n"
    "  setp.eq.u32 %p2, %r1, %r5;\n  @%p2 ld.shared.u32 %r4, [%rd2];\n"
    "  @%p2 st.global.u32 [%rd4], %r4;\n  ret;\n}\n"
    /* a true race in one warp: lanes write the same word in two instructions */
    ".visible .entry twice(.param .u64 p_out)\n" RACE_HEAD "  setp.eq.u32 %p1, %r1, 0;\n"
    "  @%p1 st.shared.u32 [%rd2], 5;\n  @!%p1 st.shared.u32 [%rd2], 6;\n  ret;\n}\n";

static void test_one_instruction_no_race(void **state) {
  (void)state;
  static const unsigned checks[] = {GCAP_SIM_CHECK_SHARED_RACES, CHECKS_ALL};
  for (size_t c = 0; c < sizeof checks / sizeof checks[0]; c++) {
    gcap_context *ctx = ptx_sim_context(checks[c]);
    gcap_module *m = ptx_load_text(ctx, race_ptx);
    void *dout = ptx_dev(ctx, NULL, 128 * sizeof(uint32_t));
    uint32_t out[128];

    gcap_status st = launch(ctx, m, "distinct", 120, ARGS(&dout));
    if (st != GCAP_SUCCESS) fail_msg("distinct, checks 0x%x: %s", checks[c], gcap_last_error_message());
    ptx_get(ctx, out, dout, sizeof out);
    for (unsigned i = 0; i < 120; i++) assert_int_equal(out[i], (i + 1) % 120);

    st = launch(ctx, m, "bytes", 128, ARGS(&dout));
    if (st != GCAP_SUCCESS) fail_msg("bytes, checks 0x%x: %s", checks[c], gcap_last_error_message());
    ptx_get(ctx, out, dout, sizeof out);
    for (unsigned i = 0; i < 128; i++) {
      uint32_t b = i & ~3u;
      assert_int_equal(out[i], b | (b + 1) << 8 | (b + 2) << 16 | (b + 3) << 24);
    }

    /* One lane's value stands, as on a GPU (which one is unspecified). */
    st = launch(ctx, m, "same", 32, ARGS(&dout));
    if (st != GCAP_SUCCESS) fail_msg("same, checks 0x%x: %s", checks[c], gcap_last_error_message());
    ptx_get(ctx, out, dout, sizeof out);
    assert_true(out[0] < 32);
    for (unsigned i = 1; i < 32; i++) assert_int_equal(out[i], out[0]);

    st = launch(ctx, m, "atoms", 96, ARGS(&dout));
    if (st != GCAP_SUCCESS) fail_msg("atoms, checks 0x%x: %s", checks[c], gcap_last_error_message());
    ptx_get(ctx, out, dout, sizeof out);
    for (unsigned i = 0; i < 96; i++) assert_int_equal(out[i], 96);
    gcap_context_destroy(ctx);
  }
}

/* Two instructions with no barrier between them still race, across warps and within one. */
static void test_two_instructions_race(void **state) {
  (void)state;
  gcap_context *ctx = ptx_sim_context(GCAP_SIM_CHECK_SHARED_RACES);
  gcap_module *m = ptx_load_text(ctx, race_ptx);
  void *dout = ptx_dev(ctx, NULL, 128 * sizeof(uint32_t));
  static const uint32_t others[] = {1, 33};
  for (size_t i = 0; i < 2; i++) {
    uint32_t other = others[i];
    assert_status(launch(ctx, m, "race", 64, ARGS(&dout, &other)), GCAP_ERROR_LAUNCH_FAILURE);
    assert_non_null(strstr(gcap_last_error_message(), "shared-memory race on byte 0x0"));
    assert_non_null(strstr(gcap_last_error_message(), "thread (0,0,0)"));
    gcap_context_destroy(ctx);
    ctx = ptx_sim_context(GCAP_SIM_CHECK_SHARED_RACES);
    m = ptx_load_text(ctx, race_ptx);
    dout = ptx_dev(ctx, NULL, 128 * sizeof(uint32_t));
  }
  assert_status(launch(ctx, m, "twice", 32, ARGS(&dout)), GCAP_ERROR_LAUNCH_FAILURE);
  assert_non_null(strstr(gcap_last_error_message(), "shared-memory race on byte 0x0"));
  gcap_context_destroy(ctx);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_partial_warp_full_masks),
      cmocka_unit_test(test_one_instruction_no_race),
      cmocka_unit_test(test_two_instructions_race),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
