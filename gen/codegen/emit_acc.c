/* emit_acc.c — kn_acc, the independent accelerations of the reduced and
 * hamilton forms: the numeric solve on the full form's values, the same
 * solve substituted into expressions, the symbolic reduced equations and
 * a diagonal M*, each built as a program, and the cheapest written
 * (fun_acc; the header's note lists every candidate's operations). */
#include "codegen/emit_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/factor.h"
#include "core/matrix.h"
#include "core/simplify.h"
#include "core/subst.h"

/* The solve of M* vt = f for the symbolic path, into code: M*'s lower
 * triangle as scalars A<i*m+j> and f into vt from the program's values
 * ref, then ch_emit_small_solve; its operations are added to ops. */
static void symbolic_solve(emitter *e, const ch_expr *const *outs, char *const *ref,
                           ch_buf *code, ch_opcount *ops, unsigned *needs)
{
    size_t mi = e->mi;
    unsigned char *anz = ch_ctx_alloc(e->ctx, mi * mi + 1);
    if (!anz) {
        e->failed = 1;
        return;
    }
    for (size_t j = 0; j < mi * mi; j++) anz[j] = !ch_is_zero(outs[j]);
    for (size_t i = 0; i < mi; i++)
        for (size_t j = 0; j <= i; j++)
            ch_buf_printf(code, "    const double A%zu = %s;\n", i * mi + j, ref[i * mi + j]);
    for (size_t i = 0; i < mi; i++)
        ch_buf_printf(code, "    vt[%zu] = %s;\n", i, ref[mi * mi + i]);
    ch_emit_small_solve(code, mi, anz, ops, needs);
}

/* Where M* is diagonal (red_outputs' off-diagonal entries 0, the
 * diagonal's not), outs with each M*_ii in normal form and f_i replaced
 * by f_i / M*_ii: the knife edge's m + m*tan(phi)^2 is m/cos(phi)^2,
 * whose factors cancel against f_i's in the product, so that kn_acc
 * divides by no pivot (and M*_ii costs two products where it took five
 * operations). NULL when M* is not diagonal, or an entry is larger than
 * DIAG_MAX_NODES or has no normal form (NULL with the emitter failed
 * when out of memory). */
static const ch_expr **diagonal_outputs(emitter *e, const ch_expr *const *outs)
{
    ch_ctx *ctx = e->ctx;
    size_t mi = e->mi;
    for (size_t i = 0; i < mi; i++)
        for (size_t j = 0; j < mi; j++)
            if ((i != j) != ch_is_zero(outs[i * mi + j])) return NULL;
    const ch_expr **o = ch_em_earr(e, mi * mi + mi);
    if (!o) return NULL;
    for (size_t j = 0; j < mi * mi; j++) o[j] = outs[j];
    for (size_t i = 0; i < mi; i++) {
        const ch_expr *a = outs[i * mi + i];
        if (ch_dag_size_capped(a, DIAG_MAX_NODES) > DIAG_MAX_NODES
            || !(o[i * mi + i] = ch_simplify(ctx, a))
            || !(o[mi * mi + i] = ch_div(ctx, outs[mi * mi + i], o[i * mi + i]))) {
            if (ch_ctx_error(ctx)->code == CH_ERR_MEMORY) {
                ch_em_emit_fail(e, CH_ERR_MEMORY, "out of memory");
            } else {
                ch_ctx_clear_error(ctx); /* a limit: no such candidate */
            }
            return NULL;
        }
    }
    return o;
}

/* The diagonal candidate's end: vt[i] = f_i / M*_ii from the program,
 * then the pivots M*_ii (ref[i*m+i]) tested as la_solve's LU tests a
 * diagonal matrix, each against the largest in magnitude: M* is
 * singular here where la_solve would call it singular (the knife edge
 * at phi = pi/2, where M*_xx = m/cos(phi)^2 is 10^32 times M*_phiphi).
 * The accelerations are written before the test (which makes them
 * garbage when it fails, as in the other candidates): written after it,
 * GCC stored the last velocity that the rhs copies and the first
 * acceleration as one vector, and in a dependent chain of calls the next
 * angle waited for the acceleration (the knife edge took 1.5 times as
 * long). */
static void diagonal_solve(emitter *e, char *const *ref, ch_buf *code)
{
    size_t mi = e->mi;
    for (size_t i = 0; i < mi; i++)
        ch_buf_printf(code, "    vt[%zu] = %s;\n", i, ref[mi * mi + i]);
    ch_buf_printf(code, "    {\n        double amax = fabs(%s);\n", ref[0]);
    for (size_t i = 1; i < mi; i++)
        ch_buf_printf(code, "        if (fabs(%s) > amax) amax = fabs(%s);\n", ref[i * mi + i],
                      ref[i * mi + i]);
    for (size_t i = 0; i < mi; i++)
        ch_buf_printf(code, "        if (!(fabs(%s) > 1e-14 * amax)) return 1;\n",
                      ref[i * mi + i]);
    ch_buf_put(code, "    }\n    return 0;\n");
}

/* kn_acc from a program of A and f (m*m + m values, then what the solve
 * needs): the symbolic reduced equations (kn_red's program; what
 * "symbolic" says), the substituted ones ("substituted") or, for a
 * diagonal M*, its diagonal and the quotients f_i / M*_ii ("diagonal"),
 * then A solved or, diagonal, its pivots tested (solve, which checks the
 * pivots of G_d first on the substituted path). */
