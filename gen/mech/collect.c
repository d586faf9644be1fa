/* collect.c — momenta, Euler–Lagrange terms and energy of a Lagrangian
 * quadratic in the velocities, by velocity monomials (collect.h). */
#include "mech/collect.h"

#include <stdlib.h>

#include "core/diff.h"
#include "core/matrix.h"
#include "core/subst.h"

/* Is e a polynomial in the symbols of vel? memo: id -> 1 yes, 2 no. A
 * failed memo insertion only costs a later visit. */
static int poly_in(const ch_expr *e, const ch_symset *vel, ch_map *memo)
{
    if (!ch_symset_meets(e->symset, vel) || e->kind == CH_SYM) return 1;
    uintptr_t v = (uintptr_t)ch_map_get(memo, e->id);
    if (v) return v == 1;
    int ok = e->kind == CH_ADD || e->kind == CH_MUL;
    for (uint32_t i = 0; ok && i < e->n; i++) {
        const ch_pair *p = &e->pair[i];
        ok = poly_in(p->e, vel, memo);
        /* a factor holding velocities needs a positive integer power */
        if (ok && e->kind == CH_MUL && ch_symset_meets(p->e->symset, vel))
            ok = fmpz_is_one(fmpq_denref(p->c)) && fmpq_sgn(p->c) > 0;
    }
    ch_map_put(memo, e->id, (void *)(uintptr_t)(ok ? 1 : 2));
    return ok;
}

/* Coordinates held by the entries of M beyond 4 n^2 (index_coords) */
#define COLLECT_MAX_WORK 100000

typedef struct {
    ch_ctx *ctx;
    const ch_model *m;
    size_t n;
    const ch_expr *const *M; /* n*n, as displayed */
    const ch_expr **b;       /* n: p at zero velocities */
    const ch_expr *c;        /* L at zero velocities */
    int *coord;              /* symbol's bit -> coordinate index, n for t, else -1 */
    size_t nbits;            /* coord's length: past the bits of q and t */
    size_t *found;           /* n + 1: coords_of's result */
    /* which entries contain q_a: pairs j*n+k (j <= k) of M, rows j of b,
     * a's own from start[a] to start[a+1] */
    size_t *m_start, *b_start;
    uint64_t *m_keys, *b_rows;
} work;

/* The coordinates q_a (a < n) and t (a == n) in e, into w->found. */
static size_t coords_of(const work *w, const ch_expr *e)
{
    size_t len = 0;
    const ch_symset *s = e->symset;
    for (size_t i = 0; i < s->n; i++)
        for (uint64_t bits = s->w[i].bits; bits; bits &= bits - 1) {
            size_t bit = 64 * (size_t)s->w[i].at + ch_lowest_bit(bits);
            int a = bit < w->nbits ? w->coord[bit] : -1;
            if (a >= 0) w->found[len++] = (size_t)a;
        }
    return len;
}

/* d e / d q_a (a == n: by t) */
static const ch_expr *dq(const work *w, const ch_expr *e, size_t a)
{
    return ch_diff(w->ctx, e, a < w->n ? w->m->q[a] : w->m->t);
}

static const ch_expr *Mat(const work *w, size_t j, size_t k)
{
    return w->M[j * w->n + k];
}

/* The inverted indices m_keys / b_rows (CSR by coordinate): 0, 1 when
 * M's entries hold too many coordinates (see collect), -1 when out of
 * memory. */
