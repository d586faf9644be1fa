/* test_audit.c — the `check` audit: verdicts on models whose truth is known
 * independently (hand computations in the comments, seed 003), with both
 * outcomes for every kind of quantity, the choice of the frame xi, and the
 * consistency of a field's rate with R.Y + Y^TQ(L) + Q.Y (THEORY §6). */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "app/report.h"
#include "core/diff.h"
#include "mech/audit.h"
#include "lang/model.h"

#ifndef SRCDIR
#define SRCDIR "."
#endif

typedef struct {
    ch_ctx *ctx;
    ch_model *m;
    ch_mechanics *d;
    ch_audit a;
    ch_error err;
} sys;

/* Parses text (or loads examples/FILE when text is NULL) and audits it. */
static int build(sys *s, const char *file, const char *text)
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
    if ((rc = ch_mechanics_derive(s->ctx, s->m, &s->d, &s->err))) return rc;
    return ch_audit_run(s->ctx, s->d, NULL, &s->a, &s->err);
}

static void done(sys *s) { ch_ctx_free(s->ctx); }

static const ch_audit_quantity *find(const sys *s, const char *name)
{
    for (size_t i = 0; i < s->a.nq; i++)
        if (!strcmp(s->a.q[i].name, name)) return &s->a.q[i];
    return NULL;
}

/* The verdict of quantity `name`, -2 when it is absent. */
static int verdict(const sys *s, const char *name)
{
    const ch_audit_quantity *q = find(s, name);
    return q ? q->verdict : -2;
}

/* Checks the verdict and that the evidence agrees with it: a conserved
 * quantity has a negligible max_rate, a non-conserved one a visible one
 * with a witness. */
#define CHECK_VERDICT(s, name, want)                                          \
    do {                                                                      \
        const ch_audit_quantity *q_ = find(s, name);                          \
        CHECK_MSG(q_ != NULL, "%s missing", name);                            \
        if (q_) {                                                             \
            CHECK_MSG(q_->verdict == (want), "%s: verdict %d, want %d (%s)",  \
                      name, q_->verdict, want, q_->reason);                   \
            if ((want) == 1) CHECK(q_->max_rate < 1e-30);                     \
            if ((want) == 0) CHECK(q_->max_rate > 1e-3 && q_->test.have_witness); \
            CHECK(q_->reason && q_->reason[0]);                               \
        }                                                                     \
    } while (0)

#define PARS(V, EXTRA)                                                       \
    "coordinates x y z\nparameters c=1 g=1\n"                                \
    "lagrangian (x'^2 + y'^2 + z'^2)/2 - (" V ")\n"                          \
    "constraint z' = y*x' - x*y' + c\n" EXTRA

#define KNIFE_UNDAMPED                                                       \
    "coordinates x y phi\nparameters m=1 J=0.2 g=9.81 alpha=0.5\n"           \
    "lagrangian m/2*(x'^2 + y'^2) + J/2*phi'^2 + m*g*sin(alpha)*x\n"        \
    "constraint sin(phi)*x' - cos(phi)*y' = 0\n"

/* ---- energy ------------------------------------------------------------ */

static void test_pars_trio(void)
{
    static const struct { const char *file; int E; } cases[] = {
        {"pars_affine.nh", 0},          /* V = g z: dE/dt = g c/(1+x^2+y^2) */
        {"pars_affine_free.nh", 1},     /* V = 0: lambda = 0 */
        {"pars_affine_harmonic.nh", 1}, /* V = (x^2+y^2)/2: lambda = 0 */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        sys s;
        CHECK_MSG(build(&s, cases[i].file, NULL) == 0, "%s: %s", cases[i].file,
                  s.err.msg);
        if (s.a.q) {
            CHECK_STR(s.a.q[0].name, "E");
            CHECK(s.a.q[0].kind == CH_AUDIT_ENERGY);
            CHECK_VERDICT(&s, "E", cases[i].E);
            /* the reaction power is what breaks it */
            if (cases[i].E == 0) CHECK(s.a.q[0].reaction_power_max > 1e-3);
            else CHECK(s.a.q[0].reaction_power_max < 1e-30);
            CHECK(s.a.affine == 1);
        }
        done(&s);
    }
}

