/* audit.c — the `check` audit (THEORY §3, §6, §7).
 *
 * Every verdict is the zero test of a rate dF/dt with the constraint
 * manifold sampler, so "conserved" means "zero on motions", never "zero
 * off the constraint": a momentum kept only by the reaction annihilator
 * (R.Y = 0 on the manifold although the constraints could push along Y)
 * is conserved, and the report says so. Maxima come from our own sampling
 * of the manifold (a fixed seed, so reports are reproducible) because the
 * zero test stops at its first witness. */
#include "mech/audit.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/buf.h"
#include "core/diff.h"
#include "core/matrix.h"
#include "core/simplify.h"

#define AUDIT_POINTS 8
#define AUDIT_PREC 256
/* ch_simplify expands: only for small expressions (as in chetaev.c). */
#define SIMPLIFY_MAX_NODES 400
/* Sampling attempts per wanted point (Newton may fail at some). */
#define AUDIT_TRIES 4

typedef ch_audit_quantity quantity;

const char *ch_audit_kind_name(ch_audit_kind k)
{
    static const char *names[] = {"energy", "frame_energy", "momentum",
                                  "field", "integral"};
    return names[k];
}

static int fail(ch_ctx *ctx, const ch_model *m, ch_error *err)
{
    return ch_ctx_report(ctx, err, m->file, 0, 0, NULL, 0);
}

/* ======================================================================
 * maxima on the constraint manifold
 * ====================================================================== */

/* 1 once the hooks' time budget is spent (h may be NULL). */
static int out_of_time(const ch_audit_hooks *h)
{
    return h && h->stop && h->stop(h->ctx);
}

/* The hooks' progress after the a->nq-th quantity (name) was decided. */
static void progress(const ch_audit *a, const char *name)
{
    if (a->hooks && a->hooks->progress) a->hooks->progress(a->hooks->ctx, a->nq, name);
}

/* max[j] = largest |e[j]| (ball midpoint) over `points` random points of
 * the manifold (e[j] NULL: skipped, max -1), fewer once h's time budget
 * is spent (h may be NULL). Returns the points used. */
static int manifold_max(ch_ctx *ctx, const ch_manifold *mf, size_t ne,
                        const ch_expr *const *e, int points, double *max,
                        const ch_audit_hooks *h)
{
    size_t ns = ch_ctx_nsyms(ctx);
    arb_struct *sv = _arb_vec_init((slong)(ns ? ns : 1));
    arb_t v;
    arb_init(v);
    flint_rand_t rnd;
    flint_randinit(rnd);
    flint_randseed(rnd, 0x6A09E667F3BCC908UL, 0xB5C0FBCFEC4D3B2FUL);
    for (size_t j = 0; j < ne; j++) max[j] = e[j] ? 0 : -1;
    int used = 0;
    for (int tries = 0; used < points && tries < AUDIT_TRIES * points; tries++) {
        if (used && out_of_time(h)) break;
        for (size_t s = 0; s < ns; s++)
            arb_set_d(sv + s, 4.0 * (double)n_randint(rnd, 1u << 20)
                                  / (double)(1u << 20) - 2.0);
        if (ch_manifold_sample((void *)mf, rnd, sv, AUDIT_PREC)) continue;
        used++;
        for (size_t j = 0; j < ne; j++) {
            if (!e[j] || ch_eval_arb(ctx, v, e[j], sv, AUDIT_PREC)) continue;
            double d = fabs(arf_get_d(arb_midref(v), ARF_RND_NEAR));
            if (isfinite(d) && d > max[j]) max[j] = d;
        }
    }
    arb_clear(v);
    flint_randclear(rnd);
    _arb_vec_clear(sv, (slong)(ns ? ns : 1));
    return used;
}

static int verdict_of(ch_zero_verdict v)
{
    return v == CH_ZERO_YES ? 1 : v == CH_ZERO_NO ? 0 : -1;
}

static ch_zero_verdict on_manifold(ch_ctx *ctx, const ch_manifold *mf,
                                   const ch_expr *e, ch_zero_result *z)
{
    ch_zero_result r = ch_zero_test(ctx, e, ch_manifold_sample, (void *)mf,
                                    AUDIT_POINTS);
    if (z) *z = r;
    return r.verdict;
}

