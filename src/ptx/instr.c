/*
 * One PTX instruction: the mnemonic's suffixes become fields of struct ptx_instr, the operands
 * are resolved to registers, variables, functions and labels, and their number and shape are
 * checked against the opcode, so that the executor meets only well-formed records.
 */
#include <string.h>

#include "parse_internal.h"

/* ---------------------------------------------------------------- modifiers */

/* Which modifiers an opcode takes: a modifier belongs to one group, an opcode allows groups. */
enum {
  G_FLAG = 1u << 0,   /* value: a PTX_F_* bit, allowed only where the opcode's flags mask has it */
  G_RND = 1u << 1,    /* .rn .rz .rm .rp */
  G_IRND = 1u << 2,   /* .rni .rzi .rmi .rpi */
  G_RNA = 1u << 3,    /* .rna */
  G_MUL = 1u << 4,    /* .lo .hi .wide */
  G_CMP = 1u << 5,    /* comparisons */
  G_BOOL = 1u << 6,   /* .and .or .xor: setp/set combination, bar.red, lop3 */
  G_POPC = 1u << 7,   /* bar.red.popc */
  G_SPACE = 1u << 8,  /* state spaces */
  G_VEC = 1u << 9,    /* .v2 .v4 */
  G_HINT = 1u << 10,  /* cache operators and eviction hints: accepted, not recorded */
  G_SEM = 1u << 11,   /* memory-ordering semantics: a strong ld/st (relaxed, acquire, release...) as volatile */
  G_SCOPE = 1u << 12, /* .cta .cluster .gpu .sys */
  G_ATOM = 1u << 13,  /* atom/red operations */
  G_REDUX = 1u << 14, /* redux operations (boolop) */
  G_SHFL = 1u << 15,
  G_VOTE = 1u << 16,
  G_MATCH = 1u << 17,
  G_SYNC = 1u << 18, /* .sync of warp-level instructions */
  G_BAR = 1u << 19,  /* .sync .arrive .red .warp of bar and barrier */
  G_PRMT = 1u << 20,
  G_SHF = 1u << 21,
  G_TO = 1u << 22,    /* cvta.to */
  G_LEVEL = 1u << 23, /* membar levels */
  G_PROXY = 1u << 24, /* membar/fence .proxy, whose further suffixes name the proxy kind */
  G_TESTP = 1u << 25,
  G_MASK = 1u << 26, /* pmevent.mask */
};

#define SHF_CLAMP 0xffu
#define SHF_WRAP 0xfeu

struct modifier {
  const char *name;
  uint32_t group;
  uint16_t value;
};

/* An opcode allows at most one group of each name, so the first allowed entry is the one. */
static const struct modifier modifiers[] = {
    {"rn", G_RND, PTX_RND_RN},
    {"rz", G_RND, PTX_RND_RZ},
    {"rm", G_RND, PTX_RND_RM},
    {"rp", G_RND, PTX_RND_RP},
    {"rna", G_RNA, PTX_RND_RNA},
    {"rni", G_IRND, PTX_RND_RNI},
    {"rzi", G_IRND, PTX_RND_RZI},
    {"rmi", G_IRND, PTX_RND_RMI},
    {"rpi", G_IRND, PTX_RND_RPI},
    {"ftz", G_FLAG, PTX_F_FTZ},
    {"sat", G_FLAG, PTX_F_SAT},
    {"approx", G_FLAG, PTX_F_APPROX},
    {"full", G_FLAG, PTX_F_FULL},
    {"uni", G_VOTE, PTX_VOTE_UNI},
    {"uni", G_FLAG, PTX_F_UNI},
    {"cc", G_FLAG, PTX_F_CC},
    {"aligned", G_FLAG, PTX_F_ALIGNED},
    {"volatile", G_FLAG, PTX_F_VOLATILE},
    {"shiftamt", G_FLAG, PTX_F_SHIFTAMT},
    {"NaN", G_FLAG, PTX_F_NAN},
    {"abs", G_FLAG, PTX_F_ABS},
    {"relu", G_FLAG, PTX_F_RELU},
    {"satfinite", G_FLAG, PTX_F_SATFINITE},
    {"lo", G_MUL, PTX_MUL_LO},
    {"hi", G_MUL, PTX_MUL_HI},
    {"wide", G_MUL, PTX_MUL_WIDE},
    {"eq", G_CMP, PTX_CMP_EQ},
    {"ne", G_CMP, PTX_CMP_NE},
    {"lt", G_CMP, PTX_CMP_LT},
    {"le", G_CMP, PTX_CMP_LE},
    {"gt", G_CMP, PTX_CMP_GT},
    {"ge", G_CMP, PTX_CMP_GE},
    {"lo", G_CMP, PTX_CMP_LO},
    {"ls", G_CMP, PTX_CMP_LS},
    {"hi", G_CMP, PTX_CMP_HI},
    {"hs", G_CMP, PTX_CMP_HS},
    {"equ", G_CMP, PTX_CMP_EQU},
    {"neu", G_CMP, PTX_CMP_NEU},
    {"ltu", G_CMP, PTX_CMP_LTU},
    {"leu", G_CMP, PTX_CMP_LEU},
    {"gtu", G_CMP, PTX_CMP_GTU},
    {"geu", G_CMP, PTX_CMP_GEU},
    {"num", G_CMP, PTX_CMP_NUM},
    {"nan", G_CMP, PTX_CMP_NAN},
    {"and", G_BOOL, PTX_BOOL_AND},
    {"or", G_BOOL, PTX_BOOL_OR},
    {"xor", G_BOOL, PTX_BOOL_XOR},
    {"popc", G_POPC, PTX_BOOL_POPC},
    {"add", G_ATOM, PTX_ATOM_ADD},
    {"min", G_ATOM, PTX_ATOM_MIN},
    {"max", G_ATOM, PTX_ATOM_MAX},
    {"inc", G_ATOM, PTX_ATOM_INC},
    {"dec", G_ATOM, PTX_ATOM_DEC},
    {"cas", G_ATOM, PTX_ATOM_CAS},
    {"exch", G_ATOM, PTX_ATOM_EXCH},
    {"and", G_ATOM, PTX_ATOM_AND},
    {"or", G_ATOM, PTX_ATOM_OR},
    {"xor", G_ATOM, PTX_ATOM_XOR},
    {"add", G_REDUX, PTX_BOOL_ADD},
    {"min", G_REDUX, PTX_BOOL_MIN},
    {"max", G_REDUX, PTX_BOOL_MAX},
    {"and", G_REDUX, PTX_BOOL_AND},
    {"or", G_REDUX, PTX_BOOL_OR},
    {"xor", G_REDUX, PTX_BOOL_XOR},
    {"global", G_SPACE, PTX_SPACE_GLOBAL},
    {"shared", G_SPACE, PTX_SPACE_SHARED},
    {"shared::cta", G_SPACE, PTX_SPACE_SHARED},
    {"shared::cluster", G_SPACE, PTX_SPACE_SHARED},
    {"local", G_SPACE, PTX_SPACE_LOCAL},
    {"param", G_SPACE, PTX_SPACE_PARAM},
    {"param::entry", G_SPACE, PTX_SPACE_PARAM},
    {"param::func", G_SPACE, PTX_SPACE_PARAM},
    {"const", G_SPACE, PTX_SPACE_CONST},
    {"v2", G_VEC, 2},
    {"v4", G_VEC, 4},
    {"nc", G_HINT, 0},
    {"ca", G_HINT, 0},
    {"cg", G_HINT, 0},
    {"cs", G_HINT, 0},
    {"lu", G_HINT, 0},
    {"cv", G_HINT, 0},
    {"wb", G_HINT, 0},
    {"wt", G_HINT, 0},
    {"L1", G_HINT, 0},
    {"L2", G_HINT, 0},
    {"noftz", G_HINT, 0},
    {"weak", G_SEM, 0},
    {"relaxed", G_SEM, PTX_F_VOLATILE},
    {"acquire", G_SEM, PTX_F_VOLATILE},
    {"release", G_SEM, PTX_F_VOLATILE},
    {"acq_rel", G_SEM, PTX_F_VOLATILE},
    {"sc", G_SEM, PTX_F_VOLATILE},
    {"mmio", G_SEM, 0},
    {"cta", G_SCOPE, PTX_LEVEL_CTA},
    {"cluster", G_SCOPE, PTX_LEVEL_CLUSTER},
    {"gpu", G_SCOPE, PTX_LEVEL_GL},
    {"sys", G_SCOPE, PTX_LEVEL_SYS},
    {"cta", G_LEVEL, PTX_LEVEL_CTA},
    {"gl", G_LEVEL, PTX_LEVEL_GL},
    {"sys", G_LEVEL, PTX_LEVEL_SYS},
    {"proxy", G_PROXY, PTX_LEVEL_PROXY},
    {"mbarrier_init", G_PROXY, PTX_LEVEL_PROXY}, /* fence.mbarrier_init.release.cluster */
    {"up", G_SHFL, PTX_SHFL_UP},
    {"down", G_SHFL, PTX_SHFL_DOWN},
    {"bfly", G_SHFL, PTX_SHFL_BFLY},
    {"idx", G_SHFL, PTX_SHFL_IDX},
    {"all", G_VOTE, PTX_VOTE_ALL},
    {"any", G_VOTE, PTX_VOTE_ANY},
    {"ballot", G_VOTE, PTX_VOTE_BALLOT},
    {"any", G_MATCH, PTX_MATCH_ANY},
    {"all", G_MATCH, PTX_MATCH_ALL},
    {"sync", G_SYNC, PTX_F_SYNC},
    {"sync", G_BAR, PTX_BAR_SYNC},
    {"arrive", G_BAR, PTX_BAR_ARRIVE},
    {"red", G_BAR, PTX_BAR_RED},
    {"warp", G_BAR, PTX_BAR_WARP_SYNC},
    {"f4e", G_PRMT, PTX_PRMT_F4E},
    {"b4e", G_PRMT, PTX_PRMT_B4E},
    {"rc8", G_PRMT, PTX_PRMT_RC8},
    {"ecl", G_PRMT, PTX_PRMT_ECL},
    {"ecr", G_PRMT, PTX_PRMT_ECR},
    {"rc16", G_PRMT, PTX_PRMT_RC16},
    {"l", G_SHF, PTX_SHF_L},
    {"r", G_SHF, PTX_SHF_R},
    {"wrap", G_SHF, SHF_WRAP},
    {"clamp", G_SHF, SHF_CLAMP},
    {"to", G_TO, PTX_CVTA_TO},
    {"finite", G_TESTP, PTX_TESTP_FINITE},
    {"infinite", G_TESTP, PTX_TESTP_INFINITE},
    {"number", G_TESTP, PTX_TESTP_NUMBER},
    {"notanumber", G_TESTP, PTX_TESTP_NOTANUMBER},
    {"normal", G_TESTP, PTX_TESTP_NORMAL},
    {"subnormal", G_TESTP, PTX_TESTP_SUBNORMAL},
    {"mask", G_MASK, 0},
};

