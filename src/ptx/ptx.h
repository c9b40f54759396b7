/*
 * The PTX front end: parses PTX text (what nvcc and NVRTC emit, ISA up to 9.0) into a module
 * whose names are resolved and whose instructions are decoded into fixed-size records. It knows
 * the language, not how to run it: the simulator's executor (src/backend_sim/ptx/) lowers the
 * records into its own form, and the core reads entries' parameter lists from it on any backend.
 *
 * Everything a module holds lives in its arena and goes with ptx_module_free.
 */
#ifndef GCAP_PTX_H
#define GCAP_PTX_H

#include <stdbool.h>
#include <stddef.h>
#include <limits.h>
#include <stdint.h>

#include <gcap/gcap.h>

#include "base/arena.h"

enum ptx_space {
  PTX_SPACE_GENERIC = 0, /* no state space: an address resolved at run time */
  PTX_SPACE_GLOBAL,
  PTX_SPACE_SHARED,
  PTX_SPACE_LOCAL,
  PTX_SPACE_PARAM,
  PTX_SPACE_CONST,
};

enum ptx_type {
  PTX_T_NONE = 0,
  PTX_T_PRED,
  PTX_T_B8,
  PTX_T_B16,
  PTX_T_B32,
  PTX_T_B64,
  PTX_T_B128,
  PTX_T_U8,
  PTX_T_U16,
  PTX_T_U32,
  PTX_T_U64,
  PTX_T_S8,
  PTX_T_S16,
  PTX_T_S32,
  PTX_T_S64,
  PTX_T_F16,
  PTX_T_F16X2,
  PTX_T_BF16,
  PTX_T_BF16X2,
  PTX_T_F32,
  PTX_T_F64,
  PTX_T_TF32,   /* cvt.rna.tf32.f32: an f32 with the low 13 significand bits zero */
  PTX_T_E4M3X2, /* two 8-bit floats (cvt): 4 exponent bits, 3 significand bits */
  PTX_T_E5M2X2, /* two 8-bit floats (cvt): 5 exponent bits, 2 significand bits */
};

/* Bytes of one value of t (a predicate counts 1); 0 for NONE. */
unsigned ptx_type_size(enum ptx_type t);
bool ptx_type_is_signed(enum ptx_type t);   /* S8..S64 */
bool ptx_type_is_float(enum ptx_type t);    /* F16..F64 */
const char *ptx_type_name(enum ptx_type t); /* "u32", ... */

/*
 * Opcodes: one per PTX mnemonic (the first word of an instruction). Suffixes go to the fields of
 * struct ptx_instr; `mad.lo.s32` is PTX_OP_MAD with mode PTX_MUL_LO and type S32.
 */
