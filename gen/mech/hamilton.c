/* hamilton.c — y*, H* and the Poincaré–Hamilton right-hand sides
 * (THEORY §5, seed 002 eq. 4.10–4.17 with the corrected "+" sign).
 *
 * Everything is first built in the reduced variables (t, q, q_t_r) of
 * reduce.c and then moved to phase space (t, q, y) by one substitution,
 * q_t_r -> eta(t, q, y) and q_t_dep -> alpha(t, q, eta). The Legendre map
 * is inverted symbolically only when L* is quadratic in q_t_r: then
 * y* = K q_t + b* with K free of the velocities and eta = K^-1 (y - b*)
 * is exact. When alpha is nonlinear in the velocities, B contains
 * q_tt_r = d/dt eta_r, which is linear in y_t; that linear system is
 * solved here so that every right side is a function of (t, q, y) alone.
 * A result that still contained a velocity or acceleration symbol would be
 * wrong in phase space, so that case ends with exists = 0 and a reason
 * instead. */
#include "mech/hamilton.h"

#include <stdarg.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "core/diff.h"
#include "core/matrix.h"
#include "core/simplify.h"
#include "core/subst.h"

/* Points at which the rank of K is sampled (as in lagrange.c). */
#define RANK_POINTS 6
/* Manifold points for the degeneracy test of an implicit-alpha K. */
#define MANIFOLD_POINTS 6
/* Expressions up to this DAG size are put in normal form; larger ones
 * would expand too much and are kept as built. */
#define TIDY_MAX_NODES 400
/* Tree size (as printed) beyond which the normal form is not tried; the
 * same bound as the display tidying of derive.c. */
#define TIDY_MAX_TREE 2000

typedef struct {
    ch_ctx *ctx;
    const ch_reduced *r;
    const ch_model *model;
    size_t n, k, m;
    const ch_expr **vi;  /* m independent velocity symbols */
    const ch_expr **vd;  /* k dependent velocity symbols */
    const ch_expr **qd;  /* k dependent coordinate symbols */
    const ch_expr **ai;  /* m independent acceleration symbols */
    /* phase substitution: vi -> eta, and vd -> qt_dep when alpha is
     * explicit */
    const ch_expr **from, **to;
    size_t nsub;
    const ch_expr **b;   /* m: b* = y* at q_t_r = 0 */
    ch_hamilton *h;
    /* memoized "contains a velocity / an acceleration" over every result
     * (the k entries of qt_dep share most of their DAG) */
    ch_sym_finder vel, acc, vdep;
    ch_diff_dir drift; /* d/dt + q_t_j d/dq_j in phase space (eta_drift) */
    int drift_ready;
} hwork;

/* Above this many dependent velocities eta_drift differentiates along one
 * field instead of by every coordinate. Small models keep the sum of
 * partial derivatives, the form their printed right sides have. */
#define DRIFT_FIELD_MIN_K 8

/* Ends the derivation without H*: returns 0 (not an error). */
static int unavailable(hwork *w, const char *fmt, ...)
{
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    w->h->exists = 0;
    w->h->reason = ch_ctx_strdup(w->ctx, buf);
    w->h->eta = w->h->qt = w->h->qt_dep = w->h->yt = NULL;
    w->h->H = NULL;
    return 0;
}

/* A context failure as a positioned error (at the lagrangian, the
 * statement every derived quantity comes from). */
static int failed(hwork *w, ch_error *err)
{
    return ch_ctx_report(w->ctx, err, w->model->file, w->model->lagrangian_pos.line,
                         w->model->lagrangian_pos.col, "Hamiltonian form: ", 0);
}

/* The normal form when it is cheap and not larger; a failed simplify
 * leaves the raw expression (and no error behind). Both size tests cost
 * O(cap) however large e is: written out as a tree, a DAG of a few hundred
 * nodes can have millions of nodes, and its normal form then either runs
 * into simplify's term limits or comes out larger than the DAG (the
 * n-trailer's Legendre data), after milliseconds of work per entry. */