/* ---------------------------------------------------------------- opcodes */

enum types_rule { T_NONE, T_ONE, T_TWO, T_OPT };

enum shape {
  S_VALUES, /* a destination (register, vector or sink), then sources; no address */
  S_LD,     /* destination, address, optional cache policy */
  S_ST,     /* address, then values */
  S_ATOM,   /* destination, address, values */
  S_ADDR0,  /* address, then values (red, prefetch) */
  S_FREE,   /* values of any kind but addresses (bar, nanosleep, pmevent) */
  S_BRA,    /* a label */
  S_CALL,
  S_SKIP, /* operands are not decoded: the executor refuses the opcode by name */
  S_ANY,  /* values and addresses anywhere (cp.async, mbarrier): the executor checks each form */
};

struct opdesc {
  uint32_t groups;
  uint16_t flags;
  uint8_t types; /* enum types_rule */
  uint8_t min, max;
  uint8_t shape;
  bool pair; /* a second destination after '|' */
};

#define FTZ PTX_F_FTZ
#define SAT PTX_F_SAT
#define CC PTX_F_CC
#define APPROX PTX_F_APPROX
#define VALUES(min, max) T_ONE, min, max, S_VALUES, false
#define MEMORY (G_SPACE | G_HINT | G_SEM | G_SCOPE)

