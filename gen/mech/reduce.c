/* reduce.c — alpha, L*, E*, alpha_bar, B, M* and the reduced equations
 * (THEORY §4, seed 001 eq. 9–19).
 *
 * Every reduced quantity is a function of (t, q, q_t_r) — with the
 * dependent velocity symbols standing for alpha when alpha is implicit. To
 * treat both cases alike, partial derivatives of such functions go through
 * the chain rule: dF/dq_j on the manifold is dF/dq_j + dF/dq_t_dep
 * dalpha/dq_j (the second term vanishes when alpha was substituted). */
#include "mech/reduce.h"

#include <math.h>
#include <stdlib.h>

#include "core/diff.h"
#include "core/matrix.h"
#include "core/subst.h"

typedef struct {
    ch_ctx *ctx;
    ch_reduced *r;
    const ch_model *m;
    const ch_lagrange *L;
    const ch_expr **vdep, **vind, **adep, **aind; /* k, m, k, m symbols */
} reducer;

static const ch_expr **arr(ch_ctx *ctx, size_t n) { return ch_mat_new(ctx, n, 1); }

/* The two substitutions of ch_reduce_on_motion: before the dependent
 * accelerations are known (v_dep -> alpha only) and after. */
struct ch_reduce_memo {
    ch_subst_memo sub[2];
    int ready[2];
    const ch_expr **vdep; /* k dependent velocity symbols */
    ch_diff_dir *xstar;   /* m fields X*_r (explicit alpha), made on use */
    int *xstar_ready;
    /* which nodes contain a dependent velocity: asked for every entry of
     * alpha, B, ..., which share most of their DAG */
    ch_sym_finder has_vdep;
    int finder_ready;
};

/* v_dep -> alpha (explicit) and a_dep -> qtt_dep (when known). */
const ch_expr *ch_reduce_on_motion(ch_ctx *ctx, const ch_reduced *r,
                                   const ch_expr *F)
{
    const ch_manifold *mf = r->mf;
    size_t k = r->k, n = 0;
    if (!F) return NULL;
    if (!k || (!r->alpha && !r->qtt_dep)) return F;
    int which = r->qtt_dep != NULL;
    struct ch_reduce_memo *memo = r->memo;
    if (memo && memo->ready[which])
        return ch_subst_memo_apply(ctx, &memo->sub[which], F);
    const ch_expr **from = arr(ctx, 2 * k), **to = arr(ctx, 2 * k);
    if (!from || !to) return NULL;
    for (size_t nu = 0; nu < k; nu++) {
        if (r->alpha) {
            from[n] = mf->model->qt[mf->dep[nu]];
            to[n++] = r->alpha[nu];
        }
        if (r->qtt_dep) {
            from[n] = mf->model->qtt[mf->dep[nu]];
            to[n++] = r->qtt_dep[nu];
        }
    }
    if (!memo) return ch_subst(ctx, F, n, from, to);
    if (ch_subst_memo_init(ctx, &memo->sub[which], n, from, to)) return NULL;
    /* The first substitution (v_dep -> alpha) has rebuilt the derivatives
     * of alpha, which the derivatives in B and the reduced equations
     * share; on nodes without dependent accelerations the second one
     * agrees with it and reuses its results instead of rebuilding them. */
    if (which == 1 && memo->ready[0] && r->alpha) {
        const ch_expr **adep = arr(ctx, k);
        if (!adep) return NULL;
        for (size_t nu = 0; nu < k; nu++) adep[nu] = mf->model->qtt[mf->dep[nu]];
        if (ch_subst_memo_inherit(ctx, &memo->sub[1], &memo->sub[0], k, adep))
            return NULL;
    }
    memo->ready[which] = 1;
    return ch_subst_memo_apply(ctx, &memo->sub[which], F);
}

const ch_expr *ch_reduce_dt(ch_ctx *ctx, const ch_reduced *r, const ch_expr *F)
{
    return ch_reduce_on_motion(ctx, r, ch_diff_t(ctx, F));
}

/* d alpha_nu / d q_j: with explicit alpha computed on first use (only a
 * few of the k*n entries are ever needed, each a derivative of a large
 * DAG); with implicit alpha solved for in advance. */
