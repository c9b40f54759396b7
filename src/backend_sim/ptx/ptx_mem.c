/*
 * Loads, stores, atomics and address conversions, with the memory, race and initialisation
 * checks. Global addresses are host pointers (device memory is host memory here); shared, local
 * and kernel-parameter addresses are offsets into the block's shared memory, the thread's stack
 * and the launch's parameter buffer, and their generic forms lie in windows far above any host
 * pointer. Shared, local and parameter accesses are always bounds-checked, since their memory is
 * the simulator's own; global ones only under GCAP_SIM_CHECK_MEMORY.
 */
#include <stdio.h>

#include "ptx_half.h"
#include "ptx_internal.h"

#define HANDLER(name) static void name(struct px_warp *w, const struct px_ins *in, uint32_t m)
#define PX_MEMORY_CHECKS (GCAP_SIM_CHECK_MEMORY | GCAP_SIM_CHECK_SHARED_RACES | GCAP_SIM_CHECK_INIT)

/* The last allocation this thread's accesses hit in a launch, so that the checks cost a compare. */
static _Thread_local struct {
  uint64_t serial;
  uintptr_t base, end;
  unsigned char *bits;             /* INIT: its written-bits, NULL when not followed */
  bool consts_known;               /* whether `consts` was looked up (on the first write) */
  const struct px_program *consts; /* the program whose constant bank it is in, or NULL */
} memo;

static void memo_fill(uint64_t serial, uintptr_t base, uintptr_t end, unsigned char *bits) {
  memo.serial = serial;
  memo.base = base;
  memo.end = end;
  memo.bits = bits;
  memo.consts_known = false;
}

/* The program whose constant memory the memo's allocation is, or NULL; looked up once per allocation. */
static const struct px_program *memo_consts(void) {
  if (!memo.consts_known) {
    memo.consts = px_const_owner(memo.base, 1);
    memo.consts_known = true;
  }
  return memo.consts;
}

/* A store into a module's constant memory: ILLEGAL_ADDRESS whatever the checks, naming the variable. */
static void const_fault(struct px_warp *w, const struct px_ins *in, unsigned l, uint64_t addr, unsigned bytes,
                        const struct px_program *owner) {
  const char *name = "?";
  for (size_t i = 0; i < owner->num_globals; i++) {
    const struct px_global *g = &owner->globals[i];
    if (g->is_const && g->addr && addr - (uintptr_t)g->addr < (g->bytes ? g->bytes : 1)) name = g->name;
  }
  px_fault(w, in, l, GCAP_ERROR_ILLEGAL_ADDRESS,
           "write of %u bytes at global address 0x%llx, into constant memory (variable \"%s\" of %s module): "
           "constant memory is read-only to kernels",
           bytes, (unsigned long long)addr, name, owner == w->blk->prog ? "the kernel's" : "another");
}

/* Whether [addr, addr + bytes) touches the constant bank of the kernel's own module. */
static inline bool in_own_consts(const struct px_block *b, uint64_t addr, unsigned bytes) {
  uint64_t base = (uintptr_t)b->prog->const_bank, n = b->prog->const_bytes;
  return n && addr < base + n && (addr >= base || base - addr < bytes);
}

static const char *space_name(unsigned s) {
  static const char *names[] = {"generic", "global", "shared", "local", "param", "const"};
  return s < 6 ? names[s] : "?";
}

static void describe_near(char *buf, size_t size, uintptr_t addr, const struct gcap__mem_view *v) {
  if (v->state == GCAP__MEM_FREED) {
    snprintf(buf, size, "inside an allocation of %zu bytes at 0x%llx that was freed", v->bytes,
             (unsigned long long)v->base);
  } else if (v->state == GCAP__MEM_NONE) {
    snprintf(buf, size, "which is no allocation of the context (it has none)");
  } else if (addr < v->base) {
    snprintf(buf, size, "%llu bytes before the nearest allocation, %zu bytes at 0x%llx",
             (unsigned long long)(v->base - addr), v->bytes, (unsigned long long)v->base);
  } else {
    snprintf(buf, size, "%llu bytes after the end of the nearest allocation, %zu bytes at 0x%llx",
             (unsigned long long)(addr - (v->base + v->bytes)), v->bytes, (unsigned long long)v->base);
  }
}

/* The allocation holding [addr, addr + bytes) into the memo; false (a fault under MEMORY) when none does. */
static bool find_global(struct px_warp *w, const struct px_ins *in, unsigned l, uint64_t addr, unsigned bytes,
                        bool write) {
  const struct px_launch *L = w->blk->l;
  if (memo.serial == L->serial && addr >= memo.base && addr < memo.end && memo.end - addr >= bytes) {
    if (!write || !memo_consts()) return true;
    const_fault(w, in, l, addr, bytes, memo_consts());
    return false;
  }
  struct gcap__mem_view v;
  bool live = gcap__memory_view(L->backend, (uintptr_t)addr, &v);
  if (live && v.base + v.bytes - addr >= bytes) { /* live: addr is inside [base, base + bytes) */
    memo_fill(L->serial, v.base, v.base + v.bytes,
              (L->checks & GCAP_SIM_CHECK_INIT) && L->init_bits ? L->init_bits(L->init_ctx, v.base) : NULL);
    if (!write || !memo_consts()) return true;
    const_fault(w, in, l, addr, bytes, memo_consts());
    return false;
  }
  if (!(L->checks & GCAP_SIM_CHECK_MEMORY)) return false; /* INIT alone: not its business */
  if (L->grid_workspace && addr >= L->grid_workspace && addr - L->grid_workspace < PX_GRID_WORKSPACE_BYTES &&
      L->grid_workspace + PX_GRID_WORKSPACE_BYTES - addr >= bytes) { /* the cooperative launch's own (px_launch) */
    memo_fill(L->serial, (uintptr_t)L->grid_workspace, (uintptr_t)L->grid_workspace + PX_GRID_WORKSPACE_BYTES, NULL);
    return true;
  }
  for (size_t i = 0; !live && i < L->num_pending_frees; i++) {
    uintptr_t base = L->pending_frees[i][0], n = L->pending_frees[i][1];
    if (addr < base || addr - base >= n || base + n - addr < bytes) continue;
    memo_fill(L->serial, base, base + n,
              (L->checks & GCAP_SIM_CHECK_INIT) && L->init_bits ? L->init_bits(L->init_ctx, base) : NULL);
    return true; /* device memory, not a module's constants */
  }
  char near[200];
  if (live)
    snprintf(near, sizeof near, "which runs past the end of an allocation of %zu bytes at 0x%llx", v.bytes,
             (unsigned long long)v.base);
  else describe_near(near, sizeof near, (uintptr_t)addr, &v);
  px_fault(w, in, l, GCAP_ERROR_ILLEGAL_ADDRESS, "%s of %u bytes at global address 0x%llx, %s",
           write ? "write" : "read", bytes, (unsigned long long)addr, near);
  return false;
}