static const struct opdesc descs[PTX_OP_COUNT] = {
    [PTX_OP_ADD] = {G_RND | G_FLAG, FTZ | SAT | CC, VALUES(3, 3)},
    [PTX_OP_SUB] = {G_RND | G_FLAG, FTZ | SAT | CC, VALUES(3, 3)},
    [PTX_OP_MUL] = {G_MUL | G_RND | G_FLAG, FTZ | SAT, VALUES(3, 3)},
    [PTX_OP_MAD] = {G_MUL | G_RND | G_FLAG, FTZ | SAT | CC, VALUES(4, 4)},
    [PTX_OP_MUL24] = {G_MUL, 0, VALUES(3, 3)},
    [PTX_OP_MAD24] = {G_MUL | G_FLAG, SAT, VALUES(4, 4)},
    [PTX_OP_SAD] = {0, 0, VALUES(4, 4)},
    [PTX_OP_DIV] = {G_RND | G_FLAG, FTZ | APPROX | PTX_F_FULL, VALUES(3, 3)},
    [PTX_OP_REM] = {0, 0, VALUES(3, 3)},
    [PTX_OP_ABS] = {G_FLAG, FTZ, VALUES(2, 2)},
    [PTX_OP_NEG] = {G_FLAG, FTZ, VALUES(2, 2)},
    [PTX_OP_MIN] = {G_FLAG, FTZ | PTX_F_NAN | PTX_F_ABS | PTX_F_RELU, VALUES(3, 4)},
    [PTX_OP_MAX] = {G_FLAG, FTZ | PTX_F_NAN | PTX_F_ABS | PTX_F_RELU, VALUES(3, 4)},
    [PTX_OP_POPC] = {0, 0, VALUES(2, 2)},
    [PTX_OP_CLZ] = {0, 0, VALUES(2, 2)},
    [PTX_OP_BFIND] = {G_FLAG, PTX_F_SHIFTAMT, VALUES(2, 2)},
    [PTX_OP_FNS] = {0, 0, VALUES(4, 4)},
    [PTX_OP_BREV] = {0, 0, VALUES(2, 2)},
    [PTX_OP_BFE] = {0, 0, VALUES(4, 4)},
    [PTX_OP_BFI] = {0, 0, VALUES(5, 5)},
    [PTX_OP_PRMT] = {G_PRMT, 0, VALUES(4, 4)},
    [PTX_OP_LOP3] = {G_BOOL, 0, T_ONE, 5, 6, S_VALUES, true},
    [PTX_OP_SHF] = {G_SHF, 0, VALUES(4, 4)},
    [PTX_OP_SHL] = {0, 0, VALUES(3, 3)},
    [PTX_OP_SHR] = {0, 0, VALUES(3, 3)},
    [PTX_OP_AND] = {0, 0, VALUES(3, 3)},
    [PTX_OP_OR] = {0, 0, VALUES(3, 3)},
    [PTX_OP_XOR] = {0, 0, VALUES(3, 3)},
    [PTX_OP_NOT] = {0, 0, VALUES(2, 2)},
    [PTX_OP_CNOT] = {0, 0, VALUES(2, 2)},
    [PTX_OP_ADDC] = {G_FLAG, CC, VALUES(3, 3)},
    [PTX_OP_SUBC] = {G_FLAG, CC, VALUES(3, 3)},
    [PTX_OP_MADC] = {G_MUL | G_FLAG, CC, VALUES(4, 4)},
    [PTX_OP_DP4A] = {0, 0, T_TWO, 4, 4, S_VALUES, false},
    [PTX_OP_DP2A] = {G_MUL, 0, T_TWO, 4, 4, S_VALUES, false},
    [PTX_OP_COPYSIGN] = {0, 0, VALUES(3, 3)},
    [PTX_OP_FMA] = {G_RND | G_FLAG, FTZ | SAT | PTX_F_RELU, VALUES(4, 4)},
    [PTX_OP_RCP] = {G_RND | G_FLAG, FTZ | APPROX, VALUES(2, 2)},
    [PTX_OP_SQRT] = {G_RND | G_FLAG, FTZ | APPROX, VALUES(2, 2)},
    [PTX_OP_RSQRT] = {G_FLAG, FTZ | APPROX, VALUES(2, 2)},
    [PTX_OP_SIN] = {G_FLAG, FTZ | APPROX, VALUES(2, 2)},
    [PTX_OP_COS] = {G_FLAG, FTZ | APPROX, VALUES(2, 2)},
    [PTX_OP_LG2] = {G_FLAG, FTZ | APPROX, VALUES(2, 2)},
    [PTX_OP_EX2] = {G_FLAG, FTZ | APPROX, VALUES(2, 2)},
    [PTX_OP_TANH] = {G_FLAG, FTZ | APPROX, VALUES(2, 2)},
    [PTX_OP_TESTP] = {G_TESTP, 0, VALUES(2, 2)},
    [PTX_OP_SETP] = {G_CMP | G_BOOL | G_FLAG, FTZ, T_ONE, 3, 4, S_VALUES, true},
    [PTX_OP_SET] = {G_CMP | G_BOOL | G_FLAG, FTZ, T_TWO, 3, 4, S_VALUES, false},
    [PTX_OP_SELP] = {0, 0, VALUES(4, 4)},
    [PTX_OP_SLCT] = {G_FLAG, FTZ, T_TWO, 4, 4, S_VALUES, false},
    [PTX_OP_MOV] = {G_VEC, 0, VALUES(2, 2)},
    [PTX_OP_CVT] = {G_RND | G_IRND | G_RNA | G_FLAG, FTZ | SAT | PTX_F_RELU | PTX_F_SATFINITE, T_TWO, 2, 3, S_VALUES,
                    false},
    [PTX_OP_CVTA] = {G_SPACE | G_TO, 0, VALUES(2, 2)},
    [PTX_OP_LD] = {MEMORY | G_VEC | G_FLAG, PTX_F_VOLATILE, T_ONE, 2, 3, S_LD, false},
    [PTX_OP_LDU] = {G_SPACE | G_VEC, 0, T_ONE, 2, 2, S_LD, false},
    [PTX_OP_ST] = {MEMORY | G_VEC | G_FLAG, PTX_F_VOLATILE, T_ONE, 2, 3, S_ST, false},
    [PTX_OP_PREFETCH] = {G_SPACE | G_HINT, 0, T_NONE, 1, 1, S_ADDR0, false},
    [PTX_OP_PREFETCHU] = {G_HINT, 0, T_NONE, 1, 1, S_ADDR0, false},
    [PTX_OP_ISSPACEP] = {G_SPACE, 0, T_NONE, 2, 2, S_VALUES, false},
    [PTX_OP_ATOM] = {MEMORY | G_ATOM | G_VEC, 0, T_ONE, 3, 5, S_ATOM, false},
    [PTX_OP_RED] = {MEMORY | G_ATOM | G_VEC, 0, T_ONE, 2, 3, S_ADDR0, false},
    [PTX_OP_BAR] = {G_BAR | G_BOOL | G_POPC | G_FLAG | G_SCOPE, PTX_F_ALIGNED, T_OPT, 1, 4, S_FREE, false},
    [PTX_OP_BARRIER] = {G_BAR | G_BOOL | G_POPC | G_FLAG | G_SCOPE, PTX_F_ALIGNED, T_OPT, 1, 4, S_FREE, false},
    [PTX_OP_MEMBAR] = {G_LEVEL | G_PROXY, 0, T_NONE, 0, 0, S_FREE, false},
    [PTX_OP_FENCE] = {G_SEM | G_SCOPE | G_PROXY, 0, T_NONE, 0, 0, S_FREE, false},
    [PTX_OP_SHFL] = {G_SYNC | G_SHFL, 0, T_ONE, 4, 5, S_VALUES, true},
    [PTX_OP_VOTE] = {G_SYNC | G_VOTE, 0, VALUES(2, 3)},
    [PTX_OP_MATCH] = {G_SYNC | G_MATCH, 0, T_ONE, 3, 3, S_VALUES, true},
    [PTX_OP_REDUX] = {G_SYNC | G_REDUX | G_FLAG, PTX_F_ABS | PTX_F_NAN, VALUES(3, 3)},
    [PTX_OP_ACTIVEMASK] = {0, 0, VALUES(1, 1)},
    [PTX_OP_BRA] = {G_FLAG, PTX_F_UNI, T_NONE, 1, 1, S_BRA, false},
    [PTX_OP_BRX] = {0, 0, T_NONE, 0, 0, S_SKIP, false},
    [PTX_OP_CALL] = {G_FLAG, PTX_F_UNI, T_NONE, 1, 1, S_CALL, false},
    [PTX_OP_RET] = {G_FLAG, PTX_F_UNI, T_NONE, 0, 0, S_FREE, false},
    [PTX_OP_EXIT] = {0, 0, T_NONE, 0, 0, S_FREE, false},
    [PTX_OP_TRAP] = {0, 0, T_NONE, 0, 0, S_FREE, false},
    [PTX_OP_BRKPT] = {0, 0, T_NONE, 0, 0, S_FREE, false},
    [PTX_OP_NANOSLEEP] = {0, 0, T_ONE, 1, 1, S_FREE, false},
    [PTX_OP_PMEVENT] = {G_MASK, 0, T_NONE, 1, 1, S_FREE, false},
    [PTX_OP_CP] = {0, 0, T_OPT, 0, 5, S_ANY, false},       /* cp.async.*: decode_async */
    [PTX_OP_MBARRIER] = {0, 0, T_OPT, 1, 4, S_ANY, false}, /* mbarrier.*: decode_async */
};

/* Texture, surface, matrix, asynchronous-copy and the like: only the opcode matters. */
static bool is_matrix_op(unsigned op) {
  return op == PTX_OP_MMA || op == PTX_OP_WMMA || op == PTX_OP_LDMATRIX || op == PTX_OP_STMATRIX ||
         op == PTX_OP_MOVMATRIX;
}

/* A cp or mbarrier form decode_async does not know: its operands are skipped, the executor refuses it. */
static bool unknown_async_form(const struct ptx_instr *in) {
  return (in->op == PTX_OP_CP || in->op == PTX_OP_MBARRIER) && in->mode == PTX_MODE_NONE;
}

static bool refused_op(unsigned op) {
  if (is_matrix_op(op)) return false;
  if (op == PTX_OP_CP || op == PTX_OP_MBARRIER) return false;
  return op >= PTX_OP_TEX || descs[op].shape == S_SKIP;
}

/* ---------------------------------------------------------------- the mnemonic */

struct decoded {
  const struct ptx_tok *mnemonic;
  const struct opdesc *desc;
  uint8_t types[4];
  unsigned num_types;
  bool bar_warp, proxy;
};

static _Noreturn void bad_modifier(struct ptx_parser *p, const struct decoded *d, const char *s, size_t len) {
  char a[72], b[72];
  ptx_fail(p, d->mnemonic, "unknown modifier \".%s\" in \"%s\"", ptx_show(s, len, a),
           ptx_show(d->mnemonic->start, d->mnemonic->len, b));
}

static bool is_hint_prefix(const char *s, size_t len) {
  return (len > 4 && (memcmp(s, "L1::", 4) == 0 || memcmp(s, "L2::", 4) == 0)) ||
         (len > 7 && memcmp(s, "level::", 7) == 0);
}

static void apply_scope(struct ptx_instr *in, uint16_t level) {
  if (in->op == PTX_OP_FENCE) in->mode = (uint8_t)level;
  if (level == PTX_LEVEL_CTA && (in->op == PTX_OP_ATOM || in->op == PTX_OP_RED || in->op == PTX_OP_FENCE ||
                                 in->op == PTX_OP_LD || in->op == PTX_OP_ST))
    in->flags |= PTX_F_SCOPE_CTA;
}

static void apply_bar(struct ptx_instr *in, struct decoded *d, uint16_t value) {
  if (value == PTX_BAR_WARP_SYNC) {
    d->bar_warp = true;
  } else if (value == PTX_BAR_SYNC) {
    in->flags |= PTX_F_SYNC;
    if (in->mode == PTX_MODE_NONE) in->mode = PTX_BAR_SYNC;
  } else {
    in->mode = (uint8_t)value;
  }
}

