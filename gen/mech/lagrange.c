/* lagrange.c — momenta, mass matrix, Euler–Lagrange terms, energy and the
 * constraint data (THEORY §1–§2).
 *
 * E_i is computed as the total time derivative of p_i minus dL/dq_i, the
 * definition in 000 eq. 27-29; M and h are computed separately from their
 * own formulas, so the identity E = M q_tt + h is a real check (tested). */
#include "mech/lagrange.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/buf.h"
#include "core/diff.h"
#include "core/matrix.h"
#include "core/simplify.h"

/* Points at which ranks are sampled: enough that a generic matrix shows
 * full rank at one of them with overwhelming probability. */
#define RANK_POINTS 6

static int ctx_failed(ch_ctx *ctx, ch_error *err, const ch_model *m, ch_pos pos)
{
    return ch_ctx_report(ctx, err, m->file, pos.line, pos.col, NULL, 1);
}

/* (lagrange.h) h_i needs V p_i = dp_i/dt + q_t_j dp_i/dq_j; one memoized
 * pass over p_i costs one visit per node, where the n partial derivatives
 * cost n visits of every node that contains all the coordinates (each p_i
 * of a chain), O(n^3) in all. */
int ch_lagrange_drift(ch_ctx *ctx, const ch_model *m, ch_diff_dir *v)
{
    size_t n = m->n;
    const ch_expr **syms = ch_mat_new(ctx, n + 1, 1), **dirs = ch_mat_new(ctx, n + 1, 1);
    if (!syms || !dirs) return -1;
    for (size_t j = 0; j < n; j++) {
        syms[j] = m->q[j];
        dirs[j] = m->qt[j];
    }
    syms[n] = m->t;
    dirs[n] = ch_one(ctx);
    return ch_diff_dir_init(ctx, v, n + 1, syms, dirs);
}

/* M = dp/dq_t is symmetric (M_ij = d2L/dq_t_i dq_t_j): the upper triangle
 * is differentiated and mirrored, half the derivatives. */
static const ch_expr **mass_matrix(ch_ctx *ctx, const ch_model *m,
                                   const ch_expr *const *p)
{
    size_t n = m->n;
    const ch_expr **M = ch_mat_new(ctx, n, n);
    if (!M || ch_diff_symmetric(ctx, n, p, m->qt, M)) return NULL;
    return M;
}

static int derive_unconstrained(ch_ctx *ctx, const ch_model *m, ch_lagrange *L)
{
    size_t n = m->n;
    const ch_expr *Lg = m->lagrangian;
    L->p = ch_mat_new(ctx, n, 1);
    L->h = ch_mat_new(ctx, n, 1);
    L->Q = ch_mat_new(ctx, n, 1);
    const ch_expr **terms = ch_mat_new(ctx, n + 1, 1);
    ch_diff_dir drift;
    if (!L->p || !L->h || !L->Q || !terms) return -1;
    for (size_t i = 0; i < n; i++) {
        L->p[i] = ch_diff(ctx, Lg, m->qt[i]);
        L->Q[i] = m->force[i];
    }
    if (!(L->M = mass_matrix(ctx, m, L->p))) return -1;
    if (ch_lagrange_drift(ctx, m, &drift)) return -1;
    for (size_t i = 0; i < n; i++) {
        /* h_i = d2L/dq_t_i dq_j q_t_j + d2L/dq_t_i dt - dL/dq_i */
        L->h[i] = ch_sub(ctx, ch_diff_dir_apply(ctx, &drift, L->p[i]),
                         ch_diff(ctx, Lg, m->q[i]));
        if (!L->h[i]) return -1;
    }
    for (size_t i = 0; i < n; i++) terms[i] = ch_mul(ctx, m->qt[i], L->p[i]);
    terms[n] = ch_neg(ctx, Lg);
    L->energy = ch_add_n(ctx, n + 1, terms);
    return L->energy ? 0 : -1;
}

int ch_lagrange_euler(ch_ctx *ctx, const ch_model *m, ch_lagrange *L)
{
    if (L->EL) return 0;
    const ch_expr **EL = ch_mat_new(ctx, L->n, 1);
    if (!EL) return -1;
    for (size_t i = 0; i < L->n; i++)
        if (!(EL[i] = ch_sub(ctx, ch_diff_t(ctx, L->p[i]),
                             ch_diff(ctx, m->lagrangian, m->q[i]))))
            return -1;
    L->EL = EL;
    return 0;
}

static int derive_constraints(ch_ctx *ctx, const ch_model *m, ch_lagrange *L)
{
    size_t n = m->n, k = m->k;
    L->phi = m->constraint;
    L->c = ch_mat_new(ctx, k, 1);
    const ch_expr **terms = ch_mat_new(ctx, n + 1, 1);
    if (!L->c || !terms) return -1;
    if (!(L->G = ch_jacobian(ctx, k, L->phi, n, m->qt))) return -1;
    /* a trailer axle's pivot -d*sin(th)^2 - d*cos(th)^2 becomes -d and its
     * other entries -d*(...), so the triangular solve's quotients cancel
     * d instead of dividing every alpha, L*, H* and emitted kernel by
     * d*sin(th)^2 + d*cos(th)^2 */
    for (size_t i = 0; i < k * n; i++)
        if (!(L->G[i] = ch_common_factor(ctx, ch_simplify_trig_squares(ctx, L->G[i]))))
            return -1;
    /* the bias is shown: its sum of q_t_j dphi/dq_j is the form printed
     * (each derivative of phi is by a coordinate phi mostly lacks, cheap) */
    for (size_t a = 0; a < k; a++) {
        for (size_t j = 0; j < n; j++)
            terms[j] = ch_mul(ctx, ch_diff(ctx, L->phi[a], m->q[j]), m->qt[j]);
        terms[n] = ch_diff(ctx, L->phi[a], m->t);
        if (!(L->c[a] = ch_add_n(ctx, n + 1, terms))) return -1;
    }
    return 0;
}

