/*
 * The PTX corpus (tests/ptx, nvcc output of the .cu files there) run on the simulator's PTX
 * engine with every check on, each kernel against a C reference: integers exactly, IEEE
 * floating-point operations bit for bit (a NaN matches any NaN: PTX does not keep payloads),
 * approximate operations within the error bound the PTX ISA or the CUDA Programming Guide
 * gives them. Sizes leave partial warps and several blocks in most launches.
 */
#define _POSIX_C_SOURCE 200809L

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <fenv.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common.h"
#include "ptx_util.h"

/* The references round each operation separately unless they call fma (GCC does not contract in ISO C mode). */
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#endif

#define ARGS(...) ((void *[]){__VA_ARGS__})
#define COUNT(a) (sizeof(a) / sizeof((a)[0]))
#define DIM1(x) GCAP_DIM3((x), 1, 1)

static struct ptx_fixture *fixture(void **state) { return *state; }

/* Two's complement reinterpretations (what every compiler this builds with does). */
static int32_t s32(uint32_t u) { return (int32_t)u; }
static int64_t s64(uint64_t u) { return (int64_t)u; }

static int32_t sar32(int32_t x, unsigned s) { return x < 0 ? s32(~(~(uint32_t)x >> s)) : s32((uint32_t)x >> s); }
static int64_t sar64(int64_t x, unsigned s) { return x < 0 ? s64(~(~(uint64_t)x >> s)) : s64((uint64_t)x >> s); }

/* ================================================================== integers */

enum { OPS_I32 = 24, OPS_I64 = 20 };

static const int32_t i32_specials[] = {0,         1,         -1,         2,           -2,    7,     -7,
                                       31,        32,        33,         1000,        -1000, 65535, 65536,
                                       INT32_MAX, INT32_MIN, 0x12345678, -0x12345678, 46341, -46341};

/* Every pair of the special values, then random ones; no zero divisor, no INT_MIN / -1. */
static void i32_inputs(int32_t *a, int32_t *b, size_t n) {
  const size_t k = COUNT(i32_specials);
  uint64_t st = 0x9e3779b97f4a7c15ull;
  for (size_t i = 0; i < n; i++) {
    if (i < k * k) {
      a[i] = i32_specials[i % k];
      b[i] = i32_specials[i / k];
    } else {
      a[i] = s32(ptx_rand32(&st));
      b[i] = s32(ptx_rand32(&st)) >> (i % 31);
    }
    if (b[i] == 0) b[i] = 3;
    if (a[i] == INT32_MIN && b[i] == -1) b[i] = 1;
  }
}

static int32_t sext24(int32_t x) { return sar32(s32((uint32_t)x << 8), 8); }

static void i32_reference(int32_t x, int32_t y, int32_t o[OPS_I32]) {
  uint32_t ux = (uint32_t)x, uy = (uint32_t)y;
  int64_t w = (int64_t)x * y;
  uint64_t uw = (uint64_t)ux * uy;
  o[0] = s32(ux + uy);
  o[1] = s32(ux - uy);
  o[2] = s32(ux * uy);
  o[3] = s32((uint32_t)((uint64_t)w >> 32));
  o[4] = s32((uint32_t)(uw >> 32));
  o[5] = s32(ux * uy + (uy ^ 0x55u));
  o[6] = x / y;
  o[7] = s32(ux / uy);
  o[8] = s32(ux << (uy & 31));
  o[9] = sar32(x, uy & 31);
  o[10] = s32(ux >> (uy & 31));
  o[11] = x < y ? x : y;
  o[12] = x > y ? x : y;
  o[13] = s32(ux < uy ? ux : uy);
  o[14] = s32(ux > uy ? ux : uy);
  o[15] = x == INT32_MIN ? INT32_MIN : abs(x); /* abs.s32 keeps the most negative value */
  o[16] = s32(0u - ux);
  o[17] = s32((uint32_t)(uint64_t)w);
  o[18] = s32((uint32_t)((uint64_t)w >> 32));
  o[19] = s32((uint32_t)uw);
  o[20] = s32((uint32_t)(uw >> 32));
  o[21] = s32((x < y ? uy - ux : ux - uy) + (uy & 0xffu));
  o[22] = s32((uint32_t)(uint64_t)((int64_t)sext24(x) * sext24(y)));
  o[23] = s32((uint32_t)((uint64_t)(ux & 0xffffffu) * (uy & 0xffffffu)));
}

static const char *const i32_names[OPS_I32] = {
    "add",     "sub",     "mul.lo",  "mul.hi.s32",      "mul.hi.u32",      "mad.lo",          "div.s32",
    "div.u32", "shl",     "shr.s32", "shr.u32",         "min.s32",         "max.s32",         "min.u32",
    "max.u32", "abs",     "neg",     "mul.wide.s32 lo", "mul.wide.s32 hi", "mul.wide.u32 lo", "mul.wide.u32 hi",
    "sad",     "__mul24", "__umul24"};

static void test_int32_ops(void **state) {
  struct ptx_fixture *f = fixture(state);
  enum { N = 420 };
  int32_t a[N], b[N], *out = malloc(sizeof(int32_t) * N * OPS_I32);
  assert_non_null(out);
  i32_inputs(a, b, N);
  void *da = ptx_dev(f->ctx, a, sizeof a), *db = ptx_dev(f->ctx, b, sizeof b);
  void *dout = ptx_dev(f->ctx, NULL, sizeof(int32_t) * N * OPS_I32);
  int n = N;
  ptx_run(f, "int32_ops", ptx_grid_for(N, 64), DIM1(64), 0, ARGS(&da, &db, &dout, &n));
  ptx_get(f->ctx, out, dout, sizeof(int32_t) * N * OPS_I32);
  for (size_t i = 0; i < N; i++) {
    int32_t want[OPS_I32];
    i32_reference(a[i], b[i], want);
    for (int j = 0; j < OPS_I32; j++)
      ptx_expect(out[i * OPS_I32 + j] == want[j], "int32_ops", i32_names[j], i, "a=%d b=%d: got %d, expected %d", a[i],
                 b[i], out[i * OPS_I32 + j], want[j]);
  }
  free(out);
}

static void test_int32_rem(void **state) {
  struct ptx_fixture *f = fixture(state);
  enum { N = 420 };
  int32_t a[N], b[N], out[4 * N];
  i32_inputs(a, b, N);
  void *da = ptx_dev(f->ctx, a, sizeof a), *db = ptx_dev(f->ctx, b, sizeof b);
  void *dout = ptx_dev(f->ctx, NULL, sizeof out);
  int n = N;
  ptx_run(f, "int32_rem", ptx_grid_for(N, 96), DIM1(96), 0, ARGS(&da, &db, &dout, &n));
  ptx_get(f->ctx, out, dout, sizeof out);
  for (size_t i = 0; i < N; i++) {
    int32_t want[4] = {a[i] % b[i], s32((uint32_t)a[i] % (uint32_t)b[i]), a[i] / 7, s32((uint32_t)a[i] % 10u)};
    static const char *const names[4] = {"rem.s32", "rem.u32", "div by 7", "rem by 10"};
    for (int j = 0; j < 4; j++)
      ptx_expect(out[4 * i + j] == want[j], "int32_rem", names[j], i, "a=%d b=%d: got %d, expected %d", a[i], b[i],
                 out[4 * i + j], want[j]);
  }
}

static const int64_t i64_specials[] = {0,
                                       1,
                                       -1,
                                       2,
                                       7,
                                       -7,
                                       63,
                                       64,
                                       65,
                                       INT32_MAX,
                                       INT32_MIN,
                                       UINT32_MAX,
                                       INT64_C(4294967296),
                                       -INT64_C(4294967296),
                                       INT64_MAX,
                                       INT64_MIN,
                                       INT64_C(0x123456789abcdef0),
                                       -INT64_C(0x0fedcba987654321),
                                       INT64_C(3037000500),
                                       -INT64_C(3037000500)};

static void i64_inputs(int64_t *a, int64_t *b, size_t n) {
  const size_t k = COUNT(i64_specials);
  uint64_t st = 0x51ed2701a3c9f00dull;
  for (size_t i = 0; i < n; i++) {
    if (i < k * k) {
      a[i] = i64_specials[i % k];
      b[i] = i64_specials[i / k];
    } else {
      a[i] = s64(ptx_rand64(&st));
      b[i] = sar64(s64(ptx_rand64(&st)), (unsigned)(i % 63));
    }
    if (b[i] == 0) b[i] = 3;
    if (a[i] == INT64_MIN && b[i] == -1) b[i] = 1;
  }
}

static uint64_t umulhi64(uint64_t a, uint64_t b) {
  uint64_t a_lo = (uint32_t)a, a_hi = a >> 32, b_lo = (uint32_t)b, b_hi = b >> 32;
  uint64_t p0 = a_lo * b_lo, p1 = a_lo * b_hi, p2 = a_hi * b_lo, p3 = a_hi * b_hi;
  uint64_t mid = (p0 >> 32) + (uint32_t)p1 + (uint32_t)p2;
  return p3 + (p1 >> 32) + (p2 >> 32) + (mid >> 32);
}

static int64_t mulhi64(int64_t a, int64_t b) {
  uint64_t h = umulhi64((uint64_t)a, (uint64_t)b);
  if (a < 0) h -= (uint64_t)b;
  if (b < 0) h -= (uint64_t)a;
  return s64(h);
}

static void i64_reference(int64_t x, int64_t y, int64_t o[OPS_I64]) {
  uint64_t ux = (uint64_t)x, uy = (uint64_t)y;
  o[0] = s64(ux + uy);
  o[1] = s64(ux - uy);
  o[2] = s64(ux * uy);
  o[3] = mulhi64(x, y);
  o[4] = s64(umulhi64(ux, uy));
  o[5] = s64(ux * uy + (uy ^ 0x5555u));
  o[6] = x / y;
  o[7] = s64(ux / uy);
  o[8] = s64(ux << (uy & 63));
  o[9] = sar64(x, (unsigned)(uy & 63));
  o[10] = s64(ux >> (uy & 63));
  o[11] = x < y ? x : y;
  o[12] = x > y ? x : y;
  o[13] = s64(ux < uy ? ux : uy);
  o[14] = s64(ux > uy ? ux : uy);
  o[15] = x == INT64_MIN ? INT64_MIN : (x < 0 ? -x : x);
  o[16] = s64(0u - ux);
  o[17] = (int64_t)s32((uint32_t)ux) * s32((uint32_t)uy);
  o[18] = s64(ux + (uint32_t)uy);
  o[19] = s64(ux + (uint64_t)(int64_t)s32((uint32_t)uy));
}

static const char *const i64_names[OPS_I64] = {
    "add",     "sub", "mul.lo",  "mul.hi.s64",   "mul.hi.u64",     "mad.lo",        "div.s64",
    "div.u64", "shl", "shr.s64", "shr.u64",      "min.s64",        "max.s64",       "min.u64",
    "max.u64", "abs", "neg",     "mul.wide.s32", "zero extension", "sign extension"};

static void test_int64_ops(void **state) {
  struct ptx_fixture *f = fixture(state);
  enum { N = 420 };
  int64_t a[N], b[N], *out = malloc(sizeof(int64_t) * N * OPS_I64);
  assert_non_null(out);
  i64_inputs(a, b, N);
  void *da = ptx_dev(f->ctx, a, sizeof a), *db = ptx_dev(f->ctx, b, sizeof b);
  void *dout = ptx_dev(f->ctx, NULL, sizeof(int64_t) * N * OPS_I64);
  int n = N;
  ptx_run(f, "int64_ops", ptx_grid_for(N, 64), DIM1(64), 0, ARGS(&da, &db, &dout, &n));
  ptx_get(f->ctx, out, dout, sizeof(int64_t) * N * OPS_I64);
  for (size_t i = 0; i < N; i++) {
    int64_t want[OPS_I64];
    i64_reference(a[i], b[i], want);
    for (int j = 0; j < OPS_I64; j++)
      ptx_expect(out[i * OPS_I64 + j] == want[j], "int64_ops", i64_names[j], i,
                 "a=%lld b=%lld: got %lld, expected %lld", (long long)a[i], (long long)b[i],
                 (long long)out[i * OPS_I64 + j], (long long)want[j]);
  }
  free(out);
}

static void test_int64_rem(void **state) {
  struct ptx_fixture *f = fixture(state);
  enum { N = 420 };
  int64_t a[N], b[N], out[2 * N];
  i64_inputs(a, b, N);
  void *da = ptx_dev(f->ctx, a, sizeof a), *db = ptx_dev(f->ctx, b, sizeof b);
  void *dout = ptx_dev(f->ctx, NULL, sizeof out);
  int n = N;
  ptx_run(f, "int64_rem", ptx_grid_for(N, 96), DIM1(96), 0, ARGS(&da, &db, &dout, &n));
  ptx_get(f->ctx, out, dout, sizeof out);
  for (size_t i = 0; i < N; i++) {
    int64_t want[2] = {a[i] % b[i], s64((uint64_t)a[i] % (uint64_t)b[i])};
    for (int j = 0; j < 2; j++)
      ptx_expect(out[2 * i + j] == want[j], "int64_rem", j == 0 ? "rem.s64" : "rem.u64", i,
                 "a=%lld b=%lld: got %lld, expected %lld", (long long)a[i], (long long)b[i], (long long)out[2 * i + j],
                 (long long)want[j]);
  }
}

/* ============================================================ floating point */

/*
 * One IEEE operation in a rounding mode. The volatile operands are read after fesetround and
 * the result is stored before the mode is restored, so the operation runs in the mode.
 */
enum fop { F_NONE, F_ADD, F_SUB, F_MUL, F_DIV, F_SQRT, F_FMA, F_RCP, F_MUL_ADD };

static float f32_op(enum fop op, int mode, float x, float y, float z) {
  int saved = fegetround();
  fesetround(mode);
  volatile float vx = x, vy = y, vz = z, r = 0, p;
  switch (op) {
  case F_NONE: break;
  case F_ADD: r = vx + vy; break;
  case F_SUB: r = vx - vy; break;
  case F_MUL: r = vx * vy; break;
  case F_DIV: r = vx / vy; break;
  case F_SQRT: r = sqrtf(vx); break;
  case F_FMA: r = fmaf(vx, vy, vz); break;
  case F_RCP: r = 1.0f / vx; break;
  case F_MUL_ADD:
    p = vx * vy;
    r = p + vz;
    break;
  }
  fesetround(saved);
  return r;
}

static double f64_op(enum fop op, int mode, double x, double y, double z) {
  int saved = fegetround();
  fesetround(mode);
  volatile double vx = x, vy = y, vz = z, r = 0, p;
  switch (op) {
  case F_NONE: break;
  case F_ADD: r = vx + vy; break;
  case F_SUB: r = vx - vy; break;
  case F_MUL: r = vx * vy; break;
  case F_DIV: r = vx / vy; break;
  case F_SQRT: r = sqrt(vx); break;
  case F_FMA: r = fma(vx, vy, vz); break;
  case F_RCP: r = 1.0 / vx; break;
  case F_MUL_ADD:
    p = vx * vy;
    r = p + vz;
    break;
  }
  fesetround(saved);
  return r;
}

/* How a result is compared: the same bits (NaN ~ NaN), or the same value (+0 == -0 too). */
enum cmp { SAME_BITS, SAME_VALUE };

struct fcase {
  const char *name;
  enum fop op; /* F_NONE: computed by f32_case and f64_case themselves */
  int mode;
  enum cmp cmp;
};

/* Results 12.. of f32_ops and f64_ops: each directed rounding of add, mul, div, sqrt, fma, rcp. */
static const struct fcase float_cases[30] = {
    {"add.rn", F_ADD, FE_TONEAREST, SAME_BITS},
    {"sub.rn", F_SUB, FE_TONEAREST, SAME_BITS},
    {"mul.rn", F_MUL, FE_TONEAREST, SAME_BITS},
    {"div.rn", F_DIV, FE_TONEAREST, SAME_BITS},
    {"sqrt.rn", F_SQRT, FE_TONEAREST, SAME_BITS},
    {"fma.rn", F_FMA, FE_TONEAREST, SAME_BITS},
    {"rcp.rn", F_RCP, FE_TONEAREST, SAME_BITS},
    {"min", F_NONE, 0, SAME_VALUE},
    {"max", F_NONE, 0, SAME_VALUE},
    {"abs", F_NONE, 0, SAME_BITS},
    {"neg", F_NONE, 0, SAME_BITS},
    {"mul then add", F_MUL_ADD, FE_TONEAREST, SAME_BITS},
    {"add.rz", F_ADD, FE_TOWARDZERO, SAME_BITS},
    {"add.rm", F_ADD, FE_DOWNWARD, SAME_BITS},
    {"add.rp", F_ADD, FE_UPWARD, SAME_BITS},
    {"mul.rz", F_MUL, FE_TOWARDZERO, SAME_BITS},
    {"mul.rm", F_MUL, FE_DOWNWARD, SAME_BITS},
    {"mul.rp", F_MUL, FE_UPWARD, SAME_BITS},
    {"div.rz", F_DIV, FE_TOWARDZERO, SAME_BITS},
    {"div.rm", F_DIV, FE_DOWNWARD, SAME_BITS},
    {"div.rp", F_DIV, FE_UPWARD, SAME_BITS},
    {"sqrt.rz", F_SQRT, FE_TOWARDZERO, SAME_BITS},
    {"sqrt.rm", F_SQRT, FE_DOWNWARD, SAME_BITS},
    {"sqrt.rp", F_SQRT, FE_UPWARD, SAME_BITS},
    {"fma.rz", F_FMA, FE_TOWARDZERO, SAME_BITS},
    {"fma.rm", F_FMA, FE_DOWNWARD, SAME_BITS},
    {"fma.rp", F_FMA, FE_UPWARD, SAME_BITS},
    {"rcp.rz", F_RCP, FE_TOWARDZERO, SAME_BITS},
    {"rcp.rm", F_RCP, FE_DOWNWARD, SAME_BITS},
    {"rcp.rp", F_RCP, FE_UPWARD, SAME_BITS},
};

static float f32_case(int j, float x, float y, float z) {
  switch (j) {
  case 7: return fminf(x, y);
  case 8: return fmaxf(x, y);
  case 9: return fabsf(x);
  case 10: return -x;
  default: return f32_op(float_cases[j].op, float_cases[j].mode, x, y, z);
  }
}

