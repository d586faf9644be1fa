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
 * public PREFIX_WORD names whatever the prefix: their suffixes differ. */
#include "codegen/emit_c.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/cse.h"
#include "embedded.h"
#include "codegen/emit_red.h"
#include "mech/kane.h"
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

/* The hamilton form's expressions from the Lagrangian's Kane form
 * (kane_pre()). */
typedef struct {
    const ch_expr **yt;    /* m: y*_t */
    const ch_expr **eta;   /* m: A^-1 y, NULL where that solve failed */
    const ch_expr **alpha; /* k: B_dep v_indep */
    const ch_expr **ystar; /* m: A v_indep */
} ham_kane_exprs;

typedef struct {
    ch_ctx *ctx;
    const ch_mechanics *d;
    const ch_model *m;
    ch_form form;
    const char *P;            /* validated prefix */
    size_t n, k, mi, nx, nout;
    size_t h;                 /* holonomic constraints (d->init.hol) */
    const char **symtext;     /* by sid */
    size_t nsyms;
    ch_buf kern;              /* kernels */
    ch_buf fun;               /* public functions */
    ch_opcount before, after;
    ch_error *err;
    int failed;
    int ham_numeric;          /* hamilton form without symbolic H* */
    ch_opcount last;          /* operations of the last kernel emitted */
    ch_opcount dyn_ops;       /* of kn_dyn */
    int facc;                 /* kn_facc is tried before la_kkt (put_dyn_solve) */
    unsigned needs;           /* CH_NEEDS_* of the code kept in kern and fun (emit_red.h) */
    int facc_tri;             /* kn_facc's G_d solve is a substitution */
    ch_opcount facc_ops;      /* kn_facc's beyond kn_dyn */
    unsigned char *dyn_nz;    /* kn_dyn outputs that are not symbolically 0 */
    char acc_note[384];       /* how kn_acc gets the accelerations (header) */
    const ch_expr **dyn_outs; /* kn_dyn's outputs (factored when cheaper) */
    const ch_expr **dyn_plain; /* the same values as derived */
    int dyn_dist_halved;      /* distributing halved their DAG (factor_both) */
    size_t ndyn;
    ch_opcount alpha_ops;     /* of kn_alpha */
    int fused;                /* kn_acc's body also writes v_dep (no kn_vel in the rhs) */
    ch_cse_cache *cache;      /* programs built (kn_dyn's is kn_acc's first candidate) */
    int shared;               /* the cache is the caller's: other forms' kernels go there */
    const ch_kane *kane;      /* the Lagrangian's Kane form (kane_pre()), or NULL */
    const ham_kane_exprs *ham_kane; /* the hamilton form's from it, or NULL */
    const ch_expr *en_kane;   /* the energy from it, or NULL */
    int ham_from_kane;        /* kn_ham's program is the Kane form's */
    int eta_from_kane;        /* kn_eta's too */
    int ham_fused;            /* the rhs calls kn_hrhs (eta, alpha, y*_t) */
    ch_opcount ham_ops;       /* of kn_ham or kn_hrhs */
    ch_opcount eta_ops;       /* of kn_eta */
    const ch_chart_cols *cols; /* hamilton: another chart's momentum columns, or NULL */
    int acc_chart;            /* kn_acc tests G_d's pivots against their rows (returns 2) */
    int ck;                   /* kn_ck does the same for the rhs of the other paths */
} emitter;

static const char *namer(void *data, const ch_sym *s)
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
static int kernel_build(emitter *e, size_t nout, const ch_expr *const *outs,
                        ch_cse_prog *prog, int again)
{
    if (e->failed) return -1;
    /* kept when asked for again (again: by another form of the model):
     * kn_dyn's program always (kn_acc starts from it), the others when
     * the cache is the caller's */
    int dyn = outs == e->dyn_outs && nout == e->ndyn;
    ch_cse_cache *c = dyn || (again && e->shared) ? e->cache : NULL;
    if (ch_cse_build_cached(e->ctx, c, nout, outs, namer, e, "w", "    ", prog, e->err)) {
        ch_cse_prog_free(prog);
        e->failed = 1;
        return -1;
    }
    return 0;
}

/* A program's statements into b; an incomplete text (its body ran out of
 * memory after the CSE, e.g. the writes of v appended to it) makes b's
 * incomplete too, which the emitter reports. */
static void put_body(ch_buf *b, const ch_cse_prog *prog)
{
    ch_buf_putn(b, prog->body.s, prog->body.len); /* (no strlen of megabytes) */
    if (prog->body.oom) b->oom = 1;
}

static void opcount_add(ch_opcount *to, const ch_opcount *c)
{
    to->add += c->add, to->mul += c->mul, to->div += c->div, to->call += c->call;
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
    put_body(b, prog);
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
    opcount_add(&e->before, &prog->before);
    opcount_add(&e->after, &prog->after);
    e->last = prog->after;
    ch_cse_prog_free(prog);
}

static void kernel_put(emitter *e, const char *name, ch_cse_prog *prog)
{
    kernel_put_v(e, name, prog, 0);
}

static double call_cost(const ch_opcount *c);

/* A candidate program of kernel() is not built when its outputs' DAG has
 * more than this many nodes per unit of the cheapest program's cost
 * built so far (call_cost), plus KERNEL_PRUNE_SLACK: on the large models
 * measured a program costs at least 0.8 per DAG node (kn_dyn of the
 * 100-trailer: plain 81691 for 97960 nodes, factored 111484 for 92517
 * and 32510 for 28468), so it could not win, and kn_dyn's CSE builds were
 * the largest part of `emit --form full`. The slack keeps every candidate
 * of the small models, whose cost per node varies most. */
