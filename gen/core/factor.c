/* factor.c — common factors out of sums (factor.h): a greedy
 * multivariate Horner scheme over the factors of the terms, with
 * sin(u)^2 + cos(u)^2 = 1 applied to the terms it brings together
 * (pythagoras below). */
#include "core/factor.h"

#include <stdlib.h>
#include <string.h>

/* One factor of a term: base^(exp - used), used counting the powers
 * already taken out. */
typedef struct {
    const ch_expr *base;
    const fmpq *exp;
    slong used;
} fct;

typedef struct {
    const fmpq *c; /* the term's coefficient */
    fct *f;
    size_t nf;
    const ch_expr *orig; /* the sum's node the factors come from */
} term;

typedef struct {
    ch_ctx *ctx;
    /* node id -> factored node: the context's, kept across calls (every
     * form factors kn_dyn's outputs, kn_acc them again with alpha) */
    ch_map *memo;
    int failed;
    int distribute; /* ch_dist: terms distributed over their small sums first */
} fz;

static const ch_expr *fz_expr(fz *z, const ch_expr *e);

/* Whether f still has a positive integer power to take out. */
static int fct_avail(const fct *f)
{
    return fmpz_is_one(fmpq_denref(f->exp)) && fmpz_cmp_si(fmpq_numref(f->exp), f->used) > 0;
}

static const ch_expr *fz_term(fz *z, const term *t)
{
    const ch_expr **fs = calloc(t->nf + 1, sizeof *fs);
    if (!fs) {
        z->failed = 1;
        return NULL;
    }
    size_t n = 0;
    fmpq_t x;
    fmpq_init(x);
    for (size_t i = 0; i < t->nf && !z->failed; i++) {
        fmpq_set(x, t->f[i].exp);
        fmpq_sub_si(x, x, t->f[i].used);
        if (fmpq_is_zero(x)) continue;
        const ch_expr *b = fz_expr(z, t->f[i].base);
        fs[n] = b ? ch_pow_q(z->ctx, b, x) : NULL;
        if (!fs[n]) z->failed = 1;
        n++;
    }
    fmpq_clear(x);
    const ch_expr *r = NULL;
    if (!z->failed) {
        r = n ? ch_mul_n(z->ctx, n, fs) : ch_one(z->ctx);
        if (r) r = ch_scale(z->ctx, t->c, r);
        if (!r) z->failed = 1;
    }
    free(fs);
    return r;
}

/* The bases the terms of a sum still have a power of, by how many terms
 * have one: counts in a map (base id -> count) and a max-heap of (count,
 * base), lowest id first on ties, whose entries are stale once their
 * base's count has dropped (counts only drop: each (base, count) is
 * pushed once). Counted once per sum and updated as groups leave:
 * counting the remaining terms again for every group was quadratic in
 * the terms of a sum (9% of the 200-trailer's emit instructions). */
typedef struct {
    uint32_t count, id;
    const ch_expr *base;
} fz_cand;

typedef struct {
    ch_map count;
    fz_cand *heap;
    size_t n, cap;
} fz_counts;

static int cand_above(const fz_cand *a, const fz_cand *b)
{
    return a->count > b->count || (a->count == b->count && a->id < b->id);
}

static int counts_push(fz_counts *c, const ch_expr *base, uint32_t count)
{
    if (c->n == c->cap) {
        size_t cap = c->cap ? 2 * c->cap : 64;
        fz_cand *h = realloc(c->heap, cap * sizeof *h);
        if (!h) return -1;
        c->heap = h, c->cap = cap;
    }
    size_t i = c->n++;
    fz_cand x = {count, base->id, base};
    for (; i > 0 && cand_above(&x, &c->heap[(i - 1) / 2]); i = (i - 1) / 2)
        c->heap[i] = c->heap[(i - 1) / 2];
    c->heap[i] = x;
    return 0;
}

static void counts_pop(fz_counts *c)
{
    fz_cand x = c->heap[--c->n];
    size_t i = 0;
    for (;;) {
        size_t k = 2 * i + 1;
        if (k >= c->n) break;
        if (k + 1 < c->n && cand_above(&c->heap[k + 1], &c->heap[k])) k++;
        if (!cand_above(&c->heap[k], &x)) break;
        c->heap[i] = c->heap[k];
        i = k;
    }
    if (c->n) c->heap[i] = x;
}

