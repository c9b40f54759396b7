/*
 * Lowering: a parsed PTX module becomes a program of compact instructions, once, at load. Names
 * are already resolved by the front end; here registers become slots, immediates constant slots,
 * variables offsets (in the block's shared memory, the thread's stack or the kernel's parameter
 * buffer) or device addresses, and each instruction gets the handler that runs it for a warp.
 * PTX that is not valid (bad operands, types, sizes over CUDA's limits) fails the load, naming the
 * line, column and instruction. Valid PTX the executor cannot run (px_unsupported) marks its
 * function, and every kernel that calls it, as unable to run: those kernels are refused at launch
 * and the module's other kernels run. A kernel never meets an unknown instruction while it runs.
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "base/alloc.h"
#include "base/error.h"
#include "ptx_half.h"
#include "ptx_internal.h"
#include "ptx_regalloc.h"

#define CONST_TAG 0x8000u
#define MAX_SLOTS 0x7fffu

struct px_lower {
  struct px_program *prog;
  const struct ptx_func *pf;
  struct px_func *fn;
  struct px_ins *code;
  size_t n, cap;
  uint64_t *consts;
  size_t num_consts, consts_cap;
  unsigned temps;
  uint8_t *addr_bytes;        /* per register: its bytes when it is a narrow (< 8 bytes) address base, else 0 */
  const struct ptx_instr *at; /* the instruction being lowered */
  char message[400];
  bool failed;
  bool skip; /* the instruction being lowered cannot run: nothing more of it is refused */
};

int px_refuse(struct px_lower *L, const char *fmt, ...) {
  if (L->failed || L->skip) return -1;
  L->failed = true;
  char what[240];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  if (L->at)
    snprintf(L->message, sizeof L->message, "PTX line %u, column %u: \"%s\": %s", L->at->line, L->at->column,
             L->at->text ? L->at->text : ptx_op_name((enum ptx_op)L->at->op), what);
  else snprintf(L->message, sizeof L->message, "%s", what);
  return -1;
}

int px_unsupported(struct px_lower *L, const char *fmt, ...) {
  if (L->failed || L->skip) return -1;
  L->skip = true;
  if (L->fn->unrunnable) return -1; /* the first reason stands */
  char what[240], why[400];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  if (L->at)
    snprintf(why, sizeof why, "%s at PTX line %u \"%s\"", what, L->at->line,
             L->at->text ? L->at->text : ptx_op_name((enum ptx_op)L->at->op));
  else snprintf(why, sizeof why, "%s", what);
  if (!(L->fn->unrunnable = gcap__strdup(why))) {
    L->skip = false;
    return px_refuse(L, "out of memory");
  }
  return -1;
}

/* Whether instruction pi may write register reg (its first operand, a vector's element, a second destination, a call's
 * results). */
static bool writes_reg(const struct ptx_instr *pi, uint32_t reg) {
  const struct ptx_operand *d = &pi->opnd[0];
  if (pi->num_operands && d->kind == PTX_OPND_REG && d->index == reg) return true;
  if (pi->num_operands && d->kind == PTX_OPND_VEC)
    for (unsigned e = 0; e < d->count && e < PTX_MAX_VEC; e++)
      if (d->elems[e].kind == PTX_OPND_REG && d->elems[e].reg == reg) return true;
  if (pi->dest2 >= 0 && (uint32_t)pi->dest2 == reg) return true;
  for (unsigned r = 0; r < pi->num_call_rets; r++)
    if (pi->call_rets[r].kind == PTX_OPND_REG && pi->call_rets[r].index == reg) return true;
  return false;
}

bool px_reg_constant(struct px_lower *L, const struct ptx_operand *o, uint64_t *value) {
  if (o->kind != PTX_OPND_REG) return false;
  bool found = false;
  for (size_t i = 0; i < L->pf->num_instrs; i++) {
    const struct ptx_instr *pi = &L->pf->instrs[i];
    if (!writes_reg(pi, o->index)) continue;
    if (pi->op != PTX_OP_MOV || pi->guard >= 0 || pi->num_operands != 2 || pi->opnd[1].kind != PTX_OPND_IMM)
      return false;
    if (found && (uint64_t)pi->opnd[1].imm != *value) return false;
    *value = (uint64_t)pi->opnd[1].imm;
    found = true;
  }
  return found;
}

uint16_t px_const(struct px_lower *L, uint64_t v) {
  for (size_t i = 0; i < L->num_consts; i++)
    if (L->consts[i] == v) return (uint16_t)(CONST_TAG | i);
  if (L->num_consts >= MAX_SLOTS / 2) {
    px_unsupported(L, "too many constants in function \"%s\"", L->pf->name);
    return PX_NONE;
  }
  if (gcap__grow((void **)&L->consts, &L->consts_cap, L->num_consts + 1, sizeof *L->consts) != 0) {
    px_refuse(L, "out of memory");
    return PX_NONE;
  }
  L->consts[L->num_consts] = v;
  return (uint16_t)(CONST_TAG | L->num_consts++);
}

static uint64_t imm_as(const struct ptx_operand *o, enum ptx_type t) {
  uint64_t bits = (uint64_t)o->imm;
  if (t == PTX_T_F32) {
    switch (o->imm_kind) {
    case PTX_IMM_F32BITS: return bits & 0xffffffffu;
    case PTX_IMM_F64BITS:
    case PTX_IMM_DOUBLE: return px_bits32((float)px_f64(bits));
    default: return px_bits32((float)o->imm);
    }
  }
  if (t == PTX_T_F64) {
    switch (o->imm_kind) {
    case PTX_IMM_F32BITS: return px_bits64((double)px_f32(bits));
    case PTX_IMM_F64BITS:
    case PTX_IMM_DOUBLE: return bits;
    default: return px_bits64((double)o->imm);
    }
  }
  if (o->imm_kind == PTX_IMM_DOUBLE) return (uint64_t)(int64_t)px_f64(bits);
  return bits;
}

static struct px_ins *emit(struct px_lower *L) {
  if (gcap__grow((void **)&L->code, &L->cap, L->n + 1, sizeof *L->code) != 0) {
    px_refuse(L, "out of memory");
    return NULL;
  }
  struct px_ins *in = &L->code[L->n++];
  memset(in, 0, sizeof *in);
  in->d = in->a = in->b = in->c = in->e = in->pd2 = PX_NONE;
  for (int i = 0; i < 4; i++) in->vd[i] = PX_NONE;
  in->guard = -1;
  in->src = L->at;
  return in;
}

static uint16_t new_temp(struct px_lower *L) {
  if (L->fn->num_regs + L->temps >= MAX_SLOTS / 2) {
    px_unsupported(L, "too many registers");
    return PX_NONE;
  }
  return (uint16_t)(L->fn->num_regs + L->temps++);
}

