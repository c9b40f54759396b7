/*
 * The modern-kernel corpus (tests/ptx/modern, see the README there): kernels written in the ways
 * current CUDA code is written (transformer training kernels in bf16 and f16, GEMMs streaming
 * tiles with cp.async and mbarrier, tensor-core GEMMs through mma.sync, ldmatrix and wmma, a
 * flash-attention forward pass, a GEMM with 96 KiB of dynamic shared memory, grid-synchronised
 * kernels under a cooperative launch), each compiled by nvcc for sm_80 and sm_90. Every kernel
 * runs on each architecture's PTX with every check off and with every check on, in IMMEDIATE
 * and in DEFERRED mode, against a C reference: integers and correctly rounded half-precision
 * operations exactly, other floats within a tolerance for their order of operations. One kernel
 * holds a planted bug (a GEMM reading a tile before its cp.async group is waited for), which the
 * race check must find.
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

#define ARGS(...) ((void *[]){__VA_ARGS__})
#define COUNT(a) (sizeof(a) / sizeof((a)[0]))
#define DIM1(x) GCAP_DIM3((x), 1, 1)

/*
 * PENDING: kernels that need simulator features not there yet; their tests skip. Empty this as
 * the features land (GCAP_TEST_PENDING=1 in the environment runs them anyway).
 */
static const char *const pending[] = {
    NULL, /* none today */
};

static bool is_pending(const char *kernel) {
  for (size_t i = 0; i < COUNT(pending); i++)
    if (pending[i] != NULL && strcmp(pending[i], kernel) == 0) return true;
  return false;
}

/* One run of a kernel: its context (checks, mode), stream and module, and a label for messages. */
struct run {
  struct ptx_fixture f;
  const char *kernel;
  unsigned checks;
  char label[128];
};

typedef void (*case_fn)(struct run *r);

enum { SM80 = 1, SM90 = 2, BOTH_SM = SM80 | SM90 };

struct modern {
  const char *file; /* tests/ptx/modern/<file>.sm_XX.ptx */
  const char *kernel;
  unsigned archs;
  case_fn fn;
};

static gcap_context *make_context(unsigned checks, bool deferred) {
  if (!test_on_sim()) return test_context_create();
  gcap_sim_options so;
  gcap_sim_options_init(&so);
  so.kernels = GCAP_SIM_KERNELS_PTX;
  so.checks = checks;
  so.exec = deferred ? GCAP_SIM_EXEC_DEFERRED : GCAP_SIM_EXEC_IMMEDIATE;
  so.threads = 1;
  so.kernel_timeout_ms = 5000; /* a kernel that hangs fails in seconds */
  return test_sim_context_create(&so);
}

static void expect_ok(struct run *r, gcap_status st) {
  if (st == GCAP_SUCCESS) st = gcap_stream_synchronize(r->f.s);
  if (st != GCAP_SUCCESS) {
    print_error("%s: %s (%s)\n", r->label, gcap_status_name(st), gcap_last_error_message());
    fail();
  }
}

/* Launches r's kernel and waits for it (DEFERRED runs it in the wait); fails the test on an error. */
static void run_ok(struct run *r, gcap_dim3 grid, gcap_dim3 block, uint32_t shared, void **args) {
  expect_ok(r, ptx_launch(&r->f, r->kernel, grid, block, shared, args));
}

static void *dev(struct run *r, const void *host, size_t bytes) { return ptx_dev(r->f.ctx, host, bytes); }
static void get(struct run *r, void *host, const void *d, size_t bytes) { ptx_get(r->f.ctx, host, d, bytes); }

static void *xcalloc(size_t n, size_t size) {
  void *p = calloc(n, size);
  assert_non_null(p);
  return p;
}

static void expect_int(struct run *r, const char *what, size_t i, long long got, long long want) {
  ptx_expect(got == want, r->label, what, i, "got %lld, expected %lld", got, want);
}

static void expect_near(struct run *r, const char *what, size_t i, double got, double want, double tol) {
  ptx_expect(fabs(got - want) <= tol, r->label, what, i, "got %.9g, expected %.9g (tolerance %.3g)", got, want, tol);
}

/* n floats in [lo, hi), from seed. */
static float *rand_floats(size_t n, float lo, float hi, uint64_t seed) {
  float *v = xcalloc(n, sizeof *v);
  uint64_t st = seed;
  for (size_t i = 0; i < n; i++) v[i] = lo + (hi - lo) * (float)(ptx_rand32(&st) >> 8) / 16777216.0f;
  return v;
}

/* ====================================================== half precision on the host */

/*
 * x rounded to nearest, ties to even, in a binary format with `mant` fraction bits and normal
 * exponents emin..emax (gradual underflow below, infinity past the largest finite value).
 */
static double round_fmt(double x, int mant, int emin, int emax) {
  if (isnan(x) || isinf(x) || x == 0) return x;
  int e;
  frexp(fabs(x), &e);
  int exp = e - 1 < emin ? emin : e - 1;
  double q = ldexp(1.0, exp - mant); /* the spacing of the format at x */
  double r = nearbyint(x / q) * q;   /* the default rounding mode: ties to even */
  return fabs(r) >= ldexp(2.0, emax) ? copysign(INFINITY, x) : r;
}

static double bf16_round(double x) { return round_fmt(x, 7, -126, 127); }
static double f16_round(double x) { return round_fmt(x, 10, -14, 15); }

/* The bits of a bfloat16 value (exactly representable), and back. */
static uint16_t bf16_bits(double v) { return (uint16_t)(ptx_f32_bits((float)v) >> 16); }
static double bf16_val(uint16_t b) { return ptx_f32_from((uint32_t)b << 16); }

/* The bits of an f16 value (exactly representable), and back. */
static uint16_t f16_bits(double v) {
  uint16_t s = signbit(v) ? 0x8000u : 0u;
  v = fabs(v);
  if (isnan(v)) return 0x7e00u;
  if (isinf(v)) return s | 0x7c00u;
  if (v < 0x1p-14) return s | (uint16_t)(v * 0x1p24);
  int e;
  double f = frexp(v, &e); /* v = f 2^e, f in [0.5, 1) */
  return s | (uint16_t)((e + 14) << 10) | (uint16_t)((2 * f - 1) * 1024);
}

static double f16_val(uint16_t h) {
  int e = (h >> 10) & 31, m = h & 1023;
  double v = e == 0 ? ldexp(m, -24) : e == 31 ? (m ? NAN : INFINITY) : ldexp(1024 + m, e - 25);
  return h & 0x8000u ? -v : v;
}

/* The spacing of bfloat16 (f16) values at |x|. */
static double bf16_ulp(double x) {
  int e;
  x = fabs(x);
  if (x < 0x1p-126) return 0x1p-133;
  frexp(x, &e);
  return ldexp(1.0, e - 8);
}

static double f16_ulp(double x) {
  int e;
  x = fabs(x);
  if (x < 0x1p-14) return 0x1p-24;
  frexp(x, &e);
  return ldexp(1.0, e - 11);
}

/* n bfloat16 (f16) values, the roundings of floats drawn in [lo, hi) from seed, as bits. */
static uint16_t *rand_bf16(size_t n, float lo, float hi, uint64_t seed) {
  float *f = rand_floats(n, lo, hi, seed);
  uint16_t *v = xcalloc(n, sizeof *v);
  for (size_t i = 0; i < n; i++) v[i] = bf16_bits(bf16_round(f[i]));
  free(f);
  return v;
}

static uint16_t *rand_f16(size_t n, float lo, float hi, uint64_t seed) {
  float *f = rand_floats(n, lo, hi, seed);
  uint16_t *v = xcalloc(n, sizeof *v);
  for (size_t i = 0; i < n; i++) v[i] = f16_bits(f16_round(f[i]));
  free(f);
  return v;
}

