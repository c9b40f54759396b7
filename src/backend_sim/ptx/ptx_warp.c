/*
 * Warp-wide operations (shfl, vote, match, redux, activemask), barriers' lowering, and the
 * functions PTX may call that the simulator provides: vprintf (device printf), __assertfail
 * (device assert) and cudaGraphSetConditional.
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>

#include "ptx_internal.h"

#define HANDLER(name) static void name(struct px_warp *w, const struct px_ins *in, uint32_t m)

/*
 * SYNC: every lane running the instruction is in its member mask, and every member that has not
 * exited runs it (lanes that never existed, in a partial last warp, count as exited, as
 * compute-sanitizer's synccheck counts them). g: the lanes that passed `members`.
 */
static bool members_ok(struct px_warp *w, const struct px_ins *in, uint32_t g, uint32_t members) {
  if ((g & ~members) == 0 && (members & w->live & ~g) == 0) return true;
  uint32_t missing = members & w->live & ~g, extra = g & ~members;
  px_fault(w, in, (unsigned)__builtin_ctz(g), GCAP_ERROR_LAUNCH_FAILURE,
           missing ? "member mask 0x%08x names lanes 0x%08x that are not executing this instruction with it "
                     "(inactive, elsewhere in divergent code, or passing another mask)"
                   : "lanes 0x%08x execute it but member mask 0x%08x does not name them",
           missing ? members : extra, missing ? missing : members);
  return false;
}

/* Whether the 32 lanes of E hold the same low 32 bits as `first`: 8 vector steps where the compiler has vectors. */
static bool same_in_all_lanes(const uint64_t *E, uint64_t first) {
#if defined(__GNUC__)
  typedef uint64_t lanes4 __attribute__((vector_size(32)));
  lanes4 acc = {0, 0, 0, 0}, f = {first, first, first, first};
  for (unsigned l = 0; l < 32; l += 4) {
    lanes4 v;
    memcpy(&v, E + l, sizeof v);
    acc |= v ^ f;
  }
  return (uint32_t)(acc[0] | acc[1] | acc[2] | acc[3]) == 0;
#else
  uint64_t diff = 0;
  for (unsigned l = 0; l < 32; l++) diff |= E[l] ^ first;
  return (uint32_t)diff == 0;
#endif
}

/* A warp operation on the lanes g that passed the member mask `members`. */
typedef void (*warp_op)(struct px_warp *w, const struct px_ins *in, uint32_t g, uint32_t members);

/*
 * Runs op once for each set of lanes of m that pass the same member mask: the PTX ISA defines
 * the mask per thread, and converged lanes of different groups (cooperative groups' labeled
 * partitions) execute one instruction with different masks, each group on its own.
 */
#if defined(__GNUC__)
__attribute__((always_inline))
#endif
static inline void
per_mask(struct px_warp *w, const struct px_ins *in, uint32_t m, warp_op op) {
  const uint64_t *E = px_slot(w, in->e);
  bool check = w->blk->checks & GCAP_SIM_CHECK_SYNC;
  uint64_t first = E[__builtin_ctz(m)], diff = 0;
  bool constant = in->e >= w->f->fn->num_regs; /* an immediate, or a register only ever set to one */
  if (!constant && m != PX_FULL) PX_LANES(m, diff |= E[l] ^ first);
  if (constant || (m == PX_FULL ? same_in_all_lanes(E, first) : !(uint32_t)diff)) { /* one mask for all */
    if (!check || members_ok(w, in, m, (uint32_t)first)) op(w, in, m, (uint32_t)first);
    return;
  }
  if (check) /* a lane outside its own mask first: the most precise report */
    PX_LANES(
        m, if (!((uint32_t)E[l] >> l & 1)) {
          px_fault(w, in, l, GCAP_ERROR_LAUNCH_FAILURE,
                   "lanes 0x%08x execute it but member mask 0x%08x does not name them", 1u << l, (uint32_t)E[l]);
          return;
        });
  for (uint32_t rest = m; rest && w->blk->status == GCAP_SUCCESS;) {
    uint32_t members = (uint32_t)E[__builtin_ctz(rest)], g = 0;
    PX_LANES(rest, g |= (uint32_t)((uint32_t)E[l] == members) << l);
    rest &= ~g;
    if (!check || members_ok(w, in, g, members)) op(w, in, g, members);
  }
}

