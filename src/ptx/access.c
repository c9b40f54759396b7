/*
 * How an entry uses its parameters as addresses (race analysis), read from its instructions.
 *
 * Each register carries the set of origins its value may derive from: the entry's parameters (a
 * load from the parameter), a variable's address (a symbol), and "foreign" (a 64-bit value loaded
 * from memory or packed from pieces: possibly a pointer the kernel did not get as an argument).
 * Every instruction that writes a register from others adds their origins to it, wherever it
 * stands (flow-insensitive), until nothing changes. Then the loads, stores, atomics and
 * reductions say what each parameter is used for. Whatever the analysis cannot follow makes the
 * parameter (or every parameter) UNKNOWN: a derived value stored to memory or passed to a call,
 * the parameter's own address taken, a call to a function that may write global memory, an
 * opcode whose operands are not decoded (texture, surface, wgmma, brx), or a write through an
 * address of no known origin. Asynchronous copies read their global source (or write their
 * global destination); wmma.load and wmma.store access memory as ld and st do; ldmatrix,
 * stmatrix, mbarrier and the register-only matrix instructions touch no global memory. A read through such an address
 * (or in a called function) may read any allocation: every parameter then counts as read as well.
 */
#include <string.h>

#include "base/alloc.h"
#include "ptx.h"

enum { READS = 1, WRITES = 2 };

struct taint {
  const struct ptx_func *f;
  size_t words;      /* 64-bit words per register's set */
  uint64_t *sets;    /* num_regs * words */
  uint64_t *scratch; /* words */
  size_t sym_bit, foreign_bit;
};

static uint64_t *set_of(struct taint *t, uint32_t reg) { return t->sets + (size_t)reg * t->words; }
static void add_bit(uint64_t *s, size_t bit) { s[bit / 64] |= (uint64_t)1 << (bit % 64); }
static bool has_bit(const uint64_t *s, size_t bit) { return (s[bit / 64] >> (bit % 64)) & 1u; }

static bool valid_reg(const struct taint *t, uint32_t reg) { return reg < t->f->num_regs; }

/* Adds the origins of one source operand to acc. */
static void origins_of(struct taint *t, const struct ptx_operand *o, uint64_t *acc) {
  switch (o->kind) {
  case PTX_OPND_REG:
    if (valid_reg(t, o->index))
      for (size_t w = 0; w < t->words; w++) acc[w] |= set_of(t, o->index)[w];
    break;
  case PTX_OPND_VEC:
    for (unsigned e = 0; e < o->count && e < PTX_MAX_VEC; e++)
      if (o->elems[e].kind == PTX_OPND_REG && valid_reg(t, o->elems[e].reg))
        for (size_t w = 0; w < t->words; w++) acc[w] |= set_of(t, o->elems[e].reg)[w];
    break;
  case PTX_OPND_SYM:
    if (o->scope != PTX_SCOPE_PARAM) add_bit(acc, t->sym_bit);
    break;
  case PTX_OPND_ADDR:
    if (o->base == PTX_ADDR_REG) {
      struct ptx_operand r = {.kind = PTX_OPND_REG, .index = o->index};
      origins_of(t, &r, acc);
    } else if (o->base == PTX_ADDR_SYM && o->scope != PTX_SCOPE_PARAM) {
      add_bit(acc, t->sym_bit);
    }
    break;
  default: break;
  }
}

/* Adds acc to the destination operand's registers; true when one of them grew. */
static bool flow_into(struct taint *t, const struct ptx_operand *o, const uint64_t *acc) {
  bool grew = false;
  uint32_t regs[PTX_MAX_VEC];
  unsigned n = 0;
  if (o->kind == PTX_OPND_REG) regs[n++] = o->index;
  if (o->kind == PTX_OPND_VEC)
    for (unsigned e = 0; e < o->count && e < PTX_MAX_VEC; e++)
      if (o->elems[e].kind == PTX_OPND_REG) regs[n++] = o->elems[e].reg;
  for (unsigned i = 0; i < n; i++) {
    if (!valid_reg(t, regs[i])) continue;
    uint64_t *s = set_of(t, regs[i]);
    for (size_t w = 0; w < t->words; w++) {
      grew |= (s[w] | acc[w]) != s[w];
      s[w] |= acc[w];
    }
  }
  return grew;
}

static bool space_is_global(const struct ptx_instr *in) {
  return in->space == PTX_SPACE_GLOBAL || in->space == PTX_SPACE_GENERIC;
}