static const ch_expr *da_dq(ch_ctx *ctx, const ch_reduced *r, size_t nu,
                            size_t j)
{
    const ch_expr **slot = &r->da_dq[nu * r->n + j];
    if (!*slot && r->alpha) *slot = ch_diff(ctx, r->alpha[nu], r->mf->model->q[j]);
    return *slot;
}

/* Does F contain a dependent velocity symbol? */
static int has_vdep(const ch_reduced *r, const ch_expr *F)
{
    /* not known, or a failed search (out of memory): the general path */
    if (!r->memo || !r->memo->finder_ready) return r->k > 0;
    return r->k && ch_sym_finder_has(r->mf->ctx, &r->memo->has_vdep, F) != 0;
}

/* dF/dx on the manifold: dF/dx + sum_nu dF/dq_t_dep_nu * dalpha_nu/dx, for
 * x = q_j (vel 0) or x = the independent velocity j (vel 1). */
static const ch_expr *chain(ch_ctx *ctx, const ch_reduced *r, const ch_expr *F,
                            size_t j, int vel)
{
    const ch_manifold *mf = r->mf;
    const ch_expr *x = vel ? mf->model->qt[mf->indep[j]] : mf->model->q[j];
    if (!r->memo || !has_vdep(r, F)) return ch_diff(ctx, F, x);
    const ch_expr **terms = arr(ctx, r->k + 1);
    if (!terms) return NULL;
    terms[0] = ch_diff(ctx, F, x);
    for (size_t nu = 0; nu < r->k; nu++) {
        const ch_expr *d = ch_diff(ctx, F, mf->model->qt[mf->dep[nu]]);
        terms[nu + 1] = ch_is_zero(d) ? d
                      : ch_mul(ctx, d, vel ? r->da_dv[nu * r->m + j] : da_dq(ctx, r, nu, j));
    }
    return ch_add_n(ctx, r->k + 1, terms);
}

static const ch_expr *rdiff_q(ch_ctx *ctx, const ch_reduced *r,
                              const ch_expr *F, size_t j)
{
    return chain(ctx, r, F, j, 0);
}

static const ch_expr *rdiff_v(ch_ctx *ctx, const ch_reduced *r,
                              const ch_expr *F, size_t ri)
{
    return chain(ctx, r, F, ri, 1);
}

/* The vector field X*_r = d/dq_r + dalpha_mu/dq_t_r d/dq_dep_mu. */
static ch_diff_dir *xstar_field(ch_ctx *ctx, const ch_reduced *r, size_t ri)
{
    struct ch_reduce_memo *memo = r->memo;
    if (memo->xstar_ready[ri]) return &memo->xstar[ri];
    const ch_manifold *mf = r->mf;
    const ch_expr **syms = arr(ctx, r->k + 1), **dirs = arr(ctx, r->k + 1);
    if (!syms || !dirs) return NULL;
    syms[0] = mf->model->q[mf->indep[ri]];
    dirs[0] = ch_one(ctx);
    for (size_t mu = 0; mu < r->k; mu++) {
        syms[mu + 1] = mf->model->q[mf->dep[mu]];
        dirs[mu + 1] = r->da_dv[mu * r->m + ri];
    }
    if (ch_diff_dir_init(ctx, &memo->xstar[ri], r->k + 1, syms, dirs)) return NULL;
    memo->xstar_ready[ri] = 1;
    return &memo->xstar[ri];
}

const ch_expr *ch_reduce_xstar(ch_ctx *ctx, const ch_reduced *r, size_t ri,
                               const ch_expr *F)
{
    const ch_manifold *mf = r->mf;
    if (!F) return NULL;
    /* explicit alpha and F a function of (t, q, q_t_r): X*_r F is the
     * derivative along the field, one visit per node of F */
    if (r->memo && r->alpha && !has_vdep(r, F)) {
        ch_diff_dir *v = xstar_field(ctx, r, ri);
        return v ? ch_diff_dir_apply(ctx, v, F) : NULL;
    }
    const ch_expr **terms = arr(ctx, r->k + 1);
    if (!terms) return NULL;
    terms[0] = rdiff_q(ctx, r, F, (size_t)mf->indep[ri]);
    for (size_t mu = 0; mu < r->k; mu++)
        terms[mu + 1] = ch_mul(ctx, r->da_dv[mu * r->m + ri],
                               rdiff_q(ctx, r, F, (size_t)mf->dep[mu]));
    return ch_add_n(ctx, r->k + 1, terms);
}

