/* test_expr.c — canonical forms, interning, numbers, functions, limits. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "core/diff.h"
#include "core/expr.h"
#include "core/mem.h"

static ch_ctx *ctx;
static const ch_expr *x, *y, *z;

static const ch_expr *n(slong v) { return ch_num_si(ctx, v); }
static const ch_expr *fr(slong p, slong q) { return ch_num_frac(ctx, p, q); }
static const ch_expr *add(const ch_expr *a, const ch_expr *b) { return ch_add(ctx, a, b); }
static const ch_expr *mul(const ch_expr *a, const ch_expr *b) { return ch_mul(ctx, a, b); }
static const ch_expr *pw(const ch_expr *a, slong e) { return ch_pow_si(ctx, a, e); }

static void test_interning(void)
{
    CHECK(n(3) == n(3));
    CHECK(fr(2, 4) == fr(1, 2));
    CHECK(add(x, y) == add(y, x));
    CHECK(mul(x, y) == mul(y, x));
    CHECK(add(add(x, y), z) == add(x, add(y, z)));
    CHECK(mul(mul(x, y), z) == mul(x, mul(y, z)));
    CHECK(ch_symbol(ctx, "x", CH_SYM_COORD, NULL, 0, 0) == x);
}

/* Nodes and pairs keep one copy of each rational (ch_pair): equal values
 * share it, whatever their size, and unequal ones do not. */
static void test_interned_rationals(void)
{
    const ch_expr *a = add(mul(n(3), x), mul(n(5), y));
    const ch_expr *b = add(mul(n(3), y), mul(n(5), z));
    CHECK(a->kind == CH_ADD && b->kind == CH_ADD && a->n == 2 && b->n == 2);
    CHECK(a->pair[0].c == b->pair[0].c && fmpz_equal_si(fmpq_numref(a->pair[0].c), 3));
    CHECK(a->pair[1].c == b->pair[1].c && a->pair[0].c != a->pair[1].c);
    CHECK(n(3)->num == a->pair[0].c);
    CHECK(fmpq_is_zero(x->num) && x->num == ch_pi(ctx)->num);
    /* 2^200/3 and 2^200/3 + 1: multi-limb values, made twice */
    const ch_expr *big[2][2];
    for (int k = 0; k < 2; k++) {
        fmpq_t q;
        fmpq_init(q);
        fmpz_one(fmpq_numref(q));
        fmpz_mul_2exp(fmpq_numref(q), fmpq_numref(q), 200);
        fmpz_set_ui(fmpq_denref(q), 3);
        fmpq_canonicalise(q);
        big[k][0] = ch_scale(ctx, q, add(x, pw(y, 2)));
        fmpq_add_si(q, q, 1);
        big[k][1] = ch_scale(ctx, q, add(x, pw(y, 2)));
        fmpq_clear(q);
    }
    CHECK(big[0][0] == big[1][0] && big[0][1] == big[1][1] && big[0][0] != big[0][1]);
    CHECK(big[0][0]->kind == CH_ADD && big[0][0]->pair[0].c != big[0][1]->pair[0].c);
    CHECK(fmpz_bits(fmpq_numref(big[0][0]->pair[0].c)) == 201); /* 2^200 */
    CHECK(ch_sub(ctx, big[0][1], big[0][0]) == add(x, pw(y, 2)));
}

