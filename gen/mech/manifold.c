/* manifold.c — choice of the dependent velocities, multiplier symbols and
 * random points on the constraint manifold (THEORY §2, §4, §7).
 *
 * A sample is built in three stages. The free values (t, q, parameters,
 * independent velocities) are exact dyadic numbers. The dependent
 * velocities come from a damped Newton iteration in double precision,
 * refined by Newton steps in ball arithmetic and then certified by the
 * Krawczyk test: with X = x~ +- r and Y ~ J(x~)^-1,
 *   K(X) = x~ - Y phi(x~) + (I - Y J(X)) (X - x~)  inside the interior of X
 * proves that X holds exactly one root of phi, and that root lies in K(X).
 * The dependent velocity balls are set to K(X), so an expression that
 * vanishes on the manifold gets an enclosure of 0 (with a radius of about
 * 2^-(prec-24)), not merely a small value. When the constraints are affine
 * in the dependent velocities (decided once by ch_manifold_init; linear and
 * affine nonholonomic constraints, the common case), all of that is
 * replaced by one evaluation of phi and its block at v = 0 and a rigorous
 * ball solve of the linear system (solve_affine), with the general path as
 * fallback. Finally q_tt and lambda solve the KKT system by arb_mat_solve,
 * which encloses the solution for every matrix in the balls or reports
 * failure. */
#include "mech/manifold.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/matrix.h"
#include "core/subst.h"
#include "mech/kkt.h"

#define RANK_POINTS 6
/* Generic points tried when choosing the dependent velocities. */
#define CHOICE_POINTS 16
/* Relative size below which an eliminated Jacobian entry counts as 0. */
#define CHOICE_TOL 1e-9
/* Whole new points tried by one call of the sampler before giving up. */
#define SAMPLE_TRIES 12
/* Newton starts per point, iterations per start. */
#define NEWTON_STARTS 4
#define NEWTON_ITERS 80
/* Extra working precision of the ball stages. */
#define GUARD_BITS 32
/* Smallest pivot of a regular block of the scaled G at the initial state
 * (initial_state). */
#define REGULAR_TOL 1e-6
/* Newton starts for the initial state's dependent velocities. */
#define INITIAL_STARTS 5

/* ======================================================================
 * choice of the dependent velocities
 * ====================================================================== */

/* "x', y'" (sep ", ") for the velocities idx[0..k-1], for messages. */
static void velocity_names(const ch_model *m, const int *idx, size_t k,
                           const char *sep, char *buf, size_t size)
{
    size_t used = 0;
    buf[0] = 0;
    for (size_t i = 0; i < k && used < size; i++) {
        int w = snprintf(buf + used, size - used, "%s%s'", i ? sep : "",
                         ch_sym_of(m->q[idx[i]])->name);
        if (w < 0) break;
        used += (size_t)w;
    }
}

/* The rank of the block of the dependent velocities dep: k when it has
 * full rank (ch_full_rank: a deficiency only when proved in balls, at the
 * model's initial state and generic points), -2 out of memory. */
static int block_rank(ch_ctx *ctx, const ch_model *m, const ch_lagrange *L, const int *dep,
                      size_t k, size_t n)
{
    const ch_expr **blk = malloc((k * k + 1) * sizeof *blk);
    const double *at = ch_model_point(ctx, m);
    if (!blk || !at) {
        free(blk);
        return -2;
    }
    for (size_t a = 0; a < k; a++)
        for (size_t b = 0; b < k; b++) blk[a * k + b] = L->G[a * n + dep[b]];
    ch_rank_info ri;
    int f = ch_full_rank(ctx, k, k, blk, at, RANK_POINTS, &ri);
    free(blk);
    return f < 0 ? -2 : f ? (int)k : ri.rank;
}

static int take_dependent(ch_ctx *ctx, const ch_model *m, const ch_lagrange *L,
                          ch_manifold *mf, ch_error *err)
{
    if (m->ndep != mf->k)
        return ch_error_set(err, CH_ERR_MODEL, m->file, m->dependent_pos.line,
                            m->dependent_pos.col,
                            "`dependent` names %zu velocities for %zu "
                            "constraints", m->ndep, mf->k);
    for (size_t a = 0; a < mf->k; a++) {
        int d = m->dependent[a];
        if (d < 0 || (size_t)d >= mf->n || mf->is_dep[d])
            return ch_error_set(err, CH_ERR_MODEL, m->file,
                                m->dependent_pos.line, m->dependent_pos.col,
                                "bad `dependent` statement");
        mf->dep[a] = d;
        mf->is_dep[d] = 1;
    }
    int r = block_rank(ctx, m, L, mf->dep, mf->k, mf->n);
    if (r == -2) return ch_error_set(err, CH_ERR_MEMORY, m->file, 0, 0, "out of memory");
    if (r < (int)mf->k) {
        char names[400];
        velocity_names(m, mf->dep, mf->k, ", ", names, sizeof names);
        return ch_error_set(err, CH_ERR_MODEL, m->file, m->dependent_pos.line,
                            m->dependent_pos.col,
                            "bad `dependent` choice: the constraint Jacobian "
                            "block of %s is identically singular", names);
    }
    return 0;
}

/* Picks the velocity of constraint a from its row after elimination of the
 * earlier choices: the last-declared one whose symbolic coefficient is a
 * nonzero number, else the last-declared one that is nonzero. -1: none. */
static int pick_velocity(const ch_lagrange *L, const ch_manifold *mf,
                         const double *row, double tol, size_t a)
{
    int numeric = -1, any = -1;
    for (size_t i = 0; i < mf->n; i++) {
        if (mf->is_dep[i] || !(fabs(row[i]) > tol)) continue;
        const ch_expr *g = L->G[a * mf->n + i];
        any = (int)i;
        if (ch_is_num(g) && !ch_is_zero(g)) numeric = (int)i;
    }
    return numeric >= 0 ? numeric : any;
}

/* Gaussian elimination at one generic point, constraint by constraint,
 * pivoting on the chosen column. Zero is judged relative to the row as
 * given, so cancellation in the elimination reads as 0. 0, -1 when a row
 * has no velocity left, -2 out of memory. */
static int eliminate_and_choose(const ch_lagrange *L, ch_manifold *mf, double *a)
{
    size_t n = mf->n, k = mf->k;
    double *rowmax = calloc(k + 1, sizeof *rowmax);
    if (!rowmax) return -2;
    for (size_t r = 0; r < k; r++)
        for (size_t i = 0; i < n; i++)
            if (fabs(a[r * n + i]) > rowmax[r]) rowmax[r] = fabs(a[r * n + i]);
    for (size_t r = 0; r < k; r++) {
        int p = pick_velocity(L, mf, a + r * n, CHOICE_TOL * rowmax[r], r);
        if (p < 0) {
            free(rowmax);
            return -1;
        }
        mf->dep[r] = p;
        mf->is_dep[p] = 1;
        for (size_t s = r + 1; s < k; s++) {
            double f = a[s * n + p] / a[r * n + p];
            for (size_t i = 0; i < n; i++) a[s * n + i] -= f * a[r * n + i];
        }
    }
    free(rowmax);
    return 0;
}

