/* mem.c — large zeroed blocks on transparent huge pages (see mem.h). */
#define _DEFAULT_SOURCE /* mmap flags and madvise under -std=c11 */
#include "core/mem.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#if defined(__linux__)
#include <sys/mman.h>
#endif

#if defined(__linux__) && defined(MADV_HUGEPAGE)
#define MAPPED(size) ((size) >= CH_MEM_HUGE)
#else
#define MAPPED(size) 0
#endif

#if defined(__linux__)
static size_t huge_round(size_t size)
{
    return (size + CH_MEM_HUGE - 1) & ~(CH_MEM_HUGE - 1);
}
#endif

/* A fresh mapping is zero: only small blocks differ between the two. */
static void *alloc(size_t size, int zero)
{
    if (!MAPPED(size)) return zero ? calloc(1, size ? size : 1) : malloc(size ? size : 1);
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    /* map 2 MB more and trim both ends to the aligned length */
    size_t len = huge_round(size), all = len + CH_MEM_HUGE;
    if (len < size) return NULL; /* overflow */
    char *p = mmap(NULL, all, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return NULL;
    char *a = (char *)(((uintptr_t)p + CH_MEM_HUGE - 1) & ~(uintptr_t)(CH_MEM_HUGE - 1));
    if (a > p) munmap(p, (size_t)(a - p));
    if (a + len < p + all) munmap(a + len, (size_t)(p + all - (a + len)));
    madvise(a, len, MADV_HUGEPAGE); /* advice only: fine if refused */
    return a;
#else
    return NULL;
#endif
}

void *ch_mem_alloc(size_t size) { return alloc(size, 1); }

void *ch_mem_alloc_raw(size_t size) { return alloc(size, 0); }

void ch_mem_free(void *p, size_t size)
{
    if (!p) return;
#if defined(__linux__)
    if (MAPPED(size)) {
        munmap(p, huge_round(size));
        return;
    }
#endif
    free(p);
}

void *ch_mem_resize(void *p, size_t old, size_t size)
{
    size_t keep = p ? (old < size ? old : size) : 0;
    char *q;
    if (p && !MAPPED(old) && !MAPPED(size)) { /* both from malloc */
        if (!(q = realloc(p, size ? size : 1))) return NULL;
    } else {
        if (!(q = alloc(size, 0))) return NULL;
        if (keep) memcpy(q, p, keep);
        ch_mem_free(p, old);
    }
    if (size > keep && !MAPPED(size)) memset(q + keep, 0, size - keep); /* (a mapping is zero) */
    return q;
}
