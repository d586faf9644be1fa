/* test_hamilton.c — H* and the Poincaré–Hamilton equations (THEORY §5).
 *
 * On the constraint manifold, with q_tt of the true motion (the manifold
 * sampler), every model must satisfy:
 *   H*(y*(q_t)) = E*                      (002: H* is E* written in y)
 *   eta(y*(q_t)) = q_t_r,  d H* / d y_r = q_t_r at y = y*   (Legendre)
 *   alpha(eta(y*)) = q_t_dep
 *   d/dt y*_r = yt_r(y*(q_t))             (PH = the reduced motion)
 * plus closed forms for unconstrained systems, the q_tt elimination for
 * alpha nonlinear in the velocities, the seed's wrong sign rejected, and
 * every "no H*" reason. */
#include <string.h>

#include "check.h"
#include "core/diff.h"
#include "core/eval.h"
#include "mech/hamilton.h"
#include "lang/model.h"
#include "core/subst.h"

#ifndef SRCDIR
#define SRCDIR "."
#endif

#define POINTS 8

typedef struct {
    ch_ctx *ctx;
    ch_model *m;
    ch_lagrange L;
    ch_manifold mf;
    ch_reduced r;
    ch_hamilton h;
} sys;

/* Parses (text) or loads (examples/name) and derives up to the reduced
 * form; 0 on success. */
static int sys_open(sys *s, const char *name, const char *text)
{
    memset(s, 0, sizeof *s);
    s->ctx = ch_ctx_new();
    ch_error err;
    ch_error_clear(&err);
    int rc;
    if (text)
        rc = ch_model_parse(s->ctx, name, text, strlen(text), &s->m, &err);
    else {
        char path[512];
        snprintf(path, sizeof path, "%s/examples/%s", SRCDIR, name);
        rc = ch_model_load(s->ctx, path, &s->m, &err);
    }
    if (!rc) rc = ch_lagrange_derive(s->ctx, s->m, &s->L, &err);
    if (!rc) rc = ch_manifold_init(s->ctx, s->m, &s->L, NULL, &s->mf, &err);
    if (!rc) rc = ch_reduce_derive(s->ctx, &s->mf, &s->r, &err);
    CHECK_MSG(rc == 0, "%s: %s", name, err.msg);
    return rc;
}

/* sys_open and ch_hamilton_derive. */
static int sys_derive(sys *s, const char *name, const char *text)
{
    if (sys_open(s, name, text)) return -1;
    ch_error err;
    ch_error_clear(&err);
    int rc = ch_hamilton_derive(s->ctx, &s->r, &s->h, &err);
    CHECK_MSG(rc == 0, "%s: %s", name, err.msg);
    return rc;
}

static void sys_close(sys *s) { ch_ctx_free(s->ctx); }

static ch_zero_verdict on_manifold(sys *s, const ch_expr *e)
{
    return ch_zero_test(s->ctx, e, ch_manifold_sample, &s->mf, POINTS).verdict;
}

/* e(t, q, y) at y = y*(t, q, q_t). */
static const ch_expr *at_ystar(sys *s, const ch_expr *e)
{
    return ch_subst(s->ctx, e, s->h.m, s->h.y, s->r.y_star);
}

static const ch_expr *indep_vel(sys *s, size_t r)
{
    return s->m->qt[s->mf.indep[r]];
}

