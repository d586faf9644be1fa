/* test_jit.c — the JIT backends (libtcc, cc + dlopen), binding emitted
 * symbols to the runtime, the simulation loop and its CSV, the option
 * parser, and the --driver program giving the same bytes as the JIT run.
 * A hand-written system (a pendulum, prefix osc) stands in for emitted
 * code, with the API of SPEC §4. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "jit/driver.h"
#include "jit/jit.h"

static const char osc_h[] =
    "#ifndef OSC_H\n#define OSC_H\n#include <math.h>\n"
    "#define osc_NX 2\n#define osc_NP 1\n#define osc_NQ 1\n#define osc_NOUT 1\n"
    "extern const char *const osc_state_names[osc_NX];\n"
    "extern const char *const osc_param_names[osc_NP];\n"
    "extern const double osc_param_defaults[osc_NP];\n"
    "extern const char *const osc_output_names[osc_NOUT];\n"
    "void osc_initial(double *x);\n"
    "int osc_rhs_from(double t, const double *x, const double *p, const double *vs,\n"
    "    double *dxdt);\n"
    "double osc_energy_from(double t, const double *x, const double *p, const double *vs);\n"
    "int osc_velocities_from(double t, const double *x, const double *p, const double *vs,\n"
    "    double *qt);\n"
    "int osc_outputs_from(double t, const double *x, const double *p, const double *vs,\n"
    "    double *out);\n"
    "int osc_project_from(double t, double *x, const double *p, const double *vs);\n"
    "int osc_state_from(double t, const double *q, const double *qt,\n"
    "                   const double *p, double *x);\n"
    "#endif\n";

/* rhs fails (singular) once |x| exceeds p[1] when NP = 2 is used below;
 * with the defaults it never does. */
static const char osc_c[] =
    "#include \"osc.h\"\n"
    "const char *const osc_state_names[osc_NX] = {\"x\", \"x'\"};\n"
    "const char *const osc_param_names[osc_NP] = {\"k\"};\n"
    "const double osc_param_defaults[osc_NP] = {4};\n"
    "const char *const osc_output_names[osc_NOUT] = {\"p_x\"};\n"
    "void osc_initial(double *x) { x[0] = 1; x[1] = 0; }\n"
    "int osc_rhs_from(double t, const double *x, const double *p, const double *vs,\n"
    "    double *dxdt)\n"
    "{\n    (void)t; (void)vs;\n    if (x[0] > 10) return 1;\n"
    "    dxdt[0] = x[1];\n    dxdt[1] = -p[0] * sin(x[0]);\n    return 0;\n}\n"
    "double osc_energy_from(double t, const double *x, const double *p, const double *vs)\n"
    "{\n    (void)t; (void)vs;\n    return 0.5 * x[1] * x[1] + p[0] * (1 - cos(x[0]));\n}\n"
    "int osc_velocities_from(double t, const double *x, const double *p, const double *vs,\n"
    "    double *qt)\n"
    "{\n    (void)t; (void)vs; (void)p;\n    qt[0] = x[1];\n    return 0;\n}\n"
    "int osc_outputs_from(double t, const double *x, const double *p, const double *vs,\n"
    "    double *out)\n"
    "{\n    (void)t; (void)vs; (void)p;\n    out[0] = 2 * x[1];\n    return 0;\n}\n"
    "int osc_project_from(double t, double *x, const double *p, const double *vs)\n"
    "{\n    (void)t; (void)vs; (void)x; (void)p;\n    return 0;\n}\n"
    "int osc_state_from(double t, const double *q, const double *qt,\n"
    "                   const double *p, double *x)\n"
    "{\n    (void)t; (void)p;\n    x[0] = q[0];\n    x[1] = qt[0];\n    return 0;\n}\n";

