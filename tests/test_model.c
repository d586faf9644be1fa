/* test_model.c — the model language front end: lexer, parser, model checks.
 *
 * Examples and the error files in tests/errors/ are found relative to
 * SRCDIR (the repository root; "." when not defined). Each error
 * file's first line is "# expect: LINE:COL: error: MESSAGE", a substring
 * of the formatted error it must produce: when parsing or, for a file
 * that parses, when deriving (the mechanics' checks of the model, such as
 * a `dependent` block singular at the initial state). */
#define _POSIX_C_SOURCE 200809L

#include <dirent.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mech/mechanics.h"
#include "core/diff.h"
#include "lang/model.h"
#include "check.h"

/* Correctly rounded by the compiler (PI_D is not C11). */
#define PI_D 3.14159265358979323846264338327950288
#define E_D 2.71828182845904523536028747135266250

#ifndef SRCDIR
#define SRCDIR "."
#endif

/* ---- helpers ------------------------------------------------------------ */

static ch_model *parse_ok(ch_ctx *ctx, const char *text)
{
    ch_model *m = NULL;
    ch_error err;
    int rc = ch_model_parse(ctx, "test.nh", text, strlen(text), &m, &err);
    CHECK_MSG(rc == 0 && m, "parse failed: %d:%d: %s\n---\n%s", err.line,
              err.col, err.msg, text);
    return rc == 0 ? m : NULL;
}

/* Parses text of length len and checks the formatted error contains want. */
static void expect_error_n(const char *text, size_t len, const char *want,
                           ch_status code)
{
    ch_ctx *ctx = ch_ctx_new();
    ch_model *m = NULL;
    ch_error err;
    int rc = ch_model_parse(ctx, "e.nh", text, len, &m, &err);
    char buf[700];
    ch_error_format(&err, buf, sizeof buf);
    CHECK_MSG(rc != 0 && m == NULL, "no error for\n%.200s", text);
    CHECK_MSG(strstr(buf, want) != NULL, "got \"%s\", want \"%s\"", buf, want);
    CHECK_MSG(err.code == code, "code %d, want %d (%s)", (int)err.code,
              (int)code, buf);
    ch_ctx_free(ctx);
}

static void expect_error(const char *text, const char *want)
{
    expect_error_n(text, strlen(text), want, CH_ERR_MODEL);
}

static const ch_expr *sym(ch_ctx *ctx, const char *name)
{
    return ch_symbol_find(ctx, name);
}

static const ch_expr *num(ch_ctx *ctx, slong p, slong q)
{
    return ch_num_frac(ctx, p, q);
}

static ch_model *load_example(ch_ctx *ctx, const char *name)
{
    char path[512];
    snprintf(path, sizeof path, "%s/examples/%s", SRCDIR, name);
    ch_model *m = NULL;
    ch_error err;
    int rc = ch_model_load(ctx, path, &m, &err);
    CHECK_MSG(rc == 0, "%s: %d:%d: %s", path, err.line, err.col, err.msg);
    return rc == 0 ? m : NULL;
}

/* ---- examples ----------------------------------------------------------- */

static void test_examples(void)
{
    static const struct {
        const char *file, *name;
        size_t n, np, k;
    } ex[] = {
        {"knife_edge.nh", "knife_edge", 3, 5, 1},
        {"chaplygin_sleigh.nh", "chaplygin_sleigh", 3, 3, 1},
        {"vertical_disk.nh", "vertical_disk", 4, 4, 2},
        {"double_pendulum.nh", "double_pendulum", 2, 5, 0},
        {"pendulum_xy.nh", "pendulum_xy", 2, 3, 1},
    };
    for (size_t i = 0; i < sizeof ex / sizeof ex[0]; i++) {
        ch_ctx *ctx = ch_ctx_new();
        ch_model *m = load_example(ctx, ex[i].file);
        if (m) {
            CHECK_STR(m->name, ex[i].name);
            CHECK(m->n == ex[i].n && m->np == ex[i].np && m->k == ex[i].k);
            CHECK(m->lagrangian != NULL);
        }
        ch_ctx_free(ctx);
    }
}

/* Initial values satisfy the examples' velocity constraints. */
static void test_example_initial_consistent(void)
{
    /* one context per model: symbol names differ in meaning between them */
    ch_ctx *ctx = ch_ctx_new();
    ch_model *m = load_example(ctx, "chaplygin_sleigh.nh");
    if (m) { /* -sin(th) x' + cos(th) y' - a th' at th = 0 */
        CHECK_NEAR(m->qt0[1] - m->param_default[2] * m->qt0[2], 0, 1e-15);
        CHECK(m->ndep == 1 && m->dependent[0] == 2);
    }
    ch_ctx_free(ctx);
    ctx = ch_ctx_new();
    m = load_example(ctx, "vertical_disk.nh");
    if (m) { /* x' = R cos(phi) th', y' = R sin(phi) th' at phi = 0 */
        CHECK_NEAR(m->qt0[0], m->param_default[1] * m->qt0[3], 1e-15);
        CHECK(m->qt0[1] == 0 && m->q0[2] == 0);
        CHECK(m->qt0[2] == 0.5 && m->qt0[3] == 2);
        CHECK(m->ndep == 2 && m->dependent[0] == 0 && m->dependent[1] == 1);
    }
    ch_ctx_free(ctx);
    ctx = ch_ctx_new();
    m = load_example(ctx, "pendulum_xy.nh");
    if (m) {
        double x = m->q0[0], y = m->q0[1];
        CHECK_NEAR(x * x + y * y, m->param_default[2] * m->param_default[2],
                   1e-15);
        CHECK_NEAR(x * m->qt0[0] + y * m->qt0[1], 0, 1e-15);
        CHECK(m->nfields == 1);
    }
    ch_ctx_free(ctx);
}

