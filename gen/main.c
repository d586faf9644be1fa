/* main.c — the chetaev command line (SPEC §2): a thin layer that parses
 * options, calls the library and maps its errors to exit codes. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "compile.h"
#include "derive.h"
#include "driver.h"
#include "emit_c.h"
#include "jit.h"
#include "version.h"
#include "model.h"
#include "mech/audit.h"


enum { EXIT_MODEL = 1, EXIT_USAGE = 2 };

static const char *const usage_main =
    "usage: chetaev COMMAND MODEL [OPTIONS]\n"
    "\n"
    "Derives the equations of motion of a constrained Lagrangian system from\n"
    "a model file (*.nh) and prints them or emits C code.\n"
    "\n"
    "commands:\n"
    "  derive MODEL   print the derived quantities (text, latex, sympy, json)\n"
    "  emit MODEL     write C right-hand sides (and a driver program)\n"
    "  run MODEL      compile in process, integrate and print CSV\n"
    "  check MODEL    audit conserved quantities (energy, momenta, fields, integrals)\n"
    "  repl MODEL     interactive session (not available in this version)\n"
    "\n"
    "options:\n"
    "  -h, --help     this help; 'chetaev COMMAND --help' for a command\n"
    "  --version      print the version\n";

static const char *const usage_derive =
    "usage: chetaev derive MODEL [--format text|latex|sympy|json]\n"
    "                            [--only SECTION[,SECTION...]]\n"
    "\n"
    "Prints the derivation of MODEL: Lagrangian, momenta, mass matrix,\n"
    "Euler-Lagrange terms, forces, constraints with their Chetaev\n"
    "coefficients and bias, energy (SPEC section 3 keys; keys not derived by\n"
    "this version are null).\n"
    "\n"
    "options:\n"
    "  --format F     text (default), latex (standalone document), sympy\n"
    "                 (Python script rebuilding each expression), json\n"
    "  --only LIST    comma-separated section keys, e.g. mass_matrix,energy\n"
    "  -h, --help     this help\n";

static const char *const usage_emit =
    "usage: chetaev emit MODEL [--form full|reduced|hamilton|all] [-o DIR]\n"
    "                          [--prefix NAME] [--driver]\n"
    "\n"
    "Writes DIR/PREFIX.h and DIR/PREFIX.c: C99 code of one form of the\n"
    "equations of motion, depending only on <math.h> (SPEC section 4).\n"
    "\n"
    "options:\n"
    "  --form F       full, reduced (default), hamilton, or all (every form\n"
    "                 the model has, with prefixes NAME_FORM)\n"
    "  -o DIR         output directory (default .; created if missing)\n"
    "  --prefix NAME  C prefix of every symbol (default MODEL_FORM)\n"
    "  --driver       also write DIR/main.c and the runtime sources so that\n"
    "                 'cc -O2 DIR/*.c -lm' builds a program printing the CSV\n"
    "                 of 'chetaev run' (same options)\n"
    "  -h, --help     this help\n";

static const char *const usage_run =
    "usage: chetaev run MODEL [--form full|reduced|hamilton] [--method M]\n"
    "                         [--dt H] [--t1 T] [--every K] [--set p=v]...\n"
    "                         [--init q=v]... [--project] [--compiler tcc|cc]\n"
    "                         [-o FILE.csv]\n"
    "\n"
    "Emits the form's C code, compiles it in process and integrates from\n"
    "t = 0 to T with a fixed step. CSV columns: t, the coordinates, their\n"
    "velocities NAME' (all of them), E, then the optional columns of the\n"
    "form. One row every K steps; the initial state is the first row. The\n"
    "number of steps is ceil(T/H); the last step ends exactly at T.\n"
    "\n"
    "options:\n"
    "  --form F       full, reduced (default) or hamilton\n"
    "  --method M     euler, midpoint or rk4 (default)\n"
    "  --dt H         step size (default 1e-3)\n"
    "  --t1 T         end time (default 1)\n"
    "  --every K      write every K-th step (default 1)\n"
    "  --set p=v      parameter value (repeatable)\n"
    "  --init q=v     initial coordinate (x=1) or velocity (x'=0) in every\n"
    "                 form; dependent velocities are recomputed from the\n"
    "                 constraints (with a warning), momenta follow; other\n"
    "                 state variables (y_x) are set as given (repeatable)\n"
    "  --project      project the state onto the constraints after each step\n"
    "                 (full form; a no-op for the others)\n"
    "  --compiler C   tcc (default, in memory) or cc (system compiler, dlopen)\n"
    "  -o FILE        write the CSV to FILE instead of stdout\n"
    "  -h, --help     this help\n"
    "\n"
    "exit codes: 0 ok, 1 invalid model, 2 usage error, 3 numerical failure\n"
    "(the message gives t and the step; the rows computed so far are kept)\n";

static int usage_error(const char *cmd, const char *fmt, const char *arg)
{
    fprintf(stderr, "chetaev%s%s: ", cmd ? " " : "", cmd ? cmd : "");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\nTry 'chetaev %s%s--help'.\n", cmd ? cmd : "",
            cmd ? " " : "");
    return EXIT_USAGE;
}

static int report(const ch_error *err)
{
    char buf[1024];
    ch_error_format(err, buf, sizeof buf);
    fprintf(stderr, "%s\n", buf);
    switch (err->code) {
    case CH_ERR_USAGE: return EXIT_USAGE;
    case CH_ERR_NUMERIC: return 3;
    default: return EXIT_MODEL;
    }
}

static int parse_format(const char *s, ch_format *f)
{
    static const struct { const char *name; ch_format f; } fmts[] = {
        {"text", CH_FORMAT_TEXT}, {"latex", CH_FORMAT_LATEX},
        {"sympy", CH_FORMAT_SYMPY}, {"json", CH_FORMAT_JSON}};
    for (size_t i = 0; i < sizeof fmts / sizeof fmts[0]; i++)
        if (strcmp(s, fmts[i].name) == 0) {
            *f = fmts[i].f;
            return 0;
        }
    return -1;
}

/* Splits "a,b,c" in place into at most max pointers. */
static size_t split_commas(char *s, const char **out, size_t max)
{
    size_t n = 0;
    for (char *tok = strtok(s, ","); tok && n < max; tok = strtok(NULL, ","))
        out[n++] = tok;
    return n;
}


