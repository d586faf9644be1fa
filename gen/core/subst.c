/* subst.c — substitution with a cache kept in the context per distinct
 * substitution (its from/to pairs).
 *
 * Subtrees whose symbol set misses the symbols of the replaced nodes are
 * returned unchanged without a visit, so substituting alpha for a few
 * velocities in a large DAG touches only the part that contains them. */
#include "core/subst.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
    ch_ctx *ctx;
    ch_map *cache; /* node id -> result */
    const ch_symset *set;
} subst_state;

static const ch_expr *rebuild(subst_state *s, const ch_expr *e);

static const ch_expr *visit(subst_state *s, const ch_expr *e)
{
    if (!e || ch_ctx_exhausted(s->ctx)) return NULL;
    const ch_expr *r = ch_map_get(s->cache, e->id);
    if (r) return r;
    if (!ch_symset_meets(e->symset, s->set)) return e;
    r = rebuild(s, e);
    if (r && ch_map_put(s->cache, e->id, (void *)r)) {
        ch_ctx_fail(s->ctx, CH_ERR_MEMORY, "out of memory");
        return NULL;
    }
    return r;
}

static const ch_expr *rebuild_pairs(subst_state *s, const ch_expr *e)
{
    ch_ctx *ctx = s->ctx;
    const ch_expr **x = malloc((e->n + 1) * sizeof *x);
    fmpq *c = malloc(e->n * sizeof *c);
    const ch_expr *r = NULL;
    if (!x || !c) {
        ch_ctx_fail(ctx, CH_ERR_MEMORY, "out of memory");
        goto out;
    }
    int same = 1;
    for (uint32_t i = 0; i < e->n; i++) ch_map_prefetch(s->cache, e->pair[i].e->id);
    for (uint32_t i = 0; i < e->n; i++) {
        x[i] = visit(s, e->pair[i].e);
        c[i] = *e->pair[i].c; /* shallow: a read-only view */
        same &= x[i] == e->pair[i].e;
    }
    /* nothing below changed (a replaced node's symbols need not make the
     * node): e is its own canonical rebuild */
    if (same) {
        r = e;
        goto out;
    }
    if (e->kind == CH_ADD) {
        r = ch_lincomb(ctx, e->num, e->n, c, x);
    } else {
        for (uint32_t i = 0; i < e->n; i++) x[i] = ch_pow_q(ctx, x[i], c + i);
        /* a coefficient 1 changes nothing (and its node exists) */
        size_t nx = e->n;
        if (!fmpq_is_one(e->num)) x[nx++] = ch_num_q(ctx, e->num);
        r = ch_mul_n(ctx, nx, x);
    }
out:
    free(x);
    free(c);
    return r;
}

static const ch_expr *rebuild(subst_state *s, const ch_expr *e)
{
    switch (e->kind) {
    case CH_ADD:
    case CH_MUL: return rebuild_pairs(s, e);
    case CH_POW: {
        const ch_expr *b = visit(s, e->pair[0].e), *x = visit(s, e->pair[1].e);
        if (b == e->pair[0].e && x == e->pair[1].e) return e;
        return ch_pow(s->ctx, b, x);
    }
    case CH_FUN: {
        const ch_expr *a = visit(s, e->pair[0].e);
        if (e->fun == CH_F_ATAN2) {
            const ch_expr *b = visit(s, e->pair[1].e);
            if (a == e->pair[0].e && b == e->pair[1].e) return e;
            return ch_atan2(s->ctx, a, b);
        }
        if (a == e->pair[0].e) return e;
        return ch_fun1(s->ctx, (ch_fun)e->fun, a);
    }
    default: return e; /* a symbol that is not replaced, or a number */
    }
}

/* Seeds the cache with from[i] -> to[i]; 0, or -1 on failure. */
static int seed(ch_ctx *ctx, ch_map *cache, size_t n,
                const ch_expr *const *from, const ch_expr *const *to)
{
    for (size_t i = 0; i < n; i++) {
        if (!from[i] || !to[i]) return -1;
        if (ch_map_put(cache, from[i]->id, (void *)to[i])) {
            ch_ctx_fail(ctx, CH_ERR_MEMORY, "out of memory");
            return -1;
        }
    }
    return 0;
}

/* Every substitution made in a context keeps its cache there, found by
 * its pairs: the mechanics modules apply the same substitution (alpha,
 * the phase map of the Hamiltonian side) to many overlapping expressions
 * one call at a time, and each shared node is then rebuilt once. */
typedef struct subst_entry {
    struct subst_entry *next; /* same hash */
    size_t n;
    const ch_expr **from, **to;
    ch_subst_memo memo;
} subst_entry;

static uint64_t pairs_hash(size_t n, const ch_expr *const *from,
                           const ch_expr *const *to)
{
    uint64_t h = 1469598103934665603ULL ^ n;
    for (size_t i = 0; i < n; i++)
        h = (h ^ ((uint64_t)from[i]->id << 32 | to[i]->id)) * 1099511628211ULL;
    return h ? h : 1;
}

static int same_pairs(const subst_entry *x, size_t n, const ch_expr *const *from,
                      const ch_expr *const *to)
{
    if (x->n != n) return 0;
    for (size_t i = 0; i < n; i++)
        if (x->from[i] != from[i] || x->to[i] != to[i]) return 0;
    return 1;
}

