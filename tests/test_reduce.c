/* test_reduce.c — THEORY §4 identities on every constrained example and on
 * inline models (explicit, linear-solved and implicit alpha):
 *   phi(alpha) = 0 identically (explicit alpha),
 *   reduced equations = E_r + dalpha/dq'_r E_dep - Q* on motions,
 *   M* = D^T M D on motions,
 *   E* = E|alpha + sum (alpha_bar - alpha) p* (001 eq. 18),
 * each decided by the zero test on the constraint manifold. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "mech/mechanics.h"
#include "core/diff.h"
#include "core/eval.h"
#include "core/matrix.h"
#include "core/subst.h"

#ifndef SRCDIR
#define SRCDIR "."
#endif

static int on_manifold_zero(ch_ctx *ctx, const ch_manifold *mf, const ch_expr *e)
{
    ch_zero_result r = ch_zero_test(ctx, e, ch_manifold_sample, (void *)mf, 6);
    return r.verdict == CH_ZERO_YES;
}

/* Column r of D = [I; dalpha/dq'] at coordinate i (THEORY §4). */
static const ch_expr *D_entry(ch_ctx *ctx, const ch_mechanics *d, size_t i,
                              size_t ri)
{
    const ch_manifold *mf = &d->mf;
    for (size_t a = 0; a < mf->m; a++)
        if ((size_t)mf->indep[a] == i) return a == ri ? ch_one(ctx) : ch_zero(ctx);
    for (size_t nu = 0; nu < mf->k; nu++)
        if ((size_t)mf->dep[nu] == i) return d->red.da_dv[nu * mf->m + ri];
    return NULL;
}

/* (D^T M D)_rs on motions. */
static const ch_expr *dtmd_entry(ch_ctx *ctx, const ch_mechanics *d,
                                 size_t ri, size_t si)
{
    size_t n = d->mf.n;
    const ch_expr **t = calloc(n * n, sizeof *t);
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < n; j++) {
            const ch_expr *f[3] = {D_entry(ctx, d, i, ri),
                                   ch_reduce_on_motion(ctx, &d->red, d->lag.M[i * n + j]),
                                   D_entry(ctx, d, j, si)};
            t[i * n + j] = ch_mul_n(ctx, 3, f);
        }
    const ch_expr *sum = ch_add_n(ctx, n * n, t);
    free(t);
    return sum;
}

static void check_identities(const char *name, ch_ctx *ctx, ch_mechanics *d)
{
    const ch_model *m = d->model;
    ch_reduced *r = &d->red;
    const ch_manifold *mf = &d->mf;
    ch_lagrange *L = &d->lag;
    size_t n = r->n, k = r->k, mm = r->m;
    if (ch_lagrange_euler(ctx, m, L)) {
        CHECK_MSG(0, "%s: E_i: %s", name, ch_ctx_error(ctx)->msg);
        return;
    }
    ch_reduce_test_identity(ctx, r);
    CHECK_MSG(r->E_identity_test.verdict == CH_ZERO_YES, "%s: E* identity", name);
    if (r->explicit_alpha)
        for (size_t nu = 0; nu < k; nu++) {
            const ch_expr *from[8], *to[8];
            for (size_t mu = 0; mu < k && mu < 8; mu++) {
                from[mu] = m->qt[mf->dep[mu]];
                to[mu] = r->alpha[mu];
            }
            const ch_expr *res = ch_subst(ctx, L->phi[nu], k, from, to);
            ch_zero_result z = ch_zero_test(ctx, res, NULL, NULL, 6);
            CHECK_MSG(z.verdict == CH_ZERO_YES, "%s: phi_%zu(alpha) != 0", name, nu + 1);
        }
    const ch_expr **terms = calloc(n + 2, sizeof *terms);
    for (size_t ri = 0; ri < mm; ri++) {
        size_t nt = 0, rq = (size_t)mf->indep[ri];
        terms[nt++] = r->eqs[ri];
        terms[nt++] = ch_neg(ctx, ch_reduce_on_motion(ctx, r, ch_sub(ctx, L->EL[rq], L->Q[rq])));
        for (size_t nu = 0; nu < k; nu++) {
            size_t dq = (size_t)mf->dep[nu];
            terms[nt++] = ch_neg(ctx, ch_mul(ctx, r->da_dv[nu * mm + ri],
                ch_reduce_on_motion(ctx, r, ch_sub(ctx, L->EL[dq], L->Q[dq]))));
        }
        CHECK_MSG(on_manifold_zero(ctx, mf, ch_add_n(ctx, nt, terms)),
                  "%s: reduced equation %zu is not the projection", name, ri);
        for (size_t si = 0; si < mm; si++) {
            const ch_expr *dtmd = dtmd_entry(ctx, d, ri, si);
            CHECK_MSG(on_manifold_zero(ctx, mf, ch_sub(ctx, dtmd, r->M_star[ri * mm + si])),
                      "%s: M*[%zu,%zu] != D^T M D", name, ri, si);
        }
    }
    free(terms);
}