/* A table, laid out by hand. */
/* clang-format off */
#define PTX_OP_MAP(X)                                                                            \
  X(ADD, "add") X(SUB, "sub") X(MUL, "mul") X(MAD, "mad") X(MUL24, "mul24") X(MAD24, "mad24")   \
  X(SAD, "sad") X(DIV, "div") X(REM, "rem") X(ABS, "abs") X(NEG, "neg") X(MIN, "min")            \
  X(MAX, "max") X(POPC, "popc") X(CLZ, "clz") X(BFIND, "bfind") X(FNS, "fns") X(BREV, "brev")   \
  X(BFE, "bfe") X(BFI, "bfi") X(PRMT, "prmt") X(LOP3, "lop3") X(SHF, "shf") X(SHL, "shl")       \
  X(SHR, "shr") X(AND, "and") X(OR, "or") X(XOR, "xor") X(NOT, "not") X(CNOT, "cnot")            \
  X(ADDC, "addc") X(SUBC, "subc") X(MADC, "madc") X(DP4A, "dp4a") X(DP2A, "dp2a")              \
  X(COPYSIGN, "copysign") X(FMA, "fma") X(RCP, "rcp") X(SQRT, "sqrt") X(RSQRT, "rsqrt")         \
  X(SIN, "sin") X(COS, "cos") X(LG2, "lg2") X(EX2, "ex2") X(TANH, "tanh") X(TESTP, "testp")     \
  X(SETP, "setp") X(SET, "set") X(SELP, "selp") X(SLCT, "slct") X(MOV, "mov") X(CVT, "cvt")     \
  X(CVTA, "cvta") X(LD, "ld") X(LDU, "ldu") X(ST, "st") X(PREFETCH, "prefetch")                 \
  X(PREFETCHU, "prefetchu") X(ISSPACEP, "isspacep") X(ATOM, "atom") X(RED, "red")               \
  X(BAR, "bar") X(BARRIER, "barrier") X(MEMBAR, "membar") X(FENCE, "fence") X(SHFL, "shfl")     \
  X(VOTE, "vote") X(MATCH, "match") X(REDUX, "redux") X(ACTIVEMASK, "activemask")               \
  X(BRA, "bra") X(BRX, "brx") X(CALL, "call") X(RET, "ret") X(EXIT, "exit") X(TRAP, "trap")     \
  X(BRKPT, "brkpt") X(NANOSLEEP, "nanosleep") X(PMEVENT, "pmevent")                             \
  /* Recognised so that a load can refuse them by name (INVALID_PTX "not supported"). */        \
  X(TEX, "tex") X(TLD4, "tld4") X(TXQ, "txq") X(SULD, "suld") X(SUST, "sust") X(SURED, "sured") \
  X(SUQ, "suq") X(MMA, "mma") X(WMMA, "wmma") X(LDMATRIX, "ldmatrix") X(STMATRIX, "stmatrix")   \
  X(MOVMATRIX, "movmatrix")                                                                     \
  X(CP, "cp") X(MBARRIER, "mbarrier") X(WGMMA, "wgmma") X(GRIDDEPCONTROL, "griddepcontrol")     \
  X(ELECT, "elect") X(ALLOCA, "alloca") X(STACKSAVE, "stacksave") X(STACKRESTORE, "stackrestore")
/* clang-format on */

enum ptx_op {
#define PTX_OP_ENUM_(name, text) PTX_OP_##name,
  PTX_OP_MAP(PTX_OP_ENUM_)
#undef PTX_OP_ENUM_
      PTX_OP_COUNT
};
const char *ptx_op_name(enum ptx_op op); /* "add", ... */

enum ptx_round {
  PTX_RND_NONE = 0,
  PTX_RND_RN,
  PTX_RND_RZ,
  PTX_RND_RM,
  PTX_RND_RP,
  PTX_RND_RNA,
  PTX_RND_RNI,
  PTX_RND_RZI,
  PTX_RND_RMI,
  PTX_RND_RPI
};

/* setp / set / slct comparisons. */
enum ptx_cmp {
  PTX_CMP_NONE = 0,
  PTX_CMP_EQ,
  PTX_CMP_NE,
  PTX_CMP_LT,
  PTX_CMP_LE,
  PTX_CMP_GT,
  PTX_CMP_GE,
  PTX_CMP_LO,
  PTX_CMP_LS,
  PTX_CMP_HI,
  PTX_CMP_HS,
  PTX_CMP_EQU,
  PTX_CMP_NEU,
  PTX_CMP_LTU,
  PTX_CMP_LEU,
  PTX_CMP_GTU,
  PTX_CMP_GEU,
  PTX_CMP_NUM,
  PTX_CMP_NAN
};

/* The combining operation of setp/set (`setp.lt.and.s32`), bar.red's and redux's reduction. */
enum ptx_boolop {
  PTX_BOOL_NONE = 0,
  PTX_BOOL_AND,
  PTX_BOOL_OR,
  PTX_BOOL_XOR,
  PTX_BOOL_POPC,
  PTX_BOOL_ADD,
  PTX_BOOL_MIN,
  PTX_BOOL_MAX
};

