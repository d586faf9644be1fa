/* matrix.c — Jacobians, numerical rank and exact linear solves. */
#include "core/matrix.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/diff.h"
#include "core/eval.h"
#include "core/flint_compat.h"
#include "core/simplify.h"

const ch_expr **ch_mat_new(ch_ctx *ctx, size_t rows, size_t cols)
{
    size_t n = rows * cols;
    if (cols && n / cols != rows) return NULL;
    return ch_ctx_alloc(ctx, (n ? n : 1) * sizeof(const ch_expr *));
}

const ch_expr **ch_jacobian(ch_ctx *ctx, size_t nf, const ch_expr *const *f,
                            size_t nv, const ch_expr *const *v)
{
    const ch_expr **J = ch_mat_new(ctx, nf, nv);
    if (!J) return NULL;
    for (size_t i = 0; i < nf; i++)
        for (size_t j = 0; j < nv; j++)
            if (!(J[i * nv + j] = ch_diff(ctx, f[i], v[j]))) return NULL;
    return J;
}

/* Rank by Gaussian elimination to row echelon form, column by column,
 * the row of largest magnitude as pivot; a column whose candidates are
 * all below tol adds nothing. Rows are swapped and updated whole
 * (contiguous), rows with a zero multiplier are skipped: full pivoting
 * searched and swapped columns of the whole remaining block at every
 * step, 0.9% of the 400-trailer's derivation for its three ranks of
 * order 400. */
static int rank_d(double *a, size_t rows, size_t cols, double tol)
{
    size_t r = 0;
    for (size_t c = 0; c < cols && r < rows; c++) {
        size_t p = r;
        double best = 0;
        for (size_t i = r; i < rows; i++)
            if (fabs(a[i * cols + c]) > best) {
                best = fabs(a[i * cols + c]);
                p = i;
            }
        if (best <= tol) continue;
        double *pr = a + r * cols;
        if (p != r)
            for (size_t j = c; j < cols; j++) {
                double t = pr[j];
                pr[j] = a[p * cols + j];
                a[p * cols + j] = t;
            }
        for (size_t i = r + 1; i < rows; i++) {
            double *row = a + i * cols, f = row[c] / pr[c];
            if (f == 0) continue;
            for (size_t j = c + 1; j < cols; j++) row[j] -= f * pr[j];
        }
        r++;
    }
    return (int)r;
}

/* Full row rank certified by structure in O(rows * cols): rows peeled
 * one at a time, each by a column whose only entry not identically zero
 * (nz) among the rows left is that row's, with a value above tol. In the
 * order peeled those columns form an upper triangular block with a
 * nonzero diagonal, so the rank is rows exactly. A chain of constraints,
 * each bringing the velocity of one more body, peels whole (the
 * n-trailer's constraint Jacobian and dependent block); a dense matrix
 * such as a mass matrix has no such column and goes to rank_d. count
 * (cols), queue (cols) and left (rows) are the caller's scratch. */
static int peels(const double *a, const unsigned char *nz, size_t rows, size_t cols,
                 double tol, size_t *count, size_t *queue, unsigned char *left)
{
    if (rows > cols) return 0;
    size_t head = 0, tail = 0, peeled = 0;
    memset(count, 0, cols * sizeof *count);
    memset(left, 1, rows);
    for (size_t i = 0; i < rows * cols; i++) count[i % cols] += nz[i];
    /* counts only fall: a column reaches 1 once, and is queued then */
    for (size_t j = 0; j < cols; j++)
        if (count[j] == 1) queue[tail++] = j;
    while (head < tail) {
        size_t c = queue[head++], r = 0;
        if (count[c] != 1) continue; /* its row went with another column */
        while (!left[r] || !nz[r * cols + c]) r++;
        if (fabs(a[r * cols + c]) <= tol) continue; /* no pivot here */
        left[r] = 0;
        peeled++;
        for (size_t j = 0; j < cols; j++)
            if (nz[r * cols + j] && --count[j] == 1) queue[tail++] = j;
    }
    return peeled == rows;
}

