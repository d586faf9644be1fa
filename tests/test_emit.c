/* test_emit.c — the C emitter: for every example and every form that
 * exists, the emitted code compiles with gcc -std=c99 -pedantic -Wall
 * -Wextra -Werror and with tcc, and a harness linked against it checks
 * the forms against each other at the initial state (independent
 * accelerations, velocities, energy). Also determinism, prefix validation
 * and model names that look like C identifiers of the emitted code. */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "mech/mechanics.h"
#include "jit/compile.h"
#include "codegen/cse.h"
#include "codegen/emit_c.h"
#include "codegen/emit_red.h"
#include "core/eval.h"
#include "tests/trailer.h"

#ifndef SRCDIR
#define SRCDIR "."
#endif

static char tmpdir[256];

static int write_text(const char *dir, const char *name, const char *text)
{
    char path[1100];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    if (!f) return -1;
    fputs(text, f);
    return fclose(f);
}

static int sh(const char *fmt, const char *a, const char *b)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd, fmt, a, b, a, b);
    return system(cmd);
}

typedef struct {
    int ok[3];
    ch_buf h[3], c[3];
    ch_emit_report report[3]; /* how kn_acc was chosen */
} emitted;

/* Emits every form of a model held in text (or file path). */
static int emit_model(const char *path, const char *text, emitted *out,
                      ch_mechanics **dout, ch_ctx **cout)
{
    ch_ctx *ctx = ch_ctx_new();
    ch_model *m;
    ch_error err;
    ch_error_clear(&err);
    int rc = text ? ch_model_parse(ctx, path, text, strlen(text), &m, &err)
                  : ch_model_load(ctx, path, &m, &err);
    CHECK_MSG(rc == 0, "%s: %s", path, err.msg);
    if (rc) {
        ch_ctx_free(ctx);
        return -1;
    }
    ch_mechanics *d;
    rc = ch_mechanics_derive(ctx, m, &d, &err);
    CHECK_MSG(rc == 0, "%s: %s", path, err.msg);
    if (rc) {
        ch_ctx_free(ctx);
        return -1;
    }
    for (int f = 0; f < 3; f++) {
        ch_buf_init(&out->h[f]);
        ch_buf_init(&out->c[f]);
        ch_error_clear(&err);
        rc = ch_emit_c_chart(ctx, d, (ch_form)f, NULL, NULL, NULL, NULL, &out->h[f], &out->c[f],
                             &out->report[f], &err);
        out->ok[f] = rc == 0;
        /* Only a degenerate Legendre map leaves a model without the
         * hamilton form; without a closed-form H* it is inverted
         * numerically. */
        if (f == CH_FORM_HAMILTON && d->ham.degenerate) {
            CHECK_MSG(rc == CH_ERR_MODEL && strstr(err.msg, "Hamiltonian"), "%s: %s", path, err.msg);
        } else {
            CHECK_MSG(rc == 0, "%s %s: %s", path, ch_form_name((ch_form)f), err.msg);
        }
    }
    *dout = d;
    *cout = ctx;
    return 0;
}

static void emitted_free(emitted *e)
{
    for (int f = 0; f < 3; f++) {
        ch_buf_free(&e->h[f]);
        ch_buf_free(&e->c[f]);
    }
}

/* The harness: prints "CMP label got want" lines for the test to check. */
static void harness(ch_buf *b, const ch_mechanics *d, const char *name, const emitted *e)
{
    size_t n = d->lag.n, k = d->lag.k;
    ch_buf_put(b, "#include <stdio.h>\n");
    for (int f = 0; f < 3; f++)
        if (e->ok[f]) ch_buf_printf(b, "#include \"%s_%s.h\"\n", name, ch_form_name((ch_form)f));
    ch_buf_printf(b, "static const int indep[%zu] = {", n - k + 1);
    for (size_t r = 0; r < n - k; r++) ch_buf_printf(b, "%d, ", d->mf.indep[r]);
    ch_buf_printf(b, "0};\n#define F(s) %s_full_##s\n", name);
    ch_buf_printf(b, "#define R(s) %s_reduced_##s\n#define H(s) %s_hamilton_##s\n", name, name);
    ch_buf_put(b,
        "static void cmp(const char *l, int i, double a, double b) { printf(\"CMP %s%d %.17g %.17g\\n\", l, i, a, b); }\n"
        "int main(void)\n{\n"
        "    double xf[F(NX)], xr[R(NX)], df[F(NX)], dr[R(NX)], vr[F(NQ)], vf[F(NQ)];\n"
        "    int i, rc = 0;\n"
        "    R(initial)(xr);\n"
        "    rc |= R(velocities)(0.0, xr, R(param_defaults), vr);\n"
        "    for (i = 0; i < F(NQ); i++) { xf[i] = xr[i]; xf[F(NQ) + i] = vr[i]; }\n"
        "    rc |= F(rhs)(0.0, xf, F(param_defaults), df);\n"
        "    rc |= R(rhs)(0.0, xr, R(param_defaults), dr);\n"
        "    rc |= F(velocities)(0.0, xf, F(param_defaults), vf);\n"
        "    for (i = 0; i < F(NQ); i++) { cmp(\"v\", i, vf[i], vr[i]); cmp(\"dq\", i, dr[i], vr[i]); cmp(\"fdq\", i, df[i], vr[i]); }\n"
        "    for (i = 0; i < R(NX) - R(NQ); i++) cmp(\"acc\", i, dr[R(NQ) + i], df[F(NQ) + indep[i]]);\n"
        "    cmp(\"E\", 0, R(energy)(0.0, xr, R(param_defaults)), F(energy)(0.0, xf, F(param_defaults)));\n"
        "    { double xi[F(NX)]; F(initial)(xi); for (i = 0; i < F(NX); i++) cmp(\"finit\", i, xi[i], xf[i]); }\n"
        "    { double o[F(NOUT) + 1], o2[R(NOUT) + 1]; rc |= F(outputs)(0.0, xf, F(param_defaults), o);\n"
        "      rc |= R(outputs)(0.0, xr, R(param_defaults), o2);\n"
        "      for (i = 0; i < R(NOUT); i++) cmp(\"out\", i, o2[i], o[F(NOUT) - R(NOUT) + i]);\n"
        "      for (i = 0; i < F(NOUT) - R(NOUT); i++) cmp(\"phi\", i, o[i] + 1.0, 1.0); }\n"
        "    { double xp[F(NX)]; for (i = 0; i < F(NX); i++) xp[i] = xf[i];\n"
        "      for (i = F(NQ); i < F(NX); i++) xp[i] += 1e-3 * (i + 1);\n"
        "      rc |= F(project)(0.0, xp, F(param_defaults));\n"
        "      { double o[F(NOUT) + 1]; rc |= F(outputs)(0.0, xp, F(param_defaults), o);\n"
        "        for (i = 0; i < F(NOUT) - R(NOUT); i++) cmp(\"proj\", i, o[i] + 1.0, 1.0); } }\n");
    if (e->ok[CH_FORM_HAMILTON])
        ch_buf_put(b,
        "    { double xh[H(NX)], dh[H(NX)], vh[F(NQ)];\n"
        "      H(initial)(xh);\n"
        "      rc |= H(velocities)(0.0, xh, H(param_defaults), vh);\n"
        "      rc |= H(rhs)(0.0, xh, H(param_defaults), dh);\n"
        "      for (i = 0; i < F(NQ); i++) { cmp(\"hv\", i, vh[i], vr[i]); cmp(\"hdq\", i, dh[i], vr[i]); }\n"
        "      cmp(\"hE\", 0, H(energy)(0.0, xh, H(param_defaults)), F(energy)(0.0, xf, F(param_defaults)));\n"
        /* y* along the motion: central difference of y*(q, q'_r) over the
         * reduced form's step against the Poincare-Hamilton y*' */
        "      { double hstep = 1e-5, q1[F(NQ)], v1[F(NQ)], q2[F(NQ)], v2[F(NQ)], x1[H(NX)], x2[H(NX)];\n"
        "        for (i = 0; i < F(NQ); i++) { q1[i] = xr[i] + hstep * dr[i]; q2[i] = xr[i] - hstep * dr[i]; v1[i] = v2[i] = vr[i]; }\n"
        "        for (i = 0; i < R(NX) - R(NQ); i++) { v1[indep[i]] += hstep * dr[R(NQ) + i]; v2[indep[i]] -= hstep * dr[R(NQ) + i]; }\n"
        "        rc |= H(state_from)(hstep, q1, v1, H(param_defaults), x1);\n"
        "        rc |= H(state_from)(-hstep, q2, v2, H(param_defaults), x2);\n"
        "        for (i = H(NQ); i < H(NX); i++) printf(\"CMPL hdy%d %.17g %.17g\\n\", i, (x1[i] - x2[i]) / (2 * hstep), dh[i]); } }\n");
    ch_buf_put(b, "    printf(\"RC %d\\n\", rc);\n    return 0;\n}\n");
}

