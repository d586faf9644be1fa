/* emit_fun.c — the public functions of the emitted code (emit_c.h's
 * list): each rebuilds the velocities from the state (form specific),
 * then calls the kernels of emit_c.c and the template solvers. */
#include "codegen/emit_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/matrix.h"
#include "core/simplify.h"
#include "core/subst.h"

static void put_sizes(emitter *e, ch_buf *b)
{
    size_t nk = e->n + e->k;
    ch_buf_printf(b, "    %sdouble w[%zu];\n    %sint piv[%zu];\n",
                  ch_emit_storage(2 * nk * (nk + 1) + 1, &e->needs), 2 * nk * (nk + 1) + 1,
                  ch_emit_storage(nk + 1, &e->needs), nk + 1);
}

/* The declarations put_dyn_solve's statements need. */
static void put_dyn_decls(emitter *e, ch_buf *b)
{
    put_sizes(e, b);
    size_t no = e->n * e->n + e->k * e->n + e->n + e->k;
    ch_buf_printf(b, "    %sdouble o[%zu], acc[%zu], lam[%zu];\n",
                  ch_emit_storage(no + e->n + e->k + 1, &e->needs), no, e->n, e->k + 1);
}

/* kn_dyn's values into o, then the accelerations into acc (kn_facc;
 * la_kkt where it declines) and, with lambda, the multipliers into lam
 * (la_lambda from kn_facc's accelerations, or la_kkt's): statements of
 * the rhs and of outputs, which return 1 where the system is singular.
 * The caller declares v (filled) and put_dyn_decls'. */
void ch_em_put_dyn_solve(emitter *e, ch_buf *b, int lambda)
{
    size_t n = e->n, k = e->k;
    char kkt[160];
    snprintf(kkt, sizeof kkt, "la_kkt(%zu, %zu, o, o + %zu, o + %zu, o + %zu, acc, lam, w, piv)",
             n, k, n * n, n * n + k * n, n * n + k * n + n);
    if (e->facc && lambda) {
        ch_buf_printf(b, "    static const int dep[%zu] = {", k);
        for (size_t a = 0; a < k; a++) ch_buf_printf(b, "%s%d", a ? ", " : "", e->d->mf.dep[a]);
        ch_buf_put(b, "};\n");
    }
    ch_buf_put(b, "    kn_dyn(t, x, p, v, o);\n");
    if (!e->facc)
        ch_buf_printf(b, "    if (%s)\n        return 1;\n", kkt);
    else if (!lambda)
        ch_buf_printf(b, "    if (kn_facc(o, acc) &&\n        %s)\n        return 1;\n", kkt);
    else
        ch_buf_printf(b, "    if ((kn_facc(o, acc) ||\n"
                         "         la_lambda(%zu, %zu, o, o + %zu, o + %zu, acc, dep, lam, w, piv)) &&\n"
                         "        %s)\n        return 1;\n",
                      n, k, n * n, n * n + k * n, kkt);
}

/* kn_leg: y* (m), then K = d y* by dq'_r (m*m), both along the constraints. */
static void kernel_leg(emitter *e)
{
    size_t mi = e->mi, i = 0;
    const ch_expr **o = ch_em_earr(e, mi + mi * mi);
    if (!o) return;
    for (size_t r = 0; r < mi; r++) o[i++] = e->d->red.y_star[r];
    for (size_t j = 0; j < mi * mi; j++) o[i++] = e->d->ham.K[j];
    ch_em_kernel(e, "leg", i, o);
}

/* kn_dep solves alpha by its closed form: an explicit alpha, except the
 * root of a quadratic (a branch) in the full form, whose kn_dep only
 * serves state_from and keeps the branch of the velocities given (Newton
 * from them). */
int ch_em_alpha_closed(const emitter *e)
{
    const ch_reduced *red = &e->d->red;
    return red->explicit_alpha && !(e->form == CH_FORM_FULL && red->quadratic);
}

/* The start of kn_dep's Newton iteration for implicit alpha into v's
 * dependent entries: vs's (the velocities of a nearby state: the last
 * accepted one, PREFIX_*_from) or, where vs is NULL, the model's initial
 * dependent velocities (solved as ch_manifold_init did; the given values
 * where it found no solution); never 0: x'^2 + y'^2 = v0^2 has dphi/dy'
 * = 0 at y' = 0, and the branch of the root is the one the state is on.
 * indent: the statement's leading spaces. */
static void put_newton_start(emitter *e, ch_buf *b, const char *indent)
{
    const ch_manifold *mf = &e->d->mf;
    if (ch_em_alpha_closed(e) || e->k == 0) return;
    ch_buf_printf(b, "%sif (vs) {\n", indent);
    for (size_t nu = 0; nu < e->k; nu++)
        ch_buf_printf(b, "%s    v[%d] = vs[%d];\n", indent, mf->dep[nu], mf->dep[nu]);
    ch_buf_printf(b, "%s} else {\n", indent);
    for (size_t nu = 0; nu < e->k; nu++) {
        int d = mf->dep[nu];
        ch_buf_printf(b, "%s    v[%d] = ", indent, d);
        ch_c_double(b, mf->v0 ? mf->v0[d] : e->m->qt0[d]);
        ch_buf_put(b, ";\n");
    }
    ch_buf_printf(b, "%s}\n", indent);
}

/* The numeric inverse of the Legendre map (THEORY §5 when H* has no
 * closed form): kn_res evaluates y*(v) - y and K at the independent
 * velocities in v (the dependent ones follow the constraints); kn_inv
 * solves y*(v) = y. For L* quadratic in the velocities y* is affine, so
 * one linear solve from any point is exact; otherwise damped Newton with
 * Jacobian K. The start is vs (the velocities of a nearby state, the
 * last accepted one) or, where vs is NULL, v = 0; where that point fails
 * (0/0 in K, K singular there, no convergence) a small v along y. */
