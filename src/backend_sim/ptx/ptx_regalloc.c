/*
 * Register packing by live range, for functions that declare more value registers than a frame
 * holds (ptx_lower.c calls it only then: other functions keep a slot per register).
 *
 * Liveness is the usual backward dataflow over basic blocks (leaders: the first instruction,
 * branch targets, what follows a branch, ret or exit), with a bit per register. An instruction's
 * first operand is a definition that ends the old value's life only when the instruction always
 * writes it: a guarded one (`@%p mov`) keeps the old value in the lanes whose guard is false, and
 * an opcode whose first operand may be a source (st, bar, nanosleep, cp, mbarrier, ...) counts it
 * as a read, so doubt only lengthens a range. Every register then gets one interval over the
 * instructions in order: from the first to the last point where it is live, read or written
 * (the hull; a register written but never read still takes a slot where it is written). Slots
 * are handed out by linear scan; intervals are closed, so a register written by an instruction
 * never shares a slot with one that instruction reads last (handlers of many registers, such as
 * mma, may write some before they read others).
 *
 * Registers read before any write read whatever their slot holds (as in any frame: 0 at first,
 * else what an earlier block or call left there); with packing that may be another register's
 * old value. Predicates are not packed.
 */
#include "ptx_regalloc.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "base/alloc.h"

enum { USE, DEF };

/* Whether the instruction always writes its first operand (when that is a register or a vector of them). */
static bool writes_first(const struct ptx_instr *pi) {
  switch ((enum ptx_op)pi->op) {
  case PTX_OP_ST:
  case PTX_OP_RED:
  case PTX_OP_PREFETCH:
  case PTX_OP_PREFETCHU:
  case PTX_OP_BAR:
  case PTX_OP_BARRIER:
  case PTX_OP_MEMBAR:
  case PTX_OP_FENCE:
  case PTX_OP_BRA:
  case PTX_OP_BRX:
  case PTX_OP_CALL:
  case PTX_OP_RET:
  case PTX_OP_EXIT:
  case PTX_OP_TRAP:
  case PTX_OP_BRKPT:
  case PTX_OP_NANOSLEEP:
  case PTX_OP_PMEVENT:
  case PTX_OP_TEX:
  case PTX_OP_TLD4:
  case PTX_OP_TXQ:
  case PTX_OP_SULD:
  case PTX_OP_SUST:
  case PTX_OP_SURED:
  case PTX_OP_SUQ:
  case PTX_OP_STMATRIX:
  case PTX_OP_CP:
  case PTX_OP_MBARRIER:
  case PTX_OP_WGMMA:
  case PTX_OP_GRIDDEPCONTROL:
  case PTX_OP_ALLOCA:
  case PTX_OP_STACKSAVE:
  case PTX_OP_STACKRESTORE: return false;
  case PTX_OP_WMMA: return pi->mx.wop == PTX_WMMA_LOAD || pi->mx.wop == PTX_WMMA_MMA;
  default: return true;
  }
}

struct pack {
  const struct ptx_func *pf;
  const uint32_t *pred_of_reg;
  size_t words; /* per register set */
  /* what visit does with each register an instruction names */
  void (*fn)(struct pack *k, uint32_t reg, int role);
  uint64_t *use, *def; /* of the block being summed up */
  uint32_t *lo, *hi;   /* each register's interval */
  uint32_t at;         /* the instruction being visited */
};

static void visit_reg(struct pack *k, uint32_t reg, int role) {
  if (reg < k->pf->num_regs && k->pred_of_reg[reg] == UINT32_MAX) k->fn(k, reg, role);
}

static void visit_operand(struct pack *k, const struct ptx_operand *o, int role) {
  switch (o->kind) {
  case PTX_OPND_REG: visit_reg(k, o->index, role); break;
  case PTX_OPND_VEC:
    for (unsigned e = 0; e < o->count && e < PTX_MAX_VEC; e++)
      if (o->elems[e].kind == PTX_OPND_REG) visit_reg(k, o->elems[e].reg, role);
    break;
  case PTX_OPND_ADDR:
    if (role == USE && o->base == PTX_ADDR_REG) visit_reg(k, o->index, USE);
    break;
  default: break;
  }
}

