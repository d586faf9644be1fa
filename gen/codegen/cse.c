/* cse.c — lowering of the expression DAG to straight-line C (see cse.h).
 *
 * The DAG is first lowered to an intermediate program of values: a leaf
 * (symbol text or number, used inline), a call, an n-ary product (rational
 * coefficient, numerator factors, denominator factors) or an n-ary sum
 * (rational constant, terms with rational coefficients). Values are
 * hash-consed, so an equal value is built once, and numbered in creation
 * order: operands always have smaller numbers than their users, so the
 * numbering is a topological order. The memo tables of the lowering map DAG
 * node ids, (value, exponent) pairs and denominators to values.
 *
 * Algebraic passes then rewrite the program (each rebuilds the values
 * reachable from the outputs in number order through a replacement table),
 * lowering the operation count without changing values beyond rounding:
 *   1. flattening: a product used only as a factor of one other product is
 *      merged into it (a sign -x always is), so that common factors become
 *      visible; in a sum, c * (k * x) becomes (c k) * x, and a sum used
 *      only there with coefficient +-1 joins its terms (which may cancel);
 *   2. factoring of sums: the terms of a sum (single-use products inlined)
 *      form a polynomial in their factors, factored greedily by its most
 *      frequent factor (a symbol, a temporary or a numeric coefficient),
 *      recursively: a*x + a*y + b*z becomes a*(x + y) + b*z, 3*a*x + 3*a*y
 *      becomes 3*a*(x + y); monomials that cancel vanish. Kept only where it
 *      lowers the count;
 *   3. chains of sums: a sum that is another reachable sum (or its
 *      negative) plus one term or its constant is built from it with one
 *      addition (chain_add): the partial sums of a recursion, whatever
 *      the frequencies the trie below orders their terms by;
 *   4. sharing of sub-products and sub-sums: the factors of every product
 *      (a non-unit coefficient counts as a factor) and the unit terms of
 *      every sum are ordered by how many products (sums) contain them, most
 *      frequent first, and put in a trie; a prefix that at least two
 *      products (sums) pass through becomes one shared temporary, so v*l is
 *      computed once for all the products v*l*x_i, and the partial sums of
 *      a chain are built one from the other.
 * The passes run factor (flattening on the way), flatten, chain, share.
 * Every choice breaks ties by value number or by a fixed function of the
 * numbers, never by address or table order, so the output is
 * deterministic. Statements are printed depth first from the outputs
 * (print_order) and the operations are counted on what is printed. */
#include "codegen/cse_impl.h"
#include "core/eval.h"
#include "core/mem.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>


static void fail(cse *s, ch_status code, const char *msg)
{
    /* a constructor that failed for want of memory is no limit */
    if (code == CH_ERR_LIMIT && ch_ctx_error(s->ctx)->code == CH_ERR_MEMORY)
        code = CH_ERR_MEMORY, msg = "out of memory in CSE";
    if (!s->failed) ch_error_set(s->err, code, NULL, 0, 0, "%s", msg);
    s->failed = 1;
}

void ch_cse_oom(cse *s) { fail(s, CH_ERR_MEMORY, "out of memory in CSE"); }


/* The number + 1 of a reachable node, 0 for another one (a denominator
 * node made by the CSE, or one of its parts). */
static uint32_t loc(const cse *s, const ch_expr *e)
{
    return e->id < s->nlid ? s->lid[e->id] : 0;
}

/* ---- operation counts of one statement ----------------------------------- */

static void node_ops(const node *a, ch_opcount *c)
{
    memset(c, 0, sizeof *c);
    if (a->kind == K_CALL) {
        c->call = 1;
    } else if (a->kind == K_MUL) {
        double nf = a->n + ((!is_pm1(a->k) || a->n == 0) ? 1 : 0);
        if (nf > 1) c->mul = nf - 1;
        if (a->nd) c->div = 1, c->mul += a->nd - 1;
    } else if (a->kind == K_ADD) {
        c->add = a->n - 1 + !fmpq_is_zero(a->k);
        for (uint32_t i = 0; i < a->n; i++)
            if (!is_pm1(a->c + i)) c->mul += 1;
    }
}

double ch_cse_node_cost(const node *a)
{
    ch_opcount c;
    node_ops(a, &c);
    return c.add + c.mul + c.div + c.call;
}

/* ---- hash-consed values --------------------------------------------------- */

/* A word for an integer: itself when small, a residue otherwise. */
static uint64_t hash_z(const fmpz *f, int absolute)
{
    if (!COEFF_IS_MPZ(*f)) return (uint64_t)(absolute && *f < 0 ? -*f : *f);
    return 0x8000000000000000u | (absolute ? fmpz_tdiv_ui(f, 1000000007u)
                                           : fmpz_fdiv_ui(f, 1000000007u));
}

static uint64_t hash_q(uint64_t h, const fmpq *q)
{
    return mix(mix(h, hash_z(fmpq_numref(q), 0)), hash_z(fmpq_denref(q), 0));
}

/* A hash of |q|. */
uint64_t ch_cse_hash_absq(const fmpq *q)
{
    return mix(mix(0, hash_z(fmpq_numref(q), 1)), hash_z(fmpq_denref(q), 1));
}

static uint64_t hash_str(uint64_t h, const char *t)
{
    for (; *t; t++) h = (h ^ (unsigned char)*t) * 0x100000001b3u;
    return mix(h, 1);
}

static uint64_t node_hash(int kind, const char *fn, const char *text, const uint32_t *op,
                          uint32_t n, uint32_t nd, const fmpq *c, const fmpq *k)
{
    uint64_t h = mix(0x12345u, (uint64_t)kind << 40 | (uint64_t)n << 20 | nd);
    if (fn) h = hash_str(h, fn);
    if (text) h = hash_str(h, text);
    for (uint32_t i = 0; i < n + nd; i++) h = mix(h, op[i]);
    if (c)
        for (uint32_t i = 0; i < n; i++) h = hash_q(h, c + i);
    if (k) h = hash_q(h, k);
    return h;
}

static int node_equal(const node *a, int kind, const char *fn, const char *text,
                      const uint32_t *op, uint32_t n, uint32_t nd, const fmpq *c,
                      const fmpq *k)
{
    if (a->kind != kind || a->n != n || a->nd != nd) return 0;
    if (kind == K_LEAF) return text && strcmp(a->text, text) == 0;
    if (kind == K_CALL && strcmp(a->fn, fn) != 0) return 0;
    if (memcmp(a->op, op, (n + nd) * sizeof *op) != 0) return 0;
    if (k && !fmpq_equal(a->k, k)) return 0;
    if (c)
        for (uint32_t i = 0; i < n; i++)
            if (!fmpq_equal(a->c + i, c + i)) return 0;
    return 1;
}

static int tab_grow(cse *s)
{
    size_t cap = s->tabcap ? 2 * s->tabcap : 1024;
    slot *t = ch_mem_alloc(cap * sizeof *t);
    if (!t) return -1;
    for (size_t i = 0; s->tab && i < s->tabcap; i++)
        if (s->tab[i].v) {
            size_t j = s->nd[s->tab[i].v - 1]->hash & (cap - 1);
            while (t[j].v) j = (j + 1) & (cap - 1);
            t[j] = s->tab[i];
        }
    ch_mem_free(s->tab, s->tabcap * sizeof *s->tab);
    s->tab = t;
    s->tabcap = cap;
    return 0;
}

