/* test_simplify.c — expansion, the normal form's zero proofs, ch_simplify,
 * and a property test over random expressions (expand and simplify keep
 * the value; e - expand(e) is proven zero). */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "core/buf.h"
#include "core/eval.h"
#include "doc/print.h"
#include "randexpr.h"
#include "core/simplify.h"

static ch_ctx *ctx;
static const ch_expr *x, *y, *z, *a, *b;

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
static const ch_expr *sq(const ch_expr *u) { return ch_sqrt(ctx, u); }
static const ch_expr *fn(ch_fun f, const ch_expr *u) { return ch_fun1(ctx, f, u); }
static const ch_expr *sum3(const ch_expr *u, const ch_expr *v, const ch_expr *w)
{
    const ch_expr *t[3] = {u, v, w};
    return ch_add_n(ctx, 3, t);
}
static const ch_expr *ex(const ch_expr *e) { return ch_expand(ctx, e); }
static int isz(const ch_expr *e) { return ch_simplify_is_zero(ctx, e); }

/* ---- expand ----------------------------------------------------------- */

static void test_expand_binomials(void)
{
    CHECK(ex(pw(add(x, y), 2))
          == sum3(pw(x, 2), mul(n(2), mul(x, y)), pw(y, 2)));
    /* (a+b)^3 with exact coefficients 1 3 3 1 */
    const ch_expr *t[4] = {pw(a, 3), mul(n(3), mul(pw(a, 2), b)),
                           mul(n(3), mul(a, pw(b, 2))), pw(b, 3)};
    CHECK(ex(pw(add(a, b), 3)) == ch_add_n(ctx, 4, t));
    CHECK(ex(mul(add(x, n(1)), sub(x, n(1)))) == sub(pw(x, 2), n(1)));
    CHECK(ex(mul(mul(add(x, y), sub(x, y)), add(pw(x, 2), pw(y, 2))))
          == sub(pw(x, 4), pw(y, 4)));
    CHECK(ex(mul(n(3), pw(add(x, n(1)), 2)))
          == sum3(mul(n(3), pw(x, 2)), mul(n(6), x), n(3)));
    CHECK(ex(pw(sub(x, fr(1, 2)), 2)) == sum3(pw(x, 2), ch_neg(ctx, x), fr(1, 4)));

    /* (x+y)^10: 11 terms, C(10,5) = 252 in front of x^5 y^5 */
    const ch_expr *e = ex(pw(add(x, y), 10));
    CHECK(e && e->kind == CH_ADD && e->n == 11);
    int found = 0;
    for (uint32_t i = 0; e && i < e->n; i++)
        if (e->pair[i].e == mul(pw(x, 5), pw(y, 5))) {
            found = 1;
            CHECK(fmpz_equal_si(fmpq_numref(e->pair[i].c), 252)
                  && fmpz_is_one(fmpq_denref(e->pair[i].c)));
        }
    CHECK(found);

    /* (x+1)^300: 301 terms, the middle coefficient C(300,150) exactly */
    e = ex(pw(add(x, n(1)), 300));
    CHECK(e && e->kind == CH_ADD && e->n == 300 && fmpq_is_one(e->num));
    found = 0;
    fmpz_t bin;
    fmpz_init(bin);
    fmpz_bin_uiui(bin, 300, 150);
    for (uint32_t i = 0; e && i < e->n; i++)
        if (e->pair[i].e == pw(x, 150)) {
            found = 1;
            CHECK(fmpz_equal(fmpq_numref(e->pair[i].c), bin));
        }
    fmpz_clear(bin);
    CHECK(found);
    /* products of powers: (x+y)^3 (x-y)^3 = (x^2-y^2)^3 */
    CHECK(ex(mul(pw(add(x, y), 3), pw(sub(x, y), 3)))
          == ex(pw(sub(pw(x, 2), pw(y, 2)), 3)));
    /* sums of roots raised to powers fold back: (sqrt(x) + 1)^2 */
    CHECK(ex(pw(add(sq(x), n(1)), 2)) == sum3(x, mul(n(2), sq(x)), n(1)));

    /* (a+b+x+y)^8 has C(11,3) = 165 monomials */
    const ch_expr *s4[4] = {a, b, x, y};
    e = ex(pw(ch_add_n(ctx, 4, s4), 8));
    CHECK(e && e->kind == CH_ADD && e->n == 165);
}

