/* api.c — the public library API (chetaev.h) over the internal modules.
 *
 * A ch_problem owns a context with the model and its mechanics. A
 * ch_system owns one ch_compiled (compile.h: the path `chetaev run` takes)
 * plus the caller-visible time, state and parameters and the integrator's
 * work space; it keeps no pointer into the problem. */
#define _POSIX_C_SOURCE 200809L
#include "app/chetaev.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "app/report.h"
#include "codegen/emit_c.h"
#include "core/eval.h"
#include "core/version.h"
#include "doc/derive.h"
#include "doc/plot.h"
#include "jit/chart.h"
#include "jit/compile.h"
#include "jit/cvode.h"
#include "jit/driver.h"
#include "lang/model.h"
#include "mech/mechanics.h"
#include "runtime/simulate.h"

/* The public codes are the internal ones under other names. */
_Static_assert(CH_E_MODEL == (int)CH_ERR_MODEL && CH_E_USAGE == (int)CH_ERR_USAGE
                   && CH_E_NUMERIC == (int)CH_ERR_NUMERIC
                   && CH_E_LIMIT == (int)CH_ERR_LIMIT
                   && CH_E_MEMORY == (int)CH_ERR_MEMORY && CH_E_IO == (int)CH_ERR_IO
                   && CH_E_MATH == (int)CH_ERR_MATH,
               "ch_err codes must equal ch_status");
_Static_assert(CH_LOOP_POINTS_MIN == CH_LOOP_MIN_POINTS && CH_LOOP_POINTS_MAX == CH_LOOP_MAX_POINTS
                   && CH_PLOT_SERIES_MAX == CH_PLOT_MAX_SERIES,
               "chetaev.h's limits must equal the modules'");

struct ch_problem {
    ch_ctx *ctx;
    ch_model *model;
    ch_mechanics *der;
    char *file; /* the model keeps a pointer to it */
    char *text; /* the model's source, for the systems' re-charting */
    size_t len;
    ch_derivation *doc;    /* the document, made at the first write */
    ch_emit_cache *cache;  /* the kernels the emitted forms share */
    size_t max_nodes;      /* the node budget it was derived under */
    double *sv;            /* ch_problem_constraints' symbol values (nsv) */
    size_t nsv;
};

struct ch_system {
    ch_compiled *c;
    const chrt_system *sys; /* the current chart's: &c->sys, or one of charts' */
    /* Re-charting (chart.h): the model's source, derived again in a context
     * of the system's own the first time the chart degrades, so that a
     * system never depends on its problem. */
    char *file, *text;
    size_t len;
    size_t max_nodes;   /* the problem's node budget, for that derivation */
    ch_form form;
    ch_compiler cc;
    int rechart;
    double chart_min;
    ch_ctx *rctx;
    ch_charts *charts;
    char chart[256];    /* the current dependent velocities "x' y'" */
    char chart0[256];   /* the first chart's (ch_system_reset returns to it) */
    double t;
    double *x, *p;      /* nx, np */
    double *q, *qt;     /* nq each: scratch for state_from */
    double *scratch;    /* nx: a state under construction */
    /* 2*nq: the velocities at x where known (vs[0] NaN: not), the start
     * of the Newton iterations of the system's functions (chrt_system's
     * vs; carried by chrt_integrate), then scratch */
    double *vs;
    double rtol, atol, dt_max, max_steps; /* of ch_system_integrate */
    ch_stats stats;     /* of the last ch_system_integrate */
    ch_cvode_ext cv;    /* the stepper of method "cvode" */
    ch_table cols;      /* the CSV's column names of cols_of (no rows) */
    const chrt_system *cols_of;
};

/* ---- errors ---------------------------------------------------------------- */

/* in as the public error *out (may be NULL); returns its code. */
static int export_error(ch_err *out, const ch_error *in)
{
    if (!out) return (int)in->code;
    out->code = (int)in->code;
    out->line = in->line;
    out->col = in->col;
    snprintf(out->file, sizeof out->file, "%s", in->file ? in->file : "");
    snprintf(out->msg, sizeof out->msg, "%s", in->msg);
    return (int)in->code;
}

/* Sets a public error directly; returns code. */
static int fail(ch_err *err, int code, const char *fmt, const char *arg)
{
    ch_error e;
    ch_error_clear(&e);
    ch_error_set(&e, (ch_status)code, NULL, 0, 0, fmt, arg);
    export_error(err, &e);
    return code;
}

#define CH_STR_(x) #x
#define CH_STR(x) CH_STR_(x)

/* The argument checks of the entry points: a NULL object or pointer is a
 * usage error (or a neutral value for the queries), never a crash. */
#define NEED(cond, what)                                                      \
    do {                                                                      \
        if (!(cond)) return fail(err, CH_E_USAGE, "%s", what);               \
    } while (0)
#define NEED_PTR(cond, what)                                                  \
    do {                                                                      \
        if (!(cond)) {                                                        \
            fail(err, CH_E_USAGE, "%s", what);                               \
            return NULL;                                                      \
        }                                                                     \
    } while (0)

void ch_err_format(const ch_err *err, char *buf, size_t size)
{
    if (!buf || !size) return;
    if (!err) {
        snprintf(buf, size, "%s", "error: (no error record)");
        return;
    }
    ch_error e;
    ch_error_clear(&e);
    e.code = (ch_status)err->code;
    e.file = err->file[0] ? err->file : NULL;
    e.line = err->line;
    e.col = err->col;
    snprintf(e.msg, sizeof e.msg, "%s", err->msg);
    ch_error_format(&e, buf, (unsigned long)size);
}

/* ---- models ------------------------------------------------------------------ */

const char *ch_version(void) { return CH_VERSION; }

void ch_cleanup(void) { flint_cleanup_master(); }

/* Parses (text != NULL) or loads the file, then derives under the node
 * budget max_nodes (0: none). */
