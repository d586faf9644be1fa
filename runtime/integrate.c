/* integrate.c — explicit Euler, midpoint, classical Runge–Kutta, and the
 * embedded Dormand–Prince pairs 8(5,3) and 5(4) with dense output. */
#include "integrate.h"

#include <math.h>
#include <string.h>

int chrt_method_parse(const char *name)
{
    if (strcmp(name, "euler") == 0) return CHRT_EULER;
    if (strcmp(name, "midpoint") == 0) return CHRT_MIDPOINT;
    if (strcmp(name, "rk4") == 0) return CHRT_RK4;
    if (strcmp(name, "dop853") == 0) return CHRT_DOP853;
    if (strcmp(name, "rk45") == 0 || strcmp(name, "dopri5") == 0) return CHRT_RK45;
    if (strcmp(name, "cvode") == 0) return CHRT_CVODE;
    return -1;
}

const char *chrt_method_name(chrt_method m)
{
    switch (m) {
    case CHRT_EULER: return "euler";
    case CHRT_MIDPOINT: return "midpoint";
    case CHRT_RK4: return "rk4";
    case CHRT_DOP853: return "dop853";
    case CHRT_RK45: return "rk45";
    case CHRT_CVODE: return "cvode";
    }
    return "?";
}

int chrt_method_adaptive(chrt_method m)
{
    return m == CHRT_DOP853 || m == CHRT_RK45 || m == CHRT_CVODE;
}

int chrt_method_stages(chrt_method m)
{
    switch (m) {
    case CHRT_EULER: return 1;
    case CHRT_MIDPOINT: return 2;
    case CHRT_RK4: return 4;
    case CHRT_DOP853: return 12;
    case CHRT_RK45: return 6;
    case CHRT_CVODE: return 0; /* counted by the library */
    }
    return 0;
}

/* y = x + a*k */
static void axpy(int n, double *y, const double *x, double a, const double *k)
{
    for (int i = 0; i < n; i++) y[i] = x[i] + a * k[i];
}

static int finite_all(int n, const double *x)
{
    for (int i = 0; i < n; i++)
        if (!isfinite(x[i])) return 0;
    return 1;
}

int chrt_step(const chrt_stepper *s, chrt_method m, chrt_rhs f, double t,
              double h, double *x, void *ctx)
{
    int n = s->nx;
    double *k1 = s->work, *k2 = k1 + n, *k3 = k2 + n, *k4 = k3 + n;
    double *y = k4 + n, *xn = y + n;
    int rc;
/* a right side's 2 (its chart is numerically singular) is the step's 3 */
#define RHS(tt, xx, kk) \
    if ((rc = f(ctx, tt, xx, kk)) != 0) return rc == 2 ? 3 : 1
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
    default:
        return 1; /* the pairs step through chrt_rk_attempt */
    }
    if (!finite_all(n, xn)) return 2;
    memcpy(x, xn, (size_t)n * sizeof *x);
    return 0;
#undef RHS
}

/* ---- coefficients ---------------------------------------------------------- */

/* Dormand–Prince 8(5,3) with its dense output of order 7: the
 * coefficients of Hairer's dop853.f (as in SciPy's dop853_coefficients.py).
 * Stages 0..11 make the step, row 12 is f at the new state (FSAL), rows
 * 13..15 are the extra stages of the interpolant. */