/* ch_mat_solve with pivots that do not vanish at the model's initial
 * state (ch_manifold_initial_point). */
static int solve_at(reducer *s, size_t k, const ch_expr *const *A, size_t nrhs,
                    const ch_expr *const *B, const ch_expr **X)
{
    double *at = ch_manifold_initial_point(s->r->mf);
    int rc = ch_mat_solve_at(s->ctx, k, A, nrhs, B, X, at);
    free(at);
    return rc;
}

/* ch_mat_solve_triangular (a triangular block's pivots are forced; for
 * the dependent block ch_manifold_init has checked them at the initial
 * state), else solve_at. */
static int solve_lin(reducer *s, size_t k, const ch_expr *const *A, size_t nrhs,
                     const ch_expr *const *B, const ch_expr **X)
{
    int rc = ch_mat_solve_triangular(s->ctx, k, A, nrhs, B, X);
    return rc == 1 ? solve_at(s, k, A, nrhs, B, X) : rc;
}

/* alpha when every constraint is linear in the dependent velocities:
 * A v_dep = -phi|_{v_dep = 0} with A the dependent block of G. */
static int solve_alpha(reducer *s, const ch_expr **A)
{
    ch_ctx *ctx = s->ctx;
    ch_reduced *r = s->r;
    size_t k = r->k;
    const ch_expr **zeros = arr(ctx, k), **rhs = arr(ctx, k);
    if (!zeros || !rhs) return -1;
    for (size_t nu = 0; nu < k; nu++) zeros[nu] = ch_zero(ctx);
    for (size_t nu = 0; nu < k; nu++)
        rhs[nu] = ch_neg(ctx, ch_subst(ctx, s->L->phi[nu], k, s->vdep, zeros));
    r->alpha = arr(ctx, k);
    if (!r->alpha) return -1;
    return solve_lin(s, k, A, 1, rhs, r->alpha);
}

/* Degree of e as a polynomial in the symbol u, read off its structure:
 * sums, and products whose factors holding u have nonnegative integer
 * exponents; -1 when u occurs elsewhere (inside a function, under a
 * fractional or negative power, as an exponent), -2 on failure. Degrees
 * above 64 count as not polynomial. memo: node id -> degree + 3. */
static int poly_degree(const ch_expr *e, const ch_expr *u, ch_map *memo)
{
    if (!ch_has_sym(e, u)) return 0;
    if (e->kind == CH_SYM) return 1;
    if (e->kind != CH_ADD && e->kind != CH_MUL) return -1;
    uintptr_t seen = (uintptr_t)ch_map_get(memo, e->id);
    if (seen) return (int)seen - 3;
    int deg = 0;
    for (uint32_t i = 0; i < e->n && deg >= 0; i++) {
        int d = poly_degree(e->pair[i].e, u, memo);
        if (d < 0) {
            deg = d;
        } else if (e->kind == CH_ADD) {
            if (d > deg) deg = d;
        } else if (d > 0) {
            const fmpq *c = e->pair[i].c;
            if (!fmpz_is_one(fmpq_denref(c)) || fmpz_sgn(fmpq_numref(c)) < 0
                || fmpz_cmp_si(fmpq_numref(c), 64) > 0)
                deg = -1;
            else
                deg += d * (int)fmpz_get_si(fmpq_numref(c));
        }
        if (deg > 64) deg = -1;
    }
    if (ch_map_put(memo, e->id, (void *)(uintptr_t)(deg + 3))) return -2;
    return deg;
}

/* Row q of the constraints (the one nonlinear in the dependent
 * velocities) quadratic in u = vdep[j] once the other k - 1 rows, linear,
 * give the other dependent velocities as w(u) (affine in u):
 * P(u) = phi_q(u, w(u)) = a u^2 + b u + c with a, b, c free of u
 * (poly_degree 2). Then alpha_j = -h + s sqrt(R), h = b/(2a),
 * R = h^2 - c/a, on the branch s of the initial state: the root nearest
 * the initial dependent velocity (mf->v0, the root Newton found from the
 * `initial` value; a tie, both roots equally far, takes s = +1), and the
 * others w(alpha_j). Guards R > 0 and a^2 > 0 (where they are not
 * numbers). 0, 1 when that is not so for this j or a is 0 (or alpha not
 * finite) at the initial state, -1 on failure. */