static void test_identities(void)
{
    CHECK(add(x, n(0)) == x);
    CHECK(mul(x, n(1)) == x);
    CHECK(ch_is_zero(mul(x, n(0))));
    CHECK(pw(x, 0) == n(1));
    CHECK(pw(x, 1) == x);
    CHECK(ch_is_zero(ch_sub(ctx, x, x)));
    CHECK(add(x, x) == mul(n(2), x));
    CHECK(mul(x, x) == pw(x, 2));
    CHECK(mul(pw(x, 2), pw(x, -2)) == n(1));
    CHECK(ch_div(ctx, x, x) == n(1));
    CHECK(mul(n(2), add(x, y)) == add(mul(n(2), x), mul(n(2), y)));
    CHECK(ch_neg(ctx, ch_neg(ctx, add(x, y))) == add(x, y));
    /* like terms in products: 3xy - xy = 2xy */
    CHECK(ch_sub(ctx, mul(n(3), mul(x, y)), mul(x, y)) == mul(n(2), mul(x, y)));
    /* power merging */
    CHECK(mul(pw(x, 2), pw(x, 3)) == pw(x, 5));
    CHECK(pw(pw(x, 2), 3) == pw(x, 6));
    CHECK(pw(mul(x, y), 2) == mul(pw(x, 2), pw(y, 2)));
    CHECK(mul(ch_sqrt(ctx, x), ch_sqrt(ctx, x)) == x);
    CHECK(pw(ch_sqrt(ctx, x), 2) == x);
    /* (x^2)^(1/2) is |x|, not x: it must stay a power of x^2 */
    CHECK(ch_sqrt(ctx, pw(x, 2)) != x);
    CHECK(ch_sqrt(ctx, pw(x, 2))->kind == CH_MUL);
    /* (x^(1/2))^(1/2) = x^(1/4) */
    CHECK(ch_sqrt(ctx, ch_sqrt(ctx, x)) == ch_pow_q(ctx, x, (fmpq[]){{1, 4}}));
}

static void test_numbers(void)
{
    CHECK(ch_sqrt(ctx, n(4)) == n(2));
    CHECK(ch_sqrt(ctx, fr(4, 9)) == fr(2, 3));
    CHECK(ch_pow_q(ctx, fr(8, 27), (fmpq[]){{2, 3}}) == fr(4, 9));
    const ch_expr *s2 = ch_sqrt(ctx, n(2));
    CHECK(s2->kind == CH_MUL && s2->n == 1 && ch_is_int(s2->pair[0].e));
    CHECK(mul(s2, s2) == n(2));
    /* 2^(3/2) = 2 * 2^(1/2) */
    CHECK(ch_pow_q(ctx, n(2), (fmpq[]){{3, 2}}) == mul(n(2), s2));
    /* sqrt(1/2) = 2^(1/2)/2 */
    CHECK(ch_sqrt(ctx, fr(1, 2)) == mul(fr(1, 2), s2));
    CHECK(ch_sqrt(ctx, n(8)) == mul(n(2), s2));
    CHECK(ch_sqrt(ctx, n(12)) == mul(n(2), ch_sqrt(ctx, n(3))));
    CHECK(pw(fr(2, 3), -2) == fr(9, 4));
    CHECK(add(fr(1, 3), fr(1, 6)) == fr(1, 2));
    CHECK(ch_num_decimal(ctx, "0.1", 3) == fr(1, 10));
    CHECK(ch_num_decimal(ctx, "2.5e-3", 6) == fr(1, 400));
    CHECK(ch_num_decimal(ctx, "12", 2) == n(12));
    CHECK(ch_num_decimal(ctx, "1E+2", 4) == n(100));
    CHECK(ch_num_decimal(ctx, "1e", 2) == NULL);
    CHECK(ch_ctx_error(ctx)->code == CH_ERR_MODEL);
    ch_ctx_clear_error(ctx);
    CHECK(ch_num_decimal(ctx, "1e999999", 8) == NULL);
    CHECK(ch_ctx_error(ctx)->code == CH_ERR_LIMIT);
    ch_ctx_clear_error(ctx);
}

static void test_errors(void)
{
    CHECK(ch_div(ctx, x, n(0)) == NULL);
    CHECK(ch_ctx_error(ctx)->code == CH_ERR_MATH);
    ch_ctx_clear_error(ctx);
    CHECK(ch_div(ctx, x, ch_sub(ctx, y, y)) == NULL);
    ch_ctx_clear_error(ctx);
    CHECK(pw(n(0), -1) == NULL);
    ch_ctx_clear_error(ctx);
    CHECK(add(x, NULL) == NULL);
    CHECK(ch_fun1(ctx, CH_F_SIN, NULL) == NULL);
    CHECK(pw(n(3), 1000000000L) == NULL);
    CHECK(ch_ctx_error(ctx)->code == CH_ERR_LIMIT);
    ch_ctx_clear_error(ctx);
    CHECK(ch_ctx_error(ctx)->code == CH_OK);
}