static int choose_dependent(ch_ctx *ctx, const ch_model *m, const ch_lagrange *L,
                            ch_manifold *mf, ch_error *err)
{
    size_t n = mf->n, k = mf->k, ns = ch_ctx_nsyms(ctx);
    double *pt = malloc((ns ? ns : 1) * sizeof *pt);
    double *a = malloc((k * n + 1) * sizeof *a);
    int rc = -1, found = 0;
    if (!pt || !a) {
        rc = ch_error_set(err, CH_ERR_MEMORY, m->file, 0, 0, "out of memory");
        goto out;
    }
    for (int w = 0; w < CHOICE_POINTS && !found; w++) {
        ch_eval_generic_point(ctx, 0x6A09E667F3BCC908ULL, w, pt);
        ch_eval_d_many(ctx, k * n, L->G, pt, a);
        found = 1;
        for (size_t i = 0; i < k * n; i++) found &= isfinite(a[i]) != 0;
    }
    ch_pos pos = m->constraint_pos[0];
    if (!found) {
        rc = ch_error_set(err, CH_ERR_MODEL, m->file, pos.line, pos.col,
                          "cannot choose the dependent velocities: the "
                          "constraint Jacobian is not finite at random "
                          "points; add a `dependent` statement");
        goto out;
    }
    int chosen = eliminate_and_choose(L, mf, a);
    int rank = chosen ? 0 : block_rank(ctx, m, L, mf->dep, k, n);
    if (chosen == -2 || rank == -2) {
        rc = ch_error_set(err, CH_ERR_MEMORY, m->file, 0, 0, "out of memory");
        goto out;
    }
    if (chosen || rank < (int)k) {
        rc = ch_error_set(err, CH_ERR_MODEL, m->file, pos.line, pos.col,
                          "cannot choose the dependent velocities "
                          "automatically; add a `dependent` statement");
        goto out;
    }
    mf->auto_chosen = 1;
    rc = 0;
out:
    free(pt);
    free(a);
    return rc;
}

/* Where a model symbol was declared (parameter or coordinate). */
static ch_pos declared_at(const ch_model *m, const ch_expr *s)
{
    ch_pos none = {0, 0};
    for (size_t j = 0; j < m->np; j++)
        if (m->param[j] == s) return m->param_pos[j];
    for (size_t i = 0; i < m->n; i++)
        if (m->q[i] == s) return m->q_pos[i];
    return none;
}

static int make_multipliers(ch_ctx *ctx, const ch_model *m, ch_manifold *mf,
                            ch_error *err)
{
    for (size_t a = 0; a < mf->k; a++) {
        char name[32];
        snprintf(name, sizeof name, "lambda_%zu", a + 1);
        const ch_expr *old = ch_symbol_find(ctx, name);
        if (old && ch_sym_of(old)->kind != CH_SYM_OTHER) {
            ch_pos p = declared_at(m, old);
            return ch_error_set(err, CH_ERR_MODEL, m->file, p.line, p.col,
                                "the name %s is reserved for multipliers", name);
        }
        mf->lambda[a] = ch_symbol(ctx, name, CH_SYM_OTHER, NULL, 0, (int)a);
        if (!mf->lambda[a]) {
            const ch_error *e = ch_ctx_error(ctx);
            return ch_error_set(err, e->code ? e->code : CH_ERR_MEMORY, m->file,
                                0, 0, "%s", e->msg);
        }
    }
    return 0;
}

/* ======================================================================
 * constraints affine in the dependent velocities
 * ====================================================================== */

/* Nesting of sums and products followed below a constraint before giving
 * up (the answer "not affine" only costs the general sampler). */
#define AFFINE_MAX_DEPTH 4096

/* 1 when e is built from the dependent velocities (symbols of f) by sums
 * and by products in which exactly one factor holds them, to the power 1;
 * 0 otherwise, -1 on failure. Such an e is a polynomial of degree <= 1 in
 * them whose coefficients are subexpressions free of them: it is defined
 * for every value of the dependent velocities as soon as it is defined for
 * one (the coefficients do not see them), and equals its value at 0 plus
 * its exact derivative times the velocities. A symbolic derivative free of
 * the velocities alone would not give that: sqrt(v)^2 has derivative 1
 * but no value at v < 0. memo: node id -> 1 (no), 2 (yes). */
static int affine_in(ch_ctx *ctx, ch_sym_finder *f, ch_map *memo,
                     const ch_expr *e)
{
    int has = ch_sym_finder_has(ctx, f, e);
    if (has <= 0) return has < 0 ? -1 : 1;
    if (e->kind == CH_SYM) return 1;
    if ((e->kind != CH_ADD && e->kind != CH_MUL) || e->depth > AFFINE_MAX_DEPTH)
        return 0;
    uintptr_t seen = (uintptr_t)ch_map_get(memo, e->id);
    if (seen) return seen == 2;
    int yes = 1, holders = 0;
    for (uint32_t i = 0; i < e->n && yes == 1; i++) {
        const ch_expr *c = e->pair[i].e;
        if (e->kind == CH_MUL) {
            int h = ch_sym_finder_has(ctx, f, c);
            if (h < 0) return -1;
            if (!h) continue;
            if (++holders > 1 || !fmpq_is_one(e->pair[i].c)) {
                yes = 0;
                break;
            }
        }
        yes = affine_in(ctx, f, memo, c);
    }
    if (yes < 0) return -1;
    if (ch_map_put(memo, e->id, (void *)(uintptr_t)(yes ? 2 : 1))) return -1;
    return yes;
}

/* Decides mf->affine: every phi affine in the dependent velocities (see
 * affine_in) and every entry of the dependent block of G free of them
 * (implied when the derivative is exact; checked anyway, it is cheap).
 * 0, or -1 on failure. */
static int decide_affine(ch_ctx *ctx, const ch_lagrange *L, ch_manifold *mf)
{
    size_t k = mf->k, n = mf->n;
    mf->affine = 0;
    if (!k) return 0;
    const ch_expr **v = malloc(k * sizeof *v);
    if (!v) return -1;
    for (size_t a = 0; a < k; a++) v[a] = mf->model->qt[mf->dep[a]];
    ch_sym_finder f;
    int rc = ch_sym_finder_init(ctx, &f, k, v);
    free(v);
    if (rc) return -1;
    ch_map memo;
    ch_map_init(&memo);
    int yes = 1;
    for (size_t a = 0; a < k && yes == 1; a++) {
        yes = affine_in(ctx, &f, &memo, L->phi[a]);
        for (size_t b = 0; b < k && yes == 1; b++) {
            int h = ch_sym_finder_has(ctx, &f, L->G[a * n + mf->dep[b]]);
            yes = h < 0 ? -1 : !h;
        }
    }
    ch_map_free(&memo);
    if (yes < 0) return -1;
    mf->affine = yes;
    return 0;
}

static int initial_state(ch_ctx *ctx, const ch_model *m, ch_manifold *mf,
                         ch_error *err);

int ch_manifold_init(ch_ctx *ctx, const ch_model *m, const ch_lagrange *L,
                     const double *q0, ch_manifold *out, ch_error *err)
{
    ch_manifold mf;
    memset(&mf, 0, sizeof mf);
    mf.ctx = ctx;
    mf.model = m;
    mf.q0 = q0 ? q0 : m->q0;
    mf.lag = L;
    mf.n = m->n;
    mf.k = m->k;
    if (mf.k > mf.n)
        return ch_error_set(err, CH_ERR_MODEL, m->file, 0, 0,
                            "more constraints than coordinates");
    mf.m = mf.n - mf.k;
    mf.dep = ch_ctx_alloc(ctx, (mf.k + 1) * sizeof *mf.dep);
    mf.indep = ch_ctx_alloc(ctx, (mf.m + 1) * sizeof *mf.indep);
    mf.is_dep = ch_ctx_alloc(ctx, (mf.n + 1) * sizeof *mf.is_dep);
    mf.lambda = ch_ctx_alloc(ctx, (mf.k + 1) * sizeof *mf.lambda);
    if (!mf.dep || !mf.indep || !mf.is_dep || !mf.lambda)
        return ch_error_set(err, CH_ERR_MEMORY, m->file, 0, 0, "out of memory");
    if (mf.k) {
        int rc = m->ndep ? take_dependent(ctx, m, L, &mf, err)
                         : choose_dependent(ctx, m, L, &mf, err);
        if (rc) return rc;
    }
    int rc = initial_state(ctx, m, &mf, err);
    if (rc) return rc;
    for (size_t i = 0, r = 0; i < mf.n; i++)
        if (!mf.is_dep[i]) mf.indep[r++] = (int)i;
    rc = make_multipliers(ctx, m, &mf, err);
    if (rc) return rc;
    if (decide_affine(ctx, L, &mf)) {
        const ch_error *e = ch_ctx_error(ctx);
        return ch_error_set(err, e->code ? e->code : CH_ERR_MEMORY, m->file,
                            0, 0, "%s", e->code ? e->msg : "out of memory");
    }
    *out = mf;
    return 0;
}