static void check_harness_output(const char *model, const char *path)
{
    FILE *f = fopen(path, "r");
    CHECK_MSG(f != NULL, "%s: no harness output", model);
    if (!f) return;
    char line[512], label[64];
    int seen_rc = 0, ncmp = 0;
    while (fgets(line, sizeof line, f)) {
        double a, b;
        int rc;
        if (sscanf(line, "CMP %63s %lf %lf", label, &a, &b) == 3) {
            ncmp++;
            CHECK_MSG(fabs(a - b) <= 1e-9 * fmax(1.0, fabs(b)), "%s %s: %.17g vs %.17g",
                      model, label, a, b);
        } else if (sscanf(line, "CMPL %63s %lf %lf", label, &a, &b) == 3) {
            ncmp++;
            CHECK_MSG(fabs(a - b) <= 1e-6 * fmax(1.0, fabs(b)), "%s %s: %.17g vs %.17g",
                      model, label, a, b);
        } else if (sscanf(line, "RC %d", &rc) == 1) {
            seen_rc = 1;
            CHECK_MSG(rc == 0, "%s: a function returned nonzero", model);
        }
    }
    fclose(f);
    CHECK_MSG(seen_rc && ncmp > 0, "%s: harness did not finish", model);
}

/* The full form's right side and multipliers (outputs: phi, then
 * lambda) against la_kkt on the same kn_dyn values, at states off the
 * constraints (velocities and coordinates moved from the initial
 * state), so that kn_facc's null-space solve and la_lambda are checked
 * where the constraints do not hold: the file is included, its static
 * kernels called. Prints CMP lines for check_harness_output. */
static void kkt_harness(ch_buf *b, const ch_mechanics *d, const char *name)
{
    size_t n = d->lag.n, k = d->lag.k, nv = n * n + k * n + n + k;
    ch_buf_printf(b, "#include <stdio.h>\n#include \"%s_full.c\"\n#define F(s) %s_full_##s\n",
                  name, name);
    ch_buf_printf(b,
        "int main(void)\n{\n"
        "    double x[F(NX)], dx[F(NX)], v[F(NQ)], o[%zu], acc[F(NQ)], lam[%zu], w[%zu], out[F(NOUT)];\n"
        "    int piv[%zu], i, s, rc = 0;\n"
        "    for (s = 0; s < 6; s++) {\n"
        "        F(initial)(x);\n"
        "        for (i = 0; i < F(NX); i++) x[i] += 0.05 * s * ((i * 7 + s * 3) %% 5 - 2) / (i + 1.0);\n"
        "        if (F(rhs)(0.0, x, F(param_defaults), dx)) { printf(\"SKIP %%d\\n\", s); continue; }\n"
        "        rc |= kn_vel(0.0, x, F(param_defaults), 0, v);\n"
        "        kn_dyn(0.0, x, F(param_defaults), v, o);\n"
        "        rc |= la_kkt(%zu, %zu, o, o + %zu, o + %zu, o + %zu, acc, lam, w, piv);\n"
        "        for (i = 0; i < F(NQ); i++) printf(\"CMP kkt%%d_%%d %%.17g %%.17g\\n\", s, i, dx[F(NQ) + i], acc[i]);\n"
        "        rc |= F(outputs)(0.0, x, F(param_defaults), out);\n"
        "        for (i = 0; i < %zu; i++) printf(\"CMP lam%%d_%%d %%.17g %%.17g\\n\", s, i, out[%zu + i], lam[i]);\n"
        "    }\n"
        "    printf(\"RC %%d\\n\", rc);\n    return 0;\n}\n",
        nv, k + 1, 2 * (n + k) * (n + k + 1) + 1, n + k + 1, n, k, n * n, n * n + k * n,
        n * n + k * n + n, k, k);
}

/* Writes dir/stem.c (text: a harness that includes an emitted file and
 * calls its static kernels), builds it with gcc and runs it into
 * dir/stem.out, whose CMP lines are checked (label in the messages). */
static void run_including_harness(const char *dir, const char *stem, const char *text,
                                  const char *label)
{
    char file[64], out[600];
    snprintf(file, sizeof file, "%s.c", stem);
    write_text(dir, file, text);
    char cmd[1400];
    snprintf(cmd, sizeof cmd, "cd '%s' && gcc -std=c99 -Wall -Wno-unused-function -o %s %s.c -lm "
             "&& ./%s > %s.out", dir, stem, stem, stem, stem);
    CHECK_MSG(system(cmd) == 0, "%s: %s harness failed to build or run", label, stem);
    snprintf(out, sizeof out, "%s/%s.out", dir, stem);
    check_harness_output(label, out);
}

/* Emits, writes, compiles (gcc strict, tcc) and runs the harness. */
static void check_model(const char *path, const char *text, const char *name)
{
    emitted e;
    ch_mechanics *d;
    ch_ctx *ctx;
    if (emit_model(path, text, &e, &d, &ctx)) return;
    char dir[512], file[256];
    snprintf(dir, sizeof dir, "%s/%s", tmpdir, name);
    sh("mkdir -p '%s'", dir, "");
    for (int f = 0; f < 3; f++) {
        if (!e.ok[f]) continue;
        snprintf(file, sizeof file, "%s_%s.h", name, ch_form_name((ch_form)f));
        write_text(dir, file, e.h[f].s);
        snprintf(file, sizeof file, "%s_%s.c", name, ch_form_name((ch_form)f));
        write_text(dir, file, e.c[f].s);
        int rc = sh("cd '%s' && gcc -std=c99 -pedantic -Wall -Wextra -Werror -c '%s'", dir, file);
        CHECK_MSG(rc == 0, "%s: gcc rejects %s", name, file);
        char cmd[1200];
        snprintf(cmd, sizeof cmd, "cd '%s' && tcc -Wall -Werror -c '%s' -o '%s.tcc'", dir, file, file);
        rc = system(cmd);
        CHECK_MSG(rc == 0, "%s: tcc rejects %s", name, file);
    }
    if (e.ok[0] && e.ok[1]) {
        ch_buf hb;
        ch_buf_init(&hb);
        harness(&hb, d, name, &e);
        write_text(dir, "harness.c", hb.s);
        ch_buf_free(&hb);
        int rc = sh("cd '%s' && gcc -std=c99 -pedantic -Wall -Wextra -Werror -o harness "
                    "harness.c %s_*.o -lm && ./harness > harness.out", dir, name);
        CHECK_MSG(rc == 0, "%s: harness failed to build or run", name);
        char out[600];
        snprintf(out, sizeof out, "%s/harness.out", dir);
        check_harness_output(name, out);
        /* The same harness with everything compiled by tcc. */
        rc = sh("cd '%s' && tcc -o harness_tcc harness.c %s_*.c.tcc -lm && ./harness_tcc > harness_tcc.out",
                dir, name);
        CHECK_MSG(rc == 0, "%s: tcc harness failed to build or run", name);
        snprintf(out, sizeof out, "%s/harness_tcc.out", dir);
        check_harness_output(name, out);
    }
    if (e.ok[CH_FORM_FULL] && d->lag.k > 0 && strstr(e.c[CH_FORM_FULL].s, "kn_facc")) {
        ch_buf kb;
        ch_buf_init(&kb);
        kkt_harness(&kb, d, name);
        run_including_harness(dir, "kkt", kb.s ? kb.s : "", name);
        ch_buf_free(&kb);
    }
    /* Determinism: a fresh context gives byte-identical files. */
    emitted e2;
    ch_mechanics *d2;
    ch_ctx *ctx2;
    if (emit_model(path, text, &e2, &d2, &ctx2) == 0) {
        for (int f = 0; f < 3; f++)
            if (e.ok[f])
                CHECK_MSG(e2.ok[f] && strcmp(e.c[f].s, e2.c[f].s) == 0 &&
                              strcmp(e.h[f].s, e2.h[f].s) == 0,
                          "%s %s: not deterministic", name, ch_form_name((ch_form)f));
        emitted_free(&e2);
        ch_ctx_free(ctx2);
    }
    /* Op counts for the record (the header's second and third lines). */
    for (int f = 0; f < 3; f++)
        if (e.ok[f]) {
            const char *s = strstr(e.c[f].s, " * operations before");
            const char *end = s ? strstr(s, "\n */") : NULL;
            if (s && end) fprintf(stderr, "%s %s:\n%.*s\n", name, ch_form_name((ch_form)f),
                                  (int)(end - s), s);
        }
    emitted_free(&e);
    ch_ctx_free(ctx);
}