static void fun_legendre(emitter *e)
{
    ch_buf *b = &e->kern;
    const ch_manifold *mf = &e->d->mf;
    size_t n = e->n, mi = e->mi;
    kernel_leg(e);
    if (e->failed) return;
    ch_buf_printf(b, "/* o = (y*(v) - y, K); *r = |y*(v) - y|_1. 1 when the dependent\n"
                     " * velocities fail or a value is not finite. */\n"
                     "static int kn_res(double t, const double *x, const double *p, double *v,\n"
                     "                  double *o, double *r)\n{\n"
                     "    int i;\n"
                     "    if (kn_dep(t, x, p, v)) return 1;\n"
                     "    kn_leg(t, x, p, v, o);\n"
                     "    for (*r = 0.0, i = 0; i < %zu; i++) {\n"
                     "        o[i] -= x[%zu + i];\n"
                     "        *r += fabs(o[i]);\n"
                     "    }\n"
                     "    for (i = %zu; i < %zu; i++)\n"
                     "        if (!(fabs(o[i]) <= 1e300)) return 1;\n"
                     "    return !(*r <= 1e300);\n}\n\n",
                  mi, n, mi, mi + mi * mi);
    ch_buf_printf(b, "/* Independent velocities solving y*(t, q, v) = y, dependent ones from\n"
                     " * the constraints: 0, or 1 when no start converges. */\n"
                     "static int kn_inv(double t, const double *x, const double *p, const double *vs,\n"
                     "                  double *v)\n{\n"
                     "    %sdouble o[%zu], w[%zu], d[%zu], s[%zu];\n"
                     "    double r0, r1, ysum;\n%s"
                     "    %sint piv[%zu];\n"
                     "    int it, i, start;\n"
                     "    (void)vs;\n"
                     "    for (ysum = 0.0, i = 0; i < %zu; i++) ysum += fabs(x[%zu + i]);\n"
                     "    for (start = 0; start < 2; start++) {\n"
                     "        for (i = 0; i < %zu; i++) v[i] = 0.0;\n",
                  ch_emit_storage(2 * mi * mi + 2 * mi + 1 + n, &e->needs), mi + mi * mi, mi * mi + 1, mi, n,
                  e->d->ham.quadratic ? "" : "    double lam, step, size;\n",
                  ch_emit_storage(mi + 1, &e->needs), mi + 1, mi, n, n);
    put_newton_start(e, b, "        ");
    for (size_t r = 0; r < mi; r++)
        ch_buf_printf(b, "        if (start) v[%d] = 1e-3 * x[%zu] / (1.0 + ysum);\n"
                         "        else if (vs) v[%d] = vs[%d];\n",
                      mf->indep[r], n + r, mf->indep[r], mf->indep[r]);
    e->needs |= CH_NEEDS_LA_SOLVE;
    ch_buf_printf(b, "        if (kn_res(t, x, p, v, o, &r0)) continue;\n"
                     "        for (it = 0; it < 100; it++) {\n"
                     "            for (i = 0; i < %zu; i++) d[i] = o[i];\n"
                     "            if (la_solve(%zu, 1, o + %zu, d, 1, w, piv)) break;\n"
                     "            for (i = 0; i < %zu; i++) s[i] = v[i];\n",
                  mi, mi, mi, n);
    if (e->d->ham.quadratic) {
        /* y* affine in the velocities: the step lands on the solution. */
        for (size_t r = 0; r < mi; r++)
            ch_buf_printf(b, "            v[%d] = s[%d] - d[%zu];\n", mf->indep[r],
                          mf->indep[r], r);
        ch_buf_put(b, "            if (kn_res(t, x, p, v, o, &r1)) break;\n"
                      "            return 0;\n"
                      "        }\n    }\n    return 1;\n}\n\n");
        return;
    }
    ch_buf_put(b, "            for (lam = 1.0;; lam *= 0.5) {\n"
                  "                for (i = 0; i < ");
    ch_buf_printf(b, "%zu; i++) v[i] = s[i];\n", n);
    for (size_t r = 0; r < mi; r++)
        ch_buf_printf(b, "                v[%d] = s[%d] - lam * d[%zu];\n", mf->indep[r],
                      mf->indep[r], r);
    ch_buf_printf(b, "                if (kn_res(t, x, p, v, o, &r1) == 0 &&\n"
                     "                    r1 <= (1.0 - 1e-4 * lam) * r0) break;\n"
                     "                if (lam < 1e-12) break;\n"
                     "            }\n"
                     "            if (lam < 1e-12) {\n"
                     "                /* no decrease at any step: converged to round-off\n"
                     "                 * or stuck */\n"
                     "                for (i = 0; i < %zu; i++) v[i] = s[i];\n"
                     "                if (r0 <= 1e-12 * (1.0 + ysum)) return 0;\n"
                     "                break;\n"
                     "            }\n"
                     "            r0 = r1;\n"
                     "            for (step = 0.0, i = 0; i < %zu; i++) step += fabs(lam * d[i]);\n"
                     "            for (size = 1.0, i = 0; i < %zu; i++) size += fabs(v[i]);\n"
                     "            if (step <= 1e-13 * size) return 0;\n"
                     "        }\n    }\n    return 1;\n}\n\n",
                  n, mi, n);
}

/* static int kn_vel(t, x, p, vs, v): all n velocities from the state into
 * v (not overlapping vs), the dependent ones solving the constraints;
 * implicit alpha's Newton starts from vs (put_newton_start). */
