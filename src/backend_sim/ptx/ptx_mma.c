/*
 * Tensor-core instructions: ldmatrix, stmatrix, movmatrix, mma.sync and wmma.load/store/mma.
 * Each runs once for the whole warp (PX_CTL_WARP, all 32 lanes together, as .aligned requires;
 * the SYNC check reports a warp that does not): the fragments are gathered from the lanes'
 * registers into a small matrix, multiplied, and scattered back.
 *
 * Fragment layouts: mma, ldmatrix, stmatrix and movmatrix follow the PTX ISA's figures. wmma's
 * layout is unspecified by the ISA ("target architecture dependent"); the simulator's is
 * documented in docs/ptx.md: element i of lane l is the matrix's element number l * U + i % U in
 * row-major order, U being the matrix's elements divided by 32 (a fragment holding more, as f16
 * A and B fragments do, holds each element more than once).
 *
 * Arithmetic: the products of f16, bf16 and tf32 elements are exact in double; each output element
 * is C plus the sum of its K products, summed in double, rounded once (to nearest even) to the
 * accumulator's type. Integer forms are exact, wrapping at 32 bits or clamping with .satfinite.
 *
 * A fragment's registers are arbitrary, so their slots travel in constant slots, four 16-bit slot
 * numbers to a constant: px_ins.d/.vd[0] for D (or ldmatrix's and wmma.load's destination, or
 * what stmatrix and wmma.store write), .a/.vd[1] A, .b/.vd[2] B, .c/.vd[3] C.
 */
#include <math.h>

#include "ptx_internal.h"

#define HANDLER(name) static void name(struct px_warp *w, const struct px_ins *in, uint32_t m)

/* The parameters of an mma or wmma.mma (in px_ins.imm) and of a wmma.load/store (px_ins.aux). */
struct mx_shape {
  uint8_t m, n, k;
  uint8_t ta, tb, tc, td; /* enum ptx_type */
  uint8_t flags;          /* MX_* */
};
#define MX_WMMA 1u /* the wmma layout (else mma's) */
#define MX_SATFINITE 2u
#define MX_COL 4u /* wmma.load/store: column-major memory */

static uint64_t mx_pack(const struct mx_shape *s) {
  return (uint64_t)s->m | (uint64_t)s->n << 8 | (uint64_t)s->k << 16 | (uint64_t)s->ta << 24 | (uint64_t)s->tb << 32 |
         (uint64_t)s->tc << 40 | (uint64_t)s->td << 48 | (uint64_t)s->flags << 56;
}

static struct mx_shape mx_unpack(uint64_t v) {
  struct mx_shape s = {(uint8_t)v,         (uint8_t)(v >> 8),  (uint8_t)(v >> 16), (uint8_t)(v >> 24),
                       (uint8_t)(v >> 32), (uint8_t)(v >> 40), (uint8_t)(v >> 48), (uint8_t)(v >> 56)};
  return s;
}

/* The register slots of a fragment: up to 8, from the constant slots lo (0-3) and hi (4-7). */
static void frag_slots(const struct px_warp *w, uint16_t lo, uint16_t hi, uint16_t *out) {
  uint64_t a = px_slot(w, lo)[0], b = hi != PX_NONE ? px_slot(w, hi)[0] : ~(uint64_t)0;
  for (unsigned i = 0; i < 4; i++) {
    out[i] = (uint16_t)(a >> (16 * i));
    out[4 + i] = (uint16_t)(b >> (16 * i));
  }
}

/* .aligned: every lane of the warp that has not exited executes it, together. */
static bool aligned_ok(struct px_warp *w, const struct px_ins *in, uint32_t m) {
  if (!(w->blk->checks & GCAP_SIM_CHECK_SYNC) || (w->live & ~m) == 0) return true;
  px_fault(w, in, (unsigned)__builtin_ctz(m), GCAP_ERROR_LAUNCH_FAILURE,
           "lanes 0x%08x of the warp are not executing this .aligned warp-wide instruction with lanes 0x%08x (all "
           "threads of the warp must execute it together, converged)",
           w->live & ~m, m);
  return false;
}

/* ---------------------------------------------------------------- element conversions */

static inline double f16_value(uint32_t h) {
  uint32_t sign = (h & 0x8000u) << 16, e = (h >> 10) & 0x1f, f = h & 0x3ff;
  if (e == 0) { /* zero or subnormal: f units of 2^-24, exact in f32 */
    float v = (float)f * 0x1p-24f;
    return sign ? -v : v;
  }
  return px_f32(sign | (e == 31 ? 0x7f800000u : (e + 112) << 23) | f << 13);
}