#define KERNEL_PRUNE_RATIO 2
#define KERNEL_PRUNE_SLACK 64

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
static size_t factor_both(emitter *e, size_t n, const ch_expr *const *in, size_t dag,
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
static void kernel(emitter *e, const char *name, size_t nout, const ch_expr *const *outs)
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
        dag[2] = factor_both(e, nout, outs, dag[0], &none, &one);
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
        if (kernel_build(e, nout, c, &p, again)) break;
        double cost = call_cost(&p.after);
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

/* The closed form's outputs are not built for kn_ham, kn_eta and kn_en
 * where their DAG has more than this many nodes per unit of the Kane
 * form's program cost (call_cost): that program was the cheaper on every
 * model tried (the examples, the n-trailer), the closed form's CSE is the
 * largest of `emit --form hamilton`, and its DAG grows as N^2 on the
 * n-trailer (y*_t of the 10-trailer: 1970 nodes against 1269, of the
 * 24-trailer 9215 against 2977). */
#define KANE_CLOSED_MAX_RATIO 2

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
    if (kernel_build(e, nout, kane, prog, again)) return -1;
    double kcost = call_cost(&prog->after);
    size_t cap = (size_t)(KANE_CLOSED_MAX_RATIO * kcost) + 64;
    int use_closed = ch_dag_size_many(nout, closed, cap) < cap;
    if (use_closed && kernel_build(e, nout, closed, &sp, again) == 0) {
        use_closed = call_cost(&sp.after) <= kcost;
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
static int kernel_or_kane(emitter *e, const char *name, size_t nout,
                          const ch_expr *const *closed, const ch_expr *const *kane)
{
    ch_cse_prog prog;
    if (!kane) {
        kernel(e, name, nout, closed);
        return 0;
    }
    int from_kane = program_or_kane(e, name, nout, closed, kane, &prog);
    if (from_kane >= 0) kernel_put(e, name, &prog);
    return from_kane > 0;
}

/* The emitter failed: the first failure's error is kept, and a builder
 * of the context that failed for want of memory is no limit. */
static void emit_fail(emitter *e, ch_status code, const char *msg)
{
    if (ch_ctx_error(e->ctx)->code == CH_ERR_MEMORY) code = CH_ERR_MEMORY, msg = "out of memory";
    if (!e->failed) ch_error_set(e->err, code, NULL, 0, 0, "%s", msg);
    e->failed = 1;
}

static const ch_expr **earr(emitter *e, size_t n)
{
    const ch_expr **a = ch_ctx_alloc(e->ctx, (n ? n : 1) * sizeof *a);
    if (!a) e->failed = 1;
    return a;
}

/* kn_dyn: M (n*n), G (k*n), b = Q - h (n), r = -c (k). */
static void kernel_dyn(emitter *e)
{
    const ch_lagrange *L = &e->d->lag;
    size_t n = e->n, k = e->k, i = 0;
    const ch_expr **o = earr(e, n * n + k * n + n + k);
    if (!o) return;
    for (size_t j = 0; j < n * n; j++) o[i++] = L->M[j];
    for (size_t j = 0; j < k * n; j++) o[i++] = L->G[j];
    for (size_t j = 0; j < n; j++) o[i++] = ch_sub(e->ctx, L->Q[j], L->h[j]);
    for (size_t j = 0; j < k; j++) o[i++] = ch_neg(e->ctx, L->c[j]);
    e->dyn_outs = e->dyn_plain = o, e->ndyn = i;
    kernel(e, "dyn", i, o); /* sets dyn_outs to the outputs it used */
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
    size_t n = e->n, k = e->k, nv = e->ndyn;
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
    ch_redsolve in = {n, k, e->mi, mf->dep, mf->indep, e->dyn_nz, val, NULL};
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
static void kernel_con(emitter *e)
{
    const ch_lagrange *L = &e->d->lag;
    const ch_manifold *mf = &e->d->mf;
    size_t k = e->k, i = 0;
    const ch_expr **o = earr(e, k + k * k);
    if (!o) return;
    for (size_t j = 0; j < k; j++) o[i++] = L->phi[j];
    for (size_t a = 0; a < k; a++)
        for (size_t b = 0; b < k; b++) o[i++] = L->G[a * e->n + (size_t)mf->dep[b]];
    kernel(e, "con", i, o);
}

/* ---- public functions ------------------------------------------------------ */

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
static void put_dyn_solve(emitter *e, ch_buf *b, int lambda)
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
    const ch_expr **o = earr(e, mi + mi * mi);
    if (!o) return;
    for (size_t r = 0; r < mi; r++) o[i++] = e->d->red.y_star[r];
    for (size_t j = 0; j < mi * mi; j++) o[i++] = e->d->ham.K[j];
    kernel(e, "leg", i, o);
}

/* kn_dep solves alpha by its closed form: an explicit alpha, except the
 * root of a quadratic (a branch) in the full form, whose kn_dep only
 * serves state_from and keeps the branch of the velocities given (Newton
 * from them). */
static int alpha_closed(const emitter *e)
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
    if (alpha_closed(e) || e->k == 0) return;
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
static void fun_vel(emitter *e)
{
    ch_buf *b = &e->kern;
    const ch_manifold *mf = &e->d->mf;
    const ch_reduced *red = &e->d->red;
    size_t n = e->n, k = e->k;
    /* Newton's roots checked against the initial state's branch (not in
     * the full form, which has no chart to keep) */
    int branch = k > 0 && !alpha_closed(e) && mf->dep_sign && e->form != CH_FORM_FULL;
    if (k > 0 && alpha_closed(e)) {
        /* alpha, then its guards (a closed form valid on one branch) */
        const ch_expr **o = earr(e, k + red->nguard);
        if (!o) return;
        for (size_t nu = 0; nu < k; nu++) o[nu] = red->alpha[nu];
        for (size_t g = 0; g < red->nguard; g++) o[k + g] = red->alpha_guard[g];
        kernel(e, "alpha", k + red->nguard, o);
        e->alpha_ops = e->last;
    } else if (k > 0) {
        kernel_con(e);
    }
    if (e->form == CH_FORM_HAMILTON && !e->ham_numeric) {
        e->eta_from_kane = kernel_or_kane(e, "eta", e->mi, e->d->ham.eta,
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
    } else if (alpha_closed(e)) {
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

static void fun_state_from(emitter *e)
{
    ch_buf *b = &e->fun;
    const ch_manifold *mf = &e->d->mf;
    size_t n = e->n;
    if (e->form == CH_FORM_HAMILTON) /* y* = A v of the Kane form, or as derived */
        kernel_or_kane(e, "ystar", e->mi, e->d->red.y_star,
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

/* The symbolic path's outputs: M* (m*m) and f = -(eqs at q_tt_r = 0) (m); NULL on
 * failure. */
static const ch_expr **red_outputs(emitter *e)
{
    const ch_reduced *red = &e->d->red;
    const ch_manifold *mf = &e->d->mf;
    size_t mi = e->mi;
    const ch_expr **o = earr(e, mi * mi + mi), **from = earr(e, mi), **to = earr(e, mi);
    if (!o || !from || !to) return NULL;
    for (size_t r = 0; r < mi; r++) {
        from[r] = e->m->qtt[mf->indep[r]];
        to[r] = ch_zero(e->ctx);
    }
    for (size_t j = 0; j < mi * mi; j++) o[j] = red->M_star[j];
    if (ch_subst_many(e->ctx, mi, red->eqs, o + mi * mi, mi, from, to)) {
        emit_fail(e, CH_ERR_LIMIT, "expression limit in the reduced equations");
        return NULL;
    }
    for (size_t r = 0; r < mi; r++)
        if (!(o[mi * mi + r] = ch_neg(e->ctx, o[mi * mi + r]))) {
            emit_fail(e, CH_ERR_LIMIT, "expression limit in the reduced equations");
            return NULL;
        }
    return o;
}

static int chart_exprs(emitter *e, const ch_expr **o);
static void pivot_check_at(emitter *e, const ch_expr *const *outs, char *const *ref, size_t at,
                           ch_buf *code);

/* Whether the form is a chart (THEORY §4-5): reduced and hamilton with
 * constraints, whose state is valid only where G_d (and, for hamilton,
 * the Legendre map's K) is regular. */
static int has_chart(const emitter *e)
{
    return e->form != CH_FORM_FULL && e->k > 0;
}

/* 1 when the velocities of the state come from Newton iterations whose
 * start the PREFIX_*_from functions take (implicit alpha in a reduced or
 * hamilton form, the numeric Legendre inverse). */
static int newton_start(const emitter *e)
{
    return (e->form != CH_FORM_FULL && e->k > 0 && !alpha_closed(e)) || e->ham_numeric;
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
static void fun_chart(emitter *e)
{
    ch_buf *b = &e->kern;
    size_t n = e->n, k = e->k, mi = e->mi;
    if (!has_chart(e)) {
        ch_buf_printf(&e->fun, "double %s_chart_quality_from(double t, const double *x, const double *p,\n"
                               "    const double *vs)\n{\n"
                               "    (void)t; (void)x; (void)p; (void)vs;\n    return 1.0;\n}\n\n",
                      e->P);
        return;
    }
    const ch_expr **o = earr(e, k * n);
    if (!o) return;
    for (size_t j = 0; j < k * n; j++) o[j] = e->d->lag.G[j];
    kernel(e, "gq", k * n, o);
    int kq = e->form == CH_FORM_HAMILTON && e->d->ham.K && mi > 0;
    if (kq) {
        const ch_expr **ko = earr(e, mi * mi);
        if (!ko) return;
        for (size_t j = 0; j < mi * mi; j++) ko[j] = e->d->ham.K[j];
        kernel(e, "kq", mi * mi, ko);
    }
    if (e->failed) return;
    /* the rhs's test where kn_acc has none (hamilton, or a program
     * without G_d): G_d's pivots against their rows, as kn_acc's */
    const ch_expr **chart = earr(e, 2 * k);
    ch_cse_prog ck;
    int need = !(e->form == CH_FORM_REDUCED && e->acc_chart);
    e->ck = need && chart && chart_exprs(e, chart) == 0
            && kernel_build(e, 2 * k, chart, &ck, 0) == 0;
    if (e->ck) {
        ch_buf_put(b, "/* 2 where a pivot of the triangular G_d is numerically 0 against its\n"
                      " * row of G (the chart is singular), 1 where a constant one is 0. */\n"
                      "static int kn_ck(double t, const double *x, const double *p, const double *v)\n{\n"
                      "    (void)t; (void)x; (void)p; (void)v;\n");
        put_body(b, &ck);
        pivot_check_at(e, chart, ck.ref, 0, b);
        ch_buf_put(b, "    return 0;\n}\n\n");
        opcount_add(&e->before, &ck.before);
        opcount_add(&e->after, &ck.after);
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


static void fun_rhs(emitter *e)
{
    ch_buf *b = &e->fun;
    size_t n = e->n, mi = e->mi;
    if (has_chart(e)) {
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
        put_dyn_solve(e, b, 0);
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
static void fun_rhs_chart(emitter *e)
{
    if (!has_chart(e)) return;
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

static double opcount_total(const ch_opcount *c)
{
    return c->add + c->mul + c->div + c->call;
}

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

/* Where kn_acc's program comes from (acc_program). */
typedef enum { ACC_SYM, ACC_SUB, ACC_DIAG } acc_kind;

/* The largest DAG of an entry M*_ii that diagonal_outputs brings into
 * normal form (which expands it). */
#define DIAG_MAX_NODES 300

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
    const ch_expr **o = earr(e, mi * mi + mi);
    if (!o) return NULL;
    for (size_t j = 0; j < mi * mi; j++) o[j] = outs[j];
    for (size_t i = 0; i < mi; i++) {
        const ch_expr *a = outs[i * mi + i];
        if (ch_dag_size_capped(a, DIAG_MAX_NODES) > DIAG_MAX_NODES
            || !(o[i * mi + i] = ch_simplify(ctx, a))
            || !(o[mi * mi + i] = ch_div(ctx, outs[mi * mi + i], o[i * mi + i]))) {
            if (ch_ctx_error(ctx)->code == CH_ERR_MEMORY) {
                emit_fail(e, CH_ERR_MEMORY, "out of memory");
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
static void acc_program(emitter *e, const ch_cse_prog *prog, const ch_buf *solve, acc_kind kind)
{
    size_t mi = e->mi;
    if (kind == ACC_SUB)
        ch_buf_printf(&e->kern, "/* Independent accelerations from M* and f built on the full form's\n"
                         " * values by substitution (%zu values; ", prog->n);
    else if (kind == ACC_DIAG)
        ch_buf_printf(&e->kern, "/* Independent accelerations f_i / M*_ii of the symbolic reduced\n"
                         " * equations, M* diagonal (%zu values; ", prog->n);
    else
        ch_buf_printf(&e->kern, "/* Independent accelerations from the symbolic reduced equations (M*\n"
                         " * and f, %zu values; ", prog->n);
    ch_opcount_print(&e->kern, &prog->after);
    ch_buf_printf(&e->kern, "): 0, or 1 when %s is singular. */\n"
                     "static int kn_acc(double t, const double *x, const double *p, %sdouble *v,\n"
                     "                  double *vt)\n{\n",
                  kind == ACC_SUB ? "M* (2 when G_d's pivot is numerically 0 against its row)"
                                  : "M*", e->fused ? "" : "const ");
    if (kind != ACC_DIAG) /* (the diagonal test needs no la_solve) */
        ch_buf_printf(&e->kern, "    %sdouble ws[%zu];\n    %sint piv[%zu];\n",
                      ch_emit_storage(mi * mi + 1, &e->needs), mi * mi + 1, ch_emit_storage(mi + 1, &e->needs), mi + 1);
    ch_buf_put(&e->kern, "    (void)t; (void)x; (void)p; (void)v;\n");
    put_body(&e->kern, prog);
    ch_buf_putn(&e->kern, solve->s, solve->len);
    ch_buf_put(&e->kern, "}\n\n");
}

/* "if (pivot == 0.0 || ...) return 1;" for the k pivots of G_d among a
 * substituted program's outputs (from index m*m + m), each text once;
 * pivots that are nonzero numbers are not tested. */
/* The chart test's 2k values for kn_acc where G_d is triangular up to
 * permutations (ch_redsolve_pivots): its k pivots in that order (the
 * entries of G the substitution divides by), then |G_row|^2 of each
 * pivot's row, 0 for a pivot constant along the motion (the n-trailer's
 * -d: only its zero is tested). 0, or 1 when G_d is not triangular, -1
 * out of memory (e->failed). */
static int chart_exprs(emitter *e, const ch_expr **o);

/* The n outputs outs followed by the nextra values chart (context
 * memory), or NULL. */
static const ch_expr **with_chart(emitter *e, const ch_expr *const *outs, size_t n,
                                  const ch_expr *const *chart, size_t nextra)
{
    const ch_expr **o = earr(e, n + nextra);
    if (!o) return NULL;
    for (size_t i = 0; i < n; i++) o[i] = outs[i];
    for (size_t i = 0; i < nextra; i++) o[n + i] = chart[i];
    return o;
}

static int chart_exprs(emitter *e, const ch_expr **o)
{
    size_t n = e->n, k = e->k;
    ch_redsolve in = {n, k, e->mi, e->d->mf.dep, e->d->mf.indep, e->dyn_nz, NULL, NULL};
    int *prow = calloc(k + 1, sizeof *prow), *pcol = calloc(k + 1, sizeof *pcol);
    const ch_expr **sq = earr(e, n);
    int rc = !prow || !pcol || !sq ? -1 : !e->dyn_nz || !ch_redsolve_pivots(&in, prow, pcol);
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

static void pivot_check_at(emitter *e, const ch_expr *const *outs, char *const *ref, size_t at,
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

/* pivot_check_at on kn_acc's outputs: the chart's values after M* and f. */
static void pivot_check(emitter *e, const ch_expr *const *outs, char *const *ref, ch_buf *code)
{
    pivot_check_at(e, outs, ref, e->mi * e->mi + e->mi, code);
}

/* Rough time of straight-line code in additions: a call of sin, cos, exp
 * costs tens of additions and a division about a dozen (its throughput on
 * current x86 is a tenth of an addition's: the 10-trailer's kn_acc with
 * 18 divisions more and 145 operations fewer took 1.1 to 1.2 times as
 * long), so substituting alpha into the dynamics pays when it saves a
 * call for a few more products. */
static double call_cost(const ch_opcount *c)
{
    return c->add + c->mul + 12.0 * c->div + 20.0 * c->call;
}

/* The numeric solve's input for kn_acc with the program p of its values
 * (the first at index val), without p's statements. */
static ch_redsolve acc_in(const emitter *e, const ch_cse_prog *p, size_t val)
{
    ch_redsolve in = {e->n, e->k, e->mi, e->d->mf.dep, e->d->mf.indep, e->dyn_nz,
                      (const char *const *)p->ref + val, NULL};
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
    return call_cost(&p->after) + call_cost(&solve);
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
 * when out of memory. */
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
static const ch_expr **vdep_syms(emitter *e)
{
    const ch_expr **vdep = earr(e, e->k);
    for (size_t nu = 0; vdep && nu < e->k; nu++) vdep[nu] = e->m->qt[e->d->mf.dep[nu]];
    return vdep;
}

/* The names stem<i> for i < n (context memory), or NULL. */
static const char **local_names(emitter *e, const char *stem, size_t n)
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
static int locals_build(emitter *e, size_t nloc, const ch_expr *const *syms,
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
    int built = ch_cse_build(e->ctx, n, o, namer, e, "w", "    ", p, &scratch) == 0;
    for (size_t i = 0; i < nloc; i++) e->symtext[ch_sym_of(syms[i])->sid] = saved[i];
    if (!built || !order_locals(e, p, nloc, syms, names, by_calls)) {
        ch_cse_prog_free(p);
        return -1;
    }
    return 0;
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
    const ch_expr **o = earr(e, n + k), **vdep = vdep_syms(e);
    memset(p, 0, sizeof *p);
    if (!o || !vdep) return -1;
    for (size_t nu = 0; nu < k; nu++) o[nu] = alpha[nu];
    for (size_t i = 0; i < n; i++) o[k + i] = outs[i];
    if (locals_build(e, k, vdep, local_names(e, "vd", k), n + k, o, p, 1)) return -1;
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
    const ch_expr **o = earr(e, nd + k), **vdep = vdep_syms(e);
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
    if (ch_cse_build(e->ctx, nd + k, o, namer, e, "w", "    ", &p3, &scratch)) {
        ch_cse_prog_free(&p3);
        return;
    }
    ch_cse_prog_drop_data(&p3);
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
    ch_redsolve in = {e->n, e->k, e->mi, e->d->mf.dep, e->d->mf.indep, e->dyn_nz, NULL, NULL};
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
    const ch_expr **o = earr(e, nd), **pl = earr(e, nd);
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
    if (kernel_build(e, nd, douts, out, 1)) return -1;
    if (other > 0.0) {
        ch_opcount solve = acc_solve_ops(e, out, 0);
        *pruned = opcount_total(&solve) - (double)k > other;
        if (*pruned) return 0;
    }
    double alpha_cost = with_alpha ? call_cost(&e->alpha_ops) : 0.0;
    double best = acc_cost(e, out, 0) + alpha_cost;
    /* dynamics and alpha with common factors out, in one pass so that
     * what they share stays shared */
    const ch_expr **all = earr(e, nd + k);
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
        if (ch_cse_build(e->ctx, nd, fac[dist], namer, e, "w", "    ", &cand, &scratch) == 0) {
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

/* The factored symbolic candidates are not built when the plain program
 * has more than this many times the operations of the best other
 * candidate: they could not win unless factoring removed all but 1/8 of
 * the operations, and on the n-trailer, where the plain one is 30 times
 * the substituted one at N = 100, it removed 4/5 (call_cost 220 246 ->
 * 42 168) for more than half of the emit time. */
#define SYM_FACTOR_GAIN 8

/* The symbolic candidate is not built at all when its outputs have more
 * distinct nodes than this many times the operations of the best other
 * candidate. Its plain program has 0.6 to 1.6 times as many operations as
 * its outputs have nodes (the examples, the n-trailer) and factoring
 * removed at most 4/5 of them, so it would cost over 3 times the other.
 * On the n-trailer its nodes grow as N^2 (2 107 at N = 10, 535 437 at
 * N = 200: 138 times the substituted candidate's operations), and its
 * CSE was a quarter of the 200-trailer's `emit --form all`. */
#define SYM_SKIP_GAIN 32

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
    if (kernel_build(e, no, *outs, prog, 1)) return -1; /* the hamilton form's too */
    *pruned = other > 0.0 && opcount_total(&prog->after) > SYM_FACTOR_GAIN * other;
    if (*pruned) return 0;
    int with_alpha = e->form == CH_FORM_REDUCED && k > 0 && red->explicit_alpha && red->alpha
                     && !red->nguard;
    double alpha_cost = with_alpha ? call_cost(&e->alpha_ops) : 0.0;
    double best = call_cost(&prog->after) + alpha_cost;
    const ch_expr **all = earr(e, no + k), **vdep = vdep_syms(e);
    if (!all || !vdep) return -1;
    for (size_t i = 0; i < no; i++) all[i] = (*outs)[i];
    for (size_t nu = 0; with_alpha && nu < k; nu++) all[no + nu] = red->alpha[nu];
    if (with_alpha && ch_any_has_any_sym(no + k, all, k, vdep)) with_alpha = 0;
    size_t nall = no + (with_alpha ? k : 0);
    const ch_expr **fac, **fad;
    factor_both(e, nall, all, ch_dag_size_many(nall, all, SIZE_MAX), &fac, &fad);
    /* candidates: (outputs, count, fused) */
    const ch_expr *const *cand[5] = {fac, fad, with_alpha ? all : NULL, with_alpha ? fac : NULL,
                                     with_alpha ? fad : NULL};
    size_t count[5] = {no, no, no + k, no + k, no + k};
    for (int c = 0; c < 5; c++) {
        if (!cand[c]) continue;
        ch_cse_prog p;
        ch_error scratch;
        memset(&scratch, 0, sizeof scratch);
        if (ch_cse_build(e->ctx, count[c], cand[c], namer, e, "w", "    ", &p, &scratch)) {
            ch_cse_prog_free(&p);
            continue;
        }
        int fuse = c >= 2;
        double cost = call_cost(&p.after) + (fuse ? 0.0 : alpha_cost);
        if (cost < best) {
            best = cost;
            ch_cse_prog_drop_data(&p);
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

/* Whether alpha is -(G_d^-1 G_i) u: every constraint linear and
 * homogeneous in the velocities (G reads none, each proved homogeneous
 * of degree 1, so phi = G q_t without a velocity-free part). */
static int alpha_linear(emitter *e)
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
    const ham_kane_exprs *ham_kane;
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

/* The hamilton form's expressions from the Lagrangian's Kane form kn
 * (ch_hamilton_kane; alpha = B_dep v_indep from its X, y* = A v_indep)
 * where H* exists, the constraints are linear and homogeneous in the
 * velocities and G_d is triangular, else NULL. */
static const ham_kane_exprs *ham_kane(emitter *e, const ch_kane *kn)
{
    const ch_mechanics *d = e->d;
    size_t n = e->n, k = e->k, m = e->mi, nv = n * n + k * n + n + k;
    if (!d->ham.exists || k == 0 || !alpha_linear(e)) return NULL;
    ham_kane_exprs *h = ch_ctx_alloc(e->ctx, sizeof *h);
    const ch_expr **yt = earr(e, m), **eta = earr(e, m), **alpha = earr(e, k);
    const ch_expr **ystar = earr(e, m), **v = earr(e, nv), **bd = earr(e, k * m);
    const ch_expr **u = earr(e, m), **A = earr(e, m * m);
    unsigned char *nz = ch_ctx_alloc(e->ctx, nv);
    if (!h || !yt || !eta || !alpha || !ystar || !v || !bd || !u || !A || !nz) {
        e->failed = 1;
        return NULL;
    }
    memset(nz, 0, nv);
    for (size_t i = 0; i < nv; i++) v[i] = NULL;
    for (size_t j = 0; j < k * n; j++) { /* ch_hamilton_kane reads G only */
        v[n * n + j] = d->lag.G[j];
        nz[n * n + j] = !ch_is_zero(d->lag.G[j]);
    }
    ch_redsolve in = {n, k, m, d->mf.dep, d->mf.indep, nz, NULL, NULL};
    int rc = ch_hamilton_kane(e->ctx, &in, v, kn, d->ham.y, yt, eta, bd, A);
    for (size_t r = 0; r < m; r++) u[r] = e->m->qt[d->mf.indep[r]];
    if (rc == 0 && (ch_mat_vec(e->ctx, k, m, bd, u, alpha) ||
                    ch_mat_vec(e->ctx, m, m, A, u, ystar)))
        rc = -1;
    if (rc == 0) {
        h->yt = yt, h->eta = eta[0] ? eta : NULL, h->alpha = alpha, h->ystar = ystar;
        return h;
    }
    if (rc < 0) ch_ctx_clear_error(e->ctx); /* a limit: the closed form instead */
    return NULL;
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
    e->ham_kane = ham_kane(e, kn);
}

/* The n_all values all (kn_dyn's, then alpha's) with the sums of G, r
 * and alpha factored (ch_factor_sums, distribute), M and b as they are:
 * what ch_reduced_kane reads. NULL when the factoring failed. */
static const ch_expr **factor_read(emitter *e, const ch_expr *const *all, size_t n_all,
                                   ch_dist distribute)
{
    size_t n = e->n, g = n * n, b = g + e->k * n, r = b + n, nr = 0;
    const ch_expr **val = earr(e, n_all), **in = earr(e, n_all);
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
 * and G_d's pivots as expressions of the dynamics (ch_reduced_exprs:
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
 * (ch_reduced_kane: each point's velocity per unit independent velocity
 * once, where M B multiplies M's O(N^2) entries out; with G_d's small
 * sums multiplied out over X, 345 against 688 operations beyond alpha
 * on the 10-trailer), and only from it where M has more nonzero entries
 * than that form has terms; *kane_used says which won. *outs is set to the
 * expressions used. Returns 0 with a program, 1 when there is none (G_d
 * not triangular, limits), -1 out of memory (the emitter failed). */
static int subst_prog(emitter *e, const ch_expr ***outs, ch_cse_prog *prog, int *fused,
                      int *kane_used)
{
    const ch_reduced *red = &e->d->red;
    /* A, f, the k pivots of G_d, then |G_row|^2 of each pivot's row (the
     * chart's test, pivot_check) */
    size_t m = e->mi, k = e->k, nd = e->ndyn, no = m * m + m + 2 * k;
    ch_redsolve in = {e->n, k, m, e->d->mf.dep, e->d->mf.indep, e->dyn_nz, NULL, NULL};
    const ch_expr **o = earr(e, no + k), **all = earr(e, nd + k), **vdep = vdep_syms(e);
    const ch_expr **bd = earr(e, k * m + 1), **u = earr(e, m);
    if (!o || !all || !vdep || !bd || !u) return -1;
    const ch_expr **chart = earr(e, 2 * k + 1);
    if (!chart) return -1;
    if (chart_exprs(e, chart)) return 1; /* G_d is not triangular */
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
    int lin = fuse && alpha_linear(e);
    double alpha_cost = with_alpha && !fuse ? call_cost(&e->alpha_ops) : 0.0, best = 0.0;
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
                 : use_kane ? ch_reduced_kane(e->ctx, &in, val, kn, o, lin ? bd : NULL)
                            : ch_reduced_exprs(e->ctx, &in, val, o, lin ? bd : NULL);
        /* the pivots' row norms (the chart's test, pivot_check) */
        for (size_t j = 0; rc == 0 && j < k; j++) o[m * m + m + k + j] = chart[k + j];
        if (rc == 0 && lin && ch_mat_vec(e->ctx, k, m, bd, u, o + no)) rc = -1;
        if (rc < 0) ch_ctx_clear_error(e->ctx); /* a limit: no such candidate */
        if (rc == 1 && !built) return 1; /* G_d is not triangular */
        built = 1;
        const ch_expr **fac = rc ? NULL : ch_factor_sums(e->ctx, no + (lin ? k : 0), o, dist);
        if (!fac) continue;
        ch_cse_prog p;
        ch_error scratch;
        memset(&scratch, 0, sizeof scratch);
        if (fuse ? fused_build(e, lin ? fac + no : val + nd, no, fac, &p)
                 : ch_cse_build(e->ctx, no, fac, namer, e, "w", "    ", &p, &scratch)) {
            ch_cse_prog_free(&p);
            continue;
        }
        if (fuse) ch_cse_prog_drop_outputs(&p, k); /* alpha's are in v */
        double cost = call_cost(&p.after) + alpha_cost;
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

/* static int kn_acc(t, x, p, v, vt): the independent accelerations of the
 * reduced equations at the velocities v (THEORY §4), from one of
 *  - the symbolic reduced right side (kn_red's program), M* solved;
 *  - small numeric solves on the full form's M, G, b, r (emit_red.h);
 *  - the same solves done on the expressions (subst_prog), M* solved;
 *  - where M* is diagonal, the symbolic right side divided by it
 *    (diagonal_outputs), its pivots tested;
 * whichever performs fewest counted operations per call (all CSE'd, the
 * solves counted too, each program in kn_acc's body). Without
 * constraints the first three coincide and the symbolic one is kept.
 * The symbolic one is built after the numeric ones, factored only when
 * it could win (SYM_FACTOR_GAIN). */
static void fun_acc(emitter *e)
{
    const ch_expr **outs = red_outputs(e), **souts = NULL, **douts = NULL;
    const ch_expr *const *routs = outs; /* (sym_prog may replace outs) */
    ch_cse_prog prog, vals, sprog, dprog;
    int sym_fused = 0, pruned = 0, num_pruned = 0, have_sym = 0, have_diag = 0;
    int diag_fused = 0, diag_pruned = 0;
    if (!outs) return;
    ch_opcount sym = {0, 0, 0, 0}, num = {0, 0, 0, 0}, sub = {0, 0, 0, 0}, bcmp = sub;
    ch_opcount solve_ops = {0, 0, 0, 0}, diag = sub;
    ch_buf code, solve, ssolve, dsolve;
    ch_buf_init(&code);
    ch_buf_init(&solve);
    ch_buf_init(&ssolve);
    ch_buf_init(&dsolve);
    int tri = 0, have_vals = 0, have_sub = 0, fused = 0, sub_fused = 0, sub_kane = 0;
    unsigned code_needs = 0, solve_needs = 0, ssolve_needs = 0; /* CH_NEEDS_* of each */
    /* the substituted, then the numeric candidate first: the cheapest so
     * far decides whether the next is worth its variants */
    if (e->k > 0 && e->dyn_nz && !e->failed) {
        int r = subst_prog(e, &souts, &sprog, &sub_fused, &sub_kane);
        if (r < 0) e->failed = 1;
        if (r == 0) {
            have_sub = 1;
            sub = sprog.after;
            pivot_check(e, souts, sprog.ref, &ssolve);
            symbolic_solve(e, souts, sprog.ref, &ssolve, &sub, &ssolve_needs);
            bcmp = beyond_alpha(e, sub, sub_fused);
        }
        size_t off = 0;
        if (!e->failed && values_prog(e, &vals, &off, &fused,
                                      have_sub ? opcount_total(&bcmp) : 0.0, &num_pruned) == 0) {
            have_vals = 1;
            ch_redsolve in = acc_in(e, &vals, off);
            in.body = vals.body.s;
            num = vals.after;
            if (vals.body.oom || ch_emit_reduced_numeric(&in, &code, &num, &tri, &code_needs))
                emit_fail(e, CH_ERR_MEMORY, "out of memory");
        }
    }
    ch_opcount ncmp = beyond_alpha(e, num, fused);
    double other = 0.0;
    if (have_vals) other = opcount_total(&ncmp);
    if (have_sub && (other == 0.0 || opcount_total(&bcmp) < other)) other = opcount_total(&bcmp);
    double skip_at = SYM_SKIP_GAIN * other;
    int skip_sym = other > 0.0 && skip_at < 1e15 &&
                   ch_dag_size_many(e->mi * e->mi + e->mi, outs, (size_t)skip_at) > skip_at;
    /* the chart's test (pivot_check) in the symbolic and diagonal
     * programs too, where G_d is triangular: its values after M* and f */
    size_t nsol = e->mi * e->mi + e->mi, nextra = 0;
    const ch_expr **chart = e->k > 0 ? earr(e, 2 * e->k) : NULL;
    if (chart && !e->failed && chart_exprs(e, chart) == 0) nextra = 2 * e->k;
    const ch_expr **wc = nextra ? with_chart(e, outs, nsol, chart, nextra) : NULL;
    if (wc) outs = wc;
    else nextra = 0;
    if (!e->failed && !skip_sym && sym_prog(e, &outs, nextra, &prog, &sym_fused, other, &pruned) == 0) {
        have_sym = 1;
        sym = prog.after;
        if (nextra) pivot_check(e, outs, prog.ref, &solve);
        symbolic_solve(e, outs, prog.ref, &solve, &solve_ops, &solve_needs);
        opcount_add(&sym, &solve_ops);
    }
    if (!e->failed && !skip_sym && (douts = diagonal_outputs(e, routs))
        && (!nextra || (douts = with_chart(e, douts, nsol, chart, nextra)))
        && sym_prog(e, &douts, nextra, &dprog, &diag_fused, other, &diag_pruned) == 0) {
        have_diag = 1;
        diag = dprog.after;
        if (nextra) pivot_check(e, douts, dprog.ref, &dsolve);
        diagonal_solve(e, dprog.ref, &dsolve);
    }
    /* ties go to the symbolic, then the numeric candidate */
    enum { SYM, NUM, SUB, DIAG } use = SYM;
    ch_opcount scmp = beyond_alpha(e, sym, sym_fused), best = scmp;
    ch_opcount dcmp = beyond_alpha(e, diag, diag_fused);
    int none = !have_sym; /* no candidate yet */
    if (have_vals && (none || opcount_total(&ncmp) < opcount_total(&best)))
        use = NUM, best = ncmp, none = 0;
    if (have_sub && (none || opcount_total(&bcmp) < opcount_total(&best)))
        use = SUB, best = bcmp, none = 0;
    if (have_diag && (none || opcount_total(&dcmp) < opcount_total(&best)))
        use = DIAG, best = dcmp, none = 0;
    if (e->failed || none) {
        /* nothing is written */
    } else if (use == NUM) {
        e->needs |= code_needs;
        e->fused = fused;
        e->acc_chart = tri;
        ch_buf_putn(&e->kern, code.s, code.len);
        opcount_add(&e->before, &vals.before);
        opcount_add(&e->after, &num);
    } else if (use == SUB) {
        e->needs |= ssolve_needs;
        e->fused = sub_fused;
        e->acc_chart = 1;
        acc_program(e, &sprog, &ssolve, ACC_SUB);
        opcount_add(&e->before, &sprog.before);
        opcount_add(&e->after, &sub);
    } else if (use == DIAG) {
        e->fused = diag_fused;
        e->acc_chart = nextra > 0;
        acc_program(e, &dprog, &dsolve, ACC_DIAG);
        opcount_add(&e->before, &dprog.before);
        opcount_add(&e->after, &diag);
    } else {
        e->needs |= solve_needs;
        e->fused = sym_fused;
        e->acc_chart = nextra > 0;
        acc_program(e, &prog, &solve, ACC_SYM);
        opcount_add(&e->before, &prog.before);
        opcount_add(&e->after, &sym);
    }
    if (have_sym) ch_cse_prog_free(&prog);
    if (have_vals) ch_cse_prog_free(&vals);
    if (have_sub) ch_cse_prog_free(&sprog);
    if (have_diag) ch_cse_prog_free(&dprog);
    if (code.oom || solve.oom || ssolve.oom || dsolve.oom)
        emit_fail(e, CH_ERR_MEMORY, "out of memory");
    ch_buf_free(&code);
    ch_buf_free(&solve);
    ch_buf_free(&ssolve);
    ch_buf_free(&dsolve);
    if (e->failed) return;
    char diagnote[64] = "";
    if (have_diag)
        snprintf(diagnote, sizeof diagnote, "; diagonal M*, f_i / M*_ii: %.0f",
                 opcount_total(&dcmp));
    if (e->k == 0) {
        if (have_diag)
            snprintf(e->acc_note, sizeof e->acc_note,
                     "%s (no constraints), %.0f operations per call (symbolic reduced right "
                     "side and M* solve: %.0f%s)", use == DIAG ? "diagonal" : "symbolic",
                     opcount_total(&best), opcount_total(&sym), diagnote);
        else
            snprintf(e->acc_note, sizeof e->acc_note,
                     "symbolic (no constraints), %.0f operations per call", opcount_total(&sym));
        return;
    }
    char subnote[64] = "", symnote[112];
    if (have_sub)
        snprintf(subnote, sizeof subnote, "; substituted M*%s and M* solve: %.0f",
                 sub_kane ? " (Kane form)" : "", opcount_total(&bcmp));
    if (skip_sym)
        snprintf(symnote, sizeof symnote, "symbolic reduced right side: not built (over %.0f "
                 "nodes, %d times the others)", skip_at, SYM_SKIP_GAIN);
    else if (pruned)
        snprintf(symnote, sizeof symnote, "symbolic reduced right side and M* solve: %.0f, "
                 "not factored: over %d times the others", opcount_total(&scmp), SYM_FACTOR_GAIN);
    else
        snprintf(symnote, sizeof symnote, "symbolic reduced right side and M* solve: %.0f",
                 opcount_total(&scmp));
    snprintf(e->acc_note, sizeof e->acc_note, "%s, %.0f operations per call (%s: %.0f%s%s; %s%s)",
             use == NUM ? "numeric" : use == SUB ? "substituted" : use == DIAG ? "diagonal"
                                                                             : "symbolic",
             opcount_total(&best),
             tri ? "numeric, M G b r with triangular G_d substitution"
                 : "numeric, M G b r with an LU solve for G_d",
             opcount_total(&ncmp), num_pruned ? ", values unfactored: its solve alone costs more" : "",
             subnote, symnote, diagnote);
}

/* kn_hyt: K (m*m), then the part of d y* by dt along the motion that does
 * not come from the independent accelerations (m). */
static void kernel_hyt(emitter *e)
{
    ch_ctx *ctx = e->ctx;
    const ch_reduced *red = &e->d->red;
    const ch_manifold *mf = &e->d->mf;
    size_t mi = e->mi;
    const ch_expr **o = earr(e, mi * mi + mi), **dt = earr(e, mi);
    const ch_expr **from = earr(e, mi), **to = earr(e, mi);
    if (!o || !dt || !from || !to) return;
    for (size_t r = 0; r < mi; r++) {
        from[r] = e->m->qtt[mf->indep[r]];
        to[r] = ch_zero(ctx);
        if (!(dt[r] = ch_reduce_dt(ctx, red, red->y_star[r]))) {
            emit_fail(e, CH_ERR_LIMIT, "expression limit in the time derivative of y*");
            return;
        }
    }
    for (size_t j = 0; j < mi * mi; j++) o[j] = e->d->ham.K[j];
    if (ch_subst_many(ctx, mi, dt, o + mi * mi, mi, from, to)) {
        emit_fail(e, CH_ERR_LIMIT, "expression limit in the time derivative of y*");
        return;
    }
    kernel(e, "hyt", mi * mi + mi, o);
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
    const ham_kane_exprs *hk = e->ham_kane;
    const ch_expr **syms = earr(e, m + k), **o = earr(e, 2 * m + k);
    const char **names = ch_ctx_alloc(e->ctx, (m + k) * sizeof *names);
    const char **vi = local_names(e, "vi", m), **vd = local_names(e, "vd", k);
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
    if (locals_build(e, m + k, syms, names, 2 * m + k, o, p, 0)) return -1;
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
        e->ham_from_kane = kernel_or_kane(e, "ham", e->mi, e->d->ham.yt, kane);
        e->ham_ops = e->last;
        return;
    }
    int from_kane = program_or_kane(e, "ham", e->mi, e->d->ham.yt, kane, &ham);
    if (from_kane < 0) return;
    e->ham_from_kane = from_kane;
    double three = call_cost(&ham.after) + call_cost(&e->eta_ops) + call_cost(&e->alpha_ops);
    if (hrhs_build(e, &fused) == 0 && call_cost(&fused.after) < three) {
        ch_cse_prog_free(&ham);
        e->ham_fused = 1;
        kernel_put_v(e, "hrhs", &fused, 1);
    } else {
        ch_cse_prog_free(&fused);
        kernel_put(e, "ham", &ham);
    }
    e->ham_ops = e->last;
}

static void fun_energy_vel(emitter *e)
{
    ch_buf *b = &e->fun;
    size_t n = e->n;
    kernel_or_kane(e, "en", 1, &e->d->lag.energy, e->en_kane ? &e->en_kane : NULL);
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

/* kn_hol: g(t, q) of the holonomic constraints, as written (h values). */
static void kernel_hol(emitter *e)
{
    const ch_expr **g = earr(e, e->h);
    if (!g) return;
    for (size_t a = 0; a < e->h; a++)
        g[a] = e->m->constraint_orig[e->d->init.hol[a]];
    kernel(e, "hol", e->h, g);
}

static void fun_outputs(emitter *e)
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
        kernel(e, "ycol", mi, e->cols->ystar);
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
        put_dyn_solve(e, b, 1);
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
        const ch_expr **f = earr(e, e->m->nintegrals);
        if (!f) return;
        for (size_t j = 0; j < e->m->nintegrals; j++) f[j] = e->m->integrals[j].expr;
        kernel(e, "integ", e->m->nintegrals, f);
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
static void fun_qproj(emitter *e)
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
static void fun_events(emitter *e)
{
    ch_buf *b = &e->fun;
    size_t nev = e->m->nevents;
    ch_buf_printf(b, "int %s_events_from(double t, const double *x, const double *p,\n"
                     "    const double *vs, double *g)\n{\n", e->P);
    if (nev == 0) {
        ch_buf_put(b, "    (void)t; (void)x; (void)p; (void)vs; (void)g;\n    return 0;\n}\n\n");
        return;
    }
    const ch_expr **f = earr(e, nev);
    if (!f) return;
    for (size_t j = 0; j < nev; j++) f[j] = e->m->events[j].expr;
    kernel(e, "event", nev, f);
    ch_buf_printf(b, "    double v[%zu];\n"
                     "    if (kn_vel(t, x, p, vs, v)) return 1;\n"
                     "    kn_event(t, x, p, v, g);\n"
                     "    return 0;\n}\n\n", e->n);
}

/* PREFIX_project: the coordinates onto the holonomic constraints
 * (kn_qproj), then, in the full form, three minimum mass-norm corrections
 * of the velocities. The other forms' velocities follow from their state
 * at the new coordinates. */
static void fun_project(emitter *e)
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
static void fun_plain(emitter *e)
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
    ch_buf_printf(b, "#define %s_CHART %d\n", P, has_chart(e));
    ch_buf_printf(b, "#define %s_NEWTON %d\n", P, newton_start(e));
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

static void put_tables(emitter *e, ch_buf *b)
{
    size_t n = e->n, k = e->k, mi = e->mi, np = e->m->np;
    const ch_manifold *mf = &e->d->mf;
    const char **names = calloc(e->nx + e->nout + np + e->m->nevents + 1, sizeof *names);
    const char **pre = calloc(e->nx + e->nout + np + e->m->nevents + 1, sizeof *pre);
    char **owned = calloc(e->nx + e->nout + 1, sizeof *owned);
    if (!names || !pre || !owned) {
        emit_fail(e, CH_ERR_MEMORY, "out of memory");
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
    ch_buf_printf(b, "const char *const %s_output_names[%s] = {", e->P,
                  dim(e, "NOUT", e->nout, dbuf, sizeof dbuf));
    put_name_list(b, c, pre, names);
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
                      opcount_total(&e->dyn_ops),
                      e->facc_tri ? "triangular substitution" : "LU", opcount_total(&e->facc_ops));
    else if (e->form == CH_FORM_FULL)
        ch_buf_printf(b, " * right side: kn_dyn (M, G, b = Q - h, r = -c), %.0f operations "
                         "per call, then one dense solve.\n", opcount_total(&e->dyn_ops));
    if (e->form == CH_FORM_HAMILTON && !e->ham_numeric)
        ch_buf_printf(b, " * Legendre map inverted symbolically (%s); y*' from the "
                         "%s, %.0f operations per call%s.\n",
                      e->eta_from_kane ? "eta = A^-1 y, A = sum_b mu_b P_b P_b^T of the Kane form"
                                       : "closed-form H*",
                      e->ham_fused || e->ham_from_kane
                          ? "Kane form, B^T F + sum_b mu_b E_b (dP_b/dt - B^T g_b)"
                          : "closed-form H* (002 eq. 4.17)",
                      opcount_total(&e->ham_ops),
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
    return ch_emit_c_chart(ctx, d, form, prefix, cache, NULL, NULL, header, source, err);
}

int ch_emit_c_chart(ch_ctx *ctx, const ch_mechanics *d, ch_form form,
                    const char *prefix, ch_emit_cache *cache, const ch_chart_cols *cols,
                    const char *prelude, ch_buf *header, ch_buf *source, ch_error *err)
{
    emitter e;
    memset(&e, 0, sizeof e);
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
    fun_vel(&e);
    if (form == CH_FORM_FULL && e.k > 0 && alpha_closed(&e)) kernel_con(&e);
    if (form == CH_FORM_REDUCED || e.ham_numeric) fun_acc(&e);
    if (e.ham_numeric) kernel_hyt(&e);
    else if (form == CH_FORM_HAMILTON) kernel_ham(&e);
    if (e.h > 0) {
        kernel_hol(&e);
        fun_qproj(&e);
    }
    fun_state_from(&e);
    fun_chart(&e);
    fun_rhs(&e);
    fun_rhs_chart(&e);
    fun_energy_vel(&e);
    fun_outputs(&e);
    fun_events(&e);
    fun_project(&e);
    fun_plain(&e);

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
            emit_fail(&e, CH_ERR_MEMORY, "out of memory");
    }
    /* the steps that fail only for want of memory set no error */
    if (e.failed && err && !err->code) ch_error_set(err, CH_ERR_MEMORY, NULL, 0, 0, "out of memory");
    if (e.failed) rc = err && err->code ? (int)err->code : CH_ERR_MEMORY;
    ch_buf_free(&e.kern);
    ch_buf_free(&e.fun);
    if (!e.shared) ch_cse_cache_free(e.cache);
    return rc;
}