/* Values live in chunks released together at the end (no piecemeal
 * frees). A chunk starts with the previous chunk and its own size; past
 * the first few, chunks are 2 MB huge pages (mem.h), taken from and given
 * back to the context (ch_ctx_block_take): the ~30 builds of a large
 * emit reuse them instead of faulting in fresh ones. */
static void *arena_alloc(cse *s, size_t size)
{
    size = (size + 15) & ~(size_t)15;
    if (!s->chunk || s->used + size > s->chunk_size) {
        size_t cs = s->chunks_bytes >= ((size_t)1 << 18) ? CH_MEM_HUGE : 65536;
        if (size > cs - 16) cs = size + 16;
        char *c = cs == CH_MEM_HUGE ? ch_ctx_block_take(s->ctx) : ch_mem_alloc_raw(cs);
        if (!c) return NULL;
        memcpy(c, &s->chunk, sizeof s->chunk); /* the chunks form a list */
        memcpy(c + sizeof s->chunk, &cs, sizeof cs);
        s->chunks_bytes += cs;
        s->chunk = c;
        s->chunk_size = cs;
        s->used = 16;
    }
    void *p = s->chunk + s->used;
    s->used += size;
    return p;
}

/* 1 when the exact constant q has a double: neither beyond DBL_MAX nor a
 * nonzero number below the smallest subnormal (10^400 must not become
 * HUGE_VAL, nor 10^-400 become 0, silently); 0 with the emitter failed. */
static int range_ok(cse *s, const fmpq_t q)
{
    fmpq_t a;
    fmpq_init(a);
    fmpq_abs(a, q);
    double d = ch_fmpq_to_double(a);
    if (!fmpq_is_zero(a) && (isinf(d) || d == 0)) {
        /* log10 |q| from the sizes of numerator and denominator */
        double e = ((double)fmpz_bits(fmpq_numref(a)) - (double)fmpz_bits(fmpq_denref(a)))
                   * 0.30102999566398120;
        char msg[200];
        snprintf(msg, sizeof msg, "a constant of the equations, about 1e%+.0f, is beyond "
                 "the range of double (1e-323 to 1e308): rescale the model's units", e);
        fmpq_clear(a);
        fail(s, CH_ERR_MODEL, msg);
        return 0;
    }
    fmpq_clear(a);
    return 1;
}

/* range_ok without the conversion where q's numerator and denominator
 * are small integers (|q| within 2^+-62): the common case. */
static int q_in_range(cse *s, const fmpq *q)
{
    if (!COEFF_IS_MPZ(*fmpq_numref(q)) && !COEFF_IS_MPZ(*fmpq_denref(q))) return 1;
    return range_ok(s, q);
}

/* The value with these (already canonical) contents, created if new. */
static uint32_t mk_raw(cse *s, int kind, const char *fn, const char *text,
                       const uint32_t *op, uint32_t n, uint32_t nd, const fmpq *c,
                       const fmpq *k)
{
    if (s->failed) return 0;
    /* a coefficient or constant term beyond double (10^400 + sin(x)) is
     * an error, never HUGE_VAL or 0 in the C */
    if (k && !q_in_range(s, k)) return 0;
    for (uint32_t i = 0; c && i < n; i++)
        if (!q_in_range(s, c + i)) return 0;
    uint64_t h = node_hash(kind, fn, text, op, n, nd, c, k);
    if (4 * (s->tablen + 1) > 3 * s->tabcap && tab_grow(s)) {
        ch_cse_oom(s);
        return 0;
    }
    size_t j = h & (s->tabcap - 1);
    for (; s->tab[j].v; j = (j + 1) & (s->tabcap - 1))
        if (s->tab[j].h == (uint32_t)(h >> 32) && node_equal(s->nd[s->tab[j].v - 1], kind, fn, text, op, n, nd, c, k))
            return s->tab[j].v - 1;
    if (s->nn >= UINT32_MAX - 2) {
        fail(s, CH_ERR_LIMIT, "too many values in CSE");
        return 0;
    }
    /* the CSE's values share the derivation's node budget (--max-nodes):
     * a value costs about what a node does */
    size_t limit = ch_ctx_node_limit(s->ctx);
    if (limit && s->nn >= limit) {
        char msg[160];
        snprintf(msg, sizeof msg, "node limit reached in the CSE of the emitted code: "
                 "more than %zu values (--max-nodes)", limit);
        fail(s, CH_ERR_LIMIT, msg);
        return 0;
    }
    if (s->nn == s->capn) {
        uint32_t cap = s->capn ? 2 * s->capn : 1024;
        node **v = ch_mem_resize(s->nd, s->capn * sizeof *v, cap * sizeof *v);
        if (!v) {
            ch_cse_oom(s);
            return 0;
        }
        s->nd = v;
        s->capn = cap;
    }
    size_t nc = c ? n : 0, tl = text ? strlen(text) + 1 : 0;
    node *a = arena_alloc(s, sizeof *a + nc * sizeof(fmpq) + (n + nd) * sizeof(uint32_t) + tl);
    if (!a) {
        ch_cse_oom(s);
        return 0;
    }
    char *t = text ? (char *)a + sizeof *a + nc * sizeof(fmpq) + (n + nd) * sizeof(uint32_t) : NULL;
    if (t) memcpy(t, text, tl);
    a->kind = (uint8_t)kind;
    a->n = n;
    a->nd = nd;
    a->fn = fn;
    a->text = t;
    a->sym = NULL;
    a->hash = h;
    a->c = nc ? (fmpq *)(a + 1) : NULL;
    a->op = (uint32_t *)((char *)(a + 1) + nc * sizeof(fmpq));
    if (n + nd) memcpy(a->op, op, (n + nd) * sizeof *op);
    fmpq_init(a->k);
    if (k) ch_fmpq_set(a->k, k);
    for (size_t i = 0; i < nc; i++) {
        fmpq_init(a->c + i);
        ch_fmpq_set(a->c + i, c + i);
    }
    s->nd[s->nn] = a;
    s->tab[j].v = s->nn + 1;
    s->tab[j].h = (uint32_t)(h >> 32);
    s->tablen++;
    s->created += ch_cse_node_cost(a);
    return s->nn++;
}

static uint32_t mk_leaf(cse *s, const char *text)
{
    return mk_raw(s, K_LEAF, NULL, text, NULL, 0, 0, NULL, NULL);
}

void ch_c_double(ch_buf *b, double v)
{
    if (isinf(v) || isnan(v)) {
        ch_buf_put(b, isnan(v) ? "NAN" : v < 0 ? "-HUGE_VAL" : "HUGE_VAL");
        return;
    }
    char tmp[64];
    snprintf(tmp, sizeof tmp, "%.17g", v);
    ch_buf_put(b, tmp);
    if (!strpbrk(tmp, ".eE")) ch_buf_put(b, ".0");
}

static void put_abs_q(ch_buf *b, const fmpq_t q)
{
    fmpq_t a;
    fmpq_init(a);
    fmpq_abs(a, q);
    ch_c_double(b, ch_fmpq_to_double(a));
    fmpq_clear(a);
}

uint32_t ch_cse_mk_num(cse *s, const fmpq_t q)
{
    /* printing a double is slow: each number's leaf is remembered (its
     * value kept in the leaf's k) */
    uint64_t key = hash_q(1, q) | 1;
    long got = vp(ch_map_get(&s->num_val, key));
    if (got >= 0 && fmpq_equal(s->nd[got]->k, q)) return (uint32_t)got;
    if (!q_in_range(s, q)) return 0;
    ch_buf b;
    ch_buf_init(&b);
    if (fmpq_sgn(q) < 0) ch_buf_put(&b, "(-");
    put_abs_q(&b, q);
    if (fmpq_sgn(q) < 0) ch_buf_put(&b, ")");
    if (b.oom) ch_cse_oom(s);
    uint32_t v = mk_leaf(s, b.s ? b.s : "0.0");
    ch_buf_free(&b);
    if (!s->failed) {
        ch_fmpq_set(s->nd[v]->k, q);
        if (got < 0 && ch_map_put(&s->num_val, key, pv(v))) ch_cse_oom(s);
    }
    return v;
}

