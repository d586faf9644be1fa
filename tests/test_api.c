/* test_api.c — the public library API (gen/app/chetaev.h): loading, errors,
 * queries, parameters, state setting, stepwise integration, and the
 * services of the command line (derivation, emitted code, audit, run). */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "chetaev.h"
#include "doc/plot.h"
#include "runtime/simulate.h"
#include "tests/check.h"

static const char *const knife =
    "model knife\n"
    "coordinates x y phi\n"
    "parameters m=1 J=0.2 g=9.81 alpha=0.5 c=0.1\n"
    "lagrangian m/2*(x'^2 + y'^2) + J/2*phi'^2 + m*g*sin(alpha)*x\n"
    "constraint sin(phi)*x' - cos(phi)*y' = 0\n"
    "force phi = -c*phi'\n"
    "dependent y'\n"
    "initial x=0 y=0 phi=0 x'=1 phi'=0.3\n";

static ch_system *compile_knife(const char *form)
{
    ch_err err;
    ch_problem *pb = ch_problem_parse("knife.nh", knife, strlen(knife), &err);
    CHECK_MSG(pb != NULL, "%s", err.msg);
    if (!pb) return NULL;
    CHECK_STR(ch_problem_name(pb), "knife");
    ch_system *s = ch_system_compile(pb, form, NULL, &err);
    CHECK_MSG(s != NULL, "%s", err.msg);
    ch_problem_free(pb);
    return s;
}

static void test_errors(void)
{
    ch_err err;
    char buf[1024];
    CHECK(ch_problem_load(SRCDIR "/examples/no_such_model.nh", &err) == NULL);
    CHECK(err.code == CH_E_IO);
    const char *bad = "coordinates x\nlagrangian x'^2 + * 2\n";
    CHECK(ch_problem_parse("bad.nh", bad, strlen(bad), &err) == NULL);
    CHECK(err.code == CH_E_MODEL);
    CHECK(err.line == 2);
    CHECK_STR(err.file, "bad.nh");
    ch_err_format(&err, buf, sizeof buf);
    CHECK(strncmp(buf, "bad.nh:2:", 9) == 0);
    CHECK(ch_problem_parse(NULL, "coordinates x\n", 14, NULL) == NULL); /* NULL err is allowed */

    ch_problem *pb = ch_problem_parse("knife.nh", knife, strlen(knife), &err);
    CHECK(pb != NULL);
    CHECK(ch_system_compile(pb, "lagrange", NULL, &err) == NULL);
    CHECK(err.code == CH_E_USAGE);
    CHECK(strstr(err.msg, "lagrange") != NULL);
    CHECK(ch_system_compile(pb, NULL, "gcc-9", &err) == NULL);
    CHECK(err.code == CH_E_USAGE);
    ch_problem_free(pb);

    ch_system *s = compile_knife("reduced");
    if (!s) return;
    CHECK(ch_system_set_param(s, "mass", 2, &err) == CH_E_USAGE);
    CHECK(strstr(err.msg, "mass") != NULL);
    CHECK(ch_system_set_state(s, "z'", 2, &err) == CH_E_USAGE);
    CHECK(ch_system_integrate(s, 1, "rk5", 1e-3, &err) == CH_E_USAGE);
    CHECK(ch_system_integrate(s, 1, "rk4", 0, &err) == CH_E_USAGE);
    CHECK(ch_system_integrate(s, 1, NULL, NAN, &err) == CH_E_USAGE);
    CHECK(ch_system_integrate(s, 0.5, NULL, 1e-3, &err) == 0);
    CHECK(ch_system_integrate(s, 0.25, NULL, 1e-3, &err) == CH_E_USAGE); /* backwards */
    /* phi = pi/2 makes y' = tan(phi) x' singular: the chart check before
     * the first step fails (the velocities of such a state cannot be
     * recovered, so no other chart can take it) and keeps the state and
     * time. */
    double x[5] = {0, 0, 1.5707963267948966, 1, 0};
    CHECK(ch_system_set_state_vector(s, 2, x, &err) == 0);
    CHECK(ch_system_chart_quality(s) < 1e-9);
    CHECK(ch_system_integrate(s, 3, NULL, 1e-3, &err) == CH_E_NUMERIC);
    CHECK(strstr(err.msg, "numerical failure at t = 2: the chart is singular") != NULL);
    CHECK(strstr(err.msg, "G_d of the dependent velocities y'") != NULL);
    CHECK(ch_system_time(s) == 2);
    CHECK(ch_system_state(s)[3] == 1);
    /* M* = diag(m/cos(phi)^2, J) is singular at m = 0 and at J = 0 (the
     * reduced form's kn_acc divides by neither: m cancels in x'') */
    x[2] = 0.3;
    const char *pars[] = {"m", "J"};
    for (int i = 0; i < 2; i++) {
        CHECK(ch_system_set_state_vector(s, 2, x, &err) == 0);
        CHECK(ch_system_set_param(s, pars[i], 0, &err) == 0);
        CHECK_MSG(ch_system_integrate(s, 3, NULL, 1e-3, &err) == CH_E_NUMERIC, "%s = 0", pars[i]);
        CHECK(ch_system_set_param(s, pars[i], i ? 0.2 : 1, &err) == 0);
        CHECK(ch_system_integrate(s, 2.001, NULL, 1e-3, &err) == 0);
    }
    ch_system_free(s);
}