/* ======================================================================
 * sampling: free values
 * ====================================================================== */

/* An exact double in [lo, hi], negated with probability 1/2 if `sign`. */
static double draw(flint_rand_t rnd, double lo, double hi, int sign)
{
    double u = (double)n_randint(rnd, (1UL << 20) + 1) / (double)(1UL << 20);
    double v = lo + (hi - lo) * u;
    return sign && n_randint(rnd, 2) ? -v : v;
}

static void set_sym(arb_struct *sv, const ch_expr *s, double v)
{
    arb_set_d(sv + ch_sym_of(s)->sid, v);
}

static void draw_free(const ch_manifold *mf, flint_rand_t rnd, arb_struct *sv,
                      int positive, double vscale)
{
    const ch_model *m = mf->model;
    set_sym(sv, m->t, positive ? draw(rnd, 0.3, 1.5, 0) : draw(rnd, -1.5, 1.5, 0));
    for (size_t i = 0; i < m->n; i++) {
        set_sym(sv, m->q[i], draw(rnd, 0.3, 1.5, !positive));
        double v = draw(rnd, 0.3, 1.5, !positive);
        set_sym(sv, m->qt[i], mf->is_dep[i] ? v : vscale * v);
    }
    for (size_t j = 0; j < m->np; j++) set_sym(sv, m->param[j], draw(rnd, 0.5, 1.5, 0));
}

/* ======================================================================
 * sampling: dependent velocities
 * ====================================================================== */

typedef struct {
    const ch_manifold *mf;
    size_t ns, k;
    uint32_t *sid;      /* the k unknowns: symbol numbers of dependent velocities */
    const ch_expr **fx; /* their k constraints, then the block of G (k*k) */
    double *d;          /* double symbol values */
    double *fv;         /* values of fx */
    double *step, *trial;
    /* When the dependent block of G is triangular up to a permutation
     * (structural zeros; a chain of constraints each adding one velocity),
     * row prow[s] involves only the unknowns pcol[0..s]: the ball Newton
     * step is a substitution and the Krawczyk matrices are triangular,
     * O(k^2) and O(k^3/6) against the dense O(k^3) of the general case. */
    int tri;
    size_t *prow, *pcol;
} dsolver;

/* Fills prow/pcol and returns 1 when the block is triangular up to a
 * permutation; 0 otherwise (or when out of memory: the dense path). */
static int find_triangular(dsolver *s)
{
    size_t k = s->k;
    const ch_expr *const *A = s->fx + k;
    size_t *cnt = calloc(k + 1, sizeof *cnt), *queue = malloc((k + 1) * sizeof *queue);
    char *col_done = calloc(k + 1, 1), *row_done = calloc(k + 1, 1);
    int ok = cnt && queue && col_done && row_done;
    size_t head = 0, tail = 0, done = 0;
    for (size_t a = 0; ok && a < k; a++) {
        for (size_t b = 0; b < k; b++) cnt[a] += !ch_is_zero(A[a * k + b]);
        if (cnt[a] == 1) queue[tail++] = a;
    }
    while (ok && head < tail) {
        size_t r = queue[head++], c = k;
        if (row_done[r] || cnt[r] != 1) continue;
        for (size_t b = 0; b < k && c == k; b++)
            if (!col_done[b] && !ch_is_zero(A[r * k + b])) c = b;
        if (c == k) break;
        row_done[r] = col_done[c] = 1;
        s->prow[done] = r;
        s->pcol[done++] = c;
        for (size_t a = 0; a < k; a++)
            if (!row_done[a] && !ch_is_zero(A[a * k + c]) && --cnt[a] == 1)
                queue[tail++] = a;
    }
    ok = ok && done == k;
    free(cnt);
    free(queue);
    free(col_done);
    free(row_done);
    return ok;
}

/* Jp[s][t] = J[prow[s]][pcol[t]] (moves the entries out of J). */
static void permute_into(const dsolver *s, arb_mat_t Jp, arb_mat_t J)
{
    slong k = (slong)s->k;
    for (slong i = 0; i < k; i++)
        for (slong j = 0; j <= i; j++)
            arb_swap(arb_mat_entry(Jp, i, j),
                     arb_mat_entry(J, (slong)s->prow[i], (slong)s->pcol[j]));
}

/* Approximate inverse of the lower triangular Jp by substitution, as
 * midpoints (any matrix will do for Krawczyk; this one is close). */
static void tri_inverse(arb_mat_t Y, const arb_mat_t Jp, slong k, slong wp)
{
    arb_mat_zero(Y);
    for (slong j = 0; j < k; j++) {
        arb_inv(arb_mat_entry(Y, j, j), arb_mat_entry(Jp, j, j), wp);
        for (slong i = j + 1; i < k; i++) {
            arb_ptr y = arb_mat_entry(Y, i, j);
            /* -(sum_{l=j}^{i-1} Jp[i][l] Y[l][j]) / Jp[i][i] */
            arb_dot(y, NULL, 1, arb_mat_entry(Jp, i, j), 1, arb_mat_entry(Y, j, j),
                    arb_mat_entry(Y, 1, 0) - arb_mat_entry(Y, 0, 0), i - j, wp);
            arb_div(y, y, arb_mat_entry(Jp, i, i), wp);
        }
    }
    arb_mat_get_mid(Y, Y);
}

/* Solves the k x k system a x = b in place (partial pivoting; a is left
 * holding U in its upper triangle); -1 when singular or not finite. sign,
 * when not NULL, gets the sign of the determinant. */
static int lin_solve_d(double *a, double *b, size_t k, int *sign)
{
    if (sign) *sign = 1;
    for (size_t c = 0; c < k; c++) {
        size_t p = c;
        for (size_t r = c + 1; r < k; r++)
            if (fabs(a[r * k + c]) > fabs(a[p * k + c])) p = r;
        if (!(fabs(a[p * k + c]) > 0) || !isfinite(a[p * k + c])) return -1;
        if (sign) *sign *= (p != c ? -1 : 1) * (a[p * k + c] < 0 ? -1 : 1);
        if (p != c) {
            for (size_t j = 0; j < k; j++) {
                double t = a[c * k + j];
                a[c * k + j] = a[p * k + j];
                a[p * k + j] = t;
            }
            double t = b[c];
            b[c] = b[p];
            b[p] = t;
        }
        for (size_t r = c + 1; r < k; r++) {
            double f = a[r * k + c] / a[c * k + c];
            for (size_t j = c; j < k; j++) a[r * k + j] -= f * a[c * k + j];
            b[r] -= f * b[c];
        }
    }
    for (size_t c = k; c-- > 0;) {
        double s = b[c];
        for (size_t j = c + 1; j < k; j++) s -= a[c * k + j] * b[j];
        b[c] = s / a[c * k + c];
        if (!isfinite(b[c])) return -1;
    }
    return 0;
}

/* The same for a block that is triangular up to the permutation of s:
 * forward substitution, O(k^2). b is overwritten with the solution. */
static int tri_solve_d(const dsolver *s, const double *a, double *b)
{
    size_t k = s->k;
    for (size_t i = 0; i < k; i++) {
        const double *row = a + s->prow[i] * k;
        double v = b[s->prow[i]];
        for (size_t j = 0; j < i; j++) v -= row[s->pcol[j]] * s->trial[j];
        double p = row[s->pcol[i]];
        if (!(fabs(p) > 0) || !isfinite(p)) return -1;
        s->trial[i] = v / p;
        if (!isfinite(s->trial[i])) return -1;
    }
    for (size_t i = 0; i < k; i++) b[s->pcol[i]] = s->trial[i];
    return 0;
}

