/* test_lagrange.c — identities of THEORY §1–§3 on every example:
 *   E_i = M_ij q_tt_j + h_i,  M symmetric,
 *   dE/dt = q_t_i E_i - dL/dt  (for any motion),
 *   d/dt phi = G q_tt + c,
 * each decided by the zero test, plus the positioned mechanics errors. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "core/diff.h"
#include "core/eval.h"
#include "mech/lagrange.h"
#include "lang/model.h"

#ifndef SRCDIR
#define SRCDIR "."
#endif

static int is_zero(ch_ctx *ctx, const ch_expr *e)
{
    ch_zero_result r = ch_zero_test(ctx, e, NULL, NULL, 8);
    return r.verdict == CH_ZERO_YES;
}

static void check_example(const char *name)
{
    char path[512];
    snprintf(path, sizeof path, "%s/examples/%s", SRCDIR, name);
    ch_ctx *ctx = ch_ctx_new();
    ch_model *m = NULL;
    ch_lagrange L;
    ch_error err;
    ch_error_clear(&err);
    int rc = ch_model_load(ctx, path, &m, &err);
    CHECK_MSG(rc == 0, "%s: %s", name, err.msg);
    if (rc) goto out;
    rc = ch_lagrange_derive(ctx, m, &L, &err);
    CHECK_MSG(rc == 0, "%s: %s", name, err.msg);
    if (rc) goto out;
    CHECK(L.EL == NULL); /* made on demand */
    rc = ch_lagrange_euler(ctx, m, &L);
    CHECK_MSG(rc == 0, "%s: %s", name, ch_ctx_error(ctx)->msg);
    if (rc) goto out;
    size_t n = m->n;
    const ch_expr **terms = calloc(n + 2, sizeof *terms);
    for (size_t i = 0; i < n; i++) {
        for (size_t j = 0; j < n; j++) {
            CHECK(L.M[i * n + j] == L.M[j * n + i]);
            terms[j] = ch_mul(ctx, L.M[i * n + j], m->qtt[j]);
        }
        terms[n] = L.h[i];
        terms[n + 1] = ch_neg(ctx, L.EL[i]);
        CHECK_MSG(is_zero(ctx, ch_add_n(ctx, n + 2, terms)), "%s: E_%zu != M q'' + h", name, i);
    }
    /* energy balance for any motion: dE/dt = q_t . E - dL/dt */
    for (size_t i = 0; i < n; i++) terms[i] = ch_mul(ctx, m->qt[i], L.EL[i]);
    terms[n] = ch_neg(ctx, ch_diff(ctx, m->lagrangian, m->t));
    terms[n + 1] = ch_neg(ctx, ch_diff_t(ctx, L.energy));
    CHECK_MSG(is_zero(ctx, ch_add_n(ctx, n + 2, terms)), "%s: energy balance", name);
    /* constraints: d/dt phi = G q_tt + c */
    for (size_t a = 0; a < m->k; a++) {
        for (size_t j = 0; j < n; j++) {
            CHECK(L.G[a * n + j] == ch_diff(ctx, L.phi[a], m->qt[j]));
            terms[j] = ch_mul(ctx, L.G[a * n + j], m->qtt[j]);
        }
        terms[n] = L.c[a];
        terms[n + 1] = ch_neg(ctx, ch_diff_t(ctx, L.phi[a]));
        CHECK_MSG(is_zero(ctx, ch_add_n(ctx, n + 2, terms)), "%s: phi' != G q'' + c", name);
    }
    /* a nonzero expression is not declared zero */
    CHECK(!is_zero(ctx, ch_add(ctx, L.energy, ch_one(ctx))));
    free(terms);
out:
    ch_ctx_free(ctx);
}

static void test_examples(void)
{
    static const char *names[] = {"knife_edge.nh", "chaplygin_sleigh.nh",
                                  "vertical_disk.nh", "double_pendulum.nh",
                                  "pendulum_xy.nh"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        check_example(names[i]);
}

/* A mechanics error is positioned at the statement responsible. */
static void expect_error(const char *text, int line, int col, const char *msg)
{
    ch_ctx *ctx = ch_ctx_new();
    ch_model *m = NULL;
    ch_lagrange L;
    ch_error err;
    ch_error_clear(&err);
    int rc = ch_model_parse(ctx, "t.nh", text, strlen(text), &m, &err);
    CHECK_MSG(rc == 0, "parse: %s", err.msg);
    if (rc == 0) {
        rc = ch_lagrange_derive(ctx, m, &L, &err);
        CHECK(rc == CH_ERR_MODEL);
        CHECK_MSG(err.line == line && err.col == col, "at %d:%d, want %d:%d",
                  err.line, err.col, line, col);
        CHECK_MSG(strstr(err.msg, msg) != NULL, "message '%s' lacks '%s'", err.msg, msg);
    }
    ch_ctx_free(ctx);
}

static void test_errors(void)
{
    expect_error("coordinates x y\nlagrangian (x' + y')^2/2\n", 2, 1,
                 "degenerate Lagrangian");
    expect_error("coordinates x y\nlagrangian x'^2/2 + y\n", 2, 1,
                 "degenerate Lagrangian");
    expect_error("coordinates x y z w\nlagrangian (x'^2+y'^2+z'^2+w'^2)/2\n"
                 "constraint x' + y' = 0\nconstraint z' = 0\n"
                 "constraint z = 1\n", 5, 1, "inadmissible constraints");
    expect_error("coordinates x y z\nlagrangian (x'^2+y'^2+z'^2)/2\n"
                 "constraint x*x' + y' = 0\nconstraint 3*x*x' + 3*y' = 1\n",
                 4, 1, "inadmissible constraints");
}

int main(void)
{
    RUN(test_examples);
    RUN(test_errors);
    return check_summary("test_lagrange");
}