/* Identically zero in (t, q, q_t, ...), off the manifold too. */
static ch_zero_verdict identically(ch_ctx *ctx, const ch_expr *e)
{
    return ch_zero_test(ctx, e, NULL, NULL, AUDIT_POINTS).verdict;
}

/* ======================================================================
 * small symbolic helpers
 * ====================================================================== */

/* sum_i a[i] b[i] (a or b entries may be 0 nodes). */
static const ch_expr *dot(ch_ctx *ctx, size_t n, const ch_expr *const *a,
                          const ch_expr *const *b)
{
    const ch_expr **t = ch_mat_new(ctx, n + 1, 1);
    if (!t) return NULL;
    for (size_t i = 0; i < n; i++) t[i] = ch_mul(ctx, a[i], b[i]);
    return n ? ch_add_n(ctx, n, t) : ch_zero(ctx);
}

/* Y^TQ(L) = Y_i dL/dq_i + q_t_j dY_i/dq_j p_i (THEORY §6). */
static const ch_expr *lie_derivative(ch_ctx *ctx, const ch_mechanics *d,
                                     const ch_expr *const *Y)
{
    const ch_model *m = d->model;
    size_t n = m->n;
    const ch_expr **t = ch_mat_new(ctx, n * (n + 1) + 1, 1);
    if (!t) return NULL;
    size_t nt = 0;
    for (size_t i = 0; i < n; i++) {
        t[nt++] = ch_mul(ctx, Y[i], ch_diff(ctx, m->lagrangian, m->q[i]));
        for (size_t j = 0; j < n; j++)
            t[nt++] = ch_mul(ctx, ch_mul(ctx, m->qt[j], ch_diff(ctx, Y[i], m->q[j])),
                             d->lag.p[i]);
    }
    return ch_add_n(ctx, nt, t);
}

/* G Y == 0 identically: the constraints cannot push along Y. */
static int in_distribution(ch_ctx *ctx, const ch_mechanics *d,
                           const ch_expr *const *Y)
{
    size_t n = d->model->n, k = d->lag.k;
    int res = 1;
    for (size_t a = 0; a < k && res == 1; a++) {
        const ch_expr *gy = dot(ctx, n, d->lag.G + a * n, Y);
        if (!gy) return -1;
        res = verdict_of(identically(ctx, gy));
    }
    return res;
}

/* The normal form of a small expression, so that xi reads well and has no
 * velocities that cancel only after expansion; e itself otherwise. */
static const ch_expr *tidy(ch_ctx *ctx, const ch_expr *e)
{
    if (!e || ch_dag_size_capped(e, SIMPLIFY_MAX_NODES) > SIMPLIFY_MAX_NODES) return e;
    const ch_expr *s = ch_simplify(ctx, e);
    if (!s) ch_ctx_clear_error(ctx);
    return s ? s : e;
}

/* ======================================================================
 * affine constraints and the frame xi
 * ====================================================================== */

/* Every constraint has velocity-free Chetaev coefficients. */
static int constraints_affine(ch_ctx *ctx, const ch_mechanics *d)
{
    const ch_lagrange *L = &d->lag;
    const ch_model *m = d->model;
    size_t n = d->model->n;
    for (size_t a = 0; a < L->k; a++)
        for (size_t i = 0; i < n; i++) {
            const ch_expr *g = L->G[a * n + i];
            if (!ch_has_sym_kind(g, CH_SYM_VEL)) continue;
            for (size_t j = 0; j < n; j++) {
                const ch_expr *dd = ch_diff(ctx, g, m->qt[j]);
                if (!dd || identically(ctx, dd) != CH_ZERO_YES) return 0;
            }
        }
    return L->k > 0;
}

/* s_a = phi_a - G_a.q_t; 1 when every s_a == 0, 0 if not, -1 on failure. */
static int affine_parts(ch_ctx *ctx, const ch_mechanics *d, const ch_expr **s)
{
    size_t n = d->model->n;
    int all_zero = 1;
    for (size_t a = 0; a < d->lag.k; a++) {
        s[a] = tidy(ctx, ch_sub(ctx, d->lag.phi[a],
                                dot(ctx, n, d->lag.G + a * n, d->model->qt)));
        if (!s[a]) return -1;
        if (identically(ctx, s[a]) != CH_ZERO_YES) all_zero = 0;
    }
    return all_zero;
}