static const ch_expr *tidy(ch_ctx *ctx, const ch_expr *e)
{
    if (!e || ch_ctx_error(ctx)->code != CH_OK) return e;
    size_t size = ch_dag_size_capped(e, TIDY_MAX_NODES);
    if (size > TIDY_MAX_NODES || ch_tree_size(ctx, e, TIDY_MAX_TREE + 1) > TIDY_MAX_TREE)
        return e;
    const ch_expr *s = ch_simplify(ctx, e);
    if (!s) {
        ch_ctx_clear_error(ctx);
        return e;
    }
    return ch_dag_size_capped(s, size) <= size ? s : e;
}

static int tidy_all(ch_ctx *ctx, size_t n, const ch_expr **v)
{
    for (size_t i = 0; i < n; i++)
        if (!(v[i] = tidy(ctx, v[i]))) return -1;
    return 0;
}

static const ch_expr *phase(hwork *w, const ch_expr *e)
{
    return ch_subst(w->ctx, e, w->nsub, w->from, w->to);
}

/* dF/dq_t_s along the constraint: the dependent velocity symbols (which
 * stand for alpha when it is implicit) contribute through d alpha/dq_t_s. */
static const ch_expr *dvel(hwork *w, const ch_expr *F, size_t s)
{
    const ch_expr **t = ch_mat_new(w->ctx, w->k + 1, 1);
    if (!t) return NULL;
    t[0] = ch_diff(w->ctx, F, w->vi[s]);
    /* F free of the dependent velocities (alpha substituted): the chain
     * terms are 0 */
    if (ch_sym_finder_has(w->ctx, &w->vdep, F) == 0) return t[0];
    for (size_t nu = 0; nu < w->k; nu++)
        t[1 + nu] = ch_mul(w->ctx, ch_diff(w->ctx, F, w->vd[nu]),
                           w->r->da_dv[nu * w->m + s]);
    return ch_add_n(w->ctx, w->k + 1, t);
}

static int init_work(hwork *w, ch_ctx *ctx, const ch_reduced *r, ch_hamilton *h)
{
    const ch_manifold *mf = r->mf;
    w->ctx = ctx;
    w->r = r;
    w->model = mf->model;
    w->n = r->n;
    w->k = r->k;
    w->m = r->m;
    w->h = h;
    w->vi = ch_mat_new(ctx, w->m, 1);
    w->ai = ch_mat_new(ctx, w->m, 1);
    w->vd = ch_mat_new(ctx, w->k, 1);
    w->qd = ch_mat_new(ctx, w->k, 1);
    w->from = ch_mat_new(ctx, w->m + w->k, 1);
    w->to = ch_mat_new(ctx, w->m + w->k, 1);
    if (!w->vi || !w->ai || !w->vd || !w->qd || !w->from || !w->to) return -1;
    for (size_t i = 0; i < w->m; i++) {
        w->vi[i] = w->model->qt[mf->indep[i]];
        w->ai[i] = w->model->qtt[mf->indep[i]];
    }
    for (size_t nu = 0; nu < w->k; nu++) {
        w->vd[nu] = w->model->qt[mf->dep[nu]];
        w->qd[nu] = w->model->q[mf->dep[nu]];
    }
    if (ch_sym_finder_init_kind(ctx, &w->vel, CH_SYM_VEL)
        || ch_sym_finder_init_kind(ctx, &w->acc, CH_SYM_ACC)
        || ch_sym_finder_init(ctx, &w->vdep, w->k, w->vd))
        return -1;
    return 0;
}

/* e contains a velocity (acc 0) or acceleration (acc 1) symbol; a failed
 * search (out of memory) counts as yes, which only ends in "unavailable". */
static int has_kind(hwork *w, const ch_expr *e, int acc)
{
    return ch_sym_finder_has(w->ctx, acc ? &w->acc : &w->vel, e) != 0;
}

/* y_<q> for each independent coordinate (SPEC §3). The parser reserves
 * these names, so a clash means a symbol made outside a model. */
