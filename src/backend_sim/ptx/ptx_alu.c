/*
 * Arithmetic, logic, comparisons, conversions and moves. Each handler runs one instruction for
 * the lanes of a mask; the lowering picks the handler for the opcode, type and modifiers once, so
 * the handlers themselves never look at a type. IEEE forms are exact (the host's float and double
 * are the GPU's; fused forms use fma); directed roundings switch the host's rounding mode around
 * the lanes; approximate forms use the host's correctly rounded functions, which lie within the
 * ISA's stated error.
 */
#include <fenv.h>
#include <math.h>
#include <tgmath.h>
#include <stdlib.h>
#include <time.h>

#include "ptx_internal.h"

#define HANDLER(name) static void name(struct px_warp *w, const struct px_ins *in, uint32_t m)
#define D_A_B                                                                                                          \
  uint64_t *d = px_slot(w, in->d);                                                                                     \
  const uint64_t *A = px_slot(w, in->a), *B = px_slot(w, in->b)
#define D_A_B_C                                                                                                        \
  D_A_B;                                                                                                               \
  const uint64_t *C = px_slot(w, in->c)

/* ---------------------------------------------------------------- integer */

/* Wrapping operations: the bits above the width do not matter (reads truncate). */
#define WRAP(name, expr)                                                                                               \
  HANDLER(name) {                                                                                                      \
    D_A_B;                                                                                                             \
    PX_LANES(m, {                                                                                                      \
      uint64_t a = A[l], b = B[l];                                                                                     \
      d[l] = (expr);                                                                                                   \
    });                                                                                                                \
  }
WRAP(i_add, a + b)
WRAP(i_sub, a - b)
WRAP(i_mul_lo, a *b)
WRAP(i_and, a &b)
WRAP(i_or, a | b)
WRAP(i_xor, a ^ b)
HANDLER(i_not) {
  uint64_t *d = px_slot(w, in->d);
  const uint64_t *A = px_slot(w, in->a);
  PX_LANES(m, d[l] = ~A[l]);
}
HANDLER(i_neg) {
  uint64_t *d = px_slot(w, in->d);
  const uint64_t *A = px_slot(w, in->a);
  PX_LANES(m, d[l] = 0 - A[l]);
}
HANDLER(i_mad_lo) {
  D_A_B_C;
  PX_LANES(m, d[l] = A[l] * B[l] + C[l]);
}

/* Width-aware operations, one function per type. */
#define TYPED(TT, SGN, sfx, body_name, expr)                                                                           \
  HANDLER(body_name##_##sfx) {                                                                                         \
    typedef TT T;                                                                                                      \
    const bool sgn = SGN;                                                                                              \
    D_A_B;                                                                                                             \
    PX_LANES(m, {                                                                                                      \
      T a = (T)A[l], b = (T)B[l];                                                                                      \
      d[l] = (uint64_t)(T)(expr);                                                                                      \
    });                                                                                                                \
    (void)sgn;                                                                                                         \
  }
/* A table, laid out by hand. */
/* clang-format off */
#define EACH_INT(X, name, expr)                                                                    \
  X(int16_t, 1, s16, name, expr) X(uint16_t, 0, u16, name, expr) X(int32_t, 1, s32, name, expr)    \
  X(uint32_t, 0, u32, name, expr) X(int64_t, 1, s64, name, expr) X(uint64_t, 0, u64, name, expr)
/* clang-format on */
EACH_INT(TYPED, i_min, a < b ? a : b)
EACH_INT(TYPED, i_max, a > b ? a : b)
/* Division by zero gives all ones as the hardware's sequence does; never a host trap. */
EACH_INT(TYPED, i_div, b == 0 ? (T) ~(T)0 : (sgn && b == (T) ~(T)0) ? (T)(0 - (uint64_t)a) : a / b)
EACH_INT(TYPED, i_rem, b == 0 ? a : (sgn && b == (T) ~(T)0) ? 0 : a % b)
EACH_INT(TYPED, i_shr,
         (T)((uint64_t)b >= sizeof(T) * 8 ? (sgn && (uint64_t)a >> (sizeof(T) * 8 - 1) ? (T) ~(T)0 : 0) : a >> b))
#define ABS_T(T, sfx)                                                                                                  \
  HANDLER(i_abs_##sfx) {                                                                                               \
    uint64_t *d = px_slot(w, in->d);                                                                                   \
    const uint64_t *A = px_slot(w, in->a);                                                                             \
    PX_LANES(m, {                                                                                                      \
      T a = (T)A[l];                                                                                                   \
      d[l] = (uint64_t)(T)(a < 0 ? (T)(0 - (uint64_t)a) : a);                                                          \
    });                                                                                                                \
  }
ABS_T(int16_t, s16)
ABS_T(int32_t, s32)
ABS_T(int64_t, s64)

HANDLER(i_shl) {
  unsigned bits = in->size * 8u;
  D_A_B;
  PX_LANES(m, {
    uint64_t b = (uint32_t)B[l];
    d[l] = b >= bits ? 0 : A[l] << b;
  });
}

#define HI_T(T, W, sfx)                                                                                                \
  HANDLER(i_mul_hi_##sfx) {                                                                                            \
    D_A_B;                                                                                                             \
    PX_LANES(m, { d[l] = (uint64_t)(T)(((W)(T)A[l] * (W)(T)B[l]) >> (sizeof(T) * 8)); });                              \
  }                                                                                                                    \
  HANDLER(i_mad_hi_##sfx) {                                                                                            \
    D_A_B_C;                                                                                                           \
    PX_LANES(m, { d[l] = (uint64_t)(T)((T)(((W)(T)A[l] * (W)(T)B[l]) >> (sizeof(T) * 8)) + (T)C[l]); });               \
  }                                                                                                                    \
  HANDLER(i_mul_wide_##sfx) {                                                                                          \
    D_A_B;                                                                                                             \
    PX_LANES(m, { d[l] = (uint64_t)((W)(T)A[l] * (W)(T)B[l]); });                                                      \
  }                                                                                                                    \
  HANDLER(i_mad_wide_##sfx) {                                                                                          \
    D_A_B_C;                                                                                                           \
    PX_LANES(m, { d[l] = (uint64_t)((W)(T)A[l] * (W)(T)B[l]) + C[l]; });                                               \
  }
HI_T(int16_t, int32_t, s16)
HI_T(uint16_t, uint32_t, u16)
HI_T(int32_t, int64_t, s32)
HI_T(uint32_t, uint64_t, u32)
#if defined(__SIZEOF_INT128__)
__extension__ typedef __int128 px_i128;
__extension__ typedef unsigned __int128 px_u128;
HANDLER(i_mul_hi_s64) {
  D_A_B;
  PX_LANES(m, d[l] = (uint64_t)(((px_i128)(int64_t)A[l] * (int64_t)B[l]) >> 64));
}
HANDLER(i_mul_hi_u64) {
  D_A_B;
  PX_LANES(m, d[l] = (uint64_t)(((px_u128)A[l] * B[l]) >> 64));
}
HANDLER(i_mad_hi_s64) {
  D_A_B_C;
  PX_LANES(m, d[l] = (uint64_t)(((px_i128)(int64_t)A[l] * (int64_t)B[l]) >> 64) + C[l]);
}
HANDLER(i_mad_hi_u64) {
  D_A_B_C;
  PX_LANES(m, d[l] = (uint64_t)(((px_u128)A[l] * B[l]) >> 64) + C[l]);
}
#endif

/* mul24/mad24: the low 24 bits of each operand, sign- or zero-extended; .hi takes bits 16..47. */
HANDLER(i_mul24) {
  bool sgn = in->kind & 1, hi = in->kind & 2, mad = in->kind & 4;
  uint64_t *d = px_slot(w, in->d);
  const uint64_t *A = px_slot(w, in->a), *B = px_slot(w, in->b), *C = mad ? px_slot(w, in->c) : NULL;
  PX_LANES(m, {
    int64_t a = sgn ? ((int64_t)(A[l] << 40) >> 40) : (int64_t)(A[l] & 0xffffff);
    int64_t b = sgn ? ((int64_t)(B[l] << 40) >> 40) : (int64_t)(B[l] & 0xffffff);
    uint64_t p = (uint64_t)(a * b);
    uint32_t r = hi ? (uint32_t)(p >> 16) : (uint32_t)p;
    d[l] = (uint32_t)(r + (mad ? (uint32_t)C[l] : 0));
  });
}

HANDLER(i_sad) {
  bool sgn = in->kind & 1;
  unsigned bits = in->size * 8u;
  D_A_B_C;
  PX_LANES(m, {
    int64_t a = sgn ? ((int64_t)(A[l] << (64 - bits)) >> (64 - bits)) : (int64_t)(A[l] & (~0ull >> (64 - bits)));
    int64_t b = sgn ? ((int64_t)(B[l] << (64 - bits)) >> (64 - bits)) : (int64_t)(B[l] & (~0ull >> (64 - bits)));
    d[l] = (uint64_t)(a > b ? a - b : b - a) + C[l];
  });
}

/* add.sat.s32 / sub.sat.s32 */
HANDLER(i_add_sat) {
  bool sub = in->kind;
  D_A_B;
  PX_LANES(m, {
    int64_t r = (int64_t)(int32_t)A[l] + (sub ? -(int64_t)(int32_t)B[l] : (int64_t)(int32_t)B[l]);
    d[l] = (uint64_t)(r > INT32_MAX ? INT32_MAX : r < INT32_MIN ? INT32_MIN : r);
  });
}

static uint64_t product(uint64_t a, uint64_t b, unsigned bits, bool hi, uint64_t mask) {
  if (bits == 32) return hi ? (a * b) >> 32 : (a * b) & mask;
#if defined(__SIZEOF_INT128__)
  return hi ? (uint64_t)(((px_u128)a * b) >> 64) : a * b;
#else
  return a * b;
#endif
}

/* Carry chains: add.cc/sub.cc set the carry, addc/subc use it (kind: bit 0 sub, bit 1 uses carry, bit 2 sets it). */
HANDLER(i_carry) {
  unsigned bits = in->size * 8u;
  bool sub = in->kind & 1, use = in->kind & 2, set = in->kind & 4, mad = in->kind & 8, hi = in->kind & 16;
  uint64_t *d = px_slot(w, in->d);
  const uint64_t *A = px_slot(w, in->a), *B = px_slot(w, in->b), *C = mad ? px_slot(w, in->c) : NULL;
  uint64_t mask = bits == 64 ? ~0ull : (1ull << bits) - 1;
  uint32_t cc = w->cc;
  PX_LANES(m, {
    uint64_t a = A[l] & mask, b = B[l] & mask, cin = use ? (cc >> l & 1) : 0, carry = 0, r;
    if (mad) { /* madc: a*b (lo or hi) + c + carry */
      a = product(a, b, bits, hi, mask);
      b = C[l] & mask;
    }
    if (sub) {
      r = (a - b - cin) & mask;
      carry = (b + cin > a) || (cin && b == mask) ? 1 : 0; /* a borrow */
    } else {
      r = (a + b + cin) & mask;
      carry = bits == 64 ? (r < a || (cin && r == a)) : ((a + b + cin) >> bits) & 1;
    }
    d[l] = r;
    if (set) cc = (cc & ~(1u << l)) | (uint32_t)carry << l;
  });
  w->cc = cc;
}