int ch_numeric_rank(ch_ctx *ctx, size_t rows, size_t cols,
                    const ch_expr *const *a, int points)
{
    size_t ns = ch_ctx_nsyms(ctx), n = rows * cols, full = rows < cols ? rows : cols;
    double *sym = malloc((ns ? ns : 1) * sizeof *sym);
    double *val = malloc((n ? n : 1) * sizeof *val);
    unsigned char *nz = malloc(n + rows + 1);
    size_t *scratch = malloc((2 * cols + 1) * sizeof *scratch);
    int best = -1;
    for (size_t i = 0; nz && i < n; i++) nz[i] = !ch_is_zero(a[i]);
    for (int p = 0; sym && val && nz && scratch && p < points; p++) {
        ch_eval_generic_point(ctx, 0x9e3779b97f4a7c15ULL, p, sym);
        ch_eval_d_many(ctx, n, a, sym, val);
        int finite = 1;
        double amax = 0;
        for (size_t i = 0; i < n; i++) {
            finite &= isfinite(val[i]) != 0;
            if (fabs(val[i]) > amax) amax = fabs(val[i]);
        }
        if (!finite) continue;
        /* entries below count as zero: relative to the whole matrix, so
         * that a row of rounding noise (sin^2 + cos^2 - 1) is no rank; a
         * badly scaled matrix (diag(5000, 1e-7)) may then show less than
         * its rank here, which ch_full_rank settles in balls */
        double tol = 1e-9 * (amax > 0 ? amax : 1);
        int r = peels(val, nz, rows, cols, tol, scratch, scratch + cols, nz + n)
                    ? (int)rows
                    : rank_d(val, rows, cols, tol);
        if (r > best) best = r;
        if ((size_t)best == full) break; /* no point gives more */
    }
    free(sym);
    free(val);
    free(nz);
    free(scratch);
    return best;
}

/* One point of ch_ball_rank: the ball elimination of A (rows x cols, at
 * prec). *rank gets the pivots found; returns 1 when the rest is 0 to
 * 2^-120 of the scale (decided), 0 when a candidate ball contains 0 but
 * is too wide to tell. A's rows are scaled in place. */
static int ball_eliminate(arb_mat_t A, slong rows, slong cols, slong prec, int *rank)
{
    arb_t t, piv;
    mag_t big, m;
    arb_init(t), arb_init(piv);
    mag_init(big), mag_init(m);
    /* each row scaled to its largest |entry|, an upper bound (scale
     * invariance: a row of 1e-7's is as good as a row of 5000's) */
    for (slong i = 0; i < rows; i++) {
        int some = 0; /* an entry shown nonzero: the row has a scale */
        mag_zero(big);
        for (slong j = 0; j < cols; j++) {
            arb_get_mag(m, arb_mat_entry(A, i, j));
            if (mag_cmp(m, big) > 0) mag_set(big, m);
            some |= !arb_contains_zero(arb_mat_entry(A, i, j));
        }
        /* a row of balls around 0 (sin^2 + cos^2 - 1) keeps its absolute
         * size: scaled up, rounding noise would look like entries */
        if (!some || mag_is_zero(big)) continue;
        arf_t f;
        arf_init(f);
        arf_set_mag(f, big);
        arb_set_arf(t, f);
        for (slong j = 0; j < cols; j++)
            arb_div(arb_mat_entry(A, i, j), arb_mat_entry(A, i, j), t, prec);
        arf_clear(f);
    }
    int r = 0, decided = 1;
    slong *cp = malloc((size_t)(cols + 1) * sizeof *cp);
    for (slong j = 0; cp && j < cols; j++) cp[j] = j;
    for (; cp && r < rows && r < cols;) {
        /* the pivot: the ball farthest from 0 among those excluding it */
        slong pi = -1, pj = -1;
        arf_t best, lo;
        arf_init(best), arf_init(lo);
        for (slong i = r; i < rows; i++)
            for (slong j = r; j < cols; j++) {
                arb_srcptr e = arb_mat_entry(A, i, cp[j]);
                if (arb_contains_zero(e)) continue;
                arb_get_abs_lbound_arf(lo, e, prec);
                if (pi < 0 || arf_cmp(lo, best) > 0) pi = i, pj = j, arf_set(best, lo);
            }
        arf_clear(best), arf_clear(lo);
        if (pi < 0) {
            /* no ball excludes 0: decided when all are 0 to 2^-120 */
            for (slong i = r; i < rows && decided; i++)
                for (slong j = r; j < cols && decided; j++) {
                    arb_get_mag(m, arb_mat_entry(A, i, cp[j]));
                    if (mag_cmp_2exp_si(m, -120) > 0) decided = 0;
                }
            break;
        }
        arb_mat_swap_rows(A, NULL, r, pi);
        slong c = cp[r];
        cp[r] = cp[pj], cp[pj] = c;
        arb_set(piv, arb_mat_entry(A, r, cp[r]));
        for (slong i = r + 1; i < rows; i++) {
            arb_div(t, arb_mat_entry(A, i, cp[r]), piv, prec);
            for (slong j = r; j < cols; j++)
                arb_submul(arb_mat_entry(A, i, cp[j]), t, arb_mat_entry(A, r, cp[j]), prec);
        }
        r++;
    }
    if (!cp) decided = 0;
    free(cp);
    *rank = r;
    arb_clear(t), arb_clear(piv);
    mag_clear(big), mag_clear(m);
    return decided;
}

