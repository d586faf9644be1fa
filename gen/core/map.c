/* map.c — open-addressing maps from 64-bit keys to pointers (map.h). */
#include "core/map.h"
#include "core/mem.h"

#include <string.h>

void ch_map_init(ch_map *m) { memset(m, 0, sizeof *m); }

void ch_map_free(ch_map *m)
{
    ch_mem_free(m->slot, m->cap * sizeof *m->slot);
    ch_map_init(m);
}

void ch_map_prefetch(const ch_map *m, uint64_t key)
{
#if defined(__GNUC__)
    if (m->cap) __builtin_prefetch(&m->slot[ch_mix64(key) & (m->cap - 1)]);
#else
    (void)m, (void)key;
#endif
}

void *ch_map_get(const ch_map *m, uint64_t key)
{
    if (!m->cap) return NULL;
    size_t mask = m->cap - 1;
    for (size_t i = ch_mix64(key) & mask;; i = (i + 1) & mask) {
        if (m->slot[i].key == key) return m->slot[i].val;
        if (m->slot[i].key == 0) return NULL;
    }
}

static int map_grow(ch_map *m)
{
    size_t cap = m->cap ? 2 * m->cap : 64;
    ch_map_slot *slot = ch_mem_alloc(cap * sizeof *slot);
    if (!slot) return -1;
    for (size_t j = 0; j < m->cap; j++) {
        if (!m->slot[j].key) continue;
        size_t i = ch_mix64(m->slot[j].key) & (cap - 1);
        while (slot[i].key) i = (i + 1) & (cap - 1);
        slot[i] = m->slot[j];
    }
    ch_mem_free(m->slot, m->cap * sizeof *m->slot);
    m->slot = slot;
    m->cap = cap;
    return 0;
}

int ch_map_put(ch_map *m, uint64_t key, void *val)
{
    if (2 * (m->len + 1) > m->cap && map_grow(m)) return -1;
    size_t mask = m->cap - 1;
    size_t i = ch_mix64(key) & mask;
    while (m->slot[i].key && m->slot[i].key != key) i = (i + 1) & mask;
    if (!m->slot[i].key) m->len++;
    m->slot[i].key = key;
    m->slot[i].val = val;
    return 0;
}