static void apply(struct ptx_instr *in, struct decoded *d, const struct modifier *mod) {
  uint16_t v = mod->value;
  switch (mod->group) {
  case G_FLAG: in->flags |= v; break;
  case G_RND:
  case G_IRND:
  case G_RNA: in->round = (uint8_t)v; break;
  case G_CMP: in->cmp = (uint8_t)v; break;
  case G_BOOL:
  case G_POPC:
  case G_REDUX: in->boolop = (uint8_t)v; break;
  case G_SPACE: in->space = (uint8_t)v; break;
  case G_VEC: in->vec = (uint8_t)v; break;
  case G_SCOPE: apply_scope(in, v); break;
  case G_SYNC: in->flags |= PTX_F_SYNC; break;
  case G_BAR: apply_bar(in, d, v); break;
  case G_PROXY: in->mode = (uint8_t)v, d->proxy = true; break;
  case G_SHF:
    if (v == SHF_CLAMP) in->flags |= PTX_F_CLAMP;
    else if (v != SHF_WRAP) in->mode = (uint8_t)v;
    break;
  case G_SEM: /* a strong load or store: never a data race with another strong access (the PTX memory model) */
    if (in->op == PTX_OP_LD || in->op == PTX_OP_ST) in->flags |= v;
    break;
  case G_HINT:
  case G_MASK: break;
  default: in->mode = (uint8_t)v; break; /* MUL ATOM SHFL VOTE MATCH PRMT TO LEVEL TESTP */
  }
}

static void decode_suffix(struct ptx_parser *p, struct ptx_instr *in, struct decoded *d, const char *s, size_t len) {
  int type = len ? ptx_type_lookup(s, len) : -1;
  if (type >= 0) {
    if (d->desc->types == T_NONE || d->num_types == sizeof d->types) bad_modifier(p, d, s, len);
    d->types[d->num_types++] = (uint8_t)type;
    return;
  }
  if ((d->desc->groups & G_HINT) && is_hint_prefix(s, len)) return;
  for (size_t i = 0; i < sizeof modifiers / sizeof modifiers[0]; i++) {
    const struct modifier *mod = &modifiers[i];
    if (strlen(mod->name) != len || memcmp(mod->name, s, len) != 0 || !(d->desc->groups & mod->group)) continue;
    if (mod->group == G_FLAG && !(d->desc->flags & mod->value)) continue;
    /* barrier.cta is the plain barrier; a cluster barrier is another instruction */
    if (mod->group == G_SCOPE && (in->op == PTX_OP_BAR || in->op == PTX_OP_BARRIER) && mod->value != PTX_LEVEL_CTA)
      break;
    apply(in, d, mod);
    return;
  }
  bad_modifier(p, d, s, len);
}

static void need(struct ptx_parser *p, const struct decoded *d, bool ok, const char *what) {
  char b[72];
  if (!ok) ptx_fail(p, d->mnemonic, "\"%s\" needs %s", ptx_show(d->mnemonic->start, d->mnemonic->len, b), what);
}

static void assign_types(struct ptx_parser *p, struct ptx_instr *in, const struct decoded *d) {
  switch (d->desc->types) {
  case T_ONE: need(p, d, d->num_types > 0, "a type"); break;
  case T_TWO:
    need(p, d, d->num_types == 2, "two types");
    in->type = d->types[0];
    in->type2 = d->types[1];
    return;
  default: break;
  }
  if (d->num_types) in->type = d->types[d->num_types - 1];
}

/* Kernels cannot write constant memory: st, atom and red have no .const form. */
static void refuse_const_write(struct ptx_parser *p, const struct ptx_instr *in, const struct decoded *d) {
  char b[72];
  if (in->space == PTX_SPACE_CONST)
    ptx_fail(p, d->mnemonic, "\"%s\": constant memory is read-only (PTX has no %s.const)",
             ptx_show(d->mnemonic->start, d->mnemonic->len, b), ptx_op_name((enum ptx_op)in->op));
}

/* What the suffixes must have said, and what their absence means. */
static void finish_mnemonic(struct ptx_parser *p, struct ptx_instr *in, const struct decoded *d) {
  assign_types(p, in, d);
  switch ((enum ptx_op)in->op) {
  case PTX_OP_ATOM:
  case PTX_OP_RED:
    need(p, d, in->mode != PTX_MODE_NONE, "an operation (.add, .cas, ...)");
    refuse_const_write(p, in, d);
    break;
  case PTX_OP_SETP:
  case PTX_OP_SET: need(p, d, in->cmp != PTX_CMP_NONE, "a comparison"); break;
  case PTX_OP_SHFL: need(p, d, in->mode != PTX_MODE_NONE, ".up, .down, .bfly or .idx"); break;
  case PTX_OP_VOTE: need(p, d, in->mode != PTX_MODE_NONE, ".all, .any, .uni or .ballot"); break;
  case PTX_OP_MATCH: need(p, d, in->mode != PTX_MODE_NONE, ".any or .all"); break;
  case PTX_OP_REDUX: need(p, d, in->boolop != PTX_BOOL_NONE, "an operation (.add, .min, ...)"); break;
  case PTX_OP_SHF: need(p, d, in->mode != PTX_MODE_NONE, ".l or .r"); break;
  case PTX_OP_TESTP: need(p, d, in->mode != PTX_MODE_NONE, "a property (.finite, .number, ...)"); break;
  case PTX_OP_MEMBAR:
  case PTX_OP_FENCE: need(p, d, in->mode != PTX_MODE_NONE, "a scope"); break;
  case PTX_OP_CVTA: in->mode = in->mode == PTX_CVTA_TO ? PTX_CVTA_TO : PTX_CVTA_FROM; break;
  case PTX_OP_ST: refuse_const_write(p, in, d); break;
  case PTX_OP_BAR:
  case PTX_OP_BARRIER:
    if (d->bar_warp) {
      need(p, d, in->mode == PTX_BAR_SYNC, ".sync after .warp");
      in->mode = PTX_BAR_WARP_SYNC;
      break;
    }
    if (in->mode == PTX_MODE_NONE) in->mode = PTX_BAR_SYNC, in->flags |= PTX_F_SYNC; /* plain `bar 0` */
    if (in->mode == PTX_BAR_RED) need(p, d, in->boolop != PTX_BOOL_NONE, ".popc, .and or .or");
    if (in->op == PTX_OP_BAR) in->flags |= PTX_F_ALIGNED; /* bar.* is barrier.*.aligned */
    break;
  default: break;
  }
}

/* ---------------------------------------------------------------- matrix instructions */

/* Operand shapes of the matrix instructions (their suffixes are decoded by decode_matrix). */
static const struct opdesc mma_desc = {0, 0, T_NONE, 4, 4, S_VALUES, false};
static const struct opdesc ldmatrix_desc = {0, 0, T_NONE, 2, 2, S_LD, false};
static const struct opdesc stmatrix_desc = {0, 0, T_NONE, 2, 2, S_ST, false};
static const struct opdesc movmatrix_desc = {0, 0, T_NONE, 2, 2, S_VALUES, false};
static const struct opdesc wmma_load_desc = {0, 0, T_NONE, 2, 3, S_LD, false};
static const struct opdesc wmma_store_desc = {0, 0, T_NONE, 2, 3, S_ST, false};

static bool mx_is(const char *s, size_t len, const char *word) { return strlen(word) == len && !memcmp(s, word, len); }

/* `m16n8k16`, `m8n8`: false when s is no shape. */
static bool matrix_shape(const char *s, size_t len, struct ptx_matrix *mx) {
  unsigned v[3] = {0, 0, 0}, i = 0;
  const char *end = s + len, *letters = "mnk";
  while (s < end && i < 3 && *s == letters[i]) {
    s++;
    if (s == end || *s < '0' || *s > '9') return false;
    while (s < end && *s >= '0' && *s <= '9' && v[i] < 1000) v[i] = v[i] * 10 + (unsigned)(*s++ - '0');
    i++;
  }
  if (s != end || i < 2 || v[0] > 255 || v[1] > 255 || v[2] > 255) return false;
  mx->m = (uint8_t)v[0], mx->n = (uint8_t)v[1], mx->k = (uint8_t)v[2];
  return true;
}