static void test_expand_structure(void)
{
    /* nested sums */
    const ch_expr *t[6] = {mul(pw(x, 2), pw(y, 2)), mul(n(2), mul(pw(x, 2), y)),
                           pw(x, 2), mul(n(2), mul(x, y)), mul(n(2), x), n(1)};
    CHECK(ex(pw(add(mul(x, add(y, n(1))), n(1)), 2)) == ch_add_n(ctx, 6, t));
    /* negative powers of sums stay factors; the numerator is distributed */
    const ch_expr *d = pw(add(x, n(1)), -1);
    CHECK(ex(d) == d);
    CHECK(ex(dv(x, add(a, b))) == dv(x, add(a, b)));
    CHECK(ex(pw(add(x, n(1)), -2)) == pw(add(x, n(1)), -2));
    CHECK(ex(dv(mul(add(x, n(1)), add(x, n(2))), add(y, n(1))))
          == sum3(mul(pw(x, 2), pw(add(y, n(1)), -1)),
                  mul(n(3), mul(x, pw(add(y, n(1)), -1))),
                  mul(n(2), pw(add(y, n(1)), -1))));
    /* inside function arguments and radicands */
    CHECK(ex(fn(CH_F_SIN, mul(n(2), add(x, y))))
          == fn(CH_F_SIN, add(mul(n(2), x), mul(n(2), y))));
    CHECK(ex(sq(pw(add(x, n(1)), 2))) == sq(sum3(pw(x, 2), mul(n(2), x), n(1))));
    CHECK(ex(ch_pow(ctx, add(x, n(1)), mul(y, add(z, n(1)))))
          == ch_pow(ctx, add(x, n(1)), add(mul(y, z), y)));
    CHECK(ex(ch_atan2(ctx, mul(x, add(y, n(1))), z))
          == ch_atan2(ctx, add(mul(x, y), x), z));
    /* atoms are untouched */
    CHECK(ex(x) == x);
    CHECK(ex(n(5)) == n(5));
    CHECK(ex(fn(CH_F_COS, x)) == fn(CH_F_COS, x));
    /* roots merging into a sum: sqrt(x+1) * (sqrt(x+1) y + 1) */
    const ch_expr *r = sq(add(x, n(1)));
    CHECK(ex(mul(r, add(mul(r, y), n(1)))) == sum3(mul(x, y), y, r));
}

static void test_expand_memo_and_limits(void)
{
    const ch_expr *e = mul(pw(add(x, y), 3), add(z, n(1)));
    const ch_expr *e1 = ex(e);
    CHECK(e1 != NULL);
    CHECK(ex(e) == e1);
    CHECK(ex(e1) == e1);
    CHECK(ch_map_get(ch_ctx_memo(ctx, CH_MEMO_EXPAND), e->id) == (void *)e1);
    CHECK(ex(NULL) == NULL);

    /* (x1 + ... + x10)^30 has about 2e8 terms: refused, not attempted */
    ch_ctx *c2 = ch_ctx_new();
    const ch_expr *v[10];
    char name[8];
    for (int i = 0; i < 10; i++) {
        snprintf(name, sizeof name, "v%d", i);
        v[i] = ch_symbol(c2, name, CH_SYM_COORD, NULL, 0, i);
    }
    const ch_expr *big = ch_pow_si(c2, ch_add_n(c2, 10, v), 30);
    CHECK(big != NULL);
    CHECK(ch_expand(c2, big) == NULL);
    CHECK(ch_ctx_error(c2)->code == CH_ERR_LIMIT);
    /* few terms but quadratic work: (v0 + 1)^100000 */
    ch_ctx_clear_error(c2);
    CHECK(ch_expand(c2, ch_pow_si(c2, ch_add(c2, v[0], ch_one(c2)), 100000)) == NULL);
    CHECK(ch_ctx_error(c2)->code == CH_ERR_LIMIT);
    ch_ctx_free(c2);
}

/* ---- the normal form ---------------------------------------------------- */