/* "--opt VALUE" or "--opt=VALUE" at argv[*i]; NULL value when missing.
 * Returns 0 when argv[*i] is not opt. */
static int opt_value(int argc, char **argv, int *i, const char *opt,
                     const char **val)
{
    size_t n = strlen(opt);
    const char *a = argv[*i];
    if (strncmp(a, opt, n) != 0 || (a[n] != 0 && a[n] != '=')) return 0;
    *val = a[n] == '=' ? a + n + 1 : (*i + 1 < argc ? argv[++*i] : NULL);
    return 1;
}

/* Loads and derives MODEL; on failure reports and returns the exit code. */
static int load_derive(ch_ctx *ctx, const char *path, ch_model **m,
                       ch_derivation **d)
{
    ch_error err;
    ch_error_clear(&err);
    if (ch_model_load(ctx, path, m, &err) || ch_derive(ctx, *m, d, &err))
        return report(&err);
    return 0;
}

static int cmd_derive(int argc, char **argv)
{
    const char *path = NULL;
    ch_format fmt = CH_FORMAT_TEXT;
    char *only_arg = NULL;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i], *v = NULL;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            fputs(usage_derive, stdout);
            return 0;
        } else if (opt_value(argc, argv, &i, "--format", &v)) {
            if (!v) return usage_error("derive", "%s needs a value", "--format");
            if (parse_format(v, &fmt))
                return usage_error("derive",
                                   "unknown format '%s' (text, latex, sympy, json)", v);
        } else if (opt_value(argc, argv, &i, "--only", &v)) {
            if (!v) return usage_error("derive", "%s needs a value", "--only");
            only_arg = (char *)v; /* argv storage: split in place below */
        } else if (a[0] == '-' && a[1]) {
            return usage_error("derive", "unknown option '%s'", a);
        } else if (path) {
            return usage_error("derive", "unexpected argument '%s'", a);
        } else {
            path = a;
        }
    }
    if (!path) return usage_error("derive", "%s", "missing MODEL file");

    const char *only[64];
    size_t nonly = only_arg ? split_commas(only_arg, only, 64) : 0;
    if (only_arg && nonly == 0)
        return usage_error("derive", "%s", "--only needs at least one section");

    ch_ctx *ctx = ch_ctx_new();
    if (!ctx) {
        fputs("chetaev: out of memory\n", stderr);
        return EXIT_MODEL;
    }
    ch_error err;
    ch_error_clear(&err);
    ch_model *m = NULL;
    ch_derivation *d = NULL;
    ch_buf out;
    ch_buf_init(&out);
    int rc = load_derive(ctx, path, &m, &d);
    if (!rc && ch_derivation_write(&out, d, fmt, nonly, only, &err))
        rc = report(&err);
    else if (!rc && out.len && fwrite(out.s, 1, out.len, stdout) != out.len)
        rc = EXIT_MODEL;
    ch_buf_free(&out);
    ch_ctx_free(ctx);
    return rc;
}

