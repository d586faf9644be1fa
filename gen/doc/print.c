/* print.c — text, LaTeX and SymPy printers over the expression DAG.
 *
 * The DAG's operand order is creation order, which says nothing to a
 * reader. Each print call therefore sorts sums and products for display
 * with structural comparisons only (never ids or addresses), caching one
 * permutation per node for the duration of the call:
 *   - factors of a product: numeric bases (sqrt(2)), pi, parameters and
 *     functions of parameters only, time, coordinates, velocities,
 *     accelerations, other symbols (multipliers, momenta), then composite
 *     factors (functions, symbolic powers, sums); symbols of one kind by
 *     declared index, then name; composites structurally;
 *   - terms of a sum: highest degree in accelerations first, then in
 *     velocities, looking through products and sums (so kinetic energy
 *     reads T2 + T1 + T0), then lexicographically by their factors, most
 *     significant first (accelerations, velocities, coordinates, time,
 *     others, composite, parameters), a higher power first; the numeric
 *     constant last.
 * A product is laid out SymPy-like: sign, integer coefficient and positive
 * powers in the numerator, the coefficient's denominator and negative
 * powers after a single '/': m*x'^2/2, -m*g/(2*l), 1/sqrt(x).
 *
 * Parentheses come from a precedence scheme shared by all styles (sum <
 * product < unary minus < power < atom); an operand that needs more than
 * its own precedence is wrapped. Factors always need power level, so a
 * negative operand is never juxtaposed with '*', '/', '^' or another '-'.
 *
 * ch_print returns nothing; when it cannot finish (too deep an expression,
 * out of memory, NULL expression) it sets the buffer's sticky oom flag,
 * which is the one failure signal a ch_buf carries. */
#include "doc/print.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { P_ANY = 0, P_SUM = 1, P_PROD = 2, P_NEG = 3, P_POW = 4, P_ATOM = 5 };

/* Printing recursion (and comparison recursion below it) stops here: a
 * printed formula this deep is unreadable anyway, and the stack is finite. */
#define PRINT_MAX_DEPTH 3000

/* The orders a node's pairs are cached in (note.order). */
enum {
    ORD_MUL_DISPLAY = 0, /* permutation of a MUL's factors for display */
    ORD_ADD_TERMS = 1,   /* permutation of an ADD's terms for display */
    ORD_MUL_SIGNIF = 2   /* permutation of a MUL's factors by significance */
};

/* What the printer has found out about one node, kept for every call:
 * its pair orders, whether it is constant-like, its degrees in
 * accelerations and velocities (known: NOTE_* bits). */
enum { NOTE_CONST = 1, NOTE_CONST_YES = 2, NOTE_DEG = 4 /* << 0 acc, << 1 vel */ };

typedef struct {
    const uint32_t *order[3];
    double deg[2];
    unsigned known;
} note;

/* Text already written by this call for one (node, precedence): derived
 * quantities are DAGs printed as trees, so a shared subexpression is
 * written again and again; its later copies are copied from the first
 * (emit's output depends on nothing but the node and the precedence asked
 * for). `depth` is how deep the first emission nested below its node, so
 * that a copy fails exactly where writing it out again would. */
typedef struct {
    size_t start, len;
    int depth;
} span;

/* The notes' permutations are cut from blocks freed together with the
 * printer (not a malloc each: there is one per sum and product). */
typedef struct perm_block {
    struct perm_block *next;
    size_t used, size; /* bytes of the payload area */
} perm_block;

#define PERM_BLOCK (1u << 16)

typedef struct {
    ch_buf *out;
    int style;
    ch_c_namer namer;
    void *data;
    int failed;
    int depth;
    int max_depth;        /* deepest emit nesting so far (for span.depth) */
    ch_map spans_at;      /* (id << 3 | need) -> index + 1 into spans */
    span *spans;
    size_t nspans, cap_spans;
    /* The notes, by node id: note_at[id] is 1 + the index in notes, 0
     * for none. An array by id, not a hash map: the nodes printed
     * together were mostly made together, so their entries share cache
     * lines and pages, where a hash map's probes land at random (the
     * 200-trailer's map was 64 MB, a cache miss each). */
    uint32_t *note_at;
    size_t nnote_at;
    note *notes;
    size_t nnotes, cap_notes;
    perm_block *blocks;   /* owns the permutations */
    const struct term_key *keys; /* of the sum get_order is sorting */
    fmpq_t one;
} printer;

static void printer_init(printer *pr, ch_buf *out, int style)
{
    memset(pr, 0, sizeof *pr);
    pr->out = out;
    pr->style = style;
    ch_map_init(&pr->spans_at);
    fmpq_init(pr->one);
    fmpq_one(pr->one);
}

static void printer_clear(printer *pr)
{
    while (pr->blocks) {
        perm_block *b = pr->blocks;
        pr->blocks = b->next;
        free(b);
    }
    free(pr->note_at);
    free(pr->notes);
    ch_map_free(&pr->spans_at);
    free(pr->spans);
    fmpq_clear(pr->one);
}

static void put(printer *pr, const char *s) { ch_buf_put(pr->out, s); }

static void fail(printer *pr) { pr->failed = 1; }

/* e's note, or NULL when there is none yet. */
static note *note_of(printer *pr, const ch_expr *e)
{
    uint32_t at = e->id < pr->nnote_at ? pr->note_at[e->id] : 0;
    return at ? &pr->notes[at - 1] : NULL;
}

/* e's note, made empty when there is none; NULL (and failed) on OOM.
 * Valid until the next note_make: the notes may move. */
static note *note_make(printer *pr, const ch_expr *e)
{
    note *n = note_of(pr, e);
    if (n) return n;
    if (e->id >= pr->nnote_at) {
        /* (calloc, not realloc: a large zeroed block is fresh pages that
         * cost nothing until an entry is written) */
        size_t len = 2 * (size_t)e->id + 1024;
        uint32_t *at = calloc(len, sizeof *at);
        if (!at) {
            fail(pr);
            return NULL;
        }
        if (pr->nnote_at) memcpy(at, pr->note_at, pr->nnote_at * sizeof *at);
        free(pr->note_at);
        pr->note_at = at;
        pr->nnote_at = len;
    }
    if (pr->nnotes == pr->cap_notes) {
        size_t cap = pr->cap_notes ? 2 * pr->cap_notes : 1024;
        note *ns = realloc(pr->notes, cap * sizeof *ns);
        if (!ns) {
            fail(pr);
            return NULL;
        }
        pr->notes = ns;
        pr->cap_notes = cap;
    }
    n = &pr->notes[pr->nnotes++];
    memset(n, 0, sizeof *n);
    pr->note_at[e->id] = (uint32_t)pr->nnotes;
    return n;
}

