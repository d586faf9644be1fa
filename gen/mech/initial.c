/* initial.c — the consistent initial state (see initial.h). */
#include "mech/initial.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/matrix.h"

typedef struct {
    ch_ctx *ctx;
    const ch_model *m;
    const ch_lagrange *L;
    const ch_manifold *mf;
    ch_initial *out;
    double *symval; /* by sid */
    size_t maxwarn;
} ini;

/* The shortest decimal that reads back as v. */
static const char *num(char *buf, size_t size, double v)
{
    for (int p = 1; p <= 17; p++) {
        snprintf(buf, size, "%.*g", p, v);
        if (strtod(buf, NULL) == v) break;
    }
    return buf;
}

static int warn(ini *I, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

static int warn(ini *I, const char *fmt, ...)
{
    ch_error e;
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e.msg, sizeof e.msg, fmt, ap);
    va_end(ap);
    if (I->out->nwarn >= I->maxwarn) return 0;
    e.code = CH_OK, e.file = I->m->file;
    e.line = I->m->initial_pos.line, e.col = I->m->initial_pos.col;
    ch_diag_format(&e, "warning", line, sizeof line);
    const char *s = ch_ctx_strdup(I->ctx, line);
    if (!s) return -1;
    I->out->warn[I->out->nwarn++] = s;
    return 0;
}

/* Evaluates ne expressions at t = 0, coordinates q, velocities v and the
 * default parameters. */
static void eval_at(ini *I, size_t ne, const ch_expr *const *ex, const double *q,
                    const double *v, double *val)
{
    const ch_model *m = I->m;
    I->symval[ch_sym_of(m->t)->sid] = 0.0;
    for (size_t i = 0; i < m->n; i++) {
        I->symval[ch_sym_of(m->q[i])->sid] = q[i];
        I->symval[ch_sym_of(m->qt[i])->sid] = v[i];
    }
    for (size_t i = 0; i < m->np; i++)
        I->symval[ch_sym_of(m->param[i])->sid] = m->param_default[i];
    ch_eval_d_many(I->ctx, ne, ex, I->symval, val);
}

/* ---- positions ------------------------------------------------------------ */

typedef struct {
    size_t h, n;
    const ch_expr **ex; /* g (h), then J = dg/dq (h*n, row-major) */
    double *val;        /* h + h*n */
    double *A, *z;      /* h*h, h */
    unsigned char *involved; /* n: some holonomic constraint has dg/dq_j != 0 */
} holo;

/* The distance |g_a| / |dg_a/dq| of constraint a from the values in
 * H->val, in units of its tolerance (> 1: violated); NaN when g is not
 * defined, infinite when the gradient of a violated constraint vanishes. */
static double distance(const holo *H, const double *q, size_t a)
{
    const double *J = H->val + H->h + a * H->n;
    double norm = 0.0, big = 0.0, g = H->val[a];
    for (size_t j = 0; j < H->n; j++) {
        norm += J[j] * J[j];
        if (J[j] != 0.0) big = fmax(big, fabs(q[j]));
    }
    if (g == 0.0) return 0.0;
    return fabs(g) / sqrt(norm) / (CH_INITIAL_QTOL * (1.0 + big));
}

/* The largest distance() over the constraints; into worst the constraint
 * that has it (NaN first). */
static double violation(const holo *H, const double *q, size_t *worst)
{
    double r = 0.0;
    *worst = 0;
    for (size_t a = 0; a < H->h; a++) {
        double d = distance(H, q, a);
        if (!(d <= r)) {
            r = d;
            *worst = a;
        }
        if (isnan(d)) return d;
    }
    return r;
}

/* Newton with minimum-norm steps on the coordinates with use[j] from q
 * (changed in place). 0 converged; 1 singular; 2 not converged. */
