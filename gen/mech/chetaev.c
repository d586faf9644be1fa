/* chetaev.c — reactions, energy balance, homogeneity degrees, the energy
 * verdict and small explicit multipliers (THEORY §2–§3, §7).
 *
 * The verdict comes from the balance -dL/dt + Q.q_t + lambda.(G q_t)
 * evaluated on the constraint manifold with the true multipliers
 * (ch_manifold_sample). Homogeneity is only a sufficient reason: when it
 * applies (all constraints homogeneous, L free of t, Q.q_t == 0) it is
 * reported as the reason, and the manifold test must agree; a
 * disagreement is an internal error, never silently resolved. */
#include "chetaev.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdarg.h>
#include <string.h>

#include "../buf.h"
#include "../diff.h"
#include "../matrix.h"
#include "../simplify.h"

#define ZERO_POINTS 8
/* Generic points tried for the ratio q_t.dphi/dq_t / phi. */
#define RATIO_POINTS 16
/* Largest denominator and numerator of a homogeneity degree. */
#define SIGMA_MAX_DEN 12
#define SIGMA_MAX_NUM 1000
/* Explicit multipliers only for small systems, and simplified only when
 * small (ch_simplify expands). */
#define LAMBDA_EXPLICIT_MAX_N 4
#define SIMPLIFY_MAX_NODES 400

static int ctx_failed(ch_ctx *ctx, ch_error *err, const ch_model *m, ch_pos pos)
{
    const ch_error *e = ch_ctx_error(ctx);
    ch_status code = e->code == CH_OK ? CH_ERR_MEMORY : e->code;
    if (code == CH_ERR_MATH) code = CH_ERR_MODEL;
    return ch_error_set(err, code, m->file, pos.line, pos.col, "%s",
                        e->code == CH_OK ? "out of memory" : e->msg);
}

/* ======================================================================
 * reactions and the balance
 * ====================================================================== */

/* R_i = sum_nu lambda_nu G_nu,i; power_nu = sum_i G_nu,i q_t_i. */
static int reactions(ch_ctx *ctx, const ch_manifold *mf, const ch_expr **R,
                     const ch_expr **power)
{
    size_t n = mf->n, k = mf->k;
    const ch_lagrange *L = mf->lag;
    const ch_expr **t = malloc((n + k + 1) * sizeof *t);
    if (!t) return -1;
    int rc = 0;
    for (size_t i = 0; i < n; i++) {
        for (size_t a = 0; a < k; a++) t[a] = ch_mul(ctx, mf->lambda[a], L->G[a * n + i]);
        if (!(R[i] = k ? ch_add_n(ctx, k, t) : ch_zero(ctx))) rc = -1;
    }
    for (size_t a = 0; a < k; a++) {
        for (size_t i = 0; i < n; i++) t[i] = ch_mul(ctx, L->G[a * n + i], mf->model->qt[i]);
        if (!(power[a] = ch_add_n(ctx, n, t))) rc = -1;
    }
    free(t);
    return rc;
}

/* Q.q_t */
static const ch_expr *force_power(ch_ctx *ctx, const ch_manifold *mf)
{
    const ch_expr **t = malloc((mf->n + 1) * sizeof *t);
    if (!t) return NULL;
    for (size_t i = 0; i < mf->n; i++) t[i] = ch_mul(ctx, mf->lag->Q[i], mf->model->qt[i]);
    const ch_expr *r = ch_add_n(ctx, mf->n, t);
    free(t);
    return r;
}

/* ======================================================================
 * homogeneity degrees
 * ====================================================================== */


/* The ratio euler/phi at two generic points where phi is not small; 0
 * with *r set when they agree, -1 when they differ or no point works. */