/* What a shuffle reads from a lane that is not executing it, with the SYNC check off (documented). */
#define PX_SHFL_INACTIVE 0xffffffffu

/* shfl.sync.{up,down,bfly,idx}.b32 d|p, a, b, c, membermask; in->kind the mode. */
static void shfl(struct px_warp *w, const struct px_ins *in, uint32_t m, uint32_t members) {
  (void)members;
  const uint64_t *A = px_slot(w, in->a), *B = px_slot(w, in->b), *C = px_slot(w, in->c);
  uint64_t src[32];
  memcpy(src, A, sizeof src);
  uint64_t *d = px_slot(w, in->d);
  uint32_t ok = 0, bad = 0;
  unsigned mode = in->kind;
  PX_LANES(m, {
    uint32_t b = (uint32_t)B[l] & 31, c = (uint32_t)C[l];
    uint32_t seg = (c >> 8) & 31, clamp = c & 31;
    uint32_t max_lane = (l & seg) | (clamp & ~seg), min_lane = l & seg;
    int j;
    bool in_range;
    switch (mode) {
    case PTX_SHFL_UP:
      j = (int)l - (int)b;
      in_range = j >= (int)max_lane;
      break;
    case PTX_SHFL_DOWN:
      j = (int)(l + b);
      in_range = j <= (int)max_lane;
      break;
    case PTX_SHFL_BFLY:
      j = (int)(l ^ b);
      in_range = j <= (int)max_lane;
      break;
    default:
      j = (int)(min_lane | (b & ~seg));
      in_range = j <= (int)max_lane;
      break;
    }
    if (!in_range) j = (int)l;
    if (!(m >> j & 1)) bad |= 1u << l;
    d[l] = src[j];
    if (in_range) ok |= 1u << l;
  });
  if (bad) PX_LANES(bad, d[l] = PX_SHFL_INACTIVE); /* not the stale register of a lane that is not here */
  if (bad && (w->blk->checks & GCAP_SIM_CHECK_SYNC)) {
    px_fault(w, in, (unsigned)__builtin_ctz(bad), GCAP_ERROR_LAUNCH_FAILURE,
             "lanes 0x%08x read the value of lanes that are not executing this shfl", bad);
    return;
  }
  if (in->pd2 != PX_NONE) w->f->P[in->pd2] = (w->f->P[in->pd2] & ~m) | ok;
}

/* vote.sync: kind the mode; a the predicate (negated by neg_a). */
static void vote(struct px_warp *w, const struct px_ins *in, uint32_t m, uint32_t members) {
  (void)members;
  uint32_t p = (w->f->P[in->a] ^ (in->neg_a ? PX_FULL : 0)) & m;
  if (in->kind == PTX_VOTE_BALLOT) {
    uint64_t *d = px_slot(w, in->d);
    PX_LANES(m, d[l] = p);
    return;
  }
  bool r = in->kind == PTX_VOTE_ALL ? p == m : in->kind == PTX_VOTE_ANY ? p != 0 : (p == 0 || p == m);
  w->f->P[in->d] = (w->f->P[in->d] & ~m) | (r ? m : 0);
}

/* match.any / match.all: in->size the value's bytes. */
static void match(struct px_warp *w, const struct px_ins *in, uint32_t m, uint32_t members) {
  (void)members;
  const uint64_t *A = px_slot(w, in->a);
  uint64_t mask = in->size == 8 ? ~0ull : 0xffffffffull, v[32];
  for (unsigned l = 0; l < 32; l++) v[l] = A[l] & mask;
  uint64_t *d = px_slot(w, in->d);
  if (in->kind == PTX_MATCH_ANY) {
    PX_LANES(m, {
      uint32_t same = 0;
      for (uint32_t k = m; k; k &= k - 1)
        if (v[__builtin_ctz(k)] == v[l]) same |= 1u << __builtin_ctz(k);
      d[l] = same;
    });
    return;
  }
  bool all = true;
  unsigned first = (unsigned)__builtin_ctz(m);
  PX_LANES(m, all = all && v[l] == v[first]);
  PX_LANES(m, d[l] = all ? m : 0);
  if (in->pd2 != PX_NONE) w->f->P[in->pd2] = (w->f->P[in->pd2] & ~m) | (all ? m : 0);
}

