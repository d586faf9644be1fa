/* emit_red.c — kn_acc from the full form's data by small numeric solves
 * (see emit_red.h). */
#include "codegen/emit_red.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/diff.h"
#include "core/factor.h"
#include "core/matrix.h"

/* Dead value elimination: the body is written as statements, and one
 * that declares a named value of the solve (dg, X, MB, A below) is kept
 * only where a kept statement reads that value (an unused constant is a
 * warning of the compiler, and work for nothing); every other statement
 * (the tests, the stores into vt and acc, the solves) is kept. A
 * statement's operations count only where it is kept. Text written
 * outside a statement is kept, and the values it reads are live. */
typedef struct {
    size_t from, to;          /* its text in the body */
    long def;                 /* the value it declares (value_id), or -1 */
    size_t r0, r1;            /* the values it reads: reads[r0..r1) */
    ch_opcount ops;
} stmt;

/* The named values, one id space: X (k*w), dg (k), MB (n*m), A (m*m),
 * then the input values M, G, b, r (in->val: read, never declared). */
typedef enum { V_X, V_DG, V_MB, V_A, V_VAL } value_kind;

typedef struct {
    const ch_redsolve *in;
    ch_buf *b;
    ch_opcount *ops;          /* where operations go: the open statement's, or outer */
    ch_opcount *outer;        /* the caller's */
    ch_opcount cur_ops;       /* the open statement's */
    stmt *st;
    size_t nst, capst;
    long cur;                 /* the open statement, or -1 */
    size_t *reads;
    size_t nreads, capreads;
    unsigned char *live;      /* by value id */
    size_t nvalues;
    int oom;
    size_t n, k, m, w;        /* w = m + 1: columns of X */
    unsigned char *xnz;       /* k*w: X entry may be nonzero */
    unsigned char *mbnz;      /* n*m: MB = M B entry may be nonzero */
    unsigned char *anz;       /* m*m: B^T M B entry may be nonzero */
    const char *xfmt;         /* X's entries: scalars "X%zu", or "Xa[%zu]" after la_solve */
    int use_gd;               /* the body needs the LU arrays */
    unsigned needs;           /* CH_NEEDS_* of what was written (emit_red.h) */
    int row_test;             /* 1 where a row of G_d is small against G's row */
    int chart_test;           /* 2 where a pivot is numerically 0 against its row */
    unsigned char *is_dep;    /* n: the coordinate's velocity is dependent */
} gen;

/* Where G_d's part of a constraint row is below this fraction of the
 * row's largest entry, kn_facc leaves the state to la_kkt: the
 * null-space basis B = [I; -G_d^-1 G_i] grows as the inverse of that
 * ratio, and with it the rounding errors of B^T M B. */
#define ROW_TEST "1e-2"

/* A generator of in's sizes, the rest empty. */
static gen gen_of(const ch_redsolve *in)
{
    gen g = {0};
    g.in = in;
    g.n = in->sys.n, g.k = in->sys.k, g.m = in->sys.m, g.w = in->sys.m + 1;
    return g;
}

/* Offsets of the values (M, G, b, r) in in->val. */
static size_t oM(const gen *g, size_t i, size_t j) { return ch_kkt_M(&g->in->sys, i, j); }
static size_t oG(const gen *g, size_t a, size_t j) { return ch_kkt_G(&g->in->sys, a, j); }
static size_t ob(const gen *g, size_t i) { return ch_kkt_b(&g->in->sys, i); }
static size_t orr(const gen *g, size_t a) { return ch_kkt_r(&g->in->sys, a); }
static int nz(const gen *g, size_t off) { return g->in->sys.nz[off] != 0; }
static void value_read(gen *g, int kind, size_t i);
/* The text of an input value, read by the open statement (or kept text). */
static const char *val(gen *g, size_t off)
{
    value_read(g, V_VAL, off);
    return g->in->val[off];
}

static size_t value_id(const gen *g, int kind, size_t i)
{
    size_t xs = g->k * g->w, base[] = {0, xs, xs + g->k, xs + g->k + g->n * g->m,
                                       xs + g->k + g->n * g->m + g->m * g->m};
    return base[kind] + i;
}

/* a with room for twice *cap elements of size bytes (64 at first), *cap
 * updated; a itself, *cap kept and g->oom set when out of memory. */