/* INIT on global memory: a read of bytes nothing wrote faults; a write marks them. */
static bool init_global(struct px_warp *w, const struct px_ins *in, unsigned l, uint64_t addr, unsigned bytes,
                        bool write) {
  unsigned char *bits = memo.bits;
  size_t from = addr - memo.base;
  if (bytes <= 8 && from / 8 == (from + bytes - 1) / 8) { /* the bytes' bits lie in one byte of the map */
    unsigned char want = (unsigned char)(((1u << bytes) - 1u) << (from % 8)), *at = &bits[from / 8];
    unsigned char have = __atomic_load_n(at, __ATOMIC_RELAXED);
    if ((have & want) == want) return true;
    if (write) {
      __atomic_fetch_or(at, want, __ATOMIC_RELAXED);
      return true;
    }
  }
  for (size_t i = from; i < from + bytes; i++) {
    unsigned char bit = (unsigned char)(1u << (i % 8));
    if (write) {
      __atomic_fetch_or(&bits[i / 8], bit, __ATOMIC_RELAXED);
    } else if (!(__atomic_load_n(&bits[i / 8], __ATOMIC_RELAXED) & bit)) {
      px_fault(w, in, l, GCAP_ERROR_LAUNCH_FAILURE,
               "read of %u bytes at global address 0x%llx, which nothing wrote (byte %zu of the allocation of %zu "
               "bytes at 0x%llx is uninitialised)",
               bytes, (unsigned long long)addr, i, (size_t)(memo.end - memo.base), (unsigned long long)memo.base);
      return false;
    }
  }
  return true;
}

static bool check_global(struct px_warp *w, const struct px_ins *in, unsigned l, uint64_t addr, unsigned bytes,
                         bool write) {
  bool found = find_global(w, in, l, addr, bytes, write);
  if (!found) return w->blk->status == GCAP_SUCCESS;
  if (memo.bits && (w->blk->checks & GCAP_SIM_CHECK_INIT)) return init_global(w, in, l, addr, bytes, write);
  return true;
}

/* The host address of an access of `bytes` at `addr` in `space` by lane l; NULL after a fault. */
static unsigned char *resolve(struct px_warp *w, const struct px_ins *in, unsigned l, uint64_t addr, unsigned space,
                              unsigned bytes, bool write) {
  struct px_block *b = w->blk;
  bool check = b->l->checks & GCAP_SIM_CHECK_MEMORY;
  if (space == PTX_SPACE_GENERIC) {
    uint64_t window = addr & ~(PX_WINDOW_BYTES - 1);
    if (window == PX_SHARED_WINDOW) space = PTX_SPACE_SHARED;
    else if (window == PX_LOCAL_WINDOW) space = PTX_SPACE_LOCAL;
    else if (window == PX_PARAM_WINDOW) space = PTX_SPACE_PARAM;
    else space = PTX_SPACE_GLOBAL;
    if (space != PTX_SPACE_GLOBAL) addr -= window;
  }
  if (check && bytes > 1 && (addr & (bytes - 1))) {
    px_fault(w, in, l, GCAP_ERROR_MISALIGNED_ADDRESS,
             "%s of %u bytes at %s address 0x%llx, which is not a multiple of %u", write ? "write" : "read", bytes,
             space_name(space), (unsigned long long)addr, bytes);
    return NULL;
  }
  switch (space) {
  case PTX_SPACE_SHARED:
    if (addr + bytes > b->shared_bytes || addr + bytes < addr) {
      px_fault(w, in, l, GCAP_ERROR_ILLEGAL_ADDRESS,
               "%s of %u bytes at shared address 0x%llx, past the block's %u bytes of shared memory",
               write ? "write" : "read", bytes, (unsigned long long)addr, b->shared_bytes);
      return NULL;
    }
    return b->shared + addr;
  case PTX_SPACE_LOCAL: {
    uint32_t top = w->f->local_base + w->f->fn->frame_bytes;
    if (addr + bytes > (check ? top : PX_LOCAL_BYTES) || addr + bytes < addr) {
      px_fault(w, in, l, GCAP_ERROR_ILLEGAL_ADDRESS,
               "%s of %u bytes at local address 0x%llx, outside the thread's stack frames (%u bytes)",
               write ? "write" : "read", bytes, (unsigned long long)addr, top);
      return NULL;
    }
    return px_local(w, l, (uint32_t)addr);
  }
  case PTX_SPACE_PARAM:
    if (write || addr + bytes > b->k->params_bytes || addr + bytes < addr) {
      px_fault(w, in, l, GCAP_ERROR_ILLEGAL_ADDRESS,
               "%s of %u bytes at parameter offset 0x%llx (the kernel has %u bytes)", write ? "write" : "read", bytes,
               (unsigned long long)addr, b->k->params_bytes);
      return NULL;
    }
    return b->l->params + addr;
  default:
    if (b->checks & (GCAP_SIM_CHECK_MEMORY | GCAP_SIM_CHECK_INIT)) {
      if (!check_global(w, in, l, addr, bytes, write)) return NULL;
    } else if (write && in_own_consts(b, addr, bytes)) { /* the rest of global memory is not followed */
      const_fault(w, in, l, addr, bytes, b->prog);
      return NULL;
    }
    return (unsigned char *)(uintptr_t)addr;
  }
}

bool px_read_generic(struct px_warp *w, const struct px_ins *in, unsigned lane, uint64_t addr, void *out,
                     size_t bytes) {
  unsigned char *p = resolve(w, in, lane, addr, PTX_SPACE_GENERIC, 1, false);
  if (!p) return false;
  if (bytes > 1 && !resolve(w, in, lane, addr + bytes - 1, PTX_SPACE_GENERIC, 1, false)) return false;
  memcpy(out, p, bytes);
  return true;
}