/*
 * ptx_instr.mode, whose meaning depends on the opcode. One enum so that values never collide.
 *  mul/mad: LO HI WIDE; shfl: UP DOWN BFLY IDX; vote: ALL ANY UNI BALLOT; match: ANY ALL;
 *  atom/red: the operation; shf: L R (with PTX_F_CLAMP or not); prmt: its optional mode;
 *  bar/barrier: SYNC ARRIVE RED (bar.sync and plain `bar` with a number are SYNC; bar.warp.sync
 *  is WARP_SYNC); cvta: TO (cvta.to.space) or FROM (cvta.space); membar/fence: the level.
 */
enum ptx_mode {
  PTX_MODE_NONE = 0,
  PTX_MUL_LO,
  PTX_MUL_HI,
  PTX_MUL_WIDE,
  PTX_SHFL_UP,
  PTX_SHFL_DOWN,
  PTX_SHFL_BFLY,
  PTX_SHFL_IDX,
  PTX_VOTE_ALL,
  PTX_VOTE_ANY,
  PTX_VOTE_UNI,
  PTX_VOTE_BALLOT,
  PTX_MATCH_ANY,
  PTX_MATCH_ALL,
  PTX_ATOM_ADD,
  PTX_ATOM_MIN,
  PTX_ATOM_MAX,
  PTX_ATOM_INC,
  PTX_ATOM_DEC,
  PTX_ATOM_CAS,
  PTX_ATOM_EXCH,
  PTX_ATOM_AND,
  PTX_ATOM_OR,
  PTX_ATOM_XOR,
  PTX_SHF_L,
  PTX_SHF_R,
  PTX_PRMT_F4E,
  PTX_PRMT_B4E,
  PTX_PRMT_RC8,
  PTX_PRMT_ECL,
  PTX_PRMT_ECR,
  PTX_PRMT_RC16,
  PTX_BAR_SYNC,
  PTX_BAR_ARRIVE,
  PTX_BAR_RED,
  PTX_BAR_WARP_SYNC,
  PTX_CVTA_TO,
  PTX_CVTA_FROM,
  PTX_LEVEL_CTA,
  PTX_LEVEL_GL,
  PTX_LEVEL_SYS,
  PTX_LEVEL_CLUSTER,
  PTX_LEVEL_PROXY,
  /* testp.finite and friends */
  PTX_TESTP_FINITE,
  PTX_TESTP_INFINITE,
  PTX_TESTP_NUMBER,
  PTX_TESTP_NOTANUMBER,
  PTX_TESTP_NORMAL,
  PTX_TESTP_SUBNORMAL,
  /* cp.async: the copy (.ca, .cg), its groups, cp.async.mbarrier.arrive (.noinc), cp.async.bulk */
  PTX_CP_ASYNC_CA,
  PTX_CP_ASYNC_CG,
  PTX_CP_ASYNC_COMMIT,
  PTX_CP_ASYNC_WAIT_GROUP,
  PTX_CP_ASYNC_WAIT_ALL,
  PTX_CP_ASYNC_MBAR_ARRIVE,
  PTX_CP_ASYNC_MBAR_ARRIVE_NOINC,
  PTX_CP_ASYNC_BULK,
  /* mbarrier: the operation (arrive.expect_tx, test_wait.parity and try_wait.parity are their own) */
  PTX_MBAR_INIT,
  PTX_MBAR_ARRIVE,
  PTX_MBAR_ARRIVE_EXPECT_TX,
  PTX_MBAR_ARRIVE_DROP,
  PTX_MBAR_EXPECT_TX,
  PTX_MBAR_COMPLETE_TX,
  PTX_MBAR_TEST_WAIT,
  PTX_MBAR_TEST_WAIT_PARITY,
  PTX_MBAR_TRY_WAIT,
  PTX_MBAR_TRY_WAIT_PARITY,
  PTX_MBAR_PENDING_COUNT,
  PTX_MBAR_INVAL,
};

/* ptx_instr.flags: suffixes that are on or off. Hints (.nc, .ca, .L2::..., .relaxed, .acquire,
 * scopes, .volatile, .aligned on warp ops) that change nothing in a sequential model are parsed
 * and recorded only where listed. */
