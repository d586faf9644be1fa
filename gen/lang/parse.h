/* parse.h — expressions of the model language and the token cursor the
 * statement parser (model.c, the only user) walks with.
 *
 * Expressions are built directly as DAG nodes; there is no syntax tree.
 * Grammar, loosest first:
 *   sum     = product { (+|-) product }
 *   product = unary { (*|/) unary }
 *   unary   = (-|+) unary | power
 *   power   = primary [ ^ unary ]     (right-assoc.; -x^2 = -(x^2), 2^-1)
 *   primary = NUMBER | NAME['...] | FUNC ( sum {, sum} ) | ( sum )
 * Sums and products gather their operands and build once with ch_add_n /
 * ch_mul_n, so a long flat sum costs O(n log n), not O(n^2). Recursion goes
 * through `unary` only, which counts depth and stops with a clean error
 * beyond CH_MAX_NESTING, so no input can exhaust the stack.
 *
 * Names (identifiers that are not function names) are handed to a resolver
 * callback: the model decides what a name means in the current statement.
 * Every failure, including a constructor returning NULL (1/0), becomes a
 * positioned error in *err naming the offending token; after the first
 * error the parser stays failed. */
#ifndef CH_PARSE_H
#define CH_PARSE_H

#include "core/expr.h"
#include "lang/lexer.h"

typedef struct ch_parser ch_parser;

/* The value of the name `tok` (an IDENT, primes included), or NULL after
 * reporting an error with ch_parse_fail. */
typedef const ch_expr *(*ch_resolver)(void *data, ch_parser *p,
                                      const ch_token *tok);

struct ch_parser {
    ch_ctx *ctx;
    ch_lexer lx;
    ch_token tok;     /* the current (lookahead) token */
    int depth;        /* current nesting of `unary` */
    int failed;
    ch_error *err;
    ch_resolver resolve;
    void *resolve_data;
};

/* Starts at the first token. Returns 0, or nonzero on a lexical error. */
int ch_parse_init(ch_parser *p, ch_ctx *ctx, const char *file,
                  const char *src, size_t len, ch_error *err);

/* Moves to the next token. 0, or nonzero on a lexical error. */
int ch_parse_advance(ch_parser *p);

/* Records a positioned error at `at` (the current token when NULL) unless
 * one is already recorded; returns -1. */
int ch_parse_fail(ch_parser *p, const ch_token *at, ch_status code,
                  const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;

/* Requires the current token to be of kind k and moves past it; otherwise
 * fails with "expected WHAT, found TOKEN". */
int ch_parse_expect(ch_parser *p, ch_tok_kind k, const char *what);

/* 1 when the current token ends a statement (NEWLINE or EOF). */
int ch_parse_at_end(const ch_parser *p);

/* Requires the end of the statement and moves past it ("unexpected TOKEN
 * at end of statement" otherwise). */
int ch_parse_end_statement(ch_parser *p);

/* Turns a NULL from a constructor into an error at `at` carrying the
 * context's reason, and clears the context error; returns e. */
const ch_expr *ch_parse_check(ch_parser *p, const ch_token *at,
                              const ch_expr *e);

/* Height limit of the DAG of one statement's expression. Nesting in the
 * text is bounded by CH_MAX_NESTING, but a chain of defines stacks any
 * number of levels; every later pass (diff, eval, print, ...) recurses on
 * the height, so it is bounded here, far above what models need. */
#define CH_MAX_EXPR_DEPTH 1000

/* The function called `name` (len bytes): a ch_fun, CH_F_COUNT for sqrt,
 * or -1 when it is not a function name. */
int ch_parse_function(const char *name, size_t len);

/* An expression starting at the current token. NULL on error. */
const ch_expr *ch_parse_expr(ch_parser *p);

#endif
