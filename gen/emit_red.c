/* emit_red.c — kn_acc from the full form's data by small numeric solves
 * (see emit_red.h). */
#include "emit_red.h"

#include <stdio.h>
#include <stdlib.h>

typedef struct {
    const ch_redsolve *in;
    ch_buf *b;
    ch_opcount *ops;
    size_t n, k, m, w;        /* w = m + 1: columns of X */
    unsigned char *xnz;       /* k*w: X entry may be nonzero */
    unsigned char *mbnz;      /* n*m: MB = M B entry may be nonzero */
    unsigned char *gnz;       /* n: g = b - M w entry may be nonzero */
    unsigned char *anz;       /* m*m: B^T M B entry may be nonzero */
    int use_d, use_gd;        /* which locals the body needs */
} gen;

/* Offsets of kn_dyn's outputs in o. */
static size_t oM(const gen *g, size_t i, size_t j) { return i * g->n + j; }
static size_t oG(const gen *g, size_t a, size_t j) { return g->n * g->n + a * g->n + j; }
static size_t ob(const gen *g, size_t i) { return g->n * g->n + g->k * g->n + i; }
static size_t orr(const gen *g, size_t a) { return g->n * g->n + g->k * g->n + g->n + a; }
static int nz(const gen *g, size_t off) { return g->in->nz[off] != 0; }

/* One statement "lhs = first - a1*b1 - a2*b2 ...;" with its operations
 * counted; "0.0" when there is no term. */
typedef struct {
    gen *g;
    int nterms;
} sum;

static void sum_start(sum *s, gen *g, const char *fmt, size_t i1, size_t i2)
{
    s->g = g;
    s->nterms = 0;
    ch_buf_put(g->b, "    ");
    ch_buf_printf(g->b, fmt, i1, i2);
    ch_buf_put(g->b, " = ");
}

static void sum_first(sum *s, const char *fmt, size_t i1)
{
    ch_buf_printf(s->g->b, fmt, i1);
    s->nterms++;
}

/* - A * B where A and B are "o[..]"-like texts built from formats. */
static void sum_sub(sum *s, const char *fa, size_t ia, const char *fb, size_t ib)
{
    ch_buf_put(s->g->b, s->nterms ? " - " : "-");
    ch_buf_printf(s->g->b, fa, ia);
    ch_buf_put(s->g->b, " * ");
    ch_buf_printf(s->g->b, fb, ib);
    s->g->ops->mul += 1;
    s->g->ops->add += 1; /* a subtraction, or the leading negation */
    s->nterms++;
}

static void sum_end(sum *s) { ch_buf_put(s->g->b, s->nterms ? ";\n" : "0.0;\n"); }

/* Rows and columns of G_d in an order that makes it lower triangular:
 * each next row has exactly one nonzero among the columns not yet
 * solved. 0 when there is no such order. */