/* Materialises a value computed at run time (a special register, a frame variable's address). */
static void mov_sreg(struct px_warp *w, const struct px_ins *in, uint32_t m) {
  uint64_t *d = px_slot(w, in->d);
  unsigned sreg = in->kind, comp = (unsigned)in->imm;
  PX_LANES(m, d[l] = px_sreg_value(w, sreg, comp, l));
}

static void frame_address(struct px_warp *w, const struct px_ins *in, uint32_t m) {
  uint64_t *d = px_slot(w, in->d);
  uint64_t v = (uint64_t)in->imm + w->f->local_base;
  PX_LANES(m, d[l] = v);
}

/* A temp computed before the instruction being lowered: the instruction itself is emitted after. */
static uint16_t materialise(struct px_lower *L, px_fn fn, uint8_t kind, int64_t imm) {
  uint16_t t = new_temp(L);
  if (t == PX_NONE) return PX_NONE;
  struct px_ins *in = emit(L);
  if (!in) return PX_NONE;
  in->fn = fn;
  in->d = t;
  in->kind = kind;
  in->imm = imm;
  return t;
}

/* Where the function being lowered sees dynamic shared memory (its `.extern .shared` arrays). */
static uint64_t dynamic_place(const struct px_lower *L) {
  return L->pf->is_entry ? L->fn->dynamic_offset : L->prog->dynamic_offset;
}

/* A variable's address as a value: device address, shared offset, parameter offset or stack offset. */
static bool var_place(struct px_lower *L, const struct ptx_operand *o, uint64_t *value, bool *frame) {
  *frame = false;
  switch (o->scope) {
  case PTX_SCOPE_MODULE: {
    const struct ptx_var *v = &L->prog->module->vars[o->index];
    if (v->space == PTX_SPACE_SHARED) *value = v->is_extern ? dynamic_place(L) : L->prog->shared_offset[o->index];
    else *value = (uint64_t)(uintptr_t)L->prog->globals[o->index].addr;
    return true;
  }
  case PTX_SCOPE_PARAM:
    *value = L->fn->param_offset[o->index];
    *frame = !L->pf->is_entry;
    return true;
  case PTX_SCOPE_RET:
    *value = L->fn->ret_offset[o->index];
    *frame = true;
    return true;
  case PTX_SCOPE_BODY: {
    const struct ptx_var *v = &L->pf->vars[o->index];
    *value = v->space == PTX_SPACE_SHARED && v->is_extern ? dynamic_place(L) : L->fn->var_offset[o->index];
    *frame = v->space != PTX_SPACE_SHARED;
    return true;
  }
  default: return false;
  }
}

uint16_t px_value(struct px_lower *L, const struct ptx_operand *o, enum ptx_type t) {
  switch (o->kind) {
  case PTX_OPND_REG:
    if (L->fn->pred_of_reg[o->index] != UINT32_MAX) {
      px_refuse(L, "a predicate register where a value belongs");
      return PX_NONE;
    }
    return (uint16_t)L->fn->slot_of_reg[o->index];
  case PTX_OPND_IMM: return px_const(L, imm_as(o, t));
  case PTX_OPND_SREG: return materialise(L, mov_sreg, o->sreg, o->comp);
  case PTX_OPND_SYM: {
    uint64_t v = 0;
    bool frame = false;
    if (!var_place(L, o, &v, &frame)) break;
    v += (uint64_t)o->imm;
    return frame ? materialise(L, frame_address, 0, (int64_t)v) : px_const(L, v);
  }
  default: break;
  }
  px_refuse(L, "an operand of an unexpected kind");
  return PX_NONE;
}

uint16_t px_pred_reg(struct px_lower *L, const struct ptx_operand *o) {
  if (o->kind != PTX_OPND_REG || L->fn->pred_of_reg[o->index] == UINT32_MAX) return PX_NONE;
  return (uint16_t)L->fn->pred_of_reg[o->index];
}

uint16_t px_pred(struct px_lower *L, const struct ptx_operand *o, uint8_t *neg) {
  uint16_t p = px_pred_reg(L, o);
  if (p == PX_NONE) px_refuse(L, "a value where a predicate register belongs");
  if (neg) *neg = o->negate;
  return p;
}

bool px_address(struct px_lower *L, const struct ptx_operand *o, struct px_ins *in) {
  if (o->kind != PTX_OPND_ADDR) {
    px_refuse(L, "an address ([...]) was expected");
    return false;
  }
  in->a = PX_NONE;
  in->imm = o->imm;
  if (o->base == PTX_ADDR_REG) {
    in->a = px_value(L, &(struct ptx_operand){.kind = PTX_OPND_REG, .index = o->index}, PTX_T_U64);
    return in->a != PX_NONE;
  }
  if (o->base != PTX_ADDR_SYM) return true; /* an absolute address */
  uint64_t v = 0;
  bool frame = false;
  var_place(L, o, &v, &frame);
  in->imm = (int64_t)(v + (uint64_t)o->imm);
  if (frame) {
    in->sym_local = 1;
    in->space = PTX_SPACE_LOCAL; /* a function's .param variables live in its frame */
  }
  return true;
}

/* ---------------------------------------------------------------- control flow */

static int lower_control(struct px_lower *L, const struct ptx_instr *pi, struct px_ins *in) {
  switch ((enum ptx_op)pi->op) {
  case PTX_OP_BRA:
    if (pi->num_operands != 1 || pi->opnd[0].kind != PTX_OPND_LABEL) return px_refuse(L, "bra needs a label");
    in->ctl = PX_CTL_BRA;
    in->target = pi->opnd[0].index; /* a PTX instruction index until fix_targets */
    return 1;
  case PTX_OP_RET: in->ctl = PX_CTL_RET; return 1;
  case PTX_OP_EXIT: in->ctl = PX_CTL_EXIT; return 1;
  case PTX_OP_TRAP: in->ctl = PX_CTL_TRAP; return 1;
  case PTX_OP_BRKPT:
    in->ctl = PX_CTL_TRAP;
    in->kind = 1;
    return 1;
  case PTX_OP_CALL: return -2; /* lower_call */
  default: return 0;
  }
}

/*
 * Storage of a call's argument or result: a register or an immediate (8 bytes), or a .param or
 * .local variable of the calling function's frame at least as large as the callee's parameter,
 * so that the copies between the frames stay inside both.
 */