/* ---------------------------------------------------------------- bits */

HANDLER(b_popc) {
  uint64_t *d = px_slot(w, in->d);
  const uint64_t *A = px_slot(w, in->a);
  if (in->size == 8) PX_LANES(m, d[l] = (uint64_t)__builtin_popcountll(A[l]));
  else PX_LANES(m, d[l] = (uint64_t)__builtin_popcount((uint32_t)A[l]));
}
HANDLER(b_clz) {
  uint64_t *d = px_slot(w, in->d);
  const uint64_t *A = px_slot(w, in->a);
  if (in->size == 8) PX_LANES(m, d[l] = A[l] ? (uint64_t)__builtin_clzll(A[l]) : 64);
  else PX_LANES(m, d[l] = (uint32_t)A[l] ? (uint64_t)__builtin_clz((uint32_t)A[l]) : 32);
}
HANDLER(b_brev) {
  uint64_t *d = px_slot(w, in->d);
  const uint64_t *A = px_slot(w, in->a);
  unsigned bits = in->size * 8u;
  PX_LANES(m, {
    uint64_t v = A[l], r = 0;
    for (unsigned i = 0; i < bits; i++) r |= ((v >> i) & 1) << (bits - 1 - i);
    d[l] = r;
  });
}
/* bfind: the position of the most significant non-sign bit, or all ones. */
HANDLER(b_bfind) {
  uint64_t *d = px_slot(w, in->d);
  const uint64_t *A = px_slot(w, in->a);
  unsigned bits = in->size * 8u;
  bool sgn = in->kind & 1, shiftamt = in->kind & 2;
  PX_LANES(m, {
    uint64_t v = bits == 64 ? A[l] : (uint32_t)A[l];
    if (sgn && (v >> (bits - 1) & 1)) v = ~v & (bits == 64 ? ~0ull : 0xffffffffull);
    uint32_t r = 0xffffffffu;
    if (v) r = (uint32_t)(63 - __builtin_clzll(v));
    if (shiftamt && r != 0xffffffffu) r = bits - 1 - r;
    d[l] = r;
  });
}
HANDLER(b_bfe) {
  uint64_t *d = px_slot(w, in->d);
  const uint64_t *A = px_slot(w, in->a), *B = px_slot(w, in->b), *C = px_slot(w, in->c);
  unsigned bits = in->size * 8u;
  bool sgn = in->kind & 1;
  PX_LANES(m, {
    unsigned pos = (uint8_t)B[l], len = (uint8_t)C[l];
    uint64_t a = bits == 64 ? A[l] : (uint32_t)A[l];
    unsigned msb = pos + len - 1 < bits - 1 ? pos + len - 1 : bits - 1;
    bool sbit = sgn && len > 0 && (a >> msb & 1);
    uint64_t r = 0;
    for (unsigned i = 0; i < bits; i++) {
      uint64_t bit = i < len && pos + i < bits ? (a >> (pos + i) & 1) : (uint64_t)sbit;
      r |= bit << i;
    }
    if (len == 0) r = 0;
    d[l] = r;
  });
}
HANDLER(b_bfi) {
  uint64_t *d = px_slot(w, in->d);
  const uint64_t *A = px_slot(w, in->a), *B = px_slot(w, in->b), *C = px_slot(w, in->c), *E = px_slot(w, in->e);
  unsigned bits = in->size * 8u;
  PX_LANES(m, {
    unsigned pos = (uint8_t)C[l], len = (uint8_t)E[l];
    uint64_t r = B[l];
    for (unsigned i = 0; i < len && pos + i < bits; i++)
      r = (r & ~(1ull << (pos + i))) | ((A[l] >> i & 1) << (pos + i));
    d[l] = r;
  });
}
/* A byte (i < 4) or half-word (i < 2) lane of v, sign- or zero-extended. */
static int32_t dp_part(uint32_t v, unsigned bits, unsigned i, bool sgn) {
  uint32_t part = (v >> (i * bits)) & ((1u << bits) - 1u);
  return sgn && (part >> (bits - 1)) ? (int32_t)(part | ~((1u << bits) - 1u)) : (int32_t)part;
}
/*
 * dp4a: c plus the four products of a's and b's bytes; dp2a: c plus a's two half-words times
 * b's bytes 0-1 (.lo) or 2-3 (.hi). kind: 1 a signed, 2 b signed, 4 dp2a, 8 .hi. The sum wraps
 * in 32 bits, as the PTX ISA's int arithmetic does.
 */
HANDLER(b_dot) {
  D_A_B_C;
  bool sa = in->kind & 1, sb = in->kind & 2, two = in->kind & 4;
  unsigned first = (in->kind & 8) ? 2u : 0u;
  PX_LANES(m, {
    uint32_t a = (uint32_t)A[l], b = (uint32_t)B[l], r = (uint32_t)C[l];
    if (two) {
      for (unsigned i = 0; i < 2; i++) r += (uint32_t)(dp_part(a, 16, i, sa) * dp_part(b, 8, first + i, sb));
    } else {
      for (unsigned i = 0; i < 4; i++) r += (uint32_t)(dp_part(a, 8, i, sa) * dp_part(b, 8, i, sb));
    }
    d[l] = r;
  });
}
HANDLER(b_prmt) {
  D_A_B_C;
  unsigned mode = in->kind;
  PX_LANES(m, {
    uint64_t x = (uint64_t)(uint32_t)A[l] | (uint64_t)(uint32_t)B[l] << 32;
    uint32_t c = (uint32_t)C[l], r = 0;
    unsigned sel[4];
    switch (mode) {
    case PTX_PRMT_F4E:
      for (int i = 0; i < 4; i++) sel[i] = ((c & 3) + (unsigned)i) & 7;
      break;
    case PTX_PRMT_B4E:
      for (int i = 0; i < 4; i++) sel[i] = ((c & 3) - (unsigned)i) & 7;
      break;
    case PTX_PRMT_RC8:
      for (int i = 0; i < 4; i++) sel[i] = c & 3;
      break;
    case PTX_PRMT_ECL:
      for (int i = 0; i < 4; i++) sel[i] = (unsigned)i >= (c & 3) ? (unsigned)i : (c & 3);
      break;
    case PTX_PRMT_ECR:
      for (int i = 0; i < 4; i++) sel[i] = (unsigned)i <= (c & 3) ? (unsigned)i : (c & 3);
      break;
    case PTX_PRMT_RC16:
      for (int i = 0; i < 4; i++) sel[i] = ((c & 1) << 1) + (unsigned)(i & 1);
      break;
    default:
      for (int i = 0; i < 4; i++) sel[i] = (c >> (4 * i)) & 15;
      break;
    }
    for (int i = 0; i < 4; i++) {
      unsigned s = sel[i];
      uint32_t byte = (uint32_t)(x >> (8 * (s & 7))) & 0xff;
      if (mode == PTX_MODE_NONE && (s & 8)) byte = (byte & 0x80) ? 0xff : 0;
      r |= byte << (8 * i);
    }
    d[l] = r;
  });
}
HANDLER(b_lop3) {
  D_A_B_C;
  uint32_t lut = (uint32_t)in->imm;
  PX_LANES(m, {
    uint32_t a = (uint32_t)A[l], b = (uint32_t)B[l], c = (uint32_t)C[l], r = 0;
    if (lut & 0x01) r |= ~a & ~b & ~c;
    if (lut & 0x02) r |= ~a & ~b & c;
    if (lut & 0x04) r |= ~a & b & ~c;
    if (lut & 0x08) r |= ~a & b & c;
    if (lut & 0x10) r |= a & ~b & ~c;
    if (lut & 0x20) r |= a & ~b & c;
    if (lut & 0x40) r |= a & b & ~c;
    if (lut & 0x80) r |= a & b & c;
    d[l] = r;
  });
}
/* shf.l/r.wrap/clamp.b32: a funnel shift of b:a. kind bit 0: right, bit 1: clamp. */
HANDLER(b_shf) {
  D_A_B_C;
  bool right = in->kind & 1, clamp = in->kind & 2;
  PX_LANES(m, {
    uint64_t x = (uint64_t)(uint32_t)B[l] << 32 | (uint32_t)A[l];
    uint32_t n = (uint32_t)C[l];
    n = clamp ? (n > 32 ? 32 : n) : (n & 31);
    d[l] = right ? (uint32_t)(x >> n) : (uint32_t)((x << n) >> 32);
  });
}
HANDLER(i_cnot) {
  uint64_t *d = px_slot(w, in->d);
  const uint64_t *A = px_slot(w, in->a);
  uint64_t mask = in->size == 8 ? ~0ull : (1ull << (in->size * 8u)) - 1;
  PX_LANES(m, d[l] = (A[l] & mask) == 0);
}

/* ---------------------------------------------------------------- predicates */

HANDLER(p_logic) {
  uint32_t *P = w->f->P;
  uint32_t a = in->a == PX_NONE ? (in->imm ? PX_FULL : 0) : P[in->a] ^ (in->neg_a ? PX_FULL : 0);
  uint32_t b = in->b != PX_NONE ? P[in->b] ^ (in->neg_b ? PX_FULL : 0) : 0;
  uint32_t r;
  switch (in->kind) {
  case PTX_OP_AND: r = a & b; break;
  case PTX_OP_OR: r = a | b; break;
  case PTX_OP_XOR: r = a ^ b; break;
  case PTX_OP_NOT: r = ~a; break;
  default: r = a; break; /* mov */
  }
  P[in->d] = (P[in->d] & ~m) | (r & m);
}
/* A predicate from an integer (mov/cvt into a .pred is not PTX, but `setp.ne` is what nvcc emits). */

/* ---------------------------------------------------------------- floats */

static inline float ftz32(float x) { return fpclassify(x) == FP_SUBNORMAL ? copysignf(0.0f, x) : x; }
static inline double ftz64(double x) { return fpclassify(x) == FP_SUBNORMAL ? copysign(0.0, x) : x; }
static inline float sat32(float x) { return isnan(x) ? 0.0f : x < 0.0f ? 0.0f : x > 1.0f ? 1.0f : x; }
static inline double sat64(double x) { return isnan(x) ? 0.0 : x < 0.0 ? 0.0 : x > 1.0 ? 1.0 : x; }

enum { F_FTZ = 1, F_SAT = 2, F_RELU = 4, F_SATFINITE = 8 };

static int host_round(unsigned r) {
  switch (r) {
  case PTX_RND_RZ: return FE_TOWARDZERO;
  case PTX_RND_RM: return FE_DOWNWARD;
  case PTX_RND_RP: return FE_UPWARD;
  default: return FE_TONEAREST;
  }
}