/* Room for count indices of a permutation, owned by the printer; NULL
 * (and failed) on OOM. */
static uint32_t *perm_alloc(printer *pr, size_t count)
{
    size_t size = count * sizeof(uint32_t);
    perm_block *b = pr->blocks;
    if (!b || b->size - b->used < size) {
        size_t cap = size > PERM_BLOCK ? size : PERM_BLOCK;
        if (!(b = malloc(sizeof *b + cap))) {
            fail(pr);
            return NULL;
        }
        b->used = 0;
        b->size = cap;
        b->next = pr->blocks;
        pr->blocks = b;
    }
    uint32_t *p = (uint32_t *)((char *)(b + 1) + b->used);
    b->used += size;
    return p;
}

/* ---- names of functions ------------------------------------------------ */

static const char *const sympy_fun[CH_F_COUNT] = {
    "sin", "cos", "tan", "asin", "acos", "atan", "atan2",
    "sinh", "cosh", "tanh", "exp", "log", "Abs"};
static const char *const latex_fun[CH_F_COUNT] = {
    "\\sin", "\\cos", "\\tan", "\\arcsin", "\\arccos", "\\arctan",
    "\\operatorname{atan2}", "\\sinh", "\\cosh", "\\tanh", NULL, "\\log",
    NULL};
static const char *const text_fun[CH_F_COUNT] = {
    "sin", "cos", "tan", "asin", "acos", "atan", "atan2",
    "sinh", "cosh", "tanh", "exp", "log", "abs"};

static const char *fun_name(int style, unsigned f)
{
    if (f >= CH_F_COUNT) return NULL;
    switch (style) {
    case CH_STYLE_SYMPY: return sympy_fun[f];
    case CH_STYLE_LATEX: return latex_fun[f];
    default: {
        const char *s = ch_fun_name((ch_fun)f);
        return s ? s : text_fun[f];
    }
    }
}

/* ---- structural order --------------------------------------------------- */

typedef int (*pair_cmp)(printer *pr, const ch_expr *e, uint32_t i, uint32_t j);

static int sgn(int r) { return (r > 0) - (r < 0); }

static int kind_rank(int kind)
{
    switch (kind) {
    case CH_NUM: return 0;
    case CH_SYM: return 1;
    case CH_FUN: return 2;
    case CH_POW: return 3;
    case CH_MUL: return 4;
    default: return 5; /* CH_ADD */
    }
}

/* Left-to-right position class of a symbol in a displayed product. */
static int rank_display_sym(ch_sym_kind kind)
{
    switch (kind) {
    case CH_SYM_PI: return 1;
    case CH_SYM_PARAM: return 2;
    case CH_SYM_TIME: return 4;
    case CH_SYM_COORD: return 5;
    case CH_SYM_VEL: return 6;
    case CH_SYM_ACC: return 7;
    default: return 8;
    }
}

/* Is e built from parameters, pi and numbers only? Such a composite
 * factor reads as part of the coefficient (m*g*sin(alpha)*x), so it is
 * placed with the parameters. Memoized per print call: linear overall. */
static int is_constant_like(printer *pr, const ch_expr *e)
{
    if (e->kind == CH_NUM) return 1;
    if (e->kind == CH_SYM)
        return ch_sym_of(e)->kind == CH_SYM_PARAM || ch_sym_of(e)->kind == CH_SYM_PI;
    const note *known = note_of(pr, e);
    if (known && (known->known & NOTE_CONST)) return (known->known & NOTE_CONST_YES) != 0;
    if (++pr->depth > PRINT_MAX_DEPTH) {
        fail(pr);
        pr->depth--;
        return 0;
    }
    int constant = 1; /* every kind keeps its children in pair[] */
    for (uint32_t k = 0; k < e->n && constant; k++)
        constant = is_constant_like(pr, e->pair[k].e);
    pr->depth--;
    note *n = note_make(pr, e);
    if (n) n->known |= NOTE_CONST | (constant ? NOTE_CONST_YES : 0);
    return constant;
}

/* ... and of any factor base: numbers first, composite factors last. */
static int rank_display(printer *pr, const ch_expr *b)
{
    if (b->kind == CH_NUM) return 0;
    if (b->kind == CH_SYM) return rank_display_sym(ch_sym_of(b)->kind);
    return is_constant_like(pr, b) ? 3 : 9;
}

/* Significance class of a factor base when ordering the terms of a sum. */
static int rank_signif(printer *pr, const ch_expr *b)
{
    if (b->kind == CH_NUM) return 9;
    if (b->kind != CH_SYM) return is_constant_like(pr, b) ? 7 : 5;
    switch (ch_sym_of(b)->kind) {
    case CH_SYM_ACC: return 0;
    case CH_SYM_VEL: return 1;
    case CH_SYM_COORD: return 2;
    case CH_SYM_TIME: return 3;
    case CH_SYM_PARAM: return 6;
    case CH_SYM_PI: return 8;
    default: return 4;
    }
}

static int sym_cmp(const ch_sym *a, const ch_sym *b)
{
    int ra = rank_display_sym(a->kind), rb = rank_display_sym(b->kind);
    if (ra != rb) return ra < rb ? -1 : 1;
    /* Declared symbols (index >= 0) first, in declaration order. */
    if ((a->index < 0) != (b->index < 0)) return a->index < 0 ? 1 : -1;
    if (a->index != b->index) return a->index < b->index ? -1 : 1;
    const char *na = a->name ? a->name : "", *nb = b->name ? b->name : "";
    int r = strcmp(na, nb);
    if (r) return sgn(r);
    /* Names are unique in a context; this is only a last resort. */
    return a->sid < b->sid ? -1 : a->sid > b->sid;
}

static const uint32_t *get_order(printer *pr, const ch_expr *e, int which);
static int struct_cmp(printer *pr, const ch_expr *a, const ch_expr *b);

/* Sums and products compare pair by pair in their display order (`which`
 * selects the order table), then by length and the numeric part. */
