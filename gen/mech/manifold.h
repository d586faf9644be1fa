/* manifold.h — the dependent velocities and random points on the
 * constraint manifold (THEORY §4 split, §7 sampling).
 *
 * A point is t, q, parameters and the independent velocities drawn at
 * random; the dependent velocities solve phi(t, q, q_t) = 0 by Newton's
 * method in ball arithmetic (so nonlinear constraints need no symbolic
 * alpha), or by one linear ball solve when phi is affine in them;
 * accelerations q_tt and multipliers lambda solve the KKT system
 * [M -G^T; G 0][q_tt; lambda] = [Q - h; -c] of THEORY §2 in ball
 * arithmetic. Every derived expression can then be evaluated "on
 * motions" by the zero test with ch_manifold_sample as its sampler. */
#ifndef CH_MANIFOLD_H
#define CH_MANIFOLD_H

#include "core/eval.h"
#include "mech/lagrange.h"

typedef struct ch_manifold {
    ch_ctx *ctx;
    const ch_model *model;
    const ch_lagrange *lag;
    size_t n, k, m;
    int *dep;     /* k coordinate indices of the dependent velocities */
    int *indep;   /* m = n - k coordinate indices, increasing */
    int *is_dep;  /* n flags */
    int auto_chosen; /* 1 when chosen by the tool (no `dependent` statement) */
    const ch_expr **lambda; /* k multiplier symbols lambda_1..lambda_k */
    /* 1 when phi is affine in the dependent velocities (built from them by
     * sums and products of exponent 1 only, and its block of G free of
     * them): a sample then solves one linear system instead of Newton plus
     * Krawczyk. */
    int affine;
    /* The model's initial state: the n velocities of `initial`, the
     * dependent ones solving the constraints (damped Newton from the given
     * values, as the emitted code does); NULL when no solution was found
     * near them. The choice of the dependent velocities is regular there
     * (ch_manifold_init), and symbolic solves pick pivots that do not
     * vanish there (ch_manifold_initial_point). */
    double *v0;
    /* The sign of the determinant of the dependent block of G (rows in
     * constraint order, columns in dep order) at the initial state, +1 or
     * -1; 0 when unknown (no v0, or the block singular there). Along a
     * motion on the initial state's branch of the roots the block stays
     * regular, so the sign stays: a root with the other sign is on
     * another branch (y' < 0 of x'^2 + y'^2 = v0^2 started at y' > 0). */
    int dep_sign;
    const double *q0; /* n: the initial coordinates of those decisions */
} ch_manifold;

/* Takes the `dependent` statement (checking that its block of G is not
 * identically singular, and not singular at the initial state: an error
 * positioned at the statement otherwise, which suggests a regular choice)
 * or chooses the dependent velocities: constraint by constraint, a
 * velocity whose coefficient is a nonzero number if there is one, else
 * the last-declared velocity with a coefficient that is nonzero at
 * generic points after elimination; where that block is singular at the
 * initial state, the columns that a column-pivoted elimination of G
 * there picks. "Singular at the initial state": a pivot of the
 * elimination of the block with full pivoting, G's rows scaled to a
 * largest entry of 1 (so a constraint's units do not matter), below 1e-6.
 * When no choice is regular there (G itself has rank < k at the initial
 * state, e.g. at rest on the cone x' z' = y'^2) nothing is checked: a
 * run from there fails at t = 0 in every chart. Creates the multiplier symbols. k = 0 is fine
 * (no dependent velocities). q0 (n values, kept by pointer) are the
 * initial coordinates, the model's restored onto its holonomic
 * constraints (ch_initial_positions); NULL: the model's as written. */
int ch_manifold_init(ch_ctx *ctx, const ch_model *m, const ch_lagrange *L,
                     const double *q0, ch_manifold *out, ch_error *err);

/* The initial state as a point for numerical decisions: ch_ctx_nsyms
 * values, t = 0, the coordinates mf->q0, the velocities mf->v0, the
 * parameters' defaults, every other symbol (multipliers, accelerations,
 * momenta) at a fixed generic point. malloc'd (the caller frees it); NULL
 * when mf->v0 is NULL or out of memory. */
double *ch_manifold_initial_point(const ch_manifold *mf);

/* ch_sampler for ch_zero_test (data is a ch_manifold *): a random point on
 * the constraint manifold with q_tt and lambda of the true motion through
 * it. Parameters are drawn positive (masses, lengths), other symbols with
 * random signs. Returns nonzero when Newton does not converge or the KKT
 * system is singular at that point (the zero test then tries another). */
int ch_manifold_sample(void *manifold, flint_rand_t rnd, arb_struct *symval,
                       slong prec);

/* The data of ch_manifold_sample_state: the manifold and the one
 * expression that will be evaluated at its points (NULL: any). */
typedef struct {
    const ch_manifold *mf;
    const ch_expr *e;
} ch_manifold_probe;

/* The same point without q_tt and lambda (they keep whatever values the
 * caller set), for expressions free of accelerations and multipliers:
 * that spares the KKT solve, O((n+k)^3) in balls per point. data is a
 * ch_manifold_probe *. When the dependent block of G is triangular up to
 * a permutation (a chain of constraints, each adding one velocity), only
 * the dependent velocities probe->e involves and those before them in
 * the chain are enclosed in balls, the others solved in double
 * precision: the point is on the manifold to rounding, and exactly where
 * e looks. The n-trailer's chain has k = N + 1 constraints, whose
 * enclosure costs O(k^2) ball operations at O(k) bits (the radii of a
 * forward substitution grow by a bit or two per unknown), and its energy
 * balance involves the first dependent velocity only. */
int ch_manifold_sample_state(void *probe, flint_rand_t rnd, arb_struct *symval,
                             slong prec);

#endif
