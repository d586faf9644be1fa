/* rhs_bench.c — ns per evaluation of an emitted right-hand side, and of a
 * hand-written one for comparison (C99; builds with gcc or tcc).
 *
 * Build (bench/rhs.sh does this), with the emitted files in GEN:
 *   CC -O2 -DBENCH_HEADER='"P.h"' -DPREFIX=P [-DHAND] -IGEN \
 *      bench/rhs_bench.c GEN/P.c [bench/hand/P.c] -lm
 * The kernels live in other translation units, so neither is inlined into
 * the loops. Two loops per kernel: independent calls over a batch of
 * random states (throughput) and a dependent chain x <- x + h f(x)
 * (latency: each call waits for the previous result). Each figure is the
 * median of 11 repeats of a loop calibrated to take at least 5 ms
 * (the thread's CPU time where that clock is fine-grained, see now());
 * with HAND, the repeats of the two kernels alternate, and the ratios
 * emitted / hand are medians of the ratios of repeats run back to back.
 * With HAND, the kernels are first compared at random states (random
 * parameters around the defaults); the largest difference relative to
 * max(1, |value|) is printed as maxdiff. With FLOOR, the libm calls of
 * bench/hand/trig_floor.c alone are timed too (floor_indep_ns): what no
 * emitted kernel can go below. Output: key=value lines. */
#define _POSIX_C_SOURCE 199309L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include BENCH_HEADER

#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)
#define SYM(s) CAT(PREFIX, s)
#define NX SYM(_NX)
#define NP SYM(_NP)

typedef int (*rhs_fn)(double t, const double *x, const double *p, double *dxdt);

#ifdef HAND
int hand_rhs(double t, const double *x, const double *p, double *dxdt);
#endif
#ifdef FLOOR
int floor_rhs(double t, const double *x, const double *p, double *dxdt);
#endif

enum { BATCH = 256, REPEATS = 11 };

static double states[BATCH][NX], params[NP > 0 ? NP : 1];
static volatile double sink;

/* Deterministic uniform numbers in [lo, hi) (xorshift64). */
static unsigned long long rng_state = 0x9E3779B97F4A7C15ull;
static double uniform(double lo, double hi)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return lo + (hi - lo) * (double)(rng_state >> 11) / 9007199254740992.0;
}

/* The thread's CPU clock where it is fine-grained: on the shared machine
 * the time the process is preempted would otherwise be counted as time of
 * the kernel. (The process CPU clock advances only in 4 ms ticks in this
 * sandbox once an RLIMIT_CPU is set, as bench/compare.py does; the
 * thread's does not.) Else the monotonic clock. */
static clockid_t clock_id = CLOCK_THREAD_CPUTIME_ID;

