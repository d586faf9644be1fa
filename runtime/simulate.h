/* simulate.h — the integration loop of every front end and the CSV of
 * SPEC §2 (C99, libc and libm only).
 *
 * A chrt_system describes compiled code with the API of SPEC §4: the same
 * struct is filled from JIT-compiled symbols by `chetaev run` and from the
 * PREFIX_ symbols by the driver written by `emit --driver`. Both then go
 * through chrt_main, so their option handling and CSV bytes agree.
 *
 * One loop (chrt_integrate) integrates for `run`, the driver programs,
 * the C API (ch_system_integrate), the repl and `check --loop`, and hands
 * the rows to a sink (the CSV writer, an in-memory table, or none).
 *
 * Adaptive methods (dop853, rk45): steps chosen by the error estimate as
 * in Hairer's codes (and SciPy's solve_ivp); the last step ends exactly at
 * t1. Rows at t0, after every K-th accepted step and at t1, or with
 * dt_out at t0 + k*dt_out by dense output and at t1.
 *
 * Fixed methods (euler, midpoint, rk4): N = ceil((t1 - t0)/dt) steps (a
 * ratio within 1e-9 of an integer is that integer), t_k = t0 + k*dt, the
 * last step ends exactly at t1. Rows at t0, after every K-th step and
 * at t1 (also when N is not a multiple of K). */
#ifndef CH_RT_SIMULATE_H
#define CH_RT_SIMULATE_H

#include <stddef.h>
#include <stdio.h>

#include "integrate.h"

/* The functions taking vs are the emitted PREFIX_*_from (SPEC §4): vs
 * (nq velocities of a nearby state, or NULL for the model's initial one)
 * is the start of the Newton iterations that reconstruct the velocities
 * where newton is 1 (implicit alpha, a numeric Legendre inverse); the
 * loop passes the velocities of the last accepted state. */
typedef struct {
    const char *name; /* the emitted prefix, for messages */
    int nx, nq, np, nout;
    const char *const *state_names;  /* nx; the first nq are coordinates */
    const char *const *param_names;  /* np */
    const double *param_defaults;    /* np */
    const char *const *output_names; /* nout (may be NULL when nout = 0) */
    void (*initial)(double *x);
    int (*rhs)(double t, const double *x, const double *p, const double *vs,
               double *dxdt);
    double (*energy)(double t, const double *x, const double *p, const double *vs);
    int (*velocities)(double t, const double *x, const double *p, const double *vs,
                      double *qt);
    int (*outputs)(double t, const double *x, const double *p, const double *vs,
                   double *out);
    int (*project)(double t, double *x, const double *p, const double *vs); /* may be NULL */
    /* The form's state from all coordinates and velocities (dependent
     * velocities recomputed from the constraints, momenta from the
     * Legendre map); nonzero where singular. May be NULL. */
    int (*state_from)(double t, const double *q, const double *qt,
                      const double *p, double *x);
    /* Conditioning of the chart of a reduced or hamilton form at x: a
     * number in [0, 1], 0 where the chart is singular. NULL when the
     * form has no chart (full form). */
    double (*chart_quality)(double t, const double *x, const double *p, const double *vs);
    /* Events (`event NAME = EXPR [stop]`): nev functions g(t, x) whose
     * zero crossings the loop locates; event_stop[j] ends the run there.
     * nev = 0: none (events and the tables may be NULL). */
    int nev;
    const char *const *event_names;
    const int *event_stop;
    int (*events)(double t, const double *x, const double *p, const double *vs,
                  double *g);
    int newton; /* 1: the loop passes Newton's start vs (see above) */
} chrt_system;

/* Re-chart below this chart quality (chrt_options.chart_min). */
#define CHRT_CHART_MIN 1e-2

typedef struct chrt_options chrt_options;

