/* emit_red.h — the reduced right side by small numeric solves (THEORY §4
 * written with the full form's data).
 *
 * With G = d phi by dq' (k x n) split into dependent and independent
 * columns G_d, G_i and r = -c the velocity-free part of the differentiated
 * constraints (G qtt = r), X = G_d^-1 [G_i | r] gives
 * qtt = B v_t + w with B = [I; -X_i] and w = [0; X_r], and the reduced
 * equations are (B^T M B) v_t = B^T (b - M w) with b = Q - h (Chetaev:
 * the reactions lie in the range of G^T and G B = 0). The generated
 * function evaluates M, G, b, r (the full form's values) with the
 * caller's straight-line program in its own body, so the compiler sees one
 * function and the values stay in registers or on the stack, and does the
 * rest as straight-line code on named scalars that skips the entries
 * known to be zero symbolically and declares no scalar that nothing reads
 * (dead values are swept: an unused variable fails -Werror). When G_d is triangular up to a
 * permutation of rows and columns (found by repeatedly taking a row with
 * one unsolved unknown, e.g. the n-trailer) X comes from substitution,
 * its pivots inverted up front; otherwise from la_solve (LU). B^T M B is
 * m x m, solved by ch_emit_small_solve. ch_reduced_exprs does the same
 * substitutions on the expressions instead, for the CSE to simplify. */
#ifndef CH_EMIT_RED_H
#define CH_EMIT_RED_H

#include "core/buf.h"
#include "codegen/cse.h"
#include "codegen/tuning.h"
#include "core/expr.h"
#include "mech/kane.h"

typedef struct {
    size_t n, k, m;
    const int *dep;            /* k dependent coordinates (indices into n) */
    const int *indep;          /* m independent coordinates */
    /* Nonzero pattern of the values, n*n + k*n + n + k flags in the order
     * M, G, b, r; 2 for an entry of G that is constant along the motion
     * (free of t, q and q': a pivot that needs no chart test). */
    const unsigned char *nz;
    /* The C text of each value (an atomic expression: a temporary of
     * body, a symbol, a number), in the same order. */
    const char *const *val;
    /* The statements that compute the values (ch_cse_prog's body; may
     * also write the dependent velocities into v), or NULL. */
    const char *body;
} ch_redsolve;

/* What emitted code needs besides its own text, reported by the function
 * that writes it into *needs (or'ed in), so that nobody searches the text:
 * la_solve (templates/solve.c.in) is called; a work array is static (the
 * functions are then not reentrant, PREFIX_REENTRANT 0). */
#define CH_NEEDS_LA_SOLVE 1u
#define CH_NEEDS_STATIC 2u

/* Below this chart quality (emit_c.c's kn_cq, README "Charts") the
 * emitted rhs of a reduced or hamilton form returns 2: the chart is
 * numerically singular there. Where kn_acc solves a triangular G_d it
 * tests each pivot against its row of G instead: 2 where
 * pivot^2 <= CH_CHART_SINGULAR^2 |G_row|^2 (for k = 1 the same number). */
#define CH_CHART_SINGULAR 1e-9
#define CH_CHART_SINGULAR2 "1e-18"

/* Appends `static int kn_acc(t, x, p, v, vt)` (0, 1 where singular, 2
 * where a triangular G_d's pivot is, as above) to
 * code and adds the operations it performs besides in->body to ops.
 * *triangular says which solve was used for G_d. kn_acc declares ws and
 * piv (la_solve's work space) and Gd, Xa for the LU path; the names
 * amax and dg, X, MB, A, d, id, l, u followed by digits are its own, so
 * the body's temporaries must use another stem. Returns 0, or -1 when out of
 * memory. */
int ch_emit_reduced_numeric(const ch_redsolve *in, ch_buf *code, ch_opcount *ops,
                            int *triangular, unsigned *needs);

/* Which of in's values (n*n + k*n + n + k flags into read, in's order)
 * the statements of ch_emit_reduced_numeric read, whatever in's texts
 * (in->val and in->body are not used): a program of the values for
 * kn_acc need not compute the others (each would be an unused
 * variable). Every pivot of G_d is read. 0, or -1 out of memory. */
int ch_redsolve_reads(const ch_redsolve *in, unsigned char *read);

/* The pivots ch_reduced_exprs, ch_reduced_kane and the triangular solve
 * take, in their order: the j-th in row prow[j] of G and dependent
 * column pcol[j] (k entries each); 0 when G_d is not triangular up to
 * permutations. */
int ch_redsolve_pivots(const ch_redsolve *in, int *prow, int *pcol);

/* The same solve for all n accelerations (the full form's right side,
 * every form's multipliers): appends `static int kn_facc(o, acc)`,
 * qtt = B vt + w from in's values (texts reading the array o: those
 * la_kkt solves, at velocities that need not satisfy the constraints,
 * and its qtt is this one), 0, or 1 where G_d or B^T M B is singular
 * (not positive definite), for the caller's la_kkt to take over. For the
 * n-trailer O(N^2) operations where la_kkt's are O(N^3) with
 * loops. Declares vt, and ws, piv and the LU path's arrays where it
 * uses them; the rest as ch_emit_reduced_numeric. */
int ch_emit_full_numeric(const ch_redsolve *in, ch_buf *code, ch_opcount *ops,
                         int *triangular, unsigned *needs);