static void acc_program(emitter *e, const ch_cse_prog *prog, const ch_buf *solve, ch_acc_kind kind)
{
    size_t mi = e->mi;
    if (kind == CH_ACC_SUBSTITUTED)
        ch_buf_printf(&e->kern, "/* Independent accelerations from M* and f built on the full form's\n"
                         " * values by substitution (%zu values; ", prog->n);
    else if (kind == CH_ACC_DIAGONAL)
        ch_buf_printf(&e->kern, "/* Independent accelerations f_i / M*_ii of the symbolic reduced\n"
                         " * equations, M* diagonal (%zu values; ", prog->n);
    else
        ch_buf_printf(&e->kern, "/* Independent accelerations from the symbolic reduced equations (M*\n"
                         " * and f, %zu values; ", prog->n);
    ch_opcount_print(&e->kern, &prog->after);
    ch_buf_printf(&e->kern, "): 0, or 1 when %s is singular. */\n"
                     "static int kn_acc(double t, const double *x, const double *p, %sdouble *v,\n"
                     "                  double *vt)\n{\n",
                  kind == CH_ACC_SUBSTITUTED ? "M* (2 when G_d's pivot is numerically 0 against its row)"
                                  : "M*", e->fused ? "" : "const ");
    if (kind != CH_ACC_DIAGONAL) /* (the diagonal test needs no la_solve) */
        ch_buf_printf(&e->kern, "    %sdouble ws[%zu];\n    %sint piv[%zu];\n",
                      ch_emit_storage(mi * mi + 1, &e->needs), mi * mi + 1, ch_emit_storage(mi + 1, &e->needs), mi + 1);
    ch_buf_put(&e->kern, "    (void)t; (void)x; (void)p; (void)v;\n");
    ch_em_put_body(&e->kern, prog);
    ch_buf_putn(&e->kern, solve->s, solve->len);
    ch_buf_put(&e->kern, "}\n\n");
}

/* The n outputs outs followed by the nextra values chart (context
 * memory), or NULL. */
static const ch_expr **with_chart(emitter *e, const ch_expr *const *outs, size_t n,
                                  const ch_expr *const *chart, size_t nextra)
{
    const ch_expr **o = ch_em_earr(e, n + nextra);
    if (!o) return NULL;
    for (size_t i = 0; i < n; i++) o[i] = outs[i];
    for (size_t i = 0; i < nextra; i++) o[n + i] = chart[i];
    return o;
}

/* pivot_check_at on kn_acc's outputs: the chart's values after M* and f. */
static void pivot_check(emitter *e, const ch_expr *const *outs, char *const *ref, ch_buf *code)
{
    ch_em_pivot_check_at(e, outs, ref, e->mi * e->mi + e->mi, code);
}

/* The numeric solve's input for kn_acc with the program p of its values
 * (the first at index val), without p's statements. */
static ch_redsolve acc_in(const emitter *e, const ch_cse_prog *p, size_t val)
{
    ch_redsolve in = {ch_em_kkt(e), (const char *const *)p->ref + val, NULL};
    return in;
}

/* The operations of the numeric solve after the program p of kn_acc's
 * values (the first at index val); none when it cannot be written. They
 * depend on the program only in that pivots that are one value are
 * inverted once (at most k divisions). */
static ch_opcount acc_solve_ops(emitter *e, const ch_cse_prog *p, size_t val)
{
    ch_redsolve in = acc_in(e, p, val);
    ch_opcount ops = {0, 0, 0, 0};
    ch_buf code;
    ch_buf_init(&code);
    int tri = 0;
    unsigned needs = 0;
    if (ch_emit_reduced_numeric(&in, &code, &ops, &tri, &needs) || code.oom)
        memset(&ops, 0, sizeof ops);
    ch_buf_free(&code);
    return ops;
}

/* The cost of kn_acc with the program p of its values (the first at
 * index val): the program's and that of the solve after it. */
static double acc_cost(emitter *e, const ch_cse_prog *p, size_t val)
{
    ch_opcount solve = acc_solve_ops(e, p, val);
    return ch_em_call_cost(&p->after) + ch_em_call_cost(&solve);
}

/* A candidate program of kn_acc's values replaces *out when its cost is
 * below *best (then *val and *fused are set); otherwise it is freed. */
static void keep_cheaper(emitter *e, ch_cse_prog *cand, ch_cse_prog *out, double *best,
                         size_t *val, int *fused, size_t cval, int cfused)
{
    double cost = acc_cost(e, cand, cval);
    if (cost < *best) {
        *best = cost;
        ch_cse_prog_free(out);
        *out = *cand;
        *val = cval, *fused = cfused;
    } else {
        ch_cse_prog_free(cand);
    }
}

/* The program of alpha's k values and then the n outputs outs, which
 * read the dependent velocities as locals vd<nu> that are alpha's values,
 * as one CSE'd program: alpha and the outputs share sin and cos of the
 * angles and the common denominators, computed once, and compilers pair
 * sin with cos. Its statements are ordered so that each vd<nu> is defined
 * after alpha's value and before its first use; it ends writing v_dep.
 * alpha must not read v_dep (the callers check it once for all their
 * programs). 0, or -1 (a limit: no such program; *p is freed). */
