/* kane.c — the Lagrangian as a weighted sum of squared velocities (see
 * kane.h). The split walks the Lagrangian as the parser built it, where
 * the square of a defined point's velocity is still a power of a sum:
 * sums are split into their terms, products into a constant weight and
 * one factor with velocities, which is either a sum (split in turn) or
 * a square. Anything else with a velocity (a velocity not squared, a
 * weight that depends on q or t, a function of a velocity) is not of
 * the form. */
#include "mech/kane.h"

#include <stdlib.h>

#include "core/diff.h"
#include "core/matrix.h"
#include "mech/lagrange.h"
#include "core/subst.h"

typedef struct {
    ch_ctx *ctx;
    const ch_model *m;
    const ch_expr **mu, **E; /* the squares found (malloc'd) */
    size_t nb, cap;
    /* the velocity-free rest: its terms, summed once at the end (a sum
     * grown term by term interns every partial sum, quadratic in the
     * terms: 3 GB for 20 000) */
    const ch_expr **rest;
    size_t nrest, caprest;
    int bad;                 /* not of the form */
    /* the velocities q', memoized across the calls: asked of every
     * derivative, a fresh search built a set of all n velocities each
     * time, O(n^3) in all (5 of the 200-trailer's 93 G instructions) */
    ch_sym_finder vel;
} splitter;

static int has_vel(splitter *s, const ch_expr *e)
{
    int r = ch_sym_finder_has(s->ctx, &s->vel, e);
    if (r < 0) s->bad = -1;
    return r != 0;
}

static int is_constant(const ch_expr *e)
{
    return !ch_has_sym_kind(e, CH_SYM_TIME) && !ch_has_sym_kind(e, CH_SYM_COORD) &&
           !ch_has_sym_kind(e, CH_SYM_VEL);
}

static void add_square(splitter *s, const ch_expr *mu, const ch_expr *E)
{
    if (s->nb == s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 16;
        const ch_expr **a = realloc(s->mu, cap * sizeof *a), **b = a ? realloc(s->E, cap * sizeof *b) : NULL;
        if (a) s->mu = a;
        if (!b) {
            s->bad = -1;
            return;
        }
        s->E = b;
        s->cap = cap;
    }
    s->mu[s->nb] = mu;
    s->E[s->nb++] = E;
}

static void add_rest(splitter *s, const ch_expr *e)
{
    if (!e) {
        s->bad = -1;
        return;
    }
    if (s->nrest == s->caprest) {
        size_t cap = s->caprest ? 2 * s->caprest : 16;
        const ch_expr **a = realloc(s->rest, cap * sizeof *a);
        if (!a) {
            s->bad = -1;
            return;
        }
        s->rest = a, s->caprest = cap;
    }
    s->rest[s->nrest++] = e;
}

/* coef * e split into squares and the rest (coef free of velocities). */
static void split(splitter *s, const ch_expr *e, const ch_expr *coef)
{
    ch_ctx *ctx = s->ctx;
    if (s->bad || !e || !coef) {
        if (!s->bad) s->bad = -1;
        return;
    }
    if (!has_vel(s, e)) {
        add_rest(s, ch_mul(ctx, coef, e));
        return;
    }
    if (e->kind == CH_ADD) {
        add_rest(s, ch_mul(ctx, coef, ch_num_q(ctx, e->num)));
        for (uint32_t i = 0; i < e->n && !s->bad; i++)
            split(s, e->pair[i].e, ch_mul(ctx, coef, ch_num_q(ctx, e->pair[i].c)));
        return;
    }
    if (e->kind != CH_MUL) {
        s->bad = 1; /* a velocity alone, or inside a function */
        return;
    }
    const ch_expr *c = ch_mul(ctx, coef, ch_num_q(ctx, e->num)), *vf = NULL;
    const fmpq *ex = NULL;
    for (uint32_t i = 0; i < e->n; i++) {
        const ch_expr *b = e->pair[i].e;
        if (!has_vel(s, b)) {
            c = ch_mul(ctx, c, ch_pow_q(ctx, b, e->pair[i].c));
        } else if (vf) {
            s->bad = 1; /* a product of two velocity factors */
            return;
        } else {
            vf = b, ex = e->pair[i].c;
        }
    }
    if (fmpq_is_one(ex)) {
        split(s, vf, c);
    } else if (fmpz_equal_si(fmpq_numref(ex), 2) && fmpz_is_one(fmpq_denref(ex)) && c &&
               is_constant(c)) {
        add_square(s, ch_scale_si(ctx, 2, c), vf);
    } else {
        s->bad = 1;
    }
}