#define PTX_F_FTZ 0x0001u
#define PTX_F_SAT 0x0002u
#define PTX_F_APPROX 0x0004u
#define PTX_F_FULL 0x0008u
#define PTX_F_UNI 0x0010u     /* bra.uni, call.uni */
#define PTX_F_CLAMP 0x0020u   /* shf.clamp */
#define PTX_F_CC 0x0040u      /* add.cc, sub.cc, mad.cc: writes the carry flag */
#define PTX_F_SYNC 0x0080u    /* shfl.sync, vote.sync, match.sync, redux.sync, barrier/bar .sync forms */
#define PTX_F_ALIGNED 0x0100u /* bar.sync, barrier.sync.aligned */
#define PTX_F_VOLATILE 0x0200u
#define PTX_F_SHIFTAMT 0x0400u  /* bfind.shiftamt */
#define PTX_F_NAN 0x0800u       /* min.NaN, max.NaN */
#define PTX_F_ABS 0x1000u       /* min/max .abs (f16 forms) */
#define PTX_F_RELU 0x2000u      /* cvt/fma .relu */
#define PTX_F_SATFINITE 0x4000u /* cvt .satfinite */
#define PTX_F_SCOPE_CTA 0x8000u /* atom/red/fence .cta scope (others: gpu or sys) */

/* Special registers (%tid and the like); those with .x/.y/.z take ptx_operand.comp 0..2. */
enum ptx_sreg {
  PTX_SREG_TID,
  PTX_SREG_NTID,
  PTX_SREG_CTAID,
  PTX_SREG_NCTAID,
  PTX_SREG_LANEID,
  PTX_SREG_WARPID,
  PTX_SREG_NWARPID,
  PTX_SREG_SMID,
  PTX_SREG_NSMID,
  PTX_SREG_GRIDID,
  PTX_SREG_LANEMASK_EQ,
  PTX_SREG_LANEMASK_LE,
  PTX_SREG_LANEMASK_LT,
  PTX_SREG_LANEMASK_GE,
  PTX_SREG_LANEMASK_GT,
  PTX_SREG_CLOCK,
  PTX_SREG_CLOCK_HI,
  PTX_SREG_CLOCK64,
  PTX_SREG_GLOBALTIMER,
  PTX_SREG_GLOBALTIMER_LO,
  PTX_SREG_GLOBALTIMER_HI,
  PTX_SREG_DYNAMIC_SMEM_SIZE,
  PTX_SREG_TOTAL_SMEM_SIZE,
  PTX_SREG_CLUSTERID,
  PTX_SREG_NCLUSTERID,
  PTX_SREG_CLUSTER_CTAID,
  PTX_SREG_CLUSTER_NCTAID,
  PTX_SREG_CLUSTER_CTARANK,
  PTX_SREG_CLUSTER_NCTARANK,
  PTX_SREG_IS_EXPLICIT_CLUSTER,
  PTX_SREG_RESERVED_SMEM_BEGIN, /* %reserved_smem_offset_begin, _end, _cap, _0, _1, in this order */
  PTX_SREG_RESERVED_SMEM_END,
  PTX_SREG_RESERVED_SMEM_CAP,
  PTX_SREG_RESERVED_SMEM_0,
  PTX_SREG_RESERVED_SMEM_1,
  PTX_SREG_ENVREG, /* %envreg0 .. %envreg31: the operand's comp is the number */
  PTX_SREG_COUNT
};

/* Where a symbol operand's variable is declared. */
enum ptx_scope {
  PTX_SCOPE_MODULE = 0, /* ptx_module.vars */
  PTX_SCOPE_PARAM,      /* the function's ptx_func.params (an entry's are the kernel's arguments) */
  PTX_SCOPE_RET,        /* the function's ptx_func.rets */
  PTX_SCOPE_BODY,       /* the function's ptx_func.vars: .local, .shared, .param declared in its body */
};

