/* expand.c — expansion (expand.h).
 *
 * Expansion works on the DAG with the canonical constructors and never
 * builds long chains of binary additions: a product of sums is multiplied
 * out as lists of (coefficient, term) pairs and each list is folded by one
 * ch_lincomb, which sorts and merges in O(n log n). */
#include "core/expand.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Expansion refuses to build sums with more terms than this, powers of
 * sums beyond EX_MAX_POW (their binomial coefficients alone would be
 * huge), and one product of sums that needs more term multiplications
 * than EX_MAX_WORK. */
#define EX_MAX_TERMS 50000
#define EX_MAX_POW 4096
#define EX_MAX_WORK 4000000.0
/* Nested re-expansion depth (products of roots folding back into sums). */
#define EX_MAX_DEPTH 64

/* A sum under construction: sum c[i] * e[i] (a constant is a term 1). */
typedef struct {
    fmpq *c;
    const ch_expr **e;
    size_t n, cap;
} tlist;

static void tl_init(tlist *l) { memset(l, 0, sizeof *l); }

static void tl_clear(tlist *l)
{
    for (size_t i = 0; i < l->n; i++) fmpq_clear(l->c + i);
    free(l->c);
    free(l->e);
    tl_init(l);
}

static int tl_push(ch_ctx *ctx, tlist *l, const fmpq_t c, const ch_expr *e)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 8;
        fmpq *nc = realloc(l->c, cap * sizeof *nc);
        const ch_expr **ne = nc ? realloc(l->e, cap * sizeof *ne) : NULL;
        if (nc) l->c = nc;
        if (!ne) {
            ch_ctx_fail(ctx, CH_ERR_MEMORY, "out of memory");
            return -1;
        }
        l->e = ne;
        l->cap = cap;
    }
    fmpq_init(l->c + l->n);
    fmpq_set(l->c + l->n, c);
    l->e[l->n++] = e;
    return 0;
}

/* The terms of an (expanded) expression s. */
static int tl_from(ch_ctx *ctx, tlist *l, const ch_expr *s)
{
    fmpq_t one;
    fmpq_init(one);
    fmpq_one(one);
    int rc = 0;
    if (s->kind == CH_ADD) {
        if (!fmpq_is_zero(s->num)) rc = tl_push(ctx, l, s->num, ch_one(ctx));
        for (uint32_t i = 0; i < s->n && !rc; i++)
            rc = tl_push(ctx, l, s->pair[i].c, s->pair[i].e);
    } else if (s->kind == CH_NUM) {
        if (!fmpq_is_zero(s->num)) rc = tl_push(ctx, l, s->num, ch_one(ctx));
    } else {
        rc = tl_push(ctx, l, one, s);
    }
    fmpq_clear(one);
    return rc;
}

static const ch_expr *tl_build(ch_ctx *ctx, const tlist *l)
{
    return ch_lincomb(ctx, NULL, l->n, l->c, l->e);
}

static const ch_expr *expand_rec(ch_ctx *ctx, const ch_expr *e, int depth);

/* A product that still has a sum raised to a positive integer power, as
 * (x+1)^(1/2) * (x+1)^(1/2) * y becomes after merging exponents. */
static int needs_expand(const ch_expr *t)
{
    if (t->kind != CH_MUL) return 0;
    for (uint32_t i = 0; i < t->n; i++)
        if (t->pair[i].e->kind == CH_ADD && fmpz_is_one(fmpq_denref(t->pair[i].c))
            && fmpq_sgn(t->pair[i].c) > 0)
            return 1;
    return 0;
}

/* l = l * s (s an expanded sum), term by term; *work counts the term
 * products of the whole expansion. */
static int tl_mul_sum(ch_ctx *ctx, tlist *l, const ch_expr *s, int depth,
                      double *work)
{
    tlist b, r;
    tl_init(&b);
    tl_init(&r);
    int rc = tl_from(ctx, &b, s);
    *work += (double)l->n * (double)b.n;
    if (!rc && ((double)l->n * (double)b.n > EX_MAX_TERMS
                || *work > EX_MAX_WORK)) {
        ch_ctx_fail(ctx, CH_ERR_LIMIT, "expansion exceeds %d terms",
                    EX_MAX_TERMS);
        rc = -1;
    }
    fmpq_t c;
    fmpq_init(c);
    for (size_t i = 0; i < l->n && !rc; i++)
        for (size_t j = 0; j < b.n && !rc; j++) {
            const ch_expr *t = ch_mul(ctx, l->e[i], b.e[j]);
            if (t && needs_expand(t)) t = expand_rec(ctx, t, depth + 1);
            fmpq_mul(c, l->c + i, b.c + j);
            rc = t ? tl_push(ctx, &r, c, t) : -1;
        }
    fmpq_clear(c);
    tl_clear(&b);
    if (!rc) {
        /* merge equal terms before the next factor multiplies them */
        const ch_expr *sum = tl_build(ctx, &r);
        tl_clear(l);
        rc = sum ? tl_from(ctx, l, sum) : -1;
    }
    tl_clear(&r);
    return rc;
}