static int make_momenta(hwork *w, ch_error *err)
{
    w->h->y = ch_mat_new(w->ctx, w->m, 1);
    if (!w->h->y) return failed(w, err);
    for (size_t r = 0; r < w->m; r++) {
        const ch_sym *q = ch_sym_of(w->model->q[w->r->mf->indep[r]]);
        char name[512];
        snprintf(name, sizeof name, "y_%s", q->name);
        const ch_expr *old = ch_symbol_find(w->ctx, name);
        if (old && ch_sym_of(old)->kind != CH_SYM_OTHER)
            return ch_error_set(err, CH_ERR_MODEL, w->model->file, 0, 0,
                                "the name '%s' of the Hamiltonian momentum of "
                                "coordinate '%s' is taken by another symbol",
                                name, q->name);
        w->h->y[r] = ch_symbol(w->ctx, name, CH_SYM_OTHER, NULL, 0, (int)r);
        if (!w->h->y[r]) return failed(w, err);
    }
    return 0;
}

/* K_rs = d y*_r / dq_t_s, built symmetric. */
static int hessian(hwork *w)
{
    size_t m = w->m;
    const ch_expr **K = ch_mat_new(w->ctx, m, m);
    if (!K) return -1;
    for (size_t r = 0; r < m; r++)
        for (size_t s = r; s < m; s++) {
            K[r * m + s] = tidy(w->ctx, dvel(w, w->r->y_star[r], s));
            if (!K[r * m + s]) return -1;
            K[s * m + r] = K[r * m + s];
        }
    w->h->K = K;
    return 0;
}

static int mentions_any(const ch_expr *e, size_t n, const ch_expr *const *syms)
{
    for (size_t i = 0; i < n; i++)
        if (ch_has_sym(e, syms[i])) return 1;
    return 0;
}

/* Determinant by minors (m <= CH_HAMILTON_MAX_M: at most 24 products). */
static const ch_expr *det(ch_ctx *ctx, size_t m, const ch_expr *const *A)
{
    if (m == 1) return A[0];
    const ch_expr *terms[CH_HAMILTON_MAX_M];
    const ch_expr *minor[(CH_HAMILTON_MAX_M - 1) * (CH_HAMILTON_MAX_M - 1)];
    for (size_t c = 0; c < m; c++) {
        size_t idx = 0;
        for (size_t i = 1; i < m; i++)
            for (size_t j = 0; j < m; j++)
                if (j != c) minor[idx++] = A[i * m + j];
        const ch_expr *t = ch_mul(ctx, A[c], det(ctx, m - 1, minor));
        terms[c] = c % 2 ? ch_neg(ctx, t) : t;
    }
    return ch_add_n(ctx, m, terms);
}

/* Is K identically singular? With explicit alpha every point is on the
 * manifold and the rank is sampled. With implicit alpha K is only
 * meaningful on the manifold, and a K that is not finite at any generic
 * point (sqrt of a negative, ...) needs the manifold's points too: there
 * the determinant goes through the zero test. Undecided is "no". */
static int degenerate(hwork *w)
{
    size_t m = w->m;
    if (w->r->explicit_alpha || m > CH_HAMILTON_MAX_M) {
        /* a deficiency only when shown in balls (ch_full_rank): the scale
         * of K's entries decides nothing */
        ch_rank_info ri;
        int f = ch_full_rank(w->ctx, m, m, w->h->K, NULL, RANK_POINTS, &ri);
        if (f < 0) return -1;
        if (f) return 0;
        if (ri.deficient || m > CH_HAMILTON_MAX_M) return ri.deficient;
    }
    const ch_expr *d = det(w->ctx, m, w->h->K);
    if (!d) return -1;
    ch_zero_result z = ch_zero_test(w->ctx, d, ch_manifold_sample,
                                    (void *)w->r->mf, MANIFOLD_POINTS);
    return z.verdict == CH_ZERO_YES;
}

/* With implicit alpha the dependent velocity symbols stand for a function
 * that has no closed form; any ingredient containing them keeps H* and the
 * right sides out of (t, q, y). */
