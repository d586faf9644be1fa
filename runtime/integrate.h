/* integrate.h — dependency-free Runge–Kutta integrators (C99, libm only).
 *
 * Fixed-step methods (euler, midpoint, rk4) take one step of a given size
 * (chrt_step). Embedded pairs with error estimation and dense output
 * (dop853: Dormand–Prince 8(5,3); rk45: Dormand–Prince 5(4), also named
 * dopri5) take step attempts (chrt_rk_attempt) that the integration loop
 * (simulate.h) accepts or rejects with the controller of Hairer's DOP853
 * and DOPRI5 codes (chrt_rk_factor).
 *
 * The right-hand side f(ctx, t, x, dxdt) returns, as emitted code does
 * (SPEC §4), 0 on success and nonzero where the system is singular (2
 * where only the chart of the state is); ctx is the caller's (the
 * integration loop passes itself: parameters, Newton's start). A step
 * fails when the right-hand side fails or the new state is not finite;
 * the state is then left as it was before the step. */
#ifndef CH_RT_INTEGRATE_H
#define CH_RT_INTEGRATE_H

#include <stddef.h>

typedef int (*chrt_rhs)(void *ctx, double t, const double *x, double *dxdt);

typedef enum {
    CHRT_EULER,
    CHRT_MIDPOINT,
    CHRT_RK4,
    CHRT_DOP853, /* adaptive, the default */
    CHRT_RK45,
    /* SUNDIALS CVODE (BDF) for stiff models: a stepper of another library
     * that the caller supplies (chrt_options.ext); `chetaev run` and the
     * C API do, driver programs (dependency-free) do not. */
    CHRT_CVODE
} chrt_method;

/* Name to method ("euler", "midpoint", "rk4", "dop853", "rk45" or its
 * alias "dopri5", "cvode"); -1 when unknown. */
int chrt_method_parse(const char *name);
const char *chrt_method_name(chrt_method m);
/* 1 for the methods with error control and dense output (the embedded
 * pairs and cvode). */
int chrt_method_adaptive(chrt_method m);
/* Right-hand side calls of one fixed step, or of one attempt of a pair
 * (its FSAL evaluation at the new state included). */
int chrt_method_stages(chrt_method m);

/* ---- fixed steps ---------------------------------------------------------- */

/* Work space for a state of size nx: 6*nx doubles. */
typedef struct {
    int nx;
    double *work;
} chrt_stepper;

/* One step of size h from (t, x) in place. Returns 0, 1 when the
 * right-hand side failed, 2 when the new state is not finite, 3 when the
 * right-hand side returned 2 (its chart is numerically singular). */
int chrt_step(const chrt_stepper *s, chrt_method m, chrt_rhs f, double t,
              double h, double *x, void *ctx);

/* ---- embedded pairs ----------------------------------------------------------- */

typedef struct {
    chrt_method m;     /* CHRT_DOP853 or CHRT_RK45 */
    int nx;
    double *work;      /* chrt_rk_work_size(nx) doubles */
    long nfev;         /* right-hand side calls so far */
    /* The last successful attempt, for dense output: */
    double t0, h;
    int dense;         /* the interpolant of the last attempt is ready */
} chrt_rk;

size_t chrt_rk_work_size(int nx);

/* The starting step of Hairer's codes (Solving ODE I, II.4) as SciPy's
 * select_initial_step computes it: one right-hand side call at an Euler
 * step; f0 = f(t, x). Returns the step (> 0), or -1 when that call fails
 * (the caller then starts from a small step). */
double chrt_rk_initial_step(chrt_rk *r, chrt_rhs f, void *ctx, double t,
                            const double *x, const double *f0, double rtol,
                            double atol);

/* One attempt of size h from (t, x) with f0 = f(t, x): the new state into
 * xn, f(t + h, xn) into fn (FSAL) and the RMS error norm relative to
 * atol + rtol*max(|x|, |xn|) into *err (accept when < 1). Returns 0;
 * 1 when a right-hand side call failed, 2 when it reported a singular
 * chart (returned 2), 3 when xn or the error is not finite. */
int chrt_rk_attempt(chrt_rk *r, chrt_rhs f, void *ctx, double t, const double *x,
                    const double *f0, double h, double rtol, double atol,
                    double *xn, double *fn, double *err);

/* The step-size factor after an attempt with error norm err (SciPy's and
 * Hairer's controller: safety 0.9, err^(-1/(q+1)) with q the order of the
 * error estimator, between 0.2 and 10; at most 1 right after a rejection). */
double chrt_rk_factor(const chrt_rk *r, double err, int after_reject);

/* Prepares the interpolant on [t, t + h] of the last successful attempt
 * (x, f0 at its start, xn, fn at its end): dop853 needs three more
 * right-hand side calls (0, or 1, 2 as chrt_rk_attempt), rk45 none. */
int chrt_rk_dense_prepare(chrt_rk *r, chrt_rhs f, void *ctx, const double *x,
                          const double *f0, const double *xn,
                          const double *fn);

/* The interpolant at t in [t0, t0 + h] into y (7th order for dop853, 4th
 * for rk45); x is the state at t0. */
void chrt_rk_dense_eval(const chrt_rk *r, const double *x, double t, double *y);

#endif
