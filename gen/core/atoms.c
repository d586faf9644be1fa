/* atoms.c — numbers, symbols and elementary functions as interned
 * nodes, with the functions' exact values and symmetries (expr.h). */
#include "core/expr_impl.h"
#include "core/mem.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- numbers ---------------------------------------------------------- */

const ch_expr *ch_num_q(ch_ctx *ctx, const fmpq_t v)
{
    candidate c;
    return ch_expr_intern(ctx, candidate_init(&c, CH_NUM, v));
}

const ch_expr *ch_num_si(ch_ctx *ctx, slong v)
{
    fmpq_t q;
    fmpq_init(q);
    fmpq_set_si(q, v, 1);
    const ch_expr *e = ch_num_q(ctx, q);
    fmpq_clear(q);
    return e;
}

const ch_expr *ch_num_frac(ch_ctx *ctx, slong p, slong q)
{
    if (q == 0) {
        ch_ctx_fail(ctx, CH_ERR_MATH, "division by zero");
        return NULL;
    }
    fmpq_t r;
    fmpq_init(r);
    fmpz_set_si(fmpq_numref(r), p);
    fmpz_set_si(fmpq_denref(r), q);
    fmpq_canonicalise(r);
    const ch_expr *e = ch_num_q(ctx, r);
    fmpq_clear(r);
    return e;
}

const ch_expr *ch_num_decimal(ch_ctx *ctx, const char *text, size_t len)
{
    char *digits = malloc(len + 1);
    if (!digits) {
        ch_ctx_fail(ctx, CH_ERR_MEMORY, "out of memory");
        return NULL;
    }
    size_t nd = 0, i = 0;
    long frac = 0, exp10 = 0;
    int seen_dot = 0;
    for (; i < len && (text[i] == '.' || (text[i] >= '0' && text[i] <= '9'));
         i++) {
        if (text[i] == '.') {
            if (seen_dot) break;
            seen_dot = 1;
        } else {
            digits[nd++] = text[i];
            frac += seen_dot;
        }
    }
    int ok = nd > 0;
    if (ok && i < len && (text[i] == 'e' || text[i] == 'E')) {
        int sign = 1;
        i++;
        if (i < len && (text[i] == '+' || text[i] == '-'))
            sign = text[i++] == '-' ? -1 : 1;
        ok = i < len;
        for (; i < len && text[i] >= '0' && text[i] <= '9'; i++)
            if (exp10 < 100000) exp10 = exp10 * 10 + (text[i] - '0');
        exp10 *= sign;
    }
    ok = ok && i == len;
    digits[nd] = 0;
    if (!ok) {
        free(digits);
        ch_ctx_fail(ctx, CH_ERR_MODEL, "malformed number '%.*s'",
                    (int)(len < 40 ? len : 40), text);
        return NULL;
    }
    long scale = exp10 - frac;
    if (scale > 4000 || scale < -4000 || nd > 4000) {
        free(digits);
        ch_ctx_fail(ctx, CH_ERR_LIMIT, "number '%.*s' is out of range",
                    (int)(len < 40 ? len : 40), text);
        return NULL;
    }
    fmpq_t q;
    fmpz_t p10;
    fmpq_init(q);
    fmpz_init(p10);
    fmpz_set_str(fmpq_numref(q), digits, 10);
    fmpz_ui_pow_ui(p10, 10, (ulong)(scale < 0 ? -scale : scale));
    if (scale >= 0)
        fmpz_mul(fmpq_numref(q), fmpq_numref(q), p10);
    else
        fmpz_set(fmpq_denref(q), p10);
    fmpq_canonicalise(q);
    const ch_expr *e = ch_num_q(ctx, q);
    fmpq_clear(q);
    fmpz_clear(p10);
    free(digits);
    return e;
}

int ch_is_zero(const ch_expr *e)
{
    return e && e->kind == CH_NUM && fmpq_is_zero(e->num);
}

int ch_is_one(const ch_expr *e)
{
    return e && e->kind == CH_NUM && fmpq_is_one(e->num);
}

int ch_is_int(const ch_expr *e)
{
    return e && e->kind == CH_NUM && fmpz_is_one(fmpq_denref(e->num));
}

/* ---- symbols ---------------------------------------------------------- */

static uint64_t str_hash(const char *s)
{
    uint64_t h = 1469598103934665603ULL;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ULL;
    return h ? h : 1;
}

const ch_expr *ch_symbol_find(const ch_ctx *ctx, const char *name)
{
    ch_sym *s = ch_map_get(&ctx->sym_by_hash, str_hash(name));
    if (s && strcmp(s->name, name) == 0) return s->node;
    if (!s) return NULL;
    for (size_t i = 0; i < ctx->nsyms; i++) /* hash collision: rare */
        if (strcmp(ctx->syms[i]->name, name) == 0) return ctx->syms[i]->node;
    return NULL;
}