static void test_queries(void)
{
    ch_system *s = compile_knife("full");
    if (!s) return;
    CHECK_STR(ch_system_prefix(s), "knife_full");
    CHECK(ch_system_nx(s) == 6);
    CHECK(ch_system_nq(s) == 3);
    CHECK(ch_system_np(s) == 5);
    CHECK_STR(ch_system_state_name(s, 4), "y'");
    CHECK(ch_system_state_name(s, 6) == NULL);
    CHECK(ch_system_state_name(s, -1) == NULL);
    CHECK_STR(ch_system_param_name(s, 3), "alpha");
    CHECK(ch_system_param_default(s, 2) == 9.81);
    CHECK(isnan(ch_system_param_default(s, 5)));
    CHECK(ch_system_param_index(s, "c") == 4);
    CHECK(ch_system_state_index(s, "phi'") == 5);
    CHECK(ch_system_state_index(s, "phi''") == -1);
    CHECK(ch_system_time(s) == 0);
    CHECK(ch_system_state(s)[3] == 1 && ch_system_state(s)[5] == 0.3);
    /* The function pointers are the compiled SPEC §4 functions. */
    double dx[6], e = ch_system_energy_fn(s)(0, ch_system_state(s), ch_system_params(s));
    CHECK(ch_system_rhs(s)(0, ch_system_state(s), ch_system_params(s), dx) == 0);
    CHECK(dx[0] == 1 && dx[2] == 0.3);
    /* E = m/2 x'^2 + J/2 phi'^2 - m g sin(alpha) x at x = 0 */
    CHECK_NEAR(e, 0.5 + 0.1 * 0.09, 1e-15);
    CHECK_NEAR(ch_system_energy(s), e, 0);
    ch_system_free(s);
}

/* Stepping in pieces lands on the same grid as one call, and parameters
 * act without recompiling. */
static void test_stepping(void)
{
    ch_err err;
    ch_system *a = compile_knife(NULL), *b = compile_knife(NULL);
    if (!a || !b) return;
    CHECK(ch_system_integrate(a, 1, "midpoint", 0.01, &err) == 0);
    for (int k = 1; k <= 4; k++)
        CHECK(ch_system_integrate(b, 0.25 * k, "midpoint", 0.01, &err) == 0);
    CHECK(ch_system_time(a) == 1 && ch_system_time(b) == 1);
    for (int i = 0; i < 5; i++)
        CHECK_NEAR(ch_system_state(a)[i], ch_system_state(b)[i], 1e-12);
    /* No damping: phi' stays 0.3; default damping decays it. */
    CHECK(ch_system_reset(b, &err) == 0);
    CHECK(ch_system_set_param(b, "c", 0, &err) == 0);
    CHECK(ch_system_params(b)[4] == 0);
    CHECK(ch_system_integrate(b, 1, "rk4", 0.01, &err) == 0);
    CHECK_NEAR(ch_system_state(b)[4], 0.3, 1e-14);
    CHECK(ch_system_state(a)[4] < 0.3 - 0.02);
    ch_system_free(a);
    ch_system_free(b);
}

static void test_set_state(void)
{
    ch_err err;
    ch_system *s = compile_knife("reduced");
    if (!s) return;
    double qt[3];
    /* A coordinate through state_from: y' follows the constraint. */
    CHECK(ch_system_set_state(s, "phi", 0.5, &err) == 0);
    CHECK(ch_system_velocities(s, qt, &err) == 0);
    CHECK_NEAR(qt[1], tan(0.5) * qt[0], 1e-15);
    CHECK(ch_system_set_state(s, "x'", 2, &err) == 0);
    CHECK(ch_system_state(s)[3] == 2);
    CHECK(ch_system_velocities(s, qt, &err) == 0);
    CHECK_NEAR(qt[1], tan(0.5) * 2, 1e-15);
    /* A dependent velocity cannot be set: it is recomputed. */
    CHECK(ch_system_set_state(s, "y'", 7, &err) == 0);
    CHECK(ch_system_velocities(s, qt, &err) == 0);
    CHECK_NEAR(qt[1], tan(0.5) * 2, 1e-15);
    /* reset: the model's initial state under changed parameters */
    CHECK(ch_system_set_param(s, "J", 0.4, &err) == 0);
    CHECK(ch_system_reset(s, &err) == 0);
    CHECK(ch_system_state(s)[2] == 0 && ch_system_state(s)[3] == 1);
    CHECK_NEAR(ch_system_energy(s), 0.5 + 0.2 * 0.09, 1e-15);
    ch_system_free(s);
}

/* The hamilton form: momenta follow the parameters on reset. */
static void test_hamilton(void)
{
    ch_err err;
    ch_system *s = compile_knife("hamilton");
    if (!s) return;
    int k = ch_system_state_index(s, "y_phi");
    CHECK(k >= 0);
    if (k < 0) {
        ch_system_free(s);
        return;
    }
    CHECK_NEAR(ch_system_state(s)[k], 0.2 * 0.3, 1e-15);
    CHECK(ch_system_set_param(s, "J", 1, &err) == 0);
    CHECK(ch_system_reset(s, &err) == 0);
    CHECK_NEAR(ch_system_state(s)[k], 0.3, 1e-15);
    CHECK(ch_system_set_state(s, "y_phi", 0.6, &err) == 0);
    CHECK(ch_system_state(s)[k] == 0.6);
    ch_system_free(s);
}

/* The adaptive default: statistics, tolerances, the step limit; the
 * reduced and full forms of the knife edge agree at tight tolerances
 * (no chart singularity before t = 1). */