static char *osc_unit(void)
{
    ch_buf b;
    ch_buf_init(&b);
    /* the unit the emitter would write: the JIT's math declarations, the
     * header's text where osc.c includes it */
    ch_buf src;
    ch_buf_init(&src);
    ch_buf_put(&src, ch_driver_math_prelude());
    ch_buf_put(&src, osc_h);
    ch_buf_put(&src, strchr(osc_c, '\n') + 1);
    ch_driver_jit_unit("osc", src.s, &b);
    ch_buf_free(&src);
    return ch_buf_take(&b);
}

/* Reads a whole stream from the start. */
static char *slurp(FILE *f)
{
    ch_buf b;
    ch_buf_init(&b);
    char chunk[4096];
    size_t n;
    rewind(f);
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) ch_buf_putn(&b, chunk, n);
    ch_buf_putc(&b, 0);
    return ch_buf_take(&b);
}

static size_t count_lines(const char *s)
{
    size_t n = 0;
    for (; *s; s++) n += *s == '\n';
    return n;
}

/* Runs chrt_main on the bound system with args; returns the exit code,
 * the CSV in *csv (caller frees). */
static int run_main(const chrt_system *s, int argc, const char **args, char **csv)
{
    char path[] = "/tmp/chetaev-test-jit-XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0) return -1;
    close(fd);
    char *argv[32];
    argv[0] = "test";
    argv[1] = "-o";
    argv[2] = path;
    for (int i = 0; i < argc; i++) argv[3 + i] = (char *)args[i];
    int rc = chrt_main(s, argc + 3, argv);
    FILE *f = fopen(path, "r");
    *csv = f ? slurp(f) : NULL;
    if (f) fclose(f);
    unlink(path);
    return rc;
}

/* CSV of the default run of the unit compiled by `which`. */
static char *simulate_with(ch_compiler which, const char **args, int nargs)
{
    char *unit = osc_unit();
    ch_jit *j = NULL;
    ch_error err;
    ch_error_clear(&err);
    char *csv = NULL;
    int rc = ch_jit_compile(unit, which, &j, &err);
    CHECK_MSG(rc == 0, "%s", err.msg);
    chrt_system s;
    if (!rc && ch_driver_bind(j, "osc", &s, &err) == 0) {
        CHECK(run_main(&s, nargs, args, &csv) == 0);
    } else {
        CHECK_MSG(0, "bind: %s", err.msg);
    }
    ch_jit_free(j);
    free(unit);
    return csv;
}

static void test_tcc_and_cc_agree(void)
{
    const char *args[] = {"--t1", "2", "--every", "10", "--set", "k=9", "--method", "rk4"};
    char *a = simulate_with(CH_COMPILER_TCC, args, 8);
    char *b = simulate_with(CH_COMPILER_CC, args, 8);
    CHECK(a && b);
    if (!a || !b) goto done;
    CHECK(strncmp(a, "t,x,x',E,p_x\n", 13) == 0);
    CHECK(count_lines(a) == 1 + 201);
    /* Same arithmetic, same libm: the bytes agree. */
    CHECK_MSG(strcmp(a, b) == 0, "tcc and cc CSV differ");
    /* Energy is conserved to RK4 accuracy; E(0) = 9(1 - cos 1). */
    const char *last = a + strlen(a) - 1;
    while (last > a && last[-1] != '\n') last--;
    double t, x, v, e, px;
    CHECK(sscanf(last, "%lf,%lf,%lf,%lf,%lf", &t, &x, &v, &e, &px) == 5);
    CHECK_NEAR(t, 2, 0);
    CHECK_NEAR(e, 9 * (1 - cos(1.0)), 1e-9);
    CHECK_NEAR(px, 2 * v, 0);
done:
    free(a);
    free(b);
}

static void test_compile_errors(void)
{
    ch_compiler which[2] = {CH_COMPILER_TCC, CH_COMPILER_CC};
    for (int i = 0; i < 2; i++) {
        ch_jit *j = (ch_jit *)&which; /* must be reset to NULL */
        ch_error err;
        ch_error_clear(&err);
        int rc = ch_jit_compile("int f(void) { return undeclared_name; }\n",
                                which[i], &j, &err);
        CHECK(rc != 0);
        CHECK(j == NULL);
        CHECK(err.code == CH_ERR_MODEL);
        CHECK_MSG(strstr(err.msg, "undeclared_name") != NULL, "%s", err.msg);
        CHECK_MSG(strstr(err.msg, i ? "cc: compilation failed" : "tcc: compilation failed"),
                  "%s", err.msg);
    }
}

