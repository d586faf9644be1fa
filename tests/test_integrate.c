/* test_integrate.c — the embedded Dormand–Prince pairs and the one
 * integration loop (runtime/simulate.h), against exact solutions:
 * orders of convergence of the steps and of the dense output, achieved
 * error against the tolerance, t1 as the last row, step statistics
 * against an independent count of right-hand side calls, failure paths,
 * and the chart hook with a fake system. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "runtime/simulate.h"

/* Right-hand side calls, counted here independently of the loop's
 * statistics (a test binary's counter). */
static long calls;

/* The three problems with exact solutions: x'' = -x (x = cos t), y' = -y
 * (y = exp(-t)), the nonautonomous y' = y cos t (y = exp(sin t)). */
enum { OSC, DECAY, NONAUT, NPROB };
static const int prob_nx[NPROB] = {2, 1, 1};

static int osc(double t, const double *x, const double *p, const double *vs,
                double *dx)
{
    (void)vs;
    (void)t, (void)p;
    calls++;
    dx[0] = x[1];
    dx[1] = -x[0];
    return 0;
}

static int decay(double t, const double *x, const double *p, const double *vs,
                  double *dx)
{
    (void)vs;
    (void)t, (void)p;
    calls++;
    dx[0] = -x[0];
    return 0;
}

static int nonaut(double t, const double *x, const double *p, const double *vs,
                   double *dx)
{
    (void)vs;
    (void)p;
    calls++;
    dx[0] = x[0] * cos(t);
    return 0;
}

typedef int (*sys_rhs)(double t, const double *x, const double *p, const double *vs,
                       double *dx);
static const sys_rhs prob_sys[NPROB] = {osc, decay, nonaut};
/* the same as the steppers' chrt_rhs */
static int osc_f(void *c, double t, const double *x, double *dx)
{
    (void)c;
    return osc(t, x, NULL, NULL, dx);
}
static int decay_f(void *c, double t, const double *x, double *dx)
{
    (void)c;
    return decay(t, x, NULL, NULL, dx);
}
static int nonaut_f(void *c, double t, const double *x, double *dx)
{
    (void)c;
    return nonaut(t, x, NULL, NULL, dx);
}
static const chrt_rhs prob_rhs[NPROB] = {osc_f, decay_f, nonaut_f};

static void exact(int prob, double t, double *x)
{
    if (prob == OSC) x[0] = cos(t), x[1] = -sin(t);
    else if (prob == DECAY) x[0] = exp(-t);
    else x[0] = exp(sin(t));
}

static double max_err(int prob, double t, const double *x)
{
    double e[2], d = 0;
    exact(prob, t, e);
    for (int i = 0; i < prob_nx[prob]; i++) d = fmax(d, fabs(x[i] - e[i]));
    return d;
}

static chrt_rk new_rk(chrt_method m, int nx)
{
    chrt_rk r;
    r.m = m, r.nx = nx, r.nfev = 0, r.dense = 0;
    r.work = malloc(chrt_rk_work_size(nx) * sizeof *r.work);
    return r;
}

/* Error at T of n attempts of size T/n, all taken (no control); with
 * dense, the largest error of the dense output at the middle of each
 * step instead. */
static double fixed_error(chrt_method m, int prob, double T, int n, int dense)
{
    int nx = prob_nx[prob];
    chrt_rk r = new_rk(m, nx);
    double x[2], xn[2], f[2], fn[2], y[2], err, h = T / n, worst = 0;
    exact(prob, 0, x);
    prob_rhs[prob](NULL, 0, x, f);
    for (int k = 0; k < n; k++) {
        double t = k * h;
        if (chrt_rk_attempt(&r, prob_rhs[prob], NULL, t, x, f, h, 1, 1, xn, fn, &err))
            return NAN;
        if (dense) {
            /* From the exact state at t, so that the interpolant's own
             * error is measured, not the global error. */
            double xe[2], fe[2];
            exact(prob, t, xe);
            prob_rhs[prob](NULL, t, xe, fe);
            chrt_rk_attempt(&r, prob_rhs[prob], NULL, t, xe, fe, h, 1, 1, xn, fn, &err);
            chrt_rk_dense_prepare(&r, prob_rhs[prob], NULL, xe, fe, xn, fn);
            chrt_rk_dense_eval(&r, xe, t + 0.37 * h, y);
            worst = fmax(worst, max_err(prob, t + 0.37 * h, y));
        }
        memcpy(x, xn, sizeof x);
        memcpy(f, fn, sizeof f);
    }
    free(r.work);
    return dense ? worst : max_err(prob, T, x);
}

