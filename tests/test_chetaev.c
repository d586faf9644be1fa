/* test_chetaev.c — the constraint manifold (choice of dependent velocities,
 * multipliers, sampler) and the Chetaev audit (reactions, balance,
 * homogeneity degrees, the energy verdict, explicit multipliers).
 *
 * Sampler points are checked against the equations they claim to satisfy
 * (phi = 0, E = Q + R, G q_tt + c = 0) as enclosures of 0; the energy
 * verdicts are checked on a table of models whose truth is known from
 * THEORY §3 and seed 003, each decided by the analysis alone. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/buf.h"
#include "check.h"
#include "core/diff.h"
#include "core/eval.h"
#include "mech/chetaev.h"
#include "mech/lagrange.h"
#include "mech/manifold.h"
#include "lang/model.h"

#ifndef SRCDIR
#define SRCDIR "."
#endif

typedef struct {
    ch_ctx *ctx;
    ch_model *m;
    ch_lagrange L;
    ch_manifold mf;
    ch_chetaev C;
    ch_error err;
} sys;

enum { UPTO_MANIFOLD = 1, UPTO_CHETAEV = 2 };

/* Parses text (or loads examples/FILE when text is NULL) and derives up to
 * the given stage; returns the first nonzero status. */
static int build(sys *s, const char *file, const char *text, int upto)
{
    memset(s, 0, sizeof *s);
    s->ctx = ch_ctx_new();
    ch_error_clear(&s->err);
    int rc;
    if (text) {
        rc = ch_model_parse(s->ctx, file, text, strlen(text), &s->m, &s->err);
    } else {
        char path[512];
        snprintf(path, sizeof path, "%s/examples/%s", SRCDIR, file);
        rc = ch_model_load(s->ctx, path, &s->m, &s->err);
    }
    if (rc) return rc;
    if ((rc = ch_lagrange_derive(s->ctx, s->m, &s->L, &s->err))) return rc;
    if ((rc = ch_manifold_init(s->ctx, s->m, &s->L, NULL, &s->mf, &s->err))) return rc;
    if (upto < UPTO_CHETAEV) return 0;
    return ch_chetaev_derive(s->ctx, &s->mf, &s->C, &s->err);
}

static void done(sys *s)
{
    ch_ctx_free(s->ctx);
}

/* The explicit multipliers of s (ch_chetaev_explicit_lambda), NULL when
 * it gives none or fails (the failure is a test failure). */
static const ch_expr **explicit_lambda(sys *s)
{
    const ch_expr **lam = NULL;
    CHECK_MSG(ch_chetaev_explicit_lambda(s->ctx, &s->mf, &lam) == 0, "%s",
              ch_ctx_error(s->ctx)->msg);
    return lam;
}

static const ch_expr *sym(ch_ctx *ctx, const char *name)
{
    return ch_symbol_find(ctx, name);
}

static ch_zero_verdict on_manifold(sys *s, const ch_expr *e)
{
    return ch_zero_test(s->ctx, e, ch_manifold_sample, &s->mf, 8).verdict;
}

/* ---- models ------------------------------------------------------------ */

#define KNIFE_UNDAMPED                                                       \
    "coordinates x y phi\nparameters m=1 J=0.2 g=9.81 alpha=0.5\n"           \
    "lagrangian m/2*(x'^2 + y'^2) + J/2*phi'^2 + m*g*sin(alpha)*x\n"        \
    "constraint sin(phi)*x' - cos(phi)*y' = 0\n"
#define PARS(V)                                                              \
    "coordinates x y z\nparameters c=1\n"                                    \
    "lagrangian (x'^2 + y'^2 + z'^2)/2 - (" V ")\n"                          \
    "constraint z' = y*x' - x*y' + c\n"
#define GRAVITY_XYZ(CONSTRAINT)                                              \
    "coordinates x y z\nparameters m=1 g=9.81 c=0.5 b=0.7\n"                 \
    "lagrangian m/2*(x'^2 + y'^2 + z'^2) - m*g*z\n"                          \
    "constraint " CONSTRAINT "\n"

/* ---- choice of dependent velocities ------------------------------------ */

static void expect_choice(const char *text, const char *file, size_t k,
                          const int *dep, int auto_chosen)
{
    sys s;
    int rc = build(&s, file, text, UPTO_MANIFOLD);
    CHECK_MSG(rc == 0, "%s: %s", file, s.err.msg);
    if (rc == 0) {
        CHECK(s.mf.k == k && s.mf.m == s.mf.n - k);
        CHECK(s.mf.auto_chosen == auto_chosen);
        for (size_t a = 0; a < k; a++)
            CHECK_MSG(s.mf.dep[a] == dep[a], "%s: dep[%zu] = %d, want %d", file,
                      a, s.mf.dep[a], dep[a]);
        /* indep: the others, increasing; is_dep consistent */
        size_t r = 0;
        for (size_t i = 0; i < s.mf.n; i++) {
            int d = 0;
            for (size_t a = 0; a < k; a++) d |= dep[a] == (int)i;
            CHECK(s.mf.is_dep[i] == d);
            if (!d) CHECK(r < s.mf.m && s.mf.indep[r++] == (int)i);
        }
        CHECK(r == s.mf.m);
        for (size_t a = 0; a < k; a++) {
            char name[32];
            snprintf(name, sizeof name, "lambda_%zu", a + 1);
            CHECK(s.mf.lambda[a] == sym(s.ctx, name));
            CHECK(ch_sym_of(s.mf.lambda[a])->kind == CH_SYM_OTHER);
        }
    }
    done(&s);
}