enum ptx_operand_kind {
  PTX_OPND_NONE = 0,
  PTX_OPND_REG,   /* index: the function's register */
  PTX_OPND_IMM,   /* imm, as imm_kind says */
  PTX_OPND_SREG,  /* sreg, comp */
  PTX_OPND_SYM,   /* a variable's address (`mov.u64 %rd1, name;`): scope, index, plus imm as an offset */
  PTX_OPND_ADDR,  /* `[...]`: base (a register, a variable or nothing) plus imm */
  PTX_OPND_VEC,   /* `{a, b, c, d}`: count elements in elems */
  PTX_OPND_LABEL, /* index: the instruction the label is on (ptx_func.num_instrs for the end) */
  PTX_OPND_FUNC,  /* index: ptx_module.funcs */
  PTX_OPND_SINK,  /* `_` */
};

enum ptx_imm_kind { PTX_IMM_INT = 0, PTX_IMM_F32BITS, PTX_IMM_F64BITS, PTX_IMM_DOUBLE };

enum ptx_addr_base { PTX_ADDR_NONE = 0, PTX_ADDR_REG, PTX_ADDR_SYM };

/* One element of a vector operand: a register, an immediate or a sink. */
struct ptx_elem {
  uint8_t kind; /* PTX_OPND_REG, PTX_OPND_IMM or PTX_OPND_SINK */
  uint8_t imm_kind;
  uint32_t reg;
  int64_t imm;
};

/* Elements of a vector operand, at most: a wmma fragment has 8 registers. */
#define PTX_MAX_VEC 8

struct ptx_operand {
  uint8_t kind;     /* enum ptx_operand_kind */
  uint8_t negate;   /* `!%p` (a predicate source) */
  uint8_t imm_kind; /* IMM: enum ptx_imm_kind (DOUBLE: a decimal literal's double bits) */
  uint8_t sreg, comp;
  uint8_t scope;  /* SYM, ADDR with a variable: enum ptx_scope */
  uint8_t base;   /* ADDR: enum ptx_addr_base */
  uint8_t count;  /* VEC: 1..8 (8: wmma fragments) */
  uint32_t index; /* REG: register; SYM/ADDR: variable; LABEL: instruction; FUNC: function */
  int64_t imm;    /* IMM: the value's bits; SYM/ADDR: byte offset */
  struct ptx_elem elems[PTX_MAX_VEC];
};

#define PTX_MAX_OPERANDS 6

/* wmma's operations: wmma.load, wmma.store, wmma.mma. */
enum ptx_wmma_op { PTX_WMMA_NONE = 0, PTX_WMMA_LOAD, PTX_WMMA_STORE, PTX_WMMA_MMA };

/* The suffixes of mma, wmma, ldmatrix, stmatrix and movmatrix. */
struct ptx_matrix {
  uint8_t m, n, k;     /* .m16n8k16: 16, 8, 16; .m8n8 (ldmatrix, stmatrix, movmatrix): 8, 8, 0; 0: none given */
  uint8_t layouts;     /* .row/.col in the order written: bit i set when the i-th is .col (mma: A then B) */
  uint8_t num_layouts; /* how many were written */
  uint8_t frag;        /* wmma.load/store: 'a', 'b', 'c' or 'd' */
  uint8_t wop;         /* wmma: enum ptx_wmma_op */
  uint8_t num;         /* ldmatrix/stmatrix: .x1, .x2, .x4 (1, 2, 4) */
  bool trans;          /* .trans */
  bool satfinite;      /* .satfinite */
  bool other;          /* a valid form the front end records no further (.sp, .b1, .s4, .e4m3, ...) */
  uint8_t num_types;
  uint8_t types[4]; /* enum ptx_type, in the order written (mma: D, A, B, C; wmma.mma f16: D, C) */
};

