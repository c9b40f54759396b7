/*
 * How the lanes and warps of a block wait for each other on the PTX engine:
 * - every .sync warp operation groups its lanes by the member mask each lane passes (converged
 *   lanes of different groups, as cooperative groups' labeled partitions make, each get their
 *   own result), and the SYNC check judges each lane by its own mask;
 * - a shuffle from a lane that is not executing it reads a fixed value with the SYNC check off;
 * - a warp spinning on a flag another warp sets lets that warp run (any seed), with or without
 *   nanosleep, and lanes of one warp that wait for each other (a lock) all get through;
 * - a block whose warps spin on shared memory nothing will change is reported, naming where
 *   its warps are, long before the watchdog.
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
#define CHECKS_NO_RACES (GCAP_SIM_CHECK_MEMORY | GCAP_SIM_CHECK_SYNC | GCAP_SIM_CHECK_INIT)
#define CHECKS_ALL (CHECKS_NO_RACES | GCAP_SIM_CHECK_SHARED_RACES)
/* The watchdog of these tests: a hang fails them in seconds, not minutes. */
#define TIMEOUT_MS 5000u

static gcap_context *ctx_with(unsigned checks, uint64_t seed) {
  gcap_sim_options so;
  ptx_sim_options(&so, checks);
  so.seed = seed;
  so.kernel_timeout_ms = TIMEOUT_MS;
  return test_sim_context_create(&so);
}

static gcap_status launch(gcap_context *ctx, gcap_module *m, const char *kernel, unsigned threads, void **args) {
  return ptx_launch_on(ctx, m, kernel, DIM1(1), DIM1(threads), 0, args);
}

/* ------------------------------------------------------------- per-lane member masks */

/*
 * buckets: each lane finds the lanes of its warp with the same key (match.any), then, with that
 * mask, the bucket's largest value (redux.max), its odd values (ballot) and its leader's value
 * (shfl.idx from the lowest lane): one instruction each, run by all 32 converged lanes with as
 * many masks as there are keys. out[4 t ..]: max, ballot, leader's value, mask.
 */
static const char masks_ptx[] =
    ".version 7.0\n.target sm_80\n.address_size 64\n"
    ".visible .entry buckets(.param .u64 p_key, .param .u64 p_val, .param .u64 p_out)\n{\n"
    "  .reg .b32 %r<12>;\n  .reg .b64 %rd<10>;\n  .reg .pred %p<2>;\n"
    "  ld.param.u64 %rd1, [p_key];\n  ld.param.u64 %rd2, [p_val];\n  ld.param.u64 %rd3, [p_out];\n"
    "  mov.u32 %r1, %tid.x;\n  mul.wide.u32 %rd4, %r1, 4;\n"
    "  add.u64 %rd5, %rd1, %rd4;\n  ld.global.u32 %r2, [%rd5];\n"
    "  add.u64 %rd6, %rd2, %rd4;\n  ld.global.u32 %r3, [%rd6];\n"
    "  match.any.sync.b32 %r4, %r2, -1;\n"
    "  redux.sync.max.u32 %r5, %r3, %r4;\n"
    "  and.b32 %r6, %r3, 1;\n  setp.ne.u32 %p1, %r6, 0;\n"
    "  vote.sync.ballot.b32 %r7, %p1, %r4;\n"
    "  brev.b32 %r8, %r4;\n  clz.b32 %r9, %r8;\n"
    "  shfl.sync.idx.b32 %r10, %r3, %r9, 31, %r4;\n"
    "  mul.wide.u32 %rd7, %r1, 16;\n  add.u64 %rd8, %rd3, %rd7;\n"
    "  st.global.v4.u32 [%rd8], {%r5, %r7, %r10, %r4};\n"
    "  ret;\n}\n"
    /* mask_bad: case 0: lane 31 passes a mask without itself; case 1: lanes 0-15 name lane 16, which passes another. */
    ".visible .entry mask_bad(.param .u64 p_out, .param .u32 p_case)\n{\n"
    "  .reg .b32 %r<8>;\n  .reg .b64 %rd<4>;\n  .reg .pred %p<4>;\n"
    "  mov.u32 %r1, %laneid;\n  ld.param.u32 %r2, [p_case];\n"
    "  setp.lt.u32 %p1, %r1, 16;\n"
    "  selp.b32 %r3, 65535, -65536, %p1;\n"
    "  setp.eq.u32 %p2, %r2, 0;\n"
    "  @%p2 bra $L_case0;\n"
    "  selp.b32 %r3, 131071, -65536, %p1;\n"
    "  bra.uni $L_go;\n"
    "$L_case0:\n"
    "  setp.eq.u32 %p3, %r1, 31;\n"
    "  @%p3 mov.u32 %r3, 2147418112;\n"
    "$L_go:\n"
    "  redux.sync.add.u32 %r4, %r1, %r3;\n"
    "  ld.param.u64 %rd1, [p_out];\n  mul.wide.u32 %rd2, %r1, 4;\n  add.u64 %rd3, %rd1, %rd2;\n"
    "  st.global.u32 [%rd3], %r4;\n"
    "  ret;\n}\n"
    /* shfl_gone: lanes 0-15 shuffle down by 8 with a full mask; lanes 8-15 read lanes 16-23, which branched away. */
    ".visible .entry shfl_gone(.param .u64 p_out)\n{\n"
    "  .reg .b32 %r<6>;\n  .reg .b64 %rd<4>;\n  .reg .pred %p<2>;\n"
    "  mov.u32 %r1, %laneid;\n  mad.lo.u32 %r2, %r1, 3, 100;\n  mov.u32 %r3, 7;\n"
    "  setp.lt.u32 %p1, %r1, 16;\n"
    "  @!%p1 bra $L_out;\n"
    "  shfl.sync.down.b32 %r3, %r2, 8, 31, -1;\n"
    "$L_out:\n"
    "  ld.param.u64 %rd1, [p_out];\n  mul.wide.u32 %rd2, %r1, 4;\n  add.u64 %rd3, %rd1, %rd2;\n"
    "  st.global.u32 [%rd3], %r3;\n"
    "  ret;\n}\n";

