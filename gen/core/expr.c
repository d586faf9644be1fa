/* expr.c — the context, its arena, interning, symbol sets and the
 * canonical sums and products (numbers, symbols and functions: atoms.c;
 * reading expressions: inspect.c; maps: map.c).
 *
 * A constructor first brings its operands into canonical form in a small
 * accumulator (collect like terms of a sum, merge powers of a product), then
 * interns the result: a node is looked up by structural hash in the
 * context's table and created only when absent. Children are always
 * interned before their parents, so structural equality of a candidate is a
 * shallow comparison (kinds, coefficients, child pointers). */
#include "core/expr_impl.h"
#include "core/mem.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- arena ------------------------------------------------------------ */

/* Chunks and the zeroed tables (maps, the intern table) are mem.h blocks.
 * Past HUGE_AFTER bytes of arena, chunks are 2 MB huge pages: a large
 * derivation fills megabytes of nodes and probes its tables at random,
 * once per node made or looked up (the 200-trailer's derive took 0.7
 * times as long on huge pages as on 4 kB pages). */
#define CHUNK_MIN (1u << 16)
#define HUGE_AFTER (1u << 18)

static void chunk_free(chunk *c) { ch_mem_free(c, sizeof(chunk) + c->size); }

/* Arena memory with undefined contents: for nodes, which are copied over
 * whole at once (clearing them first showed up in profiles). arena_raw's
 * is aligned as malloc's. */
static void *arena_raw(ch_ctx *ctx, size_t size);
static void *arena_get(ch_ctx *ctx, size_t size, size_t align);
static const fmpq *coef_intern(ch_ctx *ctx, const fmpq_t v);
static const ch_symset *set_intern(ch_ctx *ctx, size_t n, const ch_symword *w);

void *ch_ctx_alloc(ch_ctx *ctx, size_t size)
{
    void *p = arena_raw(ctx, size);
    if (p) memset(p, 0, size);
    return p;
}

static void *arena_raw(ch_ctx *ctx, size_t size) { return arena_get(ctx, size, sizeof(max_align_t)); }

/* Arena memory at a multiple of align (a power of two, at most
 * max_align_t's): nodes need 8, and rounding each to 16 took 8 bytes
 * from every other one. */
static void *arena_get(ch_ctx *ctx, size_t size, size_t align)
{
    chunk *c = ctx->chunks;
    size_t at = c ? (c->used + align - 1) & ~(align - 1) : 0;
    if (!c || at > c->size || c->size - at < size) {
        size_t cap = size > CHUNK_MIN ? size : CHUNK_MIN;
        if (ctx->arena >= HUGE_AFTER && size <= CH_MEM_HUGE - sizeof(chunk))
            cap = CH_MEM_HUGE - sizeof(chunk);
        c = sizeof(chunk) + cap == CH_MEM_HUGE ? ch_ctx_block_take(ctx)
                                               : ch_mem_alloc_raw(sizeof(chunk) + cap);
        if (!c) {
            ch_ctx_fail(ctx, CH_ERR_MEMORY, "out of memory");
            return NULL;
        }
        c->size = cap;
        c->next = ctx->chunks;
        ctx->chunks = c;
        ctx->arena += cap;
        at = 0;
    }
    void *p = (char *)c->data + at;
    c->used = at + size;
    return p;
}

void *ch_ctx_block_take(ch_ctx *ctx)
{
    void *b = ctx->spare;
    if (!b) return ch_mem_alloc_raw(CH_MEM_HUGE);
    memcpy(&ctx->spare, b, sizeof ctx->spare);
    return b;
}

void ch_ctx_block_give(ch_ctx *ctx, void *block)
{
    if (!block) return;
    memcpy(block, &ctx->spare, sizeof ctx->spare);
    ctx->spare = block;
}

/* An array by node id (*a, *len entries, zero where not in use; NULL and
 * 0 when none) with an entry for every node made so far, and room for
 * those made until its next use; 0, or -1 when out of memory (*a kept). */
int ch_expr_id_array_fit(const ch_ctx *ctx, uint32_t **a, size_t *len)
{
    size_t need = ctx->nnodes + 1;
    if (*a && *len >= need) return 0;
    size_t grown = need + need / 2;
    uint32_t *t = *a ? ch_mem_resize(*a, *len * sizeof *t, grown * sizeof *t)
                     : ch_mem_alloc(grown * sizeof *t);
    if (!t) return -1;
    *a = t;
    *len = grown;
    return 0;
}

uint32_t *ch_ctx_ids_take(ch_ctx *ctx, size_t *len)
{
    /* (none kept: the first pass, or one has it) */
    if (ch_expr_id_array_fit(ctx, &ctx->ids, &ctx->nids)) return NULL;
    uint32_t *ids = ctx->ids;
    *len = ctx->nids;
    ctx->ids = NULL;
    ctx->nids = 0;
    return ids;
}

void ch_ctx_ids_give(ch_ctx *ctx, uint32_t *ids, size_t len, int clear)
{
    if (!ids) return;
    if (clear && len > ctx->nids) { /* keep the larger */
        ch_mem_free(ctx->ids, ctx->nids * sizeof *ctx->ids);
        ctx->ids = ids;
        ctx->nids = len;
    } else {
        ch_mem_free(ids, len * sizeof *ids);
    }
}

char *ch_ctx_strdup(ch_ctx *ctx, const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = ch_ctx_alloc(ctx, n);
    if (d) memcpy(d, s, n);
    return d;
}

/* ---- errors ----------------------------------------------------------- */

const ch_error *ch_ctx_error(const ch_ctx *ctx) { return &ctx->err; }

ch_status ch_ctx_report(const ch_ctx *ctx, ch_error *err, const char *file, int line,
                        int col, const char *prefix, int math_is_model)
{
    const ch_error *e = &ctx->err;
    ch_status code = e->code == CH_OK                         ? CH_ERR_MEMORY
                     : e->code == CH_ERR_MATH && math_is_model ? CH_ERR_MODEL
                                                               : e->code;
    return ch_error_set(err, code, file, line, col, "%s%s", prefix ? prefix : "",
                        e->code == CH_OK ? "out of memory" : e->msg);
}

int ch_ctx_exhausted(const ch_ctx *ctx)
{
    return ctx->err.code == CH_ERR_LIMIT || ctx->err.code == CH_ERR_MEMORY;
}

void ch_ctx_clear_error(ch_ctx *ctx)
{
    memset(&ctx->err, 0, sizeof ctx->err);
}

void ch_ctx_fail(ch_ctx *ctx, ch_status code, const char *fmt, ...)
{
    if (ctx->err.code != CH_OK) return; /* keep the first cause */
    ctx->err.code = code;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(ctx->err.msg, sizeof ctx->err.msg, fmt, ap);
    va_end(ap);
}

/* ---- maps ------------------------------------------------------------- */

ch_map *ch_ctx_memo(ch_ctx *ctx, ch_memo_id which) { return &ctx->memo[which]; }

