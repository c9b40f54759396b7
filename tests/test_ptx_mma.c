/*
 * Tensor-core instructions on the simulator's PTX engine: ldmatrix, movmatrix, mma.sync and the
 * wmma family, with the fragment layouts of the PTX ISA, checked bit for bit against a reference
 * GEMM written here on inputs whose products and sums are exact.
 */
#define _POSIX_C_SOURCE 200809L

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "ptx_util.h"

#define CHECKS_ALL (GCAP_SIM_CHECK_MEMORY | GCAP_SIM_CHECK_SYNC | GCAP_SIM_CHECK_SHARED_RACES | GCAP_SIM_CHECK_INIT)
#define HEAD ".version 8.0\n.target sm_80\n.address_size 64\n"

/* Loading text that must fail with INVALID_PTX and a message holding `needle`. */
static void load_fails(gcap_context *ctx, const char *text, const char *needle) {
  gcap_module *m = NULL;
  gcap_module_desc d = {.image = text, .image_size = strlen(text) + 1};
  assert_int_equal(gcap_module_load(ctx, &d, &m), GCAP_ERROR_INVALID_PTX);
  test_assert_message_contains(needle);
  assert_null(m);
}

/* Launches kernel `name` of m on one warp and waits: it must succeed (else the message says why). */
static void run_warp(gcap_context *ctx, gcap_module *m, const char *name, void **args) {
  gcap_status st = ptx_launch_on(ctx, m, name, GCAP_DIM3(1, 1, 1), GCAP_DIM3(32, 1, 1), 0, args);
  if (st == GCAP_SUCCESS) st = gcap_context_synchronize(ctx);
  if (st != GCAP_SUCCESS) fail_msg("%s: status %d: %s", name, (int)st, gcap_last_error_message());
}

/* A vector operand holds up to 8 elements (a wmma fragment); ld, st and mov still take at most 4. */
static void vector_operands_hold_eight(void **state) {
  (void)state;
  gcap_context *ctx = ptx_sim_context(CHECKS_ALL);
  load_fails(ctx,
             HEAD ".visible .entry k(.param .u64 p)\n{\n  .reg .b32 %r<12>;\n  .reg .b64 %rd<2>;\n"
                  "  ld.param.u64 %rd1, [p];\n"
                  "  ld.global.v4.u32 {%r1, %r2, %r3, %r4, %r5, %r6, %r7, %r8, %r9}, [%rd1];\n  ret;\n}\n",
             "at most 8 elements");
  load_fails(ctx,
             HEAD ".visible .entry k(.param .u64 p)\n{\n  .reg .b32 %r<12>;\n  .reg .b64 %rd<2>;\n"
                  "  ld.param.u64 %rd1, [p];\n"
                  "  ld.global.v4.u32 {%r1, %r2, %r3, %r4, %r5, %r6, %r7, %r8}, [%rd1];\n  ret;\n}\n",
             "a vector of 8 elements (ld and st take at most 4)");
  load_fails(ctx,
             HEAD ".visible .entry k()\n{\n  .reg .b16 %h<8>;\n  .reg .b64 %rd<2>;\n"
                  "  mov.b64 {%h1, %h2, %h3, %h4, %h5}, %rd1;\n  ret;\n}\n",
             "a vector of 5 elements (mov takes at most 4)");
  gcap_context_destroy(ctx);
}

/* ---------------------------------------------------------------- mma.sync */

enum htype { HF16, HBF16, HTF32, HF32, HS8, HU8, HS32 };

/* Half's bits of an integer-valued or dyadic x, rounded to nearest even (|x| < 65504). */
static uint16_t half_bits(double x) {
  uint16_t sign = x < 0 ? 0x8000 : 0;
  x = fabs(x);
  if (x == 0) return sign;
  int e = 0;
  while (ldexp(1.0, e + 1) <= x) e++;
  while (ldexp(1.0, e) > x) e--;
  if (e < -14) return (uint16_t)(sign | (uint16_t)nearbyint(x * 0x1p24));
  double q = nearbyint(x / ldexp(1.0, e - 10));
  if (q == 2048) q = 1024, e++;
  return (uint16_t)(sign | (uint16_t)((e + 15) << 10) | (uint16_t)(q - 1024));
}

static double half_value(uint16_t h) {
  int e = (h >> 10) & 31, f = h & 1023;
  double v = e ? ldexp(1024 + f, e - 25) : ldexp(f, -24);
  return h & 0x8000 ? -v : v;
}

/* The bits of value v (a small integer or half-integer) as an element of type t. */
static uint32_t elem_bits(enum htype t, double v) {
  switch (t) {
  case HF16: return half_bits(v);
  case HBF16: return ptx_f32_bits((float)v) >> 16;
  case HTF32:
  case HF32: return ptx_f32_bits((float)v);
  default: return (uint32_t)(int32_t)v & (t == HS32 ? 0xffffffffu : 0xffu);
  }
}

static unsigned elem_width(enum htype t) { return t == HF16 || t == HBF16 ? 16 : t == HS8 || t == HU8 ? 8 : 32; }

/* One mma form: its suffixes, K, the types of A (B is tb), C and D, registers of each fragment. */
struct mma_form {
  const char *text; /* "m16n8k16.row.col.f32.f16.f16.f32" */
  unsigned k;
  enum htype ta, tb, tc, td;
  bool satfinite;
};

/* Row and column of element i of lane l in A (16 x K), from the PTX ISA's fragment figures. */
static void a_place(const struct mma_form *f, unsigned l, unsigned i, unsigned *row, unsigned *col) {
  unsigned g = l >> 2, t = l % 4;
  if (f->ta == HTF32) {
    *row = (i % 2 == 0) ? g : g + 8;
    *col = i < 2 ? t : t + 4;
  } else if (elem_width(f->ta) == 16) {
    *row = (i < 2 || (i >= 4 && i < 6)) ? g : g + 8;
    *col = t * 2 + (i & 1) + (i >= 4 ? 8 : 0);
  } else {
    *row = (i < 4 || (i >= 8 && i < 12)) ? g : g + 8;
    *col = t * 4 + (i & 3) + (i >= 8 ? 16 : 0);
  }
}

