/*
 * The PTX front end's statements: module directives, variable and function declarations, and
 * bodies (registers, local variables, labels, nested blocks); instr.c decodes the instructions.
 * Arrays that grow while parsing live in gcap__realloc'd temporaries and are copied into the
 * module's arena once final; every failure, an allocation's included, longjmps to ptx_parse.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "parse_internal.h"

#define FUNC_BIT 0x80000000u /* a module name's value: a function's index, not a variable's */
#define NO_BLOCK UINT32_MAX

/* ---------------------------------------------------------------- errors, tokens, memory */

void ptx_fail(struct ptx_parser *p, const struct ptx_tok *at, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(p->err->message, sizeof p->err->message, fmt, ap);
  va_end(ap);
  p->err->line = at ? at->line : p->tok.line;
  p->err->column = at ? at->column : p->tok.column;
  longjmp(p->fail, 1);
}

void ptx_oom(struct ptx_parser *p) { ptx_fail(p, NULL, "out of memory"); }

const char *ptx_show(const char *s, size_t len, char *buf) {
  size_t n = len > 64 ? 61 : len, i;
  for (i = 0; i < n; i++) buf[i] = s[i] >= 0x20 && s[i] < 0x7f ? s[i] : '?';
  if (n < len) buf[i++] = '.', buf[i++] = '.', buf[i++] = '.';
  buf[i] = '\0';
  return buf;
}

/* The current token, for "unexpected ..." messages. */
static const char *show_tok(const struct ptx_tok *t, char *buf) {
  if (t->kind == PTX_TOK_EOF) return "the end of the text";
  if (t->kind == PTX_TOK_STR) return "a string";
  buf[0] = '"';
  ptx_show(t->start, t->len, buf + 1);
  size_t n = strlen(buf);
  buf[n] = '"';
  buf[n + 1] = '\0';
  return buf;
}

static _Noreturn void unexpected(struct ptx_parser *p, const char *context) {
  char b[72];
  ptx_fail(p, NULL, "unexpected %s %s", show_tok(&p->tok, b), context);
}

void ptx_next(struct ptx_parser *p) {
  p->tok = ptx_lex_next(&p->lx);
  if (p->tok.kind == PTX_TOK_ERROR) ptx_fail(p, &p->tok, "%s", p->tok.error);
}

struct ptx_tok ptx_peek(const struct ptx_parser *p) {
  struct ptx_lexer copy = p->lx;
  return ptx_lex_next(&copy);
}

bool ptx_is_punct(const struct ptx_tok *t, char c) { return t->kind == PTX_TOK_PUNCT && t->start[0] == c; }

bool ptx_is_word(const struct ptx_tok *t, const char *word) {
  size_t n = strlen(word);
  return t->kind == PTX_TOK_WORD && t->len == n && memcmp(t->start, word, n) == 0;
}

static bool is_directive(const struct ptx_tok *t) { return t->kind == PTX_TOK_WORD && t->start[0] == '.'; }

/* A name: a word that is neither a directive nor a special register's %. */
static bool is_name(const struct ptx_tok *t) { return t->kind == PTX_TOK_WORD && t->start[0] != '.'; }

void ptx_expect(struct ptx_parser *p, char c, const char *context) {
  if (!ptx_is_punct(&p->tok, c)) {
    char b[72];
    ptx_fail(p, NULL, "expected '%c' %s, found %s", c, context, show_tok(&p->tok, b));
  }
  ptx_next(p);
}

static void expect_name(struct ptx_parser *p, const char *what) {
  if (!is_name(&p->tok)) {
    char b[72];
    ptx_fail(p, NULL, "expected %s, found %s", what, show_tok(&p->tok, b));
  }
}

void *ptx_alloc(struct ptx_parser *p, size_t count, size_t elem) {
  if (elem && count > SIZE_MAX / elem) ptx_oom(p);
  size_t bytes = count * elem;
  void *q = gcap__arena_alloc(&p->m->arena, bytes ? bytes : 1);
  if (!q) ptx_oom(p);
  return q;
}

void ptx_grow(struct ptx_parser *p, void **array, size_t *cap, size_t need, size_t elem) {
  if (gcap__grow(array, cap, need, elem) != 0) ptx_oom(p);
}

#define GROW(p, arr, cap, need) ptx_grow((p), (void **)&(arr), &(cap), (need), sizeof *(arr))

static char *copy_name(struct ptx_parser *p, const char *s, size_t len) {
  char *name = ptx_alloc(p, len + 1, 1);
  memcpy(name, s, len);
  name[len] = '\0';
  return name;
}

/* An array of the arena holding n elements of a temporary, or NULL for none. */
static void *freeze(struct ptx_parser *p, const void *src, size_t n, size_t elem) {
  if (n == 0) return NULL;
  void *dst = ptx_alloc(p, n, elem);
  memcpy(dst, src, n * elem);
  return dst;
}

/* ---------------------------------------------------------------- numbers */

static int digit_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return 99;
}

/* Hex digits of s[0..n) into *bits; false if any is not one. */
static bool hex_bits(const char *s, size_t n, uint64_t *bits) {
  uint64_t v = 0;
  for (size_t i = 0; i < n; i++) {
    int d = digit_value(s[i]);
    if (d > 15) return false;
    v = v << 4 | (uint64_t)d;
  }
  *bits = v;
  return true;
}

static bool parse_integer(const char *s, size_t n, uint64_t *out) {
  if (n > 0 && (s[n - 1] == 'U' || s[n - 1] == 'u')) n--;
  unsigned base = 10;
  if (n >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) base = 16, s += 2, n -= 2;
  else if (n >= 2 && s[0] == '0' && (s[1] == 'b' || s[1] == 'B')) base = 2, s += 2, n -= 2;
  else if (n >= 2 && s[0] == '0') base = 8, s++, n--;
  if (n == 0) return false;
  uint64_t v = 0;
  for (size_t i = 0; i < n; i++) {
    int d = digit_value(s[i]);
    if ((unsigned)d >= base || v > (UINT64_MAX - (uint64_t)d) / base) return false;
    v = v * base + (uint64_t)d;
  }
  *out = v;
  return true;
}

static bool is_decimal_float(const char *s, size_t n) {
  if (n >= 2 && s[0] == '0' && strchr("xXbB", s[1])) return false;
  for (size_t i = 0; i < n; i++)
    if (s[i] == '.' || s[i] == 'e' || s[i] == 'E') return true;
  return false;
}

void ptx_number(struct ptx_parser *p, const struct ptx_tok *t, bool negative, uint8_t *kind, int64_t *bits) {
  const char *s = t->start;
  size_t n = t->len;
  char b[72];
  uint64_t v = 0;
  if (n >= 2 && s[0] == '0' && (s[1] == 'f' || s[1] == 'F' || s[1] == 'd' || s[1] == 'D')) {
    size_t digits = s[1] == 'f' || s[1] == 'F' ? 8 : 16;
    if (n != digits + 2 || !hex_bits(s + 2, digits, &v) || negative)
      ptx_fail(p, t, "bad floating-point literal \"%s\"", ptx_show(s, n, b));
    *kind = digits == 8 ? PTX_IMM_F32BITS : PTX_IMM_F64BITS;
    *bits = (int64_t)v;
    return;
  }
  if (is_decimal_float(s, n)) {
    char text[64];
    char *end = NULL;
    if (n >= sizeof text) ptx_fail(p, t, "bad number \"%s\"", ptx_show(s, n, b));
    memcpy(text, s, n);
    text[n] = '\0';
    double d = strtod(text, &end);
    if (end != text + n) ptx_fail(p, t, "bad number \"%s\"", ptx_show(s, n, b));
    if (negative) d = -d;
    *kind = PTX_IMM_DOUBLE;
    memcpy(bits, &d, sizeof d);
    return;
  }
  if (!parse_integer(s, n, &v)) ptx_fail(p, t, "bad or out-of-range integer \"%s\"", ptx_show(s, n, b));
  *kind = PTX_IMM_INT;
  *bits = (int64_t)(negative ? 0 - v : v);
}

