/* expand.h — expansion: products distributed over sums and positive
 * integer powers of sums multiplied out, with the canonical constructors
 * (like terms collected as they meet). */
#ifndef CH_EXPAND_H
#define CH_EXPAND_H

#include "core/expr.h"

/* Memoized in the context. NULL on failure. */
const ch_expr *ch_expand(ch_ctx *ctx, const ch_expr *e);

/* An estimate of the tree size of ch_expand(e) if nothing cancelled, in
 * time linear in the DAG (the expansion itself can take far longer): an
 * expansion whose estimate is many times the size of e will not print
 * shorter unless most of it cancels. */
double ch_expand_size_bound(const ch_expr *e);

#endif
