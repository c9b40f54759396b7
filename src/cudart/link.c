/* -rdc programs: one PTX module per translation unit, whose kernels call each other's functions
 * and read each other's variables. The units are linked by name into one module before gcap
 * loads it, on the token level (names inside other names, strings and comments stay as they are):
 * - one .version (the highest), .target (all units must name one architecture) and
 *   .address_size;
 * - a `.extern` function or variable is resolved by the `.visible` or `.weak` definition of
 *   another unit; the declarations stay (the parser takes a declaration before or after the
 *   definition as the same symbol); an unresolved one that the device runtime does not provide
 *   (vprintf, __assertfail, malloc, cuda* ...) is an error, so is a symbol defined twice;
 * - of several `.weak` (or `.common`) definitions of a name (templates, inline functions) the
 *   first is kept, or the `.visible` one; the others become declarations; the kept one is
 *   `.visible`, as it is after a link;
 * - names without linkage (static functions, `$str` strings) that more than one unit uses are
 *   renamed in each unit that defines them (`name_gcap_u<N>`), so each unit keeps its own;
 * - `.file` numbers (and `.loc`'s) are shifted so that each unit keeps its own files. */
#include "cudart.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { TK_SPACE, TK_WORD, TK_DIR, TK_NUM, TK_STR, TK_PUNCT };

struct tok {
  const char *s;
  size_t n;
  int kind;
};

enum { S_OTHER, S_VERSION, S_TARGET, S_ADDRESS, S_FILE, S_FUNC, S_ENTRY, S_VAR };

struct stmt {
  size_t first, end; /* its tokens [first, end) */
  size_t open;       /* the function's '{' or the variable's '=' or ';': where a declaration stops */
  int kind;
  bool visible, ext, weak, defines, shared;
  bool drop; /* a weak definition another one replaces: written as a declaration */
};

struct unit {
  struct tok *toks;
  size_t ntoks;
  struct stmt *stmts;
  size_t nstmts;
  unsigned file_base, max_file;
};

/* A module-scope name of one statement of one unit. */
struct sym {
  const char *s;
  size_t n;
  size_t unit, stmt;
  size_t next;   /* the next sym of the same name, or SIZE_MAX */
  char *renamed; /* the unit's new name for it, or NULL (in the linker's names) */
};

struct linker {
  size_t nunits;
  struct unit *units;
  struct sym *syms;
  size_t nsyms, cap_syms;
  size_t *table; /* open addressing: index of the first sym of a name, SIZE_MAX when empty */
  size_t table_size;
  char **names; /* the new names, owned */
  size_t nnames, cap_names;
  char *out;
  size_t len, cap;
  char *err;
  size_t err_size;
  bool failed;
};

__attribute__((format(printf, 2, 3))) static bool fail(struct linker *L, const char *fmt, ...) {
  if (L->failed) return false;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(L->err, L->err_size, fmt, ap);
  va_end(ap);
  L->failed = true;
  return false;
}

static bool grow(struct linker *L, void **p, size_t *cap, size_t need, size_t elem) {
  if (need <= *cap) return true;
  size_t c = *cap ? *cap : 64;
  while (c < need) c *= 2;
  void *q = realloc(*p, c * elem);
  if (!q) return fail(L, "out of memory");
  *p = q;
  *cap = c;
  return true;
}

/* ---------------------------------------------------------------- tokens */

static bool is_start(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == '$' || c == '%';
}
static bool is_follow(char c) { return is_start(c) || (c >= '0' && c <= '9'); }
static bool is_digit(char c) { return c >= '0' && c <= '9'; }