static int fused_build(emitter *e, const ch_expr *const *alpha, size_t n,
                       const ch_expr *const *outs, ch_cse_prog *p)
{
    const ch_manifold *mf = &e->d->mf;
    size_t k = e->k;
    const ch_expr **o = ch_em_earr(e, n + k), **vdep = ch_em_vdep_syms(e);
    memset(p, 0, sizeof *p);
    if (!o || !vdep) return -1;
    for (size_t nu = 0; nu < k; nu++) o[nu] = alpha[nu];
    for (size_t i = 0; i < n; i++) o[k + i] = outs[i];
    if (ch_em_locals_build(e, k, vdep, ch_em_local_names(e, "vd", k), n + k, o, p, 1)) return -1;
    for (size_t nu = 0; nu < k; nu++) ch_buf_printf(&p->body, "    v[%d] = vd%zu;\n", mf->dep[nu], nu);
    return 0;
}

/* The fused candidates for the dynamics dyn and the explicit alpha (see
 * values_prog), compared with *best. */
static void fused_candidates(emitter *e, const ch_expr *const *dyn, const ch_expr *const *alpha,
                             ch_cse_prog *out, double *best, size_t *val, int *fused)
{
    const ch_manifold *mf = &e->d->mf;
    size_t k = e->k, nd = e->ndyn;
    const ch_expr **o = ch_em_earr(e, nd + k), **vdep = ch_em_vdep_syms(e);
    if (!o || !vdep || ch_any_has_any_sym(k, alpha, k, vdep)) return;
    /* 1: alpha and the dynamics as one program */
    ch_cse_prog p1;
    if (fused_build(e, alpha, nd, dyn, &p1) == 0) keep_cheaper(e, &p1, out, best, val, fused, k, 1);
    /* 2: alpha substituted; an expression or node limit here only means
     * no such candidate */
    if (ch_subst_many(e->ctx, nd, dyn, o, k, vdep, alpha)) return;
    for (size_t nu = 0; nu < k; nu++) o[nd + nu] = alpha[nu];
    ch_cse_prog p3;
    ch_error scratch;
    memset(&scratch, 0, sizeof scratch);
    if (ch_cse_build(e->ctx, nd + k, o, ch_em_namer, e, "w", "    ", &p3, &scratch)) {
        ch_cse_prog_free(&p3);
        return;
    }
    for (size_t nu = 0; nu < k; nu++)
        ch_buf_printf(&p3.body, "    v[%d] = %s;\n", mf->dep[nu], p3.ref[nu + nd]);
    keep_cheaper(e, &p3, out, best, val, fused, 0, 1);
}

/* The values of kn_dyn that kn_acc's numeric solve reads
 * (ch_redsolve_reads): where it leaves some unread, *outs and *plain
 * (kn_dyn's outputs, factored and as derived) are replaced by copies with
 * those values 0, so that no program of the values computes one (an
 * unused variable). A value that is also a value read (M's other
 * triangle) is computed anyway and stays. 0, or -1 with the emitter
 * failed. */
static int read_values(emitter *e, const ch_expr *const **outs, const ch_expr *const **plain)
{
    size_t nd = e->ndyn, unread = 0;
    ch_redsolve in = {ch_em_kkt(e), NULL, NULL};
    unsigned char *read = ch_ctx_alloc(e->ctx, nd + 1);
    if (!read || ch_redsolve_reads(&in, read)) {
        e->failed = 1;
        return -1;
    }
    for (size_t i = 0; i < nd; i++) unread += e->dyn_nz[i] && !read[i];
    if (!unread) return 0;
    ch_map seen; /* node id -> 1: the values read */
    ch_map_init(&seen);
    int oom = 0;
    for (size_t i = 0; i < nd; i++)
        if (read[i])
            oom |= ch_map_put(&seen, (*outs)[i]->id, (void *)1) ||
                   ch_map_put(&seen, (*plain)[i]->id, (void *)1);
    unread = 0;
    for (size_t i = 0; i < nd && !oom; i++) {
        read[i] |= !e->dyn_nz[i] || ch_map_get(&seen, (*outs)[i]->id) ||
                   ch_map_get(&seen, (*plain)[i]->id);
        unread += !read[i];
    }
    ch_map_free(&seen);
    if (oom) {
        e->failed = 1;
        return -1;
    }
    if (!unread) return 0;
    const ch_expr **o = ch_em_earr(e, nd), **pl = ch_em_earr(e, nd);
    if (!o || !pl) return -1;
    for (size_t i = 0; i < nd; i++) {
        o[i] = read[i] ? (*outs)[i] : ch_zero(e->ctx);
        pl[i] = read[i] ? (*plain)[i] : ch_zero(e->ctx);
    }
    *outs = o, *plain = pl;
    return 0;
}

/* The program of kn_dyn's values for kn_acc's body, with the temporaries'
 * stem "w" (kn_acc's own names differ); only those the solve reads
 * (read_values). *val is the index of the first
 * value among the program's outputs, *fused says whether the program
 * also writes the dependent velocities into v (then the rhs does not call
 * kn_vel: the body is the only place alpha is computed). Candidates, the
 * cheapest by acc_cost kept:
 *  - kn_dyn's program (the dynamics alone, factored when that was
 *    cheaper) at the velocities kn_vel computed (plus kn_alpha there, in
 *    the reduced form with explicit alpha);
 *  - in the reduced form with explicit alpha, alpha then the dynamics at
 *    v_dep = alpha's values as one CSE'd program (its statements ordered
 *    by order_vdep): alpha and the dynamics share sin and cos of the
 *    angles and the common denominators, computed once, and compilers
 *    pair sin with cos;
 *  - there too, the dynamics with alpha substituted symbolically (which
 *    pays only where terms cancel);
 *  - each of these with the common factors taken out of the sums
 *    (ch_factor_sums, without and with distributing).
 * Only the first when other > 0 (the operations of the best other way to
 * kn_acc) is below those of the solve alone (*pruned set): no program of
 * the values could then make this way the cheapest.
 * Returns 0, or nonzero with the emitter failed. */