static void test_functions(void)
{
    const ch_expr *pi = ch_pi(ctx);
    CHECK(ch_fun1(ctx, CH_F_SIN, n(0)) == n(0));
    CHECK(ch_fun1(ctx, CH_F_COS, n(0)) == n(1));
    CHECK(ch_fun1(ctx, CH_F_EXP, n(0)) == n(1));
    CHECK(ch_fun1(ctx, CH_F_LOG, n(1)) == n(0));
    CHECK(ch_fun1(ctx, CH_F_SIN, pi) == n(0));
    CHECK(ch_fun1(ctx, CH_F_COS, pi) == n(-1));
    CHECK(ch_fun1(ctx, CH_F_SIN, mul(fr(1, 2), pi)) == n(1));
    CHECK(ch_fun1(ctx, CH_F_COS, mul(fr(1, 3), pi)) == fr(1, 2));
    CHECK(ch_fun1(ctx, CH_F_SIN, mul(fr(1, 4), pi)) == mul(fr(1, 2), ch_sqrt(ctx, n(2))));
    CHECK(ch_fun1(ctx, CH_F_SIN, mul(fr(7, 6), pi)) == fr(-1, 2));
    CHECK(ch_fun1(ctx, CH_F_SIN, ch_neg(ctx, x)) == ch_neg(ctx, ch_fun1(ctx, CH_F_SIN, x)));
    CHECK(ch_fun1(ctx, CH_F_COS, ch_neg(ctx, x)) == ch_fun1(ctx, CH_F_COS, x));
    CHECK(ch_fun1(ctx, CH_F_COS, ch_sub(ctx, x, y)) == ch_fun1(ctx, CH_F_COS, ch_sub(ctx, y, x)));
    CHECK(ch_fun1(ctx, CH_F_SIN, ch_sub(ctx, x, y)) == ch_neg(ctx, ch_fun1(ctx, CH_F_SIN, ch_sub(ctx, y, x))));
    CHECK(ch_fun1(ctx, CH_F_ABS, n(-3)) == n(3));
    CHECK(ch_fun1(ctx, CH_F_LOG, ch_fun1(ctx, CH_F_EXP, x)) == x);
    CHECK(ch_fun1(ctx, CH_F_SIN, x) == ch_fun1(ctx, CH_F_SIN, x));
    CHECK(ch_fun_lookup("atan2") == CH_F_ATAN2 && ch_fun_lookup("sqrt") == -1);
}

static void test_inspection(void)
{
    const ch_expr *e = add(mul(x, ch_fun1(ctx, CH_F_SIN, y)), n(1));
    CHECK(ch_has_sym(e, x) && ch_has_sym(e, y) && !ch_has_sym(e, z));
    CHECK(ch_has_sym_kind(e, CH_SYM_COORD));
    CHECK(!ch_has_sym_kind(e, CH_SYM_VEL));
    fmpq_t c;
    fmpq_init(c);
    const ch_expr *r = ch_split_coeff(ctx, mul(n(-3), mul(x, y)), c);
    CHECK(r == mul(x, y) && fmpq_cmp_si(c, -3) == 0);
    fmpq_clear(c);
    CHECK(ch_dag_size(add(x, y)) == 3);
}

/* Symbol sets: exact at any number of symbols, interned, and the searches
 * and derivatives that rely on them. */