/* The value registers instruction pi reads (all of them first), then those it always writes. */
static void visit(struct pack *k, const struct ptx_instr *pi) {
  bool kill = pi->guard < 0;
  bool first_def = kill && pi->num_operands > 0 && writes_first(pi) && pi->opnd[0].kind != PTX_OPND_ADDR;
  for (unsigned i = first_def ? 1 : 0; i < pi->num_operands && i < PTX_MAX_OPERANDS; i++)
    visit_operand(k, &pi->opnd[i], USE);
  for (unsigned i = 0; i < pi->num_call_args; i++) visit_operand(k, &pi->call_args[i], USE);
  if (!kill)
    for (unsigned i = 0; i < pi->num_call_rets; i++) visit_operand(k, &pi->call_rets[i], USE);
  if (pi->dest2 >= 0) visit_reg(k, (uint32_t)pi->dest2, USE); /* a predicate (skipped), or in doubt a read */
  if (first_def) visit_operand(k, &pi->opnd[0], DEF);
  if (kill)
    for (unsigned i = 0; i < pi->num_call_rets; i++) visit_operand(k, &pi->call_rets[i], DEF);
}

static bool has(const uint64_t *s, uint32_t r) { return (s[r / 64] >> (r % 64)) & 1u; }
static void set(uint64_t *s, uint32_t r) { s[r / 64] |= (uint64_t)1 << (r % 64); }

/* A block's upward-exposed reads and its definitions. */
static void sum_up(struct pack *k, uint32_t reg, int role) {
  if (role == USE && !has(k->def, reg)) set(k->use, reg);
  if (role == DEF) set(k->def, reg);
}

static void stretch(struct pack *k, uint32_t reg, uint32_t at) {
  if (at < k->lo[reg]) k->lo[reg] = at;
  if (at > k->hi[reg] || k->hi[reg] == UINT32_MAX) k->hi[reg] = at;
}

static void touch(struct pack *k, uint32_t reg, int role) {
  (void)role;
  stretch(k, reg, k->at);
}

/* Registers of set s: their intervals reach instruction at. */
static void stretch_set(struct pack *k, const uint64_t *s, uint32_t at) {
  for (size_t w = 0; w < k->words; w++)
    for (uint64_t b = s[w]; b; b &= b - 1) stretch(k, (uint32_t)(w * 64 + (unsigned)__builtin_ctzll(b)), at);
}

/* A min-heap of active intervals by their end: (hi << 32) | slot. */
static void heap_push(uint64_t *h, size_t *n, uint64_t v) {
  size_t i = (*n)++;
  while (i > 0 && h[(i - 1) / 2] > v) {
    h[i] = h[(i - 1) / 2];
    i = (i - 1) / 2;
  }
  h[i] = v;
}

static uint64_t heap_pop(uint64_t *h, size_t *n) {
  uint64_t top = h[0], v = h[--*n];
  size_t i = 0;
  for (;;) {
    size_t c = 2 * i + 1;
    if (c >= *n) break;
    if (c + 1 < *n && h[c + 1] < h[c]) c++;
    if (h[c] >= v) break;
    h[i] = h[c];
    i = c;
  }
  if (*n) h[i] = v;
  return top;
}