/* redux.sync: in->kind the reduction (enum ptx_boolop), in->vec 1 for signed. */
static void redux(struct px_warp *w, const struct px_ins *in, uint32_t m, uint32_t members) {
  (void)members;
  const uint64_t *A = px_slot(w, in->a);
  bool sgn = in->vec;
  unsigned op = in->kind, first = (unsigned)__builtin_ctz(m);
  uint32_t r = (uint32_t)A[first];
  for (uint32_t k = m & (m - 1); k; k &= k - 1) {
    uint32_t x = (uint32_t)A[__builtin_ctz(k)];
    switch (op) {
    case PTX_BOOL_ADD: r += x; break;
    case PTX_BOOL_MIN: r = sgn ? ((int32_t)x < (int32_t)r ? x : r) : (x < r ? x : r); break;
    case PTX_BOOL_MAX: r = sgn ? ((int32_t)x > (int32_t)r ? x : r) : (x > r ? x : r); break;
    case PTX_BOOL_AND: r &= x; break;
    case PTX_BOOL_OR: r |= x; break;
    default: r ^= x; break;
    }
  }
  uint64_t *d = px_slot(w, in->d);
  PX_LANES(m, d[l] = r);
}

HANDLER(w_shfl) { per_mask(w, in, m, shfl); }
HANDLER(w_vote) { per_mask(w, in, m, vote); }
HANDLER(w_match) { per_mask(w, in, m, match); }
HANDLER(w_redux) { per_mask(w, in, m, redux); }

uint32_t px_members(const struct px_warp *w, const struct px_ins *in, uint32_t m) {
  const uint64_t *E = px_slot(w, in->e);
  uint32_t all = 0;
  PX_LANES(m, all |= (uint32_t)E[l]);
  return all;
}

HANDLER(w_activemask) {
  uint64_t *d = px_slot(w, in->d);
  PX_LANES(m, d[l] = m);
}

/* ---------------------------------------------------------------- builtins */

enum px_builtin px_builtin_of(const char *name) {
  if (strcmp(name, "vprintf") == 0) return PX_BUILTIN_VPRINTF;
  if (strcmp(name, "__assertfail") == 0) return PX_BUILTIN_ASSERTFAIL;
  if (strcmp(name, "cudaGraphSetConditional") == 0) return PX_BUILTIN_SET_CONDITIONAL;
  return PX_BUILTIN_NONE;
}

/* The builtin a call instruction calls, as the PTX declares it. */
static const struct ptx_func *builtin_decl(const struct px_warp *w, const struct px_ins *in) {
  return &w->blk->prog->module->funcs[in->src->opnd[0].index];
}

/* Where a .param variable of the current frame lies in lane l's stack. */
static unsigned char *frame_var(struct px_warp *w, const struct ptx_operand *o, unsigned l) {
  const struct px_func *fn = w->f->fn;
  uint32_t off = o->scope == PTX_SCOPE_BODY  ? fn->var_offset[o->index]
                 : o->scope == PTX_SCOPE_RET ? fn->ret_offset[o->index]
                                             : fn->param_offset[o->index];
  return px_local(w, l, w->f->local_base + off + (uint32_t)o->imm);
}

/*
 * Argument i of a call to a builtin, as up to 8 bytes, in lane l: as many as the builtin's
 * declaration gives the parameter (lowering checked that the caller's variable holds them).
 */
static uint64_t call_arg(struct px_warp *w, const struct px_ins *in, unsigned i, unsigned l) {
  const struct ptx_operand *o = &in->src->call_args[i];
  const struct px_func *fn = w->f->fn;
  if (o->kind == PTX_OPND_REG) return w->f->R[fn->slot_of_reg[o->index]][l];
  if (o->kind == PTX_OPND_IMM) return (uint64_t)o->imm;
  size_t size = builtin_decl(w, in)->params[i].size;
  uint64_t v = 0;
  memcpy(&v, frame_var(w, o, l), size < 8 ? size : 8);
  return v;
}