enum { BUCKET_THREADS = 96 };

static void bucket_inputs(uint32_t *key, uint32_t *val) {
  uint64_t st = 0x2545f4914f6cdd1dull;
  for (unsigned t = 0; t < BUCKET_THREADS; t++) {
    st ^= st << 13;
    st ^= st >> 7;
    st ^= st << 17;
    key[t] = (t * 7 + t / 32) % 5; /* five buckets per warp, a different pattern in each warp */
    val[t] = (uint32_t)(st >> 20);
  }
}

/* What a GPU gives for lane t: each bucket on its own. */
static void bucket_expect(const uint32_t *key, const uint32_t *val, unsigned t, uint32_t want[4]) {
  unsigned base = t / 32 * 32;
  uint32_t mask = 0, max = 0, ballot = 0;
  for (unsigned l = 0; l < 32; l++) {
    if (key[base + l] != key[t]) continue;
    mask |= 1u << l;
    if (val[base + l] > max) max = val[base + l];
    if (val[base + l] & 1) ballot |= 1u << l;
  }
  want[0] = max;
  want[1] = ballot;
  want[2] = val[base + (unsigned)__builtin_ctz(mask)];
  want[3] = mask;
}

static void run_buckets(unsigned checks) {
  gcap_context *ctx = ctx_with(checks, 1);
  gcap_module *m = ptx_load_text(ctx, masks_ptx);
  uint32_t key[BUCKET_THREADS], val[BUCKET_THREADS], got[BUCKET_THREADS][4];
  bucket_inputs(key, val);
  void *dk = ptx_dev(ctx, key, sizeof key), *dv = ptx_dev(ctx, val, sizeof val), *dout = ptx_dev(ctx, NULL, sizeof got);
  assert_ok(launch(ctx, m, "buckets", BUCKET_THREADS, ARGS(&dk, &dv, &dout)));
  ptx_get(ctx, got, dout, sizeof got);
  for (unsigned t = 0; t < BUCKET_THREADS; t++) {
    uint32_t want[4];
    bucket_expect(key, val, t, want);
    for (unsigned k = 0; k < 4; k++) {
      if (got[t][k] != want[k]) fail_msg("thread %u result %u: got 0x%08x, want 0x%08x", t, k, got[t][k], want[k]);
    }
  }
  gcap_context_destroy(ctx);
}