/* Multinomial expansion of a power of a sum: the terms
 * k!/(a_1! ... a_n!) prod (c_i t_i)^(a_i) over sum a_i = k, built directly
 * (no intermediate powers), chosen exponent by exponent. */
typedef struct {
    ch_ctx *ctx;
    const tlist *b;
    tlist *out;
    const ch_expr **fac;
    int depth, rc;
} mn_state;

static void mn_rec(mn_state *m, size_t i, ulong r, const fmpq_t coef, size_t nf)
{
    if (m->rc) return;
    const tlist *b = m->b;
    if (r == 0 || i + 1 == b->n) {
        fmpq_t c;
        fmpq_init(c);
        fmpq_set(c, coef);
        if (r > 0) { /* the last term takes the rest */
            fmpq_t p;
            fmpq_init(p);
            fmpq_pow_si(p, b->c + i, (slong)r);
            fmpq_mul(c, c, p);
            fmpq_clear(p);
            m->fac[nf++] = ch_pow_si(m->ctx, b->e[i], (slong)r);
        }
        const ch_expr *t = ch_mul_n(m->ctx, nf, m->fac);
        if (t && needs_expand(t)) t = expand_rec(m->ctx, t, m->depth + 1);
        m->rc = t ? tl_push(m->ctx, m->out, c, t) : -1;
        fmpq_clear(c);
        return;
    }
    fmpq_t c, p;
    fmpz_t bin;
    fmpq_init(c);
    fmpq_init(p);
    fmpz_init(bin);
    for (ulong a = 0; a <= r && !m->rc; a++) {
        fmpz_bin_uiui(bin, r, a);
        fmpq_pow_si(p, b->c + i, (slong)a);
        fmpq_mul_fmpz(c, p, bin);
        fmpq_mul(c, c, coef);
        if (a > 0) m->fac[nf] = ch_pow_si(m->ctx, b->e[i], (slong)a);
        mn_rec(m, i + 1, r - a, c, nf + (a > 0));
    }
    fmpq_clear(c);
    fmpq_clear(p);
    fmpz_clear(bin);
}

/* s^k for an expanded sum s, expanded; NULL (limit error) when it would
 * have more than EX_MAX_TERMS terms. */
static const ch_expr *expand_power(ch_ctx *ctx, const ch_expr *s, ulong k,
                                   int depth)
{
    tlist b, out;
    tl_init(&b);
    tl_init(&out);
    const ch_expr *res = NULL;
    const ch_expr **fac = NULL;
    if (tl_from(ctx, &b, s)) goto oom;
    /* C(n + k - 1, k) terms */
    double count = 1;
    for (ulong i = 1; i <= k && count <= EX_MAX_TERMS; i++)
        count = count * (double)(b.n - 1 + i) / (double)i;
    if (count > EX_MAX_TERMS) {
        ch_ctx_fail(ctx, CH_ERR_LIMIT, "expansion exceeds %d terms",
                    EX_MAX_TERMS);
        goto out;
    }
    fac = malloc((b.n ? b.n : 1) * sizeof *fac);
    if (!fac) goto oom;
    mn_state m = {ctx, &b, &out, fac, depth, 0};
    fmpq_t one;
    fmpq_init(one);
    fmpq_one(one);
    mn_rec(&m, 0, k, one, 0);
    fmpq_clear(one);
    if (!m.rc) res = tl_build(ctx, &out);
    goto out;
oom:
    ch_ctx_fail(ctx, CH_ERR_MEMORY, "out of memory");
out:
    free(fac);
    tl_clear(&b);
    tl_clear(&out);
    return res;
}