static ch_problem *problem_new(const char *file, const char *text, size_t len,
                               size_t max_nodes, ch_err *err)
{
    ch_error e;
    ch_error_clear(&e);
    ch_problem *pb = calloc(1, sizeof *pb);
    if (pb) pb->file = strdup(file);
    if (pb && pb->file) pb->ctx = ch_ctx_new();
    if (!pb || !pb->file || !pb->ctx) {
        ch_problem_free(pb);
        fail(err, CH_E_MEMORY, "%s", "out of memory");
        return NULL;
    }
    int rc = 0;
    if (text) {
        pb->len = len;
        if (!(pb->text = malloc(len + 1))) rc = ch_error_set(&e, CH_ERR_MEMORY, NULL, 0, 0, "out of memory");
        else memcpy(pb->text, text, len);
    } else {
        rc = ch_model_read(pb->file, &pb->text, &pb->len, &e);
    }
    ch_ctx_set_node_limit(pb->ctx, max_nodes);
    pb->max_nodes = max_nodes;
    if (!rc) rc = ch_model_parse(pb->ctx, pb->file, pb->text, pb->len, &pb->model, &e);
    if (!rc) rc = ch_mechanics_derive(pb->ctx, pb->model, &pb->der, &e);
    char st[128];
    if (rc == CH_ERR_LIMIT && pb->model
        && ch_model_statement_at(pb->model, e.line, e.col, st, sizeof st))
        ch_str_append(e.msg, sizeof e.msg, " (deriving from the '%s' statement)", st);
    if (rc) {
        export_error(err, &e);
        ch_problem_free(pb);
        return NULL;
    }
    return pb;
}

ch_problem *ch_problem_load(const char *path, ch_err *err)
{
    NEED_PTR(path, "ch_problem_load: no path");
    return problem_new(path, NULL, 0, 0, err);
}

ch_problem *ch_problem_load_limited(const char *path, size_t max_nodes, ch_err *err)
{
    NEED_PTR(path, "ch_problem_load_limited: no path");
    return problem_new(path, NULL, 0, max_nodes, err);
}

ch_problem *ch_problem_parse(const char *name, const char *text, size_t len,
                             ch_err *err)
{
    /* (no text is an error, not a request to read a file of that name) */
    NEED_PTR(text, "ch_problem_parse: no model text");
    return problem_new(name ? name : "model", text, len, 0, err);
}

size_t ch_problem_warning_count(const ch_problem *pb)
{
    return pb ? pb->der->init.nwarn : 0;
}

const char *ch_problem_warning(const ch_problem *pb, size_t i)
{
    return pb && i < pb->der->init.nwarn ? pb->der->init.warn[i] : NULL;
}

void ch_problem_free(ch_problem *pb)
{
    if (!pb) return;
    ch_emit_cache_free(pb->cache);
    free(pb->sv);
    if (pb->ctx) ch_ctx_free(pb->ctx);
    free(pb->file);
    free(pb->text);
    free(pb);
}

const char *ch_problem_name(const ch_problem *pb)
{
    return pb ? pb->model->name : NULL;
}

int ch_problem_nq(const ch_problem *pb) { return pb ? (int)pb->model->n : 0; }
int ch_problem_nconstraints(const ch_problem *pb) { return pb ? (int)pb->model->k : 0; }
int ch_problem_np(const ch_problem *pb) { return pb ? (int)pb->model->np : 0; }

const char *ch_problem_coordinate(const ch_problem *pb, int i)
{
    return pb && i >= 0 && (size_t)i < pb->model->n ? ch_sym_of(pb->model->q[i])->name : NULL;
}

const char *ch_problem_param_name(const ch_problem *pb, int i)
{
    return pb && i >= 0 && (size_t)i < pb->model->np ? ch_sym_of(pb->model->param[i])->name
                                                      : NULL;
}

double ch_problem_param_default(const ch_problem *pb, int i)
{
    return pb && i >= 0 && (size_t)i < pb->model->np ? pb->model->param_default[i] : NAN;
}

int ch_problem_holonomic(const ch_problem *pb, int i)
{
    return pb && i >= 0 && (size_t)i < pb->model->k ? pb->model->holonomic[i] != 0 : -1;
}

int ch_problem_constraints(ch_problem *pb, double t, const double *q, const double *qt,
                           const double *p, double *phi, double *g, ch_err *err)
{
    NEED(pb && q && qt && (p || !pb->model->np), "ch_problem_constraints: no problem or point");
    const ch_model *m = pb->model;
    size_t nsv = ch_ctx_nsyms(pb->ctx) + 1;
    if (nsv > pb->nsv) { /* (the problem's: called once per row of a run) */
        double *w = realloc(pb->sv, nsv * sizeof *w);
        if (!w) return fail(err, CH_E_MEMORY, "%s", "out of memory");
        pb->sv = w, pb->nsv = nsv;
    }
    double *sv = pb->sv;
    for (size_t i = 0; i < m->np; i++) sv[ch_sym_of(m->param[i])->sid] = p[i];
    sv[ch_sym_of(m->t)->sid] = t;
    for (size_t i = 0; i < m->n; i++) {
        sv[ch_sym_of(m->q[i])->sid] = q[i];
        sv[ch_sym_of(m->qt[i])->sid] = qt[i];
    }
    int bad = 0;
    for (int pass = 0; pass < 2; pass++) {
        double *out = pass ? g : phi;
        if (!out) continue;
        ch_eval_d_many(pb->ctx, m->k, pass ? m->constraint_orig : m->constraint, sv, out);
        for (size_t a = 0; a < m->k; a++) bad |= !isfinite(out[a]);
    }
    return bad ? fail(err, CH_E_NUMERIC, "%s", "a constraint is undefined at this point") : 0;
}

/* ---- documents and emitted code ------------------------------------------------- */

/* A codegen or document error carries no position: it names the model. */
static int export_in(ch_err *out, ch_error *e, const ch_problem *pb)
{
    if (!e->file) e->file = pb->model->file;
    return export_error(out, e);
}