/* Rounded to nearest even: half's bits. */
static uint16_t f16_bits(double x) {
  if (isnan(x)) return 0x7fff;
  uint16_t sign = signbit(x) ? 0x8000 : 0;
  x = fabs(x);
  if (x < 0x1p-14) return sign | (uint16_t)nearbyint(x * 0x1p24); /* subnormal (0x400: the least normal) */
  int e;
  (void)frexp(x, &e);
  double q = nearbyint(ldexp(x, 11 - e)); /* 1024 .. 2048 */
  int exp = e - 1;
  if (q == 2048) q = 1024, exp++;
  if (exp > 15) return sign | 0x7c00;
  return (uint16_t)(sign | (unsigned)(exp + 15) << 10 | ((unsigned)q - 1024));
}

static inline double element_value(uint32_t bits, unsigned type) {
  switch (type) {
  case PTX_T_F16: return f16_value(bits & 0xffff);
  case PTX_T_BF16: return px_f32((bits & 0xffff) << 16);
  case PTX_T_TF32: return px_f32(bits & 0xffffe000u); /* the low 13 bits are not read */
  case PTX_T_F32: return px_f32(bits);
  case PTX_T_S8: return (int8_t)bits;
  case PTX_T_U8: return (uint8_t)bits;
  case PTX_T_S32: return (int32_t)bits;
  default: return 0;
  }
}

static inline unsigned type_bytes(unsigned type) {
  switch (type) {
  case PTX_T_F16:
  case PTX_T_BF16: return 2;
  case PTX_T_S8:
  case PTX_T_U8: return 1;
  default: return 4;
  }
}

/* ---------------------------------------------------------------- fragment layouts */

/* Elements of `type` per 32-bit register. */
static inline unsigned per_reg(unsigned type) { return 4 / type_bytes(type); }

/*
 * Row and column of element i of lane l: which 0 A (rows x cols M x K), 1 B (K x N), 2 C/D (M x N).
 * mma (PTX ISA): g = l / 4, t = l % 4; A's and B's registers hold e elements each (2 for 16-bit
 * types, 4 for 8-bit, 1 for tf32); C/D's elements pair up along rows.
 */
static void place(const struct mx_shape *s, unsigned which, unsigned type, unsigned l, unsigned i, unsigned *row,
                  unsigned *col) {
  unsigned rows = which == 1 ? s->k : s->m, cols = which == 0 ? s->k : s->n;
  if (s->flags & MX_WMMA) {
    unsigned u = rows * cols / 32, idx = l * u + i % u;
    *row = idx / cols, *col = idx % cols;
    return;
  }
  unsigned g = l / 4, t = l % 4, e = per_reg(type), r = i / e, j = i % e;
  switch (which) {
  case 0: *row = g + 8 * (r & 1), *col = t * e + j + 4 * e * (r >> 1); return;
  case 1: *row = t * e + j + 4 * e * r, *col = g; return;
  default: *row = g + 8 * (i >> 1), *col = 2 * t + (i & 1); return;
  }
}

/*
 * place() for every element of every lane of one kind of fragment, worked out once per worker
 * thread. An instruction holds up to four at once, one per role (A, B, C, D): each role has its own entries.
 */
struct placement {
  uint64_t key;
  uint8_t row[32][32], col[32][32];
};

static const struct placement *placement_of(const struct mx_shape *s, unsigned which, unsigned type, unsigned n,
                                            unsigned role) {
  static _Thread_local struct placement cache[4][4];
  uint64_t key = (uint64_t)s->m | (uint64_t)s->n << 8 | (uint64_t)s->k << 16 | (uint64_t)(s->flags & MX_WMMA) << 24 |
                 (uint64_t)which << 32 | (uint64_t)type << 40 | (uint64_t)n << 48 | (uint64_t)1 << 63;
  struct placement *p = &cache[role][(s->m + s->n + s->k + type + n) % 4];
  if (p->key != key) {
    for (unsigned l = 0; l < 32; l++)
      for (unsigned i = 0; i < n; i++) {
        unsigned r, c;
        place(s, which, type, l, i, &r, &c);
        p->row[l][i] = (uint8_t)r, p->col[l][i] = (uint8_t)c;
      }
    p->key = key;
  }
  return p;
}

