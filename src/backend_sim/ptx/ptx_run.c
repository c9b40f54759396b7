/*
 * Running a block of a PTX kernel. Each warp runs its lanes in lockstep: the lanes at the lowest
 * pc of the frame form the running group (min-pc reconvergence: after a divergent branch the
 * lanes behind run until they catch up, and lanes at the same pc run together again), so that
 * warp-synchronous code and shuffles see what a GPU gives. A warp runs until it waits at a
 * barrier, finishes, sleeps (nanosleep) or has taken TURN backward branches; the block's warps
 * take turns in an order drawn from the launch's seed, so a warp spinning on a flag another warp
 * sets lets that warp run. Within a warp, a group that spins a turn lets the lanes ahead of it
 * run first (rotate), as Volta's independent thread scheduling does; they come back to the lanes
 * behind before a barrier or a warp operation that names them. Calls push a frame: only the
 * calling lanes run in it, the others wait until it returns.
 */
#include <stdarg.h>
#include <stdio.h>

#include "base/alloc.h"
#include "ptx_internal.h"

/* Paths a warp-uniform kernel never takes: kept out of the interpreter's loop. */
#if defined(__GNUC__)
#define PX_COLD __attribute__((cold, noinline))
#define PX_NOINLINE __attribute__((noinline))
#else
#define PX_COLD
#define PX_NOINLINE
#endif

/* Backward branches a warp takes in one turn: a loop that runs longer lets the block's other warps run. */
#define TURN 1024u
/* Backward branches after which a spinning group lets the other lanes of its warp run (TURN is a multiple). */
#define LANE_TURN 32u

struct px_worker {
  struct px_block blk;
  struct px_warp *warps;
  size_t warps_cap;
  /* shared_cap bytes, grown to the largest block's shared memory; while races are checked, the
     shadow (shadow_cap entries, one a byte) and clean (one a 128 bytes) */
  unsigned char *shared, *shared_init;
  struct px_shadow *shadow;
  uint32_t *clean;
  uint32_t shared_cap, shadow_cap;
  uint32_t *wsync_epoch;
  uint16_t (*tid)[3];
  unsigned char *local;
  size_t local_threads; /* threads whose stacks `local` holds */
  uint64_t prepared;    /* the serial of the launch whose constants the warps' entry frames hold */
  /* cp.async and mbarrier state, kept from block to block (ptx_async.c) */
  struct px_async *async;
};

/* ---------------------------------------------------------------- faults */

static const char *file_name(const struct px_block *b, uint32_t index) {
  return index < b->num_files && b->files[index] ? b->files[index] : "?";
}

static void where(const struct px_warp *w, const struct px_ins *in, unsigned lane, char *buf, size_t size) {
  const struct px_block *b = w->blk;
  unsigned t = px_thread(w, lane);
  gcap_dim3 bd = b->l->block;
  int n = snprintf(buf, size, "kernel \"%s\" block (%u,%u,%u) thread (%u,%u,%u) (warp %u lane %u)", b->l->name,
                   b->idx.x, b->idx.y, b->idx.z, t % bd.x, t / bd.x % bd.y, t / bd.x / bd.y, w->index, lane);
  const struct ptx_instr *pi = in ? in->src : NULL;
  if (!pi || n < 0 || (size_t)n >= size) return;
  n += snprintf(buf + n, size - (size_t)n, " at PTX line %u \"%s\"", pi->line, pi->text ? pi->text : "");
  if (!pi->loc_file || n < 0 || (size_t)n >= size) return;
  n += snprintf(buf + n, size - (size_t)n, " (%s:%u", file_name(b, pi->loc_file), pi->loc_line);
  if (pi->loc_inlined_file && n > 0 && (size_t)n < size)
    n += snprintf(buf + n, size - (size_t)n, ", inlined at %s:%u", file_name(b, pi->loc_inlined_file),
                  pi->loc_inlined_line);
  if (n > 0 && (size_t)n < size) snprintf(buf + n, size - (size_t)n, ")");
}

void px_describe_line(const struct px_block *b, uint32_t line, char *buf, size_t size) {
  const struct ptx_module *m = b->prog->module;
  for (size_t f = 0; f < m->num_funcs; f++)
    for (size_t i = 0; i < m->funcs[f].num_instrs; i++) {
      const struct ptx_instr *pi = &m->funcs[f].instrs[i];
      if (pi->line != line) continue;
      int n = snprintf(buf, size, "PTX line %u \"%s\"", line, pi->text ? pi->text : "");
      if (pi->loc_file && n > 0 && (size_t)n < size)
        snprintf(buf + n, size - (size_t)n, " (%s:%u)", file_name(b, pi->loc_file), pi->loc_line);
      return;
    }
  snprintf(buf, size, "PTX line %u", line);
}

void px_fault(struct px_warp *w, const struct px_ins *in, unsigned lane, gcap_status st, const char *fmt, ...) {
  struct px_block *b = w->blk;
  if (b->status != GCAP_SUCCESS) return;
  b->status = st;
  char at[512], what[1024];
  where(w, in, lane, at, sizeof at);
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  snprintf(b->msg, b->msg_size, "%s: %s", at, what);
}

/* ---------------------------------------------------------------- frames */

/* Both stacks always exist, so that frames of functions without registers or predicates point into them. */
static bool grow_regs(struct px_warp *w, size_t slots, size_t preds) {
  if (w->regs_used + slots > w->regs_cap || !w->regs) {
    size_t cap = (w->regs_used + slots) * 2 + 1;
    void *r = gcap__realloc(w->regs, cap * sizeof *w->regs);
    if (!r) return false;
    w->regs = r;
    /* Registers a kernel reads before it writes them (in lanes that never ran the write) read as 0. */
    memset(w->regs + w->regs_cap, 0, (cap - w->regs_cap) * sizeof *w->regs);
    w->regs_cap = cap;
  }
  if (w->preds_used + preds > w->preds_cap || !w->preds) {
    size_t cap = (w->preds_used + preds) * 2 + 4;
    void *p = gcap__realloc(w->preds, cap * sizeof *w->preds);
    if (!p) return false;
    w->preds = p;
    memset(w->preds + w->preds_cap, 0, (cap - w->preds_cap) * sizeof *w->preds);
    w->preds_cap = cap;
  }
  return true;
}

/* Frames keep offsets into the stacks, which may have moved. */
static void point_frames(struct px_warp *w) {
  size_t r = 0, p = 0;
  for (unsigned i = 0; i <= w->depth; i++) {
    struct px_frame *f = &w->frames[i];
    f->R = w->regs + r;
    f->P = w->preds + p;
    r += f->fn->num_slots;
    p += f->fn->num_preds;
  }
}