static void test_examples(void)
{
    DIR *dir = opendir(SRCDIR "/examples");
    CHECK(dir != NULL);
    if (!dir) return;
    char *names[64];
    int count = 0;
    struct dirent *de;
    while ((de = readdir(dir)) && count < 64) {
        size_t len = strlen(de->d_name);
        if (len > 3 && strcmp(de->d_name + len - 3, ".nh") == 0) names[count++] = strdup(de->d_name);
    }
    closedir(dir);
    CHECK(count >= 5);
    for (int i = 0; i < count; i++) {
        char path[512], stem[128];
        snprintf(path, sizeof path, "%s/examples/%s", SRCDIR, names[i]);
        snprintf(stem, sizeof stem, "%.*s", (int)strlen(names[i]) - 3, names[i]);
        check_model(path, NULL, stem);
        free(names[i]);
    }
}

/* Model names equal to identifiers of the emitted code (and to main). */
static void test_injection(void)
{
    static const char text[] =
        "model inj\n"
        "coordinates main x0 p t0 dxdt zeta9\n"
        "parameters w=2 o=1\n"
        "lagrangian w/2*(main'^2 + x0'^2 + p'^2 + t0'^2 + dxdt'^2 + zeta9'^2) - o*main*x0\n"
        "constraint p' = main*x0'\n"
        "constraint dxdt' = t0' + zeta9'\n"
        "integral zeta9_I = main'^2 + t0*x0'\n"
        "initial main=0.1 x0=0.2 x0'=0.5 zeta9'=1\n";
    check_model("inj.nh", text, "inj");
    emitted e;
    ch_mechanics *d;
    ch_ctx *ctx;
    if (emit_model("inj.nh", text, &e, &d, &ctx)) return;
    /* Outside string literals and comments, no model-only name appears. */
    for (int f = 0; f < 3; f++) {
        if (!e.ok[f]) continue;
        const char *s = e.c[f].s;
        ch_buf code;
        ch_buf_init(&code);
        for (size_t i = 0; s[i]; i++) {
            if (s[i] == '"') {
                for (i++; s[i] && s[i] != '"'; i++)
                    if (s[i] == '\\') i++;
                continue;
            }
            if (s[i] == '/' && s[i + 1] == '*') {
                const char *end = strstr(s + i + 2, "*/");
                i = end ? (size_t)(end - s) + 1 : strlen(s) - 1;
                continue;
            }
            ch_buf_putc(&code, s[i]);
        }
        CHECK(strstr(code.s, "zeta9") == NULL);
        CHECK(strstr(code.s, "main") == NULL);
        CHECK(strstr(code.s, "t0") == NULL);
        ch_buf_free(&code);
    }
    emitted_free(&e);
    ch_ctx_free(ctx);
}

/* Declared integrals: the last output columns of every form, named as
 * declared, evaluated at the full velocities (dependent ones from alpha or
 * from eta in the Hamiltonian form). Eint is the energy (the sleigh with a
 * spring conserves it), `drift` is not conserved. */
static const char integ_text[] =
    "model integ\ncoordinates x y th\nparameters m=1 J=0.5 a=0.3 k=2\n"
    "lagrangian m/2*(x'^2 + y'^2) + J/2*th'^2 - k/2*(x^2 + y^2)\n"
    "constraint -sin(th)*x' + cos(th)*y' - a*th' = 0\ndependent th'\n"
    "integral Eint = m/2*(x'^2 + y'^2) + J/2*th'^2 + k/2*(x^2 + y^2)\n"
    "integral drift = t*x' + y + th'\n"
    "initial x=0.1 x'=1 y'=0.3 th'=1\n";
static const char integ0_text[] =
    "model integ0\ncoordinates u w\nparameters c=3\n"
    "lagrangian (u'^2 + w'^2)/2 - c/2*u^2 - w^4/4\n"
    "integral Eint = (u'^2 + w'^2)/2 + c/2*u^2 + w^4/4\n"
    "integral drift = u*w'\n"
    "initial u=0.5 w=-0.2 w'=1\n";

/* The system's rhs at its default parameters as the steppers' chrt_rhs. */
static int sys_rhs(void *ctx, double t, const double *x, double *dx)
{
    const chrt_system *s = ctx;
    return s->rhs(t, x, s->param_defaults, NULL, dx);
}

/* Integrates 200 rk4 steps of 1e-3 and returns the last two outputs at
 * the start and end, with the energy at both. */
static int integ_run(const chrt_system *s, double out0[2], double out1[2], double en[2])
{
    double x[16], o[32], work[96], t = 0.0;
    const double *p = s->param_defaults;
    chrt_stepper st = {s->nx, work};
    if (s->nx > 16 || s->nout > 32 || s->nout < 2) return -1;
    s->initial(x);
    if (s->outputs(t, x, p, NULL, o)) return -1;
    out0[0] = o[s->nout - 2], out0[1] = o[s->nout - 1], en[0] = s->energy(t, x, p, NULL);
    for (int i = 0; i < 200; i++, t += 1e-3)
        if (chrt_step(&st, CHRT_RK4, sys_rhs, t, 1e-3, x, (void *)s)) return -1;
    if (s->outputs(t, x, p, NULL, o)) return -1;
    out1[0] = o[s->nout - 2], out1[1] = o[s->nout - 1], en[1] = s->energy(t, x, p, NULL);
    return 0;
}