static int pairs_cmp(printer *pr, const ch_expr *a, const ch_expr *b, int which)
{
    const uint32_t *pa = get_order(pr, a, which);
    const uint32_t *pb = get_order(pr, b, which);
    if (!pa || !pb) return 0;
    uint32_t n = a->n < b->n ? a->n : b->n;
    for (uint32_t k = 0; k < n; k++) {
        const ch_pair *x = &a->pair[pa[k]], *y = &b->pair[pb[k]];
        int r = struct_cmp(pr, x->e, y->e);
        if (r) return r;
        r = fmpq_cmp(x->c, y->c);
        if (r) return sgn(r);
    }
    if (a->n != b->n) return a->n < b->n ? -1 : 1;
    return sgn(fmpq_cmp(a->num, b->num));
}

/* A total order on distinct nodes (hash-consing makes distinct nodes
 * structurally different), independent of ids. */
static int struct_cmp(printer *pr, const ch_expr *a, const ch_expr *b)
{
    if (a == b || pr->failed) return 0;
    int ka = kind_rank(a->kind), kb = kind_rank(b->kind);
    if (ka != kb) return ka < kb ? -1 : 1;
    if (++pr->depth > PRINT_MAX_DEPTH) {
        fail(pr);
        pr->depth--;
        return 0;
    }
    int r = 0;
    switch (a->kind) {
    case CH_NUM: r = sgn(fmpq_cmp(a->num, b->num)); break;
    case CH_SYM: r = sym_cmp(ch_sym_of(a), ch_sym_of(b)); break;
    case CH_FUN: {
        const char *fa = fun_name(CH_STYLE_SYMPY, a->fun);
        const char *fb = fun_name(CH_STYLE_SYMPY, b->fun);
        r = sgn(strcmp(fa ? fa : "", fb ? fb : ""));
        if (!r && a->n != b->n) r = a->n < b->n ? -1 : 1;
        for (uint32_t k = 0; !r && k < a->n && k < 2; k++)
            r = struct_cmp(pr, a->pair[k].e, b->pair[k].e);
        break;
    }
    case CH_POW:
        r = struct_cmp(pr, a->pair[0].e, b->pair[0].e);
        if (!r) r = struct_cmp(pr, a->pair[1].e, b->pair[1].e);
        break;
    case CH_MUL: r = pairs_cmp(pr, a, b, ORD_MUL_DISPLAY); break;
    default: r = pairs_cmp(pr, a, b, ORD_ADD_TERMS); break;
    }
    pr->depth--;
    return r;
}

static int base_cmp(printer *pr, const ch_expr *a, const ch_expr *b,
                    int (*rank)(printer *, const ch_expr *))
{
    int ra = rank(pr, a), rb = rank(pr, b);
    if (ra != rb) return ra < rb ? -1 : 1;
    return struct_cmp(pr, a, b);
}

static int cmp_mul_display(printer *pr, const ch_expr *e, uint32_t i,
                           uint32_t j)
{
    return base_cmp(pr, e->pair[i].e, e->pair[j].e, rank_display);
}

static int cmp_mul_signif(printer *pr, const ch_expr *e, uint32_t i,
                          uint32_t j)
{
    return base_cmp(pr, e->pair[i].e, e->pair[j].e, rank_signif);
}

/* The factors of a term as (base, exponent) in some cached order. */
typedef struct {
    const ch_expr *e;
    const uint32_t *perm; /* NULL: e itself is the only factor */
    uint32_t n;
} flist;

static int flist_init(printer *pr, flist *f, const ch_expr *e, int which)
{
    f->e = e;
    f->perm = NULL;
    f->n = 1;
    if (e->kind == CH_MUL) {
        f->perm = get_order(pr, e, which);
        f->n = e->n;
        if (!f->perm) return -1;
    }
    return 0;
}

static const ch_expr *fl_base(const flist *f, uint32_t k)
{
    return f->perm ? f->e->pair[f->perm[k]].e : f->e;
}

static const fmpq *fl_exp(const printer *pr, const flist *f, uint32_t k)
{
    return f->perm ? f->e->pair[f->perm[k]].c : pr->one;
}

/* Polynomial degree of e in the symbols of one kind, looking through
 * products and sums but not into functions or symbolic powers; only used
 * to group terms (a double is exact enough for that and deterministic). */
static double sym_degree(printer *pr, const ch_expr *e, ch_sym_kind kind)
{
    if (e->kind == CH_SYM) return ch_sym_of(e)->kind == kind;
    if (e->kind != CH_MUL && e->kind != CH_ADD) return 0;
    int g = kind == CH_SYM_ACC ? 0 : 1;
    const note *known = note_of(pr, e);
    if (known && (known->known & NOTE_DEG << g)) return known->deg[g];
    if (++pr->depth > PRINT_MAX_DEPTH) {
        fail(pr);
        pr->depth--;
        return 0;
    }
    double d = 0;
    for (uint32_t k = 0; k < e->n; k++) {
        double t = sym_degree(pr, e->pair[k].e, kind);
        if (e->kind == CH_MUL) {
            if (t != 0) d += fmpq_get_d(e->pair[k].c) * t;
        }
        else if (k == 0 && fmpq_is_zero(e->num)) d = t;
        else if (t > d) d = t;
    }
    pr->depth--;
    if (isnan(d)) d = 0; /* inf - inf from absurd exponents: keep the order total */
    note *n = note_make(pr, e);
    if (n) {
        n->deg[g] = d;
        n->known |= NOTE_DEG << g;
    }
    return d;
}

/* What term_cmp compares of a term: its degrees and its factors, found
 * once per term of the sum being ordered instead of once per comparison
 * (each is a note lookup, and the sums of large models have thousands
 * of terms). */
typedef struct term_key {
    double deg[2]; /* in accelerations, in velocities */
    flist f;       /* factors in significance order */
    int ok;        /* 0 when f failed: the term compares equal to any */
} term_key;

static const ch_sym_kind graded[2] = {CH_SYM_ACC, CH_SYM_VEL};

static void term_key_init(printer *pr, term_key *k, const ch_expr *t)
{
    k->ok = flist_init(pr, &k->f, t, ORD_MUL_SIGNIF) == 0;
    for (int g = 0; g < 2; g++) k->deg[g] = k->ok ? sym_degree(pr, t, graded[g]) : 0;
}

/* Negative: term a is displayed before term b. Degree in accelerations,
 * then in velocities (higher first), then lex over the exponent vectors
 * with bases in significance order (a larger exponent first; a missing
 * base counts as exponent 0). */
