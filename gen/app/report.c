/* report.c — the `check` report (report.h). */
#include "app/report.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "doc/plot.h"
#include "doc/print.h"

static const char *verdict_name(int v)
{
    return v == 1 ? "conserved" : v == 0 ? "not conserved" : "unknown";
}

static void put_degree(ch_buf *o, const ch_expr *s, int json)
{
    if (!s) {
        ch_buf_put(o, json ? "null" : "none");
        return;
    }
    char *str = fmpq_get_str(NULL, 10, s->num);
    if (json && !fmpz_is_one(fmpq_denref(s->num)))
        ch_buf_printf(o, "%.17g", fmpq_get_d(s->num));
    else
        ch_buf_put(o, str ? str : "null");
    flint_free(str);
}

static void put_number(ch_buf *o, double v)
{
    if (isfinite(v)) ch_buf_printf(o, "%.17g", v);
    else ch_buf_put(o, "null");
}

void ch_audit_write_json(ch_buf *o, const ch_audit *a,
                         const ch_loop_result *loop)
{
    const ch_mechanics *d = a->d;
    ch_buf_put(o, "{\"model\": ");
    ch_print_json_string(o, d->model->name);
    ch_buf_put(o, ", \"homogeneity\": [");
    for (size_t i = 0; i < d->chet.k; i++) {
        if (i) ch_buf_put(o, ", ");
        put_degree(o, d->chet.sigma[i], 1);
    }
    ch_buf_put(o, "], \"quantities\": [");
    for (size_t i = 0; i < a->nq; i++) {
        const ch_audit_quantity *q = &a->q[i];
        ch_buf_put(o, i ? ",\n  " : "\n  ");
        ch_buf_put(o, "{\"name\": ");
        ch_print_json_string(o, q->name);
        ch_buf_printf(o, ", \"kind\": \"%s\", \"verdict\": \"%s\", "
                      "\"decided_by\": \"%s\", \"max_rate\": ",
                      ch_audit_kind_name(q->kind), verdict_name(q->verdict),
                      q->skipped ? "time limit" : q->test.symbolic ? "symbolic" : "random points");
        put_number(o, q->max_rate);
        if (q->reaction_power_max >= 0) {
            ch_buf_put(o, ", \"reaction_power_max\": ");
            put_number(o, q->reaction_power_max);
        }
        if (q->kind == CH_AUDIT_FRAME_ENERGY) {
            ch_buf_printf(o, ", \"xi\": \"%s\"",
                          !strcmp(a->xi_source, "field") ? a->xi_field
                                                          : a->xi_source);
        }
        ch_buf_put(o, ", \"reason\": ");
        ch_print_json_string(o, q->reason);
        ch_buf_put(o, "}");
    }
    ch_buf_put(o, "],\n \"loop\": ");
    if (loop) {
        ch_buf_printf(o, "{\"points\": %zu, \"t1\": ", loop->points);
        put_number(o, loop->t1);
        ch_buf_put(o, ", \"I_start\": ");
        put_number(o, loop->I_start);
        ch_buf_put(o, ", \"I_end\": ");
        put_number(o, loop->I_end);
        ch_buf_put(o, ", \"relative_drift\": ");
        put_number(o, loop->relative_drift);
        ch_buf_put(o, "}");
    } else {
        ch_buf_put(o, "null");
    }
    ch_buf_put(o, "}\n");
}