static void test_is_zero_trig(void)
{
    const ch_expr *s = fn(CH_F_SIN, x), *c = fn(CH_F_COS, x);
    CHECK(isz(sub(add(pw(s, 2), pw(c, 2)), n(1))) == 1);
    /* composite argument, written two ways */
    const ch_expr *u1 = mul(n(2), add(x, y)), *u2 = add(mul(n(2), x), mul(n(2), y));
    CHECK(isz(sub(add(pw(fn(CH_F_SIN, u1), 2), pw(fn(CH_F_COS, u2), 2)), n(1))) == 1);
    const ch_expr *u = add(mul(x, y), z);
    CHECK(isz(sub(add(pw(fn(CH_F_SIN, u), 2), pw(fn(CH_F_COS, u), 2)), n(1))) == 1);
    /* sin^4 - cos^4 = sin^2 - cos^2 */
    CHECK(isz(sub(sub(pw(s, 4), pw(c, 4)), sub(pw(s, 2), pw(c, 2)))) == 1);
    /* cos^2 of a negated argument */
    CHECK(isz(sub(add(pw(fn(CH_F_SIN, sub(y, x)), 2), pw(fn(CH_F_COS, sub(x, y)), 2)),
                  n(1))) == 1);
    CHECK(isz(sub(sub(pw(fn(CH_F_COSH, x), 2), pw(fn(CH_F_SINH, x), 2)), n(1))) == 1);
    CHECK(isz(sub(mul(fn(CH_F_TAN, x), c), s)) == 1);
    CHECK(isz(sub(fn(CH_F_TAN, x), dv(s, c))) == 1);
    CHECK(isz(sub(mul(fn(CH_F_TANH, x), fn(CH_F_COSH, x)), fn(CH_F_SINH, x))) == 1);
    /* 1/(1 + tan^2) = cos^2 */
    CHECK(isz(sub(dv(n(1), add(n(1), pw(fn(CH_F_TAN, x), 2))), pw(c, 2))) == 1);
    /* tan(-x) = -tan(x) */
    CHECK(isz(add(fn(CH_F_TAN, ch_neg(ctx, add(x, y))), fn(CH_F_TAN, add(x, y)))) == 1);
}

static void test_is_zero_rational(void)
{
    CHECK(isz(sub(sub(sub(pw(add(x, n(1)), 2), pw(x, 2)), mul(n(2), x)), n(1))) == 1);
    CHECK(isz(sub(add(dv(x, add(x, n(1))), dv(n(1), add(x, n(1)))), n(1))) == 1);
    CHECK(isz(sub(dv(sub(pw(x, 2), n(1)), sub(x, n(1))), add(x, n(1)))) == 1);
    CHECK(isz(sub(add(dv(n(1), x), dv(n(1), y)), dv(add(x, y), mul(x, y)))) == 1);
    /* different denominators with a common factor */
    const ch_expr *p = add(x, n(1));
    CHECK(isz(sub(add(dv(n(1), mul(p, y)), dv(n(1), mul(p, z))),
                  dv(add(y, z), mul(mul(p, y), z)))) == 1);
    CHECK(isz(n(0)) == 1);
    CHECK(isz(n(3)) == 0);
    CHECK(isz(NULL) == -1);
}

static void test_is_zero_roots(void)
{
    const ch_expr *r = sq(x);
    /* sqrt(x) (sqrt(x) + 1) - x - sqrt(x) */
    CHECK(isz(sub(sub(mul(r, add(r, n(1))), x), r)) == 1);
    CHECK(isz(sub(mul(add(r, sq(y)), sub(r, sq(y))), sub(x, y))) == 1);
    /* (x+1)^(3/2) = x sqrt(x+1) + sqrt(x+1) */
    const ch_expr *r1 = sq(add(x, n(1)));
    CHECK(isz(sub(sub(pq(add(x, n(1)), 3, 2), mul(x, r1)), r1)) == 1);
    /* mixed orders: (x^(1/3) + x^(1/2))^2 = x^(2/3) + 2 x^(5/6) + x */
    CHECK(isz(sub(pw(add(pq(x, 1, 3), pq(x, 1, 2)), 2),
                  sum3(pq(x, 2, 3), mul(n(2), pq(x, 5, 6)), x))) == 1);
    /* numeric radicand: (sqrt(2) + 1)^2 = 3 + 2 sqrt(2) */
    CHECK(isz(sub(pw(add(sq(n(2)), n(1)), 2), add(n(3), mul(n(2), sq(n(2)))))) == 1);
    /* nested: (sqrt(x + sqrt(y)) + 1)^2 */
    const ch_expr *ns = sq(add(x, sq(y)));
    const ch_expr *t[4] = {x, sq(y), mul(n(2), ns), n(1)};
    CHECK(isz(sub(pw(add(ns, n(1)), 2), ch_add_n(ctx, 4, t))) == 1);
    /* radicand written unexpanded vs expanded */
    const ch_expr *rad = add(pw(add(x, n(1)), 2), y);
    CHECK(isz(sub(sq(rad), sq(ex(rad)))) == 1);
    CHECK(sq(rad) != sq(ex(rad)));
    /* x / sqrt(x) = sqrt(x) */
    CHECK(isz(sub(dv(x, r), r)) == 1);
    /* a root of a radicand with a denominator is opaque but consistent */
    const ch_expr *q = sq(dv(n(1), add(x, n(1))));
    CHECK(isz(sub(mul(q, add(q, n(1))), add(pw(q, 2), q))) == 1);
    /* roots of sin/cos expressions */
    const ch_expr *w = sq(add(pw(fn(CH_F_SIN, x), 2), n(1)));
    CHECK(isz(sub(pw(add(w, n(1)), 2),
                  sum3(pw(fn(CH_F_SIN, x), 2), mul(n(2), w), n(2)))) == 1);
}