static void test_orders(void)
{
    static const struct { chrt_method m; int order, dense_order; } pairs[] = {
        {CHRT_DOP853, 8, 7}, {CHRT_RK45, 5, 4}};
    for (size_t i = 0; i < 2; i++)
        for (int prob = 0; prob < NPROB; prob++) {
            int n = pairs[i].m == CHRT_DOP853 ? 4 : 16;
            double e1 = fixed_error(pairs[i].m, prob, 2, n, 0);
            double e2 = fixed_error(pairs[i].m, prob, 2, 2 * n, 0);
            double order = log2(e1 / e2);
            CHECK_MSG(fabs(order - pairs[i].order) < 0.6, "%s problem %d: order %.2f "
                      "(errors %.3g, %.3g), want %d", chrt_method_name(pairs[i].m),
                      prob, order, e1, e2, pairs[i].order);
            /* The local error of the interpolant: O(h^(q+1)) for a dense
             * output of order q. */
            e1 = fixed_error(pairs[i].m, prob, 2, n, 1);
            e2 = fixed_error(pairs[i].m, prob, 2, 2 * n, 1);
            order = log2(e1 / e2) - 1;
            CHECK_MSG(fabs(order - pairs[i].dense_order) < 0.6, "%s problem %d: dense "
                      "order %.2f (errors %.3g, %.3g), want %d",
                      chrt_method_name(pairs[i].m), prob, order, e1, e2,
                      pairs[i].dense_order);
        }
}

/* ---- the loop on a fake system ------------------------------------------- */

static const char *const names1[] = {"y"};
static const char *const names2[] = {"x", "x'"};

/* The exact solutions at t = 0: x = 1 (and x' = 0 for the oscillator). */
static void init1(double *x) { x[0] = 1; }
static void init_osc(double *x) { x[0] = 1, x[1] = 0; }
static double energy0(double t, const double *x, const double *p, const double *vs)
{
    (void)vs;
    (void)t, (void)p;
    return x[0];
}
static int vel1(double t, const double *x, const double *p, const double *vs,
                 double *qt)
{
    (void)vs;
    /* y' of y' = -y or y cos t: the row's velocity column */
    (void)p;
    qt[0] = t < 0 ? 0 : x[0];
    return 0;
}
static int vel2(double t, const double *x, const double *p, const double *vs,
                 double *qt)
{
    (void)vs;
    (void)t, (void)p;
    qt[0] = x[1];
    return 0;
}
static int no_outputs(double t, const double *x, const double *p, const double *vs,
                       double *o)
{
    (void)vs;
    (void)t, (void)x, (void)p, (void)o;
    return 0;
}

static chrt_system fake(int prob)
{
    chrt_system s;
    memset(&s, 0, sizeof s);
    s.name = "fake";
    s.nx = prob_nx[prob];
    s.nq = 1;
    s.state_names = prob == OSC ? names2 : names1;
    s.initial = prob == OSC ? init_osc : init1;
    s.rhs = prob_sys[prob];
    s.energy = energy0;
    s.velocities = prob == OSC ? vel2 : vel1;
    s.outputs = no_outputs;
    return s;
}

/* A sink keeping the rows' t and first state value, and the notes. */
typedef struct {
    int n;
    double t[4096], q[4096];
    int notes;
    char note[256];
    double note_t;
} rows;

static int keep_row(void *ctx, const double *v, int n)
{
    rows *r = ctx;
    (void)n;
    if (r->n < 4096) r->t[r->n] = v[0], r->q[r->n] = v[1];
    r->n++;
    return 0;
}

static void keep_note(void *ctx, double t, const char *text)
{
    rows *r = ctx;
    r->notes++;
    r->note_t = t;
    snprintf(r->note, sizeof r->note, "%s", text);
}

static int run(int prob, const chrt_options *o, rows *r, chrt_stats *st,
               double *x, char *msg)
{
    chrt_system s = fake(prob);
    const chrt_system *sp = &s;
    chrt_sink sink = {keep_row, keep_note, r};
    double t;
    memset(r, 0, sizeof *r);
    exact(prob, 0, x);
    calls = 0;
    return chrt_integrate(&sp, o, 0, x, NULL, NULL, &sink, st, &t, msg, 300);
}

