/* derive.c — assembles the SPEC §3 entries from the mechanics modules.
 *
 * The order of the table below is the order of every output format, which
 * follows THEORY: model data, §1 Euler–Lagrange terms, §2 constraints and
 * reactions, §3 energy, §4 reduced form, §5 Hamiltonian side. */
#include "doc/derive.h"

#include <stdio.h>
#include <string.h>

#include "core/matrix.h"
#include "mech/collect.h"
#include "core/simplify.h"

typedef struct {
    const char *key, *title, *latex, *ref, *symbol;
    int display_only;
} entry_spec;

static const entry_spec specs[] = {
    {"model", "Model", "Model", NULL, NULL, 0},
    {"coordinates", "Coordinates", "Coordinates $q_i$", NULL, "q", 0},
    {"velocities", "Velocities", "Velocities $\\dot q_i$", NULL, "q'", 0},
    {"parameters", "Parameters", "Parameters", NULL, NULL, 0},
    {"lagrangian", "Lagrangian", "Lagrangian $L(t, q, \\dot q)$", NULL, "L", 0},
    {"momenta", "Momenta p_i = dL/dq'_i",
     "Momenta $p_i = \\partial L/\\partial \\dot q_i$", "000 eq. 30", "p", 0},
    {"mass_matrix", "Mass matrix M_ij = d2L/dq'_i dq'_j",
     "Mass matrix $M_{ij} = \\partial^2 L/\\partial \\dot q_i \\partial \\dot q_j$",
     "000 eq. 31", "M", 0},
    {"euler_lagrange", "Euler-Lagrange terms E_i = d/dt p_i - dL/dq_i",
     "Euler--Lagrange terms $E_i = \\frac{d}{dt} p_i - \\partial L/\\partial q_i$",
     "000 eq. 27-29", "E", 0},
    {"forces", "Generalized forces Q_i", "Generalized forces $Q_i$", NULL, "Q", 0},
    {"constraints", "Constraints phi_nu = 0 (velocity level)",
     "Constraints $\\varphi_\\nu = 0$ (velocity level)", "001 eq. 2", "phi", 0},
    {"constraint_jacobian", "Chetaev coefficients G_nu,i = dphi_nu/dq'_i",
     "Chetaev coefficients $G_{\\nu i} = \\partial \\varphi_\\nu/\\partial \\dot q_i$",
     "001 eq. 7", "G", 0},
    {"constraint_bias", "Constraint bias c_nu = dphi_nu/dt + q'_j dphi_nu/dq_j",
     "Constraint bias $c_\\nu = \\partial_t \\varphi_\\nu + \\dot q_j \\partial \\varphi_\\nu/\\partial q_j$",
     "000 eq. 33", "c", 0},
    {"reactions", "Reactions R_i = lambda_nu G_nu,i",
     "Reactions $R_i = \\lambda_\\nu G_{\\nu i}$", "001 eq. 6", "R", 0},
    {"multipliers", "Multipliers lambda = -W^-1 (G M^-1 (Q - h) + c), W = G M^-1 G^T",
     "Multipliers $\\lambda = -W^{-1}(G M^{-1}(Q - h) + c)$, $W = G M^{-1} G^T$",
     "000 eq. 33-34", "lambda", 1},
    {"energy", "Energy E = q'_i p_i - L", "Energy $E = \\dot q_i p_i - L$",
     "001 eq. 16", "E", 0},
    {"energy_balance", "Energy balance dE/dt", "Energy balance $dE/dt$",
     "001 eq. 20", "dE/dt", 0},
    {"homogeneity", "Homogeneity degrees of the constraints",
     "Homogeneity degrees of the constraints", NULL, NULL, 0},
    {"energy_conserved", "Energy conserved", "Energy conserved", NULL, NULL, 0},
    {"dependent", "Dependent velocities", "Dependent velocities", "001 eq. 9", NULL, 0},
    {"independent", "Independent velocities", "Independent velocities",
     "001 eq. 9", NULL, 0},
    {"alpha", "Dependent velocities solved: q'_dep = alpha",
     "Dependent velocities solved, $\\dot q_{m+\\nu} = \\alpha_\\nu$", "001 eq. 9", NULL, 0},
    {"L_star", "Reduced Lagrangian L*", "Reduced Lagrangian $L^*$", "001 eq. 13", "L*", 0},
    {"p_star", "Momenta of the dependent velocities p*_nu = dL/dq'_{m+nu} at alpha",
     "Momenta of the dependent velocities $p^*_\\nu = \\partial L/\\partial \\dot q_{m+\\nu}|_\\alpha$",
     "001 eq. 14", "p*", 1},
    {"energy_star", "Reduced energy E*", "Reduced energy $E^*$", "001 eq. 17", "E*", 0},
    {"alpha_bar", "alpha_bar = q'_r dalpha/dq'_r",
     "$\\bar\\alpha_\\nu = \\dot q_r \\partial\\alpha_\\nu/\\partial \\dot q_r$",
     "001 eq. 19", "alpha_bar", 0},
    {"energy_identity", "Identity E* = E|alpha + sum_nu (alpha_bar_nu - alpha_nu) p*_nu",
     "Identity $E^* = E|_\\alpha + \\sum_\\nu (\\bar\\alpha_\\nu - \\alpha_\\nu) p^*_\\nu$",
     "001 eq. 18", NULL, 1},
    {"B", "B^nu_r = d/dt(dalpha_nu/dq'_r) - X*_r alpha_nu",
     "$B^\\nu_r = \\frac{d}{dt}\\frac{\\partial\\alpha_\\nu}{\\partial \\dot q_r} - X^*_r \\alpha_\\nu$",
     "001 eq. 14", "B", 1},
    {"reduced_mass_matrix", "Reduced mass matrix M*", "Reduced mass matrix $M^*$",
     "001 eq. 14", "M*", 0},
    {"reduced_equations", "Reduced equations eq_r = 0", "Reduced equations $\\mathcal{E}^*_r = 0$",
     "001 eq. 14", "eq", 0},
    {"momenta_star", "Momenta y*_r = dL*/dq'_r",
     "Momenta $y^*_r = \\partial L^*/\\partial \\dot q_r$", "002 eq. 4.10", "y*", 0},
    {"H_star", "Hamiltonian H*", "Hamiltonian $H^*$", "002 eq. 4.13", "H*", 0},
    {"poincare_hamilton", "Poincare-Hamilton equations",
     "Poincar\\'e--Hamilton equations", "002 eq. 4.17", NULL, 0},
};

