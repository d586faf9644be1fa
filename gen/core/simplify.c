/* simplify.c — the polynomial normal form over atoms.
 *
 * The normal form runs in two passes over the expression. The first finds
 * the atoms (the variables of the FLINT ring) and ranks them: a root atom
 * r = b^(1/L) ranks above every atom of its radicand b, so that with
 * lexicographic order the relation r^L - b has leading monomial r^L; cos(u)
 * is placed just before sin(u) and cosh(u) before sinh(u), so the leading
 * monomials of the trigonometric relations are cos(u)^2 and cosh(u)^2. These
 * leading monomials are pairwise coprime, which makes the relations a
 * Groebner basis (Buchberger's first criterion) and the remainder of
 * fmpq_mpoly_divrem_ideal a canonical representative. The second pass maps
 * every node to a fraction num/den of polynomials (cached per node), reducing
 * numerators as it goes to keep them small.
 *
 * FLINT aborts on division by zero, so every division is preceded by a
 * zero test, and every polynomial is bounded in length and degree: past the
 * bounds the normal form gives up (-1) instead of exhausting memory. */
#include "core/simplify.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Normal-form bounds: terms of one polynomial, terms of a product before it
 * is formed, total degree, order of a root. */
#define NF_MAX_TERMS 20000
#define NF_MAX_PRODUCT 4000000.0
/* ch_simplify is a display rewrite: a normal form far larger than its
 * input is never the shorter form, so its polynomials are bounded by the
 * input's size (terms per DAG node plus a floor), and a product by a
 * multiple of that. This keeps the cost proportional to the input. */
/* The zero test's normal form is not tried on DAGs larger than this: on
 * derived quantities of that size it runs into NF_MAX_TERMS after long
 * work (the 10-trailer's energy identity: 800 nodes, 0.1 s to fail), and
 * the caller's evaluation at random points decides instead. */
#define NF_ZERO_MAX_DAG 600
#define SIMPLIFY_TERMS_PER_NODE 4
#define SIMPLIFY_MIN_TERMS 256
#define SIMPLIFY_PRODUCT_PER_TERM 64.0
#define NF_MAX_DEG 1024
#define NF_MAX_ROOT 720

/* ======================================================================
 * normal form: atoms
 * ====================================================================== */

typedef enum { AT_PLAIN, AT_CIRC, AT_HYP, AT_ROOT } atom_kind;

typedef struct nf_frac {
    fmpq_mpoly_t num, den;
    struct nf_frac *next; /* the state's list of cached fractions */
} nf_frac;

typedef struct {
    const ch_expr *e;    /* the expression the variable stands for */
    const ch_expr *base; /* AT_ROOT: the (expanded) radicand */
    atom_kind kind;
    ulong q;             /* AT_ROOT: e = base^(1/q), q the lcm of orders */
    /* AT_ROOT, set when its relation is in place. A radicand n/d with a
     * denominator gets the variable rho = (n d^(2q-1))^(1/q) = e d^2, a
     * root of a polynomial (d^(2q) >= 0 keeps principal roots exact), and
     * e = rho / d^2; bf is the radicand's fraction then. */
    int ready;
    const nf_frac *bf;
    int rank;            /* roots rank above the atoms of their radicand */
    uint32_t group;      /* cos(u), sin(u) share group u->id */
    int sub;             /* 0 for cos/cosh (first in the order), 1 for sin */
    int partner;         /* AT_CIRC/AT_HYP: index of the other function */
    slong var;           /* FLINT variable */
} nf_atom;

typedef struct {
    ch_ctx *ctx;
    nf_atom *atoms;
    size_t natoms, cap;
    ch_map atom_of; /* canonical atom expr id -> atom index + 1 */
    ch_map root_of; /* expanded radicand id -> atom index + 1 */
    ch_map seen;    /* pass 1: node id -> highest atom rank below + 1 */
    ch_map canon;   /* FUN/POW node id -> its canonical form */
    /* pass 2 */
    int have_mctx;
    fmpq_mpoly_ctx_t mctx;
    fmpq_mpoly_struct *rel, *quo;
    fmpq_mpoly_struct **relp, **quop;
    slong nrel;
    /* Every relation is lead_var^lead_pow - tail (checked as it is added;
     * otherwise generic_rel): see preduce. */
    fmpq_mpoly_struct *tail;
    slong *lead_var, *degs;
    ulong *mono; /* exponents of one monomial (conv_monomial) */
    ulong *lead_pow;
    int generic_rel;
    ch_map val;       /* node id -> nf_frac* */
    nf_frac *fracs;   /* every cached fraction, for clearing */
    const ch_expr **var_expr; /* FLINT variable -> expression */
    size_t nalloc;            /* rel/quo polynomials initialised */
    ch_status why;            /* first reason of failure, for ch_simplify */
    const char *msg;
    slong max_terms;          /* bounds of this run (NF_MAX_* or smaller) */
    double max_product;
} nf_state;

static void nf_init(nf_state *s, ch_ctx *ctx)
{
    memset(s, 0, sizeof *s);
    s->ctx = ctx;
    s->max_terms = NF_MAX_TERMS;
    s->max_product = NF_MAX_PRODUCT;
    ch_map_init(&s->atom_of);
    ch_map_init(&s->root_of);
    ch_map_init(&s->seen);
    ch_map_init(&s->canon);
    ch_map_init(&s->val);
}

static void nf_clear(nf_state *s)
{
    if (s->have_mctx) {
        for (nf_frac *f = s->fracs, *next; f; f = next) {
            next = f->next;
            fmpq_mpoly_clear(f->num, s->mctx);
            fmpq_mpoly_clear(f->den, s->mctx);
            free(f);
        }
        for (size_t i = 0; i < s->nalloc; i++) {
            fmpq_mpoly_clear(s->rel + i, s->mctx);
            fmpq_mpoly_clear(s->quo + i, s->mctx);
            fmpq_mpoly_clear(s->tail + i, s->mctx);
        }
        fmpq_mpoly_ctx_clear(s->mctx);
    }
    free(s->rel);
    free(s->quo);
    free(s->relp);
    free(s->quop);
    free(s->tail);
    free(s->lead_var);
    free(s->lead_pow);
    free(s->degs);
    free(s->mono);
    free(s->var_expr);
    free(s->atoms);
    ch_map_free(&s->atom_of);
    ch_map_free(&s->root_of);
    ch_map_free(&s->seen);
    ch_map_free(&s->canon);
    ch_map_free(&s->val);
}

/* The canonical form of a FUN or POW node: arguments expanded, tan and
 * tanh as quotients (the constructors already pull the sign out of odd and
 * even functions: sin(-u) = -sin(u)). A node that is its own canonical form
 * is an atom; otherwise its canonical form is converted in its place. */
static const ch_expr *canon_node(nf_state *s, const ch_expr *e)
{
    const ch_expr *c = ch_map_get(&s->canon, e->id);
    if (c) return c;
    ch_ctx *ctx = s->ctx;
    const ch_expr *a = ch_expand(ctx, e->pair[0].e);
    if (e->kind == CH_POW) {
        c = ch_pow(ctx, a, ch_expand(ctx, e->pair[1].e));
    } else if (e->fun == CH_F_ATAN2) {
        c = ch_atan2(ctx, a, ch_expand(ctx, e->pair[1].e));
    } else if (e->fun == CH_F_TAN || e->fun == CH_F_TANH) {
        int circ = e->fun == CH_F_TAN;
        c = ch_div(ctx, ch_fun1(ctx, circ ? CH_F_SIN : CH_F_SINH, a),
                   ch_fun1(ctx, circ ? CH_F_COS : CH_F_COSH, a));
    } else {
        c = ch_fun1(ctx, (ch_fun)e->fun, a);
    }
    if (!c || ch_map_put(&s->canon, e->id, (void *)c)) return NULL;
    return c;
}

