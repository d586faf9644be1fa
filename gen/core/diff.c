/* diff.c — one differentiation routine for partial and total derivatives.
 *
 * Both follow the same structural rules and differ only at symbols: the
 * partial derivative by x maps x to 1 and other symbols to 0; the total time
 * derivative maps a symbol to its `dot`. Results are memoized in the
 * context, so differentiating a DAG costs one visit per node and shared
 * subexpressions are differentiated once. */
#include "core/diff.h"

#include <stdlib.h>
#include <string.h>

#include "core/subst.h"

/* Which derivation: by the symbol x (partial), along a vector field (dir:
 * sid + 1 -> component, a symbol not in it maps to 0), or, with neither,
 * the total time derivative. set: the symbols that can map to nonzero
 * (NULL: every symbol); memo: node (and x) -> result. */
typedef struct {
    const ch_expr *x;
    const ch_map *dir;
    const ch_symset *set;
    ch_map *memo;
    int shallow; /* levels below the root kept in `local`, not in memo */
    ch_map *local;
    ch_map *prod; /* (cofactor id, derivative id) -> their product, or NULL */
    ch_map *near; /* a small copy of what is read from memo, or NULL */
} dmode;

/* Can e depend on what x differentiates by? (Exact: e's symbols.) */
static int depends(const ch_expr *e, const dmode *x)
{
    return x->set ? ch_symset_meets(e->symset, x->set) : e->symset->n != 0;
}

/* memo lookup through the small map `near` when there is one: the mass
 * matrix reads the same few entries (derivatives of the inner sums by each
 * velocity, cofactors) n times each, and the context's memo is large
 * enough that every read of it is a cache miss. */
static const ch_expr *memo_get(const dmode *x, ch_map *memo, uint64_t key)
{
    if (x->near && memo != x->local) {
        const ch_expr *r = ch_map_get(x->near, key);
        if (r) return r;
        r = ch_map_get(memo, key);
        if (r) (void)ch_map_put(x->near, key, (void *)r); /* only a cache */
        return r;
    }
    return ch_map_get(memo, key);
}

static int memo_put(ch_ctx *ctx, const dmode *x, ch_map *memo, uint64_t key,
                    const ch_expr *r)
{
    if (ch_map_put(memo, key, (void *)r)) {
        ch_ctx_fail(ctx, CH_ERR_MEMORY, "out of memory");
        return -1;
    }
    if (x->near && memo != x->local) (void)ch_map_put(x->near, key, (void *)r);
    return 0;
}

/* Levels of ch_diff_once (and ch_diff_symmetric) kept in a memo of the
 * call. The mass matrix differentiates each momentum p_i = sum of terms
 * c * (a X_j + b Y_j) once by every velocity, and the nodes of its top four
 * levels (term, its product, the inner sum, its products) occur in no
 * other derivative: in the context's memo they were O(n^3) entries that
 * are never read again, and every later lookup paid for the larger table.
 * The small per-call map still shares them within the call. */
#define DIFF_ONCE_LEVELS 4

static const ch_expr *deriv(ch_ctx *ctx, const ch_expr *e, const dmode *x);

static uint64_t deriv_key(const ch_expr *e, const dmode *x)
{
    return x->x ? ((uint64_t)e->id << 32 | x->x->id) : e->id;
}

/* Starts loading the memo slot where deriv will look e up. */
static void deriv_prefetch(const ch_expr *e, const dmode *x)
{
    if (e->kind != CH_SYM) ch_map_prefetch(x->shallow ? x->local : x->memo, deriv_key(e, x));
}

static uint64_t cofactor_key(const ch_expr *e, uint32_t i)
{
    return 1ULL << 63 | (uint64_t)i << 32 | e->id;
}

/* e without its factor i (coefficient kept), memoized in the derivative
 * memo under a key no derivative uses (top bit set): a term c * b of a
 * long sum is differentiated by every variable b depends on, and the
 * cofactor c is the same each time. NULL on failure. */
static const ch_expr *cofactor(ch_ctx *ctx, const ch_expr *e, uint32_t i,
                               const dmode *x)
{
    uint64_t key = cofactor_key(e, i);
    const ch_expr *r = memo_get(x, x->memo, key);
    if (r) return r;
    const ch_expr **f = malloc((e->n + 1) * sizeof *f);
    if (!f) {
        ch_ctx_fail(ctx, CH_ERR_MEMORY, "out of memory");
        return NULL;
    }
    size_t n = 0;
    if (!fmpq_is_one(e->num)) f[n++] = ch_num_q(ctx, e->num);
    for (uint32_t j = 0; j < e->n; j++)
        if (j != i) f[n++] = ch_pow_q(ctx, e->pair[j].e, e->pair[j].c);
    r = ch_mul_n(ctx, n, f);
    free(f);
    if (r && memo_put(ctx, x, x->memo, key, r)) return NULL;
    return r;
}

