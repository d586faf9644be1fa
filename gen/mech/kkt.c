/* kkt.c — the KKT system's values and its null-space reduction as
 * expressions (see kkt.h). */
#include "mech/kkt.h"

#include <stdlib.h>

#include "core/diff.h"
#include "core/factor.h"
#include "core/matrix.h"

/* -1 with the context's error out of memory (an allocation of this module
 * failed). */
static int oom(ch_ctx *ctx)
{
    ch_ctx_fail(ctx, CH_ERR_MEMORY, "out of memory");
    return -1;
}

int ch_kkt_values(ch_ctx *ctx, const ch_lagrange *L, const ch_expr **out)
{
    size_t n = L->n, k = L->k, i = 0;
    for (size_t j = 0; j < n * n; j++) out[i++] = L->M[j];
    for (size_t j = 0; j < k * n; j++) out[i++] = L->G[j];
    for (size_t j = 0; j < n; j++) out[i++] = ch_sub(ctx, L->Q[j], L->h[j]);
    for (size_t j = 0; j < k; j++) out[i++] = ch_neg(ctx, L->c[j]);
    for (size_t j = 0; j < i; j++)
        if (!out[j]) return -1;
    return 0;
}

int ch_kkt_pivots(const ch_kkt *s, int *prow, int *pcol)
{
    size_t k = s->k;
    unsigned char *rdone = calloc(k + 1, 1), *cdone = calloc(k + 1, 1);
    int ok = rdone && cdone ? 1 : -1;
    for (size_t j = 0; ok > 0 && j < k; j++) {
        int found = 0;
        for (size_t a = 0; a < k && !found; a++) {
            if (rdone[a]) continue;
            size_t count = 0, col = 0;
            for (size_t nu = 0; nu < k; nu++)
                if (!cdone[nu] && s->nz[ch_kkt_G(s, a, (size_t)s->dep[nu])]) count++, col = nu;
            if (count == 1) {
                prow[j] = (int)a, pcol[j] = (int)col;
                rdone[a] = cdone[col] = 1;
                found = 1;
            }
        }
        ok = found;
    }
    free(rdone);
    free(cdone);
    return ok;
}

/* Appends -a*b to t (at *nt), skipping zero factors (NULL is zero). */
static void term_sub(ch_ctx *ctx, const ch_expr **t, size_t *nt, const ch_expr *a,
                     const ch_expr *b)
{
    if (a && b && !ch_is_zero(a) && !ch_is_zero(b)) t[(*nt)++] = ch_neg(ctx, ch_mul(ctx, a, b));
}

static const ch_expr *nonzero(const ch_expr *e) { return e && ch_is_zero(e) ? NULL : e; }

/* term_sub with a's small sum (a itself, or the one among a product's
 * factors: at most CH_FACTOR_DIST_MAX terms) multiplied out over b: G_d's
 * -d (sin th_i sin th_j + cos th_i cos th_j) times X_j becomes two terms
 * with th_i's sine and cosine as factors, which factoring then takes
 * out of the row (X_1 = sin th_1 - tan th_0 cos th_1 is a small sum too:
 * left to ch_factor_sums, the product of the two stayed, four more
 * operations an axle). */
static void term_sub_dist(ch_ctx *ctx, const ch_expr **t, size_t *nt, const ch_expr *a,
                          const ch_expr *b)
{
    if (!a || !b || ch_is_zero(a) || ch_is_zero(b)) return;
    const ch_expr *sum = NULL, *rest = ch_one(ctx);
    if (a->kind == CH_ADD) {
        sum = a;
    } else if (a->kind == CH_MUL) {
        for (uint32_t j = 0; j < a->n; j++) {
            const ch_expr *y = a->pair[j].e;
            if (!sum && y->kind == CH_ADD && fmpq_is_one(a->pair[j].c))
                sum = y;
            else
                rest = ch_mul(ctx, rest, ch_pow_q(ctx, y, a->pair[j].c));
        }
        rest = ch_scale(ctx, a->num, rest);
    }
    if (!sum || !rest || !fmpq_is_zero(sum->num) || sum->n > CH_FACTOR_DIST_MAX) {
        term_sub(ctx, t, nt, a, b);
        return;
    }
    const ch_expr *rb = ch_mul(ctx, rest, b), **p = calloc(sum->n, sizeof *p);
    if (!p) { /* out of memory: the same value undistributed */
        term_sub(ctx, t, nt, a, b);
        return;
    }
    for (uint32_t j = 0; j < sum->n; j++)
        p[j] = ch_scale(ctx, sum->pair[j].c, ch_mul(ctx, sum->pair[j].e, rb));
    t[(*nt)++] = ch_neg(ctx, ch_add_n(ctx, sum->n, p));
    free(p);
}

