/* initial.h — the model's `initial` state made consistent with its
 * constraints (SPEC §1), at t = 0 and the parameters' default values.
 *
 * Positions: a holonomic constraint g(t, q) = 0 (written without
 * velocities) that the given coordinates violate is restored by Newton's
 * method with minimum-norm steps dq_S = -J_S^T (J_S J_S^T)^-1 g on a set
 * S of coordinates, J_S = dg/dq_S (all holonomic constraints together,
 * so that the satisfied ones stay satisfied): S is the coordinates the
 * holonomic constraints involve that `initial` does not give, when their
 * block of J has full row rank at the given state; else every coordinate
 * the constraints involve. A constraint counts as violated when its
 * distance |g| / |dg/dq| exceeds CH_INITIAL_QTOL (1 + the largest |q_j|
 * it involves); below that the coordinates are left as written, so a
 * state given to the last digit is not rewritten by rounding. Every
 * coordinate moved gets a warning; when Newton fails (singular gradient,
 * no convergence) the model is refused (CH_ERR_MODEL at `initial`), or,
 * when it has no `initial` statement, warned about and left as it is.
 *
 * The corrected coordinates are the initial state of every later
 * decision (ch_manifold_init's choice of dependent velocities, its v0,
 * the pivots and branches of the symbolic solves): the positions come
 * first, the velocities after the manifold.
 *
 * Velocities: the dependent velocities are those ch_manifold_init solved
 * at the corrected coordinates (mf->v0: damped Newton from the values of
 * `initial`, 0 where not given, then from shifted starts), the
 * independent ones as given. A dependent velocity given in `initial`
 * that differs from its recomputed value by more than CH_INITIAL_VTOL
 * max(1, |given|) gets a warning. Where no root was found (mf->v0 NULL)
 * the velocities are left as given. */
#ifndef CH_MECH_INITIAL_H
#define CH_MECH_INITIAL_H

#include "mech/manifold.h"

#define CH_INITIAL_QTOL 1e-12
#define CH_INITIAL_VTOL 1e-9

typedef struct ch_initial {
    size_t n;
    double *q, *qt;       /* n each: the consistent state (arena) */
    size_t nhol;          /* holonomic constraints */
    int *hol;             /* nhol constraint indices (0-based) */
    size_t nwarn, maxwarn;
    const char **warn;    /* "FILE:LINE:COL: warning: MSG" at `initial` (arena) */
} ch_initial;

/* Fills out with the corrected coordinates (qt: the given velocities).
 * Returns 0 (warnings in out), or nonzero with err filled: CH_ERR_MODEL
 * at m->initial_pos when the holonomic constraints cannot be satisfied
 * by moving coordinates, CH_ERR_MEMORY. */
int ch_initial_positions(ch_ctx *ctx, const ch_model *m, const ch_lagrange *L,
                         ch_initial *out, ch_error *err);

/* Then, with the manifold initialised at out->q, the velocities. */
int ch_initial_velocities(ch_ctx *ctx, const ch_model *m, const ch_manifold *mf,
                          ch_initial *out, ch_error *err);

#endif