static void *grow(gen *g, void *a, size_t *cap, size_t size)
{
    size_t c = *cap ? 2 * *cap : 64;
    void *p = realloc(a, c * size);
    if (!p) {
        g->oom = 1;
        return a;
    }
    *cap = c;
    return p;
}

/* The open statement (or, outside one, the kept text) reads a value. */
static void value_read(gen *g, int kind, size_t i)
{
    size_t id = value_id(g, kind, i);
    if (!g->live) return;
    if (g->cur < 0) {
        g->live[id] = 1;
        return;
    }
    if (g->nreads == g->capreads) g->reads = grow(g, g->reads, &g->capreads, sizeof *g->reads);
    if (g->nreads < g->capreads) g->reads[g->nreads++] = id;
}

/* A statement starts at the body's end: it declares the value (kind, i),
 * or with kind -1 it is kept whatever it reads. */
static void stmt_begin(gen *g, int kind, size_t i)
{
    if (g->nst == g->capst) g->st = grow(g, g->st, &g->capst, sizeof *g->st);
    if (g->nst == g->capst) return;
    stmt *s = &g->st[g->nst];
    s->from = g->b->len;
    s->def = kind < 0 ? -1 : (long)value_id(g, kind, i);
    s->r0 = g->nreads;
    g->cur = (long)g->nst++;
    memset(&g->cur_ops, 0, sizeof g->cur_ops);
    g->ops = &g->cur_ops;
}

static void stmt_end(gen *g)
{
    if (g->cur < 0) return;
    stmt *s = &g->st[g->cur];
    s->to = g->b->len;
    s->r1 = g->nreads;
    s->ops = g->cur_ops;
    g->cur = -1;
    g->ops = g->outer;
}

/* The body without the statements whose value no kept statement reads
 * (backwards: every reader follows the statement it reads), their
 * operations added to outer for those kept. */
static void sweep(gen *g)
{
    ch_buf out;
    ch_buf_init(&out);
    /* a body that ran out of memory is incomplete: it stays marked so */
    if (g->b->oom || (g->nst == 0 && !g->oom)) return;
    unsigned char *keep = calloc(g->nst + 1, 1);
    if (!keep || g->oom) {
        free(keep);
        g->b->oom = 1;
        return;
    }
    for (size_t j = g->nst; j-- > 0;) {
        const stmt *s = &g->st[j];
        keep[j] = s->def < 0 || g->live[s->def];
        for (size_t r = s->r0; keep[j] && r < s->r1; r++) g->live[g->reads[r]] = 1;
    }
    size_t at = 0;
    for (size_t j = 0; j < g->nst; j++) {
        const stmt *s = &g->st[j];
        ch_buf_putn(&out, g->b->s + at, s->from - at);
        if (keep[j]) {
            ch_buf_putn(&out, g->b->s + s->from, s->to - s->from);
            ch_opcount_add(g->outer, &s->ops);
        }
        at = s->to;
    }
    ch_buf_putn(&out, g->b->s + at, g->b->len - at);
    free(keep);
    if (out.oom) {
        ch_buf_free(&out);
        g->b->oom = 1;
        return;
    }
    ch_buf_free(g->b);
    *g->b = out;
    g->nst = 0;
}

/* Names of the intermediate scalars, read by the open statement. */
typedef char name[48];
static const char *xname(gen *g, name out, size_t i)
{
    value_read(g, V_X, i);
    snprintf(out, sizeof(name), g->xfmt, i);
    return out;
}
static const char *vname(gen *g, name out, value_kind kind, size_t i)
{
    static const char *const stem[] = {"X", "dg", "MB", "A"};
    value_read(g, kind, i);
    snprintf(out, sizeof(name), "%s%zu", stem[kind], i);
    return out;
}

/* One statement "lhs = first - a1*b1 - a2*b2 ...;" with its operations
 * counted; "0.0" when there is no term. The left side is a declaration
 * of the value (kind, i) ("const double X3") or, with kind -1, an lvalue
 * ("vt[0]"). */
typedef struct {
    gen *g;
    int nterms;
} sum;

static void sum_start(sum *s, gen *g, int kind, size_t i, const char *lhs)
{
    s->g = g;
    s->nterms = 0;
    stmt_begin(g, kind, i);
    ch_buf_put(g->b, "    ");
    ch_buf_put(g->b, lhs);
    ch_buf_put(g->b, " = ");
}

static void sum_first(sum *s, const char *a)
{
    ch_buf_put(s->g->b, a);
    s->nterms++;
}