/* X = G_d^-1 [G_i | r] by substitution in ch_kkt_pivots' order, X[c * w +
 * col] for dependent velocity c, G_d's pivots into piv_out (in that
 * order), B's dependent rows -X_i into bd when not NULL; t: scratch of
 * 2 (n + k) + 2 entries. Returns 0, 1 when G_d is not triangular, -1
 * out of memory. */
static int solve_x(ch_ctx *ctx, const ch_kkt *s, const ch_expr *const *v, const ch_expr **X,
                   const ch_expr **t, const ch_expr **piv_out, const ch_expr **bd, int distribute)
{
    size_t k = s->k, m = s->m, w = m + 1;
    int *prow = calloc(k + 1, sizeof *prow), *pcol = calloc(k + 1, sizeof *pcol);
    int tri = !prow || !pcol ? -1 : ch_kkt_pivots(s, prow, pcol);
    int rc = tri < 0 ? oom(ctx) : !tri;
    for (size_t j = 0; rc == 0 && j < k; j++) {
        size_t a = (size_t)prow[j], c = (size_t)pcol[j];
        const ch_expr *piv = v[ch_kkt_G(s, a, (size_t)s->dep[c])];
        const ch_expr *inv = ch_pow_si(ctx, piv, -1);
        piv_out[j] = piv;
        for (size_t col = 0; col < w; col++) {
            size_t nt = 0;
            const ch_expr *rhs = nonzero(v[col < m ? ch_kkt_G(s, a, (size_t)s->indep[col]) : ch_kkt_r(s, a)]);
            if (rhs) t[nt++] = rhs;
            for (size_t l = 0; l < j; l++) {
                size_t cl = (size_t)pcol[l];
                (distribute ? term_sub_dist : term_sub)(ctx, t, &nt, v[ch_kkt_G(s, a, (size_t)s->dep[cl])],
                                                        X[cl * w + col]);
            }
            X[c * w + col] = nt ? nonzero(ch_mul(ctx, ch_add_n(ctx, nt, t), inv)) : NULL;
        }
    }
    for (size_t nu = 0; rc == 0 && bd && nu < k; nu++)
        for (size_t col = 0; col < m; col++)
            bd[nu * m + col] = X[nu * w + col] ? ch_neg(ctx, X[nu * w + col]) : ch_zero(ctx);
    free(prow), free(pcol);
    return rc;
}

int ch_kkt_reduced(ch_ctx *ctx, const ch_kkt *s, const ch_expr *const *v,
                     const ch_expr **out, const ch_expr **bd)
{
    size_t n = s->n, k = s->k, m = s->m, w = m + 1;
    const ch_expr **X = calloc(k * w + 1, sizeof *X), **MB = calloc(n * m + 1, sizeof *MB);
    const ch_expr **t = calloc(2 * (n + k) + 2, sizeof *t);
    int rc = !X || !MB || !t ? oom(ctx) : -1;
    if (!X || !MB || !t || ch_ctx_exhausted(ctx)) goto done;
    /* (a constructor's NULL after a limit would read as zero below: the
     * context's error decides at the end) */
    if ((rc = solve_x(ctx, s, v, X, t, out + m * m + m, bd, 0))) goto done;
    /* MB = M B */
    for (size_t i = 0; i < n; i++)
        for (size_t col = 0; col < m; col++) {
            size_t nt = 0;
            const ch_expr *first = nonzero(v[ch_kkt_M(s, i, (size_t)s->indep[col])]);
            if (first) t[nt++] = first;
            for (size_t nu = 0; nu < k; nu++)
                term_sub(ctx, t, &nt, v[ch_kkt_M(s, i, (size_t)s->dep[nu])], X[nu * w + col]);
            MB[i * m + col] = nt ? nonzero(ch_add_n(ctx, nt, t)) : NULL;
        }
    /* A = B^T MB and f = B^T (b - M w), as in reduce() */
    for (size_t r = 0; r < m; r++)
        for (size_t col = 0; col <= m; col++) {
            size_t ir = (size_t)s->indep[r], nt = 0;
            const ch_expr *first = col < m ? MB[ir * m + col] : nonzero(v[ch_kkt_b(s, ir)]);
            if (first) t[nt++] = first;
            for (size_t nu = 0; nu < k; nu++) {
                size_t id = (size_t)s->dep[nu];
                term_sub(ctx, t, &nt, X[nu * w + r], col < m ? MB[id * m + col] : v[ch_kkt_b(s, id)]);
                if (col == m) term_sub(ctx, t, &nt, MB[id * m + r], X[nu * w + m]);
            }
            const ch_expr *s = ch_add_n(ctx, nt, t);
            if (col < m) out[r * m + col] = out[col * m + r] = s;
            else out[m * m + r] = s;
        }
    rc = ch_ctx_exhausted(ctx) ? -1 : 0;
    for (size_t i = 0; i < m * m + m + k; i++)
        if (!out[i]) rc = -1;
done:
    free(X), free(MB), free(t);
    return rc;
}