static void choose_clock(void)
{
    struct timespec a, b;
    int i;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &a);
    for (i = 0; i < 100000000; i++) {
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &b);
        if (b.tv_sec != a.tv_sec || b.tv_nsec != a.tv_nsec) break;
    }
    if ((double)(b.tv_sec - a.tv_sec) + 1e-9 * (double)(b.tv_nsec - a.tv_nsec) > 1e-5)
        clock_id = CLOCK_MONOTONIC;
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(clock_id, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static double loop_indep(rhs_fn f, long n)
{
    double out[NX], acc = 0, t0 = now();
    long i;
    for (i = 0; i < n; i++) {
        f(0.0, states[i & (BATCH - 1)], params, out);
        acc += out[NX - 1];
    }
    t0 = now() - t0;
    sink = acc;
    return t0;
}

static double loop_chain(rhs_fn f, long n)
{
    double x[NX], dx[NX], t0;
    long i;
    int j;
    memcpy(x, states[0], sizeof x);
    t0 = now();
    for (i = 0; i < n; i++) {
        f(0.0, x, params, dx);
        for (j = 0; j < NX; j++) x[j] += 1e-4 * dx[j];
        if ((i & 1023) == 1023) memcpy(x, states[0], sizeof x);
    }
    t0 = now() - t0;
    sink = x[0];
    return t0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Calls of loop(f, n) that take at least 5 ms. */
static long calibrate(double (*loop)(rhs_fn, long), rhs_fn f)
{
    long n = 1; /* kernels of large models take milliseconds a call */
    while (loop(f, n) < 5e-3 && n < (1L << 30)) n *= 2;
    return n;
}

static double median(double *r)
{
    qsort(r, REPEATS, sizeof r[0], cmp_double);
    return r[REPEATS / 2];
}

#if !defined(HAND) || defined(FLOOR)
/* Median ns per call of loop(f, n), n calibrated to >= 5 ms a repeat. */
static double measure(double (*loop)(rhs_fn, long), rhs_fn f)
{
    long n = calibrate(loop, f);
    double r[REPEATS];
    int i;
    for (i = 0; i < REPEATS; i++) r[i] = loop(f, n) / (double)n * 1e9;
    return median(r);
}
#endif

#ifdef HAND
/* The same for two kernels, their repeats alternating, and the median of
 * the ratios f/g of the repeats taken back to back: the shared host's
 * speed changes within seconds (the ratio of the two kernels measured one
 * after the other moved by 15% from run to run). */
static void measure_pair(double (*loop)(rhs_fn, long), rhs_fn f, rhs_fn g,
                         double *nf, double *ng, double *ratio)
{
    long n = calibrate(loop, f), m = calibrate(loop, g);
    double r[REPEATS], s[REPEATS], q[REPEATS];
    int i;
    for (i = 0; i < REPEATS; i++) {
        r[i] = loop(f, n) / (double)n * 1e9;
        s[i] = loop(g, m) / (double)m * 1e9;
        q[i] = r[i] / s[i];
    }
    *nf = median(r);
    *ng = median(s);
    *ratio = median(q);
}
#endif

#ifdef HAND
/* Largest relative difference of the two kernels at random states and
 * parameters; -1 when either fails where the other does not. */
static double compare(void)
{
    double a[NX], b[NX], p[NP > 0 ? NP : 1], worst = 0;
    int i, j;
    for (i = 0; i < 10000; i++) {
        for (j = 0; j < NP; j++) p[j] = params[j] * (i < 5000 ? 1.0 : uniform(0.5, 1.5));
        const double *x = states[i % BATCH];
        double xr[NX];
        if (i >= BATCH) {
            for (j = 0; j < NX; j++) xr[j] = uniform(-1, 1);
            x = xr;
        }
        int ra = SYM(_rhs)(0.0, x, p, a), rb = hand_rhs(0.0, x, p, b);
        if (ra != rb) return -1;
        for (j = 0; !ra && j < NX; j++) {
            double s = fabs(b[j]) > 1 ? fabs(b[j]) : 1, d = fabs(a[j] - b[j]) / s;
            if (d > worst) worst = d;
        }
    }
    return worst;
}
#endif

int main(void)
{
    int i, j;
    for (j = 0; j < NP; j++) params[j] = SYM(_param_defaults)[j];
    for (i = 0; i < BATCH; i++)
        for (j = 0; j < NX; j++) states[i][j] = uniform(-1, 1);
#if defined(__TINYC__)
    printf("compiler=tcc\n");
#elif defined(__clang__)
    printf("compiler=clang\n");
#elif defined(__GNUC__)
    printf("compiler=gcc\n");
#else
    printf("compiler=cc\n");
#endif
    choose_clock();
    printf("clock=%s\n", clock_id == CLOCK_MONOTONIC ? "monotonic" : "thread-cpu");
    printf("nx=%d\n", NX);
#ifdef HAND
    printf("maxdiff=%.3g\n", compare());
#endif
#ifdef HAND
    {
        double e, h, q, ec, hc, qc;
        measure_pair(loop_indep, SYM(_rhs), hand_rhs, &e, &h, &q);
        measure_pair(loop_chain, SYM(_rhs), hand_rhs, &ec, &hc, &qc);
        printf("emitted_indep_ns=%.1f\n", e);
        printf("emitted_chain_ns=%.1f\n", ec);
        printf("hand_indep_ns=%.1f\n", h);
        printf("hand_chain_ns=%.1f\n", hc);
        printf("hand_ratio_indep=%.3f\n", q);
        printf("hand_ratio_chain=%.3f\n", qc);
    }
#else
    printf("emitted_indep_ns=%.1f\n", measure(loop_indep, SYM(_rhs)));
    printf("emitted_chain_ns=%.1f\n", measure(loop_chain, SYM(_rhs)));
#endif
#ifdef FLOOR
    printf("floor_indep_ns=%.1f\n", measure(loop_indep, floor_rhs));
#endif
    return 0;
}