static void test_symbol_sets(void)
{
    ch_ctx *c = ch_ctx_new();
    const ch_expr *s[300];
    char name[16];
    for (int i = 0; i < 300; i++) {
        snprintf(name, sizeof name, "s%d", i);
        s[i] = ch_symbol(c, name, CH_SYM_OTHER, NULL, 0, i);
    }
    /* s[1] and s[257] would share a bit of a 256-bit mask */
    const ch_expr *e = ch_mul(c, ch_fun1(c, CH_F_SIN, s[1]), s[100]);
    CHECK(ch_has_sym(e, s[1]) && ch_has_sym(e, s[100]));
    CHECK(!ch_has_sym(e, s[257]) && !ch_has_sym(e, s[2]));
    CHECK(!ch_symset_meets(e->symset, s[2]->symset));
    CHECK(!ch_symset_meets(e->symset, s[257]->symset));
    CHECK(ch_is_zero(ch_diff(c, e, s[257])));
    /* equal sets are one set; the set of a sum is that of its symbols */
    const ch_expr *pair[2] = {s[1], s[100]};
    CHECK(ch_symset_of(c, 2, pair) == e->symset);
    CHECK(ch_add(c, s[100], ch_fun1(c, CH_F_COS, s[1]))->symset == e->symset);
    CHECK(ch_symset_union(c, s[1]->symset, s[100]->symset) == e->symset);
    CHECK(ch_symset_of(c, 0, pair) == ch_symset_empty(c));
    CHECK(ch_num_si(c, 3)->symset == ch_symset_empty(c));
    const ch_symset *far = ch_symset_union(c, s[0]->symset, s[299]->symset);
    /* sparse: two words for two symbols far apart */
    CHECK(far->n == 2 && far->w[0].at == 0 && far->w[1].at == 4);
    CHECK(ch_symset_has(far, 299) && ch_symset_has(far, 0) && !ch_symset_has(far, 298));
    CHECK(ch_symset_meets(far, ch_add(c, s[299], s[5])->symset));
    CHECK(!ch_symset_meets(far, ch_add(c, s[298], s[5])->symset));
    const ch_symset *kind = ch_symset_of_kind(c, CH_SYM_OTHER);
    CHECK(kind->n == 5 && kind->w[4].at == 4 && kind->w[4].bits == (1ULL << 44) - 1);
    CHECK(ch_symset_of_kind(c, CH_SYM_VEL) == ch_symset_empty(c));
    const ch_expr *set[3] = {s[257], s[5], s[100]};
    CHECK(ch_has_any_sym(e, 3, set));
    CHECK(!ch_has_any_sym(e, 2, set));
    CHECK(!ch_has_any_sym(e, 0, set));
    const ch_expr *mixed[2] = {ch_add(c, s[1], s[2]), s[7]}; /* non-symbols ignored */
    CHECK(!ch_has_any_sym(e, 2, mixed));
    /* capped sizes */
    const ch_expr *sum = ch_add_n(c, 300, s);
    CHECK(ch_dag_size(sum) == 301);
    CHECK(ch_dag_size_capped(sum, 1000) == 301);
    CHECK(ch_dag_size_capped(sum, 10) == 11);
    CHECK(ch_dag_size_capped(NULL, 10) == 0);
    /* tree sizes: t_k = sin(t_{k-1}) cos(t_{k-1}) has 4 2^k - 3 tree nodes
     * on 2k + 1 DAG nodes (walked up to 2048 nodes, memoized beyond) */
    const ch_expr *t = s[0];
    for (int k = 0; k <= 24; k++) {
        size_t want = ((size_t)4 << k) - 3;
        CHECK_MSG(ch_tree_size(c, t, SIZE_MAX) == want, "t_%d", k);
        static const size_t caps[] = {1, 2, 7, 2047, 2048, 2049, 4093, 4094, 1u << 20};
        for (size_t j = 0; j < sizeof caps / sizeof *caps; j++)
            CHECK_MSG(ch_tree_size(c, t, caps[j]) == (want < caps[j] ? want : caps[j]),
                      "t_%d, cap %zu", k, caps[j]);
        t = ch_mul(c, ch_fun1(c, CH_F_SIN, t), ch_fun1(c, CH_F_COS, t));
    }
    CHECK(ch_tree_size(c, NULL, 10) == 0);
    /* the memo is the context's and kept across calls: a small cap asked
     * first must not leave a saturated size for a larger one */
    ch_ctx *c3 = ch_ctx_new();
    const ch_expr *v = ch_symbol(c3, "v", CH_SYM_OTHER, NULL, 0, -1);
    for (int k = 1; k <= 20; k++) v = ch_mul(c3, ch_fun1(c3, CH_F_SIN, v), ch_fun1(c3, CH_F_COS, v));
    CHECK(ch_tree_size(c3, v, 4094) == 4094);
    CHECK(ch_tree_size(c3, v, 100000) == 100000);
    CHECK(ch_tree_size(c3, v, SIZE_MAX) == ((size_t)4 << 20) - 3);
    CHECK(ch_tree_size(c3, v, 4094) == 4094);
    /* kept as 32 bits: a larger tree saturates there, whatever the cap */
    for (int k = 21; k <= 30; k++) v = ch_mul(c3, ch_fun1(c3, CH_F_SIN, v), ch_fun1(c3, CH_F_COS, v));
    CHECK(ch_tree_size(c3, v, SIZE_MAX) == ((size_t)4 << 30) - 3);
    v = ch_mul(c3, ch_fun1(c3, CH_F_SIN, v), ch_fun1(c3, CH_F_COS, v));
    CHECK(ch_tree_size(c3, v, SIZE_MAX) == UINT32_MAX);
    CHECK(ch_tree_size(c3, v, 5000) == 5000);
    ch_ctx_free(c3);
    /* DAG sizes of several roots sharing nodes, counted in a map (caps
     * below 4096) or a bitmap: u_k = u_{k-1} + k s_{k mod 300} (u_0 =
     * s_0) are 2999 flat sums over the 300 symbols; with sin(u_k) for
     * every k, 3000 + 2999 + 300 = 6299 nodes, sin(u_2999) alone 302 */
    const ch_expr **u = malloc(3000 * sizeof *u), **su = malloc(3000 * sizeof *su);
    CHECK(u && su);
    for (int k = 0; u && su && k < 3000; k++) {
        u[k] = k ? ch_add(c, u[k - 1], ch_mul(c, ch_num_si(c, k), s[k % 300])) : s[0];
        su[k] = ch_fun1(c, CH_F_SIN, u[k]);
    }
    if (u && su) {
        CHECK(ch_dag_size(su[2999]) == 302);
        CHECK(ch_dag_size_many(1, &su[2999], SIZE_MAX) == 302);
        static const size_t dcaps[] = {10, 4095, 4096, 4097, 6298, 6299, 6300, SIZE_MAX};
        for (size_t j = 0; j < sizeof dcaps / sizeof *dcaps; j++)
            CHECK_MSG(ch_dag_size_many(3000, su, dcaps[j]) == (dcaps[j] < 6299 ? dcaps[j] + 1 : 6299),
                      "cap %zu", dcaps[j]);
        const ch_expr *two[2] = {su[10], NULL};
        CHECK(ch_dag_size_many(2, two, SIZE_MAX) == ch_dag_size(su[10]));
        /* the same counts when the roots are made after 800 000 other
         * nodes: a bitmap would have more words than these caps, so the
         * count starts in a map and goes on in the bitmap past 4096 */
        for (int k = 1; k <= 400000; k++) ch_mul(c, ch_num_si(c, 100 + k), s[0]);
        for (int k = 0; k < 3000; k++) su[k] = ch_fun1(c, CH_F_COS, u[k]);
        CHECK(ch_ctx_nnodes(c) / 64 > 6300);
        for (size_t j = 0; j < sizeof dcaps / sizeof *dcaps; j++)
            CHECK_MSG(ch_dag_size_many(3000, su, dcaps[j]) == (dcaps[j] < 6299 ? dcaps[j] + 1 : 6299),
                      "late roots, cap %zu", dcaps[j]);
        CHECK(ch_dag_size_capped(su[2999], 5000) == 302);
    }
    free(u);
    free(su);
    /* maps owned by the context are freed with it (ASan checks) */
    ch_map *mp = ch_ctx_new_map(c);
    CHECK(mp != NULL && ch_map_get(mp, 7) == NULL);
    for (uint64_t k = 1; k <= 1000; k++) ch_map_put(mp, k, (void *)s[k % 300]);
    CHECK(ch_map_get(mp, 301) == s[1]);
    ch_ctx_free(c);
}