uint64_t ptx_count(struct ptx_parser *p, const struct ptx_tok *t, uint64_t max) {
  uint64_t v = 0;
  char b[72];
  if (t->kind != PTX_TOK_NUM) ptx_fail(p, t, "expected a number, found %s", show_tok(t, b));
  if (!parse_integer(t->start, t->len, &v) || v > max)
    ptx_fail(p, t, "bad or out-of-range number \"%s\"", ptx_show(t->start, t->len, b));
  return v;
}

/* The integer at the current token, moved past. */
static uint64_t take_count(struct ptx_parser *p, uint64_t max) {
  uint64_t v = ptx_count(p, &p->tok, max);
  ptx_next(p);
  return v;
}

/* ---------------------------------------------------------------- names */

static uint32_t hash_name(const char *s, size_t len, uint32_t tag) {
  uint32_t h = 2166136261u ^ tag;
  for (size_t i = 0; i < len; i++) h = (h ^ (unsigned char)s[i]) * 16777619u;
  return h;
}

static struct ptx_name_slot *name_slot(struct ptx_parser *p, const char *s, size_t len, uint32_t tag) {
  size_t mask = p->names_cap - 1;
  for (size_t i = hash_name(s, len, tag) & mask;; i = (i + 1) & mask) {
    struct ptx_name_slot *e = &p->names[i];
    if (!e->name || (e->tag == tag && e->len == len && memcmp(e->name, s, len) == 0)) return e;
  }
}

static bool name_find(struct ptx_parser *p, const char *s, size_t len, uint32_t tag, uint32_t *value) {
  if (p->names_cap == 0) return false;
  struct ptx_name_slot *e = name_slot(p, s, len, tag);
  if (e->name) *value = e->value;
  return e->name != NULL;
}

static void name_rehash(struct ptx_parser *p) {
  size_t old_cap = p->names_cap, cap = old_cap ? old_cap * 2 : 64;
  struct ptx_name_slot *old = p->names;
  if (cap > SIZE_MAX / sizeof *old) ptx_oom(p);
  p->names = gcap__calloc(cap, sizeof *old);
  if (!p->names) {
    p->names = old; /* still freed by the cleanup */
    ptx_oom(p);
  }
  p->names_cap = cap;
  for (size_t i = 0; i < old_cap; i++)
    if (old[i].name) *name_slot(p, old[i].name, old[i].len, old[i].tag) = old[i];
  gcap__free(old);
}

/* The name must be new; s must live as long as the parse. */
static void name_add(struct ptx_parser *p, const char *s, size_t len, uint32_t tag, uint32_t value) {
  if ((p->names_used + 1) * 2 > p->names_cap) name_rehash(p);
  struct ptx_name_slot *e = name_slot(p, s, len, tag);
  e->name = s;
  e->len = len;
  e->tag = tag;
  e->value = value;
  p->names_used++;
}

/*
 * Names declared in the body being parsed (its registers and variables, and the function's
 * parameters and results) are found through the same table, under two tags of their own: a name
 * maps to the newest local that declares it, each local to the one it shadows (prev), and a
 * block's end puts back what its declarations shadowed. `%r<29>` is entered by its prefix.
 */
#define TAG_LOCAL (UINT32_MAX - 1) /* above every label's tag (open_block bounds the blocks) */
#define TAG_RANGE UINT32_MAX
#define NO_LOCAL UINT32_MAX

static uint32_t local_tag(const struct ptx_local *l) { return l->kind == PTX_LOCAL_REGS ? TAG_RANGE : TAG_LOCAL; }

/* The newest local declaring s under tag, or NO_LOCAL. */
static uint32_t newest_local(struct ptx_parser *p, const char *s, size_t len, uint32_t tag) {
  uint32_t v = NO_LOCAL;
  return name_find(p, s, len, tag, &v) ? v : NO_LOCAL;
}

/* Makes local i the one its name finds; s must live as long as the parse. */
static void name_set_local(struct ptx_parser *p, const char *s, size_t len, uint32_t tag, uint32_t i) {
  if (p->names_cap) {
    struct ptx_name_slot *e = name_slot(p, s, len, tag);
    if (e->name) {
      e->value = i;
      return;
    }
  }
  name_add(p, s, len, tag, i);
}

/* `%r12` against the range `%r<count>`: digits after the prefix, no leading zero, below count. */
static bool in_range(const struct ptx_local *l, const char *s, size_t len, uint32_t *n) {
  if (len <= l->len || len - l->len > 10 || memcmp(s, l->name, l->len) != 0) return false;
  const char *d = s + l->len;
  size_t digits = len - l->len;
  if (digits > 1 && d[0] == '0') return false;
  uint64_t v = 0;
  for (size_t i = 0; i < digits; i++) {
    if (d[i] < '0' || d[i] > '9') return false;
    v = v * 10 + (uint64_t)(d[i] - '0');
  }
  if (v >= l->count) return false;
  *n = (uint32_t)v;
  return true;
}

/* The newest local that s names, as the newest-first scan of every local in scope would find it:
 * a register or variable of that name, or a range whose prefix and number s is. */
static bool lookup_local(struct ptx_parser *p, const char *s, size_t len, struct ptx_operand *o) {
  uint32_t best = newest_local(p, s, len, TAG_LOCAL), n = 0;
  for (size_t digits = 1; digits <= 10 && digits < len && s[len - digits] >= '0' && s[len - digits] <= '9'; digits++) {
    for (uint32_t i = newest_local(p, s, len - digits, TAG_RANGE); i != NO_LOCAL; i = p->locals[i].prev) {
      uint32_t k = 0;
      if (best != NO_LOCAL && i < best) break;
      if (in_range(&p->locals[i], s, len, &k)) {
        best = i, n = k;
        break;
      }
    }
  }
  if (best == NO_LOCAL) return false;
  const struct ptx_local *l = &p->locals[best];
  static const uint8_t scopes[] = {[PTX_LOCAL_REG] = PTX_SCOPE_BODY,
                                   [PTX_LOCAL_REGS] = PTX_SCOPE_BODY,
                                   [PTX_LOCAL_VAR] = PTX_SCOPE_BODY,
                                   [PTX_LOCAL_PARAM] = PTX_SCOPE_PARAM,
                                   [PTX_LOCAL_RET] = PTX_SCOPE_RET};
  o->kind = l->kind == PTX_LOCAL_REG || l->kind == PTX_LOCAL_REGS ? PTX_OPND_REG : PTX_OPND_SYM;
  o->scope = scopes[l->kind];
  o->index = l->first + (l->kind == PTX_LOCAL_REGS ? n : 0);
  return true;
}

static bool lookup_module(struct ptx_parser *p, const char *s, size_t len, struct ptx_operand *o) {
  uint32_t v = 0;
  if (!name_find(p, s, len, 0, &v)) return false;
  o->kind = v & FUNC_BIT ? PTX_OPND_FUNC : PTX_OPND_SYM;
  o->scope = PTX_SCOPE_MODULE;
  o->index = v & ~FUNC_BIT;
  return true;
}

bool ptx_lookup(struct ptx_parser *p, const char *s, size_t len, struct ptx_operand *o) {
  return lookup_local(p, s, len, o) || lookup_module(p, s, len, o);
}

/* A second declaration of a name in the same block is an error; inner blocks may shadow. */
static void check_new_local(struct ptx_parser *p, const struct ptx_tok *t, bool range) {
  uint32_t i = newest_local(p, t->start, t->len, range ? TAG_RANGE : TAG_LOCAL);
  if (i != NO_LOCAL && p->locals[i].block == p->block) {
    char b[72];
    ptx_fail(p, t, "\"%s\" is already declared", ptx_show(t->start, t->len, b));
  }
}

static void push_local(struct ptx_parser *p, const char *s, size_t len, uint8_t kind, uint32_t block, uint32_t first,
                       uint32_t count) {
  if (p->num_locals >= NO_LOCAL - 1)
    ptx_fail(p, NULL, "too many declarations in function \"%s\"", p->funcs[p->fn].name);
  GROW(p, p->locals, p->cap_locals, p->num_locals + 1);
  struct ptx_local *l = &p->locals[p->num_locals];
  l->name = s;
  l->len = len;
  l->kind = kind;
  l->block = block;
  l->first = first;
  l->count = count;
  l->prev = newest_local(p, s, len, local_tag(l));
  name_set_local(p, s, len, local_tag(l), (uint32_t)p->num_locals);
  p->num_locals++;
}