static bool is_wide(const struct ptx_instr *in) { return ptx_type_size((enum ptx_type)in->type) >= 8; }

/* The entry parameter an address or symbol operand names, or -1. */
static long param_named(const struct ptx_operand *o) {
  bool sym = o->kind == PTX_OPND_SYM || (o->kind == PTX_OPND_ADDR && o->base == PTX_ADDR_SYM);
  return sym && o->scope == PTX_SCOPE_PARAM ? (long)o->index : -1;
}

/* Instructions whose first operand is not a register they write. */
static bool writes_first_operand(enum ptx_op op) {
  switch (op) {
  case PTX_OP_ST:
  case PTX_OP_RED:
  case PTX_OP_PREFETCH:
  case PTX_OP_PREFETCHU:
  case PTX_OP_BAR:
  case PTX_OP_BARRIER:
  case PTX_OP_MEMBAR:
  case PTX_OP_FENCE:
  case PTX_OP_BRA:
  case PTX_OP_CALL:
  case PTX_OP_RET:
  case PTX_OP_EXIT:
  case PTX_OP_TRAP:
  case PTX_OP_BRKPT:
  case PTX_OP_NANOSLEEP:
  case PTX_OP_PMEVENT: return false;
  default: return true;
  }
}

/* Instructions whose destination is a value read from memory (never an address computed from
 * their sources). */
static bool memory_value(const struct ptx_instr *in) {
  switch ((enum ptx_op)in->op) {
  case PTX_OP_LD:
  case PTX_OP_LDU:
  case PTX_OP_ATOM:
  case PTX_OP_LDMATRIX: return true;
  case PTX_OP_WMMA: return in->mx.wop == PTX_WMMA_LOAD;
  default: return false;
  }
}

/* The global side of an asynchronous copy: its source, or its destination when that is global
 * (the bulk copy from shared memory out); NULL for the forms that copy nothing. */
static const struct ptx_operand *async_global(const struct ptx_instr *in, unsigned *how) {
  bool copies = in->mode == PTX_CP_ASYNC_CA || in->mode == PTX_CP_ASYNC_CG || in->mode == PTX_CP_ASYNC_BULK;
  if (in->op != PTX_OP_CP || !copies || in->num_operands < 2) return NULL;
  bool out = in->space == PTX_SPACE_GLOBAL;
  *how = out ? WRITES : READS;
  return &in->opnd[out ? 0 : 1];
}

/* One pass over the body: true when a register's origins grew. */
static bool propagate(struct taint *t) {
  const struct ptx_func *f = t->f;
  bool grew = false;
  for (size_t i = 0; i < f->num_instrs; i++) {
    const struct ptx_instr *in = &f->instrs[i];
    enum ptx_op op = (enum ptx_op)in->op;
    if (in->num_operands == 0 || !writes_first_operand(op)) continue;
    uint64_t *acc = t->scratch;
    memset(acc, 0, t->words * sizeof *acc);
    if (memory_value(in)) {
      /* What a load gives is the memory's value, not the address: a parameter's value, or a
       * 64-bit value of unknown origin. */
      long p = op == PTX_OP_LD && in->num_operands > 1 ? param_named(&in->opnd[1]) : -1;
      if (p >= 0 && in->opnd[1].kind == PTX_OPND_ADDR && (size_t)p < f->num_params) add_bit(acc, (size_t)p);
      else if (is_wide(in)) add_bit(acc, t->foreign_bit);
    } else {
      for (unsigned k = 1; k < in->num_operands && k < PTX_MAX_OPERANDS; k++) {
        origins_of(t, &in->opnd[k], acc);
        if (in->opnd[k].kind == PTX_OPND_VEC) add_bit(acc, t->foreign_bit); /* pieces packed into one value */
      }
    }
    grew |= flow_into(t, &in->opnd[0], acc);
    if (in->dest2 >= 0) {
      struct ptx_operand d2 = {.kind = PTX_OPND_REG, .index = (uint32_t)in->dest2};
      grew |= flow_into(t, &d2, acc);
    }
  }
  return grew;
}

struct verdict {
  unsigned *uses;    /* per parameter: READS | WRITES */
  bool *escapes;     /* per parameter: followed no further */
  bool reads_beyond; /* reads through an address of no known origin: every parameter counts as read */
  bool everything;   /* every parameter UNKNOWN */
};

