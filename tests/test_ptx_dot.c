/*
 * Integer dot products on the simulator's PTX engine: dp4a and dp2a.lo/.hi in every signedness
 * of their two sources, bit for bit against a reference that reads the packed parts through
 * int8_t/int16_t views, over special words and random ones; the sum wraps in 32 bits.
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

/* One kernel per form: out[i * 10 + f] for the ten forms, from a[i], b[i], c[i]. */
static const char dot_ptx[] =
    ".version 7.8\n.target sm_80\n.address_size 64\n"
    ".visible .entry dots(.param .u64 p_a, .param .u64 p_b, .param .u64 p_c, .param .u64 p_out)\n{\n"
    "  .reg .b32 %r<24>;\n  .reg .b64 %rd<12>;\n"
    "  ld.param.u64 %rd1, [p_a];\n  ld.param.u64 %rd2, [p_b];\n  ld.param.u64 %rd3, [p_c];\n"
    "  ld.param.u64 %rd4, [p_out];\n"
    "  mov.u32 %r1, %ctaid.x;\n  mov.u32 %r2, %ntid.x;\n  mov.u32 %r3, %tid.x;\n  mad.lo.s32 %r4, %r1, %r2, %r3;\n"
    "  mul.wide.u32 %rd5, %r4, 4;\n"
    "  add.s64 %rd6, %rd1, %rd5;\n  ld.global.u32 %r5, [%rd6];\n"
    "  add.s64 %rd7, %rd2, %rd5;\n  ld.global.u32 %r6, [%rd7];\n"
    "  add.s64 %rd8, %rd3, %rd5;\n  ld.global.u32 %r7, [%rd8];\n"
    "  mul.wide.u32 %rd9, %r4, 40;\n  add.s64 %rd10, %rd4, %rd9;\n"
    "  dp4a.u32.u32 %r10, %r5, %r6, %r7;\n  st.global.u32 [%rd10], %r10;\n"
    "  dp4a.u32.s32 %r11, %r5, %r6, %r7;\n  st.global.u32 [%rd10+4], %r11;\n"
    "  dp4a.s32.u32 %r12, %r5, %r6, %r7;\n  st.global.u32 [%rd10+8], %r12;\n"
    "  dp4a.s32.s32 %r13, %r5, %r6, %r7;\n  st.global.u32 [%rd10+12], %r13;\n"
    "  dp2a.lo.u32.u32 %r14, %r5, %r6, %r7;\n  st.global.u32 [%rd10+16], %r14;\n"
    "  dp2a.hi.u32.u32 %r15, %r5, %r6, %r7;\n  st.global.u32 [%rd10+20], %r15;\n"
    "  dp2a.lo.s32.s32 %r16, %r5, %r6, %r7;\n  st.global.u32 [%rd10+24], %r16;\n"
    "  dp2a.hi.s32.u32 %r17, %r5, %r6, %r7;\n  st.global.u32 [%rd10+28], %r17;\n"
    "  dp2a.lo.u32.s32 %r18, %r5, %r6, %r7;\n  st.global.u32 [%rd10+32], %r18;\n"
    "  dp4a.s32.s32 %r19, %r5, -16843010, 7;\n  st.global.u32 [%rd10+36], %r19;\n"
    "  ret;\n}\n";

/* The packed parts, read through views of the other signedness where the form says signed. */
static int64_t byte_of(uint32_t v, unsigned i, int sgn) {
  uint8_t u[4];
  memcpy(u, &v, 4);
  int8_t s[4];
  memcpy(s, &v, 4);
  return sgn ? s[i] : u[i];
}
static int64_t half_of(uint32_t v, unsigned i, int sgn) {
  uint16_t u[2];
  memcpy(u, &v, 4);
  int16_t s[2];
  memcpy(s, &v, 4);
  return sgn ? s[i] : u[i];
}

static uint32_t ref_dp4a(uint32_t a, uint32_t b, uint32_t c, int sa, int sb) {
  int64_t sum = (int32_t)c;
  for (unsigned i = 0; i < 4; i++) sum += byte_of(a, i, sa) * byte_of(b, i, sb);
  return (uint32_t)(uint64_t)sum;
}
static uint32_t ref_dp2a(uint32_t a, uint32_t b, uint32_t c, int sa, int sb, int hi) {
  int64_t sum = (int32_t)c;
  for (unsigned i = 0; i < 2; i++) sum += half_of(a, i, sa) * byte_of(b, (hi ? 2u : 0u) + i, sb);
  return (uint32_t)(uint64_t)sum;
}