static double f64_case(int j, double x, double y, double z) {
  switch (j) {
  case 7: return fmin(x, y);
  case 8: return fmax(x, y);
  case 9: return fabs(x);
  case 10: return -x;
  default: return f64_op(float_cases[j].op, float_cases[j].mode, x, y, z);
  }
}

static bool f32_matches(float got, float want, enum cmp c) {
  if (c == SAME_VALUE && got == want) return true;
  return ptx_same_f32(got, want);
}

static bool f64_matches(double got, double want, enum cmp c) {
  if (c == SAME_VALUE && got == want) return true;
  return ptx_same_f64(got, want);
}

static const float f32_specials[] = {0.0f,     -0.0f,    1.0f,      -1.0f,    0.5f,        3.0f,    -7.25f,
                                     1.0f / 3, 0.1f,     FLT_MIN,   -FLT_MIN, 1e-40f,      -3e-42f, FLT_MAX,
                                     -FLT_MAX, INFINITY, -INFINITY, NAN,      16777216.0f, -1e-30f};

/* A float of random sign and mantissa with an exponent in [lo, hi]. */
static float f32_random(uint64_t *st, int lo, int hi) {
  uint32_t r = ptx_rand32(st);
  int e = lo + (int)(r % (uint32_t)(hi - lo + 1));
  uint32_t bits = (ptx_rand32(st) & 0x807fffffu) | ((uint32_t)(e + 127) << 23);
  return ptx_f32_from(bits);
}

static double f64_random(uint64_t *st, int lo, int hi) {
  uint64_t r = ptx_rand64(st);
  int e = lo + (int)(r % (uint64_t)(hi - lo + 1));
  uint64_t bits = (ptx_rand64(st) & 0x800fffffffffffffull) | ((uint64_t)(e + 1023) << 52);
  return ptx_f64_from(bits);
}

/*
 * Every pair of special values (with a third from the list), then random operands; some third
 * operands nearly cancel the product, where a fused and a separate multiply-add differ most.
 */
static void f32_inputs(float *a, float *b, float *c, size_t n) {
  const size_t k = COUNT(f32_specials);
  uint64_t st = 0xf32f32f32ull;
  for (size_t i = 0; i < n; i++) {
    if (i < k * k) {
      a[i] = f32_specials[i % k];
      b[i] = f32_specials[i / k];
      c[i] = f32_specials[(i * 7 + 3) % k];
      continue;
    }
    a[i] = f32_random(&st, -20, 20);
    b[i] = f32_random(&st, -20, 20);
    c[i] = i % 2 ? -a[i] * b[i] * (1.0f + 0x1p-20f) : f32_random(&st, -20, 20);
  }
}

static void test_f32_ops(void **state) {
  struct ptx_fixture *f = fixture(state);
  enum { N = 528, OPS = 30 };
  float a[N], b[N], c[N], *out = malloc(sizeof(float) * N * OPS);
  assert_non_null(out);
  f32_inputs(a, b, c, N);
  void *da = ptx_dev(f->ctx, a, sizeof a), *db = ptx_dev(f->ctx, b, sizeof b), *dc = ptx_dev(f->ctx, c, sizeof c);
  void *dout = ptx_dev(f->ctx, NULL, sizeof(float) * N * OPS);
  int n = N;
  ptx_run(f, "f32_ops", ptx_grid_for(N, 96), DIM1(96), 0, ARGS(&da, &db, &dc, &dout, &n));
  ptx_get(f->ctx, out, dout, sizeof(float) * N * OPS);
  for (size_t i = 0; i < N; i++)
    for (int j = 0; j < OPS; j++) {
      float got = out[i * OPS + j], want = f32_case(j, a[i], b[i], c[i]);
      ptx_expect(f32_matches(got, want, float_cases[j].cmp), "f32_ops", float_cases[j].name, i,
                 "a=%a b=%a c=%a: got %a (0x%08x), expected %a (0x%08x)", (double)a[i], (double)b[i], (double)c[i],
                 (double)got, ptx_f32_bits(got), (double)want, ptx_f32_bits(want));
    }
  free(out);
}

static const double f64_specials[] = {0.0,
                                      -0.0,
                                      1.0,
                                      -1.0,
                                      0.5,
                                      3.0,
                                      -7.25,
                                      1.0 / 3,
                                      0.1,
                                      DBL_MIN,
                                      -DBL_MIN,
                                      1e-310,
                                      -5e-320,
                                      DBL_MAX,
                                      -DBL_MAX,
                                      INFINITY,
                                      -INFINITY,
                                      NAN,
                                      9007199254740992.0,
                                      -1e-300};

static void f64_inputs(double *a, double *b, double *c, size_t n) {
  const size_t k = COUNT(f64_specials);
  uint64_t st = 0xf64f64f64ull;
  for (size_t i = 0; i < n; i++) {
    if (i < k * k) {
      a[i] = f64_specials[i % k];
      b[i] = f64_specials[i / k];
      c[i] = f64_specials[(i * 7 + 3) % k];
      continue;
    }
    a[i] = f64_random(&st, -60, 60);
    b[i] = f64_random(&st, -60, 60);
    c[i] = i % 2 ? -a[i] * b[i] * (1.0 + 0x1p-45) : f64_random(&st, -60, 60);
  }
}

static void test_f64_ops(void **state) {
  struct ptx_fixture *f = fixture(state);
  enum { N = 528, OPS = 30 };
  double a[N], b[N], c[N], *out = malloc(sizeof(double) * N * OPS);
  assert_non_null(out);
  f64_inputs(a, b, c, N);
  void *da = ptx_dev(f->ctx, a, sizeof a), *db = ptx_dev(f->ctx, b, sizeof b), *dc = ptx_dev(f->ctx, c, sizeof c);
  void *dout = ptx_dev(f->ctx, NULL, sizeof(double) * N * OPS);
  int n = N;
  ptx_run(f, "f64_ops", ptx_grid_for(N, 96), DIM1(96), 0, ARGS(&da, &db, &dc, &dout, &n));
  ptx_get(f->ctx, out, dout, sizeof(double) * N * OPS);
  for (size_t i = 0; i < N; i++)
    for (int j = 0; j < OPS; j++) {
      double got = out[i * OPS + j], want = f64_case(j, a[i], b[i], c[i]);
      ptx_expect(f64_matches(got, want, float_cases[j].cmp), "f64_ops", float_cases[j].name, i,
                 "a=%a b=%a c=%a: got %a, expected %a", a[i], b[i], c[i], got, want);
    }
  free(out);
}

/* ================================================================ approximate */

#define PI 3.14159265358979323846

/* |got - want| in units of the last place of floats of want's magnitude. */
static double ulps(float got, double want) { return fabs((double)got - want) / ptx_ulp_f32(want); }

/*
 * The error bounds, from the PTX ISA (the instruction) or the CUDA Programming Guide (the
 * intrinsic nvcc expands into it); x lies in [-pi, pi], y is positive and normal:
 *   __fdividef     div.approx.f32      2 ulp for |y| in [2^-126, 2^126]
 *   __sinf/__cosf  sin/cos.approx.f32  absolute 2^-20.9 in [-pi, pi]
 *   __expf         ex2.approx(x*log2e) 2 + floor(1.173 |x|) ulp
 *   __log2f        lg2.approx.f32      absolute 2^-22 for y in [0.5, 2], else 2 ulp
 *   __logf         lg2.approx * ln2    absolute 2^-21.41 for y in [0.5, 2], else 3 ulp
 *   rsqrtf         rsqrt.approx.f32    2 ulp (relative 2^-22.9)
 *   __exp10f       ex2.approx(x*log2(10)) 2 + floor(2.97 |x|) ulp
 *   sqrt.approx.f32                    2 ulp (relative 2^-23)
 *   rcp.approx.f32                     1 ulp
 *   ex2.approx.ftz.f32                 2 ulp
 *   tanh.approx.f32                    relative 2^-10.987
 */
static const char *const approx_names[12] = {"__fdividef",  "__sinf",     "__cosf",         "__expf",
                                             "__log2f",     "__logf",     "rsqrtf",         "__exp10f",
                                             "sqrt.approx", "rcp.approx", "ex2.approx.ftz", "tanh.approx"};

static bool in_half_to_two(float y) { return y >= 0.5f && y <= 2.0f; }

/* The exact value of result j for (x, y) in *want, and whether got lies within its bound. */
static bool approx_ok(int j, float x, float y, float got, double *want) {
  double ax = fabs((double)x);
  switch (j) {
  case 0: *want = (double)x / y; return ulps(got, *want) <= 2;
  case 1: *want = sin(x); return fabs(got - *want) <= exp2(-20.9);
  case 2: *want = cos(x); return fabs(got - *want) <= exp2(-20.9);
  case 3: *want = exp(x); return ulps(got, *want) <= 2 + floor(1.173 * ax);
  case 4: *want = log2(y); return in_half_to_two(y) ? fabs(got - *want) <= exp2(-22) : ulps(got, *want) <= 2;
  case 5: *want = log(y); return in_half_to_two(y) ? fabs(got - *want) <= exp2(-21.41) : ulps(got, *want) <= 3;
  case 6: *want = 1.0 / sqrt(y); return ulps(got, *want) <= 2;
  case 7: *want = pow(10.0, x); return ulps(got, *want) <= 2 + floor(2.97 * ax);
  case 8: *want = sqrt(y); return ulps(got, *want) <= 2;
  case 9: *want = 1.0 / y; return ulps(got, *want) <= 1;
  case 10: *want = exp2(x); return ulps(got, *want) <= 2;
  default: *want = tanh(x); return fabs(got - *want) <= exp2(-10.987) * fabs(*want);
  }
}

static void test_f32_approx(void **state) {
  struct ptx_fixture *f = fixture(state);
  enum { N = 300, OPS = 12 };
  float x[N], y[N], out[N * OPS];
  uint64_t st = 0xa99a0ull;
  for (size_t i = 0; i < N; i++) {
    x[i] = (float)(3.1415925 * (2.0 * (double)i / (N - 1) - 1.0));
    double frac = (double)(ptx_rand32(&st) >> 8) / 16777216.0;
    y[i] = i % 5 == 0 ? (float)(0.5 + 1.5 * frac) : (float)ldexp(1.0 + frac, (int)(i % 48) - 24);
  }
  void *dx = ptx_dev(f->ctx, x, sizeof x);
  void *dy = ptx_dev(f->ctx, y, sizeof y), *dout = ptx_dev(f->ctx, NULL, sizeof out);
  int n = N;
  ptx_run(f, "f32_approx", ptx_grid_for(N, 64), DIM1(64), 0, ARGS(&dx, &dy, &dout, &n));
  ptx_get(f->ctx, out, dout, sizeof out);
  for (size_t i = 0; i < N; i++)
    for (int j = 0; j < OPS; j++) {
      double want;
      float got = out[i * OPS + j];
      bool ok = approx_ok(j, x[i], y[i], got, &want);
      ptx_expect(ok, "f32_approx", approx_names[j], i, "x=%a y=%a: got %a, exact %a (%.2f ulp)", (double)x[i],
                 (double)y[i], (double)got, want, ulps(got, want));
    }
}

/* ======================================================================= bits */

enum { OPS_BITS32 = 25, OPS_BITS64 = 6 };

static uint32_t popc32(uint32_t x) {
  uint32_t c = 0;
  for (; x != 0; x &= x - 1) c++;
  return c;
}

static uint32_t clz32(uint32_t x) {
  uint32_t c = 0;
  for (uint32_t m = 0x80000000u; m != 0 && (x & m) == 0; m >>= 1) c++;
  return c;
}

static uint32_t brev32(uint32_t x) {
  uint32_t r = 0;
  for (int i = 0; i < 32; i++) r |= ((x >> i) & 1u) << (31 - i);
  return r;
}

static uint64_t popc64(uint64_t x) { return popc32((uint32_t)x) + popc32((uint32_t)(x >> 32)); }
static uint64_t clz64(uint64_t x) { return (x >> 32) != 0 ? clz32((uint32_t)(x >> 32)) : 32 + clz32((uint32_t)x); }
static uint64_t brev64(uint64_t x) { return (uint64_t)brev32((uint32_t)x) << 32 | brev32((uint32_t)(x >> 32)); }

/* prmt.b32 without a mode: four 4-bit selectors; bit 3 of one replicates its byte's sign bit. */
static uint32_t prmt(uint32_t a, uint32_t b, uint32_t c) {
  uint64_t src = (uint64_t)b << 32 | a;
  uint32_t d = 0;
  for (int n = 0; n < 4; n++) {
    uint32_t sel = (c >> (4 * n)) & 0xfu;
    uint32_t byte = (uint32_t)(src >> (8 * (sel & 7u))) & 0xffu;
    if (sel & 8u) byte = (byte & 0x80u) ? 0xffu : 0u;
    d |= byte << (8 * n);
  }
  return d;
}

/*
 * prmt.b32 with a mode (PTX ISA, prmt): c[1:0] picks a row; the row lists the source bytes
 * (0-3 from a, 4-7 from b) of d.b0, d.b1, d.b2, d.b3.
 */
enum prmt_mode { F4E, B4E, RC8, ECL, ECR, RC16 };
static uint32_t prmt_mode(enum prmt_mode mode, uint32_t a, uint32_t b, uint32_t c) {
  static const uint8_t rows[6][4][4] = {
      {{0, 1, 2, 3}, {1, 2, 3, 4}, {2, 3, 4, 5}, {3, 4, 5, 6}}, /* f4e */
      {{0, 7, 6, 5}, {1, 0, 7, 6}, {2, 1, 0, 7}, {3, 2, 1, 0}}, /* b4e */
      {{0, 0, 0, 0}, {1, 1, 1, 1}, {2, 2, 2, 2}, {3, 3, 3, 3}}, /* rc8 */
      {{0, 1, 2, 3}, {1, 1, 2, 3}, {2, 2, 2, 3}, {3, 3, 3, 3}}, /* ecl */
      {{0, 0, 0, 0}, {0, 1, 1, 1}, {0, 1, 2, 2}, {0, 1, 2, 3}}, /* ecr */
      {{0, 1, 0, 1}, {2, 3, 2, 3}, {0, 1, 0, 1}, {2, 3, 2, 3}}, /* rc16 */
  };
  uint64_t src = (uint64_t)b << 32 | a;
  const uint8_t *row = rows[mode][c & 3u];
  uint32_t d = 0;
  for (int n = 0; n < 4; n++) d |= ((uint32_t)(src >> (8 * row[n])) & 0xffu) << (8 * n);
  return d;
}

/* bfe (PTX ISA): len bits from pos, filled above with zero (unsigned) or the last bit taken (signed). */
static uint64_t bfe(uint64_t a, uint32_t pos, uint32_t len, int bits, bool is_signed) {
  uint32_t msb = (uint32_t)bits - 1;
  pos &= 0xffu;
  len &= 0xffu;
  uint64_t sbit = 0;
  if (is_signed && len != 0) {
    uint32_t top = pos + len - 1 < msb ? pos + len - 1 : msb;
    sbit = (a >> top) & 1u;
  }
  uint64_t d = 0;
  for (uint32_t i = 0; i <= msb; i++) {
    uint64_t bit = i < len && pos + i <= msb ? (a >> (pos + i)) & 1u : sbit;
    d |= bit << i;
  }
  return d;
}

/* bfi.b32 (PTX ISA): b with bits [pos, pos + len) replaced by the low bits of a. */
static uint32_t bfi(uint32_t a, uint32_t b, uint32_t pos, uint32_t len) {
  uint32_t d = b;
  for (uint32_t i = 0; i < len && pos + i <= 31; i++) d = (d & ~(1u << (pos + i))) | (((a >> i) & 1u) << (pos + i));
  return d;
}

/* lop3.b32: bit i of the result is bit (a_i << 2 | b_i << 1 | c_i) of the table. */
static uint32_t lop3(uint32_t a, uint32_t b, uint32_t c, uint32_t lut) {
  uint32_t d = 0;
  for (int i = 0; i < 32; i++) {
    uint32_t idx = ((a >> i) & 1u) << 2 | ((b >> i) & 1u) << 1 | ((c >> i) & 1u);
    d |= ((lut >> idx) & 1u) << i;
  }
  return d;
}

static uint32_t funnel_left(uint32_t lo, uint32_t hi, uint32_t shift) {
  return (uint32_t)((((uint64_t)hi << 32 | lo) << shift) >> 32);
}

static uint32_t funnel_right(uint32_t lo, uint32_t hi, uint32_t shift) {
  return (uint32_t)(((uint64_t)hi << 32 | lo) >> shift);
}

static void bits32_reference(uint32_t x, uint32_t y, uint32_t z, uint32_t o[OPS_BITS32]) {
  o[0] = popc32(x);
  o[1] = clz32(x);
  o[2] = brev32(x);
  o[3] = prmt(x, y, z & 0x7777u); /* __byte_perm ignores bit 3 of each selector */
  o[4] = funnel_left(x, y, z & 31);
  o[5] = funnel_right(x, y, z & 31);
  o[6] = funnel_left(x, y, z < 32 ? z : 32);
  o[7] = funnel_right(x, y, z < 32 ? z : 32);
  o[8] = x == 0 ? 0 : 32 - clz32(x & (0u - x));
  o[9] = (uint32_t)bfe(x, y, z, 32, false);
  o[10] = (uint32_t)bfe(x, y, z, 32, true);
  o[11] = bfi(x, y, z & 0xffu, (z >> 8) & 0xffu);
  o[12] = lop3(x, y, z, 0x96);
  o[13] = lop3(x, y, z, 0xe8);
  o[14] = lop3(x, y, z, 0xca);
  for (int m = F4E; m <= RC16; m++) o[15 + m] = prmt_mode((enum prmt_mode)m, x, y, z);
  o[21] = (x >> 7) & 0x3ffu;
  o[22] = (x & ~0xff0u) | ((y << 4) & 0xff0u);
  o[23] = ~(x & y) | (z ^ x);
  o[24] = prmt(x, y, z);
}

static const char *const bits32_names[OPS_BITS32] = {
    "popc",        "clz",         "brev",      "__byte_perm",    "shf.l.wrap",      "shf.r.wrap",
    "shf.l.clamp", "shf.r.clamp", "__ffs",     "bfe.u32",        "bfe.s32",         "bfi",
    "lop3 0x96",   "lop3 0xe8",   "lop3 0xca", "prmt.f4e",       "prmt.b4e",        "prmt.rc8",
    "prmt.ecl",    "prmt.ecr",    "prmt.rc16", "shift and mask", "mask and insert", "not, and, or, xor",
    "prmt"};