static int quadratic_in(reducer *s, const ch_expr *const *A, size_t q, size_t j)
{
    ch_ctx *ctx = s->ctx;
    ch_reduced *r = s->r;
    const ch_manifold *mf = r->mf;
    size_t k = r->k, kl = k - 1;
    const ch_expr *u = s->vdep[j], *zero = ch_zero(ctx);
    const ch_expr **AL = arr(ctx, kl * kl), **BL = arr(ctx, kl), **W = arr(ctx, kl);
    const ch_expr **from = arr(ctx, kl), **zeros = arr(ctx, k);
    if (!AL || !BL || !W || !from || !zeros) return -1;
    for (size_t mu = 0; mu < k; mu++) zeros[mu] = zero;
    /* the linear rows, for the unknowns other than u */
    for (size_t nu = 0, i = 0; nu < k; nu++) {
        if (nu == q) continue;
        for (size_t mu = 0, c = 0; mu < k; mu++)
            if (mu != j) AL[i * kl + c++] = A[nu * k + mu];
        BL[i++] = ch_neg(ctx, ch_add(ctx, ch_subst(ctx, s->L->phi[nu], k, s->vdep, zeros),
                                     ch_mul(ctx, A[nu * k + j], u)));
    }
    for (size_t mu = 0, c = 0; mu < k; mu++)
        if (mu != j) from[c++] = s->vdep[mu];
    for (size_t i = 0; i < kl; i++)
        if (!BL[i]) return -1;
    if (kl) {
        int rc = solve_lin(s, kl, AL, 1, BL, W);
        if (rc) return rc;
    }
    const ch_expr *P = kl ? ch_subst(ctx, s->L->phi[q], kl, from, W) : s->L->phi[q];
    if (!P) return -1;
    ch_map memo;
    ch_map_init(&memo);
    int deg = poly_degree(P, u, &memo);
    ch_map_free(&memo);
    if (deg == -2) return -1;
    if (deg != 2) return 1;
    const ch_expr *d1 = ch_diff(ctx, P, u);
    const ch_expr *c = ch_subst(ctx, P, 1, &u, &zero);
    const ch_expr *b = d1 ? ch_subst(ctx, d1, 1, &u, &zero) : NULL;
    const ch_expr *a = d1 ? ch_div(ctx, ch_diff(ctx, d1, u), ch_num_si(ctx, 2)) : NULL;
    if (!a || !b || !c) return -1;
    if (ch_has_sym(a, u) || ch_has_sym(b, u) || ch_has_sym(c, u)) return 1;
    const ch_expr *h = ch_div(ctx, b, ch_scale_si(ctx, 2, a));
    const ch_expr *R = ch_sub(ctx, ch_mul(ctx, h, h), ch_div(ctx, c, a));
    const ch_expr *sq = ch_sqrt(ctx, R);
    if (!h || !R || !sq) return -1;
    /* the branch at the initial state */
    double *at = ch_manifold_initial_point(mf);
    double av = at ? ch_eval_d(ctx, a, at) : NAN;
    double hv = at ? ch_eval_d(ctx, h, at) : NAN, Rv = at ? ch_eval_d(ctx, R, at) : NAN;
    int sign = 1;
    if (at && Rv >= 0 && isfinite(Rv)) {
        double target = mf->v0[mf->dep[j]];
        double plus = -hv + sqrt(Rv), minus = -hv - sqrt(Rv);
        sign = fabs(minus - target) < fabs(plus - target) ? -1 : 1;
    }
    const ch_expr **alpha = arr(ctx, k), **guard = arr(ctx, 2);
    int rc = -1;
    if (!alpha || !guard) goto out;
    rc = 1;
    if (at && !(fabs(av) > 0 && isfinite(hv))) goto out; /* no closed form there */
    rc = -1;
    alpha[j] = ch_add(ctx, ch_neg(ctx, h), sign > 0 ? sq : ch_neg(ctx, sq));
    if (!alpha[j]) goto out;
    for (size_t mu = 0, i = 0; mu < k; mu++)
        if (mu != j && !(alpha[mu] = ch_subst(ctx, W[i++], 1, &u, &alpha[j]))) goto out;
    /* w(alpha_j) finite there (kl > 0: the linear block regular there) */
    rc = 1;
    for (size_t mu = 0; at && Rv >= 0 && mu < k; mu++)
        if (!isfinite(ch_eval_d(ctx, alpha[mu], at))) goto out;
    r->nguard = 0;
    if (!ch_is_num(R)) guard[r->nguard++] = R;
    if (!ch_is_num(a)) guard[r->nguard++] = ch_mul(ctx, a, a);
    rc = -1;
    for (size_t i = 0; i < r->nguard; i++)
        if (!guard[i]) goto out;
    r->alpha = alpha;
    r->alpha_guard = guard;
    r->quadratic = 1;
    rc = 0;
out:
    free(at);
    return rc;
}

