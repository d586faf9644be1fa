/* derive_time.c — CPU time of chetaev's derivation inside one process, the
 * measure SymPy's derive_s is (bench/sympy_bench.py times the forming of
 * the equations after Python, SymPy and the model are loaded; the whole
 * `chetaev derive` process also pays about 10 ms of loading FLINT and its
 * C++ dependencies, which the library user pays once).
 *
 * Usage: derive_time MODEL [REPEATS]
 * Prints key=value lines, CPU milliseconds of one repeat:
 *   raw_ms     parse and every SPEC section 3 key, as derived (median)
 *   derive_ms  the same and the tidy for display (derive.h) (median)
 *   json_ms    the same and the JSON text written to /dev/null (median)
 *   first_ms   the first derive_ms repeat (cold caches and allocator)
 *   nodes      the nodes made by a derive_ms repeat (bench/quadref.c makes
 *              as many for the growth's reference)
 * Each repeat works in a fresh context. */
#define _POSIX_C_SOURCE 199309L
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "doc/derive.h"
#include "core/expr.h"
#include "lang/model.h"

/* The thread's CPU clock: the work is single-threaded, and the process
 * clock only advances at timer ticks once a CPU limit is set (compare.py
 * runs every process under RLIMIT_CPU). */
static double cpu_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return 1e3 * (double)ts.tv_sec + 1e-6 * (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

enum { RAW, TIDY, JSON };

/* One repeat up to stage `upto`: CPU ms, or -1 with the error printed;
 * *nodes the nodes it made. */
static double once(const char *path, int upto, FILE *json, size_t *nodes)
{
    double t0 = cpu_ms();
    ch_ctx *ctx = ch_ctx_new();
    ch_model *m = NULL;
    ch_mechanics *mech = NULL;
    ch_derivation *d = NULL;
    ch_error err;
    ch_error_clear(&err);
    int bad = !ctx || ch_model_load(ctx, path, &m, &err) ||
              ch_mechanics_derive(ctx, m, &mech, &err) || ch_derivation_of(mech, &d, &err) ||
              (upto >= TIDY && ch_derivation_prepare(d, CH_FORMAT_JSON, 0, NULL)) ||
              (upto == JSON && ch_derivation_fwrite(json, d, CH_FORMAT_JSON, 0, NULL, &err));
    if (bad) fprintf(stderr, "derive_time: %s: %s\n", path, err.code ? err.msg : "failed");
    *nodes = ctx ? ch_ctx_nnodes(ctx) : 0;
    ch_ctx_free(ctx);
    return bad ? -1.0 : cpu_ms() - t0;
}

int main(int argc, char **argv)
{
    if (argc < 2 || argc > 3) {
        fputs("usage: derive_time MODEL [REPEATS]\n", stderr);
        return 2;
    }
    int reps = argc > 2 ? atoi(argv[2]) : 11;
    if (reps < 1 || reps > 1000) reps = 11;
    FILE *null = fopen("/dev/null", "w");
    double *t = malloc(3 * (size_t)reps * sizeof *t);
    if (!null || !t) {
        fputs("derive_time: cannot open /dev/null or out of memory\n", stderr);
        return 1;
    }
    static const int order[3] = {TIDY, RAW, JSON}; /* the cold run is derive_ms's */
    size_t nodes[3];
    for (int i = 0; i < reps; i++)
        for (int j = 0; j < 3; j++)
            if ((t[order[j] * reps + i] = once(argv[1], order[j], null, &nodes[j])) < 0) return 1;
    double first = t[TIDY * reps];
    for (int s = RAW; s <= JSON; s++) qsort(t + s * reps, (size_t)reps, sizeof *t, cmp_double);
    printf("raw_ms=%.2f\nderive_ms=%.2f\njson_ms=%.2f\nfirst_ms=%.2f\nnodes=%zu\n", t[reps / 2],
           t[reps + reps / 2], t[2 * reps + reps / 2], first, nodes[0]);
    fclose(null);
    free(t);
    return 0;
}
