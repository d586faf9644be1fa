/* test_kkt.c — the integrated systems of mech/kkt.c and mech/kane.c
 * (docs/theory.md) against independent answers: the null-space reduction
 * against a dense numerical solve of the KKT system, the Kane form's
 * reduction against the M b one, the Kane form's hamilton right side
 * against the closed-form H*, the Kane energy against the derivation's. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "core/eval.h"
#include "core/matrix.h"
#include "mech/kkt.h"
#include "mech/mechanics.h"
#include "tests/trailer.h"

static char *trailer2; /* trailer_text(2) */

/* ch_kkt_reduced_kane against ch_kkt_reduced on the same values: A, f and
 * G_d's pivots agree at generic points (the two are identities in t, q
 * and all of q', on the constraints or not). The 2-trailer's velocities
 * are derivatives of defined points (g = 0); kaneg's E = th' + cos(th) x'
 * and sin(x) y' + x' are not (g != 0, the second in the dependent
 * velocity's column), and another velocity has a weight depending on t;
 * a potential and a force too. The Kane form's energy (ch_kane_energy) is
 * the derivation's at the same points. Lagrangians not of the form are
 * refused. */
static const char kaneg_text[] =
    "model kaneg\n"
    "coordinates x y th\n"
    "parameters m=1.3 J=0.4 k=2 F=0.7\n"
    "lagrangian m/2*(x'^2 + y'^2) + J/2*(th' + cos(th)*x')^2 + m/4*(y' + t*x')^2"
    " + J/3*(sin(x)*y' + x')^2 - k/2*(x^2 + y^2) + sin(th)*x\n"
    "force x = F*cos(th)\n"
    "constraint -sin(th)*x' + cos(th)*y' = 0\n"
    "dependent y'\n";

/* Parses and derives text in a fresh *ctx; 0, or nonzero (checked). */
static int derive_text(const char *name, const char *text, ch_ctx **ctx, ch_model **m,
                       ch_mechanics **d)
{
    ch_error err;
    ch_error_clear(&err);
    *ctx = ch_ctx_new();
    int rc = ch_model_parse(*ctx, name, text, strlen(text), m, &err);
    if (rc == 0) rc = ch_mechanics_derive(*ctx, *m, d, &err);
    CHECK_MSG(rc == 0, "%s: %s", name, err.msg);
    return rc;
}

static void kane_agrees(const char *name, const char *text, int want)
{
    ch_ctx *ctx;
    ch_model *m;
    ch_mechanics *d;
    int rc = derive_text(name, text, &ctx, &m, &d);
    ch_kane kn;
    int split = rc ? -2 : ch_kane_split(ctx, m, d->lag.Q, &kn);
    CHECK_MSG(split == (want ? 0 : 1), "%s: ch_kane_split %d", name, split);
    if (rc || split || !want) {
        ch_ctx_free(ctx);
        return;
    }
    const ch_lagrange *L = &d->lag;
    size_t n = L->n, k = L->k, mi = n - k, nv = n * n + k * n + n + k, no = mi * mi + mi + k;
    const ch_expr **v = calloc(nv, sizeof *v), **o1 = calloc(no, sizeof *o1),
                  **o2 = calloc(no, sizeof *o2);
    unsigned char *nz = calloc(nv, 1);
    CHECK_MSG(ch_kkt_values(ctx, L, v) == 0, "%s: values", name);
    for (size_t j = 0; j < nv; j++) nz[j] = !ch_is_zero(v[j]);
    ch_kkt sys = {n, k, mi, d->mf.dep, d->mf.indep, nz};
    CHECK_MSG(ch_kkt_reduced(ctx, &sys, v, o1, NULL) == 0, "%s: exprs", name);
    CHECK_MSG(ch_kkt_reduced_kane(ctx, &sys, v, &kn, o2, NULL) == 0, "%s: kane", name);
    double *sv = calloc(ch_ctx_nsyms(ctx) + 1, sizeof *sv), worst = 0.0;
    for (int pt = 0; pt < 6; pt++) {
        ch_eval_generic_point(ctx, 91, pt, sv);
        for (size_t j = 0; j < no; j++) {
            double a = ch_eval_d(ctx, o1[j], sv), b = ch_eval_d(ctx, o2[j], sv);
            double diff = fabs(a - b) / (1.0 + fabs(a));
            if (!(diff <= worst)) worst = diff;
        }
    }
    CHECK_MSG(worst < 1e-11, "%s: Kane and M b reductions differ by %g", name, worst);
    /* the energy sum mu/2 E^2 - L0 is the derivation's q'.p - L */
    const ch_expr *en = ch_kane_energy(ctx, &kn);
    CHECK_MSG(en != NULL, "%s: ch_kane_energy", name);
    worst = 0.0;
    for (int pt = 0; en && pt < 6; pt++) {
        ch_eval_generic_point(ctx, 37, pt, sv);
        double a = ch_eval_d(ctx, L->energy, sv), b = ch_eval_d(ctx, en, sv);
        double diff = fabs(a - b) / (1.0 + fabs(a));
        if (!(diff <= worst)) worst = diff;
    }
    CHECK_MSG(worst < 1e-11, "%s: Kane and closed-form energy differ by %g", name, worst);
    free(v), free(o1), free(o2), free(nz), free(sv);
    ch_ctx_free(ctx);
}