static void b_place(const struct mma_form *f, unsigned l, unsigned i, unsigned *row, unsigned *col) {
  unsigned g = l >> 2, t = l % 4;
  *col = g;
  if (f->ta == HTF32) *row = i == 0 ? t : t + 4;
  else if (elem_width(f->ta) == 16) *row = t * 2 + (i & 1) + (i >= 2 ? 8 : 0);
  else *row = t * 4 + (i & 3) + (i >= 4 ? 16 : 0);
}

static void c_place(unsigned l, unsigned i, unsigned *row, unsigned *col) {
  *row = i < 2 ? l / 4 : l / 4 + 8;
  *col = (l % 4) * 2 + (i & 1);
}

#define MAXW 8 /* 32-bit words per lane per fragment, at most */

/* Packs element i of a lane's fragment (elements of width bits) into its words. */
static void put_elem(uint32_t *words, unsigned width, unsigned i, uint32_t bits) {
  unsigned per = 32 / width;
  words[i / per] |= (bits & (width == 32 ? 0xffffffffu : (1u << width) - 1)) << (width * (i % per));
}

static uint32_t get_elem(const uint32_t *words, unsigned width, unsigned i) {
  unsigned per = 32 / width;
  uint32_t w = words[i / per] >> (width * (i % per));
  return width == 32 ? w : w & ((1u << width) - 1);
}

static const char *reg_type(enum htype t) { return t == HF32 ? "f32" : "b32"; }

/* Kernel k: each lane loads its A, B, C words (lane-major), runs the mma, stores D's words. */
static char *mma_kernel(const char *op, unsigned na, unsigned nb, unsigned nc, unsigned nd, enum htype tc,
                        enum htype td) {
  static char text[8192];
  size_t n = 0;
  n += (size_t)snprintf(text + n, sizeof text - n,
                        HEAD ".visible .entry k(.param .u64 pa, .param .u64 pb, .param .u64 pc, .param .u64 pd)\n{\n"
                             "  .reg .b32 %%a<8>;\n  .reg .b32 %%b<8>;\n  .reg .%s %%c<8>;\n  .reg .%s %%d<8>;\n"
                             "  .reg .b32 %%r<2>;\n  .reg .b64 %%rd<16>;\n"
                             "  mov.u32 %%r1, %%tid.x;\n  mul.wide.u32 %%rd9, %%r1, 32;\n",
                        reg_type(tc), reg_type(td));
  const char *ps[4] = {"pa", "pb", "pc", "pd"};
  for (int p = 0; p < 4; p++)
    n += (size_t)snprintf(text + n, sizeof text - n, "  ld.param.u64 %%rd%d, [%s];\n  add.s64 %%rd%d, %%rd%d, %%rd9;\n",
                          p + 1, ps[p], p + 5, p + 1);
  const unsigned counts[3] = {na, nb, nc};
  const char names[3] = {'a', 'b', 'c'};
  for (int p = 0; p < 3; p++)
    for (unsigned i = 0; i < counts[p]; i++)
      n += (size_t)snprintf(text + n, sizeof text - n, "  ld.global.%s %%%c%u, [%%rd%d+%u];\n",
                            p == 2 ? reg_type(tc) : "b32", names[p], i, p + 5, 4 * i);
  n += (size_t)snprintf(text + n, sizeof text - n, "  %s {", op);
  const unsigned all[4] = {nd, na, nb, nc};
  const char vn[4] = {'d', 'a', 'b', 'c'};
  for (int p = 0; p < 4; p++) {
    for (unsigned i = 0; i < all[p]; i++)
      n += (size_t)snprintf(text + n, sizeof text - n, "%s%%%c%u", i ? ", " : "", vn[p], i);
    n += (size_t)snprintf(text + n, sizeof text - n, "%s", p < 3 ? "}, {" : "};\n");
  }
  for (unsigned i = 0; i < nd; i++)
    n += (size_t)snprintf(text + n, sizeof text - n, "  st.global.%s [%%rd8+%u], %%d%u;\n", reg_type(td), 4 * i, i);
  snprintf(text + n, sizeof text - n, "  ret;\n}\n");
  return text;
}

/* A value for element (r, c) of the test's matrix `which`: small, exactly representable, products and sums exact. */
static double test_value(enum htype t, unsigned which, unsigned r, unsigned c, uint64_t *seed) {
  uint32_t x = ptx_rand32(seed);
  switch (t) {
  case HS8: return (int)(x % 256) - 128;
  case HU8: return x % 256;
  case HS32: return (int)(x % 200001) - 100000;
  default: return ((int)(x % 17) - 8) * (which == 0 ? 0.5 : 1.0) + (which == 2 ? 0.25 * (r + c) : 0);
  }
}

