/* simulate.c — the integration loop, the CSV writer and the option parser
 * shared by `chetaev run`, the emitted driver, the C API, the repl and
 * `check --loop`. */
#include "simulate.h"

#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

void chrt_options_default(chrt_options *o)
{
    o->method = CHRT_DOP853;
    o->dt = 0;
    o->t1 = 1;
    o->every = 1;
    o->project = 0;
    o->rtol = CHRT_RTOL;
    o->atol = CHRT_ATOL;
    o->dt_max = 0;
    o->dt_out = 0;
    o->max_steps = CHRT_MAX_STEPS;
    o->chart_min = CHRT_CHART_MIN;
    o->rechart = NULL;
    o->rechart_ctx = NULL;
    o->ext = NULL;
}

static int fail(char *errbuf, size_t errlen, int code, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;
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

static int state_finite(const double *x, int n)
{
    int i;
    for (i = 0; i < n; i++)
        if (!isfinite(x[i])) return 0;
    return 1;
}

/* Fixed steps from t0 to t1: ceil of the ratio, one within 1e-9 of an
 * integer taken as that integer. */
static double fixed_steps(double t0, double t1, double dt)
{
    double r = (t1 - t0) / dt, n = ceil(r - 1e-9 * (r > 1 ? r : 1));
    return n > 0 ? n : 0;
}

static double fixed_dt(const chrt_options *o)
{
    return o->dt > 0 ? o->dt : CHRT_FIXED_DT;
}

static int check_options(const chrt_options *o, double t0, int need_ext,
                         char *errbuf, size_t errlen);

int chrt_options_check(const chrt_options *o, double t0, char *errbuf,
                       size_t errlen)
{
    return check_options(o, t0, 1, errbuf, errlen);
}

/* need_ext 0: the options as parsed, before the caller supplies ext. */
static int check_options(const chrt_options *o, double t0, int need_ext,
                         char *errbuf, size_t errlen)
{
    int adaptive = chrt_method_adaptive(o->method);
    if (chrt_method_name(o->method)[0] == '?')
        return fail(errbuf, errlen, CHRT_EXIT_USAGE, "unknown integration method");
    if (o->method == CHRT_CVODE && need_ext && !o->ext)
        return fail(errbuf, errlen, CHRT_EXIT_USAGE, "%s",
                    "--method cvode needs SUNDIALS, which `chetaev run` and the C "
                    "API have and emitted driver programs do not (dop853, rk45, "
                    "euler, midpoint, rk4)");
    if (!(isfinite(o->dt) && o->dt >= 0))
        return fail(errbuf, errlen, CHRT_EXIT_USAGE,
                    "--dt must be a positive finite number (got %g)", o->dt);
    if (!(isfinite(o->t1) && o->t1 >= t0))
        return fail(errbuf, errlen, CHRT_EXIT_USAGE,
                    "--t1 must be a finite number >= %g (got %g)", t0, o->t1);
    if (o->every < 1)
        return fail(errbuf, errlen, CHRT_EXIT_USAGE,
                    "--every must be a positive integer (got %ld)", o->every);
    if (!(isfinite(o->rtol) && o->rtol > 0))
        return fail(errbuf, errlen, CHRT_EXIT_USAGE,
                    "--rtol must be a positive finite number (got %g)", o->rtol);
    if (o->rtol < 100 * DBL_EPSILON)
        return fail(errbuf, errlen, CHRT_EXIT_USAGE,
                    "--rtol %g is below 100 ulp (%.3g): not attainable in double "
                    "precision", o->rtol, 100 * DBL_EPSILON);
    if (!(isfinite(o->atol) && o->atol > 0))
        return fail(errbuf, errlen, CHRT_EXIT_USAGE,
                    "--atol must be a positive finite number (got %g)", o->atol);
    if (!(isfinite(o->dt_max) && o->dt_max >= 0))
        return fail(errbuf, errlen, CHRT_EXIT_USAGE,
                    "--dt-max must be a positive finite number (got %g)", o->dt_max);
    if (!(isfinite(o->dt_out) && o->dt_out >= 0))
        return fail(errbuf, errlen, CHRT_EXIT_USAGE,
                    "--dt-out must be a positive finite number (got %g)", o->dt_out);
    if (!(o->max_steps >= 1 && o->max_steps <= 1e15))
        return fail(errbuf, errlen, CHRT_EXIT_USAGE,
                    "--max-steps must be between 1 and 1e15 (got %g)", o->max_steps);
    if (!(o->chart_min >= 0 && o->chart_min <= 1))
        return fail(errbuf, errlen, CHRT_EXIT_USAGE,
                    "the chart threshold must be in [0, 1] (got %g)", o->chart_min);
    if (o->dt_out > 0 && !adaptive)
        return fail(errbuf, errlen, CHRT_EXIT_USAGE,
                    "--dt-out needs an adaptive method (dop853, rk45): %s has no "
                    "dense output (use --every)", chrt_method_name(o->method));
    if (o->dt_out > 0 && o->every != 1)
        return fail(errbuf, errlen, CHRT_EXIT_USAGE, "%s",
                    "--dt-out and --every exclude each other");
    if (!adaptive && o->dt_max > 0)
        return fail(errbuf, errlen, CHRT_EXIT_USAGE,
                    "--dt-max needs an adaptive method (dop853, rk45); %s steps "
                    "with --dt", chrt_method_name(o->method));
    if (!adaptive) {
        double r = (o->t1 - t0) / fixed_dt(o);
        if (r > o->max_steps)
            return fail(errbuf, errlen, CHRT_EXIT_USAGE,
                        "--t1/--dt asks for %g steps; at most %g are allowed "
                        "(--max-steps)", r, o->max_steps);
    } else if (o->dt_out > 0 && (o->t1 - t0) / o->dt_out > o->max_steps) {
        return fail(errbuf, errlen, CHRT_EXIT_USAGE,
                    "--t1/--dt-out asks for %g rows; at most %g are allowed "
                    "(--max-steps)", (o->t1 - t0) / o->dt_out, o->max_steps);
    }
    return CHRT_OK;
}

/* ---- the loop -------------------------------------------------------------- */

static const char *const rhs_failure =
    "the right-hand side failed: singular system or Newton not converged";
/* A right-hand side's 2 (emit_c.h): the chart of the state it was called
 * at is numerically singular. */
static const char *const chart_failure =
    "the right-hand side failed: the chart is numerically singular";
static const char *const row_failure[] = {
    "", "the velocities or outputs are singular", "the velocities are not finite"};

typedef struct loop loop;

/* How the loop steps: the fixed-step methods (one grid step per advance)
 * and the embedded pairs (attempts until one is accepted). The loop knows
 * a stepper only through these, so that another one (an implicit method
 * of another library) is one more table. */
typedef struct {
    int (*start)(loop *L);       /* after the initial row, at L->t */
    int (*done)(const loop *L);  /* t1 reached */
    /* One accepted step from L->t: L->tn and the state there in L->xn
     * (f there in L->fn where the stepper keeps it); L->last when it ends
     * at t1. */
    int (*advance)(loop *L);
    /* The state at tq in [L->t, L->tn] of the step just taken into L->y;
     * NULL without dense output. */
    int (*dense_at)(loop *L, double tq);
    int (*restart)(loop *L);     /* the state at L->t changed (projection, re-chart) */
} stepper;

/* One run's state. */
struct loop {
    const stepper *ops;
    const chrt_system *s;
    const chrt_options *o;
    const double *p;
    const chrt_sink *sink;
    chrt_stats st;
    double t0, t, tn, h;  /* h: the next adaptive step */
    int last;             /* the step just taken ends at t1 */
    int stopped;          /* a stop event ended the run at L->t */
    int ext_started;      /* the external stepper ran (its counts are ours) */
    double *x, *xn, *f, *fn, *y, *row;
    /* Newton's start (s->newton): the velocities at the last accepted
     * state (vs_ok 0: none yet, the model's initial ones); vt scratch */
    double *vs, *vt;
    int vs_ok;
    double *ga, *gb, *gc; /* event values at the step's ends, at a probe */
    chrt_stepper fixed;
    chrt_rk rk;
    long k, nsteps;       /* fixed: steps done, steps in all */
    /* The chart's quality at the last accepted state (cq_t < 0: none yet
     * in this chart) and the rate at which it fell over the step before
     * (0: not falling), for the adaptive step cap (chart_cap). */
    double cq, cq_t, cq_rate;
    char *errbuf;
    size_t errlen;
};

static void loop_free(loop *L)
{
    free(L->xn);
    free(L->f);
    free(L->fn);
    free(L->y);
    free(L->row);
    free(L->fixed.work);
    free(L->rk.work);
    free(L->ga);
    free(L->vs);
}

static int loop_alloc(loop *L)
{
    size_t nx = (size_t)L->s->nx + 1;
    size_t nrow = 2 + 2 * (size_t)L->s->nq + (size_t)L->s->nout;
    L->xn = malloc(nx * sizeof *L->xn);
    L->f = malloc(nx * sizeof *L->f);
    L->fn = malloc(nx * sizeof *L->fn);
    L->y = malloc(nx * sizeof *L->y);
    L->row = malloc(nrow * sizeof *L->row);
    L->fixed.nx = L->s->nx;
    L->fixed.work = malloc(6 * nx * sizeof *L->fixed.work);
    L->rk.m = L->o->method;
    L->rk.nx = L->s->nx;
    L->rk.nfev = 0;
    L->rk.dense = 0;
    L->rk.work = malloc(chrt_rk_work_size(L->s->nx) * sizeof *L->rk.work);
    size_t nev = L->s->nev > 0 ? (size_t)L->s->nev : 0;
    L->ga = malloc((3 * nev + 1) * sizeof *L->ga);
    if (L->ga) L->gb = L->ga + nev, L->gc = L->gb + nev;
    L->vs = malloc((2 * (size_t)L->s->nq + 1) * sizeof *L->vs);
    if (L->vs) L->vt = L->vs + L->s->nq;
    return L->xn && L->f && L->fn && L->y && L->row && L->fixed.work && L->rk.work
               && L->ga && L->vs ? 0 : -1;
}

/* Newton's start for the system's functions at a state near the last
 * accepted one. */
static const double *vstart(const loop *L)
{
    return L->s->newton && L->vs_ok ? L->vs : NULL;
}

/* After a state was accepted (or moved: projection, re-chart): its
 * velocities become Newton's start. Where they cannot be computed the
 * start stays (the row or the next step reports the failure). */
static void track(loop *L)
{
    if (!L->s->newton) return;
    if (L->s->velocities(L->t, L->x, L->p, vstart(L), L->vt) == 0
        && state_finite(L->vt, L->s->nq)) {
        memcpy(L->vs, L->vt, (size_t)L->s->nq * sizeof *L->vs);
        L->vs_ok = 1;
    }
}

/* The right-hand side of the steppers (chrt_rhs): ctx is the loop. */
static int loop_rhs(void *ctx, double t, const double *x, double *dxdt)
{
    loop *L = ctx;
    return L->s->rhs(t, x, L->p, vstart(L), dxdt);
}

/* The row of state x at t to the sink; nonzero: an index into row_failure,
 * 3 + j when column j (E and the outputs) is not finite, or -1 when the
 * sink failed. A NaN velocity (0/0 in a Legendre inverse) is no less a
 * failure than a singular solve, and a NaN or infinite energy or output
 * (sqrt of a negative number; HUGE_VAL, the emitted energy where it
 * cannot be evaluated) is never written as a number. */
static int emit_row(loop *L, double t, const double *x)
{
    const chrt_system *s = L->s;
    int nq = s->nq, j;
    double *v = L->row;
    if (!L->sink || !L->sink->row) return 0;
    v[0] = t;
    memcpy(v + 1, x, (size_t)nq * sizeof *v);
    if (s->velocities(t, x, L->p, vstart(L), v + 1 + nq)) return 1;
    if (!state_finite(v + 1 + nq, nq)) return 2;
    v[1 + 2 * nq] = s->energy(t, x, L->p, vstart(L));
    if (s->nout && s->outputs(t, x, L->p, vstart(L), v + 2 + 2 * nq)) return 1;
    for (j = 0; j <= s->nout; j++)
        if (!isfinite(v[1 + 2 * nq + j])) return 3 + j;
    return L->sink->row(L->sink->ctx, v, 2 + 2 * nq + s->nout) ? -1 : 0;
}

static long step_no(const loop *L) { return L->st.accepted; }

static int row_at(loop *L, double t, const double *x)
{
    int rc = emit_row(L, t, x);
    if (rc < 0) return fail(L->errbuf, L->errlen, CHRT_EXIT_OUTPUT, "%s", "cannot write a row");
    if (rc >= 3) {
        double bad = L->row[2 * L->s->nq + rc - 2];
        char e[80];
        return fail(L->errbuf, L->errlen, CHRT_EXIT_NUMERIC,
                    "numerical failure at t = %.17g (step %ld): the column %s is %s%s", t,
                    step_no(L), rc == 3 ? chrt_energy_column(L->s, e, sizeof e)
                                        : L->s->output_names[rc - 4],
                    isnan(bad) ? "NaN" : "infinite",
                    step_no(L) ? "" : " at the initial state");
    }
    if (rc)
        return fail(L->errbuf, L->errlen, CHRT_EXIT_NUMERIC,
                    "numerical failure at t = %.17g (step %ld): %s%s", t,
                    step_no(L), row_failure[rc],
                    step_no(L) ? "" : " at the initial state");
    return CHRT_OK;
}

/* f at the current state (after the start, a projection or a re-chart). */
static int restart_rk(loop *L)
{
    if (L->t >= L->o->t1) return CHRT_OK;
    L->rk.nfev++;
    if (loop_rhs(L, L->t, L->x, L->f) || !state_finite(L->f, L->s->nx))
        return fail(L->errbuf, L->errlen, CHRT_EXIT_NUMERIC,
                    "numerical failure at t = %.17g (step %ld): %s", L->t,
                    step_no(L) + 1, rhs_failure);
    return CHRT_OK;
}

/* Projection of x at t (when asked for and the form has one). */
static int project(loop *L, double t, double *x)
{
    if (!L->o->project || !L->s->project) return CHRT_OK;
    if (L->s->project(t, x, L->p, vstart(L)) || !state_finite(x, L->s->nx))
        return fail(L->errbuf, L->errlen, CHRT_EXIT_NUMERIC,
                    "numerical failure at t = %.17g (step %ld): the projection %s",
                    t, step_no(L),
                    step_no(L) ? "onto the constraints failed"
                               : "of the initial state failed");
    return CHRT_OK;
}

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
    snprintf(note, size, "the block G_d of the dependent velocities%s%s of the "
             "constraint Jacobian (or the Legendre map) is near-singular, and %s "
             "cannot change its chart here (no re-charting: --no-rechart, a "
             "driver program, or check --loop)", dep[0] ? " " : "", dep, s->name);
}

