/* main.c — the chetaev command line (SPEC §2): a thin layer that parses
 * options, calls the library and maps its errors to exit codes. */
#define _DEFAULT_SOURCE /* sbrk, madvise */
#include <ctype.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#if defined(__GLIBC__) && defined(__linux__)
#include <malloc.h>
#include <sys/mman.h>
#endif

#include "app/chetaev.h"
#include "app/repl.h"


/* EXIT_OUTPUT: an output (stdout, a file of -o) that cannot be written
 * or closed; never a silent exit 0 (issue 45). */
enum { EXIT_MODEL = 1, EXIT_USAGE = 2, EXIT_OUTPUT = 2 };

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
    "  repl MODEL     interactive session: set parameters, run, plot, reload\n"
    "\n"
    "options:\n"
    "  -h, --help     this help; 'chetaev COMMAND --help' for a command\n"
    "  --version      print the version\n"
    "  --max-nodes N  (derive, emit, run, check, repl) stop with an error naming the\n"
    "                 statement when the derivation needs more than N\n"
    "                 expression nodes (default 8000000, 0: no limit)\n";

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
    "                          [--prefix NAME] [--driver] [--force]\n"
    "\n"
    "Writes DIR/PREFIX.h and DIR/PREFIX.c: C99 code of one form of the\n"
    "equations of motion, depending only on <math.h> (SPEC section 4).\n"
    "\n"
    "options:\n"
    "  --form F       full, reduced (default), hamilton, or all (every form\n"
    "                 the model has, with prefixes NAME_FORM)\n"
    "  -o DIR         output directory (default .; created with its parents\n"
    "                 if missing)\n"
    "  --prefix NAME  C prefix of every symbol (default MODEL_FORM)\n"
    "  --driver       also write DIR/main.c and the runtime sources so that\n"
    "                 'cc -O2 DIR/*.c -lm' builds a program printing the CSV\n"
    "                 of 'chetaev run' (same options)\n"
    "  --force        replace files in DIR that chetaev did not write (and\n"
    "                 symbolic links, not their targets)\n"
    "  -h, --help     this help\n"
    "\n"
    "Every file is built in memory first and written whole (a temporary file\n"
    "renamed): a failure writes nothing, not even DIR.\n";

static const char *const usage_run =
    "usage: chetaev run MODEL [--form full|reduced|hamilton] [--method M]\n"
    "                         [--rtol R] [--atol A] [--dt H] [--dt-max H]\n"
    "                         [--dt-out H] [--t1 T] [--every K] [--max-steps N]\n"
    "                         [--stats] [--set p=v]... [--init q=v]... [--project]\n"
    "                         [--chart-min Q] [--no-rechart] [--compiler tcc|cc]\n"
    "                         [-o FILE.csv] [--plot FILE.svg\n"
    "                         [--plot-vars a,b,...] [--xy x,y]]\n"
    "\n"
    "Emits the form's C code, compiles it in process and integrates from\n"
    "t = 0 to T, by default with error control (dop853). CSV columns: t, the\n"
    "coordinates, their velocities NAME' (all of them), E, then the optional\n"
    "columns of the form, and gN, the position residual of each holonomic\n"
    "constraint N. Rows: the initial state, one per accepted step (or every\n"
    "K-th, or on the --dt-out grid), the last one at T exactly. Fixed\n"
    "methods take ceil(T/H) steps, the last one ending exactly at T.\n"
    "\n"
    "options:\n"
    "  --form F       full, reduced (default) or hamilton\n"
    "  --method M     dop853 (default: adaptive, 8th order), rk45 (adaptive,\n"
    "                 5th order; alias dopri5), cvode (SUNDIALS BDF, for stiff\n"
    "                 models), or fixed euler, midpoint, rk4\n"
    "  --rtol R       relative tolerance of each adaptive step (default 1e-10)\n"
    "  --atol A       absolute tolerance of each adaptive step (default 1e-12)\n"
    "  --dt H         adaptive: the first step (default chosen); fixed: the\n"
    "                 step size (default 1e-3)\n"
    "  --dt-max H     adaptive: the largest step (default none)\n"
    "  --dt-out H     adaptive: rows at t = k*H by dense output instead of one\n"
    "                 per step (and at T)\n"
    "  --t1 T         end time (default 1)\n"
    "  --every K      write every K-th (accepted) step (default 1); the row at\n"
    "                 T is always written\n"
    "  --max-steps N  adaptive: fail after N accepted steps; fixed: refuse more\n"
    "                 than N steps (default 1e7)\n"
    "  --stats        print the steps accepted and rejected, rhs calls and\n"
    "                 re-charts on stderr\n"
    "  --set p=v      parameter value (repeatable)\n"
    "  --init q=v     initial coordinate (x=1) or velocity (x'=0) in every\n"
    "                 form; coordinates are moved onto holonomic constraints\n"
    "                 and dependent velocities recomputed from the\n"
    "                 constraints (with a warning), momenta follow; other\n"
    "                 state variables (y_x) are set as given (repeatable)\n"
    "  --project      project the state onto the constraints after each step:\n"
    "                 coordinates onto the holonomic ones (every form), then\n"
    "                 velocities (full form)\n"
    "  --chart-min Q  the reduced and hamilton forms are charts: where their\n"
    "                 quality (in [0, 1], see README) falls below Q (default\n"
    "                 0.01, at most 0.25) the run switches to better dependent\n"
    "                 velocities (a note on stderr) or stops with exit 3\n"
    "  --no-rechart   stop with exit 3 instead of switching charts\n"
    "  --compiler C   tcc (default, in memory) or cc (system compiler, dlopen)\n"
    "  -o FILE        write the CSV to FILE instead of stdout\n"
    "  --plot FILE    also write an SVG plot of the run (the CSV is written as\n"
    "                 usual); by default the coordinates against t\n"
    "  --plot-vars L  plot the comma-separated CSV columns L against t\n"
    "                 instead (at most 16; needs --plot)\n"
    "  --xy X,Y       plot column Y against column X instead, one scale for\n"
    "                 both (--xy x,y: a path in the plane; needs --plot)\n"
    "  -h, --help     this help\n"
    "\n"
    "exit codes: 0 ok, 1 invalid model, 2 usage error, 3 numerical failure\n"
    "(the message gives t, the step and the reason; the rows computed so far\n"
    "are kept)\n";