static void fill_consts(struct px_frame *f) {
  const struct px_func *fn = f->fn;
  for (unsigned c = fn->num_regs; c < fn->num_slots; c++) {
    uint64_t v = fn->consts[c - fn->num_regs];
    for (unsigned l = 0; l < 32; l++) f->R[c][l] = v;
  }
}

/* ---------------------------------------------------------------- scheduling within a warp */

/*
 * The group becomes the runnable lanes of the frame at the lowest pc from `floor` on (none: an
 * empty group at PX_NO_PC); others_min the next pc above it. The group's own pcs must be saved.
 */
static inline void pick_group(struct px_warp *w, uint32_t floor) {
  struct px_frame *f = w->f;
  uint32_t runnable = f->lanes & w->live & ~f->done & ~f->waiting;
  uint32_t lo = PX_NO_PC, next = PX_NO_PC, group = 0;
  for (uint32_t r = runnable; r; r &= r - 1) {
    unsigned l = (unsigned)__builtin_ctz(r);
    uint32_t pc = f->pcs[l];
    if (pc < floor) continue;
    if (pc < lo) {
      next = lo;
      lo = pc;
      group = 1u << l;
    } else if (pc == lo) {
      group |= 1u << l;
    } else if (pc < next) {
      next = pc;
    }
  }
  w->group = group;
  w->pc = lo;
  w->others_min = next;
}

/* The group becomes the runnable lanes at the lowest pc of the frame. */
static void resched(struct px_warp *w) {
  for (uint32_t g = w->group; g; g &= g - 1) w->f->pcs[__builtin_ctz(g)] = w->pc;
  pick_group(w, 0);
  w->ahead = false;
}

/*
 * A spinning group lets others of its frame run: the lanes at the lowest pc above it run next,
 * ahead of the lanes behind them (which wait until the next rescheduling), so a lane that waits
 * for another lane of its warp (a lock, a flag) lets that lane get there, as on Volta and later.
 */
PX_COLD static void rotate(struct px_warp *w) {
  uint32_t from = w->pc;
  for (uint32_t g = w->group; g; g &= g - 1) w->f->pcs[__builtin_ctz(g)] = from;
  pick_group(w, from + 1);
  w->ahead = w->group != 0;
  if (!w->ahead) pick_group(w, 0); /* nobody above: the lowest lanes run, as usual */
}

/* Whether runnable lanes of the frame outside the group, among `lanes`, are behind it (only after a rotate). */
static bool lanes_behind(const struct px_warp *w, uint32_t lanes) {
  const struct px_frame *f = w->f;
  uint32_t r = lanes & f->lanes & w->live & ~f->done & ~f->waiting & ~w->group;
  for (; r; r &= r - 1)
    if (f->pcs[__builtin_ctz(r)] < w->pc) return true;
  return false;
}

static void pop_frame(struct px_warp *w);

/* Lanes m leave the frame (returned or exited); the warp goes on with who is left. */
PX_COLD static void lanes_leave(struct px_warp *w) {
  resched(w);
  while (!w->group) {
    struct px_frame *f = w->f;
    uint32_t parked = f->waiting & w->live;
    if (parked) { /* lanes waiting at a barrier go on without those that left (bar_converge judges) */
      unsigned first = (unsigned)__builtin_ctz(parked);
      uint32_t pc = f->pcs[first];
      uint8_t ctl = w->code[pc].ctl;
      if (ctl == PX_CTL_BAR || ctl == PX_CTL_ARRIVE) {
        uint32_t group = 0;
        for (uint32_t p = parked; p; p &= p - 1)
          if (f->pcs[__builtin_ctz(p)] == pc) group |= 1u << __builtin_ctz(p);
        f->waiting &= ~group;
        w->group = group;
        w->pc = pc;
        w->others_min = PX_NO_PC;
        w->ahead = false;
        if (w->blk->checks & GCAP_SIM_CHECK_SYNC) { /* the lanes it waited for left without it */
          px_fault(w, &w->code[pc], first, GCAP_ERROR_LAUNCH_FAILURE,
                   "barrier %u in divergent code: lanes 0x%08x of the warp reached it, lanes 0x%08x did not "
                   "(bar.sync must be reached by every thread of a warp together)",
                   (unsigned)(uint32_t)px_slot(w, w->code[pc].a)[first], group, f->lanes & w->exists & ~group);
          w->state = PX_FINISHED;
        }
        return;
      }
    }
    if (parked) { /* parked at __syncwarp with nobody left to come */
      px_fault(w, NULL, (unsigned)__builtin_ctz(f->waiting & w->live), GCAP_ERROR_LAUNCH_FAILURE,
               "lanes 0x%08x wait at bar.warp.sync for lanes that exited or returned", f->waiting & w->live);
      w->state = PX_FINISHED;
      return;
    }
    if (w->depth == 0) {
      w->state = PX_FINISHED;
      return;
    }
    pop_frame(w);
  }
}

static void spun(struct px_warp *w, uint32_t loop, uint32_t back);
static void yield_turn(struct px_warp *w);

static void branch(struct px_warp *w, const struct px_ins *in, uint32_t m) {
  uint32_t at = w->pc;
  if (m == w->group) {
    w->pc = in->target;
  } else if (m == 0) {
    w->pc++;
  } else {
    struct px_frame *f = w->f;
    for (uint32_t g = w->group; g; g &= g - 1) {
      unsigned l = (unsigned)__builtin_ctz(g);
      f->pcs[l] = (m >> l & 1) ? in->target : w->pc + 1;
    }
    w->group = 0;
    resched(w);
  }
  if (m && in->target <= at && --w->spin % LANE_TURN == 0) spun(w, in->target, at); /* a loop ran a while */
  else if (w->pc >= w->others_min) resched(w);
}

/* Lanes m of the group are done here (exited or returned); the rest (guarded off) go on. */
static void group_done(struct px_warp *w, uint32_t m) {
  if (m == w->group) {
    w->group = 0;
    lanes_leave(w);
    return;
  }
  w->group &= ~m;
  w->pc++;
  if (w->pc >= w->others_min) resched(w);
}

static void exit_lanes(struct px_warp *w, uint32_t m) {
  w->live &= ~m;
  w->blk->exited += (unsigned)__builtin_popcount(m);
  group_done(w, m);
}

/* ---------------------------------------------------------------- calls */

/* A call argument or result: where its bytes are in lane l (a .param variable of the caller's frame,
 * or a register). */