static const ch_expr *expand_mul(ch_ctx *ctx, const ch_expr *e, int depth)
{
    size_t n = e->n, nf = 0, ns = 0;
    const ch_expr **f = calloc(n, sizeof *f);
    const ch_expr **sum = calloc(n, sizeof *sum);
    ulong *pw = malloc(n * sizeof *pw);
    const ch_expr *res = NULL;
    tlist l;
    tl_init(&l);
    if (!f || !sum || !pw) {
        ch_ctx_fail(ctx, CH_ERR_MEMORY, "out of memory");
        goto out;
    }
    for (size_t i = 0; i < n; i++) {
        const ch_pair *p = &e->pair[i];
        const ch_expr *b = expand_rec(ctx, p->e, depth);
        if (!b) goto out;
        if (b->kind == CH_ADD && fmpz_is_one(fmpq_denref(p->c))
            && fmpq_sgn(p->c) > 0) {
            if (!fmpz_fits_si(fmpq_numref(p->c))
                || fmpz_get_si(fmpq_numref(p->c)) > EX_MAX_POW) {
                ch_ctx_fail(ctx, CH_ERR_LIMIT, "expansion of a power too large");
                goto out;
            }
            sum[ns] = b;
            pw[ns++] = fmpz_get_ui(fmpq_numref(p->c));
        } else {
            f[nf] = ch_pow_q(ctx, b, p->c);
            if (!f[nf]) goto out;
            nf++;
        }
    }
    const ch_expr *m = ch_mul_n(ctx, nf, f);
    if (!m) goto out;
    if (ns == 0 && needs_expand(m)) {
        res = depth < EX_MAX_DEPTH ? expand_rec(ctx, ch_scale(ctx, e->num, m),
                                                depth + 1)
                                   : ch_scale(ctx, e->num, m);
        goto out;
    }
    if (tl_push(ctx, &l, e->num, m)) goto out;
    double work = 0;
    for (size_t i = 0; i < ns; i++) {
        const ch_expr *p = pw[i] == 1 ? sum[i]
                                      : expand_power(ctx, sum[i], pw[i], depth);
        if (!p || tl_mul_sum(ctx, &l, p, depth, &work)) goto out;
    }
    res = tl_build(ctx, &l);
out:
    tl_clear(&l);
    free(f);
    free(sum);
    free(pw);
    return res;
}

static const ch_expr *expand_add(ch_ctx *ctx, const ch_expr *e, int depth)
{
    const ch_expr **t = malloc(e->n * sizeof *t);
    fmpq *c = malloc(e->n * sizeof *c);
    const ch_expr *res = NULL;
    if (!t || !c) {
        ch_ctx_fail(ctx, CH_ERR_MEMORY, "out of memory");
        free(t);
        free(c);
        return NULL;
    }
    int same = 1;
    size_t i;
    for (i = 0; i < e->n; i++) {
        t[i] = expand_rec(ctx, e->pair[i].e, depth);
        if (!t[i]) break;
        same &= t[i] == e->pair[i].e;
        c[i] = *e->pair[i].c; /* shallow view, never cleared here */
    }
    if (i == e->n) res = same ? e : ch_lincomb(ctx, e->num, e->n, c, t);
    free(t);
    free(c);
    return res;
}

static const ch_expr *expand_node(ch_ctx *ctx, const ch_expr *e, int depth)
{
    switch (e->kind) {
    case CH_ADD:
        return expand_add(ctx, e, depth);
    case CH_MUL:
        return expand_mul(ctx, e, depth);
    case CH_POW: {
        const ch_expr *b = expand_rec(ctx, e->pair[0].e, depth);
        const ch_expr *x = expand_rec(ctx, e->pair[1].e, depth);
        if (b == e->pair[0].e && x == e->pair[1].e) return e;
        return ch_pow(ctx, b, x);
    }
    case CH_FUN: {
        const ch_expr *a = expand_rec(ctx, e->pair[0].e, depth);
        if (e->fun == CH_F_ATAN2) {
            const ch_expr *x = expand_rec(ctx, e->pair[1].e, depth);
            if (a == e->pair[0].e && x == e->pair[1].e) return e;
            return ch_atan2(ctx, a, x);
        }
        if (a == e->pair[0].e) return e;
        return ch_fun1(ctx, (ch_fun)e->fun, a);
    }
    default:
        return e;
    }
}