ch_map *ch_ctx_new_map(ch_ctx *ctx)
{
    if (ctx->nmaps == ctx->cap_maps) {
        size_t cap = ctx->cap_maps ? 2 * ctx->cap_maps : 8;
        ch_map **maps = realloc(ctx->maps, cap * sizeof *maps);
        if (!maps) goto oom;
        ctx->maps = maps;
        ctx->cap_maps = cap;
    }
    ch_map *m = ch_ctx_alloc(ctx, sizeof *m);
    if (!m) return NULL;
    ch_map_init(m);
    ctx->maps[ctx->nmaps++] = m;
    return m;
oom:
    ch_ctx_fail(ctx, CH_ERR_MEMORY, "out of memory");
    return NULL;
}

/* ---- context ---------------------------------------------------------- */

ch_ctx *ch_ctx_new(void)
{
    ch_ctx *ctx = calloc(1, sizeof *ctx);
    if (!ctx) return NULL;
    fmpq_t zero;
    fmpq_init(zero);
    ctx->qzero = coef_intern(ctx, zero);
    fmpq_clear(zero);
    if (!ctx->qzero || !(ctx->empty = set_intern(ctx, 0, NULL))) {
        ch_ctx_free(ctx);
        return NULL;
    }
    ctx->zero = ch_num_si(ctx, 0);
    ctx->one = ch_num_si(ctx, 1);
    if (!ctx->zero || !ctx->one) {
        ch_ctx_free(ctx);
        return NULL;
    }
    return ctx;
}

void ch_ctx_free(ch_ctx *ctx)
{
    if (!ctx) return;
    ch_mem_free(ctx->nodes, ctx->cap_nodes * sizeof *ctx->nodes);
    for (size_t i = 0; i < ctx->coefcap; i++)
        if (ctx->coeftab[i].val) fmpq_clear(ctx->coeftab[i].val);
    ch_mem_free(ctx->coeftab, ctx->coefcap * sizeof *ctx->coeftab);
    ch_mem_free(ctx->table, ctx->tcap * sizeof *ctx->table);
    free(ctx->syms);
    ch_map_free(&ctx->sym_by_hash);
    ch_map_free(&ctx->scaled);
    for (int i = 0; i < CH_MEMO_COUNT; i++) ch_map_free(&ctx->memo[i]);
    for (size_t i = 0; i < ctx->nmaps; i++) ch_map_free(ctx->maps[i]);
    free(ctx->maps);
    ch_mem_free(ctx->settab, ctx->setcap * sizeof *ctx->settab);
    free(ctx->words);
    free(ctx->dense);
    free(ctx->touched);
    for (chunk *c = ctx->chunks, *next; c; c = next) {
        next = c->next;
        chunk_free(c);
    }
    while (ctx->spare) ch_mem_free(ch_ctx_block_take(ctx), CH_MEM_HUGE);
    ch_mem_free(ctx->ids, ctx->nids * sizeof *ctx->ids);
    ch_mem_free(ctx->tree, ctx->ntree * sizeof *ctx->tree);
    free(ctx);
}

void ch_ctx_set_node_limit(ch_ctx *ctx, size_t max) { ctx->node_limit = max; }
size_t ch_ctx_node_limit(const ch_ctx *ctx) { return ctx->node_limit; }
size_t ch_ctx_nnodes(const ch_ctx *ctx) { return ctx->nnodes; }
size_t ch_ctx_nsyms(const ch_ctx *ctx) { return ctx->nsyms; }

const ch_sym *ch_ctx_sym(const ch_ctx *ctx, uint32_t sid)
{
    return sid < ctx->nsyms ? ctx->syms[sid] : NULL;
}

const ch_expr *ch_ctx_node(const ch_ctx *ctx, uint32_t id)
{
    return id >= 1 && id <= ctx->nnodes ? ctx->nodes[id - 1] : NULL;
}

const ch_expr *ch_zero(ch_ctx *ctx) { return ctx->zero; }
const ch_expr *ch_one(ch_ctx *ctx) { return ctx->one; }

/* ---- hashing and interning -------------------------------------------- */

static uint64_t hash_fmpz(const fmpz_t z)
{
    if (!COEFF_IS_MPZ(*z)) return ch_mix64((uint64_t)*z);
    return ch_mix64(fmpz_fdiv_ui(z, 4294967291UL) ^ ((uint64_t)fmpz_sgn(z) << 40)
                 ^ fmpz_bits(z));
}

/* Every node's hash takes its coefficients': a small rational (the usual
 * case) is mixed once, inline. */
static inline uint64_t hash_q(const fmpq_t q)
{
    const fmpz *a = fmpq_numref(q), *b = fmpq_denref(q);
    if (!COEFF_IS_MPZ(*a) && !COEFF_IS_MPZ(*b))
        return ch_mix64((uint64_t)*a * 0x9E3779B97F4A7C15ULL + (uint64_t)*b);
    return hash_fmpz(a) * 31 + hash_fmpz(b);
}

uint64_t ch_hash_q(const fmpq_t q) { return hash_q(q); }

/* The hash of a node in three parts, so that a sum or product can be
 * looked up from its pairs before it is made (intern_pairs). */
static uint64_t hash_head(int kind, int fun, uint32_t n, const fmpq_t num)
{
    return ch_mix64(((uint64_t)kind << 8 | (uint64_t)fun) ^ (uint64_t)n << 16) * 1000003
           ^ hash_q(num);
}

static uint64_t hash_pairs(uint64_t h, size_t n, const ch_pair *p)
{
    for (size_t i = 0; i < n; i++)
        h = (h * 1000003 ^ ch_mix64(p[i].e->id)) * 31 ^ hash_q(p[i].c);
    return h;
}

/* The hash of a node without pairs (a sum's or product's is hash_pairs
 * of its head). */
static uint64_t node_hash(const ch_expr *e)
{
    uint64_t h = hash_head(e->kind, e->fun, e->n, e->num);
    if (e->kind == CH_SYM) h = h * 1000003 ^ ch_mix64(ch_sym_of(e)->sid + 1);
    if (e->kind == CH_FUN || e->kind == CH_POW)
        for (uint32_t i = 0; i < e->n; i++) h = h * 1000003 ^ ch_mix64(e->pair[i].e->id);
    return h;
}

/* Whether the sum or product a is kind (num; n pairs p). */
static int pairs_equal(const ch_expr *a, int kind, const fmpq_t num, size_t n,
                       const ch_pair *p)
{
    if (a->kind != kind || a->n != n || !fmpq_equal(a->num, num)) return 0;
    for (size_t i = 0; i < n; i++)
        if (a->pair[i].e != p[i].e || !fmpq_equal(a->pair[i].c, p[i].c)) return 0;
    return 1;
}

/* The pairs of a node without coefficients: a symbol's one, a
 * function's arguments, a power's base and exponent. */
static size_t plain_pairs(const ch_expr *e)
{
    return e->kind == CH_SYM ? 1 : e->kind == CH_NUM ? 0 : e->n;
}