int ch_ball_rank(ch_ctx *ctx, size_t rows, size_t cols, const ch_expr *const *a,
                 const double *at, int points, ch_rank_info *info)
{
    size_t ns = ch_ctx_nsyms(ctx), n = rows * cols, full = rows < cols ? rows : cols;
    memset(info, 0, sizeof *info);
    if (full == 0) {
        info->full = 1;
        return 0;
    }
    double *v = malloc((ns ? ns : 1) * sizeof *v);
    arb_ptr sv = _arb_vec_init((slong)(ns ? ns : 1));
    arb_ptr *dst = malloc((n ? n : 1) * sizeof *dst);
    arb_mat_t A;
    arb_mat_init(A, (slong)rows, (slong)cols);
    int rc = v && dst ? 0 : -1, all_deficient = 1;
    for (size_t i = 0; !rc && i < n; i++)
        dst[i] = arb_mat_entry(A, (slong)(i / cols), (slong)(i % cols));
    for (int p = 0; !rc && p < points + (at != NULL) && !info->full; p++) {
        int first = at && p == 0, k = at ? p - 1 : p;
        ch_eval_generic_point(ctx, 0x2545F4914F6CDD1DULL, first ? 0 : k, v);
        double shrink = k < 4 ? 1 : ldexp(1, -(k - 3));
        for (size_t s = 0; s < ns; s++) {
            const ch_sym *sym = ch_ctx_sym(ctx, (uint32_t)s);
            if (sym->kind == CH_SYM_PI) continue;
            if (at && isfinite(at[s]) && (first || sym->kind == CH_SYM_PARAM)) v[s] = at[s];
            else v[s] *= shrink;
        }
        for (size_t s = 0; s < ns; s++) arb_set_d(sv + s, v[s]);
        int r = 0, decided = 0, defined = 1;
        for (slong prec = 256; prec <= 1024 && defined && !decided; prec *= 4) {
            if (ch_eval_arb_many(ctx, n, a, dst, sv, prec)) {
                defined = 0;
                ch_ctx_clear_error(ctx);
                break;
            }
            decided = ball_eliminate(A, (slong)rows, (slong)cols, prec, &r);
            if ((size_t)r == full) decided = 1;
        }
        if (!defined) continue;
        info->evaluated++;
        if (r > info->rank) info->rank = r;
        if ((size_t)r == full) info->full = 1;
        else if (!decided) all_deficient = 0;
        else if (!info->witness) {
            double *w = ch_ctx_alloc(ctx, (ns ? ns : 1) * sizeof *w);
            if (w) memcpy(w, v, ns * sizeof *w);
            info->witness = w;
        }
    }
    info->deficient = !info->full && all_deficient && info->evaluated >= 2;
    arb_mat_clear(A);
    _arb_vec_clear(sv, (slong)(ns ? ns : 1));
    free(dst);
    free(v);
    return rc;
}

int ch_full_rank(ch_ctx *ctx, size_t rows, size_t cols, const ch_expr *const *a,
                 const double *at, int points, ch_rank_info *info)
{
    memset(info, 0, sizeof *info);
    size_t full = rows < cols ? rows : cols;
    if (ch_numeric_rank(ctx, rows, cols, a, points) == (int)full) {
        info->full = 1;
        info->rank = (int)full;
        return 1;
    }
    if (ch_ball_rank(ctx, rows, cols, a, at, points, info)) return -1;
    return info->full;
}

