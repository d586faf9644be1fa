/* emit_c.c — the C99 code of one form (SPEC §4 plus the runtime's extra
 * entry points; see emit_c.h).
 *
 * Layout of the emitted translation unit: the header text (so the .c is
 * self-contained for the JIT), the name tables, the solver templates the
 * form needs, the kernels, then the public functions. A kernel is a
 * static function kn_NAME(t, x, p, v, o) that writes the CSE'd values of
 * a list of expressions to o; v holds all n velocities, so every kernel
 * uses one symbol mapping: t, q_i -> x[i], q_t_i -> v[i], parameters ->
 * p[i], Hamiltonian momenta y_r -> x[n + r]. Each public function first
 * reconstructs v from the state (form specific), then calls kernels and
 * the template solvers. Static names (kn_*, la_*) cannot collide with the
 * public PREFIX_WORD names whatever the prefix: their suffixes differ.
 * This file has the names, the kernels and the assembly; the public
 * functions are emit_fun.c's, kn_acc's candidates emit_acc.c's
 * (emit_impl.h). */
#include "codegen/emit_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "embedded.h"
#include "core/factor.h"
#include "core/matrix.h"
#include "core/simplify.h"
#include "core/subst.h"
#include "core/version.h"

int ch_form_parse(const char *name)
{
    if (!name) return -1;
    if (strcmp(name, "full") == 0) return CH_FORM_FULL;
    if (strcmp(name, "reduced") == 0) return CH_FORM_REDUCED;
    if (strcmp(name, "hamilton") == 0) return CH_FORM_HAMILTON;
    return -1;
}

const char *ch_form_name(ch_form f)
{
    switch (f) {
    case CH_FORM_FULL: return "full";
    case CH_FORM_REDUCED: return "reduced";
    case CH_FORM_HAMILTON: return "hamilton";
    }
    return "?";
}

const char *ch_em_namer(void *data, const ch_sym *s)
{
    emitter *e = data;
    return s->sid < e->nsyms ? e->symtext[s->sid] : NULL;
}

