/* test_collect.c — the momenta, E_i and energy by velocity monomials
 * (mech/collect.h) equal the derived ones (the zero test), on the examples
 * and on Lagrangians with a velocity-linear part b, a velocity-free part
 * c and a mass matrix depending on t and on several coordinates; and a
 * Lagrangian that is not quadratic in the velocities is refused. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "doc/derive.h"
#include "core/eval.h"
#include "mech/collect.h"
#include "lang/model.h"

#ifndef SRCDIR
#define SRCDIR "."
#endif

static int is_zero(ch_ctx *ctx, const ch_expr *e)
{
    ch_zero_result r = ch_zero_test(ctx, e, NULL, NULL, 8);
    return r.verdict == CH_ZERO_YES;
}

static const ch_expr *as_is(void *arg, const ch_expr *e)
{
    (void)arg;
    return e;
}

/* Collects m's forms; want: 1 (quadratic, forms equal the derived ones)
 * or 0 (refused). */
static void check_model(ch_ctx *ctx, const char *name, ch_model *m, int want)
{
    ch_lagrange L;
    ch_error err;
    ch_error_clear(&err);
    int rc = ch_lagrange_derive(ctx, m, &L, &err);
    if (!rc) rc = ch_lagrange_euler(ctx, m, &L);
    CHECK_MSG(rc == 0, "%s: %s %s", name, err.msg, ch_ctx_error(ctx)->msg);
    if (rc) return;
    ch_collected c;
    rc = ch_collect_quadratic(ctx, m, &L, L.M, as_is, NULL, &c);
    CHECK_MSG(rc == want, "%s: collect returned %d, want %d", name, rc, want);
    if (rc != 1) return;
    for (size_t i = 0; i < m->n; i++) {
        CHECK_MSG(is_zero(ctx, ch_sub(ctx, c.p[i], L.p[i])), "%s: p_%zu", name, i);
        CHECK_MSG(is_zero(ctx, ch_sub(ctx, c.EL[i], L.EL[i])), "%s: E_%zu", name, i);
    }
    CHECK_MSG(is_zero(ctx, ch_sub(ctx, c.energy, L.energy)), "%s: energy", name);
}

static void check_file(const char *name)
{
    char path[512];
    snprintf(path, sizeof path, "%s/examples/%s", SRCDIR, name);
    ch_ctx *ctx = ch_ctx_new();
    ch_model *m = NULL;
    ch_error err;
    ch_error_clear(&err);
    int rc = ch_model_load(ctx, path, &m, &err);
    CHECK_MSG(rc == 0, "%s: %s", name, err.msg);
    if (rc == 0) check_model(ctx, name, m, 1);
    ch_ctx_free(ctx);
}

static void check_text(const char *text, int want)
{
    ch_ctx *ctx = ch_ctx_new();
    ch_model *m = NULL;
    ch_error err;
    ch_error_clear(&err);
    int rc = ch_model_parse(ctx, "t.nh", text, strlen(text), &m, &err);
    CHECK_MSG(rc == 0, "parse: %s", err.msg);
    if (rc == 0) check_model(ctx, text, m, want);
    ch_ctx_free(ctx);
}