static void set_result(struct px_warp *w, const struct px_ins *in, unsigned l, uint32_t value) {
  if (!in->src->num_call_rets) return;
  const struct ptx_operand *o = &in->src->call_rets[0];
  const struct px_func *fn = w->f->fn;
  if (o->kind == PTX_OPND_REG) {
    w->f->R[fn->slot_of_reg[o->index]][l] = value;
    return;
  }
  if (o->kind != PTX_OPND_SYM) return;
  size_t size = builtin_decl(w, in)->rets[0].size;
  memcpy(frame_var(w, o, l), &value, size < 4 ? size : 4);
}

/* A NUL-terminated string of device memory, cut to fit (reading no byte past the size - 1 it keeps). */
static bool read_string(struct px_warp *w, const struct px_ins *in, unsigned l, uint64_t addr, char *buf, size_t size) {
  for (size_t i = 0; i + 1 < size; i++) {
    if (!px_read_generic(w, in, l, addr + i, &buf[i], 1)) return false;
    if (!buf[i]) return true;
  }
  buf[size - 1] = '\0';
  return true;
}

static pthread_mutex_t print_lock = PTHREAD_MUTEX_INITIALIZER;

/*
 * One conversion of a printf format, its argument read from the packed buffer at *at (each
 * argument aligned to its size, as nvcc packs them). The host format is rebuilt from the
 * conversion's flags, width and precision only, with the length that fits the value read, so no
 * format a kernel writes can make the host read or write what it should not.
 */
#if defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
#endif
/* A decimal field of a conversion (width or precision) at *p, clamped to `max`; *p moves past it. */
static size_t spec_number(const char **p, const char *end, size_t max) {
  size_t v = 0;
  for (; *p < end && **p >= '0' && **p <= '9'; (*p)++) v = v > max ? v : v * 10 + (size_t)(**p - '0');
  return v < max ? v : max;
}

static bool print_one(struct px_warp *w, const struct px_ins *in, unsigned l, const char *spec, size_t len,
                      uint64_t args, size_t *at, char *out, size_t size) {
  char conv = spec[len - 1], fmt[48] = "%";
  size_t n = 1;
  /*
   * Flags, then width and precision: both at most the room left on the line, so that no
   * padding is produced (at the host's cost) only to be cut off.
   */
  const char *p = spec + 1, *end = spec + len - 1;
  for (; p < end && strchr("-+ #0", *p); p++)
    if (n < 8) fmt[n++] = *p;
  size_t room = size ? size - 1 : 0, width = spec_number(&p, end, room), precision = SIZE_MAX;
  if (p < end && *p == '.') {
    p++;
    precision = spec_number(&p, end, room);
  }
  if (width) n += (size_t)snprintf(fmt + n, sizeof fmt - n, "%zu", width);
  if (precision != SIZE_MAX) n += (size_t)snprintf(fmt + n, sizeof fmt - n, ".%zu", precision);
  bool wide = memchr(spec, 'l', len) != NULL || conv == 'p' || conv == 's';
  bool dbl = strchr("fFeEgGaA", conv) != NULL;
  size_t bytes = (wide || dbl) ? 8 : 4;
  *at = (*at + bytes - 1) / bytes * bytes;
  uint64_t v = 0;
  if (!px_read_generic(w, in, l, args + *at, &v, bytes)) return false;
  *at += bytes;
  if (conv == 's') {
    /* A precision reads no further than it prints; NULL prints as host printf does. */
    char s[256] = "(null)";
    size_t keep = precision < sizeof s - 1 ? precision + 1 : sizeof s;
    if (v && !read_string(w, in, l, v, s, keep)) return false;
    memcpy(fmt + n, "s", 2);
    snprintf(out, size, fmt, s);
  } else if (conv == 'p') {
    snprintf(out, size, "0x%" PRIx64, v);
  } else if (dbl) {
    fmt[n] = conv;
    fmt[n + 1] = '\0';
    snprintf(out, size, fmt, px_f64(v));
  } else if (strchr("diouxXc", conv)) {
    bool sgn = conv == 'd' || conv == 'i';
    if (conv == 'c') memcpy(fmt + n, "c", 2);
    else snprintf(fmt + n, sizeof fmt - n, "ll%c", conv);
    long long sv = wide ? (long long)v : (long long)(int32_t)v;
    unsigned long long uv = wide ? v : (uint32_t)v;
    if (conv == 'c') snprintf(out, size, fmt, (int)(uint8_t)v);
    else if (sgn) snprintf(out, size, fmt, sv);
    else snprintf(out, size, fmt, uv);
  } else {
    snprintf(out, size, "%.*s", (int)len, spec); /* not a conversion printf knows: printed as written */
  }
  return true;
}
#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif

