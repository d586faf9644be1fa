/* eval.c — double and ball evaluation of the DAG, and the zero test.
 *
 * Both evaluators walk the DAG once per call: a per-call map sends a node
 * id to a slot of a value array, so shared subexpressions are computed
 * once. Values live in growable arrays indexed by slot (never by pointer),
 * because the arrays move when they grow.
 *
 * Double evaluation follows C semantics (NaN for a non-integer power of a
 * negative number, inf for 1/0). Ball evaluation reports "undefined"
 * instead: an operation whose enclosure would contain a point outside the
 * domain (log of a ball touching 0, division by a ball containing 0, ...)
 * makes ch_eval_arb return nonzero, and so does any non-finite ball. The
 * zero test (THEORY §7) relies on that: a point where the expression is not
 * defined is replaced by another one rather than counted. */
#include "core/eval.h"
#include "core/simplify.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define CH_PI_D 3.14159265358979323846
/* Integer powers up to this are repeated multiplications (fast, a few
 * ulp); beyond it pow is the more accurate (squaring k times compounds
 * the rounding error k-fold). */
#define EVAL_IPOW_MAX 16
#define ZERO_PREC 256
#define ZERO_POINTS 8

/* ======================================================================
 * doubles
 * ====================================================================== */

typedef struct {
    const double *symval;
    ch_map slot; /* node id -> index + 1 */
    double *v;
    size_t n, cap;
} dcache;

/* Correctly rounded value of a rational (fmpq_get_d truncates). */
static double q_to_d(const fmpq_t q)
{
    if (fmpz_bits(fmpq_numref(q)) <= 53 && fmpz_bits(fmpq_denref(q)) <= 53)
        return (double)fmpz_get_si(fmpq_numref(q))
               / (double)fmpz_get_si(fmpq_denref(q));
    arf_t t;
    arf_init(t);
    arf_set_fmpq(t, q, 53, ARF_RND_NEAR);
    double d = arf_get_d(t, ARF_RND_NEAR);
    arf_clear(t);
    return d;
}

static double ipow_d(double x, slong k)
{
    if (k > EVAL_IPOW_MAX || k < -EVAL_IPOW_MAX) return pow(x, (double)k);
    if (k < 0) return 1.0 / ipow_d(x, -k);
    double r = 1.0;
    while (k) {
        if (k & 1) r *= x;
        x *= x;
        k >>= 1;
    }
    return r;
}

static double pow_q_d(double x, const fmpq_t c)
{
    const fmpz *p = fmpq_numref(c), *q = fmpq_denref(c);
    if (!fmpz_fits_si(p) || !fmpz_fits_si(q)) return pow(x, q_to_d(c));
    slong ps = fmpz_get_si(p), qs = fmpz_get_si(q);
    if (qs == 1) return ipow_d(x, ps);
    if (x < 0) return NAN; /* C semantics for a non-integer exponent */
    if (qs == 2) return ipow_d(sqrt(x), ps);
    if (qs == 3) return ipow_d(cbrt(x), ps);
    return pow(x, q_to_d(c));
}

static double fun_d(ch_fun f, double a, double b)
{
    switch (f) {
    case CH_F_SIN: return sin(a);
    case CH_F_COS: return cos(a);
    case CH_F_TAN: return tan(a);
    case CH_F_ASIN: return asin(a);
    case CH_F_ACOS: return acos(a);
    case CH_F_ATAN: return atan(a);
    case CH_F_ATAN2: return atan2(a, b);
    case CH_F_SINH: return sinh(a);
    case CH_F_COSH: return cosh(a);
    case CH_F_TANH: return tanh(a);
    case CH_F_EXP: return exp(a);
    case CH_F_LOG: return log(a);
    case CH_F_ABS: return fabs(a);
    default: return NAN;
    }
}

static double eval_d(dcache *c, const ch_expr *e);