static void test_is_zero_negative(void)
{
    const ch_expr *s = fn(CH_F_SIN, x), *c = fn(CH_F_COS, x);
    CHECK(isz(sub(s, c)) == 0);
    CHECK(isz(sub(x, y)) == 0);
    CHECK(isz(x) == 0);
    CHECK(isz(add(pw(s, 2), pw(c, 2))) == 0);
    CHECK(isz(sub(add(pw(s, 2), pw(c, 2)), n(2))) == 0);
    /* beyond the normal form: not proven (and not claimed) */
    CHECK(isz(sub(fn(CH_F_SIN, mul(n(2), x)), mul(n(2), mul(s, c)))) == 0);
    CHECK(isz(sub(fn(CH_F_EXP, add(x, y)),
                  mul(fn(CH_F_EXP, x), fn(CH_F_EXP, y)))) == 0);
    /* sqrt(x^2) is |x|: r^2 = x^2 must not prove r = x */
    CHECK(isz(sub(sq(pw(x, 2)), x)) == 0);
    CHECK(isz(dv(x, add(x, n(1)))) == 0);
    CHECK(isz(sub(pw(add(x, n(1)), 2), add(pw(x, 2), n(1)))) == 0);
    CHECK(isz(sub(sq(x), sq(y))) == 0);
    CHECK(isz(sub(fn(CH_F_COSH, x), fn(CH_F_SINH, x))) == 0);
    /* cos^2 + sin^2 = 1 is not cosh^2 - sinh^2 = 1 */
    CHECK(isz(sub(add(pw(fn(CH_F_COSH, x), 2), pw(fn(CH_F_SINH, x), 2)), n(1))) == 0);
}

static void test_is_zero_failures(void)
{
    const ch_expr *s = fn(CH_F_SIN, x), *c = fn(CH_F_COS, x);
    /* 1/(sin^2 + cos^2 - 1) divides by zero: failure, never an abort */
    const ch_expr *bad = dv(n(1), sub(add(pw(s, 2), pw(c, 2)), n(1)));
    CHECK(bad != NULL);
    CHECK(isz(bad) == -1);
    CHECK(isz(add(bad, x)) == -1);
    CHECK(ch_ctx_error(ctx)->code == CH_OK); /* is_zero records nothing */

    /* size bound: (x1 + ... + x6)^20 has 53130 monomials */
    const ch_expr *v[6] = {x, y, z, a, b, fn(CH_F_EXP, x)};
    const ch_expr *big = pw(ch_add_n(ctx, 6, v), 20);
    CHECK(isz(sub(big, x)) == -1);
    /* huge degree */
    CHECK(isz(sub(pw(sq(add(x, n(1))), 5001), x)) == -1);
}

/* ---- ch_simplify ------------------------------------------------------ */

static const ch_expr *simp(const ch_expr *e) { return ch_simplify(ctx, e); }