/* ---------------------------------------------------------------- poison */

uint64_t px_poison_word(uint64_t seed) {
  uint64_t z = seed + 0x9e3779b97f4a7c15ull; /* splitmix64 */
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  /*
   * Each 32-bit half is 0x7f8?????, its low three bytes 0x80-0xbf: no zero byte, an integer of any
   * width far from zero, a NaN as a float and about 1e306 as a double.
   */
  return ((z ^ (z >> 31)) & 0x003f3f3f003f3f3full) | 0x7f8080807f808080ull;
}

/* Word by word for the first 128 bytes, then in doubling copies of what is filled, at memcpy's speed. */
void px_poison_fill(void *p, size_t bytes, size_t offset, uint64_t word) {
  unsigned char *q = p, w8[8];
  for (unsigned i = 0; i < 8; i++) w8[i] = (unsigned char)(word >> (8 * ((offset + i) % 8)));
  size_t head = bytes < 128 ? bytes : 128, i = 0;
  for (; i + 8 <= head; i += 8) memcpy(q + i, w8, 8);
  for (; i < head; i++) q[i] = w8[i % 8];
  for (size_t done = head; done < bytes; done *= 2) memcpy(q + done, q, done < bytes - done ? done : bytes - done);
}

/* ---------------------------------------------------------------- shared-memory checks */

static void thread_name(const struct px_block *b, unsigned t, char *buf, size_t size) {
  gcap_dim3 bd = b->l->block;
  snprintf(buf, size, "thread (%u,%u,%u)", t % bd.x, t / bd.x % bd.y, t / bd.x / bd.y);
}

/*
 * SHARED_RACES: two threads' accesses to a byte with no barrier between, one a write, not both
 * atomic, from two instruction runs: the lanes of one instruction (one run, b->access_seq) never
 * race with each other, as no barrier can stand between them. Lanes of one store that write one
 * byte leave one lane's value, as on a GPU, and are not reported either (compute-sanitizer's
 * racecheck does not report them as a hazard).
 */
static void race_check(struct px_warp *w, const struct px_ins *in, unsigned l, uint32_t off, unsigned bytes, bool write,
                       bool atomic) {
  struct px_block *b = w->blk;
  unsigned t = px_thread(w, l);
  uint32_t line = in->src ? in->src->line : 0, epoch = b->epoch + 1, ws = b->wsync_epoch[t], seq = b->access_seq;
  uint16_t self = (uint16_t)(t + 1);
  for (unsigned i = 0; i < bytes; i++) {
    if (b->async_pending && b->async_pending[off + i]) { /* a cp.async's destination, its group not waited for */
      px_async_race(w, in, l, off + i, write);
      return;
    }
    struct px_shadow *s = &b->shadow[off + i];
    if (s->epoch != epoch) {
      memset(s, 0, sizeof *s);
      s->epoch = epoch;
    } else if (!write && (s->writer == 0 || s->writer == self) && s->reader) {
      continue; /* a read after reads, or after this thread's own write: nothing to record or report */
    }
    unsigned other = 0;
    uint32_t other_line = 0;
    bool other_write = false;
    if (s->writer && s->writer - 1u != t && s->wseq != seq && !(atomic && s->flags & 1)) {
      unsigned wt = s->writer - 1u;
      bool same_warp = wt / 32 == t / 32;
      if (!same_warp || s->wsync >= ws || ws == 0) other = s->writer, other_line = s->write_line, other_write = true;
    }
    if (!other && write && s->reader && s->reader != 0xffff && s->reader - 1u != t && s->rseq != seq &&
        !(atomic && s->flags & 2)) {
      unsigned rt = s->reader - 1u;
      bool same_warp = rt / 32 == t / 32;
      if (!same_warp || s->rsync >= ws || ws == 0) other = s->reader, other_line = s->read_line;
    }
    if (other) {
      char me[64], them[64], at[400];
      thread_name(b, t, me, sizeof me);
      thread_name(b, other - 1u, them, sizeof them);
      px_describe_line(b, other_line, at, sizeof at);
      px_fault(w, in, l, GCAP_ERROR_LAUNCH_FAILURE,
               "shared-memory race on byte 0x%x: this %s by %s and an earlier %s by %s at %s, with no barrier "
               "between them",
               off + i, write ? "write" : "read", me, other_write ? "write" : "read", them, at);
      return;
    }
    if (write) {
      s->writer = (uint16_t)(t + 1);
      s->write_line = line;
      s->wsync = ws;
      s->wseq = seq;
      s->flags = (uint8_t)((s->flags & ~1u) | (atomic ? 1u : 0u));
    } else if (!s->reader || s->reader - 1u == t) {
      s->reader = (uint16_t)(t + 1);
      s->read_line = line;
      s->rsync = ws;
      s->rseq = seq;
      s->flags = (uint8_t)((s->flags & ~2u) | (atomic ? 2u : 0u));
    }
  }
}

static bool init_check(struct px_warp *w, const struct px_ins *in, unsigned l, uint32_t off, unsigned bytes) {
  if (bytes == 4) { /* the usual word: one compare */
    uint32_t v;
    memcpy(&v, w->blk->shared_init + off, 4);
    if (v == 0x01010101u) return true;
  }
  for (unsigned i = 0; i < bytes; i++)
    if (!w->blk->shared_init[off + i]) {
      px_fault(
          w, in, l, GCAP_ERROR_LAUNCH_FAILURE,
          "read of %u bytes at shared address 0x%x, which no thread of the block wrote (byte 0x%x is uninitialised)",
          bytes, off, off + i);
      return false;
    }
  return true;
}

/*
 * A strong load or store (volatile, relaxed, acquire, release): with another strong access or an
 * atomic it is synchronisation, not a data race, as the PTX memory model has it.
 */
static bool strong(const struct px_ins *in) { return in->src && (in->src->flags & PTX_F_VOLATILE); }