/* A value operand's parameters escape (stored, passed on). */
static void escape_values(struct taint *t, const struct ptx_operand *o, struct verdict *v) {
  uint64_t *acc = t->scratch;
  memset(acc, 0, t->words * sizeof *acc);
  origins_of(t, o, acc);
  for (size_t p = 0; p < t->f->num_params; p++)
    if (has_bit(acc, p)) v->escapes[p] = true;
  long named = param_named(o);
  if (named >= 0 && (size_t)named < t->f->num_params) v->escapes[named] = true;
}

/* An access through an address operand. */
static void access_through(struct taint *t, const struct ptx_instr *in, const struct ptx_operand *addr, unsigned how,
                           struct verdict *v) {
  uint64_t *acc = t->scratch;
  memset(acc, 0, t->words * sizeof *acc);
  origins_of(t, addr, acc);
  bool any_param = false;
  for (size_t p = 0; p < t->f->num_params; p++)
    if (has_bit(acc, p)) v->uses[p] |= how, any_param = true;
  long named = param_named(addr);
  if (named >= 0 && (size_t)named < t->f->num_params && !(in->op == PTX_OP_LD && in->space == PTX_SPACE_PARAM))
    v->escapes[named] = true; /* a parameter's own slot written or read as other memory */
  /* An access that may land in memory no argument points into (a pointer loaded from memory, an
   * absolute address): it could be any allocation, an argument's included. */
  bool symbol_only = !any_param && has_bit(acc, t->sym_bit);
  if (space_is_global(in) && (has_bit(acc, t->foreign_bit) || (!any_param && !symbol_only))) {
    if (how & WRITES) v->everything = true;
    v->reads_beyond = true;
  }
}

enum effect { TOUCHES_NOTHING, READS_GLOBAL, CANNOT_TELL };

/* What a called function does to global memory, its own callees included (a few levels deep). */
static enum effect callee_effect(const struct ptx_module *m, const struct ptx_instr *call, unsigned depth) {
  if (call->num_operands < 1 || call->opnd[0].kind != PTX_OPND_FUNC || call->opnd[0].index >= m->num_funcs)
    return CANNOT_TELL;
  const struct ptx_func *f = &m->funcs[call->opnd[0].index];
  if (f->is_extern) /* printf and assert's report write nothing the kernel's arguments point into */
    return strcmp(f->name, "vprintf") == 0 || strcmp(f->name, "__assertfail") == 0 ? TOUCHES_NOTHING : CANNOT_TELL;
  if (!f->has_body || depth >= 8) return CANNOT_TELL;
  enum effect e = TOUCHES_NOTHING;
  for (size_t i = 0; i < f->num_instrs && e != CANNOT_TELL; i++) {
    const struct ptx_instr *in = &f->instrs[i];
    switch ((enum ptx_op)in->op) {
    case PTX_OP_LD:
    case PTX_OP_LDU:
      if (space_is_global(in)) e = READS_GLOBAL;
      break;
    case PTX_OP_ST:
    case PTX_OP_ATOM:
    case PTX_OP_RED:
      if (space_is_global(in)) e = CANNOT_TELL;
      break;
    case PTX_OP_CALL: {
      enum effect inner = callee_effect(m, in, depth + 1);
      if (inner > e) e = inner;
      break;
    }
    case PTX_OP_CP:
    case PTX_OP_WMMA: {
      unsigned how = READS;
      bool global = in->op == PTX_OP_CP ? async_global(in, &how) != NULL
                                        : in->mx.wop != PTX_WMMA_MMA && in->space != PTX_SPACE_SHARED;
      if (in->op == PTX_OP_WMMA && in->mx.wop == PTX_WMMA_STORE) how = WRITES;
      if (global) e = how == WRITES ? CANNOT_TELL : (e > READS_GLOBAL ? e : READS_GLOBAL);
      break;
    }
    case PTX_OP_MBARRIER:
    case PTX_OP_MMA:
    case PTX_OP_LDMATRIX:
    case PTX_OP_STMATRIX:
    case PTX_OP_MOVMATRIX: break;
    default:
      if (in->op >= PTX_OP_TEX || in->op == PTX_OP_BRX) e = CANNOT_TELL;
      break;
    }
  }
  return e;
}