static int holo_newton(ini *I, holo *H, const unsigned char *use, double *q, double *v)
{
    size_t h = H->h, n = H->n;
    for (int it = 0; it < 100; it++) {
        eval_at(I, h + h * n, H->ex, q, v, H->val);
        const double *J = H->val + h;
        for (size_t a = 0; a < h; a++) {
            H->z[a] = H->val[a];
            for (size_t c = 0; c < h; c++) {
                double s = 0.0;
                for (size_t j = 0; j < n; j++)
                    if (use[j]) s += J[a * n + j] * J[c * n + j];
                H->A[a * h + c] = s;
            }
        }
        if (ch_dense_solve(h, H->A, H->z, 1e-12)) return 1;
        double step = 0.0, size = 1.0;
        for (size_t j = 0; j < n; j++) {
            if (!use[j]) continue;
            double dq = 0.0;
            for (size_t a = 0; a < h; a++) dq += J[a * n + j] * H->z[a];
            q[j] -= dq;
            step = fmax(step, fabs(dq));
            size = fmax(size, fabs(q[j]) + 1.0);
        }
        if (!isfinite(step)) return 2;
        if (step <= 1e-15 * size) break;
    }
    eval_at(I, h + h * n, H->ex, q, v, H->val);
    size_t worst;
    return violation(H, q, &worst) <= 1.0 ? 0 : 2;
}

/* "1" or "1, 3" (1-based numbers of the constraints violated at the
 * given state). */
static void violated_list(const ini *I, const holo *H, const double *q, char *buf, size_t size)
{
    size_t len = 0;
    buf[0] = 0;
    for (size_t a = 0; a < H->h; a++) {
        if (!(distance(H, q, a) > 1.0)) continue;
        int w = snprintf(buf + len, size - len, "%s%d", len ? ", " : "",
                         I->out->hol[a] + 1);
        if (w < 0 || (size_t)w >= size - len) break;
        len += (size_t)w;
    }
}

static int fix_positions(ini *I, ch_error *err)
{
    const ch_model *m = I->m;
    ch_initial *o = I->out;
    size_t h = o->nhol, n = m->n;
    holo H = {h, n, NULL, NULL, NULL, NULL, NULL};
    H.ex = ch_ctx_alloc(I->ctx, (h + h * n) * sizeof *H.ex);
    H.val = ch_ctx_alloc(I->ctx, (h + h * n + h * h + h) * sizeof *H.val);
    H.involved = ch_ctx_alloc(I->ctx, n);
    double *q = ch_ctx_alloc(I->ctx, n * sizeof *q);
    unsigned char *use = ch_ctx_alloc(I->ctx, n);
    if (!H.ex || !H.val || !H.involved || !q || !use)
        return ch_error_set(err, CH_ERR_MEMORY, NULL, 0, 0, "out of memory");
    H.A = H.val + h + h * n, H.z = H.A + h * h;
    for (size_t a = 0; a < h; a++) {
        size_t nu = (size_t)o->hol[a];
        H.ex[a] = m->constraint_orig[nu];
        for (size_t j = 0; j < n; j++) {
            const ch_expr *e = I->L->G[nu * n + j];
            H.ex[h + a * n + j] = e ? e : ch_zero(I->ctx);
            if (e && !ch_is_zero(e)) H.involved[j] = 1;
        }
    }
    eval_at(I, h + h * n, H.ex, o->q, o->qt, H.val);
    size_t worst;
    double viol = violation(&H, o->q, &worst);
    if (viol <= 1.0) return 0;
    char list[128], b1[40];
    violated_list(I, &H, o->q, list, sizeof list);
    ch_pos at = m->initial_pos.line ? m->initial_pos : m->constraint_pos[o->hol[worst]];
    if (!isfinite(H.val[worst]))
        return ch_error_set(err, CH_ERR_MODEL, m->file, at.line, at.col,
                            "holonomic constraint %d is not defined at the initial state",
                            o->hol[worst] + 1);
    for (size_t a = 0; a < h; a++)
        if (distance(&H, o->q, a) > 1.0
            && warn(I, "the initial state violates holonomic constraint %d (residual %.3g): "
                       "coordinates are moved onto it", o->hol[a] + 1, H.val[a]) < 0)
            return ch_error_set(err, CH_ERR_MEMORY, NULL, 0, 0, "out of memory");
    double gworst = H.val[worst];
    /* The coordinates `initial` does not give first, then all. */
    int rc = 1;
    size_t nfree = 0;
    for (size_t j = 0; j < n; j++) nfree += use[j] = H.involved[j] && !m->q0_given[j];
    if (nfree) {
        memcpy(q, o->q, n * sizeof *q);
        rc = holo_newton(I, &H, use, q, o->qt);
    }
    if (rc) {
        memcpy(use, H.involved, n);
        memcpy(q, o->q, n * sizeof *q);
        rc = holo_newton(I, &H, use, q, o->qt);
    }
    if (rc && !m->initial_pos.line) {
        /* no `initial` statement: the zero state is nobody's choice, and
         * `run --init` may still give a good one */
        o->nwarn = 0;
        return warn(I, "the model has no initial statement and its zero state violates "
                       "holonomic constraint%s %s (largest residual %.3g) beyond correction: "
                       "give an initial state (initial, or run --init)",
                    strchr(list, ',') ? "s" : "", list, gworst) < 0
                   ? ch_error_set(err, CH_ERR_MEMORY, NULL, 0, 0, "out of memory") : 0;
    }
    if (rc)
        return ch_error_set(err, CH_ERR_MODEL, m->file, at.line, at.col,
                            "the initial state violates holonomic constraint%s %s "
                            "(largest residual %.3g) and cannot be moved onto %s: %s",
                            strchr(list, ',') ? "s" : "", list, gworst,
                            strchr(list, ',') ? "them" : "it",
                            rc == 1 ? "the constraints' gradient is singular there"
                                    : "Newton's method does not converge");
    for (size_t j = 0; j < n; j++) {
        if (q[j] == o->q[j]) continue;
        char b2[40];
        if (warn(I, "initial %s=%s is moved to %s (by %.3g) onto holonomic constraint%s %s",
                 ch_sym_of(m->q[j])->name, num(b1, sizeof b1, o->q[j]),
                 num(b2, sizeof b2, q[j]), q[j] - o->q[j],
                 strchr(list, ',') ? "s" : "", list) < 0)
            return ch_error_set(err, CH_ERR_MEMORY, NULL, 0, 0, "out of memory");
        o->q[j] = q[j];
    }
    return 0;
}

