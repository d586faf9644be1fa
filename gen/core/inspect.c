/* inspect.c — reading expressions: coefficients split off, DAG and tree
 * sizes, symbol tests (expr.h). */
#include "core/expr_impl.h"
#include "core/mem.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- inspection ------------------------------------------------------- */

const ch_expr *ch_split_coeff(ch_ctx *ctx, const ch_expr *e, fmpq_t c)
{
    if (!e) return NULL;
    if (e->kind == CH_NUM) {
        ch_fmpq_set(c, e->num);
        return ctx->one;
    }
    if (e->kind == CH_MUL) {
        ch_fmpq_set(c, e->num);
        return ch_expr_mul_rest(ctx, e);
    }
    fmpq_one(c);
    return e;
}

int ch_has_sym(const ch_expr *e, const ch_expr *s)
{
    return e && s && s->kind == CH_SYM && ch_symset_has(e->symset, ch_sym_of(s)->bit);
}

int ch_has_any_sym(const ch_expr *e, size_t n, const ch_expr *const *syms)
{
    return ch_any_has_any_sym(1, &e, n, syms);
}

static int word_cmp(const void *a, const void *b)
{
    uint64_t x = ((const ch_symword *)a)->at, y = ((const ch_symword *)b)->at;
    return (x > y) - (x < y);
}

int ch_any_has_any_sym(size_t ne, const ch_expr *const *e, size_t n,
                       const ch_expr *const *syms)
{
    /* the symbols as a set of their own (not interned): a word per symbol,
     * sorted, then merged */
    ch_symset *set = malloc(sizeof *set + (n ? n : 1) * sizeof *set->w);
    if (!set) { /* the answer without the set: symbol by symbol */
        for (size_t i = 0; i < ne; i++)
            for (size_t j = 0; e[i] && j < n; j++)
                if (ch_has_sym(e[i], syms[j])) return 1;
        return 0;
    }
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        if (syms[i] && syms[i]->kind == CH_SYM) {
            uint32_t bit = ch_sym_of(syms[i])->bit;
            set->w[m++] = (ch_symword){bit / 64, 1ULL << (bit % 64)};
        }
    qsort(set->w, m, sizeof *set->w, word_cmp);
    set->n = 0;
    for (size_t i = 0; i < m; i++)
        if (set->n && set->w[set->n - 1].at == set->w[i].at) set->w[set->n - 1].bits |= set->w[i].bits;
        else set->w[set->n++] = set->w[i];
    int r = 0;
    for (size_t i = 0; i < ne && !r; i++) r = e[i] && ch_symset_meets(e[i]->symset, set);
    free(set);
    return r;
}

/* Depth-first search with a visited set, past subtrees without symbols. */
static int any_of_kind(const ch_expr *e, ch_sym_kind kind, ch_map *seen)
{
    if (!e->symset->n) return 0;
    if (e->kind == CH_SYM) return ch_sym_of(e)->kind == kind;
    if (ch_map_get(seen, e->id)) return 0;
    ch_map_put(seen, e->id, (void *)e);
    for (int i = 0; i < nchildren(e); i++)
        if (any_of_kind(child(e, i), kind, seen)) return 1;
    return 0;
}

int ch_has_sym_kind(const ch_expr *e, ch_sym_kind kind)
{
    if (!e) return 0;
    ch_map seen;
    ch_map_init(&seen);
    int r = any_of_kind(e, kind, &seen);
    ch_map_free(&seen);
    return r;
}

static void count_nodes(const ch_expr *e, ch_map *seen)
{
    if (ch_map_get(seen, e->id)) return;
    ch_map_put(seen, e->id, (void *)e);
    for (int i = 0; i < nchildren(e); i++) count_nodes(child(e, i), seen);
}

/* Stops as soon as more than cap nodes were seen, or seen cannot grow
 * (*oom set: a node not kept would be counted again at every visit). */
static void count_capped(const ch_expr *e, ch_map *seen, size_t cap, int *oom)
{
    if (*oom || seen->len > cap || ch_map_get(seen, e->id)) return;
    if (ch_map_put(seen, e->id, (void *)e)) {
        *oom = 1;
        return;
    }
    for (int i = 0; i < nchildren(e) && seen->len <= cap && !*oom; i++)
        count_capped(child(e, i), seen, cap, oom);
}

size_t ch_dag_size_capped(const ch_expr *e, size_t cap)
{
    return e ? ch_dag_size_many(1, &e, cap) : 0;
}

/* count_capped with a bit per node id for seen. */
static void count_marked(const ch_expr *e, uint64_t *bits, size_t *len, size_t cap)
{
    uint64_t m = (uint64_t)1 << (e->id & 63);
    if (*len > cap || (bits[e->id >> 6] & m)) return;
    bits[e->id >> 6] |= m;
    ++*len;
    for (int i = 0; i < nchildren(e) && *len <= cap; i++) count_marked(child(e, i), bits, len, cap);
}