#define NSPECS (sizeof specs / sizeof specs[0])

/* Display form of a derived quantity: the shortest (as a printed tree) of
 * the expression as derived, its expansion (like terms from different
 * products cancel: E = q' p - L) and its rational normal form (common
 * factors cancel: H* of a quadratic L*). Bounded twice: only small inputs
 * are rewritten, each rewrite under a node budget. */
#define TIDY_MAX_INPUT 400
#define TIDY_SIMPLIFY_MAX 150 /* the normal form is the expensive rewrite */
#define TIDY_MAX_PRINTED 2000 /* tree size: beyond it, shared forms are kept */
#define TIDY_EXPAND_BLOWUP 16 /* see tidy() */
#define TIDY_SIMPLIFY_BLOWUP 48 /* see tidy() */
/* New nodes a rewrite may create: a multiple of the printed size of its
 * input (a rewrite that needs far more nodes than the input prints is
 * not going to print shorter), with a floor and a ceiling, so that the
 * tidying of one entry costs O(1) for small entries. */
#define TIDY_BUDGET 20000
#define TIDY_BUDGET_MIN 200
#define TIDY_BUDGET_PER_NODE 4

/* A rewrite of e, wanted only when shorter than `printed` as a tree. */
typedef const ch_expr *(*rewrite_fn)(ch_ctx *, const ch_expr *e, size_t printed);

static const ch_expr *expansion(ch_ctx *ctx, const ch_expr *e, size_t printed)
{
    (void)printed; /* an expansion's size is known once it is built */
    return ch_expand(ctx, e);
}