/* Runs one mma form on random inputs and checks every D element against the exact GEMM rounded once. */
static void run_mma(gcap_context *ctx, const struct mma_form *f, uint64_t seed, double c_bias) {
  unsigned wa = elem_width(f->ta), wc = elem_width(f->tc), wd = elem_width(f->td);
  unsigned ea = 16 * f->k / 32, eb = f->k * 8 / 32; /* elements per lane */
  unsigned na = ea * wa / 32, nb = eb * wa / 32, nc = 4 * wc / 32, nd = 4 * wd / 32;
  char op[128];
  snprintf(op, sizeof op, "mma.sync.aligned.%s%s", f->text, f->satfinite ? ".satfinite" : "");
  gcap_module *m = ptx_load_text(ctx, mma_kernel(op, na, nb, nc, nd, f->tc, f->td));
  static double A[16][32], B[32][8], C[16][8];
  for (unsigned r = 0; r < 16; r++)
    for (unsigned c = 0; c < f->k; c++) A[r][c] = test_value(f->ta, 0, r, c, &seed);
  for (unsigned r = 0; r < f->k; r++)
    for (unsigned c = 0; c < 8; c++) B[r][c] = test_value(f->tb, 1, r, c, &seed);
  for (unsigned r = 0; r < 16; r++)
    for (unsigned c = 0; c < 8; c++) {
      C[r][c] = test_value(f->tc, 2, r, c, &seed) + c_bias;
      if (f->tc == HF16) C[r][c] = half_value(half_bits(C[r][c])); /* what the register holds */
    }
  uint32_t ha[32][MAXW], hb[32][MAXW], hc[32][MAXW], hd[32][MAXW];
  memset(ha, 0, sizeof ha), memset(hb, 0, sizeof hb), memset(hc, 0, sizeof hc);
  for (unsigned l = 0; l < 32; l++) {
    unsigned r, c;
    for (unsigned i = 0; i < ea; i++) a_place(f, l, i, &r, &c), put_elem(ha[l], wa, i, elem_bits(f->ta, A[r][c]));
    for (unsigned i = 0; i < eb; i++) b_place(f, l, i, &r, &c), put_elem(hb[l], wa, i, elem_bits(f->tb, B[r][c]));
    for (unsigned i = 0; i < 4; i++) c_place(l, i, &r, &c), put_elem(hc[l], wc, i, elem_bits(f->tc, C[r][c]));
  }
  void *da = ptx_dev(ctx, ha, sizeof ha), *db = ptx_dev(ctx, hb, sizeof hb), *dc = ptx_dev(ctx, hc, sizeof hc);
  void *dd = ptx_dev(ctx, NULL, sizeof hd);
  run_warp(ctx, m, "k", (void *[]){&da, &db, &dc, &dd});
  ptx_get(ctx, hd, dd, sizeof hd);
  for (unsigned l = 0; l < 32; l++)
    for (unsigned i = 0; i < 4; i++) {
      unsigned r, c;
      c_place(l, i, &r, &c);
      uint32_t got = get_elem(hd[l], wd, i), want;
      if (f->td == HS32) {
        int64_t acc = (int64_t)C[r][c];
        for (unsigned k = 0; k < f->k; k++) acc += (int64_t)A[r][k] * (int64_t)B[k][c];
        if (f->satfinite) acc = acc > INT32_MAX ? INT32_MAX : acc < INT32_MIN ? INT32_MIN : acc;
        want = (uint32_t)acc;
      } else {
        double acc = C[r][c];
        for (unsigned k = 0; k < f->k; k++) acc += A[r][k] * B[k][c];
        want = f->td == HF16 ? half_bits(acc) : ptx_f32_bits((float)acc);
      }
      ptx_expect(got == want, f->text, "D", r * 8 + c, "row %u col %u (lane %u element %u): got 0x%08x, want 0x%08x", r,
                 c, l, i, got, want);
    }
}

static const struct mma_form mma_forms[] = {
    {"m16n8k16.row.col.f32.f16.f16.f32", 16, HF16, HF16, HF32, HF32, false},
    {"m16n8k8.row.col.f32.f16.f16.f32", 8, HF16, HF16, HF32, HF32, false},
    {"m16n8k16.row.col.f16.f16.f16.f16", 16, HF16, HF16, HF16, HF16, false},
    {"m16n8k8.row.col.f16.f16.f16.f16", 8, HF16, HF16, HF16, HF16, false},
    {"m16n8k16.row.col.f32.bf16.bf16.f32", 16, HBF16, HBF16, HF32, HF32, false},
    {"m16n8k8.row.col.f32.bf16.bf16.f32", 8, HBF16, HBF16, HF32, HF32, false},
    {"m16n8k4.row.col.f32.tf32.tf32.f32", 4, HTF32, HTF32, HF32, HF32, false},
    {"m16n8k8.row.col.f32.tf32.tf32.f32", 8, HTF32, HTF32, HF32, HF32, false},
    {"m16n8k16.row.col.s32.s8.s8.s32", 16, HS8, HS8, HS32, HS32, false},
    {"m16n8k32.row.col.s32.s8.s8.s32", 32, HS8, HS8, HS32, HS32, false},
    {"m16n8k32.row.col.s32.u8.u8.s32", 32, HU8, HU8, HS32, HS32, false},
    {"m16n8k32.row.col.s32.s8.u8.s32", 32, HS8, HU8, HS32, HS32, false},
    {"m16n8k16.row.col.s32.u8.s8.s32", 16, HU8, HS8, HS32, HS32, true},
};

/* Every mma.sync form against the reference, with the ISA's fragment layouts, every check on. */
static void mma_forms_match_the_reference(void **state) {
  (void)state;
  gcap_context *ctx = ptx_context(CHECKS_ALL);
  for (size_t i = 0; i < sizeof mma_forms / sizeof mma_forms[0]; i++) run_mma(ctx, &mma_forms[i], 0x1234 + i, 0);
  gcap_context_destroy(ctx);
}

/* An f16 accumulator rounds the exact sum once, to nearest even; s32 wraps, or clamps with .satfinite. */
static void mma_rounding_and_saturation(void **state) {
  (void)state;
  gcap_context *ctx = ptx_context(CHECKS_ALL);
  /* C near 2048..4096 where halves are 2 apart: odd sums round to even. */
  run_mma(ctx, &mma_forms[2], 77, 2048);
  run_mma(ctx, &mma_forms[3], 78, 3000);
  /* C near INT32_MAX: s8 x s8 sums of up to 32 * 16384 pass it. */
  struct mma_form sat = {"m16n8k32.row.col.s32.s8.s8.s32", 32, HS8, HS8, HS32, HS32, true};
  run_mma(ctx, &sat, 79, 2147383000.0);
  run_mma(ctx, &sat, 80, -2147383000.0);
  sat.satfinite = false;
  run_mma(ctx, &sat, 81, 2147383000.0);
  gcap_context_destroy(ctx);
}

