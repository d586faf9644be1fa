/* mem.h — large zeroed blocks, on transparent huge pages where offered.
 *
 * A large derivation fills arenas and probes tables of hundreds of
 * megabytes at random. With 4 kB pages nearly every probe also misses the
 * TLB, and each page costs a fault: on the virtual machines we measure on,
 * more than the work done in it. So a block of CH_MEM_HUGE bytes or more
 * is a 2 MB aligned mapping advised as huge pages (Linux; the system may
 * ignore the advice), and a smaller one, or any block elsewhere, comes
 * from calloc. The size alone decides how a block was made: free and
 * resize it with the size it was allocated with. */
#ifndef CH_MEM_H
#define CH_MEM_H

#include <stddef.h>

#define CH_MEM_HUGE ((size_t)1 << 21)

/* size zeroed bytes (a mapping rounded up to whole 2 MB pages); NULL when
 * out of memory. */
void *ch_mem_alloc(size_t size);
/* The same with undefined contents (a small block is not cleared): for
 * arenas, whose users write what they take. */
void *ch_mem_alloc_raw(size_t size);
/* Frees a block of ch_mem_alloc or ch_mem_alloc_raw (NULL is fine). */
void ch_mem_free(void *p, size_t size);
/* A block of size bytes that starts with the first min(old, size) bytes of
 * p, the rest zeroed; p is freed. NULL when out of memory (p is kept). */
void *ch_mem_resize(void *p, size_t old, size_t size);

#endif
