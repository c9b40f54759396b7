/*
 * The executor's own structures, shared by its files: the lowered code (ptx_lower.c), the warp
 * scheduler (ptx_run.c), the arithmetic (ptx_alu.c), memory and its checks (ptx_mem.c) and warp
 * operations (ptx_warp.c).
 *
 * Registers: every value register of a frame is a slot of 32 lanes of 64 bits (R[slot][lane]);
 * narrower values are read by truncation, so what lies above them does not matter, except in a
 * narrow register that is the base of an address, which the lowering zero-extends after each
 * write (addresses read the whole slot). Immediates
 * become constant slots after the registers, filled once per frame. Predicates are one 32-bit
 * mask per register (a bit per lane), so guards, votes and branches cost a load.
 */
#ifndef GCAP_SIM_PTX_INTERNAL_H
#define GCAP_SIM_PTX_INTERNAL_H

#include <math.h>
#include <string.h>

#include "ptx/ptx.h"
#include "ptx_exec.h"

#define PX_FULL 0xffffffffu
#define PX_NO_PC UINT32_MAX

/* Generic addresses of the windows that are not host memory (above any user-space pointer). */
#define PX_SHARED_WINDOW 0xfe00000000000000ull
#define PX_LOCAL_WINDOW 0xfd00000000000000ull
#define PX_PARAM_WINDOW 0xfc00000000000000ull
#define PX_WINDOW_BYTES 0x0100000000000000ull

#define SIM_PX_SHARED_BYTES 49152u /* static shared memory of a kernel, at most (ptxas'); PX_DEVICE_SHARED_BYTES */
#define PX_RESERVED_SMEM 1024u     /* the shared memory a block reserves for the system (sm_80 and later) */
#define PX_LOCAL_BYTES 16384u      /* each thread's stack: its frames' .local and .param variables */
#define PX_MAX_DEPTH 64u           /* calls deep */
#define PX_PARAM_BYTES 32764u      /* a kernel's parameters, at most (CUDA's limit) */
/* The simulated device's memory (an H100's 80 GiB): what one module's .global and .const variables may take. */
#define PX_DEVICE_MEMORY ((uint64_t)80 << 30)

struct px_warp;
struct px_ins;
typedef void (*px_fn)(struct px_warp *w, const struct px_ins *in, uint32_t m);

/* What the scheduler does with an instruction besides calling fn. */
enum px_ctl {
  PX_CTL_NONE = 0,
  PX_CTL_BRA,  /* target */
  PX_CTL_CALL, /* aux: callee */
  PX_CTL_RET,
  PX_CTL_EXIT,
  PX_CTL_BAR,    /* bar.sync / barrier.sync / bar.red: a = id slot, b = count slot (or NONE) */
  PX_CTL_ARRIVE, /* bar.arrive */
  PX_CTL_WSYNC,  /* bar.warp.sync */
  PX_CTL_TRAP,
  PX_CTL_BUILTIN, /* a call of vprintf, __assertfail, cudaGraphSetConditional: fn does it */
  PX_CTL_WARP,    /* shfl/vote/match/redux.sync: fn does it, after lanes it names catch up (e: member masks) */
  PX_CTL_YIELD,   /* nanosleep: the warp lets the others run */
  /* mbarrier.test_wait/try_wait: fn runs; when it sets yield (a wait failed), the warp lets the others run */
  PX_CTL_POLL,
};

#define PX_NONE 0xffffu

struct px_ins {
  px_fn fn;
  uint16_t d, a, b, c, e; /* value slots (PX_NONE: unused); predicates index P */
  uint16_t pd2;           /* the second predicate destination (setp p|q, shfl d|p), PX_NONE: none */
  int16_t guard;          /* predicate register, or -1 */
  uint8_t guard_neg;
  uint8_t ctl;                 /* enum px_ctl */
  uint8_t size;                /* bytes of each memory access element / operand width */
  uint8_t vec;                 /* elements of a vector access */
  uint8_t space;               /* enum ptx_space of a memory access */
  uint8_t kind;                /* handler-specific small value (comparison, atomic op, mode) */
  uint8_t neg_a, neg_b, neg_c; /* predicate sources read negated (!%p) */
  uint8_t sym_local;           /* the address's base is a variable of the frame (local window) */
  uint8_t ftz;                 /* comparisons and slct: flush subnormal inputs */
  uint16_t vd[4];              /* vector registers of ld/st/mov (PX_NONE: a sink) */
  int64_t imm;                 /* address offset, or a handler's constant */
  uint32_t target;             /* branch target */
  uint32_t aux;                /* callee index; builtin kind */
  const struct ptx_instr *src; /* for reports */
};

