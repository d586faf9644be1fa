/* main.c — emitted code embedded in a program of its own (no chetaev
 * runtime): the knife edge's reduced form, stepped by a fixed-rate loop
 * as a controller would (read the state, evaluate the model, advance one
 * sample), with classical Runge–Kutta written here.
 *
 * Build: see README.md next to this file (emit, then one cc line).
 * Usage: ./a.out [T1 [DT]]   (defaults 1 and 1e-3)
 * Prints the final time, state (x y phi x' phi') and energy. */
#include <stdio.h>
#include <stdlib.h>

#include "knife_edge_reduced.h"

#define NX knife_edge_reduced_NX
#define NP knife_edge_reduced_NP

/* One classical Runge–Kutta step of size h in place; nonzero when the
 * right-hand side is singular (the state is then unchanged). */
static int rk4_step(double t, double h, double *x, const double *p)
{
    double k1[NX], k2[NX], k3[NX], k4[NX], y[NX];
    int i;
    if (knife_edge_reduced_rhs(t, x, p, k1)) return 1;
    for (i = 0; i < NX; i++) y[i] = x[i] + h / 2 * k1[i];
    if (knife_edge_reduced_rhs(t + h / 2, y, p, k2)) return 1;
    for (i = 0; i < NX; i++) y[i] = x[i] + h / 2 * k2[i];
    if (knife_edge_reduced_rhs(t + h / 2, y, p, k3)) return 1;
    for (i = 0; i < NX; i++) y[i] = x[i] + h * k3[i];
    if (knife_edge_reduced_rhs(t + h, y, p, k4)) return 1;
    for (i = 0; i < NX; i++)
        x[i] = x[i] + h / 6 * (k1[i] + 2 * k2[i] + 2 * k3[i] + k4[i]);
    return 0;
}

int main(int argc, char **argv)
{
    double t1 = argc > 1 ? atof(argv[1]) : 1.0;
    double dt = argc > 2 ? atof(argv[2]) : 1e-3;
    double x[NX], p[NP], t = 0.0;
    long k, n;
    int i;
    if (!(dt > 0) || !(t1 >= 0)) {
        fprintf(stderr, "usage: %s [T1 [DT]] with T1 >= 0, DT > 0\n", argv[0]);
        return 2;
    }
    for (i = 0; i < NP; i++) p[i] = knife_edge_reduced_param_defaults[i];
    knife_edge_reduced_initial(x);
    n = (long)(t1 / dt + 0.5);
    for (k = 0; k < n; k++) {
        /* A controller would read sensors and write p or x here. */
        double tn = k + 1 < n ? (double)(k + 1) * dt : t1;
        if (rk4_step(t, tn - t, x, p)) {
            fprintf(stderr, "%s: singular at t = %.17g\n", argv[0], t);
            return 3;
        }
        t = tn;
    }
    printf("%.17g", t);
    for (i = 0; i < NX; i++) printf(" %.17g", x[i]);
    printf(" %.17g\n", knife_edge_reduced_energy(t, x, p));
    return 0;
}