/* Bits of element i of a fragment whose registers are regs (of 32 lanes), elements of `type`. */
static inline uint32_t frag_get(uint64_t *const *regs, unsigned type, unsigned l, unsigned i) {
  unsigned e = per_reg(type), bits = 32 / e;
  uint32_t word = (uint32_t)regs[i / e][l];
  return e == 1 ? word : (word >> (bits * (i % e))) & ((1u << bits) - 1);
}

static inline void frag_set(uint64_t *const *regs, unsigned type, unsigned l, unsigned i, uint32_t v) {
  unsigned e = per_reg(type), bits = 32 / e;
  if (e == 1) {
    regs[i][l] = v;
    return;
  }
  unsigned sh = bits * (i % e);
  uint32_t mask = ((1u << bits) - 1) << sh, word = (uint32_t)regs[i / e][l];
  regs[i / e][l] = (word & ~mask) | ((v << sh) & mask);
}

/* Elements of a fragment of `which` per lane: its registers times their elements. */
static unsigned frag_elems(unsigned nregs, unsigned type) { return nregs * per_reg(type); }

/* ---------------------------------------------------------------- mma */

#define MX_MAX 32 /* rows or columns of a matrix, at most */

HANDLER(w_mma) {
  if (!aligned_ok(w, in, m)) return;
  struct mx_shape s = mx_unpack((uint64_t)in->imm);
  uint16_t ds[8], as[8], bs[8], cs[8];
  frag_slots(w, in->d, in->vd[0], ds);
  frag_slots(w, in->a, in->vd[1], as);
  frag_slots(w, in->b, in->vd[2], bs);
  frag_slots(w, in->c, in->vd[3], cs);
  uint64_t *dr[8], *ar[8], *br[8], *cr[8];
  for (unsigned i = 0; i < 8; i++) {
    dr[i] = ds[i] != PX_NONE ? px_slot(w, ds[i]) : NULL;
    ar[i] = as[i] != PX_NONE ? px_slot(w, as[i]) : NULL;
    br[i] = bs[i] != PX_NONE ? px_slot(w, bs[i]) : NULL;
    cr[i] = cs[i] != PX_NONE ? px_slot(w, cs[i]) : NULL;
  }
  unsigned na = frag_elems(in->kind & 15, s.ta), nb = frag_elems(in->kind >> 4, s.tb);
  unsigned nc = frag_elems(in->size, s.tc), nd = frag_elems(in->vec, s.td);
  const struct placement *pa = placement_of(&s, 0, s.ta, na, 0), *pb = placement_of(&s, 1, s.tb, nb, 1);
  const struct placement *pc = placement_of(&s, 2, s.tc, nc, 2), *pd = placement_of(&s, 2, s.td, nd, 3);
  static _Thread_local double A[MX_MAX][MX_MAX], Bt[MX_MAX][MX_MAX], C[MX_MAX][MX_MAX]; /* Bt: B transposed */
  /* Gathered from every lane (with the SYNC check off, lanes not executing it give what they hold). */
  for (unsigned l = 0; l < 32; l++) {
    for (unsigned i = 0; i < na; i++) A[pa->row[l][i]][pa->col[l][i]] = element_value(frag_get(ar, s.ta, l, i), s.ta);
    for (unsigned i = 0; i < nb; i++) Bt[pb->col[l][i]][pb->row[l][i]] = element_value(frag_get(br, s.tb, l, i), s.tb);
    for (unsigned i = 0; i < nc; i++) C[pc->row[l][i]][pc->col[l][i]] = element_value(frag_get(cr, s.tc, l, i), s.tc);
  }
  bool integer = s.td == PTX_T_S32;
  PX_LANES(m, {
    for (unsigned i = 0; i < nd; i++) {
      unsigned r = pd->row[l][i], c = pd->col[l][i];
      const double *a = A[r], *b = Bt[c];
      uint32_t out;
      if (integer) {
        int64_t acc = (int64_t)C[r][c];
        for (unsigned k = 0; k < s.k; k++) acc += (int64_t)a[k] * (int64_t)b[k];
        if (s.flags & MX_SATFINITE) acc = acc > INT32_MAX ? INT32_MAX : acc < INT32_MIN ? INT32_MIN : acc;
        out = (uint32_t)acc;
      } else {
        double acc = C[r][c];
        for (unsigned k = 0; k < s.k; k++) acc += a[k] * b[k];
        if (s.td == PTX_T_F16) out = f16_bits(acc);
        else out = isnan(acc) ? 0x7fffffffu : (uint32_t)px_bits32((float)acc);
      }
      frag_set(dr, s.td, l, i, out);
    }
  });
}