static int values_prog(emitter *e, ch_cse_prog *out, size_t *val, int *fused, double other,
                       int *pruned)
{
    const ch_reduced *red = &e->d->red;
    size_t k = e->k, nd = e->ndyn;
    int with_alpha = e->form == CH_FORM_REDUCED && red->explicit_alpha && red->alpha
                     && !red->nguard;
    *fused = 0, *val = 0;
    const ch_expr *const *douts = e->dyn_outs, *const *dplain = e->dyn_plain;
    if (read_values(e, &douts, &dplain)) return -1;
    /* kn_dyn's, from the cache (where all are read) */
    if (ch_em_kernel_build(e, nd, douts, out, 1)) return -1;
    if (other > 0.0) {
        ch_opcount solve = acc_solve_ops(e, out, 0);
        *pruned = ch_em_opcount_total(&solve) - (double)k > other;
        if (*pruned) return 0;
    }
    double alpha_cost = with_alpha ? ch_em_call_cost(&e->alpha_ops) : 0.0;
    double best = acc_cost(e, out, 0) + alpha_cost;
    /* dynamics and alpha with common factors out, in one pass so that
     * what they share stays shared */
    const ch_expr **all = ch_em_earr(e, nd + k);
    if (!all) return -1;
    for (size_t i = 0; i < nd; i++) all[i] = dplain[i];
    for (size_t nu = 0; with_alpha && nu < k; nu++) all[nd + nu] = red->alpha[nu];
    const ch_expr **fac[2];
    for (int dist = 0; dist < 2; dist++) {
        fac[dist] = ch_factor_sums(e->ctx, nd + (with_alpha ? k : 0), all, dist);
        if (!fac[dist]) continue;
        ch_cse_prog cand;
        ch_error scratch;
        memset(&scratch, 0, sizeof scratch);
        if (ch_cse_build(e->ctx, nd, fac[dist], ch_em_namer, e, "w", "    ", &cand, &scratch) == 0) {
            /* kn_vel's alpha comes on top (call_cost is linear) */
            best -= alpha_cost;
            keep_cheaper(e, &cand, out, &best, val, fused, 0, 0);
            best += alpha_cost;
        } else {
            ch_cse_prog_free(&cand);
        }
    }
    if (!with_alpha) return 0;
    fused_candidates(e, dplain, red->alpha, out, &best, val, fused);
    for (int dist = 0; dist < 2; dist++)
        if (fac[dist]) fused_candidates(e, fac[dist], fac[dist] + nd, out, &best, val, fused);
    return 0;
}

/* The program of kn_acc's body on the symbolic path: M* and f (the first
 * m*m + m outputs; *outs is set to the expressions used), the cheapest by
 * call_cost of the reduced equations as they are and with common factors
 * out of the sums (factor_both), each alone (kn_vel computes alpha) or,
 * in the reduced form with explicit alpha and equations free of the
 * dependent velocities, with alpha as further outputs written into v
 * (*fused: no kn_vel in the rhs; alpha and the equations share sin, cos
 * and denominators). Only the plain program (*pruned set) when it has
 * over SYM_FACTOR_GAIN times the operations of the best other candidate
 * (other, 0 when none). Returns 0, or nonzero with the emitter failed. */
static int sym_prog(emitter *e, const ch_expr ***outs, size_t nextra, ch_cse_prog *prog,
                    int *fused, double other, int *pruned)
{
    const ch_reduced *red = &e->d->red;
    const ch_manifold *mf = &e->d->mf;
    size_t no = e->mi * e->mi + e->mi + nextra, k = e->k;
    *fused = 0;
    if (ch_em_kernel_build(e, no, *outs, prog, 1)) return -1; /* the hamilton form's too */
    *pruned = other > 0.0 && ch_em_opcount_total(&prog->after) > SYM_FACTOR_GAIN * other;
    if (*pruned) return 0;
    int with_alpha = e->form == CH_FORM_REDUCED && k > 0 && red->explicit_alpha && red->alpha
                     && !red->nguard;
    double alpha_cost = with_alpha ? ch_em_call_cost(&e->alpha_ops) : 0.0;
    double best = ch_em_call_cost(&prog->after) + alpha_cost;
    const ch_expr **all = ch_em_earr(e, no + k), **vdep = ch_em_vdep_syms(e);
    if (!all || !vdep) return -1;
    for (size_t i = 0; i < no; i++) all[i] = (*outs)[i];
    for (size_t nu = 0; with_alpha && nu < k; nu++) all[no + nu] = red->alpha[nu];
    if (with_alpha && ch_any_has_any_sym(no + k, all, k, vdep)) with_alpha = 0;
    size_t nall = no + (with_alpha ? k : 0);
    const ch_expr **fac, **fad;
    ch_em_factor_both(e, nall, all, ch_dag_size_many(nall, all, SIZE_MAX), &fac, &fad);
    /* candidates: (outputs, count, fused) */
    const ch_expr *const *cand[5] = {fac, fad, with_alpha ? all : NULL, with_alpha ? fac : NULL,
                                     with_alpha ? fad : NULL};
    size_t count[5] = {no, no, no + k, no + k, no + k};
    for (int c = 0; c < 5; c++) {
        if (!cand[c]) continue;
        ch_cse_prog p;
        ch_error scratch;
        memset(&scratch, 0, sizeof scratch);
        if (ch_cse_build(e->ctx, count[c], cand[c], ch_em_namer, e, "w", "    ", &p, &scratch)) {
            ch_cse_prog_free(&p);
            continue;
        }
        int fuse = c >= 2;
        double cost = ch_em_call_cost(&p.after) + (fuse ? 0.0 : alpha_cost);
        if (cost < best) {
            best = cost;
            if (fuse)
                for (size_t nu = 0; nu < k; nu++)
                    ch_buf_printf(&p.body, "    v[%d] = %s;\n", mf->dep[nu], p.ref[no + nu]);
            ch_cse_prog_free(prog);
            *prog = p;
            *outs = (const ch_expr **)cand[c];
            *fused = fuse;
        } else {
            ch_cse_prog_free(&p);
        }
    }
    return 0;
}