static void test_knife_edge(void)
{
    ch_ctx *ctx = ch_ctx_new();
    ch_model *m = load_example(ctx, "knife_edge.nh");
    if (!m) {
        ch_ctx_free(ctx);
        return;
    }
    CHECK_STR(ch_sym_of(m->q[2])->name, "phi");
    CHECK_STR(ch_sym_of(m->qt[2])->name, "phi_t");
    CHECK_STR(ch_sym_of(m->qtt[2])->name, "phi_tt");
    CHECK(m->q_pos[0].line == 9 && m->q_pos[0].col == 13);
    CHECK(m->name_pos.line == 8 && m->name_pos.col == 7);
    /* parameters: exact values and correctly rounded defaults */
    CHECK_STR(ch_sym_of(m->param[1])->name, "J");
    CHECK(m->param_value[1] == num(ctx, 1, 5));
    CHECK(m->param_default[1] == 0.2);
    CHECK(m->param_value[2] == num(ctx, 981, 100));
    CHECK(m->param_default[2] == 9.81);
    CHECK(m->param_pos[4].line == 10 && m->param_pos[4].col == 39);
    /* define v, used nowhere else, kept as written */
    CHECK(m->ndefines == 1);
    CHECK_STR(m->defines[0].name, "v");
    const ch_expr *x = sym(ctx, "x"), *y = sym(ctx, "y"), *phi = sym(ctx, "phi");
    const ch_expr *xt = sym(ctx, "x_t"), *yt = sym(ctx, "y_t");
    const ch_expr *v = ch_add(ctx, ch_mul(ctx, ch_fun1(ctx, CH_F_COS, phi), xt),
                              ch_mul(ctx, ch_fun1(ctx, CH_F_SIN, phi), yt));
    CHECK(m->defines[0].expr == v);
    /* the nonholonomic constraint is kept as written */
    CHECK(m->k == 1 && m->holonomic[0] == 0);
    const ch_expr *g = ch_sub(ctx, ch_mul(ctx, ch_fun1(ctx, CH_F_SIN, phi), xt),
                              ch_mul(ctx, ch_fun1(ctx, CH_F_COS, phi), yt));
    CHECK(m->constraint[0] == g && m->constraint_orig[0] == g);
    CHECK(m->constraint_pos[0].line == 13 && m->constraint_pos[0].col == 1);
    /* force on phi only; the others are 0 without a position */
    const ch_expr *c = sym(ctx, "c");
    CHECK(m->force[2] == ch_neg(ctx, ch_mul(ctx, c, sym(ctx, "phi_t"))));
    CHECK(m->force_pos[2].line == 14 && m->force_pos[2].col == 1);
    CHECK(ch_is_zero(m->force[0]) && m->force_pos[0].line == 0);
    CHECK(m->ndep == 1 && m->dependent[0] == 1);
    CHECK(m->dependent_pos.line == 15);
    CHECK(m->q0[0] == 0 && m->qt0[0] == 1 && m->qt0_given[0]);
    CHECK(m->qt0_given[1] == 0 && m->qt0[2] == 0.3 && m->qt0_given[2]);
    CHECK(m->initial_pos.line == 16);
    CHECK(m->lagrangian_pos.line == 12 && m->lagrangian_pos.col == 1);
    /* L contains m*g*sin(alpha)*x */
    CHECK(ch_has_sym(m->lagrangian, x) && ch_has_sym(m->lagrangian, xt));
    CHECK(!ch_has_sym(m->lagrangian, y));
    CHECK_STR(m->file, SRCDIR "/examples/knife_edge.nh");
    ch_ctx_free(ctx);
}

/* ---- symbols ------------------------------------------------------------ */

static void test_symbols(void)
{
    ch_ctx *ctx = ch_ctx_new();
    ch_model *m = parse_ok(ctx, "coordinates a b\nparameters k=2\n"
                                "lagrangian a'^2 + b'^2 - k*a*b + t + pi");
    if (m) {
        for (size_t i = 0; i < 2; i++) {
            const ch_sym *q = ch_sym_of(m->q[i]), *v = ch_sym_of(m->qt[i]),
                         *w = ch_sym_of(m->qtt[i]);
            CHECK(q->kind == CH_SYM_COORD && q->order == 0
                  && q->index == (int)i);
            CHECK(v->kind == CH_SYM_VEL && v->order == 1 && v->index == (int)i);
            CHECK(w->kind == CH_SYM_ACC && w->order == 2 && w->index == (int)i);
            CHECK_STR(v->base, q->name);
            CHECK_STR(w->base, q->name);
            CHECK(q->dot == m->qt[i] && v->dot == m->qtt[i]);
        }
        CHECK_STR(ch_sym_of(m->qt[1])->name, "b_t");
        CHECK_STR(ch_sym_of(m->qtt[0])->name, "a_tt");
        CHECK(ch_sym_of(m->t)->kind == CH_SYM_TIME && ch_sym_of(m->t)->dot == ch_one(ctx));
        CHECK_STR(ch_sym_of(m->t)->name, "t");
        CHECK(ch_sym_of(m->param[0])->kind == CH_SYM_PARAM
              && ch_sym_of(m->param[0])->index == 0);
        CHECK(ch_has_sym(m->lagrangian, ch_pi(ctx)));
        CHECK(ch_has_sym(m->lagrangian, m->t));
        CHECK(m->param_value[0] == num(ctx, 2, 1));
    }
    ch_ctx_free(ctx);
}