static int atom_new(nf_state *s, const ch_expr *e, atom_kind kind)
{
    if (s->natoms == s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 16;
        nf_atom *a = realloc(s->atoms, cap * sizeof *a);
        if (!a) return -1;
        s->atoms = a;
        s->cap = cap;
    }
    nf_atom *a = &s->atoms[s->natoms];
    memset(a, 0, sizeof *a);
    a->e = e;
    a->kind = kind;
    a->group = e->id;
    a->partner = -1;
    return (int)s->natoms++;
}

/* Registers sin/cos (or sinh/cosh) of a as a pair of atoms. */
static int add_trig_pair(nf_state *s, const ch_expr *a, int circ)
{
    const ch_expr *c = ch_fun1(s->ctx, circ ? CH_F_COS : CH_F_COSH, a);
    const ch_expr *sn = ch_fun1(s->ctx, circ ? CH_F_SIN : CH_F_SINH, a);
    if (!c || !sn) return -1;
    const ch_expr *pair[2] = {c, sn};
    int idx[2];
    for (int k = 0; k < 2; k++) {
        uintptr_t v = (uintptr_t)ch_map_get(&s->atom_of, pair[k]->id);
        if (v) {
            idx[k] = (int)v - 1;
            continue;
        }
        idx[k] = atom_new(s, pair[k], AT_PLAIN);
        if (idx[k] < 0
            || ch_map_put(&s->atom_of, pair[k]->id, (void *)(uintptr_t)(idx[k] + 1)))
            return -1;
    }
    /* a relation only when both really are function nodes of a */
    if (c->kind == CH_FUN && sn->kind == CH_FUN && c->pair[0].e == a
        && sn->pair[0].e == a) {
        for (int k = 0; k < 2; k++) {
            nf_atom *at = &s->atoms[idx[k]];
            at->kind = circ ? AT_CIRC : AT_HYP;
            at->group = a->id;
            at->sub = k;
            at->partner = idx[1 - k];
        }
    }
    return 0;
}

static int add_plain(nf_state *s, const ch_expr *e)
{
    if (ch_map_get(&s->atom_of, e->id)) return 0;
    if (e->kind == CH_FUN
        && (e->fun == CH_F_SIN || e->fun == CH_F_COS || e->fun == CH_F_SINH
            || e->fun == CH_F_COSH))
        return add_trig_pair(s, e->pair[0].e,
                             e->fun == CH_F_SIN || e->fun == CH_F_COS);
    int i = atom_new(s, e, AT_PLAIN);
    if (i < 0 || ch_map_put(&s->atom_of, e->id, (void *)(uintptr_t)(i + 1)))
        return -1;
    return 0;
}

static int collect(nf_state *s, const ch_expr *e);
static int add_root_atom(nf_state *s, const ch_expr *b, const fmpq_t ex);

/* The radicand of a root in a form shared by its positive multiples:
 * expand(base) = c * b with c > 0 and b's leading coefficient +-1, so that
 * sqrt(2 + 2x) and sqrt(1 + x) share the atom sqrt(1 + x). Numbers are
 * their own radicands (the constructors keep them canonical). */
static const ch_expr *radicand(nf_state *s, const ch_expr *base, fmpq_t c)
{
    const ch_expr *b = ch_expand(s->ctx, base);
    fmpq_one(c);
    if (!b) return NULL;
    if (b->kind == CH_ADD) fmpq_abs(c, b->pair[0].c);
    else if (b->kind == CH_MUL) fmpq_abs(c, b->num);
    if (fmpq_is_one(c)) return b;
    fmpq_t ic;
    fmpq_init(ic);
    fmpq_inv(ic, c);
    b = ch_scale(s->ctx, ic, b);
    fmpq_clear(ic);
    return b;
}

/* c^ex for the content c of a radicand, as an expression. */
static const ch_expr *content_pow(nf_state *s, const fmpq_t c, const fmpq_t ex)
{
    return ch_pow_q(s->ctx, ch_num_q(s->ctx, c), ex);
}

/* Registers the root atom of base^(p/q); returns its rank or -1. */
static int add_root(nf_state *s, const ch_expr *base, const fmpq_t ex)
{
    fmpq_t cont;
    fmpq_init(cont);
    const ch_expr *b = radicand(s, base, cont);
    int crank = 0;
    if (b && !fmpq_is_one(cont)) {
        const ch_expr *cp = content_pow(s, cont, ex);
        crank = cp ? collect(s, cp) : -1;
        if (crank < 0) b = NULL;
    }
    fmpq_clear(cont);
    int r = add_root_atom(s, b, ex);
    return r < 0 ? -1 : (r > crank ? r : crank);
}

/* Registers the root atom b^(1/q) of a normalised radicand b. */
static int add_root_atom(nf_state *s, const ch_expr *b, const fmpq_t ex)
{
    if (!b || !fmpz_fits_si(fmpq_denref(ex))
        || fmpz_get_si(fmpq_denref(ex)) > NF_MAX_ROOT)
        return -1;
    ulong q = fmpz_get_ui(fmpq_denref(ex));
    uintptr_t v = (uintptr_t)ch_map_get(&s->root_of, b->id);
    if (v) {
        nf_atom *a = &s->atoms[v - 1];
        a->q = a->q / n_gcd(a->q, q) * q;
        return a->q > NF_MAX_ROOT ? -1 : a->rank;
    }
    int rank = collect(s, b);
    if (rank < 0) return -1;
    int i = atom_new(s, b, AT_ROOT);
    if (i < 0 || ch_map_put(&s->root_of, b->id, (void *)(uintptr_t)(i + 1)))
        return -1;
    nf_atom *a = &s->atoms[i];
    a->e = NULL; /* built once q is final */
    a->base = b;
    a->q = q;
    a->rank = rank + 1;
    return a->rank;
}

/* Pass 1 over a node: registers atoms. Returns the highest rank of the
 * atoms below (0 without roots), or -1. */
static int collect(nf_state *s, const ch_expr *e)
{
    uintptr_t v = (uintptr_t)ch_map_get(&s->seen, e->id);
    if (v) return (int)v - 1;
    int rank = 0, r;
    switch (e->kind) {
    case CH_NUM:
        break;
    case CH_SYM:
        if (add_plain(s, e)) return -1;
        break;
    case CH_ADD:
        for (uint32_t i = 0; i < e->n; i++) {
            if ((r = collect(s, e->pair[i].e)) < 0) return -1;
            rank = rank > r ? rank : r;
        }
        break;
    case CH_MUL:
        for (uint32_t i = 0; i < e->n; i++) {
            const ch_pair *p = &e->pair[i];
            r = fmpz_is_one(fmpq_denref(p->c)) ? collect(s, p->e)
                                                : add_root(s, p->e, p->c);
            if (r < 0) return -1;
            rank = rank > r ? rank : r;
        }
        break;
    default: {
        const ch_expr *c = canon_node(s, e);
        if (!c) return -1;
        if (c == e) {
            if (add_plain(s, e)) return -1;
        } else if ((rank = collect(s, c)) < 0) {
            return -1;
        }
    }
    }
    if (ch_map_put(&s->seen, e->id, (void *)(uintptr_t)(rank + 1))) return -1;
    return rank;
}


/* ======================================================================
 * normal form: the ring, fractions and conversion
 * ====================================================================== */

typedef struct {
    int rank;
    uint32_t group, id;
    int sub;
    size_t idx;
} atom_key;

static int key_cmp(const void *x, const void *y)
{
    const atom_key *a = x, *b = y;
    if (a->rank != b->rank) return a->rank > b->rank ? -1 : 1;
    if (a->group != b->group) return a->group < b->group ? -1 : 1;
    if (a->sub != b->sub) return a->sub < b->sub ? -1 : 1;
    return (a->id > b->id) - (a->id < b->id);
}