static const ch_expr *budgeted(ch_ctx *ctx, rewrite_fn f, const ch_expr *e,
                               size_t printed)
{
    size_t limit = ch_ctx_node_limit(ctx);
    size_t allow = TIDY_BUDGET_MIN + TIDY_BUDGET_PER_NODE * printed;
    size_t budget = ch_ctx_nnodes(ctx) + (allow < TIDY_BUDGET ? allow : TIDY_BUDGET);
    ch_ctx_set_node_limit(ctx, limit && limit < budget ? limit : budget);
    const ch_expr *x = f(ctx, e, printed);
    ch_ctx_set_node_limit(ctx, limit);
    if (!x) ch_ctx_clear_error(ctx);
    return x;
}

/* Size as printed: the tree size, a linear-time proxy for the length of
 * the text (printing to measure would be exponential on shared DAGs). */
static size_t printed_size(ch_ctx *ctx, const ch_expr *e)
{
    return e ? ch_tree_size(ctx, e, TIDY_MAX_PRINTED + 1) : (size_t)-1;
}

static const ch_expr *tidy(ch_ctx *ctx, const ch_expr *e)
{
    size_t size = ch_dag_size_capped(e, TIDY_MAX_INPUT);
    if (!e || size > TIDY_MAX_INPUT) return e;
    size_t best_len = printed_size(ctx, e);
    if (best_len > TIDY_MAX_PRINTED) return e;
    /* an expansion estimated at many times the printed size (alpha of the
     * n-trailer: 60x) is not tried; on the examples and the benchmark
     * models, those that printed shorter were estimated at 12x or less */
    double blowup = ch_expand_size_bound(e) / (double)best_len;
    int expand = blowup <= TIDY_EXPAND_BLOWUP;
    /* the normal form expands too: estimated at 48x or more it was never
     * shorter on the examples and the benchmark models (those that were:
     * 33x or less; two entries of the 10-trailer at 58x and 64x took
     * 0.8 ms of normal form each to print 7x longer) */
    int simplify = size <= TIDY_SIMPLIFY_MAX && blowup < TIDY_SIMPLIFY_BLOWUP;
    const ch_expr *x = expand ? budgeted(ctx, expansion, e, best_len) : NULL;
    /* where the normal form is the expansion, it is not shorter */
    if (x && ch_normal_form_is_expansion(ctx, e, x)) simplify = 0;
    const ch_expr *cand[3] = {
        e, x, simplify ? budgeted(ctx, ch_simplify_within, e, best_len) : NULL};
    const ch_expr *best = e;
    for (int i = 1; i < 3; i++) {
        size_t len = cand[i] ? ch_tree_size(ctx, cand[i], best_len) : best_len;
        if (len < best_len) {
            best = cand[i];
            best_len = len;
        }
    }
    return best;
}

/* The display of a node, tidied once: the same node recurs (a symmetric
 * M, alpha inside B). NULL for NULL and on failure (OOM). */
typedef struct {
    ch_ctx *ctx;
    ch_map memo;
} tidier;

static const ch_expr *tidy_once(void *arg, const ch_expr *e)
{
    tidier *t = arg;
    const ch_expr *x = e ? ch_map_get(&t->memo, e->id) : NULL;
    if (!x && (x = tidy(t->ctx, e)) && ch_map_put(&t->memo, e->id, (void *)x))
        return NULL;
    return x;
}

/* A tidy copy of rows expressions, in arena memory (NULL on failure). */
static const ch_expr **tidy_all(tidier *td, size_t rows, const ch_expr *const *v)
{
    const ch_expr **t = ch_mat_new(td->ctx, rows, 1);
    for (size_t i = 0; t && i < rows; i++)
        if (!(t[i] = tidy_once(td, v[i])) && v[i]) return NULL;
    return t;
}

/* The momenta, E_i and energy of a Lagrangian quadratic in the velocities
 * by velocity monomials (collect.h), with the displayed mass matrix as
 * their coefficients: where one of them prints shorter than the tidy
 * form, it replaces it. -1 when out of memory. */