static void integ_model(const char *path, const char *text, const char *name,
                        const size_t nout[3])
{
    check_model(path, text, name); /* gcc -pedantic -Werror, tcc, harness */
    emitted e;
    ch_mechanics *d;
    ch_ctx *ctx;
    if (emit_model(path, text, &e, &d, &ctx)) return;
    double first[3] = {0, 0, 0};
    for (int f = 0; f < 3; f++) {
        if (!e.ok[f]) continue;
        char want[64];
        snprintf(want, sizeof want, "#define %s_%s_NOUT %zu\n", name, ch_form_name((ch_form)f), nout[f]);
        CHECK_MSG(strstr(e.h[f].s, want) != NULL, "%s", want);
        const char *names = strstr(e.c[f].s, "_NOUT] = {");
        const char *tail = names ? strstr(names, "\"Eint\",\n    \"drift\"\n};") : NULL;
        CHECK(tail && tail == strstr(names, "};") - 20);
        ch_compiled *c;
        ch_error err;
        ch_error_clear(&err);
        int rc = ch_compile_form(ctx, d, (ch_form)f, NULL, CH_COMPILER_TCC, &c, &err);
        CHECK_MSG(rc == 0, "%s %s: %s", name, ch_form_name((ch_form)f), err.msg);
        if (rc) continue;
        CHECK(c->sys.nout == (int)nout[f]);
        CHECK_STR(c->sys.output_names[nout[f] - 2], "Eint");
        CHECK_STR(c->sys.output_names[nout[f] - 1], "drift");
        double o0[2], o1[2], en[2];
        rc = integ_run(&c->sys, o0, o1, en);
        CHECK_MSG(rc == 0, "%s %s: run failed", name, ch_form_name((ch_form)f));
        if (rc == 0) {
            CHECK_NEAR(o0[0], en[0], 1e-13 * fabs(en[0]));
            CHECK_NEAR(o1[0], en[1], 1e-13 * fabs(en[1]));
            CHECK_NEAR(o1[0], o0[0], 1e-9 * fabs(o0[0])); /* conserved */
            CHECK_MSG(fabs(o1[1] - o0[1]) > 1e-3, "drift %.17g -> %.17g", o0[1], o1[1]);
            /* The forms agree on the values at the initial state. */
            if (f == 0) first[0] = o0[0], first[1] = o0[1];
            else {
                CHECK_NEAR(o0[0], first[0], 1e-13 * fabs(first[0]));
                CHECK_NEAR(o0[1], first[1], 1e-13 * (1 + fabs(first[1])));
            }
        }
        ch_compiled_free(c);
    }
    emitted_free(&e);
    ch_ctx_free(ctx);
}

static void test_integrals(void)
{
    /* full 2k + n, reduced k + n, hamilton m + k + n; plus two integrals */
    static const size_t nout[3] = {2 + 3 + 2, 1 + 3 + 2, 2 + 1 + 3 + 2};
    integ_model("integ.nh", integ_text, "integ", nout);
    static const size_t nout0[3] = {2, 2, 2 + 2};
    integ_model("integ0.nh", integ0_text, "integ0", nout0);
}

/* The hamilton form where H* has no closed form: the Legendre map is
 * inverted numerically in the emitted code (one linear solve for L*
 * quadratic, damped Newton otherwise), the header says which, and the
 * harness of check_model compares it with the full and reduced forms
 * (velocities, accelerations, y*' against a difference quotient). */
static const char chain5_text[] = /* m = 5 > CH_HAMILTON_MAX_M */
    "model chain5\ncoordinates a1 a2 a3 a4 a5\nparameters m=1 l=1 g=9.81\n"
    "define x1 = l*sin(a1)\ndefine y1 = -l*cos(a1)\n"
    "define x2 = x1 + l*sin(a2)\ndefine y2 = y1 - l*cos(a2)\n"
    "define x3 = x2 + l*sin(a3)\ndefine y3 = y2 - l*cos(a3)\n"
    "define x4 = x3 + l*sin(a4)\ndefine y4 = y3 - l*cos(a4)\n"
    "define x5 = x4 + l*sin(a5)\ndefine y5 = y4 - l*cos(a5)\n"
    "lagrangian m/2*(x1'^2 + y1'^2 + x2'^2 + y2'^2 + x3'^2 + y3'^2 + x4'^2 + y4'^2"
    " + x5'^2 + y5'^2) - m*g*(y1 + y2 + y3 + y4 + y5)\n"
    "initial a1=0.1 a2=0.2 a3=0.3 a4=0.4 a5=0.5 a1'=1 a5'=-1\n";
/* k = 0, L quartic in the velocities, with a gyroscopic term. */
static const char quartic_text[] =
    "model quartic\ncoordinates x y\nparameters b=0.7 k=2\n"
    "lagrangian (x'^2 + y'^2)/2 + b/4*(x'^2 + y'^2)^2 - k/2*(x^2 + y^2) + x*y'\n"
    "initial x=0.3 x'=1.6 y'=-0.5\n";
/* k = 1, implicit alpha and L* not quadratic in the independent velocities. */
static const char implicit_text[] =
    "model impl\ncoordinates x y z\nparameters g=9.81 c=0.3\n"
    "lagrangian (x'^2 + y'^2 + z'^2)/2 + (x'^4)/12 - g*z\n"
    "constraint z' + z'^3/3 = c*x' + y*x'^2\ndependent z'\n"
    "initial x=0.1 y=0.2 x'=1 y'=0.5\n";

static int has_hamilton_note(const emitted *e, const char *what)
{
    return e->ok[CH_FORM_HAMILTON] && strstr(e->c[CH_FORM_HAMILTON].s, what) &&
           strstr(e->h[CH_FORM_HAMILTON].s, what);
}

static void numeric_model(const char *name, const char *text, const char *how)
{
    char path[64];
    snprintf(path, sizeof path, "%s.nh", name);
    check_model(path, text, name);
    emitted e;
    ch_mechanics *d;
    ch_ctx *ctx;
    if (emit_model(path, text, &e, &d, &ctx)) return;
    CHECK_MSG(!d->ham.exists && e.ok[CH_FORM_HAMILTON], "%s: hamilton form", name);
    CHECK_MSG(has_hamilton_note(&e, "Legendre map inverted numerically") &&
                  has_hamilton_note(&e, how),
              "%s: header does not say '%s'", name, how);
    emitted_free(&e);
    ch_ctx_free(ctx);
}

static void test_hamilton_numeric(void)
{
    numeric_model("chain5", chain5_text, "one linear solve");
    numeric_model("quartic", quartic_text, "damped Newton");
    numeric_model("impl", implicit_text, "damped Newton");
    /* Where H* is symbolic the emitted code keeps using it. */
    emitted e;
    ch_mechanics *d;
    ch_ctx *ctx;
    if (emit_model(SRCDIR "/examples/knife_edge.nh", NULL, &e, &d, &ctx) == 0) {
        CHECK(d->ham.exists && has_hamilton_note(&e, "inverted symbolically"));
        CHECK(strstr(e.c[CH_FORM_HAMILTON].s, "kn_inv") == NULL);
        emitted_free(&e);
        ch_ctx_free(ctx);
    }
    /* A degenerate Legendre map (constant speed) still has no hamilton form. */
    static const char speed[] =
        "model speed\ncoordinates x y\nlagrangian (x'^2 + y'^2)/2\n"
        "constraint x'^2 + y'^2 = 1\ndependent y'\ninitial x'=0.6 y'=0.8\n";
    if (emit_model("speed.nh", speed, &e, &d, &ctx) == 0) {
        CHECK(d->ham.degenerate && !e.ok[CH_FORM_HAMILTON]);
        emitted_free(&e);
        ch_ctx_free(ctx);
    }
}

/* Newton failure: y = x' / sqrt(1 + x'^2) only reaches (-1, 1), so at
 * y_x = 2 the Legendre map has no inverse and the rhs must say so (and
 * return, not loop); inside the range it inverts exactly. */