static void dot_products_match_the_reference(void **state) {
  (void)state;
  gcap_context *ctx = ptx_sim_context(PTX_CHECKS_ALL);
  gcap_module *m = ptx_load_text(ctx, dot_ptx);
  enum { N = 1024 };
  static uint32_t a[N], b[N], c[N], out[N * 10];
  static const uint32_t specials[] = {0,           1,           0xffffffffu, 0x80808080u,
                                      0x7f7f7f7fu, 0x80007fffu, 0x01ff80feu, 0x7fffffffu};
  const size_t k = sizeof specials / sizeof specials[0];
  uint64_t seed = 0xd07;
  for (size_t i = 0; i < N; i++) {
    a[i] = i < k * k ? specials[i % k] : ptx_rand32(&seed);
    b[i] = i < k * k ? specials[i / k] : ptx_rand32(&seed);
    c[i] = i < k * k ? specials[(i * 7) % k] : ptx_rand32(&seed);
  }
  void *da = ptx_dev(ctx, a, sizeof a), *db = ptx_dev(ctx, b, sizeof b), *dc = ptx_dev(ctx, c, sizeof c);
  void *dout = ptx_dev(ctx, NULL, sizeof out);
  assert_int_equal(ptx_launch_on(ctx, m, "dots", GCAP_DIM3(N / 128, 1, 1), GCAP_DIM3(128, 1, 1), 0,
                                 (void *[]){&da, &db, &dc, &dout}),
                   GCAP_SUCCESS);
  assert_int_equal(gcap_context_synchronize(ctx), GCAP_SUCCESS);
  ptx_get(ctx, out, dout, sizeof out);
  for (size_t i = 0; i < N; i++) {
    uint32_t want[10] = {ref_dp4a(a[i], b[i], c[i], 0, 0),    ref_dp4a(a[i], b[i], c[i], 0, 1),
                         ref_dp4a(a[i], b[i], c[i], 1, 0),    ref_dp4a(a[i], b[i], c[i], 1, 1),
                         ref_dp2a(a[i], b[i], c[i], 0, 0, 0), ref_dp2a(a[i], b[i], c[i], 0, 0, 1),
                         ref_dp2a(a[i], b[i], c[i], 1, 1, 0), ref_dp2a(a[i], b[i], c[i], 1, 0, 1),
                         ref_dp2a(a[i], b[i], c[i], 0, 1, 0), ref_dp4a(a[i], 0xfefefefeu, 7, 1, 1)};
    for (unsigned f = 0; f < 10; f++) {
      if (out[i * 10 + f] == want[f]) continue;
      char msg[160];
      snprintf(msg, sizeof msg, "form %u of a=%08x b=%08x c=%08x: got %08x, want %08x", f, a[i], b[i], c[i],
               out[i * 10 + f], want[f]);
      fail_msg("%s", msg);
    }
  }
  gcap_context_destroy(ctx);
}

static void bad_forms_are_refused(void **state) {
  (void)state;
  gcap_context *ctx = ptx_sim_context(0);
  static const char bad[] = ".version 7.8\n.target sm_80\n.address_size 64\n"
                            ".visible .entry k()\n{\n  .reg .b32 %r<4>;\n"
                            "  dp4a.u16.u32 %r1, %r2, %r3, %r2;\n  ret;\n}\n";
  gcap_module_desc d = {.image = bad, .image_size = sizeof bad};
  gcap_module *m = NULL;
  assert_int_equal(gcap_module_load(ctx, &d, &m), GCAP_ERROR_INVALID_PTX);
  assert_non_null(strstr(gcap_last_error_message(), "dp4a takes .u32 or .s32 source types"));
  gcap_context_destroy(ctx);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(dot_products_match_the_reference),
      cmocka_unit_test(bad_forms_are_refused),
  };
  return cmocka_run_group_tests_name("ptx_dot", tests, NULL, NULL);
}