/*
 * Operands: special words, then random ones; many y and z small, so that shift counts,
 * positions and lengths fall inside the word as often as outside it.
 */
static void bits_inputs(uint32_t *a, uint32_t *b, uint32_t *c, size_t n) {
  static const uint32_t specials[] = {0, 0xffffffffu, 1, 0x80000000u, 0x7fffffffu, 0x00ff00ffu, 0x12345678u};
  uint64_t st = 0xb175b175ull;
  for (size_t i = 0; i < n; i++) {
    a[i] = i < COUNT(specials) ? specials[i] : ptx_rand32(&st);
    b[i] = i % 2 ? ptx_rand32(&st) % 40 : ptx_rand32(&st);
    uint32_t small = ptx_rand32(&st) % 40, small2 = ptx_rand32(&st) % 40;
    c[i] = i % 3 == 1 ? small : i % 3 == 2 ? small | small2 << 8 : ptx_rand32(&st);
  }
}

static void test_bits32(void **state) {
  struct ptx_fixture *f = fixture(state);
  enum { N = 300 };
  uint32_t a[N], b[N], c[N], out[N * OPS_BITS32];
  bits_inputs(a, b, c, N);
  void *da = ptx_dev(f->ctx, a, sizeof a), *db = ptx_dev(f->ctx, b, sizeof b), *dc = ptx_dev(f->ctx, c, sizeof c);
  void *dout = ptx_dev(f->ctx, NULL, sizeof out);
  int n = N;
  ptx_run(f, "bits32", ptx_grid_for(N, 64), DIM1(64), 0, ARGS(&da, &db, &dc, &dout, &n));
  ptx_get(f->ctx, out, dout, sizeof out);
  for (size_t i = 0; i < N; i++) {
    uint32_t want[OPS_BITS32];
    bits32_reference(a[i], b[i], c[i], want);
    for (int j = 0; j < OPS_BITS32; j++)
      ptx_expect(out[i * OPS_BITS32 + j] == want[j], "bits32", bits32_names[j], i,
                 "a=0x%08x b=0x%08x c=0x%08x: got 0x%08x, expected 0x%08x", a[i], b[i], c[i], out[i * OPS_BITS32 + j],
                 want[j]);
  }
}

static void test_bits64(void **state) {
  struct ptx_fixture *f = fixture(state);
  enum { N = 200 };
  static const char *const names[OPS_BITS64] = {"popc.b64", "clz.b64", "brev.b64", "__ffsll", "bfe.u64", "bfe.s64"};
  uint64_t a[N], b[N], out[N * OPS_BITS64];
  uint64_t st = 0xb17564ull;
  for (size_t i = 0; i < N; i++) {
    a[i] = i == 0 ? 0 : i == 1 ? UINT64_MAX : ptx_rand64(&st) >> (i % 64);
    b[i] = i % 2 ? (ptx_rand64(&st) % 70) | (ptx_rand64(&st) % 70) << 8 : ptx_rand64(&st);
  }
  void *da = ptx_dev(f->ctx, a, sizeof a);
  void *db = ptx_dev(f->ctx, b, sizeof b), *dout = ptx_dev(f->ctx, NULL, sizeof out);
  int n = N;
  ptx_run(f, "bits64", ptx_grid_for(N, 96), DIM1(96), 0, ARGS(&da, &db, &dout, &n));
  ptx_get(f->ctx, out, dout, sizeof out);
  for (size_t i = 0; i < N; i++) {
    uint64_t x = a[i];
    uint32_t pos = (uint32_t)b[i] & 0xffu, len = (uint32_t)(b[i] >> 8) & 0xffu;
    uint64_t want[OPS_BITS64] = {popc64(x),
                                 clz64(x),
                                 brev64(x),
                                 x == 0 ? 0 : 64 - clz64(x & (0u - x)),
                                 bfe(x, pos, len, 64, false),
                                 bfe(x, pos, len, 64, true)};
    for (int j = 0; j < OPS_BITS64; j++)
      ptx_expect(out[i * OPS_BITS64 + j] == want[j], "bits64", names[j], i,
                 "a=0x%016llx b=0x%016llx: got 0x%016llx, expected 0x%016llx", (unsigned long long)a[i],
                 (unsigned long long)b[i], (unsigned long long)out[i * OPS_BITS64 + j], (unsigned long long)want[j]);
  }
}

/* ================================================================ comparisons */

static uint32_t bit(bool p, int k) { return (uint32_t)p << k; }

static uint32_t f32_mask(float x, float y) {
  bool unordered = isnan(x) || isnan(y);
  return bit(x < y, 0) | bit(x <= y, 1) | bit(x > y, 2) | bit(x >= y, 3) | bit(x == y, 4) | bit(x != y, 5) |
         bit(!(x < y), 6) | bit(!(x >= y), 7) | bit(unordered, 8) | bit(!unordered, 9) | bit(isinf(x), 10) |
         bit(isfinite(x), 11) | bit(signbit(x) != 0, 12) | bit(isfinite(x), 16) | bit(isinf(x), 17) |
         bit(!isnan(x), 18) | bit(isnan(x), 19) | bit(isnormal(x), 20) | bit(fpclassify(x) == FP_SUBNORMAL, 21) |
         bit(x > y || unordered, 22);
}

static void test_f32_compare(void **state) {
  struct ptx_fixture *f = fixture(state);
  enum { K = COUNT(f32_specials), N = K * K };
  static const char *const sel_names[4] = {"selp", "slct.f32.f32", "copysign.f32", "copysignf"};
  float a[N], b[N], sel[4 * N];
  uint32_t mask[N];
  for (size_t i = 0; i < N; i++) {
    a[i] = f32_specials[i % K];
    b[i] = f32_specials[i / K];
  }
  void *da = ptx_dev(f->ctx, a, sizeof a), *db = ptx_dev(f->ctx, b, sizeof b);
  void *dmask = ptx_dev(f->ctx, NULL, sizeof mask), *dsel = ptx_dev(f->ctx, NULL, sizeof sel);
  int n = N;
  ptx_run(f, "f32_compare", ptx_grid_for(N, 64), DIM1(64), 0, ARGS(&da, &db, &dmask, &dsel, &n));
  ptx_get(f->ctx, mask, dmask, sizeof mask);
  ptx_get(f->ctx, sel, dsel, sizeof sel);
  for (size_t i = 0; i < N; i++) {
    float x = a[i], y = b[i];
    volatile float diff = x - y;
    uint32_t want = f32_mask(x, y);
    ptx_expect(mask[i] == want, "f32_compare", "setp/testp/set bits", i, "x=%a y=%a: got 0x%06x, expected 0x%06x",
               (double)x, (double)y, mask[i], want);
    float wants[4] = {x < y ? x : y, diff >= 0.0f ? x : y, copysignf(y, x), copysignf(y, x)};
    for (int j = 0; j < 4; j++)
      ptx_expect(ptx_same_f32(sel[4 * i + j], wants[j]), "f32_compare", sel_names[j], i,
                 "x=%a y=%a: got %a, expected %a", (double)x, (double)y, (double)sel[4 * i + j], (double)wants[j]);
  }
}

static void test_f64_compare(void **state) {
  struct ptx_fixture *f = fixture(state);
  enum { K = COUNT(f64_specials), N = K * K };
  static const char *const sel_names[3] = {"selp", "slct.f64.s32", "copysign.f64"};
  double a[N], b[N], sel[3 * N];
  uint32_t mask[N];
  for (size_t i = 0; i < N; i++) {
    a[i] = f64_specials[i % K];
    b[i] = f64_specials[i / K];
  }
  void *da = ptx_dev(f->ctx, a, sizeof a), *db = ptx_dev(f->ctx, b, sizeof b);
  void *dmask = ptx_dev(f->ctx, NULL, sizeof mask), *dsel = ptx_dev(f->ctx, NULL, sizeof sel);
  int n = N;
  ptx_run(f, "f64_compare", ptx_grid_for(N, 96), DIM1(96), 0, ARGS(&da, &db, &dmask, &dsel, &n));
  ptx_get(f->ctx, mask, dmask, sizeof mask);
  ptx_get(f->ctx, sel, dsel, sizeof sel);
  for (size_t i = 0; i < N; i++) {
    double x = a[i], y = b[i];
    bool unordered = isnan(x) || isnan(y);
    uint32_t want = bit(x < y, 0) | bit(x <= y, 1) | bit(x > y, 2) | bit(x >= y, 3) | bit(x == y, 4) | bit(x != y, 5) |
                    bit(!(x < y), 6) | bit(!(x >= y), 7) | bit(unordered, 8) | bit(!unordered, 9) | bit(isinf(x), 10) |
                    bit(isfinite(x), 11) | bit(signbit(x) != 0, 12);
    ptx_expect(mask[i] == want, "f64_compare", "setp bits", i, "x=%a y=%a: got 0x%04x, expected 0x%04x", x, y, mask[i],
               want);
    double wants[3] = {x < y ? x : y, (int)i - 40 >= 0 ? x : y, copysign(y, x)};
    for (int j = 0; j < 3; j++)
      ptx_expect(ptx_same_f64(sel[3 * i + j], wants[j]), "f64_compare", sel_names[j], i,
                 "x=%a y=%a: got %a, expected %a", x, y, sel[3 * i + j], wants[j]);
  }
}

static void test_int_compare(void **state) {
  struct ptx_fixture *f = fixture(state);
  enum { K = COUNT(i64_specials), N = K * K };
  static const char *const sel_names[3] = {"selp", "slct.s32.s32", "set.lt.s32.u32"};
  int64_t a[N], b[N];
  uint32_t mask[N];
  int32_t sel[3 * N];
  for (size_t i = 0; i < N; i++) {
    a[i] = i64_specials[i % K];
    b[i] = i64_specials[i / K];
  }
  void *da = ptx_dev(f->ctx, a, sizeof a), *db = ptx_dev(f->ctx, b, sizeof b);
  void *dmask = ptx_dev(f->ctx, NULL, sizeof mask), *dsel = ptx_dev(f->ctx, NULL, sizeof sel);
  int n = N;
  ptx_run(f, "int_compare", ptx_grid_for(N, 64), DIM1(64), 0, ARGS(&da, &db, &dmask, &dsel, &n));
  ptx_get(f->ctx, mask, dmask, sizeof mask);
  ptx_get(f->ctx, sel, dsel, sizeof sel);
  for (size_t i = 0; i < N; i++) {
    int64_t x = a[i], y = b[i];
    uint64_t vx = (uint64_t)x, vy = (uint64_t)y;
    uint32_t ux = (uint32_t)vx, uy = (uint32_t)vy;
    int32_t sx = s32(ux), sy = s32(uy);
    uint32_t want = bit(sx < sy, 0) | bit(sx <= sy, 1) | bit(sx > sy, 2) | bit(sx >= sy, 3) | bit(sx == sy, 4) |
                    bit(sx != sy, 5) | bit(ux < uy, 6) | bit(ux <= uy, 7) | bit(ux > uy, 8) | bit(ux >= uy, 9) |
                    bit(x < y, 10) | bit(x >= y, 11) | bit(vx < vy, 12) | bit(vx >= vy, 13) | bit(x == y, 14);
    ptx_expect(mask[i] == want, "int_compare", "setp bits", i, "x=%lld y=%lld: got 0x%04x, expected 0x%04x",
               (long long)x, (long long)y, mask[i], want);
    int32_t wants[3] = {s32(sx > sy ? ux - uy : uy - ux), s32(ux ^ uy) >= 0 ? sx : sy, ux < uy ? -1 : 0};
    for (int j = 0; j < 3; j++)
      ptx_expect(sel[3 * i + j] == wants[j], "int_compare", sel_names[j], i, "x=%lld y=%lld: got %d, expected %d",
                 (long long)x, (long long)y, sel[3 * i + j], wants[j]);
  }
}

/* ================================================================ conversions */

enum rmode { RN, RZ, RD, RU };
static const char *const rmode_names[4] = {"rn", "rz", "rd", "ru"};
static const int fe_modes[4] = {FE_TONEAREST, FE_TOWARDZERO, FE_DOWNWARD, FE_UPWARD};

/* r rounded to an integral value in `mode` (ties to even for RN). */
static double round_integral(double r, enum rmode mode) {
  switch (mode) {
  case RN: return nearbyint(r);
  case RZ: return trunc(r);
  case RD: return floor(r);
  default: return ceil(r);
  }
}

/*
 * Float-to-integer conversions saturate. A NaN becomes 0, except from .f64 or into a 64-bit
 * integer, where it becomes 1 << (bits - 1) (PTX ISA 9.0, cvt).
 */
static int32_t cvt_s32(double r, bool from_f64) {
  if (isnan(r)) return from_f64 ? INT32_MIN : 0;
  if (r >= 2147483648.0) return INT32_MAX;
  if (r < -2147483648.0) return INT32_MIN;
  return (int32_t)r;
}

static uint32_t cvt_u32(double r, bool from_f64) {
  if (isnan(r)) return from_f64 ? 0x80000000u : 0;
  if (r < 0) return 0;
  if (r >= 4294967296.0) return UINT32_MAX;
  return (uint32_t)r;
}

static int64_t cvt_s64(double r) {
  if (isnan(r)) return INT64_MIN;
  if (r >= 9223372036854775808.0) return INT64_MAX;
  if (r < -9223372036854775808.0) return INT64_MIN;
  return (int64_t)r;
}

static uint64_t cvt_u64(double r) {
  if (isnan(r)) return UINT64_C(1) << 63;
  if (r < 0) return 0;
  if (r >= 18446744073709551616.0) return UINT64_MAX;
  return (uint64_t)r;
}

/* Results of f32_to_int and f64_to_int: [0..7] 32-bit (signed rn..ru, unsigned rn..ru), [8..15] 64-bit. */
static void to_int_reference(double x, bool from_f64, int64_t want[16]) {
  for (int m = RN; m <= RU; m++) {
    double r = round_integral(x, (enum rmode)m);
    want[m] = cvt_s32(r, from_f64);
    want[4 + m] = (int64_t)cvt_u32(r, from_f64);
    want[8 + m] = cvt_s64(r);
    want[12 + m] = s64(cvt_u64(r));
  }
}

static void check_to_int(const char *kernel, size_t n, const double *x, const int32_t *o32, const int64_t *o64,
                         bool from_f64) {
  static const char *const kinds[4] = {"to s32", "to u32", "to s64", "to u64"};
  for (size_t i = 0; i < n; i++) {
    int64_t want[16];
    to_int_reference(x[i], from_f64, want);
    for (int j = 0; j < 16; j++) {
      int64_t got = j < 8 ? (int64_t)o32[8 * i + j] : o64[8 * i + j - 8];
      if (j >= 4 && j < 8) got = (int64_t)(uint32_t)o32[8 * i + j];
      char what[32];
      snprintf(what, sizeof what, "%s.%s", kinds[j / 4], rmode_names[j % 4]);
      ptx_expect(got == want[j], kernel, what, i, "x=%a: got %lld, expected %lld", x[i], (long long)got,
                 (long long)want[j]);
    }
  }
}

static const float cvt_f32_specials[] = {
    0.0f,           -0.0f,          0.5f,          1.5f,          2.5f,          -0.5f,
    -1.5f,          -2.5f,          0.49999997f,   -0.49999997f,  2147483520.0f, 2147483648.0f,
    -2147483648.0f, -2147483904.0f, 4294967040.0f, 4294967296.0f, 9.223371e18f,  9.223372e18f,
    -9.223373e18f,  1.8446743e19f,  INFINITY,      -INFINITY,     NAN,           1e-30f,
    123.456f,       -123.456f,      1e10f,         -1e10f,        FLT_MAX,       -FLT_MAX};

static void test_f32_to_int(void **state) {
  struct ptx_fixture *f = fixture(state);
  enum { N = 250 };
  float a[N];
  double x[N];
  int32_t o32[8 * N];
  int64_t o64[8 * N];
  uint64_t st = 0xc4700001ull;
  for (size_t i = 0; i < N; i++) {
    a[i] = i < COUNT(cvt_f32_specials) ? cvt_f32_specials[i] : f32_random(&st, -3, 66);
    x[i] = a[i];
  }
  void *da = ptx_dev(f->ctx, a, sizeof a);
  void *d32 = ptx_dev(f->ctx, NULL, sizeof o32), *d64 = ptx_dev(f->ctx, NULL, sizeof o64);
  int n = N;
  ptx_run(f, "f32_to_int", ptx_grid_for(N, 64), DIM1(64), 0, ARGS(&da, &d32, &d64, &n));
  ptx_get(f->ctx, o32, d32, sizeof o32);
  ptx_get(f->ctx, o64, d64, sizeof o64);
  check_to_int("f32_to_int", N, x, o32, o64, false);
}

static const double cvt_f64_specials[] = {0.0,
                                          -0.0,
                                          0.5,
                                          1.5,
                                          2.5,
                                          -0.5,
                                          -2.5,
                                          2147483647.5,
                                          2147483647.4,
                                          -2147483648.5,
                                          -2147483648.4,
                                          4294967295.5,
                                          4294967294.6,
                                          9007199254740993.0,
                                          9223372036854775808.0,
                                          -9223372036854775808.0,
                                          18446744073709551616.0,
                                          18446744073709549568.0,
                                          INFINITY,
                                          -INFINITY,
                                          NAN,
                                          1e-300,
                                          -1e300,
                                          123456.789,
                                          -98765.4321};

static void test_f64_to_int(void **state) {
  struct ptx_fixture *f = fixture(state);
  enum { N = 250 };
  double x[N];
  int32_t o32[8 * N];
  int64_t o64[8 * N];
  uint64_t st = 0xc4700002ull;
  for (size_t i = 0; i < N; i++) x[i] = i < COUNT(cvt_f64_specials) ? cvt_f64_specials[i] : f64_random(&st, -3, 66);
  void *dx = ptx_dev(f->ctx, x, sizeof x);
  void *d32 = ptx_dev(f->ctx, NULL, sizeof o32), *d64 = ptx_dev(f->ctx, NULL, sizeof o64);
  int n = N;
  ptx_run(f, "f64_to_int", ptx_grid_for(N, 96), DIM1(96), 0, ARGS(&dx, &d32, &d64, &n));
  ptx_get(f->ctx, o32, d32, sizeof o32);
  ptx_get(f->ctx, o64, d64, sizeof o64);
  check_to_int("f64_to_int", N, x, o32, o64, true);
}