static void nf_fail(nf_state *s, ch_status code, const char *msg)
{
    if (!s->why) {
        s->why = code;
        s->msg = msg;
    }
}

/* Builds the root expressions, orders the atoms (rank descending, then
 * cos before sin of the same argument) and creates the FLINT ring. */
static int nf_setup_ring(nf_state *s)
{
    size_t n = s->natoms;
    atom_key *keys = malloc((n ? n : 1) * sizeof *keys);
    s->var_expr = malloc((n ? n : 1) * sizeof *s->var_expr);
    s->rel = malloc((n ? n : 1) * sizeof *s->rel);
    s->quo = malloc((n ? n : 1) * sizeof *s->quo);
    s->relp = malloc((n ? n : 1) * sizeof *s->relp);
    s->quop = malloc((n ? n : 1) * sizeof *s->quop);
    s->tail = malloc((n ? n : 1) * sizeof *s->tail);
    s->lead_var = malloc((n ? n : 1) * sizeof *s->lead_var);
    s->lead_pow = malloc((n ? n : 1) * sizeof *s->lead_pow);
    s->degs = malloc((n ? n : 1) * sizeof *s->degs);
    s->mono = calloc(n ? n : 1, sizeof *s->mono);
    if (!keys || !s->var_expr || !s->rel || !s->quo || !s->relp || !s->quop
        || !s->tail || !s->lead_var || !s->lead_pow || !s->degs || !s->mono) {
        free(keys);
        return -1;
    }
    fmpq_t ex;
    fmpq_init(ex);
    for (size_t i = 0; i < n; i++) {
        nf_atom *a = &s->atoms[i];
        if (a->kind == AT_ROOT) {
            fmpq_set_si(ex, 1, (slong)a->q);
            a->e = ch_pow_q(s->ctx, a->base, ex);
            if (!a->e) {
                fmpq_clear(ex);
                free(keys);
                return -1;
            }
        }
        keys[i].rank = a->rank;
        keys[i].group = a->group;
        keys[i].sub = a->sub;
        keys[i].id = a->kind == AT_ROOT ? a->base->id : a->e->id;
        keys[i].idx = i;
    }
    fmpq_clear(ex);
    if (n > 1) qsort(keys, n, sizeof *keys, key_cmp);
    for (size_t k = 0; k < n; k++) {
        s->atoms[keys[k].idx].var = (slong)k;
        s->var_expr[k] = s->atoms[keys[k].idx].e;
    }
    free(keys);
    fmpq_mpoly_ctx_init(s->mctx, n ? (slong)n : 1, ORD_LEX);
    s->have_mctx = 1;
    for (size_t i = 0; i < n; i++) {
        fmpq_mpoly_init(s->rel + i, s->mctx);
        fmpq_mpoly_init(s->quo + i, s->mctx);
        fmpq_mpoly_init(s->tail + i, s->mctx);
        s->relp[i] = s->rel + i;
        s->quop[i] = s->quo + i;
    }
    s->nalloc = n;
    return 0;
}

/* One pass over the terms (fits_si followed by total_degree_si is two).
 * Packed exponents (the usual case) are summed field by field in place:
 * the generic FLINT routine unpacks every monomial into fmpz's, and the
 * bound checks of the normal form call this for every operation. Unused
 * fields are zero, so every field of every word can be added. */
static slong tdeg(nf_state *s, const fmpq_mpoly_t p)
{
    const fmpz_mpoly_struct *z = p->zpoly;
    if (z->length == 0) return -1;
    if (z->bits <= 32) { /* the sum of all fields fits a slong */
        slong words = mpoly_words_per_exp_sp(z->bits, s->mctx->zctx->minfo);
        slong per = FLINT_BITS / (slong)z->bits;
        ulong mask = (UWORD(1) << z->bits) - 1;
        slong best = 0;
        for (slong i = 0; i < z->length; i++) {
            const ulong *e = z->exps + words * i;
            slong sum = 0;
            for (slong w = 0; w < words; w++)
                for (slong f = 0; f < per; f++)
                    sum += (slong)((e[w] >> (f * (slong)z->bits)) & mask);
            if (sum > best) best = sum;
        }
        return best;
    }
    fmpz_t d;
    fmpz_init(d);
    fmpq_mpoly_total_degree_fmpz(d, p, s->mctx);
    slong r = fmpz_fits_si(d) ? fmpz_get_si(d) : WORD_MAX;
    fmpz_clear(d);
    return r;
}

/* Words of packed exponents exps_or reads at most (512 variables of 8
 * bits): larger polynomials take the exact paths. */
#define OR_MAX_WORDS 64

/* The bitwise or of the packed exponents of p's terms, word by word, into
 * any: a field of the or is at least the largest exponent of its
 * variable. The number of words, or 0 when the exponents are not packed
 * in single words or take more than OR_MAX_WORDS. */
static slong exps_or(nf_state *s, const fmpq_mpoly_t p, ulong *any)
{
    const fmpz_mpoly_struct *z = p->zpoly;
    if (z->bits > FLINT_BITS) return 0;
    slong words = mpoly_words_per_exp_sp(z->bits, s->mctx->zctx->minfo);
    if (words > OR_MAX_WORDS) return 0;
    for (slong w = 0; w < words; w++) any[w] = 0;
    for (slong i = 0; i < z->length; i++)
        for (slong w = 0; w < words; w++) any[w] |= z->exps[words * i + w];
    return words;
}

/* Whether the total degree of p is at most limit. First the sum of the
 * fields of the OR of all packed exponents, a bound on the total degree
 * that costs one OR per word and term; the exact degree only when that
 * bound is over the limit. */
static int deg_at_most(nf_state *s, const fmpq_mpoly_t p, slong limit)
{
    const fmpz_mpoly_struct *z = p->zpoly;
    ulong any[OR_MAX_WORDS];
    slong words = z->length > 0 && z->bits <= 32 ? exps_or(s, p, any) : 0;
    if (words) {
        slong per = FLINT_BITS / (slong)z->bits, bound = 0;
        ulong mask = (UWORD(1) << z->bits) - 1;
        for (slong w = 0; w < words; w++)
            for (slong f = 0; f < per; f++)
                bound += (slong)((any[w] >> (f * (slong)z->bits)) & mask);
        if (bound <= limit) return 1;
    }
    return tdeg(s, p) <= limit;
}

/* The term bound only: for results of products and sums, whose degree is
 * bounded by their operands' (checked before a product is formed). The
 * total degree costs a pass over every term, as much as a sum. */
static int poly_len_ok(nf_state *s, const fmpq_mpoly_t p)
{
    if (fmpq_mpoly_length(p, s->mctx) <= s->max_terms) return 1;
    nf_fail(s, CH_ERR_LIMIT, "normal form too large");
    return 0;
}

static int poly_ok(nf_state *s, const fmpq_mpoly_t p)
{
    if (poly_len_ok(s, p) && deg_at_most(s, p, NF_MAX_DEG)) return 1;
    nf_fail(s, CH_ERR_LIMIT, "normal form too large");
    return 0;
}

/* r = a * b within the bounds (r may alias a or b). */
static int pmul(nf_state *s, fmpq_mpoly_t r, const fmpq_mpoly_t a,
                const fmpq_mpoly_t b)
{
    double la = (double)fmpq_mpoly_length(a, s->mctx);
    double lb = (double)fmpq_mpoly_length(b, s->mctx);
    if (la * lb > s->max_product
        || (!(deg_at_most(s, a, NF_MAX_DEG / 2) && deg_at_most(s, b, NF_MAX_DEG / 2))
            && tdeg(s, a) + tdeg(s, b) > NF_MAX_DEG)) {
        nf_fail(s, CH_ERR_LIMIT, "normal form too large");
        return 0;
    }
    fmpq_mpoly_mul(r, a, b, s->mctx);
    return poly_len_ok(s, r);
}

