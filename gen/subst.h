/* subst.h — substitution of nodes by expressions.
 *
 * Replaces every occurrence of the nodes from[i] (usually symbols; any node
 * matches by identity) by to[i] and rebuilds with the canonical
 * constructors. Memoized per call. Returns NULL on failure. */
#ifndef CH_SUBST_H
#define CH_SUBST_H

#include "expr.h"

const ch_expr *ch_subst(ch_ctx *ctx, const ch_expr *e, size_t n,
                        const ch_expr *const *from, const ch_expr *const *to);

/* The same substitution applied to many expressions sharing one cache:
 * out[i] = subst(in[i]). Returns 0, or -1 on failure. */
int ch_subst_many(ch_ctx *ctx, size_t count, const ch_expr *const *in,
                  const ch_expr **out, size_t n, const ch_expr *const *from,
                  const ch_expr *const *to);

#endif