/* The integer -mag (neg) or mag rounded to `bits` significant bits in `mode`; exact in a double. */
static double round_integer(uint64_t mag, bool neg, int bits, enum rmode mode) {
  if (mag == 0) return 0.0;
  int width = 64 - (int)clz64(mag);
  double sign = neg ? -1.0 : 1.0;
  if (width <= bits) return sign * (double)mag;
  int drop = width - bits;
  uint64_t kept = mag >> drop, rest = mag & ((UINT64_C(1) << drop) - 1), half = UINT64_C(1) << (drop - 1);
  bool up;
  switch (mode) {
  case RN: up = rest > half || (rest == half && (kept & 1)); break;
  case RZ: up = false; break;
  case RD: up = neg && rest != 0; break;
  default: up = !neg && rest != 0; break;
  }
  return sign * ldexp((double)(kept + up), drop);
}

static double round_signed(int64_t v, int bits, enum rmode mode) {
  return round_integer(v < 0 ? 0u - (uint64_t)v : (uint64_t)v, v < 0, bits, mode);
}

static void test_int_to_float(void **state) {
  struct ptx_fixture *f = fixture(state);
  enum { N = 260 };
  int64_t a[N];
  float of[16 * N];
  double od[10 * N];
  static const int64_t specials[] = {0,
                                     1,
                                     -1,
                                     16777217,
                                     16777219,
                                     -16777219,
                                     INT32_MAX,
                                     INT32_MIN,
                                     UINT32_MAX,
                                     INT64_C(9007199254740993),
                                     -INT64_C(9007199254740995),
                                     INT64_MAX,
                                     INT64_MIN,
                                     INT64_C(0x7fffff8000000000),
                                     INT64_C(0x7fffffc000000001)};
  uint64_t st = 0x17f10a7ull;
  for (size_t i = 0; i < N; i++) a[i] = i < COUNT(specials) ? specials[i] : s64(ptx_rand64(&st)) >> (i % 63);
  void *da = ptx_dev(f->ctx, a, sizeof a);
  void *df = ptx_dev(f->ctx, NULL, sizeof of), *dd = ptx_dev(f->ctx, NULL, sizeof od);
  int n = N;
  ptx_run(f, "int_to_float", ptx_grid_for(N, 64), DIM1(64), 0, ARGS(&da, &df, &dd, &n));
  ptx_get(f->ctx, of, df, sizeof of);
  ptx_get(f->ctx, od, dd, sizeof od);
  static const char *const from[4] = {"s32", "u32", "s64", "u64"};
  for (size_t i = 0; i < N; i++) {
    uint64_t v = (uint64_t)a[i];
    int32_t sv = s32((uint32_t)v);
    for (int j = 0; j < 16; j++) {
      enum rmode m = (enum rmode)(j % 4);
      double want = j < 4    ? round_signed(sv, 24, m)
                    : j < 8  ? round_integer((uint32_t)v, false, 24, m)
                    : j < 12 ? round_signed(a[i], 24, m)
                             : round_integer(v, false, 24, m);
      char what[32];
      snprintf(what, sizeof what, "%s to f32.%s", from[j / 4], rmode_names[m]);
      ptx_expect(ptx_same_f32(of[16 * i + j], (float)want), "int_to_float", what, i, "v=%lld: got %a, expected %a",
                 (long long)a[i], (double)of[16 * i + j], want);
    }
    double dwant[10] = {sv, (double)(uint32_t)v};
    for (int m = RN; m <= RU; m++) {
      dwant[2 + m] = round_signed(a[i], 53, (enum rmode)m);
      dwant[6 + m] = round_integer(v, false, 53, (enum rmode)m);
    }
    for (int j = 0; j < 10; j++)
      ptx_expect(ptx_same_f64(od[10 * i + j], dwant[j]), "int_to_float", "to f64", i,
                 "v=%lld, result %d: got %a, expected %a", (long long)a[i], j, od[10 * i + j], dwant[j]);
  }
}

static float double_to_float(double x, enum rmode mode) {
  int saved = fegetround();
  fesetround(fe_modes[mode]);
  volatile double v = x;
  volatile float r = (float)v;
  fesetround(saved);
  return r;
}

static void test_float_double(void **state) {
  struct ptx_fixture *f = fixture(state);
  enum { N = 200 };
  double a[N], od[5 * N];
  float of[9 * N];
  static const double specials[] = {0.0,       -0.0,     1e300,    -1e300,   1e-300, -1e-300, 3.4028235677973366e38,
                                    1e-40,     -1.5e-45, 0.1,      -2.5,     2.5,    3.5,     0.99999999,
                                    1.0000001, NAN,      INFINITY, -INFINITY};
  uint64_t st = 0xf10a7ull;
  for (size_t i = 0; i < N; i++) a[i] = i < COUNT(specials) ? specials[i] : f64_random(&st, -150, 130);
  void *da = ptx_dev(f->ctx, a, sizeof a);
  void *df = ptx_dev(f->ctx, NULL, sizeof of), *dd = ptx_dev(f->ctx, NULL, sizeof od);
  int n = N;
  ptx_run(f, "float_double", ptx_grid_for(N, 64), DIM1(64), 0, ARGS(&da, &df, &dd, &n));
  ptx_get(f->ctx, of, df, sizeof of);
  ptx_get(f->ctx, od, dd, sizeof od);
  static const char *const fnames[9] = {"f64 to f32.rn", "f64 to f32.rz", "f64 to f32.rm", "f64 to f32.rp", "rintf",
                                        "truncf",        "floorf",        "ceilf",         "__saturatef"};
  static const char *const dnames[5] = {"f32 to f64", "rint", "trunc", "floor", "ceil"};
  for (size_t i = 0; i < N; i++) {
    double x = a[i];
    float fw[9];
    for (int m = RN; m <= RU; m++) fw[m] = double_to_float(x, (enum rmode)m);
    float r = fw[0];
    fw[4] = nearbyintf(r);
    fw[5] = truncf(r);
    fw[6] = floorf(r);
    fw[7] = ceilf(r);
    fw[8] = isnan(r) || r <= 0.0f ? 0.0f : r > 1.0f ? 1.0f : r;
    for (int j = 0; j < 9; j++)
      ptx_expect(f32_matches(of[9 * i + j], fw[j], j == 8 ? SAME_VALUE : SAME_BITS), "float_double", fnames[j], i,
                 "x=%a: got %a, expected %a", x, (double)of[9 * i + j], (double)fw[j]);
    double dw[5] = {(double)r, nearbyint(x), trunc(x), floor(x), ceil(x)};
    for (int j = 0; j < 5; j++)
      ptx_expect(ptx_same_f64(od[5 * i + j], dw[j]), "float_double", dnames[j], i, "x=%a: got %a, expected %a", x,
                 od[5 * i + j], dw[j]);
  }
}

/* x rounded to IEEE half precision in `mode`, as its bits (a NaN as 0x7e00 with x's sign). */
static uint16_t f32_to_f16(float x, enum rmode mode) {
  uint16_t sign = (uint16_t)((ptx_f32_bits(x) >> 16) & 0x8000u);
  bool neg = sign != 0;
  if (isnan(x)) return sign | 0x7e00u;
  if (isinf(x)) return sign | 0x7c00u;
  double mag = fabs((double)x);
  if (mag == 0) return sign;
  int e;
  frexp(mag, &e); /* mag in [2^(e-1), 2^e) */
  int quantum = e - 1 < -14 ? -24 : e - 1 - 10;
  double scaled = ldexp(mag, -quantum), k = floor(scaled), rest = scaled - k;
  bool up;
  switch (mode) {
  case RN: up = rest > 0.5 || (rest == 0.5 && fmod(k, 2.0) == 1.0); break;
  case RZ: up = false; break;
  case RD: up = neg && rest > 0; break;
  default: up = !neg && rest > 0; break;
  }
  double r = ldexp(k + up, quantum);
  if (r > 65504.0) { /* overflow: infinity when rounding away from zero, else the largest half */
    bool away = mode == RN || (mode == RU && !neg) || (mode == RD && neg);
    return sign | (away ? 0x7c00u : 0x7bffu);
  }
  if (r < 0x1p-14) return sign | (uint16_t)ldexp(r, 24);
  frexp(r, &e);
  return sign | (uint16_t)((e - 1 + 15) << 10) | (uint16_t)(ldexp(r, -(e - 1)) * 1024.0 - 1024.0);
}

static float f16_to_f32(uint16_t h) {
  int exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
  double v = exp == 0 ? ldexp(mant, -24) : exp == 31 ? (mant ? NAN : INFINITY) : ldexp(1024 + mant, exp - 25);
  return (float)((h & 0x8000u) ? -v : v);
}

static bool same_f16(uint16_t got, uint16_t want) {
  bool got_nan = (got & 0x7c00u) == 0x7c00u && (got & 0x3ffu) != 0;
  bool want_nan = (want & 0x7c00u) == 0x7c00u && (want & 0x3ffu) != 0;
  return got_nan && want_nan ? true : got == want;
}

static void test_half_convert(void **state) {
  struct ptx_fixture *f = fixture(state);
  enum { N = 220 };
  float a[N], of[4 * N];
  uint16_t oh[4 * N];
  static const float specials[] = {0.0f,      -0.0f,     1.0f,     -1.0f,     65504.0f,     65519.99f,
                                   65520.0f,  -65520.0f, 70000.0f, -70000.0f, 1e-8f,        -1e-8f,
                                   0x1p-24f,  0x1p-25f,  0x3p-26f, 0x1p-14f,  0x1.ffcp-15f, 1.0f / 3,
                                   -1.0f / 3, 2049.0f,   2051.0f,  NAN,       INFINITY,     -INFINITY};
  uint64_t st = 0x4a1full;
  for (size_t i = 0; i < N; i++) a[i] = i < COUNT(specials) ? specials[i] : f32_random(&st, -26, 17);
  void *da = ptx_dev(f->ctx, a, sizeof a);
  void *dh = ptx_dev(f->ctx, NULL, sizeof oh), *df = ptx_dev(f->ctx, NULL, sizeof of);
  int n = N;
  ptx_run(f, "half_convert", ptx_grid_for(N, 64), DIM1(64), 0, ARGS(&da, &dh, &df, &n));
  ptx_get(f->ctx, oh, dh, sizeof oh);
  ptx_get(f->ctx, of, df, sizeof of);
  for (size_t i = 0; i < N; i++)
    for (int m = RN; m <= RU; m++) {
      uint16_t want = f32_to_f16(a[i], (enum rmode)m);
      char what[32];
      snprintf(what, sizeof what, "cvt.%s.f16.f32", rmode_names[m]);
      ptx_expect(same_f16(oh[4 * i + m], want), "half_convert", what, i, "x=%a: got 0x%04x, expected 0x%04x",
                 (double)a[i], oh[4 * i + m], want);
      ptx_expect(ptx_same_f32(of[4 * i + m], f16_to_f32(want)), "half_convert", "cvt.f32.f16", i,
                 "half 0x%04x: got %a, expected %a", want, (double)of[4 * i + m], (double)f16_to_f32(want));
    }
}

static int64_t clamp64(int64_t v, int64_t lo, int64_t hi) { return v < lo ? lo : v > hi ? hi : v; }

static void test_int_narrow(void **state) {
  struct ptx_fixture *f = fixture(state);
  enum { N = 200, OPS = 12 };
  static const char *const names[OPS] = {"to s8",           "to u8",           "to s16",          "to u16",
                                         "cvt.sat.s8.s32",  "cvt.sat.u8.s32",  "cvt.sat.s16.s32", "cvt.sat.u16.s32",
                                         "cvt.sat.s32.s64", "cvt.sat.u32.s64", "cvt.sat.s32.u32", "cvt.rni.sat.s8.f32"};
  int64_t a[N];
  int32_t out[OPS * N];
  static const int64_t specials[] = {0,
                                     127,
                                     128,
                                     -128,
                                     -129,
                                     255,
                                     256,
                                     32767,
                                     32768,
                                     -32769,
                                     65535,
                                     65536,
                                     -1,
                                     INT32_MAX,
                                     INT32_MIN,
                                     UINT32_MAX,
                                     INT64_C(1) << 32,
                                     INT64_MAX,
                                     INT64_MIN,
                                     12750,
                                     12751,
                                     -12850,
                                     12850,
                                     250,
                                     -250};
  uint64_t st = 0x5a7ull;
  for (size_t i = 0; i < N; i++) a[i] = i < COUNT(specials) ? specials[i] : s64(ptx_rand64(&st)) >> (i % 63);
  void *da = ptx_dev(f->ctx, a, sizeof a), *dout = ptx_dev(f->ctx, NULL, sizeof out);
  int n = N;
  ptx_run(f, "int_narrow", ptx_grid_for(N, 64), DIM1(64), 0, ARGS(&da, &dout, &n));
  ptx_get(f->ctx, out, dout, sizeof out);
  for (size_t i = 0; i < N; i++) {
    int64_t v = a[i];
    uint32_t u = (uint32_t)(uint64_t)v;
    int32_t s = s32(u);
    volatile float scaled = (float)s * 0.01f; /* the kernel's cvt.rn.f32.s32 and mul.rn.f32 */
    int32_t want[OPS] = {(int32_t)(u & 0xffu) - ((u & 0x80u) ? 256 : 0),
                         (int32_t)(u & 0xffu),
                         (int32_t)(u & 0xffffu) - ((u & 0x8000u) ? 65536 : 0),
                         (int32_t)(u & 0xffffu),
                         (int32_t)clamp64(s, -128, 127),
                         (int32_t)clamp64(s, 0, 255),
                         (int32_t)clamp64(s, -32768, 32767),
                         (int32_t)clamp64(s, 0, 65535),
                         (int32_t)clamp64(v, INT32_MIN, INT32_MAX),
                         s32((uint32_t)clamp64(v, 0, UINT32_MAX)),
                         u > INT32_MAX ? INT32_MAX : s,
                         (int32_t)clamp64((int64_t)nearbyintf(scaled), -128, 127)};
    for (int j = 0; j < OPS; j++)
      ptx_expect(out[OPS * i + j] == want[j], "int_narrow", names[j], i, "v=%lld: got %d, expected %d", (long long)v,
                 out[OPS * i + j], want[j]);
  }
}

/* ============================================================== control flow */

/* Values with both parities, signs and residues: a mix of small and moderate magnitudes. */
static void control_inputs(int32_t *a, size_t n, uint64_t seed) {
  uint64_t st = seed;
  for (size_t i = 0; i < n; i++) a[i] = (int32_t)(ptx_rand32(&st) % 40001u) - 20000;
}

static int32_t branches_reference(int32_t x, uint32_t tid) {
  int32_t r;
  if (x & 1) r = x % 3 == 0 ? s32((uint32_t)x * 5u) : x - 7;
  else if (x < 0) r = -x;
  else r = x / 2 + 100;
  if (tid % 4 == 1) r ^= 0x5a5a;
  return r;
}

static void test_branches(void **state) {
  struct ptx_fixture *f = fixture(state);
  enum { N = 333, B = 96 };
  int32_t a[N], out[N];
  control_inputs(a, N, 11);
  void *da = ptx_dev(f->ctx, a, sizeof a), *dout = ptx_dev(f->ctx, NULL, sizeof out);
  int n = N;
  ptx_run(f, "branches", ptx_grid_for(N, B), DIM1(B), 0, ARGS(&da, &dout, &n));
  ptx_get(f->ctx, out, dout, sizeof out);
  for (size_t i = 0; i < N; i++) {
    int32_t want = branches_reference(a[i], (uint32_t)(i % B));
    ptx_expect(out[i] == want, "branches", "result", i, "x=%d: got %d, expected %d", a[i], out[i], want);
  }
}

static void test_lane_loops(void **state) {
  struct ptx_fixture *f = fixture(state);
  enum { N = 200 };
  int32_t a[N], steps[N], peak[N];
  uint64_t st = 12;
  for (size_t i = 0; i < N; i++) a[i] = i < 3 ? (int32_t)i - 1 : (int32_t)(ptx_rand32(&st) % 3000u) + 1;
  a[3] = 27; /* 111 steps, a peak of 9232 */
  void *da = ptx_dev(f->ctx, a, sizeof a), *ds = ptx_dev(f->ctx, NULL, sizeof steps);
  void *dp = ptx_dev(f->ctx, NULL, sizeof peak);
  int n = N;
  ptx_run(f, "lane_loops", ptx_grid_for(N, 64), DIM1(64), 0, ARGS(&da, &ds, &dp, &n));
  ptx_get(f->ctx, steps, ds, sizeof steps);
  ptx_get(f->ctx, peak, dp, sizeof peak);
  for (size_t i = 0; i < N; i++) {
    uint32_t v = (uint32_t)a[i], top = v;
    int s = 0;
    while (v > 1 && s < 500) {
      s++;
      if (v & 1) {
        v = 3 * v + 1;
        top = top > v ? top : v;
      } else {
        v >>= 1;
      }
    }
    ptx_expect(steps[i] == s && (uint32_t)peak[i] == top, "lane_loops", "steps and peak", i,
               "x=%d: got %d steps peak %u, expected %d steps peak %u", a[i], steps[i], (uint32_t)peak[i], s, top);
  }
}

static void test_early_exit(void **state) {
  struct ptx_fixture *f = fixture(state);
  enum { N = 300 };
  int32_t a[N], out[N];
  control_inputs(a, N, 13);
  void *da = ptx_dev(f->ctx, a, sizeof a), *dout = ptx_dev(f->ctx, NULL, sizeof out);
  int n = N;
  ptx_run(f, "early_exit", ptx_grid_for(N, 64), DIM1(64), 0, ARGS(&da, &dout, &n));
  ptx_get(f->ctx, out, dout, sizeof out);
  for (size_t i = 0; i < N; i++) {
    int32_t x = a[i], want = -1;
    if (x >= 0) {
      int32_t acc = 0;
      bool left = false;
      for (int k = 0; k < x % 37 && !left; k++) {
        acc += k * x;
        left = acc > 100000;
      }
      if (!left) want = acc;
    }
    ptx_expect(out[i] == want, "early_exit", "result", i, "x=%d: got %d, expected %d", x, out[i], want);
  }
}

