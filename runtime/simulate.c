/* simulate.c — the time loop, the CSV writer and the option parser shared
 * by `chetaev run` and the emitted driver. */
#include "simulate.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* Above this many steps the step count no longer fits comfortably and no
 * fixed-step run is meaningful. */
#define CHRT_MAX_STEPS 1e12

void chrt_options_default(chrt_options *o)
{
    o->method = CHRT_RK4;
    o->dt = 1e-3;
    o->t1 = 1;
    o->every = 1;
    o->project = 0;
    o->chart_min = CHRT_CHART_MIN;
    o->rechart = NULL;
    o->rechart_ctx = NULL;
}

static int fail(char *errbuf, size_t errlen, int code, const char *fmt, ...)
{
    if (errbuf && errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(errbuf, errlen, fmt, ap);
        va_end(ap);
    }
    return code;
}

/* ---- CSV -------------------------------------------------------------- */

static void put_header(const chrt_system *s, FILE *out)
{
    int i;
    fputs("t", out);
    for (i = 0; i < s->nq; i++) fprintf(out, ",%s", s->state_names[i]);
    for (i = 0; i < s->nq; i++) fprintf(out, ",%s'", s->state_names[i]);
    fputs(",E", out);
    for (i = 0; i < s->nout; i++) fprintf(out, ",%s", s->output_names[i]);
    fputc('\n', out);
}

/* Scratch of one run: state, integrator work, one row's derived values. */
typedef struct {
    double *x, *qt, *outv;
    chrt_stepper st;
} chrt_work;

static int work_alloc(chrt_work *w, const chrt_system *s)
{
    size_t nx = (size_t)s->nx;
    w->x = malloc((nx ? nx : 1) * sizeof *w->x);
    w->qt = malloc((s->nq ? (size_t)s->nq : 1) * sizeof *w->qt);
    w->outv = malloc((s->nout ? (size_t)s->nout : 1) * sizeof *w->outv);
    w->st.nx = s->nx;
    w->st.work = malloc((nx ? 6 * nx : 1) * sizeof *w->st.work);
    return w->x && w->qt && w->outv && w->st.work ? 0 : -1;
}

static void work_free(chrt_work *w)
{
    free(w->x);
    free(w->qt);
    free(w->outv);
    free(w->st.work);
}

static int state_finite(const double *x, int n);

/* Computes and writes one row; nonzero when the derived values fail: an
 * index into row_failure. A NaN velocity (0/0 in a Legendre inverse) is
 * no less a failure than a singular solve; E may be HUGE_VAL by contract. */
static int put_row(const chrt_system *s, chrt_work *w, double t,
                   const double *p, FILE *out)
{
    int i;
    if (s->velocities(t, w->x, p, w->qt)) return 1;
    if (!state_finite(w->qt, s->nq)) return 2;
    if (s->nout && s->outputs(t, w->x, p, w->outv)) return 1;
    double e = s->energy(t, w->x, p);
    fprintf(out, "%.17g", t);
    for (i = 0; i < s->nq; i++) fprintf(out, ",%.17g", w->x[i]);
    for (i = 0; i < s->nq; i++) fprintf(out, ",%.17g", w->qt[i]);
    fprintf(out, ",%.17g", e);
    for (i = 0; i < s->nout; i++) fprintf(out, ",%.17g", w->outv[i]);
    fputc('\n', out);
    return 0;
}

static int state_finite(const double *x, int n)
{
    int i;
    for (i = 0; i < n; i++)
        if (!isfinite(x[i])) return 0;
    return 1;
}