static bool tokenize(struct linker *L, struct unit *u, const char *t, size_t len, size_t index) {
  size_t cap = 0, i = 0;
  while (i < len) {
    size_t j = i + 1;
    int kind = TK_PUNCT;
    char c = t[i];
    if (c == ' ' || c == '\t' || c == '\r' || c == '\n') {
      kind = TK_SPACE;
      while (j < len && (t[j] == ' ' || t[j] == '\t' || t[j] == '\r' || t[j] == '\n')) j++;
    } else if (c == '/' && i + 1 < len && t[i + 1] == '/') {
      kind = TK_SPACE;
      while (j < len && t[j] != '\n') j++;
    } else if (c == '/' && i + 1 < len && t[i + 1] == '*') {
      kind = TK_SPACE;
      j = i + 2;
      while (j + 1 < len && !(t[j] == '*' && t[j + 1] == '/')) j++;
      if (j + 1 >= len) return fail(L, "unit %zu of %zu: unterminated comment", index + 1, L->nunits);
      j += 2;
    } else if (c == '"') {
      kind = TK_STR;
      while (j < len && t[j] != '"' && t[j] != '\n') j += t[j] == '\\' && j + 1 < len ? 2 : 1;
      if (j >= len || t[j] != '"') return fail(L, "unit %zu of %zu: unterminated string", index + 1, L->nunits);
      j++;
    } else if (is_start(c) || (c == '.' && i + 1 < len && is_start(t[i + 1]))) {
      kind = c == '.' ? TK_DIR : TK_WORD;
      while (j < len && is_follow(t[j])) j++;
    } else if (is_digit(c)) {
      kind = TK_NUM;
      while (j < len && (is_follow(t[j]) || t[j] == '.')) j++;
    }
    if (!grow(L, (void **)&u->toks, &cap, u->ntoks + 1, sizeof *u->toks)) return false;
    u->toks[u->ntoks++] = (struct tok){t + i, j - i, kind};
    i = j;
  }
  return true;
}

static bool tok_is(const struct tok *t, const char *s) { return t->n == strlen(s) && memcmp(t->s, s, t->n) == 0; }

/* The first significant token at or after i. */
static size_t sig(const struct unit *u, size_t i) {
  while (i < u->ntoks && u->toks[i].kind == TK_SPACE) i++;
  return i;
}

/* ---------------------------------------------------------------- statements */

/* The leading decimal digits of a token (texts need not end in a NUL), at most 1000000. */
static unsigned number(const struct tok *t, size_t *used) {
  unsigned v = 0;
  size_t i = 0;
  for (; i < t->n && is_digit(t->s[i]); i++) v = v > 100000 ? 1000000 : v * 10 + (unsigned)(t->s[i] - '0');
  if (used) *used = i;
  return v;
}

/* The end of a header directive (they have no ';'): `.version 9.0`, `.target sm_80, debug`,
 * `.address_size 64`, `.file 1 "a.cu", 0, 0`. */
static size_t header_end(struct unit *u, size_t i, int kind) {
  size_t j = sig(u, i + 1);
  if (j >= u->ntoks) return j;
  if (kind == S_FILE && u->toks[j].kind == TK_NUM) {
    unsigned f = number(&u->toks[j], NULL);
    if (f > u->max_file) u->max_file = f;
  }
  size_t end = j + 1;
  int extra = kind == S_TARGET ? 100 : kind == S_FILE ? 3 : 0;
  if (kind == S_FILE) {
    j = sig(u, end);
    if (j < u->ntoks && u->toks[j].kind == TK_STR) end = j + 1;
  }
  for (; extra > 0; extra--) {
    j = sig(u, end);
    if (j >= u->ntoks || !tok_is(&u->toks[j], ",")) break;
    j = sig(u, j + 1);
    if (j >= u->ntoks) break;
    end = j + 1;
  }
  return end;
}