static void add_local(struct ptx_parser *p, const struct ptx_tok *t, uint8_t kind, uint32_t first, uint32_t count) {
  push_local(p, t->start, t->len, kind, p->block, first, count);
}

/* The locals from `keep` on go out of scope: their names find what they shadowed. */
static void pop_locals(struct ptx_parser *p, size_t keep) {
  while (p->num_locals > keep) {
    const struct ptx_local *l = &p->locals[--p->num_locals];
    name_slot(p, l->name, l->len, local_tag(l))->value = l->prev;
  }
}

/* The function's results, then its parameters (a parameter wins over a result of its name),
 * under every block of the body. */
static void push_params(struct ptx_parser *p, const struct ptx_func *f) {
  for (size_t i = 0; i < f->num_rets; i++)
    push_local(p, f->rets[i].name, strlen(f->rets[i].name), PTX_LOCAL_RET, NO_BLOCK, (uint32_t)i, 1);
  for (size_t i = 0; i < f->num_params; i++)
    push_local(p, f->params[i].name, strlen(f->params[i].name), PTX_LOCAL_PARAM, NO_BLOCK, (uint32_t)i, 1);
}

/* ---------------------------------------------------------------- labels */

void ptx_label_ref(struct ptx_parser *p, const struct ptx_tok *t, unsigned opnd) {
  GROW(p, p->refs, p->cap_refs, p->num_refs + 1);
  struct ptx_label_ref *r = &p->refs[p->num_refs++];
  r->instr = p->num_instrs;
  r->opnd = opnd;
  r->name = t->start;
  r->len = t->len;
  r->block = p->block;
  r->line = t->line;
  r->column = t->column;
}

static void define_label(struct ptx_parser *p, const struct ptx_tok *t) {
  uint32_t v = 0;
  char b[72];
  if (name_find(p, t->start, t->len, 1 + p->block, &v))
    ptx_fail(p, t, "label \"%s\" is defined twice", ptx_show(t->start, t->len, b));
  if (p->num_instrs >= UINT32_MAX) ptx_fail(p, t, "too many instructions");
  name_add(p, t->start, t->len, 1 + p->block, (uint32_t)p->num_instrs);
}

/* A reference sees labels of its own block and of every block around it. */
static void resolve_labels(struct ptx_parser *p) {
  for (size_t i = 0; i < p->num_refs; i++) {
    const struct ptx_label_ref *r = &p->refs[i];
    uint32_t v = 0, b = r->block;
    while (b != NO_BLOCK && !name_find(p, r->name, r->len, 1 + b, &v)) b = p->block_parent[b];
    if (b == NO_BLOCK) {
      struct ptx_tok at = {PTX_TOK_WORD, r->name, r->len, r->line, r->column, NULL};
      char s[72];
      ptx_fail(p, &at, "undefined label \"%s\"", ptx_show(r->name, r->len, s));
    }
    p->instrs[r->instr].opnd[r->opnd].index = v;
  }
}

void ptx_push_instr(struct ptx_parser *p, const struct ptx_instr *in) {
  GROW(p, p->instrs, p->cap_instrs, p->num_instrs + 1);
  p->instrs[p->num_instrs++] = *in;
}

/* ---------------------------------------------------------------- skipping */

/* From a '{' past its matching '}'; strings and comments are the lexer's business. */
static void skip_braces(struct ptx_parser *p, const char *what) {
  struct ptx_tok open = p->tok;
  size_t depth = 0;
  do {
    if (p->tok.kind == PTX_TOK_EOF) ptx_fail(p, &open, "no '}' closes this %s", what);
    if (ptx_is_punct(&p->tok, '{')) depth++;
    if (ptx_is_punct(&p->tok, '}')) depth--;
    ptx_next(p);
  } while (depth > 0);
}

/* Up to and past the next ';' (`.callprototype` and `.branchtargets` lines). */
static void skip_statement(struct ptx_parser *p) {
  while (!ptx_is_punct(&p->tok, ';')) {
    if (p->tok.kind == PTX_TOK_EOF) ptx_fail(p, NULL, "expected ';' at the end of the statement");
    ptx_next(p);
  }
  ptx_next(p);
}

/* ---------------------------------------------------------------- module directives */

static void parse_version(struct ptx_parser *p) {
  ptx_next(p);
  const struct ptx_tok t = p->tok;
  const char *dot = t.kind == PTX_TOK_NUM ? memchr(t.start, '.', t.len) : NULL;
  uint64_t major = 0, minor = 0;
  char b[72];
  if (!dot || !parse_integer(t.start, (size_t)(dot - t.start), &major) ||
      !parse_integer(dot + 1, t.len - (size_t)(dot - t.start) - 1, &minor) || major > 1000 || minor > 1000 ||
      (dot - t.start > 1 && t.start[0] == '0') || (t.len - (size_t)(dot - t.start) > 2 && dot[1] == '0'))
    ptx_fail(p, &t, "bad .version %s", show_tok(&t, b));
  p->m->version_major = (unsigned)major;
  p->m->version_minor = (unsigned)minor;
  ptx_next(p);
}

static void parse_target(struct ptx_parser *p) {
  for (;;) {
    ptx_next(p);
    const struct ptx_tok t = p->tok;
    char b[72];
    if (t.kind == PTX_TOK_WORD && t.len > 3 && memcmp(t.start, "sm_", 3) == 0) {
      size_t digits = 3;
      while (digits < t.len && t.start[digits] >= '0' && t.start[digits] <= '9') digits++;
      uint64_t sm = 0;
      bool suffix_ok = digits == t.len || (digits + 1 == t.len && (t.start[digits] == 'a' || t.start[digits] == 'f'));
      if (!suffix_ok || !parse_integer(t.start + 3, digits - 3, &sm) || sm > 10000)
        ptx_fail(p, &t, "unknown target \"%s\"", ptx_show(t.start, t.len, b));
      p->m->target_sm = (unsigned)sm;
    } else if (!ptx_is_word(&t, "debug") && !ptx_is_word(&t, "texmode_unified") &&
               !ptx_is_word(&t, "texmode_independent") && !ptx_is_word(&t, "map_f64_to_f32")) {
      ptx_fail(p, &t, "unknown target %s", show_tok(&t, b));
    }
    ptx_next(p);
    if (!ptx_is_punct(&p->tok, ',')) return;
  }
}

static void parse_address_size(struct ptx_parser *p) {
  ptx_next(p);
  const struct ptx_tok t = p->tok;
  uint64_t bits = ptx_count(p, &t, 64);
  if (bits == 32) ptx_fail(p, &t, "32-bit PTX (.address_size 32) is not supported");
  if (bits != 64) ptx_fail(p, &t, "bad .address_size %u", (unsigned)bits);
  p->m->address_size = 64;
  ptx_next(p);
}

/* A string token without its quotes, \" and \\ unescaped, in the arena. */
static char *string_value(struct ptx_parser *p, const struct ptx_tok *t) {
  char *s = ptx_alloc(p, t->len, 1);
  size_t n = 0;
  for (size_t i = 1; i + 1 < t->len; i++) {
    if (t->start[i] == '\\' && i + 2 < t->len) i++;
    s[n++] = t->start[i];
  }
  s[n] = '\0';
  return s;
}

/* `.file N "name"` with an optional `, timestamp, size`. */
static void parse_file(struct ptx_parser *p) {
  ptx_next(p);
  const struct ptx_tok num = p->tok;
  size_t n = (size_t)ptx_count(p, &num, PTX_MAX_FILE);
  ptx_next(p);
  if (p->tok.kind != PTX_TOK_STR) unexpected(p, "in .file (expected the file's name)");
  char *name = string_value(p, &p->tok);
  ptx_next(p);
  for (int extra = 0; extra < 2 && ptx_is_punct(&p->tok, ','); extra++) {
    ptx_next(p);
    take_count(p, UINT64_MAX);
  }
  if (n >= p->num_files) {
    GROW(p, p->files, p->cap_files, n + 1);
    memset(p->files + p->num_files, 0, (n + 1 - p->num_files) * sizeof *p->files);
    p->num_files = n + 1;
  }
  p->files[n] = name;
}

