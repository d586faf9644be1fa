/* chart.c — re-charting the reduced and hamilton forms (see chart.h). */
#include "jit/chart.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/emit_red.h"
#include "core/eval.h"

typedef struct {
    int *dep;              /* k coordinate indices, increasing */
    ch_model *model;       /* the parsed model with dep and the state of the switch
                            * (its own allocation: the mechanics points to it) */
    double *q0, *qt0;
    ch_mechanics *d;      /* NULL for the first chart (the caller's) */
    ch_compiled *comp;     /* NULL for the first chart */
    const chrt_system *sys;
} chart;

struct ch_charts {
    ch_ctx *ctx;
    const ch_mechanics *d; /* the first chart's: G and the names */
    ch_form form;
    ch_compiler cc;
    double chart_min;
    size_t n, k;
    chart *ch;
    size_t nch, cap;
    double *symval, *g, *a, *qt, *xn; /* scratch */
    int *dep;
};

static int cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

static chart *add_chart(ch_charts *c)
{
    if (c->nch == c->cap) {
        size_t cap = c->cap ? 2 * c->cap : 4;
        chart *ch = realloc(c->ch, cap * sizeof *ch);
        if (!ch) return NULL;
        c->ch = ch, c->cap = cap;
    }
    chart *h = &c->ch[c->nch];
    memset(h, 0, sizeof *h);
    if (!(h->dep = malloc((c->k ? c->k : 1) * sizeof *h->dep))) return NULL;
    c->nch++;
    return h;
}

ch_charts *ch_charts_new(ch_ctx *ctx, const ch_mechanics *d, ch_form form,
                         ch_compiler cc, const chrt_system *first, double chart_min)
{
    ch_charts *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    c->ctx = ctx, c->d = d, c->form = form, c->cc = cc, c->chart_min = chart_min;
    c->n = d->lag.n, c->k = d->lag.k;
    size_t n = c->n, k = c->k, ns = ch_ctx_nsyms(ctx);
    c->symval = calloc(ns + 1, sizeof *c->symval);
    c->g = malloc((k * n + 1) * sizeof *c->g);
    c->a = malloc((k * n + 1) * sizeof *c->a);
    c->qt = malloc((n + 1) * sizeof *c->qt);
    c->xn = malloc((2 * n + 1) * sizeof *c->xn);
    c->dep = malloc((k + 1) * sizeof *c->dep);
    chart *h = c->symval && c->g && c->a && c->qt && c->xn && c->dep ? add_chart(c) : NULL;
    if (!h) {
        ch_charts_free(c);
        return NULL;
    }
    memcpy(h->dep, d->mf.dep, k * sizeof *h->dep);
    qsort(h->dep, k, sizeof *h->dep, cmp_int);
    h->sys = first;
    return c;
}

void ch_charts_free(ch_charts *c)
{
    if (!c) return;
    for (size_t i = 0; i < c->nch; i++) {
        ch_compiled_free(c->ch[i].comp);
        free(c->ch[i].dep);
        free(c->ch[i].q0);
        free(c->ch[i].qt0);
        free(c->ch[i].model);
    }
    free(c->ch);
    free(c->symval), free(c->g), free(c->a), free(c->qt), free(c->xn), free(c->dep);
    free(c);
}

void ch_charts_set_chart_min(ch_charts *c, double chart_min) { c->chart_min = chart_min; }

/* "x' y'" of the k coordinates dep into buf. */
static void dep_names(const ch_charts *c, const int *dep, char *buf, size_t size)
{
    size_t len = 0;
    buf[0] = 0;
    for (size_t a = 0; a < c->k && len + 1 < size; a++) {
        int w = snprintf(buf + len, size - len, "%s%s'", a ? " " : "",
                         ch_sym_of(c->d->model->q[dep[a]])->name);
        if (w < 0) break;
        len += (size_t)w;
    }
}

static chart *find_sys(ch_charts *c, const chrt_system *s)
{
    for (size_t i = 0; i < c->nch; i++)
        if (c->ch[i].sys == s) return &c->ch[i];
    return NULL;
}

void ch_charts_dependent(const ch_charts *c, const chrt_system *s, char *buf, size_t size)
{
    chart *h = find_sys((ch_charts *)c, s);
    if (h) dep_names(c, h->dep, buf, size);
    else if (size) buf[0] = 0;
}

/* G (k x n) at (t, q, qt, p) into c->g, every row scaled to unit length;
 * 0, or 1 + the index of a row that is zero or not finite. */
