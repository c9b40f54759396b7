/*
 * What parse.c (directives, declarations, bodies) and instr.c (one instruction) share. A failure
 * anywhere longjmps back to ptx_parse, which frees the temporaries and the module: nothing
 * below has to unwind by hand.
 */
#ifndef GCAP_PTX_PARSE_INTERNAL_H
#define GCAP_PTX_PARSE_INTERNAL_H

#include <setjmp.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lex.h"
#include "ptx.h"

/* The largest variable, parameter or array, and the most that a function's frame (parameters,
 * results, .local and .param variables), its .shared or the module's .shared may take. */
#define PTX_MAX_BYTES ((uint64_t)1 << 30)
#define PTX_MAX_PARAM_BYTES 32764u             /* CUDA's limit on a kernel's parameters */
#define PTX_MAX_REGS ((size_t)1 << 20)         /* registers of one function */
#define PTX_MAX_MODULE_REGS ((size_t)1 << 22)  /* of all functions: `%r<N>` costs memory, not text */
#define PTX_MAX_INIT_BYTES ((uint64_t)1 << 30) /* initialisers of all variables together */
#define PTX_MAX_FILE 65535u                    /* the largest `.file` number */
#define PTX_MAX_DEPTH 200                      /* nested blocks and initialiser braces */

#if defined(__GNUC__)
#define PTX_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define PTX_PRINTF(f, a)
#endif

int ptx_type_lookup(const char *name, size_t len); /* enum ptx_type, or -1 */
int ptx_op_lookup(const char *name, size_t len);   /* enum ptx_op, or -1 */

/* A name declared in the body being parsed; block says which nested block declared it. */
enum ptx_local_kind { PTX_LOCAL_REG, PTX_LOCAL_REGS, PTX_LOCAL_VAR, PTX_LOCAL_PARAM, PTX_LOCAL_RET };
struct ptx_local {
  const char *name; /* REGS: the prefix, "%r" of `%r<29>` */
  size_t len;
  uint8_t kind;
  uint32_t block;        /* PARAM, RET: UINT32_MAX, outside every block */
  uint32_t first, count; /* REG, REGS: registers first.. first+count-1; VAR: index in the body's vars;
                            PARAM, RET: index in the function's params or rets */
  uint32_t prev;         /* the local of the same name (or prefix) this one shadows; UINT32_MAX: none */
};

/* A branch to a label not resolved yet: labels are resolved when the function ends. */
struct ptx_label_ref {
  size_t instr;
  unsigned opnd;
  const char *name;
  size_t len;
  uint32_t block, line, column;
};

struct ptx_name_slot {
  const char *name; /* NULL: empty */
  size_t len;
  uint32_t tag, value;
};

struct ptx_parser {
  struct ptx_lexer lx;
  struct ptx_tok tok; /* the current token */
  struct ptx_module *m;
  struct ptx_error *err;
  enum ptx_parse_mode mode;
  jmp_buf fail;
  /* module scope, copied into the arena when the text ends */
  struct ptx_var *vars;
  size_t num_vars, cap_vars;
  struct ptx_func *funcs;
  size_t num_funcs, cap_funcs;
  const char **files;
  size_t num_files, cap_files;
  /* module names (tag 0), labels (tag 1 + the block that defines them) and the body's locals
   * (two tags above those, see lookup_local in parse.c) */
  struct ptx_name_slot *names;
  size_t names_cap, names_used;
  /* a function's declaration and body */
  struct ptx_var *params, *rets;
  size_t num_params, cap_params, num_rets, cap_rets;
  size_t fn; /* index in funcs of the function whose body is parsed */
  struct ptx_instr *instrs;
  size_t num_instrs, cap_instrs;
  struct ptx_reg *regs;
  size_t num_regs, cap_regs, module_regs;
  struct ptx_var *body_vars;
  size_t num_body_vars, cap_body_vars;
  struct ptx_local *locals;
  size_t num_locals, cap_locals;
  struct ptx_label_ref *refs;
  size_t num_refs, cap_refs;
  uint64_t module_shared_end, shared_end, frame_end; /* layouts so far (see place_var in parse.c) */
  uint32_t *block_parent;                            /* every block of the module, by id */
  size_t num_blocks, cap_blocks;
  uint32_t block, depth;
  uint32_t loc_file, loc_line;
  uint32_t loc_inlined_file, loc_inlined_line; /* the .loc's `inlined_at`, 0: none */
  /* scratch: initialisers, call lists */
  unsigned char *init;
  size_t cap_init;
  uint64_t init_bytes; /* of every initialiser so far */
  struct ptx_reloc *relocs;
  size_t num_relocs, cap_relocs;
  struct ptx_operand *list;
  size_t cap_list;
};

_Noreturn void ptx_fail(struct ptx_parser *p, const struct ptx_tok *at, const char *fmt, ...) PTX_PRINTF(3, 4);
_Noreturn void ptx_oom(struct ptx_parser *p);
/* Writes len bytes of s for a message into buf (72 bytes): at most 64, unprintable ones as '?'. */
const char *ptx_show(const char *s, size_t len, char *buf);

void ptx_next(struct ptx_parser *p);
struct ptx_tok ptx_peek(const struct ptx_parser *p);
bool ptx_is_punct(const struct ptx_tok *t, char c);
bool ptx_is_word(const struct ptx_tok *t, const char *word);
/* Fails with "expected 'c' <context>" unless the current token is c; moves past it. */
void ptx_expect(struct ptx_parser *p, char c, const char *context);

void *ptx_alloc(struct ptx_parser *p, size_t count, size_t elem); /* from the module's arena */
void ptx_grow(struct ptx_parser *p, void **array, size_t *cap, size_t need, size_t elem);

/* A number token: its kind (enum ptx_imm_kind) and bits; negative for a preceding '-'. */
void ptx_number(struct ptx_parser *p, const struct ptx_tok *t, bool negative, uint8_t *kind, int64_t *bits);
/* An integer token no larger than max. */
uint64_t ptx_count(struct ptx_parser *p, const struct ptx_tok *t, uint64_t max);

/* Resolves a name in the body being parsed (locals, then parameters, then the module). */
bool ptx_lookup(struct ptx_parser *p, const char *name, size_t len, struct ptx_operand *o);
/* Operand opnd of the next instruction names the label t. */
void ptx_label_ref(struct ptx_parser *p, const struct ptx_tok *t, unsigned opnd);
void ptx_push_instr(struct ptx_parser *p, const struct ptx_instr *in);

/* instr.c: the instruction at the current token (a guard or a mnemonic), up to its ';'. */
void ptx_parse_instr(struct ptx_parser *p);

#endif
