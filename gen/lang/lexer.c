/* lexer.c — see lexer.h. */
#include "lang/lexer.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "lang/model.h"

#define MSG_TEXT_MAX 40 /* bytes of a token quoted in a message */

void ch_lex_init(ch_lexer *lx, const char *file, const char *src, size_t len)
{
    memset(lx, 0, sizeof *lx);
    lx->src = src;
    lx->file = file;
    lx->len = len;
    lx->line = 1;
    lx->col = 1;
    lx->last = CH_TOK_NEWLINE; /* leading blank lines give no statement */
    /* A UTF-8 byte order mark is not text. */
    if (len >= 3 && memcmp(src, "\xEF\xBB\xBF", 3) == 0) lx->pos = 3;
}

static int is_alpha(int c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z');
}

static int is_digit(int c) { return c >= '0' && c <= '9'; }

static int is_alnum_(int c) { return is_alpha(c) || is_digit(c) || c == '_'; }

static int peek(const ch_lexer *lx, size_t ahead)
{
    size_t p = lx->pos + ahead;
    return p < lx->len ? (unsigned char)lx->src[p] : -1;
}

static void advance(ch_lexer *lx, size_t n)
{
    lx->pos += n;
    lx->col += (int)n;
}

#if defined(__GNUC__)
__attribute__((format(printf, 5, 6)))
#endif
static int fail(ch_lexer *lx, ch_status code, int line, int col,
                const char *fmt, ...)
{
    char msg[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    lx->failed = 1;
    ch_error_set(&lx->err, code, lx->file, line, col, "%s", msg);
    return -1;
}

static int fail_byte(ch_lexer *lx, int c)
{
    if (c == 0)
        return fail(lx, CH_ERR_MODEL, lx->line, lx->col, "NUL byte in input");
    if (c >= 0x80)
        return fail(lx, CH_ERR_MODEL, lx->line, lx->col,
                    "non-ASCII byte 0x%02X outside a comment", (unsigned)c);
    if (c < 0x20 || c == 0x7F)
        return fail(lx, CH_ERR_MODEL, lx->line, lx->col,
                    "invalid control byte 0x%02X", (unsigned)c);
    return fail(lx, CH_ERR_MODEL, lx->line, lx->col,
                "unexpected character '%c'", c);
}

/* Length of the well-formed UTF-8 sequence at pos, 0 if malformed. */
static size_t utf8_len(const ch_lexer *lx)
{
    int c = peek(lx, 0);
    size_t n = c < 0xC2 ? 0 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : c <= 0xF4 ? 4 : 0;
    for (size_t i = 1; i < n; i++) {
        int d = peek(lx, i);
        if (d < 0x80 || d > 0xBF) return 0;
    }
    /* Reject overlong and surrogate / beyond-U+10FFFF forms. */
    int d = peek(lx, 1);
    if ((c == 0xE0 && d < 0xA0) || (c == 0xED && d > 0x9F)
        || (c == 0xF0 && d < 0x90) || (c == 0xF4 && d > 0x8F))
        return 0;
    return n;
}

/* 1 at a line end: "\n", or a CR not followed by "\n" (old Mac files; a
 * CR before "\n" is a blank). */
static int at_eol(const ch_lexer *lx)
{
    int c = peek(lx, 0);
    return c == '\n' || (c == '\r' && peek(lx, 1) != '\n');
}

static int skip_comment(ch_lexer *lx)
{
    for (int c; (c = peek(lx, 0)) >= 0 && !at_eol(lx);) {
        if (c >= 0x80) {
            size_t n = utf8_len(lx);
            if (!n)
                return fail(lx, CH_ERR_MODEL, lx->line, lx->col,
                            "invalid UTF-8 byte 0x%02X in a comment",
                            (unsigned)c);
            advance(lx, n); /* columns count bytes */
        } else if (c == '\t' || c == '\r' || (c >= 0x20 && c != 0x7F)) {
            advance(lx, 1);
        } else {
            return fail_byte(lx, c);
        }
    }
    return 0;
}

static int continues(ch_tok_kind k)
{
    switch (k) {
    case CH_TOK_PLUS: case CH_TOK_MINUS: case CH_TOK_STAR: case CH_TOK_SLASH:
    case CH_TOK_CARET: case CH_TOK_COMMA: case CH_TOK_EQUALS: return 1;
    default: return 0;
    }
}

/* Skips blanks, comments and the newlines that do not end a statement.
 * Returns 1 when a statement-ending newline was consumed (tok filled),
 * 0 at anything else, -1 on a lexical error. */
static int skip_space(ch_lexer *lx, ch_token *tok)
{
    for (;;) {
        int c = peek(lx, 0);
        if (at_eol(lx)) {
            int ends = lx->depth == 0 && !continues(lx->last)
                       && lx->last != CH_TOK_NEWLINE;
            if (ends) {
                tok->kind = CH_TOK_NEWLINE;
                tok->text = lx->src + lx->pos;
                tok->len = 1;
                tok->line = lx->line;
                tok->col = lx->col;
            }
            lx->pos++;
            lx->line++;
            lx->col = 1;
            if (ends) return 1;
        } else if (c == ' ' || c == '\t' || c == '\r') {
            advance(lx, 1);
        } else if (c == '#') {
            if (skip_comment(lx)) return -1;
        } else {
            return 0;
        }
    }
}

static int lex_number(ch_lexer *lx, ch_token *tok)
{
    size_t start = lx->pos;
    while (is_digit(peek(lx, 0))) advance(lx, 1);
    if (peek(lx, 0) == '.') {
        advance(lx, 1);
        while (is_digit(peek(lx, 0))) advance(lx, 1);
    }
    int e = peek(lx, 0);
    if (e == 'e' || e == 'E') {
        int s = peek(lx, 1);
        size_t skip = (s == '+' || s == '-') ? 2 : 1;
        if (is_digit(peek(lx, skip))) {
            advance(lx, skip);
            while (is_digit(peek(lx, 0))) advance(lx, 1);
        }
    }
    /* "2x", "1e", "1.2.3": glued letters are a typo, not a product. */
    if (is_alnum_(peek(lx, 0)) || peek(lx, 0) == '.' || peek(lx, 0) == '\'') {
        while (is_alnum_(peek(lx, 0)) || peek(lx, 0) == '.'
               || peek(lx, 0) == '\'')
            advance(lx, 1);
        size_t n = lx->pos - start;
        char text[MSG_TEXT_MAX + 1];
        snprintf(text, sizeof text, "%.*s",
                 (int)(n < MSG_TEXT_MAX ? n : MSG_TEXT_MAX), lx->src + start);
        return fail(lx, CH_ERR_MODEL, tok->line, tok->col,
                    "malformed number '%s'", text);
    }
    tok->kind = CH_TOK_NUMBER;
    tok->len = lx->pos - start;
    return 0;
}

static int lex_ident(ch_lexer *lx, ch_token *tok)
{
    size_t start = lx->pos;
    while (is_alnum_(peek(lx, 0))) advance(lx, 1);
    tok->kind = CH_TOK_IDENT;
    tok->len = lx->pos - start;
    if (tok->len > CH_MAX_IDENT_LEN) {
        char text[24];
        snprintf(text, sizeof text, "%.16s...", lx->src + start);
        return fail(lx, CH_ERR_LIMIT, tok->line, tok->col,
                    "identifier '%s' is too long (%zu bytes, max %d)",
                    text, tok->len, CH_MAX_IDENT_LEN);
    }
    while (peek(lx, 0) == '\'') {
        advance(lx, 1);
        if (tok->primes < 100) tok->primes++; /* saturate: 3 is already bad */
    }
    return 0;
}

static ch_tok_kind punct_kind(int c)
{
    switch (c) {
    case '+': return CH_TOK_PLUS;
    case '-': return CH_TOK_MINUS;
    case '*': return CH_TOK_STAR;
    case '/': return CH_TOK_SLASH;
    case '^': return CH_TOK_CARET;
    case '(': return CH_TOK_LPAREN;
    case ')': return CH_TOK_RPAREN;
    case ',': return CH_TOK_COMMA;
    case '=': return CH_TOK_EQUALS;
    case ':': return CH_TOK_COLON;
    default: return CH_TOK_EOF; /* not punctuation */
    }
}

static int lex_punct(ch_lexer *lx, ch_token *tok, int c)
{
    ch_tok_kind k = punct_kind(c);
    if (k == CH_TOK_EOF) {
        if (c == '\'')
            return fail(lx, CH_ERR_MODEL, tok->line, tok->col,
                        "stray prime \"'\" (a prime must follow a name)");
        return fail_byte(lx, c);
    }
    if (k == CH_TOK_LPAREN) lx->depth++;
    if (k == CH_TOK_RPAREN && lx->depth > 0) lx->depth--;
    advance(lx, 1);
    tok->kind = k;
    tok->len = 1;
    return 0;
}

int ch_lex_next(ch_lexer *lx, ch_token *tok)
{
    if (lx->failed) return -1;
    memset(tok, 0, sizeof *tok);
    int r = skip_space(lx, tok);
    if (r < 0) return -1;
    if (r == 0) {
        tok->text = lx->src + lx->pos;
        tok->line = lx->line;
        tok->col = lx->col;
        int c = peek(lx, 0);
        if (c < 0) {
            tok->kind = CH_TOK_EOF;
        } else if (is_alpha(c)) {
            r = lex_ident(lx, tok);
        } else if (is_digit(c) || (c == '.' && is_digit(peek(lx, 1)))) {
            r = lex_number(lx, tok);
        } else {
            r = lex_punct(lx, tok, c);
        }
        if (r) return -1;
    }
    lx->last = tok->kind;
    return 0;
}

void ch_tok_describe(const ch_token *tok, char *buf, size_t size)
{
    switch (tok->kind) {
    case CH_TOK_EOF: snprintf(buf, size, "end of file"); return;
    case CH_TOK_NEWLINE: snprintf(buf, size, "end of line"); return;
    case CH_TOK_IDENT:
        snprintf(buf, size, "'%.*s%.*s'", (int)tok->len, tok->text,
                 tok->primes < 3 ? tok->primes : 3, "'''");
        return;
    default: {
        int n = (int)(tok->len < MSG_TEXT_MAX ? tok->len : MSG_TEXT_MAX);
        snprintf(buf, size, "'%.*s'", n, tok->text);
    }
    }
}
