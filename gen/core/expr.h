/* expr.h — the expression DAG: nodes, interning, canonical constructors.
 *
 * Every expression is an immutable node owned by a ch_ctx. Nodes are
 * hash-consed: two structurally equal expressions are the same pointer, so
 * equality is `a == b`. Nothing is freed piecemeal; ch_ctx_free releases
 * every node, every FLINT coefficient and every memo table at once. There is
 * no global state: independent contexts may live side by side (and in
 * different threads).
 *
 * Canonical forms (built by the constructors, never by callers):
 *   NUM  exact rational (fmpq).
 *   SYM  a symbol (ch_sym): time, coordinate, velocity, parameter, ...
 *   ADD  num + sum(pair[i].c * pair[i].e), n >= 1, coefficients nonzero,
 *        terms distinct, sorted by id; a term is never NUM, ADD, or a MUL
 *        with coefficient != 1.  "2*x + 3" is ADD{3; (2,x)}.
 *   MUL  num * prod(pair[i].e ^ pair[i].c), coefficient nonzero, exponents
 *        rational and nonzero, bases distinct, sorted by id; a base is never
 *        a MUL raised to an integer power (such products are flattened);
 *        a NUM base only with a non-integer exponent (2^(1/2)).
 *        x^3 is MUL{1; (x,3)}; sqrt(x) is MUL{1; (x,1/2)}; 2*x is MUL{2;(x,1)}.
 *   POW  arg[0] ^ arg[1] with a non-numeric exponent (x^y).
 *   FUN  one of ch_fun applied to arg[0] (and arg[1] for atan2).
 * Degenerate forms collapse: an ADD with one term of coefficient 1 and
 * constant 0 is that term; a MUL with coefficient 1 and one factor of
 * exponent 1 is that factor; x^0 is 1, x*0 is 0.
 *
 * The canonical operand order is the node id (creation order). It does not
 * depend on addresses or hashing, so the same sequence of constructions
 * gives the same DAG and byte-identical output. Printers sort for display
 * on their own.
 *
 * Errors: every constructor returns NULL on failure (division by zero,
 * node budget exceeded, out of memory) and records the reason in the
 * context (ch_ctx_error). Constructors accept NULL operands and return
 * NULL, so a caller can build a whole expression and check once. */
#ifndef CH_EXPR_H
#define CH_EXPR_H

#include <stddef.h>
#include <stdint.h>
#include "core/flint_compat.h"
#include "core/error.h"
#include "core/map.h"

typedef struct ch_ctx ch_ctx;
typedef struct ch_expr ch_expr;
typedef struct ch_sym ch_sym;

typedef enum { CH_NUM, CH_SYM, CH_ADD, CH_MUL, CH_POW, CH_FUN } ch_kind;

typedef enum {
    CH_F_SIN, CH_F_COS, CH_F_TAN, CH_F_ASIN, CH_F_ACOS, CH_F_ATAN,
    CH_F_ATAN2, CH_F_SINH, CH_F_COSH, CH_F_TANH, CH_F_EXP, CH_F_LOG,
    CH_F_ABS, CH_F_COUNT
} ch_fun;

/* The name a function has in the model language, SymPy and C (atan2(y, x)). */
const char *ch_fun_name(ch_fun f);
/* Looks up a model-language function name ("sqrt" is not a ch_fun: it is a
 * power); returns -1 when unknown. */
int ch_fun_lookup(const char *name);

typedef enum {
    CH_SYM_TIME,   /* t */
    CH_SYM_COORD,  /* q */
    CH_SYM_VEL,    /* q_t */
    CH_SYM_ACC,    /* q_tt */
    CH_SYM_PARAM,  /* runtime parameter */
    CH_SYM_PI,     /* the constant pi */
    CH_SYM_OTHER   /* multipliers, momenta, temporaries */
} ch_sym_kind;

struct ch_sym {
    const char *name;  /* SPEC §3 name: "x", "x_t", "x_tt", "lambda_1" */
    const char *base;  /* display base: "x" for x, x_t and x_tt */
    int order;         /* 0, 1 (velocity) or 2 (acceleration) */
    ch_sym_kind kind;
    int index;         /* caller's index (coordinate number, ...), else -1 */
    uint32_t sid;      /* dense symbol number 0..ch_ctx_nsyms-1 */
    uint32_t bit;      /* its place in symbol sets (see ch_symset) */
    const ch_expr *node;
    /* Total time derivative: q -> q_t -> q_tt; t -> 1. NULL means 0
     * (parameters, pi, symbols without a declared derivative). */
    const ch_expr *dot;
};