static unsigned char *call_place(struct px_warp *w, const struct px_frame *f, const struct ptx_operand *o, unsigned l,
                                 uint64_t *scratch) {
  if (o->kind == PTX_OPND_SYM) {
    uint32_t off = o->scope == PTX_SCOPE_BODY  ? f->fn->var_offset[o->index]
                   : o->scope == PTX_SCOPE_RET ? f->fn->ret_offset[o->index]
                                               : f->fn->param_offset[o->index];
    return px_local(w, l, f->local_base + off + (uint32_t)o->imm);
  }
  if (o->kind == PTX_OPND_REG) return (unsigned char *)&f->R[f->fn->slot_of_reg[o->index]][l];
  *scratch = (uint64_t)o->imm;
  return (unsigned char *)scratch;
}

static void call(struct px_warp *w, const struct px_ins *in, uint32_t m) {
  const struct px_program *prog = w->blk->prog;
  const struct px_func *callee = &prog->funcs[in->aux];
  struct px_frame *f = w->f;
  if (w->depth + 1 >= PX_MAX_DEPTH || f->local_base + f->fn->frame_bytes + callee->frame_bytes > PX_LOCAL_BYTES) {
    px_fault(w, in, (unsigned)__builtin_ctz(m), GCAP_ERROR_ILLEGAL_ADDRESS,
             "stack overflow: calls %u deep need more than the %u bytes of stack each thread has", w->depth + 1,
             PX_LOCAL_BYTES);
    return;
  }
  if (!grow_regs(w, callee->num_slots, callee->num_preds)) {
    px_fault(w, in, (unsigned)__builtin_ctz(m), GCAP_ERROR_OUT_OF_MEMORY, "no memory for a call frame");
    return;
  }
  for (uint32_t g = w->group; g; g &= g - 1) f->pcs[__builtin_ctz(g)] = w->pc + 1;
  w->regs_used += callee->num_slots;
  w->preds_used += callee->num_preds;
  struct px_frame *c = &w->frames[++w->depth];
  memset(c, 0, sizeof *c);
  c->fn = callee;
  c->lanes = m;
  c->call = in;
  c->local_base = f->local_base + f->fn->frame_bytes;
  if (callee->frame_bytes) { /* the callee's frame holds poison (or zeros), never the last call's bytes */
    const struct px_launch *L = w->blk->l;
    uint64_t word = px_poison_word(L->seed);
    PX_LANES(m, {
      unsigned char *p = px_local(w, l, c->local_base);
      if (L->zero_memory) memset(p, 0, callee->frame_bytes);
      else px_poison_fill(p, callee->frame_bytes, c->local_base, word);
    });
  }
  point_frames(w);
  f = &w->frames[w->depth - 1];
  fill_consts(c);
  const struct ptx_instr *pi = in->src;
  const struct ptx_func *cf = callee->src;
  PX_LANES(m, {
    for (unsigned i = 0; i < pi->num_call_args; i++) {
      uint64_t scratch;
      memcpy(px_local(w, l, c->local_base + callee->param_offset[i]), call_place(w, f, &pi->call_args[i], l, &scratch),
             cf->params[i].size);
    }
  });
  w->f = c;
  w->code = callee->code;
  w->group = m;
  w->pc = 0;
  w->others_min = PX_NO_PC;
  w->ahead = false;
}

static void pop_frame(struct px_warp *w) {
  struct px_frame *c = w->f, *f = &w->frames[w->depth - 1];
  const struct ptx_instr *pi = c->call->src;
  const struct ptx_func *cf = c->fn->src;
  uint32_t back = c->lanes & w->live;
  PX_LANES(back, {
    for (unsigned i = 0; i < pi->num_call_rets; i++) {
      uint64_t scratch;
      unsigned char *dst = call_place(w, f, &pi->call_rets[i], l, &scratch);
      memcpy(dst, px_local(w, l, c->local_base + c->fn->ret_offset[i]), cf->rets[i].size);
    }
  });
  w->regs_used -= c->fn->num_slots;
  w->preds_used -= c->fn->num_preds;
  w->depth--;
  w->f = f;
  w->code = f->fn->code;
  w->group = 0;
  resched(w);
}

static void ret(struct px_warp *w, uint32_t m) {
  if (w->depth == 0) {
    exit_lanes(w, m);
    return;
  }
  w->f->done |= m;
  group_done(w, m);
}

/* ---------------------------------------------------------------- barriers */

static void bar_arrive(struct px_warp *w, const struct px_ins *in, uint32_t m, bool wait) {
  struct px_block *b = w->blk;
  uint32_t id = (uint32_t)px_slot(w, in->a)[__builtin_ctz(w->group)];
  unsigned count = in->b != PX_NONE ? (unsigned)px_slot(w, in->b)[__builtin_ctz(w->group)] : 0;
  if (id >= 16) {
    px_fault(w, in, (unsigned)__builtin_ctz(w->group), GCAP_ERROR_LAUNCH_FAILURE, "barrier %u does not exist (0..15)",
             id);
    return;
  }
  if ((b->l->checks & GCAP_SIM_CHECK_SYNC) && (w->group != w->live || m != w->group)) {
    uint32_t missing = w->live & ~m;
    px_fault(w, in, (unsigned)__builtin_ctz(m ? m : w->group), GCAP_ERROR_LAUNCH_FAILURE,
             "barrier %u in divergent code: lanes 0x%08x of the warp reached it, lanes 0x%08x did not "
             "(bar.sync must be reached by every thread of a warp together)",
             id, m, missing);
    return;
  }
  if (count && (count % 32 != 0 || count > b->num_warps * 32u)) { /* a partial last warp counts whole */
    px_fault(w, in, (unsigned)__builtin_ctz(w->group), GCAP_ERROR_LAUNCH_FAILURE,
             "barrier %u with a thread count of %u (must be a multiple of 32, at most the %u of the block's warps)", id,
             count, b->num_warps * 32u);
    return;
  }
  struct px_barrier *bar = &b->bars[id];
  if (!bar->arrived) {
    bar->pc = w->pc;
    bar->fn = w->f->fn;
    bar->expected = count;
    bar->red_count = 0;
    bar->red_all = true;
    bar->red_any = false;
  } else if ((b->l->checks & GCAP_SIM_CHECK_SYNC) && (bar->pc != w->pc || bar->fn != w->f->fn)) {
    px_fault(w, in, (unsigned)__builtin_ctz(w->group), GCAP_ERROR_LAUNCH_FAILURE,
             "threads wait at different barriers: this warp reached barrier %u here while others wait at PTX line %u",
             id, bar->fn->code[bar->pc].src ? bar->fn->code[bar->pc].src->line : 0);
    return;
  }
  /* With a thread count a warp arrives whole, as the PTX ISA counts it (a partial warp too). */
  bar->arrived += bar->expected ? 32u : (unsigned)__builtin_popcount(w->live);
  if (in->kind) { /* bar.red: the lanes' predicate */
    uint32_t p = w->f->P[in->c] ^ (in->neg_c ? PX_FULL : 0);
    p &= w->live;
    bar->red_count += (unsigned)__builtin_popcount(p);
    if (p != w->live) bar->red_all = false;
    if (p) bar->red_any = true;
  }
  if (!wait) {
    w->pc++;
    return;
  }
  w->state = PX_AT_BARRIER;
  w->bar_id = id;
}