/* r = a^k within the bounds. */
static int ppow(nf_state *s, fmpq_mpoly_t r, const fmpq_mpoly_t a, ulong k)
{
    slong len = fmpq_mpoly_length(a, s->mctx);
    if (k > 1 && len > 0) {
        if (!deg_at_most(s, a, (slong)(NF_MAX_DEG / k))) goto big;
        /* at most C(len + k - 1, k) monomials */
        double bound = 1;
        for (ulong i = 1; i <= k && bound <= (double)s->max_terms; i++)
            bound = bound * (double)(len - 1 + i) / (double)i;
        if (len > 1 && bound > (double)s->max_terms) goto big;
    }
    if (!fmpq_mpoly_pow_ui(r, a, k, s->mctx)) goto big;
    return poly_ok(s, r);
big:
    nf_fail(s, CH_ERR_LIMIT, "normal form too large");
    return 0;
}

/* p with every v^k (k >= L) replaced by v^(k mod L) tail^(k div L), for
 * the relation v^L - tail; 0 when a bound is exceeded. */
static int substitute_power(nf_state *s, fmpq_mpoly_t p, slong v, ulong L,
                            const fmpq_mpoly_t tail, slong deg)
{
    const fmpq_mpoly_ctx_struct *M = s->mctx;
    fmpq_mpoly_t out, c, tpow, term;
    fmpq_mpoly_init(out, M);
    fmpq_mpoly_init(c, M);
    fmpq_mpoly_init(tpow, M);
    fmpq_mpoly_init(term, M);
    fmpq_mpoly_one(tpow, M);
    int ok = 1;
    for (ulong k = 0; ok && k <= (ulong)deg; k++) {
        if (k && k % L == 0) ok = pmul(s, tpow, tpow, tail);
        ulong e = k;
        fmpq_mpoly_get_coeff_vars_ui(c, p, &v, &e, 1, M);
        if (!ok || fmpq_mpoly_is_zero(c, M)) continue;
        fmpq_mpoly_gen(term, v, M);
        if (!fmpq_mpoly_pow_ui(term, term, k % L, M)) ok = 0;
        ok = ok && pmul(s, term, term, c) && pmul(s, term, term, tpow);
        if (ok) fmpq_mpoly_add(out, out, term, M);
        ok = ok && poly_len_ok(s, out);
    }
    if (ok) fmpq_mpoly_swap(p, out, M);
    fmpq_mpoly_clear(out, M);
    fmpq_mpoly_clear(c, M);
    fmpq_mpoly_clear(tpow, M);
    fmpq_mpoly_clear(term, M);
    return ok;
}

/* 1 when no term of p is divisible by a relation's leading power, read
 * off the or of p's exponents (exps_or): a field of the or below lead_pow
 * proves every exponent is (exactly so for lead_pow a power of two, as
 * for sin^2 and cos^2). 0 when unsure: then the degrees are computed. */
static int lead_free(nf_state *s, const fmpq_mpoly_t p)
{
    const fmpz_mpoly_struct *z = p->zpoly;
    ulong any[OR_MAX_WORDS];
    if (!exps_or(s, p, any)) return 0;
    ulong mask = z->bits == FLINT_BITS ? ~UWORD(0) : (UWORD(1) << z->bits) - 1;
    for (slong r = 0; r < s->nrel; r++) {
        slong off, shift;
        mpoly_gen_offset_shift_sp(&off, &shift, s->lead_var[r], z->bits,
                                  s->mctx->zctx->minfo);
        if (((any[off] >> shift) & mask) >= s->lead_pow[r]) return 0;
    }
    return 1;
}

/* Replaces p by its remainder modulo the relations built so far. The
 * relations are a Groebner basis whose leading monomials are powers of
 * single variables (v^L - tail, the tail below v^L), so any complete
 * reduction gives the remainder; substituting the powers directly, and
 * only where a degree reaches L, is much cheaper than the generic division
 * by the whole ideal. */
static int preduce(nf_state *s, fmpq_mpoly_t p)
{
    if (s->nrel == 0 || fmpq_mpoly_is_zero(p, s->mctx)) return 1;
    if (!s->generic_rel) {
        if (lead_free(s, p)) return poly_ok(s, p);
        for (;;) {
            fmpq_mpoly_degrees_si(s->degs, p, s->mctx);
            slong i = 0;
            while (i < s->nrel && s->degs[s->lead_var[i]] < (slong)s->lead_pow[i]) i++;
            if (i == s->nrel) return poly_ok(s, p);
            if (!substitute_power(s, p, s->lead_var[i], s->lead_pow[i], s->tail + i,
                                  s->degs[s->lead_var[i]]))
                return 0;
        }
    }
    fmpq_mpoly_t r;
    fmpq_mpoly_init(r, s->mctx);
    fmpq_mpoly_divrem_ideal(s->quop, r, p, s->relp, s->nrel, s->mctx);
    fmpq_mpoly_swap(p, r, s->mctx);
    fmpq_mpoly_clear(r, s->mctx);
    for (slong i = 0; i < s->nrel; i++) fmpq_mpoly_zero(s->quo + i, s->mctx);
    return poly_ok(s, p);
}

static void frac_init(nf_state *s, nf_frac *f)
{
    fmpq_mpoly_init(f->num, s->mctx);
    fmpq_mpoly_init(f->den, s->mctx);
    fmpq_mpoly_one(f->den, s->mctx);
}

static void frac_clear(nf_state *s, nf_frac *f)
{
    fmpq_mpoly_clear(f->num, s->mctx);
    fmpq_mpoly_clear(f->den, s->mctx);
}

static void frac_set(nf_state *s, nf_frac *f, const nf_frac *g)
{
    fmpq_mpoly_set(f->num, g->num, s->mctx);
    fmpq_mpoly_set(f->den, g->den, s->mctx);
}

/* Constant denominators are folded into the numerator; others are made
 * monic, so equal denominators compare equal. */
static int frac_normalize(nf_state *s, nf_frac *f)
{
    if (fmpq_mpoly_is_one(f->den, s->mctx)) return 1;
    fmpq_t c;
    fmpq_init(c);
    int ok = 1;
    if (fmpq_mpoly_is_fmpq(f->den, s->mctx)) {
        fmpq_mpoly_get_fmpq(c, f->den, s->mctx);
        if (fmpq_is_zero(c)) {
            nf_fail(s, CH_ERR_MATH, "division by zero");
            ok = 0;
        } else {
            fmpq_mpoly_scalar_div_fmpq(f->num, f->num, c, s->mctx);
            fmpq_mpoly_one(f->den, s->mctx);
        }
    } else {
        fmpq_mpoly_get_term_coeff_fmpq(c, f->den, 0, s->mctx);
        if (!fmpq_is_one(c)) {
            fmpq_mpoly_scalar_div_fmpq(f->num, f->num, c, s->mctx);
            fmpq_mpoly_scalar_div_fmpq(f->den, f->den, c, s->mctx);
        }
    }
    fmpq_clear(c);
    return ok;
}

/* Cancels the polynomial gcd of numerator and denominator (when FLINT can
 * compute it; a failed gcd just leaves the fraction as it is). */
