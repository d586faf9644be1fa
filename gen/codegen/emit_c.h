/* emit_c.h — C99 right-hand sides of the three forms (SPEC §4).
 *
 * For a form, the kernel builder collects the symbolic outputs (full: M, h,
 * G, c, Q, energy; reduced: alpha, M*, the reduced right side; hamilton:
 * the Legendre data and the Poincaré–Hamilton right sides), turns them into
 * one straight-line program with common subexpressions shared across all
 * outputs (cse.h), and fills the templates under templates/ (embedded in
 * the binary at build time). Small dense linear systems are solved in the
 * emitted code. Output is deterministic: the same model gives
 * byte-identical files. Model names never reach the C text except through
 * a whitelist (state and parameter names appear only inside string
 * literals, escaped). */
/*
 * The emitted API (all names PREFIX_*, declared in PREFIX.h and repeated at
 * the top of PREFIX.c so that the .c compiles alone, e.g. in the JIT):
 *
 *   #define PREFIX_NX    state size (full 2n, reduced and hamilton n+m)
 *   #define PREFIX_NP    parameters
 *   #define PREFIX_NQ    coordinates n
 *   #define PREFIX_NOUT  optional CSV columns of PREFIX_outputs
 *   const char *const PREFIX_state_names[PREFIX_NX]    "x", "x'", or "y_x"
 *   const char *const PREFIX_param_names[PREFIX_NP]
 *   const double      PREFIX_param_defaults[PREFIX_NP]
 *   const char *const PREFIX_output_names[PREFIX_NOUT]
 *       (an array of size 0 is declared with size 1, holding 0 / 0.0)
 *   void   PREFIX_initial(double *x)       model's initial state at t = 0
 *          with the default parameters (= state_from of the `initial`
 *          values; dependent velocities recomputed from the constraints)
 *   int    PREFIX_state_from(t, q[n], qt[n], p, x): the form's state from
 *          coordinates and velocities (full: dependent velocities replaced
 *          by alpha; reduced: the independent ones; hamilton: y* = dL* / dq'_r)
 *   int    PREFIX_rhs(t, x, p, dxdt)       0, or 1 where singular (or the
 *          implicit-alpha Newton fails), 2 where the chart of a reduced or
 *          hamilton form is numerically singular (G_d's pivot at most
 *          CH_CHART_SINGULAR of its row of G, emit_red.h)
 *   double PREFIX_chart_quality(t, x, p)   the chart's conditioning in
 *          [0, 1] (README "Charts"; 1 for the full form), and
 *          #define PREFIX_CHART 1 for a reduced or hamilton form with
 *          constraints (0 otherwise)
 *   double PREFIX_energy(t, x, p)          E at the full velocities
 *          (HUGE_VAL when the velocities cannot be reconstructed)
 *   int    PREFIX_velocities(t, x, p, qt[n])  all n velocities
 *   int    PREFIX_outputs(t, x, p, out[NOUT]):
 *          full:     phi1..phik, lambda1..lambdak, R_q (n)
 *          reduced:  lambda1..lambdak, R_q (n)
 *          hamilton: y_q (m), lambda1..lambdak, R_q (n)
 *          (lambda and R from the full KKT system at the reconstructed
 *          velocities; nothing when k = 0 except hamilton's y columns),
 *          then in every form the declared integrals, in declared order
 *   int    PREFIX_project(t, x, p)          the coordinates onto the
 *          holonomic constraints; full form: then three steps of
 *          v -= M^-1 G^T (G M^-1 G^T)^-1 phi(v); 0, or 1 where singular.
 *   PREFIX_rhs_from, _energy_from, _velocities_from, _outputs_from,
 *   _project_from, _chart_quality_from, _events_from: the same with one
 *          more argument vs after p (rhs_from(t, x, p, vs, dxdt),
 *          energy_from(t, x, p, vs)): n velocities of a nearby state,
 *          the start of the Newton iterations below (NULL: the initial
 *          state's, what the plain functions pass); #define PREFIX_NEWTON
 *          1 where a form has such iterations (0 otherwise).
 *   #define PREFIX_REENTRANT 0 where a work array is static (more than
 *          CH_STACK_ELEMS elements, emit_red.h: no stack array grows with
 *          the model): then one call at a time per compiled copy; 1
 *          otherwise (the functions keep no state between calls).
 * State order: q, then q' (full), q'_indep (reduced) or y* (hamilton), in
 * declared order. Implicit alpha (constraints nonlinear in the dependent
 * velocities): damped Newton on phi(v_dep) = 0 with the dependent block
 * of G, from vs (the loop's last accepted state) or the initial state's
 * dependent velocities, and from the given velocities in state_from; 100
 * iterations at most, failure returns 1; in a reduced or hamilton form a
 * root whose block determinant has not the initial state's sign is a
 * failure (another branch).
 * Independent accelerations (reduced form, numeric hamilton form): from
 * the symbolic reduced right side or by small numeric solves on M, G, b, r
 * (emit_red.h), whichever counts fewer operations (the symbolic one is
 * not built when its expressions have over 32 times as many nodes as the
 * best other has operations: the header says so); M* by an unrolled
 * L D L^T for m <= 8. Hamilton form without a closed-form H*: kn_vel
 * solves y*(t, q, v) = y for the independent velocities (one linear solve
 * when L* is quadratic, damped Newton with Jacobian K otherwise, from vs
 * (or v = 0) and then from a small v along y; failure returns 1), and
 * y*' = K v' + (d y* by dq) q' + d y* by dt. The header comment names the
 * choices and the operation counts.
 * Work arrays are local arrays of fixed size, O((n+k)^2) doubles, static
 * beyond CH_STACK_ELEMS elements (PREFIX_REENTRANT). */