/* The checks on a shared access that the launch asked for; false after a fault. */
static bool shared_checks(struct px_warp *w, const struct px_ins *in, unsigned l, const unsigned char *p,
                          unsigned bytes, bool write, bool atomic) {
  struct px_block *b = w->blk;
  if (p < b->shared || p >= b->shared + b->shared_bytes) return true;
  uint32_t off = (uint32_t)(p - b->shared);
  if ((b->l->checks & GCAP_SIM_CHECK_INIT) && !write && !init_check(w, in, l, off, bytes)) return false;
  if (b->l->checks & GCAP_SIM_CHECK_SHARED_RACES) {
    race_check(w, in, l, off, bytes, write, atomic);
    if (b->status != GCAP_SUCCESS) return false;
    if (write) /* its words are read-clean no more */
      for (uint32_t word = off / 4; word <= (off + bytes - 1) / 4; word++) b->clean[word / 32] &= ~(1u << (word % 32));
  }
  if (write && (b->l->checks & GCAP_SIM_CHECK_INIT)) memset(b->shared_init + off, 1, bytes);
  return true;
}

unsigned char *px_resolve(struct px_warp *w, const struct px_ins *in, unsigned l, uint64_t addr, unsigned space,
                          unsigned bytes, bool write) {
  return resolve(w, in, l, addr, space, bytes, write);
}

bool px_shared_access(struct px_warp *w, const struct px_ins *in, unsigned l, uint32_t off, unsigned bytes, bool write,
                      bool atomic) {
  return shared_checks(w, in, l, w->blk->shared + off, bytes, write, atomic);
}

bool px_async_dest(struct px_warp *w, const struct px_ins *in, unsigned l, uint32_t off, unsigned bytes,
                   bool complete) {
  struct px_block *b = w->blk;
  if (b->async_pending && complete)
    for (unsigned i = 0; i < bytes; i++) b->async_pending[off + i]--;
  if (b->checks & GCAP_SIM_CHECK_SHARED_RACES) {
    race_check(w, in, l, off, bytes, true, false);
    if (b->status != GCAP_SUCCESS) return false;
    for (uint32_t word = off / 4; word <= (off + bytes - 1) / 4; word++) b->clean[word / 32] &= ~(1u << (word % 32));
  }
  if (b->async_pending && !complete)
    for (unsigned i = 0; i < bytes; i++) b->async_pending[off + i]++;
  if (complete && (b->checks & GCAP_SIM_CHECK_INIT)) memset(b->shared_init + off, 1, bytes);
  return true;
}

/* ---------------------------------------------------------------- loads and stores */

static uint64_t load_bits(const unsigned char *p, unsigned size, bool sgn) {
  switch (size) {
  case 1: return sgn ? (uint64_t)(int64_t)(int8_t)p[0] : p[0];
  case 2: {
    uint16_t v;
    memcpy(&v, p, 2);
    return sgn ? (uint64_t)(int64_t)(int16_t)v : v;
  }
  case 4: {
    uint32_t v;
    memcpy(&v, p, 4);
    return sgn ? (uint64_t)(int64_t)(int32_t)v : v;
  }
  default: {
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
  }
  }
}

static void store_bits(unsigned char *p, unsigned size, uint64_t v) {
  switch (size) {
  case 1: p[0] = (unsigned char)v; break;
  case 2: {
    uint16_t x = (uint16_t)v;
    memcpy(p, &x, 2);
    break;
  }
  case 4: {
    uint32_t x = (uint32_t)v;
    memcpy(p, &x, 4);
    break;
  }
  default: memcpy(p, &v, 8); break;
  }
}

static inline uint64_t address_of(const struct px_warp *w, const struct px_ins *in, unsigned l) {
  uint64_t a = (uint64_t)in->imm;
  if (in->a != PX_NONE) a += w->f->R[in->a][l];
  if (in->sym_local) a += w->f->local_base;
  return a;
}

static bool needs_shared_checks(const struct px_warp *w) {
  return w->blk->l->checks & (GCAP_SIM_CHECK_INIT | GCAP_SIM_CHECK_SHARED_RACES);
}

/*
 * Fast forms for launches without the memory checks (in->e, set at lowering: the access is
 * scalar): global addresses are used as they are; shared ones are still bounds-checked, since
 * that memory is the simulator's own; a kernel parameter at a fixed offset is the same for all.
 */
enum fast_kind { FAST_NONE = 0, FAST_GLOBAL, FAST_SHARED, FAST_KPARAM };

static bool shared_bounds(struct px_warp *w, const struct px_ins *in, uint32_t m, bool write) {
  const uint64_t *A = px_slot(w, in->a);
  /* 64-bit, and no limit to wrap below zero: a block may have fewer shared bytes than one access. */
  uint64_t bytes = w->blk->shared_bytes, size = in->size, off = (uint64_t)in->imm;
  uint64_t limit = bytes >= size ? bytes - size : 0;
  uint32_t bad = bytes >= size ? 0 : m;
  PX_LANES(m, bad |= (uint32_t)(A[l] + off > limit) << l);
  if (!bad) return true;
  unsigned l = (unsigned)__builtin_ctz(bad);
  px_fault(w, in, l, GCAP_ERROR_ILLEGAL_ADDRESS,
           "%s of %u bytes at shared address 0x%llx, past the block's %u bytes of shared memory",
           write ? "write" : "read", in->size, (unsigned long long)(A[l] + off), w->blk->shared_bytes);
  return false;
}

#define FAST_LOAD(T, ST)                                                                                               \
  PX_LANES(m, {                                                                                                        \
    T v_;                                                                                                              \
    memcpy(&v_, (const void *)(base + A[l] + off), sizeof v_);                                                         \
    d[l] = (uint64_t)(ST)v_;                                                                                           \
  })

