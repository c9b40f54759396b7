/*
 * Asynchronous copies and mbarriers on the simulator's PTX engine: cp.async (groups, src-size
 * zero-fill, ignore-src, the data a kernel sees before and after it waits), mbarrier phases,
 * parity, arrival counts and state tokens, try_wait loops across warps, and the checks that
 * understand them (the race check on a copy's destination, SYNC on mbarrier misuse, MEMORY on a
 * copy's source). Hand-written PTX here, and what nvcc makes of the CUDA C++ forms
 * (tests/ptx/async/async_forms.cu at sm_80 and sm_90), checked against references.
 */
#define _POSIX_C_SOURCE 200809L

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "common.h"
#include "ptx_util.h"

#define HEAD ".version 8.0\n.target sm_90\n.address_size 64\n"

/* ---------------------------------------------------------------- hand-written cp.async */

/*
 * early: each thread stores a marker into its 16 shared bytes, issues a 16-byte cp.async into
 * them, reads them before it waits (out[t*8 + 0..3]) and after (out[t*8 + 4..7]).
 */
static const char early_ptx[] =
    HEAD ".visible .entry early(.param .u64 p_in, .param .u64 p_out)\n{\n"
         "  .reg .b32 %r<16>;\n  .reg .b64 %rd<8>;\n  .shared .align 16 .b8 s[512];\n"
         "  ld.param.u64 %rd1, [p_in];\n  ld.param.u64 %rd2, [p_out];\n"
         "  mov.u32 %r1, %tid.x;\n  shl.b32 %r2, %r1, 4;\n  mov.u32 %r3, s;\n  add.u32 %r4, %r3, %r2;\n"
         "  mov.u32 %r5, 0xdead;\n  st.shared.v4.u32 [%r4], {%r5, %r5, %r5, %r5};\n"
         "  mul.wide.u32 %rd3, %r1, 16;\n  add.s64 %rd4, %rd1, %rd3;\n"
         "  cp.async.cg.shared.global [%r4], [%rd4], 16;\n" /* PTX line 19 */
         "  cp.async.commit_group;\n"
         "  ld.shared.v4.u32 {%r6, %r7, %r8, %r9}, [%r4];\n" /* PTX line 21: before the wait */
         "  cp.async.wait_group 0;\n"
         "  ld.shared.v4.u32 {%r10, %r11, %r12, %r13}, [%r4];\n"
         "  mul.wide.u32 %rd5, %r1, 32;\n  add.s64 %rd6, %rd2, %rd5;\n"
         "  st.global.v4.u32 [%rd6], {%r6, %r7, %r8, %r9};\n  st.global.v4.u32 [%rd6+16], {%r10, %r11, %r12, %r13};\n"
         "  ret;\n}\n";

/* Runs early on 32 threads with `checks`; *in_out: 32 * 16 bytes in, 32 * 32 bytes out. */
static gcap_status run_early(unsigned checks, const uint32_t *in, uint32_t *out, char *msg, size_t size) {
  gcap_context *ctx = ptx_sim_context(checks);
  gcap_module *m = ptx_load_text(ctx, early_ptx);
  void *din = ptx_dev(ctx, in, 32 * 16), *dout = ptx_dev(ctx, NULL, 32 * 32);
  gcap_status st = ptx_launch_on(ctx, m, "early", GCAP_DIM3(1, 1, 1), GCAP_DIM3(32, 1, 1), 0, (void *[]){&din, &dout});
  snprintf(msg, size, "%s", gcap_last_error_message());
  if (st == GCAP_SUCCESS) ptx_get(ctx, out, dout, 32 * 32);
  gcap_context_destroy(ctx);
  return st;
}

/* Without checks, a read before the wait sees what the destination held; after it, the copy. */
static void early_read_sees_stale_data(void **state) {
  (void)state;
  uint32_t in[128], out[256];
  char msg[600];
  for (unsigned i = 0; i < 128; i++) in[i] = 1000 + i;
  assert_ok(run_early(0, in, out, msg, sizeof msg));
  for (unsigned t = 0; t < 32; t++)
    for (unsigned k = 0; k < 4; k++) {
      assert_int_equal(out[t * 8 + k], 0xdead);
      assert_int_equal(out[t * 8 + 4 + k], 1000 + t * 4 + k);
    }
}

/* Under SHARED_RACES, that read is a race, naming the read's thread and line and the copy's. */
static void early_read_is_a_race(void **state) {
  (void)state;
  uint32_t in[128] = {0}, out[256];
  char msg[600];
  assert_status(run_early(GCAP_SIM_CHECK_SHARED_RACES, in, out, msg, sizeof msg), GCAP_ERROR_LAUNCH_FAILURE);
  assert_non_null(strstr(msg, "at PTX line 21 \"ld.shared.v4.u32"));
  assert_non_null(strstr(msg, "shared-memory race on byte 0x"));
  assert_non_null(strstr(msg, "this read by thread (0,0,0) and a cp.async into it by thread (0,0,0) at PTX line 19 "
                              "\"cp.async.cg.shared.global [%r4], [%rd4], 16\""));
  assert_non_null(strstr(msg, "whose group this thread has not waited for"));
  /* INIT alone: the destination is not written before the wait either */
  assert_status(run_early(GCAP_SIM_CHECK_INIT | GCAP_SIM_CHECK_MEMORY, in, out, msg, sizeof msg), GCAP_SUCCESS);
}

/*
 * The same race in code whose lines come from long toolkit paths through inlined calls (as nvcc's
 * cuda::memcpy_async makes): the report keeps both places and its explanation whole.
 */
