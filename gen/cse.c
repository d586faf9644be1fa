/* cse.c — lowering of the expression DAG to straight-line C (see cse.h).
 *
 * Values are numbered in creation order; a value is a leaf (symbol text or
 * number, used inline) or a temporary defined by exactly one statement. The
 * memo tables map DAG node ids, (value, exponent) pairs and denominators to
 * values, so each is computed once. */
#include "cse.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    ch_ctx *ctx;
    ch_c_namer namer;
    void *data;
    const char *tmp, *indent;
    ch_cse_prog *prog;
    char **val;      /* text of each value */
    size_t nval, capval;
    ch_map node_val; /* node id -> value + 1 */
    ch_map pow_val;  /* (value + 1) << 24 | exponent -> value + 1 */
    ch_map sqrt_val, cbrt_val, inv_val; /* value + 1 (or D id) -> value + 1 */
    ch_map den_of;   /* MUL id -> its denominator node D */
    ch_map den_uses; /* D id -> number of products dividing by D */
    ch_map neg_uses; /* base id -> products with base^(-integer) */
    ch_map recip_val;/* value + 1 -> value + 1 of 1/value */
    int failed;
    ch_error *err;
} cse;

static void fail(cse *s, ch_status code, const char *msg)
{
    if (!s->failed) ch_error_set(s->err, code, NULL, 0, 0, "%s", msg);
    s->failed = 1;
}

static void *pv(size_t v) { return (void *)(uintptr_t)(v + 1); }
static long vp(void *p) { return p ? (long)(uintptr_t)p - 1 : -1; }

static size_t add_value(cse *s, char *text)
{
    if (!text) {
        fail(s, CH_ERR_MEMORY, "out of memory in CSE");
        return 0;
    }
    if (s->nval == s->capval) {
        size_t cap = s->capval ? 2 * s->capval : 64;
        char **v = realloc(s->val, cap * sizeof *v);
        if (!v) {
            free(text);
            fail(s, CH_ERR_MEMORY, "out of memory in CSE");
            return 0;
        }
        s->val = v;
        s->capval = cap;
    }
    s->val[s->nval] = text;
    return s->nval++;
}

static char *dup(const char *t)
{
    size_t n = strlen(t) + 1;
    char *r = malloc(n);
    if (r) memcpy(r, t, n);
    return r;
}

/* A new temporary defined as rhs (which the caller has built). */
static size_t emit_temp(cse *s, const ch_buf *rhs)
{
    char name[48];
    snprintf(name, sizeof name, "%s%zu", s->tmp, s->prog->ntemps++);
    ch_buf_printf(&s->prog->body, "%sconst double %s = %s;\n", s->indent,
                  name, rhs->s ? rhs->s : "");
    return add_value(s, dup(name));
}

/* A nonnegative double as a C literal (correctly rounded, 17 digits). */
static void put_double(ch_buf *b, double v)
{
    if (isinf(v)) {
        ch_buf_put(b, "HUGE_VAL");
        return;
    }
    char tmp[64];
    snprintf(tmp, sizeof tmp, "%.17g", v);
    ch_buf_put(b, tmp);
    if (!strpbrk(tmp, ".eEn")) ch_buf_put(b, ".0");
}

static void put_abs_q(ch_buf *b, const fmpq_t q)
{
    fmpq_t a;
    fmpq_init(a);
    fmpq_abs(a, q);
    put_double(b, ch_fmpq_to_double(a));
    fmpq_clear(a);
}

static size_t lower(cse *s, const ch_expr *e);

static size_t leaf_text(cse *s, const char *text)
{
    return add_value(s, dup(text));
}

static size_t lower_num(cse *s, const fmpq_t q)
{
    ch_buf b;
    ch_buf_init(&b);
    if (fmpq_sgn(q) < 0) ch_buf_put(&b, "(-");
    put_abs_q(&b, q);
    if (fmpq_sgn(q) < 0) ch_buf_put(&b, ")");
    if (b.oom) fail(s, CH_ERR_MEMORY, "out of memory in CSE");
    size_t v = add_value(s, b.s ? ch_buf_take(&b) : dup("0.0"));
    ch_buf_free(&b);
    return v;
}

