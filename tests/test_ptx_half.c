/*
 * Half-precision arithmetic on the simulator's PTX engine: the .f16, .f16x2, .bf16 and .bf16x2
 * forms of add, sub, mul, fma (.relu, .sat, .ftz), neg, abs, min, max (.NaN), ex2 and tanh, bit
 * for bit against a reference written here on integers (the exact value, then one rounding to
 * nearest even); setp with one and two predicates, set, packed moves, and the half atomics with
 * many lanes on one address.
 */
#define _POSIX_C_SOURCE 200809L

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "common.h"
#include "ptx_util.h"

#define CHECKS_ALL (GCAP_SIM_CHECK_MEMORY | GCAP_SIM_CHECK_SYNC | GCAP_SIM_CHECK_SHARED_RACES | GCAP_SIM_CHECK_INIT)

__extension__ typedef __int128 i128;
__extension__ typedef unsigned __int128 u128;

/* ---------------------------------------------------------------- the reference */

struct fmt {
  int p, emin, emax; /* significand bits with the implicit one; exponents of the normal range */
  uint16_t inf, one;
};
static const struct fmt F16 = {11, -14, 15, 0x7c00, 0x3c00};
static const struct fmt BF16 = {8, -126, 127, 0x7f80, 0x3f80};

static bool is_nan(const struct fmt *f, uint16_t h) { return (h & 0x7fff) > f->inf; }

static double value(const struct fmt *f, uint16_t h) {
  int sh = f->p - 1, ebits = 15 - sh;
  int e = (h >> sh) & ((1 << ebits) - 1), man = h & ((1 << sh) - 1);
  double v;
  if (e == (1 << ebits) - 1) v = man ? NAN : INFINITY;
  else if (e == 0) v = ldexp(man, f->emin - sh);
  else v = ldexp(man + (1 << sh), e - 1 + f->emin - sh);
  return (h & 0x8000) ? -v : v;
}

/* The bits of v, a value the format holds exactly (or an overflow: infinity). */
static uint16_t encode(const struct fmt *f, double v) {
  uint16_t sign = signbit(v) ? 0x8000 : 0;
  double a = fabs(v);
  int sh = f->p - 1;
  if (a == 0) return sign;
  if (a < ldexp(1, f->emin)) return (uint16_t)(sign | (uint16_t)ldexp(a, sh - f->emin));
  int e = ilogb(a);
  if (e > f->emax) return sign | f->inf;
  double man = ldexp(a, sh - e) - ldexp(1, sh);
  return (uint16_t)(sign | (uint16_t)((e - f->emin + 1) << sh) | (uint16_t)man);
}

/* (n + tail * tiny) * 2^k, rounded once to nearest even: tail says the exact value lies a little
 * above (1) or below (-1) |n| * 2^k. */
static uint16_t round_int(const struct fmt *f, i128 n, int k, int tail, bool negative) {
  u128 mag = n < 0 ? (u128)(-n) : (u128)n;
  if (mag == 0) return negative ? 0x8000 : 0;
  int h = 127;
  while (!((mag >> h) & 1)) h--;
  int e = h + k < f->emin ? f->emin : h + k;
  int shift = e - (f->p - 1) - k;
  u128 keep = mag;
  if (shift > 0) {
    u128 rem = shift >= 128 ? mag : mag & ((((u128)1) << shift) - 1);
    keep = shift >= 128 ? 0 : mag >> shift;
    u128 half = shift > 128 ? 0 : ((u128)1) << (shift - 1);
    if (shift <= 128 && (rem > half || (rem == half && (tail > 0 || (tail == 0 && (keep & 1)))))) keep++;
  } else {
    shift = 0;
  }
  double v = ldexp((double)keep, k + shift);
  return encode(f, n < 0 ? -v : v);
}

/* A double as n * 2^k. */
static void split(double x, i128 *n, int *k) {
  if (x == 0) {
    *n = 0, *k = 0;
    return;
  }
  int e = ilogb(x);
  *k = e - 52;
  *n = (i128)(int64_t)ldexp(x, 52 - e);
}

/* p + c exactly (both doubles), rounded once. */
static uint16_t round_sum(const struct fmt *f, double p, double c) {
  if (isnan(p) || isnan(c) || isinf(p) || isinf(c)) {
    double s = p + c;
    return isnan(s) ? 0x7fff : encode(f, s);
  }
  double s = p + c;
  if (s == 0 && (p == -c)) return encode(f, s); /* an exact zero: its sign as IEEE gives it */
  i128 np, nc;
  int kp, kc, tail = 0;
  split(p, &np, &kp);
  split(c, &nc, &kc);
  if (np == 0) np = nc, kp = kc, nc = 0;
  if (nc != 0 && (kp - kc > 64 || kc - kp > 64)) { /* the smaller only decides ties */
    bool c_small = kp > kc;
    i128 big = c_small ? np : nc, small = c_small ? nc : np;
    kp = c_small ? kp : kc;
    tail = (big < 0) == (small < 0) ? 1 : -1;
    np = big, nc = 0;
  }
  int k = nc != 0 && kc < kp ? kc : kp;
  i128 n = np * ((i128)1 << (kp - k)) + (nc != 0 ? nc * ((i128)1 << (kc - k)) : 0);
  return round_int(f, n, k, tail, s < 0 || (s == 0 && signbit(s)));
}

enum op {
  ADD,
  SUB,
  MUL,
  FMA,
  FMA_RELU,
  FMA_SAT,
  ADD_FTZ,
  MUL_SAT,
  NEG,
  ABS,
  MIN,
  MAX,
  MIN_NAN,
  MAX_NAN,
  EX2,
  TANH,
  FMA_FTZ,
  NEG_FTZ,
  NUM_OPS
};

/* PTX's spelling of each, for f16 and for bf16 (NULL: bf16 has no such form). */
static const char *const f16_form[NUM_OPS] = {
    "add.f16",     "sub.rn.f16",  "mul.f16",        "fma.rn.f16",      "fma.rn.relu.f16", "fma.rn.sat.f16",
    "add.ftz.f16", "mul.sat.f16", "neg.f16",        "abs.f16",         "min.f16",         "max.f16",
    "min.NaN.f16", "max.NaN.f16", "ex2.approx.f16", "tanh.approx.f16", "fma.rn.ftz.f16",  "neg.ftz.f16"};
static const char *const bf16_form[NUM_OPS] = {"add.rn.bf16",
                                               "sub.bf16",
                                               "mul.rn.bf16",
                                               "fma.rn.bf16",
                                               "fma.rn.relu.bf16",
                                               NULL,
                                               NULL,
                                               NULL,
                                               "neg.bf16",
                                               "abs.bf16",
                                               "min.bf16",
                                               "max.bf16",
                                               "min.NaN.bf16",
                                               "max.NaN.bf16",
                                               "ex2.approx.ftz.bf16",
                                               "tanh.approx.bf16",
                                               NULL,
                                               NULL};

static bool subnormal(const struct fmt *f, uint16_t h) { return (h & f->inf) == 0 && (h & 0x7fff) != 0; }
static uint16_t ftz(const struct fmt *f, uint16_t h) { return subnormal(f, h) ? (uint16_t)(h & 0x8000) : h; }

