/* test_diff.c — partial and total derivatives (against finite differences
 * on random expressions) and substitution. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "check.h"
#include "core/diff.h"
#include "core/eval.h"
#include "core/expr.h"
#include "randexpr.h"
#include "core/subst.h"

static ch_ctx *ctx;
static const ch_expr *x, *y, *z, *t, *q, *qt, *qtt, *k;

static double ev(const ch_expr *e, const double *v) { return ch_eval_d(ctx, e, v); }

/* Central difference with one Richardson step: O(h^4). */
static double fd(const ch_expr *e, double *v, uint32_t sid, double h)
{
    double v0 = v[sid], d[2];
    for (int i = 0; i < 2; i++) {
        double hh = i ? h / 2 : h;
        v[sid] = v0 + hh;
        double fp = ev(e, v);
        v[sid] = v0 - hh;
        double fm = ev(e, v);
        d[i] = (fp - fm) / (2 * hh);
    }
    v[sid] = v0;
    return (4 * d[1] - d[0]) / 3;
}

static void test_partial_property(void)
{
    rx_rng r = {20261202};
    const ch_expr *syms[3] = {x, y, z};
    double *v = calloc(ch_ctx_nsyms(ctx), sizeof *v);
    int compared = 0;
    for (int trial = 0; trial < 1200; trial++) {
        const ch_expr *e = rx_expr(ctx, &r, syms, 3, 4);
        const ch_expr *var = syms[rx_int(&r, 3)];
        const ch_expr *de = ch_diff(ctx, e, var);
        CHECK(de != NULL);
        if (!de) continue;
        CHECK(ch_diff(ctx, e, var) == de); /* memoized: same node */
        for (int i = 0; i < 3; i++) v[ch_sym_of(syms[i])->sid] = rx_point(&r, 0);
        double exact = ev(de, v), f = ev(e, v);
        double approx = fd(e, v, ch_sym_of(var)->sid, 1e-3);
        if (!isfinite(exact) || !isfinite(approx) || !isfinite(f)
            || fabs(exact) > 1e4 || fabs(f) > 1e4)
            continue; /* near a pole: finite differences mean nothing */
        compared++;
        CHECK_MSG(fabs(exact - approx) <= 1e-6 * fmax(1, fabs(exact)),
                  "trial %d: d/d%s exact %.15g fd %.15g", trial,
                  ch_sym_of(var)->name, exact, approx);
    }
    CHECK_MSG(compared >= 1000, "only %d comparisons", compared);
    free(v);
}

/* Along q(t) = a + b t + c t^2 + d t^3, d/dt F(t, q, q') computed by
 * ch_diff_t must equal the finite difference of F along the path. */
static void test_total_property(void)
{
    rx_rng r = {7};
    const ch_expr *syms[4] = {t, q, qt, k};
    double *v = calloc(ch_ctx_nsyms(ctx), sizeof *v);
    int compared = 0;
    for (int trial = 0; trial < 1000; trial++) {
        const ch_expr *e = rx_expr(ctx, &r, syms, 4, 4);
        const ch_expr *de = ch_diff_t(ctx, e);
        CHECK(de != NULL);
        if (!de) continue;
        double a = rx_unif(&r, -1, 1), b = rx_unif(&r, -1, 1),
               c = rx_unif(&r, -1, 1), d = rx_unif(&r, -1, 1);
        double t0 = rx_point(&r, 0), h = 1e-4;
        v[ch_sym_of(k)->sid] = rx_point(&r, 0);
        double g[4];
        static const double off[4] = {1, -1, 0.5, -0.5};
        for (int i = 0; i < 4; i++) {
            double tt = t0 + off[i] * h;
            v[ch_sym_of(t)->sid] = tt;
            v[ch_sym_of(q)->sid] = a + tt * (b + tt * (c + tt * d));
            v[ch_sym_of(qt)->sid] = b + tt * (2 * c + 3 * d * tt);
            g[i] = ev(e, v);
        }
        double approx = (4 * (g[2] - g[3]) / h - (g[0] - g[1]) / (2 * h)) / 3;
        v[ch_sym_of(t)->sid] = t0;
        v[ch_sym_of(q)->sid] = a + t0 * (b + t0 * (c + t0 * d));
        v[ch_sym_of(qt)->sid] = b + t0 * (2 * c + 3 * d * t0);
        v[ch_sym_of(qtt)->sid] = 2 * c + 6 * d * t0;
        double exact = ev(de, v), f = ev(e, v);
        if (!isfinite(exact) || !isfinite(approx) || fabs(exact) > 1e4
            || fabs(f) > 1e4)
            continue;
        compared++;
        CHECK_MSG(fabs(exact - approx) <= 1e-6 * fmax(1, fabs(exact)),
                  "trial %d: exact %.15g fd %.15g", trial, exact, approx);
    }
    CHECK_MSG(compared >= 800, "only %d comparisons", compared);
    free(v);
}