static int use_collected(ch_derivation *d, tidier *td, const char *key,
                         size_t count, const ch_expr **t, int *state,
                         ch_collected *c)
{
    int which = strcmp(key, "momenta") == 0          ? 1
                : strcmp(key, "euler_lagrange") == 0 ? 2
                : strcmp(key, "energy") == 0         ? 3
                                                     : 0;
    if (!which) return 0;
    if (!*state) {
        size_t n = d->model->n;
        const ch_expr **M = tidy_all(td, n * n, d->mech->lag.M);
        if (!M) return -1;
        int rc = ch_collect_quadratic(d->ctx, d->model, &d->mech->lag, M, tidy_once,
                                      td, c);
        /* a display form does not fail the command: past the node limit
         * the tidy forms are shown */
        if (rc < 0 && ch_ctx_error(d->ctx)->code == CH_ERR_MEMORY) return -1;
        if (rc < 0) ch_ctx_clear_error(d->ctx);
        *state = rc == 1 ? 1 : 2;
    }
    if (*state != 1) return 0;
    const ch_expr *const *from = which == 1 ? c->p : which == 2 ? c->EL : &c->energy;
    for (size_t i = 0; i < count; i++) {
        size_t len = ch_tree_size(d->ctx, from[i], (size_t)-1);
        if (ch_tree_size(d->ctx, t[i], len + 1) > len) t[i] = from[i];
    }
    return 0;
}

static void set_vec(ch_entry *e, size_t rows, const ch_expr *const *v,
                    const char *const *labels);

/* A deferred entry from the part of the mechanics it shows, derived by
 * ch_mechanics_complete: a display quantity that could not be derived is
 * null with the reason (it does not fail the command). */
static void show_deferred(ch_derivation *d, ch_entry *e)
{
    const ch_mechanics *mech = d->mech;
    if (e->deferred == CH_MECH_EULER) {
        e->e = mech->lag.EL;
        if (mech->euler_failed) {
            e->kind = CH_ENTRY_NULL;
            e->tidy = 0;
            e->note = mech->euler_failed;
        }
    } else if (e->deferred == CH_MECH_LAMBDA) {
        if (mech->lambda_failed) e->note = mech->lambda_failed;
        if (mech->lambda) set_vec(e, d->model->k, mech->lambda, e->row_labels);
    } else {
        const ch_zero_result *z = &mech->red.E_identity_test;
        e->verdict = z->verdict == CH_ZERO_YES ? 1 : z->verdict == CH_ZERO_NO ? 0 : -1;
        e->note = z->symbolic
                      ? "verified: E* - E|alpha - sum (alpha_bar - alpha) p* is 0 "
                        "by the symbolic normal form"
                      : "verified: E* - E|alpha - sum (alpha_bar - alpha) p* is 0 "
                        "at random points on the constraint manifold (ball arithmetic)";
        if (e->verdict != 1) e->note = "NOT verified: this is a bug, please report it";
    }
    e->deferred = 0;
}

int ch_derivation_selected(const ch_derivation *d, size_t i, ch_format fmt,
                           size_t nonly, const char *const *only)
{
    const ch_entry *e = &d->entry[i];
    /* display-only entries (explicit multipliers, B, the E* identity) are
     * not SPEC §3 keys: machine formats leave them out */
    if (e->display_only && (fmt == CH_FORMAT_JSON || fmt == CH_FORMAT_SYMPY))
        return 0;
    for (size_t k = 0; k < nonly; k++)
        if (strcmp(only[k], e->key) == 0) return 1;
    return nonly == 0;
}

int ch_derivation_prepare(ch_derivation *d, ch_format fmt, size_t nonly,
                          const char *const *only)
{
    tidier td = {d->ctx, {0}};
    ch_map_init(&td.memo);
    ch_collected coll;
    int coll_state = 0; /* 1: coll made, 2: L not quadratic */
    unsigned parts = 0;
    for (size_t i = 0; i < d->n; i++)
        if (ch_derivation_selected(d, i, fmt, nonly, only))
            parts |= d->entry[i].deferred;
    int rc = ch_mechanics_complete(d->mech, parts);
    for (size_t i = 0; i < d->n && !rc; i++) {
        ch_entry *e = &d->entry[i];
        if (!ch_derivation_selected(d, i, fmt, nonly, only)) continue;
        if (e->deferred) show_deferred(d, e);
        if (!e->tidy) continue;
        size_t count = e->kind == CH_ENTRY_MATRIX ? e->rows * e->cols : e->rows;
        const ch_expr **t = tidy_all(&td, count, e->e);
        const ch_expr **t2 = e->e2 ? tidy_all(&td, count, e->e2) : NULL;
        if (!t || (e->e2 && !t2)) {
            rc = -1;
            break;
        }
        rc = use_collected(d, &td, e->key, count, t, &coll_state, &coll);
        e->e = t;
        if (e->e2) e->e2 = t2;
        e->tidy = 0;
    }
    ch_map_free(&td.memo);
    return rc;
}