/* Adds d (+1 or -1) to the count of every base term t has a power of
 * (also of taken, whose power fz_partition has just taken out); 0, or -1
 * out of memory. Counts of 2 and more enter the heap. */
static int counts_add(fz_counts *c, const term *t, const ch_expr *taken, int d)
{
    for (size_t j = 0; j < t->nf; j++) {
        if (t->f[j].base != taken && !fct_avail(&t->f[j])) continue;
        uint64_t key = t->f[j].base->id;
        uint32_t n = (uint32_t)(uintptr_t)ch_map_get(&c->count, key) + (uint32_t)d;
        if (ch_map_put(&c->count, key, (void *)(uintptr_t)n)) return -1;
        if (d < 0 && n >= 2 && counts_push(c, t->f[j].base, n)) return -1;
    }
    return 0;
}

/* The base that most of the terms still have a power of (lowest id on
 * ties), or NULL when no base is shared by two terms. */
static const ch_expr *counts_best(fz_counts *c)
{
    while (c->n) {
        const fz_cand *top = &c->heap[0];
        uint32_t now = (uint32_t)(uintptr_t)ch_map_get(&c->count, top->id);
        if (now == top->count && now >= 2) return top->base;
        counts_pop(c);
    }
    return NULL;
}

/* Moves the terms with a power of b to the front, one power of b taken
 * out of each; their count. */
static size_t fz_partition(term *t, size_t nt, const ch_expr *b)
{
    size_t n1 = 0;
    for (size_t i = 0; i < nt; i++) {
        int has = 0;
        for (size_t j = 0; j < t[i].nf && !has; j++)
            if (t[i].f[j].base == b && fct_avail(&t[i].f[j])) t[i].f[j].used++, has = 1;
        if (has) {
            term tmp = t[i];
            t[i] = t[n1];
            t[n1++] = tmp;
        }
    }
    return n1;
}

/* t's node when fz_term would rebuild it unchanged: no power taken out
 * and every factor its own factored form; else NULL. */
static const ch_expr *fz_same(fz *z, const term *t)
{
    if (!t->orig) return NULL;
    for (size_t i = 0; i < t->nf; i++)
        if (t->f[i].used || fz_expr(z, t->f[i].base) != t->f[i].base) return NULL;
    return t->orig;
}

/* The sum of the terms without common factors taken out. The terms that
 * do not change enter as they are (most of them: building each anew was
 * a third of an emit). */
static const ch_expr *fz_plain(fz *z, const term *t, size_t nt)
{
    if (nt == 0) return ch_zero(z->ctx);
    if (nt == 1) return fz_term(z, &t[0]);
    const ch_expr **ts = calloc(nt, sizeof *ts);
    fmpq *c = calloc(nt, sizeof *c);
    fmpq_t one;
    fmpq_init(one);
    fmpq_one(one);
    if (!ts || !c) z->failed = 1;
    for (size_t i = 0; i < nt && !z->failed; i++) {
        /* shallow copies: read-only views of the coefficients */
        if ((ts[i] = fz_same(z, &t[i])))
            c[i] = *t[i].c;
        else if ((ts[i] = fz_term(z, &t[i])))
            c[i] = *one;
        else
            z->failed = 1;
    }
    const ch_expr *r = z->failed ? NULL : ch_lincomb(z->ctx, NULL, nt, c, ts);
    if (!r) z->failed = 1;
    free(ts);
    free(c);
    fmpq_clear(one);
    return r;
}

/* The sum of the terms, greedily as f1 * (sum of the terms with f1, f1
 * taken out) + f2 * (...) + ... + (the others), each f the factor most of
 * the remaining terms share (multivariate Horner): each group saves a
 * product per term but one. The groups are built in one loop and summed
 * once: summing them one by one (f1 * s1 + (f2 * s2 + ...)) would build
 * every partial sum, quadratic in the number of groups. The products are
 * created last group first, as that recursion did, so that the result,
 * whose terms are ordered by node id, prints the same. */
