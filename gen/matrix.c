/* matrix.c — Jacobians and numerical rank. */
#include "matrix.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "diff.h"
#include "eval.h"

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

/* Rank by Gaussian elimination with full pivoting; entries below
 * tol * (largest entry) count as zero. */
static int rank_d(double *a, size_t rows, size_t cols)
{
    double amax = 0;
    for (size_t i = 0; i < rows * cols; i++)
        if (fabs(a[i]) > amax) amax = fabs(a[i]);
    double tol = 1e-9 * (amax > 0 ? amax : 1);
    int rank = 0;
    for (size_t r = 0; r < rows && r < cols; r++) {
        size_t pi = r, pj = r;
        double best = 0;
        for (size_t i = r; i < rows; i++)
            for (size_t j = r; j < cols; j++)
                if (fabs(a[i * cols + j]) > best) {
                    best = fabs(a[i * cols + j]);
                    pi = i;
                    pj = j;
                }
        if (best <= tol) break;
        for (size_t j = 0; j < cols; j++) { /* swap rows r, pi */
            double t = a[r * cols + j];
            a[r * cols + j] = a[pi * cols + j];
            a[pi * cols + j] = t;
        }
        for (size_t i = 0; i < rows; i++) { /* swap columns r, pj */
            double t = a[i * cols + r];
            a[i * cols + r] = a[i * cols + pj];
            a[i * cols + pj] = t;
        }
        for (size_t i = r + 1; i < rows; i++) {
            double f = a[i * cols + r] / a[r * cols + r];
            for (size_t j = r; j < cols; j++) a[i * cols + j] -= f * a[r * cols + j];
        }
        rank++;
    }
    return rank;
}

int ch_numeric_rank(ch_ctx *ctx, size_t rows, size_t cols,
                    const ch_expr *const *a, int points)
{
    size_t ns = ch_ctx_nsyms(ctx), n = rows * cols;
    double *sym = malloc((ns ? ns : 1) * sizeof *sym);
    double *val = malloc((n ? n : 1) * sizeof *val);
    int best = -1;
    unsigned long long seed = 0x9e3779b97f4a7c15ULL;
    for (int p = 0; sym && val && p < points; p++) {
        for (size_t s = 0; s < ns; s++) {
            seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
            double u = (double)(seed >> 11) / 9007199254740992.0;
            /* odd points all positive: sqrt and log need that domain */
            double sign = (p % 2 == 0 && u < 0.5) ? -1 : 1;
            sym[s] = sign * (0.5 + 2 * fabs(u - 0.5));
        }
        ch_eval_d_many(ctx, n, a, sym, val);
        int finite = 1;
        for (size_t i = 0; i < n; i++) finite &= isfinite(val[i]) != 0;
        if (!finite) continue;
        int r = rank_d(val, rows, cols);
        if (r > best) best = r;
    }
    free(sym);
    free(val);
    return best;
}