/* A symbol's name in some output language: namer(data, s) returns the text
 * written for s, or NULL (the printer's own name, or, in C, "may not
 * appear"). Printers of doc/ and codegen/ take one. */
typedef const char *(*ch_c_namer)(void *data, const ch_sym *s);

/* A term of a sum or a factor of a product. Its rational is the
 * context's one copy of that value (coefficients are interned as nodes
 * are): a pair is 16 bytes, not the 24 of an fmpq_t inline, and the
 * 200-trailer's `emit --form all` keeps 14 M of them. */
typedef struct {
    union {
        const ch_expr *e;  /* ADD term, MUL factor, FUN argument, POW base or exponent */
        const ch_sym *sym; /* SYM: the symbol */
    };
    const fmpq *c;  /* ADD: coefficient of e; MUL: exponent of e; else NULL */
} ch_pair;

/* A set of symbols, exact at any model size: its nonzero 64-bit words,
 * word `at` holding the symbols with bit / 64 == at (bit % 64 of the
 * word, bit the symbol's ch_sym.bit), in increasing order of at (sparse,
 * so that a parameter and a coordinate made far apart cost two words).
 * Each word holds symbols of one kind, in the order they were made: a
 * chain's coordinates fill words of their own, its velocities others, so
 * a set of coordinates and velocities takes two thirds of the words it
 * took when each coordinate's q, q' and q'' were neighbours, a set of
 * one kind a third. A node's set is interned in its
 * context, so equal sets are one pointer and the many nodes with the same
 * symbols share it. Derivatives, substitutions and symbol searches skip
 * subtrees whose set misses the symbols they act on. */
typedef struct {
    uint64_t at, bits;
} ch_symword;

typedef struct {
    size_t n;
    ch_symword w[];
} ch_symset;

/* The index of the lowest set bit of x != 0 (a de Bruijn sequence). */
static inline unsigned ch_lowest_bit(uint64_t x)
{
    static const unsigned char pos[64] = {
        0,  1,  48, 2,  57, 49, 28, 3,  61, 58, 50, 42, 38, 29, 17, 4,
        62, 55, 59, 36, 53, 51, 43, 22, 45, 39, 33, 30, 24, 18, 12, 5,
        63, 47, 56, 27, 60, 41, 37, 16, 54, 35, 52, 21, 44, 32, 23, 11,
        46, 26, 40, 15, 34, 20, 31, 10, 25, 14, 19, 9,  13, 8,  7,  6};
    return pos[((x & (~x + 1)) * 0x03f79d71b4cb0a89ULL) >> 58];
}

/* The first of a's words from `from` on whose number is at least at
 * (a->n when none), by bisection: the sets of a large model's nodes have
 * dozens of words, and the sets they are tested against often one. */
static inline size_t ch_symset_seek(const ch_symset *a, size_t from, uint64_t at)
{
    size_t hi = a->n;
    while (from < hi) {
        size_t mid = from + (hi - from) / 2;
        if (a->w[mid].at < at) from = mid + 1;
        else hi = mid;
    }
    return from;
}

static inline int ch_symset_meets(const ch_symset *a, const ch_symset *b)
{
    if (a->n > b->n) {
        const ch_symset *t = a;
        a = b;
        b = t;
    }
    if (a->n == 1) { /* (one symbol, mostly) sought in the larger set */
        size_t j = ch_symset_seek(b, 0, a->w[0].at);
        return j < b->n && b->w[j].at == a->w[0].at && (b->w[j].bits & a->w[0].bits);
    }
    size_t i = 0, j = 0; /* else merged: bisecting for each word costs more */
    while (i < a->n && j < b->n) {
        if (a->w[i].at < b->w[j].at) i++;
        else if (a->w[i].at > b->w[j].at) j++;
        else if (a->w[i].bits & b->w[j].bits) return 1;
        else i++, j++;
    }
    return 0;
}