static void long_race_reports_are_whole(void **state) {
  (void)state;
  const char *dir = "/usr/local/cuda-13.0/targets/x86_64-linux/include/cccl/cuda/__memcpy_async/detail/"
                    "very/deeply/nested/headers/of/a/toolkit";
  char text[4096], body[2048];
  const char *cut = strstr(early_ptx, "  cp.async.cg");
  const char *read = strstr(early_ptx, "  ld.shared.v4.u32 {%r6");
  assert_non_null(cut);
  assert_non_null(read);
  snprintf(body, sizeof body,
           "%.*s  .loc 1 60 3, function_name $L__a, inlined_at 2 130 5\n%.*s"
           "  .loc 2 140 7, function_name $L__b, inlined_at 2 150 3\n%s",
           (int)(cut - early_ptx), early_ptx, (int)(read - cut), cut, read);
  char *entry = strstr(body, ".visible");
  assert_non_null(entry);
  snprintf(text, sizeof text, "%.*s.file 1 \"%s/cp_async_shared_global.h\"\n.file 2 \"%s/async_user_code.cu\"\n%s",
           (int)(entry - body), body, dir, dir, entry);
  gcap_context *ctx = ptx_sim_context(GCAP_SIM_CHECK_SHARED_RACES);
  gcap_module *m = ptx_load_text(ctx, text);
  void *din = ptx_dev(ctx, NULL, 32 * 16), *dout = ptx_dev(ctx, NULL, 32 * 32);
  assert_status(ptx_launch_on(ctx, m, "early", GCAP_DIM3(1, 1, 1), GCAP_DIM3(32, 1, 1), 0, (void *[]){&din, &dout}),
                GCAP_ERROR_LAUNCH_FAILURE);
  const char *msg = gcap_last_error_message();
  assert_non_null(strstr(msg, "async_user_code.cu:140, inlined at "));
  assert_non_null(strstr(msg, "cp_async_shared_global.h:60), whose group"));
  const char *tail = "whose group this thread has not waited for (cp.async.wait_group, cp.async.wait_all)";
  size_t len = strlen(msg), tail_len = strlen(tail);
  if (len < tail_len || strcmp(msg + len - tail_len, tail) != 0) fail_msg("the report was cut: \"%s\"", msg);
  gcap_context_destroy(ctx);
}

/*
 * neighbour: thread t of one warp copies 4 bytes into s[t]; waits; then (bar: after bar.sync)
 * reads s[t ^ 1], another thread's copy. Without the barrier it is a race with that copy's write.
 */
static const char neighbour_ptx[] =
    HEAD ".visible .entry neighbour(.param .u64 p_in, .param .u64 p_out, .param .u32 p_bar)\n{\n"
         "  .reg .pred %p<2>;\n  .reg .b32 %r<12>;\n  .reg .b64 %rd<8>;\n  .shared .align 4 .b8 s[256];\n"
         "  ld.param.u64 %rd1, [p_in];\n  ld.param.u64 %rd2, [p_out];\n  ld.param.u32 %r9, [p_bar];\n"
         "  mov.u32 %r1, %tid.x;\n  shl.b32 %r2, %r1, 2;\n  mov.u32 %r3, s;\n  add.u32 %r4, %r3, %r2;\n"
         "  mul.wide.u32 %rd3, %r1, 4;\n  add.s64 %rd4, %rd1, %rd3;\n"
         "  cp.async.ca.shared.global [%r4], [%rd4], 4;\n" /* PTX line 19 */
         "  cp.async.wait_all;\n"
         "  setp.eq.u32 %p1, %r9, 0;\n"
         "  @%p1 bra NOBAR;\n  bar.sync 0;\n"
         "NOBAR:\n"
         "  xor.b32 %r5, %r1, 1;\n  shl.b32 %r6, %r5, 2;\n  add.u32 %r7, %r3, %r6;\n"
         "  ld.shared.u32 %r8, [%r7];\n" /* PTX line 28 */
         "  add.s64 %rd5, %rd2, %rd3;\n  st.global.u32 [%rd5], %r8;\n  ret;\n}\n";

static gcap_status run_neighbour(unsigned bar, uint32_t *out, char *msg, size_t size) {
  gcap_context *ctx = ptx_sim_context(PTX_CHECKS_ALL);
  gcap_module *m = ptx_load_text(ctx, neighbour_ptx);
  uint32_t in[32];
  for (unsigned i = 0; i < 32; i++) in[i] = 7 * i + 3;
  void *din = ptx_dev(ctx, in, sizeof in), *dout = ptx_dev(ctx, NULL, sizeof in);
  gcap_status st =
      ptx_launch_on(ctx, m, "neighbour", GCAP_DIM3(1, 1, 1), GCAP_DIM3(32, 1, 1), 0, (void *[]){&din, &dout, &bar});
  snprintf(msg, size, "%s", gcap_last_error_message());
  if (st == GCAP_SUCCESS) ptx_get(ctx, out, dout, sizeof in);
  gcap_context_destroy(ctx);
  return st;
}

/* After wait_all and bar.sync another thread may read the destination; without the barrier it races. */
static void wait_and_barrier_publish_the_copy(void **state) {
  (void)state;
  uint32_t out[32];
  char msg[600];
  assert_ok(run_neighbour(1, out, msg, sizeof msg));
  for (unsigned t = 0; t < 32; t++) assert_int_equal(out[t], 7 * (t ^ 1) + 3);
  assert_status(run_neighbour(0, out, msg, sizeof msg), GCAP_ERROR_LAUNCH_FAILURE);
  assert_non_null(strstr(msg, "at PTX line 28 \"ld.shared.u32 %r8, [%r7]\""));
  assert_non_null(strstr(msg, "this read by thread (0,0,0) and an earlier write by thread (1,0,0)"));
  assert_non_null(strstr(msg, "at PTX line 19 \"cp.async.ca.shared.global [%r4], [%rd4], 4\""));
}

/*
 * groups: three groups of one 8-byte copy each into s[0..2] (from in[0..2]), then wait_group 2,
 * 1, 0, reading all three slots after each (out: 9 u64); the slots held 0xff.. before.
 */
static const char groups_ptx[] = HEAD
    ".visible .entry groups(.param .u64 p_in, .param .u64 p_out)\n{\n"
    "  .reg .b32 %r<4>;\n  .reg .b64 %rd<16>;\n  .shared .align 8 .b8 s[24];\n"
    "  ld.param.u64 %rd1, [p_in];\n  ld.param.u64 %rd2, [p_out];\n  mov.u32 %r1, s;\n"
    "  mov.u64 %rd3, -1;\n  st.shared.u64 [s], %rd3;\n  st.shared.u64 [s+8], %rd3;\n  st.shared.u64 [s+16], %rd3;\n"
    "  cp.async.ca.shared.global [%r1], [%rd1], 8;\n  cp.async.commit_group;\n"
    "  cp.async.ca.shared::cta.global.L2::128B [%r1+8], [%rd1+8], 8;\n  cp.async.commit_group;\n"
    "  cp.async.ca.shared.global.L2::cache_hint [s+16], [%rd1+16], 8, %rd3;\n  cp.async.commit_group;\n"
    "  cp.async.wait_group 2;\n"
    "  ld.shared.u64 %rd4, [s];\n  st.global.u64 [%rd2], %rd4;\n"
    "  ld.shared.u64 %rd4, [s+8];\n  st.global.u64 [%rd2+32], %rd4;\n"
    "  cp.async.wait_group 1;\n"
    "  ld.shared.u64 %rd4, [s];\n  st.global.u64 [%rd2+8], %rd4;\n"
    "  ld.shared.u64 %rd4, [s+8];\n  st.global.u64 [%rd2+16], %rd4;\n"
    "  cp.async.wait_group 0;\n"
    "  ld.shared.u64 %rd4, [s+16];\n  st.global.u64 [%rd2+24], %rd4;\n"
    "  ret;\n}\n";