/* sum_nu X[nu][col] * y[dep nu] with the sign sign, appended to t (y indexed
 * by coordinate, NULL entries zero). */
static void x_dot(ch_ctx *ctx, const ch_kkt *s, const ch_expr *const *X, size_t col,
                  const ch_expr *const *y, int sign, const ch_expr **t, size_t *nt)
{
    for (size_t nu = 0; nu < s->k; nu++) {
        const ch_expr *x = X[nu * (s->m + 1) + col], *yy = y[s->dep[nu]];
        if (!x || !yy || ch_is_zero(yy)) continue;
        const ch_expr *p = ch_mul(ctx, x, yy);
        t[(*nt)++] = sign < 0 ? ch_neg(ctx, p) : p;
    }
}

/* Appends the terms of sign (B^T y)_r = sign (y_indep_r - sum_nu X_nu,r
 * y_dep_nu) to t (at *nt; zero ones left out), sign = +-1. */
static void bt_push(ch_ctx *ctx, const ch_kkt *s, const ch_expr *const *X, size_t r,
                    const ch_expr *const *y, int sign, const ch_expr **t, size_t *nt)
{
    const ch_expr *yi = y[s->indep[r]];
    if (!ch_is_zero(yi)) t[(*nt)++] = sign < 0 ? ch_neg(ctx, yi) : yi;
    x_dot(ctx, s, X, r, y, -sign, t, nt);
}

/* P_b = B^T a_b (m entries, NULL where zero): term b's velocity per unit
 * independent velocity. */
static void kane_p(ch_ctx *ctx, const ch_kkt *s, const ch_expr *const *X, const ch_expr *const *a,
                   const ch_expr **t, const ch_expr **P)
{
    for (size_t r = 0; r < s->m; r++) {
        size_t nt = 0;
        bt_push(ctx, s, X, r, a, 1, t, &nt);
        P[r] = nonzero(ch_add_n(ctx, nt, t));
    }
}

/* A = sum_b mu_b P_b P_b^T (m x m, symmetric) into out. */
static void kane_a(ch_ctx *ctx, size_t m, const ch_kane *kn, const ch_expr *const *P,
                   const ch_expr **t, const ch_expr **out)
{
    for (size_t r = 0; r < m; r++)
        for (size_t c = r; c < m; c++) {
            size_t nt = 0;
            for (size_t b = 0; b < kn->nb; b++)
                if (P[b * m + r] && P[b * m + c])
                    t[nt++] = ch_mul(ctx, kn->mu[b], ch_mul(ctx, P[b * m + r], P[b * m + c]));
            out[r * m + c] = out[c * m + r] = ch_add_n(ctx, nt, t);
        }
}

/* What both Kane builders start from: X = G_d^-1 [G_i | r] (solve_x), a
 * scratch t large enough for every sum they form, and room for the
 * terms' P_b (m each). */
typedef struct {
    const ch_expr **X, **t, **P;
} kane_base;

/* 0, 1 when G_d is not triangular, -1 (out of memory, a failed context,
 * kn not of s's size); G_d's pivots into piv_out. kane_base_free in
 * every case. */