/* `event NAME = EXPR [stop]`: name, expression in t, q, q', the flag. */
static void test_events(void)
{
    ch_ctx *ctx = ch_ctx_new();
    ch_model *m = parse_ok(ctx, "coordinates x y\nlagrangian x'^2 + y'^2\n"
                                "event far = x - 2 stop\nevent slow = x'*y' - t\n"
                                "event stopped = y\n");
    if (m) {
        CHECK(m->nevents == 3);
        CHECK_STR(m->events[0].name, "far");
        CHECK_STR(m->events[1].name, "slow");
        CHECK_STR(m->events[2].name, "stopped"); /* a name, not the keyword */
        CHECK(m->event_stop[0] == 1 && m->event_stop[1] == 0 && m->event_stop[2] == 0);
        CHECK(ch_has_sym(m->events[1].expr, m->qt[0]) && ch_has_sym(m->events[1].expr, m->t));
        CHECK(m->events[0].pos.line == 3 && m->events[0].pos.col == 7);
        char buf[64];
        CHECK(ch_model_statement_at(m, 4, 7, buf, sizeof buf) == 1);
        CHECK_STR(buf, "event slow");
    }
    m = parse_ok(ctx, "coordinates x\nlagrangian x'^2\n");
    CHECK(m && m->nevents == 0);
    ch_ctx_free(ctx);
    expect_error("coordinates x\nlagrangian x'^2\nevent f = x\nevent f = x",
                 "4:7: error: duplicate name 'f'");
}

/* ---- holonomic constraints, defines ----------------------------------------- */

static void test_holonomic(void)
{
    ch_ctx *ctx = ch_ctx_new();
    ch_model *m = load_example(ctx, "pendulum_xy.nh");
    if (m) {
        const ch_expr *x = m->q[0], *y = m->q[1], *l = m->param[2];
        const ch_expr *g = ch_sub(ctx,
                                  ch_add(ctx, ch_pow_si(ctx, x, 2),
                                         ch_pow_si(ctx, y, 2)),
                                  ch_pow_si(ctx, l, 2));
        CHECK(m->holonomic[0] == 1);
        CHECK(m->constraint_orig[0] == g);
        const ch_expr *dg = ch_add(ctx, ch_scale_si(ctx, 2, ch_mul(ctx, x, m->qt[0])),
                                   ch_scale_si(ctx, 2, ch_mul(ctx, y, m->qt[1])));
        CHECK(m->constraint[0] == dg);
        CHECK(m->constraint[0] == ch_diff_t(ctx, g));
        /* field rotation: x = -y, y = x */
        CHECK_STR(m->fields[0].name, "rotation");
        CHECK(m->fields[0].comp[0] == ch_neg(ctx, y));
        CHECK(m->fields[0].comp[1] == x);
    }
    ch_ctx_free(ctx);
    /* time-dependent holonomic constraint: d/dt (x - sin(t)) = x' - cos(t) */
    ctx = ch_ctx_new();
    m = parse_ok(ctx, "coordinates x y z\nlagrangian x'^2 + y'^2 + z'^2\n"
                      "constraint x = sin(t)\nconstraint y' = x'");
    if (m) {
        CHECK(m->holonomic[0] == 1 && m->holonomic[1] == 0);
        CHECK(m->constraint[0]
              == ch_sub(ctx, m->qt[0], ch_fun1(ctx, CH_F_COS, m->t)));
        CHECK(m->constraint[1] == ch_sub(ctx, m->qt[1], m->qt[0]));
        CHECK(m->constraint_pos[1].line == 4);
    }
    ch_ctx_free(ctx);
}

static void test_define_derivative(void)
{
    ch_ctx *ctx = ch_ctx_new();
    ch_model *m = parse_ok(ctx, "coordinates x y\nparameters a=2\n"
                                "define h = a*x^2 + t*y\n"
                                "define w = h' + 1\n"
                                "lagrangian h'^2/2 + w\n"
                                "constraint h' = 0");
    if (m) {
        const ch_expr *x = m->q[0], *y = m->q[1], *a = m->param[0];
        const ch_expr *dh = ch_add_n(ctx, 3, (const ch_expr *[]){
            ch_scale_si(ctx, 2, ch_mul_n(ctx, 3, (const ch_expr *[]){a, x, m->qt[0]})),
            y, ch_mul(ctx, m->t, m->qt[1])});
        CHECK(m->constraint[0] == dh);
        CHECK(m->holonomic[0] == 0); /* written with velocities (via h') */
        CHECK(m->ndefines == 2);
        CHECK(m->defines[1].expr == ch_add(ctx, dh, ch_one(ctx)));
        CHECK(m->defines[1].pos.line == 4 && m->defines[1].pos.col == 8);
        CHECK(m->lagrangian
              == ch_add(ctx, ch_scale(ctx, num(ctx, 1, 2)->num, ch_pow_si(ctx, dh, 2)),
                        ch_add(ctx, dh, ch_one(ctx))));
    }
    ch_ctx_free(ctx);
}