static int scaled_g(ch_charts *c, double t, const double *q, const double *qt, const double *p)
{
    const ch_model *m = c->d->model;
    size_t n = c->n, k = c->k;
    c->symval[ch_sym_of(m->t)->sid] = t;
    for (size_t i = 0; i < n; i++) {
        c->symval[ch_sym_of(m->q[i])->sid] = q[i];
        c->symval[ch_sym_of(m->qt[i])->sid] = qt[i];
    }
    for (size_t j = 0; j < m->np; j++) c->symval[ch_sym_of(m->param[j])->sid] = p[j];
    ch_eval_d_many(c->ctx, k * n, c->d->lag.G, c->symval, c->g);
    for (size_t r = 0; r < k; r++) {
        double s = 0;
        for (size_t j = 0; j < n; j++) s += c->g[r * n + j] * c->g[r * n + j];
        if (!(s > 0 && s <= 1e300)) return (int)r + 1;
        s = 1 / sqrt(s);
        for (size_t j = 0; j < n; j++) c->g[r * n + j] *= s;
    }
    return 0;
}

/* The emitted kn_cq's G_d part (emit_c.c, fun_chart) on c->g for the
 * dependent columns dep: the smallest pivot of an LU with partial
 * pivoting of the row-scaled block. */
static double block_quality(ch_charts *c, const int *dep)
{
    size_t k = c->k, n = c->n;
    double *a = c->a, q = 1;
    for (size_t r = 0; r < k; r++)
        for (size_t j = 0; j < k; j++) a[r * k + j] = c->g[r * n + (size_t)dep[j]];
    for (size_t col = 0; col < k; col++) {
        size_t pr = col;
        double m = fabs(a[col * k + col]);
        for (size_t r = col + 1; r < k; r++)
            if (fabs(a[r * k + col]) > m) m = fabs(a[r * k + col]), pr = r;
        if (!(m > 0)) return 0;
        if (m < q) q = m;
        for (size_t j = col; j < k && pr != col; j++) {
            double f = a[col * k + j];
            a[col * k + j] = a[pr * k + j], a[pr * k + j] = f;
        }
        for (size_t r = col + 1; r < k; r++) {
            double f = a[r * k + col] / a[col * k + col];
            for (size_t j = col + 1; j < k; j++) a[r * k + j] -= f * a[col * k + j];
        }
    }
    return q;
}

/* The k dependent columns by elimination with complete pivoting on the
 * row-scaled G (c->g, destroyed into c->a), increasing, into dep. */
static void best_columns(ch_charts *c, int *dep)
{
    size_t k = c->k, n = c->n;
    double *a = c->a;
    unsigned char rowdone[CH_MAX_COORDS + 1], coldone[CH_MAX_COORDS + 1];
    memcpy(a, c->g, k * n * sizeof *a);
    memset(rowdone, 0, sizeof rowdone);
    memset(coldone, 0, sizeof coldone);
    for (size_t step = 0; step < k; step++) {
        size_t br = 0, bc = 0;
        double m = -1;
        for (size_t r = 0; r < k; r++)
            for (size_t j = 0; j < n && !rowdone[r]; j++)
                if (!coldone[j] && fabs(a[r * n + j]) > m) m = fabs(a[r * n + j]), br = r, bc = j;
        rowdone[br] = coldone[bc] = 1;
        dep[step] = (int)bc;
        for (size_t r = 0; r < k; r++) {
            if (rowdone[r] || a[br * n + bc] == 0) continue;
            double f = a[r * n + bc] / a[br * n + bc];
            for (size_t j = 0; j < n; j++) a[r * n + j] -= f * a[br * n + j];
        }
    }
    qsort(dep, k, sizeof *dep, cmp_int);
}

/* The chart with these dependent velocities, derived and compiled at
 * (q, qt) when it is not in the set yet; NULL with the reason in note
 * (*oom set when memory ran out). */
static chart *get_chart(ch_charts *c, const int *dep, const double *q, const double *qt,
                        char *note, size_t notelen, int *oom)
{
    size_t n = c->n, k = c->k;
    for (size_t i = 0; i < c->nch; i++)
        if (memcmp(c->ch[i].dep, dep, k * sizeof *dep) == 0) return &c->ch[i];
    chart *h = add_chart(c);
    if (!h) {
        snprintf(note, notelen, "out of memory");
        *oom = 1;
        return NULL;
    }
    memcpy(h->dep, dep, k * sizeof *dep);
    h->q0 = malloc((n + 1) * sizeof *h->q0);
    h->qt0 = malloc((n + 1) * sizeof *h->qt0);
    h->model = malloc(sizeof *h->model);
    ch_error err;
    ch_error_clear(&err);
    int rc = h->q0 && h->qt0 && h->model
                 ? 0 : ch_error_set(&err, CH_ERR_MEMORY, NULL, 0, 0, "out of memory");
    if (!rc) {
        memcpy(h->q0, q, n * sizeof *q);
        memcpy(h->qt0, qt, n * sizeof *qt);
        /* the model as parsed with `dependent` replaced, its initial
         * state the state of the switch (where the choice is checked) */
        *h->model = *c->d->model;
        h->model->ndep = k;
        h->model->dependent = h->dep;
        h->model->q0 = h->q0;
        h->model->qt0 = h->qt0;
        rc = ch_mechanics_derive(c->ctx, h->model, &h->d, &err);
    }
    /* hamilton: the y_NAME columns stay the first chart's momenta */
    ch_chart_cols cols = {c->d->mf.indep, c->d->red.y_star};
    if (!rc)
        rc = ch_compile_chart(c->ctx, h->d, c->form, NULL, c->d->red.y_star ? &cols : NULL,
                              c->cc, &h->comp, &err);
    if (rc) {
        char names[200];
        dep_names(c, dep, names, sizeof names);
        snprintf(note, notelen, "the chart with dependent velocities %s fails: %s", names,
                 err.msg);
        *oom = err.code == CH_ERR_MEMORY;
        /* dropped: a later attempt tries again */
        ch_compiled_free(h->comp);
        free(h->dep), free(h->q0), free(h->qt0), free(h->model);
        c->nch--;
        return NULL;
    }
    h->sys = &h->comp->sys;
    return h;
}