/* ---------------------------------------------------------------- ldmatrix, stmatrix, movmatrix */

/*
 * ldm: 32 rows of 48 bytes (8 b16 elements, then padding) copied into shared memory; lane l gives
 * row l's address (x1 takes lanes 0-7's, x2 0-15's: the others give an address past shared
 * memory, which must not be read). Each lane stores, at out + 64 * lane: x1, x2, x4, x4.trans,
 * x2.trans, x1.trans (14 words), then movmatrix.trans of x4's first register (word 14).
 * stm: stmatrix.x4 of x4's registers rows 0-31 at 48-byte rows, and .x2.trans into rows 0-15
 * of a second tile; both tiles copied to back (2 x 1536 bytes).
 */
static const char ldmatrix_ptx[] =
    ".version 8.0\n.target sm_90\n.address_size 64\n"
    ".visible .entry ldm(.param .u64 pin, .param .u64 pout, .param .u64 pback)\n{\n"
    "  .reg .pred %p<3>;\n  .reg .b32 %r<48>;\n  .reg .b64 %rd<12>;\n"
    "  .shared .align 16 .b8 tile[1536];\n  .shared .align 16 .b8 tile2[3072];\n"
    "  ld.param.u64 %rd1, [pin];\n  ld.param.u64 %rd2, [pout];\n  ld.param.u64 %rd10, [pback];\n"
    "  mov.u32 %r1, %tid.x;\n  mul.wide.u32 %rd3, %r1, 48;\n  add.s64 %rd4, %rd1, %rd3;\n"
    "  mov.u32 %r2, tile;\n  mul.lo.u32 %r3, %r1, 48;\n  add.u32 %r4, %r2, %r3;\n"
    "  ld.global.v4.u32 {%r5, %r6, %r7, %r8}, [%rd4];\n  st.shared.v4.u32 [%r4], {%r5, %r6, %r7, %r8};\n"
    "  ld.global.v4.u32 {%r5, %r6, %r7, %r8}, [%rd4+16];\n  st.shared.v4.u32 [%r4+16], {%r5, %r6, %r7, %r8};\n"
    "  ld.global.v4.u32 {%r5, %r6, %r7, %r8}, [%rd4+32];\n  st.shared.v4.u32 [%r4+32], {%r5, %r6, %r7, %r8};\n"
    "  mov.u32 %r26, tile2;\n  mul.lo.u32 %r30, %r1, 96;\n  add.u32 %r31, %r26, %r30;\n  mov.u32 %r47, 0;\n"
    "  st.shared.v4.u32 [%r31], {%r47, %r47, %r47, %r47};\n  st.shared.v4.u32 [%r31+16], {%r47, %r47, %r47, %r47};\n"
    "  st.shared.v4.u32 [%r31+32], {%r47, %r47, %r47, %r47};\n  st.shared.v4.u32 [%r31+48], {%r47, %r47, %r47, %r47};\n"
    "  st.shared.v4.u32 [%r31+64], {%r47, %r47, %r47, %r47};\n  st.shared.v4.u32 [%r31+80], {%r47, %r47, %r47, %r47};\n"
    "  bar.sync 0;\n"
    "  setp.lt.u32 %p1, %r1, 8;\n  selp.b32 %r9, %r4, 65520, %p1;\n"
    "  setp.lt.u32 %p2, %r1, 16;\n  selp.b32 %r10, %r4, 65520, %p2;\n"
    "  ldmatrix.sync.aligned.m8n8.x1.shared.b16 {%r11}, [%r9];\n"
    "  ldmatrix.sync.aligned.m8n8.x2.shared::cta.b16 {%r12, %r13}, [%r10];\n"
    "  ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%r14, %r15, %r16, %r17}, [%r4];\n"
    "  ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%r18, %r19, %r20, %r21}, [%r4];\n"
    "  ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%r22, %r23}, [%r10];\n"
    "  ldmatrix.sync.aligned.m8n8.x1.trans.shared.b16 {%r24}, [%r9];\n"
    "  movmatrix.sync.aligned.m8n8.trans.b16 %r25, %r14;\n"
    "  mul.wide.u32 %rd5, %r1, 64;\n  add.s64 %rd6, %rd2, %rd5;\n"
    "  st.global.v4.u32 [%rd6], {%r11, %r12, %r13, %r14};\n"
    "  st.global.v4.u32 [%rd6+16], {%r15, %r16, %r17, %r18};\n"
    "  st.global.v4.u32 [%rd6+32], {%r19, %r20, %r21, %r22};\n"
    "  st.global.v4.u32 [%rd6+48], {%r23, %r24, %r25, %r1};\n"
    "  add.u32 %r27, %r26, %r3;\n  add.u32 %r28, %r27, 1536;\n"
    "  selp.b32 %r29, %r28, 65520, %p2;\n"
    "  stmatrix.sync.aligned.m8n8.x4.shared.b16 [%r27], {%r14, %r15, %r16, %r17};\n"
    "  stmatrix.sync.aligned.m8n8.x2.trans.shared.b16 [%r29], {%r12, %r13};\n"
    "  bar.sync 0;\n"
    "  mul.wide.u32 %rd7, %r1, 96;\n  add.s64 %rd8, %rd10, %rd7;\n"
    "  ld.shared.v4.u32 {%r5, %r6, %r7, %r8}, [%r31];\n  st.global.v4.u32 [%rd8], {%r5, %r6, %r7, %r8};\n"
    "  ld.shared.v4.u32 {%r5, %r6, %r7, %r8}, [%r31+16];\n  st.global.v4.u32 [%rd8+16], {%r5, %r6, %r7, %r8};\n"
    "  ld.shared.v4.u32 {%r5, %r6, %r7, %r8}, [%r31+32];\n  st.global.v4.u32 [%rd8+32], {%r5, %r6, %r7, %r8};\n"
    "  ld.shared.v4.u32 {%r5, %r6, %r7, %r8}, [%r31+48];\n  st.global.v4.u32 [%rd8+48], {%r5, %r6, %r7, %r8};\n"
    "  ld.shared.v4.u32 {%r5, %r6, %r7, %r8}, [%r31+64];\n  st.global.v4.u32 [%rd8+64], {%r5, %r6, %r7, %r8};\n"
    "  ld.shared.v4.u32 {%r5, %r6, %r7, %r8}, [%r31+80];\n  st.global.v4.u32 [%rd8+80], {%r5, %r6, %r7, %r8};\n"
    "  ret;\n}\n";