/* Valid suffixes of forms the executor does not run (sparse, sub-byte, fp8, block scaling): recorded as `other`. */
static bool matrix_other(const char *s, size_t len) {
  static const char words[] = "sp b1 s4 u4 b8 e4m3 e5m2 e2m1 e3m2 e2m3 ue8m0 and xor popc block_scale scale_vec::1X "
                              "scale_vec::2X scale_vec::4X ordered_metadata b8x16 b6x16_p32 b4x16_p64 kind::f8f6f4 "
                              "kind::mxf4 kind::mxf8f6f4 kind::mxf4nvf4 kind::f16 kind::i8 kind::tf32 shared::cluster "
                              "rn rz rm rp"; /* the rounding of the f64 forms */
  for (const char *w = words; *w;) {
    size_t n = strcspn(w, " ");
    if (n == len && memcmp(w, s, len) == 0) return true;
    w += n + (w[n] == ' ');
  }
  return false;
}

static void decode_matrix_suffix(struct ptx_parser *p, struct ptx_instr *in, const struct decoded *d, const char *s,
                                 size_t len) {
  struct ptx_matrix *mx = &in->mx;
  int type = ptx_type_lookup(s, len);
  if (in->op == PTX_OP_WMMA && mx->wop == PTX_WMMA_NONE) { /* the operation comes first */
    if (mx_is(s, len, "load")) mx->wop = PTX_WMMA_LOAD;
    else if (mx_is(s, len, "store")) mx->wop = PTX_WMMA_STORE;
    else if (mx_is(s, len, "mma")) mx->wop = PTX_WMMA_MMA;
    else bad_modifier(p, d, s, len);
    return;
  }
  if (type > PTX_T_PRED && mx->num_types < sizeof mx->types) {
    mx->types[mx->num_types++] = (uint8_t)type;
  } else if (mx_is(s, len, "sync")) {
    in->flags |= PTX_F_SYNC;
  } else if (mx_is(s, len, "aligned")) {
    in->flags |= PTX_F_ALIGNED;
  } else if ((mx_is(s, len, "row") || mx_is(s, len, "col")) && mx->num_layouts < 8) {
    if (s[0] == 'c') mx->layouts |= (uint8_t)(1u << mx->num_layouts);
    mx->num_layouts++;
  } else if (mx_is(s, len, "trans")) {
    mx->trans = true;
  } else if (mx_is(s, len, "satfinite")) {
    mx->satfinite = true;
  } else if (len == 2 && s[0] == 'x' && (s[1] == '1' || s[1] == '2' || s[1] == '4')) {
    mx->num = (uint8_t)(s[1] - '0');
  } else if (len == 1 && in->op == PTX_OP_WMMA && s[0] >= 'a' && s[0] <= 'd') {
    mx->frag = (uint8_t)s[0];
  } else if (mx_is(s, len, "global")) {
    in->space = PTX_SPACE_GLOBAL;
  } else if (mx_is(s, len, "shared") || mx_is(s, len, "shared::cta")) {
    in->space = PTX_SPACE_SHARED;
  } else if (matrix_other(s, len)) {
    mx->other = true;
  } else if (!matrix_shape(s, len, mx)) {
    bad_modifier(p, d, s, len);
  }
}

/* The suffixes of mma, wmma, ldmatrix, stmatrix and movmatrix; returns the operand shape to check. */
static const struct opdesc *decode_matrix(struct ptx_parser *p, const struct ptx_tok *t, struct ptx_instr *in) {
  struct decoded d;
  memset(&d, 0, sizeof d);
  d.mnemonic = t;
  const char *end = t->start + t->len, *dot = memchr(t->start, '.', t->len);
  while (dot) {
    const char *next = memchr(dot + 1, '.', (size_t)(end - dot - 1));
    const char *stop = next ? next : end;
    decode_matrix_suffix(p, in, &d, dot + 1, (size_t)(stop - dot - 1));
    dot = next;
  }
  need(p, &d, in->mx.m != 0 || in->mx.other, "a shape (.m16n8k16, .m8n8, ...)");
  switch ((enum ptx_op)in->op) {
  case PTX_OP_MMA: return &mma_desc;
  case PTX_OP_LDMATRIX: return &ldmatrix_desc;
  case PTX_OP_STMATRIX: return &stmatrix_desc;
  case PTX_OP_MOVMATRIX: return &movmatrix_desc;
  default: break;
  }
  need(p, &d, in->mx.wop != PTX_WMMA_NONE, ".load, .store or .mma");
  if (in->mx.wop == PTX_WMMA_MMA) return &mma_desc;
  need(p, &d, in->mx.frag != 0, "a fragment (.a, .b, .c or .d)");
  return in->mx.wop == PTX_WMMA_LOAD ? &wmma_load_desc : &wmma_store_desc;
}

static bool suffix_is(const char *s, size_t len, const char *word) {
  return strlen(word) == len && memcmp(s, word, len) == 0;
}

/* The operation a cp.async or mbarrier suffix names, or PTX_MODE_NONE. */
static uint8_t async_operation(unsigned op, uint8_t mode, const char *s, size_t len) {
  static const struct {
    const char *name;
    uint8_t op, after, mode; /* after: the mode it must follow (PTX_MODE_NONE: none yet) */
  } words[] = {
      {"ca", PTX_OP_CP, PTX_MODE_NONE, PTX_CP_ASYNC_CA},
      {"cg", PTX_OP_CP, PTX_MODE_NONE, PTX_CP_ASYNC_CG},
      {"commit_group", PTX_OP_CP, PTX_MODE_NONE, PTX_CP_ASYNC_COMMIT},
      {"wait_group", PTX_OP_CP, PTX_MODE_NONE, PTX_CP_ASYNC_WAIT_GROUP},
      {"wait_all", PTX_OP_CP, PTX_MODE_NONE, PTX_CP_ASYNC_WAIT_ALL},
      {"mbarrier", PTX_OP_CP, PTX_MODE_NONE, PTX_CP_ASYNC_MBAR_ARRIVE},
      {"arrive", PTX_OP_CP, PTX_CP_ASYNC_MBAR_ARRIVE, PTX_CP_ASYNC_MBAR_ARRIVE},
      {"noinc", PTX_OP_CP, PTX_CP_ASYNC_MBAR_ARRIVE, PTX_CP_ASYNC_MBAR_ARRIVE_NOINC},
      {"bulk", PTX_OP_CP, PTX_MODE_NONE, PTX_CP_ASYNC_BULK},
      {"mbarrier::complete_tx::bytes", PTX_OP_CP, PTX_CP_ASYNC_BULK, PTX_CP_ASYNC_BULK},
      {"bulk_group", PTX_OP_CP, PTX_CP_ASYNC_BULK, PTX_CP_ASYNC_BULK}, /* the bulk forms: told apart by operands */
      {"commit_group", PTX_OP_CP, PTX_CP_ASYNC_BULK, PTX_CP_ASYNC_BULK},
      {"wait_group", PTX_OP_CP, PTX_CP_ASYNC_BULK, PTX_CP_ASYNC_BULK},
      {"read", PTX_OP_CP, PTX_CP_ASYNC_BULK, PTX_CP_ASYNC_BULK},
      {"init", PTX_OP_MBARRIER, PTX_MODE_NONE, PTX_MBAR_INIT},
      {"arrive", PTX_OP_MBARRIER, PTX_MODE_NONE, PTX_MBAR_ARRIVE},
      {"noComplete", PTX_OP_MBARRIER, PTX_MBAR_ARRIVE, PTX_MBAR_ARRIVE},
      {"expect_tx", PTX_OP_MBARRIER, PTX_MBAR_ARRIVE, PTX_MBAR_ARRIVE_EXPECT_TX},
      {"expect_tx", PTX_OP_MBARRIER, PTX_MODE_NONE, PTX_MBAR_EXPECT_TX},
      {"arrive_drop", PTX_OP_MBARRIER, PTX_MODE_NONE, PTX_MBAR_ARRIVE_DROP},
      {"noComplete", PTX_OP_MBARRIER, PTX_MBAR_ARRIVE_DROP, PTX_MBAR_ARRIVE_DROP},
      {"complete_tx", PTX_OP_MBARRIER, PTX_MODE_NONE, PTX_MBAR_COMPLETE_TX},
      {"test_wait", PTX_OP_MBARRIER, PTX_MODE_NONE, PTX_MBAR_TEST_WAIT},
      {"parity", PTX_OP_MBARRIER, PTX_MBAR_TEST_WAIT, PTX_MBAR_TEST_WAIT_PARITY},
      {"try_wait", PTX_OP_MBARRIER, PTX_MODE_NONE, PTX_MBAR_TRY_WAIT},
      {"parity", PTX_OP_MBARRIER, PTX_MBAR_TRY_WAIT, PTX_MBAR_TRY_WAIT_PARITY},
      {"pending_count", PTX_OP_MBARRIER, PTX_MODE_NONE, PTX_MBAR_PENDING_COUNT},
      {"inval", PTX_OP_MBARRIER, PTX_MODE_NONE, PTX_MBAR_INVAL},
  };
  for (size_t i = 0; i < sizeof words / sizeof words[0]; i++)
    if (words[i].op == op && words[i].after == mode && suffix_is(s, len, words[i].name)) return words[i].mode;
  return PTX_MODE_NONE;
}