/* d/dx of b^c (rational c) inside a product: whole * c * b' / b. */
static const ch_expr *product_rule(ch_ctx *ctx, const ch_expr *e,
                                   const dmode *x)
{
    /* one factor b (exponent 1) depends on x: d e = cofactor * b' */
    uint32_t dep = e->n, ndep = 0;
    for (uint32_t i = 0; i < e->n && ndep < 2; i++)
        if (depends(e->pair[i].e, x)) {
            dep = i;
            ndep++;
        }
    if (ndep == 1 && fmpq_is_one(e->pair[dep].c)) {
        ch_map_prefetch(x->memo, cofactor_key(e, dep)); /* read once db is known */
        const ch_expr *db = deriv(ctx, e->pair[dep].e, x);
        if (!db || ch_is_zero(db)) return db;
        const ch_expr *cof = cofactor(ctx, e, dep, x);
        if (!x->prod || !cof) return ch_mul(ctx, cof, db);
        /* the same product recurs in every term of a sum whose terms differ
         * only in what the derivative does not see (the mass matrix) */
        uint64_t key = (uint64_t)cof->id << 32 | db->id;
        const ch_expr *r = ch_map_get(x->prod, key);
        if (r) return r;
        r = ch_mul(ctx, cof, db);
        if (r && ch_map_put(x->prod, key, (void *)r)) {
            ch_ctx_fail(ctx, CH_ERR_MEMORY, "out of memory");
            return NULL;
        }
        return r;
    }
    const ch_expr **terms = malloc(e->n * sizeof *terms);
    if (!terms) {
        ch_ctx_fail(ctx, CH_ERR_MEMORY, "out of memory");
        return NULL;
    }
    size_t n = 0;
    for (uint32_t i = 0; i < e->n; i++) {
        if (!depends(e->pair[i].e, x)) continue;
        const ch_expr *db = deriv(ctx, e->pair[i].e, x);
        if (!db) {
            free(terms);
            return NULL;
        }
        if (ch_is_zero(db)) continue;
        /* e * c * b^-1 * b' (a factor c = 1 changes nothing) */
        int one = fmpq_is_one(e->pair[i].c);
        const ch_expr *c = one ? NULL : ch_num_q(ctx, e->pair[i].c);
        const ch_expr *f[4] = {e, ch_pow_si(ctx, e->pair[i].e, -1), db, c};
        terms[n++] = ch_mul_n(ctx, one ? 3 : 4, f);
    }
    const ch_expr *r = ch_add_n(ctx, n, terms);
    free(terms);
    return r;
}

/* ---- the terms of a long sum by symbol --------------------------------
 *
 * A long sum (a chain's flattened velocity, a momentum) is differentiated
 * by many symbols, and each partial derivative looked at every term to
 * find the few that hold the symbol: O(n) per derivative, O(n^3) for the
 * n-trailer's O(n) sums of O(n) terms by O(n) symbols. From its second
 * partial derivative on, a sum of TERMS_MIN terms or more has an index:
 * its (symbol, term) incidences sorted, so that a derivative visits the
 * terms that hold its symbol, in the same order as the scan did. */
#define TERMS_MIN 64

typedef struct {
    size_t n;       /* incidences */
    uint64_t at[];  /* bit << 32 | term (the symbol's ch_sym.bit), increasing */
} term_index;

static const term_index SEEN_ONCE[1]; /* (no index yet: asked once) */

/* The index of the sum e, NULL when the terms are to be scanned (asked
 * the first time, or out of memory: the context failed). */
static const term_index *term_index_of(ch_ctx *ctx, const ch_expr *e)
{
    ch_map *memo = ch_ctx_memo(ctx, CH_MEMO_TERMS);
    const term_index *ix = ch_map_get(memo, e->id);
    if (ix && ix != SEEN_ONCE) return ix;
    if (!ix) {
        if (ch_map_put(memo, e->id, (void *)SEEN_ONCE))
            ch_ctx_fail(ctx, CH_ERR_MEMORY, "out of memory");
        return NULL;
    }
    size_t n = 0;
    for (uint32_t i = 0; i < e->n; i++) {
        const ch_symset *st = e->pair[i].e->symset;
        for (size_t w = 0; w < st->n; w++)
            for (uint64_t b = st->w[w].bits; b; b &= b - 1) n++;
    }
    term_index *t = ch_ctx_alloc(ctx, sizeof *t + (n ? n : 1) * sizeof *t->at);
    if (!t) return NULL;
    t->n = 0;
    for (uint32_t i = 0; i < e->n; i++) {
        const ch_symset *st = e->pair[i].e->symset;
        for (size_t w = 0; w < st->n; w++)
            for (uint64_t b = st->w[w].bits; b; b &= b - 1)
                t->at[t->n++] = (st->w[w].at * 64 + ch_lowest_bit(b)) << 32 | i;
    }
    ch_sort_u64(t->at, t->n);
    if (ch_map_put(memo, e->id, t)) {
        ch_ctx_fail(ctx, CH_ERR_MEMORY, "out of memory");
        return NULL;
    }
    return t;
}

/* [*at, *end): the incidences of the symbol at bit in the index of the
 * sum e; 0 when e has no index (its terms are to be scanned). */
static int terms_holding(ch_ctx *ctx, const ch_expr *e, uint64_t bit,
                         const uint64_t **at, const uint64_t **end)
{
    const term_index *ix = term_index_of(ctx, e);
    if (!ix) return 0;
    size_t lo = 0, hi = ix->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (ix->at[mid] >> 32 < bit) lo = mid + 1;
        else hi = mid;
    }
    *at = *end = ix->at + lo;
    while (*end < ix->at + ix->n && **end >> 32 == bit) ++*end;
    return 1;
}