static uint16_t ref_minmax(const struct fmt *f, uint16_t a, uint16_t b, bool max, bool nan) {
  bool na = is_nan(f, a), nb = is_nan(f, b);
  if (na || nb) return (na && nb) || nan ? 0x7fff : na ? b : a;
  double x = value(f, a), y = value(f, b);
  if (x == 0 && y == 0) return (uint16_t)(max ? (a & b) : (a | b)); /* -0 below +0 */
  return (max ? x > y : x < y) || x == y ? a : b;
}

static uint16_t sat(const struct fmt *f, uint16_t r) {
  if (is_nan(f, r)) return 0;
  if (r & 0x8000) return (r & 0x7fff) ? 0 : r;
  return r > f->one ? f->one : r;
}

static uint16_t reference(const struct fmt *f, enum op op, uint16_t a, uint16_t b, uint16_t c) {
  if (op == ADD_FTZ || op == FMA_FTZ || op == NEG_FTZ) a = ftz(f, a), b = ftz(f, b), c = ftz(f, c);
  if (op == EX2 && f == &BF16) a = ftz(f, a);
  double x = value(f, a), y = value(f, b), z = value(f, c);
  uint16_t r;
  switch (op) {
  case ADD:
  case ADD_FTZ: return op == ADD_FTZ ? ftz(f, round_sum(f, x, y)) : round_sum(f, x, y);
  case SUB: return round_sum(f, x, -y);
  case MUL: return round_sum(f, x * y, -0.0);
  case MUL_SAT: return sat(f, round_sum(f, x * y, -0.0));
  case FMA:
  case FMA_FTZ: r = round_sum(f, x * y, z); return op == FMA_FTZ ? ftz(f, r) : r;
  case FMA_RELU: r = round_sum(f, x * y, z); return is_nan(f, r) ? 0x7fff : (r & 0x8000) ? 0 : r;
  case FMA_SAT: return sat(f, round_sum(f, x * y, z));
  case NEG: return a ^ 0x8000;
  case NEG_FTZ: return a ^ 0x8000;
  case ABS: return a & 0x7fff;
  case MIN: return ref_minmax(f, a, b, false, false);
  case MAX: return ref_minmax(f, a, b, true, false);
  case MIN_NAN: return ref_minmax(f, a, b, false, true);
  case MAX_NAN: return ref_minmax(f, a, b, true, true);
  case EX2: r = round_sum(f, exp2(x), -0.0); return f == &BF16 ? ftz(f, r) : r;
  case TANH: return round_sum(f, tanh(x), -0.0);
  default: return 0;
  }
}

/* ---------------------------------------------------------------- kernels */

/*
 * arith_<t>(a, b, c, out, n): element i of a, b and c (16-bit, or 32-bit pairs for the packed
 * types) through every operation: out[i * NUM_OPS + op].
 */
static void arith_kernel(char *buf, size_t size, const char *type, bool x2, bool bf) {
  const char *w = x2 ? "u32" : "u16", *reg = x2 ? "%r" : "%h";
  unsigned bytes = x2 ? 4 : 2;
  size_t len = (size_t)snprintf(
      buf, size,
      ".visible .entry arith_%s(.param .u64 pa, .param .u64 pb, .param .u64 pc, .param .u64 po, .param .u32 pn)\n{\n"
      "  .reg .pred %%p<2>;\n  .reg .b16 %%h<8>;\n  .reg .b32 %%r<12>;\n  .reg .b64 %%rd<16>;\n"
      "  ld.param.u64 %%rd1, [pa];\n  ld.param.u64 %%rd2, [pb];\n  ld.param.u64 %%rd3, [pc];\n"
      "  ld.param.u64 %%rd4, [po];\n  ld.param.u32 %%r1, [pn];\n"
      "  mov.u32 %%r2, %%ctaid.x;\n  mov.u32 %%r3, %%ntid.x;\n  mov.u32 %%r4, %%tid.x;\n"
      "  mad.lo.s32 %%r5, %%r2, %%r3, %%r4;\n  setp.ge.u32 %%p1, %%r5, %%r1;\n  @%%p1 bra DONE;\n"
      "  mul.wide.u32 %%rd5, %%r5, %u;\n  add.s64 %%rd6, %%rd1, %%rd5;\n  add.s64 %%rd7, %%rd2, %%rd5;\n"
      "  add.s64 %%rd8, %%rd3, %%rd5;\n  ld.global.%s %s1, [%%rd6];\n  ld.global.%s %s2, [%%rd7];\n"
      "  ld.global.%s %s3, [%%rd8];\n  mul.wide.u32 %%rd9, %%r5, %u;\n  add.s64 %%rd10, %%rd4, %%rd9;\n",
      type, bytes, w, reg, w, reg, w, reg, bytes * NUM_OPS);
  for (int op = 0; op < NUM_OPS; op++) {
    const char *form = bf ? bf16_form[op] : f16_form[op];
    if (!form) continue;
    char name[40];
    snprintf(name, sizeof name, "%.*s%s", (int)(strlen(form) - (bf ? 4 : 3)), form, type);
    bool unary = op == NEG || op == ABS || op == EX2 || op == TANH || op == NEG_FTZ;
    bool three = op == FMA || op == FMA_RELU || op == FMA_SAT || op == FMA_FTZ;
    len += (size_t)snprintf(buf + len, size - len, "  %s %s4, %s1%s%s;\n  st.global.%s [%%rd10+%u], %s4;\n", name, reg,
                            reg,
                            unary ? ""
                            : x2  ? ", %r2"
                                  : ", %h2",
                            three ? (x2 ? ", %r3" : ", %h3") : "", w, (unsigned)op * bytes, reg);
  }
  snprintf(buf + len, size - len, "DONE:\n  ret;\n}\n");
}

static const char header[] = ".version 7.8\n.target sm_90\n.address_size 64\n";

/* Triples whose fma lands next to a tie of the format: rounding twice (through f32, or through a
 * double without the two-sum's error) gives the other neighbour. */
static const uint16_t fma_f16[][4] = {
    {0x4200, 0x6156, 0x0001, 0x6801}, /* 3 * 683 + 2^-24: 2049 + 2^-24, above the tie: 2050 */
    {0x3c01, 0x3c01, 0x1000, 0x3c03}, /* (1 + 2^-10)^2 + 2^-11: above the tie 1 + 2^-9 + 2^-11 */
};
static const uint16_t fma_bf16[][4] = {
    {0x40e0, 0x4214, 0x8001, 0x4381}, /* 7 * 37 - 2^-133: 259 - 2^-133, below the tie: 258 */
    {0x3f81, 0x3f81, 0x3b80, 0x3f83}, /* (1 + 2^-7)^2 + 2^-8: above the tie: 1 + 3 * 2^-7 */
};