const ch_expr *ch_symbol(ch_ctx *ctx, const char *name, ch_sym_kind kind,
                         const char *base, int order, int index)
{
    const ch_expr *found = ch_symbol_find(ctx, name);
    if (found) return found;
    if (ctx->nsyms == ctx->cap_syms) {
        size_t cap = ctx->cap_syms ? 2 * ctx->cap_syms : 64;
        ch_sym **syms = realloc(ctx->syms, cap * sizeof *syms);
        if (!syms) {
            ch_ctx_fail(ctx, CH_ERR_MEMORY, "out of memory");
            return NULL;
        }
        ctx->syms = syms;
        ctx->cap_syms = cap;
    }
    ch_sym *s = ch_ctx_alloc(ctx, sizeof *s);
    if (!s) return NULL;
    s->name = ch_ctx_strdup(ctx, name);
    s->base = ch_ctx_strdup(ctx, base ? base : name);
    if (!s->name || !s->base) return NULL;
    s->order = order;
    s->kind = kind;
    s->index = index;
    s->sid = (uint32_t)ctx->nsyms;
    if (!ctx->kind_fill[kind]) ctx->kind_word[kind] = (uint32_t)ctx->bitwords++;
    s->bit = 64 * ctx->kind_word[kind] + ctx->kind_fill[kind];
    ctx->kind_fill[kind] = (uint8_t)((ctx->kind_fill[kind] + 1) % 64);
    if (ctx->bitwords > ctx->nwords && ch_expr_words_grow(ctx, 2 * ctx->bitwords)) {
        ch_ctx_fail(ctx, CH_ERR_MEMORY, "out of memory");
        return NULL;
    }

    candidate c;
    ch_expr *cand = candidate_init(&c, CH_SYM, ctx->qzero);
    cand->pair[0].sym = s;
    const ch_expr *e = ch_expr_intern(ctx, cand);
    if (!e) return NULL;
    s->node = e;
    if (kind == CH_SYM_TIME) s->dot = ctx->one;
    ctx->syms[ctx->nsyms++] = s;
    uint64_t h = str_hash(name);
    if (!ch_map_get(&ctx->sym_by_hash, h)
        && ch_map_put(&ctx->sym_by_hash, h, s)) {
        ch_ctx_fail(ctx, CH_ERR_MEMORY, "out of memory");
        return NULL;
    }
    return e;
}

void ch_symbol_set_dot(ch_ctx *ctx, const ch_expr *sym, const ch_expr *dot)
{
    (void)ctx;
    if (sym && sym->kind == CH_SYM) ((ch_sym *)ch_sym_of(sym))->dot = dot;
}

const ch_expr *ch_pi(ch_ctx *ctx)
{
    return ch_symbol(ctx, "pi", CH_SYM_PI, NULL, 0, -1);
}

/* ---- functions -------------------------------------------------------- */

static const char *const fun_names[CH_F_COUNT] = {
    "sin", "cos", "tan", "asin", "acos", "atan", "atan2",
    "sinh", "cosh", "tanh", "exp", "log", "abs"};

const char *ch_fun_name(ch_fun f)
{
    return (unsigned)f < CH_F_COUNT ? fun_names[f] : "?";
}

int ch_fun_lookup(const char *name)
{
    for (int i = 0; i < CH_F_COUNT; i++)
        if (strcmp(fun_names[i], name) == 0) return i;
    return -1;
}

/* The canonical sign of an expression: -u is "negative" when its leading
 * coefficient (first term by canonical order) is negative. Exactly one of
 * u and -u is negative, so f(-u) = -f(u) can be normalised on it. */
static int is_negative(const ch_expr *e)
{
    switch (e->kind) {
    case CH_NUM:
    case CH_MUL: return fmpq_sgn(e->num) < 0;
    case CH_ADD: return fmpq_sgn(e->pair[0].c) < 0;
    default: return 0;
    }
}

/* sin(j pi/12) for the j (mod 24) where it is a simple radical. */
static const ch_expr *sin_pi_twelfths(ch_ctx *ctx, long j)
{
    j = ((j % 24) + 24) % 24;
    int sign = 1;
    if (j >= 12) {
        sign = -1;
        j -= 12;
    }
    if (j > 6) j = 12 - j;
    const ch_expr *v;
    switch (j) {
    case 0: v = ctx->zero; break;
    case 2: v = ch_num_frac(ctx, 1, 2); break;
    case 3: v = ch_mul(ctx, ch_num_frac(ctx, 1, 2), ch_sqrt(ctx, ch_num_si(ctx, 2))); break;
    case 4: v = ch_mul(ctx, ch_num_frac(ctx, 1, 2), ch_sqrt(ctx, ch_num_si(ctx, 3))); break;
    case 6: v = ctx->one; break;
    default: return NULL;
    }
    return sign < 0 ? ch_neg(ctx, v) : v;
}