static int sigma_ratio(ch_ctx *ctx, const ch_expr *euler, const ch_expr *phi,
                       double *r)
{
    size_t ns = ch_ctx_nsyms(ctx);
    double *pt = malloc((ns ? ns : 1) * sizeof *pt);
    if (!pt) return -1;
    double got[2];
    int have = 0;
    for (int w = 0; w < RATIO_POINTS && have < 2; w++) {
        ch_eval_generic_point(ctx, 0xBB67AE8584CAA73BULL, w, pt);
        double e = ch_eval_d(ctx, euler, pt), p = ch_eval_d(ctx, phi, pt);
        if (isfinite(e) && isfinite(p) && fabs(p) > 1e-6) got[have++] = e / p;
    }
    free(pt);
    if (have < 2 || !(fabs(got[0] - got[1]) <= 1e-8 * (1 + fabs(got[0]))))
        return -1;
    *r = got[0];
    return 0;
}

/* A rational p/q (q <= SIGMA_MAX_DEN) within 1e-8 of r, in lowest terms. */
static int small_rational(double r, slong *p, slong *q)
{
    if (!(fabs(r) <= SIGMA_MAX_NUM)) return -1;
    for (slong d = 1; d <= SIGMA_MAX_DEN; d++) {
        double num = nearbyint(r * (double)d);
        if (fabs(r - num / (double)d) <= 1e-8 * (1 + fabs(r))) {
            *p = (slong)num;
            *q = d;
            return 0;
        }
    }
    return -1;
}

/* sigma with q_t.dphi/dq_t == sigma phi proven as an identity, or NULL. */
static const ch_expr *homogeneity(ch_ctx *ctx, const ch_expr *euler,
                                  const ch_expr *phi)
{
    double r;
    slong p, q;
    if (sigma_ratio(ctx, euler, phi, &r) || small_rational(r, &p, &q)) return NULL;
    const ch_expr *sigma = ch_num_frac(ctx, p, q);
    const ch_expr *e = ch_sub(ctx, euler, ch_mul(ctx, sigma, phi));
    if (!e) return NULL;
    ch_zero_result z = ch_zero_test(ctx, e, NULL, NULL, ZERO_POINTS);
    return z.verdict == CH_ZERO_YES ? sigma : NULL;
}

/* ======================================================================
 * the energy verdict
 * ====================================================================== */

static void append_degrees(char *buf, size_t size, const ch_chetaev *C)
{
    for (size_t a = 0; a < C->k; a++) {
        const ch_expr *s = C->sigma[a];
        char *str = fmpq_get_str(NULL, 10, s->num);
        ch_str_append(buf, size, "%s%s", a ? ", " : "", str ? str : "?");
        flint_free(str);
    }
}

/* How the balance test decided YES, as a parenthesis. */
static void append_test(char *buf, size_t size, const ch_zero_result *z,
                        size_t k)
{
    if (z->symbolic) ch_str_append(buf, size, " (dE/dt is identically 0)");
    else if (k) ch_str_append(buf, size, " (at %d random points on the constraint "
                                  "manifold)", z->points);
    else ch_str_append(buf, size, " (at %d random states)", z->points);
}

/* The homogeneity shortcut of THEORY §3 applies. */
static int shortcut_applies(ch_ctx *ctx, const ch_manifold *mf,
                            const ch_chetaev *C, const ch_expr *qpow)
{
    for (size_t a = 0; a < mf->k; a++)
        if (!C->sigma[a]) return 0;
    if (ch_has_sym(mf->model->lagrangian, mf->model->t)) return 0;
    return ch_zero_test(ctx, qpow, NULL, NULL, ZERO_POINTS).verdict == CH_ZERO_YES;
}