/* MODEL_FORM, or NAME_FORM for --form all with --prefix NAME. */
static int default_prefix(const char *base, ch_form f, char *buf, size_t size)
{
    int n = snprintf(buf, size, "%s_%s", base, ch_form_name(f));
    return n < 0 || (size_t)n >= size || !ch_driver_prefix_ok(buf) ? -1 : 0;
}

static int write_text(const char *dir, const char *name, const char *ext,
                      const char *text, size_t len)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s%s", dir, name, ext);
    FILE *f = fopen(path, "w");
    int bad = !f;
    if (f) {
        bad |= fwrite(text, 1, len, f) != len;
        bad |= fclose(f) != 0;
    }
    if (bad) fprintf(stderr, "chetaev emit: cannot write %s: %s\n", path,
                     strerror(errno));
    return bad ? EXIT_MODEL : 0;
}

/* Emits one form into dir; returns an exit code, or -1 when the form does
 * not exist for the model and skip_missing is set. */
static int emit_form(ch_ctx *ctx, const ch_derivation *d, ch_form f,
                     const char *prefix, const char *dir, int skip_missing)
{
    ch_buf h, c;
    ch_buf_init(&h);
    ch_buf_init(&c);
    ch_error err;
    ch_error_clear(&err);
    int rc = 0;
    if (ch_emit_c(ctx, d, f, prefix, &h, &c, &err)) {
        if (skip_missing && err.code == CH_ERR_MODEL) {
            fprintf(stderr, "chetaev emit: skipping form %s: %s\n",
                    ch_form_name(f), err.msg);
            rc = -1;
        } else
            rc = report(&err);
    } else if (h.oom || c.oom) {
        fputs("chetaev: out of memory\n", stderr);
        rc = EXIT_MODEL;
    } else {
        rc = write_text(dir, prefix, ".h", h.s, h.len);
        if (!rc) rc = write_text(dir, prefix, ".c", c.s, c.len);
    }
    ch_buf_free(&h);
    ch_buf_free(&c);
    return rc;
}

static int emit_driver_files(const char *prefix, const char *dir)
{
    ch_buf main_c;
    ch_buf_init(&main_c);
    ch_emit_driver(prefix, &main_c);
    int rc = main_c.oom ? EXIT_MODEL
                        : write_text(dir, "main", ".c", main_c.s, main_c.len);
    ch_buf_free(&main_c);
    for (size_t i = 0; !rc; i++) {
        const char *name, *text;
        size_t len;
        ch_error err;
        ch_error_clear(&err);
        int r = ch_driver_runtime_file(i, &name, &text, &len, &err);
        if (r == 1) break;
        rc = r ? report(&err) : write_text(dir, name, "", text, len);
    }
    return rc;
}

static int cmd_emit(int argc, char **argv)
{
    const char *path = NULL, *form = "reduced", *dir = ".", *prefix = NULL;
    int driver = 0;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i], *v = NULL;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            fputs(usage_emit, stdout);
            return 0;
        } else if (!strcmp(a, "--driver")) {
            driver = 1;
        } else if (opt_value(argc, argv, &i, "--form", &v)
                   || opt_value(argc, argv, &i, "-o", &v)
                   || opt_value(argc, argv, &i, "--prefix", &v)) {
            if (!v) return usage_error("emit", "%s needs a value", a);
            if (a[1] == 'o') dir = v;
            else if (a[2] == 'f') form = v;
            else prefix = v;
        } else if (a[0] == '-' && a[1]) {
            return usage_error("emit", "unknown option '%s'", a);
        } else if (path) {
            return usage_error("emit", "unexpected argument '%s'", a);
        } else {
            path = a;
        }
    }
    if (!path) return usage_error("emit", "%s", "missing MODEL file");
    int all = !strcmp(form, "all");
    if (!all && ch_form_parse(form) < 0)
        return usage_error("emit", "unknown form '%s' (full, reduced, hamilton, all)", form);
    if (all && driver)
        return usage_error("emit", "%s", "--driver needs one form, not --form all");
    if (prefix && !ch_driver_prefix_ok(prefix))
        return usage_error("emit", "--prefix '%s' is not a C identifier", prefix);
    if (mkdir(dir, 0777) != 0 && errno != EEXIST) {
        fprintf(stderr, "chetaev emit: cannot create %s: %s\n", dir, strerror(errno));
        return EXIT_MODEL;
    }

    ch_ctx *ctx = ch_ctx_new();
    if (!ctx) {
        fputs("chetaev: out of memory\n", stderr);
        return EXIT_MODEL;
    }
    ch_model *m = NULL;
    ch_derivation *d = NULL;
    int rc = load_derive(ctx, path, &m, &d), written = 0;
    for (int f = 0; !rc && f < 3; f++) {
        if (!all && f != ch_form_parse(form)) continue;
        char pre[128];
        if (!all && prefix) snprintf(pre, sizeof pre, "%s", prefix);
        else if (default_prefix(all && prefix ? prefix : m->name, (ch_form)f,
                                pre, sizeof pre)) {
            rc = usage_error("emit", "cannot form a C prefix from '%s': use --prefix",
                             m->name);
            break;
        }
        int r = emit_form(ctx, d, (ch_form)f, pre, dir, all);
        if (r > 0) rc = r;
        if (r == 0) written++;
        if (!rc && driver) rc = emit_driver_files(pre, dir);
    }
    if (!rc && all && written == 0) {
        fputs("chetaev emit: the model has no form to emit\n", stderr);
        rc = EXIT_MODEL;
    }
    ch_ctx_free(ctx);
    return rc;
}