static int usage_error(const char *cmd, const char *fmt, const char *arg)
{
    fprintf(stderr, "chetaev%s%s: ", cmd ? " " : "", cmd ? cmd : "");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\nTry 'chetaev %s%s--help'.\n", cmd ? cmd : "",
            cmd ? " " : "");
    return EXIT_USAGE;
}

/* The argument that is neither a known option nor its value: the model
 * file, once. Returns 0, or the usage error's exit code. */
/* The options of each command (the runtime's too for run), for the
 * suggestion of unknown_option. */
static const struct {
    const char *cmd;
    const char *const opts[10];
} options[] = {
    {"derive", {"--format", "--only", "--max-nodes", "--help"}},
    {"emit", {"--form", "--prefix", "--driver", "--force", "-o", "--max-nodes", "--help"}},
    {"run", {"--form", "--compiler", "--plot", "--plot-vars", "--xy", "--no-rechart",
             "--max-nodes"}},
    {"check", {"--format", "--loop", "--plot", "--time-limit", "--max-nodes", "--help"}},
    {"repl", {"--form", "--compiler", "--max-nodes", "--help"}},
};

/* Edit distance of a and b (each at most 63 characters compared). */
static size_t distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b), d[64], prev;
    if (la > 63) la = 63;
    if (lb > 63) lb = 63;
    for (size_t j = 0; j <= lb; j++) d[j] = j;
    for (size_t i = 1; i <= la; i++) {
        prev = d[0], d[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t sub = prev + (a[i - 1] != b[j - 1]), best = d[j] + 1;
            if (d[j - 1] + 1 < best) best = d[j - 1] + 1;
            if (sub < best) best = sub;
            prev = d[j], d[j] = best;
        }
    }
    return d[lb];
}

/* "unknown option 'OPT'", with the closest option of cmd when one is
 * within two edits ("--metod": did you mean --method?). */
static int unknown_option(const char *cmd, const char *opt)
{
    const char *best = NULL;
    size_t bd = 3, len = strcspn(opt, "=");
    char name[64];
    snprintf(name, sizeof name, "%.*s", (int)(len < 63 ? len : 63), opt);
    for (size_t c = 0; c < sizeof options / sizeof options[0]; c++) {
        if (strcmp(options[c].cmd, cmd)) continue;
        for (size_t i = 0; i < 10 && options[c].opts[i]; i++) {
            size_t d = distance(name, options[c].opts[i]);
            if (d < bd) bd = d, best = options[c].opts[i];
        }
    }
    for (int i = 0; !strcmp(cmd, "run") && ch_run_option_name(i); i++) {
        size_t d = distance(name, ch_run_option_name(i));
        if (d < bd) bd = d, best = ch_run_option_name(i);
    }
    fprintf(stderr, "chetaev %s: unknown option '%s'", cmd, opt);
    if (best) fprintf(stderr, " (did you mean %s?)", best);
    fprintf(stderr, "\nTry 'chetaev %s --help'.\n", cmd);
    return EXIT_USAGE;
}

static int model_argument(const char *cmd, const char *a, const char **path)
{
    if (a[0] == '-' && a[1]) return unknown_option(cmd, a);
    if (*path) return usage_error(cmd, "unexpected argument '%s'", a);
    *path = a;
    return 0;
}

/* report() for the library API's errors. */
static int report_api(const ch_err *err)
{
    char buf[1024];
    ch_err_format(err, buf, sizeof buf);
    fprintf(stderr, "%s\n", buf);
    switch (err->code) {
    case CH_E_USAGE: return EXIT_USAGE;
    case CH_E_NUMERIC: return 3;
    default: return EXIT_MODEL;
    }
}