/* Inputs: special values of the format, then values near each other (ties), then random bits. */
static void inputs(const struct fmt *f, uint16_t *a, uint16_t *b, uint16_t *c, size_t n, uint64_t seed) {
  const uint16_t specials[] = {0x0000,
                               0x8000,
                               0x0001,
                               0x8001,
                               (uint16_t)(f->inf - 1),
                               0x03ff,
                               0x0400,
                               f->inf,
                               (uint16_t)(f->inf | 0x8000),
                               0x7fff,
                               (uint16_t)(f->inf + 1),
                               f->one,
                               (uint16_t)(f->one | 0x8000),
                               (uint16_t)(f->one + 1),
                               (uint16_t)(f->one - 1),
                               (uint16_t)(f->inf - 1) | 0x8000};
  size_t ns = sizeof specials / sizeof specials[0], i = 0;
  for (size_t x = 0; x < ns; x++)
    for (size_t y = 0; y < ns && i < n; y++, i++) {
      a[i] = specials[x];
      b[i] = specials[y];
      c[i] = specials[(x + y) % ns];
    }
  const uint16_t(*fix)[4] = f->p == 8 ? fma_bf16 : fma_f16;
  for (size_t k = 0; k < 2 && i < n; k++, i++) a[i] = fix[k][0], b[i] = fix[k][1], c[i] = fix[k][2];
  for (; i < n; i++) {
    uint32_t r = ptx_rand32(&seed), s = ptx_rand32(&seed);
    a[i] = (uint16_t)r;
    b[i] = (uint16_t)(r >> 16);
    c[i] = (uint16_t)s;
    if (s & 0x10000) { /* a product near c, so that fma's sum cancels or ties */
      b[i] = (uint16_t)((b[i] & 0x8000) | f->one | (b[i] & 0x7));
      c[i] = (uint16_t)(a[i] ^ 0x8000 ^ (s >> 20 & 3));
    }
    if ((s & 0x60000) == 0x20000) c[i] = (uint16_t)(c[i] & 0x83ff); /* a small addend */
  }
}

static void check_type(const char *type, bool x2, bool bf) {
  const struct fmt *f = bf ? &BF16 : &F16;
  enum { N = 8192 };
  static char text[16384];
  size_t hl = strlen(header);
  memcpy(text, header, hl);
  arith_kernel(text + hl, sizeof text - hl, type, x2, bf);
  gcap_context *ctx = ptx_sim_context(CHECKS_ALL);
  gcap_module *m = ptx_load_text(ctx, text);
  static uint16_t a[N], b[N], c[N], out[N * NUM_OPS];
  inputs(f, a, b, c, N, bf ? 0xbf16 : 0xf16);
  void *da = ptx_dev(ctx, a, sizeof a), *db = ptx_dev(ctx, b, sizeof b), *dc = ptx_dev(ctx, c, sizeof c);
  void *dout = ptx_dev(ctx, NULL, sizeof out);
  uint32_t n = x2 ? N / 2 : N;
  char kernel[32];
  snprintf(kernel, sizeof kernel, "arith_%s", type);
  assert_ok(ptx_launch_on(ctx, m, kernel, ptx_grid_for(n, 128), GCAP_DIM3(128, 1, 1), 0,
                          (void *[]){&da, &db, &dc, &dout, &n}));
  ptx_get(ctx, out, dout, sizeof out);
  for (size_t i = 0; i < N; i++) {
    /* packed: element pair i/2, half i%2; the results of a pair lie together per operation */
    size_t pair = x2 ? i / 2 : i, half = x2 ? i % 2 : 0, per = x2 ? 2 : 1;
    for (int op = 0; op < NUM_OPS; op++) {
      if (!(bf ? bf16_form[op] : f16_form[op])) continue;
      uint16_t got = out[pair * NUM_OPS * per + (size_t)op * per + half];
      uint16_t want = reference(f, (enum op)op, a[i], b[i], c[i]);
      bool same = got == want || (is_nan(f, got) && is_nan(f, want) && op != NEG && op != ABS && op != NEG_FTZ);
      if (!same)
        fail_msg("%s %s: a 0x%04x b 0x%04x c 0x%04x: got 0x%04x, want 0x%04x", type, bf ? bf16_form[op] : f16_form[op],
                 a[i], b[i], c[i], got, want);
    }
  }
  gcap_context_destroy(ctx);
}

static void f16_arithmetic(void **state) {
  (void)state;
  check_type("f16", false, false);
}
static void f16x2_arithmetic(void **state) {
  (void)state;
  check_type("f16x2", true, false);
}
static void bf16_arithmetic(void **state) {
  (void)state;
  check_type("bf16", false, true);
}
static void bf16x2_arithmetic(void **state) {
  (void)state;
  check_type("bf16x2", true, true);
}

/* The reference itself on those triples. */
static void reference_rounds_fma_once(void **state) {
  (void)state;
  for (size_t i = 0; i < 2; i++) {
    assert_int_equal(reference(&F16, FMA, fma_f16[i][0], fma_f16[i][1], fma_f16[i][2]), fma_f16[i][3]);
    assert_int_equal(reference(&BF16, FMA, fma_bf16[i][0], fma_bf16[i][1], fma_bf16[i][2]), fma_bf16[i][3]);
  }
}

/* ---------------------------------------------------------------- comparisons and moves */