void ch_audit_write_text(ch_buf *o, const ch_audit *a,
                         const ch_loop_result *loop)
{
    const ch_mechanics *d = a->d;
    const ch_model *m = d->model;
    ch_buf_printf(o, "check %s\n", m->name);
    ch_buf_printf(o, "constraints: %zu", d->chet.k);
    if (d->chet.k) {
        ch_buf_put(o, ", homogeneity degrees in the velocities: [");
        for (size_t i = 0; i < d->chet.k; i++) {
            if (i) ch_buf_put(o, ", ");
            put_degree(o, d->chet.sigma[i], 0);
        }
        ch_buf_put(o, "]");
    }
    ch_buf_put(o, "\n");
    if (a->affine) {
        ch_buf_put(o, "affine constraints S q' + s = 0; frame xi = ");
        if (!strcmp(a->xi_source, "field"))
            ch_buf_printf(o, "declared field %s (S xi + s = 0)", a->xi_field);
        else if (!strcmp(a->xi_source, "zero"))
            ch_buf_put(o, "0 (s = 0)");
        else
            ch_buf_put(o, "-S^T (S S^T)^-1 s (least squares)");
        ch_buf_put(o, ":");
        for (size_t i = 0; i < m->n; i++) {
            ch_buf_printf(o, " %s%s = ", i ? ", " : "", ch_sym_of(m->q[i])->name);
            ch_print(o, a->xi[i], CH_STYLE_TEXT);
        }
        ch_buf_put(o, "\n");
    } else if (d->chet.k) {
        ch_buf_put(o, "constraints not affine in the velocities: no frame energy\n");
    }
    ch_buf_printf(o, "maxima over %d random points of the constraint manifold\n\n",
                  a->points);
    for (size_t i = 0; i < a->nq; i++) {
        const ch_audit_quantity *q = &a->q[i];
        ch_buf_printf(o, "%-10s %-13s %-14s by %-14s ", q->name, ch_audit_kind_name(q->kind),
                      verdict_name(q->verdict),
                      q->skipped ? "time limit" : q->test.symbolic ? "symbolic" : "random points");
        if (q->skipped) ch_buf_put(o, "max |dF/dt| not computed");
        else ch_buf_printf(o, "max |dF/dt| = %.3g", q->max_rate);
        if (q->reaction_power_max >= 0)
            ch_buf_printf(o, ", max |reaction power| = %.3g",
                          q->reaction_power_max);
        ch_buf_printf(o, "\n    %s\n", q->reason);
    }
    if (loop)
        ch_buf_printf(o, "\nPoincare-Cartan loop (%zu points, t = 0..%g): "
                      "I1 = %.17g at the start, %.17g at the end, relative "
                      "drift %.3g%s\n", loop->points, loop->t1, loop->I_start,
                      loop->I_end, loop->relative_drift,
                      a->d->lag.k ? " (nonholonomic: measured, not an invariant)"
                                  : "");
}

/* Column (qi, yi) of the N loop states, centred on its mean and closed
 * (the first point repeated) into x, y (N + 1 each). */
static void loop_curve(const ch_loop_result *lr, const double *st, size_t qi,
                       size_t yi, double *x, double *y)
{
    size_t N = lr->points;
    double mx = 0, my = 0;
    for (size_t j = 0; j < N; j++) {
        x[j] = st[j * lr->nx + qi], y[j] = st[j * lr->nx + yi];
        mx += x[j] / (double)N, my += y[j] / (double)N;
    }
    for (size_t j = 0; j < N; j++) x[j] -= mx, y[j] -= my;
    x[N] = x[0], y[N] = y[0];
}

int ch_loop_svg(ch_buf *out, const ch_mechanics *d, const ch_loop_result *lr, ch_error *err)
{
    size_t N = lr->points, m = lr->nx - lr->nq;
    if (m > CH_PLOT_MAX_SERIES - 1) m = CH_PLOT_MAX_SERIES - 1;
    double *v = malloc(2 * (m + 1) * (N + 1) * sizeof *v);
    char names[CH_PLOT_MAX_SERIES][96];
    ch_plot_series s[CH_PLOT_MAX_SERIES];
    if (!v || !lr->start || !lr->end) {
        ch_error_set(err, v ? CH_ERR_USAGE : CH_ERR_MEMORY, NULL, 0, 0, "%s",
                     v ? "the loop's states were not kept" : "out of memory");
        free(v);
        return -1;
    }
    loop_curve(lr, lr->start, (size_t)d->mf.indep[0], lr->nq, v, v + N + 1);
    s[0] = (ch_plot_series){"t = 0", N + 1, v, v + N + 1, 1};
    for (size_t r = 0; r < m; r++) {
        size_t qi = (size_t)d->mf.indep[r];
        double *x = v + 2 * (r + 1) * (N + 1), *y = x + N + 1;
        loop_curve(lr, lr->end, qi, lr->nq + r, x, y);
        snprintf(names[r], sizeof names[r], "%s: t = %g", ch_sym_of(d->model->q[qi])->name, lr->t1);
        s[r + 1] = (ch_plot_series){names[r], N + 1, x, y, 0};
    }
    char title[200];
    snprintf(title, sizeof title, "%s: loop of %zu states, I1 %.6g -> %.6g",
             d->model->name, N, lr->I_start, lr->I_end);
    ch_plot_options o = {title, "q_r - mean", "y*_r - mean", 1};
    int rc = ch_plot_svg(out, &o, m + 1, s, err) ? -1 : 0;
    free(v);
    return rc;
}