struct ptx_instr {
  uint16_t op;       /* enum ptx_op */
  uint8_t type;      /* the (destination) type; cvt: the destination type */
  uint8_t type2;     /* cvt: the source type; set: the source type (dest is type); else NONE */
  uint8_t space;     /* ld/st/ldu/atom/red/cvta/isspacep/prefetch: enum ptx_space */
  uint8_t vec;       /* ld/st/ldu/mov: 1, 2 or 4 (.v2, .v4) */
  uint8_t round;     /* enum ptx_round */
  uint8_t cmp;       /* enum ptx_cmp */
  uint8_t boolop;    /* enum ptx_boolop */
  uint8_t mode;      /* enum ptx_mode */
  uint16_t flags;    /* PTX_F_* */
  uint8_t guard_neg; /* @!%p */
  uint8_t num_operands;
  int32_t guard; /* the guard predicate register, or -1 */
  int32_t dest2; /* the second destination of `setp ... p|q` and `shfl ... d|p`, or -1 */
  struct ptx_operand opnd[PTX_MAX_OPERANDS];
  struct ptx_matrix mx; /* mma, wmma, ldmatrix, stmatrix, movmatrix */
  /* call: operands are the function (FUNC, or a REG for an indirect call: refused later);
   * call_rets/call_args are the parenthesised lists, each a SYM (a .param), REG or IMM. */
  struct ptx_operand *call_rets, *call_args;
  uint8_t num_call_rets, num_call_args;
  uint32_t line, column;                       /* 1-based, of the instruction's first character (its guard if any) */
  uint32_t loc_file, loc_line;                 /* the last `.loc` before it; loc_file 0: none */
  uint32_t loc_inlined_file, loc_inlined_line; /* its `inlined_at` (the call site of inlined code); 0: none */
  const char *text;                            /* the instruction as written, without its `;`, whitespace squeezed */
};

struct ptx_var {
  const char *name;
  uint8_t space;  /* enum ptx_space */
  uint8_t type;   /* element type */
  bool is_extern; /* `.extern .shared ... name[]`: dynamic shared memory */
  bool is_visible;
  bool is_managed; /* `.global .attribute(.managed)`: memory host code may touch too (a __managed__ variable) */
  unsigned align;  /* bytes; the type's size when not given */
  size_t size;     /* bytes in all (elements * type size); 0 for an unsized extern array */
  const unsigned char *init; /* size bytes of its initialiser, or NULL (zeros) */
  /* Initialiser words that hold another variable's address (`{generic(a), b}`) */
  struct ptx_reloc {
    size_t offset;
    uint32_t var;
    int64_t addend;
    bool generic;
  } * relocs;
  size_t num_relocs;
  uint32_t line;
};

struct ptx_reg {
  const char *name; /* "%r12" */
  uint8_t type;     /* as declared (.pred, .b32, .f64, ...) */
};

struct ptx_func {
  const char *name;
  bool is_entry;   /* .entry (else .func) */
  bool is_visible; /* .visible */
  bool is_extern;  /* `.extern .func`: declared, defined elsewhere (cudaGraphSetConditional, vprintf) */
  bool has_body;
  struct ptx_var *params;
  size_t num_params; /* in order; space PARAM */
  struct ptx_var *rets;
  size_t num_rets; /* .func return parameters, in order */
  struct ptx_var *vars;
  size_t num_vars; /* declared in the body, nested blocks included */
  struct ptx_reg *regs;
  size_t num_regs; /* `%r<29>` declares %r0 .. %r28: 29 registers */
  struct ptx_instr *instrs;
  size_t num_instrs;
  unsigned maxntid[3], reqntid[3]; /* 0: not given */
  unsigned minnctapersm, maxnreg;
  uint32_t line;
};

struct ptx_module {
  struct gcap__arena arena;
  unsigned version_major, version_minor;
  unsigned target_sm;    /* 75 for `.target sm_75` */
  unsigned address_size; /* 64 (32 is refused) */
  struct ptx_var *vars;
  size_t num_vars; /* module scope: .global, .const, .shared */
  struct ptx_func *funcs;
  size_t num_funcs; /* in the order declared; a prototype and its definition are one */
  const char **files;
  size_t num_files; /* `.file N "name"`: files[N] (NULL where not declared) */
};

/* Why a parse failed: where, and what. */
struct ptx_error {
  uint32_t line, column;
  char message[256]; /* "unknown instruction \"foo.bar\"", "expected ';'", ... (no position in it) */
};