/* 1 when s is one of the n names. */
static int one_of(const char *s, const char *const *names, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!strcmp(s, names[i])) return 1;
    return 0;
}

static const char *const forms[] = {"full", "reduced", "hamilton"};

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

/* Loads and derives MODEL under a node budget (0: none), its warnings on
 * stderr; on failure reports and returns the exit code. */
static int load(const char *path, size_t max_nodes, ch_problem **pb)
{
    ch_err err;
    if (!(*pb = ch_problem_load_limited(path, max_nodes, &err))) {
        size_t n = strlen(err.msg), s = strlen(" statement)");
        /* the node budget ("... (deriving from the 'S' statement)"): the
         * option that raises it */
        if (err.code == CH_E_LIMIT && n > s && n + 20 < sizeof err.msg
            && !strcmp(err.msg + n - s, " statement)"))
            memcpy(err.msg + n - 1, "; see --max-nodes)", 19);
        return report_api(&err);
    }
    /* what was made consistent in the model's initial state (SPEC §1) */
    for (size_t i = 0; i < ch_problem_warning_count(*pb); i++)
        fprintf(stderr, "%s\n", ch_problem_warning(*pb, i));
    return 0;
}

static int cmd_derive(int argc, char **argv, size_t max_nodes)
{
    static const char *const formats[] = {"text", "latex", "sympy", "json"};
    const char *path = NULL, *fmt = "text", *only = NULL;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i], *v = NULL;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            fputs(usage_derive, stdout);
            return 0;
        } else if (opt_value(argc, argv, &i, "--format", &v)) {
            if (!v) return usage_error("derive", "%s needs a value", "--format");
            if (!one_of(v, formats, 4))
                return usage_error("derive",
                                   "unknown format '%s' (text, latex, sympy, json)", v);
            fmt = v;
        } else if (opt_value(argc, argv, &i, "--only", &v)) {
            if (!v) return usage_error("derive", "%s needs a value", "--only");
            only = v;
        } else {
            int rc = model_argument("derive", a, &path);
            if (rc) return rc;
        }
    }
    if (!path) return usage_error("derive", "%s", "missing MODEL file");
    if (only && !only[strspn(only, ",")])
        return usage_error("derive", "%s", "--only needs at least one section");
    ch_problem *pb = NULL;
    ch_err err;
    int rc = load(path, max_nodes, &pb);
    if (!rc && ch_problem_write_derivation(pb, fmt, only, stdout, &err)) {
        rc = report_api(&err);
        if (err.code == CH_E_IO) rc = EXIT_OUTPUT;
    }
    ch_problem_free(pb);
    return rc;
}

/* MODEL_FORM, or NAME_FORM for --form all with --prefix NAME. */
static int default_prefix(const char *base, const char *form, char *buf, size_t size)
{
    int n = snprintf(buf, size, "%s_%s", base, form);
    return n < 0 || (size_t)n >= size || !ch_prefix_valid(buf) ? -1 : 0;
}

/* The files of one `emit`, built in memory before any is written. */
typedef struct {
    char name[160];
    char *text;
    size_t len;
} out_file;

typedef struct {
    out_file *f;
    size_t n, cap;
} out_files;

static int files_add(out_files *fs, const char *name, const char *ext, const char *text,
                     size_t len)
{
    if (fs->n == fs->cap) {
        size_t cap = fs->cap ? 2 * fs->cap : 8;
        out_file *f = realloc(fs->f, cap * sizeof *f);
        if (!f) return -1;
        fs->f = f, fs->cap = cap;
    }
    out_file *f = &fs->f[fs->n];
    snprintf(f->name, sizeof f->name, "%s%s", name, ext);
    if (!(f->text = malloc(len + 1))) return -1;
    memcpy(f->text, text, len);
    f->text[len] = 0;
    f->len = len;
    fs->n++;
    return 0;
}

static void files_free(out_files *fs)
{
    for (size_t i = 0; i < fs->n; i++) free(fs->f[i].text);
    free(fs->f);
}

/* 1 when the file at path was written by chetaev (or is absent): an
 * emitted file's first line says so, a runtime source's first line is the
 * embedded one (text's). */
static int ours(const char *path, const char *text)
{
    FILE *f = fopen(path, "r");
    if (!f) return errno == ENOENT;
    char line[256];
    int yes = fgets(line, sizeof line, f) != NULL;
    fclose(f);
    if (!yes) return 0;
    size_t n = strcspn(line, "\n");
    return strstr(line, "generated by chetaev") != NULL
           || (n <= strlen(text) && strncmp(line, text, n) == 0
               && (text[n] == '\n' || text[n] == 0));
}

/* Checks every target in dir before anything is written: a symbolic
 * link or a file chetaev did not write is refused without force, a
 * directory always. Returns 0 or an exit code. */
