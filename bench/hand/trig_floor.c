/* trig_floor.c — the part of a right-hand side no code generator can
 * remove: sin and cos of every angle of the state (libm, as the emitted
 * code and SymPy's ccode call them; gcc fuses each pair into one sincos).
 * bench/rhs.sh builds it into rhs_bench.c with -DFLOOR_FROM=i -DFLOOR_TO=j,
 * the state indices of the angles, and prints it as the floor of a model. */
#include <math.h>

int floor_rhs(double t, const double *x, const double *p, double *dxdt)
{
    int j;
    (void)t;
    (void)p;
    for (j = FLOOR_FROM; j < FLOOR_TO; j++) dxdt[j] = sin(x[j]) * cos(x[j]);
    return 0;
}
