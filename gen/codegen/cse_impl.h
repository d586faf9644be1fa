/* cse_impl.h — the CSE's values and builder state, shared by cse.c (values,
 * lowering, printing, entry points) and cse_pass.c (the algebraic passes).
 * Private to codegen/cse*.c; see cse.c for the design. */
#ifndef CH_CSE_IMPL_H
#define CH_CSE_IMPL_H

#include <stdint.h>

#include "codegen/cse.h"

enum { K_LEAF, K_CALL, K_MUL, K_ADD };
#define NONE CH_CSE_NONE

/* One value. MUL: k * prod(op[0..n)) / prod(op[n..n+nd)); ADD: k +
 * sum(c[i] * op[i]); CALL: fn(op[0]) or fn(op[0], op[1]). */
typedef struct {
    uint8_t kind;
    uint32_t n, nd;
    const char *fn;
    char *text;
    const ch_sym *sym; /* LEAF: the symbol it names, NULL for a number */
    fmpq_t k;
    fmpq *c;
    uint32_t *op;
    uint64_t hash;
} node;

/* (8 bytes: the table is probed at random, once per value made, and is
 * several megabytes; half the size is fewer cache misses) */
typedef struct {
    uint32_t h; /* the hash's high half, compared before the value is looked at */
    uint32_t v;
} slot;

typedef struct {
    ch_ctx *ctx;
    ch_c_namer namer;
    void *data;
    const char *tmp, *indent;
    ch_cse_prog *prog;
    node **nd;       /* the values */
    uint32_t nn, capn;
    slot *tab;       /* hash-consing: value + 1 (0 empty) and its hash */
    size_t tabcap, tablen;
    double created;  /* operations of the values created since reset */
    uint32_t zero;   /* the number 0 (factoring finds cancelling terms) */
    char *chunk;     /* the current chunk of values (a list through its head) */
    size_t chunk_size, used, chunks_bytes;
    /* the DAG nodes reachable from the outputs, numbered children first
     * (the traversal order of the original recursive visit) */
    uint32_t *lid;   /* node id -> its number + 1 (0: not reachable) */
    size_t nlid;     /* ids below nlid have an entry in lid */
    const ch_expr **post; /* number -> node */
    uint32_t npost;
    uint32_t *lval;  /* number -> value + 1 */
    uint32_t *negc;  /* number of a base -> products with base^(-integer) */
    const ch_expr **den; /* number of a product -> its denominator node D */
    ch_map node_val; /* node id -> value + 1 of the nodes not reachable */
    ch_map pow_val;  /* (value + 1) << 24 | exponent -> value + 1 */
    ch_map sqrt_val, cbrt_val, inv_val; /* value + 1 (or D id) -> value + 1 */
    ch_map den_uses; /* D id -> number of products dividing by D */
    ch_map recip_val;/* value + 1 -> value + 1 of 1/value */
    ch_map num_val;  /* hash of a number -> value + 1 of its leaf */
    int failed;
    int with_data;   /* print_prog also writes the program as data (cse.h) */
    ch_error *err;
} cse;

static inline void *pv(size_t v) { return (void *)(uintptr_t)(v + 1); }
static inline long vp(void *p) { return p ? (long)(uintptr_t)p - 1 : -1; }
static inline int is_pm1(const fmpq *q)
{
    return fmpz_is_pm1(fmpq_numref(q)) && fmpz_is_one(fmpq_denref(q));
}

static inline uint64_t mix(uint64_t h, uint64_t x)
{
    h ^= x + 0x9e3779b97f4a7c15u + (h << 6) + (h >> 2);
    return h * 0xff51afd7ed558ccdu;
}


/* The passes of ch_cse_pass, run in the order factor, flatten, chain,
 * share (cse.c's essay). */
enum { P_FLATTEN, P_FACTOR, P_CHAIN, P_SHARE };

/* Records out of memory (the first error is kept). */
void ch_cse_oom(cse *s);
/* The operations of one value's statement. */
double ch_cse_node_cost(const node *a);
/* A hash of |q|. */
uint64_t ch_cse_hash_absq(const fmpq *q);
/* The hash-consed values (cse.c): a number, fn(a) or fn(a, b) (b NONE
 * for one argument), k * prod(num) / prod(den), k + sum(c[i] * v[i]);
 * each returns its value's number (0 once s failed). */
uint32_t ch_cse_mk_num(cse *s, const fmpq_t q);
uint32_t ch_cse_mk_call(cse *s, const char *fn, uint32_t a, uint32_t b);
uint32_t ch_cse_mk_mul(cse *s, const fmpq *k, const uint32_t *num, uint32_t n,
                       const uint32_t *den, uint32_t nd);
uint32_t ch_cse_mk_add(cse *s, const fmpq *k, const uint32_t *v, const fmpq *c, uint32_t n);
/* Sorts x[0..n) increasingly. */
void ch_cse_sort_u32(uint32_t *x, uint32_t n);
/* One algebraic pass (mode P_*) over the values reachable from the n
 * outputs outs, which are replaced by their rewritten values. */
void ch_cse_pass(cse *s, uint32_t *outs, size_t n, int mode);

#endif