static void test_each_lane_its_own_mask(void **state) {
  (void)state;
  run_buckets(CHECKS_ALL); /* legal: no SYNC report */
  run_buckets(0);
}

static void test_sync_check_per_lane(void **state) {
  (void)state;
  gcap_context *ctx = ctx_with(GCAP_SIM_CHECK_SYNC, 1);
  gcap_module *m = ptx_load_text(ctx, masks_ptx);
  void *dout = ptx_dev(ctx, NULL, 32 * 4);
  unsigned which = 0;
  assert_status(launch(ctx, m, "mask_bad", 32, ARGS(&dout, &which)), GCAP_ERROR_LAUNCH_FAILURE);
  test_assert_message_contains("lanes 0x80000000 execute it but member mask 0x7fff0000 does not name them");
  test_assert_message_contains("redux.sync.add.u32");
  gcap_context_destroy(ctx);

  ctx = ctx_with(GCAP_SIM_CHECK_SYNC, 1);
  m = ptx_load_text(ctx, masks_ptx);
  dout = ptx_dev(ctx, NULL, 32 * 4);
  which = 1;
  assert_status(launch(ctx, m, "mask_bad", 32, ARGS(&dout, &which)), GCAP_ERROR_LAUNCH_FAILURE);
  test_assert_message_contains("member mask 0x0001ffff names lanes 0x00010000 that are not executing this "
                               "instruction with it");
  gcap_context_destroy(ctx);

  /* With the check off, each group of lanes with one mask reduces on its own. */
  ctx = ctx_with(0, 1);
  m = ptx_load_text(ctx, masks_ptx);
  dout = ptx_dev(ctx, NULL, 32 * 4);
  which = 0;
  assert_ok(launch(ctx, m, "mask_bad", 32, ARGS(&dout, &which)));
  uint32_t got[32];
  ptx_get(ctx, got, dout, sizeof got);
  assert_int_equal(got[0], 120);  /* 0 + ... + 15 */
  assert_int_equal(got[16], 345); /* 16 + ... + 30 */
  assert_int_equal(got[31], 31);
  gcap_context_destroy(ctx);
}

static void test_shuffle_from_inactive_lane(void **state) {
  (void)state;
  gcap_context *ctx = ctx_with(0, 1);
  gcap_module *m = ptx_load_text(ctx, masks_ptx);
  void *dout = ptx_dev(ctx, NULL, 32 * 4);
  assert_ok(launch(ctx, m, "shfl_gone", 32, ARGS(&dout)));
  uint32_t got[32];
  ptx_get(ctx, got, dout, sizeof got);
  for (unsigned l = 0; l < 8; l++) assert_int_equal(got[l], (l + 8) * 3 + 100);
  for (unsigned l = 8; l < 16; l++) assert_int_equal(got[l], 0xffffffffu); /* not the stale register */
  for (unsigned l = 16; l < 32; l++) assert_int_equal(got[l], 7);
  gcap_context_destroy(ctx);

  ctx = ctx_with(GCAP_SIM_CHECK_SYNC, 1);
  m = ptx_load_text(ctx, masks_ptx);
  dout = ptx_dev(ctx, NULL, 32 * 4);
  assert_status(launch(ctx, m, "shfl_gone", 32, ARGS(&dout)), GCAP_ERROR_LAUNCH_FAILURE);
  test_assert_message_contains("names lanes 0xffff0000 that are not executing this instruction");
  gcap_context_destroy(ctx);
}

/* ------------------------------------------------------------- warps that wait for each other */

/*
 * handoff: thread 0 sums 1..3000 in a loop, stores the sum in shared memory and raises a shared
 * flag; thread 32 (the other warp) spins on the flag (sleeping between reads when p_sleep is
 * set), then copies the sum out. No barrier between them: whichever warp runs first, the
 * consumer must let the producer run.
 */
