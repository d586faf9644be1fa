/* cse.h — common subexpressions: N output expressions as one straight-line
 * C program.
 *
 * Every non-leaf node reachable from the outputs is computed once into a
 * temporary `const double PREFIXk` (symbols and numbers stay inline), in
 * the order the values were created (the lowering's depth-first post-order
 * from the outputs taken in order, then the rewritten values), so the
 * program is topologically sorted and deterministic (it depends only on the
 * outputs and the DAG's canonical order, never on addresses). Lowering rules: integer
 * powers become products with shared intermediate powers (b2 = b*b,
 * b3 = b2*b, b4 = b2*b2), half and third powers go through sqrt/cbrt,
 * negative exponents form one denominator per product (one division), and a
 * denominator that several products share is inverted once and multiplied.
 * sin(a) and cos(a) are distinct DAG nodes, so each is computed once.
 * Algebraic rewriting then lowers the count further (values change only by
 * rounding): common factors are pulled out of sums (greedy multivariate
 * factoring, a*x + a*y -> a*(x + y)), sub-products and partial sums that
 * several products or sums share are computed once (see cse.c).
 * Symbols reach the text only through the caller's namer (ch_c_namer, expr.h). */
#ifndef CH_CSE_H
#define CH_CSE_H

#include <stdint.h>

#include "core/buf.h"
#include "core/expr.h"

typedef struct {
    double add, mul, div, call; /* additions/subtractions, products, divisions, calls */
} ch_opcount;

/* An operand of the program as data: a statement, or a leaf (a symbol,
 * or a number when sym is NULL). */
#define CH_CSE_NONE ((uint32_t)-1)
typedef struct {
    uint32_t stmt;     /* the statement read, or CH_CSE_NONE for a leaf */
    const ch_sym *sym; /* a leaf's symbol; NULL for a number or a statement */
} ch_cse_arg;

/* The program as text and, from ch_cse_build_data, as data (line ... out
 * NULL otherwise). Statement j (j < ntemps) defines TMPj; its line is
 * body.s[line[j] .. line[j+1]); it reads the operands
 * arg[arg_at[j] .. arg_at[j+1]) in the order its text names them; call[j]
 * says whether it calls a function (sin, pow, ...). Output i is ref[i] as
 * text and out[i] as data. Callers that edit the text drop the data first
 * (ch_cse_prog_drop_data): the two then no longer agree. */
typedef struct {
    ch_buf body;       /* "INDENTconst double w3 = ...;\n" lines */
    char **ref;        /* n atomic C expressions (temporary, symbol or number) */
    size_t n;
    size_t ntemps;
    size_t *line, *arg_at;
    ch_cse_arg *arg;
    unsigned char *call;
    ch_cse_arg *out;
    ch_opcount before; /* the outputs as trees (no sharing, naive powers) */
    ch_opcount after;  /* the straight-line program */
} ch_cse_prog;

/* Builds the program. tmp is the temporaries' name stem ("w"; the caller
 * makes sure it cannot clash with the namer's texts), indent the line
 * prefix. Returns 0, or nonzero with err filled (a symbol the namer
 * refuses, node limits, out of memory). */
int ch_cse_build(ch_ctx *ctx, size_t n, const ch_expr *const *outs,
                 ch_c_namer namer, void *data, const char *tmp,
                 const char *indent, ch_cse_prog *out, ch_error *err);
/* ch_cse_build, the program also as data (for reordering its statements:
 * emit_c.c's order_locals). */
int ch_cse_build_data(ch_ctx *ctx, size_t n, const ch_expr *const *outs,
                      ch_c_namer namer, void *data, const char *tmp,
                      const char *indent, ch_cse_prog *out, ch_error *err);
void ch_cse_prog_free(ch_cse_prog *p);
/* Frees the data of p and keeps its text (line ... out become NULL). */
void ch_cse_prog_drop_data(ch_cse_prog *p);
/* Drops p's first `count` outputs (count <= p->n): the rest move to the
 * front, the statements stay. */
void ch_cse_prog_drop_outputs(ch_cse_prog *p, size_t count);

/* Programs already built, handed out again when the same outputs are asked
 * for with the same symbol names, stem and indent (the forms of one model
 * share kernels). One context only (node ids are its own); it must not
 * outlive it. NULL from new when out of memory. */
typedef struct ch_cse_cache ch_cse_cache;
ch_cse_cache *ch_cse_cache_new(void);
void ch_cse_cache_free(ch_cse_cache *c);

/* ch_cse_build through a cache (NULL: none): a program found there is
 * copied into out, a program built is kept there too. The result is the
 * same as ch_cse_build's, context included. */
int ch_cse_build_cached(ch_ctx *ctx, ch_cse_cache *cache, size_t n,
                        const ch_expr *const *outs, ch_c_namer namer, void *data,
                        const char *tmp, const char *indent, ch_cse_prog *out,
                        ch_error *err);

/* A double as a C99 literal, the one way emitted code writes a number:
 * 17 significant digits (a correctly rounded double reads back exactly),
 * ".0" added to an integer so that C never reads it as one, HUGE_VAL with
 * its sign for an infinity, NAN for not a number. */
void ch_c_double(ch_buf *b, double v);

/* *to += *c, by kind. */
void ch_opcount_add(ch_opcount *to, const ch_opcount *c);

/* "a adds, m muls, d divs, c calls" */
void ch_opcount_print(ch_buf *b, const ch_opcount *c);

#endif