void ch_em_fun_vel(emitter *e)
{
    ch_buf *b = &e->kern;
    const ch_manifold *mf = &e->d->mf;
    const ch_reduced *red = &e->d->red;
    size_t n = e->n, k = e->k;
    /* Newton's roots checked against the initial state's branch (not in
     * the full form, which has no chart to keep) */
    int branch = k > 0 && !ch_em_alpha_closed(e) && mf->dep_sign && e->form != CH_FORM_FULL;
    if (k > 0 && ch_em_alpha_closed(e)) {
        /* alpha, then its guards (a closed form valid on one branch) */
        const ch_expr **o = ch_em_earr(e, k + red->nguard);
        if (!o) return;
        for (size_t nu = 0; nu < k; nu++) o[nu] = red->alpha[nu];
        for (size_t g = 0; g < red->nguard; g++) o[k + g] = red->alpha_guard[g];
        ch_em_kernel(e, "alpha", k + red->nguard, o);
        e->alpha_ops = e->last;
    } else if (k > 0) {
        ch_em_kernel_con(e);
    }
    if (e->form == CH_FORM_HAMILTON && !e->ham_numeric) {
        e->eta_from_kane = ch_em_kernel_or_kane(e, "eta", e->mi, e->d->ham.eta,
                                          e->ham_kane ? e->ham_kane->eta : NULL);
        e->eta_ops = e->last;
    }
    if (e->failed) return;
    if (k > 0 && branch)
        ch_buf_printf(b, "/* 0 when the LU factors (w, piv) of the dependent block have the\n"
                         " * sign of its determinant at the model's initial state (%+d): the\n"
                         " * root is on the initial state's branch; 1 otherwise. */\n"
                         "static int kn_branch(const double *w, const int *piv)\n{\n"
                         "    int i, sign = 1;\n"
                         "    for (i = 0; i < %zu; i++) {\n"
                         "        if (w[i * %zu] < 0.0) sign = -sign;\n"
                         "        if (piv[i] != i) sign = -sign;\n"
                         "    }\n"
                         "    return sign == %d ? 0 : 1;\n}\n\n",
                      mf->dep_sign, k, k + 1, mf->dep_sign);
    ch_buf_put(b, "/* Dependent velocities from the independent ones: 0, or 1 when\n"
                  " * the constraint block is singular or Newton does not converge. */\n"
                  "static int kn_dep(double t, const double *x, const double *p, double *v)\n{\n");
    if (k == 0) {
        ch_buf_put(b, "    (void)t; (void)x; (void)p; (void)v;\n    return 0;\n}\n\n");
    } else if (ch_em_alpha_closed(e)) {
        ch_buf_printf(b, "    %sdouble a[%zu];\n    kn_alpha(t, x, p, v, a);\n",
                      ch_emit_storage(k + red->nguard, &e->needs), k + red->nguard);
        for (size_t nu = 0; nu < k; nu++)
            ch_buf_printf(b, "    v[%d] = a[%zu];\n", mf->dep[nu], nu);
        if (red->nguard) /* the branch of the initial state is lost there */
            ch_buf_put(b, "    /* the root of the initial state's branch: lost where a guard\n"
                          "     * (the radicand, the leading coefficient squared) is not\n"
                          "     * positive */\n");
        for (size_t g = 0; g < red->nguard; g++)
            ch_buf_printf(b, "    if (!(a[%zu] > 0.0)) return 1;\n", k + g);
        ch_buf_put(b, "    return 0;\n}\n\n");
    } else {
        /* Implicit alpha: damped Newton on phi(v_dep) = 0 with the
         * dependent block of G, from the entries already in v. The step
         * is halved until |phi| decreases: a full step from a poor start
         * can overshoot by orders of magnitude (exp(z' - a) - 1 from 0
         * jumps to e^a). A root is accepted when the block's determinant
         * (from the LU factors of the last step) has the sign it has at
         * the initial state (kn_branch), so Newton never lands silently
         * on another branch of the roots across a fold. */
        const char *done = branch ? "kn_branch(w, piv)" : "0";
        e->needs |= CH_NEEDS_LA_SOLVE;
        ch_buf_printf(b, "    %sdouble o[%zu], w[%zu], d[%zu], s[%zu];\n"
                         "    double r0, r1, lam, step, size;\n"
                         "    %sint piv[%zu];\n"
                         "    int it, i;\n"
                         "    for (it = 0; it < 100; it++) {\n"
                         "        kn_con(t, x, p, v, o);\n"
                         "        for (r0 = 0.0, i = 0; i < %zu; i++) r0 += fabs(o[i]);\n"
                         "        if (!(r0 == r0) || r0 > 1e300) return 1;\n"
                         "        if (la_solve(%zu, 1, o + %zu, o, 0, w, piv)) return 1;\n",
                      ch_emit_storage(2 * k * k + 3 * k + 1, &e->needs), k + k * k, k * k + 1, k, k,
                      ch_emit_storage(k + 1, &e->needs), k + 1, k, k, k);
        for (size_t nu = 0; nu < k; nu++)
            ch_buf_printf(b, "        d[%zu] = o[%zu];\n        s[%zu] = v[%d];\n",
                          nu, nu, nu, mf->dep[nu]);
        ch_buf_put(b, "        for (lam = 1.0;; lam *= 0.5) {\n");
        for (size_t nu = 0; nu < k; nu++)
            ch_buf_printf(b, "            v[%d] = s[%zu] - lam * d[%zu];\n", mf->dep[nu], nu, nu);
        ch_buf_printf(b, "            kn_con(t, x, p, v, o);\n"
                         "            for (r1 = 0.0, i = 0; i < %zu; i++) r1 += fabs(o[i]);\n"
                         "            if (r1 == r1 && r1 <= (1.0 - 1e-4 * lam) * r0) break;\n"
                         "            if (lam < 1e-12) {\n"
                         "                /* no decrease at any step: converged to round-off\n"
                         "                 * or stuck */\n", k);
        for (size_t nu = 0; nu < k; nu++)
            ch_buf_printf(b, "                v[%d] = s[%zu];\n", mf->dep[nu], nu);
        ch_buf_put(b, "                size = 1.0;\n");
        for (size_t nu = 0; nu < k; nu++)
            ch_buf_printf(b, "                size += fabs(s[%zu]);\n", nu);
        ch_buf_printf(b, "                return r0 <= 1e-12 * size ? %s : 1;\n"
                         "            }\n"
                         "        }\n"
                         "        for (step = 0.0, size = 1.0, i = 0; i < ", done);
        ch_buf_printf(b, "%zu; i++) {\n"
                         "            step += fabs(lam * d[i]);\n"
                         "            size += fabs(s[i]);\n"
                         "        }\n"
                         "        if (step <= 1e-13 * size) return %s;\n"
                         "    }\n    return 1;\n}\n\n", k, done);
    }
    if (e->ham_numeric) fun_legendre(e);
    ch_buf_put(b, "/* All n velocities of the state x. */\n"
                  "static int kn_vel(double t, const double *x, const double *p, const double *vs,\n"
                  "                  double *v)\n{\n");
    if (e->form == CH_FORM_FULL) {
        ch_buf_printf(b, "    int i;\n    (void)t; (void)p; (void)vs;\n"
                         "    for (i = 0; i < %zu; i++) v[i] = x[%zu + i];\n    return 0;\n}\n\n",
                      n, n);
        return;
    }
    if (e->ham_numeric) {
        ch_buf_put(b, "    return kn_inv(t, x, p, vs, v);\n}\n\n");
        return;
    }
    ch_buf_printf(b, "    int i;\n    (void)vs;\n    for (i = 0; i < %zu; i++) v[i] = 0.0;\n", n);
    put_newton_start(e, b, "    ");
    if (e->form == CH_FORM_HAMILTON) {
        ch_buf_printf(b, "    {\n        double eta[%zu];\n        kn_eta(t, x, p, v, eta);\n", e->mi);
        for (size_t r = 0; r < e->mi; r++)
            ch_buf_printf(b, "        v[%d] = eta[%zu];\n", mf->indep[r], r);
        ch_buf_put(b, "    }\n");
    } else {
        for (size_t r = 0; r < e->mi; r++)
            ch_buf_printf(b, "    v[%d] = x[%zu];\n", mf->indep[r], n + r);
    }
    ch_buf_put(b, "    return kn_dep(t, x, p, v);\n}\n\n");
}

