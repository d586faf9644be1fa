/* test_loop.c — Poincaré–Cartan loops (gen/jit/loop.h): the start value is the
 * exact -m pi radius^2 (spectral trapezoid rule); Poincaré's invariant is
 * conserved by rk4 to 1e-8 for the double pendulum (k = 0) and for the
 * holonomic pendulum_xy (loop restored onto the constraint), while Euler,
 * which is not symplectic, visibly breaks it; nonholonomic examples run
 * and give finite values (printed, not judged); a model without H*, bad
 * arguments and a blowing-up step are refused with the documented codes. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "mech/mechanics.h"
#include "jit/loop.h"

#ifndef SRCDIR
#define SRCDIR "."
#endif

static const double pi = 3.14159265358979323846;

/* Loads and derives; NULL (with a failed check) when that fails. */
static ch_mechanics *derive(ch_ctx *ctx, const char *path, const char *text)
{
    ch_model *m;
    ch_mechanics *d;
    ch_error err;
    ch_error_clear(&err);
    int rc = text ? ch_model_parse(ctx, path, text, strlen(text), &m, &err)
                  : ch_model_load(ctx, path, &m, &err);
    if (!rc) rc = ch_mechanics_derive(ctx, m, &d, &err);
    CHECK_MSG(rc == 0, "%s: %s", path, err.msg);
    return rc ? NULL : d;
}

/* Runs a loop on an example; returns the status, res filled on success. */
static int loop_example(const char *stem, size_t N, const ch_loop_options *o,
                        ch_loop_result *res, ch_error *err)
{
    char path[512];
    snprintf(path, sizeof path, "%s/examples/%s.nh", SRCDIR, stem);
    ch_ctx *ctx = ch_ctx_new();
    ch_mechanics *d = derive(ctx, path, NULL);
    ch_error_clear(err);
    int rc = d ? ch_loop_run(ctx, d, N, o, res, err) : -1;
    ch_ctx_free(ctx);
    return rc;
}

static void test_double_pendulum(void)
{
    ch_loop_options o;
    ch_loop_options_default(&o);
    CHECK(o.method == CHRT_RK4 && o.dt == 1e-3 && o.t1 == 1.0);
    ch_loop_result res;
    ch_error err;
    int rc = loop_example("double_pendulum", 64, &o, &res, &err);
    CHECK_MSG(rc == 0, "%s", err.msg);
    if (rc) return;
    double want = -2 * pi * o.radius * o.radius; /* m = 2 */
    CHECK(res.points == 64 && res.t1 == 1.0);
    CHECK_NEAR(res.I_start, want, 1e-13 * fabs(want));
    CHECK_MSG(res.relative_drift < 1e-8, "rk4 drift %g", res.relative_drift);
    CHECK(isfinite(res.I_end) && res.I_end != res.I_start); /* it did move */
    fprintf(stderr, "double_pendulum rk4 N=64: I_start %.17g I_end %.17g drift %.3g\n",
            res.I_start, res.I_end, res.relative_drift);
    /* The measurement can fail: Euler is not symplectic. */
    o.method = CHRT_EULER;
    rc = loop_example("double_pendulum", 64, &o, &res, &err);
    CHECK_MSG(rc == 0, "%s", err.msg);
    CHECK_MSG(rc == 0 && res.relative_drift > 1e-3, "euler drift %g", res.relative_drift);
    fprintf(stderr, "double_pendulum euler N=64: drift %.3g\n", res.relative_drift);
    /* More points and a larger loop agree: the quadrature is converged. */
    ch_loop_options_default(&o);
    o.radius = 1e-2;
    rc = loop_example("double_pendulum", 128, &o, &res, &err);
    CHECK_MSG(rc == 0 && res.relative_drift < 1e-8, "%s drift %g", err.msg,
              rc ? 0.0 : res.relative_drift);
    CHECK_NEAR(res.I_start, -2 * pi * 1e-4, 1e-13 * 2 * pi * 1e-4);
    /* The system compiler gives the same verdict. */
    ch_loop_options_default(&o);
    o.compiler = CH_COMPILER_CC;
    rc = loop_example("double_pendulum", 64, &o, &res, &err);
    CHECK_MSG(rc == 0 && res.relative_drift < 1e-8, "cc: %s drift %g", err.msg,
              rc ? 0.0 : res.relative_drift);
}

/* A holonomic constraint (k = 1): the loop is put back on the constraint
 * level set, where the motion is Hamiltonian in (x, y_x), so I1 is
 * conserved too. Without that correction the drift was 0.24. */