/* S Y + s == 0 identically. */
static int field_solves(ch_ctx *ctx, const ch_mechanics *d,
                        const ch_expr *const *Y, const ch_expr *const *s)
{
    size_t n = d->model->n;
    for (size_t a = 0; a < d->lag.k; a++) {
        const ch_expr *r = ch_add(ctx, dot(ctx, n, d->lag.G + a * n, Y), s[a]);
        if (!r || identically(ctx, r) != CH_ZERO_YES) return 0;
    }
    return 1;
}

/* xi = -S^T (S S^T)^-1 s. Returns 0, or -1 (singular or failure). */
static int least_squares_xi(ch_ctx *ctx, const ch_mechanics *d,
                            const ch_expr *const *s, const ch_expr **xi)
{
    size_t n = d->model->n, k = d->lag.k;
    const ch_expr *const *S = d->lag.G;
    const ch_expr **A = ch_mat_new(ctx, k, k), **w = ch_mat_new(ctx, k, 1);
    const ch_expr **col = ch_mat_new(ctx, k, 1);
    if (!A || !w || !col) return -1;
    for (size_t a = 0; a < k; a++)
        for (size_t b = 0; b < k; b++)
            if (!(A[a * k + b] = dot(ctx, n, S + a * n, S + b * n))) return -1;
    if (ch_mat_solve(ctx, k, A, 1, s, w)) return -1;
    for (size_t i = 0; i < n; i++) {
        for (size_t a = 0; a < k; a++) col[a] = S[a * n + i];
        if (!(xi[i] = tidy(ctx, ch_neg(ctx, dot(ctx, k, col, w))))) return -1;
    }
    return 0;
}

/* Chooses xi (THEORY §6): 0 for linear constraints, a declared field
 * solving S Y + s = 0, else least squares. */
static int choose_xi(ch_ctx *ctx, const ch_mechanics *d, ch_audit *a)
{
    size_t n = d->model->n, k = d->lag.k;
    const ch_model *m = d->model;
    const ch_expr **s = ch_mat_new(ctx, k, 1);
    a->xi = ch_mat_new(ctx, n, 1);
    if (!s || !a->xi) return -1;
    int lin = affine_parts(ctx, d, s);
    if (lin < 0) return -1;
    if (lin) {
        for (size_t i = 0; i < n; i++) a->xi[i] = ch_zero(ctx);
        a->xi_source = "zero";
        return 0;
    }
    for (size_t f = 0; f < m->nfields; f++)
        if (field_solves(ctx, d, m->fields[f].comp, s)) {
            for (size_t i = 0; i < n; i++) a->xi[i] = m->fields[f].comp[i];
            a->xi_source = "field";
            a->xi_field = m->fields[f].name;
            return 0;
        }
    a->xi_source = "least squares";
    return least_squares_xi(ctx, d, s, a->xi);
}

/* ======================================================================
 * reasons
 * ====================================================================== */

/* "(x = .., y = .., x' = ..)" of a witness point. */
static void append_point(char *buf, size_t size, const ch_model *m,
                         const double *w)
{
    ch_str_append(buf, size, " at (t = %.4g%s", w[ch_sym_of(m->t)->sid], m->n ? ", " : "");
    ch_model_point_append(m, w, buf, size);
    ch_str_append(buf, size, ")");
}