void ch_em_fun_state_from(emitter *e)
{
    ch_buf *b = &e->fun;
    const ch_manifold *mf = &e->d->mf;
    size_t n = e->n;
    if (e->form == CH_FORM_HAMILTON) /* y* = A v of the Kane form, or as derived */
        ch_em_kernel_or_kane(e, "ystar", e->mi, e->d->red.y_star,
                       e->ham_kane ? e->ham_kane->ystar : NULL);
    ch_buf_printf(b, "int %s_state_from(double t, const double *q, const double *qt,\n"
                     "    const double *p, double *x)\n{\n"
                     "    double v[%zu];\n    int i;\n"
                     "    for (i = 0; i < %zu; i++) {\n        x[i] = q[i];\n        v[i] = qt[i];\n    }\n"
                     "%s"
                     "    if (kn_dep(t, x, p, v)) return 1;\n",
                  e->P, n, n, e->h ? "    if (kn_qproj(t, x, p, v, 1e-12)) return 1;\n" : "");
    if (e->form == CH_FORM_FULL) {
        ch_buf_printf(b, "    for (i = 0; i < %zu; i++) x[%zu + i] = v[i];\n", n, n);
    } else if (e->form == CH_FORM_REDUCED) {
        for (size_t r = 0; r < e->mi; r++)
            ch_buf_printf(b, "    x[%zu] = v[%d];\n", n + r, mf->indep[r]);
    } else {
        ch_buf_printf(b, "    kn_ystar(t, x, p, v, x + %zu);\n", n);
    }
    ch_buf_put(b, "    return 0;\n}\n\n");
    ch_buf_printf(b, "void %s_initial(double *x)\n{\n    static const double q[%zu] = {", e->P, n);
    for (size_t i = 0; i < n; i++) {
        ch_buf_put(b, i ? ", " : "");
        ch_c_double(b, e->d->init.q[i]);
    }
    ch_buf_printf(b, "};\n    static const double qt[%zu] = {", n);
    for (size_t i = 0; i < n; i++) {
        ch_buf_put(b, i ? ", " : "");
        ch_c_double(b, e->d->init.qt[i]);
    }
    ch_buf_printf(b, "};\n    (void)%s_state_from(0.0, q, qt, %s_param_defaults, x);\n}\n\n",
                  e->P, e->P);
}

/* The symbolic path's outputs: M* (m*m) and f (m) of the reduced
 * equations (ch_reduce_system); NULL on failure. */
const ch_expr **ch_em_red_outputs(emitter *e)
{
    const ch_expr **o = ch_em_earr(e, e->mi * e->mi + e->mi);
    if (!o) return NULL;
    if (ch_reduce_system(e->ctx, &e->d->red, o)) {
        ch_em_emit_fail(e, CH_ERR_LIMIT, "expression limit in the reduced equations");
        return NULL;
    }
    return o;
}

/* Whether the form is a chart (THEORY §4-5): reduced and hamilton with
 * constraints, whose state is valid only where G_d (and, for hamilton,
 * the Legendre map's K) is regular. */
int ch_em_has_chart(const emitter *e)
{
    return e->form != CH_FORM_FULL && e->k > 0;
}

/* 1 when the velocities of the state come from Newton iterations whose
 * start the PREFIX_*_from functions take (implicit alpha in a reduced or
 * hamilton form, the numeric Legendre inverse). */
int ch_em_newton_start(const emitter *e)
{
    return (e->form != CH_FORM_FULL && e->k > 0 && !ch_em_alpha_closed(e)) || e->ham_numeric;
}

/* The chart's conditioning (README "Charts"): kn_cq(t, x, p, v) at all n
 * velocities v, a number in [0, 1], 0 where singular:
 *  - G_d: every row of G (k x n) scaled to unit Euclidean length (so
 *    the number does not depend on how a constraint is written), then the
 *    smallest pivot of an LU with partial pivoting of the dependent
 *    columns of those rows. For k = 1 it is |G_d| / |G|, the sine of the
 *    angle between the constraint's normal and the independent
 *    velocities' plane; in general an estimate of the smallest singular
 *    value of the row-scaled G_d (at most 1: the first pivot is an entry
 *    of a unit row).
 *  - hamilton also K = d y* by dq'_r (the Legendre map): scaled to unit
 *    diagonal, the smallest diagonal entry of its Cholesky factor (the
 *    sine of the smallest angle between a column and the span of the
 *    others in K's metric; 0 where K is not positive definite).
 * The quality is the smaller of the two. PREFIX_chart_quality computes
 * the velocities first; the rhs calls kn_cq at the velocities it has. */
