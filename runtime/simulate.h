/* simulate.h — fixed-step simulation of one emitted system, written as
 * the CSV of SPEC §2 (C99, libc and libm only).
 *
 * A chrt_system describes compiled code with the API of SPEC §4: the same
 * struct is filled from JIT-compiled symbols by `chetaev run` and from the
 * PREFIX_ symbols by the driver written by `emit --driver`. Both then go
 * through chrt_main, so their option handling and CSV bytes agree.
 *
 * Time grid: N = ceil(t1/dt) steps (a ratio within 1e-9 of an integer is
 * that integer), t_k = k*dt, the last step ends exactly at t1. A row is
 * written at t_0 and after every K-th step; the last state is written only
 * when N is a multiple of K. */
#ifndef CH_RT_SIMULATE_H
#define CH_RT_SIMULATE_H

#include <stddef.h>
#include <stdio.h>

#include "integrate.h"

typedef struct {
    const char *name; /* the emitted prefix, for messages */
    int nx, nq, np, nout;
    const char *const *state_names;  /* nx; the first nq are coordinates */
    const char *const *param_names;  /* np */
    const double *param_defaults;    /* np */
    const char *const *output_names; /* nout (may be NULL when nout = 0) */
    void (*initial)(double *x);
    int (*rhs)(double t, const double *x, const double *p, double *dxdt);
    double (*energy)(double t, const double *x, const double *p);
    int (*velocities)(double t, const double *x, const double *p, double *qt);
    int (*outputs)(double t, const double *x, const double *p, double *out);
    int (*project)(double t, double *x, const double *p); /* may be NULL */
    /* The form's state from all coordinates and velocities (dependent
     * velocities recomputed from the constraints, momenta from the
     * Legendre map); nonzero where singular. May be NULL. */
    int (*state_from)(double t, const double *q, const double *qt,
                      const double *p, double *x);
    /* Conditioning of the chart of a reduced or hamilton form at x: a
     * number in [0, 1], 0 where the chart is singular. NULL when the
     * form has no chart (full form). */
    double (*chart_quality)(double t, const double *x, const double *p);
} chrt_system;

/* Below this chart quality the run re-charts (or stops). */
#define CHRT_CHART_MIN 1e-2

typedef struct {
    chrt_method method;
    double dt, t1;
    long every;
    int project; /* call system->project on the initial state and after each step */
    double chart_min;   /* re-chart when chart_quality < chart_min; default CHRT_CHART_MIN */
    /* Optional (NULL: none). Replaces *s by a system of a better chart and
     * x (same nx) by the same mechanical state in it; writes a one-line
     * note ("t = 1.5708: dependent velocities x' (were y')"). Returns 0,
     * or nonzero when no better chart exists (note says why). */
    int (*rechart)(void *ctx, double t, double *x, const double *p,
                   const chrt_system **s, char *note, size_t notelen);
    void *rechart_ctx;
} chrt_options;

/* Exit codes of SPEC §2 that the runtime can produce. */
enum { CHRT_OK = 0, CHRT_EXIT_IO = 1, CHRT_EXIT_USAGE = 2, CHRT_EXIT_NUMERIC = 3 };

/* The chart check of the loop (simulate.h's chrt_options.chart_min and
 * rechart) at (t, x): CHRT_OK when *s has no chart or its quality is at
 * least o->chart_min, or after o->rechart replaced *s and x by a better
 * chart; otherwise CHRT_EXIT_NUMERIC with "numerical failure at t = T:
 * the chart is singular (quality Q < MIN): NOTE" in errbuf. */
int chrt_chart_check(const chrt_system **s, const chrt_options *o, double t,
                     double *x, const double *p, char *errbuf, size_t errlen);

/* Why chrt_step failed, by its return value (1..3). */
extern const char *const chrt_step_failure[4];

/* rk4, dt 1e-3, t1 1, every 1, no projection (SPEC §2 defaults). */
void chrt_options_default(chrt_options *o);

/* Integrates from x0 (nx values) with parameters p (np values) and writes
 * the header and rows to out. Returns CHRT_OK; CHRT_EXIT_USAGE for invalid
 * options; CHRT_EXIT_NUMERIC when a step fails (singular right-hand side,
 * non-finite state): the rows written so far stay, errbuf names t and the
 * step; CHRT_EXIT_IO when writing fails or memory runs out. */
int chrt_simulate(const chrt_system *s, const chrt_options *o,
                  const double *x0, const double *p, FILE *out,
                  char *errbuf, size_t errlen);

/* The parsed options of `run` / the driver program. */
typedef struct {
    chrt_options opt;
    const char *output; /* -o FILE, or NULL for stdout */
    int help;           /* -h / --help was given */
    char warning[256];  /* nonempty: --init values that were recomputed */
} chrt_args;

/* Parses argv[0..argc) (no program name): --method M, --dt H, --t1 T,
 * --every K, --set p=v, --init q=v, -o FILE, --project, --chart-min Q
 * (chrt_options.chart_min, 0 <= Q < 0.25), -h/--help (also
 * as --opt=value). With s NULL only the syntax is checked. Otherwise p is
 * the defaults with the --set values, and x0 the initial state:
 * s->initial(), or, when s->state_from exists and a --set or an --init of
 * a coordinate `q` or velocity `q'` was given, s->state_from(0, q, q', p)
 * from the model's initial coordinates and velocities with the --init
 * values (so --init x'=1 works in every form and momenta follow --set).
 * Other state names (momenta `y_q`) are set directly afterwards. Velocities
 * the form recomputes (dependent ones) are reported in a->warning.
 * Returns CHRT_OK, CHRT_EXIT_USAGE (message in errbuf), or
 * CHRT_EXIT_NUMERIC when the initial state cannot be computed. */
int chrt_parse_args(const chrt_system *s, int argc, char **argv, chrt_args *a,
                    double *x0, double *p, char *errbuf, size_t errlen);

/* 1 when arg is one of the options above that takes a separate value
 * (e.g. "--dt", not "--dt=1"), so that a caller can pass them through. */
int chrt_option_takes_value(const char *arg);

/* The whole program: parse argv[1..argc), simulate, report errors on
 * stderr prefixed by argv[0]. Returns the exit code. */
int chrt_main(const chrt_system *s, int argc, char **argv);

/* chrt_main with chrt_options.rechart and rechart_ctx set (a front end
 * that can re-chart: `chetaev run`). */
int chrt_main_rechart(const chrt_system *s,
                      int (*rechart)(void *ctx, double t, double *x, const double *p,
                                     const chrt_system **s, char *note, size_t notelen),
                      void *rechart_ctx, int argc, char **argv);

#endif