static void test_knife_edge_energy(void)
{
    sys s;
    /* SPEC file: viscous torque -c*phi' with c = 0.1 dissipates energy */
    CHECK(build(&s, "knife_edge.nh", NULL) == 0);
    CHECK_VERDICT(&s, "E", 0);
    CHECK(s.a.affine == 1);
    CHECK_STR(s.a.xi_source, "zero");
    done(&s);
    CHECK(build(&s, "knife_undamped", KNIFE_UNDAMPED) == 0);
    CHECK_VERDICT(&s, "E", 1);
    CHECK_VERDICT(&s, "T_xi", 1); /* xi = 0: T_xi = E */
    /* y is cyclic: m y'' = -cos(phi) lambda != 0 */
    CHECK_VERDICT(&s, "p_y", 0);
    /* phi is cyclic and the blade cannot be torqued: J phi'' = 0 */
    CHECK_VERDICT(&s, "p_phi", 1);
    CHECK(verdict(&s, "p_x") == -2); /* gravity: L depends on x */
    done(&s);
}

static void test_moving_belt(void)
{
    sys s;
    CHECK(build(&s, "moving_belt.nh", NULL) == 0);
    CHECK_VERDICT(&s, "E", 0);
    /* affine with s = -sin(phi) u(t): least-squares xi, time dependent */
    CHECK(s.a.affine == 1);
    CHECK_STR(s.a.xi_source, "least squares");
    CHECK(find(&s, "T_xi") != NULL);
    /* phi does not appear in G's phi column: J phi'' = 0, decided exactly */
    CHECK_VERDICT(&s, "p_phi", 1);
    CHECK(find(&s, "p_phi")->test.symbolic == 1);
    CHECK(find(&s, "p_phi")->in_distribution == 1);
    CHECK_VERDICT(&s, "p_x", 0);
    done(&s);
}

static void test_sleigh(void)
{
    sys s;
    CHECK(build(&s, "chaplygin_sleigh.nh", NULL) == 0);
    CHECK_VERDICT(&s, "E", 1);
    /* the knife edge pushes sideways and turns the sleigh: no momentum */
    CHECK_VERDICT(&s, "p_x", 0);
    CHECK_VERDICT(&s, "p_y", 0);
    CHECK_VERDICT(&s, "p_th", 0);
    done(&s);
}

/* Vertical disk: m x'' = l1, m y'' = l2, B phi'' = 0, A th'' = -R(cos phi
 * l1 + sin phi l2) = -m R^2 th'' (differentiate x' = R cos(phi) th' etc.),
 * so th'' = 0: p_phi and p_th conserved, p_x and p_y not (x'' = -R sin(phi)
 * phi' th'). p_th only through the reaction annihilator: G's th column is
 * not zero. */
static void test_vertical_disk(void)
{
    sys s;
    CHECK(build(&s, "vertical_disk.nh", NULL) == 0);
    CHECK_VERDICT(&s, "E", 1);
    CHECK_VERDICT(&s, "p_x", 0);
    CHECK_VERDICT(&s, "p_y", 0);
    CHECK_VERDICT(&s, "p_phi", 1);
    CHECK_VERDICT(&s, "p_th", 1);
    CHECK(find(&s, "p_phi")->in_distribution == 1);
    CHECK(find(&s, "p_th")->in_distribution == 0);
    CHECK(find(&s, "p_th")->reaction_power_max < 1e-30);
    CHECK(find(&s, "p_x")->reaction_power_max > 1e-3);
    done(&s);
}

static void test_not_affine(void)
{
    sys s;
    CHECK(build(&s, "exp_constraint.nh", NULL) == 0);
    CHECK(s.a.affine == 0);
    CHECK(s.a.xi == NULL);
    CHECK(find(&s, "T_xi") == NULL);
    done(&s);
}

