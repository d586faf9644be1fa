/* randexpr.h — random expressions for property tests (header-only, static
 * inline so that a test using part of it compiles warning-free).
 *
 * A deterministic generator (splitmix64, seeded by the test) builds random
 * expressions over given symbols: small rationals, sums, differences,
 * products, quotients by denominators that cannot vanish symbolically
 * (a^2 + 1/2, or a symbol), integer powers, and sin, cos, tan, exp,
 * sqrt(a^2 + 1), log(a^2 + 1), sinh, cosh, atan. With symbols sampled away
 * from 0 (rx_point: |s| in [1/4, 2]) every generated expression is defined;
 * only near poles of tan or by overflow can a value be non-finite, which
 * tests skip. Construction can fail only on the context's limits (NULL). */
#ifndef CH_TEST_RANDEXPR_H
#define CH_TEST_RANDEXPR_H

#include <stdint.h>

#include "core/expr.h"

typedef struct {
    uint64_t s;
} rx_rng;

static inline uint64_t rx_next(rx_rng *r)
{
    uint64_t z = (r->s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* Uniform in 0..n-1. */
static inline int rx_int(rx_rng *r, int n) { return (int)(rx_next(r) % (uint64_t)n); }

/* Uniform double in [lo, hi). */
static inline double rx_unif(rx_rng *r, double lo, double hi)
{
    return lo + (hi - lo) * (double)(rx_next(r) >> 11) * (1.0 / 9007199254740992.0);
}

/* A point for symbols: |value| in [1/4, 2], random sign unless positive. */
static inline double rx_point(rx_rng *r, int positive)
{
    double v = rx_unif(r, 0.25, 2.0);
    return positive || rx_int(r, 2) ? v : -v;
}

static inline const ch_expr *rx_leaf(ch_ctx *ctx, rx_rng *r,
                              const ch_expr *const *syms, int nsyms)
{
    if (nsyms > 0 && rx_int(r, 5) < 3) return syms[rx_int(r, nsyms)];
    return ch_num_frac(ctx, rx_int(r, 11) - 5, 1 + rx_int(r, 4));
}

/* A random expression of nesting depth at most `depth`. */
static inline const ch_expr *rx_expr(ch_ctx *ctx, rx_rng *r,
                              const ch_expr *const *syms, int nsyms, int depth)
{
    if (depth <= 0 || rx_int(r, 5) == 0) return rx_leaf(ctx, r, syms, nsyms);
    const ch_expr *a = rx_expr(ctx, r, syms, nsyms, depth - 1);
    const ch_expr *half = ch_num_frac(ctx, 1, 2);
    switch (rx_int(r, 16)) {
    case 0:
    case 1:
        return ch_add(ctx, a, rx_expr(ctx, r, syms, nsyms, depth - 1));
    case 2:
        return ch_sub(ctx, a, rx_expr(ctx, r, syms, nsyms, depth - 1));
    case 3:
    case 4:
        return ch_mul(ctx, a, rx_expr(ctx, r, syms, nsyms, depth - 1));
    case 5: {
        const ch_expr *b = rx_expr(ctx, r, syms, nsyms, depth - 1);
        return ch_div(ctx, a, ch_add(ctx, ch_pow_si(ctx, b, 2), half));
    }
    case 6:
        return nsyms ? ch_div(ctx, a, syms[rx_int(r, nsyms)]) : a;
    case 7:
        return ch_pow_si(ctx, a, 2 + rx_int(r, 2));
    case 8:
        return ch_pow_si(ctx, ch_add(ctx, ch_pow_si(ctx, a, 2), half),
                         -1 - rx_int(r, 2));
    case 9:
        return ch_fun1(ctx, CH_F_SIN, a);
    case 10:
        return ch_fun1(ctx, CH_F_COS, a);
    case 11:
        return ch_fun1(ctx, CH_F_EXP, ch_mul(ctx, half, a));
    case 12:
        return ch_sqrt(ctx, ch_add(ctx, ch_pow_si(ctx, a, 2), ch_one(ctx)));
    case 13:
        return ch_fun1(ctx, CH_F_LOG,
                       ch_add(ctx, ch_pow_si(ctx, a, 2), ch_one(ctx)));
    case 14:
        return ch_fun1(ctx, rx_int(r, 2) ? CH_F_SINH : CH_F_COSH,
                       ch_mul(ctx, half, a));
    default:
        return ch_fun1(ctx, rx_int(r, 2) ? CH_F_ATAN : CH_F_TAN, a);
    }
}

#endif