static inline int ch_symset_has(const ch_symset *a, uint32_t bit)
{
    size_t i = ch_symset_seek(a, 0, bit / 64);
    return i < a->n && a->w[i].at == bit / 64 && (a->w[i].bits >> (bit % 64) & 1);
}

struct ch_expr {
    uint32_t id;       /* creation number, >= 1: the canonical order */
    uint8_t kind;      /* ch_kind */
    uint8_t fun;       /* CH_FUN: the ch_fun */
    uint16_t depth;    /* height of the DAG below (saturates at 65535) */
    uint32_t n;        /* ADD/MUL: pairs; FUN: arguments; POW: 2 */
    uint32_t hash;     /* low half of the intern hash (its top bits tag the slot) */
    const ch_symset *symset; /* every symbol below (see ch_symset) */
    const fmpq *num;   /* NUM: value; ADD: constant; MUL: coefficient; else 0
                        * (the context's one copy of the value, as a pair's) */
    /* ADD terms, MUL factors (n each); FUN arguments (n), POW base and
     * exponent; SYM: pair[0].sym; NUM: none. The children of every kind
     * in one place: sums and products are 99% of a large model's nodes,
     * and their header is 32 bytes (it was 56, with a union for the
     * other kinds' fields and a 64-bit hash: the 200-trailer's derive
     * took 72 MB less, 10% of its peak). */
    ch_pair pair[];
};

/* The symbol of a CH_SYM node. */
static inline const ch_sym *ch_sym_of(const ch_expr *e) { return e->pair[0].sym; }

/* ---- context ---------------------------------------------------------- */

ch_ctx *ch_ctx_new(void);
void ch_ctx_free(ch_ctx *ctx);

/* Last error of a constructor (code CH_OK when none). Sticky until cleared. */
const ch_error *ch_ctx_error(const ch_ctx *ctx);
/* The context's failure as err at file:line:col, its message after
 * prefix (or ""): a limit, out of memory or a model error keeps its
 * code, a math error (1/0) becomes CH_ERR_MODEL when math_is_model, and no
 * error recorded is a failed allocation outside the context ("out of
 * memory"). Returns the code set. */
ch_status ch_ctx_report(const ch_ctx *ctx, ch_error *err, const char *file, int line,
                        int col, const char *prefix, int math_is_model);
void ch_ctx_clear_error(ch_ctx *ctx);
/* 1 when the sticky error is a resource limit (node limit, memory): every
 * later result is NULL anyway, so traversals stop at once instead of
 * visiting the rest of a DAG whose failures are not memoized. */