static bool call_storage_fits(struct px_lower *L, const struct ptx_operand *o, size_t need, const char *what,
                              unsigned i, const char *callee) {
  if (o->kind == PTX_OPND_REG && L->fn->pred_of_reg[o->index] != UINT32_MAX) {
    px_refuse(L, "%s %u of \"%s\" is a predicate register", what, i, callee);
    return false;
  }
  if (o->kind == PTX_OPND_REG || o->kind == PTX_OPND_IMM) {
    if (need <= 8) return true;
    px_refuse(L, "%s %u of \"%s\" is a .param of %zu bytes, which a register cannot hold", what, i, callee, need);
    return false;
  }
  const struct ptx_var *v = NULL;
  if (o->kind == PTX_OPND_SYM && o->scope == PTX_SCOPE_BODY) v = &L->pf->vars[o->index];
  else if (o->kind == PTX_OPND_SYM && o->scope == PTX_SCOPE_PARAM && !L->pf->is_entry) v = &L->pf->params[o->index];
  else if (o->kind == PTX_OPND_SYM && o->scope == PTX_SCOPE_RET) v = &L->pf->rets[o->index];
  if (!v || (v->space != PTX_SPACE_PARAM && v->space != PTX_SPACE_LOCAL)) {
    const char *name = o->kind == PTX_OPND_SYM && o->scope == PTX_SCOPE_MODULE  ? L->prog->module->vars[o->index].name
                       : o->kind == PTX_OPND_SYM && o->scope == PTX_SCOPE_PARAM ? L->pf->params[o->index].name
                       : v                                                      ? v->name
                                                                                : "?";
    px_refuse(L, "%s %u of \"%s\", \"%s\", is not a .param variable of the calling function's frame", what, i, callee,
              name);
    return false;
  }
  if (o->imm < 0 || (uint64_t)o->imm > v->size || v->size - (uint64_t)o->imm < need) {
    px_refuse(L, "%s %u of \"%s\" takes %zu bytes; \"%s\" holds %zu", what, i, callee, need, v->name,
              o->imm < 0 || (uint64_t)o->imm > v->size ? (size_t)0 : v->size - (size_t)o->imm);
    return false;
  }
  return true;
}

/* The callee's frame layout must be known: frames are laid out before any body is lowered. */
static int lower_call(struct px_lower *L, const struct ptx_instr *pi, struct px_ins *in) {
  if (pi->num_operands < 1 || pi->opnd[0].kind != PTX_OPND_FUNC)
    return px_unsupported(L, "indirect calls (through a register) are not supported yet");
  const struct ptx_func *callee = &L->prog->module->funcs[pi->opnd[0].index];
  enum px_builtin b = callee->has_body ? PX_BUILTIN_NONE : px_builtin_of(callee->name);
  if (!callee->has_body && b == PX_BUILTIN_NONE)
    return px_unsupported(L, "function \"%s\" is declared but not defined, and the simulator does not provide it",
                          callee->name);
  if (pi->num_call_args != callee->num_params || pi->num_call_rets != callee->num_rets)
    return px_refuse(L, "\"%s\" takes %zu parameters and %zu results, the call passes %u and %u", callee->name,
                     callee->num_params, callee->num_rets, pi->num_call_args, pi->num_call_rets);
  static const unsigned builtin_args[] = {0, 2, 4, 2}; /* vprintf, __assertfail (4 read), cudaGraphSetConditional */
  if (b && callee->num_params < builtin_args[b])
    return px_refuse(L, "\"%s\" is declared with %zu parameters; the simulator's takes %u", callee->name,
                     callee->num_params, builtin_args[b]);
  for (unsigned i = 0; i < pi->num_call_args; i++)
    if (!call_storage_fits(L, &pi->call_args[i], callee->params[i].size, "argument", i, callee->name)) return -1;
  for (unsigned i = 0; i < pi->num_call_rets; i++)
    if (pi->call_rets[i].kind == PTX_OPND_IMM)
      return px_refuse(L, "result %u of \"%s\" goes to an immediate", i, callee->name);
    else if (!call_storage_fits(L, &pi->call_rets[i], callee->rets[i].size, "result", i, callee->name)) return -1;
  in->ctl = b ? PX_CTL_BUILTIN : PX_CTL_CALL;
  in->aux = b ? (uint32_t)b : pi->opnd[0].index;
  if (b) in->fn = px_run_builtin;
  return 1;
}

/*
 * A register narrower than 64 bits that is the base of an address: an address reads its whole
 * slot, so such a register holds its declared bits zero-extended. Handlers leave what lies above
 * a narrow result as it falls (reads of the value truncate), so each write of one is followed by
 * a zero extension. Bases are written far less often than read (an address is computed once and
 * used with many offsets), so this costs less than widening at each access.
 */
static int find_narrow_bases(struct px_lower *L) {
  const struct ptx_func *pf = L->pf;
  L->addr_bytes = NULL;
  for (size_t i = 0; i < pf->num_instrs; i++)
    for (unsigned k = 0; k < pf->instrs[i].num_operands && k < PTX_MAX_OPERANDS; k++) {
      const struct ptx_operand *o = &pf->instrs[i].opnd[k];
      if (o->kind != PTX_OPND_ADDR || o->base != PTX_ADDR_REG || o->index >= pf->num_regs) continue;
      unsigned bytes = ptx_type_size((enum ptx_type)pf->regs[o->index].type);
      if (!bytes || bytes >= 8) continue;
      if (!L->addr_bytes && !(L->addr_bytes = gcap__calloc(pf->num_regs, 1))) return px_refuse(L, "out of memory");
      L->addr_bytes[o->index] = (uint8_t)bytes;
    }
  return 0;
}

/* The low in->size bytes of slot d, zero-extended in place. */
static void zero_extend(struct px_warp *w, const struct px_ins *in, uint32_t m) {
  uint64_t *d = px_slot(w, in->d);
  unsigned shift = 64u - in->size * 8u;
  PX_LANES(m, d[l] = d[l] << shift >> shift);
}

static int narrow_write(struct px_lower *L, uint32_t reg) {
  if (reg >= L->pf->num_regs || !L->addr_bytes[reg]) return 0;
  struct px_ins *z = emit(L);
  if (!z) return -1;
  z->fn = zero_extend;
  z->d = (uint16_t)L->fn->slot_of_reg[reg];
  z->size = L->addr_bytes[reg];
  return 0;
}

/* After an instruction that may write narrow address bases (its first operand, call results): their zero extension. */
static int narrow_writes(struct px_lower *L, const struct ptx_instr *pi) {
  if (!L->addr_bytes) return 0;
  int r = 0;
  if (pi->num_operands > 0) {
    const struct ptx_operand *o = &pi->opnd[0];
    if (o->kind == PTX_OPND_REG) r |= narrow_write(L, o->index);
    else if (o->kind == PTX_OPND_VEC)
      for (unsigned i = 0; i < o->count && i < PTX_MAX_VEC; i++)
        if (o->elems[i].kind == PTX_OPND_REG) r |= narrow_write(L, o->elems[i].reg);
  }
  for (unsigned i = 0; i < pi->num_call_rets; i++)
    if (pi->call_rets[i].kind == PTX_OPND_REG) r |= narrow_write(L, pi->call_rets[i].index);
  return r ? -1 : 0;
}

