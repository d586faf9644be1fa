/* cvode.c — the CVODE stepper of cvode.h (SUNDIALS 6). */
#include "jit/cvode.h"

#include <cvode/cvode.h>
#include <math.h>
#include <nvector/nvector_serial.h>
#include <stdlib.h>
#include <string.h>
#include <sunlinsol/sunlinsol_dense.h>
#include <sunmatrix/sunmatrix_dense.h>

struct ch_cvode {
    SUNContext sun;
    void *mem;
    N_Vector y, tmp;
    SUNMatrix A;
    SUNLinearSolver ls;
    int nx;
    ch_cvode_rhs f;
    void *ctx;
    double tstop;
    long steps, rejected, rhs; /* counts of the runs before the last restart */
    char msg[256];             /* CVODE's last message */
};

static int frhs(sunrealtype t, N_Vector y, N_Vector ydot, void *data)
{
    ch_cvode *c = data;
    double *d = N_VGetArrayPointer(ydot);
    if (c->f(c->ctx, t, N_VGetArrayPointer(y), d)) return 1;
    for (int i = 0; i < c->nx; i++)
        if (!isfinite(d[i])) return 1;
    return 0;
}

static void on_error(int code, const char *module, const char *function,
                     char *msg, void *data)
{
    ch_cvode *c = data;
    (void)code, (void)module, (void)function;
    snprintf(c->msg, sizeof c->msg, "%s", msg);
}

static void counts(const ch_cvode *c, long *steps, long *rejected, long *rhs)
{
    long nst = 0, nfe = 0, nfels = 0, netf = 0, ncf = 0;
    CVodeGetNumSteps(c->mem, &nst);
    CVodeGetNumRhsEvals(c->mem, &nfe);
    CVodeGetNumLinRhsEvals(c->mem, &nfels);
    CVodeGetNumErrTestFails(c->mem, &netf);
    CVodeGetNumNonlinSolvConvFails(c->mem, &ncf);
    *steps = nst, *rejected = netf + ncf, *rhs = nfe + nfels;
}

void ch_cvode_stats(const ch_cvode *c, long *steps, long *rejected,
                    long *rhs_calls)
{
    counts(c, steps, rejected, rhs_calls);
    *steps += c->steps, *rejected += c->rejected, *rhs_calls += c->rhs;
}

void ch_cvode_free(ch_cvode *c)
{
    if (!c) return;
    if (c->mem) CVodeFree(&c->mem);
    if (c->ls) SUNLinSolFree(c->ls);
    if (c->A) SUNMatDestroy(c->A);
    if (c->y) N_VDestroy(c->y);
    if (c->tmp) N_VDestroy(c->tmp);
    if (c->sun) SUNContext_Free(&c->sun);
    free(c);
}

/* Fails with CVODE's message (or what) at time t. */
static int fail(ch_cvode *c, ch_error *err, int code, double t, const char *what)
{
    return ch_error_set(err, code, NULL, 0, 0, "cvode at t = %.17g: %s%s%s", t,
                        what, c->msg[0] ? ": " : "", c->msg);
}

static int start(ch_cvode *c, double t, ch_error *err)
{
    if (CVodeSetStopTime(c->mem, c->tstop) != CV_SUCCESS)
        return fail(c, err, CH_ERR_NUMERIC, t, "the stop time is not after the start");
    return 0;
}

ch_cvode *ch_cvode_new(int nx, ch_cvode_rhs f, void *ctx, double t0,
                       const double *x0, const ch_cvode_opts *o, ch_error *err)
{
    if (nx < 1 || !(o->rtol > 0) || !(o->atol > 0) || !(o->h0 >= 0)
        || !(o->hmax >= 0) || !(o->tstop >= t0)) {
        ch_error_set(err, CH_ERR_USAGE, NULL, 0, 0, "%s",
                     "cvode: invalid options (tolerances > 0, steps >= 0, t1 >= t0)");
        return NULL;
    }
    ch_cvode *c = calloc(1, sizeof *c);
    if (!c || SUNContext_Create(NULL, &c->sun) != 0) {
        free(c);
        ch_error_set(err, CH_ERR_MEMORY, NULL, 0, 0, "%s", "cvode: out of memory");
        return NULL;
    }
    c->nx = nx, c->f = f, c->ctx = ctx, c->tstop = o->tstop;
    c->y = N_VNew_Serial(nx, c->sun);
    c->tmp = N_VNew_Serial(nx, c->sun);
    c->mem = CVodeCreate(CV_BDF, c->sun);
    c->A = SUNDenseMatrix(nx, nx, c->sun);
    if (!c->y || !c->tmp || !c->mem || !c->A) goto oom;
    c->ls = SUNLinSol_Dense(c->y, c->A, c->sun);
    if (!c->ls) goto oom;
    memcpy(N_VGetArrayPointer(c->y), x0, (size_t)nx * sizeof *x0);
    CVodeSetErrHandlerFn(c->mem, on_error, c);
    if (CVodeInit(c->mem, frhs, t0, c->y) != CV_SUCCESS
        || CVodeSetUserData(c->mem, c) != CV_SUCCESS
        || CVodeSStolerances(c->mem, o->rtol, o->atol) != CV_SUCCESS
        || CVodeSetLinearSolver(c->mem, c->ls, c->A) != CV_SUCCESS
        || CVodeSetMaxNumSteps(c->mem, 100000) != CV_SUCCESS
        || (o->h0 > 0 && CVodeSetInitStep(c->mem, o->h0) != CV_SUCCESS)
        || (o->hmax > 0 && CVodeSetMaxStep(c->mem, o->hmax) != CV_SUCCESS)
        || start(c, t0, err)) {
        if (!err || !err->code) fail(c, err, CH_ERR_NUMERIC, t0, "initialisation failed");
        ch_cvode_free(c);
        return NULL;
    }
    return c;
oom:
    ch_cvode_free(c);
    ch_error_set(err, CH_ERR_MEMORY, NULL, 0, 0, "%s", "cvode: out of memory");
    return NULL;
}