/* Element (r, c) of matrix q as the test places it: row 8q + r of the tile. */
static uint16_t ldm_value(unsigned q, unsigned r, unsigned c) { return (uint16_t)((8 * q + r) * 8 + c + 1); }

/* What lane l's register for matrix q holds (PTX ISA: row l / 4, columns 2 (l % 4) and the next; .trans: transposed).
 */
static uint32_t ldm_expect(unsigned q, unsigned l, bool trans) {
  unsigned r = l / 4, c = 2 * (l % 4);
  if (trans) return ldm_value(q, c, r) | (uint32_t)ldm_value(q, c + 1, r) << 16;
  return ldm_value(q, r, c) | (uint32_t)ldm_value(q, r, c + 1) << 16;
}

static void ldmatrix_places_elements(void **state) {
  (void)state;
  gcap_context *ctx = ptx_context(CHECKS_ALL);
  gcap_module *m = ptx_load_text(ctx, ldmatrix_ptx);
  static uint16_t tile[32][24];
  for (unsigned r = 0; r < 32; r++)
    for (unsigned c = 0; c < 24; c++) tile[r][c] = c < 8 ? ldm_value(r / 8, r % 8, c) : 0xdead;
  void *in = ptx_dev(ctx, tile, sizeof tile), *out = ptx_dev(ctx, NULL, 32 * 64), *back = ptx_dev(ctx, NULL, 3072);
  run_warp(ctx, m, "ldm", (void *[]){&in, &out, &back});
  static uint32_t got[32][16];
  static uint16_t tiles[2][32][24];
  ptx_get(ctx, got, out, sizeof got);
  ptx_get(ctx, tiles, back, sizeof tiles);
  /* word: {matrix, .trans} */
  static const unsigned q_of[15] = {0, 0, 1, 0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 0, 0};
  static const bool trans_of[15] = {0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1};
  static const char *const what[15] = {"x1",       "x2",       "x2",       "x4",       "x4",
                                       "x4",       "x4",       "x4.trans", "x4.trans", "x4.trans",
                                       "x4.trans", "x2.trans", "x2.trans", "x1.trans", "movmatrix"};
  for (unsigned l = 0; l < 32; l++)
    for (unsigned w = 0; w < 15; w++) {
      uint32_t want = ldm_expect(q_of[w], l, trans_of[w]);
      ptx_expect(got[l][w] == want, "ldm", what[w], l, "lane %u: got 0x%08x, want 0x%08x", l, got[l][w], want);
    }
  /* stmatrix.x4 wrote the tile back as it was; .x2.trans the transposes of matrices 0 and 1. */
  for (unsigned r = 0; r < 32; r++)
    for (unsigned c = 0; c < 8; c++) {
      ptx_expect(tiles[0][r][c] == ldm_value(r / 8, r % 8, c), "stm", "x4", r * 8 + c, "row %u col %u: 0x%04x", r, c,
                 tiles[0][r][c]);
      if (r < 16)
        ptx_expect(tiles[1][r][c] == ldm_value(r / 8, c, r % 8), "stm", "x2.trans", r * 8 + c, "row %u col %u: 0x%04x",
                   r, c, tiles[1][r][c]);
    }
  gcap_context_destroy(ctx);
}

/* An .aligned warp-wide instruction run by part of a warp is a SYNC-check report. */
static void divergent_mma_is_reported(void **state) {
  (void)state;
  static const char text[] = HEAD ".visible .entry k()\n{\n  .reg .pred %p<2>;\n  .reg .b32 %r<8>;\n"
                                  "  mov.u32 %r1, %tid.x;\n  mov.u32 %r2, 0;\n  setp.lt.u32 %p1, %r1, 16;\n"
                                  "  @%p1 bra SKIP;\n"
                                  "  movmatrix.sync.aligned.m8n8.trans.b16 %r3, %r2;\n"
                                  "SKIP:\n  ret;\n}\n";
  gcap_context *ctx = ptx_sim_context(CHECKS_ALL);
  gcap_module *m = ptx_load_text(ctx, text);
  assert_int_equal(ptx_launch_on(ctx, m, "k", GCAP_DIM3(1, 1, 1), GCAP_DIM3(32, 1, 1), 0, NULL),
                   GCAP_ERROR_LAUNCH_FAILURE);
  test_assert_message_contains("lanes 0x0000ffff of the warp are not executing this .aligned");
  test_assert_message_contains("movmatrix");
  gcap_context_destroy(ctx);
}

/* ---------------------------------------------------------------- wmma */

/* One wmma form: shape, the types of A/B, C, D, and the memory layouts of A, B, C, D (true: column-major). */
struct wmma_form {
  unsigned m, n, k;
  enum htype tab, tc, td;
  bool acol, bcol, ccol, dcol;
};

static const char *htype_name(enum htype t) {
  static const char *const names[] = {"f16", "bf16", "tf32", "f32", "s8", "u8", "s32"};
  return names[t];
}

static unsigned mem_bytes(enum htype t) { return t == HF16 || t == HBF16 ? 2 : t == HS8 || t == HU8 ? 1 : 4; }

/* Registers of a fragment of rows x cols (f16 A and B fragments always have 8). */
static unsigned wmma_regs(enum htype t, unsigned rows, unsigned cols, bool ab) {
  if (t == HF16 && ab) return 8;
  return rows * cols * mem_bytes(t) / 128;
}