/* The n_all values all (kn_dyn's, then alpha's) with the sums of G, r
 * and alpha factored (ch_factor_sums, distribute), M and b as they are:
 * what ch_kkt_reduced_kane reads. NULL when the factoring failed. */
static const ch_expr **factor_read(emitter *e, const ch_expr *const *all, size_t n_all,
                                   ch_dist distribute)
{
    size_t n = e->n, g = n * n, b = g + e->k * n, r = b + n, nr = 0;
    const ch_expr **val = ch_em_earr(e, n_all), **in = ch_em_earr(e, n_all);
    if (!val || !in) return NULL;
    for (size_t i = g; i < n_all; i++)
        if (i < b || i >= r) in[nr++] = all[i];
    const ch_expr **f = ch_factor_sums(e->ctx, nr, in, distribute);
    if (!f) return NULL;
    memcpy(val, all, n_all * sizeof *all);
    for (size_t i = g, j = 0; i < n_all; i++)
        if (i < b || i >= r) val[i] = f[j++];
    return val;
}

/* kn_acc's body on the substituted path: the reduced system A v_t' = f
 * and G_d's pivots as expressions of the dynamics (ch_kkt_reduced:
 * the substitutions of the numeric solve done on the DAG, where the
 * factoring and the CSE see that the n-trailer's G_d and M are
 * cos(th_i - th_j) written out and turn each row into a few products of
 * partial sums). The outputs are m*m + m + k: A, f, the pivots. The
 * cheapest by call_cost of those with common factors out of the sums
 * (each ch_dist, the values factored the same way first; not without
 * distributing where that lost on kn_dyn, and the Kane form's not over
 * the oldest small sum), with alpha in
 * the program (fused_build) where alpha does not read v_dep, else alone
 * (kn_vel computes alpha). On the n-trailer this is the only candidate
 * whose operations grow as N: the numeric solve's values, G_d and M,
 * are O(N^2) numbers. Where the Lagrangian is a weighted sum of squared
 * velocities (kane.h), A and f are also built from that form
 * (ch_kkt_reduced_kane: each point's velocity per unit independent velocity
 * once, where M B multiplies M's O(N^2) entries out; with G_d's small
 * sums multiplied out over X, 345 against 688 operations beyond alpha
 * on the 10-trailer), and only from it where M has more nonzero entries
 * than that form has terms; *kane_used says which won. *outs is set to the
 * expressions used. Returns 0 with a program, 1 when there is none (G_d
 * not triangular, limits), -1 out of memory (the emitter failed). */