/* Whether a is b, a node without coefficients. */
static int node_equal(const ch_expr *a, const ch_expr *b)
{
    if (a->hash != b->hash || a->kind != b->kind || a->fun != b->fun || a->n != b->n
        || !fmpq_equal(a->num, b->num))
        return 0;
    if (a->kind == CH_SYM) return ch_sym_of(a) == ch_sym_of(b);
    for (size_t i = 0; i < plain_pairs(a); i++)
        if (a->pair[i].e != b->pair[i].e) return 0;
    return 1;
}

/* A table of (hash, set) slots, open addressing, grown to twice
 * its size (1024 when empty); 0, or -1 when out of memory (table kept). */
static int slots_grow(ch_map_slot **tab, size_t *cap)
{
    size_t ncap = *cap ? 2 * *cap : 1024;
    ch_map_slot *t = ch_mem_alloc(ncap * sizeof *t);
    if (!t) return -1;
    for (size_t j = 0; j < *cap; j++) {
        if (!(*tab)[j].val) continue;
        size_t i = (*tab)[j].key & (ncap - 1);
        while (t[i].val) i = (i + 1) & (ncap - 1);
        t[i] = (*tab)[j];
    }
    ch_mem_free(*tab, *cap * sizeof **tab);
    *tab = t;
    *cap = ncap;
    return 0;
}

/* The context's copy of the rational v, made on first use (in the arena,
 * cleared with the context); NULL when out of memory (the context failed).
 * A model has few distinct coefficients and exponents: the table stays
 * in the cache, and most are small integers, looked up directly. */
static const fmpq *coef_intern(ch_ctx *ctx, const fmpq_t v)
{
    const fmpz a = *fmpq_numref(v);
    int small = *fmpq_denref(v) == 1 && !COEFF_IS_MPZ(a) && a >= -COEF_SMALL && a <= COEF_SMALL;
    if (small && ctx->qsmall[a + COEF_SMALL]) return ctx->qsmall[a + COEF_SMALL];
    uint64_t h = hash_q(v) | 1; /* a slot's key 0 means empty */
    if (2 * (ctx->ncoefs + 1) > ctx->coefcap && slots_grow(&ctx->coeftab, &ctx->coefcap)) {
        ch_ctx_fail(ctx, CH_ERR_MEMORY, "out of memory");
        return NULL;
    }
    size_t mask = ctx->coefcap - 1, i = h & mask;
    for (; ctx->coeftab[i].val; i = (i + 1) & mask)
        if (ctx->coeftab[i].key == h && fmpq_equal(ctx->coeftab[i].val, v))
            return ctx->coeftab[i].val;
    fmpq *q = arena_raw(ctx, sizeof *q);
    if (!q) return NULL;
    fmpq_init(q);
    ch_fmpq_set(q, v);
    ctx->coeftab[i].key = h;
    ctx->coeftab[i].val = q;
    ctx->ncoefs++;
    if (small) ctx->qsmall[a + COEF_SMALL] = q;
    return q;
}

/* An intern slot: the node's address with the top 16 bits of its hash
 * above it (user-space addresses have 48 bits), so that a probe of a
 * slot that holds another node rarely visits that node, in 8 bytes: at
 * 3.8 M nodes the table of pointer and full hash was 134 MB, more than
 * the cache, and its first probe was most of the time of interning. The
 * node keeps the low 32 bits, which place it when the table grows. */
#define SLOT_TAG 0xFFFF000000000000ULL

static uint64_t slot_of(const ch_expr *e, uint64_t h)
{
    return (uint64_t)(uintptr_t)e | (h & SLOT_TAG);
}

static ch_expr *slot_node(uint64_t slot) { return (ch_expr *)(uintptr_t)(slot & ~SLOT_TAG); }

/* Slots ahead of the one moved whose node intern_grow starts to load: a
 * node is at a random place of the arena, about 100 ns away once the
 * arena is larger than the cache, and the move of a slot takes a few. */
#define GROW_AHEAD 48

static int intern_grow(ch_ctx *ctx)
{
    size_t ncap = ctx->tcap ? 2 * ctx->tcap : 1024;
    uint64_t *t = ch_mem_alloc(ncap * sizeof *t);
    if (!t) return -1;
    for (size_t j = 0; j < ctx->tcap; j++) {
#if defined(__GNUC__)
        if (j + GROW_AHEAD < ctx->tcap && ctx->table[j + GROW_AHEAD])
            __builtin_prefetch(&slot_node(ctx->table[j + GROW_AHEAD])->hash);
#endif
        if (!ctx->table[j]) continue;
        size_t i = slot_node(ctx->table[j])->hash & (ncap - 1);
        while (t[i]) i = (i + 1) & (ncap - 1);
        t[i] = ctx->table[j];
    }
    ch_mem_free(ctx->table, ctx->tcap * sizeof *ctx->table);
    ctx->table = t;
    ctx->tcap = ncap;
    return 0;
}

/* ---- symbol sets -------------------------------------------------------- */

static uint64_t set_hash(size_t n, const ch_symword *w)
{
    uint64_t h = ch_mix64(n);
    for (size_t i = 0; i < n; i++) h = ch_mix64(h ^ (w[i].bits + w[i].at * 0x9E3779B97F4A7C15ULL));
    return h;
}

/* The set of the n words w (nonzero, increasing at): the one made before,
 * or a new one in the arena. */
static const ch_symset *set_intern(ch_ctx *ctx, size_t n, const ch_symword *w)
{
    uint64_t h = set_hash(n, w);
    if (2 * (ctx->nsets + 1) > ctx->setcap && slots_grow(&ctx->settab, &ctx->setcap)) {
        ch_ctx_fail(ctx, CH_ERR_MEMORY, "out of memory");
        return NULL;
    }
    size_t mask = ctx->setcap - 1, i = h & mask;
    for (; ctx->settab[i].val; i = (i + 1) & mask) {
        const ch_symset *s = ctx->settab[i].val;
        if (ctx->settab[i].key == h && s->n == n
            && (n == 0 || memcmp(s->w, w, n * sizeof *w) == 0))
            return s;
    }
    ch_symset *s = arena_raw(ctx, sizeof *s + n * sizeof *w);
    if (!s) return NULL;
    s->n = n;
    if (n) memcpy(s->w, w, n * sizeof *w);
    ctx->settab[i].key = h;
    ctx->settab[i].val = s;
    ctx->nsets++;
    return s;
}

/* A union ORs the sets' words into ctx->dense, all zero outside a union,
 * marks the word numbers it made nonzero in the bitmap ctx->touched and
 * counts them in *t (merging each of a long sum's sets into the union so
 * far would cost O(words) each). */
static void dense_or(ch_ctx *ctx, size_t *t, const ch_symset *s)
{
    for (size_t i = 0; i < s->n; i++) {
        uint64_t at = s->w[i].at;
        if (!ctx->dense[at]) {
            ctx->touched[at / 64] |= 1ULL << (at % 64);
            (*t)++;
        }
        ctx->dense[at] |= s->w[i].bits;
    }
}

/* The union of the t words in ctx->dense, taken in increasing order from
 * the bitmap (sorting the word numbers was 4% of the 400-trailer's
 * derivation, past 16 words); dense and touched are zero again after. */