static void test_simplify(void)
{
    const ch_expr *s = fn(CH_F_SIN, x), *c = fn(CH_F_COS, x);
    CHECK(simp(dv(sub(pw(x, 2), n(1)), sub(x, n(1)))) == add(x, n(1)));
    CHECK(simp(add(pw(s, 2), pw(c, 2))) == n(1));
    CHECK(simp(mul(fn(CH_F_TAN, x), c)) == s);
    CHECK(simp(sub(pw(add(x, n(1)), 2), pw(x, 2))) == add(mul(n(2), x), n(1)));
    CHECK(simp(dv(x, add(mul(x, y), x))) == pw(add(y, n(1)), -1));
    CHECK(simp(add(dv(n(1), x), dv(n(1), y))) == dv(add(x, y), mul(x, y)));
    /* the reduced form keeps sin and eliminates cos^2 */
    CHECK(simp(pw(c, 2)) == sub(n(1), pw(s, 2)));
    CHECK(simp(mul(sq(x), sq(mul(x, y)))) != NULL);
    CHECK(simp(sub(mul(add(sq(x), n(1)), sub(sq(x), n(1))), x)) == n(-1));
    CHECK(simp(x) == x);
    CHECK(simp(n(7)) == n(7));
    CHECK(simp(fn(CH_F_TANH, x)) == dv(fn(CH_F_SINH, x), fn(CH_F_COSH, x)));

    /* failures are reported, not aborted */
    ch_ctx_clear_error(ctx);
    const ch_expr *bad = dv(n(1), sub(add(pw(s, 2), pw(c, 2)), n(1)));
    CHECK(simp(bad) == NULL);
    CHECK(ch_ctx_error(ctx)->code == CH_ERR_MATH);
    ch_ctx_clear_error(ctx);
    CHECK(simp(NULL) == NULL);
}

/* The Jacobian rewrite: only sums with a squared sine, cosine or
 * hyperbolic factor are touched, and only when they shrink. */
static void test_trig_squares(void)
{
    const ch_expr *s = fn(CH_F_SIN, x), *c = fn(CH_F_COS, x);
    const ch_expr *sy = fn(CH_F_SIN, y), *cy = fn(CH_F_COS, y);
    /* a trailer axle's pivot: -a*sin(x)^2 - a*cos(x)^2 */
    const ch_expr *pivot = ch_neg(ctx, add(mul(a, pw(s, 2)), mul(a, pw(c, 2))));
    CHECK(ch_simplify_trig_squares(ctx, pivot) == ch_neg(ctx, a));
    CHECK(ch_simplify_trig_squares(ctx, sub(mul(pw(fn(CH_F_COSH, y), 2), b),
                                            mul(pw(fn(CH_F_SINH, y), 2), b))) == b);
    /* a square one level down, in a factor */
    const ch_expr *inner = mul(y, add(pw(s, 2), pw(c, 2)));
    CHECK(ch_simplify_trig_squares(ctx, add(inner, z)) == add(y, z));
    /* no square: the cross terms of cos(x - y) stay as they are */
    const ch_expr *cross = add(mul(c, cy), mul(s, sy));
    CHECK(ch_simplify_trig_squares(ctx, cross) == cross);
    /* a square whose normal form is no smaller is kept */
    const ch_expr *keep = add(pw(s, 2), x);
    CHECK(ch_simplify_trig_squares(ctx, keep) == keep);
    /* not a sum, or a failed context: unchanged */
    CHECK(ch_simplify_trig_squares(ctx, pw(s, 2)) == pw(s, 2));
    CHECK(ch_simplify_trig_squares(ctx, NULL) == NULL);
    ch_ctx_fail(ctx, CH_ERR_LIMIT, "test");
    CHECK(ch_simplify_trig_squares(ctx, pivot) == pivot);
    ch_ctx_clear_error(ctx);
    /* a normal form that fails (division by zero) leaves no error behind */
    const ch_expr *bad = add(dv(n(1), sub(add(pw(s, 2), pw(c, 2)), n(1))), pw(s, 2));
    CHECK(ch_simplify_trig_squares(ctx, bad) == bad);
    CHECK(ch_ctx_error(ctx)->code == CH_OK);
}

static void test_common_factor(void)
{
    const ch_expr *s = fn(CH_F_SIN, x), *c = fn(CH_F_COS, x);
    /* -a*x*y - 2*a*x^2*z -> -a*x*(y + 2*x*z) */
    const ch_expr *e = sub(ch_neg(ctx, mul(a, mul(x, y))), mul(n(2), mul(a, mul(pw(x, 2), z))));
    const ch_expr *f = ch_common_factor(ctx, e);
    CHECK(f == ch_neg(ctx, mul(mul(a, x), add(y, mul(n(2), mul(x, z))))));
    CHECK(isz(sub(e, f)) == 1);
    /* a trailer's G entry over its pivot cancels */
    const ch_expr *g = ch_common_factor(ctx, ch_neg(ctx, add(mul(a, mul(c, fn(CH_F_COS, y))),
                                                             mul(a, mul(s, fn(CH_F_SIN, y))))));
    CHECK(dv(g, ch_neg(ctx, a)) == add(mul(c, fn(CH_F_COS, y)), mul(s, fn(CH_F_SIN, y))));
    /* the numbers' gcd goes with the factors: 2*a*x + 4*a*y -> 2*a*(x + 2*y) */
    const ch_expr *h = ch_common_factor(ctx, add(mul(n(2), mul(a, x)), mul(n(4), mul(a, y))));
    CHECK(h == mul(mul(n(2), a), add(x, mul(n(2), y))));
    CHECK(h->kind == CH_MUL);
    /* nothing shared, a constant term, negative powers, not a sum: e */
    const ch_expr *keep[] = {add(x, y), add(mul(x, y), n(1)), add(dv(a, x), dv(b, x)),
                             mul(x, y), x};
    for (size_t i = 0; i < sizeof keep / sizeof *keep; i++)
        CHECK(ch_common_factor(ctx, keep[i]) == keep[i]);
    CHECK(ch_common_factor(ctx, NULL) == NULL);
}