static const ch_expr *sum_rule(ch_ctx *ctx, const ch_expr *e, const dmode *x)
{
    const ch_expr **terms = malloc(e->n * sizeof *terms);
    fmpq *c = malloc(e->n * sizeof *c);
    if (!terms || !c) {
        free(terms);
        free(c);
        ch_ctx_fail(ctx, CH_ERR_MEMORY, "out of memory");
        return NULL;
    }
    /* only the terms that can depend on the variable: a long sum (a chain's
     * velocity, flattened) has one or two, and its zeros would otherwise
     * all pass through the linear combination */
    size_t nt = 0;
    const uint64_t *at = NULL, *end = NULL; /* the terms that hold x, when indexed */
    int indexed = x->x && e->n >= TERMS_MIN && x->set == x->x->symset
                  && terms_holding(ctx, e, ch_sym_of(x->x)->bit, &at, &end);
    for (uint32_t i = 0; indexed ? at < end : i < e->n; i++) {
        if (indexed) i = (uint32_t)*at++;
        else if (!depends(e->pair[i].e, x)) continue;
        deriv_prefetch(e->pair[i].e, x);
        terms[nt] = e->pair[i].e;
        c[nt++] = *e->pair[i].c; /* shallow: a read-only view of the coefficient */
    }
    /* then their derivatives, the memo slots on their way to the cache
     * (each a miss in a large derivation) */
    size_t kept = 0;
    for (size_t j = 0; j < nt; j++) {
        const ch_expr *d = deriv(ctx, terms[j], x);
        if (d && ch_is_zero(d)) continue;
        terms[kept] = d;
        c[kept++] = c[j];
    }
    nt = kept;
    const ch_expr *r = ch_lincomb(ctx, NULL, nt, c, terms);
    free(terms);
    free(c);
    return r;
}

/* f'(u) for the one-argument functions. */
static const ch_expr *fun_prime(ch_ctx *ctx, ch_fun f, const ch_expr *u)
{
    const ch_expr *one = ch_one(ctx);
    switch (f) {
    case CH_F_SIN: return ch_fun1(ctx, CH_F_COS, u);
    case CH_F_COS: return ch_neg(ctx, ch_fun1(ctx, CH_F_SIN, u));
    case CH_F_TAN:
        return ch_add(ctx, one, ch_pow_si(ctx, ch_fun1(ctx, CH_F_TAN, u), 2));
    case CH_F_ASIN:
    case CH_F_ACOS: {
        const ch_expr *r = ch_pow_q(ctx, ch_sub(ctx, one, ch_pow_si(ctx, u, 2)),
                                    (fmpq[]){{-1, 2}});
        return f == CH_F_ASIN ? r : ch_neg(ctx, r);
    }
    case CH_F_ATAN:
        return ch_pow_si(ctx, ch_add(ctx, one, ch_pow_si(ctx, u, 2)), -1);
    case CH_F_SINH: return ch_fun1(ctx, CH_F_COSH, u);
    case CH_F_COSH: return ch_fun1(ctx, CH_F_SINH, u);
    case CH_F_TANH:
        return ch_sub(ctx, one, ch_pow_si(ctx, ch_fun1(ctx, CH_F_TANH, u), 2));
    case CH_F_EXP: return ch_fun1(ctx, CH_F_EXP, u);
    case CH_F_LOG: return ch_pow_si(ctx, u, -1);
    case CH_F_ABS: return ch_div(ctx, u, ch_fun1(ctx, CH_F_ABS, u));
    default:
        ch_ctx_fail(ctx, CH_ERR_MATH, "cannot differentiate %s",
                    ch_fun_name(f));
        return NULL;
    }
}

static const ch_expr *fun_rule(ch_ctx *ctx, const ch_expr *e, const dmode *x)
{
    if (e->fun == CH_F_ATAN2) { /* d atan2(y, x) = (x dy - y dx)/(x^2+y^2) */
        const ch_expr *y = e->pair[0].e, *xx = e->pair[1].e;
        const ch_expr *dy = deriv(ctx, y, x), *dx = deriv(ctx, xx, x);
        const ch_expr *numer = ch_sub(ctx, ch_mul(ctx, xx, dy), ch_mul(ctx, y, dx));
        const ch_expr *den = ch_add(ctx, ch_pow_si(ctx, xx, 2), ch_pow_si(ctx, y, 2));
        return ch_div(ctx, numer, den);
    }
    const ch_expr *du = deriv(ctx, e->pair[0].e, x);
    if (!du) return NULL;
    if (ch_is_zero(du)) return du;
    return ch_mul(ctx, fun_prime(ctx, (ch_fun)e->fun, e->pair[0].e), du);
}

/* d(b^g) = b^g (g' log b + g b'/b) */
static const ch_expr *pow_rule(ch_ctx *ctx, const ch_expr *e, const dmode *x)
{
    const ch_expr *b = e->pair[0].e, *g = e->pair[1].e;
    const ch_expr *db = deriv(ctx, b, x), *dg = deriv(ctx, g, x);
    const ch_expr *t1 = ch_mul(ctx, dg, ch_fun1(ctx, CH_F_LOG, b));
    const ch_expr *t2 = ch_mul(ctx, ch_mul(ctx, g, db), ch_pow_si(ctx, b, -1));
    if (ch_is_zero(dg)) t1 = ch_zero(ctx);
    if (ch_is_zero(db)) t2 = ch_zero(ctx);
    return ch_mul(ctx, e, ch_add(ctx, t1, t2));
}

static const ch_expr *sym_rule(ch_ctx *ctx, const ch_expr *e, const dmode *x)
{
    if (x->x) return e == x->x ? ch_one(ctx) : ch_zero(ctx);
    if (x->dir) {
        const ch_expr *d = ch_map_get(x->dir, (uint64_t)ch_sym_of(e)->sid + 1);
        return d ? d : ch_zero(ctx);
    }
    if (ch_sym_of(e)->dot) return ch_sym_of(e)->dot;
    if (ch_sym_of(e)->kind == CH_SYM_ACC) {
        ch_ctx_fail(ctx, CH_ERR_MATH,
                    "time derivative of the acceleration %s is not defined",
                    ch_sym_of(e)->name);
        return NULL;
    }
    return ch_zero(ctx);
}