static void test_adaptive(void)
{
    ch_err err;
    ch_stats st;
    ch_system *r = compile_knife("reduced"), *f = compile_knife("full");
    if (!r || !f) return;
    CHECK(ch_system_integrate(r, 1, NULL, 0, &err) == 0);
    ch_system_stats(r, &st);
    long steps = st.accepted;
    CHECK(st.accepted > 0 && st.recharts == 0 && st.note[0] == 0);
    CHECK_MSG(st.rhs_calls == 2 + 12 * (st.accepted + st.rejected), "%ld calls, %ld "
              "accepted, %ld rejected", st.rhs_calls, st.accepted, st.rejected);
    /* Invalid tolerances change nothing. */
    CHECK(ch_system_set_tolerances(r, 0, 1e-12, 0, &err) == CH_E_USAGE);
    CHECK(strstr(err.msg, "--rtol must be a positive") != NULL);
    CHECK(ch_system_set_tolerances(r, 1e-10, -1, 0, &err) == CH_E_USAGE);
    CHECK(ch_system_set_tolerances(r, 1e-10, 1e-12, -1, &err) == CH_E_USAGE);
    CHECK(ch_system_reset(r, &err) == 0);
    CHECK(ch_system_integrate(r, 1, "dop853", 0, &err) == 0);
    ch_system_stats(r, &st);
    CHECK(st.accepted == steps);
    /* Tighter: more steps; the forms agree. */
    CHECK(ch_system_set_tolerances(r, 1e-12, 1e-14, 0, &err) == 0);
    CHECK(ch_system_set_tolerances(f, 1e-12, 1e-14, 0, &err) == 0);
    CHECK(ch_system_reset(r, &err) == 0);
    CHECK(ch_system_integrate(r, 1, NULL, 0, &err) == 0);
    CHECK(ch_system_integrate(f, 1, NULL, 0, &err) == 0);
    ch_system_stats(r, &st);
    CHECK(st.accepted > steps);
    const double *xr = ch_system_state(r), *xf = ch_system_state(f);
    static const int full_of[5] = {0, 1, 2, 3, 5}; /* x y phi x' phi' */
    for (int i = 0; i < 5; i++) CHECK_NEAR(xr[i], xf[full_of[i]], 1e-9);
    /* dt_max bounds the steps; rk45 by its alias. */
    CHECK(ch_system_set_tolerances(r, 1e-10, 1e-12, 0.01, &err) == 0);
    CHECK(ch_system_reset(r, &err) == 0);
    CHECK(ch_system_integrate(r, 1, "dopri5", 0, &err) == 0);
    ch_system_stats(r, &st);
    CHECK(st.accepted >= 100 && st.rhs_calls == 2 + 6 * (st.accepted + st.rejected));
    for (int i = 0; i < 5; i++) CHECK_NEAR(ch_system_state(r)[i], xf[full_of[i]], 1e-8);
    /* The step limit: adaptive fails at it (the state of the last step
     * kept), a fixed-step call asking for more is refused. */
    CHECK(ch_system_set_max_steps(r, 0, &err) == CH_E_USAGE);
    CHECK(ch_system_set_max_steps(r, 3, &err) == 0);
    CHECK(ch_system_integrate(r, 5, NULL, 0, &err) == CH_E_NUMERIC);
    CHECK_MSG(strstr(err.msg, "more than 3 steps (--max-steps)") != NULL, "%s", err.msg);
    ch_system_stats(r, &st);
    CHECK(st.accepted == 3 && ch_system_time(r) > 1 && ch_system_time(r) < 5);
    CHECK(ch_system_integrate(r, 5, "rk4", 1e-3, &err) == CH_E_USAGE);
    CHECK_MSG(strstr(err.msg, "asks for") != NULL, "%s", err.msg);
    ch_system_free(r);
    ch_system_free(f);
}

/* The warnings of the initial state (SPEC §1): a pendulum 0.85 mm outside
 * its circle along the ray through (0.6, -0.8) is moved onto that point
 * (radial projection), y' recomputed as -x x'/y = 0.6; a state that
 * cannot be corrected is refused at `initial`. */
static void test_warnings(void)
{
    static const char *const pend =
        "coordinates x y\n"
        "parameters m=1 g=9.81 l=1\n"
        "lagrangian m/2*(x'^2 + y'^2) - m*g*y\n"
        "constraint x^2 + y^2 = l^2\n"
        "initial x=0.60051 y=-0.80068 x'=0.8 y'=0.5\n";
    ch_err err;
    ch_problem *pb = ch_problem_parse("pend.nh", pend, strlen(pend), &err);
    CHECK_MSG(pb != NULL, "%s", err.msg);
    if (!pb) return;
    CHECK(ch_problem_warning_count(pb) == 4);
    CHECK_STR(ch_problem_warning(pb, 1),
              "pend.nh:5:1: warning: initial x=0.60051 is moved to 0.6 (by -0.00051) "
              "onto holonomic constraint 1");
    CHECK_STR(ch_problem_warning(pb, 3),
              "pend.nh:5:1: warning: initial y'=0.5 is recomputed from the constraints "
              "as 0.6");
    CHECK(ch_problem_warning(pb, 4) == NULL);
    ch_system *s = ch_system_compile(pb, "reduced", NULL, &err);
    CHECK_MSG(s != NULL, "%s", err.msg);
    if (s) {
        double qt[2];
        const double *x = ch_system_state(s);
        CHECK_NEAR(x[0], 0.6, 1e-15);
        CHECK_NEAR(x[1], -0.8, 1e-15);
        CHECK(ch_system_velocities(s, qt, &err) == 0);
        CHECK_NEAR(qt[1], 0.6, 1e-15);
        /* l = 2: reset scales the state onto the circle of radius 2 */
        CHECK(ch_system_set_param(s, "l", 2, &err) == 0);
        CHECK(ch_system_reset(s, &err) == 0);
        CHECK_NEAR(ch_system_state(s)[0], 1.2, 1e-14);
        CHECK_NEAR(ch_system_state(s)[1], -1.6, 1e-14);
        /* x = 1.6 alone is off it: moved radially, (1.6, -1.6) / sqrt(2) * 2 */
        CHECK(ch_system_set_state(s, "x", 1.6, &err) == 0);
        CHECK_NEAR(ch_system_state(s)[0], sqrt(2.0), 1e-14);
        CHECK_NEAR(ch_system_state(s)[1], -sqrt(2.0), 1e-14);
        ch_system_free(s);
    }
    ch_problem_free(pb);
    pb = ch_problem_parse("knife.nh", knife, strlen(knife), &err);
    CHECK(pb && ch_problem_warning_count(pb) == 0 && ch_problem_warning(pb, 0) == NULL);
    ch_problem_free(pb);
    static const char *const stuck =
        "coordinates x y\n"
        "lagrangian (x'^2 + y'^2)/2\n"
        "constraint x^2 + y^2 = 1\n"
        "initial x=0 y=0\n";
    CHECK(ch_problem_parse("stuck.nh", stuck, strlen(stuck), &err) == NULL);
    CHECK(err.code == CH_E_MODEL && err.line == 4 && err.col == 1);
    CHECK_MSG(strstr(err.msg, "cannot be moved onto it") != NULL, "%s", err.msg);
}