static int32_t jump_reference(int32_t x) {
  uint32_t u = (uint32_t)x;
  switch (x & 15) {
  case 0: return x + 1;
  case 1: return s32(u * 3u);
  case 2: return x ^ 0xff;
  case 3: return s32(u << 2);
  case 4: return -x;
  case 5: return x - 1000;
  case 6: return x | 0x1000;
  case 7: return x & 0x0f0f;
  case 8: return sar32(x, 1);
  case 9: return s32(u * u);
  case 10: return ~x;
  case 11: return x + 77;
  default: return 0;
  }
}

static void test_jump_table(void **state) {
  struct ptx_fixture *f = fixture(state);
  enum { N = 256 };
  int32_t a[N], out[N];
  control_inputs(a, N, 14);
  void *da = ptx_dev(f->ctx, a, sizeof a), *dout = ptx_dev(f->ctx, NULL, sizeof out);
  int n = N;
  ptx_run(f, "jump_table", ptx_grid_for(N, 96), DIM1(96), 0, ARGS(&da, &dout, &n));
  ptx_get(f->ctx, out, dout, sizeof out);
  for (size_t i = 0; i < N; i++)
    ptx_expect(out[i] == jump_reference(a[i]), "jump_table", "result", i, "x=%d: got %d, expected %d", a[i], out[i],
               jump_reference(a[i]));
}

static void test_predicated(void **state) {
  struct ptx_fixture *f = fixture(state);
  enum { N = 150 };
  int32_t a[N], out[2 * N];
  control_inputs(a, N, 15);
  void *da = ptx_dev(f->ctx, a, sizeof a), *dout = ptx_dev(f->ctx, NULL, sizeof out);
  int n = N;
  ptx_run(f, "predicated", ptx_grid_for(N, 64), DIM1(64), 0, ARGS(&da, &dout, &n));
  ptx_get(f->ctx, out, dout, sizeof out);
  for (size_t i = 0; i < N; i++) {
    int32_t x = a[i], r = x > 10 ? x - 10 : 10 - x;
    if (x & 2) r += 3;
    int32_t second = (x & 4) ? x : 0;
    ptx_expect(out[2 * i] == r && out[2 * i + 1] == second, "predicated", "results", i,
               "x=%d: got %d %d, expected %d %d", x, out[2 * i], out[2 * i + 1], r, second);
  }
}

/* ================================================================= functions */

static int32_t fib_reference(int32_t n) { return n < 2 ? n : fib_reference(n - 1) + fib_reference(n - 2); }

static uint32_t depth_sum_reference(uint32_t n, uint32_t seed) {
  uint32_t frame[4];
  for (uint32_t k = 0; k < 4; k++) frame[k] = seed + n * 4 + k;
  if (n == 0) return frame[seed & 3];
  return frame[(seed + n) & 3] + depth_sum_reference(n - 1, seed * 3 + 1);
}

static void test_calls(void **state) {
  struct ptx_fixture *f = fixture(state);
  enum { N = 100 };
  int32_t a[N], iout[2 * N];
  float fout[N];
  control_inputs(a, N, 16);
  void *da = ptx_dev(f->ctx, a, sizeof a), *df = ptx_dev(f->ctx, NULL, sizeof fout);
  void *di = ptx_dev(f->ctx, NULL, sizeof iout);
  int n = N;
  ptx_run(f, "calls", ptx_grid_for(N, 64), DIM1(64), 0, ARGS(&da, &df, &di, &n));
  ptx_get(f->ctx, fout, df, sizeof fout);
  ptx_get(f->ctx, iout, di, sizeof iout);
  for (size_t i = 0; i < N; i++) {
    int32_t x = a[i];
    int64_t b = s64((uint64_t)(int64_t)x << 20);
    /* The products by 0.25 and 0.5 are exact: fused or not, each sum rounds once. */
    volatile float sum = (float)(x + b) * 0.25f;
    sum = sum + (float)(double)i;
    sum = sum + (float)(x & 7) * 0.5f;
    ptx_expect(ptx_same_f32(fout[i], sum), "calls", "mix", i, "x=%d: got %a, expected %a", x, (double)fout[i],
               (double)sum);
    int32_t fw = fib_reference(x & 15), dw = s32(depth_sum_reference((uint32_t)(x & 7), (uint32_t)i));
    ptx_expect(iout[2 * i] == fw, "calls", "fib", i, "n=%d: got %d, expected %d", x & 15, iout[2 * i], fw);
    ptx_expect(iout[2 * i + 1] == dw, "calls", "depth_sum", i, "got %d, expected %d", iout[2 * i + 1], dw);
  }
}

static void test_local_array(void **state) {
  struct ptx_fixture *f = fixture(state);
  enum { N = 130 };
  int32_t a[N], idx[N], out[17 * N];
  control_inputs(a, N, 17);
  uint64_t st = 18;
  for (size_t i = 0; i < N; i++) idx[i] = (int32_t)(ptx_rand32(&st) & 0xff);
  void *da = ptx_dev(f->ctx, a, sizeof a), *di = ptx_dev(f->ctx, idx, sizeof idx);
  void *dout = ptx_dev(f->ctx, NULL, sizeof out);
  int n = N;
  ptx_run(f, "local_array", ptx_grid_for(N, 64), DIM1(64), 0, ARGS(&da, &di, &dout, &n));
  ptx_get(f->ctx, out, dout, sizeof out);
  for (size_t i = 0; i < N; i++) {
    int32_t v[16];
    for (int k = 0; k < 16; k++) v[k] = a[(i + (size_t)k * 7) % N] ^ k;
    int32_t picked = v[idx[i] & 15];
    v[idx[i] & 15] = -picked;
    int len = 9 + ((idx[i] >> 4) & 7);
    for (int k = 1; k < len; k++) { /* the kernel's insertion sort */
      int32_t x = v[k];
      int j = k - 1;
      for (; j >= 0 && v[j] > x; j--) v[j + 1] = v[j];
      v[j + 1] = x;
    }
    ptx_expect(out[17 * i] == picked, "local_array", "picked", i, "got %d, expected %d", out[17 * i], picked);
    for (int k = 0; k < 16; k++)
      ptx_expect(out[17 * i + 1 + k] == v[k], "local_array", "sorted element", i, "slot %d: got %d, expected %d", k,
                 out[17 * i + 1 + k], v[k]);
  }
}

/* ==================================================================== memory */

static void *global_of(struct ptx_fixture *f, const char *name, size_t expected_bytes) {
  void *p = NULL;
  size_t bytes = 0;
  assert_ok(gcap_module_get_global(f->m, name, &p, &bytes));
  assert_non_null(p);
  assert_int_equal(bytes, expected_bytes);
  return p;
}

static void test_constants(void **state) {
  struct ptx_fixture *f = fixture(state);
  enum { N = 150 };
  static const float coeffs[8] = {1.0f, -2.0f, 0.5f, 4.0f, -0.25f, 8.0f, 3.0f, -1.5f};
  static const int32_t table[16] = {3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8, 9, 7, 9, 3};
  float got_coeffs[8];
  ptx_get(f->ctx, got_coeffs, global_of(f, "coeffs", sizeof coeffs), sizeof got_coeffs);
  assert_memory_equal(got_coeffs, coeffs, sizeof coeffs);
  int32_t bias = 0;
  void *dbias = global_of(f, "bias", sizeof bias);
  ptx_get(f->ctx, &bias, dbias, sizeof bias);
  assert_int_equal(bias, 42);
  bias = -1000; /* the kernel must see what the host wrote */
  ptx_put(f->ctx, dbias, &bias, sizeof bias);

  float x[N], y[N];
  int32_t z[N];
  for (size_t i = 0; i < N; i++) x[i] = (float)((double)i / N * 4.0 - 2.0);
  void *dx = ptx_dev(f->ctx, x, sizeof x), *dy = ptx_dev(f->ctx, NULL, sizeof y), *dz = ptx_dev(f->ctx, NULL, sizeof z);
  int n = N;
  ptx_run(f, "constants", ptx_grid_for(N, 64), DIM1(64), 0, ARGS(&dx, &dy, &dz, &n));
  ptx_get(f->ctx, y, dy, sizeof y);
  ptx_get(f->ctx, z, dz, sizeof z);
  for (size_t i = 0; i < N; i++) {
    volatile float acc = 0.0f, p;
    for (int k = 7; k >= 0; k--) {
      p = acc * x[i];
      acc = p + coeffs[k];
    }
    ptx_expect(ptx_same_f32(y[i], acc), "constants", "Horner", i, "x=%a: got %a, expected %a", (double)x[i],
               (double)y[i], (double)acc);
    ptx_expect(z[i] == table[(i * 5) & 15] + bias, "constants", "table + bias", i, "got %d, expected %d", z[i],
               table[(i * 5) & 15] + bias);
  }
  uint64_t launches = 0;
  ptx_get(f->ctx, &launches, global_of(f, "launches", sizeof launches), sizeof launches);
  assert_int_equal(launches, N);
}

static void test_globals(void **state) {
  struct ptx_fixture *f = fixture(state);
  enum { N = 100 };
  double out[N], scales[3];
  ptx_get(f->ctx, scales, global_of(f, "scales", sizeof scales), sizeof scales);
  assert_true(scales[0] == 0.5 && scales[1] == 2.0 && scales[2] == -3.0);
  void *dout = ptx_dev(f->ctx, NULL, sizeof out);
  int n = N;
  ptx_run(f, "globals", ptx_grid_for(N, 64), DIM1(64), 0, ARGS(&dout, &n));
  ptx_get(f->ctx, out, dout, sizeof out);
  for (size_t i = 0; i < N; i++) {
    double want = scales[i % 3] * (double)(i + 42);
    ptx_expect(out[i] == want, "globals", "scales * (i + bias)", i, "got %a, expected %a", out[i], want);
  }
}

static void test_vectors(void **state) {
  struct ptx_fixture *f = fixture(state);
  enum { N = 90 };
  float a[4 * N], b[4 * N];
  int32_t c[2 * N], d[2 * N];
  for (size_t i = 0; i < 4 * N; i++) a[i] = (float)i * 0.5f - 7.0f;
  for (size_t i = 0; i < 2 * N; i++) c[i] = (int32_t)(i * i) - 3000;
  void *da = ptx_dev(f->ctx, a, sizeof a), *db = ptx_dev(f->ctx, NULL, sizeof b);
  void *dc = ptx_dev(f->ctx, c, sizeof c), *dd = ptx_dev(f->ctx, NULL, sizeof d);
  int n = N;
  ptx_run(f, "vectors", ptx_grid_for(N, 32), DIM1(32), 0, ARGS(&da, &db, &dc, &dd, &n));
  ptx_get(f->ctx, b, db, sizeof b);
  ptx_get(f->ctx, d, dd, sizeof d);
  for (size_t i = 0; i < N; i++) {
    for (int k = 0; k < 4; k++)
      ptx_expect(b[4 * i + (size_t)k] == a[4 * i + 3 - (size_t)k], "vectors", "float4", i, "lane %d: got %g", k,
                 (double)b[4 * i + (size_t)k]);
    int32_t x = c[2 * i], y = c[2 * i + 1];
    ptx_expect(d[2 * i] == x + y && d[2 * i + 1] == x - y, "vectors", "int2", i, "got (%d, %d), expected (%d, %d)",
               d[2 * i], d[2 * i + 1], x + y, x - y);
  }
}

static void test_narrow(void **state) {
  struct ptx_fixture *f = fixture(state);
  enum { N = 200 };
  int8_t s8[N];
  uint8_t u8[N], bytes[N];
  int16_t s16[N], halves[N];
  uint16_t u16[N];
  int32_t out[4 * N];
  uint64_t st = 0x8b17ull;
  for (size_t i = 0; i < N; i++) {
    uint32_t r = ptx_rand32(&st);
    s8[i] = (int8_t)((int32_t)(r & 0xff) - 128);
    u8[i] = (uint8_t)(r >> 8);
    s16[i] = (int16_t)((int32_t)(r >> 16) - 32768);
    u16[i] = (uint16_t)(r ^ (r >> 13));
  }
  void *ds8 = ptx_dev(f->ctx, s8, sizeof s8), *du8 = ptx_dev(f->ctx, u8, sizeof u8);
  void *ds16 = ptx_dev(f->ctx, s16, sizeof s16), *du16 = ptx_dev(f->ctx, u16, sizeof u16);
  void *dout = ptx_dev(f->ctx, NULL, sizeof out), *db = ptx_dev(f->ctx, NULL, sizeof bytes);
  void *dh = ptx_dev(f->ctx, NULL, sizeof halves);
  int n = N;
  ptx_run(f, "narrow", ptx_grid_for(N, 64), DIM1(64), 0, ARGS(&ds8, &du8, &ds16, &du16, &dout, &db, &dh, &n));
  ptx_get(f->ctx, out, dout, sizeof out);
  ptx_get(f->ctx, bytes, db, sizeof bytes);
  ptx_get(f->ctx, halves, dh, sizeof halves);
  for (size_t i = 0; i < N; i++) {
    int32_t want[4] = {s8[i], u8[i], s16[i], u16[i]};
    for (int k = 0; k < 4; k++)
      ptx_expect(out[4 * i + (size_t)k] == want[k], "narrow", "extended load", i, "width %d: got %d, expected %d", k,
                 out[4 * i + (size_t)k], want[k]);
    uint8_t bw = (uint8_t)(u8[i] + 1);
    int16_t hw = (int16_t)(uint16_t)((uint32_t)(int32_t)s16[i] * 3u);
    ptx_expect(bytes[i] == bw && halves[i] == hw, "narrow", "narrow store", i, "got %u %d, expected %u %d", bytes[i],
               halves[i], bw, hw);
  }
}

static void test_readonly(void **state) {
  struct ptx_fixture *f = fixture(state);
  enum { N = 100 };
  float a[N], b[N];
  for (size_t i = 0; i < N; i++) a[i] = 1.0f / (float)(i + 1);
  void *da = ptx_dev(f->ctx, a, sizeof a), *db = ptx_dev(f->ctx, NULL, sizeof b);
  int n = N;
  ptx_run(f, "readonly", ptx_grid_for(N, 64), DIM1(64), 0, ARGS(&da, &db, &n));
  ptx_get(f->ctx, b, db, sizeof b);
  for (size_t i = 0; i < N; i++) {
    volatile float want = a[i] + a[(i + 1) % N];
    ptx_expect(ptx_same_f32(b[i], want), "readonly", "sum", i, "got %a, expected %a", (double)b[i], (double)want);
  }
}

static void test_generic(void **state) {
  struct ptx_fixture *f = fixture(state);
  enum { N = 150 };
  float a[N], out[3 * N];
  uint32_t where[3 * N];
  for (size_t i = 0; i < N; i++) a[i] = (float)i * 0.3f + 1.0f;
  void *da = ptx_dev(f->ctx, a, sizeof a), *dout = ptx_dev(f->ctx, NULL, sizeof out);
  void *dwhere = ptx_dev(f->ctx, NULL, sizeof where);
  int n = N;
  ptx_run(f, "generic", ptx_grid_for(N, 64), DIM1(64), 0, ARGS(&da, &dout, &dwhere, &n));
  ptx_get(f->ctx, out, dout, sizeof out);
  ptx_get(f->ctx, where, dwhere, sizeof where);
  static const char *const spaces[3] = {"shared", "global", "local"};
  for (size_t i = 0; i + 2 < N; i++) {
    volatile float s = a[i] + a[i + 1], twice = 2.0f * a[i], thrice = 3.0f * a[i];
    float from_memory = s + a[i + 2];
    volatile float l = a[i] + twice;
    float from_local = l + thrice;
    float want[3] = {from_memory, from_memory, from_local};
    for (int k = 0; k < 3; k++) {
      ptx_expect(ptx_same_f32(out[3 * i + (size_t)k], want[k]), "generic", spaces[k], i, "got %a, expected %a",
                 (double)out[3 * i + (size_t)k], (double)want[k]);
      ptx_expect(where[3 * i + (size_t)k] == 1u << k, "generic", "isspacep", i, "%s pointer: got %u, expected %u",
                 spaces[k], where[3 * i + (size_t)k], 1u << k);
    }
  }
}

/* ============================================================= shared memory */

static void test_reverse_static(void **state) {
  struct ptx_fixture *f = fixture(state);
  enum { N = 300, B = 128 };
  int32_t in[N], out[N];
  for (size_t i = 0; i < N; i++) in[i] = (int32_t)(i * 7 + 1);
  void *din = ptx_dev(f->ctx, in, sizeof in), *dout = ptx_dev(f->ctx, NULL, sizeof out);
  int n = N;
  ptx_run(f, "reverse_static", ptx_grid_for(N, B), DIM1(B), 0, ARGS(&din, &dout, &n));
  ptx_get(f->ctx, out, dout, sizeof out);
  for (size_t i = 0; i < N; i++) {
    size_t base = i / B * B, j = base + (B - 1 - i % B);
    int32_t want = j < N ? in[j] : -1;
    ptx_expect(out[i] == want, "reverse_static", "value", i, "got %d, expected %d", out[i], want);
  }
}

static void test_tile_2d(void **state) {
  struct ptx_fixture *f = fixture(state);
  enum { BLOCKS = 5 };
  int32_t in[BLOCKS * 64], rows[BLOCKS * 8], cols[BLOCKS * 8];
  for (size_t i = 0; i < COUNT(in); i++) in[i] = (int32_t)((i * 37) % 101) - 50;
  void *din = ptx_dev(f->ctx, in, sizeof in), *dr = ptx_dev(f->ctx, NULL, sizeof rows);
  void *dc = ptx_dev(f->ctx, NULL, sizeof cols);
  ptx_run(f, "tile_2d", DIM1(BLOCKS), GCAP_DIM3(8, 8, 1), 0, ARGS(&din, &dr, &dc));
  ptx_get(f->ctx, rows, dr, sizeof rows);
  ptx_get(f->ctx, cols, dc, sizeof cols);
  for (size_t b = 0; b < BLOCKS; b++)
    for (size_t k = 0; k < 8; k++) {
      int32_t r = 0, c = 0;
      for (size_t j = 0; j < 8; j++) {
        r += in[b * 64 + k * 8 + j];
        c += in[b * 64 + j * 8 + k];
      }
      ptx_expect(rows[b * 8 + k] == r && cols[b * 8 + k] == c, "tile_2d", "row and column sums", b * 8 + k,
                 "got %d %d, expected %d %d", rows[b * 8 + k], cols[b * 8 + k], r, c);
    }
}