static const ch_expr *fz_sum(fz *z, term *t, size_t nt)
{
    if (z->failed) return NULL;
    if (nt < 2) return fz_plain(z, t, nt);
    /* group g: factor fb[g] times the sum s1[g]; at most nt / 2 groups */
    size_t cap = nt / 2 + 1, ng = 0;
    const ch_expr **fb = calloc(2 * cap + 1, sizeof *fb), **s1 = fb + cap;
    if (!fb) {
        z->failed = 1;
        return NULL;
    }
    size_t at = 0;
    const ch_expr *best;
    fz_counts cnt = {.heap = NULL};
    ch_map_init(&cnt.count);
    for (size_t i = 0; i < nt && !z->failed; i++)
        if (counts_add(&cnt, &t[i], NULL, 1)) z->failed = 1;
    for (size_t i = 0; i < cnt.count.cap && !z->failed; i++) {
        const ch_map_slot *sl = &cnt.count.slot[i];
        if (sl->key && (uintptr_t)sl->val >= 2 &&
            counts_push(&cnt, ch_ctx_node(z->ctx, (uint32_t)sl->key), (uint32_t)(uintptr_t)sl->val))
            z->failed = 1;
    }
    while (!z->failed && nt - at >= 2 && (best = counts_best(&cnt))) {
        size_t n1 = fz_partition(t + at, nt - at, best);
        for (size_t i = at; i < at + n1 && !z->failed; i++)
            if (counts_add(&cnt, &t[i], best, -1)) z->failed = 1;
        fb[ng] = fz_expr(z, best);
        s1[ng] = fz_sum(z, t + at, n1);
        if (!fb[ng] || !s1[ng]) z->failed = 1;
        ng++;
        at += n1;
    }
    ch_map_free(&cnt.count);
    free(cnt.heap);
    const ch_expr *rest = z->failed ? NULL : fz_plain(z, t + at, nt - at);
    const ch_expr *r = NULL;
    if (rest) {
        /* the products, last group first, each with its coefficient-free
         * part created right after it (as ch_add of it would) */
        s1[ng] = rest;
        for (size_t g = ng; g-- > 0 && !z->failed;) {
            const ch_expr *p = ch_mul(z->ctx, fb[g], s1[g]);
            if (!p || !ch_add(z->ctx, p, g + 1 == ng ? rest : ch_zero(z->ctx)))
                z->failed = 1;
            s1[g] = p;
        }
        if (!z->failed) r = ng ? ch_add_n(z->ctx, ng + 1, s1) : rest;
    }
    if (!r) z->failed = 1;
    free(fb);
    return r;
}

/* The index of t's factor f(a)^2 (f = CH_F_SIN or CH_F_COS) with the
 * given argument (any when a is NULL), or t->nf. */
static size_t square_of(const term *t, int f, const ch_expr *a)
{
    for (size_t i = 0; i < t->nf; i++) {
        const ch_expr *b = t->f[i].base;
        if (b->kind == CH_FUN && b->fun == f && b->n == 1 && (!a || b->pair[0].e == a) &&
            t->f[i].used == 0 && fmpz_is_one(fmpq_denref(t->f[i].exp)) &&
            fmpz_cmp_si(fmpq_numref(t->f[i].exp), 2) == 0)
            return i;
    }
    return t->nf;
}

/* Whether t and u have the same coefficient and the same factors besides
 * t's factor i and u's factor j (factor lists in the DAG's canonical
 * order). */
static int same_rest(const term *t, size_t i, const term *u, size_t j)
{
    if (t->nf != u->nf || !fmpq_equal(t->c, u->c)) return 0;
    for (size_t a = 0, b = 0; a < t->nf; a++, b++) {
        if (a == i) a++;
        if (b == j) b++;
        if (a >= t->nf || b >= u->nf) return a >= t->nf && b >= u->nf;
        if (t->f[a].base != u->f[b].base || t->f[a].used != u->f[b].used ||
            !fmpq_equal(t->f[a].exp, u->f[b].exp))
            return 0;
    }
    return 1;
}

/* c cos(a)^2 R + c sin(a)^2 R = c R: pairs of terms merged, the cos^2
 * factor dropped from the first, the second removed. The new count. */
static size_t pythagoras(term *t, size_t nt)
{
    for (size_t i = 0; i < nt; i++) {
        size_t fi = square_of(&t[i], CH_F_COS, NULL);
        if (fi == t[i].nf) continue;
        const ch_expr *a = t[i].f[fi].base->pair[0].e;
        for (size_t j = 0; j < nt; j++) {
            if (j == i) continue;
            size_t fj = square_of(&t[j], CH_F_SIN, a);
            if (fj == t[j].nf || !same_rest(&t[i], fi, &t[j], fj)) continue;
            t[i].f[fi].used = 2; /* cos(a)^0 */
            t[j] = t[--nt];
            if (i == nt) i = j; /* t[i] moved to j */
            i--;                /* look at t[i] again: another cos^2 */
            break;
        }
    }
    return nt;
}