/* tcc links emitted code against the math functions of this process
 * (gen/jit/jit.c); code that calls anything else is linked with the C
 * library as usual, and a function that exists nowhere is an error that
 * names it. */
static void test_link_fallback(void)
{
    ch_jit *j = NULL;
    ch_error err;
    ch_error_clear(&err);
    int rc = ch_jit_compile("#include <string.h>\n#include <stdlib.h>\n"
                            "long len(const char *s) { return (long)strlen(s) + labs(-2); }\n",
                            CH_COMPILER_TCC, &j, &err);
    CHECK_MSG(rc == 0, "%s", err.msg);
    if (rc == 0) {
        void *sym = ch_jit_symbol(j, "len");
        long (*f)(const char *);
        CHECK(sym != NULL);
        if (sym) {
            memcpy(&f, &sym, sizeof f);
            CHECK(f("abc") == 5);
        }
        ch_jit_free(j);
    }
    j = NULL;
    ch_error_clear(&err);
    rc = ch_jit_compile("double nowhere_fn(double);\n"
                        "double g(double x) { return nowhere_fn(x); }\n",
                        CH_COMPILER_TCC, &j, &err);
    CHECK(rc == CH_ERR_MODEL && j == NULL);
    CHECK_MSG(strstr(err.msg, "tcc: linking failed") && strstr(err.msg, "nowhere_fn"), "%s",
              err.msg);
}

static void test_symbols(void)
{
    ch_compiler which[2] = {CH_COMPILER_TCC, CH_COMPILER_CC};
    for (int i = 0; i < 2; i++) {
        ch_jit *j = NULL;
        ch_error err;
        ch_error_clear(&err);
        int rc = ch_jit_compile("#include <math.h>\n"
                                "double twice_sin(double x) { return 2 * sin(x); }\n"
                                "const int answer = 42;\n",
                                which[i], &j, &err);
        CHECK_MSG(rc == 0, "%s", err.msg);
        if (rc) continue;
        CHECK(ch_jit_symbol(j, "no_such_symbol") == NULL);
        const int *ans = ch_jit_symbol(j, "answer");
        CHECK(ans && *ans == 42);
        void *sym = ch_jit_symbol(j, "twice_sin");
        double (*f)(double);
        CHECK(sym != NULL);
        if (sym) {
            memcpy(&f, &sym, sizeof f);
            CHECK_NEAR(f(0.5), 2 * sin(0.5), 0);
        }
        /* The compiled code is not a runtime system: binding names what
         * is missing. */
        chrt_system s;
        CHECK(ch_driver_bind(j, "osc", &s, &err) == CH_ERR_MODEL);
        CHECK_STR(err.msg, "compiled code lacks the symbol 'osc_chrt_dims'");
        ch_jit_free(j);
    }
    ch_jit_free(NULL);
    CHECK(ch_jit_symbol(NULL, "x") == NULL);
}

static void test_jit_unit(void)
{
    char *u = osc_unit();
    CHECK(strstr(u, "#include \"osc.h\"") == NULL);
    CHECK(strstr(u, "const int osc_chrt_dims[7] = {osc_NX, osc_NQ, osc_NP, osc_NOUT, osc_CHART, osc_NEV,\n"
                     "    osc_NEWTON};"));
    CHECK(strstr(u, "#define osc_NX 2") < strstr(u, "osc_state_names[osc_NX] = "));
    free(u);
    CHECK(ch_driver_prefix_ok("model_full"));
    CHECK(!ch_driver_prefix_ok("1abc"));
    CHECK(!ch_driver_prefix_ok("a-b"));
    CHECK(!ch_driver_prefix_ok(""));
}