static double eval_d_node(dcache *c, const ch_expr *e)
{
    switch (e->kind) {
    case CH_NUM:
        return q_to_d(e->num);
    case CH_SYM:
        if (ch_sym_of(e)->kind == CH_SYM_PI) return CH_PI_D;
        return c->symval ? c->symval[ch_sym_of(e)->sid] : NAN;
    case CH_ADD: {
        double s = q_to_d(e->num);
        for (uint32_t i = 0; i < e->n; i++) {
            double v = eval_d(c, e->pair[i].e);
            const fmpq *k = e->pair[i].c;
            if (fmpq_is_one(k)) s += v;
            else if (fmpq_is_pm1(k)) s -= v;
            else s += q_to_d(k) * v;
        }
        return s;
    }
    case CH_MUL: {
        double p = q_to_d(e->num);
        for (uint32_t i = 0; i < e->n; i++)
            p *= pow_q_d(eval_d(c, e->pair[i].e), e->pair[i].c);
        return p;
    }
    case CH_POW:
        return pow(eval_d(c, e->pair[0].e), eval_d(c, e->pair[1].e));
    case CH_FUN: {
        double a = eval_d(c, e->pair[0].e);
        double b = e->fun == CH_F_ATAN2 ? eval_d(c, e->pair[1].e) : 0.0;
        return fun_d((ch_fun)e->fun, a, b);
    }
    default:
        return NAN;
    }
}

static double eval_d(dcache *c, const ch_expr *e)
{
    if (!e) return NAN;
    if (e->kind == CH_NUM || e->kind == CH_SYM) return eval_d_node(c, e);
    uintptr_t k = (uintptr_t)ch_map_get(&c->slot, e->id);
    if (k) return c->v[k - 1];
    for (uint32_t i = 0; i < e->n; i++) ch_map_prefetch(&c->slot, e->pair[i].e->id);
    double v = eval_d_node(c, e);
    if (c->n == c->cap) {
        size_t cap = c->cap ? 2 * c->cap : 64;
        double *nv = realloc(c->v, cap * sizeof *nv);
        if (!nv) return v; /* uncached: still correct, only slower */
        c->v = nv;
        c->cap = cap;
    }
    c->v[c->n++] = v;
    if (ch_map_put(&c->slot, e->id, (void *)(uintptr_t)c->n)) c->n--;
    return v;
}

static void dcache_init(dcache *c, const double *symval)
{
    memset(c, 0, sizeof *c);
    c->symval = symval;
    ch_map_init(&c->slot);
}

static void dcache_clear(dcache *c)
{
    ch_map_free(&c->slot);
    free(c->v);
}

double ch_eval_d(ch_ctx *ctx, const ch_expr *e, const double *symval)
{
    (void)ctx;
    dcache c;
    dcache_init(&c, symval);
    double v = eval_d(&c, e);
    dcache_clear(&c);
    return v;
}

void ch_eval_d_many(ch_ctx *ctx, size_t n, const ch_expr *const *e,
                    const double *symval, double *out)
{
    (void)ctx;
    dcache c;
    dcache_init(&c, symval);
    for (size_t i = 0; i < n; i++) out[i] = eval_d(&c, e[i]);
    dcache_clear(&c);
}

/* ======================================================================
 * balls
 * ====================================================================== */

typedef struct {
    const arb_struct *symval;
    slong prec;
    ch_map slot; /* node id -> index + 1 */
    arb_struct *v;
    size_t n, cap;
} acache;

/* Nonzero results of the ball evaluators mean "undefined here". */
enum { A_OK = 0, A_UNDEF = 1 };

static int eval_a(acache *c, arb_t res, const ch_expr *e);

/* res = x^ex for a rational exponent. Non-integer powers need x >= 0
 * (x > 0 for negative exponents), as in the double evaluator. */
