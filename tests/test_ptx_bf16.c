/*
 * bfloat16 and half conversions on the simulator's PTX engine: cvt.{rn,rz,rm,rp}.bf16.f32 and
 * .f64, back to f32 exactly, .relu, and the packed cvt.rn.{bf16x2,f16x2}.f32 d, a, b (a's value
 * in the upper half), bit for bit against a reference written here on the f32 bit pattern.
 */
#define _POSIX_C_SOURCE 200809L

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "common.h"
#include "ptx_util.h"

#define CHECKS_ALL (GCAP_SIM_CHECK_MEMORY | GCAP_SIM_CHECK_SYNC | GCAP_SIM_CHECK_SHARED_RACES | GCAP_SIM_CHECK_INIT)

/* to_bf16: for in[i], 24 bytes at out + 24 * i: the bf16 rounded rn, rz, rm, rp; .relu rn; the
 * f16 (rn); then the packed bf16x2 of (in[i], 1.5) and f16x2 of (3.0, in[i]); back[i] the f32 of
 * the rn result. */
static const char bf16_ptx[] =
    ".version 7.8\n.target sm_80\n.address_size 64\n"
    ".visible .entry to_bf16(.param .u64 p_in, .param .u64 p_out, .param .u64 p_back, .param .u32 p_n)\n{\n"
    "  .reg .pred %p<2>;\n  .reg .b16 %h<8>;\n  .reg .b32 %r<8>;\n  .reg .f32 %f<4>;\n  .reg .b64 %rd<12>;\n"
    "  ld.param.u64 %rd1, [p_in];\n  ld.param.u64 %rd2, [p_out];\n  ld.param.u64 %rd3, [p_back];\n"
    "  ld.param.u32 %r1, [p_n];\n"
    "  mov.u32 %r2, %ctaid.x;\n  mov.u32 %r3, %ntid.x;\n  mov.u32 %r4, %tid.x;\n  mad.lo.s32 %r5, %r2, %r3, %r4;\n"
    "  setp.ge.u32 %p1, %r5, %r1;\n  @%p1 bra DONE;\n"
    "  mul.wide.u32 %rd4, %r5, 4;\n  add.s64 %rd5, %rd1, %rd4;\n  ld.global.f32 %f1, [%rd5];\n"
    "  mul.wide.u32 %rd6, %r5, 24;\n  add.s64 %rd7, %rd2, %rd6;\n"
    "  cvt.rn.bf16.f32 %h1, %f1;\n  st.global.u16 [%rd7], %h1;\n"
    "  cvt.rz.bf16.f32 %h2, %f1;\n  st.global.u16 [%rd7+2], %h2;\n"
    "  cvt.rm.bf16.f32 %h3, %f1;\n  st.global.u16 [%rd7+4], %h3;\n"
    "  cvt.rp.bf16.f32 %h4, %f1;\n  st.global.u16 [%rd7+6], %h4;\n"
    "  cvt.rn.relu.bf16.f32 %h5, %f1;\n  st.global.u16 [%rd7+8], %h5;\n"
    "  cvt.rn.f16.f32 %h6, %f1;\n  st.global.u16 [%rd7+10], %h6;\n"
    "  cvt.rn.bf16x2.f32 %r6, %f1, 0f3FC00000;\n  st.global.u32 [%rd7+12], %r6;\n"
    "  cvt.rn.f16x2.f32 %r7, 0f40400000, %f1;\n  st.global.u32 [%rd7+16], %r7;\n"
    "  cvt.f32.bf16 %f2, %h1;\n  add.s64 %rd8, %rd3, %rd4;\n  st.global.f32 [%rd8], %f2;\n"
    "DONE:\n  ret;\n}\n"
    ".visible .entry f64_to_bf16(.param .u64 p_in, .param .u64 p_out)\n{\n"
    "  .reg .b16 %h<2>;\n  .reg .f64 %d<2>;\n  .reg .b32 %r<2>;\n  .reg .b64 %rd<6>;\n"
    "  ld.param.u64 %rd1, [p_in];\n  ld.param.u64 %rd2, [p_out];\n  mov.u32 %r1, %tid.x;\n"
    "  mul.wide.u32 %rd3, %r1, 8;\n  add.s64 %rd4, %rd1, %rd3;\n  ld.global.f64 %d1, [%rd4];\n"
    "  cvt.rn.bf16.f64 %h1, %d1;\n  mul.wide.u32 %rd3, %r1, 2;\n  add.s64 %rd5, %rd2, %rd3;\n"
    "  st.global.u16 [%rd5], %h1;\n  ret;\n}\n";

enum { RN, RZ, RM, RP };