static const char cmp_ptx[] =
    ".version 7.8\n.target sm_90\n.address_size 64\n"
    ".visible .entry cmp(.param .u64 pa, .param .u64 pb, .param .u64 po)\n{\n"
    "  .reg .pred %p<8>;\n  .reg .b16 %h<8>;\n  .reg .b32 %r<16>;\n  .reg .b64 %rd<8>;\n"
    "  ld.param.u64 %rd1, [pa];\n  ld.param.u64 %rd2, [pb];\n  ld.param.u64 %rd3, [po];\n"
    "  mov.u32 %r1, %tid.x;\n  mul.wide.u32 %rd4, %r1, 4;\n  add.s64 %rd5, %rd1, %rd4;\n  add.s64 %rd6, %rd2, %rd4;\n"
    "  ld.global.u32 %r2, [%rd5];\n  ld.global.u32 %r3, [%rd6];\n"
    "  mov.b32 {%h1, %h2}, %r2;\n  mov.b32 {%h3, %h4}, %r3;\n"
    "  mul.wide.u32 %rd4, %r1, 64;\n  add.s64 %rd7, %rd3, %rd4;\n"
    /* 0: setp.lt.f16 p|q (q the complement); 1: setp.lt.f16x2 p|q (lower, upper) */
    "  setp.lt.f16 %p1|%p2, %h1, %h3;\n  selp.u32 %r4, 1, 0, %p1;\n  selp.u32 %r5, 2, 0, %p2;\n"
    "  or.b32 %r4, %r4, %r5;\n  st.global.u32 [%rd7], %r4;\n"
    "  setp.lt.f16x2 %p3|%p4, %r2, %r3;\n  selp.u32 %r4, 1, 0, %p3;\n  selp.u32 %r5, 2, 0, %p4;\n"
    "  or.b32 %r4, %r4, %r5;\n  st.global.u32 [%rd7+4], %r4;\n"
    /* 2: setp.gtu.bf16x2 p|q; 3: setp.equ.ftz.f16 combined: .and with p3 */
    "  setp.gtu.bf16x2 %p3|%p4, %r2, %r3;\n  selp.u32 %r4, 1, 0, %p3;\n  selp.u32 %r5, 2, 0, %p4;\n"
    "  or.b32 %r4, %r4, %r5;\n  st.global.u32 [%rd7+8], %r4;\n"
    "  setp.ge.or.ftz.f16 %p5, %h1, %h3, %p1;\n  selp.u32 %r4, 1, 0, %p5;\n  st.global.u32 [%rd7+12], %r4;\n"
    /* 4: set.gt.f16x2.f16x2; 5: set.gt.u32.f16x2; 6: set.lt.bf16x2.bf16x2; 7: set.ne.u32.bf16 */
    "  set.gt.f16x2.f16x2 %r6, %r2, %r3;\n  st.global.u32 [%rd7+16], %r6;\n"
    "  set.gt.u32.f16x2 %r7, %r2, %r3;\n  st.global.u32 [%rd7+20], %r7;\n"
    "  set.lt.bf16x2.bf16x2 %r8, %r2, %r3;\n  st.global.u32 [%rd7+24], %r8;\n"
    "  set.ne.u32.bf16 %r9, %h2, %h4;\n  st.global.u32 [%rd7+28], %r9;\n"
    /* 8: setp.nan.bf16 into selp.b16; 9: packed move back {%h4, %h1} and selp.f16 */
    "  setp.nan.bf16 %p6, %h1, %h3;\n  selp.b16 %h5, %h1, %h3, %p6;\n  cvt.u32.u16 %r10, %h5;\n"
    "  st.global.u32 [%rd7+32], %r10;\n"
    "  selp.f16 %h6, %h4, %h2, %p1;\n  mov.b32 %r11, {%h6, %h1};\n  st.global.u32 [%rd7+36], %r11;\n"
    "  mov.b16 %h7, %h2;\n  st.global.b16 [%rd7+40], %h7;\n  st.global.f16 [%rd7+42], %h1;\n"
    "  ld.global.bf16 %h7, [%rd7+42];\n  st.global.u16 [%rd7+44], %h7;\n"
    /* 12: a scope with `.reg.b32` written fused, as CUDA's half header writes it (hexp2) */
    "  {.reg.b32 f, g;\n  .reg.b16 r;\n  mov.b16 r, %h1;\n  cvt.f32.f16 f, r;\n  add.f32 g, f, f;\n"
    "  cvt.rn.f16.f32 r, g;\n  st.global.u16 [%rd7+48], r;\n  }\n"
    "  ret;\n}\n";

static bool cmp_lt(double x, double y) { return x < y; }

static void comparisons(void **state) {
  (void)state;
  gcap_context *ctx = ptx_sim_context(CHECKS_ALL);
  gcap_module *m = ptx_load_text(ctx, cmp_ptx);
  enum { N = 256 };
  static uint32_t a[N], b[N], out[N * 16];
  uint64_t seed = 77;
  const uint16_t special[] = {0x0000, 0x8000, 0x0001, 0x8001, 0x3c00, 0xbc00,
                              0x7c00, 0xfc00, 0x7e00, 0x3f80, 0x7fc0, 0x7f80};
  for (size_t i = 0; i < N; i++) {
    uint32_t r = ptx_rand32(&seed), s = ptx_rand32(&seed);
    if (i < 144)
      r = special[i % 12] | (uint32_t)special[(i / 12) % 12] << 16,
      s = special[(i / 12) % 12] | (uint32_t)special[i % 12] << 16;
    if (i % 5 == 0) s = r; /* equal pairs */
    a[i] = r, b[i] = s;
  }
  void *da = ptx_dev(ctx, a, sizeof a), *db = ptx_dev(ctx, b, sizeof b), *dout = ptx_dev(ctx, NULL, sizeof out);
  assert_ok(ptx_launch_on(ctx, m, "cmp", GCAP_DIM3(1, 1, 1), GCAP_DIM3(N, 1, 1), 0, (void *[]){&da, &db, &dout}));
  ptx_get(ctx, out, dout, sizeof out);
  for (size_t i = 0; i < N; i++) {
    const uint32_t *o = &out[16 * i];
    uint16_t a0 = (uint16_t)a[i], a1 = (uint16_t)(a[i] >> 16), b0 = (uint16_t)b[i], b1 = (uint16_t)(b[i] >> 16);
    double fa0 = value(&F16, a0), fa1 = value(&F16, a1), fb0 = value(&F16, b0), fb1 = value(&F16, b1);
    bool lt = cmp_lt(fa0, fb0);
    assert_int_equal(o[0], (lt ? 1u : 0u) | (lt ? 0u : 2u));
    assert_int_equal(o[1], (lt ? 1u : 0u) | (cmp_lt(fa1, fb1) ? 2u : 0u));
    double ga0 = value(&BF16, a0), ga1 = value(&BF16, a1), gb0 = value(&BF16, b0), gb1 = value(&BF16, b1);
    bool gtu0 = isnan(ga0) || isnan(gb0) || ga0 > gb0, gtu1 = isnan(ga1) || isnan(gb1) || ga1 > gb1;
    assert_int_equal(o[2], (gtu0 ? 1u : 0u) | (gtu1 ? 2u : 0u));
    double z0 = value(&F16, ftz(&F16, a0)), zb = value(&F16, ftz(&F16, b0));
    assert_int_equal(o[3], (z0 >= zb) || lt ? 1u : 0u);
    bool gt0 = fa0 > fb0, gt1 = fa1 > fb1;
    assert_int_equal(o[4], (gt0 ? 0x3c00u : 0) | (gt1 ? 0x3c000000u : 0));
    assert_int_equal(o[5], (gt0 ? 0xffffu : 0) | (gt1 ? 0xffff0000u : 0));
    assert_int_equal(o[6], (ga0 < gb0 ? 0x3f80u : 0) | (ga1 < gb1 ? 0x3f800000u : 0));
    assert_int_equal(o[7], !isnan(ga1) && !isnan(gb1) && ga1 != gb1 ? 0xffffffffu : 0);
    assert_int_equal(o[8], isnan(ga0) || isnan(gb0) ? a0 : b0);
    assert_int_equal(o[9], (lt ? b1 : a1) | (uint32_t)a0 << 16);
    assert_int_equal(o[10] & 0xffff, a1);
    assert_int_equal(o[10] >> 16, a0);
    assert_int_equal(o[11] & 0xffff, a0);
    uint16_t twice = reference(&F16, ADD, a0, a0, 0);
    assert_true((o[12] & 0xffff) == twice || (is_nan(&F16, (uint16_t)o[12]) && is_nan(&F16, twice)));
  }
  gcap_context_destroy(ctx);
}

/* ---------------------------------------------------------------- atomics */

/*
 * Every thread of two blocks adds to one address: atom.add.noftz.f16x2 (1.0, 2.0) and .bf16x2
 * (1.0, 0.5) in global memory, returning the old values; red.add.noftz.f16 and .bf16 (1.0) in
 * global memory; the same in shared memory, whose totals thread 0 writes out. Sums of these stay
 * exact, so the order does not matter. round[t]: atom.add.noftz.f16x2 of b[t] onto a[t] for one
 * thread each (rounding of each half).
 */