/* max |phi| at the current double point; NaN-safe (returns inf). */
static double dphi_norm(dsolver *s)
{
    ch_eval_d_many(s->mf->ctx, s->k, s->fx, s->d, s->fv);
    double mx = 0;
    for (size_t a = 0; a < s->k; a++) {
        if (!isfinite(s->fv[a])) return INFINITY;
        if (fabs(s->fv[a]) > mx) mx = fabs(s->fv[a]);
    }
    return mx;
}

/* Damped Newton in double from the current values of the dependent
 * velocities; 0 when the Newton correction became negligible. */
static int newton_d(dsolver *s, int polish)
{
    size_t k = s->k;
    const ch_manifold *mf = s->mf;
    for (int it = 0; it < NEWTON_ITERS; it++) {
        ch_eval_d_many(mf->ctx, k + k * k, s->fx, s->d, s->fv);
        double f0 = 0, vmax = 0, dmax = 0;
        for (size_t a = 0; a < k + k * k; a++)
            if (!isfinite(s->fv[a])) return -1;
        for (size_t a = 0; a < k; a++) {
            if (fabs(s->fv[a]) > f0) f0 = fabs(s->fv[a]);
            s->step[a] = s->fv[a];
            if (fabs(s->d[s->sid[a]]) > vmax) vmax = fabs(s->d[s->sid[a]]);
        }
        if (s->tri ? tri_solve_d(s, s->fv + k, s->step) : lin_solve_d(s->fv + k, s->step, k, NULL))
            return -1;
        for (size_t a = 0; a < k; a++)
            if (fabs(s->step[a]) > dmax) dmax = fabs(s->step[a]);
        if (dmax <= 1e-12 * (1 + vmax)) {
            /* polish: the last (quadratically small) step too, where it
             * does not increase |phi| (a value printed to the user) */
            for (size_t a = 0; polish && a < k; a++) {
                s->trial[a] = s->d[s->sid[a]];
                s->d[s->sid[a]] -= s->step[a];
            }
            if (polish && !(dphi_norm(s) <= f0))
                for (size_t a = 0; a < k; a++) s->d[s->sid[a]] = s->trial[a];
            return 0;
        }
        /* backtracking: accept the first step that decreases |phi| */
        for (size_t a = 0; a < k; a++) s->trial[a] = s->d[s->sid[a]];
        double lam = 1;
        int ok = 0;
        for (int h = 0; h < 30 && !ok; h++, lam /= 2) {
            for (size_t a = 0; a < k; a++)
                s->d[s->sid[a]] = s->trial[a] - lam * s->step[a];
            ok = dphi_norm(s) < (1 - lam / 4) * f0;
        }
        if (!ok) return -1;
    }
    return -1;
}

/* Evaluates the expressions e[0..cnt-1] in balls into the matrix entries
 * (row-major, cols columns); nonzero when one is undefined. */
static int eval_into(ch_ctx *ctx, arb_mat_t A, size_t cnt, size_t cols,
                     const ch_expr *const *e, const arb_struct *sv, slong prec)
{
    arb_ptr *dst = malloc((cnt + 1) * sizeof *dst);
    if (!dst) return -1;
    for (size_t i = 0; i < cnt; i++)
        dst[i] = arb_mat_entry(A, (slong)(i / cols), (slong)(i % cols));
    int rc = ch_eval_arb_many(ctx, cnt, e, dst, sv, prec) ? -1 : 0;
    free(dst);
    return rc;
}

/* Newton steps in ball arithmetic (midpoints only) until the correction is
 * below 2^-(prec-8) relative: the double root is good to ~50 bits, so a few
 * quadratic steps reach any precision. */
static int newton_arb(dsolver *s, arb_struct *sv, slong prec)
{
    const ch_manifold *mf = s->mf;
    slong k = (slong)s->k, wp = prec + GUARD_BITS;
    arb_mat_t F, J, D;
    arb_mat_init(F, k, 1);
    arb_mat_init(J, k, k);
    arb_mat_init(D, k, 1);
    int rc = -1;
    arb_mat_t Jp;
    arb_mat_init(Jp, k, k);
    for (int it = 0; it < 16; it++) {
        if (eval_into(mf->ctx, F, s->k, 1, s->fx, sv, wp)
            || eval_into(mf->ctx, J, s->k * s->k, s->k, s->fx + s->k, sv, wp))
            break;
        if (s->tri) {
            /* forward substitution Jp d = F(prow), d to the unknowns pcol */
            arb_ptr d = _arb_vec_init(k);
            permute_into(s, Jp, J);
            for (slong i = 0; i < k; i++) {
                arb_dot(d + i, arb_mat_entry(F, (slong)s->prow[i], 0), 1,
                        arb_mat_entry(Jp, i, 0), 1, d, 1, i, wp);
                arb_div(d + i, d + i, arb_mat_entry(Jp, i, i), wp);
                arb_get_mid_arb(d + i, d + i);
            }
            for (slong i = 0; i < k; i++)
                arb_swap(arb_mat_entry(D, (slong)s->pcol[i], 0), d + i);
            _arb_vec_clear(d, k);
        } else if (!arb_mat_approx_solve(D, J, F, wp)) {
            break;
        }
        int small = 1;
        for (slong a = 0; a < k; a++) {
            arb_ptr x = sv + s->sid[a];
            arf_srcptr d = arb_midref(arb_mat_entry(D, a, 0));
            slong ex = arf_abs_bound_lt_2exp_si(arb_midref(x));
            if (ex < 0) ex = 0;
            if (!arf_is_finite(d)) goto out;
            small &= arf_cmpabs_2exp_si(d, -(prec - 8) + ex) < 0;
            arf_sub(arb_midref(x), arb_midref(x), d, wp, ARF_RND_NEAR);
            mag_zero(arb_radref(x));
        }
        if (small) {
            rc = 0;
            break;
        }
    }
out:
    arb_mat_clear(Jp);
    arb_mat_clear(F);
    arb_mat_clear(J);
    arb_mat_clear(D);
    return rc;
}

/* The Krawczyk test of the permuted triangular system (same roots, the
 * unknowns and equations only relabelled): Y = Jp(x~)^-1 and
 * C = I - Y Jp(X) are lower triangular. F and J hold phi and its block at
 * x~ (unpermuted); the other matrices are k x k or k x 1 work space. */
/* DX = +-2^rexp per dependent velocity and JX the Jacobian evaluated over
 * the box x~ + DX; sv is back at x~ afterwards. Nonzero when the
 * evaluation fails. */
static int eval_on_box(dsolver *s, arb_struct *sv, slong rexp, slong wp,
                       arb_mat_t DX, arb_mat_t JX)
{
    const ch_manifold *mf = s->mf;
    for (slong a = 0; a < (slong)s->k; a++) {
        arb_ptr dx = arb_mat_entry(DX, a, 0);
        arb_zero(dx);
        mag_set_ui_2exp_si(arb_radref(dx), 1, rexp);
        arb_add(sv + s->sid[a], sv + s->sid[a], dx, wp);
    }
    int bad = eval_into(mf->ctx, JX, s->k * s->k, s->k, s->fx + s->k, sv, wp);
    for (slong a = 0; a < (slong)s->k; a++) /* back to x~ */
        mag_zero(arb_radref(sv + s->sid[a]));
    return bad;
}

/* The end of both Krawczyk steps: T holds K(X) - x~ and DX holds X - x~
 * for the unknowns col[0..k) (NULL: 0..k). When K(X) lies in the interior
 * of X for every unknown, the dependent velocity balls become K(X) and 0
 * is returned; otherwise nothing changes and -1 is returned. */
static int accept_box(dsolver *s, arb_struct *sv, const size_t *col,
                      const arb_mat_t DX, arb_mat_t T, slong wp)
{
    slong k = (slong)s->k;
    for (slong i = 0; i < k; i++) {
        arb_t X, K;
        arb_init(X);
        arb_init(K);
        arb_ptr x = sv + s->sid[col ? col[i] : (size_t)i];
        arb_add(X, x, arb_mat_entry(DX, i, 0), wp);
        arb_add(K, x, arb_mat_entry(T, i, 0), wp);
        int inside = arb_contains_interior(X, K);
        arb_swap(arb_mat_entry(T, i, 0), K); /* keep K until all pass */
        arb_clear(X);
        arb_clear(K);
        if (!inside) return -1;
    }
    for (slong i = 0; i < k; i++)
        arb_set(sv + s->sid[col ? col[i] : (size_t)i], arb_mat_entry(T, i, 0));
    return 0;
}