/* Compares n bfloat16 (f16) results with the exactly rounded values `want` (bits). */
static void expect_bits16(struct run *r, const char *what, const uint16_t *got, const uint16_t *want, size_t n,
                          double (*val)(uint16_t)) {
  for (size_t i = 0; i < n; i++)
    ptx_expect(got[i] == want[i], r->label, what, i, "got 0x%04x (%.9g), expected 0x%04x (%.9g)", got[i], val(got[i]),
               want[i], val(want[i]));
}

/*
 * The tolerance of a bfloat16 result that the kernel computed in f32 and rounded once: a
 * bfloat16 spacing at the value (the rounding is half of it; the f32 work, whose relative error
 * is some 1e-6, moves the value before rounding by far less than the other half) plus `abs`
 * for results near zero.
 */
static double bf16_tol(double want, double abs) { return bf16_ulp(want) + abs; }

/* The tf32 value of an f32 (cvt.rna.tf32.f32: 10 fraction bits, ties away from zero). */
static float tf32_rna(float x) {
  if (isnan(x)) return x;
  uint32_t u = ptx_f32_bits(x);
  return ptx_f32_from((u + 0x1000u) & 0xffffe000u);
}

/* ====================================================== bf16 transformer kernels */

/* Copies n 16-bit values to a new device allocation. */
static void *dev16(struct run *r, const uint16_t *v, size_t n) { return dev(r, v, n * sizeof *v); }

static void run_layernorm_bf16_fwd(struct run *r) {
  enum { ROWS = 10, COLS = 100 };
  uint16_t *x = rand_bf16(ROWS * COLS, -2.0f, 3.0f, 101), *w = rand_bf16(COLS, 0.5f, 1.5f, 102);
  uint16_t *b = rand_bf16(COLS, -0.5f, 0.5f, 103), out[ROWS * COLS];
  float mean[ROWS], rstd[ROWS];
  void *dout = dev(r, NULL, sizeof out), *dm = dev(r, NULL, sizeof mean), *drs = dev(r, NULL, sizeof rstd);
  void *dx = dev16(r, x, ROWS * COLS), *dw = dev16(r, w, COLS), *db = dev16(r, b, COLS);
  int rows = ROWS, cols = COLS;
  run_ok(r, DIM1(5), DIM1(64), 0, ARGS(&dout, &dm, &drs, &dx, &dw, &db, &rows, &cols));
  get(r, out, dout, sizeof out);
  get(r, mean, dm, sizeof mean);
  get(r, rstd, drs, sizeof rstd);
  for (int i = 0; i < ROWS; i++) {
    double mu = 0, var = 0, mag = 0;
    for (int c = 0; c < COLS; c++) {
      mu += bf16_val(x[i * COLS + c]);
      mag += fabs(bf16_val(x[i * COLS + c]));
    }
    mu /= COLS;
    for (int c = 0; c < COLS; c++) var += (bf16_val(x[i * COLS + c]) - mu) * (bf16_val(x[i * COLS + c]) - mu);
    double rs = 1.0 / sqrt(var / COLS + 1e-5);
    /* f32 sums of COLS terms: at most COLS rounding errors of the running sum's size */
    expect_near(r, "mean", (size_t)i, mean[i], mu, COLS * 0x1p-24 * mag / COLS + 1e-7);
    expect_near(r, "rstd", (size_t)i, rstd[i], rs, 1e-5 * rs); /* rsqrt.approx: 2^-22.9 relative */
    for (int c = 0; c < COLS; c++) {
      double n = (bf16_val(x[i * COLS + c]) - mu) * rs, wv = bf16_val(w[c]), bv = bf16_val(b[c]);
      double want = n * wv + bv;
      expect_near(r, "normalised", (size_t)(i * COLS + c), bf16_val(out[i * COLS + c]), want,
                  bf16_tol(want, 1e-5 * (fabs(n * wv) + fabs(bv))));
    }
  }
  free(x);
  free(w);
  free(b);
}

static void run_layernorm_bf16_bwd(struct run *r) {
  enum { ROWS = 9, COLS = 80 };
  uint16_t *x = rand_bf16(ROWS * COLS, -2.0f, 3.0f, 160), *w = rand_bf16(COLS, 0.5f, 1.5f, 161);
  uint16_t *dy = rand_bf16(ROWS * COLS, -1.0f, 1.0f, 162), dx[ROWS * COLS];
  float mean[ROWS], rstd[ROWS], dw[COLS], db[COLS];
  for (int i = 0; i < ROWS; i++) { /* the statistics a forward pass kept */
    double mu = 0, var = 0;
    for (int c = 0; c < COLS; c++) mu += bf16_val(x[i * COLS + c]);
    mu /= COLS;
    for (int c = 0; c < COLS; c++) var += (bf16_val(x[i * COLS + c]) - mu) * (bf16_val(x[i * COLS + c]) - mu);
    mean[i] = (float)mu;
    rstd[i] = (float)(1.0 / sqrt(var / COLS + 1e-5));
  }
  void *ddx = dev(r, NULL, sizeof dx), *ddw = dev(r, NULL, sizeof dw), *ddb = dev(r, NULL, sizeof db);
  void *ddy = dev16(r, dy, ROWS * COLS), *dx_in = dev16(r, x, ROWS * COLS), *dwt = dev16(r, w, COLS);
  void *dm = dev(r, mean, sizeof mean), *drs = dev(r, rstd, sizeof rstd);
  int rows = ROWS, cols = COLS;
  run_ok(r, DIM1(3), DIM1(128), 0, ARGS(&ddx, &ddw, &ddb, &ddy, &dx_in, &dwt, &dm, &drs, &rows, &cols));
  get(r, dx, ddx, sizeof dx);
  get(r, dw, ddw, sizeof dw);
  get(r, db, ddb, sizeof db);
  for (int i = 0; i < ROWS; i++) {
    double dmean = 0, dnm = 0, n[COLS], mag = 0;
    for (int c = 0; c < COLS; c++) {
      n[c] = (bf16_val(x[i * COLS + c]) - mean[i]) * (double)rstd[i];
      double dn = bf16_val(w[c]) * bf16_val(dy[i * COLS + c]);
      dmean += dn;
      dnm += dn * n[c];
      mag += fabs(dn * n[c]);
    }
    dmean /= COLS;
    dnm /= COLS;
    for (int c = 0; c < COLS; c++) {
      double dn = bf16_val(w[c]) * bf16_val(dy[i * COLS + c]);
      double want = (dn - dmean - n[c] * dnm) * rstd[i];
      /* the f32 sums of COLS terms move the means by COLS spacings of the terms' size */
      double err = (fabs(dn) + fabs(dmean) + fabs(n[c]) * (fabs(dnm) + COLS * 0x1p-24 * mag / COLS) + 1) * 1e-6;
      expect_near(r, "dinp", (size_t)(i * COLS + c), bf16_val(dx[i * COLS + c]), want, bf16_tol(want, err * rstd[i]));
    }
  }
  for (int c = 0; c < COLS; c++) {
    double sw = 0, sb = 0, mw = 0, mb = 0;
    for (int i = 0; i < ROWS; i++) {
      double g = bf16_val(dy[i * COLS + c]), nv = (bf16_val(x[i * COLS + c]) - mean[i]) * (double)rstd[i];
      sw += nv * g;
      sb += g;
      mw += fabs(nv * g);
      mb += fabs(g);
    }
    /* ROWS atomic f32 additions in any order; each n * g within 3 f32 roundings */
    expect_near(r, "dweight", (size_t)c, dw[c], sw, (ROWS + 3) * 0x1p-24 * mw + 1e-30);
    expect_near(r, "dbias", (size_t)c, db[c], sb, ROWS * 0x1p-24 * mb + 1e-30);
  }
  free(x);
  free(w);
  free(dy);
}