static int decide_energy(ch_ctx *ctx, const ch_manifold *mf, ch_chetaev *C,
                         const ch_expr *rest, const ch_expr *qpow, ch_error *err)
{
    const ch_model *m = mf->model;
    char why[480] = "";
    int shortcut = shortcut_applies(ctx, mf, C, qpow);
    ch_zero_result z = ch_zero_test(ctx, C->energy_balance, ch_manifold_sample,
                                    (void *)mf, ZERO_POINTS);
    C->energy_test = z;
    if (shortcut) {
        if (z.verdict == CH_ZERO_NO)
            return ch_error_set(err, CH_ERR_MATH, m->file, m->lagrangian_pos.line,
                                m->lagrangian_pos.col,
                                "internal inconsistency: the constraints are "
                                "homogeneous and L and Q conserve energy, but "
                                "dE/dt is not zero at a point of the "
                                "constraint manifold");
        C->energy_conserved = 1;
        if (mf->k) {
            ch_str_append(why, sizeof why, "constraints homogeneous of degree ");
            append_degrees(why, sizeof why, C);
            ch_str_append(why, sizeof why, " in the velocities, ");
        } else {
            ch_str_append(why, sizeof why, "no constraints, ");
        }
        ch_str_append(why, sizeof why, "L independent of t, Q.q' = 0");
        if (z.verdict == CH_ZERO_YES)
            append_test(why, sizeof why, &z, mf->k);
        else
            ch_str_append(why, sizeof why, " (the test of dE/dt at random points "
                                    "was inconclusive)");
    } else if (z.verdict == CH_ZERO_YES) {
        C->energy_conserved = 1;
        /* balance = rest + reaction power: which part vanishes? */
        if (mf->k && ch_zero_test(ctx, rest, NULL, NULL, ZERO_POINTS).verdict
                         == CH_ZERO_YES)
            ch_str_append(why, sizeof why, "reaction power and dE/dt vanish");
        else
            ch_str_append(why, sizeof why, "dE/dt = -dL/dt + Q.q' + lambda.(G q') "
                                    "vanishes on motions");
        append_test(why, sizeof why, &z, mf->k);
    } else if (z.verdict == CH_ZERO_NO) {
        C->energy_conserved = 0;
        ch_str_append(why, sizeof why, "not conserved: at %s",
               mf->k ? "a point on the constraint manifold" : "a state");
        if (z.have_witness) {
            double v = ch_eval_d(ctx, C->energy_balance, z.witness);
            ch_str_append(why, sizeof why, " (t = %.6g) dE/dt = %.6g",
                   z.witness[m->t->sym->sid], v);
        } else {
            ch_str_append(why, sizeof why, " dE/dt != 0");
        }
    } else {
        C->energy_conserved = -1;
        ch_str_append(why, sizeof why, "could not be decided");
        if (z.points == 0)
            ch_str_append(why, sizeof why, ": no point on the constraint manifold "
                                    "was found");
        else
            ch_str_append(why, sizeof why, " (%d points on the constraint manifold)",
                   z.points);
    }
    C->energy_reason = ch_ctx_strdup(ctx, why);
    if (!C->energy_reason)
        return ch_error_set(err, CH_ERR_MEMORY, m->file, 0, 0, "out of memory");
    return 0;
}

/* ======================================================================
 * explicit multipliers
 * ====================================================================== */

static const ch_expr *tidy(ch_ctx *ctx, const ch_expr *e)
{
    if (!e || ch_dag_size_capped(e, SIMPLIFY_MAX_NODES) > SIMPLIFY_MAX_NODES) return e;
    const ch_expr *s = ch_simplify(ctx, e);
    if (!s) ch_ctx_clear_error(ctx);
    return s ? s : e;
}

/* lambda = -W^-1 (G X_Q + c), W = G X_G, where M [X_G | X_Q] = [G^T | Q - h].
 * Sets *out (NULL when W or M is singular at generic points); -1 on failure
 * (context error set). */