/* The reduced system of ch_emit_reduced_numeric as expressions of the
 * values v (n*n + k*n + n + k, in the order of in->val; in->nz their
 * nonzero pattern) when G_d is triangular up to permutations: X, M B,
 * B^T M B and B^T (b - M w) built by the same substitutions, as DAG
 * nodes (each X entry is one node however often used), so that the
 * CSE and ch_factor_sums see the structure the numeric solve hides
 * (G_d's and M's entries of the n-trailer are cos(th_i - th_j) written
 * out: each row's sums become prefix sums). out receives m*m entries of
 * A (row-major, symmetric), m of f, then the k pivots of G_d (zero
 * where G_d is singular); bd, when not NULL, the k*m entries of B's
 * dependent rows -G_d^-1 G_i (row nu: dependent velocity nu). Returns 0,
 * 1 when G_d is not triangular, or -1 (a node limit, out of memory). */
int ch_reduced_exprs(ch_ctx *ctx, const ch_redsolve *in, const ch_expr *const *v,
                     const ch_expr **out, const ch_expr **bd);

/* ch_reduced_exprs with A and f from the Lagrangian's Kane form (kane.h)
 * instead of M and b: A = sum_k mu_k P_k P_k^T and f = B^T F -
 * sum_k mu_k (P_k (V(E_k) + a_k . w) + E_k B^T g_k), P_k = B^T a_k. On the
 * n-trailer every P_k (a point's velocity per unit independent velocity)
 * is the one before it plus a term, where M's entries are cos(th_i -
 * th_j) times row weights. G_d's part and the outputs are as there; v
 * is read for G and r only. Same returns. */
int ch_reduced_kane(ch_ctx *ctx, const ch_redsolve *in, const ch_expr *const *v,
                    const ch_kane *kn, const ch_expr **out, const ch_expr **bd);

/* The Poincare-Hamilton right side y*_t = d/dt y*(t, q, q'_r) from the
 * same Kane form, for constraints linear in the velocities (G free of
 * them, so B depends on t and q only): with y*_r = sum_b mu_b E_b P_b^r
 * and A v_t = f (ch_reduced_kane),
 *   yt_r = (B^T F)_r + sum_b mu_b E_b (dP_b^r/dt - (B^T g_b)_r),
 * the accelerations cancel. The E_b and dP_b/dt read all n velocities
 * (the dependent ones as the constraints give them). On the n-trailer
 * every P_b and its time derivative are the previous one plus a term, so
 * the CSE's partial sums make yt O(N) where the closed-form H*'s
 * p*_nu B^nu_r sums are O(N^2). The constraints being homogeneous
 * (Chetaev's sigma = 1), y* = A v with A = sum_b mu_b P_b P_b^T, and eta
 * (m entries) gets the independent velocities A^-1 y of the momentum
 * symbols y, or eta[0] = NULL where that solve fails; bd the k*m
 * entries of B's dependent rows, as ch_reduced_kane's (alpha = bd times
 * the independent velocities), and A its m*m entries. v is read for G
 * only. Returns 0 with m entries in yt, 1 when G_d is not triangular, -1
 * (a node limit, out of memory). */
int ch_hamilton_kane(ch_ctx *ctx, const ch_redsolve *in, const ch_expr *const *v,
                     const ch_kane *kn, const ch_expr *const *y, const ch_expr **yt,
                     const ch_expr **eta, const ch_expr **bd, const ch_expr **A);

/* Appends the solve of the symmetric m x m system A x = f whose lower
 * triangle is in the scalars A<i*m+j> (j <= i, declared by the caller)
 * and whose right side is in vt[0..m), in place, followed by the return
 * statement: ch_emit_spd_solve's unrolled L D L^T for m <=
 * CH_SPD_UNROLL_MAX, and la_solve on an array rebuilt from the scalars
 * (work space ws and piv of at least m*m + 1 and m + 1 entries, declared
 * by the caller) for larger m or where a pivot shows A is not numerically
 * positive definite. anz: A's nonzero pattern. The operations are added
 * to ops. */
void ch_emit_small_solve(ch_buf *b, size_t m, const unsigned char *anz, ch_opcount *ops,
                         unsigned *needs);

/* The operations of la_solve on an n x n symmetric positive definite
 * system with nrhs right sides (Cholesky path), added to ops. */
void ch_la_solve_ops(size_t n, size_t nrhs, ch_opcount *ops);

/* "static " for a declaration of arrays of count elements in all (no
 * initializers), with CH_NEEDS_STATIC set in *needs (needs may be NULL),
 * "" otherwise. */
const char *ch_emit_storage(size_t count, unsigned *needs);

/* Appends straight-line code solving A x = f in place (f_fmt "f[%zu]"
 * indexes f, a_fmt "A[%zu]" the row-major m x m A, anz its nonzero
 * pattern) by an unrolled A = L D L^T with zero entries skipped; where a
 * pivot shows A is not numerically positive definite the statement
 * `fallback` (e.g. "return la_solve(...);") runs with A and f intact.
 * The operations performed are added to ops. The entries of A it reads
 * (the diagonal and those anz says may be nonzero; not the fallback's)
 * are set in aread (m*m flags), unless NULL. */
void ch_emit_spd_solve(ch_buf *b, size_t m, const char *a_fmt, const char *f_fmt,
                       const unsigned char *anz, const char *fallback, ch_opcount *ops,
                       unsigned char *aread);

#endif