/* A frame's variable in the thread's stack (.local and .param of a function). */
struct px_func {
  const struct ptx_func *src;
  struct px_ins *code;
  size_t num_code;
  unsigned num_slots; /* registers then constants */
  unsigned num_regs;  /* value registers (slots 0 .. num_regs - 1) */
  unsigned num_preds;
  uint64_t *consts;        /* num_slots - num_regs values */
  uint32_t *var_offset;    /* of each ptx_func.vars entry: in the frame (local/param) or shared layout */
  uint32_t *param_offset;  /* of each param: in the frame (.func) or the kernel's parameter buffer (entry) */
  uint32_t *ret_offset;    /* of each return parameter, in the frame */
  uint32_t frame_bytes;    /* this function's part of the thread's stack */
  uint32_t static_shared;  /* an entry's: where its static shared variables end */
  uint32_t dynamic_offset; /* an entry's: where `.extern .shared` arrays start in its blocks */
  uint32_t *pred_of_reg;   /* register index -> predicate index, or slot index */
  uint32_t *slot_of_reg;
  char *unrunnable; /* why it cannot run (px_unsupported: "<what> at PTX line N \"...\""), NULL: it runs */
};

struct px_kernel {
  const struct px_program *program;
  const char *name;
  struct px_func *fn;
  size_t num_params;
  size_t *param_sizes;
  uint32_t *param_offsets;
  uint32_t params_bytes;
  uint32_t static_shared;      /* bytes of static shared variables (module and entry scope) */
  uint32_t dynamic_offset;     /* where `.extern .shared` arrays start */
  uint32_t reserved_bytes;     /* the region after them that %reserved_smem_offset_* name (0: none) */
  char *unrunnable;            /* "kernel \"K\": <why>" when it or a .func it calls cannot run, else NULL */
  uint64_t runs, instructions; /* px_kernel_count_run: launches and their lane-instructions */
};

struct px_global {
  const char *name;
  unsigned char *addr;
  size_t bytes;
  bool is_const;
};

struct px_program {
  struct ptx_module *module;
  struct px_func *funcs; /* one per ptx_module.funcs entry (empty for extern ones) */
  size_t num_funcs;
  struct px_kernel *kernels;
  size_t num_kernels;
  struct px_global *globals; /* one per module variable (addr NULL for shared ones) */
  size_t num_globals;
  uint32_t *shared_offset;   /* module .shared variables' offsets in every block's shared memory */
  uint64_t module_shared;    /* bytes of them (each kernel's layout refuses more than a block has) */
  uint64_t funcs_shared;     /* where the .func bodies' .shared variables end (they follow the module's) */
  uint64_t dynamic_offset;   /* where .func bodies see `.extern .shared` arrays: the latest start of all kernels */
  bool funcs_use_dynamic;    /* a .func names an `.extern .shared` array: every kernel starts it there */
  uint32_t reserved_bytes;   /* PX_RESERVED_SMEM when the module reads %reserved_smem_offset_*, else 0 */
  unsigned char *const_bank; /* the .const variables, together: read-only to kernels (NULL: none) */
  size_t const_bytes;
  struct px_memory_ops mem;
};

/* The loaded program whose constant bank [addr, addr + bytes) overlaps, or NULL (ptx_lower.c). */
const struct px_program *px_const_owner(uint64_t addr, uint64_t bytes);

/* One call frame of a warp. */
struct px_frame {
  const struct px_func *fn;
  uint64_t (*R)[32];
  uint32_t *P;
  uint32_t pcs[32];          /* each lane's pc, valid for lanes outside the running group */
  uint32_t lanes;            /* lanes that entered this frame */
  uint32_t done;             /* lanes of it that returned */
  uint32_t waiting;          /* lanes parked at bar.warp.sync */
  uint32_t ret_pc;           /* where the caller goes on */
  uint32_t local_base;       /* the frame's first byte in each thread's stack */
  const struct px_ins *call; /* the caller's call instruction */
};

enum px_state { PX_RUNNING, PX_AT_BARRIER, PX_FINISHED };

struct px_block;