static int check_options(const chrt_options *o, long *nsteps, char *errbuf,
                         size_t errlen)
{
    if (chrt_method_name(o->method)[0] == '?')
        return fail(errbuf, errlen, CHRT_EXIT_USAGE, "unknown integration method");
    if (!(isfinite(o->dt) && o->dt > 0))
        return fail(errbuf, errlen, CHRT_EXIT_USAGE,
                    "--dt must be a positive finite number (got %g)", o->dt);
    if (!(isfinite(o->t1) && o->t1 >= 0))
        return fail(errbuf, errlen, CHRT_EXIT_USAGE,
                    "--t1 must be a nonnegative finite number (got %g)", o->t1);
    if (o->every < 1)
        return fail(errbuf, errlen, CHRT_EXIT_USAGE,
                    "--every must be a positive integer (got %ld)", o->every);
    double r = o->t1 / o->dt;
    if (r > CHRT_MAX_STEPS)
        return fail(errbuf, errlen, CHRT_EXIT_USAGE,
                    "--t1/--dt asks for %g steps; at most %g are allowed", r,
                    CHRT_MAX_STEPS);
    double n = ceil(r - 1e-9 * (r > 1 ? r : 1));
    *nsteps = n > 0 ? (long)n : 0;
    return CHRT_OK;
}

const char *const chrt_step_failure[4] = {
    "", "the right-hand side failed: singular system or Newton not converged", "the new state is not finite",
    "the right-hand side failed: the chart is numerically singular"};
static const char *const row_failure[] = {
    "", "the velocities or outputs are singular", "the velocities are not finite"};

/* The note where there is no re-charting: the dependent velocities are
 * the coordinates whose velocity (reduced) or momentum (hamilton) is not
 * a state variable. */
static void no_rechart_note(const chrt_system *s, char *note, size_t size)
{
    char dep[160];
    size_t len = 0;
    int i, j;
    dep[0] = 0;
    for (i = 0; i < s->nq && len + 1 < sizeof dep; i++) {
        const char *q = s->state_names[i];
        size_t ql = strlen(q);
        int indep = 0, w;
        for (j = s->nq; j < s->nx && !indep; j++) {
            const char *v = s->state_names[j];
            if (v[0] == 'y' && v[1] == '_' && strcmp(v + 2, q) == 0) indep = 1;
            if (strncmp(v, q, ql) == 0 && v[ql] == '\'' && v[ql + 1] == 0) indep = 1;
        }
        if (indep) continue;
        w = snprintf(dep + len, sizeof dep - len, "%s%s'", len ? " " : "", q);
        if (w < 0) break;
        len += (size_t)w;
    }
    snprintf(note, size, "the block G_d of the dependent velocities %s of the "
             "constraint Jacobian (or the Legendre map) is near-singular, and %s "
             "cannot change its chart here (no re-charting: --no-rechart, or a "
             "driver program)", dep, s->name);
}

int chrt_chart_check(const chrt_system **s, const chrt_options *o, double t,
                     double *x, const double *p, char *errbuf, size_t errlen)
{
    char note[256];
    double q;
    if (!(*s)->chart_quality) return CHRT_OK;
    q = (*s)->chart_quality(t, x, p);
    if (q >= o->chart_min) return CHRT_OK;
    note[0] = 0;
    if (!o->rechart)
        no_rechart_note(*s, note, sizeof note);
    else if (o->rechart(o->rechart_ctx, t, x, p, s, note, sizeof note) == 0)
        return CHRT_OK;
    return fail(errbuf, errlen, CHRT_EXIT_NUMERIC,
                "numerical failure at t = %.17g: the chart is singular (quality "
                "%.3g < %g): %s", t, q, o->chart_min, note);
}

