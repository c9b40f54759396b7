/*
 * Register widths on the simulator's PTX engine: a register holds only its declared bits. A
 * narrowing conversion (cvt to an 8-, 16- or 32-bit type) keeps the destination type's bits,
 * extended as the type says; a later widening use of the register (cvt to 64 bits, mul.wide,
 * a 32-bit register as the base of an address) sees only those bits, so an index narrowed from
 * a 64-bit value stays in bounds.
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

enum { OUT_WORDS = 16 };

/*
 * Each kernel narrows p_v (a 64-bit value whose upper bits are set) and writes what the widening
 * uses see into out[0..OUT_WORDS) (64-bit words). `narrow` (unsigned) then stores through indices
 * built from the narrowed register: into out (as 32-bit words from byte 128) and into a 64-byte
 * shared array.
 */
static const char regs_ptx[] =
    ".version 7.0\n.target sm_70\n.address_size 64\n"
    ".visible .entry narrow(.param .u64 p_v, .param .u64 p_out)\n{\n"
    "  .reg .b16 %rs<8>;\n  .reg .b32 %r<16>;\n  .reg .b64 %rd<24>;\n"
    "  .shared .align 4 .b8 sm[64];\n"
    "  ld.param.u64 %rd1, [p_v];\n  ld.param.u64 %rd9, [p_out];\n"
    /* u32: widened by cvt, by mul.wide, and through address arithmetic */
    "  cvt.u32.u64 %r1, %rd1;\n"
    "  cvt.u64.u32 %rd2, %r1;\n  st.global.u64 [%rd9], %rd2;\n"
    "  mul.wide.u32 %rd3, %r1, 4;\n  st.global.u64 [%rd9+8], %rd3;\n"
    "  add.u64 %rd4, %rd9, %rd3;\n  st.global.u32 [%rd4+128], 101;\n"
    "  shl.b64 %rd5, %rd2, 2;\n  add.u64 %rd6, %rd9, %rd5;\n  st.global.u32 [%rd6+132], 102;\n"
    /* a 32-bit register as a shared address: sm + 4 * %r1 (then read back) */
    "  mov.u32 %r2, sm;\n  shl.b32 %r3, %r1, 2;\n  add.s32 %r4, %r2, %r3;\n"
    "  st.shared.u32 [%r4], 103;\n  ld.shared.u32 %r5, [%r4];\n  st.global.u32 [%rd9+252], %r5;\n"
    /* 32-bit arithmetic that carries past bit 31: 5 + 0xfffffffe is 3 in a .b32, a shared index */
    "  add.u32 %r12, %r1, 4294967294;\n  shl.b32 %r13, %r12, 2;\n  add.s32 %r14, %r2, %r13;\n"
    "  st.shared.u32 [%r14], 104;\n  ld.shared.u32 %r15, [%r14];\n  st.global.u32 [%rd9+248], %r15;\n"
    /* u16 and u8 into 16-bit registers, u8 into a 32-bit register */
    "  cvt.u16.u64 %rs1, %rd1;\n  cvt.u64.u16 %rd7, %rs1;\n  st.global.u64 [%rd9+16], %rd7;\n"
    "  cvt.u8.u64 %rs2, %rd1;\n  cvt.u64.u16 %rd8, %rs2;\n  st.global.u64 [%rd9+24], %rd8;\n"
    "  cvt.u8.u64 %r6, %rd1;\n  cvt.u64.u32 %rd10, %r6;\n  st.global.u64 [%rd9+32], %rd10;\n"
    "  mul.wide.u16 %r7, %rs2, 4;\n  cvt.u64.u32 %rd11, %r7;\n  st.global.u64 [%rd9+40], %rd11;\n"
    "  ret;\n}\n"
    /* signed: s32, s16 and s8 (into a 16- and a 32-bit register), widened to s64 */
    ".visible .entry narrow_signed(.param .u64 p_v, .param .u64 p_out)\n{\n"
    "  .reg .b16 %rs<8>;\n  .reg .b32 %r<16>;\n  .reg .b64 %rd<24>;\n"
    "  ld.param.u64 %rd1, [p_v];\n  ld.param.u64 %rd9, [p_out];\n"
    "  cvt.s32.s64 %r8, %rd1;\n  cvt.s64.s32 %rd12, %r8;\n  st.global.u64 [%rd9+48], %rd12;\n"
    "  mul.wide.s32 %rd13, %r8, 4;\n  st.global.u64 [%rd9+56], %rd13;\n"
    "  cvt.s16.s64 %rs3, %rd1;\n  cvt.s64.s16 %rd14, %rs3;\n  st.global.u64 [%rd9+64], %rd14;\n"
    "  cvt.s8.s64 %rs4, %rd1;\n  cvt.s64.s16 %rd15, %rs4;\n  st.global.u64 [%rd9+72], %rd15;\n"
    "  cvt.s8.s64 %r9, %rd1;\n  cvt.s64.s32 %rd16, %r9;\n  st.global.u64 [%rd9+80], %rd16;\n"
    "  cvt.u64.u32 %rd17, %r9;\n  st.global.u64 [%rd9+88], %rd17;\n"
    /* unsigned u8 from a value whose next byte is set: into a 16- and a 32-bit register */
    "  cvt.u8.u64 %rs5, %rd1;\n  cvt.u64.u16 %rd18, %rs5;\n  st.global.u64 [%rd9+96], %rd18;\n"
    "  cvt.u8.u64 %r10, %rd1;\n  cvt.u64.u32 %rd19, %r10;\n  st.global.u64 [%rd9+104], %rd19;\n"
    "  ret;\n}\n";

