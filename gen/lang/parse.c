/* parse.c — see parse.h. */
#include "lang/parse.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lang/model.h"

/* ---- token cursor ----------------------------------------------------- */

int ch_parse_fail(ch_parser *p, const ch_token *at, ch_status code,
                  const char *fmt, ...)
{
    if (p->failed) return -1;
    if (!at) at = &p->tok;
    char msg[sizeof p->err->msg];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    ch_error_set(p->err, code, p->lx.file, at->line, at->col, "%s", msg);
    p->failed = 1;
    return -1;
}

int ch_parse_advance(ch_parser *p)
{
    if (p->failed) return -1;
    if (ch_lex_next(&p->lx, &p->tok)) {
        if (p->err) *p->err = p->lx.err;
        p->failed = 1;
        return -1;
    }
    return 0;
}

int ch_parse_init(ch_parser *p, ch_ctx *ctx, const char *file,
                  const char *src, size_t len, ch_error *err)
{
    memset(p, 0, sizeof *p);
    p->ctx = ctx;
    p->err = err;
    ch_lex_init(&p->lx, file, src, len);
    return ch_parse_advance(p);
}

int ch_parse_expect(ch_parser *p, ch_tok_kind k, const char *what)
{
    if (p->failed) return -1;
    if (p->tok.kind != k) {
        char d[96];
        ch_tok_describe(&p->tok, d, sizeof d);
        return ch_parse_fail(p, NULL, CH_ERR_MODEL, "expected %s, found %s",
                             what, d);
    }
    return ch_parse_advance(p);
}

int ch_parse_at_end(const ch_parser *p)
{
    return p->tok.kind == CH_TOK_NEWLINE || p->tok.kind == CH_TOK_EOF;
}

int ch_parse_end_statement(ch_parser *p)
{
    if (p->failed) return -1;
    if (!ch_parse_at_end(p)) {
        char d[96];
        ch_tok_describe(&p->tok, d, sizeof d);
        return ch_parse_fail(p, NULL, CH_ERR_MODEL,
                             "unexpected %s at end of statement", d);
    }
    return p->tok.kind == CH_TOK_EOF ? 0 : ch_parse_advance(p);
}

const ch_expr *ch_parse_check(ch_parser *p, const ch_token *at,
                              const ch_expr *e)
{
    if (e || p->failed) return e;
    const ch_error *ce = ch_ctx_error(p->ctx);
    ch_status code = ce->code == CH_ERR_MEMORY || ce->code == CH_ERR_LIMIT
                         ? ce->code
                         : CH_ERR_MODEL;
    const char *why = ce->code != CH_OK ? ce->msg : "expression not built";
    char d[96];
    ch_tok_describe(at, d, sizeof d);
    if (at->kind == CH_TOK_NUMBER) /* the reason already quotes it */
        ch_parse_fail(p, at, code, "%s", why);
    else if (code == CH_ERR_LIMIT || code == CH_ERR_MEMORY)
        ch_parse_fail(p, at, code, "%s at %s", why, d);
    else
        ch_parse_fail(p, at, code, "invalid operation at %s: %s", d, why);
    ch_ctx_clear_error(p->ctx);
    return NULL;
}

/* ---- operand lists ---------------------------------------------------- */

typedef struct {
    const ch_expr **v;
    size_t n, cap;
} expr_list;

static int list_push(ch_parser *p, expr_list *l, const ch_expr *e)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 8;
        const ch_expr **v = realloc(l->v, cap * sizeof *v);
        if (!v)
            return ch_parse_fail(p, NULL, CH_ERR_MEMORY, "out of memory");
        l->v = v;
        l->cap = cap;
    }
    l->v[l->n++] = e;
    return 0;
}

/* ---- expressions ------------------------------------------------------ */

static const ch_expr *parse_sum(ch_parser *p);
static const ch_expr *parse_unary(ch_parser *p);

/* Function names: the ch_fun ones plus sqrt, which is a power. */
#define FUN_SQRT CH_F_COUNT

