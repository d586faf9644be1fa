/* test_eval.c — double and ball evaluation against libm, undefined points,
 * caching on shared DAGs, and the zero test of THEORY §7 (symbolic and
 * random-point verdicts, witnesses, custom samplers). */
#include <stdlib.h>

#include "check.h"
#include "core/eval.h"
#include "core/simplify.h"

static ch_ctx *ctx;
static const ch_expr *x, *y, *z;
static double pt[8];

static const ch_expr *n(slong v) { return ch_num_si(ctx, v); }
static const ch_expr *fr(slong p, slong q) { return ch_num_frac(ctx, p, q); }
static const ch_expr *add(const ch_expr *u, const ch_expr *v) { return ch_add(ctx, u, v); }
static const ch_expr *sub(const ch_expr *u, const ch_expr *v) { return ch_sub(ctx, u, v); }
static const ch_expr *mul(const ch_expr *u, const ch_expr *v) { return ch_mul(ctx, u, v); }
static const ch_expr *dv(const ch_expr *u, const ch_expr *v) { return ch_div(ctx, u, v); }
static const ch_expr *pw(const ch_expr *u, slong e) { return ch_pow_si(ctx, u, e); }
static const ch_expr *pq(const ch_expr *u, slong p, slong q)
{
    fmpq_t r;
    fmpq_init(r);
    fmpq_set_si(r, p, (ulong)q);
    const ch_expr *e = ch_pow_q(ctx, u, r);
    fmpq_clear(r);
    return e;
}
static const ch_expr *fn(ch_fun f, const ch_expr *u) { return ch_fun1(ctx, f, u); }

/* value at x = pt[0], y = pt[1], z = pt[2] */
static double ev(const ch_expr *e) { return ch_eval_d(ctx, e, pt); }
static void at(double a, double b, double c)
{
    pt[0] = a;
    pt[1] = b;
    pt[2] = c;
}

/* ---- doubles ---------------------------------------------------------- */

static void test_double_functions(void)
{
    /* volatile: compare with the run-time libm, not with the compiler's
     * constant folding (which may round differently) */
    volatile double a = 0.7, b = -0.3, c = 2.5;
    at(a, b, c);
    CHECK(ev(fn(CH_F_SIN, x)) == sin(a));
    CHECK(ev(fn(CH_F_COS, x)) == cos(a));
    CHECK(ev(fn(CH_F_TAN, x)) == tan(a));
    CHECK(ev(fn(CH_F_ASIN, y)) == asin(b));
    CHECK(ev(fn(CH_F_ACOS, y)) == acos(b));
    CHECK(ev(fn(CH_F_ATAN, z)) == atan(c));
    CHECK(ev(ch_atan2(ctx, y, x)) == atan2(b, a));
    CHECK(ev(ch_atan2(ctx, x, y)) == atan2(a, b));
    CHECK(ev(fn(CH_F_SINH, z)) == sinh(c));
    CHECK(ev(fn(CH_F_COSH, z)) == cosh(c));
    CHECK(ev(fn(CH_F_TANH, x)) == tanh(a));
    CHECK(ev(fn(CH_F_EXP, x)) == exp(a));
    CHECK(ev(fn(CH_F_LOG, z)) == log(c));
    CHECK(ev(fn(CH_F_ABS, y)) == 0.3);
    CHECK(ev(ch_pi(ctx)) == 3.14159265358979323846);
    CHECK(ev(mul(ch_pi(ctx), x)) == 3.14159265358979323846 * a);
    CHECK(ev(pq(z, 1, 3)) == cbrt(c));
    CHECK(ev(ch_sqrt(ctx, z)) == sqrt(c));
}