/* The chart hook at the current state: CHRT_OK (*moved set when the
 * state was re-charted), CHRT_EXIT_NUMERIC, or CHRT_EXIT_IO when the
 * re-charting ran out of memory. */
static int chart_check(loop *L, int *moved)
{
    const chrt_system *s = L->s;
    char note[256];
    *moved = 0;
    if (!s->chart_quality) return CHRT_OK;
    double q = s->chart_quality(L->t, L->x, L->p, vstart(L));
    if (q >= L->o->chart_min) {
        double rate = L->cq_t >= 0 && L->t > L->cq_t ? (L->cq - q) / (L->t - L->cq_t) : 0;
        L->cq_rate = rate > 0 ? rate : 0;
        L->cq = q, L->cq_t = L->t;
        return CHRT_OK;
    }
    L->cq_t = -1, L->cq_rate = 0; /* a new chart, or the end */
    note[0] = 0;
    if (!L->o->rechart) no_rechart_note(s, note, sizeof note);
    int rc = L->o->rechart ? L->o->rechart(L->o->rechart_ctx, L->t, L->x, L->p, vstart(L),
                                           &L->s, note, sizeof note)
                           : 1;
    if (rc < 0)
        return fail(L->errbuf, L->errlen, CHRT_EXIT_IO,
                    "out of memory at t = %.17g, changing the chart: %s", L->t, note);
    if (rc == 0) {
        L->st.recharts++;
        *moved = 1;
        if (L->sink && L->sink->note) L->sink->note(L->sink->ctx, L->t, note);
        double q2 = L->s->chart_quality ? L->s->chart_quality(L->t, L->x, L->p, vstart(L))
                                        : 1;
        if (state_finite(L->x, L->s->nx) && q2 >= L->o->chart_min) {
            L->cq = q2, L->cq_t = L->t;
            return CHRT_OK;
        }
        return fail(L->errbuf, L->errlen, CHRT_EXIT_NUMERIC,
                    "numerical failure at t = %.17g: the chart is singular "
                    "(quality %.3g < %g) also after re-charting: %s", L->t, q2,
                    L->o->chart_min, note);
    }
    return fail(L->errbuf, L->errlen, CHRT_EXIT_NUMERIC,
                "numerical failure at t = %.17g: the chart is singular (quality "
                "%.3g < %g): %s", L->t, q, L->o->chart_min,
                note[0] ? note : "no other chart to switch to");
}