/* wait_group N leaves the N most recent groups in flight and lands the older ones, in order. */
static void wait_group_counts_groups(void **state) {
  (void)state;
  gcap_context *ctx = ptx_sim_context(0);
  gcap_module *m = ptx_load_text(ctx, groups_ptx);
  uint64_t in[3] = {11, 22, 33}, out[5];
  void *din = ptx_dev(ctx, in, sizeof in), *dout = ptx_dev(ctx, NULL, sizeof out);
  assert_ok(ptx_launch_on(ctx, m, "groups", GCAP_DIM3(1, 1, 1), GCAP_DIM3(1, 1, 1), 0, (void *[]){&din, &dout}));
  ptx_get(ctx, out, dout, sizeof out);
  assert_int_equal(out[0], 11); /* wait_group 2: the first of three landed */
  assert_int_equal(out[1], 11);
  assert_int_equal(out[2], 22); /* wait_group 1: the second */
  assert_int_equal(out[3], 33);
  assert_int_equal(out[4], UINT64_MAX); /* wait_group 2: the second still in flight, its slot as it was */
  gcap_context_destroy(ctx);
}

/*
 * fill: thread t copies 16 bytes of in + 16 t with src-size t (bytes t..15 zero), then 16 more
 * with ignore-src set for odd t (all zero); out: 32 bytes per thread.
 */
static const char fill_ptx[] =
    HEAD ".visible .entry fill(.param .u64 p_in, .param .u64 p_out)\n{\n"
         "  .reg .pred %p<2>;\n  .reg .b32 %r<16>;\n  .reg .b64 %rd<8>;\n  .shared .align 16 .b8 s[1024];\n"
         "  ld.param.u64 %rd1, [p_in];\n  ld.param.u64 %rd2, [p_out];\n"
         "  mov.u32 %r1, %tid.x;\n  shl.b32 %r2, %r1, 5;\n  mov.u32 %r3, s;\n  add.u32 %r4, %r3, %r2;\n"
         "  mul.wide.u32 %rd3, %r1, 16;\n  add.s64 %rd4, %rd1, %rd3;\n"
         "  cp.async.cg.shared.global [%r4], [%rd4], 16, %r1;\n"
         "  and.b32 %r5, %r1, 1;\n  setp.ne.u32 %p1, %r5, 0;\n"
         "  cp.async.ca.shared.global [%r4+16], [%rd4], 16, %p1;\n"
         "  cp.async.wait_all;\n"
         "  ld.shared.v4.u32 {%r6, %r7, %r8, %r9}, [%r4];\n  ld.shared.v4.u32 {%r10, %r11, %r12, %r13}, [%r4+16];\n"
         "  mul.wide.u32 %rd5, %r1, 32;\n  add.s64 %rd6, %rd2, %rd5;\n"
         "  st.global.v4.u32 [%rd6], {%r6, %r7, %r8, %r9};\n  st.global.v4.u32 [%rd6+16], {%r10, %r11, %r12, %r13};\n"
         "  ret;\n}\n";

/* Bytes past src-size are zeros; ignore-src reads nothing. Every check on: none of it is a fault. */
static void src_size_zero_fills(void **state) {
  (void)state;
  gcap_context *ctx = ptx_sim_context(PTX_CHECKS_ALL);
  gcap_module *m = ptx_load_text(ctx, fill_ptx);
  unsigned char in[17 * 16], out[17 * 32];
  for (unsigned i = 0; i < sizeof in; i++) in[i] = (unsigned char)(i * 13 + 1);
  void *din = ptx_dev(ctx, in, sizeof in), *dout = ptx_dev(ctx, NULL, sizeof out);
  assert_ok(ptx_launch_on(ctx, m, "fill", GCAP_DIM3(1, 1, 1), GCAP_DIM3(17, 1, 1), 0, (void *[]){&din, &dout}));
  ptx_get(ctx, out, dout, sizeof out);
  for (unsigned t = 0; t < 17; t++)
    for (unsigned k = 0; k < 16; k++) {
      assert_int_equal(out[t * 32 + k], k < t ? in[t * 16 + k] : 0);
      assert_int_equal(out[t * 32 + 16 + k], t & 1 ? 0 : in[t * 16 + k]);
    }
  gcap_context_destroy(ctx);
}

/* A cp.async whose source runs past its allocation: MEMORY reports it at issue. */
static const char oob_ptx[] = HEAD ".visible .entry oob(.param .u64 p_in)\n{\n"
                                   "  .reg .b32 %r<4>;\n  .reg .b64 %rd<4>;\n  .shared .align 16 .b8 s[64];\n"
                                   "  ld.param.u64 %rd1, [p_in];\n  mov.u32 %r1, s;\n"
                                   "  cp.async.cg.shared.global [%r1], [%rd1+64], 16;\n"
                                   "  cp.async.wait_all;\n  ret;\n}\n"
                                   ".visible .entry oob_shared(.param .u64 p_in)\n{\n"
                                   "  .reg .b32 %r<4>;\n  .reg .b64 %rd<4>;\n  .shared .align 16 .b8 s[64];\n"
                                   "  ld.param.u64 %rd1, [p_in];\n  mov.u32 %r1, s;\n"
                                   "  cp.async.cg.shared.global [%r1+64], [%rd1], 16;\n"
                                   "  cp.async.wait_all;\n  ret;\n}\n";