/* No parameters and no optional columns: the zero-length arrays do not
 * exist (not C99), neither in the JIT binding nor in the driver. */
static const char free_c[] =
    "#define fr_NX 2\n#define fr_NP 0\n#define fr_NQ 1\n#define fr_NOUT 0\n"
    "const char *const fr_state_names[fr_NX] = {\"x\", \"x'\"};\n"
    "void fr_initial(double *x) { x[0] = 1; x[1] = 0; }\n"
    "int fr_rhs_from(double t, const double *x, const double *p, const double *vs,\n"
    "    double *dxdt)\n"
    "{ (void)t; (void)vs; (void)p; dxdt[0] = x[1]; dxdt[1] = -x[0]; return 0; }\n"
    "double fr_energy_from(double t, const double *x, const double *p, const double *vs)\n"
    "{ (void)t; (void)vs; (void)p; return 0.5 * (x[0] * x[0] + x[1] * x[1]); }\n"
    "int fr_velocities_from(double t, const double *x, const double *p, const double *vs,\n"
    "    double *qt)\n"
    "{ (void)t; (void)vs; (void)p; qt[0] = x[1]; return 0; }\n"
    "int fr_outputs_from(double t, const double *x, const double *p, const double *vs,\n"
    "    double *out)\n"
    "{ (void)t; (void)vs; (void)x; (void)p; (void)out; return 0; }\n"
    "int fr_project_from(double t, double *x, const double *p, const double *vs)\n"
    "{ (void)t; (void)vs; (void)x; (void)p; return 0; }\n"
    "int fr_state_from(double t, const double *q, const double *qt,\n"
    "                  const double *p, double *x)\n"
    "{ (void)t; (void)p; x[0] = q[0]; x[1] = qt[0]; return 0; }\n";

static const char free_h[] =
    "#ifndef FR_H\n#define FR_H\n#define fr_NX 2\n#define fr_NP 0\n"
    "#define fr_NQ 1\n#define fr_NOUT 0\n"
    "extern const char *const fr_state_names[fr_NX];\n"
    "void fr_initial(double *x);\n"
    "int fr_rhs_from(double, const double *, const double *, const double *, double *);\n"
    "double fr_energy_from(double, const double *, const double *, const double *);\n"
    "int fr_velocities_from(double, const double *, const double *, const double *,\n"
    "                      double *);\n"
    "int fr_outputs_from(double, const double *, const double *, const double *, double *);\n"
    "int fr_project_from(double, double *, const double *, const double *);\n"
    "int fr_state_from(double, const double *, const double *,\n"
    "                  const double *, double *);\n#endif\n";

