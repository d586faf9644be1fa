/* trailer.h — the N-trailer of bench/gen_trailer.py as model text, for the
 * unit tests that need a model of any size with a triangular G_d. */
#ifndef CH_TEST_TRAILER_H
#define CH_TEST_TRAILER_H

#include "core/buf.h"

/* The N-trailer (malloc'd text, NULL out of memory). */
static char *trailer_text(int n)
{
    ch_buf b;
    ch_buf_init(&b);
    ch_buf_printf(&b, "model trailer%d\ncoordinates x y", n);
    for (int i = 0; i <= n; i++) ch_buf_printf(&b, " th%d", i);
    ch_buf_put(&b, "\nparameters m=1 J=0.1 d=1 F0=1\ndefine x0 = x\ndefine y0 = y\n");
    for (int i = 1; i <= n; i++)
        ch_buf_printf(&b, "define x%d = x%d - d*cos(th%d)\ndefine y%d = y%d - d*sin(th%d)\n", i,
                      i - 1, i, i, i - 1, i);
    ch_buf_put(&b, "lagrangian 0");
    for (int i = 0; i <= n; i++)
        ch_buf_printf(&b, " + m/2*(x%d'^2 + y%d'^2) + J/2*th%d'^2", i, i, i);
    for (int i = 0; i <= n; i++)
        ch_buf_printf(&b, "\nconstraint -sin(th%d)*x%d' + cos(th%d)*y%d' = 0", i, i, i, i);
    ch_buf_put(&b, "\nforce x = F0*cos(th0)\nforce y = F0*sin(th0)\ndependent y'");
    for (int i = 1; i <= n; i++) ch_buf_printf(&b, " th%d'", i);
    ch_buf_put(&b, "\ninitial x'=1 th0'=0.1\n");
    return ch_buf_take(&b);
}

#endif