static void fast_load(struct px_warp *w, const struct px_ins *in, uint32_t m, bool bounds_known) {
  uint64_t *d = px_slot(w, in->d);
  if (in->e == FAST_KPARAM) {
    if ((uint64_t)in->imm + in->size > w->blk->k->params_bytes) {
      px_fault(w, in, (unsigned)__builtin_ctz(m), GCAP_ERROR_ILLEGAL_ADDRESS,
               "read of %u bytes at parameter offset 0x%llx (the kernel has %u bytes)", in->size,
               (unsigned long long)in->imm, w->blk->k->params_bytes);
      return;
    }
    uint64_t v = load_bits(w->blk->l->params + in->imm, in->size, in->kind & 1);
    PX_LANES(m, d[l] = v);
    return;
  }
  if (in->e == FAST_SHARED && !bounds_known && !shared_bounds(w, in, m, false)) return;
  /* Global addresses are host pointers; shared ones offsets from the block's memory. */
  uintptr_t base = in->e == FAST_SHARED ? (uintptr_t)w->blk->shared : 0;
  const uint64_t *A = px_slot(w, in->a);
  uint64_t off = (uint64_t)in->imm;
  switch (in->size | (in->kind & 1) << 4) {
  case 4: FAST_LOAD(uint32_t, uint32_t); break;
  case 8:
  case 8 | 16: FAST_LOAD(uint64_t, uint64_t); break;
  case 4 | 16: FAST_LOAD(int32_t, int64_t); break;
  case 2: FAST_LOAD(uint16_t, uint16_t); break;
  case 2 | 16: FAST_LOAD(int16_t, int64_t); break;
  case 1: FAST_LOAD(uint8_t, uint8_t); break;
  default: FAST_LOAD(int8_t, int64_t); break;
  }
}

#define FAST_STORE(T)                                                                                                  \
  PX_LANES(m, {                                                                                                        \
    T v_ = (T)D[l];                                                                                                    \
    memcpy((void *)(base + A[l] + off), &v_, sizeof v_);                                                               \
  })

static void fast_store(struct px_warp *w, const struct px_ins *in, uint32_t m, bool bounds_known) {
  if (in->e == FAST_SHARED && !bounds_known && !shared_bounds(w, in, m, true)) return;
  uintptr_t base = in->e == FAST_SHARED ? (uintptr_t)w->blk->shared : 0;
  const uint64_t *A = px_slot(w, in->a), *D = px_slot(w, in->d);
  uint64_t off = (uint64_t)in->imm;
  /* Without MEMORY or INIT (which look every store up), stores into the module's constants are still refused. */
  if (in->e == FAST_GLOBAL && w->blk->prog->const_bytes &&
      !(w->blk->checks & (GCAP_SIM_CHECK_MEMORY | GCAP_SIM_CHECK_INIT))) {
    uint32_t bad = 0;
    PX_LANES(m, bad |= (uint32_t)in_own_consts(w->blk, A[l] + off, in->size) << l);
    if (bad) {
      unsigned l = (unsigned)__builtin_ctz(bad);
      const_fault(w, in, l, A[l] + off, in->size, w->blk->prog);
      return;
    }
  }
  switch (in->size) {
  case 4: FAST_STORE(uint32_t); break;
  case 8: FAST_STORE(uint64_t); break;
  case 2: FAST_STORE(uint16_t); break;
  default: FAST_STORE(uint8_t); break;
  }
}

/* in->kind bit 0: signed; in->vec elements of in->size bytes into vd[] (or d). */
/*
 * The warp's span of a scalar access ([lo, hi + size)), checked at once: under MEMORY, every lane
 * aligned, inside the block's shared memory, or for global memory inside the allocation the memo
 * holds (a warp's accesses are mostly in one allocation), which it then holds with its INIT bits.
 * False: the per-lane form must run (and report what is wrong).
 */
static bool warp_span_ok(struct px_warp *w, const struct px_ins *in, uint32_t m, bool write) {
  const struct px_launch *L = w->blk->l;
  unsigned checks = w->blk->checks;
  bool memory = checks & GCAP_SIM_CHECK_MEMORY, init = checks & GCAP_SIM_CHECK_INIT;
  if (in->e == FAST_KPARAM || (in->e == FAST_GLOBAL && !memory && !init)) return true;
  const uint64_t *A = px_slot(w, in->a);
  uint64_t off = (uint64_t)in->imm, any = 0, lo = UINT64_MAX, hi = 0;
  PX_LANES(m, {
    uint64_t a = A[l] + off;
    any |= a;
    lo = a < lo ? a : lo;
    hi = a > hi ? a : hi;
  });
  if (memory && (any & (in->size - 1u))) return false;
  /* [lo, hi + size) inside [base, end), written so that nothing wraps (hi may be near 2^64). */
  if (in->e == FAST_SHARED) return hi < w->blk->shared_bytes && w->blk->shared_bytes - hi >= in->size;
  /* A store into constant memory takes the per-lane form, which reports it. */
  if (memo.serial == L->serial && lo >= memo.base && hi < memo.end && memo.end - hi >= in->size)
    return !write || !memo_consts();
  struct gcap__mem_view v;
  if (!gcap__memory_view(L->backend, (uintptr_t)lo, &v) || hi >= v.base + v.bytes || v.base + v.bytes - hi < in->size)
    return !memory && !init;
  memo_fill(L->serial, v.base, v.base + v.bytes, init && L->init_bits ? L->init_bits(L->init_ctx, v.base) : NULL);
  return !write || !memo_consts();
}

/*
 * A whole-word shared read under SHARED_RACES: words read before in this barrier epoch with no
 * write since are "clean" (a bit each): another read of them can neither race nor be
 * uninitialised, so it skips the per-byte shadow. A first read that finds no write in this
 * epoch marks its words clean; any write clears them.
 */
static bool clean_read(struct px_warp *w, const struct px_ins *in, unsigned l, uint32_t off) {
  struct px_block *b = w->blk;
  uint32_t first = off / 4, last = (off + in->size - 1) / 4;
  bool clean = (off & 3) == 0;
  for (uint32_t word = first; clean && word <= last; word++) clean = b->clean[word / 32] >> (word % 32) & 1;
  if (clean) return true;
  if (!shared_checks(w, in, l, b->shared + off, in->size, false, strong(in))) return false;
  if (off & 3) return true;
  uint32_t epoch = b->epoch + 1;
  for (uint32_t i = off; i < off + in->size; i++)
    if (b->shadow[i].epoch == epoch && b->shadow[i].writer) return true;
  for (uint32_t word = first; word <= last; word++) b->clean[word / 32] |= 1u << (word % 32);
  return true;
}