static void test_no_parameters(void)
{
    ch_buf b;
    ch_buf_init(&b);
    ch_driver_jit_unit("fr", free_c, &b);
    ch_jit *j = NULL;
    ch_error err;
    ch_error_clear(&err);
    int rc = ch_jit_compile(b.s, CH_COMPILER_TCC, &j, &err);
    CHECK_MSG(rc == 0, "%s", err.msg);
    chrt_system s;
    if (!rc) {
        CHECK_MSG(ch_driver_bind(j, "fr", &s, &err) == 0, "%s", err.msg);
        CHECK(s.np == 0 && s.nout == 0 && s.param_names == NULL);
        char *csv = NULL;
        const char *args[] = {"--t1", "0.002", "--init", "x'=0.5", "--method", "rk4"};
        CHECK(run_main(&s, 6, args, &csv) == 0);
        CHECK(csv && strncmp(csv, "t,x,x',E\n0,1,0.5,0.625\n", 23) == 0);
        CHECK(csv && count_lines(csv) == 4);
        free(csv);
        const char *bad[] = {"--set", "k=1"};
        char msg[200];
        chrt_args a;
        double x0[2];
        CHECK(chrt_parse_args(&s, 2, (char **)bad, &a, x0, NULL, msg, sizeof msg) == 2);
        CHECK_STR(msg, "--set: unknown parameter 'k' (parameters: none)");
    }
    ch_jit_free(j);
    ch_buf_free(&b);

    /* The driver builds without the parameter and output arrays. */
    char dir[] = "/tmp/chetaev-test-free-XXXXXX", path[256], cmd[1024];
    if (!mkdtemp(dir)) {
        CHECK(0);
        return;
    }
    ch_buf m;
    ch_buf_init(&m);
    ch_emit_driver("fr", &m);
    struct { const char *name, *text; } files[8] = {
        {"main.c", m.s}, {"fr.c", free_c}, {"fr.h", free_h}};
    size_t nfiles = 3;
    for (size_t i = 0;; i++) {
        size_t len;
        if (ch_driver_runtime_file(i, &files[nfiles].name, &files[nfiles].text,
                                   &len, &err))
            break;
        nfiles++;
    }
    for (size_t i = 0; i < nfiles; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, files[i].name);
        FILE *f = fopen(path, "w");
        if (f) {
            fputs(files[i].text, f);
            fclose(f);
        }
    }
    snprintf(cmd, sizeof cmd,
             "cc -std=c99 -pedantic -Wall -Wextra -Werror -O2 -o %s/prog %s/*.c -lm"
             " && %s/prog --t1 0.002 --init \"x'=0.5\" | head -2 | tail -1 | grep -qx '0,1,0.5,0.625'",
             dir, dir, dir);
    CHECK(system(cmd) == 0);
    ch_buf_free(&m);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    CHECK(system(cmd) == 0);
}

/* ---- the runtime with native functions --------------------------------- */

static const char *const nat_states[] = {"q", "q'"};
static const char *const nat_params[] = {"a", "b"};
static const double nat_defaults[] = {1, 0.5};

static void nat_initial(double *x)
{
    x[0] = 0;
    x[1] = 1;
}

/* q' = v, v' = a; singular (returns 1) once t > b. */
static int nat_rhs(double t, const double *x, const double *p, const double *vs, double *dx)
{
    (void)vs;
    dx[0] = x[1];
    dx[1] = p[0];
    return t > p[1];
}

static double nat_energy(double t, const double *x, const double *p, const double *vs)
{
    (void)vs;
    (void)t;
    return 0.5 * x[1] * x[1] - p[0] * x[0];
}

static int nat_velocities(double t, const double *x, const double *p, const double *vs,
                          double *qt)
{
    (void)vs;
    (void)t;
    (void)p;
    qt[0] = x[1];
    return 0;
}

static int nat_outputs(double t, const double *x, const double *p, const double *vs,
                       double *o)
{
    (void)vs;
    (void)t;
    (void)x;
    (void)p;
    (void)o;
    return 0;
}

static const chrt_system nat = {"nat", 2, 1, 2, 0, nat_states, nat_params,
                                nat_defaults, NULL, nat_initial, nat_rhs,
                                nat_energy, nat_velocities, nat_outputs, NULL,
                                NULL, NULL, 0, NULL, NULL, NULL, 0};

