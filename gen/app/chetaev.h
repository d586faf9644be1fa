/* chetaev.h — the public library API of chetaev.
 *
 * Load a model (*.nh, SPEC §1) from a file or a string, which parses and
 * derives it; compile one form of its equations of motion in process
 * (libtcc in memory, or the system compiler); then evaluate the right-hand
 * side (SPEC §4 signature) directly, or let the compiled system integrate
 * (error-controlled by default, or with a fixed step) while it keeps the
 * current time, state and parameters,
 * so that a caller can step, change a parameter and step again without
 * recompiling.
 *
 * Conventions: every type is opaque and every name starts with ch_. A
 * function that can fail returns 0 (or a non-NULL pointer) on success and
 * otherwise fills the ch_err the caller passed (which may be NULL); the
 * library never prints and never exits. Forms, compilers and integration
 * methods are named by the strings of the command line ("full", "reduced",
 * "hamilton"; "tcc", "cc"; "dop853", "rk45" (alias "dopri5"), "euler",
 * "midpoint", "rk4"); NULL picks the default ("reduced", "tcc", "dop853").
 *
 * Lifetimes: a ch_system does not depend on the ch_problem it was compiled
 * from (either can be freed first). Names and function pointers obtained
 * from a ch_system stay valid until ch_system_free. Objects are not
 * thread-safe, but separate objects can be used from separate threads
 * (compiling included: libtcc is used under a process-wide lock).
 * Arguments: a NULL object, name or array is CH_E_USAGE (queries return
 * NULL, 0, -1 or NaN), a NaN or infinite parameter, state or time value
 * is CH_E_USAGE as on the command line, and ch_problem_parse needs text
 * (it never reads a file). */
#ifndef CHETAEV_H
#define CHETAEV_H

#include <stddef.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Error codes; the exit codes of SPEC §2 are 1 (model), 2 (usage) and
 * 3 (numeric); the others are reported as 1 by the command line. */
enum {
    CH_E_OK = 0,
    CH_E_MODEL = 1,   /* invalid model, or the form does not exist for it */
    CH_E_USAGE = 2,   /* bad argument: unknown name, form, method, dt ... */
    CH_E_NUMERIC = 3, /* singular right-hand side or non-finite state */
    CH_E_LIMIT = 4,   /* a resource limit of the parser or deriver */
    CH_E_MEMORY = 5,
    CH_E_IO = 6,      /* a file could not be read */
    CH_E_MATH = 7     /* undefined operation while deriving (1/0, ...) */
};

typedef struct ch_err {
    int code;        /* CH_E_* */
    int line, col;   /* 1-based position in the model, 0 when none */
    char file[256];  /* the model's file name, empty when none */
    char msg[512];
} ch_err;

/* "FILE:LINE:COL: error: MSG" (parts without value omitted) into buf. */
void ch_err_format(const ch_err *err, char *buf, size_t size);

/* A parsed and derived model. */
typedef struct ch_problem ch_problem;

/* A compiled form with its current time, state and parameters. */
typedef struct ch_system ch_system;

/* The right-hand side of SPEC §4: dxdt from (t, x, p); 0, or nonzero where
 * the system is singular. Pure: it can be called on any state. */
typedef int (*ch_rhs_fn)(double t, const double *x, const double *p,
                         double *dxdt);
/* The energy at a state (HUGE_VAL when the velocities cannot be
 * reconstructed). */
typedef double (*ch_energy_fn)(double t, const double *x, const double *p);

/* The version ("1.2.3"). */
const char *ch_version(void);
/* Frees the process-wide caches of the arithmetic library (FLINT's), for
 * a leak checker at exit; no chetaev object may be used afterwards. */
void ch_cleanup(void);

/* ---- models ----------------------------------------------------------- */

ch_problem *ch_problem_load(const char *path, ch_err *err);
/* The budget of expression nodes `chetaev` gives a derivation by default:
 * the examples need under 10^3, a 40-body chain 5*10^4, the 200-trailer
 * about 3*10^6 (1.1 GB); about 2 GB keeps an exponentially growing model
 * from exhausting memory. */
#define CH_DEFAULT_MAX_NODES 8000000
/* ch_problem_load under a budget of max_nodes expression nodes (0: none,
 * ch_problem_load's): a model that exceeds it is CH_E_LIMIT, the message
 * naming the statement being derived. */
ch_problem *ch_problem_load_limited(const char *path, size_t max_nodes, ch_err *err);
/* name is used in error messages and as the default model name (its stem,
 * as for a file); NULL means "model". */
