/* jit_time.c — time of the library's in-process compilation (gen/jit/jit.h)
 * of one emitted source file: median of repeats, in ms.
 * Usage: jit_time FILE.c [tcc|cc] [REPEATS]   (prints one number) */
#define _POSIX_C_SOURCE 199309L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "jit/jit.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fputs("usage: jit_time FILE.c [tcc|cc] [REPEATS]\n", stderr);
        return 2;
    }
    ch_compiler which = argc > 2 && !strcmp(argv[2], "cc") ? CH_COMPILER_CC
                                                           : CH_COMPILER_TCC;
    int reps = argc > 3 ? atoi(argv[3]) : 21;
    if (reps < 1 || reps > 1000) reps = 21;
    FILE *f = fopen(argv[1], "rb");
    if (!f) {
        perror(argv[1]);
        return 1;
    }
    static char src[1 << 24];
    size_t n = fread(src, 1, sizeof src - 1, f);
    fclose(f);
    src[n] = 0;
    double *ms = malloc((size_t)reps * sizeof *ms);
    if (!ms) return 1;
    for (int i = 0; i < reps; i++) {
        ch_error err;
        ch_error_clear(&err);
        ch_jit *j = NULL;
        double t0 = now();
        if (ch_jit_compile(src, which, &j, &err)) {
            fprintf(stderr, "jit_time: %s\n", err.msg);
            return 1;
        }
        ms[i] = (now() - t0) * 1e3;
        ch_jit_free(j);
    }
    qsort(ms, (size_t)reps, sizeof *ms, cmp_double);
    printf("%.2f\n", ms[reps / 2]);
    free(ms);
    return 0;
}