/* The knife edge with c = 0 and phi' = 1 turns at a constant rate: the
 * chart of `dependent y'` is singular at phi = pi/2 + j pi. The reduced
 * and hamilton systems switch charts there (six times up to t = 10, the
 * state's names following; counted in ch_system_stats) and end where the
 * full form, which has no chart, does: with rk4 at dt 1e-4 and with the
 * adaptive default at rtol 1e-10, atol 1e-12. ch_system_reset returns to
 * the first chart; with re-charting off they stop at the first switch. */
static void test_recharting(void)
{
    ch_err err;
    ch_stats st;
    double qt[2][3][3], x[2][3][6];
    const char *forms[3] = {"full", "reduced", "hamilton"};
    const char *methods[2] = {"rk4", NULL};
    const double dts[2] = {1e-4, 0};
    for (int f = 0; f < 3; f++) {
        ch_system *s = compile_knife(forms[f]);
        if (!s) return;
        CHECK(ch_system_set_param(s, "c", 0, &err) == 0);
        CHECK(ch_system_set_state(s, "phi'", 1, &err) == 0);
        double x0[6];
        memcpy(x0, ch_system_state(s), (size_t)ch_system_nx(s) * sizeof x0[0]);
        for (int m = 0; m < 2; m++) {
            CHECK(ch_system_set_state_vector(s, 0, x0, &err) == 0);
            CHECK_STR(ch_system_chart(s), f ? "y'" : "");
            CHECK(ch_system_chart_quality(s) == 1.0); /* phi = 0: |cos(phi)| */
            CHECK_MSG(ch_system_integrate(s, 10, methods[m], dts[m], &err) == 0, "%s",
                      err.msg);
            ch_system_stats(s, &st);
            CHECK_MSG(st.recharts == (f ? 6 : 0), "%s %s: %ld", forms[f],
                      m ? "dop853" : "rk4", st.recharts);
            CHECK_MSG(f ? strstr(st.note, ": dependent velocities y' (were x')") != NULL
                        : st.note[0] == 0, "%s", st.note);
            CHECK_STR(ch_system_chart(s), f ? "y'" : ""); /* after an even number */
            CHECK(ch_system_velocities(s, qt[m][f], &err) == 0);
            memcpy(x[m][f], ch_system_state(s), (size_t)ch_system_nx(s) * sizeof x[m][f][0]);
        }
        if (f) {
            /* one switch (phi = pi/2 at t = pi/2), then back to the first
             * chart and the model's initial state by reset */
            CHECK(ch_system_set_state_vector(s, 0, x0, &err) == 0);
            CHECK(ch_system_integrate(s, 2, NULL, 0, &err) == 0);
            ch_system_stats(s, &st);
            CHECK(st.recharts == 1);
            CHECK_STR(ch_system_chart(s), "x'");
            CHECK(ch_system_set_param(s, "c", 0.1, &err) == 0); /* the default */
            CHECK(ch_system_reset(s, &err) == 0);
            CHECK_STR(ch_system_chart(s), "y'");
            double q[3];
            CHECK(ch_system_velocities(s, q, &err) == 0);
            CHECK(ch_system_time(s) == 0 && ch_system_state(s)[2] == 0);
            CHECK_NEAR(q[0], 1, 1e-15);   /* initial x'=1 phi'=0.3 */
            CHECK_NEAR(q[2], 0.3, 1e-15);
            /* off: the first switch at phi = pi/2 - asin(0.01) is a failure */
            CHECK(ch_system_set_param(s, "c", 0, &err) == 0);
            CHECK(ch_system_set_rechart(s, 0, 0.01, &err) == 0);
            CHECK(ch_system_set_rechart(s, 0, -1, &err) == CH_E_USAGE);
            CHECK(ch_system_set_state_vector(s, 0, x0, &err) == 0);
            CHECK(ch_system_integrate(s, 10, "rk4", 1e-3, &err) == CH_E_NUMERIC);
            CHECK_NEAR(ch_system_time(s), 1.561, 1e-9);
            CHECK(strstr(err.msg, "the chart is singular") != NULL);
            CHECK_MSG(strstr(err.msg, "cannot change its chart") != NULL, "%s", err.msg);
        }
        ch_system_free(s);
    }
    for (int m = 0; m < 2; m++)
        for (int f = 1; f < 3; f++)
            for (int i = 0; i < 3; i++) {
                CHECK_NEAR(x[m][f][i], x[m][0][i], 1e-8);
                CHECK_NEAR(qt[m][f][i], qt[m][0][i], 1e-8);
            }
}

/* Events and cvode through the API: a body thrown up at v0 lands (a stop
 * event) at exactly 2 v0/g after its apex; cvode ends the knife edge's
 * second where dop853 does. */