/* ch_kkt_hamilton_kane against the closed-form H* of the derivation: at
 * generic (t, q, y), the Kane form's y*_t, with the velocities the closed
 * form gives (eta, alpha(eta)), its eta = A^-1 y, its B_dep eta and its
 * A eta agree with 002 eq. 4.17's y*_t, eta, alpha(eta) and y. */
static void hamilton_kane_agrees(const char *name, const char *text)
{
    ch_ctx *ctx;
    ch_model *m;
    ch_mechanics *d;
    int rc = derive_text(name, text, &ctx, &m, &d);
    ch_kane kn;
    if (rc || ch_kane_split(ctx, m, d->lag.Q, &kn) != 0 || !d->ham.exists || !d->ham.qt_dep) {
        CHECK_MSG(0, "%s: no Kane form or no closed-form H*", name);
        ch_ctx_free(ctx);
        return;
    }
    const ch_lagrange *L = &d->lag;
    size_t n = L->n, k = L->k, mi = n - k, nv = n * n + k * n + n + k;
    const ch_expr **v = calloc(nv, sizeof *v), **o = calloc(2 * mi, sizeof *o),
                  **bd = calloc(k * mi, sizeof *bd);
    unsigned char *nz = calloc(nv, 1);
    for (size_t j = 0; j < k * n; j++) {
        v[n * n + j] = L->G[j];
        nz[n * n + j] = !ch_is_zero(L->G[j]);
    }
    ch_kkt sys = {n, k, mi, d->mf.dep, d->mf.indep, nz};
    const ch_expr *A[16];
    CHECK_MSG(mi <= 4 && ch_kkt_hamilton_kane(ctx, &sys, v, &kn, d->ham.y, o, o + mi, bd, A) == 0 &&
                  o[mi],
              "%s: ch_kkt_hamilton_kane", name);
    double *sv = calloc(ch_ctx_nsyms(ctx) + 1, sizeof *sv), worst = 0.0;
    for (int pt = 0; o[mi] && pt < 6; pt++) {
        ch_eval_generic_point(ctx, 57, pt, sv);
        double vel[64];
        for (size_t r = 0; r < mi; r++) vel[d->mf.indep[r]] = ch_eval_d(ctx, d->ham.eta[r], sv);
        for (size_t nu = 0; nu < k; nu++)
            vel[d->mf.dep[nu]] = ch_eval_d(ctx, d->ham.qt_dep[nu], sv);
        for (size_t j = 0; j < n; j++) sv[ch_sym_of(m->qt[j])->sid] = vel[j];
        for (size_t r = 0; r < 2 * mi; r++) {
            const ch_expr *closed = r < mi ? d->ham.yt[r] : d->ham.eta[r - mi];
            double a = ch_eval_d(ctx, closed, sv), b = ch_eval_d(ctx, o[r], sv);
            double diff = fabs(a - b) / (1.0 + fabs(a));
            if (!(diff <= worst)) worst = diff;
        }
        for (size_t r = 0; r < mi; r++) { /* y* = A eta is y */
            double a = sv[ch_sym_of(d->ham.y[r])->sid], b = 0.0;
            for (size_t c = 0; c < mi; c++) b += ch_eval_d(ctx, A[r * mi + c], sv) * vel[d->mf.indep[c]];
            double diff = fabs(a - b) / (1.0 + fabs(a));
            if (!(diff <= worst)) worst = diff;
        }
        for (size_t nu = 0; nu < k; nu++) { /* alpha = B_dep eta */
            double a = vel[d->mf.dep[nu]], b = 0.0;
            for (size_t r = 0; r < mi; r++) b += ch_eval_d(ctx, bd[nu * mi + r], sv) * vel[d->mf.indep[r]];
            double diff = fabs(a - b) / (1.0 + fabs(a));
            if (!(diff <= worst)) worst = diff;
        }
    }
    CHECK_MSG(worst < 1e-11, "%s: Kane and closed-form y*_t, eta, alpha or y* differ by %g",
              name, worst);
    free(v), free(o), free(bd), free(nz), free(sv);
    ch_ctx_free(ctx);
}

