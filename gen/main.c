/* main.c — the chetaev command line (SPEC §2): a thin layer that parses
 * options, calls the library and maps its errors to exit codes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "derive.h"
#include "version.h"
#include "model.h"


enum { EXIT_MODEL = 1, EXIT_USAGE = 2 };

static const char *const usage_main =
    "usage: chetaev COMMAND MODEL [OPTIONS]\n"
    "\n"
    "Derives the equations of motion of a constrained Lagrangian system from\n"
    "a model file (*.nh) and prints them or emits C code.\n"
    "\n"
    "commands:\n"
    "  derive MODEL   print the derived quantities (text, latex, sympy, json)\n"
    "  emit MODEL     write C right-hand sides (not available in this version)\n"
    "  run MODEL      integrate and print CSV (not available in this version)\n"
    "  check MODEL    audit conserved quantities (not available in this version)\n"
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

static int cmd_derive(int argc, char **argv)
{
    const char *path = NULL;
    ch_format fmt = CH_FORMAT_TEXT;
    char *only_arg = NULL;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            fputs(usage_derive, stdout);
            return 0;
        } else if (!strcmp(a, "--format") || !strncmp(a, "--format=", 9)) {
            const char *v = a[8] == '=' ? a + 9 : (i + 1 < argc ? argv[++i] : NULL);
            if (!v) return usage_error("derive", "%s needs a value", "--format");
            if (parse_format(v, &fmt))
                return usage_error("derive",
                                   "unknown format '%s' (text, latex, sympy, json)", v);
        } else if (!strcmp(a, "--only") || !strncmp(a, "--only=", 7)) {
            char *v = a[6] == '=' ? argv[i] + 7 : (i + 1 < argc ? argv[++i] : NULL);
            if (!v) return usage_error("derive", "%s needs a value", "--only");
            only_arg = v;
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
    int rc = 0;
    if (ch_model_load(ctx, path, &m, &err) || ch_derive(ctx, m, &d, &err)
        || ch_derivation_write(&out, d, fmt, nonly, only, &err))
        rc = report(&err);
    else if (out.len && fwrite(out.s, 1, out.len, stdout) != out.len)
        rc = EXIT_MODEL;
    ch_buf_free(&out);
    ch_ctx_free(ctx);
    return rc;
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
    if (!strcmp(cmd, "emit") || !strcmp(cmd, "run") || !strcmp(cmd, "check")
        || !strcmp(cmd, "repl"))
        return not_available(cmd);
    return usage_error(NULL, "unknown command '%s'", cmd);
}