static void test_examples(void)
{
    static const char *names[] = {"knife_edge.nh", "chaplygin_sleigh.nh",
                                  "vertical_disk.nh", "double_pendulum.nh",
                                  "pendulum_xy.nh", "moving_belt.nh",
                                  "appell_hamel.nh", "pars_affine.nh"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        check_file(names[i]);
}

static void test_inline(void)
{
    /* a charge in a magnetic field, a time-dependent potential and a
     * drift: b and c nonzero, b depending on q and t */
    check_text("coordinates x y\nparameters m=1 B=2 k=3\n"
               "lagrangian m/2*(x'^2 + y'^2) + B/2*(x*y' - y*x') + k*t*x' "
               "+ cos(t)*x*y - y^2*x\n", 1);
    /* M depending on t and on several coordinates, a chain-like
     * coupling: G_ijk with j != k and all three of its terms */
    check_text("coordinates a b c\nparameters m=1\n"
               "lagrangian exp(t)*a'^2/2 + (2 + cos(a - c))*b'^2/2 "
               "+ sin(a)*cos(b)*a'*c' + (3 + b^2)*c'^2/2 + a*b'*c + t*c'\n", 1);
    /* the 2-trailer of bench/gen_trailer.py: E_i with x, y and angles */
    check_text("coordinates x y th0 th1 th2\nparameters m=1 J=0.1 d=1\n"
               "define x1 = x - d*cos(th1)\ndefine y1 = y - d*sin(th1)\n"
               "define x2 = x1 - d*cos(th2)\ndefine y2 = y1 - d*sin(th2)\n"
               "lagrangian m/2*(x'^2 + y'^2) + J/2*th0'^2 + m/2*(x1'^2 + y1'^2) "
               "+ J/2*th1'^2 + m/2*(x2'^2 + y2'^2) + J/2*th2'^2\n"
               "constraint -sin(th0)*x' + cos(th0)*y' = 0\n"
               "constraint -sin(th1)*x1' + cos(th1)*y1' = 0\n"
               "constraint -sin(th2)*x2' + cos(th2)*y2' = 0\n", 1);
    /* not quadratic: a square root and abs of velocities */
    check_text("coordinates x\nparameters m=1\n"
               "lagrangian -m*sqrt(1 - x'^2)\n", 0);
    check_text("coordinates x y\n"
               "lagrangian x'^2/2 + y'^2/2 + abs(y')\n", 0);
    /* cubic in a velocity: M depends on it */
    check_text("coordinates x y\n"
               "lagrangian x'^2/2 + y'^2/2 + x'^3\n", 0);
    /* 64 coordinates, every entry of M holding all of them: shown as
     * derived (the collected forms would take 64^3 / 2 derivatives) */
    char *dense = malloc(65536), *at = dense;
    at += sprintf(at, "coordinates");
    for (int i = 0; i < 64; i++) at += sprintf(at, " q%d", i);
    at += sprintf(at, "\nlagrangian (2 + cos(q0");
    for (int i = 1; i < 64; i++) at += sprintf(at, " + q%d", i);
    at += sprintf(at, "))*(q0'");
    for (int i = 1; i < 64; i++) at += sprintf(at, " + q%d'", i);
    at += sprintf(at, ")^2/2");
    for (int i = 0; i < 64; i++) at += sprintf(at, " + q%d'^2/2", i);
    sprintf(at, "\n");
    check_text(dense, 0);
    free(dense);
}

/* A display form does not fail the command: with the node limit just
 * above the derivation's nodes the collected forms cannot be built, and
 * derive shows the tidy ones (it said "out of memory" before). */
static void test_node_limit(void)
{
    char path[512];
    snprintf(path, sizeof path, "%s/examples/double_pendulum.nh", SRCDIR);
    ch_ctx *ctx = ch_ctx_new();
    ch_model *m = NULL;
    ch_mechanics *mech = NULL;
    ch_derivation *d = NULL;
    ch_error err;
    ch_error_clear(&err);
    int rc = ch_model_load(ctx, path, &m, &err);
    if (rc == 0) rc = ch_mechanics_derive(ctx, m, &mech, &err);
    if (rc == 0) rc = ch_derivation_of(mech, &d, &err);
    CHECK_MSG(rc == 0, "%s", err.msg);
    if (rc == 0) {
        ch_ctx_set_node_limit(ctx, ch_ctx_nnodes(ctx) + 2);
        CHECK(ch_derivation_prepare(d, CH_FORMAT_JSON, 0, NULL) == 0);
        CHECK(ch_ctx_error(ctx)->code == CH_OK);
        const ch_entry *e = ch_derivation_find(d, "euler_lagrange");
        CHECK(e && e->rows == m->n && e->e[0] && e->e[1]);
    }
    ch_ctx_free(ctx);
}

int main(void)
{
    RUN(test_examples);
    RUN(test_inline);
    RUN(test_node_limit);
    return check_summary("test_collect");
}