static void test_choice(void)
{
    static const int y[] = {1}, th[] = {2}, z[] = {2}, xy[] = {0, 1}, yz[] = {1, 2};
    /* given by the model */
    expect_choice(NULL, "knife_edge.nh", 1, y, 0);
    expect_choice(NULL, "vertical_disk.nh", 2, xy, 0);
    expect_choice(NULL, "chaplygin_sleigh.nh", 1, th, 0);
    /* chosen: numeric coefficients */
    expect_choice("coordinates x y phi th\nparameters R=1/2\n"
                  "lagrangian (x'^2 + y'^2 + phi'^2 + th'^2)/2\n"
                  "constraint x' = R*cos(phi)*th'\n"
                  "constraint y' = R*sin(phi)*th'\n",
                  "disk.nh", 2, xy, 1);
    expect_choice(GRAVITY_XYZ("z' = c*sqrt(x'^2 + y'^2)"), "appell.nh", 1, z, 1);
    /* chosen: the last-declared nonzero coefficient */
    expect_choice("coordinates x y th\nparameters m=1 J=0.5 a=0.3\n"
                  "lagrangian m/2*(x'^2 + y'^2) + J/2*th'^2\n"
                  "constraint -sin(th)*x' + cos(th)*y' - a*th' = 0\n",
                  "sleigh.nh", 1, th, 1);
    expect_choice(KNIFE_UNDAMPED, "knife.nh", 1, y, 1);
    /* ... unless y' is singular at the initial state (heading north):
     * the column-pivoted choice there */
    static const int x[] = {0};
    expect_choice(KNIFE_UNDAMPED "initial phi=pi/2 y'=1\n", "knife_north.nh", 1, x, 1);
    /* k = 2: y' and z' (the last declared nonzero, no numeric
     * coefficients) are the preferred pair, singular at th = 0 */
    static const int xz[] = {0, 2};
    expect_choice("coordinates x y z th\n"
                  "lagrangian (x'^2 + y'^2 + z'^2 + th'^2)/2\n"
                  "constraint cos(th)*x' + sin(th)*y' = 0\n"
                  "constraint cos(th)*z' - sin(th)*x' = 0\n"
                  "initial th=0 y'=1 th'=1\n",
                  "block.nh", 2, xz, 1);
    expect_choice("coordinates x y z th\n"
                  "lagrangian (x'^2 + y'^2 + z'^2 + th'^2)/2\n"
                  "constraint cos(th)*x' + sin(th)*y' = 0\n"
                  "constraint cos(th)*z' - sin(th)*x' = 0\n"
                  "initial th=1 y'=1 th'=1\n",
                  "block1.nh", 2, yz, 1);
    expect_choice(GRAVITY_XYZ("exp(z' - c*sqrt(x'^2 + y'^2)) - 1 = 0"),
                  "expc.nh", 1, z, 1);
    /* after elimination: x' has the numeric coefficient 1 in the second
     * constraint but is dependent on y' there (block [[1,1],[1,1]]) */
    expect_choice("coordinates x y z w\n"
                  "lagrangian (x'^2 + y'^2 + z'^2 + w'^2)/2\n"
                  "constraint x' + y' = 0\n"
                  "constraint x' + y' + sin(x)*z' = 0\n",
                  "elim.nh", 2, yz, 1);
    /* k = 0 */
    expect_choice(NULL, "double_pendulum.nh", 0, NULL, 0);
}

static void expect_dependent_error(const char *text, int line, int col,
                                   const char *msg)
{
    sys s;
    int rc = build(&s, "bad.nh", text, UPTO_MANIFOLD);
    CHECK(rc == CH_ERR_MODEL);
    CHECK_MSG(s.err.line == line && s.err.col == col, "at %d:%d, want %d:%d",
              s.err.line, s.err.col, line, col);
    CHECK_STR(s.err.msg, msg);
    done(&s);
}

