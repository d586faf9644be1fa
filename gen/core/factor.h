/* factor.h — common factors out of sums: the same values in fewer
 * products, for straight-line code (codegen) to compute. */
#ifndef CH_FACTOR_H
#define CH_FACTOR_H

#include "core/expr.h"

/* A term c * R * (a + b + ...) with a small sum among its factors is
 * distributed, c*R*a + c*R*b + ..., before the factoring: the sums
 * sin(x - y) = sin x cos y - cos x sin y inside the bias of a chain of
 * constraints hide the factor sin x that every term of a row shares. */
#define CH_FACTOR_DIST_MAX 4

/* Over which small sum (at most 4 terms) among a product's factors
 * ch_factor_sums distributes it. */
typedef enum {
    CH_DIST_NONE,   /* none */
    CH_DIST_ONE,    /* the one small sum, when the product has one only */
    CH_DIST_OLDEST  /* the oldest (the lowest node id) */
} ch_dist;

/* The n expressions with common factors taken out of their sums
 * (greedy multivariate Horner: sum of a*x*b_i + c_j -> a*(x*(sum b_i)) +
 * sum c_j, recursively), the same values in fewer products. With
 * distribute, a term with a small sum among its factors is first
 * multiplied out (c*x*(s*y - t*z) -> c*s*x*y - c*t*x*z), which shows
 * factors the sum hid: whether that pays depends on the model, so the
 * callers try several. A new array in the context, or NULL (a node limit,
 * out of memory: the context's error is cleared and the caller keeps
 * in). */
const ch_expr **ch_factor_sums(ch_ctx *ctx, size_t n, const ch_expr *const *in,
                               ch_dist distribute);

#endif