static int is_ident(const char *s)
{
    if (!s || !*s || strlen(s) > 64) return 0;
    if (!((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') || *s == '_')) return 0;
    for (; *s; s++)
        if (!((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') ||
              (*s >= '0' && *s <= '9') || *s == '_'))
            return 0;
    return 1;
}

/* A C string literal: anything but [A-Za-z0-9_'] as an octal escape. */
static void put_cstring(ch_buf *b, const char *s)
{
    ch_buf_putc(b, '"');
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
            (c >= '0' && c <= '9') || c == '_' || c == '\'')
            ch_buf_putc(b, (char)c);
        else
            ch_buf_printf(b, "\\%03o", c);
    }
    ch_buf_putc(b, '"');
}

static int set_names(emitter *e)
{
    e->nsyms = ch_ctx_nsyms(e->ctx);
    e->symtext = ch_ctx_alloc(e->ctx, (e->nsyms + 1) * sizeof *e->symtext);
    if (!e->symtext) return -1;
    char buf[48];
#define NAME(node, ...)                                                  \
    do {                                                                 \
        snprintf(buf, sizeof buf, __VA_ARGS__);                          \
        e->symtext[ch_sym_of(node)->sid] = ch_ctx_strdup(e->ctx, buf);       \
    } while (0)
    NAME(e->m->t, "t");
    for (size_t i = 0; i < e->n; i++) {
        NAME(e->m->q[i], "x[%zu]", i);
        NAME(e->m->qt[i], "v[%zu]", i);
    }
    for (size_t i = 0; i < e->m->np; i++) NAME(e->m->param[i], "p[%zu]", i);
    if (e->form == CH_FORM_HAMILTON && !e->ham_numeric)
        for (size_t r = 0; r < e->mi; r++) NAME(e->d->ham.y[r], "x[%zu]", e->n + r);
#undef NAME
    return 0;
}

/* The CSE'd program of a kernel's outputs; 0, or nonzero with the
 * emitter failed. */
int ch_em_kernel_build(emitter *e, size_t nout, const ch_expr *const *outs,
                        ch_cse_prog *prog, int again)
{
    if (e->failed) return -1;
    /* kept when asked for again (again: by another form of the model):
     * kn_dyn's program always (kn_acc starts from it), the others when
     * the cache is the caller's */
    int dyn = outs == e->dyn_outs && nout == e->ndyn;
    ch_cse_cache *c = dyn || (again && e->shared) ? e->cache : NULL;
    if (ch_cse_build_cached(e->ctx, c, nout, outs, ch_em_namer, e, "w", "    ", prog, e->err)) {
        ch_cse_prog_free(prog);
        e->failed = 1;
        return -1;
    }
    return 0;
}

/* A program's statements into b; an incomplete text (its body ran out of
 * memory after the CSE, e.g. the writes of v appended to it) makes b's
 * incomplete too, which the emitter reports. */
void ch_em_put_body(ch_buf *b, const ch_cse_prog *prog)
{
    ch_buf_putn(b, prog->body.s, prog->body.len); /* (no strlen of megabytes) */
    if (prog->body.oom) b->oom = 1;
}

/* static void kn_NAME(t, x, p, v, o): o[i] = outs[i] (v writable where
 * the program writes velocities into it); frees prog. */
static void kernel_put_v(emitter *e, const char *name, ch_cse_prog *prog, int writes_v)
{
    ch_buf *b = &e->kern;
    ch_buf_printf(b, "/* %zu values; ", prog->n);
    ch_opcount_print(b, &prog->after);
    ch_buf_printf(b, " */\nstatic void kn_%s(double t, const double *x, "
                     "const double *p, %sdouble *v, double *o)\n{\n"
                     "    (void)t; (void)x; (void)p; (void)v;\n", name, writes_v ? "" : "const ");
    ch_em_put_body(b, prog);
    for (size_t i = 0; i < prog->n; i++) { /* (printf is slow for tens of thousands) */
        char num[24];
        size_t d = sizeof num;
        num[--d] = '\0';
        size_t x = i;
        do num[--d] = (char)('0' + x % 10), x /= 10;
        while (x);
        ch_buf_put(b, "    o[");
        ch_buf_put(b, num + d);
        ch_buf_put(b, "] = ");
        ch_buf_put(b, prog->ref[i]);
        ch_buf_put(b, ";\n");
    }
    ch_buf_put(b, "}\n\n");
    ch_opcount_add(&e->before, &prog->before);
    ch_opcount_add(&e->after, &prog->after);
    e->last = prog->after;
    ch_cse_prog_free(prog);
}

static void kernel_put(emitter *e, const char *name, ch_cse_prog *prog)
{
    kernel_put_v(e, name, prog, 0);
}


/* The kernels that every form has (with the same outputs): their
 * programs are kept for the other forms (kernel_build). */
static int every_form(const char *name)
{
    return !strcmp(name, "dyn") || !strcmp(name, "alpha") || !strcmp(name, "en") ||
           !strcmp(name, "integ") || !strcmp(name, "hol") || !strcmp(name, "event");
}

/* The n values in (dag distinct nodes) with common factors out of their
 * sums (ch_factor_sums), distributing over small sums first (*one) and
 * not (*none): the latter only where the former did not halve the DAG.
 * Where it did (kn_dyn of the n-trailer from 10 trailers on: 1 271
 * nodes, distributed 613; of the 200-trailer 405 211, distributed
 * 106 918, not 365 017 in 504 485 new nodes) the undistributed
 * candidate never won, and making it was a tenth of `emit --form all`.
 * Every caller factors this way, in this order: node ids order the sums,
 * and a form's file must not depend on the forms emitted with it, which
 * factor the same values before it (kn_dyn of the full form before
 * kn_acc's of the reduced one without constraints). A NULL where the
 * factoring failed (ch_factor_sums). Returns the distinct nodes of *one
 * (0 when NULL). */
size_t ch_em_factor_both(emitter *e, size_t n, const ch_expr *const *in, size_t dag,
                          const ch_expr ***none, const ch_expr ***one)
{
    *one = ch_factor_sums(e->ctx, n, in, CH_DIST_ONE);
    size_t dag_one = *one ? ch_dag_size_many(n, *one, SIZE_MAX) : 0;
    *none = NULL;
    if (!*one || 2 * dag_one > dag) *none = ch_factor_sums(e->ctx, n, in, CH_DIST_NONE);
    return dag_one;
}

/* kn_NAME, from the outputs as they are or, for kn_dyn and kn_alpha,
 * with the common factors taken out of their sums (factor_both: with
 * and without distributing over small sums first; the Coriolis terms of
 * a chain, the bias of the n-trailer's constraints become a few products
 * of shared partial sums a row), whichever is
 * cheapest by call_cost, the earlier on a tie (kn_dyn's outputs,
 * e->dyn_outs, are then those used). The candidates are built smallest
 * DAG first, and those that cannot win are not (KERNEL_PRUNE_RATIO). */
void ch_em_kernel(emitter *e, const char *name, size_t nout, const ch_expr *const *outs)
{
    int again = every_form(name);
    /* the energy, the integrals, the constraints and the Legendre map are
     * evaluated once per output row or projection, not per rhs call: more
     * programs would only cost emit time. The hamilton form's own kernels
     * (eta, hyt, ystar) are left as they are: factoring them gains 15% of
     * its rhs time on the 10-trailer, but the nodes it creates, made in
     * another order when the reduced form was emitted first, would make
     * `emit --form all` print that form differently from `--form
     * hamilton` (sums are ordered by node id). */
    int rhs = !strcmp(name, "dyn") || !strcmp(name, "alpha");
    int dyn = !strcmp(name, "dyn");
    const ch_expr *const *cand[3] = {outs, NULL, NULL};
    size_t dag[3] = {0, 0, 0};
    /* a builder that failed left a NULL and the context's error, which
     * kernel_build reports (the factoring would clear it) */
    for (size_t i = 0; rhs && i < nout; i++)
        if (!outs[i]) rhs = 0;
    if (rhs) {
        dag[0] = ch_dag_size_many(nout, outs, SIZE_MAX);
        const ch_expr **none, **one;
        dag[2] = ch_em_factor_both(e, nout, outs, dag[0], &none, &one);
        dag[1] = none ? ch_dag_size_many(nout, none, SIZE_MAX) : 0;
        cand[1] = none, cand[2] = one;
        if (dyn) e->dyn_dist_halved = one && !none;
    }
    ch_cse_prog best, p;
    int have = -1;
    double best_cost = 0.0;
    for (int round = 0; round < 3 && !e->failed; round++) {
        int i = -1; /* the smallest DAG not yet tried */
        for (int j = 0; j < 3; j++)
            if (cand[j] && (i < 0 || dag[j] < dag[i])) i = j;
        if (i < 0) break;
        const ch_expr *const *c = cand[i];
        cand[i] = NULL;
        if (have >= 0 && dag[i] > KERNEL_PRUNE_RATIO * best_cost + KERNEL_PRUNE_SLACK) continue;
        if (dyn) e->dyn_outs = (const ch_expr **)c; /* so that kernel_build caches it */
        if (ch_em_kernel_build(e, nout, c, &p, again)) break;
        double cost = ch_em_call_cost(&p.after);
        if (have < 0 || cost < best_cost || (cost == best_cost && i < have)) {
            if (have >= 0) ch_cse_prog_free(&best);
            best = p, best_cost = cost, have = i, outs = c;
        } else {
            ch_cse_prog_free(&p);
        }
    }
    if (dyn) e->dyn_outs = (const ch_expr **)outs;
    if (have < 0) return;
    if (e->failed)
        ch_cse_prog_free(&best);
    else
        kernel_put(e, name, &best);
}

/* The cheaper program of the nout outputs from the derivation's closed
 * form (closed) and from the Kane form (kane), kept for the other forms
 * where name is a kernel every form has (every_form()): 1 when the Kane
 * form's, 0 the closed form's, -1 when none (the emitter failed). */
static int program_or_kane(emitter *e, const char *name, size_t nout,
                           const ch_expr *const *closed, const ch_expr *const *kane,
                           ch_cse_prog *prog)
{
    int again = every_form(name);
    ch_cse_prog sp;
    if (ch_em_kernel_build(e, nout, kane, prog, again)) return -1;
    double kcost = ch_em_call_cost(&prog->after);
    size_t cap = (size_t)(KANE_CLOSED_MAX_RATIO * kcost) + 64;
    int use_closed = ch_dag_size_many(nout, closed, cap) < cap;
    if (use_closed && ch_em_kernel_build(e, nout, closed, &sp, again) == 0) {
        use_closed = ch_em_call_cost(&sp.after) <= kcost;
        ch_cse_prog_free(use_closed ? prog : &sp);
        if (use_closed) *prog = sp;
    }
    if (e->failed) {
        ch_cse_prog_free(prog);
        return -1;
    }
    return !use_closed;
}

/* kn_NAME with the nout outputs from the closed form or from the Kane
 * form (kane, NULL where it does not apply), whichever program costs less
 * per call. 1 when the Kane form's was taken. */
int ch_em_kernel_or_kane(emitter *e, const char *name, size_t nout,
                          const ch_expr *const *closed, const ch_expr *const *kane)
{
    ch_cse_prog prog;
    if (!kane) {
        ch_em_kernel(e, name, nout, closed);
        return 0;
    }
    int from_kane = program_or_kane(e, name, nout, closed, kane, &prog);
    if (from_kane >= 0) kernel_put(e, name, &prog);
    return from_kane > 0;
}

/* The emitter failed: the first failure's error is kept, and a builder
 * of the context that failed for want of memory is no limit. */
void ch_em_emit_fail(emitter *e, ch_status code, const char *msg)
{
    if (ch_ctx_error(e->ctx)->code == CH_ERR_MEMORY) code = CH_ERR_MEMORY, msg = "out of memory";
    if (!e->failed) ch_error_set(e->err, code, NULL, 0, 0, "%s", msg);
    e->failed = 1;
}

const ch_expr **ch_em_earr(emitter *e, size_t n)
{
    const ch_expr **a = ch_ctx_alloc(e->ctx, (n ? n : 1) * sizeof *a);
    if (!a) e->failed = 1;
    return a;
}

ch_kkt ch_em_kkt(const emitter *e)
{
    ch_kkt s = {e->n, e->k, e->mi, e->d->mf.dep, e->d->mf.indep, e->dyn_nz};
    return s;
}

/* kn_dyn: the KKT system's values M (n*n), G (k*n), b = Q - h (n),
 * r = -c (k) (ch_kkt_values). */
static void kernel_dyn(emitter *e)
{
    size_t n = e->n, k = e->k, i = n * n + k * n + n + k;
    const ch_expr **o = ch_em_earr(e, i);
    if (!o) return;
    if (ch_kkt_values(e->ctx, &e->d->lag, o)) {
        ch_em_emit_fail(e, CH_ERR_LIMIT, "expression limit in the KKT system");
        return;
    }
    e->dyn_outs = e->dyn_plain = o, e->ndyn = i;
    ch_em_kernel(e, "dyn", i, o); /* sets dyn_outs to the outputs it used */
    e->dyn_ops = e->last;
    e->dyn_nz = ch_ctx_alloc(e->ctx, i);
    if (!e->dyn_nz) e->failed = 1;
    for (size_t j = 0; e->dyn_nz && j < i; j++) e->dyn_nz[j] = o[j] && !ch_is_zero(o[j]);
    /* 2: an entry of G constant along the motion (ch_redsolve.nz) */
    for (size_t j = n * n; e->dyn_nz && j < n * n + k * n; j++)
        if (e->dyn_nz[j] && !ch_has_sym_kind(o[j], CH_SYM_TIME)
            && !ch_has_sym_kind(o[j], CH_SYM_COORD) && !ch_has_sym_kind(o[j], CH_SYM_VEL))
            e->dyn_nz[j] = 2;
}

/* kn_facc: all n accelerations from kn_dyn's values o by the null-space
 * method (ch_emit_full_numeric), where there are dependent and
 * independent velocities: the full form's right side, and in every form
 * the accelerations the multipliers are solved from (put_dyn_solve);
 * la_kkt is left for the states where it reports G_d or B^T M B
 * singular. The dense KKT solve's loops cost O((n + k)^3) a
 * call: 4 microseconds on the 10-trailer, 20 times its reduced right
 * side. */
static void kernel_facc(emitter *e)
{
    size_t k = e->k, nv = e->ndyn;
    const ch_manifold *mf = &e->d->mf;
    if (e->failed || k == 0 || e->mi == 0 || !mf->dep || !mf->indep || !e->dyn_nz) return;
    const char **val = ch_ctx_alloc(e->ctx, nv * sizeof *val);
    char *text = ch_ctx_alloc(e->ctx, nv * 24);
    if (!val || !text) {
        e->failed = 1;
        return;
    }
    ch_buf code;
    ch_buf_init(&code);
    for (size_t i = 0; i < nv; i++) {
        snprintf(text + 24 * i, 24, "o[%zu]", i);
        val[i] = text + 24 * i;
    }
    ch_redsolve in = {ch_em_kkt(e), val, NULL};
    unsigned needs = 0;
    if (ch_emit_full_numeric(&in, &code, &e->facc_ops, &e->facc_tri, &needs) || code.oom) {
        e->failed = 1;
    } else {
        ch_buf_putn(&e->kern, code.s, code.len);
        e->needs |= needs;
        e->facc = 1;
    }
    ch_buf_free(&code);
}

/* kn_con: phi (k), then the dependent block of G (k*k). */
void ch_em_kernel_con(emitter *e)
{
    const ch_lagrange *L = &e->d->lag;
    const ch_manifold *mf = &e->d->mf;
    size_t k = e->k, i = 0;
    const ch_expr **o = ch_em_earr(e, k + k * k);
    if (!o) return;
    for (size_t j = 0; j < k; j++) o[i++] = L->phi[j];
    for (size_t a = 0; a < k; a++)
        for (size_t b = 0; b < k; b++) o[i++] = L->G[a * e->n + (size_t)mf->dep[b]];
    ch_em_kernel(e, "con", i, o);
}

/* ---- public functions ------------------------------------------------------ */

double ch_em_opcount_total(const ch_opcount *c)
{
    return c->add + c->mul + c->div + c->call;
}

/* "if (pivot == 0.0 || ...) return 1;" for the k pivots of G_d among a
 * substituted program's outputs (from index m*m + m), each text once;
 * pivots that are nonzero numbers are not tested. */
/* The chart test's 2k values for kn_acc where G_d is triangular up to
 * permutations (ch_kkt_pivots): its k pivots in that order (the
 * entries of G the substitution divides by), then |G_row|^2 of each
 * pivot's row, 0 for a pivot constant along the motion (the n-trailer's
 * -d: only its zero is tested). 0, or 1 when G_d is not triangular, -1
 * out of memory (e->failed). */

int ch_em_chart_exprs(emitter *e, const ch_expr **o)
{
    size_t n = e->n, k = e->k;
    ch_kkt sys = ch_em_kkt(e);
    int *prow = calloc(k + 1, sizeof *prow), *pcol = calloc(k + 1, sizeof *pcol);
    const ch_expr **sq = ch_em_earr(e, n);
    int tri = !prow || !pcol || !sq ? -1 : !e->dyn_nz ? 0 : ch_kkt_pivots(&sys, prow, pcol);
    int rc = tri < 0 ? -1 : !tri;
    for (size_t j = 0; rc == 0 && j < k; j++) {
        const ch_expr *const *row = e->d->lag.G + (size_t)prow[j] * n;
        const ch_expr *piv = row[e->d->mf.dep[pcol[j]]];
        size_t nt = 0;
        o[j] = piv;
        o[k + j] = ch_zero(e->ctx);
        if (e->dyn_nz[n * n + (size_t)prow[j] * n + (size_t)e->d->mf.dep[pcol[j]]] == 2) continue;
        for (size_t i = 0; i < n; i++)
            if (!ch_is_zero(row[i])) sq[nt++] = ch_mul(e->ctx, row[i], row[i]);
        o[k + j] = ch_add_n(e->ctx, nt, sq);
        /* (sin^2 + cos^2 is 1: the knife edge's row) */
        const ch_expr *simple = o[k + j] ? ch_simplify(e->ctx, o[k + j]) : NULL;
        if (simple) o[k + j] = simple;
        else if (o[k + j]) ch_ctx_clear_error(e->ctx); /* a limit: the sum as it is */
        /* (no sum: its cause stays for the CSE to report) */
    }
    free(prow);
    free(pcol);
    if (rc < 0) e->failed = 1;
    return rc;
}

void ch_em_pivot_check_at(emitter *e, const ch_expr *const *outs, char *const *ref, size_t at,
                           ch_buf *code)
{
    size_t nt = 0;
    /* each pivot that varies along the motion against its row's |G_row|^2
     * (subst_prog's next k outputs): 2 where the chart is numerically
     * singular (emit_red.h); the constant ones (row norm 0 there) only
     * for a zero */
    for (int pass = 0; pass < 2; pass++, nt = 0) {
        for (size_t j = 0; j < e->k; j++) {
            int konst = ch_is_zero(outs[at + e->k + j]), seen = 0;
            if (konst != pass || (konst && ch_is_num(outs[at + j]) && !ch_is_zero(outs[at + j])))
                continue;
            for (size_t l = 0; l < j && konst && !seen; l++) /* the same text once */
                seen = ch_is_zero(outs[at + e->k + l]) && !strcmp(ref[at + l], ref[at + j]);
            if (seen) continue;
            ch_buf_put(code, nt ? (nt % 2 ? " || " : " ||\n        ") : "    if (");
            if (konst) ch_buf_printf(code, "%s == 0.0", ref[at + j]);
            else
                ch_buf_printf(code, "!(%s * %s > " CH_CHART_SINGULAR2 " * %s)", ref[at + j],
                              ref[at + j], ref[at + e->k + j]);
            nt++;
        }
        if (nt) ch_buf_printf(code, ")\n        return %d;\n", pass ? 1 : 2);
    }
}

/* Rough time of straight-line code in additions: a call of sin, cos, exp
 * costs tens of additions and a division about a dozen (its throughput on
 * current x86 is a tenth of an addition's: the 10-trailer's kn_acc with
 * 18 divisions more and 145 operations fewer took 1.1 to 1.2 times as
 * long), so substituting alpha into the dynamics pays when it saves a
 * call for a few more products. */
double ch_em_call_cost(const ch_opcount *c)
{
    return c->add + c->mul + 12.0 * c->div + 20.0 * c->call;
}

/* Reorders p's statements, with "const double NAME = value;" added for
 * each of the nloc locals (velocities: vd<nu> for alpha's values, vi<r>
 * for eta's; their values are p's first nloc outputs, and p reads them as
 * the symbols syms[i]), so that every name is defined before it is used
 * (the program's own order is topological, but the CSE sees a local as a
 * symbol and may put a statement that reads it before its value): depth
 * first from the outputs, then each statement after the last call it
 * needs (below). Emitting first every statement that waits for no local,
 * then the locals, then the rest, as before, cost the 10-trailer's
 * kernel 6% (224 -> 211 ns). Works on the program as data (cse.h): p's
 * text is rebuilt from its lines, and its data dropped. 1 when done, 0
 * when out of memory, when p has no data, or where a local reads itself
 * (a cycle: no order exists). */
static int order_locals(emitter *e, ch_cse_prog *p, size_t nloc,
                        const ch_expr *const *syms, const char *const *names,
                        int by_calls)
{
    if (!p->line) return 0;
    size_t nt = p->ntemps, ns = nt + nloc, nsyms = ch_ctx_nsyms(e->ctx);
    /* statement i reads ops[at[i] .. at[i+1]): statements (the locals are
     * nt + nu), in the order its text names them */
    uint32_t *local = calloc(nsyms ? nsyms : 1, sizeof *local); /* sid -> nu + 1 */
    size_t *at = malloc((ns + 1) * sizeof *at);
    size_t nops = p->arg_at[nt] + nloc;
    uint32_t *ops = malloc((nops ? nops : 1) * sizeof *ops);
    size_t *done = calloc(ns + 1, sizeof *done);
    size_t *sv = calloc(ns + 1, sizeof *sv), *spos = calloc(ns + 1, sizeof *spos);
    size_t *seq = calloc(ns + 1, sizeof *seq), nseq = 0;
    int ok = local && at && ops && done && sv && spos && seq;
    for (size_t nu = 0; ok && nu < nloc; nu++) local[ch_sym_of(syms[nu])->sid] = (uint32_t)nu + 1;
#define STMT_OF(a) ((a).stmt != CH_CSE_NONE ? (size_t)(a).stmt                          \
                    : (a).sym && local[(a).sym->sid] ? nt + local[(a).sym->sid] - 1 : ns)
    for (size_t i = 0, k = 0; ok && i < ns; i++) {
        at[i] = k;
        if (i < nt) {
            for (size_t j = p->arg_at[i]; j < p->arg_at[i + 1]; j++) {
                size_t d = STMT_OF(p->arg[j]);
                if (d < ns) ops[k++] = (uint32_t)d;
            }
        } else {
            size_t d = STMT_OF(p->out[i - nt]);
            if (d < ns) ops[k++] = (uint32_t)d;
        }
        at[i + 1] = k;
    }
    /* depth first from the outputs (the locals', then the others'), a
     * statement after the ones it reads, as the CSE printed its own
     * (print_order): each value near its first use, alpha's next to the
     * statements that read it. Then any statement no output reads, in
     * order. */
    size_t nroot = nloc + (p->n > nloc ? p->n - nloc : 0) + ns;
    for (size_t r = 0; ok && r < nroot; r++) {
        size_t root = r < nloc ? nt + r
                      : r < nroot - ns ? STMT_OF(p->out[r]) : r - (nroot - ns);
        if (root >= ns || done[root]) continue;
        size_t top = 0;
        sv[top] = root, spos[top] = at[root], done[root] = 2, top++; /* 2: on the stack */
        while (ok && top > 0) {
            size_t i = sv[top - 1];
            if (spos[top - 1] == at[i + 1]) { /* what it reads is all defined */
                seq[nseq++] = i;
                done[i] = 1, top--;
                continue;
            }
            size_t d = ops[spos[top - 1]++];
            if (d == i || done[d] == 1) continue;
            if (done[d] == 2) ok = 0; /* a cycle: a local that reads itself */
            else sv[top] = d, spos[top] = at[d], done[d] = 2, top++;
        }
    }
#undef STMT_OF
    /* Then each statement moves up to just after the last call (sin,
     * cos, ...) it reads (a stable sort by that call's rank, in sv by
     * statement): depth first, the locals come first with every call
     * they need, and the arithmetic of the other outputs waited for the
     * last call though it could overlap the calls' own work. The
     * 10-trailer's reduced kernel (11 sincos; alpha's recursion along
     * the axles, then the right side's) went 215-225 -> 202-206 ns under
     * gcc -O2, the 3- and 24-trailer's 3-4% down; the hamilton form's
     * kn_hrhs went 2-5% up, so by_calls is its caller's choice. The same
     * statements, so the same values. */
    size_t calls = 0;
    for (size_t j = 0; ok && by_calls && j < nseq; j++) {
        size_t i = seq[j], key = 0;
        for (size_t o = at[i]; o < at[i + 1]; o++)
            if (ops[o] != i && sv[ops[o]] > key) key = sv[ops[o]];
        if (i < nt && p->call[i]) key = ++calls;
        sv[i] = key;
    }
    /* a counting sort by rank: spos holds the buckets' starts and done,
     * unused since the walk, the sorted sequence */
    if (ok && calls > 0) {
        memset(spos, 0, (calls + 1) * sizeof *spos);
        for (size_t j = 0; j < nseq; j++) spos[sv[seq[j]]]++;
        for (size_t c = 0, a = 0; c <= calls; c++) {
            size_t k = spos[c];
            spos[c] = a, a += k;
        }
        for (size_t j = 0; j < nseq; j++) done[spos[sv[seq[j]]]++] = seq[j];
        memcpy(seq, done, nseq * sizeof *seq);
    }
    ch_buf out;
    ch_buf_init(&out);
    for (size_t j = 0; ok && j < nseq; j++) {
        size_t i = seq[j];
        if (i < nt)
            ch_buf_putn(&out, p->body.s + p->line[i], p->line[i + 1] - p->line[i]);
        else
            ch_buf_printf(&out, "    const double %s = %s;\n", names[i - nt], p->ref[i - nt]);
    }
    if (ok && !out.oom) {
        ch_buf_free(&p->body);
        p->body = out;
        ch_cse_prog_drop_data(p);
    } else {
        ch_buf_free(&out);
        ok = 0;
    }
    free(local), free(at), free(ops), free(done);
    free(sv), free(spos), free(seq);
    return ok;
}

/* The k dependent velocities' symbols (an array in the context), or
 * NULL when out of memory. */
const ch_expr **ch_em_vdep_syms(emitter *e)
{
    const ch_expr **vdep = ch_em_earr(e, e->k);
    for (size_t nu = 0; vdep && nu < e->k; nu++) vdep[nu] = e->m->qt[e->d->mf.dep[nu]];
    return vdep;
}

/* The names stem<i> for i < n (context memory), or NULL. */
const char **ch_em_local_names(emitter *e, const char *stem, size_t n)
{
    const char **names = ch_ctx_alloc(e->ctx, (n ? n : 1) * sizeof *names);
    for (size_t i = 0; names && i < n; i++) {
        char buf[32];
        snprintf(buf, sizeof buf, "%s%zu", stem, i);
        if (!(names[i] = ch_ctx_strdup(e->ctx, buf))) return NULL;
    }
    return names;
}

/* The program of the n outputs o whose first nloc are the values of
 * locals: the symbols syms[i] are read as the locals names[i] (C
 * variables the program defines, order_locals). 0, or -1 (a limit or out
 * of memory: no such program; *p is freed). */
int ch_em_locals_build(emitter *e, size_t nloc, const ch_expr *const *syms,
                        const char *const *names, size_t n, const ch_expr *const *o,
                        ch_cse_prog *p, int by_calls)
{
    const char **saved = ch_ctx_alloc(e->ctx, (nloc ? nloc : 1) * sizeof *saved);
    memset(p, 0, sizeof *p);
    if (!saved || !names) return -1;
    for (size_t i = 0; i < nloc; i++) {
        uint32_t sid = ch_sym_of(syms[i])->sid;
        saved[i] = e->symtext[sid];
        e->symtext[sid] = names[i];
    }
    ch_error scratch;
    memset(&scratch, 0, sizeof scratch);
    int built = ch_cse_build_data(e->ctx, n, o, ch_em_namer, e, "w", "    ", p, &scratch) == 0;
    for (size_t i = 0; i < nloc; i++) e->symtext[ch_sym_of(syms[i])->sid] = saved[i];
    if (!built || !order_locals(e, p, nloc, syms, names, by_calls)) {
        ch_cse_prog_free(p);
        return -1;
    }
    return 0;
}

/* Whether alpha is -(G_d^-1 G_i) u: every constraint linear and
 * homogeneous in the velocities (G reads none, each proved homogeneous
 * of degree 1, so phi = G q_t without a velocity-free part). */
int ch_em_alpha_linear(emitter *e)
{
    const ch_chetaev *ch = &e->d->chet;
    size_t n = e->n, k = e->k;
    for (size_t nu = 0; nu < k; nu++)
        if (!ch->sigma || !ch->sigma[nu] || !ch_is_one(ch->sigma[nu])) return 0;
    return !ch_any_has_any_sym(k * n, e->d->lag.G, n, e->m->qt);
}

struct ch_emit_cache {
    ch_cse_cache *cse;
    int kane_done;                  /* kane_pre() was called */
    const ch_kane *kane;            /* and set these */
    const ch_kkt_ham *ham_kane;
    const ch_expr *en_kane;
};

ch_emit_cache *ch_emit_cache_new(void)
{
    ch_emit_cache *c = calloc(1, sizeof *c);
    if (c && !(c->cse = ch_cse_cache_new())) {
        free(c);
        return NULL;
    }
    return c;
}

void ch_emit_cache_free(ch_emit_cache *c)
{
    if (!c) return;
    ch_cse_cache_free(c->cse);
    free(c);
}

/* The Lagrangian's Kane form (kane.h: the forms' candidates made from it)
 * and the expressions from it that the kernels choose between (the
 * energy; the hamilton form's), built before anything else of every form
 * (once when the forms share a cache), so that their nodes precede all
 * the others each time: the forms share one context, whose node ids order
 * the sums, and a form's file must not depend on the forms emitted with
 * it. */
static void kane_pre(emitter *e)
{
    ch_kane *kn = ch_ctx_alloc(e->ctx, sizeof *kn);
    if (!kn) {
        e->failed = 1;
        return;
    }
    int rc = ch_kane_split(e->ctx, e->m, e->d->lag.Q, kn);
    if (rc < 0) ch_ctx_clear_error(e->ctx);
    if (rc) return;
    e->kane = kn;
    if (!(e->en_kane = ch_kane_energy(e->ctx, kn)))
        ch_ctx_clear_error(e->ctx); /* a limit: the closed form instead */
    /* the hamilton form's from it (ch_kkt_hamilton_form), where the
     * constraints are linear and homogeneous in the velocities */
    ch_kkt_ham *h = ch_ctx_alloc(e->ctx, sizeof *h);
    int hr = !h ? -1 : !ch_em_alpha_linear(e) ? 1
             : ch_kkt_hamilton_form(e->ctx, e->m, &e->d->lag, &e->d->mf, &e->d->ham, kn, h);
    if (hr < 0) ch_em_emit_fail(e, CH_ERR_MEMORY, "out of memory");
    e->ham_kane = hr == 0 ? h : NULL;
}

/* kn_hyt: K (m*m), then the part of d y* by dt along the motion that does
 * not come from the independent accelerations (m): ch_hamilton_rate. */
static void kernel_hyt(emitter *e)
{
    size_t mi = e->mi;
    const ch_expr **o = ch_em_earr(e, mi * mi + mi);
    if (!o) return;
    if (ch_hamilton_rate(e->ctx, &e->d->red, &e->d->ham, o)) {
        ch_em_emit_fail(e, CH_ERR_LIMIT, "expression limit in the time derivative of y*");
        return;
    }
    ch_em_kernel(e, "hyt", mi * mi + mi, o);
}

/* kn_hrhs(t, x, p, v, o): the velocities from the state (eta, then
 * alpha = B_dep eta) into v and y*_t into o, as one program of the Kane
 * form's expressions (the locals vi<r> and vd<nu>): eta, alpha and y*_t
 * share X, the P_b and the sines and cosines of the angles, which kn_eta,
 * kn_alpha and kn_ham each compute. 0, or -1 (no such program). */
static int hrhs_build(emitter *e, ch_cse_prog *p)
{
    const ch_manifold *mf = &e->d->mf;
    size_t m = e->mi, k = e->k;
    const ch_kkt_ham *hk = e->ham_kane;
    const ch_expr **syms = ch_em_earr(e, m + k), **o = ch_em_earr(e, 2 * m + k);
    const char **names = ch_ctx_alloc(e->ctx, (m + k) * sizeof *names);
    const char **vi = ch_em_local_names(e, "vi", m), **vd = ch_em_local_names(e, "vd", k);
    memset(p, 0, sizeof *p);
    if (!syms || !o || !names || !vi || !vd) return -1;
    for (size_t r = 0; r < m; r++) {
        syms[r] = e->m->qt[mf->indep[r]], names[r] = vi[r];
        o[r] = hk->eta[r];
        o[m + k + r] = hk->yt[r];
    }
    for (size_t nu = 0; nu < k; nu++) {
        syms[m + nu] = e->m->qt[mf->dep[nu]], names[m + nu] = vd[nu];
        o[m + nu] = hk->alpha[nu];
    }
    /* (in the call-rank order, measured 2-5% slower on the trailers) */
    if (ch_em_locals_build(e, m + k, syms, names, 2 * m + k, o, p, 0)) return -1;
    for (size_t r = 0; r < m; r++) ch_buf_printf(&p->body, "    v[%d] = vi%zu;\n", mf->indep[r], r);
    for (size_t nu = 0; nu < k; nu++)
        ch_buf_printf(&p->body, "    v[%d] = vd%zu;\n", mf->dep[nu], nu);
    ch_cse_prog_drop_outputs(p, m + k); /* eta's and alpha's are in v */
    return 0;
}

/* kn_ham: y*_t (002 eq. 4.17, or from the Kane form), or kn_hrhs where
 * that costs less than kn_eta, kn_alpha and kn_ham together (the rhs
 * calls all three). */
static void kernel_ham(emitter *e)
{
    ch_cse_prog ham, fused;
    const ch_expr *const *kane = e->ham_kane ? e->ham_kane->yt : NULL;
    if (!kane || !e->eta_from_kane || !e->d->red.explicit_alpha) {
        e->ham_from_kane = ch_em_kernel_or_kane(e, "ham", e->mi, e->d->ham.yt, kane);
        e->ham_ops = e->last;
        return;
    }
    int from_kane = program_or_kane(e, "ham", e->mi, e->d->ham.yt, kane, &ham);
    if (from_kane < 0) return;
    e->ham_from_kane = from_kane;
    double three = ch_em_call_cost(&ham.after) + ch_em_call_cost(&e->eta_ops) + ch_em_call_cost(&e->alpha_ops);
    if (hrhs_build(e, &fused) == 0 && ch_em_call_cost(&fused.after) < three) {
        ch_cse_prog_free(&ham);
        e->ham_fused = 1;
        kernel_put_v(e, "hrhs", &fused, 1);
    } else {
        ch_cse_prog_free(&fused);
        kernel_put(e, "ham", &ham);
    }
    e->ham_ops = e->last;
}

/* kn_hol: g(t, q) of the holonomic constraints, as written (h values). */
static void kernel_hol(emitter *e)
{
    const ch_expr **g = ch_em_earr(e, e->h);
    if (!g) return;
    for (size_t a = 0; a < e->h; a++)
        g[a] = e->m->constraint_orig[e->d->init.hol[a]];
    ch_em_kernel(e, "hol", e->h, g);
}

/* ---- names, header, assembly ------------------------------------------------ */

static const char *dim(emitter *e, const char *macro, size_t count, char *buf, size_t size)
{
    if (count == 0) return "1";
    snprintf(buf, size, "%s_%s", e->P, macro);
    return buf;
}

static void put_decls(emitter *e, ch_buf *b)
{
    char d1[96], d2[96];
    ch_buf_printf(b, "#define %s_NX %zu\n#define %s_NP %zu\n#define %s_NQ %zu\n#define %s_NOUT %zu\n"
                     "#define %s_NEV %zu\n",
                  e->P, e->nx, e->P, e->m->np, e->P, e->n, e->P, e->nout, e->P,
                  e->m->nevents);
    ch_buf_printf(b, "extern const char *const %s_state_names[%s_NX];\n", e->P, e->P);
    /* dim() returns "1" without filling d1 when there are no parameters. */
    const char *np_dim = dim(e, "NP", e->m->np, d1, sizeof d1);
    ch_buf_printf(b, "extern const char *const %s_param_names[%s];\n", e->P, np_dim);
    ch_buf_printf(b, "extern const double %s_param_defaults[%s];\n", e->P, np_dim);
    ch_buf_printf(b, "extern const char *const %s_output_names[%s];\n", e->P,
                  dim(e, "NOUT", e->nout, d2, sizeof d2));
    const char *nev_dim = dim(e, "NEV", e->m->nevents, d2, sizeof d2);
    ch_buf_printf(b, "extern const char *const %s_event_names[%s];\n", e->P, nev_dim);
    ch_buf_printf(b, "extern const int %s_event_stop[%s];\n", e->P, nev_dim);
    const char *P = e->P;
    ch_buf_printf(b,
        "void   %s_initial(double *x);\n"
        "int    %s_state_from(double t, const double *q, const double *qt,\n"
        "           const double *p, double *x);\n"
        "int    %s_rhs(double t, const double *x, const double *p, double *dxdt);\n"
        "double %s_energy(double t, const double *x, const double *p);\n"
        "int    %s_velocities(double t, const double *x, const double *p, double *qt);\n"
        "int    %s_outputs(double t, const double *x, const double *p, double *out);\n"
        "int    %s_project(double t, double *x, const double *p);\n"
        "double %s_chart_quality(double t, const double *x, const double *p);\n"
        "int    %s_events(double t, const double *x, const double *p, double *g);\n",
        P, P, P, P, P, P, P, P, P);
    ch_buf_printf(b,
        "int    %s_rhs_from(double t, const double *x, const double *p,\n"
        "           const double *vs, double *dxdt);\n"
        "double %s_energy_from(double t, const double *x, const double *p,\n"
        "           const double *vs);\n"
        "int    %s_velocities_from(double t, const double *x, const double *p,\n"
        "           const double *vs, double *qt);\n"
        "int    %s_outputs_from(double t, const double *x, const double *p,\n"
        "           const double *vs, double *out);\n"
        "int    %s_project_from(double t, double *x, const double *p, const double *vs);\n"
        "double %s_chart_quality_from(double t, const double *x, const double *p,\n"
        "           const double *vs);\n"
        "int    %s_events_from(double t, const double *x, const double *p,\n"
        "           const double *vs, double *g);\n",
        P, P, P, P, P, P, P);
    ch_buf_printf(b, "#define %s_CHART %d\n", P, ch_em_has_chart(e));
    ch_buf_printf(b, "#define %s_NEWTON %d\n", P, ch_em_newton_start(e));
    ch_buf_printf(b, "#define %s_REENTRANT %d\n", P, !(e->needs & CH_NEEDS_STATIC));
}

static void put_name_list(ch_buf *b, size_t n, const char *const *pre,
                          const char *const *names)
{
    if (n == 0) {
        ch_buf_put(b, "0");
        return;
    }
    for (size_t i = 0; i < n; i++) {
        ch_buf_put(b, i ? ",\n    " : "\n    ");
        char tmp[160];
        snprintf(tmp, sizeof tmp, "%s%s", pre ? pre[i] : "", names[i]);
        put_cstring(b, tmp);
    }
    ch_buf_put(b, "\n");
}

static const char *sym_name(const ch_expr *s) { return ch_sym_of(s)->name; }

/* 1 when name is "t", a coordinate, a velocity column q' or one of the
 * model's integrals: the CSV columns the model names. */
static int model_column(const emitter *e, const char *name)
{
    size_t len = strlen(name);
    if (!strcmp(name, "t")) return 1;
    for (size_t i = 0; i < e->n; i++) {
        const char *q = sym_name(e->m->q[i]);
        size_t ql = strlen(q);
        if (!strcmp(q, name) || (len == ql + 1 && name[ql] == '\'' && !strncmp(q, name, ql)))
            return 1;
    }
    for (size_t j = 0; j < e->m->nintegrals; j++)
        if (!strcmp(e->m->integrals[j].name, name)) return 1;
    return 0;
}

/* The c output columns (full names) made unique: a generated one (a
 * prefix in pre; an integral's has none) whose name the model or an
 * earlier column already has gets "_" appended until it is free, so that
 * a coordinate phi1 or lambda1 never shares its column's name (README
 * "Integration"; the runtime does the same for E). */
static void unique_outputs(const emitter *e, size_t c, const char *const *pre,
                           char (*full)[160])
{
    for (size_t i = 0; i < c; i++) {
        if (!pre[i][0]) continue;
        for (;;) {
            int taken = model_column(e, full[i]);
            for (size_t j = 0; !taken && j < i; j++) taken = !strcmp(full[j], full[i]);
            size_t len = strlen(full[i]);
            if (!taken || len + 2 > sizeof full[i]) break;
            full[i][len] = '_', full[i][len + 1] = 0;
        }
    }
}

static void put_tables(emitter *e, ch_buf *b)
{
    size_t n = e->n, k = e->k, mi = e->mi, np = e->m->np;
    const ch_manifold *mf = &e->d->mf;
    const char **names = calloc(e->nx + e->nout + np + e->m->nevents + 1, sizeof *names);
    const char **pre = calloc(e->nx + e->nout + np + e->m->nevents + 1, sizeof *pre);
    char **owned = calloc(e->nx + e->nout + 1, sizeof *owned);
    if (!names || !pre || !owned) {
        ch_em_emit_fail(e, CH_ERR_MEMORY, "out of memory");
        free(names), free(pre), free(owned);
        return;
    }
    size_t c = 0, no = 0;
    for (size_t i = 0; i < n; i++) pre[c] = "", names[c++] = sym_name(e->m->q[i]);
    for (size_t i = 0; i < e->nx - n; i++) {
        size_t qi = e->form == CH_FORM_FULL ? i : (size_t)mf->indep[i];
        char *s = malloc(strlen(sym_name(e->m->q[qi])) + 3);
        if (s) strcpy(s, sym_name(e->m->q[qi]));
        if (s) strcat(s, e->form == CH_FORM_HAMILTON ? "" : "'");
        owned[no++] = s;
        pre[c] = e->form == CH_FORM_HAMILTON ? "y_" : "";
        names[c++] = s ? s : "?";
    }
    ch_buf_printf(b, "const char *const %s_state_names[%s_NX] = {", e->P, e->P);
    put_name_list(b, c, pre, names);
    ch_buf_put(b, "};\n");
    char dbuf[96];
    const char *d = dim(e, "NP", np, dbuf, sizeof dbuf);
    ch_buf_printf(b, "const char *const %s_param_names[%s] = {", e->P, d);
    for (size_t i = 0; i < np; i++) pre[i] = "", names[i] = sym_name(e->m->param[i]);
    put_name_list(b, np, pre, names);
    ch_buf_printf(b, "};\nconst double %s_param_defaults[%s] = {", e->P, d);
    for (size_t i = 0; i < np; i++) {
        ch_buf_put(b, i ? ", " : "");
        ch_c_double(b, e->m->param_default[i]);
    }
    ch_buf_put(b, np ? "};\n" : "0.0};\n");
    /* Output columns. */
    c = 0;
    if (e->form == CH_FORM_HAMILTON)
        for (size_t r = 0; r < mi; r++)
            pre[c] = "y_",
            names[c++] = sym_name(e->m->q[e->cols ? e->cols->indep[r] : mf->indep[r]]);
    char (*num)[24] = calloc(2 * k + e->h + 1, sizeof *num);
    if (!num) e->failed = 1;
    if (k > 0 && num) {
        if (e->form == CH_FORM_FULL)
            for (size_t j = 0; j < k; j++)
                snprintf(num[j], sizeof num[j], "%zu", j + 1), pre[c] = "phi", names[c++] = num[j];
        for (size_t j = 0; j < k; j++)
            snprintf(num[k + j], sizeof num[k + j], "%zu", j + 1), pre[c] = "lambda",
                names[c++] = num[k + j];
        for (size_t i = 0; i < n; i++) pre[c] = "R_", names[c++] = sym_name(e->m->q[i]);
    }
    for (size_t j = 0; j < e->m->nintegrals; j++)
        pre[c] = "", names[c++] = e->m->integrals[j].name;
    for (size_t a = 0; num && a < e->h; a++)
        snprintf(num[2 * k + a], sizeof num[0], "%d", e->d->init.hol[a] + 1),
            pre[c] = "g", names[c++] = num[2 * k + a];
    char (*full)[160] = calloc(c + 1, sizeof *full);
    if (!full) {
        ch_em_emit_fail(e, CH_ERR_MEMORY, "out of memory");
    } else {
        for (size_t i = 0; i < c; i++) snprintf(full[i], sizeof full[i], "%s%s", pre[i], names[i]);
        unique_outputs(e, c, pre, full);
        for (size_t i = 0; i < c; i++) names[i] = full[i], pre[i] = "";
    }
    ch_buf_printf(b, "const char *const %s_output_names[%s] = {", e->P,
                  dim(e, "NOUT", e->nout, dbuf, sizeof dbuf));
    put_name_list(b, full ? c : 0, pre, names);
    free(full);
    ch_buf_put(b, "};\n");
    /* Events: names and whether each ends the run. */
    size_t nev = e->m->nevents;
    d = dim(e, "NEV", nev, dbuf, sizeof dbuf);
    ch_buf_printf(b, "const char *const %s_event_names[%s] = {", e->P, d);
    for (size_t j = 0; j < nev; j++) pre[j] = "", names[j] = e->m->events[j].name;
    put_name_list(b, nev, pre, names);
    ch_buf_printf(b, "};\nconst int %s_event_stop[%s] = {", e->P, d);
    for (size_t j = 0; j < nev; j++)
        ch_buf_printf(b, "%s%d", j ? ", " : "", e->m->event_stop[j]);
    ch_buf_put(b, nev ? "};\n\n" : "0};\n\n");
    free(num);
    for (size_t i = 0; i < no; i++) free(owned[i]);
    free(names), free(pre), free(owned);
}

static int put_template(emitter *e, ch_buf *b, const char *name)
{
    const char *t = ch_embedded(name, NULL);
    if (!t) {
        e->failed = 1;
        return ch_error_set(e->err, CH_ERR_IO, NULL, 0, 0, "template %s is not embedded", name);
    }
    ch_buf_put(b, t);
    ch_buf_put(b, "\n");
    return 0;
}

static void put_comment_ident(ch_buf *b, const char *s)
{
    for (; *s; s++)
        if ((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') ||
            (*s >= '0' && *s <= '9') || *s == '_')
            ch_buf_putc(b, *s);
}

static void put_banner(emitter *e, ch_buf *b, const char *file_ext)
{
    ch_buf_printf(b, "/* %s.%s - generated by chetaev %s: do not edit.\n * model ", e->P,
                  file_ext, CH_VERSION);
    put_comment_ident(b, e->m->name);
    ch_buf_printf(b, ", form %s: n = %zu coordinates, k = %zu constraints, state size %zu.\n",
                  ch_form_name(e->form), e->n, e->k, e->nx);
    if (e->acc_note[0]) {
        ch_buf_put(b, " * independent accelerations: ");
        ch_buf_put(b, e->acc_note);
        ch_buf_put(b, ".\n");
    }
    if (e->form == CH_FORM_FULL && e->facc)
        ch_buf_printf(b, " * right side: kn_dyn (M, G, b = Q - h, r = -c), %.0f operations "
                         "per call, then kn_facc (null-space method, G_d by %s): %.0f more;\n"
                         " * the dense KKT solve (la_kkt) where G_d or B^T M B is singular.\n",
                      ch_em_opcount_total(&e->dyn_ops),
                      e->facc_tri ? "triangular substitution" : "LU", ch_em_opcount_total(&e->facc_ops));
    else if (e->form == CH_FORM_FULL)
        ch_buf_printf(b, " * right side: kn_dyn (M, G, b = Q - h, r = -c), %.0f operations "
                         "per call, then one dense solve.\n", ch_em_opcount_total(&e->dyn_ops));
    if (e->form == CH_FORM_HAMILTON && !e->ham_numeric)
        ch_buf_printf(b, " * Legendre map inverted symbolically (%s); y*' from the "
                         "%s, %.0f operations per call%s.\n",
                      e->eta_from_kane ? "eta = A^-1 y, A = sum_b mu_b P_b P_b^T of the Kane form"
                                       : "closed-form H*",
                      e->ham_fused || e->ham_from_kane
                          ? "Kane form, B^T F + sum_b mu_b E_b (dP_b/dt - B^T g_b)"
                          : "closed-form H* (002 eq. 4.17)",
                      ch_em_opcount_total(&e->ham_ops),
                      e->ham_fused ? " with eta and alpha (kn_hrhs, one program)" : "");
    else if (e->form == CH_FORM_HAMILTON)
        ch_buf_printf(b, " * Legendre map inverted numerically (no closed-form H*): %s.\n",
                      e->d->ham.quadratic ? "L* quadratic in the velocities, one linear solve"
                                          : "damped Newton with Jacobian K");
    ch_buf_put(b, " * operations before CSE (outputs as trees): ");
    ch_opcount_print(b, &e->before);
    ch_buf_put(b, "\n * operations after CSE (straight-line code): ");
    ch_opcount_print(b, &e->after);
    ch_buf_put(b, "\n */\n");
}

int ch_emit_c(ch_ctx *ctx, const ch_mechanics *d, ch_form form,
              const char *prefix, ch_buf *header, ch_buf *source, ch_error *err)
{
    return ch_emit_c_cached(ctx, d, form, prefix, NULL, header, source, err);
}

int ch_emit_c_cached(ch_ctx *ctx, const ch_mechanics *d, ch_form form,
                     const char *prefix, ch_emit_cache *cache, ch_buf *header,
                     ch_buf *source, ch_error *err)
{
    return ch_emit_c_chart(ctx, d, form, prefix, cache, NULL, NULL, header, source, NULL, err);
}

int ch_emit_c_chart(ch_ctx *ctx, const ch_mechanics *d, ch_form form,
                    const char *prefix, ch_emit_cache *cache, const ch_chart_cols *cols,
                    const char *prelude, ch_buf *header, ch_buf *source,
                    ch_emit_report *report, ch_error *err)
{
    /* an error an earlier call left in a long-lived context (the repl's,
     * the C API's) is not this emission's: it would turn a later limit
     * into "out of memory" (emit_fail, cse.c's fail) */
    ch_ctx_clear_error(ctx);
    emitter e;
    memset(&e, 0, sizeof e);
    for (int i = 0; i < CH_ACC_COUNT; i++) e.report.cost[i] = -1.0;
    e.cols = form == CH_FORM_HAMILTON ? cols : NULL;
    e.ctx = ctx, e.d = d, e.m = d->model, e.form = form, e.err = err;
    e.n = d->lag.n, e.k = d->lag.k, e.mi = e.n - e.k;
    char defprefix[160];
    if (!prefix) {
        snprintf(defprefix, sizeof defprefix, "%s_%s", e.m->name, ch_form_name(form));
        prefix = defprefix;
    }
    if (!is_ident(prefix))
        return ch_error_set(err, CH_ERR_USAGE, NULL, 0, 0,
                            "prefix '%.80s' is not a C identifier (letters, digits, "
                            "underscores, at most 64 characters, not starting with a digit)",
                            prefix);
    e.P = prefix;
    e.ham_numeric = form == CH_FORM_HAMILTON && !d->ham.exists && !d->ham.degenerate &&
                    d->ham.K && d->red.y_star && (e.k == 0 || d->red.M_star);
    if (form == CH_FORM_HAMILTON && !d->ham.exists && !e.ham_numeric)
        return ch_error_set(err, CH_ERR_MODEL, e.m->file, 0, 0,
                            "the Hamiltonian form does not exist for model %s: %s",
                            e.m->name, d->ham.reason ? d->ham.reason : "no H*");
    if (form != CH_FORM_FULL && e.k > 0 && !d->red.M_star)
        return ch_error_set(err, CH_ERR_MODEL, e.m->file, 0, 0,
                            "the reduced form is not available for model %s", e.m->name);
    e.nx = form == CH_FORM_FULL ? 2 * e.n : e.n + e.mi;
    e.h = d->init.nhol;
    e.nout = (form == CH_FORM_HAMILTON ? e.mi : 0) +
             (e.k ? (form == CH_FORM_FULL ? 2 * e.k : e.k) + e.n : 0) +
             e.m->nintegrals + e.h;
    if (set_names(&e)) return ch_error_set(err, CH_ERR_MEMORY, NULL, 0, 0, "out of memory");
    ch_buf_init(&e.kern);
    ch_buf_init(&e.fun);
    /* a cache of this call's own when the caller has none: kn_acc starts
     * from kn_dyn's program */
    e.shared = cache != NULL;
    e.cache = cache ? cache->cse : ch_cse_cache_new();

    if (!cache || !cache->kane_done) {
        kane_pre(&e);
    } else {
        e.kane = cache->kane, e.ham_kane = cache->ham_kane, e.en_kane = cache->en_kane;
    }
    if (cache) {
        cache->kane_done = 1;
        cache->kane = e.kane, cache->ham_kane = e.ham_kane, cache->en_kane = e.en_kane;
    }
    int need_dyn = form == CH_FORM_FULL || e.k > 0;
    if (need_dyn) kernel_dyn(&e);
    kernel_facc(&e); /* the full form's rhs and every form's multipliers */
    ch_em_fun_vel(&e);
    if (form == CH_FORM_FULL && e.k > 0 && ch_em_alpha_closed(&e)) ch_em_kernel_con(&e);
    if (form == CH_FORM_REDUCED || e.ham_numeric) ch_em_fun_acc(&e);
    if (e.ham_numeric) kernel_hyt(&e);
    else if (form == CH_FORM_HAMILTON) kernel_ham(&e);
    if (e.h > 0) {
        kernel_hol(&e);
        ch_em_fun_qproj(&e);
    }
    ch_em_fun_state_from(&e);
    ch_em_fun_chart(&e);
    ch_em_fun_rhs(&e);
    ch_em_fun_rhs_chart(&e);
    ch_em_fun_energy_vel(&e);
    ch_em_fun_outputs(&e);
    ch_em_fun_events(&e);
    ch_em_fun_project(&e);
    ch_em_fun_plain(&e);

    int rc = 0;
    if (!e.failed) {
        ch_buf_reset(header);
        put_banner(&e, header, "h");
        ch_buf_printf(header, "#ifndef %s_H_INCLUDED\n#define %s_H_INCLUDED\n\n", e.P, e.P);
        put_decls(&e, header);
        ch_buf_put(header, "\n#endif\n");

        ch_buf_reset(source);
        put_banner(&e, source, "c");
        ch_buf_put(source, prelude ? prelude : "#include <math.h>\n");
        ch_buf_put(source, "\n/* The declarations of the header, repeated so "
                           "that this file\n * compiles on its own (in-memory JIT). */\n");
        put_decls(&e, source);
        ch_buf_put(source, "\n");
        put_tables(&e, source);
        /* the dense solvers where the code or a template calls them (a
         * diagonal M* needs none: an unused static function fails -Werror) */
        if (need_dyn || e.facc || (form == CH_FORM_FULL && e.k > 0) ||
            (e.needs & CH_NEEDS_LA_SOLVE))
            put_template(&e, source, "templates/solve.c.in");
        if (need_dyn) put_template(&e, source, "templates/kkt.c.in");
        if (e.facc) put_template(&e, source, "templates/lambda.c.in");
        if ((form == CH_FORM_FULL && e.k > 0) || e.h > 0)
            put_template(&e, source, "templates/project.c.in");
        ch_buf_putn(source, e.kern.s, e.kern.len);
        ch_buf_putn(source, e.fun.s, e.fun.len);
        if (header->oom || source->oom || e.kern.oom || e.fun.oom)
            ch_em_emit_fail(&e, CH_ERR_MEMORY, "out of memory");
    }
    /* the steps that fail only for want of memory set no error */
    if (e.failed && err && !err->code) ch_error_set(err, CH_ERR_MEMORY, NULL, 0, 0, "out of memory");
    if (e.failed) rc = err && err->code ? (int)err->code : CH_ERR_MEMORY;
    if (report) *report = e.report; /* (CH_ACC_NONE without a kn_acc) */
    ch_buf_free(&e.kern);
    ch_buf_free(&e.fun);
    if (!e.shared) ch_cse_cache_free(e.cache);
    return rc;
}