static int tri_order(const gen *g, int *prow, int *pcol)
{
    size_t k = g->k;
    unsigned char *rdone = calloc(k + 1, 1), *cdone = calloc(k + 1, 1);
    int ok = rdone && cdone;
    for (size_t j = 0; ok && j < k; j++) {
        int found = 0;
        for (size_t a = 0; a < k && !found; a++) {
            if (rdone[a]) continue;
            size_t count = 0, col = 0;
            for (size_t nu = 0; nu < k; nu++)
                if (!cdone[nu] && nz(g, oG(g, a, (size_t)g->in->dep[nu]))) count++, col = nu;
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

/* X = G_d^-1 [G_i | r] by substitution in the triangular order. */
static void solve_triangular(gen *g, const int *prow, const int *pcol)
{
    const ch_redsolve *in = g->in;
    g->use_d = 1;
    for (size_t j = 0; j < g->k; j++) {
        size_t a = (size_t)prow[j], c = (size_t)pcol[j];
        size_t piv = oG(g, a, (size_t)in->dep[c]);
        ch_buf_printf(g->b, "    if (o[%zu] == 0.0) return 1;\n    d = 1.0 / o[%zu];\n", piv, piv);
        g->ops->div += 1;
        for (size_t col = 0; col < g->w; col++) {
            size_t rhs = col < g->m ? oG(g, a, (size_t)in->indep[col]) : orr(g, a);
            int any = nz(g, rhs);
            for (size_t l = 0; l < j && !any; l++)
                any = nz(g, oG(g, a, (size_t)in->dep[pcol[l]])) && g->xnz[(size_t)pcol[l] * g->w + col];
            if (!any) continue;
            g->xnz[c * g->w + col] = 1;
            sum s;
            sum_start(&s, g, "X[%zu]", c * g->w + col, 0);
            ch_buf_put(g->b, "(");
            if (nz(g, rhs)) sum_first(&s, "o[%zu]", rhs);
            for (size_t l = 0; l < j; l++) {
                size_t cl = (size_t)pcol[l], off = oG(g, a, (size_t)in->dep[cl]);
                if (nz(g, off) && g->xnz[cl * g->w + col])
                    sum_sub(&s, "o[%zu]", off, "X[%zu]", cl * g->w + col);
            }
            ch_buf_put(g->b, ") * d;\n");
            g->ops->mul += 1;
        }
    }
}

/* The operations of la_solve's LU path on n x n with nrhs right sides. */
static void lu_ops(size_t n, size_t nrhs, ch_opcount *ops)
{
    for (size_t kk = 0; kk < n; kk++) {
        double below = (double)(n - kk - 1);
        ops->div += below;
        ops->mul += below * below;
        ops->add += below * below;
    }
    ops->mul += (double)nrhs * (double)n * (double)n;
    ops->add += (double)nrhs * (double)n * (double)n;
    ops->div += (double)nrhs * (double)n;
}

void ch_la_solve_ops(size_t n, size_t nrhs, ch_opcount *ops)
{
    for (size_t j = 0; j < n; j++) {
        double jj = (double)j, below = (double)(n - j - 1);
        ops->mul += jj + below * jj;
        ops->add += jj + below * jj;
        ops->call += 1;   /* sqrt */
        ops->div += below;
    }
    ops->mul += (double)nrhs * (double)n * (double)(n - 1);
    ops->add += (double)nrhs * (double)n * (double)(n - 1);
    ops->div += 2.0 * (double)nrhs * (double)n;
}

/* X = G_d^-1 [G_i | r] by la_solve (LU with pivoting). */
static void solve_dense(gen *g)
{
    const ch_redsolve *in = g->in;
    size_t k = g->k;
    g->use_gd = 1;
    for (size_t a = 0; a < k; a++) {
        for (size_t nu = 0; nu < k; nu++)
            ch_buf_printf(g->b, "    Gd[%zu] = o[%zu];\n", a * k + nu, oG(g, a, (size_t)in->dep[nu]));
        for (size_t s = 0; s < g->m; s++)
            ch_buf_printf(g->b, "    X[%zu] = o[%zu];\n", a * g->w + s, oG(g, a, (size_t)in->indep[s]));
        ch_buf_printf(g->b, "    X[%zu] = o[%zu];\n", a * g->w + g->m, orr(g, a));
    }
    ch_buf_printf(g->b, "    if (la_solve(%zu, %zu, Gd, X, 0, w, piv)) return 1;\n", k, g->w);
    for (size_t i = 0; i < k * g->w; i++) g->xnz[i] = 1;
    lu_ops(k, g->w, g->ops);
}

/* MB = M B (n x m) and g = b - M w (n): B's dependent rows are -X_i and
 * w's are X_r, so both are "M column minus M_dep times X column". */
static void products(gen *g)
{
    const ch_redsolve *in = g->in;
    for (size_t i = 0; i < g->n; i++)
        for (size_t col = 0; col < g->w; col++) {
            size_t first = col < g->m ? oM(g, i, (size_t)in->indep[col]) : ob(g, i);
            int any = nz(g, first);
            for (size_t nu = 0; nu < g->k && !any; nu++)
                any = nz(g, oM(g, i, (size_t)in->dep[nu])) && g->xnz[nu * g->w + col];
            if (!any) continue;
            if (col < g->m) g->mbnz[i * g->m + col] = 1;
            else g->gnz[i] = 1;
            sum s;
            if (col < g->m) sum_start(&s, g, "MB[%zu]", i * g->m + col, 0);
            else sum_start(&s, g, "g[%zu]", i, 0);
            if (nz(g, first)) sum_first(&s, "o[%zu]", first);
            for (size_t nu = 0; nu < g->k; nu++) {
                size_t off = oM(g, i, (size_t)in->dep[nu]);
                if (nz(g, off) && g->xnz[nu * g->w + col])
                    sum_sub(&s, "o[%zu]", off, "X[%zu]", nu * g->w + col);
            }
            sum_end(&s);
        }
}

/* A = B^T MB (lower triangle, mirrored) and f = B^T g. */
static void reduce(gen *g)
{
    const ch_redsolve *in = g->in;
    size_t m = g->m;
    for (size_t r = 0; r < m; r++)
        for (size_t col = 0; col <= m; col++) {
            if (col < m && col > r) continue;
            size_t ir = (size_t)in->indep[r];
            sum s;
            if (col < m) sum_start(&s, g, "A[%zu]", r * m + col, 0);
            else sum_start(&s, g, "f[%zu]", r, 0);
            if (col < m && g->mbnz[ir * m + col]) sum_first(&s, "MB[%zu]", ir * m + col);
            if (col == m && g->gnz[ir]) sum_first(&s, "g[%zu]", ir);
            for (size_t nu = 0; nu < g->k; nu++) {
                size_t id = (size_t)in->dep[nu];
                if (!g->xnz[nu * g->w + r]) continue;
                if (col < m && g->mbnz[id * m + col])
                    sum_sub(&s, "X[%zu]", nu * g->w + r, "MB[%zu]", id * m + col);
                if (col == m && g->gnz[id])
                    sum_sub(&s, "X[%zu]", nu * g->w + r, "g[%zu]", id);
            }
            if (col < m) g->anz[r * m + col] = g->anz[col * m + r] = s.nterms > 0;
            sum_end(&s);
            if (col < m && col != r)
                ch_buf_printf(g->b, "    A[%zu] = A[%zu];\n", col * m + r, r * m + col);
        }
}

int ch_emit_reduced_numeric(const ch_redsolve *in, ch_buf *code, ch_opcount *ops,
                            int *triangular)
{
    gen g = {0};
    g.in = in;
    g.ops = ops;
    g.n = in->n, g.k = in->k, g.m = in->m, g.w = in->m + 1;
    ch_buf body;
    ch_buf_init(&body);
    g.b = &body;
    g.xnz = calloc(g.k * g.w + 1, 1);
    g.mbnz = calloc(g.n * g.m + 1, 1);
    g.gnz = calloc(g.n + 1, 1);
    g.anz = calloc(g.m * g.m + 1, 1);
    int *prow = calloc(g.k + 1, sizeof *prow), *pcol = calloc(g.k + 1, sizeof *pcol);
    int rc = -1;
    if (g.xnz && g.mbnz && g.gnz && g.anz && prow && pcol) {
        *triangular = tri_order(&g, prow, pcol);
        if (*triangular) solve_triangular(&g, prow, pcol);
        else solve_dense(&g);
        products(&g);
        reduce(&g);
        char fallback[96];
        snprintf(fallback, sizeof fallback, "return la_solve(%zu, 1, A, f, 1, w, piv);", g.m);
        if (g.m <= CH_SPD_UNROLL_MAX) {
            ch_emit_spd_solve(&body, g.m, "A[%zu]", "f[%zu]", g.anz, fallback, ops);
            ch_buf_put(&body, "    return 0;\n");
        } else {
            ch_buf_printf(&body, "    %s\n", fallback);
            ch_la_solve_ops(g.m, 1, ops);
        }
        size_t nd = g.n * g.n + g.k * g.n + g.n + g.k, nw = g.k > g.m ? g.k : g.m;
        /* v is not const: in->dyn may be kn_rdyn, which also writes the
         * dependent velocities */
        ch_buf_put(code, "/* Independent accelerations from M, G, b, r of kn_dyn: 0, or 1\n"
                         " * where G_d or B^T M B is singular. */\n"
                         "static int kn_acc(double t, const double *x, const double *p, "
                         "double *v,\n                  double *vt)\n{\n");
        ch_buf_printf(code, "    double o[%zu], X[%zu], MB[%zu], g[%zu], A[%zu], w[%zu];\n",
                      nd, g.k * g.w, g.n * g.m, g.n, g.m * g.m, nw * nw + 1);
        if (g.use_d) ch_buf_put(code, "    double d;\n");
        if (g.use_gd) ch_buf_printf(code, "    double Gd[%zu];\n", g.k * g.k);
        ch_buf_printf(code, "    double *f = vt;\n    int piv[%zu];\n"
                            "    %s(t, x, p, v, o);\n", nw + 1, in->dyn);
        ch_buf_put(code, body.s ? body.s : "");
        ch_buf_put(code, "}\n\n");
        rc = body.oom || code->oom ? -1 : 0;
    }
    ch_buf_free(&body);
    free(g.xnz);
    free(g.mbnz);
    free(g.gnz);
    free(g.anz);
    free(prow);
    free(pcol);
    return rc;
}

/* Text of one scalar of the unrolled LDL^T: prefix and indices. */
static void scalar(char *buf, size_t size, const char *fmt, size_t i, size_t j)
{
    /* fmt is never NULL; the test keeps GCC's -Wformat-truncation, which
     * cannot see that through the inlined callers, quiet */
    snprintf(buf, size, fmt ? fmt : "", i, j);
}

/* A x = f for a small symmetric A, unrolled: A = L D L^T without square
 * roots, entries known to be zero skipped, A left intact. A pivot that is
 * not positive relative to the largest diagonal entry (A not numerically
 * positive definite) runs the fallback statement instead, which sees A
 * and f unchanged. */
void ch_emit_spd_solve(ch_buf *b, size_t m, const char *a_fmt, const char *f_fmt,
                       const unsigned char *anz, const char *fallback, ch_opcount *ops)
{
    /* lnz[i*m+j] (i > j): L_ij may be nonzero */
    unsigned char *lnz = calloc(m * m + 1, 1);
    if (!lnz) {
        b->oom = 1;
        return;
    }
    char t1[64], t2[64], t3[64];
    /* Pivots are judged against the largest diagonal entry, as
     * la_cholesky does: a matrix that la_solve calls singular falls back
     * to it and gets the same verdict. */
    ch_buf_put(b, "    {\n");
    scalar(t1, sizeof t1, a_fmt, 0, 0);
    ch_buf_printf(b, "        double amax = fabs(%s);\n", t1);
    for (size_t j = 1; j < m; j++) {
        scalar(t1, sizeof t1, a_fmt, j * m + j, 0);
        ch_buf_printf(b, "        if (fabs(%s) > amax) amax = fabs(%s);\n", t1, t1);
    }
    for (size_t j = 0; j < m; j++) {
        /* D_j = A_jj - sum_k L_jk U_jk, U_jk = L_jk D_k */
        scalar(t1, sizeof t1, a_fmt, j * m + j, 0);
        ch_buf_printf(b, "        const double d%zu = %s", j, t1);
        for (size_t k = 0; k < j; k++)
            if (lnz[j * m + k]) {
                ch_buf_printf(b, " - l%zu_%zu * u%zu_%zu", j, k, j, k);
                ops->mul += 1, ops->add += 1;
            }
        ch_buf_printf(b, ";\n        double id%zu;\n", j);
        ch_buf_printf(b, "        if (!(d%zu > 1e-14 * amax)) %s\n", j, fallback);
        ch_buf_printf(b, "        id%zu = 1.0 / d%zu;\n", j, j);
        ops->div += 1;
        for (size_t i = j + 1; i < m; i++) {
            int any = anz[i * m + j];
            for (size_t k = 0; k < j && !any; k++) any = lnz[i * m + k] && lnz[j * m + k];
            if (!any) continue;
            lnz[i * m + j] = 1;
            ch_buf_printf(b, "        const double u%zu_%zu = ", i, j);
            int first = 1;
            if (anz[i * m + j]) {
                scalar(t2, sizeof t2, a_fmt, i * m + j, 0);
                ch_buf_put(b, t2);
                first = 0;
            }
            for (size_t k = 0; k < j; k++)
                if (lnz[i * m + k] && lnz[j * m + k]) {
                    ch_buf_printf(b, "%sl%zu_%zu * u%zu_%zu", first ? "-" : " - ", i, k, j, k);
                    ops->mul += 1, ops->add += 1;
                    first = 0;
                }
            ch_buf_printf(b, ";\n        const double l%zu_%zu = u%zu_%zu * id%zu;\n", i, j, i, j, j);
            ops->mul += 1;
        }
    }
    /* L z = f, z = D^-1 z, L^T x = z, in f */
    for (size_t i = 0; i < m; i++)
        for (size_t k = 0; k < i; k++)
            if (lnz[i * m + k]) {
                scalar(t1, sizeof t1, f_fmt, i, 0);
                scalar(t3, sizeof t3, f_fmt, k, 0);
                ch_buf_printf(b, "        %s -= l%zu_%zu * %s;\n", t1, i, k, t3);
                ops->mul += 1, ops->add += 1;
            }
    for (size_t i = 0; i < m; i++) {
        scalar(t1, sizeof t1, f_fmt, i, 0);
        ch_buf_printf(b, "        %s *= id%zu;\n", t1, i);
        ops->mul += 1;
    }
    for (size_t i = m; i-- > 0;)
        for (size_t k = i + 1; k < m; k++)
            if (lnz[k * m + i]) {
                scalar(t1, sizeof t1, f_fmt, i, 0);
                scalar(t3, sizeof t3, f_fmt, k, 0);
                ch_buf_printf(b, "        %s -= l%zu_%zu * %s;\n", t1, k, i, t3);
                ops->mul += 1, ops->add += 1;
            }
    ch_buf_put(b, "    }\n");
    free(lnz);
}