/* Projection and the chart check at the current state, whose velocities
 * then become Newton's start; f is recomputed when either moved it. */
static int settle(loop *L)
{
    int rc, moved;
    track(L);
    if ((rc = project(L, L->t, L->x))) return rc;
    if ((rc = chart_check(L, &moved))) return rc;
    moved |= L->o->project && L->s->project;
    if (moved) track(L);
    if (!L->st.accepted) return CHRT_OK; /* the stepper's start follows */
    return moved ? L->ops->restart(L) : CHRT_OK;
}

/* The adaptive step from a state whose chart degrades: the quality is
 * only checked at accepted states, so a step must not jump over the
 * window below chart_min to the far side of a singular point (an
 * accepted step through it can be wrong beyond the tolerance with a small
 * error estimate). At the rate the quality fell over the last step, the
 * step may take it at most halfway down to chart_min/2; near the window
 * the steps shrink geometrically and one ends inside it. */
static double chart_cap(const loop *L)
{
    double c = L->o->chart_min;
    if (!(L->cq_rate > 0 && c > 0)) return 0;
    double cap = 0.5 * (L->cq - 0.5 * c) / L->cq_rate;
    return cap > 0 ? cap : 0;
}

static const char *attempt_failure(int rc)
{
    if (rc == 3) return "the new state is not finite";
    if (rc == 2) return chart_failure;
    return rhs_failure;
}

/* f at t0 and the first step (o->dt, or chosen from f). */
static int start_rk(loop *L)
{
    const chrt_options *o = L->o;
    int rc = restart_rk(L);
    if (rc) return rc;
    L->h = o->dt;
    if (L->h <= 0 && L->t < o->t1) {
        L->h = chrt_rk_initial_step(&L->rk, loop_rhs, L, L->t, L->x, L->f, o->rtol,
                                    o->atol);
        if (L->h < 0) L->h = 1e-6 * (o->t1 - L->t);
    }
    return CHRT_OK;
}

static int done_rk(const loop *L) { return L->t >= L->o->t1; }

/* One accepted adaptive step from L->t: L->tn, L->xn, L->fn. */
static int advance_rk(loop *L)
{
    const chrt_options *o = L->o;
    double t = L->t, t1 = o->t1, err = 0;
    double min_step = 16 * (nextafter(t, INFINITY) - t);
    const char *why = NULL;
    int rejected = 0;
    if ((double)L->st.accepted >= o->max_steps)
        return fail(L->errbuf, L->errlen, CHRT_EXIT_NUMERIC,
                    "numerical failure at t = %.17g (step %ld): more than %g "
                    "steps (--max-steps) before t1 = %g: a stiff model or "
                    "too tight a tolerance", t, step_no(L) + 1, o->max_steps, t1);
    if (o->dt_max > 0 && L->h > o->dt_max) L->h = o->dt_max;
    double cap = chart_cap(L);
    if (cap > 0 && L->h > cap) L->h = cap;
    if (L->h < min_step) L->h = min_step;
    for (;;) {
        if (L->h < min_step)
            return fail(L->errbuf, L->errlen, CHRT_EXIT_NUMERIC,
                        "numerical failure at t = %.17g (step %ld): step size too "
                        "small at t = %.17g (h = %.3g): %s", t, step_no(L) + 1,
                        t, L->h, why);
        double tn = t + L->h;
        if (tn > t1) tn = t1;
        double h = tn - t;
        int rc = chrt_rk_attempt(&L->rk, loop_rhs, L, t, L->x, L->f, h, o->rtol,
                                 o->atol, L->xn, L->fn, &err);
        if (rc == 0 && err < 1) {
            L->h = h * chrt_rk_factor(&L->rk, err, rejected);
            L->tn = tn;
            L->last = tn == t1;
            return CHRT_OK;
        }
        L->st.rejected++;
        rejected = 1;
        why = rc ? attempt_failure(rc)
                 : "the error estimate stays above the tolerance";
        L->h = h * (rc ? 0.2 : chrt_rk_factor(&L->rk, err, 1));
    }
}

static int start_fixed(loop *L)
{
    L->nsteps = (long)fixed_steps(L->t0, L->o->t1, fixed_dt(L->o));
    return CHRT_OK;
}

static int done_fixed(const loop *L) { return L->k >= L->nsteps; }

static int restart_fixed(loop *L)
{
    (void)L;
    return CHRT_OK;
}

/* One fixed step from L->t: L->tn, L->xn. */
static int advance_fixed(loop *L)
{
    double dt = fixed_dt(L->o);
    L->tn = L->k + 1 < L->nsteps ? L->t0 + (double)(L->k + 1) * dt : L->o->t1;
    memcpy(L->xn, L->x, (size_t)L->s->nx * sizeof *L->xn);
    L->st.rhs_calls += chrt_method_stages(L->o->method);
    int rc = chrt_step(&L->fixed, L->o->method, loop_rhs, L->t, L->tn - L->t, L->xn, L);
    if (rc)
        return fail(L->errbuf, L->errlen, CHRT_EXIT_NUMERIC,
                    "numerical failure at t = %.17g (step %ld): %s", L->t,
                    L->k + 1, rc == 1   ? rhs_failure
                              : rc == 3 ? chart_failure
                                        : "the new state is not finite");
    L->k++;
    L->last = L->k == L->nsteps;
    return CHRT_OK;
}

/* The dense output of the accepted step at tq into L->y. */
static int dense_rk(loop *L, double tq)
{
    int rc = chrt_rk_dense_prepare(&L->rk, loop_rhs, L, L->x, L->f, L->xn, L->fn);
    if (rc)
        return fail(L->errbuf, L->errlen, CHRT_EXIT_NUMERIC,
                    "numerical failure at t = %.17g (step %ld): the dense output "
                    "failed: %s", L->t, step_no(L), attempt_failure(rc));
    chrt_rk_dense_eval(&L->rk, L->x, tq, L->y);
    return CHRT_OK;
}