static const double dop_c[16] = {0.0, 0.05260015195876773, 0.0789002279381516, 0.1183503419072274, 0.2816496580927726, 0.3333333333333333, 0.25, 0.3076923076923077, 0.6512820512820513, 0.6, 0.8571428571428571, 1.0, 1.0, 0.1, 0.2, 0.7777777777777778};
static const double dop_a[16][16] = {
    {0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0},
    {0.05260015195876773, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0},
    {0.0197250569845379, 0.0591751709536137, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0},
    {0.02958758547680685, 0.0, 0.08876275643042054, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0},
    {0.2413651341592667, 0.0, -0.8845494793282861, 0.924834003261792, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0},
    {0.037037037037037035, 0.0, 0.0, 0.17082860872947386, 0.12546768756682242, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0},
    {0.037109375, 0.0, 0.0, 0.17025221101954405, 0.06021653898045596, -0.017578125, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0},
    {0.03709200011850479, 0.0, 0.0, 0.17038392571223998, 0.10726203044637328, -0.015319437748624402, 0.008273789163814023, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0},
    {0.6241109587160757, 0.0, 0.0, -3.3608926294469414, -0.868219346841726, 27.59209969944671, 20.154067550477894, -43.48988418106996, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0},
    {0.47766253643826434, 0.0, 0.0, -2.4881146199716677, -0.590290826836843, 21.230051448181193, 15.279233632882423, -33.28821096898486, -0.020331201708508627, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0},
    {-0.9371424300859873, 0.0, 0.0, 5.186372428844064, 1.0914373489967295, -8.149787010746927, -18.52006565999696, 22.739487099350505, 2.4936055526796523, -3.0467644718982196, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0},
    {2.273310147516538, 0.0, 0.0, -10.53449546673725, -2.0008720582248625, -17.9589318631188, 27.94888452941996, -2.8589982771350235, -8.87285693353063, 12.360567175794303, 0.6433927460157636, 0.0, 0.0, 0.0, 0.0, 0.0},
    {0.054293734116568765, 0.0, 0.0, 0.0, 0.0, 4.450312892752409, 1.8915178993145003, -5.801203960010585, 0.3111643669578199, -0.1521609496625161, 0.20136540080403034, 0.04471061572777259, 0.0, 0.0, 0.0, 0.0},
    {0.056167502283047954, 0.0, 0.0, 0.0, 0.0, 0.0, 0.25350021021662483, -0.2462390374708025, -0.12419142326381637, 0.15329179827876568, 0.00820105229563469, 0.007567897660545699, -0.008298, 0.0, 0.0, 0.0},
    {0.03183464816350214, 0.0, 0.0, 0.0, 0.0, 0.028300909672366776, 0.053541988307438566, -0.05492374857139099, 0.0, 0.0, -0.00010834732869724932, 0.0003825710908356584, -0.00034046500868740456, 0.1413124436746325, 0.0, 0.0},
    {-0.42889630158379194, 0.0, 0.0, 0.0, 0.0, -4.697621415361164, 7.683421196062599, 4.06898981839711, 0.3567271874552811, 0.0, 0.0, 0.0, -0.0013990241651590145, 2.9475147891527724, -9.15095847217987, 0.0},
};
static const double dop_b[12] = {0.054293734116568765, 0.0, 0.0, 0.0, 0.0, 4.450312892752409, 1.8915178993145003, -5.801203960010585, 0.3111643669578199, -0.1521609496625161, 0.20136540080403034, 0.04471061572777259};
static const double dop_e3[13] = {-0.18980075407240762, 0.0, 0.0, 0.0, 0.0, 4.450312892752409, 1.8915178993145003, -5.801203960010585, -0.4226823213237919, -0.1521609496625161, 0.20136540080403034, 0.02265179219836082, 0.0};
static const double dop_e5[13] = {0.01312004499419488, 0.0, 0.0, 0.0, 0.0, -1.2251564463762044, -0.4957589496572502, 1.6643771824549864, -0.35032884874997366, 0.3341791187130175, 0.08192320648511571, -0.022355307863886294, 0.0};
static const double dop_d[4][16] = {
    {-8.428938276109013, 0.0, 0.0, 0.0, 0.0, 0.5667149535193777, -3.0689499459498917, 2.38466765651207, 2.117034582445028, -0.871391583777973, 2.2404374302607883, 0.6315787787694688, -0.08899033645133331, 18.148505520854727, -9.194632392478356, -4.436036387594894},
    {10.427508642579134, 0.0, 0.0, 0.0, 0.0, 242.28349177525817, 165.20045171727028, -374.5467547226902, -22.113666853125306, 7.733432668472264, -30.674084731089398, -9.332130526430229, 15.697238121770845, -31.139403219565178, -9.35292435884448, 35.81684148639408},
    {19.985053242002433, 0.0, 0.0, 0.0, 0.0, -387.0373087493518, -189.17813819516758, 527.8081592054236, -11.57390253995963, 6.8812326946963, -1.0006050966910838, 0.7777137798053443, -2.778205752353508, -60.19669523126412, 84.32040550667716, 11.99229113618279},
    {-25.69393346270375, 0.0, 0.0, 0.0, 0.0, -154.18974869023643, -231.5293791760455, 357.6391179106141, 93.40532418362432, -37.45832313645163, 104.0996495089623, 29.8402934266605, -43.53345659001114, 96.32455395918828, -39.17726167561544, -149.72683625798564},
};

/* Dormand–Prince 5(4) (DOPRI5) with Shampine's 4th-order dense output
 * (the coefficients of SciPy's RK45): 6 stages, then f at the new state. */
static const double dp5_c[6] = {0, 1.0 / 5, 3.0 / 10, 4.0 / 5, 8.0 / 9, 1};
static const double dp5_a[6][5] = {
    {0, 0, 0, 0, 0},
    {1.0 / 5, 0, 0, 0, 0},
    {3.0 / 40, 9.0 / 40, 0, 0, 0},
    {44.0 / 45, -56.0 / 15, 32.0 / 9, 0, 0},
    {19372.0 / 6561, -25360.0 / 2187, 64448.0 / 6561, -212.0 / 729, 0},
    {9017.0 / 3168, -355.0 / 33, 46732.0 / 5247, 49.0 / 176, -5103.0 / 18656}};
