/* test_api.c — the public library API (gen/chetaev.h): loading, errors,
 * queries, parameters, state setting, stepwise integration. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "chetaev.h"
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
    CHECK(ch_system_integrate(s, 1, NULL, 0, &err) == CH_E_USAGE);
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

/* The knife edge with c = 0 and phi' = 1 turns at a constant rate: the
 * chart of `dependent y'` is singular at phi = pi/2 + j pi. The reduced
 * and hamilton systems switch charts there (six times up to t = 10, the
 * state's names following) and end where the full form, which has no
 * chart, does; with re-charting off they stop at the first switch. */
static void test_recharting(void)
{
    ch_err err;
    double qt[3][3], x[3][6];
    const char *forms[3] = {"full", "reduced", "hamilton"};
    for (int f = 0; f < 3; f++) {
        ch_system *s = compile_knife(forms[f]);
        if (!s) return;
        CHECK(ch_system_set_param(s, "c", 0, &err) == 0);
        CHECK(ch_system_set_state(s, "phi'", 1, &err) == 0);
        CHECK_STR(ch_system_chart(s), f ? "y'" : "");
        CHECK(ch_system_chart_quality(s) == 1.0); /* phi = 0: |cos(phi)| */
        CHECK_MSG(ch_system_integrate(s, 10, "rk4", 1e-4, &err) == 0, "%s", err.msg);
        CHECK(ch_system_recharts(s) == (f ? 6 : 0));
        CHECK_STR(ch_system_chart(s), f ? "y'" : ""); /* after an even number */
        CHECK(ch_system_velocities(s, qt[f], &err) == 0);
        memcpy(x[f], ch_system_state(s), (size_t)ch_system_nx(s) * sizeof x[f][0]);
        if (f) {
            /* off: the first switch at phi = pi/2 - asin(0.01) is a failure */
            CHECK(ch_system_set_rechart(s, 0, 0.01, &err) == 0);
            CHECK(ch_system_set_rechart(s, 0, -1, &err) == CH_E_USAGE);
            CHECK(ch_system_set_state_vector(s, 0, x[f], &err) == 0);
            CHECK(ch_system_set_state(s, "phi", 0, &err) == 0);
            CHECK(ch_system_integrate(s, 10, "rk4", 1e-3, &err) == CH_E_NUMERIC);
            CHECK_NEAR(ch_system_time(s), 1.561, 1e-9);
            CHECK(strstr(err.msg, "the chart is singular") != NULL);
        }
        ch_system_free(s);
    }
    for (int f = 1; f < 3; f++)
        for (int i = 0; i < 3; i++) {
            CHECK_NEAR(x[f][i], x[0][i], 1e-8);
            CHECK_NEAR(qt[f][i], qt[0][i], 1e-8);
        }
}

int main(void)
{
    RUN(test_recharting);
    RUN(test_errors);
    RUN(test_queries);
    RUN(test_stepping);
    RUN(test_set_state);
    RUN(test_hamilton);
    return check_summary("api");
}