enum fop {
  FOP_ADD,
  FOP_SUB,
  FOP_MUL,
  FOP_DIV,
  FOP_MIN,
  FOP_MAX,
  FOP_FMA,
  FOP_SQRT,
  FOP_RCP,
  FOP_RSQRT,
  FOP_SIN,
  FOP_COS,
  FOP_LG2,
  FOP_EX2,
  FOP_TANH,
  FOP_ABS,
  FOP_NEG,
  FOP_COPYSIGN,
  FOP_MIN_NAN,
  FOP_MAX_NAN
};

/* PTX's min/max: a NaN operand gives the other (or NaN with .NaN), and -0 is below +0. */
#define MIN_MAX(T, name)                                                                                               \
  static T name##_min(T a, T b, bool nan) {                                                                            \
    if (isnan(a) || isnan(b)) return nan ? (T)NAN : isnan(a) ? b : a;                                                  \
    if (a == 0 && b == 0) return signbit(a) ? a : b;                                                                   \
    return a < b ? a : b;                                                                                              \
  }                                                                                                                    \
  static T name##_max(T a, T b, bool nan) {                                                                            \
    if (isnan(a) || isnan(b)) return nan ? (T)NAN : isnan(a) ? b : a;                                                  \
    if (a == 0 && b == 0) return signbit(a) ? b : a;                                                                   \
    return a > b ? a : b;                                                                                              \
  }
MIN_MAX(float, f32)
MIN_MAX(double, f64)

/* One operation of either width: <tgmath.h> picks the float or double function from the type. */
#define FLOAT_OP(T, name)                                                                                              \
  static inline T name##_op(unsigned op, T a, T b, T c) {                                                              \
    switch (op) {                                                                                                      \
    case FOP_ADD: return a + b;                                                                                        \
    case FOP_SUB: return a - b;                                                                                        \
    case FOP_MUL: return a * b;                                                                                        \
    case FOP_DIV: return a / b;                                                                                        \
    case FOP_MIN: return name##_min(a, b, false);                                                                      \
    case FOP_MAX: return name##_max(a, b, false);                                                                      \
    case FOP_MIN_NAN: return name##_min(a, b, true);                                                                   \
    case FOP_MAX_NAN: return name##_max(a, b, true);                                                                   \
    case FOP_FMA: return fma(a, b, c);                                                                                 \
    case FOP_SQRT: return sqrt(a);                                                                                     \
    case FOP_RCP: return (T)1 / a;                                                                                     \
    case FOP_RSQRT: return (T)1 / sqrt(a);                                                                             \
    case FOP_SIN: return sin(a);                                                                                       \
    case FOP_COS: return cos(a);                                                                                       \
    case FOP_LG2: return log2(a);                                                                                      \
    case FOP_EX2: return exp2(a);                                                                                      \
    case FOP_TANH: return tanh(a);                                                                                     \
    case FOP_ABS: return fabs(a);                                                                                      \
    case FOP_NEG: return -a;                                                                                           \
    case FOP_COPYSIGN: return copysign(b, a);                                                                          \
    default: return a;                                                                                                 \
    }                                                                                                                  \
  }
FLOAT_OP(float, f32)
FLOAT_OP(double, f64)

/* The general float handler: in->kind the operation, in->e the flags, in->vec the rounding. */
HANDLER(f32_any) {
  uint64_t *d = px_slot(w, in->d);
  const uint64_t *A = px_slot(w, in->a);
  const uint64_t *B = in->b != PX_NONE ? px_slot(w, in->b) : A, *C = in->c != PX_NONE ? px_slot(w, in->c) : A;
  unsigned op = in->kind, flags = in->size;
  int mode = host_round(in->vec), old = mode != FE_TONEAREST ? fegetround() : FE_TONEAREST;
  if (mode != FE_TONEAREST) fesetround(mode);
  PX_LANES(m, {
    float a = px_f32(A[l]), b = px_f32(B[l]), c = px_f32(C[l]);
    if (flags & F_FTZ) a = ftz32(a), b = ftz32(b), c = ftz32(c);
    float r = f32_op(op, a, b, c);
    if (flags & F_FTZ) r = ftz32(r);
    if (flags & F_SAT) r = sat32(r);
    d[l] = px_bits32(r);
  });
  if (mode != FE_TONEAREST) fesetround(old);
}
HANDLER(f64_any) {
  uint64_t *d = px_slot(w, in->d);
  const uint64_t *A = px_slot(w, in->a);
  const uint64_t *B = in->b != PX_NONE ? px_slot(w, in->b) : A, *C = in->c != PX_NONE ? px_slot(w, in->c) : A;
  unsigned op = in->kind, flags = in->size;
  int mode = host_round(in->vec), old = mode != FE_TONEAREST ? fegetround() : FE_TONEAREST;
  if (mode != FE_TONEAREST) fesetround(mode);
  PX_LANES(m, {
    double a = px_f64(A[l]), b = px_f64(B[l]), c = px_f64(C[l]);
    if (flags & F_FTZ) a = ftz64(a), b = ftz64(b), c = ftz64(c);
    double r = f64_op(op, a, b, c);
    if (flags & F_SAT) r = sat64(r);
    d[l] = px_bits64(r);
  });
  if (mode != FE_TONEAREST) fesetround(old);
}
/* The common float forms without flags, in loops the compiler vectorises. */
#define F32_FAST(name, expr)                                                                                           \
  HANDLER(name) {                                                                                                      \
    D_A_B;                                                                                                             \
    PX_LANES(m, {                                                                                                      \
      float a = px_f32(A[l]), b = px_f32(B[l]);                                                                        \
      d[l] = px_bits32(expr);                                                                                          \
    });                                                                                                                \
  }
F32_FAST(f32_add, a + b)
F32_FAST(f32_sub, a - b)
F32_FAST(f32_mul, a *b)
/*
 * fmaf is a library call unless the compiler may use the FMA instructions: a clone that may,
 * picked at load by an ifunc resolver (not under ThreadSanitizer, whose run time is not set up
 * when resolvers run).
 */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && defined(__ELF__) && !defined(__SANITIZE_THREAD__)
#define PX_FMA_CLONES __attribute__((target_clones("fma", "default")))
#else
#define PX_FMA_CLONES
#endif
PX_FMA_CLONES HANDLER(f32_fma) {
  D_A_B_C;
  PX_LANES(m, d[l] = px_bits32(fmaf(px_f32(A[l]), px_f32(B[l]), px_f32(C[l]))));
}
#define F64_FAST(name, expr)                                                                                           \
  HANDLER(name) {                                                                                                      \
    D_A_B;                                                                                                             \
    PX_LANES(m, {                                                                                                      \
      double a = px_f64(A[l]), b = px_f64(B[l]);                                                                       \
      d[l] = px_bits64(expr);                                                                                          \
    });                                                                                                                \
  }
F64_FAST(f64_add, a + b)
F64_FAST(f64_sub, a - b)
F64_FAST(f64_mul, a *b)
PX_FMA_CLONES HANDLER(f64_fma) {
  D_A_B_C;
  PX_LANES(m, d[l] = px_bits64(fma(px_f64(A[l]), px_f64(B[l]), px_f64(C[l]))));
}
/* rcp.approx.ftz.f64: the result's low 32 bits are zero, as the ISA defines it. */
HANDLER(f64_rcp_approx) {
  uint64_t *d = px_slot(w, in->d);
  const uint64_t *A = px_slot(w, in->a);
  PX_LANES(m, d[l] = px_bits64(1.0 / ftz64(px_f64(A[l]))) & 0xffffffff00000000ull);
}

HANDLER(f_testp) {
  const uint64_t *A = px_slot(w, in->a);
  uint32_t r = 0;
  PX_LANES(m, {
    double x = in->size == 8 ? px_f64(A[l]) : (double)px_f32(A[l]);
    int c = in->size == 8 ? fpclassify(x) : fpclassify(px_f32(A[l]));
    bool v = false;
    switch (in->kind) {
    case PTX_TESTP_FINITE: v = isfinite(x); break;
    case PTX_TESTP_INFINITE: v = isinf(x); break;
    case PTX_TESTP_NUMBER: v = !isnan(x); break;
    case PTX_TESTP_NOTANUMBER: v = isnan(x); break;
    case PTX_TESTP_NORMAL: v = c == FP_NORMAL; break;
    case PTX_TESTP_SUBNORMAL: v = c == FP_SUBNORMAL; break;
    default: break;
    }
    if (v) r |= 1u << l;
  });
  uint32_t *P = w->f->P;
  P[in->d] = (P[in->d] & ~m) | r;
}

/* ---------------------------------------------------------------- comparisons */

static bool cmp_int(unsigned cmp, int64_t a, int64_t b, uint64_t ua, uint64_t ub) {
  switch (cmp) {
  case PTX_CMP_EQ: return ua == ub;
  case PTX_CMP_NE: return ua != ub;
  case PTX_CMP_LT: return a < b;
  case PTX_CMP_LE: return a <= b;
  case PTX_CMP_GT: return a > b;
  case PTX_CMP_GE: return a >= b;
  case PTX_CMP_LO: return ua < ub;
  case PTX_CMP_LS: return ua <= ub;
  case PTX_CMP_HI: return ua > ub;
  case PTX_CMP_HS: return ua >= ub;
  default: return false;
  }
}

/* The comparison's lanes as a mask. in->kind: comparison; in->size: width; in->space: 1 signed, 2 float. */
static uint32_t compare(struct px_warp *w, const struct px_ins *in, uint32_t m) {
  const uint64_t *A = px_slot(w, in->a), *B = px_slot(w, in->b);
  unsigned bits = in->size * 8u, cmp = in->kind;
  uint32_t r = 0;
  if (in->space == 2) {
    bool f64 = in->size == 8, ftz = in->ftz;
    PX_LANES(m, {
      double a = f64 ? px_f64(A[l]) : (double)(ftz ? ftz32(px_f32(A[l])) : px_f32(A[l]));
      double b = f64 ? px_f64(B[l]) : (double)(ftz ? ftz32(px_f32(B[l])) : px_f32(B[l]));
      if (px_cmp_float(cmp, a, b)) r |= 1u << l;
    });
    return r;
  }
  uint64_t mask = bits == 64 ? ~0ull : (1ull << bits) - 1;
  unsigned sh = 64 - bits;
  if (cmp == PTX_CMP_LT && in->space == 1 && bits == 32) { /* the common loop test */
    PX_LANES(m, r |= (uint32_t)((int32_t)A[l] < (int32_t)B[l]) << l);
    return r;
  }
  PX_LANES(m, {
    uint64_t ua = A[l] & mask, ub = B[l] & mask;
    int64_t a = (int64_t)(A[l] << sh) >> sh, b = (int64_t)(B[l] << sh) >> sh;
    if (in->space != 1) a = (int64_t)ua, b = (int64_t)ub;
    if (in->space != 1 && (cmp == PTX_CMP_LT || cmp == PTX_CMP_LE || cmp == PTX_CMP_GT || cmp == PTX_CMP_GE)) {
      static const unsigned as_unsigned[] = {
          [PTX_CMP_LT] = PTX_CMP_LO, [PTX_CMP_LE] = PTX_CMP_LS, [PTX_CMP_GT] = PTX_CMP_HI, [PTX_CMP_GE] = PTX_CMP_HS};
      if (cmp_int(as_unsigned[cmp], a, b, ua, ub)) r |= 1u << l;
    } else if (cmp_int(cmp, a, b, ua, ub)) {
      r |= 1u << l;
    }
  });
  return r;
}