static int kane_base_init(ch_ctx *ctx, const ch_kkt *s, const ch_expr *const *v,
                          const ch_kane *kn, const ch_expr **piv_out, const ch_expr **bd,
                          kane_base *kb)
{
    size_t n = s->n, k = s->k, nb = kn->nb;
    kb->X = calloc(k * (s->m + 1) + 1, sizeof *kb->X);
    kb->t = calloc(2 * (n + k + nb) + 2, sizeof *kb->t);
    kb->P = calloc(nb * s->m + 1, sizeof *kb->P);
    if (!kb->X || !kb->t || !kb->P) return oom(ctx);
    if (ch_ctx_exhausted(ctx) || kn->n != n) return -1;
    return solve_x(ctx, s, v, kb->X, kb->t, piv_out, bd, 1);
}

static void kane_base_free(kane_base *kb)
{
    free(kb->X), free(kb->t), free(kb->P);
}

int ch_kkt_hamilton_kane(ch_ctx *ctx, const ch_kkt *s, const ch_expr *const *v,
                     const ch_kane *kn, const ch_expr *const *y, const ch_expr **yt,
                     const ch_expr **eta, const ch_expr **bd, const ch_expr **A)
{
    kane_base kb = {0};
    const ch_expr **piv = calloc(s->k + 1, sizeof *piv);
    int rc = piv ? kane_base_init(ctx, s, v, kn, piv, bd, &kb) : oom(ctx);
    if (rc) goto done;
    size_t n = s->n, m = s->m, nb = kn->nb;
    const ch_expr **X = kb.X, **t = kb.t, **P = kb.P;
    for (size_t b = 0; b < nb; b++) kane_p(ctx, s, X, kn->a + b * n, t, P + b * m);
    for (size_t r = 0; r < m; r++) {
        /* (B^T F)_r, then per term mu_b E_b (dP_b/dt - B^T g_b)_r; B^T g_b
         * in a sum of its own behind the terms taken so far */
        size_t nt = 0;
        bt_push(ctx, s, X, r, kn->F, 1, t, &nt);
        for (size_t b = 0; b < nb; b++) {
            size_t n0 = nt;
            if (P[b * m + r]) t[nt++] = ch_diff_t(ctx, P[b * m + r]);
            bt_push(ctx, s, X, r, kn->g + b * n, -1, t, &nt);
            const ch_expr *inner = nt > n0 ? nonzero(ch_add_n(ctx, nt - n0, t + n0)) : NULL;
            nt = n0;
            if (inner) t[nt++] = ch_mul(ctx, kn->mu[b], ch_mul(ctx, kn->E[b], inner));
        }
        yt[r] = ch_add_n(ctx, nt, t);
    }
    rc = ch_ctx_exhausted(ctx) ? -1 : 0;
    for (size_t r = 0; r < m; r++)
        if (!yt[r]) rc = -1;
    /* eta = A^-1 y: y* = A v, as the constraints and the E_b are
     * homogeneous in the velocities; A = sum_b mu_b P_b P_b^T as in
     * ch_kkt_reduced_kane */
    if (rc == 0) kane_a(ctx, m, kn, P, t, A);
    if (rc == 0 && ch_mat_solve(ctx, m, A, 1, y, eta)) {
        if (ch_ctx_error(ctx)->code == CH_ERR_MEMORY) rc = -1;
        else ch_ctx_clear_error(ctx); /* yt stays good: eta from the closed form */
        eta[0] = NULL;
    }
done:
    kane_base_free(&kb);
    free(piv);
    return rc;
}