static const char wait_ptx[] =
    ".version 7.0\n.target sm_70\n.address_size 64\n"
    ".visible .entry handoff(.param .u64 p_out, .param .u32 p_sleep)\n{\n"
    "  .shared .align 4 .b32 flag;\n  .shared .align 4 .b32 data;\n"
    "  .reg .b32 %r<8>;\n  .reg .b64 %rd<2>;\n  .reg .pred %p<8>;\n"
    "  mov.u32 %r1, %tid.x;\n"
    "  setp.ne.u32 %p1, %r1, 0;\n"
    "  @%p1 bra $L_init_done;\n"
    "  st.shared.u32 [flag], 0;\n"
    "$L_init_done:\n"
    "  bar.sync 0;\n"
    "  setp.eq.u32 %p2, %r1, 32;\n"
    "  @%p2 bra $L_consumer;\n"
    "  setp.ne.u32 %p3, %r1, 0;\n"
    "  @%p3 bra $L_end;\n"
    "  mov.u32 %r2, 0;\n  mov.u32 %r3, 0;\n"
    "$L_sum:\n"
    "  add.u32 %r3, %r3, 1;\n  add.u32 %r2, %r2, %r3;\n"
    "  setp.lt.u32 %p4, %r3, 3000;\n"
    "  @%p4 bra $L_sum;\n"
    "  st.shared.u32 [data], %r2;\n"
    "  membar.cta;\n"
    "  st.volatile.shared.u32 [flag], 1;\n"
    "  bra.uni $L_end;\n"
    "$L_consumer:\n"
    "  ld.param.u32 %r6, [p_sleep];\n  setp.ne.u32 %p6, %r6, 0;\n"
    "$L_wait:\n"
    "  @%p6 nanosleep.u32 100;\n"
    "  ld.volatile.shared.u32 %r4, [flag];\n"
    "  setp.eq.u32 %p5, %r4, 0;\n"
    "  @%p5 bra $L_wait;\n"
    "  ld.shared.u32 %r5, [data];\n"
    "  ld.param.u64 %rd1, [p_out];\n  st.global.u32 [%rd1], %r5;\n"
    "$L_end:\n"
    "  ret;\n}\n"
    /*
     * warp_lock: every thread takes one shared lock (atom.cas in a loop),
     * adds tid + 1 to a shared counter under it, and lets it go; lanes of
     * one warp wait for each other there. Then a full-mask butterfly sums
     * tid + 1 over each warp (the lanes must all come back to it) and a
     * barrier. out: the counter, then each warp's sum.
     */
    ".visible .entry warp_lock(.param .u64 p_out)\n{\n"
    "  .shared .align 4 .b32 lock;\n  .shared .align 4 .b32 ctr;\n"
    "  .reg .b32 %r<12>;\n  .reg .b64 %rd<4>;\n  .reg .pred %p<6>;\n"
    "  mov.u32 %r1, %tid.x;\n"
    "  setp.ne.u32 %p1, %r1, 0;\n"
    "  @%p1 bra $L_go;\n"
    "  st.shared.u32 [lock], 0;\n  st.shared.u32 [ctr], 0;\n"
    "$L_go:\n"
    "  bar.sync 0;\n"
    "  add.u32 %r3, %r1, 1;\n"
    "$L_try:\n"
    "  atom.shared.cas.b32 %r2, [lock], 0, 1;\n"
    "  setp.ne.u32 %p2, %r2, 0;\n"
    "  @%p2 bra $L_try;\n"
    "  ld.volatile.shared.u32 %r4, [ctr];\n"
    "  add.u32 %r4, %r4, %r3;\n"
    "  st.volatile.shared.u32 [ctr], %r4;\n"
    "  membar.cta;\n"
    "  atom.shared.exch.b32 %r5, [lock], 0;\n"
    "  shfl.sync.bfly.b32 %r6, %r3, 16, 31, -1;\n  add.u32 %r3, %r3, %r6;\n"
    "  shfl.sync.bfly.b32 %r6, %r3, 8, 31, -1;\n  add.u32 %r3, %r3, %r6;\n"
    "  shfl.sync.bfly.b32 %r6, %r3, 4, 31, -1;\n  add.u32 %r3, %r3, %r6;\n"
    "  shfl.sync.bfly.b32 %r6, %r3, 2, 31, -1;\n  add.u32 %r3, %r3, %r6;\n"
    "  shfl.sync.bfly.b32 %r6, %r3, 1, 31, -1;\n  add.u32 %r3, %r3, %r6;\n"
    "  bar.sync 0;\n"
    "  and.b32 %r7, %r1, 31;\n  setp.ne.u32 %p3, %r7, 0;\n"
    "  @%p3 bra $L_end;\n"
    "  shr.u32 %r8, %r1, 5;\n"
    "  ld.param.u64 %rd1, [p_out];\n"
    "  mul.wide.u32 %rd2, %r8, 4;\n  add.u64 %rd3, %rd1, %rd2;\n"
    "  st.global.u32 [%rd3+4], %r3;\n"
    "  setp.ne.u32 %p4, %r1, 0;\n  @%p4 bra $L_end;\n"
    "  ld.volatile.shared.u32 %r9, [ctr];\n"
    "  st.global.u32 [%rd1], %r9;\n"
    "$L_end:\n"
    "  ret;\n}\n"
    /* stuck: warp 0 waits for a flag nobody raises; warp 1 waits at the barrier for warp 0. */
    ".visible .entry stuck()\n{\n"
    "  .shared .align 4 .b32 flag;\n"
    "  .reg .b32 %r<4>;\n  .reg .pred %p<4>;\n"
    "  mov.u32 %r1, %tid.x;\n"
    "  setp.ne.u32 %p1, %r1, 0;\n"
    "  @%p1 bra $L_init_done;\n"
    "  st.shared.u32 [flag], 0;\n"
    "$L_init_done:\n"
    "  bar.sync 0;\n"
    "  shr.u32 %r2, %r1, 5;\n"
    "  setp.ne.u32 %p2, %r2, 0;\n"
    "  @%p2 bra $L_bar;\n"
    "$L_spin:\n"
    "  ld.volatile.shared.u32 %r3, [flag];\n"
    "  setp.eq.u32 %p3, %r3, 0;\n"
    "  @%p3 bra $L_spin;\n"
    "$L_bar:\n"
    "  bar.sync 0;\n"
    "  ret;\n}\n"
    /* stuck_sleep: one thread sleeps between reads of a flag nobody raises. */
    ".visible .entry stuck_sleep()\n{\n"
    "  .shared .align 4 .b32 flag;\n"
    "  .reg .b32 %r<2>;\n  .reg .pred %p<2>;\n"
    "  st.shared.u32 [flag], 0;\n"
    "$L_nap:\n"
    "  nanosleep.u32 100;\n"
    "  ld.volatile.shared.u32 %r1, [flag];\n"
    "  setp.eq.u32 %p1, %r1, 0;\n"
    "  @%p1 bra $L_nap;\n"
    "  ret;\n}\n";