/* The identities of the header comment. */
static void check_consistency(sys *s, const char *name)
{
    ch_ctx *ctx = s->ctx;
    CHECK_MSG(s->h.exists, "%s: no H*: %s", name, s->h.reason ? s->h.reason : "");
    if (!s->h.exists) return;
    CHECK_MSG(s->h.reason == NULL, "%s", name);
    CHECK_MSG(s->h.quadratic, "%s", name);
    CHECK_MSG(on_manifold(s, ch_sub(ctx, at_ystar(s, s->h.H), s->r.E_star)) == CH_ZERO_YES,
              "%s: H*(y*) != E*", name);
    CHECK_MSG(!ch_has_sym_kind(s->h.H, CH_SYM_VEL), "%s: H* has velocities", name);
    for (size_t r = 0; r < s->h.m; r++) {
        const ch_expr *v = indep_vel(s, r);
        CHECK_MSG(on_manifold(s, ch_sub(ctx, at_ystar(s, s->h.eta[r]), v)) == CH_ZERO_YES,
                  "%s: eta_%zu(y*) != q_t", name, r);
        CHECK_MSG(on_manifold(s, ch_sub(ctx, at_ystar(s, s->h.qt[r]), v)) == CH_ZERO_YES,
                  "%s: dH/dy_%zu(y*) != q_t", name, r);
        /* the PH equations reproduce the reduced motion */
        const ch_expr *dy = ch_reduce_dt(ctx, &s->r, s->r.y_star[r]);
        CHECK_MSG(on_manifold(s, ch_sub(ctx, dy, at_ystar(s, s->h.yt[r]))) == CH_ZERO_YES,
                  "%s: d/dt y*_%zu != yt", name, r);
        CHECK_MSG(!ch_has_sym_kind(s->h.yt[r], CH_SYM_VEL) &&
                      !ch_has_sym_kind(s->h.yt[r], CH_SYM_ACC),
                  "%s: yt_%zu not in phase space", name, r);
        /* a wrong right side is caught (the test can fail) */
        const ch_expr *off = ch_add(ctx, s->h.yt[r], s->m->q[0]);
        CHECK_MSG(on_manifold(s, ch_sub(ctx, dy, at_ystar(s, off))) == CH_ZERO_NO,
                  "%s: perturbed yt_%zu accepted", name, r);
    }
    for (size_t nu = 0; nu < s->h.k; nu++) {
        CHECK_MSG(s->h.qt_dep != NULL, "%s: qt_dep missing", name);
        if (!s->h.qt_dep) break;
        const ch_expr *v = s->m->qt[s->mf.dep[nu]];
        CHECK_MSG(on_manifold(s, ch_sub(ctx, at_ystar(s, s->h.qt_dep[nu]), v)) == CH_ZERO_YES,
                  "%s: alpha(eta(y*)) != q_t_dep", name);
    }
    /* K is the Hessian of L* and symmetric */
    for (size_t r = 0; r < s->h.m; r++)
        for (size_t c = 0; c < s->h.m; c++) {
            CHECK(s->h.K[r * s->h.m + c] == s->h.K[c * s->h.m + r]);
            const ch_expr *d2 = ch_diff(ctx, s->r.y_star[r], indep_vel(s, c));
            CHECK_MSG(on_manifold(s, ch_sub(ctx, d2, s->h.K[r * s->h.m + c])) == CH_ZERO_YES,
                      "%s: K_%zu%zu", name, r, c);
        }
}

static void check_momentum_names(sys *s)
{
    for (size_t r = 0; r < s->h.m; r++) {
        char want[128];
        snprintf(want, sizeof want, "y_%s", ch_sym_of(s->m->q[s->mf.indep[r]])->name);
        CHECK_STR(ch_sym_of(s->h.y[r])->name, want);
        CHECK(ch_sym_of(s->h.y[r])->kind == CH_SYM_OTHER);
    }
}

static void test_examples(void)
{
    static const struct {
        const char *name;
        const char *why; /* NULL: H* exists; else a word of the reason */
    } ex[] = {
        {"knife_edge.nh", NULL},      {"chaplygin_sleigh.nh", NULL},
        {"vertical_disk.nh", NULL},   {"double_pendulum.nh", NULL},
        {"pendulum_xy.nh", NULL},     {"appell_hamel.nh", NULL},
        {"moving_belt.nh", NULL},     {"pars_affine.nh", NULL},
        {"pars_affine_free.nh", NULL}, {"pars_affine_harmonic.nh", NULL},
        {"nonlinear_slope.nh", "not quadratic"},
        {"exp_constraint.nh", "no closed form in the"}};
    for (size_t i = 0; i < sizeof ex / sizeof ex[0]; i++) {
        sys s;
        if (sys_derive(&s, ex[i].name, NULL) == 0) {
            check_momentum_names(&s);
            if (!ex[i].why)
                check_consistency(&s, ex[i].name);
            else
                CHECK_MSG(!s.h.exists && !s.h.degenerate && s.h.reason &&
                              strstr(s.h.reason, ex[i].why),
                          "%s: exists %d, reason '%s'", ex[i].name, s.h.exists,
                          s.h.reason ? s.h.reason : "(null)");
        }
        sys_close(&s);
    }
}