static int index_coords(work *w)
{
    size_t n = w->n;
    w->m_start = calloc(n + 2, sizeof *w->m_start);
    w->b_start = calloc(n + 2, sizeof *w->b_start);
    if (!w->m_start || !w->b_start) return -1;
    for (int pass = 0; pass < 2; pass++) {
        if (pass) {
            for (size_t a = 0; a <= n; a++) {
                w->m_start[a + 1] += w->m_start[a];
                w->b_start[a + 1] += w->b_start[a];
            }
            /* the G_ijk tried are about 3 times the coordinates the
             * entries of M hold in all: O(n^2) for chains and trailers
             * (two each), O(n^3) for a mass matrix whose entries all
             * depend on every coordinate, where a large model is shown
             * as derived instead */
            if (w->m_start[n + 1] > COLLECT_MAX_WORK + 4 * n * n) return 1;
            w->m_keys = malloc((w->m_start[n + 1] + 1) * sizeof *w->m_keys);
            w->b_rows = malloc((w->b_start[n + 1] + 1) * sizeof *w->b_rows);
            if (!w->m_keys || !w->b_rows) return -1;
        }
        size_t *mfill = pass ? calloc(n + 1, sizeof *mfill) : NULL;
        size_t *bfill = pass ? calloc(n + 1, sizeof *bfill) : NULL;
        if (pass && (!mfill || !bfill)) {
            free(mfill);
            free(bfill);
            return -1;
        }
        for (size_t j = 0; j < n; j++) {
            for (size_t k = j; k < n; k++)
                for (size_t f = 0, len = coords_of(w, Mat(w, j, k)); f < len; f++) {
                    size_t a = w->found[f];
                    if (!pass) w->m_start[a + 1]++;
                    else w->m_keys[w->m_start[a] + mfill[a]++] = j * n + k;
                }
            for (size_t f = 0, len = coords_of(w, w->b[j]); f < len; f++) {
                size_t a = w->found[f];
                if (!pass) w->b_start[a + 1]++;
                else w->b_rows[w->b_start[a] + bfill[a]++] = j;
            }
        }
        free(mfill);
        free(bfill);
    }
    return 0;
}

/* Sorts keys and drops repeats; returns the new count. */
static size_t unique(uint64_t *x, size_t len)
{
    ch_sort_u64(x, len);
    size_t out = 0;
    for (size_t i = 0; i < len; i++)
        if (!out || x[out - 1] != x[i]) x[out++] = x[i];
    return out;
}

/* A growable list of terms. */
typedef struct {
    const ch_expr **t;
    size_t n, cap;
} terms;

static int push(ch_ctx *ctx, terms *l, const ch_expr *e)
{
    if (!e) return -1;
    if (ch_is_zero(e)) return 0;
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 16;
        const ch_expr **t = realloc(l->t, cap * sizeof *t);
        if (!t) {
            ch_ctx_fail(ctx, CH_ERR_MEMORY, "out of memory");
            return -1;
        }
        l->t = t;
        l->cap = cap;
    }
    l->t[l->n++] = e;
    return 0;
}

/* coefficient * q_t_j * q_t_k (k == SIZE_MAX: * q_t_j only) */
static const ch_expr *mono(const work *w, const ch_expr *coef, size_t j, size_t k)
{
    const ch_expr *v = w->m->qt[j];
    if (k != SIZE_MAX) v = ch_mul(w->ctx, v, w->m->qt[k]);
    return coef && v ? ch_mul(w->ctx, coef, v) : NULL;
}

/* G_ijk of collect.h */
static const ch_expr *quad_coef(const work *w, size_t i, size_t j, size_t k)
{
    ch_ctx *ctx = w->ctx;
    if (j == k)
        return ch_sub(ctx, dq(w, Mat(w, i, j), j),
                      ch_mul(ctx, ch_num_frac(ctx, 1, 2), dq(w, Mat(w, j, j), i)));
    const ch_expr *t[3] = {dq(w, Mat(w, i, j), k), dq(w, Mat(w, i, k), j),
                           ch_neg(ctx, dq(w, Mat(w, j, k), i))};
    return ch_add_n(ctx, 3, t);
}

