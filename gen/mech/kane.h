/* kane.h — a Lagrangian written as a weighted sum of squared velocities,
 * L = sum_k mu_k/2 E_k^2 + L0(t, q) with constant mu_k and each E_k
 * linear and homogeneous in the velocities (E_k = a_k . q', e.g. the
 * velocity x_i' of a point given by `define`), and the terms of the
 * equations of motion in that form (Kane's):
 *   M = sum_k mu_k a_k a_k^T,
 *   b = Q - h = F - sum_k mu_k (a_k V(E_k) + E_k g_k),
 * with V = d/dt + q'_j d/dq_j the drift field (V(E_k) = (d a_k/dt) . q'),
 * g_kj = V(a_kj) - dE_k/dq_j (zero where E_k is the derivative of a
 * function of t and q) and F = Q + dL0/dq. The reduced equations need
 * only the projections a_k . B of each term (ch_kkt_reduced_kane): one
 * product a term where M B is a product of n x n and n x m matrices. */
#ifndef CH_KANE_H
#define CH_KANE_H

#include "lang/model.h"

typedef struct {
    size_t n, nb;            /* coordinates, terms */
    const ch_expr **mu;      /* nb weights (free of t, q, q') */
    const ch_expr **E;       /* nb velocities */
    const ch_expr **a;       /* nb * n: dE_k/dq'_j */
    const ch_expr **acc;     /* nb: V(E_k) */
    const ch_expr **g;       /* nb * n: V(a_kj) - dE_k/dq_j */
    const ch_expr **F;       /* n: Q_j + dL0/dq_j */
    const ch_expr *L0;       /* L - sum_k mu_k/2 E_k^2, free of q' */
} ch_kane;

/* Splits m's Lagrangian (Q: the n generalized forces) into Kane's form.
 * Returns 0 with *out filled (context-owned arrays), 1 when the
 * Lagrangian is not of that form, -1 on a context error (a node limit:
 * the callers fall back to the closed forms). Its derivatives are n per
 * term, of terms with up to n velocities, O(n^3) in all, but the closed
 * forms it spares cost more at every size: it was not tried beyond 256
 * coordinates once, and the 400-trailer's hamilton right side took
 * 3 062 249 operations a call instead of 19 228. */
int ch_kane_split(ch_ctx *ctx, const ch_model *m, const ch_expr *const *Q, ch_kane *out);

/* The energy q'.dL/dq' - L from the Kane form: each E_k is homogeneous
 * of degree 1 in q', so q'.dL/dq' = sum mu_k E_k^2 and
 * E = sum mu_k/2 E_k^2 - L0, a sum over the terms (the closed form
 * q'.p - L writes every momentum out: O(n^2) on the n-trailer). NULL on
 * failure. */
const ch_expr *ch_kane_energy(ch_ctx *ctx, const ch_kane *kn);

#endif