static void test_events_cvode(void)
{
    static const char *const throw_up =
        "coordinates y\nparameters g=9.81 v0=10\nlagrangian y'^2/2 - g*y\n"
        "event apex = y'\nevent ground = y stop\ninitial y=0 y'=10\n";
    ch_err err;
    ch_stats st;
    ch_problem *pb = ch_problem_parse("throw.nh", throw_up, strlen(throw_up), &err);
    CHECK_MSG(pb != NULL, "%s", err.msg);
    ch_system *s = pb ? ch_system_compile(pb, "full", NULL, &err) : NULL;
    if (s) {
        CHECK(ch_system_integrate(s, 5, NULL, 0, &err) == 0);
        ch_system_stats(s, &st);
        CHECK(st.events == 2);
        CHECK_NEAR(ch_system_time(s), 20 / 9.81, 1e-12);
        CHECK_NEAR(ch_system_state(s)[0], 0, 1e-11);
        CHECK(strstr(st.note, "event ground at t = 2.03873598369") != NULL);
        ch_system_free(s);
    }
    ch_problem_free(pb);
    ch_system *c = compile_knife("reduced"), *d = compile_knife("reduced");
    if (c && d) {
        CHECK(ch_system_integrate(c, 1, "cvode", 0, &err) == 0);
        CHECK(ch_system_integrate(d, 1, "dop853", 0, &err) == 0);
        ch_system_stats(c, &st);
        CHECK(st.accepted > 10 && st.rhs_calls > st.accepted);
        for (int i = 0; i < 5; i++)
            CHECK_NEAR(ch_system_state(c)[i], ch_system_state(d)[i], 1e-7);
    }
    ch_system_free(c);
    ch_system_free(d);
}

/* Implicit alpha's Newton starts from the velocities of the current
 * state, carried between ch_system_integrate calls (tests/branch/cubic.nh:
 * y' - x is a root of u^3 - u, the motion on u = 1; from the initial
 * y' = 1 Newton would land on u = -1 from x = 2 on). Exact at t = 4:
 * x = 12, x' = 5, y' = 13, E = 97. */
static void test_newton_start(void)
{
    static const char cubic[] =
        "coordinates x y\n"
        "parameters F=1\n"
        "lagrangian (x'^2 + y'^2)/2\n"
        "constraint (y' - x)^3 - (y' - x) = 0\n"
        "force x = F\n"
        "dependent y'\n"
        "initial x=0 y=0 x'=1 y'=1\n";
    ch_err err;
    ch_problem *pb = ch_problem_parse("cubic.nh", cubic, strlen(cubic), &err);
    CHECK_MSG(pb != NULL, "%s", err.msg);
    if (!pb) return;
    for (int f = 0; f < 2; f++) {
        ch_system *s = ch_system_compile(pb, f ? "hamilton" : "reduced", NULL, &err);
        CHECK_MSG(s != NULL, "%s", err.msg);
        if (!s) continue;
        double qt[2];
        for (int k = 1; k <= 4; k++)
            CHECK_MSG(ch_system_integrate(s, k, NULL, 0, &err) == 0, "%s", err.msg);
        CHECK(ch_system_velocities(s, qt, &err) == 0);
        CHECK_NEAR(ch_system_state(s)[0], 12, 1e-8);
        CHECK_NEAR(qt[0], 5, 1e-8);
        CHECK_NEAR(qt[1], 13, 1e-8);
        CHECK_NEAR(ch_system_energy(s), 97, 1e-7);
        /* a state set by hand: its velocities from the given ones */
        CHECK(ch_system_set_state(s, "x'", 5.5, &err) == 0);
        CHECK(ch_system_velocities(s, qt, &err) == 0);
        CHECK_NEAR(qt[1], 13, 1e-8);
        ch_system_free(s);
    }
    ch_problem_free(pb);
}

/* Every entry point refuses NULL and non-finite arguments with an error
 * (or a neutral value for the queries) instead of crashing (issue 45). */
static void test_bad_arguments(void)
{
    ch_err err;
    double v[8];
    ch_stats st;
    /* no text is an error, not a request to read the file "knife.nh" */
    FILE *f = fopen("knife.nh", "w");
    if (f) {
        fputs(knife, f);
        fclose(f);
    }
    CHECK(ch_problem_parse("knife.nh", NULL, 0, &err) == NULL && err.code == CH_E_USAGE);
    remove("knife.nh");
    CHECK(ch_problem_load(NULL, &err) == NULL && err.code == CH_E_USAGE);
    CHECK(ch_system_compile(NULL, NULL, NULL, &err) == NULL && err.code == CH_E_USAGE);
    CHECK(ch_problem_name(NULL) == NULL);
    ch_problem_free(NULL);
    ch_system_free(NULL);
    CHECK(ch_system_prefix(NULL) == NULL && ch_system_nx(NULL) == 0 && ch_system_np(NULL) == 0);
    CHECK(ch_system_state_name(NULL, 0) == NULL && ch_system_state_index(NULL, "x") == -1);
    CHECK(isnan(ch_system_param_default(NULL, 0)) && ch_system_param_index(NULL, "m") == -1);
    CHECK(ch_system_rhs(NULL) == NULL && ch_system_energy_fn(NULL) == NULL);
    CHECK(ch_system_params(NULL) == NULL && ch_system_state(NULL) == NULL);
    CHECK(isnan(ch_system_time(NULL)) && isnan(ch_system_energy(NULL)));
    CHECK(isnan(ch_system_chart_quality(NULL)) && ch_system_chart(NULL) == NULL);
    CHECK(ch_system_set_param(NULL, "m", 1, &err) == CH_E_USAGE);
    CHECK(ch_system_set_state(NULL, "x", 1, &err) == CH_E_USAGE);
    CHECK(ch_system_set_state_vector(NULL, 0, v, &err) == CH_E_USAGE);
    CHECK(ch_system_velocities(NULL, v, &err) == CH_E_USAGE);
    CHECK(ch_system_reset(NULL, &err) == CH_E_USAGE);
    CHECK(ch_system_integrate(NULL, 1, NULL, 0, &err) == CH_E_USAGE);
    CHECK(ch_system_set_tolerances(NULL, 1e-8, 1e-10, 0, &err) == CH_E_USAGE);
    CHECK(ch_system_set_max_steps(NULL, 10, &err) == CH_E_USAGE);
    CHECK(ch_system_set_rechart(NULL, 1, 0.01, &err) == CH_E_USAGE);
    ch_system_stats(NULL, &st);
    CHECK(st.accepted == 0);
    ch_err_format(NULL, (char *)v, sizeof v);
    ch_system *s = compile_knife(NULL);
    if (!s) return;
    CHECK(ch_system_set_param(s, NULL, 1, &err) == CH_E_USAGE);
    CHECK(ch_system_state_index(s, NULL) == -1 && ch_system_param_index(s, NULL) == -1);
    /* NaN and infinite values are refused as on the command line */
    CHECK(ch_system_set_param(s, "m", NAN, &err) == CH_E_USAGE);
    CHECK(ch_system_set_param(s, "m", INFINITY, &err) == CH_E_USAGE);
    CHECK(ch_system_params(s)[0] == 1);
    CHECK(ch_system_set_state(s, "x", NAN, &err) == CH_E_USAGE);
    CHECK(ch_system_set_state(s, NULL, 1, &err) == CH_E_USAGE);
    double x[5] = {0, 0, 0, 1, NAN};
    CHECK(ch_system_set_state_vector(s, 0, x, &err) == CH_E_USAGE);
    CHECK(ch_system_set_state_vector(s, 0, NULL, &err) == CH_E_USAGE);
    CHECK(ch_system_velocities(s, NULL, &err) == CH_E_USAGE);
    ch_system_stats(s, NULL);
    CHECK(ch_system_integrate(s, 0.1, NULL, 0, &err) == 0); /* still usable */
    ch_system_free(s);
}