static const ch_symset *dense_take(ch_ctx *ctx, size_t t)
{
    ch_symword *w = ctx->words;
    for (size_t m = 0, k = 0; k < t; m++) {
        for (uint64_t bits = ctx->touched[m]; bits; bits &= bits - 1, k++) {
            w[k].at = 64 * m + ch_lowest_bit(bits);
            w[k].bits = ctx->dense[w[k].at];
            ctx->dense[w[k].at] = 0;
        }
        ctx->touched[m] = 0;
    }
    return set_intern(ctx, t, w);
}

/* The union buffers at n words (the new dense words and marks zero); 0,
 * or -1. */
int ch_expr_words_grow(ch_ctx *ctx, size_t n)
{
    ch_symword *w = realloc(ctx->words, n * sizeof *w);
    if (!w) return -1;
    ctx->words = w;
    uint64_t *d = realloc(ctx->dense, n * sizeof *d), *t;
    if (!d) return -1;
    memset(d + ctx->nwords, 0, (n - ctx->nwords) * sizeof *d);
    ctx->dense = d;
    size_t marks = (ctx->nwords + 63) / 64, nmarks = (n + 63) / 64;
    if (!(t = realloc(ctx->touched, nmarks * sizeof *t))) return -1;
    memset(t + marks, 0, (nmarks - marks) * sizeof *t);
    ctx->touched = t;
    ctx->nwords = n;
    return 0;
}

/* The first of b's words from j on whose number is at least at, found by
 * galloping (doubling steps, then ch_symset_seek past the last step
 * short of it): a few words of a product's coefficient sought in the
 * dozens of a large sum's set cost O(log) each, where walking was
 * O(words). */
static size_t gallop(const ch_symset *b, size_t j, uint64_t at)
{
    size_t step = 1;
    while (j + step < b->n && b->w[j + step].at < at) step *= 2;
    return ch_symset_seek(b, j + step / 2, at);
}

static int subset(const ch_symset *a, const ch_symset *b)
{
    if (a->n > b->n) return 0;
    for (size_t i = 0, j = 0; i < a->n; i++, j++) {
        if (j < b->n && b->w[j].at < a->w[i].at) j = gallop(b, j, a->w[i].at);
        if (j == b->n || b->w[j].at != a->w[i].at || (a->w[i].bits & ~b->w[j].bits))
            return 0;
    }
    return 1;
}

/* The symbols below a new node: most nodes have those of one child (a
 * product of a coefficient and a function, a sum of terms in nested sets
 * of symbols), which are taken as they are, without a lookup. */
static const ch_symset *node_set(ch_ctx *ctx, const ch_expr *c)
{
    if (c->kind == CH_SYM) {
        ch_symword w = {ch_sym_of(c)->bit / 64, 1ULL << (ch_sym_of(c)->bit % 64)};
        return set_intern(ctx, 1, &w);
    }
    /* the first set that holds the others so far, until there is none */
    const ch_symset *one = ctx->empty;
    int i = 0, nc = nchildren(c);
    for (; i < nc; i++) {
        const ch_symset *x = child(c, i)->symset;
        if (x == one) continue;
        if (!one->n) {
            one = x;
            continue;
        }
        if (subset(x, one)) continue;
        if (!subset(one, x)) break;
        one = x;
    }
    if (i == nc) return one;
    size_t t = 0;
    dense_or(ctx, &t, one);
    for (; i < nc; i++) dense_or(ctx, &t, child(c, i)->symset);
    return dense_take(ctx, t);
}

const ch_symset *ch_symset_of(ch_ctx *ctx, size_t n, const ch_expr *const *e)
{
    size_t t = 0;
    for (size_t i = 0; i < n; i++)
        if (e[i]) dense_or(ctx, &t, e[i]->symset);
    return dense_take(ctx, t);
}

const ch_symset *ch_symset_union(ch_ctx *ctx, const ch_symset *a, const ch_symset *b)
{
    if (!a || !b) return NULL;
    if (subset(b, a)) return a;
    if (subset(a, b)) return b;
    size_t t = 0;
    dense_or(ctx, &t, a);
    dense_or(ctx, &t, b);
    return dense_take(ctx, t);
}

const ch_symset *ch_symset_of_kind(ch_ctx *ctx, ch_sym_kind kind)
{
    ch_symword *w = ctx->words;
    size_t nw = 0;
    for (size_t i = 0; i < ctx->nsyms; i++) { /* a kind's bits increase with sid */
        if (ctx->syms[i]->kind != kind) continue;
        uint64_t at = ctx->syms[i]->bit / 64, bit = 1ULL << (ctx->syms[i]->bit % 64);
        if (nw && w[nw - 1].at == at) w[nw - 1].bits |= bit;
        else w[nw++] = (ch_symword){at, bit};
    }
    return set_intern(ctx, nw, w);
}

const ch_symset *ch_symset_empty(const ch_ctx *ctx) { return ctx->empty; }

/* Room in the intern table for one more node, and *at the first slot to
 * probe for hash h; 0, or -1 (the context failed). */
static int intern_probe(ch_ctx *ctx, uint64_t h, size_t *at)
{
    if (2 * (ctx->nnodes + 1) > ctx->tcap && intern_grow(ctx)) {
        ch_ctx_fail(ctx, CH_ERR_MEMORY, "out of memory");
        return -1;
    }
    *at = h & (ctx->tcap - 1);
    return 0;
}

/* Arena memory for a node not found, within the node limit. */
static ch_expr *node_alloc(ch_ctx *ctx, size_t size)
{
    if (ctx->node_limit && ctx->nnodes >= ctx->node_limit) {
        ch_ctx_fail(ctx, CH_ERR_LIMIT,
                    "expression size limit of %zu nodes exceeded",
                    ctx->node_limit);
        return NULL;
    }
    if (ctx->nnodes == ctx->cap_nodes) {
        size_t cap = ctx->cap_nodes ? 2 * ctx->cap_nodes : 1024;
        /* on huge pages past 2 MB (mem.h): the 200-trailer's 31 MB array,
         * grown by realloc past glibc's mmap threshold, took 7 400 faults */
        ch_expr **nodes = ch_mem_resize(ctx->nodes, ctx->cap_nodes * sizeof *nodes,
                                        cap * sizeof *nodes);
        if (!nodes) {
            ch_ctx_fail(ctx, CH_ERR_MEMORY, "out of memory");
            return NULL;
        }
        ctx->nodes = nodes;
        ctx->cap_nodes = cap;
    }
    ch_expr *e = arena_get(ctx, size, _Alignof(ch_expr));
    if (e && ((uintptr_t)e & SLOT_TAG)) { /* not on any system we know of */
        ch_ctx_fail(ctx, CH_ERR_MEMORY, "node address beyond 48 bits");
        return NULL;
    }
    return e;
}

/* Numbers e (a new node, made in the arena with its hash h) and keeps it
 * in the empty slot i of the intern table; e, or NULL (the context
 * failed). */