/*
 * bar.sync is .aligned: a warp's lanes execute it together. Lanes that reach it while others of
 * their frame still run elsewhere (a branch body nvcc placed after the barrier, which jumps back
 * to it) wait there, as the warp converges before a barrier on a GPU; when the others arrive, or
 * none can (they exited, returned or wait elsewhere: lanes_leave lets the waiting ones go on),
 * the lanes there go on together and bar_arrive judges them. False: the group waits.
 */
static bool bar_converge(struct px_warp *w, const struct px_ins *in, uint32_t *m) {
  struct px_frame *f = w->f;
  uint32_t here = w->group;
  for (uint32_t p = f->waiting & w->live; p; p &= p - 1)
    if (f->pcs[__builtin_ctz(p)] == w->pc) here |= 1u << __builtin_ctz(p);
  if (f->lanes & w->live & ~f->done & ~f->waiting & ~w->group) { /* others may still come */
    for (uint32_t g = w->group; g; g &= g - 1) f->pcs[__builtin_ctz(g)] = w->pc;
    f->waiting |= w->group;
    w->group = 0;
    lanes_leave(w);
    return false;
  }
  if (here != w->group) {
    f->waiting &= ~here;
    w->group = here;
    *m = here;
    if (in->guard >= 0) *m &= in->guard_neg ? ~f->P[in->guard] : f->P[in->guard];
  }
  return true;
}

/* A barrier whose threads have all arrived releases its warps, which go on after it. */
static void bar_release_ready(struct px_block *b) {
  unsigned live = b->threads - b->exited;
  for (unsigned id = 0; id < 16; id++) {
    struct px_barrier *bar = &b->bars[id];
    if (!bar->arrived) continue;
    unsigned need = bar->expected ? bar->expected : live;
    if (bar->arrived < need) continue;
    for (unsigned i = 0; i < b->num_warps; i++) {
      struct px_warp *w = &b->warps[i];
      if (w->state != PX_AT_BARRIER || w->bar_id != id) continue;
      const struct px_ins *in = &w->code[w->pc];
      if (in->kind) {
        uint64_t v = in->kind == 1 ? bar->red_count : in->kind == 2 ? bar->red_all : bar->red_any;
        if (in->d != PX_NONE) {
          uint64_t *d = px_slot(w, in->d);
          PX_LANES(w->group, d[l] = v);
        } else {
          w->f->P[in->pd2] = (w->f->P[in->pd2] & ~w->group) | (v ? w->group : 0);
        }
      }
      w->state = PX_RUNNING;
      w->pc++;
      if (w->pc >= w->others_min) resched(w);
    }
    bar->arrived = 0;
    b->epoch++;
    if (b->clean) memset(b->clean, 0, (b->shared_bytes + 127) / 128 * sizeof *b->clean);
  }
}

/* __syncwarp: the named lanes wait for each other (they may come from different paths). */
static void warp_sync(struct px_warp *w, const struct px_ins *in, uint32_t m) {
  struct px_frame *f = w->f;
  /* Named lanes that exited or never existed (a partial last warp) take no part, as on a GPU. */
  uint32_t mask = (uint32_t)px_slot(w, in->a)[__builtin_ctz(w->group)];
  uint32_t here = w->group;
  for (uint32_t p = f->waiting; p; p &= p - 1) {
    unsigned l = (unsigned)__builtin_ctz(p);
    if (f->pcs[l] == w->pc) here |= 1u << l;
  }
  uint32_t need = mask & w->live & f->lanes;
  (void)m;
  if ((need & ~here) == 0) { /* everyone named is here: all go on together */
    f->waiting &= ~here;
    w->group = here;
    w->pc++;
    w->blk->wsync_count++;
    for (uint32_t g = here; g; g &= g - 1)
      w->blk->wsync_epoch[px_thread(w, (unsigned)__builtin_ctz(g))] = w->blk->wsync_count;
    if (w->pc >= w->others_min) resched(w);
    return;
  }
  for (uint32_t g = w->group; g; g &= g - 1) f->pcs[__builtin_ctz(g)] = w->pc;
  f->waiting |= w->group;
  w->group = 0;
  lanes_leave(w);
}

/* ---------------------------------------------------------------- control instructions */

static void control(struct px_warp *w, const struct px_ins *in, uint32_t m) {
  switch ((enum px_ctl)in->ctl) {
  case PX_CTL_BRA: branch(w, in, m); return;
  case PX_CTL_EXIT:
    if (m) exit_lanes(w, m);
    else if (++w->pc >= w->others_min) resched(w);
    return;
  case PX_CTL_RET:
    if (m) ret(w, m);
    else if (++w->pc >= w->others_min) resched(w);
    return;
  case PX_CTL_CALL:
    if (m) call(w, in, m);
    else if (++w->pc >= w->others_min) resched(w);
    return;
  case PX_CTL_BAR:
  case PX_CTL_ARRIVE:
    if (w->ahead && lanes_behind(w, PX_FULL)) resched(w); /* lanes behind come first, as the warp converges */
    else if (bar_converge(w, in, &m)) bar_arrive(w, in, m, in->ctl == PX_CTL_BAR);
    return;
  case PX_CTL_WARP:
    if (m && w->ahead && lanes_behind(w, px_members(w, in, m))) { /* the lanes it names come first */
      resched(w);
      return;
    }
    if (m) in->fn(w, in, m);
    if (++w->pc >= w->others_min) resched(w);
    return;
  case PX_CTL_YIELD:
    w->pc++;
    if (m) yield_turn(w);
    else if (w->pc >= w->others_min) resched(w);
    return;
  case PX_CTL_POLL: /* an mbarrier wait: one that failed lets the others run, as a sleep does */
    w->yield = false;
    if (m) in->fn(w, in, m);
    w->pc++;
    if (w->yield) yield_turn(w);
    else if (w->pc >= w->others_min) resched(w);
    return;
  case PX_CTL_WSYNC:
    if (m) warp_sync(w, in, m);
    else if (++w->pc >= w->others_min) resched(w);
    return;
  case PX_CTL_TRAP:
    if (m && in->kind)
      px_fault(w, in, (unsigned)__builtin_ctz(m), GCAP_ERROR_ILLEGAL_INSTRUCTION,
               "brkpt executed, with no debugger to stop in");
    else if (m) px_fault(w, in, (unsigned)__builtin_ctz(m), GCAP_ERROR_LAUNCH_FAILURE, "trap executed");
    else if (++w->pc >= w->others_min) resched(w);
    return;
  case PX_CTL_BUILTIN:
    if (m) in->fn(w, in, m);
    if (++w->pc >= w->others_min) resched(w);
    return;
  default: return;
  }
}