static void run_attn_softmax_bf16(struct run *r) {
  enum { HEADS = 2, T = 48, ROWS = HEADS * T };
  uint16_t *s = rand_bf16(ROWS * T, -8.0f, 8.0f, 104), *out = xcalloc(ROWS * T, sizeof(uint16_t));
  void *dout = dev(r, NULL, ROWS * T * sizeof(uint16_t)), *ds = dev16(r, s, ROWS * T);
  int rows = ROWS, t = T;
  float scale = 0.125f;
  run_ok(r, DIM1(ROWS / 4), DIM1(128), 0, ARGS(&dout, &ds, &rows, &t, &scale));
  get(r, out, dout, ROWS * T * sizeof(uint16_t));
  for (int i = 0; i < ROWS; i++) {
    int q = i % T;
    double m = -INFINITY, sum = 0;
    for (int c = 0; c <= q; c++) m = fmax(m, scale * bf16_val(s[i * T + c]));
    for (int c = 0; c <= q; c++) sum += exp(scale * bf16_val(s[i * T + c]) - m);
    for (int c = 0; c < T; c++) {
      double want = c <= q ? exp(scale * bf16_val(s[i * T + c]) - m) / sum : 0.0;
      expect_near(r, "probability", (size_t)(i * T + c), bf16_val(out[i * T + c]), want, bf16_tol(want, 1e-7));
    }
  }
  free(s);
  free(out);
}

static double gelu(double x) { return 0.5 * x * (1.0 + tanh(0.7978845608028654 * (x + 0.044715 * x * x * x))); }

static void run_gelu_bf16_fwd(struct run *r) {
  enum { N = 1001 };
  uint16_t *x = rand_bf16(N, -5.0f, 5.0f, 105), out[N];
  void *dout = dev(r, NULL, sizeof out), *dx = dev16(r, x, N);
  int n = N;
  run_ok(r, DIM1(4), DIM1(128), 0, ARGS(&dout, &dx, &n));
  get(r, out, dout, sizeof out);
  for (int i = 0; i < N; i++) {
    double want = gelu(bf16_val(x[i]));
    /* 1 + tanh cancels for negative x: an f32 spacing at 1, times x / 2 */
    expect_near(r, "gelu", (size_t)i, bf16_val(out[i]), want, bf16_tol(want, 1e-6));
  }
  free(x);
}

static void run_gelu_bf16_bwd(struct run *r) {
  enum { N = 777 };
  uint16_t *x = rand_bf16(N, -4.0f, 4.0f, 106), *dy = rand_bf16(N, -1.0f, 1.0f, 107), out[N];
  void *dout = dev(r, NULL, sizeof out), *dx = dev16(r, x, N), *ddy = dev16(r, dy, N);
  int n = N;
  run_ok(r, DIM1(7), DIM1(128), 0, ARGS(&dout, &dx, &ddy, &n));
  get(r, out, dout, sizeof out);
  for (int i = 0; i < N; i++) {
    double v = bf16_val(x[i]), a = 0.7978845608028654 * (v + 0.044715 * v * v * v), ch = cosh(a);
    double grad = 0.5 * (1 + tanh(a)) + v * 0.5 / (ch * ch) * 0.7978845608028654 * (1 + 3 * 0.044715 * v * v);
    double want = grad * bf16_val(dy[i]);
    /* the two terms of the derivative (each under 2) cancel near x = -0.75: f32 spacings at 2 */
    expect_near(r, "gelu gradient", (size_t)i, bf16_val(out[i]), want, bf16_tol(want, 2e-6));
  }
  free(x);
  free(dy);
}

static void run_residual_bias_bf16(struct run *r) {
  enum { ROWS = 9, COLS = 70, N = ROWS * COLS };
  uint16_t *x = rand_bf16(N, -4.0f, 4.0f, 108), *res = rand_bf16(N, -4.0f, 4.0f, 109);
  uint16_t *b = rand_bf16(COLS, -1.0f, 1.0f, 110), out[N], want[N];
  void *dout = dev(r, NULL, sizeof out), *dx = dev16(r, x, N), *dres = dev16(r, res, N), *db = dev16(r, b, COLS);
  int rows = ROWS, cols = COLS;
  run_ok(r, DIM1(5), DIM1(64), 0, ARGS(&dout, &dx, &dres, &db, &rows, &cols));
  get(r, out, dout, sizeof out);
  for (int i = 0; i < N; i++) /* each bf16 addition rounds its exact sum */
    want[i] = bf16_bits(bf16_round(bf16_round(bf16_val(x[i]) + bf16_val(b[i % COLS])) + bf16_val(res[i])));
  expect_bits16(r, "x + bias + residual", out, want, N, bf16_val);
  free(x);
  free(res);
  free(b);
}

static void run_bias_gelu_bf16(struct run *r) {
  enum { ROWS = 7, COLS = 50, N = ROWS * COLS };
  uint16_t *x = rand_bf16(N, -4.0f, 4.0f, 111), *b = rand_bf16(COLS, -1.0f, 1.0f, 112), out[N];
  void *dout = dev(r, NULL, sizeof out), *dx = dev16(r, x, N), *db = dev16(r, b, COLS);
  int rows = ROWS, cols = COLS;
  run_ok(r, DIM1(3), DIM1(64), 0, ARGS(&dout, &dx, &db, &rows, &cols));
  get(r, out, dout, sizeof out);
  for (int i = 0; i < N; i++) {
    double want = gelu(bf16_round(bf16_val(x[i]) + bf16_val(b[i % COLS]))); /* x + bias rounded first */
    expect_near(r, "gelu(x + bias)", (size_t)i, bf16_val(out[i]), want, bf16_tol(want, 1e-6));
  }
  free(x);
  free(b);
}

static void run_scale_shift_bf16(struct run *r) {
  enum { N2 = 250, N = 2 * N2 };
  uint16_t *x = rand_bf16(N, -3.0f, 3.0f, 113), *g = rand_bf16(N, -2.0f, 2.0f, 114);
  uint16_t *b = rand_bf16(N, -1.0f, 1.0f, 115), out[N], prod[N], want[N], wantp[N];
  void *dout = dev(r, NULL, sizeof out), *dprod = dev(r, NULL, sizeof prod), *dx = dev16(r, x, N);
  void *dg = dev16(r, g, N), *db = dev16(r, b, N);
  int n2 = N2;
  run_ok(r, DIM1(4), DIM1(64), 0, ARGS(&dout, &dprod, &dx, &dg, &db, &n2));
  get(r, out, dout, sizeof out);
  get(r, prod, dprod, sizeof prod);
  for (int i = 0; i < N; i++) { /* bf16 products are exact in double: one rounding, as the fma */
    want[i] = bf16_bits(bf16_round(fma(bf16_val(x[i]), bf16_val(g[i]), bf16_val(b[i]))));
    wantp[i] = bf16_bits(bf16_round(bf16_val(x[i]) * bf16_val(g[i])));
  }
  expect_bits16(r, "x * gamma + beta", out, want, N, bf16_val);
  expect_bits16(r, "x * gamma", prod, wantp, N, bf16_val);
  free(x);
  free(g);
  free(b);
}