static void test_bad_dependent(void)
{
    expect_dependent_error("coordinates x y phi th\nparameters R=1/2\n"
                           "lagrangian (x'^2 + y'^2 + phi'^2 + th'^2)/2\n"
                           "constraint x' = R*cos(phi)*th'\n"
                           "constraint y' = R*sin(phi)*th'\n"
                           "dependent x' phi'\n",
                           6, 1,
                           "bad `dependent` choice: the constraint Jacobian "
                           "block of x', phi' is identically singular");
    expect_dependent_error(KNIFE_UNDAMPED "  dependent phi'\n", 5, 3,
                           "bad `dependent` choice: the constraint Jacobian "
                           "block of phi' is identically singular");
    /* singular only at special points (th = 0) is fine, unless the
     * initial state is one of them (th = 0 by default) */
    sys s;
    int rc = build(&s, "ok.nh",
                   "coordinates x y th\nparameters m=1 J=0.5 a=0.3\n"
                   "lagrangian m/2*(x'^2 + y'^2) + J/2*th'^2\n"
                   "constraint -sin(th)*x' + cos(th)*y' - a*th' = 0\n"
                   "dependent x'\ninitial th=0.5\n",
                   UPTO_MANIFOLD);
    CHECK_MSG(rc == 0, "%s", s.err.msg);
    done(&s);
    expect_dependent_error("coordinates x y th\nparameters m=1 J=0.5 a=0.3\n"
                           "lagrangian m/2*(x'^2 + y'^2) + J/2*th'^2\n"
                           "constraint -sin(th)*x' + cos(th)*y' - a*th' = 0\n"
                           "dependent x'\n",
                           5, 1,
                           "bad `dependent` choice: the constraint Jacobian block of "
                           "x' is singular at the initial state (dphi_1/dx' vanishes "
                           "there); a regular choice there is `dependent y'`");
    /* k = 2: the block's determinant (of y' and z': sin(th)) vanishes at
     * th = 0 only */
    expect_dependent_error("coordinates x y z th\n"
                           "lagrangian (x'^2 + y'^2 + z'^2 + th'^2)/2\n"
                           "constraint sin(th)*x' + y' = z'\n"
                           "constraint x' + sin(th)*y' = th'\n"
                           "dependent y' z'\ninitial th=0\n",
                           5, 1,
                           "bad `dependent` choice: the constraint Jacobian block of "
                           "y', z' is singular at the initial state (its determinant "
                           "vanishes there: rank 1 of 2); a regular choice there is "
                           "`dependent z' th'`");
}

/* The parser reserves lambda_N; the manifold refuses a clash on its own
 * too (a symbol created by other means). */
static void test_multiplier_names(void)
{
    sys s;
    int rc = build(&s, "r.nh", "coordinates x\nparameters lambda_1=1\nlagrangian x'^2\n",
                   UPTO_MANIFOLD);
    CHECK(rc == CH_ERR_MODEL);
    CHECK(strstr(s.err.msg, "lambda_1") != NULL);
    done(&s);

    ch_ctx *ctx = ch_ctx_new();
    ch_model *m = NULL;
    ch_lagrange L;
    ch_manifold mf;
    ch_error err;
    ch_error_clear(&err);
    const char *text = KNIFE_UNDAMPED;
    CHECK(ch_model_parse(ctx, "c.nh", text, strlen(text), &m, &err) == 0);
    CHECK(ch_lagrange_derive(ctx, m, &L, &err) == 0);
    ch_symbol(ctx, "lambda_1", CH_SYM_PARAM, NULL, 0, -1);
    CHECK(ch_manifold_init(ctx, m, &L, NULL, &mf, &err) == CH_ERR_MODEL);
    CHECK_STR(err.msg, "the name lambda_1 is reserved for multipliers");
    ch_ctx_free(ctx);
}

/* ---- the sampler ------------------------------------------------------- */

static int tight_zero(const arb_t v)
{
    return arb_contains_zero(v) && mag_cmp_2exp_si(arb_radref(v), -100) < 0;
}

/* E_i - Q_i - R_i */
static const ch_expr *motion_residual(sys *s, size_t i)
{
    const ch_expr *t[3] = {s->L.EL[i], ch_neg(s->ctx, s->L.Q[i]),
                           ch_neg(s->ctx, s->C.R[i])};
    return ch_add_n(s->ctx, 3, t);
}

/* G q_tt + c */
static const ch_expr *acc_constraint(sys *s, size_t a)
{
    size_t n = s->mf.n;
    const ch_expr **t = calloc(n + 1, sizeof *t);
    for (size_t j = 0; j < n; j++) t[j] = ch_mul(s->ctx, s->L.G[a * n + j], s->m->qtt[j]);
    t[n] = s->L.c[a];
    const ch_expr *r = ch_add_n(s->ctx, n + 1, t);
    free(t);
    return r;
}

/* For k = 1: the dependent velocity ball is not a point, is narrow, and
 * contains the root found independently by Newton at 2048 bits. */
static void check_root_enclosed(sys *s, const arb_struct *sv, const char *file)
{
    if (s->mf.k != 1) return;
    size_t ns = ch_ctx_nsyms(s->ctx);
    int dep = s->mf.dep[0];
    uint32_t d = ch_sym_of(s->m->qt[dep])->sid;
    const ch_expr *g = s->L.G[dep];
    arb_struct *hp = _arb_vec_init((slong)ns);
    arb_t f, df;
    arb_init(f);
    arb_init(df);
    for (size_t i = 0; i < ns; i++)
        if (ch_ctx_sym(s->ctx, (uint32_t)i)->kind == CH_SYM_PI) arb_const_pi(hp + i, 2048);
        else arb_get_mid_arb(hp + i, sv + i);
    for (int it = 0; it < 20; it++) {
        if (ch_eval_arb(s->ctx, f, s->L.phi[0], hp, 2048)
            || ch_eval_arb(s->ctx, df, g, hp, 2048))
            break;
        arb_div(f, f, df, 2048);
        arb_get_mid_arb(f, f);
        arb_sub(hp + d, hp + d, f, 2048);
    }
    CHECK_MSG(arb_contains(sv + d, hp + d), "%s: root not enclosed", file);
    CHECK(!arb_is_exact(sv + d));
    CHECK(mag_cmp_2exp_si(arb_radref(sv + d), -128) < 0);
    arb_clear(f);
    arb_clear(df);
    _arb_vec_clear(hp, (slong)ns);
}