/* ---------------------------------------------------------------- the watchdog */

/* Control instructions between two polls: a poll reads the clock, so this keeps it off the hot path. */
#define POLL_EVERY 1024u
static _Thread_local uint32_t poll_countdown = POLL_EVERY;

/* "PTX line 12 "bra $L1" (loop.cu:5)": where an instruction comes from. */
static int describe_ins(const struct px_block *b, const struct px_ins *in, char *buf, size_t size) {
  const struct ptx_instr *pi = in ? in->src : NULL;
  if (!pi) return snprintf(buf, size, "an instruction the simulator added at the end of a function");
  if (!pi->loc_file) return snprintf(buf, size, "PTX line %u \"%s\"", pi->line, pi->text ? pi->text : "");
  return snprintf(buf, size, "PTX line %u \"%s\" (%s:%u)", pi->line, pi->text ? pi->text : "",
                  file_name(b, pi->loc_file), pi->loc_line);
}

/* Appends to buf (at *n) what each unfinished warp was running, warps at the same instruction together. */
static void describe_warps(const struct px_block *b, char *buf, size_t size, size_t *n) {
  const char *sep = "";
  for (unsigned i = 0; i < b->num_warps && *n < size;) {
    const struct px_warp *w = &b->warps[i];
    if (w->state == PX_FINISHED) {
      i++;
      continue;
    }
    const struct px_ins *in = &w->code[w->pc];
    unsigned last = i;
    while (last + 1 < b->num_warps && b->warps[last + 1].state != PX_FINISHED &&
           &b->warps[last + 1].code[b->warps[last + 1].pc] == in)
      last++;
    char at[300];
    describe_ins(b, in, at, sizeof at);
    int k = last == i ? snprintf(buf + *n, size - *n, "%swarp %u at %s", sep, i, at)
                      : snprintf(buf + *n, size - *n, "%swarps %u-%u at %s", sep, i, last, at);
    if (k < 0) return;
    *n += (size_t)k;
    sep = "; ";
    i = last + 1;
  }
}

/* The watchdog or an interrupt stopped the block: the report names the kernel, the block and where each warp was. */
static void stop_block(struct px_block *b, enum px_stop why) {
  if (b->status != GCAP_SUCCESS) return;
  b->status = why == PX_STOP_FAILED ? GCAP_ERROR_LAUNCH_FAILURE : GCAP_ERROR_LAUNCH_TIMEOUT;
  if (why == PX_STOP_FAILED || b->msg_size == 0) return; /* another block reports the launch's failure */
  int k = why == PX_STOP_TIMEOUT
              ? snprintf(b->msg, b->msg_size,
                         "kernel \"%s\" block (%u,%u,%u) ran past the simulator's watchdog (%u ms, "
                         "kernel_timeout_ms or GCAP_SIM_KERNEL_TIMEOUT) and was stopped; its warps were at: ",
                         b->l->name, b->idx.x, b->idx.y, b->idx.z, b->l->timeout_ms)
              : snprintf(b->msg, b->msg_size,
                         "kernel \"%s\" block (%u,%u,%u) was stopped by gcap_sim_interrupt; its warps were at: ",
                         b->l->name, b->idx.x, b->idx.y, b->idx.z);
  size_t n = k < 0 ? 0 : (size_t)k;
  describe_warps(b, b->msg, b->msg_size, &n);
}

/* True when the block must stop (its status and report are set). */
static bool poll_stop(struct px_block *b) {
  poll_countdown = POLL_EVERY;
  enum px_stop why = b->l->poll ? b->l->poll(b->l) : PX_GO;
  if (why == PX_GO) return false;
  stop_block(b, why);
  return true;
}

/* ---------------------------------------------------------------- independent progress */

/* Rounds in a row in which every running warp spins in an unchanged state before the block is reported. */
#define IDLE_ROUNDS 3u

static uint64_t mix(uint64_t h, uint64_t v) { return (h ^ v) * 0x100000001b3ull; }

/* The warp's state: where its lanes are and what its registers hold. */
static uint64_t fingerprint(const struct px_warp *w) {
  uint64_t h = 0xcbf29ce484222325ull;
  h = mix(mix(mix(mix(h, w->pc), w->group), w->live), w->depth);
  for (unsigned i = 0; i <= w->depth; i++) {
    const struct px_frame *f = &w->frames[i];
    h = mix(mix(h, f->done), f->waiting);
    for (unsigned l = 0; l < 32; l++) h = mix(h, f->pcs[l]);
  }
  const uint64_t *r = w->regs[0];
  for (size_t i = 0; i < w->regs_used * 32; i++) h = mix(h, r[i]);
  for (size_t i = 0; i < w->preds_used; i++) h = mix(h, w->preds[i]);
  return h;
}

/*
 * The warp leaves its turn (it slept, or spun): the block's other warps get theirs, and the lanes
 * above it in its frame run first. Its count of backward branches goes on, so that a loop that
 * sleeps is still found spinning.
 */
PX_COLD static void yield_turn(struct px_warp *w) {
  w->yield = true;
  rotate(w);
}

/*
 * Whether the loop [loop, back] reads memory that something outside the block may write while
 * it spins (global or generic memory: other blocks, the host), or calls out.
 */
static bool loop_reads_outside(const struct px_warp *w, uint32_t loop, uint32_t back) {
  for (uint32_t pc = loop; pc <= back; pc++) {
    const struct px_ins *in = &w->code[pc];
    if (in->ctl == PX_CTL_CALL || in->ctl == PX_CTL_BUILTIN) return true;
    const struct ptx_instr *pi = in->src;
    bool reads = pi && (pi->op == PTX_OP_LD || pi->op == PTX_OP_LDU || pi->op == PTX_OP_ATOM);
    if (reads && (pi->space == PTX_SPACE_GLOBAL || pi->space == PTX_SPACE_GENERIC)) return true;
  }
  return false;
}