static int lower_one(struct px_lower *L, const struct ptx_instr *pi) {
  L->at = pi;
  L->skip = false;
  struct px_ins tmp;
  memset(&tmp, 0, sizeof tmp);
  tmp.d = tmp.a = tmp.b = tmp.c = tmp.e = tmp.pd2 = PX_NONE;
  for (int i = 0; i < 4; i++) tmp.vd[i] = PX_NONE;
  tmp.guard = -1;
  tmp.src = pi;
  if (pi->guard >= 0) {
    tmp.guard = (int16_t)px_pred(L, &(struct ptx_operand){.kind = PTX_OPND_REG, .index = (uint32_t)pi->guard}, NULL);
    tmp.guard_neg = pi->guard_neg;
    if (L->failed || L->skip) return -1;
  }
  int r = lower_control(L, pi, &tmp);
  if (r == -2) r = lower_call(L, pi, &tmp);
  if (r == 0) r = px_lower_half(L, pi, &tmp);
  if (r == 0) r = px_lower_alu(L, pi, &tmp);
  if (r == 0) r = px_lower_mem(L, pi, &tmp);
  if (r == 0) r = px_lower_warp(L, pi, &tmp);
  if (r == 0) r = px_lower_async(L, pi, &tmp);
  if (r == 0) r = px_lower_mma(L, pi, &tmp);
  if (r == 0)
    return px_unsupported(L, "the simulator does not run %s instructions yet", ptx_op_name((enum ptx_op)pi->op));
  if (r < 0 || L->failed || L->skip) return -1;
  struct px_ins *in = emit(L); /* after any temps the operands needed */
  if (!in) return -1;
  *in = tmp;
  return narrow_writes(L, pi);
}

/* ---------------------------------------------------------------- layout */

/* Layouts are worked out in 64 bits, so that no sum of sizes can wrap, and checked against their limits after. */
static uint64_t align_to(uint64_t n, unsigned a) { return a > 1 ? (n + a - 1) / a * a : n; }

static unsigned var_align(const struct ptx_var *v) {
  unsigned a = v->align ? v->align : ptx_type_size((enum ptx_type)v->type);
  return a ? a : 1;
}

/*
 * Places vars of the frame (local and param spaces) from *top on; shared ones from *shared on.
 * Offsets are kept while they fit 32 bits: a layout past its limit is refused before they are used.
 */
static void place_vars(const struct ptx_var *vars, size_t n, uint32_t *offsets, uint64_t *top, uint64_t *shared) {
  for (size_t i = 0; i < n; i++) {
    const struct ptx_var *v = &vars[i];
    if (v->space == PTX_SPACE_SHARED && v->is_extern) continue; /* dynamic shared memory: dynamic_place */
    uint64_t *at = v->space == PTX_SPACE_SHARED ? shared : top;
    *at = align_to(*at, var_align(v));
    offsets[i] = *at <= UINT32_MAX ? (uint32_t)*at : UINT32_MAX;
    *at += v->size;
  }
}

/*
 * More value registers than a frame holds (a fully unrolled kernel): they share slots by live
 * range (ptx_regalloc.c). Functions under the limit keep a slot per register. When even that
 * does not fit, the function cannot run, with what is live at once and where.
 */
static int pack_registers(struct px_lower *L, const struct ptx_func *pf, struct px_func *fn) {
  char why[240];
  unsigned slots = 0;
  int r = px_pack_registers(pf, fn->pred_of_reg, fn->slot_of_reg, MAX_SLOTS / 2, &slots, why, sizeof why);
  if (r < 0) return px_refuse(L, "out of memory");
  if (r > 0) {
    px_unsupported(L, "%s", why);
    L->skip = false;
    return 0;
  }
  fn->num_regs = slots;
  return 0;
}

static int lay_out_func(struct px_program *p, size_t fi, struct px_lower *L) {
  const struct ptx_func *pf = &p->module->funcs[fi];
  struct px_func *fn = &p->funcs[fi];
  L->fn = fn;
  L->at = NULL;
  fn->src = pf;
  fn->var_offset = gcap__calloc(pf->num_vars + 1, sizeof *fn->var_offset);
  fn->param_offset = gcap__calloc(pf->num_params + 1, sizeof *fn->param_offset);
  fn->ret_offset = gcap__calloc(pf->num_rets + 1, sizeof *fn->ret_offset);
  fn->pred_of_reg = gcap__calloc(pf->num_regs + 1, sizeof *fn->pred_of_reg);
  fn->slot_of_reg = gcap__calloc(pf->num_regs + 1, sizeof *fn->slot_of_reg);
  if (!fn->var_offset || !fn->param_offset || !fn->ret_offset || !fn->pred_of_reg || !fn->slot_of_reg)
    return px_refuse(L, "out of memory");
  for (size_t r = 0; r < pf->num_regs; r++) {
    bool pred = pf->regs[r].type == PTX_T_PRED;
    fn->pred_of_reg[r] = pred ? fn->num_preds++ : UINT32_MAX;
    fn->slot_of_reg[r] = pred ? UINT32_MAX : fn->num_regs++;
  }
  if (fn->num_regs >= MAX_SLOTS / 2 && fn->num_preds <= 0x7fff && pack_registers(L, pf, fn) != 0) return -1;
  if (fn->num_regs >= MAX_SLOTS / 2 || fn->num_preds > 0x7fff) { /* its body is still checked, then dropped */
    px_unsupported(L, "function \"%s\" declares more registers than the simulator holds", pf->name);
    L->skip = false;
  }
  /* Shared: the module's variables, then every .func's (a kernel may call any), then the entry's own. */
  uint64_t top = 0, shared = p->funcs_shared, params = 0;
  if (pf->is_entry) {
    place_vars(pf->params, pf->num_params, fn->param_offset, &params, &shared);
  } else {
    place_vars(pf->params, pf->num_params, fn->param_offset, &top, &shared);
    place_vars(pf->rets, pf->num_rets, fn->ret_offset, &top, &shared);
  }
  place_vars(pf->vars, pf->num_vars, fn->var_offset, &top, &shared);
  if (params > PX_PARAM_BYTES)
    return px_refuse(L, "kernel \"%s\" has %llu bytes of parameters, more than the %u a kernel may have", pf->name,
                     (unsigned long long)params, PX_PARAM_BYTES);
  if (top > PX_LOCAL_BYTES) { /* CUDA gives a thread more: valid PTX the simulator cannot run */
    px_unsupported(L,
                   "function \"%s\" needs %llu bytes of stack per thread (its .local and .param variables), more "
                   "than the %u bytes the simulator gives a thread",
                   pf->name, (unsigned long long)top, PX_LOCAL_BYTES);
    L->skip = false;
  }
  if (shared > SIM_PX_SHARED_BYTES) /* ptxas' words */
    return px_refuse(L, "%s \"%s\" uses too much shared data (%llu bytes of static shared memory, %u max)",
                     pf->is_entry ? "entry function" : "function", pf->name, (unsigned long long)shared,
                     SIM_PX_SHARED_BYTES);
  fn->frame_bytes = top <= PX_LOCAL_BYTES ? (uint32_t)align_to(top, 16) : 0;
  if (pf->is_entry) fn->static_shared = (uint32_t)shared;
  else p->funcs_shared = shared;
  return 0;
}

