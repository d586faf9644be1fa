/* reduce.h — the reduced form in independent velocities (THEORY §4,
 * seed 001 eq. 9–19).
 *
 * alpha is solved symbolically when the constraints are linear in the
 * dependent velocities (which covers `q' = expr`), or when one
 * constraint is nonlinear in them and, the others (linear) solved for
 * all dependent velocities but one, u, it is quadratic in u,
 * a u^2 + b u + c = 0 with a, b, c free of u: u = -h + s sqrt(h^2 - c/a),
 * h = b/(2a), the sign s that gives the model's initial dependent velocity
 * (the branch of the initial state; guarded, see alpha_guard); otherwise
 * it is implicit:
 * alpha is NULL, the dependent velocity symbols inside reduced quantities
 * stand for alpha(t, q, q_t_r), and the derivatives of alpha come from
 * implicit differentiation, d alpha = -(dphi/dq_t_dep)^-1 dphi. Either way
 * every quantity below is a function of (t, q, q_t_r[, q_t_dep = alpha]),
 * and q_tt_r where noted. k = 0 is allowed: L* = L, m = n, nothing to
 * eliminate (the Hamiltonian side needs that case). */
#ifndef CH_REDUCE_H
#define CH_REDUCE_H

#include "mech/manifold.h"

typedef struct ch_reduced {
    const ch_manifold *mf;
    size_t n, k, m;
    int explicit_alpha;       /* alpha solved symbolically */
    const ch_expr **alpha;    /* k, or NULL when implicit */
    /* A closed form that holds on one branch only (the root of a
     * quadratic, see ch_reduce_derive): nguard expressions that are
     * positive exactly where alpha is that branch's root (the radicand,
     * the square of the leading coefficient); the emitted code fails
     * where one is not (the branch is lost), rather than switch roots. */
    size_t nguard;
    const ch_expr **alpha_guard;
    int quadratic;            /* alpha is such a root */
    const ch_expr **da_dv;    /* k*m: d alpha_nu / d q_t_r */
    const ch_expr **da_dq;    /* k*n: d alpha_nu / d q_j; with explicit alpha
                                 an entry is NULL until reduce.c needs it */
    const ch_expr **da_dt;    /* k: d alpha_nu / d t */
    const ch_expr **qtt_dep;  /* k: dependent accelerations on motions, in q_tt_r */
    const ch_expr *L_star;    /* 001 eq. 13 */
    const ch_expr **p_star;   /* k: dL/dq_t_{m+nu} at q_t_dep = alpha */
    const ch_expr **y_star;   /* m: dL* /dq_t_r (002 eq. 4.10) */
    const ch_expr *E_star;    /* q_t_r dL* /dq_t_r - L* (001 eq. 17) */
    const ch_expr **alpha_bar;/* k: q_t_r d alpha_nu/d q_t_r (001 eq. 19) */
    const ch_expr **B;        /* k*m: d/dt(d alpha/d q_t_r) - X*_r alpha */
    const ch_expr **Q_star;   /* m: Q_r + d alpha_nu/d q_t_r Q_{m+nu} */
    const ch_expr **eqs;      /* m: reduced equations (= 0), contain q_tt_r */
    const ch_expr **M_star;   /* m*m: coefficient of q_tt_s in eqs_r */
    const ch_expr *E_identity;/* E* - E|alpha - sum (alpha_bar - alpha) p* */
    ch_zero_result E_identity_test; /* must be YES: ch_reduce_test_identity */
    /* Memo of ch_reduce_on_motion (arena-owned, filled on use): every
     * reduced quantity is restricted to motions, and they share most of
     * their nodes. */
    struct ch_reduce_memo *memo;
} ch_reduced;

int ch_reduce_derive(ch_ctx *ctx, const ch_manifold *mf, ch_reduced *out,
                     ch_error *err);

/* The n expressions in with the independent accelerations q_tt_r set to
 * zero into out (the part of a quantity affine in them that they do not
 * multiply). 0, or -1 on a context error. */
int ch_reduce_at_rest(ch_ctx *ctx, const ch_reduced *r, size_t n, const ch_expr *const *in,
                      const ch_expr **out);

/* The reduced equations as the linear system that is integrated,
 * M* q_tt_r = f with f = -eqs at q_tt_r = 0 (eqs are affine in q_tt_r):
 * the m*m entries of M* (row-major), then the m of f, into out. 0, or -1
 * on a context error (a node limit, out of memory). */
int ch_reduce_system(ch_ctx *ctx, const ch_reduced *r, const ch_expr **out);

/* Tests E_identity at points of the manifold into E_identity_test. A
 * self-check of the derivation that costs as much as the rest of the
 * reduce stage on large models, so only the outputs that show it run it. */
void ch_reduce_test_identity(ch_ctx *ctx, ch_reduced *r);

/* F restricted to motions: q_t_dep -> alpha (when explicit) and
 * q_tt_dep -> qtt_dep. */
const ch_expr *ch_reduce_on_motion(ch_ctx *ctx, const ch_reduced *r,
                                   const ch_expr *F);

/* Total time derivative along constrained motions of F(t, q, q_t_r):
 * d/dt F on motions, with q_tt_r left as symbols. */
const ch_expr *ch_reduce_dt(ch_ctx *ctx, const ch_reduced *r,
                            const ch_expr *F);

/* X*_r F = dF/dq_r + d alpha_mu/d q_t_r dF/dq_{m+mu} (r indexes indep). */
const ch_expr *ch_reduce_xstar(ch_ctx *ctx, const ch_reduced *r, size_t ri,
                               const ch_expr *F);

#endif
