/* collect.h — the momenta, Euler–Lagrange terms and energy of a Lagrangian
 * quadratic in the velocities, written by velocity monomials (a display
 * form: the derived p, E of lagrange.h are what chetaev computes with).
 *
 * When L = q_t^T M q_t / 2 + b^T q_t + c with M, b, c free of velocities
 * (THEORY §1):
 *   p_i = sum_j M_ij q_t_j + b_i
 *   E_i = sum_j M_ij q_tt_j + sum_{j<=k} G_ijk q_t_j q_t_k
 *         + sum_j g_ij q_t_j + e_i
 *   E   = sum_{j<=k} M'_jk q_t_j q_t_k - c        (M'_jk = M_jk, M'_jj = M_jj/2)
 * with, d_a the partial derivative by q_a and d_t by t,
 *   G_ijk = d_k M_ij + d_j M_ik - d_i M_jk   (j < k)
 *   G_ijj = d_j M_ij - d_i M_jj / 2
 *   g_ij  = d_t M_ij + d_j b_i - d_i b_j,    e_i = d_t b_i - d_i c.
 * As derived, E_i of an n-trailer prints in O(n^2) characters (d/dt of
 * products of long sums, the same velocity in many places), so the
 * whole output grows as n^3; collected it is O(n) terms. The nonzero
 * coefficients are found from the coordinates each M_ij, b_i contains
 * (symbol sets, no walk), so a model whose M_ij hold few coordinates
 * (chains, trailers) costs O(n^2) small derivatives, not n^3. */
#ifndef CH_COLLECT_H
#define CH_COLLECT_H

#include "mech/lagrange.h"

/* The display form of a coefficient (derive.c's tidy): NULL on failure. */
typedef const ch_expr *(*ch_collect_tidy)(void *arg, const ch_expr *e);

typedef struct {
    const ch_expr **p;      /* n */
    const ch_expr **EL;     /* n */
    const ch_expr *energy;
} ch_collected;

/* The collected forms of L's momenta, Euler–Lagrange terms and energy,
 * M the mass matrix as displayed (equal to L->M; its entries are the
 * coefficients), b and c shown through tidy. Returns 1 with *out filled,
 * 0 when L is not quadratic in the velocities (not a polynomial in them,
 * or M depends on them) or M's entries hold too many coordinates to
 * collect cheaply (a large dense M), -1 on failure (context error set). */
int ch_collect_quadratic(ch_ctx *ctx, const ch_model *m, const ch_lagrange *L,
                         const ch_expr *const *M, ch_collect_tidy tidy,
                         void *arg, ch_collected *out);

#endif