/* `.loc file line column`, perhaps followed by `, function_name L, inlined_at f l c` on its line. */
static void parse_loc(struct ptx_parser *p) {
  uint32_t line = p->tok.line;
  ptx_next(p);
  uint32_t file = (uint32_t)take_count(p, UINT32_MAX);
  uint32_t at = (uint32_t)take_count(p, UINT32_MAX);
  take_count(p, UINT32_MAX);
  uint32_t inl_file = 0, inl_line = 0;
  if (ptx_is_punct(&p->tok, ','))
    while (p->tok.kind != PTX_TOK_EOF && p->tok.line == line) {
      bool inlined = p->tok.kind == PTX_TOK_WORD && p->tok.len == 10 && memcmp(p->tok.start, "inlined_at", 10) == 0;
      ptx_next(p);
      if (inlined && p->tok.kind == PTX_TOK_NUM && p->tok.line == line) {
        inl_file = (uint32_t)take_count(p, UINT32_MAX);
        if (p->tok.kind == PTX_TOK_NUM && p->tok.line == line) inl_line = (uint32_t)take_count(p, UINT32_MAX);
      }
    }
  p->loc_file = file;
  p->loc_line = at;
  p->loc_inlined_file = inl_file;
  p->loc_inlined_line = inl_line;
}

static void parse_pragma(struct ptx_parser *p) {
  do {
    ptx_next(p);
    if (p->tok.kind != PTX_TOK_STR) unexpected(p, "in .pragma (expected a string)");
    ptx_next(p);
  } while (ptx_is_punct(&p->tok, ','));
  ptx_expect(p, ';', "after .pragma");
}

static void parse_section(struct ptx_parser *p) {
  ptx_next(p);
  if (p->tok.kind != PTX_TOK_WORD) unexpected(p, "after .section (expected its name)");
  ptx_next(p);
  if (!ptx_is_punct(&p->tok, '{')) unexpected(p, "after the .section name");
  skip_braces(p, ".section");
}

/* ---------------------------------------------------------------- layouts */

/*
 * Where a list of variables ends when each is placed after the one before at its alignment, as
 * the executor places them; PTX_LAYOUT_OVER once past limit (every size and alignment is far
 * below it, so nothing here can wrap). *end carries the running offset across calls.
 */
#define PTX_LAYOUT_OVER UINT64_MAX

static void lay_out(const struct ptx_var *vars, size_t n, bool shared, uint64_t limit, uint64_t *end) {
  for (size_t i = 0; i < n && *end != PTX_LAYOUT_OVER; i++) {
    const struct ptx_var *v = &vars[i];
    if ((v->space == PTX_SPACE_SHARED) != shared) continue;
    uint64_t align = v->align ? v->align : 1, at = (*end + align - 1) / align * align + v->size;
    *end = at > limit ? PTX_LAYOUT_OVER : at;
  }
}

/* A kernel's parameters within CUDA's limit; a function's parameters, results and body variables
 * (its frame, and its .shared) within PTX_MAX_BYTES, so that no offset into them can wrap. */
static void check_params(struct ptx_parser *p, const struct ptx_func *f, const struct ptx_tok *at) {
  uint64_t end = 0;
  if (f->is_entry) {
    lay_out(f->params, f->num_params, false, UINT64_MAX - 1, &end);
    if (end > PTX_MAX_PARAM_BYTES)
      ptx_fail(p, at, "kernel \"%s\" has %llu bytes of parameters, more than CUDA's limit of %u", f->name,
               (unsigned long long)end, PTX_MAX_PARAM_BYTES);
    p->frame_end = 0; /* the parameter buffer is not the frame */
    return;
  }
  lay_out(f->params, f->num_params, false, PTX_MAX_BYTES, &end);
  lay_out(f->rets, f->num_rets, false, PTX_MAX_BYTES, &end);
  if (end == PTX_LAYOUT_OVER)
    ptx_fail(p, at, "the parameters and results of function \"%s\" take more than %llu bytes", f->name,
             (unsigned long long)PTX_MAX_BYTES);
  p->frame_end = end;
}

/* A variable declared in a body (in_module false) or at module scope joins its layout. */
static void place_var(struct ptx_parser *p, const struct ptx_var *v, const struct ptx_tok *at, bool in_module) {
  bool shared = v->space == PTX_SPACE_SHARED;
  if (in_module && !shared) return;
  uint64_t *end = in_module ? &p->module_shared_end : shared ? &p->shared_end : &p->frame_end;
  lay_out(v, 1, shared, PTX_MAX_BYTES, end);
  if (*end != PTX_LAYOUT_OVER) return;
  if (in_module)
    ptx_fail(p, at, "the module's .shared variables take more than %llu bytes", (unsigned long long)PTX_MAX_BYTES);
  if (shared)
    ptx_fail(p, at, "the .shared variables of function \"%s\" take more than %llu bytes", p->funcs[p->fn].name,
             (unsigned long long)PTX_MAX_BYTES);
  ptx_fail(p, at, "the parameters and .local and .param variables of function \"%s\" take more than %llu bytes",
           p->funcs[p->fn].name, (unsigned long long)PTX_MAX_BYTES);
}

/* ---------------------------------------------------------------- variables */

struct var_decl {
  uint8_t space;
  uint8_t type;
  unsigned vec;
  unsigned align; /* 0: not given */
  bool is_extern, is_visible, is_param, is_managed;
};

static int space_of(const struct ptx_tok *t) {
  static const struct {
    const char *name;
    uint8_t space;
  } spaces[] = {
      {".global", PTX_SPACE_GLOBAL}, {".const", PTX_SPACE_CONST}, {".shared", PTX_SPACE_SHARED},
      {".local", PTX_SPACE_LOCAL},   {".param", PTX_SPACE_PARAM},
  };
  for (size_t i = 0; i < sizeof spaces / sizeof spaces[0]; i++)
    if (ptx_is_word(t, spaces[i].name)) return spaces[i].space;
  return -1;
}

static int type_of(const struct ptx_tok *t) { return is_directive(t) ? ptx_type_lookup(t->start + 1, t->len - 1) : -1; }

static unsigned take_align(struct ptx_parser *p) {
  ptx_next(p);
  const struct ptx_tok t = p->tok;
  uint64_t a = ptx_count(p, &t, 1u << 16);
  if (a == 0 || (a & (a - 1)) != 0) ptx_fail(p, &t, "bad alignment %u", (unsigned)a);
  ptx_next(p);
  return (unsigned)a;
}

/* `.attribute(...)`: `.managed` (for .global variables only, as ptxas has it) is kept; the others,
 * such as `.unified(uuid1, uuid2)`, are skipped with their nested parentheses. */
static void parse_attribute(struct ptx_parser *p, struct var_decl *d) {
  ptx_next(p);
  if (!ptx_is_punct(&p->tok, '(')) unexpected(p, "after .attribute");
  size_t depth = 0;
  do {
    if (p->tok.kind == PTX_TOK_EOF) unexpected(p, "in .attribute");
    if (ptx_is_punct(&p->tok, '(')) depth++;
    if (ptx_is_punct(&p->tok, ')')) depth--;
    if (depth == 1 && ptx_is_word(&p->tok, ".managed")) {
      if (d->space != PTX_SPACE_GLOBAL) ptx_fail(p, &p->tok, ".attribute(.managed) is only for .global variables");
      d->is_managed = true;
    }
    ptx_next(p);
  } while (depth > 0);
}

/* The directives between the state space and the name: alignment, vector width, the type,
 * `.attribute(...)`, and after a kernel parameter's type its pointer attributes. */