/* Direct calls of the sampler: each point satisfies the constraints and
 * the equations of motion as enclosures of 0. */
static void check_sampler_points(const char *file, const char *text)
{
    sys s;
    int rc = build(&s, file, text, UPTO_CHETAEV);
    CHECK_MSG(rc == 0, "%s: %s", file, s.err.msg);
    if (rc) {
        done(&s);
        return;
    }
    if (ch_lagrange_euler(s.ctx, s.m, &s.L)) {
        CHECK_MSG(0, "%s: E_i: %s", file, ch_ctx_error(s.ctx)->msg);
        done(&s);
        return;
    }
    size_t ns = ch_ctx_nsyms(s.ctx), n = s.mf.n, k = s.mf.k;
    const ch_expr **res = calloc(2 * n + 2 * k + 1, sizeof *res);
    size_t nr = 0;
    for (size_t a = 0; a < k; a++) res[nr++] = s.L.phi[a];
    for (size_t a = 0; a < k; a++) res[nr++] = acc_constraint(&s, a);
    for (size_t i = 0; i < n; i++) res[nr++] = motion_residual(&s, i);
    arb_struct *sv = _arb_vec_init((slong)ns);
    arb_t v;
    arb_init(v);
    flint_rand_t rnd;
    flint_randinit(rnd);
    int good = 0;
    for (int p = 0; p < 6; p++) {
        for (size_t i = 0; i < ns; i++)
            if (ch_ctx_sym(s.ctx, (uint32_t)i)->kind == CH_SYM_PI) arb_const_pi(sv + i, 256);
            else arb_zero(sv + i);
        if (ch_manifold_sample(&s.mf, rnd, sv, 256)) continue;
        good++;
        check_root_enclosed(&s, sv, file);
        for (size_t j = 0; j < nr; j++) {
            int ok = ch_eval_arb(s.ctx, v, res[j], sv, 256) == 0 && tight_zero(v);
            CHECK_MSG(ok, "%s: residual %zu not 0 at a sample: %s", file, j,
                      arb_get_str(v, 10, 0));
        }
        /* the independent velocities are free, the parameters positive */
        for (size_t j = 0; j < s.m->np; j++)
            CHECK(arb_is_positive(sv + ch_sym_of(s.m->param[j])->sid));
        for (size_t r = 0; r < s.mf.m; r++)
            CHECK(arb_is_exact(sv + ch_sym_of(s.m->qt[s.mf.indep[r]])->sid));
    }
    CHECK_MSG(good == 6, "%s: %d of 6 samples", file, good);
    /* the same through the zero test; phi vanishes on the manifold only */
    for (size_t j = 0; j < nr; j++)
        CHECK_MSG(on_manifold(&s, res[j]) == CH_ZERO_YES, "%s: residual %zu", file, j);
    for (size_t a = 0; a < k; a++)
        CHECK(ch_zero_test(s.ctx, s.L.phi[a], NULL, NULL, 8).verdict == CH_ZERO_NO);
    /* dE/dt on motions is the balance of THEORY §3 */
    CHECK_MSG(on_manifold(&s, ch_sub(s.ctx, ch_diff_t(s.ctx, s.L.energy),
                                     s.C.energy_balance)) == CH_ZERO_YES,
              "%s: dE/dt != balance", file);
    /* and something that is not zero there is not */
    CHECK(on_manifold(&s, ch_add(s.ctx, s.L.energy, ch_num_frac(s.ctx, 1, 1000)))
          != CH_ZERO_YES);
    flint_randclear(rnd);
    arb_clear(v);
    _arb_vec_clear(sv, (slong)ns);
    free(res);
    done(&s);
}

static void test_sampler(void)
{
    check_sampler_points("knife_edge.nh", NULL);
    check_sampler_points("vertical_disk.nh", NULL);
    check_sampler_points("chaplygin_sleigh.nh", NULL);
    check_sampler_points("pendulum_xy.nh", NULL);
    check_sampler_points("double_pendulum.nh", NULL);
    check_sampler_points("appell.nh", GRAVITY_XYZ("z' = c*sqrt(x'^2 + y'^2)"));
    check_sampler_points("expc.nh", GRAVITY_XYZ("exp(z' - c*sqrt(x'^2 + y'^2)) - 1 = 0"));
    check_sampler_points("speed.nh",
                         "coordinates x y\nparameters g=9.81 v0=1\n"
                         "lagrangian (x'^2 + y'^2)/2 - g*y\n"
                         "constraint x'^2 + y'^2 = v0^2\n");
    check_sampler_points("two.nh",
                         "coordinates x y z w\nparameters c=0.5\n"
                         "lagrangian (x'^2 + y'^2 + z'^2 + w'^2)/2 - z\n"
                         "constraint z' = c*sqrt(x'^2 + y'^2 + w'^2)\n"
                         "constraint w'^3 + w' = x*y' + cos(t)\n");
}

