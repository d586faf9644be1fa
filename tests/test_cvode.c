/* test_cvode.c — the CVODE stepper (gen/jit/cvode.h) against exact solutions. */
#include "check.h"
#include "jit/cvode.h"

#include <math.h>

static const double two_pi = 6.283185307179586;

/* y' = -L (y - cos t) - sin t: y = cos t from y(0) = 1, stiff for large L
 * (an explicit method's step is bounded by about 3/L whatever the
 * tolerance). p[0] = L. */
static int stiff(void *ctx, double t, const double *x, double *d)
{
    const double *p = ctx;
    d[0] = -p[0] * (x[0] - cos(t)) - sin(t);
    return 0;
}

/* x'' = -x as a first-order system. */
static int oscillator(void *ctx, double t, const double *x, double *d)
{
    (void)t, (void)ctx;
    d[0] = x[1];
    d[1] = -x[0];
    return 0;
}

static int decay(double t, const double *x, double *d)
{
    (void)t;
    d[0] = -x[0];
    d[1] = -2 * x[1];
    return 0;
}

/* Singular from t = 0.5 on. */
static int breaks(void *ctx, double t, const double *x, double *d)
{
    (void)ctx;
    d[0] = -x[0];
    return t > 0.5;
}

/* The oscillator, or decay once *(int *)ctx is 1 (a restart's new system). */
static int switched(void *ctx, double t, const double *x, double *d)
{
    return *(const int *)ctx ? decay(t, x, d) : oscillator(NULL, t, x, d);
}

static int run_to(ch_cvode *c, double t1, double *t, double *x, ch_error *e)
{
    while (*t < t1) {
        int rc = ch_cvode_step(c, t, x, e);
        if (rc) return rc;
    }
    return 0;
}

static void test_stiff(void)
{
    double L = 1e5, x[1] = {1}, t = 0;
    ch_cvode_opts o = {1e-8, 1e-10, 0, 0, 10};
    ch_error e;
    ch_error_clear(&e);
    ch_cvode *c = ch_cvode_new(1, stiff, &L, 0, x, &o, &e);
    CHECK(c != NULL);
    if (!c) return;
    CHECK(run_to(c, 10, &t, x, &e) == 0);
    CHECK(t == 10); /* the stop time is reached exactly, never passed */
    CHECK_NEAR(x[0], cos(10.0), 1e-6);
    long steps, rejected, rhs;
    ch_cvode_stats(c, &steps, &rejected, &rhs);
    /* About 3e5 steps for an explicit method; BDF needs a few hundred. */
    CHECK_MSG(rhs < 5000 && steps > 10, "steps %ld rhs %ld", steps, rhs);
    CHECK(rejected >= 0 && rejected < steps);
    ch_cvode_free(c);
}

static void test_dense_and_accuracy(void)
{
    double x[2] = {1, 0}, t = 0, mid[2];
    ch_cvode_opts o = {1e-10, 1e-12, 0, 0.5, two_pi};
    ch_error e;
    ch_cvode *c = ch_cvode_new(2, oscillator, NULL, 0, x, &o, &e);
    CHECK(c != NULL);
    if (!c) return;
    double worst = 0;
    int checked = 0;
    while (t < two_pi) {
        double t0 = t;
        if (ch_cvode_step(c, &t, x, &e)) break;
        CHECK(t - t0 <= 0.5 * (1 + 1e-12)); /* hmax */
        double tm = 0.5 * (t0 + t);
        if (t0 > 0 && ch_cvode_dense(c, tm, mid, &e) == 0) {
            worst = fmax(worst, fabs(mid[0] - cos(tm)) + fabs(mid[1] + sin(tm)));
            checked++;
        }
        worst = fmax(worst, fabs(x[0] - cos(t)) + fabs(x[1] + sin(t)));
    }
    CHECK(t == two_pi);
    CHECK(checked > 5);
    CHECK_MSG(worst < 1e-7, "largest error %g", worst);
    /* Outside the last step there is no dense output. */
    CHECK(ch_cvode_dense(c, -1, mid, &e) == CH_ERR_NUMERIC);
    ch_cvode_free(c);
}

static void test_restart(void)
{
    double x[2] = {1, 0}, t = 0;
    ch_cvode_opts o = {1e-10, 1e-12, 0, 0, 3};
    ch_error e;
    int which = 0;
    ch_cvode *c = ch_cvode_new(2, switched, &which, 0, x, &o, &e);
    CHECK(c != NULL);
    if (!c) return;
    while (t < 1 && ch_cvode_step(c, &t, x, &e) == 0) {}
    long s1, r1, n1;
    ch_cvode_stats(c, &s1, &r1, &n1);
    /* A new system from (t, x): x_i(t1) = x_i(t) exp(-i (t1 - t)). */
    double ts = t, xs[2] = {x[0], x[1]};
    which = 1;
    CHECK(ch_cvode_restart(c, t, x, &e) == 0);
    CHECK(run_to(c, 3, &t, x, &e) == 0);
    CHECK_NEAR(x[0], xs[0] * exp(-(3 - ts)), 1e-8);
    CHECK_NEAR(x[1], xs[1] * exp(-2 * (3 - ts)), 1e-8);
    long s2, r2, n2;
    ch_cvode_stats(c, &s2, &r2, &n2);
    CHECK(s2 > s1 && n2 > n1 && r2 >= r1); /* counts survive the restart */
    ch_cvode_free(c);
}

static void test_failures(void)
{
    double x[1] = {1}, t = 0;
    ch_cvode_opts o = {1e-8, 1e-10, 0, 0, 1};
    ch_error e;
    ch_error_clear(&e);
    ch_cvode *c = ch_cvode_new(1, breaks, NULL, 0, x, &o, &e);
    CHECK(c != NULL);
    if (!c) return;
    int rc = run_to(c, 1, &t, x, &e);
    CHECK(rc == CH_ERR_NUMERIC);
    CHECK(t <= 0.5 + 1e-9); /* the last good state is before the failure */
    CHECK_MSG(strstr(e.msg, "cvode at t = ") != NULL, "%s", e.msg);
    ch_cvode_free(c);

    ch_cvode_opts bad[] = {{0, 1e-9, 0, 0, 1}, {1e-6, -1, 0, 0, 1},
                           {1e-6, 1e-9, -1, 0, 1}, {1e-6, 1e-9, 0, 0, -1},
                           {NAN, 1e-9, 0, 0, 1}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ch_error_clear(&e);
        CHECK(ch_cvode_new(1, breaks, NULL, 0, x, &bad[i], &e) == NULL);
        CHECK(e.code == CH_ERR_USAGE);
    }
}

int main(void)
{
    RUN(test_stiff);
    RUN(test_dense_and_accuracy);
    RUN(test_restart);
    RUN(test_failures);
    return check_summary("cvode");
}