static const ch_expr *admit(ch_ctx *ctx, ch_expr *e, uint64_t h, size_t i)
{
    unsigned depth = 0;
    for (int j = 0; j < nchildren(e); j++)
        if (child(e, j)->depth > depth) depth = child(e, j)->depth;
    e->depth = (uint16_t)(depth < 65535 ? depth + 1 : 65535);
    if (!(e->symset = node_set(ctx, e))) return NULL;
    e->id = (uint32_t)++ctx->nnodes;
    ctx->nodes[e->id - 1] = e;
    ctx->table[i] = slot_of(e, h);
    return e;
}

const ch_expr *ch_expr_intern(ch_ctx *ctx, ch_expr *cand)
{
    uint64_t h = node_hash(cand);
    cand->hash = (uint32_t)h;
    size_t i;
    if (intern_probe(ctx, h, &i)) return NULL;
    /* the tag spares a visit to nearly every node probed */
    for (uint64_t tag = h & SLOT_TAG; ctx->table[i]; i = (i + 1) & (ctx->tcap - 1))
        if ((ctx->table[i] & SLOT_TAG) == tag && node_equal(slot_node(ctx->table[i]), cand))
            return slot_node(ctx->table[i]);
    size_t size = sizeof(ch_expr) + plain_pairs(cand) * sizeof(ch_pair);
    ch_expr *e = node_alloc(ctx, size);
    if (!e) return NULL;
    memcpy(e, cand, size);
    if (!(e->num = coef_intern(ctx, cand->num))) return NULL;
    return admit(ctx, e, h, i);
}

/* The sum or product kind (num; n canonical pairs p, no collapsing
 * here), looked up from the pairs: most are found, and building a node
 * to find them cost an allocation and a copy of every coefficient. */
static const ch_expr *intern_pairs(ch_ctx *ctx, ch_kind kind,
                                   const fmpq_t num, size_t n,
                                   const ch_pair *p)
{
    uint64_t h = hash_pairs(hash_head(kind, 0, (uint32_t)n, num), n, p);
    size_t i;
    if (intern_probe(ctx, h, &i)) return NULL;
    for (uint64_t tag = h & SLOT_TAG; ctx->table[i]; i = (i + 1) & (ctx->tcap - 1)) {
        const ch_expr *a = slot_node(ctx->table[i]);
        if ((ctx->table[i] & SLOT_TAG) == tag && a->hash == (uint32_t)h
            && pairs_equal(a, kind, num, n, p))
            return a;
    }
    ch_expr *e = node_alloc(ctx, sizeof(ch_expr) + n * sizeof(ch_pair));
    if (!e) return NULL;
    memset(e, 0, sizeof *e);
    e->kind = (uint8_t)kind;
    e->n = (uint32_t)n;
    e->hash = (uint32_t)h;
    for (size_t j = 0; j < n; j++)
        if (!(e->pair[j].c = coef_intern(ctx, p[j].c))) return NULL;
    if (!(e->num = coef_intern(ctx, num))) return NULL;
    for (size_t j = 0; j < n; j++) e->pair[j].e = p[j].e;
    return admit(ctx, e, h, i);
}

/* ---- accumulators ----------------------------------------------------- */

/* A pair under construction, with its own rational. */
typedef struct {
    const ch_expr *e;
    fmpq_t c;
} acc_pair;

/* Pairs under construction: an unsorted growable array of (node, rational). */
typedef struct {
    fmpq_t num;  /* constant of a sum, coefficient of a product */
    acc_pair *p;
    size_t n, cap;
    int failed;
} acc;

static void acc_init(acc *a, slong num)
{
    fmpq_init(a->num);
    fmpq_set_si(a->num, num, 1);
    a->p = NULL;
    a->n = a->cap = 0;
    a->failed = 0;
}

static void acc_clear(acc *a)
{
    fmpq_clear(a->num);
    for (size_t i = 0; i < a->n; i++) fmpq_clear(a->p[i].c);
    free(a->p);
}

static void acc_push(ch_ctx *ctx, acc *a, const ch_expr *e, const fmpq_t c)
{
    if (!e) {
        a->failed = 1;
        return;
    }
    if (a->n == a->cap) {
        size_t cap = a->cap ? 2 * a->cap : 8;
        acc_pair *p = realloc(a->p, cap * sizeof *p);
        if (!p) {
            ch_ctx_fail(ctx, CH_ERR_MEMORY, "out of memory");
            a->failed = 1;
            return;
        }
        a->p = p;
        a->cap = cap;
    }
    a->p[a->n].e = e;
    fmpq_init(a->p[a->n].c);
    ch_fmpq_set(a->p[a->n].c, c);
    a->n++;
}

static int pair_cmp(const void *x, const void *y)
{
    uint32_t a = ((const acc_pair *)x)->e->id, b = ((const acc_pair *)y)->e->id;
    return (a > b) - (a < b);
}

static int u64_cmp(const void *x, const void *y)
{
    uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
    return (a > b) - (a < b);
}

void ch_sort_u64(uint64_t *x, size_t n)
{
    if (n > 16) {
        qsort(x, n, sizeof *x, u64_cmp);
        return;
    }
    for (size_t i = 1; i < n; i++) {
        uint64_t v = x[i];
        size_t j = i;
        while (j > 0 && x[j - 1] > v) x[j] = x[j - 1], j--;
        x[j] = v;
    }
}

/* Sorts a's pairs by node id (stably). The ids are read once, into keys
 * id << 32 | position: comparing through the pointers read a node at
 * each comparison, a cache miss on a large DAG (qsort was 11% of the
 * instructions of the 50-trailer's emit). A sorted run costs one pass. */
static void acc_sort(acc *a)
{
    enum { SMALL = 64 };
    uint64_t ksmall[SMALL];
    acc_pair psmall[SMALL];
    size_t n = a->n;
    uint64_t *k = n <= SMALL ? ksmall : malloc(n * sizeof *k);
    acc_pair *tmp = n <= SMALL ? psmall : malloc(n * sizeof *tmp);
    if (!k || !tmp) { /* no room for the keys: the slow way */
        qsort(a->p, n, sizeof *a->p, pair_cmp);
    } else {
        int sorted = 1;
        for (size_t i = 0; i < n; i++) {
            k[i] = (uint64_t)a->p[i].e->id << 32 | i;
            if (i > 0 && k[i] >> 32 < k[i - 1] >> 32) sorted = 0;
        }
        if (!sorted) {
            ch_sort_u64(k, n);
            for (size_t i = 0; i < n; i++) tmp[i] = a->p[(uint32_t)k[i]];
            memcpy(a->p, tmp, n * sizeof *tmp);
        }
    }
    if (k != ksmall) free(k);
    if (tmp != psmall) free(tmp);
}

/* Sorts by node id, adds the rationals of equal nodes, drops zeros. */
static void acc_normalize(acc *a)
{
    if (a->n > 1) acc_sort(a);
    size_t w = 0;
    for (size_t i = 0; i < a->n; i++) {
        if (w > 0 && a->p[w - 1].e == a->p[i].e) {
            fmpq_add(a->p[w - 1].c, a->p[w - 1].c, a->p[i].c);
            fmpq_clear(a->p[i].c);
            continue;
        }
        if (w > 0 && fmpq_is_zero(a->p[w - 1].c)) {
            fmpq_clear(a->p[w - 1].c);
            w--;
        }
        a->p[w++] = a->p[i];
    }
    if (w > 0 && fmpq_is_zero(a->p[w - 1].c)) {
        fmpq_clear(a->p[w - 1].c);
        w--;
    }
    a->n = w;
}