int ch_problem_write_derivation(ch_problem *pb, const char *format, const char *only,
                                FILE *out, ch_err *err)
{
    static const struct { const char *name; ch_format f; } fmts[] = {
        {"text", CH_FORMAT_TEXT}, {"latex", CH_FORMAT_LATEX},
        {"sympy", CH_FORMAT_SYMPY}, {"json", CH_FORMAT_JSON}};
    NEED(pb && out, "ch_problem_write_derivation: no problem or stream");
    size_t fi = 0;
    while (fi < 4 && strcmp(format ? format : "text", fmts[fi].name)) fi++;
    if (fi == 4)
        return fail(err, CH_E_USAGE, "unknown format '%s' (text, latex, sympy, json)", format);
    char *list = only ? strdup(only) : NULL;
    const char *sec[64];
    size_t n = 0;
    if (only && !list) return fail(err, CH_E_MEMORY, "%s", "out of memory");
    for (char *tok = list ? strtok(list, ",") : NULL; tok && n < 64; tok = strtok(NULL, ","))
        sec[n++] = tok;
    ch_error e;
    ch_error_clear(&e);
    int rc = 0;
    if (only && n == 0)
        rc = fail(err, CH_E_USAGE, "%s", "no section to print");
    else if (!pb->doc && ch_derivation_of(pb->der, &pb->doc, &e))
        rc = export_error(err, &e);
    else if (ch_derivation_prepare(pb->doc, fmts[fi].f, n, only ? sec : NULL))
        rc = fail(err, CH_E_MEMORY, "%s", "out of memory");
    else if (ch_derivation_fwrite(out, pb->doc, fmts[fi].f, n, only ? sec : NULL, &e))
        rc = export_error(err, &e);
    free(list);
    return rc;
}

const char *ch_problem_section(ch_problem *pb, size_t i)
{
    ch_error e;
    ch_error_clear(&e);
    if (!pb || (!pb->doc && ch_derivation_of(pb->der, &pb->doc, &e))) return NULL;
    for (size_t j = 0; j < pb->doc->n; j++)
        if (!pb->doc->entry[j].display_only && i-- == 0) return pb->doc->entry[j].key;
    return NULL;
}

int ch_plot_rows(char **svg, const char *title, size_t ncols, const char *const *names,
                 size_t nrows, const double *rows, const char *x, size_t ny,
                 const char *const *y, ch_err *err)
{
    NEED(svg && names && (rows || !nrows) && (y || !ny), "ch_plot_rows: no table or output");
    *svg = NULL;
    /* a view of the caller's arrays (ch_table_plot only reads it) */
    ch_table tb = {ncols, nrows, nrows, (char **)(void *)(uintptr_t)names,
                   (double *)(void *)(uintptr_t)rows};
    ch_buf b;
    ch_buf_init(&b);
    ch_error e;
    ch_error_clear(&e);
    int rc = 0;
    if (ch_table_plot(&b, &tb, title, x, ny, y, &e))
        rc = export_error(err, &e);
    else if (!(*svg = ch_buf_take(&b)))
        rc = fail(err, CH_E_MEMORY, "%s", "out of memory");
    ch_buf_free(&b);
    return rc;
}

int ch_prefix_valid(const char *prefix) { return prefix && ch_driver_prefix_ok(prefix); }

int ch_problem_emit(ch_problem *pb, const char *form, const char *prefix, char **header,
                    size_t *hlen, char **source, size_t *slen, ch_err *err)
{
    NEED(pb && header && hlen && source && slen, "ch_problem_emit: no problem or output");
    *header = *source = NULL;
    int f = ch_form_parse(form ? form : "reduced");
    if (f < 0) return fail(err, CH_E_USAGE, "unknown form '%s' (full, reduced, hamilton)", form);
    char pre[128];
    if (prefix && !ch_driver_prefix_ok(prefix))
        return fail(err, CH_E_USAGE, "prefix '%s' is not a C identifier", prefix);
    int n = snprintf(pre, sizeof pre, "%s_%s", pb->model->name, ch_form_name((ch_form)f));
    if (!prefix && (n < 0 || (size_t)n >= sizeof pre || !ch_driver_prefix_ok(pre)))
        return fail(err, CH_E_USAGE, "cannot form a C prefix from '%s': use --prefix",
                    pb->model->name);
    if (!pb->cache && !(pb->cache = ch_emit_cache_new()))
        return fail(err, CH_E_MEMORY, "%s", "out of memory");
    ch_buf h, s;
    ch_buf_init(&h);
    ch_buf_init(&s);
    ch_error e;
    ch_error_clear(&e);
    int rc = 0;
    if (ch_emit_c_cached(pb->ctx, pb->der, (ch_form)f, prefix ? prefix : pre, pb->cache, &h,
                         &s, &e))
        rc = export_in(err, &e, pb);
    else if (h.oom || s.oom)
        rc = fail(err, CH_E_MEMORY, "%s", "out of memory");
    *hlen = h.len, *slen = s.len;
    if (!rc && (!(*header = ch_buf_take(&h)) || !(*source = ch_buf_take(&s)))) {
        free(*header);
        *header = NULL;
        rc = fail(err, CH_E_MEMORY, "%s", "out of memory");
    }
    ch_buf_free(&h);
    ch_buf_free(&s);
    return rc;
}

int ch_driver_file(const char *prefix, size_t i, const char **name, char **text,
                   size_t *len, ch_err *err)
{
    NEED(prefix && name && text && len, "ch_driver_file: no prefix or output");
    if (!ch_driver_prefix_ok(prefix))
        return fail(err, CH_E_USAGE, "prefix '%s' is not a C identifier", prefix);
    *text = NULL;
    if (i == 0) {
        ch_buf b;
        ch_buf_init(&b);
        ch_emit_driver(prefix, &b);
        *name = "main.c", *len = b.len;
        if (b.oom || !(*text = ch_buf_take(&b))) {
            ch_buf_free(&b);
            return fail(err, CH_E_MEMORY, "%s", "out of memory");
        }
        return 0;
    }
    const char *t;
    ch_error e;
    ch_error_clear(&e);
    int r = ch_driver_runtime_file(i - 1, name, &t, len, &e);
    if (r == 1) return 1;
    if (r) return export_error(err, &e);
    if (!(*text = malloc(*len + 1))) return fail(err, CH_E_MEMORY, "%s", "out of memory");
    memcpy(*text, t, *len);
    (*text)[*len] = 0;
    return 0;
}

/* ---- the audit ---------------------------------------------------------------------- */