static int run_loop(const chrt_system *s, const chrt_options *o, long nsteps,
                    chrt_work *w, const double *p, FILE *out, char *errbuf,
                    size_t errlen)
{
    long k;
    int rc;
    double t = 0;
    if ((rc = chrt_chart_check(&s, o, t, w->x, p, errbuf, errlen)) != 0) return rc;
    if (o->project && s->project && (s->project(t, w->x, p) || !state_finite(w->x, s->nx)))
        return fail(errbuf, errlen, CHRT_EXIT_NUMERIC,
                    "numerical failure at t = %.17g (step 0): the projection "
                    "of the initial state failed", t);
    if (!state_finite(w->x, s->nx))
        return fail(errbuf, errlen, CHRT_EXIT_NUMERIC,
                    "numerical failure at t = 0 (step 0): the initial state is not finite");
    if ((rc = put_row(s, w, t, p, out)) != 0)
        return fail(errbuf, errlen, CHRT_EXIT_NUMERIC,
                    "numerical failure at t = 0 (step 0): %s at the initial "
                    "state", row_failure[rc]);
    for (k = 0; k < nsteps; k++) {
        double tn = k + 1 < nsteps ? (double)(k + 1) * o->dt : o->t1;
        rc = chrt_step(&w->st, o->method, s->rhs, t, tn - t, w->x, p);
        if (rc)
            return fail(errbuf, errlen, CHRT_EXIT_NUMERIC,
                        "numerical failure at t = %.17g (step %ld): %s", t,
                        k + 1, chrt_step_failure[rc >= 1 && rc <= 3 ? rc : 1]);
        if (o->project && s->project
            && (s->project(tn, w->x, p) || !state_finite(w->x, s->nx)))
            return fail(errbuf, errlen, CHRT_EXIT_NUMERIC,
                        "numerical failure at t = %.17g (step %ld): the "
                        "projection onto the constraints failed", tn, k + 1);
        t = tn;
        if ((rc = chrt_chart_check(&s, o, t, w->x, p, errbuf, errlen)) != 0) return rc;
        if ((k + 1) % o->every == 0 && (rc = put_row(s, w, t, p, out)) != 0)
            return fail(errbuf, errlen, CHRT_EXIT_NUMERIC,
                        "numerical failure at t = %.17g (step %ld): %s", t,
                        k + 1, row_failure[rc]);
    }
    return CHRT_OK;
}

int chrt_simulate(const chrt_system *s, const chrt_options *o,
                  const double *x0, const double *p, FILE *out,
                  char *errbuf, size_t errlen)
{
    long nsteps = 0;
    int rc = check_options(o, &nsteps, errbuf, errlen);
    if (rc) return rc;
    chrt_work w;
    if (work_alloc(&w, s)) {
        work_free(&w);
        return fail(errbuf, errlen, CHRT_EXIT_IO, "out of memory");
    }
    memcpy(w.x, x0, (size_t)s->nx * sizeof *w.x);
    put_header(s, out);
    rc = run_loop(s, o, nsteps, &w, p, out, errbuf, errlen);
    work_free(&w);
    /* The rows before a failure are part of the result: flush them too. */
    if (fflush(out) != 0 || ferror(out)) {
        if (rc == CHRT_OK)
            rc = fail(errbuf, errlen, CHRT_EXIT_IO, "cannot write the CSV: %s",
                      strerror(errno));
    }
    return rc;
}

/* ---- options ------------------------------------------------------------ */

static const char *const valued[] = {"--method", "--dt", "--t1", "--every",
                                     "--set", "--init", "-o", "--chart-min"};

int chrt_option_takes_value(const char *arg)
{
    size_t k;
    for (k = 0; k < sizeof valued / sizeof valued[0]; k++)
        if (strcmp(arg, valued[k]) == 0) return 1;
    return 0;
}


/* 1 when s is a decimal number as the model language writes it, with an
 * optional sign: digits, an optional fraction, an optional exponent
 * ("1", "-2.5", ".5", "5.", "1e-3"). strtod alone would also take hex,
 * "inf", "nan" and leading blanks, which no user means as a value. */
static int is_decimal(const char *s)
{
    size_t digits = 0;
    if (*s == '+' || *s == '-') s++;
    for (; *s >= '0' && *s <= '9'; s++) digits++;
    if (*s == '.')
        for (s++; *s >= '0' && *s <= '9'; s++) digits++;
    if (!digits) return 0;
    if (*s == 'e' || *s == 'E') {
        s++;
        if (*s == '+' || *s == '-') s++;
        if (!(*s >= '0' && *s <= '9')) return 0;
        while (*s >= '0' && *s <= '9') s++;
    }
    return *s == 0;
}