static void test_tolerance(void)
{
    /* The global error at t1 follows the tolerance over eight decades
     * (rtol = atol = 1e-4 ... 1e-12): below 30 times it, falling with it
     * at every step of two decades, and by 1e5 to 1e11 over the eight
     * (a slope between 0.6 and 1.4 on a log-log scale). */
    static const chrt_method ms[] = {CHRT_DOP853, CHRT_RK45};
    for (size_t i = 0; i < 2; i++)
        for (int prob = 0; prob < NPROB; prob++) {
            double prev = 0, first = 0;
            for (int d = 4; d <= 12; d += 2) {
                chrt_options o;
                chrt_options_default(&o);
                o.method = ms[i];
                o.t1 = 10;
                o.rtol = o.atol = pow(10, -d);
                rows r;
                chrt_stats st;
                double x[2];
                char msg[300];
                int rc = run(prob, &o, &r, &st, x, msg);
                CHECK_MSG(rc == 0, "%s", msg);
                double e = max_err(prob, 10, x);
                CHECK_MSG(e < 30 * o.rtol, "%s problem %d tol 1e-%d: error %.3g",
                          chrt_method_name(ms[i]), prob, d, e);
                if (prev > 0)
                    CHECK_MSG(prev / e > 1.5 && prev / e < 1e4, "%s problem %d tol "
                              "1e-%d: error %.3g after %.3g", chrt_method_name(ms[i]),
                              prob, d, e, prev);
                else
                    first = e;
                prev = e;
            }
            CHECK_MSG(first / prev > 1e5 && first / prev < 1e11, "%s problem %d: "
                      "error %.3g at 1e-4, %.3g at 1e-12", chrt_method_name(ms[i]),
                      prob, first, prev);
        }
}

static void test_dense_rows(void)
{
    /* --dt-out rows by dense output between the steps: each within a few
     * tolerances of the exact solution; the grid t = k*0.01 and t1. */
    static const chrt_method ms[] = {CHRT_DOP853, CHRT_RK45};
    for (size_t i = 0; i < 2; i++) {
        chrt_options o;
        chrt_options_default(&o);
        o.method = ms[i];
        o.t1 = 5.005;
        o.dt_out = 0.01;
        o.rtol = o.atol = 1e-10;
        rows r;
        chrt_stats st;
        double x[2], worst = 0;
        char msg[300];
        CHECK(run(OSC, &o, &r, &st, x, msg) == 0);
        CHECK_MSG(r.n == 502, "%d rows", r.n);
        CHECK(st.accepted < 250); /* rows between the steps, not steps */
        for (int k = 0; k < r.n && k < 4096; k++) {
            double want = k < 501 ? 0.01 * k : 5.005;
            CHECK_MSG(fabs(r.t[k] - want) < 1e-12, "row %d at t = %.17g", k, r.t[k]);
            worst = fmax(worst, fabs(r.q[k] - cos(r.t[k])));
        }
        CHECK_MSG(worst < 1e-8, "%s: dense rows off by %.3g",
                  chrt_method_name(ms[i]), worst);
        CHECK(r.t[r.n - 1] == 5.005);
    }
}

static void test_last_row(void)
{
    /* t1 is the last row: fixed steps with --every not dividing N, and
     * adaptive steps with --every. */
    static const chrt_method ms[] = {CHRT_RK4, CHRT_EULER, CHRT_DOP853, CHRT_RK45};
    for (size_t i = 0; i < 4; i++) {
        chrt_options o;
        chrt_options_default(&o);
        o.method = ms[i];
        o.t1 = 1;
        o.every = 300;
        o.dt = 1e-3;
        if (chrt_method_adaptive(ms[i])) o.every = 3, o.dt = 0, o.rtol = o.atol = 1e-12;
        rows r;
        chrt_stats st;
        double x[2];
        char msg[300];
        CHECK(run(DECAY, &o, &r, &st, x, msg) == 0);
        CHECK_MSG(r.t[r.n - 1] == 1, "%s: last row at %.17g", chrt_method_name(ms[i]),
                  r.t[r.n - 1]);
        if (!chrt_method_adaptive(ms[i])) {
            /* 1000 steps: rows at 0, 300, 600, 900 and 1000 */
            CHECK_MSG(r.n == 5, "%d rows", r.n);
            CHECK_NEAR(r.t[3], 0.9, 1e-15);
        } else {
            CHECK_MSG(r.n == 1 + (st.accepted + 2) / 3, "%d rows, %ld steps", r.n,
                      st.accepted);
        }
    }
}