uint32_t ch_cse_mk_call(cse *s, const char *fn, uint32_t a, uint32_t b)
{
    uint32_t op[2] = {a, b};
    return mk_raw(s, K_CALL, fn, NULL, op, b == NONE ? 1 : 2, 0, NULL, NULL);
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

static int sorted_u32(const uint32_t *x, uint32_t n)
{
    for (uint32_t i = 1; i < n; i++)
        if (x[i] < x[i - 1]) return 0;
    return 1;
}

void ch_cse_sort_u32(uint32_t *x, uint32_t n)
{
    if (n > 16) {
        qsort(x, n, sizeof *x, cmp_u32);
        return;
    }
    for (uint32_t i = 1; i < n; i++) {
        uint32_t v = x[i], j = i;
        while (j > 0 && x[j - 1] > v) x[j] = x[j - 1], j--;
        x[j] = v;
    }
}

/* k * prod(num) / prod(den), operands sorted; a bare factor or a number
 * when that is all it is. */
uint32_t ch_cse_mk_mul(cse *s, const fmpq *k, const uint32_t *num, uint32_t n,
                       const uint32_t *den, uint32_t nd)
{
    if (s->failed) return 0;
    if (fmpq_is_zero(k)) return s->zero;
    for (uint32_t i = 0; i < n; i++)
        if (num[i] == s->zero) return s->zero;
    if (n == 0 && nd == 0) return ch_cse_mk_num(s, k);
    if (n == 1 && nd == 0 && fmpq_is_one(k)) return num[0];
    /* (num may be NULL when n == 0: no pointer arithmetic on it) */
    if ((nd == 0 || (n && den == num + n)) && sorted_u32(num, n) && sorted_u32(den, nd))
        return mk_raw(s, K_MUL, NULL, NULL, num, n, nd, NULL, k);
    uint32_t stack[32], *op = n + nd <= 32 ? stack : malloc((n + nd) * sizeof *op);
    if (!op) {
        ch_cse_oom(s);
        return 0;
    }
    if (n) memcpy(op, num, n * sizeof *op);
    if (nd) memcpy(op + n, den, nd * sizeof *op);
    ch_cse_sort_u32(op, n);
    ch_cse_sort_u32(op + n, nd);
    uint32_t v = mk_raw(s, K_MUL, NULL, NULL, op, n, nd, NULL, k);
    if (op != stack) free(op);
    return v;
}

typedef struct {
    uint32_t v, i;
} vi;

static int cmp_vi(const void *a, const void *b)
{
    const vi *x = a, *y = b;
    if (x->v != y->v) return (x->v > y->v) - (x->v < y->v);
    return (x->i > y->i) - (x->i < y->i);
}

/* k + sum(c[i] * v[i]): terms sorted by value, equal values merged, zero
 * coefficients dropped. */
uint32_t ch_cse_mk_add(cse *s, const fmpq *k, const uint32_t *v, const fmpq *c, uint32_t n)
{
    if (s->failed) return 0;
    int canon = n >= 2 || (n == 1 && !fmpq_is_zero(k));
    for (uint32_t i = 0; i < n && canon; i++)
        canon = (i == 0 || v[i] > v[i - 1]) && !fmpq_is_zero(c + i) && v[i] != s->zero;
    if (canon) return mk_raw(s, K_ADD, NULL, NULL, v, n, 0, c, k);
    /* scratch on the stack when few terms (mk_add is not recursive) */
    vi ixst[16];
    uint32_t opst[16];
    fmpq ccst[16];
    int small = n <= 16;
    vi *ix = small ? ixst : malloc((n ? n : 1) * sizeof *ix);
    uint32_t *op = small ? opst : malloc((n ? n : 1) * sizeof *op);
    fmpq *cc = small ? ccst : _fmpq_vec_init(n ? n : 1);
    if (small)
        for (uint32_t i = 0; i < n; i++) fmpq_init(cc + i);
    if (!ix || !op) {
        free(ix);
        free(op);
        _fmpq_vec_clear(cc, n ? n : 1);
        ch_cse_oom(s);
        return 0;
    }
    uint32_t nz = 0;
    for (uint32_t i = 0; i < n; i++)
        if (v[i] != s->zero) ix[nz].v = v[i], ix[nz].i = i, nz++;
    if (nz > 16) {
        qsort(ix, nz, sizeof *ix, cmp_vi);
    } else {
        for (uint32_t i = 1; i < nz; i++) {
            vi x = ix[i];
            uint32_t j = i;
            while (j > 0 && cmp_vi(&ix[j - 1], &x) > 0) ix[j] = ix[j - 1], j--;
            ix[j] = x;
        }
    }
    uint32_t m = 0;
    for (uint32_t i = 0; i < nz; i++) {
        if (m && op[m - 1] == ix[i].v) {
            fmpq_add(cc + m - 1, cc + m - 1, c + ix[i].i);
        } else {
            if (m && fmpq_is_zero(cc + m - 1)) m--;
            op[m] = ix[i].v;
            ch_fmpq_set(cc + m, c + ix[i].i);
            m++;
        }
    }
    if (m && fmpq_is_zero(cc + m - 1)) m--;
    uint32_t r;
    if (m == 0)
        r = ch_cse_mk_num(s, k);
    else if (m == 1 && fmpq_is_zero(k)) /* c * x is a product */
        r = ch_cse_mk_mul(s, cc, op, 1, NULL, 0);
    else
        r = mk_raw(s, K_ADD, NULL, NULL, op, m, 0, cc, k);
    if (small) {
        for (uint32_t i = 0; i < n; i++) fmpq_clear(cc + i);
    } else {
        free(ix);
        free(op);
        _fmpq_vec_clear(cc, n ? n : 1);
    }
    return r;
}

/* ---- lowering of the DAG -------------------------------------------------- */

static uint32_t lower(cse *s, const ch_expr *e);

static uint32_t lower_sym(cse *s, const ch_sym *sym)
{
    if (sym->kind == CH_SYM_PI) return mk_leaf(s, "3.1415926535897931");
    const char *t = s->namer(s->data, sym);
    if (!t) {
        if (!s->failed)
            ch_error_set(s->err, CH_ERR_MODEL, NULL, 0, 0,
                         "symbol %s cannot appear in this emitted function",
                         sym->name);
        s->failed = 1;
        return 0;
    }
    uint32_t v = mk_leaf(s, t);
    if (!s->failed && !s->nd[v]->sym) s->nd[v]->sym = sym;
    return v;
}

static uint32_t mk_mul2(cse *s, uint32_t a, uint32_t b)
{
    fmpq_t one;
    fmpq_init(one);
    fmpq_one(one);
    uint32_t op[2] = {a, b};
    uint32_t v = ch_cse_mk_mul(s, one, op, 2, NULL, 0);
    fmpq_clear(one);
    return v;
}

static uint32_t mk_recip(cse *s, uint32_t b)
{
    fmpq_t one;
    fmpq_init(one);
    fmpq_one(one);
    uint32_t v = ch_cse_mk_mul(s, one, NULL, 0, &b, 1);
    fmpq_clear(one);
    return v;
}

static uint32_t mk_pow_lit(cse *s, uint32_t b, double x)
{
    ch_buf r;
    ch_buf_init(&r);
    ch_c_double(&r, x);
    if (r.oom) ch_cse_oom(s);
    uint32_t v = ch_cse_mk_call(s, "pow", b, mk_leaf(s, r.s ? r.s : "0.0"));
    ch_buf_free(&r);
    return v;
}

/* b^k for an integer k >= 1, sharing intermediate powers. */
static uint32_t power(cse *s, uint32_t b, ulong k)
{
    if (k == 1 || s->failed) return b;
    if (k >= (1u << 24)) return mk_pow_lit(s, b, (double)k);
    uint64_t key = ((uint64_t)(b + 1) << 24) | k;
    long got = vp(ch_map_get(&s->pow_val, key));
    if (got >= 0) return (uint32_t)got;
    uint32_t v;
    if (k % 2 == 0) {
        uint32_t h = power(s, b, k / 2);
        v = mk_mul2(s, h, h);
    } else {
        v = mk_mul2(s, power(s, b, k - 1), b);
    }
    if (ch_map_put(&s->pow_val, key, pv(v))) ch_cse_oom(s);
    return v;
}

static uint32_t memo_call(cse *s, ch_map *m, const char *f, uint32_t b)
{
    long got = vp(ch_map_get(m, (uint64_t)b + 1));
    if (got >= 0) return (uint32_t)got;
    uint32_t v = ch_cse_mk_call(s, f, b, NONE);
    if (ch_map_put(m, (uint64_t)b + 1, pv(v))) ch_cse_oom(s);
    return v;
}

/* base^q for a non-integer q > 0: sqrt/cbrt then an integer power, else pow. */
static uint32_t frac_power(cse *s, uint32_t b, const fmpq_t q)
{
    const fmpz *den = fmpq_denref(q), *num = fmpq_numref(q);
    if (fmpz_fits_si(num) && (fmpz_equal_si(den, 2) || fmpz_equal_si(den, 3))) {
        int two = fmpz_equal_si(den, 2);
        uint32_t r = memo_call(s, two ? &s->sqrt_val : &s->cbrt_val,
                               two ? "sqrt" : "cbrt", b);
        ulong k = (ulong)fmpz_get_si(num), d = two ? 2 : 3;
        if (k < d) return power(s, r, k);
        /* b^(k/d) = b^(k div d) * root^(k mod d): b^(3/2) is b*sqrt(b) */
        return mk_mul2(s, power(s, b, k / d), power(s, r, k % d));
    }
    return mk_pow_lit(s, b, ch_fmpq_to_double(q));
}

/* base^|q| as a value. */
static uint32_t factor_value(cse *s, const ch_expr *base, const fmpq_t q)
{
    uint32_t b = lower(s, base);
    if (s->failed) return 0;
    fmpq_t a;
    fmpq_init(a);
    fmpq_abs(a, q);
    uint32_t v;
    if (fmpz_is_one(fmpq_denref(a)))
        v = fmpz_fits_si(fmpq_numref(a))
                ? power(s, b, (ulong)fmpz_get_si(fmpq_numref(a)))
                : frac_power(s, b, a);
    else
        v = frac_power(s, b, a);
    fmpq_clear(a);
    return v;
}

/* A base with a negative integer exponent in several products: its
 * reciprocal is computed once and those factors become its powers. */
static int recip_shared(const cse *s, const ch_expr *base, const fmpq *q)
{
    return fmpq_sgn(q) < 0 && fmpz_is_one(fmpq_denref(q)) &&
           loc(s, base) && s->negc[loc(s, base) - 1] >= 2;
}

static uint32_t recip_power(cse *s, const ch_expr *base, const fmpq *q)
{
    uint32_t b = lower(s, base);
    if (s->failed) return 0;
    long got = vp(ch_map_get(&s->recip_val, (uint64_t)b + 1));
    if (got < 0) {
        got = (long)mk_recip(s, b);
        if (ch_map_put(&s->recip_val, (uint64_t)b + 1, pv((size_t)got))) ch_cse_oom(s);
    }
    fmpz_t k;
    fmpz_init(k);
    fmpz_neg(k, fmpq_numref(q));
    uint32_t v = fmpz_fits_si(k) ? power(s, (uint32_t)got, (ulong)fmpz_get_si(k)) : (uint32_t)got;
    fmpz_clear(k);
    return v;
}

/* The sum v, a factor of a product with coefficient k, rescaled so that
 * its last term (the highest value number) has coefficient +-1, k taking
 * the scale. The expression core writes a sum that is a factor with its
 * first coefficient 1 (2a + 2b as 2 (a + b)); the weighted tails
 * sum_{j >= i} w_j x_j of the rows of a chain's mass matrix then differ
 * in every coefficient from row to row, while their last terms are the
 * same: scaled by the last coefficient they share their tails (see
 * seq_of). The operations are as many. */
static uint32_t unit_tail(cse *s, uint32_t v, fmpq_t k)
{
    const node *a = s->nd[v];
    if (s->failed || a->kind != K_ADD || a->n < 2 || is_pm1(a->c + a->n - 1)) return v;
    fmpq *c = _fmpq_vec_init(a->n + 1);
    fmpq_t t;
    fmpq_init(t);
    ch_fmpq_set(t, a->c + a->n - 1);
    for (uint32_t i = 0; i < a->n; i++) fmpq_div(c + i, a->c + i, t);
    fmpq_div(c + a->n, a->k, t);
    uint32_t r = ch_cse_mk_add(s, c + a->n, a->op, c, a->n);
    fmpq_mul(k, k, t);
    fmpq_clear(t);
    _fmpq_vec_clear(c, a->n + 1);
    return r;
}

static uint32_t lower_mul(cse *s, const ch_expr *e)
{
    /* numerator and denominator in one buffer, on the stack when small
     * (most products are; small: the lowering recurses) */
    uint32_t stack[32], *num = 2 * (size_t)e->n + 3 <= 32 ? stack
                                : malloc((2 * (size_t)e->n + 3) * sizeof *num);
    if (!num) {
        ch_cse_oom(s);
        return 0;
    }
    uint32_t *den = num + e->n + 2;
    uint32_t nn = 0, nd = 0;
    uint32_t at = loc(s, e);
    const ch_expr *D = at ? s->den[at - 1] : NULL;
    int hoist = D && (uintptr_t)ch_map_get(&s->den_uses, D->id) >= 2;
    fmpq_t k;
    fmpq_init(k);
    ch_fmpq_set(k, e->num);
    for (uint32_t i = 0; i < e->n && !s->failed; i++) {
        const fmpq *q = e->pair[i].c;
        if (fmpq_sgn(q) > 0 && fmpq_is_one(q) && e->pair[i].e->kind == CH_ADD)
            num[nn++] = unit_tail(s, factor_value(s, e->pair[i].e, q), k);
        else if (fmpq_sgn(q) > 0)
            num[nn++] = factor_value(s, e->pair[i].e, q);
        else if (recip_shared(s, e->pair[i].e, q))
            num[nn++] = recip_power(s, e->pair[i].e, q);
        else if (!hoist)
            den[nd++] = factor_value(s, e->pair[i].e, q);
    }
    if (hoist && !s->failed) {
        long got = vp(ch_map_get(&s->inv_val, D->id));
        if (got < 0) {
            uint32_t d = lower(s, D);
            if (!s->failed) {
                got = (long)mk_recip(s, d);
                if (ch_map_put(&s->inv_val, D->id, pv((size_t)got))) ch_cse_oom(s);
            }
        }
        if (got >= 0) num[nn++] = (uint32_t)got;
    }
    uint32_t v = s->failed ? 0 : ch_cse_mk_mul(s, k, num, nn, den, nd);
    fmpq_clear(k);
    if (num != stack) free(num);
    return v;
}

static uint32_t lower_add(cse *s, const ch_expr *e)
{
    /* the terms on the stack when few (few: the lowering recurses) */
    uint32_t tst[8], *t = e->n <= 8 ? tst : malloc(e->n * sizeof *t);
    fmpq cst[8], *c = e->n <= 8 ? cst : _fmpq_vec_init(e->n);
    if (!t) {
        if (c != cst) _fmpq_vec_clear(c, e->n);
        ch_cse_oom(s);
        return 0;
    }
    if (c == cst)
        for (uint32_t i = 0; i < e->n; i++) fmpq_init(c + i);
    for (uint32_t i = 0; i < e->n && !s->failed; i++) {
        t[i] = lower(s, e->pair[i].e);
        ch_fmpq_set(c + i, e->pair[i].c);
    }
    uint32_t v = s->failed ? 0 : ch_cse_mk_add(s, e->num, t, c, e->n);
    if (t != tst) free(t);
    if (c != cst)
        _fmpq_vec_clear(c, e->n);
    else
        for (uint32_t i = 0; i < e->n; i++) fmpq_clear(c + i);
    return v;
}

static uint32_t lower_fun(cse *s, const ch_expr *e)
{
    static const char *const cname[CH_F_COUNT] = {
        "sin", "cos", "tan", "asin", "acos", "atan", "atan2",
        "sinh", "cosh", "tanh", "exp", "log", "fabs"};
    uint32_t a = lower(s, e->pair[0].e);
    if (s->failed) return 0;
    if (e->fun != CH_F_ATAN2) return ch_cse_mk_call(s, cname[e->fun], a, NONE);
    uint32_t b = lower(s, e->pair[1].e);
    if (s->failed) return 0;
    return ch_cse_mk_call(s, "atan2", a, b);
}

static uint32_t lower(cse *s, const ch_expr *e)
{
    if (s->failed) return 0;
    uint32_t at = loc(s, e);
    long got = at ? (long)s->lval[at - 1] - 1 : vp(ch_map_get(&s->node_val, e->id));
    if (got >= 0) return (uint32_t)got;
    uint32_t v = 0;
    switch (e->kind) {
    case CH_NUM: v = ch_cse_mk_num(s, e->num); break;
    case CH_SYM: v = lower_sym(s, ch_sym_of(e)); break;
    case CH_ADD: v = lower_add(s, e); break;
    case CH_MUL: v = lower_mul(s, e); break;
    case CH_FUN: v = lower_fun(s, e); break;
    case CH_POW: {
        uint32_t a = lower(s, e->pair[0].e), b = lower(s, e->pair[1].e);
        if (s->failed) return 0;
        v = ch_cse_mk_call(s, "pow", a, b);
        break;
    }
    default: fail(s, CH_ERR_MODEL, "unknown node kind in CSE");
    }
    if (s->failed) return v;
    if (at)
        s->lval[at - 1] = v + 1;
    else if (ch_map_put(&s->node_val, e->id, pv(v)))
        ch_cse_oom(s);
    return v;
}

/* ---- denominators: which products share one ------------------------------ */

/* The children of a node. */
static uint32_t nkids(const ch_expr *e)
{
    if (e->kind == CH_ADD || e->kind == CH_MUL) return e->n;
    if (e->kind == CH_POW || (e->kind == CH_FUN && e->fun == CH_F_ATAN2)) return 2;
    return e->kind == CH_FUN ? 1 : 0;
}

static const ch_expr *kid(const ch_expr *e, uint32_t i)
{
    return (e->kind == CH_ADD || e->kind == CH_MUL) ? e->pair[i].e : e->pair[i].e;
}

/* Numbers the nodes reachable from outs, children first, in the order of
 * a depth-first visit of the outputs in order, children in order (so the
 * denominator nodes below are made in a fixed order). Iterative: the DAG
 * can be deep. */
static void reach(cse *s, size_t n, const ch_expr *const *outs)
{
    s->lid = ch_ctx_ids_take(s->ctx, &s->nlid);
    typedef struct {
        const ch_expr *e;
        uint32_t i;
    } frame;
    size_t cap = 1024, scap = 64, sp = 0;
    s->post = malloc(cap * sizeof *s->post);
    frame *st = malloc(scap * sizeof *st);
    if (!s->lid || !s->post || !st) goto fail;
    for (size_t o = 0; o < n; o++) {
        if (s->lid[outs[o]->id]) continue;
        s->lid[outs[o]->id] = UINT32_MAX; /* on the stack */
        st[sp++] = (frame){outs[o], 0};
        while (sp) {
            frame *f = &st[sp - 1];
            if (f->i < nkids(f->e)) {
                const ch_expr *c = kid(f->e, f->i++);
                if (s->lid[c->id]) continue;
                if (sp == scap) {
                    frame *t = realloc(st, 2 * scap * sizeof *st);
                    if (!t) goto fail;
                    st = t, scap *= 2;
                }
                s->lid[c->id] = UINT32_MAX;
                st[sp++] = (frame){c, 0};
                continue;
            }
            if (s->npost == cap) {
                const ch_expr **t = realloc(s->post, 2 * cap * sizeof *t);
                if (!t) goto fail;
                s->post = t, cap *= 2;
            }
            s->post[s->npost++] = f->e;
            s->lid[f->e->id] = s->npost;
            sp--;
        }
    }
    s->lval = calloc(s->npost ? s->npost : 1, sizeof *s->lval);
    s->negc = calloc(s->npost ? s->npost : 1, sizeof *s->negc);
    s->den = calloc(s->npost ? s->npost : 1, sizeof *s->den);
    if (!s->lval || !s->negc || !s->den) goto fail;
    free(st);
    return;
fail:
    free(st);
    ch_cse_oom(s);
}

/* Over the reachable nodes: first, per base, the products where it has a
 * negative integer exponent (bases counted twice or more get a shared
 * reciprocal); then for each product its remaining denominator node D
 * (hash-consed, so equal denominators are one node) and, per D, the
 * products dividing by D. */
static void find_denominators(cse *s)
{
    for (uint32_t j = 0; j < s->npost; j++) {
        const ch_expr *e = s->post[j];
        if (e->kind != CH_MUL) continue;
        for (uint32_t i = 0; i < e->n; i++) {
            const fmpq *q = e->pair[i].c;
            if (fmpq_sgn(q) < 0 && fmpz_is_one(fmpq_denref(q)))
                s->negc[s->lid[e->pair[i].e->id] - 1]++;
        }
    }
    fmpq_t a;
    fmpq_init(a);
    const ch_expr *stack[16], **f = stack;
    uint32_t fcap = 16;
    for (uint32_t j = 0; j < s->npost && !s->failed; j++) {
        const ch_expr *e = s->post[j];
        if (e->kind != CH_MUL) continue;
        if (e->n > fcap) {
            const ch_expr **g = f == stack ? malloc(e->n * sizeof *g) : realloc(f, e->n * sizeof *g);
            if (!g) {
                ch_cse_oom(s);
                break;
            }
            f = g, fcap = e->n;
        }
        size_t nf = 0;
        for (uint32_t i = 0; i < e->n; i++)
            if (fmpq_sgn(e->pair[i].c) < 0 && !recip_shared(s, e->pair[i].e, e->pair[i].c)) {
                fmpq_neg(a, e->pair[i].c);
                f[nf++] = ch_pow_q(s->ctx, e->pair[i].e, a);
            }
        if (!nf) continue;
        const ch_expr *D = ch_mul_n(s->ctx, nf, f);
        if (!D) {
            fail(s, CH_ERR_LIMIT, "expression limit reached in CSE");
        } else {
            uintptr_t c = (uintptr_t)ch_map_get(&s->den_uses, D->id);
            s->den[j] = D;
            if (ch_map_put(&s->den_uses, D->id, (void *)(c + 1))) ch_cse_oom(s);
        }
    }
    if (f != stack) free(f);
    fmpq_clear(a);
}

/* ---- printing ------------------------------------------------------------- */

/* Appends n bytes to b: while there is room (almost always) without a call
 * (a program is millions of small pieces). */
static inline void bputn(ch_buf *b, const char *t, size_t n)
{
    if (!b->oom && b->len + n < b->cap) {
        memcpy(b->s + b->len, t, n);
        b->len += n;
        b->s[b->len] = '\0';
    } else {
        ch_buf_putn(b, t, n);
    }
}

static inline void bput(ch_buf *b, const char *t) { bputn(b, t, strlen(t)); }

/* The decimal digits of x (printf's %u, which is many times slower: the
 * programs have hundreds of thousands of operands). */
static void put_u32(ch_buf *b, uint32_t x)
{
    char d[10];
    int i = (int)sizeof d;
    do d[--i] = (char)('0' + x % 10), x /= 10;
    while (x);
    bputn(b, d + i, sizeof d - (size_t)i);
}

static void put_val(ch_buf *b, cse *s, const uint32_t *name, uint32_t v)
{
    if (s->nd[v]->kind == K_LEAF) {
        bput(b, s->nd[v]->text);
    } else {
        bput(b, s->tmp);
        put_u32(b, name[v]);
    }
}

static void put_stmt(ch_buf *r, cse *s, const uint32_t *name, const node *a)
{
    if (a->kind == K_CALL) {
        bput(r, a->fn);
        bput(r, "(");
        put_val(r, s, name, a->op[0]);
        if (a->n > 1) {
            bput(r, ", ");
            put_val(r, s, name, a->op[1]);
        }
        bput(r, ")");
    } else if (a->kind == K_MUL) {
        int neg = fmpq_sgn(a->k) < 0, unit = is_pm1(a->k);
        if (a->n == 2 && a->nd == 0 && unit && !neg) { /* a power step, a shared pair */
            put_val(r, s, name, a->op[0]);
            bput(r, " * ");
            put_val(r, s, name, a->op[1]);
            return;
        }
        if (neg) bput(r, "-");
        if (!unit || a->n == 0) {
            put_abs_q(r, a->k);
            if (a->n) bput(r, "*");
        }
        for (uint32_t i = 0; i < a->n; i++) {
            if (i) bput(r, "*");
            put_val(r, s, name, a->op[i]);
        }
        if (a->nd) {
            bput(r, a->nd > 1 ? " / (" : " / ");
            for (uint32_t i = 0; i < a->nd; i++) {
                if (i) bput(r, "*");
                put_val(r, s, name, a->op[a->n + i]);
            }
            if (a->nd > 1) bput(r, ")");
        }
    } else {
        for (uint32_t i = 0; i < a->n; i++) {
            const fmpq *c = a->c + i;
            int neg = fmpq_sgn(c) < 0;
            if (i) bput(r, neg ? " - " : " + ");
            else if (neg) bput(r, "-");
            if (!is_pm1(c)) {
                put_abs_q(r, c);
                bput(r, "*");
            }
            put_val(r, s, name, a->op[i]);
        }
        if (!fmpq_is_zero(a->k)) {
            bput(r, fmpq_sgn(a->k) < 0 ? " - " : " + ");
            put_abs_q(r, a->k);
        }
    }
}

/* The values reachable from outs that are statements (not leaves), each
 * after its operands, depth first from the outputs in their order (the
 * operands in theirs): each value is computed close to its first use, so
 * fewer values are live at once. In value-number order the n-trailer's
 * reduced kernel keeps sin, cos and the first partial sums live across
 * the whole body; gcc -O2 (which does not reorder statements before
 * register allocation on x86-64) then spills and copies more, and the
 * kernel ran 10% slower for the same operations. Sets *count; NULL when
 * out of memory. */
static uint32_t *print_order(cse *s, const uint32_t *outs, size_t n, uint32_t *count)
{
    uint32_t nn = s->nn ? s->nn : 1, cnt = 0, top = 0;
    uint32_t *order = malloc(nn * sizeof *order), *sv = malloc(nn * sizeof *sv);
    uint32_t *si = malloc(nn * sizeof *si);
    unsigned char *seen = calloc(nn, 1);
    if (!order || !sv || !si || !seen) {
        free(order);
        order = NULL;
        goto done;
    }
    for (size_t o = 0; o < n; o++) {
        uint32_t r = outs[o];
        if (seen[r] || s->nd[r]->kind == K_LEAF) continue;
        seen[r] = 1, sv[0] = r, si[0] = 0, top = 1;
        while (top) { /* (an explicit stack: chains are as deep as the model is large) */
            const node *a = s->nd[sv[top - 1]];
            if (si[top - 1] == a->n + a->nd) {
                order[cnt++] = sv[--top];
                continue;
            }
            uint32_t w = a->op[si[top - 1]++];
            if (seen[w] || s->nd[w]->kind == K_LEAF) continue;
            seen[w] = 1, sv[top] = w, si[top] = 0, top++;
        }
    }
done:
    free(sv);
    free(si);
    free(seen);
    *count = cnt;
    return order;
}

/* Value v as an operand of the program as data (cse.h). */
static ch_cse_arg arg_of(const cse *s, const uint32_t *name, uint32_t v)
{
    const node *a = s->nd[v];
    ch_cse_arg r = {CH_CSE_NONE, NULL};
    if (a->kind == K_LEAF) r.sym = a->sym;
    else r.stmt = name[v];
    return r;
}

/* The statements of the values reachable from outs, in print_order, as
 * text, and as data where asked for (with_data). */
static void print_prog(cse *s, const uint32_t *outs, size_t n)
{
    uint32_t cnt;
    uint32_t *order = print_order(s, outs, n, &cnt);
    uint32_t *name = malloc((s->nn ? s->nn : 1) * sizeof *name);
    if (!order || !name) {
        free(order);
        free(name);
        ch_cse_oom(s);
        return;
    }
    ch_cse_prog *p = s->prog;
    size_t nargs = 0;
    if (s->with_data) {
        for (uint32_t j = 0; j < cnt; j++) nargs += s->nd[order[j]]->n + s->nd[order[j]]->nd;
        p->line = malloc(((size_t)cnt + 1) * sizeof *p->line);
        p->arg_at = malloc(((size_t)cnt + 1) * sizeof *p->arg_at);
        p->arg = malloc((nargs ? nargs : 1) * sizeof *p->arg);
        p->call = malloc(cnt ? cnt : 1);
        p->out = malloc((n ? n : 1) * sizeof *p->out);
        if (!p->line || !p->arg_at || !p->arg || !p->call || !p->out) {
            free(order);
            free(name);
            ch_cse_oom(s);
            return;
        }
        nargs = 0;
    }
    for (uint32_t j = 0; j < cnt; j++) {
        uint32_t v = order[j];
        const node *a = s->nd[v];
        name[v] = (uint32_t)p->ntemps++;
        if (p->line) {
            p->line[j] = p->body.len;
            p->arg_at[j] = nargs;
            p->call[j] = a->kind == K_CALL;
            for (uint32_t i = 0; i < a->n + a->nd; i++)
                p->arg[nargs++] = arg_of(s, name, a->op[i]);
        }
        /* "INDENTconst double TMPk = STMT;", straight into the body */
        bput(&p->body, s->indent);
        bput(&p->body, "const double ");
        bput(&p->body, s->tmp);
        put_u32(&p->body, name[v]);
        bput(&p->body, " = ");
        put_stmt(&p->body, s, name, a);
        bput(&p->body, ";\n");
        ch_opcount c;
        node_ops(a, &c);
        p->after.add += c.add, p->after.mul += c.mul, p->after.div += c.div;
        p->after.call += c.call;
    }
    if (p->line) {
        p->line[cnt] = p->body.len;
        p->arg_at[cnt] = nargs;
    }
    for (size_t i = 0; i < n && !s->failed; i++) {
        if (p->out) p->out[i] = arg_of(s, name, outs[i]);
        ch_buf b;
        ch_buf_init(&b);
        put_val(&b, s, name, outs[i]);
        p->ref[i] = b.oom ? NULL : ch_buf_take(&b);
        ch_buf_free(&b);
        if (!p->ref[i]) ch_cse_oom(s);
    }
    free(order);
    free(name);
}

/* ---- operation counts of the outputs as trees ----------------------------- */

static void count_add(ch_opcount *a, const ch_opcount *b, double times)
{
    a->add += times * b->add;
    a->mul += times * b->mul;
    a->div += times * b->div;
    a->call += times * b->call;
}

/* The operations of each reachable node as a tree, children first. */
static void tree_cost(const cse *s, const ch_expr *e, ch_opcount *memo, ch_opcount *c)
{
    memset(c, 0, sizeof *c);
    if (e->kind == CH_ADD) {
        c->add = e->n - 1 + !fmpq_is_zero(e->num);
        for (uint32_t i = 0; i < e->n; i++) {
            if (!is_pm1(e->pair[i].c)) c->mul += 1;
            count_add(c, &memo[s->lid[e->pair[i].e->id] - 1], 1);
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
            count_add(c, &memo[s->lid[e->pair[i].e->id] - 1], k);
        }
        if (neg) c->div += 1, factors -= 1;
        if (factors > 1) c->mul += factors - 1;
    } else if (e->kind == CH_FUN || e->kind == CH_POW) {
        c->call = 1;
        for (uint32_t i = 0; i < nkids(e); i++)
            count_add(c, &memo[s->lid[e->pair[i].e->id] - 1], 1);
    }
}

static int count_before(const cse *s, size_t n, const ch_expr *const *outs,
                        ch_opcount *before)
{
    ch_opcount *memo = malloc((s->npost ? s->npost : 1) * sizeof *memo);
    if (!memo) return -1;
    for (uint32_t j = 0; j < s->npost; j++) tree_cost(s, s->post[j], memo, &memo[j]);
    memset(before, 0, sizeof *before);
    for (size_t i = 0; i < n; i++) count_add(before, &memo[s->lid[outs[i]->id] - 1], 1);
    free(memo);
    return 0;
}

/* ---- entry points --------------------------------------------------------- */

/* ---- programs built before ------------------------------------------------ */

/* A program is a function of the outputs (node ids), the names of the
 * symbols they reach, the temporaries' stem and the indent: the key holds
 * exactly these. Building a program again makes no new nodes (the
 * denominators were made the first time), so a program taken from the
 * cache leaves the context as building it would. */
typedef struct {
    uint64_t h;
    unsigned char *key;
    size_t klen;
    ch_cse_prog prog;
} cache_entry;

struct ch_cse_cache {
    const ch_ctx *ctx;
    cache_entry *e;
    size_t n, cap;
};

ch_cse_cache *ch_cse_cache_new(void) { return calloc(1, sizeof(ch_cse_cache)); }

void ch_cse_cache_free(ch_cse_cache *c)
{
    if (!c) return;
    for (size_t i = 0; i < c->n; i++) {
        free(c->e[i].key);
        ch_cse_prog_free(&c->e[i].prog);
    }
    free(c->e);
    free(c);
}

/* A copy of p into *to; 0, or -1 when out of memory (*to then empty). */
static int prog_copy(const ch_cse_prog *p, ch_cse_prog *to)
{
    memset(to, 0, sizeof *to);
    ch_buf_init(&to->body);
    if (p->body.s) ch_buf_putn(&to->body, p->body.s, p->body.len);
    to->ref = calloc(p->n ? p->n : 1, sizeof *to->ref);
    to->n = p->n;
    to->ntemps = p->ntemps;
    to->before = p->before;
    to->after = p->after;
    int bad = !to->ref || to->body.oom; /* (cached programs have no data) */
    for (size_t i = 0; !bad && i < p->n; i++) {
        size_t len = strlen(p->ref[i]) + 1;
        if (!(to->ref[i] = malloc(len))) bad = 1;
        else memcpy(to->ref[i], p->ref[i], len);
    }
    if (bad) {
        ch_cse_prog_free(to);
        return -1;
    }
    return 0;
}

/* The key of the program being built (after reach); 0, or -1 when there
 * is none (a symbol without a name: the build fails anyway). */
static int cache_key(const cse *s, size_t n, const ch_expr *const *outs, ch_buf *k)
{
    uint64_t nn = n;
    ch_buf_putn(k, (const char *)&nn, sizeof nn);
    for (size_t i = 0; i < n; i++) ch_buf_putn(k, (const char *)&outs[i]->id, sizeof outs[i]->id);
    ch_buf_putn(k, s->tmp, strlen(s->tmp) + 1);
    ch_buf_putn(k, s->indent, strlen(s->indent) + 1);
    for (uint32_t j = 0; j < s->npost; j++) {
        const ch_expr *e = s->post[j];
        if (e->kind != CH_SYM || ch_sym_of(e)->kind == CH_SYM_PI) continue;
        const char *t = s->namer(s->data, ch_sym_of(e));
        if (!t) return -1;
        ch_buf_putn(k, (const char *)&e->id, sizeof e->id);
        ch_buf_putn(k, t, strlen(t) + 1);
    }
    return k->oom ? -1 : 0;
}

static uint64_t bytes_hash(const unsigned char *p, size_t n)
{
    uint64_t h = 1469598103934665603u;
    for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 1099511628211u;
    return h;
}

static cache_entry *cache_find(ch_cse_cache *c, uint64_t h, const ch_buf *k)
{
    for (size_t i = 0; i < c->n; i++)
        if (c->e[i].h == h && c->e[i].klen == k->len && memcmp(c->e[i].key, k->s, k->len) == 0)
            return &c->e[i];
    return NULL;
}

/* Keeps a copy of p under the key (nothing when out of memory: a cache
 * only). The key's text is taken. */
static void cache_add(ch_cse_cache *c, uint64_t h, ch_buf *k, const ch_cse_prog *p)
{
    if (c->n == c->cap) {
        size_t cap = c->cap ? 2 * c->cap : 16;
        cache_entry *e = realloc(c->e, cap * sizeof *e);
        if (!e) return;
        c->e = e;
        c->cap = cap;
    }
    cache_entry *e = &c->e[c->n];
    if (prog_copy(p, &e->prog)) return;
    e->h = h;
    e->klen = k->len;
    e->key = (unsigned char *)ch_buf_take(k);
    if (!e->key) {
        ch_cse_prog_free(&e->prog);
        return;
    }
    c->n++;
}

static int build(ch_ctx *ctx, ch_cse_cache *cache, size_t n, const ch_expr *const *outs,
                 ch_c_namer namer, void *data, const char *tmp, const char *indent,
                 int with_data, ch_cse_prog *out, ch_error *err);

int ch_cse_build(ch_ctx *ctx, size_t n, const ch_expr *const *outs,
                 ch_c_namer namer, void *data, const char *tmp,
                 const char *indent, ch_cse_prog *out, ch_error *err)
{
    return build(ctx, NULL, n, outs, namer, data, tmp, indent, 0, out, err);
}

int ch_cse_build_data(ch_ctx *ctx, size_t n, const ch_expr *const *outs,
                      ch_c_namer namer, void *data, const char *tmp,
                      const char *indent, ch_cse_prog *out, ch_error *err)
{
    return build(ctx, NULL, n, outs, namer, data, tmp, indent, 1, out, err);
}

int ch_cse_build_cached(ch_ctx *ctx, ch_cse_cache *cache, size_t n,
                        const ch_expr *const *outs, ch_c_namer namer, void *data,
                        const char *tmp, const char *indent, ch_cse_prog *out,
                        ch_error *err)
{
    return build(ctx, cache, n, outs, namer, data, tmp, indent, 0, out, err);
}

static int build(ch_ctx *ctx, ch_cse_cache *cache, size_t n, const ch_expr *const *outs,
                 ch_c_namer namer, void *data, const char *tmp, const char *indent,
                 int with_data, ch_cse_prog *out, ch_error *err)
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
    if (!out->ref) return ch_error_set(err, CH_ERR_MEMORY, NULL, 0, 0, "out of memory");
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
    s.with_data = with_data;
    ch_map *maps[] = {&s.node_val, &s.pow_val, &s.sqrt_val, &s.cbrt_val,
                      &s.inv_val, &s.den_uses, &s.recip_val, &s.num_val};
    for (size_t i = 0; i < sizeof maps / sizeof *maps; i++) ch_map_init(maps[i]);
    uint32_t *val = malloc((n ? n : 1) * sizeof *val);
    if (!val) ch_cse_oom(&s);
    reach(&s, n, outs);
    ch_buf key;
    ch_buf_init(&key);
    uint64_t kh = 0;
    int keyed = 0, hit = 0;
    if (cache && (!cache->ctx || cache->ctx == ctx) && !s.failed &&
        cache_key(&s, n, outs, &key) == 0) {
        cache->ctx = ctx;
        keyed = 1;
        kh = bytes_hash((const unsigned char *)key.s, key.len);
        const cache_entry *got = cache_find(cache, kh, &key);
        if (got) {
            ch_cse_prog_free(out);
            if (prog_copy(&got->prog, out)) {
                ch_buf_init(&out->body);
                ch_cse_oom(&s);
            }
            hit = 1;
        }
    }
    if (!hit) {
        if (!s.failed && count_before(&s, n, outs, &out->before)) ch_cse_oom(&s);
        if (!s.failed) find_denominators(&s);
        /* the table sized once for the values the lowering and the passes
         * make (a few per node, load up to 3/4: its 8-byte slots are
         * probed within a cache line): growing it rehashes at random */
        if (!s.failed) {
            size_t cap = 1024;
            while (cap < 4 * (size_t)s.npost) cap *= 2;
            s.tabcap = cap / 2; /* empty: tab_grow allocates twice that */
            if (tab_grow(&s)) ch_cse_oom(&s);
        }
        fmpq_t z;
        fmpq_init(z);
        s.zero = ch_cse_mk_num(&s, z);
        fmpq_clear(z);
        for (size_t i = 0; i < n && !s.failed; i++) val[i] = lower(&s, outs[i]);
        /* factoring flattens as it goes (a product is rebuilt before the sums
         * that use it). A last flattening would absorb the signs that sharing
         * leaves (-w for a shared w) into their users: fewer statements but the
         * same count, not worth a pass over everything */
        static const int passes[] = {P_FACTOR, P_FLATTEN, P_CHAIN, P_SHARE};
        for (size_t i = 0; i < sizeof passes / sizeof *passes; i++) ch_cse_pass(&s, val, n, passes[i]);
        if (!s.failed) print_prog(&s, val, n);
        if (out->body.oom) ch_cse_oom(&s);
        if (keyed && !s.failed) cache_add(cache, kh, &key, out);
    }
    ch_buf_free(&key);
    free(val);
    for (uint32_t i = 0; i < s.nn; i++) {
        node *a = s.nd[i];
        fmpq_clear(a->k);
        if (a->c)
            for (uint32_t j = 0; j < a->n; j++) fmpq_clear(a->c + j);
    }
    while (s.chunk) {
        char *next;
        size_t cs;
        memcpy(&next, s.chunk, sizeof next);
        memcpy(&cs, s.chunk + sizeof next, sizeof cs);
        if (cs == CH_MEM_HUGE) ch_ctx_block_give(ctx, s.chunk); /* for the next build */
        else ch_mem_free(s.chunk, cs);
        s.chunk = next;
    }
    ch_mem_free(s.nd, s.capn * sizeof *s.nd);
    ch_mem_free(s.tab, s.tabcap * sizeof *s.tab);
    /* reach set the entries of the nodes in post, or failed */
    for (uint32_t i = 0; s.lid && !s.failed && i < s.npost; i++) s.lid[s.post[i]->id] = 0;
    ch_ctx_ids_give(ctx, s.lid, s.nlid, !s.failed);
    free(s.post);
    free(s.lval);
    free(s.negc);
    free(s.den);
    for (size_t i = 0; i < sizeof maps / sizeof *maps; i++) ch_map_free(maps[i]);
    return s.failed ? (err ? (int)err->code : 1) : 0;
}