/* The verdict sentence of the rate test. */
static void append_verdict(char *buf, size_t size, ch_ctx *ctx,
                           const ch_model *m, const quantity *q)
{
    const ch_zero_result *z = &q->test;
    if (q->skipped) {
        ch_str_append(buf, size, "not decided: the time limit of check (--time-limit) "
                      "was reached first");
    } else if (z->verdict == CH_ZERO_YES) {
        if (z->symbolic) ch_str_append(buf, size, "dF/dt is identically 0");
        else ch_str_append(buf, size, "dF/dt = 0 at %d random points of the "
                               "constraint manifold", z->points);
    } else if (z->verdict == CH_ZERO_NO) {
        if (z->have_witness) {
            ch_str_append(buf, size, "dF/dt = %.6g", ch_eval_d(ctx, q->rate, z->witness));
            append_point(buf, size, m, z->witness);
        } else {
            ch_str_append(buf, size, "dF/dt != 0 on the constraint manifold");
        }
    } else {
        ch_str_append(buf, size, "undecided (%d points of the constraint manifold)",
               z->points);
    }
}

/* ======================================================================
 * quantities
 * ====================================================================== */

/* Decides q->rate and fills maxima: extra[0] is the reaction term;
 * nothing once the hooks' time budget is spent (q->skipped). */
static void decide(ch_ctx *ctx, ch_audit *a, quantity *q, const ch_expr *reaction,
                   int *points)
{
    const ch_mechanics *d = a->d;
    if (out_of_time(a->hooks)) {
        q->skipped = 1;
        a->skipped++;
        q->verdict = -1;
        q->test.verdict = CH_ZERO_UNKNOWN;
        q->max_rate = NAN;
        q->reaction_power_max = -1;
        *points = 0;
        return;
    }
    const ch_expr *e[2] = {q->rate, reaction};
    double mx[2];
    *points = manifold_max(ctx, &d->mf, 2, e, AUDIT_POINTS, mx, a->hooks);
    q->verdict = verdict_of(on_manifold(ctx, &d->mf, q->rate, &q->test));
    if (q->test.verdict == CH_ZERO_YES && q->test.symbolic) q->max_rate = 0;
    else q->max_rate = fmax(q->test.max_abs, mx[0] < 0 ? 0 : mx[0]);
    q->reaction_power_max = reaction ? mx[1] : -1;
    ch_ctx_clear_error(ctx);
    progress(a, q->name);
}

static quantity *push(ch_audit *a, const char *name, ch_audit_kind kind)
{
    quantity *q = &a->q[a->nq++];
    memset(q, 0, sizeof *q);
    q->name = name;
    q->kind = kind;
    q->lie_zero = -1;
    q->lie_max = -1;
    q->in_distribution = -1;
    q->reaction_power_max = -1;
    return q;
}

static int add_energy(ch_ctx *ctx, const ch_mechanics *d, ch_audit *a)
{
    quantity *q = push(a, "E", CH_AUDIT_ENERGY);
    q->F = d->lag.energy;
    q->rate = d->chet.energy_balance;
    const ch_expr *power = dot(ctx, d->model->n, d->chet.R, d->model->qt);
    if (!power) return -1;
    const ch_expr *e[2] = {q->rate, power};
    double mx[2] = {0, -1};
    /* the verdict is the derivation's; the maxima only within the budget */
    if (!out_of_time(a->hooks))
        a->points = manifold_max(ctx, &d->mf, 2, e, AUDIT_POINTS, mx, a->hooks);
    progress(a, q->name);
    q->verdict = d->chet.energy_conserved;
    q->test = d->chet.energy_test;
    q->max_rate = q->test.verdict == CH_ZERO_YES && q->test.symbolic
                      ? 0 : fmax(q->test.max_abs, mx[0]);
    q->reaction_power_max = mx[1];
    char why[640] = "";
    ch_str_append(why, sizeof why, "%s", d->chet.energy_reason);
    if (a->affine && a->xi_source && strcmp(a->xi_source, "zero"))
        ch_str_append(why, sizeof why, "; on the constraint manifold dE/dt = R.xi "
               "+ Q.q' - dL/dt, largest |lambda.(G q')| = %.3g",
               q->reaction_power_max);
    q->reason = ch_ctx_strdup(ctx, why);
    return q->reason ? 0 : -1;
}