static int krawczyk_tri(dsolver *s, arb_struct *sv, slong prec, slong rexp,
                        arb_mat_t F, arb_mat_t J, arb_mat_t JX, arb_mat_t Y,
                        arb_mat_t C, arb_mat_t DX, arb_mat_t T, arb_mat_t YF)
{
    slong k = (slong)s->k, wp = prec + GUARD_BITS;
    arb_mat_t Jp, JXp;
    arb_mat_init(Jp, k, k);
    arb_mat_init(JXp, k, k);
    arb_ptr Fp = _arb_vec_init(k);
    int rc = -1;
    slong cs = arb_mat_entry(Y, 1 < k ? 1 : 0, 0) - arb_mat_entry(Y, 0, 0);
    arb_mat_get_mid(J, J);
    permute_into(s, Jp, J);
    for (slong i = 0; i < k; i++) arb_set(Fp + i, arb_mat_entry(F, (slong)s->prow[i], 0));
    tri_inverse(Y, Jp, k, wp);
    if (eval_on_box(s, sv, rexp, wp, DX, JX)) goto out;
    permute_into(s, JXp, JX);
    /* C = I - Y JXp, lower triangular; T = C DX; YF = Y Fp */
    for (slong i = 0; i < k; i++) {
        for (slong j = 0; j <= i; j++) {
            arb_ptr c = arb_mat_entry(C, i, j);
            arb_dot(c, NULL, 1, arb_mat_entry(Y, i, j), 1, arb_mat_entry(JXp, j, j),
                    cs, i - j + 1, wp);
            if (i == j) arb_add_ui(c, c, 1, wp);
        }
        arb_dot(arb_mat_entry(T, i, 0), NULL, 0, arb_mat_entry(C, i, 0), 1,
                arb_mat_entry(DX, 0, 0), 1, i + 1, wp);
        arb_dot(arb_mat_entry(YF, i, 0), NULL, 0, arb_mat_entry(Y, i, 0), 1, Fp, 1,
                i + 1, wp);
    }
    arb_mat_sub(T, T, YF, wp); /* (I - Y J(X)) (X - x~) - Y phi(x~) */
    rc = accept_box(s, sv, s->pcol, DX, T, wp);
out:
    arb_mat_clear(Jp);
    arb_mat_clear(JXp);
    _arb_vec_clear(Fp, k);
    return rc;
}

/* The Krawczyk test around the current midpoints x~ with radius 2^rexp:
 * 0 and the dependent velocity balls set to K(X) when it proves a root. */
static int krawczyk(dsolver *s, arb_struct *sv, slong prec, slong rexp)
{
    const ch_manifold *mf = s->mf;
    slong k = (slong)s->k, wp = prec + GUARD_BITS;
    arb_mat_t F, YF, J, Y, JX, C, DX, T;
    arb_mat_init(F, k, 1);
    arb_mat_init(YF, k, 1);
    arb_mat_init(J, k, k);
    arb_mat_init(Y, k, k);
    arb_mat_init(JX, k, k);
    arb_mat_init(C, k, k);
    arb_mat_init(DX, k, 1);
    arb_mat_init(T, k, 1);
    int rc = -1;
    if (eval_into(mf->ctx, F, s->k, 1, s->fx, sv, wp)
        || eval_into(mf->ctx, J, s->k * s->k, s->k, s->fx + s->k, sv, wp))
        goto out;
    if (s->tri) {
        rc = krawczyk_tri(s, sv, prec, rexp, F, J, JX, Y, C, DX, T, YF);
        goto out;
    }
    arb_mat_get_mid(J, J);
    if (!arb_mat_approx_inv(Y, J, wp)) goto out;
    arb_mat_get_mid(Y, Y);
    /* X = x~ +- r, evaluated Jacobian over the box */
    if (eval_on_box(s, sv, rexp, wp, DX, JX)) goto out;
    arb_mat_mul(C, Y, JX, wp);
    arb_mat_neg(C, C);
    for (slong a = 0; a < k; a++)
        arb_add_ui(arb_mat_entry(C, a, a), arb_mat_entry(C, a, a), 1, wp);
    arb_mat_mul(T, C, DX, wp);      /* (I - Y J(X)) (X - x~) */
    arb_mat_mul(YF, Y, F, wp);      /* Y phi(x~) */
    arb_mat_sub(T, T, YF, wp);
    rc = accept_box(s, sv, NULL, DX, T, wp);
out:
    arb_mat_clear(F);
    arb_mat_clear(YF);
    arb_mat_clear(J);
    arb_mat_clear(Y);
    arb_mat_clear(JX);
    arb_mat_clear(C);
    arb_mat_clear(DX);
    arb_mat_clear(T);
    return rc;
}

/* Certifies a root near the current midpoints, widening the box a few
 * times; the radius stays far below the zero test's 2^-(prec/2). */
static int certify(dsolver *s, arb_struct *sv, slong prec)
{
    slong ex = 0;
    for (size_t a = 0; a < s->k; a++) {
        slong e = arf_abs_bound_lt_2exp_si(arb_midref(sv + s->sid[a]));
        if (e > ex) ex = e;
    }
    for (slong rexp = -prec + 24 + ex; rexp < -prec / 2 - 16; rexp += 16)
        if (!krawczyk(s, sv, prec, rexp)) return 0;
    return -1;
}

/* The affine case (mf->affine): phi(v) = b + A v exactly for every value
 * v of the dependent velocities, with b = phi(v = 0) and A the dependent
 * block of G, which does not involve v (see affine_in). One evaluation of
 * b and A in balls at v = 0 and a rigorous ball solve of A v = -b give
 * balls that hold the exact values of b and A, hence the exact (unique:
 * every matrix of the balls is regular) root, which is what Krawczyk would
 * prove, without Newton or the evaluation over a box, at working
 * precision wp. 1 when a result is not tight (more precision may make it);
 * -1 when the evaluation fails or a pivot ball holds 0: the caller then
 * runs the general path, which decides those points as before. */
static int affine_at(dsolver *s, arb_struct *sv, slong prec, slong wp)
{
    const ch_manifold *mf = s->mf;
    slong k = (slong)s->k;
    size_t cnt = s->k + s->k * s->k;
    arb_ptr b = _arb_vec_init(k), x = _arb_vec_init(k);
    arb_mat_t A, B, X;
    arb_mat_init(A, k, k);
    arb_mat_init(B, k, 1);
    arb_mat_init(X, k, 1);
    arb_ptr *dst = malloc(cnt * sizeof *dst);
    int rc = -1;
    if (!dst) goto out;
    for (slong a = 0; a < k; a++) {
        arb_zero(sv + s->sid[a]);
        dst[a] = b + a;
    }
    for (size_t i = 0; i < s->k * s->k; i++)
        dst[s->k + i] = arb_mat_entry(A, (slong)(i / s->k), (slong)(i % s->k));
    if (ch_eval_arb_many(mf->ctx, cnt, s->fx, dst, sv, wp)) goto out;
    if (s->tri) {
        /* row prow[i] holds the unknowns pcol[0..i]: forward substitution
         * x[pcol[i]] = -(b[prow[i]] + sum_{j<i} A[prow[i]][pcol[j]]
         * x[pcol[j]]) / A[prow[i]][pcol[i]], every operation enclosing */
        for (slong i = 0; i < k; i++) {
            slong r = (slong)s->prow[i];
            arb_ptr xi = x + s->pcol[i], p = arb_mat_entry(A, r, (slong)s->pcol[i]);
            if (arb_contains_zero(p) || !arb_is_finite(p)) goto out;
            arb_set(xi, b + r);
            for (slong j = 0; j < i; j++)
                arb_addmul(xi, arb_mat_entry(A, r, (slong)s->pcol[j]), x + s->pcol[j], wp);
            arb_div(xi, xi, p, wp);
            arb_neg(xi, xi);
        }
    } else {
        for (slong a = 0; a < k; a++) arb_neg(arb_mat_entry(B, a, 0), b + a);
        if (!arb_mat_solve(X, A, B, wp)) goto out;
        for (slong a = 0; a < k; a++) arb_swap(x + a, arb_mat_entry(X, a, 0));
    }
    /* as tight as certify() makes them, so the zero test's verdicts stay
     * what they were: 2^-(prec/2) is its tolerance */
    for (slong a = 0; a < k; a++)
        if (!arb_is_finite(x + a)) goto out;
    rc = 1;
    for (slong a = 0; a < k; a++)
        if (mag_cmp_2exp_si(arb_radref(x + a), -prec / 2 - 16) >= 0) goto out;
    for (slong a = 0; a < k; a++) arb_swap(sv + s->sid[a], x + a);
    rc = 0;
out:
    free(dst);
    _arb_vec_clear(b, k);
    _arb_vec_clear(x, k);
    arb_mat_clear(A);
    arb_mat_clear(B);
    arb_mat_clear(X);
    return rc;
}