/* A fixed method's state inside the step just taken: one step of the same
 * method from L->t to tq, as accurate as the step itself. */
static int dense_fixed(loop *L, double tq)
{
    memcpy(L->y, L->x, (size_t)L->s->nx * sizeof *L->y);
    L->st.rhs_calls += chrt_method_stages(L->o->method);
    if (tq > L->t
        && chrt_step(&L->fixed, L->o->method, loop_rhs, L->t, tq - L->t, L->y, L))
        return fail(L->errbuf, L->errlen, CHRT_EXIT_NUMERIC,
                    "numerical failure at t = %.17g (step %ld): the state inside "
                    "the step failed", L->t, step_no(L));
    return CHRT_OK;
}

/* ---- a stepper of another library (chrt_ext_stepper) ----------------- */

/* rc < 0: the stepper ran out of memory. */
static int ext_fail(loop *L, double t, const char *why, int rc)
{
    if (rc < 0)
        return fail(L->errbuf, L->errlen, CHRT_EXIT_IO, "out of memory at t = %.17g: %s", t,
                    why);
    return fail(L->errbuf, L->errlen, CHRT_EXIT_NUMERIC,
                "numerical failure at t = %.17g (step %ld): %s", t, step_no(L) + 1, why);
}

static int start_ext(loop *L)
{
    const chrt_ext_stepper *e = L->o->ext;
    char why[400];
    /* (the loop updates L->vs in place after every accepted state; it
     * holds the start's velocities whenever the initial row was written) */
    int rc = e->start(e->ctx, L->s, L->o, L->t, L->x, L->p, vstart(L), why, sizeof why);
    if (rc) return ext_fail(L, L->t, why, rc);
    L->ext_started = 1;
    return CHRT_OK;
}

static int advance_ext(loop *L)
{
    const chrt_ext_stepper *e = L->o->ext;
    char why[400];
    if ((double)L->st.accepted >= L->o->max_steps)
        return fail(L->errbuf, L->errlen, CHRT_EXIT_NUMERIC,
                    "numerical failure at t = %.17g (step %ld): more than %g "
                    "steps (--max-steps) before t1 = %g", L->t, step_no(L) + 1,
                    L->o->max_steps, L->o->t1);
    int rc = e->advance(e->ctx, chart_cap(L), &L->tn, L->xn, why, sizeof why);
    if (rc) return ext_fail(L, L->t, why, rc);
    L->last = L->tn >= L->o->t1;
    return CHRT_OK;
}

static int dense_ext(loop *L, double tq)
{
    const chrt_ext_stepper *e = L->o->ext;
    char why[400];
    int rc = e->dense_at(e->ctx, tq, L->y, why, sizeof why);
    return rc ? ext_fail(L, tq, why, rc) : CHRT_OK;
}

static int restart_ext(loop *L)
{
    const chrt_ext_stepper *e = L->o->ext;
    char why[400];
    if (L->t >= L->o->t1) return CHRT_OK;
    int rc = e->restart(e->ctx, L->s, L->t, L->x, why, sizeof why);
    return rc ? ext_fail(L, L->t, why, rc) : CHRT_OK;
}

/* ---- events ------------------------------------------------------------ */

/* g at (t, x) into g; nonzero (a numerical failure) where it cannot be
 * evaluated. */
static int events_at(loop *L, double t, const double *x, double *g)
{
    if (L->s->events(t, x, L->p, vstart(L), g) || !state_finite(g, L->s->nev))
        return fail(L->errbuf, L->errlen, CHRT_EXIT_NUMERIC,
                    "numerical failure at t = %.17g (step %ld): the event "
                    "functions cannot be evaluated", t, step_no(L));
    return CHRT_OK;
}

/* 1 when g goes from a (not 0) to b through or onto 0. */
static int crosses(double a, double b)
{
    return (a < 0 && b >= 0) || (a > 0 && b <= 0);
}

/* The zero of event j between (a, ga) and (b, gb), signs opposite, by the
 * Illinois variant of regula falsi on the step's dense output, to the
 * resolution of t. *root is the end of the final bracket on b's side, so
 * the event has happened at the state there. */
static int event_root(loop *L, int j, double a, double ga, double b, double gb,
                      double *root)
{
    int side = 0, rc;
    for (int it = 0; it < 200; it++) {
        double w = b - a;
        if (!(w > 4 * DBL_EPSILON * fmax(fabs(a), fabs(b))) || !(w > 0)) break;
        double c = b - gb * w / (gb - ga);
        if (!(c > a && c < b)) c = a + 0.5 * w;
        if ((rc = L->ops->dense_at(L, c)) || (rc = events_at(L, c, L->y, L->gc)))
            return rc;
        double gc = L->gc[j];
        if (gc == 0) {
            b = c;
            break;
        }
        if ((gc < 0) == (gb < 0)) {
            b = c, gb = gc;
            if (side == 1) ga *= 0.5;
            side = 1;
        } else {
            a = c, ga = gc;
            if (side == -1) gb *= 0.5;
            side = -1;
        }
    }
    *root = b;
    return CHRT_OK;
}

/* The first event in (ta, L->tn] of the step just taken, L->ga holding
 * the values at ta and L->gb those at L->tn: *j (-1: none) and its time. */
static int first_event(loop *L, double ta, int *j, double *tev)
{
    *j = -1;
    for (int i = 0; i < L->s->nev; i++) {
        double r;
        if (!crosses(L->ga[i], L->gb[i])) continue;
        int rc = event_root(L, i, ta, L->ga[i], L->tn, L->gb[i], &r);
        if (rc) return rc;
        /* on a tie a stop event first: the run ends where both happen */
        if (*j < 0 || r < *tev || (r == *tev && L->s->event_stop[i] && !L->s->event_stop[*j]))
            *j = i, *tev = r;
    }
    return CHRT_OK;
}

static void event_note(loop *L, int j, double t)
{
    char text[200];
    L->st.events++;
    snprintf(text, sizeof text, "event %s at t = %.17g%s", L->s->event_names[j], t,
             L->s->event_stop[j] ? " (stop)" : "");
    if (L->sink && L->sink->note) L->sink->note(L->sink->ctx, t, text);
}

/* The time of output row k (1-based) of the --dt-out grid; the last is t1. */
static double grid_time(const loop *L, long k, long nout)
{
    return k < nout ? L->t0 + (double)k * L->o->dt_out : L->o->t1;
}

static const stepper fixed_ops = {start_fixed, done_fixed, advance_fixed, dense_fixed,
                                  restart_fixed};
static const stepper rk_ops = {start_rk, done_rk, advance_rk, dense_rk, restart_rk};
static const stepper ext_ops = {start_ext, done_rk, advance_ext, dense_ext, restart_ext};

/* Rows of the --dt-out grid before t (exclusive; inclusive at the step's
 * end), by dense output; *kout the next grid row. */
static int grid_rows(loop *L, long *kout, long nout, double t, int inclusive)
{
    int rc;
    for (; nout && *kout <= nout; ++*kout) {
        double tq = grid_time(L, *kout, nout);
        if (tq > t || (tq == t && !inclusive)) break;
        if ((rc = L->ops->dense_at(L, tq)) || (rc = row_at(L, tq, L->y))) return rc;
    }
    return CHRT_OK;
}

/* The events of the step just taken, in time order: rows of the grid
 * before each, the event's row (the state by dense output) and note. A
 * stop event inside the step ends the run there (L->stopped). An event
 * exactly at the step's end gets the row of that time: *row_due 1, or 2
 * when it is a stop event (the run ends after that row). */