void ch_model_point_fill(const ch_model *m, const double *q, const double *qt, double *v)
{
    v[ch_sym_of(m->t)->sid] = 0;
    for (size_t i = 0; i < m->n; i++) {
        v[ch_sym_of(m->q[i])->sid] = q[i];
        v[ch_sym_of(m->qt[i])->sid] = qt[i];
    }
    for (size_t j = 0; j < m->np; j++) v[ch_sym_of(m->param[j])->sid] = m->param_default[j];
}

const double *ch_model_point(ch_ctx *ctx, const ch_model *m)
{
    size_t ns = ch_ctx_nsyms(ctx);
    double *v = ch_ctx_alloc(ctx, (ns ? ns : 1) * sizeof *v);
    if (!v) return NULL;
    for (size_t s = 0; s < ns; s++) v[s] = NAN;
    ch_model_point_fill(m, m->q0, m->qt0, v);
    return v;
}

void ch_model_point_append(const ch_model *m, const double *w, char *buf, size_t size)
{
    for (size_t i = 0; i < 2 * m->n; i++) {
        const ch_expr *s = i < m->n ? m->q[i] : m->qt[i - m->n];
        ch_str_append(buf, size, "%s%s%s = %.4g", i ? ", " : "",
                      ch_sym_of(m->q[i % m->n])->name, i < m->n ? "" : "'",
                      w[ch_sym_of(s)->sid]);
    }
}

/* Whether the rows x n matrix a has full rank, decided in ball arithmetic
 * (ch_ball_rank); otherwise an error at pos: what (e.g. "the mass
 * matrix d2L/dq'dq'") with the evidence. */
static int full_rank(ch_ctx *ctx, const ch_model *m, size_t rows, const ch_expr *const *a,
                     const double *at, ch_pos pos, const char *kind, const char *what,
                     ch_error *err)
{
    ch_rank_info ri;
    int f = ch_full_rank(ctx, rows, m->n, a, at, RANK_POINTS, &ri);
    if (f < 0) return ch_error_set(err, CH_ERR_MEMORY, NULL, 0, 0, "out of memory");
    if (f) return 0;
    if (ri.deficient) {
        char pt[320] = "";
        ch_model_point_append(m, ri.witness, pt, sizeof pt);
        return ch_error_set(err, CH_ERR_MODEL, m->file, pos.line, pos.col,
                            "%s: %s has rank %d < %zu at each of the %d points tried "
                            "(ball arithmetic), e.g. at %s", kind, what, ri.rank, rows,
                            ri.evaluated, pt);
    }
    if (!ri.evaluated)
        return ch_error_set(err, CH_ERR_MODEL, m->file, pos.line, pos.col,
                            "%s: %s is undefined at the initial state and at the %d "
                            "other points tried (a square root or logarithm of a "
                            "negative number, a division by 0): give an `initial` "
                            "state where it is defined", kind, what, RANK_POINTS);
    return ch_error_set(err, CH_ERR_MODEL, m->file, pos.line, pos.col,
                        "%s: %s could not be shown to have full rank %zu at any of "
                        "%d points (rank %d proven, ball arithmetic up to 1024 bits)",
                        kind, what, rows, ri.evaluated, ri.rank);
}

/* Names the first constraint whose row makes the Jacobian rank-deficient
 * (only on failure: the search is quadratic in k). */
static int inadmissible(ch_ctx *ctx, const ch_model *m, const ch_lagrange *L,
                        const double *at, ch_error *err)
{
    ch_rank_info ri;
    int f = ch_full_rank(ctx, m->k, m->n, L->G, at, RANK_POINTS, &ri);
    if (f < 0) return ch_error_set(err, CH_ERR_MEMORY, NULL, 0, 0, "out of memory");
    if (f) return 0;
    /* the first rows that are not: their last constraint is named */
    for (size_t j = 1; j <= m->k; j++) {
        char what[160];
        snprintf(what, sizeof what, "the Jacobian of constraint %zu and those before it "
                 "with respect to the velocities", j);
        if (full_rank(ctx, m, j, L->G, at, m->constraint_pos[j - 1],
                      "inadmissible constraints", what, err))
            return err->code;
    }
    return 0;
}

int ch_lagrange_derive(ch_ctx *ctx, const ch_model *m, ch_lagrange *out,
                       ch_error *err)
{
    ch_lagrange L = {0};
    L.n = m->n;
    L.k = m->k;
    if (derive_unconstrained(ctx, m, &L))
        return ctx_failed(ctx, err, m, m->lagrangian_pos);
    const double *at = ch_model_point(ctx, m);
    if (!at) return ch_error_set(err, CH_ERR_MEMORY, NULL, 0, 0, "out of memory");
    if (full_rank(ctx, m, m->n, L.M, at, m->lagrangian_pos, "degenerate Lagrangian",
                  "the mass matrix d2L/dq'dq'", err))
        return err->code;
    if (derive_constraints(ctx, m, &L))
        return ctx_failed(ctx, err, m, m->k ? m->constraint_pos[0] : m->lagrangian_pos);
    if (m->k && inadmissible(ctx, m, &L, at, err)) return err->code;
    *out = L;
    return 0;
}