int ch_cvode_step(ch_cvode *c, double *t, double *x, ch_error *err)
{
    sunrealtype tr = *t;
    c->msg[0] = 0;
    int flag = CVode(c->mem, c->tstop, c->y, &tr, CV_ONE_STEP);
    if (flag < 0) {
        CVodeGetCurrentTime(c->mem, &tr);
        return fail(c, err, CH_ERR_NUMERIC, tr, CVodeGetReturnFlagName(flag));
    }
    /* CVODE goes on with steps that no longer move t (t + h = t, after a
     * warning) where the right-hand side keeps failing: no progress is a
     * failure here. */
    if (!(tr > *t))
        return fail(c, err, CH_ERR_NUMERIC, tr,
                    "the step size fell below round-off (t + h = t)");
    *t = tr;
    memcpy(x, N_VGetArrayPointer(c->y), (size_t)c->nx * sizeof *x);
    return 0;
}

int ch_cvode_dense(ch_cvode *c, double t, double *x, ch_error *err)
{
    c->msg[0] = 0;
    if (CVodeGetDky(c->mem, t, 0, c->tmp) != CV_SUCCESS)
        return fail(c, err, CH_ERR_NUMERIC, t, "dense output outside the last step");
    memcpy(x, N_VGetArrayPointer(c->tmp), (size_t)c->nx * sizeof *x);
    return 0;
}

int ch_cvode_restart(ch_cvode *c, double t, const double *x, ch_error *err)
{
    long s, r, n;
    counts(c, &s, &r, &n); /* CVodeReInit sets CVODE's own counters to 0 */
    c->steps += s, c->rejected += r, c->rhs += n;
    c->msg[0] = 0;
    memcpy(N_VGetArrayPointer(c->y), x, (size_t)c->nx * sizeof *x);
    if (CVodeReInit(c->mem, t, c->y) != CV_SUCCESS)
        return fail(c, err, CH_ERR_NUMERIC, t, "restart failed");
    return start(c, t, err);
}

/* ---- the runtime loop's stepper ----------------------------------------- */

/* The reason into err; -1 out of memory (chrt_ext_stepper), 1 otherwise. */
static int ext_err(const ch_error *e, char *err, size_t len)
{
    snprintf(err, len, "%s", e->msg);
    return e->code == CH_ERR_MEMORY ? -1 : 1;
}

/* The loop's right-hand side (ch_cvode_rhs with the ext as context). */
static int ext_rhs(void *ctx, double t, const double *x, double *dxdt)
{
    ch_cvode_ext *e = ctx;
    return e->s->rhs(t, x, e->p, e->vs, dxdt);
}

static int ext_start(void *ctx, const chrt_system *s, const chrt_options *o,
                     double t0, const double *x, const double *p, const double *vs,
                     char *err, size_t len)
{
    ch_cvode_ext *e = ctx;
    ch_error er;
    ch_cvode_opts co = {o->rtol, o->atol, o->dt, o->dt_max, o->t1};
    ch_error_clear(&er);
    ch_cvode_free(e->c);
    e->s = s, e->p = p, e->vs = vs;
    e->c = ch_cvode_new(s->nx, ext_rhs, e, t0, x, &co, &er);
    e->t = t0;
    e->hmax = e->hcur = o->dt_max;
    return e->c ? 0 : ext_err(&er, err, len);
}

static int ext_advance(void *ctx, double hmax, double *tn, double *xn, char *err,
                       size_t len)
{
    ch_cvode_ext *e = ctx;
    ch_error er;
    ch_error_clear(&er);
    /* the loop's bound for this step, or the options' (<= 0: none) */
    double h = hmax > 0 && (e->hmax <= 0 || hmax < e->hmax) ? hmax : e->hmax;
    if (h != e->hcur && CVodeSetMaxStep(e->c->mem, h > 0 ? h : 0) == CV_SUCCESS)
        e->hcur = h;
    if (ch_cvode_step(e->c, &e->t, xn, &er)) return ext_err(&er, err, len);
    *tn = e->t;
    return 0;
}

static int ext_dense(void *ctx, double t, double *x, char *err, size_t len)
{
    ch_cvode_ext *e = ctx;
    ch_error er;
    ch_error_clear(&er);
    return ch_cvode_dense(e->c, t, x, &er) ? ext_err(&er, err, len) : 0;
}

static int ext_restart(void *ctx, const chrt_system *s, double t, const double *x,
                       char *err, size_t len)
{
    ch_cvode_ext *e = ctx;
    ch_error er;
    ch_error_clear(&er);
    e->t = t;
    e->s = s;
    return ch_cvode_restart(e->c, t, x, &er) ? ext_err(&er, err, len) : 0;
}

static void ext_counts(void *ctx, long *rejected, long *rhs_calls)
{
    ch_cvode_ext *e = ctx;
    long steps = 0;
    *rejected = *rhs_calls = 0;
    if (e->c) ch_cvode_stats(e->c, &steps, rejected, rhs_calls);
}

void ch_cvode_ext_init(ch_cvode_ext *e)
{
    e->c = NULL;
    e->s = NULL, e->p = e->vs = NULL;
    e->t = e->hmax = e->hcur = 0;
    e->ops = (chrt_ext_stepper){e, ext_start, ext_advance, ext_dense, ext_restart,
                                ext_counts};
}

void ch_cvode_ext_free(ch_cvode_ext *e)
{
    ch_cvode_free(e->c);
    e->c = NULL;
}