int ch_em_subst_prog(emitter *e, const ch_expr ***outs, ch_cse_prog *prog, int *fused,
                      int *kane_used)
{
    const ch_reduced *red = &e->d->red;
    /* A, f, the k pivots of G_d, then |G_row|^2 of each pivot's row (the
     * chart's test, pivot_check) */
    size_t m = e->mi, k = e->k, nd = e->ndyn, no = m * m + m + 2 * k;
    ch_kkt sys = ch_em_kkt(e);
    const ch_expr **o = ch_em_earr(e, no + k), **all = ch_em_earr(e, nd + k), **vdep = ch_em_vdep_syms(e);
    const ch_expr **bd = ch_em_earr(e, k * m + 1), **u = ch_em_earr(e, m);
    if (!o || !all || !vdep || !bd || !u) return -1;
    const ch_expr **chart = ch_em_earr(e, 2 * k + 1);
    if (!chart) return -1;
    int tri = ch_em_chart_exprs(e, chart);
    if (tri) return tri; /* 1: G_d is not triangular; -1: out of memory */
    for (size_t c = 0; c < m; c++) u[c] = e->m->qt[e->d->mf.indep[c]];
    int with_alpha = e->form == CH_FORM_REDUCED && red->explicit_alpha && red->alpha
                     && !red->nguard;
    /* alpha in the program where it can be (factoring adds no symbol):
     * programs without were never the cheapest on the n-trailer, and each
     * candidate is a large CSE build on the way to the first rhs call */
    int fuse = with_alpha && !ch_any_has_any_sym(k, red->alpha, k, vdep);
    /* alpha = B_dep u from the X the program computes anyway, where that
     * is alpha: the recursion of the n-trailer's X is then done once, not
     * again with u inside */
    int lin = fuse && ch_em_alpha_linear(e);
    double alpha_cost = with_alpha && !fuse ? ch_em_call_cost(&e->alpha_ops) : 0.0, best = 0.0;
    int have = 0;
    for (size_t i = 0; i < nd; i++) all[i] = e->dyn_plain[i];
    for (size_t nu = 0; with_alpha && nu < k; nu++) all[nd + nu] = red->alpha[nu];
    /* A and f from M and b (candidates 0-2, by ch_dist) and, where the
     * Lagrangian is a sum of squared velocities, from its Kane form
     * (3-5). The M b ones only where M has no more nonzero entries than
     * the Kane form has terms: where it has more (the n-trailer: O(n^2)
     * against O(n)), M B multiplies out entries the Kane form never
     * forms, and those candidates never won (the n-trailer from N = 1
     * to 100); they were 4.3 of the 200-trailer's 7.6 s here */
    const ch_kane *kn = e->kane;
    size_t nnz_m = 0;
    for (size_t i = 0; i < e->n * e->n; i++) nnz_m += e->dyn_nz[i];
    int first = kn && nnz_m > kn->nb ? 3 : 0;
    size_t nin = nd + (with_alpha ? k : 0);
    const ch_expr **vals[3]; /* by ch_dist: the M b and the Kane candidates share them */
    int built = 0;
    for (int c = first; c < 3 * (kn ? 2 : 1); c++) {
        int dist = c % 3, use_kane = c >= 3;
        /* not without distributing where that lost on kn_dyn (factor_both):
         * on the n-trailer (from 10 trailers on) it never won here either,
         * and it was a seventh of the 200-trailer's `emit --form all` */
        if (dist == CH_DIST_NONE && e->dyn_dist_halved) continue;
        /* nor the Kane form's distributed over the oldest small sum: it
         * never beat the one distributed over the only small sum (ties on
         * the examples, 4 to 20 operations more on the n-trailer from 1 to
         * 100 trailers), and it was 14% of the 100-trailer's `emit --form
         * all` instructions */
        if (dist == CH_DIST_OLDEST && use_kane) continue;
        /* from the factored values: their sums are simpler (G's entries
         * come with their common factors out of the derivation already,
         * lagrange.c; b's and alpha's do not) */
        if (!use_kane) vals[dist] = ch_factor_sums(e->ctx, nin, all, dist);
        else if (first == 3)
            vals[dist] = factor_read(e, all, nin, dist);
        const ch_expr **val = vals[dist];
        int rc = !val ? 1
                 : use_kane ? ch_kkt_reduced_kane(e->ctx, &sys, val, kn, o, lin ? bd : NULL)
                            : ch_kkt_reduced(e->ctx, &sys, val, o, lin ? bd : NULL);
        /* the pivots' row norms (the chart's test, pivot_check) */
        for (size_t j = 0; rc == 0 && j < k; j++) o[m * m + m + k + j] = chart[k + j];
        if (rc == 0 && lin && ch_mat_vec(e->ctx, k, m, bd, u, o + no)) rc = -1;
        if (rc < 0 && ch_ctx_error(e->ctx)->code == CH_ERR_MEMORY) {
            ch_em_emit_fail(e, CH_ERR_MEMORY, "out of memory");
            if (have) ch_cse_prog_free(prog);
            return -1;
        }
        if (rc < 0) ch_ctx_clear_error(e->ctx); /* a limit: no such candidate */
        if (rc == 1 && !built) return 1; /* G_d is not triangular */
        built = 1;
        const ch_expr **fac = rc ? NULL : ch_factor_sums(e->ctx, no + (lin ? k : 0), o, dist);
        if (!fac) continue;
        ch_cse_prog p;
        ch_error scratch;
        memset(&scratch, 0, sizeof scratch);
        if (fuse ? fused_build(e, lin ? fac + no : val + nd, no, fac, &p)
                 : ch_cse_build(e->ctx, no, fac, ch_em_namer, e, "w", "    ", &p, &scratch)) {
            ch_cse_prog_free(&p);
            continue;
        }
        if (fuse) ch_cse_prog_drop_outputs(&p, k); /* alpha's are in v */
        double cost = ch_em_call_cost(&p.after) + alpha_cost;
        if (have && cost >= best) {
            ch_cse_prog_free(&p);
            continue;
        }
        if (have) ch_cse_prog_free(prog);
        *prog = p, *outs = fac, *fused = fuse, best = cost, have = 1, *kane_used = use_kane;
    }
    return have ? 0 : 1;
}

/* The operations of c without kn_alpha's (a fused program makes kn_vel
 * unnecessary: compared as the part beyond it). */
static ch_opcount beyond_alpha(const emitter *e, ch_opcount c, int fused)
{
    if (fused)
        c.add -= e->alpha_ops.add, c.mul -= e->alpha_ops.mul, c.div -= e->alpha_ops.div,
        c.call -= e->alpha_ops.call;
    return c;
}

/* One way to kn_acc (ch_acc_kind), built by its row of acc_ways: a
 * program of values, the code after it in kn_acc (the numeric way's is
 * all of kn_acc), what that code needs, the operations per call and the
 * cost compared: those beyond kn_alpha's (a fused program makes kn_vel
 * unnecessary). */
typedef struct {
    int have;
    int fused;          /* the program writes alpha into v (no kn_vel in the rhs) */
    int pruned;         /* only the plain program was built: it could not win */
    int chart;          /* kn_acc tests G_d's pivots against their rows (returns 2) */
    ch_cse_prog prog;
    ch_buf code;
    unsigned needs;     /* CH_NEEDS_* of code */
    ch_opcount ops;
    double cost;
} acc_way;

/* What the ways share, filled as they are built. */
typedef struct {
    const ch_expr **outs;   /* M* and f (ch_em_red_outputs) */
    /* the cheapest of the numeric and substituted ways so far (0: none),
     * against which the symbolic and diagonal ones are pruned */
    double other;
    int prepared;           /* symbolic_prep ran: */
    int skip_sym;           /* the symbolic and diagonal ways are not built */
    double skip_at;
    const ch_expr **chart;  /* the chart test's values after M* and f, nextra of them */
    size_t nextra;
    const ch_expr **with;   /* outs followed by them (NULL when nextra is 0) */
    int tri;                /* the numeric way solves G_d by substitution */
    int sub_kane;           /* the substituted way is the Kane form's */
} acc_shared;