static size_t lower_sym(cse *s, const ch_sym *sym)
{
    if (sym->kind == CH_SYM_PI) return leaf_text(s, "3.1415926535897931");
    const char *t = s->namer(s->data, sym);
    if (!t) {
        if (!s->failed)
            ch_error_set(s->err, CH_ERR_MODEL, NULL, 0, 0,
                         "symbol %s cannot appear in this emitted function",
                         sym->name);
        s->failed = 1;
        return 0;
    }
    return leaf_text(s, t);
}

/* Binary statement "a OP b" as a new temporary. */
static size_t binop(cse *s, size_t a, const char *op, size_t b)
{
    ch_buf r;
    ch_buf_init(&r);
    ch_buf_printf(&r, "%s %s %s", s->val[a], op, s->val[b]);
    size_t v = emit_temp(s, &r);
    ch_buf_free(&r);
    return v;
}

static size_t call1(cse *s, const char *f, size_t a)
{
    ch_buf r;
    ch_buf_init(&r);
    ch_buf_printf(&r, "%s(%s)", f, s->val[a]);
    size_t v = emit_temp(s, &r);
    ch_buf_free(&r);
    s->prog->after.call += 1;
    return v;
}

/* b^k for an integer k >= 1, sharing intermediate powers. */
static size_t power(cse *s, size_t b, ulong k)
{
    if (k == 1 || s->failed) return b;
    if (k >= (1u << 24)) {
        ch_buf r;
        ch_buf_init(&r);
        ch_buf_printf(&r, "pow(%s, %lu.0)", s->val[b], (unsigned long)k);
        size_t v = emit_temp(s, &r);
        ch_buf_free(&r);
        s->prog->after.call += 1;
        return v;
    }
    uint64_t key = ((uint64_t)(b + 1) << 24) | k;
    long got = vp(ch_map_get(&s->pow_val, key));
    if (got >= 0) return (size_t)got;
    size_t v;
    if (k % 2 == 0) {
        size_t h = power(s, b, k / 2);
        v = binop(s, h, "*", h);
    } else {
        v = binop(s, power(s, b, k - 1), "*", b);
    }
    s->prog->after.mul += 1;
    if (ch_map_put(&s->pow_val, key, pv(v))) fail(s, CH_ERR_MEMORY, "out of memory in CSE");
    return v;
}

static size_t memo_call(cse *s, ch_map *m, const char *f, size_t b)
{
    long got = vp(ch_map_get(m, b + 1));
    if (got >= 0) return (size_t)got;
    size_t v = call1(s, f, b);
    if (ch_map_put(m, b + 1, pv(v))) fail(s, CH_ERR_MEMORY, "out of memory in CSE");
    return v;
}

/* base^q for a non-integer q > 0: sqrt/cbrt then an integer power, else pow. */
static size_t frac_power(cse *s, size_t b, const fmpq_t q)
{
    const fmpz *den = fmpq_denref(q), *num = fmpq_numref(q);
    if (fmpz_fits_si(num) && (fmpz_equal_si(den, 2) || fmpz_equal_si(den, 3))) {
        int two = fmpz_equal_si(den, 2);
        size_t r = memo_call(s, two ? &s->sqrt_val : &s->cbrt_val,
                             two ? "sqrt" : "cbrt", b);
        ulong k = (ulong)fmpz_get_si(num), d = two ? 2 : 3;
        if (k < d) return power(s, r, k);
        /* b^(k/d) = b^(k div d) * root^(k mod d): b^(3/2) is b*sqrt(b) */
        size_t v = binop(s, power(s, b, k / d), "*", power(s, r, k % d));
        s->prog->after.mul += 1;
        return v;
    }
    ch_buf r;
    ch_buf_init(&r);
    ch_buf_printf(&r, "pow(%s, ", s->val[b]);
    put_double(&r, ch_fmpq_to_double(q));
    ch_buf_put(&r, ")");
    size_t v = emit_temp(s, &r);
    ch_buf_free(&r);
    s->prog->after.call += 1;
    return v;
}

/* base^|q| as a value. */
static size_t factor_value(cse *s, const ch_expr *base, const fmpq_t q)
{
    size_t b = lower(s, base);
    if (s->failed) return 0;
    fmpq_t a;
    fmpq_init(a);
    fmpq_abs(a, q);
    size_t v;
    if (fmpz_is_one(fmpq_denref(a)))
        v = fmpz_fits_si(fmpq_numref(a))
                ? power(s, b, (ulong)fmpz_get_si(fmpq_numref(a)))
                : frac_power(s, b, a);
    else
        v = frac_power(s, b, a);
    fmpq_clear(a);
    return v;
}

