/* repl.c — the interactive session of `chetaev repl` (see repl.h), built
 * on the public API (chetaev.h) only.
 *
 * The session owns one loaded problem and a compiled system per form
 * (compiled on first use). Settings (`set NAME=VALUE`) are kept as names
 * with values: at every `run` a parameter's goes into the system's
 * parameters, the others are the initial values of ch_system_set_initial,
 * so that a run here starts from exactly the state `chetaev run --set ...
 * --init ...` would start from. The parameters reach the compiled code
 * as the array argument p of the emitted functions (SPEC §4), which is
 * why no setting ever recompiles. */
#define _POSIX_C_SOURCE 200809L
#include "app/repl.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "app/chetaev.h"

enum {
    MAX_ROWS = 20000,     /* rows kept of a fixed-step run (thinned evenly beyond) */
    ROWS = 2000,          /* rows of an adaptive run: a grid by dense output */
    MAX_SETTINGS = 256,
    MAX_TOKENS = 32,
    LINE_SIZE = 4096
};

static const char *const forms[3] = {"full", "reduced", "hamilton"};

typedef struct {
    char *name;
    double value;
} setting;

/* The rows of the last run: the columns of `run`'s CSV. */
typedef struct {
    char **names;
    size_t ncols, nrows, cap;
    double *v;            /* nrows * ncols, row-major */
    int oom;
} table;

typedef struct {
    const ch_repl_options *o;
    char *path;
    ch_problem *pb;
    ch_system *sys[3];    /* by forms[]; NULL until first needed */
    long compiles, runs;
    int form;             /* index into forms[] */
    const char *compiler; /* "tcc" or "cc" */
    const char *method;   /* ch_method_name's */
    double dt;            /* 0: automatic first step, CH_FIXED_DT for fixed */
    double rtol, atol;
    ch_stats last;        /* of the last run */
    setting set[MAX_SETTINGS];
    size_t nset;
    table traj;
    char traj_title[160];
    long errors;          /* messages of failed commands so far */
} repl;

/* ---- messages ------------------------------------------------------------ */