int ch_parse_function(const char *name, size_t len)
{
    char buf[CH_MAX_IDENT_LEN + 1];
    if (len > CH_MAX_IDENT_LEN) return -1;
    snprintf(buf, sizeof buf, "%.*s", (int)len, name);
    if (strcmp(buf, "sqrt") == 0) return FUN_SQRT;
    return ch_fun_lookup(buf);
}

/* The ")" matching `open`, which the message names. */
static int expect_close(ch_parser *p, const ch_token *open)
{
    if (p->tok.kind == CH_TOK_RPAREN) return ch_parse_advance(p);
    char d[96];
    ch_tok_describe(&p->tok, d, sizeof d);
    return ch_parse_fail(p, NULL, CH_ERR_MODEL,
                         "missing ')' for '(' at %d:%d, found %s", open->line,
                         open->col, d);
}

/* "(" sum {"," sum} ")" with the "(" current; at most 2 arguments kept. */
static int parse_args(ch_parser *p, const ch_expr *arg[2], int *nargs)
{
    ch_token open = p->tok;
    *nargs = 0;
    if (ch_parse_advance(p)) return -1;
    for (;;) {
        const ch_expr *e = parse_sum(p);
        if (!e) return -1;
        if (*nargs < 2) arg[*nargs] = e;
        (*nargs)++;
        if (p->tok.kind != CH_TOK_COMMA) break;
        if (ch_parse_advance(p)) return -1;
    }
    return expect_close(p, &open);
}

static const ch_expr *parse_call(ch_parser *p, int f)
{
    ch_token name = p->tok;
    if (ch_parse_advance(p)) return NULL;
    if (name.primes || p->tok.kind != CH_TOK_LPAREN) {
        ch_parse_fail(p, &name, CH_ERR_MODEL,
                      "function '%.*s' must be called as %.*s(...)",
                      (int)name.len, name.text, (int)name.len, name.text);
        return NULL;
    }
    const ch_expr *arg[2] = {NULL, NULL};
    int nargs, want = f == CH_F_ATAN2 ? 2 : 1;
    if (parse_args(p, arg, &nargs)) return NULL;
    if (nargs != want) {
        ch_parse_fail(p, &name, CH_ERR_MODEL,
                      "function '%.*s' takes %d argument%s, got %d",
                      (int)name.len, name.text, want, want == 1 ? "" : "s",
                      nargs);
        return NULL;
    }
    const ch_expr *e = f == FUN_SQRT      ? ch_sqrt(p->ctx, arg[0])
                       : f == CH_F_ATAN2 ? ch_atan2(p->ctx, arg[0], arg[1])
                                         : ch_fun1(p->ctx, (ch_fun)f, arg[0]);
    return ch_parse_check(p, &name, e);
}

static const ch_expr *parse_name(ch_parser *p)
{
    int f = ch_parse_function(p->tok.text, p->tok.len);
    if (f >= 0) return parse_call(p, f);
    ch_token name = p->tok;
    if (ch_parse_advance(p)) return NULL;
    if (p->tok.kind == CH_TOK_LPAREN) {
        ch_parse_fail(p, &name, CH_ERR_MODEL,
                      "'%.*s' is not a function (write '*' to multiply)",
                      (int)name.len, name.text);
        return NULL;
    }
    const ch_expr *e = p->resolve(p->resolve_data, p, &name);
    if (!e && !p->failed)
        ch_parse_fail(p, &name, CH_ERR_MODEL, "cannot use '%.*s' here",
                      (int)name.len, name.text);
    return p->failed ? NULL : e;
}

static const ch_expr *parse_paren(ch_parser *p)
{
    ch_token open = p->tok;
    if (ch_parse_advance(p)) return NULL;
    const ch_expr *e = parse_sum(p);
    if (!e) return NULL;
    return expect_close(p, &open) ? NULL : e;
}