static void join(ch_buf *r, cse *s, const size_t *f, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (i) ch_buf_put(r, "*");
        ch_buf_put(r, s->val[f[i]]);
    }
}

/* A base with a negative integer exponent in several products: its
 * reciprocal is computed once and those factors become its powers. */
static int recip_shared(const cse *s, const ch_expr *base, const fmpq *q)
{
    return fmpq_sgn(q) < 0 && fmpz_is_one(fmpq_denref(q)) &&
           (uintptr_t)ch_map_get(&s->neg_uses, base->id) >= 2;
}

static size_t recip_power(cse *s, const ch_expr *base, const fmpq *q)
{
    size_t b = lower(s, base);
    if (s->failed) return 0;
    long got = vp(ch_map_get(&s->recip_val, b + 1));
    if (got < 0) {
        ch_buf r;
        ch_buf_init(&r);
        ch_buf_printf(&r, "1.0 / %s", s->val[b]);
        got = (long)emit_temp(s, &r);
        ch_buf_free(&r);
        s->prog->after.div += 1;
        if (ch_map_put(&s->recip_val, b + 1, pv((size_t)got)))
            fail(s, CH_ERR_MEMORY, "out of memory in CSE");
    }
    fmpz_t k;
    fmpz_init(k);
    fmpz_neg(k, fmpq_numref(q));
    size_t v = fmpz_fits_si(k) ? power(s, (size_t)got, (ulong)fmpz_get_si(k)) : (size_t)got;
    fmpz_clear(k);
    return v;
}

static size_t lower_mul(cse *s, const ch_expr *e)
{
    size_t *num = malloc((e->n + 2) * sizeof *num);
    size_t *den = malloc((e->n + 1) * sizeof *den);
    if (!num || !den) {
        free(num);
        free(den);
        fail(s, CH_ERR_MEMORY, "out of memory in CSE");
        return 0;
    }
    size_t nn = 0, nd = 0;
    const ch_expr *D = ch_map_get(&s->den_of, e->id);
    int hoist = D && (uintptr_t)ch_map_get(&s->den_uses, D->id) >= 2;
    for (uint32_t i = 0; i < e->n && !s->failed; i++) {
        const fmpq *q = e->pair[i].c;
        if (fmpq_sgn(q) > 0)
            num[nn++] = factor_value(s, e->pair[i].e, q);
        else if (recip_shared(s, e->pair[i].e, q))
            num[nn++] = recip_power(s, e->pair[i].e, q);
        else if (!hoist)
            den[nd++] = factor_value(s, e->pair[i].e, q);
    }
    if (hoist && !s->failed) {
        long got = vp(ch_map_get(&s->inv_val, D->id));
        if (got < 0) {
            size_t d = lower(s, D);
            if (!s->failed) {
                ch_buf r;
                ch_buf_init(&r);
                ch_buf_printf(&r, "1.0 / %s", s->val[d]);
                got = (long)emit_temp(s, &r);
                ch_buf_free(&r);
                s->prog->after.div += 1;
                if (ch_map_put(&s->inv_val, D->id, pv((size_t)got)))
                    fail(s, CH_ERR_MEMORY, "out of memory in CSE");
            }
        }
        if (got >= 0) num[nn++] = (size_t)got;
    }
    size_t v = 0;
    if (!s->failed) {
        int neg = fmpq_sgn(e->num) < 0;
        int unit = fmpz_is_pm1(fmpq_numref(e->num)) && fmpz_is_one(fmpq_denref(e->num));
        if (unit && !neg && nn == 1 && nd == 0) {
            v = num[0]; /* a bare power: the power's value itself */
        } else {
            ch_buf r;
            ch_buf_init(&r);
            if (neg) ch_buf_put(&r, "-");
            size_t nf = nn;
            if (!unit || nn == 0) {
                put_abs_q(&r, e->num);
                if (nn) ch_buf_put(&r, "*");
                nf++;
            }
            join(&r, s, num, nn);
            if (nd) {
                ch_buf_put(&r, nd > 1 ? " / (" : " / ");
                join(&r, s, den, nd);
                if (nd > 1) ch_buf_put(&r, ")");
                s->prog->after.div += 1;
                s->prog->after.mul += (double)(nd - 1);
            }
            if (nf > 1) s->prog->after.mul += (double)(nf - 1);
            v = emit_temp(s, &r);
            ch_buf_free(&r);
        }
    }
    free(num);
    free(den);
    return v;
}