static void run_adamw_bf16(struct run *r) {
  enum { N = 1000 };
  float *master = rand_floats(N, -1.0f, 1.0f, 116), *m = rand_floats(N, -0.01f, 0.01f, 117);
  float *v = rand_floats(N, 0.0f, 1e-4f, 118), *gm = xcalloc(N, sizeof(float)), *gv = xcalloc(N, sizeof(float));
  float *gw = xcalloc(N, sizeof(float));
  uint16_t *grads = rand_bf16(N, -0.1f, 0.1f, 119), *params = xcalloc(N, sizeof(uint16_t));
  for (int i = 0; i < N; i++) params[i] = bf16_bits(bf16_round(master[i]));
  void *dp = dev16(r, params, N), *dmaster = dev(r, master, sizeof(float) * N), *dg = dev16(r, grads, N);
  void *dm = dev(r, m, sizeof(float) * N), *dv = dev(r, v, sizeof(float) * N);
  int n = N;
  float lr = 1e-3f, beta1 = 0.9f, beta2 = 0.999f, eps = 1e-8f, wd = 0.01f;
  float b1corr = 1.0f - 0.9f * 0.9f * 0.9f, b2corr = 1.0f - 0.999f * 0.999f * 0.999f; /* step 3 */
  run_ok(r, DIM1(8), DIM1(128), 0,
         ARGS(&dp, &dmaster, &dg, &dm, &dv, &n, &lr, &beta1, &beta2, &b1corr, &b2corr, &eps, &wd));
  get(r, params, dp, sizeof(uint16_t) * N);
  get(r, gw, dmaster, sizeof(float) * N);
  get(r, gm, dm, sizeof(float) * N);
  get(r, gv, dv, sizeof(float) * N);
  for (int i = 0; i < N; i++) {
    double g = bf16_val(grads[i]), a1 = beta1 * (double)m[i], b1 = (double)(1.0f - beta1) * g;
    double a2 = beta2 * (double)v[i], b2 = (double)(1.0f - beta2) * g * g;
    /* a product and a fused multiply-add, or two products and a sum: at most 3 f32 roundings */
    expect_near(r, "first moment", (size_t)i, gm[i], a1 + b1, 3 * ptx_ulp_f32(fabs(a1) + fabs(b1)));
    expect_near(r, "second moment", (size_t)i, gv[i], a2 + b2, 4 * ptx_ulp_f32(fabs(a2) + fabs(b2)));
    /* the update from the moments the kernel kept: some 6 f32 roundings, then w - lr * u */
    double u = ((double)gm[i] / b1corr) / (sqrt((double)gv[i] / b2corr) + eps) + wd * (double)master[i];
    double want = master[i] - lr * u;
    expect_near(r, "master weight", (size_t)i, gw[i], want, 2 * ptx_ulp_f32(fabs(master[i])) + lr * fabs(u) * 1e-6);
    expect_int(r, "bf16 parameter", (size_t)i, params[i], bf16_bits(bf16_round(gw[i])));
  }
  free(master);
  free(m);
  free(v);
  free(gm);
  free(gv);
  free(gw);
  free(grads);
  free(params);
}

static void run_crossentropy_bf16(struct run *r) {
  enum { ROWS = 6, V = 100 };
  uint16_t *x = rand_bf16(ROWS * V, -4.0f, 4.0f, 120), *dl = xcalloc(ROWS * V, sizeof(uint16_t));
  int targets[ROWS];
  float losses[ROWS];
  uint64_t st = 121;
  for (int i = 0; i < ROWS; i++) targets[i] = (int)(ptx_rand32(&st) % V);
  void *dloss = dev(r, NULL, sizeof losses), *ddl = dev(r, NULL, ROWS * V * sizeof(uint16_t));
  void *dx = dev16(r, x, ROWS * V), *dt = dev(r, targets, sizeof targets);
  int rows = ROWS, vocab = V;
  run_ok(r, DIM1(3), DIM1(64), 0, ARGS(&dloss, &ddl, &dx, &dt, &rows, &vocab));
  get(r, losses, dloss, sizeof losses);
  get(r, dl, ddl, ROWS * V * sizeof(uint16_t));
  for (int i = 0; i < ROWS; i++) {
    double m = -INFINITY, s = 0;
    for (int c = 0; c < V; c++) m = fmax(m, bf16_val(x[i * V + c]));
    for (int c = 0; c < V; c++) s += exp(bf16_val(x[i * V + c]) - m);
    double loss = log(s) + m - bf16_val(x[i * V + targets[i]]);
    /* expf and logf within 2 f32 spacings, a sum of V terms: 1e-5 of the terms' size */
    expect_near(r, "loss", (size_t)i, losses[i], loss, 1e-5 * (fabs(log(s)) + fabs(m) + 1));
    for (int c = 0; c < V; c++) {
      double want = (exp(bf16_val(x[i * V + c]) - m) / s - (c == targets[i])) / ROWS;
      expect_near(r, "dlogits", (size_t)(i * V + c), bf16_val(dl[i * V + c]), want, bf16_tol(want, 1e-6 / ROWS));
    }
  }
  free(x);
  free(dl);
}

static void run_warp_reduce_bf16(struct run *r) {
  enum { N2 = 300, G = 5, B = 64, WARPS = G * B / 32 };
  uint16_t *in = rand_bf16(2 * N2, -10.0f, 10.0f, 122), sums[2 * WARPS], maxes[2 * WARPS];
  uint16_t want_s[2 * WARPS], want_m[2 * WARPS];
  void *ds = dev(r, NULL, sizeof sums), *dm = dev(r, NULL, sizeof maxes), *din = dev16(r, in, 2 * N2);
  int n2 = N2;
  run_ok(r, DIM1(G), DIM1(B), 0, ARGS(&ds, &dm, &din, &n2));
  get(r, sums, ds, sizeof sums);
  get(r, maxes, dm, sizeof maxes);
  for (int w = 0; w < WARPS; w++)
    for (int h = 0; h < 2; h++) { /* the butterfly of the kernel, rounding every sum to bf16 */
      double s[32], m[32], s2[32], m2[32];
      for (int l = 0; l < 32; l++) {
        int i = 32 * w + l;
        s[l] = i < N2 ? bf16_val(in[2 * i + h]) : 0.0;
        m[l] = i < N2 ? s[l] : -INFINITY;
      }
      for (int d = 16; d > 0; d >>= 1) {
        for (int l = 0; l < 32; l++) {
          s2[l] = bf16_round(s[l] + s[l ^ d]);
          m2[l] = fmax(m[l], m[l ^ d]);
        }
        memcpy(s, s2, sizeof s);
        memcpy(m, m2, sizeof m);
      }
      want_s[2 * w + h] = bf16_bits(s[0]);
      want_m[2 * w + h] = bf16_bits(m[0]);
    }
  expect_bits16(r, "warp sum", sums, want_s, 2 * WARPS, bf16_val);
  expect_bits16(r, "warp max", maxes, want_m, 2 * WARPS, bf16_val);
  free(in);
}

/* ====================================================== f16, atomics, int8, tf32 */

static void run_residual_scale_f16(struct run *r) {
  enum { N2 = 333, N = 2 * N2 };
  uint16_t *x = rand_f16(N, -8.0f, 8.0f, 123), *res = rand_f16(N, -8.0f, 8.0f, 124);
  uint16_t out[N], scaled[N], want[N], wants[N];
  uint16_t alpha = f16_bits(f16_round(0.7));
  void *dout = dev(r, NULL, sizeof out), *dsc = dev(r, NULL, sizeof scaled), *dx = dev16(r, x, N);
  void *dres = dev16(r, res, N);
  int n2 = N2;
  run_ok(r, DIM1(3), DIM1(128), 0, ARGS(&dout, &dsc, &dx, &dres, &alpha, &n2));
  get(r, out, dout, sizeof out);
  get(r, scaled, dsc, sizeof scaled);
  for (int i = 0; i < N; i++) { /* f16 products are exact in double: one rounding, as the fma */
    want[i] = f16_bits(f16_round(fma(f16_val(x[i]), f16_val(alpha), f16_val(res[i]))));
    wants[i] = f16_bits(f16_round(f16_val(x[i]) * f16_val(alpha)));
  }
  expect_bits16(r, "x * alpha + residual", out, want, N, f16_val);
  expect_bits16(r, "x * alpha", scaled, wants, N, f16_val);
  free(x);
  free(res);
}