ch_problem *ch_problem_parse(const char *name, const char *text, size_t len,
                             ch_err *err);
void ch_problem_free(ch_problem *pb);
const char *ch_problem_name(const ch_problem *pb);
/* Warnings about the model that do not stop it: what was made consistent
 * in its `initial` state (SPEC §1) — a coordinate moved onto a holonomic
 * constraint, a dependent velocity recomputed from the constraints. Each
 * is one line "FILE:LINE:COL: warning: MESSAGE", as `chetaev` prints it;
 * i in [0, count), NULL otherwise; valid until ch_problem_free. Compiled
 * systems start from the corrected state. */
size_t ch_problem_warning_count(const ch_problem *pb);
const char *ch_problem_warning(const ch_problem *pb, size_t i);

/* The model's coordinates (nq), constraints and parameters (np) in
 * declared order; names NULL and the default NaN when i is out of range.
 * ch_problem_holonomic: 1 when constraint i is written on the coordinates
 * (differentiated once by the tool), 0 when on the velocities, -1 out of
 * range. */
int ch_problem_nq(const ch_problem *pb);
int ch_problem_nconstraints(const ch_problem *pb);
int ch_problem_np(const ch_problem *pb);
const char *ch_problem_coordinate(const ch_problem *pb, int i);
const char *ch_problem_param_name(const ch_problem *pb, int i);
double ch_problem_param_default(const ch_problem *pb, int i);
int ch_problem_holonomic(const ch_problem *pb, int i);
/* The constraints at (t, q, q', p) (nq, nq and np values, the parameters
 * in the model's order, which is a compiled system's): phi the
 * velocity-level functions that vanish on motions, g the functions as
 * written (for a holonomic constraint, constant along motions), one value
 * per constraint each (either may be NULL). An independent check of any
 * compiled form's trajectory. CH_E_NUMERIC where one is undefined. */
int ch_problem_constraints(ch_problem *pb, double t, const double *q, const double *qt,
                           const double *p, double *phi, double *g, ch_err *err);

/* ---- documents and emitted code (the commands derive and emit) ---------- */

/* Writes the derivation (SPEC §3) to out in format "text" (NULL), "latex",
 * "sympy" or "json", only the sections of the comma-separated list only
 * (NULL: all). CH_E_USAGE for an unknown format or section, CH_E_IO when
 * out cannot be written. */
int ch_problem_write_derivation(ch_problem *pb, const char *format, const char *only,
                                FILE *out, ch_err *err);
/* The sections of the derivation in order (the keys `only` takes), i-th
 * or NULL past the last (or when the document cannot be made). */
const char *ch_problem_section(ch_problem *pb, size_t i);

/* An SVG line plot of a table of nrows rows of ncols columns (row-major,
 * the columns named by names) into *svg (malloc'd): the ny columns y
 * against the first column, or against the column x when x is not NULL
 * (a trajectory, one scale for both axes); at most CH_PLOT_SERIES_MAX
 * curves, long ones thinned. CH_E_USAGE for a column that is not there. */
int ch_plot_rows(char **svg, const char *title, size_t ncols, const char *const *names,
                 size_t nrows, const double *rows, const char *x, size_t ny,
                 const char *const *y, ch_err *err);

/* 1 when prefix can prefix the emitted C symbols (SPEC §4: a C identifier
 * of at most 64 characters that is no keyword). */
int ch_prefix_valid(const char *prefix);
/* The emitted C of a form (SPEC §4) with the symbols' prefix (NULL:
 * MODEL_FORM): header and source as malloc'd strings of hlen and slen
 * bytes (NUL-terminated; the caller frees). CH_E_MODEL when the form does
 * not exist for the model, CH_E_USAGE for a prefix that is not valid.
 * The forms of one problem share the kernels they have in common (each
 * built once); a form's text does not depend on the forms emitted before
 * it. */
int ch_problem_emit(ch_problem *pb, const char *form, const char *prefix, char **header,
                    size_t *hlen, char **source, size_t *slen, ch_err *err);
/* The files of the driver program of `emit --driver` for the form emitted
 * with prefix, i = 0, 1, ...: main.c, then the runtime's sources. *name
 * is static, *text malloc'd (len bytes; the caller frees). 0, 1 when
 * there is no file i, or an error code. */
int ch_driver_file(const char *prefix, size_t i, const char **name, char **text,
                   size_t *len, ch_err *err);

/* ---- the audit (the command check) --------------------------------------- */

