/* kkt.h — the equations of motion as one linear system in the
 * accelerations and multipliers, and its null-space reduction to the
 * independent accelerations (docs/theory.md "What is integrated").
 *
 * The full form integrates (THEORY §2)
 *   M q_tt = b + G^T lambda,   G q_tt = r,   b = Q - h,  r = -c,
 * the KKT system, whose values ch_kkt_values lays out as
 * M (n*n), G (k*n), b (n), r (k). With G's columns split into the
 * dependent ones G_d (k x k, the manifold's choice) and the independent
 * ones G_i, X = G_d^-1 [G_i | r] gives q_tt = B v_t + w with
 * B = [I; -X_i] and w = [0; X_r], and since G B = 0 the reactions drop
 * out of
 *   A v_t = f,   A = B^T M B,   f = B^T (b - M w),
 * the reduced equations of THEORY §4 written with the full form's data.
 * The code generator lowers these to numbers (codegen/emit_red.h: LU or
 * substitution on the values at run time); the functions below build the
 * same reduction as expressions when G_d is triangular up to
 * permutations, so that the CSE and the factoring see its structure.
 * Everything built lives in the context. */
#ifndef CH_KKT_H
#define CH_KKT_H

#include "core/expr.h"
#include "mech/hamilton.h"
#include "mech/kane.h"
#include "mech/lagrange.h"

/* The shape of the KKT system and the split of the velocities. */
typedef struct {
    size_t n, k, m;            /* coordinates, constraints, m = n - k */
    const int *dep;            /* k dependent coordinates (indices into n) */
    const int *indep;          /* m independent coordinates */
    /* Nonzero pattern of the values, n*n + k*n + n + k flags in
     * ch_kkt_values' order; 2 for an entry of G that is constant along
     * the motion (free of t, q and q': a pivot that needs no chart test). */
    const unsigned char *nz;
} ch_kkt;

/* Offsets of M_ij, G_aj, b_i and r_a among the values. */
static inline size_t ch_kkt_M(const ch_kkt *s, size_t i, size_t j) { return i * s->n + j; }
static inline size_t ch_kkt_G(const ch_kkt *s, size_t a, size_t j)
{
    return s->n * s->n + a * s->n + j;
}
static inline size_t ch_kkt_b(const ch_kkt *s, size_t i) { return s->n * s->n + s->k * s->n + i; }
static inline size_t ch_kkt_r(const ch_kkt *s, size_t a)
{
    return s->n * s->n + s->k * s->n + s->n + a;
}

/* The n*n + k*n + n + k values M, G, b = Q - h, r = -c of L into out.
 * 0, or -1 on a context error. */
int ch_kkt_values(ch_ctx *ctx, const ch_lagrange *L, const ch_expr **out);

/* The order in which G_d is solved by substitution: the j-th pivot in
 * row prow[j] of G and dependent column pcol[j] (k entries each), each
 * next row having exactly one nonzero among the columns not yet solved.
 * 1, 0 when G_d is not triangular up to permutations, -1 out of memory. */
int ch_kkt_pivots(const ch_kkt *s, int *prow, int *pcol);

/* The reduced system as expressions of the values v (in ch_kkt_values'
 * order; s->nz their nonzero pattern) when G_d is triangular: X, M B,
 * A and f built by substitution in ch_kkt_pivots' order, as DAG nodes
 * (each X entry is one node however often used), so that the CSE and
 * ch_factor_sums see the structure a numeric solve hides (G_d's and M's
 * entries of the n-trailer are cos(th_i - th_j) written out: each row's
 * sums become prefix sums). out receives m*m entries of A (row-major,
 * symmetric), m of f, then the k pivots of G_d; bd, when not NULL, the
 * k*m entries of B's dependent rows -X_i (row nu: dependent velocity nu).
 * Returns 0, 1 when G_d is not triangular, or -1 (a node limit, out of
 * memory). */
int ch_kkt_reduced(ch_ctx *ctx, const ch_kkt *s, const ch_expr *const *v,
                   const ch_expr **out, const ch_expr **bd);

/* ch_kkt_reduced with A and f from the Lagrangian's Kane form (kane.h)
 * instead of M and b: A = sum_k mu_k P_k P_k^T and f = B^T F -
 * sum_k mu_k (P_k (V(E_k) + a_k . w) + E_k B^T g_k), P_k = B^T a_k. On the
 * n-trailer every P_k (a point's velocity per unit independent velocity)
 * is the one before it plus a term, where M's entries are cos(th_i -
 * th_j) times row weights. G_d's part and the outputs are as there; v
 * is read for G and r only. Same returns. */
int ch_kkt_reduced_kane(ch_ctx *ctx, const ch_kkt *s, const ch_expr *const *v,
                        const ch_kane *kn, const ch_expr **out, const ch_expr **bd);

/* The Poincare-Hamilton right side y*_t = d/dt y*(t, q, q'_r) from the
 * same Kane form, for constraints linear in the velocities (G free of
 * them, so B depends on t and q only): with y*_r = sum_b mu_b E_b P_b^r
 * and A v_t = f (ch_kkt_reduced_kane),
 *   yt_r = (B^T F)_r + sum_b mu_b E_b (dP_b^r/dt - (B^T g_b)_r),
 * the accelerations cancel. The E_b and dP_b/dt read all n velocities
 * (the dependent ones as the constraints give them). On the n-trailer
 * every P_b and its time derivative are the previous one plus a term, so
 * the CSE's partial sums make yt O(N) where the closed-form H*'s
 * p*_nu B^nu_r sums are O(N^2). The constraints being homogeneous
 * (Chetaev's sigma = 1), y* = A v with A = sum_b mu_b P_b P_b^T, and eta
 * (m entries) gets the independent velocities A^-1 y of the momentum
 * symbols y, or eta[0] = NULL where that solve fails; bd the k*m
 * entries of B's dependent rows, as ch_kkt_reduced_kane's (alpha = bd
 * times the independent velocities), and A its m*m entries. v is read
 * for G only. Returns 0 with m entries in yt, 1 when G_d is not
 * triangular, -1 (a node limit, out of memory). */
int ch_kkt_hamilton_kane(ch_ctx *ctx, const ch_kkt *s, const ch_expr *const *v,
                         const ch_kane *kn, const ch_expr *const *y, const ch_expr **yt,
                         const ch_expr **eta, const ch_expr **bd, const ch_expr **A);

/* The hamilton form from the Kane form (ch_kkt_hamilton_kane), with the
 * velocities the state gives: alpha = B_dep eta, y* = A eta. */
typedef struct {
    const ch_expr **yt;    /* m: y*_t */
    const ch_expr **eta;   /* m: A^-1 y, NULL where that solve failed */
    const ch_expr **alpha; /* k: B_dep v_indep */
    const ch_expr **ystar; /* m: A v_indep */
} ch_kkt_ham;

/* ch_kkt_hamilton_kane on L's G with mf's split, ham's momentum symbols
 * and m's velocities, into *out (context memory), where H* exists and
 * k > 0; the caller checks that the constraints are linear and
 * homogeneous in the velocities. 0; 1 when there is no such form (G_d not
 * triangular, no H*, a node limit: the context's error is cleared, the
 * closed form serves instead); -1 out of memory. */
int ch_kkt_hamilton_form(ch_ctx *ctx, const ch_model *m, const ch_lagrange *L,
                         const ch_manifold *mf, const ch_hamilton *ham, const ch_kane *kn,
                         ch_kkt_ham *out);

#endif