/*
 * cp.async.* and mbarrier.*: mode the operation, space the first state space named (the
 * destination's; none: generic), type .b64 where given. Ordering semantics, scopes and cache
 * hints change nothing here. A form this does not know leaves mode NONE: valid PTX the executor
 * does not run, refused at launch with the instruction's text.
 */
static void decode_async(struct ptx_instr *in, const char *dot, const char *end) {
  bool known = true, spaced = false;
  uint8_t mode = PTX_MODE_NONE;
  for (size_t i = 0; dot && known; i++) {
    const char *s = dot + 1, *next = memchr(s, '.', (size_t)(end - s));
    size_t len = (size_t)((next ? next : end) - s);
    dot = next;
    if (i == 0 && in->op == PTX_OP_CP) {
      known = suffix_is(s, len, "async");
      continue;
    }
    uint8_t m = async_operation(in->op, mode, s, len);
    if (m != PTX_MODE_NONE) {
      mode = m;
      continue;
    }
    int type = ptx_type_lookup(s, len);
    if (type == PTX_T_B64) {
      in->type = PTX_T_B64;
      continue;
    }
    bool matched = false;
    for (size_t k = 0; k < sizeof modifiers / sizeof modifiers[0] && !matched; k++) {
      const struct modifier *mod = &modifiers[k];
      if (!suffix_is(s, len, mod->name) || !(mod->group & (G_SPACE | G_SEM | G_SCOPE | G_HINT))) continue;
      matched = true;
      if (mod->group == G_SPACE && !spaced) in->space = (uint8_t)mod->value, spaced = true;
    }
    known = matched || is_hint_prefix(s, len);
  }
  in->mode = known ? mode : PTX_MODE_NONE;
}

/* `ld.global.v4.f32` into op and fields; returns the opcode's description. */
static const struct opdesc *decode_mnemonic(struct ptx_parser *p, const struct ptx_tok *t, struct ptx_instr *in) {
  struct decoded d;
  char b[72];
  memset(&d, 0, sizeof d);
  d.mnemonic = t;
  const char *s = t->start, *end = t->start + t->len;
  const char *dot = memchr(s, '.', t->len);
  size_t oplen = dot ? (size_t)(dot - s) : t->len;
  int op = t->kind == PTX_TOK_WORD ? ptx_op_lookup(s, oplen) : -1;
  if (op < 0) ptx_fail(p, t, "unknown instruction \"%s\"", ptx_show(t->start, t->len, b));
  in->op = (uint16_t)op;
  d.desc = &descs[op];
  if (refused_op((unsigned)op)) return d.desc;
  if (op == PTX_OP_CP || op == PTX_OP_MBARRIER) {
    decode_async(in, dot, end);
    return d.desc;
  }
  if (is_matrix_op((unsigned)op)) return decode_matrix(p, t, in);
  while (dot && !d.proxy) {
    const char *next = memchr(dot + 1, '.', (size_t)(end - dot - 1));
    const char *stop = next ? next : end;
    decode_suffix(p, in, &d, dot + 1, (size_t)(stop - dot - 1));
    dot = next;
  }
  finish_mnemonic(p, in, &d);
  return d.desc;
}

/* ---------------------------------------------------------------- operands */

struct sreg_name {
  const char *name;
  uint8_t sreg;
  bool xyz;
};

static const struct sreg_name sregs[] = {
    {"tid", PTX_SREG_TID, true},
    {"ntid", PTX_SREG_NTID, true},
    {"ctaid", PTX_SREG_CTAID, true},
    {"nctaid", PTX_SREG_NCTAID, true},
    {"laneid", PTX_SREG_LANEID, false},
    {"warpid", PTX_SREG_WARPID, false},
    {"nwarpid", PTX_SREG_NWARPID, false},
    {"smid", PTX_SREG_SMID, false},
    {"nsmid", PTX_SREG_NSMID, false},
    {"gridid", PTX_SREG_GRIDID, false},
    {"lanemask_eq", PTX_SREG_LANEMASK_EQ, false},
    {"lanemask_le", PTX_SREG_LANEMASK_LE, false},
    {"lanemask_lt", PTX_SREG_LANEMASK_LT, false},
    {"lanemask_ge", PTX_SREG_LANEMASK_GE, false},
    {"lanemask_gt", PTX_SREG_LANEMASK_GT, false},
    {"clock", PTX_SREG_CLOCK, false},
    {"clock_hi", PTX_SREG_CLOCK_HI, false},
    {"clock64", PTX_SREG_CLOCK64, false},
    {"globaltimer", PTX_SREG_GLOBALTIMER, false},
    {"globaltimer_lo", PTX_SREG_GLOBALTIMER_LO, false},
    {"globaltimer_hi", PTX_SREG_GLOBALTIMER_HI, false},
    {"dynamic_smem_size", PTX_SREG_DYNAMIC_SMEM_SIZE, false},
    {"total_smem_size", PTX_SREG_TOTAL_SMEM_SIZE, false},
    {"clusterid", PTX_SREG_CLUSTERID, true},
    {"nclusterid", PTX_SREG_NCLUSTERID, true},
    {"cluster_ctaid", PTX_SREG_CLUSTER_CTAID, true},
    {"cluster_nctaid", PTX_SREG_CLUSTER_NCTAID, true},
    {"cluster_ctarank", PTX_SREG_CLUSTER_CTARANK, false},
    {"cluster_nctarank", PTX_SREG_CLUSTER_NCTARANK, false},
    {"is_explicit_cluster", PTX_SREG_IS_EXPLICIT_CLUSTER, false},
    {"reserved_smem_offset_begin", PTX_SREG_RESERVED_SMEM_BEGIN, false},
    {"reserved_smem_offset_end", PTX_SREG_RESERVED_SMEM_END, false},
    {"reserved_smem_offset_cap", PTX_SREG_RESERVED_SMEM_CAP, false},
    {"reserved_smem_offset_0", PTX_SREG_RESERVED_SMEM_0, false},
    {"reserved_smem_offset_1", PTX_SREG_RESERVED_SMEM_1, false},
};

/* `%tid.x` and friends; false if t names no special register the simulator knows. */
static bool special_register(struct ptx_parser *p, const struct ptx_tok *t, struct ptx_operand *o) {
  const char *s = t->start + 1;
  const char *dot = memchr(s, '.', t->len - 1);
  size_t len = dot ? (size_t)(dot - s) : t->len - 1;
  char b[72];
  if (!dot && len >= 7 && len <= 8 && memcmp(s, "envreg", 6) == 0 && s[6] >= '0' && s[6] <= '9' &&
      (len == 7 || (s[6] != '0' && s[7] >= '0' && s[7] <= '9'))) { /* %envreg0 .. %envreg31 */
    unsigned n = len == 7 ? (unsigned)(s[6] - '0') : (unsigned)(s[6] - '0') * 10u + (unsigned)(s[7] - '0');
    if (n > 31) return false;
    o->kind = PTX_OPND_SREG;
    o->sreg = PTX_SREG_ENVREG;
    o->comp = (uint8_t)n;
    return true;
  }
  for (size_t i = 0; i < sizeof sregs / sizeof sregs[0]; i++) {
    const struct sreg_name *r = &sregs[i];
    if (strlen(r->name) != len || memcmp(r->name, s, len) != 0) continue;
    o->kind = PTX_OPND_SREG;
    o->sreg = r->sreg;
    if (!r->xyz && !dot) return true;
    if (r->xyz && dot && t->start + t->len - dot == 2 && dot[1] >= 'x' && dot[1] <= 'z') {
      o->comp = (uint8_t)(dot[1] - 'x');
      return true;
    }
    ptx_fail(p, t, r->xyz ? "special register \"%s\" needs .x, .y or .z" : "bad special register \"%s\"",
             ptx_show(t->start, t->len, b));
  }
  return false;
}