/* ---- property test ---------------------------------------------------- */

static int close_rel(double u, double v)
{
    double m = fabs(u) > fabs(v) ? fabs(u) : fabs(v);
    return fabs(u - v) <= 1e-8 * (m > 1 ? m : 1);
}

/* Do e and f agree at the point? In double first; when double disagrees,
 * the expressions are compared in 256-bit balls at the same point, since
 * an expanded or simplified form may be numerically ill-conditioned (a
 * degree-30 quotient). 1: agree, 0: disagree, -1: not comparable here. */
static int agree(ch_ctx *c, const ch_expr *e, const ch_expr *f,
                 const double *pt, int nsym)
{
    double u = ch_eval_d(c, e, pt), v = ch_eval_d(c, f, pt);
    if (!isfinite(u) || !isfinite(v) || fabs(u) > 1e12) return -1;
    if (close_rel(u, v)) return 1;
    arb_struct *sv = _arb_vec_init(nsym);
    arb_t a1, a2;
    arb_init(a1);
    arb_init(a2);
    for (int i = 0; i < nsym; i++) arb_set_d(sv + i, pt[i]);
    int r = -1;
    if (!ch_eval_arb(c, a1, e, sv, 256) && !ch_eval_arb(c, a2, f, sv, 256)
        && arb_rel_accuracy_bits(a1) > 60 && arb_rel_accuracy_bits(a2) > 60)
        r = close_rel(arf_get_d(arb_midref(a1), ARF_RND_NEAR),
                      arf_get_d(arb_midref(a2), ARF_RND_NEAR));
    arb_clear(a1);
    arb_clear(a2);
    _arb_vec_clear(sv, nsym);
    return r;
}