static int pow_q_a(arb_t res, const arb_t x, const fmpq_t ex, slong prec)
{
    const fmpz *p = fmpq_numref(ex), *q = fmpq_denref(ex);
    int neg = fmpz_sgn(p) < 0;
    if (neg && arb_contains_zero(x)) return A_UNDEF;
    if (fmpz_is_one(q)) {
        arb_pow_fmpz(res, x, p, prec);
        return A_OK;
    }
    if (!(neg ? arb_is_positive(x) : arb_is_nonnegative(x))) return A_UNDEF;
    if (!fmpz_fits_si(q)) return A_UNDEF;
    ulong qs = fmpz_get_ui(q);
    if (qs == 2)
        arb_sqrt(res, x, prec);
    else
        arb_root_ui(res, x, qs, prec);
    arb_pow_fmpz(res, res, p, prec);
    return A_OK;
}

static int pow_a(arb_t res, const arb_t b, const arb_t y, slong prec)
{
    if (arb_is_positive(b)) {
        arb_pow(res, b, y, prec);
        return A_OK;
    }
    if (arb_is_exact(y) && arb_is_int(y)) {
        fmpz_t k;
        fmpz_init(k);
        arf_get_fmpz(k, arb_midref(y), ARF_RND_DOWN);
        int undef = fmpz_sgn(k) < 0 && arb_contains_zero(b);
        if (!undef) arb_pow_fmpz(res, b, k, prec);
        fmpz_clear(k);
        return undef ? A_UNDEF : A_OK;
    }
    if (arb_is_zero(b) && arb_is_positive(y)) {
        arb_zero(res);
        return A_OK;
    }
    return A_UNDEF;
}

/* Is every point of the ball in [-1, 1]? */
static int in_unit(const arb_t x, slong prec)
{
    arf_t lo, hi;
    arf_init(lo);
    arf_init(hi);
    arb_get_lbound_arf(lo, x, prec);
    arb_get_ubound_arf(hi, x, prec);
    int ok = arf_cmp_si(lo, -1) >= 0 && arf_cmp_si(hi, 1) <= 0;
    arf_clear(lo);
    arf_clear(hi);
    return ok;
}

static int fun_a(arb_t res, ch_fun f, const arb_t a, const arb_t b,
                 slong prec)
{
    switch (f) {
    case CH_F_SIN: arb_sin(res, a, prec); break;
    case CH_F_COS: arb_cos(res, a, prec); break;
    case CH_F_TAN: {
        arb_t cs;
        arb_init(cs);
        arb_cos(cs, a, prec);
        int undef = arb_contains_zero(cs);
        arb_clear(cs);
        if (undef) return A_UNDEF;
        arb_tan(res, a, prec);
        break;
    }
    case CH_F_ASIN:
    case CH_F_ACOS:
        if (!in_unit(a, prec)) return A_UNDEF;
        if (f == CH_F_ASIN) arb_asin(res, a, prec);
        else arb_acos(res, a, prec);
        break;
    case CH_F_ATAN: arb_atan(res, a, prec); break;
    case CH_F_ATAN2:
        /* the angle is undefined at the origin; arb gives a wide ball on
         * the branch cut, which the zero test treats as inconclusive */
        if (arb_contains_zero(a) && arb_contains_zero(b)) return A_UNDEF;
        arb_atan2(res, a, b, prec);
        break;
    case CH_F_SINH: arb_sinh(res, a, prec); break;
    case CH_F_COSH: arb_cosh(res, a, prec); break;
    case CH_F_TANH: arb_tanh(res, a, prec); break;
    case CH_F_EXP: arb_exp(res, a, prec); break;
    case CH_F_LOG:
        if (!arb_is_positive(a)) return A_UNDEF;
        arb_log(res, a, prec);
        break;
    case CH_F_ABS: arb_abs(res, a); break;
    default: return A_UNDEF;
    }
    return A_OK;
}

static int eval_a_add(acache *c, arb_t res, const ch_expr *e)
{
    arb_t t;
    arb_init(t);
    arb_set_fmpq(res, e->num, c->prec);
    int rc = A_OK;
    for (uint32_t i = 0; i < e->n && rc == A_OK; i++) {
        rc = eval_a(c, t, e->pair[i].e);
        if (rc) break;
        const fmpq *k = e->pair[i].c;
        arb_mul_fmpz(t, t, fmpq_numref(k), c->prec);
        if (!fmpz_is_one(fmpq_denref(k)))
            arb_div_fmpz(t, t, fmpq_denref(k), c->prec);
        arb_add(res, res, t, c->prec);
    }
    arb_clear(t);
    return rc;
}