static void parse_var_attributes(struct ptx_parser *p, struct var_decl *d) {
  bool pointer = false, typed = false;
  char b[72];
  while (is_directive(&p->tok)) {
    const struct ptx_tok t = p->tok;
    int type = type_of(&t);
    if (ptx_is_word(&t, ".align")) {
      unsigned a = take_align(p);
      if (!pointer) d->align = a; /* after .ptr it is the pointee's alignment */
      continue;
    }
    if (ptx_is_word(&t, ".attribute")) {
      parse_attribute(p, d);
      continue;
    }
    if ((ptx_is_word(&t, ".v2") || ptx_is_word(&t, ".v4")) && !typed) {
      d->vec = (unsigned)(t.start[2] - '0');
    } else if (ptx_is_word(&t, ".ptr") && d->is_param && typed) {
      pointer = true;
    } else if (pointer && space_of(&t) >= 0) {
      /* the pointee's state space */
    } else if (ptx_is_word(&t, ".texref") || ptx_is_word(&t, ".samplerref") || ptx_is_word(&t, ".surfref")) {
      ptx_fail(p, &t, "texture, sampler and surface references are not supported");
    } else if (type >= 0 && !typed) {
      d->type = (uint8_t)type;
      typed = true;
    } else {
      ptx_fail(p, &t, "unexpected \"%s\" in a declaration", ptx_show(t.start, t.len, b));
    }
    ptx_next(p);
  }
  if (!typed) ptx_fail(p, NULL, "expected a type in a declaration, found %s", show_tok(&p->tok, b));
}

/* `[N]` dimensions: the element count (0 and *unsized for `[]`). */
static uint64_t parse_dims(struct ptx_parser *p, bool *unsized) {
  uint64_t count = 1;
  bool first = true;
  *unsized = false;
  while (ptx_is_punct(&p->tok, '[')) {
    ptx_next(p);
    if (ptx_is_punct(&p->tok, ']') && first) {
      *unsized = true;
    } else {
      uint64_t n = take_count(p, UINT64_MAX);
      count = n == 0 || count <= PTX_MAX_BYTES / n ? count * n : PTX_MAX_BYTES + 1; /* too large, said later */
    }
    ptx_expect(p, ']', "after an array size");
    first = false;
  }
  return count;
}

struct init {
  struct ptx_var *var;
  const struct ptx_tok *name;
  size_t elem;      /* bytes of one scalar element */
  size_t max_elems; /* SIZE_MAX: an unsized array */
  size_t count;     /* elements written */
};

/* Room for element e, zeroed up to it. */
static unsigned char *init_slot(struct ptx_parser *p, struct init *st, const struct ptx_tok *at) {
  char b[72];
  if (st->count >= st->max_elems || (st->count + 1) * st->elem > PTX_MAX_BYTES)
    ptx_fail(p, at, "too many initialisers for \"%s\"", ptx_show(st->name->start, st->name->len, b));
  size_t end = (st->count + 1) * st->elem, old = st->count * st->elem;
  GROW(p, p->init, p->cap_init, end);
  memset(p->init + old, 0, end - old);
  return p->init + old;
}

/* v's bytes little-endian; past its 8 bytes (a .b128), the sign of a negative literal or zeros. */
static void store_le(unsigned char *at, uint64_t v, size_t bytes, bool negative) {
  for (size_t i = 0; i < bytes; i++) at[i] = i < 8 ? (unsigned char)(v >> (8 * i)) : negative ? 0xff : 0;
}

static float as_float(uint8_t kind, uint64_t bits) {
  uint32_t w = (uint32_t)bits;
  float f = 0;
  double d = 0;
  memcpy(&f, &w, sizeof f);
  memcpy(&d, &bits, sizeof d);
  return kind == PTX_IMM_F32BITS ? f : kind == PTX_IMM_INT ? (float)(int64_t)bits : (float)d;
}

static double as_double(uint8_t kind, uint64_t bits) {
  uint32_t w = (uint32_t)bits;
  float f = 0;
  double d = 0;
  memcpy(&f, &w, sizeof f);
  memcpy(&d, &bits, sizeof d);
  return kind == PTX_IMM_F32BITS ? (double)f : kind == PTX_IMM_INT ? (double)(int64_t)bits : d;
}

/* A literal converts to a float element's value; other elements take its bits. */
static void init_number(struct ptx_parser *p, struct init *st, const struct ptx_tok *t, bool negative) {
  uint8_t kind = 0;
  int64_t bits = 0;
  ptx_number(p, t, negative, &kind, &bits);
  unsigned char *at = init_slot(p, st, t);
  uint64_t u = (uint64_t)bits;
  if (st->var->type == PTX_T_F32) {
    float f = as_float(kind, u);
    uint32_t w = 0;
    memcpy(&w, &f, sizeof w);
    u = w;
  } else if (st->var->type == PTX_T_F64) {
    double d = as_double(kind, u);
    memcpy(&u, &d, sizeof u);
  } else if (kind == PTX_IMM_DOUBLE) {
    ptx_fail(p, t, "a decimal fraction cannot initialise a .%s", ptx_type_name(st->var->type));
  }
  store_le(at, u, st->elem, negative && kind == PTX_IMM_INT && (int64_t)u < 0);
  st->count++;
}

/* `name`, `generic(name)`, either with `+N`: the variable's address, patched in at load. */
static void init_address(struct ptx_parser *p, struct init *st) {
  const struct ptx_tok at = p->tok;
  bool generic = ptx_is_word(&at, "generic");
  char b[72];
  if (generic) {
    ptx_next(p);
    ptx_expect(p, '(', "after generic");
    expect_name(p, "a variable's name");
  }
  const struct ptx_tok name = p->tok;
  uint32_t v = 0;
  if (!name_find(p, name.start, name.len, 0, &v))
    ptx_fail(p, &name, "undefined symbol \"%s\"", ptx_show(name.start, name.len, b));
  ptx_next(p);
  if (generic) ptx_expect(p, ')', "after generic(name");
  uint64_t addend = 0;
  while (ptx_is_punct(&p->tok, '+') || ptx_is_punct(&p->tok, '-')) {
    bool minus = ptx_is_punct(&p->tok, '-');
    ptx_next(p);
    uint64_t n = take_count(p, UINT64_MAX);
    addend = minus ? addend - n : addend + n;
  }
  if (st->elem != 8) ptx_fail(p, &at, "an address can only initialise a 64-bit variable");
  init_slot(p, st, &at);
  if (v & FUNC_BIT) {
    /* Function addresses have no place in the module; a full parse refuses them, a list of
     * declarations leaves the word zero. */
    if (p->mode == PTX_PARSE_FULL)
      ptx_fail(p, &name, "the address of function \"%s\" in an initialiser is not supported",
               ptx_show(name.start, name.len, b));
  } else {
    GROW(p, p->relocs, p->cap_relocs, p->num_relocs + 1);
    struct ptx_reloc *r = &p->relocs[p->num_relocs++];
    r->offset = st->count * st->elem;
    r->var = v;
    r->addend = (int64_t)addend;
    r->generic = generic;
  }
  st->count++;
}

static void init_values(struct ptx_parser *p, struct init *st, unsigned depth) {
  if (depth > PTX_MAX_DEPTH) ptx_fail(p, NULL, "initialiser braces nested too deeply");
  if (ptx_is_punct(&p->tok, '{')) {
    ptx_next(p);
    if (!ptx_is_punct(&p->tok, '}'))
      for (;;) {
        init_values(p, st, depth + 1);
        if (!ptx_is_punct(&p->tok, ',')) break;
        ptx_next(p);
      }
    ptx_expect(p, '}', "at the end of an initialiser list");
    return;
  }
  const struct ptx_tok t = p->tok;
  if (ptx_is_punct(&t, '-')) {
    ptx_next(p);
    const struct ptx_tok num = p->tok;
    if (num.kind != PTX_TOK_NUM) unexpected(p, "after '-' in an initialiser");
    init_number(p, st, &num, true);
    ptx_next(p);
  } else if (t.kind == PTX_TOK_NUM) {
    init_number(p, st, &t, false);
    ptx_next(p);
  } else if (is_name(&t)) {
    init_address(p, st);
  } else {
    unexpected(p, "in an initialiser");
  }
}