/* ---------------------------------------------------------------- ldmatrix, stmatrix, movmatrix */

static inline uint64_t address_of(const struct px_warp *w, const struct px_ins *in, unsigned l) {
  uint64_t a = (uint64_t)in->imm;
  if (in->a != PX_NONE) a += px_slot(w, in->a)[l];
  if (in->sym_local) a += w->f->local_base;
  return a;
}

/* ldmatrix/stmatrix: in->kind matrices (1, 2, 4), in->vec 1 for .trans; matrix q's row r: lane 8q + r's address. */
static void matrix_rows(struct px_warp *w, const struct px_ins *in, uint32_t m, bool store) {
  if (!aligned_ok(w, in, m)) return;
  uint16_t ds[8];
  frag_slots(w, in->d, PX_NONE, ds);
  unsigned num = in->kind;
  bool trans = in->vec;
  uint16_t tile[4][8][8];
  w->blk->access_seq++;
  if (store)
    for (unsigned q = 0; q < num; q++) {
      const uint64_t *R = px_slot(w, ds[q]);
      for (unsigned l = 0; l < 32; l++)
        for (unsigned h = 0; h < 2; h++) {
          uint16_t v = (uint16_t)(R[l] >> (16 * h));
          if (trans) tile[q][2 * (l % 4) + h][l / 4] = v;
          else tile[q][l / 4][2 * (l % 4) + h] = v;
        }
    }
  for (unsigned q = 0; q < num; q++)
    for (unsigned r = 0; r < 8; r++) {
      unsigned src = 8 * q + r;
      unsigned char *p = px_access(w, in, src, address_of(w, in, src), in->space, 16, store);
      if (!p) return;
      if (store) memcpy(p, tile[q][r], 16);
      else memcpy(tile[q][r], p, 16);
    }
  if (store) return;
  for (unsigned q = 0; q < num; q++) {
    uint64_t *D = px_slot(w, ds[q]);
    PX_LANES(m, {
      unsigned row = l / 4, col = 2 * (l % 4);
      uint32_t lo = trans ? tile[q][col][row] : tile[q][row][col];
      uint32_t hi = trans ? tile[q][col + 1][row] : tile[q][row][col + 1];
      D[l] = lo | hi << 16;
    });
  }
}

HANDLER(w_ldmatrix) { matrix_rows(w, in, m, false); }
HANDLER(w_stmatrix) { matrix_rows(w, in, m, true); }

/* movmatrix.sync.aligned.m8n8.trans.b16 d, a: the transpose, in the same fragment layout. */
HANDLER(w_movmatrix) {
  if (!aligned_ok(w, in, m)) return;
  uint16_t ds[8], as[8];
  frag_slots(w, in->d, PX_NONE, ds);
  frag_slots(w, in->a, PX_NONE, as);
  const uint64_t *A = px_slot(w, as[0]);
  uint16_t M[8][8];
  for (unsigned l = 0; l < 32; l++) {
    M[l / 4][2 * (l % 4)] = (uint16_t)A[l];
    M[l / 4][2 * (l % 4) + 1] = (uint16_t)(A[l] >> 16);
  }
  uint64_t *D = px_slot(w, ds[0]);
  PX_LANES(m, {
    unsigned row = l / 4, col = 2 * (l % 4);
    D[l] = (uint32_t)M[col][row] | (uint32_t)M[col + 1][row] << 16;
  });
}

/* ---------------------------------------------------------------- wmma.load, wmma.store */

/*
 * in->aux: the shape (mx_pack's low 32 bits: m, n, k, and the element type in ta); in->kind the
 * fragment (0 A, 1 B, 2 C/D); in->vec its registers; in->b the stride (elements) slot.
 */