static double *generic_point(ch_ctx *ctx, int which)
{
    size_t ns = ch_ctx_nsyms(ctx);
    double *v = malloc((ns ? ns : 1) * sizeof *v);
    if (v) ch_eval_generic_point(ctx, 0x2545F4914F6CDD1DULL, which, v);
    return v;
}

/* Nonzero at one of two generic points (NaN counts as not decided). */
static int generically_nonzero(ch_ctx *ctx, const ch_expr *e, double *const *pts)
{
    if (ch_is_zero(e)) return 0;
    if (e->kind == CH_NUM) return 1;
    for (int i = 0; i < 2; i++) {
        double v = ch_eval_d(ctx, e, pts[i]);
        if (isfinite(v) && fabs(v) > 1e-9) return 1;
    }
    return 0;
}

/* a*d - b*c divided exactly by prev (Bareiss); the quotient is simplified
 * when prev is not 1 so that the division cancels. */
static const ch_expr *bareiss(ch_ctx *ctx, const ch_expr *a, const ch_expr *d,
                              const ch_expr *b, const ch_expr *c,
                              const ch_expr *prev)
{
    const ch_expr *num = ch_sub(ctx, ch_mul(ctx, a, d), ch_mul(ctx, b, c));
    if (!num || ch_is_zero(num) || ch_is_one(prev)) return num;
    const ch_expr *q = ch_div(ctx, num, prev);
    const ch_expr *s = q && ch_dag_size_capped(q, 300) < 300 ? ch_simplify(ctx, q) : NULL;
    if (!s && q) ch_ctx_clear_error(ctx); /* too large to simplify: keep q */
    return s ? s : q;
}

/* The pivot row of column p among rows p..k-1 of the values a (k x k,
 * Bareiss-eliminated like T) at the caller's point: the largest |a[i][p]|
 * relative to the largest |a[i][j]|, j >= p, among the rows whose entry
 * is nonzero at generic points (ok[i]); k when every candidate is 0 or
 * not finite there. */
static size_t pivot_at(const double *a, size_t k, size_t p, const char *ok)
{
    size_t best = k;
    double bv = 0;
    for (size_t i = p; i < k; i++) {
        double row = 0, v = fabs(a[i * k + p]);
        for (size_t j = p; j < k; j++)
            if (fabs(a[i * k + j]) > row) row = fabs(a[i * k + j]);
        if (!ok[i] || !isfinite(row) || !(row > 0)) continue;
        if (v / row > bv * (1 + 1e-12)) {
            bv = v / row;
            best = i;
        }
    }
    return bv > 1e-12 ? best : k;
}

/* Rows p and q of the values a and the flags ok swapped. */
static void swap_rows_d(double *a, char *ok, size_t k, size_t p, size_t q)
{
    for (size_t j = 0; j < k; j++) {
        double t = a[p * k + j];
        a[p * k + j] = a[q * k + j];
        a[q * k + j] = t;
    }
    char t = ok[p];
    ok[p] = ok[q];
    ok[q] = t;
}

/* The Bareiss step of the values: rows below p, exactly as on T. */
static void bareiss_d(double *a, size_t k, size_t p, double prev)
{
    for (size_t i = p + 1; i < k; i++) {
        for (size_t j = p + 1; j < k; j++)
            a[i * k + j] = (a[p * k + p] * a[i * k + j] - a[i * k + p] * a[p * k + j]) / prev;
        a[i * k + p] = 0;
    }
}

int ch_mat_solve(ch_ctx *ctx, size_t k, const ch_expr *const *A, size_t nrhs,
                 const ch_expr *const *B, const ch_expr **X)
{
    return ch_mat_solve_at(ctx, k, A, nrhs, B, X, NULL);
}

