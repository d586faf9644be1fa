/* flint_compat.h — the only place that includes FLINT and arb.
 *
 * Debian 12 ships FLINT 2.9 (<flint/...>) with arb 2.23 as a separate
 * library (<arb.h>, -lflint-arb); FLINT 3 merged arb in as <flint/arb.h>.
 * Every other file includes this header instead of FLINT's own. */
#ifndef CH_FLINT_COMPAT_H
#define CH_FLINT_COMPAT_H

#include <flint/flint.h>
#include <flint/fmpz.h>
#include <flint/fmpq.h>
#include <flint/fmpz_factor.h>
#include <flint/fmpq_mpoly.h>

#if __FLINT_RELEASE >= 30000
#include <flint/arb.h>
#include <flint/arb_mat.h>
#include <flint/arf.h>
#else
#include <arb.h>
#include <arb_mat.h>
#include <arf.h>
#endif

/* fmpq_set, inline when both values are small (no GMP integers): the
 * library's two fmpz_set calls for the coefficients copied into every
 * node and CSE value were 8% of a large emit's instructions. */
static inline void ch_fmpq_set(fmpq_t d, const fmpq_t s)
{
    if (COEFF_IS_MPZ(*fmpq_numref(d)) || COEFF_IS_MPZ(*fmpq_denref(d))
        || COEFF_IS_MPZ(*fmpq_numref(s)) || COEFF_IS_MPZ(*fmpq_denref(s))) {
        fmpq_set(d, s);
        return;
    }
    *fmpq_numref(d) = *fmpq_numref(s);
    *fmpq_denref(d) = *fmpq_denref(s);
}

#endif