static int parse_double(const char *s, double *v)
{
    char *end;
    if (!is_decimal(s)) return -1;
    errno = 0;
    *v = strtod(s, &end);
    if (*end || errno == ERANGE || !isfinite(*v)) return -1;
    return 0;
}

static int parse_long(const char *s, long *v)
{
    char *end;
    if (!*s) return -1;
    errno = 0;
    *v = strtol(s, &end, 10);
    return *end || errno == ERANGE ? -1 : 0;
}

static int find_name(const char *const *names, int n, const char *name, size_t len)
{
    int i;
    for (i = 0; i < n; i++)
        if (strlen(names[i]) == len && strncmp(names[i], name, len) == 0) return i;
    return -1;
}

/* "a, b, c" into buf for error messages. */
static const char *list_names(const char *const *names, int n, char *buf,
                              size_t size)
{
    size_t len = 0;
    int i;
    buf[0] = 0;
    if (n == 0) return "none";
    for (i = 0; i < n && len + 1 < size; i++) {
        int w = snprintf(buf + len, size - len, "%s%s", i ? ", " : "", names[i]);
        if (w < 0) break;
        len += (size_t)w;
    }
    return buf;
}

/* NAME=VALUE for --set (params) or --init (states). */
static int parse_assign(const chrt_system *s, const char *opt, const char *arg,
                        double *p, char *errbuf, size_t errlen)
{
    const char *eq = strchr(arg, '=');
    double v;
    char names[400];
    if (!eq || eq == arg)
        return fail(errbuf, errlen, CHRT_EXIT_USAGE,
                    "%s expects NAME=VALUE, got '%s'", opt, arg);
    if (parse_double(eq + 1, &v))
        return fail(errbuf, errlen, CHRT_EXIT_USAGE,
                    "%s %s: '%s' is not a finite number", opt, arg, eq + 1);
    /* --init is applied after all --set values are known (apply_inits). */
    if (!s || strcmp(opt, "--set") != 0) return CHRT_OK;
    size_t len = (size_t)(eq - arg);
    int i = find_name(s->param_names, s->np, arg, len);
    if (i < 0)
        return fail(errbuf, errlen, CHRT_EXIT_USAGE,
                    "--set: unknown parameter '%.*s' (parameters: %s)",
                    (int)len, arg,
                    list_names(s->param_names, s->np, names, sizeof names));
    p[i] = v;
    return CHRT_OK;
}

/* ---- the initial state ---------------------------------------------------- */

enum { INIT_COORD, INIT_VELOCITY, INIT_STATE, INIT_UNKNOWN };

/* What --init NAME sets. Coordinates and velocities go through
 * state_from when the system has it; other names must be state names. */
static int init_kind(const chrt_system *s, const char *name, size_t len, int *k)
{
    if (s->state_from) {
        if ((*k = find_name(s->state_names, s->nq, name, len)) >= 0) return INIT_COORD;
        if (len > 1 && name[len - 1] == '\''
            && (*k = find_name(s->state_names, s->nq, name, len - 1)) >= 0)
            return INIT_VELOCITY;
    }
    if ((*k = find_name(s->state_names, s->nx, name, len)) >= 0) return INIT_STATE;
    return INIT_UNKNOWN;
}

static int unknown_init(const chrt_system *s, const char *name, size_t len,
                        char *errbuf, size_t errlen)
{
    char names[400];
    size_t n = 0;
    int i;
    names[0] = 0;
    for (i = 0; i < s->nx && n + 1 < sizeof names; i++) {
        int w = snprintf(names + n, sizeof names - n, "%s%s", i ? ", " : "",
                         s->state_names[i]);
        if (w < 0) break;
        n += (size_t)w;
    }
    for (i = 0; s->state_from && i < s->nq && n + 1 < sizeof names; i++) {
        char vel[300];
        int w;
        snprintf(vel, sizeof vel, "%s'", s->state_names[i]);
        if (find_name(s->state_names, s->nx, vel, strlen(vel)) >= 0)
            continue; /* a state variable, listed already */
        w = snprintf(names + n, sizeof names - n, ", %s", vel);
        if (w < 0) break;
        n += (size_t)w;
    }
    return fail(errbuf, errlen, CHRT_EXIT_USAGE,
                "--init: '%.*s' is not a state variable of %s (known: %s)",
                (int)len, name, s->name, n ? names : "none");
}