static void test_holonomic(void)
{
    ch_loop_result res;
    ch_error err;
    int rc = loop_example("pendulum_xy", 64, NULL, &res, &err);
    CHECK_MSG(rc == 0, "%s", err.msg);
    if (rc) return;
    CHECK_NEAR(res.I_start, -pi * 1e-6, 1e-13 * pi * 1e-6); /* m = 1 */
    CHECK_MSG(res.relative_drift < 1e-8, "drift %g", res.relative_drift);
    fprintf(stderr, "pendulum_xy rk4 N=64: I_start %.17g I_end %.17g drift %.3g\n",
            res.I_start, res.I_end, res.relative_drift);
}

/* Nonholonomic examples: the value is reported, only finiteness tested. */
static void test_nonholonomic(void)
{
    static const char *const stems[] = {"chaplygin_sleigh", "knife_edge"};
    for (size_t i = 0; i < 2; i++) {
        ch_loop_result res;
        ch_error err;
        int rc = loop_example(stems[i], 64, NULL, &res, &err);
        CHECK_MSG(rc == 0, "%s: %s", stems[i], err.msg);
        if (rc) continue;
        CHECK(isfinite(res.I_start) && isfinite(res.I_end) && isfinite(res.relative_drift));
        CHECK(res.I_start < 0); /* -m pi r^2 with m = 2 */
        fprintf(stderr, "%s rk4 N=64: I_start %.17g I_end %.17g drift %.3g\n", stems[i],
                res.I_start, res.I_end, res.relative_drift);
    }
}

static void test_refusals(void)
{
    /* Constant speed: L* does not depend on the velocities, no H*. */
    static const char text[] =
        "model speed\ncoordinates x y\nlagrangian (x'^2 + y'^2)/2\n"
        "constraint x'^2 + y'^2 = 1\ndependent y'\ninitial x'=0.6 y'=0.8\n";
    ch_ctx *ctx = ch_ctx_new();
    ch_mechanics *d = derive(ctx, "speed.nh", text);
    ch_loop_result res;
    ch_error err;
    if (d) {
        CHECK(!d->ham.exists);
        ch_error_clear(&err);
        CHECK(ch_loop_run(ctx, d, 64, NULL, &res, &err) == CH_ERR_MODEL);
        CHECK(strstr(err.msg, "Hamiltonian form does not exist") != NULL);
    }
    ch_ctx_free(ctx);

    ctx = ch_ctx_new();
    d = derive(ctx, SRCDIR "/examples/double_pendulum.nh", NULL);
    if (d) {
        ch_loop_options o;
        ch_loop_options_default(&o);
        CHECK(ch_loop_run(ctx, d, 4, &o, &res, &err) == CH_ERR_USAGE);
        CHECK(strstr(err.msg, "points") != NULL);
        CHECK(ch_loop_run(ctx, d, CH_LOOP_MAX_POINTS + 1, &o, &res, &err) == CH_ERR_USAGE);
        o.radius = 0;
        CHECK(ch_loop_run(ctx, d, 64, &o, &res, &err) == CH_ERR_USAGE);
        ch_loop_options_default(&o);
        o.dt = NAN;
        CHECK(ch_loop_run(ctx, d, 64, &o, &res, &err) == CH_ERR_USAGE);
        ch_loop_options_default(&o);
        o.method = (chrt_method)42;
        CHECK(ch_loop_run(ctx, d, 64, &o, &res, &err) == CH_ERR_USAGE);
    }
    ch_ctx_free(ctx);
}

/* A step that blows up is CH_ERR_NUMERIC naming the point and t. */
static void test_numeric_failure(void)
{
    static const char text[] =
        "model blow\ncoordinates x\nlagrangian x'^2/2 + x^4*1e300\ninitial x=1e3\n";
    ch_ctx *ctx = ch_ctx_new();
    ch_mechanics *d = derive(ctx, "blow.nh", text);
    if (d) {
        ch_loop_result res;
        ch_error err;
        ch_error_clear(&err);
        int rc = ch_loop_run(ctx, d, 16, NULL, &res, &err);
        CHECK_MSG(rc == CH_ERR_NUMERIC, "rc %d: %s", rc, err.msg);
        CHECK(strstr(err.msg, "loop point 0") != NULL && strstr(err.msg, "t = ") != NULL);
    }
    ch_ctx_free(ctx);
}

int main(void)
{
    RUN(test_double_pendulum);
    RUN(test_holonomic);
    RUN(test_nonholonomic);
    RUN(test_refusals);
    RUN(test_numeric_failure);
    return check_summary("loop");
}