/* Branch targets were PTX instruction indices: now code indices. */
static void fix_targets(struct px_lower *L, const uint32_t *first_of) {
  for (size_t i = 0; i < L->n; i++)
    if (L->code[i].ctl == PX_CTL_BRA) L->code[i].target = first_of[L->code[i].target];
}

static void finish_slots(struct px_lower *L, struct px_func *fn) {
  unsigned base = fn->num_regs + L->temps;
  for (size_t i = 0; i < L->n; i++) {
    struct px_ins *in = &L->code[i];
    uint16_t *slots[] = {&in->d, &in->a, &in->b, &in->c, &in->e, &in->vd[0], &in->vd[1], &in->vd[2], &in->vd[3]};
    for (size_t s = 0; s < sizeof slots / sizeof slots[0]; s++)
      if (*slots[s] != PX_NONE && (*slots[s] & CONST_TAG)) *slots[s] = (uint16_t)(base + (*slots[s] & ~CONST_TAG));
  }
  fn->num_regs = base;
  fn->num_slots = base + (unsigned)L->num_consts;
  fn->consts = L->consts;
  L->consts = NULL;
}

static int lower_body(struct px_program *p, size_t fi, struct px_lower *L) {
  const struct ptx_func *pf = &p->module->funcs[fi];
  struct px_func *fn = &p->funcs[fi];
  L->pf = pf;
  L->fn = fn;
  L->n = L->cap = L->num_consts = L->consts_cap = 0;
  L->code = NULL;
  L->consts = NULL;
  L->temps = 0;
  uint32_t *first_of = gcap__calloc(pf->num_instrs + 1, sizeof *first_of);
  if (!first_of) return px_refuse(L, "out of memory");
  if (find_narrow_bases(L) != 0) {
    gcap__free(first_of);
    return -1;
  }
  for (size_t i = 0; i < pf->num_instrs && !L->failed; i++) {
    first_of[i] = (uint32_t)L->n;
    lower_one(L, &pf->instrs[i]);
  }
  L->at = NULL;
  first_of[pf->num_instrs] = (uint32_t)L->n;
  struct px_ins *end = L->failed ? NULL : emit(L); /* falling off the end returns */
  if (end) end->ctl = pf->is_entry ? PX_CTL_EXIT : PX_CTL_RET;
  if (!L->failed) fix_targets(L, first_of);
  gcap__free(first_of);
  gcap__free(L->addr_bytes);
  L->addr_bytes = NULL;
  if (L->failed || fn->unrunnable) { /* an unrunnable function keeps no code: nothing runs it */
    gcap__free(L->code);
    gcap__free(L->consts);
    L->code = NULL;
    L->consts = NULL;
    return L->failed ? -1 : 0;
  }
  finish_slots(L, fn);
  fn->code = L->code;
  fn->num_code = L->n;
  L->code = NULL;
  return 0;
}

/* ---------------------------------------------------------------- module variables */

/* Device memory the module's .global and .const variables take, as the allocator rounds them. */
static uint64_t vars_bytes(const struct ptx_module *m) {
  uint64_t total = 0;
  for (size_t i = 0; i < m->num_vars; i++)
    if (m->vars[i].space == PTX_SPACE_GLOBAL || m->vars[i].space == PTX_SPACE_CONST)
      total += align_to(m->vars[i].size ? m->vars[i].size : 1, 256);
  return total;
}

/*
 * Every loaded program's constant bank, so that a store from any kernel into any module's
 * constant memory is found (under the memory check; without it, a kernel's own module's only).
 */
static pthread_mutex_t banks_lock = PTHREAD_MUTEX_INITIALIZER;
static const struct px_program **banks;
static size_t num_banks, cap_banks;

static bool bank_add(const struct px_program *p) {
  pthread_mutex_lock(&banks_lock);
  bool ok = gcap__grow((void **)&banks, &cap_banks, num_banks + 1, sizeof *banks) == 0;
  if (ok) banks[num_banks++] = p;
  pthread_mutex_unlock(&banks_lock);
  return ok;
}

static void bank_remove(const struct px_program *p) {
  pthread_mutex_lock(&banks_lock);
  for (size_t i = 0; i < num_banks; i++)
    if (banks[i] == p) {
      banks[i] = banks[--num_banks];
      break;
    }
  if (num_banks == 0) {
    gcap__free(banks);
    banks = NULL;
    cap_banks = 0;
  }
  pthread_mutex_unlock(&banks_lock);
}

const struct px_program *px_const_owner(uint64_t addr, uint64_t bytes) {
  const struct px_program *owner = NULL;
  pthread_mutex_lock(&banks_lock);
  for (size_t i = 0; i < num_banks && !owner; i++) {
    uint64_t base = (uintptr_t)banks[i]->const_bank, end = base + banks[i]->const_bytes;
    if (addr < end && (addr >= base || base - addr < bytes)) owner = banks[i];
  }
  pthread_mutex_unlock(&banks_lock);
  return owner;
}

/* The .const variables in one bank (so that a kernel's stores into it cost one compare to refuse), zeroed. */
static gcap_status load_const_bank(struct px_program *p) {
  const struct ptx_module *m = p->module;
  uint64_t bytes = 0;
  for (size_t i = 0; i < m->num_vars; i++)
    if (m->vars[i].space == PTX_SPACE_CONST)
      bytes = align_to(bytes, var_align(&m->vars[i])) + (m->vars[i].size ? m->vars[i].size : 1);
  if (!bytes) return GCAP_SUCCESS;
  void *bank = NULL;
  gcap_status st = p->mem.alloc(p->mem.ctx, bytes, &bank);
  if (st != GCAP_SUCCESS) return st;
  p->const_bank = bank;
  p->const_bytes = bytes;
  if (!bank_add(p)) return GCAP_ERROR_OUT_OF_MEMORY; /* px_program_free gives the bank back */
  p->mem.zero(p->mem.ctx, bank, bytes);
  return GCAP_SUCCESS;
}

