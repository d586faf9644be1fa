/* quadref.c — the CPU time of a fixed amount of work per node on this
 * host, made with chetaev's own interning and memo maps: the reference
 * for reading the growth table (bench/README.md). Every step takes two
 * nodes made before at random, makes sin(a + b) (a sum and a function,
 * each interned), asks for it again as sin(b + a) (two lookups that find
 * the nodes) and records it in a memo map by the pair's ids, as a
 * derivation looks up and records its results. The instructions per
 * node are the same at every size (two symbols' words, two-term sums):
 * the work is exactly proportional to the nodes made, and the ratio of
 * CPU times between two sizes is what the memory hierarchy adds to that
 * proportion when the tables and the arena grow by the same factor.
 *
 * Usage: quadref [KNODES...]   (default 850 3300 13000, about the nodes
 * of the 100-, 200- and 400-trailer's derivation)
 * Prints one line per size: "s_K=T", T the CPU seconds of making K
 * thousand nodes in a fresh context. */
#define _POSIX_C_SOURCE 199309L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "core/expr.h"

static double cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* xorshift64: the same sequence on every run */
static uint64_t next_random(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

#define SYMS 16

/* CPU seconds for `nodes` nodes; -1 on failure (message printed). */
static double make_nodes(size_t nodes)
{
    double t0 = cpu_s();
    ch_ctx *ctx = ch_ctx_new();
    const ch_expr **made = malloc((nodes / 2 + SYMS) * sizeof *made);
    ch_map *memo = ctx ? ch_ctx_new_map(ctx) : NULL;
    size_t have = 0;
    uint64_t s = 0x9E3779B97F4A7C15ULL;
    int bad = !ctx || !made || !memo;
    if (!bad) ch_ctx_set_node_limit(ctx, 0);
    for (size_t i = 0; !bad && i < SYMS; i++) {
        char name[8];
        snprintf(name, sizeof name, "x%zu", i);
        bad = !(made[have++] = ch_symbol(ctx, name, CH_SYM_COORD, NULL, 0, (int)i));
    }
    while (!bad && ch_ctx_nnodes(ctx) < nodes) {
        const ch_expr *a = made[next_random(&s) % have], *b = made[next_random(&s) % have];
        const ch_expr *e = ch_fun1(ctx, CH_F_SIN, ch_add(ctx, a, b));
        const ch_expr *f = ch_fun1(ctx, CH_F_SIN, ch_add(ctx, b, a));
        bad = !e || e != f || ch_map_put(memo, (uint64_t)a->id << 32 | b->id, (void *)e);
        if (!bad && have < nodes / 2 + SYMS) made[have++] = e;
    }
    if (bad) fprintf(stderr, "quadref: failed at %zu nodes\n", ctx ? ch_ctx_nnodes(ctx) : 0);
    ch_ctx_free(ctx);
    free(made);
    return bad ? -1 : cpu_s() - t0;
}

int main(int argc, char **argv)
{
    static const char *const defaults[] = {"850", "3300", "13000"};
    const char *const *sizes = argc > 1 ? (const char *const *)argv + 1 : defaults;
    int n = argc > 1 ? argc - 1 : 3;
    for (int i = 0; i < n; i++) {
        char *end;
        long k = strtol(sizes[i], &end, 10);
        if (*end || k < 1 || k > 1000000) {
            fprintf(stderr, "quadref: not a count of thousands of nodes: %s\n", sizes[i]);
            return 2;
        }
        double t = make_nodes((size_t)k * 1000);
        if (t < 0) return 1;
        printf("s_%ld=%.3f\n", k, t);
    }
    return 0;
}