int ch_mat_solve_at(ch_ctx *ctx, size_t k, const ch_expr *const *A, size_t nrhs,
                    const ch_expr *const *B, const ch_expr **X, const double *at)
{
    size_t w = k + nrhs; /* augmented width */
    const ch_expr **T = malloc((k * w + 1) * sizeof *T);
    double *pts[2] = {generic_point(ctx, 0), generic_point(ctx, 1)};
    /* A's values at `at`, eliminated along with T */
    double *av = at ? malloc((k * k + 1) * sizeof *av) : NULL;
    char *ok = at ? malloc(k + 1) : NULL;
    double prev_d = 1;
    int rc = -1;
    if (!T || !pts[0] || !pts[1] || (at && (!av || !ok))) {
        ch_ctx_fail(ctx, CH_ERR_MEMORY, "out of memory");
        goto out;
    }
    for (size_t i = 0; i < k * w; i++) {
        size_t r = i / w, j = i % w;
        /* a NULL entry: the caller's failure, recorded in the context */
        if (!(T[i] = j < k ? A[r * k + j] : B[r * nrhs + j - k])) goto out;
    }
    if (av) ch_eval_d_many(ctx, k * k, A, at, av);
    const ch_expr *prev = ch_one(ctx);
    for (size_t p = 0; p < k; p++) {
        size_t piv = k;
        for (size_t i = p; i < k; i++) {
            int nz = generically_nonzero(ctx, T[i * w + p], pts);
            if (ok) ok[i] = (char)nz;
            if (nz && piv == k) piv = i;
        }
        if (piv == k) {
            rc = 1;
            goto out;
        }
        if (av) {
            size_t best = pivot_at(av, k, p, ok);
            if (best < k) piv = best;
            if (piv != p) swap_rows_d(av, ok, k, p, piv);
        }
        for (size_t j = 0; j < w && piv != p; j++) {
            const ch_expr *t = T[p * w + j];
            T[p * w + j] = T[piv * w + j];
            T[piv * w + j] = t;
        }
        if (av) {
            bareiss_d(av, k, p, prev_d);
            prev_d = av[p * k + p];
        }
        for (size_t i = p + 1; i < k; i++) {
            const ch_expr *lead = T[i * w + p];
            /* Bareiss step: the division by the previous pivot is exact
             * for polynomial entries; simplify cancels it. */
            for (size_t j = p + 1; j < w; j++)
                if (!(T[i * w + j] = bareiss(ctx, T[p * w + p], T[i * w + j], lead,
                                             T[p * w + j], prev)))
                    goto out; /* the context's error (out of memory, a limit) */
            T[i * w + p] = ch_zero(ctx);
        }
        prev = T[p * w + p];
    }
    /* Back substitution on the fraction-free triangle. */
    for (size_t c = 0; c < nrhs; c++)
        for (size_t ii = k; ii-- > 0;) {
            size_t nt = 0;
            const ch_expr **terms = malloc((k + 1) * sizeof *terms);
            if (!terms) {
                ch_ctx_fail(ctx, CH_ERR_MEMORY, "out of memory");
                goto out;
            }
            terms[nt++] = T[ii * w + k + c];
            for (size_t j = ii + 1; j < k; j++)
                terms[nt++] = ch_neg(ctx, ch_mul(ctx, T[ii * w + j], X[j * nrhs + c]));
            X[ii * nrhs + c] = ch_div(ctx, ch_add_n(ctx, nt, terms), T[ii * w + ii]);
            free(terms);
            if (!X[ii * nrhs + c]) goto out;
        }
    rc = 0;
out:
    free(T);
    free(pts[0]);
    free(pts[1]);
    free(av);
    free(ok);
    return rc;
}

/* Row p of the triangular solve: X[c] = (B[p] - sum_j A[p][j] X[j]) / A[p][c]
 * for every right-hand side, the X[j] (j != c) already known. */
static int tri_row(ch_ctx *ctx, size_t k, const ch_expr *const *A, size_t nrhs,
                   const ch_expr *const *B, const ch_expr **X, size_t p,
                   size_t c, const ch_expr **terms)
{
    for (size_t col = 0; col < nrhs; col++) {
        size_t nt = 0;
        terms[nt++] = B[p * nrhs + col];
        for (size_t j = 0; j < k; j++)
            if (j != c && !ch_is_zero(A[p * k + j]))
                terms[nt++] = ch_neg(ctx, ch_mul(ctx, A[p * k + j], X[j * nrhs + col]));
        X[c * nrhs + col] = ch_div(ctx, ch_add_n(ctx, nt, terms), A[p * k + c]);
        if (!X[c * nrhs + col]) return -1;
    }
    return 0;
}