static const ch_expr *euler_lagrange(const work *w, size_t i, uint64_t **keys,
                                     size_t *cap)
{
    ch_ctx *ctx = w->ctx;
    size_t n = w->n, len = 0;
    terms l = {0};
    const ch_expr *res = NULL;
    /* the pairs (j, k) whose G_ijk may be nonzero: q_k in M_ij (both
     * orders: d_k M_ij and d_j M_ik), q_i in M_jk */
    size_t need = (w->m_start[i + 1] - w->m_start[i]) + n + 1
                  + (w->b_start[i + 1] - w->b_start[i]) + coords_of(w, w->b[i]);
    for (size_t j = 0; j < n; j++) need += coords_of(w, Mat(w, i, j));
    if (need > *cap) {
        uint64_t *x = realloc(*keys, need * sizeof *x);
        if (!x) goto oom;
        *keys = x;
        *cap = need;
    }
    uint64_t *key = *keys;
    for (size_t j = 0; j < n; j++) {
        const ch_expr *e = Mat(w, i, j);
        if (ch_is_zero(e)) continue;
        if (push(ctx, &l, ch_mul(ctx, e, w->m->qtt[j]))) goto out;
        for (size_t f = 0, nf = coords_of(w, e); f < nf; f++) {
            size_t a = w->found[f];
            if (a < n) key[len++] = a < j ? (uint64_t)a * n + j : (uint64_t)j * n + a;
        }
    }
    for (size_t s = w->m_start[i]; s < w->m_start[i + 1]; s++) key[len++] = w->m_keys[s];
    len = unique(key, len);
    for (size_t s = 0; s < len; s++) {
        size_t j = (size_t)(key[s] / n), k = (size_t)(key[s] % n);
        if (push(ctx, &l, mono(w, quad_coef(w, i, j, k), j, k))) goto out;
    }
    /* the linear terms g_ij: t in M_ij, q_j in b_i, q_i in b_j */
    len = 0;
    for (size_t j = 0; j < n; j++)
        if (ch_has_sym(Mat(w, i, j), w->m->t)) key[len++] = j;
    for (size_t f = 0, nf = coords_of(w, w->b[i]); f < nf; f++)
        if (w->found[f] < n) key[len++] = w->found[f];
    for (size_t s = w->b_start[i]; s < w->b_start[i + 1]; s++) key[len++] = w->b_rows[s];
    len = unique(key, len);
    for (size_t s = 0; s < len; s++) {
        size_t j = (size_t)key[s];
        const ch_expr *t[3] = {dq(w, Mat(w, i, j), n), dq(w, w->b[i], j),
                               ch_neg(ctx, dq(w, w->b[j], i))};
        if (push(ctx, &l, mono(w, ch_add_n(ctx, 3, t), j, SIZE_MAX))) goto out;
    }
    if (push(ctx, &l, dq(w, w->b[i], n))
        || push(ctx, &l, ch_neg(ctx, dq(w, w->c, i))))
        goto out;
    res = ch_add_n(ctx, l.n, l.t);
    goto out;
oom:
    ch_ctx_fail(ctx, CH_ERR_MEMORY, "out of memory");
out:
    free(l.t);
    return res;
}

/* 1 with *out filled, 0 when M is too dense to collect cheaply, -1 on
 * failure (context error set). */
static int collect(work *w, ch_collected *out)
{
    ch_ctx *ctx = w->ctx;
    size_t n = w->n;
    out->p = ch_mat_new(ctx, n, 1);
    out->EL = ch_mat_new(ctx, n, 1);
    if (!out->p || !out->EL) return -1;
    int ix = index_coords(w);
    if (ix < 0) {
        ch_ctx_fail(ctx, CH_ERR_MEMORY, "out of memory");
        return -1;
    }
    if (ix) return 0;
    terms l = {0};
    uint64_t *keys = NULL;
    size_t cap = 0;
    int rc = -1;
    for (size_t i = 0; i < n; i++) {
        l.n = 0;
        for (size_t j = 0; j < n; j++)
            if (!ch_is_zero(Mat(w, i, j))
                && push(ctx, &l, mono(w, Mat(w, i, j), j, SIZE_MAX)))
                goto out;
        if (push(ctx, &l, w->b[i]) || !(out->p[i] = ch_add_n(ctx, l.n, l.t)))
            goto out;
        if (!(out->EL[i] = euler_lagrange(w, i, &keys, &cap))) goto out;
    }
    /* E = q_t^T M q_t / 2 - c */
    l.n = 0;
    const ch_expr *half = ch_num_frac(ctx, 1, 2);
    for (size_t j = 0; j < n; j++)
        for (size_t k = j; k < n; k++) {
            const ch_expr *e = Mat(w, j, k);
            if (ch_is_zero(e)) continue;
            if (push(ctx, &l, mono(w, j == k ? ch_mul(ctx, half, e) : e, j, k)))
                goto out;
        }
    if (push(ctx, &l, ch_neg(ctx, w->c))) goto out;
    rc = (out->energy = ch_add_n(ctx, l.n, l.t)) ? 1 : -1;
out:
    free(l.t);
    free(keys);
    return rc;
}