static int frac_cancel(nf_state *s, nf_frac *f)
{
    if (fmpq_mpoly_is_one(f->den, s->mctx)) return 1;
    fmpq_mpoly_t g, t;
    fmpq_mpoly_init(g, s->mctx);
    fmpq_mpoly_init(t, s->mctx);
    if (fmpq_mpoly_gcd(g, f->num, f->den, s->mctx)
        && !fmpq_mpoly_is_zero(g, s->mctx) && !fmpq_mpoly_is_fmpq(g, s->mctx)) {
        if (fmpq_mpoly_divides(t, f->num, g, s->mctx)) {
            fmpq_mpoly_swap(t, f->num, s->mctx);
            if (fmpq_mpoly_divides(t, f->den, g, s->mctx))
                fmpq_mpoly_swap(t, f->den, s->mctx);
            else /* cannot happen for a gcd; undo to stay exact */
                fmpq_mpoly_mul(f->num, f->num, g, s->mctx);
        }
    }
    fmpq_mpoly_clear(g, s->mctx);
    fmpq_mpoly_clear(t, s->mctx);
    return frac_normalize(s, f);
}

/* a = a + b; *multiplied is set when the denominators differ (the
 * numerators are multiplied by cofactors). */
static int frac_add_into(nf_state *s, nf_frac *a, const nf_frac *b, int *multiplied)
{
    const fmpq_mpoly_ctx_struct *M = s->mctx;
    int ok = 1;
    fmpq_mpoly_t t, u, g;
    if (fmpq_mpoly_equal(a->den, b->den, M)) {
        fmpq_mpoly_add(a->num, a->num, b->num, M);
        return poly_len_ok(s, a->num) && frac_normalize(s, a);
    }
    *multiplied = 1;
    fmpq_mpoly_init(t, M);
    fmpq_mpoly_init(u, M);
    fmpq_mpoly_init(g, M);
    if (fmpq_mpoly_is_one(b->den, M)) {
        ok = pmul(s, t, b->num, a->den);
        if (ok) fmpq_mpoly_add(a->num, a->num, t, M);
    } else if (fmpq_mpoly_is_one(a->den, M)) {
        ok = pmul(s, t, a->num, b->den);
        if (ok) {
            fmpq_mpoly_add(a->num, t, b->num, M);
            fmpq_mpoly_set(a->den, b->den, M);
        }
    } else {
        /* a/(g A') + b/(g B') = (a B' + b A') / (g A' B') */
        const fmpq_mpoly_struct *bd = b->den, *ad = a->den;
        fmpq_mpoly_t bq, aq;
        fmpq_mpoly_init(bq, M);
        fmpq_mpoly_init(aq, M);
        if (fmpq_mpoly_gcd(g, a->den, b->den, M) && !fmpq_mpoly_is_fmpq(g, M)
            && fmpq_mpoly_divides(bq, b->den, g, M)
            && fmpq_mpoly_divides(aq, a->den, g, M)) {
            bd = bq;
            ad = aq;
        }
        ok = pmul(s, t, a->num, bd) && pmul(s, u, b->num, ad)
             && pmul(s, a->den, a->den, bd);
        if (ok) fmpq_mpoly_add(a->num, t, u, M);
        fmpq_mpoly_clear(bq, M);
        fmpq_mpoly_clear(aq, M);
    }
    fmpq_mpoly_clear(t, M);
    fmpq_mpoly_clear(u, M);
    fmpq_mpoly_clear(g, M);
    return ok && poly_len_ok(s, a->num) && frac_normalize(s, a);
}

static nf_frac *convert(nf_state *s, const ch_expr *e);

static int set_atom(nf_state *s, nf_frac *f, const ch_expr *e)
{
    uintptr_t v = (uintptr_t)ch_map_get(&s->atom_of, e->id);
    if (!v) return 0; /* pass 1 saw every atom; defensive */
    fmpq_mpoly_gen(f->num, s->atoms[v - 1].var, s->mctx);
    return 1;
}

static int conv_add(nf_state *s, const ch_expr *e, nf_frac *f)
{
    size_t n = e->n, i, built = 0;
    int ok = 1;
    nf_frac *t = calloc(n, sizeof *t);
    if (!t) return 0;
    for (i = 0; i < n && ok; i++) {
        const nf_frac *g = convert(s, e->pair[i].e);
        frac_init(s, t + i);
        built++;
        if (!g) {
            ok = 0;
            break;
        }
        frac_set(s, t + i, g);
        fmpq_mpoly_scalar_mul_fmpq(t[i].num, t[i].num, e->pair[i].c, s->mctx);
    }
    /* pairwise, so that long sums cost O(n log n) polynomial additions */
    int multiplied = 0;
    for (size_t step = 1; ok && step < n; step *= 2)
        for (i = 0; i + step < n && ok; i += 2 * step)
            ok = frac_add_into(s, t + i, t + i + step, &multiplied);
    if (ok) {
        frac_set(s, f, t);
        if (!fmpq_is_zero(e->num)) {
            multiplied |= !fmpq_mpoly_is_fmpq(f->den, s->mctx);
            fmpq_mpoly_t c;
            fmpq_mpoly_init(c, s->mctx);
            fmpq_mpoly_scalar_mul_fmpq(c, f->den, e->num, s->mctx);
            fmpq_mpoly_add(f->num, f->num, c, s->mctx);
            fmpq_mpoly_clear(c, s->mctx);
        }
        /* Every conversion's numerator is reduced (numbers and atoms are,
         * products are preduced), and a sum of reduced polynomials is
         * reduced (its monomials are theirs): only products formed for
         * a common denominator need the reduction again. */
        if (multiplied) ok = preduce(s, f->num);
    }
    for (i = 0; i < built; i++) frac_clear(s, t + i);
    free(t);
    return ok;
}

static const nf_atom *root_atom(nf_state *s, const ch_expr *b)
{
    uintptr_t v = b ? (uintptr_t)ch_map_get(&s->root_of, b->id) : 0;
    return v ? &s->atoms[v - 1] : NULL;
}

/* One factor base^ex of a product as p/q. */
static int conv_factor(nf_state *s, const ch_expr *base, const fmpq_t ex,
                       fmpq_mpoly_t p, fmpq_mpoly_t q)
{
    if (fmpz_is_one(fmpq_denref(ex))) {
        if (!fmpz_fits_si(fmpq_numref(ex))) goto big;
        slong k = fmpz_get_si(fmpq_numref(ex));
        if (k > NF_MAX_DEG || k < -NF_MAX_DEG) goto big;
        const nf_frac *g = convert(s, base);
        if (!g) return 0;
        if (k < 0 && fmpq_mpoly_is_zero(g->num, s->mctx)) {
            nf_fail(s, CH_ERR_MATH, "division by zero");
            return 0;
        }
        ulong a = (ulong)(k < 0 ? -k : k);
        return ppow(s, p, k > 0 ? g->num : g->den, a)
               && ppow(s, q, k > 0 ? g->den : g->num, a);
    }
    fmpq_t cont;
    fmpq_init(cont);
    const nf_atom *r = root_atom(s, radicand(s, base, cont));
    const nf_frac *cf = NULL;
    if (r && !fmpq_is_one(cont)) {
        const ch_expr *cp = content_pow(s, cont, ex);
        cf = cp ? convert(s, cp) : NULL;
        if (!cf) r = NULL;
    }
    fmpq_clear(cont);
    if (!r) return 0;
    fmpz_t m;
    fmpz_init(m);
    fmpz_mul_ui(m, fmpq_numref(ex), r->q);
    fmpz_divexact(m, m, fmpq_denref(ex)); /* q divides the lcm r->q */
    slong k = fmpz_fits_si(m) ? fmpz_get_si(m) : WORD_MAX;
    fmpz_clear(m);
    if (k > NF_MAX_DEG || k < -NF_MAX_DEG) goto big;
    if (!r->ready) return 0; /* cannot happen: radicands rank lower */
    ulong ak = (ulong)(k < 0 ? -k : k);
    fmpq_mpoly_t x;
    fmpq_mpoly_init(x, s->mctx);
    fmpq_mpoly_gen(x, r->var, s->mctx);
    int ok = ppow(s, k > 0 ? p : q, x, ak);
    if (ok && r->bf) /* e = rho / d^2 */
        ok = ppow(s, k > 0 ? q : p, r->bf->den, 2 * ak);
    else
        fmpq_mpoly_one(k > 0 ? q : p, s->mctx);
    fmpq_mpoly_clear(x, s->mctx);
    if (ok && cf) /* the numeric part c^ex */
        ok = pmul(s, p, p, cf->num) && pmul(s, q, q, cf->den);
    return ok;
big:
    nf_fail(s, CH_ERR_LIMIT, "normal form too large");
    return 0;
}