static void wmma_memory(struct px_warp *w, const struct px_ins *in, uint32_t m, bool store) {
  if (!aligned_ok(w, in, m)) return;
  struct mx_shape s = mx_unpack(in->aux | (uint64_t)(MX_WMMA | (in->size ? MX_COL : 0)) << 56);
  uint16_t ds[8];
  frag_slots(w, in->d, in->vd[0], ds);
  uint64_t *regs[8];
  for (unsigned i = 0; i < 8; i++) regs[i] = ds[i] != PX_NONE ? px_slot(w, ds[i]) : NULL;
  unsigned type = s.ta, bytes = type_bytes(type), n = frag_elems(in->vec, type);
  const uint64_t *S = px_slot(w, in->b);
  w->blk->access_seq++;
  const struct placement *pl = placement_of(&s, in->kind, type, n, in->kind);
  PX_LANES(m, {
    uint64_t base = address_of(w, in, l), stride = (uint32_t)S[l];
    for (unsigned i = 0; i < n; i++) {
      unsigned r = pl->row[l][i], c = pl->col[l][i];
      uint64_t at = base + ((s.flags & MX_COL) ? (uint64_t)c * stride + r : (uint64_t)r * stride + c) * bytes;
      unsigned char *p = px_access(w, in, l, at, in->space, bytes, store);
      if (!p) return;
      uint32_t v = 0;
      if (store) {
        v = frag_get(regs, type, l, i);
        memcpy(p, &v, bytes); /* little-endian host: the low bytes */
      } else {
        memcpy(&v, p, bytes);
        frag_set(regs, type, l, i, v);
      }
    }
  });
}

HANDLER(w_wmma_load) { wmma_memory(w, in, m, false); }
HANDLER(w_wmma_store) { wmma_memory(w, in, m, true); }

/* ---------------------------------------------------------------- lowering */

/*
 * The slots of vector operand o's registers (exactly `want`), packed into constant slots *lo and
 * *hi (PX_NONE when want <= 4). Registers only: a fragment element is never an immediate or `_`.
 */
static int pack_slots(struct px_lower *L, const struct ptx_operand *o, unsigned want, const char *what, uint16_t *lo,
                      uint16_t *hi) {
  struct ptx_elem one = {.kind = PTX_OPND_REG, .reg = o->index};
  const struct ptx_elem *elems = o->kind == PTX_OPND_VEC ? o->elems : &one;
  unsigned count = o->kind == PTX_OPND_VEC ? o->count : o->kind == PTX_OPND_REG ? 1 : 0;
  if (count != want) return px_refuse(L, "%s must be a vector of %u registers", what, want);
  uint64_t packed[2] = {0, 0};
  for (unsigned i = 0; i < 8; i++) packed[i / 4] |= (uint64_t)PX_NONE << (16 * (i % 4));
  for (unsigned i = 0; i < count; i++) {
    if (elems[i].kind != PTX_OPND_REG) return px_refuse(L, "%s must be registers", what);
    uint16_t slot = px_value(L, &(struct ptx_operand){.kind = PTX_OPND_REG, .index = elems[i].reg}, PTX_T_B32);
    if (slot == PX_NONE) return -1;
    packed[i / 4] &= ~((uint64_t)0xffff << (16 * (i % 4)));
    packed[i / 4] |= (uint64_t)slot << (16 * (i % 4));
  }
  *lo = px_const(L, packed[0]);
  *hi = want > 4 ? px_const(L, packed[1]) : PX_NONE;
  return *lo == PX_NONE || (want > 4 && *hi == PX_NONE) ? -1 : 1;
}

static int warp_wide(struct px_lower *L, const struct ptx_instr *pi, struct px_ins *in, px_fn fn) {
  if (!(pi->flags & PTX_F_SYNC) || !(pi->flags & PTX_F_ALIGNED))
    return px_refuse(L, "%s needs .sync.aligned", ptx_op_name((enum ptx_op)pi->op));
  in->e = px_const(L, PX_FULL); /* the whole warp takes part */
  in->fn = fn;
  in->ctl = PX_CTL_WARP;
  return in->e == PX_NONE ? -1 : 1;
}

static bool is_float_input(unsigned t) { return t == PTX_T_F16 || t == PTX_T_BF16 || t == PTX_T_TF32; }
static bool is_int_input(unsigned t) { return t == PTX_T_S8 || t == PTX_T_U8; }

/* Registers of a fragment: elements divided among 32 lanes, packed in 32-bit registers. */
static unsigned regs_for(unsigned rows, unsigned cols, unsigned type) { return rows * cols * type_bytes(type) / 128; }