static void test_rules(void)
{
    const ch_expr *two = ch_num_si(ctx, 2);
    CHECK(ch_diff(ctx, ch_mul(ctx, x, y), x) == y);
    CHECK(ch_diff(ctx, ch_pow_si(ctx, x, 3), x) == ch_mul(ctx, ch_num_si(ctx, 3), ch_pow_si(ctx, x, 2)));
    CHECK(ch_diff(ctx, ch_fun1(ctx, CH_F_SIN, x), x) == ch_fun1(ctx, CH_F_COS, x));
    CHECK(ch_is_zero(ch_diff(ctx, ch_fun1(ctx, CH_F_SIN, y), x)));
    CHECK(ch_diff(ctx, ch_fun1(ctx, CH_F_EXP, ch_mul(ctx, two, x)), x)
          == ch_mul(ctx, two, ch_fun1(ctx, CH_F_EXP, ch_mul(ctx, two, x))));
    CHECK(ch_diff(ctx, ch_fun1(ctx, CH_F_LOG, x), x) == ch_pow_si(ctx, x, -1));
    CHECK(ch_diff(ctx, x, two) == NULL); /* only symbols are variables */
    ch_ctx_clear_error(ctx);
    CHECK(ch_diff(ctx, NULL, x) == NULL);
    CHECK(ch_diff(ctx, x, ch_add(ctx, x, y)) == NULL);
    ch_ctx_clear_error(ctx);
    /* x^y */
    const ch_expr *p = ch_pow(ctx, x, y);
    CHECK(ch_diff(ctx, p, y) == ch_mul(ctx, p, ch_fun1(ctx, CH_F_LOG, x)));
}

static void test_total(void)
{
    /* d/dt (q^2 q') = 2 q q'^2 + q^2 q'' */
    const ch_expr *e = ch_mul(ctx, ch_pow_si(ctx, q, 2), qt);
    const ch_expr *want = ch_add(ctx, ch_mul_n(ctx, 3, (const ch_expr *[]){ch_num_si(ctx, 2), q, ch_pow_si(ctx, qt, 2)}),
                                 ch_mul(ctx, ch_pow_si(ctx, q, 2), qtt));
    CHECK(ch_diff_t(ctx, e) == want);
    CHECK(ch_diff_t(ctx, t) == ch_one(ctx));
    CHECK(ch_is_zero(ch_diff_t(ctx, k))); /* a parameter */
    CHECK(ch_diff_t(ctx, ch_mul(ctx, t, q)) == ch_add(ctx, q, ch_mul(ctx, t, qt)));
    CHECK(ch_diff_t(ctx, qtt) == NULL); /* no third derivatives */
    CHECK(ch_ctx_error(ctx)->code == CH_ERR_MATH);
    ch_ctx_clear_error(ctx);
}

static void test_subst(void)
{
    const ch_expr *one = ch_one(ctx);
    const ch_expr *e = ch_add(ctx, ch_mul(ctx, x, ch_fun1(ctx, CH_F_SIN, x)), y);
    const ch_expr *from[1] = {x}, *to[1] = {ch_add(ctx, y, one)};
    const ch_expr *r = ch_subst(ctx, e, 1, from, to);
    CHECK(r == ch_add(ctx, ch_mul(ctx, to[0], ch_fun1(ctx, CH_F_SIN, to[0])), y));
    CHECK(ch_subst(ctx, z, 1, from, to) == z);
    /* simultaneous: x -> y, y -> x swaps */
    const ch_expr *f2[2] = {x, y}, *t2[2] = {y, x};
    CHECK(ch_subst(ctx, ch_sub(ctx, x, ch_pow_si(ctx, y, 2)), 2, f2, t2)
          == ch_sub(ctx, y, ch_pow_si(ctx, x, 2)));
    /* substitution that makes a sum vanish, inside a power */
    const ch_expr *to0[1] = {ch_neg(ctx, y)};
    CHECK(ch_subst(ctx, ch_pow_si(ctx, ch_add(ctx, x, y), 2), 1, from, to0) == ch_zero(ctx));
    /* ... and a division by it fails cleanly */
    CHECK(ch_subst(ctx, ch_pow_si(ctx, ch_add(ctx, x, y), -1), 1, from, to0) == NULL);
    ch_ctx_clear_error(ctx);
    const ch_expr *in[2] = {ch_mul(ctx, x, y), ch_fun1(ctx, CH_F_COS, x)}, *out[2];
    CHECK(ch_subst_many(ctx, 2, in, out, 1, from, to) == 0);
    CHECK(out[0] == ch_mul(ctx, to[0], y) && out[1] == ch_fun1(ctx, CH_F_COS, to[0]));
}