/* A long affine chain x_i' = x_(i-1)' - x_(i-2)' + sin(x_i)/7: the
 * forward substitution's radii grow like Fibonacci numbers, about 2^174
 * over 250 constraints, so the affine solve is not tight at its first
 * working precision and retries at a higher one. Each point holds every
 * constraint as a tight enclosure of 0, and its dependent velocities are
 * as tight as the zero test needs (2^-(prec/2) at prec 256). */
static void test_long_affine_chain(void)
{
    enum { K = 250 };
    ch_buf b;
    ch_buf_init(&b);
    ch_buf_put(&b, "coordinates");
    for (int i = 0; i <= K; i++) ch_buf_printf(&b, " x%d", i);
    ch_buf_put(&b, "\nlagrangian 0");
    for (int i = 0; i <= K; i++) ch_buf_printf(&b, " + x%d'^2/2", i);
    for (int i = 2; i <= K; i++)
        ch_buf_printf(&b, "\nconstraint x%d' = x%d' - x%d' + sin(x%d)/7", i, i - 1, i - 2, i);
    ch_buf_put(&b, "\ndependent");
    for (int i = 2; i <= K; i++) ch_buf_printf(&b, " x%d'", i);
    ch_buf_put(&b, "\n");
    sys s;
    int rc = build(&s, "chain.nh", b.s, UPTO_MANIFOLD);
    CHECK_MSG(rc == 0, "%s", s.err.msg);
    if (rc == 0) {
        CHECK(s.mf.affine == 1 && s.mf.k == K - 1);
        size_t ns = ch_ctx_nsyms(s.ctx);
        arb_struct *sv = _arb_vec_init((slong)ns);
        arb_t v;
        arb_init(v);
        flint_rand_t rnd;
        flint_randinit(rnd);
        ch_manifold_probe any = {&s.mf, NULL}; /* every velocity enclosed */
        for (int p = 0; p < 3; p++) {
            CHECK(ch_manifold_sample_state(&any, rnd, sv, 256) == 0);
            int bad = 0;
            for (size_t a = 0; a < s.mf.k; a++) {
                bad += !(ch_eval_arb(s.ctx, v, s.L.phi[a], sv, 256) == 0 && tight_zero(v));
                arb_srcptr x = sv + ch_sym_of(s.m->qt[s.mf.dep[a]])->sid;
                bad += mag_cmp_2exp_si(arb_radref(x), -128 - 16) >= 0;
            }
            CHECK_MSG(bad == 0, "%d constraints or velocities not tight", bad);
        }
        /* points for an expression in x5' alone: the constraints of x2' ..
         * x5' (the first four of the chain) hold as tight enclosures, the
         * others to rounding in doubles */
        const ch_expr *x5t = sym(s.ctx, "x5_t");
        ch_manifold_probe probe = {&s.mf, ch_add(s.ctx, x5t, sym(s.ctx, "x0_t"))};
        double *d = malloc(ns * sizeof *d);
        for (int p = 0; p < 3 && d; p++) {
            CHECK(ch_manifold_sample_state(&probe, rnd, sv, 256) == 0);
            for (size_t i = 0; i < ns; i++) d[i] = arf_get_d(arb_midref(sv + i), ARF_RND_NEAR);
            int bad = 0;
            for (size_t a = 0; a < s.mf.k; a++) {
                if (a < 4) {
                    bad += !(ch_eval_arb(s.ctx, v, s.L.phi[a], sv, 256) == 0 && tight_zero(v));
                    arb_srcptr x = sv + ch_sym_of(s.m->qt[s.mf.dep[a]])->sid;
                    bad += mag_cmp_2exp_si(arb_radref(x), -128 - 16) >= 0;
                } else {
                    bad += !(fabs(ch_eval_d(s.ctx, s.L.phi[a], d)) < 1e-12);
                }
            }
            CHECK_MSG(bad == 0, "%d constraints or velocities off the manifold", bad);
        }
        free(d);
        flint_randclear(rnd);
        arb_clear(v);
        _arb_vec_clear(sv, (slong)ns);
    }
    done(&s);
    ch_buf_free(&b);
}

