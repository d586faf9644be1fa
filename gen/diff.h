/* diff.h — partial and total time derivatives, memoized in the context.
 *
 * Derivatives are built with the canonical constructors, so they are
 * already simplified at construction level (no 0*x, x^1, ...). Both
 * functions return NULL and set the context error on failure. */
#ifndef CH_DIFF_H
#define CH_DIFF_H

#include "expr.h"

/* d e / d sym, sym a symbol node. */
const ch_expr *ch_diff(ch_ctx *ctx, const ch_expr *e, const ch_expr *sym);
/* Total time derivative d/dt e = de/dt + sum over symbols s of s.dot * de/ds
 * (THEORY §0): a symbol's derivative is its `dot` (0 when unset). A symbol
 * of order 2 with no dot is an error (third derivatives are not needed). */
const ch_expr *ch_diff_t(ch_ctx *ctx, const ch_expr *e);

#endif