/* A declaration or definition: up to ';' at depth 0, or a function's body's closing '}'. */
static bool declaration_end(struct linker *L, struct unit *u, size_t index, struct stmt *s) {
  int depth = 0;
  bool func = false, body = false;
  s->open = SIZE_MAX;
  for (size_t j = s->first; j < u->ntoks; j++) {
    const struct tok *t = &u->toks[j];
    if (t->kind == TK_DIR && depth == 0 && (tok_is(t, ".func") || tok_is(t, ".entry"))) func = true;
    if (t->kind != TK_PUNCT) continue;
    char c = t->s[0];
    if (c == '=' && depth == 0 && s->open == SIZE_MAX) s->open = j;
    if (c == '{' && depth == 0 && func) body = true, s->open = j;
    if (c == '(' || c == '[' || c == '{') depth++;
    if (c == ')' || c == ']' || c == '}') {
      if (--depth < 0) break;
      if (depth == 0 && body && c == '}') {
        s->end = j + 1;
        return true;
      }
    }
    if (c == ';' && depth == 0) {
      if (s->open == SIZE_MAX) s->open = j;
      s->end = j + 1;
      return true;
    }
  }
  return fail(L, "unit %zu of %zu: unbalanced or unterminated declaration at module scope", index + 1, L->nunits);
}

static size_t sym_hash(const char *s, size_t n) {
  uint64_t h = 14695981039346656037u;
  for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 1099511628211u;
  return (size_t)(h ^ (h >> 32));
}

/* The slot of a name in the table: where it is, or the empty slot where it goes. */
static size_t slot_of(const struct linker *L, const char *s, size_t n) {
  size_t mask = L->table_size - 1, i = sym_hash(s, n) & mask;
  while (L->table[i] != SIZE_MAX) {
    const struct sym *y = &L->syms[L->table[i]];
    if (y->n == n && memcmp(y->s, s, n) == 0) break;
    i = (i + 1) & mask;
  }
  return i;
}

static size_t first_sym(const struct linker *L, const char *s, size_t n) {
  return L->table_size ? L->table[slot_of(L, s, n)] : SIZE_MAX;
}

static bool add_sym(struct linker *L, size_t unit, size_t stmt, const struct tok *name) {
  if (!grow(L, (void **)&L->syms, &L->cap_syms, L->nsyms + 1, sizeof *L->syms)) return false;
  L->syms[L->nsyms++] = (struct sym){name->s, name->n, unit, stmt, SIZE_MAX, NULL};
  return true;
}

/* What a declaration declares and how: its linkage, kind and names. */
static bool classify(struct linker *L, struct unit *u, size_t index, struct stmt *s) {
  size_t j = s->first;
  for (;; j = sig(u, j + 1)) {
    const struct tok *t = &u->toks[j];
    if (tok_is(t, ".visible")) s->visible = true;
    else if (tok_is(t, ".extern")) s->ext = true;
    else if (tok_is(t, ".weak") || tok_is(t, ".common")) s->weak = true;
    else break;
  }
  const struct tok *t = &u->toks[j];
  if (tok_is(t, ".entry") || tok_is(t, ".func")) {
    s->kind = tok_is(t, ".entry") ? S_ENTRY : S_FUNC;
    j = sig(u, j + 1);
    if (j < s->end && s->kind == S_FUNC && tok_is(&u->toks[j], "(")) {
      for (int depth = 0; j < s->end; j++) {
        if (tok_is(&u->toks[j], "(")) depth++;
        if (tok_is(&u->toks[j], ")") && --depth == 0) break;
      }
      j = sig(u, j + 1);
    }
    s->defines = s->open < s->end && tok_is(&u->toks[s->open], "{");
    if (j < s->end && u->toks[j].kind == TK_WORD) return add_sym(L, index, (size_t)(s - u->stmts), &u->toks[j]);
    return true;
  }
  bool space = tok_is(t, ".global") || tok_is(t, ".const") || tok_is(t, ".shared");
  if (!space) return true;
  s->kind = S_VAR;
  s->shared = tok_is(t, ".shared");
  s->defines = !s->ext;
  bool want = true;
  int depth = 0;
  for (j++; j < s->end; j++) {
    const struct tok *w = &u->toks[j];
    if (w->kind == TK_SPACE) continue;
    if (w->kind == TK_PUNCT) {
      char c = w->s[0];
      if (c == '(' || c == '[' || c == '{') depth++;
      if (c == ')' || c == ']' || c == '}') depth--;
      if (c == ',' && depth == 0) want = true;
      else if (c == '=' && depth == 0) want = false;
    } else if (w->kind == TK_WORD && depth == 0 && want) {
      if (!add_sym(L, index, (size_t)(s - u->stmts), w)) return false;
      want = false;
    }
  }
  return true;
}