static int files_check(const out_files *fs, const char *dir, int force)
{
    char path[4096];
    for (size_t i = 0; i < fs->n; i++) {
        struct stat st;
        snprintf(path, sizeof path, "%s/%s", dir, fs->f[i].name);
        if (lstat(path, &st) != 0) continue;
        const char *why = S_ISDIR(st.st_mode)   ? "is a directory"
                          : S_ISLNK(st.st_mode) ? (force ? NULL : "is a symbolic link")
                          : !S_ISREG(st.st_mode) ? "is not a regular file"
                          : force || ours(path, fs->f[i].text) ? NULL
                                                               : "was not written by chetaev";
        if (why) {
            fprintf(stderr, "chetaev emit: %s %s: not replaced%s\n", path, why,
                    S_ISDIR(st.st_mode) || (!S_ISREG(st.st_mode) && !S_ISLNK(st.st_mode))
                        ? "" : " (--force replaces it)");
            return EXIT_OUTPUT;
        }
    }
    return 0;
}

/* Writes every file as a temporary file renamed over the target (a
 * symbolic link is replaced, never followed); on a failure the files this
 * call created are removed again. Returns 0 or an exit code. */
static int files_write(const out_files *fs, const char *dir)
{
    char path[4096], tmp[4096];
    mode_t mask = umask(0); /* (read, then set back: mkstemp makes 0600) */
    umask(mask);
    unsigned char *made = calloc(fs->n + 1, 1);
    int rc = made ? 0 : EXIT_MODEL;
    size_t i;
    for (i = 0; !rc && i < fs->n; i++) {
        struct stat st;
        snprintf(path, sizeof path, "%s/%s", dir, fs->f[i].name);
        snprintf(tmp, sizeof tmp, "%s/.%s.XXXXXX", dir, fs->f[i].name);
        made[i] = lstat(path, &st) != 0;
        /* a replaced file keeps its mode; a new one gets the umask's */
        mode_t mode = !made[i] && S_ISREG(st.st_mode) ? st.st_mode & 07777 : 0666 & ~mask;
        int fd = mkstemp(tmp);
        FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
        int bad = !f;
        if (!f && fd >= 0) close(fd);
        if (f) {
            bad |= fwrite(fs->f[i].text, 1, fs->f[i].len, f) != fs->f[i].len;
            bad |= fchmod(fd, mode) != 0;
            bad |= fclose(f) != 0;
        }
        if (!bad) bad = rename(tmp, path) != 0;
        if (bad) {
            fprintf(stderr, "chetaev emit: cannot write %s: %s\n", path, strerror(errno));
            if (fd >= 0) remove(tmp);
            made[i] = 0;
            rc = EXIT_OUTPUT;
        }
    }
    for (size_t j = 0; rc && j < i; j++)
        if (made[j]) {
            snprintf(path, sizeof path, "%s/%s", dir, fs->f[j].name);
            remove(path);
        }
    free(made);
    return rc;
}

/* mkdir -p: dir and its missing parents. 0, or -1 with errno set. */
static int make_dirs(const char *dir)
{
    char path[4096];
    size_t len = strlen(dir);
    if (len == 0 || len >= sizeof path) {
        errno = len ? ENAMETOOLONG : ENOENT;
        return -1;
    }
    memcpy(path, dir, len + 1);
    for (size_t i = 1; i <= len; i++) {
        if (path[i] != '/' && path[i] != 0) continue;
        char c = path[i];
        path[i] = 0;
        if (mkdir(path, 0777) != 0 && errno != EEXIST) return -1;
        path[i] = c;
    }
    return 0;
}

/* Emits one form into fs; returns an exit code, or -1 when the form does
 * not exist for the model and skip_missing is set. */
static int emit_form(ch_problem *pb, const char *form, const char *prefix, out_files *fs,
                     int skip_missing)
{
    char *h = NULL, *c = NULL;
    size_t hl = 0, cl = 0;
    ch_err err;
    int rc = 0;
    if (ch_problem_emit(pb, form, prefix, &h, &hl, &c, &cl, &err)) {
        if (skip_missing && err.code == CH_E_MODEL) {
            fprintf(stderr, "chetaev emit: skipping form %s: %s\n", form, err.msg);
            rc = -1;
        } else
            rc = report_api(&err);
    } else if (files_add(fs, prefix, ".h", h, hl) || files_add(fs, prefix, ".c", c, cl)) {
        fputs("chetaev: out of memory\n", stderr);
        rc = EXIT_MODEL;
    }
    free(h);
    free(c);
    return rc;
}

/* The driver's main.c and the runtime sources into fs. */
static int emit_driver_files(const char *prefix, out_files *fs)
{
    for (size_t i = 0;; i++) {
        const char *name;
        char *text = NULL;
        size_t len;
        ch_err err;
        int r = ch_driver_file(prefix, i, &name, &text, &len, &err);
        if (r == 1) return 0;
        if (r) return report_api(&err);
        r = files_add(fs, name, "", text, len);
        free(text);
        if (r) {
            fputs("chetaev: out of memory\n", stderr);
            return EXIT_MODEL;
        }
    }
}

