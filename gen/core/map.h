/* map.h — open-addressing maps from a nonzero 64-bit key to a pointer:
 * the memo tables and per-call caches of every module. */
#ifndef CH_MAP_H
#define CH_MAP_H

#include <stddef.h>
#include <stdint.h>

/* Open-addressing map from a nonzero 64-bit key to a pointer; keys are
 * usually node ids, or (id << 32 | id2) for pairs. */
typedef struct {
    uint64_t key; /* 0: empty */
    void *val;
} ch_map_slot;

/* (A key and its value share a cache line: a lookup is one miss.) */
typedef struct {
    ch_map_slot *slot;
    size_t cap, len;
} ch_map;

void ch_map_init(ch_map *m);
void ch_map_free(ch_map *m);
void *ch_map_get(const ch_map *m, uint64_t key);
/* Starts loading the slot where key's lookup begins, so that a traversal
 * about to look up several children overlaps their misses (a no-op where
 * the compiler has no prefetch). */
void ch_map_prefetch(const ch_map *m, uint64_t key);
int ch_map_put(ch_map *m, uint64_t key, void *val); /* 0, or -1 on OOM */

/* A 64-bit mixing function (the finaliser of MurmurHash3): the slot of a
 * key, and the hashes of the context's tables. */
static inline uint64_t ch_mix64(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ULL;
    x ^= x >> 33;
    return x;
}

#endif