/* - a * b */
static void sum_sub(sum *s, const char *a, const char *b)
{
    ch_buf_put(s->g->b, s->nterms ? " - " : "-");
    ch_buf_put(s->g->b, a);
    ch_buf_put(s->g->b, " * ");
    ch_buf_put(s->g->b, b);
    s->g->ops->mul += 1;
    s->g->ops->add += 1; /* a subtraction, or the leading negation */
    s->nterms++;
}

static void sum_end(sum *s)
{
    ch_buf_put(s->g->b, s->nterms ? ";\n" : "0.0;\n");
    stmt_end(s->g);
}

/* With g->row_test, "if (!(gd > ROW_TEST * gm)) return 1;" for row a
 * of G: gd is |pivot| (the triangular solve's, column piv) or, with piv
 * negative, the largest |entry| of the row's G_d part (the LU solve's),
 * gm the largest |entry| of the row. The dependent velocities are
 * badly determined by the constraints where it fails. Comparisons only,
 * no operation counted. */
static void row_test(gen *g, size_t a, int piv)
{
    if (!g->row_test) return;
    ch_buf_put(g->b, "    {\n        double gd = 0.0, gm;\n");
    for (int pass = 0; pass < 2; pass++) {
        /* pass 0: gd; pass 1: the other entries into gm */
        for (size_t j = 0; j < g->n; j++) {
            int in_gd = piv >= 0 ? (int)j == piv : g->is_dep[j];
            if (in_gd != (pass == 0) || !nz(g, oG(g, a, j))) continue;
            const char *e = val(g, oG(g, a, j)), *to = pass ? "gm" : "gd";
            ch_buf_printf(g->b, "        if (fabs(%s) > %s) %s = fabs(%s);\n", e, to, to, e);
        }
        if (pass == 0) ch_buf_put(g->b, "        gm = gd;\n");
    }
    ch_buf_put(g->b, "        if (!(gd > " ROW_TEST " * gm)) return 1;\n    }\n");
}

/* With g->chart_test, the pivot of row a (text piv) against the row's
 * length: "return 2" where piv^2 <= CH_CHART_SINGULAR^2 |G_a|^2, the
 * chart of the reduced form being numerically singular there. */
static void chart_test(gen *g, size_t a, const char *piv)
{
    if (!g->chart_test) return;
    ch_buf_put(g->b, "    if (!(");
    ch_buf_printf(g->b, "%s * %s > " CH_CHART_SINGULAR2 " * (", piv, piv);
    size_t nt = 0;
    for (size_t j = 0; j < g->n; j++) {
        if (!nz(g, oG(g, a, j))) continue;
        const char *e = val(g, oG(g, a, j));
        ch_buf_printf(g->b, "%s%s * %s", nt++ ? " + " : "", e, e);
    }
    ch_buf_put(g->b, ")))\n        return 2;\n");
    g->ops->mul += (double)nt + 2;
    g->ops->add += nt ? (double)nt - 1 : 0;
}

/* X = G_d^-1 [G_i | r] by substitution in the triangular order. The
 * pivots are values of the dynamics, so all of them are tested and
 * inverted first: the divisions are independent of each other and of the
 * substitution chain, and overlap. */