/* A DAG of more than this many nodes is counted again in a bitmap up to
 * the largest root's id (children are older than their parents) rather
 * than in a map: the 16-byte slots of a large DAG's map missed the cache
 * at every node (emit's candidates of the 200-trailer: 2% of its time).
 * Only then, unless the cap is above every id: the bitmap's size is that
 * id's, not the DAG's, and zeroing it for every small expression made
 * late in a large context (the display tidy's normal forms of the
 * 200-trailer, cap 4936, 41 000 of them: 400 kB each) cost more than all
 * the rest of the count. */
#define DAG_BITS_MIN 4096

static size_t count_in_map(size_t n, const ch_expr *const *e, size_t cap)
{
    ch_map seen;
    ch_map_init(&seen);
    int oom = 0;
    for (size_t i = 0; i < n && seen.len <= cap && !oom; i++)
        if (e[i]) count_capped(e[i], &seen, cap, &oom);
    /* out of memory: "larger than cap", which makes callers skip work */
    size_t over = cap == SIZE_MAX ? cap : cap + 1; /* (cap + 1 would wrap to 0) */
    size_t r = seen.len > cap || oom ? over : seen.len;
    ch_map_free(&seen);
    return r;
}

size_t ch_dag_size_many(size_t n, const ch_expr *const *e, size_t cap)
{
    uint32_t top = 0;
    for (size_t i = 0; i < n; i++)
        if (e[i] && e[i]->id > top) top = e[i]->id;
    /* a cap above every id does not bound the count: the caller wants a
     * whole DAG, large where that is asked (emit's candidates) */
    if (cap < DAG_BITS_MIN || top > cap) {
        size_t first = cap < DAG_BITS_MIN ? cap : DAG_BITS_MIN;
        size_t r = count_in_map(n, e, first);
        if (r <= first || cap == first) return r;
    }
    uint64_t *bits = calloc(top / 64 + 1, sizeof *bits);
    if (!bits) return count_in_map(n, e, cap); /* slower, same count */
    size_t len = 0;
    for (size_t i = 0; i < n && len <= cap; i++)
        if (e[i]) count_marked(e[i], bits, &len, cap);
    free(bits);
    return len > cap ? cap + 1 : len;
}

size_t ch_dag_size(const ch_expr *e)
{
    if (!e) return 0;
    ch_map seen;
    ch_map_init(&seen);
    count_nodes(e, &seen);
    size_t n = seen.len;
    ch_map_free(&seen);
    return n;
}

/* The exact tree size of e, saturated at UINT32_MAX, kept in tree[id]
 * (every id of e's DAG has an entry); leaves are not stored. */
static uint32_t tree_size(const ch_expr *e, uint32_t *tree)
{
    int nc = nchildren(e);
    if (!nc) return 1;
    if (tree[e->id]) return tree[e->id];
    uint64_t n = 1;
    for (int i = 0; i < nc; i++) {
        n += tree_size(child(e, i), tree);
        if (n > UINT32_MAX) n = UINT32_MAX;
    }
    return tree[e->id] = (uint32_t)n;
}

/* The tree size walked node by node, up to cap: each step counts one node
 * of the tree, so it stops after at most cap steps. */
static size_t tree_walk(const ch_expr *e, size_t cap)
{
    size_t n = 1;
    for (int i = 0; i < nchildren(e) && n < cap; i++) n += tree_walk(child(e, i), cap - n);
    return n < cap ? n : cap;
}

/* Trees up to this size are walked, cheaper than the context's table for
 * a few nodes (the display tidy measures candidates up to 2001 nodes);
 * larger ones are measured on the DAG, as a tree may be exponentially
 * larger. The sizes are kept in the context, not per call: the printer
 * and the display tidy ask for the sizes of entries that share most of
 * their DAG (the n-trailer's are sums over the same bodies), and with a
 * memo per call each walked the shared part again, O(N^3) on the
 * n-trailer (6% of the 200-trailer's derive). An array by node id: 4
 * bytes a node, where a hash map of the same nodes took 90 MB more at the
 * peak of that derive. Exact sizes serve every cap. */
#define TREE_WALK_MAX 2048

size_t ch_tree_size(ch_ctx *ctx, const ch_expr *e, size_t cap)
{
    if (!e) return 0;
    size_t walked = tree_walk(e, cap < TREE_WALK_MAX ? cap : TREE_WALK_MAX);
    if (walked < TREE_WALK_MAX || cap <= TREE_WALK_MAX) return walked;
    if (ch_expr_id_array_fit(ctx, &ctx->tree, &ctx->ntree)) {
        ch_ctx_fail(ctx, CH_ERR_MEMORY, "out of memory");
        return cap;
    }
    size_t n = tree_size(e, ctx->tree);
    return n < cap ? n : cap;
}