static gcap_status load_vars(struct px_program *p, char *msg, size_t size) {
  const struct ptx_module *m = p->module;
  uint64_t need = vars_bytes(m);
  if (need > PX_DEVICE_MEMORY) {
    snprintf(msg, size,
             "the module's .global and .const variables need %llu bytes, more than the simulated device's %llu bytes "
             "of memory",
             (unsigned long long)need, (unsigned long long)PX_DEVICE_MEMORY);
    return GCAP_ERROR_OUT_OF_MEMORY;
  }
  p->globals = gcap__calloc(m->num_vars + 1, sizeof *p->globals);
  p->shared_offset = gcap__calloc(m->num_vars + 1, sizeof *p->shared_offset);
  if (!p->globals || !p->shared_offset) return GCAP_ERROR_OUT_OF_MEMORY;
  p->num_globals = m->num_vars;
  gcap_status st = load_const_bank(p);
  if (st != GCAP_SUCCESS) return st;
  uint64_t shared = 0, consts = 0;
  for (size_t i = 0; i < m->num_vars; i++) {
    const struct ptx_var *v = &m->vars[i];
    p->globals[i].name = v->name;
    p->globals[i].bytes = v->size;
    p->globals[i].is_const = v->space == PTX_SPACE_CONST;
    if (v->space == PTX_SPACE_SHARED) {
      if (v->is_extern) continue; /* dynamic shared memory: placed per kernel */
      shared = align_to(shared, var_align(v));
      p->shared_offset[i] = shared <= UINT32_MAX ? (uint32_t)shared : UINT32_MAX;
      shared += v->size;
      continue;
    }
    if (v->space != PTX_SPACE_GLOBAL && v->space != PTX_SPACE_CONST) {
      snprintf(msg, size, "PTX line %u: module variable \"%s\" is in a state space the simulator does not place",
               v->line, v->name);
      return GCAP_ERROR_INVALID_PTX;
    }
    void *addr = NULL;
    size_t bytes = v->size ? v->size : 1;
    if (v->space == PTX_SPACE_CONST) { /* its place in the bank, laid out as load_const_bank did */
      consts = align_to(consts, var_align(v));
      p->globals[i].addr = p->const_bank + consts;
      consts += bytes;
      if (v->init) p->mem.write(p->mem.ctx, p->globals[i].addr, v->init, v->size);
      continue;
    }
    st = v->is_managed ? p->mem.alloc_managed(p->mem.ctx, bytes, &addr) : p->mem.alloc(p->mem.ctx, bytes, &addr);
    if (st != GCAP_SUCCESS) return st;
    p->globals[i].addr = addr;
    /* Zeros are not written: a large zero variable costs no memory until a kernel or a copy writes it. */
    if (v->init) p->mem.write(p->mem.ctx, addr, v->init, v->size);
    else p->mem.zero(p->mem.ctx, addr, bytes);
  }
  p->module_shared = shared; /* each kernel's layout refuses it when it is past the limit */
  return GCAP_SUCCESS;
}

/* Initialisers holding other variables' addresses, once every variable has its place. */
static void apply_relocs(struct px_program *p) {
  const struct ptx_module *m = p->module;
  for (size_t i = 0; i < m->num_vars; i++) {
    const struct ptx_var *v = &m->vars[i];
    for (size_t r = 0; r < v->num_relocs && p->globals[i].addr; r++) {
      const struct ptx_reloc *rl = &v->relocs[r];
      uint64_t target = m->vars[rl->var].space == PTX_SPACE_SHARED ? PX_SHARED_WINDOW + p->shared_offset[rl->var]
                                                                   : (uint64_t)(uintptr_t)p->globals[rl->var].addr;
      target += (uint64_t)rl->addend;
      if (rl->offset + 8 <= v->size) p->mem.write(p->mem.ctx, p->globals[i].addr + rl->offset, &target, 8);
    }
  }
}

/* ---------------------------------------------------------------- kernels */

static bool is_dynamic(const struct ptx_var *v) { return v->space == PTX_SPACE_SHARED && v->is_extern; }

/* The alignment of dynamic shared memory: 16 bytes, or the largest .align of an `.extern .shared` array. */
static unsigned dynamic_align(const struct ptx_module *m) {
  unsigned align = 16;
  for (size_t i = 0; i < m->num_vars; i++)
    if (is_dynamic(&m->vars[i]) && var_align(&m->vars[i]) > align) align = var_align(&m->vars[i]);
  for (size_t f = 0; f < m->num_funcs; f++)
    for (size_t i = 0; i < m->funcs[f].num_vars; i++)
      if (is_dynamic(&m->funcs[f].vars[i]) && var_align(&m->funcs[f].vars[i]) > align)
        align = var_align(&m->funcs[f].vars[i]);
  return align;
}

/* True when an operand names an `.extern .shared` array (or, with sreg, reads %reserved_smem_offset_*). */
static bool names_dynamic(const struct ptx_module *m, const struct ptx_func *pf, const struct ptx_operand *o) {
  bool sym = o->kind == PTX_OPND_SYM || (o->kind == PTX_OPND_ADDR && o->base == PTX_ADDR_SYM);
  if (!sym) return false;
  if (o->scope == PTX_SCOPE_MODULE) return is_dynamic(&m->vars[o->index]);
  return o->scope == PTX_SCOPE_BODY && is_dynamic(&pf->vars[o->index]);
}

static bool is_reserved_sreg(const struct ptx_operand *o) {
  return o->kind == PTX_OPND_SREG && o->sreg >= PTX_SREG_RESERVED_SMEM_BEGIN && o->sreg <= PTX_SREG_RESERVED_SMEM_1;
}

/*
 * Where each kernel's dynamic shared memory starts: after its static variables, aligned as the
 * driver aligns it. A .func that names an `.extern .shared` array is lowered once for every
 * kernel, so then every kernel of the module starts it at the same place, the latest.
 */