struct px_warp {
  struct px_block *blk;
  struct px_frame *f; /* the current frame */
  struct px_frame frames[PX_MAX_DEPTH];
  unsigned depth;
  const struct px_ins *code;
  uint32_t pc;          /* the running group's pc */
  uint32_t group;       /* lanes running now: those at the lowest pc */
  uint32_t others_min;  /* the lowest pc of the frame's other runnable lanes (above pc when ahead) */
  bool ahead;           /* the group was let run ahead of lanes behind it (a spinning group yielded) */
  bool yield;           /* leave run_warp: the warp used its turn */
  uint32_t spin;        /* backward branches left in this turn */
  unsigned same;        /* turns in a row that ended in the same state (fingerprint) */
  uint64_t fingerprint; /* of the state the last turn ended in */
  bool outside;         /* that turn's loop reads memory others may write (global, generic) */
  uint32_t live;        /* lanes that exist and have not exited */
  uint32_t exists;      /* lanes with a thread (the last warp of a block may be partial) */
  uint32_t cc;          /* carry flags (add.cc and friends), a bit per lane */
  unsigned index;       /* warp number in the block */
  enum px_state state;
  unsigned bar_id; /* PX_AT_BARRIER: which barrier */
  uint32_t bar_pc;
  uint32_t bar_pred;          /* bar.red: the lanes' predicates */
  uint64_t executed;          /* lane-instructions */
  uint64_t (*regs)[32];       /* the register stack frames' R and P are carved from */
  size_t regs_used, regs_cap; /* in slots */
  uint32_t *preds;
  size_t preds_used, preds_cap;
};

struct px_barrier {
  unsigned expected; /* threads; 0: the whole block */
  unsigned arrived;
  uint32_t pc; /* of the first arrival, for the SYNC check */
  const struct px_func *fn;
  unsigned red_count; /* bar.red: lanes whose predicate was true */
  bool red_all, red_any;
};

/* Shadow state of one shared-memory byte for the race check. */
struct px_shadow {
  uint32_t epoch;  /* barrier epoch (+1) of the accesses recorded; others are stale */
  uint16_t writer; /* thread + 1 of the last write this epoch, 0: none */
  uint16_t reader; /* thread + 1 of a read this epoch, 0: none */
  uint32_t write_line, read_line;
  uint32_t wsync, rsync; /* the accessor's __syncwarp count then (intra-warp ordering) */
  uint32_t wseq, rseq;   /* the access's instruction run (px_block.access_seq): lanes of one never race */
  uint8_t flags;         /* 1: the write was atomic; 2: the read was */
};

struct px_block {
  const struct px_launch *l;
  const struct px_kernel *k;
  const struct px_program *prog;
  const char *const *files; /* the PTX's .file names, for reports */
  size_t num_files;
  unsigned exited;      /* threads that exited */
  uint32_t wsync_count; /* __syncwarp completions */
  uint32_t access_seq;  /* SHARED_RACES: shared-memory instructions run, numbering each run */
  gcap_dim3 idx;
  unsigned threads, num_warps;
  struct px_warp *warps;
  unsigned char *shared; /* static then dynamic shared memory */
  uint32_t shared_bytes;
  unsigned char *shared_init; /* INIT check: a byte per shared byte, nonzero once written */
  struct px_shadow *shadow;   /* SHARED_RACES */
  uint32_t *clean;       /* SHARED_RACES: a bit per shared word read this epoch with no write: reads skip the shadow */
  uint32_t epoch;        /* barriers passed */
  uint32_t *wsync_epoch; /* per thread: __syncwarp epochs */
  unsigned char *local;  /* threads * PX_LOCAL_BYTES */
  struct px_barrier bars[16];
  uint64_t rng;
  gcap_status status; /* a fault: the block stops */
  char *msg;
  size_t msg_size;
  unsigned checks;          /* l->checks, at hand */
  unsigned idle_rounds;     /* rounds in a row in which every running warp spun without changing anything */
  uint64_t shared_print;    /* a fingerprint of shared memory at the last such round */
  const uint16_t (*tid)[3]; /* each thread's %tid, worked out once per launch */
  struct px_async *async;   /* cp.async copies in flight and mbarrier bookkeeping (ptx_async.c), NULL: none yet */
  uint16_t *async_pending;  /* SHARED_RACES: per shared byte, cp.async copies into it not yet complete (or NULL) */
};

/* Slots of the current frame. */
static inline uint64_t *px_slot(const struct px_warp *w, unsigned s) { return w->f->R[s]; }

