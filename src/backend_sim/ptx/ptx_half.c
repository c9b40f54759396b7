/*
 * Half-precision arithmetic: the .f16, .f16x2, .bf16 and .bf16x2 forms of add, sub, mul, fma,
 * neg, abs, min, max, ex2, tanh, setp and set, and the fp8 (.e4m3x2, .e5m2x2) conversions.
 * Operands are exact in float; a sum, difference or product of two halves is exact in double, so
 * it is rounded once, to nearest even, straight to the destination format. fma's exact
 * a * b + c can need more than a double: its double sum comes with the sign of the error (an
 * error-free two-sum), which settles the one case where rounding the double again could differ
 * from rounding the exact value, a double lying on a tie of the narrow format. ex2 and tanh are
 * computed in double and rounded once (correctly rounded but for the rare double tie, within
 * the PTX ISA's stated error for .approx). Packed forms do the same to each half: the lower 16
 * bits are element 0, the upper element 1.
 */
#include <math.h>
#include <string.h>

#include "ptx_half.h"
#include "ptx_internal.h"

#define HANDLER(name) static void name(struct px_warp *w, const struct px_ins *in, uint32_t m)

enum { HF_FTZ = 1, HF_SAT = 2, HF_RELU = 4, HF_NAN = 8 };

#define CANON_NAN 0x7fffu

/* ---------------------------------------------------------------- values and rounding */

static inline float hval(bool bf, uint32_t h) {
  uint32_t bits;
  if (bf) {
    bits = h << 16;
  } else {
    uint32_t sign = (h & 0x8000u) << 16, e = (h >> 10) & 0x1f, man = h & 0x3ff;
    if (e == 0x1f) bits = sign | 0x7f800000u | man << 13;
    else if (e != 0) bits = sign | (e + 112) << 23 | man << 13;
    else {
      float f = (float)man * 0x1p-24f; /* zero or subnormal: exact */
      return sign ? -f : f;
    }
  }
  float f;
  memcpy(&f, &bits, 4);
  return f;
}

/* Significand bits (with the implicit one), smallest normal exponent and largest exponent. */
#define P_OF(bf) ((bf) ? 8 : 11)
#define EMIN_OF(bf) ((bf) ? -126 : -14)
#define EMAX_OF(bf) ((bf) ? 127 : 15)
#define INF_OF(bf) ((bf) ? 0x7f80u : 0x7c00u)

static inline uint32_t hround(bool bf, double x, int tail) {
  const int P = P_OF(bf), emin = EMIN_OF(bf), emax = EMAX_OF(bf);
  uint64_t u;
  memcpy(&u, &x, 8);
  uint32_t sign = (uint32_t)(u >> 48) & 0x8000u;
  u &= ~(1ull << 63);
  if (u >= 0x7ff0000000000000ull) return u == 0x7ff0000000000000ull ? sign | INF_OF(bf) : CANON_NAN;
  int e = (int)(u >> 52) - 1023;
  if (e == -1023) return sign; /* zero, or a double subnormal: far below the smallest half */
  uint64_t man = (u & ((1ull << 52) - 1)) | (1ull << 52);
  unsigned shift = (unsigned)(52 - (P - 1)) + (e < emin ? (unsigned)(emin - e) : 0u);
  if (shift >= 54) return sign; /* below half the smallest subnormal */
  uint64_t keep = man >> shift, rem = man & ((1ull << shift) - 1), half = 1ull << (shift - 1);
  if (rem > half || (rem == half && (tail > 0 || (tail == 0 && (keep & 1))))) keep++;
  if (e < emin) return sign | (uint32_t)keep; /* a subnormal; rounding up to 2^emin gives its encoding */
  if (keep >> P) {
    keep >>= 1;
    e++;
  }
  if (e > emax) return sign | INF_OF(bf);
  return sign | (uint32_t)(e - emin + 1) << (P - 1) | ((uint32_t)keep & ((1u << (P - 1)) - 1));
}

float px_half_value(bool bf, uint32_t h) { return hval(bf, h & 0xffffu); }
uint32_t px_half_round(bool bf, double x, int tail) { return hround(bf, x, tail); }