/* The one column of row p that is structurally nonzero and not solved. */
static size_t tri_column(size_t k, const ch_expr *const *A, size_t p,
                         const char *solved)
{
    for (size_t j = 0; j < k; j++)
        if (!solved[j] && !ch_is_zero(A[p * k + j])) return j;
    return k;
}

int ch_mat_solve_triangular(ch_ctx *ctx, size_t k, const ch_expr *const *A,
                            size_t nrhs, const ch_expr *const *B,
                            const ch_expr **X)
{
    size_t *cnt = calloc(k + 1, sizeof *cnt);
    char *used = calloc(k + 1, 1), *solved = calloc(k + 1, 1);
    const ch_expr **terms = malloc((k + 1) * sizeof *terms);
    double *pts[2] = {generic_point(ctx, 0), generic_point(ctx, 1)};
    int rc = -1;
    if (!cnt || !used || !solved || !terms || !pts[0] || !pts[1]) {
        ch_ctx_fail(ctx, CH_ERR_MEMORY, "out of memory");
        goto out;
    }
    for (size_t i = 0; i < k; i++)
        for (size_t j = 0; j < k; j++) cnt[i] += !ch_is_zero(A[i * k + j]);
    for (size_t step = 0; step < k; step++) {
        size_t p = 0;
        while (p < k && (used[p] || cnt[p] != 1)) p++;
        if (p == k) {
            rc = 1; /* no row left with a single unknown */
            goto out;
        }
        size_t c = tri_column(k, A, p, solved);
        if (!generically_nonzero(ctx, A[p * k + c], pts)) {
            rc = 1;
            goto out;
        }
        if (tri_row(ctx, k, A, nrhs, B, X, p, c, terms)) goto out;
        used[p] = solved[c] = 1;
        for (size_t i = 0; i < k; i++)
            if (!used[i] && !ch_is_zero(A[i * k + c])) cnt[i]--;
    }
    rc = 0;
out:
    free(cnt);
    free(used);
    free(solved);
    free(terms);
    free(pts[0]);
    free(pts[1]);
    return rc;
}

int ch_mat_vec(ch_ctx *ctx, size_t rows, size_t cols,
               const ch_expr *const *A, const ch_expr *const *x,
               const ch_expr **y)
{
    const ch_expr **terms = malloc((cols + 1) * sizeof *terms);
    if (!terms) {
        ch_ctx_fail(ctx, CH_ERR_MEMORY, "out of memory");
        return -1;
    }
    int rc = 0;
    for (size_t i = 0; i < rows; i++) {
        for (size_t j = 0; j < cols; j++) terms[j] = ch_mul(ctx, A[i * cols + j], x[j]);
        if (!(y[i] = ch_add_n(ctx, cols, terms))) rc = -1;
    }
    free(terms);
    return rc;
}

/* ---- numeric ---------------------------------------------------------- */

int ch_dense_solve(size_t h, double *A, double *b, double rtol)
{
    double big = 0.0;
    for (size_t i = 0; i < h * h; i++) big = fmax(big, fabs(A[i]));
    if (!isfinite(big)) return 1;
    for (size_t c = 0; c < h; c++) {
        size_t piv = c;
        for (size_t r = c + 1; r < h; r++)
            if (fabs(A[r * h + c]) > fabs(A[piv * h + c])) piv = r;
        if (!(fabs(A[piv * h + c]) > rtol * big)) return 1;
        for (size_t j = 0; j < h; j++) {
            double tmp = A[c * h + j];
            A[c * h + j] = A[piv * h + j], A[piv * h + j] = tmp;
        }
        double tb = b[c];
        b[c] = b[piv], b[piv] = tb;
        for (size_t r = c + 1; r < h; r++) {
            double f = A[r * h + c] / A[c * h + c];
            for (size_t j = c; j < h; j++) A[r * h + j] -= f * A[c * h + j];
            b[r] -= f * b[c];
        }
    }
    for (size_t c = h; c-- > 0;) {
        for (size_t j = c + 1; j < h; j++) b[c] -= A[c * h + j] * b[j];
        b[c] /= A[c * h + c];
    }
    return 0;
}
