/* audit.h — the `check` audit: which quantities a model conserves and why
 * (THEORY §3, §6, §7; SPEC §2 `check`).
 *
 * For a derived model the audit lists, in this order: the energy E; the
 * frame energy T_xi when every constraint is affine in the velocities; the
 * momentum p_q of every coordinate q that L does not depend on; p.Y for
 * every declared `field` Y; every declared `integral`. Each quantity has
 * its rate dF/dt on motions (an expression in t, q, q_t and possibly q_tt
 * and the multipliers) and a verdict from the zero test of THEORY §7 with
 * the constraint-manifold sampler, so the multipliers and accelerations
 * are those of the true motion through each point. The energy verdict is
 * the one of ch_chetaev (not recomputed). Maxima are midpoints of ball
 * evaluations at random points of the constraint manifold. Everything
 * lives in the mechanics' context. */
#ifndef CH_AUDIT_H
#define CH_AUDIT_H

#include "mech/mechanics.h"

typedef enum {
    CH_AUDIT_ENERGY,       /* "energy" */
    CH_AUDIT_FRAME_ENERGY, /* "frame_energy" */
    CH_AUDIT_MOMENTUM,     /* "momentum" */
    CH_AUDIT_FIELD,        /* "field" */
    CH_AUDIT_INTEGRAL      /* "integral" */
} ch_audit_kind;

typedef struct {
    const char *name;        /* "E", "T_xi", "p_x", "p.Y", integral name */
    ch_audit_kind kind;
    const ch_expr *F;        /* the quantity */
    const ch_expr *rate;     /* dF/dt on motions */
    int verdict;             /* 1 conserved, 0 not conserved, -1 unknown */
    ch_zero_result test;     /* the zero test of `rate` */
    double max_rate;         /* largest |dF/dt| found, 0 when symbolic zero */
    /* Largest |R.xi| (energy: |lambda.(G q_t)|, frame energy: |R.xi|,
     * momentum: |R_i|, field: |R.Y|) at the sampled points; -1 when the
     * quantity has none (integrals). */
    double reaction_power_max;
    /* Fields only: largest |Y^TQ(L)| on the manifold and whether it
     * vanishes identically (1), not (0), undecided (-1). */
    double lie_max;
    int lie_zero;
    /* Fields and momenta: whether R.Y vanishes for every multiplier value,
     * i.e. S Y == 0, Y a section of D (1, 0, -1). */
    int in_distribution;
    const char *reason;      /* one or two sentences for readers (arena) */
    int skipped;             /* not decided: the time limit was reached first */
} ch_audit_quantity;

/* What a front end adds to the audit (each may be NULL): stop() returns
 * 1 once its time budget is spent, and the quantities not yet decided
 * then get verdict -1 ("not decided: time limit"); progress() is told
 * after each quantity decided (done quantities so far, its name). */
typedef struct {
    int (*stop)(void *ctx);
    void (*progress)(void *ctx, size_t done, const char *name);
    void *ctx;
} ch_audit_hooks;

typedef struct ch_audit {
    const ch_mechanics *d;
    size_t nq;
    ch_audit_quantity *q;
    int affine;              /* every constraint affine in the velocities */
    const ch_expr **xi;      /* n components when affine, else NULL */
    /* How xi was chosen: "zero" (constraints linear, s == 0), "field"
     * (a declared field with S Y + s == 0, named in xi_field) or
     * "least squares" (xi = -S^T (S S^T)^-1 s). NULL when not affine. */
    const char *xi_source;
    const char *xi_field;
    int points;              /* manifold points used for the maxima */
    const ch_audit_hooks *hooks;
    size_t skipped;          /* quantities left undecided by the time limit */
} ch_audit;

/* Runs the audit. Returns 0, or nonzero with err filled (out of memory,
 * expression limits). Undecidable quantities are verdict -1, not errors. */
int ch_audit_run(ch_ctx *ctx, const ch_mechanics *d, const ch_audit_hooks *hooks,
                 ch_audit *out, ch_error *err);

/* "energy", "frame_energy", ... */
const char *ch_audit_kind_name(ch_audit_kind k);

#endif