/* A product of atoms to non-negative integer powers, a term of an
 * expansion, that no relation reduces: its monomial, set at once where
 * conv_mul would multiply and reduce factor by factor to the same
 * polynomial (of degree at most NF_MAX_DEG, within every bound). 1 when
 * done, 0 when conv_mul must convert e. */
static int conv_monomial(nf_state *s, const ch_expr *e, nf_frac *f)
{
    ulong total = 0;
    uint32_t i;
    for (i = 0; i < e->n; i++) {
        const ch_pair *p = &e->pair[i];
        uintptr_t a = p->e->kind == CH_SYM || p->e->kind == CH_FUN
                          ? (uintptr_t)ch_map_get(&s->atom_of, p->e->id)
                          : 0;
        if (!a || !fmpz_is_one(fmpq_denref(p->c)) || fmpq_sgn(p->c) < 0
            || fmpz_cmp_ui(fmpq_numref(p->c), NF_MAX_DEG - total) > 0)
            break;
        ulong k = fmpz_get_ui(fmpq_numref(p->c));
        s->mono[s->atoms[a - 1].var] = k;
        total += k;
    }
    int done = i == e->n;
    if (done) {
        fmpq_mpoly_zero(f->num, s->mctx);
        if (!fmpq_is_zero(e->num)) { /* one term: no sorting, no like terms */
            fmpq_mpoly_push_term_fmpq_ui(f->num, e->num, s->mono, s->mctx);
            fmpq_mpoly_reduce(f->num, s->mctx);
        }
        fmpq_mpoly_one(f->den, s->mctx);
        done = lead_free(s, f->num);
    }
    while (i-- > 0) /* back to zeros for the next monomial */
        s->mono[s->atoms[(uintptr_t)ch_map_get(&s->atom_of, e->pair[i].e->id) - 1].var] = 0;
    return done;
}

static int conv_mul(nf_state *s, const ch_expr *e, nf_frac *f)
{
    if (conv_monomial(s, e, f)) return 1;
    int ok = 1;
    fmpq_mpoly_t p, q;
    fmpq_mpoly_init(p, s->mctx);
    fmpq_mpoly_init(q, s->mctx);
    fmpq_mpoly_set_fmpq(f->num, e->num, s->mctx);
    fmpq_mpoly_one(f->den, s->mctx);
    for (uint32_t i = 0; i < e->n && ok; i++) {
        ok = conv_factor(s, e->pair[i].e, e->pair[i].c, p, q);
        if (ok && !fmpq_mpoly_is_one(p, s->mctx))
            ok = pmul(s, f->num, f->num, p) && preduce(s, f->num);
        if (ok && !fmpq_mpoly_is_one(q, s->mctx))
            ok = pmul(s, f->den, f->den, q);
    }
    fmpq_mpoly_clear(p, s->mctx);
    fmpq_mpoly_clear(q, s->mctx);
    return ok && frac_normalize(s, f) && frac_cancel(s, f)
           && preduce(s, f->num);
}

static nf_frac *frac_new(nf_state *s)
{
    /* calloc, not malloc: GCC 12 -O2 otherwise reports a bogus overflow
     * (-Wstringop-overflow) on the inlined fmpq_init of the contents */
    nf_frac *f = calloc(1, sizeof *f);
    if (!f) return NULL;
    frac_init(s, f);
    f->next = s->fracs;
    s->fracs = f;
    return f;
}

/* Pass 2: the fraction of a node, cached. */
static nf_frac *convert(nf_state *s, const ch_expr *e)
{
    nf_frac *f = ch_map_get(&s->val, e->id);
    if (f) return f;
    if (!(f = frac_new(s))) return NULL;
    int ok;
    switch (e->kind) {
    case CH_NUM:
        fmpq_mpoly_set_fmpq(f->num, e->num, s->mctx);
        ok = 1;
        break;
    case CH_SYM:
        ok = set_atom(s, f, e);
        break;
    case CH_ADD:
        ok = conv_add(s, e, f);
        break;
    case CH_MUL:
        ok = conv_mul(s, e, f);
        break;
    default: {
        const ch_expr *c = canon_node(s, e);
        const nf_frac *g = c && c != e ? convert(s, c) : NULL;
        ok = c == e ? set_atom(s, f, e) : g != NULL;
        if (g) frac_set(s, f, g);
    }
    }
    if (!ok || ch_map_put(&s->val, e->id, f)) return NULL;
    return f;
}

static const ch_expr *poly_to_expr(nf_state *s, const fmpq_mpoly_t p);

static int push_rel(nf_state *s, fmpq_mpoly_t r)
{
    const fmpq_mpoly_ctx_struct *M = s->mctx;
    if (fmpq_mpoly_is_zero(r, M)) return 1; /* FLINT aborts on 0 */
    slong i = s->nrel, nv = fmpq_mpoly_ctx_nvars(M), v = -1;
    fmpq_mpoly_swap(s->rel + i, r, M);
    s->nrel++;
    /* the leading term: a power of one variable with coefficient 1? */
    fmpq_t c;
    fmpq_init(c);
    fmpq_mpoly_get_term_coeff_fmpq(c, s->rel + i, 0, M);
    int pure = fmpq_is_one(c) && fmpq_mpoly_term_exp_fits_si(s->rel + i, 0, M);
    fmpq_clear(c);
    if (pure) {
        fmpq_mpoly_get_term_exp_si(s->degs, s->rel + i, 0, M);
        for (slong j = 0; j < nv && pure; j++)
            if (s->degs[j]) {
                pure = v < 0;
                v = j;
            }
    }
    if (!pure || v < 0) {
        s->generic_rel = 1;
        return 1;
    }
    s->lead_var[i] = v;
    s->lead_pow[i] = (ulong)s->degs[v];
    fmpq_mpoly_gen(s->tail + i, v, M);
    fmpq_mpoly_pow_ui(s->tail + i, s->tail + i, s->lead_pow[i], M);
    fmpq_mpoly_sub(s->tail + i, s->tail + i, s->rel + i, M);
    return 1;
}

static int rank_cmp(const void *x, const void *y)
{
    const nf_atom *a = *(nf_atom *const *)x, *b = *(nf_atom *const *)y;
    if (a->rank != b->rank) return a->rank < b->rank ? -1 : 1;
    return (a->var > b->var) - (a->var < b->var);
}

/* The relations: cos^2 + sin^2 - 1 and cosh^2 - sinh^2 - 1 per argument,
 * then r^q - radicand by increasing rank (a radicand is converted with the
 * relations of the lower ranks already in place). */
