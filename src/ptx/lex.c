/* The PTX tokenizer: see lex.h. */
#include "lex.h"

#include <stdbool.h>

static bool is_alpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
static bool is_digit(char c) { return c >= '0' && c <= '9'; }
static bool is_word_char(char c) { return is_alpha(c) || is_digit(c) || c == '_' || c == '$'; }
static bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v'; }

void ptx_lex_init(struct ptx_lexer *lx, const char *text, size_t size) {
  lx->p = text;
  lx->end = text + size;
  lx->line_start = text;
  lx->line = 1;
}

static uint32_t column_of(const struct ptx_lexer *lx, const char *at) {
  size_t col = (size_t)(at - lx->line_start) + 1;
  return col > UINT32_MAX ? UINT32_MAX : (uint32_t)col;
}

static void newline(struct ptx_lexer *lx, const char *at) {
  lx->line_start = at + 1;
  if (lx->line < UINT32_MAX) lx->line++;
}

static struct ptx_tok make(const struct ptx_lexer *lx, enum ptx_tok_kind kind, const char *start) {
  struct ptx_tok t = {kind, start, (size_t)(lx->p - start), lx->line, column_of(lx, start), NULL};
  return t;
}

static struct ptx_tok fail(const char *start, uint32_t line, uint32_t column, const char *why) {
  struct ptx_tok t = {PTX_TOK_ERROR, start, 0, line, column, why};
  return t;
}

/* Skips white space and comments; an unterminated block comment is an error token. */
static bool skip_blank(struct ptx_lexer *lx, struct ptx_tok *error) {
  while (lx->p < lx->end) {
    char c = *lx->p;
    if (c == '\n') {
      newline(lx, lx->p);
      lx->p++;
    } else if (is_space(c)) {
      lx->p++;
    } else if (c == '/' && lx->end - lx->p >= 2 && lx->p[1] == '/') {
      while (lx->p < lx->end && *lx->p != '\n') lx->p++;
    } else if (c == '/' && lx->end - lx->p >= 2 && lx->p[1] == '*') {
      const char *start = lx->p;
      uint32_t line = lx->line, column = column_of(lx, start);
      lx->p += 2;
      for (;;) {
        if (lx->end - lx->p < 2) {
          lx->p = lx->end;
          *error = fail(start, line, column, "unterminated comment");
          return false;
        }
        if (lx->p[0] == '*' && lx->p[1] == '/') break;
        if (*lx->p == '\n') newline(lx, lx->p);
        lx->p++;
      }
      lx->p += 2;
    } else {
      break;
    }
  }
  return true;
}

/* Letters, digits, '_', '$', '.' and '::' (`.shared::cta`, `.L2::cache_hint`). */
static void scan_word(struct ptx_lexer *lx) {
  lx->p++;
  while (lx->p < lx->end) {
    char c = *lx->p;
    if (is_word_char(c) || c == '.') {
      lx->p++;
    } else if (c == ':' && lx->end - lx->p >= 3 && lx->p[1] == ':' && is_word_char(lx->p[2])) {
      lx->p += 2;
    } else {
      break;
    }
  }
}

/* A decimal literal may have a signed exponent (1.5e-3); hex-like ones (0x, 0f, 0d, 0b) may not. */
static void scan_number(struct ptx_lexer *lx) {
  const char *start = lx->p;
  bool prefixed = lx->end - start >= 2 && start[0] == '0' &&
                  (start[1] == 'x' || start[1] == 'X' || start[1] == 'f' || start[1] == 'F' || start[1] == 'd' ||
                   start[1] == 'D' || start[1] == 'b' || start[1] == 'B');
  while (lx->p < lx->end) {
    char c = *lx->p;
    if (is_word_char(c) || c == '.') {
      lx->p++;
    } else if ((c == '+' || c == '-') && !prefixed && (lx->p[-1] == 'e' || lx->p[-1] == 'E') && lx->end - lx->p >= 2 &&
               is_digit(lx->p[1])) {
      lx->p++;
    } else {
      break;
    }
  }
}

static struct ptx_tok scan_string(struct ptx_lexer *lx) {
  const char *start = lx->p;
  lx->p++;
  while (lx->p < lx->end && *lx->p != '"') {
    if (*lx->p == '\n') break;
    if (*lx->p == '\\' && lx->end - lx->p >= 2 && lx->p[1] != '\n') lx->p++;
    lx->p++;
  }
  if (lx->p >= lx->end || *lx->p != '"') return fail(start, lx->line, column_of(lx, start), "unterminated string");
  lx->p++;
  return make(lx, PTX_TOK_STR, start);
}

struct ptx_tok ptx_lex_next(struct ptx_lexer *lx) {
  struct ptx_tok error;
  if (!skip_blank(lx, &error)) return error;
  const char *start = lx->p;
  if (start >= lx->end) return make(lx, PTX_TOK_EOF, start);
  char c = *start;
  bool after_is_word = lx->end - start >= 2 && (is_word_char(start[1]));
  if (is_alpha(c) || c == '_' || c == '$' || ((c == '%' || c == '.') && after_is_word)) {
    scan_word(lx);
    return make(lx, PTX_TOK_WORD, start);
  }
  if (is_digit(c)) {
    scan_number(lx);
    return make(lx, PTX_TOK_NUM, start);
  }
  if (c == '"') return scan_string(lx);
  lx->p++;
  return make(lx, PTX_TOK_PUNCT, start);
}

size_t ptx_lex_squeeze(const char *from, const char *to, char *out) {
  size_t n = 0;
  bool blank = false;
  for (const char *s = from; s < to;) {
    if (is_space(*s) || *s == '\n') {
      blank = true;
      s++;
    } else if (*s == '/' && to - s >= 2 && s[1] == '/') {
      while (s < to && *s != '\n') s++;
      blank = true;
    } else if (*s == '/' && to - s >= 2 && s[1] == '*') {
      s += 2;
      while (to - s >= 2 && !(s[0] == '*' && s[1] == '/')) s++;
      s = to - s >= 2 ? s + 2 : to;
      blank = true;
    } else {
      if (blank && n > 0) out[n++] = ' ';
      blank = false;
      out[n++] = *s++;
    }
  }
  out[n] = '\0';
  return n;
}