static void parse_init(struct ptx_parser *p, struct ptx_var *v, const struct ptx_tok *name, uint64_t elems,
                       bool unsized) {
  struct init st = {v, name, ptx_type_size(v->type), unsized ? SIZE_MAX : (size_t)elems, 0};
  p->num_relocs = 0;
  ptx_next(p);
  init_values(p, &st, 0);
  size_t written = st.count * st.elem;
  if (unsized) v->size = written;
  if (v->size > PTX_MAX_INIT_BYTES - p->init_bytes) ptx_fail(p, name, "the initialisers of the module exceed 1 GiB");
  p->init_bytes += v->size;
  unsigned char *bytes = ptx_alloc(p, v->size, 1);
  memset(bytes, 0, v->size);
  if (written) memcpy(bytes, p->init, written);
  v->init = bytes;
  v->relocs = freeze(p, p->relocs, p->num_relocs, sizeof *p->relocs);
  v->num_relocs = p->num_relocs;
}

/* One name of a declaration, its dimensions and initialiser: the variable, not yet placed. */
static struct ptx_var parse_one_var(struct ptx_parser *p, const struct var_decl *d, struct ptx_tok *name) {
  struct ptx_var v;
  char b[72];
  memset(&v, 0, sizeof v);
  expect_name(p, "a variable's name");
  *name = p->tok;
  v.name = copy_name(p, name->start, name->len);
  v.space = d->space;
  v.type = d->type;
  v.is_extern = d->is_extern;
  v.is_visible = d->is_visible;
  v.is_managed = d->is_managed;
  v.line = name->line;
  if (d->type == PTX_T_PRED) ptx_fail(p, name, "a variable cannot be a .pred");
  ptx_next(p);
  bool unsized = false;
  uint64_t elems = parse_dims(p, &unsized) * d->vec;
  unsigned elem = ptx_type_size(d->type);
  if (elems > PTX_MAX_BYTES / elem) ptx_fail(p, name, "\"%s\" is too large", ptx_show(name->start, name->len, b));
  v.size = (size_t)(elems * elem);
  v.align = d->align ? d->align : elem * d->vec;
  if (unsized) v.size = 0;
  if (ptx_is_punct(&p->tok, '=')) {
    if (d->is_param || d->is_extern) ptx_fail(p, NULL, "\"%s\" cannot have an initialiser", v.name);
    parse_init(p, &v, name, elems, unsized);
  } else if (unsized && !d->is_extern && !d->is_param) {
    ptx_fail(p, name, "array \"%s\" needs a size", v.name);
  }
  return v;
}

/* An `.extern` declaration and the definition of the same .global or .const variable, in either
 * order (as in the units of an -rdc program linked into one module), are one variable; so are two
 * `.extern` declarations of one name in one space. Returns whether v merged into the old one. */
static bool merge_module_var(struct ptx_parser *p, uint32_t old, const struct ptx_var *v, const struct ptx_tok *name) {
  if (old & FUNC_BIT) return false;
  struct ptx_var *o = &p->vars[old];
  if (o->space != v->space || (!o->is_extern && !v->is_extern)) return false;
  if (o->is_extern && v->is_extern) {
    o->is_managed = o->is_managed || v->is_managed;
    return true;
  }
  if (v->space != PTX_SPACE_GLOBAL && v->space != PTX_SPACE_CONST) return false;
  const struct ptx_var *decl = o->is_extern ? o : v, *def = o->is_extern ? v : o;
  if (decl->type != def->type || (decl->size && decl->size != def->size))
    ptx_fail(p, name, "the declaration and the definition of \"%s\" do not match", v->name);
  bool managed = o->is_managed || v->is_managed; /* ptxas takes the attribute from either */
  if (o->is_extern) {
    const char *kept = o->name;
    *o = *v;
    o->name = kept;
  }
  o->is_managed = managed;
  return true;
}

static void add_module_var(struct ptx_parser *p, const struct ptx_var *v, const struct ptx_tok *name) {
  uint32_t old = 0;
  if (name_find(p, name->start, name->len, 0, &old)) {
    if (merge_module_var(p, old, v, name)) return;
    ptx_fail(p, name, "\"%s\" is already declared", v->name);
  }
  if (p->num_vars >= FUNC_BIT - 1) ptx_fail(p, name, "too many variables");
  place_var(p, v, name, true);
  GROW(p, p->vars, p->cap_vars, p->num_vars + 1);
  p->vars[p->num_vars] = *v;
  name_add(p, v->name, name->len, 0, (uint32_t)p->num_vars++);
}

static void add_body_var(struct ptx_parser *p, const struct ptx_var *v, const struct ptx_tok *name) {
  check_new_local(p, name, false);
  if (p->num_body_vars >= UINT32_MAX) ptx_fail(p, name, "too many variables");
  place_var(p, v, name, false);
  GROW(p, p->body_vars, p->cap_body_vars, p->num_body_vars + 1);
  p->body_vars[p->num_body_vars] = *v;
  add_local(p, name, PTX_LOCAL_VAR, (uint32_t)p->num_body_vars++, 1);
}

/* `.global .align 4 .b8 a[16] = {...}, b;` at module scope or in a body. */
static void parse_vars(struct ptx_parser *p, struct var_decl *d, bool body) {
  d->space = (uint8_t)space_of(&p->tok);
  d->vec = 1;
  d->is_param = false;
  ptx_next(p);
  parse_var_attributes(p, d);
  for (;;) {
    struct ptx_tok name;
    struct ptx_var v = parse_one_var(p, d, &name);
    if (body) add_body_var(p, &v, &name);
    else add_module_var(p, &v, &name);
    if (!ptx_is_punct(&p->tok, ',')) break;
    ptx_next(p);
  }
  ptx_expect(p, ';', "after a declaration");
}

/* ---------------------------------------------------------------- registers */

static size_t decimal_digits(uint64_t n) {
  size_t d = 1;
  while (n >= 10) n /= 10, d++;
  return d;
}

/* `%r<29>`: %r0 .. %r28, their names carved from one piece of the arena. */
static void count_regs(struct ptx_parser *p, const struct ptx_tok *at, uint64_t count) {
  if (count > PTX_MAX_REGS - p->num_regs || count > PTX_MAX_MODULE_REGS - p->module_regs)
    ptx_fail(p, at, "too many registers");
  p->module_regs += (size_t)count;
}

static void add_reg_range(struct ptx_parser *p, const struct ptx_tok *prefix, uint8_t type, uint64_t count) {
  count_regs(p, prefix, count);
  check_new_local(p, prefix, true);
  size_t bytes = 0;
  for (uint64_t i = 0; i < count; i++) bytes += prefix->len + decimal_digits(i) + 1;
  char *names = ptx_alloc(p, bytes, 1);
  GROW(p, p->regs, p->cap_regs, p->num_regs + (size_t)count);
  add_local(p, prefix, PTX_LOCAL_REGS, (uint32_t)p->num_regs, (uint32_t)count);
  for (uint64_t i = 0; i < count; i++) {
    size_t n = prefix->len + decimal_digits(i) + 1;
    memcpy(names, prefix->start, prefix->len);
    snprintf(names + prefix->len, n - prefix->len, "%llu", (unsigned long long)i);
    p->regs[p->num_regs].name = names;
    p->regs[p->num_regs++].type = type;
    names += n;
  }
}

static void add_reg(struct ptx_parser *p, const struct ptx_tok *name, uint8_t type) {
  count_regs(p, name, 1);
  check_new_local(p, name, false);
  GROW(p, p->regs, p->cap_regs, p->num_regs + 1);
  add_local(p, name, PTX_LOCAL_REG, (uint32_t)p->num_regs, 1);
  p->regs[p->num_regs].name = copy_name(p, name->start, name->len);
  p->regs[p->num_regs++].type = type;
}

/* `.reg.b32` with no space between (as CUDA's half-precision header writes it) is `.reg .b32`. */
static bool is_fused_reg(const struct ptx_tok *t) { return t->len > 5 && memcmp(t->start, ".reg.", 5) == 0; }

