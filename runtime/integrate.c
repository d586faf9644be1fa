/* integrate.c — explicit Euler, midpoint and classical Runge–Kutta. */
#include "integrate.h"

#include <math.h>
#include <string.h>

int chrt_method_parse(const char *name)
{
    if (strcmp(name, "euler") == 0) return CHRT_EULER;
    if (strcmp(name, "midpoint") == 0) return CHRT_MIDPOINT;
    if (strcmp(name, "rk4") == 0) return CHRT_RK4;
    return -1;
}

const char *chrt_method_name(chrt_method m)
{
    switch (m) {
    case CHRT_EULER: return "euler";
    case CHRT_MIDPOINT: return "midpoint";
    case CHRT_RK4: return "rk4";
    }
    return "?";
}

/* y = x + a*k */
static void axpy(int n, double *y, const double *x, double a, const double *k)
{
    for (int i = 0; i < n; i++) y[i] = x[i] + a * k[i];
}

int chrt_step(const chrt_stepper *s, chrt_method m, chrt_rhs f, double t,
              double h, double *x, const double *p)
{
    int n = s->nx;
    double *k1 = s->work, *k2 = k1 + n, *k3 = k2 + n, *k4 = k3 + n;
    double *y = k4 + n, *xn = y + n;
    int rc;
/* a right side's 2 (its chart is numerically singular) is the step's 3 */
#define RHS(tt, xx, kk) \
    if ((rc = f(tt, xx, p, kk)) != 0) return rc == 2 ? 3 : 1
    RHS(t, x, k1);
    switch (m) {
    case CHRT_EULER:
        axpy(n, xn, x, h, k1);
        break;
    case CHRT_MIDPOINT:
        axpy(n, y, x, h / 2, k1);
        RHS(t + h / 2, y, k2);
        axpy(n, xn, x, h, k2);
        break;
    case CHRT_RK4:
        axpy(n, y, x, h / 2, k1);
        RHS(t + h / 2, y, k2);
        axpy(n, y, x, h / 2, k2);
        RHS(t + h / 2, y, k3);
        axpy(n, y, x, h, k3);
        RHS(t + h, y, k4);
        for (int i = 0; i < n; i++)
            xn[i] = x[i] + h / 6 * (k1[i] + 2 * k2[i] + 2 * k3[i] + k4[i]);
        break;
    }
    for (int i = 0; i < n; i++)
        if (!isfinite(xn[i])) return 2;
    memcpy(x, xn, (size_t)n * sizeof *x);
    return 0;
#undef RHS
}