/* The audit's hooks (ch_audit_hooks): the time limit and the progress. */
typedef struct {
    const ch_check_options *o;
    struct timespec t0;
    size_t total;
} audit_clock;

static double audit_elapsed(const audit_clock *c)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)(t.tv_sec - c->t0.tv_sec) + 1e-9 * (double)(t.tv_nsec - c->t0.tv_nsec);
}

static int audit_stop(void *ctx)
{
    const audit_clock *c = ctx;
    return c->o->time_limit > 0 && audit_elapsed(c) > c->o->time_limit;
}

static void audit_progress(void *ctx, size_t done, const char *name)
{
    const audit_clock *c = ctx;
    if (c->o->progress) c->o->progress(c->o->progress_ctx, done, c->total, name, audit_elapsed(c));
}

int ch_problem_check(ch_problem *pb, const ch_check_options *o, char **report, char **svg,
                     size_t *skipped, ch_err *err)
{
    NEED(pb && o && report && svg, "ch_problem_check: no problem, options or output");
    *report = *svg = NULL;
    if (skipped) *skipped = 0;
    if (o->loop && (o->loop < CH_LOOP_POINTS_MIN || o->loop > CH_LOOP_POINTS_MAX))
        return fail(err, CH_E_USAGE, "%s", "a loop needs from " CH_STR(CH_LOOP_POINTS_MIN)
                    " to " CH_STR(CH_LOOP_POINTS_MAX) " points");
    if (o->loop_svg && o->loop <= 0) return fail(err, CH_E_USAGE, "%s", "no loop to draw");
    ch_audit a;
    ch_loop_result loop = {0};
    ch_loop_options lo;
    ch_loop_options_default(&lo);
    lo.keep_states = o->loop_svg;
    const ch_model *m = pb->model;
    audit_clock clk = {o, {0, 0}, 2 + m->n + m->nfields + m->nintegrals}; /* at most */
    clock_gettime(CLOCK_MONOTONIC, &clk.t0);
    ch_audit_hooks hooks = {audit_stop, audit_progress, &clk};
    ch_error e;
    ch_error_clear(&e);
    ch_buf out, pic;
    ch_buf_init(&out);
    ch_buf_init(&pic);
    int rc = 0;
    if (ch_audit_run(pb->ctx, pb->der, &hooks, &a, &e)) {
        rc = export_in(err, &e, pb);
    } else {
        if (skipped) *skipped = a.skipped;
        if (o->loop > 0 && ch_loop_run(pb->ctx, pb->der, (size_t)o->loop, &lo, &loop, &e))
            rc = export_in(err, &e, pb);
        else if (o->loop_svg && ch_loop_svg(&pic, pb->der, &loop, &e))
            rc = export_in(err, &e, pb);
    }
    if (!rc) {
        if (o->json) ch_audit_write_json(&out, &a, o->loop > 0 ? &loop : NULL);
        else ch_audit_write_text(&out, &a, o->loop > 0 ? &loop : NULL);
        if (out.oom || pic.oom || !(*report = ch_buf_take(&out))
            || (o->loop_svg && !(*svg = ch_buf_take(&pic)))) {
            free(*report);
            *report = NULL;
            rc = fail(err, CH_E_MEMORY, "%s", "out of memory");
        }
    }
    ch_buf_free(&out);
    ch_buf_free(&pic);
    free(loop.start);
    free(loop.end);
    return rc;
}

/* ---- running as the command run does ----------------------------------------- */

/* The form and compiler named (NULL: "reduced", "tcc"); 0, or CH_E_USAGE. */
static int form_compiler(const char *form, const char *compiler, ch_form *f, ch_compiler *cc,
                         ch_err *err)
{
    int fi = ch_form_parse(form ? form : "reduced");
    if (fi < 0) return fail(err, CH_E_USAGE, "unknown form '%s' (full, reduced, hamilton)", form);
    if (compiler && strcmp(compiler, "cc") && strcmp(compiler, "tcc"))
        return fail(err, CH_E_USAGE, "unknown compiler '%s' (tcc, cc)", compiler);
    *f = (ch_form)fi;
    *cc = compiler && !strcmp(compiler, "cc") ? CH_COMPILER_CC : CH_COMPILER_TCC;
    return 0;
}

int ch_run_args_check(int argc, char **argv, ch_err *err)
{
    chrt_args a;
    char msg[600];
    NEED(argc == 0 || argv, "ch_run_args_check: no arguments");
    if (chrt_parse_args(NULL, argc, argv, &a, NULL, NULL, msg, sizeof msg))
        return fail(err, CH_E_USAGE, "%s", msg);
    return 0;
}

int ch_run_option_takes_value(const char *arg) { return arg && chrt_option_takes_value(arg); }

const char *ch_run_option_name(int i) { return chrt_option_name(i); }

/* The plot's columns (x first for an xy plot) into v, checked against
 * the table's. */
static int plot_columns(const chrt_system *s, const ch_table *tb, const ch_run_options *o,
                        const char **v, size_t *nv, ch_err *err)
{
    *nv = 0;
    if (o->plot_x) v[(*nv)++] = o->plot_x;
    for (size_t i = 0; i < o->nplot && *nv < CH_PLOT_MAX_SERIES + 1; i++) v[(*nv)++] = o->plot_y[i];
    for (int i = 0; !o->plot_x && !o->nplot && i < s->nq && *nv < CH_PLOT_MAX_SERIES; i++)
        v[(*nv)++] = s->state_names[i];
    if (o->nplot > CH_PLOT_MAX_SERIES || (o->plot_x && o->nplot != 1))
        return fail(err, CH_E_USAGE, "%s", "an xy plot takes one column against plot_x, "
                    "a plot at most 16 columns");
    for (size_t i = 0; i < *nv; i++)
        if (ch_table_column(tb, v[i]) < 0)
            return fail(err, CH_E_USAGE, "no column '%s' to plot (t, the coordinates, "
                        "their velocities NAME', E or an output column)", v[i]);
    return 0;
}

/* chrt_main_sink with every row also kept in a table, then plotted into
 * *o->svg (also the rows before a numerical failure). */