/* Calls fn on every --init value, walking argv as parse_one does. */
typedef int (*init_fn)(void *ctx, const char *name, size_t len, double v);

static int each_init(int argc, char **argv, init_fn fn, void *ctx)
{
    int i;
    for (i = 0; i < argc; i++) {
        const char *a = argv[i], *v = NULL;
        size_t n = strlen("--init");
        if (strncmp(a, "--init", n) == 0 && (a[n] == '=' || a[n] == 0)) {
            v = a[n] == '=' ? a + n + 1 : argv[++i];
            const char *eq = strchr(v, '=');
            int rc = fn(ctx, v, (size_t)(eq - v), strtod(eq + 1, NULL));
            if (rc) return rc;
        } else if (chrt_option_takes_value(a)) {
            i++;
        }
    }
    return CHRT_OK;
}

typedef struct {
    const chrt_system *s;
    double *x0, *q, *qt, *want;
    unsigned char *given;
    int via; /* state_from is needed */
    char *errbuf;
    size_t errlen;
} init_ctx;

static int init_q(void *vc, const char *name, size_t len, double v)
{
    init_ctx *c = vc;
    int k, kind = init_kind(c->s, name, len, &k);
    if (kind == INIT_UNKNOWN) return unknown_init(c->s, name, len, c->errbuf, c->errlen);
    if (kind == INIT_COORD) c->q[k] = v;
    if (kind == INIT_VELOCITY) {
        c->qt[k] = c->want[k] = v;
        c->given[k] = 1;
    }
    c->via |= kind != INIT_STATE;
    return CHRT_OK;
}

static int init_state(void *vc, const char *name, size_t len, double v)
{
    init_ctx *c = vc;
    int k;
    if (init_kind(c->s, name, len, &k) == INIT_STATE) c->x0[k] = v;
    return CHRT_OK;
}

/* Velocities given by --init that the form recomputed, into warning. */
static void note_recomputed(init_ctx *c, const double *p, chrt_args *a)
{
    size_t n = 0;
    int i;
    if (c->s->velocities(0, c->x0, p, c->qt)) return;
    for (i = 0; i < c->s->nq; i++) {
        double w = c->want[i], g = c->qt[i];
        if (!c->given[i] || fabs(g - w) <= 1e-9 * (fabs(w) > 1 ? fabs(w) : 1)) continue;
        int len = snprintf(a->warning + n, sizeof a->warning - n,
                           "%s--init %s'=%.17g is recomputed from the constraints as %.17g",
                           n ? "; " : "", c->s->state_names[i], w, g);
        if (len < 0 || (size_t)len >= sizeof a->warning - n) break;
        n += (size_t)len;
    }
}

static int apply_inits(const chrt_system *s, int argc, char **argv, double *x0,
                       const double *p, chrt_args *a, char *errbuf, size_t errlen)
{
    size_t nq = s->nq ? (size_t)s->nq : 1;
    init_ctx c = {s, x0, NULL, NULL, NULL, NULL, 0, errbuf, errlen};
    int i, rc = CHRT_OK;
    s->initial(x0);
    if (s->state_from) {
        c.q = malloc(nq * sizeof *c.q);
        c.qt = malloc(nq * sizeof *c.qt);
        c.want = malloc(nq * sizeof *c.want);
        c.given = calloc(nq, 1);
        if (!c.q || !c.qt || !c.want || !c.given) {
            rc = fail(errbuf, errlen, CHRT_EXIT_IO, "out of memory");
            goto done;
        }
        memcpy(c.q, x0, (size_t)s->nq * sizeof *c.q);
        /* The model's initial velocities, as s->initial saw them. */
        if (s->velocities(0, x0, s->param_defaults, c.qt)) {
            rc = fail(errbuf, errlen, CHRT_EXIT_NUMERIC,
                      "numerical failure at t = 0 (step 0): the velocities of "
                      "the model's initial state are singular");
            goto done;
        }
        for (i = 0; i < s->np; i++) c.via |= p[i] != s->param_defaults[i];
    }
    rc = each_init(argc, argv, init_q, &c);
    if (rc) goto done;
    if (c.via) {
        if (s->state_from(0, c.q, c.qt, p, x0)) {
            rc = fail(errbuf, errlen, CHRT_EXIT_NUMERIC,
                      "numerical failure at t = 0 (step 0): no state of %s "
                      "for these initial coordinates and velocities (singular)",
                      s->name);
            goto done;
        }
        note_recomputed(&c, p, a);
    }
    rc = each_init(argc, argv, init_state, &c);
done:
    free(c.q);
    free(c.qt);
    free(c.want);
    free(c.given);
    return rc;
}