static void test_node_limit(void)
{
    ch_ctx *c = ch_ctx_new();
    const ch_expr *a = ch_symbol(c, "a", CH_SYM_COORD, NULL, 0, 0);
    ch_ctx_set_node_limit(c, ch_ctx_nnodes(c) + 50);
    const ch_expr *s = a;
    for (int i = 0; i < 100 && s; i++) s = ch_mul(c, ch_add(c, s, ch_num_si(c, i)), a);
    CHECK(s == NULL);
    CHECK(ch_ctx_error(c)->code == CH_ERR_LIMIT);
    ch_ctx_free(c);
}

/* Random sums/products built in shuffled orders must intern to one node. */
static void test_canonical_shuffle(void)
{
    const ch_expr *atoms[13];
    atoms[0] = x; atoms[1] = y; atoms[2] = z;
    atoms[3] = ch_fun1(ctx, CH_F_SIN, x);
    atoms[4] = pw(y, 3);
    atoms[5] = add(x, n(2));
    atoms[6] = ch_sqrt(ctx, z);
    atoms[7] = fr(5, 7);
    atoms[8] = ch_sub(ctx, n(1), x);
    atoms[9] = ch_sqrt(ctx, add(x, mul(n(3), y)));
    atoms[10] = mul(fr(-3, 2), z);
    atoms[11] = pw(add(mul(n(4), x), n(2)), -1);
    atoms[12] = ch_sqrt(ctx, n(6));
    unsigned seed = 12345;
    for (int trial = 0; trial < 3000; trial++) {
        const ch_expr *ops[6];
        int k = 2 + (int)((seed = seed * 1103515245 + 12345) >> 16) % 5;
        for (int i = 0; i < k; i++)
            ops[i] = atoms[((seed = seed * 1103515245 + 12345) >> 16) % 13];
        const ch_expr *s1 = ch_add_n(ctx, (size_t)k, ops), *p1 = ch_mul_n(ctx, (size_t)k, ops);
        const ch_expr *s2 = n(0), *p2 = n(1);
        for (int i = k - 1; i >= 0; i--) {
            s2 = add(ops[i], s2);
            p2 = mul(p2, ops[i]);
        }
        CHECK(s1 == s2);
        CHECK(p1 == p2);
    }
}