/*
 * A loop [loop, back] ran a turn's worth. The warp's state is remembered first, so that a block
 * whose warps spin without anything changing is found (spinning_idle).
 */
PX_COLD static void end_turn(struct px_warp *w, uint32_t loop, uint32_t back) {
  for (uint32_t g = w->group; g; g &= g - 1) w->f->pcs[__builtin_ctz(g)] = w->pc;
  uint64_t h = fingerprint(w);
  w->same = h == w->fingerprint ? w->same + 1 : 0;
  w->fingerprint = h;
  w->outside = loop_reads_outside(w, loop, back);
  w->spin = TURN;
  yield_turn(w);
}

/*
 * A loop ran LANE_TURN backward branches: the lanes of the warp elsewhere in its frame run first
 * (rotate); after TURN of them the warp's turn ends.
 */
PX_COLD static void spun(struct px_warp *w, uint32_t loop, uint32_t back) {
  if (w->spin == 0) end_turn(w, loop, back);
  else if (w->others_min != PX_NO_PC || w->ahead) rotate(w);
}

/*
 * Whether the block can never finish although warps still run: each running warp ended its last
 * turns in the same state, in a loop that reads only what the block alone can change (shared
 * and local memory: a spin on global memory may wait for another block or the host, and is left
 * to the watchdog), and shared memory stayed the same for IDLE_ROUNDS rounds.
 */
PX_COLD static bool spinning_idle(struct px_block *b) {
  for (unsigned i = 0; i < b->num_warps; i++)
    if (b->warps[i].state == PX_RUNNING && (b->warps[i].same < 2 || b->warps[i].outside)) {
      b->idle_rounds = 0;
      return false;
    }
  uint64_t h = 0xcbf29ce484222325ull;
  for (uint32_t i = 0; i + 8 <= b->shared_bytes; i += 8) {
    uint64_t v;
    memcpy(&v, b->shared + i, 8);
    h = mix(h, v);
  }
  if (b->idle_rounds == 0 || h != b->shared_print) {
    b->shared_print = h;
    b->idle_rounds = 1;
    return false;
  }
  return ++b->idle_rounds >= IDLE_ROUNDS;
}

static void describe_warps(const struct px_block *b, char *buf, size_t size, size_t *n);

PX_COLD static void report_spinning(struct px_block *b) {
  struct px_warp *w = b->warps;
  while (w->state != PX_RUNNING) w++;
  px_fault(w, &w->code[w->pc], (unsigned)__builtin_ctz(w->group ? w->group : w->live), GCAP_ERROR_LAUNCH_FAILURE,
           "the block can never finish: its running warps spin without changing anything (their registers and the "
           "block's shared memory stayed the same for %u turns of %u backward branches), and they read only memory "
           "of the block; its warps are at: ",
           IDLE_ROUNDS, TURN);
  size_t n = strlen(b->msg);
  describe_warps(b, b->msg, b->msg_size, &n);
}

/* ---------------------------------------------------------------- the warp loop */

static void run_warp(struct px_warp *w) {
  struct px_block *b = w->blk;
  uint64_t executed = 0;
  while (w->state == PX_RUNNING && b->status == GCAP_SUCCESS) {
    const struct px_ins *in = &w->code[w->pc];
    uint32_t m = w->group;
    if (in->guard >= 0) {
      uint32_t p = w->f->P[in->guard];
      m &= in->guard_neg ? ~p : p;
    }
    if (in->ctl == PX_CTL_NONE ||
        (in->ctl == PX_CTL_WARP && !w->ahead)) {                        /* a warp operation converges only when ahead */
      executed += m == PX_FULL ? 32u : (unsigned)__builtin_popcount(m); /* popcount may be a library call */
      if (m) in->fn(w, in, m);
      if (++w->pc >= w->others_min) resched(w);
      continue;
    }
    if (--poll_countdown == 0 && poll_stop(b)) break; /* before it runs: the report shows the warp here */
    executed += m == PX_FULL ? 32u : (unsigned)__builtin_popcount(m);
    control(w, in, m);
    if (w->yield) {
      w->yield = false;
      break;
    }
  }
  w->executed += executed;
}

/* ---------------------------------------------------------------- blocks */

uint64_t px_next_serial(void) {
  static atomic_uint_fast64_t serial;
  return atomic_fetch_add(&serial, 1) + 1;
}

/* Shared memory comes per launch (prepare): a worker starts with none. */
struct px_worker *px_worker_create(void) {
  return gcap__calloc(1, sizeof(struct px_worker));
}

/* The shared memory of each block of launch l: static, dynamic, then the system's reserved region. */
static uint32_t block_shared_bytes(const struct px_launch *l) {
  uint32_t bytes = l->kernel->dynamic_offset + l->dynamic_shared; /* static, then dynamic (px_launch_check) */
  if (l->kernel->reserved_bytes) /* then the system's region, 16-aligned, past what the kernel may use */
    bytes = (bytes + 15u) / 16u * 16u + l->kernel->reserved_bytes;
  return bytes;
}

/*
 * Shared memory (and, checking races, its shadow) for blocks of `bytes`: grown when a launch needs
 * more than the worker has, in whole 4 KiB, so a launch with little pays little.
 */
static bool shared_ready(struct px_worker *wk, uint32_t bytes, bool races) {
  uint32_t cap = (bytes + 4095u) / 4096u * 4096u;
  if (cap == 0) cap = 4096u;
  if (cap > wk->shared_cap) {
    gcap__free(wk->shared);
    gcap__free(wk->shared_init);
    wk->shared_cap = 0;
    wk->shared = gcap__aligned_alloc(64, cap);
    wk->shared_init = gcap__malloc(cap);
    if (!wk->shared || !wk->shared_init) return false;
    wk->shared_cap = cap;
  }
  if (races && cap > wk->shadow_cap) {
    gcap__free(wk->shadow);
    gcap__free(wk->clean);
    wk->shadow_cap = 0;
    wk->shadow = gcap__calloc(cap, sizeof *wk->shadow);
    wk->clean = gcap__calloc(cap / 128, sizeof *wk->clean);
    if (!wk->shadow || !wk->clean) return false;
    wk->shadow_cap = cap;
  }
  return true;
}

static void free_warps(struct px_worker *w) {
  for (size_t i = 0; i < w->warps_cap; i++) {
    gcap__free(w->warps[i].regs);
    gcap__free(w->warps[i].preds);
  }
  gcap__free(w->warps);
  w->warps = NULL;
  w->warps_cap = 0;
}