static void test_rows_and_failure(void)
{
    char *csv;
    const char *ok[] = {"--set", "b=10", "--dt", "0.1", "--t1", "1", "--every", "3",
                        "--method", "rk4"};
    CHECK(run_main(&nat, 10, ok, &csv) == 0);
    /* 10 steps, rows at steps 0, 3, 6, 9 and at t1 (step 10). */
    CHECK(csv && count_lines(csv) == 1 + 5);
    CHECK(csv && strstr(csv, "\n1,") != NULL);
    CHECK(csv && strncmp(csv, "t,q,q',E\n0,0,1,0.5\n", 19) == 0);
    free(csv);

    const char *uneven[] = {"--set", "b=10", "--dt", "0.3", "--t1", "1", "--method", "euler"};
    CHECK(run_main(&nat, 8, uneven, &csv) == 0);
    /* ceil(1/0.3) = 4 steps, the last one ends at exactly 1. */
    CHECK(csv && count_lines(csv) == 1 + 5);
    CHECK(csv && strstr(csv, "\n1,") != NULL);
    free(csv);

    /* rhs singular for t > 0.5: RK4 evaluates it at t + h, so the step
     * from t = 0.4 fails. */
    const char *bad[] = {"--dt", "0.2", "--t1", "1", "--init", "q'=2", "--method", "rk4"};
    CHECK(run_main(&nat, 8, bad, &csv) == CHRT_EXIT_NUMERIC);
    CHECK(csv && count_lines(csv) == 1 + 3); /* t = 0, 0.2, 0.4 kept */
    CHECK(csv && strncmp(csv, "t,q,q',E\n0,0,2,", 15) == 0);
    free(csv);

    char msg[200];
    chrt_options o;
    chrt_options_default(&o);
    o.method = CHRT_RK4;
    o.dt = 0.2;
    double x0[2] = {0, 1}, p[2] = {1, 0.5};
    FILE *f = tmpfile();
    CHECK(chrt_simulate(&nat, &o, x0, p, f, NULL, NULL, msg, sizeof msg) == CHRT_EXIT_NUMERIC);
    CHECK_STR(msg, "numerical failure at t = 0.40000000000000002 (step 3): "
                   "the right-hand side failed: singular system or Newton not converged");
    fclose(f);
}

static void test_nonfinite(void)
{
    char msg[200];
    chrt_options o;
    chrt_options_default(&o);
    o.method = CHRT_EULER;
    o.dt = 1e300;
    o.t1 = 1e301;
    double x0[2] = {0, 1e150}, p[2] = {1e300, 1e308}; /* E finite at t = 0 */
    FILE *f = tmpfile();
    CHECK(chrt_simulate(&nat, &o, x0, p, f, NULL, NULL, msg, sizeof msg) == CHRT_EXIT_NUMERIC);
    CHECK_MSG(strstr(msg, "(step 1): the new state is not finite") != NULL, "%s", msg);
    char *csv = slurp(f);
    CHECK(count_lines(csv) == 2);
    free(csv);
    fclose(f);
}

static int parse(int argc, const char **args, char *msg, size_t len)
{
    chrt_args a;
    double x0[2], p[2];
    return chrt_parse_args(&nat, argc, (char **)args, &a, x0, p, msg, len);
}