int ch_kane_split(ch_ctx *ctx, const ch_model *m, const ch_expr *const *Q, ch_kane *out)
{
    size_t n = m->n;
    if (!m->lagrangian) return 1;
    splitter s = {.ctx = ctx, .m = m};
    if (ch_sym_finder_init(ctx, &s.vel, n, m->qt)) return -1;
    split(&s, m->lagrangian, ch_one(ctx));
    const ch_expr *l0 = s.bad ? NULL : ch_add_n(ctx, s.nrest, s.rest);
    free(s.rest);
    if (!s.bad && !l0) s.bad = -1;
    int rc = s.bad ? s.bad : s.nb == 0 ? 1 : 0;
    const ch_expr **zero = rc ? NULL : ch_mat_new(ctx, n, 1);
    ch_kane k = {n, s.nb, NULL, NULL, NULL, NULL, NULL, NULL, l0};
    if (!rc) {
        k.mu = ch_mat_new(ctx, s.nb, 1), k.E = ch_mat_new(ctx, s.nb, 1);
        k.a = ch_mat_new(ctx, s.nb, n), k.acc = ch_mat_new(ctx, s.nb, 1);
        k.g = ch_mat_new(ctx, s.nb, n), k.F = ch_mat_new(ctx, n, 1);
        if (!zero || !k.mu || !k.E || !k.a || !k.acc || !k.g || !k.F) rc = -1;
    }
    ch_diff_dir drift;
    if (!rc) {
        for (size_t j = 0; j < n; j++) zero[j] = ch_zero(ctx);
        if (ch_lagrange_drift(ctx, m, &drift)) rc = -1;
    }
    for (size_t b = 0; !rc && b < s.nb; b++) {
        const ch_expr *E = s.E[b];
        k.mu[b] = s.mu[b], k.E[b] = E;
        /* linear and homogeneous: a velocity-free gradient, zero at q' = 0 */
        const ch_expr *at0 = ch_subst(ctx, E, n, m->qt, zero);
        if (!at0) rc = -1;
        else if (!ch_is_zero(at0)) rc = 1;
        for (size_t j = 0; !rc && j < n; j++) {
            const ch_expr *a = ch_diff(ctx, E, m->qt[j]);
            if (!a) rc = -1;
            else if (has_vel(&s, a)) rc = s.bad < 0 ? -1 : 1;
            k.a[b * n + j] = a;
        }
        k.acc[b] = rc ? NULL : ch_diff_dir_apply(ctx, &drift, E);
        for (size_t j = 0; !rc && j < n; j++)
            k.g[b * n + j] = ch_sub(ctx, ch_diff_dir_apply(ctx, &drift, k.a[b * n + j]),
                                    ch_diff(ctx, E, m->q[j]));
    }
    for (size_t j = 0; !rc && j < n; j++)
        k.F[j] = ch_add(ctx, Q[j] ? Q[j] : ch_zero(ctx), ch_diff(ctx, l0, m->q[j]));
    if (!rc && ch_ctx_exhausted(ctx)) rc = -1;
    free(s.mu);
    free(s.E);
    if (rc == 0) *out = k;
    return rc;
}

const ch_expr *ch_kane_energy(ch_ctx *ctx, const ch_kane *kn)
{
    const ch_expr **t = malloc((kn->nb + 1) * sizeof *t);
    if (!t) {
        ch_ctx_fail(ctx, CH_ERR_MEMORY, "out of memory");
        return NULL;
    }
    const ch_expr *half = ch_num_frac(ctx, 1, 2);
    for (size_t b = 0; b < kn->nb; b++)
        t[b] = ch_mul(ctx, ch_mul(ctx, half, kn->mu[b]), ch_pow_si(ctx, kn->E[b], 2));
    t[kn->nb] = ch_neg(ctx, kn->L0);
    const ch_expr *en = ch_add_n(ctx, kn->nb + 1, t);
    free(t);
    return en;
}