static void out_of_bounds_source_is_reported(void **state) {
  (void)state;
  gcap_context *ctx = ptx_sim_context(GCAP_SIM_CHECK_MEMORY);
  gcap_module *m = ptx_load_text(ctx, oob_ptx);
  void *din = ptx_dev(ctx, NULL, 64);
  assert_status(ptx_launch_on(ctx, m, "oob", GCAP_DIM3(1, 1, 1), GCAP_DIM3(1, 1, 1), 0, (void *[]){&din}),
                GCAP_ERROR_ILLEGAL_ADDRESS);
  const char *msg = gcap_last_error_message();
  assert_non_null(strstr(msg, "at PTX line 11 \"cp.async.cg.shared.global [%r1], [%rd1+64], 16\""));
  assert_non_null(strstr(msg, "read of 16 bytes at global address 0x"));
  assert_non_null(strstr(msg, "bytes after the end of the nearest allocation, 64 bytes at 0x"));
  gcap_context_destroy(ctx);
  /* the destination is the simulator's own memory: checked whatever the checks */
  ctx = ptx_sim_context(0);
  m = ptx_load_text(ctx, oob_ptx);
  din = ptx_dev(ctx, NULL, 64);
  assert_status(ptx_launch_on(ctx, m, "oob_shared", GCAP_DIM3(1, 1, 1), GCAP_DIM3(1, 1, 1), 0, (void *[]){&din}),
                GCAP_ERROR_ILLEGAL_ADDRESS);
  assert_non_null(strstr(gcap_last_error_message(), "write of 16 bytes at shared address 0x40, past the block's"));
  gcap_context_destroy(ctx);
}

/* ---------------------------------------------------------------- hand-written mbarrier */

/*
 * phases: lane 0 initialises the mbarrier for 3 arrivals (nvcc's fences around it run too);
 * lanes 0-2 arrive one by one (tokens and their pending counts), test_wait with each token and
 * with both parities after; then lane 0 arrives with a count of 3 (the next phase), and lane 1
 * drops out of a third. out[lane]: 8 words each.
 */
static const char phases_ptx[] =
    HEAD ".visible .entry phases(.param .u64 p_out)\n{\n"
         "  .reg .pred %p<8>;\n  .reg .b32 %r<16>;\n  .reg .b64 %rd<12>;\n  .shared .align 8 .b64 bar;\n"
         "  ld.param.u64 %rd1, [p_out];\n  mov.u32 %r1, %tid.x;\n  mov.u32 %r2, bar;\n"
         "  setp.eq.u32 %p1, %r1, 0;\n  setp.lt.u32 %p2, %r1, 3;\n"
         "  @%p1 mbarrier.init.shared.b64 [%r2], 3;\n"
         "  fence.mbarrier_init.release.cluster;\n  fence.proxy.async.shared::cta;\n  fence.proxy.async;\n"
         "  bar.sync 0;\n"
         "  mov.u64 %rd2, 0;\n"
         "  @%p1 mbarrier.arrive.shared.b64 %rd2, [%r2];\n"
         "  bar.warp.sync -1;\n"
         "  setp.eq.u32 %p3, %r1, 1;\n  @%p3 mbarrier.arrive.release.cta.shared::cta.b64 %rd2, [%r2];\n"
         "  mbarrier.test_wait.shared.b64 %p4, [%r2], %rd2;\n"
         "  selp.u32 %r3, 1, 0, %p4;\n"
         "  setp.eq.u32 %p3, %r1, 2;\n  @%p3 mbarrier.arrive.shared.b64 %rd2, [%r2];\n"
         "  mbarrier.pending_count.b64 %r4, %rd2;\n"
         "  mbarrier.test_wait.shared.b64 %p4, [%r2], %rd2;\n  selp.u32 %r5, 1, 0, %p4;\n"
         "  mbarrier.test_wait.parity.shared.b64 %p4, [%r2], 0;\n  selp.u32 %r6, 1, 0, %p4;\n"
         "  mbarrier.try_wait.parity.shared::cta.b64 %p4, [%r2], 1;\n  selp.u32 %r7, 1, 0, %p4;\n"
         "  bar.warp.sync -1;\n"
         "  @%p1 mbarrier.arrive.shared::cta.b64 %rd3, [%r2], 3;\n"
         "  bar.warp.sync -1;\n"
         "  mbarrier.try_wait.parity.acquire.cta.shared::cta.b64 %p4, [%r2], 1, 1000;\n  selp.u32 %r8, 1, 0, %p4;\n"
         "  setp.eq.u32 %p3, %r1, 1;\n  @%p3 mbarrier.arrive_drop.shared.b64 _, [%r2];\n"
         "  @%p1 mbarrier.arrive.shared.b64 %rd4, [%r2], 2;\n"
         "  bar.warp.sync -1;\n"
         "  mbarrier.test_wait.parity.shared.b64 %p4, [%r2], 0;\n  selp.u32 %r9, 1, 0, %p4;\n"
         "  @%p1 mbarrier.arrive.shared.b64 %rd4, [%r2], 2;\n"
         "  bar.warp.sync -1;\n"
         "  mbarrier.test_wait.parity.shared.b64 %p4, [%r2], 1;\n  selp.u32 %r10, 1, 0, %p4;\n"
         "  @%p1 mbarrier.inval.shared.b64 [%r2];\n"
         "  cvt.u32.u64 %r11, %rd2;\n  shr.u64 %rd5, %rd2, 63;\n  cvt.u32.u64 %r12, %rd5;\n"
         "  mul.wide.u32 %rd6, %r1, 32;\n  add.s64 %rd7, %rd1, %rd6;\n"
         "  st.global.v4.u32 [%rd7], {%r3, %r4, %r5, %r6};\n  st.global.v4.u32 [%rd7+16], {%r7, %r8, %r9, %r10};\n"
         "  ret;\n}\n";