static const ch_expr *expand_rec(ch_ctx *ctx, const ch_expr *e, int depth)
{
    if (!e) return NULL;
    if (e->kind == CH_NUM || e->kind == CH_SYM) return e;
    ch_map *memo = ch_ctx_memo(ctx, CH_MEMO_EXPAND);
    const ch_expr *r = ch_map_get(memo, e->id);
    if (r) return r;
    if (depth > EX_MAX_DEPTH) {
        ch_ctx_fail(ctx, CH_ERR_LIMIT, "expansion nested too deeply");
        return NULL;
    }
    r = expand_node(ctx, e, depth);
    if (!r) return NULL;
    /* an expanded expression is its own expansion */
    if (ch_map_put(memo, e->id, (void *)r)
        || (r != e && ch_map_put(memo, r->id, (void *)r))) {
        ch_ctx_fail(ctx, CH_ERR_MEMORY, "out of memory");
        return NULL;
    }
    return r;
}

const ch_expr *ch_expand(ch_ctx *ctx, const ch_expr *e)
{
    return expand_rec(ctx, e, 0);
}

/* The expansion as T terms of total size S (tree nodes, without the sum
 * node), by expand's rules without cancellation: sums raised to positive
 * integer powers distribute, every other factor is one opaque node. */
typedef struct {
    double terms, size;
} ex_size;

typedef struct {
    ch_map memo; /* id -> index + 1 into val */
    ex_size *val;
    size_t n, cap;
} ex_sizer;

static ex_size ex_measure(ex_sizer *z, const ch_expr *e);

/* Tree size of x once expanded, printed as one node (a factor, an
 * argument). */
static double ex_printed(ex_sizer *z, const ch_expr *x)
{
    ex_size v = ex_measure(z, x);
    return v.size + (v.terms > 1 ? 1 : 0);
}

static ex_size ex_node(ex_sizer *z, const ch_expr *e)
{
    ex_size r = {1, 1};
    switch (e->kind) {
    case CH_ADD:
        r.terms = fmpq_is_zero(e->num) ? 0 : 1;
        r.size = r.terms;
        for (uint32_t i = 0; i < e->n; i++) {
            ex_size t = ex_measure(z, e->pair[i].e);
            r.terms += t.terms;
            r.size += t.size + t.terms; /* a coefficient per term, at most */
        }
        break;
    case CH_MUL:
        r.terms = 1;
        r.size = 1; /* the coefficient */
        for (uint32_t i = 0; i < e->n; i++) {
            const ch_expr *b = e->pair[i].e;
            const fmpq *c = e->pair[i].c;
            if (b->kind == CH_ADD && fmpz_is_one(fmpq_denref(c)) && fmpq_sgn(c) > 0
                && fmpz_cmp_ui(fmpq_numref(c), 64) <= 0) {
                double k = (double)fmpz_get_ui(fmpq_numref(c));
                ex_size t = ex_measure(z, b);
                double tk = pow(t.terms, k);
                /* every term of the product holds k terms of b */
                r.size = r.size * tk + r.terms * k * tk * (t.terms ? t.size / t.terms : 0);
                r.terms *= tk;
            } else {
                r.size = r.size + r.terms * (ex_printed(z, b) + 1);
            }
        }
        r.size += r.terms; /* a product node per term */
        break;
    case CH_POW:
    case CH_FUN:
        for (uint32_t i = 0; i < (e->kind == CH_POW ? 2u : e->n); i++)
            r.size += ex_printed(z, e->pair[i].e);
        break;
    default:
        break;
    }
    return r;
}

static ex_size ex_measure(ex_sizer *z, const ch_expr *e)
{
    size_t at = (size_t)(uintptr_t)ch_map_get(&z->memo, e->id);
    if (at) return z->val[at - 1];
    ex_size r = ex_node(z, e);
    if (z->n == z->cap) {
        size_t cap = z->cap ? 2 * z->cap : 64;
        ex_size *v = realloc(z->val, cap * sizeof *v);
        if (!v) return r; /* not memoized: slower, still a bound */
        z->val = v;
        z->cap = cap;
    }
    z->val[z->n++] = r;
    if (ch_map_put(&z->memo, e->id, (void *)(uintptr_t)z->n)) z->n--;
    return r;
}

double ch_expand_size_bound(const ch_expr *e)
{
    if (!e) return 0;
    ex_sizer z = {0};
    ch_map_init(&z.memo);
    ex_size r = ex_measure(&z, e);
    ch_map_free(&z.memo);
    free(z.val);
    return r.size + (r.terms > 1 ? 1 : 0);
}