static void test_hamilton_newton_failure(void)
{
    static const char text[] =
        "model bounded\ncoordinates x\nlagrangian sqrt(1 + x'^2)\ninitial x'=0\n";
    ch_ctx *ctx = ch_ctx_new();
    ch_model *m;
    ch_mechanics *d;
    ch_error err;
    ch_error_clear(&err);
    if (ch_model_parse(ctx, "bounded.nh", text, strlen(text), &m, &err) ||
        ch_mechanics_derive(ctx, m, &d, &err)) {
        CHECK_MSG(0, "bounded: %s", err.msg);
        ch_ctx_free(ctx);
        return;
    }
    ch_compiled *c;
    int rc = ch_compile_form(ctx, d, CH_FORM_HAMILTON, NULL, CH_COMPILER_TCC, &c, &err);
    CHECK_MSG(rc == 0, "bounded hamilton: %s", err.msg);
    if (rc == 0) {
        const chrt_system *s = &c->sys;
        double x[2] = {0.0, 0.6}, dx[2], v[1];
        CHECK(s->velocities(0.0, x, s->param_defaults, NULL, v) == 0);
        CHECK_NEAR(v[0], 0.75, 1e-14); /* 0.6 = v / sqrt(1 + v^2) */
        CHECK(s->rhs(0.0, x, s->param_defaults, NULL, dx) == 0);
        CHECK_NEAR(dx[0], 0.75, 1e-14);
        CHECK_NEAR(dx[1], 0.0, 1e-14);
        x[1] = 2.0;
        CHECK(s->velocities(0.0, x, s->param_defaults, NULL, v) != 0);
        CHECK(s->rhs(0.0, x, s->param_defaults, NULL, dx) != 0);
        CHECK(s->energy(0.0, x, s->param_defaults, NULL) == HUGE_VAL);
        ch_compiled_free(c);
    }
    ch_ctx_free(ctx);
}

/* The reduced right side: symbolic (kn_red) or by small numeric solves
 * on M, G, b, r (emit_red.h), whichever has fewer counted operations;
 * the header states both counts and the choice. */
static const char trailer2_text[] = /* bench/gen_trailer.py 2: G_d triangular */
    "model trailer2\ncoordinates x y th0 th1 th2\nparameters m=1 J=0.1 d=1 F0=1\n"
    "define x1 = x - d*cos(th1)\ndefine y1 = y - d*sin(th1)\n"
    "define x2 = x1 - d*cos(th2)\ndefine y2 = y1 - d*sin(th2)\n"
    "lagrangian m/2*(x'^2 + y'^2) + J/2*th0'^2 + m/2*(x1'^2 + y1'^2) + J/2*th1'^2"
    " + m/2*(x2'^2 + y2'^2) + J/2*th2'^2\n"
    "constraint -sin(th0)*x' + cos(th0)*y' = 0\n"
    "constraint -sin(th1)*x1' + cos(th1)*y1' = 0\n"
    "constraint -sin(th2)*x2' + cos(th2)*y2' = 0\n"
    "force x = F0*cos(th0)\nforce y = F0*sin(th0)\n"
    "dependent y' th1' th2'\ninitial x'=1 th0'=0.1\n";
static const char coupled_text[] = /* G_d not triangular in any order */
    "model coupled\ncoordinates x y z u w\nparameters k=1\n"
    "lagrangian (x'^2 + 2*y'^2 + z'^2 + u'^2 + w'^2)/2 - k*(x^2 + y^2)/2\n"
    "constraint cos(x)*u' + sin(y)*w' + 2*z' = x'\n"
    "constraint sin(x)*u' - cos(y)*w' + z' = y'\n"
    "constraint 3*u' + w' + cos(z)*z' = 0\n"
    "dependent u' w' z'\ninitial x=0.1 y=0.2 x'=1 y'=0.5\n";

/* The choice (the emitter's report, data) is the cheapest of the
 * candidates built (ties: symbolic, numeric, substituted, diagonal), the
 * numeric candidate was built and solves G_d as solve says, and the code
 * is the chosen candidate's. */
static void check_acc_choice(const char *name, const char *code, const ch_emit_report *r,
                             const char *solve)
{
    static const ch_acc_kind order[] = {CH_ACC_SYMBOLIC, CH_ACC_NUMERIC, CH_ACC_SUBSTITUTED,
                                        CH_ACC_DIAGONAL};
    ch_acc_kind best = CH_ACC_NONE;
    for (size_t i = 0; i < sizeof order / sizeof *order; i++) {
        double c = r->cost[order[i]];
        if (c >= 0 && (best == CH_ACC_NONE || c < r->cost[best])) best = order[i];
    }
    CHECK_MSG(r->chosen != CH_ACC_NONE && r->chosen == best,
              "%s: chose %d (symbolic %g, numeric %g, substituted %g, diagonal %g)", name,
              (int)r->chosen, r->cost[CH_ACC_SYMBOLIC], r->cost[CH_ACC_NUMERIC],
              r->cost[CH_ACC_SUBSTITUTED], r->cost[CH_ACC_DIAGONAL]);
    CHECK_MSG(r->cost[CH_ACC_NUMERIC] >= 0, "%s: no numeric candidate", name);
    CHECK_MSG(!strcmp(solve, "triangular") == !!r->numeric_triangular, "%s: %s solve expected",
              name, solve);
    CHECK_MSG(r->symbolic_skipped == (r->cost[CH_ACC_SYMBOLIC] < 0), "%s: symbolic candidate",
              name);
    /* the code is the chosen candidate's */
    CHECK((r->chosen == CH_ACC_SUBSTITUTED) ==
          (strstr(code, "Independent accelerations from M* and f built on") != NULL));
    CHECK((r->chosen == CH_ACC_DIAGONAL) ==
          (strstr(code, "Independent accelerations f_i / M*_ii") != NULL));
    CHECK((r->chosen == CH_ACC_SYMBOLIC) ==
          (strstr(code, "Independent accelerations from the symbolic reduced") != NULL));
    if (r->chosen == CH_ACC_NUMERIC)
        CHECK(r->numeric_triangular ? strstr(code, "const double dg0 = 1.0 / ") != NULL
                                    : strstr(code, "Gd[") != NULL);
}

/* want: the kind of kn_acc expected ("numeric", "substituted",
 * "symbolic", "diagonal"), or NULL for any. */
static void acc_model(const char *name, const char *path, const char *text,
                      const char *solve, const char *want)
{
    check_model(path, text, name); /* gcc, tcc, harness: reduced vs full accelerations */
    emitted e;
    ch_mechanics *d;
    ch_ctx *ctx;
    if (emit_model(path, text, &e, &d, &ctx)) return;
    const ch_emit_report *r = &e.report[CH_FORM_REDUCED];
    check_acc_choice(name, e.c[CH_FORM_REDUCED].s, r, solve);
    ch_acc_kind kind = !want                          ? r->chosen
                       : !strcmp(want, "numeric")     ? CH_ACC_NUMERIC
                       : !strcmp(want, "substituted") ? CH_ACC_SUBSTITUTED
                       : !strcmp(want, "diagonal")    ? CH_ACC_DIAGONAL
                                                      : CH_ACC_SYMBOLIC;
    CHECK_MSG(r->chosen == kind, "%s: %s expected", name, want);
    emitted_free(&e);
    ch_ctx_free(ctx);
}

/* The 70-trailer's symbolic reduced right side has over 32 times as many
 * nodes as the substituted candidate has operations: it is not built (its
 * CSE alone took a quarter of the emit time at 200 trailers), the note
 * says so and the substituted candidate is written. The 24-trailer's is
 * built. */
static void test_symbolic_not_built(void)
{
    static const int sizes[] = {24, 70};
    for (int i = 0; i < 2; i++) {
        char *text = trailer_text(sizes[i]), name[32];
        CHECK(text != NULL);
        if (!text) return;
        snprintf(name, sizeof name, "trailer%d", sizes[i]);
        emitted e;
        ch_mechanics *d;
        ch_ctx *ctx;
        if (emit_model("trailer.nh", text, &e, &d, &ctx) == 0) {
            const ch_emit_report *r = &e.report[CH_FORM_REDUCED];
            check_acc_choice(name, e.c[CH_FORM_REDUCED].s, r, "triangular");
            CHECK_MSG(r->symbolic_skipped == (sizes[i] == 70), "%s: symbolic candidate", name);
            CHECK(r->chosen == CH_ACC_SUBSTITUTED);
            emitted_free(&e);
            ch_ctx_free(ctx);
        }
        free(text);
    }
}

