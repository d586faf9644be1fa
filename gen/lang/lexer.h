/* lexer.h — tokens of the model language (SPEC §1), internal to model.c.
 *
 * A streaming lexer over a byte buffer: one call, one token, each with its
 * 1-based line and column (columns count bytes). It folds line
 * continuation in: a newline yields a CH_TOK_NEWLINE only when no
 * parenthesis is open and the previous token is not a binary operator
 * (+ - * / ^ , =); runs of blank and comment lines give one NEWLINE. Primes
 * belong to the identifier before them (`x'` is one token with primes 1),
 * so a prime anywhere else is a lexical error.
 *
 * Only printable ASCII, space, tab, CR and LF may appear outside comments;
 * comments may also hold well-formed UTF-8. Every other byte, a NUL, an
 * over-long identifier or a malformed number stops the lexer with a
 * positioned error naming the byte or token; after an error every call
 * returns the same error again. */
#ifndef CH_LEXER_H
#define CH_LEXER_H

#include <stddef.h>
#include "core/error.h"

typedef enum {
    CH_TOK_EOF, CH_TOK_NEWLINE, CH_TOK_IDENT, CH_TOK_NUMBER,
    CH_TOK_PLUS, CH_TOK_MINUS, CH_TOK_STAR, CH_TOK_SLASH, CH_TOK_CARET,
    CH_TOK_LPAREN, CH_TOK_RPAREN, CH_TOK_COMMA, CH_TOK_EQUALS, CH_TOK_COLON
} ch_tok_kind;

typedef struct {
    ch_tok_kind kind;
    const char *text; /* into the source buffer */
    size_t len;       /* IDENT: the name without primes; else the text */
    int primes;       /* IDENT: number of trailing `'` */
    int line, col;
} ch_token;

typedef struct {
    const char *src, *file;
    size_t len, pos;
    int line, col;
    int depth;            /* open parentheses, for continuation */
    ch_tok_kind last;     /* previous token, for continuation */
    int failed;
    ch_error err;         /* the sticky error once failed */
} ch_lexer;

void ch_lex_init(ch_lexer *lx, const char *file, const char *src,
                 size_t len);
/* Next token into tok. Returns 0, or nonzero with lx->err filled. */
int ch_lex_next(ch_lexer *lx, ch_token *tok);

/* A short human name of a token for messages: "'x''", "end of line". */
void ch_tok_describe(const ch_token *tok, char *buf, size_t size);

#endif