enum ptx_parse_mode {
  PTX_PARSE_FULL = 0,  /* everything: bodies decoded, instructions checked */
  PTX_PARSE_DECLS = 1, /* declarations only (entries, parameters, variables); bodies are skipped
                          by brace matching, so PTX the simulator cannot run still lists its kernels */
};

/*
 * Parses `size` bytes of PTX text (a NUL before `size` ends it). Returns the module, or NULL
 * with *err filled (err->message "out of memory" when an allocation failed). Never reads past
 * `size`; any input, however malformed, gives a module or an error.
 */
struct ptx_module *ptx_parse(const char *text, size_t size, enum ptx_parse_mode mode, struct ptx_error *err);
void ptx_module_free(struct ptx_module *m);

/* Lookups by name; NULL when absent. */
const struct ptx_func *ptx_find_func(const struct ptx_module *m, const char *name);
const struct ptx_var *ptx_find_var(const struct ptx_module *m, const char *name);

/* ---------------------------------------------------------------- parameter access (access.c)
 * How entry f of a fully parsed module uses each parameter as an address, for race analysis:
 * out[p] (f->num_params entries) is NONE (never an address), READ (only loaded through), WRITE
 * (only stored through), READ_WRITE (both; atomics and reductions read and write), or UNKNOWN
 * where the analysis cannot be sure: not 8 bytes, a value derived from it stored to memory or
 * passed to a call, its address taken; every parameter is UNKNOWN in an entry that calls a
 * function that may write global memory, has an opcode whose operands are not decoded (texture,
 * surface, matrix, cp, brx), or writes through an address of no known origin (a pointer loaded
 * from memory); a read through such an address (or in a callee) counts as a read of every
 * parameter. Derivation is followed through registers, flow-insensitively. False when out of
 * memory (out then all UNKNOWN).
 */
bool ptx_param_access(const struct ptx_module *m, const struct ptx_func *f, gcap_param_access *out);

/* ---------------------------------------------------------------- CUDA C to PTX (nvrtc.c)
 * libnvrtc, the toolkit's run-time compiler, is loaded on first use rather than linked: gcap
 * builds and runs without the toolkit, and only this path needs it.
 */
/*
 * Compiles CUDA C `source` to PTX with NVRTC (loaded at run time), `name` (NULL: "<nvrtc source>")
 * its program name, which NVRTC's log and the PTX's `.file` show as given; *ptx is gcap__malloc'd, NUL-terminated,
 * *ptx_size its length + 1. NOT_FOUND (no libnvrtc: the message says how to get one: install the CUDA toolkit's
 * NVRTC, e.g. Debian's libnvrtc / the cuda-nvrtc package, or point GCAP_NVRTC at libnvrtc.so),
 * INVALID_SOURCE (300) with NVRTC's log in the message, OUT_OF_MEMORY, INVALID_VALUE for a NULL option.
 *
 * Without an -arch / --gpu-architecture option the PTX targets compute_75, the oldest the
 * simulator runs. The library is looked up once per process: $GCAP_NVRTC when set (nothing else
 * then), else $CUDA_PATH and $CUDA_HOME, pip's wheels in the Python environments in sight, the
 * toolkit's usual directories, the loader's search path.
 */
gcap_status gcap__nvrtc_compile(const char *source, const char *name, const char *const *options, size_t num_options,
                                char **ptx, size_t *ptx_size);

/*
 * The directories of NVRTC wheels installed with pip (nvidia/cu<N>/lib, nvidia/cuda_nvrtc/lib) in
 * the site-packages of $VIRTUAL_ENV, $CONDA_PREFIX, libgcap's own and the running Python's, in the
 * order they are searched: up to max into dirs; returns how many.
 */
size_t gcap__nvrtc_pip_dirs(char (*dirs)[PATH_MAX], size_t max);

/* True when libnvrtc was found and has every function gcap__nvrtc_compile calls. */
bool gcap__nvrtc_available(void);

#endif /* GCAP_PTX_H */
