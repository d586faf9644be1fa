/* expr_impl.h — the context's layout and the interning the files of the
 * expression core share: expr.c (arena, interning, sums, products),
 * atoms.c (numbers, symbols, functions) and inspect.c (splits, sizes).
 * Private to core/expr*.c, core/atoms.c and core/inspect.c. */
#ifndef CH_EXPR_IMPL_H
#define CH_EXPR_IMPL_H

#include <stddef.h>
#include <stdint.h>

#include "core/expr.h"

typedef struct chunk {
    struct chunk *next;
    size_t size, used;
    max_align_t data[];
} chunk;

/* Integer coefficients and exponents up to this in magnitude skip the
 * table of coef_intern. */
#define COEF_SMALL 8

struct ch_ctx {
    chunk *chunks;
    size_t arena; /* bytes in chunks */
    void *spare; /* blocks given back (ch_ctx_block_give), a list through their first word */
    uint32_t *ids; /* the zeroed id array of ch_ctx_ids_take when not lent, */
    size_t nids;   /* and its entries */
    uint32_t *tree; /* tree sizes by node id (see ch_tree_size), 0: not known */
    size_t ntree;   /* its entries */
    ch_expr **nodes; /* nodes[id - 1] */
    size_t nnodes, cap_nodes, node_limit;
    uint64_t *table; /* intern table, open addressing: tagged node pointers (see slot_of) */
    size_t tcap;
    ch_map_slot *coeftab; /* interned rationals of nodes and pairs: hash -> fmpq in the arena */
    size_t coefcap, ncoefs;
    const fmpq *qzero; /* the num of nodes that have none */
    const fmpq *qsmall[2 * COEF_SMALL + 1]; /* coef_intern's of -COEF_SMALL..COEF_SMALL */
    ch_sym **syms;
    size_t nsyms, cap_syms;
    ch_map sym_by_hash; /* FNV hash of name -> first ch_sym with it */
    ch_error err;
    ch_map memo[CH_MEMO_COUNT];
    ch_map **maps; /* maps handed out by ch_ctx_new_map */
    ch_map scaled; /* (sum id, hash of c) -> c * sum, for long sums (scale_add) */
    size_t nmaps, cap_maps;
    const ch_expr *zero, *one;
    ch_map_slot *settab; /* interned symbol sets: hash -> ch_symset */
    size_t setcap, nsets;
    ch_symword *words; /* a set being built */
    uint64_t *dense, *touched; /* a union being built and its words (see dense_or) */
    size_t nwords; /* their lengths: at least the words handed out */
    /* set words by kind (see ch_symset): each kind's current word and the
     * bits of it taken (0: a new word for the next symbol) */
    uint32_t kind_word[CH_SYM_OTHER + 1];
    uint8_t kind_fill[CH_SYM_OTHER + 1];
    size_t bitwords; /* words handed out */
    const ch_symset *empty;
};

/* A candidate node without coefficients (a number, symbol, function or
 * power) lives in caller memory, its num pointing at any rational
 * (ctx->qzero when it has none); intern returns the existing equal node
 * or a copy of the candidate in the arena with its num interned
 * (coef_intern). */
typedef union {
    ch_expr e;
    unsigned char room[sizeof(ch_expr) + 2 * sizeof(ch_pair)]; /* and its pairs */
} candidate;

static inline ch_expr *candidate_init(candidate *c, ch_kind kind, const fmpq *num)
{
    memset(c, 0, sizeof *c);
    c->e.kind = (uint8_t)kind;
    c->e.num = num;
    return &c->e;
}

static inline int nchildren(const ch_expr *e)
{
    return e->kind == CH_NUM || e->kind == CH_SYM ? 0 : (int)e->n;
}

static inline const ch_expr *child(const ch_expr *e, int i) { return e->pair[i].e; }

/* The node equal to cand from the table, or cand copied into the arena
 * (its num interned); NULL with the context failed (node limit, memory). */
const ch_expr *ch_expr_intern(ch_ctx *ctx, ch_expr *cand);
/* Grows the context's symbol-set words to n (0, or -1 out of memory). */
int ch_expr_words_grow(ch_ctx *ctx, size_t n);
/* Makes *a (of *len entries, ch_mem blocks) cover every node id (0, -1). */
int ch_expr_id_array_fit(const ch_ctx *ctx, uint32_t **a, size_t *len);
/* A product without its coefficient. */
const ch_expr *ch_expr_mul_rest(ch_ctx *ctx, const ch_expr *mul);

#endif