static const ch_expr *parse_primary(ch_parser *p)
{
    ch_token t = p->tok;
    switch (t.kind) {
    case CH_TOK_NUMBER:
        if (ch_parse_advance(p)) return NULL;
        return ch_parse_check(p, &t, ch_num_decimal(p->ctx, t.text, t.len));
    case CH_TOK_IDENT: return parse_name(p);
    case CH_TOK_LPAREN: return parse_paren(p);
    default: {
        char d[96];
        ch_tok_describe(&t, d, sizeof d);
        ch_parse_fail(p, NULL, CH_ERR_MODEL, "expected an expression, found %s",
                      d);
        return NULL;
    }
    }
}

static const ch_expr *parse_power(ch_parser *p)
{
    const ch_expr *base = parse_primary(p);
    if (!base || p->tok.kind != CH_TOK_CARET) return base;
    ch_token op = p->tok;
    if (ch_parse_advance(p)) return NULL;
    const ch_expr *ex = parse_unary(p);
    if (!ex) return NULL;
    return ch_parse_check(p, &op, ch_pow(p->ctx, base, ex));
}

static const ch_expr *parse_unary(ch_parser *p)
{
    if (p->depth >= CH_MAX_NESTING) {
        ch_parse_fail(p, NULL, CH_ERR_LIMIT,
                      "expression nested too deeply (max %d levels)",
                      CH_MAX_NESTING);
        return NULL;
    }
    p->depth++;
    const ch_expr *e;
    ch_token op = p->tok;
    if (op.kind == CH_TOK_MINUS || op.kind == CH_TOK_PLUS) {
        e = ch_parse_advance(p) ? NULL : parse_unary(p);
        if (e && op.kind == CH_TOK_MINUS)
            e = ch_parse_check(p, &op, ch_neg(p->ctx, e));
    } else {
        e = parse_power(p);
    }
    p->depth--;
    return e;
}

/* Builds the n-ary sum or product of the gathered operands. */
static const ch_expr *build(ch_parser *p, const ch_token *at, expr_list *l,
                            int is_sum)
{
    const ch_expr *e = l->n == 1  ? l->v[0]
                       : is_sum ? ch_add_n(p->ctx, l->n, l->v)
                                : ch_mul_n(p->ctx, l->n, l->v);
    return ch_parse_check(p, at, e);
}

static const ch_expr *parse_product(ch_parser *p)
{
    ch_token first = p->tok;
    expr_list l = {NULL, 0, 0};
    const ch_expr *e = parse_unary(p);
    while (e && !list_push(p, &l, e)
           && (p->tok.kind == CH_TOK_STAR || p->tok.kind == CH_TOK_SLASH)) {
        ch_token op = p->tok;
        e = ch_parse_advance(p) ? NULL : parse_unary(p);
        if (e && op.kind == CH_TOK_SLASH)
            e = ch_parse_check(p, &op, ch_div(p->ctx, ch_one(p->ctx), e));
    }
    e = p->failed ? NULL : build(p, &first, &l, 0);
    free(l.v);
    return e;
}

static const ch_expr *parse_sum(ch_parser *p)
{
    ch_token first = p->tok;
    expr_list l = {NULL, 0, 0};
    const ch_expr *e = parse_product(p);
    while (e && !list_push(p, &l, e)
           && (p->tok.kind == CH_TOK_PLUS || p->tok.kind == CH_TOK_MINUS)) {
        ch_token op = p->tok;
        e = ch_parse_advance(p) ? NULL : parse_product(p);
        if (e && op.kind == CH_TOK_MINUS)
            e = ch_parse_check(p, &op, ch_neg(p->ctx, e));
    }
    e = p->failed ? NULL : build(p, &first, &l, 1);
    free(l.v);
    return e;
}

const ch_expr *ch_parse_expr(ch_parser *p)
{
    if (p->failed) return NULL;
    ch_token first = p->tok;
    const ch_expr *e = parse_sum(p);
    if (e && e->depth > CH_MAX_EXPR_DEPTH) {
        ch_parse_fail(p, &first, CH_ERR_LIMIT,
                      "expression too deep (depth %u, max %d): chain fewer "
                      "defines",
                      (unsigned)e->depth, CH_MAX_EXPR_DEPTH);
        return NULL;
    }
    return e;
}