/* A constraint with no real solution: no point, verdict unknown. */
static void test_no_manifold(void)
{
    sys s;
    int rc = build(&s, "imag.nh",
                   "coordinates x y\nlagrangian (x'^2 + y'^2)/2\n"
                   "constraint x'^2 + y'^2 + 1 = 0\n",
                   UPTO_CHETAEV);
    CHECK_MSG(rc == 0, "%s", s.err.msg);
    if (rc == 0) {
        CHECK(s.C.energy_conserved == -1);
        CHECK(s.C.energy_test.verdict == CH_ZERO_UNKNOWN);
        CHECK_STR(s.C.energy_reason,
                  "could not be decided: no point on the constraint manifold was found");
        size_t ns = ch_ctx_nsyms(s.ctx);
        arb_struct *sv = _arb_vec_init((slong)ns);
        flint_rand_t rnd;
        flint_randinit(rnd);
        CHECK(ch_manifold_sample(&s.mf, rnd, sv, 256) != 0);
        flint_randclear(rnd);
        _arb_vec_clear(sv, (slong)ns);
    }
    done(&s);
}

/* ---- reactions, degrees, verdicts -------------------------------------- */

static void test_reactions(void)
{
    sys s;
    int rc = build(&s, "knife_edge.nh", NULL, UPTO_CHETAEV);
    CHECK_MSG(rc == 0, "%s", s.err.msg);
    if (rc == 0) {
        ch_ctx *ctx = s.ctx;
        const ch_expr *lam = sym(ctx, "lambda_1"), *phi = sym(ctx, "phi");
        CHECK(s.C.n == 3 && s.C.k == 1);
        CHECK(s.C.R[0] == ch_mul(ctx, lam, ch_fun1(ctx, CH_F_SIN, phi)));
        CHECK(s.C.R[1] == ch_neg(ctx, ch_mul(ctx, lam, ch_fun1(ctx, CH_F_COS, phi))));
        CHECK(ch_is_zero(s.C.R[2]));
        /* balance = -c phi'^2 + lambda (sin(phi) x' - cos(phi) y') */
        const ch_expr *c = sym(ctx, "c"), *pt = sym(ctx, "phi_t");
        const ch_expr *want = ch_add(
            ctx, ch_neg(ctx, ch_mul(ctx, c, ch_pow_si(ctx, pt, 2))),
            ch_mul(ctx, lam, s.L.phi[0]));
        CHECK(ch_zero_test(ctx, ch_sub(ctx, s.C.energy_balance, want), NULL, NULL, 8)
                  .verdict == CH_ZERO_YES);
    }
    done(&s);
    /* k = 0: no reactions, the balance is -dL/dt + Q.q' */
    rc = build(&s, "double_pendulum.nh", NULL, UPTO_CHETAEV);
    CHECK_MSG(rc == 0, "%s", s.err.msg);
    if (rc == 0) {
        CHECK(ch_is_zero(s.C.R[0]) && ch_is_zero(s.C.R[1]));
        CHECK(ch_is_zero(s.C.energy_balance));
        CHECK(explicit_lambda(&s) == NULL);
    }
    done(&s);
}

/* Degrees of homogeneity: "1, null" etc. */
static void sigma_string(const sys *s, char *buf, size_t size)
{
    buf[0] = 0;
    for (size_t a = 0; a < s->C.k; a++) {
        char one[64];
        const ch_expr *g = s->C.sigma[a];
        if (!g) snprintf(one, sizeof one, "null");
        else {
            char *str = fmpq_get_str(NULL, 10, g->num);
            snprintf(one, sizeof one, "%s", str);
            flint_free(str);
        }
        size_t used = strlen(buf);
        snprintf(buf + used, size - used, "%s%s", a ? ", " : "", one);
    }
}