static void test_double_arith(void)
{
    at(0.7, -0.3, 2.5);
    CHECK(ev(fr(1, 3)) == 1.0 / 3.0);
    CHECK(ev(fr(2, 7)) == 2.0 / 7.0);
    /* a rational beyond 53 bits is still correctly rounded */
    fmpq_t q;
    fmpq_init(q);
    fmpz_set_str(fmpq_numref(q), "100000000000000000000000000001", 10);
    fmpz_set_str(fmpq_denref(q), "300000000000000000000000000000", 10);
    CHECK(ev(ch_num_q(ctx, q)) == 1.0 / 3.0);
    fmpq_clear(q);
    CHECK(ev(add(mul(n(3), x), n(1))) == 3 * 0.7 + 1);
    CHECK(ev(sub(x, y)) == 0.7 + 0.3);
    CHECK(ev(pw(x, 3)) == 0.7 * 0.7 * 0.7);
    CHECK(ev(pw(y, 2)) == -0.3 * -0.3);
    CHECK(ev(pw(y, 3)) < 0); /* exact sign of odd powers */
    CHECK_NEAR(ev(pw(z, -2)), 1 / 6.25, 1e-16);
    CHECK_NEAR(ev(pq(z, 2, 3)), pow(2.5, 2.0 / 3.0), 1e-15);
    CHECK_NEAR(ev(pq(z, 3, 2)), pow(2.5, 1.5), 1e-15);
    CHECK_NEAR(ev(pq(z, -1, 2)), 1 / sqrt(2.5), 1e-16);
    CHECK_NEAR(ev(pq(z, 1, 5)), pow(2.5, 0.2), 1e-15);
    CHECK_NEAR(ev(ch_pow(ctx, z, x)), pow(2.5, 0.7), 1e-15);
    CHECK_NEAR(ev(dv(x, add(z, n(1)))), 0.7 / 3.5, 1e-16);
    CHECK_NEAR(ev(ch_sqrt(ctx, n(2))), sqrt(2.0), 1e-16);
    CHECK(ev(pw(x, 2000)) == pow(0.7, 2000));
}

static void test_double_undefined(void)
{
    at(-1.0, 0.0, -8.0);
    CHECK(isnan(ev(ch_sqrt(ctx, x))));
    CHECK(isnan(ev(fn(CH_F_LOG, x))));
    CHECK(isnan(ev(pq(z, 1, 3)))); /* C semantics: no real cube root */
    CHECK(isnan(ev(fn(CH_F_ASIN, mul(n(2), x)))));
    CHECK(isinf(ev(pw(y, -1))));
    CHECK(isinf(ev(fn(CH_F_LOG, y))));
    CHECK(isnan(ev(ch_pow(ctx, x, fr(1, 2)))));
    CHECK(isnan(ev(ch_pow(ctx, z, add(y, fr(1, 2))))));
    CHECK(ev(ch_pow(ctx, z, add(y, n(2)))) == 64.0); /* integer exponent */
    /* no symbol values at all */
    CHECK(isnan(ch_eval_d(ctx, x, NULL)));
    CHECK(isnan(ch_eval_d(ctx, NULL, pt)));
}

static void test_double_many_and_cache(void)
{
    at(0.3, 1.1, -0.4);
    const ch_expr *e[4] = {fn(CH_F_SIN, x), add(fn(CH_F_SIN, x), y),
                           mul(add(fn(CH_F_SIN, x), y), z), fn(CH_F_COS, z)};
    double out[4];
    ch_eval_d_many(ctx, 4, e, pt, out);
    for (int i = 0; i < 4; i++) CHECK(out[i] == ev(e[i]));

    /* e_{k+1} = sin(e_k) + cos(e_k) * e_k: a tree of 2^60 nodes, a DAG of
     * a few hundred; only a cache makes this instantaneous */
    const ch_expr *d = x;
    double v = 0.3;
    for (int k = 0; k < 60; k++) {
        d = add(fn(CH_F_SIN, d), mul(fn(CH_F_COS, d), d));
        v = sin(v) + cos(v) * v;
    }
    CHECK_NEAR(ev(d), v, 1e-12);
    arb_struct *sv = _arb_vec_init(3);
    arb_set_d(sv, 0.3);
    arb_t r;
    arb_init(r);
    CHECK(ch_eval_arb(ctx, r, d, sv, 128) == 0);
    CHECK(arb_rel_accuracy_bits(r) > 60);
    CHECK_NEAR(arf_get_d(arb_midref(r), ARF_RND_NEAR), v, 1e-12);
    arb_clear(r);
    _arb_vec_clear(sv, 3);
}