/* wk: wmma.load A, B and C from global memory (strides: p_s[0..3] elements), wmma.mma, wmma.store D. */
static char *wmma_kernel(const struct wmma_form *f) {
  static char text[8192];
  char shape[16], types[64];
  snprintf(shape, sizeof shape, "m%un%uk%u", f->m, f->n, f->k);
  if (f->tab == HF16) snprintf(types, sizeof types, "%s.%s", htype_name(f->td), htype_name(f->tc));
  else
    snprintf(types, sizeof types, "%s.%s.%s.%s", htype_name(f->td), htype_name(f->tab), htype_name(f->tab),
             htype_name(f->tc));
  unsigned na = wmma_regs(f->tab, f->m, f->k, true), nb = wmma_regs(f->tab, f->k, f->n, true);
  unsigned nc = wmma_regs(f->tc, f->m, f->n, false), nd = wmma_regs(f->td, f->m, f->n, false);
  size_t n = 0;
  n += (size_t)snprintf(text + n, sizeof text - n,
                        HEAD ".visible .entry wk(.param .u64 pa, .param .u64 pb, .param .u64 pc, .param .u64 pd,"
                             " .param .u32 sa, .param .u32 sb, .param .u32 sc, .param .u32 sd)\n{\n"
                             "  .reg .b32 %%a<8>;\n  .reg .b32 %%b<8>;\n  .reg .%s %%c<8>;\n  .reg .%s %%d<8>;\n"
                             "  .reg .b32 %%s<4>;\n  .reg .b64 %%rd<5>;\n"
                             "  ld.param.u64 %%rd1, [pa];\n  ld.param.u64 %%rd2, [pb];\n  ld.param.u64 %%rd3, [pc];\n"
                             "  ld.param.u64 %%rd4, [pd];\n  ld.param.u32 %%s0, [sa];\n  ld.param.u32 %%s1, [sb];\n"
                             "  ld.param.u32 %%s2, [sc];\n  ld.param.u32 %%s3, [sd];\n",
                        f->tc == HF32 ? "f32" : "b32", f->td == HF32 ? "f32" : "b32");
  const char frag[4] = {'a', 'b', 'c', 'd'};
  const bool col[4] = {f->acol, f->bcol, f->ccol, f->dcol};
  const unsigned regs[4] = {na, nb, nc, nd};
  const enum htype ty[4] = {f->tab, f->tab, f->tc, f->td};
  for (int p = 0; p < 3; p++) {
    n += (size_t)snprintf(text + n, sizeof text - n, "  wmma.load.%c.sync.aligned.%s.%s.global.%s {", frag[p],
                          col[p] ? "col" : "row", shape, htype_name(ty[p]));
    for (unsigned i = 0; i < regs[p]; i++)
      n += (size_t)snprintf(text + n, sizeof text - n, "%s%%%c%u", i ? ", " : "", frag[p], i);
    n += (size_t)snprintf(text + n, sizeof text - n, "}, [%%rd%d], %%s%d;\n", p + 1, p);
  }
  n += (size_t)snprintf(text + n, sizeof text - n, "  wmma.mma.sync.aligned.%s.%s.%s.%s%s ", f->acol ? "col" : "row",
                        f->bcol ? "col" : "row", shape, types, f->tab == HS8 || f->tab == HU8 ? ".satfinite" : "");
  const int order[4] = {3, 0, 1, 2};
  for (int o = 0; o < 4; o++) {
    int p = order[o];
    n += (size_t)snprintf(text + n, sizeof text - n, "{");
    for (unsigned i = 0; i < regs[p]; i++)
      n += (size_t)snprintf(text + n, sizeof text - n, "%s%%%c%u", i ? ", " : "", frag[p], i);
    n += (size_t)snprintf(text + n, sizeof text - n, "}%s", o < 3 ? ", " : ";\n");
  }
  n += (size_t)snprintf(text + n, sizeof text - n, "  wmma.store.d.sync.aligned.%s.%s.global.%s [%%rd4], {",
                        f->dcol ? "col" : "row", shape, htype_name(f->td));
  for (unsigned i = 0; i < nd; i++) n += (size_t)snprintf(text + n, sizeof text - n, "%s%%d%u", i ? ", " : "", i);
  snprintf(text + n, sizeof text - n, "}, %%s3;\n  ret;\n}\n");
  return text;
}

/* Writes matrix v (rows x cols, row-major doubles) into mem as type t, column-major when col, `stride` elements apart.
 */
static void store_matrix(unsigned char *mem, const double *v, unsigned rows, unsigned cols, enum htype t, bool col,
                         unsigned stride) {
  unsigned b = mem_bytes(t);
  for (unsigned r = 0; r < rows; r++)
    for (unsigned c = 0; c < cols; c++) {
      uint32_t bits = elem_bits(t, v[r * cols + c]);
      memcpy(mem + (size_t)(col ? c * stride + r : r * stride + c) * b, &bits, b);
    }
}