static void parse_regs(struct ptx_parser *p) {
  int type = -1;
  if (is_fused_reg(&p->tok)) {
    type = ptx_type_lookup(p->tok.start + 5, p->tok.len - 5);
    if (type < 0) unexpected(p, "in .reg (expected a type)");
  } else {
    ptx_next(p);
    if (ptx_is_word(&p->tok, ".v2") || ptx_is_word(&p->tok, ".v4") || ptx_is_word(&p->tok, ".v8"))
      ptx_fail(p, NULL, "vector registers are not supported");
    type = type_of(&p->tok);
    if (type < 0) unexpected(p, "in .reg (expected a type)");
  }
  ptx_next(p);
  for (;;) {
    expect_name(p, "a register name");
    const struct ptx_tok name = p->tok;
    ptx_next(p);
    if (ptx_is_punct(&p->tok, '<')) {
      ptx_next(p);
      uint64_t count = take_count(p, PTX_MAX_REGS);
      ptx_expect(p, '>', "after a register count");
      add_reg_range(p, &name, (uint8_t)type, count);
    } else {
      add_reg(p, &name, (uint8_t)type);
    }
    if (!ptx_is_punct(&p->tok, ',')) break;
    ptx_next(p);
  }
  ptx_expect(p, ';', "after .reg");
}

/* ---------------------------------------------------------------- bodies */

static uint32_t open_block(struct ptx_parser *p, const struct ptx_tok *at) {
  if (p->depth >= PTX_MAX_DEPTH) ptx_fail(p, at, "blocks nested too deeply");
  if (p->num_blocks >= UINT32_MAX - 2) ptx_fail(p, at, "too many blocks");
  GROW(p, p->block_parent, p->cap_blocks, p->num_blocks + 1);
  p->block_parent[p->num_blocks] = p->depth ? p->block : NO_BLOCK;
  p->depth++;
  return p->block = (uint32_t)p->num_blocks++;
}

static void parse_block(struct ptx_parser *p);

/* A name followed by ':' — a label, or the name of a call prototype or branch-target list. */
static void parse_label(struct ptx_parser *p) {
  const struct ptx_tok name = p->tok;
  ptx_next(p);
  ptx_next(p); /* the ':' */
  if (ptx_is_word(&p->tok, ".callprototype") || ptx_is_word(&p->tok, ".branchtargets") ||
      ptx_is_word(&p->tok, ".calltargets")) {
    skip_statement(p);
    return;
  }
  define_label(p, &name);
}

static void parse_body_directive(struct ptx_parser *p) {
  const struct ptx_tok t = p->tok;
  char b[72];
  if (ptx_is_word(&t, ".reg") || is_fused_reg(&t)) {
    parse_regs(p);
  } else if (space_of(&t) >= 0) {
    struct var_decl d;
    memset(&d, 0, sizeof d);
    parse_vars(p, &d, true);
  } else if (ptx_is_word(&t, ".pragma")) {
    parse_pragma(p);
  } else if (ptx_is_word(&t, ".loc")) {
    parse_loc(p);
  } else {
    ptx_fail(p, &t, "unknown directive \"%s\" in a function body", ptx_show(t.start, t.len, b));
  }
}

static void parse_statement(struct ptx_parser *p) {
  const struct ptx_tok t = p->tok;
  if (ptx_is_punct(&t, '{')) {
    parse_block(p);
  } else if (is_directive(&t)) {
    parse_body_directive(p);
  } else if (ptx_is_punct(&t, '@')) {
    ptx_parse_instr(p);
  } else if (t.kind == PTX_TOK_WORD) {
    struct ptx_tok after = ptx_peek(p);
    if (ptx_is_punct(&after, ':')) parse_label(p);
    else ptx_parse_instr(p);
  } else if (t.kind == PTX_TOK_EOF) {
    ptx_fail(p, NULL, "expected '}' at the end of function \"%s\"", p->funcs[p->fn].name);
  } else {
    unexpected(p, "in a function body");
  }
}

/* From '{' past its '}': the block's names go out of scope at its end. */
static void parse_block(struct ptx_parser *p) {
  uint32_t outer = p->block;
  size_t locals = p->num_locals;
  open_block(p, &p->tok);
  ptx_next(p);
  while (!ptx_is_punct(&p->tok, '}')) parse_statement(p);
  pop_locals(p, locals);
  p->block = outer;
  p->depth--;
  ptx_next(p);
}

static void parse_body(struct ptx_parser *p, size_t fn) {
  p->fn = fn;
  p->num_instrs = p->num_regs = p->num_body_vars = p->num_locals = p->num_refs = 0;
  p->shared_end = 0; /* frame_end: after the parameters, from check_params */
  p->loc_file = p->loc_line = 0;
  p->loc_inlined_file = p->loc_inlined_line = 0;
  p->depth = 0;
  push_params(p, &p->funcs[fn]);
  parse_block(p);
  pop_locals(p, 0);
  resolve_labels(p);
  struct ptx_func *f = &p->funcs[fn];
  f->instrs = freeze(p, p->instrs, p->num_instrs, sizeof *p->instrs);
  f->num_instrs = p->num_instrs;
  f->regs = freeze(p, p->regs, p->num_regs, sizeof *p->regs);
  f->num_regs = p->num_regs;
  f->vars = freeze(p, p->body_vars, p->num_body_vars, sizeof *p->body_vars);
  f->num_vars = p->num_body_vars;
}

/* ---------------------------------------------------------------- functions */

static struct ptx_var parse_param(struct ptx_parser *p, bool ret) {
  struct var_decl d;
  struct ptx_tok name;
  memset(&d, 0, sizeof d);
  if (ptx_is_word(&p->tok, ".reg")) ptx_fail(p, NULL, "register parameters (.reg) are not supported");
  if (!ptx_is_word(&p->tok, ".param"))
    unexpected(p, ret ? "in a return list (expected .param)" : "in a parameter list (expected .param)");
  d.space = PTX_SPACE_PARAM;
  d.vec = 1;
  d.is_param = true;
  ptx_next(p);
  parse_var_attributes(p, &d);
  return parse_one_var(p, &d, &name);
}

/* `( .param ..., .param ... )` into p->params or p->rets. */
static void parse_params(struct ptx_parser *p, bool ret) {
  struct ptx_var **list = ret ? &p->rets : &p->params;
  size_t *n = ret ? &p->num_rets : &p->num_params, *cap = ret ? &p->cap_rets : &p->cap_params;
  ptx_next(p);
  *n = 0;
  if (ptx_is_punct(&p->tok, ')')) {
    ptx_next(p);
    return;
  }
  for (;;) {
    struct ptx_var v = parse_param(p, ret);
    ptx_grow(p, (void **)list, cap, *n + 1, sizeof **list);
    (*list)[(*n)++] = v;
    if (!ptx_is_punct(&p->tok, ',')) break;
    ptx_next(p);
  }
  ptx_expect(p, ')', ret ? "after the return parameters" : "after the parameters");
}

/* `.maxntid 256, 1, 1`: up to three numbers, the missing ones 1. */
static void take_dims(struct ptx_parser *p, unsigned dims[3]) {
  for (int i = 0; i < 3; i++) dims[i] = 1;
  for (int i = 0; i < 3; i++) {
    ptx_next(p);
    dims[i] = (unsigned)ptx_count(p, &p->tok, UINT32_MAX);
    ptx_next(p);
    if (!ptx_is_punct(&p->tok, ',')) return;
  }
}

/* Performance directives between the header and the body. */
static bool parse_func_directive(struct ptx_parser *p, struct ptx_func *f) {
  const struct ptx_tok t = p->tok;
  unsigned ignored[3];
  if (ptx_is_word(&t, ".maxntid")) {
    take_dims(p, f->maxntid);
  } else if (ptx_is_word(&t, ".reqntid")) {
    take_dims(p, f->reqntid);
  } else if (ptx_is_word(&t, ".reqnctapercluster")) {
    take_dims(p, ignored);
  } else if (ptx_is_word(&t, ".minnctapersm") || ptx_is_word(&t, ".maxnctapersm") || ptx_is_word(&t, ".maxnreg") ||
             ptx_is_word(&t, ".maxclusterrank")) {
    ptx_next(p);
    unsigned n = (unsigned)take_count(p, UINT32_MAX);
    if (ptx_is_word(&t, ".minnctapersm")) f->minnctapersm = n;
    if (ptx_is_word(&t, ".maxnreg")) f->maxnreg = n;
  } else if (ptx_is_word(&t, ".noreturn") || ptx_is_word(&t, ".explicitcluster")) {
    ptx_next(p);
  } else if (ptx_is_word(&t, ".pragma")) {
    parse_pragma(p);
  } else {
    return false;
  }
  return true;
}