static int step_events(loop *L, long *kout, long nout, int *row_due)
{
    const chrt_system *s = L->s;
    double ta = L->t, tev = 0;
    int j, rc;
    if (s->nev <= 0) return CHRT_OK;
    if ((rc = events_at(L, L->tn, L->xn, L->gb))) return rc;
    for (;;) {
        if ((rc = first_event(L, ta, &j, &tev))) return rc;
        if (j < 0) break;
        if (tev >= L->tn) { /* at the step's end: the step's own row */
            event_note(L, j, L->tn);
            if (*row_due < 2) *row_due = s->event_stop[j] ? 2 : 1;
            L->ga[j] = L->gb[j];
            ta = L->tn;
            continue;
        }
        if ((rc = grid_rows(L, kout, nout, tev, 0))) return rc;
        if ((rc = L->ops->dense_at(L, tev)) || (rc = events_at(L, tev, L->y, L->ga)))
            return rc;
        if ((rc = row_at(L, tev, L->y))) return rc;
        for (; nout && *kout <= nout && grid_time(L, *kout, nout) == tev; ++*kout) {}
        event_note(L, j, tev);
        if (s->event_stop[j]) {
            memcpy(L->x, L->y, (size_t)s->nx * sizeof *L->x);
            L->t = tev;
            L->stopped = 1;
            return CHRT_OK;
        }
        L->ga[j] = L->gb[j]; /* j has crossed: not again in this step */
        ta = tev;
    }
    return CHRT_OK;
}

static int run(loop *L)
{
    const chrt_options *o = L->o;
    int rc;
    long kout = 1, nout = 0;
    if (!state_finite(L->x, L->s->nx))
        return fail(L->errbuf, L->errlen, CHRT_EXIT_NUMERIC,
                    "numerical failure at t = %.17g (step 0): the initial state "
                    "is not finite", L->t);
    if ((rc = settle(L))) return rc;
    if ((rc = row_at(L, L->t, L->x))) return rc;
    if (o->dt_out > 0) nout = (long)fixed_steps(L->t0, o->t1, o->dt_out);
    if ((rc = L->ops->start(L))) return rc;
    if (L->s->nev > 0 && (rc = events_at(L, L->t, L->x, L->ga))) return rc;
    while (!L->ops->done(L)) {
        int event_row = 0;
        if ((rc = L->ops->advance(L))) return rc;
        L->st.accepted++;
        if (L->last) L->tn = o->t1;
        if ((rc = step_events(L, &kout, nout, &event_row))) return rc;
        if (L->stopped) return CHRT_OK; /* ended inside the step */
        /* Rows of the output grid inside the step, by dense output. */
        if ((rc = grid_rows(L, &kout, nout, L->tn, 0))) return rc;
        double *tmp = L->x;
        L->x = L->xn, L->xn = tmp;
        tmp = L->f, L->f = L->fn, L->fn = tmp;
        L->t = L->tn;
        int due = nout ? kout <= nout && grid_time(L, kout, nout) == L->t
                       : L->last || L->st.accepted % o->every == 0;
        if ((rc = settle(L))) return rc;
        if ((due || event_row) && (rc = row_at(L, L->t, L->x))) return rc;
        if (due && nout) kout++;
        if (event_row == 2) { /* a stop event at the step's end */
            L->stopped = 1;
            return CHRT_OK;
        }
        /* the values at the new start (a projection or re-chart moved it) */
        if (L->s->nev > 0 && (rc = events_at(L, L->t, L->x, L->ga))) return rc;
    }
    L->t = o->t1; /* fixed steps: also with none, t1 within 1e-9 steps */
    return CHRT_OK;
}

int chrt_integrate(const chrt_system **s, const chrt_options *o, double t0,
                   double *x, const double *p, double *vs, const chrt_sink *sink,
                   chrt_stats *st, double *t, char *errbuf, size_t errlen)
{
    loop L;
    int rc = chrt_options_check(o, t0, errbuf, errlen);
    memset(&L, 0, sizeof L);
    *t = t0;
    if (st) memset(st, 0, sizeof *st);
    if (rc) return rc;
    L.s = *s, L.o = o, L.p = p, L.sink = sink;
    L.ops = o->method == CHRT_CVODE ? &ext_ops
            : chrt_method_adaptive(o->method) ? &rk_ops : &fixed_ops;
    L.t0 = L.t = t0;
    L.cq_t = -1;
    L.errbuf = errbuf, L.errlen = errlen;
    if (loop_alloc(&L)) {
        loop_free(&L);
        return fail(errbuf, errlen, CHRT_EXIT_IO, "%s", "out of memory");
    }
    L.x = x;
    if (vs && !isnan(vs[0]) && (*s)->nq > 0) {
        memcpy(L.vs, vs, (size_t)(*s)->nq * sizeof *vs);
        L.vs_ok = 1;
    }
    rc = run(&L);
    /* The loop swaps its buffers: hand the state back in x, free the other. */
    if (L.x != x) {
        memcpy(x, L.x, (size_t)L.s->nx * sizeof *x);
        L.xn = L.x;
    }
    L.st.rhs_calls += L.rk.nfev;
    if (L.ext_started && o->ext->counts) {
        long rej = 0, calls = 0;
        o->ext->counts(o->ext->ctx, &rej, &calls);
        L.st.rejected += rej, L.st.rhs_calls += calls;
    }
    *t = L.t;
    *s = L.s;
    if (vs) { /* the velocities at x: Newton's start of the next call */
        track(&L);
        for (int i = 0; i < L.s->nq; i++) vs[i] = L.vs_ok ? L.vs[i] : NAN;
    }
    if (st) *st = L.st;
    loop_free(&L);
    return rc;
}

/* ---- CSV -------------------------------------------------------------- */

static void put_header(const chrt_system *s, FILE *out)
{
    int i;
    char e[80];
    fputs("t", out);
    for (i = 0; i < s->nq; i++) fprintf(out, ",%s", s->state_names[i]);
    for (i = 0; i < s->nq; i++) fprintf(out, ",%s'", s->state_names[i]);
    fprintf(out, ",%s", chrt_energy_column(s, e, sizeof e));
    for (i = 0; i < s->nout; i++) fprintf(out, ",%s", s->output_names[i]);
    fputc('\n', out);
}

/* The CSV goes out in whole rows: rows are collected here and written
 * with one unbuffered fwrite (one write(2)) per CSV_CHUNK, half a second
 * of CPU or note, so that a run killed at any moment leaves a file that
 * ends on a whole row, and a slow run still shows its rows as it goes. */
#define CSV_CHUNK 65536

typedef struct {
    FILE *out;
    const chrt_sink *also;
    char *buf;
    size_t len, cap;
    int bad;
    clock_t last; /* of the last flush */
} csv_sink;

static int csv_flush(csv_sink *c)
{
    c->last = clock();
    if (c->len && fwrite(c->buf, 1, c->len, c->out) != c->len) c->bad = 1;
    c->len = 0;
    if (fflush(c->out) != 0 || ferror(c->out)) c->bad = 1;
    return c->bad ? -1 : 0;
}

static int csv_row(void *ctx, const double *v, int n)
{
    csv_sink *c = ctx;
    int i;
    size_t need = 26 * (size_t)n + 2; /* "-1.2345678901234567e-308," each */
    if (c->len + need > c->cap && csv_flush(c)) return -1;
    if (need > c->cap) { /* a row longer than the chunk */
        char *b = realloc(c->buf, need);
        if (!b) return -1;
        c->buf = b, c->cap = need;
    }
    for (i = 0; i < n; i++)
        c->len += (size_t)snprintf(c->buf + c->len, c->cap - c->len, i ? ",%.17g" : "%.17g",
                                   v[i]);
    c->buf[c->len++] = '\n';
    if (clock() - c->last > CLOCKS_PER_SEC / 2 && csv_flush(c)) return -1;
    return c->also ? c->also->row(c->also->ctx, v, n) : 0;
}