/* The reference: bf16 is the upper half of an f32, rounded on the lower half's bits. */
static uint16_t ref_bf16(uint32_t u, int mode) {
  if ((u & 0x7fffffffu) > 0x7f800000u) return 0x7fff;
  uint32_t sign = u & 0x80000000u, low = u & 0xffffu, up = u >> 16;
  switch (mode) {
  case RN: return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1)) >> 16);
  case RZ: return (uint16_t)up;
  case RM: return (uint16_t)(low && sign ? up + 1 : up);
  default: return (uint16_t)(low && !sign ? up + 1 : up);
  }
}

static void conversions_match_the_reference(void **state) {
  (void)state;
  gcap_context *ctx = ptx_sim_context(CHECKS_ALL);
  gcap_module *m = ptx_load_text(ctx, bf16_ptx);
  enum { N = 4096 };
  static uint32_t in[N];
  static const uint32_t fixed[] = {
      0x3f800000u, 0x3f808000u, 0x3f818000u, 0x3f808001u, 0xbf808000u, 0xbf818001u, 0x00000001u, 0x80000001u,
      0x0001ffffu, 0x007fffffu, 0x7f7fffffu, 0xff7fffffu, 0x7f7f8000u, 0x7f800000u, 0xff800000u, 0x7fc00000u,
      0xffc12345u, 0x00000000u, 0x80000000u, 0x40490fdbu, 0xc2f6e979u, 0x3dcccccdu,
  };
  size_t nf = sizeof fixed / sizeof fixed[0];
  memcpy(in, fixed, sizeof fixed);
  uint64_t seed = 0x5eed;
  for (size_t i = nf; i < N; i++) in[i] = ptx_rand32(&seed);
  void *din = ptx_dev(ctx, in, sizeof in), *dout = ptx_dev(ctx, NULL, (size_t)N * 24),
       *dback = ptx_dev(ctx, NULL, (size_t)N * 4);
  uint32_t n = N;
  assert_ok(ptx_launch_on(ctx, m, "to_bf16", ptx_grid_for(N, 128), GCAP_DIM3(128, 1, 1), 0,
                          (void *[]){&din, &dout, &dback, &n}));
  static uint16_t out[N * 12];
  static uint32_t back[N];
  ptx_get(ctx, out, dout, sizeof out);
  ptx_get(ctx, back, dback, sizeof back);
  for (size_t i = 0; i < N; i++) {
    const uint16_t *o = &out[12 * i];
    uint32_t u = in[i];
    for (int mode = RN; mode <= RP; mode++)
      if (o[mode] != ref_bf16(u, mode))
        fail_msg("in 0x%08x, mode %d: 0x%04x, want 0x%04x", (unsigned)u, mode, (unsigned)o[mode],
                 (unsigned)ref_bf16(u, mode));
    uint16_t relu = (u & 0x7fffffffu) > 0x7f800000u ? 0x7fff : (u >> 31) ? 0 : ref_bf16(u, RN);
    assert_int_equal(o[4], relu);
    assert_int_equal(o[6], 0x3fc0u);         /* bf16x2: b (1.5) in the lower half */
    assert_int_equal(o[7], ref_bf16(u, RN)); /* a in the upper */
    assert_int_equal(o[8], o[5]);            /* f16x2: b (in[i]) as cvt.rn.f16.f32 makes it */
    assert_int_equal(o[9], 0x4200u);         /* a (3.0) */
    if (o[0] != 0x7fff) assert_int_equal(back[i], (uint32_t)o[0] << 16); /* bf16 -> f32 is exact */
  }
  gcap_context_destroy(ctx);
}

/* f64 sources round once, straight to bf16 (not through f32). */
static void f64_rounds_once(void **state) {
  (void)state;
  gcap_context *ctx = ptx_sim_context(CHECKS_ALL);
  gcap_module *m = ptx_load_text(ctx, bf16_ptx);
  /* 1 + 2^-8 + 2^-40: just above the tie between 1.0 and 1 + 2^-7; through f32 it would be the tie
   * (1 + 2^-8 exactly) and round to even, 1.0. */
  double in[4] = {1.0 + ldexp(1.0, -8) + ldexp(1.0, -40), 1.0 + ldexp(1.0, -8), -3.0e38 * 1e10, 1e-300};
  void *din = ptx_dev(ctx, in, sizeof in), *dout = ptx_dev(ctx, NULL, 8);
  assert_ok(ptx_launch_on(ctx, m, "f64_to_bf16", GCAP_DIM3(1, 1, 1), GCAP_DIM3(4, 1, 1), 0, (void *[]){&din, &dout}));
  uint16_t out[4];
  ptx_get(ctx, out, dout, sizeof out);
  assert_int_equal(out[0], 0x3f81);
  assert_int_equal(out[1], 0x3f80);
  assert_int_equal(out[2], 0xff80);
  assert_int_equal(out[3], 0x0000);
  gcap_context_destroy(ctx);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(conversions_match_the_reference),
      cmocka_unit_test(f64_rounds_once),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
