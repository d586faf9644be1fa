/* hamilton.h — the Hamiltonian side: y*, H* and the Poincaré–Hamilton
 * equations (THEORY §5, seed 002 §4, with the corrected sign).
 *
 * H* is derived symbolically when L* is quadratic in the independent
 * velocities (its Hessian K does not depend on them) and m is small
 * enough for a symbolic inverse; otherwise, or when K is identically
 * singular (degenerate Legendre map, e.g. a constant-speed constraint),
 * `exists` is 0 and `reason` says why. K is derived in every case: the
 * emitter inverts the Legendre map numerically (Newton on y* with
 * Jacobian K) when H* is not symbolic, unless `degenerate` says there is
 * nothing to invert. */
#ifndef CH_HAMILTON_H
#define CH_HAMILTON_H

#include "mech/reduce.h"

typedef struct ch_hamilton {
    int exists;
    int degenerate;            /* K identically singular: no H* at all */
    const char *reason;        /* why H* is not available (arena), or NULL */
    size_t m, k;
    const ch_expr **y;         /* m momentum symbols y_q (SPEC §3) */
    const ch_expr **K;         /* m*m: d2 L* /dq_t_r dq_t_s */
    int quadratic;             /* K free of the independent velocities */
    const ch_expr **eta;       /* m: q_t_r(t, q, y) */
    const ch_expr *H;          /* H*(t, q, y) (002 eq. 4.13) */
    const ch_expr **qt;        /* m: dH* /dy_r */
    const ch_expr **qt_dep;    /* k: alpha(t, q, eta) (NULL when implicit) */
    const ch_expr **yt;        /* m: y*_t right-hand sides (002 eq. 4.17) */
} ch_hamilton;

/* Largest m for which H* is derived symbolically. */
#define CH_HAMILTON_MAX_M 4

int ch_hamilton_derive(ch_ctx *ctx, const ch_reduced *r, ch_hamilton *out,
                       ch_error *err);

/* The momentum equations where H* has no closed form: along motions
 * y*_t = K q_tt_r + g, with g = d/dt y* at q_tt_r = 0 (ch_reduce_dt).
 * That form integrates y as the image of the reduced flow, q_tt_r being
 * the reduced form's accelerations, and takes the velocities from the
 * numeric inverse of y* (Newton with Jacobian K). The m*m entries of K,
 * then the m of g, into out. 0, or -1 on a context error (a node limit,
 * out of memory). */
int ch_hamilton_rate(ch_ctx *ctx, const ch_reduced *r, const ch_hamilton *h,
                     const ch_expr **out);

#endif
