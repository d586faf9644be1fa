/* matrix.h — symbolic vectors and matrices (row-major arrays of nodes).
 *
 * Matrices are plain arrays allocated in the context arena, so they share
 * the context's lifetime. Ranks are decided numerically at random points:
 * "identically singular" means singular at every one of several generic
 * points, which is how admissibility and degeneracy are reported. */
#ifndef CH_MATRIX_H
#define CH_MATRIX_H

#include "core/expr.h"

/* rows x cols array in arena memory, entries NULL. */
const ch_expr **ch_mat_new(ch_ctx *ctx, size_t rows, size_t cols);

/* J[i*nv + j] = d f_i / d v_j. Returns NULL on failure. */
const ch_expr **ch_jacobian(ch_ctx *ctx, size_t nf, const ch_expr *const *f,
                            size_t nv, const ch_expr *const *v);

/* Numerical rank of a rows x cols symbolic matrix: the largest rank seen
 * over `points` random points (every symbol uniform in +-[0.5, 1.5], all
 * positive at odd points, fixed seed; points where an entry is not finite
 * are skipped; a full rank ends the search). At a point, a full row rank
 * shown by triangular structure (entries not identically zero) with
 * pivots above the tolerance is taken without elimination, in
 * O(rows * cols); else Gaussian elimination, entries below 1e-9 times the
 * largest counting as zero. -1 when no point gave finite values. */
int ch_numeric_rank(ch_ctx *ctx, size_t rows, size_t cols,
                    const ch_expr *const *a, int points);

/* The rank of a rows x cols symbolic matrix decided in ball arithmetic
 * (THEORY §7), independent of the scale of the entries. Points: first
 * `at` (ch_ctx_nsyms values, NaN for "random"; NULL: none), then
 * generic points with the parameters held at their values in `at` and
 * the other symbols in +-[0.5, 1.5] shrunk by 2^-j for later points (a
 * sqrt(1 - v^2/c^2) is defined somewhere); a point where an entry is
 * undefined is skipped, never counted as singular. At each point the
 * entries are balls at 256 bits (1024 when that is not enough), every
 * row scaled to its largest entry, and eliminated with pivots whose
 * balls exclude 0: rank is the largest number of such pivots seen (a
 * nonzero minor: a proof of rank >= rank). full: rank = min(rows,
 * cols). deficient: at every one of the points evaluated (at least
 * two), the rest after the pivots is 0 to 2^-120 of the rows' scale (the
 * zero test of THEORY §7), *witness (when not NULL, arena-owned
 * ch_ctx_nsyms doubles) one of those points. Neither: undecided (no
 * point evaluated, or balls too wide). Returns -1 out of memory. */
typedef struct {
    int rank, full, deficient, evaluated;
    const double *witness;
} ch_rank_info;
int ch_ball_rank(ch_ctx *ctx, size_t rows, size_t cols, const ch_expr *const *a,
                 const double *at, int points, ch_rank_info *info);

/* 1 when the matrix has full rank: shown by ch_numeric_rank at a float
 * point (fast, structural first) or else by ch_ball_rank; 0 otherwise
 * with *info the ball verdict (deficient, or undecided) for the message;
 * -1 out of memory. A deficiency is never concluded from floats. */
int ch_full_rank(ch_ctx *ctx, size_t rows, size_t cols, const ch_expr *const *a,
                 const double *at, int points, ch_rank_info *info);

/* Solves A X = B exactly for a k x k matrix A and a k x nrhs matrix B by
 * fraction-free (Bareiss) elimination; pivots are chosen among entries that
 * are nonzero at a random point, so an identically singular A is reported
 * (return 1) rather than divided by. X (k x nrhs, caller's array) gets
 * entries num/det in lowest structural terms. Returns 0, 1 when A is
 * singular at generic points, -1 on failure (context error set). */
int ch_mat_solve(ch_ctx *ctx, size_t k, const ch_expr *const *A, size_t nrhs,
                 const ch_expr *const *B, const ch_expr **X);

/* ch_mat_solve whose pivots are also nonzero at the point `at` (symbol
 * values, ch_ctx_nsyms entries; NULL: generic points only), e.g. a
 * model's initial state: at each step the candidate largest in magnitude
 * there relative to the largest entry of its row (values of the
 * eliminated matrix at `at`, carried along numerically) is taken, so no
 * entry of X divides by an expression that vanishes at `at` when A is
 * regular there. Where A is singular at `at` or its values there are not
 * finite, the first row nonzero at generic points, as ch_mat_solve. */
int ch_mat_solve_at(ch_ctx *ctx, size_t k, const ch_expr *const *A, size_t nrhs,
                    const ch_expr *const *B, const ch_expr **X, const double *at);

/* Solves A X = B (shapes as in ch_mat_solve) when A is triangular up to a
 * permutation of rows and columns: repeatedly a row with one unknown left
 * gives that unknown by substitution of the known ones. O(k^2) nodes per
 * right-hand side and no division but by the pivots, so the solution keeps
 * the sharing of the DAG (alpha of an n-trailer). Pivots must be nonzero
 * at generic points. Returns 0, 1 when A has no such structure (or a
 * pivot is generically 0: use ch_mat_solve, which decides singularity),
 * -1 on failure (context error set). X may be partly written on 1. */
int ch_mat_solve_triangular(ch_ctx *ctx, size_t k, const ch_expr *const *A,
                            size_t nrhs, const ch_expr *const *B,
                            const ch_expr **X);

/* y = A x for a rows x cols matrix (y: rows entries, caller's array). */
int ch_mat_vec(ch_ctx *ctx, size_t rows, size_t cols,
               const ch_expr *const *A, const ch_expr *const *x,
               const ch_expr **y);

/* ---- numeric ---------------------------------------------------------- */

/* Solves the h x h system A z = b in place (Gaussian elimination with
 * partial pivoting; A is overwritten, b gets z). Returns 1 when A is
 * singular: a pivot of magnitude <= rtol times the largest |entry| of A
 * (rtol = 0: only an exact zero), or not finite. */
int ch_dense_solve(size_t h, double *A, double *b, double rtol);

#endif