static ch_mechanics *load(ch_ctx *ctx, const char *name, const char *text)
{
    ch_model *m = NULL;
    ch_mechanics *d = NULL;
    ch_error err;
    ch_error_clear(&err);
    int rc;
    if (text)
        rc = ch_model_parse(ctx, name, text, strlen(text), &m, &err);
    else {
        char path[512];
        snprintf(path, sizeof path, "%s/examples/%s", SRCDIR, name);
        rc = ch_model_load(ctx, path, &m, &err);
    }
    if (!rc) rc = ch_mechanics_derive(ctx, m, &d, &err);
    CHECK_MSG(rc == 0, "%s: %s", name, err.msg);
    return rc ? NULL : d;
}

static void test_examples(void)
{
    static const char *names[] = {"knife_edge.nh", "chaplygin_sleigh.nh",
                                  "vertical_disk.nh", "pendulum_xy.nh"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        ch_ctx *ctx = ch_ctx_new();
        ch_mechanics *d = load(ctx, names[i], NULL);
        if (d) {
            CHECK(d->red.explicit_alpha);
            check_identities(names[i], ctx, d);
        }
        ch_ctx_free(ctx);
    }
}

static void test_inline(void)
{
    static const struct { const char *name, *text; int explicit_alpha; } cases[] = {
        {"appell", "coordinates x y z\nparameters m=1 g=9.81 c=0.5\n"
                   "lagrangian m/2*(x'^2+y'^2+z'^2) - m*g*z\n"
                   "constraint z' = c*sqrt(x'^2+y'^2)\n", 1},
        {"two_linear", "coordinates x y z w\nparameters a=0.7\n"
                       "lagrangian (x'^2+y'^2+z'^2+w'^2)/2 + cos(x)*z'*w'/4 - y^2/2\n"
                       "constraint x' + sin(y)*z' + a*w' = 0\n"
                       "constraint y' - z' + x*w' = t\n"
                       "dependent z' w'\n", 1},
        {"implicit", "coordinates x y z\nparameters m=1 g=9.81 c=0.5\n"
                     "lagrangian m/2*(x'^2+y'^2+z'^2) - m*g*z\n"
                     "constraint exp(z' - c*sqrt(x'^2+y'^2)) - 1 = 0\n", 0},
        {"time_dep", "coordinates x y\nlagrangian (x'^2 + y'^2)/2 - x*y\n"
                     "constraint y' = cos(t)*x' + sin(t)\n", 1},
        /* the 2-trailer of bench/: a triangular constraint block, solved
         * by substitution (constraints in an order that needs a row
         * permutation) */
        {"trailer2", "coordinates x y th0 th1 th2\nparameters m=1 J=0.1 d=1 F0=1\n"
                     "define x1 = x - d*cos(th1)\ndefine y1 = y - d*sin(th1)\n"
                     "define x2 = x1 - d*cos(th2)\ndefine y2 = y1 - d*sin(th2)\n"
                     "lagrangian m/2*(x'^2+y'^2) + J/2*th0'^2 + m/2*(x1'^2+y1'^2)"
                     " + J/2*th1'^2 + m/2*(x2'^2+y2'^2) + J/2*th2'^2\n"
                     "constraint -sin(th2)*x2' + cos(th2)*y2' = 0\n"
                     "constraint -sin(th0)*x' + cos(th0)*y' = 0\n"
                     "constraint -sin(th1)*x1' + cos(th1)*y1' = 0\n"
                     "force x = F0*cos(th0)\nforce y = F0*sin(th0)\n"
                     "dependent y' th1' th2'\n", 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        ch_ctx *ctx = ch_ctx_new();
        ch_mechanics *d = load(ctx, cases[i].name, cases[i].text);
        if (d) {
            CHECK_MSG(d->red.explicit_alpha == cases[i].explicit_alpha, "%s", cases[i].name);
            check_identities(cases[i].name, ctx, d);
        }
        ch_ctx_free(ctx);
    }
}

static const ch_expr *coord(ch_ctx *ctx, const char *name, int i)
{
    return ch_symbol(ctx, name, CH_SYM_COORD, NULL, 0, i);
}

/* Triangular solves: A X = B checked by multiplying back (zero test),
 * against the Bareiss solve, and the refusals. */
static void test_triangular(void)
{
    ch_ctx *ctx = ch_ctx_new();
    const ch_expr *a = coord(ctx, "a", 0), *b = coord(ctx, "b", 1), *c = coord(ctx, "c", 2);
    const ch_expr *z = ch_zero(ctx), *one = ch_one(ctx);
    const ch_expr *sa = ch_fun1(ctx, CH_F_SIN, a), *cb = ch_fun1(ctx, CH_F_COS, b);
    /* lower triangular after swapping rows 0 and 2 and columns 0 and 1 */
    const ch_expr *A[9] = {
        ch_add(ctx, a, b), sa, cb,
        z, ch_add(ctx, cb, ch_num_si(ctx, 2)), c,
        z, ch_add(ctx, ch_mul(ctx, a, a), one), z};
    const ch_expr *B[6] = {a, one, b, ch_num_si(ctx, 3), c, sa};
    const ch_expr *X[6], *Y[6];
    CHECK(ch_mat_solve_triangular(ctx, 3, A, 2, B, X) == 0);
    CHECK(ch_mat_solve(ctx, 3, A, 2, B, Y) == 0);
    const ch_expr *t[3];
    for (size_t i = 0; i < 3; i++)
        for (size_t col = 0; col < 2; col++) {
            for (size_t j = 0; j < 3; j++) t[j] = ch_mul(ctx, A[i * 3 + j], X[j * 2 + col]);
            const ch_expr *res = ch_sub(ctx, ch_add_n(ctx, 3, t), B[i * 2 + col]);
            CHECK(ch_zero_test(ctx, res, NULL, NULL, 6).verdict == CH_ZERO_YES);
            CHECK(ch_zero_test(ctx, ch_sub(ctx, X[i * 2 + col], Y[i * 2 + col]), NULL,
                               NULL, 6).verdict == CH_ZERO_YES);
        }
    /* a full 2x2 block has no row with a single unknown */
    const ch_expr *F[4] = {a, b, c, one}, *rhs[2] = {one, one}, *W[2];
    CHECK(ch_mat_solve_triangular(ctx, 2, F, 1, rhs, W) == 1);
    /* a pivot that is zero but not structurally: refused, Bareiss decides */
    const ch_expr *s2 = ch_pow_si(ctx, sa, 2), *c2 = ch_pow_si(ctx, ch_fun1(ctx, CH_F_COS, a), 2);
    const ch_expr *P[4] = {ch_sub(ctx, ch_add(ctx, s2, c2), one), z, a, one};
    CHECK(ch_mat_solve_triangular(ctx, 2, P, 1, rhs, W) == 1);
    CHECK(ch_mat_solve(ctx, 2, P, 1, rhs, W) == 1);
    ch_ctx_free(ctx);
}

/* Numerical ranks: full, deficient by a combination with a function
 * coefficient, a zero in disguise, zero columns skipped, a leading zero
 * needing a row swap, a zero multiplier between rows to eliminate,
 * triangular structure certified and a partial one not trusted,
 * rectangular both ways, the zero matrix (whose noise alone would count:
 * the tolerance is relative to the largest entry). */
static void test_rank(void)
{
    ch_ctx *ctx = ch_ctx_new();
    const ch_expr *a = coord(ctx, "a", 0), *b = coord(ctx, "b", 1), *c = coord(ctx, "c", 2);
    const ch_expr *z = ch_zero(ctx), *one = ch_one(ctx);
    const ch_expr *sa = ch_fun1(ctx, CH_F_SIN, a), *ca = ch_fun1(ctx, CH_F_COS, a);
    const ch_expr *r0[3] = {ch_add(ctx, a, b), sa, c}, *r1[3] = {b, ch_mul(ctx, a, c), one};
    const ch_expr *A[9], *D[9];
    for (size_t j = 0; j < 3; j++) {
        A[j] = D[j] = r0[j];
        A[3 + j] = D[3 + j] = r1[j];
        A[6 + j] = ch_pow_si(ctx, r0[j], j + 1);
        /* sin(b) * row 0 + row 1 */
        D[6 + j] = ch_add(ctx, ch_mul(ctx, ch_fun1(ctx, CH_F_SIN, b), r0[j]), r1[j]);
    }
    CHECK(ch_numeric_rank(ctx, 3, 3, A, 6) == 3);
    CHECK(ch_numeric_rank(ctx, 3, 3, D, 6) == 2);
    CHECK(ch_numeric_rank(ctx, 2, 3, D, 6) == 2);
    CHECK(ch_numeric_rank(ctx, 3, 2, (const ch_expr *const[]){a, b, c, one, sa, ca}, 6) == 2);
    /* sin^2 + cos^2 - 1 evaluates to rounding noise: no rank */
    const ch_expr *eps = ch_sub(ctx, ch_add(ctx, ch_pow_si(ctx, sa, 2), ch_pow_si(ctx, ca, 2)), one);
    CHECK(ch_numeric_rank(ctx, 2, 2, (const ch_expr *const[]){eps, z, a, one}, 6) == 1);
    CHECK(ch_numeric_rank(ctx, 2, 2, (const ch_expr *const[]){z, one, a, z}, 6) == 2);
    /* column 1 repeats column 0: skipped, column 2 still counts */
    CHECK(ch_numeric_rank(ctx, 3, 3, (const ch_expr *const[]){a, a, z, b, b, z, z, z, c}, 6) == 2);
    CHECK(ch_numeric_rank(ctx, 2, 3, (const ch_expr *const[]){z, a, b, z, c, sa}, 6) == 2);
    /* row 2 = row 0 + row 1, row 1 starting with 0 */
    const ch_expr *b1 = ch_add(ctx, b, one);
    CHECK(ch_numeric_rank(ctx, 3, 3, (const ch_expr *const[]){a, b, c, z, one, z, a, b1, c}, 6) == 2);
    CHECK(ch_numeric_rank(ctx, 2, 2, (const ch_expr *const[]){z, z, z, z}, 6) == 0);
    /* a chain (row i: columns 0, 1 and 2..2+i) peels whole: triangular */
    const ch_expr *chain[4 * 6];
    for (size_t i = 0; i < 4; i++)
        for (size_t j = 0; j < 6; j++)
            chain[i * 6 + j] = j < 2 ? (j ? ch_fun1(ctx, CH_F_COS, b) : sa)
                               : j <= 2 + i ? ch_add(ctx, ch_num_si(ctx, (long)(i + j)), c)
                                            : z;
    CHECK(ch_numeric_rank(ctx, 4, 6, chain, 6) == 4);
    /* one row peels (column 3), the two left are dependent: rank 2 */
    const ch_expr *a2 = ch_mul(ctx, ch_num_si(ctx, 2), a), *b2 = ch_mul(ctx, ch_num_si(ctx, 2), b);
    CHECK(ch_numeric_rank(ctx, 3, 4, (const ch_expr *const[]){a, b, c, z, a2, b2, ch_add(ctx, c, c), z,
                                                              b, a, sa, one}, 6) == 2);
    ch_ctx_free(ctx);
}

int main(void)
{
    RUN(test_triangular);
    RUN(test_rank);
    RUN(test_examples);
    RUN(test_inline);
    return check_summary("test_reduce");
}