static int implicit_blocks(hwork *w)
{
    const ch_reduced *r = w->r;
    size_t k = w->k, m = w->m;
    if (r->explicit_alpha || k == 0) return 0;
    if (mentions_any(r->L_star, k, w->vd)) return 1;
    for (size_t i = 0; i < m; i++)
        if (mentions_any(r->y_star[i], k, w->vd) ||
            mentions_any(r->Q_star[i], k, w->vd))
            return 1;
    for (size_t i = 0; i < k * m; i++)
        if (mentions_any(r->B[i], k, w->vd) || mentions_any(r->da_dv[i], k, w->vd))
            return 1;
    for (size_t nu = 0; nu < k; nu++)
        if (mentions_any(r->p_star[nu], k, w->vd)) return 1;
    return 0;
}

/* b* = y*(q_t_r = 0); when that point is singular for the formula (0/0),
 * y* - K q_t, which is the same affine constant, is normalised instead.
 * NULL with *bad = 1 when neither gives a velocity-free b*. */
static const ch_expr **bias(hwork *w, int *bad)
{
    ch_ctx *ctx = w->ctx;
    size_t m = w->m;
    const ch_expr **zero = ch_mat_new(ctx, m, 1), **b = ch_mat_new(ctx, m, 1);
    const ch_expr **terms = ch_mat_new(ctx, m + 1, 1);
    if (!zero || !b || !terms) return NULL;
    for (size_t s = 0; s < m; s++) zero[s] = ch_zero(ctx);
    *bad = 0;
    if (ch_subst_many(ctx, m, w->r->y_star, b, m, w->vi, zero) == 0) return b;
    if (ch_ctx_error(ctx)->code != CH_ERR_MATH) return NULL;
    ch_ctx_clear_error(ctx);
    for (size_t r = 0; r < m; r++) {
        terms[0] = w->r->y_star[r];
        for (size_t s = 0; s < m; s++)
            terms[1 + s] = ch_neg(ctx, ch_mul(ctx, w->h->K[r * m + s], w->vi[s]));
        const ch_expr *raw = ch_add_n(ctx, m + 1, terms);
        if (!raw) return NULL;
        b[r] = ch_simplify(ctx, raw);
        if (!b[r]) {
            ch_ctx_clear_error(ctx);
            b[r] = raw;
        }
        if (has_kind(w, b[r], 0)) {
            *bad = 1;
            return NULL;
        }
    }
    return b;
}

/* ch_mat_solve with pivots that do not vanish at the model's initial
 * state (the momenta y there at a generic point). */
static int solve_at(hwork *w, size_t k, const ch_expr *const *A, const ch_expr *const *B,
                    const ch_expr **X)
{
    double *at = ch_manifold_initial_point(w->r->mf);
    int rc = ch_mat_solve_at(w->ctx, k, A, 1, B, X, at);
    free(at);
    return rc;
}

/* eta = K^-1 (y - b*). Returns 0, 1 when K is singular, -1 on failure,
 * 2 when b* cannot be formed. */
static int legendre_inverse(hwork *w)
{
    ch_ctx *ctx = w->ctx;
    size_t m = w->m;
    int bad = 0;
    const ch_expr **b = w->b = bias(w, &bad);
    if (!b) return bad ? 2 : -1;
    const ch_expr **rhs = ch_mat_new(ctx, m, 1);
    w->h->eta = ch_mat_new(ctx, m, 1);
    if (!rhs || !w->h->eta) return -1;
    for (size_t r = 0; r < m; r++)
        if (!(rhs[r] = ch_sub(ctx, w->h->y[r], b[r]))) return -1;
    int rc = solve_at(w, m, w->h->K, rhs, w->h->eta);
    if (rc) return rc;
    return tidy_all(ctx, m, w->h->eta);
}