/* solve_affine at growing working precision: the radii of a forward
 * substitution can grow by a bit or so per unknown (each x_i inherits the
 * errors of those before it), so a long chain (the 200-trailer's 201
 * constraints at the audit's 256 bits) is not tight at the first guard.
 * Each try costs O(k^2) (a triangular block), where the general path's
 * Krawczyk test is O(k^3) in balls. 0 when tight, nonzero otherwise. */
static int solve_affine(dsolver *s, arb_struct *sv, slong prec)
{
    int rc = 1;
    for (slong guard = GUARD_BITS; rc == 1 && guard <= 4 * (prec + (slong)s->k); guard *= 4)
        rc = affine_at(s, sv, prec, prec + guard);
    return rc;
}

/* The dependent velocities in double precision from the values in s->d:
 * damped Newton, restarted from drawn values; 0 with s->d and their balls
 * (exact doubles) holding them. */
static int solve_d(dsolver *s, flint_rand_t rnd, arb_struct *sv)
{
    int ok = 0;
    for (int start = 0; start < NEWTON_STARTS && !ok; start++) {
        if (start)
            for (size_t a = 0; a < s->k; a++)
                s->d[s->sid[a]] = draw(rnd, 0.3, 1.5, 1) * (double)(1 << (start - 1));
        ok = newton_d(s, 0) == 0;
    }
    if (!ok) return -1;
    for (size_t a = 0; a < s->k; a++)
        arb_set_d(sv + s->sid[a], s->d[s->sid[a]]);
    return 0;
}

static void mid_into(const dsolver *s, const arb_struct *sv)
{
    for (size_t i = 0; i < s->ns; i++)
        s->d[i] = arf_get_d(arb_midref(sv + i), ARF_RND_NEAR);
}

static int solve_dependent(dsolver *s, flint_rand_t rnd, arb_struct *sv,
                           slong prec)
{
    mid_into(s, sv); /* s->d keeps the drawn starting values for the general path */
    if (s->mf->affine && !solve_affine(s, sv, prec)) return 0;
    if (solve_d(s, rnd, sv) || newton_arb(s, sv, prec)) return -1;
    return certify(s, sv, prec);
}

/* The same when only the unknowns of the prefix system p (the first of a
 * triangular order, see needed_prefix) are enclosed: every unknown is
 * solved in double precision, so the point lies on the manifold to
 * rounding (a witness is printed), then p's are enclosed as above. */
static int solve_prefix(dsolver *s, dsolver *p, flint_rand_t rnd,
                        arb_struct *sv, slong prec)
{
    mid_into(s, sv);
    if (solve_d(s, rnd, sv)) return -1;
    return p->k ? solve_dependent(p, rnd, sv, prec) : 0;
}

/* ======================================================================
 * sampling: accelerations and multipliers
 * ====================================================================== */

/* Evaluates the KKT system's values (ch_kkt_values) with one shared
 * cache into A = [M -G^T; G 0], B = [b; r]; nonzero when one is
 * undefined. */
static int kkt_fill(const ch_manifold *mf, arb_mat_t A, arb_mat_t B,
                    arb_struct *sv, slong wp)
{
    size_t n = mf->n, k = mf->k, cnt = n * n + k * n + n + k, w = 0;
    const ch_expr **e = malloc(cnt * sizeof *e);
    arb_ptr *dst = malloc(cnt * sizeof *dst);
    int rc = -1;
    if (!e || !dst || ch_kkt_values(mf->ctx, mf->lag, e)) goto out;
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < n; j++) dst[w++] = arb_mat_entry(A, (slong)i, (slong)j);
    for (size_t a = 0; a < k; a++)
        for (size_t i = 0; i < n; i++) dst[w++] = arb_mat_entry(A, (slong)(n + a), (slong)i);
    for (size_t i = 0; i < n + k; i++) dst[w++] = arb_mat_entry(B, (slong)i, 0);
    if (ch_eval_arb_many(mf->ctx, cnt, e, dst, sv, wp)) goto out;
    for (size_t a = 0; a < k; a++)
        for (size_t i = 0; i < n; i++)
            arb_neg(arb_mat_entry(A, (slong)i, (slong)(n + a)),
                    arb_mat_entry(A, (slong)(n + a), (slong)i));
    rc = 0;
out:
    free(e);
    free(dst);
    return rc;
}

static int solve_kkt(const ch_manifold *mf, arb_struct *sv, slong prec)
{
    slong n = (slong)mf->n, k = (slong)mf->k, N = n + k, wp = prec + GUARD_BITS;
    arb_mat_t A, B, X;
    arb_mat_init(A, N, N);
    arb_mat_init(B, N, 1);
    arb_mat_init(X, N, 1);
    int rc = -1;
    if (kkt_fill(mf, A, B, sv, wp) || !arb_mat_solve(X, A, B, wp)) goto out;
    for (slong i = 0; i < n; i++)
        arb_set_round(sv + ch_sym_of(mf->model->qtt[i])->sid, arb_mat_entry(X, i, 0), prec);
    for (slong a = 0; a < k; a++)
        arb_set_round(sv + ch_sym_of(mf->lambda[a])->sid, arb_mat_entry(X, n + a, 0), prec);
    rc = 0;
out:
    arb_mat_clear(A);
    arb_mat_clear(B);
    arb_mat_clear(X);
    return rc;
}

/* ======================================================================
 * the sampler
 * ====================================================================== */

static void dsolver_free(dsolver *s)
{
    free(s->sid);
    free(s->fx);
    free(s->fv);
    free(s->d);
    free(s->step);
    free(s->trial);
    free(s->prow);
    free(s->pcol);
}

/* The system of the k constraints row[0..k) in the dependent velocities
 * col[0..k) (indices into phi and mf->dep; NULL: 0..k-1); -1 when out of
 * memory (free it all the same). */
static int dsolver_init(dsolver *s, const ch_manifold *mf, size_t k,
                        const size_t *row, const size_t *col)
{
    const ch_lagrange *L = mf->lag;
    memset(s, 0, sizeof *s);
    s->mf = mf;
    s->k = k;
    s->ns = ch_ctx_nsyms(mf->ctx);
    s->sid = malloc((k + 1) * sizeof *s->sid);
    s->fx = malloc((k + k * k + 1) * sizeof *s->fx);
    s->fv = malloc((k + k * k + 1) * sizeof *s->fv);
    s->d = malloc((s->ns + 1) * sizeof *s->d);
    s->step = malloc((k + 1) * sizeof *s->step);
    s->trial = malloc((k + 1) * sizeof *s->trial);
    s->prow = malloc((k + 1) * sizeof *s->prow);
    s->pcol = malloc((k + 1) * sizeof *s->pcol);
    if (!s->sid || !s->fx || !s->fv || !s->d || !s->step || !s->trial || !s->prow
        || !s->pcol)
        return -1;
    for (size_t a = 0; a < k; a++) {
        size_t r = row ? row[a] : a, c = col ? col[a] : a;
        s->sid[a] = ch_sym_of(mf->model->qt[mf->dep[c]])->sid;
        s->fx[a] = L->phi[r];
        for (size_t b = 0; b < k; b++)
            s->fx[k + a * k + b] = L->G[r * mf->n + mf->dep[col ? col[b] : b]];
    }
    return 0;
}