static void run_gelu_f16_fwd(struct run *r) {
  enum { N2 = 200, N = 2 * N2 };
  uint16_t *x = rand_f16(N, -5.0f, 5.0f, 125), out[N];
  void *dout = dev(r, NULL, sizeof out), *dx = dev16(r, x, N);
  int n2 = N2;
  run_ok(r, DIM1(2), DIM1(128), 0, ARGS(&dout, &dx, &n2));
  get(r, out, dout, sizeof out);
  for (int i = 0; i < N; i++) {
    double want = gelu(f16_val(x[i]));
    expect_near(r, "gelu", (size_t)i, f16_val(out[i]), want, f16_ulp(want) + 1e-6);
  }
  free(x);
}

/*
 * Bucket sums of n pairs of 16-bit values (val, bits) added atomically: the values are whole
 * multiples of `step` small enough that every partial sum is exact, whatever the order.
 */
static void check_atomic_pairs(struct run *r, int n, int nb, uint16_t (*bits)(double), double (*val)(uint16_t),
                               double step, int span, double exact_below) {
  uint16_t *v = xcalloc(2 * (size_t)n, sizeof(uint16_t)), *buckets = xcalloc(2 * (size_t)nb, sizeof(uint16_t));
  int *keys = xcalloc((size_t)n, sizeof(int));
  double *want = xcalloc(2 * (size_t)nb, sizeof(double)), *mag = xcalloc(2 * (size_t)nb, sizeof(double));
  uint64_t st = 126;
  for (int i = 0; i < n; i++) {
    keys[i] = (int)(ptx_rand32(&st) % (uint32_t)nb);
    for (int h = 0; h < 2; h++) {
      double x = step * ((int)(ptx_rand32(&st) % (uint32_t)(2 * span + 1)) - span);
      v[2 * i + h] = bits(x);
      want[2 * keys[i] + h] += x;
      mag[2 * keys[i] + h] += fabs(x);
    }
  }
  for (int k = 0; k < 2 * nb; k++) assert_true(mag[k] < exact_below); /* the test's own premise */
  void *db = dev(r, NULL, 2 * (size_t)nb * sizeof(uint16_t)), *dv = dev16(r, v, 2 * (size_t)n);
  void *dk = dev(r, keys, (size_t)n * sizeof(int));
  run_ok(r, ptx_grid_for((size_t)n, 64), DIM1(64), 0, ARGS(&db, &dv, &dk, &n));
  get(r, buckets, db, 2 * (size_t)nb * sizeof(uint16_t));
  for (int k = 0; k < 2 * nb; k++)
    ptx_expect(val(buckets[k]) == want[k], r->label, "bucket sum", (size_t)k, "got %g, expected %g", val(buckets[k]),
               want[k]);
  free(v);
  free(buckets);
  free(keys);
  free(want);
  free(mag);
}

/* Quarters below 512 are exact in f16 (11 significant bits); integers below 256 in bf16 (8). */
static void run_atomic_half2_sum(struct run *r) { check_atomic_pairs(r, 500, 8, f16_bits, f16_val, 0.25, 16, 512); }
static void run_atomic_bf162_sum(struct run *r) { check_atomic_pairs(r, 300, 16, bf16_bits, bf16_val, 1.0, 3, 256); }

static void run_dp4a_gemv_s8(struct run *r) {
  enum { ROWS = 13, COLS4 = 50 };
  int8_t a[ROWS * COLS4 * 4], x[COLS4 * 4];
  int y[ROWS];
  float yf[ROWS], rs[ROWS];
  uint64_t st = 127;
  for (size_t i = 0; i < sizeof a; i++) a[i] = (int8_t)ptx_rand32(&st);
  for (size_t i = 0; i < sizeof x; i++) x[i] = (int8_t)ptx_rand32(&st);
  for (int i = 0; i < ROWS; i++) rs[i] = 0.01f + (float)i / 256.0f;
  void *dy = dev(r, NULL, sizeof y), *dyf = dev(r, NULL, sizeof yf), *da = dev(r, a, sizeof a);
  void *dx = dev(r, x, sizeof x), *drs = dev(r, rs, sizeof rs);
  float xs = 0.0123f;
  int rows = ROWS, cols4 = COLS4;
  run_ok(r, DIM1(5), DIM1(96), 0, ARGS(&dy, &dyf, &da, &dx, &drs, &xs, &rows, &cols4));
  get(r, y, dy, sizeof y);
  get(r, yf, dyf, sizeof yf);
  for (int i = 0; i < ROWS; i++) {
    int acc = 0;
    for (int c = 0; c < 4 * COLS4; c++) acc += a[i * 4 * COLS4 + c] * x[c];
    expect_int(r, "y", (size_t)i, y[i], acc);
    float want = (float)acc * rs[i] * xs; /* the kernel's two f32 products, in its order */
    ptx_expect(ptx_same_f32(yf[i], want), r->label, "dequantised y", (size_t)i, "got %.9g, expected %.9g", yf[i], want);
  }
}

static void run_tf32_round(struct run *r) {
  enum { N = 300 };
  float *in = xcalloc(N, sizeof(float)), out[N];
  uint64_t st = 128;
  for (int i = 0; i < N; i++) in[i] = ptx_f32_from(ptx_rand32(&st) & 0xbfffffffu); /* all magnitudes, no NaN */
  const float special[] = {
      0.0f,      -0.0f,         INFINITY, -INFINITY, 1.0f + 0x1p-11f, 1.0f + 0x1p-11f + 0x1p-23f, 1.0f + 3 * 0x1p-11f,
      0x1p-140f, 3.4028235e38f, 1.5f};
  for (size_t i = 0; i < COUNT(special); i++) in[i] = special[i]; /* ties, carries, denormals, overflow */
  void *dout = dev(r, NULL, sizeof out), *din = dev(r, in, sizeof(float) * N);
  int n = N;
  run_ok(r, DIM1(3), DIM1(128), 0, ARGS(&dout, &din, &n));
  get(r, out, dout, sizeof out);
  for (int i = 0; i < N; i++) {
    float want = tf32_rna(in[i]);
    ptx_expect(ptx_same_f32(out[i], want), r->label, "tf32", (size_t)i, "%a: got %a, expected %a", in[i], out[i], want);
  }
  free(in);
}

/* ====================================================== f32 GEMMs with asynchronous copies */

/* C (M x N) against A B in double: each element within K roundings of its terms' size. */
static void check_gemm(struct run *r, const float *c, const double *a, const double *b, int M, int N, int K,
                       bool b_col_major) {
  for (int i = 0; i < M; i++)
    for (int j = 0; j < N; j++) {
      double s = 0, mag = 0;
      for (int t = 0; t < K; t++) {
        double p = a[i * K + t] * (b_col_major ? b[j * K + t] : b[t * N + j]);
        s += p;
        mag += fabs(p);
      }
      expect_near(r, "C", (size_t)(i * N + j), c[i * N + j], s, K * 0x1p-24 * mag + 1e-30);
    }
}

static double *to_double(const float *v, size_t n) {
  double *d = xcalloc(n, sizeof *d);
  for (size_t i = 0; i < n; i++) d[i] = v[i];
  return d;
}

static void gemm_f32(struct run *r, int M, int N, int K, gcap_dim3 grid, gcap_dim3 block, uint32_t shared,
                     uint64_t seed) {
  float *a = rand_floats((size_t)M * K, -1.0f, 1.0f, seed), *b = rand_floats((size_t)K * N, -1.0f, 1.0f, seed + 1);
  float *c = xcalloc((size_t)M * N, sizeof(float));
  void *dc = dev(r, NULL, sizeof(float) * M * N), *da = dev(r, a, sizeof(float) * M * K);
  void *db = dev(r, b, sizeof(float) * K * N);
  run_ok(r, grid, block, shared, ARGS(&dc, &da, &db, &M, &N, &K));
  get(r, c, dc, sizeof(float) * M * N);
  double *ad = to_double(a, (size_t)M * K), *bd = to_double(b, (size_t)K * N);
  check_gemm(r, c, ad, bd, M, N, K, false);
  free(a);
  free(b);
  free(c);
  free(ad);
  free(bd);
}