static int nf_relations(nf_state *s)
{
    const fmpq_mpoly_ctx_struct *M = s->mctx;
    fmpq_mpoly_t c, sn, r;
    fmpq_mpoly_init(c, M);
    fmpq_mpoly_init(sn, M);
    fmpq_mpoly_init(r, M);
    int ok = 1;
    for (size_t i = 0; i < s->natoms; i++) {
        const nf_atom *a = &s->atoms[i];
        if ((a->kind != AT_CIRC && a->kind != AT_HYP) || a->sub != 0) continue;
        fmpq_mpoly_gen(c, a->var, M);
        fmpq_mpoly_gen(sn, s->atoms[a->partner].var, M);
        fmpq_mpoly_mul(c, c, c, M);
        fmpq_mpoly_mul(sn, sn, sn, M);
        if (a->kind == AT_CIRC)
            fmpq_mpoly_add(r, c, sn, M);
        else
            fmpq_mpoly_sub(r, c, sn, M);
        fmpq_mpoly_sub_si(r, r, 1, M);
        push_rel(s, r);
    }
    size_t nroot = 0;
    nf_atom **roots = malloc((s->natoms ? s->natoms : 1) * sizeof *roots);
    if (!roots) ok = 0;
    for (size_t i = 0; ok && i < s->natoms; i++)
        if (s->atoms[i].kind == AT_ROOT) roots[nroot++] = &s->atoms[i];
    if (ok && nroot > 1) qsort(roots, nroot, sizeof *roots, rank_cmp);
    for (size_t i = 0; ok && i < nroot; i++) {
        const nf_frac *b = convert(s, roots[i]->base);
        if (!b) {
            ok = 0;
            break;
        }
        nf_atom *a = roots[i];
        /* radicand polynomial: n, or n d^(2q-1) for rho = e d^2 */
        if (fmpq_mpoly_is_one(b->den, M)) {
            fmpq_mpoly_set(sn, b->num, M);
        } else {
            const ch_expr *de = poly_to_expr(s, b->den);
            ok = de && ppow(s, sn, b->den, 2 * a->q - 1) && pmul(s, sn, sn, b->num);
            if (!ok) break;
            a->bf = b;
            s->var_expr[a->var] = ch_mul(s->ctx, a->e, ch_pow_si(s->ctx, de, 2));
            if (!s->var_expr[a->var]) {
                ok = 0;
                break;
            }
        }
        fmpq_mpoly_gen(c, a->var, M);
        if (!ppow(s, r, c, a->q)) {
            ok = 0;
            break;
        }
        fmpq_mpoly_sub(r, r, sn, M);
        push_rel(s, r);
        a->ready = 1;
    }
    free(roots);
    fmpq_mpoly_clear(c, M);
    fmpq_mpoly_clear(sn, M);
    fmpq_mpoly_clear(r, M);
    return ok;
}

/* The normal form of e: its fraction with the numerator fully reduced. */
static nf_frac *nf_run(nf_state *s, const ch_expr *e)
{
    if (collect(s, e) < 0 || nf_setup_ring(s) || !nf_relations(s)) return NULL;
    nf_frac *f = convert(s, e);
    if (!f || !preduce(s, f->num)) return NULL;
    return f;
}

int ch_simplify_is_zero(ch_ctx *ctx, const ch_expr *e)
{
    if (!e) return -1;
    if (e->kind == CH_NUM) return fmpq_is_zero(e->num) ? 1 : 0;
    if (e->kind == CH_SYM) return 0;
    if (ch_dag_size_capped(e, NF_ZERO_MAX_DAG) > NF_ZERO_MAX_DAG) return -1;
    nf_state s;
    nf_init(&s, ctx);
    nf_frac *f = nf_run(&s, e);
    int r = f ? fmpq_mpoly_is_zero(f->num, s.mctx) : -1;
    nf_clear(&s);
    return r;
}

/* A polynomial back as an expression over the atoms. */
static const ch_expr *poly_to_expr(nf_state *s, const fmpq_mpoly_t p)
{
    slong len = fmpq_mpoly_length(p, s->mctx);
    slong nv = (slong)s->natoms;
    if (len == 0) return ch_zero(s->ctx);
    fmpq *cs = calloc((size_t)len, sizeof *cs);
    const ch_expr **terms = calloc((size_t)len, sizeof *terms);
    const ch_expr **fac = malloc((size_t)(nv ? nv : 1) * sizeof *fac);
    slong *exps = malloc((size_t)(nv ? nv : 1) * sizeof *exps);
    const ch_expr *res = NULL;
    slong i = 0;
    if (!cs || !terms || !fac || !exps) goto out;
    for (; i < len; i++) {
        fmpq_init(cs + i);
        fmpq_mpoly_get_term_coeff_fmpq(cs + i, p, i, s->mctx);
        size_t nf = 0;
        if (nv) fmpq_mpoly_get_term_exp_si(exps, p, i, s->mctx);
        for (slong v = 0; v < nv; v++)
            if (exps[v]) fac[nf++] = ch_pow_si(s->ctx, s->var_expr[v], exps[v]);
        terms[i] = ch_mul_n(s->ctx, nf, fac);
        if (!terms[i]) {
            i++;
            goto out;
        }
    }
    res = ch_lincomb(s->ctx, NULL, (size_t)len, cs, terms);
out:
    for (slong j = 0; j < i; j++) fmpq_clear(cs + j);
    free(cs);
    free(terms);
    free(fac);
    free(exps);
    return res;
}

/* A lower bound of ch_tree_size(poly_to_expr(s, p)), counted up to cap:
 * every variable of a term is a factor of that term's product. */
static size_t poly_tree_lower(nf_state *s, const fmpq_mpoly_t p, size_t cap)
{
    slong len = fmpq_mpoly_length(p, s->mctx), nv = (slong)s->natoms;
    if (nv == 0) return len > 0;
    slong *exps = malloc((size_t)nv * sizeof *exps);
    if (!exps) return 0;
    size_t n = 0;
    for (slong i = 0; i < len && n < cap; i++) {
        fmpq_mpoly_get_term_exp_si(exps, p, i, s->mctx);
        for (slong v = 0; v < nv; v++) n += exps[v] != 0;
    }
    free(exps);
    return n;
}

/* Whether e is a polynomial over atoms that the normal form keeps as
 * they are in an expansion: numbers, symbols and functions other than
 * tan and tanh (canon_node writes those as quotients), under sums and
 * products with non-negative integer exponents. Such an e and its
 * expansion are one polynomial over the same atoms (canon_node expands
 * arguments as ch_expand does), so they have one normal form. seen: ids
 * already found polynomial. 1, 0, or -1 when out of memory. */
static int polynomial(const ch_expr *e, ch_map *seen)
{
    switch (e->kind) {
    case CH_NUM:
    case CH_SYM:
        return 1;
    case CH_FUN:
        return e->fun != CH_F_TAN && e->fun != CH_F_TANH;
    case CH_ADD:
    case CH_MUL:
        break;
    default:
        return 0;
    }
    if (ch_map_get(seen, e->id)) return 1;
    for (uint32_t i = 0; i < e->n; i++) {
        const fmpq *c = e->pair[i].c;
        if (e->kind == CH_MUL && (!fmpz_is_one(fmpq_denref(c)) || fmpq_sgn(c) < 0))
            return 0;
        int r = polynomial(e->pair[i].e, seen);
        if (r <= 0) return r;
    }
    return ch_map_put(seen, e->id, (void *)1) ? -1 : 1;
}

/* polynomial() of a whole DAG; 0 also when out of memory. */
static int is_polynomial(const ch_expr *e)
{
    ch_map seen;
    ch_map_init(&seen);
    int r = polynomial(e, &seen);
    ch_map_free(&seen);
    return r == 1;
}

/* The expansion of a polynomial e when ch_expand already made it (the
 * display tidy tries the expansion first): its normal form costs a sum of
 * monomials, where e's costs the products of the expansion over again in
 * polynomial arithmetic. e otherwise. */
static const ch_expr *expanded_if_known(ch_ctx *ctx, const ch_expr *e)
{
    const ch_expr *x = ch_map_get(ch_ctx_memo(ctx, CH_MEMO_EXPAND), e->id);
    return x && x != e && is_polynomial(e) ? x : e;
}

/* Whether a term of an expansion (a product of atoms, or an atom) is
 * free of the relations' leading monomials cos(u)^2 and cosh(u)^2. 0
 * also for anything but atoms and their products. */