static const ch_expr *scale_add(ch_ctx *ctx, const fmpq_t c,
                                const ch_expr *sum);

/* coef * prod(p^c) from canonical factors, with the collapsing rules. */
static const ch_expr *mul_from_pairs(ch_ctx *ctx, const fmpq_t coef,
                                     size_t n, const ch_pair *p)
{
    if (fmpq_is_zero(coef)) return ctx->zero;
    if (n == 0) return ch_num_q(ctx, coef);
    if (n == 1 && fmpq_is_one(p[0].c)) {
        if (fmpq_is_one(coef)) return p[0].e;
        if (p[0].e->kind == CH_ADD) return scale_add(ctx, coef, p[0].e);
    }
    return intern_pairs(ctx, CH_MUL, coef, n, p);
}

/* The sum (kind CH_ADD, no collapsing) or product (CH_MUL, mul_from_pairs)
 * of a's normalized pairs, seen as ch_pairs whose rationals are a's. */
static const ch_expr *acc_finish(ch_ctx *ctx, acc *a, ch_kind kind)
{
    enum { SMALL = 64 };
    ch_pair vsmall[SMALL];
    ch_pair *v = a->n <= SMALL ? vsmall : malloc(a->n * sizeof *v);
    if (!v) {
        ch_ctx_fail(ctx, CH_ERR_MEMORY, "out of memory");
        return NULL;
    }
    for (size_t i = 0; i < a->n; i++) v[i].e = a->p[i].e, v[i].c = a->p[i].c;
    const ch_expr *e = kind == CH_ADD ? intern_pairs(ctx, CH_ADD, a->num, a->n, v)
                                      : mul_from_pairs(ctx, a->num, a->n, v);
    if (v != vsmall) free(v);
    return e;
}

/* c * term for a term that may stand in a sum (never NUM or ADD). */
static const ch_expr *scale_term(ch_ctx *ctx, const fmpq_t c,
                                 const ch_expr *term)
{
    if (fmpq_is_one(c)) return term;
    if (term->kind == CH_MUL) return mul_from_pairs(ctx, c, term->n, term->pair);
    ch_pair one = {.e = term, .c = ctx->one->num};
    return mul_from_pairs(ctx, c, 1, &one);
}

/* The term of a sum that carries the product's coefficient separately. */
const ch_expr *ch_expr_mul_rest(ch_ctx *ctx, const ch_expr *mul)
{
    fmpq_t one;
    fmpq_init(one);
    fmpq_one(one);
    const ch_expr *e = mul_from_pairs(ctx, one, mul->n, mul->pair);
    fmpq_clear(one);
    return e;
}

/* ---- sums ------------------------------------------------------------- */

static void add_into(ch_ctx *ctx, acc *a, const ch_expr *e, const fmpq_t m)
{
    if (!e) {
        a->failed = 1;
        return;
    }
    fmpq_t c;
    fmpq_init(c);
    switch (e->kind) {
    case CH_NUM:
        fmpq_addmul(a->num, m, e->num);
        break;
    case CH_ADD:
        fmpq_addmul(a->num, m, e->num);
        for (uint32_t i = 0; i < e->n; i++) {
            fmpq_mul(c, m, e->pair[i].c);
            acc_push(ctx, a, e->pair[i].e, c);
        }
        break;
    case CH_MUL:
        if (!fmpq_is_one(e->num)) {
            fmpq_mul(c, m, e->num);
            acc_push(ctx, a, ch_expr_mul_rest(ctx, e), c);
            break;
        }
        /* fall through */
    default:
        acc_push(ctx, a, e, m);
    }
    fmpq_clear(c);
}

static const ch_expr *add_build(ch_ctx *ctx, acc *a)
{
    const ch_expr *e = NULL;
    if (a->failed) goto out;
    acc_normalize(a);
    if (a->n == 0)
        e = ch_num_q(ctx, a->num);
    else if (a->n == 1 && fmpq_is_zero(a->num))
        e = scale_term(ctx, a->p[0].c, a->p[0].e);
    else
        e = acc_finish(ctx, a, CH_ADD);
out:
    acc_clear(a);
    return e;
}

/* Sums of at least this many terms have their multiples memoized. */
#define SCALE_MEMO_MIN 16

/* c * sum. A long sum is scaled again and again with the same c (made
 * primitive as a factor, negated, its coefficient distributed back when
 * it stands alone in a product): each time a pass over its terms that
 * finds the node already there. On the 200-trailer's emit these passes
 * were most of the terms interned. The memo is keyed by the sum and a
 * hash of c. The node found is c' * sum for some c' != 0 (a sum with the
 * same terms in the same order), and c' = c exactly when the first
 * coefficients agree. */
static const ch_expr *scale_add(ch_ctx *ctx, const fmpq_t c,
                                const ch_expr *sum)
{
    int memo = sum->n >= SCALE_MEMO_MIN && !fmpq_is_zero(c);
    uint64_t key = (uint64_t)sum->id << 32 | (uint32_t)hash_q(c);
    const ch_expr *r = memo ? ch_map_get(&ctx->scaled, key) : NULL;
    if (r) {
        fmpq_t lead;
        fmpq_init(lead);
        fmpq_mul(lead, c, sum->pair[0].c);
        int same = fmpq_equal(r->pair[0].c, lead);
        fmpq_clear(lead);
        if (same) return r;
    }
    acc a;
    acc_init(&a, 0);
    add_into(ctx, &a, sum, c);
    r = add_build(ctx, &a);
    /* (out of memory there only loses the memo) */
    if (memo && r) (void)ch_map_put(&ctx->scaled, key, (void *)r);
    return r;
}

const ch_expr *ch_lincomb(ch_ctx *ctx, const fmpq_t c0, size_t n,
                          const fmpq *c, const ch_expr *const *e)
{
    acc a;
    acc_init(&a, 0);
    if (c0) ch_fmpq_set(a.num, c0);
    for (size_t i = 0; i < n; i++) add_into(ctx, &a, e[i], c + i);
    return add_build(ctx, &a);
}

const ch_expr *ch_add_n(ch_ctx *ctx, size_t n, const ch_expr *const *terms)
{
    acc a;
    fmpq_t one;
    acc_init(&a, 0);
    fmpq_init(one);
    fmpq_one(one);
    for (size_t i = 0; i < n; i++) add_into(ctx, &a, terms[i], one);
    fmpq_clear(one);
    return add_build(ctx, &a);
}

const ch_expr *ch_add(ch_ctx *ctx, const ch_expr *a, const ch_expr *b)
{
    const ch_expr *t[2] = {a, b};
    return ch_add_n(ctx, 2, t);
}

const ch_expr *ch_scale(ch_ctx *ctx, const fmpq_t c, const ch_expr *e)
{
    if (e && e->kind == CH_ADD) return scale_add(ctx, c, e);
    acc a;
    acc_init(&a, 0);
    add_into(ctx, &a, e, c);
    return add_build(ctx, &a);
}