static bool split(struct linker *L, struct unit *u, size_t index) {
  size_t cap = 0;
  for (size_t i = sig(u, 0); i < u->ntoks; i = sig(u, i)) {
    if (!grow(L, (void **)&u->stmts, &cap, u->nstmts + 1, sizeof *u->stmts)) return false;
    struct stmt *s = &u->stmts[u->nstmts++];
    memset(s, 0, sizeof *s);
    s->first = i;
    const struct tok *t = &u->toks[i];
    s->kind = tok_is(t, ".version")        ? S_VERSION
              : tok_is(t, ".target")       ? S_TARGET
              : tok_is(t, ".address_size") ? S_ADDRESS
              : tok_is(t, ".file")         ? S_FILE
                                           : S_OTHER;
    if (s->kind != S_OTHER) {
      s->end = header_end(u, i, s->kind);
    } else if (tok_is(t, ".section")) {
      s->kind = S_OTHER;
      s->end = i + 1;
      int depth = 0;
      for (size_t j = i + 1; j < u->ntoks; j++) {
        if (tok_is(&u->toks[j], "{")) depth++;
        if (tok_is(&u->toks[j], "}") && --depth == 0) {
          s->end = j + 1;
          break;
        }
      }
    } else {
      if (!declaration_end(L, u, index, s) || !classify(L, u, index, s)) return false;
    }
    i = s->end;
  }
  return true;
}

/* ---------------------------------------------------------------- resolution */

static bool build_table(struct linker *L) {
  size_t size = 64;
  while (size < 2 * L->nsyms + 1) size *= 2;
  L->table = malloc(size * sizeof *L->table);
  if (!L->table) return fail(L, "out of memory");
  L->table_size = size;
  for (size_t i = 0; i < size; i++) L->table[i] = SIZE_MAX;
  /* Chained in reverse so that each chain runs in unit order. */
  for (size_t k = L->nsyms; k-- > 0;) {
    struct sym *y = &L->syms[k];
    size_t slot = slot_of(L, y->s, y->n);
    y->next = L->table[slot];
    L->table[slot] = k;
  }
  return true;
}

static const struct stmt *stmt_of(const struct linker *L, const struct sym *y) {
  return &L->units[y->unit].stmts[y->stmt];
}

static bool has_linkage(const struct stmt *s) { return s->visible || s->ext || s->weak; }

/* What the device runtime provides: the simulator's builtins and what libcudadevrt holds. */
static bool device_runtime(const struct sym *y) {
  static const char *const names[] = {"vprintf", "__assertfail", "malloc", "free", "__nvvm_reflect"};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    if (y->n == strlen(names[i]) && memcmp(y->s, names[i], y->n) == 0) return true;
  return (y->n > 4 && memcmp(y->s, "cuda", 4) == 0) || (y->n > 6 && memcmp(y->s, "__cuda", 6) == 0);
}

static bool rename_sym(struct linker *L, size_t first, struct sym *y) {
  size_t cap = y->n + 40;
  if (!grow(L, (void **)&L->names, &L->cap_names, L->nnames + 1, sizeof *L->names)) return false;
  char *name = malloc(cap);
  if (!name) return fail(L, "out of memory");
  L->names[L->nnames++] = name;
  for (unsigned k = 0;; k++) {
    int w = k ? snprintf(name, cap, "%.*s_gcap_u%zu_%u", (int)y->n, y->s, y->unit, k)
              : snprintf(name, cap, "%.*s_gcap_u%zu", (int)y->n, y->s, y->unit);
    if (first_sym(L, name, (size_t)w) == SIZE_MAX) break;
  }
  for (size_t k = first; k != SIZE_MAX; k = L->syms[k].next)
    if (L->syms[k].unit == y->unit) L->syms[k].renamed = name;
  return true;
}

