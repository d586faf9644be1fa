/* memlat.c — the latency of a random memory access on this host against
 * the size of the memory accessed: the cost behind chetaev's hash tables
 * (interning, memos), each lookup of which is a load at a random place
 * of a table that grows with the model.
 *
 * Usage: memlat [MB...]   (default 8 32 128 512)
 * Prints one line per size: "ns_S=T", T the mean time of a load that
 * depends on the one before (a pointer chase through a random cycle over
 * every cache line of S megabytes, on memory allocated as chetaev
 * allocates its tables: mem.h, huge pages where the kernel grants them).
 * bench/compare.py prints it beside the growth table: when the time per
 * load rises from the working set of one model size to that of the next,
 * CPU time grows faster than the work (bench/icount.sh counts the work). */
#define _POSIX_C_SOURCE 199309L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "core/mem.h"

#define LINE 64 /* bytes: one load per cache line */
#define LOADS 4000000

static volatile size_t sink;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* xorshift64: any fixed sequence will do, the same on every run */
static uint64_t next_random(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* Nanoseconds per dependent load over mb megabytes; -1 when out of memory. */
static double latency(size_t mb)
{
    size_t bytes = mb << 20, lines = bytes / LINE, step = LINE / sizeof(size_t);
    size_t *mem = ch_mem_alloc_raw(bytes);
    size_t *order = malloc(lines * sizeof *order);
    if (!mem || !order) {
        ch_mem_free(mem, bytes);
        free(order);
        return -1;
    }
    /* a random cyclic order of the lines (Sattolo's shuffle), each line
     * holding the index of the next */
    for (size_t i = 0; i < lines; i++) order[i] = i;
    uint64_t s = 0x9E3779B97F4A7C15ULL;
    for (size_t i = lines - 1; i > 0; i--) {
        size_t j = (size_t)(next_random(&s) % i), t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
    for (size_t i = 0; i < lines; i++) mem[order[i] * step] = order[(i + 1) % lines] * step;
    free(order);
    size_t at = 0;
    double t0 = now_s();
    for (size_t i = 0; i < LOADS; i++) at = mem[at];
    double ns = (now_s() - t0) / LOADS * 1e9;
    sink = at; /* (the chase is not optimized away) */
    ch_mem_free(mem, bytes);
    return ns;
}

int main(int argc, char **argv)
{
    static const char *const defaults[] = {"8", "32", "128", "512"};
    const char *const *sizes = argc > 1 ? (const char *const *)argv + 1 : defaults;
    int n = argc > 1 ? argc - 1 : 4;
    for (int i = 0; i < n; i++) {
        char *end;
        long mb = strtol(sizes[i], &end, 10);
        if (*end || mb < 1 || mb > 65536) {
            fprintf(stderr, "memlat: not a size in MB: %s\n", sizes[i]);
            return 2;
        }
        double ns = latency((size_t)mb);
        if (ns < 0) {
            fprintf(stderr, "memlat: out of memory at %ld MB\n", mb);
            return 1;
        }
        printf("ns_%ld=%.1f\n", mb, ns);
    }
    return 0;
}
