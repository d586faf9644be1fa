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
 * Velocities: the dependent velocities (the derivation's split) solve
 * the velocity-level constraints phi(0, q, q') = 0 at the corrected
 * coordinates by damped Newton on the dependent block of G, from the
 * values of `initial` (0 where not given), the independent velocities as
 * given. A dependent velocity given in `initial` that differs from its
 * recomputed value by more than CH_INITIAL_VTOL max(1, |given|) gets a
 * warning. Where the block is singular at the initial state (or Newton
 * fails) the velocities are left as given: the emitted code reports that
 * state as singular when it is used. */
#ifndef CH_MECH_INITIAL_H
#define CH_MECH_INITIAL_H

#include "manifold.h"

#define CH_INITIAL_QTOL 1e-12
#define CH_INITIAL_VTOL 1e-9

typedef struct ch_initial {
    size_t n;
    double *q, *qt;       /* n each: the consistent state (arena) */
    int velocities_solved;/* 1: qt's dependent entries solve the constraints */
    size_t nhol;          /* holonomic constraints */
    int *hol;             /* nhol constraint indices (0-based) */
    size_t nwarn;
    const char **warn;    /* "FILE:LINE:COL: warning: MSG" at `initial` (arena) */
} ch_initial;

/* Fills out as above. Returns 0 (warnings in out), or nonzero with err
 * filled: CH_ERR_MODEL at m->initial_pos when the holonomic constraints
 * cannot be satisfied by moving coordinates, CH_ERR_MEMORY. */
int ch_initial_derive(ch_ctx *ctx, const ch_model *m, const ch_lagrange *L,
                      const ch_manifold *mf, ch_initial *out, ch_error *err);

#endif