/* A stepper of another library behind the loop (CHRT_CVODE: SUNDIALS in
 * gen/jit/cvode.c), so that runtime/ stays free of dependencies. Each
 * function returns 0, or nonzero with the reason in err: negative when
 * memory ran out (the run then ends with CHRT_EXIT_IO). */
typedef struct {
    void *ctx;
    /* Starts at (t0, x) on s's right-hand side, never to pass o->t1; vs
     * (NULL when s->newton is 0) is the loop's Newton start for every
     * right-hand side call, which the loop keeps at the last accepted
     * state. */
    int (*start)(void *ctx, const chrt_system *s, const chrt_options *o,
                 double t0, const double *x, const double *p, const double *vs,
                 char *err, size_t errlen);
    /* One accepted step, at most hmax long (0: no bound beyond the
     * options' dt_max; the loop's cap where a chart degrades): its end
     * time and state. */
    int (*advance)(void *ctx, double hmax, double *tn, double *xn, char *err,
                   size_t errlen);
    /* The state at t inside the last step (dense output). */
    int (*dense_at)(void *ctx, double t, double *x, char *err, size_t errlen);
    /* The state at t changed (projection, re-chart: s may be another). */
    int (*restart)(void *ctx, const chrt_system *s, double t, const double *x,
                   char *err, size_t errlen);
    /* Rejected attempts and right-hand side calls so far. */
    void (*counts)(void *ctx, long *rejected, long *rhs_calls);
} chrt_ext_stepper;

/* Defaults of the adaptive methods: relative and absolute tolerance, the
 * largest number of accepted steps, and the step of fixed methods. */
#define CHRT_RTOL 1e-10
#define CHRT_ATOL 1e-12
#define CHRT_MAX_STEPS 1e7
#define CHRT_FIXED_DT 1e-3

struct chrt_options {
    chrt_method method;
    /* Fixed methods: the step (0: CHRT_FIXED_DT). Adaptive: the first
     * step (0: chosen from the right-hand side at t0). */
    double dt, t1;
    long every;     /* a row after every K-th (accepted) step */
    int project;    /* call system->project on the initial state and after each step */
    double rtol, atol; /* adaptive: error per step <= atol + rtol*|x| (RMS) */
    double dt_max;  /* adaptive: largest step, 0: none */
    double dt_out;  /* adaptive: rows at t0 + k*dt_out by dense output, 0: per step */
    double max_steps; /* adaptive: accepted steps before a failure; fixed: largest N */
    double chart_min; /* re-chart when chart_quality < chart_min; default CHRT_CHART_MIN */
    /* Optional (NULL: none). Replaces *s by a system of a better chart and
     * x (same nx) by the same mechanical state in it (vs: Newton's start
     * for its velocities, as in chrt_system); writes a one-line note
     * ("t = 1.5708: dependent velocities x' (were y')"). Returns 0, or
     * nonzero when no better chart exists (note says why): negative when
     * memory ran out (the run then ends with CHRT_EXIT_IO). */
    int (*rechart)(void *ctx, double t, double *x, const double *p,
                   const double *vs, const chrt_system **s, char *note,
                   size_t notelen);
    void *rechart_ctx;
    /* The stepper of CHRT_CVODE (NULL: that method is refused). */
    const chrt_ext_stepper *ext;
};

/* Exit codes of SPEC §2 that the runtime can produce. */
enum { CHRT_OK = 0, CHRT_EXIT_IO = 1, CHRT_EXIT_USAGE = 2, CHRT_EXIT_NUMERIC = 3 };
/* An output (the CSV, -o FILE, stdout) that cannot be opened, written or
 * closed: exit 2 as a usage error (CHRT_EXIT_IO is out of memory). */
#define CHRT_EXIT_OUTPUT CHRT_EXIT_USAGE

/* dop853, rtol CHRT_RTOL, atol CHRT_ATOL, automatic first step, t1 1,
 * every 1, no dt_max, rows per step, CHRT_MAX_STEPS, no projection, chart
 * threshold CHRT_CHART_MIN without rechart (SPEC §2 defaults). */