/*
 * More ways threads wait for each other. late_lane: thread 0's branch body sits after the barrier
 * (as nvcc places an `if (t == 0)` body at the end of a function) and jumps back to it; lanes
 * 1-31 reach the barrier first and must wait there for lane 0. flag_wait: warp 1 waits for a
 * flag warp 0 raises with an atomic, reading it with ld.acquire (a strong load: no race with the
 * atomic). reserved: reads the block's reserved shared region, which starts as zeros.
 */
static const char converge_ptx[] = ".version 7.8\n.target sm_80\n.address_size 64\n"
                                   ".visible .entry late_lane(.param .u64 p_out)\n{\n"
                                   "  .shared .align 4 .b32 v[64];\n"
                                   "  .reg .b32 %r<8>;\n  .reg .b64 %rd<4>;\n  .reg .pred %p<2>;\n"
                                   "  mov.u32 %r1, %tid.x;\n"
                                   "  mov.u32 %r2, v;\n"
                                   "  shl.b32 %r3, %r1, 2;\n  add.u32 %r4, %r2, %r3;\n"
                                   "  setp.eq.u32 %p1, %r1, 0;\n"
                                   "  @%p1 bra $L_first;\n"
                                   "  st.shared.u32 [%r4], %r1;\n"
                                   "$L_join:\n"
                                   "  bar.sync 0;\n"
                                   "  add.u32 %r5, %r1, 1;\n  and.b32 %r5, %r5, 63;\n"
                                   "  shl.b32 %r5, %r5, 2;\n  add.u32 %r5, %r2, %r5;\n"
                                   "  ld.shared.u32 %r6, [%r5];\n"
                                   "  ld.param.u64 %rd1, [p_out];\n  mul.wide.u32 %rd2, %r1, 4;\n"
                                   "  add.u64 %rd3, %rd1, %rd2;\n  st.global.u32 [%rd3], %r6;\n"
                                   "  ret;\n"
                                   "$L_first:\n"
                                   "  st.shared.u32 [%r4], 1000;\n"
                                   "  bra.uni $L_join;\n"
                                   "}\n"
                                   ".visible .entry flag_wait(.param .u64 p_out)\n{\n"
                                   "  .shared .align 4 .b32 flag;\n"
                                   "  .reg .b32 %r<4>;\n  .reg .b64 %rd<2>;\n  .reg .pred %p<4>;\n"
                                   "  mov.u32 %r1, %tid.x;\n"
                                   "  setp.ne.u32 %p1, %r1, 0;\n"
                                   "  @%p1 bra $L_init_done;\n"
                                   "  st.shared.u32 [flag], 0;\n"
                                   "$L_init_done:\n"
                                   "  bar.sync 0;\n"
                                   "  setp.eq.u32 %p2, %r1, 0;\n"
                                   "  @!%p2 bra $L_consumer;\n"
                                   "  atom.shared.exch.b32 %r2, [flag], 7;\n"
                                   "  bra.uni $L_end;\n"
                                   "$L_consumer:\n"
                                   "  setp.ne.u32 %p3, %r1, 32;\n"
                                   "  @%p3 bra $L_end;\n"
                                   "$L_wait:\n"
                                   "  ld.acquire.cta.shared.u32 %r3, [flag];\n"
                                   "  setp.eq.u32 %p3, %r3, 0;\n"
                                   "  @%p3 bra $L_wait;\n"
                                   "  ld.param.u64 %rd1, [p_out];\n  st.global.u32 [%rd1], %r3;\n"
                                   "$L_end:\n"
                                   "  ret;\n}\n"
                                   ".visible .entry reserved(.param .u64 p_out)\n{\n"
                                   "  .reg .b32 %r<4>;\n  .reg .b64 %rd<4>;\n"
                                   "  mov.u32 %r1, %reserved_smem_offset_0;\n"
                                   "  mov.u32 %r2, %tid.x;\n  shl.b32 %r3, %r2, 2;\n  add.u32 %r1, %r1, %r3;\n"
                                   "  ld.shared.u32 %r3, [%r1];\n"
                                   "  ld.param.u64 %rd1, [p_out];\n  mul.wide.u32 %rd2, %r2, 4;\n"
                                   "  add.u64 %rd3, %rd1, %rd2;\n  st.global.u32 [%rd3], %r3;\n"
                                   "  ret;\n}\n";