static const char atom_ptx[] =
    ".version 7.8\n.target sm_90\n.address_size 64\n"
    ".visible .entry atoms(.param .u64 pg, .param .u64 pold, .param .u64 pa, .param .u64 pb)\n{\n"
    "  .reg .pred %p<2>;\n  .reg .b16 %h<8>;\n  .reg .b32 %r<16>;\n  .reg .b64 %rd<16>;\n"
    "  .shared .align 4 .b32 sh[4];\n"
    "  ld.param.u64 %rd1, [pg];\n  ld.param.u64 %rd2, [pold];\n  ld.param.u64 %rd11, [pa];\n  ld.param.u64 %rd12, [pb];\n"
    "  mov.u32 %r1, %tid.x;\n  mov.u32 %r2, %ctaid.x;\n  mov.u32 %r3, %ntid.x;\n  mad.lo.s32 %r4, %r2, %r3, %r1;\n"
    "  setp.ne.u32 %p1, %r1, 0;\n"
    "  @%p1 bra INIT_DONE;\n  st.shared.u32 [sh], 0;\n  st.shared.u32 [sh+4], 0;\n  st.shared.u32 [sh+8], 0;\n"
    "INIT_DONE:\n  bar.sync 0;\n"
    "  mov.b32 %r5, 0x40003c00;\n  atom.global.add.noftz.f16x2 %r6, [%rd1], %r5;\n"
    "  mov.b32 %r7, 0x3f003f80;\n  atom.add.noftz.bf16x2 %r8, [%rd1+4], %r7;\n"
    "  mov.b16 %h1, 0x3c00;\n  red.global.add.noftz.f16 [%rd1+8], %h1;\n"
    "  mov.b16 %h2, 0x3f80;\n  red.global.add.noftz.bf16 [%rd1+10], %h2;\n"
    "  atom.shared.add.noftz.f16x2 %r9, [sh], %r5;\n  red.shared.add.noftz.bf16x2 [sh+4], %r7;\n"
    "  atom.shared.add.noftz.f16 %h3, [sh+8], %h1;\n  atom.shared.add.noftz.bf16 %h4, [sh+10], %h2;\n"
    "  mul.wide.u32 %rd3, %r4, 8;\n  add.s64 %rd4, %rd2, %rd3;\n  st.global.u32 [%rd4], %r6;\n  st.global.u32 [%rd4+4], %r8;\n"
    "  mul.wide.u32 %rd5, %r4, 4;\n  add.s64 %rd6, %rd11, %rd5;\n  add.s64 %rd7, %rd12, %rd5;\n"
    "  ld.global.u32 %r10, [%rd7];\n  atom.global.add.noftz.f16x2 %r11, [%rd6], %r10;\n"
    "  add.s64 %rd8, %rd11, 16384;\n  add.s64 %rd8, %rd8, %rd5;\n  atom.global.add.noftz.bf16x2 %r12, [%rd8], %r10;\n"
    "  bar.sync 0;\n  @%p1 bra DONE;\n"
    "  ld.shared.u32 %r13, [sh];\n  ld.shared.u32 %r14, [sh+4];\n  ld.shared.u32 %r15, [sh+8];\n"
    "  mul.wide.u32 %rd9, %r2, 12;\n  add.s64 %rd10, %rd1, %rd9;\n"
    "  st.global.u32 [%rd10+12], %r13;\n  st.global.u32 [%rd10+16], %r14;\n  st.global.u32 [%rd10+20], %r15;\n"
    "DONE:\n  ret;\n}\n"
    /* the CAS loop nvcc emits for atomicAdd(__nv_bfloat16 *) at sm_80 */
    ".visible .entry cas16(.param .u64 pg)\n{\n"
    "  .reg .pred %p<2>;\n  .reg .b16 %h<8>;\n  .reg .b64 %rd<2>;\n"
    "  ld.param.u64 %rd1, [pg];\n  ld.global.u16 %h1, [%rd1];\n"
    "LOOP:\n  mov.b16 %h5, 0x3f80;\n  fma.rn.bf16 %h2, %h1, %h5, %h5;\n"
    "  atom.global.cas.b16 %h3, [%rd1], %h1, %h2;\n  setp.ne.s16 %p1, %h3, %h1;\n  mov.u16 %h1, %h3;\n"
    "  @%p1 bra LOOP;\n  ret;\n}\n";

static void atomics(void **state) {
  (void)state;
  gcap_context *ctx = ptx_sim_context(CHECKS_ALL);
  gcap_module *m = ptx_load_text(ctx, atom_ptx);
  enum { T = 128, B = 2, N = T * B };
  static uint32_t old[N * 2], ra[8192], rb[N], got[8192];
  uint32_t g[12] = {0};
  uint64_t seed = 99;
  for (size_t i = 0; i < N; i++) {
    ra[i] = ptx_rand32(&seed);
    ra[4096 + i] = ptx_rand32(&seed);
    rb[i] = ptx_rand32(&seed);
  }
  void *dg = ptx_dev(ctx, g, sizeof g), *dold = ptx_dev(ctx, NULL, sizeof old), *da = ptx_dev(ctx, ra, sizeof ra),
       *db = ptx_dev(ctx, rb, sizeof rb);
  assert_ok(
      ptx_launch_on(ctx, m, "atoms", GCAP_DIM3(B, 1, 1), GCAP_DIM3(T, 1, 1), 0, (void *[]){&dg, &dold, &da, &db}));
  ptx_get(ctx, g, dg, sizeof g);
  ptx_get(ctx, old, dold, sizeof old);
  ptx_get(ctx, got, da, sizeof got);
  assert_int_equal(g[0], encode(&F16, N) | (uint32_t)encode(&F16, 2 * N) << 16);
  assert_int_equal(g[1], encode(&BF16, N) | (uint32_t)encode(&BF16, N / 2) << 16);
  assert_int_equal(g[2], encode(&F16, N) | (uint32_t)encode(&BF16, N) << 16);
  for (unsigned b = 0; b < B; b++) {
    assert_int_equal(g[3 + 3 * b], encode(&F16, T) | (uint32_t)encode(&F16, 2 * T) << 16);
    assert_int_equal(g[4 + 3 * b], encode(&BF16, T) | (uint32_t)encode(&BF16, T / 2) << 16);
    assert_int_equal(g[5 + 3 * b], encode(&F16, T) | (uint32_t)encode(&BF16, T) << 16);
  }
  /* the old values: each partial sum 0 .. N-1 once */
  static bool seen[N], seen_bf[N];
  for (size_t i = 0; i < N; i++) {
    double lo = value(&F16, (uint16_t)old[2 * i]), hi = value(&F16, (uint16_t)(old[2 * i] >> 16));
    assert_true(lo >= 0 && lo < N && hi == 2 * lo && !seen[(size_t)lo]);
    seen[(size_t)lo] = true;
    double blo = value(&BF16, (uint16_t)old[2 * i + 1]), bhi = value(&BF16, (uint16_t)(old[2 * i + 1] >> 16));
    assert_true(blo >= 0 && blo < N && bhi == blo / 2 && !seen_bf[(size_t)blo]);
    seen_bf[(size_t)blo] = true;
  }
  for (size_t i = 0; i < N; i++)
    for (unsigned h = 0; h < 2; h++) {
      uint16_t x = (uint16_t)(ra[i] >> (16 * h)), y = (uint16_t)(rb[i] >> (16 * h));
      uint16_t want = reference(&F16, ADD, x, y, 0), r = (uint16_t)(got[i] >> (16 * h));
      if (!(r == want || (is_nan(&F16, r) && is_nan(&F16, want))))
        fail_msg("f16 atom 0x%04x + 0x%04x: 0x%04x, want 0x%04x", x, y, r, want);
      x = (uint16_t)(ra[4096 + i] >> (16 * h));
      want = reference(&BF16, ADD, x, y, 0), r = (uint16_t)(got[4096 + i] >> (16 * h));
      if (!(r == want || (is_nan(&BF16, r) && is_nan(&BF16, want))))
        fail_msg("bf16 atom 0x%04x + 0x%04x: 0x%04x, want 0x%04x", x, y, r, want);
    }
  /* 64 lanes of a CAS loop each add 1.0 to a bf16 */
  uint16_t zero = 0, sum;
  void *dc = ptx_dev(ctx, &zero, sizeof zero);
  assert_ok(ptx_launch_on(ctx, m, "cas16", GCAP_DIM3(1, 1, 1), GCAP_DIM3(64, 1, 1), 0, (void *[]){&dc}));
  ptx_get(ctx, &sum, dc, sizeof sum);
  assert_int_equal(sum, encode(&BF16, 64));
  gcap_context_destroy(ctx);
}

