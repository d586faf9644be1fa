/* loop.c — Poincaré–Cartan loops (see loop.h). */
#include "jit/loop.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "jit/compile.h"
#include "core/diff.h"
#include "core/eval.h"
#include "core/matrix.h"

static const double two_pi = 6.283185307179586476925286766559;

void ch_loop_options_default(ch_loop_options *o)
{
    o->method = CHRT_RK4;
    o->dt = 1e-3;
    o->t1 = 1.0;
    o->radius = 1e-3;
    o->compiler = CH_COMPILER_TCC;
    o->keep_states = 0;
}

static int check_args(size_t npoints, const ch_loop_options *o, ch_error *err)
{
    if (npoints < CH_LOOP_MIN_POINTS || npoints > CH_LOOP_MAX_POINTS)
        return ch_error_set(err, CH_ERR_USAGE, NULL, 0, 0,
                            "a loop needs between %d and %d points (got %zu)",
                            CH_LOOP_MIN_POINTS, CH_LOOP_MAX_POINTS, npoints);
    if (chrt_method_name(o->method)[0] == '?' || chrt_method_adaptive(o->method))
        return ch_error_set(err, CH_ERR_USAGE, NULL, 0, 0,
                            "the loop needs a fixed-step method (euler, midpoint, rk4)");
    if (!(isfinite(o->dt) && o->dt > 0) || !(isfinite(o->t1) && o->t1 > 0) ||
        !(isfinite(o->radius) && o->radius > 0))
        return ch_error_set(err, CH_ERR_USAGE, NULL, 0, 0,
                            "loop dt, t1 and radius must be positive and finite "
                            "(got %g, %g, %g)", o->dt, o->t1, o->radius);
    if (o->t1 / o->dt > 1e8)
        return ch_error_set(err, CH_ERR_USAGE, NULL, 0, 0,
                            "loop t1/dt asks for %g steps; at most 1e8 are allowed",
                            o->t1 / o->dt);
    return 0;
}

/* The circulant periodic spectral differentiation row for N equally spaced
 * samples on [0, 2 pi): (D u)_j = sum_l row[(j - l) mod N] u_l (Trefethen,
 * Spectral Methods in MATLAB, ch. 3; the even-N Nyquist mode is dropped,
 * which is what makes the row real). */
static void diff_row(size_t N, double *row)
{
    row[0] = 0.0;
    for (size_t d = 1; d < N; d++) {
        double h = 0.5 * two_pi * (double)d / (double)N;
        double sign = d % 2 ? -1.0 : 1.0;
        row[d] = N % 2 ? 0.5 * sign / sin(h) : 0.5 * sign / tan(h);
    }
}

/* I1 = sum_r (2 pi / N) sum_j y_rj (D q_r)_j over the N states (stride nx):
 * coordinate of r at index indep[r], its momentum at nq + r. */
static double loop_integral(size_t N, const double *states, int nx, int nq,
                            size_t m, const int *indep, const double *row,
                            double *qc, double *yc)
{
    double total = 0.0;
    for (size_t r = 0; r < m; r++) {
        double qm = 0.0, ym = 0.0;
        for (size_t j = 0; j < N; j++) {
            qc[j] = states[j * (size_t)nx + (size_t)indep[r]];
            yc[j] = states[j * (size_t)nx + (size_t)nq + r];
            qm += qc[j], ym += yc[j];
        }
        qm /= (double)N, ym /= (double)N;
        double s = 0.0;
        for (size_t j = 0; j < N; j++) {
            double dq = 0.0;
            for (size_t l = 0; l < N; l++)
                dq += row[(j + N - l) % N] * (qc[l] - qm);
            s += (yc[j] - ym) * dq;
        }
        total += s * two_pi / (double)N;
    }
    return total;
}

/* Holonomic constraints g(t, q) = 0 (written without velocities): a point
 * whose independent coordinates moved must be put back on the level set
 * of x0 by correcting the dependent coordinates, otherwise the loop spans
 * neighbouring level sets, i.e. systems with other constraint constants,
 * and I1 changes for that reason alone. */
typedef struct {
    ch_ctx *ctx;
    const ch_mechanics *d;
    size_t h, k;
    const ch_expr **ex; /* g (h), then dg_a/dq_dep[b] (h*k, row-major) */
    double *symval;     /* by sid */
    double *val;        /* h + h*k values, then g(x0) (h), then h*h + h work */
} holo;