static void test_random(void)
{
    ch_ctx *c2 = ch_ctx_new();
    const ch_expr *syms[3] = {
        ch_symbol(c2, "p", CH_SYM_COORD, NULL, 0, 0),
        ch_symbol(c2, "q", CH_SYM_COORD, NULL, 0, 1),
        ch_symbol(c2, "r", CH_SYM_PARAM, NULL, 0, -1)};
    rx_rng rng = {12345};
    int built = 0, compared = 0, simplified = 0, proven = 0, failed_nf = 0;
    int same_pairs = 0, within_failed = 0;
    for (int it = 0; it < 1200; it++) {
        const ch_expr *e = rx_expr(c2, &rng, syms, 3, 4);
        if (!e) {
            ch_ctx_clear_error(c2);
            continue;
        }
        built++;
        const ch_expr *e1 = ch_expand(c2, e);
        const ch_expr *e2 = ch_simplify(c2, e);
        ch_ctx_clear_error(c2);
        CHECK_MSG(e1 != NULL, "expand failed at iteration %d", it);
        simplified += e2 != NULL;
        if (e2) {
            /* the size bound of ch_simplify_within is a lower bound: the
             * form is built when it is within max_tree, and is e2 */
            size_t t2 = ch_tree_size(c2, e2, SIZE_MAX);
            CHECK_MSG(ch_simplify_within(c2, e, t2 + 1) == e2, "within: iteration %d", it);
            for (size_t m = 1; m <= t2; m += t2 / 2 + 1) {
                const ch_expr *w = ch_simplify_within(c2, e, m);
                CHECK_MSG(w == NULL ? ch_ctx_error(c2)->code == CH_ERR_LIMIT : w == e2,
                          "within %zu of %zu: iteration %d", m, t2, it);
                ch_ctx_clear_error(c2);
                within_failed += w == NULL;
            }
        }
        for (int k = 0; k < 3 && e1; k++) {
            double pt[3];
            for (int j = 0; j < 3; j++) pt[j] = rx_point(&rng, 0);
            int r1 = agree(c2, e, e1, pt, 3);
            if (r1 < 0) continue;
            compared++;
            CHECK_MSG(r1 == 1, "expand: iteration %d, point %d", it, k);
            if (e2)
                CHECK_MSG(agree(c2, e, e2, pt, 3) != 0,
                          "simplify: iteration %d, point %d", it, k);
        }
        if (!e1) continue;
        int z = ch_simplify_is_zero(c2, ch_sub(c2, e, e1));
        ch_ctx_clear_error(c2);
        if (z < 0) {
            failed_nf++;
            continue;
        }
        CHECK_MSG(z == 1, "e - expand(e) not proven zero at iteration %d", it);
        proven += z == 1;
        if (e2) {
            z = ch_simplify_is_zero(c2, ch_sub(c2, e, e2));
            CHECK_MSG(z != 0, "e - simplify(e) not proven zero at iteration %d",
                      it);
        }
        /* soundness: a proof about an unrelated pair must hold numerically,
         * and e - expand(e) + p is never zero */
        const ch_expr *f = rx_expr(c2, &rng, syms, 3, 2);
        z = f ? ch_simplify_is_zero(c2, ch_sub(c2, e, f)) : -1;
        if (z == 1) {
            double pt[3] = {rx_point(&rng, 0), rx_point(&rng, 0),
                            rx_point(&rng, 0)};
            CHECK_MSG(agree(c2, e, f, pt, 3) != 0, "unsound proof at %d", it);
            same_pairs++;
        }
        z = ch_simplify_is_zero(c2, ch_add(c2, ch_sub(c2, e, e1), syms[0]));
        CHECK_MSG(z != 1, "e - expand(e) + p proven zero at iteration %d", it);
        ch_ctx_clear_error(c2);
    }
    CHECK(built >= 1000);
    CHECK(compared >= 3000);
    CHECK(simplified >= 1000);
    CHECK(proven >= 1000);
    CHECK(within_failed >= 500); /* the bound decides before building */
    printf("random: %d built, %d points compared, %d simplified, %d proven, "
           "%d normal-form failures, %d equal random pairs, %d refused as too "
           "large\n",
           built, compared, simplified, proven, failed_nf, same_pairs, within_failed);
    ch_ctx_free(c2);
}

/* The text of e, or "(null)". */
static void text_of(ch_buf *b, const ch_expr *e)
{
    ch_buf_reset(b);
    if (e)
        ch_print(b, e, CH_STYLE_TEXT);
    else
        ch_buf_put(b, "(null)");
}

/* A random polynomial over symbols and sines, cosines and hyperbolic
 * functions of sums of symbols, the atoms of the normal form. */
static const ch_expr *rx_poly(ch_ctx *c, rx_rng *r, const ch_expr *const *syms, int depth)
{
    if (depth <= 0 || rx_int(r, 4) == 0) {
        int k = rx_int(r, 8);
        const ch_expr *u = syms[rx_int(r, 3)];
        if (k >= 4 && rx_int(r, 2)) u = ch_sub(c, u, syms[rx_int(r, 3)]);
        static const ch_fun f[4] = {CH_F_SIN, CH_F_COS, CH_F_SINH, CH_F_COSH};
        return k < 4 ? rx_leaf(c, r, syms, 3) : ch_fun1(c, f[rx_int(r, 4)], u);
    }
    const ch_expr *a = rx_poly(c, r, syms, depth - 1);
    switch (rx_int(r, 4)) {
    case 0:
        return ch_add(c, a, rx_poly(c, r, syms, depth - 1));
    case 1:
        return ch_sub(c, a, rx_poly(c, r, syms, depth - 1));
    case 2:
        return ch_mul(c, a, rx_poly(c, r, syms, depth - 1));
    default:
        return ch_pow_si(c, a, 2 + rx_int(r, 2));
    }
}

/* ch_simplify of a polynomial whose expansion the context knows converts
 * the expansion, term by term (monomials set at once; simplify.c): the
 * same random polynomials built in two contexts, one expanded before it
 * is simplified, must have the same normal form. (Only polynomials: the
 * normal form of a quotient orders its atoms partly by node id, so that
 * its printed form may depend on the order in which nodes were made.) */