/* The split at any size: n coordinates, L = q_0'^2/2 + sum_i (q_i' +
 * q_{i+1}')^2/2 - q_i^2/2 has n terms of one weight (it was not tried
 * beyond 256 coordinates; the closed forms it spares are far larger
 * there). */
static void kane_large(int n)
{
    ch_buf t;
    ch_buf_init(&t);
    ch_buf_put(&t, "model large\ncoordinates");
    for (int i = 0; i < n; i++) ch_buf_printf(&t, " q%d", i);
    ch_buf_put(&t, "\nlagrangian q0'^2/2");
    for (int i = 0; i + 1 < n; i++) ch_buf_printf(&t, " + (q%d' + q%d')^2/2", i, i + 1);
    for (int i = 0; i < n; i++) ch_buf_printf(&t, " - q%d^2/2", i);
    ch_buf_put(&t, "\n");
    ch_ctx *ctx;
    ch_model *m;
    ch_mechanics *d;
    if (derive_text("large", t.s, &ctx, &m, &d) == 0) {
        ch_kane kn;
        int split = ch_kane_split(ctx, m, d->lag.Q, &kn);
        CHECK_MSG(split == 0, "n = %d: ch_kane_split %d", n, split);
        if (split == 0)
            CHECK_MSG(kn.nb == (size_t)n && kn.n == (size_t)n, "%zu terms of %zu", kn.nb, kn.n);
    }
    ch_ctx_free(ctx);
    ch_buf_free(&t);
}

static void test_kane(void)
{
    hamilton_kane_agrees("trailer2", trailer2);
    hamilton_kane_agrees("kaneg", kaneg_text);
    {
        char *t3 = trailer_text(3);
        if (t3) hamilton_kane_agrees("trailer3", t3);
        free(t3);
    }
    kane_agrees("trailer2", trailer2, 1);
    kane_agrees("kaneg", kaneg_text, 1);
    kane_agrees("quartic", "model quartic\ncoordinates x y\n"
                           "lagrangian (x'^2 + y'^2)/2 + (x'^2 + y'^2)^2/4\n", 0);
    kane_agrees("weight", "model weight\ncoordinates x y\n"
                          "lagrangian cos(y)*x'^2/2 + y'^2/2\n", 0);
    kane_agrees("linear", "model linear\ncoordinates x y\n"
                          "lagrangian (x'^2 + y'^2)/2 + x*y'\n", 0);
    kane_large(300);
}

/* ch_kkt_reduced against the KKT system itself: at generic points (all
 * velocities free, on the constraints or not) A^-1 f are the independent
 * accelerations of the dense solve of [M -G^T; G 0][q''; lambda] = [b; r]
 * on ch_kkt_values' values. G_d not triangular is refused. */