/* ---------------------------------------------------------------- cvt .satfinite and .tf32 */

/* cvts(in, out): for in[i], 8 words at out + 32 * i. */
static const char cvt_ptx[] =
    ".version 7.8\n.target sm_90\n.address_size 64\n"
    ".visible .entry cvts(.param .u64 pin, .param .u64 pout)\n{\n"
    "  .reg .b16 %h<4>;\n  .reg .b32 %r<12>;\n  .reg .f32 %f<2>;\n  .reg .b64 %rd<8>;\n"
    "  ld.param.u64 %rd1, [pin];\n  ld.param.u64 %rd2, [pout];\n  mov.u32 %r1, %tid.x;\n  mov.u32 %r2, %ctaid.x;\n"
    "  mad.lo.s32 %r1, %r2, 256, %r1;\n  mul.wide.u32 %rd3, %r1, 4;\n  add.s64 %rd4, %rd1, %rd3;\n"
    "  ld.global.f32 %f1, [%rd4];\n  mul.wide.u32 %rd5, %r1, 32;\n  add.s64 %rd6, %rd2, %rd5;\n"
    "  cvt.rna.tf32.f32 %r3, %f1;\n  st.global.u32 [%rd6], %r3;\n"
    "  cvt.rn.tf32.f32 %r4, %f1;\n  st.global.u32 [%rd6+4], %r4;\n"
    "  cvt.rz.tf32.f32 %r5, %f1;\n  st.global.u32 [%rd6+8], %r5;\n"
    "  cvt.rna.satfinite.tf32.f32 %r6, %f1;\n  st.global.u32 [%rd6+12], %r6;\n"
    "  cvt.rn.relu.satfinite.tf32.f32 %r7, %f1;\n  st.global.u32 [%rd6+16], %r7;\n"
    "  cvt.rn.satfinite.f16.f32 %h1, %f1;\n  st.global.u16 [%rd6+20], %h1;\n"
    "  cvt.rz.satfinite.bf16.f32 %h2, %f1;\n  st.global.u16 [%rd6+22], %h2;\n"
    "  cvt.rn.satfinite.relu.f16x2.f32 %r8, %f1, %f1;\n  st.global.u32 [%rd6+24], %r8;\n"
    "  cvt.rn.satfinite.bf16x2.f32 %r9, %f1, 0fFF800000;\n  st.global.u32 [%rd6+28], %r9;\n"
    "  ret;\n}\n";

enum { TF_RNA, TF_RN, TF_RZ };

static uint32_t ref_tf32(uint32_t u, int mode, bool satfinite, bool relu) {
  uint32_t sign = u & 0x80000000u, mag = u & 0x7fffffffu;
  if (mag > 0x7f800000u) return 0x7fffffffu;
  double x = ptx_f32_from(mag);
  /* subnormals (and zero): the spacing of the smallest normals' tf32 */
  double ulp = mag < 0x00800000u ? ldexp(1, -136) : ldexp(1, ilogb(x) - 10);
  double q = x / ulp, r = mode == TF_RZ ? floor(q) : mode == TF_RNA ? floor(q + 0.5) : nearbyint(q);
  double v = mag == 0x7f800000u ? x : r * ulp;
  uint32_t out = v >= ldexp(1, 128) ? 0x7f800000u : ptx_f32_bits((float)v);
  if (satfinite && out == 0x7f800000u) out = 0x7f7fe000u;
  return relu && sign ? 0 : sign | out;
}

/* f16/bf16 of an f32, to nearest or toward zero, with .satfinite (and .relu). */
static uint16_t ref_narrow(const struct fmt *f, uint32_t u, bool rz, bool relu) {
  float x = ptx_f32_from(u);
  if (isnan(x)) return 0x7fff;
  if (relu && signbit(x)) x = 0;
  uint16_t h;
  if (rz) {
    uint16_t lo = round_sum(f, x, -0.0);
    h = fabs(value(f, lo)) > fabs((double)x) ? (uint16_t)(lo - 1) : lo; /* one step back toward zero */
    if ((lo & 0x7fff) == 0) h = lo;
  } else {
    h = round_sum(f, x, -0.0);
  }
  if ((h & 0x7fff) >= f->inf) h = (uint16_t)((h & 0x8000) | (f->inf - 1));
  return h;
}