static int add_frame_energy(ch_ctx *ctx, const ch_mechanics *d, ch_audit *a)
{
    const ch_model *m = d->model;
    size_t n = d->model->n;
    quantity *q = push(a, "T_xi", CH_AUDIT_FRAME_ENERGY);
    const ch_expr **rel = ch_mat_new(ctx, n, 1);
    if (!rel) return -1;
    for (size_t i = 0; i < n; i++) rel[i] = ch_sub(ctx, m->qt[i], a->xi[i]);
    q->F = ch_sub(ctx, dot(ctx, n, d->lag.p, rel), m->lagrangian);
    q->rate = ch_diff_t(ctx, q->F);
    const ch_expr *rxi = dot(ctx, n, d->chet.R, a->xi);
    if (!q->rate || !rxi) return -1;
    int pts;
    decide(ctx, a, q, rxi, &pts);
    char why[640] = "";
    if (!strcmp(a->xi_source, "field"))
        ch_str_append(why, sizeof why, "xi = field %s (S xi + s = 0): ", a->xi_field);
    else if (!strcmp(a->xi_source, "zero"))
        ch_str_append(why, sizeof why, "xi = 0 (linear constraints, T_xi = E): ");
    else
        ch_str_append(why, sizeof why, "xi = -S^T (S S^T)^-1 s (least squares): ");
    append_verdict(why, sizeof why, ctx, m, q);
    ch_str_append(why, sizeof why, "; largest |R.xi| = %.3g", q->reaction_power_max);
    q->reason = ch_ctx_strdup(ctx, why);
    return q->reason ? 0 : -1;
}

static int add_momenta(ch_ctx *ctx, const ch_mechanics *d, ch_audit *a)
{
    const ch_model *m = d->model;
    size_t n = d->model->n;
    const ch_expr **e = ch_mat_new(ctx, n, 1);
    if (!e) return -1;
    for (size_t i = 0; i < n; i++) {
        if (ch_has_sym(m->lagrangian, m->q[i])) continue;
        char name[CH_MAX_IDENT_LEN + 8];
        snprintf(name, sizeof name, "p_%s", ch_sym_of(m->q[i])->name);
        quantity *q = push(a, ch_ctx_strdup(ctx, name), CH_AUDIT_MOMENTUM);
        if (!q->name) return -1;
        q->F = d->lag.p[i];
        /* dp_i/dt = dL/dq_i + Q_i + R_i on motions, dL/dq_i == 0 */
        q->rate = ch_add(ctx, d->lag.Q[i], d->chet.R[i]);
        for (size_t j = 0; j < n; j++) e[j] = ch_num_si(ctx, i == j);
        if (!q->rate) return -1;
        q->in_distribution = in_distribution(ctx, d, e);
        int pts;
        decide(ctx, a, q, d->chet.R[i], &pts);
        char why[640] = "";
        ch_str_append(why, sizeof why, "%s is cyclic, dp/dt = Q_%s + R_%s: ",
               ch_sym_of(m->q[i])->name, ch_sym_of(m->q[i])->name, ch_sym_of(m->q[i])->name);
        append_verdict(why, sizeof why, ctx, m, q);
        if (q->verdict == 1 && d->lag.k) {
            if (q->in_distribution == 1)
                ch_str_append(why, sizeof why, "; the constraints cannot act along %s",
                       ch_sym_of(m->q[i])->name);
            else if (q->reaction_power_max >= 0)
                ch_str_append(why, sizeof why, "; R_%s = 0 on the constraint manifold "
                       "although the constraints can act along %s (reaction "
                       "annihilator)", ch_sym_of(m->q[i])->name, ch_sym_of(m->q[i])->name);
        }
        q->reason = ch_ctx_strdup(ctx, why);
        if (!q->reason) return -1;
    }
    return 0;
}

