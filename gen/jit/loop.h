/* loop.h — the Poincaré–Cartan integral invariant measured along a
 * transported loop of states (THEORY §5, `chetaev check MODEL --loop N`).
 *
 * The Hamiltonian form of the mechanics is emitted, JIT-compiled, and N
 * initial states are placed on a closed curve around the model's initial
 * state x0 = (q0, y0*) (PREFIX_initial, default parameters, t = 0):
 *
 *   theta_j = 2 pi j / N,  q_r = q0_r + radius cos(theta_j),
 *                          y*_r = y0*_r + radius sin(theta_j)
 *
 * for every independent coordinate r. Dependent coordinates stay at q0,
 * except that constraints written without velocities (holonomic) are
 * restored by Newton on the dependent coordinates (minimum-norm step) to
 * their value at x0: otherwise the loop would span neighbouring level
 * sets, i.e. systems with other constraint constants, and I1 would change
 * for that reason alone. Every point is transported by the runtime's
 * integration loop with a fixed-step method to t1 (the same steps for
 * every point keep the transported curve smooth in theta, as the spectral
 * quadrature below needs; step sizes chosen point by point by an error
 * control would not), and
 *
 *   I1 = sum_r loop integral of y*_r dq_r
 *
 * is evaluated at the start and at the end as (2 pi / N) sum_j y*_r(theta_j)
 * dq_r/dtheta(theta_j), the derivative taken by periodic spectral
 * (Fourier) differentiation of the N samples: on a smooth closed curve
 * sampled at equally spaced parameters this is the trapezoid rule with
 * spectral accuracy (exact at the start, where the curve is a
 * trigonometric polynomial of degree 1, for N >= 3). The samples are
 * centred on their means first, which changes no loop integral and avoids
 * cancellation against |q0|, |y0*|. The start value is -m pi radius^2
 * (m independent coordinates), never 0.
 *
 * For k = 0 (and for holonomic constraints) I1 is Poincaré's invariant
 * and is conserved by the flow, so the drift measures the integrator; for
 * nonholonomic models the value is reported, not judged. No global
 * state; the JIT code is freed before return. */
#ifndef CH_LOOP_H
#define CH_LOOP_H

#include <stddef.h>

#include "mech/mechanics.h"
#include "jit/jit.h"
#include "runtime/simulate.h"

typedef struct {
    chrt_method method;   /* CHRT_RK4; a fixed-step method */
    double dt, t1;        /* 1e-3, 1 (the last step ends exactly at t1) */
    double radius;        /* 1e-3, in both coordinate and momentum units */
    ch_compiler compiler; /* CH_COMPILER_TCC */
    int keep_states;      /* 0; 1: return the loop's states (for plots) */
} ch_loop_options;

typedef struct {
    size_t points;         /* N */
    double t1;             /* end time used */
    double I_start, I_end; /* I1 at t = 0 and at t1 */
    double relative_drift; /* |I_end - I_start| / |I_start| */
    /* With keep_states: the N states (nx each, hamilton form: q then y*)
     * at the start and at t1, malloc'ed, freed by the caller; else NULL. */
    double *start, *end;
    size_t nx, nq;
} ch_loop_result;

/* Limits on N: at least 8 points (the curve must be resolved), at most
 * 100000 (the spectral derivative costs O(N^2)). */
#define CH_LOOP_MIN_POINTS 8
#define CH_LOOP_MAX_POINTS 100000

void ch_loop_options_default(ch_loop_options *o);

/* Runs the experiment above on the mechanics d (options NULL = defaults).
 * Returns 0 with res filled, or:
 *   CH_ERR_MODEL   the Hamiltonian form does not exist (reason in err), or
 *                  the model has no independent coordinate;
 *   CH_ERR_USAGE   N out of range, dt/t1/radius not positive and finite;
 *   CH_ERR_NUMERIC a point's initial state or a step fails (singular
 *                  right-hand side, non-finite state, holonomic
 *                  constraints that Newton cannot restore): err names the
 *                  point (and t);
 *   otherwise the code of the emitter or the compiler. */
int ch_loop_run(ch_ctx *ctx, const ch_mechanics *d, size_t npoints,
                const ch_loop_options *options, ch_loop_result *res,
                ch_error *err);

#endif
