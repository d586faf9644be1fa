/* matrix.h — symbolic vectors and matrices (row-major arrays of nodes).
 *
 * Matrices are plain arrays allocated in the context arena, so they share
 * the context's lifetime. Ranks are decided numerically at random points:
 * "identically singular" means singular at every one of several generic
 * points, which is how admissibility and degeneracy are reported. */
#ifndef CH_MATRIX_H
#define CH_MATRIX_H

#include "expr.h"

/* rows x cols array in arena memory, entries NULL. */
const ch_expr **ch_mat_new(ch_ctx *ctx, size_t rows, size_t cols);

/* J[i*nv + j] = d f_i / d v_j. Returns NULL on failure. */
const ch_expr **ch_jacobian(ch_ctx *ctx, size_t nf, const ch_expr *const *f,
                            size_t nv, const ch_expr *const *v);

/* Numerical rank of a rows x cols symbolic matrix: the largest rank seen
 * over `points` random points (every symbol uniform in +-[0.5, 1.5], all
 * positive at odd points, fixed seed; points where an entry is not finite
 * are skipped). -1 when no point gave finite values. */
int ch_numeric_rank(ch_ctx *ctx, size_t rows, size_t cols,
                    const ch_expr *const *a, int points);

#endif