/* vprintf(format, args): formats on the host, one lane's line at a time, in lane order. */
static void run_vprintf(struct px_warp *w, const struct px_ins *in, unsigned l) {
  char format[1024], out[4096];
  uint64_t fmt_addr = call_arg(w, in, 0, l), args = call_arg(w, in, 1, l);
  if (!read_string(w, in, l, fmt_addr, format, sizeof format)) return;
  size_t n = 0, at = 0;
  for (const char *p = format; *p && n + 1 < sizeof out;) {
    if (*p != '%') {
      out[n++] = *p++;
      continue;
    }
    if (p[1] == '%') {
      out[n++] = '%';
      p += 2;
      continue;
    }
    size_t len = 1 + strspn(p + 1, "-+ #0123456789.hlLzjt");
    if (!p[len]) break;
    len++;
    if (!print_one(w, in, l, p, len, args, &at, out + n, sizeof out - n)) return;
    n += strlen(out + n);
    p += len;
  }
  out[n] = '\0';
  pthread_mutex_lock(&print_lock);
  fputs(out, stdout);
  fflush(stdout);
  pthread_mutex_unlock(&print_lock);
  set_result(w, in, l, (uint32_t)n);
}

static void run_assertfail(struct px_warp *w, const struct px_ins *in, unsigned l) {
  char msg[256] = "?", file[256] = "?", func[128] = "?";
  read_string(w, in, l, call_arg(w, in, 0, l), msg, sizeof msg);
  read_string(w, in, l, call_arg(w, in, 1, l), file, sizeof file);
  read_string(w, in, l, call_arg(w, in, 3, l), func, sizeof func);
  unsigned line = (unsigned)call_arg(w, in, 2, l);
  if (w->blk->status != GCAP_SUCCESS) return;
  px_fault(w, in, l, GCAP_ERROR_ASSERT, "device assertion failed: %s:%u: %s: Assertion `%s` failed.", file, line, func,
           msg);
}

static void run_set_conditional(struct px_warp *w, const struct px_ins *in, unsigned l) {
  uint64_t h = call_arg(w, in, 0, l);
  struct gcap__cond *c = gcap__cond_lookup(h);
  if (!c || c->owner != w->blk->l->backend) {
    px_fault(w, in, l, GCAP_ERROR_INVALID_VALUE,
             "cudaGraphSetConditional with 0x%llx, which is not a live conditional handle%s", (unsigned long long)h,
             c ? " of its context" : "");
    return;
  }
  atomic_store(&c->value, (unsigned)call_arg(w, in, 1, l));
}

void px_run_builtin(struct px_warp *w, const struct px_ins *in, uint32_t m) {
  PX_LANES(m, {
    if (w->blk->status != GCAP_SUCCESS) return;
    switch ((enum px_builtin)in->aux) {
    case PX_BUILTIN_VPRINTF: run_vprintf(w, in, l); break;
    case PX_BUILTIN_ASSERTFAIL: run_assertfail(w, in, l); break;
    case PX_BUILTIN_SET_CONDITIONAL: run_set_conditional(w, in, l); break;
    default: break;
    }
  });
}

/* ---------------------------------------------------------------- lowering */