static void test_reduced_numeric(void)
{
    /* the 2-trailer's G_d and M are cos(th_i - th_j) written out: the
     * substituted solve shares their rows' partial sums */
    acc_model("trailer2", "trailer2.nh", trailer2_text, "triangular", "substituted");
    acc_model("coupled", "coupled.nh", coupled_text, "LU solve", "numeric");
    acc_model("chaplygin_sleigh", SRCDIR "/examples/chaplygin_sleigh.nh", NULL, "triangular",
              "numeric");
    /* M* = diag(m/cos(phi)^2, J): f_i / M*_ii cancels m and 1 + tan^2 */
    acc_model("knife_edge", SRCDIR "/examples/knife_edge.nh", NULL, "triangular", "diagonal");
    acc_model("pars_affine", SRCDIR "/examples/pars_affine.nh", NULL, "triangular", NULL);
}

/* From about ten trailers the hamilton form's right side is one program
 * (kn_hrhs: eta, alpha and y*_t of the Kane form, which share X, the P_b
 * and the sines and cosines): the harness checks its velocities and
 * y*_t against the reduced form's flow, gcc -Werror and tcc compile it. */
static void test_hamilton_fused(void)
{
    char *text = trailer_text(10);
    CHECK(text != NULL);
    if (!text) return;
    check_model("trailer10.nh", text, "trailer10");
    emitted e;
    ch_mechanics *d;
    ch_ctx *ctx;
    if (emit_model("trailer10.nh", text, &e, &d, &ctx) == 0) {
        const char *c = e.c[CH_FORM_HAMILTON].s;
        CHECK(strstr(c, "static void kn_hrhs(") != NULL && strstr(c, "kn_ham(") == NULL);
        CHECK(strstr(c, "with eta and alpha (kn_hrhs, one program)") != NULL);
        emitted_free(&e);
        ch_ctx_free(ctx);
    }
    free(text);
}

/* ch_emit_spd_solve: the unrolled L D L^T against known solutions, with
 * zero entries skipped, and its fallback for an indefinite matrix. */
static void test_spd_solve(void)
{
    /* 4 x 4 SPD with a zero pair (0, 3), and a diagonal 3 x 3 */
    static const unsigned char nz4[16] = {1, 1, 1, 0, 1, 1, 1, 1, 1, 1, 1, 1, 0, 1, 1, 1};
    static const unsigned char nz3[9] = {1, 0, 0, 0, 1, 0, 0, 0, 1};
    ch_buf h;
    ch_buf_init(&h);
    ch_opcount ops4 = {0, 0, 0, 0}, ops3 = {0, 0, 0, 0};
    unsigned char read4[16] = {0}, read3[9] = {0};
    ch_buf_put(&h, "#include <math.h>\n#include <stdio.h>\n"
                   "static int s4(const double *A, double *f)\n{\n");
    ch_emit_spd_solve(&h, 4, "A[%zu]", "f[%zu]", nz4, "return 2;", &ops4, read4);
    ch_buf_put(&h, "    return 0;\n}\nstatic int s3(const double *A, double *f)\n{\n");
    ch_emit_spd_solve(&h, 3, "A[%zu]", "f[%zu]", nz3, "return 2;", &ops3, read3);
    /* the entries read: the diagonal and the lower triangle's nonzeros */
    for (size_t i = 0; i < 16; i++)
        CHECK_MSG(read4[i] == (i % 5 == 0 || (i / 4 > i % 4 && nz4[i])), "read4[%zu]", i);
    for (size_t i = 0; i < 9; i++) CHECK_MSG(read3[i] == (i % 4 == 0), "read3[%zu]", i);
    ch_buf_put(&h,
        "    return 0;\n}\nint main(void)\n{\n"
        "    const double A[16] = {4, 1, 0.5, 0, 1, 3, 0.2, 0.1, 0.5, 0.2, 2, 0.3, 0, 0.1, 0.3, 1};\n"
        "    const double x[4] = {1, -2, 0.5, 3};\n"
        "    const double B[16] = {1, 2, 0, 0, 2, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1};\n"
        "    const double D[9] = {2, 0, 0, 0, 4, 0, 0, 0, 0.5};\n"
        "    double f[4], g[4], g0[4], e[3] = {1, 1, 1};\n    int i, j, bad = 0;\n"
        "    for (i = 0; i < 4; i++) { f[i] = 0; for (j = 0; j < 4; j++) f[i] += A[i * 4 + j] * x[j]; g[i] = g0[i] = f[i]; }\n"
        "    if (s4(A, f) != 0) bad |= 1;\n"
        "    for (i = 0; i < 4; i++) if (fabs(f[i] - x[i]) > 1e-14) bad |= 2;\n"
        "    if (s4(B, g) != 2) bad |= 4;  /* eigenvalue -1: fallback */\n"
        "    for (i = 0; i < 4; i++) if (g[i] != g0[i]) bad |= 8;  /* f intact */\n"
        "    if (s3(D, e) != 0 || e[0] != 0.5 || e[1] != 0.25 || e[2] != 2) bad |= 16;\n"
        "    printf(\"%d\\n\", bad);\n    return bad;\n}\n");
    /* zero entries skipped: the 3 x 3 diagonal needs no products */
    CHECK(ops3.add == 0 && ops3.mul == 3 && ops3.div == 3);
    CHECK(strstr(h.s, "l3_0") == NULL); /* A_30 = 0 and nothing fills it in */
    char dir[300];
    snprintf(dir, sizeof dir, "%s/spd", tmpdir);
    sh("mkdir -p '%s'", dir, "");
    write_text(dir, "spd.c", h.s);
    ch_buf_free(&h);
    int rc = sh("cd '%s' && gcc -std=c99 -pedantic -Wall -Wextra -Werror -o spd spd.c -lm && ./spd",
                dir, "");
    CHECK_MSG(rc == 0, "unrolled LDL^T wrong (see %s)", dir);
}

static const char *cse_namer(void *data, const ch_sym *s)
{
    (void)data;
    if (s->kind == CH_SYM_COORD) return s->index == 0 ? "x[0]" : "x[1]";
    if (s->kind == CH_SYM_PARAM) return "p[0]";
    return NULL;
}

static size_t count_of(const char *s, const char *w)
{
    size_t c = 0;
    for (const char *p = s; (p = strstr(p, w)); p += strlen(w)) c++;
    return c;
}