/* Tokens, pending counts, test_wait with a token and with parities, arrive counts, arrive_drop. */
static void mbarrier_phases_and_parity(void **state) {
  (void)state;
  gcap_context *ctx = ptx_sim_context(PTX_CHECKS_ALL);
  gcap_module *m = ptx_load_text(ctx, phases_ptx);
  uint32_t out[4 * 8];
  void *dout = ptx_dev(ctx, NULL, sizeof out);
  assert_ok(ptx_launch_on(ctx, m, "phases", GCAP_DIM3(1, 1, 1), GCAP_DIM3(4, 1, 1), 0, (void *[]){&dout}));
  ptx_get(ctx, out, dout, sizeof out);
  for (unsigned l = 0; l < 4; l++) {
    const uint32_t *o = &out[l * 8];
    /* after lanes 0 and 1 arrived the phase is open: a token of it does not pass */
    assert_int_equal(o[0], 0);
    /* pending counts each arrival left (lane 3 never arrived: its token is 0) */
    assert_int_equal(o[1], l == 0 ? 2 : l == 1 ? 1 : 0);
    /* after the third arrival phase 0 is complete: a token of it passes, parity 0 passes, parity 1 not */
    assert_int_equal(o[2], 1); /* (lane 3 never arrived: its token, 0, names phase 0 too) */
    assert_int_equal(o[3], 1);
    assert_int_equal(o[4], 0);
    /* lane 0 arrived 3 times at once: phase 1 complete */
    assert_int_equal(o[5], 1);
    /* phase 2: lane 1 dropped out (2 expected from now on), lane 0 arrives 2: phase 2 complete, parity 0 passes */
    assert_int_equal(o[6], 1);
    /* phase 3 with 2 arrivals expected: complete */
    assert_int_equal(o[7], 1);
  }
  gcap_context_destroy(ctx);
}

/*
 * spin: warp 0 computes for a while, writes data and arrives (32 arrivals expected); warps 1-3
 * wait for the phase in a try_wait loop with nanosleep (immediate and register) and read it.
 */
static const char spin_ptx[] =
    HEAD ".visible .entry spin(.param .u64 p_out, .param .u32 p_n)\n{\n"
         "  .reg .pred %p<8>;\n  .reg .b32 %r<16>;\n  .reg .b64 %rd<12>;\n  .shared .align 8 .b64 bar;\n"
         "  .shared .align 4 .b32 data[32];\n"
         "  ld.param.u64 %rd1, [p_out];\n  ld.param.u32 %r9, [p_n];\n  mov.u32 %r1, %tid.x;\n  mov.u32 %r2, bar;\n"
         "  and.b32 %r3, %r1, 31;\n  shr.u32 %r4, %r1, 5;\n"
         "  setp.eq.u32 %p1, %r1, 0;\n  @%p1 mbarrier.init.shared.b64 [%r2], 32;\n  bar.sync 0;\n"
         "  setp.ne.u32 %p2, %r4, 0;\n  @%p2 bra WAIT;\n"
         "  mov.u32 %r5, 0;\n  mov.u32 %r6, 0;\n"
         "LOOP:\n  add.u32 %r6, %r6, %r5;\n  add.u32 %r5, %r5, 1;\n  setp.lt.u32 %p3, %r5, %r9;\n  @%p3 bra LOOP;\n"
         "  add.u32 %r7, %r6, %r3;\n  shl.b32 %r8, %r3, 2;\n  mov.u32 %r10, data;\n  add.u32 %r11, %r10, %r8;\n"
         "  st.shared.u32 [%r11], %r7;\n"
         "  mbarrier.arrive.shared.b64 %rd2, [%r2];\n  bra DONE;\n"
         "WAIT:\n  mbarrier.try_wait.parity.shared::cta.b64 %p4, [%r2], 0;\n  @%p4 bra READ;\n"
         "  nanosleep.u32 %r3;\n  nanosleep.u32 50;\n  bra WAIT;\n"
         "READ:\n  xor.b32 %r12, %r3, 5;\n  shl.b32 %r8, %r12, 2;\n  mov.u32 %r10, data;\n  add.u32 %r11, %r10, %r8;\n"
         "  ld.shared.u32 %r13, [%r11];\n  mul.wide.u32 %rd3, %r1, 4;\n  add.s64 %rd4, %rd1, %rd3;\n"
         "  st.global.u32 [%rd4], %r13;\n"
         "DONE:\n  ret;\n}\n"
         ".visible .entry stuck()\n{\n"
         "  .reg .pred %p<4>;\n  .reg .b32 %r<4>;\n  .reg .b64 %rd<4>;\n  .shared .align 8 .b64 bar;\n"
         "  mov.u32 %r1, %tid.x;\n  mov.u32 %r2, bar;\n  setp.eq.u32 %p1, %r1, 0;\n"
         "  @%p1 mbarrier.init.shared.b64 [%r2], 65;\n  bar.sync 0;\n"
         "  mbarrier.arrive.shared.b64 %rd1, [%r2];\n"
         "WAIT:\n  mbarrier.try_wait.shared.b64 %p2, [%r2], %rd1;\n  @!%p2 bra WAIT;\n  ret;\n}\n";

/* Waiting warps let the producer run; every waiter sees its data. */
static void try_wait_loops_end(void **state) {
  (void)state;
  gcap_context *ctx = ptx_sim_context(PTX_CHECKS_ALL);
  gcap_module *m = ptx_load_text(ctx, spin_ptx);
  uint32_t out[128], n = 5000, sum = n * (n - 1) / 2;
  void *dout = ptx_dev(ctx, NULL, sizeof out);
  assert_ok(ptx_launch_on(ctx, m, "spin", GCAP_DIM3(3, 1, 1), GCAP_DIM3(128, 1, 1), 0, (void *[]){&dout, &n}));
  ptx_get(ctx, out, dout, sizeof out);
  for (unsigned t = 32; t < 128; t++) assert_int_equal(out[t], sum + ((t % 32) ^ 5));
  /* a phase that can never complete (65 arrivals expected of 64 threads): reported, not hung */
  assert_status(ptx_launch_on(ctx, m, "stuck", GCAP_DIM3(1, 1, 1), GCAP_DIM3(64, 1, 1), 0, NULL),
                GCAP_ERROR_LAUNCH_FAILURE);
  assert_non_null(strstr(gcap_last_error_message(), "the block can never finish: its running warps spin"));
  assert_non_null(strstr(gcap_last_error_message(), "its warps are at: warps 0-1 at PTX line 68 \"@!%p2 bra WAIT\""));
  gcap_context_destroy(ctx);
}