static void test_stats(void)
{
    /* The loop's count against calls counted in the right-hand side, and
     * the formula: 1 at t0, 1 for the first step, the stages of every
     * attempt. */
    static const chrt_method ms[] = {CHRT_DOP853, CHRT_RK45, CHRT_RK4, CHRT_MIDPOINT};
    for (size_t i = 0; i < 4; i++)
        for (int prob = 0; prob < NPROB; prob++) {
            chrt_options o;
            chrt_options_default(&o);
            o.method = ms[i];
            o.t1 = 20;
            o.rtol = 1e-3, o.atol = 1e-6; /* loose: some rejections */
            o.dt = chrt_method_adaptive(ms[i]) ? 8 : 0.01; /* a first step too large */
            rows r;
            chrt_stats st;
            double x[2];
            char msg[300];
            CHECK(run(prob, &o, &r, &st, x, msg) == 0);
            CHECK_MSG(st.rhs_calls == calls, "%s: %ld counted, %ld called",
                      chrt_method_name(ms[i]), st.rhs_calls, calls);
            long want = chrt_method_adaptive(ms[i])
                            ? 1 + chrt_method_stages(ms[i]) * (st.accepted + st.rejected)
                            : chrt_method_stages(ms[i]) * st.accepted;
            CHECK_MSG(st.rhs_calls == want, "%s problem %d: %ld rhs calls, %ld accepted, "
                      "%ld rejected", chrt_method_name(ms[i]), prob, st.rhs_calls,
                      st.accepted, st.rejected);
            if (chrt_method_adaptive(ms[i]))
                CHECK_MSG(st.rejected > 0, "%s: no rejection", chrt_method_name(ms[i]));
            else
                CHECK(st.accepted == 2000 && st.rejected == 0);
            CHECK(st.recharts == 0);
        }
    /* Automatic first step: one more call. */
    chrt_options o;
    chrt_options_default(&o);
    rows r;
    chrt_stats st;
    double x[2];
    char msg[300];
    CHECK(run(OSC, &o, &r, &st, x, msg) == 0);
    CHECK(st.rhs_calls == calls && calls == 2 + 12 * (st.accepted + st.rejected));
}

/* y' = 1 failing for t > 0.5 (returns code), the state itself fine. */
static int fail_code = 1;
static int fails_late(double t, const double *x, const double *p, const double *vs,
                       double *dx)
{
    (void)vs;
    (void)x, (void)p;
    calls++;
    dx[0] = 1;
    return t > 0.5 ? fail_code : 0;
}