static int cmd_emit(int argc, char **argv, size_t max_nodes)
{
    const char *path = NULL, *form = "reduced", *dir = ".", *prefix = NULL;
    int driver = 0, force = 0;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i], *v = NULL;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            fputs(usage_emit, stdout);
            return 0;
        } else if (!strcmp(a, "--driver")) {
            driver = 1;
        } else if (!strcmp(a, "--force")) {
            force = 1;
        } else if (opt_value(argc, argv, &i, "--form", &v)
                   || opt_value(argc, argv, &i, "-o", &v)
                   || opt_value(argc, argv, &i, "--prefix", &v)) {
            if (!v) return usage_error("emit", "%s needs a value", a);
            if (a[1] == 'o') dir = v;
            else if (a[2] == 'f') form = v;
            else prefix = v;
        } else {
            int rc = model_argument("emit", a, &path);
            if (rc) return rc;
        }
    }
    if (!path) return usage_error("emit", "%s", "missing MODEL file");
    int all = !strcmp(form, "all");
    if (!all && !one_of(form, forms, 3))
        return usage_error("emit", "unknown form '%s' (full, reduced, hamilton, all)", form);
    if (all && driver)
        return usage_error("emit", "%s", "--driver needs one form, not --form all");
    if (prefix && !ch_prefix_valid(prefix))
        return usage_error("emit", "--prefix '%s' is not a C identifier", prefix);
    /* the driver's own files */
    if (prefix && driver
        && (!strcmp(prefix, "main") || !strcmp(prefix, "integrate") || !strcmp(prefix, "simulate")))
        return usage_error("emit", "--prefix '%s' is the name of a file of the driver program "
                           "(main, integrate, simulate)", prefix);

    ch_problem *pb = NULL;
    int rc = load(path, max_nodes, &pb), written = 0;
    out_files fs = {NULL, 0, 0};
    for (int f = 0; !rc && f < 3; f++) {
        if (!all && strcmp(form, forms[f])) continue;
        char pre[128];
        if (!all && prefix) snprintf(pre, sizeof pre, "%s", prefix);
        else if (default_prefix(all && prefix ? prefix : ch_problem_name(pb), forms[f], pre,
                                sizeof pre)) {
            rc = usage_error("emit", "cannot form a C prefix from '%s': use --prefix",
                             ch_problem_name(pb));
            break;
        }
        int r = emit_form(pb, forms[f], pre, &fs, all);
        if (r > 0) rc = r;
        if (r == 0) written++;
        if (!rc && driver) rc = emit_driver_files(pre, &fs);
    }
    if (!rc && all && written == 0) {
        fputs("chetaev emit: the model has no form to emit\n", stderr);
        rc = EXIT_MODEL;
    }
    /* Only now, everything built: the folder and the files. */
    if (!rc && make_dirs(dir) != 0) {
        fprintf(stderr, "chetaev emit: cannot create %s: %s\n", dir, strerror(errno));
        rc = EXIT_OUTPUT;
    }
    if (!rc) rc = files_check(&fs, dir, force);
    if (!rc) rc = files_write(&fs, dir);
    files_free(&fs);
    ch_problem_free(pb);
    return rc;
}

/* text to path (NULL: stdout); 0, or EXIT_OUTPUT with the message. */
static int write_bytes(const char *cmd, const char *path, const char *text, size_t len)
{
    FILE *f = path ? fopen(path, "w") : stdout;
    int bad = !f;
    if (f) {
        bad |= len && fwrite(text, 1, len, f) != len;
        bad |= f == stdout ? fflush(f) != 0 : fclose(f) != 0;
    }
    if (bad) fprintf(stderr, "chetaev %s: cannot write %s: %s\n", cmd,
                     path ? path : "stdout", strerror(errno));
    return bad ? EXIT_OUTPUT : 0;
}