static void test_lanes_converge_at_barrier(void **state) {
  (void)state;
  for (unsigned checks = 0; checks <= CHECKS_ALL; checks += CHECKS_ALL)
    for (uint64_t seed = 0; seed < 4; seed++) {
      gcap_context *ctx = ctx_with(checks, seed);
      gcap_module *m = ptx_load_text(ctx, converge_ptx);
      void *dout = ptx_dev(ctx, NULL, 64 * 4);
      assert_ok(launch(ctx, m, "late_lane", 64, ARGS(&dout)));
      uint32_t got[64];
      ptx_get(ctx, got, dout, sizeof got);
      for (unsigned t = 0; t < 64; t++) assert_int_equal(got[t], t == 63 ? 1000u : t + 1);
      gcap_context_destroy(ctx);
    }
}

static void test_strong_accesses_do_not_race(void **state) {
  (void)state;
  gcap_context *ctx = ctx_with(CHECKS_ALL, 5);
  gcap_module *m = ptx_load_text(ctx, converge_ptx);
  void *dout = ptx_dev(ctx, NULL, 4);
  assert_ok(launch(ctx, m, "flag_wait", 64, ARGS(&dout)));
  uint32_t got = 0;
  ptx_get(ctx, &got, dout, 4);
  assert_int_equal(got, 7);
  gcap_context_destroy(ctx);
}