static int lower_mma(struct px_lower *L, const struct ptx_instr *pi, struct px_ins *in) {
  const struct ptx_matrix *mx = &pi->mx;
  struct mx_shape s = {mx->m, mx->n, mx->k, 0, 0, 0, 0, 0};
  bool wmma = pi->op == PTX_OP_WMMA;
  if (mx->num_types == 4) s.td = mx->types[0], s.ta = mx->types[1], s.tb = mx->types[2], s.tc = mx->types[3];
  else if (mx->num_types == 2 && wmma) s.td = mx->types[0], s.ta = s.tb = PTX_T_F16, s.tc = mx->types[1];
  else if (!mx->other) return px_refuse(L, "needs the types of D, A, B and C");
  bool ok_types;
  if (is_int_input(s.ta)) ok_types = is_int_input(s.tb) && s.td == PTX_T_S32 && s.tc == PTX_T_S32;
  else if (s.ta == PTX_T_F16)
    ok_types =
        s.tb == PTX_T_F16 && (s.td == PTX_T_F32 || s.td == PTX_T_F16) && (s.tc == PTX_T_F32 || s.tc == PTX_T_F16);
  else ok_types = is_float_input(s.ta) && s.tb == s.ta && s.td == PTX_T_F32 && s.tc == PTX_T_F32;
  bool shape_ok;
  if (wmma) {
    s.flags = MX_WMMA;
    shape_ok = s.ta == PTX_T_TF32
                   ? s.m == 16 && s.n == 16 && s.k == 8
                   : s.k == 16 && ((s.m == 16 && s.n == 16) || (s.m == 32 && s.n == 8) || (s.m == 8 && s.n == 32));
  } else {
    unsigned e = ok_types ? per_reg(s.ta) : 1;
    shape_ok = mx->layouts == 2 && mx->num_layouts == 2 && s.m == 16 && s.n == 8 && (s.k == 4 * e || s.k == 8 * e);
  }
  if (mx->other || !ok_types || !shape_ok)
    return px_unsupported(L, "the simulator does not run this %s form yet (it runs %s)", wmma ? "wmma.mma" : "mma",
                          wmma ? "m16n16k16, m32n8k16 and m8n32k16 with f16, bf16, s8 or u8 inputs, and m16n16k8 tf32"
                               : ".m16n8k8/.m16n8k16 .row.col f16 and bf16, .m16n8k4/.m16n8k8 tf32, "
                                 ".m16n8k16/.m16n8k32 s8 and u8");
  if (mx->satfinite) s.flags |= MX_SATFINITE;
  unsigned na = wmma && s.ta == PTX_T_F16 ? 8 : regs_for(s.m, s.k, s.ta);
  unsigned nb = wmma && s.tb == PTX_T_F16 ? 8 : regs_for(s.k, s.n, s.tb);
  unsigned nc = regs_for(s.m, s.n, s.tc), nd = regs_for(s.m, s.n, s.td);
  if (warp_wide(L, pi, in, w_mma) < 0) return -1;
  if (pack_slots(L, &pi->opnd[0], nd, "D", &in->d, &in->vd[0]) < 0 ||
      pack_slots(L, &pi->opnd[1], na, "A", &in->a, &in->vd[1]) < 0 ||
      pack_slots(L, &pi->opnd[2], nb, "B", &in->b, &in->vd[2]) < 0 ||
      pack_slots(L, &pi->opnd[3], nc, "C", &in->c, &in->vd[3]) < 0)
    return -1;
  in->kind = (uint8_t)(na | nb << 4);
  in->size = (uint8_t)nc;
  in->vec = (uint8_t)nd;
  in->imm = (int64_t)mx_pack(&s);
  return 1;
}

static int lower_matrix_rows(struct px_lower *L, const struct ptx_instr *pi, struct px_ins *in) {
  const struct ptx_matrix *mx = &pi->mx;
  bool store = pi->op == PTX_OP_STMATRIX;
  if (mx->other || mx->m != 8 || mx->n != 8 || mx->k != 0 || mx->num_types != 1 || mx->types[0] != PTX_T_B16)
    return px_unsupported(L, "the simulator runs %s.m8n8 .b16 only", store ? "stmatrix" : "ldmatrix");
  if (mx->num == 0) return px_refuse(L, "needs .x1, .x2 or .x4");
  if (warp_wide(L, pi, in, store ? w_stmatrix : w_ldmatrix) < 0) return -1;
  const struct ptx_operand *addr = &pi->opnd[store ? 0 : 1], *regs = &pi->opnd[store ? 1 : 0];
  if (!px_address(L, addr, in)) return -1;
  if (!in->sym_local) in->space = pi->space;
  in->kind = mx->num;
  in->vec = mx->trans;
  return pack_slots(L, regs, mx->num, store ? "the source" : "the destination", &in->d, &in->vd[0]);
}