void chrt_options_default(chrt_options *o);

/* Checks o (t0 the start time) and writes the reason into errbuf:
 * CHRT_OK or CHRT_EXIT_USAGE. */
int chrt_options_check(const chrt_options *o, double t0, char *errbuf,
                       size_t errlen);

/* Step statistics of one run. rhs_calls counts every right-hand side
 * call: 1 at t0 and 1 for the automatic first step, the stages of every
 * step attempt (chrt_method_stages), 3 per step whose dense output was
 * used (dop853), 1 after each projection or re-chart. */
typedef struct {
    long accepted, rejected, rhs_calls, recharts;
    long events; /* events located (notes written) */
} chrt_stats;

/* Where the rows go. row gets t, the nq coordinates, all nq velocities,
 * E, the nout outputs (n = 2 + 2*nq + nout values: the CSV columns);
 * nonzero stops the run with CHRT_EXIT_IO; NULL: no rows are computed.
 * note gets the one-line note of a re-chart (it names its time, "t =
 * 1.5708: ...") and t; may be NULL. */
typedef struct {
    int (*row)(void *ctx, const double *v, int n);
    void (*note)(void *ctx, double t, const char *text);
    void *ctx;
} chrt_sink;

/* THE integration loop: from (t0, x) to o->t1 with parameters p, rows to
 * sink (NULL: none). *s may be replaced by o->rechart. On return
 * x holds the last accepted state and *t its time (t1 on success, the
 * event's time after a stop event). Where (*s)->newton, the Newton
 * iterations of the velocities start from those of the last accepted
 * state; vs (nq values, may be NULL) carries them between calls: on entry
 * the start at (t0, x) unless vs[0] is NaN (then the model's initial
 * velocities), on return the velocities at x (NaN where unknown).
 * Returns CHRT_OK; CHRT_EXIT_USAGE for invalid options; CHRT_EXIT_NUMERIC
 * when the run cannot go on (errbuf: "numerical failure at t = T ...:
 * reason"; the rows before stay written); CHRT_EXIT_OUTPUT when the
 * sink fails; CHRT_EXIT_IO when memory runs out. st (may be NULL) gets
 * the statistics. */
int chrt_integrate(const chrt_system **s, const chrt_options *o, double t0,
                   double *x, const double *p, double *vs, const chrt_sink *sink,
                   chrt_stats *st, double *t, char *errbuf, size_t errlen);

/* The CSV of SPEC §2 to out: the header, then the rows of chrt_integrate
 * from t = 0 and x0, each also passed to also (may be NULL, e.g. a table
 * for a plot). out is made unbuffered (nothing may have been written to
 * it): the rows go out in whole chunks, so a killed run leaves whole
 * rows. Returns as chrt_integrate; CHRT_EXIT_OUTPUT when writing fails. */
int chrt_simulate(const chrt_system *s, const chrt_options *o,
                  const double *x0, const double *p, FILE *out,
                  const chrt_sink *also, chrt_stats *st, char *errbuf,
                  size_t errlen);

/* The parsed options of `run` / the driver program. */
typedef struct {
    chrt_options opt;
    const char *output; /* -o FILE, or NULL for stdout */
    int help;           /* -h / --help was given */
    int stats;          /* --stats: step statistics on stderr */
    char warning[512];  /* nonempty: coordinates moved onto holonomic
                           constraints, --init velocities recomputed */
} chrt_args;

