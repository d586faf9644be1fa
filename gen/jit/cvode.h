/* cvode.h — SUNDIALS CVODE as a stepper for stiff models (`--method cvode`).
 *
 * BDF of variable order (1..5) with Newton iterations on a dense Jacobian
 * that CVODE forms by finite differences of the right-hand side (the
 * analytic Jacobian does not exist yet). The stepper advances one internal
 * step at a time towards a stop time it never passes, so that the caller's
 * time loop writes its rows from the dense output of the last step
 * (CVODE's interpolating polynomial) and reads the state after each step,
 * as it does for the explicit pairs of runtime/. A right-hand side that
 * fails (nonzero) is a recoverable error for CVODE: it retries with a
 * smaller step, and gives up only after repeated failures.
 *
 * The stepper belongs to the generator's front-end layer: the emitted
 * driver programs stay dependency-free and have no cvode method. One
 * ch_cvode owns its SUNDIALS context; separate objects can be used from
 * separate threads. CVODE's own messages are captured, never printed. */
#ifndef CH_CVODE_H
#define CH_CVODE_H

#include "core/error.h"
#include "runtime/simulate.h"

typedef struct ch_cvode ch_cvode;

/* The right-hand side as the runtime's steppers take it (integrate.h):
 * f(ctx, t, x, dxdt), 0 or nonzero where singular. */
typedef chrt_rhs ch_cvode_rhs;

typedef struct {
    double rtol, atol; /* > 0 */
    double h0;         /* first step, 0: CVODE's estimate */
    double hmax;       /* largest step, 0: none */
    double tstop;      /* never integrated past */
} ch_cvode_opts;

/* A stepper at (t0, x0) for the nx-dimensional system f with context ctx
 * (passed to f; it must outlive the stepper). NULL with err filled
 * (CH_ERR_USAGE for bad options, CH_ERR_MEMORY, CH_ERR_NUMERIC when CVODE
 * refuses the initial state). */
ch_cvode *ch_cvode_new(int nx, ch_cvode_rhs f, void *ctx, double t0,
                       const double *x0, const ch_cvode_opts *o, ch_error *err);
void ch_cvode_free(ch_cvode *c);

/* One internal step: *t and x (nx values) receive the new time and state.
 * Returns 0, or CH_ERR_NUMERIC with the reason and the time in err (the
 * step failed repeatedly, the right-hand side kept failing, the step size
 * fell below round-off). */
int ch_cvode_step(ch_cvode *c, double *t, double *x, ch_error *err);

/* The state at t inside the last step (dense output) into x. */
int ch_cvode_dense(ch_cvode *c, double t, double *x, ch_error *err);

/* Restarts at (t, x) (a projection, a new chart: f's context changed):
 * order 1, history discarded. */
int ch_cvode_restart(ch_cvode *c, double t, const double *x, ch_error *err);

/* Counts since creation: accepted steps, rejected step attempts (error
 * test and Newton convergence failures), right-hand side calls (those of
 * the finite-difference Jacobian included). */
void ch_cvode_stats(const ch_cvode *c, long *steps, long *rejected,
                    long *rhs_calls);

/* The stepper as a chrt_ext_stepper of the runtime's loop (--method
 * cvode): init fills e->ops, whose functions create the CVODE stepper at
 * the loop's start (rtol, atol, dt as first step, dt_max, t1 of its
 * options) and restart it after projections and re-charts; free releases
 * it. One ch_cvode_ext serves one run at a time. */
typedef struct {
    chrt_ext_stepper ops;
    ch_cvode *c;
    /* the loop's system (the current chart's), parameters, Newton start */
    const chrt_system *s;
    const double *p, *vs;
    double t;
    double hmax, hcur; /* the options' largest step, the one set (0: none) */
} ch_cvode_ext;

void ch_cvode_ext_init(ch_cvode_ext *e);
void ch_cvode_ext_free(ch_cvode_ext *e);

#endif