static int lower_bar(struct px_lower *L, const struct ptx_instr *pi, struct px_ins *in) {
  unsigned n = pi->num_operands, first = 0;
  if (pi->mode == PTX_BAR_WARP_SYNC) {
    if (n != 1) return px_refuse(L, "bar.warp.sync takes a member mask");
    in->a = px_value(L, &pi->opnd[0], PTX_T_U32);
    in->ctl = PX_CTL_WSYNC;
    return 1;
  }
  if (pi->mode == PTX_BAR_RED) {
    if (n < 3) return px_refuse(L, "bar.red takes a destination, a barrier and a predicate");
    in->kind = pi->boolop == PTX_BOOL_POPC ? 1 : pi->boolop == PTX_BOOL_AND ? 2 : 3;
    if (pi->type == PTX_T_PRED) in->pd2 = px_pred(L, &pi->opnd[0], NULL);
    else in->d = px_value(L, &pi->opnd[0], PTX_T_U32);
    in->c = px_pred(L, &pi->opnd[n - 1], &in->neg_c);
    first = 1;
    n--;
  }
  if (n < first + 1 || n > first + 2) return px_refuse(L, "a barrier takes a number and an optional thread count");
  in->a = px_value(L, &pi->opnd[first], PTX_T_U32);
  if (n == first + 2) in->b = px_value(L, &pi->opnd[first + 1], PTX_T_U32);
  in->ctl = pi->mode == PTX_BAR_ARRIVE ? PX_CTL_ARRIVE : PX_CTL_BAR;
  return 1;
}

static int lower_warp_op(struct px_lower *L, const struct ptx_instr *pi, struct px_ins *in, unsigned n, px_fn fn) {
  if (pi->num_operands != n) return px_refuse(L, "takes %u operands", n);
  uint64_t mask;
  in->e = px_reg_constant(L, &pi->opnd[n - 1], &mask) ? px_const(L, (uint32_t)mask)
                                                      : px_value(L, &pi->opnd[n - 1], PTX_T_U32);
  in->kind = pi->mode;
  in->fn = fn;
  in->ctl = PX_CTL_WARP;
  return 1;
}

int px_lower_warp(struct px_lower *L, const struct ptx_instr *pi, struct px_ins *in) {
  enum ptx_type t = (enum ptx_type)pi->type;
  switch ((enum ptx_op)pi->op) {
  case PTX_OP_BAR:
  case PTX_OP_BARRIER: return lower_bar(L, pi, in);
  case PTX_OP_SHFL:
    if (!(pi->flags & PTX_F_SYNC)) return px_unsupported(L, "shfl without .sync (removed in PTX 6.4) is not supported");
    if (lower_warp_op(L, pi, in, 5, w_shfl) < 0) return -1;
    in->d = px_value(L, &pi->opnd[0], PTX_T_B32);
    in->a = px_value(L, &pi->opnd[1], PTX_T_B32);
    in->b = px_value(L, &pi->opnd[2], PTX_T_U32);
    in->c = px_value(L, &pi->opnd[3], PTX_T_U32);
    if (pi->dest2 >= 0)
      in->pd2 = px_pred(L, &(struct ptx_operand){.kind = PTX_OPND_REG, .index = (uint32_t)pi->dest2}, NULL);
    return 1;
  case PTX_OP_VOTE:
    if (!(pi->flags & PTX_F_SYNC)) return px_unsupported(L, "vote without .sync (removed in PTX 6.4) is not supported");
    if (lower_warp_op(L, pi, in, 3, w_vote) < 0) return -1;
    in->a = px_pred(L, &pi->opnd[1], &in->neg_a);
    in->d = pi->mode == PTX_VOTE_BALLOT ? px_value(L, &pi->opnd[0], PTX_T_B32) : px_pred(L, &pi->opnd[0], NULL);
    return 1;
  case PTX_OP_MATCH:
    if (lower_warp_op(L, pi, in, 3, w_match) < 0) return -1;
    in->d = px_value(L, &pi->opnd[0], PTX_T_B32);
    in->a = px_value(L, &pi->opnd[1], t);
    in->size = (uint8_t)ptx_type_size(t);
    if (pi->dest2 >= 0)
      in->pd2 = px_pred(L, &(struct ptx_operand){.kind = PTX_OPND_REG, .index = (uint32_t)pi->dest2}, NULL);
    return 1;
  case PTX_OP_REDUX:
    if (lower_warp_op(L, pi, in, 3, w_redux) < 0) return -1;
    in->d = px_value(L, &pi->opnd[0], t);
    in->a = px_value(L, &pi->opnd[1], t);
    in->kind = pi->boolop;
    in->vec = ptx_type_is_signed(t);
    return 1;
  case PTX_OP_ACTIVEMASK:
    if (pi->num_operands != 1) return px_refuse(L, "activemask takes 1 operand");
    in->d = px_value(L, &pi->opnd[0], PTX_T_B32);
    in->fn = w_activemask;
    return 1;
  default: return 0;
  }
}