/* The lowering rules, textually and numerically (compiled and run). */
static void test_cse(void)
{
    ch_ctx *ctx = ch_ctx_new();
    const ch_expr *x = ch_symbol(ctx, "x", CH_SYM_COORD, NULL, 0, 0);
    const ch_expr *y = ch_symbol(ctx, "y", CH_SYM_COORD, NULL, 0, 1);
    const ch_expr *a = ch_symbol(ctx, "a", CH_SYM_PARAM, NULL, 0, 0);
    const ch_expr *lam = ch_symbol(ctx, "lambda_1", CH_SYM_OTHER, NULL, 0, 0);
    const ch_expr *d = ch_add(ctx, x, y);
    const ch_expr *e[8];
    e[0] = ch_pow_si(ctx, x, 5);
    e[1] = ch_div(ctx, x, ch_pow_si(ctx, d, 2));
    e[2] = ch_div(ctx, y, ch_pow_si(ctx, d, 2));
    e[3] = ch_add(ctx, ch_mul(ctx, ch_fun1(ctx, CH_F_SIN, x), ch_fun1(ctx, CH_F_COS, x)),
                  ch_sub(ctx, ch_mul(ctx, ch_num_frac(ctx, 3, 2), x), ch_num_si(ctx, 2)));
    e[4] = ch_add_n(ctx, 4, (const ch_expr *[]){ch_sqrt(ctx, x), ch_pow(ctx, y, ch_num_frac(ctx, 3, 2)),
                                                 ch_pow(ctx, x, ch_num_frac(ctx, -1, 3)),
                                                 ch_pow(ctx, x, ch_num_frac(ctx, 2, 5))});
    e[5] = ch_mul(ctx, ch_mul(ctx, ch_atan2(ctx, y, x), ch_num_frac(ctx, -7, 3)), a);
    e[6] = ch_pow(ctx, x, y);
    e[7] = ch_mul(ctx, ch_pi(ctx), ch_pow_si(ctx, x, -2));
    for (int i = 0; i < 8; i++) CHECK(e[i] != NULL);
    ch_cse_prog prog;
    ch_error err;
    ch_error_clear(&err);
    int rc = ch_cse_build(ctx, 8, e, cse_namer, NULL, "w", "    ", &prog, &err);
    CHECK_MSG(rc == 0, "%s", err.msg);
    if (rc == 0) {
        const char *b = prog.body.s;
        CHECK(count_of(b, "sin(") == 1 && count_of(b, "cos(") == 1);
        CHECK(count_of(b, "x[0] * x[0]") == 1); /* x2 shared by x^5 and x^-2 */
        CHECK(count_of(b, "1.0 / ") <= 3);        /* 1/(x+y) and 1/x hoisted */
        CHECK(count_of(b, "/ (") == 0);
        CHECK(strstr(b, "pow(") != NULL && strstr(b, "cbrt(") != NULL);
        CHECK(strstr(b, "x[1]*w") != NULL || strstr(b, "x[1] * w") != NULL); /* y*sqrt(y) */
        CHECK(prog.after.div < prog.before.div && prog.after.mul <= prog.before.mul);
        ch_buf h;
        ch_buf_init(&h);
        ch_buf_put(&h, "#include <math.h>\n#include <stdio.h>\nint main(void)\n{\n"
                       "    const double x[2] = {0.3, 0.45}, p[1] = {2.0};\n    double o[8];\n");
        ch_buf_put(&h, b);
        for (int i = 0; i < 8; i++) ch_buf_printf(&h, "    o[%d] = %s;\n", i, prog.ref[i]);
        ch_buf_put(&h,
            "    {\n        double X = 0.3, Y = 0.45, want[8];\n        int i, bad = 0;\n"
            "        want[0] = pow(X, 5); want[1] = X / ((X + Y) * (X + Y));\n"
            "        want[2] = Y / ((X + Y) * (X + Y)); want[3] = sin(X) * cos(X) + 1.5 * X - 2;\n"
            "        want[4] = sqrt(X) + pow(Y, 1.5) + pow(X, -1.0 / 3) + pow(X, 0.4);\n"
            "        want[5] = -7.0 / 3 * 2.0 * atan2(Y, X); want[6] = pow(X, Y);\n"
            "        want[7] = 3.141592653589793 / (X * X);\n"
            "        for (i = 0; i < 8; i++)\n"
            "            if (fabs(o[i] - want[i]) > 1e-14 * fabs(want[i])) { printf(\"%d %.17g %.17g\\n\", i, o[i], want[i]); bad = 1; }\n"
            "        return bad;\n    }\n}\n");
        char dir[300];
        snprintf(dir, sizeof dir, "%s/cse", tmpdir);
        sh("mkdir -p '%s'", dir, "");
        write_text(dir, "cse.c", h.s);
        ch_buf_free(&h);
        rc = sh("cd '%s' && gcc -std=c99 -pedantic -Wall -Wextra -Werror -o cse cse.c -lm && ./cse",
                dir, "");
        CHECK_MSG(rc == 0, "CSE program wrong (see %s)", dir);
    }
    ch_cse_prog_free(&prog);
    /* A symbol the namer refuses is an error naming it. */
    const ch_expr *bad = ch_mul(ctx, lam, x);
    rc = ch_cse_build(ctx, 1, &bad, cse_namer, NULL, "w", "", &prog, &err);
    CHECK(rc != 0 && strstr(err.msg, "lambda_1") != NULL);
    ch_cse_prog_free(&prog);
    ch_ctx_free(ctx);
}

static void test_prefix(void)
{
    emitted e;
    ch_mechanics *d;
    ch_ctx *ctx;
    if (emit_model(SRCDIR "/examples/knife_edge.nh", NULL, &e, &d, &ctx)) return;
    static const char *const bad[] = {"", "1abc", "a-b", "a b", "x\"y",
                                      "a/*", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        ch_buf h, c;
        ch_buf_init(&h);
        ch_buf_init(&c);
        ch_error err;
        ch_error_clear(&err);
        CHECK(ch_emit_c(ctx, d, CH_FORM_FULL, bad[i], &h, &c, &err) == CH_ERR_USAGE);
        CHECK(strstr(err.msg, "prefix") != NULL);
        ch_buf_free(&h);
        ch_buf_free(&c);
    }
    ch_buf h, c;
    ch_buf_init(&h);
    ch_buf_init(&c);
    ch_error err;
    CHECK(ch_emit_c(ctx, d, CH_FORM_REDUCED, "ke", &h, &c, &err) == 0);
    CHECK(strstr(h.s, "int    ke_rhs(double t") != NULL);
    CHECK(strstr(h.s, "#define ke_NX 5\n") != NULL);
    CHECK(strstr(c.s, "\"phi'\"") != NULL);
    CHECK_STR(ch_form_name(CH_FORM_HAMILTON), "hamilton");
    CHECK(ch_form_parse("reduced") == CH_FORM_REDUCED);
    CHECK(ch_form_parse("nope") == -1);
    ch_buf_free(&h);
    ch_buf_free(&c);
    emitted_free(&e);
    ch_ctx_free(ctx);
}

/* The text of the function that starts at head, up to its closing line. */
static char *function_text(const char *code, const char *head)
{
    const char *s = strstr(code, head), *end = s ? strstr(s, "\n}\n") : NULL;
    if (!end) return NULL;
    char *t = malloc((size_t)(end - s) + 1);
    if (t) {
        memcpy(t, s, (size_t)(end - s));
        t[end - s] = 0;
    }
    return t;
}

/* With explicit alpha the reduced rhs evaluates alpha and the dynamics
 * as one program in kn_acc's body: sin and cos of the heading once per
 * call, no kn_vel (kn_alpha) nor kn_dyn beside it. The other entry points
 * keep kn_vel. */
static void test_fused_rhs(void)
{
    emitted e;
    ch_mechanics *d;
    ch_ctx *ctx;
    if (emit_model(SRCDIR "/examples/knife_edge.nh", NULL, &e, &d, &ctx)) return;
    const char *c = e.c[CH_FORM_REDUCED].s;
    char *acc = function_text(c, "static int kn_acc(");
    /* (the public rhs is kn_rhs followed by the chart's check) */
    char *rhs = function_text(c, "static int kn_rhs(double t");
    CHECK(acc && rhs);
    if (acc && rhs) {
        CHECK(count_of(acc, "sin(x[2])") == 1 && count_of(acc, "cos(x[2])") == 1);
        CHECK(strstr(acc, "v[1] = ") != NULL); /* y' = alpha */
        CHECK(!strstr(acc, "kn_dyn(") && !strstr(acc, "kn_alpha(") && !strstr(acc, "kn_vel("));
        CHECK(strstr(rhs, "kn_acc(") && !strstr(rhs, "kn_vel(") && !strstr(rhs, "kn_dyn("));
        CHECK(strstr(c, "int knife_edge_reduced_outputs_from(") &&
              strstr(strstr(c, "int knife_edge_reduced_outputs_from("), "kn_vel("));
    }
    /* the full form is untouched */
    CHECK(strstr(e.c[CH_FORM_FULL].s, "vd0") == NULL);
    free(acc);
    free(rhs);
    emitted_free(&e);
    ch_ctx_free(ctx);
}