static const ch_expr *rules(ch_ctx *ctx, const ch_expr *e, const dmode *x)
{
    switch (e->kind) {
    case CH_ADD: return sum_rule(ctx, e, x);
    case CH_MUL: return product_rule(ctx, e, x);
    case CH_POW: return pow_rule(ctx, e, x);
    case CH_FUN: return fun_rule(ctx, e, x);
    default: return ch_zero(ctx);
    }
}

static const ch_expr *deriv(ch_ctx *ctx, const ch_expr *e, const dmode *x)
{
    if (!e || ch_ctx_exhausted(ctx)) return NULL;
    if (!depends(e, x)) return ch_zero(ctx);
    if (e->kind == CH_SYM) return sym_rule(ctx, e, x);
    uint64_t key = deriv_key(e, x);
    ch_map *memo = x->memo;
    dmode y = *x;
    if (x->shallow) {
        memo = x->local;
        y.shallow--;
    }
    const ch_expr *r = memo_get(x, memo, key);
    if (r) return r;
    r = rules(ctx, e, &y);
    if (r && memo_put(ctx, x, memo, key, r)) return NULL;
    return r;
}

const ch_expr *ch_diff(ch_ctx *ctx, const ch_expr *e, const ch_expr *sym)
{
    if (!e || !sym) return NULL;
    if (sym->kind != CH_SYM) {
        ch_ctx_fail(ctx, CH_ERR_MATH, "differentiation by a non-symbol");
        return NULL;
    }
    dmode d = {sym, NULL, sym->symset, ch_ctx_memo(ctx, CH_MEMO_DIFF), 0, NULL, NULL, NULL};
    return deriv(ctx, e, &d);
}

const ch_expr *ch_diff_once(ch_ctx *ctx, const ch_expr *e, const ch_expr *sym)
{
    const ch_expr *r = NULL;
    return ch_diff_symmetric(ctx, 1, &e, &sym, &r) ? NULL : r;
}

/* ---- the mass matrix: terms alike up to linear forms --------------------
 *
 * A momentum p_i of a chain is a sum over the bodies behind coordinate i
 * of terms such as m * (a X_b + b Y_b): one skeleton around each body's
 * velocity X_b, a linear form in the velocities (flattened, O(n) terms).
 * The skeleton is linear in the forms (sums; products whose other factors
 * are free of velocities), so the derivative of such a term by v_j depends
 * on the forms only through dX_b/dv_j, and for a chain that is the same
 * node for every body b behind j. The terms of p_i therefore fall into
 * classes by (skeleton, derivatives of its forms by v_j); each class is
 * differentiated once and weighted by the sum of its members'
 * coefficients. That is the linear combination the term-by-term
 * derivative forms (the same node), with O(1) derivatives per entry where
 * term by term took one per body: O(n^2) in all against O(n^3). The runs
 * of a class at v_j (members whose forms have the same derivatives) are
 * found from where consecutive members differ (class_runs), not by
 * comparing every member's rows at every j. */

/* Momenta with fewer terms are differentiated term by term. */
#define CLASS_MIN_TERMS 8

typedef struct {
    ch_ctx *ctx;
    size_t n;
    const ch_expr *const *syms;
    ch_sym_finder vel;  /* the velocities differentiated by */
    ch_map forms;       /* node id -> its row of n derivatives (owned), or NOT_FORM */
    const ch_expr ***holes; /* rows of the forms of the current momentum's terms */
    size_t nholes, capholes;
    int failed;
} lforms;

static const ch_expr *const NOT_FORM[1];

static uint64_t mix(uint64_t h, uint64_t v)
{
    h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
    h *= 0xff51afd7ed558ccdULL;
    return h ^ (h >> 32);
}

static int has_vel(lforms *lf, const ch_expr *e)
{
    int r = ch_sym_finder_has(lf->ctx, &lf->vel, e);
    if (r < 0) lf->failed = 1;
    return r > 0;
}

/* 1 when e is a velocity symbol or velocity * (factors free of them). */
static int vel_monomial(lforms *lf, const ch_expr *e)
{
    if (e->kind == CH_SYM) return has_vel(lf, e);
    if (e->kind != CH_MUL) return 0;
    uint32_t nv = 0;
    for (uint32_t k = 0; k < e->n; k++) {
        const ch_expr *f = e->pair[k].e;
        if (!has_vel(lf, f)) continue;
        if (++nv > 1 || f->kind != CH_SYM || !fmpq_is_one(e->pair[k].c)) return 0;
    }
    return nv == 1;
}

/* The row (d e/d syms[j], j < n) when e is a linear form in the velocities
 * (a sum of terms free of them and of velocity monomials), else NULL.
 * Memoized per call; the derivatives come from the context's memo. */
static const ch_expr **form_row(lforms *lf, const ch_expr *e)
{
    if (e->kind != CH_ADD) return NULL;
    const ch_expr **row = ch_map_get(&lf->forms, e->id);
    if (row) return row == NOT_FORM ? NULL : row;
    int form = 1;
    for (uint32_t k = 0; k < e->n && form; k++)
        form = !has_vel(lf, e->pair[k].e) || vel_monomial(lf, e->pair[k].e);
    if (form && !(row = malloc(lf->n * sizeof *row))) form = 0, lf->failed = 1;
    for (size_t j = 0; form && j < lf->n; j++)
        if (!(row[j] = ch_diff(lf->ctx, e, lf->syms[j]))) lf->failed = 1;
    if (ch_map_put(&lf->forms, e->id, form ? (void *)row : (void *)NOT_FORM)) {
        free(row);
        lf->failed = 1;
        return NULL;
    }
    return form ? row : NULL;
}