/* A temporary file's whole text (malloc'd), rewound first. */
static char *slurp(FILE *f)
{
    long n;
    char *s;
    if (fseek(f, 0, SEEK_END) || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET)) return NULL;
    if (!(s = calloc((size_t)n + 1, 1))) return NULL;
    if (fread(s, 1, (size_t)n, f) != (size_t)n) {
        free(s);
        return NULL;
    }
    return s;
}

/* The services of the command line: the derivation, emitted code,
 * driver files, the audit, the run options. A form's emitted text does
 * not depend on the forms emitted before it from the same problem (they
 * share kernels). */
static void test_commands(void)
{
    ch_err err;
    ch_problem *pb = ch_problem_parse("knife.nh", knife, strlen(knife), &err);
    ch_problem *pb2 = ch_problem_parse("knife.nh", knife, strlen(knife), &err);
    CHECK(pb && pb2);
    if (!pb || !pb2) return;
    FILE *f = tmpfile();
    CHECK(f != NULL);
    if (f) {
        CHECK(ch_problem_write_derivation(pb, "json", "energy,H_star", f, &err) == 0);
        char *s = slurp(f);
        CHECK(s && s[0] == '{' && strstr(s, "\"energy\"") && strstr(s, "\"H_star\"")
              && !strstr(s, "\"L_star\""));
        free(s);
        fclose(f);
    }
    CHECK(ch_problem_write_derivation(pb, "html", NULL, stdout, &err) == CH_E_USAGE);
    CHECK(ch_problem_write_derivation(pb, NULL, "nosuch", stdout, &err) == CH_E_USAGE);

    char *h[2] = {NULL, NULL}, *c[2] = {NULL, NULL}, *x, *y;
    size_t hl, cl;
    CHECK(ch_problem_emit(pb, "reduced", NULL, &h[0], &hl, &c[0], &cl, &err) == 0);
    CHECK(h[0] && strlen(h[0]) == hl && c[0] && strlen(c[0]) == cl);
    CHECK(h[0] && strstr(h[0], "knife_reduced_rhs(") != NULL);
    CHECK(ch_problem_emit(pb2, "full", "kf", &x, &hl, &y, &cl, &err) == 0);
    CHECK(x && strstr(x, "kf_rhs(") != NULL);
    free(x), free(y);
    CHECK(ch_problem_emit(pb2, "hamilton", NULL, &x, &hl, &y, &cl, &err) == 0);
    free(x), free(y);
    CHECK(ch_problem_emit(pb2, "reduced", NULL, &h[1], &hl, &c[1], &cl, &err) == 0);
    CHECK(h[0] && h[1] && !strcmp(h[0], h[1]) && c[0] && c[1] && !strcmp(c[0], c[1]));
    for (int i = 0; i < 2; i++) free(h[i]), free(c[i]);
    CHECK(ch_problem_emit(pb, "reduced", "2x", &x, &hl, &y, &cl, &err) == CH_E_USAGE);
    CHECK(!ch_prefix_valid("2x") && ch_prefix_valid("knife_reduced") && !ch_prefix_valid(NULL));

    const char *name;
    char *text;
    size_t len, i = 0, seen = 0;
    int r;
    while ((r = ch_driver_file("knife_reduced", i, &name, &text, &len, &err)) == 0) {
        CHECK(text && strlen(text) == len);
        if (i == 0) CHECK(!strcmp(name, "main.c") && strstr(text, "knife_reduced.h"));
        seen += !strcmp(name, "simulate.c");
        free(text);
        i++;
    }
    CHECK(r == 1 && seen == 1 && i >= 4);

    ch_check_options o = {0, 16, 1, 0, NULL, NULL};
    char *report, *svg;
    size_t skipped = 9;
    CHECK(ch_problem_check(pb, &o, &report, &svg, &skipped, &err) == 0);
    CHECK(report && strstr(report, "check knife") && strstr(report, "I1"));
    CHECK(svg && !strncmp(svg, "<?xml", 5) && skipped == 0);
    free(report), free(svg);
    o.json = 1, o.loop = 0, o.loop_svg = 0;
    CHECK(ch_problem_check(pb, &o, &report, &svg, NULL, &err) == 0);
    CHECK(report && report[0] == '{' && svg == NULL);
    free(report);
    o.loop = 3;
    CHECK(ch_problem_check(pb, &o, &report, &svg, NULL, &err) == CH_E_USAGE);

    char *ok[] = {"--t1", "2", "--dt=0.1", "--set", "g=1"}, *bad[] = {"--rtol", "x"};
    CHECK(ch_run_args_check(5, ok, &err) == 0);
    CHECK(ch_run_args_check(2, bad, &err) == CH_E_USAGE && strstr(err.msg, "--rtol"));
    CHECK(ch_run_option_takes_value("--dt") && !ch_run_option_takes_value("--dt=1")
          && !ch_run_option_takes_value("--stats"));
    ch_problem_free(pb);
    ch_problem_free(pb2);
}