static int run_and_plot(const chrt_system *s, const chrt_main_hooks *run, int argc,
                        char **argv, const ch_run_options *o, const char *title, ch_err *err)
{
    const char *v[CH_PLOT_MAX_SERIES + 1];
    size_t nv = 0;
    ch_table tb;
    ch_table_init(&tb);
    ch_error e;
    ch_error_clear(&e);
    int rc = ch_driver_table_columns(&tb, s, &e) ? (export_error(err, &e), -1)
             : plot_columns(s, &tb, o, v, &nv, err) ? -1 : 0;
    if (!rc) {
        chrt_sink sink;
        ch_driver_table_sink(&tb, &sink);
        chrt_main_hooks hooks = {&sink, run->rechart, run->rechart_ctx, run->ext};
        rc = chrt_main_sink(s, argc, argv, &hooks, NULL);
        if ((rc == CHRT_OK || rc == CHRT_EXIT_NUMERIC) && tb.nrows) {
            ch_buf svg;
            ch_buf_init(&svg);
            if (ch_table_plot(&svg, &tb, title, o->plot_x ? v[0] : NULL, o->plot_x ? 1 : nv,
                              o->plot_x ? v + 1 : v, &e)) {
                export_error(err, &e);
                if (!rc) rc = -1;
            } else if (!(*o->svg = ch_buf_take(&svg)) && !rc) {
                fail(err, CH_E_MEMORY, "%s", "out of memory");
                rc = -1;
            }
            ch_buf_free(&svg);
        }
    }
    ch_table_free(&tb);
    return rc;
}

int ch_problem_run(ch_problem *pb, const ch_run_options *o, int argc, char **argv,
                   ch_err *err)
{
    if (!pb || !o || argc < 1 || !argv) {
        fail(err, CH_E_USAGE, "%s", "ch_problem_run: no problem, options or arguments");
        return -1;
    }
    if (o->svg) *o->svg = NULL;
    ch_form f;
    ch_compiler cc;
    chrt_args args;
    char msg[600];
    if (form_compiler(o->form, o->compiler, &f, &cc, err)) return -1;
    if (chrt_parse_args(NULL, argc - 1, argv + 1, &args, NULL, NULL, msg, sizeof msg)) {
        fail(err, CH_E_USAGE, "%s", msg);
        return -1;
    }
    ch_error e;
    ch_error_clear(&e);
    ch_compiled *c = NULL;
    ch_charts *charts = NULL;
    char title[200];
    snprintf(title, sizeof title, "%s (%s form)", pb->model->name, ch_form_name(f));
    int rc = 0;
    if (ch_compile_form(pb->ctx, pb->der, f, NULL, cc, &c, &e)) {
        export_in(err, &e, pb);
        rc = -1;
    } else if (!o->no_rechart && c->sys.chart_quality
               && !(charts = ch_charts_new(pb->ctx, pb->der, f, cc, &c->sys,
                                           args.opt.chart_min))) {
        fail(err, CH_E_MEMORY, "%s", "out of memory");
        rc = -1;
    }
    /* --method cvode: SUNDIALS behind the runtime's loop */
    ch_cvode_ext cv;
    ch_cvode_ext_init(&cv);
    chrt_main_hooks hooks = {NULL, charts ? ch_charts_rechart : NULL, charts, &cv.ops};
    if (!rc)
        rc = o->svg ? run_and_plot(&c->sys, &hooks, argc, argv, o, title, err)
                    : chrt_main_sink(&c->sys, argc, argv, &hooks, NULL);
    ch_cvode_ext_free(&cv);
    ch_charts_free(charts);
    ch_compiled_free(c);
    return rc;
}

/* ---- compiled systems --------------------------------------------------------- */

ch_system *ch_system_compile(const ch_problem *pb, const char *form,
                             const char *compiler, ch_err *err)
{
    NEED_PTR(pb, "ch_system_compile: no problem");
    ch_form f;
    ch_compiler cc;
    if (form_compiler(form, compiler, &f, &cc, err)) return NULL;
    ch_system *s = calloc(1, sizeof *s);
    if (s) ch_cvode_ext_init(&s->cv);
    if (!s) {
        fail(err, CH_E_MEMORY, "%s", "out of memory");
        return NULL;
    }
    ch_error e;
    ch_error_clear(&e);
    if (ch_compile_form(pb->ctx, pb->der, f, NULL, cc, &s->c, &e)) {
        export_error(err, &e);
        ch_system_free(s);
        return NULL;
    }
    const chrt_system *sys = s->sys = &s->c->sys;
    s->form = f, s->cc = cc, s->rechart = 1, s->chart_min = CHRT_CHART_MIN;
    for (size_t a = 0, len = 0; a < pb->der->lag.k && len + 1 < sizeof s->chart; a++) {
        int w = snprintf(s->chart + len, sizeof s->chart - len, "%s%s'", a ? " " : "",
                         ch_sym_of(pb->model->q[pb->der->mf.dep[a]])->name);
        if (w < 0) break;
        len += (size_t)w;
    }
    memcpy(s->chart0, s->chart, sizeof s->chart);
    s->file = strdup(pb->file);
    s->len = pb->len;
    s->max_nodes = pb->max_nodes;
    if ((s->text = malloc(pb->len + 1))) memcpy(s->text, pb->text, pb->len);
    /* calloc(0) may return NULL: allocate at least one of each. */
    size_t nx = (size_t)sys->nx + 1, np = (size_t)sys->np + 1, nq = (size_t)sys->nq + 1;
    s->x = calloc(nx, sizeof *s->x);
    s->p = calloc(np, sizeof *s->p);
    s->q = calloc(nq, sizeof *s->q);
    s->qt = calloc(nq, sizeof *s->qt);
    s->scratch = calloc(nx, sizeof *s->scratch);
    s->vs = calloc(2 * nq, sizeof *s->vs);
    chrt_options o;
    chrt_options_default(&o);
    s->rtol = o.rtol, s->atol = o.atol, s->dt_max = o.dt_max, s->max_steps = o.max_steps;
    if (!s->x || !s->p || !s->q || !s->qt || !s->scratch || !s->vs || !s->file || !s->text) {
        ch_system_free(s);
        fail(err, CH_E_MEMORY, "%s", "out of memory");
        return NULL;
    }
    if (sys->np) memcpy(s->p, sys->param_defaults, (size_t)sys->np * sizeof *s->p);
    sys->initial(s->x);
    s->vs[0] = NAN;
    return s;
}