static inline bool is_nan(bool bf, uint32_t h) { return (h & 0x7fffu) > INF_OF(bf); }
static inline bool is_subnormal(bool bf, uint32_t h) { return (h & INF_OF(bf)) == 0 && (h & 0x7fffu) != 0; }
/* .ftz: a subnormal becomes a zero of its sign. */
static inline uint32_t flush(bool bf, uint32_t h, unsigned fl) {
  return (fl & HF_FTZ) && is_subnormal(bf, h) ? (h & 0x8000u) : h;
}

/* A rounded result with the instruction's .ftz, .sat (clamped to [0, 1], NaN to +0) and .relu
 * (negative to +0, NaN canonical). */
static inline uint32_t finish(bool bf, uint32_t r, unsigned fl) {
  if (!fl) return r;
  r = flush(bf, r, fl);
  if (fl & HF_SAT) {
    if (is_nan(bf, r)) return 0;
    if ((r & 0x8000u) && (r & 0x7fffu)) return 0;
    uint32_t one = bf ? 0x3f80u : 0x3c00u;
    if (!(r & 0x8000u) && r > one) return one;
  }
  if (fl & HF_RELU) {
    if (is_nan(bf, r)) return CANON_NAN;
    if (r & 0x8000u) return 0;
  }
  return r;
}

/* ---------------------------------------------------------------- element operations */

static inline double in_val(bool bf, uint32_t h, unsigned fl) { return hval(bf, flush(bf, h, fl)); }

static inline uint32_t e_add(bool bf, uint32_t a, uint32_t b, uint32_t c, unsigned fl) {
  (void)c;
  return finish(bf, hround(bf, in_val(bf, a, fl) + in_val(bf, b, fl), 0), fl);
}
static inline uint32_t e_sub(bool bf, uint32_t a, uint32_t b, uint32_t c, unsigned fl) {
  (void)c;
  return finish(bf, hround(bf, in_val(bf, a, fl) - in_val(bf, b, fl), 0), fl);
}
static inline uint32_t e_mul(bool bf, uint32_t a, uint32_t b, uint32_t c, unsigned fl) {
  (void)c;
  return finish(bf, hround(bf, in_val(bf, a, fl) * in_val(bf, b, fl), 0), fl);
}
/* a * b is exact in double; s = p + c rounds, and e (two-sum) is what it lost, exactly. */
static inline uint32_t e_fma(bool bf, uint32_t a, uint32_t b, uint32_t c, unsigned fl) {
  double p = in_val(bf, a, fl) * in_val(bf, b, fl), z = in_val(bf, c, fl);
  double s = p + z;
  int tail = 0;
  if (isfinite(s) && s != 0) {
    double bb = s - p, err = (p - (s - bb)) + (z - bb);
    if (err != 0) tail = (err > 0) == (s > 0) ? 1 : -1;
  }
  return finish(bf, hround(bf, s, tail), fl);
}
static inline uint32_t e_neg(bool bf, uint32_t a, uint32_t b, uint32_t c, unsigned fl) {
  (void)b, (void)c;
  return flush(bf, a, fl) ^ 0x8000u;
}
static inline uint32_t e_abs(bool bf, uint32_t a, uint32_t b, uint32_t c, unsigned fl) {
  (void)b, (void)c;
  return flush(bf, a, fl) & 0x7fffu;
}
/* min/max give an operand's bits: a NaN operand gives the other (both NaN, or .NaN: the
 * canonical NaN), and -0 is below +0. */
static inline uint32_t minmax(bool bf, uint32_t a, uint32_t b, unsigned fl, bool max) {
  a = flush(bf, a, fl), b = flush(bf, b, fl);
  bool na = is_nan(bf, a), nb = is_nan(bf, b);
  if (na || nb) return (na && nb) || (fl & HF_NAN) ? CANON_NAN : na ? b : a;
  float x = hval(bf, a), y = hval(bf, b);
  if (x == y) { /* the same value, or +0 and -0: the sign decides */
    bool a_neg = (a & 0x8000u) != 0;
    return a == b || (max ? !a_neg : a_neg) ? a : b;
  }
  return (max ? x > y : x < y) ? a : b;
}
static inline uint32_t e_min(bool bf, uint32_t a, uint32_t b, uint32_t c, unsigned fl) {
  (void)c;
  return minmax(bf, a, b, fl, false);
}
static inline uint32_t e_max(bool bf, uint32_t a, uint32_t b, uint32_t c, unsigned fl) {
  (void)c;
  return minmax(bf, a, b, fl, true);
}
static inline uint32_t e_ex2(bool bf, uint32_t a, uint32_t b, uint32_t c, unsigned fl) {
  (void)b, (void)c;
  return flush(bf, hround(bf, exp2(in_val(bf, a, fl)), 0), fl);
}
static inline uint32_t e_tanh(bool bf, uint32_t a, uint32_t b, uint32_t c, unsigned fl) {
  (void)b, (void)c;
  return flush(bf, hround(bf, tanh(in_val(bf, a, fl)), 0), fl);
}

