/* cse_pass.c — the algebraic passes of the CSE (cse.c's essay, items 1-4):
 * flattening, factoring of sums, chains of sums, shared sub-products and
 * sub-sums. Each rebuilds the values reachable from the outputs through a
 * replacement table. */
#include "codegen/cse_impl.h"

#include <stdlib.h>
#include <string.h>

/* Uses of every value by the values reachable from the outputs (an output
 * counts as a use; a repeated operand counts each time). Operands have
 * smaller numbers than their users, so one downward sweep suffices. */
static uint32_t *uses(cse *s, const uint32_t *outs, size_t n)
{
    uint32_t *rc = calloc(s->nn ? s->nn : 1, sizeof *rc);
    if (!rc) {
        ch_cse_oom(s);
        return NULL;
    }
    for (size_t i = 0; i < n; i++) rc[outs[i]]++;
    for (uint32_t v = s->nn; v-- > 0;) {
        if (!rc[v]) continue;
        const node *a = s->nd[v];
        for (uint32_t i = 0; i < a->n + a->nd; i++) rc[a->op[i]]++;
    }
    return rc;
}

/* A growable list of values. */
typedef struct {
    uint32_t *v;
    size_t n, cap;
    int heap; /* v was allocated here (else a caller's buffer) */
} vec;

static int vec_push(vec *x, uint32_t v)
{
    if (x->n == x->cap) {
        /* (v may start as a caller's buffer: the first growth moves the
         * items to the heap) */
        size_t cap = x->cap ? 2 * x->cap : 16;
        uint32_t *p = malloc(cap * sizeof *p);
        if (!p) return -1;
        if (x->n) memcpy(p, x->v, x->n * sizeof *p);
        if (x->heap) free(x->v);
        x->v = p;
        x->cap = cap;
        x->heap = 1;
    }
    x->v[x->n++] = v;
    return 0;
}

/* Whether the product b (with rc uses) is merged into a product that has it
 * as a factor: when used there only, or when it is just a sign (-x). */
static int merge_factor(const node *b, uint32_t rc)
{
    return b->kind == K_MUL && b->nd == 0 &&
           (rc == 1 || (b->n == 1 && is_pm1(b->k)));
}

/* Whether the term c * b of a sum, b a sum with rc uses, joins the sum's
 * terms when flattened: used there only, with coefficient +-1. */
static int splice_sum(const node *b, uint32_t rc, const fmpq *c)
{
    return b->kind == K_ADD && rc == 1 && is_pm1(c);
}

/* Whether the term c * b (b with rc uses) of a sum changes when flattened
 * (see rebuild). */
static int fold_term(const node *b, uint32_t rc, const fmpq *c)
{
    if (b->kind == K_ADD) return splice_sum(b, rc, c);
    if (b->kind != K_MUL || b->n == 0) return 0;
    if (b->n == 1 && b->nd == 0 && (rc == 1 || is_pm1(b->k))) return 1;
    return rc == 1 && !is_pm1(c);
}

/* The value a with its operands replaced through rep (and, in mode
 * flatten, single-use products merged into products and single-use sums
 * into sums). */