static int explicit_lambda(ch_ctx *ctx, const ch_manifold *mf,
                           const ch_expr ***out)
{
    size_t n = mf->n, k = mf->k, w = k + 1;
    const ch_lagrange *L = mf->lag;
    *out = NULL;
    const ch_expr **B = ch_mat_new(ctx, n, w), **X = ch_mat_new(ctx, n, w);
    const ch_expr **W = ch_mat_new(ctx, k, k), **rhs = ch_mat_new(ctx, k, 1);
    const ch_expr **lam = ch_mat_new(ctx, k, 1);
    const ch_expr **t = ch_mat_new(ctx, n + 1, 1);
    if (!B || !X || !W || !rhs || !lam || !t) {
        ch_ctx_fail(ctx, CH_ERR_MEMORY, "out of memory");
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        for (size_t a = 0; a < k; a++) B[i * w + a] = L->G[a * n + i];
        B[i * w + k] = ch_sub(ctx, L->Q[i], L->h[i]);
    }
    int rc = ch_mat_solve(ctx, n, L->M, w, B, X);
    if (rc) return rc > 0 ? 0 : -1;
    for (size_t a = 0; a < k; a++) {
        for (size_t b = 0; b < k; b++) {
            for (size_t i = 0; i < n; i++) t[i] = ch_mul(ctx, L->G[a * n + i], X[i * w + b]);
            W[a * k + b] = tidy(ctx, ch_add_n(ctx, n, t));
        }
        for (size_t i = 0; i < n; i++) t[i] = ch_mul(ctx, L->G[a * n + i], X[i * w + k]);
        t[n] = L->c[a];
        rhs[a] = tidy(ctx, ch_add_n(ctx, n + 1, t));
        if (!rhs[a]) return -1;
    }
    rc = ch_mat_solve(ctx, k, W, 1, rhs, lam);
    if (rc) return rc > 0 ? 0 : -1;
    for (size_t a = 0; a < k; a++)
        if (!(lam[a] = tidy(ctx, ch_neg(ctx, lam[a])))) return -1;
    *out = lam;
    return 0;
}

/* ======================================================================
 * entry point
 * ====================================================================== */

int ch_chetaev_derive(ch_ctx *ctx, const ch_manifold *mf, ch_chetaev *out,
                      ch_error *err)
{
    const ch_model *m = mf->model;
    const ch_lagrange *L = mf->lag;
    size_t n = mf->n, k = mf->k;
    ch_chetaev C;
    memset(&C, 0, sizeof C);
    C.n = n;
    C.k = k;
    C.R = ch_mat_new(ctx, n, 1);
    C.sigma = ch_mat_new(ctx, k, 1);
    const ch_expr **power = ch_mat_new(ctx, k, 1);
    const ch_expr **t = ch_mat_new(ctx, k + 3, 1);
    if (!C.R || !C.sigma || !power || !t)
        return ch_error_set(err, CH_ERR_MEMORY, m->file, 0, 0, "out of memory");
    ch_pos cpos = k ? m->constraint_pos[0] : m->lagrangian_pos;
    if (reactions(ctx, mf, C.R, power)) return ctx_failed(ctx, err, m, cpos);

    /* dE/dt = -dL/dt + Q.q_t + lambda.(G q_t)  (THEORY §3) */
    const ch_expr *qpow = force_power(ctx, mf);
    const ch_expr *rest = ch_sub(ctx, qpow, ch_diff(ctx, m->lagrangian, m->t));
    t[0] = rest;
    for (size_t a = 0; a < k; a++) t[a + 1] = ch_mul(ctx, mf->lambda[a], power[a]);
    C.energy_balance = ch_add_n(ctx, k + 1, t);
    if (!C.energy_balance) return ctx_failed(ctx, err, m, m->lagrangian_pos);

    for (size_t a = 0; a < k; a++) {
        C.sigma[a] = homogeneity(ctx, power[a], L->phi[a]);
        ch_ctx_clear_error(ctx); /* a failed proof only means "not shown" */
    }
    int rc = decide_energy(ctx, mf, &C, rest, qpow, err);
    if (rc) return rc;

    if (k && n <= LAMBDA_EXPLICIT_MAX_N
        && explicit_lambda(ctx, mf, &C.lambda_explicit))
        return ctx_failed(ctx, err, m, cpos);
    *out = C;
    return 0;
}