static void run_wmma(gcap_context *ctx, const struct wmma_form *f, uint64_t seed) {
  gcap_module *m = ptx_load_text(ctx, wmma_kernel(f));
  static double A[32 * 32], B[32 * 32], C[32 * 32];
  for (unsigned r = 0; r < f->m; r++)
    for (unsigned c = 0; c < f->k; c++) A[r * f->k + c] = test_value(f->tab, 0, r, c, &seed);
  for (unsigned r = 0; r < f->k; r++)
    for (unsigned c = 0; c < f->n; c++) B[r * f->n + c] = test_value(f->tab, 1, r, c, &seed);
  for (unsigned r = 0; r < f->m; r++)
    for (unsigned c = 0; c < f->n; c++) C[r * f->n + c] = test_value(f->tc, 2, r, c, &seed);
  /* Strides with padding: the next row (or column) starts 4 elements past the last. */
  uint32_t sa = (f->acol ? f->m : f->k) + 4, sb = (f->bcol ? f->k : f->n) + 4;
  uint32_t sc = (f->ccol ? f->m : f->n) + 4, sd = (f->dcol ? f->m : f->n) + 4;
  static unsigned char ha[4096], hb[4096], hc[8192], hd[8192];
  memset(ha, 0x7b, sizeof ha), memset(hb, 0x7b, sizeof hb), memset(hc, 0x7b, sizeof hc), memset(hd, 0, sizeof hd);
  store_matrix(ha, A, f->m, f->k, f->tab, f->acol, sa);
  store_matrix(hb, B, f->k, f->n, f->tab, f->bcol, sb);
  store_matrix(hc, C, f->m, f->n, f->tc, f->ccol, sc);
  void *da = ptx_dev(ctx, ha, sizeof ha), *db = ptx_dev(ctx, hb, sizeof hb), *dc = ptx_dev(ctx, hc, sizeof hc);
  void *dd = ptx_dev(ctx, hd, sizeof hd);
  run_warp(ctx, m, "wk", (void *[]){&da, &db, &dc, &dd, &sa, &sb, &sc, &sd});
  ptx_get(ctx, hd, dd, sizeof hd);
  char what[64];
  snprintf(what, sizeof what, "m%un%uk%u %s->%s %c%c%c%c", f->m, f->n, f->k, htype_name(f->tab), htype_name(f->td),
           f->acol ? 'c' : 'r', f->bcol ? 'c' : 'r', f->ccol ? 'c' : 'r', f->dcol ? 'c' : 'r');
  unsigned b = mem_bytes(f->td);
  for (unsigned r = 0; r < f->m; r++)
    for (unsigned c = 0; c < f->n; c++) {
      uint32_t got = 0, want;
      memcpy(&got, hd + (size_t)(f->dcol ? c * sd + r : r * sd + c) * b, b);
      if (f->td == HS32) {
        int64_t acc = (int64_t)C[r * f->n + c];
        for (unsigned k = 0; k < f->k; k++) acc += (int64_t)A[r * f->k + k] * (int64_t)B[k * f->n + c];
        want = (uint32_t)acc;
      } else {
        double acc = f->tc == HF16 ? half_value(half_bits(C[r * f->n + c])) : C[r * f->n + c];
        for (unsigned k = 0; k < f->k; k++) acc += A[r * f->k + k] * B[k * f->n + c];
        want = f->td == HF16 ? half_bits(acc) : ptx_f32_bits((float)acc);
      }
      ptx_expect(got == want, "wk", what, r * f->n + c, "row %u col %u: got 0x%08x, want 0x%08x", r, c, got, want);
    }
}

/* wmma.load, wmma.mma and wmma.store of every shape and type, in row- and column-major memory. */
static void wmma_matches_the_reference(void **state) {
  (void)state;
  gcap_context *ctx = ptx_context(CHECKS_ALL);
  static const unsigned shapes[3][3] = {{16, 16, 16}, {32, 8, 16}, {8, 32, 16}};
  static const enum htype inputs[4] = {HF16, HBF16, HS8, HU8};
  uint64_t seed = 99;
  for (unsigned s = 0; s < 3; s++)
    for (unsigned t = 0; t < 4; t++) {
      bool integer = inputs[t] == HS8 || inputs[t] == HU8;
      enum htype acc = integer ? HS32 : HF32;
      for (unsigned lay = 0; lay < 4; lay++) {
        struct wmma_form f = {shapes[s][0], shapes[s][1], shapes[s][2], inputs[t], acc,
                              acc,          lay & 1,      lay >> 1,     lay == 3,  lay == 1};
        run_wmma(ctx, &f, seed++);
      }
    }
  /* f16 accumulators (rounded once, to nearest even), and f32 C with an f16 D. */
  struct wmma_form h = {16, 16, 16, HF16, HF16, HF16, false, true, false, true};
  run_wmma(ctx, &h, seed++);
  struct wmma_form h2 = {32, 8, 16, HF16, HF32, HF16, true, false, true, false};
  run_wmma(ctx, &h2, seed++);
  /* tf32 m16n16k8 */
  struct wmma_form t1 = {16, 16, 8, HTF32, HF32, HF32, false, true, false, false};
  run_wmma(ctx, &t1, seed++);
  struct wmma_form t2 = {16, 16, 8, HTF32, HF32, HF32, true, false, true, true};
  run_wmma(ctx, &t2, seed++);
  gcap_context_destroy(ctx);
}

/*
 * wl: C (16 x 16 f32, row-major) through shared memory and A (16 x 16 f16, column-major) from a
 * generic address, each lane's registers stored as they are: the simulator's documented wmma
 * layout (element i of lane l is element l * U + i % U in row-major order, U = 256 / 32).
 */
static const char wmma_layout_ptx[] =
    HEAD ".visible .entry wl(.param .u64 pc, .param .u64 ph, .param .u64 pout)\n{\n"
         "  .reg .f32 %f<8>;\n  .reg .b32 %r<16>;\n  .reg .b64 %rd<10>;\n  .shared .align 16 .b8 sm[1024];\n"
         "  ld.param.u64 %rd1, [pc];\n  ld.param.u64 %rd2, [ph];\n  ld.param.u64 %rd3, [pout];\n"
         "  mov.u32 %r1, %tid.x;\n  mul.wide.u32 %rd4, %r1, 32;\n  add.s64 %rd5, %rd1, %rd4;\n"
         "  mov.u32 %r2, sm;\n  shl.b32 %r3, %r1, 5;\n  add.u32 %r4, %r2, %r3;\n"
         "  ld.global.v4.f32 {%f0, %f1, %f2, %f3}, [%rd5];\n  st.shared.v4.f32 [%r4], {%f0, %f1, %f2, %f3};\n"
         "  ld.global.v4.f32 {%f0, %f1, %f2, %f3}, [%rd5+16];\n  st.shared.v4.f32 [%r4+16], {%f0, %f1, %f2, %f3};\n"
         "  bar.sync 0;\n"
         "  wmma.load.c.sync.aligned.row.m16n16k16.shared.f32 {%f0, %f1, %f2, %f3, %f4, %f5, %f6, %f7}, [%r2], 16;\n"
         "  wmma.load.a.sync.aligned.col.m16n16k16.f16 {%r5, %r6, %r7, %r8, %r9, %r10, %r11, %r12}, [%rd2], 16;\n"
         "  mul.wide.u32 %rd6, %r1, 64;\n  add.s64 %rd7, %rd3, %rd6;\n"
         "  st.global.v4.f32 [%rd7], {%f0, %f1, %f2, %f3};\n  st.global.v4.f32 [%rd7+16], {%f4, %f5, %f6, %f7};\n"
         "  st.global.v4.b32 [%rd7+32], {%r5, %r6, %r7, %r8};\n  st.global.v4.b32 [%rd7+48], {%r9, %r10, %r11, %r12};\n"
         "  ret;\n}\n";