static int lower_movmatrix(struct px_lower *L, const struct ptx_instr *pi, struct px_ins *in) {
  const struct ptx_matrix *mx = &pi->mx;
  if (mx->other || mx->m != 8 || mx->n != 8 || !mx->trans || mx->num_types != 1 || mx->types[0] != PTX_T_B16)
    return px_unsupported(L, "the simulator runs movmatrix.sync.aligned.m8n8.trans.b16 only");
  if (warp_wide(L, pi, in, w_movmatrix) < 0) return -1;
  uint16_t none;
  if (pack_slots(L, &pi->opnd[0], 1, "the destination", &in->d, &none) < 0) return -1;
  return pack_slots(L, &pi->opnd[1], 1, "the source", &in->a, &none);
}

static int lower_wmma_memory(struct px_lower *L, const struct ptx_instr *pi, struct px_ins *in) {
  const struct ptx_matrix *mx = &pi->mx;
  bool store = mx->wop == PTX_WMMA_STORE;
  unsigned which = mx->frag == 'a' ? 0 : mx->frag == 'b' ? 1 : 2;
  unsigned type = mx->num_types == 1 ? mx->types[0] : PTX_T_NONE;
  bool tf32_shape = mx->m == 16 && mx->n == 16 && mx->k == 8;
  bool half_shape =
      mx->k == 16 && ((mx->m == 16 && mx->n == 16) || (mx->m == 32 && mx->n == 8) || (mx->m == 8 && mx->n == 32));
  bool shape_ok = half_shape || (tf32_shape && type == (which < 2 ? PTX_T_TF32 : PTX_T_F32));
  if (which < 2 && type == PTX_T_TF32) shape_ok = tf32_shape;
  bool type_ok = which < 2 ? is_float_input(type) || is_int_input(type)
                           : type == PTX_T_F32 || type == PTX_T_F16 || type == PTX_T_S32;
  if (type == PTX_T_F32 && which < 2) type_ok = false;
  if (mx->other || !shape_ok || !type_ok || (store && which != 2) || mx->num_layouts != 1)
    return px_unsupported(L, "the simulator does not run this wmma.%s form yet", store ? "store" : "load");
  if (warp_wide(L, pi, in, store ? w_wmma_store : w_wmma_load) < 0) return -1;
  unsigned rows = which == 1 ? mx->k : mx->m, cols = which == 0 ? mx->k : mx->n;
  unsigned nregs = type == PTX_T_F16 && which < 2 ? 8 : regs_for(rows, cols, type);
  const struct ptx_operand *addr = &pi->opnd[store ? 0 : 1], *regs = &pi->opnd[store ? 1 : 0];
  if (!px_address(L, addr, in)) return -1;
  if (!in->sym_local) in->space = pi->space;
  if (pi->num_operands == 3) {
    in->b = px_value(L, &pi->opnd[2], PTX_T_U32);
  } else { /* no stride: the matrix's own width (row-major) or height */
    in->b = px_const(L, (mx->layouts & 1) ? rows : cols);
  }
  if (in->b == PX_NONE) return -1;
  struct mx_shape s = {mx->m, mx->n, mx->k, (uint8_t)type, 0, 0, 0, 0};
  in->aux = (uint32_t)(mx_pack(&s) & 0xffffffffu); /* m, n, k, the element type */
  in->kind = (uint8_t)which;
  in->vec = (uint8_t)nregs;
  in->size = mx->layouts & 1;
  return pack_slots(L, regs, nregs, store ? "the source" : "the destination", &in->d, &in->vd[0]);
}

int px_lower_mma(struct px_lower *L, const struct ptx_instr *pi, struct px_ins *in) {
  switch ((enum ptx_op)pi->op) {
  case PTX_OP_MMA: return lower_mma(L, pi, in);
  case PTX_OP_LDMATRIX:
  case PTX_OP_STMATRIX: return lower_matrix_rows(L, pi, in);
  case PTX_OP_MOVMATRIX: return lower_movmatrix(L, pi, in);
  case PTX_OP_WMMA: return pi->mx.wop == PTX_WMMA_MMA ? lower_mma(L, pi, in) : lower_wmma_memory(L, pi, in);
  default: return 0;
  }
}