/* alpha in closed form when exactly one constraint (row q of the
 * dependent block A) is nonlinear in the dependent velocities and
 * quadratic in one of them once the linear rows are solved for the
 * others (quadratic_in, trying the dependent velocities in order). 0, 1
 * when there is no such closed form, -1 on failure. */
static int solve_quadratic(reducer *s, const ch_expr *const *A)
{
    ch_reduced *r = s->r;
    size_t k = r->k, q = k, nonlinear = 0;
    for (size_t nu = 0; nu < k; nu++) {
        int has = 0;
        for (size_t mu = 0; mu < k; mu++)
            has |= ch_sym_finder_has(s->ctx, &r->memo->has_vdep, A[nu * k + mu]) != 0;
        if (has) {
            q = nu;
            nonlinear++;
        }
    }
    if (nonlinear != 1) return 1;
    for (size_t j = 0; j < k; j++) {
        int rc = quadratic_in(s, A, q, j);
        if (rc <= 0) return rc;
    }
    return 1;
}

/* Derivatives of alpha: directly when explicit, else by implicit
 * differentiation A dalpha = -dphi. */
static int alpha_derivatives(reducer *s, const ch_expr **A)
{
    ch_ctx *ctx = s->ctx;
    ch_reduced *r = s->r;
    size_t k = r->k, m = r->m, n = r->n;
    r->da_dv = arr(ctx, k * m);
    r->da_dq = arr(ctx, k * n);
    r->da_dt = arr(ctx, k);
    if (!r->da_dv || !r->da_dq || !r->da_dt) return -1;
    if (r->explicit_alpha) { /* da_dq: on use */
        for (size_t nu = 0; nu < k; nu++) {
            for (size_t ri = 0; ri < m; ri++)
                r->da_dv[nu * m + ri] = ch_diff(ctx, r->alpha[nu], s->vind[ri]);
            r->da_dt[nu] = ch_diff(ctx, r->alpha[nu], s->m->t);
        }
        return 0;
    }
    const ch_expr **rhs = arr(ctx, k * (m + n + 1)), **sol = arr(ctx, k * (m + n + 1));
    if (!rhs || !sol) return -1;
    size_t w = m + n + 1;
    for (size_t nu = 0; nu < k; nu++) {
        const ch_expr *phi = s->L->phi[nu];
        for (size_t ri = 0; ri < m; ri++)
            rhs[nu * w + ri] = ch_neg(ctx, ch_diff(ctx, phi, s->vind[ri]));
        for (size_t j = 0; j < n; j++)
            rhs[nu * w + m + j] = ch_neg(ctx, ch_diff(ctx, phi, s->m->q[j]));
        rhs[nu * w + m + n] = ch_neg(ctx, ch_diff(ctx, phi, s->m->t));
    }
    int rc = solve_lin(s, k, A, w, rhs, sol);
    if (rc) return rc;
    for (size_t nu = 0; nu < k; nu++) {
        for (size_t ri = 0; ri < m; ri++) r->da_dv[nu * m + ri] = sol[nu * w + ri];
        for (size_t j = 0; j < n; j++) r->da_dq[nu * n + j] = sol[nu * w + m + j];
        r->da_dt[nu] = sol[nu * w + m + n];
    }
    return 0;
}