static uint32_t combine(const struct px_warp *w, const struct px_ins *in, uint32_t r) {
  if (in->c == PX_NONE) return r;
  uint32_t c = w->f->P[in->c] ^ (in->neg_c ? PX_FULL : 0);
  switch (in->e) {
  case PTX_BOOL_AND: return r & c;
  case PTX_BOOL_OR: return r | c;
  case PTX_BOOL_XOR: return r ^ c;
  default: return r;
  }
}

static uint32_t combine_not(const struct px_warp *w, const struct px_ins *in, uint32_t r) {
  if (in->c == PX_NONE) return ~r;
  uint32_t c = w->f->P[in->c] ^ (in->neg_c ? PX_FULL : 0);
  switch (in->e) {
  case PTX_BOOL_AND: return ~r & c;
  case PTX_BOOL_OR: return ~r | c;
  case PTX_BOOL_XOR: return ~r ^ c;
  default: return ~r;
  }
}

/* The comparisons loops test most, on 32-bit integers, in loops without a branch per lane. */
#define SETP32(name, T, op)                                                                                            \
  HANDLER(name) {                                                                                                      \
    const uint64_t *A = px_slot(w, in->a), *B = px_slot(w, in->b);                                                     \
    uint32_t r = 0, *P = w->f->P;                                                                                      \
    PX_LANES(m, r |= (uint32_t)((T)A[l] op(T) B[l]) << l);                                                             \
    P[in->d] = (P[in->d] & ~m) | (r & m);                                                                              \
  }
SETP32(setp_lt_s32, int32_t, <)
SETP32(setp_le_s32, int32_t, <=)
SETP32(setp_gt_s32, int32_t, >)
SETP32(setp_ge_s32, int32_t, >=)
SETP32(setp_lo_u32, uint32_t, <)
SETP32(setp_ls_u32, uint32_t, <=)
SETP32(setp_hi_u32, uint32_t, >)
SETP32(setp_hs_u32, uint32_t, >=)
SETP32(setp_eq_32, uint32_t, ==)
SETP32(setp_ne_32, uint32_t, !=)

/* The fast form of a 32-bit integer setp with one destination and no combining, or NULL. */
static px_fn fast_setp(const struct px_ins *in) {
  if (in->size != 4 || in->space == 2 || in->c != PX_NONE || in->pd2 != PX_NONE) return NULL;
  bool sgn = in->space == 1;
  switch (in->kind) {
  case PTX_CMP_EQ: return setp_eq_32;
  case PTX_CMP_NE: return setp_ne_32;
  case PTX_CMP_LT: return sgn ? setp_lt_s32 : setp_lo_u32;
  case PTX_CMP_LE: return sgn ? setp_le_s32 : setp_ls_u32;
  case PTX_CMP_GT: return sgn ? setp_gt_s32 : setp_hi_u32;
  case PTX_CMP_GE: return sgn ? setp_ge_s32 : setp_hs_u32;
  case PTX_CMP_LO: return setp_lo_u32;
  case PTX_CMP_LS: return setp_ls_u32;
  case PTX_CMP_HI: return setp_hi_u32;
  case PTX_CMP_HS: return setp_hs_u32;
  default: return NULL;
  }
}

HANDLER(c_setp) {
  uint32_t r = compare(w, in, m), *P = w->f->P;
  P[in->d] = (P[in->d] & ~m) | (combine(w, in, r) & m);
  if (in->pd2 != PX_NONE) P[in->pd2] = (P[in->pd2] & ~m) | (combine_not(w, in, r) & m);
}

/* set: 0xffffffff / 1.0f for true (vec: 1 for a float destination). */
HANDLER(c_set) {
  uint32_t r = combine(w, in, compare(w, in, m));
  uint64_t *d = px_slot(w, in->d);
  uint64_t yes = in->vec ? px_bits32(1.0f) : 0xffffffffu;
  PX_LANES(m, d[l] = (r >> l & 1) ? yes : 0);
}

HANDLER(c_selp) {
  D_A_B;
  uint32_t c = w->f->P[in->c] ^ (in->neg_c ? PX_FULL : 0);
  PX_LANES(m, d[l] = (c >> l & 1) ? A[l] : B[l]);
}

HANDLER(c_slct) {
  D_A_B_C;
  bool f = in->kind, ftz = in->ftz;
  PX_LANES(m, {
    bool ge = f ? (ftz ? ftz32(px_f32(C[l])) : px_f32(C[l])) >= 0.0f : (int32_t)C[l] >= 0;
    d[l] = ge ? A[l] : B[l];
  });
}

/* ---------------------------------------------------------------- moves */

HANDLER(m_mov) {
  uint64_t *d = px_slot(w, in->d);
  const uint64_t *A = px_slot(w, in->a);
  PX_LANES(m, d[l] = A[l]);
}

/* mov.b64 d, {a, b} (and .b32 of two .b16): packs; in->size is each element's bytes. */
HANDLER(m_pack) {
  uint64_t *d = px_slot(w, in->d);
  unsigned n = in->vec, bits = in->size * 8u;
  uint64_t mask = bits == 64 ? ~0ull : (1ull << bits) - 1;
  PX_LANES(m, {
    uint64_t v = 0;
    for (unsigned i = 0; i < n; i++) v |= (px_slot(w, in->vd[i])[l] & mask) << (i * bits);
    d[l] = v;
  });
}
HANDLER(m_unpack) {
  const uint64_t *A = px_slot(w, in->a);
  unsigned n = in->vec, bits = in->size * 8u;
  uint64_t mask = bits == 64 ? ~0ull : (1ull << bits) - 1;
  PX_LANES(m, {
    uint64_t v = A[l];
    for (unsigned i = 0; i < n; i++)
      if (in->vd[i] != PX_NONE) px_slot(w, in->vd[i])[l] = (v >> (i * bits)) & mask;
  });
}

static uint64_t clock_of(const struct px_warp *w) { return w->executed * 4 + w->blk->epoch * 64; }