/* How many unknowns of the triangular order s->pcol an expression e needs:
 * one past the last that occurs in e. Row prow[i] involves pcol[0..i]
 * only, so the first rows are a system of their own in the first
 * unknowns. */
static size_t needed_prefix(const dsolver *s, const ch_expr *e)
{
    size_t need = 0;
    for (size_t i = 0; i < s->k; i++)
        if (ch_has_sym(e, s->mf->model->qt[s->mf->dep[s->pcol[i]]])) need = i + 1;
    return need;
}

/* kkt: also q_tt and lambda (the expensive part for large systems).
 * target: the one expression to be evaluated at the point, or NULL. */
static int sample(const ch_manifold *mf, flint_rand_t rnd, arb_struct *symval,
                  slong prec, int kkt, const ch_expr *target)
{
    size_t k = mf->k, need = k;
    dsolver s, p;
    memset(&p, 0, sizeof p);
    int rc = -1;
    if (dsolver_init(&s, mf, k, NULL, NULL)) goto out;
    /* (k >= 2: a 1 x 1 block gains nothing) */
    s.tri = k >= 2 && find_triangular(&s);
    /* the state alone: the unknowns the target needs and those before them
     * in a triangular order are enclosed, the rest solved in doubles */
    if (!kkt && target && s.tri) need = needed_prefix(&s, target);
    if (need < k) {
        if (dsolver_init(&p, mf, need, s.prow, s.pcol)) goto out;
        for (size_t i = 0; i < need; i++) p.prow[i] = p.pcol[i] = i;
        p.tri = need >= 2;
    }
    /* Later tries use all-positive points (domains of sqrt, log) and
     * smaller independent velocities (constraints such as
     * x'^2 + y'^2 = v0^2 have no real solution when they are large). */
    for (int tr = 0; tr < SAMPLE_TRIES && rc; tr++) {
        double vscale = ldexp(1.0, -(tr / 4));
        draw_free(mf, rnd, symval, tr % 2, vscale);
        if (k && (need < k ? solve_prefix(&s, &p, rnd, symval, prec)
                           : solve_dependent(&s, rnd, symval, prec)))
            continue;
        if (kkt && solve_kkt(mf, symval, prec)) continue;
        rc = 0;
    }
out:
    dsolver_free(&s);
    dsolver_free(&p);
    return rc;
}

int ch_manifold_sample(void *manifold, flint_rand_t rnd, arb_struct *symval,
                       slong prec)
{
    return sample(manifold, rnd, symval, prec, 1, NULL);
}

int ch_manifold_sample_state(void *probe, flint_rand_t rnd,
                                 arb_struct *symval, slong prec)
{
    const ch_manifold_probe *pr = probe;
    return sample(pr->mf, rnd, symval, prec, 0, pr->e);
}

/* ======================================================================
 * the initial state: dependent velocities, regular choice
 * ====================================================================== */

double *ch_manifold_initial_point(const ch_manifold *mf)
{
    const ch_model *m = mf->model;
    size_t ns = ch_ctx_nsyms(mf->ctx);
    double *v = mf->v0 ? malloc((ns ? ns : 1) * sizeof *v) : NULL;
    if (!v) return NULL;
    ch_eval_generic_point(mf->ctx, 0x3C6EF372FE94F82BULL, 1, v);
    ch_model_point_fill(m, mf->q0, mf->v0, v);
    return v;
}

/* v0 (n): the `initial` velocities, the dependent ones (mf->dep) solving
 * the constraints by damped Newton from the given values, then from
 * values moved by +-1 and +-10 times their size (a start where the block
 * is singular, y' = 0 for x'^2 + y'^2 = v0^2, moves off it); 0, -1
 * when no start converges, -2 out of memory. */
static int initial_velocities(const ch_manifold *mf, double *v0)
{
    const ch_model *m = mf->model;
    size_t k = mf->k;
    static const double shift[INITIAL_STARTS] = {0, 1, -1, 10, -10};
    for (size_t i = 0; i < mf->n; i++) v0[i] = m->qt0[i];
    if (!k) return 0;
    dsolver s;
    int rc = -2;
    if (dsolver_init(&s, mf, k, NULL, NULL)) goto out;
    s.tri = k >= 2 && find_triangular(&s);
    /* given values on the constraints are kept (Newton would fail where
     * the block is singular, and that is for the caller to judge) */
    ch_manifold tmp = *mf;
    tmp.v0 = v0;
    double *base = ch_manifold_initial_point(&tmp), vmax = 0;
    if (!base) goto out;
    rc = -1;
    memcpy(s.d, base, s.ns * sizeof *s.d);
    for (size_t i = 0; i < mf->n; i++) vmax = fmax(vmax, fabs(v0[i]));
    if (dphi_norm(&s) <= 1e-13 * (1 + vmax * vmax)) rc = 0;
    for (int st = 0; st < INITIAL_STARTS && rc; st++) {
        memcpy(s.d, base, s.ns * sizeof *s.d);
        for (size_t a = 0; a < k; a++) {
            double g = m->qt0[mf->dep[a]];
            s.d[s.sid[a]] = g + shift[st] * (1 + fabs(g));
        }
        if (newton_d(&s, 1)) continue;
        for (size_t a = 0; a < k; a++) v0[mf->dep[a]] = s.d[s.sid[a]];
        rc = 0;
    }
    free(base);
out:
    dsolver_free(&s);
    return rc;
}

/* g (k x n): G at the initial point pt, each row scaled to a largest
 * entry of 1, so that a block's conditioning below does not depend on
 * how a constraint is written (its units, a factor). Columns are not
 * scaled: a column small against the others is what a singular block
 * looks like (cos(phi) of the knife edge at phi = pi/2). -1 when an
 * entry is not finite there. */
static int scaled_jacobian(const ch_manifold *mf, const double *pt, double *g)
{
    size_t k = mf->k, n = mf->n;
    ch_eval_d_many(mf->ctx, k * n, mf->lag->G, pt, g);
    for (size_t i = 0; i < k * n; i++)
        if (!isfinite(g[i])) return -1;
    for (size_t a = 0; a < k; a++) {
        double mx = 0;
        for (size_t i = 0; i < n; i++) mx = fmax(mx, fabs(g[a * n + i]));
        for (size_t i = 0; mx > 0 && i < n; i++) g[a * n + i] /= mx;
    }
    return 0;
}

/* Is column i preferred to column j for equal pivots in row a? A
 * coefficient that is a nonzero number first, then the last-declared
 * velocity (the generic choice's order). */
static int preferred(const ch_manifold *mf, size_t a, size_t i, size_t j)
{
    const ch_expr *gi = mf->lag->G[a * mf->n + i], *gj = mf->lag->G[a * mf->n + j];
    int ni = ch_is_num(gi) && !ch_is_zero(gi), nj = ch_is_num(gj) && !ch_is_zero(gj);
    return ni != nj ? ni : i > j;
}

/* Gaussian elimination of the scaled g (k x n, overwritten) with full
 * pivoting over the rows and the columns with allow[i] (NULL: all):
 * cols[r] gets the column of step r. Returns the number of steps whose
 * pivot reached REGULAR_TOL (k: that block of columns is regular), or
 * k + 1 when out of memory. */