static void solve_triangular(gen *g, const int *prow, const int *pcol)
{
    const ch_redsolve *in = g->in;
    name t1, t2, t3;
    g->xfmt = "X%zu";
    /* equal pivots (the same text) are tested and inverted once: first[j]
     * is the first j' with pivot j's text */
    size_t *first = calloc(g->k + 1, sizeof *first);
    if (!first) {
        g->b->oom = 1;
        return;
    }
    for (size_t j = 0; j < g->k; j++) {
        const char *pj = in->val[oG(g, (size_t)prow[j], (size_t)in->sys.dep[pcol[j]])];
        first[j] = j;
        for (size_t l = 0; l < j && first[j] == j; l++)
            if (strcmp(pj, in->val[oG(g, (size_t)prow[l], (size_t)in->sys.dep[pcol[l]])]) == 0)
                first[j] = l;
    }
    /* (the row and chart tests include the zero test) */
    /* (constant pivots, nz 2, only for a zero) */
    for (size_t j = 0; j < g->k && g->chart_test; j++) {
        size_t off = oG(g, (size_t)prow[j], (size_t)in->sys.dep[pcol[j]]);
        if (in->sys.nz[off] != 2) chart_test(g, (size_t)prow[j], val(g, off));
    }
    int zero_test = !g->row_test, nt = 0;
    for (size_t j = 0; j < g->k && zero_test; j++)
        if (first[j] == j
            && (!g->chart_test || in->sys.nz[oG(g, (size_t)prow[j], (size_t)in->sys.dep[pcol[j]])] == 2)) {
            if (!nt) ch_buf_put(g->b, "    if (");
            ch_buf_printf(g->b, "%s%s == 0.0", nt ? (nt % 3 ? " || " : " ||\n        ") : "",
                          val(g, oG(g, (size_t)prow[j], (size_t)in->sys.dep[pcol[j]])));
            nt++;
        }
    if (nt) ch_buf_put(g->b, ")\n        return 1;\n");
    for (size_t j = 0; j < g->k; j++)
        row_test(g, (size_t)prow[j], in->sys.dep[pcol[j]]);
    /* (an inverse that no X entry reads, a pivot row whose X entries are
     * all 0, is swept) */
    for (size_t j = 0; j < g->k; j++)
        if (first[j] == j) {
            stmt_begin(g, V_DG, j);
            ch_buf_printf(g->b, "    const double dg%zu = 1.0 / %s;\n", j,
                          val(g, oG(g, (size_t)prow[j], (size_t)in->sys.dep[pcol[j]])));
            g->ops->div += 1;
            stmt_end(g);
        }
    for (size_t j = 0; j < g->k; j++) {
        size_t a = (size_t)prow[j], c = (size_t)pcol[j];
        for (size_t col = 0; col < g->w; col++) {
            size_t rhs = col < g->m ? oG(g, a, (size_t)in->sys.indep[col]) : orr(g, a);
            int any = nz(g, rhs);
            for (size_t l = 0; l < j && !any; l++)
                any = nz(g, oG(g, a, (size_t)in->sys.dep[pcol[l]])) && g->xnz[(size_t)pcol[l] * g->w + col];
            if (!any) continue;
            g->xnz[c * g->w + col] = 1;
            sum s;
            snprintf(t1, sizeof t1, "const double X%zu", c * g->w + col);
            sum_start(&s, g, V_X, c * g->w + col, t1);
            ch_buf_put(g->b, "(");
            if (nz(g, rhs)) sum_first(&s, val(g, rhs));
            for (size_t l = 0; l < j; l++) {
                size_t cl = (size_t)pcol[l], off = oG(g, a, (size_t)in->sys.dep[cl]);
                if (nz(g, off) && g->xnz[cl * g->w + col])
                    sum_sub(&s, val(g, off), xname(g, t2, cl * g->w + col));
            }
            ch_buf_printf(g->b, ") * %s;\n", vname(g, t3, V_DG, first[j]));
            g->ops->mul += 1;
            stmt_end(g);
        }
    }
    free(first);
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
    g->xfmt = "Xa[%zu]";
    for (size_t a = 0; a < k; a++) row_test(g, a, -1);
    for (size_t a = 0; a < k; a++) {
        for (size_t nu = 0; nu < k; nu++)
            ch_buf_printf(g->b, "    Gd[%zu] = %s;\n", a * k + nu, val(g, oG(g, a, (size_t)in->sys.dep[nu])));
        for (size_t s = 0; s < g->m; s++)
            ch_buf_printf(g->b, "    Xa[%zu] = %s;\n", a * g->w + s, val(g, oG(g, a, (size_t)in->sys.indep[s])));
        ch_buf_printf(g->b, "    Xa[%zu] = %s;\n", a * g->w + g->m, val(g, orr(g, a)));
    }
    ch_buf_printf(g->b, "    if (la_solve(%zu, %zu, Gd, Xa, 0, ws, piv)) return 1;\n", k, g->w);
    g->needs |= CH_NEEDS_LA_SOLVE;
    for (size_t i = 0; i < k * g->w; i++) g->xnz[i] = 1;
    lu_ops(k, g->w, g->ops);
}

/* MB = M B (n x m): B's dependent rows are -X_i, so "M column minus M_dep
 * times X column". The entries that may be nonzero; those reduce() does
 * not read (above A's diagonal, and of a dependent row whose X entries
 * do not multiply them) are swept. */