/* Multiples of a long sum (memoized in the context from 16 terms on):
 * the same node for the same factor, the right coefficients for every
 * factor, asked in any order and through products. */
static void test_long_sum_multiples(void)
{
    enum { T = 20 };
    const ch_expr *terms[T];
    char name[8];
    for (int i = 0; i < T; i++) {
        snprintf(name, sizeof name, "s%d", i);
        terms[i] = mul(n(i + 1), ch_symbol(ctx, name, CH_SYM_COORD, NULL, 0, 10 + i));
    }
    const ch_expr *S = add(ch_add_n(ctx, T, terms), n(3));
    CHECK(S->kind == CH_ADD && S->n == T);
    fmpq_t c, want;
    fmpq_init(c);
    fmpq_init(want);
    for (int round = 0; round < 2; round++) /* the second round from the memo */
        for (slong k = -40; k <= 40; k++) {
            if (k == 0) continue;
            fmpq_set_si(c, k, 7);
            const ch_expr *r = ch_scale(ctx, c, S);
            CHECK(r && r->kind == CH_ADD && r->n == S->n);
            for (uint32_t i = 0; r && i < r->n && i < S->n; i++) {
                fmpq_mul(want, c, S->pair[i].c);
                CHECK(r->pair[i].e == S->pair[i].e && fmpq_equal(r->pair[i].c, want));
            }
            CHECK(r && fmpq_equal(r->num, (fmpq_mul(want, c, S->num), want)));
            CHECK(mul(fr(k, 7), S) == r);
            CHECK(ch_scale(ctx, c, S) == r);
        }
    /* c * (d * S) = (c d) * S, and a product that makes S primitive */
    fmpq_set_si(c, -3, 5);
    const ch_expr *twice = ch_scale(ctx, c, ch_scale(ctx, c, S));
    fmpq_mul(want, c, c);
    CHECK(twice == ch_scale(ctx, want, S));
    CHECK(mul(mul(S, x), fr(-3, 5)) == mul(ch_scale(ctx, c, S), x));
    fmpq_clear(c);
    fmpq_clear(want);
}