/* Dependent accelerations on motions: d/dt alpha, i.e.
 * dalpha/dt + dalpha/dq_j q_t_j + dalpha/dq_t_r q_tt_r with q_t_dep = alpha. */
static int dependent_accelerations(reducer *s)
{
    ch_ctx *ctx = s->ctx;
    ch_reduced *r = s->r;
    size_t k = r->k, m = r->m, n = r->n;
    const ch_expr **terms = arr(ctx, 1 + n + m);
    r->qtt_dep = arr(ctx, k);
    if (!terms || !r->qtt_dep) return -1;
    /* explicit alpha(t, q, q_t_r): the sum below is its total time
     * derivative, which costs one visit per node of alpha */
    for (size_t nu = 0; nu < k && r->alpha; nu++) r->qtt_dep[nu] = ch_diff_t(ctx, r->alpha[nu]);
    for (size_t nu = 0; nu < k && !r->alpha; nu++) {
        size_t nt = 0;
        terms[nt++] = r->da_dt[nu];
        for (size_t j = 0; j < n; j++)
            terms[nt++] = ch_mul(ctx, r->da_dq[nu * n + j], s->m->qt[j]);
        for (size_t ri = 0; ri < m; ri++)
            terms[nt++] = ch_mul(ctx, r->da_dv[nu * m + ri], s->aind[ri]);
        r->qtt_dep[nu] = ch_add_n(ctx, nt, terms);
    }
    /* velocities of dependent coordinates inside are alpha on motions */
    const ch_expr **saved = r->qtt_dep;
    r->qtt_dep = NULL;
    for (size_t nu = 0; nu < k; nu++)
        saved[nu] = ch_reduce_on_motion(ctx, r, saved[nu]);
    r->qtt_dep = saved;
    return 0;
}

/* L*, p*, y*, E*, alpha_bar and the identity of 001 eq. 18. */
static int energies(reducer *s)
{
    ch_ctx *ctx = s->ctx;
    ch_reduced *r = s->r;
    size_t k = r->k, m = r->m;
    r->L_star = ch_reduce_on_motion(ctx, r, s->m->lagrangian);
    r->p_star = arr(ctx, k);
    r->y_star = arr(ctx, m);
    r->alpha_bar = arr(ctx, k);
    const ch_expr **terms = arr(ctx, m + k + 2);
    if (!r->L_star || !r->p_star || !r->y_star || !r->alpha_bar || !terms) return -1;
    for (size_t nu = 0; nu < k; nu++)
        r->p_star[nu] = ch_reduce_on_motion(ctx, r, s->L->p[s->r->mf->dep[nu]]);
    for (size_t ri = 0; ri < m; ri++) {
        r->y_star[ri] = rdiff_v(ctx, r, r->L_star, ri);
        terms[ri] = ch_mul(ctx, s->vind[ri], r->y_star[ri]);
    }
    terms[m] = ch_neg(ctx, r->L_star);
    r->E_star = ch_add_n(ctx, m + 1, terms);
    for (size_t nu = 0; nu < k; nu++) {
        for (size_t ri = 0; ri < m; ri++)
            terms[ri] = ch_mul(ctx, s->vind[ri], r->da_dv[nu * m + ri]);
        r->alpha_bar[nu] = ch_add_n(ctx, m, terms);
    }
    /* E* - E|alpha - sum (alpha_bar - alpha) p* */
    terms[0] = r->E_star;
    terms[1] = ch_neg(ctx, ch_reduce_on_motion(ctx, r, s->L->energy));
    for (size_t nu = 0; nu < k; nu++) {
        const ch_expr *a = r->alpha ? r->alpha[nu] : s->vdep[nu];
        terms[2 + nu] = ch_neg(ctx, ch_mul(ctx, ch_sub(ctx, r->alpha_bar[nu], a),
                                           r->p_star[nu]));
    }
    r->E_identity = ch_add_n(ctx, k + 2, terms);
    return r->E_star && r->E_identity ? 0 : -1;
}