static inline float px_f32(uint64_t v) {
  uint32_t u = (uint32_t)v;
  float f;
  memcpy(&f, &u, 4);
  return f;
}
static inline double px_f64(uint64_t v) {
  double d;
  memcpy(&d, &v, 8);
  return d;
}
static inline uint64_t px_bits32(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return u;
}
static inline uint64_t px_bits64(double d) {
  uint64_t u;
  memcpy(&u, &d, 8);
  return u;
}

/* A floating-point comparison of setp/set/slct (enum ptx_cmp), NaN operands unordered. */
static inline bool px_cmp_float(unsigned cmp, double a, double b) {
  bool un = isnan(a) || isnan(b);
  switch (cmp) {
  case PTX_CMP_EQ: return !un && a == b;
  case PTX_CMP_NE: return !un && a != b;
  case PTX_CMP_LT: return !un && a < b;
  case PTX_CMP_LE: return !un && a <= b;
  case PTX_CMP_GT: return !un && a > b;
  case PTX_CMP_GE: return !un && a >= b;
  case PTX_CMP_EQU: return un || a == b;
  case PTX_CMP_NEU: return un || a != b;
  case PTX_CMP_LTU: return un || a < b;
  case PTX_CMP_LEU: return un || a <= b;
  case PTX_CMP_GTU: return un || a > b;
  case PTX_CMP_GEU: return un || a >= b;
  case PTX_CMP_NUM: return !un;
  case PTX_CMP_NAN: return un;
  default: return false;
  }
}

/* Runs `body` for each lane l in m; all 32 in a loop the compiler can vectorise when m is full. */
#define PX_LANES(m, ...)                                                                                               \
  do {                                                                                                                 \
    if ((m) == PX_FULL) {                                                                                              \
      for (unsigned l = 0; l < 32; l++) { __VA_ARGS__; }                                                               \
    } else {                                                                                                           \
      for (uint32_t mm_ = (m); mm_; mm_ &= mm_ - 1) {                                                                  \
        unsigned l = (unsigned)__builtin_ctz(mm_);                                                                     \
        __VA_ARGS__;                                                                                                   \
      }                                                                                                                \
    }                                                                                                                  \
  } while (0)

/* A fault in the running warp's block: the first one is kept, the block stops. */
void px_fault(struct px_warp *w, const struct px_ins *in, unsigned lane, gcap_status st, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 5, 6)))
#endif
    ;
/* "PTX line L \"instruction\" (file.cu:N)" for a line of the block's program, for reports. */
void px_describe_line(const struct px_block *b, uint32_t line, char *buf, size_t size);
/* The thread number in the block of a lane. */
static inline unsigned px_thread(const struct px_warp *w, unsigned lane) { return w->index * 32 + lane; }

/*
 * Lowering (ptx_lower.c). Each family lowers the instructions it owns: it returns 1 when it
 * filled `in` (fn, slots, fields), 0 when the opcode is not its own, -1 after px_refuse or px_unsupported.
 */
struct px_lower;
int px_lower_alu(struct px_lower *L, const struct ptx_instr *pi, struct px_ins *in);
int px_lower_mem(struct px_lower *L, const struct ptx_instr *pi, struct px_ins *in);
int px_lower_warp(struct px_lower *L, const struct ptx_instr *pi, struct px_ins *in);
int px_lower_async(struct px_lower *L, const struct ptx_instr *pi, struct px_ins *in);
/* The slot holding operand o's value as type t (an immediate becomes a constant slot). PX_NONE after an error. */
uint16_t px_value(struct px_lower *L, const struct ptx_operand *o, enum ptx_type t);
/* The predicate register of operand o (PX_NONE after an error); *neg for `!%p`. */
uint16_t px_pred(struct px_lower *L, const struct ptx_operand *o, uint8_t *neg);
/* A register operand's index in P when it is a predicate register, else PX_NONE. */
uint16_t px_pred_reg(struct px_lower *L, const struct ptx_operand *o);
/* Fills in->a (base slot or PX_NONE), in->imm, in->sym_local and in->space for an address operand. */
bool px_address(struct px_lower *L, const struct ptx_operand *o, struct px_ins *in);
/*
 * Whether register operand o is only ever written by `mov` of one immediate in the function
 * (nvcc keeps a full member mask so); *value: that immediate. Its reads can then be that constant.
 */