/* SYNC: arrivals on an mbarrier nobody initialised, and more arrivals than a phase counts. */
static const char misuse_ptx[] =
    HEAD ".visible .entry uninit()\n{\n"
         "  .reg .b32 %r<4>;\n  .reg .b64 %rd<4>;\n  .shared .align 8 .b64 bar;\n"
         "  mov.u32 %r1, bar;\n  mbarrier.arrive.shared.b64 %rd1, [%r1];\n  ret;\n}\n"
         ".visible .entry too_many()\n{\n"
         "  .reg .pred %p<2>;\n  .reg .b32 %r<4>;\n  .reg .b64 %rd<4>;\n  .shared .align 8 .b64 bar;\n"
         "  mov.u32 %r1, bar;\n  mov.u32 %r2, %tid.x;\n  setp.eq.u32 %p1, %r2, 0;\n"
         "  @%p1 mbarrier.init.shared.b64 [%r1], 2;\n  bar.sync 0;\n"
         "  @%p1 mbarrier.expect_tx.relaxed.cta.shared::cta.b64 [%r1], 16;\n"
         "  mbarrier.arrive.shared.b64 %rd1, [%r1];\n  ret;\n}\n";

static void sync_check_reports_mbarrier_misuse(void **state) {
  (void)state;
  gcap_context *ctx = ptx_sim_context(GCAP_SIM_CHECK_SYNC);
  gcap_module *m = ptx_load_text(ctx, misuse_ptx);
  assert_status(ptx_launch_on(ctx, m, "uninit", GCAP_DIM3(1, 1, 1), GCAP_DIM3(32, 1, 1), 0, NULL),
                GCAP_ERROR_LAUNCH_FAILURE);
  assert_non_null(
      strstr(gcap_last_error_message(),
             "at PTX line 10 \"mbarrier.arrive.shared.b64 %rd1, [%r1]\": mbarrier.arrive on the mbarrier at "
             "shared address 0x0, which no mbarrier.init set up"));
  gcap_context_destroy(ctx); /* a kernel fault is sticky */
  ctx = ptx_sim_context(GCAP_SIM_CHECK_SYNC);
  m = ptx_load_text(ctx, misuse_ptx);
  assert_status(ptx_launch_on(ctx, m, "too_many", GCAP_DIM3(1, 1, 1), GCAP_DIM3(3, 1, 1), 0, NULL),
                GCAP_ERROR_LAUNCH_FAILURE);
  assert_non_null(strstr(gcap_last_error_message(), "thread (2,0,0) (warp 0 lane 2) at PTX line 25"));
  assert_non_null(strstr(gcap_last_error_message(),
                         "1 arrivals on the mbarrier at shared address 0x0, whose phase 0 waits for only 0 more (it "
                         "expects 2 a phase): more arrivals than its count"));
  gcap_context_destroy(ctx);
  /* without SYNC the extra arrival is dropped (undefined on a GPU) */
  ctx = ptx_sim_context(0);
  m = ptx_load_text(ctx, misuse_ptx);
  assert_ok(ptx_launch_on(ctx, m, "too_many", GCAP_DIM3(1, 1, 1), GCAP_DIM3(3, 1, 1), 0, NULL));
  gcap_context_destroy(ctx);
}

/* Malformed forms fail the load naming the instruction; valid forms the engine lacks are refused at launch. */
static void malformed_forms_are_refused(void **state) {
  (void)state;
  static const struct {
    const char *body, *message;
  } bad[] = {
      {"cp.async.ca.shared.global %r1, [%rd1], 4;", "cp.async takes [dst], [src], an immediate cp-size"},
      {"cp.async.ca.shared.global [%r1], [%rd1], 12;", "cp-size must be 4, 8 or 16, not 12"},
      {"cp.async.cg.shared.global [%r1], [%rd1], 8;", "cp.async.cg copies 16 bytes"},
      {"cp.async.ca.global.shared [%rd1], [%r1], 4;", "cp.async copies into .shared memory"},
      {"cp.async.wait_group %r1;", "cp.async.wait_group takes an immediate count of groups"},
      {"cp.async.commit_group 1;", "cp.async.commit_group takes no operands"},
      {"mbarrier.init.shared.b64 [%r1];", "mbarrier.init takes [mbarrier], count"},
      {"mbarrier.arrive.shared.b64 {%rd1, %rd2}, [%r1];", "mbarrier.arrive takes state, [mbarrier]"},
      {"mbarrier.test_wait.shared.b64 %rd1, [%r1], %rd2;", "a value where a predicate register belongs"},
      {"mbarrier.try_wait.parity.shared.b64 %p1, [%r1];", "takes a predicate, [mbarrier], the state or phase parity"},
      {"mbarrier.pending_count.b64 %r1, [%r1];", "mbarrier.pending_count takes count, state"},
  };
  gcap_context *ctx = ptx_sim_context(0);
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    char text[600];
    snprintf(text, sizeof text,
             HEAD ".visible .entry k(.param .u64 p)\n{\n  .reg .pred %%p<2>;\n  .reg .b32 %%r<4>;\n"
                  "  .reg .b64 %%rd<4>;\n  %s\n  ret;\n}\n",
             bad[i].body);
    gcap_module_desc d = {.image = text, .image_size = strlen(text) + 1};
    gcap_module *m = NULL;
    assert_status(gcap_module_load(ctx, &d, &m), GCAP_ERROR_INVALID_PTX);
    const char *msg = gcap_last_error_message();
    if (!strstr(msg, bad[i].message) || !strstr(msg, "PTX line 9, column 3")) fail_msg("%s: %s", bad[i].body, msg);
  }
  static const char *const later[] = {
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%r1], [%rd1, {%r2, %r3}], [%r2];",
      "cp.reduce.async.bulk.global.shared::cta.bulk_group.add.f32 [%rd1], [%r1], 16;",
      "mbarrier.arrive.shared.b32 %r2, [%r1];",
  };
  for (size_t i = 0; i < sizeof later / sizeof later[0]; i++) {
    char text[600];
    snprintf(text, sizeof text,
             HEAD ".visible .entry k(.param .u64 p)\n{\n  .reg .b32 %%r<4>;\n  .reg .b64 %%rd<4>;\n  %s\n  ret;\n}\n",
             later[i]);
    gcap_module *m = ptx_load_text(ctx, text);
    void *p = NULL;
    assert_status(ptx_launch_on(ctx, m, "k", GCAP_DIM3(1, 1, 1), GCAP_DIM3(1, 1, 1), 0, (void *[]){&p}),
                  GCAP_ERROR_NOT_SUPPORTED);
    if (!strstr(gcap_last_error_message(), "is not supported yet at PTX line 8"))
      fail_msg("%s", gcap_last_error_message());
  }
  gcap_context_destroy(ctx);
}