/* ---- velocities ----------------------------------------------------------- */

/* The dependent velocities of mf->v0 (solved at the corrected
 * coordinates by ch_manifold_init), with a warning for each given value
 * they replace. */
static int fix_velocities(ini *I, ch_error *err)
{
    const ch_model *m = I->m;
    ch_initial *o = I->out;
    const double *v = I->mf->v0;
    if (!v) return 0; /* no root near the given values: left as given */
    for (size_t b = 0; b < I->mf->k; b++) {
        size_t j = (size_t)I->mf->dep[b];
        double given = o->qt[j];
        if (m->qt0_given[j] && fabs(v[j] - given) > CH_INITIAL_VTOL * fmax(1.0, fabs(given))) {
            char b1[40], b2[40];
            if (warn(I, "initial %s'=%s is recomputed from the constraints as %s",
                     ch_sym_of(m->q[j])->name, num(b1, sizeof b1, given),
                     num(b2, sizeof b2, v[j])) < 0)
                return ch_error_set(err, CH_ERR_MEMORY, NULL, 0, 0, "out of memory");
        }
    }
    memcpy(o->qt, v, m->n * sizeof *v);
    return 0;
}

int ch_initial_positions(ch_ctx *ctx, const ch_model *m, const ch_lagrange *L,
                         ch_initial *out, ch_error *err)
{
    size_t n = m->n;
    memset(out, 0, sizeof *out);
    ini I = {ctx, m, L, NULL, out, NULL, 2 * n + m->k + 1};
    out->n = n;
    out->maxwarn = I.maxwarn;
    out->q = ch_ctx_alloc(ctx, (n ? n : 1) * sizeof *out->q);
    out->qt = ch_ctx_alloc(ctx, (n ? n : 1) * sizeof *out->qt);
    out->hol = ch_ctx_alloc(ctx, (m->k ? m->k : 1) * sizeof *out->hol);
    out->warn = ch_ctx_alloc(ctx, I.maxwarn * sizeof *out->warn);
    I.symval = ch_ctx_alloc(ctx, (ch_ctx_nsyms(ctx) + 1) * sizeof *I.symval);
    if (!out->q || !out->qt || !out->hol || !out->warn || !I.symval)
        return ch_error_set(err, CH_ERR_MEMORY, NULL, 0, 0, "out of memory");
    memcpy(out->q, m->q0, n * sizeof *out->q);
    memcpy(out->qt, m->qt0, n * sizeof *out->qt);
    for (size_t nu = 0; nu < m->k; nu++)
        if (m->holonomic[nu]) out->hol[out->nhol++] = (int)nu;
    return out->nhol ? fix_positions(&I, err) : 0;
}

int ch_initial_velocities(ch_ctx *ctx, const ch_model *m, const ch_manifold *mf,
                          ch_initial *out, ch_error *err)
{
    ini I = {ctx, m, mf->lag, mf, out, NULL, out->maxwarn};
    return fix_velocities(&I, err);
}