/* Dead values (issue 43): on random patterns of M, G, b, r, kn_acc and
 * kn_facc declare no scalar (dg, X, MB, A) that nothing reads, and hide
 * none behind a (void) cast; ch_redsolve_reads names exactly the values
 * whose texts kn_acc's statements contain. */
static int mentions(const char *code, const char *word)
{
    size_t l = strlen(word), count = 0;
    for (const char *p = strstr(code, word); p; p = strstr(p + l, word))
        if (!(p[l] >= '0' && p[l] <= '9') && (p == code || !(p[-1] >= 'A' && p[-1] <= 'z')))
            count++;
    return (int)count;
}

static void test_dead_values(void)
{
    unsigned long seed = 12345;
    char text[600][16];
    const char *val[600];
    for (size_t i = 0; i < 600; i++) {
        snprintf(text[i], sizeof text[i], "o[%zu]", i);
        val[i] = text[i];
    }
    int bad = 0;
    for (int trial = 0; trial < 400 && !bad; trial++) {
#define RND() ((seed = seed * 6364136223846793005ul + 1442695040888963407ul) >> 33)
        size_t n = 2 + RND() % 7, k = 1 + RND() % (n - 1), m = n - k;
        size_t nv = n * n + k * n + n + k, dens = 1 + RND() % 4;
        int perm[8], dep[8], indep[8];
        unsigned char nz[600];
        for (size_t i = 0; i < n; i++) perm[i] = (int)i;
        for (size_t i = n; i > 1; i--) {
            size_t j = RND() % i;
            int t = perm[i - 1];
            perm[i - 1] = perm[j], perm[j] = t;
        }
        for (size_t i = 0; i < k; i++) dep[i] = perm[i];
        for (size_t i = 0; i < m; i++) indep[i] = perm[k + i];
        for (size_t i = 0; i < nv; i++) nz[i] = RND() % 5 < dens;
        for (size_t i = 0; i < n; i++) /* M symmetric with its diagonal */
            for (size_t j = 0; j <= i; j++) nz[j * n + i] = nz[i * n + j] = i == j || nz[i * n + j];
        for (size_t a = 0; a < k && RND() % 2; a++) nz[n * n + a * n + (size_t)dep[a]] = 1 + RND() % 2;
#undef RND
        ch_redsolve in = {{n, k, m, dep, indep, nz}, val, NULL};
        unsigned char read[600];
        if (ch_redsolve_reads(&in, read)) {
            CHECK_MSG(0, "trial %d: ch_redsolve_reads", trial);
            break;
        }
        for (int full = 0; full < 2 && !bad; full++) {
            ch_buf code;
            ch_buf_init(&code);
            ch_opcount ops = {0, 0, 0, 0};
            int tri = 0;
            unsigned needs = 0;
            int rc = full ? ch_emit_full_numeric(&in, &code, &ops, &tri, &needs)
                          : ch_emit_reduced_numeric(&in, &code, &ops, &tri, &needs);
            if (rc || !code.s) {
                CHECK_MSG(0, "trial %d: emit failed", trial);
                bad = 1;
                break;
            }
            static const char *const stem[] = {"dg", "X", "MB", "A"};
            for (int st = 0; st < 4; st++)
                for (size_t i = 0; i < nv; i++) {
                    char w[32], decl[48];
                    snprintf(w, sizeof w, "%s%zu", stem[st], i);
                    snprintf(decl, sizeof decl, "const double %s ", w);
                    if (strstr(code.s, decl) && mentions(code.s, w) < 2) {
                        CHECK_MSG(0, "trial %d %s: %s declared, never read:\n%s", trial,
                                  full ? "kn_facc" : "kn_acc", w, code.s);
                        bad = 1;
                        break;
                    }
                }
            if (strstr(code.s, "(void)X") || strstr(code.s, "(void)dg") || strstr(code.s, "(void)A")) {
                CHECK_MSG(0, "trial %d: a value cast to void:\n%s", trial, code.s);
                bad = 1;
            }
            for (size_t i = 0; !full && !bad && i < nv; i++)
                if (read[i] != (strstr(code.s, val[i]) != NULL)) {
                    CHECK_MSG(0, "trial %d: value %zu read %d:\n%s", trial, i, read[i], code.s);
                    bad = 1;
                }
            ch_buf_free(&code);
        }
    }
    CHECK(!bad);
}

/* The knife edge's full form where its dependent velocity y' is not
 * determined by the constraint (phi = pi/2: G_d = -cos phi is rounding
 * noise, which B^T M B's pivot test catches too), badly determined
 * (pi/2 - 1e-3: only kn_facc's row test declines) and well determined
 * (pi/2 - 0.1): kn_facc declines the first two, accepts the third, and
 * the right side and the multiplier (la_lambda at the third) are
 * la_kkt's at all three. */
static void test_full_fallback(void)
{
    emitted e;
    ch_mechanics *d;
    ch_ctx *ctx;
    char path[300];
    snprintf(path, sizeof path, "%s/examples/knife_edge.nh", SRCDIR);
    if (emit_model(path, NULL, &e, &d, &ctx)) return;
    char dir[512];
    snprintf(dir, sizeof dir, "%s/fallback", tmpdir);
    sh("mkdir -p '%s'", dir, "");
    write_text(dir, "knife_edge_full.c", e.c[CH_FORM_FULL].s);
    run_including_harness(dir, "fallback",
        "#include <stdio.h>\n#include \"knife_edge_full.c\"\n"
        "int main(void)\n{\n"
        "    const double *p = knife_edge_full_param_defaults;\n"
        "    double x[6] = {0.3, -0.2, 0.0, 0.5, 1.0, 0.3}, dx[6], v[3], o[16], acc[3], lam[2], w[41];\n"
        "    double out[knife_edge_full_NOUT];\n"
        "    int piv[5], s, i, rc = 0;\n"
        "    for (s = 0; s < 3; s++) {\n"
        "        x[2] = 1.5707963267948966 - (s == 0 ? 0.0 : s == 1 ? 1e-3 : 0.1);\n"
        "        rc |= kn_vel(0.0, x, p, 0, v);\n"
        "        kn_dyn(0.0, x, p, v, o);\n"
        "        rc |= kn_facc(o, acc) != (s < 2);\n"
        "        rc |= knife_edge_full_rhs(0.0, x, p, dx);\n"
        "        rc |= la_kkt(3, 1, o, o + 9, o + 12, o + 15, acc, lam, w, piv);\n"
        "        for (i = 0; i < 3; i++) printf(\"CMP fb%d_%d %.17g %.17g\\n\", s, i, dx[3 + i], acc[i]);\n"
        "        rc |= knife_edge_full_outputs(0.0, x, p, out);\n"
        "        printf(\"CMP fblam%d %.17g %.17g\\n\", s, out[1], lam[0]);\n"
        "    }\n"
        "    printf(\"RC %d\\n\", rc);\n    return 0;\n}\n",
        "knife_edge fallback");
    emitted_free(&e);
    ch_ctx_free(ctx);
}

int main(void)
{
    snprintf(tmpdir, sizeof tmpdir, "/tmp/chetaev_emit_XXXXXX");
    if (!mkdtemp(tmpdir)) {
        perror("mkdtemp");
        return 1;
    }
    RUN(test_cse);
    RUN(test_prefix);
    RUN(test_examples);
    RUN(test_injection);
    RUN(test_integrals);
    RUN(test_hamilton_numeric);
    RUN(test_symbolic_not_built);
    RUN(test_hamilton_newton_failure);
    RUN(test_reduced_numeric);
    RUN(test_hamilton_fused);
    RUN(test_spd_solve);
    RUN(test_dead_values);
    RUN(test_fused_rhs);
    RUN(test_full_fallback);
    if (!check_failed && !getenv("CHETAEV_KEEP_EMIT")) sh("rm -rf '%s'", tmpdir, "");
    else fprintf(stderr, "emitted files kept in %s\n", tmpdir);
    return check_summary("emit");
}