static const double dp5_b[6] = {35.0 / 384, 0, 500.0 / 1113, 125.0 / 192,
                                -2187.0 / 6784, 11.0 / 84};
static const double dp5_e[7] = {-71.0 / 57600, 0, 71.0 / 16695, -71.0 / 1920,
                                17253.0 / 339200, -22.0 / 525, 1.0 / 40};
static const double dp5_p[7][4] = {
    {1, -8048581381.0 / 2820520608, 8663915743.0 / 2820520608,
     -12715105075.0 / 11282082432},
    {0, 0, 0, 0},
    {0, 131558114200.0 / 32700410799, -68118460800.0 / 10900136933,
     87487479700.0 / 32700410799},
    {0, -1754552775.0 / 470086768, 14199869525.0 / 1410260304,
     -10690763975.0 / 1880347072},
    {0, 127303824393.0 / 49829197408, -318862633887.0 / 49829197408,
     701980252875.0 / 199316789632},
    {0, -282668133.0 / 205662961, 2019193451.0 / 616988883,
     -1453857185.0 / 822651844},
    {0, 40617522.0 / 29380423, -110615467.0 / 29380423, 69997945.0 / 29380423}};

/* ---- embedded pairs ----------------------------------------------------------- */

/* work: K (16 rows of nx), a stage argument (nx), the interpolant (7*nx). */
enum { K_ROWS = 16, DENSE_ROWS = 7 };

size_t chrt_rk_work_size(int nx)
{
    return (size_t)(K_ROWS + 1 + DENSE_ROWS) * (size_t)(nx > 0 ? nx : 1);
}

static double *krow(const chrt_rk *r, int i) { return r->work + (size_t)i * (size_t)r->nx; }
static double *stage_arg(const chrt_rk *r) { return krow(r, K_ROWS); }
static double *dense_rows(const chrt_rk *r) { return krow(r, K_ROWS + 1); }

/* 0, or 2 when f reports a singular chart, 1 for any other failure. */
static int call(chrt_rk *r, chrt_rhs f, void *ctx, double t, const double *x,
                double *dx)
{
    int rc;
    r->nfev++;
    rc = f(ctx, t, x, dx);
    return rc == 0 ? 0 : rc == 2 ? 2 : 1;
}

/* RMS norm of v/scale (SciPy's common.norm). */
static double rms(int n, const double *v, const double *x, const double *xn,
                  double rtol, double atol)
{
    double s = 0;
    for (int i = 0; i < n; i++) {
        double ax = fabs(x[i]), an = xn ? fabs(xn[i]) : 0;
        double q = v[i] / (atol + rtol * (ax > an ? ax : an));
        s += q * q;
    }
    return n ? sqrt(s / n) : 0;
}

static int error_order(chrt_method m) { return m == CHRT_DOP853 ? 7 : 4; }

double chrt_rk_initial_step(chrt_rk *r, chrt_rhs f, void *ctx, double t,
                            const double *x, const double *f0, double rtol,
                            double atol)
{
    int n = r->nx;
    double *y1 = stage_arg(r), *f1 = krow(r, 1), h0, h1;
    if (n == 0) return INFINITY;
    double d0 = rms(n, x, x, NULL, rtol, atol), d1 = rms(n, f0, x, NULL, rtol, atol);
    h0 = d0 < 1e-5 || d1 < 1e-5 ? 1e-6 : 0.01 * d0 / d1;
    axpy(n, y1, x, h0, f0);
    if (call(r, f, ctx, t + h0, y1, f1) || !finite_all(n, f1)) return -1;
    for (int i = 0; i < n; i++) f1[i] -= f0[i];
    double d2 = rms(n, f1, x, NULL, rtol, atol) / h0;
    if (d1 <= 1e-15 && d2 <= 1e-15)
        h1 = h0 * 1e-3 > 1e-6 ? h0 * 1e-3 : 1e-6;
    else
        h1 = pow(0.01 / (d1 > d2 ? d1 : d2), 1.0 / (error_order(r->m) + 1));
    return 100 * h0 < h1 ? 100 * h0 : h1;
}

/* y = x + h * sum_{j<s} a[j] K[j], zero coefficients skipped. */
static void stage_state(const chrt_rk *r, int s, const double *a, const double *x,
                        double h, double *y)
{
    int n = r->nx;
    memcpy(y, x, (size_t)n * sizeof *y);
    for (int j = 0; j < s; j++) {
        if (a[j] == 0) continue;
        const double *k = krow(r, j);
        double c = h * a[j];
        for (int i = 0; i < n; i++) y[i] += c * k[i];
    }
}