typedef struct ch_check_options {
    int json;          /* the report in JSON (SPEC §2) instead of text */
    long loop;         /* > 0: also transport a loop of that many states
                          (CH_LOOP_POINTS_MIN..MAX) with the hamilton form
                          and report the Poincare-Cartan integral I1 */
    int loop_svg;      /* with loop: also draw it (ch_problem_check's svg) */
    double time_limit; /* > 0: quantities not decided after that many
                          seconds are reported unknown */
    /* Called as each quantity is decided (NULL: not), with the seconds
     * since the audit began. */
    void (*progress)(void *ctx, size_t done, size_t total, const char *name,
                     double seconds);
    void *progress_ctx;
} ch_check_options;
#define CH_LOOP_POINTS_MIN 8
#define CH_LOOP_POINTS_MAX 100000

/* Audits which quantities the model conserves (README "What check
 * reports") into *report (malloc'd text or JSON; the caller frees), with
 * o->loop_svg the loop's SVG into *svg (else *svg is NULL), and the
 * number of quantities the time limit left undecided into *skipped (may
 * be NULL). */
int ch_problem_check(ch_problem *pb, const ch_check_options *o, char **report, char **svg,
                     size_t *skipped, ch_err *err);

/* ---- running as the command run does ------------------------------------ */

/* At most this many columns in the plot of a run. */
#define CH_PLOT_SERIES_MAX 16

typedef struct ch_run_options {
    const char *form, *compiler; /* NULL: "reduced", "tcc" */
    int no_rechart;  /* a reduced or hamilton form stops at a singular chart
                        instead of switching charts (README "Charts") */
    /* With svg not NULL, the rows are also plotted into *svg (malloc'd,
     * NULL when there was no row): the columns plot_y (nplot of them; 0:
     * the coordinates, at most CH_PLOT_SERIES_MAX) against t, or, when
     * plot_x is not NULL, the one column plot_y[0] (nplot 1) against
     * plot_x. */
    char **svg;
    const char *plot_x;
    const char *const *plot_y;
    size_t nplot;
} ch_run_options;

/* Compiles the form and runs it as `chetaev run` and the emitted driver
 * programs do: the runtime's options in argv[1..argc) (README
 * "Integration": --method, --t1, --rtol, --set, --init, -o, --stats ...),
 * the CSV to stdout or -o FILE, notes, errors and --stats on stderr
 * prefixed by argv[0]. Returns -1 with err when nothing ran: an option's
 * syntax, a plot column that does not exist (CH_E_USAGE), a form that
 * cannot be compiled; otherwise the exit code of SPEC §2 with its message
 * on stderr: 0, 2 for a name the model does not have (--set, --init) or
 * an output that cannot be written, 3 for a numerical failure (the rows
 * before it written and plotted); -1 with err also when the plot of a
 * run that succeeded failed. */
int ch_problem_run(ch_problem *pb, const ch_run_options *o, int argc, char **argv,
                   ch_err *err);
/* The syntax of the runtime's options argv[0..argc) (no program name),
 * checked without a model: 0, or CH_E_USAGE with the message. */
int ch_run_args_check(int argc, char **argv, ch_err *err);
/* 1 when arg is one of those options and takes a separate value ("--dt",
 * not "--dt=1"), so that a front end can pass them through. */
int ch_run_option_takes_value(const char *arg);
/* Those options by index i = 0, 1, ... ("--method", ...; NULL past the
 * last), for a front end's help and suggestions. */
const char *ch_run_option_name(int i);

/* ---- compiled systems --------------------------------------------------- */

/* Compiles a form. The new system's parameters are the defaults and its
 * state is the model's initial state at t = 0. */
ch_system *ch_system_compile(const ch_problem *pb, const char *form,
                             const char *compiler, ch_err *err);
void ch_system_free(ch_system *s);

/* The C prefix of the compiled symbols (MODEL_FORM). */
const char *ch_system_prefix(const ch_system *s);
/* State size (nx), coordinates (nq: the state's first nq entries),
 * parameters (np). */
int ch_system_nx(const ch_system *s);
int ch_system_nq(const ch_system *s);
int ch_system_np(const ch_system *s);
/* Names: "x" (coordinate), "x'" (velocity) or "y_x" (momentum) for the
 * state; parameters in declared order. NULL when i is out of range. */
const char *ch_system_state_name(const ch_system *s, int i);
const char *ch_system_param_name(const ch_system *s, int i);
/* The model's default value of parameter i (NaN when out of range). */
double ch_system_param_default(const ch_system *s, int i);
/* Index of a state variable or parameter, -1 when there is none. */
int ch_system_state_index(const ch_system *s, const char *name);
int ch_system_param_index(const ch_system *s, const char *name);