static ch_entry *entry(ch_derivation *d, const char *key)
{
    for (size_t i = 0; i < d->n; i++)
        if (strcmp(d->entry[i].key, key) == 0) return &d->entry[i];
    return NULL;
}

const ch_entry *ch_derivation_find(const ch_derivation *d, const char *key)
{
    return entry((ch_derivation *)d, key);
}

static void set_vec(ch_entry *e, size_t rows, const ch_expr *const *v,
                    const char *const *labels)
{
    e->note = NULL;
    e->kind = CH_ENTRY_VECTOR;
    e->rows = rows;
    e->cols = 1;
    e->e = v;
    e->row_labels = labels;
    e->tidy = 1;
}

static void set_mat(ch_entry *e, size_t rows, size_t cols,
                    const ch_expr *const *v, const char *const *rl,
                    const char *const *cl)
{
    e->note = NULL;
    e->kind = CH_ENTRY_MATRIX;
    e->rows = rows;
    e->cols = cols;
    e->e = v;
    e->row_labels = rl;
    e->col_labels = cl;
    e->tidy = 1;
}

/* Names of the coordinates and of the velocity symbols (SPEC §3: x_t). */
static int name_lists(ch_ctx *ctx, const ch_model *m, const char ***q,
                      const char ***qt, const char ***par, const char ***con)
{
    *q = ch_ctx_alloc(ctx, (m->n + 1) * sizeof **q);
    *qt = ch_ctx_alloc(ctx, (m->n + 1) * sizeof **qt);
    *par = ch_ctx_alloc(ctx, (m->np + 1) * sizeof **par);
    *con = ch_ctx_alloc(ctx, (m->k + 1) * sizeof **con);
    if (!*q || !*qt || !*par || !*con) return -1;
    for (size_t i = 0; i < m->n; i++) {
        (*q)[i] = ch_sym_of(m->q[i])->name;
        (*qt)[i] = ch_sym_of(m->qt[i])->name;
    }
    for (size_t i = 0; i < m->np; i++) (*par)[i] = ch_sym_of(m->param[i])->name;
    for (size_t i = 0; i < m->k; i++) {
        char buf[32];
        snprintf(buf, sizeof buf, "%zu", i + 1);
        if (!((*con)[i] = ch_ctx_strdup(ctx, buf))) return -1;
    }
    return 0;
}

static void set_expr(ch_entry *e, const ch_expr *const *x)
{
    e->note = NULL;
    e->kind = CH_ENTRY_EXPR;
    e->rows = 1;
    e->e = x;
    e->tidy = 1;
}

static void set_names(ch_entry *e, size_t rows, const char *const *names)
{
    e->note = NULL;
    e->kind = CH_ENTRY_NAMES;
    e->rows = rows;
    e->names = names;
}

/* Names of selected coordinates: plain (for labels) or as velocities. */
static const char **pick_names(ch_ctx *ctx, const ch_model *m, size_t count,
                               const int *idx, int velocity)
{
    const char **v = ch_ctx_alloc(ctx, (count + 1) * sizeof *v);
    for (size_t i = 0; v && i < count; i++)
        v[i] = ch_sym_of((velocity ? m->qt : m->q)[idx[i]])->name;
    return v;
}