/* ---- balls ------------------------------------------------------------ */

/* The ball at (x, y, z) = (a, b, c) contains the libm value d up to 4 ulp. */
static int ball_has(const ch_expr *e, double a, double b, double c, double d)
{
    arb_struct *sv = _arb_vec_init(3);
    arb_set_d(sv, a);
    arb_set_d(sv + 1, b);
    arb_set_d(sv + 2, c);
    arb_t r, w;
    arb_init(r);
    arb_init(w);
    int ok = ch_eval_arb(ctx, r, e, sv, 128) == 0;
    arb_set_d(w, d);
    arb_add_error_2exp_si(w, (slong)ilogb(d == 0 ? 1 : d) - 50);
    ok = ok && arb_overlaps(r, w) && arb_rel_accuracy_bits(r) > 100;
    arb_clear(r);
    arb_clear(w);
    _arb_vec_clear(sv, 3);
    return ok;
}

static int arb_undef(const ch_expr *e, double a, double b, double c)
{
    arb_struct *sv = _arb_vec_init(3);
    arb_set_d(sv, a);
    arb_set_d(sv + 1, b);
    arb_set_d(sv + 2, c);
    arb_t r;
    arb_init(r);
    int rc = ch_eval_arb(ctx, r, e, sv, 128);
    arb_clear(r);
    _arb_vec_clear(sv, 3);
    return rc != 0;
}

static void test_arb_values(void)
{
    const double a = 0.7, b = -0.3, c = 2.5;
    CHECK(ball_has(fn(CH_F_SIN, x), a, b, c, sin(a)));
    CHECK(ball_has(fn(CH_F_COS, y), a, b, c, cos(b)));
    CHECK(ball_has(fn(CH_F_TAN, x), a, b, c, tan(a)));
    CHECK(ball_has(fn(CH_F_ASIN, y), a, b, c, asin(b)));
    CHECK(ball_has(fn(CH_F_ACOS, y), a, b, c, acos(b)));
    CHECK(ball_has(fn(CH_F_ATAN, z), a, b, c, atan(c)));
    CHECK(ball_has(ch_atan2(ctx, y, x), a, b, c, atan2(b, a)));
    CHECK(ball_has(ch_atan2(ctx, x, y), a, b, c, atan2(a, b)));
    CHECK(ball_has(fn(CH_F_SINH, z), a, b, c, sinh(c)));
    CHECK(ball_has(fn(CH_F_COSH, z), a, b, c, cosh(c)));
    CHECK(ball_has(fn(CH_F_TANH, y), a, b, c, tanh(b)));
    CHECK(ball_has(fn(CH_F_EXP, x), a, b, c, exp(a)));
    CHECK(ball_has(fn(CH_F_LOG, z), a, b, c, log(c)));
    CHECK(ball_has(fn(CH_F_ABS, y), a, b, c, 0.3));
    CHECK(ball_has(mul(ch_pi(ctx), x), a, b, c, 3.14159265358979323846 * a));
    CHECK(ball_has(pq(z, 1, 3), a, b, c, cbrt(c)));
    CHECK(ball_has(pq(z, -3, 2), a, b, c, pow(c, -1.5)));
    CHECK(ball_has(pw(y, -3), a, b, c, 1 / (b * b * b)));
    CHECK(ball_has(ch_pow(ctx, z, x), a, b, c, pow(c, a)));
    CHECK(ball_has(ch_pow(ctx, y, sub(z, fr(1, 2))), a, b, c, b * b));
    CHECK(ball_has(add(mul(fr(2, 3), x), fr(1, 7)), a, b, c, 2.0 / 3 * a + 1.0 / 7));
    CHECK(ball_has(dv(fn(CH_F_SIN, x), add(pw(y, 2), n(1))), a, b, c,
                   sin(a) / (b * b + 1)));
}

