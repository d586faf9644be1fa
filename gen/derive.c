/* derive.c — assembles the SPEC §3 entries from the mechanics modules.
 *
 * The order of the table below is the order of every output format, which
 * follows THEORY: model data, §1 Euler–Lagrange terms, §2 constraints and
 * reactions, §3 energy, §4 reduced form, §5 Hamiltonian side. */
#include "derive.h"

#include <string.h>

#include "matrix.h"
#include "simplify.h"

typedef struct {
    const char *key, *title, *latex, *ref, *symbol;
} entry_spec;

static const entry_spec specs[] = {
    {"model", "Model", "Model", NULL, NULL},
    {"coordinates", "Coordinates", "Coordinates $q_i$", NULL, "q"},
    {"velocities", "Velocities", "Velocities $\\dot q_i$", NULL, "q'"},
    {"parameters", "Parameters", "Parameters", NULL, NULL},
    {"lagrangian", "Lagrangian", "Lagrangian $L(t, q, \\dot q)$", NULL, "L"},
    {"momenta", "Momenta p_i = dL/dq'_i",
     "Momenta $p_i = \\partial L/\\partial \\dot q_i$", "000 eq. 30", "p"},
    {"mass_matrix", "Mass matrix M_ij = d2L/dq'_i dq'_j",
     "Mass matrix $M_{ij} = \\partial^2 L/\\partial \\dot q_i \\partial \\dot q_j$",
     "000 eq. 31", "M"},
    {"euler_lagrange", "Euler-Lagrange terms E_i = d/dt p_i - dL/dq_i",
     "Euler--Lagrange terms $E_i = \\frac{d}{dt} p_i - \\partial L/\\partial q_i$",
     "000 eq. 27-29", "E"},
    {"forces", "Generalized forces Q_i", "Generalized forces $Q_i$", NULL, "Q"},
    {"constraints", "Constraints phi_nu = 0 (velocity level)",
     "Constraints $\\varphi_\\nu = 0$ (velocity level)", "001 eq. 2", "phi"},
    {"constraint_jacobian", "Chetaev coefficients G_nu,i = dphi_nu/dq'_i",
     "Chetaev coefficients $G_{\\nu i} = \\partial \\varphi_\\nu/\\partial \\dot q_i$",
     "001 eq. 7", "G"},
    {"constraint_bias", "Constraint bias c_nu = dphi_nu/dt + q'_j dphi_nu/dq_j",
     "Constraint bias $c_\\nu = \\partial_t \\varphi_\\nu + \\dot q_j \\partial \\varphi_\\nu/\\partial q_j$",
     "000 eq. 33", "c"},
    {"reactions", "Reactions R_i = lambda_nu G_nu,i",
     "Reactions $R_i = \\lambda_\\nu G_{\\nu i}$", "001 eq. 6", "R"},
    {"energy", "Energy E = q'_i p_i - L", "Energy $E = \\dot q_i p_i - L$",
     "001 eq. 16", "E"},
    {"energy_balance", "Energy balance dE/dt", "Energy balance $dE/dt$",
     "001 eq. 20", NULL},
    {"homogeneity", "Homogeneity degrees of the constraints",
     "Homogeneity degrees of the constraints", NULL, NULL},
    {"energy_conserved", "Energy conserved", "Energy conserved", NULL, NULL},
    {"dependent", "Dependent velocities", "Dependent velocities", "001 eq. 9", NULL},
    {"independent", "Independent velocities", "Independent velocities",
     "001 eq. 9", NULL},
    {"alpha", "Dependent velocities solved: q'_dep = alpha",
     "Dependent velocities solved, $\\dot q_{m+\\nu} = \\alpha_\\nu$", "001 eq. 9", NULL},
    {"L_star", "Reduced Lagrangian L*", "Reduced Lagrangian $L^*$", "001 eq. 13", "L*"},
    {"energy_star", "Reduced energy E*", "Reduced energy $E^*$", "001 eq. 17", "E*"},
    {"alpha_bar", "alpha_bar = q'_r dalpha/dq'_r",
     "$\\bar\\alpha_\\nu = \\dot q_r \\partial\\alpha_\\nu/\\partial \\dot q_r$",
     "001 eq. 18", NULL},
    {"reduced_mass_matrix", "Reduced mass matrix M*", "Reduced mass matrix $M^*$",
     "001 eq. 14", "M*"},
    {"reduced_equations", "Reduced equations", "Reduced equations", "001 eq. 14", NULL},
    {"momenta_star", "Momenta y*_r = dL*/dq'_r",
     "Momenta $y^*_r = \\partial L^*/\\partial \\dot q_r$", "002 eq. 4.10", "y*"},
    {"H_star", "Hamiltonian H*", "Hamiltonian $H^*$", "002 eq. 4.13", "H*"},
    {"poincare_hamilton", "Poincare-Hamilton equations",
     "Poincar\\'e--Hamilton equations", "002 eq. 4.17", NULL},
};

#define NSPECS (sizeof specs / sizeof specs[0])

/* Display form of a derived quantity: expanded when that stays small, so
 * that like terms from different products cancel (E = q' p - L). Bounded
 * twice: only small inputs are expanded, under a node budget, and the
 * expansion is kept only when it is not much larger. */
#define TIDY_MAX_INPUT 400
#define TIDY_BUDGET 20000