static void test_reserved_region_starts_zero(void **state) {
  (void)state;
  gcap_context *ctx = ctx_with(CHECKS_ALL, 9);
  gcap_module *m = ptx_load_text(ctx, converge_ptx);
  void *dout = ptx_dev(ctx, NULL, 32 * 4);
  uint32_t got[32];
  assert_ok(launch(ctx, m, "reserved", 32, ARGS(&dout)));
  ptx_get(ctx, got, dout, sizeof got);
  for (unsigned t = 0; t < 32; t++) assert_int_equal(got[t], 0);
  gcap_context_destroy(ctx);
}

static void test_warp_waits_for_another(void **state) {
  (void)state;
  for (unsigned sleep = 0; sleep < 2; sleep++)
    for (uint64_t seed = 0; seed < 8; seed++) {
      gcap_context *ctx = ctx_with(CHECKS_NO_RACES, seed);
      gcap_module *m = ptx_load_text(ctx, wait_ptx);
      void *dout = ptx_dev(ctx, NULL, 4);
      assert_ok(launch(ctx, m, "handoff", 64, ARGS(&dout, &sleep)));
      uint32_t got = 0;
      ptx_get(ctx, &got, dout, 4);
      assert_int_equal(got, 4501500u); /* 1 + ... + 3000 */
      gcap_context_destroy(ctx);
    }
}

static void test_lanes_wait_for_each_other(void **state) {
  (void)state;
  for (uint64_t seed = 0; seed < 4; seed++) {
    gcap_context *ctx = ctx_with(CHECKS_NO_RACES, seed);
    gcap_module *m = ptx_load_text(ctx, wait_ptx);
    void *dout = ptx_dev(ctx, NULL, 12);
    assert_ok(launch(ctx, m, "warp_lock", 64, ARGS(&dout)));
    uint32_t got[3];
    ptx_get(ctx, got, dout, sizeof got);
    assert_int_equal(got[0], 2080u); /* 1 + ... + 64: every thread took the lock once */
    assert_int_equal(got[1], 528u);  /* 1 + ... + 32 */
    assert_int_equal(got[2], 1552u); /* 33 + ... + 64 */
    gcap_context_destroy(ctx);
  }
}

static void test_block_that_cannot_finish(void **state) {
  (void)state;
  gcap_context *ctx = ctx_with(CHECKS_ALL, 3);
  gcap_module *m = ptx_load_text(ctx, wait_ptx);
  assert_status(launch(ctx, m, "stuck", 64, NULL), GCAP_ERROR_LAUNCH_FAILURE);
  test_assert_message_contains("kernel \"stuck\" block (0,0,0)");
  test_assert_message_contains("the block can never finish: its running warps spin without changing anything");
  test_assert_message_contains("warp 0 at PTX line 111 \"ld.volatile.shared.u32 %r3, [flag]\"");
  test_assert_message_contains("warp 1 at PTX line 115 \"bar.sync 0\"");
  gcap_context_destroy(ctx);

  /* Sleeping between reads changes nothing either. */
  ctx = ctx_with(CHECKS_ALL, 3);
  m = ptx_load_text(ctx, wait_ptx);
  assert_status(launch(ctx, m, "stuck_sleep", 1, NULL), GCAP_ERROR_LAUNCH_FAILURE);
  test_assert_message_contains("kernel \"stuck_sleep\" block (0,0,0)");
  test_assert_message_contains("the block can never finish");
  gcap_context_destroy(ctx);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_each_lane_its_own_mask),      cmocka_unit_test(test_sync_check_per_lane),
      cmocka_unit_test(test_shuffle_from_inactive_lane),  cmocka_unit_test(test_warp_waits_for_another),
      cmocka_unit_test(test_lanes_wait_for_each_other),   cmocka_unit_test(test_block_that_cannot_finish),
      cmocka_unit_test(test_lanes_converge_at_barrier),   cmocka_unit_test(test_strong_accesses_do_not_race),
      cmocka_unit_test(test_reserved_region_starts_zero),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