const ch_expr *ch_scale_si(ch_ctx *ctx, slong c, const ch_expr *e)
{
    fmpq_t q;
    fmpq_init(q);
    fmpq_set_si(q, c, 1);
    const ch_expr *r = ch_scale(ctx, q, e);
    fmpq_clear(q);
    return r;
}

const ch_expr *ch_neg(ch_ctx *ctx, const ch_expr *e)
{
    return ch_scale_si(ctx, -1, e);
}

const ch_expr *ch_sub(ch_ctx *ctx, const ch_expr *a, const ch_expr *b)
{
    return ch_add(ctx, a, ch_neg(ctx, b));
}

/* ---- products and powers ---------------------------------------------- */

static int is_integer(const fmpq_t q) { return fmpz_is_one(fmpq_denref(q)); }

/* Exponents beyond this (in bits of the result) are refused: x^(10^9)
 * with a numeric base would exhaust memory. */
#define MAX_POW_BITS 100000
/* Coefficients are bounded too: a product of many huge literals would
 * otherwise spend minutes in bignum arithmetic. */
#define MAX_COEFF_BITS 200000

static void mul_into(ch_ctx *ctx, acc *a, const ch_expr *e, const fmpq_t r);

/* Pushes the factor z^f (0 < f < 1) for an integer z > 1, or multiplies
 * the coefficient when it is exact. */
static void prime_power_into(ch_ctx *ctx, acc *a, const fmpz_t z,
                             const fmpq_t f)
{
    fmpz_t fl, t;
    fmpq_t frac, zq;
    fmpz_init(fl);
    fmpz_init(t);
    fmpq_init(frac);
    fmpq_init(zq);
    fmpz_fdiv_q(fl, fmpq_numref(f), fmpq_denref(f));
    fmpq_sub_fmpz(frac, f, fl);
    fmpz_pow_ui(t, z, fmpz_get_ui(fl));
    fmpz_mul(fmpq_numref(a->num), fmpq_numref(a->num), t);
    fmpq_canonicalise(a->num);
    if (!fmpq_is_zero(frac)) {
        fmpz_set(fmpq_numref(zq), z);
        acc_push(ctx, a, ch_num_q(ctx, zq), frac);
    }
    fmpz_clear(fl);
    fmpz_clear(t);
    fmpq_clear(frac);
    fmpq_clear(zq);
}

/* a->num *= z^f for an integer z > 1 and 0 < f < 1. Canonical: z is
 * factored and every prime's power split into an integer part (into the
 * coefficient) and a fractional one, so sqrt(8) is 2*sqrt(2) and
 * sqrt(2)*sqrt(3) equals sqrt(6). Integers too large to factor quickly
 * stay whole. */
static void int_root_into(ch_ctx *ctx, acc *a, const fmpz_t z, const fmpq_t f)
{
    if (fmpz_is_one(z)) return;
    if (fmpz_bits(z) > 64) {
        fmpq_t zq;
        fmpq_init(zq);
        fmpz_set(fmpq_numref(zq), z);
        acc_push(ctx, a, ch_num_q(ctx, zq), f);
        fmpq_clear(zq);
        return;
    }
    fmpz_factor_t fac;
    fmpq_t g;
    fmpz_factor_init(fac);
    fmpq_init(g);
    fmpz_factor(fac, z);
    for (slong i = 0; i < fac->num; i++) {
        fmpq_mul_ui(g, f, fac->exp[i]);
        prime_power_into(ctx, a, fac->p + i, g);
    }
    fmpz_factor_clear(fac);
    fmpq_clear(g);
}

/* a->num *= v^r for a rational v. Canonical result: positive integer bases
 * greater than 1 with exponents in (0, 1); negative bases keep their
 * non-integer exponent as a factor (the value is undefined in the reals). */
static void num_pow_into(ch_ctx *ctx, acc *a, const fmpq_t v, const fmpq_t r)
{
    if (fmpq_is_zero(v)) {
        if (fmpq_sgn(r) < 0) {
            ch_ctx_fail(ctx, CH_ERR_MATH, "division by zero");
            a->failed = 1;
        } else if (!fmpq_is_zero(r)) {
            fmpq_zero(a->num);
        }
        return;
    }
    if (fmpq_is_one(v)) return;
    if (fmpz_bits(fmpq_numref(r)) > 40) goto too_big;
    fmpz_t fl;
    fmpq_t frac, t;
    fmpz_init(fl);
    fmpq_init(frac);
    fmpq_init(t);
    fmpz_fdiv_q(fl, fmpq_numref(r), fmpq_denref(r));
    fmpq_sub_fmpz(frac, r, fl);
    slong bits = (slong)(fmpz_bits(fmpq_numref(v)) + fmpz_bits(fmpq_denref(v)));
    if (!fmpq_is_zero(frac) && fmpq_sgn(v) < 0) {
        acc_push(ctx, a, ch_num_q(ctx, v), r);
    } else if (bits * fmpz_get_si(fl) > MAX_POW_BITS
               || bits * fmpz_get_si(fl) < -MAX_POW_BITS) {
        fmpz_clear(fl);
        fmpq_clear(frac);
        fmpq_clear(t);
        goto too_big;
    } else {
        fmpq_pow_si(t, v, fmpz_get_si(fl));
        fmpq_mul(a->num, a->num, t);
        if (fmpz_bits(fmpq_numref(a->num)) + fmpz_bits(fmpq_denref(a->num))
            > MAX_COEFF_BITS) {
            fmpz_clear(fl);
            fmpq_clear(frac);
            fmpq_clear(t);
            ch_ctx_fail(ctx, CH_ERR_LIMIT,
                        "numeric value too large (beyond %d bits)",
                        MAX_COEFF_BITS);
            a->failed = 1;
            return;
        }
        if (!fmpq_is_zero(frac)) {
            /* (n/d)^f = n^f * d^(1-f) / d */
            fmpq_t g;
            fmpq_init(g);
            fmpq_one(g);
            fmpq_sub(g, g, frac);
            fmpz_mul(fmpq_denref(a->num), fmpq_denref(a->num), fmpq_denref(v));
            fmpq_canonicalise(a->num);
            int_root_into(ctx, a, fmpq_numref(v), frac);
            int_root_into(ctx, a, fmpq_denref(v), g);
            fmpq_clear(g);
        }
    }
    fmpz_clear(fl);
    fmpq_clear(frac);
    fmpq_clear(t);
    return;
too_big:
    ch_ctx_fail(ctx, CH_ERR_LIMIT, "numeric value too large (beyond %d bits)",
                MAX_POW_BITS);
    a->failed = 1;
}

/* Pushes base^r where base is a MUL with coefficient 1 and a non-integer r:
 * (x^a)^r = x^(a r) unless a is an even integer ((x^2)^(1/2) is |x|). */