static int add_field(ch_ctx *ctx, const ch_mechanics *d, ch_audit *a,
                     const ch_field *f)
{
    const ch_model *m = d->model;
    size_t n = d->model->n;
    char name[CH_MAX_IDENT_LEN + 8];
    snprintf(name, sizeof name, "p.%s", f->name);
    quantity *q = push(a, ch_ctx_strdup(ctx, name), CH_AUDIT_FIELD);
    if (!q->name) return -1;
    q->F = dot(ctx, n, d->lag.p, f->comp);
    q->rate = ch_diff_t(ctx, q->F);
    const ch_expr *ry = dot(ctx, n, d->chet.R, f->comp);
    const ch_expr *lie = lie_derivative(ctx, d, f->comp);
    const ch_expr *qy = dot(ctx, n, d->lag.Q, f->comp);
    if (!q->rate || !ry || !lie || !qy) return -1;
    int pts;
    decide(ctx, a, q, ry, &pts);
    double mx;
    manifold_max(ctx, &d->mf, 1, &lie, AUDIT_POINTS, &mx, a->hooks);
    q->lie_max = mx;
    q->lie_zero = verdict_of(identically(ctx, lie));
    q->in_distribution = in_distribution(ctx, d, f->comp);
    int ry_zero = verdict_of(on_manifold(ctx, &d->mf, ry, NULL));
    int qy_zero = verdict_of(identically(ctx, qy));
    ch_ctx_clear_error(ctx);

    char why[900] = "";
    append_verdict(why, sizeof why, ctx, m, q);
    ch_str_append(why, sizeof why, "; Y^TQ(L) %s", q->lie_zero == 1 ? "= 0 (L invariant along Y)"
                                         : q->lie_zero == 0 ? "!= 0" : "undecided");
    if (q->lie_zero != 1) ch_str_append(why, sizeof why, " (largest %.3g)", q->lie_max);
    if (!d->lag.k)
        ch_str_append(why, sizeof why, "; no constraints");
    else if (q->in_distribution == 1)
        ch_str_append(why, sizeof why, "; S Y = 0: Y lies in the constraint "
                                "distribution, R.Y = 0 identically");
    else if (ry_zero == 1)
        ch_str_append(why, sizeof why, "; R.Y = 0 on the constraint manifold although "
                                "S Y != 0: Y is a section of the reaction "
                                "annihilator, not of the constraint distribution");
    else
        ch_str_append(why, sizeof why, "; R.Y %s on the constraint manifold (largest "
               "|R.Y| = %.3g)", ry_zero == 0 ? "!= 0" : "undecided",
               q->reaction_power_max);
    if (qy_zero != 1) ch_str_append(why, sizeof why, "; Q.Y != 0");
    q->reason = ch_ctx_strdup(ctx, why);
    return q->reason ? 0 : -1;
}

static int add_integral(ch_ctx *ctx, const ch_mechanics *d, ch_audit *a,
                        const ch_named_expr *ig)
{
    quantity *q = push(a, ig->name, CH_AUDIT_INTEGRAL);
    q->F = ig->expr;
    q->rate = ch_diff_t(ctx, q->F);
    if (!q->rate) return -1;
    int pts;
    decide(ctx, a, q, NULL, &pts);
    char why[640] = "";
    append_verdict(why, sizeof why, ctx, d->model, q);
    q->reason = ch_ctx_strdup(ctx, why);
    return q->reason ? 0 : -1;
}

int ch_audit_run(ch_ctx *ctx, const ch_mechanics *d, const ch_audit_hooks *hooks,
                 ch_audit *out, ch_error *err)
{
    const ch_model *m = d->model;
    ch_audit a;
    memset(&a, 0, sizeof a);
    a.d = d;
    a.hooks = hooks;
    size_t cap = 2 + d->model->n + m->nfields + m->nintegrals;
    a.q = ch_ctx_alloc(ctx, cap * sizeof *a.q);
    if (!a.q) return ch_error_set(err, CH_ERR_MEMORY, m->file, 0, 0, "out of memory");
    a.affine = constraints_affine(ctx, d);
    ch_ctx_clear_error(ctx);
    if (a.affine && choose_xi(ctx, d, &a)) return fail(ctx, m, err);
    if (add_energy(ctx, d, &a)) return fail(ctx, m, err);
    if (a.affine && add_frame_energy(ctx, d, &a)) return fail(ctx, m, err);
    if (add_momenta(ctx, d, &a)) return fail(ctx, m, err);
    for (size_t f = 0; f < m->nfields; f++)
        if (add_field(ctx, d, &a, &m->fields[f])) return fail(ctx, m, err);
    for (size_t i = 0; i < m->nintegrals; i++)
        if (add_integral(ctx, d, &a, &m->integrals[i])) return fail(ctx, m, err);
    *out = a;
    return 0;
}