static size_t pivot_columns(const ch_manifold *mf, double *g, const int *allow, int *cols)
{
    size_t k = mf->k, n = mf->n, r = 0;
    size_t *row = malloc((k + 1) * sizeof *row);
    char *used = calloc(n + 1, 1);
    if (!row || !used) {
        r = k + 1;
        goto out;
    }
    for (size_t a = 0; a < k; a++) row[a] = a;
    for (; r < k; r++) {
        size_t br = k, bc = n;
        double bv = 0;
        for (size_t a = r; a < k; a++)
            for (size_t i = 0; i < n; i++) {
                double v = fabs(g[row[a] * n + i]);
                if (used[i] || (allow && !allow[i]) || v == 0) continue;
                if (bc == n || v > bv * (1 + 1e-12)
                    || (v >= bv * (1 - 1e-12) && preferred(mf, row[a], i, bc))) {
                    bv = v;
                    br = a;
                    bc = i;
                }
            }
        if (bc == n || bv < REGULAR_TOL) break;
        size_t t = row[r];
        row[r] = row[br];
        row[br] = t;
        used[bc] = 1;
        cols[r] = (int)bc;
        const double *pr = g + row[r] * n;
        for (size_t a = r + 1; a < k; a++) {
            double *ga = g + row[a] * n, f = ga[bc] / pr[bc];
            for (size_t i = 0; i < n; i++) ga[i] -= f * pr[i];
        }
    }
out:
    free(row);
    free(used);
    return r;
}

static int cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

/* mf->dep_sign at the point pt: LU with partial pivoting of the
 * dependent block there; 0 when a pivot is below 1e-12 of the largest
 * entry, or not finite; 2 when out of memory. */
static int block_sign(const ch_manifold *mf, const double *pt)
{
    size_t k = mf->k, n = mf->n;
    const ch_expr **blk = malloc((k * k + 1) * sizeof *blk);
    double *a = malloc((k * k + 1) * sizeof *a), *b = calloc(k + 1, sizeof *b), amax = 0;
    int sign = 2;
    if (!blk || !a || !b) goto out;
    sign = 0;
    for (size_t r = 0; r < k; r++)
        for (size_t c = 0; c < k; c++) blk[r * k + c] = mf->lag->G[r * n + mf->dep[c]];
    ch_eval_d_many(mf->ctx, k * k, blk, pt, a);
    for (size_t i = 0; i < k * k; i++) amax = fmax(amax, fabs(a[i]));
    if (lin_solve_d(a, b, k, &sign)) sign = 0;
    for (size_t c = 0; c < k; c++) /* U's diagonal */
        if (!(fabs(a[c * k + c]) > 1e-12 * amax)) sign = 0;
out:
    free(blk);
    free(a);
    free(b);
    return sign;
}

/* The tool's choice: the k columns cols (sorted in place), in declared
 * order. */
static void set_choice(ch_manifold *mf, int *cols)
{
    qsort(cols, mf->k, sizeof *cols, cmp_int);
    for (size_t i = 0; i < mf->n; i++) mf->is_dep[i] = 0;
    for (size_t a = 0; a < mf->k; a++) {
        mf->dep[a] = cols[a];
        mf->is_dep[cols[a]] = 1;
    }
}

/* The error for a user's block singular at the initial state: the
 * velocities, what vanishes, and a regular choice (k columns). */
static int singular_at_initial(const ch_manifold *mf, size_t rank, const int *regular,
                               ch_error *err)
{
    const ch_model *m = mf->model;
    size_t k = mf->k;
    char names[400], what[200], reg[400];
    velocity_names(m, mf->dep, k, ", ", names, sizeof names);
    if (k == 1)
        snprintf(what, sizeof what, "dphi_1/d%s' vanishes there",
                 ch_sym_of(m->q[mf->dep[0]])->name);
    else
        snprintf(what, sizeof what, "its determinant vanishes there: rank %zu of %zu",
                 rank, k);
    int *c = malloc((k + 1) * sizeof *c);
    if (!c) return ch_error_set(err, CH_ERR_MEMORY, m->file, 0, 0, "out of memory");
    memcpy(c, regular, k * sizeof *c);
    qsort(c, k, sizeof *c, cmp_int);
    velocity_names(m, c, k, " ", reg, sizeof reg);
    free(c);
    return ch_error_set(err, CH_ERR_MODEL, m->file, m->dependent_pos.line,
                        m->dependent_pos.col,
                        "bad `dependent` choice: the constraint Jacobian block of %s "
                        "is singular at the initial state (%s); a regular choice "
                        "there is `dependent %s`",
                        names, what, reg);
}

/* mf->v0, and the choice checked at the initial state (see
 * ch_manifold_init): a user's choice singular there is an error, the
 * tool's is replaced by the columns of a column-pivoted elimination. When
 * the constraints have no solution near the initial values, the check is
 * made at the given values (G of linear constraints does not depend on
 * the velocities) and mf->v0 is NULL; no check when G is not finite there
 * (the run then fails at t = 0 and says so). */
static int initial_state(ch_ctx *ctx, const ch_model *m, ch_manifold *mf,
                         ch_error *err)
{
    size_t k = mf->k, n = mf->n;
    double *v0 = mf->v0 = ch_ctx_alloc(ctx, (n + 1) * sizeof *mf->v0);
    if (!v0) return ch_error_set(err, CH_ERR_MEMORY, m->file, 0, 0, "out of memory");
    if (!k) return initial_velocities(mf, v0);
    double *pt = NULL;
    double *g = malloc((k * n + 1) * sizeof *g), *h = malloc((k * n + 1) * sizeof *h);
    int *cols = malloc((k + 1) * sizeof *cols), *all = malloc((k + 1) * sizeof *all);
    int rc = 0, solved = 0, iv;
    if (!g || !h || !cols || !all) goto oom;
    if ((iv = initial_velocities(mf, v0)) == -2) goto oom;
    solved = iv == 0;
    if (!solved) {
        /* the given values (initial_velocities left them in v0) */
        if (!(pt = ch_manifold_initial_point(mf))) goto oom;
        if (scaled_jacobian(mf, pt, g)) goto out;
        memcpy(h, g, k * n * sizeof *h);
        /* the tool's choice may be singular there, where Newton cannot
         * start: choose there, then solve */
        size_t r = m->ndep ? k : pivot_columns(mf, h, mf->is_dep, cols), r_all = 0;
        if (r < k) {
            memcpy(h, g, k * n * sizeof *h);
            r_all = pivot_columns(mf, h, NULL, all);
        }
        if (r > k || r_all > k) goto oom;
        if (r < k && r_all == k) {
            set_choice(mf, all);
            if ((iv = initial_velocities(mf, v0)) == -2) goto oom;
            solved = iv == 0;
        }
        free(pt);
        pt = NULL;
    }
    if (!(pt = ch_manifold_initial_point(mf))) goto oom;
    if (scaled_jacobian(mf, pt, g)) goto out;
    memcpy(h, g, k * n * sizeof *h);
    size_t rank = pivot_columns(mf, h, mf->is_dep, cols);
    if (rank > k) goto oom;
    if (rank == k) goto out;
    memcpy(h, g, k * n * sizeof *h);
    size_t rank_all = pivot_columns(mf, h, NULL, all);
    if (rank_all > k) goto oom;
    if (rank_all < k) goto out; /* no choice is regular there */
    if (m->ndep) {
        rc = singular_at_initial(mf, rank, all, err);
        goto out;
    }
    set_choice(mf, all);
    if ((iv = initial_velocities(mf, v0)) == -2) goto oom;
    solved = iv == 0;
    goto out;
oom:
    rc = ch_error_set(err, CH_ERR_MEMORY, m->file, 0, 0, "out of memory");
out:
    if (!solved) mf->v0 = NULL;
    if (!rc && solved) {
        int sign = pt || (pt = ch_manifold_initial_point(mf)) ? block_sign(mf, pt) : 2;
        if (sign == 2) rc = ch_error_set(err, CH_ERR_MEMORY, m->file, 0, 0, "out of memory");
        else mf->dep_sign = sign;
    }
    free(pt);
    free(g);
    free(h);
    free(cols);
    free(all);
    return rc;
}
