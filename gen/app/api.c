/* api.c — the public library API (chetaev.h) over the internal modules.
 *
 * A ch_problem owns a context with the model and its mechanics. A
 * ch_system owns one ch_compiled (compile.h: the path `chetaev run` takes)
 * plus the caller-visible time, state and parameters and the integrator's
 * work space; it keeps no pointer into the problem. */
#define _POSIX_C_SOURCE 200809L
#include "app/chetaev.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jit/chart.h"
#include "jit/compile.h"
#include "jit/cvode.h"
#include "mech/mechanics.h"
#include "codegen/emit_c.h"
#include "lang/model.h"
#include "runtime/simulate.h"

/* The public codes are the internal ones under other names. */
_Static_assert(CH_E_MODEL == (int)CH_ERR_MODEL && CH_E_USAGE == (int)CH_ERR_USAGE
                   && CH_E_NUMERIC == (int)CH_ERR_NUMERIC
                   && CH_E_LIMIT == (int)CH_ERR_LIMIT
                   && CH_E_MEMORY == (int)CH_ERR_MEMORY && CH_E_IO == (int)CH_ERR_IO
                   && CH_E_MATH == (int)CH_ERR_MATH,
               "ch_err codes must equal ch_status");

struct ch_problem {
    ch_ctx *ctx;
    ch_model *model;
    ch_mechanics *der;
    char *file; /* the model keeps a pointer to it */
    char *text; /* the model's source, for the systems' re-charting */
    size_t len;
};

struct ch_system {
    ch_compiled *c;
    const chrt_system *sys; /* the current chart's: &c->sys, or one of charts' */
    /* Re-charting (chart.h): the model's source, derived again in a context
     * of the system's own the first time the chart degrades, so that a
     * system never depends on its problem. */
    char *file, *text;
    size_t len;
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
};

/* ---- errors ---------------------------------------------------------------- */

static void export_error(ch_err *out, const ch_error *in)
{
    if (!out) return;
    out->code = (int)in->code;
    out->line = in->line;
    out->col = in->col;
    snprintf(out->file, sizeof out->file, "%s", in->file ? in->file : "");
    snprintf(out->msg, sizeof out->msg, "%s", in->msg);
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

/* Parses (text != NULL) or loads the file, then derives. */
static ch_problem *problem_new(const char *file, const char *text, size_t len,
                               ch_err *err)
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
    if (!rc) rc = ch_model_parse(pb->ctx, pb->file, pb->text, pb->len, &pb->model, &e);
    if (!rc) rc = ch_mechanics_derive(pb->ctx, pb->model, &pb->der, &e);
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
    return problem_new(path, NULL, 0, err);
}

ch_problem *ch_problem_parse(const char *name, const char *text, size_t len,
                             ch_err *err)
{
    /* (no text is an error, not a request to read a file of that name) */
    NEED_PTR(text, "ch_problem_parse: no model text");
    return problem_new(name ? name : "model", text, len, err);
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
    if (pb->ctx) ch_ctx_free(pb->ctx);
    free(pb->file);
    free(pb->text);
    free(pb);
}

const char *ch_problem_name(const ch_problem *pb)
{
    return pb ? pb->model->name : NULL;
}

/* ---- compiled systems --------------------------------------------------------- */

ch_system *ch_system_compile(const ch_problem *pb, const char *form,
                             const char *compiler, ch_err *err)
{
    NEED_PTR(pb, "ch_system_compile: no problem");
    int f = ch_form_parse(form ? form : "reduced");
    if (f < 0) {
        fail(err, CH_E_USAGE, "unknown form '%s' (full, reduced, hamilton)", form);
        return NULL;
    }
    ch_compiler cc = CH_COMPILER_TCC;
    if (compiler && !strcmp(compiler, "cc"))
        cc = CH_COMPILER_CC;
    else if (compiler && strcmp(compiler, "tcc")) {
        fail(err, CH_E_USAGE, "unknown compiler '%s' (tcc, cc)", compiler);
        return NULL;
    }
    ch_system *s = calloc(1, sizeof *s);
    if (s) ch_cvode_ext_init(&s->cv);
    if (!s) {
        fail(err, CH_E_MEMORY, "%s", "out of memory");
        return NULL;
    }
    ch_error e;
    ch_error_clear(&e);
    if (ch_compile_form(pb->ctx, pb->der, (ch_form)f, NULL, cc, &s->c, &e)) {
        export_error(err, &e);
        ch_system_free(s);
        return NULL;
    }
    const chrt_system *sys = s->sys = &s->c->sys;
    s->form = (ch_form)f, s->cc = cc, s->rechart = 1, s->chart_min = CHRT_CHART_MIN;
    for (size_t a = 0, len = 0; a < pb->der->lag.k && len + 1 < sizeof s->chart; a++) {
        int w = snprintf(s->chart + len, sizeof s->chart - len, "%s%s'", a ? " " : "",
                         ch_sym_of(pb->model->q[pb->der->mf.dep[a]])->name);
        if (w < 0) break;
        len += (size_t)w;
    }
    memcpy(s->chart0, s->chart, sizeof s->chart);
    s->file = strdup(pb->file);
    s->len = pb->len;
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

int ch_system_integrate(ch_system *s, double t1, const char *method,
                        double dt, ch_err *err)
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
    /* Rows are not kept: a sink only for the notes of re-charts. */
    chrt_sink notes = {NULL, api_note, &s->stats};
    chrt_stats st;
    char msg[512];
    const chrt_system *sys = s->sys;
    int rc = chrt_integrate(&sys, &o, s->t, s->x, s->p, s->vs, &notes, &st, &s->t, msg,
                            sizeof msg);
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