/* Compiles the form and runs the simulation with the runtime's options. */
static int run_compiled(ch_ctx *ctx, const ch_derivation *d, ch_form form,
                        ch_compiler cc, int argc, char **argv)
{
    ch_error err;
    ch_error_clear(&err);
    ch_compiled *c = NULL;
    int rc = ch_compile_form(ctx, d, form, NULL, cc, &c, &err)
                 ? report(&err)
                 : chrt_main(&c->sys, argc, argv);
    ch_compiled_free(c);
    return rc;
}

static int cmd_run(int argc, char **argv)
{
    const char *path = NULL, *form = "reduced", *compiler = "tcc";
    /* argv[0] of the runtime, then the options it parses itself. */
    char **rest = malloc(((size_t)argc + 1) * sizeof *rest);
    int nrest = 0, rc = 0;
    if (!rest) {
        fputs("chetaev: out of memory\n", stderr);
        return EXIT_MODEL;
    }
    rest[nrest++] = "chetaev run";
    for (int i = 0; i < argc && !rc; i++) {
        const char *a = argv[i], *v = NULL;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            fputs(usage_run, stdout);
            free(rest);
            return 0;
        } else if (opt_value(argc, argv, &i, "--form", &v)
                   || opt_value(argc, argv, &i, "--compiler", &v)) {
            if (!v) rc = usage_error("run", "%s needs a value", a);
            else if (a[2] == 'f') form = v;
            else compiler = v;
        } else if (a[0] == '-' && a[1]) {
            rest[nrest++] = argv[i];
            if (chrt_option_takes_value(a) && i + 1 < argc) rest[nrest++] = argv[++i];
        } else if (path) {
            rc = usage_error("run", "unexpected argument '%s'", a);
        } else {
            path = a;
        }
    }
    int f = ch_form_parse(form);
    ch_compiler cc = !strcmp(compiler, "cc") ? CH_COMPILER_CC : CH_COMPILER_TCC;
    char msg[600];
    chrt_args args;
    if (rc) {
    } else if (!path) {
        rc = usage_error("run", "%s", "missing MODEL file");
    } else if (f < 0) {
        rc = usage_error("run", "unknown form '%s' (full, reduced, hamilton)", form);
    } else if (strcmp(compiler, "tcc") && strcmp(compiler, "cc")) {
        rc = usage_error("run", "unknown compiler '%s' (tcc, cc)", compiler);
    } else if (chrt_parse_args(NULL, nrest - 1, rest + 1, &args, NULL, NULL, msg,
                               sizeof msg)) {
        /* Syntax errors before the (slow) derivation. */
        rc = usage_error("run", "%s", msg);
    }
    if (rc) {
        free(rest);
        return rc;
    }
    ch_ctx *ctx = ch_ctx_new();
    if (!ctx) {
        fputs("chetaev: out of memory\n", stderr);
        free(rest);
        return EXIT_MODEL;
    }
    ch_model *m = NULL;
    ch_derivation *d = NULL;
    rc = load_derive(ctx, path, &m, &d);
    if (!rc) rc = run_compiled(ctx, d, (ch_form)f, cc, nrest, rest);
    ch_ctx_free(ctx);
    free(rest);
    return rc;
}