static int cmd_run(int argc, char **argv, size_t max_nodes)
{
    const char *path = NULL, *form = "reduced", *compiler = "tcc", *plot = NULL;
    char *vars = NULL, *xy = NULL; /* argv storage, split in place */
    /* argv[0] of the runtime, then the options it parses itself. */
    char **rest = malloc(((size_t)argc + 1) * sizeof *rest);
    int nrest = 0, rc = 0, rechart = 1;
    if (!rest) {
        fputs("chetaev: out of memory\n", stderr);
        return EXIT_MODEL;
    }
    rest[nrest++] = "chetaev run";
    ch_err err;
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
        } else if (opt_value(argc, argv, &i, "--plot", &v)
                   || opt_value(argc, argv, &i, "--plot-vars", &v)
                   || opt_value(argc, argv, &i, "--xy", &v)) {
            if (!v) rc = usage_error("run", "%s needs a value", a);
            else if (a[2] == 'x') xy = (char *)v;
            else if (!strncmp(a, "--plot-vars", 11)) vars = (char *)v;
            else plot = v;
        } else if (!strcmp(a, "--no-rechart")) {
            rechart = 0;
        } else if (a[0] == '-' && a[1] && !ch_run_option_takes_value(a)
                   && ch_run_args_check(1, argv + i, &err) && strstr(err.msg, "unknown option")) {
            /* (named here: its value would read as a second model file) */
            rc = unknown_option("run", a);
        } else if (a[0] == '-' && a[1]) {
            rest[nrest++] = argv[i];
            if (ch_run_option_takes_value(a) && i + 1 < argc) rest[nrest++] = argv[++i];
        } else if (path) {
            rc = usage_error("run", "unexpected argument '%s'", a);
        } else {
            path = a;
        }
    }
    const char *cols[CH_PLOT_SERIES_MAX + 1];
    size_t ncols = xy ? split_commas(xy, cols, CH_PLOT_SERIES_MAX + 1)
                      : vars ? split_commas(vars, cols, CH_PLOT_SERIES_MAX + 1) : 0;
    if (rc) {
    } else if (!path) {
        rc = usage_error("run", "%s", "missing MODEL file");
    } else if (!one_of(form, forms, 3)) {
        rc = usage_error("run", "unknown form '%s' (full, reduced, hamilton)", form);
    } else if (strcmp(compiler, "tcc") && strcmp(compiler, "cc")) {
        rc = usage_error("run", "unknown compiler '%s' (tcc, cc)", compiler);
    } else if ((vars || xy) && !plot) {
        rc = usage_error("run", "%s", "--plot-vars and --xy need --plot FILE.svg");
    } else if (vars && xy) {
        rc = usage_error("run", "%s", "--plot-vars and --xy exclude each other");
    } else if (vars && ncols == 0) {
        rc = usage_error("run", "%s", "--plot-vars needs at least one column");
    } else if (xy && ncols != 2) {
        rc = usage_error("run", "%s", "--xy needs two columns X,Y");
    } else if (ncols > CH_PLOT_SERIES_MAX) {
        rc = usage_error("run", "%s", "--plot-vars takes at most 16 columns");
    } else if (ch_run_args_check(nrest - 1, rest + 1, &err)) {
        /* Syntax errors before the (slow) derivation. */
        rc = usage_error("run", "%s", err.msg);
    }
    ch_problem *pb = NULL;
    if (!rc) rc = load(path, max_nodes, &pb);
    char *svg = NULL;
    ch_run_options o = {form, compiler, !rechart, plot ? &svg : NULL, xy ? cols[0] : NULL,
                        xy ? cols + 1 : cols, xy ? 1 : ncols};
    err.code = 0;
    if (!rc) {
        rc = ch_problem_run(pb, &o, nrest, rest, &err);
        if (rc < 0 && err.code == CH_E_USAGE) rc = usage_error("run", "%s", err.msg);
        else if (rc < 0) rc = report_api(&err);
        else if (rc && err.code) report_api(&err); /* the plot, after a failed run */
    }
    if (svg) {
        int w = write_bytes("run", plot, svg, strlen(svg));
        if (w && !rc) rc = w;
    }
    free(svg);
    ch_problem_free(pb);
    free(rest);
    return rc;
}

static const char *const usage_check =
    "usage: chetaev check MODEL [--format text|json] [--loop N [--plot FILE.svg]]\n"
    "                           [--time-limit S]\n"
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
    "  --plot FILE    with --loop: draw the loop as an SVG, y*_r against q_r\n"
    "                 at t1 for each independent coordinate q_r (at most 15)\n"
    "                 over the circle at t = 0 (the same for every r), each\n"
    "                 curve about its own centre, one scale for both axes\n"
    "  --time-limit S the quantities not decided after S seconds of the\n"
    "                 audit are reported 'unknown' (not decided: time\n"
    "                 limit); progress goes to stderr after 2 s\n"
    "  -h, --help     this help\n";

/* The audit's progress on stderr, at most once a second after the first
 * 2 s (ctx: the time of the last line). */
static void check_progress(void *ctx, size_t done, size_t total, const char *name, double t)
{
    double *last = ctx;
    if (t < 2 || t - *last < 1) return;
    *last = t;
    fprintf(stderr, "chetaev check: %zu of %zu quantities decided (%s), %.1f s\n", done,
            total, name, t);
}

/* Audits MODEL and, with --loop, measures I1 (and draws the loop into
 * plot); writes the report. */
