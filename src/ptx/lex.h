/*
 * The PTX tokenizer. A word is an identifier, a directive (`.reg`), a whole mnemonic with its
 * suffixes (`ld.global.v4.f32`, `.shared::cta`) or a special register (`%tid.x`); a number is
 * anything that starts with a digit (`0f3F800000`, `1.5e-3`, `0x10U`); every other character is
 * a punctuation token of its own. Comments are skipped; nothing is read at or past the end.
 */
#ifndef GCAP_PTX_LEX_H
#define GCAP_PTX_LEX_H

#include <stddef.h>
#include <stdint.h>

enum ptx_tok_kind { PTX_TOK_EOF = 0, PTX_TOK_WORD, PTX_TOK_NUM, PTX_TOK_STR, PTX_TOK_PUNCT, PTX_TOK_ERROR };

struct ptx_tok {
  enum ptx_tok_kind kind;
  const char *start; /* STR: the opening quote; EOF: the end of the text */
  size_t len;        /* STR: quotes included */
  uint32_t line, column;
  const char *error; /* ERROR: what is wrong */
};

struct ptx_lexer {
  const char *p, *end;
  const char *line_start;
  uint32_t line;
};

void ptx_lex_init(struct ptx_lexer *lx, const char *text, size_t size);
struct ptx_tok ptx_lex_next(struct ptx_lexer *lx);
/*
 * Writes [from, to) to out with comments dropped and each run of white space made one space,
 * none at either end; out has room for to - from + 1 bytes. Returns the length written (a NUL
 * follows).
 */
size_t ptx_lex_squeeze(const char *from, const char *to, char *out);

#endif