static void test_dynamic_split(void **state) {
  struct ptx_fixture *f = fixture(state);
  enum { B = 48, BLOCKS = 4, N = B * BLOCKS };
  float in[N], sums[N];
  int32_t neg[N];
  for (size_t i = 0; i < N; i++) in[i] = (float)((int)(i * 13 % 29) - 14) * 0.75f;
  void *din = ptx_dev(f->ctx, in, sizeof in), *ds = ptx_dev(f->ctx, NULL, sizeof sums);
  void *dn = ptx_dev(f->ctx, NULL, sizeof neg);
  ptx_run(f, "dynamic_split", DIM1(BLOCKS), DIM1(B), 2 * B * 4, ARGS(&din, &ds, &dn));
  ptx_get(f->ctx, sums, ds, sizeof sums);
  ptx_get(f->ctx, neg, dn, sizeof neg);
  for (size_t i = 0; i < N; i++) {
    size_t base = i / B * B, l = base + (i % B + B - 1) % B, r = base + (i % B + 1) % B;
    volatile float want = in[l] + in[r];
    int32_t nw = (in[l] < 0.0f) + (in[r] < 0.0f);
    ptx_expect(ptx_same_f32(sums[i], want) && neg[i] == nw, "dynamic_split", "neighbours", i,
               "got %g %d, expected %g %d", (double)sums[i], neg[i], (double)want, nw);
  }
}

/* =================================================================== atomics */

/* Mirrors struct counters of atomics.cu, field for field (no padding on either side). */
struct counters {
  uint64_t add_u64;
  double add_d;
  int64_t min_64;
  uint64_t max_64;
  uint64_t xor_64;
  uint64_t cas_sum_64;
  int32_t add_i;
  float add_f;
  int32_t sub_i;
  int32_t min_i;
  int32_t max_i;
  uint32_t min_u;
  uint32_t max_u;
  uint32_t inc;
  uint32_t dec;
  uint32_t and_u;
  uint32_t or_u;
  uint32_t xor_u;
  int32_t cas_sum;
  int32_t exch;
  int32_t red_add;
  uint32_t red_or;
};
_Static_assert(sizeof(struct counters) == 112, "struct counters must match atomics.cu");

static struct counters counters_initial(void) {
  return (struct counters){.add_u64 = UINT64_C(1) << 40,
                           .add_d = -2.25,
                           .min_64 = 0,
                           .max_64 = 0,
                           .xor_64 = UINT64_C(0x0123456789abcdef),
                           .cas_sum_64 = 11,
                           .add_i = 5,
                           .add_f = 1.5f,
                           .sub_i = 1000,
                           .min_i = 0,
                           .max_i = 0,
                           .min_u = UINT32_MAX,
                           .max_u = 0,
                           .inc = 3,
                           .dec = 2,
                           .and_u = UINT32_MAX,
                           .or_u = 0,
                           .xor_u = 0x12345678u,
                           .cas_sum = 7,
                           .exch = -1,
                           .red_add = 100,
                           .red_or = 0x10000u};
}

static int32_t operand(int32_t i) { return (int32_t)(((uint32_t)i * 2654435761u) >> 7); }

/* The counters after threads 0..n-1 applied every operation once, in any order (they commute). */
static struct counters counters_after(struct counters c, int32_t n) {
  for (int32_t i = 0; i < n; i++) {
    int32_t v = operand(i);
    c.add_i++;
    c.add_u64 += (uint64_t)v << 20;
    c.add_f += (float)(i & 63) * 0.25f;
    c.add_d += (double)i * 0.5;
    c.sub_i -= i;
    c.min_i = c.min_i < v - (1 << 23) ? c.min_i : v - (1 << 23);
    c.max_i = c.max_i > v - (1 << 23) ? c.max_i : v - (1 << 23);
    c.min_u = c.min_u < (uint32_t)v ? c.min_u : (uint32_t)v;
    c.max_u = c.max_u > (uint32_t)v ? c.max_u : (uint32_t)v;
    c.min_64 = c.min_64 < (int64_t)v * -977 ? c.min_64 : (int64_t)v * -977;
    c.max_64 = c.max_64 > (uint64_t)v * 977 ? c.max_64 : (uint64_t)v * 977;
    c.inc = c.inc >= 9u ? 0 : c.inc + 1;
    c.dec = c.dec == 0 || c.dec > 6u ? 6u : c.dec - 1;
    c.and_u &= ~(1u << (i & 31)) | 0x80000001u;
    c.or_u |= 1u << (i % 29);
    c.xor_u ^= (uint32_t)v;
    c.xor_64 ^= (uint64_t)v << 17;
    c.cas_sum += i;
    c.cas_sum_64 += (uint64_t)v;
    c.red_add += 3;
    c.red_or |= 1u << (i & 15);
  }
  return c;
}

#define EXPECT_FIELD(got, want, field, index)                                                                          \
  ptx_expect((got).field == (want).field, "atomics", #field, (index), "got %.17g, expected %.17g",                     \
             (double)(got).field, (double)(want).field)

static void check_counters(const struct counters *got, const struct counters *want, size_t index) {
  EXPECT_FIELD(*got, *want, add_u64, index);
  EXPECT_FIELD(*got, *want, add_d, index);
  EXPECT_FIELD(*got, *want, min_64, index);
  EXPECT_FIELD(*got, *want, max_64, index);
  EXPECT_FIELD(*got, *want, xor_64, index);
  EXPECT_FIELD(*got, *want, cas_sum_64, index);
  EXPECT_FIELD(*got, *want, add_i, index);
  EXPECT_FIELD(*got, *want, add_f, index);
  EXPECT_FIELD(*got, *want, sub_i, index);
  EXPECT_FIELD(*got, *want, min_i, index);
  EXPECT_FIELD(*got, *want, max_i, index);
  EXPECT_FIELD(*got, *want, min_u, index);
  EXPECT_FIELD(*got, *want, max_u, index);
  EXPECT_FIELD(*got, *want, inc, index);
  EXPECT_FIELD(*got, *want, dec, index);
  EXPECT_FIELD(*got, *want, and_u, index);
  EXPECT_FIELD(*got, *want, or_u, index);
  EXPECT_FIELD(*got, *want, xor_u, index);
  EXPECT_FIELD(*got, *want, cas_sum, index);
  EXPECT_FIELD(*got, *want, red_add, index);
  EXPECT_FIELD(*got, *want, red_or, index);
}

static int compare_int(const void *a, const void *b) {
  int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
  return (x > y) - (x < y);
}

/*
 * What n threads got back from atomicAdd(1) and atomicExch(i), and the final exch value: the
 * tickets are start, start + 1, ... once each, and the old values with the final one are the
 * initial value with 0..n-1.
 */
static void check_returns(int32_t *tickets, int32_t *exch_old, int32_t final_exch, int32_t n, int32_t start,
                          int32_t initial_exch, size_t index) {
  qsort(tickets, (size_t)n, sizeof *tickets, compare_int);
  for (int32_t i = 0; i < n; i++)
    ptx_expect(tickets[i] == start + i, "atomics", "atomicAdd old values", index, "sorted ticket %d is %d", i,
               tickets[i]);
  int32_t *all = malloc(sizeof(int32_t) * (size_t)(n + 1));
  assert_non_null(all);
  memcpy(all, exch_old, sizeof(int32_t) * (size_t)n);
  all[n] = final_exch;
  qsort(all, (size_t)n + 1, sizeof *all, compare_int);
  ptx_expect(all[0] == initial_exch, "atomics", "atomicExch old values", index, "smallest is %d", all[0]);
  for (int32_t i = 0; i < n; i++)
    ptx_expect(all[i + 1] == i, "atomics", "atomicExch old values", index, "sorted value %d is %d", i + 1, all[i + 1]);
  free(all);
}

static void test_global_atomics(void **state) {
  struct ptx_fixture *f = fixture(state);
  enum { N = 200 };
  struct counters c0 = counters_initial(), got;
  int32_t tickets[N], exch_old[N];
  void *dc = ptx_dev(f->ctx, &c0, sizeof c0), *dt = ptx_dev(f->ctx, NULL, sizeof tickets);
  void *de = ptx_dev(f->ctx, NULL, sizeof exch_old);
  int n = N;
  ptx_run(f, "global_atomics", ptx_grid_for(N, 64), DIM1(64), 0, ARGS(&dc, &dt, &de, &n));
  ptx_get(f->ctx, &got, dc, sizeof got);
  ptx_get(f->ctx, tickets, dt, sizeof tickets);
  ptx_get(f->ctx, exch_old, de, sizeof exch_old);
  struct counters want = counters_after(c0, N);
  check_counters(&got, &want, 0);
  check_returns(tickets, exch_old, got.exch, N, c0.add_i, c0.exch, 0);
}

static void test_shared_atomics(void **state) {
  struct ptx_fixture *f = fixture(state);
  enum { B = 96, BLOCKS = 3 };
  struct counters c[1 + BLOCKS] = {counters_initial()};
  int32_t tickets[B * BLOCKS], exch_old[B * BLOCKS];
  void *dc = ptx_dev(f->ctx, c, sizeof c), *dt = ptx_dev(f->ctx, NULL, sizeof tickets);
  void *de = ptx_dev(f->ctx, NULL, sizeof exch_old);
  ptx_run(f, "shared_atomics", DIM1(BLOCKS), DIM1(B), 0, ARGS(&dc, &dt, &de));
  ptx_get(f->ctx, c, dc, sizeof c);
  ptx_get(f->ctx, tickets, dt, sizeof tickets);
  ptx_get(f->ctx, exch_old, de, sizeof exch_old);
  struct counters want = counters_after(counters_initial(), B);
  for (size_t b = 0; b < BLOCKS; b++) {
    check_counters(&c[1 + b], &want, b);
    check_returns(tickets + b * B, exch_old + b * B, c[1 + b].exch, B, c[0].add_i, c[0].exch, b);
  }
}

/* ====================================================================== sync */

static void test_vote_block(void **state) {
  struct ptx_fixture *f = fixture(state);
  enum { N = 150, B = 64, BLOCKS = (N + B - 1) / B };
  int32_t a[N], out[3 * BLOCKS];
  for (size_t i = 0; i < N; i++) a[i] = i < B ? 2 * (int32_t)i + 1 : (int32_t)(i * i % 7);
  void *da = ptx_dev(f->ctx, a, sizeof a), *dout = ptx_dev(f->ctx, NULL, sizeof out);
  int n = N;
  ptx_run(f, "vote_block", DIM1(BLOCKS), DIM1(B), 0, ARGS(&da, &dout, &n));
  ptx_get(f->ctx, out, dout, sizeof out);
  for (size_t b = 0; b < BLOCKS; b++) {
    int32_t count = 0;
    for (size_t t = 0; t < B; t++) count += b * B + t < N && (a[b * B + t] & 1);
    int32_t want[3] = {count, count == B, count > 0};
    for (int k = 0; k < 3; k++)
      ptx_expect(out[3 * b + (size_t)k] == want[k], "vote_block",
                 k == 0   ? "count"
                 : k == 1 ? "and"
                          : "or",
                 b, "got %d, expected %d", out[3 * b + (size_t)k], want[k]);
  }
}

static void test_smooth(void **state) {
  struct ptx_fixture *f = fixture(state);
  enum { B = 64, BLOCKS = 2, N = B * BLOCKS, STEPS = 5 };
  int32_t in[N], out[N];
  for (size_t i = 0; i < N; i++) in[i] = (int32_t)((i * 7919) % 1000) - 500;
  void *din = ptx_dev(f->ctx, in, sizeof in), *dout = ptx_dev(f->ctx, NULL, sizeof out);
  int steps = STEPS;
  ptx_run(f, "smooth", DIM1(BLOCKS), DIM1(B), 0, ARGS(&din, &dout, &steps));
  ptx_get(f->ctx, out, dout, sizeof out);
  for (size_t b = 0; b < BLOCKS; b++) {
    int32_t v[B], next[B];
    memcpy(v, in + b * B, sizeof v);
    for (int s = 0; s < STEPS; s++) {
      for (size_t t = 0; t < B; t++) next[t] = (v[(t + B - 1) % B] + 2 * v[t] + v[(t + 1) % B]) / 4;
      memcpy(v, next, sizeof v);
    }
    for (size_t t = 0; t < B; t++)
      ptx_expect(out[b * B + t] == v[t], "smooth", "value", b * B + t, "got %d, expected %d", out[b * B + t], v[t]);
  }
}

static void test_warp_reverse(void **state) {
  struct ptx_fixture *f = fixture(state);
  enum { B = 96, BLOCKS = 2, N = B * BLOCKS };
  int32_t in[N], out[N];
  for (size_t i = 0; i < N; i++) in[i] = (int32_t)(i * 3 + 5);
  void *din = ptx_dev(f->ctx, in, sizeof in), *dout = ptx_dev(f->ctx, NULL, sizeof out);
  ptx_run(f, "warp_reverse", DIM1(BLOCKS), DIM1(B), 0, ARGS(&din, &dout));
  ptx_get(f->ctx, out, dout, sizeof out);
  for (size_t i = 0; i < N; i++) {
    size_t warp = i & ~(size_t)31, lane = i & 31;
    int32_t want = 2 * in[warp + 31 - (lane ^ 1)];
    ptx_expect(out[i] == want, "warp_reverse", "value", i, "got %d, expected %d", out[i], want);
  }
}

static void test_last_block_sum(void **state) {
  struct ptx_fixture *f = fixture(state);
  enum { N = 300, B = 64, BLOCKS = (N + B - 1) / B };
  int32_t in[N], partial[BLOCKS], total = 0, want_total = 0;
  uint32_t ticket = 0;
  for (size_t i = 0; i < N; i++) {
    in[i] = (int32_t)(i % 17) - 8 + (int32_t)i;
    want_total += in[i];
  }
  void *din = ptx_dev(f->ctx, in, sizeof in), *dp = ptx_dev(f->ctx, NULL, sizeof partial);
  void *dt = ptx_dev(f->ctx, &ticket, sizeof ticket), *dtotal = ptx_dev(f->ctx, NULL, sizeof total);
  int n = N;
  ptx_run(f, "last_block_sum", DIM1(BLOCKS), DIM1(B), 0, ARGS(&din, &dp, &dt, &dtotal, &n));
  ptx_get(f->ctx, partial, dp, sizeof partial);
  ptx_get(f->ctx, &total, dtotal, sizeof total);
  ptx_get(f->ctx, &ticket, dt, sizeof ticket);
  for (size_t b = 0; b < BLOCKS; b++) {
    int32_t s = 0;
    for (size_t i = b * B; i < (b + 1) * B && i < N; i++) s += in[i];
    ptx_expect(partial[b] == s, "last_block_sum", "block sum", b, "got %d, expected %d", partial[b], s);
  }
  assert_int_equal(total, want_total);
  assert_int_equal(ticket, BLOCKS);
}

/* ====================================================================== warps */

static void test_shuffles(void **state) {
  struct ptx_fixture *f = fixture(state);
  enum { B = 64, BLOCKS = 2, N = B * BLOCKS, OPS = 12 };
  static const char *const names[OPS] = {"shfl idx",    "shfl up 3",       "shfl down 5",      "shfl bfly 6",
                                         "shfl idx w8", "shfl up 1 w16",   "shfl down 2 w8",   "shfl bfly 4 w16",
                                         "shfl idx 40", "shfl f64 bfly 1", "shfl f32 down 31", "shfl up 32"};
  int32_t a[N], out[N * OPS];
  uint64_t st = 0x5ff1ull;
  for (size_t i = 0; i < N; i++) a[i] = (int32_t)(ptx_rand32(&st) % 2000001u) - 1000000;
  void *da = ptx_dev(f->ctx, a, sizeof a), *dout = ptx_dev(f->ctx, NULL, sizeof out);
  ptx_run(f, "shuffles", DIM1(BLOCKS), DIM1(B), 0, ARGS(&da, &dout));
  ptx_get(f->ctx, out, dout, sizeof out);
  for (size_t i = 0; i < N; i++) {
    const int32_t *v = a + (i & ~(size_t)31);
    size_t l = i & 31;
    int32_t want[OPS] = {v[(l * 7 + 3) & 31],
                         l >= 3 ? v[l - 3] : v[l],
                         l + 5 <= 31 ? v[l + 5] : v[l],
                         v[l ^ 6],
                         v[(l & ~(size_t)7) | ((l + 2) & 7)],
                         l % 16 >= 1 ? v[l - 1] : v[l],
                         l % 8 + 2 <= 7 ? v[l + 2] : v[l],
                         v[l ^ 4],
                         v[8],
                         (int32_t)((double)v[l ^ 1] * 1.5),
                         l == 0 ? v[31] : v[l],
                         v[l]};
    for (int j = 0; j < OPS; j++)
      ptx_expect(out[i * OPS + (size_t)j] == want[j], "shuffles", names[j], i, "lane %zu: got %d, expected %d", l,
                 out[i * OPS + (size_t)j], want[j]);
  }
}

static uint32_t warp_ballot(const int32_t *v, bool (*pred)(int32_t, size_t)) {
  uint32_t m = 0;
  for (size_t l = 0; l < 32; l++) m |= (uint32_t)pred(v[l], l) << l;
  return m;
}

static bool positive(int32_t v, size_t l) { return v > 0; }
static bool above_minus_1000(int32_t v, size_t l) { return v > -1000; }
static bool is_seven(int32_t v, size_t l) { return v == 7; }
static bool odd(int32_t v, size_t l) { return (v & 1) != 0; }
static bool lane_mod3(int32_t v, size_t l) { return l % 3 == 0; }
static bool odd_off_mod3(int32_t v, size_t l) { return l % 3 != 0 && (v & 1); }