#ifndef CH_EMIT_C_H
#define CH_EMIT_C_H

#include "core/buf.h"
#include "codegen/cse.h"
#include "mech/mechanics.h"

typedef enum { CH_FORM_FULL, CH_FORM_REDUCED, CH_FORM_HAMILTON } ch_form;

/* "full", "reduced", "hamilton" <-> ch_form; -1 when unknown. */
int ch_form_parse(const char *name);
const char *ch_form_name(ch_form f);

/* Writes PREFIX.h into header and PREFIX.c into source. prefix NULL means
 * MODEL_FORM. The form must exist for the model (hamilton needs a Legendre
 * map that is not identically degenerate; reduced and hamilton need k >= 1
 * or are the plain Lagrangian forms for k = 0); otherwise CH_ERR_MODEL
 * with the reason. */
int ch_emit_c(ch_ctx *ctx, const ch_mechanics *d, ch_form form,
              const char *prefix, ch_buf *header, ch_buf *source,
              ch_error *err);

/* What the forms of one model share when emitted one after the other:
 * the programs of the kernels that several forms have (cse.h: kn_dyn,
 * kn_alpha, kn_en, kn_integ and the symbolic reduced right side, each
 * built once) and the hamilton form's expressions from the Kane form
 * (y*_t, eta, alpha, y*). One context and one mechanics only; it must
 * not outlive them. NULL from new when out of memory. */
typedef struct ch_emit_cache ch_emit_cache;
ch_emit_cache *ch_emit_cache_new(void);
void ch_emit_cache_free(ch_emit_cache *c);

/* ch_emit_c with what several forms share kept in cache for the next
 * calls (a caller emitting several forms of one model passes one cache to
 * each call and frees it after; NULL: none kept). The output is the same
 * as ch_emit_c's. */
int ch_emit_c_cached(ch_ctx *ctx, const ch_mechanics *d, ch_form form,
                     const char *prefix, ch_emit_cache *cache, ch_buf *header,
                     ch_buf *source, ch_error *err);

/* The momentum columns y_NAME of another chart of the same model (the
 * first chart of a run that re-charts, chart.h): its m independent
 * coordinates and y* = dL* / dq'_r there, expressions in t, q and all
 * velocities, which the outputs evaluate at the velocities of the state
 * instead of copying the state's own momenta. */
typedef struct {
    const int *indep;            /* m coordinate indices */
    const ch_expr *const *ystar; /* m */
} ch_chart_cols;

/* How kn_acc computes the independent accelerations of a reduced or
 * hamilton form: the candidate programs compared by their operations
 * per call (beyond alpha; the header's note says the same in words) and
 * the one written, the cheapest (ties: symbolic, numeric, substituted,
 * diagonal). */
typedef enum {
    CH_ACC_NONE,        /* the form has no kn_acc */
    CH_ACC_SYMBOLIC,    /* the symbolic reduced equations, M* solved */
    CH_ACC_NUMERIC,     /* numeric solves on the full form's M, G, b, r */
    CH_ACC_SUBSTITUTED, /* the same solves substituted into expressions */
    CH_ACC_DIAGONAL,    /* M* diagonal: f_i / M*_ii */
    CH_ACC_COUNT
} ch_acc_kind;

typedef struct {
    ch_acc_kind chosen;
    double cost[CH_ACC_COUNT]; /* by kind; -1 for a candidate not built */
    int symbolic_skipped;      /* the symbolic one not built: it could not win */
    int numeric_triangular;    /* the numeric one solves G_d by substitution */
} ch_emit_report;

/* ch_emit_c_cached with the hamilton form's y_NAME output columns from
 * cols (NULL: the form's own); other forms ignore cols. prelude is the
 * text written at the top of the source for `#include <math.h>\n`
 * (NULL: that line): the JIT's declarations of what it takes from the
 * host's math library. report (or NULL) receives how kn_acc was chosen. */
int ch_emit_c_chart(ch_ctx *ctx, const ch_mechanics *d, ch_form form,
                    const char *prefix, ch_emit_cache *cache, const ch_chart_cols *cols,
                    const char *prelude, ch_buf *header, ch_buf *source,
                    ch_emit_report *report, ch_error *err);

#endif