/* The per-byte checks of a fast access, lane by lane (INIT and SHARED_RACES); false after a fault. */
static bool lane_checks(struct px_warp *w, const struct px_ins *in, uint32_t m, bool write) {
  unsigned checks = w->blk->checks;
  const uint64_t *A = px_slot(w, in->a);
  uint64_t off = (uint64_t)in->imm;
  w->blk->access_seq++; /* a new instruction run: its lanes never race with each other */
  if (in->e == FAST_SHARED && !write && (checks & GCAP_SIM_CHECK_SHARED_RACES) && in->size >= 4) {
    PX_LANES(m, if (!clean_read(w, in, l, (uint32_t)(A[l] + off))) return false);
  } else if (in->e == FAST_SHARED && (checks & (GCAP_SIM_CHECK_SHARED_RACES | GCAP_SIM_CHECK_INIT))) {
    PX_LANES(m, if (!shared_checks(w, in, l, w->blk->shared + (A[l] + off), in->size, write, strong(in))) return false);
  } else if (in->e == FAST_GLOBAL && memo.bits && (checks & GCAP_SIM_CHECK_INIT)) {
    PX_LANES(m, if (!init_global(w, in, l, A[l] + off, in->size, write)) return false);
  }
  return true;
}

/* A scalar access in its fast form, the checks done warp by warp where they can be; false: the per-lane form must run.
 */
static bool fast_access(struct px_warp *w, const struct px_ins *in, uint32_t m, bool write) {
  if (!in->e) return false;
  bool checked = w->blk->checks & PX_MEMORY_CHECKS;
  if (checked) {
    if (!warp_span_ok(w, in, m, write)) return false;
    if (!lane_checks(w, in, m, write)) return true; /* reported */
  }
  /* With any memory check on, warp_span_ok has bounded shared accesses already. */
  if (write) fast_store(w, in, m, checked);
  else fast_load(w, in, m, checked);
  return true;
}

HANDLER(mem_ld) {
  if (fast_access(w, in, m, false)) return;
  unsigned size = in->size, n = in->vec, total = size * n;
  bool sgn = in->kind & 1, sh = needs_shared_checks(w);
  w->blk->access_seq += sh;
  PX_LANES(m, {
    unsigned char *p = resolve(w, in, l, address_of(w, in, l), in->space, total, false);
    if (!p) return;
    if (sh && !shared_checks(w, in, l, p, total, false, strong(in))) return;
    if (n == 1) {
      w->f->R[in->d][l] = load_bits(p, size, sgn);
    } else {
      for (unsigned i = 0; i < n; i++)
        if (in->vd[i] != PX_NONE) w->f->R[in->vd[i]][l] = load_bits(p + i * size, size, sgn);
    }
  });
}

HANDLER(mem_st) {
  if (fast_access(w, in, m, true)) return;
  unsigned size = in->size, n = in->vec, total = size * n;
  bool sh = needs_shared_checks(w);
  w->blk->access_seq += sh;
  PX_LANES(m, {
    unsigned char *p = resolve(w, in, l, address_of(w, in, l), in->space, total, true);
    if (!p) return;
    if (sh && !shared_checks(w, in, l, p, total, true, strong(in))) return;
    if (n == 1) {
      store_bits(p, size, w->f->R[in->d][l]);
    } else {
      for (unsigned i = 0; i < n; i++) store_bits(p + i * size, size, in->vd[i] != PX_NONE ? w->f->R[in->vd[i]][l] : 0);
    }
  });
}

/* ---------------------------------------------------------------- atomics */

/* One atomic read-modify-write on p; returns the old value. Global memory may be shared with
 * other host threads running other blocks, so it uses the host's atomics. */
#define ATOMIC_RMW(T, ST, FT, to_float, from_float)                                                                    \
  static T atomic_rmw_##T(T *q, unsigned op, enum ptx_type t, T y, T c) {                                              \
    T old = __atomic_load_n(q, __ATOMIC_RELAXED), nv;                                                                  \
    bool sgn = ptx_type_is_signed(t);                                                                                  \
    do {                                                                                                               \
      T x = old;                                                                                                       \
      switch (op) {                                                                                                    \
      case PTX_ATOM_ADD: nv = t == FT ? (T)from_float(to_float(x) + to_float(y)) : (T)(x + y); break;                  \
      case PTX_ATOM_MIN: nv = sgn ? ((ST)x < (ST)y ? x : y) : (x < y ? x : y); break;                                  \
      case PTX_ATOM_MAX: nv = sgn ? ((ST)x > (ST)y ? x : y) : (x > y ? x : y); break;                                  \
      case PTX_ATOM_INC: nv = x >= y ? 0 : (T)(x + 1); break;                                                          \
      case PTX_ATOM_DEC: nv = (x == 0 || x > y) ? y : (T)(x - 1); break;                                               \
      case PTX_ATOM_CAS: nv = x == y ? c : x; break;                                                                   \
      case PTX_ATOM_EXCH: nv = y; break;                                                                               \
      case PTX_ATOM_AND: nv = x & y; break;                                                                            \
      case PTX_ATOM_OR: nv = x | y; break;                                                                             \
      default: nv = x ^ y; break;                                                                                      \
      }                                                                                                                \
    } while (!__atomic_compare_exchange_n(q, &old, nv, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED));                     \
    return old;                                                                                                        \
  }
ATOMIC_RMW(uint32_t, int32_t, PTX_T_F32, px_f32, px_bits32)
ATOMIC_RMW(uint64_t, int64_t, PTX_T_F64, px_f64, px_bits64)

/* The 16-bit atomics: add of .f16/.bf16 (rounded to nearest), cas and exch of .b16. */
static uint16_t atomic_rmw16(uint16_t *q, unsigned op, enum ptx_type t, uint16_t y, uint16_t c) {
  uint16_t old = __atomic_load_n(q, __ATOMIC_RELAXED), nv;
  do {
    switch (op) {
    case PTX_ATOM_ADD: nv = (uint16_t)px_half_add(t == PTX_T_BF16, old, y); break;
    case PTX_ATOM_CAS: nv = old == y ? c : old; break;
    default: nv = y; break;
    }
  } while (!__atomic_compare_exchange_n(q, &old, nv, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED));
  return old;
}

/* add.noftz of .f16x2/.bf16x2: each half rounded on its own; the word changes at once. */
static uint32_t atomic_add_x2(uint32_t *q, bool bf, uint32_t y) {
  uint32_t old = __atomic_load_n(q, __ATOMIC_RELAXED), nv;
  do {
    nv = px_half_add(bf, old & 0xffffu, y & 0xffffu) | px_half_add(bf, old >> 16, y >> 16) << 16;
  } while (!__atomic_compare_exchange_n(q, &old, nv, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED));
  return old;
}