static size_t lower_add(cse *s, const ch_expr *e)
{
    size_t *t = malloc(e->n * sizeof *t);
    if (!t) {
        fail(s, CH_ERR_MEMORY, "out of memory in CSE");
        return 0;
    }
    for (uint32_t i = 0; i < e->n && !s->failed; i++) t[i] = lower(s, e->pair[i].e);
    size_t v = 0;
    if (!s->failed) {
        ch_buf r;
        ch_buf_init(&r);
        size_t terms = 0;
        for (uint32_t i = 0; i < e->n; i++) {
            const fmpq *c = e->pair[i].c;
            int neg = fmpq_sgn(c) < 0;
            int unit = fmpz_is_pm1(fmpq_numref(c)) && fmpz_is_one(fmpq_denref(c));
            if (terms) ch_buf_put(&r, neg ? " - " : " + ");
            else if (neg) ch_buf_put(&r, "-");
            if (!unit) {
                put_abs_q(&r, c);
                ch_buf_put(&r, "*");
                s->prog->after.mul += 1;
            }
            ch_buf_put(&r, s->val[t[i]]);
            terms++;
        }
        if (!fmpq_is_zero(e->num)) {
            ch_buf_put(&r, fmpq_sgn(e->num) < 0 ? " - " : " + ");
            put_abs_q(&r, e->num);
            terms++;
        }
        s->prog->after.add += (double)(terms - 1);
        v = emit_temp(s, &r);
        ch_buf_free(&r);
    }
    free(t);
    return v;
}

static size_t lower_fun(cse *s, const ch_expr *e)
{
    static const char *const cname[CH_F_COUNT] = {
        "sin", "cos", "tan", "asin", "acos", "atan", "atan2",
        "sinh", "cosh", "tanh", "exp", "log", "fabs"};
    size_t a = lower(s, e->arg[0]);
    if (s->failed) return 0;
    if (e->fun != CH_F_ATAN2) return call1(s, cname[e->fun], a);
    size_t b = lower(s, e->arg[1]);
    if (s->failed) return 0;
    ch_buf r;
    ch_buf_init(&r);
    ch_buf_printf(&r, "atan2(%s, %s)", s->val[a], s->val[b]);
    size_t v = emit_temp(s, &r);
    ch_buf_free(&r);
    s->prog->after.call += 1;
    return v;
}

static size_t lower(cse *s, const ch_expr *e)
{
    if (s->failed) return 0;
    long got = vp(ch_map_get(&s->node_val, e->id));
    if (got >= 0) return (size_t)got;
    size_t v = 0;
    switch (e->kind) {
    case CH_NUM: v = lower_num(s, e->num); break;
    case CH_SYM: v = lower_sym(s, e->sym); break;
    case CH_ADD: v = lower_add(s, e); break;
    case CH_MUL: v = lower_mul(s, e); break;
    case CH_FUN: v = lower_fun(s, e); break;
    case CH_POW: {
        size_t a = lower(s, e->arg[0]), b = lower(s, e->arg[1]);
        if (s->failed) return 0;
        ch_buf r;
        ch_buf_init(&r);
        ch_buf_printf(&r, "pow(%s, %s)", s->val[a], s->val[b]);
        v = emit_temp(s, &r);
        ch_buf_free(&r);
        s->prog->after.call += 1;
        break;
    }
    default: fail(s, CH_ERR_MODEL, "unknown node kind in CSE");
    }
    if (!s->failed && ch_map_put(&s->node_val, e->id, pv(v)))
        fail(s, CH_ERR_MEMORY, "out of memory in CSE");
    return v;
}

/* ---- denominators: which products share one ------------------------------ */

/* Visits every reachable node once. Phase 0 counts, per base, the products
 * where it has a negative integer exponent (bases counted twice or more get
 * a shared reciprocal). Phase 1 records for each product its remaining
 * denominator node D (hash-consed, so equal denominators are one node) and
 * counts the products dividing by D. */