void ch_system_free(ch_system *s)
{
    if (!s) return;
    ch_cvode_ext_free(&s->cv);
    ch_table_free(&s->cols);
    ch_charts_free(s->charts);
    if (s->rctx) ch_ctx_free(s->rctx);
    free(s->file);
    free(s->text);
    ch_compiled_free(s->c);
    free(s->x);
    free(s->p);
    free(s->q);
    free(s->qt);
    free(s->scratch);
    free(s->vs);
    free(s);
}

const char *ch_system_prefix(const ch_system *s) { return s ? s->sys->name : NULL; }
int ch_system_nx(const ch_system *s) { return s ? s->sys->nx : 0; }
int ch_system_nq(const ch_system *s) { return s ? s->sys->nq : 0; }
int ch_system_np(const ch_system *s) { return s ? s->sys->np : 0; }

const char *ch_system_state_name(const ch_system *s, int i)
{
    return s && i >= 0 && i < s->sys->nx ? s->sys->state_names[i] : NULL;
}

const char *ch_system_param_name(const ch_system *s, int i)
{
    return s && i >= 0 && i < s->sys->np ? s->sys->param_names[i] : NULL;
}

double ch_system_param_default(const ch_system *s, int i)
{
    return s && i >= 0 && i < s->sys->np ? s->sys->param_defaults[i] : NAN;
}

static int find(const char *const *names, int n, const char *name)
{
    for (int i = 0; name && i < n; i++)
        if (!strcmp(names[i], name)) return i;
    return -1;
}

int ch_system_state_index(const ch_system *s, const char *name)
{
    return s ? find(s->sys->state_names, s->sys->nx, name) : -1;
}

int ch_system_param_index(const ch_system *s, const char *name)
{
    return s && s->sys->np ? find(s->sys->param_names, s->sys->np, name) : -1;
}

ch_rhs_fn ch_system_rhs(const ch_system *s) { return s ? ch_compiled_of(s->sys)->rhs : NULL; }
ch_energy_fn ch_system_energy_fn(const ch_system *s)
{
    return s ? ch_compiled_of(s->sys)->energy : NULL;
}

/* ---- parameters ------------------------------------------------------------------ */

const double *ch_system_params(const ch_system *s) { return s ? s->p : NULL; }

int ch_system_set_param(ch_system *s, const char *name, double value,
                        ch_err *err)
{
    NEED(s && name, "ch_system_set_param: no system or name");
    int i = ch_system_param_index(s, name);
    if (i < 0) return fail(err, CH_E_USAGE, "'%s' is not a parameter", name);
    /* as --set on the command line */
    if (!isfinite(value)) return fail(err, CH_E_USAGE, "%s: the value is not finite", name);
    s->p[i] = value;
    return 0;
}

/* ---- state ------------------------------------------------------------------------ */

double ch_system_time(const ch_system *s) { return s ? s->t : NAN; }
const double *ch_system_state(const ch_system *s) { return s ? s->x : NULL; }

/* Newton's start at the current state (NULL: the model's initial). */
static const double *vstart(const ch_system *s)
{
    return isnan(s->vs[0]) ? NULL : s->vs;
}

/* The state changed: its velocities, from start, become Newton's start
 * (unknown where they cannot be computed). */
static void track(ch_system *s, const double *start)
{
    int nq = s->sys->nq;
    double *v = s->vs + nq;
    int ok = s->sys->velocities(s->t, s->x, s->p, start, v) == 0;
    for (int i = 0; ok && i < nq; i++) ok = isfinite(v[i]);
    if (ok) memcpy(s->vs, v, (size_t)nq * sizeof *v);
    else s->vs[0] = NAN;
}

/* x from s->q, s->qt at time t under the current parameters. */
static int state_from(ch_system *s, double t, double *x, ch_err *err)
{
    if (s->sys->state_from(t, s->q, s->qt, s->p, x))
        return fail(err, CH_E_NUMERIC,
                    "no state of %s for these coordinates and velocities "
                    "(singular)", s->sys->name);
    return 0;
}

int ch_system_reset(ch_system *s, ch_err *err)
{
    NEED(s, "ch_system_reset: no system");
    /* the model's initial state is the first chart's (a later chart's
     * initial() is the state where it was switched to) */
    const chrt_system *sys = s->sys = &s->c->sys;
    memcpy(s->chart, s->chart0, sizeof s->chart);
    sys->initial(s->x);
    s->t = 0;
    s->vs[0] = NAN;
    if (sys->np == 0 || !memcmp(s->p, sys->param_defaults, (size_t)sys->np * sizeof *s->p))
        return 0;
    /* The model's coordinates and velocities as initial() saw them (with
     * the defaults), mapped to the form's state under the current ones. */
    memcpy(s->q, s->x, (size_t)sys->nq * sizeof *s->q);
    if (sys->velocities(0, s->x, sys->param_defaults, NULL, s->qt))
        return fail(err, CH_E_NUMERIC, "%s",
                    "the velocities of the model's initial state are singular");
    if (state_from(s, 0, s->x, err)) return CH_E_NUMERIC;
    track(s, s->qt);
    return 0;
}

int ch_system_set_state(ch_system *s, const char *name, double value,
                        ch_err *err)
{
    NEED(s && name, "ch_system_set_state: no system or name");
    if (!isfinite(value)) return fail(err, CH_E_USAGE, "%s: the value is not finite", name);
    const chrt_system *sys = s->sys;
    size_t len = strlen(name);
    int k = find(sys->state_names, sys->nq, name), vel = 0;
    if (k < 0 && len > 1 && name[len - 1] == '\'') {
        for (int i = 0; i < sys->nq && k < 0; i++)
            if (strlen(sys->state_names[i]) == len - 1
                && !strncmp(sys->state_names[i], name, len - 1))
                k = i;
        vel = k >= 0;
    }
    if (k < 0) {
        int i = ch_system_state_index(s, name);
        if (i < 0) return fail(err, CH_E_USAGE, "'%s' is not a state variable", name);
        s->x[i] = value;
        track(s, vstart(s));
        return 0;
    }
    memcpy(s->q, s->x, (size_t)sys->nq * sizeof *s->q);
    if (sys->velocities(s->t, s->x, s->p, vstart(s), s->qt))
        return fail(err, CH_E_NUMERIC, "%s", "the velocities of the current state are singular");
    (vel ? s->qt : s->q)[k] = value;
    double *x = s->scratch; /* keep the state when state_from fails */
    if (state_from(s, s->t, x, err)) return CH_E_NUMERIC;
    memcpy(s->x, x, (size_t)sys->nx * sizeof *s->x);
    track(s, s->qt);
    return 0;
}