/* A block without shared memory may still commit and wait (nothing to copy); an mbarrier there is outside it. */
static const char bare_ptx[] = HEAD ".visible .entry bare()\n{\n  .reg .b32 %r<4>;\n  .reg .b64 %rd<4>;\n"
                                    "  cp.async.commit_group;\n  cp.async.wait_all;\n  ret;\n}\n"
                                    ".visible .entry bare_bar()\n{\n  .reg .b32 %r<4>;\n  .reg .b64 %rd<4>;\n"
                                    "  mov.u32 %r1, 0;\n  mbarrier.arrive.shared.b64 %rd1, [%r1];\n  ret;\n}\n";

static void blocks_without_shared_memory(void **state) {
  (void)state;
  gcap_context *ctx = ptx_sim_context(PTX_CHECKS_ALL);
  gcap_module *m = ptx_load_text(ctx, bare_ptx);
  assert_ok(ptx_launch_on(ctx, m, "bare", GCAP_DIM3(2, 1, 1), GCAP_DIM3(40, 1, 1), 0, NULL));
  assert_status(ptx_launch_on(ctx, m, "bare_bar", GCAP_DIM3(1, 1, 1), GCAP_DIM3(1, 1, 1), 0, NULL),
                GCAP_ERROR_ILLEGAL_ADDRESS);
  assert_non_null(strstr(gcap_last_error_message(),
                         "mbarrier object at shared address 0x0, past the block's 0 bytes of shared memory"));
  gcap_context_destroy(ctx);
}

/* A bulk copy from shared to global memory, its bulk group committed and waited for. */
static const char bulk_store_ptx[] =
    HEAD ".visible .entry bulk_store(.param .u64 p_out)\n{\n"
         "  .reg .pred %p<2>;\n  .reg .b32 %r<8>;\n  .reg .b64 %rd<4>;\n  .shared .align 16 .b8 s[256];\n"
         "  ld.param.u64 %rd1, [p_out];\n  mov.u32 %r1, %tid.x;\n  shl.b32 %r2, %r1, 2;\n  mov.u32 %r3, s;\n"
         "  add.u32 %r4, %r3, %r2;\n  mad.lo.u32 %r5, %r1, 3, 1;\n  st.shared.u32 [%r4], %r5;\n  bar.sync 0;\n"
         "  setp.eq.u32 %p1, %r1, 0;\n  @!%p1 bra DONE;\n"
         "  cp.async.bulk.global.shared::cta.bulk_group [%rd1], [%r3], 256;\n"
         "  cp.async.bulk.commit_group;\n  cp.async.bulk.wait_group.read 0;\n  cp.async.bulk.wait_group 0;\n"
         "DONE:\n  ret;\n}\n";

static void bulk_store_copies_to_global(void **state) {
  (void)state;
  gcap_context *ctx = ptx_sim_context(PTX_CHECKS_ALL);
  gcap_module *m = ptx_load_text(ctx, bulk_store_ptx);
  uint32_t out[64];
  void *dout = ptx_dev(ctx, NULL, sizeof out);
  assert_ok(ptx_launch_on(ctx, m, "bulk_store", GCAP_DIM3(1, 1, 1), GCAP_DIM3(64, 1, 1), 0, (void *[]){&dout}));
  ptx_get(ctx, out, dout, sizeof out);
  for (unsigned t = 0; t < 64; t++) assert_int_equal(out[t], 3 * t + 1);
  gcap_context_destroy(ctx);
  /* a destination past its allocation: MEMORY */
  ctx = ptx_sim_context(GCAP_SIM_CHECK_MEMORY);
  m = ptx_load_text(ctx, bulk_store_ptx);
  dout = ptx_dev(ctx, NULL, 128);
  assert_status(ptx_launch_on(ctx, m, "bulk_store", GCAP_DIM3(1, 1, 1), GCAP_DIM3(64, 1, 1), 0, (void *[]){&dout}),
                GCAP_ERROR_ILLEGAL_ADDRESS);
  assert_non_null(strstr(gcap_last_error_message(), "write of 16 bytes at global address 0x"));
  gcap_context_destroy(ctx);
}

/* ---------------------------------------------------------------- what nvcc emits */

static gcap_context *deferred_context(unsigned checks) {
  gcap_sim_options so;
  ptx_sim_options(&so, checks);
  so.exec = GCAP_SIM_EXEC_DEFERRED;
  so.threads = 3;
  return test_sim_context_create(&so);
}

static float pipe_ref(const float *in, int n, unsigned block, unsigned t, int stages) {
  float acc = 0;
  for (int st = 0; st < stages; st++) {
    int idx = (int)(block * (unsigned)stages * 128u) + st * 128 + (int)((t + 1) & 127);
    float v[4];
    for (int k = 0; k < 4; k++) v[k] = idx * 4 + k < n ? in[idx * 4 + k] : 0.0f;
    acc += (v[0] + 2 * v[1] + 3 * v[2] + 4 * v[3]) * (float)(st + 1);
  }
  return acc;
}

