/* diff.h — partial and total time derivatives, memoized in the context.
 *
 * Derivatives are built with the canonical constructors, so they are
 * already simplified at construction level (no 0*x, x^1, ...). Both
 * functions return NULL and set the context error on failure. */
#ifndef CH_DIFF_H
#define CH_DIFF_H

#include "core/expr.h"

/* d e / d sym, sym a symbol node. */
const ch_expr *ch_diff(ch_ctx *ctx, const ch_expr *e, const ch_expr *sym);
/* The same derivative, but the nodes of the top levels (the root, its
 * operands and two levels below them) are memoized for this call only
 * (deeper descendants go to the context's memo): for many derivatives of
 * expressions that are differentiated once by each symbol (the entries of
 * a Jacobian whose rows are long sums of private terms), the context's
 * memo would only grow. The result is the same node as ch_diff's. */
const ch_expr *ch_diff_once(ch_ctx *ctx, const ch_expr *e, const ch_expr *sym);
/* out[i*n + j] = out[j*n + i] = ch_diff_once(e[i], syms[j]) for j >= i,
 * in that order (the mass matrix from the momenta: symmetric, so half the
 * derivatives). The terms of a long e[i] that are alike up to linear forms
 * in syms whose derivatives agree (a chain's bodies: M_ij is a sum of
 * identical terms) are differentiated once per entry, not once each (see
 * diff.c). The calls share two small maps besides the context's memo:
 * products of a cofactor and a derivative, and the entries read from the
 * memo, each read about n times. 0, or -1 on failure (context error
 * set). */
int ch_diff_symmetric(ch_ctx *ctx, size_t n, const ch_expr *const *e,
                      const ch_expr *const *syms, const ch_expr **out);
/* Total time derivative d/dt e = de/dt + sum over symbols s of s.dot * de/ds
 * (THEORY §0): a symbol's derivative is its `dot` (0 when unset). A symbol
 * of order 2 with no dot is an error (third derivatives are not needed). */
const ch_expr *ch_diff_t(ch_ctx *ctx, const ch_expr *e);

/* A derivative along a vector field V = sum_i dirs[i] d/d syms[i] (the
 * dirs are expressions, e.g. X*_r of the reduced form): V e for many e,
 * memoized in the context for the lifetime of the field, so V applied to
 * a DAG costs one visit per node, against one derivative per symbol for
 * the chain rule sum_i dirs[i] de/dsyms[i]. */
typedef struct {
    ch_map *dir;  /* sid + 1 -> component (context-owned) */
    ch_map *memo; /* node id -> V node (context-owned) */
    const ch_symset *set; /* the symbols with a nonzero component */
} ch_diff_dir;

/* 0, or -1 on failure (context error set). */
int ch_diff_dir_init(ch_ctx *ctx, ch_diff_dir *v, size_t n,
                     const ch_expr *const *syms, const ch_expr *const *dirs);
const ch_expr *ch_diff_dir_apply(ch_ctx *ctx, ch_diff_dir *v, const ch_expr *e);

#endif
