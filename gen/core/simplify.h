/* simplify.h — the polynomial normal form (expansion: expand.h).
 *
 * The normal form maps an expression to a quotient of polynomials (FLINT
 * fmpq_mpoly) over "atoms": symbols, function calls, non-numeric powers and
 * the q-th roots u^(1/q) of non-polynomial radicals. The numerator is
 * reduced modulo the relations sin(u)^2 + cos(u)^2 = 1,
 * cosh(u)^2 - sinh(u)^2 = 1 and root^q = radicand, whose leading monomials
 * are pairwise coprime, so they form a Groebner basis and the remainder is
 * canonical: an expression is zero in this theory iff its numerator
 * reduces to 0. tan u is sin u / cos u, tanh likewise. */
#ifndef CH_SIMPLIFY_H
#define CH_SIMPLIFY_H

#include "core/expand.h"
#include "core/expr.h"

/* 1: e is proven identically zero by the normal form; 0: not proven
 * (maybe nonzero, maybe beyond the normal form); -1: failure (e.g. the
 * normal form would exceed its size bound, or e has more than 600 DAG
 * nodes and is not tried), treat as "not proven". */
int ch_simplify_is_zero(ch_ctx *ctx, const ch_expr *e);

/* e rewritten as numerator/denominator of its normal form, reduced by the
 * relations above and with the polynomial gcd cancelled. Only for small
 * expressions: it expands. A display rewrite: fails (NULL, CH_ERR_LIMIT)
 * when a polynomial would have more than 4 terms per DAG node of e plus
 * 256, as such a form is never the shorter one. NULL on failure. */
const ch_expr *ch_simplify(ch_ctx *ctx, const ch_expr *e);
/* The same, but only a result of fewer than max_tree nodes as a tree
 * (ch_tree_size): a normal form whose polynomials alone show that many
 * factors fails (NULL, CH_ERR_LIMIT) before it is built. */
const ch_expr *ch_simplify_within(ch_ctx *ctx, const ch_expr *e, size_t max_tree);

/* 1 when x, the expansion ch_expand made of e, is e's normal form: e is
 * a polynomial over the atoms (sums and products with non-negative
 * integer exponents of numbers, symbols and functions other than tan and
 * tanh) and no term of x has a factor cos(u)^k or cosh(u)^k with k >= 2,
 * the leading monomials of the relations. Then ch_simplify(e) is x (a
 * display tidy that has x need not compute it). 0 otherwise, or when
 * unsure (out of memory, x not e's known expansion). */
int ch_normal_form_is_expansion(ch_ctx *ctx, const ch_expr *e, const ch_expr *x);

/* e with sin(u)^2 + cos(u)^2 = 1 and cosh(u)^2 - sinh(u)^2 = 1 applied:
 * its ch_simplify form where e is a sum of at most 64 DAG nodes with a
 * squared sine, cosine or hyperbolic factor and that form is smaller as a
 * tree; e itself otherwise (also when the context has failed; a failure
 * of the normal form is cleared).
 * A derivation rewrite: a Jacobian's entries such as
 * d*sin(th)^2 + d*cos(th)^2 become d before they are divided by and
 * multiplied into everything downstream. Cheap for any other e: the test
 * reads a few levels of the DAG. */
const ch_expr *ch_simplify_trig_squares(ch_ctx *ctx, const ch_expr *e);

/* e, a sum without a constant term, with the number and the factors its
 * terms share taken out: -a*x*y - 2*a*x*z -> -a*x*(y + 2*z) (the
 * number's sign that of the first term); e itself when there are none.
 * A quotient of such sums then cancels in the product: a trailer's
 * G entry -d*(cos(th1)*cos(th2) + sin(th1)*sin(th2)) over its pivot -d.
 * NULL on failure. */
const ch_expr *ch_common_factor(ch_ctx *ctx, const ch_expr *e);

#endif