/* B, Q*, the reduced equations and M*. */
static int equations(reducer *s)
{
    ch_ctx *ctx = s->ctx;
    ch_reduced *r = s->r;
    size_t k = r->k, m = r->m, n = r->n;
    const ch_manifold *mf = r->mf;
    r->B = arr(ctx, k * m);
    r->Q_star = arr(ctx, m);
    r->eqs = arr(ctx, m);
    r->M_star = arr(ctx, m * m);
    const ch_expr **terms = arr(ctx, 2 * k + 3);
    if (!r->B || !r->Q_star || !r->eqs || !r->M_star || !terms) return -1;
    for (size_t nu = 0; nu < k; nu++)
        for (size_t ri = 0; ri < m; ri++) {
            /* X*_r alpha_nu = dalpha/dq_r + dalpha_mu/dq_t_r dalpha_nu/dq_dep_mu */
            const ch_expr *xa;
            if (r->alpha) {
                xa = ch_reduce_xstar(ctx, r, ri, r->alpha[nu]);
            } else {
                terms[0] = r->da_dq[nu * n + mf->indep[ri]];
                for (size_t mu = 0; mu < k; mu++)
                    terms[mu + 1] = ch_mul(ctx, r->da_dv[mu * m + ri],
                                           r->da_dq[nu * n + mf->dep[mu]]);
                xa = ch_add_n(ctx, k + 1, terms);
            }
            r->B[nu * m + ri] = ch_sub(ctx, ch_reduce_dt(ctx, r, r->da_dv[nu * m + ri]), xa);
        }
    for (size_t ri = 0; ri < m; ri++) {
        terms[0] = ch_reduce_on_motion(ctx, r, s->L->Q[mf->indep[ri]]);
        for (size_t nu = 0; nu < k; nu++)
            terms[nu + 1] = ch_mul(ctx, r->da_dv[nu * m + ri],
                                   ch_reduce_on_motion(ctx, r, s->L->Q[mf->dep[nu]]));
        r->Q_star[ri] = ch_add_n(ctx, k + 1, terms);
        size_t nt = 0;
        terms[nt++] = ch_reduce_dt(ctx, r, r->y_star[ri]);
        terms[nt++] = ch_neg(ctx, ch_reduce_xstar(ctx, r, ri, r->L_star));
        for (size_t nu = 0; nu < k; nu++)
            terms[nt++] = ch_neg(ctx, ch_mul(ctx, r->p_star[nu], r->B[nu * m + ri]));
        terms[nt++] = ch_neg(ctx, r->Q_star[ri]);
        if (!(r->eqs[ri] = ch_add_n(ctx, nt, terms))) return -1;
    }
    for (size_t ri = 0; ri < m; ri++)
        for (size_t si = 0; si < m; si++)
            if (!(r->M_star[ri * m + si] = ch_diff(ctx, r->eqs[ri], s->aind[si])))
                return -1;
    return 0;
}

static int setup(reducer *s, ch_ctx *ctx, const ch_manifold *mf, ch_reduced *r)
{
    s->ctx = ctx;
    s->r = r;
    s->m = mf->model;
    s->L = mf->lag;
    r->mf = mf;
    r->n = mf->n;
    r->k = mf->k;
    r->m = mf->m;
    r->memo = ch_ctx_alloc(ctx, sizeof *r->memo);
    if (!r->memo) return -1;
    r->memo->xstar = ch_ctx_alloc(ctx, (r->m + 1) * sizeof *r->memo->xstar);
    r->memo->xstar_ready = ch_ctx_alloc(ctx, (r->m + 1) * sizeof *r->memo->xstar_ready);
    s->vdep = r->memo->vdep = arr(ctx, r->k);
    s->adep = arr(ctx, r->k);
    s->vind = arr(ctx, r->m);
    s->aind = arr(ctx, r->m);
    if (!r->memo->xstar || !r->memo->xstar_ready || !s->vdep || !s->adep
        || !s->vind || !s->aind)
        return -1;
    for (size_t nu = 0; nu < r->k; nu++) {
        s->vdep[nu] = s->m->qt[mf->dep[nu]];
        s->adep[nu] = s->m->qtt[mf->dep[nu]];
    }
    for (size_t ri = 0; ri < r->m; ri++) {
        s->vind[ri] = s->m->qt[mf->indep[ri]];
        s->aind[ri] = s->m->qtt[mf->indep[ri]];
    }
    if (ch_sym_finder_init(ctx, &r->memo->has_vdep, r->k, s->vdep)) return -1;
    r->memo->finder_ready = 1;
    return 0;
}

