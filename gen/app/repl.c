/* repl.c — the interactive session of `chetaev repl` (see repl.h).
 *
 * The session owns one loaded model (context, model, derivation) and a
 * cache of compiled forms. Settings (`set NAME=VALUE`) are kept as names
 * with values: a parameter's goes into the parameter array, the others
 * into the runtime's initial state (chrt_initial_state) at every `run`,
 * so that a run here starts from exactly the state `chetaev run --set ...
 * --init ...` would start from. The
 * parameters reach the compiled code as the array argument p of the
 * emitted functions (SPEC §4), which is why no setting ever recompiles. */
#define _POSIX_C_SOURCE 200809L
#include "app/repl.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "jit/chart.h"
#include "jit/compile.h"
#include "jit/cvode.h"
#include "doc/derive.h"
#include "jit/driver.h"
#include "codegen/emit_c.h"
#include "core/eval.h"
#include "lang/model.h"
#include "doc/plot.h"
#include "app/report.h"
#include "runtime/simulate.h"

enum {
    MAX_ROWS = 20000,     /* rows kept of a fixed-step run (thinned evenly beyond) */
    ROWS = 2000,          /* rows of an adaptive run: a grid by dense output */
    MAX_SETTINGS = 256,
    MAX_TOKENS = 32,
    LINE_SIZE = 4096
};

typedef struct {
    char *name;
    double value;
} setting;