/* ---- syntax --------------------------------------------------------------- */

static void test_continuation(void)
{
    static const char *const forms[] = {
        "coordinates x y\nlagrangian x'^2 + 2*y'^2 - x*y\n",
        "coordinates x y\nlagrangian x'^2 +\n  2*y'^2 - x*y\n",
        "coordinates x y\nlagrangian x'^2 + 2 *   # comment\n\n  y'^2 - x*y\n",
        "coordinates x y\nlagrangian (x'^2\n + 2*y'^2\n - x*y)\n",
        "coordinates x y\nlagrangian x'^\n2 + 2*y'^2 - x*y",
        "coordinates x y\nlagrangian x'^2 + 2*y'^2 - x*y -\n 0\n",
        "coordinates x y\r\nlagrangian x'^2 + 2*y'^2 - x*y\r\n",
        "\xEF\xBB\xBF# bom\n\n\ncoordinates\tx y\n\n\nlagrangian x'^2+2*y'^2-x*y",
        "coordinates x,\n y\nlagrangian x'^2 + 2*y'^2 - x*y\n",
    };
    ch_ctx *ctx = ch_ctx_new();
    const ch_expr *first = NULL;
    for (size_t i = 0; i < sizeof forms / sizeof forms[0]; i++) {
        ch_model *m = parse_ok(ctx, forms[i]);
        if (!m) continue;
        if (!first) first = m->lagrangian;
        CHECK_MSG(m->lagrangian == first && m->n == 2, "form %zu", i);
    }
    /* `=` at the end of a line and a comma in a field continue, too */
    ch_model *m = parse_ok(ctx, "coordinates x y\ndefine v =\n x'\nlagrangian v^2\n"
                                "field Y: x = 1,\n y = x\ninitial x=1, y=2");
    if (m) {
        CHECK(m->lagrangian == ch_pow_si(ctx, m->qt[0], 2));
        CHECK(m->fields[0].comp[1] == m->q[0]);
        CHECK(m->q0[1] == 2);
    }
    /* the statement after a multi-line one starts on its own line */
    expect_error("coordinates x\nlagrangian (x'\n)\nlagrangian 1",
                 "4:1: error: statement 'lagrangian' repeated (first at 2:1)");
    expect_error("coordinates x\nlagrangian x +\n\n", "4:1: error: expected an "
                                                      "expression, found end of file");
    ch_ctx_free(ctx);
}

static void test_precedence(void)
{
    ch_ctx *ctx = ch_ctx_new();
    ch_model *m = parse_ok(ctx, "coordinates x y z\nlagrangian 0\n"
                                "define a = -x^2\ndefine b = 2^-1\n"
                                "define c = 2^3^2\ndefine d = x - y - z\n"
                                "define e = x/y/z\ndefine f = -x*y + +z\n"
                                "define g = x^-y\ndefine h = sqrt(x)*abs(y)\n"
                                "define i = atan2(y, x) + exp(log(z))\n"
                                "define j = (x + y)^2 * 2^(1/2)\n"
                                "define k = 0.25e1 + 1e-3 + .5\n");
    if (m) {
        const ch_expr *x = m->q[0], *y = m->q[1], *z = m->q[2];
        const ch_named_expr *d = m->defines;
        CHECK(d[0].expr == ch_neg(ctx, ch_pow_si(ctx, x, 2)));
        CHECK(d[1].expr == num(ctx, 1, 2));
        CHECK(d[2].expr == num(ctx, 512, 1));
        CHECK(d[3].expr == ch_sub(ctx, ch_sub(ctx, x, y), z));
        CHECK(d[4].expr == ch_div(ctx, ch_div(ctx, x, y), z));
        CHECK(d[5].expr == ch_add(ctx, ch_neg(ctx, ch_mul(ctx, x, y)), z));
        CHECK(d[6].expr == ch_pow(ctx, x, ch_neg(ctx, y)));
        CHECK(d[7].expr
              == ch_mul(ctx, ch_sqrt(ctx, x), ch_fun1(ctx, CH_F_ABS, y)));
        CHECK(d[8].expr
              == ch_add(ctx, ch_atan2(ctx, y, x),
                        ch_fun1(ctx, CH_F_EXP, ch_fun1(ctx, CH_F_LOG, z))));
        CHECK(d[9].expr == ch_mul(ctx, ch_pow_si(ctx, ch_add(ctx, x, y), 2),
                                  ch_sqrt(ctx, num(ctx, 2, 1))));
        CHECK(d[10].expr == num(ctx, 2500 + 1 + 500, 1000));
    }
    ch_ctx_free(ctx);
}