static void test_arb_undefined(void)
{
    CHECK(arb_undef(fn(CH_F_LOG, x), -1, 0, 0));
    CHECK(arb_undef(fn(CH_F_LOG, x), 0, 0, 0));
    CHECK(arb_undef(pw(x, -1), 0, 0, 0));
    CHECK(arb_undef(dv(n(1), sub(x, y)), 0.5, 0.5, 0));
    CHECK(arb_undef(ch_sqrt(ctx, x), -1, 0, 0));
    CHECK(arb_undef(pq(x, 1, 3), -8, 0, 0));
    CHECK(arb_undef(pq(x, -1, 2), 0, 0, 0));
    CHECK(arb_undef(fn(CH_F_ASIN, x), 2, 0, 0));
    CHECK(arb_undef(fn(CH_F_ACOS, x), -1.5, 0, 0));
    CHECK(arb_undef(ch_atan2(ctx, x, y), 0, 0, 0));
    CHECK(arb_undef(ch_pow(ctx, x, y), -2, 0.5, 0));
    CHECK(arb_undef(ch_pow(ctx, x, y), 0, -1, 0));
    /* defined edge cases */
    CHECK(!arb_undef(ch_sqrt(ctx, x), 0, 0, 0));
    CHECK(!arb_undef(fn(CH_F_ASIN, x), 1, 0, 0));
    CHECK(!arb_undef(ch_pow(ctx, x, y), -2, 3, 0));
    CHECK(!arb_undef(ch_pow(ctx, x, y), 0, 2, 0));
    CHECK(!arb_undef(pw(x, 3), -2, 0, 0));
    /* tan at a ball around pi/2 */
    arb_struct *sv = _arb_vec_init(3);
    arb_const_pi(sv, 128);
    arb_mul_2exp_si(sv, sv, -1);
    arb_t r;
    arb_init(r);
    CHECK(ch_eval_arb(ctx, r, fn(CH_F_TAN, x), sv, 128) != 0);
    CHECK(ch_eval_arb(ctx, r, fn(CH_F_COS, x), sv, 128) == 0);
    CHECK(arb_contains_zero(r));
    arb_clear(r);
    _arb_vec_clear(sv, 3);
}

/* ---- zero test -------------------------------------------------------- */

static int zero_yes(const ch_expr *e, int symbolic)
{
    ch_zero_result r = ch_zero_test(ctx, e, NULL, NULL, 0);
    return r.verdict == CH_ZERO_YES && r.symbolic == symbolic;
}

static void test_zero_symbolic(void)
{
    const ch_expr *s = fn(CH_F_SIN, x), *c = fn(CH_F_COS, x);
    ch_zero_result r = ch_zero_test(ctx, sub(add(pw(s, 2), pw(c, 2)), n(1)),
                                    NULL, NULL, 0);
    CHECK(r.verdict == CH_ZERO_YES && r.symbolic == 1);
    CHECK(r.points == 0 && !r.have_witness && r.witness == NULL);
    CHECK(zero_yes(n(0), 1));
}

static void test_zero_numeric(void)
{
    const ch_expr *s = fn(CH_F_SIN, x), *c = fn(CH_F_COS, x);
    /* identities beyond the normal form */
    const ch_expr *e = sub(fn(CH_F_SIN, mul(n(2), x)), mul(n(2), mul(s, c)));
    CHECK(ch_simplify_is_zero(ctx, e) == 0);
    ch_zero_result r = ch_zero_test(ctx, e, NULL, NULL, 0);
    CHECK(r.verdict == CH_ZERO_YES && r.symbolic == 0);
    CHECK(r.points == 8);
    CHECK(r.max_abs < 1e-60);
    CHECK(!r.have_witness);
    CHECK(zero_yes(sub(fn(CH_F_EXP, add(x, y)),
                       mul(fn(CH_F_EXP, x), fn(CH_F_EXP, y))), 0));
    /* needs positive points: log(xy) = log x + log y */
    CHECK(zero_yes(sub(fn(CH_F_LOG, mul(x, y)),
                       add(fn(CH_F_LOG, x), fn(CH_F_LOG, y))), 0));
    CHECK(zero_yes(sub(fn(CH_F_COS, add(x, y)),
                       sub(mul(c, fn(CH_F_COS, y)), mul(s, fn(CH_F_SIN, y)))), 0));
    CHECK(zero_yes(sub(fn(CH_F_ATAN, fn(CH_F_TAN, fr(1, 2))), fr(1, 2)), 0));
    CHECK(zero_yes(sub(mul(ch_sqrt(ctx, x), ch_sqrt(ctx, y)),
                       ch_sqrt(ctx, mul(x, y))), 0));
    /* only |x| <= 1 is defined: asin x + acos x = pi/2 */
    CHECK(zero_yes(sub(add(fn(CH_F_ASIN, x), fn(CH_F_ACOS, x)),
                       mul(fr(1, 2), ch_pi(ctx))), 0));
    /* the number of points is the caller's */
    r = ch_zero_test(ctx, e, NULL, NULL, 3);
    CHECK(r.verdict == CH_ZERO_YES && r.points == 3);
}