/* The one factor of a product that holds velocities, when the others are
 * free of them and its exponent is 1; -1 otherwise. */
static int linear_factor(lforms *lf, const ch_expr *e)
{
    int dep = -1;
    for (uint32_t k = 0; k < e->n; k++)
        if (has_vel(lf, e->pair[k].e)) {
            if (dep >= 0) return -1;
            dep = (int)k;
        }
    return dep >= 0 && fmpq_is_one(e->pair[dep].c) ? dep : -1;
}

static void push_hole(lforms *lf, const ch_expr **row)
{
    if (lf->nholes == lf->capholes) {
        size_t cap = lf->capholes ? 2 * lf->capholes : 64;
        const ch_expr ***h = realloc(lf->holes, cap * sizeof *h);
        if (!h) {
            lf->failed = 1;
            return;
        }
        lf->holes = h;
        lf->capholes = cap;
    }
    lf->holes[lf->nholes++] = row;
}

/* The skeleton's hash: e with its linear forms as holes (their rows
 * pushed to lf->holes in walk order); anything not linear in them is a
 * leaf compared as a node. */
static uint64_t skeleton(lforms *lf, const ch_expr *e, uint64_t h)
{
    if (!has_vel(lf, e)) return mix(h, e->id);
    const ch_expr **row = form_row(lf, e);
    if (row) {
        push_hole(lf, row);
        return mix(h, 1);
    }
    if (e->kind == CH_ADD) {
        h = mix(mix(h, 2), e->n);
        for (uint32_t k = 0; k < e->n; k++)
            h = skeleton(lf, e->pair[k].e, mix(h, ch_hash_q(e->pair[k].c)));
        return mix(h, ch_hash_q(e->num));
    }
    int dep = e->kind == CH_MUL ? linear_factor(lf, e) : -1;
    if (dep < 0) return mix(mix(h, 3), e->id);
    h = mix(mix(mix(h, 4), e->n), ch_hash_q(e->num));
    for (uint32_t k = 0; k < e->n; k++)
        if ((int)k != dep) h = mix(mix(h, e->pair[k].e->id), ch_hash_q(e->pair[k].c));
    return skeleton(lf, e->pair[dep].e, h);
}

/* Whether a and b have the same skeleton (skeleton() walks them alike). */
static int same_skeleton(lforms *lf, const ch_expr *a, const ch_expr *b)
{
    if (a == b) return 1;
    if (!has_vel(lf, a) || !has_vel(lf, b)) return 0;
    int fa = form_row(lf, a) != NULL, fb = form_row(lf, b) != NULL;
    if (fa || fb) return fa && fb;
    if (a->kind != b->kind || a->n != b->n || !fmpq_equal(a->num, b->num)) return 0;
    if (a->kind == CH_ADD) {
        for (uint32_t k = 0; k < a->n; k++)
            if (!fmpq_equal(a->pair[k].c, b->pair[k].c)
                || !same_skeleton(lf, a->pair[k].e, b->pair[k].e))
                return 0;
        return 1;
    }
    int da = a->kind == CH_MUL ? linear_factor(lf, a) : -1;
    int db = b->kind == CH_MUL ? linear_factor(lf, b) : -1;
    if (da < 0 || db < 0) return 0;
    for (uint32_t ka = 0, kb = 0; ka < a->n; ka++, kb++) {
        if ((int)ka == da) ka++;
        if ((int)kb == db) kb++;
        if (ka >= a->n) break;
        if (a->pair[ka].e != b->pair[kb].e || !fmpq_equal(a->pair[ka].c, b->pair[kb].c))
            return 0;
    }
    return same_skeleton(lf, a->pair[da].e, b->pair[db].e);
}

/* Per term of a momentum: its class (the first term with its skeleton;
 * -1: no linear form, differentiated alone), its forms, the next member
 * of its class (-1: none; last: the class's last member so far, kept by
 * the first) and cum, the sum of the coefficients of its class's members
 * up to it. */
typedef struct {
    int cls, next, last;
    size_t hole0, nholes;
    fmpq_t cum;
} term_class;

static int classify(lforms *lf, const ch_expr *p, term_class *tc)
{
    ch_map first; /* skeleton hash (+ probe) -> term index + 1 */
    ch_map_init(&first);
    lf->nholes = 0;
    for (uint32_t t = 0; t < p->n && !lf->failed; t++) {
        tc[t].hole0 = lf->nholes;
        uint64_t h = skeleton(lf, p->pair[t].e, 0) | 1; /* keys are not 0 */
        tc[t].nholes = lf->nholes - tc[t].hole0;
        tc[t].cls = tc[t].next = -1;
        tc[t].last = (int)t;
        fmpq_set(tc[t].cum, p->pair[t].c);
        if (!tc[t].nholes) continue;
        for (;; h += 2) {
            uintptr_t f = (uintptr_t)ch_map_get(&first, h);
            if (!f) {
                tc[t].cls = (int)t;
                if (ch_map_put(&first, h, (void *)(uintptr_t)(t + 1))) lf->failed = 1;
                break;
            }
            size_t c = f - 1;
            if (same_skeleton(lf, p->pair[c].e, p->pair[t].e)) {
                tc[t].cls = (int)c;
                tc[tc[c].last].next = (int)t;
                fmpq_add(tc[t].cum, tc[t].cum, tc[tc[c].last].cum);
                tc[c].last = (int)t;
                break;
            }
        }
    }
    ch_map_free(&first);
    return lf->failed ? -1 : 0;
}