/* Runs `kernel` on v in one thread; out receives the 64-bit words and the 32-bit words after them. */
static void run_narrow(const char *kernel, unsigned checks, uint64_t v, uint64_t out[OUT_WORDS],
                       uint32_t words[OUT_WORDS * 2]) {
  gcap_context *ctx = ptx_sim_context(checks);
  gcap_module_desc d = {.image = regs_ptx, .image_size = sizeof regs_ptx};
  gcap_module *m = NULL;
  assert_ok(gcap_module_load(ctx, &d, &m));
  size_t bytes = OUT_WORDS * 8 * 2;
  void *dout = test_dev_alloc(ctx, bytes), *zero = calloc(1, bytes);
  assert_non_null(zero);
  assert_ok(gcap_memcpy(ctx, dout, zero, bytes, GCAP_MEMCPY_HOST_TO_DEVICE));
  free(zero);
  gcap_stream *s = test_stream_create(ctx);
  assert_ok(gcap_launch_kernel(s, test_kernel_of(m, kernel), DIM1(1), DIM1(1), 0, ARGS(&v, &dout)));
  assert_ok(gcap_stream_synchronize(s));
  assert_ok(gcap_memcpy(ctx, out, dout, OUT_WORDS * 8, GCAP_MEMCPY_DEVICE_TO_HOST));
  assert_ok(gcap_memcpy(ctx, words, (char *)dout + OUT_WORDS * 8, OUT_WORDS * 8, GCAP_MEMCPY_DEVICE_TO_HOST));
  gcap_context_destroy(ctx);
}

/* 0x1_0000_0005: every narrowing keeps 5; an index of 5 stays inside out and the shared array. */
static void check_unsigned(unsigned checks) {
  uint64_t out[OUT_WORDS];
  uint32_t words[OUT_WORDS * 2];
  run_narrow("narrow", checks, 0x100000005ull, out, words);
  assert_int_equal(out[0], 5);      /* cvt.u32.u64 then cvt.u64.u32 */
  assert_int_equal(out[1], 20);     /* mul.wide.u32 by 4 */
  assert_int_equal(out[2], 5);      /* cvt.u16.u64 then cvt.u64.u16 */
  assert_int_equal(out[3], 5);      /* cvt.u8.u64 into a .b16 */
  assert_int_equal(out[4], 5);      /* cvt.u8.u64 into a .b32 */
  assert_int_equal(out[5], 20);     /* mul.wide.u16 of the u8 value */
  assert_int_equal(words[5], 101);  /* out + mul.wide index */
  assert_int_equal(words[6], 102);  /* out + (cvt index << 2) */
  assert_int_equal(words[31], 103); /* shared sm[5] through a 32-bit address */
  assert_int_equal(words[30], 104); /* shared sm[3] through a 32-bit address past a carry */
}

/* The low byte 0xfb (-5 as s8), bits above it set and cleared so that each width sees -5 or 251. */
static void check_signed(unsigned checks) {
  uint64_t out[OUT_WORDS];
  uint32_t words[OUT_WORDS * 2];
  run_narrow("narrow_signed", checks, 0x1fffffffbull, out, words); /* s32: -5; s16: -5; s8: -5 */
  assert_int_equal((int64_t)out[6], -5);
  assert_int_equal((int64_t)out[7], -20);
  assert_int_equal((int64_t)out[8], -5);
  assert_int_equal((int64_t)out[9], -5);
  assert_int_equal((int64_t)out[10], -5);
  assert_int_equal(out[11], 0xfffffffbull);                        /* a .b32 holding -5 widened as unsigned */
  run_narrow("narrow_signed", checks, 0x10000fffbull, out, words); /* s32: 65531; s16: -5; s8: -5 */
  assert_int_equal((int64_t)out[6], 65531);
  assert_int_equal((int64_t)out[8], -5);
  assert_int_equal((int64_t)out[9], -5);
  run_narrow("narrow_signed", checks, 0x1000000fbull, out, words); /* s32: 251; s16: 251; s8: -5 */
  assert_int_equal((int64_t)out[6], 251);
  assert_int_equal((int64_t)out[8], 251);
  assert_int_equal((int64_t)out[9], -5);                           /* cvt.s8 into a .b16, widened from s16 */
  assert_int_equal((int64_t)out[10], -5);                          /* cvt.s8 into a .b32, widened from s32 */
  run_narrow("narrow_signed", checks, 0x1ffffff05ull, out, words); /* s8: 5, whatever lies above */
  assert_int_equal((int64_t)out[9], 5);
  assert_int_equal((int64_t)out[10], 5);
  assert_int_equal(out[12], 5); /* cvt.u8.u64 into a .b16, widened from u16 */
  assert_int_equal(out[13], 5); /* cvt.u8.u64 into a .b32, widened from u32 */
}

static void test_unsigned_narrowing(void **state) {
  (void)state;
  check_unsigned(0);
  check_unsigned(CHECKS_ALL);
}

static void test_signed_narrowing(void **state) {
  (void)state;
  check_signed(0);
  check_signed(CHECKS_ALL);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_unsigned_narrowing),
      cmocka_unit_test(test_signed_narrowing),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