static void csv_note(void *ctx, double t, const char *text)
{
    csv_sink *c = ctx;
    csv_flush(c); /* the rows before the note first (a failure shows later) */
    if (c->also && c->also->note) c->also->note(c->also->ctx, t, text);
}

int chrt_simulate(const chrt_system *s, const chrt_options *o,
                  const double *x0, const double *p, FILE *out,
                  const chrt_sink *also, chrt_stats *st, char *errbuf,
                  size_t errlen)
{
    int rc = chrt_options_check(o, 0, errbuf, errlen);
    if (rc) return rc;
    double t, *x = malloc(((size_t)s->nx + 1) * sizeof *x);
    if (!x) return fail(errbuf, errlen, CHRT_EXIT_IO, "%s", "out of memory");
    memcpy(x, x0, (size_t)s->nx * sizeof *x);
    csv_sink c = {out, also, malloc(CSV_CHUNK), 0, CSV_CHUNK, 0, clock()};
    chrt_sink sink = {csv_row, csv_note, &c};
    if (!c.buf) {
        free(x);
        return fail(errbuf, errlen, CHRT_EXIT_IO, "%s", "out of memory");
    }
    setvbuf(out, NULL, _IONBF, 0); /* (before any output; the rows come whole) */
    put_header(s, out);
    rc = chrt_integrate(&s, o, 0, x, p, NULL, &sink, st, &t, errbuf, errlen);
    free(x);
    /* The rows before a failure are part of the result: flush them too. */
    int bad = csv_flush(&c);
    free(c.buf);
    if (bad || fflush(out) != 0 || ferror(out)) {
        if (rc == CHRT_OK || rc == CHRT_EXIT_OUTPUT)
            rc = fail(errbuf, errlen, CHRT_EXIT_OUTPUT, "cannot write the CSV: %s",
                      strerror(errno));
    }
    return rc;
}

/* ---- options ------------------------------------------------------------ */

/* Options with a value; the order is that of parse_one's switch. */
static const char *const valued[] = {"--method", "--dt", "--t1", "--every",
                                     "--set", "--init", "-o", "--rtol",
                                     "--atol", "--dt-max", "--dt-out",
                                     "--max-steps", "--chart-min"};

const char *chrt_option_name(int i)
{
    static const char *const flags[] = {"--project", "--stats", "--help"};
    int nv = (int)(sizeof valued / sizeof valued[0]);
    if (i < 0 || i >= nv + 3) return NULL;
    return i < nv ? valued[i] : flags[i - nv];
}

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

/* 0, -1 when s is not a finite decimal number, -2 when it underflows to
 * 0 (a subnormal such as 1e-320 is a number: strtod's ERANGE there is
 * only a loss of precision). */
static int parse_double(const char *s, double *v)
{
    char *end;
    if (!is_decimal(s)) return -1;
    errno = 0;
    *v = strtod(s, &end);
    if (*end || !isfinite(*v)) return -1;
    if (errno == ERANGE && *v == 0) return -2;
    return 0;
}

/* A constant expression of the model language, for the values of --set
 * and --init: decimal numbers (is_decimal's), pi, + - * / ^
 * (right-associative, above unary minus), parentheses and the language's
 * functions (1/3, pi/2, sqrt(2)/2, 2*atan2(1,1)); no blanks, as in a
 * number. A recursive descent over the text. */
typedef struct {
    const char *s;
    int bad;
    int depth; /* of the recursion, bounded as the language's nesting (200) */
} cexpr;

static double cx_sum(cexpr *c);

static int cx_eat(cexpr *c, char ch)
{
    if (*c->s != ch) return 0;
    c->s++;
    return 1;
}

static double cx_atom(cexpr *c)
{
    static const char *const fn[] = {"sin", "cos", "tan", "asin", "acos", "atan", "atan2",
                                     "sinh", "cosh", "tanh", "exp", "log", "abs", "sqrt"};
    char word[8];
    size_t n = 0, k;
    double a, b = 0;
    if (cx_eat(c, '(')) {
        a = cx_sum(c);
        if (!cx_eat(c, ')')) c->bad = 1;
        return a;
    }
    if ((*c->s >= '0' && *c->s <= '9') || *c->s == '.') {
        /* the longest decimal number here (no hex, inf or nan) */
        size_t len = strspn(c->s, "0123456789");
        char num[64];
        if (c->s[len] == '.') len += 1 + strspn(c->s + len + 1, "0123456789");
        if ((c->s[len] == 'e' || c->s[len] == 'E')) {
            size_t e = len + 1 + (c->s[len + 1] == '+' || c->s[len + 1] == '-');
            size_t d = strspn(c->s + e, "0123456789");
            if (d) len = e + d;
        }
        if (len >= sizeof num) len = sizeof num - 1;
        memcpy(num, c->s, len);
        num[len] = 0;
        c->s += len;
        if (!is_decimal(num)) c->bad = 1;
        return strtod(num, NULL);
    }
    while (n + 1 < sizeof word && ((c->s[n] >= 'a' && c->s[n] <= 'z') || (n && c->s[n] >= '0'
                                                                         && c->s[n] <= '9')))
        word[n] = c->s[n], n++;
    word[n] = 0;
    c->s += n;
    if (!strcmp(word, "pi")) return 3.14159265358979323846;
    for (k = 0; k < sizeof fn / sizeof fn[0] && strcmp(word, fn[k]); k++) continue;
    if (k == sizeof fn / sizeof fn[0] || !cx_eat(c, '(')) {
        c->bad = 1;
        return 0;
    }
    a = cx_sum(c);
    if (k == 6 && (!cx_eat(c, ',') || (b = cx_sum(c), 0))) c->bad = 1;
    if (!cx_eat(c, ')')) c->bad = 1;
    switch (k) {
    case 0: return sin(a);
    case 1: return cos(a);
    case 2: return tan(a);
    case 3: return asin(a);
    case 4: return acos(a);
    case 5: return atan(a);
    case 6: return atan2(a, b);
    case 7: return sinh(a);
    case 8: return cosh(a);
    case 9: return tanh(a);
    case 10: return exp(a);
    case 11: return log(a);
    case 12: return fabs(a);
    default: return sqrt(a);
    }
}

static double cx_unary(cexpr *c);

static double cx_power(cexpr *c)
{
    double a = cx_atom(c);
    return cx_eat(c, '^') ? pow(a, cx_unary(c)) : a;
}

static double cx_unary(cexpr *c)
{
    double a;
    if (++c->depth > 200) {
        c->bad = 1;
        c->s = ""; /* (nothing more is read) */
        return 0;
    }
    if (cx_eat(c, '-')) a = -cx_unary(c);
    else if (cx_eat(c, '+')) a = cx_unary(c);
    else a = cx_power(c);
    c->depth--;
    return a;
}

static double cx_product(cexpr *c)
{
    double a = cx_unary(c);
    for (;;) {
        if (cx_eat(c, '*')) a *= cx_unary(c);
        else if (cx_eat(c, '/')) a /= cx_unary(c);
        else return a;
    }
}

static double cx_sum(cexpr *c)
{
    double a = cx_product(c);
    for (;;) {
        if (cx_eat(c, '+')) a += cx_product(c);
        else if (cx_eat(c, '-')) a -= cx_product(c);
        else return a;
    }
}

int chrt_parse_value(const char *s, double *v)
{
    cexpr c = {s, 0, 0};
    int rc = parse_double(s, v);
    if (rc == 0 || rc == -2) return rc;
    *v = cx_sum(&c);
    return c.bad || *c.s || !isfinite(*v) ? -1 : 0;
}