static const ch_expr *tidy(ch_ctx *ctx, const ch_expr *e)
{
    size_t size = ch_dag_size(e), limit = ch_ctx_node_limit(ctx);
    if (!e || size > TIDY_MAX_INPUT) return e;
    size_t budget = ch_ctx_nnodes(ctx) + TIDY_BUDGET;
    ch_ctx_set_node_limit(ctx, limit && limit < budget ? limit : budget);
    const ch_expr *x = ch_expand(ctx, e);
    ch_ctx_set_node_limit(ctx, limit);
    if (!x) {
        ch_ctx_clear_error(ctx);
        return e;
    }
    return ch_dag_size(x) <= 2 * size + 20 ? x : e;
}

/* A tidy copy of rows expressions, in arena memory (NULL on failure). */
static const ch_expr **tidy_all(ch_ctx *ctx, size_t rows,
                                const ch_expr *const *v)
{
    const ch_expr **t = ch_mat_new(ctx, rows, 1);
    for (size_t i = 0; t && i < rows; i++) t[i] = tidy(ctx, v[i]);
    return t;
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
    e->kind = CH_ENTRY_VECTOR;
    e->rows = rows;
    e->cols = 1;
    e->e = v;
    e->row_labels = labels;
}

static void set_mat(ch_entry *e, size_t rows, size_t cols,
                    const ch_expr *const *v, const char *const *rl,
                    const char *const *cl)
{
    e->kind = CH_ENTRY_MATRIX;
    e->rows = rows;
    e->cols = cols;
    e->e = v;
    e->row_labels = rl;
    e->col_labels = cl;
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
        (*q)[i] = m->q[i]->sym->name;
        (*qt)[i] = m->qt[i]->sym->name;
    }
    for (size_t i = 0; i < m->np; i++) (*par)[i] = m->param[i]->sym->name;
    for (size_t i = 0; i < m->k; i++) {
        char buf[32];
        snprintf(buf, sizeof buf, "%zu", i + 1);
        if (!((*con)[i] = ch_ctx_strdup(ctx, buf))) return -1;
    }
    return 0;
}

int ch_derive(ch_ctx *ctx, const ch_model *m, ch_derivation **out,
              ch_error *err)
{
    ch_derivation *d = ch_ctx_alloc(ctx, sizeof *d);
    if (!d || !(d->entry = ch_ctx_alloc(ctx, NSPECS * sizeof *d->entry)))
        return ch_error_set(err, CH_ERR_MEMORY, NULL, 0, 0, "out of memory");
    d->ctx = ctx;
    d->model = m;
    d->n = NSPECS;
    for (size_t i = 0; i < NSPECS; i++) {
        d->entry[i].key = specs[i].key;
        d->entry[i].title = specs[i].title;
        d->entry[i].latex_title = specs[i].latex;
        d->entry[i].ref = specs[i].ref;
        d->entry[i].symbol = specs[i].symbol;
        d->entry[i].note = "not derived by this version";
    }
    int rc = ch_lagrange_derive(ctx, m, &d->lag, err);
    if (rc) return rc;
    const char **qn, **qtn, **pn, **cn;
    if (name_lists(ctx, m, &qn, &qtn, &pn, &cn))
        return ch_error_set(err, CH_ERR_MEMORY, NULL, 0, 0, "out of memory");
    const ch_lagrange *L = &d->lag;
    size_t n = m->n, k = m->k;

    ch_entry *e = entry(d, "model");
    e->kind = CH_ENTRY_NAME;
    e->names = &m->name;
    e = entry(d, "coordinates");
    e->kind = CH_ENTRY_NAMES;
    e->rows = n;
    e->names = qn;
    e = entry(d, "velocities");
    e->kind = CH_ENTRY_NAMES;
    e->rows = n;
    e->names = qtn;
    e = entry(d, "parameters");
    e->kind = CH_ENTRY_PARAMS;
    e->rows = m->np;
    e->names = pn;
    e->e = m->param_value;
    e = entry(d, "lagrangian");
    e->kind = CH_ENTRY_EXPR;
    e->e = &m->lagrangian;
    set_vec(entry(d, "momenta"), n, tidy_all(ctx, n, L->p), qn);
    set_mat(entry(d, "mass_matrix"), n, n, tidy_all(ctx, n * n, L->M), qn, qn);
    set_vec(entry(d, "euler_lagrange"), n, tidy_all(ctx, n, L->EL), qn);
    set_vec(entry(d, "forces"), n, L->Q, qn);
    if (k) {
        set_vec(entry(d, "constraints"), k, tidy_all(ctx, k, L->phi), cn);
        set_mat(entry(d, "constraint_jacobian"), k, n,
                tidy_all(ctx, k * n, L->G), cn, qn);
        set_vec(entry(d, "constraint_bias"), k, tidy_all(ctx, k, L->c), cn);
    } else {
        entry(d, "constraints")->note = "the model has no constraints";
        entry(d, "constraint_jacobian")->note = "the model has no constraints";
        entry(d, "constraint_bias")->note = "the model has no constraints";
    }
    e = entry(d, "energy");
    e->kind = CH_ENTRY_EXPR;
    e->e = tidy_all(ctx, 1, &L->energy);
    for (size_t i = 0; i < d->n; i++)
        if (d->entry[i].kind >= CH_ENTRY_EXPR && !d->entry[i].e)
            return ch_error_set(err, CH_ERR_MEMORY, NULL, 0, 0, "out of memory");
    *out = d;
    return 0;
}
