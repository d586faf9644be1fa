/* emit_red.h — the reduced right side by small numeric solves (THEORY §4
 * written with the full form's data).
 *
 * With G = d phi by dq' (k x n) split into dependent and independent
 * columns G_d, G_i and r = -c the velocity-free part of the differentiated
 * constraints (G qtt = r), X = G_d^-1 [G_i | r] gives
 * qtt = B v_t + w with B = [I; -X_i] and w = [0; X_r], and the reduced
 * equations are (B^T M B) v_t = B^T (b - M w) with b = Q - h (Chetaev:
 * the reactions lie in the range of G^T and G B = 0). The generated
 * function evaluates in->dyn (M, G, b, r as the full form emits them) and
 * does the rest as straight-line code that skips the entries known to be
 * zero symbolically. When G_d is triangular up to a permutation of rows
 * and columns (found by repeatedly taking a row with one unsolved
 * unknown, e.g. the n-trailer) X comes from substitution; otherwise from
 * la_solve (LU). B^T M B is m x m, solved by ch_emit_spd_solve's
 * unrolled L D L^T (la_solve for m > CH_SPD_UNROLL_MAX or when the matrix
 * is not numerically positive definite). */
#ifndef CH_EMIT_RED_H
#define CH_EMIT_RED_H

#include "buf.h"
#include "cse.h"

typedef struct {
    size_t n, k, m;
    const int *dep;            /* k dependent coordinates (indices into n) */
    const int *indep;          /* m independent coordinates */
    /* Nonzero pattern of kn_dyn's outputs, n*n + k*n + n + k flags in its
     * order: M, G, b, r. */
    const unsigned char *nz;
    /* The kernel that fills M, G, b, r: "kn_dyn", or "kn_rdyn" (emit_c's
     * fused kernel, which also writes the dependent velocities into v). */
    const char *dyn;
} ch_redsolve;

/* Appends `static int kn_acc(t, x, p, v, vt)` (0, or 1 where singular) to
 * code and adds the operations it performs besides kn_dyn to ops.
 * *triangular says which solve was used for G_d. Returns 0, or -1 when
 * out of memory. */
int ch_emit_reduced_numeric(const ch_redsolve *in, ch_buf *code, ch_opcount *ops,
                            int *triangular);

/* The operations of la_solve on an n x n symmetric positive definite
 * system with nrhs right sides (Cholesky path), added to ops. */
void ch_la_solve_ops(size_t n, size_t nrhs, ch_opcount *ops);

/* Largest m for which ch_emit_spd_solve unrolls the solve. */
#define CH_SPD_UNROLL_MAX 8

/* Appends straight-line code solving A x = f in place (f_fmt "f[%zu]"
 * indexes f, a_fmt "A[%zu]" the row-major m x m A, anz its nonzero
 * pattern) by an unrolled A = L D L^T with zero entries skipped; where a
 * pivot shows A is not numerically positive definite the statement
 * `fallback` (e.g. "return la_solve(...);") runs with A and f intact.
 * The operations performed are added to ops. */
void ch_emit_spd_solve(ch_buf *b, size_t m, const char *a_fmt, const char *f_fmt,
                       const unsigned char *anz, const char *fallback, ch_opcount *ops);

#endif