static uint32_t rebuild(cse *s, uint32_t v, const uint32_t *rep, const uint32_t *rc,
                        int flatten)
{
    const node *a = s->nd[v];
    if (a->kind == K_LEAF) return v;
    int same = 1;
    for (uint32_t i = 0; i < a->n + a->nd && same; i++) {
        uint32_t o = a->op[i];
        same = rep[o] == o && !(flatten && a->kind == K_MUL && i < a->n &&
                                merge_factor(s->nd[o], rc[o])) &&
               !(flatten && a->kind == K_ADD && fold_term(s->nd[o], rc[o], a->c + i));
    }
    if (same) return v; /* nothing to replace: the value itself */
    if (a->kind == K_CALL)
        return ch_cse_mk_call(s, a->fn, rep[a->op[0]], a->n > 1 ? rep[a->op[1]] : NONE);
    if (a->kind == K_ADD) {
        /* +-(a single-use sum) is spliced in (its terms may cancel ours):
         * the number of terms after splicing */
        uint32_t nt = 0;
        for (uint32_t i = 0; i < a->n; i++) {
            const node *b = s->nd[rep[a->op[i]]];
            nt += flatten && splice_sum(b, rc[a->op[i]], a->c + i) ? b->n : 1;
        }
        /* the terms on the stack when few */
        uint32_t tst[16], *t = nt <= 16 ? tst : malloc(nt * sizeof *t);
        if (!t) {
            ch_cse_oom(s);
            return 0;
        }
        fmpq cst[16], *c = nt <= 16 ? cst : _fmpq_vec_init(nt);
        if (c == cst)
            for (uint32_t i = 0; i < nt; i++) fmpq_init(c + i);
        fmpq_t q, k;
        fmpq_init(q);
        fmpq_init(k);
        ch_fmpq_set(k, a->k);
        uint32_t m = 0;
        for (uint32_t i = 0; i < a->n && !s->failed; i++) {
            uint32_t o = a->op[i], r = rep[o];
            const node *b = s->nd[r];
            if (flatten && splice_sum(b, rc[o], a->c + i)) {
                fmpq_addmul(k, a->c + i, b->k);
                for (uint32_t j = 0; j < b->n; j++, m++) {
                    fmpq_mul(c + m, a->c + i, b->c + j);
                    t[m] = b->op[j];
                }
                continue;
            }
            ch_fmpq_set(c + m, a->c + i);
            t[m] = r;
            m++;
            if (!flatten || b->kind != K_MUL || b->n == 0) continue;
            if (b->n == 1 && b->nd == 0 && (rc[o] == 1 || is_pm1(b->k))) {
                /* c * (k * x) is (c k) * x: no statement (-x is never one) */
                fmpq_mul(c + m - 1, c + m - 1, b->k);
                t[m - 1] = b->op[0];
            } else if (rc[o] == 1 && !is_pm1(c + m - 1)) {
                /* c * (k * x * y) as sign * (|c| k x y): the magnitude joins the
                 * product, where the sharing pass can share it with others */
                fmpq_abs(q, c + m - 1);
                fmpq_mul(q, q, b->k);
                t[m - 1] = ch_cse_mk_mul(s, q, b->op, b->n, b->op + b->n, b->nd);
                fmpq_set_si(c + m - 1, fmpq_sgn(c + m - 1), 1);
            }
        }
        uint32_t r = s->failed ? 0 : ch_cse_mk_add(s, k, t, c, m);
        if (c != cst)
            _fmpq_vec_clear(c, nt);
        else
            for (uint32_t i = 0; i < nt; i++) fmpq_clear(c + i);
        fmpq_clear(q);
        fmpq_clear(k);
        if (t != tst) free(t);
        return r;
    }
    /* (vec on a stack buffer: most products are short) */
    uint32_t nst[32], dst[16];
    vec num = {nst, 0, 32, 0}, den = {dst, 0, 16, 0};
    fmpq_t k;
    fmpq_init(k);
    ch_fmpq_set(k, a->k);
    int bad = 0;
    for (uint32_t i = 0; i < a->n; i++) {
        uint32_t r = rep[a->op[i]];
        const node *b = s->nd[r];
        if (flatten && merge_factor(b, rc[a->op[i]])) {
            fmpq_mul(k, k, b->k);
            for (uint32_t j = 0; j < b->n; j++) bad |= vec_push(&num, b->op[j]);
        } else {
            bad |= vec_push(&num, r);
        }
    }
    for (uint32_t i = 0; i < a->nd; i++) bad |= vec_push(&den, rep[a->op[a->n + i]]);
    uint32_t r = 0;
    if (bad)
        ch_cse_oom(s);
    else
        r = ch_cse_mk_mul(s, k, num.v, (uint32_t)num.n, den.v, (uint32_t)den.n);
    fmpq_clear(k);
    if (num.heap) free(num.v);
    if (den.heap) free(den.v);
    return r;
}

/* -- factoring of sums -- */

/* c * prod(f[0..nf)), f sorted. */
typedef struct {
    fmpq_t c;
    uint32_t *f;
    uint32_t nf;
} mono;

static void mono_clear(mono *m)
{
    fmpq_clear(m->c);
    free(m->f);
}

typedef struct {
    uint64_t h;
    const mono *m;
    size_t i; /* its index among the monomials */
} qh;

static int cmp_qh(const void *a, const void *b)
{
    const qh *x = a, *y = b;
    if (x->h != y->h) return (x->h > y->h) - (x->h < y->h);
    /* equal hashes: group equal magnitudes together */
    int c = fmpz_cmpabs(fmpq_numref(x->m->c), fmpq_numref(y->m->c));
    return c ? c : fmpz_cmp(fmpq_denref(x->m->c), fmpq_denref(y->m->c));
}

/* Term list of a sum under construction. */
typedef struct {
    mono *t;
    size_t n, cap;
} monos;

static mono *monos_add(monos *l)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 8;
        mono *p = realloc(l->t, cap * sizeof *p);
        if (!p) return NULL;
        l->t = p;
        l->cap = cap;
    }
    mono *m = &l->t[l->n++];
    fmpq_init(m->c);
    m->f = NULL;
    m->nf = 0;
    return m;
}

static void factor_sum(cse *s, mono **m, size_t cnt, mono *out);

/* out = the sum of the monomials sel[0..na), which all contain f (a value,
 * or the coefficient magnitude q when f is NONE), factored, times f. */
static void pull(cse *s, mono *const *sel, size_t na, uint32_t f, const fmpq_t q, mono *out)
{
    /* the monomials, their pointers and their factors in one block */
    size_t nf = 0;
    for (size_t i = 0; i < na; i++) nf += sel[i]->nf;
    char *blk = malloc(na * (sizeof(mono) + sizeof(mono *)) + (nf ? nf : 1) * sizeof(uint32_t));
    if (!blk) {
        ch_cse_oom(s);
        return;
    }
    mono *in = (mono *)blk;
    mono **inp = (mono **)(in + na);
    uint32_t *fs = (uint32_t *)(inp + na);
    size_t ok = 0;
    for (size_t i = 0; i < na; i++) {
        const mono *y = sel[i];
        mono *x = &in[ok];
        fmpq_init(x->c);
        x->nf = y->nf - (f != NONE);
        x->f = fs;
        fs += x->nf;
        inp[ok++] = x;
        if (f == NONE) {
            fmpq_div(x->c, y->c, q);
            memcpy(x->f, y->f, x->nf * sizeof *x->f);
        } else {
            ch_fmpq_set(x->c, y->c);
            uint32_t k = 0, removed = 0;
            for (uint32_t j = 0; j < y->nf; j++) {
                if (!removed && y->f[j] == f) {
                    removed = 1;
                    continue;
                }
                x->f[k++] = y->f[j];
            }
        }
    }
    if (!s->failed) factor_sum(s, inp, ok, out);
    if (s->failed) {
    } else if (f == NONE) {
        fmpq_mul(out->c, out->c, q);
    } else {
        uint32_t *g = realloc(out->f, (out->nf + 1) * sizeof *g);
        if (!g) {
            ch_cse_oom(s);
        } else {
            uint32_t j = out->nf;
            while (j > 0 && g[j - 1] > f) g[j] = g[j - 1], j--;
            g[j] = f;
            out->f = g;
            out->nf++;
        }
    }
    for (size_t i = 0; i < ok; i++) fmpq_clear(in[i].c);
    free(blk);
}