static bool starts_with(const struct ptx_tok *t, const char *prefix) {
  size_t n = strlen(prefix);
  return t->len >= n && memcmp(t->start, prefix, n) == 0;
}

static _Noreturn void undefined(struct ptx_parser *p, const struct ptx_tok *t) {
  char b[72];
  const char *shown = ptx_show(t->start, t->len, b);
  if (starts_with(t, "%envreg") || starts_with(t, "%pm") || starts_with(t, "%reserved_smem") ||
      starts_with(t, "%aggr_smem") || starts_with(t, "%current_graph_exec"))
    ptx_fail(p, t, "special register \"%s\" is not supported", shown);
  if (t->start[0] == '%') ptx_fail(p, t, "register \"%s\" is not declared", shown);
  ptx_fail(p, t, "undefined symbol \"%s\"", shown);
}

/* A name at the current token: a special register, register, variable or function. */
static void name_operand(struct ptx_parser *p, struct ptx_operand *o) {
  const struct ptx_tok t = p->tok;
  if (t.kind != PTX_TOK_WORD || t.start[0] == '.') {
    char b[72];
    ptx_fail(p, &t, "expected an operand, found \"%s\"", ptx_show(t.start, t.len, b));
  }
  if (ptx_is_word(&t, "WARP_SZ") && !ptx_lookup(p, t.start, t.len, o)) {
    o->kind = PTX_OPND_IMM; /* PTX's predefined constant: warpSize */
    o->imm_kind = PTX_IMM_INT;
    o->imm = 32;
  } else if (!(t.start[0] == '%' && special_register(p, &t, o)) && !ptx_lookup(p, t.start, t.len, o)) {
    undefined(p, &t);
  }
  ptx_next(p);
}

static uint32_t register_operand(struct ptx_parser *p, const char *what) {
  const struct ptx_tok t = p->tok;
  struct ptx_operand o;
  char b[72];
  memset(&o, 0, sizeof o);
  name_operand(p, &o);
  if (o.kind != PTX_OPND_REG) ptx_fail(p, &t, "%s \"%s\" is not a register", what, ptx_show(t.start, t.len, b));
  return o.index;
}

/* `+8`, `+-8`, `-8` after a base: the sum, wrapping like the address arithmetic it stands for. */
static int64_t offsets(struct ptx_parser *p) {
  uint64_t sum = 0;
  while (ptx_is_punct(&p->tok, '+') || ptx_is_punct(&p->tok, '-')) {
    bool minus = ptx_is_punct(&p->tok, '-');
    ptx_next(p);
    if (ptx_is_punct(&p->tok, '-')) {
      minus = !minus;
      ptx_next(p);
    }
    uint64_t n = ptx_count(p, &p->tok, UINT64_MAX);
    ptx_next(p);
    sum = minus ? sum - n : sum + n;
  }
  return (int64_t)sum;
}

static void parse_address(struct ptx_parser *p, struct ptx_operand *o) {
  ptx_next(p);
  o->kind = PTX_OPND_ADDR;
  const struct ptx_tok t = p->tok;
  char b[72];
  if (t.kind == PTX_TOK_NUM) {
    o->base = PTX_ADDR_NONE;
    o->imm = (int64_t)ptx_count(p, &t, UINT64_MAX);
    ptx_next(p);
  } else {
    struct ptx_operand base;
    memset(&base, 0, sizeof base);
    name_operand(p, &base);
    if (base.kind != PTX_OPND_REG && base.kind != PTX_OPND_SYM)
      ptx_fail(p, &t, "\"%s\" cannot be the base of an address", ptx_show(t.start, t.len, b));
    o->base = base.kind == PTX_OPND_REG ? PTX_ADDR_REG : PTX_ADDR_SYM;
    o->scope = base.scope;
    o->index = base.index;
  }
  o->imm = (int64_t)((uint64_t)o->imm + (uint64_t)offsets(p));
  ptx_expect(p, ']', "at the end of an address");
}

/* An immediate at the current token, after an optional '-'. */
static void immediate(struct ptx_parser *p, uint8_t *kind, int64_t *bits) {
  bool negative = ptx_is_punct(&p->tok, '-');
  if (negative) ptx_next(p);
  if (p->tok.kind != PTX_TOK_NUM) {
    char b[72];
    ptx_fail(p, NULL, "expected a number, found \"%s\"", ptx_show(p->tok.start, p->tok.len, b));
  }
  ptx_number(p, &p->tok, negative, kind, bits);
  ptx_next(p);
}

static void parse_vector(struct ptx_parser *p, struct ptx_operand *o) {
  o->kind = PTX_OPND_VEC;
  ptx_next(p);
  for (;;) {
    if (o->count == PTX_MAX_VEC) ptx_fail(p, NULL, "a vector operand has at most %d elements", PTX_MAX_VEC);
    struct ptx_elem *e = &o->elems[o->count++];
    if (ptx_is_word(&p->tok, "_")) {
      e->kind = PTX_OPND_SINK;
      ptx_next(p);
    } else if (p->tok.kind == PTX_TOK_NUM || ptx_is_punct(&p->tok, '-')) {
      e->kind = PTX_OPND_IMM;
      immediate(p, &e->imm_kind, &e->imm);
    } else {
      e->kind = PTX_OPND_REG;
      e->reg = register_operand(p, "vector element");
    }
    if (!ptx_is_punct(&p->tok, ',')) break;
    ptx_next(p);
  }
  ptx_expect(p, '}', "at the end of a vector operand");
}

static void parse_operand(struct ptx_parser *p, struct ptx_operand *o, unsigned index, bool label) {
  const struct ptx_tok t = p->tok;
  memset(o, 0, sizeof *o);
  if (label && t.kind == PTX_TOK_WORD && t.start[0] != '%' && t.start[0] != '.') {
    o->kind = PTX_OPND_LABEL;
    ptx_label_ref(p, &t, index);
    ptx_next(p);
  } else if (ptx_is_punct(&t, '[')) {
    parse_address(p, o);
  } else if (ptx_is_punct(&t, '{')) {
    parse_vector(p, o);
  } else if (ptx_is_punct(&t, '!')) {
    ptx_next(p);
    o->kind = PTX_OPND_REG;
    o->negate = 1;
    o->index = register_operand(p, "negated operand");
  } else if (t.kind == PTX_TOK_NUM || ptx_is_punct(&t, '-')) {
    o->kind = PTX_OPND_IMM;
    immediate(p, &o->imm_kind, &o->imm);
  } else if (ptx_is_word(&t, "_")) {
    o->kind = PTX_OPND_SINK;
    ptx_next(p);
  } else {
    name_operand(p, o);
    if (o->kind == PTX_OPND_SYM) o->imm = offsets(p);
  }
}

/* ---------------------------------------------------------------- call */

/* `(a, b)` of a call: .param variables, registers or immediates, copied into the arena. */
static struct ptx_operand *call_list(struct ptx_parser *p, uint8_t *count) {
  size_t n = 0;
  ptx_next(p);
  while (!ptx_is_punct(&p->tok, ')')) {
    if (n == UINT8_MAX) ptx_fail(p, NULL, "too many call arguments");
    ptx_grow(p, (void **)&p->list, &p->cap_list, n + 1, sizeof *p->list);
    struct ptx_operand *o = &p->list[n++];
    memset(o, 0, sizeof *o);
    if (p->tok.kind == PTX_TOK_NUM || ptx_is_punct(&p->tok, '-')) {
      o->kind = PTX_OPND_IMM;
      immediate(p, &o->imm_kind, &o->imm);
    } else {
      const struct ptx_tok t = p->tok;
      char b[72];
      name_operand(p, o);
      if (o->kind != PTX_OPND_SYM && o->kind != PTX_OPND_REG)
        ptx_fail(p, &t, "call argument \"%s\" is not a .param variable or a register", ptx_show(t.start, t.len, b));
    }
    if (!ptx_is_punct(&p->tok, ',')) break;
    ptx_next(p);
  }
  ptx_expect(p, ')', "at the end of a call's list");
  *count = (uint8_t)n;
  if (n == 0) return NULL;
  struct ptx_operand *list = ptx_alloc(p, n, sizeof *list);
  memcpy(list, p->list, n * sizeof *list);
  return list;
}