static void products(gen *g)
{
    const ch_redsolve *in = g->in;
    name t1, t2;
    for (size_t i = 0; i < g->n; i++)
        for (size_t col = 0; col < g->m; col++) {
            size_t first = oM(g, i, (size_t)in->sys.indep[col]);
            int any = nz(g, first);
            for (size_t nu = 0; nu < g->k && !any; nu++)
                any = nz(g, oM(g, i, (size_t)in->sys.dep[nu])) && g->xnz[nu * g->w + col];
            if (!any) continue;
            g->mbnz[i * g->m + col] = 1;
            sum s;
            snprintf(t1, sizeof t1, "const double MB%zu", i * g->m + col);
            sum_start(&s, g, V_MB, i * g->m + col, t1);
            if (nz(g, first)) sum_first(&s, val(g, first));
            for (size_t nu = 0; nu < g->k; nu++) {
                size_t off = oM(g, i, (size_t)in->sys.dep[nu]);
                if (nz(g, off) && g->xnz[nu * g->w + col])
                    sum_sub(&s, val(g, off), xname(g, t2, nu * g->w + col));
            }
            sum_end(&s);
        }
}

/* A = B^T MB (lower triangle, scalars A<r*m+c>) and f = B^T (b - M w)
 * (into vt). M is symmetric, so B^T M w = MB^T w: with w = [0; X_r],
 * f_r = b_r - sum X_nu,r b_nu - sum MB_nu,r X_nu,m over the dependent nu,
 * without forming b - M w (n*k products fewer than B^T of it). */
static void reduce(gen *g)
{
    const ch_redsolve *in = g->in;
    size_t m = g->m;
    name t1, t2, t3;
    for (size_t r = 0; r < m; r++)
        for (size_t col = 0; col <= m; col++) {
            if (col < m && col > r) continue;
            size_t ir = (size_t)in->sys.indep[r];
            sum s;
            if (col < m) snprintf(t1, sizeof t1, "const double A%zu", r * m + col);
            else snprintf(t1, sizeof t1, "vt[%zu]", r);
            sum_start(&s, g, col < m ? V_A : -1, r * m + col, t1);
            if (col < m && g->mbnz[ir * m + col]) sum_first(&s, vname(g, t2, V_MB, ir * m + col));
            if (col == m && nz(g, ob(g, ir))) sum_first(&s, val(g, ob(g, ir)));
            for (size_t nu = 0; nu < g->k; nu++) {
                size_t id = (size_t)in->sys.dep[nu];
                if (!g->xnz[nu * g->w + r]) continue;
                /* (named, and so read, only where a term uses it) */
                if (col < m && g->mbnz[id * m + col])
                    sum_sub(&s, xname(g, t3, nu * g->w + r), vname(g, t2, V_MB, id * m + col));
                if (col == m && nz(g, ob(g, id)))
                    sum_sub(&s, xname(g, t3, nu * g->w + r), val(g, ob(g, id)));
            }
            for (size_t nu = 0; col == m && nu < g->k; nu++) {
                size_t id = (size_t)in->sys.dep[nu];
                if (g->mbnz[id * m + r] && g->xnz[nu * g->w + m])
                    sum_sub(&s, vname(g, t2, V_MB, id * m + r), xname(g, t3, nu * g->w + m));
            }
            if (col < m) g->anz[r * m + col] = g->anz[col * m + r] = s.nterms > 0;
            sum_end(&s);
        }
}

/* "double A[m*m] = {...};": the symmetric matrix rebuilt from the
 * scalars A<i*m+j> of its lower triangle, for la_solve. It reads all of
 * them (aread, m*m flags or NULL). */
static void put_a_array(ch_buf *b, size_t m, const char *indent, unsigned char *aread,
                        unsigned *needs)
{
    for (size_t i = 0; aread && i < m; i++)
        for (size_t j = 0; j <= i; j++) aread[i * m + j] = 1;
    if (*ch_emit_storage(m * m, needs)) { /* static storage: assigned, not initialized */
        ch_buf_printf(b, "static double A[%zu];\n", m * m);
        for (size_t i = 0; i < m; i++)
            for (size_t j = 0; j < m; j++)
                ch_buf_printf(b, "%sA[%zu] = A%zu;\n", indent, i * m + j,
                              j <= i ? i * m + j : j * m + i);
        return;
    }
    ch_buf_printf(b, "double A[%zu] = {", m > 0 ? m * m : 1);
    for (size_t i = 0; i < m; i++)
        for (size_t j = 0; j < m; j++) {
            if (i + j > 0 && (i * m + j) % 8 == 0) ch_buf_printf(b, ",\n%s    ", indent);
            else if (i + j > 0) ch_buf_put(b, ", ");
            ch_buf_printf(b, "A%zu", j <= i ? i * m + j : j * m + i);
        }
    if (m == 0) ch_buf_put(b, "0.0");
    ch_buf_put(b, "};\n");
}