/* Parses argv[0..argc) (no program name): --method M, --dt H, --t1 T,
 * --every K, --rtol R, --atol A, --dt-max H, --dt-out H, --max-steps N,
 * --chart-min Q (chrt_options.chart_min, 0 <= Q < 0.25), --set p=v,
 * --init q=v, -o FILE, --project, --stats, -h/--help (also as
 * --opt=value). With s NULL only the syntax is checked. Otherwise p is
 * the defaults with the --set values, and x0 the initial state:
 * s->initial(), or, when s->state_from exists and a --set or an --init of
 * a coordinate `q` or velocity `q'` was given, s->state_from(0, q, q', p)
 * from the model's initial coordinates and velocities with the --init
 * values (so --init x'=1 works in every form and momenta follow --set).
 * Other state names (momenta `y_q`) are set directly afterwards. Velocities
 * the form recomputes (dependent ones) and coordinates state_from moves onto
 * holonomic constraints are reported in a->warning.
 * Returns CHRT_OK, CHRT_EXIT_USAGE (message in errbuf), or
 * CHRT_EXIT_NUMERIC when the initial state cannot be computed. */
int chrt_parse_args(const chrt_system *s, int argc, char **argv, chrt_args *a,
                    double *x0, double *p, char *errbuf, size_t errlen);

/* The name of the energy column of the CSV into buf: "E", with "_"
 * appended while "t", a coordinate, a velocity column q' or an output
 * column has that name (a model with a coordinate E gets "E_"). */
const char *chrt_energy_column(const chrt_system *s, char *buf, size_t size);

/* A value of --set or --init: a decimal number (no blanks, hex, inf or
 * nan) or a constant expression of the model language (1/3, pi/2,
 * sqrt(2)/2; at most 200 levels deep) with a finite value, into *v.
 * 0; -2 for a number that underflows to 0; -1 otherwise. */
int chrt_parse_value(const char *s, double *v);

/* An initial value as --init gives it: the state variable, coordinate q
 * or velocity q' named by the first len characters of name, and its
 * value. */
typedef struct {
    const char *name;
    size_t len;
    double value;
} chrt_init;

/* The initial state x0 under the parameters p with the values init, as
 * chrt_parse_args computes it for --set and --init: s->initial(), or, when
 * s->state_from exists and p differs from the defaults or a coordinate or
 * velocity is given, s->state_from(0, q, q', p) from the model's initial
 * coordinates and velocities with those values; other state names set
 * directly afterwards. warning (wlen bytes, may be NULL) gets what was
 * moved or recomputed, "" when nothing. Returns CHRT_OK, CHRT_EXIT_USAGE
 * (a name that is not the system's), CHRT_EXIT_NUMERIC (no state there)
 * or CHRT_EXIT_IO (out of memory), with the message in errbuf. */
int chrt_initial_state(const chrt_system *s, const double *p, size_t ninit,
                       const chrt_init *init, double *x0, char *warning, size_t wlen,
                       char *errbuf, size_t errlen);

/* 1 when arg is one of the options above that takes a separate value
 * (e.g. "--dt", not "--dt=1"), so that a caller can pass them through. */
int chrt_option_takes_value(const char *arg);
/* The options above by index i = 0, 1, ... (NULL past the last). */
const char *chrt_option_name(int i);

/* The whole program: parse argv[1..argc), simulate, report errors, notes
 * and --stats on stderr prefixed by argv[0]. Returns the exit code. */
int chrt_main(const chrt_system *s, int argc, char **argv);

/* What a front end adds to chrt_main: a sink the rows also go to (e.g. a
 * table for a plot) and the re-chart of chrt_options (both may be NULL). */
typedef struct {
    const chrt_sink *also;
    int (*rechart)(void *ctx, double t, double *x, const double *p,
                   const double *vs, const chrt_system **s, char *note,
                   size_t notelen);
    void *rechart_ctx;
    const chrt_ext_stepper *ext; /* the stepper of --method cvode, or NULL */
} chrt_main_hooks;

/* chrt_main with hooks (NULL: none); *parsed (may be NULL) gets the
 * parsed arguments. */
int chrt_main_sink(const chrt_system *s, int argc, char **argv,
                   const chrt_main_hooks *hooks, chrt_args *parsed);

#endif