void ch_em_fun_chart(emitter *e)
{
    ch_buf *b = &e->kern;
    size_t n = e->n, k = e->k, mi = e->mi;
    if (!ch_em_has_chart(e)) {
        ch_buf_printf(&e->fun, "double %s_chart_quality_from(double t, const double *x, const double *p,\n"
                               "    const double *vs)\n{\n"
                               "    (void)t; (void)x; (void)p; (void)vs;\n    return 1.0;\n}\n\n",
                      e->P);
        return;
    }
    const ch_expr **o = ch_em_earr(e, k * n);
    if (!o) return;
    for (size_t j = 0; j < k * n; j++) o[j] = e->d->lag.G[j];
    ch_em_kernel(e, "gq", k * n, o);
    int kq = e->form == CH_FORM_HAMILTON && e->d->ham.K && mi > 0;
    if (kq) {
        const ch_expr **ko = ch_em_earr(e, mi * mi);
        if (!ko) return;
        for (size_t j = 0; j < mi * mi; j++) ko[j] = e->d->ham.K[j];
        ch_em_kernel(e, "kq", mi * mi, ko);
    }
    if (e->failed) return;
    /* the rhs's test where kn_acc has none (hamilton, or a program
     * without G_d): G_d's pivots against their rows, as kn_acc's */
    const ch_expr **chart = ch_em_earr(e, 2 * k);
    ch_cse_prog ck;
    int need = !(e->form == CH_FORM_REDUCED && e->acc_chart);
    e->ck = need && chart && ch_em_chart_exprs(e, chart) == 0
            && ch_em_kernel_build(e, 2 * k, chart, &ck, 0) == 0;
    if (e->ck) {
        ch_buf_put(b, "/* 2 where a pivot of the triangular G_d is numerically 0 against its\n"
                      " * row of G (the chart is singular), 1 where a constant one is 0. */\n"
                      "static int kn_ck(double t, const double *x, const double *p, const double *v)\n{\n"
                      "    (void)t; (void)x; (void)p; (void)v;\n");
        ch_em_put_body(b, &ck);
        ch_em_pivot_check_at(e, chart, ck.ref, 0, b);
        ch_buf_put(b, "    return 0;\n}\n\n");
        ch_opcount_add(&e->before, &ck.before);
        ch_opcount_add(&e->after, &ck.after);
        ch_cse_prog_free(&ck);
    }
    if (e->failed) return;
    ch_buf_printf(b, "/* The chart's conditioning in [0, 1] at the velocities v (0: singular):\n"
                     " * the smallest pivot of an LU with partial pivoting of G_d, every row of\n"
                     " * G scaled to unit length%s. */\n"
                     "static double kn_cq(double t, const double *x, const double *p, const double *v)\n{\n"
                     "    static const int dep[%zu] = {",
                  kq ? "; for hamilton at most the smallest diagonal entry\n"
                       " * of the Cholesky factor of K scaled to unit diagonal" : "", k);
    for (size_t a = 0; a < k; a++) ch_buf_printf(b, "%s%d", a ? ", " : "", e->d->mf.dep[a]);
    ch_buf_printf(b, "};\n"
                     "    %sdouble g[%zu], a[%zu];\n"
                     "    double s, f, m, q = 1.0;\n"
                     "    int r, c, j, pr;\n"
                     "    kn_gq(t, x, p, v, g);\n"
                     "    for (r = 0; r < %zu; r++) {\n"
                     "        for (s = 0.0, j = 0; j < %zu; j++) s += g[r * %zu + j] * g[r * %zu + j];\n"
                     "        if (!(s > 0.0 && s <= 1e300)) return 0.0;\n"
                     "        s = 1.0 / sqrt(s);\n"
                     "        for (c = 0; c < %zu; c++) a[r * %zu + c] = g[r * %zu + dep[c]] * s;\n"
                     "    }\n"
                     "    for (c = 0; c < %zu; c++) {\n"
                     "        for (pr = c, m = fabs(a[c * %zu + c]), r = c + 1; r < %zu; r++)\n"
                     "            if (fabs(a[r * %zu + c]) > m) m = fabs(a[r * %zu + c]), pr = r;\n"
                     "        if (!(m > 0.0)) return 0.0;\n"
                     "        if (m < q) q = m;\n"
                     "        if (pr != c)\n"
                     "            for (j = c; j < %zu; j++)\n"
                     "                f = a[c * %zu + j], a[c * %zu + j] = a[pr * %zu + j], a[pr * %zu + j] = f;\n"
                     "        for (r = c + 1; r < %zu; r++) {\n"
                     "            if (a[r * %zu + c] == 0.0) continue;\n"
                     "            f = a[r * %zu + c] / a[c * %zu + c];\n"
                     "            for (j = c + 1; j < %zu; j++) a[r * %zu + j] -= f * a[c * %zu + j];\n"
                     "        }\n"
                     "    }\n",
                  ch_emit_storage(k * n + k * k, &e->needs), k * n, k * k, k, n, n, n, k, k, n, k, k, k, k, k,
                  k, k, k, k, k, k, k, k, k, k, k, k);
    if (kq)
        ch_buf_printf(b, "    {\n"
                         "        %sdouble K[%zu], d[%zu];\n"
                         "        kn_kq(t, x, p, v, K);\n"
                         "        for (r = 0; r < %zu; r++) {\n"
                         "            s = K[r * %zu + r];\n"
                         "            if (!(s > 0.0 && s <= 1e300)) return 0.0;\n"
                         "            d[r] = 1.0 / sqrt(s);\n"
                         "        }\n"
                         "        for (r = 0; r < %zu; r++)\n"
                         "            for (c = 0; c <= r; c++) K[r * %zu + c] *= d[r] * d[c];\n"
                         "        for (c = 0; c < %zu; c++) {\n"
                         "            for (s = K[c * %zu + c], j = 0; j < c; j++) s -= K[c * %zu + j] * K[c * %zu + j];\n"
                         "            if (!(s > 0.0)) return 0.0;\n"
                         "            s = sqrt(s);\n"
                         "            if (s < q) q = s;\n"
                         "            K[c * %zu + c] = s;\n"
                         "            for (r = c + 1; r < %zu; r++) {\n"
                         "                for (f = K[r * %zu + c], j = 0; j < c; j++) f -= K[r * %zu + j] * K[c * %zu + j];\n"
                         "                K[r * %zu + c] = f / s;\n"
                         "            }\n"
                         "        }\n"
                         "    }\n",
                      ch_emit_storage(mi * mi + mi, &e->needs), mi * mi, mi, mi, mi, mi, mi, mi, mi, mi, mi, mi,
                      mi, mi, mi, mi, mi);
    ch_buf_put(b, "    return q == q ? q : 0.0;\n}\n\n");
    ch_buf_printf(&e->fun,
                  "double %s_chart_quality_from(double t, const double *x, const double *p,\n"
                  "    const double *vs)\n{\n"
                  "    double v[%zu];\n"
                  "    int i;\n"
                  "    for (i = 0; i < %zu; i++) v[i] = 0.0;\n"
                  "    if (kn_vel(t, x, p, vs, v)) return 0.0;\n"
                  "    return kn_cq(t, x, p, v);\n}\n\n",
                  e->P, n, n);
}