static int check_model(const char *path, int json, long loop_n, const char *plot,
                       size_t max_nodes, double time_limit)
{
    ch_problem *pb = NULL;
    int rc = load(path, max_nodes, &pb);
    if (rc) return rc;
    double last = 0;
    ch_check_options o = {json, loop_n, plot != NULL, time_limit, check_progress, &last};
    char *text = NULL, *svg = NULL;
    size_t skipped = 0;
    ch_err err;
    int r = ch_problem_check(pb, &o, &text, &svg, &skipped, &err);
    if (skipped)
        fprintf(stderr, "chetaev check: the time limit (%g s) left %zu quantities "
                "undecided\n", time_limit, skipped);
    if (r) rc = report_api(&err);
    if (!rc && plot) rc = write_bytes("check", plot, svg, strlen(svg));
    if (!rc && fputs(text, stdout) == EOF) rc = EXIT_MODEL;
    free(text);
    free(svg);
    ch_problem_free(pb);
    return rc;
}

static int cmd_check(int argc, char **argv, size_t max_nodes)
{
    const char *path = NULL, *fmt = "text", *loop = NULL, *plot = NULL;
    double limit = 0;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i], *v = NULL;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            fputs(usage_check, stdout);
            return 0;
        } else if (opt_value(argc, argv, &i, "--time-limit", &v)) {
            char *end;
            if (!v) return usage_error("check", "%s needs a value", "--time-limit");
            limit = strtod(v, &end);
            if (end == v || *end || !(limit > 0 && limit < 1e9))
                return usage_error("check", "--time-limit needs a positive number of "
                                   "seconds, not '%s'", v);
        } else if (opt_value(argc, argv, &i, "--format", &v)) {
            if (!v) return usage_error("check", "%s needs a value", "--format");
            fmt = v;
        } else if (opt_value(argc, argv, &i, "--loop", &v)) {
            if (!v) return usage_error("check", "%s needs a value", "--loop");
            loop = v;
        } else if (opt_value(argc, argv, &i, "--plot", &v)) {
            if (!v) return usage_error("check", "%s needs a value", "--plot");
            plot = v;
        } else {
            int rc = model_argument("check", a, &path);
            if (rc) return rc;
        }
    }
    if (strcmp(fmt, "text") && strcmp(fmt, "json"))
        return usage_error("check", "unknown format '%s' (text, json)", fmt);
    long n = 0;
    if (loop) {
        char *end;
        errno = 0;
        n = strtol(loop, &end, 10);
        if (errno || end == loop || *end || n < CH_LOOP_POINTS_MIN
            || n > CH_LOOP_POINTS_MAX)
            return usage_error("check", "--loop needs a number of points "
                               "from 8 to 100000, not '%s'", loop);
    }
    if (plot && !loop) return usage_error("check", "%s", "--plot needs --loop N");
    if (!path) return usage_error("check", "%s", "missing MODEL file");
    return check_model(path, !strcmp(fmt, "json"), n, plot, max_nodes, limit);
}

static const char *const usage_repl =
    "usage: chetaev repl MODEL [--form full|reduced|hamilton] [--compiler tcc|cc]\n"
    "\n"
    "Loads MODEL, derives it and compiles one form once, then reads commands\n"
    "from standard input (a prompt is shown on a terminal; piped input works\n"
    "too). Parameter and initial-value changes take effect without\n"
    "recompiling. End of input or 'quit' ends the session; a failing command\n"
    "prints a message and the session goes on.\n"
    "\n"
    "options:\n"
    "  --form F       the form to start with (default reduced)\n"
    "  --compiler C   tcc (default, in memory) or cc (system compiler, dlopen)\n"
    "  -h, --help     this help\n"
    "\n";

static int cmd_repl(int argc, char **argv, size_t max_nodes)
{
    const char *path = NULL, *form = "reduced", *compiler = "tcc";
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i], *v = NULL;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            fputs(usage_repl, stdout);
            fputs(ch_repl_help(), stdout);
            return 0;
        } else if (opt_value(argc, argv, &i, "--form", &v)
                   || opt_value(argc, argv, &i, "--compiler", &v)) {
            if (!v) return usage_error("repl", "%s needs a value", a);
            if (a[2] == 'f') form = v;
            else compiler = v;
        } else {
            int rc = model_argument("repl", a, &path);
            if (rc) return rc;
        }
    }
    if (!path) return usage_error("repl", "%s", "missing MODEL file");
    if (!one_of(form, forms, 3))
        return usage_error("repl", "unknown form '%s' (full, reduced, hamilton)", form);
    if (strcmp(compiler, "tcc") && strcmp(compiler, "cc"))
        return usage_error("repl", "unknown compiler '%s' (tcc, cc)", compiler);
    ch_repl_options o = {stdin, stdout, stderr, isatty(fileno(stdin)), form, compiler,
                         max_nodes};
    return ch_repl_run(path, &o);
}

/* Takes "--max-nodes N" (or =N) out of the command's arguments (after
 * argv[1]), so that every command accepts it. The new argc, or -1 after a
 * usage error. */