/* k = 0: the ordinary Hamiltonian, H = E at y = p and yt = -dH/dq. */
static void test_double_pendulum(void)
{
    sys s;
    if (sys_derive(&s, "double_pendulum.nh", NULL) == 0 && s.h.exists) {
        ch_ctx *ctx = s.ctx;
        CHECK(s.h.m == 2 && s.h.k == 0);
        const ch_expr *Hp = ch_subst(ctx, s.h.H, 2, s.h.y, s.L.p);
        CHECK(ch_zero_test(ctx, ch_sub(ctx, Hp, s.L.energy), NULL, NULL, POINTS).verdict
              == CH_ZERO_YES);
        for (size_t r = 0; r < 2; r++) {
            const ch_expr *want = ch_neg(ctx, ch_diff(ctx, s.h.H, s.m->q[r]));
            CHECK(ch_zero_test(ctx, ch_sub(ctx, s.h.yt[r], want), NULL, NULL, POINTS).verdict
                  == CH_ZERO_YES);
            CHECK(ch_zero_test(ctx, ch_sub(ctx, s.h.qt[r], s.h.eta[r]), NULL, NULL, POINTS)
                      .verdict == CH_ZERO_YES);
        }
    }
    sys_close(&s);
}

/* Closed form with a gyroscopic term and a force:
 * H = (y - sin t)^2/(2m) + k x^2/2, yt = -k x - c x'. */
static void test_oscillator(void)
{
    sys s;
    const char *text = "coordinates x\nparameters m=2 k=3 c=1/2\n"
                       "lagrangian m/2*x'^2 - k/2*x^2 + x'*sin(t)\n"
                       "force x = -c*x'\n";
    if (sys_derive(&s, "osc.nh", text) == 0 && s.h.exists) {
        ch_ctx *ctx = s.ctx;
        const ch_expr *y = ch_symbol_find(ctx, "y_x"), *x = s.m->q[0];
        const ch_expr *mm = ch_symbol_find(ctx, "m"), *k = ch_symbol_find(ctx, "k");
        const ch_expr *c = ch_symbol_find(ctx, "c");
        CHECK(y == s.h.y[0]);
        /* p = m x' + sin t: x' = (y - sin t)/m */
        const ch_expr *v = ch_div(ctx, ch_sub(ctx, y, ch_fun1(ctx, CH_F_SIN, s.m->t)), mm);
        const ch_expr *H = ch_add(ctx, ch_mul(ctx, ch_num_frac(ctx, 1, 2),
                                               ch_mul(ctx, mm, ch_pow_si(ctx, v, 2))),
                                  ch_mul(ctx, ch_num_frac(ctx, 1, 2),
                                         ch_mul(ctx, k, ch_pow_si(ctx, x, 2))));
        CHECK(ch_zero_test(ctx, ch_sub(ctx, s.h.H, H), NULL, NULL, POINTS).verdict
              == CH_ZERO_YES);
        CHECK(ch_zero_test(ctx, ch_sub(ctx, s.h.qt[0], v), NULL, NULL, POINTS).verdict
              == CH_ZERO_YES);
        const ch_expr *yt = ch_sub(ctx, ch_neg(ctx, ch_mul(ctx, k, x)), ch_mul(ctx, c, v));
        CHECK(ch_zero_test(ctx, ch_sub(ctx, s.h.yt[0], yt), NULL, NULL, POINTS).verdict
              == CH_ZERO_YES);
        check_consistency(&s, "osc");
    }
    sys_close(&s);
}

/* The phase-space image of a reduced quantity, for hand-built right
 * sides: q_t_r -> eta, q_t_dep -> alpha(eta). */
static const ch_expr *to_phase(sys *s, const ch_expr *e)
{
    size_t m = s->h.m, k = s->h.k;
    const ch_expr *from[16], *to[16];
    for (size_t r = 0; r < m; r++) {
        from[r] = indep_vel(s, r);
        to[r] = s->h.eta[r];
    }
    for (size_t nu = 0; nu < k; nu++) {
        from[m + nu] = s->m->qt[s->mf.dep[nu]];
        to[m + nu] = s->h.qt_dep[nu];
    }
    return ch_subst(s->ctx, ch_reduce_on_motion(s->ctx, &s->r, e), m + k, from, to);
}

/* 002 prints "- (A)* (dL/deta)*": with that sign the PH equations do not
 * reproduce the reduced motion of a nonholonomic system (THEORY §5). */