static void test_homogeneity(void)
{
    static const struct {
        const char *constraint, *sigma;
    } cases[] = {
        {"z' = c*sqrt(x'^2 + y'^2)", "1"},
        {"z'*x' = y'^2", "2"},
        {"(x' - 2*y')/sqrt(x'^2 + y'^2) = 0", "0"},
        {"sqrt(x'^2 + y'^2) = c", "null"},
        {"x'^2 + y'^2 = 1", "null"},
        {"z' = y*x' - x*y' + c", "null"},
        {"z' = c*(x'^2 + y'^2) + b*x'", "null"},
        {"exp(z' - c*sqrt(x'^2 + y'^2)) - 1 = 0", "null"},
        {"z' = cos(t)*x'", "1"},
        {"x'^3 = y'^2*z'", "3"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char text[512], got[128];
        snprintf(text, sizeof text, GRAVITY_XYZ("%s"), cases[i].constraint);
        sys s;
        int rc = build(&s, "h.nh", text, UPTO_CHETAEV);
        CHECK_MSG(rc == 0, "%s: %s", cases[i].constraint, s.err.msg);
        if (rc == 0) {
            sigma_string(&s, got, sizeof got);
            CHECK_MSG(strcmp(got, cases[i].sigma) == 0, "%s: sigma %s, want %s",
                      cases[i].constraint, got, cases[i].sigma);
        }
        done(&s);
    }
}

static const struct verdict_case {
    const char *name, *file, *text, *sigma;
    int conserved;
    const char *reason_prefix;
} verdicts[] = {
    {"knife_edge (undamped)", "k.nh", KNIFE_UNDAMPED, "1", 1,
     "constraints homogeneous of degree 1 in the velocities, L independent of "
     "t, Q.q' = 0 (at 8 random points on the constraint manifold)"},
    {"knife_edge.nh (damped)", "knife_edge.nh", NULL, "1", 0,
     "not conserved: at a point on the constraint manifold (t = "},
    {"chaplygin_sleigh.nh", "chaplygin_sleigh.nh", NULL, "1", 1,
     "constraints homogeneous of degree 1 in the velocities"},
    {"vertical_disk.nh", "vertical_disk.nh", NULL, "1, 1", 1,
     "constraints homogeneous of degree 1, 1 in the velocities"},
    {"pendulum_xy.nh", "pendulum_xy.nh", NULL, "1", 1,
     "constraints homogeneous of degree 1"},
    {"double_pendulum.nh", "double_pendulum.nh", NULL, "", 1,
     "no constraints, L independent of t, Q.q' = 0 (dE/dt is identically 0)"},
    {"pars affine V = z", "p.nh", PARS("z"), "null", 0, "not conserved"},
    {"pars affine V = 0", "p.nh", PARS("0"), "null", 1,
     "reaction power and dE/dt vanish (at 8 random points on the constraint "
     "manifold)"},
    {"pars affine V = (x^2+y^2)/2", "p.nh", PARS("(x^2 + y^2)/2"), "null", 1,
     "reaction power and dE/dt vanish (at 8 random points"},
    {"appell_hamel z' = c|v|", "a.nh", GRAVITY_XYZ("z' = c*sqrt(x'^2 + y'^2)"),
     "1", 1, "constraints homogeneous of degree 1"},
    {"z' = c(x'^2+y'^2) + b x', gravity", "a.nh",
     GRAVITY_XYZ("z' = c*(x'^2 + y'^2) + b*x'"), "null", 0, "not conserved"},
    {"exp(z' - c|v|) - 1 = 0, gravity", "a.nh",
     GRAVITY_XYZ("exp(z' - c*sqrt(x'^2 + y'^2)) - 1 = 0"), "null", 1,
     "reaction power and dE/dt vanish (at 8 random points"},
    {"moving belt x' = v0 cos(t)", "b.nh",
     "coordinates x y\nparameters m=1 v0=2\nlagrangian m/2*(x'^2 + y'^2)\n"
     "constraint x' = v0*cos(t)\n", "null", 0, "not conserved"},
    /* linear homogeneous with time-dependent coefficients: the reaction
     * power sigma lambda phi still vanishes */
    {"time-dependent linear z' = cos(t) x'", "a.nh", GRAVITY_XYZ("z' = cos(t)*x'"),
     "1", 1, "constraints homogeneous of degree 1"},
    {"constant speed, free", "s.nh",
     "coordinates x y\nparameters v0=1\nlagrangian (x'^2 + y'^2)/2\n"
     "constraint x'^2 + y'^2 = v0^2\n", "null", 1,
     "reaction power and dE/dt vanish"},
    {"constant speed, gravity", "s.nh",
     "coordinates x y\nparameters g=9.81 v0=1\nlagrangian (x'^2 + y'^2)/2 - g*y\n"
     "constraint x'^2 + y'^2 = v0^2\n", "null", 0, "not conserved"},
    {"degree 2: z' x' = y'^2, gravity", "a.nh", GRAVITY_XYZ("z'*x' = y'^2"), "2", 1,
     "constraints homogeneous of degree 2"},
    {"oscillator with friction (k = 0)", "f.nh",
     "coordinates x\nparameters c=0.1\nlagrangian (x'^2 - x^2)/2\nforce x = -c*x'\n",
     "", 0, "not conserved: at a state (t = "},
    {"L depends on t (k = 0)", "f.nh",
     "coordinates x\nlagrangian x'^2/2 - t*x\n", "", 0, "not conserved: at a state"},
    {"gyroscopic force Q = (y', -x')", "f.nh",
     "coordinates x y\nlagrangian (x'^2 + y'^2)/2\nforce x = y'\nforce y = -x'\n",
     "", 1, "no constraints, L independent of t, Q.q' = 0"},
    /* the example files of the constrained-derivations issue */
    {"pars_affine.nh", "pars_affine.nh", NULL, "null", 0, "not conserved"},
    {"pars_affine_free.nh", "pars_affine_free.nh", NULL, "null", 1,
     "reaction power and dE/dt vanish"},
    {"pars_affine_harmonic.nh", "pars_affine_harmonic.nh", NULL, "null", 1,
     "reaction power and dE/dt vanish"},
    {"appell_hamel.nh", "appell_hamel.nh", NULL, "1", 1,
     "constraints homogeneous of degree 1"},
    {"nonlinear_slope.nh", "nonlinear_slope.nh", NULL, "null", 0, "not conserved"},
    {"moving_belt.nh", "moving_belt.nh", NULL, "null", 0, "not conserved"},
    {"exp_constraint.nh", "exp_constraint.nh", NULL, "null", 1,
     "reaction power and dE/dt vanish"},
    {"force with zero power on the manifold", "g.nh",
     "coordinates x y\nlagrangian (x'^2 + y'^2)/2\n"
     "constraint x' = y'\nforce x = x' - y'\n",
     "1", 1, "dE/dt = -dL/dt + Q.q' + lambda.(G q') vanishes on motions (at 8 "
     "random points on the constraint manifold)"},
};

static void test_verdicts(void)
{
    printf("%-40s %-8s %s\n", "model", "sigma", "energy_conserved: reason");
    for (size_t i = 0; i < sizeof verdicts / sizeof verdicts[0]; i++) {
        const struct verdict_case *c = verdicts + i;
        sys s;
        int rc = build(&s, c->file, c->text, UPTO_CHETAEV);
        CHECK_MSG(rc == 0, "%s: %s", c->name, s.err.msg);
        if (rc == 0) {
            char got[128];
            sigma_string(&s, got, sizeof got);
            printf("%-40s %-8s %d: %s\n", c->name, got[0] ? got : "-",
                   s.C.energy_conserved, s.C.energy_reason);
            CHECK_MSG(strcmp(got, c->sigma) == 0, "%s: sigma %s, want %s", c->name,
                      got, c->sigma);
            CHECK_MSG(s.C.energy_conserved == c->conserved, "%s: conserved %d, want %d",
                      c->name, s.C.energy_conserved, c->conserved);
            CHECK_MSG(strncmp(s.C.energy_reason, c->reason_prefix,
                              strlen(c->reason_prefix)) == 0,
                      "%s: reason '%s'", c->name, s.C.energy_reason);
            ch_zero_verdict want = c->conserved ? CH_ZERO_YES : CH_ZERO_NO;
            CHECK(s.C.energy_test.verdict == want);
            if (!c->conserved) {
                CHECK(s.C.energy_test.have_witness);
                CHECK(s.C.energy_test.max_abs > 0);
            }
        }
        done(&s);
    }
}

/* ---- explicit multipliers ---------------------------------------------- */

static void check_lambda_explicit(const char *file, const char *text)
{
    sys s;
    int rc = build(&s, file, text, UPTO_CHETAEV);
    CHECK_MSG(rc == 0, "%s: %s", file, s.err.msg);
    if (rc == 0) {
        const ch_expr **lam = explicit_lambda(&s);
        CHECK_MSG(lam != NULL, "%s: no explicit lambda", file);
        for (size_t a = 0; lam && a < s.mf.k; a++) {
            const ch_expr *le = lam[a];
            CHECK(le && !ch_has_sym(le, s.mf.lambda[a]));
            CHECK(le && !ch_has_sym_kind(le, CH_SYM_ACC));
            CHECK_MSG(on_manifold(&s, ch_sub(s.ctx, le, s.mf.lambda[a])) == CH_ZERO_YES,
                      "%s: explicit lambda_%zu differs from the KKT solve", file, a + 1);
        }
    }
    done(&s);
}

static void test_lambda_explicit(void)
{
    check_lambda_explicit("knife_edge.nh", NULL);
    check_lambda_explicit("vertical_disk.nh", NULL);
    check_lambda_explicit("chaplygin_sleigh.nh", NULL);
    check_lambda_explicit("pendulum_xy.nh", NULL);
    check_lambda_explicit("p.nh", PARS("z"));
    check_lambda_explicit("a.nh", GRAVITY_XYZ("z' = c*sqrt(x'^2 + y'^2)"));
    check_lambda_explicit("a.nh", GRAVITY_XYZ("exp(z' - c*sqrt(x'^2 + y'^2)) - 1 = 0"));
    check_lambda_explicit("b.nh", "coordinates x y\nparameters m=1 v0=2\n"
                                  "lagrangian m/2*(x'^2 + y'^2)\n"
                                  "constraint x' = v0*cos(t)\n");
    /* Pars with V = 0: the multiplier vanishes identically */
    sys s;
    int rc = build(&s, "p.nh", PARS("0"), UPTO_CHETAEV);
    CHECK_MSG(rc == 0, "%s", s.err.msg);
    const ch_expr **lam = rc == 0 ? explicit_lambda(&s) : NULL;
    CHECK(lam != NULL);
    if (lam) CHECK(ch_zero_test(s.ctx, lam[0], NULL, NULL, 8).verdict == CH_ZERO_YES);
    done(&s);
    /* n > 4: none */
    rc = build(&s, "big.nh",
               "coordinates a b c d e\nlagrangian (a'^2+b'^2+c'^2+d'^2+e'^2)/2\n"
               "constraint a' = b'\n",
               UPTO_CHETAEV);
    CHECK_MSG(rc == 0, "%s", s.err.msg);
    if (rc == 0) {
        CHECK(explicit_lambda(&s) == NULL);
        CHECK(s.C.energy_conserved == 1);
    }
    done(&s);
}

int main(void)
{
    RUN(test_choice);
    RUN(test_bad_dependent);
    RUN(test_multiplier_names);
    RUN(test_sampler);
    RUN(test_long_affine_chain);
    RUN(test_no_manifold);
    RUN(test_reactions);
    RUN(test_homogeneity);
    RUN(test_verdicts);
    RUN(test_lambda_explicit);
    return check_summary("test_chetaev");
}