static int eval_a_mul(acache *c, arb_t res, const ch_expr *e)
{
    arb_t t;
    arb_init(t);
    arb_set_fmpq(res, e->num, c->prec);
    int rc = A_OK;
    for (uint32_t i = 0; i < e->n && rc == A_OK; i++) {
        rc = eval_a(c, t, e->pair[i].e);
        if (!rc) rc = pow_q_a(t, t, e->pair[i].c, c->prec);
        if (!rc) arb_mul(res, res, t, c->prec);
    }
    arb_clear(t);
    return rc;
}

static int eval_a_node(acache *c, arb_t res, const ch_expr *e)
{
    int rc = A_OK;
    switch (e->kind) {
    case CH_NUM:
        arb_set_fmpq(res, e->num, c->prec);
        break;
    case CH_SYM:
        if (ch_sym_of(e)->kind == CH_SYM_PI) arb_const_pi(res, c->prec);
        else if (c->symval) arb_set(res, c->symval + ch_sym_of(e)->sid);
        else rc = A_UNDEF;
        break;
    case CH_ADD:
        rc = eval_a_add(c, res, e);
        break;
    case CH_MUL:
        rc = eval_a_mul(c, res, e);
        break;
    case CH_POW:
    case CH_FUN: {
        arb_t a, b;
        arb_init(a);
        arb_init(b);
        rc = eval_a(c, a, e->pair[0].e);
        if (!rc && e->n == 2) rc = eval_a(c, b, e->pair[1].e);
        if (!rc)
            rc = e->kind == CH_POW ? pow_a(res, a, b, c->prec)
                                   : fun_a(res, (ch_fun)e->fun, a, b, c->prec);
        arb_clear(a);
        arb_clear(b);
        break;
    }
    default:
        rc = A_UNDEF;
    }
    if (!rc && !arb_is_finite(res)) rc = A_UNDEF;
    return rc;
}

static int eval_a(acache *c, arb_t res, const ch_expr *e)
{
    if (!e) return A_UNDEF;
    uintptr_t k = (uintptr_t)ch_map_get(&c->slot, e->id);
    if (k) {
        arb_set(res, c->v + (k - 1));
        return A_OK;
    }
    int rc = eval_a_node(c, res, e);
    if (rc || e->kind == CH_NUM || e->kind == CH_SYM) return rc;
    if (c->n == c->cap) {
        size_t cap = c->cap ? 2 * c->cap : 64;
        /* arb structs hold no pointers into themselves: moving is safe */
        arb_struct *nv = realloc(c->v, cap * sizeof *nv);
        if (!nv) return A_OK; /* uncached, still correct */
        c->v = nv;
        c->cap = cap;
    }
    arb_init(c->v + c->n);
    arb_set(c->v + c->n, res);
    c->n++;
    if (ch_map_put(&c->slot, e->id, (void *)(uintptr_t)c->n)) {
        c->n--;
        arb_clear(c->v + c->n);
    }
    return A_OK;
}

int ch_eval_arb_many(ch_ctx *ctx, size_t n, const ch_expr *const *e,
                     arb_ptr const *res, const arb_struct *symval, slong prec)
{
    (void)ctx;
    acache c;
    memset(&c, 0, sizeof c);
    c.symval = symval;
    c.prec = prec;
    ch_map_init(&c.slot);
    int rc = A_OK;
    for (size_t i = 0; i < n && rc == A_OK; i++) rc = eval_a(&c, res[i], e[i]);
    for (size_t i = 0; i < c.n; i++) arb_clear(c.v + i);
    free(c.v);
    ch_map_free(&c.slot);
    return rc;
}