static void fill_model(ch_derivation *d, const char **qn, const char **qtn,
                       const char **pn)
{
    const ch_model *m = d->model;
    ch_entry *e = entry(d, "model");
    e->kind = CH_ENTRY_NAME;
    e->names = &m->name;
    set_names(entry(d, "coordinates"), m->n, qn);
    set_names(entry(d, "velocities"), m->n, qtn);
    e = entry(d, "parameters");
    e->kind = CH_ENTRY_PARAMS;
    e->rows = m->np;
    e->names = pn;
    e->e = m->param_value;
    set_expr(entry(d, "lagrangian"), &m->lagrangian);
    entry(d, "lagrangian")->tidy = 0; /* shown as the model gives it */
}

static void fill_lagrange(ch_derivation *d, const char **qn, const char **cn)
{
    const ch_lagrange *L = &d->mech->lag;
    size_t n = d->model->n, k = d->model->k;
    set_vec(entry(d, "momenta"), n, L->p, qn);
    set_mat(entry(d, "mass_matrix"), n, n, L->M, qn, qn);
    set_vec(entry(d, "euler_lagrange"), n, L->EL, qn);
    entry(d, "euler_lagrange")->deferred = CH_MECH_EULER;
    set_vec(entry(d, "forces"), n, L->Q, qn);
    entry(d, "forces")->tidy = 0;
    set_expr(entry(d, "energy"), &L->energy);
    if (k) {
        set_vec(entry(d, "constraints"), k, L->phi, cn);
        set_mat(entry(d, "constraint_jacobian"), k, n,
                L->G, cn, qn);
        set_vec(entry(d, "constraint_bias"), k, L->c, cn);
        return;
    }
    static const char *const none[] = {"constraints", "constraint_jacobian",
                                       "constraint_bias", "multipliers"};
    for (size_t i = 0; i < 4; i++)
        entry(d, none[i])->note = "the model has no constraints";
}

static void fill_chetaev(ch_derivation *d, const char **qn, const char **cn)
{
    const ch_chetaev *c = &d->mech->chet;
    size_t n = d->model->n, k = d->model->k;
    set_expr(entry(d, "energy_balance"), &c->energy_balance);
    ch_entry *e = entry(d, "energy_conserved");
    e->kind = CH_ENTRY_VERDICT;
    e->verdict = c->energy_conserved;
    e->note = c->energy_reason;
    if (!k) {
        return;
    }
    set_vec(entry(d, "reactions"), n, c->R, qn);
    e = entry(d, "homogeneity");
    e->kind = CH_ENTRY_DEGREES;
    e->rows = k;
    e->e = c->sigma;
    e->row_labels = cn;
    e = entry(d, "multipliers");
    e->note = "shown for systems with at most 4 coordinates";
    e->row_labels = cn;
    e->deferred = CH_MECH_LAMBDA;
}

static int fill_reduced(ch_derivation *d)
{
    ch_ctx *ctx = d->ctx;
    const ch_model *m = d->model;
    const ch_reduced *r = &d->mech->red;
    size_t k = r->k, mm = r->m;
    const char **dq = pick_names(ctx, m, k, d->mech->mf.dep, 0);
    const char **dv = pick_names(ctx, m, k, d->mech->mf.dep, 1);
    const char **iq = pick_names(ctx, m, mm, d->mech->mf.indep, 0);
    const char **iv = pick_names(ctx, m, mm, d->mech->mf.indep, 1);
    if (!dq || !dv || !iq || !iv) return -1;
    set_names(entry(d, "dependent"), k, dv);
    set_names(entry(d, "independent"), mm, iv);
    if (d->mech->mf.auto_chosen)
        entry(d, "dependent")->note = "chosen by chetaev (no `dependent` statement)";
    ch_entry *e = entry(d, "alpha");
    if (r->explicit_alpha) {
        e->kind = CH_ENTRY_OBJECT;
        e->rows = k;
        e->names = dv;
        e->e = r->alpha;
        e->row_labels = dq;
        e->tidy = 1;
        if (r->quadratic)
            e->note = "a root of a quadratic, on the branch of the initial state "
                      "(the root nearest its dependent velocity); the emitted code "
                      "fails where the radicand or the leading coefficient reaches 0";
    } else {
        e->note = "no closed form (the constraints are not linear in the dependent "
                  "velocities, nor quadratic in one of them once the linear ones "
                  "are solved): "
                  "alpha is implicit, and the dependent velocity symbols in the "
                  "reduced quantities stand for alpha(t, q, q'_independent)";
    }
    set_expr(entry(d, "L_star"), &r->L_star);
    set_vec(entry(d, "p_star"), k, r->p_star, dq);
    set_expr(entry(d, "energy_star"), &r->E_star);
    set_vec(entry(d, "alpha_bar"), k, r->alpha_bar, dq);
    e = entry(d, "energy_identity");
    e->kind = CH_ENTRY_VERDICT;
    e->verdict = -1;
    e->note = "not tested";
    e->deferred = CH_MECH_IDENTITY;
    set_mat(entry(d, "B"), k, mm, r->B, dq, iq);
    set_mat(entry(d, "reduced_mass_matrix"), mm, mm,
            r->M_star, iq, iq);
    set_vec(entry(d, "reduced_equations"), mm, r->eqs, iq);
    return 0;
}