static void test_votes(void **state) {
  struct ptx_fixture *f = fixture(state);
  enum { B = 64, BLOCKS = 2, N = B * BLOCKS, OPS = 6 };
  static const char *const names[OPS] = {"ballot", "all", "any", "all (false)", "activemask", "ballot ^ ballot"};
  int32_t a[N];
  uint32_t out[N * OPS];
  uint64_t st = 0x707e5ull;
  for (size_t i = 0; i < N; i++) a[i] = (int32_t)(ptx_rand32(&st) % 101u) - 50;
  for (size_t i = 96; i < N; i++) a[i] = (int32_t)(i % 13) + 1; /* warp 3: all positive */
  a[70] = -2000;                                                /* warp 2: not all above -1000 */
  a[5] = 7;
  void *da = ptx_dev(f->ctx, a, sizeof a), *dout = ptx_dev(f->ctx, NULL, sizeof out);
  ptx_run(f, "votes", DIM1(BLOCKS), DIM1(B), 0, ARGS(&da, &dout));
  ptx_get(f->ctx, out, dout, sizeof out);
  for (size_t i = 0; i < N; i++) {
    const int32_t *v = a + (i & ~(size_t)31);
    size_t l = i & 31;
    uint32_t active = l % 3 == 0 ? warp_ballot(v, lane_mod3) : (v[l] & 1) ? warp_ballot(v, odd_off_mod3) : 0;
    uint32_t want[OPS] = {warp_ballot(v, positive),
                          warp_ballot(v, above_minus_1000) == UINT32_MAX,
                          warp_ballot(v, is_seven) != 0,
                          warp_ballot(v, positive) == UINT32_MAX,
                          active,
                          warp_ballot(v, odd) ^ 0xffffu};
    for (int j = 0; j < OPS; j++)
      ptx_expect(out[i * OPS + (size_t)j] == want[j], "votes", names[j], i, "got 0x%08x, expected 0x%08x",
                 out[i * OPS + (size_t)j], want[j]);
  }
}

static void test_matches(void **state) {
  struct ptx_fixture *f = fixture(state);
  enum { B = 64, BLOCKS = 2, N = B * BLOCKS };
  int32_t a[N];
  uint32_t out[3 * N];
  for (size_t i = 0; i < N; i++) {
    size_t w = i / 32, l = i % 32;
    a[i] = w == 0 ? (int32_t)(l % 5) : w == 1 ? 42 : w == 2 ? (int32_t)(l / 4) : (int32_t)((l * l) % 3);
  }
  void *da = ptx_dev(f->ctx, a, sizeof a), *dout = ptx_dev(f->ctx, NULL, sizeof out);
  ptx_run(f, "matches", DIM1(BLOCKS), DIM1(B), 0, ARGS(&da, &dout));
  ptx_get(f->ctx, out, dout, sizeof out);
  for (size_t i = 0; i < N; i++) {
    const int32_t *v = a + (i & ~(size_t)31);
    uint32_t same = 0;
    for (size_t l = 0; l < 32; l++) same |= (uint32_t)(v[l] == a[i]) << l;
    bool all = same == UINT32_MAX;
    ptx_expect(out[3 * i] == same, "matches", "match.any", i, "got 0x%08x, expected 0x%08x", out[3 * i], same);
    ptx_expect(out[3 * i + 1] == (all ? UINT32_MAX : 0) && out[3 * i + 2] == all, "matches", "match.all", i,
               "got 0x%08x pred %u, expected all %d", out[3 * i + 1], out[3 * i + 2], all);
  }
}

static void test_partial_warp(void **state) {
  struct ptx_fixture *f = fixture(state);
  enum { B = 48, BLOCKS = 2, N = B * BLOCKS };
  int32_t a[N], out[4 * N];
  for (size_t i = 0; i < N; i++) a[i] = (int32_t)((i * 11) % 23) - 9;
  void *da = ptx_dev(f->ctx, a, sizeof a), *dout = ptx_dev(f->ctx, NULL, sizeof out);
  ptx_run(f, "partial_warp", DIM1(BLOCKS), DIM1(B), 0, ARGS(&da, &dout));
  ptx_get(f->ctx, out, dout, sizeof out);
  for (size_t i = 0; i < N; i++) {
    size_t t = i % B, first = i - t % 32, l = t % 32, width = t < 32 ? 32 : B - 32;
    int32_t sum = 0;
    uint32_t ballot = 0;
    for (size_t k = 0; k < width; k++) {
      if (k <= l) sum += a[first + k];
      ballot |= (uint32_t)(a[first + k] & 1) << k;
    }
    uint32_t mask = width == 32 ? UINT32_MAX : (1u << width) - 1;
    int32_t want[4] = {sum, a[first + width - 1], s32(ballot), s32(mask)};
    for (int j = 0; j < 4; j++)
      ptx_expect(out[4 * i + (size_t)j] == want[j], "partial_warp",
                 j == 0   ? "prefix sum"
                 : j == 1 ? "last lane"
                 : j == 2 ? "ballot"
                          : "activemask",
                 i, "got %d, expected %d", out[4 * i + (size_t)j], want[j]);
  }
}

static void test_warp_reduce(void **state) {
  struct ptx_fixture *f = fixture(state);
  enum { B = 64, BLOCKS = 2, N = B * BLOCKS, OPS = 8 };
  static const char *const names[OPS] = {"add",     "min.s32",  "max.s32", "min.u32",
                                         "max.u32", "and ^ or", "xor",     "add over odd lanes"};
  int32_t a[N];
  uint32_t out[N * OPS];
  uint64_t st = 0x4ed0ull;
  for (size_t i = 0; i < N; i++) a[i] = s32(ptx_rand32(&st)) >> (i % 20);
  void *da = ptx_dev(f->ctx, a, sizeof a), *dout = ptx_dev(f->ctx, NULL, sizeof out);
  ptx_run(f, "warp_reduce", DIM1(BLOCKS), DIM1(B), 0, ARGS(&da, &dout));
  ptx_get(f->ctx, out, dout, sizeof out);
  for (size_t i = 0; i < N; i++) {
    const int32_t *v = a + (i & ~(size_t)31);
    uint32_t sum = 0, odd_sum = 0, and_all = UINT32_MAX, or_all = 0, xor_all = 0, umin = UINT32_MAX, umax = 0;
    int32_t smin = INT32_MAX, smax = INT32_MIN;
    for (size_t l = 0; l < 32; l++) {
      uint32_t u = (uint32_t)v[l];
      sum += u;
      if (l & 1) odd_sum += u;
      and_all &= u;
      or_all |= u;
      xor_all ^= u;
      umin = u < umin ? u : umin;
      umax = u > umax ? u : umax;
      smin = v[l] < smin ? v[l] : smin;
      smax = v[l] > smax ? v[l] : smax;
    }
    uint32_t want[OPS] = {sum,  (uint32_t)smin,   (uint32_t)smax, umin,
                          umax, and_all ^ or_all, xor_all,        (i & 1) ? odd_sum : 0};
    for (int j = 0; j < OPS; j++)
      ptx_expect(out[i * OPS + (size_t)j] == want[j], "warp_reduce", names[j], i, "got 0x%08x, expected 0x%08x",
                 out[i * OPS + (size_t)j], want[j]);
  }
}

/* ========================================================= special registers */

static void test_sregs_3d(void **state) {
  struct ptx_fixture *f = fixture(state);
  enum { WORDS = 24, GX = 2, GY = 3, GZ = 2, BX = 4, BY = 3, BZ = 2, THREADS = BX * BY * BZ };
  enum { BLOCKS = GX * GY * GZ, N = BLOCKS * THREADS, DYNAMIC = 256 };
  uint32_t *out = malloc(sizeof(uint32_t) * WORDS * N);
  assert_non_null(out);
  void *dout = ptx_dev(f->ctx, NULL, sizeof(uint32_t) * WORDS * N);
  ptx_run(f, "sregs_3d", GCAP_DIM3(GX, GY, GZ), GCAP_DIM3(BX, BY, BZ), DYNAMIC, ARGS(&dout));
  ptx_get(f->ctx, out, dout, sizeof(uint32_t) * WORDS * N);
  for (uint32_t b = 0; b < BLOCKS; b++)
    for (uint32_t t = 0; t < THREADS; t++) {
      const uint32_t *o = out + WORDS * (b * THREADS + t);
      uint32_t lane = t % 32;
      uint32_t want[12] = {t % BX, t / BX % BY, t / (BX * BY), b % GX, b / GX % GY, b / (GX * GY), BX, BY, BZ, GX,
                           GY,     GZ};
      size_t index = b * THREADS + t;
      for (int k = 0; k < 12; k++)
        ptx_expect(o[k] == want[k], "sregs_3d", "tid/ctaid/ntid/nctaid", index, "word %d: got %u, expected %u", k, o[k],
                   want[k]);
      uint32_t lt = (uint32_t)((UINT64_C(1) << lane) - 1), le = (uint32_t)((UINT64_C(2) << lane) - 1);
      ptx_expect(o[12] == lane, "sregs_3d", "%laneid", index, "got %u, expected %u", o[12], lane);
      ptx_expect(o[14] >= 1 && o[13] < o[14], "sregs_3d", "%warpid < %nwarpid", index, "%u, %u", o[13], o[14]);
      ptx_expect(o[15] == lt && o[16] == le && o[17] == 1u << lane && o[18] == ~lt && o[19] == ~le, "sregs_3d",
                 "%lanemask_*", index, "lt 0x%08x le 0x%08x eq 0x%08x ge 0x%08x gt 0x%08x", o[15], o[16], o[17], o[18],
                 o[19]);
      ptx_expect(o[21] >= 1 && o[20] < o[21], "sregs_3d", "%smid < %nsmid", index, "%u, %u", o[20], o[21]);
      ptx_expect(o[22] == DYNAMIC, "sregs_3d", "%dynamic_smem_size", index, "got %u", o[22]);
      ptx_expect(o[23] == 32, "sregs_3d", "WARP_SZ", index, "got %u", o[23]);
    }
  free(out);
}

static void test_clocks(void **state) {
  struct ptx_fixture *f = fixture(state);
  enum { N = 100 };
  int32_t a[N];
  int64_t out[4 * N];
  for (size_t i = 0; i < N; i++) a[i] = (int32_t)(i * 5);
  void *da = ptx_dev(f->ctx, a, sizeof a), *dout = ptx_dev(f->ctx, NULL, sizeof out);
  int n = N;
  ptx_run(f, "clocks", ptx_grid_for(N, 64), DIM1(64), 0, ARGS(&da, &dout, &n));
  ptx_get(f->ctx, out, dout, sizeof out);
  for (size_t i = 0; i < N; i++) {
    uint32_t acc = 0;
    for (uint32_t k = 0; k < ((uint32_t)a[i] & 63); k++) acc = acc * 31 + k;
    ptx_expect(out[4 * i] >= 0 && out[4 * i + 1] >= 0, "clocks", "%clock64 never decreases", i,
               "differences %lld and %lld", (long long)out[4 * i], (long long)out[4 * i + 1]);
    ptx_expect(out[4 * i + 3] == s32(acc), "clocks", "work", i, "got %lld, expected %d", (long long)out[4 * i + 3],
               s32(acc));
  }
}

/* =================================================================== printf */

/* Runs `hello` with stdout redirected to a file; returns what the kernel printed (free it). */
static char *run_hello_captured(struct ptx_fixture *f, void *da, int n) {
  char path[] = "/tmp/gcap-ptx-printf-XXXXXX";
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  fflush(stdout);
  int saved = dup(STDOUT_FILENO);
  assert_true(saved >= 0);
  assert_true(dup2(fd, STDOUT_FILENO) >= 0);
  gcap_status st = ptx_launch(f, "hello", DIM1(2), DIM1(4), 0, ARGS(&da, &n));
  gcap_status sync = gcap_stream_synchronize(f->s);
  fflush(stdout);
  dup2(saved, STDOUT_FILENO);
  close(saved);
  assert_ok(st);
  assert_ok(sync);
  off_t size = lseek(fd, 0, SEEK_END);
  assert_true(size >= 0);
  char *text = calloc(1, (size_t)size + 1);
  assert_non_null(text);
  assert_int_equal(pread(fd, text, (size_t)size, 0), size);
  close(fd);
  unlink(path);
  return text;
}

static void test_printf(void **state) {
  struct ptx_fixture *f = fixture(state);
  enum { N = 8 };
  int32_t a[N] = {5, -1, 12, 0, 7, -3, 100, 42};
  void *da = ptx_dev(f->ctx, a, sizeof a);
  char *text = run_hello_captured(f, da, N);
  for (int i = 0; i < N; i++) {
    char line[160];
    if (a[i] < 0) {
      snprintf(line, sizeof line, "ptx-corpus thread %d ", i);
      ptx_expect(strstr(text, line) == NULL, "hello", "no line", (size_t)i, "found \"%s\" in \"%s\"", line, text);
      continue;
    }
    snprintf(line, sizeof line, "ptx-corpus thread %d block %u value %lld half %.2f %s%c\n", i, (unsigned)(i / 4),
             (long long)a[i] * 1000000007LL, a[i] * 0.5, "tag", 'A' + (i & 7));
    ptx_expect(strstr(text, line) != NULL, "hello", "printed line", (size_t)i, "\"%s\" not in \"%s\"", line, text);
  }
  free(text);
}

/* =================================================================== samples */

static void test_vector_add(void **state) {
  struct ptx_fixture *f = fixture(state);
  enum { N = 1000 };
  float a[N], b[N], c[N];
  for (size_t i = 0; i < N; i++) {
    a[i] = (float)i / 3.0f;
    b[i] = 1.0f / (float)(i + 1);
  }
  void *da = ptx_dev(f->ctx, a, sizeof a), *db = ptx_dev(f->ctx, b, sizeof b), *dc = ptx_dev(f->ctx, NULL, sizeof c);
  int n = N;
  ptx_run(f, "vector_add", ptx_grid_for(N, 128), DIM1(128), 0, ARGS(&da, &db, &dc, &n));
  ptx_get(f->ctx, c, dc, sizeof c);
  for (size_t i = 0; i < N; i++) {
    volatile float want = a[i] + b[i];
    ptx_expect(ptx_same_f32(c[i], want), "vector_add", "sum", i, "got %a, expected %a", (double)c[i], (double)want);
  }
}

static void test_saxpy(void **state) {
  struct ptx_fixture *f = fixture(state);
  enum { N = 1000 };
  float x[N], y[N], out[N], alpha = 1.7f;
  for (size_t i = 0; i < N; i++) {
    x[i] = (float)i * 0.013f - 3.0f;
    y[i] = 2.5f - (float)i * 0.007f;
  }
  void *dx = ptx_dev(f->ctx, x, sizeof x), *dy = ptx_dev(f->ctx, y, sizeof y);
  int n = N;
  ptx_run(f, "saxpy", DIM1(2), DIM1(128), 0, ARGS(&n, &alpha, &dx, &dy)); /* 256 threads stride over 1000 */
  ptx_get(f->ctx, out, dy, sizeof out);
  for (size_t i = 0; i < N; i++) {
    float want = fmaf(alpha, x[i], y[i]);
    ptx_expect(ptx_same_f32(out[i], want), "saxpy", "a*x+y (fused)", i, "got %a, expected %a", (double)out[i],
               (double)want);
  }
}

/*
 * Entries are multiples of 1/4 in [-4, 4]: every product and partial sum is exact, so fused
 * (optimised PTX) and separate (-G PTX) multiply-adds give the same bits as the reference.
 */
static void test_matmul(void **state) {
  struct ptx_fixture *f = fixture(state);
  enum { M = 37, K = 29, NC = 45 };
  float a[M * K], b[K * NC], c[M * NC];
  for (size_t i = 0; i < COUNT(a); i++) a[i] = (float)((int)(i * 7 % 33) - 16) * 0.25f;
  for (size_t i = 0; i < COUNT(b); i++) b[i] = (float)((int)(i * 5 % 31) - 15) * 0.25f;
  void *da = ptx_dev(f->ctx, a, sizeof a), *db = ptx_dev(f->ctx, b, sizeof b), *dc = ptx_dev(f->ctx, NULL, sizeof c);
  int m = M, nc = NC, k = K;
  ptx_run(f, "matmul_tiled", GCAP_DIM3((NC + 15) / 16, (M + 15) / 16, 1), GCAP_DIM3(16, 16, 1), 0,
          ARGS(&da, &db, &dc, &m, &nc, &k));
  ptx_get(f->ctx, c, dc, sizeof c);
  for (size_t r = 0; r < M; r++)
    for (size_t col = 0; col < NC; col++) {
      float sum = 0.0f;
      for (size_t j = 0; j < K; j++) sum = fmaf(a[r * K + j], b[j * NC + col], sum);
      ptx_expect(ptx_same_f32(c[r * NC + col], sum), "matmul_tiled", "C[r][c]", r * NC + col, "got %a, expected %a",
                 (double)c[r * NC + col], (double)sum);
    }
}

static int32_t *reduce_input(size_t n) {
  int32_t *in = malloc(sizeof(int32_t) * n);
  assert_non_null(in);
  for (size_t i = 0; i < n; i++) in[i] = (int32_t)((i * 2654435761u) % 2001u) - 1000;
  return in;
}

static void check_block_sums(const char *kernel, const int32_t *in, size_t n, const int32_t *out, size_t block) {
  for (size_t b = 0; b * block < n; b++) {
    int32_t s = 0;
    for (size_t i = b * block; i < n && i < (b + 1) * block; i++) s += in[i];
    ptx_expect(out[b] == s, kernel, "block sum", b, "got %d, expected %d", out[b], s);
  }
}

static void test_reduce_tree(void **state) {
  struct ptx_fixture *f = fixture(state);
  enum { N = 1000, B = 128, BLOCKS = (N + B - 1) / B };
  int32_t *in = reduce_input(N), out[BLOCKS];
  void *din = ptx_dev(f->ctx, in, sizeof(int32_t) * N), *dout = ptx_dev(f->ctx, NULL, sizeof out);
  int n = N;
  ptx_run(f, "reduce_tree", DIM1(BLOCKS), DIM1(B), B * sizeof(int32_t), ARGS(&din, &dout, &n));
  ptx_get(f->ctx, out, dout, sizeof out);
  check_block_sums("reduce_tree", in, N, out, B);
  free(in);
}

static void test_reduce_warp(void **state) {
  struct ptx_fixture *f = fixture(state);
  enum { N = 1000, B = 96, BLOCKS = (N + B - 1) / B };
  int32_t *in = reduce_input(N), out[BLOCKS];
  void *din = ptx_dev(f->ctx, in, sizeof(int32_t) * N), *dout = ptx_dev(f->ctx, NULL, sizeof out);
  int n = N;
  ptx_run(f, "reduce_warp", DIM1(BLOCKS), DIM1(B), 0, ARGS(&din, &dout, &n));
  ptx_get(f->ctx, out, dout, sizeof out);
  check_block_sums("reduce_warp", in, N, out, B);
  free(in);
}