static void test_options(void)
{
    char msg[300];
    const char *a1[] = {"--set", "c=1"};
    CHECK(parse(2, a1, msg, sizeof msg) == CHRT_EXIT_USAGE);
    CHECK_STR(msg, "--set: unknown parameter 'c' (parameters: a, b)");
    const char *a2[] = {"--init", "q=1x"};
    CHECK(parse(2, a2, msg, sizeof msg) == CHRT_EXIT_USAGE);
    CHECK_STR(msg, "--init q=1x: '1x' is not a finite number or constant expression (1/3, pi/2)");
    const char *a3[] = {"--init=r'=1"};
    CHECK(parse(1, a3, msg, sizeof msg) == CHRT_EXIT_USAGE);
    CHECK_STR(msg, "--init: 'r'' is not a state variable of nat (known: q, q')");
    const char *a4[] = {"--set", "a"};
    CHECK(parse(2, a4, msg, sizeof msg) == CHRT_EXIT_USAGE);
    CHECK_STR(msg, "--set expects NAME=VALUE, got 'a'");
    const char *a5[] = {"--dt", "0"};
    CHECK(parse(2, a5, msg, sizeof msg) == CHRT_EXIT_USAGE);
    CHECK_STR(msg, "--dt: '0' is not positive");
    const char *a6[] = {"--every", "0"};
    CHECK(parse(2, a6, msg, sizeof msg) == CHRT_EXIT_USAGE);
    CHECK_STR(msg, "--every: '0' is not a positive integer");
    const char *a7[] = {"--method", "rk5"};
    CHECK(parse(2, a7, msg, sizeof msg) == CHRT_EXIT_USAGE);
    CHECK_STR(msg, "unknown method 'rk5' (dop853, rk45, cvode, euler, midpoint, rk4)");
    const char *a8[] = {"--t1"};
    CHECK(parse(1, a8, msg, sizeof msg) == CHRT_EXIT_USAGE);
    CHECK_STR(msg, "--t1 needs a value");
    const char *a9[] = {"--bogus"};
    CHECK(parse(1, a9, msg, sizeof msg) == CHRT_EXIT_USAGE);
    CHECK_STR(msg, "unknown option '--bogus'");
    const char *a10[] = {"--t1", "-1"};
    CHECK(parse(2, a10, msg, sizeof msg) == CHRT_EXIT_USAGE);
    CHECK_STR(msg, "--t1 must be a finite number >= 0 (got -1)");
    const char *a11[] = {"--dt", "nan"};
    CHECK(parse(2, a11, msg, sizeof msg) == CHRT_EXIT_USAGE);
    CHECK_STR(msg, "--dt: 'nan' is not a finite number");

    chrt_args a;
    double x0[2], p[2];
    const char *good[] = {"--set", "b=3", "--init", "q'=-2", "--method=midpoint",
                          "--every=4", "--project", "-o", "f.csv", "--set=a=0.25"};
    CHECK(chrt_parse_args(&nat, 10, (char **)good, &a, x0, p, msg, sizeof msg) == 0);
    CHECK(p[0] == 0.25 && p[1] == 3 && x0[0] == 0 && x0[1] == -2);
    CHECK(a.opt.method == CHRT_MIDPOINT && a.opt.every == 4 && a.opt.project);
    CHECK_STR(a.output, "f.csv");
    /* Syntax only: names are not resolved without a system. */
    const char *names[] = {"--set", "zz=1"};
    CHECK(chrt_parse_args(NULL, 2, (char **)names, &a, NULL, NULL, msg, sizeof msg) == 0);
}

/* ---- --init through state_from ------------------------------------------ */

/* Coordinates a, b with b' = 2 a' (dependent), state (a, b, y_a), y_a = m a'. */
static const char *const con_states[] = {"a", "b", "y_a"};
static const char *const con_params[] = {"m"};
static const double con_defaults[] = {1};

static void con_initial(double *x)
{
    x[0] = 0;
    x[1] = 0;
    x[2] = 0.5;
}

static int con_velocities(double t, const double *x, const double *p, const double *vs,
                          double *qt)
{
    (void)t, (void)vs;
    qt[0] = x[2] / p[0];
    qt[1] = 2 * qt[0];
    return 0;
}

static int con_state_from(double t, const double *q, const double *qt,
                          const double *p, double *x)
{
    (void)t;
    x[0] = q[0];
    x[1] = q[1];
    x[2] = p[0] * qt[0];
    return p[0] == 0;
}

static const chrt_system con = {"con", 3, 2, 1, 0, con_states, con_params,
                                con_defaults, NULL, con_initial, nat_rhs,
                                nat_energy, con_velocities, nat_outputs, NULL,
                                con_state_from, NULL, 0, NULL, NULL, NULL, 0};

static int con_parse(int argc, const char **args, double *x0, chrt_args *a,
                     char *msg, size_t len)
{
    double p[1];
    return chrt_parse_args(&con, argc, (char **)args, a, x0, p, msg, len);
}