static void test_known_expansion(void)
{
    const ch_expr *s = fn(CH_F_SIN, x), *c = fn(CH_F_COS, x);
    const ch_expr *p = mul(add(y, c), sub(mul(n(2), c), s));
    CHECK(ex(p) != p);
    /* 2 y cos - y sin + 2 cos^2 - sin cos, cos^2 = 1 - sin^2 */
    CHECK(simp(p) == sub(add(sub(mul(mul(n(2), y), c), mul(y, s)), n(2)),
                         add(mul(n(2), pw(s, 2)), mul(s, c))));

    /* the normal form is the expansion: no cos^2 to reduce, no quotient */
    const ch_expr *sy = pw(add(s, y), 2), *cy = pw(add(c, y), 2);
    const ch_expr *ty = pw(add(fn(CH_F_TAN, x), y), 2);
    CHECK(ch_normal_form_is_expansion(ctx, sy, ex(sy)) == 1 && simp(sy) == ex(sy));
    CHECK(ch_normal_form_is_expansion(ctx, cy, ex(cy)) == 0);
    CHECK(ch_normal_form_is_expansion(ctx, ty, ex(ty)) == 0);
    CHECK(ch_normal_form_is_expansion(ctx, sy, ex(cy)) == 0); /* not its expansion */

    ch_ctx *c1 = ch_ctx_new(), *c2 = ch_ctx_new();
    const ch_expr *s1[3], *s2[3];
    const char *names[3] = {"p", "q", "r"};
    for (int i = 0; i < 3; i++) {
        ch_sym_kind k = i < 2 ? CH_SYM_COORD : CH_SYM_PARAM;
        s1[i] = ch_symbol(c1, names[i], k, NULL, 0, i < 2 ? i : -1);
        s2[i] = ch_symbol(c2, names[i], k, NULL, 0, i < 2 ? i : -1);
    }
    rx_rng r1 = {777}, r2 = {777};
    ch_buf t1, t2;
    ch_buf_init(&t1);
    ch_buf_init(&t2);
    int compared = 0, reduced = 0, is_expansion = 0;
    for (int it = 0; it < 1000; it++) {
        const ch_expr *e1 = rx_poly(c1, &r1, s1, 4), *e2 = rx_poly(c2, &r2, s2, 4);
        CHECK_MSG(e1 && e2, "no polynomial at %d", it);
        if (!e1 || !e2) break;
        const ch_expr *x1 = ch_expand(c1, e1);
        const ch_expr *n1 = ch_simplify(c1, e1), *n2 = ch_simplify(c2, e2);
        ch_ctx_clear_error(c1);
        ch_ctx_clear_error(c2);
        if (!x1 || x1 == e1) continue;
        text_of(&t1, n1);
        text_of(&t2, n2);
        CHECK_MSG(strcmp(t1.s, t2.s) == 0, "iteration %d: %s against %s", it, t1.s, t2.s);
        compared++;
        reduced += n1 && n1 != x1; /* the relations changed the expansion */
        if (ch_normal_form_is_expansion(c1, e1, x1) == 1) {
            CHECK_MSG(n1 == x1, "iteration %d: the normal form is not the expansion", it);
            is_expansion++;
        }
    }
    ch_buf_free(&t1);
    ch_buf_free(&t2);
    CHECK(compared >= 300);
    CHECK(reduced >= 100);
    CHECK(is_expansion >= 100);
    printf("known expansion: %d polynomials compared, %d reduced by the relations, "
           "%d found in normal form\n", compared, reduced, is_expansion);
    ch_ctx_free(c1);
    ch_ctx_free(c2);
}

int main(void)
{
    ctx = ch_ctx_new();
    x = ch_symbol(ctx, "x", CH_SYM_COORD, NULL, 0, 0);
    y = ch_symbol(ctx, "y", CH_SYM_COORD, NULL, 0, 1);
    z = ch_symbol(ctx, "z", CH_SYM_COORD, NULL, 0, 2);
    a = ch_symbol(ctx, "a", CH_SYM_PARAM, NULL, 0, -1);
    b = ch_symbol(ctx, "b", CH_SYM_PARAM, NULL, 0, -1);
    RUN(test_expand_binomials);
    RUN(test_expand_structure);
    RUN(test_expand_memo_and_limits);
    RUN(test_is_zero_trig);
    RUN(test_is_zero_rational);
    RUN(test_is_zero_roots);
    RUN(test_is_zero_negative);
    RUN(test_is_zero_failures);
    RUN(test_simplify);
    RUN(test_trig_squares);
    RUN(test_common_factor);
    RUN(test_random);
    RUN(test_known_expansion);
    CHECK(ch_ctx_error(ctx)->code == CH_OK);
    ch_ctx_free(ctx);
    return check_summary("test_simplify");
}