static int take_max_nodes(int argc, char **argv, size_t *max_nodes)
{
    int j = 2;
    for (int i = 2; i < argc; i++) {
        const char *v = NULL;
        if (!opt_value(argc, argv, &i, "--max-nodes", &v)) {
            argv[j++] = argv[i];
            continue;
        }
        char *end = NULL;
        errno = 0;
        unsigned long long n = v && isdigit((unsigned char)v[0])
                                   ? strtoull(v, &end, 10) : 0;
        if (!end || *end || errno || n > SIZE_MAX) {
            usage_error(argv[1], "--max-nodes needs a number of nodes "
                        "(0: no limit), not '%s'", v ? v : "");
            return -1;
        }
        *max_nodes = (size_t)n;
    }
    return j;
}

/* Derivations allocate megabytes in small blocks, and on the virtual
 * machines we measure on, a page fault per 4 kB page costs more than the
 * work done in it (10-trailer derive: 1300 faults, a third of the time).
 * So the process heap is reserved in one piece and advised as
 * transparent huge pages, and freed memory stays in the process instead
 * of going back to the system and faulting in again. Virtual memory only:
 * pages are touched as they are used. Glibc and Linux only; advice the
 * system may ignore.
 * Huge pages start at a 2 MB boundary of the heap, 1 to 3 MB above its
 * start (where depends on address randomisation: the 10-trailer's derive
 * took 275 to 790 faults, run to run, most of them in the heap below the
 * boundary). The heap up to the boundary is taken by a block nobody
 * touches, returned for freeing at exit, so that every later allocation
 * is on huge pages. */
static void *tune_heap(void)
{
    void *floor = NULL;
#if defined(__GLIBC__) && defined(__linux__) && defined(MADV_HUGEPAGE)
    const size_t huge = (size_t)2 << 20, reserve = (size_t)64 << 20;
    mallopt(M_MMAP_THRESHOLD, 32 << 20);
    mallopt(M_TRIM_THRESHOLD, 256 << 20);
    mallopt(M_TOP_PAD, (int)reserve);
    /* larger than the initial heap: the heap grows by it and the pad */
    const size_t grow = (size_t)1 << 20;
    void *probe = malloc(grow);
    char *end = sbrk(0);
    /* glibc wrote the header of the heap's top just after probe: a page
     * touched before the advice, which keeps its 2 MB on small pages */
    uintptr_t lo = ((uintptr_t)probe + grow + 4096 + huge - 1) & ~(uintptr_t)(huge - 1);
    if (probe && end != (char *)-1) {
        uintptr_t hi = (uintptr_t)end & ~(uintptr_t)(huge - 1);
        if (hi > lo) madvise((void *)lo, hi - lo, MADV_HUGEPAGE);
    }
    free(probe);
    /* probe went back to the top of the heap: a block from there that
     * ends at the boundary (glibc's chunk: the size asked plus a word) */
    size_t below = probe ? lo - (uintptr_t)probe : 0;
    if (below >= 4096) {
        floor = malloc(below - sizeof(size_t));
        if (floor != probe) { /* not from the top (another malloc): useless */
            free(floor);
            floor = NULL;
        }
    }
#endif
    return floor;
}

static int run_command(int argc, char **argv)
{
    /* FLINT keeps pools of GMP integers for the whole process: freed at
     * exit so that valgrind's leak check (tests/valgrind.sh) sees only
     * real leaks. */
    atexit(ch_cleanup);
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
        printf("chetaev %s\n", ch_version());
        return 0;
    }
    size_t max_nodes = CH_DEFAULT_MAX_NODES;
    argc = take_max_nodes(argc, argv, &max_nodes);
    if (argc < 0) return EXIT_USAGE;
    if (!strcmp(cmd, "derive")) return cmd_derive(argc - 2, argv + 2, max_nodes);
    if (!strcmp(cmd, "emit")) return cmd_emit(argc - 2, argv + 2, max_nodes);
    if (!strcmp(cmd, "run")) return cmd_run(argc - 2, argv + 2, max_nodes);
    if (!strcmp(cmd, "check")) return cmd_check(argc - 2, argv + 2, max_nodes);
    if (!strcmp(cmd, "repl")) return cmd_repl(argc - 2, argv + 2, max_nodes);
    return usage_error(NULL, "unknown command '%s'", cmd);
}

int main(int argc, char **argv)
{
    void *floor = tune_heap();
    int rc = run_command(argc, argv);
    free(floor);
    /* Whatever the command wrote to stdout must have arrived: a full disk,
     * /dev/full or a closed pipe is a failure, not exit 0. */
    errno = 0;
    int bad = fflush(stdout) != 0 || ferror(stdout);
    /* a closed stdout that nothing was written to (emit from cron) is no
     * failure: fclose's EBADF after a clean flush */
    if (fclose(stdout) != 0 && !(errno == EBADF && !bad)) bad = 1;
    if (bad && rc == 0) {
        fprintf(stderr, "chetaev: cannot write the standard output: %s\n",
                errno ? strerror(errno) : "write error");
        rc = EXIT_OUTPUT;
    }
    return rc;
}