/* The context's memo of this substitution, created on first use. */
static ch_subst_memo *memo_of(ch_ctx *ctx, size_t n, const ch_expr *const *from,
                              const ch_expr *const *to)
{
    for (size_t i = 0; i < n; i++)
        if (!from[i] || !to[i]) return NULL;
    ch_map *reg = ch_ctx_memo(ctx, CH_MEMO_SUBST);
    uint64_t h = pairs_hash(n, from, to);
    subst_entry *first = ch_map_get(reg, h);
    for (subst_entry *x = first; x; x = x->next)
        if (same_pairs(x, n, from, to)) return &x->memo;
    subst_entry *x = ch_ctx_alloc(ctx, sizeof *x);
    const ch_expr **f = ch_ctx_alloc(ctx, (n + 1) * sizeof *f);
    const ch_expr **t = ch_ctx_alloc(ctx, (n + 1) * sizeof *t);
    if (!x || !f || !t) return NULL;
    for (size_t i = 0; i < n; i++) {
        f[i] = from[i];
        t[i] = to[i];
    }
    x->n = n;
    x->from = f;
    x->to = t;
    x->next = first;
    if (ch_subst_memo_init(ctx, &x->memo, n, from, to)) return NULL;
    if (ch_map_put(reg, h, x)) {
        ch_ctx_fail(ctx, CH_ERR_MEMORY, "out of memory");
        return NULL;
    }
    return &x->memo;
}

int ch_subst_many(ch_ctx *ctx, size_t count, const ch_expr *const *in,
                  const ch_expr **out, size_t n, const ch_expr *const *from,
                  const ch_expr *const *to)
{
    ch_subst_memo *m = memo_of(ctx, n, from, to);
    if (!m) return -1;
    int rc = 0;
    for (size_t i = 0; i < count; i++)
        out[i] = ch_subst_memo_apply(ctx, m, in[i]);
    for (size_t i = 0; i < count; i++)
        if (!out[i]) rc = -1;
    return rc;
}

int ch_subst_memo_init(ch_ctx *ctx, ch_subst_memo *m, size_t n,
                       const ch_expr *const *from, const ch_expr *const *to)
{
    m->cache = NULL;
    if (!(m->set = ch_symset_of(ctx, n, from)) || !(m->cache = ch_ctx_new_map(ctx))) return -1;
    return seed(ctx, m->cache, n, from, to);
}

const ch_expr *ch_subst_memo_apply(ch_ctx *ctx, ch_subst_memo *m,
                                   const ch_expr *e)
{
    if (!m->cache) return NULL;
    subst_state s = {ctx, m->cache, m->set};
    return visit(&s, e);
}

int ch_subst_memo_inherit(ch_ctx *ctx, ch_subst_memo *m,
                          const ch_subst_memo *base, size_t n,
                          const ch_expr *const *syms)
{
    if (!m->cache || !base->cache) return -1;
    ch_sym_finder f;
    if (ch_sym_finder_init(ctx, &f, n, syms)) return -1;
    const ch_map *bc = base->cache;
    for (size_t i = 0; i < bc->cap; i++) {
        uint64_t key = bc->slot[i].key;
        if (!key || ch_map_get(m->cache, key)) continue;
        const ch_expr *e = ch_ctx_node(ctx, (uint32_t)key);
        if (!e) continue;
        int has = ch_sym_finder_has(ctx, &f, e);
        if (has < 0) return -1;
        if (!has && ch_map_put(m->cache, key, bc->slot[i].val)) {
            ch_ctx_fail(ctx, CH_ERR_MEMORY, "out of memory");
            return -1;
        }
    }
    return 0;
}

const ch_expr *ch_subst(ch_ctx *ctx, const ch_expr *e, size_t n,
                        const ch_expr *const *from, const ch_expr *const *to)
{
    const ch_expr *r = NULL;
    if (ch_subst_many(ctx, 1, &e, &r, n, from, to)) return NULL;
    return r;
}

/* ======================================================================
 * symbol search
 * ====================================================================== */

int ch_sym_finder_init(ch_ctx *ctx, ch_sym_finder *f, size_t n,
                       const ch_expr *const *syms)
{
    f->kind = -1;
    f->nsyms = 0;
    f->set = ch_symset_empty(ctx);
    for (size_t i = 0; i < n && f->set; i++)
        if (syms[i] && syms[i]->kind == CH_SYM)
            f->set = ch_symset_union(ctx, f->set, syms[i]->symset);
    return f->set ? 0 : -1;
}

int ch_sym_finder_init_kind(ch_ctx *ctx, ch_sym_finder *f, ch_sym_kind kind)
{
    f->kind = (int)kind;
    f->nsyms = ch_ctx_nsyms(ctx);
    f->set = ch_symset_of_kind(ctx, kind);
    return f->set ? 0 : -1;
}

int ch_sym_finder_has(ch_ctx *ctx, ch_sym_finder *f, const ch_expr *e)
{
    if (!e || !f->set) return 0;
    if (f->kind >= 0 && f->nsyms != ch_ctx_nsyms(ctx)) { /* symbols made since */
        f->nsyms = ch_ctx_nsyms(ctx);
        if (!(f->set = ch_symset_of_kind(ctx, (ch_sym_kind)f->kind))) return -1;
    }
    return ch_symset_meets(e->symset, f->set);
}
