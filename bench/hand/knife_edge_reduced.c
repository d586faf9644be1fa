/* knife_edge_reduced.c — hand-written reduced right-hand side of
 * examples/knife_edge.nh, the baseline of bench/rhs_bench.c.
 *
 * State (x, y, phi, x', phi') and parameters (m, J, g, alpha, c) in the
 * order of the emitted knife_edge_reduced_*. The constraint
 * sin(phi) x' = cos(phi) y' gives y' = tan(phi) x'; with q' = A u,
 * u = (x', phi'), the reduced equations A^T (M (A u' + A' u) - dL/dq - Q)
 * = 0 have M* = diag(m sec^2 phi, J), so
 *   x''   = g sin(alpha) cos^2 phi - tan(phi) phi' x'
 *   phi'' = -c phi' / J
 * (the forward speed v = x'/cos phi obeys v' = g sin(alpha) cos phi). */
#include <math.h>

int hand_rhs(double t, const double *x, const double *p, double *dxdt)
{
    double s = sin(x[2]), c = cos(x[2]), tn;
    (void)t;
    if (c == 0.0 || p[1] == 0.0) return 1; /* y' = tan(phi) x' undefined */
    tn = s / c;
    dxdt[0] = x[3];
    dxdt[1] = tn * x[3];
    dxdt[2] = x[4];
    dxdt[3] = p[2] * sin(p[3]) * c * c - tn * x[4] * x[3];
    dxdt[4] = -p[4] * x[4] / p[1];
    return 0;
}