static const char *const usage_check =
    "usage: chetaev check MODEL [--format text|json] [--loop N]\n"
    "\n"
    "Audits which quantities MODEL conserves: the energy E, the frame energy\n"
    "T_xi (affine constraints), the momentum of every coordinate L does not\n"
    "depend on, p.Y for every declared field and every declared integral,\n"
    "each conserved / not conserved / unknown, decided symbolically or at\n"
    "random points of the constraint manifold, with the evidence.\n"
    "\n"
    "options:\n"
    "  --format F     text (default) or json (SPEC section 2)\n"
    "  --loop N       also transport a loop of N >= 8 states with the\n"
    "                 hamilton form (rk4, dt 1e-3, t1 1) and report the\n"
    "                 Poincare-Cartan integral I1 at the start and the end\n"
    "  -h, --help     this help\n";

/* Audits MODEL and, with --loop, measures I1; writes the report. */
static int check_model(const char *path, int json, long loop_n)
{
    ch_ctx *ctx = ch_ctx_new();
    if (!ctx) {
        fputs("chetaev: out of memory\n", stderr);
        return EXIT_MODEL;
    }
    ch_model *m = NULL;
    ch_derivation *d = NULL;
    ch_audit a;
    ch_loop_result loop;
    ch_error err;
    ch_error_clear(&err);
    int rc = load_derive(ctx, path, &m, &d);
    if (!rc && ch_audit_run(ctx, d, &a, &err)) rc = report(&err);
    if (!rc && loop_n > 0 && ch_loop_run(ctx, d, (size_t)loop_n, NULL, &loop, &err))
        rc = report(&err);
    if (!rc) {
        ch_buf out;
        ch_buf_init(&out);
        if (json) ch_audit_write_json(&out, &a, loop_n > 0 ? &loop : NULL);
        else ch_audit_write_text(&out, &a, loop_n > 0 ? &loop : NULL);
        if (out.oom || fwrite(out.s, 1, out.len, stdout) != out.len) rc = EXIT_MODEL;
        ch_buf_free(&out);
    }
    ch_ctx_free(ctx);
    return rc;
}

static int cmd_check(int argc, char **argv)
{
    const char *path = NULL, *fmt = "text", *loop = NULL;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i], *v = NULL;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            fputs(usage_check, stdout);
            return 0;
        } else if (opt_value(argc, argv, &i, "--format", &v)) {
            if (!v) return usage_error("check", "%s needs a value", "--format");
            fmt = v;
        } else if (opt_value(argc, argv, &i, "--loop", &v)) {
            if (!v) return usage_error("check", "%s needs a value", "--loop");
            loop = v;
        } else if (a[0] == '-' && a[1]) {
            return usage_error("check", "unknown option '%s'", a);
        } else if (path) {
            return usage_error("check", "unexpected argument '%s'", a);
        } else {
            path = a;
        }
    }
    if (strcmp(fmt, "text") && strcmp(fmt, "json"))
        return usage_error("check", "unknown format '%s' (text, json)", fmt);
    long n = 0;
    if (loop) {
        char *end;
        errno = 0;
        n = strtol(loop, &end, 10);
        if (errno || end == loop || *end || n < CH_LOOP_MIN_POINTS
            || n > CH_LOOP_MAX_POINTS)
            return usage_error("check", "--loop needs a number of points "
                               "from 8 to 100000, not '%s'", loop);
    }
    if (!path) return usage_error("check", "%s", "missing MODEL file");
    return check_model(path, !strcmp(fmt, "json"), n);
}

static int not_available(const char *cmd)
{
    fprintf(stderr,
            "chetaev %s: not available in this version (%s); see 'chetaev --help'\n",
            cmd, CH_VERSION);
    return EXIT_USAGE;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fputs(usage_main, stderr);
        return EXIT_USAGE;
    }
    const char *cmd = argv[1];
    if (!strcmp(cmd, "-h") || !strcmp(cmd, "--help")) {
        fputs(usage_main, stdout);
        return 0;
    }
    if (!strcmp(cmd, "--version")) {
        printf("chetaev %s\n", CH_VERSION);
        return 0;
    }
    if (!strcmp(cmd, "derive")) return cmd_derive(argc - 2, argv + 2);
    if (!strcmp(cmd, "emit")) return cmd_emit(argc - 2, argv + 2);
    if (!strcmp(cmd, "run")) return cmd_run(argc - 2, argv + 2);
    if (!strcmp(cmd, "check")) return cmd_check(argc - 2, argv + 2);
    if (!strcmp(cmd, "repl")) return not_available(cmd);
    return usage_error(NULL, "unknown command '%s'", cmd);
}
