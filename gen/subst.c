/* subst.c — substitution with a per-call cache.
 *
 * Subtrees whose symbol mask shares no bit with the replaced nodes are
 * returned unchanged without a visit, so substituting alpha for a few
 * velocities in a large DAG touches only the part that contains them. */
#include "subst.h"

#include <stdlib.h>

typedef struct {
    ch_ctx *ctx;
    ch_map cache; /* node id -> result */
    uint64_t mask;
} subst_state;

static const ch_expr *rebuild(subst_state *s, const ch_expr *e);

static const ch_expr *visit(subst_state *s, const ch_expr *e)
{
    if (!e) return NULL;
    const ch_expr *r = ch_map_get(&s->cache, e->id);
    if (r) return r;
    if (!(e->symmask & s->mask)) return e;
    r = rebuild(s, e);
    if (r && ch_map_put(&s->cache, e->id, (void *)r)) {
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
    for (uint32_t i = 0; i < e->n; i++) {
        x[i] = visit(s, e->pair[i].e);
        c[i] = *e->pair[i].c; /* shallow: a read-only view */
    }
    if (e->kind == CH_ADD) {
        r = ch_lincomb(ctx, e->num, e->n, c, x);
    } else {
        for (uint32_t i = 0; i < e->n; i++) x[i] = ch_pow_q(ctx, x[i], c + i);
        x[e->n] = ch_num_q(ctx, e->num);
        r = ch_mul_n(ctx, e->n + 1, x);
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
    case CH_POW:
        return ch_pow(s->ctx, visit(s, e->arg[0]), visit(s, e->arg[1]));
    case CH_FUN:
        if (e->fun == CH_F_ATAN2)
            return ch_atan2(s->ctx, visit(s, e->arg[0]), visit(s, e->arg[1]));
        return ch_fun1(s->ctx, (ch_fun)e->fun, visit(s, e->arg[0]));
    default: return e; /* a symbol that is not replaced, or a number */
    }
}

int ch_subst_many(ch_ctx *ctx, size_t count, const ch_expr *const *in,
                  const ch_expr **out, size_t n, const ch_expr *const *from,
                  const ch_expr *const *to)
{
    subst_state s = {ctx, {0}, 0};
    ch_map_init(&s.cache);
    int rc = 0;
    for (size_t i = 0; i < n; i++) {
        if (!from[i] || !to[i]) {
            rc = -1;
            goto out;
        }
        s.mask |= from[i]->symmask;
        if (ch_map_put(&s.cache, from[i]->id, (void *)to[i])) {
            ch_ctx_fail(ctx, CH_ERR_MEMORY, "out of memory");
            rc = -1;
            goto out;
        }
    }
    for (size_t i = 0; i < count; i++) {
        out[i] = visit(&s, in[i]);
        if (!out[i]) rc = -1;
    }
out:
    ch_map_free(&s.cache);
    return rc;
}

const ch_expr *ch_subst(ch_ctx *ctx, const ch_expr *e, size_t n,
                        const ch_expr *const *from, const ch_expr *const *to)
{
    const ch_expr *r = NULL;
    if (ch_subst_many(ctx, 1, &e, &r, n, from, to)) return NULL;
    return r;
}