int ch_charts_rechart(void *charts, double t, double *x, const double *p,
                      const double *vs, const chrt_system **s, char *note, size_t notelen)
{
    ch_charts *c = charts;
    size_t n = c->n, k = c->k;
    char was[200], now[200];
    chart *cur = find_sys(c, *s);
    if (!cur || k == 0) {
        snprintf(note, notelen, "%s is not a chart of this run", (*s)->name);
        return 1;
    }
    dep_names(c, cur->dep, was, sizeof was);
    if ((*s)->velocities(t, x, p, vs, c->qt)) {
        snprintf(note, notelen, "the velocities of the chart with dependent velocities %s "
                 "cannot be computed", was);
        return 1;
    }
    int row = scaled_g(c, t, x, c->qt, p);
    if (row) {
        snprintf(note, notelen, "row %d of the constraint Jacobian (constraint %d) vanishes "
                 "or is not finite: no choice of dependent velocities is regular (were %s)",
                 row, row, was);
        return 1;
    }
    double qcur = block_quality(c, cur->dep);
    if (!(qcur >= CH_CHART_SINGULAR)) {
        /* the velocities themselves came through the singular block */
        snprintf(note, notelen, "the state lies where the block G_d of the dependent "
                 "velocities %s of the constraint Jacobian is numerically singular "
                 "(quality %.3g): its velocities cannot be recovered", was, qcur);
        return 1;
    }
    best_columns(c, c->dep);
    dep_names(c, c->dep, now, sizeof now);
    double qbest = block_quality(c, c->dep);
    double need = CH_CHART_ACCEPT * c->chart_min;
    if (memcmp(c->dep, cur->dep, k * sizeof *c->dep) == 0 || qbest < need) {
        snprintf(note, notelen, "the block G_d of the dependent velocities %s of the "
                 "constraint Jacobian is singular (quality %.3g) and no other choice is "
                 "regular enough (best: %s, quality %.3g < %g)", was, qcur, now, qbest, need);
        return 1;
    }
    int oom = 0;
    chart *h = get_chart(c, c->dep, x, c->qt, note, notelen, &oom);
    if (!h) return oom ? -1 : 1;
    const chrt_system *ns = h->sys;
    double qn = 0;
    if (ns->nx > (int)(2 * n) || ns->state_from(t, x, c->qt, p, c->xn)
        || !((qn = ns->chart_quality ? ns->chart_quality(t, c->xn, p, c->qt) : 1) >= need)) {
        snprintf(note, notelen, "the block G_d of the dependent velocities %s is singular "
                 "and the chart with %s is not regular enough there (quality %.3g < %g)",
                 was, now, qn, need);
        return 1;
    }
    /* The new chart was derived at t = 0 and the default parameters (its
     * branches and pivots decided there): it must give back the motion's
     * velocities, or it is on another branch. */
    double *v = malloc((n ? n : 1) * sizeof *v), dv = 0, vmax = 0;
    if (!v) {
        snprintf(note, notelen, "out of memory");
        return -1;
    }
    int back = ns->velocities(t, c->xn, p, c->qt, v) == 0;
    for (size_t i = 0; back && i < n; i++) {
        dv = fmax(dv, fabs(v[i] - c->qt[i]));
        vmax = fmax(vmax, fabs(c->qt[i]));
    }
    free(v);
    if (!back || !(dv <= 1e-9 * (1 + vmax))) {
        snprintf(note, notelen, "the block G_d of the dependent velocities %s is singular "
                 "and the chart with %s does not give back the velocities of the motion "
                 "(another branch of the constraints%s)", was, now,
                 back ? "" : ", or singular there");
        return 1;
    }
    memcpy(x, c->xn, (size_t)ns->nx * sizeof *x);
    *s = ns;
    snprintf(note, notelen, "t = %.6g: dependent velocities %s (were %s)", t, now, was);
    return 0;
}