static void satfinite_and_tf32(void **state) {
  (void)state;
  gcap_context *ctx = ptx_sim_context(CHECKS_ALL);
  gcap_module *m = ptx_load_text(ctx, cvt_ptx);
  enum { N = 4096 };
  static uint32_t in[N], out[N * 8];
  static const uint32_t fixed[] = {0x3f801000u, 0x3f803000u, 0x3f802fffu, 0xbf801000u, 0x7f7fffffu, 0xff7ff000u,
                                   0x7f800000u, 0xff800000u, 0x7fc00000u, 0x00000001u, 0x80001000u, 0x00001fffu,
                                   0x477ff000u, 0x477fe000u, 0xc77ff000u, 0x7f7f8000u, 0x00000000u, 0x80000000u};
  size_t nf = sizeof fixed / sizeof fixed[0];
  memcpy(in, fixed, sizeof fixed);
  uint64_t seed = 5;
  for (size_t i = nf; i < N; i++) in[i] = ptx_rand32(&seed);
  void *din = ptx_dev(ctx, in, sizeof in), *dout = ptx_dev(ctx, NULL, sizeof out);
  assert_ok(ptx_launch_on(ctx, m, "cvts", GCAP_DIM3(N / 256, 1, 1), GCAP_DIM3(256, 1, 1), 0, (void *[]){&din, &dout}));
  ptx_get(ctx, out, dout, sizeof out);
  for (size_t i = 0; i < N; i++) {
    const uint32_t *o = &out[8 * i];
    uint32_t u = in[i];
    uint32_t want[8] = {ref_tf32(u, TF_RNA, false, false),
                        ref_tf32(u, TF_RN, false, false),
                        ref_tf32(u, TF_RZ, false, false),
                        ref_tf32(u, TF_RNA, true, false),
                        ref_tf32(u, TF_RN, true, true),
                        ref_narrow(&F16, u, false, false) | (uint32_t)ref_narrow(&BF16, u, true, false) << 16,
                        ref_narrow(&F16, u, false, true) * 0x10001u,
                        (uint32_t)ref_narrow(&BF16, u, false, false) << 16 | 0xff7fu};
    for (int k = 0; k < 8; k++) {
      /* a NaN's payload is the conversion's choice: any NaN of the half's format will do */
      const struct fmt *lo = k == 7 ? &BF16 : &F16, *hi = k == 5 || k == 7 ? &BF16 : &F16;
      bool nan_ok = k >= 5 && is_nan(lo, (uint16_t)o[k]) == is_nan(lo, (uint16_t)want[k]) &&
                    is_nan(hi, (uint16_t)(o[k] >> 16)) == is_nan(hi, (uint16_t)(want[k] >> 16)) &&
                    (is_nan(lo, (uint16_t)o[k]) || (uint16_t)o[k] == (uint16_t)want[k]) &&
                    (is_nan(hi, (uint16_t)(o[k] >> 16)) || o[k] >> 16 == want[k] >> 16);
      if (o[k] != want[k] && !nan_ok) fail_msg("in 0x%08x, result %d: 0x%08x, want 0x%08x", u, k, o[k], want[k]);
    }
  }
  gcap_context_destroy(ctx);
}

/* ---------------------------------------------------------------- what is refused */

/* Forms the PTX ISA does not have fail the load (INVALID_PTX) naming the instruction; fp8
 * conversions load, and only the kernel using one is refused at launch (NOT_SUPPORTED). */
static void refusals(void **state) {
  (void)state;
  static const struct {
    const char *line, *message;
  } bad[] = {
      {"add.rz.f16 %h1, %h2, %h3", "add.f16 rounds to nearest only (.rn)"},
      {"add.ftz.bf16 %h1, %h2, %h3", "add.bf16 takes no .ftz"},
      {"fma.rn.sat.relu.f16 %h1, %h2, %h3, %h2", "fma takes .sat or .relu, not both"},
      {"ex2.f16 %h1, %h2", "ex2.f16 needs .approx"},
      {"max.relu.f16x2 %r1, %r2, %r3", "max.f16x2 takes no .relu"},
      {"setp.lo.f16 %p1, %h2, %h3", ".lo, .ls, .hi and .hs compare integers"},
      {"set.gt.f16.f16x2 %h1, %r2, %r3", "set.f16.f16x2: no such destination type"},
      {"atom.global.min.f16 %h1, [%rd1], %h2", "the only operation on .f16 is add"},
      {"cvt.rm.satfinite.bf16.f32 %h1, %f1", "cvt.satfinite converts .f32"},
      {"cvt.rna.relu.tf32.f32 %r1, %f1", "cvt.rna.tf32.f32 takes no .relu"},
  };
  gcap_context *ctx = ptx_sim_context(CHECKS_ALL);
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    char text[1024];
    snprintf(text, sizeof text,
             "%s.visible .entry k(.param .u64 p)\n{\n  .reg .pred %%p<2>;\n  .reg .b16 %%h<4>;\n"
             "  .reg .b32 %%r<4>;\n  .reg .f32 %%f<2>;\n  .reg .b64 %%rd<2>;\n  ld.param.u64 %%rd1, [p];\n"
             "  %s;\n  ret;\n}\n",
             header, bad[i].line);
    gcap_module_desc d = {.image = text, .image_size = strlen(text) + 1};
    gcap_module *m = NULL;
    assert_int_equal(gcap_module_load(ctx, &d, &m), GCAP_ERROR_INVALID_PTX);
    const char *msg = gcap_last_error_message();
    if (!strstr(msg, bad[i].message) || !strstr(msg, "gcap_module_load"))
      fail_msg("%s: message \"%s\" lacks \"%s\"", bad[i].line, msg, bad[i].message);
  }
  static const char fp8[] = ".version 7.8\n.target sm_90\n.address_size 64\n"
                            ".visible .entry ok(.param .u64 p)\n{\n  ret;\n}\n"
                            ".visible .entry to_fp8(.param .u64 p)\n{\n  .reg .b16 %h<2>;\n  .reg .f32 %f<2>;\n"
                            "  mov.f32 %f1, 0f3F800000;\n  cvt.rn.satfinite.e4m3x2.f64 %h1, %f1;\n  ret;\n}\n"
                            ".visible .entry vec_red(.param .u64 p)\n{\n  .reg .b32 %r<2>;\n  .reg .b64 %rd<2>;\n"
                            "  ld.param.u64 %rd1, [p];\n  mov.b32 %r1, 0;\n"
                            "  red.global.add.noftz.v2.f16x2 [%rd1], {%r1, %r1};\n  ret;\n}\n"
                            ".visible .entry set_f16(.param .u64 p)\n{\n  .reg .b16 %h<2>;\n  .reg .f32 %f<2>;\n"
                            "  mov.f32 %f1, 0f3F800000;\n  set.gt.f16.f32 %h1, %f1, %f1;\n  ret;\n}\n";
  gcap_module *m = ptx_load_text(ctx, fp8);
  uint64_t zero = 0;
  void *p = &zero;
  assert_ok(ptx_launch_on(ctx, m, "ok", GCAP_DIM3(1, 1, 1), GCAP_DIM3(1, 1, 1), 0, (void *[]){&p}));
  assert_int_equal(ptx_launch_on(ctx, m, "to_fp8", GCAP_DIM3(1, 1, 1), GCAP_DIM3(1, 1, 1), 0, (void *[]){&p}),
                   GCAP_ERROR_NOT_SUPPORTED);
  assert_non_null(strstr(gcap_last_error_message(), "cvt.e4m3x2.f64 is not supported yet"));
  assert_int_equal(ptx_launch_on(ctx, m, "vec_red", GCAP_DIM3(1, 1, 1), GCAP_DIM3(1, 1, 1), 0, (void *[]){&p}),
                   GCAP_ERROR_NOT_SUPPORTED);
  assert_non_null(strstr(gcap_last_error_message(), "vector atomics (.v2, .v4, .v8) are not supported yet"));
  assert_int_equal(ptx_launch_on(ctx, m, "set_f16", GCAP_DIM3(1, 1, 1), GCAP_DIM3(1, 1, 1), 0, (void *[]){&p}),
                   GCAP_ERROR_NOT_SUPPORTED);
  assert_non_null(strstr(gcap_last_error_message(), "set.f16.f32 is not supported yet"));
  gcap_context_destroy(ctx);
}

/* ---------------------------------------------------------------- fp8 conversions */

/* fp8(in, out): for in[i], 8 bytes at out + 8 * i: e4m3x2 and e5m2x2 of (in[i], -in[i]) from f32,
 * .relu e4m3x2 of (in[i], 1.0); e5m2x2 from the f16x2 of in[i]; back: the f16x2 of the e4m3x2. */