/* ch_emit_small_solve, setting aread (m*m flags, or NULL) for each A
 * scalar it reads. */
static void small_solve(ch_buf *b, size_t m, const unsigned char *anz, ch_opcount *ops,
                        unsigned char *aread, unsigned *needs)
{
    if (m > 0) *needs |= CH_NEEDS_LA_SOLVE; /* the fallback (every pivot has it) */
    /* the fallback: la_solve on the full matrix rebuilt from the scalars */
    ch_buf fb;
    ch_buf_init(&fb);
    ch_buf_put(&fb, "{\n            ");
    put_a_array(&fb, m, "            ", aread, needs);
    ch_buf_printf(&fb, "            return la_solve(%zu, 1, A, vt, 1, ws, piv);\n        }", m);
    if (fb.oom) b->oom = 1;
    if (m <= CH_SPD_UNROLL_MAX && !fb.oom) {
        ch_emit_spd_solve(b, m, "A%zu", "vt[%zu]", anz, fb.s, ops, aread);
        ch_buf_put(b, "    return 0;\n");
    } else if (!fb.oom) {
        ch_buf_printf(b, "    %s\n", fb.s);
        ch_la_solve_ops(m, 1, ops);
    }
    ch_buf_free(&fb);
}

void ch_emit_small_solve(ch_buf *b, size_t m, const unsigned char *anz, ch_opcount *ops,
                         unsigned *needs)
{
    small_solve(b, m, anz, ops, NULL, needs);
}

/* X, MB, A and f (into vt) of in as statements in body, their
 * operations added to ops once the caller has swept the body (sweep);
 * *triangular says which solve X came from. g's arrays are allocated
 * here (gen_free frees them). 0, or -1 out of memory. */
static int system_body(gen *g, const ch_redsolve *in, ch_buf *body, ch_opcount *ops,
                       int *triangular, int row_tests)
{
    *g = gen_of(in);
    g->row_test = row_tests == 1;
    g->chart_test = row_tests == 2;
    g->ops = g->outer = ops;
    g->cur = -1;
    g->b = body;
    g->nvalues = value_id(g, V_VAL, g->n * g->n + g->k * g->n + g->n + g->k);
    g->live = calloc(g->nvalues + 1, 1);
    g->xnz = calloc(g->k * g->w + 1, 1);
    g->mbnz = calloc(g->n * g->m + 1, 1);
    g->anz = calloc(g->m * g->m + 1, 1);
    g->is_dep = calloc(g->n + 1, 1);
    int *prow = calloc(g->k + 1, sizeof *prow), *pcol = calloc(g->k + 1, sizeof *pcol);
    int rc = -1;
    if (g->live && g->xnz && g->mbnz && g->anz && g->is_dep && prow && pcol) {
        for (size_t nu = 0; nu < g->k; nu++) g->is_dep[in->sys.dep[nu]] = 1;
        int tri = ch_kkt_pivots(&in->sys, prow, pcol);
        *triangular = tri > 0;
        if (tri > 0) solve_triangular(g, prow, pcol);
        else if (tri == 0) solve_dense(g);
        products(g);
        reduce(g);
        rc = tri < 0 || body->oom || g->oom ? -1 : 0;
    }
    free(prow);
    free(pcol);
    return rc;
}

/* The A scalars that text outside the statements read (aread, m*m
 * flags) are live. */
static void a_read(gen *g, const unsigned char *aread)
{
    for (size_t i = 0; i < g->m * g->m; i++)
        if (aread[i]) value_read(g, V_A, i);
}

static void gen_free(gen *g)
{
    free(g->st);
    free(g->reads);
    free(g->live);
    free(g->xnz);
    free(g->mbnz);
    free(g->anz);
    free(g->is_dep);
}

const char *ch_emit_storage(size_t count, unsigned *needs)
{
    if (count <= CH_STACK_ELEMS) return "";
    if (needs) *needs |= CH_NEEDS_STATIC;
    return "static ";
}