static int holo_init(ch_ctx *ctx, const ch_mechanics *d, holo *H, ch_error *err)
{
    const ch_model *m = d->model;
    memset(H, 0, sizeof *H);
    H->ctx = ctx, H->d = d, H->k = d->lag.k;
    for (size_t nu = 0; nu < m->k; nu++) H->h += m->holonomic[nu] != 0;
    if (H->h == 0) return 0;
    size_t h = H->h, k = H->k, a = 0;
    H->ex = calloc(h + h * k, sizeof *H->ex);
    if (!H->ex) return ch_error_set(err, CH_ERR_MEMORY, NULL, 0, 0, "out of memory");
    for (size_t nu = 0; nu < m->k; nu++) {
        if (!m->holonomic[nu]) continue;
        H->ex[a] = m->constraint_orig[nu];
        for (size_t b = 0; b < k; b++)
            H->ex[h + a * k + b] = ch_diff(ctx, m->constraint_orig[nu], m->q[d->mf.dep[b]]);
        a++;
    }
    for (size_t i = 0; i < h + h * k; i++)
        if (!H->ex[i])
            return ch_error_set(err, CH_ERR_LIMIT, NULL, 0, 0,
                                "expression limit differentiating the holonomic constraints");
    H->symval = calloc(ch_ctx_nsyms(ctx) + 1, sizeof *H->symval);
    H->val = calloc(h + h * k + h + h * h + h, sizeof *H->val);
    if (!H->symval || !H->val)
        return ch_error_set(err, CH_ERR_MEMORY, NULL, 0, 0, "out of memory");
    return 0;
}

static void holo_free(holo *H)
{
    free(H->ex), free(H->symval), free(H->val);
}

static void holo_eval(holo *H, const double *q)
{
    const ch_model *m = H->d->model;
    H->symval[ch_sym_of(m->t)->sid] = 0.0;
    for (size_t i = 0; i < m->n; i++) H->symval[ch_sym_of(m->q[i])->sid] = q[i];
    for (size_t i = 0; i < m->np; i++) H->symval[ch_sym_of(m->param[i])->sid] = m->param_default[i];
    ch_eval_d_many(H->ctx, H->h + H->h * H->k, H->ex, H->symval, H->val);
}

/* Newton with the minimum-norm step dq_dep = -J^T (J J^T)^-1 (g - g0) on
 * the dependent coordinates (J has full row rank: the dependent block of
 * G is invertible). 0, or 1 when it does not converge. */
static int holo_project(holo *H, double *q)
{
    size_t h = H->h, k = H->k;
    if (h == 0) return 0;
    double *g = H->val, *J = g + h, *g0 = J + h * k, *A = g0 + h, *z = A + h * h;
    for (int it = 0; it < 50; it++) {
        holo_eval(H, q);
        double res = 0.0, scale = 1.0;
        for (size_t a = 0; a < h; a++) {
            z[a] = g[a] - g0[a];
            res = fmax(res, fabs(z[a]));
            scale = fmax(scale, fabs(g0[a]));
        }
        if (!isfinite(res)) return 1;
        if (res <= 4e-16 * scale) return 0;
        for (size_t a = 0; a < h; a++)
            for (size_t c = 0; c < h; c++) {
                double s = 0.0;
                for (size_t b = 0; b < k; b++) s += J[a * k + b] * J[c * k + b];
                A[a * h + c] = s;
            }
        if (ch_dense_solve(h, A, z, 0.0)) return 1;
        double step = 0.0;
        for (size_t b = 0; b < k; b++) {
            double dq = 0.0;
            for (size_t a = 0; a < h; a++) dq += J[a * k + b] * z[a];
            q[H->d->mf.dep[b]] -= dq;
            step = fmax(step, fabs(dq));
        }
        if (step == 0.0) return 0;
    }
    return 1;
}

/* Transports one state from 0 to t1 with the runtime's loop. The method
 * stays a fixed-step one (loop.h): the same step sequence for every point
 * keeps the transported curve a smooth image of the start curve, which
 * the spectral quadrature needs; the error control of an adaptive method
 * would choose steps point by point. */
static int transport(const chrt_system *s, const ch_loop_options *o,
                     double *x, const double *p, size_t point, ch_error *err)
{
    chrt_options ro;
    chrt_options_default(&ro);
    ro.method = o->method;
    ro.dt = o->dt;
    ro.t1 = o->t1;
    ro.max_steps = 1e8;
    char msg[400];
    double t;
    /* the flow map over [0, t1]: a model's events (a stop) do not end it */
    chrt_system flow = *s;
    const chrt_system *fs = &flow;
    flow.nev = 0;
    int rc = chrt_integrate(&fs, &ro, 0, x, p, NULL, NULL, NULL, &t, msg, sizeof msg);
    if (rc == CHRT_EXIT_NUMERIC)
        return ch_error_set(err, CH_ERR_NUMERIC, NULL, 0, 0, "loop point %zu: %s",
                            point, msg);
    if (rc == CHRT_EXIT_USAGE)
        return ch_error_set(err, CH_ERR_USAGE, NULL, 0, 0, "%s", msg);
    if (rc) return ch_error_set(err, CH_ERR_MEMORY, NULL, 0, 0, "%s", msg);
    return 0;
}