static void test_failures(void)
{
    for (int code = 1; code <= 2; code++) {
        fail_code = code;
        chrt_system s = fake(DECAY);
        s.rhs = fails_late;
        const chrt_system *sp = &s;
        rows r;
        memset(&r, 0, sizeof r);
        chrt_sink sink = {keep_row, keep_note, &r};
        chrt_options o;
        chrt_options_default(&o);
        chrt_stats st;
        double x[1] = {0}, t;
        char msg[300];
        int rc = chrt_integrate(&sp, &o, 0, x, NULL, NULL, &sink, &st, &t, msg, sizeof msg);
        CHECK(rc == CHRT_EXIT_NUMERIC);
        CHECK_MSG(strstr(msg, "step size too small at t = 0.49999") != NULL, "%s", msg);
        CHECK_MSG(strstr(msg, code == 1 ? "the right-hand side failed"
                                        : "the chart is numerically singular") != NULL,
                  "%s", msg);
        /* Every row before the failure kept, the last at the time of the
         * failure, the state there exact (y = t). */
        CHECK(r.n >= 2 && r.t[r.n - 1] == t && t <= 0.5 && t > 0.5 - 1e-12);
        CHECK_NEAR(x[0], t, 1e-12);
        CHECK(st.rejected > 10);
    }
    /* A fixed method fails at once, with the step. */
    fail_code = 1;
    chrt_system s = fake(DECAY);
    s.rhs = fails_late;
    const chrt_system *sp = &s;
    chrt_options o;
    chrt_options_default(&o);
    o.method = CHRT_RK4;
    o.dt = 0.125;
    double x[1] = {0}, t;
    char msg[300];
    CHECK(chrt_integrate(&sp, &o, 0, x, NULL, NULL, NULL, NULL, &t, msg, sizeof msg)
          == CHRT_EXIT_NUMERIC);
    CHECK_STR(msg, "numerical failure at t = 0.5 (step 5): the right-hand side "
                   "failed: singular system or Newton not converged");
    CHECK(t == 0.5 && x[0] == 0.5);
    /* Invalid options: usage errors, nothing run. */
    struct { double rtol, atol, dt_max, dt_out; chrt_method m; const char *msg; } bad[] = {
        {0, 1, 0, 0, CHRT_DOP853, "--rtol must be a positive finite number (got 0)"},
        {NAN, 1, 0, 0, CHRT_DOP853, "--rtol must be a positive finite number (got nan)"},
        {1e-6, -1, 0, 0, CHRT_DOP853, "--atol must be a positive finite number (got -1)"},
        {1e-6, 1, -1, 0, CHRT_DOP853, "--dt-max must be a positive finite number (got -1)"},
        {1e-6, 1, 0, 0.1, CHRT_RK4, "--dt-out needs an adaptive method (dop853, rk45): rk4 "
                                    "has no dense output (use --every)"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        chrt_options_default(&o);
        o.rtol = bad[i].rtol, o.atol = bad[i].atol, o.dt_max = bad[i].dt_max;
        o.dt_out = bad[i].dt_out, o.method = bad[i].m;
        calls = 0;
        CHECK(chrt_integrate(&sp, &o, 0, x, NULL, NULL, NULL, NULL, &t, msg, sizeof msg)
              == CHRT_EXIT_USAGE);
        CHECK_STR(msg, bad[i].msg);
        CHECK(calls == 0);
    }
}

/* ---- the chart hook -------------------------------------------------------- */

/* Chart A: x'' = -x in (x, v); its quality drops below 1e-2 for t > 1.
 * Chart B: the same motion in (x, w) with w = 2v (x' = w/2, w' = -2x),
 * of quality 1 everywhere. The mechanical state does not change. */
static double quality_a(double t, const double *x, const double *p, const double *vs)
{
    (void)vs;
    (void)x, (void)p;
    return t > 1 ? 1e-3 : 1;
}
static double quality_b(double t, const double *x, const double *p, const double *vs)
{
    (void)vs;
    (void)t, (void)x, (void)p;
    return 1;
}
static int rhs_b(double t, const double *x, const double *p, const double *vs,
                  double *dx)
{
    (void)vs;
    (void)t, (void)p;
    calls++;
    dx[0] = x[1] / 2;
    dx[1] = -2 * x[0];
    return 0;
}
static int vel_b(double t, const double *x, const double *p, const double *vs,
                  double *qt)
{
    (void)vs;
    (void)t, (void)p;
    qt[0] = x[1] / 2;
    return 0;
}

typedef struct {
    chrt_system b;
    int fail;   /* 1: no better chart */
    int calls;
} charts;

static int rechart(void *ctx, double t, double *x, const double *p, const double *vs,
                   const chrt_system **s, char *note, size_t len)
{
    charts *c = ctx;
    (void)p, (void)vs;
    c->calls++;
    if (c->fail) {
        snprintf(note, len, "no chart of the fake system is better at t = %g", t);
        return 1;
    }
    x[1] *= 2;
    *s = &c->b;
    snprintf(note, len, "chart B (was A)");
    return 0;
}

/* Chart A of the oscillator in *a, chart B in c->b. */
static void two_charts(chrt_system *a, charts *c)
{
    *a = fake(OSC);
    a->chart_quality = quality_a;
    c->b = *a;
    c->b.rhs = rhs_b;
    c->b.velocities = vel_b;
    c->b.chart_quality = quality_b;
    c->fail = 0, c->calls = 0;
}

static void test_chart_hook(void)
{
    static const chrt_method ms[] = {CHRT_DOP853, CHRT_RK45, CHRT_RK4};
    for (size_t i = 0; i < 3; i++) {
        chrt_system a;
        charts c;
        two_charts(&a, &c);
        chrt_options o;
        chrt_options_default(&o);
        o.method = ms[i];
        o.t1 = 3;
        o.rtol = o.atol = 1e-11;
        o.dt = ms[i] == CHRT_RK4 ? 1e-3 : 0;
        o.rechart = rechart;
        o.rechart_ctx = &c;
        const chrt_system *sp = &a;
        rows r;
        memset(&r, 0, sizeof r);
        chrt_sink sink = {keep_row, keep_note, &r};
        chrt_stats st;
        double x[2] = {1, 0}, t;
        char msg[300];
        calls = 0;
        int rc = chrt_integrate(&sp, &o, 0, x, NULL, NULL, &sink, &st, &t, msg, sizeof msg);
        CHECK_MSG(rc == 0, "%s", msg);
        /* One re-chart at the first accepted step past t = 1, noted. */
        CHECK(st.recharts == 1 && c.calls == 1 && r.notes == 1);
        CHECK_STR(r.note, "chart B (was A)");
        CHECK(r.note_t > 1 && r.note_t < 1.5);
        CHECK(sp == &c.b);
        /* The run went on in chart B from the re-charted state: the exact
         * motion, w = 2v = -2 sin t. */
        CHECK_NEAR(x[0], cos(3.0), 1e-8);
        CHECK_NEAR(x[1], -2 * sin(3.0), 1e-8);
        CHECK(t == 3 && r.t[r.n - 1] == 3);
        /* The rows' velocity column is the chart-independent x'. */
        for (int k = 0; k < r.n && k < 4096; k++)
            CHECK_NEAR(r.q[k], cos(r.t[k]), 1e-7);
        /* The restart: f recomputed in chart B (one more call, counted). */
        CHECK(st.rhs_calls == calls);
        if (chrt_method_adaptive(ms[i]))
            CHECK(calls == 3 + chrt_method_stages(ms[i]) * (st.accepted + st.rejected));

        /* rechart NULL, or no better chart: exit 3 at that time with the
         * note, the rows before kept. */
        for (int k = 0; k < 2; k++) {
            sp = &a;
            x[0] = 1, x[1] = 0;
            c.fail = 1;
            o.rechart = k ? rechart : NULL;
            memset(&r, 0, sizeof r);
            rc = chrt_integrate(&sp, &o, 0, x, NULL, NULL, &sink, &st, &t, msg, sizeof msg);
            CHECK(rc == CHRT_EXIT_NUMERIC);
            char want[300];
            snprintf(want, sizeof want, "numerical failure at t = %.17g: the chart is "
                     "singular (quality 0.001 < 0.01): %s", t,
                     k ? "no chart of the fake system is better at t = "
                       : "the block G_d of the dependent velocities of the constraint "
                         "Jacobian (or the Legendre map) is near-singular, and fake "
                         "cannot change its chart here");
            CHECK_MSG(strncmp(msg, want, strlen(want)) == 0, "%s", msg);
            CHECK(t > 1 && t < 1.5 && st.recharts == 0);
            /* The rows up to the step before the one that left the chart
             * (whose state x is, at t, not written). */
            CHECK(r.n >= 2 && r.t[r.n - 1] < t && r.t[r.n - 1] <= 1);
            CHECK_NEAR(x[0], cos(t), 1e-9);
        }
    }
    /* Singular already at the initial state: no row, exit 3 at t = 0. */
    chrt_system a = fake(OSC);
    a.chart_quality = quality_a;
    chrt_options o;
    chrt_options_default(&o);
    o.t1 = 3;
    const chrt_system *sp = &a;
    rows r;
    memset(&r, 0, sizeof r);
    chrt_sink sink = {keep_row, keep_note, &r};
    double x[2] = {1, 0}, t;
    char msg[300];
    CHECK(chrt_integrate(&sp, &o, 2, x, NULL, NULL, &sink, NULL, &t, msg, sizeof msg)
          == CHRT_EXIT_NUMERIC);
    CHECK_STR(msg, "numerical failure at t = 2: the chart is singular (quality 0.001 "
                   "< 0.01): the block G_d of the dependent velocities of the constraint "
                   "Jacobian (or the Legendre map) is near-singular, and fake cannot "
                   "change its chart here (no re-charting: --no-rechart, a driver "
                   "program, or check --loop)");
    CHECK(r.n == 0);
}

/* A chart singular only at t = 2 (quality |t - 2|: below 0.01 on a window
 * of width 0.02) of a smooth motion that an adaptive method crosses in a
 * few long steps: the step cap (simulate.c, chart_cap) makes the steps
 * shrink as the quality falls, so that one ends inside the window before
 * t = 2 and the run stops there (no rechart), for both pairs and loose
 * and tight tolerances. */
static double quality_v(double t, const double *x, const double *p, const double *vs)
{
    (void)vs;
    (void)x, (void)p;
    return fabs(t - 2);
}

static void test_chart_cap(void)
{
    const chrt_method ms[2] = {CHRT_DOP853, CHRT_RK45};
    const double rtols[2] = {1e-6, 1e-10};
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 2; j++) {
            chrt_system a = fake(OSC);
            a.chart_quality = quality_v;
            const chrt_system *sp = &a;
            chrt_options o;
            chrt_options_default(&o);
            o.method = ms[i];
            o.rtol = rtols[j];
            o.t1 = 5;
            rows r;
            memset(&r, 0, sizeof r);
            chrt_sink sink = {keep_row, keep_note, &r};
            chrt_stats st;
            double x[2] = {1, 0}, t;
            char msg[400];
            int rc = chrt_integrate(&sp, &o, 0, x, NULL, NULL, &sink, &st, &t, msg, sizeof msg);
            CHECK_MSG(rc == CHRT_EXIT_NUMERIC && t >= 1.99 && t < 2, "%s rtol %g: rc %d at "
                      "t = %.17g after %ld steps", chrt_method_name(ms[i]), rtols[j], rc, t,
                      st.accepted);
            CHECK_MSG(strstr(msg, "the chart is singular") != NULL, "%s", msg);
            CHECK_NEAR(x[0], cos(t), 1e-5);
            /* the cap costs a few steps, not a crawl */
            CHECK_MSG(st.accepted < 200, "%ld steps", st.accepted);
        }
}