static void place_dynamic(struct px_program *p) {
  const struct ptx_module *m = p->module;
  unsigned align = dynamic_align(m);
  uint64_t latest = align_to(p->funcs_shared, align);
  for (size_t f = 0; f < m->num_funcs; f++) {
    const struct ptx_func *pf = &m->funcs[f];
    if (!pf->has_body) continue;
    if (pf->is_entry) {
      uint64_t at = align_to(p->funcs[f].static_shared, align);
      if (at > SIM_PX_SHARED_BYTES) at = SIM_PX_SHARED_BYTES + 1u; /* every launch is refused */
      p->funcs[f].dynamic_offset = (uint32_t)at;
      if (at > latest) latest = at;
    }
    for (size_t i = 0; i < pf->num_instrs; i++)
      for (size_t o = 0; o < pf->instrs[i].num_operands; o++) {
        const struct ptx_operand *op = &pf->instrs[i].opnd[o];
        if (!pf->is_entry && names_dynamic(m, pf, op)) p->funcs_use_dynamic = true;
        if (is_reserved_sreg(op)) p->reserved_bytes = PX_RESERVED_SMEM;
      }
  }
  p->dynamic_offset = latest > SIM_PX_SHARED_BYTES ? SIM_PX_SHARED_BYTES + 1u : latest;
  for (size_t f = 0; f < m->num_funcs && p->funcs_use_dynamic; f++)
    if (m->funcs[f].is_entry && m->funcs[f].has_body) p->funcs[f].dynamic_offset = (uint32_t)p->dynamic_offset;
  for (size_t i = 0; i < m->num_vars; i++)
    if (is_dynamic(&m->vars[i])) p->shared_offset[i] = (uint32_t)p->dynamic_offset; /* for initialisers */
}

/*
 * The first function, in call order, that cannot run among fi and the .func bodies it calls at
 * any depth (SIZE_MAX: none). Walked with a stack of its own: a chain of calls may be long.
 */
static size_t first_unrunnable(const struct px_program *p, size_t fi, unsigned char *seen, size_t (*stack)[2]) {
  const struct ptx_module *m = p->module;
  memset(seen, 0, m->num_funcs);
  if (p->funcs[fi].unrunnable) return fi;
  size_t depth = 1;
  stack[0][0] = fi;
  stack[0][1] = 0;
  seen[fi] = 1;
  while (depth > 0) {
    size_t *top = stack[depth - 1];
    const struct ptx_func *pf = &m->funcs[top[0]];
    if (top[1] >= pf->num_instrs) {
      depth--;
      continue;
    }
    const struct ptx_instr *pi = &pf->instrs[top[1]++];
    if (pi->op != PTX_OP_CALL || pi->num_operands < 1 || pi->opnd[0].kind != PTX_OPND_FUNC) continue;
    size_t callee = pi->opnd[0].index;
    if (callee >= m->num_funcs || seen[callee] || !m->funcs[callee].has_body) continue;
    seen[callee] = 1;
    if (p->funcs[callee].unrunnable) return callee;
    stack[depth][0] = callee;
    stack[depth][1] = 0;
    depth++;
  }
  return SIZE_MAX;
}

/* Marks each kernel that cannot run, with the first reason found in it or in what it calls. */
static int mark_unrunnable(struct px_program *p, struct px_lower *L) {
  const struct ptx_module *m = p->module;
  bool any = false;
  for (size_t f = 0; f < m->num_funcs; f++) any |= p->funcs[f].unrunnable != NULL;
  if (!any) return 0;
  unsigned char *seen = gcap__calloc(m->num_funcs, 1);
  size_t(*stack)[2] = gcap__calloc(m->num_funcs, sizeof *stack);
  int r = seen && stack ? 0 : px_refuse(L, "out of memory");
  for (size_t k = 0; k < p->num_kernels && r == 0; k++) {
    struct px_kernel *kn = &p->kernels[k];
    size_t fi = (size_t)(kn->fn - p->funcs);
    size_t at = first_unrunnable(p, fi, seen, stack);
    if (at == SIZE_MAX) continue;
    const char *why = p->funcs[at].unrunnable, *callee = m->funcs[at].name;
    size_t bytes = strlen(kn->name) + strlen(why) + (at == fi ? 0 : strlen(callee)) + 64;
    if (!(kn->unrunnable = gcap__malloc(bytes))) r = px_refuse(L, "out of memory");
    else if (at == fi) snprintf(kn->unrunnable, bytes, "kernel \"%s\": %s", kn->name, why);
    else
      snprintf(kn->unrunnable, bytes, "kernel \"%s\": %s (in function \"%s\", which it calls)", kn->name, why, callee);
  }
  gcap__free(seen);
  gcap__free(stack);
  return r;
}

static int make_kernel(struct px_program *p, size_t fi, struct px_kernel *k, struct px_lower *L) {
  const struct ptx_func *pf = &p->module->funcs[fi];
  struct px_func *fn = &p->funcs[fi];
  k->program = p;
  k->name = pf->name;
  k->fn = fn;
  k->num_params = pf->num_params;
  k->param_sizes = gcap__calloc(pf->num_params + 1, sizeof *k->param_sizes);
  if (!k->param_sizes) return px_refuse(L, "out of memory");
  k->param_offsets = fn->param_offset;
  /* lay_out_func bounded the parameters and the static shared memory: these fit 32 bits. */
  uint64_t end = 0;
  for (size_t i = 0; i < pf->num_params; i++) {
    k->param_sizes[i] = pf->params[i].size;
    if (fn->param_offset[i] + (uint64_t)pf->params[i].size > end)
      end = fn->param_offset[i] + (uint64_t)pf->params[i].size;
  }
  k->params_bytes = (uint32_t)end;
  k->static_shared = fn->static_shared;
  k->dynamic_offset = fn->dynamic_offset;
  k->reserved_bytes = p->reserved_bytes;
  return 0;
}

/* ---------------------------------------------------------------- load */

static gcap_status fail_parse(const struct ptx_error *e, char *msg, size_t size) {
  if (strcmp(e->message, "out of memory") == 0) return GCAP_ERROR_OUT_OF_MEMORY;
  snprintf(msg, size, "PTX line %u, column %u: %s", e->line, e->column, e->message);
  return GCAP_ERROR_INVALID_PTX;
}

static gcap_status lower_all(struct px_program *p, char *msg, size_t size) {
  const struct ptx_module *m = p->module;
  struct px_lower L;
  memset(&L, 0, sizeof L);
  L.prog = p;
  p->funcs_shared = p->module_shared;
  for (int entries = 0; entries < 2; entries++) /* the .func bodies first: the entries' shared follows theirs */
    for (size_t i = 0; i < m->num_funcs && !L.failed; i++) {
      L.pf = &m->funcs[i];
      if (m->funcs[i].has_body && m->funcs[i].is_entry == (entries == 1)) lay_out_func(p, i, &L);
    }
  if (!L.failed) place_dynamic(p);
  for (size_t i = 0; i < m->num_funcs && !L.failed; i++)
    if (m->funcs[i].has_body) lower_body(p, i, &L);
  for (size_t i = 0; i < m->num_funcs && !L.failed; i++)
    if (m->funcs[i].is_entry && m->funcs[i].has_body) make_kernel(p, i, &p->kernels[p->num_kernels++], &L);
  if (!L.failed) mark_unrunnable(p, &L);
  if (!L.failed) return GCAP_SUCCESS;
  if (strcmp(L.message, "out of memory") == 0 || strstr(L.message, ": out of memory")) return GCAP_ERROR_OUT_OF_MEMORY;
  snprintf(msg, size, "%s", L.message);
  return GCAP_ERROR_INVALID_PTX;
}