/* Whether terms s and t (of one class) have equal derivatives by syms[j]:
 * their forms have. */
static int same_rows(const lforms *lf, const term_class *tc, size_t s, size_t t, size_t j)
{
    for (size_t h = 0; h < tc[s].nholes; h++)
        if (lf->holes[tc[s].hole0 + h][j] != lf->holes[tc[t].hole0 + h][j]) return 0;
    return 1;
}

/* The entries of one derivative: distinct derivatives (d) with their
 * summed coefficients (c); `at` finds the entry of a class's run by
 * (class, rows of its forms at j). */
typedef struct {
    const ch_expr **d;
    fmpq *c;
    size_t *rep, ne;
    ch_map at;
} entries;

/* Adds the run of class members from s to e (consecutive in the class,
 * equal rows at j): a new entry differentiates s, a known one adds the
 * run's coefficients. -1 on failure. */
static int add_run(lforms *lf, const ch_expr *p, const term_class *tc, size_t j,
                   const dmode *y, entries *en, size_t s, size_t e)
{
    fmpq_t sum; /* cum(e) - cum(s) + c(s) */
    fmpq_init(sum);
    fmpq_sub(sum, tc[e].cum, tc[s].cum);
    fmpq_add(sum, sum, p->pair[s].c);
    uint64_t key = mix(0, (uint64_t)tc[s].cls);
    for (size_t h = 0; h < tc[s].nholes; h++) key = mix(key, lf->holes[tc[s].hole0 + h][j]->id);
    int rc = 0;
    for (key |= 1;; key += 2) { /* keys are not 0 */
        uintptr_t f = (uintptr_t)ch_map_get(&en->at, key);
        if (!f) break;
        size_t r = en->rep[f - 1];
        if (tc[r].cls == tc[s].cls && same_rows(lf, tc, r, s, j)) {
            fmpq_add(en->c + f - 1, en->c + f - 1, sum);
            goto out;
        }
    }
    /* (a zero is kept: the class is not differentiated again) */
    if (!(en->d[en->ne] = deriv(lf->ctx, p->pair[s].e, y))) {
        rc = -1;
        goto out;
    }
    fmpq_init(en->c + en->ne);
    fmpq_swap(en->c + en->ne, sum);
    en->rep[en->ne++] = s;
    if (ch_map_put(&en->at, key, (void *)(uintptr_t)en->ne)) {
        ch_ctx_fail(lf->ctx, CH_ERR_MEMORY, "out of memory");
        rc = -1;
    }
out:
    fmpq_clear(sum);
    return rc;
}

/* Where a class's runs break: the velocities by whose derivatives two
 * consecutive members differ (their forms' rows differ there). For a
 * chain X_(b+1) = X_b + (a term in v_(b+1)), so two consecutive members
 * differ at one velocity, and the same two forms follow each other in
 * every momentum behind them: the lists are kept for the whole call, by
 * the rows of the two members (2 nholes row pointers). */
typedef struct {
    size_t nholes, nat;
    const ch_expr **const *rows; /* the first member's nholes rows, then the second's */
    size_t *at;                  /* the nat velocities, increasing */
} pair_breaks;

static void pair_breaks_free(pair_breaks *pb)
{
    if (!pb) return;
    free((void *)pb->rows);
    free(pb->at);
    free(pb);
}

/* The breaks between members s and t of one class (NULL and lf->failed
 * when out of memory). */
static const pair_breaks *breaks_of(lforms *lf, ch_map *cache, const term_class *tc,
                                    size_t s, size_t t)
{
    size_t nh = tc[s].nholes;
    const ch_expr **const *hs = lf->holes + tc[s].hole0, **const *ht = lf->holes + tc[t].hole0;
    uint64_t key = mix(0, nh);
    for (size_t h = 0; h < nh; h++) key = mix(mix(key, (uintptr_t)hs[h]), (uintptr_t)ht[h]);
    for (key |= 1;; key += 2) { /* keys are not 0 */
        const pair_breaks *pb = ch_map_get(cache, key);
        if (!pb) break;
        int same = pb->nholes == nh;
        for (size_t h = 0; same && h < nh; h++)
            same = pb->rows[h] == hs[h] && pb->rows[nh + h] == ht[h];
        if (same) return pb;
    }
    pair_breaks *pb = calloc(1, sizeof *pb);
    const ch_expr ***rows = pb ? malloc((2 * nh + 1) * sizeof *rows) : NULL;
    size_t *at = rows ? malloc((lf->n + 1) * sizeof *at) : NULL;
    if (!at || ch_map_put(cache, key, pb)) {
        free(rows);
        free(at);
        free(pb);
        lf->failed = 1;
        return NULL;
    }
    for (size_t h = 0; h < nh; h++) rows[h] = hs[h], rows[nh + h] = ht[h];
    for (size_t j = 0; j < lf->n; j++)
        if (!same_rows(lf, tc, s, t, j)) at[pb->nat++] = j;
    size_t *fit = realloc(at, (pb->nat + 1) * sizeof *at); /* mostly one */
    if (fit) at = fit;
    pb->nholes = nh;
    pb->rows = (const ch_expr **const *)rows;
    pb->at = at;
    return pb;
}