static int fill_hamilton(ch_derivation *d)
{
    ch_ctx *ctx = d->ctx;
    const ch_reduced *r = &d->mech->red;
    const ch_hamilton *h = &d->mech->ham;
    size_t mm = r->m;
    const char **iq = pick_names(ctx, d->model, mm, d->mech->mf.indep, 0);
    if (!iq) return -1;
    set_vec(entry(d, "momenta_star"), mm, r->y_star, iq);
    if (!h->exists) {
        entry(d, "H_star")->note = h->reason;
        entry(d, "poincare_hamilton")->note = h->reason;
        return 0;
    }
    set_expr(entry(d, "H_star"), &h->H);
    ch_entry *e = entry(d, "poincare_hamilton");
    e->kind = CH_ENTRY_PH;
    e->rows = mm;
    e->e = h->qt;
    e->e2 = h->yt;
    e->row_labels = iq;
    e->tidy = 1;
    return e->e && e->e2 ? 0 : -1;
}

int ch_derivation_of(ch_mechanics *mech, ch_derivation **out, ch_error *err)
{
    ch_ctx *ctx = mech->ctx;
    const ch_model *m = mech->model;
    ch_derivation *d = ch_ctx_alloc(ctx, sizeof *d);
    if (!d || !(d->entry = ch_ctx_alloc(ctx, NSPECS * sizeof *d->entry)))
        return ch_error_set(err, CH_ERR_MEMORY, NULL, 0, 0, "out of memory");
    d->ctx = ctx;
    d->model = m;
    d->mech = mech;
    d->n = NSPECS;
    for (size_t i = 0; i < NSPECS; i++) {
        d->entry[i].key = specs[i].key;
        d->entry[i].title = specs[i].title;
        d->entry[i].latex_title = specs[i].latex;
        d->entry[i].ref = specs[i].ref;
        d->entry[i].symbol = specs[i].symbol;
        d->entry[i].display_only = specs[i].display_only;
    }
    const char **qn, **qtn, **pn, **cn;
    if (name_lists(ctx, m, &qn, &qtn, &pn, &cn))
        return ch_error_set(err, CH_ERR_MEMORY, NULL, 0, 0, "out of memory");
    fill_model(d, qn, qtn, pn);
    fill_lagrange(d, qn, cn);
    fill_chetaev(d, qn, cn);
    if ((m->k && fill_reduced(d)) || fill_hamilton(d))
        return ch_error_set(err, CH_ERR_MEMORY, NULL, 0, 0, "out of memory");
    for (size_t i = 0; i < d->n; i++) {
        ch_entry *e = &d->entry[i];
        if (e->kind == CH_ENTRY_NULL && !e->note)
            e->note = m->k ? "not available for this model"
                           : "the model has no constraints";
        int has_exprs = e->kind == CH_ENTRY_EXPR || e->kind == CH_ENTRY_VECTOR
                     || e->kind == CH_ENTRY_MATRIX || e->kind == CH_ENTRY_OBJECT
                     || e->kind == CH_ENTRY_PH || e->kind == CH_ENTRY_DEGREES;
        if (has_exprs && !e->e && !e->deferred)
            return ch_error_set(err, CH_ERR_MEMORY, NULL, 0, 0, "out of memory");
    }
    *out = d;
    return 0;
}