/* Asynchronous copies, mbarriers and matrix instructions; false for any other opcode. */
static bool judge_async_matrix(struct taint *t, const struct ptx_instr *in, struct verdict *v) {
  unsigned how = 0;
  const struct ptx_operand *global = async_global(in, &how);
  switch ((enum ptx_op)in->op) {
  case PTX_OP_CP:
    if (global) {
      struct ptx_instr as_global = *in; /* the side the analysis follows is global memory */
      as_global.space = PTX_SPACE_GLOBAL;
      access_through(t, &as_global, global, how, v);
    }
    return true;
  case PTX_OP_WMMA:
    if (in->mx.wop == PTX_WMMA_LOAD && in->num_operands > 1) access_through(t, in, &in->opnd[1], READS, v);
    if (in->mx.wop == PTX_WMMA_STORE && in->num_operands > 0) access_through(t, in, &in->opnd[0], WRITES, v);
    return true;
  case PTX_OP_MBARRIER:
  case PTX_OP_MMA:
  case PTX_OP_LDMATRIX:
  case PTX_OP_STMATRIX:
  case PTX_OP_MOVMATRIX: return true; /* shared memory and registers only */
  default: return false;
  }
}

static void judge(struct taint *t, const struct ptx_module *m, struct verdict *v) {
  const struct ptx_func *f = t->f;
  for (size_t i = 0; i < f->num_instrs && !v->everything; i++) {
    const struct ptx_instr *in = &f->instrs[i];
    enum ptx_op op = (enum ptx_op)in->op;
    unsigned n = in->num_operands < PTX_MAX_OPERANDS ? in->num_operands : PTX_MAX_OPERANDS;
    if (judge_async_matrix(t, in, v)) continue;
    if (op >= PTX_OP_TEX || op == PTX_OP_BRX) {
      v->everything = true; /* operands not decoded */
      continue;
    }
    switch (op) {
    case PTX_OP_LD:
    case PTX_OP_LDU:
      if (n > 1) access_through(t, in, &in->opnd[1], READS, v);
      continue;
    case PTX_OP_ST:
    case PTX_OP_RED:
      if (n > 0) access_through(t, in, &in->opnd[0], op == PTX_OP_ST ? WRITES : READS | WRITES, v);
      for (unsigned k = 1; k < n; k++) escape_values(t, &in->opnd[k], v);
      continue;
    case PTX_OP_ATOM:
      if (n > 1) access_through(t, in, &in->opnd[1], READS | WRITES, v);
      for (unsigned k = 2; k < n; k++) escape_values(t, &in->opnd[k], v);
      continue;
    case PTX_OP_PREFETCH:
    case PTX_OP_PREFETCHU: continue; /* a hint, no access */
    case PTX_OP_CALL: {
      /* Arguments passed escape (their st.param); the callee must not write global memory. */
      enum effect e = callee_effect(m, in, 0);
      if (e == CANNOT_TELL) v->everything = true;
      if (e == READS_GLOBAL) v->reads_beyond = true;
      for (unsigned k = 0; k < in->num_call_args; k++) escape_values(t, &in->call_args[k], v);
      continue;
    }
    default:
      /* Arithmetic and moves carry origins along (propagate); only a parameter's address matters here. */
      for (unsigned k = 0; k < n; k++) {
        long named = param_named(&in->opnd[k]);
        if (named >= 0 && (size_t)named < f->num_params) v->escapes[named] = true;
      }
      continue;
    }
  }
}

bool ptx_param_access(const struct ptx_module *m, const struct ptx_func *f, gcap_param_access *out) {
  for (size_t p = 0; p < f->num_params; p++) out[p] = GCAP_ACCESS_UNKNOWN;
  if (!f->has_body) return true;
  struct taint t = {.f = f, .sym_bit = f->num_params, .foreign_bit = f->num_params + 1};
  t.words = (f->num_params + 2 + 63) / 64;
  t.sets = gcap__calloc(f->num_regs ? f->num_regs * t.words : 1, sizeof *t.sets);
  t.scratch = gcap__calloc(t.words, sizeof *t.scratch);
  struct verdict v = {gcap__calloc(f->num_params + 1, sizeof *v.uses),
                      gcap__calloc(f->num_params + 1, sizeof *v.escapes), false};
  bool ok = t.sets && t.scratch && v.uses && v.escapes;
  if (ok) {
    while (propagate(&t)) {}
    judge(&t, m, &v);
    static const gcap_param_access by_use[4] = {GCAP_ACCESS_NONE, GCAP_ACCESS_READ, GCAP_ACCESS_WRITE,
                                                GCAP_ACCESS_READ_WRITE};
    for (size_t p = 0; p < f->num_params && !v.everything; p++)
      if (!v.escapes[p] && f->params[p].size == 8) out[p] = by_use[(v.uses[p] | (v.reads_beyond ? READS : 0)) & 3u];
  }
  gcap__free(t.sets);
  gcap__free(t.scratch);
  gcap__free(v.uses);
  gcap__free(v.escapes);
  return ok;
}