static void test_init_state_from(void)
{
    char msg[300];
    chrt_args a;
    double x[3];
    CHECK(con_parse(0, NULL, x, &a, msg, sizeof msg) == 0);
    CHECK(x[0] == 0 && x[1] == 0 && x[2] == 0.5);
    /* The momentum follows the parameter. */
    const char *a1[] = {"--set", "m=2"};
    CHECK(con_parse(2, a1, x, &a, msg, sizeof msg) == 0);
    CHECK(x[2] == 1);
    const char *a2[] = {"--init", "a'=3", "--init", "b=2"};
    CHECK(con_parse(4, a2, x, &a, msg, sizeof msg) == 0);
    CHECK(x[0] == 0 && x[1] == 2 && x[2] == 3);
    CHECK_STR(a.warning, "");
    /* A dependent velocity is recomputed, with a warning. */
    const char *a3[] = {"--init", "b'=7"};
    CHECK(con_parse(2, a3, x, &a, msg, sizeof msg) == 0);
    CHECK(x[2] == 0.5);
    CHECK_STR(a.warning, "--init b'=7 is recomputed from the constraints as 1");
    /* Momenta are state names: set directly, after the velocities. */
    const char *a4[] = {"--init", "y_a=4", "--init", "a'=3"};
    CHECK(con_parse(4, a4, x, &a, msg, sizeof msg) == 0);
    CHECK(x[2] == 4);
    const char *a5[] = {"--init", "zz=1"};
    CHECK(con_parse(2, a5, x, &a, msg, sizeof msg) == CHRT_EXIT_USAGE);
    CHECK_STR(msg, "--init: 'zz' is not a state variable of con (known: a, b, y_a, a', b')");
    const char *a6[] = {"--set", "m=0"};
    CHECK(con_parse(2, a6, x, &a, msg, sizeof msg) == CHRT_EXIT_NUMERIC);
    CHECK_STR(msg, "numerical failure at t = 0 (step 0): no state of con for "
                   "these initial coordinates and velocities (singular)");
}

/* emit --driver for osc: main.c + runtime + osc.{h,c} built with cc give
 * the bytes of the JIT run. */
static void test_driver_program(void)
{
    char dir[] = "/tmp/chetaev-test-driver-XXXXXX";
    if (!mkdtemp(dir)) {
        CHECK(0);
        return;
    }
    char path[256], cmd[1024];
    ch_buf main_c;
    ch_buf_init(&main_c);
    ch_emit_driver("osc", &main_c);
    struct { const char *name, *text; } files[8] = {
        {"main.c", main_c.s}, {"osc.h", osc_h}, {"osc.c", osc_c}};
    size_t nfiles = 3;
    ch_error err;
    ch_error_clear(&err);
    for (size_t i = 0;; i++) {
        size_t len;
        int rc = ch_driver_runtime_file(i, &files[nfiles].name, &files[nfiles].text,
                                        &len, &err);
        CHECK_MSG(rc >= 0 && rc <= 1, "%s", err.msg);
        if (rc) break;
        nfiles++;
    }
    CHECK(nfiles == 7);
    for (size_t i = 0; i < nfiles; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, files[i].name);
        FILE *f = fopen(path, "w");
        CHECK(f != NULL);
        if (f) {
            fputs(files[i].text, f);
            fclose(f);
        }
    }
    snprintf(cmd, sizeof cmd,
             "cc -std=c99 -pedantic -Wall -Wextra -Werror -O2 -o %s/prog %s/*.c -lm"
             " && %s/prog --t1 2 --every 10 --set k=9 > %s/out.csv",
             dir, dir, dir, dir);
    CHECK(system(cmd) == 0);
    snprintf(path, sizeof path, "%s/out.csv", dir);
    FILE *f = fopen(path, "r");
    char *got = f ? slurp(f) : NULL;
    if (f) fclose(f);
    const char *args[] = {"--t1", "2", "--every", "10", "--set", "k=9"};
    char *want = simulate_with(CH_COMPILER_TCC, args, 6);
    CHECK(got && want && strcmp(got, want) == 0);
    free(got);
    free(want);
    ch_buf_free(&main_c);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    CHECK(system(cmd) == 0);
}

int main(void)
{
    RUN(test_tcc_and_cc_agree);
    RUN(test_compile_errors);
    RUN(test_symbols);
    RUN(test_link_fallback);
    RUN(test_jit_unit);
    RUN(test_no_parameters);
    RUN(test_rows_and_failure);
    RUN(test_nonfinite);
    RUN(test_options);
    RUN(test_init_state_from);
    RUN(test_driver_program);
    return check_summary("jit");
}