static void way_cost(const emitter *e, acc_way *w)
{
    ch_opcount c = beyond_alpha(e, w->ops, w->fused);
    w->cost = ch_em_opcount_total(&c);
}

/* The ways the symbolic and diagonal ones are pruned against. */
static void bar(acc_shared *sh, const acc_way *w)
{
    if (w->have && (sh->other == 0.0 || w->cost < sh->other)) sh->other = w->cost;
}

/* The solves substituted into expressions (ch_em_subst_prog). */
static void build_substituted(emitter *e, acc_shared *sh, acc_way *w)
{
    const ch_expr **souts = NULL;
    if (e->k == 0 || !e->dyn_nz || e->failed) return;
    int r = ch_em_subst_prog(e, &souts, &w->prog, &w->fused, &sh->sub_kane);
    if (r < 0) e->failed = 1;
    if (r) return;
    w->have = 1, w->chart = 1;
    w->ops = w->prog.after;
    pivot_check(e, souts, w->prog.ref, &w->code);
    symbolic_solve(e, souts, w->prog.ref, &w->code, &w->ops, &w->needs);
    way_cost(e, w);
    bar(sh, w);
}

/* Small numeric solves on the full form's values (values_prog, then
 * ch_emit_reduced_numeric). */
static void build_numeric(emitter *e, acc_shared *sh, acc_way *w)
{
    size_t off = 0;
    if (e->k == 0 || !e->dyn_nz || e->failed) return;
    if (values_prog(e, &w->prog, &off, &w->fused, sh->other, &w->pruned)) return;
    w->have = 1;
    ch_redsolve in = acc_in(e, &w->prog, off);
    in.body = w->prog.body.s;
    w->ops = w->prog.after;
    if (w->prog.body.oom || ch_emit_reduced_numeric(&in, &w->code, &w->ops, &sh->tri, &w->needs))
        ch_em_emit_fail(e, CH_ERR_MEMORY, "out of memory");
    w->chart = sh->tri;
    way_cost(e, w);
    bar(sh, w);
}

/* What the symbolic and diagonal ways share, once: whether M* and f are
 * too large to be worth a program (SYM_SKIP_GAIN times the cheapest other
 * way in nodes), and the chart's test where G_d is triangular. */
static void symbolic_prep(emitter *e, acc_shared *sh)
{
    size_t nsol = e->mi * e->mi + e->mi;
    if (sh->prepared) return;
    sh->prepared = 1;
    sh->skip_at = SYM_SKIP_GAIN * sh->other;
    sh->skip_sym = sh->other > 0.0 && sh->skip_at < 1e15 &&
                   ch_dag_size_many(nsol, sh->outs, (size_t)sh->skip_at) > sh->skip_at;
    sh->chart = e->k > 0 ? ch_em_earr(e, 2 * e->k) : NULL;
    if (sh->chart && !e->failed && ch_em_chart_exprs(e, sh->chart) == 0) sh->nextra = 2 * e->k;
    sh->with = sh->nextra ? with_chart(e, sh->outs, nsol, sh->chart, sh->nextra) : NULL;
    if (!sh->with) sh->nextra = 0;
}

/* M* and f of the symbolic reduced equations, M* solved (sym_prog). */
static void build_symbolic(emitter *e, acc_shared *sh, acc_way *w)
{
    symbolic_prep(e, sh);
    const ch_expr **outs = sh->with ? sh->with : sh->outs;
    if (e->failed || sh->skip_sym
        || sym_prog(e, &outs, sh->nextra, &w->prog, &w->fused, sh->other, &w->pruned))
        return;
    w->have = 1, w->chart = sh->nextra > 0;
    w->ops = w->prog.after;
    if (sh->nextra) pivot_check(e, outs, w->prog.ref, &w->code);
    symbolic_solve(e, outs, w->prog.ref, &w->code, &w->ops, &w->needs);
    way_cost(e, w);
}

/* Where M* is diagonal, f_i / M*_ii (diagonal_outputs), pivots tested. */
static void build_diagonal(emitter *e, acc_shared *sh, acc_way *w)
{
    symbolic_prep(e, sh);
    if (e->failed || sh->skip_sym) return;
    const ch_expr **douts = diagonal_outputs(e, sh->outs);
    if (!douts || (sh->nextra && !(douts = with_chart(e, douts, e->mi * e->mi + e->mi,
                                                       sh->chart, sh->nextra))))
        return;
    if (sym_prog(e, &douts, sh->nextra, &w->prog, &w->fused, sh->other, &w->pruned)) return;
    w->have = 1, w->chart = sh->nextra > 0;
    w->ops = w->prog.after;
    if (sh->nextra) pivot_check(e, douts, w->prog.ref, &w->code);
    diagonal_solve(e, w->prog.ref, &w->code);
    way_cost(e, w);
}

/* Each way's part of the header's note ("" where it has none). */
static void note_substituted(const acc_shared *sh, const acc_way *w, char *s, size_t size)
{
    if (w->have)
        snprintf(s, size, "substituted M*%s and M* solve: %.0f", sh->sub_kane ? " (Kane form)" : "",
                 w->cost);
}

static void note_numeric(const acc_shared *sh, const acc_way *w, char *s, size_t size)
{
    if (w->have)
        snprintf(s, size, "numeric, M G b r with %s: %.0f%s",
                 sh->tri ? "triangular G_d substitution" : "an LU solve for G_d", w->cost,
                 w->pruned ? ", values unfactored: its solve alone costs more" : "");
}

