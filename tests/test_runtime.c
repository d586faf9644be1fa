/* test_runtime.c — the fixed-step integrators: exactness on polynomials,
 * convergence orders on the harmonic oscillator, failure reporting. */
#include <math.h>
#include <stdlib.h>

#include "check.h"
#include "runtime/integrate.h"

/* ctx: the parameters */
static int oscillator(void *ctx, double t, const double *x, double *dx)
{
    const double *p = ctx;
    (void)t;
    dx[0] = x[1];
    dx[1] = -p[0] * x[0];
    return 0;
}

static int blows_up(void *ctx, double t, const double *x, double *dx)
{
    (void)t;
    (void)ctx;
    dx[0] = x[0] * x[0] * 1e300;
    return 0;
}

static int singular(void *ctx, double t, const double *x, double *dx)
{
    (void)x;
    (void)ctx;
    dx[0] = 1;
    return t > 0.5;
}

static double error_at_1(chrt_method m, double h)
{
    double x[2] = {1, 0}, p[1] = {4}, work[12];
    chrt_stepper s = {2, work};
    int steps = (int)lround(1 / h);
    for (int i = 0; i < steps; i++) chrt_step(&s, m, oscillator, i * h, h, x, p);
    return fabs(x[0] - cos(2.0));
}

static void test_orders(void)
{
    static const struct { chrt_method m; double ratio; } want[] = {
        {CHRT_EULER, 2}, {CHRT_MIDPOINT, 4}, {CHRT_RK4, 16}};
    for (int i = 0; i < 3; i++) {
        double r = error_at_1(want[i].m, 1e-2) / error_at_1(want[i].m, 5e-3);
        CHECK_MSG(fabs(r / want[i].ratio - 1) < 0.1, "%s ratio %g",
                  chrt_method_name(want[i].m), r);
    }
    CHECK(error_at_1(CHRT_RK4, 1e-3) < 1e-11);
}

static void test_failures(void)
{
    double x[1] = {1e10}, work[6];
    chrt_stepper s = {1, work};
    CHECK(chrt_step(&s, CHRT_RK4, blows_up, 0, 0.1, x, NULL) == 2);
    CHECK(x[0] == 1e10); /* state kept on failure */
    x[0] = 0;
    CHECK(chrt_step(&s, CHRT_EULER, singular, 0, 0.1, x, NULL) == 0);
    CHECK(chrt_step(&s, CHRT_EULER, singular, 1, 0.1, x, NULL) == 1);
    CHECK(chrt_step(&s, CHRT_RK4, singular, 0.45, 0.1, x, NULL) == 1);
}

static void test_names(void)
{
    CHECK(chrt_method_parse("rk4") == CHRT_RK4);
    CHECK(chrt_method_parse("midpoint") == CHRT_MIDPOINT);
    CHECK(chrt_method_parse("euler") == CHRT_EULER);
    CHECK(chrt_method_parse("rk5") == -1);
    CHECK_STR(chrt_method_name(CHRT_RK4), "rk4");
}

int main(void)
{
    RUN(test_orders);
    RUN(test_failures);
    RUN(test_names);
    return check_summary("test_runtime");
}