/* Large blocks (mem.h): zeroed on both sides of the huge-page size, and a
 * resize keeps the contents across it and zeroes what it adds. */
static int all_zero(const unsigned char *p, size_t from, size_t to)
{
    for (size_t i = from; i < to; i++)
        if (p[i]) return 0;
    return 1;
}

static void test_mem_blocks(void)
{
    const size_t sizes[] = {1, 4096, CH_MEM_HUGE - 1, CH_MEM_HUGE, 3 * CH_MEM_HUGE + 5};
    for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++) {
        size_t n = sizes[k];
        unsigned char *p = ch_mem_alloc(n);
        CHECK(p != NULL);
        if (!p) continue;
        CHECK(all_zero(p, 0, n));
        for (size_t i = 0; i < n; i++) p[i] = (unsigned char)(i % 251 + 1);
        size_t m = 2 * n + CH_MEM_HUGE / 3; /* grows across 2 MB for the small ones */
        unsigned char *q = ch_mem_resize(p, n, m);
        CHECK(q != NULL);
        if (!q) {
            ch_mem_free(p, n);
            continue;
        }
        int same = 1;
        for (size_t i = 0; i < n; i++) same &= q[i] == (unsigned char)(i % 251 + 1);
        CHECK(same);
        CHECK(all_zero(q, n, m));
        unsigned char *r = ch_mem_resize(q, m, n / 2 + 1); /* and shrinks */
        CHECK(r != NULL && r[0] == 1 && r[n / 2] == (unsigned char)(n / 2 % 251 + 1));
        ch_mem_free(r ? r : q, r ? n / 2 + 1 : m);
    }
    /* raw blocks (arena chunks): usable to their last byte, freed alike */
    for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++) {
        unsigned char *p = ch_mem_alloc_raw(sizes[k]);
        CHECK(p != NULL);
        if (!p) continue;
        memset(p, 7, sizes[k]);
        CHECK(p[0] == 7 && p[sizes[k] - 1] == 7);
        ch_mem_free(p, sizes[k]);
    }
    ch_mem_free(NULL, CH_MEM_HUGE);
    ch_mem_free(NULL, 1);
    /* a context keeps the blocks given back: the last given is taken
     * next, whole; the rest are freed with the context (ASan: no leak) */
    ch_ctx *c = ch_ctx_new();
    unsigned char *a = ch_ctx_block_take(c), *b = ch_ctx_block_take(c);
    CHECK(a && b && a != b);
    if (a && b) {
        memset(a, 1, CH_MEM_HUGE);
        memset(b, 2, CH_MEM_HUGE);
        ch_ctx_block_give(c, a);
        ch_ctx_block_give(c, b);
        ch_ctx_block_give(c, NULL);
        unsigned char *t = ch_ctx_block_take(c);
        CHECK(t == b);
        if (t) memset(t, 3, CH_MEM_HUGE);
        ch_ctx_block_give(c, t);
    }
    ch_ctx_free(c);
}

int main(void)
{
    ctx = ch_ctx_new();
    x = ch_symbol(ctx, "x", CH_SYM_COORD, NULL, 0, 0);
    y = ch_symbol(ctx, "y", CH_SYM_COORD, NULL, 0, 1);
    z = ch_symbol(ctx, "z", CH_SYM_COORD, NULL, 0, 2);
    RUN(test_interning);
    RUN(test_interned_rationals);
    RUN(test_identities);
    RUN(test_numbers);
    RUN(test_errors);
    RUN(test_functions);
    RUN(test_inspection);
    RUN(test_node_limit);
    RUN(test_symbol_sets);
    RUN(test_canonical_shuffle);
    RUN(test_long_sum_multiples);
    RUN(test_mem_blocks);
    ch_ctx_free(ctx);
    return check_summary("test_expr");
}