static void find_denominators(cse *s, const ch_expr *e, ch_map *seen, int phase)
{
    if (s->failed || ch_map_get(seen, e->id)) return;
    if (ch_map_put(seen, e->id, (void *)1)) {
        fail(s, CH_ERR_MEMORY, "out of memory in CSE");
        return;
    }
    if (e->kind == CH_ADD || e->kind == CH_MUL)
        for (uint32_t i = 0; i < e->n; i++) find_denominators(s, e->pair[i].e, seen, phase);
    else if (e->kind == CH_FUN || e->kind == CH_POW)
        for (int i = 0; i < (e->kind == CH_POW || e->fun == CH_F_ATAN2 ? 2 : 1); i++)
            find_denominators(s, e->arg[i], seen, phase);
    if (e->kind != CH_MUL) return;
    if (phase == 0) { /* count bases with negative integer exponents */
        for (uint32_t i = 0; i < e->n; i++) {
            const fmpq *q = e->pair[i].c;
            if (fmpq_sgn(q) < 0 && fmpz_is_one(fmpq_denref(q))) {
                uint32_t id = e->pair[i].e->id;
                uintptr_t c = (uintptr_t)ch_map_get(&s->neg_uses, id);
                if (ch_map_put(&s->neg_uses, id, (void *)(c + 1)))
                    fail(s, CH_ERR_MEMORY, "out of memory in CSE");
            }
        }
        return;
    }
    const ch_expr **f = malloc(e->n * sizeof *f);
    if (!f) {
        fail(s, CH_ERR_MEMORY, "out of memory in CSE");
        return;
    }
    size_t nf = 0;
    fmpq_t a;
    fmpq_init(a);
    for (uint32_t i = 0; i < e->n; i++)
        if (fmpq_sgn(e->pair[i].c) < 0 && !recip_shared(s, e->pair[i].e, e->pair[i].c)) {
            fmpq_neg(a, e->pair[i].c);
            f[nf++] = ch_pow_q(s->ctx, e->pair[i].e, a);
        }
    fmpq_clear(a);
    if (nf) {
        const ch_expr *D = ch_mul_n(s->ctx, nf, f);
        if (!D) {
            fail(s, CH_ERR_LIMIT, "expression limit reached in CSE");
        } else {
            uintptr_t c = (uintptr_t)ch_map_get(&s->den_uses, D->id);
            if (ch_map_put(&s->den_of, e->id, (void *)D) ||
                ch_map_put(&s->den_uses, D->id, (void *)(c + 1)))
                fail(s, CH_ERR_MEMORY, "out of memory in CSE");
        }
    }
    free(f);
}

/* ---- operation counts of the outputs as trees ----------------------------- */

static void count_add(ch_opcount *a, const ch_opcount *b, double times)
{
    a->add += times * b->add;
    a->mul += times * b->mul;
    a->div += times * b->div;
    a->call += times * b->call;
}

static int is_pm1(const fmpq *q)
{
    return fmpz_is_pm1(fmpq_numref(q)) && fmpz_is_one(fmpq_denref(q));
}

static const ch_opcount *tree_cost(const ch_expr *e, ch_opcount *memo, char *done)
{
    ch_opcount *c = &memo[e->id];
    if (done[e->id]) return c;
    done[e->id] = 1;
    memset(c, 0, sizeof *c);
    if (e->kind == CH_ADD) {
        c->add = e->n - 1 + !fmpq_is_zero(e->num);
        for (uint32_t i = 0; i < e->n; i++) {
            if (!is_pm1(e->pair[i].c)) c->mul += 1;
            count_add(c, tree_cost(e->pair[i].e, memo, done), 1);
        }
    } else if (e->kind == CH_MUL) {
        double factors = is_pm1(e->num) ? 0 : 1;
        int neg = 0;
        for (uint32_t i = 0; i < e->n; i++) {
            const fmpq *q = e->pair[i].c;
            double k = 1;
            if (fmpz_is_one(fmpq_denref(q)) && fmpz_fits_si(fmpq_numref(q)))
                k = fabs((double)fmpz_get_si(fmpq_numref(q)));
            else
                c->call += 1;
            factors += 1;
            c->mul += k - 1;
            if (fmpq_sgn(q) < 0) neg = 1;
            count_add(c, tree_cost(e->pair[i].e, memo, done), k);
        }
        if (neg) c->div += 1, factors -= 1;
        if (factors > 1) c->mul += factors - 1;
    } else if (e->kind == CH_FUN || e->kind == CH_POW) {
        c->call = 1;
        for (int i = 0; i < (e->kind == CH_POW || e->fun == CH_F_ATAN2 ? 2 : 1); i++)
            count_add(c, tree_cost(e->arg[i], memo, done), 1);
    }
    return c;
}

