/* lagrange.c — momenta, mass matrix, Euler–Lagrange terms, energy and the
 * constraint data (THEORY §1–§2).
 *
 * E_i is computed as the total time derivative of p_i minus dL/dq_i, the
 * definition in 000 eq. 27-29; M and h are computed separately from their
 * own formulas, so the identity E = M q_tt + h is a real check (tested). */
#include "lagrange.h"

#include "../diff.h"
#include "../matrix.h"
#include "../simplify.h"

/* Points at which ranks are sampled: enough that a generic matrix shows
 * full rank at one of them with overwhelming probability. */
#define RANK_POINTS 6

static int ctx_failed(ch_ctx *ctx, ch_error *err, const ch_model *m, ch_pos pos)
{
    const ch_error *e = ch_ctx_error(ctx);
    return ch_error_set(err, e->code == CH_ERR_LIMIT ? CH_ERR_LIMIT : CH_ERR_MODEL,
                        m->file, pos.line, pos.col, "%s", e->msg);
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

/* Names the first constraint whose row makes the Jacobian rank-deficient
 * (only on failure: the search is quadratic in k). */
static int inadmissible(ch_ctx *ctx, const ch_model *m, const ch_lagrange *L,
                        ch_error *err)
{
    size_t bad = m->k - 1;
    for (size_t j = 1; j <= m->k; j++)
        if (ch_numeric_rank(ctx, j, m->n, L->G, RANK_POINTS) < (int)j) {
            bad = j - 1;
            break;
        }
    return ch_error_set(err, CH_ERR_MODEL, m->file, m->constraint_pos[bad].line,
                        m->constraint_pos[bad].col,
                        "inadmissible constraints: the Jacobian of constraint "
                        "%zu and those before it with respect to the "
                        "velocities is rank-deficient everywhere",
                        bad + 1);
}

int ch_lagrange_derive(ch_ctx *ctx, const ch_model *m, ch_lagrange *out,
                       ch_error *err)
{
    ch_lagrange L = {0};
    L.n = m->n;
    L.k = m->k;
    if (derive_unconstrained(ctx, m, &L))
        return ctx_failed(ctx, err, m, m->lagrangian_pos);
    if (ch_numeric_rank(ctx, m->n, m->n, L.M, RANK_POINTS) < (int)m->n)
        return ch_error_set(err, CH_ERR_MODEL, m->file, m->lagrangian_pos.line,
                            m->lagrangian_pos.col,
                            "degenerate Lagrangian: the mass matrix "
                            "d2L/dq'dq' is identically singular");
    if (derive_constraints(ctx, m, &L))
        return ctx_failed(ctx, err, m, m->k ? m->constraint_pos[0] : m->lagrangian_pos);
    if (m->k && ch_numeric_rank(ctx, m->k, m->n, L.G, RANK_POINTS) < (int)m->k)
        return inadmissible(ctx, m, &L, err);
    *out = L;
    return 0;
}