static void say(repl *r, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
static void say(repl *r, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vfprintf(r->o->out, fmt, ap);
    va_end(ap);
}

static int complain(repl *r, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
static int complain(repl *r, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    r->errors++;
    fputs("error: ", r->o->err);
    vfprintf(r->o->err, fmt, ap);
    fputc('\n', r->o->err);
    va_end(ap);
    fflush(r->o->err);
    return -1;
}

static int report(repl *r, const ch_err *e)
{
    char buf[1024];
    ch_err_format(e, buf, sizeof buf);
    r->errors++;
    fprintf(r->o->err, "%s\n", buf);
    fflush(r->o->err);
    return -1;
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return 1e3 * (double)ts.tv_sec + 1e-6 * (double)ts.tv_nsec;
}

/* The shortest of %.15g and %.17g that reads back as v: 0.2, not
 * 0.20000000000000001, yet exact. */
static const char *num(char *buf, size_t size, double v)
{
    snprintf(buf, size, "%.15g", v);
    if (strtod(buf, NULL) != v) snprintf(buf, size, "%.17g", v);
    return buf;
}

/* ---- the table of a run ------------------------------------------------------ */

static void table_free(table *tb)
{
    for (size_t i = 0; i < tb->ncols; i++) free(tb->names[i]);
    free(tb->names);
    free(tb->v);
    memset(tb, 0, sizeof *tb);
}

/* Empty, with the columns of s. 0, or -1 out of memory. */
static int table_columns(table *tb, const ch_system *s)
{
    table_free(tb);
    size_t n = (size_t)ch_system_ncolumns(s);
    if (!(tb->names = calloc(n + 1, sizeof *tb->names))) return -1;
    for (size_t i = 0; i < n; i++, tb->ncols++) {
        const char *name = ch_system_column_name(s, (int)i);
        if (!name || !(tb->names[i] = strdup(name))) return -1;
    }
    return 0;
}

static int table_row(void *ctx, const double *v, int n)
{
    table *tb = ctx;
    if ((size_t)n != tb->ncols) return tb->oom = 1;
    if (tb->nrows == tb->cap) {
        size_t cap = tb->cap ? 2 * tb->cap : 256;
        double *w = realloc(tb->v, cap * tb->ncols * sizeof *w);
        if (!w) return tb->oom = 1;
        tb->v = w, tb->cap = cap;
    }
    memcpy(tb->v + tb->nrows++ * tb->ncols, v, tb->ncols * sizeof *v);
    return 0;
}

/* ---- model and compiled forms ------------------------------------------- */

/* Loads and derives path into *pb; the session's problem is untouched. */
static int load(repl *r, const char *path, ch_problem **pb)
{
    ch_err e;
    if (!(*pb = ch_problem_load_limited(path, r->o->max_nodes, &e))) return report(r, &e);
    for (size_t i = 0; i < ch_problem_warning_count(*pb); i++)
        fprintf(r->o->err, "%s\n", ch_problem_warning(*pb, i));
    fflush(r->o->err);
    return 0;
}

static void drop_compiled(repl *r)
{
    for (int f = 0; f < 3; f++) {
        ch_system_free(r->sys[f]);
        r->sys[f] = NULL;
    }
}

/* The current form compiled (compiling it on first use), or NULL. */
static ch_system *compiled(repl *r)
{
    if (r->sys[r->form]) return r->sys[r->form];
    ch_err e;
    double t0 = now_ms();
    if (!(r->sys[r->form] = ch_system_compile(r->pb, forms[r->form], r->compiler, &e))) {
        report(r, &e);
        return NULL;
    }
    r->compiles++;
    say(r, "compiled the %s form of %s (compilation %ld, %.1f ms)\n", forms[r->form],
        ch_problem_name(r->pb), r->compiles, now_ms() - t0);
    return r->sys[r->form];
}

/* ---- settings --------------------------------------------------------------- */

static int param_index(const ch_problem *pb, const char *name)
{
    for (int i = 0; i < ch_problem_np(pb); i++)
        if (!strcmp(ch_problem_param_name(pb, i), name)) return i;
    return -1;
}

/* A coordinate "x", a velocity "x'" or a momentum "y_x" of the model. */
static int is_state_name(const ch_problem *pb, const char *name)
{
    size_t len = strlen(name);
    for (int i = 0; i < ch_problem_nq(pb); i++) {
        const char *q = ch_problem_coordinate(pb, i);
        size_t ql = strlen(q);
        if (!strcmp(q, name)) return 1;
        if (len == ql + 1 && !strncmp(q, name, ql) && name[ql] == '\'') return 1;
        if (len == ql + 2 && name[0] == 'y' && name[1] == '_' && !strcmp(name + 2, q))
            return 1;
    }
    return 0;
}

static int valid_setting(const ch_problem *pb, const char *name)
{
    return param_index(pb, name) >= 0 || is_state_name(pb, name);
}

static int parse_double(const char *s, double *v)
{
    char *end;
    errno = 0;
    *v = strtod(s, &end);
    return end != s && !*end && !errno && isfinite(*v) ? 0 : -1;
}

static int store_setting(repl *r, const char *name, double v)
{
    for (size_t i = 0; i < r->nset; i++)
        if (!strcmp(r->set[i].name, name)) {
            r->set[i].value = v;
            return 0;
        }
    if (r->nset == MAX_SETTINGS) return complain(r, "too many settings (%d)", MAX_SETTINGS);
    if (!(r->set[r->nset].name = strdup(name))) return complain(r, "out of memory");
    r->set[r->nset++].value = v;
    return 0;
}

static void remove_setting(repl *r, size_t i)
{
    free(r->set[i].name);
    memmove(r->set + i, r->set + i + 1, (r->nset - i - 1) * sizeof *r->set);
    r->nset--;
}

/* The current value of parameter i: the setting, else the default. */
static double param_value(const repl *r, int i)
{
    for (size_t j = 0; j < r->nset; j++)
        if (!strcmp(r->set[j].name, ch_problem_param_name(r->pb, i))) return r->set[j].value;
    return ch_problem_param_default(r->pb, i);
}

/* The parameters and the initial state of s as `run --set ... --init ...`
 * computes them. */
static int initial_state(repl *r, ch_system *s)
{
    const char **names = calloc(r->nset + 1, sizeof *names);
    double *values = calloc(r->nset + 1, sizeof *values);
    size_t n = 0;
    ch_err e;
    int rc = !names || !values ? complain(r, "out of memory") : 0;
    for (int i = 0; !rc && i < ch_problem_np(r->pb); i++)
        if (ch_system_set_param(s, ch_problem_param_name(r->pb, i), param_value(r, i), &e))
            rc = report(r, &e);
    for (size_t i = 0; !rc && i < r->nset; i++)
        if (param_index(r->pb, r->set[i].name) < 0)
            names[n] = r->set[i].name, values[n++] = r->set[i].value;
    char warning[512];
    if (!rc && ch_system_set_initial(s, n, names, values, warning, sizeof warning, &e))
        rc = complain(r, "initial state: %s", e.msg);
    else if (!rc && warning[0])
        fprintf(r->o->err, "warning: %s\n", warning);
    free(names);
    free(values);
    return rc;
}

/* ---- run ----------------------------------------------------------------------- */

static void run_note(void *ctx, double t, const char *text)
{
    repl *r = ctx;
    (void)t; /* the note names its time */
    fprintf(r->o->err, "note: %s\n", text);
}

static int run_row(void *ctx, const double *v, int n)
{
    repl *r = ctx;
    return table_row(&r->traj, v, n);
}

/* Integrates s from its initial state to t = T, the rows into the table:
 * every K-th step of a fixed method (at most MAX_ROWS rows), a grid of
 * T/ROWS by dense output of an adaptive one; always the row at T. A
 * reduced or hamilton form re-charts, its notes printed. Returns the
 * accepted steps; *failed when the run failed (message printed). */
static long integrate(repl *r, ch_system *s, double T, int *failed)
{
    int adaptive = ch_method_adaptive(r->method);
    ch_rows rows = {run_row, run_note, r, 1, 0};
    if (adaptive) {
        rows.dt_out = T / ROWS;
    } else {
        double n = ceil(T / (r->dt > 0 ? r->dt : CH_FIXED_DT));
        rows.every = (long)(n / MAX_ROWS) + 1;
    }
    ch_err e;
    *failed = ch_system_set_tolerances(s, r->rtol, r->atol, 0, &e)
              || ch_system_integrate_rows(s, T, r->method,
                                          r->dt > 0 ? r->dt : adaptive ? 0 : CH_FIXED_DT,
                                          &rows, &e);
    if (*failed) complain(r, "%s", r->traj.oom ? "out of memory" : e.msg);
    ch_system_stats(s, &r->last);
    return r->last.accepted;
}

/* Largest |phi| (velocity-level constraints) and, for constraints written
 * on positions, largest |g - g(0)| over the kept rows, evaluated from the
 * model's own expressions: an independent check of every form. */
static void residuals(repl *r, const ch_system *s, double *vel, double *pos)
{
    const table *tb = &r->traj;
    size_t k = (size_t)ch_problem_nconstraints(r->pb), n = (size_t)ch_problem_nq(r->pb);
    const double *p = ch_system_params(s);
    *vel = *pos = 0;
    double *g = calloc(3 * k + 1, sizeof *g), *g0 = g + k, *phi = g0 + k;
    if (!g || k == 0) {
        free(g);
        return;
    }
    for (size_t row = 0; row < tb->nrows; row++) {
        const double *v = tb->v + row * tb->ncols;
        ch_err e;
        if (ch_problem_constraints(r->pb, v[0], v + 1, v + 1 + n, p, phi, g, &e)) {
            *vel = *pos = NAN;
            break;
        }
        for (size_t a = 0; a < k; a++) {
            *vel = fmax(*vel, fabs(phi[a]));
            if (ch_problem_holonomic(r->pb, (int)a) != 1) continue;
            if (row == 0) g0[a] = g[a];
            *pos = fmax(*pos, fabs(g[a] - g0[a]));
        }
    }
    free(g);
}

/* "dop853, rtol 1e-10, atol 1e-12" or "rk4, dt 0.001". */
static void method_text(const repl *r, char *buf, size_t size)
{
    if (ch_method_adaptive(r->method))
        snprintf(buf, size, "%s, rtol %g, atol %g", r->method, r->rtol, r->atol);
    else
        snprintf(buf, size, "%s, dt %g", r->method, r->dt > 0 ? r->dt : CH_FIXED_DT);
}

static void summary(repl *r, const ch_system *s, long steps)
{
    const table *tb = &r->traj;
    const double *last = tb->v + (tb->nrows - 1) * tb->ncols;
    size_t ec = 1 + 2 * (size_t)ch_problem_nq(r->pb); /* E (the CSV's layout) */
    char how[120];
    method_text(r, how, sizeof how);
    say(r, "t = %.12g after %ld steps (%s, %s form)\n", last[0], steps, how, forms[r->form]);
    if (ch_method_adaptive(r->method))
        say(r, "steps: %ld accepted, %ld rejected, %ld rhs calls, %ld recharts\n",
            r->last.accepted, r->last.rejected, r->last.rhs_calls, r->last.recharts);
    say(r, "final:");
    for (size_t i = 1; i < ec; i++) say(r, " %s=%.12g", tb->names[i], last[i]);
    say(r, "\n");
    double e0 = tb->v[ec], drift = 0;
    for (size_t row = 0; row < tb->nrows; row++)
        drift = fmax(drift, fabs(tb->v[row * tb->ncols + ec] - e0));
    say(r, "energy: E(0)=%.12g E(t)=%.12g max|E-E(0)|=%.3e (relative %.3e)\n",
        e0, last[ec], drift, e0 != 0 ? drift / fabs(e0) : drift);
    int k = ch_problem_nconstraints(r->pb), holo = 0;
    if (k == 0) {
        say(r, "constraints: none\n");
        return;
    }
    double vel, pos;
    residuals(r, s, &vel, &pos);
    say(r, "constraints: max|phi|=%.3e", vel);
    for (int a = 0; a < k; a++) holo |= ch_problem_holonomic(r->pb, a) == 1;
    if (holo) say(r, " max|g-g(0)|=%.3e", pos);
    say(r, " over %zu states\n", tb->nrows);
}

static int cmd_run(repl *r, int argc, char **argv)
{
    double T;
    if (argc != 1 || parse_double(argv[0], &T) || T < 0)
        return complain(r, "usage: run T (a finite end time >= 0)");
    ch_system *s = compiled(r);
    if (!s || initial_state(r, s)) return -1;
    if (table_columns(&r->traj, s)) return complain(r, "out of memory");
    int failed;
    long steps = integrate(r, s, T, &failed);
    r->runs++;
    char how[120];
    method_text(r, how, sizeof how);
    snprintf(r->traj_title, sizeof r->traj_title, "%s (%s form, %s)", ch_problem_name(r->pb),
             forms[r->form], how);
    if (r->traj.nrows) summary(r, s, steps);
    return failed ? -1 : 0;
}

/* ---- the other commands ----------------------------------------------------- */

static int cmd_set(repl *r, int argc, char **argv)
{
    if (argc == 0) {
        char b[40];
        for (int i = 0; i < ch_problem_np(r->pb); i++)
            say(r, "%s=%s%s\n", ch_problem_param_name(r->pb, i),
                num(b, sizeof b, param_value(r, i)),
                param_value(r, i) != ch_problem_param_default(r->pb, i) ? " (set)" : "");
        for (size_t i = 0; i < r->nset; i++)
            if (param_index(r->pb, r->set[i].name) < 0)
                say(r, "initial %s=%s\n", r->set[i].name, num(b, sizeof b, r->set[i].value));
        return 0;
    }
    for (int i = 0; i < argc; i++) {
        char *eq = strchr(argv[i], '=');
        double v;
        if (!eq || eq == argv[i]) return complain(r, "usage: set NAME=VALUE ... (got '%s')", argv[i]);
        *eq = 0;
        if (!valid_setting(r->pb, argv[i]))
            return complain(r, "'%s' is neither a parameter nor a coordinate, velocity "
                            "(x') or momentum (y_x) of %s", argv[i], ch_problem_name(r->pb));
        ch_err e;
        if (ch_parse_value(eq + 1, &v, &e)) return complain(r, "%s", e.msg);
        if (store_setting(r, argv[i], v)) return -1;
    }
    return 0;
}

static int cmd_unset(repl *r, int argc, char **argv)
{
    if (argc != 1) return complain(r, "usage: unset NAME|all");
    for (size_t i = r->nset; i-- > 0;)
        if (!strcmp(argv[0], "all") || !strcmp(argv[0], r->set[i].name)) {
            remove_setting(r, i);
            if (strcmp(argv[0], "all")) return 0;
        }
    return strcmp(argv[0], "all") ? complain(r, "'%s' is not set", argv[0]) : 0;
}

static int cmd_form(repl *r, int argc, char **argv)
{
    if (argc == 0) {
        say(r, "%s\n", forms[r->form]);
        return 0;
    }
    int f = -1;
    for (int i = 0; argc == 1 && i < 3; i++)
        if (!strcmp(argv[0], forms[i])) f = i;
    if (f < 0) return complain(r, "usage: form full|reduced|hamilton");
    int old = r->form;
    r->form = f;
    if (!compiled(r)) {
        r->form = old;
        return -1;
    }
    return 0;
}

static int cmd_method(repl *r, int argc, char **argv)
{
    const char *m = argc == 1 ? ch_method_name(argv[0]) : argc == 0 ? r->method : NULL;
    if (!m) return complain(r, "usage: method dop853|rk45|cvode|euler|midpoint|rk4");
    r->method = m;
    if (argc == 0) say(r, "%s\n", r->method);
    return 0;
}

static int cmd_dt(repl *r, int argc, char **argv)
{
    double h;
    if (argc == 0) {
        if (r->dt > 0) say(r, "%g\n", r->dt);
        else say(r, "auto (adaptive: chosen at the start; fixed: %g)\n", CH_FIXED_DT);
        return 0;
    }
    if (argc == 1 && !strcmp(argv[0], "auto")) {
        r->dt = 0;
        return 0;
    }
    if (argc != 1 || parse_double(argv[0], &h) || !(h > 0))
        return complain(r, "usage: dt H|auto (a positive step size)");
    r->dt = h;
    return 0;
}

/* tol RTOL [ATOL]: the tolerances of the adaptive methods. */
static int cmd_tol(repl *r, int argc, char **argv)
{
    double rt, at = r->atol;
    if (argc == 0) {
        say(r, "rtol %g atol %g\n", r->rtol, r->atol);
        return 0;
    }
    if (argc > 2 || parse_double(argv[0], &rt) || (argc == 2 && parse_double(argv[1], &at)))
        return complain(r, "usage: tol RTOL [ATOL] (positive numbers)");
    ch_system *s = compiled(r);
    ch_err e;
    if (!s) return -1;
    if (ch_system_set_tolerances(s, rt, at, 0, &e)) return complain(r, "%s", e.msg);
    r->rtol = rt, r->atol = at;
    return 0;
}

static int cmd_show(repl *r, int argc, char **argv)
{
    const char *key;
    if (argc == 0) {
        say(r, "keys:");
        for (size_t i = 0; (key = ch_problem_section(r->pb, i)); i++) say(r, " %s", key);
        say(r, "\n");
        return 0;
    }
    size_t len = 0;
    for (int i = 0; i < argc; i++) len += strlen(argv[i]) + 1;
    char *only = malloc(len + 1), *text = NULL;
    size_t size = 0;
    FILE *f = only ? open_memstream(&text, &size) : NULL;
    if (!f) {
        free(only);
        return complain(r, "out of memory");
    }
    only[0] = 0;
    for (int i = 0; i < argc; i++) strcat(strcat(only, i ? "," : ""), argv[i]);
    ch_err e;
    int rc = ch_problem_write_derivation(r->pb, "text", only, f, &e);
    if (fclose(f) && !rc) rc = complain(r, "out of memory");
    else if (rc) rc = complain(r, "%s", e.msg);
    if (!rc) {
        /* The sections without derive's two-line preamble, which would
         * repeat itself at every `show`. */
        const char *sec = size ? strstr(text, "\n== ") : NULL;
        fputs(sec ? sec + 1 : size ? text : "", r->o->out);
    }
    free(text);
    free(only);
    return rc;
}

static int cmd_check(repl *r, int argc, char **argv)
{
    (void)argv;
    if (argc) return complain(r, "usage: check");
    ch_check_options o = {0, 0, 0, 0, NULL, NULL};
    char *text, *svg;
    ch_err e;
    if (ch_problem_check(r->pb, &o, &text, &svg, NULL, &e)) return report(r, &e);
    fputs(text, r->o->out);
    free(text);
    return 0;
}

static int write_file(repl *r, const char *path, const char *text, size_t len)
{
    FILE *f = fopen(path, "w");
    int bad = !f;
    if (f) {
        bad |= fwrite(text, 1, len, f) != len;
        bad |= fclose(f) != 0;
    }
    return bad ? complain(r, "cannot write %s: %s", path, strerror(errno)) : 0;
}

/* plot FILE [VAR...] | plot FILE xy A,B (or xy A B) */
static int cmd_plot(repl *r, int argc, char **argv)
{
    if (argc < 1) return complain(r, "usage: plot FILE.svg [VAR ...] | plot FILE.svg xy A,B");
    if (r->traj.nrows == 0) return complain(r, "nothing to plot yet: 'run T' first");
    const char *vars[CH_PLOT_SERIES_MAX + 1];
    size_t nv = 0;
    int xy = argc > 1 && !strcmp(argv[1], "xy");
    for (int i = xy ? 2 : 1; i < argc; i++)
        for (char *sp, *tok = strtok_r(argv[i], ",", &sp); tok; tok = strtok_r(NULL, ",", &sp))
            if (nv <= CH_PLOT_SERIES_MAX) vars[nv++] = tok;
    if (xy && nv != 2) return complain(r, "usage: plot FILE.svg xy A,B (two variables)");
    if (nv > CH_PLOT_SERIES_MAX) return complain(r, "at most %d variables", CH_PLOT_SERIES_MAX);
    if (nv == 0) /* the coordinates */
        for (int i = 0; i < ch_problem_nq(r->pb) && nv < CH_PLOT_SERIES_MAX; i++)
            vars[nv++] = ch_problem_coordinate(r->pb, i);
    char *svg = NULL;
    ch_err e;
    int rc = ch_plot_rows(&svg, r->traj_title, r->traj.ncols, (const char *const *)r->traj.names,
                          r->traj.nrows, r->traj.v, xy ? vars[0] : NULL, xy ? 1 : nv,
                          xy ? vars + 1 : vars, &e)
                 ? report(r, &e) : write_file(r, argv[0], svg, strlen(svg));
    if (!rc) say(r, "wrote %s\n", argv[0]);
    free(svg);
    return rc;
}

static int cmd_emit(repl *r, int argc, char **argv)
{
    if (argc != 1) return complain(r, "usage: emit DIR");
    ch_system *s = compiled(r);
    if (!s) return -1;
    if (mkdir(argv[0], 0777) != 0 && errno != EEXIST)
        return complain(r, "cannot create %s: %s", argv[0], strerror(errno));
    const char *prefix = ch_system_prefix(s);
    char path[4200], *h = NULL, *c = NULL;
    size_t hl, cl;
    ch_err e;
    int rc = ch_problem_emit(r->pb, forms[r->form], prefix, &h, &hl, &c, &cl, &e)
                 ? report(r, &e) : 0;
    if (!rc) {
        snprintf(path, sizeof path, "%s/%s.h", argv[0], prefix);
        rc = write_file(r, path, h, hl);
    }
    if (!rc) {
        snprintf(path, sizeof path, "%s/%s.c", argv[0], prefix);
        rc = write_file(r, path, c, cl);
    }
    if (!rc) say(r, "wrote %s/%s.h and %s/%s.c\n", argv[0], prefix, argv[0], prefix);
    free(h);
    free(c);
    return rc;
}

/* Re-reads the file; settings whose names the new model still has stay. */
static int cmd_reload(repl *r, int argc, char **argv)
{
    (void)argv;
    if (argc) return complain(r, "usage: reload");
    ch_problem *pb;
    if (load(r, r->path, &pb)) {
        say(r, "reload failed: keeping the previous model\n");
        return -1;
    }
    drop_compiled(r);
    ch_problem_free(r->pb);
    r->pb = pb;
    table_free(&r->traj);
    for (size_t i = r->nset; i-- > 0;)
        if (!valid_setting(pb, r->set[i].name)) {
            say(r, "dropped setting %s (not in the model any more)\n", r->set[i].name);
            remove_setting(r, i);
        }
    say(r, "reloaded %s: %d coordinates, %d constraints, %d parameters, "
        "%zu settings kept\n", ch_problem_name(pb), ch_problem_nq(pb),
        ch_problem_nconstraints(pb), ch_problem_np(pb), r->nset);
    return compiled(r) ? 0 : -1;
}

static int cmd_info(repl *r, int argc, char **argv)
{
    (void)argv;
    if (argc) return complain(r, "usage: info");
    say(r, "model %s from %s: %d coordinates, %d constraints, %d parameters\n",
        ch_problem_name(r->pb), r->path, ch_problem_nq(r->pb), ch_problem_nconstraints(r->pb),
        ch_problem_np(r->pb));
    char how[120];
    method_text(r, how, sizeof how);
    say(r, "form %s, method %s, compiler %s\n", forms[r->form], how, r->compiler);
    say(r, "compilations: %ld\nruns: %ld\n", r->compiles, r->runs);
    return cmd_set(r, 0, NULL);
}

static const char help_text[] =
    "commands:\n"
    "  set NAME=VALUE ...   parameter, or initial value of a coordinate (x=1),\n"
    "                       velocity (x'=0) or momentum (y_x=0); no recompiling.\n"
    "                       'set' alone lists parameters and initial values\n"
    "  unset NAME|all       back to the model's value\n"
    "  form full|reduced|hamilton   switch form (each compiled once)\n"
    "  method dop853|rk45|euler|midpoint|rk4   integration method (default\n"
    "                       dop853: adaptive; rk45 adaptive; the others fixed)\n"
    "  tol RTOL [ATOL]      tolerances of the adaptive methods (default 1e-10 1e-12)\n"
    "  dt H|auto            fixed methods: the step (default 1e-3); adaptive:\n"
    "                       the first step (default auto)\n"
    "  run T                integrate from the initial state to t = T; prints\n"
    "                       the final state, steps, energy drift, constraint\n"
    "                       residuals (rows: 2000 by dense output, adaptive),\n"
    "                       and a note where a reduced or hamilton form\n"
    "                       switches its dependent velocities (README, Charts)\n"
    "  show [KEY ...]       derived quantities (SPEC section 3 keys, as derive\n"
    "                       prints them); 'show' alone lists the keys\n"
    "  check                audit conserved quantities (as chetaev check)\n"
    "  plot FILE.svg [VAR ...]   time series of the last run (default: the\n"
    "                       coordinates); VAR is a column of run's CSV\n"
    "  plot FILE.svg xy A,B B against A (a trajectory in the plane)\n"
    "  emit DIR             write the current form's C code into DIR\n"
    "  reload               re-read the model file, keep the settings that\n"
    "                       still apply, recompile\n"
    "  info                 model, settings and how many compilations happened\n"
    "  help                 this text\n"
    "  quit                 end the session (also end of input)\n";

const char *ch_repl_help(void) { return help_text; }

static int cmd_help(repl *r, int argc, char **argv)
{
    (void)argc, (void)argv;
    say(r, "%s", help_text);
    return 0;
}

typedef int (*command_fn)(repl *r, int argc, char **argv);

static const struct {
    const char *name;
    command_fn fn;
} commands[] = {
    {"set", cmd_set},       {"unset", cmd_unset}, {"form", cmd_form},
    {"method", cmd_method}, {"dt", cmd_dt},       {"tol", cmd_tol},
    {"run", cmd_run},
    {"show", cmd_show},     {"check", cmd_check}, {"plot", cmd_plot},
    {"emit", cmd_emit},     {"reload", cmd_reload}, {"info", cmd_info},
    {"stats", cmd_info},    {"help", cmd_help},
};

/* Runs one line; 1 when the session should end. */
static int execute(repl *r, char *line)
{
    char *tok[MAX_TOKENS];
    int n = 0;
    char *sp;
    for (char *t = strtok_r(line, " \t\r\n", &sp); t; t = strtok_r(NULL, " \t\r\n", &sp)) {
        if (n == MAX_TOKENS) {
            complain(r, "too many words on one line (at most %d)", MAX_TOKENS);
            return 0;
        }
        tok[n++] = t;
    }
    if (n == 0 || tok[0][0] == '#') return 0;
    if (!strcmp(tok[0], "quit") || !strcmp(tok[0], "exit")) return 1;
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (!strcmp(tok[0], commands[i].name)) {
            commands[i].fn(r, n - 1, tok + 1);
            fflush(r->o->out);
            return 0;
        }
    complain(r, "unknown command '%s' ('help' lists the commands)", tok[0]);
    return 0;
}

/* Reads one line into buf; 0 at end of input. An overlong line, or one
 * with a NUL byte or another control character (an escape sequence), is
 * consumed and replaced by an empty one after a message: a NUL must not
 * hide a second command, nor an escape reach the terminal in a message. */
static int read_line(repl *r, char *buf, size_t size)
{
    if (r->o->prompt) {
        fputs("chetaev> ", r->o->out);
        fflush(r->o->out);
    }
    size_t len = 0;
    int c, bad = -1, any = 0;
    while ((c = fgetc(r->o->in)) != EOF) {
        any = 1;
        if (c == '\n') break;
        if (bad < 0 && ((c < 0x20 && c != '\t' && c != '\r') || c == 0x7F)) bad = c;
        if (len + 1 < size) buf[len] = (char)c;
        len++;
    }
    if (!any) return 0;
    buf[len + 1 < size ? len : size - 1] = 0;
    if (len + 1 >= size) {
        complain(r, "line longer than %zu characters ignored", size - 2);
        buf[0] = 0;
    } else if (bad >= 0) {
        complain(r, "line with the control byte 0x%02X ignored", (unsigned)bad);
        buf[0] = 0;
    }
    return 1;
}

static void session_free(repl *r)
{
    drop_compiled(r);
    ch_problem_free(r->pb);
    for (size_t i = 0; i < r->nset; i++) free(r->set[i].name);
    table_free(&r->traj);
    free(r->path);
}

int ch_repl_run(const char *path, const ch_repl_options *o)
{
    repl r;
    memset(&r, 0, sizeof r);
    r.o = o;
    r.method = "dop853";
    r.rtol = CH_DEFAULT_RTOL;
    r.atol = CH_DEFAULT_ATOL;
    r.form = -1;
    for (int i = 0; i < 3; i++)
        if (!strcmp(o->form ? o->form : "reduced", forms[i])) r.form = i;
    if (r.form < 0) {
        complain(&r, "unknown form '%s' (full, reduced, hamilton)", o->form);
        return 2;
    }
    if (o->compiler && strcmp(o->compiler, "tcc") && strcmp(o->compiler, "cc")) {
        complain(&r, "unknown compiler '%s' (tcc, cc)", o->compiler);
        return 2;
    }
    r.compiler = o->compiler && !strcmp(o->compiler, "cc") ? "cc" : "tcc";
    if (!(r.path = strdup(path))) return complain(&r, "out of memory"), 1;
    if (load(&r, path, &r.pb) || !compiled(&r)) {
        session_free(&r);
        return 1;
    }
    say(&r, "model %s: %d coordinates, %d constraints, %d parameters; "
        "'help' lists the commands\n", ch_problem_name(r.pb), ch_problem_nq(r.pb),
        ch_problem_nconstraints(r.pb), ch_problem_np(r.pb));
    char line[LINE_SIZE];
    while (read_line(&r, line, sizeof line))
        if (execute(&r, line)) break;
    if (o->prompt && feof(o->in)) fputc('\n', o->out);
    fflush(o->out);
    session_free(&r);
    /* a script (no prompt) reports its failures in the exit status */
    return !o->prompt && r.errors ? 1 : 0;
}