/* A long flat sum is built in one n-ary call, not term by term. */
static void test_long_sum(void)
{
    size_t n = 20000;
    char *text = malloc(64 + n * 32);
    if (!text) return;
    size_t len = (size_t)sprintf(text, "coordinates x\nparameters");
    for (size_t i = 0; i < n; i++) len += (size_t)sprintf(text + len, " p%zu=%zu", i, i);
    len += (size_t)sprintf(text + len, "\nlagrangian x'^2");
    for (size_t i = 0; i < n; i++) len += (size_t)sprintf(text + len, "+p%zu*x", i);
    ch_ctx *ctx = ch_ctx_new();
    ch_model *m = parse_ok(ctx, text);
    /* the work, not the time: summing term by term would make n partial
     * sums of n^2/2 terms in all */
    size_t terms = 0;
    for (uint32_t id = 1; id <= ch_ctx_nnodes(ctx); id++) {
        const ch_expr *e = ch_ctx_node(ctx, id);
        if (e->kind == CH_ADD || e->kind == CH_MUL) terms += e->n;
    }
    CHECK_MSG(terms <= 4 * n, "%zu terms in the context's sums and products", terms);
    if (m) CHECK(m->np == n && m->param_default[n - 1] == (double)(n - 1));
    ch_ctx_free(ctx);
    free(text);
}

/* ---- values --------------------------------------------------------------- */

static void test_values(void)
{
    ch_ctx *ctx = ch_ctx_new();
    ch_model *m = parse_ok(ctx, "coordinates x y\n"
                                "parameters a=2/5 b=-3 c=pi/4 d=0.1 e=sqrt(2)\n"
                                "parameters f=2/3 g=exp(1) h=-(1/3) k=1e-320 "
                                "l=sin(pi) m=2^0.5^2\n"
                                "lagrangian x'^2\ninitial x=pi y'=-1/4");
    if (m) {
        CHECK(m->np == 11);
        CHECK(m->param_value[0] == num(ctx, 2, 5) && m->param_default[0] == 0.4);
        CHECK(m->param_value[1] == num(ctx, -3, 1) && m->param_default[1] == -3);
        CHECK(m->param_value[2] == ch_scale(ctx, num(ctx, 1, 4)->num, ch_pi(ctx)));
        CHECK(m->param_default[2] == PI_D / 4);
        CHECK(m->param_value[3] == num(ctx, 1, 10) && m->param_default[3] == 0.1);
        CHECK(m->param_default[4] == sqrt(2.0));
        CHECK(m->param_default[5] == 2.0 / 3.0); /* rounded, not truncated */
        CHECK(m->param_default[6] == E_D);
        CHECK(m->param_default[7] == -1.0 / 3.0);
        CHECK(m->param_default[8] == 1e-320);
        CHECK(fabs(m->param_default[9]) < 1e-300);
        CHECK(m->param_default[10] == pow(2, 0.25));
        CHECK(m->q0[0] == PI_D && m->qt0[1] == -0.25 && m->qt0_given[1]);
        CHECK(m->qt0_given[0] == 0);
    }
    ch_ctx_free(ctx);
    /* a define without variables is a constant; one with them is not */
    ctx = ch_ctx_new();
    m = parse_ok(ctx, "define c = pi/2 + 1\ncoordinates x\nparameters p=2*c\n"
                      "lagrangian x'^2\ninitial x'=c");
    if (m) /* correctly rounded pi + 2 and pi/2 + 1 */
        CHECK(m->param_default[0] == 5.14159265358979323846264338327950288
              && m->qt0[0] == 2.57079632679489661923132169163975144);
    ch_ctx_free(ctx);
    expect_error("coordinates x\ndefine c = x - x\nparameters p=c\nlagrangian x'^2",
                 "3:14: error: a parameter value must be a constant, but 'c' is not");
    expect_error("coordinates x\ndefine v = x'\nlagrangian x'^2\nfield Y: x = v",
                 "4:14: error: a field component must not depend on velocities, "
                 "but 'v' does");
    /* needs far more than 128 bits to reduce the argument */
    ctx = ch_ctx_new();
    m = parse_ok(ctx, "coordinates x\nparameters p=sin(1e4000)\nlagrangian x");
    if (m) CHECK(m->param_default[0] == 0.48692809987284572065); /* arb, 20000 bits */
    ch_ctx_free(ctx);
}