static void test_seed_sign_rejected(void)
{
    sys s;
    if (sys_derive(&s, "chaplygin_sleigh.nh", NULL) == 0 && s.h.exists) {
        ch_ctx *ctx = s.ctx;
        size_t m = s.h.m;
        int caught = 0;
        for (size_t r = 0; r < m; r++) {
            const ch_expr *pb = ch_zero(ctx);
            for (size_t nu = 0; nu < s.h.k; nu++)
                pb = ch_add(ctx, pb, ch_mul(ctx, to_phase(&s, s.r.p_star[nu]),
                                            to_phase(&s, s.r.B[nu * m + r])));
            const ch_expr *seed = ch_sub(ctx, s.h.yt[r], ch_scale_si(ctx, 2, pb));
            const ch_expr *dy = ch_reduce_dt(ctx, &s.r, s.r.y_star[r]);
            caught += on_manifold(&s, ch_sub(ctx, dy, at_ystar(&s, seed))) == CH_ZERO_NO;
        }
        CHECK(caught > 0);
    }
    sys_close(&s);
}

/* y* = m x' + 1 written as a quotient that is 0/0 at x' = 0: b* cannot
 * come from substituting q_t = 0 and is taken from y* - K q_t instead. */
static void test_bias_fallback(void)
{
    sys s;
    const char *text = "coordinates x\nparameters m=2\n"
                       "lagrangian m/2*x'^2 + (x'^3 + x'^5)/(x'^2 + x'^4) - x^2/2\n";
    if (sys_derive(&s, "bias.nh", text) == 0) {
        check_consistency(&s, "bias");
        if (s.h.exists) {
            ch_ctx *ctx = s.ctx;
            const ch_expr *want = ch_div(ctx, ch_sub(ctx, s.h.y[0], ch_one(ctx)),
                                         ch_symbol_find(ctx, "m"));
            CHECK(ch_zero_test(ctx, ch_sub(ctx, s.h.eta[0], want), NULL, NULL, POINTS)
                      .verdict == CH_ZERO_YES);
        }
    }
    sys_close(&s);
}

/* Force on the dependent coordinate: the da/dv Q_dep term. */
static void test_knife_edge_forces(void)
{
    sys s;
    const char *text =
        "coordinates x y phi\nparameters m=1 J=0.2 g=9.81 alpha=0.5 c=0.1 d=0.3\n"
        "lagrangian m/2*(x'^2 + y'^2) + J/2*phi'^2 + m*g*sin(alpha)*x\n"
        "constraint sin(phi)*x' - cos(phi)*y' = 0\n"
        "force phi = -c*phi'\nforce y = -d*y' + x\ndependent y'\n";
    if (sys_derive(&s, "knife_forces.nh", text) == 0) check_consistency(&s, "knife_forces");
    sys_close(&s);
}

/* Appell-Hamel: z' = c |v| is nonlinear in the velocities, so B contains
 * q_tt and y_t appears on both sides of the PH equations. */
static void test_appell_hamel(void)
{
    static const char *texts[] = {
        "coordinates x y z\nparameters m=1 g=9.81 c=0.7\n"
        "lagrangian m/2*(x'^2 + y'^2 + z'^2) - m*g*z\n"
        "constraint z' = c*sqrt(x'^2 + y'^2)\ndependent z'\n",
        /* eta depends on t, x and z (dependent) and alpha is not
         * homogeneous (its Hessian does not annihilate q_t), so
         * d eta/dt + d eta/dq q_t enters q_tt with a nonzero coefficient */
        "coordinates x y z\nparameters m=1 g=9.81 c=0.7\n"
        "lagrangian m/2*(x'^2 + (1 + x^2 + z^2)*y'^2 + z'^2) - m*g*z + x*y\n"
        "constraint z' = c*(1 + t^2)*sqrt(1 + x'^2 + y'^2)\n"
        "force x = -y'\ndependent z'\n"};
    for (size_t i = 0; i < 2; i++) {
        sys s;
        if (sys_derive(&s, "appell_hamel.nh", texts[i]) == 0) {
            int acc = 0;
            for (size_t j = 0; j < s.r.k * s.r.m; j++)
                acc |= ch_has_sym_kind(s.r.B[j], CH_SYM_ACC);
            CHECK_MSG(acc, "appell_hamel %zu: B has no q_tt", i);
            check_consistency(&s, i ? "appell_hamel_t" : "appell_hamel");
        }
        sys_close(&s);
    }
}

/* Affine, time-dependent constraint: b* != 0 and depends on t. */
static void test_time_dependent(void)
{
    sys s;
    const char *text = "coordinates x y z\nparameters m=1 g=9.81\n"
                       "lagrangian m/2*(x'^2 + y'^2 + z'^2) - m*g*z\n"
                       "constraint z' = t*x' + cos(t)*y' + t^2\n";
    if (sys_derive(&s, "timedep.nh", text) == 0) {
        check_consistency(&s, "timedep");
        CHECK(s.h.exists && ch_has_sym(s.h.H, s.m->t));
    }
    sys_close(&s);
}