/* Places the N states on the circle of loop.h around x0 and transports
 * them; start and end hold N*nx doubles each. */
static int run_points(const chrt_system *s, const ch_loop_options *o,
                      size_t N, size_t m, const int *indep, holo *H,
                      double *start, double *end, double *work, ch_error *err)
{
    size_t nx = (size_t)s->nx, nq = (size_t)s->nq;
    double *x0 = work;
    s->initial(x0);
    for (size_t i = 0; i < nx; i++)
        if (!isfinite(x0[i]))
            return ch_error_set(err, CH_ERR_NUMERIC, NULL, 0, 0,
                                "the model's initial state has no finite momenta");
    if (H->h) {
        holo_eval(H, x0);
        memcpy(H->val + H->h + H->h * H->k, H->val, H->h * sizeof *H->val);
    }
    for (size_t j = 0; j < N; j++) {
        double th = two_pi * (double)j / (double)N;
        double *x = start + j * nx;
        for (size_t i = 0; i < nx; i++) x[i] = x0[i];
        for (size_t r = 0; r < m; r++) {
            x[indep[r]] += o->radius * cos(th);
            x[nq + r] += o->radius * sin(th);
        }
        if (holo_project(H, x))
            return ch_error_set(err, CH_ERR_NUMERIC, NULL, 0, 0,
                                "loop point %zu: the holonomic constraints cannot be "
                                "restored by moving the dependent coordinates", j);
        for (size_t i = 0; i < nx; i++) end[j * nx + i] = x[i];
        int rc = transport(s, o, end + j * nx, s->param_defaults, j, err);
        if (rc) return rc;
    }
    return 0;
}

int ch_loop_run(ch_ctx *ctx, const ch_mechanics *d, size_t npoints,
                const ch_loop_options *options, ch_loop_result *res,
                ch_error *err)
{
    ch_loop_options def;
    ch_loop_options_default(&def);
    const ch_loop_options *o = options ? options : &def;
    res->start = res->end = NULL;
    res->nx = res->nq = 0;
    int rc = check_args(npoints, o, err);
    if (rc) return rc;
    size_t m = d->lag.n - d->lag.k;
    if (m == 0)
        return ch_error_set(err, CH_ERR_MODEL, d->model->file, 0, 0,
                            "model %s has no independent coordinate: no loop to transport",
                            d->model->name);
    /* The emitter refuses the form (CH_ERR_MODEL with the reason) when H*
     * does not exist. */
    ch_compiled *c = NULL;
    rc = ch_compile_form(ctx, d, CH_FORM_HAMILTON, NULL, o->compiler, &c, err);
    if (rc) return rc;
    holo H;
    rc = holo_init(ctx, d, &H, err);
    if (rc) {
        holo_free(&H);
        ch_compiled_free(c);
        return rc;
    }
    const chrt_system *s = &c->sys;
    size_t N = npoints, nx = (size_t)s->nx;
    double *start = malloc(N * nx * sizeof *start);
    double *end = malloc(N * nx * sizeof *end);
    double *work = malloc((nx + 1) * sizeof *work);
    double *row = malloc(3 * N * sizeof *row);
    if (!start || !end || !work || !row) {
        rc = ch_error_set(err, CH_ERR_MEMORY, NULL, 0, 0, "out of memory");
    } else {
        rc = run_points(s, o, N, m, d->mf.indep, &H, start, end, work, err);
    }
    if (!rc) {
        diff_row(N, row);
        res->points = N;
        res->t1 = o->t1;
        res->I_start = loop_integral(N, start, s->nx, s->nq, m, d->mf.indep, row,
                                     row + N, row + 2 * N);
        res->I_end = loop_integral(N, end, s->nx, s->nq, m, d->mf.indep, row,
                                   row + N, row + 2 * N);
        res->relative_drift = fabs(res->I_end - res->I_start) / fabs(res->I_start);
        if (o->keep_states) {
            res->start = start, res->end = end, start = end = NULL;
            res->nx = nx, res->nq = (size_t)s->nq;
        }
    }
    free(start), free(end), free(work), free(row);
    holo_free(&H);
    ch_compiled_free(c);
    return rc;
}