/* qt_dep = alpha(eta), then the full phase substitution. */
static int setup_phase(hwork *w)
{
    ch_ctx *ctx = w->ctx;
    size_t m = w->m, k = w->k;
    for (size_t s = 0; s < m; s++) {
        w->from[s] = w->vi[s];
        w->to[s] = w->h->eta[s];
    }
    w->nsub = m;
    if (!w->r->explicit_alpha || k == 0) return 0;
    w->h->qt_dep = ch_mat_new(ctx, k, 1);
    if (!w->h->qt_dep) return -1;
    if (ch_subst_many(ctx, k, w->r->alpha, w->h->qt_dep, m, w->from, w->to))
        return -1;
    if (tidy_all(ctx, k, w->h->qt_dep)) return -1;
    for (size_t nu = 0; nu < k; nu++) {
        w->from[m + nu] = w->vd[nu];
        w->to[m + nu] = w->h->qt_dep[nu];
    }
    w->nsub = m + k;
    return 0;
}

/* L*_0 = L*(q_t_r = 0); where that point is singular for the formula
 * (0/0, as for b*), L* - 1/2 v.K v - b*.v normalised instead. */
static const ch_expr *velocity_free_part(hwork *w, const ch_expr *const *zeros)
{
    ch_ctx *ctx = w->ctx;
    size_t m = w->m;
    const ch_expr *L0 = ch_subst(ctx, w->r->L_star, m, w->vi, zeros);
    if (L0 || ch_ctx_error(ctx)->code != CH_ERR_MATH) return L0;
    ch_ctx_clear_error(ctx);
    const ch_expr **terms = ch_mat_new(ctx, m * m + m + 1, 1);
    if (!terms) return NULL;
    size_t nt = 0;
    terms[nt++] = w->r->L_star;
    for (size_t r = 0; r < m; r++) {
        terms[nt++] = ch_neg(ctx, ch_mul(ctx, w->b[r], w->vi[r]));
        for (size_t s = 0; s < m; s++)
            terms[nt++] = ch_mul_n(ctx, 4, (const ch_expr *[]){
                ch_num_frac(ctx, -1, 2), w->vi[r], w->h->K[r * m + s], w->vi[s]});
    }
    const ch_expr *raw = ch_add_n(ctx, nt, terms), *simple = ch_simplify(ctx, raw);
    if (!simple) ch_ctx_clear_error(ctx);
    return simple ? simple : raw;
}

/* H* = eta_r y_r - L*(eta) (002 eq. 4.13). L* is quadratic here,
 * L* = 1/2 v.K v + b*.v + L*_0 with v = q_t_r, so this equals
 * 1/2 (y - b*).eta - L*_0: a kinetic part in the momenta plus the
 * velocity-free part of L*, which reads like the textbook H = T + V and
 * keeps the two parts from being put over one denominator. Likewise
 * q_t_r = dH* / dy_r is eta_r (K is symmetric). */
static int hamiltonian(hwork *w)
{
    ch_ctx *ctx = w->ctx;
    size_t m = w->m;
    const ch_expr **terms = ch_mat_new(ctx, m, 1), **zeros = ch_mat_new(ctx, m, 1);
    w->h->qt = ch_mat_new(ctx, m, 1);
    if (!terms || !zeros || !w->h->qt) return -1;
    for (size_t r = 0; r < m; r++) {
        terms[r] = ch_mul(ctx, ch_sub(ctx, w->h->y[r], w->b[r]), w->h->eta[r]);
        zeros[r] = ch_zero(ctx);
        w->h->qt[r] = w->h->eta[r];
    }
    const ch_expr *kinetic = ch_mul(ctx, ch_num_frac(ctx, 1, 2), ch_add_n(ctx, m, terms));
    const ch_expr *L0 = velocity_free_part(w, zeros);
    w->h->H = ch_sub(ctx, tidy(ctx, kinetic), tidy(ctx, L0));
    return w->h->H ? 0 : -1;
}

/* A reduced quantity on motions, in phase variables. */
static const ch_expr *phase_on_motion(hwork *w, const ch_expr *e)
{
    return phase(w, ch_reduce_on_motion(w->ctx, w->r, e));
}

/* The right side of 002 eq. 4.17 (corrected sign) before the accelerations
 * are eliminated: -X*_r H* + p*_nu B^nu_r + Q*_r, in (t, q, y, q_tt_r). */