int ch_system_set_initial(ch_system *s, size_t n, const char *const *names,
                          const double *values, char *warning, size_t wlen, ch_err *err)
{
    NEED(s && ((names && values) || n == 0), "ch_system_set_initial: no system or values");
    chrt_init *init = calloc(n + 1, sizeof *init);
    double *x = s->scratch; /* the state stays as it was on failure */
    char msg[600];
    if (!init) return fail(err, CH_E_MEMORY, "%s", "out of memory");
    for (size_t i = 0; i < n; i++) {
        init[i].name = names[i], init[i].len = strlen(names[i]), init[i].value = values[i];
        if (!isfinite(values[i])) {
            free(init);
            return fail(err, CH_E_USAGE, "%s: the value is not finite", names[i]);
        }
    }
    const chrt_system *first = &s->c->sys;
    int rc = chrt_initial_state(first, s->p, n, init, x, warning, wlen, msg, sizeof msg);
    free(init);
    if (rc)
        return fail(err, rc == CHRT_EXIT_USAGE ? CH_E_USAGE : rc == CHRT_EXIT_NUMERIC
                    ? CH_E_NUMERIC : CH_E_MEMORY, "%s", msg);
    s->sys = first;
    memcpy(s->chart, s->chart0, sizeof s->chart);
    s->t = 0;
    memcpy(s->x, x, (size_t)first->nx * sizeof *s->x);
    s->vs[0] = NAN;
    track(s, NULL);
    return 0;
}

int ch_system_set_state_vector(ch_system *s, double t, const double *x,
                               ch_err *err)
{
    NEED(s && x, "ch_system_set_state_vector: no system or state");
    if (!isfinite(t)) return fail(err, CH_E_USAGE, "%s", "the time is not finite");
    for (int i = 0; i < s->sys->nx; i++)
        if (!isfinite(x[i]))
            return fail(err, CH_E_USAGE, "%s", "the state is not finite");
    s->t = t;
    memcpy(s->x, x, (size_t)s->sys->nx * sizeof *s->x);
    track(s, vstart(s));
    return 0;
}

int ch_system_velocities(const ch_system *s, double *qt, ch_err *err)
{
    NEED(s && qt, "ch_system_velocities: no system or output array");
    if (s->sys->velocities(s->t, s->x, s->p, vstart(s), qt))
        return fail(err, CH_E_NUMERIC, "%s", "the velocities are singular at this state");
    return 0;
}

double ch_system_energy(const ch_system *s)
{
    if (!s) return NAN;
    return s->sys->energy(s->t, s->x, s->p, vstart(s));
}

/* ---- integration ------------------------------------------------------------------ */

int ch_system_set_tolerances(ch_system *s, double rtol, double atol,
                             double dt_max, ch_err *err)
{
    NEED(s, "ch_system_set_tolerances: no system");
    chrt_options o;
    char msg[300];
    chrt_options_default(&o);
    o.rtol = rtol, o.atol = atol, o.dt_max = dt_max;
    if (chrt_options_check(&o, 0, msg, sizeof msg))
        return fail(err, CH_E_USAGE, "%s", msg);
    s->rtol = rtol, s->atol = atol, s->dt_max = dt_max;
    return 0;
}

int ch_system_set_max_steps(ch_system *s, double max_steps, ch_err *err)
{
    NEED(s, "ch_system_set_max_steps: no system");
    if (!(max_steps >= 1 && max_steps <= 1e15 && max_steps == floor(max_steps)))
        return fail(err, CH_E_USAGE, "%s", "max_steps must be an integer in [1, 1e15]");
    s->max_steps = max_steps;
    return 0;
}

void ch_system_stats(const ch_system *s, ch_stats *st)
{
    if (!st) return;
    if (!s) {
        memset(st, 0, sizeof *st);
        return;
    }
    *st = s->stats;
}

static void api_note(void *ctx, double t, const char *text)
{
    ch_stats *st = ctx;
    (void)t; /* the note names its time */
    snprintf(st->note, sizeof st->note, "%s", text);
}

/* chrt_options.rechart for the system (rctx): the model is derived again
 * in the system's own context the first time (chart.h). */
static int api_rechart(void *ctx, double t, double *x, const double *p,
                       const double *vs, const chrt_system **sys, char *note,
                       size_t notelen)
{
    ch_system *s = ctx;
    if (!s->charts) {
        ch_error e;
        ch_error_clear(&e);
        ch_model *m = NULL;
        ch_mechanics *d = NULL;
        int rc = (s->rctx = ch_ctx_new()) ? 0 : ch_error_set(&e, CH_ERR_MEMORY, NULL, 0, 0, "out of memory");
        if (!rc) ch_ctx_set_node_limit(s->rctx, s->max_nodes);
        if (!rc) rc = ch_model_parse(s->rctx, s->file, s->text, s->len, &m, &e);
        if (!rc) rc = ch_mechanics_derive(s->rctx, m, &d, &e);
        if (!rc && !(s->charts = ch_charts_new(s->rctx, d, s->form, s->cc, &s->c->sys,
                                                 s->chart_min)))
            rc = ch_error_set(&e, CH_ERR_MEMORY, NULL, 0, 0, "out of memory");
        if (rc) {
            snprintf(note, notelen, "cannot derive the model again: %s", e.msg);
            if (s->rctx) ch_ctx_free(s->rctx);
            s->rctx = NULL;
            return e.code == CH_ERR_MEMORY ? -1 : 1; /* (-1: chrt_options.rechart) */
        }
    }
    int rc = ch_charts_rechart(s->charts, t, x, p, vs, sys, note, notelen);
    if (!rc) ch_charts_dependent(s->charts, *sys, s->chart, sizeof s->chart);
    return rc;
}