static uint64_t atomic_rmw(unsigned char *p, unsigned op, unsigned size, enum ptx_type t, uint64_t b, uint64_t c) {
  if (size == 2) return atomic_rmw16((uint16_t *)(void *)p, op, t, (uint16_t)b, (uint16_t)c);
  if (t == PTX_T_F16X2 || t == PTX_T_BF16X2)
    return atomic_add_x2((uint32_t *)(void *)p, t == PTX_T_BF16X2, (uint32_t)b);
  if (size == 4) return atomic_rmw_uint32_t((uint32_t *)(void *)p, op, t, (uint32_t)b, (uint32_t)c);
  return atomic_rmw_uint64_t((uint64_t *)(void *)p, op, t, b, c);
}

/*
 * INIT: an atomic reads its old value before it writes, so bytes nothing wrote fault as ld's read of
 * them does. Every operation counts, exch and cas too (both return the old value) and red (whose
 * result is the old value combined). Bad addresses are left to resolve, which reports them as writes.
 */
static bool atom_reads_written(struct px_warp *w, const struct px_ins *in, unsigned l, uint64_t addr, unsigned size) {
  struct px_block *b = w->blk;
  unsigned space = in->space;
  if (space == PTX_SPACE_GENERIC) {
    uint64_t window = addr & ~(PX_WINDOW_BYTES - 1);
    if (window == PX_LOCAL_WINDOW || window == PX_PARAM_WINDOW) return true;
    if (window == PX_SHARED_WINDOW) {
      space = PTX_SPACE_SHARED;
      addr -= window;
    }
  }
  if (addr & (size - 1)) return true;
  if (space == PTX_SPACE_SHARED)
    return addr + size > b->shared_bytes || addr + size < addr || init_check(w, in, l, (uint32_t)addr, size);
  if (!find_global(w, in, l, addr, size, true)) return b->status == GCAP_SUCCESS;
  return !memo.bits || init_global(w, in, l, addr, size, false);
}

/* atom/red: in->kind the operation, in->e the type, d (PX_NONE for red), b and c the operands. */
HANDLER(mem_atom) {
  unsigned size = in->size, op = in->kind;
  bool sh = needs_shared_checks(w), init = w->blk->checks & GCAP_SIM_CHECK_INIT;
  w->blk->access_seq += sh;
  const uint64_t *B = px_slot(w, in->b), *C = in->c != PX_NONE ? px_slot(w, in->c) : B;
  PX_LANES(m, {
    uint64_t a = address_of(w, in, l);
    if (init && !atom_reads_written(w, in, l, a, size)) return;
    unsigned char *p = resolve(w, in, l, a, in->space, size, true);
    if (!p) return;
    if (sh && !shared_checks(w, in, l, p, size, true, true)) return;
    uint64_t old = atomic_rmw(p, op, size, (enum ptx_type)in->e, B[l], C[l]);
    if (in->d != PX_NONE) w->f->R[in->d][l] = size == 4 ? (uint64_t)(uint32_t)old : old;
  });
}

/* ---------------------------------------------------------------- addresses */

/* cvta: kind 1 to a space (generic -> space), 0 from it; in->space the space. */
HANDLER(mem_cvta) {
  uint64_t *d = px_slot(w, in->d);
  const uint64_t *A = px_slot(w, in->a);
  uint64_t window = in->space == PTX_SPACE_SHARED  ? PX_SHARED_WINDOW
                    : in->space == PTX_SPACE_LOCAL ? PX_LOCAL_WINDOW
                    : in->space == PTX_SPACE_PARAM ? PX_PARAM_WINDOW
                                                   : 0;
  bool to = in->kind;
  uint64_t mask = in->size == 4 ? 0xffffffffull : ~0ull;
  if (!window) {
    PX_LANES(m, d[l] = A[l]);
    return;
  }
  if (to) PX_LANES(m, d[l] = (A[l] - window) & mask);
  else PX_LANES(m, d[l] = (A[l] & mask) + window);
}

HANDLER(mem_isspacep) {
  const uint64_t *A = px_slot(w, in->a);
  uint32_t r = 0;
  PX_LANES(m, {
    uint64_t window = A[l] & ~(PX_WINDOW_BYTES - 1);
    unsigned s = window == PX_SHARED_WINDOW  ? PTX_SPACE_SHARED
                 : window == PX_LOCAL_WINDOW ? PTX_SPACE_LOCAL
                 : window == PX_PARAM_WINDOW ? PTX_SPACE_PARAM
                                             : PTX_SPACE_GLOBAL;
    if (s == in->space || (in->space == PTX_SPACE_CONST && s == PTX_SPACE_GLOBAL)) r |= 1u << l;
  });
  uint32_t *P = w->f->P;
  P[in->d] = (P[in->d] & ~m) | r;
}

HANDLER(mem_nop) {
  (void)w;
  (void)in;
  (void)m;
}

/* ---------------------------------------------------------------- lowering */

/* Kernel parameters are read from the launch's buffer; a .func's own are in its frame. */
static unsigned access_space(const struct ptx_instr *pi, const struct px_ins *in) {
  if (in->sym_local) return PTX_SPACE_LOCAL;
  if (pi->space == PTX_SPACE_CONST) return PTX_SPACE_GLOBAL;
  return pi->space;
}

/* The fast form a scalar access may take when the launch has no memory checks. */
static uint16_t fast_kind_of(const struct px_ins *in, bool store) {
  if (in->vec != 1 || in->sym_local) return FAST_NONE;
  if (in->space == PTX_SPACE_PARAM && !store && in->a == PX_NONE && in->imm >= 0) return FAST_KPARAM;
  if (in->a == PX_NONE) return FAST_NONE;
  if (in->space == PTX_SPACE_GLOBAL) return FAST_GLOBAL;
  if (in->space == PTX_SPACE_SHARED) return FAST_SHARED;
  return FAST_NONE;
}