static void single_pow_into(ch_ctx *ctx, acc *a, const ch_expr *e,
                            const fmpq_t r)
{
    if (e->kind == CH_MUL && e->n == 1 && fmpq_is_one(e->num)) {
        const fmpq *ex = e->pair[0].c;
        if (!(is_integer(ex) && fmpz_is_even(fmpq_numref(ex)))) {
            fmpq_t c;
            fmpq_init(c);
            fmpq_mul(c, ex, r);
            acc_push(ctx, a, e->pair[0].e, c);
            fmpq_clear(c);
            return;
        }
    }
    acc_push(ctx, a, e, r);
}

/* A sum as a factor is made primitive: its leading coefficient (first term
 * in canonical order) moves to the product, so that 2*(x + 2)*y and
 * (2*x + 4)*y are one node. For a non-integer exponent only the magnitude
 * moves: (-x - y)^(1/2) is not -(x + y)^(1/2). */
static void add_factor_into(ch_ctx *ctx, acc *a, const ch_expr *e,
                            const fmpq_t r)
{
    fmpq_t c, inv;
    fmpq_init(c);
    fmpq_init(inv);
    ch_fmpq_set(c, e->pair[0].c);
    if (!is_integer(r)) fmpq_abs(c, c);
    if (fmpq_is_one(c)) {
        acc_push(ctx, a, e, r);
    } else {
        fmpq_inv(inv, c);
        num_pow_into(ctx, a, c, r);
        acc_push(ctx, a, scale_add(ctx, inv, e), r);
    }
    fmpq_clear(c);
    fmpq_clear(inv);
}

static void mul_into(ch_ctx *ctx, acc *a, const ch_expr *e, const fmpq_t r)
{
    if (!e) {
        a->failed = 1;
        return;
    }
    if (e->kind == CH_NUM) {
        num_pow_into(ctx, a, e->num, r);
        return;
    }
    if (e->kind == CH_ADD) {
        add_factor_into(ctx, a, e, r);
        return;
    }
    if (e->kind != CH_MUL) {
        acc_push(ctx, a, e, r);
        return;
    }
    if (is_integer(r)) {
        num_pow_into(ctx, a, e->num, r);
        fmpq_t c;
        fmpq_init(c);
        for (uint32_t i = 0; i < e->n; i++) {
            fmpq_mul(c, e->pair[i].c, r);
            acc_push(ctx, a, e->pair[i].e, c);
        }
        fmpq_clear(c);
    } else if (fmpq_sgn(e->num) > 0) {
        /* (c * rest)^r = c^r * rest^r for c > 0 */
        num_pow_into(ctx, a, e->num, r);
        single_pow_into(ctx, a, ch_expr_mul_rest(ctx, e), r);
    } else {
        acc_push(ctx, a, e, r);
    }
}

/* After merging, a numeric base may have reached an integer exponent
 * (2^(1/2) * 2^(1/2)) and a product base an integer one ((x y)^(1/2)
 * squared): such factors are folded again until none is left. */
static int needs_refold(const acc_pair *p)
{
    if (p->e->kind == CH_NUM)
        return is_integer(p->c)
            || (fmpq_sgn(p->e->num) > 0
                && (fmpq_sgn(p->c) < 0 || fmpz_cmp(fmpq_numref(p->c),
                                                   fmpq_denref(p->c)) > 0));
    return p->e->kind == CH_MUL && is_integer(p->c);
}

static const ch_expr *mul_build(ch_ctx *ctx, acc *a)
{
    const ch_expr *e = NULL;
    for (int round = 0; !a->failed; round++) {
        acc_normalize(a);
        size_t w = 0, nre = 0;
        acc_pair *re = NULL;
        for (size_t i = 0; i < a->n; i++) {
            if (round < 16 && needs_refold(&a->p[i])) {
                if (!re) re = malloc(a->n * sizeof *re);
                if (!re) {
                    ch_ctx_fail(ctx, CH_ERR_MEMORY, "out of memory");
                    a->failed = 1;
                    break;
                }
                re[nre++] = a->p[i];
            } else {
                a->p[w++] = a->p[i];
            }
        }
        a->n = w;
        for (size_t i = 0; i < nre; i++) {
            mul_into(ctx, a, re[i].e, re[i].c);
            fmpq_clear(re[i].c);
        }
        free(re);
        if (!nre || a->failed) break;
    }
    if (!a->failed) e = acc_finish(ctx, a, CH_MUL);
    acc_clear(a);
    return e;
}

const ch_expr *ch_mul_n(ch_ctx *ctx, size_t n, const ch_expr *const *factors)
{
    acc a;
    fmpq_t one;
    acc_init(&a, 1);
    fmpq_init(one);
    fmpq_one(one);
    for (size_t i = 0; i < n; i++) mul_into(ctx, &a, factors[i], one);
    fmpq_clear(one);
    return mul_build(ctx, &a);
}

const ch_expr *ch_mul(ch_ctx *ctx, const ch_expr *a, const ch_expr *b)
{
    const ch_expr *f[2] = {a, b};
    return ch_mul_n(ctx, 2, f);
}

const ch_expr *ch_pow_q(ch_ctx *ctx, const ch_expr *base, const fmpq_t r)
{
    if (!base) return NULL;
    if (fmpq_is_zero(r)) return ctx->one;
    /* x^1 is x, which the product machinery would rebuild (finding every
     * node it needs) except for a sum whose leading coefficient is not 1:
     * that one is made primitive, a new node. Substitution and
     * differentiation ask for x^1 at every factor they touch. */
    if (fmpq_is_one(r) && (base->kind != CH_ADD || fmpq_is_one(base->pair[0].c)))
        return base;
    acc a;
    acc_init(&a, 1);
    mul_into(ctx, &a, base, r);
    return mul_build(ctx, &a);
}

const ch_expr *ch_pow_si(ch_ctx *ctx, const ch_expr *base, slong r)
{
    fmpq_t q;
    fmpq_init(q);
    fmpq_set_si(q, r, 1);
    const ch_expr *e = ch_pow_q(ctx, base, q);
    fmpq_clear(q);
    return e;
}

const ch_expr *ch_sqrt(ch_ctx *ctx, const ch_expr *a)
{
    fmpq_t q;
    fmpq_init(q);
    fmpq_set_si(q, 1, 2);
    const ch_expr *e = ch_pow_q(ctx, a, q);
    fmpq_clear(q);
    return e;
}

const ch_expr *ch_div(ch_ctx *ctx, const ch_expr *a, const ch_expr *b)
{
    if (ch_is_zero(b)) {
        ch_ctx_fail(ctx, CH_ERR_MATH, "division by zero");
        return NULL;
    }
    return ch_mul(ctx, a, ch_pow_si(ctx, b, -1));
}

const ch_expr *ch_pow(ch_ctx *ctx, const ch_expr *base, const ch_expr *ex)
{
    if (!base || !ex) return NULL;
    if (ex->kind == CH_NUM) return ch_pow_q(ctx, base, ex->num);
    if (ch_is_one(base)) return ctx->one;
    candidate c;
    ch_expr *cand = candidate_init(&c, CH_POW, ctx->qzero);
    cand->n = 2;
    cand->pair[0].e = base;
    cand->pair[1].e = ex;
    return ch_expr_intern(ctx, cand);
}