static const char fp8_ptx[] =
    ".version 7.8\n.target sm_90\n.address_size 64\n"
    ".visible .entry fp8(.param .u64 pin, .param .u64 pout)\n{\n"
    "  .reg .b16 %h<8>;\n  .reg .b32 %r<8>;\n  .reg .f32 %f<4>;\n  .reg .b64 %rd<8>;\n"
    "  ld.param.u64 %rd1, [pin];\n  ld.param.u64 %rd2, [pout];\n  mov.u32 %r1, %tid.x;\n  mov.u32 %r2, %ctaid.x;\n"
    "  mad.lo.s32 %r1, %r2, 256, %r1;\n  mul.wide.u32 %rd3, %r1, 4;\n  add.s64 %rd4, %rd1, %rd3;\n"
    "  ld.global.f32 %f1, [%rd4];\n  neg.f32 %f2, %f1;\n  mul.wide.u32 %rd5, %r1, 12;\n  add.s64 %rd6, %rd2, %rd5;\n"
    "  cvt.rn.satfinite.e4m3x2.f32 %h1, %f1, %f2;\n  st.global.u16 [%rd6], %h1;\n"
    "  cvt.rn.satfinite.e5m2x2.f32 %h2, %f1, %f2;\n  st.global.u16 [%rd6+2], %h2;\n"
    "  cvt.rn.satfinite.relu.e4m3x2.f32 %h3, %f1, 0f3F800000;\n  st.global.u16 [%rd6+4], %h3;\n"
    "  cvt.rn.f16x2.f32 %r3, %f1, %f2;\n  cvt.rn.satfinite.e5m2x2.f16x2 %h4, %r3;\n  st.global.u16 [%rd6+6], %h4;\n"
    "  cvt.rn.f16x2.e4m3x2 %r4, %h1;\n  st.global.u32 [%rd6+8], %r4;\n"
    "  ret;\n}\n";

/* The value of an 8-bit float code (NaN for its NaN codes). */
static double fp8_value(bool e4m3, unsigned code) {
  unsigned mb = e4m3 ? 3 : 2, bias = e4m3 ? 7 : 15, e = (code >> mb) & (e4m3 ? 15 : 31), m = code & ((1u << mb) - 1);
  double v;
  if (e4m3 && (code & 0x7f) == 0x7f) return NAN;
  if (!e4m3 && e == 31) v = m ? NAN : INFINITY;
  else if (e == 0) v = ldexp(m, 1 - (int)bias - (int)mb);
  else v = ldexp(m + (1u << mb), (int)e - (int)bias - (int)mb);
  return (code & 0x80) ? -v : v;
}

/* By search: the finite code nearest x, ties to the even code; .satfinite; NaN 0x7f. */
static unsigned ref_fp8(bool e4m3, double x, bool relu) {
  if (isnan(x)) return 0x7f;
  if (relu && signbit(x)) return 0;
  unsigned max = e4m3 ? 0x7e : 0x7b, best = 0;
  double a = fabs(x), dist = INFINITY;
  if (a >= fp8_value(e4m3, max)) return (signbit(x) ? 0x80u : 0) | max; /* (distances would round alike) */
  for (unsigned c = 0; c <= max; c++) {
    double d = fabs(fp8_value(e4m3, c) - a);
    if (d < dist || (d == dist && !(c & 1))) best = c, dist = d;
  }
  return (signbit(x) ? 0x80u : 0) | best;
}

static void fp8_conversions(void **state) {
  (void)state;
  gcap_context *ctx = ptx_sim_context(CHECKS_ALL);
  gcap_module *m = ptx_load_text(ctx, fp8_ptx);
  enum { N = 4096 };
  static uint32_t in[N];
  static uint16_t out[N * 6];
  static const float fixed[] = {0.0f,     -0.0f,      1.0f,    448.0f,  464.0f,   465.0f,     480.0f,
                                57344.0f, 61440.0f,   1e30f,   0x1p-9f, 0x1p-10f, 0x1.8p-10f, 0x1p-16f,
                                0x1p-17f, 0x1.1p-17f, 1.0625f, 1.1875f, 0.1f,     3.3f};
  size_t nf = sizeof fixed / sizeof fixed[0];
  for (size_t i = 0; i < nf; i++) in[i] = ptx_f32_bits(fixed[i]);
  in[nf] = 0x7f800000u, in[nf + 1] = 0x7fc00000u;
  uint64_t seed = 8;
  for (size_t i = nf + 2; i < N; i++) { /* values of the formats' range, and some beyond */
    uint32_t r = ptx_rand32(&seed);
    in[i] = (r & 0x807fffffu) | (uint32_t)(100 + (r >> 23) % 50) << 23;
  }
  void *din = ptx_dev(ctx, in, sizeof in), *dout = ptx_dev(ctx, NULL, sizeof out);
  assert_ok(ptx_launch_on(ctx, m, "fp8", GCAP_DIM3(N / 256, 1, 1), GCAP_DIM3(256, 1, 1), 0, (void *[]){&din, &dout}));
  ptx_get(ctx, out, dout, sizeof out);
  for (size_t i = 0; i < N; i++) {
    const uint16_t *o = &out[6 * i];
    double x = ptx_f32_from(in[i]);
    unsigned e4 = ref_fp8(true, x, false) << 8 | ref_fp8(true, -x, false);
    unsigned e5 = ref_fp8(false, x, false) << 8 | ref_fp8(false, -x, false);
    unsigned relu = ref_fp8(true, x, true) << 8 | ref_fp8(true, 1.0, true);
    uint16_t hx = round_sum(&F16, x, -0.0), hy = round_sum(&F16, -x, -0.0);
    unsigned e5h = ref_fp8(false, value(&F16, hx), false) << 8 | ref_fp8(false, value(&F16, hy), false);
    if (o[0] != e4 || o[1] != e5 || o[2] != relu || o[3] != e5h)
      fail_msg("in 0x%08x: 0x%04x 0x%04x 0x%04x 0x%04x, want 0x%04x 0x%04x 0x%04x 0x%04x", in[i], o[0], o[1], o[2],
               o[3], e4, e5, relu, e5h);
    for (int h = 0; h < 2; h++) { /* back to f16, exactly */
      unsigned code = (e4 >> (8 * h)) & 0xff;
      double v = fp8_value(true, code), got = value(&F16, o[4 + h]);
      if (!(got == v || (isnan(v) && isnan(got))) || signbit(got) != signbit(v))
        fail_msg("e4m3 0x%02x to f16: 0x%04x", code, o[4 + h]);
    }
  }
  gcap_context_destroy(ctx);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(reference_rounds_fma_once),
      cmocka_unit_test(f16_arithmetic),
      cmocka_unit_test(f16x2_arithmetic),
      cmocka_unit_test(bf16_arithmetic),
      cmocka_unit_test(bf16x2_arithmetic),
      cmocka_unit_test(comparisons),
      cmocka_unit_test(atomics),
      cmocka_unit_test(satfinite_and_tf32),
      cmocka_unit_test(refusals),
      cmocka_unit_test(fp8_conversions),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