/* ---- frame energy ------------------------------------------------------ */

/* V = 0, so q'' = 0 on motions and dT_xi/dt = -q'.(d xi/dt). With the
 * least-squares xi = c(-y, x, 1)/(1+x^2+y^2) at x = 1, y = 0, x' = 1,
 * y' = 0, z' = c this is c^2/2 != 0: not conserved. With xi = c d/dz
 * (a solution of S xi + s = 0 along which L is invariant) T_xi = E - c z'
 * and dT_xi/dt = -c z'' = -c lambda = 0: conserved. */
static void test_frame_energy(void)
{
    sys s;
    CHECK(build(&s, "free_ls", PARS("0", "")) == 0);
    CHECK_STR(s.a.xi_source, "least squares");
    CHECK_VERDICT(&s, "T_xi", 0);
    done(&s);
    CHECK(build(&s, "free_lift", PARS("0", "field lift: z = c\n")) == 0);
    CHECK_STR(s.a.xi_source, "field");
    CHECK_STR(s.a.xi_field, "lift");
    CHECK_VERDICT(&s, "T_xi", 1);
    done(&s);
    /* V = g z: L is not invariant along d/dz, dT_xi/dt = -c g... */
    CHECK(build(&s, "grav_lift", PARS("g*z", "field lift: z = c\n")) == 0);
    CHECK_STR(s.a.xi_source, "field");
    CHECK_VERDICT(&s, "T_xi", 0);
    CHECK_VERDICT(&s, "E", 0);
    done(&s);
    /* a field that does not solve S Y + s = 0 is not taken as xi */
    CHECK(build(&s, "free_rot", PARS("0", "field rot: x = -y, y = x\n")) == 0);
    CHECK_STR(s.a.xi_source, "least squares");
    done(&s);
}

/* ---- fields and integrals ---------------------------------------------- */

static void test_fields_example(void)
{
    sys s;
    CHECK_MSG(build(&s, "pars_affine_fields.nh", NULL) == 0, "%s", s.err.msg);
    CHECK_STR(s.a.xi_source, "field");
    CHECK_STR(s.a.xi_field, "lift");
    CHECK_VERDICT(&s, "E", 1);
    CHECK_VERDICT(&s, "T_xi", 1);
    CHECK_VERDICT(&s, "p_z", 1);
    /* conserved only through the reaction annihilator */
    CHECK_VERDICT(&s, "p.rot", 1);
    const ch_audit_quantity *rot = find(&s, "p.rot");
    if (rot) {
        CHECK(rot->kind == CH_AUDIT_FIELD);
        CHECK(rot->lie_zero == 1);
        CHECK(rot->in_distribution == 0);
        CHECK(rot->reaction_power_max < 1e-30);
    }
    CHECK_VERDICT(&s, "p.lift", 1);
    /* L not invariant along x d/dx + y d/dy (Y lies in D: S Y = 0) */
    CHECK_VERDICT(&s, "p.radial", 0);
    const ch_audit_quantity *rad = find(&s, "p.radial");
    if (rad) {
        CHECK(rad->lie_zero == 0);
        CHECK(rad->in_distribution == 1);
        CHECK(rad->lie_max > 1e-3);
    }
    CHECK_VERDICT(&s, "Lz", 1);
    CHECK_VERDICT(&s, "Exy", 1);
    CHECK_VERDICT(&s, "K", 0);
    CHECK(find(&s, "K")->kind == CH_AUDIT_INTEGRAL);
    CHECK(find(&s, "K")->reaction_power_max < 0);
    /* order: E, T_xi, momenta, fields, integrals */
    static const char *order[] = {"E", "T_xi", "p_z", "p.rot", "p.lift",
                                  "p.radial", "Lz", "Exy", "K"};
    CHECK(s.a.nq == 9);
    for (size_t i = 0; i < s.a.nq && i < 9; i++) CHECK_STR(s.a.q[i].name, order[i]);
    done(&s);
}

