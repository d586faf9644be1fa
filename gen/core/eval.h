/* eval.h — numerical evaluation in double and in arb balls, and the zero
 * test of THEORY §7.
 *
 * Symbol values are arrays indexed by ch_sym.sid (size ch_ctx_nsyms); pi is
 * built in. Evaluation walks the DAG once per call with a per-call cache. */
#ifndef CH_EVAL_H
#define CH_EVAL_H

#include "core/expr.h"

/* NaN where undefined (log of a negative, 1/0, ...). */
double ch_eval_d(ch_ctx *ctx, const ch_expr *e, const double *symval);
/* Evaluates many expressions with one shared cache: out[i] = eval(e[i]). */
void ch_eval_d_many(ch_ctx *ctx, size_t n, const ch_expr *const *e,
                    const double *symval, double *out);

/* Ball evaluation at precision prec bits. Returns 0 when res encloses the
 * value, nonzero when the value is undefined or not finite at this point
 * (division by a ball containing 0, log of a non-positive ball, ...). */
int ch_eval_arb(ch_ctx *ctx, arb_t res, const ch_expr *e,
                const arb_struct *symval, slong prec);
/* The same for many expressions with one shared cache (common
 * subexpressions of the entries of a matrix are evaluated once):
 * res[i] gets e[i]. Nonzero as soon as one is undefined. */
int ch_eval_arb_many(ch_ctx *ctx, size_t n, const ch_expr *const *e,
                     arb_ptr const *res, const arb_struct *symval, slong prec);

/* A deterministic generic point for numerical decisions (ranks, pivots,
 * degrees): every symbol uniform in +-[0.5, 1.5], all positive when
 * `which` is odd (sqrt and log need that domain), pi its value. `stream`
 * separates independent uses. v has ch_ctx_nsyms entries. */
void ch_eval_generic_point(const ch_ctx *ctx, uint64_t stream, int which,
                           double *v);

typedef enum { CH_ZERO_YES, CH_ZERO_NO, CH_ZERO_UNKNOWN } ch_zero_verdict;

typedef struct {
    ch_zero_verdict verdict;
    int symbolic;       /* 1: decided by the normal form, 0: random points */
    int points;         /* points at which the expression was evaluated */
    double max_abs;     /* largest |value| (ball midpoint) seen, 0 if symbolic */
    int have_witness;   /* verdict NO by a point: symval of that point */
    double *witness;    /* ch_ctx_nsyms doubles, arena-owned, or NULL */
} ch_zero_result;

/* Fills symval (ch_ctx_nsyms balls, already initialised) with a random
 * point, e.g. on the constraint manifold. Returns 0, or nonzero when no
 * point could be produced this time (the test then tries another). */
typedef int (*ch_sampler)(void *data, flint_rand_t rnd, arb_struct *symval,
                          slong prec);

/* The zero test: symbolic normal form first, then `points` random points
 * (sampler NULL: every symbol uniform in [-2, 2] away from 0, deterministic
 * seed). YES when every enclosure contains 0 with radius < 2^-(prec/2);
 * NO as soon as one excludes 0 (witness kept); UNKNOWN otherwise. */
ch_zero_result ch_zero_test(ch_ctx *ctx, const ch_expr *e, ch_sampler sampler,
                            void *data, int points);

/* The same test with the symbolic stage on `symbolic` and the points on
 * e, an expression the caller knows to equal `symbolic` at every point the
 * sampler produces (the energy balance without the reaction powers that
 * vanish on the constraint manifold, which then needs no multipliers). */
ch_zero_result ch_zero_test_on(ch_ctx *ctx, const ch_expr *symbolic,
                               const ch_expr *e, ch_sampler sampler,
                               void *data, int points);

/* A correctly rounded double for an exact rational (round to nearest). */
double ch_fmpq_to_double(const fmpq_t q);

#endif