int chrt_rk_attempt(chrt_rk *r, chrt_rhs f, void *ctx, double t, const double *x,
                    const double *f0, double h, double rtol, double atol,
                    double *xn, double *fn, double *err)
{
    int n = r->nx, dop = r->m == CHRT_DOP853, ns = dop ? 12 : 6, rc;
    double *y = stage_arg(r);
    r->dense = 0;
    memcpy(krow(r, 0), f0, (size_t)n * sizeof *f0);
    for (int s = 1; s < ns; s++) {
        stage_state(r, s, dop ? dop_a[s] : dp5_a[s], x, h, y);
        if ((rc = call(r, f, ctx, t + (dop ? dop_c[s] : dp5_c[s]) * h, y, krow(r, s))))
            return rc;
    }
    stage_state(r, ns, dop ? dop_b : dp5_b, x, h, xn);
    if (!finite_all(n, xn)) return 3;
    if ((rc = call(r, f, ctx, t + h, xn, fn))) return rc;
    memcpy(krow(r, ns), fn, (size_t)n * sizeof *fn);
    /* The error estimate of each pair, as SciPy computes it. */
    if (dop) {
        double n5 = 0, n3 = 0;
        for (int i = 0; i < n; i++) {
            double e5 = 0, e3 = 0, ax = fabs(x[i]), an = fabs(xn[i]);
            for (int j = 0; j <= ns; j++) {
                double k = krow(r, j)[i];
                e5 += dop_e5[j] * k;
                e3 += dop_e3[j] * k;
            }
            double sc = atol + rtol * (ax > an ? ax : an);
            e5 /= sc, e3 /= sc;
            n5 += e5 * e5, n3 += e3 * e3;
        }
        *err = n5 == 0 && n3 == 0 ? 0 : fabs(h) * n5 / sqrt((n5 + 0.01 * n3) * n);
    } else {
        double *e = y;
        for (int i = 0; i < n; i++) {
            double s = 0;
            for (int j = 0; j <= ns; j++) s += dp5_e[j] * krow(r, j)[i];
            e[i] = h * s;
        }
        *err = rms(n, e, x, xn, rtol, atol);
    }
    if (!isfinite(*err)) return 3;
    r->t0 = t, r->h = h;
    return 0;
}

double chrt_rk_factor(const chrt_rk *r, double err, int after_reject)
{
    double fac;
    if (err == 0) fac = 10;
    else fac = 0.9 * pow(err, -1.0 / (error_order(r->m) + 1));
    if (err < 1) {
        if (fac > 10) fac = 10;
        if (after_reject && fac > 1) fac = 1;
    } else if (fac < 0.2) {
        fac = 0.2;
    }
    return fac;
}

int chrt_rk_dense_prepare(chrt_rk *r, chrt_rhs f, void *ctx, const double *x,
                          const double *f0, const double *xn,
                          const double *fn)
{
    int n = r->nx, rc;
    double h = r->h, *F = dense_rows(r);
    if (r->dense) return 0;
    if (r->m == CHRT_DOP853) {
        double *y = stage_arg(r);
        for (int s = 13; s < 16; s++) {
            stage_state(r, s, dop_a[s], x, h, y);
            if ((rc = call(r, f, ctx, r->t0 + dop_c[s] * h, y, krow(r, s)))) return rc;
        }
        for (int i = 0; i < n; i++) {
            double dy = xn[i] - x[i];
            F[i] = dy;
            F[n + i] = h * f0[i] - dy;
            F[2 * n + i] = 2 * dy - h * (fn[i] + f0[i]);
            for (int d = 0; d < 4; d++) {
                double s = 0;
                for (int j = 0; j < 16; j++)
                    if (dop_d[d][j] != 0) s += dop_d[d][j] * krow(r, j)[i];
                F[(3 + d) * n + i] = h * s;
            }
        }
    } else {
        for (int i = 0; i < n; i++)
            for (int d = 0; d < 4; d++) {
                double s = 0;
                for (int j = 0; j < 7; j++) s += dp5_p[j][d] * krow(r, j)[i];
                F[d * n + i] = s;
            }
    }
    r->dense = 1;
    return 0;
}

void chrt_rk_dense_eval(const chrt_rk *r, const double *x, double t, double *y)
{
    int n = r->nx;
    double th = (t - r->t0) / r->h;
    const double *F = dense_rows(r);
    for (int i = 0; i < n; i++) {
        double v = 0;
        if (r->m == CHRT_DOP853) {
            /* Hairer's contd8: F0 + (1-th)(F1 + th(F2 + (1-th)(F3 + ...))) */
            for (int d = DENSE_ROWS - 1; d >= 0; d--) {
                v += F[d * n + i];
                v *= (DENSE_ROWS - 1 - d) % 2 == 0 ? th : 1 - th;
            }
            y[i] = x[i] + v;
        } else {
            for (int d = 3; d >= 0; d--) v = (v + F[d * n + i]) * th;
            y[i] = x[i] + r->h * v;
        }
    }
}