static int count_before(ch_ctx *ctx, size_t n, const ch_expr *const *outs,
                        ch_opcount *before)
{
    size_t nn = ch_ctx_nnodes(ctx) + 1;
    ch_opcount *memo = malloc(nn * sizeof *memo);
    char *done = calloc(nn, 1);
    if (!memo || !done) {
        free(memo);
        free(done);
        return -1;
    }
    memset(before, 0, sizeof *before);
    for (size_t i = 0; i < n; i++) count_add(before, tree_cost(outs[i], memo, done), 1);
    free(memo);
    free(done);
    return 0;
}

/* ---- entry points --------------------------------------------------------- */

int ch_cse_build(ch_ctx *ctx, size_t n, const ch_expr *const *outs,
                 ch_c_namer namer, void *data, const char *tmp,
                 const char *indent, ch_cse_prog *out, ch_error *err)
{
    memset(out, 0, sizeof *out);
    ch_buf_init(&out->body);
    for (size_t i = 0; i < n; i++)
        if (!outs[i]) { /* a builder failed: pass its reason on (a limit) */
            const ch_error *ce = ch_ctx_error(ctx);
            return ch_error_set(err, ce->code ? ce->code : CH_ERR_MODEL, NULL,
                                0, 0, "%s", ce->code ? ce->msg
                                : "missing expression for emitted code");
        }
    out->ref = calloc(n ? n : 1, sizeof *out->ref);
    if (!out->ref || count_before(ctx, n, outs, &out->before))
        return ch_error_set(err, CH_ERR_MEMORY, NULL, 0, 0, "out of memory");
    out->n = n;
    cse s;
    memset(&s, 0, sizeof s);
    s.ctx = ctx;
    s.namer = namer;
    s.data = data;
    s.tmp = tmp;
    s.indent = indent;
    s.prog = out;
    s.err = err;
    ch_map *maps[] = {&s.node_val, &s.pow_val, &s.sqrt_val, &s.cbrt_val,
                      &s.inv_val, &s.den_of, &s.den_uses, &s.neg_uses,
                      &s.recip_val};
    for (size_t i = 0; i < sizeof maps / sizeof *maps; i++) ch_map_init(maps[i]);
    for (int phase = 0; phase < 2; phase++) {
        ch_map seen;
        ch_map_init(&seen);
        for (size_t i = 0; i < n && !s.failed; i++) find_denominators(&s, outs[i], &seen, phase);
        ch_map_free(&seen);
    }
    for (size_t i = 0; i < n && !s.failed; i++) {
        size_t v = lower(&s, outs[i]);
        if (!s.failed) {
            out->ref[i] = dup(s.val[v]);
            if (!out->ref[i]) fail(&s, CH_ERR_MEMORY, "out of memory in CSE");
        }
    }
    if (out->body.oom) fail(&s, CH_ERR_MEMORY, "out of memory in CSE");
    for (size_t i = 0; i < s.nval; i++) free(s.val[i]);
    free(s.val);
    for (size_t i = 0; i < sizeof maps / sizeof *maps; i++) ch_map_free(maps[i]);
    return s.failed ? (err ? (int)err->code : 1) : 0;
}

void ch_cse_prog_free(ch_cse_prog *p)
{
    if (p->ref)
        for (size_t i = 0; i < p->n; i++) free(p->ref[i]);
    free(p->ref);
    ch_buf_free(&p->body);
    memset(p, 0, sizeof *p);
}

void ch_opcount_print(ch_buf *b, const ch_opcount *c)
{
    ch_buf_printf(b, "%.0f add, %.0f mul, %.0f div, %.0f calls", c->add, c->mul,
                  c->div, c->call);
}