int ch_eval_arb(ch_ctx *ctx, arb_t res, const ch_expr *e,
                const arb_struct *symval, slong prec)
{
    arb_ptr out = res;
    return ch_eval_arb_many(ctx, 1, &e, &out, symval, prec);
}

/* ======================================================================
 * zero test
 * ====================================================================== */

/* Every symbol gets an exact dyadic value in [1/4, 2], negated with
 * probability 1/2 unless `positive` (sqrt and log need positive values);
 * pi gets pi. Values stay away from 0 where 1/x and log blow up. */
static void default_point(ch_ctx *ctx, flint_rand_t rnd, arb_struct *sv,
                          size_t ns, int positive, slong prec)
{
    for (size_t i = 0; i < ns; i++) {
        const ch_sym *s = ch_ctx_sym(ctx, (uint32_t)i);
        if (s && s->kind == CH_SYM_PI) {
            arb_const_pi(sv + i, prec);
            continue;
        }
        ulong n = (1UL << 18) + n_randint(rnd, 7 * (1UL << 18) + 1);
        arb_set_ui(sv + i, n);
        arb_mul_2exp_si(sv + i, sv + i, -20);
        if (!positive && n_randint(rnd, 2)) arb_neg(sv + i, sv + i);
    }
}

static double mid_d(const arb_t x)
{
    return arf_get_d(arb_midref(x), ARF_RND_NEAR);
}

static void keep_witness(ch_ctx *ctx, ch_zero_result *r, const arb_struct *sv,
                         size_t ns)
{
    r->witness = ch_ctx_alloc(ctx, (ns ? ns : 1) * sizeof *r->witness);
    if (!r->witness) return;
    for (size_t i = 0; i < ns; i++) r->witness[i] = mid_d(sv + i);
    r->have_witness = 1;
}

/* Classifies one enclosure: -1 excludes 0, 1 contains 0 tightly, 0 wide. */
static int classify(const arb_t v, slong prec)
{
    if (!arb_contains_zero(v)) return -1;
    return mag_cmp_2exp_si(arb_radref(v), -(prec / 2)) < 0;
}

/* The precision for evaluating again an enclosure v that came out wide at
 * cur bits. Rounding errors scale as 2^-cur, so the bits v lacks (its
 * radius over the 2^-(prec/2) of classify) plus a margin settle them;
 * a long chain loses a few hundred bits, and a fixed 4 * prec paid for
 * bits it did not need (the 200-trailer's identity test then ran at 1024
 * bits). At most 4 * prec, which is also the answer for an infinite
 * radius; a multiple of 64 (whole limbs). */
static slong retry_prec(const arb_t v, slong prec, slong cur)
{
    if (!mag_is_finite(arb_radref(v))) return 4 * prec;
    double lack = mag_get_d_log2_approx(arb_radref(v)) + prec / 2.0;
    double want = cur + (lack > 0 ? lack : 0) + 32;
    if (!(want < 4 * prec)) return 4 * prec;
    slong p = ((slong)want + 63) / 64 * 64;
    return p > cur ? p : cur + 64;
}

ch_zero_result ch_zero_test(ch_ctx *ctx, const ch_expr *e, ch_sampler sampler,
                            void *data, int points)
{
    return ch_zero_test_on(ctx, e, e, sampler, data, points);
}

