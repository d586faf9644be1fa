/* integrate.h — dependency-free fixed-step integrators (C99, libm only).
 *
 * The right-hand side has the signature of emitted code (SPEC §4): it
 * returns 0 on success and nonzero where the system is singular. A step
 * fails when the right-hand side fails or the new state is not finite;
 * the state is then left as it was before the step. */
#ifndef CH_RT_INTEGRATE_H
#define CH_RT_INTEGRATE_H

typedef int (*chrt_rhs)(double t, const double *x, const double *p,
                        double *dxdt);

typedef enum { CHRT_EULER, CHRT_MIDPOINT, CHRT_RK4 } chrt_method;

/* Work space for a state of size nx: 6*nx doubles. */
typedef struct {
    int nx;
    double *work;
} chrt_stepper;

/* Name ("euler", "midpoint", "rk4") to method; -1 when unknown. */
int chrt_method_parse(const char *name);
const char *chrt_method_name(chrt_method m);

/* One step of size h from (t, x) in place. Returns 0, 1 when the
 * right-hand side failed, 2 when the new state is not finite, 3 when the
 * right-hand side returned 2 (its chart is numerically singular). */
int chrt_step(const chrt_stepper *s, chrt_method m, chrt_rhs f, double t,
              double h, double *x, const double *p);

#endif