/* The index in the product x of the sum it distributes over, or x->n
 * (also for x not a product). With two small sums or more: none
 * (CH_DIST_ONE), or the oldest node (CH_DIST_OLDEST): in a product of a
 * coefficient of the dynamics and a value built from it later, such as
 * G_d's cos(th_i - th_j) times an unknown X_j of ch_kkt_reduced, it is
 * the coefficient that holds the row's factors. */
static size_t dist_at(const fz *z, const ch_expr *x)
{
    if (!z->distribute || x->kind != CH_MUL || !fmpq_is_one(x->num)) return x->n;
    size_t at = x->n;
    for (size_t j = 0; j < x->n; j++) {
        const ch_expr *y = x->pair[j].e;
        if (y->kind != CH_ADD || !fmpq_is_one(x->pair[j].c) ||
            y->n + !fmpq_is_zero(y->num) > CH_FACTOR_DIST_MAX)
            continue;
        if (at < x->n && z->distribute == CH_DIST_ONE) return x->n;
        if (at == x->n || y->id < x->pair[at].e->id) at = j;
    }
    return at;
}

/* The factors of a term of a sum (x, or its factors) appended to f. */
static size_t put_factors(fct *f, const ch_expr *x, const fmpq *one, size_t skip)
{
    size_t at = 0;
    if (x->kind == CH_MUL && fmpq_is_one(x->num)) {
        for (size_t j = 0; j < x->n; j++)
            if (j != skip) f[at++] = (fct){x->pair[j].e, x->pair[j].c, 0};
    } else {
        f[at++] = (fct){x, one, 0};
    }
    return at;
}

/* The factors f[0..n) in the canonical order (by node id), powers of one
 * base merged (their exponent summed into q[*qi], the next free slot);
 * the new count. */
static size_t merge_factors(fct *f, size_t n, fmpq *q, size_t *qi)
{
    for (size_t i = 1; i < n; i++) {
        fct x = f[i];
        size_t j = i;
        for (; j > 0 && f[j - 1].base->id > x.base->id; j--) f[j] = f[j - 1];
        f[j] = x;
    }
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        if (m && f[m - 1].base == f[i].base) {
            fmpq_add(q + *qi, f[m - 1].exp, f[i].exp);
            f[m - 1].exp = q + (*qi)++;
            continue;
        }
        f[m++] = f[i];
    }
    return m;
}

static const ch_expr *fz_add(fz *z, const ch_expr *e)
{
    /* the terms and factors once distributed */
    size_t nt = 0, nf = 0, nq = 0;
    for (size_t i = 0; i < e->n; i++) {
        const ch_expr *x = e->pair[i].e;
        size_t d = dist_at(z, x);
        if (x->kind == CH_MUL && d < x->n) {
            const ch_expr *y = x->pair[d].e;
            for (size_t k = 0; k < y->n; k++)
                nf += x->n - 1 + (y->pair[k].e->kind == CH_MUL ? y->pair[k].e->n : 1);
            nf += fmpq_is_zero(y->num) ? 0 : x->n - 1;
            nq += y->n + !fmpq_is_zero(y->num);
            nt += y->n + !fmpq_is_zero(y->num);
        } else {
            nf += x->kind == CH_MUL ? x->n : 1;
            nt++;
        }
    }
    term *t = calloc(nt + 1, sizeof *t);
    fct *f = calloc(nf + 1, sizeof *f);
    /* coefficients of the distributed terms, exponents of merged factors,
     * and the 1 of single factors */
    nq += nf;
    fmpq *q = calloc(nq + 1, sizeof *q);
    const ch_expr *r = NULL;
    if (t && f && q) {
        for (size_t i = 0; i <= nq; i++) fmpq_init(q + i);
        const fmpq *one = q + nq;
        fmpq_one(q + nq);
        size_t at = 0, ti = 0, qi = 0;
        for (size_t i = 0; i < e->n; i++) {
            const ch_expr *x = e->pair[i].e;
            size_t d = dist_at(z, x);
            if (!(x->kind == CH_MUL && d < x->n)) {
                t[ti] = (term){e->pair[i].c, f + at, 0, x};
                at += t[ti].nf = put_factors(f + at, x, one, (size_t)-1);
                ti++;
                continue;
            }
            const ch_expr *y = x->pair[d].e;
            for (size_t k = 0; k <= y->n; k++) {
                if (k == y->n && fmpq_is_zero(y->num)) break;
                fmpq_mul(q + qi, e->pair[i].c, k < y->n ? y->pair[k].c : y->num);
                t[ti] = (term){q + qi++, f + at, 0, NULL};
                at += put_factors(f + at, x, one, d);
                if (k < y->n) at += put_factors(f + at, y->pair[k].e, one, (size_t)-1);
                t[ti].nf = merge_factors(t[ti].f, (size_t)(f + at - t[ti].f), q, &qi);
                at = (size_t)(t[ti].f - f) + t[ti].nf;
                ti++;
            }
        }
        nt = pythagoras(t, ti);
        r = fz_sum(z, t, nt);
        if (r && !fmpq_is_zero(e->num)) {
            const ch_expr *c = ch_num_q(z->ctx, e->num);
            r = c ? ch_add(z->ctx, r, c) : NULL;
        }
        for (size_t i = 0; i <= nq; i++) fmpq_clear(q + i);
    }
    if (!r) z->failed = 1;
    free(t);
    free(f);
    free(q);
    return r;
}