static int raw_rhs(hwork *w, const ch_expr **out)
{
    ch_ctx *ctx = w->ctx;
    size_t m = w->m, k = w->k;
    const ch_expr **terms = ch_mat_new(ctx, k + 2, 1);
    const ch_expr **p = ch_mat_new(ctx, k, 1);
    if (!terms || !p) return -1;
    for (size_t nu = 0; nu < k; nu++)
        if (!(p[nu] = tidy(ctx, phase_on_motion(w, w->r->p_star[nu])))) return -1;
    for (size_t r = 0; r < m; r++) {
        /* X*_r at fixed y: y are symbols of their own, so differentiating
         * by q alone is right; its coefficients d alpha/dq_t_r go to phase
         * space afterwards. */
        terms[0] = ch_neg(ctx, phase(w, ch_reduce_xstar(ctx, w->r, r, w->h->H)));
        for (size_t nu = 0; nu < k; nu++)
            terms[1 + nu] = ch_mul(ctx, p[nu], phase_on_motion(w, w->r->B[nu * m + r]));
        terms[k + 1] = phase_on_motion(w, w->r->Q_star[r]);
        if (!(out[r] = ch_add_n(ctx, k + 2, terms))) return -1;
    }
    return 0;
}

/* d eta_s/dt along the Poincaré–Hamilton flow without the y_t part:
 * deta/dt + deta/dq_j q_t_j (q_t_j = eta or alpha(eta)). */
static const ch_expr *eta_drift(hwork *w, size_t s)
{
    ch_ctx *ctx = w->ctx;
    const ch_manifold *mf = w->r->mf;
    size_t n = w->n;
    const ch_expr **terms = ch_mat_new(ctx, n + 1, 1);
    if (!terms) return NULL;
    const ch_expr *eta = w->h->eta[s];
    /* the k derivatives by the dependent coordinates each walk eta (which
     * contains them all), O(k |eta|): when there are many, the derivative
     * along the field d/dt + q_t_j d/dq_j is one visit per node */
    if (w->h->qt_dep && w->k > DRIFT_FIELD_MIN_K) {
        if (!w->drift_ready) {
            const ch_expr **syms = ch_mat_new(ctx, n + 1, 1), **dirs = ch_mat_new(ctx, n + 1, 1);
            if (!syms || !dirs) return NULL;
            for (size_t r = 0; r < w->m; r++) {
                syms[r] = w->model->q[mf->indep[r]];
                dirs[r] = w->h->eta[r];
            }
            for (size_t nu = 0; nu < w->k; nu++) {
                syms[w->m + nu] = w->qd[nu];
                dirs[w->m + nu] = w->h->qt_dep[nu];
            }
            syms[n] = w->model->t;
            dirs[n] = ch_one(ctx);
            if (ch_diff_dir_init(ctx, &w->drift, n + 1, syms, dirs)) return NULL;
            w->drift_ready = 1;
        }
        return ch_diff_dir_apply(ctx, &w->drift, eta);
    }
    terms[n] = ch_diff(ctx, eta, w->model->t);
    for (size_t r = 0; r < w->m; r++)
        terms[mf->indep[r]] = ch_mul(ctx, ch_diff(ctx, eta, w->model->q[mf->indep[r]]),
                                     w->h->eta[r]);
    for (size_t nu = 0; nu < w->k; nu++) /* eta free of q_dep if no qt_dep */
        terms[mf->dep[nu]] = w->h->qt_dep ? ch_mul(ctx, ch_diff(ctx, eta, w->qd[nu]),
                                                   w->h->qt_dep[nu])
                                          : ch_zero(ctx);
    return ch_add_n(ctx, n + 1, terms);
}

/* raw_r = F_r + C_rs q_tt_s with q_tt_s = g_s + deta_s/dy_u y_t_u: solves
 * (I - C deta/dy) y_t = F + C g (THEORY §5, last paragraph). Returns 0,
 * 1 when that system is singular, 2 when raw is not linear in q_tt, 3 when
 * g needs an implicit alpha, -1 on failure. */
