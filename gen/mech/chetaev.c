/* chetaev.c — reactions, energy balance, homogeneity degrees, the energy
 * verdict and small explicit multipliers (THEORY §2–§3, §7).
 *
 * The verdict comes from the balance -dL/dt + Q.q_t + lambda.(G q_t)
 * evaluated on the constraint manifold with the true multipliers
 * (ch_manifold_sample); the reaction power of a constraint proven
 * homogeneous vanishes there (G q_t = sigma phi = 0) and is left out of
 * the evaluation, so that a model whose constraints are all homogeneous
 * needs no multipliers at its points (no KKT solve). Homogeneity is only
 * a sufficient reason: when it applies (all constraints homogeneous, L
 * free of t, Q.q_t == 0) it is reported as the reason, and the manifold
 * test must agree; a disagreement is an internal error, never silently
 * resolved. */
#include "mech/chetaev.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdarg.h>
#include <string.h>

#include "core/buf.h"
#include "core/diff.h"
#include "core/matrix.h"
#include "core/simplify.h"

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
    return ch_ctx_report(ctx, err, m->file, pos.line, pos.col, NULL, 1);
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
 * with *r set when they agree, -1 when they differ or no point works, -2
 * out of memory. */
static int sigma_ratio(ch_ctx *ctx, const ch_expr *euler, const ch_expr *phi,
                       double *r)
{
    size_t ns = ch_ctx_nsyms(ctx);
    double *pt = malloc((ns ? ns : 1) * sizeof *pt);
    if (!pt) return -2;
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

/* Structural homogeneity in the velocities: a node is homogeneous of
 * degree p/q when every velocity symbol enters through sums of terms of
 * one degree, products and rational powers (degrees add and scale), and
 * functions of degree-0 arguments (invariant under v -> s v, s > 0). It
 * proves the Euler identity q_t.dphi/dq_t = sigma phi without the normal
 * form of the zero test, whose cost grows with the square of the size of
 * phi; a node it cannot classify (terms of different degrees that might
 * cancel) leaves the decision to the zero test. One memo serves every
 * constraint, so shared subexpressions are classified once. */
typedef struct {
    slong p, q; /* degree p/q, q > 0, lowest terms */
    int ok;     /* 0: not shown homogeneous */
} vdeg;

typedef struct {
    ch_map memo; /* node id -> index + 1 into v */
    vdeg *v;
    size_t n, cap;
} vdeg_memo;

#define VDEG_MAX 1000000 /* numerators and denominators stay small */

static slong gcd_sl(slong a, slong b)
{
    if (a < 0) a = -a;
    while (b) {
        slong t = a % b;
        a = b;
        b = t < 0 ? -t : t;
    }
    return a ? a : 1;
}

static vdeg vdeg_make(slong p, slong q)
{
    vdeg d = {0, 1, 0};
    if (q < 0) {
        p = -p;
        q = -q;
    }
    if (q == 0) return d;
    slong g = gcd_sl(p, q);
    p /= g;
    q /= g;
    if (p > VDEG_MAX || p < -VDEG_MAX || q > VDEG_MAX) return d;
    d.p = p;
    d.q = q;
    d.ok = 1;
    return d;
}

static vdeg vdeg_of(vdeg_memo *m, const ch_expr *e);

static vdeg vdeg_node(vdeg_memo *m, const ch_expr *e)
{
    vdeg bad = {0, 1, 0}, zero = {0, 1, 1};
    switch (e->kind) {
    case CH_NUM:
        return zero;
    case CH_SYM:
        return ch_sym_of(e)->kind == CH_SYM_VEL ? vdeg_make(1, 1) : zero;
    case CH_ADD: {
        int have = !fmpq_is_zero(e->num);
        vdeg d = zero;
        for (uint32_t i = 0; i < e->n; i++) {
            vdeg t = vdeg_of(m, e->pair[i].e);
            if (!t.ok) return bad;
            if (have && (t.p != d.p || t.q != d.q)) return bad;
            d = t;
            have = 1;
        }
        return d;
    }
    case CH_MUL: {
        vdeg d = zero;
        for (uint32_t i = 0; i < e->n; i++) {
            vdeg t = vdeg_of(m, e->pair[i].e);
            const fmpq *c = e->pair[i].c;
            if (!t.ok || !fmpz_fits_si(fmpq_numref(c)) || !fmpz_fits_si(fmpq_denref(c)))
                return bad;
            if (t.p == 0) continue;
            slong cp = fmpz_get_si(fmpq_numref(c)), cq = fmpz_get_si(fmpq_denref(c));
            if (cp > VDEG_MAX || cp < -VDEG_MAX || cq > VDEG_MAX) return bad;
            /* d + t c = (d.p t.q cq + t.p cp d.q) / (d.q t.q cq) */
            vdeg s = vdeg_make(d.p * t.q * cq + t.p * cp * d.q, d.q * t.q * cq);
            if (!s.ok) return bad;
            d = s;
        }
        return d;
    }
    case CH_POW:
    case CH_FUN: {
        /* degree-0 arguments only: the node is then invariant too */
        for (uint32_t i = 0; i < e->n; i++) {
            if (!e->pair[i].e) return bad;
            vdeg t = vdeg_of(m, e->pair[i].e);
            if (!t.ok || t.p != 0) return bad;
        }
        return zero;
    }
    default:
        return bad;
    }
}

static vdeg vdeg_of(vdeg_memo *m, const ch_expr *e)
{
    vdeg bad = {0, 1, 0};
    if (e->kind == CH_NUM || e->kind == CH_SYM) return vdeg_node(m, e);
    uintptr_t k = (uintptr_t)ch_map_get(&m->memo, e->id);
    if (k) return m->v[k - 1];
    vdeg d = vdeg_node(m, e);
    if (m->n == m->cap) {
        size_t cap = m->cap ? 2 * m->cap : 64;
        vdeg *nv = realloc(m->v, cap * sizeof *nv);
        if (!nv) return d.ok ? d : bad; /* uncached: still correct */
        m->v = nv;
        m->cap = cap;
    }
    m->v[m->n++] = d;
    if (ch_map_put(&m->memo, e->id, (void *)(uintptr_t)m->n)) m->n--;
    return d;
}

/* sigma with q_t.dphi/dq_t == sigma phi proven as an identity, or NULL
 * (out of memory recorded in the context). The numerical ratio proposes
 * sigma; the structural degree, when it agrees, proves it (Euler's
 * theorem), else the zero test decides. */
static const ch_expr *homogeneity(ch_ctx *ctx, vdeg_memo *vm,
                                  const ch_expr *euler, const ch_expr *phi)
{
    double r;
    slong p, q;
    int sr = sigma_ratio(ctx, euler, phi, &r);
    if (sr == -2) ch_ctx_fail(ctx, CH_ERR_MEMORY, "out of memory");
    if (sr || small_rational(r, &p, &q)) return NULL;
    const ch_expr *sigma = ch_num_frac(ctx, p, q);
    vdeg d = vdeg_of(vm, phi);
    vdeg want = vdeg_make(p, q);
    if (d.ok && want.ok && d.p == want.p && d.q == want.q) return sigma;
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

/* balance: dE/dt as it equals on the manifold (see ch_chetaev_derive). */
static int decide_energy(ch_ctx *ctx, const ch_manifold *mf, ch_chetaev *C,
                         const ch_expr *rest, const ch_expr *qpow,
                         const ch_expr *balance, ch_error *err)
{
    const ch_model *m = mf->model;
    char why[480] = "";
    int shortcut = shortcut_applies(ctx, mf, C, qpow);
    int kkt = ch_has_sym_kind(balance, CH_SYM_ACC)
           || ch_has_any_sym(balance, mf->k, mf->lambda);
    /* without multipliers and accelerations, the points need only be
     * where balance looks */
    ch_manifold_probe probe = {mf, balance};
    ch_zero_result z = ch_zero_test_on(ctx, C->energy_balance, balance,
                                       kkt ? ch_manifold_sample
                                           : ch_manifold_sample_state,
                                       kkt ? (void *)mf : &probe, ZERO_POINTS);
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
                   z.witness[ch_sym_of(m->t)->sid], v);
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

/* lambda = -W^-1 (G X_Q + c), W = G X_G, where M [X_G | X_Q] = [G^T | Q - h]. */
int ch_chetaev_explicit_lambda(ch_ctx *ctx, const ch_manifold *mf,
                               const ch_expr ***out)
{
    size_t n = mf->n, k = mf->k, w = k + 1;
    const ch_lagrange *L = mf->lag;
    *out = NULL;
    if (!k || n > LAMBDA_EXPLICIT_MAX_N) return 0;
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

    vdeg_memo vm;
    memset(&vm, 0, sizeof vm);
    ch_map_init(&vm.memo);
    int oom = 0;
    for (size_t a = 0; a < k && !oom; a++) {
        C.sigma[a] = homogeneity(ctx, &vm, power[a], L->phi[a]);
        /* a failed proof only means "not shown", unless memory ran out */
        if (!(oom = ch_ctx_error(ctx)->code == CH_ERR_MEMORY)) ch_ctx_clear_error(ctx);
    }
    ch_map_free(&vm.memo);
    free(vm.v);
    if (oom) return ctx_failed(ctx, err, m, cpos);
    /* On the manifold G_nu q_t = sigma_nu phi_nu = 0 for a homogeneous
     * constraint, so its reaction power drops out of the balance there:
     * when every constraint is homogeneous the test needs no multipliers,
     * and the manifold points no KKT solve (O((n+k)^3) per point). */
    t[0] = rest;
    size_t nt = 1;
    for (size_t a = 0; a < k; a++)
        if (!C.sigma[a]) t[nt++] = ch_mul(ctx, mf->lambda[a], power[a]);
    const ch_expr *on_manifold = ch_add_n(ctx, nt, t);
    if (!on_manifold) return ctx_failed(ctx, err, m, m->lagrangian_pos);
    int rc = decide_energy(ctx, mf, &C, rest, qpow, on_manifold, err);
    if (rc) return rc;
    *out = C;
    return 0;
}