static void test_scan_hillis_steele(void **state) {
  struct ptx_fixture *f = fixture(state);
  enum { B = 96, BLOCKS = 3, N = B * BLOCKS };
  int32_t *in = reduce_input(N), out[N];
  void *din = ptx_dev(f->ctx, in, sizeof(int32_t) * N), *dout = ptx_dev(f->ctx, NULL, sizeof out);
  ptx_run(f, "scan_hillis_steele", DIM1(BLOCKS), DIM1(B), 2 * B * sizeof(int32_t), ARGS(&din, &dout));
  ptx_get(f->ctx, out, dout, sizeof out);
  int32_t s = 0;
  for (size_t i = 0; i < N; i++) {
    s = i % B == 0 ? in[i] : s + in[i];
    ptx_expect(out[i] == s, "scan_hillis_steele", "inclusive prefix", i, "got %d, expected %d", out[i], s);
  }
  free(in);
}

static void test_scan_blelloch(void **state) {
  struct ptx_fixture *f = fixture(state);
  enum { B = 64, LEN = 2 * B, BLOCKS = 3, N = LEN * BLOCKS };
  int32_t *in = reduce_input(N), out[N];
  void *din = ptx_dev(f->ctx, in, sizeof(int32_t) * N), *dout = ptx_dev(f->ctx, NULL, sizeof out);
  ptx_run(f, "scan_blelloch", DIM1(BLOCKS), DIM1(B), LEN * sizeof(int32_t), ARGS(&din, &dout));
  ptx_get(f->ctx, out, dout, sizeof out);
  int32_t s = 0;
  for (size_t i = 0; i < N; i++) {
    if (i % LEN == 0) s = 0;
    ptx_expect(out[i] == s, "scan_blelloch", "exclusive prefix", i, "got %d, expected %d", out[i], s);
    s += in[i];
  }
  free(in);
}

static void test_histogram(void **state) {
  struct ptx_fixture *f = fixture(state);
  enum { N = 3000, BINS = 64 };
  uint8_t data[N];
  uint32_t bins[BINS], want[BINS] = {0};
  uint64_t st = 0x4157ull;
  for (size_t i = 0; i < N; i++) {
    data[i] = (uint8_t)(ptx_rand32(&st) >> 24);
    want[data[i] % BINS]++;
  }
  void *dd = ptx_dev(f->ctx, data, sizeof data), *db = ptx_dev(f->ctx, NULL, sizeof bins);
  int n = N;
  ptx_run(f, "histogram64", DIM1(3), DIM1(96), 0, ARGS(&dd, &db, &n));
  ptx_get(f->ctx, bins, db, sizeof bins);
  for (size_t b = 0; b < BINS; b++)
    ptx_expect(bins[b] == want[b], "histogram64", "bin", b, "got %u, expected %u", bins[b], want[b]);
}

static void test_bitonic(void **state) {
  struct ptx_fixture *f = fixture(state);
  enum { B = 256, BLOCKS = 3, N = B * BLOCKS };
  int32_t data[N], sorted[N];
  uint64_t st = 0xb170ull;
  for (size_t i = 0; i < N; i++) data[i] = (int32_t)(ptx_rand32(&st) % 1000u) - 500;
  memcpy(sorted, data, sizeof data);
  for (size_t b = 0; b < BLOCKS; b++) qsort(sorted + b * B, B, sizeof(int32_t), compare_int);
  void *dd = ptx_dev(f->ctx, data, sizeof data);
  ptx_run(f, "bitonic_sort", DIM1(BLOCKS), DIM1(B), B * sizeof(int32_t), ARGS(&dd));
  ptx_get(f->ctx, data, dd, sizeof data);
  for (size_t i = 0; i < N; i++)
    ptx_expect(data[i] == sorted[i], "bitonic_sort", "sorted value", i, "got %d, expected %d", data[i], sorted[i]);
}

static void test_transpose(void **state) {
  struct ptx_fixture *f = fixture(state);
  enum { ROWS = 45, COLS = 70 };
  float in[ROWS * COLS], out[ROWS * COLS];
  for (size_t i = 0; i < COUNT(in); i++) in[i] = (float)i;
  void *din = ptx_dev(f->ctx, in, sizeof in), *dout = ptx_dev(f->ctx, NULL, sizeof out);
  int rows = ROWS, cols = COLS;
  ptx_run(f, "transpose_padded", GCAP_DIM3((COLS + 31) / 32, (ROWS + 31) / 32, 1), GCAP_DIM3(32, 8, 1), 0,
          ARGS(&din, &dout, &rows, &cols));
  ptx_get(f->ctx, out, dout, sizeof out);
  for (size_t r = 0; r < ROWS; r++)
    for (size_t c = 0; c < COLS; c++)
      ptx_expect(out[c * ROWS + r] == in[r * COLS + c], "transpose_padded", "out[c][r]", c * ROWS + r,
                 "got %g, expected %g", (double)out[c * ROWS + r], (double)in[r * COLS + c]);
}

static double cnd_reference(double d) {
  const double a1 = 0.31938153, a2 = -0.356563782, a3 = 1.781477937, a4 = -1.821255978, a5 = 1.330274429;
  double k = 1.0 / (1.0 + 0.2316419 * fabs(d));
  double c = 0.39894228040143267794 * exp(-0.5 * d * d) * (k * (a1 + k * (a2 + k * (a3 + k * (a4 + k * a5)))));
  return d > 0 ? 1.0 - c : c;
}

/*
 * The kernel computes in single precision with the full-accuracy expf, logf and sqrtf; the
 * reference runs the same formula in double. A tolerance of 1e-4 relative to the price and
 * strike covers a few dozen float roundings (about 6e-8 each) amplified by the cancellation in
 * the put price.
 */
static void test_black_scholes(void **state) {
  struct ptx_fixture *f = fixture(state);
  enum { N = 400 };
  float s[N], x[N], t[N], call[N], put[N], r = 0.02f, v = 0.30f;
  uint64_t st = 0xb5ull;
  for (size_t i = 0; i < N; i++) {
    s[i] = 5.0f + (float)(ptx_rand32(&st) % 25000u) * 1e-3f;
    x[i] = 1.0f + (float)(ptx_rand32(&st) % 99000u) * 1e-3f;
    t[i] = 0.25f + (float)(ptx_rand32(&st) % 9750u) * 1e-3f;
  }
  void *ds = ptx_dev(f->ctx, s, sizeof s), *dx = ptx_dev(f->ctx, x, sizeof x), *dt = ptx_dev(f->ctx, t, sizeof t);
  void *dcall = ptx_dev(f->ctx, NULL, sizeof call), *dput = ptx_dev(f->ctx, NULL, sizeof put);
  int n = N;
  ptx_run(f, "black_scholes", ptx_grid_for(N, 128), DIM1(128), 0, ARGS(&ds, &dx, &dt, &dcall, &dput, &r, &v, &n));
  ptx_get(f->ctx, call, dcall, sizeof call);
  ptx_get(f->ctx, put, dput, sizeof put);
  for (size_t i = 0; i < N; i++) {
    double sq = sqrt((double)t[i]), vv = v;
    double d1 = (log((double)s[i] / x[i]) + ((double)r + 0.5 * vv * vv) * t[i]) / (vv * sq), d2 = d1 - vv * sq;
    double disc = exp(-(double)r * t[i]);
    double cw = s[i] * cnd_reference(d1) - x[i] * disc * cnd_reference(d2);
    double pw = x[i] * disc * (1.0 - cnd_reference(d2)) - s[i] * (1.0 - cnd_reference(d1));
    double tol = 1e-4 * (1.0 + (double)s[i] + (double)x[i]);
    ptx_expect(fabs(call[i] - cw) <= tol && fabs(put[i] - pw) <= tol, "black_scholes", "call and put", i,
               "S=%g X=%g T=%g: got %g %g, expected %g %g", (double)s[i], (double)x[i], (double)t[i], (double)call[i],
               (double)put[i], cw, pw);
  }
}

static void test_jacobi(void **state) {
  struct ptx_fixture *f = fixture(state);
  enum { N = 200, SWEEPS = 6 };
  float u[N], rhs[N], h2 = 1.0f / (float)(N * N);
  for (size_t i = 0; i < N; i++) {
    u[i] = i == 0 ? 1.0f : i == N - 1 ? -1.0f : 0.0f;
    rhs[i] = (float)(i % 10) * 0.1f;
  }
  void *d0 = ptx_dev(f->ctx, u, sizeof u);
  void *d1 = ptx_dev(f->ctx, NULL, sizeof u), *dr = ptx_dev(f->ctx, rhs, sizeof rhs);
  int n = N;
  for (int s = 0; s < SWEEPS; s++) {
    void *src = s % 2 ? d1 : d0, *dst = s % 2 ? d0 : d1;
    ptx_run(f, "jacobi_sweep", ptx_grid_for(N, 64), DIM1(64), 0, ARGS(&src, &dr, &dst, &h2, &n));
  }
  float got[N], next[N];
  ptx_get(f->ctx, got, SWEEPS % 2 ? d1 : d0, sizeof got);
  for (int s = 0; s < SWEEPS; s++) {
    for (size_t i = 0; i < N; i++) {
      volatile float sum = u[i == 0 ? 0 : i - 1] + u[i == N - 1 ? i : i + 1], p = h2 * rhs[i];
      sum = sum + p;
      next[i] = i == 0 || i == N - 1 ? u[i] : sum * 0.5f;
    }
    memcpy(u, next, sizeof u);
  }
  for (size_t i = 0; i < N; i++)
    ptx_expect(ptx_same_f32(got[i], u[i]), "jacobi_sweep", "value after the sweeps", i, "got %a, expected %a",
               (double)got[i], (double)u[i]);
}

static void test_splitmix64(void **state) {
  struct ptx_fixture *f = fixture(state);
  enum { N = 150 };
  uint64_t seed[N], out[N];
  for (size_t i = 0; i < N; i++) seed[i] = (uint64_t)i * UINT64_C(0x100000001b3) ^ UINT64_C(0xcbf29ce484222325);
  void *ds = ptx_dev(f->ctx, seed, sizeof seed), *dout = ptx_dev(f->ctx, NULL, sizeof out);
  int n = N;
  ptx_run(f, "splitmix64", ptx_grid_for(N, 64), DIM1(64), 0, ARGS(&ds, &dout, &n));
  ptx_get(f->ctx, out, dout, sizeof out);
  for (size_t i = 0; i < N; i++) {
    uint64_t z = seed[i] + UINT64_C(0x9e3779b97f4a7c15) * (uint64_t)(i + 1);
    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    z ^= z >> 31;
    ptx_expect(out[i] == z, "splitmix64", "hash", i, "got 0x%016llx, expected 0x%016llx", (unsigned long long)out[i],
               (unsigned long long)z);
  }
}

/* nvcc contracts every Horner step and 1 + v*v into fma.rn.f64; the reference uses fma. */
static void test_poly64(void **state) {
  struct ptx_fixture *f = fixture(state);
  enum { N = 150 };
  double x[N], out[2 * N];
  static const double coef[9] = {1.0, -0.5, 1.0 / 3, -0.25, 0.2, -1.0 / 6, 1.0 / 7, -0.125, 1.0 / 9};
  for (size_t i = 0; i < N; i++) x[i] = -1.5 + 3.0 * (double)i / N;
  void *dx = ptx_dev(f->ctx, x, sizeof x), *dc = ptx_dev(f->ctx, coef, sizeof coef);
  void *dout = ptx_dev(f->ctx, NULL, sizeof out);
  int n = N;
  ptx_run(f, "poly64", ptx_grid_for(N, 64), DIM1(64), 0, ARGS(&dx, &dc, &dout, &n));
  ptx_get(f->ctx, out, dout, sizeof out);
  for (size_t i = 0; i < N; i++) {
    double acc = coef[8];
    for (int k = 7; k >= 0; k--) acc = fma(acc, x[i], coef[k]);
    double norm = acc / sqrt(fma(x[i], x[i], 1.0));
    ptx_expect(ptx_same_f64(out[2 * i], acc) && ptx_same_f64(out[2 * i + 1], norm), "poly64", "value and normalised", i,
               "x=%a: got %a %a, expected %a %a", x[i], out[2 * i], out[2 * i + 1], acc, norm);
  }
}

/* ====================================================================== main */

#define CORPUS_TEST(fn, file) cmocka_unit_test_prestate_setup_teardown(fn, ptx_setup, ptx_teardown, (void *)(file))

int main(void) {
  test_require_backend();
  const struct CMUnitTest integers[] = {
      CORPUS_TEST(test_int32_ops, "int_arith.ptx"), CORPUS_TEST(test_int32_rem, "int_arith.ptx"),
      CORPUS_TEST(test_int64_ops, "int_arith.ptx"), CORPUS_TEST(test_int64_rem, "int_arith.ptx"),
      CORPUS_TEST(test_bits32, "bits.ptx"),         CORPUS_TEST(test_bits64, "bits.ptx"),
      CORPUS_TEST(test_int_compare, "compare.ptx"),
  };
  const struct CMUnitTest floats[] = {
      CORPUS_TEST(test_f32_ops, "float32.ptx"),     CORPUS_TEST(test_f64_ops, "float64.ptx"),
      CORPUS_TEST(test_f32_approx, "approx.ptx"),   CORPUS_TEST(test_f32_compare, "compare.ptx"),
      CORPUS_TEST(test_f64_compare, "compare.ptx"),
  };
  const struct CMUnitTest conversions[] = {
      CORPUS_TEST(test_f32_to_int, "cvt.ptx"),   CORPUS_TEST(test_f64_to_int, "cvt.ptx"),
      CORPUS_TEST(test_int_to_float, "cvt.ptx"), CORPUS_TEST(test_float_double, "cvt.ptx"),
      CORPUS_TEST(test_half_convert, "cvt.ptx"), CORPUS_TEST(test_int_narrow, "cvt.ptx"),
  };
  const struct CMUnitTest control[] = {
      CORPUS_TEST(test_branches, "control.ptx"),     CORPUS_TEST(test_lane_loops, "control.ptx"),
      CORPUS_TEST(test_early_exit, "control.ptx"),   CORPUS_TEST(test_jump_table, "control.ptx"),
      CORPUS_TEST(test_predicated, "control.ptx"),   CORPUS_TEST(test_branches, "control.G.ptx"),
      CORPUS_TEST(test_lane_loops, "control.G.ptx"), CORPUS_TEST(test_early_exit, "control.G.ptx"),
      CORPUS_TEST(test_jump_table, "control.G.ptx"), CORPUS_TEST(test_predicated, "control.G.ptx"),
      CORPUS_TEST(test_calls, "functions.ptx"),      CORPUS_TEST(test_local_array, "functions.ptx"),
      CORPUS_TEST(test_calls, "functions.G.ptx"),    CORPUS_TEST(test_local_array, "functions.G.ptx"),
  };
  const struct CMUnitTest memory[] = {
      CORPUS_TEST(test_constants, "memory.ptx"),       CORPUS_TEST(test_globals, "memory.ptx"),
      CORPUS_TEST(test_vectors, "memory.ptx"),         CORPUS_TEST(test_narrow, "memory.ptx"),
      CORPUS_TEST(test_readonly, "memory.ptx"),        CORPUS_TEST(test_generic, "memory.ptx"),
      CORPUS_TEST(test_reverse_static, "shared.ptx"),  CORPUS_TEST(test_tile_2d, "shared.ptx"),
      CORPUS_TEST(test_dynamic_split, "shared.ptx"),   CORPUS_TEST(test_global_atomics, "atomics.ptx"),
      CORPUS_TEST(test_shared_atomics, "atomics.ptx"),
  };
  const struct CMUnitTest threads[] = {
      CORPUS_TEST(test_vote_block, "sync.ptx"),
      CORPUS_TEST(test_smooth, "sync.ptx"),
      CORPUS_TEST(test_warp_reverse, "sync.ptx"),
      CORPUS_TEST(test_last_block_sum, "sync.ptx"),
      CORPUS_TEST(test_shuffles, "warp.ptx"),
      CORPUS_TEST(test_votes, "warp.ptx"),
      CORPUS_TEST(test_matches, "warp.ptx"),
      CORPUS_TEST(test_partial_warp, "warp.ptx"),
      CORPUS_TEST(test_warp_reduce, "warp_reduce.ptx"),
      CORPUS_TEST(test_sregs_3d, "sregs.ptx"),
      CORPUS_TEST(test_clocks, "sregs.ptx"),
      CORPUS_TEST(test_printf, "printf.ptx"),
  };
  const struct CMUnitTest samples[] = {
      CORPUS_TEST(test_vector_add, "samples/vector_add.ptx"),
      CORPUS_TEST(test_saxpy, "samples/saxpy.ptx"),
      CORPUS_TEST(test_matmul, "samples/matmul.ptx"),
      CORPUS_TEST(test_matmul, "samples/matmul.G.ptx"),
      CORPUS_TEST(test_reduce_tree, "samples/reduce.ptx"),
      CORPUS_TEST(test_reduce_warp, "samples/reduce.ptx"),
      CORPUS_TEST(test_reduce_tree, "samples/reduce.G.ptx"),
      CORPUS_TEST(test_reduce_warp, "samples/reduce.G.ptx"),
      CORPUS_TEST(test_scan_hillis_steele, "samples/scan.ptx"),
      CORPUS_TEST(test_scan_blelloch, "samples/scan.ptx"),
      CORPUS_TEST(test_histogram, "samples/histogram.ptx"),
      CORPUS_TEST(test_bitonic, "samples/bitonic.ptx"),
      CORPUS_TEST(test_transpose, "samples/transpose.ptx"),
      CORPUS_TEST(test_black_scholes, "samples/black_scholes.ptx"),
      CORPUS_TEST(test_jacobi, "samples/jacobi.ptx"),
      CORPUS_TEST(test_splitmix64, "samples/math64.ptx"),
      CORPUS_TEST(test_poly64, "samples/math64.ptx"),
  };
  int failed = 0;
  failed += cmocka_run_group_tests_name("integers", integers, NULL, NULL);
  failed += cmocka_run_group_tests_name("floating point", floats, NULL, NULL);
  failed += cmocka_run_group_tests_name("conversions", conversions, NULL, NULL);
  failed += cmocka_run_group_tests_name("control flow and calls", control, NULL, NULL);
  failed += cmocka_run_group_tests_name("memory, shared memory and atomics", memory, NULL, NULL);
  failed += cmocka_run_group_tests_name("barriers, warps and special registers", threads, NULL, NULL);
  failed += cmocka_run_group_tests_name("samples", samples, NULL, NULL);
  return failed;
}