static void note_symbolic(const acc_shared *sh, const acc_way *w, char *s, size_t size)
{
    if (sh->skip_sym)
        snprintf(s, size, "symbolic reduced right side: not built (over %.0f nodes, %d times the "
                 "others)", sh->skip_at, SYM_SKIP_GAIN);
    else if (w->have && w->pruned)
        snprintf(s, size, "symbolic reduced right side and M* solve: %.0f, not factored: over %d "
                 "times the others", w->cost, SYM_FACTOR_GAIN);
    else if (w->have)
        snprintf(s, size, "symbolic reduced right side and M* solve: %.0f", w->cost);
}

static void note_diagonal(const acc_shared *sh, const acc_way *w, char *s, size_t size)
{
    (void)sh;
    if (w->have) snprintf(s, size, "diagonal M*, f_i / M*_ii: %.0f", w->cost);
}

/* The ways to kn_acc, in the order they are built: the substituted and
 * the numeric ones first (the cheapest so far decides whether the next
 * is worth its variants), the symbolic ones last, built only where they
 * could win (SYM_SKIP_GAIN, SYM_FACTOR_GAIN). Each is compared by its
 * cost (way_cost). */
#define NWAYS 4
static const struct {
    ch_acc_kind kind;
    const char *name;
    void (*build)(emitter *e, acc_shared *sh, acc_way *w);
    void (*note)(const acc_shared *sh, const acc_way *w, char *s, size_t size);
} acc_ways[NWAYS] = {
    {CH_ACC_SUBSTITUTED, "substituted", build_substituted, note_substituted},
    {CH_ACC_NUMERIC, "numeric", build_numeric, note_numeric},
    {CH_ACC_SYMBOLIC, "symbolic", build_symbolic, note_symbolic},
    {CH_ACC_DIAGONAL, "diagonal", build_diagonal, note_diagonal},
};

/* static int kn_acc(t, x, p, v, vt): the independent accelerations of the
 * reduced equations at the velocities v (THEORY §4), by whichever way of
 * acc_ways performs fewest counted operations per call (all CSE'd, the
 * solves counted too, each program in kn_acc's body); ties go to the
 * earlier ch_acc_kind. Without constraints only the symbolic and the
 * diagonal ways exist. The header's note lists every way's cost. */
void ch_em_fun_acc(emitter *e)
{
    acc_shared sh;
    acc_way way[NWAYS];
    memset(&sh, 0, sizeof sh);
    memset(way, 0, sizeof way);
    for (int i = 0; i < NWAYS; i++) ch_buf_init(&way[i].code);
    if (!(sh.outs = ch_em_red_outputs(e))) return;
    int use = -1;
    for (int i = 0; i < NWAYS; i++) {
        acc_ways[i].build(e, &sh, &way[i]);
        if (way[i].code.oom) ch_em_emit_fail(e, CH_ERR_MEMORY, "out of memory");
    }
    for (int i = 0; i < NWAYS; i++)
        if (way[i].have && (use < 0 || way[i].cost < way[use].cost ||
                            (way[i].cost == way[use].cost && acc_ways[i].kind < acc_ways[use].kind)))
            use = i;
    /* the note: the way written, then every way's part where there is
     * more than one */
    char parts[NWAYS][160];
    size_t nparts = 0;
    for (int i = 0; i < NWAYS; i++) {
        parts[i][0] = 0;
        acc_ways[i].note(&sh, &way[i], parts[i], sizeof parts[i]);
        nparts += parts[i][0] != 0;
    }
    ch_buf note;
    ch_buf_init(&note);
    if (!e->failed && use >= 0) {
        ch_buf_printf(&note, "%s%s, %.0f operations per call", acc_ways[use].name,
                      e->k == 0 ? " (no constraints)" : "", way[use].cost);
        const char *sep = " (";
        for (int i = 0; nparts > 1 && i < NWAYS; i++)
            if (parts[i][0]) ch_buf_printf(&note, "%s%s", sep, parts[i]), sep = "; ";
        if (nparts > 1) ch_buf_put(&note, ")");
        if (note.oom) ch_em_emit_fail(e, CH_ERR_MEMORY, "out of memory");
        else snprintf(e->acc_note, sizeof e->acc_note, "%s", note.s);
    }
    ch_buf_free(&note);
    if (!e->failed && use >= 0) {
        acc_way *w = &way[use];
        e->needs |= w->needs;
        e->fused = w->fused;
        e->acc_chart = w->chart;
        if (acc_ways[use].kind == CH_ACC_NUMERIC) ch_buf_putn(&e->kern, w->code.s, w->code.len);
        else acc_program(e, &w->prog, &w->code, acc_ways[use].kind);
        ch_opcount_add(&e->before, &w->prog.before);
        ch_opcount_add(&e->after, &w->ops);
    }
    if (!e->failed) {
        ch_emit_report *rep = &e->report;
        rep->chosen = use < 0 ? CH_ACC_NONE : acc_ways[use].kind;
        rep->symbolic_skipped = sh.skip_sym;
        rep->numeric_triangular = sh.tri;
        for (int i = 0; i < NWAYS; i++)
            rep->cost[acc_ways[i].kind] = way[i].have ? way[i].cost : -1.0;
    }
    for (int i = 0; i < NWAYS; i++) {
        if (way[i].have) ch_cse_prog_free(&way[i].prog);
        ch_buf_free(&way[i].code);
    }
}