static void run_gemm_f32_pipeline(struct run *r) {
  gemm_f32(r, 50, 40, 70, GCAP_DIM3(3, 4, 1), GCAP_DIM3(16, 16, 1), 0, 129);
}

/*
 * The planted bug of gemm_f32_nowait: at its last step it reads the shared tile whose cp.async
 * group it never waited for. The race check finds it (LAUNCH_FAILURE naming the line marked
 * "// BUG"); without it, the product is whatever the copies had landed, as on a GPU.
 */
static void run_gemm_f32_nowait(struct run *r) {
  enum { M = 50, N = 40, K = 70 };
  float *a = rand_floats(M * K, -1.0f, 1.0f, 163), *b = rand_floats(K * N, -1.0f, 1.0f, 164);
  void *dc = dev(r, NULL, sizeof(float) * M * N), *da = dev(r, a, sizeof(float) * M * K);
  void *db = dev(r, b, sizeof(float) * K * N);
  int m = M, n = N, k = K;
  gcap_status st =
      ptx_launch(&r->f, r->kernel, GCAP_DIM3(3, 4, 1), GCAP_DIM3(16, 16, 1), 0, ARGS(&dc, &da, &db, &m, &n, &k));
  if (st == GCAP_SUCCESS) st = gcap_stream_synchronize(r->f.s);
  free(a);
  free(b);
  if (!test_on_sim()) return; /* a GPU computes whatever the copies had landed */
  const char *msg = gcap_last_error_message();
  if (!(r->checks & GCAP_SIM_CHECK_SHARED_RACES)) {
    if (st != GCAP_SUCCESS) {
      print_error("%s: %s (%s)\n", r->label, gcap_status_name(st), msg);
      fail();
    }
    return;
  }
  if (st != GCAP_ERROR_LAUNCH_FAILURE) {
    print_error("%s: the launch returned %s, expected LAUNCH_FAILURE (message: \"%s\")\n", r->label,
                gcap_status_name(st), msg);
    fail();
  }
  int lines[2];
  assert_int_equal(ptx_marked_lines("modern/async_copy.cu", lines, 2), 1);
  char where[64];
  snprintf(where, sizeof where, "async_copy.cu:%d", lines[0]);
  const char *words[] = {"gemm_f32_nowait", "shared-memory race", "cp.async", where};
  for (size_t i = 0; i < COUNT(words); i++)
    if (strstr(msg, words[i]) == NULL) {
      print_error("%s: \"%s\" is not in the message \"%s\"\n", r->label, words[i], msg);
      fail();
    }
}

static void run_gemm_f32_barrier(struct run *r) {
  gemm_f32(r, 48, 32, 64, GCAP_DIM3(2, 3, 1), GCAP_DIM3(16, 16, 1), 0, 131);
}

static void run_mbarrier_prodcons(struct run *r) {
  enum { G = 3, ROUNDS = 5, N = G * ROUNDS * 64 };
  int in[N], out[G * 64];
  uint64_t st = 133;
  for (int i = 0; i < N; i++) in[i] = (int)(ptx_rand32(&st) % 2001) - 1000;
  void *dout = dev(r, NULL, sizeof out), *din = dev(r, in, sizeof in);
  int rounds = ROUNDS;
  run_ok(r, DIM1(G), DIM1(96), 0, ARGS(&dout, &din, &rounds));
  get(r, out, dout, sizeof out);
  for (int b = 0; b < G; b++)
    for (int j = 0; j < 64; j++) {
      int s = 0;
      for (int k = 0; k < ROUNDS; k++) s += in[(b * ROUNDS + k) * 64 + j] * 3 + k;
      expect_int(r, "consumed sum", (size_t)(b * 64 + j), out[b * 64 + j], s);
    }
}

static void run_gemm_smem96k(struct run *r) {
  enum { BYTES = 96 * 1024 };
  gcap_kernel *k = test_kernel_of(r->f.m, r->kernel);
  assert_int_equal(gcap_kernel_set_attribute(k, GCAP_KERNEL_ATTR_MAX_DYNAMIC_SHARED_SIZE, BYTES), GCAP_SUCCESS);
  gemm_f32(r, 128, 128, 192, GCAP_DIM3(2, 2, 1), DIM1(256), BYTES, 134);
}

/* ====================================================== tensor cores */

/*
 * A tensor-core GEMM: A (M x K) and B (K x N, or N x K column-major) of 16-bit floats drawn in
 * [-1, 1) and rounded (bits16), C in f32, with `with_c0` an f32 C0 added. Products of 16-bit
 * floats are exact in f32; the sum of K of them is within K roundings of the terms' size.
 */
static void mma_gemm16(struct run *r, int M, int N, int K, gcap_dim3 grid, gcap_dim3 block, bool bf16, bool with_c0,
                       uint64_t seed) {
  uint16_t *a = bf16 ? rand_bf16((size_t)M * K, -1.0f, 1.0f, seed) : rand_f16((size_t)M * K, -1.0f, 1.0f, seed);
  uint16_t *b = bf16 ? rand_bf16((size_t)K * N, -1.0f, 1.0f, seed + 1) : rand_f16((size_t)K * N, -1.0f, 1.0f, seed + 1);
  float *c0 = rand_floats((size_t)M * N, -1.0f, 1.0f, seed + 2), *c = xcalloc((size_t)M * N, sizeof(float));
  double *ad = xcalloc((size_t)M * K, sizeof(double)), *bd = xcalloc((size_t)K * N, sizeof(double));
  for (int i = 0; i < M * K; i++) ad[i] = bf16 ? bf16_val(a[i]) : f16_val(a[i]);
  for (int i = 0; i < K * N; i++) bd[i] = bf16 ? bf16_val(b[i]) : f16_val(b[i]);
  void *dc = dev(r, NULL, sizeof(float) * M * N), *da = dev16(r, a, (size_t)M * K), *db = dev16(r, b, (size_t)K * N);
  void *dc0 = dev(r, c0, sizeof(float) * M * N);
  if (with_c0) run_ok(r, grid, block, 0, ARGS(&dc, &da, &db, &dc0, &M, &N, &K));
  else run_ok(r, grid, block, 0, ARGS(&dc, &da, &db, &M, &N, &K));
  get(r, c, dc, sizeof(float) * M * N);
  for (int i = 0; i < M; i++)
    for (int j = 0; j < N; j++) { /* C0 starts the sum: one more term */
      double s = with_c0 ? c0[i * N + j] : 0, mag = fabs(s);
      for (int t = 0; t < K; t++) {
        s += ad[i * K + t] * bd[t * N + j];
        mag += fabs(ad[i * K + t] * bd[t * N + j]);
      }
      expect_near(r, "C", (size_t)(i * N + j), c[i * N + j], s, (K + 1) * 0x1p-24 * mag + 1e-30);
    }
  free(a);
  free(b);
  free(c0);
  free(c);
  free(ad);
  free(bd);
}