/* L free of accelerations, a polynomial in the velocities, M free of them:
 * then L is exactly q_t^T M q_t / 2 + b^T q_t + c. (For a smooth L, M
 * free of velocities suffices; the polynomial test keeps out a function
 * like abs(q_t) whose second derivative could simplify to 0 while b, read
 * at q_t = 0, would be wrong or undefined.) */
static int is_quadratic(ch_ctx *ctx, const ch_model *m, const ch_lagrange *L,
                        const ch_symset *vel)
{
    size_t n = m->n;
    const ch_symset *acc = ch_symset_of(ctx, n, m->qtt);
    if (!acc) return -1;
    if (ch_symset_meets(m->lagrangian->symset, acc)) return 0;
    for (size_t i = 0; i < n * n; i++)
        if (ch_symset_meets(L->M[i]->symset, vel)) return 0;
    ch_map memo;
    ch_map_init(&memo);
    int ok = poly_in(m->lagrangian, vel, &memo);
    ch_map_free(&memo);
    return ok;
}

int ch_collect_quadratic(ch_ctx *ctx, const ch_model *m, const ch_lagrange *L,
                         const ch_expr *const *M, ch_collect_tidy tidy,
                         void *arg, ch_collected *out)
{
    size_t n = m->n;
    const ch_symset *vel = ch_symset_of(ctx, n, m->qt);
    if (!vel) return -1;
    int q = is_quadratic(ctx, m, L, vel);
    if (q <= 0) return q;
    work w = {ctx, m, n, M, ch_mat_new(ctx, n, 1), NULL, NULL, ch_sym_of(m->t)->bit + 1,
              NULL, NULL, NULL, NULL, NULL};
    for (size_t a = 0; a < n; a++)
        if (ch_sym_of(m->q[a])->bit >= w.nbits) w.nbits = ch_sym_of(m->q[a])->bit + 1;
    const ch_expr **zero = ch_mat_new(ctx, n, 1);
    if (!w.b || !zero) return -1;
    for (size_t i = 0; i < n; i++) zero[i] = ch_zero(ctx);
    if (ch_subst_many(ctx, n, L->p, w.b, n, m->qt, zero)) return -1;
    for (size_t i = 0; i < n; i++)
        if (!(w.b[i] = tidy(arg, w.b[i]))) return -1;
    w.c = ch_subst(ctx, m->lagrangian, n, m->qt, zero);
    if (!w.c || !(w.c = tidy(arg, w.c))) return -1;
    w.coord = malloc(w.nbits * sizeof *w.coord);
    w.found = malloc((n + 1) * sizeof *w.found);
    if (!w.coord || !w.found) {
        free(w.coord);
        free(w.found);
        ch_ctx_fail(ctx, CH_ERR_MEMORY, "out of memory");
        return -1;
    }
    for (size_t s = 0; s < w.nbits; s++) w.coord[s] = -1;
    for (size_t a = 0; a < n; a++) w.coord[ch_sym_of(m->q[a])->bit] = (int)a;
    w.coord[ch_sym_of(m->t)->bit] = (int)n;
    int rc = collect(&w, out);
    free(w.coord);
    free(w.found);
    free(w.m_start);
    free(w.b_start);
    free(w.m_keys);
    free(w.b_rows);
    return rc;
}