void px_worker_destroy(struct px_worker *w) {
  if (!w) return;
  free_warps(w);
  gcap__free(w->shared);
  gcap__free(w->shared_init);
  gcap__free(w->shadow);
  gcap__free(w->clean);
  gcap__free(w->wsync_epoch);
  gcap__free(w->tid);
  gcap__free(w->local);
  px_async_free(w->async);
  gcap__free(w);
}

/* Warps, stacks and shadow memory for blocks of this launch, and the entry frames' constants. */
static bool prepare(struct px_worker *wk, const struct px_launch *l, unsigned threads, unsigned warps) {
  if (wk->prepared == l->serial) return true;
  const struct px_func *fn = l->kernel->fn;
  if (warps > wk->warps_cap) {
    void *p = gcap__realloc(wk->warps, warps * sizeof *wk->warps);
    if (!p) return false;
    wk->warps = p;
    memset(wk->warps + wk->warps_cap, 0, (warps - wk->warps_cap) * sizeof *wk->warps);
    wk->warps_cap = warps;
  }
  if (threads > wk->local_threads) {
    gcap__free(wk->local);
    gcap__free(wk->wsync_epoch);
    gcap__free(wk->tid);
    wk->local_threads = 0;
    wk->local = gcap__malloc((size_t)threads * PX_LOCAL_BYTES);
    wk->wsync_epoch = gcap__calloc(threads, sizeof *wk->wsync_epoch);
    wk->tid = gcap__calloc(threads, sizeof *wk->tid);
    if (!wk->local || !wk->wsync_epoch || !wk->tid) return false;
    wk->local_threads = threads;
  }
  if (!shared_ready(wk, block_shared_bytes(l), l->checks & GCAP_SIM_CHECK_SHARED_RACES)) return false;
  for (unsigned t = 0; t < threads; t++) {
    wk->tid[t][0] = (uint16_t)(t % l->block.x);
    wk->tid[t][1] = (uint16_t)(t / l->block.x % l->block.y);
    wk->tid[t][2] = (uint16_t)(t / l->block.x / l->block.y);
  }
  for (unsigned i = 0; i < warps; i++) {
    struct px_warp *w = &wk->warps[i];
    w->regs_used = w->preds_used = 0;
    if (!grow_regs(w, fn->num_slots, fn->num_preds)) return false;
    w->regs_used = fn->num_slots;
    w->preds_used = fn->num_preds;
    w->depth = 0;
    w->frames[0].fn = fn;
    point_frames(w);
    fill_consts(&w->frames[0]);
  }
  wk->prepared = l->serial;
  return true;
}

static void start_warp(struct px_block *b, struct px_warp *w, unsigned index) {
  const struct px_func *fn = b->k->fn;
  unsigned first = index * 32, n = b->threads - first < 32 ? b->threads - first : 32;
  w->blk = b;
  w->index = index;
  w->exists = n == 32 ? PX_FULL : (1u << n) - 1;
  w->live = w->exists;
  w->group = w->exists;
  w->pc = 0;
  w->others_min = PX_NO_PC;
  w->cc = 0;
  w->depth = 0;
  w->regs_used = fn->num_slots;
  w->preds_used = fn->num_preds;
  w->f = &w->frames[0];
  w->f->lanes = w->exists;
  w->f->done = w->f->waiting = 0;
  w->f->local_base = 0;
  w->code = fn->code;
  w->state = PX_RUNNING;
  w->executed = 0;
  w->ahead = w->yield = false;
  w->spin = TURN;
  w->same = 0;
  w->fingerprint = 0;
  w->outside = false;
}

static void start_block(struct px_worker *wk, struct px_block *b, const struct px_launch *l, gcap_dim3 idx) {
  memset(b, 0, sizeof *b);
  b->l = l;
  b->k = l->kernel;
  b->prog = l->program;
  b->files = l->program->module->files;
  b->num_files = l->program->module->num_files;
  b->idx = idx;
  b->checks = l->checks;
  b->threads = l->block.x * l->block.y * l->block.z;
  b->num_warps = (b->threads + 31) / 32;
  b->warps = wk->warps;
  b->shared = wk->shared;
  b->shared_bytes = block_shared_bytes(l);
  b->shared_init = wk->shared_init;
  b->shadow = wk->shadow;
  b->clean = (l->checks & GCAP_SIM_CHECK_SHARED_RACES) ? wk->clean : NULL;
  b->wsync_epoch = wk->wsync_epoch;
  b->tid = (const uint16_t(*)[3])wk->tid;
  b->local = wk->local;
  b->rng = l->seed ^ (0x9e3779b97f4a7c15ull * (1 + idx.x + 65536ull * idx.y + 4294967296ull * idx.z));
  /* Shared memory and the entry frames' local bytes hold what a GPU leaves: poison, or zeros on request. */
  uint32_t frame = l->kernel->fn->frame_bytes;
  if (l->zero_memory) {
    memset(b->shared, 0, b->shared_bytes);
    if (frame)
      for (unsigned t = 0; t < b->threads; t++) memset(b->local + (size_t)t * PX_LOCAL_BYTES, 0, frame);
  } else {
    uint64_t word = px_poison_word(l->seed);
    px_poison_fill(b->shared, b->shared_bytes, 0, word);
    if (frame)
      for (unsigned t = 0; t < b->threads; t++) px_poison_fill(b->local + (size_t)t * PX_LOCAL_BYTES, frame, 0, word);
  }
  if (l->checks & GCAP_SIM_CHECK_INIT) memset(b->shared_init, 0, b->shared_bytes);
  if (l->kernel->reserved_bytes) { /* the system's region starts as zeros, written: cooperative groups rely on it */
    uint32_t at = b->shared_bytes - l->kernel->reserved_bytes;
    memset(b->shared + at, 0, l->kernel->reserved_bytes);
    if (l->checks & GCAP_SIM_CHECK_INIT) memset(b->shared_init + at, 1, l->kernel->reserved_bytes);
  }
  if (l->checks & GCAP_SIM_CHECK_SHARED_RACES) {
    memset(b->shadow, 0, b->shared_bytes * sizeof *b->shadow);
    memset(b->clean, 0, (b->shared_bytes + 127) / 128 * sizeof *b->clean);
  }
  memset(b->wsync_epoch, 0, b->threads * sizeof *b->wsync_epoch);
  for (unsigned i = 0; i < b->num_warps; i++) start_warp(b, &wk->warps[i], i);
}