static int term_reduced(const ch_expr *t)
{
    uint32_t n = t->kind == CH_MUL ? t->n : 1;
    for (uint32_t i = 0; i < n; i++) {
        const ch_expr *a = t->kind == CH_MUL ? t->pair[i].e : t;
        if (a->kind == CH_SYM) continue;
        if (a->kind != CH_FUN) return 0;
        if ((a->fun == CH_F_COS || a->fun == CH_F_COSH) && t->kind == CH_MUL
            && fmpz_cmp_ui(fmpq_numref(t->pair[i].c), 2) >= 0)
            return 0;
    }
    return 1;
}

int ch_normal_form_is_expansion(ch_ctx *ctx, const ch_expr *e, const ch_expr *x)
{
    if (!e || !x || ch_map_get(ch_ctx_memo(ctx, CH_MEMO_EXPAND), e->id) != x) return 0;
    uint32_t n = x->kind == CH_ADD ? x->n : 1;
    for (uint32_t i = 0; i < n; i++) {
        const ch_expr *t = x->kind == CH_ADD ? x->pair[i].e : x;
        if (t->kind != CH_NUM && !term_reduced(t)) return 0;
    }
    return is_polynomial(e);
}

const ch_expr *ch_simplify_within(ch_ctx *ctx, const ch_expr *e, size_t max_tree)
{
    if (!e) return NULL;
    if (e->kind == CH_NUM || e->kind == CH_SYM) return e;
    nf_state s;
    nf_init(&s, ctx);
    size_t cap = (size_t)(NF_MAX_TERMS - SIMPLIFY_MIN_TERMS) / SIMPLIFY_TERMS_PER_NODE;
    size_t size = ch_dag_size_capped(e, cap);
    if (size <= cap) {
        s.max_terms = (slong)(SIMPLIFY_TERMS_PER_NODE * size + SIMPLIFY_MIN_TERMS);
        s.max_product = SIMPLIFY_PRODUCT_PER_TERM * (double)s.max_terms;
    }
    const ch_expr *res = NULL;
    nf_frac *f = nf_run(&s, expanded_if_known(ctx, e));
    if (f && frac_cancel(&s, f) && preduce(&s, f->num)) {
        /* building a form that cannot be within max_tree is the costly
         * part of a normal form that does not shorten */
        size_t lower = poly_tree_lower(&s, f->num, max_tree);
        if (lower < max_tree) lower += poly_tree_lower(&s, f->den, max_tree - lower);
        if (lower >= max_tree) {
            nf_fail(&s, CH_ERR_LIMIT, "normal form not shorter");
        } else {
            const ch_expr *n = poly_to_expr(&s, f->num);
            res = fmpq_mpoly_is_one(f->den, s.mctx)
                      ? n
                      : ch_div(ctx, n, poly_to_expr(&s, f->den));
        }
    }
    if (!res)
        ch_ctx_fail(ctx, s.why ? s.why : CH_ERR_LIMIT, "simplify: %s",
                    s.msg ? s.msg : "normal form failed");
    nf_clear(&s);
    return res;
}

const ch_expr *ch_simplify(ch_ctx *ctx, const ch_expr *e)
{
    return ch_simplify_within(ctx, e, SIZE_MAX);
}

/* Whether e, a sum or product, has a factor sin(u)^a, cos(u)^a, sinh(u)^a
 * or cosh(u)^a with a >= 2 within `levels` levels of sums and products. */
static int has_trig_square(const ch_expr *e, int levels)
{
    if ((e->kind != CH_ADD && e->kind != CH_MUL) || levels == 0) return 0;
    for (uint32_t i = 0; i < e->n; i++) {
        const ch_expr *f = e->pair[i].e;
        int trig = f->kind == CH_FUN && (f->fun == CH_F_SIN || f->fun == CH_F_COS
                                         || f->fun == CH_F_SINH || f->fun == CH_F_COSH);
        if (e->kind == CH_MUL && trig && fmpq_cmp_si(e->pair[i].c, 2) >= 0) return 1;
        if (has_trig_square(f, levels - 1)) return 1;
    }
    return 0;
}

#define TRIG_SQUARES_MAX_NODES 64
#define TRIG_SQUARES_LEVELS 4

const ch_expr *ch_simplify_trig_squares(ch_ctx *ctx, const ch_expr *e)
{
    if (!e || ch_ctx_error(ctx)->code != CH_OK || e->kind != CH_ADD
        || ch_dag_size_capped(e, TRIG_SQUARES_MAX_NODES) > TRIG_SQUARES_MAX_NODES
        || !has_trig_square(e, TRIG_SQUARES_LEVELS))
        return e;
    const ch_expr *s = ch_simplify(ctx, e);
    if (!s) {
        ch_ctx_clear_error(ctx);
        return e;
    }
    size_t size = ch_tree_size(ctx, e, SIZE_MAX - 1);
    return ch_tree_size(ctx, s, size) < size ? s : e;
}

/* The factors of a sum's term: a product's, or the term itself. */
static size_t term_factors(const ch_expr *t, const ch_pair **f, ch_pair *one)
{
    if (t->kind == CH_MUL && fmpq_is_one(t->num)) {
        *f = t->pair;
        return t->n;
    }
    one->e = t;
    *f = one;
    return 1;
}

const ch_expr *ch_common_factor(ch_ctx *ctx, const ch_expr *e)
{
    if (!e || e->kind != CH_ADD || !fmpq_is_zero(e->num) || e->n < 2) return e;
    ch_pair one0, one;
    one0.c = one.c = ch_one(ctx)->num;
    const ch_pair *f0;
    size_t n0 = term_factors(e->pair[0].e, &f0, &one0);
    /* exp[j]: the least exponent of f0[j] over the terms so far, 0 when
     * some term lacks it */
    fmpq *exp = _fmpq_vec_init((slong)n0);
    size_t alive = 0;
    for (size_t j = 0; j < n0; j++)
        if (fmpq_sgn(f0[j].c) > 0) {
            fmpq_set(exp + j, f0[j].c);
            alive++;
        }
    for (size_t i = 1; i < e->n && alive; i++) {
        const ch_pair *f;
        size_t nf = term_factors(e->pair[i].e, &f, &one);
        for (size_t j = 0; j < n0; j++) {
            if (fmpq_is_zero(exp + j)) continue;
            size_t l = 0;
            while (l < nf && f[l].e != f0[j].e) l++;
            if (l == nf || fmpq_sgn(f[l].c) <= 0) {
                fmpq_zero(exp + j);
                alive--;
            } else if (fmpq_cmp(f[l].c, exp + j) < 0) {
                fmpq_set(exp + j, f[l].c);
            }
        }
    }
    const ch_expr *res = e;
    if (alive) {
        /* the constructors pass a NULL (a failed context) through */
        fmpq_t g;
        fmpq_init(g);
        fmpq_set(g, e->pair[0].c);
        for (size_t i = 1; i < e->n; i++) fmpq_gcd(g, g, e->pair[i].c);
        if (fmpq_sgn(e->pair[0].c) < 0) fmpq_neg(g, g);
        const ch_expr *content = ch_num_q(ctx, g);
        fmpq_clear(g);
        for (size_t j = 0; j < n0; j++)
            if (!fmpq_is_zero(exp + j))
                content = ch_mul(ctx, content, ch_pow_q(ctx, f0[j].e, exp + j));
        const ch_expr **t = malloc(e->n * sizeof *t);
        if (!t) ch_ctx_fail(ctx, CH_ERR_MEMORY, "out of memory");
        for (size_t i = 0; t && i < e->n; i++)
            t[i] = ch_div(ctx, ch_scale(ctx, e->pair[i].c, e->pair[i].e), content);
        res = t ? ch_mul(ctx, content, ch_add_n(ctx, e->n, t)) : NULL;
        free(t);
    }
    _fmpq_vec_clear(exp, (slong)n0);
    return res;
}