/* A candidate common factor of a sum's monomials: a value (kind 0, key its
 * number) or a coefficient magnitude (kind 1, key its hash), contained in
 * the monomials ix[lo..hi); count is an upper bound of how many of them are
 * not yet taken (exact when it is popped and rechecked). */
typedef struct {
    size_t count, lo, hi;
    int kind;
    uint64_t key;
} cand;

static int cand_before(const cand *a, const cand *b)
{
    if (a->count != b->count) return a->count > b->count;
    if (a->kind != b->kind) return a->kind < b->kind;
    return a->key < b->key;
}

static void heap_push(cand *h, size_t *n, cand c)
{
    size_t i = (*n)++;
    while (i > 0 && cand_before(&c, &h[(i - 1) / 2])) {
        h[i] = h[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    h[i] = c;
}

static cand heap_pop(cand *h, size_t *n)
{
    cand top = h[0], last = h[--*n];
    size_t i = 0;
    for (;;) {
        size_t l = 2 * i + 1, b = i;
        const cand *best = &last;
        if (l < *n && cand_before(&h[l], best)) b = l, best = &h[l];
        if (l + 1 < *n && cand_before(&h[l + 1], best)) b = l + 1;
        if (b == i) break;
        h[i] = h[b];
        i = b;
    }
    if (*n) h[i] = last;
    return top;
}

static uint32_t mono_value(cse *s, const mono *m)
{
    return ch_cse_mk_mul(s, m->c, m->f, m->nf, NULL, 0);
}

/* out = the sum of m[0..cnt) (cnt >= 1) as one monomial c * prod(f),
 * greedily factored: while some factor is common to two or more
 * monomials, the most frequent one is pulled out of those. */
static void factor_sum(cse *s, mono **m, size_t cnt, mono *out)
{
    if (cnt == 1 || s->failed) {
        ch_fmpq_set(out->c, m[0]->c);
        out->nf = m[0]->nf;
        out->f = malloc((out->nf ? out->nf : 1) * sizeof *out->f);
        if (!out->f) {
            ch_cse_oom(s);
            out->nf = 0;
            return;
        }
        memcpy(out->f, m[0]->f, out->nf * sizeof *out->f);
        return;
    }
    /* lazy greedy: candidates in a heap by count; a popped candidate whose
     * monomials were partly taken meanwhile goes back with its true count
     * (counts only decrease, so the choice is the greedy one) */
    size_t tot = 0;
    for (size_t i = 0; i < cnt; i++) tot += m[i]->nf;
    /* the scratch arrays in one block (8-byte items first, then the bytes) */
    size_t bytes = (tot ? tot : 1) * sizeof(uint64_t) + (tot + cnt) * sizeof(size_t) +
                   (tot + cnt) * sizeof(cand) + cnt * sizeof(qh) + 2 * cnt * sizeof(mono *) + cnt;
    char *blk = malloc(bytes);
    if (!blk) {
        ch_cse_oom(s);
        return;
    }
    uint64_t *pr = (uint64_t *)blk;
    size_t *ix = (size_t *)(pr + (tot ? tot : 1));
    cand *heap = (cand *)(ix + tot + cnt);
    qh *ch = (qh *)(heap + tot + cnt);
    mono **sel = (mono **)(ch + cnt), **rem = sel + cnt;
    char *taken = (char *)(rem + cnt);
    monos terms = {0};
    size_t nh = 0, nx = 0, np = 0, nc = 0, rest = 0;
    memset(taken, 0, cnt);
    for (size_t i = 0; i < cnt; i++) {
        const mono *x = m[i];
        for (uint32_t j = 0; j < x->nf; j++)
            if (j == 0 || x->f[j] != x->f[j - 1]) pr[np++] = (uint64_t)x->f[j] << 32 | i;
        if (x->nf && !is_pm1(x->c)) ch[nc].h = ch_cse_hash_absq(x->c), ch[nc].m = x, ch[nc].i = i, nc++;
    }
    ch_sort_u64(pr, np);
    for (size_t i = 0; i < np;) {
        size_t j = i;
        while (j < np && pr[j] >> 32 == pr[i] >> 32) ix[nx + (j - i)] = (size_t)(uint32_t)pr[j], j++;
        if (j - i >= 2)
            heap_push(heap, &nh, (cand){j - i, nx, nx + (j - i), 0, pr[i] >> 32});
        nx += j - i;
        i = j;
    }
    if (nc >= 2) qsort(ch, nc, sizeof *ch, cmp_qh);
    for (size_t i = 0; i < nc;) {
        size_t j = i;
        while (j < nc && ch[j].h == ch[i].h &&
               fmpz_cmpabs(fmpq_numref(ch[j].m->c), fmpq_numref(ch[i].m->c)) == 0 &&
               fmpz_equal(fmpq_denref(ch[j].m->c), fmpq_denref(ch[i].m->c)))
            j++;
        for (size_t k = i; k < j; k++) ix[nx + (k - i)] = ch[k].i;
        if (j - i >= 2) heap_push(heap, &nh, (cand){j - i, nx, nx + (j - i), 1, ch[i].h});
        nx += j - i;
        i = j;
    }
    fmpq_t q;
    fmpq_init(q);
    while (nh && !s->failed) {
        cand c = heap_pop(heap, &nh);
        size_t live = 0;
        for (size_t k = c.lo; k < c.hi; k++) live += !taken[ix[k]];
        if (live < 2) continue;
        if (live < c.count) {
            c.count = live;
            heap_push(heap, &nh, c);
            continue;
        }
        size_t na = 0;
        for (size_t k = c.lo; k < c.hi; k++)
            if (!taken[ix[k]]) taken[ix[k]] = 1, sel[na++] = m[ix[k]];
        if (c.kind) fmpq_abs(q, sel[0]->c);
        mono *t = monos_add(&terms);
        if (!t) {
            ch_cse_oom(s);
            break;
        }
        pull(s, sel, na, c.kind ? NONE : (uint32_t)c.key, q, t);
    }
    fmpq_clear(q);
    for (size_t i = 0; i < cnt; i++)
        if (!taken[i]) rem[rest++] = m[i];
    m = rem;
    if (terms.n == 1 && rest == 0) {
        *out = terms.t[0];
        free(terms.t);
        terms.t = NULL;
        terms.n = 0;
        goto out_free;
    }
    /* a sum of the pulled groups and the remaining monomials */
    size_t nt = terms.n + rest;
    uint32_t *v = malloc((nt ? nt : 1) * sizeof *v);
    fmpq *c = _fmpq_vec_init(nt ? nt : 1);
    fmpq_t k;
    fmpq_init(k);
    if (!v) ch_cse_oom(s);
    size_t n = 0;
    for (size_t i = 0; i < nt && v && !s->failed; i++) {
        const mono *t = i < terms.n ? &terms.t[i] : m[i - terms.n];
        if (t->nf == 0) {
            fmpq_add(k, k, t->c);
        } else if (t->nf == 1) {
            v[n] = t->f[0];
            ch_fmpq_set(c + n++, t->c);
        } else {
            mono u;
            fmpq_init(u.c);
            fmpq_one(u.c);
            u.f = t->f;
            u.nf = t->nf;
            v[n] = mono_value(s, &u);
            fmpq_clear(u.c);
            ch_fmpq_set(c + n++, t->c);
        }
    }
    uint32_t sum = (v && !s->failed) ? ch_cse_mk_add(s, k, v, c, (uint32_t)n) : 0;
    free(v);
    _fmpq_vec_clear(c, nt ? nt : 1);
    fmpq_clear(k);
    fmpq_one(out->c);
    out->nf = 1;
    out->f = malloc(sizeof *out->f);
    if (!out->f) {
        ch_cse_oom(s);
        out->nf = 0;
    } else {
        out->f[0] = sum;
    }
out_free:
    for (size_t i = 0; i < terms.n; i++) mono_clear(&terms.t[i]);
    free(terms.t);
    free(blk);
}

/* The sum a (operands already replaced through rep) factored, or NONE when
 * factoring does not lower the operation count. A term that is a product
 * used by this sum only is inlined as its factors. */
static int has_dup_u32(uint32_t *x, size_t n)
{
    ch_cse_sort_u32(x, (uint32_t)n);
    for (size_t i = 1; i < n; i++)
        if (x[i] == x[i - 1]) return 1;
    return 0;
}

static int has_dup_u64(uint64_t *x, size_t n)
{
    ch_sort_u64(x, n);
    for (size_t i = 1; i < n; i++)
        if (x[i] == x[i - 1]) return 1;
    return 0;
}

/* Cheap test before factoring: whether any factor (any coefficient
 * magnitude, by hash) occurs in two terms of the sum a at all. */
static int factor_worth(cse *s, const node *a, const uint32_t *rep, const uint32_t *rc)
{
    size_t tot = 0;
    for (uint32_t i = 0; i < a->n; i++) {
        const node *b = s->nd[rep[a->op[i]]];
        tot += (merge_factor(b, rc[a->op[i]])) ? b->n : 1;
    }
    /* scratch on the stack when small (not recursive) */
    uint32_t idst[32];
    uint64_t qhst[16];
    uint32_t *id = tot <= 32 ? idst : malloc(tot * sizeof *id);
    uint64_t *qh = a->n <= 16 ? qhst : malloc(a->n * sizeof *qh);
    if (!id || !qh) {
        if (id != idst) free(id);
        if (qh != qhst) free(qh);
        ch_cse_oom(s);
        return 0;
    }
    size_t ni = 0, nq = 0;
    fmpq_t q;
    fmpq_init(q);
    for (uint32_t i = 0; i < a->n; i++) {
        uint32_t r = rep[a->op[i]];
        const node *b = s->nd[r];
        const fmpq *c = a->c + i;
        if (merge_factor(b, rc[a->op[i]])) {
            for (uint32_t j = 0; j < b->n; j++)
                if (j == 0 || b->op[j] != b->op[j - 1]) id[ni++] = b->op[j];
            if (!b->n) continue;
            if (is_pm1(c)) {
                c = b->k;
            } else if (!is_pm1(b->k)) {
                fmpq_mul(q, c, b->k);
                c = q;
            }
        } else {
            id[ni++] = r;
        }
        if (!is_pm1(c)) qh[nq++] = ch_cse_hash_absq(c);
    }
    fmpq_clear(q);
    int worth = has_dup_u32(id, ni) || has_dup_u64(qh, nq);
    if (id != idst) free(id);
    if (qh != qhst) free(qh);
    return worth;
}

static uint32_t factor_add(cse *s, const node *a, const uint32_t *rep, const uint32_t *rc)
{
    if (!factor_worth(s, a, rep, rc)) return NONE;
    size_t cnt = a->n + !fmpq_is_zero(a->k), nf = 0;
    for (uint32_t i = 0; i < a->n; i++) {
        const node *b = s->nd[rep[a->op[i]]];
        nf += merge_factor(b, rc[a->op[i]]) ? b->n : 1;
    }
    /* the monomials, their pointers and their factors in one block */
    char *blk = malloc(cnt * (sizeof(mono) + sizeof(mono *)) + (nf ? nf : 1) * sizeof(uint32_t));
    if (!blk) {
        ch_cse_oom(s);
        return NONE;
    }
    mono *ms = (mono *)blk;
    mono **mp = (mono **)(ms + cnt);
    uint32_t *fs = (uint32_t *)(mp + cnt);
    double old = 0;
    size_t built = 0;
    for (uint32_t i = 0; i < a->n; i++) {
        uint32_t r = rep[a->op[i]];
        const node *b = s->nd[r];
        mono *x = &ms[built];
        fmpq_init(x->c);
        ch_fmpq_set(x->c, a->c + i);
        x->f = fs;
        if (merge_factor(b, rc[a->op[i]])) {
            fmpq_mul(x->c, x->c, b->k);
            x->nf = b->n;
            memcpy(x->f, b->op, b->n * sizeof *x->f);
            old += ch_cse_node_cost(b);
        } else {
            x->nf = 1;
            x->f[0] = r;
        }
        fs += x->nf;
        mp[built++] = x;
    }
    if (!fmpq_is_zero(a->k) && !s->failed) {
        mono *x = &ms[built];
        fmpq_init(x->c);
        ch_fmpq_set(x->c, a->k);
        x->nf = 0;
        x->f = NULL;
        mp[built++] = x;
    }
    old += ch_cse_node_cost(a);
    uint32_t r = NONE;
    /* factor_worth found a factor (or an equal coefficient) in two terms */
    if (!s->failed) {
        double before = s->created;
        mono out;
        fmpq_init(out.c);
        out.f = NULL;
        out.nf = 0;
        factor_sum(s, mp, built, &out);
        uint32_t v = s->failed ? 0 : mono_value(s, &out);
        if (s->created - before < old) r = v;
        mono_clear(&out);
    }
    for (size_t i = 0; i < built; i++) fmpq_clear(ms[i].c);
    free(blk);
    return r;
}

/* -- shared prefixes of products and sums -- */

typedef struct {
    ch_map child;    /* (trie node << 32 | key + 1) -> trie node */
    uint32_t *cnt;   /* products (sums) passing through a trie node */
    uint32_t *val;   /* its value once built, else NONE */
    uint32_t n, cap;
    uint32_t *freq;  /* key -> products (sums) containing it */
} trie;

static uint32_t trie_step(cse *s, trie *t, uint32_t at, uint32_t key, int create)
{
    uint64_t k = ((uint64_t)at << 32) | ((uint64_t)key + 1);
    uintptr_t got = (uintptr_t)ch_map_get(&t->child, k);
    if (got || !create) return (uint32_t)got;
    if (t->n == t->cap) {
        uint32_t cap = t->cap ? 2 * t->cap : 1024;
        uint32_t *c = realloc(t->cnt, cap * sizeof *c);
        if (c) t->cnt = c;
        uint32_t *v = realloc(t->val, cap * sizeof *v);
        if (v) t->val = v;
        if (!c || !v) {
            ch_cse_oom(s);
            return 0;
        }
        t->cap = cap;
    }
    uint32_t id = t->n++;
    t->cnt[id] = 0;
    t->val[id] = NONE;
    if (ch_map_put(&t->child, k, (void *)(uintptr_t)id)) ch_cse_oom(s);
    return id;
}

/* |c| * x: the value a sum's term c * x stands for in the trie of sums
 * (made before the sharing pass so that the keys have their counts). */
static uint32_t scaled(cse *s, const fmpq *c, uint32_t x)
{
    fmpq_t q;
    fmpq_init(q);
    fmpq_abs(q, c);
    uint32_t v = ch_cse_mk_mul(s, q, &x, 1, NULL, 0);
    fmpq_clear(q);
    return v;
}

/* The keys of a product's factors (a sum's terms): a value number
 * (cl, when not NONE, is the number leaf of a product's coefficient
 * magnitude, a factor like the others, so 8*m*l^2 is shared too), or
 * for a sum 2 * value + (coefficient < 0), the value of a term c * x with
 * |c| != 1 being |c| * x (so that the weighted suffix sums
 * sum_{j >= i} w_j x_j of the rows of a mass matrix share their tails),
 * the signs flipped (*flip = 1) when the first term is negative so that
 * s and -s share prefixes. */
static uint32_t seq_of(cse *s, const node *a, uint32_t cl, uint32_t *seq, int *flip)
{
    uint32_t m = 0;
    *flip = 0;
    if (a->kind == K_MUL) {
        for (uint32_t i = 0; i < a->n; i++) seq[m++] = a->op[i];
        if (cl != NONE) seq[m++] = cl;
    } else {
        for (uint32_t i = 0; i < a->n; i++) {
            int neg = fmpq_sgn(a->c + i) < 0;
            uint32_t v = is_pm1(a->c + i) ? a->op[i] : scaled(s, a->c + i, a->op[i]);
            if (m == 0) *flip = neg;
            seq[m++] = 2 * v + (uint32_t)(neg ^ *flip);
        }
    }
    return m;
}

/* The term of a sum's key with rep applied: *v, and its coefficient
 * (sign, times |c| for the values |c| * x made for the pass, which
 * come from nn0 on) in c, so that mk_add merges it with equal terms. */
static void key_term(const cse *s, uint32_t key, int flip, const uint32_t *rep, uint32_t nn0,
                     uint32_t *v, fmpq *c)
{
    uint32_t x = key >> 1;
    fmpq_set_si(c, ((key & 1) ^ (uint32_t)flip) ? -1 : 1, 1);
    if (x < nn0) {
        *v = rep[x];
        return;
    }
    const node *b = s->nd[x];
    *v = rep[b->op[0]];
    fmpq_mul(c, c, b->k);
}

/* seq sorted most frequent first, ties by key (tmp: m scratch words). */
static void sort_seq(uint32_t *seq, uint32_t m, const uint32_t *freq, uint64_t *tmp)
{
    for (uint32_t i = 0; i < m; i++)
        tmp[i] = ((uint64_t)(UINT32_MAX - freq[seq[i]]) << 32) | seq[i];
    ch_sort_u64(tmp, m);
    for (uint32_t i = 0; i < m; i++) seq[i] = (uint32_t)tmp[i];
}

/* The product or sum a, its operands replaced through rep, with its
 * leading factors (terms) taken from the shared prefixes of the trie. */
static uint32_t share_one(cse *s, const node *a, uint32_t cl, trie *t, const uint32_t *rep,
                          uint32_t nn0, uint32_t *seq, uint64_t *tmp)
{
    int flip;
    uint32_t m = seq_of(s, a, cl, seq, &flip);
    sort_seq(seq, m, t->freq, tmp);
    int mul = a->kind == K_MUL;
    uint32_t at = 0, cur = NONE, last = 0;
    int shared = 0;
    uint32_t mt = 0; /* the keys in the trie: those in two sequences or more */
    while (mt < m && t->freq[seq[mt]] >= 2) mt++;
    for (uint32_t d = 1; d <= mt && !shared; d++) {
        at = trie_step(s, t, at, seq[d - 1], 0);
        shared = d >= 2 && t->cnt[at] >= 2;
    }
    if (!shared) return NONE; /* no prefix shared: rebuilt plainly */
    at = 0;
    uint32_t *v = malloc((a->n + a->nd + 1) * sizeof *v);
    fmpq *c = _fmpq_vec_init(a->n + 1);
    fmpq_t one, zero;
    fmpq_init(one);
    fmpq_init(zero);
    fmpq_one(one);
    uint32_t r = 0;
    if (!v) {
        ch_cse_oom(s);
        goto done;
    }
    for (uint32_t d = 1; d <= mt && !s->failed; d++) {
        at = trie_step(s, t, at, seq[d - 1], 0);
        if (d < 2 || t->cnt[at] < 2) continue;
        if (t->val[at] == NONE) {
            uint32_t k = 0;
            if (cur != NONE) v[k] = cur, fmpq_one(c + k), k++;
            for (uint32_t i = last; i < d; i++, k++) {
                if (mul) v[k] = rep[seq[i]];
                else key_term(s, seq[i], 0, rep, nn0, v + k, c + k);
            }
            t->val[at] = mul ? ch_cse_mk_mul(s, one, v, k, NULL, 0) : ch_cse_mk_add(s, zero, v, c, k);
        }
        cur = t->val[at];
        last = d;
    }
    uint32_t k = 0;
    if (cur != NONE) v[k] = cur, fmpq_set_si(c + k, flip ? -1 : 1, 1), k++;
    for (uint32_t i = last; i < m; i++, k++) {
        if (mul) v[k] = rep[seq[i]];
        else key_term(s, seq[i], flip, rep, nn0, v + k, c + k);
    }
    if (mul) {
        for (uint32_t i = 0; i < a->nd; i++) v[k + i] = rep[a->op[a->n + i]];
        if (cl == NONE) {
            r = ch_cse_mk_mul(s, a->k, v, k, v + k, a->nd);
        } else { /* the magnitude is a factor: only the sign remains */
            fmpq_set_si(one, fmpq_sgn(a->k), 1);
            r = ch_cse_mk_mul(s, one, v, k, v + k, a->nd);
        }
    } else {
        r = ch_cse_mk_add(s, a->k, v, c, k);
    }
done:
    free(v);
    _fmpq_vec_clear(c, a->n + 1);
    fmpq_clear(one);
    fmpq_clear(zero);
    return r;
}


/* -- sums one term from another -- */

/* The hash of the term c * v (v's number, or NONE for a constant c) in a
 * sum's term-set hash: the set's hash is the wrapping sum of its terms',
 * odd in c, so that the hash of -S is minus that of S and S without a
 * term is S's minus the term's. */
static uint64_t term_hash(uint32_t v, const fmpq *c)
{
    uint64_t h = mix(0x5bd1e995u, v) * (ch_cse_hash_absq(c) | 1);
    return fmpq_sgn(c) < 0 ? (uint64_t)0 - h : h;
}

static uint64_t sum_hash(const node *a)
{
    uint64_t h = fmpq_is_zero(a->k) ? 0 : term_hash(NONE, a->k);
    for (uint32_t i = 0; i < a->n; i++) h += term_hash(a->op[i], a->c + i);
    return h;
}

/* Whether the sum t is +-(the sum a without its term skip, or without its
 * constant when skip == a->n): *sign receives the sign. */
static int sum_minus_term(const node *t, const node *a, uint32_t skip, int *sign)
{
    if (t->kind != K_ADD || t->n != a->n - (skip < a->n)) return 0;
    for (int sg = 1; sg >= -1; sg -= 2) {
        fmpq_t x; /* T's constant: a's, or none without a's constant */
        fmpq_init(x);
        if (skip < a->n) ch_fmpq_set(x, a->k);
        if (sg < 0) fmpq_neg(x, x);
        int ok = fmpq_equal(x, t->k);
        for (uint32_t i = 0, j = 0; ok && i < a->n; i++) {
            if (i == skip) continue;
            ch_fmpq_set(x, a->c + i);
            if (sg < 0) fmpq_neg(x, x);
            ok = t->op[j] == a->op[i] && fmpq_equal(x, t->c + j);
            j++;
        }
        fmpq_clear(x);
        if (ok) {
            *sign = sg;
            return 1;
        }
    }
    return 0;
}

/* The sum a (operands replaced through rep) as +-T + (its term skip),
 * where T, an earlier value reachable from the outputs (in sums, by its
 * term-set hash), is a without that term or without its constant: one
 * addition where the trie of the sharing pass, whose order of terms is
 * one for all sums, can miss that the partial sums t0 + a1 + ... + ai of
 * a recursion are each one term more than the one before. NONE when there
 * is none. */
static uint32_t chain_add(cse *s, uint32_t v, const ch_map *sums, const uint32_t *rep)
{
    const node *a = s->nd[v];
    if (a->n + !fmpq_is_zero(a->k) < 3) return NONE;
    uint64_t h = sum_hash(a);
    for (uint32_t i = 0; i <= a->n; i++) {
        if (i == a->n && fmpq_is_zero(a->k)) break;
        uint64_t th = i < a->n ? term_hash(a->op[i], a->c + i) : term_hash(NONE, a->k);
        for (int neg = 0; neg < 2; neg++) {
            uint64_t key = neg ? (uint64_t)0 - (h - th) : h - th;
            long t = vp(ch_map_get(sums, key));
            int sign;
            if (t < 0 || (uint32_t)t >= v || !sum_minus_term(s->nd[t], a, i, &sign)) continue;
            uint32_t op[2] = {rep[t], i < a->n ? rep[a->op[i]] : NONE};
            fmpq c[2];
            fmpq_init(c + 0);
            fmpq_init(c + 1);
            fmpq_set_si(c + 0, sign, 1);
            uint32_t r;
            if (i < a->n) {
                ch_fmpq_set(c + 1, a->c + i);
                fmpq_t zero;
                fmpq_init(zero);
                r = ch_cse_mk_add(s, zero, op, c, 2);
                fmpq_clear(zero);
            } else {
                r = ch_cse_mk_add(s, a->k, op, c, 1);
            }
            fmpq_clear(c + 0);
            fmpq_clear(c + 1);
            return r;
        }
    }
    return NONE;
}

/* One rewriting pass over the values reachable from outs (replaced in
 * place). */
void ch_cse_pass(cse *s, uint32_t *outs, size_t n, int mode)
{
    if (s->failed) return;
    uint32_t nn = s->nn;
    uint32_t *rc = uses(s, outs, n);
    uint32_t *cl = NULL, ncl = 0; /* P_SHARE: coefficient leaf of each product */
    uint32_t nn0 = nn; /* P_SHARE: the values made for the pass come after */
    if (rc && mode == P_SHARE) {
        ncl = nn;
        cl = malloc((nn ? nn : 1) * sizeof *cl);
        for (uint32_t v = 0; cl && v < nn; v++) {
            const node *a = s->nd[v];
            cl[v] = NONE;
            if (rc[v] && a->kind == K_MUL && a->n && !is_pm1(a->k)) {
                fmpq_t q;
                fmpq_init(q);
                fmpq_abs(q, a->k);
                cl[v] = ch_cse_mk_num(s, q);
                fmpq_clear(q);
            }
            for (uint32_t i = 0; rc[v] && a->kind == K_ADD && i < a->n; i++)
                if (!is_pm1(a->c + i)) scaled(s, a->c + i, a->op[i]);
        }
        uint32_t *r2 = cl ? realloc(rc, (s->nn ? s->nn : 1) * sizeof *rc) : NULL;
        if (r2) {
            memset(r2 + nn, 0, (s->nn - nn) * sizeof *r2);
            nn = s->nn;
        }
        rc = r2 ? r2 : rc;
        if (!r2) free(cl), cl = NULL;
    }
    uint32_t *rep = malloc((nn ? nn : 1) * sizeof *rep);
    trie t[2];
    memset(t, 0, sizeof t);
    uint32_t *seq = NULL;
    uint64_t *tmp = NULL;
    ch_map sums; /* P_CHAIN: term-set hash -> the first reachable sum with it */
    ch_map_init(&sums);
    if (!rc || !rep || (mode == P_SHARE && !cl)) {
        ch_cse_oom(s);
        goto done;
    }
    for (uint32_t v = 0; mode == P_CHAIN && v < nn; v++) {
        const node *a = s->nd[v];
        uint64_t h = a->kind == K_ADD && rc[v] ? sum_hash(a) : 0;
        if (h && !ch_map_get(&sums, h) && ch_map_put(&sums, h, pv(v))) {
            ch_cse_oom(s);
            goto done;
        }
    }
    for (uint32_t v = 0; v < nn; v++) rep[v] = v; /* the coefficient leaves come last */
    if (mode == P_SHARE) {
        uint32_t maxn = 1;
        for (uint32_t v = 0; v < nn; v++)
            if (rc[v] && s->nd[v]->n + s->nd[v]->nd + 1 > maxn) maxn = s->nd[v]->n + s->nd[v]->nd + 1;
        seq = malloc(maxn * sizeof *seq);
        tmp = malloc(maxn * sizeof *tmp);
        t[0].freq = calloc(nn, sizeof *t[0].freq);
        t[1].freq = calloc(2 * (size_t)nn, sizeof *t[1].freq);
        for (int i = 0; i < 2; i++) ch_map_init(&t[i].child);
        if (!seq || !tmp || !t[0].freq || !t[1].freq) {
            ch_cse_oom(s);
            goto done;
        }
        for (int i = 0; i < 2; i++) trie_step(s, &t[i], 0, UINT32_MAX - 1, 1); /* root 0 */
        /* how many products (sums) contain each factor (term) */
        for (uint32_t v = 0; v < nn; v++) {
            const node *a = s->nd[v];
            if (!rc[v] || (a->kind != K_MUL && a->kind != K_ADD)) continue;
            int flip;
            uint32_t m = seq_of(s, a, v < ncl ? cl[v] : NONE, seq, &flip);
            trie *tt = &t[a->kind == K_ADD];
            for (uint32_t i = 0; m >= 2 && i < m; i++)
                if (i == 0 || seq[i] != seq[i - 1]) tt->freq[seq[i]]++;
        }
        /* the tries of the sequences, most frequent first */
        for (uint32_t v = 0; v < nn && !s->failed; v++) {
            const node *a = s->nd[v];
            if (!rc[v] || (a->kind != K_MUL && a->kind != K_ADD)) continue;
            int flip;
            uint32_t m = seq_of(s, a, v < ncl ? cl[v] : NONE, seq, &flip);
            if (m < 2) continue;
            trie *tt = &t[a->kind == K_ADD];
            sort_seq(seq, m, tt->freq, tmp);
            uint32_t at = 0;
            /* a key in this sequence only ends its shareable prefix (the
             * ones after it are as rare) */
            for (uint32_t i = 0; i < m && tt->freq[seq[i]] >= 2 && !s->failed; i++) {
                at = trie_step(s, tt, at, seq[i], 1);
                tt->cnt[at]++;
            }
        }
    }
    for (uint32_t v = 0; v < nn && !s->failed; v++) {
        if (!rc[v]) {
            rep[v] = v;
            continue;
        }
        const node *a = s->nd[v];
        uint32_t r = NONE;
        int flip;
        if (mode == P_CHAIN && a->kind == K_ADD) {
            r = chain_add(s, v, &sums, rep);
            if (r == NONE) r = rebuild(s, v, rep, rc, 0);
        } else if (mode == P_FACTOR && a->kind == K_ADD) {
            r = factor_add(s, a, rep, rc);
            if (r == NONE) r = rebuild(s, v, rep, rc, 1);
        } else if (mode == P_SHARE && (a->kind == K_MUL || a->kind == K_ADD) &&
                   seq_of(s, a, v < ncl ? cl[v] : NONE, seq, &flip) >= 2) {
            r = share_one(s, a, v < ncl ? cl[v] : NONE, &t[a->kind == K_ADD], rep, nn0, seq, tmp);
            if (r == NONE) r = rebuild(s, v, rep, rc, 0);
        } else {
            r = rebuild(s, v, rep, rc, mode != P_SHARE);
        }
        rep[v] = r;
    }
    for (size_t i = 0; i < n && !s->failed; i++) outs[i] = rep[outs[i]];
done:
    ch_map_free(&sums);
    for (int i = 0; i < 2; i++) {
        ch_map_free(&t[i].child);
        free(t[i].cnt);
        free(t[i].val);
        free(t[i].freq);
    }
    free(seq);
    free(tmp);
    free(rc);
    free(rep);
    free(cl);
}
