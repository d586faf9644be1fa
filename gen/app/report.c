/* report.c — the `check` report (report.h). */
#include "app/report.h"

#include <math.h>
#include <string.h>

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