/* V = g z: lambda = g/(1+x^2+y^2), so R.rot = lambda (x^2+y^2) != 0 and the
 * angular momentum is not conserved although L is still invariant. The
 * field's rate (dJ/dt by differentiation) must equal R.Y + Y^TQ(L) + Q.Y on
 * motions (THEORY §6). */
static void test_rotation_gravity(void)
{
    sys s;
    CHECK(build(&s, "grav_rot",
                PARS("g*z", "field rot: x = -y, y = x\n"
                            "integral Lz = x*y' - y*x'\n"
                            "integral H = (x'^2 + y'^2 + z'^2)/2 + g*z\n")) == 0);
    CHECK_VERDICT(&s, "p.rot", 0);
    const ch_audit_quantity *rot = find(&s, "p.rot");
    if (rot) {
        CHECK(rot->lie_zero == 1);
        CHECK(rot->reaction_power_max > 1e-3);
        const ch_model *m = s.m;
        const ch_expr *ry = ch_add(s.ctx, ch_mul(s.ctx, s.d->chet.R[0], ch_neg(s.ctx, m->q[1])),
                                   ch_mul(s.ctx, s.d->chet.R[1], m->q[0]));
        const ch_expr *diff = ch_sub(s.ctx, rot->rate, ry);
        CHECK(ch_zero_test(s.ctx, diff, ch_manifold_sample, &s.d->mf, 8).verdict
              == CH_ZERO_YES);
    }
    CHECK_VERDICT(&s, "Lz", 0);
    CHECK_VERDICT(&s, "H", 0); /* = E, not conserved for V = g z */
    done(&s);
}

/* A declared integral in a model without constraints: decided exactly. */
static void test_integrals_unconstrained(void)
{
    sys s;
    CHECK(build(&s, "osc",
                "coordinates x y\nparameters k=2\n"
                "lagrangian (x'^2 + y'^2)/2 - k*(x^2 + y^2)/2\n"
                "integral L = x*y' - y*x'\nintegral Ex = x'^2/2 + k*x^2/2\n"
                "integral Bad = x*x'\n") == 0);
    CHECK_VERDICT(&s, "E", 1);
    CHECK_VERDICT(&s, "L", 1);
    CHECK_VERDICT(&s, "Ex", 1);
    CHECK_VERDICT(&s, "Bad", 0);
    CHECK(s.a.affine == 0);
    CHECK(find(&s, "T_xi") == NULL);
    done(&s);
}

static void test_json(void)
{
    sys s;
    CHECK(build(&s, "pars_affine.nh", NULL) == 0);
    ch_buf b;
    ch_buf_init(&b);
    ch_audit_write_json(&b, &s.a, NULL);
    CHECK(!b.oom && b.s);
    if (b.s) {
        CHECK(strstr(b.s, "\"model\": \"pars_affine\"") != NULL);
        CHECK(strstr(b.s, "\"homogeneity\": [null]") != NULL);
        CHECK(strstr(b.s, "\"name\": \"E\", \"kind\": \"energy\", "
                          "\"verdict\": \"not conserved\"") != NULL);
        CHECK(strstr(b.s, "\"loop\": null") != NULL);
    }
    ch_buf_reset(&b);
    ch_audit_write_text(&b, &s.a, NULL);
    CHECK(b.s && strstr(b.s, "least squares") != NULL);
    ch_buf_free(&b);
    done(&s);
}

int main(void)
{
    RUN(test_pars_trio);
    RUN(test_knife_edge_energy);
    RUN(test_moving_belt);
    RUN(test_sleigh);
    RUN(test_vertical_disk);
    RUN(test_not_affine);
    RUN(test_frame_energy);
    RUN(test_fields_example);
    RUN(test_rotation_gravity);
    RUN(test_integrals_unconstrained);
    RUN(test_json);
    return check_summary("audit");
}