/* One handler per operation and type: BF the format, X2 packed. */
#define HALF_OP(name, sfx, BF, X2, elem)                                                                               \
  HANDLER(h_##name##_##sfx) {                                                                                          \
    uint64_t *d = px_slot(w, in->d);                                                                                   \
    const uint64_t *A = px_slot(w, in->a);                                                                             \
    const uint64_t *B = in->b != PX_NONE ? px_slot(w, in->b) : A, *C = in->c != PX_NONE ? px_slot(w, in->c) : A;       \
    unsigned fl = in->kind;                                                                                            \
    PX_LANES(m, {                                                                                                      \
      uint32_t a = (uint32_t)A[l], b = (uint32_t)B[l], c = (uint32_t)C[l];                                             \
      uint32_t r = elem(BF, a & 0xffffu, b & 0xffffu, c & 0xffffu, fl);                                                \
      if (X2) r |= elem(BF, a >> 16, b >> 16, c >> 16, fl) << 16;                                                      \
      d[l] = r;                                                                                                        \
    });                                                                                                                \
  }
#define HALF_OPS(name)                                                                                                 \
  HALF_OP(name, f16, false, false, e_##name)                                                                           \
  HALF_OP(name, f16x2, false, true, e_##name)                                                                          \
  HALF_OP(name, bf16, true, false, e_##name)                                                                           \
  HALF_OP(name, bf16x2, true, true, e_##name)                                                                          \
  static const px_fn h_##name[4] = {h_##name##_f16, h_##name##_f16x2, h_##name##_bf16, h_##name##_bf16x2};
HALF_OPS(add)
HALF_OPS(sub)
HALF_OPS(mul)
HALF_OPS(fma)
HALF_OPS(neg)
HALF_OPS(abs)
HALF_OPS(min)
HALF_OPS(max)
HALF_OPS(ex2)
HALF_OPS(tanh)

/* ---------------------------------------------------------------- comparisons */

static inline uint32_t bool_op(unsigned op, uint32_t t, uint32_t c) {
  switch (op) {
  case PTX_BOOL_AND: return t & c;
  case PTX_BOOL_OR: return t | c;
  case PTX_BOOL_XOR: return t ^ c;
  default: return t;
  }
}

/* The comparison of element `half` (0 lower, 1 upper) in lanes m, as a mask. */
static uint32_t hcompare(const struct px_warp *w, const struct px_ins *in, uint32_t m, bool bf, unsigned half) {
  const uint64_t *A = px_slot(w, in->a), *B = px_slot(w, in->b);
  unsigned cmp = in->kind, fl = in->ftz ? HF_FTZ : 0, sh = half * 16;
  uint32_t r = 0;
  PX_LANES(m, {
    float a = (float)in_val(bf, (uint32_t)(A[l] >> sh) & 0xffffu, fl);
    float b = (float)in_val(bf, (uint32_t)(B[l] >> sh) & 0xffffu, fl);
    r |= (uint32_t)px_cmp_float(cmp, a, b) << l;
  });
  return r;
}

static uint32_t pred_c(const struct px_warp *w, const struct px_ins *in) {
  return in->c == PX_NONE ? 0 : w->f->P[in->c] ^ (in->neg_c ? PX_FULL : 0);
}

/* setp: scalar p = t op c, q = !t op c; packed p = t0 op c, q = t1 op c. */
static void setp_half(struct px_warp *w, const struct px_ins *in, uint32_t m, bool bf, bool x2) {
  uint32_t *P = w->f->P, c = pred_c(w, in), op = in->c == PX_NONE ? PTX_BOOL_NONE : in->e;
  uint32_t t0 = hcompare(w, in, m, bf, 0), t1 = x2 ? hcompare(w, in, m, bf, 1) : ~t0;
  if (in->d != PX_NONE) P[in->d] = (P[in->d] & ~m) | (bool_op(op, t0, c) & m);
  if (in->pd2 != PX_NONE) P[in->pd2] = (P[in->pd2] & ~m) | (bool_op(op, t1, c) & m);
}
HANDLER(h_setp_f16) { setp_half(w, in, m, false, false); }
HANDLER(h_setp_f16x2) { setp_half(w, in, m, false, true); }
HANDLER(h_setp_bf16) { setp_half(w, in, m, true, false); }
HANDLER(h_setp_bf16x2) { setp_half(w, in, m, true, true); }
static const px_fn h_setp[4] = {h_setp_f16, h_setp_f16x2, h_setp_bf16, h_setp_bf16x2};

/* set: in->imm the value of a true element (a packed source gives one per 16-bit half). */
static void set_half(struct px_warp *w, const struct px_ins *in, uint32_t m, bool bf, bool x2) {
  uint32_t c = pred_c(w, in), op = in->c == PX_NONE ? PTX_BOOL_NONE : in->e;
  uint32_t t0 = bool_op(op, hcompare(w, in, m, bf, 0), c), t1 = x2 ? bool_op(op, hcompare(w, in, m, bf, 1), c) : 0;
  uint64_t *d = px_slot(w, in->d), yes = (uint64_t)in->imm;
  PX_LANES(m, d[l] = ((t0 >> l & 1) ? yes : 0) | ((t1 >> l & 1) ? yes << 16 : 0));
}
HANDLER(h_set_f16) { set_half(w, in, m, false, false); }
HANDLER(h_set_f16x2) { set_half(w, in, m, false, true); }
HANDLER(h_set_bf16) { set_half(w, in, m, true, false); }
HANDLER(h_set_bf16x2) { set_half(w, in, m, true, true); }
static const px_fn h_set[4] = {h_set_f16, h_set_f16x2, h_set_bf16, h_set_bf16x2};

/* ---------------------------------------------------------------- fp8 conversions */

/*
 * x rounded to nearest even to an 8-bit float with .satfinite: e4m3 (4 exponent bits, bias 7,
 * no infinity, largest 448, NaN 0x7f) or e5m2 (f16's upper byte: largest 57344, NaN 0x7f).
 * Past the largest finite value, infinities included, that value; NaN gives 0x7f.
 */
static uint32_t to_fp8(bool e4m3, double x, bool relu) {
  const int P = e4m3 ? 4 : 3, emin = e4m3 ? -6 : -14;
  const uint32_t max = e4m3 ? 0x7eu : 0x7bu;
  if (isnan(x)) return 0x7f;
  uint32_t sign = signbit(x) ? 0x80u : 0;
  if (relu && sign) return 0;
  double a = fabs(x);
  if (a == 0) return sign;
  int e = ilogb(a) < emin ? emin : ilogb(a);
  if (e > 16) return sign | max;      /* 2^17 and up: past both formats' range */
  double q = ldexp(1.0, e - (P - 1)); /* the spacing at a */
  double n = nearbyint(a / q);        /* the host rounds to nearest even; a / q is exact */
  uint32_t keep = (uint32_t)n, bits;
  if (keep >> P) keep >>= 1, e++;
  if (ilogb(a) < emin && keep < (1u << (P - 1))) bits = keep; /* a subnormal */
  else bits = (uint32_t)(e - emin + 1) << (P - 1) | (keep & ((1u << (P - 1)) - 1));
  return sign | (bits > max ? max : bits);
}

/* An 8-bit float's value as f16 bits (exact: every e4m3 and e5m2 value is an f16). */
static uint32_t fp8_to_f16(bool e4m3, uint32_t v, bool relu) {
  uint32_t sign = (v & 0x80u) << 8, mag = v & 0x7fu, h;
  if (!e4m3) h = sign | mag << 8;
  else if (mag == 0x7f) h = 0x7fff;                                        /* NaN */
  else if (mag >> 3) h = sign | (((mag >> 3) + 8) << 10) | (mag & 7) << 7; /* bias 7 to bias 15 */
  else h = sign | hround(false, ldexp((double)(mag & 7), -9), 0);          /* a subnormal: m * 2^-9 */
  return relu && (h & 0x8000u) && (h & 0x7fffu) <= 0x7c00u ? 0 : h;
}

/* cvt.rn.satfinite[.relu].{e4m3x2,e5m2x2}.f32 d, a, b: a in the upper byte. kind: bit 0 e4m3, bit 1 relu. */
HANDLER(h_cvt_f8_f32) {
  uint64_t *d = px_slot(w, in->d);
  const uint64_t *A = px_slot(w, in->a), *B = px_slot(w, in->b);
  bool e4m3 = in->kind & 1, relu = in->kind & 2;
  PX_LANES(m, d[l] = to_fp8(e4m3, px_f32(A[l]), relu) << 8 | to_fp8(e4m3, px_f32(B[l]), relu));
}
/* cvt.rn.satfinite[.relu].{e4m3x2,e5m2x2}.f16x2 d, a: a's upper half in the upper byte. */
HANDLER(h_cvt_f8_f16x2) {
  uint64_t *d = px_slot(w, in->d);
  const uint64_t *A = px_slot(w, in->a);
  bool e4m3 = in->kind & 1, relu = in->kind & 2;
  PX_LANES(m, {
    uint32_t a = (uint32_t)A[l];
    d[l] = to_fp8(e4m3, hval(false, a >> 16), relu) << 8 | to_fp8(e4m3, hval(false, a & 0xffffu), relu);
  });
}
/* cvt.rn[.relu].f16x2.{e4m3x2,e5m2x2} d, a: each byte's value, exact. */
HANDLER(h_cvt_f16x2_f8) {
  uint64_t *d = px_slot(w, in->d);
  const uint64_t *A = px_slot(w, in->a);
  bool e4m3 = in->kind & 1, relu = in->kind & 2;
  PX_LANES(m, {
    uint32_t a = (uint32_t)A[l];
    d[l] = fp8_to_f16(e4m3, (a >> 8) & 0xffu, relu) << 16 | fp8_to_f16(e4m3, a & 0xffu, relu);
  });
}

static bool is_fp8(enum ptx_type t) { return t == PTX_T_E4M3X2 || t == PTX_T_E5M2X2; }

static int lower_cvt_fp8(struct px_lower *L, const struct ptx_instr *pi, struct px_ins *in) {
  enum ptx_type dt = (enum ptx_type)pi->type, st = (enum ptx_type)pi->type2;
  const char *dn = ptx_type_name(dt), *sn = ptx_type_name(st);
  bool to = is_fp8(dt);
  if (pi->round != PTX_RND_RN) return px_refuse(L, "cvt.%s.%s needs .rn", dn, sn);
  if (pi->flags & (PTX_F_FTZ | PTX_F_SAT)) return px_refuse(L, "cvt.%s.%s takes no .ftz or .sat", dn, sn);
  if (to && !(pi->flags & PTX_F_SATFINITE)) return px_refuse(L, "cvt.%s.%s needs .satfinite", dn, sn);
  unsigned n = to && st == PTX_T_F32 ? 3 : 2;
  if ((to && st != PTX_T_F32 && st != PTX_T_F16X2) || (!to && dt != PTX_T_F16X2))
    return px_unsupported(L, "cvt.%s.%s is not supported yet", dn, sn);
  if (pi->num_operands != n) return px_refuse(L, "cvt.%s.%s takes %u operands", dn, sn, n);
  in->d = px_value(L, &pi->opnd[0], to ? PTX_T_B16 : PTX_T_B32);
  in->a = px_value(L, &pi->opnd[1], to ? st : PTX_T_B16);
  if (n == 3) in->b = px_value(L, &pi->opnd[2], PTX_T_F32);
  in->kind = (uint8_t)(((to ? dt : st) == PTX_T_E4M3X2 ? 1 : 0) | ((pi->flags & PTX_F_RELU) ? 2 : 0));
  in->fn = !to ? h_cvt_f16x2_f8 : n == 3 ? h_cvt_f8_f32 : h_cvt_f8_f16x2;
  return 1;
}

/* ---------------------------------------------------------------- lowering */

static bool is_half(enum ptx_type t) {
  return t == PTX_T_F16 || t == PTX_T_F16X2 || t == PTX_T_BF16 || t == PTX_T_BF16X2;
}

/* The handler tables' index: f16, f16x2, bf16, bf16x2. */
static unsigned index_of(enum ptx_type t) {
  return (t == PTX_T_BF16 || t == PTX_T_BF16X2 ? 2u : 0u) + (t == PTX_T_F16X2 || t == PTX_T_BF16X2 ? 1u : 0u);
}

/* The modifiers an instruction may have beyond `allowed` (PTX_F_* bits), refused by name. */
static int check_flags(struct px_lower *L, const struct ptx_instr *pi, unsigned allowed, bool rounds) {
  static const struct {
    unsigned flag;
    const char *name;
  } names[] = {{PTX_F_FTZ, "ftz"}, {PTX_F_SAT, "sat"}, {PTX_F_RELU, "relu"},    {PTX_F_NAN, "NaN"},
               {PTX_F_ABS, "abs"}, {PTX_F_CC, "cc"},   {PTX_F_APPROX, "approx"}};
  const char *op = ptx_op_name((enum ptx_op)pi->op), *type = ptx_type_name((enum ptx_type)pi->type);
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    if ((pi->flags & names[i].flag) && !(allowed & names[i].flag))
      return px_refuse(L, "%s.%s takes no .%s", op, type, names[i].name);
  if (pi->round != PTX_RND_NONE && (!rounds || pi->round != PTX_RND_RN))
    return px_refuse(L, "%s.%s rounds to nearest only (.rn)", op, type);
  if ((pi->flags & PTX_F_SAT) && (pi->flags & PTX_F_RELU)) return px_refuse(L, "%s takes .sat or .relu, not both", op);
  return 1;
}

static unsigned half_flags(const struct ptx_instr *pi) {
  return ((pi->flags & PTX_F_FTZ) ? HF_FTZ : 0u) | ((pi->flags & PTX_F_SAT) ? HF_SAT : 0u) |
         ((pi->flags & PTX_F_RELU) ? HF_RELU : 0u) | ((pi->flags & PTX_F_NAN) ? HF_NAN : 0u);
}

/* d, a[, b[, c]] as values of type t. */
static int operands(struct px_lower *L, const struct ptx_instr *pi, struct px_ins *in, unsigned n, enum ptx_type t) {
  if (pi->num_operands != n) return px_refuse(L, "takes %u operands, not %u", n, pi->num_operands);
  if (pi->opnd[0].kind != PTX_OPND_REG) return px_refuse(L, "the destination is not a register");
  uint16_t *slots[] = {&in->d, &in->a, &in->b, &in->c};
  for (unsigned i = 0; i < n; i++) {
    *slots[i] = px_value(L, &pi->opnd[i], t);
    if (*slots[i] == PX_NONE) return -1;
  }
  in->size = (uint8_t)ptx_type_size(t);
  return 1;
}

static int lower_arith(struct px_lower *L, const struct ptx_instr *pi, struct px_ins *in) {
  enum ptx_type t = (enum ptx_type)pi->type;
  bool bf = t == PTX_T_BF16 || t == PTX_T_BF16X2;
  unsigned f16_only = bf ? 0u : PTX_F_FTZ | PTX_F_SAT, n = 3, allowed = 0;
  const px_fn *table = NULL;
  bool rounds = false;
  switch ((enum ptx_op)pi->op) {
  case PTX_OP_ADD: table = h_add, allowed = f16_only, rounds = true; break;
  case PTX_OP_SUB: table = h_sub, allowed = f16_only, rounds = true; break;
  case PTX_OP_MUL: table = h_mul, allowed = f16_only, rounds = true; break;
  case PTX_OP_FMA: table = h_fma, n = 4, allowed = f16_only | PTX_F_RELU, rounds = true; break;
  case PTX_OP_NEG: table = h_neg, n = 2, allowed = bf ? 0u : PTX_F_FTZ; break;
  case PTX_OP_ABS: table = h_abs, n = 2, allowed = bf ? 0u : PTX_F_FTZ; break;
  case PTX_OP_MIN: table = h_min, allowed = (bf ? 0u : PTX_F_FTZ) | PTX_F_NAN; break;
  case PTX_OP_MAX: table = h_max, allowed = (bf ? 0u : PTX_F_FTZ) | PTX_F_NAN; break;
  case PTX_OP_EX2: table = h_ex2, n = 2, allowed = PTX_F_APPROX | PTX_F_FTZ; break;
  case PTX_OP_TANH: table = h_tanh, n = 2, allowed = PTX_F_APPROX; break;
  default: return 0;
  }
  if ((pi->op == PTX_OP_EX2 || pi->op == PTX_OP_TANH) && !(pi->flags & PTX_F_APPROX))
    return px_refuse(L, "%s.%s needs .approx", ptx_op_name((enum ptx_op)pi->op), ptx_type_name(t));
  if (check_flags(L, pi, allowed, rounds) < 0) return -1;
  if (operands(L, pi, in, n, t) < 0) return -1;
  in->kind = (uint8_t)half_flags(pi);
  in->fn = table[index_of(t)];
  return 1;
}

/* The bits a true element of set writes for destination type dt (source packed or not). */
static bool set_true(enum ptx_type dt, bool x2, uint64_t *yes) {
  switch (dt) {
  case PTX_T_F16:
  case PTX_T_F16X2: *yes = 0x3c00; return x2 == (dt == PTX_T_F16X2);
  case PTX_T_BF16:
  case PTX_T_BF16X2: *yes = 0x3f80; return x2 == (dt == PTX_T_BF16X2);
  case PTX_T_U16:
  case PTX_T_S16: *yes = 0xffff; return !x2;
  case PTX_T_U32:
  case PTX_T_S32: *yes = x2 ? 0xffff : 0xffffffffu; return true;
  default: return false;
  }
}

static int lower_compare(struct px_lower *L, const struct ptx_instr *pi, struct px_ins *in) {
  bool setp = pi->op == PTX_OP_SETP;
  enum ptx_type st = setp ? (enum ptx_type)pi->type : (enum ptx_type)pi->type2;
  bool x2 = st == PTX_T_F16X2 || st == PTX_T_BF16X2, bf = st == PTX_T_BF16 || st == PTX_T_BF16X2;
  unsigned n = pi->num_operands;
  if (n != 3 && n != 4) return px_refuse(L, "takes 3 or 4 operands");
  if (pi->cmp >= PTX_CMP_LO && pi->cmp <= PTX_CMP_HS)
    return px_refuse(L, "%s.%s: .lo, .ls, .hi and .hs compare integers", ptx_op_name((enum ptx_op)pi->op),
                     ptx_type_name(st));
  if (bf && (pi->flags & PTX_F_FTZ))
    return px_refuse(L, "%s with .bf16 takes no .ftz", ptx_op_name((enum ptx_op)pi->op));
  in->a = px_value(L, &pi->opnd[1], st);
  in->b = px_value(L, &pi->opnd[2], st);
  if (n == 4) {
    in->c = px_pred(L, &pi->opnd[3], &in->neg_c);
    in->e = pi->boolop;
  }
  in->kind = pi->cmp;
  in->ftz = (pi->flags & PTX_F_FTZ) ? 1 : 0;
  if (setp) {
    in->d = pi->opnd[0].kind == PTX_OPND_SINK ? PX_NONE : px_pred(L, &pi->opnd[0], NULL);
    if (pi->dest2 >= 0)
      in->pd2 = px_pred(L, &(struct ptx_operand){.kind = PTX_OPND_REG, .index = (uint32_t)pi->dest2}, NULL);
    in->fn = h_setp[index_of(st)];
    return 1;
  }
  enum ptx_type dt = (enum ptx_type)pi->type;
  uint64_t yes = 0;
  if (!set_true(dt, x2, &yes))
    return px_refuse(L, "set.%s.%s: no such destination type", ptx_type_name(dt), ptx_type_name(st));
  if (pi->opnd[0].kind != PTX_OPND_REG) return px_refuse(L, "the destination is not a register");
  in->d = px_value(L, &pi->opnd[0], dt);
  in->imm = (int64_t)yes;
  in->fn = h_set[index_of(st)];
  return 1;
}

int px_lower_half(struct px_lower *L, const struct ptx_instr *pi, struct px_ins *in) {
  switch ((enum ptx_op)pi->op) {
  case PTX_OP_SETP: return is_half((enum ptx_type)pi->type) ? lower_compare(L, pi, in) : 0;
  case PTX_OP_SET:
    if (is_half((enum ptx_type)pi->type2)) return lower_compare(L, pi, in);
    if (is_half((enum ptx_type)pi->type)) /* 1.0 in the half format: not what set of f32 writes */
      return px_unsupported(L, "set.%s.%s is not supported yet", ptx_type_name((enum ptx_type)pi->type),
                            ptx_type_name((enum ptx_type)pi->type2));
    return 0;
  case PTX_OP_CVT:
    return is_fp8((enum ptx_type)pi->type) || is_fp8((enum ptx_type)pi->type2) ? lower_cvt_fp8(L, pi, in) : 0;
  default: return is_half((enum ptx_type)pi->type) ? lower_arith(L, pi, in) : 0;
  }
}