static int term_cmp(printer *pr, const ch_expr *a, const term_key *ka,
                    const ch_expr *b, const term_key *kb)
{
    if (!ka->ok || !kb->ok) return 0;
    for (int g = 0; g < 2; g++)
        if (ka->deg[g] != kb->deg[g]) return ka->deg[g] > kb->deg[g] ? -1 : 1;
    const flist *fa = &ka->f, *fb = &kb->f;
    uint32_t i = 0, j = 0;
    while (i < fa->n && j < fb->n) {
        const ch_expr *ba = fl_base(fa, i), *bb = fl_base(fb, j);
        int c = base_cmp(pr, ba, bb, rank_signif);
        if (c < 0) return fmpq_sgn(fl_exp(pr, fa, i)) > 0 ? -1 : 1;
        if (c > 0) return fmpq_sgn(fl_exp(pr, fb, j)) > 0 ? 1 : -1;
        c = fmpq_cmp(fl_exp(pr, fa, i), fl_exp(pr, fb, j));
        if (c) return c > 0 ? -1 : 1;
        i++;
        j++;
    }
    if (i < fa->n) return fmpq_sgn(fl_exp(pr, fa, i)) > 0 ? -1 : 1;
    if (j < fb->n) return fmpq_sgn(fl_exp(pr, fb, j)) > 0 ? 1 : -1;
    return struct_cmp(pr, a, b);
}

/* (pr->keys: the keys of e's terms, set by get_order) */
static int cmp_add_terms(printer *pr, const ch_expr *e, uint32_t i,
                         uint32_t j)
{
    int r = term_cmp(pr, e->pair[i].e, &pr->keys[i], e->pair[j].e, &pr->keys[j]);
    if (!r) r = sgn(fmpq_cmp(e->pair[i].c, e->pair[j].c));
    return r;
}

/* Stable merge sort of an index array (qsort has no context argument and
 * is not stable). */
static void sort_perm(printer *pr, const ch_expr *e, uint32_t *a,
                      uint32_t *tmp, size_t n, pair_cmp cmp)
{
    if (n <= 8) {
        for (size_t i = 1; i < n; i++) {
            uint32_t v = a[i];
            size_t j = i;
            while (j > 0 && cmp(pr, e, a[j - 1], v) > 0) {
                a[j] = a[j - 1];
                j--;
            }
            a[j] = v;
        }
        return;
    }
    size_t h = n / 2;
    sort_perm(pr, e, a, tmp, h, cmp);
    sort_perm(pr, e, a + h, tmp, n - h, cmp);
    size_t i = 0, j = h, k = 0;
    while (i < h && j < n)
        tmp[k++] = cmp(pr, e, a[j], a[i]) < 0 ? a[j++] : a[i++];
    while (i < h) tmp[k++] = a[i++];
    while (j < n) tmp[k++] = a[j++];
    memcpy(a, tmp, n * sizeof *a);
}

static const uint32_t *get_order(printer *pr, const ch_expr *e, int which)
{
    static const uint32_t single[1] = {0};
    if (e->n <= 1) return single;
    const note *known = note_of(pr, e);
    if (known && known->order[which]) return known->order[which];
    uint32_t *perm = perm_alloc(pr, 2 * (size_t)e->n);
    if (!perm) return NULL;
    for (uint32_t k = 0; k < e->n; k++) perm[k] = k;
    if (which != ORD_ADD_TERMS) {
        sort_perm(pr, e, perm, perm + e->n, e->n,
                  which == ORD_MUL_SIGNIF ? cmp_mul_signif : cmp_mul_display);
    } else { /* (a comparison may order a sum inside a term: nested calls) */
        term_key small[4], *keys = e->n <= 4 ? small : malloc(e->n * sizeof *keys);
        if (!keys) {
            fail(pr);
            return NULL;
        }
        for (uint32_t k = 0; k < e->n; k++) term_key_init(pr, &keys[k], e->pair[k].e);
        const term_key *outer = pr->keys;
        pr->keys = keys;
        sort_perm(pr, e, perm, perm + e->n, e->n, cmp_add_terms);
        pr->keys = outer;
        if (keys != small) free(keys);
    }
    note *n = note_make(pr, e);
    if (!n) return NULL;
    n->order[which] = perm;
    return perm;
}

/* ---- numbers ------------------------------------------------------------ */

static void put_fmpz_abs(printer *pr, const fmpz_t z)
{
    if (fmpz_fits_si(z) && fmpz_cmp_si(z, -WORD_MAX) >= 0) {
        slong v = fmpz_get_si(z);
        ch_buf_printf(pr->out, "%lld", (long long)(v < 0 ? -v : v));
        return;
    }
    char *s = fmpz_get_str(NULL, 10, z);
    if (!s) {
        fail(pr);
        return;
    }
    put(pr, s[0] == '-' ? s + 1 : s);
    flint_free(s);
}

static int num_prec(const fmpq *q)
{
    if (fmpq_sgn(q) < 0) return P_NEG;
    if (fmpz_is_one(fmpq_denref(q))) return P_ATOM;
    return P_PROD;
}

static void put_q_abs(printer *pr, const fmpq *q)
{
    const fmpz *p = fmpq_numref(q), *d = fmpq_denref(q);
    if (fmpz_is_one(d)) {
        put_fmpz_abs(pr, p);
    } else if (pr->style == CH_STYLE_LATEX) {
        put(pr, "\\frac{");
        put_fmpz_abs(pr, p);
        put(pr, "}{");
        put_fmpz_abs(pr, d);
        put(pr, "}");
    } else {
        put_fmpz_abs(pr, p);
        put(pr, "/");
        put_fmpz_abs(pr, d);
    }
}

static void open_paren(printer *pr, int wrap)
{
    if (wrap) put(pr, pr->style == CH_STYLE_LATEX ? "\\left(" : "(");
}

static void close_paren(printer *pr, int wrap)
{
    if (wrap) put(pr, pr->style == CH_STYLE_LATEX ? "\\right)" : ")");
}

static void emit_num(printer *pr, const fmpq *q, int need)
{
    int wrap = num_prec(q) < need;
    open_paren(pr, wrap);
    if (fmpq_sgn(q) < 0) put(pr, "-");
    put_q_abs(pr, q);
    close_paren(pr, wrap);
}

/* ---- precedence ----------------------------------------------------------- */