static uint64_t next_random(uint64_t *s) {
  uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

static void report_stuck(struct px_block *b) {
  for (unsigned i = 0; i < b->num_warps; i++) {
    struct px_warp *w = &b->warps[i];
    if (w->state != PX_AT_BARRIER) continue;
    struct px_barrier *bar = &b->bars[w->bar_id];
    unsigned need = bar->expected ? bar->expected : b->threads - b->exited;
    px_fault(w, &w->code[w->pc], (unsigned)__builtin_ctz(w->group ? w->group : w->live), GCAP_ERROR_LAUNCH_FAILURE,
             "the block can never finish: %u threads wait at barrier %u, which needs %u, and no other thread can "
             "run (threads wait at different barriers, or a thread count no threads make up)",
             bar->arrived, w->bar_id, need);
    return;
  }
}

/*
 * One round of the block: its warps take turns from a seeded starting point, each running until
 * it waits, finishes or spins a turn. False when the block is done (finished, or failed: its
 * status says which). Not inlined: the interpreter's loop (run_warp, control) is inlined here
 * once, for ordinary and cooperative launches alike.
 */
PX_NOINLINE static bool block_round(struct px_block *b) {
  bool left = false;
  unsigned start = b->num_warps > 1 ? (unsigned)(next_random(&b->rng) % b->num_warps) : 0;
  for (unsigned k = 0; k < b->num_warps && b->status == GCAP_SUCCESS; k++) {
    struct px_warp *w = &b->warps[(start + k) % b->num_warps];
    if (w->state == PX_RUNNING) {
      run_warp(w);
      if (w->state != PX_RUNNING) w->same = 0; /* it did not spin: it waits, or finished */
    }
    if (w->state != PX_FINISHED) left = true;
  }
  if (b->status != GCAP_SUCCESS || !left) return false;
  bar_release_ready(b);
  bool runnable = false;
  for (unsigned i = 0; i < b->num_warps; i++) runnable |= b->warps[i].state == PX_RUNNING;
  if (!runnable) {
    report_stuck(b);
    return false;
  }
  if (spinning_idle(b)) {
    report_spinning(b);
    return false;
  }
  return true;
}

/* Rounds until the block is done. */
static void run_block(struct px_block *b) {
  while (block_round(b)) {}
}

gcap_status px_run_block(struct px_worker *wk, const struct px_launch *l, gcap_dim3 block_idx, char *msg, size_t size,
                         uint64_t *instructions) {
  unsigned threads = l->block.x * l->block.y * l->block.z, warps = (threads + 31) / 32;
  if (!prepare(wk, l, threads, warps)) {
    wk->prepared = 0;
    snprintf(msg, size, "kernel \"%s\": no memory for the warps of a block of %u threads and its shared memory",
             l->name, threads);
    return GCAP_ERROR_OUT_OF_MEMORY;
  }
  struct px_block *b = &wk->blk;
  start_block(wk, b, l, block_idx);
  b->msg = msg;
  b->msg_size = size;
  b->async = wk->async;
  run_block(b);
  px_async_block_end(b); /* copies never waited for land now */
  wk->async = b->async;
  for (unsigned i = 0; i < warps; i++) *instructions += wk->warps[i].executed;
  if (b->status != GCAP_SUCCESS) wk->prepared = 0; /* frames may be left deep */
  return b->status;
}

/*
 * A cooperative launch: a worker per block, so that every block keeps its warps, shared and local
 * memory while the others run; the blocks take rounds in index order until all are done or one
 * fails (its report is the launch's). Blocks spinning at a grid barrier read global memory, so
 * the block checks leave them to the watchdog, which every block polls.
 */
/* At least n workers in the pool; false when memory runs out (the pool keeps what it had). */
static bool coop_pool_reserve(struct px_coop_pool *pool, size_t n) {
  if (pool->count >= n) return true;
  struct px_worker **grown = gcap__realloc(pool->workers, n * sizeof *grown);
  if (!grown) return false;
  pool->workers = grown;
  for (; pool->count < n; pool->count++)
    if (!(pool->workers[pool->count] = px_worker_create())) return false;
  return true;
}

void px_coop_pool_free(struct px_coop_pool *pool) {
  for (size_t i = 0; i < pool->count; i++) px_worker_destroy(pool->workers[i]);
  gcap__free(pool->workers);
  pool->workers = NULL;
  pool->count = 0;
}

gcap_status px_run_cooperative(const struct px_launch *l, struct px_coop_pool *pool, char *msg, size_t size,
                               uint64_t *instructions) {
  unsigned threads = l->block.x * l->block.y * l->block.z, warps = (threads + 31) / 32;
  size_t n = (size_t)l->grid.x * l->grid.y * l->grid.z; /* the size check bounds it */
  bool *done = gcap__calloc(n, sizeof *done);
  gcap_status st = done && coop_pool_reserve(pool, n) ? GCAP_SUCCESS : GCAP_ERROR_OUT_OF_MEMORY;
  struct px_worker **wk = pool->workers;
  gcap_dim3 idx = {0, 0, 0};
  size_t started = 0;
  for (; started < n && st == GCAP_SUCCESS; started++) {
    if (!prepare(wk[started], l, threads, warps)) {
      wk[started]->prepared = 0;
      st = GCAP_ERROR_OUT_OF_MEMORY;
      break;
    }
    struct px_block *b = &wk[started]->blk;
    start_block(wk[started], b, l, idx);
    b->msg = msg;
    b->msg_size = size;
    b->async = wk[started]->async;
    if (++idx.x == l->grid.x) {
      idx.x = 0;
      if (++idx.y == l->grid.y) idx.y = 0, idx.z++;
    }
  }
  if (st != GCAP_SUCCESS)
    snprintf(msg, size,
             "kernel \"%s\": no memory to keep the %zu blocks of %u threads of a cooperative launch resident at once",
             l->name, n, threads);
  for (size_t live = n; st == GCAP_SUCCESS && live;)
    for (size_t i = 0; i < n; i++) {
      if (done[i] || block_round(&wk[i]->blk)) continue;
      done[i] = true;
      live--;
      px_async_block_end(&wk[i]->blk); /* copies never waited for land now */
      if ((st = wk[i]->blk.status) != GCAP_SUCCESS) break;
    }
  for (size_t i = 0; i < started; i++) {
    if (!done[i]) px_async_block_end(&wk[i]->blk); /* stopped by another block's failure */
    wk[i]->async = wk[i]->blk.async;
    for (unsigned k = 0; k < warps; k++) *instructions += wk[i]->warps[k].executed;
    if (!done[i] || wk[i]->blk.status != GCAP_SUCCESS) wk[i]->prepared = 0; /* frames may be left deep */
  }
  gcap__free(done);
  return st;
}