static gcap_status build(struct px_program *p, char *msg, size_t size) {
  const struct ptx_module *m = p->module;
  if (m->address_size != 64) {
    snprintf(msg, size, "PTX with .address_size %u: the simulator runs 64-bit PTX only", m->address_size);
    return GCAP_ERROR_INVALID_PTX;
  }
  p->funcs = gcap__calloc(m->num_funcs + 1, sizeof *p->funcs);
  p->kernels = gcap__calloc(m->num_funcs + 1, sizeof *p->kernels);
  if (!p->funcs || !p->kernels) return GCAP_ERROR_OUT_OF_MEMORY;
  p->num_funcs = m->num_funcs; /* px_program_free walks them from here on */
  gcap_status st = load_vars(p, msg, size);
  if (st != GCAP_SUCCESS) return st;
  st = lower_all(p, msg, size); /* places dynamic shared memory, which initialisers may name */
  if (st == GCAP_SUCCESS) apply_relocs(p);
  return st;
}

gcap_status px_program_load(const char *text, size_t size, const struct px_memory_ops *mem, struct px_program **out) {
  *out = NULL;
  struct px_program *p = gcap__calloc(1, sizeof *p);
  if (!p) return gcap__fail(GCAP_ERROR_OUT_OF_MEMORY, "no memory for the PTX program");
  p->mem = *mem;
  struct ptx_error err;
  char msg[480] = "";
  gcap_status st = GCAP_SUCCESS;
  p->module = ptx_parse(text, size, PTX_PARSE_FULL, &err);
  if (!p->module) st = fail_parse(&err, msg, sizeof msg);
  if (st == GCAP_SUCCESS) st = build(p, msg, sizeof msg);
  if (st != GCAP_SUCCESS) {
    px_program_free(p);
    if (msg[0]) return gcap__fail(st, "%s", msg);
    if (st == GCAP_ERROR_OUT_OF_MEMORY) return gcap__fail(st, "no memory to load the PTX");
    return st; /* the allocator's message stands */
  }
  *out = p;
  return GCAP_SUCCESS;
}

void px_program_free(struct px_program *p) {
  if (!p) return;
  for (size_t i = 0; i < p->num_funcs; i++) {
    struct px_func *fn = &p->funcs[i];
    gcap__free(fn->code);
    gcap__free(fn->consts);
    gcap__free(fn->var_offset);
    gcap__free(fn->param_offset);
    gcap__free(fn->ret_offset);
    gcap__free(fn->pred_of_reg);
    gcap__free(fn->slot_of_reg);
    gcap__free(fn->unrunnable);
  }
  for (size_t i = 0; i < p->num_kernels; i++) {
    gcap__free(p->kernels[i].param_sizes);
    gcap__free(p->kernels[i].unrunnable);
  }
  for (size_t i = 0; p->globals && i < p->num_globals; i++)
    if (p->globals[i].addr && !p->globals[i].is_const) p->mem.free(p->mem.ctx, p->globals[i].addr);
  if (p->const_bank) {
    bank_remove(p);
    p->mem.free(p->mem.ctx, p->const_bank);
  }
  gcap__free(p->globals);
  gcap__free(p->shared_offset);
  gcap__free(p->funcs);
  gcap__free(p->kernels);
  ptx_module_free(p->module);
  gcap__free(p);
}

const struct px_kernel *px_program_kernel(const struct px_program *p, const char *name) {
  for (size_t i = 0; p && i < p->num_kernels; i++)
    if (strcmp(p->kernels[i].name, name) == 0) return &p->kernels[i];
  return NULL;
}

const struct px_program *px_kernel_program(const struct px_kernel *k) { return k->program; }

const char *px_kernel_unrunnable(const struct px_kernel *k) { return k->unrunnable; }

/* The counters are the one mutable part of a loaded kernel: the caller's lock guards them. */
void px_kernel_count_run(const struct px_kernel *k, uint64_t instructions) {
  struct px_kernel *m = (struct px_kernel *)(uintptr_t)k;
  m->runs++;
  m->instructions += instructions;
}

void px_kernel_runs(const struct px_kernel *k, uint64_t *runs, uint64_t *instructions) {
  *runs = k->runs;
  *instructions = k->instructions;
}

size_t px_kernel_params(const struct px_kernel *k, const size_t **sizes) {
  *sizes = k->param_sizes;
  return k->num_params;
}

void px_kernel_memory(const struct px_kernel *k, uint32_t *static_shared, uint32_t *local_bytes) {
  *static_shared = k->static_shared;
  *local_bytes = k->fn ? k->fn->frame_bytes : 0;
}

gcap_status px_program_global(const struct px_program *p, const char *name, void **addr, size_t *bytes) {
  for (size_t i = 0; p && i < p->num_globals; i++)
    if (p->globals[i].addr && strcmp(p->globals[i].name, name) == 0) {
      *addr = p->globals[i].addr;
      if (bytes) *bytes = p->globals[i].bytes;
      return GCAP_SUCCESS;
    }
  return GCAP_ERROR_NOT_FOUND;
}

bool px_program_global_at(const struct px_program *p, size_t i, void **addr, size_t *bytes) {
  size_t seen = 0;
  for (size_t g = 0; p && g < p->num_globals; g++) {
    if (!p->globals[g].addr) continue;
    if (seen++ == i) {
      *addr = p->globals[g].addr;
      *bytes = p->globals[g].bytes;
      return true;
    }
  }
  return false;
}

unsigned char *px_launch_params(const struct px_kernel *k, void *const *args) {
  unsigned char *buf = gcap__calloc(1, k->params_bytes ? k->params_bytes : 1);
  if (!buf) return NULL;
  for (size_t i = 0; i < k->num_params; i++) memcpy(buf + k->param_offsets[i], args[i], k->param_sizes[i]);
  return buf;
}

gcap_status px_launch_check(const struct px_launch *l) {
  uint64_t need = (uint64_t)l->kernel->dynamic_offset + l->dynamic_shared;
  if (l->kernel->dynamic_offset > SIM_PX_SHARED_BYTES || need > PX_DEVICE_SHARED_BYTES)
    return gcap__fail(GCAP_ERROR_INVALID_VALUE,
                      "kernel \"%s\" needs %u bytes of static and %u of dynamic shared memory, more than the %u a "
                      "block may have",
                      l->name, l->kernel->static_shared, l->dynamic_shared, PX_DEVICE_SHARED_BYTES);
  return GCAP_SUCCESS;
}
