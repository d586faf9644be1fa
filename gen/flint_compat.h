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

#endif