void ch_cse_prog_free(ch_cse_prog *p)
{
    if (p->ref)
        for (size_t i = 0; i < p->n; i++) free(p->ref[i]);
    free(p->ref);
    ch_cse_prog_drop_data(p);
    ch_buf_free(&p->body);
    memset(p, 0, sizeof *p);
}

void ch_cse_prog_drop_outputs(ch_cse_prog *p, size_t count)
{
    for (size_t i = 0; i < count; i++) free(p->ref[i]);
    memmove(p->ref, p->ref + count, (p->n - count) * sizeof *p->ref);
    if (p->out) memmove(p->out, p->out + count, (p->n - count) * sizeof *p->out);
    p->n -= count;
}

void ch_cse_prog_drop_data(ch_cse_prog *p)
{
    free(p->line);
    free(p->arg_at);
    free(p->arg);
    free(p->call);
    free(p->out);
    p->line = p->arg_at = NULL;
    p->arg = p->out = NULL;
    p->call = NULL;
}

/* A count, exact up to 2^53; beyond, three digits (the counts are
 * doubles: the trees of a substituted solve reach 1e21 operations). */
static void put_count(ch_buf *b, double x, const char *what)
{
    ch_buf_printf(b, x < 9007199254740992.0 ? "%.0f %s" : "%.3g %s", x, what);
}

void ch_opcount_add(ch_opcount *to, const ch_opcount *c)
{
    to->add += c->add, to->mul += c->mul, to->div += c->div, to->call += c->call;
}

void ch_opcount_print(ch_buf *b, const ch_opcount *c)
{
    put_count(b, c->add, "add, ");
    put_count(b, c->mul, "mul, ");
    put_count(b, c->div, "div, ");
    put_count(b, c->call, "calls");
}