static void test_zero_no(void)
{
    ch_zero_result r = ch_zero_test(ctx, sub(x, y), NULL, NULL, 0);
    CHECK(r.verdict == CH_ZERO_NO && r.symbolic == 0);
    CHECK(r.have_witness && r.witness != NULL);
    CHECK(r.points >= 1 && r.max_abs > 0);
    if (r.witness) CHECK(ch_eval_d(ctx, sub(x, y), r.witness) != 0);
    /* deterministic: the same witness again */
    ch_zero_result r2 = ch_zero_test(ctx, sub(x, y), NULL, NULL, 0);
    CHECK(r2.verdict == CH_ZERO_NO && r.witness && r2.witness
          && memcmp(r.witness, r2.witness, ch_ctx_nsyms(ctx) * sizeof(double)) == 0);
    /* sqrt(x^2) = |x|, not x: found at a negative x */
    const ch_expr *e = sub(ch_sqrt(ctx, pw(x, 2)), x);
    r = ch_zero_test(ctx, e, NULL, NULL, 0);
    CHECK(r.verdict == CH_ZERO_NO && r.have_witness);
    if (r.witness) {
        CHECK(r.witness[ch_sym_of(x)->sid] < 0);
        CHECK(ch_eval_d(ctx, e, r.witness) > 0);
    }
    /* a tiny nonzero value is not zero */
    r = ch_zero_test(ctx, mul(fn(CH_F_EXP, n(-200)), add(pw(x, 2), n(1))),
                     NULL, NULL, 0);
    CHECK(r.verdict == CH_ZERO_NO);
    /* almost an identity: sin(2x) - 2 sin x cos x + 10^-30 */
    const ch_expr *s = fn(CH_F_SIN, x), *c = fn(CH_F_COS, x);
    fmpq_t t;
    fmpq_init(t);
    fmpz_set_ui(fmpq_denref(t), 10);
    fmpz_pow_ui(fmpq_denref(t), fmpq_denref(t), 30);
    fmpz_one(fmpq_numref(t));
    e = add(sub(fn(CH_F_SIN, mul(n(2), x)), mul(n(2), mul(s, c))), ch_num_q(ctx, t));
    fmpq_clear(t);
    CHECK(ch_zero_test(ctx, e, NULL, NULL, 0).verdict == CH_ZERO_NO);
}