static int lower_vec_regs(struct px_lower *L, const struct ptx_operand *o, struct px_ins *in, enum ptx_type t) {
  if (o->count > 4) return px_refuse(L, "a vector of %u elements (ld and st take at most 4)", o->count);
  in->vec = o->count;
  for (unsigned i = 0; i < o->count; i++) {
    if (o->elems[i].kind == PTX_OPND_SINK) continue;
    struct ptx_operand e = {
        .kind = o->elems[i].kind, .index = o->elems[i].reg, .imm = o->elems[i].imm, .imm_kind = o->elems[i].imm_kind};
    in->vd[i] = px_value(L, &e, t);
  }
  return 1;
}

static int lower_ld_st(struct px_lower *L, const struct ptx_instr *pi, struct px_ins *in, bool store) {
  enum ptx_type t = (enum ptx_type)pi->type;
  if (pi->num_operands != 2) return px_refuse(L, "takes 2 operands");
  if (store && pi->space == PTX_SPACE_CONST) return px_refuse(L, "constant memory is read-only to kernels");
  const struct ptx_operand *addr = &pi->opnd[store ? 0 : 1], *val = &pi->opnd[store ? 1 : 0];
  if (!px_address(L, addr, in)) return -1;
  in->space = (uint8_t)access_space(pi, in);
  in->size = (uint8_t)ptx_type_size(t);
  if (!in->size || in->size > 8) return px_unsupported(L, "type .%s is not supported here", ptx_type_name(t));
  in->kind = ptx_type_is_signed(t) ? 1 : 0;
  in->vec = 1;
  if (val->kind != PTX_OPND_VEC) in->d = px_value(L, val, t);
  else if (lower_vec_regs(L, val, in, t) < 0) return -1;
  in->fn = store ? mem_st : mem_ld;
  /* A variable's address alone ([name+8]): a zero base register lets the fast forms take it. */
  if (in->a == PX_NONE && !in->sym_local && (in->space == PTX_SPACE_SHARED || in->space == PTX_SPACE_GLOBAL))
    in->a = px_const(L, 0);
  in->e = fast_kind_of(in, store);
  return 1;
}

static int lower_atom(struct px_lower *L, const struct ptx_instr *pi, struct px_ins *in) {
  bool red = pi->op == PTX_OP_RED;
  enum ptx_type t = (enum ptx_type)pi->type;
  unsigned n = pi->num_operands, first = red ? 0 : 1;
  if (n < first + 2) return px_refuse(L, "too few operands");
  if (pi->space == PTX_SPACE_CONST) return px_refuse(L, "constant memory is read-only to kernels");
  if (!px_address(L, &pi->opnd[first], in)) return -1;
  in->space = (uint8_t)access_space(pi, in);
  in->size = (uint8_t)ptx_type_size(t);
  if (pi->vec > 1) return px_unsupported(L, "vector atomics (.v2, .v4, .v8) are not supported yet");
  bool half = t == PTX_T_F16 || t == PTX_T_BF16 || t == PTX_T_F16X2 || t == PTX_T_BF16X2;
  if (half && pi->mode != PTX_ATOM_ADD)
    return px_refuse(L, "%s.%s: the only operation on .%s is add", red ? "red" : "atom", ptx_type_name(t),
                     ptx_type_name(t));
  if (in->size == 2 && !half && (t != PTX_T_B16 || (pi->mode != PTX_ATOM_CAS && pi->mode != PTX_ATOM_EXCH)))
    return px_unsupported(L, "atomics of .%s are not supported yet (16 bits: add of .f16/.bf16, cas and exch of .b16)",
                          ptx_type_name(t));
  if (in->size != 2 && in->size != 4 && in->size != 8)
    return px_unsupported(L, "atomics of .%s are not supported yet", ptx_type_name(t));
  if (!red) in->d = px_value(L, &pi->opnd[0], t);
  in->b = px_value(L, &pi->opnd[first + 1], t);
  if (pi->mode == PTX_ATOM_CAS) {
    if (n < first + 3) return px_refuse(L, "cas needs a compare and a swap value");
    in->c = px_value(L, &pi->opnd[first + 2], t);
  }
  in->kind = pi->mode;
  in->e = t;
  in->fn = mem_atom;
  return 1;
}

int px_lower_mem(struct px_lower *L, const struct ptx_instr *pi, struct px_ins *in) {
  switch ((enum ptx_op)pi->op) {
  case PTX_OP_LD:
  case PTX_OP_LDU: return lower_ld_st(L, pi, in, false);
  case PTX_OP_ST: return lower_ld_st(L, pi, in, true);
  case PTX_OP_ATOM:
  case PTX_OP_RED: return lower_atom(L, pi, in);
  case PTX_OP_CVTA:
    if (pi->num_operands != 2) return px_refuse(L, "cvta takes 2 operands");
    in->d = px_value(L, &pi->opnd[0], (enum ptx_type)pi->type);
    in->a = px_value(L, &pi->opnd[1], (enum ptx_type)pi->type);
    in->space = pi->space;
    in->kind = pi->mode == PTX_CVTA_TO;
    in->size = (uint8_t)ptx_type_size((enum ptx_type)pi->type);
    in->fn = mem_cvta;
    return 1;
  case PTX_OP_ISSPACEP:
    if (pi->num_operands != 2) return px_refuse(L, "isspacep takes 2 operands");
    in->d = px_pred(L, &pi->opnd[0], NULL);
    in->a = px_value(L, &pi->opnd[1], PTX_T_U64);
    in->space = pi->space;
    in->fn = mem_isspacep;
    return 1;
  case PTX_OP_PREFETCH:
  case PTX_OP_PREFETCHU:
  case PTX_OP_MEMBAR:
  case PTX_OP_FENCE:
  case PTX_OP_PMEVENT: in->fn = mem_nop; return 1;
  case PTX_OP_NANOSLEEP: in->ctl = PX_CTL_YIELD; return 1; /* a sleeping warp lets the others run */
  default: return 0;
  }
}

unsigned char *px_access(struct px_warp *w, const struct px_ins *in, unsigned lane, uint64_t addr, unsigned space,
                         unsigned bytes, bool write) {
  unsigned char *p = resolve(w, in, lane, addr, space, bytes, write);
  if (p && needs_shared_checks(w) && !shared_checks(w, in, lane, p, bytes, write, strong(in))) return NULL;
  return p;
}