/* One name across the units: the checks, the kept weak definition, the renamed local names. */
static bool resolve_name(struct linker *L, size_t first) {
  const struct sym *name = &L->syms[first];
  int n = (int)name->n;
  const struct sym *strong = NULL, *weak = NULL, *external = NULL, *kind_of = NULL;
  for (size_t k = first; k != SIZE_MAX; k = L->syms[k].next) {
    const struct sym *y = &L->syms[k];
    const struct stmt *s = stmt_of(L, y);
    if (!has_linkage(s)) continue;
    if (kind_of && (stmt_of(L, kind_of)->kind == S_VAR) != (s->kind == S_VAR))
      return fail(L, "\"%.*s\" is a %s in unit %zu and a %s in unit %zu", n, name->s,
                  stmt_of(L, kind_of)->kind == S_VAR ? "variable" : "function", kind_of->unit + 1,
                  s->kind == S_VAR ? "variable" : "function", y->unit + 1);
    kind_of = y;
    if (s->defines && !s->weak) {
      if (strong)
        return fail(L, "\"%.*s\" is defined in unit %zu and again in unit %zu of %zu", n, name->s, strong->unit + 1,
                    y->unit + 1, L->nunits);
      strong = y;
    } else if (s->defines && !weak) {
      weak = y;
    } else if (!s->defines && !external) {
      external = y;
    }
  }
  const struct sym *kept = strong ? strong : weak;
  if (external && !kept) {
    const struct stmt *s = stmt_of(L, external);
    if (!(s->kind == S_VAR && s->shared) && !(s->kind != S_VAR && device_runtime(external)))
      return fail(L,
                  "unresolved symbol \"%.*s\": unit %zu of %zu declares it .extern and no unit defines it "
                  "(nor does the device runtime)",
                  n, name->s, external->unit + 1, L->nunits);
  }
  for (size_t k = first; k != SIZE_MAX; k = L->syms[k].next) {
    struct sym *y = &L->syms[k];
    struct stmt *s = &L->units[y->unit].stmts[y->stmt];
    if (has_linkage(s)) {
      if (s->weak && s->defines && y != kept) s->drop = true;
      continue;
    }
    if (y->renamed) continue;
    const struct sym *other = NULL;
    for (size_t m = first; m != SIZE_MAX && !other; m = L->syms[m].next)
      if (L->syms[m].unit != y->unit) other = &L->syms[m];
    if (!other) continue;
    if (s->kind == S_ENTRY)
      return fail(L, "kernel \"%.*s\" of unit %zu has the name of a symbol of unit %zu", n, name->s, y->unit + 1,
                  other->unit + 1);
    if (!rename_sym(L, first, y)) return false;
  }
  return true;
}

/* ---------------------------------------------------------------- headers */

struct header {
  bool versioned;
  unsigned major, minor;
  const struct tok *target; /* the architecture: sm_80 */
  size_t target_unit;
  const struct tok *address;
  size_t address_unit;
};