int ch_ctx_exhausted(const ch_ctx *ctx);
/* Records an error from outside expr (e.g. diff) in the same slot. */
void ch_ctx_fail(ch_ctx *ctx, ch_status code, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* Node budget (0 = unlimited, the default): constructing more nodes fails
 * with CH_ERR_LIMIT. */
void ch_ctx_set_node_limit(ch_ctx *ctx, size_t max_nodes);
size_t ch_ctx_node_limit(const ch_ctx *ctx);
size_t ch_ctx_nnodes(const ch_ctx *ctx);
size_t ch_ctx_nsyms(const ch_ctx *ctx);
const ch_sym *ch_ctx_sym(const ch_ctx *ctx, uint32_t sid);
/* The node with this id (1..nnodes), for id-indexed side tables. */
const ch_expr *ch_ctx_node(const ch_ctx *ctx, uint32_t id);

/* Arena memory that lives as long as the context (zeroed; NULL on OOM). */
void *ch_ctx_alloc(ch_ctx *ctx, size_t size);
char *ch_ctx_strdup(ch_ctx *ctx, const char *s);
/* Blocks of CH_MEM_HUGE bytes with undefined contents for a pass's own
 * arena (the CSE's), given back when the pass ends and kept for the next
 * pass or the context's arena: a fresh block costs page faults and the
 * kernel's zeroing, and the passes of a large emit free and take again
 * gigabytes. take: NULL when out of memory (no error recorded); give: a
 * block of take (NULL is fine). */
void *ch_ctx_block_take(ch_ctx *ctx);
void ch_ctx_block_give(ch_ctx *ctx, void *block);
/* A zeroed array with an entry for every node id made so far (*len >
 * ch_ctx_nnodes entries), lent to one pass at a time: the CSE's map from
 * node id to value, whose clearing and page faults, each pass over a few
 * nodes of a large context, cost more than the pass. Give it back with
 * every entry set cleared; an array not known to be clear (a pass that
 * failed halfway) is given with clear = 0 and freed. take: NULL when out
 * of memory (no error recorded); give: an array of take (NULL is fine). */
uint32_t *ch_ctx_ids_take(ch_ctx *ctx, size_t *len);
void ch_ctx_ids_give(ch_ctx *ctx, uint32_t *ids, size_t len, int clear);

/* ---- symbols ---------------------------------------------------------- */

/* The symbol named `name`, created on first use with the given kind, base,
 * order and index. Asking again for an existing name returns the same node
 * whatever the other arguments are. base NULL means name. */
const ch_expr *ch_symbol(ch_ctx *ctx, const char *name, ch_sym_kind kind,
                         const char *base, int order, int index);
/* The existing symbol named `name`, or NULL. */
const ch_expr *ch_symbol_find(const ch_ctx *ctx, const char *name);
/* Sets the total time derivative of a symbol (see ch_sym.dot). */
void ch_symbol_set_dot(ch_ctx *ctx, const ch_expr *sym, const ch_expr *dot);
/* The constant pi (a symbol of kind CH_SYM_PI named "pi"). */
const ch_expr *ch_pi(ch_ctx *ctx);

/* ---- numbers ---------------------------------------------------------- */

const ch_expr *ch_num_si(ch_ctx *ctx, slong v);
const ch_expr *ch_num_frac(ch_ctx *ctx, slong p, slong q); /* q != 0 */
const ch_expr *ch_num_q(ch_ctx *ctx, const fmpq_t v);
/* Exact value of a decimal literal "12", "0.25", "1e-3", "2.5E+10"
 * (0.1 is 1/10). NULL with CH_ERR_LIMIT for exponents beyond +-4000 or
 * CH_ERR_MODEL for malformed text. */
const ch_expr *ch_num_decimal(ch_ctx *ctx, const char *text, size_t len);

/* ---- constructors ----------------------------------------------------- */

const ch_expr *ch_add(ch_ctx *ctx, const ch_expr *a, const ch_expr *b);
const ch_expr *ch_sub(ch_ctx *ctx, const ch_expr *a, const ch_expr *b);
const ch_expr *ch_neg(ch_ctx *ctx, const ch_expr *a);
const ch_expr *ch_mul(ch_ctx *ctx, const ch_expr *a, const ch_expr *b);
const ch_expr *ch_div(ch_ctx *ctx, const ch_expr *a, const ch_expr *b);
/* c * a without building a NUM node for c. */
const ch_expr *ch_scale(ch_ctx *ctx, const fmpq_t c, const ch_expr *a);
const ch_expr *ch_scale_si(ch_ctx *ctx, slong c, const ch_expr *a);
/* Sums and products of many operands in O(n log n); prefer these to loops
 * of ch_add/ch_mul, which are quadratic. NULL entries make the result NULL. */
const ch_expr *ch_add_n(ch_ctx *ctx, size_t n, const ch_expr *const *terms);
const ch_expr *ch_mul_n(ch_ctx *ctx, size_t n, const ch_expr *const *factors);
/* sum(c[i] * e[i]) + c0 (c0 may be NULL). */
const ch_expr *ch_lincomb(ch_ctx *ctx, const fmpq_t c0, size_t n,
                          const fmpq *c, const ch_expr *const *e);

const ch_expr *ch_pow(ch_ctx *ctx, const ch_expr *base, const ch_expr *exp);
const ch_expr *ch_pow_q(ch_ctx *ctx, const ch_expr *base, const fmpq_t exp);
const ch_expr *ch_pow_si(ch_ctx *ctx, const ch_expr *base, slong exp);
const ch_expr *ch_sqrt(ch_ctx *ctx, const ch_expr *a);
const ch_expr *ch_fun1(ch_ctx *ctx, ch_fun f, const ch_expr *a);
const ch_expr *ch_atan2(ch_ctx *ctx, const ch_expr *y, const ch_expr *x);

/* ---- inspection ------------------------------------------------------- */

static inline int ch_is_num(const ch_expr *e) { return e->kind == CH_NUM; }
int ch_is_zero(const ch_expr *e);    /* the number 0 (structurally) */
int ch_is_one(const ch_expr *e);
int ch_is_int(const ch_expr *e);     /* an integer NUM */
const ch_expr *ch_zero(ch_ctx *ctx);
const ch_expr *ch_one(ch_ctx *ctx);
/* Does e contain the symbol s? (A look at e's symbol set: no walk.) */
int ch_has_sym(const ch_expr *e, const ch_expr *s);
/* Does e contain any of the n symbols syms (non-symbols are ignored)? */
int ch_has_any_sym(const ch_expr *e, size_t n, const ch_expr *const *syms);
/* Does any of the ne expressions e (NULL entries skipped) contain any of
 * the symbols? */
int ch_any_has_any_sym(size_t ne, const ch_expr *const *e, size_t n,
                       const ch_expr *const *syms);
/* Interned symbol sets (see ch_symset); NULL on failure (context error
 * set). The symbols in the n expressions (NULL entries skipped): */
const ch_symset *ch_symset_of(ch_ctx *ctx, size_t n, const ch_expr *const *e);
const ch_symset *ch_symset_union(ch_ctx *ctx, const ch_symset *a, const ch_symset *b);
/* every symbol of the kind made so far */
const ch_symset *ch_symset_of_kind(ch_ctx *ctx, ch_sym_kind kind);
const ch_symset *ch_symset_empty(const ch_ctx *ctx);
/* Sorts n 64-bit keys in increasing order (insertion sort when few). */
void ch_sort_u64(uint64_t *x, size_t n);
/* Does e contain any symbol of this kind? (A walk, memo-free.) */
int ch_has_sym_kind(const ch_expr *e, ch_sym_kind kind);
/* Numerical coefficient and rest: e == c * rest, rest's coefficient 1. */
const ch_expr *ch_split_coeff(ch_ctx *ctx, const ch_expr *e, fmpq_t c);
/* A hash of the value q (the one interning uses), for keys of side
 * tables. */
uint64_t ch_hash_q(const fmpq_t q);
/* Number of distinct nodes reachable from e (DAG size). */
size_t ch_dag_size(const ch_expr *e);
/* min(ch_dag_size(e), cap + 1), visiting at most cap + 1 nodes: a size
 * test that costs O(cap) however large e is. cap + 1 also when out of
 * memory (callers then skip the work the size test guards). */
size_t ch_dag_size_capped(const ch_expr *e, size_t cap);
/* The same for the nodes of n expressions together (NULL entries are
 * skipped). */
size_t ch_dag_size_many(size_t n, const ch_expr *const *e, size_t cap);
/* Number of nodes of e written out as a tree (what a printer writes),
 * saturated at cap and at UINT32_MAX. Sharing makes this exponential in
 * the DAG size for some derived quantities, so beyond a walk of a few
 * thousand nodes it is computed on the DAG and kept in the context: each
 * node is visited once per context, whatever the calls and caps. cap when
 * out of memory (context error set). */
size_t ch_tree_size(ch_ctx *ctx, const ch_expr *e, size_t cap);

/* ---- memo tables ------------------------------------------------------ */

/* Memo tables the context owns (ids of the derivation modules; FACTOR:
 * ch_factor_sums without and with distributing, each ch_dist; TERMS: a
 * long sum's terms by symbol, for partial derivatives). */
typedef enum {
    CH_MEMO_DIFF, CH_MEMO_DIFF_T, CH_MEMO_EXPAND, CH_MEMO_SUBST, CH_MEMO_FACTOR,
    CH_MEMO_FACTOR_DIST, CH_MEMO_FACTOR_OLDEST, CH_MEMO_TERMS, CH_MEMO_COUNT
} ch_memo_id;
ch_map *ch_ctx_memo(ch_ctx *ctx, ch_memo_id which);
/* A fresh empty map that lives (and is freed) with the context: the memo
 * of a substitution or derivative kept across calls. NULL on OOM. */
ch_map *ch_ctx_new_map(ch_ctx *ctx);

#endif