static void test_zero_unknown(void)
{
    /* never defined: log of a negative */
    ch_zero_result r = ch_zero_test(ctx, fn(CH_F_LOG, sub(n(-1), pw(x, 2))),
                                    NULL, NULL, 0);
    CHECK(r.verdict == CH_ZERO_UNKNOWN && r.points == 0);
    CHECK(ch_zero_test(ctx, NULL, NULL, NULL, 0).verdict == CH_ZERO_UNKNOWN);
    /* an identity whose terms are ~10^4343: the enclosures contain 0 but
     * are far too wide even at 1024 bits */
    const ch_expr *u = mul(n(10000), pw(x, 2));
    const ch_expr *e = sub(fn(CH_F_EXP, add(u, n(10000))),
                           mul(fn(CH_F_EXP, n(10000)), fn(CH_F_EXP, u)));
    r = ch_zero_test(ctx, e, NULL, NULL, 0);
    CHECK(r.verdict == CH_ZERO_UNKNOWN && r.symbolic == 0 && r.points == 8);
    CHECK(!r.have_witness);
    /* at ~10^217 the 256-bit enclosures are too wide but a retry with
     * the bits they lack (at most 1024) settles them */
    u = mul(n(100), pw(x, 2));
    e = sub(fn(CH_F_EXP, add(u, n(100))), mul(fn(CH_F_EXP, n(100)), fn(CH_F_EXP, u)));
    r = ch_zero_test(ctx, e, NULL, NULL, 0);
    CHECK(r.verdict == CH_ZERO_YES && r.symbolic == 0 && r.points == 8);
    /* the same identity at a sane scale is decided */
    u = pw(x, 2);
    e = sub(fn(CH_F_EXP, add(u, n(1))), mul(fn(CH_F_EXP, n(1)), fn(CH_F_EXP, u)));
    CHECK(ch_zero_test(ctx, e, NULL, NULL, 0).verdict == CH_ZERO_YES);
}

/* The "manifold" y = x^2: x random, y set from x. */
static int parabola(void *data, flint_rand_t rnd, arb_struct *sv, slong prec)
{
    int *calls = data;
    (*calls)++;
    arb_set_si(sv + ch_sym_of(x)->sid, (slong)n_randint(rnd, 1000) + 1);
    arb_mul_2exp_si(sv + ch_sym_of(x)->sid, sv + ch_sym_of(x)->sid, -9);
    arb_sqr(sv + ch_sym_of(y)->sid, sv + ch_sym_of(x)->sid, prec);
    return 0;
}

static int never(void *data, flint_rand_t rnd, arb_struct *sv, slong prec)
{
    (void)data;
    (void)rnd;
    (void)sv;
    (void)prec;
    return 1;
}

static void test_zero_sampler(void)
{
    const ch_expr *e = sub(y, pw(x, 2));
    int calls = 0;
    ch_zero_result r = ch_zero_test(ctx, e, parabola, &calls, 0);
    CHECK(r.verdict == CH_ZERO_YES && r.symbolic == 0 && r.points == 8);
    CHECK(calls == 8);
    /* the same expression off the manifold */
    CHECK(ch_zero_test(ctx, e, NULL, NULL, 0).verdict == CH_ZERO_NO);
    /* on the manifold, but not an identity there */
    calls = 0;
    r = ch_zero_test(ctx, sub(y, x), parabola, &calls, 0);
    CHECK(r.verdict == CH_ZERO_NO && r.have_witness);
    if (r.witness)
        CHECK_NEAR(r.witness[ch_sym_of(y)->sid],
                   r.witness[ch_sym_of(x)->sid] * r.witness[ch_sym_of(x)->sid], 1e-15);
    /* a sampler that never produces a point */
    r = ch_zero_test(ctx, e, never, NULL, 0);
    CHECK(r.verdict == CH_ZERO_UNKNOWN && r.points == 0);
    /* symbolic proofs do not need the sampler */
    r = ch_zero_test(ctx, sub(mul(y, n(2)), add(y, y)), never, NULL, 0);
    CHECK(r.verdict == CH_ZERO_YES && r.symbolic == 1);
}

int main(void)
{
    ctx = ch_ctx_new();
    x = ch_symbol(ctx, "x", CH_SYM_COORD, NULL, 0, 0);
    y = ch_symbol(ctx, "y", CH_SYM_COORD, NULL, 0, 1);
    z = ch_symbol(ctx, "z", CH_SYM_PARAM, NULL, 0, -1);
    RUN(test_double_functions);
    RUN(test_double_arith);
    RUN(test_double_undefined);
    RUN(test_double_many_and_cache);
    RUN(test_arb_values);
    RUN(test_arb_undefined);
    RUN(test_zero_symbolic);
    RUN(test_zero_numeric);
    RUN(test_zero_no);
    RUN(test_zero_unknown);
    RUN(test_zero_sampler);
    CHECK(ch_ctx_error(ctx)->code == CH_OK);
    ch_ctx_free(ctx);
    return check_summary("test_eval");
}
