/* mechanics.c — the stages of the mechanics in order, and the parts
 * derived on request (mechanics.h). */
#include "mech/mechanics.h"

#include <stdio.h>

int ch_mechanics_derive(ch_ctx *ctx, const ch_model *m, ch_mechanics **out,
                        ch_error *err)
{
    ch_mechanics *d = ch_ctx_alloc(ctx, sizeof *d);
    if (!d) return ch_error_set(err, CH_ERR_MEMORY, NULL, 0, 0, "out of memory");
    d->ctx = ctx;
    d->model = m;
    int rc;
    if ((rc = ch_lagrange_derive(ctx, m, &d->lag, err))
        || (rc = ch_initial_positions(ctx, m, &d->lag, &d->init, err))
        || (rc = ch_manifold_init(ctx, m, &d->lag, d->init.q, &d->mf, err))
        || (rc = ch_initial_velocities(ctx, m, &d->mf, &d->init, err))
        || (rc = ch_chetaev_derive(ctx, &d->mf, &d->chet, err))
        || (rc = ch_reduce_derive(ctx, &d->mf, &d->red, err))
        || (rc = ch_hamilton_derive(ctx, &d->red, &d->ham, err)))
        return rc;
    *out = d;
    return 0;
}

/* "not derived: " and the context's error, which is cleared; NULL when out
 * of memory. */
static const char *not_derived(ch_ctx *ctx)
{
    char why[sizeof ch_ctx_error(ctx)->msg + 32];
    snprintf(why, sizeof why, "not derived: %s", ch_ctx_error(ctx)->msg);
    ch_ctx_clear_error(ctx);
    return ch_ctx_strdup(ctx, why);
}

int ch_mechanics_complete(ch_mechanics *d, unsigned parts)
{
    ch_ctx *ctx = d->ctx;
    parts &= ~d->done;
    if (parts & CH_MECH_EULER) {
        if (ch_lagrange_euler(ctx, d->model, &d->lag)) {
            if (ch_ctx_error(ctx)->code == CH_ERR_MEMORY) return -1;
            if (!(d->euler_failed = not_derived(ctx))) return -1;
        }
        d->done |= CH_MECH_EULER;
    }
    if (parts & CH_MECH_LAMBDA) {
        if (d->model->k && ch_chetaev_explicit_lambda(ctx, &d->mf, &d->lambda)) {
            if (ch_ctx_error(ctx)->code == CH_ERR_MEMORY) return -1;
            d->lambda = NULL;
            if (!(d->lambda_failed = not_derived(ctx))) return -1;
        }
        d->done |= CH_MECH_LAMBDA;
    }
    if (parts & CH_MECH_IDENTITY) {
        if (d->model->k) ch_reduce_test_identity(ctx, &d->red);
        /* an undecided test for want of memory is no verdict */
        if (ch_ctx_error(ctx)->code == CH_ERR_MEMORY) return -1;
        d->done |= CH_MECH_IDENTITY;
    }
    return 0;
}