/* One option with a value; *i advanced past a separate value. */
static int option_value(int argc, char **argv, int *i, const char *opt,
                        const char **val)
{
    const char *a = argv[*i];
    size_t n = strlen(opt);
    if (strncmp(a, opt, n) != 0) return 0;
    if (a[n] == '=') {
        *val = a + n + 1;
        return 1;
    }
    if (a[n] != 0) return 0;
    *val = *i + 1 < argc ? argv[++*i] : NULL;
    return 1;
}

static int parse_one(const chrt_system *s, int argc, char **argv, int *i,
                     chrt_args *a, double *p, char *errbuf, size_t errlen)
{
    const char *arg = argv[*i], *v = NULL;
    size_t k;
    if (!strcmp(arg, "-h") || !strcmp(arg, "--help")) {
        a->help = 1;
        return CHRT_OK;
    }
    if (!strcmp(arg, "--project")) {
        a->opt.project = 1;
        return CHRT_OK;
    }
    for (k = 0; k < sizeof valued / sizeof valued[0]; k++)
        if (option_value(argc, argv, i, valued[k], &v)) break;
    if (k == sizeof valued / sizeof valued[0])
        return fail(errbuf, errlen, CHRT_EXIT_USAGE,
                    arg[0] == '-' ? "unknown option '%s'" : "unexpected argument '%s'",
                    arg);
    if (!v)
        return fail(errbuf, errlen, CHRT_EXIT_USAGE, "%s needs a value", valued[k]);
    switch (k) {
    case 0: {
        int m = chrt_method_parse(v);
        if (m < 0)
            return fail(errbuf, errlen, CHRT_EXIT_USAGE,
                        "unknown method '%s' (euler, midpoint, rk4)", v);
        a->opt.method = (chrt_method)m;
        return CHRT_OK;
    }
    case 1:
    case 2: {
        double d;
        if (parse_double(v, &d))
            return fail(errbuf, errlen, CHRT_EXIT_USAGE,
                        "%s: '%s' is not a finite number", valued[k], v);
        if (k == 1) a->opt.dt = d;
        else a->opt.t1 = d;
        return CHRT_OK;
    }
    case 3:
        if (parse_long(v, &a->opt.every) || a->opt.every < 1)
            return fail(errbuf, errlen, CHRT_EXIT_USAGE,
                        "--every: '%s' is not a positive integer", v);
        return CHRT_OK;
    case 4:
    case 5:
        return parse_assign(s, valued[k], v, p, errbuf, errlen);
    case 7:
        if (parse_double(v, &a->opt.chart_min) || !(a->opt.chart_min >= 0
                                                    && a->opt.chart_min < 0.25))
            return fail(errbuf, errlen, CHRT_EXIT_USAGE,
                        "--chart-min: '%s' is not a number in [0, 0.25)", v);
        return CHRT_OK;
    default:
        a->output = v;
        return CHRT_OK;
    }
}