int ch_kkt_reduced_kane(ch_ctx *ctx, const ch_kkt *s, const ch_expr *const *v,
                    const ch_kane *kn, const ch_expr **out, const ch_expr **bd)
{
    kane_base kb = {0};
    /* per term: a . w + V(E) */
    const ch_expr **acc = calloc(kn->nb + 1, sizeof *acc);
    int rc = acc ? kane_base_init(ctx, s, v, kn, out + s->m * s->m + s->m, bd, &kb) : oom(ctx);
    if (rc) goto done;
    size_t n = s->n, k = s->k, m = s->m, nb = kn->nb;
    const ch_expr **X = kb.X, **t = kb.t, **P = kb.P;
    for (size_t b = 0; b < nb; b++) {
        const ch_expr *const *a = kn->a + b * n;
        kane_p(ctx, s, X, a, t, P + b * m);
        size_t nt = 0;
        if (!ch_is_zero(kn->acc[b])) t[nt++] = kn->acc[b];
        x_dot(ctx, s, X, m, a, 1, t, &nt);
        acc[b] = nonzero(ch_add_n(ctx, nt, t));
    }
    kane_a(ctx, m, kn, P, t, out);
    /* f = B^T F - sum_b mu_b (P_b (V(E_b) + a_b . w) + E_b B^T g_b) */
    for (size_t r = 0; r < m; r++) {
        size_t nt = 0;
        bt_push(ctx, s, X, r, kn->F, 1, t, &nt);
        for (size_t b = 0; b < nb; b++) {
            size_t n0 = nt; /* B^T g_b, into a sum of its own */
            bt_push(ctx, s, X, r, kn->g + b * n, 1, t, &nt);
            const ch_expr *bg = nt > n0 ? ch_add_n(ctx, nt - n0, t + n0) : NULL;
            nt = n0;
            const ch_expr *pa = P[b * m + r] && acc[b] ? ch_mul(ctx, P[b * m + r], acc[b]) : NULL;
            const ch_expr *eg = bg && !ch_is_zero(bg) ? ch_mul(ctx, kn->E[b], bg) : NULL;
            const ch_expr *both = pa && eg ? ch_add(ctx, pa, eg) : pa ? pa : eg;
            if (both) t[nt++] = ch_neg(ctx, ch_mul(ctx, kn->mu[b], both));
        }
        out[m * m + r] = ch_add_n(ctx, nt, t);
    }
    rc = ch_ctx_exhausted(ctx) ? -1 : 0;
    for (size_t i = 0; i < m * m + m + k; i++)
        if (!out[i]) rc = -1;
done:
    kane_base_free(&kb);
    free(acc);
    return rc;
}

int ch_kkt_hamilton_form(ch_ctx *ctx, const ch_model *mod, const ch_lagrange *L,
                         const ch_manifold *mf, const ch_hamilton *ham, const ch_kane *kn,
                         ch_kkt_ham *out)
{
    size_t n = L->n, k = L->k, m = n - k, nv = n * n + k * n + n + k;
    if (!ham->exists || k == 0) return 1;
    const ch_expr **yt = ch_ctx_alloc(ctx, m * sizeof *yt), **eta = ch_ctx_alloc(ctx, m * sizeof *eta);
    const ch_expr **alpha = ch_ctx_alloc(ctx, k * sizeof *alpha);
    const ch_expr **ystar = ch_ctx_alloc(ctx, m * sizeof *ystar);
    const ch_expr **v = ch_ctx_alloc(ctx, nv * sizeof *v), **bd = ch_ctx_alloc(ctx, k * m * sizeof *bd);
    const ch_expr **u = ch_ctx_alloc(ctx, m * sizeof *u), **A = ch_ctx_alloc(ctx, m * m * sizeof *A);
    unsigned char *nz = ch_ctx_alloc(ctx, nv);
    if (!yt || !eta || !alpha || !ystar || !v || !bd || !u || !A || !nz) return -1;
    for (size_t j = 0; j < k * n; j++) { /* ch_kkt_hamilton_kane reads G only */
        v[n * n + j] = L->G[j];
        nz[n * n + j] = !ch_is_zero(L->G[j]);
    }
    ch_kkt sys = {n, k, m, mf->dep, mf->indep, nz};
    int rc = ch_kkt_hamilton_kane(ctx, &sys, v, kn, ham->y, yt, eta, bd, A);
    for (size_t r = 0; r < m; r++) u[r] = mod->qt[mf->indep[r]];
    if (rc == 0 && (ch_mat_vec(ctx, k, m, bd, u, alpha) || ch_mat_vec(ctx, m, m, A, u, ystar)))
        rc = -1;
    if (rc == 0) {
        out->yt = yt, out->eta = eta[0] ? eta : NULL, out->alpha = alpha, out->ystar = ystar;
        return 0;
    }
    if (rc < 0 && ch_ctx_error(ctx)->code == CH_ERR_MEMORY) return -1;
    ch_ctx_clear_error(ctx); /* a limit: the closed form instead */
    return 1;
}
