/* emit_red.h — the null-space reduction of the KKT system (mech/kkt.h)
 * lowered to numbers: the reduced right side kn_acc and the full form's
 * accelerations kn_facc by small numeric solves on the system's values.
 *
 * The generated function evaluates M, G, b, r with the caller's
 * straight-line program in its own body, so the compiler sees one
 * function and the values stay in registers or on the stack, and does
 * X = G_d^-1 [G_i | r], M B, A = B^T M B and f = B^T (b - M w) as
 * straight-line code on named scalars that skips the entries known to be
 * zero symbolically and declares no scalar that nothing reads (dead
 * values are swept: an unused variable fails -Werror). When G_d is
 * triangular up to a permutation of rows and columns (ch_kkt_pivots,
 * e.g. the n-trailer) X comes from substitution, its pivots inverted up
 * front; otherwise from la_solve (LU). A is m x m, solved by
 * ch_emit_small_solve. ch_kkt_reduced builds the same reduction as
 * expressions instead, for the CSE to simplify. */
#ifndef CH_EMIT_RED_H
#define CH_EMIT_RED_H

#include "core/buf.h"
#include "codegen/cse.h"
#include "codegen/tuning.h"
#include "core/expr.h"
#include "mech/kkt.h"

typedef struct {
    ch_kkt sys;                /* the system's shape, split and nonzero pattern */
    /* The C text of each value (an atomic expression: a temporary of
     * body, a symbol, a number), in ch_kkt_values' order. */
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