static void test_model_names(void)
{
    static const struct {
        const char *file, *name;
    } cases[] = {
        {"dir/my-model.nh", "my_model"}, {"2body.nh", "m_2body"},
        {"int.nh", "int_model"},         {"a/b.c/pend", "pend"},
        {".nh", "m__nh"},                {"", "model"},
        {"x.y.nh", "x_y"},               {"caf\xC3\xA9.nh", "caf__"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        ch_ctx *ctx = ch_ctx_new();
        ch_model *m = NULL;
        ch_error err;
        const char *text = "coordinates x\nlagrangian x'^2";
        CHECK(ch_model_parse(ctx, cases[i].file, text, strlen(text), &m, &err)
              == 0);
        if (m) CHECK_STR(m->name, cases[i].name);
        if (m) CHECK(m->name_pos.line == 0);
        ch_ctx_free(ctx);
    }
    ch_ctx *ctx = ch_ctx_new();
    ch_model *m = NULL;
    ch_error err;
    const char *text = "coordinates x\nlagrangian x'^2";
    CHECK(ch_model_parse(ctx, NULL, text, strlen(text), &m, &err) == 0);
    if (m) CHECK_STR(m->name, "model");
    char longname[200];
    snprintf(longname, sizeof longname, "%0100d.nh", 7);
    CHECK(ch_model_parse(ctx, longname, text, strlen(text), &m, &err) == 0);
    if (m) CHECK(strlen(m->name) == CH_MAX_IDENT_LEN && m->name[0] == 'm');
    ch_ctx_free(ctx);
}

/* ---- errors --------------------------------------------------------------- */

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void check_error_file(const char *dir, const char *name)
{
    char path[600];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "rb");
    char first[400] = "";
    if (!f || !fgets(first, sizeof first, f)) {
        CHECK_MSG(0, "cannot read %s", path);
        if (f) fclose(f);
        return;
    }
    fclose(f);
    first[strcspn(first, "\r\n")] = 0;
    const char *tag = "# expect: ";
    CHECK_MSG(strncmp(first, tag, strlen(tag)) == 0, "%s: no expect line", path);
    ch_ctx *ctx = ch_ctx_new();
    ch_model *m = NULL;
    ch_error err;
    int rc = ch_model_load(ctx, path, &m, &err);
    ch_mechanics *d = NULL;
    if (rc == 0) rc = ch_mechanics_derive(ctx, m, &d, &err);
    char buf[700];
    ch_error_format(&err, buf, sizeof buf);
    CHECK_MSG(rc != 0 && strstr(buf, first + strlen(tag)),
              "%s: got \"%s\", want \"%s\"", name, rc ? buf : "success",
              first + strlen(tag));
    CHECK_MSG(strncmp(buf, path, strlen(path)) == 0, "%s: file name", buf);
    ch_ctx_free(ctx);
}

static void test_error_files(void)
{
    char dir[512];
    snprintf(dir, sizeof dir, "%s/tests/errors", SRCDIR);
    DIR *d = opendir(dir);
    CHECK_MSG(d != NULL, "cannot open %s", dir);
    if (!d) return;
    char *names[512];
    size_t n = 0;
    for (struct dirent *e; (e = readdir(d)) && n < 512;) {
        size_t len = strlen(e->d_name);
        if (len > 3 && strcmp(e->d_name + len - 3, ".nh") == 0)
            names[n++] = strdup(e->d_name);
    }
    closedir(d);
    qsort(names, n, sizeof names[0], cmp_str);
    CHECK_MSG(n >= 75, "only %zu error files", n);
    for (size_t i = 0; i < n; i++) {
        check_error_file(dir, names[i]);
        free(names[i]);
    }
}