/* What is wrong with a number parse_double refused (rc). */
static const char *number_error(int rc)
{
    return rc == -2 ? "underflows to 0 (below 4.9e-324)" : "is not a finite number";
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

/* 1 when a CSV column the model names has this name: t, a coordinate, a
 * velocity q' or an output. */
static int column_taken(const chrt_system *s, const char *name)
{
    size_t len = strlen(name);
    return !strcmp(name, "t") || find_name(s->state_names, s->nq, name, len) >= 0
           || (len > 1 && name[len - 1] == '\''
               && find_name(s->state_names, s->nq, name, len - 1) >= 0)
           || find_name(s->output_names, s->nout, name, len) >= 0;
}

const char *chrt_energy_column(const chrt_system *s, char *buf, size_t size)
{
    size_t len = 1;
    if (size < 2) return "E";
    strcpy(buf, "E");
    while (column_taken(s, buf) && len + 1 < size) buf[len++] = '_', buf[len] = 0;
    return buf;
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
    int bad = chrt_parse_value(eq + 1, &v);
    if (bad)
        return fail(errbuf, errlen, CHRT_EXIT_USAGE, "%s %s: '%s' %s", opt, arg, eq + 1,
                    bad == -1 ? "is not a finite number or constant expression (1/3, pi/2)"
                              : number_error(bad));
    /* --init is applied after all --set values are known (chrt_initial_state). */
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

typedef int (*init_fn)(void *ctx, const char *name, size_t len, double v);

/* Calls fn on every initial value. */
static int each_init(size_t ninit, const chrt_init *init, init_fn fn, void *ctx)
{
    size_t i;
    for (i = 0; i < ninit; i++) {
        int rc = fn(ctx, init[i].name, init[i].len, init[i].value);
        if (rc) return rc;
    }
    return CHRT_OK;
}

typedef struct {
    const chrt_system *s;
    double *x0, *q, *qt, *want;
    unsigned char *given; /* 1: velocity, 2: coordinate given by --init */
    int via; /* state_from is needed */
    char *errbuf;
    size_t errlen;
} init_ctx;

static int init_q(void *vc, const char *name, size_t len, double v)
{
    init_ctx *c = vc;
    int k, kind = init_kind(c->s, name, len, &k);
    if (kind == INIT_UNKNOWN) return unknown_init(c->s, name, len, c->errbuf, c->errlen);
    if (kind == INIT_COORD) {
        c->q[k] = v;
        c->given[k] |= 2;
    }
    if (kind == INIT_VELOCITY) {
        c->qt[k] = c->want[k] = v;
        c->given[k] |= 1;
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

/* Coordinates that state_from moved onto holonomic constraints, and
 * velocities given by --init that the form recomputed, into warning. */
static void note_recomputed(init_ctx *c, const double *p, char *warning, size_t wlen)
{
    size_t n = 0;
    int i;
    for (i = 0; i < c->s->nq; i++) {
        int len;
        if (c->x0[i] == c->q[i]) continue;
        len = snprintf(warning + n, wlen - n,
                       "%s%s%s=%.17g is moved to %.17g onto the holonomic constraints",
                       n ? "; " : "", c->given[i] & 2 ? "--init " : "",
                       c->s->state_names[i], c->q[i], c->x0[i]);
        if (len < 0 || (size_t)len >= wlen - n) return;
        n += (size_t)len;
    }
    if (c->s->velocities(0, c->x0, p, NULL, c->qt)) return;
    for (i = 0; i < c->s->nq; i++) {
        double w = c->want[i], g = c->qt[i];
        if (!(c->given[i] & 1) || fabs(g - w) <= 1e-9 * (fabs(w) > 1 ? fabs(w) : 1)) continue;
        int len = snprintf(warning + n, wlen - n,
                           "%s--init %s'=%.17g is recomputed from the constraints as %.17g",
                           n ? "; " : "", c->s->state_names[i], w, g);
        if (len < 0 || (size_t)len >= wlen - n) break;
        n += (size_t)len;
    }
}

int chrt_initial_state(const chrt_system *s, const double *p, size_t ninit,
                       const chrt_init *init, double *x0, char *warning, size_t wlen,
                       char *errbuf, size_t errlen)
{
    if (warning && wlen) warning[0] = 0;
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
        if (s->velocities(0, x0, s->param_defaults, NULL, c.qt)) {
            rc = fail(errbuf, errlen, CHRT_EXIT_NUMERIC,
                      "numerical failure at t = 0 (step 0): the velocities of "
                      "the model's initial state are singular");
            goto done;
        }
        for (i = 0; i < s->np; i++) c.via |= p[i] != s->param_defaults[i];
    }
    rc = each_init(ninit, init, init_q, &c);
    if (rc) goto done;
    if (c.via) {
        if (s->state_from(0, c.q, c.qt, p, x0)) {
            rc = fail(errbuf, errlen, CHRT_EXIT_NUMERIC,
                      "numerical failure at t = 0 (step 0): no state of %s "
                      "for these initial coordinates and velocities (singular)",
                      s->name);
            goto done;
        }
        if (warning && wlen) note_recomputed(&c, p, warning, wlen);
    }
    rc = each_init(ninit, init, init_state, &c);
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

/* A positive finite number for option opt into *v. */
static int positive(const char *opt, const char *v, double *d, char *errbuf,
                    size_t errlen)
{
    int bad = parse_double(v, d);
    if (bad)
        return fail(errbuf, errlen, CHRT_EXIT_USAGE, "%s: '%s' %s", opt, v,
                    number_error(bad));
    if (!(*d > 0))
        return fail(errbuf, errlen, CHRT_EXIT_USAGE, "%s: '%s' is not positive",
                    opt, v);
    return CHRT_OK;
}

static int parse_one(const chrt_system *s, int argc, char **argv, int *i,
                     chrt_args *a, double *p, char *errbuf, size_t errlen)
{
    const char *arg = argv[*i], *v = NULL;
    size_t k;
    double d;
    if (!strcmp(arg, "-h") || !strcmp(arg, "--help")) {
        a->help = 1;
        return CHRT_OK;
    }
    if (!strcmp(arg, "--project")) {
        a->opt.project = 1;
        return CHRT_OK;
    }
    if (!strcmp(arg, "--stats")) {
        a->stats = 1;
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
                        "unknown method '%s' (dop853, rk45, cvode, euler, midpoint, rk4)", v);
        a->opt.method = (chrt_method)m;
        return CHRT_OK;
    }
    case 1:
        return positive(valued[k], v, &a->opt.dt, errbuf, errlen);
    case 2: {
        int bad = parse_double(v, &a->opt.t1);
        if (bad)
            return fail(errbuf, errlen, CHRT_EXIT_USAGE, "%s: '%s' %s", valued[k], v,
                        number_error(bad));
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
    case 6:
        a->output = v;
        return CHRT_OK;
    case 7:
        return positive(valued[k], v, &a->opt.rtol, errbuf, errlen);
    case 8:
        return positive(valued[k], v, &a->opt.atol, errbuf, errlen);
    case 9:
        return positive(valued[k], v, &a->opt.dt_max, errbuf, errlen);
    case 10:
        return positive(valued[k], v, &a->opt.dt_out, errbuf, errlen);
    case 11:
        if (positive(valued[k], v, &d, errbuf, errlen) || d < 1 || d != floor(d))
            return fail(errbuf, errlen, CHRT_EXIT_USAGE,
                        "--max-steps: '%s' is not a positive integer", v);
        a->opt.max_steps = d;
        return CHRT_OK;
    default:
        /* below 0.25: a new chart must reach 4 chart_min (gen/jit/chart.h) */
        if (parse_double(v, &a->opt.chart_min) || !(a->opt.chart_min >= 0
                                                    && a->opt.chart_min < 0.25))
            return fail(errbuf, errlen, CHRT_EXIT_USAGE,
                        "--chart-min: '%s' is not a number in [0, 0.25)", v);
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
    a->stats = 0;
    a->warning[0] = 0;
    if (s && s->np) memcpy(p, s->param_defaults, (size_t)s->np * sizeof *p);
    for (i = 0; i < argc; i++) {
        int rc = parse_one(s, argc, argv, &i, a, p, errbuf, errlen);
        if (rc) return rc;
    }
    if (a->help) return CHRT_OK;
    int rc = check_options(&a->opt, 0, 0, errbuf, errlen);
    if (rc || !s) return rc;
    /* the --init values, applied after all --set values are known */
    chrt_init *init = malloc(((size_t)argc + 1) * sizeof *init);
    size_t ninit = 0;
    if (!init) return fail(errbuf, errlen, CHRT_EXIT_IO, "out of memory");
    for (i = 0; i < argc; i++) {
        const char *v = NULL;
        if (option_value(argc, argv, &i, "--init", &v)) {
            const char *eq = v ? strchr(v, '=') : NULL;
            if (!eq) continue; /* (parse_one refused it) */
            if (chrt_parse_value(eq + 1, &init[ninit].value)) continue; /* (refused) */
            init[ninit].name = v;
            init[ninit++].len = (size_t)(eq - v);
        } else if (chrt_option_takes_value(argv[i])) {
            i++;
        }
    }
    rc = chrt_initial_state(s, p, ninit, init, x0, a->warning, sizeof a->warning, errbuf,
                            errlen);
    free(init);
    return rc;
}

static void print_help(const chrt_system *s, const char *prog)
{
    int i;
    printf("usage: %s [--method M] [--rtol R] [--atol A] [--dt H] [--dt-max H]\n"
           "          [--dt-out H] [--t1 T] [--every K] [--max-steps N] [--stats]\n"
           "          [--set PARAM=V]... [--init NAME=V]... [--project]\n"
           "          [--chart-min Q] [-o FILE.csv]\n"
           "\n"
           "Integrates %s from t = 0 to T and writes CSV: t, the coordinates,\n"
           "their velocities (NAME'), E, then the optional columns. The first row\n"
           "is the initial state, the last one is at T exactly.\n"
           "\n"
           "  --method M     dop853 (default; adaptive 8th order), rk45 (adaptive\n"
           "                 5th order, alias dopri5), or fixed euler, midpoint, rk4\n"
           "  --rtol R       relative tolerance per step (default %g)\n"
           "  --atol A       absolute tolerance per step (default %g)\n"
           "  --dt H         adaptive: the first step (default automatic); fixed:\n"
           "                 the step (default %g)\n"
           "  --dt-max H     adaptive: the largest step (default none)\n"
           "  --dt-out H     adaptive: rows at t = k*H by dense output (default:\n"
           "                 one row per accepted step)\n"
           "  --t1 T         end time (default 1)\n"
           "  --every K      a row every K (accepted) steps (default 1)\n"
           "  --max-steps N  adaptive: fail after N accepted steps; fixed: refuse\n"
           "                 more than N steps (default %g)\n"
           "  --stats        steps accepted and rejected, rhs calls and re-charts\n"
           "                 on stderr\n"
           "  --set p=v      parameter value; --init sets a coordinate q (moved onto\n"
           "                 holonomic constraints), a velocity q' (dependent ones\n"
           "                 are recomputed from the constraints) or a state variable;\n"
           "                 v a number or a constant expression (1/3, pi/2, sqrt(2))\n"
           "  --project      after each step, coordinates onto the holonomic\n"
           "                 constraints, velocities onto the others (full form)\n"
           "  --chart-min Q  a reduced or hamilton form stops with exit 3 where its\n"
           "                 chart's quality falls below Q (default %g, in [0, 0.25)):\n"
           "                 this program cannot re-chart (README, Charts)\n"
           "\nstates:", prog, s->name, CHRT_RTOL, CHRT_ATOL, CHRT_FIXED_DT,
           CHRT_MAX_STEPS, CHRT_CHART_MIN);
    for (i = 0; i < s->nx; i++) printf(" %s", s->state_names[i]);
    printf("\nparameters:");
    for (i = 0; i < s->np; i++)
        printf(" %s=%.17g", s->param_names[i], s->param_defaults[i]);
    printf("\n");
}

typedef struct {
    const char *prog;
    const chrt_sink *also;
} main_notes;

static void main_note(void *ctx, double t, const char *text)
{
    const main_notes *m = ctx;
    /* the note names its time ("t = 1.5708: dependent velocities ...") */
    fprintf(stderr, "%s: note: %s\n", m->prog, text);
    if (m->also && m->also->note) m->also->note(m->also->ctx, t, text);
}

static int main_row(void *ctx, const double *v, int n)
{
    const main_notes *m = ctx;
    return m->also && m->also->row ? m->also->row(m->also->ctx, v, n) : 0;
}

int chrt_main_sink(const chrt_system *s, int argc, char **argv,
                   const chrt_main_hooks *hooks, chrt_args *parsed)
{
    const chrt_sink *also = hooks ? hooks->also : NULL;
    const char *prog = argc > 0 && argv[0] ? argv[0] : s->name;
    char msg[600];
    chrt_args a;
    chrt_stats st;
    double *x0 = malloc((s->nx ? (size_t)s->nx : 1) * sizeof *x0);
    double *p = malloc((s->np ? (size_t)s->np : 1) * sizeof *p);
    FILE *out = stdout;
    main_notes mn = {prog, also};
    chrt_sink notes = {main_row, main_note, &mn};
    int rc, ran = 0;
    if (!x0 || !p) {
        rc = fail(msg, sizeof msg, CHRT_EXIT_IO, "%s", "out of memory");
        goto done;
    }
    rc = chrt_parse_args(s, argc > 0 ? argc - 1 : 0, argv + 1, &a, x0, p, msg,
                         sizeof msg);
    if (parsed) *parsed = a;
    if (rc) goto done;
    if (a.help) {
        print_help(s, prog);
        goto done;
    }
    if (a.warning[0]) fprintf(stderr, "%s: warning: %s\n", prog, a.warning);
    if (hooks) {
        a.opt.rechart = hooks->rechart, a.opt.rechart_ctx = hooks->rechart_ctx;
        a.opt.ext = hooks->ext;
    }
    if (a.output && !(out = fopen(a.output, "w"))) {
        rc = fail(msg, sizeof msg, CHRT_EXIT_OUTPUT, "cannot open '%s': %s",
                  a.output, strerror(errno));
        out = stdout;
        goto done;
    }
    rc = chrt_simulate(s, &a.opt, x0, p, out, &notes, &st, msg, sizeof msg);
    ran = 1;
    if (out != stdout && fclose(out) != 0 && rc == CHRT_OK)
        rc = fail(msg, sizeof msg, CHRT_EXIT_OUTPUT, "cannot write '%s': %s",
                  a.output, strerror(errno));
done:
    /* --help and the CSV on stdout must have arrived (a full disk, a
     * closed pipe) */
    if (rc == CHRT_OK && (fflush(stdout) != 0 || ferror(stdout)))
        rc = fail(msg, sizeof msg, CHRT_EXIT_OUTPUT, "cannot write the standard output: %s",
                  strerror(errno));
    if (rc) fprintf(stderr, "%s: %s\n", prog, msg);
    if (ran && a.stats)
        fprintf(stderr, "%s: stats: %s, %ld steps accepted, %ld rejected, %ld rhs "
                "calls, %ld recharts\n", prog, chrt_method_name(a.opt.method),
                st.accepted, st.rejected, st.rhs_calls, st.recharts);
    free(x0);
    free(p);
    return rc;
}

int chrt_main(const chrt_system *s, int argc, char **argv)
{
    return chrt_main_sink(s, argc, argv, NULL, NULL);
}