typedef struct {
    const ch_repl_options *o;
    char *path;
    ch_ctx *ctx;
    ch_model *m;
    ch_mechanics *d;
    ch_derivation *doc;   /* the document of d, made at the first `show` */
    ch_compiled *comp[3]; /* by ch_form; NULL until first needed */
    long compiles, runs;
    ch_form form;
    ch_compiler cc;
    chrt_method method;
    double dt;            /* 0: automatic first step, CHRT_FIXED_DT for fixed */
    double rtol, atol;
    chrt_stats last;      /* of the last run */
    setting set[MAX_SETTINGS];
    size_t nset;
    ch_table traj;        /* the last run: the columns of `run`'s CSV */
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

static int report(repl *r, const ch_error *e)
{
    char buf[1024];
    ch_error_format(e, buf, sizeof buf);
    r->errors++;
    fprintf(r->o->err, "%s\n", buf);
    fflush(r->o->err);
    return -1;
}

/* The whole buffer to the output; oom is reported instead. */
static int put_buf(repl *r, const ch_buf *b)
{
    if (b->oom) return complain(r, "out of memory");
    if (b->len) fwrite(b->s, 1, b->len, r->o->out);
    return 0;
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return 1e3 * (double)ts.tv_sec + 1e-6 * (double)ts.tv_nsec;
}

/* ---- model and compiled forms ------------------------------------------- */

static const char *sym_name(const ch_expr *e) { return ch_sym_of(e)->name; }

/* The shortest of %.15g and %.17g that reads back as v: 0.2, not
 * 0.20000000000000001, yet exact. */
static const char *num(char *buf, size_t size, double v)
{
    snprintf(buf, size, "%.15g", v);
    if (strtod(buf, NULL) != v) snprintf(buf, size, "%.17g", v);
    return buf;
}

/* Loads and derives path into a new context; the old one is untouched. */
static int load(repl *r, const char *path, ch_ctx **ctx, ch_model **m,
                ch_mechanics **d)
{
    ch_error e;
    ch_error_clear(&e);
    *ctx = ch_ctx_new();
    if (!*ctx) return complain(r, "out of memory");
    ch_ctx_set_node_limit(*ctx, r->o->max_nodes);
    if (ch_model_load(*ctx, path, m, &e) || ch_mechanics_derive(*ctx, *m, d, &e)) {
        report(r, &e);
        ch_ctx_free(*ctx);
        *ctx = NULL;
        return -1;
    }
    for (size_t i = 0; i < (*d)->init.nwarn; i++) fprintf(r->o->err, "%s\n", (*d)->init.warn[i]);
    fflush(r->o->err);
    return 0;
}

static void drop_compiled(repl *r)
{
    for (int f = 0; f < 3; f++) {
        ch_compiled_free(r->comp[f]);
        r->comp[f] = NULL;
    }
}

/* The current form compiled (compiling it on first use), or NULL. */
static const chrt_system *compiled(repl *r)
{
    if (r->comp[r->form]) return &r->comp[r->form]->sys;
    ch_error e;
    ch_error_clear(&e);
    double t0 = now_ms();
    if (ch_compile_form(r->ctx, r->d, r->form, NULL, r->cc, &r->comp[r->form], &e)) {
        report(r, &e);
        return NULL;
    }
    r->compiles++;
    say(r, "compiled the %s form of %s (compilation %ld, %.1f ms)\n",
        ch_form_name(r->form), r->m->name, r->compiles, now_ms() - t0);
    return &r->comp[r->form]->sys;
}

/* ---- settings --------------------------------------------------------------- */

static int param_index(const ch_model *m, const char *name)
{
    for (size_t i = 0; i < m->np; i++)
        if (!strcmp(sym_name(m->param[i]), name)) return (int)i;
    return -1;
}

/* A coordinate "x", a velocity "x'" or a momentum "y_x" of the model. */
static int is_state_name(const ch_model *m, const char *name)
{
    size_t len = strlen(name);
    for (size_t i = 0; i < m->n; i++) {
        const char *q = sym_name(m->q[i]);
        size_t ql = strlen(q);
        if (!strcmp(q, name)) return 1;
        if (len == ql + 1 && !strncmp(q, name, ql) && name[ql] == '\'') return 1;
        if (len == ql + 2 && name[0] == 'y' && name[1] == '_' && !strcmp(name + 2, q))
            return 1;
    }
    return 0;
}

static int valid_setting(const ch_model *m, const char *name)
{
    return param_index(m, name) >= 0 || is_state_name(m, name);
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
static double param_value(const repl *r, size_t i)
{
    for (size_t j = 0; j < r->nset; j++)
        if (!strcmp(r->set[j].name, sym_name(r->m->param[i]))) return r->set[j].value;
    return r->m->param_default[i];
}

/* x0 and p as `run --set ... --init ...` computes them: the parameters'
 * settings into p, the others initial values (chrt_initial_state). */
static int initial_state(repl *r, const chrt_system *s, double *x0, double *p)
{
    chrt_init *init = calloc(r->nset + 1, sizeof *init);
    size_t ninit = 0;
    if (!init) return complain(r, "out of memory");
    for (int i = 0; i < s->np; i++) p[i] = s->param_defaults[i];
    for (size_t i = 0; i < r->nset; i++) {
        int k = -1;
        for (int j = 0; j < s->np && k < 0; j++)
            if (!strcmp(s->param_names[j], r->set[i].name)) k = j;
        if (k >= 0) {
            p[k] = r->set[i].value;
        } else {
            init[ninit].name = r->set[i].name;
            init[ninit].len = strlen(r->set[i].name);
            init[ninit++].value = r->set[i].value;
        }
    }
    char msg[600], warning[512];
    int rc = 0;
    if (chrt_initial_state(s, p, ninit, init, x0, warning, sizeof warning, msg, sizeof msg))
        rc = complain(r, "initial state: %s", msg);
    else if (warning[0])
        fprintf(r->o->err, "warning: %s\n", warning);
    free(init);
    return rc;
}

/* ---- run ----------------------------------------------------------------------- */

/* The rows of a run go to the table, its notes to the session. */
typedef struct {
    repl *r;
    chrt_sink table;
} run_sink;

static int run_row(void *ctx, const double *v, int n)
{
    run_sink *c = ctx;
    return c->table.row(c->table.ctx, v, n);
}

static void run_note(void *ctx, double t, const char *text)
{
    run_sink *c = ctx;
    (void)t; /* the note names its time */
    fprintf(c->r->o->err, "note: %s\n", text);
}

/* Integrates with the runtime's loop from t = 0 to T, the rows into the
 * table: every K-th step of a fixed method (at most MAX_ROWS rows), a
 * grid of T/ROWS by dense output of an adaptive one; always the row at T.
 * A reduced or hamilton form re-charts (chart.h; the charts are this
 * run's), its notes printed. Returns the accepted steps; *failed when the
 * run failed (message printed). */
static long integrate(repl *r, const chrt_system *s, double T, double *x,
                      const double *p, int *failed)
{
    chrt_options o;
    chrt_options_default(&o);
    o.method = r->method;
    o.dt = r->dt;
    o.t1 = T;
    o.rtol = r->rtol;
    o.atol = r->atol;
    ch_charts *charts = s->chart_quality
                            ? ch_charts_new(r->ctx, r->d, r->form, r->cc, s, o.chart_min)
                            : NULL;
    if (s->chart_quality && !charts) {
        complain(r, "out of memory");
        *failed = 1;
        return 0;
    }
    if (charts) o.rechart = ch_charts_rechart, o.rechart_ctx = charts;
    ch_cvode_ext cv; /* method cvode */
    ch_cvode_ext_init(&cv);
    o.ext = &cv.ops;
    if (chrt_method_adaptive(o.method)) {
        o.dt_out = T / ROWS;
    } else {
        double n = ceil(T / (r->dt > 0 ? r->dt : CHRT_FIXED_DT));
        o.every = (long)(n / MAX_ROWS) + 1;
    }
    run_sink c = {r, {NULL, NULL, NULL}};
    ch_driver_table_sink(&r->traj, &c.table);
    chrt_sink tee = {run_row, run_note, &c};
    chrt_stats st;
    char msg[600];
    double t;
    int rc = chrt_integrate(&s, &o, 0, x, p, NULL, &tee, &st, &t, msg, sizeof msg);
    *failed = rc != 0;
    if (rc) complain(r, "%s", msg);
    r->last = st;
    ch_cvode_ext_free(&cv);
    ch_charts_free(charts);
    return st.accepted;
}

/* Largest |phi| (velocity-level constraints) and, for constraints written
 * on positions, largest |g - g(0)| over the kept rows, evaluated from the
 * model's own expressions: an independent check of every form. */
static void residuals(repl *r, const double *p, double *vel, double *pos)
{
    const ch_model *m = r->m;
    const ch_table *tb = &r->traj;
    size_t k = m->k, n = m->n;
    *vel = *pos = 0;
    double *sv = calloc(ch_ctx_nsyms(r->ctx) + 1, sizeof *sv);
    double *g = calloc(3 * k + 1, sizeof *g), *g0 = g + k, *phi = g0 + k;
    if (!sv || !g || k == 0 || tb->nrows == 0) {
        free(sv), free(g);
        return;
    }
    for (size_t i = 0; i < m->np; i++) sv[ch_sym_of(m->param[i])->sid] = p[i];
    for (size_t row = 0; row < tb->nrows; row++) {
        const double *v = tb->v + row * tb->ncols;
        sv[ch_sym_of(m->t)->sid] = v[0];
        for (size_t i = 0; i < n; i++) {
            sv[ch_sym_of(m->q[i])->sid] = v[1 + i];
            sv[ch_sym_of(m->qt[i])->sid] = v[1 + n + i];
        }
        ch_eval_d_many(r->ctx, k, m->constraint, sv, phi);
        ch_eval_d_many(r->ctx, k, m->constraint_orig, sv, g);
        for (size_t a = 0; a < k; a++) {
            *vel = fmax(*vel, fabs(phi[a]));
            if (!m->holonomic[a]) continue;
            if (row == 0) g0[a] = g[a];
            *pos = fmax(*pos, fabs(g[a] - g0[a]));
        }
    }
    free(sv), free(g);
}

/* "dop853, rtol 1e-10, atol 1e-12" or "rk4, dt 0.001". */
static void method_text(const repl *r, char *buf, size_t size)
{
    if (chrt_method_adaptive(r->method))
        snprintf(buf, size, "%s, rtol %g, atol %g", chrt_method_name(r->method),
                 r->rtol, r->atol);
    else
        snprintf(buf, size, "%s, dt %g", chrt_method_name(r->method),
                 r->dt > 0 ? r->dt : CHRT_FIXED_DT);
}

static void summary(repl *r, const chrt_system *s, const double *p, long steps)
{
    const ch_table *tb = &r->traj;
    const double *last = tb->v + (tb->nrows - 1) * tb->ncols;
    size_t nq = (size_t)s->nq, ec = 1 + 2 * nq;
    char how[120];
    method_text(r, how, sizeof how);
    say(r, "t = %.12g after %ld steps (%s, %s form)\n", last[0], steps, how,
        ch_form_name(r->form));
    if (chrt_method_adaptive(r->method))
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
    if (r->m->k == 0) {
        say(r, "constraints: none\n");
        return;
    }
    double vel, pos;
    residuals(r, p, &vel, &pos);
    say(r, "constraints: max|phi|=%.3e", vel);
    int holo = 0;
    for (size_t a = 0; a < r->m->k; a++) holo |= r->m->holonomic[a];
    if (holo) say(r, " max|g-g(0)|=%.3e", pos);
    say(r, " over %zu states\n", tb->nrows);
}

static int cmd_run(repl *r, int argc, char **argv)
{
    double T;
    if (argc != 1 || parse_double(argv[0], &T) || T < 0)
        return complain(r, "usage: run T (a finite end time >= 0)");
    const chrt_system *s = compiled(r);
    if (!s) return -1;
    double *x = calloc((size_t)s->nx + 1, sizeof *x), *p = calloc((size_t)s->np + 1, sizeof *p);
    int rc = !x || !p ? complain(r, "out of memory") : initial_state(r, s, x, p);
    ch_error e;
    if (!rc && ch_driver_table_columns(&r->traj, s, &e)) rc = report(r, &e);
    if (!rc) {
        int failed;
        long steps = integrate(r, s, T, x, p, &failed);
        r->runs++;
        char how[120];
        method_text(r, how, sizeof how);
        snprintf(r->traj_title, sizeof r->traj_title, "%s (%s form, %s)",
                 r->m->name, ch_form_name(r->form), how);
        if (r->traj.nrows) summary(r, s, p, steps);
        rc = failed ? -1 : 0;
    }
    free(x);
    free(p);
    return rc;
}

/* ---- the other commands ----------------------------------------------------- */

static int cmd_set(repl *r, int argc, char **argv)
{
    if (argc == 0) {
        char b[40];
        for (size_t i = 0; i < r->m->np; i++)
            say(r, "%s=%s%s\n", sym_name(r->m->param[i]), num(b, sizeof b, param_value(r, i)),
                param_value(r, i) != r->m->param_default[i] ? " (set)" : "");
        for (size_t i = 0; i < r->nset; i++)
            if (param_index(r->m, r->set[i].name) < 0)
                say(r, "initial %s=%s\n", r->set[i].name, num(b, sizeof b, r->set[i].value));
        return 0;
    }
    for (int i = 0; i < argc; i++) {
        char *eq = strchr(argv[i], '=');
        double v;
        if (!eq || eq == argv[i]) return complain(r, "usage: set NAME=VALUE ... (got '%s')", argv[i]);
        *eq = 0;
        if (!valid_setting(r->m, argv[i]))
            return complain(r, "'%s' is neither a parameter nor a coordinate, velocity "
                            "(x') or momentum (y_x) of %s", argv[i], r->m->name);
        if (parse_double(eq + 1, &v))
            return complain(r, "'%s' is not a finite number", eq + 1);
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
        say(r, "%s\n", ch_form_name(r->form));
        return 0;
    }
    int f = argc == 1 ? ch_form_parse(argv[0]) : -1;
    if (f < 0) return complain(r, "usage: form full|reduced|hamilton");
    ch_form old = r->form;
    r->form = (ch_form)f;
    if (!compiled(r)) {
        r->form = old;
        return -1;
    }
    return 0;
}

static int cmd_method(repl *r, int argc, char **argv)
{
    int m = argc == 1 ? chrt_method_parse(argv[0]) : argc == 0 ? (int)r->method : -1;
    if (m < 0) return complain(r, "usage: method dop853|rk45|cvode|euler|midpoint|rk4");
    r->method = (chrt_method)m;
    if (argc == 0) say(r, "%s\n", chrt_method_name(r->method));
    return 0;
}

static int cmd_dt(repl *r, int argc, char **argv)
{
    double h;
    if (argc == 0) {
        if (r->dt > 0) say(r, "%g\n", r->dt);
        else say(r, "auto (adaptive: chosen at the start; fixed: %g)\n", CHRT_FIXED_DT);
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
    chrt_options o;
    char msg[300];
    chrt_options_default(&o);
    o.rtol = rt, o.atol = at;
    if (chrt_options_check(&o, 0, msg, sizeof msg)) return complain(r, "%s", msg);
    r->rtol = rt, r->atol = at;
    return 0;
}

static int cmd_show(repl *r, int argc, char **argv)
{
    ch_error e;
    ch_error_clear(&e);
    if (!r->doc && ch_derivation_of(r->d, &r->doc, &e)) return report(r, &e);
    if (argc == 0) {
        say(r, "keys:");
        for (size_t i = 0; i < r->doc->n; i++)
            if (!r->doc->entry[i].display_only) say(r, " %s", r->doc->entry[i].key);
        say(r, "\n");
        return 0;
    }
    ch_buf b;
    ch_buf_init(&b);
    int rc = ch_derivation_prepare(r->doc, CH_FORMAT_TEXT, (size_t)argc,
                                   (const char *const *)argv)
                 ? complain(r, "out of memory")
           : ch_derivation_write(&b, r->doc, CH_FORMAT_TEXT, (size_t)argc,
                                 (const char *const *)argv, &e) ? report(r, &e) : 0;
    if (!rc && b.oom) rc = complain(r, "out of memory");
    if (!rc) {
        /* The sections without derive's two-line preamble, which would
         * repeat itself at every `show`. */
        const char *sec = b.len ? strstr(b.s, "\n== ") : NULL;
        fputs(sec ? sec + 1 : b.len ? b.s : "", r->o->out);
    }
    ch_buf_free(&b);
    return rc;
}

static int cmd_check(repl *r, int argc, char **argv)
{
    (void)argv;
    if (argc) return complain(r, "usage: check");
    ch_audit a;
    ch_error e;
    ch_error_clear(&e);
    if (ch_audit_run(r->ctx, r->d, NULL, &a, &e)) return report(r, &e);
    ch_buf b;
    ch_buf_init(&b);
    ch_audit_write_text(&b, &a, NULL);
    int rc = put_buf(r, &b);
    ch_buf_free(&b);
    return rc;
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
    const char *vars[CH_PLOT_MAX_SERIES + 1];
    size_t nv = 0;
    int xy = argc > 1 && !strcmp(argv[1], "xy");
    for (int i = xy ? 2 : 1; i < argc; i++)
        for (char *sp, *tok = strtok_r(argv[i], ",", &sp); tok; tok = strtok_r(NULL, ",", &sp))
            if (nv <= CH_PLOT_MAX_SERIES) vars[nv++] = tok;
    if (xy && nv != 2) return complain(r, "usage: plot FILE.svg xy A,B (two variables)");
    if (nv > CH_PLOT_MAX_SERIES) return complain(r, "at most %d variables", CH_PLOT_MAX_SERIES);
    if (nv == 0) /* the coordinates */
        for (size_t i = 0; i < r->m->n && nv < CH_PLOT_MAX_SERIES; i++)
            vars[nv++] = sym_name(r->m->q[i]);
    ch_buf b;
    ch_buf_init(&b);
    ch_error e;
    ch_error_clear(&e);
    int rc = ch_table_plot(&b, &r->traj, r->traj_title, xy ? vars[0] : NULL,
                           xy ? 1 : nv, xy ? vars + 1 : vars, &e)
                 ? report(r, &e) : write_file(r, argv[0], b.s, b.len);
    if (!rc) say(r, "wrote %s\n", argv[0]);
    ch_buf_free(&b);
    return rc;
}

static int cmd_emit(repl *r, int argc, char **argv)
{
    if (argc != 1) return complain(r, "usage: emit DIR");
    if (mkdir(argv[0], 0777) != 0 && errno != EEXIST)
        return complain(r, "cannot create %s: %s", argv[0], strerror(errno));
    char prefix[80], path[4200];
    ch_compile_default_prefix(r->m->name, r->form, prefix, sizeof prefix);
    ch_buf h, c;
    ch_buf_init(&h);
    ch_buf_init(&c);
    ch_error e;
    ch_error_clear(&e);
    int rc = ch_emit_c(r->ctx, r->d, r->form, prefix, &h, &c, &e) ? report(r, &e) : 0;
    if (!rc && (h.oom || c.oom)) rc = complain(r, "out of memory");
    if (!rc) {
        snprintf(path, sizeof path, "%s/%s.h", argv[0], prefix);
        rc = write_file(r, path, h.s, h.len);
    }
    if (!rc) {
        snprintf(path, sizeof path, "%s/%s.c", argv[0], prefix);
        rc = write_file(r, path, c.s, c.len);
    }
    if (!rc) say(r, "wrote %s/%s.h and %s/%s.c\n", argv[0], prefix, argv[0], prefix);
    ch_buf_free(&h);
    ch_buf_free(&c);
    return rc;
}

/* Re-reads the file; settings whose names the new model still has stay. */
static int cmd_reload(repl *r, int argc, char **argv)
{
    (void)argv;
    if (argc) return complain(r, "usage: reload");
    ch_ctx *ctx;
    ch_model *m;
    ch_mechanics *d;
    if (load(r, r->path, &ctx, &m, &d)) {
        say(r, "reload failed: keeping the previous model\n");
        return -1;
    }
    drop_compiled(r);
    ch_ctx_free(r->ctx);
    r->ctx = ctx, r->m = m, r->d = d, r->doc = NULL;
    ch_table_free(&r->traj);
    for (size_t i = r->nset; i-- > 0;)
        if (!valid_setting(m, r->set[i].name)) {
            say(r, "dropped setting %s (not in the model any more)\n", r->set[i].name);
            remove_setting(r, i);
        }
    say(r, "reloaded %s: %zu coordinates, %zu constraints, %zu parameters, "
        "%zu settings kept\n", m->name, m->n, m->k, m->np, r->nset);
    return compiled(r) ? 0 : -1;
}

static int cmd_info(repl *r, int argc, char **argv)
{
    (void)argv;
    if (argc) return complain(r, "usage: info");
    say(r, "model %s from %s: %zu coordinates, %zu constraints, %zu parameters\n",
        r->m->name, r->path, r->m->n, r->m->k, r->m->np);
    char how[120];
    method_text(r, how, sizeof how);
    say(r, "form %s, method %s, compiler %s\n", ch_form_name(r->form), how,
        r->cc == CH_COMPILER_CC ? "cc" : "tcc");
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
    if (r->ctx) ch_ctx_free(r->ctx);
    for (size_t i = 0; i < r->nset; i++) free(r->set[i].name);
    ch_table_free(&r->traj);
    free(r->path);
}

int ch_repl_run(const char *path, const ch_repl_options *o)
{
    repl r;
    memset(&r, 0, sizeof r);
    r.o = o;
    chrt_options def;
    chrt_options_default(&def);
    r.method = def.method;
    r.dt = def.dt;
    r.rtol = def.rtol;
    r.atol = def.atol;
    ch_table_init(&r.traj);
    int f = ch_form_parse(o->form ? o->form : "reduced");
    if (f < 0) {
        complain(&r, "unknown form '%s' (full, reduced, hamilton)", o->form);
        return 2;
    }
    r.form = (ch_form)f;
    if (o->compiler && strcmp(o->compiler, "tcc") && strcmp(o->compiler, "cc")) {
        complain(&r, "unknown compiler '%s' (tcc, cc)", o->compiler);
        return 2;
    }
    r.cc = o->compiler && !strcmp(o->compiler, "cc") ? CH_COMPILER_CC : CH_COMPILER_TCC;
    if (!(r.path = strdup(path))) return complain(&r, "out of memory"), 1;
    if (load(&r, path, &r.ctx, &r.m, &r.d) || !compiled(&r)) {
        session_free(&r);
        return 1;
    }
    say(&r, "model %s: %zu coordinates, %zu constraints, %zu parameters; "
        "'help' lists the commands\n", r.m->name, r.m->n, r.m->k, r.m->np);
    char line[LINE_SIZE];
    while (read_line(&r, line, sizeof line))
        if (execute(&r, line)) break;
    if (o->prompt && feof(o->in)) fputc('\n', o->out);
    fflush(o->out);
    session_free(&r);
    /* a script (no prompt) reports its failures in the exit status */
    return !o->prompt && r.errors ? 1 : 0;
}