static void test_inline_errors(void)
{
    expect_error_n("coordinates x\nlagrangian x\0 + 1", 28,
                   "2:13: error: NUL byte in input", CH_ERR_MODEL);
    expect_error("", "1:1: error: missing 'coordinates' statement");
    expect_error("# nothing\n\n", "3:1: error: missing 'coordinates' statement");
    expect_error("coordinates x\nlagrangian", "2:11: error: expected an expression, "
                                              "found end of file");
    expect_error("coordinates x\nlagrangian sin(x", "2:17: error: missing ')' for "
                                                    "'(' at 2:15, found end of file");
    expect_error("coordinates x\ninitial", "2:8: error: expected a coordinate or "
                                           "velocity name, found end of file");
    expect_error("model\ncoordinates x", "1:6: error: expected a model name, "
                                         "found end of line");
    expect_error("coordinates x\nlagrangian x'^2\ndependent",
                 "3:10: error: expected a velocity such as x', found end of file");
    expect_error("coordinates x y\nlagrangian x'^2\ndependent x'",
                 "3:1: error: dependent names 1 velocity but there are 0 constraints");
    expect_error("coordinates x y\nlagrangian x'^2\nfield Y:",
                 "3:9: error: expected a coordinate name, found end of file");
    expect_error("coordinates x y\nlagrangian x'^2\nintegral 3 = x",
                 "3:10: error: expected an integral name, found '3'");
    expect_error("coordinates x y\nlagrangian x'^2 + log(0)*0 + 1/(x - x)",
                 "2:31: error: invalid operation at '/': division by zero");
    expect_error("coordinates x\nlagrangian x'^2\ninitial x=1/0",
                 "3:12: error: invalid operation at '/': division by zero");
    expect_error("coordinates x\nparameters p=0^-1\nlagrangian x'^2",
                 "2:15: error: invalid operation at '^': division by zero");

    /* a file over the limit, rejected before lexing */
    size_t big = (size_t)CH_MAX_FILE_BYTES + 1;
    char *text = malloc(big);
    if (text) {
        memset(text, ' ', big);
        expect_error_n(text, big, "e.nh: error: file too large", CH_ERR_LIMIT);
        free(text);
    }
    /* limits that must not exhaust the stack */
    size_t depth = 100000;
    text = malloc(3 * depth + 64);
    if (text) {
        int k = sprintf(text, "coordinates x\nlagrangian ");
        memset(text + k, '(', depth);
        text[k + depth] = 'x';
        memset(text + k + depth + 1, ')', depth);
        text[k + 2 * depth + 1] = 0;
        expect_error_n(text, strlen(text),
                       "2:212: error: expression nested too deeply",
                       CH_ERR_LIMIT);
        memset(text + k, '-', depth);
        expect_error_n(text, k + depth + 1, "nested too deeply", CH_ERR_LIMIT);
        for (size_t i = 0; i < depth; i++) memcpy(text + k + 2 * i, "x^", 2);
        expect_error_n(text, k + 2 * depth, "nested too deeply", CH_ERR_LIMIT);
        free(text);
    }
    /* a chain of defines is bounded by the DAG height, not the nesting */
    text = malloc(40 * 1100);
    if (text) {
        size_t len = (size_t)sprintf(text, "coordinates x\ndefine a0 = x\n");
        for (int i = 1; i <= 1000; i++)
            len += (size_t)sprintf(text + len, "define a%d = sin(a%d)\n", i, i - 1);
        sprintf(text + len, "lagrangian x'^2 + a999\nconstraint a1000 = 0");
        expect_error_n(text, strlen(text), "1002:16: error: expression too deep "
                                           "(depth 1001, max 1000)",
                       CH_ERR_LIMIT);
        free(text);
    }
    char name[100];
    memset(name, 'q', 65);
    snprintf(name + 65, sizeof name - 65, "\nlagrangian 1");
    char t2[200];
    snprintf(t2, sizeof t2, "coordinates %s", name);
    expect_error_n(t2, strlen(t2), "1:13: error: identifier 'qqqqqqqqqqqqqqqq...' "
                                   "is too long (65 bytes, max 64)",
                   CH_ERR_LIMIT);
    memset(name, 'q', 64); /* exactly the limit is fine */
    snprintf(t2, sizeof t2, "coordinates %.64s\nlagrangian 1", name);
    ch_ctx *ctx = ch_ctx_new();
    CHECK(parse_ok(ctx, t2) != NULL);
    ch_ctx_free(ctx);

    expect_error("coordinates x\nlagrangian x_tt", "2:12: error: unknown "
                 "identifier 'x_tt' (models cannot use accelerations)");
    expect_error("coordinates x\nparameters p=log(-1)\nlagrangian x",
                 "2:12: error: value of 'p' is not a finite real number");
    expect_error("coordinates x\ninitial x'=tan(pi/2)\nlagrangian x",
                 "2:9: error: value of 'x'' is not a finite real number");

    char *many = malloc(8 * 1001 + 64);
    if (many) {
        size_t len = (size_t)sprintf(many, "coordinates");
        for (int i = 0; i < 1001; i++) len += (size_t)sprintf(many + len, " q%d", i);
        expect_error_n(many, len, "error: too many coordinates (max 1000)",
                       CH_ERR_LIMIT);
        free(many);
    }

    /* one context, two models that give a name different meanings */
    ch_error err;
    ch_model *m = NULL;
    ctx = ch_ctx_new();
    const char *m1 = "coordinates x y\nlagrangian x'^2";
    const char *m2 = "coordinates y x\nlagrangian x'^2";
    CHECK(ch_model_parse(ctx, "a.nh", m1, strlen(m1), &m, &err) == 0);
    CHECK(ch_model_parse(ctx, "a.nh", m1, strlen(m1), &m, &err) == 0);
    CHECK(ch_model_parse(ctx, "b.nh", m2, strlen(m2), &m, &err) == CH_ERR_MODEL);
    CHECK(strstr(err.msg, "name 'y' clashes with a symbol already in this context")
          && err.line == 1 && err.col == 13);
    ch_ctx_free(ctx);

    m = (ch_model *)1;
    ctx = ch_ctx_new();
    CHECK(ch_model_load(ctx, "/nonexistent/dir/x.nh", &m, &err) == CH_ERR_IO);
    CHECK(m == NULL && err.code == CH_ERR_IO);
    ch_ctx_free(ctx);
}

/* Non-ASCII is fine inside comments only, and must be valid UTF-8. */
static void test_comments(void)
{
    ch_ctx *ctx = ch_ctx_new();
    CHECK(parse_ok(ctx, "# θ — ünïcode ✓ 𝜃\ncoordinates x # ±\nlagrangian x'^2"));
    ch_ctx_free(ctx);
    expect_error("# \xE0\x80\x80 overlong\ncoordinates x",
                 "1:3: error: invalid UTF-8 byte 0xE0 in a comment");
    expect_error("# \xED\xA0\x80 surrogate\ncoordinates x",
                 "1:3: error: invalid UTF-8 byte 0xED in a comment");
    expect_error("# ok \xC3\n", "1:6: error: invalid UTF-8 byte 0xC3 in a comment");
    expect_error("# tab\tok\x7F\n", "1:9: error: invalid control byte 0x7F");
    expect_error("#\xF5\x80\x80\x80\n", "1:2: error: invalid UTF-8 byte 0xF5");
    expect_error("#\xC0\xAF\n", "1:2: error: invalid UTF-8 byte 0xC0");
    expect_error("#\xF0\x9F\x98\n", "1:2: error: invalid UTF-8 byte 0xF0");
}