/* ch_problem_run writes what `chetaev run` writes: its last row agrees
 * with ch_system_integrate to the same time (the same loop and options),
 * and the plot is drawn. A plot column that does not exist is refused
 * before anything runs. */
static void test_run(void)
{
    ch_err err;
    ch_problem *pb = ch_problem_parse("knife.nh", knife, strlen(knife), &err);
    char path[] = "/tmp/chetaev_api_run_XXXXXX";
    int fd = mkstemp(path);
    CHECK(pb && fd >= 0);
    if (!pb || fd < 0) return;
    close(fd);
    char *svg = NULL, *argv[] = {"test run", "--t1", "1.5", "--set", "g=2", "-o", path};
    ch_run_options o = {"reduced", NULL, 0, &svg, NULL, NULL, 0};
    CHECK(ch_problem_run(pb, &o, 7, argv, &err) == 0);
    CHECK(svg && !strncmp(svg, "<?xml", 5));
    free(svg);
    FILE *f = fopen(path, "r");
    char *csv = f ? slurp(f) : NULL;
    if (f) fclose(f);
    remove(path);
    CHECK(csv && !strncmp(csv, "t,x,y,phi,x'", 12));
    ch_system *s = ch_system_compile(pb, "reduced", NULL, &err);
    CHECK(s && ch_system_set_param(s, "g", 2, &err) == 0 && ch_system_reset(s, &err) == 0
          && ch_system_integrate(s, 1.5, NULL, 0, &err) == 0);
    if (csv && s) { /* the state's columns of the last row, found by name */
        char *last = csv + strlen(csv) - 1, *hdr_end = strchr(csv, '\n');
        while (last > csv && last[-1] != '\n') last--;
        double row[64], worst = 0;
        int ncol = 0, found = 0;
        for (char *p = last; ncol < 64 && *p && *p != '\n'; p++) {
            row[ncol++] = strtod(p, &p);
            if (*p != ',') break;
        }
        CHECK(ncol > 0 && row[0] == 1.5);
        for (int i = 0; hdr_end && i < ch_system_nx(s); i++) {
            const char *name = ch_system_state_name(s, i), *h = csv;
            for (int col = 0; col < ncol && h < hdr_end; col++) {
                size_t n = strcspn(h, ",\n");
                if (n == strlen(name) && !strncmp(h, name, n)) {
                    double d = fabs(row[col] - ch_system_state(s)[i]);
                    if (!(d <= worst)) worst = d;
                    found++;
                }
                h += n + 1;
            }
        }
        CHECK(found == ch_system_nx(s));
        CHECK_MSG(worst == 0, "run and ch_system_integrate differ by %g", worst);
    }
    free(csv);
    ch_system_free(s);
    const char *cols[] = {"nosuch"};
    ch_run_options bad = {NULL, NULL, 0, &svg, NULL, cols, 1};
    char *argv2[] = {"test run", "--t1", "0.1", "-o", "/nonexistent/x.csv"};
    CHECK(ch_problem_run(pb, &bad, 5, argv2, &err) == -1 && err.code == CH_E_USAGE
          && strstr(err.msg, "nosuch"));
    ch_problem_free(pb);
}

/* What the repl needs of the API: the model's names, constraint
 * residuals (zero on a trajectory, an independent check), the initial
 * state of `run --init` taken together, rows with their column names, a
 * plot of rows, the sections, the methods; the defaults the header
 * promises are the runtime's. */
static int count_row(void *ctx, const double *v, int n)
{
    double *st = ctx; /* rows, -, the last row's t */
    (void)n;
    st[0]++;
    st[2] = v[0];
    return 0;
}