static void expect_no_h(const char *name, const char *text, const char *why)
{
    sys s;
    if (sys_derive(&s, name, text) == 0) {
        CHECK_MSG(!s.h.exists, "%s: H* derived", name);
        CHECK_MSG(s.h.reason && strstr(s.h.reason, why), "%s: reason '%s' lacks '%s'",
                  name, s.h.reason ? s.h.reason : "(null)", why);
        CHECK(s.h.H == NULL && s.h.yt == NULL && s.h.eta == NULL);
        CHECK(s.h.y != NULL && s.h.K != NULL);
        /* Only a degenerate map leaves the emitter nothing to invert
         * numerically. */
        CHECK_MSG(s.h.degenerate == (strcmp(why, "degenerate") == 0),
                  "%s: degenerate flag %d", name, s.h.degenerate);
    }
    sys_close(&s);
}

static void test_no_hamiltonian(void)
{
    /* constant speed: L* = v0^2/2 on the manifold, y* = 0 */
    expect_no_h("speed.nh",
                "coordinates x y\nparameters v0=1\nlagrangian (x'^2 + y'^2)/2\n"
                "constraint x'^2 + y'^2 = v0^2\ndependent y'\n",
                "degenerate");
    /* the same with alpha explicit: L* = v0^2/2 */
    expect_no_h("speedx.nh",
                "coordinates x y\nparameters v0=1\nlagrangian (x'^2 + y'^2)/2\n"
                "constraint y' = sqrt(v0^2 - x'^2)\n",
                "degenerate");
    expect_no_h("speed3.nh",
                "coordinates x y z\nparameters v0=1 g=1\n"
                "lagrangian (x'^2 + y'^2 + z'^2)/2 - g*z\n"
                "constraint x'^2 + y'^2 = v0^2\ndependent y'\n",
                "degenerate");
    /* constraint not linear in the dependent velocity: implicit alpha */
    expect_no_h("implicit.nh",
                "coordinates x y z\nparameters c=1\n"
                "lagrangian (x'^2 + y'^2 + z'^2)/2\n"
                "constraint exp(z' - c*x') = 1 + y'^2\ndependent z'\n",
                "no closed form in the");
    expect_no_h("quartic.nh",
                "coordinates x y\nlagrangian x'^4/12 + x'^2/2 + y'^2/2 - x*y\n",
                "not quadratic");
    expect_no_h("five.nh",
                "coordinates a b c d e\n"
                "lagrangian (a'^2 + b'^2 + c'^2 + d'^2 + e'^2)/2 - a*b*c*d*e\n",
                "up to 4");
}

static void test_quadratic_flag(void)
{
    sys s;
    if (sys_derive(&s, "quartic.nh", "coordinates x\nlagrangian x'^4/12 + x'^2/2\n") == 0)
        CHECK(!s.h.quadratic);
    sys_close(&s);
}

/* A y_<q> name taken by a symbol of another kind is an error. */
static void test_name_clash(void)
{
    sys s;
    if (sys_open(&s, "clash.nh", "coordinates x\nlagrangian x'^2/2\n") == 0) {
        ch_symbol(s.ctx, "y_x", CH_SYM_PARAM, NULL, 0, -1);
        ch_error err;
        ch_error_clear(&err);
        int rc = ch_hamilton_derive(s.ctx, &s.r, &s.h, &err);
        CHECK(rc == CH_ERR_MODEL);
        CHECK_MSG(strstr(err.msg, "'y_x'") != NULL, "message '%s'", err.msg);
    }
    sys_close(&s);
    /* the parser itself keeps model names off y_<q> */
    ch_ctx *ctx = ch_ctx_new();
    ch_model *m = NULL;
    ch_error err;
    ch_error_clear(&err);
    const char *text = "coordinates x\nparameters y_x=1\nlagrangian x'^2/2\n";
    CHECK(ch_model_parse(ctx, "p.nh", text, strlen(text), &m, &err) == CH_ERR_MODEL);
    ch_ctx_free(ctx);
}

int main(void)
{
    RUN(test_examples);
    RUN(test_double_pendulum);
    RUN(test_oscillator);
    RUN(test_seed_sign_rejected);
    RUN(test_bias_fallback);
    RUN(test_knife_edge_forces);
    RUN(test_appell_hamel);
    RUN(test_time_dependent);
    RUN(test_no_hamiltonian);
    RUN(test_quadratic_flag);
    RUN(test_name_clash);
    return check_summary("test_hamilton");
}