/* The derivative along a field V = a d/dx + b d/dy (a, b expressions)
 * equals the chain rule a de/dx + b de/dy, node for node after expansion
 * is not needed: both are built canonically from the same derivatives,
 * so they are compared at random points. */
static void test_dir_property(void)
{
    rx_rng r = {20261203};
    const ch_expr *syms[3] = {x, y, z};
    const ch_expr *vs[2] = {x, y};
    const ch_expr *dirs[2] = {ch_fun1(ctx, CH_F_COS, z), ch_add(ctx, x, ch_one(ctx))};
    ch_diff_dir v;
    CHECK(ch_diff_dir_init(ctx, &v, 2, vs, dirs) == 0);
    double *pt = calloc(ch_ctx_nsyms(ctx), sizeof *pt);
    int compared = 0;
    for (int trial = 0; trial < 400; trial++) {
        const ch_expr *e = rx_expr(ctx, &r, syms, 3, 4);
        const ch_expr *de = ch_diff_dir_apply(ctx, &v, e);
        const ch_expr *want = ch_add(ctx, ch_mul(ctx, dirs[0], ch_diff(ctx, e, x)),
                                     ch_mul(ctx, dirs[1], ch_diff(ctx, e, y)));
        CHECK(de != NULL && want != NULL);
        if (!de || !want) continue;
        CHECK(ch_diff_dir_apply(ctx, &v, e) == de); /* memoized */
        for (int i = 0; i < 3; i++) pt[ch_sym_of(syms[i])->sid] = rx_point(&r, 0);
        double a = ev(de, pt), b = ev(want, pt);
        if (!isfinite(a) || !isfinite(b) || fabs(a) > 1e6) continue;
        compared++;
        CHECK_MSG(fabs(a - b) <= 1e-9 * fmax(1, fabs(b)), "trial %d: %.17g vs %.17g",
                  trial, a, b);
    }
    CHECK_MSG(compared >= 300, "only %d comparisons", compared);
    /* z is not in the field: a function of z alone has derivative 0 */
    CHECK(ch_is_zero(ch_diff_dir_apply(ctx, &v, ch_fun1(ctx, CH_F_SIN, z))));
    CHECK(ch_diff_dir_apply(ctx, &v, x) == dirs[0]);
    /* only symbols are variables */
    const ch_expr *bad[1] = {ch_add(ctx, x, y)};
    ch_diff_dir w;
    CHECK(ch_diff_dir_init(ctx, &w, 1, bad, dirs) != 0);
    ch_ctx_clear_error(ctx);
    free(pt);
}

/* A substitution repeated on overlapping expressions reuses its cache
 * (same results), distinct pair lists get distinct caches, and the
 * explicit memo agrees with ch_subst. */
static void test_subst_memo(void)
{
    const ch_expr *from[1] = {x}, *to[1] = {ch_mul(ctx, y, z)};
    const ch_expr *to2[1] = {ch_add(ctx, y, z)};
    const ch_expr *e = ch_add(ctx, ch_fun1(ctx, CH_F_SIN, x), ch_pow_si(ctx, x, 3));
    const ch_expr *e2 = ch_mul(ctx, e, ch_fun1(ctx, CH_F_COS, x));
    const ch_expr *r1 = ch_subst(ctx, e, 1, from, to);
    const ch_expr *r2 = ch_subst(ctx, e2, 1, from, to);
    CHECK(r1 == ch_add(ctx, ch_fun1(ctx, CH_F_SIN, to[0]), ch_pow_si(ctx, to[0], 3)));
    CHECK(r2 == ch_mul(ctx, r1, ch_fun1(ctx, CH_F_COS, to[0])));
    /* another substitution of the same symbol is not confused with it */
    CHECK(ch_subst(ctx, e, 1, from, to2)
          == ch_add(ctx, ch_fun1(ctx, CH_F_SIN, to2[0]), ch_pow_si(ctx, to2[0], 3)));
    CHECK(ch_subst(ctx, e, 1, from, to) == r1);
    ch_subst_memo m;
    CHECK(ch_subst_memo_init(ctx, &m, 1, from, to2) == 0);
    CHECK(ch_subst_memo_apply(ctx, &m, e2) == ch_subst(ctx, e2, 1, from, to2));
    /* a failure is not cached as a result: it fails again */
    const ch_expr *to0[1] = {ch_neg(ctx, y)};
    const ch_expr *inv = ch_pow_si(ctx, ch_add(ctx, x, y), -1);
    CHECK(ch_subst(ctx, inv, 1, from, to0) == NULL);
    ch_ctx_clear_error(ctx);
    CHECK(ch_subst(ctx, inv, 1, from, to0) == NULL);
    CHECK(ch_ctx_error(ctx)->code == CH_ERR_MATH);
    ch_ctx_clear_error(ctx);
}