/* The same through chrt_main_sink, as `run` and the driver programs run:
 * the re-chart of the hooks, its note and the rows reach the extra sink. */
static void test_main_hooks(void)
{
    chrt_system a;
    charts c;
    two_charts(&a, &c);
    rows r;
    memset(&r, 0, sizeof r);
    chrt_sink sink = {keep_row, keep_note, &r};
    chrt_main_hooks hooks = {&sink, rechart, &c, NULL};
    char *argv[] = {"test", "--t1", "3", "--rtol", "1e-11", "-o", "/dev/null", NULL};
    chrt_args parsed;
    CHECK(chrt_main_sink(&a, 7, argv, &hooks, &parsed) == 0);
    CHECK(c.calls == 1 && r.notes == 1 && r.note_t > 1 && r.note_t < 1.5);
    CHECK_STR(r.note, "chart B (was A)");
    CHECK_MSG(r.n > 10 && r.t[r.n - 1] == 3, "%d rows, last %g", r.n, r.n ? r.t[r.n - 1] : -1);
    CHECK_NEAR(r.q[r.n - 1], cos(3.0), 1e-8);
    CHECK(parsed.opt.t1 == 3 && parsed.opt.rtol == 1e-11);
    /* Without the hook: exit 3, the rows before kept. */
    memset(&r, 0, sizeof r);
    hooks.rechart = NULL;
    CHECK(chrt_main_sink(&a, 7, argv, &hooks, NULL) == CHRT_EXIT_NUMERIC);
    CHECK(r.notes == 0 && r.n > 2 && r.t[r.n - 1] <= 1);
}

static void test_names(void)
{
    CHECK(chrt_method_parse("dop853") == CHRT_DOP853);
    CHECK(chrt_method_parse("rk45") == CHRT_RK45);
    CHECK(chrt_method_parse("dopri5") == CHRT_RK45);
    CHECK_STR(chrt_method_name(CHRT_RK45), "rk45");
    CHECK(chrt_method_adaptive(CHRT_DOP853) && !chrt_method_adaptive(CHRT_RK4));
    chrt_options o;
    chrt_options_default(&o);
    CHECK(o.method == CHRT_DOP853 && o.rtol == CHRT_RTOL && o.atol == CHRT_ATOL);
    CHECK(o.chart_min == CHRT_CHART_MIN && o.rechart == NULL);
}

int main(void)
{
    RUN(test_orders);
    RUN(test_tolerance);
    RUN(test_dense_rows);
    RUN(test_last_row);
    RUN(test_stats);
    RUN(test_failures);
    RUN(test_chart_hook);
    RUN(test_chart_cap);
    RUN(test_main_hooks);
    RUN(test_names);
    return check_summary("test_integrate");
}