static int eliminate_acc(hwork *w, const ch_expr *const *raw)
{
    ch_ctx *ctx = w->ctx;
    size_t m = w->m;
    const ch_expr **C = ch_mat_new(ctx, m, m), **F = ch_mat_new(ctx, m, 1);
    const ch_expr **zero = ch_mat_new(ctx, m, 1);
    if (!C || !F || !zero) return -1;
    int any = 0;
    for (size_t r = 0; r < m; r++)
        for (size_t s = 0; s < m; s++) {
            /* free of accelerations (the memoized search is shared by all
             * rows): C_rs = 0 without a walk of raw_r per s */
            int has = ch_sym_finder_has(ctx, &w->acc, raw[r]);
            if (has < 0) return -1;
            const ch_expr *c = has ? tidy(ctx, ch_diff(ctx, raw[r], w->ai[s]))
                                   : ch_zero(ctx);
            if (!c) return -1;
            if (has_kind(w, c, 1)) return 2;
            any |= !ch_is_zero(c);
            C[r * m + s] = c;
        }
    if (!any) {
        for (size_t r = 0; r < m; r++) w->h->yt[r] = raw[r];
        return 0;
    }
    /* with implicit alpha, q_t_dep inside d eta/dt has no closed form */
    for (size_t s = 0; !w->h->qt_dep && s < m; s++)
        if (mentions_any(w->h->eta[s], w->k, w->qd)) return 3;
    for (size_t s = 0; s < m; s++) zero[s] = ch_zero(ctx);
    if (ch_subst_many(ctx, m, raw, F, m, w->ai, zero)) return -1;
    const ch_expr **A = ch_mat_new(ctx, m, m), **g = ch_mat_new(ctx, m, 1);
    const ch_expr **rhs = ch_mat_new(ctx, m, 1), **terms = ch_mat_new(ctx, m + 1, 1);
    if (!A || !g || !rhs || !terms) return -1;
    for (size_t s = 0; s < m; s++)
        if (!(g[s] = eta_drift(w, s))) return -1;
    for (size_t r = 0; r < m; r++) {
        for (size_t u = 0; u < m; u++) {
            for (size_t s = 0; s < m; s++)
                terms[s] = ch_mul(ctx, C[r * m + s],
                                  ch_diff(ctx, w->h->eta[s], w->h->y[u]));
            const ch_expr *cd = ch_add_n(ctx, m, terms);
            A[r * m + u] = tidy(ctx, ch_sub(ctx, r == u ? ch_one(ctx) : ch_zero(ctx), cd));
            if (!A[r * m + u]) return -1;
        }
        for (size_t s = 0; s < m; s++) terms[s] = ch_mul(ctx, C[r * m + s], g[s]);
        terms[m] = F[r];
        if (!(rhs[r] = ch_add_n(ctx, m + 1, terms))) return -1;
    }
    return solve_at(w, m, A, rhs, w->h->yt);
}

/* In phase space nothing may be left of the velocities or accelerations. */
static int phase_clean(hwork *w, const ch_expr *e)
{
    return !has_kind(w, e, 0) && !has_kind(w, e, 1);
}

static int all_clean(hwork *w, const ch_hamilton *h, size_t m, size_t k)
{
    if (!phase_clean(w, h->H)) return 0;
    for (size_t r = 0; r < m; r++)
        if (!phase_clean(w, h->qt[r]) || !phase_clean(w, h->yt[r]) ||
            !phase_clean(w, h->eta[r]))
            return 0;
    for (size_t nu = 0; h->qt_dep && nu < k; nu++)
        if (!phase_clean(w, h->qt_dep[nu])) return 0;
    return 1;
}

static const char degenerate_reason[] =
    "the Legendre map of L* is degenerate (K = d2L*/dq'dq' is identically "
    "singular), e.g. a constant-speed constraint; there is no H*";

