/* lagrange.h — the unconstrained Euler–Lagrange data and the constraint
 * data in Chetaev form (THEORY §1, and the G, c of §2).
 *
 * Everything is symbolic and lives in the model's context. Matrices are
 * row-major arrays of node pointers. Admissibility is checked numerically at
 * random points (rank of M and of G in double precision): an identically
 * singular mass matrix or rank-deficient constraint Jacobian is a model
 * error positioned at the statement responsible. */
#ifndef CH_LAGRANGE_H
#define CH_LAGRANGE_H

#include "core/diff.h"
#include "lang/model.h"

typedef struct ch_lagrange {
    size_t n, k;
    const ch_expr **p;   /* n: momenta p_i = dL/dq_t_i (000 eq. 30) */
    const ch_expr **M;   /* n*n: mass matrix d2L/dq_t_i dq_t_j (000 eq. 31) */
    const ch_expr **h;   /* n: E_i = M_ij q_tt_j + h_i */
    const ch_expr **EL;  /* n: E_i = d/dt p_i - dL/dq_i (000 eq. 27-29);
                          * NULL until ch_lagrange_euler */
    const ch_expr **Q;   /* n: generalized forces */
    const ch_expr *energy; /* E = q_t_i p_i - L (001 eq. 16) */
    const ch_expr **phi; /* k: constraints at velocity level */
    const ch_expr **G;   /* k*n: dphi_nu/dq_t_i (Chetaev coefficients) */
    const ch_expr **c;   /* k: bias dphi/dt + q_t_j dphi/dq_j */
} ch_lagrange;

/* t = 0, the coordinates q and velocities qt (n each) and the
 * parameters' values into the point v (ch_ctx_nsyms values; the other
 * symbols untouched). */
void ch_model_point_fill(const ch_model *m, const double *q, const double *qt, double *v);

/* The model's initial state and parameter values as a point of
 * ch_ball_rank (t = 0; NaN for the other symbols), arena-owned; NULL out
 * of memory. */
const double *ch_model_point(ch_ctx *ctx, const ch_model *m);

/* Appends "x = 0.3, y = 1, x' = -1.2, y' = 0" (the coordinates, then the
 * velocities, of the point w of ch_ctx_nsyms values) to buf
 * (ch_str_append). */
void ch_model_point_append(const ch_model *m, const double *w, char *buf, size_t size);

/* Derives all fields but EL; returns 0, or nonzero with err filled (degenerate
 * Lagrangian, inadmissible constraints, expression limits). */
int ch_lagrange_derive(ch_ctx *ctx, const ch_model *m, ch_lagrange *out,
                       ch_error *err);

/* L->EL of L derived from m, unless made before: only the display and
 * the tests read E_i (the equations of motion use M and h), and on the
 * 200-trailer it is 4% of the nodes of `emit --form all`. 0, or -1 on a
 * context error. */
int ch_lagrange_euler(ch_ctx *ctx, const ch_model *m, ch_lagrange *L);

/* The drift field V = d/dt + q_t_j d/dq_j of m into *v (partial
 * derivatives: velocities held fixed); 0, or -1 on a context error. */
int ch_lagrange_drift(ch_ctx *ctx, const ch_model *m, ch_diff_dir *v);

#endif