/* `call (rets), target, (args)[, prototype]`, either list optional. */
static void parse_call(struct ptx_parser *p, struct ptx_instr *in) {
  char b[72];
  if (ptx_is_punct(&p->tok, '(')) {
    in->call_rets = call_list(p, &in->num_call_rets);
    ptx_expect(p, ',', "after a call's return list");
  }
  const struct ptx_tok target = p->tok;
  if (target.kind != PTX_TOK_WORD) ptx_fail(p, NULL, "expected the called function");
  if (!ptx_lookup(p, target.start, target.len, &in->opnd[0]) ||
      (in->opnd[0].kind != PTX_OPND_FUNC && in->opnd[0].kind != PTX_OPND_REG))
    ptx_fail(p, &target, "undefined function \"%s\"", ptx_show(target.start, target.len, b));
  in->num_operands = 1;
  ptx_next(p);
  if (ptx_is_punct(&p->tok, ',')) {
    ptx_next(p);
    if (ptx_is_punct(&p->tok, '(')) {
      in->call_args = call_list(p, &in->num_call_args);
      if (ptx_is_punct(&p->tok, ',')) ptx_next(p);
    }
    if (p->tok.kind == PTX_TOK_WORD) ptx_next(p); /* the prototype or target list of an indirect call */
  }
  if (in->opnd[0].kind == PTX_OPND_FUNC) {
    const struct ptx_func *f = &p->funcs[in->opnd[0].index];
    if (f->num_params != in->num_call_args || f->num_rets != in->num_call_rets)
      ptx_fail(p, &target, "\"%s\" takes %zu parameters and %zu results, the call passes %u and %u", f->name,
               f->num_params, f->num_rets, in->num_call_args, in->num_call_rets);
  }
}

/* ---------------------------------------------------------------- operand lists */

/* Operands of an opcode the executor refuses: skipped, brackets and braces balanced. */
static void skip_operands(struct ptx_parser *p) {
  size_t depth = 0;
  while (depth > 0 || !ptx_is_punct(&p->tok, ';')) {
    if (p->tok.kind == PTX_TOK_EOF) ptx_fail(p, NULL, "expected ';' after instruction");
    if (ptx_is_punct(&p->tok, '{') || ptx_is_punct(&p->tok, '[') || ptx_is_punct(&p->tok, '(')) depth++;
    if ((ptx_is_punct(&p->tok, '}') || ptx_is_punct(&p->tok, ']') || ptx_is_punct(&p->tok, ')')) && depth > 0) depth--;
    ptx_next(p);
  }
}

static void parse_operands(struct ptx_parser *p, struct ptx_instr *in, const struct opdesc *d,
                           const struct ptx_tok *mnemonic) {
  char b[72];
  if (ptx_is_punct(&p->tok, ';')) return;
  for (;;) {
    if (in->num_operands == PTX_MAX_OPERANDS)
      ptx_fail(p, NULL, "too many operands for \"%s\"", ptx_show(mnemonic->start, mnemonic->len, b));
    unsigned n = in->num_operands++;
    parse_operand(p, &in->opnd[n], n, d->shape == S_BRA);
    if (n == 0 && ptx_is_punct(&p->tok, '|')) {
      if (!d->pair) ptx_fail(p, NULL, "\"%s\" has no second destination", ptx_show(mnemonic->start, mnemonic->len, b));
      ptx_next(p);
      in->dest2 = (int32_t)register_operand(p, "second destination");
    }
    if (!ptx_is_punct(&p->tok, ',')) return;
    ptx_next(p);
  }
}

static bool is_dest(const struct ptx_operand *o) {
  return o->kind == PTX_OPND_REG || o->kind == PTX_OPND_VEC || o->kind == PTX_OPND_SINK;
}

/* Number and kinds of operands, against the opcode's shape. */
static void check_shape(struct ptx_parser *p, const struct ptx_instr *in, const struct opdesc *d,
                        const struct ptx_tok *mnemonic) {
  char b[72];
  const char *m = ptx_show(mnemonic->start, mnemonic->len, b);
  unsigned n = in->num_operands;
  if (d->shape == S_CALL || d->shape == S_SKIP || unknown_async_form(in)) return;
  if (n < d->min || n > d->max) {
    if (d->min == d->max) ptx_fail(p, mnemonic, "\"%s\" takes %u operands, not %u", m, d->min, n);
    ptx_fail(p, mnemonic, "\"%s\" takes %u to %u operands, not %u", m, d->min, d->max, n);
  }
  if (d->shape == S_ANY) return;
  int addr = d->shape == S_LD || d->shape == S_ATOM ? 1 : d->shape == S_ST || d->shape == S_ADDR0 ? 0 : -1;
  for (unsigned i = 0; i < n; i++) {
    bool is_addr = in->opnd[i].kind == PTX_OPND_ADDR;
    if ((int)i == addr && !is_addr) ptx_fail(p, mnemonic, "operand %u of \"%s\" must be an address", i + 1, m);
    if ((int)i != addr && is_addr) ptx_fail(p, mnemonic, "operand %u of \"%s\" cannot be an address", i + 1, m);
  }
  bool dest_first = d->shape == S_VALUES || d->shape == S_LD || d->shape == S_ATOM;
  if (dest_first && n > 0 && !is_dest(&in->opnd[0]))
    ptx_fail(p, mnemonic, "the first operand of \"%s\" must be a register", m);
}

/* ---------------------------------------------------------------- the instruction */

static void parse_guard(struct ptx_parser *p, struct ptx_instr *in) {
  ptx_next(p);
  if (ptx_is_punct(&p->tok, '!')) {
    in->guard_neg = 1;
    ptx_next(p);
  }
  const struct ptx_tok t = p->tok;
  uint32_t reg = register_operand(p, "guard");
  char b[72];
  if (p->regs[reg].type != PTX_T_PRED)
    ptx_fail(p, &t, "guard \"%s\" is not a predicate register", ptx_show(t.start, t.len, b));
  in->guard = (int32_t)reg;
}

/* The text as written, squeezed, into the arena. */
static const char *instr_text(struct ptx_parser *p, const char *from, const char *to) {
  char *text = ptx_alloc(p, (size_t)(to - from) + 1, 1);
  ptx_lex_squeeze(from, to, text);
  return text;
}

void ptx_parse_instr(struct ptx_parser *p) {
  struct ptx_instr in;
  memset(&in, 0, sizeof in);
  const struct ptx_tok first = p->tok;
  in.guard = -1;
  in.dest2 = -1;
  in.line = first.line;
  in.column = first.column;
  in.loc_file = p->loc_file;
  in.loc_line = p->loc_line;
  in.loc_inlined_file = p->loc_inlined_file;
  in.loc_inlined_line = p->loc_inlined_line;
  if (ptx_is_punct(&first, '@')) parse_guard(p, &in);
  const struct ptx_tok mnemonic = p->tok;
  if (mnemonic.kind != PTX_TOK_WORD || mnemonic.start[0] == '%' || mnemonic.start[0] == '.') {
    char b[72];
    ptx_fail(p, NULL, "expected an instruction, found \"%s\"", ptx_show(mnemonic.start, mnemonic.len, b));
  }
  const struct opdesc *d = decode_mnemonic(p, &mnemonic, &in);
  ptx_next(p);
  if (in.vec == 0) in.vec = 1;
  if (refused_op(in.op) || unknown_async_form(&in)) skip_operands(p);
  else if (d->shape == S_CALL) parse_call(p, &in);
  else parse_operands(p, &in, d, &mnemonic);
  if (!ptx_is_punct(&p->tok, ';')) ptx_fail(p, NULL, "expected ';' after instruction");
  check_shape(p, &in, d, &mnemonic);
  in.text = instr_text(p, first.start, p->tok.start);
  ptx_push_instr(p, &in);
  ptx_next(p);
}