static int is_half(const fmpq *q)
{
    return fmpz_is_one(fmpq_numref(q)) && fmpz_cmp_ui(fmpq_denref(q), 2) == 0;
}

/* LaTeX writes f(x)^k as \sin^{k}{\left(x\right)} for these. */
static int latex_fun_powable(const ch_expr *b)
{
    return b->kind == CH_FUN && b->fun < CH_F_COUNT && latex_fun[b->fun];
}

static int expr_prec(printer *pr, const ch_expr *e);

/* Precedence of base^exp printed as a factor (exp > 0). */
static int factor_prec(printer *pr, const ch_expr *base, const fmpq *exp)
{
    if (fmpq_is_one(exp)) {
        int p = expr_prec(pr, base);
        return p < P_POW ? P_ATOM : p; /* wrapped below power level */
    }
    if (is_half(exp)) return P_ATOM;
    return P_POW;
}

/* A product c * prod(factors) laid out for display. */
typedef struct {
    flist f;       /* factors in display order */
    fmpq_t coef;   /* signed coefficient */
    uint32_t nnum, nden; /* factors with positive / negative exponent */
} pview;

static int pview_init(printer *pr, pview *v, const fmpq *c, const ch_expr *e)
{
    fmpq_init(v->coef);
    fmpq_set(v->coef, c ? c : pr->one);
    v->nnum = v->nden = 0;
    if (flist_init(pr, &v->f, e, ORD_MUL_DISPLAY)) return -1;
    if (e->kind == CH_MUL) fmpq_mul(v->coef, v->coef, e->num);
    for (uint32_t k = 0; k < v->f.n; k++) {
        int s = fmpq_sgn(fl_exp(pr, &v->f, k));
        v->nnum += s > 0;
        v->nden += s < 0;
    }
    return 0;
}

static void pview_clear(pview *v) { fmpq_clear(v->coef); }

/* The first factor whose exponent has this sign (the lone one when the
 * count for that sign is 1). */
static uint32_t pview_first(const printer *pr, const pview *v, int sign)
{
    for (uint32_t k = 0; k < v->f.n; k++)
        if (fmpq_sgn(fl_exp(pr, &v->f, k)) == sign) return k;
    return 0;
}

static int pview_prec(printer *pr, const pview *v, int with_sign)
{
    if (with_sign && fmpq_sgn(v->coef) < 0) return P_NEG;
    int coef_item = !fmpz_is_pm1(fmpq_numref(v->coef));
    int has_den = !fmpz_is_one(fmpq_denref(v->coef)) || v->nden > 0;
    if (has_den) return P_PROD;
    uint32_t items = (uint32_t)coef_item + v->nnum;
    if (items >= 2) return P_PROD;
    if (v->nnum == 0) return P_ATOM;
    uint32_t k = pview_first(pr, v, 1);
    return factor_prec(pr, fl_base(&v->f, k), fl_exp(pr, &v->f, k));
}

static int expr_prec(printer *pr, const ch_expr *e)
{
    switch (e->kind) {
    case CH_NUM: return num_prec(e->num);
    case CH_SYM: return P_ATOM;
    case CH_FUN:
        return pr->style == CH_STYLE_LATEX && e->fun == CH_F_EXP ? P_POW : P_ATOM;
    case CH_POW: return P_POW;
    case CH_MUL: {
        pview v;
        int p = P_ATOM;
        if (pview_init(pr, &v, NULL, e) == 0) p = pview_prec(pr, &v, 1);
        pview_clear(&v);
        return p;
    }
    default: /* CH_ADD */
        if (e->n + !fmpq_is_zero(e->num) >= 2) return P_SUM;
        if (e->n == 1) {
            pview v;
            int p = P_ATOM;
            if (pview_init(pr, &v, e->pair[0].c, e->pair[0].e) == 0)
                p = pview_prec(pr, &v, 1);
            pview_clear(&v);
            return p;
        }
        return num_prec(e->num);
    }
}

/* ---- emitters --------------------------------------------------------------- */

static void emit(printer *pr, const ch_expr *e, int need);
static void latex_name_n(ch_buf *out, const char *s, size_t n, const char *accent);

static void emit_sym(printer *pr, const ch_sym *s)
{
    const char *base = s->base ? s->base : s->name ? s->name : "";
    if (s->kind == CH_SYM_PI) {
        put(pr, pr->style == CH_STYLE_LATEX ? "\\pi" : "pi");
        return;
    }
    switch (pr->style) {
    case CH_STYLE_SYMPY: {
        const char *r = pr->namer ? pr->namer(pr->data, s) : NULL;
        put(pr, r ? r : s->name ? s->name : "");
        return;
    }
    case CH_STYLE_LATEX:
        if ((s->order == 1 || s->order == 2) && base[0]) {
            latex_name_n(pr->out, base, strlen(base), s->order == 1 ? "\\dot" : "\\ddot");
        } else if (s->order > 2) {
            ch_print_latex_name(pr->out, base);
            ch_buf_printf(pr->out, "^{(%d)}", s->order);
        } else {
            ch_print_latex_name(pr->out, base);
        }
        return;
    default:
        put(pr, base);
        for (int k = 0; k < s->order; k++) put(pr, "'");
        return;
    }
}

static void emit_args(printer *pr, const ch_expr *e)
{
    for (uint32_t k = 0; k < e->n && k < 2; k++) {
        if (k) put(pr, ", ");
        emit(pr, e->pair[k].e, P_ANY);
    }
}

/* A function call; pw (LaTeX only) is an exponent written on the name. */
static void emit_fun(printer *pr, const ch_expr *e, const fmpq *pw)
{
    const char *name = fun_name(pr->style, e->fun);
    if (pr->style == CH_STYLE_LATEX && !name) {
        if (e->fun == CH_F_EXP) {
            put(pr, "e^{");
            emit(pr, e->pair[0].e, P_ANY);
            put(pr, "}");
        } else if (e->fun == CH_F_ABS) {
            put(pr, "\\left|");
            emit(pr, e->pair[0].e, P_ANY);
            put(pr, "\\right|");
        } else {
            fail(pr);
        }
        return;
    }
    if (!name) {
        fail(pr);
        return;
    }
    put(pr, name);
    if (pr->style == CH_STYLE_LATEX) {
        if (pw) {
            put(pr, "^{");
            emit_num(pr, pw, P_ANY);
            put(pr, "}");
        }
        put(pr, "{\\left(");
        emit_args(pr, e);
        put(pr, "\\right)}");
    } else {
        put(pr, "(");
        emit_args(pr, e);
        put(pr, ")");
    }
}