void ch_em_fun_rhs(emitter *e)
{
    ch_buf *b = &e->fun;
    size_t n = e->n, mi = e->mi;
    if (ch_em_has_chart(e)) {
        ch_buf_printf(b, "static int kn_rhs(double t, const double *x, const double *p,\n"
                         "                  const double *vs, double *dxdt, double *v)\n{\n"
                         "    int i;\n");
    } else {
        ch_buf_printf(b, "int %s_rhs_from(double t, const double *x, const double *p,\n"
                         "    const double *vs, double *dxdt)\n{\n"
                         "    double v[%zu];\n    int i;\n", e->P, n);
    }
    if (e->form == CH_FORM_FULL) {
        put_dyn_decls(e, b);
        ch_buf_put(b, "    if (kn_vel(t, x, p, vs, v)) return 1;\n");
        ch_em_put_dyn_solve(e, b, 0);
        ch_buf_printf(b, "    for (i = 0; i < %zu; i++) {\n        dxdt[i] = v[i];\n"
                         "        dxdt[%zu + i] = acc[i];\n    }\n    return 0;\n}\n\n", n, n);
    } else if (e->fused) {
        /* kn_acc writes v_dep (alpha) along with the accelerations */
        ch_buf_put(b, "    (void)vs;\n");
        for (size_t r = 0; r < mi; r++)
            ch_buf_printf(b, "    v[%d] = x[%zu];\n", e->d->mf.indep[r], n + r);
        ch_buf_printf(b, "    if ((i = kn_acc(t, x, p, v, dxdt + %zu)) != 0) return i;\n"
                         "    for (i = 0; i < %zu; i++) dxdt[i] = v[i];\n"
                         "    return 0;\n}\n\n", n, n);
    } else if (e->form == CH_FORM_REDUCED) {
        ch_buf_printf(b, "    if (kn_vel(t, x, p, vs, v)) return 1;\n"
                         "    if ((i = kn_acc(t, x, p, v, dxdt + %zu)) != 0) return i;\n"
                         "    for (i = 0; i < %zu; i++) dxdt[i] = v[i];\n"
                         "    return 0;\n}\n\n", n, n);
    } else if (e->ham_numeric) {
        /* y_t = K v_t + (d y* by dq) q_t + d y* by dt: the image of the
         * reduced flow under the Legendre map. */
        ch_buf_printf(b, "    %sdouble o[%zu], vt[%zu];\n"
                         "    if (kn_vel(t, x, p, vs, v) || kn_acc(t, x, p, v, vt)) return 1;\n"
                         "    kn_hyt(t, x, p, v, o);\n"
                         "    for (i = 0; i < %zu; i++) dxdt[i] = v[i];\n"
                         "    for (i = 0; i < %zu; i++) {\n"
                         "        double s = o[%zu + i];\n"
                         "        int j;\n"
                         "        for (j = 0; j < %zu; j++) s += o[i * %zu + j] * vt[j];\n"
                         "        dxdt[%zu + i] = s;\n    }\n"
                         "    return 0;\n}\n\n",
                      ch_emit_storage(mi * mi + 2 * mi, &e->needs), mi * mi + mi, mi, n, mi, mi * mi, mi, mi, n);
    } else if (e->ham_fused) {
        ch_buf_printf(b, "    (void)vs;\n    kn_hrhs(t, x, p, v, dxdt + %zu);\n"
                         "    for (i = 0; i < %zu; i++) dxdt[i] = v[i];\n    return 0;\n}\n\n",
                      n, n);
    } else {
        ch_buf_put(b, "    if (kn_vel(t, x, p, vs, v)) return 1;\n");
        ch_buf_printf(b, "    for (i = 0; i < %zu; i++) dxdt[i] = v[i];\n"
                         "    kn_ham(t, x, p, v, dxdt + %zu);\n    return 0;\n}\n\n", n, n);
    }
}

/* PREFIX_rhs of a chart: the form's right side (kn_rhs) and then the
 * chart's check: 2 where kn_cq < CH_CHART_SINGULAR at the velocities the
 * right side used (or, where it failed, the independent ones), so that a
 * numerically singular chart is never integrated through. */
void ch_em_fun_rhs_chart(emitter *e)
{
    if (!ch_em_has_chart(e)) return;
    ch_buf *b = &e->fun;
    size_t n = e->n;
    if (e->form == CH_FORM_REDUCED && e->acc_chart) {
        /* kn_acc tests G_d's pivots against their rows (2 where singular) */
        ch_buf_printf(b, "int %s_rhs_from(double t, const double *x, const double *p,\n"
                         "    const double *vs, double *dxdt)\n{\n"
                         "    double v[%zu];\n"
                         "    return kn_rhs(t, x, p, vs, dxdt, v);\n}\n\n", e->P, n);
        return;
    }
    ch_buf_printf(b, "int %s_rhs_from(double t, const double *x, const double *p,\n"
                     "    const double *vs, double *dxdt)\n{\n"
                     "    double v[%zu];\n    int i, rc;\n"
                     "    for (i = 0; i < %zu; i++) v[i] = 0.0;\n",
                  e->P, n, n);
    for (size_t r = 0; r < e->mi && e->form == CH_FORM_REDUCED; r++)
        ch_buf_printf(b, "    v[%d] = x[%zu];\n", e->d->mf.indep[r], n + r);
    if (e->ck) { /* G_d's pivots against their rows (kn_ck) */
        ch_buf_put(b, "    rc = kn_rhs(t, x, p, vs, dxdt, v);\n"
                      "    /* the chart is numerically singular here: not a value to trust */\n"
                      "    if (kn_ck(t, x, p, v) == 2) return 2;\n"
                      "    return rc;\n}\n\n");
        return;
    }
    ch_buf_printf(b, "    rc = kn_rhs(t, x, p, vs, dxdt, v);\n"
                     "    /* the chart is numerically singular here: not a value to trust */\n"
                     "    if (!(kn_cq(t, x, p, v) >= %g)) return 2;\n"
                     "    return rc;\n}\n\n", CH_CHART_SINGULAR);
}

