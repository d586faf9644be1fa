/* chart.h — re-charting the reduced and hamilton forms during a run
 * (README "Charts").
 *
 * The state (q, q'_indep) of the reduced form and (q, y*) of the hamilton
 * form is a chart of the constrained motion, valid where the block G_d of
 * the constraint Jacobian G = d phi / dq' belonging to the dependent
 * velocities is regular (and, for hamilton, the Legendre map's K). The
 * emitted PREFIX_chart_quality measures that (emit_c.c, fun_chart); the
 * runtime's loop (runtime/simulate.h) calls chrt_options.rechart when it
 * falls below chrt_options.chart_min. ch_charts_rechart is that callback
 * for the front ends that have the generator (run, the C API, the repl):
 *
 *  - at the state it computes all n velocities, evaluates G there, scales
 *    every row to unit length and chooses k columns by elimination with
 *    complete pivoting (the best-conditioned dependent velocities found
 *    greedily);
 *  - derives the model again with that `dependent` choice (the parsed
 *    model with its dependent statement and initial state replaced),
 *    emits and compiles the same form (kept by choice: a chart is
 *    compiled once per run);
 *  - maps the mechanical state into it with its state_from(t, q, q', p)
 *    and accepts it when its quality there is at least CH_CHART_ACCEPT
 *    times chart_min (hysteresis: the new chart must degrade by that factor
 *    before the next switch, so charts never alternate at one point).
 *
 * Otherwise it declines with a note naming the singular block. The
 * context and the mechanics given to ch_charts_new must outlive it. */
#ifndef CH_CHART_H
#define CH_CHART_H

#include <stddef.h>

#include "jit/compile.h"

/* The new chart's quality must be at least this times chart_min. */
#define CH_CHART_ACCEPT 4.0

typedef struct ch_charts ch_charts;

/* The charts of form of the model of d, starting from first (its compiled
 * form, not owned: it must outlive the set), compiled with cc; chart_min
 * as chrt_options.chart_min. NULL when out of memory. */
ch_charts *ch_charts_new(ch_ctx *ctx, const ch_mechanics *d, ch_form form,
                         ch_compiler cc, const chrt_system *first, double chart_min);
void ch_charts_free(ch_charts *c);

/* chrt_options.rechart with rechart_ctx a ch_charts (simulate.h: -1 when
 * memory ran out, the note says where). The
 * note of a switch ("t = 1.5608: dependent velocities x' (were y')")
 * reaches the front end through the loop's sink (chrt_sink.note), which
 * also counts the switches (chrt_stats.recharts). */
int ch_charts_rechart(void *charts, double t, double *x, const double *p,
                      const double *vs, const chrt_system **s, char *note,
                      size_t notelen);

/* A new chart_min for the following switches (a C API setting). */
void ch_charts_set_chart_min(ch_charts *c, double chart_min);

/* The dependent velocities of the chart s (one of the set's) as
 * "x' y'" into buf. */
void ch_charts_dependent(const ch_charts *c, const chrt_system *s, char *buf, size_t size);

#endif