static bool read_headers(struct linker *L, struct header *h) {
  memset(h, 0, sizeof *h);
  for (size_t u = 0; u < L->nunits; u++) {
    struct unit *U = &L->units[u];
    for (size_t i = 0; i < U->nstmts; i++) {
      const struct stmt *s = &U->stmts[i];
      size_t j = sig(U, s->first + 1);
      if (j >= s->end) continue;
      const struct tok *t = &U->toks[j];
      if (s->kind == S_VERSION) {
        size_t used = 0;
        unsigned major = number(t, &used), minor = 0;
        if (used < t->n && t->s[used] == '.') {
          struct tok rest = {t->s + used + 1, t->n - used - 1, TK_NUM};
          minor = number(&rest, NULL);
        }
        if (!h->versioned || major > h->major || (major == h->major && minor > h->minor))
          h->major = major, h->minor = minor;
        h->versioned = true;
      } else if (s->kind == S_TARGET) {
        if (h->target && (h->target->n != t->n || memcmp(h->target->s, t->s, t->n) != 0))
          return fail(L,
                      "unit %zu targets %.*s and unit %zu targets %.*s: the units of a program must be built for "
                      "one architecture",
                      h->target_unit + 1, (int)h->target->n, h->target->s, u + 1, (int)t->n, t->s);
        h->target = t;
        h->target_unit = u;
      } else if (s->kind == S_ADDRESS) {
        if (h->address && (h->address->n != t->n || memcmp(h->address->s, t->s, t->n) != 0))
          return fail(L, "unit %zu has .address_size %.*s and unit %zu .address_size %.*s", h->address_unit + 1,
                      (int)h->address->n, h->address->s, u + 1, (int)t->n, t->s);
        h->address = t;
        h->address_unit = u;
      }
    }
  }
  return true;
}

/* ---------------------------------------------------------------- output */

static bool put(struct linker *L, const char *s, size_t n) {
  if (!grow(L, (void **)&L->out, &L->cap, L->len + n + 1, 1)) return false;
  memcpy(L->out + L->len, s, n);
  L->len += n;
  L->out[L->len] = '\0';
  return true;
}

static bool puts_(struct linker *L, const char *s) { return put(L, s, strlen(s)); }

/* The target's options (debug, texmode_...) that any unit names, each once. */
static bool put_target(struct linker *L, const struct header *h) {
  static const char *const options[] = {"texmode_unified", "texmode_independent", "debug", "map_f64_to_f32"};
  if (!puts_(L, ".target ") || !put(L, h->target->s, h->target->n)) return false;
  for (size_t o = 0; o < sizeof options / sizeof options[0]; o++) {
    bool named = false;
    for (size_t u = 0; u < L->nunits && !named; u++) {
      const struct unit *U = &L->units[u];
      for (size_t i = 0; i < U->nstmts && !named; i++)
        for (size_t j = U->stmts[i].first; U->stmts[i].kind == S_TARGET && j < U->stmts[i].end && !named; j++)
          named = tok_is(&U->toks[j], options[o]);
    }
    if (named && (!puts_(L, ", ") || !puts_(L, options[o]))) return false;
  }
  return puts_(L, "\n");
}

static bool put_token(struct linker *L, const struct unit *U, const struct tok *t, bool file_number) {
  if (t->kind == TK_WORD) {
    size_t k = first_sym(L, t->s, t->n);
    for (; k != SIZE_MAX; k = L->syms[k].next)
      if (&L->units[L->syms[k].unit] == U && L->syms[k].renamed) return puts_(L, L->syms[k].renamed);
  }
  if (file_number && U->file_base) {
    char b[32];
    snprintf(b, sizeof b, "%u", number(t, NULL) + U->file_base);
    return puts_(L, b);
  }
  return put(L, t->s, t->n);
}

/* A dropped weak definition as a declaration: `.extern` and its tokens up to the body or '='. */
static bool put_declaration(struct linker *L, const struct unit *U, const struct stmt *s) {
  if (!puts_(L, ".extern ")) return false;
  size_t j = s->first;
  while (tok_is(&U->toks[j], ".weak") || tok_is(&U->toks[j], ".common") || tok_is(&U->toks[j], ".visible") ||
         U->toks[j].kind == TK_SPACE)
    j++;
  for (; j < s->open; j++)
    if (!put_token(L, U, &U->toks[j], false)) return false;
  return puts_(L, ";");
}