void ch_em_fun_energy_vel(emitter *e)
{
    ch_buf *b = &e->fun;
    size_t n = e->n;
    ch_em_kernel_or_kane(e, "en", 1, &e->d->lag.energy, e->en_kane ? &e->en_kane : NULL);
    ch_buf_printf(b, "double %s_energy_from(double t, const double *x, const double *p,\n"
                     "    const double *vs)\n{\n"
                     "    double v[%zu], en;\n"
                     "    if (kn_vel(t, x, p, vs, v)) return HUGE_VAL;\n"
                     "    kn_en(t, x, p, v, &en);\n    return en;\n}\n\n", e->P, n);
    ch_buf_printf(b, "int %s_velocities_from(double t, const double *x, const double *p,\n"
                     "    const double *vs, double *qt)\n{\n"
                     "    double v[%zu];\n    int i, rc = kn_vel(t, x, p, vs, v);\n"
                     "    for (i = 0; i < %zu; i++) qt[i] = v[i];\n    return rc;\n}\n\n",
                  e->P, n, n);
}

void ch_em_fun_outputs(emitter *e)
{
    ch_buf *b = &e->fun;
    size_t n = e->n, k = e->k, mi = e->mi, col = 0;
    ch_buf_printf(b, "int %s_outputs_from(double t, const double *x, const double *p,\n"
                     "    const double *vs, double *out)\n{\n", e->P);
    if (e->nout == 0) {
        ch_buf_put(b, "    (void)t; (void)x; (void)p; (void)vs; (void)out;\n    return 0;\n}\n\n");
        return;
    }
    ch_buf_printf(b, "    double v[%zu];\n", n);
    if (k > 0) {
        ch_buf_put(b, "    int i, j;\n");
        put_dyn_decls(e, b);
    }
    ch_buf_put(b, "    if (kn_vel(t, x, p, vs, v)) return 1;\n");
    if (e->form == CH_FORM_HAMILTON && e->cols) {
        ch_em_kernel(e, "ycol", mi, e->cols->ystar);
        ch_buf_printf(b, "    kn_ycol(t, x, p, v, out);\n");
        col += mi;
    } else if (e->form == CH_FORM_HAMILTON) {
        for (size_t r = 0; r < mi; r++) ch_buf_printf(b, "    out[%zu] = x[%zu];\n", col++, n + r);
    }
    if (e->form == CH_FORM_FULL && k > 0) {
        ch_buf_printf(b, "    kn_con(t, x, p, v, o);\n"
                         "    for (i = 0; i < %zu; i++) out[%zu + i] = o[i];\n", k, col);
        col += k;
    }
    if (k > 0) {
        ch_em_put_dyn_solve(e, b, 1);
        ch_buf_printf(b, "    for (i = 0; i < %zu; i++) out[%zu + i] = lam[i];\n", k, col);
        col += k;
        ch_buf_printf(b, "    for (i = 0; i < %zu; i++) {\n        double s = 0.0;\n"
                         "        for (j = 0; j < %zu; j++) s += lam[j] * o[%zu + j * %zu + i];\n"
                         "        out[%zu + i] = s;\n    }\n",
                      n, k, n * n, n, col);
        col += n;
    }
    /* Declared integrals last, at the full velocities kn_vel rebuilt. */
    if (e->m->nintegrals > 0) {
        const ch_expr **f = ch_em_earr(e, e->m->nintegrals);
        if (!f) return;
        for (size_t j = 0; j < e->m->nintegrals; j++) f[j] = e->m->integrals[j].expr;
        ch_em_kernel(e, "integ", e->m->nintegrals, f);
        ch_buf_printf(b, "    kn_integ(t, x, p, v, out + %zu);\n", col);
        col += e->m->nintegrals;
    }
    /* The position residuals g(t, q) of the holonomic constraints. */
    if (e->h > 0) {
        ch_buf_printf(b, "    kn_hol(t, x, p, v, out + %zu);\n", col);
    }
    ch_buf_put(b, "    return 0;\n}\n\n");
}

/* static int kn_qproj(t, x, p, v, tol): the coordinates x[0..n) onto
 * the holonomic constraints by Newton's method with the step of least
 * kinetic-metric norm, dq = -M^-1 J^T (J M^-1 J^T)^-1 g (J = dg/dq, the
 * constraints' rows of G; M at the velocities v), until the step is at
 * rounding level; with tol > 0 only when some constraint is farther than
 * tol (1 + max |x_j| it involves) (distance |g| / |dg/dq|). 0, or 1 when
 * singular or not converged in 30 steps. */