/* A momentum's classes as the derivatives walk them: its items (the terms
 * alone and the first member of each class, in term order), each class's
 * members in order, and the breaks of its runs by velocity: brk[bstart[j]
 * .. bstart[j + 1]) are (item, q) in item and q order, a run of that item's
 * class ending at its member q at velocity j. */
typedef struct {
    size_t nitems, *item, *off, *len, *order;
    size_t *bstart, *brk_item, *brk_pos;
} class_runs;

static void runs_free(class_runs *r)
{
    free(r->item);
    free(r->off);
    free(r->len);
    free(r->order);
    free(r->bstart);
    free(r->brk_item);
    free(r->brk_pos);
    memset(r, 0, sizeof *r);
}

/* -1 when out of memory (lf->failed set). */
static int runs_init(lforms *lf, ch_map *cache, const ch_expr *p, const term_class *tc,
                     class_runs *r)
{
    size_t T = p->n, n = lf->n, nb = 0;
    memset(r, 0, sizeof *r);
    r->item = malloc((T + 1) * sizeof *r->item);
    r->off = malloc((T + 1) * sizeof *r->off);
    r->len = malloc((T + 1) * sizeof *r->len);
    r->order = malloc((T + 1) * sizeof *r->order);
    r->bstart = calloc(n + 1, sizeof *r->bstart);
    const pair_breaks **pbs = malloc((T + 1) * sizeof *pbs);
    int ok = r->item && r->off && r->len && r->order && r->bstart && pbs;
    for (size_t t = 0, m = 0; ok && t < T; t++) {
        if (tc[t].cls >= 0 && (size_t)tc[t].cls != t) continue;
        size_t k = r->nitems++;
        r->item[k] = t;
        r->off[k] = m;
        r->len[k] = 0;
        for (int x = tc[t].cls < 0 ? -1 : (int)t; ok && x >= 0; x = tc[x].next, m++) {
            r->order[m] = (size_t)x;
            if (r->len[k]++ == 0) continue; /* the first member: no pair before it */
            const pair_breaks *pb = pbs[m] = breaks_of(lf, cache, tc, r->order[m - 1], (size_t)x);
            if (!pb) {
                ok = 0;
                break;
            }
            nb += pb->nat;
            for (size_t a = 0; a < pb->nat; a++) r->bstart[pb->at[a] + 1]++;
        }
    }
    if (ok) {
        r->brk_item = malloc((nb + 1) * sizeof *r->brk_item);
        r->brk_pos = malloc((nb + 1) * sizeof *r->brk_pos);
        ok = r->brk_item && r->brk_pos;
    }
    if (ok) {
        for (size_t j = 0; j < n; j++) r->bstart[j + 1] += r->bstart[j];
        size_t *fill = malloc((n + 1) * sizeof *fill);
        ok = fill != NULL;
        for (size_t j = 0; ok && j < n; j++) fill[j] = r->bstart[j];
        for (size_t k = 0; ok && k < r->nitems; k++)
            for (size_t q = 1; q < r->len[k]; q++) {
                const pair_breaks *pb = pbs[r->off[k] + q];
                for (size_t a = 0; a < pb->nat; a++) {
                    size_t at = fill[pb->at[a]]++;
                    r->brk_item[at] = k;
                    r->brk_pos[at] = q - 1;
                }
            }
        free(fill);
    }
    free(pbs);
    if (!ok) {
        runs_free(r);
        lf->failed = 1;
        return -1;
    }
    return 0;
}

/* d p / d syms[j] for a momentum p classified into tc (its runs in r),
 * through the dmode of one entry (x: its top level). Each run of a class
 * costs one entry lookup, and the runs come from the breaks at j: the
 * entry costs O(items + runs), where walking every member comparing rows
 * made the mass matrix O(n^3) (the 200-trailer's 0.16 G instructions,
 * x7.2 from 100 trailers). */
static const ch_expr *diff_by_class(lforms *lf, const ch_expr *p, const term_class *tc,
                                    const class_runs *cr, size_t j, const dmode *x)
{
    ch_ctx *ctx = lf->ctx;
    size_t T = p->n;
    entries en = {malloc(T * sizeof *en.d), malloc(T * sizeof *en.c),
                  malloc(T * sizeof *en.rep), 0, {0}};
    const ch_expr *r = NULL;
    if (!en.d || !en.c || !en.rep) {
        ch_ctx_fail(ctx, CH_ERR_MEMORY, "out of memory");
        goto out;
    }
    dmode y = *x;
    y.shallow--; /* the terms are one level below p */
    size_t b = cr->bstart[j], be = cr->bstart[j + 1];
    for (size_t k = 0; k < cr->nitems; k++) {
        size_t t = cr->item[k];
        if (tc[t].cls < 0) { /* alone */
            const ch_expr *e = p->pair[t].e;
            if (!depends(e, x)) continue;
            if (!(en.d[en.ne] = deriv(ctx, e, &y))) goto out;
            fmpq_init(en.c + en.ne);
            fmpq_set(en.c + en.ne++, p->pair[t].c);
            continue;
        }
        const size_t *mem = cr->order + cr->off[k];
        size_t s = 0;
        for (; b < be && cr->brk_item[b] == k; b++) {
            if (add_run(lf, p, tc, j, &y, &en, mem[s], mem[cr->brk_pos[b]])) goto out;
            s = cr->brk_pos[b] + 1;
        }
        if (add_run(lf, p, tc, j, &y, &en, mem[s], mem[cr->len[k] - 1])) goto out;
    }
    r = ch_lincomb(ctx, NULL, en.ne, en.c, en.d);
out:
    for (size_t k = 0; k < en.ne; k++) fmpq_clear(en.c + k);
    ch_map_free(&en.at);
    free(en.d);
    free(en.c);
    free(en.rep);
    return r;
}

