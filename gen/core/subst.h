/* subst.h — substitution of nodes by expressions.
 *
 * Replaces every occurrence of the nodes from[i] (usually symbols; any node
 * matches by identity) by to[i] and rebuilds with the canonical
 * constructors. Memoized in the context, one cache per distinct list of
 * pairs, so repeating a substitution on overlapping expressions rebuilds
 * each shared node once. Returns NULL on failure. */
#ifndef CH_SUBST_H
#define CH_SUBST_H

#include "core/expr.h"

const ch_expr *ch_subst(ch_ctx *ctx, const ch_expr *e, size_t n,
                        const ch_expr *const *from, const ch_expr *const *to);

/* The same substitution applied to many expressions: out[i] = subst(in[i]).
 * Returns 0, or -1 on failure. */
int ch_subst_many(ch_ctx *ctx, size_t count, const ch_expr *const *in,
                  const ch_expr **out, size_t n, const ch_expr *const *from,
                  const ch_expr *const *to);

/* A substitution whose results are kept for the lifetime of the context,
 * so that applying it to many overlapping expressions (every quantity
 * restricted to the constraint manifold) rebuilds each shared node once.
 * The from/to pairs are fixed at init. */
typedef struct {
    ch_map *cache; /* owned by the context: node id -> result */
    const ch_symset *set; /* the symbols of the replaced nodes */
} ch_subst_memo;

/* 0, or -1 on failure (context error set). */
int ch_subst_memo_init(ch_ctx *ctx, ch_subst_memo *m, size_t n,
                       const ch_expr *const *from, const ch_expr *const *to);
/* subst(e) with the memo's pairs; NULL on failure. */
const ch_expr *ch_subst_memo_apply(ch_ctx *ctx, ch_subst_memo *m,
                                   const ch_expr *e);

/* Takes over the results of `base` for every node free of the n symbols
 * syms, when m's pairs are base's pairs plus pairs whose from nodes are
 * among syms (non-symbols in syms are ignored, so they must not be from
 * nodes): on such nodes both substitutions agree, and m would rebuild them
 * into the very nodes base built. Call it right after ch_subst_memo_init
 * of m. 0, or -1 on failure (context error set). */
int ch_subst_memo_inherit(ch_ctx *ctx, ch_subst_memo *m,
                          const ch_subst_memo *base, size_t n,
                          const ch_expr *const *syms);

/* "Does e contain one of these symbols (or a symbol of this kind)?" for
 * many expressions: the symbols looked for as a set, met with each
 * expression's own (no walk). */
typedef struct {
    const ch_symset *set; /* the symbols looked for */
    int kind;     /* by kind: the ch_sym_kind looked for, else -1 */
    size_t nsyms; /* by kind: the context's symbols when set was made */
} ch_sym_finder;

/* 0, or -1 on failure (context error set). */
int ch_sym_finder_init(ch_ctx *ctx, ch_sym_finder *f, size_t n,
                       const ch_expr *const *syms);
int ch_sym_finder_init_kind(ch_ctx *ctx, ch_sym_finder *f, ch_sym_kind kind);
/* 1 when e contains a wanted symbol, 0 when not (also for e NULL), -1 on
 * failure (context error set). */
int ch_sym_finder_has(ch_ctx *ctx, ch_sym_finder *f, const ch_expr *e);

#endif