/* The compiled functions (valid until ch_system_free). */
ch_rhs_fn ch_system_rhs(const ch_system *s);
ch_energy_fn ch_system_energy_fn(const ch_system *s);

/* ---- parameters --------------------------------------------------------- */

/* The current parameters (np values, valid until ch_system_free). */
const double *ch_system_params(const ch_system *s);
/* Sets one parameter; takes effect at the next evaluation, no recompiling.
 * The state is left as it is (call ch_system_reset to recompute the
 * model's initial state under the new parameters). */
int ch_system_set_param(ch_system *s, const char *name, double value,
                        ch_err *err);

/* ---- state ---------------------------------------------------------------- */

double ch_system_time(const ch_system *s);
/* The current state (nx values, valid until ch_system_free). */
const double *ch_system_state(const ch_system *s);
/* t = 0 and the model's initial state (coordinates and velocities of the
 * `initial` statement, made consistent: ch_problem_warning) under the
 * current parameters: dependent velocities and momenta follow the
 * parameters, and coordinates are moved onto holonomic constraints that
 * the parameters change (least kinetic-metric step), as with `run --set`. */
int ch_system_reset(ch_system *s, ch_err *err);
/* Sets one value of the current state by name, as `run --init` does: a
 * coordinate "x" or a velocity "x'" keeps the other coordinates and
 * velocities and recomputes the form's state from them (dependent
 * velocities follow the constraints, and coordinates off a holonomic
 * constraint are moved onto it: read them back with ch_system_state and
 * ch_system_velocities); any other state name ("y_x") is set directly. */
int ch_system_set_state(ch_system *s, const char *name, double value,
                        ch_err *err);
/* t = 0 and the model's initial state under the current parameters with
 * the n initial values of the named coordinates ("x"), velocities ("x'")
 * or state variables ("y_x") taken together, exactly as `run --set ...
 * --init NAME=V ...` computes it (which ch_system_set_state, one value
 * at a time, need not); the first chart, as ch_system_reset. warning
 * (wlen bytes, may be NULL) gets what was moved onto holonomic
 * constraints or recomputed from them, "" when nothing. */
int ch_system_set_initial(ch_system *s, size_t n, const char *const *names,
                          const double *values, char *warning, size_t wlen, ch_err *err);
/* Replaces time and state (nx values) as they are. */
int ch_system_set_state_vector(ch_system *s, double t, const double *x,
                               ch_err *err);

/* All nq velocities at the current state into qt. */
int ch_system_velocities(const ch_system *s, double *qt, ch_err *err);
/* The energy at the current state and parameters. */
double ch_system_energy(const ch_system *s);

/* ---- integration -------------------------------------------------------- */

/* Integrates from the current time to t1 >= time with the integration
 * loop of `chetaev run` (runtime/simulate.h).
 *
 * Adaptive methods ("dop853", the default; "rk45"): steps chosen by the
 * error estimate under the tolerances of ch_system_set_tolerances (by
 * default rtol 1e-10, atol 1e-12); dt is the first step, 0 chooses it
 * automatically. The last step ends exactly at t1.
 *
 * Fixed methods ("euler", "midpoint", "rk4"): dt > 0 is the step;
 * ceil((t1 - t)/dt) steps on the grid t + k*dt, the last one ending
 * exactly at t1, as `chetaev run` does from t = 0.
 *
 * On a numerical failure (CH_E_NUMERIC, message with t and the reason:
 * a singular right-hand side of a fixed step, a step size that became too
 * small, more than the step limit, a singular chart) the time and state
 * are those of the last accepted step. The step statistics of the call
 * are read with ch_system_stats. */
int ch_system_integrate(ch_system *s, double t1, const char *method,
                        double dt, ch_err *err);

/* A value as `run --set`/`--init` take it: a number, or a constant
 * expression of the model language without blanks (1/3, pi/2,
 * sqrt(2)/2), finite, into *v. 0, or CH_E_USAGE. */
int ch_parse_value(const char *s, double *v, ch_err *err);

/* The step of a fixed method that `chetaev run` takes without --dt. */
#define CH_FIXED_DT 1e-3
/* 1 for an adaptive method ("dop853", "rk45", "cvode"), 0 for a fixed
 * one, -1 for no method of that name. */
int ch_method_adaptive(const char *method);
/* The method's own name ("rk45" for its alias "dopri5"), NULL for none. */
const char *ch_method_name(const char *method);
/* The tolerances of ch_system_set_tolerances before any call. */
#define CH_DEFAULT_RTOL 1e-10
#define CH_DEFAULT_ATOL 1e-12