/* base^exp as a factor of a product, exp > 0. */
static void emit_factor(printer *pr, const ch_expr *base, const fmpq *exp)
{
    if (fmpq_is_one(exp)) {
        emit(pr, base, P_POW);
        return;
    }
    if (is_half(exp)) {
        put(pr, pr->style == CH_STYLE_LATEX ? "\\sqrt{" : "sqrt(");
        emit(pr, base, P_ANY);
        put(pr, pr->style == CH_STYLE_LATEX ? "}" : ")");
        return;
    }
    switch (pr->style) {
    case CH_STYLE_LATEX:
        if (latex_fun_powable(base)) {
            emit_fun(pr, base, exp);
            return;
        }
        emit(pr, base, P_ATOM);
        put(pr, "^{");
        emit_num(pr, exp, P_ANY);
        put(pr, "}");
        return;
    default:
        emit(pr, base, P_ATOM);
        put(pr, pr->style == CH_STYLE_SYMPY ? "**" : "^");
        emit_num(pr, exp, P_POW);
        return;
    }
}

/* Does the LaTeX of this factor start with a digit (then juxtaposition
 * would merge it with the number before it)? */
static int latex_digit_led(const ch_expr *base, const fmpq *exp)
{
    return base->kind == CH_NUM && fmpq_sgn(base->num) > 0 &&
           fmpz_is_one(fmpq_denref(base->num)) && !is_half(exp);
}

/* Writes the factors of one sign (1 numerator, -1 denominator) with their
 * absolute exponents; `first` says whether nothing precedes them. `alone`
 * (LaTeX): the single factor fills a \frac part, whose braces group it. */
static void emit_factors(printer *pr, const pview *v, int sign, int first,
                         int alone)
{
    fmpq_t a;
    fmpq_init(a);
    for (uint32_t k = 0; k < v->f.n && !pr->failed; k++) {
        const fmpq *c = fl_exp(pr, &v->f, k);
        if (fmpq_sgn(c) != sign) continue;
        const ch_expr *b = fl_base(&v->f, k);
        fmpq_abs(a, c);
        if (!first) {
            if (pr->style == CH_STYLE_LATEX)
                put(pr, latex_digit_led(b, a) ? " \\cdot " : " ");
            else
                put(pr, "*");
        }
        if (alone && fmpq_is_one(a)) emit(pr, b, P_ANY);
        else emit_factor(pr, b, a);
        first = 0;
    }
    fmpq_clear(a);
}

/* Precedence of the lone denominator factor (nden == 1). */
static int den_single_prec(printer *pr, const pview *v)
{
    uint32_t k = pview_first(pr, v, -1);
    fmpq_t a;
    fmpq_init(a);
    fmpq_abs(a, fl_exp(pr, &v->f, k));
    int p = factor_prec(pr, fl_base(&v->f, k), a);
    fmpq_clear(a);
    return p;
}

static void emit_prod_latex(printer *pr, const pview *v)
{
    const fmpz *p = fmpq_numref(v->coef), *q = fmpq_denref(v->coef);
    int has_den = !fmpz_is_one(q) || v->nden > 0;
    if (has_den) put(pr, "\\frac{");
    int first = 1;
    if (!fmpz_is_pm1(p) || v->nnum == 0) {
        put_fmpz_abs(pr, p);
        first = 0;
    }
    emit_factors(pr, v, 1, first, has_den && first && v->nnum == 1);
    if (!has_den) return;
    put(pr, "}{");
    first = 1;
    if (!fmpz_is_one(q)) {
        put_fmpz_abs(pr, q);
        first = 0;
    }
    emit_factors(pr, v, -1, first, first && v->nden == 1);
    put(pr, "}");
}

static void emit_prod_infix(printer *pr, const pview *v)
{
    const fmpz *p = fmpq_numref(v->coef), *q = fmpq_denref(v->coef);
    int first = 1;
    if (!fmpz_is_pm1(p) || v->nnum == 0) {
        put_fmpz_abs(pr, p);
        first = 0;
    }
    emit_factors(pr, v, 1, first, 0);
    int q_item = !fmpz_is_one(q);
    uint32_t items = (uint32_t)q_item + v->nden;
    if (items == 0) return;
    put(pr, "/");
    int wrap = items > 1 || (v->nden == 1 && den_single_prec(pr, v) < P_POW);
    open_paren(pr, wrap);
    if (q_item) put_fmpz_abs(pr, q);
    emit_factors(pr, v, -1, !q_item, 0);
    close_paren(pr, wrap);
}

static void emit_pview(printer *pr, const pview *v, int with_sign)
{
    if (with_sign && fmpq_sgn(v->coef) < 0) put(pr, "-");
    if (pr->style == CH_STYLE_LATEX) emit_prod_latex(pr, v);
    else emit_prod_infix(pr, v);
}

static void emit_sum(printer *pr, const ch_expr *e)
{
    const uint32_t *perm = get_order(pr, e, ORD_ADD_TERMS);
    if (!perm) return;
    int first = 1;
    for (uint32_t k = 0; k < e->n && !pr->failed; k++) {
        const ch_pair *t = &e->pair[perm[k]];
        pview v;
        if (pview_init(pr, &v, t->c, t->e) == 0) {
            int neg = fmpq_sgn(v.coef) < 0;
            if (first) put(pr, neg ? "-" : "");
            else put(pr, neg ? " - " : " + ");
            emit_pview(pr, &v, 0);
        }
        pview_clear(&v);
        first = 0;
    }
    if (!fmpq_is_zero(e->num)) {
        int neg = fmpq_sgn(e->num) < 0;
        if (first) put(pr, neg ? "-" : "");
        else put(pr, neg ? " - " : " + ");
        put_q_abs(pr, e->num);
    }
}

static void emit_pow(printer *pr, const ch_expr *e)
{
    switch (pr->style) {
    case CH_STYLE_LATEX:
        emit(pr, e->pair[0].e, P_ATOM);
        put(pr, "^{");
        emit(pr, e->pair[1].e, P_ANY);
        put(pr, "}");
        return;
    default:
        emit(pr, e->pair[0].e, P_ATOM);
        put(pr, pr->style == CH_STYLE_SYMPY ? "**" : "^");
        emit(pr, e->pair[1].e, P_POW);
        return;
    }
}