void ch_em_fun_qproj(emitter *e)
{
    ch_buf *b = &e->fun;
    size_t n = e->n, k = e->k, h = e->h;
    ch_buf_put(b, "static int kn_qproj(double t, double *x, const double *p, const double *v,\n"
                  "                    double tol)\n{\n");
    put_sizes(e, b);
    ch_buf_printf(b, "    static const int hol[%zu] = {", h);
    for (size_t a = 0; a < h; a++) ch_buf_printf(b, "%s%d", a ? ", " : "", e->d->init.hol[a]);
    ch_buf_printf(b, "};\n"
                     "    %sdouble o[%zu], g[%zu], jq[%zu], q[%zu];\n"
                     "    int it, i, j;\n"
                     "    for (it = 0; it < 30; it++) {\n"
                     "        double step = 0.0, size = 1.0;\n"
                     "        kn_dyn(t, x, p, v, o);\n"
                     "        kn_hol(t, x, p, v, g);\n"
                     "        for (i = 0; i < %zu; i++)\n"
                     "            for (j = 0; j < %zu; j++) jq[i * %zu + j] = o[%zu + hol[i] * %zu + j];\n"
                     "        if (it == 0 && tol > 0.0) {\n"
                     "            int far = 0;\n"
                     "            for (i = 0; i < %zu; i++) {\n"
                     "                double nrm = 0.0, big = 0.0;\n"
                     "                for (j = 0; j < %zu; j++) {\n"
                     "                    nrm += jq[i * %zu + j] * jq[i * %zu + j];\n"
                     "                    if (jq[i * %zu + j] != 0.0 && fabs(x[j]) > big) big = fabs(x[j]);\n"
                     "                }\n"
                     "                if (g[i] != 0.0 && !(fabs(g[i]) <= tol * (1.0 + big) * sqrt(nrm))) far = 1;\n"
                     "            }\n"
                     "            if (!far) return 0;\n"
                     "        }\n"
                     "        for (i = 0; i < %zu; i++) q[i] = x[i];\n"
                     "        if (la_proj(%zu, %zu, o, jq, g, x, w, piv)) return 1;\n"
                     "        for (i = 0; i < %zu; i++) {\n"
                     "            if (fabs(x[i] - q[i]) > step) step = fabs(x[i] - q[i]);\n"
                     "            if (fabs(x[i]) + 1.0 > size) size = fabs(x[i]) + 1.0;\n"
                     "        }\n"
                     "        if (!(step == step)) return 1;\n"
                     "        if (step <= 1e-13 * size) return 0;\n"
                     "    }\n"
                     "    return 1;\n}\n\n",
                  ch_emit_storage(n * n + k * n + n + k + h + h * n + n, &e->needs), n * n + k * n + n + k, h,
                  h * n, n, h, n, n, n * n, n, h, n, n, n, n, n, n, h,
                  n);
}

/* PREFIX_events: the declared event functions g(t, q, q') at the state's
 * velocities; the runtime locates their zero crossings. */
void ch_em_fun_events(emitter *e)
{
    ch_buf *b = &e->fun;
    size_t nev = e->m->nevents;
    ch_buf_printf(b, "int %s_events_from(double t, const double *x, const double *p,\n"
                     "    const double *vs, double *g)\n{\n", e->P);
    if (nev == 0) {
        ch_buf_put(b, "    (void)t; (void)x; (void)p; (void)vs; (void)g;\n    return 0;\n}\n\n");
        return;
    }
    const ch_expr **f = ch_em_earr(e, nev);
    if (!f) return;
    for (size_t j = 0; j < nev; j++) f[j] = e->m->events[j].expr;
    ch_em_kernel(e, "event", nev, f);
    ch_buf_printf(b, "    double v[%zu];\n"
                     "    if (kn_vel(t, x, p, vs, v)) return 1;\n"
                     "    kn_event(t, x, p, v, g);\n"
                     "    return 0;\n}\n\n", e->n);
}

/* PREFIX_project: the coordinates onto the holonomic constraints
 * (kn_qproj), then, in the full form, three minimum mass-norm corrections
 * of the velocities. The other forms' velocities follow from their state
 * at the new coordinates. */
void ch_em_fun_project(emitter *e)
{
    ch_buf *b = &e->fun;
    size_t n = e->n, k = e->k;
    int vel = e->form == CH_FORM_FULL && k > 0;
    ch_buf_printf(b, "int %s_project_from(double t, double *x, const double *p,\n"
                     "    const double *vs)\n{\n", e->P);
    if (!vel && e->h == 0) {
        ch_buf_put(b, "    (void)t; (void)x; (void)p; (void)vs;\n    return 0;\n}\n");
        return;
    }
    if (e->h == 0) ch_buf_put(b, "    (void)vs;\n");
    if (e->h > 0)
        ch_buf_printf(b, "    double v[%zu];\n"
                         "    if (kn_vel(t, x, p, vs, v) || kn_qproj(t, x, p, v, 0.0)) return 1;\n", n);
    if (vel) {
        put_sizes(e, b);
        ch_buf_printf(b, "    %sdouble o[%zu], ph[%zu];\n    int it;\n"
                         "    for (it = 0; it < 3; it++) {\n"
                         "        kn_dyn(t, x, p, x + %zu, o);\n"
                         "        kn_con(t, x, p, x + %zu, ph);\n"
                         "        if (la_proj(%zu, %zu, o, o + %zu, ph, x + %zu, w, piv)) return 1;\n"
                         "    }\n",
                      ch_emit_storage(n * n + k * n + n + 2 * k + k * k, &e->needs), n * n + k * n + n + k,
                      k + k * k, n, n, n, k, n * n, n);
    }
    ch_buf_put(b, "    return 0;\n}\n");
}

/* The API without a Newton start: PREFIX_F(...) is PREFIX_F_from(..., vs
 * = 0, ...), implicit alpha's Newton from the model's initial state. */
void ch_em_fun_plain(emitter *e)
{
    static const struct {
        const char *ret, *name, *args, *call;
    } f[] = {
        {"int", "rhs", "double t, const double *x, const double *p, double *dxdt", "t, x, p, 0, dxdt"},
        {"double", "energy", "double t, const double *x, const double *p", "t, x, p, 0"},
        {"int", "velocities", "double t, const double *x, const double *p, double *qt",
         "t, x, p, 0, qt"},
        {"int", "outputs", "double t, const double *x, const double *p, double *out",
         "t, x, p, 0, out"},
        {"int", "project", "double t, double *x, const double *p", "t, x, p, 0"},
        {"double", "chart_quality", "double t, const double *x, const double *p", "t, x, p, 0"},
        {"int", "events", "double t, const double *x, const double *p, double *g",
         "t, x, p, 0, g"},
    };
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++)
        ch_buf_printf(&e->fun, "%s %s_%s(%s)\n{\n    return %s_%s_from(%s);\n}\n\n", f[i].ret,
                      e->P, f[i].name, f[i].args, e->P, f[i].name, f[i].call);
}
