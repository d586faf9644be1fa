/* emit_impl.h — the emitter's state and the functions its three files
 * share: emit_c.c (names, kernels, the hamilton form's kernels,
 * assembly, the API of emit_c.h), emit_fun.c (the public functions of
 * the emitted code: rhs, velocities, outputs, charts, events, ...) and
 * emit_acc.c (kn_acc: the reduced accelerations' candidate programs and
 * the cheapest). Private to codegen/emit_*.c; each function is described
 * where it is defined. */
#ifndef CH_EMIT_IMPL_H
#define CH_EMIT_IMPL_H

#include "codegen/cse.h"
#include "codegen/emit_c.h"
#include "codegen/emit_red.h"
#include "mech/kane.h"

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
    ch_emit_report report;    /* the same as data */
    const ch_expr **dyn_outs; /* kn_dyn's outputs (factored when cheaper) */
    const ch_expr **dyn_plain; /* the same values as derived */
    int dyn_dist_halved;      /* distributing halved their DAG (factor_both) */
    size_t ndyn;
    ch_opcount alpha_ops;     /* of kn_alpha */
    int fused;                /* kn_acc's body also writes v_dep (no kn_vel in the rhs) */
    ch_cse_cache *cache;      /* programs built (kn_dyn's is kn_acc's first candidate) */
    int shared;               /* the cache is the caller's: other forms' kernels go there */
    const ch_kane *kane;      /* the Lagrangian's Kane form (kane_pre()), or NULL */
    const ch_kkt_ham *ham_kane; /* the hamilton form's from it, or NULL */
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

int ch_em_alpha_closed(const emitter *e);
int ch_em_alpha_linear(emitter *e);
double ch_em_call_cost(const ch_opcount *c);
int ch_em_chart_exprs(emitter *e, const ch_expr **o);
const ch_expr **ch_em_earr(emitter *e, size_t n);
/* The KKT system's shape and nonzero pattern (kn_dyn's values). */
ch_kkt ch_em_kkt(const emitter *e);
void ch_em_emit_fail(emitter *e, ch_status code, const char *msg);
size_t ch_em_factor_both(emitter *e, size_t n, const ch_expr *const *in, size_t dag,
                         const ch_expr ***none, const ch_expr ***one);
void ch_em_fun_acc(emitter *e);
void ch_em_fun_chart(emitter *e);
void ch_em_fun_energy_vel(emitter *e);
void ch_em_fun_events(emitter *e);
void ch_em_fun_outputs(emitter *e);
void ch_em_fun_plain(emitter *e);
void ch_em_fun_project(emitter *e);
void ch_em_fun_qproj(emitter *e);
void ch_em_fun_rhs(emitter *e);
void ch_em_fun_rhs_chart(emitter *e);
void ch_em_fun_state_from(emitter *e);
void ch_em_fun_vel(emitter *e);
int ch_em_has_chart(const emitter *e);
void ch_em_kernel(emitter *e, const char *name, size_t nout, const ch_expr *const *outs);
int ch_em_kernel_build(emitter *e, size_t nout, const ch_expr *const *outs, ch_cse_prog *prog,
                       int again);
void ch_em_kernel_con(emitter *e);
int ch_em_kernel_or_kane(emitter *e, const char *name, size_t nout,
                         const ch_expr *const *closed, const ch_expr *const *kane);
const char **ch_em_local_names(emitter *e, const char *stem, size_t n);
int ch_em_locals_build(emitter *e, size_t nloc, const ch_expr *const *syms,
                       const char *const *names, size_t n, const ch_expr *const *o,
                       ch_cse_prog *p, int by_calls);
const char *ch_em_namer(void *data, const ch_sym *s);
int ch_em_newton_start(const emitter *e);
double ch_em_opcount_total(const ch_opcount *c);
void ch_em_pivot_check_at(emitter *e, const ch_expr *const *outs, char *const *ref, size_t at,
                          ch_buf *code);
void ch_em_put_body(ch_buf *b, const ch_cse_prog *prog);
void ch_em_put_dyn_solve(emitter *e, ch_buf *b, int lambda);
const ch_expr **ch_em_red_outputs(emitter *e);
int ch_em_subst_prog(emitter *e, const ch_expr ***outs, ch_cse_prog *prog, int *fused,
                     int *kane_used);
const ch_expr **ch_em_vdep_syms(emitter *e);

#endif