static void emit_product(printer *pr, const fmpq *c, const ch_expr *t, int need)
{
    pview v;
    if (pview_init(pr, &v, c, t) == 0) {
        int wrap = pview_prec(pr, &v, 1) < need;
        open_paren(pr, wrap);
        emit_pview(pr, &v, 1);
        close_paren(pr, wrap);
    }
    pview_clear(&v);
}

static void emit_node(printer *pr, const ch_expr *e, int need)
{
    if (pr->failed) return;
    if (!e || ++pr->depth > PRINT_MAX_DEPTH) {
        if (e) pr->depth--;
        fail(pr);
        return;
    }
    if (pr->depth > pr->max_depth) pr->max_depth = pr->depth;
    int wrap;
    switch (e->kind) {
    case CH_NUM: emit_num(pr, e->num, need); break;
    case CH_SYM: emit_sym(pr, ch_sym_of(e)); break;
    case CH_FUN:
    case CH_POW:
        wrap = expr_prec(pr, e) < need;
        open_paren(pr, wrap);
        if (e->kind == CH_FUN) emit_fun(pr, e, NULL);
        else emit_pow(pr, e);
        close_paren(pr, wrap);
        break;
    case CH_MUL: emit_product(pr, NULL, e, need); break;
    case CH_ADD:
        if (e->n + !fmpq_is_zero(e->num) >= 2) {
            wrap = P_SUM < need;
            open_paren(pr, wrap);
            emit_sum(pr, e);
            close_paren(pr, wrap);
        } else if (e->n == 1) {
            emit_product(pr, e->pair[0].c, e->pair[0].e, need);
        } else {
            emit_num(pr, e->num, need);
        }
        break;
    default: fail(pr); break;
    }
    pr->depth--;
}

/* Appends out->s[start, start + len) to out itself, in pieces that fit
 * the free space (growing the buffer would move the source). */
static void put_again(ch_buf *out, size_t start, size_t len)
{
    while (len && !out->oom) {
        size_t avail = out->cap > out->len + 1 ? out->cap - out->len - 1 : 0;
        if (!avail) {
            ch_buf_putc(out, out->s[start]); /* grows; copies the char first */
            start++;
            len--;
            continue;
        }
        size_t n = len < avail ? len : avail;
        ch_buf_putn(out, out->s + start, n);
        start += n;
        len -= n;
    }
}

static void span_put(printer *pr, uint64_t key, size_t start, int depth)
{
    if (pr->nspans == pr->cap_spans) {
        size_t cap = pr->cap_spans ? 2 * pr->cap_spans : 64;
        span *s = realloc(pr->spans, cap * sizeof *s);
        if (!s) return; /* only a missed reuse */
        pr->spans = s;
        pr->cap_spans = cap;
    }
    span *s = &pr->spans[pr->nspans];
    s->start = start;
    s->len = pr->out->len - start;
    s->depth = depth;
    if (ch_map_put(&pr->spans_at, key, (void *)(uintptr_t)(pr->nspans + 1)) == 0)
        pr->nspans++;
}

static void emit(printer *pr, const ch_expr *e, int need)
{
    if (pr->failed || !e || e->kind == CH_NUM || e->kind == CH_SYM) {
        emit_node(pr, e, need);
        return;
    }
    uint64_t key = ((uint64_t)e->id << 3) | (uint64_t)need;
    uintptr_t hit = (uintptr_t)ch_map_get(&pr->spans_at, key);
    if (hit) {
        const span *s = &pr->spans[hit - 1];
        if (pr->depth + s->depth > PRINT_MAX_DEPTH) fail(pr);
        else put_again(pr->out, s->start, s->len);
        if (pr->depth + s->depth > pr->max_depth) pr->max_depth = pr->depth + s->depth;
        return;
    }
    size_t start = pr->out->len;
    int outer_max = pr->max_depth;
    pr->max_depth = pr->depth;
    emit_node(pr, e, need);
    if (!pr->failed && !pr->out->oom) span_put(pr, key, start, pr->max_depth - pr->depth);
    if (outer_max > pr->max_depth) pr->max_depth = outer_max;
}

/* ---- entry points ------------------------------------------------------------ */

struct ch_printer {
    printer pr;
};

ch_printer *ch_printer_new(ch_style style)
{
    ch_printer *p = malloc(sizeof *p);
    if (!p) return NULL;
    /* an unknown style prints as text */
    printer_init(&p->pr, NULL, (unsigned)style <= CH_STYLE_SYMPY ? (int)style : CH_STYLE_TEXT);
    return p;
}

void ch_printer_set_namer(ch_printer *p, ch_c_namer namer, void *data)
{
    p->pr.namer = namer;
    p->pr.data = data;
}

void ch_printer_free(ch_printer *p)
{
    if (!p) return;
    printer_clear(&p->pr);
    free(p);
}

void ch_printer_put(ch_printer *p, ch_buf *out, const ch_expr *e)
{
    printer *pr = &p->pr;
    /* The notes (term orders, degrees) hold for every call; the spans of
     * repeated text are positions in this call's output. */
    pr->out = out;
    pr->failed = 0;
    pr->depth = pr->max_depth = 0;
    pr->nspans = 0;
    ch_map_free(&pr->spans_at);
    ch_map_init(&pr->spans_at);
    emit(pr, e, P_ANY);
    if (pr->failed) out->oom = 1;
}

void ch_print(ch_buf *out, const ch_expr *e, ch_style style)
{
    ch_printer *p = ch_printer_new(style);
    if (!p) {
        out->oom = 1;
        return;
    }
    ch_printer_put(p, out, e);
    ch_printer_free(p);
}

/* ---- JSON ---------------------------------------------------------------------- */