static void test_repl_services(void)
{
    CHECK(CH_DEFAULT_RTOL == CHRT_RTOL && CH_DEFAULT_ATOL == CHRT_ATOL
          && CH_FIXED_DT == CHRT_FIXED_DT && CH_PLOT_SERIES_MAX == CH_PLOT_MAX_SERIES);
    CHECK(ch_method_adaptive("dop853") == 1 && ch_method_adaptive("rk4") == 0
          && ch_method_adaptive("leapfrog") == -1);
    CHECK_STR(ch_method_name("dopri5"), "rk45");
    double val;
    ch_err perr;
    CHECK(ch_parse_value("pi/2", &val, &perr) == 0 && val == 1.5707963267948966);
    CHECK(ch_parse_value("-2^2", &val, &perr) == 0 && val == -4);
    CHECK(ch_parse_value("1 ", &val, &perr) == CH_E_USAGE && ch_parse_value("0x10", &val, &perr));
    CHECK(ch_parse_value("1e-400", &val, &perr) == CH_E_USAGE && strstr(perr.msg, "underflows"));
    CHECK(ch_method_name("leapfrog") == NULL);
    ch_err err;
    ch_problem *pb = ch_problem_parse("knife.nh", knife, strlen(knife), &err);
    CHECK(pb != NULL);
    if (!pb) return;
    CHECK(ch_problem_nq(pb) == 3 && ch_problem_nconstraints(pb) == 1 && ch_problem_np(pb) == 5);
    CHECK_STR(ch_problem_coordinate(pb, 2), "phi");
    CHECK_STR(ch_problem_param_name(pb, 2), "g");
    CHECK(ch_problem_param_default(pb, 2) == 9.81 && isnan(ch_problem_param_default(pb, 5)));
    CHECK(ch_problem_holonomic(pb, 0) == 0 && ch_problem_holonomic(pb, 1) == -1);
    CHECK_STR(ch_problem_section(pb, 0), "model");
    CHECK(ch_problem_section(pb, 1000) == NULL);
    /* phi = sin(phi) x' - cos(phi) y' at a point off the constraint */
    double q[3] = {0.1, 0.2, 0.5}, qt[3] = {1, 2, 3}, p[5] = {1, 0.2, 9.81, 0.5, 0.1}, phi, g;
    CHECK(ch_problem_constraints(pb, 0, q, qt, p, &phi, &g, &err) == 0);
    CHECK(fabs(phi - (sin(0.5) - 2 * cos(0.5))) < 1e-15 && fabs(g - phi) < 1e-15);

    ch_system *s = ch_system_compile(pb, "reduced", NULL, &err);
    CHECK(s != NULL);
    if (!s) {
        ch_problem_free(pb);
        return;
    }
    /* x' = 2 and x = 0.5 together, as run --init x'=2 --init x=0.5 */
    const char *names[] = {"x'", "x"};
    double values[] = {2, 0.5}, vel[3];
    char warning[256];
    CHECK(ch_system_set_param(s, "g", 0, &err) == 0);
    CHECK(ch_system_set_initial(s, 2, names, values, warning, sizeof warning, &err) == 0);
    CHECK(ch_system_velocities(s, vel, &err) == 0 && vel[0] == 2 && ch_system_state(s)[0] == 0.5);
    CHECK(ch_system_set_initial(s, 1, (const char *[]){"nosuch"}, values, NULL, 0, &err)
          == CH_E_USAGE);
    CHECK_STR(ch_system_column_name(s, 0), "t");
    CHECK_STR(ch_system_column_name(s, 4), "x'");
    CHECK(ch_system_column_name(s, ch_system_ncolumns(s)) == NULL);
    double st[3] = {0, 0, 0};
    ch_rows rows = {count_row, NULL, st, 1, 0.1};
    CHECK(ch_system_integrate_rows(s, 1, NULL, 0, &rows, &err) == 0);
    CHECK_MSG(st[0] == 11 && st[2] == 1, "%g rows, last at t = %g", st[0], st[2]);
    /* the trajectory is on the constraint */
    CHECK(ch_system_velocities(s, vel, &err) == 0);
    CHECK(ch_problem_constraints(pb, 1, ch_system_state(s), vel, ch_system_params(s), &phi,
                                 NULL, &err) == 0 && fabs(phi) < 1e-12);
    const char *cols[] = {"t", "x", "y"};
    double tab[] = {0, 0, 0, 1, 1, 2, 2, 4, 3};
    char *svg = NULL;
    CHECK(ch_plot_rows(&svg, "t", 3, cols, 3, tab, "x", 1, cols + 2, &err) == 0);
    CHECK(svg && strstr(svg, "<svg"));
    free(svg);
    CHECK(ch_plot_rows(&svg, "t", 3, cols, 3, tab, NULL, 1, (const char *[]){"z"}, &err) != 0);
    ch_system_free(s);
    ch_problem_free(pb);
}

/* Column names are unique whatever the model names: coordinates E,
 * phi1, lambda1 and R_x push the energy, constraint, multiplier and
 * reaction columns to E_, phi1_, lambda1_ and R_x_ in every form. */
static void test_unique_columns(void)
{
    static const char dup[] =
        "model dup\ncoordinates E phi1 lambda1 R_x x\n"
        "lagrangian (E'^2 + phi1'^2 + lambda1'^2 + R_x'^2 + x'^2)/2 - E^2/2\n"
        "constraint E' - phi1' = 0\ninitial E'=1 x'=0.5\n";
    static const char *const forms[] = {"full", "reduced", "hamilton"};
    ch_err err;
    ch_problem *pb = ch_problem_parse("dup.nh", dup, strlen(dup), &err);
    CHECK_MSG(pb != NULL, "%s", err.msg);
    for (int f = 0; pb && f < 3; f++) {
        ch_system *s = ch_system_compile(pb, forms[f], NULL, &err);
        CHECK_MSG(s != NULL, "%s: %s", forms[f], err.msg);
        if (!s) continue;
        int n = ch_system_ncolumns(s), dups = 0;
        for (int i = 0; i < n; i++)
            for (int j = i + 1; j < n; j++)
                dups += !strcmp(ch_system_column_name(s, i), ch_system_column_name(s, j));
        CHECK_MSG(dups == 0, "%s: %d duplicate column names", forms[f], dups);
        CHECK_STR(ch_system_column_name(s, 1 + 2 * ch_system_nq(s)), "E_");
        int found = 0;
        for (int i = 0; i < n; i++) {
            const char *c = ch_system_column_name(s, i);
            found += !strcmp(c, "lambda1_") || !strcmp(c, "R_x_") || !strcmp(c, "phi1_");
        }
        CHECK_MSG(found == (f == 0 ? 3 : 2), "%s: %d renamed outputs", forms[f], found);
        ch_system_free(s);
    }
    ch_problem_free(pb);
}

int main(void)
{
    RUN(test_bad_arguments);
    RUN(test_newton_start);
    RUN(test_recharting);
    RUN(test_errors);
    RUN(test_queries);
    RUN(test_stepping);
    RUN(test_set_state);
    RUN(test_hamilton);
    RUN(test_adaptive);
    RUN(test_warnings);
    RUN(test_events_cvode);
    RUN(test_commands);
    RUN(test_run);
    RUN(test_repl_services);
    RUN(test_unique_columns);
    return check_summary("api");
}