static void run_forms(const char *file, gcap_context *ctx) {
  gcap_module *m = ptx_load(ctx, file);
  uint64_t seed = 42;
  enum { STAGES = 5, BLOCKS = 3, N = BLOCKS * STAGES * 128 * 4 - 37 };
  /* pipe_sum */
  static float in[BLOCKS * STAGES * 128 * 4], out[BLOCKS * 128];
  for (size_t i = 0; i < sizeof in / sizeof in[0]; i++) in[i] = (float)(ptx_rand32(&seed) % 64);
  void *din = ptx_dev(ctx, in, sizeof in), *dout = ptx_dev(ctx, NULL, sizeof out);
  int n = N, stages = STAGES;
  assert_ok(ptx_launch_on(ctx, m, "pipe_sum", GCAP_DIM3(BLOCKS, 1, 1), GCAP_DIM3(128, 1, 1), 0,
                          (void *[]){&din, &dout, &n, &stages}));
  assert_ok(gcap_context_synchronize(ctx));
  ptx_get(ctx, out, dout, sizeof out);
  for (unsigned b = 0; b < BLOCKS; b++)
    for (unsigned t = 0; t < 128; t++) assert_true(out[b * 128 + t] == pipe_ref(in, N, b, t, STAGES));
  /* barrier_rounds: one block of 256 threads (its output has no block index), 4 rounds */
  static int iout[4 * 256];
  void *diout = ptx_dev(ctx, NULL, sizeof iout);
  int rounds = 4;
  assert_ok(ptx_launch_on(ctx, m, "barrier_rounds", GCAP_DIM3(1, 1, 1), GCAP_DIM3(256, 1, 1), 0,
                          (void *[]){&diout, &rounds}));
  assert_ok(gcap_context_synchronize(ctx));
  ptx_get(ctx, iout, diout, sizeof iout);
  for (int r = 0; r < 4; r++)
    for (int t = 0; t < 256; t++) assert_int_equal(iout[r * 256 + t], ((t + 37) % 256) * (r + 1) + 1);
  /* memcpy_barrier: 2 blocks of 256 */
  static float fin[512], fout[512];
  for (int i = 0; i < 512; i++) fin[i] = (float)i * 0.5f;
  void *dfin = ptx_dev(ctx, fin, sizeof fin), *dfout = ptx_dev(ctx, NULL, sizeof fout);
  assert_ok(
      ptx_launch_on(ctx, m, "memcpy_barrier", GCAP_DIM3(2, 1, 1), GCAP_DIM3(256, 1, 1), 0, (void *[]){&dfin, &dfout}));
  assert_ok(gcap_context_synchronize(ctx));
  ptx_get(ctx, fout, dfout, sizeof fout);
  for (int b = 0; b < 2; b++)
    for (int t = 0; t < 256; t++) assert_true(fout[b * 256 + t] == 2 * fin[b * 256 + (t + 5) % 256]);
  /* memcpy_aligned: 128 float4 */
  assert_ok(
      ptx_launch_on(ctx, m, "memcpy_aligned", GCAP_DIM3(1, 1, 1), GCAP_DIM3(128, 1, 1), 0, (void *[]){&dfin, &dfout}));
  assert_ok(gcap_context_synchronize(ctx));
  ptx_get(ctx, fout, dfout, sizeof fout);
  for (int t = 0; t < 128; t++)
    for (int k = 0; k < 4; k++) assert_true(fout[t * 4 + k] == fin[((t + 1) % 128) * 4 + 3 - k]);
  /* pipeline_stages */
  assert_ok(
      ptx_launch_on(ctx, m, "pipeline_stages", GCAP_DIM3(1, 1, 1), GCAP_DIM3(128, 1, 1), 0, (void *[]){&dfin, &dfout}));
  assert_ok(gcap_context_synchronize(ctx));
  ptx_get(ctx, fout, dfout, sizeof fout);
  for (int t = 0; t < 128; t++) assert_true(fout[t] == fin[t] + 2 * fin[128 + t]);
  /* cg_copy */
  assert_ok(ptx_launch_on(ctx, m, "cg_copy", GCAP_DIM3(1, 1, 1), GCAP_DIM3(256, 1, 1), 0, (void *[]){&dfin, &dfout}));
  assert_ok(gcap_context_synchronize(ctx));
  ptx_get(ctx, fout, dfout, sizeof fout);
  for (int t = 0; t < 256; t++) assert_true(fout[t] == fin[255 - t]);
  /* producer_consumer: one block (its output has no block index), 6 rounds */
  static int pin[6 * 32], pout[6 * 3 * 32];
  for (int i = 0; i < 6 * 32; i++) pin[i] = i * 3 + 1;
  void *dpin = ptx_dev(ctx, pin, sizeof pin), *dpout = ptx_dev(ctx, NULL, sizeof pout);
  rounds = 6;
  assert_ok(ptx_launch_on(ctx, m, "producer_consumer", GCAP_DIM3(1, 1, 1), GCAP_DIM3(128, 1, 1), 0,
                          (void *[]){&dpin, &dpout, &rounds}));
  assert_ok(gcap_context_synchronize(ctx));
  ptx_get(ctx, pout, dpout, sizeof pout);
  for (int r = 0; r < 6; r++)
    for (int w = 1; w <= 3; w++)
      for (int l = 0; l < 32; l++) assert_int_equal(pout[(r * 3 + w - 1) * 32 + l], pin[r * 32 + (l + w) % 32] * w);
}

static void nvcc_forms_sm80(void **state) {
  (void)state;
  gcap_context *ctx = ptx_sim_context(PTX_CHECKS_ALL);
  run_forms("async/async_forms.sm_80.ptx", ctx);
  gcap_context_destroy(ctx);
  ctx = ptx_sim_context(0);
  run_forms("async/async_forms.sm_80.ptx", ctx);
  gcap_context_destroy(ctx);
}

static void nvcc_forms_sm90(void **state) {
  (void)state;
  gcap_context *ctx = ptx_sim_context(PTX_CHECKS_ALL);
  run_forms("async/async_forms.sm_90.ptx", ctx);
  gcap_context_destroy(ctx);
  ctx = ptx_sim_context(0);
  run_forms("async/async_forms.sm_90.ptx", ctx);
  gcap_context_destroy(ctx);
}

/* DEFERRED, blocks spread over worker threads, with every check: each worker keeps its own copies. */
static void nvcc_forms_deferred_on_workers(void **state) {
  (void)state;
  gcap_context *ctx = deferred_context(PTX_CHECKS_ALL);
  run_forms("async/async_forms.sm_80.ptx", ctx);
  run_forms("async/async_forms.sm_90.ptx", ctx);
  gcap_context_destroy(ctx);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(early_read_sees_stale_data),
      cmocka_unit_test(early_read_is_a_race),
      cmocka_unit_test(long_race_reports_are_whole),
      cmocka_unit_test(wait_and_barrier_publish_the_copy),
      cmocka_unit_test(wait_group_counts_groups),
      cmocka_unit_test(src_size_zero_fills),
      cmocka_unit_test(out_of_bounds_source_is_reported),
      cmocka_unit_test(mbarrier_phases_and_parity),
      cmocka_unit_test(try_wait_loops_end),
      cmocka_unit_test(sync_check_reports_mbarrier_misuse),
      cmocka_unit_test(malformed_forms_are_refused),
      cmocka_unit_test(blocks_without_shared_memory),
      cmocka_unit_test(bulk_store_copies_to_global),
      cmocka_unit_test(nvcc_forms_sm80),
      cmocka_unit_test(nvcc_forms_sm90),
      cmocka_unit_test(nvcc_forms_deferred_on_workers),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