const char *ch_system_chart(const ch_system *s)
{
    if (!s) return NULL;
    return s->sys->chart_quality ? s->chart : "";
}

double ch_system_chart_quality(const ch_system *s)
{
    if (!s) return NAN;
    return s->sys->chart_quality ? s->sys->chart_quality(s->t, s->x, s->p, vstart(s)) : 1.0;
}

int ch_system_set_rechart(ch_system *s, int on, double chart_min, ch_err *err)
{
    NEED(s, "ch_system_set_rechart: no system");
    if (!(chart_min >= 0 && chart_min < 0.25))
        return fail(err, CH_E_USAGE, "%s", "chart_min must be a number in [0, 0.25)");
    s->rechart = on != 0;
    s->chart_min = chart_min;
    if (s->charts) ch_charts_set_chart_min(s->charts, chart_min);
    return 0;
}

int ch_parse_value(const char *s, double *v, ch_err *err)
{
    NEED(s && v, "ch_parse_value: no text or output");
    int rc = chrt_parse_value(s, v);
    if (rc == -2) return fail(err, CH_E_USAGE, "'%s' underflows to 0 (below 4.9e-324)", s);
    if (rc) return fail(err, CH_E_USAGE, "'%s' is not a finite number or constant expression", s);
    return 0;
}

int ch_method_adaptive(const char *method)
{
    int m = method ? chrt_method_parse(method) : -1;
    return m < 0 ? -1 : chrt_method_adaptive((chrt_method)m);
}

const char *ch_method_name(const char *method)
{
    int m = method ? chrt_method_parse(method) : -1;
    return m < 0 ? NULL : chrt_method_name((chrt_method)m);
}

int ch_system_ncolumns(const ch_system *s) { return s ? 2 + 2 * s->sys->nq + s->sys->nout : 0; }

const char *ch_system_column_name(const ch_system *s, int i)
{
    if (!s || i < 0 || i >= ch_system_ncolumns(s)) return NULL;
    ch_system *w = (ch_system *)(uintptr_t)s; /* a cache of names, not the system's state */
    if (w->cols_of != s->sys) {
        ch_error e;
        ch_table_free(&w->cols);
        ch_table_init(&w->cols);
        w->cols_of = ch_driver_table_columns(&w->cols, s->sys, &e) ? NULL : s->sys;
        if (!w->cols_of) return NULL;
    }
    return s->cols.names[i];
}

/* The rows' sink for chrt_integrate: rows to the caller, notes to the
 * caller and into the statistics. */
typedef struct {
    const ch_rows *rows;
    ch_stats *stats;
} rows_sink;

static int sink_row(void *ctx, const double *v, int n)
{
    const rows_sink *k = ctx;
    return k->rows->row ? k->rows->row(k->rows->ctx, v, n) : 0;
}

static void sink_note(void *ctx, double t, const char *text)
{
    const rows_sink *k = ctx;
    snprintf(k->stats->note, sizeof k->stats->note, "%s", text);
    if (k->rows->note) k->rows->note(k->rows->ctx, t, text);
}

int ch_system_integrate(ch_system *s, double t1, const char *method,
                        double dt, ch_err *err)
{
    return ch_system_integrate_rows(s, t1, method, dt, NULL, err);
}

int ch_system_integrate_rows(ch_system *s, double t1, const char *method, double dt,
                             const ch_rows *rows, ch_err *err)
{
    NEED(s, "ch_system_integrate: no system");
    int m = chrt_method_parse(method ? method : "dop853");
    memset(&s->stats, 0, sizeof s->stats);
    if (m < 0)
        return fail(err, CH_E_USAGE,
                    "unknown method '%s' (dop853, rk45, cvode, euler, midpoint, rk4)", method);
    if (!(isfinite(dt) && (dt > 0 || (dt == 0 && chrt_method_adaptive((chrt_method)m)))))
        return fail(err, CH_E_USAGE, "%s",
                    "dt must be a positive finite number (0: automatic first step "
                    "of an adaptive method)");
    if (!(isfinite(t1) && t1 >= s->t))
        return fail(err, CH_E_USAGE, "%s", "t1 must be finite and not before the current time");
    chrt_options o;
    chrt_options_default(&o);
    o.method = (chrt_method)m;
    o.dt = dt, o.t1 = t1;
    o.rtol = s->rtol, o.atol = s->atol;
    o.dt_max = chrt_method_adaptive(o.method) ? s->dt_max : 0;
    o.max_steps = s->max_steps;
    o.chart_min = s->chart_min;
    if (s->rechart) o.rechart = api_rechart, o.rechart_ctx = s;
    o.ext = &s->cv.ops;
    /* Without rows: a sink only for the notes of re-charts. */
    chrt_sink notes = {NULL, api_note, &s->stats};
    rows_sink rk = {rows, &s->stats};
    chrt_sink tee = {sink_row, sink_note, &rk};
    if (rows) o.every = rows->every > 0 ? rows->every : 1, o.dt_out = rows->dt_out;
    chrt_stats st;
    char msg[512];
    const chrt_system *sys = s->sys;
    int rc = chrt_integrate(&sys, &o, s->t, s->x, s->p, s->vs, rows ? &tee : &notes, &st,
                            &s->t, msg, sizeof msg);
    s->sys = sys; /* x is in the last chart's state, also after a failure */
    s->stats.accepted = st.accepted;
    s->stats.rejected = st.rejected;
    s->stats.rhs_calls = st.rhs_calls;
    s->stats.recharts = st.recharts;
    s->stats.events = st.events;
    if (rc == CHRT_EXIT_USAGE) return fail(err, CH_E_USAGE, "%s", msg);
    if (rc == CHRT_EXIT_NUMERIC) return fail(err, CH_E_NUMERIC, "%s", msg);
    if (rc) return fail(err, CH_E_MEMORY, "%s", msg);
    return 0;
}
