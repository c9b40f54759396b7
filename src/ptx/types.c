/* Names and sizes of PTX types and opcodes. */
#include <string.h>

#include "parse_internal.h"
#include "ptx.h"

static const struct {
  const char *name;
  unsigned char size;
} types[] = {
    [PTX_T_NONE] = {"none", 0},     [PTX_T_PRED] = {"pred", 1},     [PTX_T_B8] = {"b8", 1},
    [PTX_T_B16] = {"b16", 2},       [PTX_T_B32] = {"b32", 4},       [PTX_T_B64] = {"b64", 8},
    [PTX_T_B128] = {"b128", 16},    [PTX_T_U8] = {"u8", 1},         [PTX_T_U16] = {"u16", 2},
    [PTX_T_U32] = {"u32", 4},       [PTX_T_U64] = {"u64", 8},       [PTX_T_S8] = {"s8", 1},
    [PTX_T_S16] = {"s16", 2},       [PTX_T_S32] = {"s32", 4},       [PTX_T_S64] = {"s64", 8},
    [PTX_T_F16] = {"f16", 2},       [PTX_T_F16X2] = {"f16x2", 4},   [PTX_T_BF16] = {"bf16", 2},
    [PTX_T_BF16X2] = {"bf16x2", 4}, [PTX_T_F32] = {"f32", 4},       [PTX_T_F64] = {"f64", 8},
    [PTX_T_TF32] = {"tf32", 4},     [PTX_T_E4M3X2] = {"e4m3x2", 2}, [PTX_T_E5M2X2] = {"e5m2x2", 2},
};
#define NUM_TYPES (sizeof types / sizeof types[0])

unsigned ptx_type_size(enum ptx_type t) { return (unsigned)t < NUM_TYPES ? types[t].size : 0; }

bool ptx_type_is_signed(enum ptx_type t) { return t >= PTX_T_S8 && t <= PTX_T_S64; }

bool ptx_type_is_float(enum ptx_type t) { return t >= PTX_T_F16 && t <= PTX_T_F64; }

const char *ptx_type_name(enum ptx_type t) { return (unsigned)t < NUM_TYPES ? types[t].name : "none"; }

int ptx_type_lookup(const char *name, size_t len) {
  for (size_t t = PTX_T_PRED; t < NUM_TYPES; t++)
    if (strlen(types[t].name) == len && memcmp(types[t].name, name, len) == 0) return (int)t;
  return -1;
}

static const char *const op_names[PTX_OP_COUNT] = {
#define PTX_OP_NAME_(name, text) text,
    PTX_OP_MAP(PTX_OP_NAME_)
#undef PTX_OP_NAME_
};

const char *ptx_op_name(enum ptx_op op) { return (unsigned)op < PTX_OP_COUNT ? op_names[op] : "?"; }

int ptx_op_lookup(const char *name, size_t len) {
  for (size_t op = 0; op < PTX_OP_COUNT; op++)
    if (strlen(op_names[op]) == len && memcmp(op_names[op], name, len) == 0) return (int)op;
  return -1;
}
