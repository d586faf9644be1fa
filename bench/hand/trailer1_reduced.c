/* trailer1_reduced.c — hand-written reduced right-hand side of the
 * 1-trailer model (`bench/gen_trailer.py 1`), the baseline of
 * bench/rhs_bench.c.
 *
 * State (x, y, th0, th1, x', th0') and parameters (m, J, d, F0) in the
 * order of the emitted trailer1_reduced_*. The constraints give the
 * dependent velocities y' = tan(th0) x' and
 * th1' = k x', k = sin(th0 - th1) / (d cos th0), so q' = A u with
 * u = (x', th0'), A = [a 0; 0 0 1 0]^T, a = (1, tan th0, 0, k). With
 * T = m (x'^2 + y'^2) + J/2 th0'^2 + (m d^2 + J)/2 th1'^2
 *     + m d th1' (sin th1 x' - cos th1 y'),
 * M depends on th1 only and the Euler-Lagrange terms beyond M q'' are
 * h = (m d cos th1 th1'^2, m d sin th1 th1'^2, 0, 0). The reduced
 * equations A^T (M (A u' + A' u) + h - Q) = 0, Q = F0 (cos th0, sin th0,
 * 0, 0), decouple: M* = diag(a^T M a, J) and th0'' = 0. */
#include <math.h>

int hand_rhs(double t, const double *x, const double *p, double *dxdt)
{
    const double m = p[0], J = p[1], d = p[2], F0 = p[3];
    const double s0 = sin(x[2]), c0 = cos(x[2]);
    const double s1 = sin(x[3]), c1 = cos(x[3]);
    const double u1 = x[4], w0 = x[5];
    double t0, sd, cd, k, y_t, w1, kdot, a1, a3, md, mdd;
    double f0, f1, f3, ma0, ma1, ma3, mstar, r;
    (void)t;
    if (c0 == 0.0 || d == 0.0) return 1;
    t0 = s0 / c0;
    sd = sin(x[2] - x[3]);
    cd = cos(x[2] - x[3]);
    k = sd / (d * c0);
    y_t = t0 * u1;
    w1 = k * u1; /* th1' */
    /* d/dt k along the motion */
    kdot = (cd * (w0 - w1) * c0 + sd * s0 * w0) / (d * c0 * c0);
    /* A' u = (0, a1, 0, a3) */
    a1 = u1 * w0 / (c0 * c0);
    a3 = u1 * kdot;
    md = m * d;
    mdd = md * d + J;
    /* f = Q - h - M A' u (its th0 entry is 0) */
    f0 = F0 * c0 - md * c1 * w1 * w1 - md * s1 * a3;
    f1 = F0 * s0 - md * s1 * w1 * w1 - (2 * m * a1 - md * c1 * a3);
    f3 = -(-md * c1 * a1 + mdd * a3);
    /* M a */
    ma0 = 2 * m + md * s1 * k;
    ma1 = 2 * m * t0 - md * c1 * k;
    ma3 = md * s1 - md * c1 * t0 + mdd * k;
    mstar = ma0 + t0 * ma1 + k * ma3;
    if (!(mstar > 0.0) || J == 0.0) return 1;
    r = f0 + t0 * f1 + k * f3;
    dxdt[0] = u1;
    dxdt[1] = y_t;
    dxdt[2] = w0;
    dxdt[3] = w1;
    dxdt[4] = r / mstar;
    dxdt[5] = 0.0;
    return 0;
}