/* The rows of `chetaev run`'s CSV during ch_system_integrate_rows: the
 * columns of ch_system_column_name, each row to row (nonzero stops the
 * integration, CH_E_USAGE), the notes of re-charts and events to note
 * (either may be NULL). Rows at t, then every `every`-th step of a fixed
 * method (0: every step), or with dt_out > 0 at the multiples of dt_out
 * (adaptive methods: by dense output, --dt-out), and at the end. */
typedef struct ch_rows {
    int (*row)(void *ctx, const double *v, int n);
    void (*note)(void *ctx, double t, const char *text);
    void *ctx;
    long every;
    double dt_out;
} ch_rows;
/* ch_system_integrate with the rows. */
int ch_system_integrate_rows(ch_system *s, double t1, const char *method, double dt,
                             const ch_rows *rows, ch_err *err);
/* The CSV's columns: "t", the coordinates, all their velocities, the
 * energy "E", then the form's outputs (multipliers, reactions,
 * residuals ...). Every name is unique: a generated one that the model
 * already uses (a coordinate E or phi1) gets "_" appended ("E_"). */
int ch_system_ncolumns(const ch_system *s);
const char *ch_system_column_name(const ch_system *s, int i);

/* Tolerances of the adaptive methods for the following calls of
 * ch_system_integrate: the error per step, RMS over the state, is kept
 * below atol + rtol*|x| (rtol >= 100 ulp, atol > 0); dt_max > 0 bounds the
 * step, 0 means no bound (fixed methods ignore it). CH_E_USAGE (nothing
 * changed) for invalid values. */
int ch_system_set_tolerances(ch_system *s, double rtol, double atol,
                             double dt_max, ch_err *err);
/* The step limit of ch_system_integrate (default 1e7): adaptive methods
 * fail with CH_E_NUMERIC after that many accepted steps, fixed methods
 * refuse (CH_E_USAGE) a call that asks for more. */
int ch_system_set_max_steps(ch_system *s, double max_steps, ch_err *err);

/* Step statistics of the last ch_system_integrate call. rhs_calls counts
 * every right-hand side evaluation (1 at the start and 1 for the automatic
 * first step of an adaptive method, then its stages, 12 per dop853 and 6
 * per rk45 attempt, accepted or rejected; 1, 2, 4 per euler, midpoint,
 * rk4 step; cvode's own count, its finite-difference Jacobians included).
 * recharts counts the changes of chart of a reduced or hamilton form in
 * that call (README "Charts"); events the zero crossings of the model's
 * events (a `stop` event ends the call there: the time is then before
 * t1); note is the last note of either ("t = 1.5608: dependent velocities
 * x' (were y')", "event fallen at t = ..."; "" when none). */
typedef struct ch_stats {
    long accepted, rejected, rhs_calls, recharts;
    char note[256];
    long events;
} ch_stats;
void ch_system_stats(const ch_system *s, ch_stats *st);

/* ---- charts (README "Charts") ------------------------------------------- */

/* The reduced and hamilton forms of a model with constraints are charts:
 * their state is valid where the constraint Jacobian's block of the
 * dependent velocities (and hamilton's Legendre map) is well conditioned.
 * ch_system_integrate checks the chart's quality (a number in [0, 1], 0
 * where singular) before the first step and after every step; below
 * chart_min (default 0.01) it switches to the best-conditioned dependent
 * velocities at that state (the form derived and compiled again with
 * them, the state mapped; from then on the state's names and
 * ch_system_rhs are the new chart's), or, where no chart is better or
 * re-charting is off, fails with CH_E_NUMERIC naming the singular block
 * and the time. The switches of a call are counted in ch_system_stats's
 * recharts, the last one's note in its note. ch_system_reset returns to
 * the first chart (the model's initial state is in it);
 * ch_system_set_state_vector takes a state of the current chart. */

/* The chart's quality at the current state (1 for a form with no chart). */
double ch_system_chart_quality(const ch_system *s);
/* The current dependent velocities ("y'" or "x' th1'"; "" without a chart). */
const char *ch_system_chart(const ch_system *s);
/* Re-charting on (default) or off (stop instead), and the threshold
 * chart_min in [0, 0.25) (0: never; CH_E_USAGE otherwise). */
int ch_system_set_rechart(ch_system *s, int on, double chart_min, ch_err *err);

#ifdef __cplusplus
}
#endif

#endif