/* ch_diff_symmetric differentiates the terms of a long momentum by
 * classes (terms alike up to linear forms in the velocities, whose
 * derivatives agree): every entry must be the node ch_diff gives. The
 * chain below has such classes (equal weights), forms whose coefficients
 * differ for one body (the class must split), weights that differ, and
 * terms not linear in the forms (a cube, a factor with a velocity). */
static void test_symmetric_classes(void)
{
    enum { NB = 12, NV = NB + 1 };
    char name[32];
    const ch_expr *v[NV], *a[NV], *X[NB], *Y[NB], *terms[NB + 1];
    for (int i = 0; i < NV; i++) {
        snprintf(name, sizeof name, "v%d", i);
        v[i] = ch_symbol(ctx, name, CH_SYM_OTHER, NULL, 0, -1);
        snprintf(name, sizeof name, "a%d", i);
        a[i] = ch_symbol(ctx, name, CH_SYM_OTHER, NULL, 0, -1);
    }
    const ch_expr *x0 = v[0], *y0 = ch_zero(ctx);
    for (int b = 0; b < NB; b++) {
        int j = b + 1;
        /* body 7 sees v3 with another coefficient */
        const ch_expr *s = ch_fun1(ctx, CH_F_SIN, a[j]);
        const ch_expr *c = ch_fun1(ctx, CH_F_COS, a[j]);
        X[b] = x0 = ch_add(ctx, x0, ch_mul(ctx, s, v[j]));
        Y[b] = y0 = ch_add(ctx, y0, ch_mul(ctx, c, v[j]));
        if (b == 7) X[b] = ch_add(ctx, X[b], ch_mul(ctx, k, v[3]));
    }
    for (int b = 0; b < NB; b++) {
        const ch_expr *sq = ch_add(ctx, ch_pow_si(ctx, X[b], 2), ch_pow_si(ctx, Y[b], 2));
        const ch_expr *w = b == 4 ? ch_mul(ctx, k, k) : k;
        terms[b] = ch_mul(ctx, w, sq);
    }
    for (int b = 8; b < NB; b++) /* alike, but not linear in X_b: no class */
        terms[b] = ch_add_n(ctx, 3, (const ch_expr *[]){terms[b], ch_pow_si(ctx, X[b], 3),
                                                       ch_mul(ctx, v[2], ch_pow_si(ctx, X[b], 2))});
    terms[NB] = ch_mul(ctx, z, ch_pow_si(ctx, v[5], 2));
    const ch_expr *L = ch_add_n(ctx, NB + 1, terms);
    const ch_expr *p[NV], *M[NV * NV];
    for (int i = 0; i < NV; i++) p[i] = ch_diff(ctx, L, v[i]);
    CHECK(p[1] && p[1]->kind == CH_ADD && p[1]->n >= 8); /* differentiated by classes */
    CHECK(ch_diff_symmetric(ctx, NV, p, v, M) == 0);
    int bad = 0;
    for (int i = 0; i < NV; i++)
        for (int j = 0; j < NV; j++) bad += M[i * NV + j] != ch_diff(ctx, p[i], v[j]);
    CHECK_MSG(bad == 0, "%d entries differ from ch_diff", bad);
}

int main(void)
{
    ctx = ch_ctx_new();
    x = ch_symbol(ctx, "x", CH_SYM_OTHER, NULL, 0, -1);
    y = ch_symbol(ctx, "y", CH_SYM_OTHER, NULL, 0, -1);
    z = ch_symbol(ctx, "z", CH_SYM_OTHER, NULL, 0, -1);
    t = ch_symbol(ctx, "t", CH_SYM_TIME, NULL, 0, -1);
    q = ch_symbol(ctx, "q", CH_SYM_COORD, NULL, 0, 0);
    qt = ch_symbol(ctx, "q_t", CH_SYM_VEL, "q", 1, 0);
    qtt = ch_symbol(ctx, "q_tt", CH_SYM_ACC, "q", 2, 0);
    k = ch_symbol(ctx, "k", CH_SYM_PARAM, NULL, 0, 0);
    ch_symbol_set_dot(ctx, q, qt);
    ch_symbol_set_dot(ctx, qt, qtt);
    RUN(test_rules);
    RUN(test_total);
    RUN(test_subst);
    RUN(test_subst_memo);
    RUN(test_dir_property);
    RUN(test_symmetric_classes);
    RUN(test_partial_property);
    RUN(test_total_property);
    ch_ctx_free(ctx);
    return check_summary("test_diff");
}