int px_pack_registers(const struct ptx_func *pf, const uint32_t *pred_of_reg, uint32_t *slot_of_reg, unsigned limit,
                      unsigned *num_slots, char *why, size_t why_size) {
  const size_t n = pf->num_instrs, nr = pf->num_regs;
  struct pack k = {.pf = pf, .pred_of_reg = pred_of_reg, .words = (nr + 63) / 64};
  uint8_t *leader = gcap__calloc(n + 1, 1);
  uint32_t *start = NULL, *block_of = NULL, *succ = NULL, *order = NULL, *count = NULL;
  uint64_t *sets = NULL, *tmp = NULL, *heap = NULL, *free_slots = NULL;
  int rc = -1;
  if (!leader) goto out;
  /* Basic blocks. */
  leader[0] = 1;
  for (size_t i = 0; i < n; i++) {
    const struct ptx_instr *pi = &pf->instrs[i];
    if (pi->op == PTX_OP_BRX) { /* targets in a table: not followed; the function keeps its refusal */
      snprintf(why, why_size, "function \"%s\" declares more registers than the simulator holds", pf->name);
      rc = 1;
      goto out;
    }
    if (pi->op == PTX_OP_BRA && pi->num_operands == 1 && pi->opnd[0].kind == PTX_OPND_LABEL && pi->opnd[0].index <= n)
      leader[pi->opnd[0].index] = 1;
    if (pi->op == PTX_OP_BRA || pi->op == PTX_OP_RET || pi->op == PTX_OP_EXIT) leader[i + 1] = 1;
  }
  size_t nb = 0;
  for (size_t i = 0; i < n; i++) nb += leader[i];
  if (nb && k.words > (size_t)(64u << 20) / 3 / nb) { /* more than 512 MiB of sets */
    snprintf(why, why_size,
             "function \"%s\" declares %zu registers in %zu basic blocks, too many to find their live ranges", pf->name,
             nr, nb);
    rc = 1;
    goto out;
  }
  start = gcap__calloc(nb + 1, sizeof *start);
  block_of = gcap__calloc(n + 1, sizeof *block_of);
  succ = gcap__calloc(2 * nb + 1, sizeof *succ);
  sets = gcap__calloc(3 * nb * k.words + 1, sizeof *sets);
  tmp = gcap__calloc(k.words + 1, sizeof *tmp);
  k.lo = gcap__calloc(nr + 1, sizeof *k.lo);
  k.hi = gcap__calloc(nr + 1, sizeof *k.hi);
  if (!start || !block_of || !succ || !sets || !tmp || !k.lo || !k.hi) goto out;
  for (size_t i = 0, b = 0; i < n; i++) {
    if (leader[i]) start[b++] = (uint32_t)i;
    block_of[i] = (uint32_t)(b - 1);
  }
  start[nb] = (uint32_t)n;
  block_of[n] = UINT32_MAX; /* the end: leaving the function */
  for (size_t b = 0; b < nb; b++) {
    const struct ptx_instr *last = &pf->instrs[start[b + 1] - 1];
    uint32_t next = b + 1 < nb ? (uint32_t)(b + 1) : UINT32_MAX, target = UINT32_MAX;
    bool falls = true;
    if (last->op == PTX_OP_BRA) {
      if (last->num_operands == 1 && last->opnd[0].kind == PTX_OPND_LABEL && last->opnd[0].index <= n)
        target = block_of[last->opnd[0].index];
      else target = 0; /* not a label: the lowering refuses it; stay safe */
      falls = last->guard >= 0;
    } else if (last->op == PTX_OP_RET || last->op == PTX_OP_EXIT) {
      falls = last->guard >= 0;
    }
    succ[2 * b] = target;
    succ[2 * b + 1] = falls ? next : UINT32_MAX;
  }
  /* Each block's reads and definitions, then live-in sets until nothing changes. */
  uint64_t *use = sets, *def = sets + nb * k.words, *in = sets + 2 * nb * k.words;
  k.fn = sum_up;
  for (size_t b = 0; b < nb; b++) {
    k.use = use + b * k.words;
    k.def = def + b * k.words;
    for (uint32_t i = start[b]; i < start[b + 1]; i++) visit(&k, &pf->instrs[i]);
  }
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t b = nb; b-- > 0;) {
      memset(tmp, 0, k.words * sizeof *tmp);
      for (int s = 0; s < 2; s++) {
        uint32_t t = succ[2 * b + (size_t)s];
        if (t == UINT32_MAX) continue;
        for (size_t w = 0; w < k.words; w++) tmp[w] |= in[t * k.words + w];
      }
      uint64_t *bi = in + b * k.words;
      const uint64_t *bu = use + b * k.words, *bd = def + b * k.words;
      for (size_t w = 0; w < k.words; w++) {
        uint64_t v = bu[w] | (tmp[w] & ~bd[w]);
        if (v != bi[w]) {
          bi[w] = v;
          changed = true;
        }
      }
    }
  }
  /* Intervals: every read and write, every block start where live in, every block end where live out. */
  for (size_t r = 0; r < nr; r++) k.lo[r] = k.hi[r] = UINT32_MAX;
  k.fn = touch;
  for (size_t i = 0; i < n; i++) {
    k.at = (uint32_t)i;
    visit(&k, &pf->instrs[i]);
  }
  for (size_t b = 0; b < nb; b++) {
    stretch_set(&k, in + b * k.words, start[b]);
    memset(tmp, 0, k.words * sizeof *tmp);
    for (int s = 0; s < 2; s++) {
      uint32_t t = succ[2 * b + (size_t)s];
      if (t == UINT32_MAX) continue;
      for (size_t w = 0; w < k.words; w++) tmp[w] |= in[t * k.words + w];
    }
    stretch_set(&k, tmp, start[b + 1] - 1);
  }
  /* Linear scan, by interval start (a counting sort). */
  order = gcap__calloc(nr + 1, sizeof *order);
  count = gcap__calloc(n + 2, sizeof *count);
  heap = gcap__calloc(nr + 1, sizeof *heap);
  free_slots = gcap__calloc(nr + 1, sizeof *free_slots);
  if (!order || !count || !heap || !free_slots) goto out;
  size_t used = 0;
  for (size_t r = 0; r < nr; r++)
    if (k.lo[r] != UINT32_MAX) {
      count[k.lo[r] + 1]++;
      used++;
    }
  for (size_t i = 1; i <= n + 1; i++) count[i] += count[i - 1];
  for (size_t r = 0; r < nr; r++)
    if (k.lo[r] != UINT32_MAX) order[count[k.lo[r]]++] = (uint32_t)r;
  size_t active = 0, nfree = 0, peak = 0;
  uint32_t slots = 0, peak_at = 0;
  for (size_t j = 0; j < used; j++) {
    uint32_t r = order[j];
    while (active && (heap[0] >> 32) < k.lo[r]) free_slots[nfree++] = (uint32_t)heap_pop(heap, &active);
    uint32_t s = nfree ? (uint32_t)free_slots[--nfree] : slots++;
    slot_of_reg[r] = s;
    heap_push(heap, &active, (uint64_t)k.hi[r] << 32 | s);
    if (active > peak) {
      peak = active;
      peak_at = k.lo[r];
    }
  }
  for (size_t r = 0; r < nr; r++) /* registers no instruction names: any slot */
    if (pred_of_reg[r] == UINT32_MAX && k.lo[r] == UINT32_MAX) slot_of_reg[r] = 0;
  if (slots >= limit) {
    snprintf(why, why_size,
             "function \"%s\" has %zu registers live at once (at PTX line %u), more than the %u the simulator holds",
             pf->name, peak, pf->instrs[peak_at].line, limit - 1);
    rc = 1;
    goto out;
  }
  *num_slots = slots;
  rc = 0;
out:
  gcap__free(leader);
  gcap__free(start);
  gcap__free(block_of);
  gcap__free(succ);
  gcap__free(sets);
  gcap__free(tmp);
  gcap__free(k.lo);
  gcap__free(k.hi);
  gcap__free(order);
  gcap__free(count);
  gcap__free(heap);
  gcap__free(free_slots);
  return rc;
}