int ch_reduce_at_rest(ch_ctx *ctx, const ch_reduced *r, size_t n, const ch_expr *const *in,
                      const ch_expr **out)
{
    size_t m = r->m;
    const ch_expr **from = malloc((m + 1) * sizeof *from), **to = malloc((m + 1) * sizeof *to);
    int rc = -1;
    if (!from || !to) {
        ch_ctx_fail(ctx, CH_ERR_MEMORY, "out of memory");
    } else {
        for (size_t i = 0; i < m; i++) {
            from[i] = r->mf->model->qtt[r->mf->indep[i]];
            to[i] = ch_zero(ctx);
        }
        rc = ch_subst_many(ctx, n, in, out, m, from, to) ? -1 : 0;
    }
    free(from);
    free(to);
    return rc;
}

int ch_reduce_system(ch_ctx *ctx, const ch_reduced *r, const ch_expr **out)
{
    size_t m = r->m;
    for (size_t j = 0; j < m * m; j++) out[j] = r->M_star[j];
    if (ch_reduce_at_rest(ctx, r, m, r->eqs, out + m * m)) return -1;
    for (size_t i = 0; i < m; i++)
        if (!(out[m * m + i] = ch_neg(ctx, out[m * m + i]))) return -1;
    return 0;
}

/* The energy identity holds on the constraint manifold; it involves the
 * accelerations or multipliers only through implicit alpha, if at all. */
void ch_reduce_test_identity(ch_ctx *ctx, ch_reduced *r)
{
    const ch_expr *e = r->E_identity;
    ch_manifold_probe probe = {r->mf, e};
    int kkt = ch_has_sym_kind(e, CH_SYM_ACC) || ch_has_any_sym(e, r->k, r->mf->lambda);
    r->E_identity_test = ch_zero_test(ctx, e,
                                      kkt ? ch_manifold_sample : ch_manifold_sample_state,
                                      kkt ? (void *)r->mf : &probe, 8);
}

/* ch_manifold_init has checked the block numerically; this is the
 * symbolic solve's own verdict, positioned at the `dependent` statement. */
static int singular_block(const ch_model *m, ch_pos pos, ch_error *err)
{
    if (m->ndep) pos = m->dependent_pos;
    return ch_error_set(err, CH_ERR_MODEL, m->file, pos.line, pos.col,
                        "bad `dependent` choice: the constraint block of the "
                        "dependent velocities is identically singular");
}

int ch_reduce_derive(ch_ctx *ctx, const ch_manifold *mf, ch_reduced *out,
                     ch_error *err)
{
    ch_reduced r = {0};
    reducer s;
    const ch_model *m = mf->model;
    ch_pos pos = m->k ? m->constraint_pos[0] : m->lagrangian_pos;
    if (setup(&s, ctx, mf, &r)) goto fail;
    size_t k = r.k;
    const ch_expr **A = arr(ctx, k * k);
    if (!A) goto fail;
    int linear = 1;
    for (size_t nu = 0; nu < k; nu++)
        for (size_t mu = 0; mu < k; mu++) {
            A[nu * k + mu] = s.L->G[nu * r.n + mf->dep[mu]];
            linear &= ch_sym_finder_has(ctx, &r.memo->has_vdep, A[nu * k + mu]) == 0;
        }
    if (k && linear) {
        int rc = solve_alpha(&s, A);
        if (rc < 0) goto fail;
        if (rc > 0) return singular_block(m, pos, err);
    }
    int quadratic = 0;
    if (k && !linear) {
        int rc = solve_quadratic(&s, A);
        if (rc < 0) goto fail;
        quadratic = rc == 0;
    }
    r.explicit_alpha = k == 0 || linear || quadratic;
    if (!r.explicit_alpha) r.alpha = NULL;
    int rc = alpha_derivatives(&s, A);
    if (rc > 0) return singular_block(m, pos, err);
    if (rc < 0 || dependent_accelerations(&s) || energies(&s) || equations(&s))
        goto fail;
    r.E_identity_test.verdict = CH_ZERO_UNKNOWN;
    *out = r;
    return 0;
fail:
    return ch_ctx_report(ctx, err, m->file, pos.line, pos.col, "reduced form: ", 1);
}