/* The symbolic part once H* is known to be derivable. */
static int derive_phase(hwork *w, ch_error *err)
{
    ch_ctx *ctx = w->ctx;
    size_t m = w->m;
    int rc = legendre_inverse(w);
    if (rc == 1) {
        w->h->degenerate = 1;
        return unavailable(w, "%s", degenerate_reason);
    }
    if (rc == 2)
        return unavailable(w, "y* = dL*/dq' is not affine in the independent "
                              "velocities in a form that can be inverted "
                              "symbolically; there is no closed-form H*");
    if (rc < 0 || setup_phase(w) || hamiltonian(w)) return failed(w, err);
    const ch_expr **raw = ch_mat_new(ctx, m, 1);
    w->h->yt = ch_mat_new(ctx, m, 1);
    if (!raw || !w->h->yt || raw_rhs(w, raw)) return failed(w, err);
    rc = eliminate_acc(w, raw);
    if (rc == 1)
        return unavailable(w, "the Poincare-Hamilton equations cannot be "
                              "solved for y*_t (I - C dEta/dy is singular: "
                              "the reduced mass matrix M* is degenerate)");
    if (rc == 2)
        return unavailable(w, "the Poincare-Hamilton right side is not linear "
                              "in the accelerations; y*_t has no closed form");
    if (rc == 3)
        return unavailable(w, "the Poincare-Hamilton right side needs the "
                              "dependent velocities, which the constraints "
                              "define only implicitly");
    if (rc < 0 || tidy_all(ctx, m, w->h->yt)) return failed(w, err);
    if (!all_clean(w, w->h, m, w->k))
        return unavailable(w, "H* or the Poincare-Hamilton right sides still "
                              "depend on the velocities; they cannot be "
                              "written in (t, q, y) symbolically");
    w->h->exists = 1;
    w->h->reason = NULL;
    return 0;
}

int ch_hamilton_derive(ch_ctx *ctx, const ch_reduced *r, ch_hamilton *out,
                       ch_error *err)
{
    ch_hamilton h;
    memset(&h, 0, sizeof h);
    h.m = r->m;
    h.k = r->k;
    hwork w;
    memset(&w, 0, sizeof w);
    if (init_work(&w, ctx, r, &h)) return failed(&w, err);
    int rc = make_momenta(&w, err);
    if (rc) return rc;
    if (hessian(&w)) return failed(&w, err);
    h.quadratic = 1;
    for (size_t i = 0; i < w.m * w.m; i++)
        if (mentions_any(h.K[i], w.m, w.vi) ||
            (!r->explicit_alpha && mentions_any(h.K[i], w.k, w.vd)))
            h.quadratic = 0;
    int deg = degenerate(&w);
    if (deg < 0) return failed(&w, err);
    if (deg) {
        h.degenerate = 1;
        rc = unavailable(&w, "%s", degenerate_reason);
    } else if (implicit_blocks(&w))
        rc = unavailable(&w, "alpha (and with it L*) has no closed form in the "
                             "independent velocities (the constraints are not "
                             "linear in the dependent velocities, nor "
                             "quadratic in one of them once the linear ones "
                             "are solved); H* "
                             "cannot be written in (t, q, y) symbolically");
    else if (!h.quadratic)
        rc = unavailable(&w, "L* is not quadratic in the independent "
                             "velocities (K = d2L*/dq'dq' depends on them): "
                             "the Legendre map has no symbolic inverse here");
    else if (w.m > CH_HAMILTON_MAX_M)
        rc = unavailable(&w, "%zu independent velocities: H* is derived "
                             "symbolically only up to %d",
                         w.m, CH_HAMILTON_MAX_M);
    else
        rc = derive_phase(&w, err);
    if (rc) return rc;
    *out = h;
    return 0;
}

int ch_hamilton_rate(ch_ctx *ctx, const ch_reduced *r, const ch_hamilton *h,
                     const ch_expr **out)
{
    size_t m = r->m;
    const ch_expr **dt = malloc((m + 1) * sizeof *dt);
    int rc = -1;
    if (!dt) {
        ch_ctx_fail(ctx, CH_ERR_MEMORY, "out of memory");
        return -1;
    }
    for (size_t i = 0; i < m; i++)
        if (!(dt[i] = ch_reduce_dt(ctx, r, r->y_star[i]))) goto done;
    for (size_t j = 0; j < m * m; j++) out[j] = h->K[j];
    rc = ch_reduce_at_rest(ctx, r, m, dt, out + m * m);
done:
    free(dt);
    return rc;
}