/* For arguments c*pi with 12c an integer, the exact sine/cosine or NULL. */
static const ch_expr *trig_at_pi(ch_ctx *ctx, ch_fun f, const ch_expr *a)
{
    const ch_expr *pi = ch_symbol_find(ctx, "pi");
    if (!pi || (f != CH_F_SIN && f != CH_F_COS)) return NULL;
    fmpq_t c;
    fmpq_init(c);
    if (a == pi)
        fmpq_one(c);
    else if (a->kind == CH_MUL && a->n == 1 && a->pair[0].e == pi
             && fmpq_is_one(a->pair[0].c))
        ch_fmpq_set(c, a->num);
    else {
        fmpq_clear(c);
        return NULL;
    }
    fmpz_t j;
    fmpz_init(j);
    fmpz_mul_ui(j, fmpq_numref(c), 12);
    const ch_expr *r = NULL;
    if (fmpz_divisible(j, fmpq_denref(c))) {
        fmpz_divexact(j, j, fmpq_denref(c));
        long jj = (long)fmpz_fdiv_ui(j, 24);
        r = sin_pi_twelfths(ctx, f == CH_F_SIN ? jj : jj + 6);
    }
    fmpz_clear(j);
    fmpq_clear(c);
    return r;
}

static const ch_expr *intern_fun(ch_ctx *ctx, ch_fun f, const ch_expr *a,
                                 const ch_expr *b)
{
    candidate c;
    ch_expr *cand = candidate_init(&c, CH_FUN, ctx->qzero);
    cand->fun = (uint8_t)f;
    cand->n = b ? 2 : 1;
    cand->pair[0].e = a;
    cand->pair[1].e = b;
    return ch_expr_intern(ctx, cand);
}

/* Values at 0 of the functions that vanish or are 1 there (-1: none). */
static int value_at_zero(ch_fun f)
{
    switch (f) {
    case CH_F_SIN: case CH_F_TAN: case CH_F_ASIN: case CH_F_ATAN:
    case CH_F_SINH: case CH_F_TANH: case CH_F_ABS: return 0;
    case CH_F_COS: case CH_F_COSH: case CH_F_EXP: return 1;
    default: return -1;
    }
}

static int is_odd(ch_fun f)
{
    return f == CH_F_SIN || f == CH_F_TAN || f == CH_F_ASIN || f == CH_F_ATAN
        || f == CH_F_SINH || f == CH_F_TANH;
}

static int is_even(ch_fun f)
{
    return f == CH_F_COS || f == CH_F_COSH || f == CH_F_ABS;
}

const ch_expr *ch_fun1(ch_ctx *ctx, ch_fun f, const ch_expr *a)
{
    if (!a) return NULL;
    if ((unsigned)f >= CH_F_COUNT || f == CH_F_ATAN2) {
        ch_ctx_fail(ctx, CH_ERR_MATH, "bad function");
        return NULL;
    }
    if (ch_is_zero(a) && value_at_zero(f) >= 0)
        return ch_num_si(ctx, value_at_zero(f));
    if (f == CH_F_LOG && ch_is_one(a)) return ctx->zero;
    if (f == CH_F_ACOS && ch_is_zero(a))
        return ch_mul(ctx, ch_num_frac(ctx, 1, 2), ch_pi(ctx));
    if (f == CH_F_ABS && a->kind == CH_NUM) {
        fmpq_t v;
        fmpq_init(v);
        fmpq_abs(v, a->num);
        const ch_expr *e = ch_num_q(ctx, v);
        fmpq_clear(v);
        return e;
    }
    if (f == CH_F_LOG && a->kind == CH_FUN && a->fun == CH_F_EXP)
        return a->pair[0].e;
    if (f == CH_F_EXP && a->kind == CH_FUN && a->fun == CH_F_LOG)
        return a->pair[0].e;
    if (f == CH_F_ABS && a->kind == CH_FUN && a->fun == CH_F_ABS) return a;
    const ch_expr *exact = trig_at_pi(ctx, f, a);
    if (exact) return exact;
    if (is_negative(a) && (is_odd(f) || is_even(f))) {
        const ch_expr *pos = ch_fun1(ctx, f, ch_neg(ctx, a));
        return is_odd(f) ? ch_neg(ctx, pos) : pos;
    }
    return intern_fun(ctx, f, a, NULL);
}

const ch_expr *ch_atan2(ch_ctx *ctx, const ch_expr *y, const ch_expr *x)
{
    if (!y || !x) return NULL;
    if (ch_is_zero(y) && x->kind == CH_NUM && fmpq_sgn(x->num) > 0)
        return ctx->zero;
    return intern_fun(ctx, CH_F_ATAN2, y, x);
}