static term_class *tc_new(size_t n)
{
    term_class *tc = malloc((n + 1) * sizeof *tc);
    for (size_t t = 0; tc && t < n; t++) fmpq_init(tc[t].cum);
    return tc;
}

static void tc_free(term_class *tc, size_t n)
{
    for (size_t t = 0; tc && t < n; t++) fmpq_clear(tc[t].cum);
    free(tc);
}

int ch_diff_symmetric(ch_ctx *ctx, size_t n, const ch_expr *const *e,
                      const ch_expr *const *syms, const ch_expr **out)
{
    for (size_t j = 0; j < n; j++)
        if (!syms[j] || syms[j]->kind != CH_SYM) {
            ch_ctx_fail(ctx, CH_ERR_MATH, "differentiation by a non-symbol");
            return -1;
        }
    ch_map local, prod, near;
    ch_map_init(&prod);
    ch_map_init(&near);
    lforms lf;
    memset(&lf, 0, sizeof lf);
    lf.ctx = ctx;
    lf.n = n;
    lf.syms = syms;
    ch_map_init(&lf.forms);
    int rc = n > 1 && ch_sym_finder_init(ctx, &lf.vel, n, syms) ? -1 : 0;
    term_class *tc = NULL;
    size_t ntc = 0;
    class_runs cr = {0};
    ch_map breaks; /* pair_breaks by the rows of two consecutive members */
    ch_map_init(&breaks);
    for (size_t i = 0; i < n && !rc; i++) {
        int by_class = n > 1 && e[i] && e[i]->kind == CH_ADD && e[i]->n >= CLASS_MIN_TERMS;
        if (by_class) {
            tc_free(tc, ntc);
            ntc = e[i]->n;
            runs_free(&cr);
            if (!(tc = tc_new(ntc)) || classify(&lf, e[i], tc)
                || runs_init(&lf, &breaks, e[i], tc, &cr)) {
                if (!ch_ctx_error(ctx)->code) ch_ctx_fail(ctx, CH_ERR_MEMORY, "out of memory");
                rc = -1;
                break;
            }
        }
        for (size_t j = i; j < n; j++) {
            ch_map_init(&local);
            dmode d = {syms[j], NULL, syms[j]->symset, ch_ctx_memo(ctx, CH_MEMO_DIFF),
                       DIFF_ONCE_LEVELS, &local, &prod, n > 1 ? &near : NULL};
            const ch_expr *r = !e[i] ? NULL
                               : !depends(e[i], &d) ? ch_zero(ctx)
                               : by_class ? diff_by_class(&lf, e[i], tc, &cr, j, &d)
                                          : deriv(ctx, e[i], &d);
            ch_map_free(&local);
            out[i * n + j] = out[j * n + i] = r;
            if (!r) {
                rc = -1;
                break;
            }
        }
    }
    tc_free(tc, ntc);
    runs_free(&cr);
    for (size_t k = 0; k < breaks.cap; k++)
        if (breaks.slot[k].key) pair_breaks_free(breaks.slot[k].val);
    ch_map_free(&breaks);
    for (size_t k = 0; k < lf.forms.cap; k++) /* the rows */
        if (lf.forms.slot[k].key && lf.forms.slot[k].val != (void *)NOT_FORM)
            free(lf.forms.slot[k].val);
    free(lf.holes);
    ch_map_free(&lf.forms);
    ch_map_free(&prod);
    ch_map_free(&near);
    return rc;
}

const ch_expr *ch_diff_t(ch_ctx *ctx, const ch_expr *e)
{
    dmode d = {NULL, NULL, NULL, ch_ctx_memo(ctx, CH_MEMO_DIFF_T), 0, NULL, NULL, NULL};
    return deriv(ctx, e, &d);
}

int ch_diff_dir_init(ch_ctx *ctx, ch_diff_dir *v, size_t n,
                     const ch_expr *const *syms, const ch_expr *const *dirs)
{
    v->set = ch_symset_empty(ctx);
    v->dir = ch_ctx_new_map(ctx);
    v->memo = ch_ctx_new_map(ctx);
    if (!v->dir || !v->memo) return -1;
    for (size_t i = 0; i < n; i++) {
        if (!syms[i] || !dirs[i] || syms[i]->kind != CH_SYM) {
            ch_ctx_fail(ctx, CH_ERR_MATH, "differentiation by a non-symbol");
            return -1;
        }
        if (ch_is_zero(dirs[i])) continue;
        if (!(v->set = ch_symset_union(ctx, v->set, syms[i]->symset))) return -1;
        if (ch_map_put(v->dir, (uint64_t)ch_sym_of(syms[i])->sid + 1, (void *)dirs[i])) {
            ch_ctx_fail(ctx, CH_ERR_MEMORY, "out of memory");
            return -1;
        }
    }
    return 0;
}

const ch_expr *ch_diff_dir_apply(ch_ctx *ctx, ch_diff_dir *v, const ch_expr *e)
{
    if (!v->memo) return NULL;
    dmode d = {NULL, v->dir, v->set, v->memo, 0, NULL, NULL, NULL};
    return deriv(ctx, e, &d);
}