static void reduced_agrees_kkt(const char *name, const char *text)
{
    ch_ctx *ctx;
    ch_model *m;
    ch_mechanics *d;
    if (derive_text(name, text, &ctx, &m, &d)) {
        ch_ctx_free(ctx);
        return;
    }
    const ch_lagrange *L = &d->lag;
    size_t n = L->n, k = L->k, mi = n - k, nv = n * n + k * n + n + k, N = n + k;
    const ch_expr **v = calloc(nv, sizeof *v), **o = calloc(mi * mi + mi + k, sizeof *o);
    unsigned char *nz = calloc(nv, 1);
    double *sv = calloc(ch_ctx_nsyms(ctx) + 1, sizeof *sv), *val = calloc(nv, sizeof *val);
    double *a = calloc(N * N, sizeof *a), *rhs = calloc(N, sizeof *rhs);
    double *A = calloc(mi * mi + 1, sizeof *A), *f = calloc(mi + 1, sizeof *f), worst = 0;
    CHECK(v && o && nz && sv && val && a && rhs && A && f);
    CHECK_MSG(ch_kkt_values(ctx, L, v) == 0, "%s: values", name);
    for (size_t j = 0; j < nv; j++) nz[j] = !ch_is_zero(v[j]);
    ch_kkt sys = {n, k, mi, d->mf.dep, d->mf.indep, nz};
    int rc = ch_kkt_reduced(ctx, &sys, v, o, NULL);
    CHECK_MSG(rc == 0, "%s: ch_kkt_reduced %d", name, rc);
    int points = 0;
    for (int pt = 0; rc == 0 && pt < 6; pt++) {
        ch_eval_generic_point(ctx, 29, pt, sv);
        for (size_t j = 0; j < nv; j++) val[j] = ch_eval_d(ctx, v[j], sv);
        memset(a, 0, N * N * sizeof *a);
        for (size_t i = 0; i < n; i++) {
            for (size_t j = 0; j < n; j++) a[i * N + j] = val[ch_kkt_M(&sys, i, j)];
            rhs[i] = val[ch_kkt_b(&sys, i)];
        }
        for (size_t c = 0; c < k; c++) {
            for (size_t j = 0; j < n; j++) {
                a[(n + c) * N + j] = val[ch_kkt_G(&sys, c, j)];
                a[j * N + n + c] = -val[ch_kkt_G(&sys, c, j)];
            }
            rhs[n + c] = val[ch_kkt_r(&sys, c)];
        }
        if (ch_dense_solve(N, a, rhs, 0)) continue; /* (a singular point: none expected) */
        for (size_t j = 0; j < mi * mi; j++) A[j] = ch_eval_d(ctx, o[j], sv);
        for (size_t j = 0; j < mi; j++) f[j] = ch_eval_d(ctx, o[mi * mi + j], sv);
        if (ch_dense_solve(mi, A, f, 0)) continue;
        points++;
        for (size_t r = 0; r < mi; r++) {
            double want = rhs[d->mf.indep[r]];
            double diff = fabs(f[r] - want) / (1.0 + fabs(want));
            if (!(diff <= worst)) worst = diff;
        }
    }
    CHECK_MSG(points >= 4, "%s: %d regular points", name, points);
    CHECK_MSG(worst < 1e-10, "%s: null-space and KKT accelerations differ by %g", name, worst);
    free(v), free(o), free(nz), free(sv), free(val), free(a), free(rhs), free(A), free(f);
    ch_ctx_free(ctx);
}

static void test_reduced_kkt(void)
{
    reduced_agrees_kkt("trailer2", trailer2);
    reduced_agrees_kkt("kaneg", kaneg_text);
    char *t5 = trailer_text(5);
    if (t5) reduced_agrees_kkt("trailer5", t5);
    free(t5);
    /* G_d not triangular: refused */
    ch_ctx *ctx;
    ch_model *m;
    ch_mechanics *d;
    const char *coupled = "model coupled\ncoordinates x y z\n"
                          "lagrangian (x'^2 + y'^2 + z'^2)/2\n"
                          "constraint x' + y' + z' = 0\nconstraint x' - y' + 2*z' = 0\n"
                          "dependent x' y'\n";
    if (derive_text("coupled", coupled, &ctx, &m, &d) == 0) {
        const ch_lagrange *L = &d->lag;
        size_t n = L->n, k = L->k, nv = n * n + k * n + n + k;
        const ch_expr *v[32], *o[32];
        unsigned char nz[32];
        CHECK(nv <= 32 && ch_kkt_values(ctx, L, v) == 0);
        for (size_t j = 0; j < nv; j++) nz[j] = !ch_is_zero(v[j]);
        ch_kkt sys = {n, k, n - k, d->mf.dep, d->mf.indep, nz};
        int prow[4], pcol[4];
        CHECK(ch_kkt_pivots(&sys, prow, pcol) == 0);
        CHECK(ch_kkt_reduced(ctx, &sys, v, o, NULL) == 1);
    }
    ch_ctx_free(ctx);
}

int main(void)
{
    trailer2 = trailer_text(2);
    CHECK(trailer2 != NULL);
    if (trailer2) {
        RUN(test_reduced_kkt);
        RUN(test_kane);
    }
    free(trailer2);
    return check_summary("test_kkt");
}