/* The function after its head: la_solve's work space (when ws says it
 * is used), the LU path's arrays, the statement voids (the parameters
 * the body may leave unused), in's statements, then body's. */
static void put_kernel(ch_buf *code, gen *g, int ws, const char *voids,
                       const ch_buf *body)
{
    size_t nw = g->k > g->m ? g->k : g->m;
    if (ws)
        ch_buf_printf(code, "    %sdouble ws[%zu];\n    %sint piv[%zu];\n",
                      ch_emit_storage(nw * nw + 1, &g->needs), nw * nw + 1,
                      ch_emit_storage(nw + 1, &g->needs), nw + 1);
    if (g->use_gd)
        ch_buf_printf(code, "    %sdouble Gd[%zu], Xa[%zu];\n",
                      ch_emit_storage(g->k * g->k + g->k * g->w, &g->needs), g->k * g->k,
                      g->k * g->w);
    ch_buf_put(code, voids);
    ch_buf_put(code, g->in->body ? g->in->body : "");
    ch_buf_putn(code, body->s, body->len);
    ch_buf_put(code, "}\n\n");
}

/* ch_emit_reduced_numeric; with val_read (or NULL) set for each of in's
 * values that the kept statements read. */
static int reduced_numeric(const ch_redsolve *in, ch_buf *code, ch_opcount *ops,
                           int *triangular, unsigned char *val_read, unsigned *needs)
{
    gen g;
    ch_buf body;
    ch_buf_init(&body);
    int rc = system_body(&g, in, &body, ops, triangular, 2);
    unsigned char *aread = calloc(g.m * g.m + 1, 1);
    if (!aread) rc = -1;
    if (rc == 0) {
        small_solve(&body, g.m, g.anz, ops, aread, &g.needs);
        a_read(&g, aread);
        sweep(&g);
        for (size_t i = 0; val_read && i < g.nvalues - value_id(&g, V_VAL, 0); i++)
            val_read[i] = g.live[value_id(&g, V_VAL, i)];
        /* v is not const: the values' program may also write the
         * dependent velocities */
        ch_buf_put(code, "/* Independent accelerations from M, G, b, r computed in place: 0, 1\n"
                         " * where G_d or B^T M B is singular, 2 where a pivot of a triangular\n"
                         " * G_d is numerically 0 against its row of G (the chart is). */\n"
                         "static int kn_acc(double t, const double *x, const double *p, "
                         "double *v,\n                  double *vt)\n{\n");
        put_kernel(code, &g, 1, "    (void)t; (void)x; (void)p; (void)v;\n", &body);
        *needs |= g.needs;
        rc = body.oom || code->oom ? -1 : 0;
    }
    free(aread);
    ch_buf_free(&body);
    gen_free(&g);
    return rc;
}

int ch_emit_reduced_numeric(const ch_redsolve *in, ch_buf *code, ch_opcount *ops,
                            int *triangular, unsigned *needs)
{
    return reduced_numeric(in, code, ops, triangular, NULL, needs);
}

int ch_redsolve_reads(const ch_redsolve *in, unsigned char *read)
{
    size_t nv = in->sys.n * in->sys.n + in->sys.k * in->sys.n + in->sys.n + in->sys.k;
    const char **val = calloc(nv + 1, sizeof *val);
    char *text = calloc(nv + 1, 24);
    ch_buf code;
    ch_buf_init(&code);
    ch_opcount ops = {0, 0, 0, 0};
    int tri = 0, rc = -1;
    unsigned needs = 0;
    if (val && text) {
        /* texts that differ: no two pivots taken for one */
        for (size_t i = 0; i < nv; i++) {
            snprintf(text + 24 * i, 24, "o[%zu]", i);
            val[i] = text + 24 * i;
        }
        ch_redsolve at = *in;
        at.val = val;
        at.body = NULL;
        rc = reduced_numeric(&at, &code, &ops, &tri, read, &needs);
    }
    ch_buf_free(&code);
    free(val);
    free(text);
    return rc;
}