/* ---- robustness ----------------------------------------------------------- */

static uint64_t rng_next(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* Parses and checks the result is either a sane model or a sane error. */
/* Parses any text; returns the number of nodes the parse made. */
static size_t parse_any(const char *text, size_t len)
{
    ch_ctx *ctx = ch_ctx_new();
    ch_model *m = NULL;
    ch_error err;
    int rc = ch_model_parse(ctx, "fuzz.nh", text, len, &m, &err);
    if (rc == 0) {
        CHECK(m && m->name && m->n >= 1 && m->lagrangian && m->k < m->n);
    } else {
        CHECK(m == NULL && err.code != CH_OK && err.msg[0] != 0);
        CHECK(err.line >= 0 && err.col >= 0);
    }
    size_t nodes = ch_ctx_nnodes(ctx);
    ch_ctx_free(ctx);
    return nodes;
}

static const char *const soup[] = {
    "coordinates", "parameters", "define", "lagrangian", "constraint",
    "force", "dependent", "initial", "integral", "field", "model", "event", "stop",
    "x", "y", "x'", "y'", "x''", "m", "m'", "v", "v'", "F", "t", "pi",
    "sin", "atan2", "sqrt", "0", "1", "2.5", "1e999999", "1e-3", "+", "-",
    "*", "/", "^", "(", ")", ",", "=", ":", "\n", "\n", "\n", "#c\n", "'",
    "x_t", "int", "0/0", "/(x-x)",
};

static void test_robustness(void)
{
    static const char *const files[] = {
        "knife_edge.nh", "chaplygin_sleigh.nh", "vertical_disk.nh",
        "double_pendulum.nh", "pendulum_xy.nh"};
    char seeds[5][2048];
    size_t seed_len[5];
    for (size_t i = 0; i < 5; i++) {
        char path[512];
        snprintf(path, sizeof path, "%s/examples/%s", SRCDIR, files[i]);
        FILE *f = fopen(path, "rb");
        seed_len[i] = f ? fread(seeds[i], 1, sizeof seeds[i], f) : 0;
        if (f) fclose(f);
        CHECK(seed_len[i] > 0);
    }
    uint64_t s = 0x9E3779B97F4A7C15ULL;
    size_t most = 0, made; /* nodes of a parse */
    char buf[4096];
    for (int iter = 0; iter < 1500; iter++) { /* random bytes */
        size_t len = rng_next(&s) % 200;
        for (size_t i = 0; i < len; i++) buf[i] = (char)rng_next(&s);
        if ((made = parse_any(buf, len)) > most) most = made;
    }
    for (int iter = 0; iter < 1500; iter++) { /* token soup */
        size_t len = 0, ntok = 1 + rng_next(&s) % 40;
        for (size_t i = 0; i < ntok && len < 3000; i++) {
            const char *tok = soup[rng_next(&s) % (sizeof soup / sizeof soup[0])];
            len += (size_t)sprintf(buf + len, "%s%s", tok, rng_next(&s) % 3 ? " " : "");
        }
        if ((made = parse_any(buf, len)) > most) most = made;
    }
    for (int iter = 0; iter < 1500; iter++) { /* mutated examples */
        size_t e = rng_next(&s) % 5, len = seed_len[e];
        memcpy(buf, seeds[e], len);
        int muts = 1 + (int)(rng_next(&s) % 4);
        for (int k = 0; k < muts && len > 0; k++) {
            size_t at = rng_next(&s) % len;
            switch (rng_next(&s) % 4) {
            case 0: buf[at] = (char)rng_next(&s); break;
            case 1: /* delete a short range */ {
                size_t n = 1 + rng_next(&s) % 8;
                if (n > len - at) n = len - at;
                memmove(buf + at, buf + at + n, len - at - n);
                len -= n;
                break;
            }
            case 2: buf[at] = "()+-*/^'=,:\n#"[rng_next(&s) % 13]; break;
            default: /* insert a soup token */ {
                const char *tok = soup[rng_next(&s) % (sizeof soup / sizeof soup[0])];
                size_t n = strlen(tok);
                if (len + n < sizeof buf) {
                    memmove(buf + at + n, buf + at, len - at);
                    memcpy(buf + at, tok, n);
                    len += n;
                }
            }
            }
        }
        if ((made = parse_any(buf, len)) > most) most = made;
    }
    /* no input of a few kilobytes makes a parse blow up (work, not time,
     * is bounded: timings on shared machines are noise) */
    CHECK_MSG(most <= 1000, "a parse made %zu nodes", most);
}

int main(void)
{
    RUN(test_examples);
    RUN(test_example_initial_consistent);
    RUN(test_knife_edge);
    RUN(test_symbols);
    RUN(test_events);
    RUN(test_holonomic);
    RUN(test_define_derivative);
    RUN(test_continuation);
    RUN(test_precedence);
    RUN(test_long_sum);
    RUN(test_values);
    RUN(test_model_names);
    RUN(test_error_files);
    RUN(test_inline_errors);
    RUN(test_comments);
    RUN(test_robustness);
    return check_summary("test_model");
}