static void run_mma_gemm_f16(struct run *r) {
  mma_gemm16(r, 80, 64, 64, GCAP_DIM3(2, 3, 1), DIM1(128), false, false, 135);
}
static void run_mma_gemm_bf16(struct run *r) {
  mma_gemm16(r, 80, 64, 64, GCAP_DIM3(2, 3, 1), DIM1(128), true, false, 138);
}
static void run_mma_gemm_s8(struct run *r) {
  enum { M = 80, N = 64, K = 64 };
  int8_t a[M * K], bt[N * K];
  int c[M * N];
  uint64_t st = 156;
  for (int i = 0; i < M * K; i++) a[i] = (int8_t)ptx_rand32(&st);
  for (int i = 0; i < N * K; i++) bt[i] = (int8_t)ptx_rand32(&st);
  void *dc = dev(r, NULL, sizeof c), *da = dev(r, a, sizeof a), *db = dev(r, bt, sizeof bt);
  int m = M, n = N, k = K;
  run_ok(r, GCAP_DIM3(2, 3, 1), DIM1(128), 0, ARGS(&dc, &da, &db, &m, &n, &k));
  get(r, c, dc, sizeof c);
  for (int i = 0; i < M; i++)
    for (int j = 0; j < N; j++) {
      int sum = 0;
      for (int t = 0; t < K; t++) sum += a[i * K + t] * bt[j * K + t];
      expect_int(r, "C", (size_t)(i * N + j), c[i * N + j], sum);
    }
}

static void run_mma_gemm_tf32(struct run *r) {
  enum { M = 64, N = 32, K = 40 };
  float *a = rand_floats(M * K, -1.0f, 1.0f, 157), *b = rand_floats(K * N, -1.0f, 1.0f, 158);
  float c[M * N];
  double ad[M * K], bd[K * N];
  for (int i = 0; i < M * K; i++) ad[i] = tf32_rna(a[i]); /* the kernel rounds its fragments */
  for (int i = 0; i < K * N; i++) bd[i] = tf32_rna(b[i]);
  void *dc = dev(r, NULL, sizeof c), *da = dev(r, a, sizeof(float) * M * K), *db = dev(r, b, sizeof(float) * K * N);
  int m = M, n = N, k = K;
  run_ok(r, GCAP_DIM3(1, 2, 1), DIM1(128), 0, ARGS(&dc, &da, &db, &m, &n, &k));
  get(r, c, dc, sizeof c);
  check_gemm(r, c, ad, bd, M, N, K, false); /* tf32 products (11 bits each) are exact in f32 */
  free(a);
  free(b);
}

static void run_wmma_gemm_f16(struct run *r) {
  mma_gemm16(r, 48, 48, 64, GCAP_DIM3(2, 2, 1), DIM1(128), false, true, 141);
}
static void run_wmma_gemm_bf16(struct run *r) {
  mma_gemm16(r, 48, 48, 64, GCAP_DIM3(2, 2, 1), DIM1(128), true, true, 144);
}

static void run_wmma_gemm_s8(struct run *r) {
  enum { M = 48, N = 48, K = 64 };
  int8_t a[M * K], b[K * N];
  int c0[M * N], c[M * N];
  uint64_t st = 147;
  for (int i = 0; i < M * K; i++) a[i] = (int8_t)ptx_rand32(&st);
  for (int i = 0; i < K * N; i++) b[i] = (int8_t)ptx_rand32(&st);
  for (int i = 0; i < M * N; i++) c0[i] = (int)(ptx_rand32(&st) % 200001) - 100000;
  void *dc = dev(r, NULL, sizeof c), *da = dev(r, a, sizeof a), *db = dev(r, b, sizeof b), *dc0 = dev(r, c0, sizeof c0);
  int m = M, n = N, k = K;
  run_ok(r, GCAP_DIM3(2, 2, 1), DIM1(128), 0, ARGS(&dc, &da, &db, &dc0, &m, &n, &k));
  get(r, c, dc, sizeof c);
  for (int i = 0; i < M; i++)
    for (int j = 0; j < N; j++) {
      int s = c0[i * N + j];
      for (int t = 0; t < K; t++) s += a[i * K + t] * b[t * N + j];
      expect_int(r, "C", (size_t)(i * N + j), c[i * N + j], s);
    }
}

static void run_wmma_gemm_tf32(struct run *r) {
  enum { M = 48, N = 32, K = 40 };
  float *a = rand_floats(M * K, -1.0f, 1.0f, 148), *b = rand_floats(K * N, -1.0f, 1.0f, 149); /* b: N x K */
  float c[M * N];
  double ad[M * K], bd[K * N];
  for (int i = 0; i < M * K; i++) ad[i] = tf32_rna(a[i]); /* the kernel rounds its fragments */
  for (int i = 0; i < K * N; i++) bd[i] = tf32_rna(b[i]);
  void *dc = dev(r, NULL, sizeof c), *da = dev(r, a, sizeof(float) * M * K), *db = dev(r, b, sizeof(float) * K * N);
  int m = M, n = N, k = K;
  run_ok(r, GCAP_DIM3(1, 2, 1), DIM1(128), 0, ARGS(&dc, &da, &db, &m, &n, &k));
  get(r, c, dc, sizeof c);
  check_gemm(r, c, ad, bd, M, N, K, true); /* tf32 products (11 bits each) are exact in f32 */
  free(a);
  free(b);
}

static void run_flash_attn_fwd(struct run *r) {
  enum { HEADS = 2, T = 64, D = 64, N = HEADS * T * D };
  uint16_t *q = rand_f16(N, -1.0f, 1.0f, 150), *k = rand_f16(N, -1.0f, 1.0f, 151), *v = rand_f16(N, -1.0f, 1.0f, 152);
  float *o = xcalloc(N, sizeof(float));
  double *p = xcalloc(T, sizeof(double));
  void *dout = dev(r, NULL, sizeof(float) * N), *dq = dev16(r, q, N), *dk = dev16(r, k, N), *dv = dev16(r, v, N);
  int t = T;
  float scale = 0.125f;
  run_ok(r, GCAP_DIM3(T / 32, HEADS, 1), DIM1(64), 0, ARGS(&dout, &dq, &dk, &dv, &t, &scale));
  get(r, o, dout, sizeof(float) * N);
  for (int h = 0; h < HEADS; h++)
    for (int i = 0; i < T; i++) {
      const uint16_t *qi = q + (h * T + i) * D;
      double m = -INFINITY, s = 0;
      for (int j = 0; j <= i; j++) {
        const uint16_t *kj = k + (h * T + j) * D;
        double dot = 0;
        for (int d = 0; d < D; d++) dot += f16_val(qi[d]) * f16_val(kj[d]);
        p[j] = dot * scale;
        m = fmax(m, p[j]);
      }
      for (int j = 0; j <= i; j++) s += p[j] = exp(p[j] - m);
      for (int d = 0; d < D; d++) {
        double want = 0;
        for (int j = 0; j <= i; j++) want += p[j] * f16_val(v[(h * T + j) * D + d]);
        want /= s;
        /*
         * The kernel rounds the probabilities to f16 before P V (a relative 2^-11 each) while
         * its row sum keeps them in f32: the output, a mean of values in [-1, 1], moves by at
         * most 2^-11; f32 scores and ex2.approx add well under 1e-5.
         */
        size_t at = (size_t)(h * T + i) * D + (size_t)d;
        expect_near(r, "O", at, o[at], want, 0x1p-11 + 1e-5);
      }
    }
  free(q);
  free(k);
  free(v);
  free(o);
  free(p);
}

/* ====================================================== cooperative launches */

static void run_coop(struct run *r, gcap_dim3 grid, gcap_dim3 block, void **args) {
  gcap_kernel *k = test_kernel_of(r->f.m, r->kernel);
  expect_ok(r, gcap_launch_cooperative_kernel(r->f.s, k, grid, block, 0, args));
}