bool px_reg_constant(struct px_lower *L, const struct ptx_operand *o, uint64_t *value);
/* A constant slot holding v. */
uint16_t px_const(struct px_lower *L, uint64_t v);
/* Refuses the instruction being lowered: "<what>" goes into the INVALID_PTX message. Returns -1. */
int px_refuse(struct px_lower *L, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
/*
 * Valid PTX the executor cannot run (an instruction, type or form it lacks): the function being
 * lowered, and every kernel that calls it, cannot run; launches of those kernels fail with
 * NOT_SUPPORTED and "<what>" (the first of the function's), while the module loads. Returns -1.
 */
int px_unsupported(struct px_lower *L, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* Special registers, for mov (ptx_alu.c): the value of `sreg`.`comp` in lane l. */
uint64_t px_sreg_value(const struct px_warp *w, unsigned sreg, unsigned comp, unsigned lane);

/* The builtins PTX may call (ptx_warp.c): vprintf, __assertfail, cudaGraphSetConditional. */
enum px_builtin { PX_BUILTIN_NONE = 0, PX_BUILTIN_VPRINTF, PX_BUILTIN_ASSERTFAIL, PX_BUILTIN_SET_CONDITIONAL };
enum px_builtin px_builtin_of(const char *name);
void px_run_builtin(struct px_warp *w, const struct px_ins *in, uint32_t m);
/* The lanes named by the member masks that lanes m pass to a warp operation (PX_CTL_WARP). */
uint32_t px_members(const struct px_warp *w, const struct px_ins *in, uint32_t m);

/*
 * One lane's access of `bytes` at addr in `space` (GENERIC: by its window) with the launch's checks
 * (bounds, alignment, INIT, SHARED_RACES): the host address, or NULL after a fault. A warp
 * instruction's lanes never race with each other: it bumps w->blk->access_seq once before them.
 */
unsigned char *px_access(struct px_warp *w, const struct px_ins *in, unsigned lane, uint64_t addr, unsigned space,
                         unsigned bytes, bool write);
/* Tensor-core instructions (ptx_mma.c): mma, wmma, ldmatrix, stmatrix, movmatrix; 0 for other opcodes. */
int px_lower_mma(struct px_lower *L, const struct ptx_instr *pi, struct px_ins *in);
/*
 * Asynchronous copies and mbarriers (ptx_async.c). A block's copies still in flight at its end are
 * performed there (px_async_block_end, also after a fault: then dropped); the state is kept for
 * the worker's next block and freed with px_async_free.
 */
void px_async_block_end(struct px_block *b);
void px_async_free(struct px_async *a);
/* SHARED_RACES: lane l's access to shared byte `off`, the destination of a copy in flight: the report. */
void px_async_race(struct px_warp *w, const struct px_ins *in, unsigned l, uint32_t off, bool write);

/* For ptx_async.c (ptx_mem.c): the host address of an access as ld/st resolve it (bounds, the
 * MEMORY and INIT checks on global memory); NULL after a fault. */
unsigned char *px_resolve(struct px_warp *w, const struct px_ins *in, unsigned l, uint64_t addr, unsigned space,
                          unsigned bytes, bool write);
/* The INIT and SHARED_RACES checks of a shared access of lane l (as ld/st/atom make them); false after a fault. */
bool px_shared_access(struct px_warp *w, const struct px_ins *in, unsigned l, uint32_t off, unsigned bytes, bool write,
                      bool atomic);
/*
 * A cp.async destination [off, off + bytes) of lane l (in: the cp.async): at issue (complete false)
 * it is checked as a write and counted in flight; at completion it is no more in flight, is
 * written by the issuing thread (its line the cp.async's) and counts as initialised. False after a fault.
 */
bool px_async_dest(struct px_warp *w, const struct px_ins *in, unsigned l, uint32_t off, unsigned bytes, bool complete);

/* Memory access for builtins and calls: a generic address read of `bytes` in lane l; false on a fault. */
bool px_read_generic(struct px_warp *w, const struct px_ins *in, unsigned lane, uint64_t addr, void *out, size_t bytes);
/* The lane's stack address of the current frame's byte `offset`. */
static inline unsigned char *px_local(const struct px_warp *w, unsigned lane, uint32_t offset) {
  return w->blk->local + (size_t)px_thread(w, lane) * PX_LOCAL_BYTES + offset;
}

#endif /* GCAP_SIM_PTX_INTERNAL_H */