static void wmma_fragment_layout(void **state) {
  (void)state;
  gcap_context *ctx = ptx_sim_context(CHECKS_ALL);
  gcap_module *m = ptx_load_text(ctx, wmma_layout_ptx);
  static float c[256];
  static uint16_t h[256];
  for (unsigned i = 0; i < 256; i++) c[i] = (float)i + 0.5f, h[i] = half_bits(i);
  void *dc = ptx_dev(ctx, c, sizeof c), *dh = ptx_dev(ctx, h, sizeof h), *out = ptx_dev(ctx, NULL, 32 * 64);
  run_warp(ctx, m, "wl", (void *[]){&dc, &dh, &out});
  static uint32_t got[32][16];
  ptx_get(ctx, got, out, sizeof got);
  for (unsigned l = 0; l < 32; l++) {
    for (unsigned i = 0; i < 8; i++)
      ptx_expect(got[l][i] == ptx_f32_bits(c[l * 8 + i]), "wl", "C", l * 8 + i, "lane %u element %u: 0x%08x", l, i,
                 got[l][i]);
    for (unsigned i = 0; i < 16; i++) {
      unsigned idx = l * 8 + i % 8, row = idx / 16, col = idx % 16;
      uint32_t want = h[col * 16 + row], v = (got[l][8 + i / 2] >> (16 * (i % 2))) & 0xffff;
      ptx_expect(v == want, "wl", "A", l * 16 + i, "lane %u element %u: 0x%04x, want 0x%04x", l, i, v, want);
    }
  }
  gcap_context_destroy(ctx);
}

/* Valid forms the simulator does not run are refused at launch, naming the instruction; bad suffixes fail the load. */
static void other_forms_are_refused(void **state) {
  (void)state;
  static const char *const lines[] = {
      ("mma.sync.aligned.m8n8k4.row.col.f32.f16.f16.f32 {%f0, %f1, %f2, %f3, %f4, %f5, %f6, %f7}, {%r0, %r1}, "
       "{%r2, %r3}, {%f0, %f1, %f2, %f3, %f4, %f5, %f6, %f7}"),
      "mma.sync.aligned.m16n8k32.row.col.s32.s4.s4.s32 {%r0, %r1, %r2, %r3}, {%r0, %r1}, {%r2}, {%r0, %r1, %r2, %r3}",
      "ldmatrix.sync.aligned.m16n16.x1.trans.shared.b8 {%r0, %r1}, [%r4]",
      "wmma.mma.sync.aligned.row.col.m8n8k4.f64.f64.f64.f64.rn {%fd0, %fd1}, {%fd2}, {%fd3}, {%fd4, %fd5}",
  };
  gcap_context *ctx = ptx_sim_context(CHECKS_ALL);
  for (size_t i = 0; i < sizeof lines / sizeof lines[0]; i++) {
    char text[1024];
    snprintf(text, sizeof text,
             HEAD ".visible .entry k()\n{\n  .reg .b32 %%r<8>;\n  .reg .f32 %%f<8>;\n  .reg .f64 %%fd<8>;\n"
                  "  mov.u32 %%r4, 0;\n  %s;\n"
                  "  ret;\n}\n",
             lines[i]);
    gcap_module *m = ptx_load_text(ctx, text);
    assert_int_equal(ptx_launch_on(ctx, m, "k", GCAP_DIM3(1, 1, 1), GCAP_DIM3(32, 1, 1), 0, NULL),
                     GCAP_ERROR_NOT_SUPPORTED);
    test_assert_message_contains("the simulator");
    test_assert_message_contains(i == 2 ? "ldmatrix" : "mma");
  }
  load_fails(ctx,
             HEAD ".visible .entry k()\n{\n  .reg .b32 %r<8>;\n  mma.sync.aligned.m16n8k16.row.bogus {%r0}, {%r1}, "
                  "{%r2}, {%r3};\n  ret;\n}\n",
             "unknown modifier \".bogus\"");
  load_fails(ctx,
             HEAD ".visible .entry k()\n{\n  .reg .b32 %r<8>;\n  ldmatrix.sync.aligned.x4.shared.b16 {%r0, %r1, %r2, "
                  "%r3}, [%r4];\n  ret;\n}\n",
             "needs a shape");
  load_fails(ctx,
             HEAD ".visible .entry k()\n{\n  .reg .b32 %r<8>;\n  .reg .f32 %f<8>;\n"
                  "  mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%f0, %f1, %f2, %f3}, {%r0, %r1}, {%r2, "
                  "%r3}, {%f0, %f1, %f2, %f3};\n  ret;\n}\n",
             "A must be a vector of 4 registers");
  gcap_context_destroy(ctx);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(vector_operands_hold_eight),  cmocka_unit_test(mma_forms_match_the_reference),
      cmocka_unit_test(mma_rounding_and_saturation), cmocka_unit_test(ldmatrix_places_elements),
      cmocka_unit_test(divergent_mma_is_reported),   cmocka_unit_test(wmma_matches_the_reference),
      cmocka_unit_test(wmma_fragment_layout),        cmocka_unit_test(other_forms_are_refused),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