/* A prototype and the definition that follows are one function; returns its index. */
static size_t declare_func(struct ptx_parser *p, const struct ptx_func *f, const struct ptx_tok *name, bool defines) {
  uint32_t v = 0;
  char b[72];
  const char *shown = ptx_show(name->start, name->len, b);
  if (!name_find(p, name->start, name->len, 0, &v)) {
    if (p->num_funcs >= FUNC_BIT - 1) ptx_fail(p, name, "too many functions");
    GROW(p, p->funcs, p->cap_funcs, p->num_funcs + 1);
    p->funcs[p->num_funcs] = *f;
    name_add(p, f->name, name->len, 0, FUNC_BIT | (uint32_t)p->num_funcs);
    return p->num_funcs++;
  }
  if (!(v & FUNC_BIT)) ptx_fail(p, name, "\"%s\" is already declared", shown);
  struct ptx_func *old = &p->funcs[v & ~FUNC_BIT];
  if (old->is_entry != f->is_entry) ptx_fail(p, name, "\"%s\" is declared both as .entry and as .func", shown);
  if (old->has_body && defines) ptx_fail(p, name, "function \"%s\" is defined twice", shown);
  if (old->num_params != f->num_params || old->num_rets != f->num_rets)
    ptx_fail(p, name, "the declarations of \"%s\" do not match", shown);
  if (defines) {
    const char *kept = old->name;
    *old = *f;
    old->name = kept;
  }
  return v & ~FUNC_BIT;
}

struct linkage {
  bool is_visible, is_extern;
};

/* `.entry name (params) directives { body }` or `.func (rets) name (params) ... ;` */
static void parse_func(struct ptx_parser *p, bool entry, const struct linkage *link) {
  struct ptx_func f;
  memset(&f, 0, sizeof f);
  f.is_entry = entry;
  f.is_visible = link->is_visible;
  f.is_extern = link->is_extern;
  ptx_next(p);
  p->num_params = p->num_rets = 0;
  if (!entry && ptx_is_punct(&p->tok, '(')) parse_params(p, true);
  expect_name(p, entry ? "the kernel's name" : "the function's name");
  const struct ptx_tok name = p->tok;
  f.name = copy_name(p, name.start, name.len);
  f.line = name.line;
  ptx_next(p);
  if (ptx_is_punct(&p->tok, '(')) parse_params(p, false);
  while (parse_func_directive(p, &f)) {}
  f.params = freeze(p, p->params, p->num_params, sizeof *p->params);
  f.num_params = p->num_params;
  f.rets = freeze(p, p->rets, p->num_rets, sizeof *p->rets);
  f.num_rets = p->num_rets;
  check_params(p, &f, &name);
  bool defines = ptx_is_punct(&p->tok, '{');
  if (defines && f.is_extern) ptx_fail(p, &name, "extern function \"%s\" has a body", f.name);
  f.has_body = false;
  size_t index = declare_func(p, &f, &name, defines);
  if (!defines) {
    ptx_expect(p, ';', "after a function declaration");
    return;
  }
  if (p->mode == PTX_PARSE_DECLS) skip_braces(p, "function body");
  else parse_body(p, index);
  p->funcs[index].has_body = true;
}

/* ---------------------------------------------------------------- module */

static void parse_declaration(struct ptx_parser *p) {
  struct linkage link = {false, false};
  char b[72];
  for (;;) {
    if (ptx_is_word(&p->tok, ".visible")) link.is_visible = true;
    else if (ptx_is_word(&p->tok, ".extern")) link.is_extern = true;
    else if (!ptx_is_word(&p->tok, ".weak") && !ptx_is_word(&p->tok, ".common")) break;
    ptx_next(p);
  }
  const struct ptx_tok t = p->tok;
  if (ptx_is_word(&t, ".entry") || ptx_is_word(&t, ".func")) {
    parse_func(p, ptx_is_word(&t, ".entry"), &link);
  } else if (space_of(&t) >= 0 && !ptx_is_word(&t, ".param")) {
    struct var_decl d;
    memset(&d, 0, sizeof d);
    d.is_extern = link.is_extern;
    d.is_visible = link.is_visible;
    parse_vars(p, &d, false);
  } else if (is_directive(&t)) {
    ptx_fail(p, &t, "unknown directive \"%s\"", ptx_show(t.start, t.len, b));
  } else {
    unexpected(p, "at module scope");
  }
}

static void parse_module(struct ptx_parser *p) {
  ptx_next(p);
  while (p->tok.kind != PTX_TOK_EOF) {
    const struct ptx_tok *t = &p->tok;
    if (ptx_is_word(t, ".version")) parse_version(p);
    else if (ptx_is_word(t, ".target")) parse_target(p);
    else if (ptx_is_word(t, ".address_size")) parse_address_size(p);
    else if (ptx_is_word(t, ".file")) parse_file(p);
    else if (ptx_is_word(t, ".loc")) parse_loc(p);
    else if (ptx_is_word(t, ".section")) parse_section(p);
    else if (ptx_is_word(t, ".pragma")) parse_pragma(p);
    else parse_declaration(p);
  }
  struct ptx_module *m = p->m;
  m->vars = freeze(p, p->vars, p->num_vars, sizeof *p->vars);
  m->num_vars = p->num_vars;
  m->funcs = freeze(p, p->funcs, p->num_funcs, sizeof *p->funcs);
  m->num_funcs = p->num_funcs;
  m->files = freeze(p, p->files, p->num_files, sizeof *p->files);
  m->num_files = p->num_files;
}

/* ---------------------------------------------------------------- entry points */

static void free_temporaries(struct ptx_parser *p) {
  void *temps[] = {p->vars,      p->funcs,  p->files, p->names,        p->params, p->rets,   p->instrs, p->regs,
                   p->body_vars, p->locals, p->refs,  p->block_parent, p->init,   p->relocs, p->list};
  for (size_t i = 0; i < sizeof temps / sizeof temps[0]; i++) gcap__free(temps[i]);
}

/* Only p itself is read after a longjmp, and it is not changed here. */
static int run(struct ptx_parser *p) {
  if (setjmp(p->fail) != 0) return -1;
  parse_module(p);
  return 0;
}

struct ptx_module *ptx_parse(const char *text, size_t size, enum ptx_parse_mode mode, struct ptx_error *err) {
  struct ptx_error spare;
  struct ptx_parser p;
  if (!err) err = &spare;
  memset(err, 0, sizeof *err);
  memset(&p, 0, sizeof p);
  if (!text) size = 0;
  const char *nul = size ? memchr(text, '\0', size) : NULL;
  if (nul) size = (size_t)(nul - text);
  p.m = gcap__calloc(1, sizeof *p.m);
  if (!p.m) {
    snprintf(err->message, sizeof err->message, "out of memory");
    return NULL;
  }
  p.m->address_size = 64; /* nvcc and NVRTC always say so; PTX without the directive is taken as 64-bit */
  p.err = err;
  p.mode = mode;
  ptx_lex_init(&p.lx, text ? text : "", size);
  int rc = run(&p);
  free_temporaries(&p);
  if (rc != 0) {
    ptx_module_free(p.m);
    return NULL;
  }
  return p.m;
}

void ptx_module_free(struct ptx_module *m) {
  if (!m) return;
  gcap__arena_free_all(&m->arena);
  gcap__free(m);
}

const struct ptx_func *ptx_find_func(const struct ptx_module *m, const char *name) {
  for (size_t i = 0; m && name && i < m->num_funcs; i++)
    if (strcmp(m->funcs[i].name, name) == 0) return &m->funcs[i];
  return NULL;
}

const struct ptx_var *ptx_find_var(const struct ptx_module *m, const char *name) {
  for (size_t i = 0; m && name && i < m->num_vars; i++)
    if (strcmp(m->vars[i].name, name) == 0) return &m->vars[i];
  return NULL;
}