static const ch_expr *fz_expr(fz *z, const ch_expr *e)
{
    if (z->failed || !e) return NULL;
    if (e->kind == CH_NUM || e->kind == CH_SYM) return e;
    const ch_expr *r = ch_map_get(z->memo, e->id);
    if (r) return r;
    switch (e->kind) {
    case CH_ADD:
        r = fz_add(z, e);
        break;
    case CH_MUL: {
        const ch_expr **fs = calloc(e->n + 1, sizeof *fs);
        if (!fs) break;
        size_t i;
        for (i = 0; i < e->n; i++) {
            const ch_expr *b = fz_expr(z, e->pair[i].e);
            if (!b || !(fs[i] = ch_pow_q(z->ctx, b, e->pair[i].c))) break;
        }
        if (i == e->n) r = ch_mul_n(z->ctx, e->n, fs);
        if (r) r = ch_scale(z->ctx, e->num, r);
        free(fs);
        break;
    }
    case CH_POW: {
        const ch_expr *b = fz_expr(z, e->pair[0].e), *x = fz_expr(z, e->pair[1].e);
        r = b && x ? ch_pow(z->ctx, b, x) : NULL;
        break;
    }
    case CH_FUN: {
        if (e->n == 1) {
            const ch_expr *a = fz_expr(z, e->pair[0].e);
            r = a ? ch_fun1(z->ctx, (ch_fun)e->fun, a) : NULL;
        } else if (e->n == 2 && e->fun == CH_F_ATAN2) {
            const ch_expr *a = fz_expr(z, e->pair[0].e), *b = fz_expr(z, e->pair[1].e);
            r = a && b ? ch_atan2(z->ctx, a, b) : NULL;
        } else {
            r = e;
        }
        break;
    }
    default:
        r = e;
    }
    if (!r || ch_map_put(z->memo, e->id, (void *)r)) {
        z->failed = 1;
        return NULL;
    }
    return r;
}

const ch_expr **ch_factor_sums(ch_ctx *ctx, size_t n, const ch_expr *const *in,
                               ch_dist distribute)
{
    static const ch_memo_id memo[3] = {CH_MEMO_FACTOR, CH_MEMO_FACTOR_DIST,
                                       CH_MEMO_FACTOR_OLDEST};
    fz z = {ctx, ch_ctx_memo(ctx, memo[distribute]), 0, distribute};
    const ch_expr **out = ch_ctx_alloc(ctx, (n ? n : 1) * sizeof *out);
    if (!out) z.failed = 1;
    for (size_t i = 0; i < n && !z.failed; i++)
        if (!(out[i] = fz_expr(&z, in[i]))) z.failed = 1;
    if (z.failed) {
        /* a node limit: the caller keeps the outputs as they are */
        ch_ctx_clear_error(ctx);
        return NULL;
    }
    return out;
}