/* Length of the valid UTF-8 sequence at s (lead byte >= 0x80), or 0. */
static size_t utf8_valid_len(const unsigned char *s)
{
    unsigned c = s[0];
    size_t n;
    unsigned min;
    if (c >= 0xC2 && c <= 0xDF) n = 2, min = 0x80;
    else if (c >= 0xE0 && c <= 0xEF) n = 3, min = 0x800;
    else if (c >= 0xF0 && c <= 0xF4) n = 4, min = 0x10000;
    else return 0;
    unsigned cp = c & (0x7F >> n);
    for (size_t i = 1; i < n; i++) {
        if ((s[i] & 0xC0) != 0x80) return 0;
        cp = cp << 6 | (s[i] & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
    return n;
}

/* Printable ASCII other than the quote and the backslash: copied as is. */
static int json_plain(unsigned char c)
{
    return c >= 0x20 && c < 0x80 && c != '"' && c != '\\';
}

/* Eight bytes at a time (SWAR): a byte is special when it is below 0x20,
 * has the high bit set, or equals '"' or '\\'. The expression text of a
 * large model is megabytes, all of it plain. */
int ch_print_json_plain(const char *s, size_t n)
{
    const uint64_t ones = 0x0101010101010101ULL, high = 0x8080808080808080ULL;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t x, q, b;
        memcpy(&x, s + i, 8);
        q = x ^ (ones * '"');
        b = x ^ (ones * '\\');
        uint64_t special = ((x - ones * 0x20) | x | ((q - ones) & ~q)
                            | ((b - ones) & ~b)) & high;
        if (special) break;
    }
    for (; i < n; i++)
        if (!json_plain((unsigned char)s[i])) return 0;
    return 1;
}

/* Invalid UTF-8 becomes U+FFFD so that the output is always valid JSON. */
void ch_print_json_string(ch_buf *out, const char *s)
{
    if (!s) {
        ch_buf_put(out, "null");
        return;
    }
    const unsigned char *p = (const unsigned char *)s;
    ch_buf_putc(out, '"');
    while (*p) {
        unsigned c = *p;
        size_t run = 0;
        /* Copy plain runs in one go. */
        while (json_plain(p[run])) run++;
        if (run) {
            ch_buf_putn(out, (const char *)p, run);
            p += run;
            continue;
        }
        if (c == '"' || c == '\\') {
            ch_buf_putc(out, '\\');
            ch_buf_putc(out, (char)c);
            p++;
        } else if (c < 0x20) {
            switch (c) {
            case '\b': ch_buf_put(out, "\\b"); break;
            case '\f': ch_buf_put(out, "\\f"); break;
            case '\n': ch_buf_put(out, "\\n"); break;
            case '\r': ch_buf_put(out, "\\r"); break;
            case '\t': ch_buf_put(out, "\\t"); break;
            default: ch_buf_printf(out, "\\u%04x", c); break;
            }
            p++;
        } else {
            size_t n = utf8_valid_len(p);
            if (n) {
                ch_buf_putn(out, (const char *)p, n);
                p += n;
            } else {
                ch_buf_put(out, "\\ufffd");
                p++;
            }
        }
    }
    ch_buf_putc(out, '"');
}

/* ---- LaTeX names ------------------------------------------------------------------ */

static const char *const greek[] = {
    "alpha", "beta", "gamma", "delta", "epsilon", "varepsilon", "zeta",
    "eta", "theta", "vartheta", "iota", "kappa", "lambda", "mu", "nu", "xi",
    "pi", "varpi", "rho", "varrho", "sigma", "varsigma", "tau", "upsilon",
    "phi", "varphi", "chi", "psi", "omega", "Gamma", "Delta", "Theta",
    "Lambda", "Xi", "Pi", "Sigma", "Upsilon", "Phi", "Psi", "Omega"};

static int is_greek(const char *s, size_t n)
{
    for (size_t i = 0; i < sizeof greek / sizeof *greek; i++)
        if (strlen(greek[i]) == n && memcmp(greek[i], s, n) == 0) return 1;
    return 0;
}

static int is_alnum_ascii(unsigned char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

/* A name with no structure: \greek, a single character, a number, or
 * \mathrm{...} with LaTeX's special characters escaped. */
static void latex_word(ch_buf *out, const char *s, size_t n)
{
    size_t digits = 0;
    while (digits < n && s[digits] >= '0' && s[digits] <= '9') digits++;
    if (is_greek(s, n)) {
        ch_buf_putc(out, '\\');
        ch_buf_putn(out, s, n);
    } else if ((n == 1 && is_alnum_ascii((unsigned char)s[0])) || (n && digits == n)) {
        ch_buf_putn(out, s, n);
    } else {
        ch_buf_put(out, "\\mathrm{");
        for (size_t i = 0; i < n; i++) {
            unsigned char c = (unsigned char)s[i];
            if (c && strchr("_#$%&{}", c)) {
                ch_buf_putc(out, '\\');
                ch_buf_putc(out, (char)c);
            } else if (c == '\\' || c == '^' || c == '~') {
                ch_buf_putc(out, '?'); /* never in a valid identifier */
            } else {
                ch_buf_putc(out, (char)c);
            }
        }
        ch_buf_putc(out, '}');
    }
}

/* The head word, under an accent (\dot) when one is given. */
static void latex_head(ch_buf *out, const char *s, size_t n, const char *accent)
{
    if (accent) {
        ch_buf_put(out, accent);
        ch_buf_putc(out, '{');
    }
    latex_word(out, s, n);
    if (accent) ch_buf_putc(out, '}');
}

/* head_tail -> head_{tail} with the tail named the same way (y_phi ->
 * y_{\phi}, a_b_c -> a_{b_{c}}); a leading or trailing '_' has no subscript
 * reading. Trailing digits are a subscript too (x12 -> x_{12}). The accent
 * goes on the first head only: \dot{\theta}_{1}, not \dot{\theta_{1}}.
 * Iterative, so that no name can exhaust the stack. */
static void latex_name_n(ch_buf *out, const char *s, size_t n, const char *accent)
{
    size_t open = 0;
    for (;;) {
        const char *u = memchr(s, '_', n);
        if (!u || u == s || (size_t)(u - s) + 1 >= n) break;
        size_t h = (size_t)(u - s);
        latex_head(out, s, h, accent);
        ch_buf_put(out, "_{");
        open++;
        accent = NULL;
        s += h + 1;
        n -= h + 1;
    }
    size_t stem = n;
    while (stem > 0 && s[stem - 1] >= '0' && s[stem - 1] <= '9') stem--;
    if (!memchr(s, '_', n) && stem > 0 && stem < n) {
        latex_head(out, s, stem, accent);
        ch_buf_put(out, "_{");
        ch_buf_putn(out, s + stem, n - stem);
        ch_buf_putc(out, '}');
    } else {
        latex_head(out, s, n, accent);
    }
    while (open--) ch_buf_putc(out, '}');
}

void ch_print_latex_name(ch_buf *out, const char *name)
{
    if (!name || !*name) {
        ch_buf_put(out, "{}");
        return;
    }
    latex_name_n(out, name, strlen(name), NULL);
}
