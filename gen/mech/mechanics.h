/* mechanics.h — everything the mechanics derives for one model, in one
 * struct: the Lagrangian terms, the initial state, the constraint
 * manifold, the Chetaev reactions, the reduced and the Poincare-Hamilton
 * forms. Code generation, the audit, the JIT layer and the document
 * (doc/derive.h) read it; none of them derives mechanics.
 *
 * Three quantities only a reader of the printed derivation needs are
 * derived on request, because on a large model each costs as much as a
 * stage of the rest (see their modules): the Euler-Lagrange terms E_i,
 * the explicit multipliers of a small system and the test of the identity
 * of 001 eq. 18. ch_mechanics_complete derives the ones asked for, each at
 * most once, and keeps why one could not be derived. Everything lives in
 * the context. */
#ifndef CH_MECHANICS_H
#define CH_MECHANICS_H

#include "mech/chetaev.h"
#include "mech/hamilton.h"
#include "mech/initial.h"
#include "mech/lagrange.h"
#include "mech/manifold.h"
#include "mech/reduce.h"

typedef enum {
    CH_MECH_EULER = 1,    /* lag.EL (000 eq. 27-29) */
    CH_MECH_LAMBDA = 2,   /* lambda: explicit multipliers, n <= 4 */
    CH_MECH_IDENTITY = 4  /* red.E_identity_test (001 eq. 18) */
} ch_mech_part;

typedef struct ch_mechanics {
    ch_ctx *ctx;
    const ch_model *model;
    ch_lagrange lag;
    ch_manifold mf;
    ch_chetaev chet;
    ch_reduced red;
    ch_hamilton ham;
    ch_initial init; /* the consistent initial state and its warnings */
    unsigned done;   /* the ch_mech_part bits derived (or tried) */
    /* CH_MECH_EULER: NULL, or why lag.EL is NULL ("not derived: ..."). */
    const char *euler_failed;
    /* CH_MECH_LAMBDA: k expressions, or NULL: a system of more than 4
     * coordinates or W singular, or a failure whose reason is in
     * lambda_failed ("not derived: ..."). */
    const ch_expr **lambda;
    const char *lambda_failed;
} ch_mechanics;

/* Derives every stage in order (lagrange, initial positions, manifold,
 * initial velocities, chetaev, reduce, hamilton) into *out. 0, or the
 * first stage's error (err filled). */
int ch_mechanics_derive(ch_ctx *ctx, const ch_model *m, ch_mechanics **out,
                        ch_error *err);

/* Derives the parts (ch_mech_part bits) not derived yet. A part that
 * cannot be derived (a node limit) is kept with its reason, not an error:
 * returns -1 only when out of memory (context error set). */
int ch_mechanics_complete(ch_mechanics *mech, unsigned parts);

#endif