int chrt_parse_args(const chrt_system *s, int argc, char **argv, chrt_args *a,
                    double *x0, double *p, char *errbuf, size_t errlen)
{
    int i;
    chrt_options_default(&a->opt);
    a->output = NULL;
    a->help = 0;
    a->warning[0] = 0;
    if (s && s->np) memcpy(p, s->param_defaults, (size_t)s->np * sizeof *p);
    for (i = 0; i < argc; i++) {
        int rc = parse_one(s, argc, argv, &i, a, p, errbuf, errlen);
        if (rc) return rc;
    }
    if (a->help) return CHRT_OK;
    long nsteps;
    int rc = check_options(&a->opt, &nsteps, errbuf, errlen);
    if (rc || !s) return rc;
    return apply_inits(s, argc, argv, x0, p, a, errbuf, errlen);
}

static void print_help(const chrt_system *s, const char *prog)
{
    int i;
    printf("usage: %s [--method euler|midpoint|rk4] [--dt H] [--t1 T] [--every K]\n"
           "          [--set PARAM=V]... [--init NAME=V]... [--project]\n"
           "          [--chart-min Q] [-o FILE.csv]\n"
           "\n"
           "Integrates %s with a fixed step from t = 0 to T and writes CSV:\n"
           "t, the coordinates, their velocities (NAME'), E, then the optional\n"
           "columns; one row every K steps, the initial state first.\n"
           "Defaults: --method rk4 --dt 1e-3 --t1 1 --every 1.\n"
           "--init sets a coordinate q, a velocity q' (dependent ones are\n"
           "recomputed from the constraints) or a state variable.\n"
           "A reduced or hamilton form stops with exit 3 where its chart's\n"
           "quality falls below Q (default %g): this program cannot re-chart.\n"
           "\nstates:", prog, s->name, CHRT_CHART_MIN);
    for (i = 0; i < s->nx; i++) printf(" %s", s->state_names[i]);
    printf("\nparameters:");
    for (i = 0; i < s->np; i++)
        printf(" %s=%.17g", s->param_names[i], s->param_defaults[i]);
    printf("\n");
}

int chrt_main(const chrt_system *s, int argc, char **argv)
{
    return chrt_main_rechart(s, NULL, NULL, argc, argv);
}

int chrt_main_rechart(const chrt_system *s,
                      int (*rechart)(void *ctx, double t, double *x, const double *p,
                                     const chrt_system **s, char *note, size_t notelen),
                      void *rechart_ctx, int argc, char **argv)
{
    const char *prog = argc > 0 && argv[0] ? argv[0] : s->name;
    char msg[600];
    chrt_args a;
    double *x0 = malloc((s->nx ? (size_t)s->nx : 1) * sizeof *x0);
    double *p = malloc((s->np ? (size_t)s->np : 1) * sizeof *p);
    FILE *out = stdout;
    int rc;
    if (!x0 || !p) {
        rc = fail(msg, sizeof msg, CHRT_EXIT_IO, "out of memory");
        goto done;
    }
    rc = chrt_parse_args(s, argc > 0 ? argc - 1 : 0, argv + 1, &a, x0, p, msg,
                         sizeof msg);
    if (rc) goto done;
    if (a.help) {
        print_help(s, prog);
        goto done;
    }
    if (a.warning[0]) fprintf(stderr, "%s: warning: %s\n", prog, a.warning);
    a.opt.rechart = rechart;
    a.opt.rechart_ctx = rechart_ctx;
    if (a.output && !(out = fopen(a.output, "w"))) {
        rc = fail(msg, sizeof msg, CHRT_EXIT_IO, "cannot open '%s': %s",
                  a.output, strerror(errno));
        out = stdout;
        goto done;
    }
    rc = chrt_simulate(s, &a.opt, x0, p, out, msg, sizeof msg);
    if (out != stdout && fclose(out) != 0 && rc == CHRT_OK)
        rc = fail(msg, sizeof msg, CHRT_EXIT_IO, "cannot write '%s': %s",
                  a.output, strerror(errno));
done:
    if (rc) fprintf(stderr, "%s: %s\n", prog, msg);
    free(x0);
    free(p);
    return rc;
}