static bool put_unit(struct linker *L, const struct unit *U) {
  size_t from = 0;
  bool after_file = false; /* the previous significant token was .file, .loc or inlined_at */
  for (size_t i = 0; i < U->nstmts; i++) {
    const struct stmt *s = &U->stmts[i];
    bool header = s->kind == S_VERSION || s->kind == S_TARGET || s->kind == S_ADDRESS;
    for (size_t j = from; j < s->first; j++)
      if (!put_token(L, U, &U->toks[j], false)) return false;
    from = s->end;
    if (header) continue;
    if (s->drop) {
      if (!put_declaration(L, U, s)) return false;
      continue;
    }
    for (size_t j = s->first; j < s->end; j++) {
      const struct tok *t = &U->toks[j];
      bool weak_kept = s->weak && (tok_is(t, ".weak") || tok_is(t, ".common"));
      if (weak_kept && !puts_(L, ".visible")) return false;
      if (!weak_kept && !put_token(L, U, t, after_file && t->kind == TK_NUM)) return false;
      if (t->kind != TK_SPACE)
        after_file = tok_is(t, ".file") || tok_is(t, ".loc") || (t->kind == TK_WORD && tok_is(t, "inlined_at"));
    }
  }
  for (size_t j = from; j < U->ntoks; j++)
    if (!put_token(L, U, &U->toks[j], false)) return false;
  return puts_(L, "\n");
}

static bool link_units(struct linker *L, const char *const *texts, const size_t *lens) {
  for (size_t u = 0; u < L->nunits; u++) {
    if (!texts[u]) return fail(L, "unit %zu of %zu has no PTX", u + 1, L->nunits);
    size_t len = lens[u];
    const char *nul = memchr(texts[u], '\0', len);
    if (nul) len = (size_t)(nul - texts[u]);
    if (!tokenize(L, &L->units[u], texts[u], len, u) || !split(L, &L->units[u], u)) return false;
    if (u) L->units[u].file_base = L->units[u - 1].file_base + L->units[u - 1].max_file;
  }
  struct header h;
  if (!build_table(L) || !read_headers(L, &h)) return false;
  if (!h.versioned || !h.target) return fail(L, "no unit has a %s", h.versioned ? ".target" : ".version");
  for (size_t k = 0; k < L->nsyms; k++)
    if (L->table[slot_of(L, L->syms[k].s, L->syms[k].n)] == k && !resolve_name(L, k)) return false;
  char b[64];
  snprintf(b, sizeof b, ".version %u.%u\n", h.major, h.minor);
  if (!puts_(L, b) || !put_target(L, &h)) return false;
  if (h.address && (!puts_(L, ".address_size ") || !put(L, h.address->s, h.address->n) || !puts_(L, "\n")))
    return false;
  for (size_t u = 0; u < L->nunits; u++) {
    char note[64];
    snprintf(note, sizeof note, "\n// unit %zu of %zu\n", u + 1, L->nunits);
    if (!puts_(L, note) || !put_unit(L, &L->units[u])) return false;
  }
  return true;
}

char *gcap__cudart_link_ptx(const char *const *texts, const size_t *lens, size_t n, size_t *len, char *err,
                            size_t err_size) {
  struct linker L;
  memset(&L, 0, sizeof L);
  L.err = err;
  L.err_size = err_size;
  L.nunits = n;
  if (n == 0 || !texts || !lens || !len) {
    fail(&L, "linking the PTX of -rdc units: there are none");
    return NULL;
  }
  L.units = calloc(n, sizeof *L.units);
  bool ok = L.units ? link_units(&L, texts, lens) : fail(&L, "out of memory");
  for (size_t k = 0; k < L.nnames; k++) free(L.names[k]);
  free(L.names);
  for (size_t u = 0; L.units && u < n; u++) {
    free(L.units[u].toks);
    free(L.units[u].stmts);
  }
  free(L.units);
  free(L.syms);
  free(L.table);
  if (!ok) {
    free(L.out);
    return NULL;
  }
  *len = L.len;
  return L.out;
}