static uint64_t globaltimer(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint32_t dim_of(gcap_dim3 d, unsigned comp) { return comp == 0 ? d.x : comp == 1 ? d.y : comp == 2 ? d.z : 0; }

/* The PTX ISA's %total_smem_size: static and dynamic shared memory, not the system's reserved
 * region, in the target's allocation unit (256 bytes for sm_30 to sm_7x, else 128). */
static uint32_t total_smem(const struct px_block *b) {
  unsigned sm = b->prog->module->target_sm, unit = sm >= 30 && sm < 80 ? 256u : 128u;
  uint64_t bytes = (uint64_t)b->k->dynamic_offset + b->l->dynamic_shared;
  return (uint32_t)((bytes + unit - 1) / unit * unit);
}

uint64_t px_sreg_value(const struct px_warp *w, unsigned sreg, unsigned comp, unsigned lane) {
  const struct px_block *b = w->blk;
  gcap_dim3 bd = b->l->block;
  unsigned t = px_thread(w, lane);
  switch (sreg) {
  case PTX_SREG_TID: return comp == 0 ? t % bd.x : comp == 1 ? t / bd.x % bd.y : comp == 2 ? t / bd.x / bd.y : 0;
  case PTX_SREG_NTID: return dim_of(bd, comp);
  case PTX_SREG_CTAID: return dim_of(b->idx, comp);
  case PTX_SREG_NCTAID: return dim_of(b->l->grid, comp);
  case PTX_SREG_LANEID: return lane;
  case PTX_SREG_WARPID: return w->index;
  case PTX_SREG_NWARPID: return 64;
  /* Blocks go round the device's multiprocessors in the order of their linear index; %gridid
     is the launch's serial number, unique in the process. */
  case PTX_SREG_SMID:
    return (b->idx.x + (uint64_t)b->l->grid.x * (b->idx.y + (uint64_t)b->l->grid.y * b->idx.z)) % PX_DEVICE_SMS;
  case PTX_SREG_NSMID: return PX_DEVICE_SMS;
  case PTX_SREG_GRIDID: return b->l->serial;
  case PTX_SREG_LANEMASK_EQ: return 1u << lane;
  case PTX_SREG_LANEMASK_LE: return lane == 31 ? PX_FULL : (2u << lane) - 1;
  case PTX_SREG_LANEMASK_LT: return (1u << lane) - 1;
  case PTX_SREG_LANEMASK_GE: return PX_FULL << lane;
  case PTX_SREG_LANEMASK_GT: return lane == 31 ? 0 : PX_FULL << (lane + 1);
  case PTX_SREG_CLOCK: return (uint32_t)clock_of(w);
  case PTX_SREG_CLOCK_HI: return (uint32_t)(clock_of(w) >> 32);
  case PTX_SREG_CLOCK64: return clock_of(w);
  case PTX_SREG_GLOBALTIMER: return globaltimer();
  case PTX_SREG_GLOBALTIMER_LO: return (uint32_t)globaltimer();
  case PTX_SREG_GLOBALTIMER_HI: return (uint32_t)(globaltimer() >> 32);
  case PTX_SREG_DYNAMIC_SMEM_SIZE: return b->l->dynamic_shared;
  case PTX_SREG_TOTAL_SMEM_SIZE: return total_smem(b);
  /* The reserved region follows the kernel's own shared memory (ptx_run.c); cooperative groups reads _1. */
  case PTX_SREG_RESERVED_SMEM_BEGIN:
  case PTX_SREG_RESERVED_SMEM_0: return b->shared_bytes - b->k->reserved_bytes;
  case PTX_SREG_RESERVED_SMEM_END: return b->shared_bytes;
  case PTX_SREG_RESERVED_SMEM_CAP: return b->k->reserved_bytes;
  case PTX_SREG_RESERVED_SMEM_1: return b->shared_bytes - b->k->reserved_bytes / 2;
  case PTX_SREG_CLUSTER_NCTAID: return dim_of(b->l->grid, comp);
  case PTX_SREG_CLUSTER_CTAID: return dim_of(b->idx, comp);
  case PTX_SREG_NCLUSTERID: return comp < 3 ? 1 : 0;
  /* What the driver places for a cooperative launch: the grid workspace's address in 1 (high) and 2 (low). */
  case PTX_SREG_ENVREG:
    return comp == 1 ? (uint32_t)(b->l->grid_workspace >> 32) : comp == 2 ? (uint32_t)b->l->grid_workspace : 0;
  default: return 0;
  }
}

HANDLER(m_sreg) {
  uint64_t *d = px_slot(w, in->d);
  unsigned sreg = in->kind, comp = (unsigned)in->imm;
  if (sreg == PTX_SREG_TID && comp < 3) {
    const uint16_t(*tid)[3] = w->blk->tid + w->index * 32;
    PX_LANES(m, d[l] = tid[l][comp]);
    return;
  }
  if (sreg == PTX_SREG_NTID || sreg == PTX_SREG_CTAID || sreg == PTX_SREG_NCTAID || sreg == PTX_SREG_WARPID) {
    uint64_t v = px_sreg_value(w, sreg, comp, 0); /* the same in every lane */
    PX_LANES(m, d[l] = v);
    return;
  }
  PX_LANES(m, d[l] = px_sreg_value(w, sreg, comp, l));
}

/* ---------------------------------------------------------------- conversions */

static int64_t sext(uint64_t v, unsigned bits) {
  return bits == 64 ? (int64_t)v : (int64_t)(v << (64 - bits)) >> (64 - bits);
}
static uint64_t zext(uint64_t v, unsigned bits) { return bits == 64 ? v : v & ((1ull << bits) - 1); }

/* A float rounded to an integral value as .rni/.rzi/.rmi/.rpi (and .rn/.rz/... for float to int) say. */
static double round_int(double x, unsigned r) {
  switch (r) {
  case PTX_RND_RZI:
  case PTX_RND_RZ: return trunc(x);
  case PTX_RND_RMI:
  case PTX_RND_RM: return floor(x);
  case PTX_RND_RPI:
  case PTX_RND_RP: return ceil(x);
  default: return nearbyint(x); /* the host's default mode is to nearest, ties to even */
  }
}

/*
 * A float to an integer type: rounded, saturated to the type's range. NaN gives 0, except from
 * an f64 or into a 64-bit type, where it gives 1 << (bits - 1) (PTX ISA 9.0, cvt).
 */
static uint64_t float_to_int(double x, unsigned bits, bool sgn, unsigned r, bool from_f64) {
  if (isnan(x)) return from_f64 || bits == 64 ? 1ull << (bits - 1) : 0;
  x = round_int(x, r);
  if (sgn) {
    double lo = -ldexp(1.0, (int)bits - 1), hi = ldexp(1.0, (int)bits - 1);
    if (x <= lo) return (uint64_t)(bits == 64 ? INT64_MIN : -(int64_t)(1ull << (bits - 1)));
    if (x >= hi) return bits == 64 ? (uint64_t)INT64_MAX : (1ull << (bits - 1)) - 1;
    return (uint64_t)(int64_t)x;
  }
  if (x <= 0) return 0;
  if (x >= ldexp(1.0, (int)bits)) return bits == 64 ? ~0ull : (1ull << bits) - 1;
  return (uint64_t)x;
}

/* Integers to float with the instruction's rounding (the host mode is set around the loop). */
static float int_to_f32(uint64_t v, unsigned bits, bool sgn) {
  return sgn ? (float)sext(v, bits) : (float)zext(v, bits);
}
static double int_to_f64(uint64_t v, unsigned bits, bool sgn) {
  return sgn ? (double)sext(v, bits) : (double)zext(v, bits);
}

static uint64_t sat_int(uint64_t v, unsigned sbits, bool ssgn, unsigned dbits, bool dsgn) {
  if (ssgn) {
    int64_t x = sext(v, sbits);
    int64_t lo = dsgn ? (dbits == 64 ? INT64_MIN : -(int64_t)(1ull << (dbits - 1))) : 0;
    int64_t hi = dsgn ? (dbits == 64 ? INT64_MAX : (int64_t)((1ull << (dbits - 1)) - 1))
                      : (dbits >= 63 ? INT64_MAX : (int64_t)((1ull << dbits) - 1));
    return (uint64_t)(x < lo ? lo : x > hi ? hi : x);
  }
  uint64_t x = zext(v, sbits);
  uint64_t hi = dsgn ? (1ull << (dbits - 1)) - 1 : (dbits == 64 ? ~0ull : (1ull << dbits) - 1);
  return x > hi ? hi : x;
}

/* f16 <-> f32 (IEEE binary16), rounding to nearest even. */
static float half_to_float(uint16_t h) {
  uint32_t sign = (uint32_t)(h >> 15) << 31, exp = (h >> 10) & 0x1f, man = h & 0x3ff, bits;
  if (exp == 0x1f) bits = sign | 0x7f800000u | (man << 13);
  else if (exp != 0) bits = sign | ((exp + 112) << 23) | (man << 13);
  else if (man == 0) bits = sign;
  else {
    float f = ldexpf((float)man, -24);
    return sign ? -f : f;
  }
  float f;
  memcpy(&f, &bits, 4);
  return f;
}
/* Past the largest half (65504): infinity, or the largest finite value where the rounding goes toward zero. */
static uint16_t half_overflow(uint16_t sign) {
  int mode = fegetround();
  bool to_inf = mode == FE_TONEAREST || (mode == FE_UPWARD && !sign) || (mode == FE_DOWNWARD && sign);
  return (uint16_t)(sign | (to_inf ? 0x7c00 : 0x7bff));
}

/* The host's rounding mode (set around the lanes) rounds the significand. */
static uint16_t float_to_half(float f) {
  uint32_t x;
  memcpy(&x, &f, 4);
  uint16_t sign = (uint16_t)((x >> 16) & 0x8000);
  float a = fabsf(f);
  if (isnan(f)) return (uint16_t)(sign | 0x7e00);
  if (isinf(f)) return (uint16_t)(sign | 0x7c00);
  if (sign) { /* round the magnitude in the mirrored direction */
    int mode = fegetround();
    if (mode == FE_UPWARD || mode == FE_DOWNWARD) {
      fesetround(mode == FE_UPWARD ? FE_DOWNWARD : FE_UPWARD);
      uint16_t h = float_to_half(a);
      fesetround(mode);
      return (h & 0x7fff) == 0x7c00 || (h & 0x7fff) == 0x7bff ? half_overflow(sign) : (uint16_t)(sign | h);
    }
  }
  if (a < ldexpf(1.0f, -14)) return (uint16_t)(sign | (uint16_t)nearbyintf(a * ldexpf(1.0f, 24)));
  int e;
  float mant = frexpf(a, &e);                          /* a = mant * 2^e, mant in [0.5, 1) */
  uint32_t m11 = (uint32_t)nearbyintf(mant * 2048.0f); /* 11 significant bits */
  if (m11 == 2048) {
    m11 = 1024;
    e++;
  }
  if (e + 14 >= 31) return half_overflow(sign);
  return (uint16_t)(sign | (uint16_t)((uint32_t)(e + 14) << 10) | (uint16_t)(m11 & 0x3ff));
}

/* bfloat16 <-> f32: bf16 is f32's upper half (8 exponent bits, 7 of significand), so the way
 * back is exact. */
static float bf16_to_float(uint16_t h) {
  uint32_t bits = (uint32_t)h << 16;
  float f;
  memcpy(&f, &bits, 4);
  return f;
}
/* Past the largest bf16 (0x7f7f): infinity, or the largest finite value where the rounding goes toward zero. */
static uint16_t bf16_overflow(uint16_t sign) {
  int mode = fegetround();
  bool to_inf = mode == FE_TONEAREST || (mode == FE_UPWARD && !sign) || (mode == FE_DOWNWARD && sign);
  return (uint16_t)(sign | (to_inf ? 0x7f80 : 0x7f7f));
}

/* x (an f32 or f64 value) rounded once to bf16 in the host's rounding mode (set around the lanes). */
static uint16_t double_to_bf16(double x) {
  uint16_t sign = signbit(x) ? 0x8000 : 0;
  double a = fabs(x);
  if (isnan(x)) return 0x7fff; /* the canonical NaN, as the GPU's conversion gives */
  if (isinf(x)) return (uint16_t)(sign | 0x7f80);
  if (sign) { /* round the magnitude in the mirrored direction */
    int mode = fegetround();
    if (mode == FE_UPWARD || mode == FE_DOWNWARD) {
      fesetround(mode == FE_UPWARD ? FE_DOWNWARD : FE_UPWARD);
      uint16_t h = double_to_bf16(a);
      fesetround(mode);
      return (h & 0x7fff) == 0x7f80 || (h & 0x7fff) == 0x7f7f ? bf16_overflow(sign) : (uint16_t)(sign | h);
    }
  }
  if (a < ldexp(1.0, -126)) return (uint16_t)(sign | (uint16_t)nearbyint(a * ldexp(1.0, 133)));
  int e;
  double mant = frexp(a, &e);                      /* a = mant * 2^e, mant in [0.5, 1) */
  uint32_t m8 = (uint32_t)nearbyint(mant * 256.0); /* 8 significant bits */
  if (m8 == 256) {
    m8 = 128;
    e++;
  }
  if (e + 126 >= 255) return bf16_overflow(sign);
  return (uint16_t)(sign | (uint16_t)((uint32_t)(e + 126) << 7) | (uint16_t)(m8 & 0x7f));
}

/* A float value as the source type holds it. */
static double float_in(uint64_t v, enum ptx_type st) {
  switch (st) {
  case PTX_T_F64: return px_f64(v);
  case PTX_T_F16: return half_to_float((uint16_t)v);
  case PTX_T_BF16: return bf16_to_float((uint16_t)v);
  default: return px_f32(v);
  }
}

/* x into a half-width float destination, .relu making every value with the sign bit set +0
 * (negative zero too; a NaN becomes the canonical NaN). */
static uint16_t narrow_out(double x, enum ptx_type dt, unsigned flags) {
  if ((flags & F_RELU) && signbit(x) && !isnan(x)) x = 0;
  uint16_t h = dt == PTX_T_BF16 ? double_to_bf16(x) : float_to_half((float)x);
  if ((flags & F_RELU) && isnan(x)) h = 0x7fff;
  /* .satfinite: past the largest finite value (infinities too), that value; NaN stays NaN */
  uint16_t inf = dt == PTX_T_BF16 ? 0x7f80 : 0x7c00;
  if ((flags & F_SATFINITE) && (h & 0x7fff) == inf) h = (uint16_t)((h & 0x8000) | (inf - 1));
  return h;
}

/* cvt.{rna,rn,rz}[.relu][.satfinite].tf32.f32: the f32 rounded to 10 significand bits, the low
 * 13 bits zero; .rna rounds ties away from zero. in->vec the rounding, in->size the flags. */
HANDLER(v_cvt_tf32) {
  uint64_t *d = px_slot(w, in->d);
  const uint64_t *A = px_slot(w, in->a);
  unsigned r = in->vec, flags = in->size;
  PX_LANES(m, {
    uint32_t u = (uint32_t)A[l], sign = u & 0x80000000u, mag = u & 0x7fffffffu;
    if (mag > 0x7f800000u) {
      d[l] = 0x7fffffffu; /* NaN: the canonical NaN */
      continue;
    }
    if (mag != 0x7f800000u) {
      if (r == PTX_RND_RNA) mag += 0x1000u;
      else if (r == PTX_RND_RN) mag += 0xfffu + ((mag >> 13) & 1);
      mag &= 0xffffe000u;
    }
    if ((flags & F_SATFINITE) && mag >= 0x7f800000u) mag = 0x7f7fe000u;
    d[l] = (flags & F_RELU) && sign ? 0 : sign | mag;
  });
}

/* cvt.{rn,rz,rm,rp}[.relu].{f16x2,bf16x2}.f32 d, a, b: a's value in the upper half, b's in the lower. */
HANDLER(v_cvt_pack) {
  uint64_t *d = px_slot(w, in->d);
  const uint64_t *A = px_slot(w, in->a), *B = px_slot(w, in->b);
  enum ptx_type half = (enum ptx_type)in->kind;
  int mode = host_round(in->vec), old = mode != FE_TONEAREST ? fegetround() : FE_TONEAREST;
  if (mode != FE_TONEAREST) fesetround(mode);
  PX_LANES(m, {
    uint32_t hi = narrow_out(px_f32(A[l]), half, in->size), lo = narrow_out(px_f32(B[l]), half, in->size);
    d[l] = hi << 16 | lo;
  });
  if (mode != FE_TONEAREST) fesetround(old);
}

/* cvt: in->kind destination type, in->e source type, in->vec rounding, in->size flags (F_FTZ, F_SAT, F_RELU). */
HANDLER(v_cvt) {
  uint64_t *d = px_slot(w, in->d);
  const uint64_t *A = px_slot(w, in->a);
  enum ptx_type dt = (enum ptx_type)in->kind, st = (enum ptx_type)in->e;
  unsigned db = ptx_type_size(dt) * 8u, sb = ptx_type_size(st) * 8u, r = in->vec, flags = in->size;
  bool dflt = ptx_type_is_float(dt), sflt = ptx_type_is_float(st);
  bool dsg = ptx_type_is_signed(dt), ssg = ptx_type_is_signed(st);
  int mode = (dflt && (r == PTX_RND_RZ || r == PTX_RND_RM || r == PTX_RND_RP)) ? host_round(r) : FE_TONEAREST;
  int old = mode != FE_TONEAREST ? fegetround() : FE_TONEAREST;
  if (mode != FE_TONEAREST) fesetround(mode);
  PX_LANES(m, {
    uint64_t v = A[l], out;
    if (!sflt && !dflt) {
      /* The destination type's bits, extended as it says (a narrow register holds only those). */
      out = (flags & F_SAT) ? sat_int(v, sb, ssg, db, dsg) : (ssg ? (uint64_t)sext(v, sb) : zext(v, sb));
      out = dsg ? (uint64_t)sext(out, db) : zext(out, db);
    } else if (sflt && !dflt) {
      double x = float_in(v, st);
      if ((flags & F_FTZ) && st == PTX_T_F32) x = ftz32((float)x);
      out = float_to_int(x, db, dsg, r, st == PTX_T_F64);
      if (dsg) out = (uint64_t)sext(out, db);
    } else if (!sflt) {
      if (dt == PTX_T_F64) out = px_bits64(int_to_f64(v, sb, ssg));
      else if (dt == PTX_T_F16) out = float_to_half(int_to_f32(v, sb, ssg));
      else if (dt == PTX_T_BF16) out = double_to_bf16(ssg ? (double)sext(v, sb) : (double)zext(v, sb));
      else out = px_bits32(int_to_f32(v, sb, ssg));
    } else {
      double x = float_in(v, st);
      if ((flags & F_FTZ) && st == PTX_T_F32) x = ftz32((float)x);
      if (r >= PTX_RND_RNI) x = round_int(x, r);
      if (flags & F_SAT) x = sat64(x);
      if (dt == PTX_T_F64) out = px_bits64(x);
      else if (dt == PTX_T_F16 || dt == PTX_T_BF16) out = narrow_out(dt == PTX_T_F16 ? (double)(float)x : x, dt, flags);
      else {
        float f = (float)x;
        if (flags & F_FTZ) f = ftz32(f);
        out = px_bits32(f);
      }
    }
    d[l] = out;
  });
  if (mode != FE_TONEAREST) fesetround(old);
}

/* ---------------------------------------------------------------- lowering */

static enum ptx_type itype(const struct ptx_instr *pi) { return (enum ptx_type)pi->type; }

/* d, a, b, c, e from operands 0..4 as values of type t. */
static int standard(struct px_lower *L, const struct ptx_instr *pi, struct px_ins *in, unsigned n, enum ptx_type t) {
  if (pi->num_operands != n) return px_refuse(L, "takes %u operands, not %u", n, pi->num_operands);
  uint16_t *slots[] = {&in->d, &in->a, &in->b, &in->c, &in->e};
  for (unsigned i = 0; i < n && i < 5; i++) {
    if (i == 0 && pi->opnd[0].kind != PTX_OPND_REG) return px_refuse(L, "the destination is not a register");
    *slots[i] = px_value(L, &pi->opnd[i], t);
    if (*slots[i] == PX_NONE) return -1;
  }
  in->size = (uint8_t)ptx_type_size(t);
  return 1;
}

#define PICK_INT(name, t)                                                                                              \
  ((t) == PTX_T_S16                       ? name##_s16                                                                 \
   : (t) == PTX_T_U16 || (t) == PTX_T_B16 ? name##_u16                                                                 \
   : (t) == PTX_T_S32                     ? name##_s32                                                                 \
   : (t) == PTX_T_U32 || (t) == PTX_T_B32 ? name##_u32                                                                 \
   : (t) == PTX_T_S64                     ? name##_s64                                                                 \
   : (t) == PTX_T_U64 || (t) == PTX_T_B64 ? name##_u64                                                                 \
                                          : NULL)

static bool is_int(enum ptx_type t) { return t >= PTX_T_B8 && t <= PTX_T_S64; }

static unsigned float_flags(const struct ptx_instr *pi) {
  return ((pi->flags & PTX_F_FTZ) ? F_FTZ : 0) | ((pi->flags & PTX_F_SAT) ? F_SAT : 0);
}

/* A float operation through f32_any/f64_any, or a fast form where nothing special is asked. */
static int lower_float(struct px_lower *L, const struct ptx_instr *pi, struct px_ins *in, unsigned n, unsigned op) {
  enum ptx_type t = itype(pi);
  if (t != PTX_T_F32 && t != PTX_T_F64)
    return px_unsupported(L, "%s.%s is not supported yet", ptx_op_name((enum ptx_op)pi->op), ptx_type_name(t));
  if (standard(L, pi, in, n, t) < 0) return -1;
  unsigned flags = float_flags(pi), r = pi->round;
  bool plain = !flags && (r == PTX_RND_NONE || r == PTX_RND_RN);
  in->kind = (uint8_t)op;
  in->vec = (uint8_t)r;
  in->size = (uint8_t)flags;
  if (t == PTX_T_F64 && op == FOP_RCP && (pi->flags & PTX_F_APPROX)) {
    in->fn = f64_rcp_approx;
    return 1;
  }
  if (plain && t == PTX_T_F32) {
    in->fn = op == FOP_ADD   ? f32_add
             : op == FOP_SUB ? f32_sub
             : op == FOP_MUL ? f32_mul
             : op == FOP_FMA ? f32_fma
                             : NULL;
  } else if (plain) {
    in->fn = op == FOP_ADD   ? f64_add
             : op == FOP_SUB ? f64_sub
             : op == FOP_MUL ? f64_mul
             : op == FOP_FMA ? f64_fma
                             : NULL;
  }
  if (!in->fn) in->fn = t == PTX_T_F32 ? f32_any : f64_any;
  return 1;
}

static int lower_int_typed(struct px_lower *L, const struct ptx_instr *pi, struct px_ins *in, px_fn fn) {
  if (!fn) return px_unsupported(L, "type .%s is not supported here", ptx_type_name(itype(pi)));
  if (standard(L, pi, in, 3, itype(pi)) < 0) return -1;
  in->fn = fn;
  return 1;
}

static int lower_add_sub(struct px_lower *L, const struct ptx_instr *pi, struct px_ins *in, bool sub) {
  enum ptx_type t = itype(pi);
  if (ptx_type_is_float(t)) return lower_float(L, pi, in, 3, sub ? FOP_SUB : FOP_ADD);
  if (standard(L, pi, in, 3, t) < 0) return -1;
  if (pi->flags & PTX_F_CC) {
    in->fn = i_carry;
    in->kind = (uint8_t)((sub ? 1 : 0) | 4);
  } else if (pi->flags & PTX_F_SAT) {
    in->fn = i_add_sat;
    in->kind = sub;
  } else {
    in->fn = sub ? i_sub : i_add;
  }
  return 1;
}

static int lower_carry(struct px_lower *L, const struct ptx_instr *pi, struct px_ins *in) {
  bool mad = pi->op == PTX_OP_MADC;
  if (standard(L, pi, in, mad ? 4 : 3, itype(pi)) < 0) return -1;
  in->fn = i_carry;
  in->kind = (uint8_t)((pi->op == PTX_OP_SUBC ? 1 : 0) | 2 | ((pi->flags & PTX_F_CC) ? 4 : 0) | (mad ? 8 : 0) |
                       (pi->mode == PTX_MUL_HI ? 16 : 0));
  return 1;
}

static px_fn pick_hi(enum ptx_type t, bool mad, bool wide) {
  switch (t) {
  case PTX_T_S16: return wide ? (mad ? i_mad_wide_s16 : i_mul_wide_s16) : mad ? i_mad_hi_s16 : i_mul_hi_s16;
  case PTX_T_U16: return wide ? (mad ? i_mad_wide_u16 : i_mul_wide_u16) : mad ? i_mad_hi_u16 : i_mul_hi_u16;
  case PTX_T_S32: return wide ? (mad ? i_mad_wide_s32 : i_mul_wide_s32) : mad ? i_mad_hi_s32 : i_mul_hi_s32;
  case PTX_T_U32: return wide ? (mad ? i_mad_wide_u32 : i_mul_wide_u32) : mad ? i_mad_hi_u32 : i_mul_hi_u32;
#if defined(__SIZEOF_INT128__)
  case PTX_T_S64: return wide ? NULL : mad ? i_mad_hi_s64 : i_mul_hi_s64;
  case PTX_T_U64: return wide ? NULL : mad ? i_mad_hi_u64 : i_mul_hi_u64;
#endif
  default: return NULL;
  }
}

static int lower_mul_mad(struct px_lower *L, const struct ptx_instr *pi, struct px_ins *in, bool mad) {
  enum ptx_type t = itype(pi);
  if (ptx_type_is_float(t)) return lower_float(L, pi, in, mad ? 4 : 3, mad ? FOP_FMA : FOP_MUL);
  if (mad && (pi->flags & PTX_F_CC)) {
    if (standard(L, pi, in, 4, t) < 0) return -1;
    in->fn = i_carry;
    in->kind = (uint8_t)(4 | 8 | (pi->mode == PTX_MUL_HI ? 16 : 0));
    return 1;
  }
  bool wide = pi->mode == PTX_MUL_WIDE;
  if (standard(L, pi, in, mad ? 4 : 3, t) < 0) return -1;
  if (wide && mad) { /* c is the wide type */
    enum ptx_type wt =
        ptx_type_is_signed(t) ? (t == PTX_T_S16 ? PTX_T_S32 : PTX_T_S64) : (t == PTX_T_U16 ? PTX_T_U32 : PTX_T_U64);
    in->c = px_value(L, &pi->opnd[3], wt);
  }
  if (pi->mode == PTX_MUL_HI || wide) in->fn = pick_hi(t, mad, wide);
  else in->fn = mad ? i_mad_lo : i_mul_lo;
  if (!in->fn) return px_unsupported(L, "this form is not supported yet");
  return 1;
}

static int lower_shift(struct px_lower *L, const struct ptx_instr *pi, struct px_ins *in, bool left) {
  enum ptx_type t = itype(pi);
  if (standard(L, pi, in, 3, t) < 0) return -1;
  in->b = px_value(L, &pi->opnd[2], PTX_T_U32);
  if (left) {
    in->fn = i_shl;
    return 1;
  }
  in->fn = PICK_INT(i_shr, t);
  return in->fn ? 1 : px_unsupported(L, "type .%s is not supported here", ptx_type_name(t));
}

/* and/or/xor/not on predicates, or on values. */
static int lower_logic(struct px_lower *L, const struct ptx_instr *pi, struct px_ins *in) {
  enum ptx_type t = itype(pi);
  unsigned n = pi->op == PTX_OP_NOT || pi->op == PTX_OP_CNOT ? 2 : 3;
  if (t == PTX_T_PRED) {
    if (pi->num_operands != n) return px_refuse(L, "takes %u operands", n);
    in->d = px_pred(L, &pi->opnd[0], NULL);
    in->a = px_pred(L, &pi->opnd[1], &in->neg_a);
    if (n == 3) in->b = px_pred(L, &pi->opnd[2], &in->neg_b);
    in->kind = (uint8_t)pi->op;
    in->fn = p_logic;
    return 1;
  }
  if (standard(L, pi, in, n, t) < 0) return -1;
  switch ((enum ptx_op)pi->op) {
  case PTX_OP_AND: in->fn = i_and; break;
  case PTX_OP_OR: in->fn = i_or; break;
  case PTX_OP_XOR: in->fn = i_xor; break;
  case PTX_OP_NOT: in->fn = i_not; break;
  default: in->fn = i_cnot; break;
  }
  return 1;
}

static int lower_mov(struct px_lower *L, const struct ptx_instr *pi, struct px_ins *in) {
  enum ptx_type t = itype(pi);
  if (pi->num_operands != 2) return px_refuse(L, "mov takes 2 operands");
  const struct ptx_operand *d = &pi->opnd[0], *a = &pi->opnd[1];
  if (t == PTX_T_PRED) {
    in->d = px_pred(L, d, NULL);
    if (a->kind == PTX_OPND_IMM) in->imm = a->imm != 0; /* a constant predicate: a stays PX_NONE */
    else in->a = px_pred(L, a, &in->neg_a);
    in->kind = PTX_OP_MOV;
    in->fn = p_logic;
    return 1;
  }
  if (d->kind == PTX_OPND_VEC || a->kind == PTX_OPND_VEC) {
    const struct ptx_operand *v = d->kind == PTX_OPND_VEC ? d : a;
    if (v->count > 4) return px_refuse(L, "a vector of %u elements (mov takes at most 4)", v->count);
    in->vec = v->count;
    in->size = (uint8_t)(ptx_type_size(t) / (v->count ? v->count : 1));
    for (unsigned i = 0; i < v->count; i++) {
      if (v->elems[i].kind == PTX_OPND_SINK) continue;
      struct ptx_operand e = {
          .kind = v->elems[i].kind, .index = v->elems[i].reg, .imm = v->elems[i].imm, .imm_kind = v->elems[i].imm_kind};
      in->vd[i] = px_value(L, &e, PTX_T_B64);
    }
    if (d->kind == PTX_OPND_VEC) {
      in->a = px_value(L, a, t);
      in->fn = m_unpack;
    } else {
      in->d = px_value(L, d, t);
      in->fn = m_pack;
    }
    return 1;
  }
  in->d = px_value(L, d, t);
  if (a->kind == PTX_OPND_SREG) {
    in->kind = a->sreg;
    in->imm = a->comp;
    in->fn = m_sreg;
    return 1;
  }
  in->a = px_value(L, a, t);
  in->fn = m_mov;
  return 1;
}

static int lower_compare(struct px_lower *L, const struct ptx_instr *pi, struct px_ins *in) {
  bool setp = pi->op == PTX_OP_SETP;
  enum ptx_type st = setp ? itype(pi) : (enum ptx_type)pi->type2;
  unsigned n = pi->num_operands;
  if (n != 3 && n != 4) return px_refuse(L, "takes 3 or 4 operands");
  in->a = px_value(L, &pi->opnd[1], st);
  in->b = px_value(L, &pi->opnd[2], st);
  if (n == 4) {
    in->c = px_pred(L, &pi->opnd[3], &in->neg_c);
    in->e = pi->boolop;
  }
  in->kind = pi->cmp;
  in->size = (uint8_t)ptx_type_size(st);
  in->space = ptx_type_is_float(st) ? 2 : ptx_type_is_signed(st) ? 1 : 0;
  if (in->space == 2 && st != PTX_T_F32 && st != PTX_T_F64)
    return px_unsupported(L, "type .%s is not supported yet", ptx_type_name(st));
  in->ftz = (pi->flags & PTX_F_FTZ) ? 1 : 0;
  if (setp) {
    in->d = px_pred(L, &pi->opnd[0], NULL);
    if (pi->dest2 >= 0)
      in->pd2 = px_pred(L, &(struct ptx_operand){.kind = PTX_OPND_REG, .index = (uint32_t)pi->dest2}, NULL);
    in->fn = fast_setp(in);
    if (!in->fn) in->fn = c_setp;
  } else {
    in->d = px_value(L, &pi->opnd[0], itype(pi));
    in->vec = itype(pi) == PTX_T_F32;
    in->fn = c_set;
  }
  return 1;
}

static int lower_select(struct px_lower *L, const struct ptx_instr *pi, struct px_ins *in) {
  enum ptx_type t = itype(pi);
  if (pi->num_operands != 4) return px_refuse(L, "takes 4 operands");
  in->d = px_value(L, &pi->opnd[0], t);
  in->a = px_value(L, &pi->opnd[1], t);
  in->b = px_value(L, &pi->opnd[2], t);
  if (pi->op == PTX_OP_SELP) {
    in->c = px_pred(L, &pi->opnd[3], &in->neg_c);
    in->fn = c_selp;
    return 1;
  }
  in->c = px_value(L, &pi->opnd[3], (enum ptx_type)pi->type2);
  in->kind = pi->type2 == PTX_T_F32;
  in->ftz = (pi->flags & PTX_F_FTZ) ? 1 : 0;
  in->fn = c_slct;
  return 1;
}

/* cvt.rn.f16x2.f32 / cvt.rn.bf16x2.f32 d, a, b. */
static int lower_cvt_pack(struct px_lower *L, const struct ptx_instr *pi, struct px_ins *in) {
  enum ptx_type dt = itype(pi);
  if (pi->type2 != PTX_T_F32 || pi->num_operands != 3)
    return px_refuse(L, "cvt.%s converts two .f32 values (d, a, b)", ptx_type_name(dt));
  if (pi->round != PTX_RND_RN && pi->round != PTX_RND_RZ && pi->round != PTX_RND_RM && pi->round != PTX_RND_RP)
    return px_unsupported(L, "cvt.%s.f32 needs .rn, .rz, .rm or .rp", ptx_type_name(dt));
  if (pi->flags & (PTX_F_FTZ | PTX_F_SAT)) return px_unsupported(L, "cvt.%s.f32 with .ftz or .sat", ptx_type_name(dt));
  if ((pi->flags & PTX_F_SATFINITE) && pi->round != PTX_RND_RN && pi->round != PTX_RND_RZ)
    return px_refuse(L, "cvt.satfinite.%s.f32 rounds .rn or .rz", ptx_type_name(dt));
  in->d = px_value(L, &pi->opnd[0], PTX_T_B32);
  in->a = px_value(L, &pi->opnd[1], PTX_T_F32);
  in->b = px_value(L, &pi->opnd[2], PTX_T_F32);
  in->kind = dt == PTX_T_F16X2 ? PTX_T_F16 : PTX_T_BF16;
  in->vec = pi->round;
  in->size = (uint8_t)(((pi->flags & PTX_F_RELU) ? F_RELU : 0) | ((pi->flags & PTX_F_SATFINITE) ? F_SATFINITE : 0));
  in->fn = v_cvt_pack;
  return 1;
}

/* cvt.rna[.satfinite].tf32.f32 (sm_80), cvt.{rn,rz}[.relu][.satfinite].tf32.f32 (sm_90). */
static int lower_cvt_tf32(struct px_lower *L, const struct ptx_instr *pi, struct px_ins *in) {
  if (pi->type2 != PTX_T_F32 || pi->num_operands != 2) return px_refuse(L, "cvt.tf32 converts one .f32 value");
  if (pi->round != PTX_RND_RNA && pi->round != PTX_RND_RN && pi->round != PTX_RND_RZ)
    return px_refuse(L, "cvt.tf32.f32 needs .rna, .rn or .rz");
  if (pi->flags & (PTX_F_FTZ | PTX_F_SAT)) return px_refuse(L, "cvt.tf32.f32 takes no .ftz or .sat");
  if ((pi->flags & PTX_F_RELU) && pi->round == PTX_RND_RNA) return px_refuse(L, "cvt.rna.tf32.f32 takes no .relu");
  in->d = px_value(L, &pi->opnd[0], PTX_T_B32);
  in->a = px_value(L, &pi->opnd[1], PTX_T_F32);
  in->vec = pi->round;
  in->size = (uint8_t)(((pi->flags & PTX_F_RELU) ? F_RELU : 0) | ((pi->flags & PTX_F_SATFINITE) ? F_SATFINITE : 0));
  in->fn = v_cvt_tf32;
  return 1;
}

static bool cvt_type(enum ptx_type t) {
  return is_int(t) || t == PTX_T_F32 || t == PTX_T_F64 || t == PTX_T_F16 || t == PTX_T_BF16;
}

static int lower_cvt(struct px_lower *L, const struct ptx_instr *pi, struct px_ins *in) {
  enum ptx_type dt = itype(pi), st = (enum ptx_type)pi->type2;
  if (dt == PTX_T_F16X2 || dt == PTX_T_BF16X2) return lower_cvt_pack(L, pi, in);
  if (dt == PTX_T_TF32) return lower_cvt_tf32(L, pi, in);
  if (!cvt_type(dt) || !cvt_type(st))
    return px_unsupported(L, "cvt.%s.%s is not supported yet", ptx_type_name(dt), ptx_type_name(st));
  if (pi->num_operands != 2) return px_refuse(L, "cvt takes 2 operands");
  if ((pi->flags & PTX_F_RELU) && dt != PTX_T_F16 && dt != PTX_T_BF16)
    return px_refuse(L, "cvt.relu converts to .f16 or .bf16 only");
  if (pi->round == PTX_RND_RNA) return px_unsupported(L, "cvt.rna is not supported yet");
  if ((pi->flags & PTX_F_SATFINITE) && (st != PTX_T_F32 || (dt != PTX_T_F16 && dt != PTX_T_BF16) ||
                                        (pi->round != PTX_RND_RN && pi->round != PTX_RND_RZ)))
    return px_refuse(L, "cvt.satfinite converts .f32 to .f16, .bf16 or .tf32, rounding .rn or .rz");
  in->d = px_value(L, &pi->opnd[0], dt);
  in->a = px_value(L, &pi->opnd[1], st);
  in->kind = dt;
  in->e = st;
  in->vec = pi->round;
  in->size = (uint8_t)(float_flags(pi) | ((pi->flags & PTX_F_RELU) ? F_RELU : 0) |
                       ((pi->flags & PTX_F_SATFINITE) ? F_SATFINITE : 0));
  in->fn = v_cvt;
  return 1;
}

static int lower_unary_int(struct px_lower *L, const struct ptx_instr *pi, struct px_ins *in, px_fn fn) {
  if (standard(L, pi, in, 2, itype(pi)) < 0) return -1;
  in->fn = fn;
  return 1;
}

static int lower_abs_neg(struct px_lower *L, const struct ptx_instr *pi, struct px_ins *in) {
  enum ptx_type t = itype(pi);
  bool abs_ = pi->op == PTX_OP_ABS;
  if (ptx_type_is_float(t)) return lower_float(L, pi, in, 2, abs_ ? FOP_ABS : FOP_NEG);
  if (!abs_) return lower_unary_int(L, pi, in, i_neg);
  px_fn fn = t == PTX_T_S16 ? i_abs_s16 : t == PTX_T_S32 ? i_abs_s32 : t == PTX_T_S64 ? i_abs_s64 : NULL;
  return fn ? lower_unary_int(L, pi, in, fn) : px_refuse(L, "abs needs a signed type");
}

static int lower_bits(struct px_lower *L, const struct ptx_instr *pi, struct px_ins *in) {
  enum ptx_type t = itype(pi);
  switch ((enum ptx_op)pi->op) {
  case PTX_OP_POPC:
  case PTX_OP_CLZ:
    if (standard(L, pi, in, 2, t) < 0) return -1;
    in->size = (uint8_t)ptx_type_size(t);
    in->fn = pi->op == PTX_OP_POPC ? b_popc : b_clz;
    return 1;
  case PTX_OP_BREV: return lower_unary_int(L, pi, in, b_brev);
  case PTX_OP_BFIND:
    if (lower_unary_int(L, pi, in, b_bfind) < 0) return -1;
    in->kind = (uint8_t)((ptx_type_is_signed(t) ? 1 : 0) | ((pi->flags & PTX_F_SHIFTAMT) ? 2 : 0));
    return 1;
  case PTX_OP_BFE:
    if (standard(L, pi, in, 4, t) < 0) return -1;
    in->b = px_value(L, &pi->opnd[2], PTX_T_U32);
    in->c = px_value(L, &pi->opnd[3], PTX_T_U32);
    in->kind = ptx_type_is_signed(t);
    in->fn = b_bfe;
    return 1;
  case PTX_OP_BFI:
    if (standard(L, pi, in, 5, t) < 0) return -1;
    in->c = px_value(L, &pi->opnd[3], PTX_T_U32);
    in->e = px_value(L, &pi->opnd[4], PTX_T_U32);
    in->fn = b_bfi;
    return 1;
  case PTX_OP_PRMT:
    if (standard(L, pi, in, 4, PTX_T_B32) < 0) return -1;
    in->kind = pi->mode;
    in->fn = b_prmt;
    return 1;
  case PTX_OP_LOP3:
    if (pi->num_operands != 5 || pi->opnd[4].kind != PTX_OPND_IMM) return px_refuse(L, "lop3 needs an immediate LUT");
    if (standard(L, pi, in, 5, PTX_T_B32) < 0) return -1;
    in->e = PX_NONE;
    in->imm = pi->opnd[4].imm & 0xff;
    in->fn = b_lop3;
    return 1;
  case PTX_OP_DP4A:
  case PTX_OP_DP2A: {
    enum ptx_type ta = (enum ptx_type)pi->type, tb = (enum ptx_type)pi->type2;
    bool ok = (ta == PTX_T_U32 || ta == PTX_T_S32) && (tb == PTX_T_U32 || tb == PTX_T_S32);
    if (!ok) return px_refuse(L, "%s takes .u32 or .s32 source types", ptx_op_name((enum ptx_op)pi->op));
    if (pi->op == PTX_OP_DP2A && pi->mode != PTX_MUL_LO && pi->mode != PTX_MUL_HI)
      return px_refuse(L, "dp2a needs .lo or .hi");
    if (standard(L, pi, in, 4, PTX_T_B32) < 0) return -1;
    in->kind = (uint8_t)((ta == PTX_T_S32 ? 1 : 0) | (tb == PTX_T_S32 ? 2 : 0) | (pi->op == PTX_OP_DP2A ? 4 : 0) |
                         (pi->mode == PTX_MUL_HI ? 8 : 0));
    in->fn = b_dot;
    return 1;
  }
  case PTX_OP_SHF:
    if (standard(L, pi, in, 4, PTX_T_B32) < 0) return -1;
    in->kind = (uint8_t)((pi->mode == PTX_SHF_R ? 1 : 0) | ((pi->flags & PTX_F_CLAMP) ? 2 : 0));
    in->fn = b_shf;
    return 1;
  default: return 0;
  }
}

int px_lower_alu(struct px_lower *L, const struct ptx_instr *pi, struct px_ins *in) {
  enum ptx_type t = itype(pi);
  switch ((enum ptx_op)pi->op) {
  case PTX_OP_ADD: return lower_add_sub(L, pi, in, false);
  case PTX_OP_SUB: return lower_add_sub(L, pi, in, true);
  case PTX_OP_ADDC:
  case PTX_OP_SUBC:
  case PTX_OP_MADC: return lower_carry(L, pi, in);
  case PTX_OP_MUL: return lower_mul_mad(L, pi, in, false);
  case PTX_OP_MAD: return lower_mul_mad(L, pi, in, true);
  case PTX_OP_MUL24:
  case PTX_OP_MAD24:
    if (standard(L, pi, in, pi->op == PTX_OP_MAD24 ? 4 : 3, t) < 0) return -1;
    in->kind = (uint8_t)((ptx_type_is_signed(t) ? 1 : 0) | (pi->mode == PTX_MUL_HI ? 2 : 0) |
                         (pi->op == PTX_OP_MAD24 ? 4 : 0));
    in->fn = i_mul24;
    return 1;
  case PTX_OP_SAD:
    if (standard(L, pi, in, 4, t) < 0) return -1;
    in->kind = ptx_type_is_signed(t);
    in->fn = i_sad;
    return 1;
  case PTX_OP_DIV:
    if (ptx_type_is_float(t)) return lower_float(L, pi, in, 3, FOP_DIV);
    return lower_int_typed(L, pi, in, PICK_INT(i_div, t));
  case PTX_OP_REM: return lower_int_typed(L, pi, in, PICK_INT(i_rem, t));
  case PTX_OP_MIN:
  case PTX_OP_MAX: {
    bool mn = pi->op == PTX_OP_MIN;
    if (ptx_type_is_float(t))
      return lower_float(L, pi, in, 3,
                         (pi->flags & PTX_F_NAN) ? (mn ? FOP_MIN_NAN : FOP_MAX_NAN) : (mn ? FOP_MIN : FOP_MAX));
    return lower_int_typed(L, pi, in, mn ? PICK_INT(i_min, t) : PICK_INT(i_max, t));
  }
  case PTX_OP_ABS:
  case PTX_OP_NEG: return lower_abs_neg(L, pi, in);
  case PTX_OP_FMA: return lower_float(L, pi, in, 4, FOP_FMA);
  case PTX_OP_RCP: return lower_float(L, pi, in, 2, FOP_RCP);
  case PTX_OP_SQRT: return lower_float(L, pi, in, 2, FOP_SQRT);
  case PTX_OP_RSQRT: return lower_float(L, pi, in, 2, FOP_RSQRT);
  case PTX_OP_SIN: return lower_float(L, pi, in, 2, FOP_SIN);
  case PTX_OP_COS: return lower_float(L, pi, in, 2, FOP_COS);
  case PTX_OP_LG2: return lower_float(L, pi, in, 2, FOP_LG2);
  case PTX_OP_EX2: return lower_float(L, pi, in, 2, FOP_EX2);
  case PTX_OP_TANH: return lower_float(L, pi, in, 2, FOP_TANH);
  case PTX_OP_COPYSIGN: return lower_float(L, pi, in, 3, FOP_COPYSIGN);
  case PTX_OP_TESTP:
    if (pi->num_operands != 2) return px_refuse(L, "testp takes 2 operands");
    in->d = px_pred(L, &pi->opnd[0], NULL);
    in->a = px_value(L, &pi->opnd[1], t);
    in->kind = pi->mode;
    in->size = (uint8_t)ptx_type_size(t);
    in->fn = f_testp;
    return 1;
  case PTX_OP_SHL: return lower_shift(L, pi, in, true);
  case PTX_OP_SHR: return lower_shift(L, pi, in, false);
  case PTX_OP_AND:
  case PTX_OP_OR:
  case PTX_OP_XOR:
  case PTX_OP_NOT:
  case PTX_OP_CNOT: return lower_logic(L, pi, in);
  case PTX_OP_POPC:
  case PTX_OP_CLZ:
  case PTX_OP_BREV:
  case PTX_OP_BFIND:
  case PTX_OP_BFE:
  case PTX_OP_BFI:
  case PTX_OP_PRMT:
  case PTX_OP_LOP3:
  case PTX_OP_DP4A:
  case PTX_OP_DP2A:
  case PTX_OP_SHF: return lower_bits(L, pi, in);
  case PTX_OP_SETP:
  case PTX_OP_SET: return lower_compare(L, pi, in);
  case PTX_OP_SELP:
  case PTX_OP_SLCT: return lower_select(L, pi, in);
  case PTX_OP_MOV: return lower_mov(L, pi, in);
  case PTX_OP_CVT: return lower_cvt(L, pi, in);
  default: return 0;
  }
}