int ch_emit_full_numeric(const ch_redsolve *in, ch_buf *code, ch_opcount *ops,
                         int *triangular, unsigned *needs)
{
    gen g;
    ch_buf body;
    ch_buf_init(&body);
    int rc = system_body(&g, in, &body, ops, triangular, 1);
    unsigned char *aread = calloc(g.m * g.m + 1, 1);
    if (!aread) rc = -1;
    if (rc == 0) {
        name t1, t2, t3;
        /* where B^T M B is not positive definite, 1: the caller's la_kkt
         * then solves the whole system (and the unrolled solve reads no
         * entry known to be zero: those are swept) */
        if (g.m <= CH_SPD_UNROLL_MAX) {
            ch_emit_spd_solve(&body, g.m, "A%zu", "vt[%zu]", g.anz, "return 1;", ops, aread);
        } else {
            ch_buf_put(&body, "    {\n        ");
            put_a_array(&body, g.m, "        ", aread, &g.needs);
            ch_buf_printf(&body, "        if (la_solve(%zu, 1, A, vt, 1, ws, piv)) return 1;\n    }\n",
                          g.m);
            g.needs |= CH_NEEDS_LA_SOLVE;
            ch_la_solve_ops(g.m, 1, ops);
        }
        for (size_t r = 0; r < g.m; r++)
            ch_buf_printf(&body, "    acc[%d] = vt[%zu];\n", in->sys.indep[r], r);
        /* qtt_dep = X_r - X_i vt */
        for (size_t nu = 0; nu < g.k; nu++) {
            sum s;
            snprintf(t1, sizeof t1, "acc[%d]", in->sys.dep[nu]);
            sum_start(&s, &g, -1, 0, t1);
            if (g.xnz[nu * g.w + g.m]) sum_first(&s, xname(&g, t2, nu * g.w + g.m));
            for (size_t r = 0; r < g.m; r++)
                if (g.xnz[nu * g.w + r]) {
                    snprintf(t3, sizeof t3, "vt[%zu]", r);
                    sum_sub(&s, xname(&g, t2, nu * g.w + r), t3);
                }
            sum_end(&s);
        }
        ch_buf_put(&body, "    return 0;\n");
        a_read(&g, aread);
        sweep(&g);
        ch_buf_printf(code, "/* The accelerations by the null-space method (emit_red.h) from\n"
                            " * the values o la_kkt would solve: 0, or 1 where G_d or B^T M B\n"
                            " * is singular. */\n"
                            "static int kn_facc(const double *o, double *acc)\n{\n"
                            "    %sdouble vt[%zu];\n", ch_emit_storage(g.m, &g.needs),
                      g.m > 0 ? g.m : 1);
        put_kernel(code, &g, g.use_gd || g.m > CH_SPD_UNROLL_MAX, "", &body);
        *needs |= g.needs;
        rc = body.oom || code->oom ? -1 : 0;
    }
    free(aread);
    ch_buf_free(&body);
    gen_free(&g);
    return rc;
}

/* Text of one scalar of the unrolled LDL^T: prefix and indices. */
static void scalar(char *buf, size_t size, const char *fmt, size_t i, size_t j)
{
    /* fmt is never NULL; the test keeps GCC's -Wformat-truncation, which
     * cannot see that through the inlined callers, quiet */
    snprintf(buf, size, fmt ? fmt : "", i, j);
}

/* The text of A's entry i, marked read in aread (or NULL). */
static void a_scalar(char *buf, size_t size, const char *fmt, size_t i, unsigned char *aread)
{
    scalar(buf, size, fmt, i, 0);
    if (aread) aread[i] = 1;
}

/* A x = f for a small symmetric A, unrolled: A = L D L^T without square
 * roots, entries known to be zero skipped, A left intact. A pivot that is
 * not positive relative to the largest diagonal entry (A not numerically
 * positive definite) runs the fallback statement instead, which sees A
 * and f unchanged. */
void ch_emit_spd_solve(ch_buf *b, size_t m, const char *a_fmt, const char *f_fmt,
                       const unsigned char *anz, const char *fallback, ch_opcount *ops,
                       unsigned char *aread)
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
    a_scalar(t1, sizeof t1, a_fmt, 0, aread);
    ch_buf_printf(b, "        double amax = fabs(%s);\n", t1);
    for (size_t j = 1; j < m; j++) {
        a_scalar(t1, sizeof t1, a_fmt, j * m + j, aread);
        ch_buf_printf(b, "        if (fabs(%s) > amax) amax = fabs(%s);\n", t1, t1);
    }
    for (size_t j = 0; j < m; j++) {
        /* D_j = A_jj - sum_k L_jk U_jk, U_jk = L_jk D_k */
        a_scalar(t1, sizeof t1, a_fmt, j * m + j, aread);
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
                a_scalar(t2, sizeof t2, a_fmt, i * m + j, aread);
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