static void run_grid_center(struct run *r) {
  enum { N = 1000, G = 4 };
  float *x = rand_floats(N, -1.0f, 3.0f, 153), *got = xcalloc(N, sizeof(float)), mean;
  void *dx = dev(r, x, sizeof(float) * N), *dp = dev(r, NULL, sizeof(float) * G), *dm = dev(r, NULL, sizeof mean);
  int n = N;
  run_coop(r, DIM1(G), DIM1(128), ARGS(&dx, &dp, &dm, &n));
  get(r, got, dx, sizeof(float) * N);
  get(r, &mean, dm, sizeof mean);
  double s = 0, mag = 0;
  for (int i = 0; i < N; i++) {
    s += x[i];
    mag += fabs(x[i]);
  }
  expect_near(r, "mean", 0, mean, s / N, N * 0x1p-24 * mag / N + ptx_ulp_f32(s / N)); /* N roundings, a division */
  for (int i = 0; i < N; i++) /* phase 3 ran after phase 2: x minus the mean the grid agreed on */
    ptx_expect(ptx_same_f32(got[i], x[i] - mean), r->label, "centred", (size_t)i, "got %.9g, expected %.9g", got[i],
               x[i] - mean);
  free(x);
  free(got);
}

static void run_jacobi_coop(struct run *r) {
  enum { N = 300, SWEEPS = 10 };
  float *u = rand_floats(N, -1.0f, 1.0f, 154), *f = rand_floats(N, -0.01f, 0.01f, 155),
        *got = xcalloc(N, sizeof(float));
  float *a = xcalloc(N, sizeof(float)), *b = xcalloc(N, sizeof(float));
  void *du = dev(r, u, sizeof(float) * N), *dt = dev(r, NULL, sizeof(float) * N), *df = dev(r, f, sizeof(float) * N);
  int n = N, sweeps = SWEEPS;
  run_coop(r, DIM1(3), DIM1(64), ARGS(&du, &dt, &df, &n, &sweeps));
  get(r, got, du, sizeof(float) * N);
  memcpy(a, u, sizeof(float) * N);
  for (int s = 0; s < SWEEPS; s++) { /* the kernel's f32 operations in its order: exact */
    for (int i = 0; i < N; i++) {
      float l = i > 0 ? a[i - 1] : 0.0f, rr = i + 1 < N ? a[i + 1] : 0.0f;
      b[i] = (l + rr + f[i]) * 0.5f;
    }
    memcpy(a, b, sizeof(float) * N);
  }
  for (int i = 0; i < N; i++)
    ptx_expect(ptx_same_f32(got[i], a[i]), r->label, "u", (size_t)i, "got %.9g, expected %.9g", got[i], a[i]);
  free(u);
  free(f);
  free(got);
  free(a);
  free(b);
}

/* ====================================================== the table */

static const struct modern kernels[] = {
    {"bf16_transformer", "layernorm_bf16_fwd", BOTH_SM, run_layernorm_bf16_fwd},
    {"bf16_transformer", "layernorm_bf16_bwd", BOTH_SM, run_layernorm_bf16_bwd},
    {"bf16_transformer", "attn_softmax_bf16", BOTH_SM, run_attn_softmax_bf16},
    {"bf16_transformer", "gelu_bf16_fwd", BOTH_SM, run_gelu_bf16_fwd},
    {"bf16_transformer", "gelu_bf16_bwd", BOTH_SM, run_gelu_bf16_bwd},
    {"bf16_transformer", "residual_bias_bf16", BOTH_SM, run_residual_bias_bf16},
    {"bf16_transformer", "bias_gelu_bf16", BOTH_SM, run_bias_gelu_bf16},
    {"bf16_transformer", "scale_shift_bf16", BOTH_SM, run_scale_shift_bf16},
    {"bf16_transformer", "adamw_bf16", BOTH_SM, run_adamw_bf16},
    {"bf16_transformer", "crossentropy_bf16", BOTH_SM, run_crossentropy_bf16},
    {"bf16_transformer", "warp_reduce_bf16", BOTH_SM, run_warp_reduce_bf16},
    {"half_misc", "residual_scale_f16", BOTH_SM, run_residual_scale_f16},
    {"half_misc", "gelu_f16_fwd", BOTH_SM, run_gelu_f16_fwd},
    {"half_misc", "atomic_half2_sum", BOTH_SM, run_atomic_half2_sum},
    {"half_misc", "atomic_bf162_sum", BOTH_SM, run_atomic_bf162_sum},
    {"half_misc", "dp4a_gemv_s8", BOTH_SM, run_dp4a_gemv_s8},
    {"half_misc", "tf32_round", BOTH_SM, run_tf32_round},
    {"async_copy", "gemm_f32_pipeline", BOTH_SM, run_gemm_f32_pipeline},
    {"async_copy", "gemm_f32_nowait", BOTH_SM, run_gemm_f32_nowait},
    {"async_copy", "gemm_f32_barrier", BOTH_SM, run_gemm_f32_barrier},
    {"async_copy", "mbarrier_prodcons", BOTH_SM, run_mbarrier_prodcons},
    {"mma_sync", "mma_gemm_f16", BOTH_SM, run_mma_gemm_f16},
    {"mma_sync", "mma_gemm_bf16", BOTH_SM, run_mma_gemm_bf16},
    {"mma_sync", "mma_gemm_s8", BOTH_SM, run_mma_gemm_s8},
    {"mma_sync", "mma_gemm_tf32", BOTH_SM, run_mma_gemm_tf32},
    {"mma_sync", "flash_attn_fwd", BOTH_SM, run_flash_attn_fwd},
    {"wmma", "wmma_gemm_f16", BOTH_SM, run_wmma_gemm_f16},
    {"wmma", "wmma_gemm_bf16", BOTH_SM, run_wmma_gemm_bf16},
    {"wmma", "wmma_gemm_s8", BOTH_SM, run_wmma_gemm_s8},
    {"wmma", "wmma_gemm_tf32", BOTH_SM, run_wmma_gemm_tf32},
    {"big_smem", "gemm_smem96k", BOTH_SM, run_gemm_smem96k},
    {"grid_sync", "grid_center", BOTH_SM, run_grid_center},
    {"grid_sync", "jacobi_coop", BOTH_SM, run_jacobi_coop},
};

/* One kernel on each architecture's PTX, checks off and all on, IMMEDIATE and DEFERRED. */
static void test_modern(void **state) {
  const struct modern *p = *state;
  const char *run_pending = getenv("GCAP_TEST_PENDING");
  if (is_pending(p->kernel) && (run_pending == NULL || strcmp(run_pending, "1") != 0)) skip();
  static const int sms[] = {80, 90};
  static const unsigned check_sets[] = {0, PTX_CHECKS_ALL};
  for (size_t a = 0; a < COUNT(sms); a++) {
    if (!(p->archs & (1u << a))) continue;
    char file[96];
    snprintf(file, sizeof file, "modern/%s.sm_%d.ptx", p->file, sms[a]);
    for (size_t c = 0; c < COUNT(check_sets); c++)
      for (int deferred = 0; deferred < 2; deferred++) {
        if (!test_on_sim() && (c > 0 || deferred)) continue; /* a GPU runs each PTX once */
        struct run r = {.kernel = p->kernel, .checks = check_sets[c]};
        snprintf(r.label, sizeof r.label, "%s (sm_%d, checks %s, %s)", p->kernel, sms[a], c ? "all" : "off",
                 deferred ? "DEFERRED" : "IMMEDIATE");
        r.f.file = file;
        r.f.ctx = make_context(r.checks, deferred);
        r.f.s = test_stream_create(r.f.ctx);
        r.f.m = ptx_load(r.f.ctx, file);
        p->fn(&r);
        gcap_context_destroy(r.f.ctx);
      }
  }
}

int main(void) {
  test_require_backend();
  struct CMUnitTest tests[COUNT(kernels)];
  for (size_t i = 0; i < COUNT(kernels); i++) {
    struct CMUnitTest t = {kernels[i].kernel, test_modern, NULL, NULL, (void *)&kernels[i]};
    tests[i] = t;
  }
  return cmocka_run_group_tests_name("ptx_modern", tests, NULL, NULL);
}
