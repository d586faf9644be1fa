/* chetaev.h — Chetaev reactions and the energy audit (THEORY §2–§3).
 *
 * Reactions R_i = lambda_nu G_nu,i with symbolic multipliers; the energy
 * balance dE/dt = -dL/dt + Q.q_t + lambda.(G q_t) on motions; the degree of
 * homogeneity of each constraint in the velocities, proved by the Euler
 * identity q_t.dphi/dq_t = sigma phi as an identity; and the verdict on
 * energy conservation, decided from the balance itself on the constraint
 * manifold with the true multipliers (homogeneity is a reason, not the
 * verdict). */
#ifndef CH_CHETAEV_H
#define CH_CHETAEV_H

#include "mech/manifold.h"

typedef struct ch_chetaev {
    size_t n, k;
    const ch_expr **R;              /* n: sum_nu lambda_nu G_nu,i */
    const ch_expr *energy_balance;  /* in t, q, q_t, lambda */
    const ch_expr **sigma;          /* k: degree (a NUM node) or NULL */
    int energy_conserved;           /* 1 true, 0 false, -1 unknown */
    const char *energy_reason;      /* one sentence for readers (arena) */
    ch_zero_result energy_test;     /* how the verdict was reached */
} ch_chetaev;

int ch_chetaev_derive(ch_ctx *ctx, const ch_manifold *mf, ch_chetaev *out,
                      ch_error *err);

/* Explicit multipliers lambda(t, q, q_t) of a small system (n <= 4), from
 * lambda = -W^-1 (G M^-1 (Q - h) + c), W = G M^-1 G^T, into *out (k
 * expressions in the arena); *out is NULL for a larger system or where W
 * or M is singular at generic points. A display quantity, derived only
 * when shown. 0, or -1 on failure (context error set). */
int ch_chetaev_explicit_lambda(ch_ctx *ctx, const ch_manifold *mf,
                               const ch_expr ***out);

#endif