ch_zero_result ch_zero_test_on(ch_ctx *ctx, const ch_expr *symbolic,
                               const ch_expr *e, ch_sampler sampler,
                               void *data, int points)
{
    ch_zero_result r;
    memset(&r, 0, sizeof r);
    r.verdict = CH_ZERO_UNKNOWN;
    if (!e || !symbolic) return r;
    if (ch_simplify_is_zero(ctx, symbolic) == 1) {
        r.verdict = CH_ZERO_YES;
        r.symbolic = 1;
        return r;
    }
    if (points <= 0) points = ZERO_POINTS;
    size_t ns = ch_ctx_nsyms(ctx);
    slong prec = ZERO_PREC;
    arb_struct *sv = _arb_vec_init((slong)(ns ? ns : 1));
    arb_t v, w;
    arb_init(v);
    arb_init(w);
    flint_rand_t rnd;
    flint_randinit(rnd);
    flint_randseed(rnd, 0x2545F4914F6CDD1DUL, 0x9E3779B97F4A7C15UL);

    /* every evaluated point must give a tight enclosure of 0 for YES; one
     * enclosure excluding 0 is a NO; anything else stays UNKNOWN */
    int tight = 0, positive = 0;
    /* the evaluation's precision: raised for the later points once one
     * needed more bits (the points of one test are alike) */
    slong ep = prec;
    for (int attempt = 0; r.points < points && attempt < 4 * points; attempt++) {
        /* defaults first, so symbols a sampler does not set still get a
         * value */
        default_point(ctx, rnd, sv, ns, positive, prec);
        if (sampler && sampler(data, rnd, sv, prec)) continue;
        if (ch_eval_arb(ctx, v, e, sv, ep)) {
            /* undefined here: alternate mixed-sign and positive points */
            if (!sampler) positive = !positive;
            continue;
        }
        int cls = classify(v, prec);
        /* cancellation: more bits may settle it; first as many as v
         * lacks, then 4 * prec (a radius that is the sample's own, not
         * rounding, does not shrink) */
        for (slong p = ep; cls == 0 && p < 4 * prec;) {
            p = p == ep ? retry_prec(v, prec, p) : 4 * prec;
            if (ch_eval_arb(ctx, w, e, sv, p)) break;
            arb_swap(v, w);
            cls = classify(v, prec);
            if (cls == 1) ep = p;
        }
        r.points++;
        double m = fabs(mid_d(v));
        if (m > r.max_abs) r.max_abs = m;
        if (cls < 0) {
            r.verdict = CH_ZERO_NO;
            keep_witness(ctx, &r, sv, ns);
            break;
        }
        tight += cls;
    }
    if (r.verdict != CH_ZERO_NO && tight == points) r.verdict = CH_ZERO_YES;

    flint_randclear(rnd);
    arb_clear(v);
    arb_clear(w);
    _arb_vec_clear(sv, (slong)(ns ? ns : 1));
    return r;
}

void ch_eval_generic_point(const ch_ctx *ctx, uint64_t stream, int which,
                           double *v)
{
    uint64_t seed = stream + 0x9E3779B97F4A7C15ULL * (uint64_t)which;
    size_t ns = ch_ctx_nsyms(ctx);
    for (size_t s = 0; s < ns; s++) {
        seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
        double u = (double)(seed >> 11) / 9007199254740992.0;
        double sign = (which % 2 == 0 && u < 0.5) ? -1 : 1;
        v[s] = sign * (0.5 + 2 * fabs(u - 0.5));
        if (ch_ctx_sym(ctx, (uint32_t)s)->kind == CH_SYM_PI)
            v[s] = 3.14159265358979323846;
    }
}

double ch_fmpq_to_double(const fmpq_t q)
{
    if (fmpq_is_zero(q)) return 0.0;
    arf_t t;
    arf_init(t);
    int inexact = arf_set_fmpq(t, q, 128, ARF_RND_DOWN);
    if (inexact) {
        /* The exact value lies strictly between t and the next 128-bit
         * number away from zero. Adding a bit below t's last place puts t
         * on the same side of every double and every midpoint between
         * doubles (those sit on the 128-bit grid), so the one rounding
         * below is correct: no double rounding. */
        fmpz_t e, s;
        fmpz_init(e);
        fmpz_init_set_si(s, fmpq_sgn(q));
        fmpz_sub_ui(e, ARF_EXPREF(t), 130);
        arf_add_fmpz_2exp(t, t, s, e, ARF_PREC_EXACT, ARF_RND_DOWN);
        fmpz_clear(e);
        fmpz_clear(s);
    }
    double d = arf_get_d(t, ARF_RND_NEAR);
    arf_clear(t);
    return d;
}
