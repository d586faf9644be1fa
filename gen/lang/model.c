/* model.c — statements, names and checks of the model language (SPEC §1).
 *
 * One pass over the statements builds the model; a cheap pre-scan before
 * it records where each name is declared, so that a use before the
 * declaration is reported as such ("parameter 'm' used before its
 * definition at 7:12") rather than as an unknown identifier. Names live in
 * one namespace (coordinates, parameters, defines, integrals, fields) held
 * in a string hash table local to the parse; the context's symbol table is
 * not consulted for lookups because it may hold symbols the model did not
 * declare (x_t, lambda_1, ...).
 *
 * Each statement has a handler in a table (keyword, once-only flag). Which
 * names an expression may use depends on the statement: parameter and
 * initial values must be constants, field components must not depend on
 * velocities; the resolver enforces this at the offending token. */
#define _POSIX_C_SOURCE 200809L /* open, fstat, fcntl, fdopen */
#include "lang/model.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/diff.h"
#include "core/eval.h"
#include "lang/parse.h"

#define NAME_BUF (CH_MAX_IDENT_LEN + 8) /* a name plus "_tt" or "y_" */

/* ---- growable arrays (malloc'd during the parse, copied to the arena) - */

typedef struct {
    void *v;
    size_t n, cap;
} vec;

typedef struct {
    const ch_expr *sym, *value;
    double def;
    ch_pos pos;
} param_item;

typedef struct {
    const ch_expr *orig, *vel;
    int holonomic;
    ch_pos pos;
} constraint_item;

typedef struct {
    const char *name;
    ch_pos pos;
} coord_item;

/* ---- the name table ----------------------------------------------------- */

typedef enum { N_COORD, N_PARAM, N_DEFINE, N_INTEGRAL, N_FIELD, N_EVENT } name_kind;

static const char *const kind_word[] = {"coordinate", "parameter", "define",
                                        "integral", "field", "event"};
static const char *const kind_article[] = {"a", "a", "a", "an", "a", "an"};

typedef struct {
    const char *name;     /* arena copy; NULL marks a free slot */
    name_kind kind;
    int defined;          /* 0: only seen by the pre-scan, declared later */
    ch_pos pos;           /* of the (first) declaration */
    int index;            /* coordinate or parameter number */
    const ch_expr *expr;  /* symbol node, or the define's value */
    const ch_expr *dexpr; /* define: its time derivative, built on first use */
    int has_vel, is_const;    /* define: of its value ... */
    int d_has_vel, d_is_const; /* ... and of dexpr */
} entry;

typedef struct {
    entry *slot;
    size_t cap, len;
} table;

/* ---- the builder -------------------------------------------------------- */

typedef enum { R_ANY, R_CONST, R_NO_VEL } rmode;

/* Statement kinds, the index into the handler table. */
enum {
    ST_MODEL, ST_COORDINATES, ST_PARAMETERS, ST_DEFINE, ST_LAGRANGIAN,
    ST_CONSTRAINT, ST_FORCE, ST_DEPENDENT, ST_INITIAL, ST_INTEGRAL, ST_FIELD,
    ST_EVENT, ST_COUNT
};

typedef struct {
    ch_ctx *ctx;
    ch_parser p;
    ch_model *m;
    table names;
    vec coords, params, defines, constraints, integrals, fields, dependent;
    vec events, event_stop;
    ch_pos seen[ST_COUNT]; /* first position of each statement kind */
    char *comp_given; /* n flags */
    ch_token field_name;         /* of the field being parsed */
    /* what the expression being parsed may use */
    rmode mode;
    const char *what;       /* "a parameter value", ... for messages */
    const char *cur_define; /* the define being defined, or NULL */
    /* what the names used in it bring in: a define's flags come from
     * these, so that a chain of defines costs no walk over its DAG */
    int used_vel, used_var;
} mbuild;

static int oom(mbuild *b)
{
    return ch_parse_fail(&b->p, NULL, CH_ERR_MEMORY, "out of memory");
}

/* "BEFORE 'token'AFTER" at the token. */
static int fail_tok(mbuild *b, const ch_token *t, const char *before,
                    const char *after)
{
    char d[96];
    ch_tok_describe(t, d, sizeof d);
    return ch_parse_fail(&b->p, t, CH_ERR_MODEL, "%s%s%s", before, d, after);
}

/* A zeroed new last element, or NULL (error set). */
static void *vec_push(mbuild *b, vec *a, size_t elem)
{
    if (a->n == a->cap) {
        size_t cap = a->cap ? 2 * a->cap : 8;
        void *v = realloc(a->v, cap * elem);
        if (!v) {
            oom(b);
            return NULL;
        }
        a->v = v;
        a->cap = cap;
    }
    void *e = (char *)a->v + a->n++ * elem;
    memset(e, 0, elem);
    return e;
}

/* The elements in arena memory; NULL for none (or on error, then set). */
static void *vec_to_arena(mbuild *b, const vec *a, size_t elem)
{
    if (a->n == 0) return NULL;
    void *d = ch_ctx_alloc(b->ctx, a->n * elem);
    if (!d) {
        oom(b);
        return NULL;
    }
    memcpy(d, a->v, a->n * elem);
    return d;
}

static uint64_t name_hash(const char *s, size_t n)
{
    uint64_t h = 1469598103934665603ULL;
    for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 1099511628211ULL;
    return h;
}

static entry *table_find(const table *t, const char *s, size_t n)
{
    if (!t->cap) return NULL;
    for (size_t i = name_hash(s, n) & (t->cap - 1);; i = (i + 1) & (t->cap - 1)) {
        entry *e = &t->slot[i];
        if (!e->name) return NULL;
        if (strlen(e->name) == n && memcmp(e->name, s, n) == 0) return e;
    }
}

static int table_grow(table *t)
{
    size_t cap = t->cap ? 2 * t->cap : 64;
    entry *slot = calloc(cap, sizeof *slot);
    if (!slot) return -1;
    for (size_t i = 0; i < t->cap; i++) {
        entry *e = &t->slot[i];
        if (!e->name) continue;
        size_t j = name_hash(e->name, strlen(e->name)) & (cap - 1);
        while (slot[j].name) j = (j + 1) & (cap - 1);
        slot[j] = *e;
    }
    free(t->slot);
    t->slot = slot;
    t->cap = cap;
    return 0;
}

/* A new entry for a name known to be absent (NULL on out of memory). */
static entry *table_add(mbuild *b, const char *s, size_t n)
{
    table *t = &b->names;
    if (2 * (t->len + 1) > t->cap && table_grow(t)) return NULL;
    char name[NAME_BUF];
    snprintf(name, sizeof name, "%.*s", (int)n, s);
    const char *copy = ch_ctx_strdup(b->ctx, name);
    if (!copy) return NULL;
    size_t i = name_hash(s, n) & (t->cap - 1);
    while (t->slot[i].name) i = (i + 1) & (t->cap - 1);
    t->slot[i].name = copy;
    t->len++;
    return &t->slot[i];
}

/* ---- names -------------------------------------------------------------- */

static ch_pos tok_pos(const ch_token *t)
{
    ch_pos p = {t->line, t->col};
    return p;
}

/* A token standing for a remembered position, for ch_parse_fail. */
static ch_token pos_token(ch_pos pos)
{
    ch_token t = {.line = pos.line, .col = pos.col};
    return t;
}

static int isalpha_ascii(int c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z');
}

static int isalnum_ascii(int c)
{
    return isalpha_ascii(c) || (c >= '0' && c <= '9');
}

static int is_c_keyword(const char *s)
{
    static const char *const kw[] = {
        "auto", "break", "case", "char", "const", "continue", "default",
        "do", "double", "else", "enum", "extern", "float", "for", "goto",
        "if", "inline", "int", "long", "register", "restrict", "return",
        "short", "signed", "sizeof", "static", "struct", "switch", "typedef",
        "union", "unsigned", "void", "volatile", "while"};
    for (size_t i = 0; i < sizeof kw / sizeof kw[0]; i++)
        if (strcmp(s, kw[i]) == 0) return 1;
    return 0;
}

/* Python keywords that are not C keywords: the SymPy and JSON outputs are
 * Python expressions, where a symbol named `lambda` cannot be parsed. */
static int is_python_keyword(const char *s)
{
    static const char *const kw[] = {
        "False", "None", "True", "and", "as", "assert", "async", "await",
        "class", "def", "del", "elif", "except", "finally", "from", "global",
        "import", "in", "is", "lambda", "nonlocal", "not", "or", "pass",
        "raise", "try", "with", "yield"};
    for (size_t i = 0; i < sizeof kw / sizeof kw[0]; i++)
        if (strcmp(s, kw[i]) == 0) return 1;
    return 0;
}

static int ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && strcmp(s + n - k, suffix) == 0;
}

/* Why a model name may not be declared, or NULL. */
static const char *reserved_reason(const char *s)
{
    if (strcmp(s, "t") == 0) return "time";
    if (strcmp(s, "pi") == 0) return "the constant pi";
    if (ch_parse_function(s, strlen(s)) >= 0) return "a function name";
    if (is_c_keyword(s)) return "a C keyword";
    if (is_python_keyword(s))
        return "a Python keyword: the SymPy and JSON outputs could not be read";
    if (ends_with(s, "_t") || ends_with(s, "_tt"))
        return "names ending in _t or _tt denote velocities and "
               "accelerations";
    if (strncmp(s, "lambda_", 7) == 0 && s[7]
        && strspn(s + 7, "0123456789") == strlen(s + 7))
        return "the name of a Lagrange multiplier";
    return NULL;
}

static void tok_name(const ch_token *t, char buf[NAME_BUF])
{
    snprintf(buf, NAME_BUF, "%.*s", (int)t->len, t->text);
}

/* Requires a plain name (no prime) at the current token; `what` is for
 * the message. Moves past it and returns it in *t. */
static int expect_name(mbuild *b, ch_token *t, const char *what)
{
    *t = b->p.tok;
    if (t->kind == CH_TOK_IDENT && t->primes == 0)
        return ch_parse_advance(&b->p);
    char before[64];
    snprintf(before, sizeof before, "expected %s, found ", what);
    return fail_tok(b, t, before, "");
}

/* Checks that `t` may be declared now: not reserved, not taken. */
static int check_new_name(mbuild *b, const ch_token *t)
{
    char name[NAME_BUF];
    tok_name(t, name);
    const char *why = reserved_reason(name);
    if (why)
        return ch_parse_fail(&b->p, t, CH_ERR_MODEL, "reserved name '%s' (%s)",
                             name, why);
    entry *e = table_find(&b->names, t->text, t->len);
    if (e && e->defined)
        return ch_parse_fail(&b->p, t, CH_ERR_MODEL,
                             "duplicate name '%s' (already %s %s at %d:%d)",
                             name, kind_article[e->kind], kind_word[e->kind],
                             e->pos.line, e->pos.col);
    return 0;
}

/* Declares `t` (already checked) as a name of this kind. */
static entry *declare(mbuild *b, const ch_token *t, name_kind kind)
{
    entry *e = table_find(&b->names, t->text, t->len);
    if (!e && !(e = table_add(b, t->text, t->len))) {
        oom(b);
        return NULL;
    }
    e->kind = kind;
    e->defined = 1;
    e->pos = tok_pos(t);
    return e;
}

static entry *check_and_declare(mbuild *b, const ch_token *t, name_kind kind)
{
    return check_new_name(b, t) ? NULL : declare(b, t, kind);
}

/* "unknown identifier", with a hint for the SPEC §3 spellings x_t, x_tt. */
static void unknown_identifier(mbuild *b, const ch_token *t, const char *name)
{
    char hint[2 * NAME_BUF + 48] = "";
    size_t n = strlen(name);
    if (ends_with(name, "_tt"))
        snprintf(hint, sizeof hint, " (models cannot use accelerations)");
    else if (ends_with(name, "_t") && n > 2)
        snprintf(hint, sizeof hint, " (write %.*s' for the velocity of %.*s)",
                 (int)(n - 2), name, (int)(n - 2), name);
    ch_parse_fail(&b->p, t, CH_ERR_MODEL, "unknown identifier '%s'%s", name,
                  hint);
}

/* The declared entry of a name used at `t`, or NULL with the error. */
static entry *lookup(mbuild *b, const ch_token *t)
{
    char name[NAME_BUF];
    tok_name(t, name);
    entry *e = table_find(&b->names, t->text, t->len);
    if (e && e->defined) return e;
    if (e && b->cur_define && strcmp(b->cur_define, name) == 0)
        ch_parse_fail(&b->p, t, CH_ERR_MODEL, "define '%s' refers to itself",
                      name);
    else if (e)
        ch_parse_fail(&b->p, t, CH_ERR_MODEL,
                      "%s '%s' used before its definition at %d:%d",
                      kind_word[e->kind], name, e->pos.line, e->pos.col);
    else if (t->primes)
        fail_tok(b, t, "velocity of a non-coordinate ", " (unknown name)");
    else
        unknown_identifier(b, t, name);
    return NULL;
}

/* The index of the coordinate named at `t`, or -1 with the error
 * "BEFORE 'name'AFTER" where the name is declared as something else. */
static int lookup_coord(mbuild *b, const ch_token *t, const char *before,
                        const char *after)
{
    entry *e = lookup(b, t);
    if (!e) return -1;
    return e->kind == N_COORD ? e->index : fail_tok(b, t, before, after);
}

/* ---- resolving names inside expressions --------------------------------- */

static int is_constant(const ch_expr *e)
{
    static const ch_sym_kind var[] = {CH_SYM_TIME, CH_SYM_COORD, CH_SYM_VEL,
                                      CH_SYM_ACC, CH_SYM_PARAM, CH_SYM_OTHER};
    for (size_t i = 0; i < sizeof var / sizeof var[0]; i++)
        if (ch_has_sym_kind(e, var[i])) return 0;
    return 1;
}

typedef struct {
    const ch_expr *e;
    int has_vel, is_const;
} resolved;

/* A define's value or, with a prime, its total time derivative. */
static int resolve_define(mbuild *b, const ch_token *t, entry *e, resolved *r)
{
    if (t->primes == 0) {
        *r = (resolved){e->expr, e->has_vel, e->is_const};
        return 0;
    }
    if (t->primes > 1)
        return fail_tok(b, t, "second derivative ",
                        " is not allowed in models (no accelerations)");
    if (e->has_vel)
        return fail_tok(b, t, "derivative ",
                        " is not available: the define depends on "
                        "velocities (it would need accelerations)");
    if (!e->dexpr) {
        e->dexpr = ch_parse_check(&b->p, t, ch_diff_t(b->ctx, e->expr));
        if (!e->dexpr) return -1;
        e->d_has_vel = ch_has_sym_kind(e->dexpr, CH_SYM_VEL);
        e->d_is_const = is_constant(e->dexpr);
    }
    *r = (resolved){e->dexpr, e->d_has_vel, e->d_is_const};
    return 0;
}

static int resolve_entry(mbuild *b, const ch_token *t, resolved *r)
{
    entry *e = table_find(&b->names, t->text, t->len);
    if (e && (e->kind == N_INTEGRAL || e->kind == N_FIELD || e->kind == N_EVENT))
        return ch_parse_fail(&b->p, t, CH_ERR_MODEL,
                             "%s '%s' cannot be used in an expression",
                             kind_word[e->kind], e->name);
    if (!(e = lookup(b, t))) return -1;
    switch (e->kind) {
    case N_COORD:
        if (t->primes > 1)
            return fail_tok(b, t, "acceleration ",
                            " is not allowed in models");
        *r = (resolved){t->primes ? b->m->qt[e->index] : e->expr, t->primes,
                        0};
        return 0;
    case N_PARAM:
        if (t->primes) return fail_tok(b, t, "velocity of a non-coordinate ", "");
        *r = (resolved){e->expr, 0, 0};
        return 0;
    default: return resolve_define(b, t, e, r);
    }
}

static int resolve_name(mbuild *b, const ch_token *t, resolved *r)
{
    int is_t = t->len == 1 && t->text[0] == 't';
    int is_pi = t->len == 2 && memcmp(t->text, "pi", 2) == 0;
    if (!is_t && !is_pi) return resolve_entry(b, t, r);
    if (t->primes) return fail_tok(b, t, "velocity of a non-coordinate ", "");
    *r = (resolved){is_t ? b->m->t : ch_pi(b->ctx), 0, is_pi};
    return ch_parse_check(&b->p, t, r->e) ? 0 : -1;
}

static const ch_expr *resolver(void *data, ch_parser *p, const ch_token *t)
{
    mbuild *b = data;
    (void)p;
    resolved r = {NULL, 0, 0};
    if (resolve_name(b, t, &r)) return NULL;
    b->used_vel |= r.has_vel;
    b->used_var |= !r.is_const;
    char before[96];
    if (b->mode == R_CONST && !r.is_const) {
        snprintf(before, sizeof before, "%s must be a constant, but ", b->what);
        fail_tok(b, t, before, " is not");
        return NULL;
    }
    if (b->mode == R_NO_VEL && r.has_vel) {
        snprintf(before, sizeof before,
                 "%s must not depend on velocities, but ", b->what);
        fail_tok(b, t, before, " does");
        return NULL;
    }
    return r.e;
}

static const ch_expr *parse_expr_as(mbuild *b, rmode mode, const char *what)
{
    b->mode = mode;
    b->what = what;
    b->used_vel = b->used_var = 0;
    const ch_expr *e = ch_parse_expr(&b->p);
    b->mode = R_ANY;
    return e;
}

/* ---- constant values ---------------------------------------------------- */

/* Rounds a ball to the nearest double when both ends round alike (the
 * bounds are rounded outwards, so then the value rounds alike too). */
static int ball_to_double(const arb_t x, double *out)
{
    arf_t lo, hi;
    arf_init(lo);
    arf_init(hi);
    arb_get_lbound_arf(lo, x, 64);
    arb_get_ubound_arf(hi, x, 64);
    double a = arf_get_d(lo, ARF_RND_NEAR), c = arf_get_d(hi, ARF_RND_NEAR);
    arf_clear(lo);
    arf_clear(hi);
    if (a == c) *out = a;
    return a == c;
}

/* The correctly rounded double of a constant expression: exact for
 * rationals, else by ball arithmetic at rising precision. A value whose
 * ball never separates from a rounding boundary (sin(pi) = 0) takes the
 * midpoint of the last ball. Low precision may fail where more succeeds
 * (sin(1e4000)). Nonzero when undefined or not finite. */
static int const_to_double(ch_ctx *ctx, const ch_expr *e, double *out)
{
    if (ch_is_num(e)) {
        *out = ch_fmpq_to_double(e->num);
        return !isfinite(*out);
    }
    slong nsyms = (slong)ch_ctx_nsyms(ctx) + 1;
    arb_ptr sym = _arb_vec_init(nsyms); /* constants read none of them */
    arb_t v;
    arb_init(v);
    int ok = 0;
    for (slong prec = 128; prec <= 65536; prec *= 2) {
        if (ch_eval_arb(ctx, v, e, sym, prec)) continue;
        ok = 1;
        *out = arf_get_d(arb_midref(v), ARF_RND_NEAR);
        if (ball_to_double(v, out)) break;
    }
    arb_clear(v);
    _arb_vec_clear(sym, nsyms);
    return !ok || !isfinite(*out);
}

/* A constant expression and its double, for `parameters` and `initial`. */
static const ch_expr *parse_value(mbuild *b, const ch_token *name,
                                  const char *what, double *out)
{
    const ch_expr *e = parse_expr_as(b, R_CONST, what);
    if (!e) return NULL;
    if (const_to_double(b->ctx, e, out)) {
        fail_tok(b, name, "value of ", " is not a finite real number");
        return NULL;
    }
    return e;
}

/* ---- statements --------------------------------------------------------- */

/* Calls item() for one or more items, separated by blanks or commas, up
 * to the end of the statement. */
static int for_items(mbuild *b, int (*item)(mbuild *))
{
    do {
        if (item(b)) return -1;
        if (b->p.tok.kind == CH_TOK_COMMA && ch_parse_advance(&b->p))
            return -1;
    } while (!ch_parse_at_end(&b->p));
    return 0;
}

static int st_model(mbuild *b, const ch_token *kw)
{
    (void)kw;
    ch_token t;
    if (expect_name(b, &t, "a model name")) return -1;
    char name[NAME_BUF];
    tok_name(&t, name);
    if (is_c_keyword(name))
        return ch_parse_fail(&b->p, &t, CH_ERR_MODEL,
                             "reserved name '%s' (a C keyword)", name);
    b->m->name = ch_ctx_strdup(b->ctx, name);
    b->m->name_pos = tok_pos(&t);
    return b->m->name ? 0 : oom(b);
}

static int coord_item_fn(mbuild *b)
{
    ch_token t;
    if (expect_name(b, &t, "a coordinate name")) return -1;
    if (b->coords.n >= CH_MAX_COORDS)
        return ch_parse_fail(&b->p, &t, CH_ERR_LIMIT,
                             "too many coordinates (max %d)", CH_MAX_COORDS);
    entry *e = check_and_declare(b, &t, N_COORD);
    coord_item *c = e ? vec_push(b, &b->coords, sizeof *c) : NULL;
    if (!c) return -1;
    e->index = (int)(b->coords.n - 1);
    c->name = e->name;
    c->pos = tok_pos(&t);
    return 0;
}

/* The symbol `name` of this kind, or an error where the context already
 * has that name for something else (a context shared between models). */
static const ch_expr *make_symbol(mbuild *b, const char *name,
                                  ch_sym_kind kind, const char *base,
                                  int order, int index, ch_pos pos)
{
    const ch_expr *s = ch_symbol(b->ctx, name, kind, base, order, index);
    if (!s) {
        oom(b);
        return NULL;
    }
    if (ch_sym_of(s)->kind != kind || ch_sym_of(s)->index != index
        || ch_sym_of(s)->order != order) {
        ch_token at = pos_token(pos);
        ch_parse_fail(&b->p, &at, CH_ERR_MODEL,
                      "name '%s' clashes with a symbol already in this "
                      "context",
                      name);
        return NULL;
    }
    return s;
}

/* q, q_t, q_tt of coordinate i with the dot chain q -> q_t -> q_tt. */
static int make_coordinate(mbuild *b, size_t i)
{
    ch_model *m = b->m;
    const coord_item *c = (const coord_item *)b->coords.v + i;
    char vel[NAME_BUF], acc[NAME_BUF];
    snprintf(vel, sizeof vel, "%s_t", c->name);
    snprintf(acc, sizeof acc, "%s_tt", c->name);
    int idx = (int)i;
    m->q[i] = make_symbol(b, c->name, CH_SYM_COORD, NULL, 0, idx, c->pos);
    m->qt[i] = m->q[i] ? make_symbol(b, vel, CH_SYM_VEL, c->name, 1, idx,
                                     c->pos)
                       : NULL;
    m->qtt[i] = m->qt[i] ? make_symbol(b, acc, CH_SYM_ACC, c->name, 2, idx,
                                       c->pos)
                         : NULL;
    if (!m->qtt[i]) return -1;
    ch_symbol_set_dot(b->ctx, m->q[i], m->qt[i]);
    ch_symbol_set_dot(b->ctx, m->qt[i], m->qtt[i]);
    table_find(&b->names, c->name, strlen(c->name))->expr = m->q[i];
    m->q_pos[i] = c->pos;
    m->force[i] = ch_zero(b->ctx);
    return 0;
}

#define ALLOC_N(ptr, n)                                                     \
    ((ptr) = ch_ctx_alloc(b->ctx, (n) * sizeof *(ptr)))

static int st_coordinates(mbuild *b, const ch_token *kw)
{
    (void)kw;
    if (for_items(b, coord_item_fn)) return -1;
    ch_model *m = b->m;
    size_t n = m->n = b->coords.n;
    b->comp_given = calloc(n, 1);
    if (!ALLOC_N(m->q, n) || !ALLOC_N(m->qt, n) || !ALLOC_N(m->qtt, n)
        || !ALLOC_N(m->q_pos, n) || !ALLOC_N(m->force, n)
        || !ALLOC_N(m->force_pos, n) || !ALLOC_N(m->q0, n)
        || !ALLOC_N(m->qt0, n) || !ALLOC_N(m->qt0_given, n)
        || !ALLOC_N(m->q0_given, n) || !b->comp_given)
        return oom(b);
    for (size_t i = 0; i < n; i++)
        if (make_coordinate(b, i)) return -1;
    return 0;
}

static int param_item_fn(mbuild *b)
{
    ch_token t;
    if (expect_name(b, &t, "a parameter name")) return -1;
    entry *e = check_and_declare(b, &t, N_PARAM);
    if (!e || ch_parse_expect(&b->p, CH_TOK_EQUALS, "'=' and a value"))
        return -1;
    double def;
    const ch_expr *value = parse_value(b, &t, "a parameter value", &def);
    if (!value) return -1;
    e->index = (int)b->params.n;
    e->expr = make_symbol(b, e->name, CH_SYM_PARAM, NULL, 0, e->index,
                          tok_pos(&t));
    param_item *it = e->expr ? vec_push(b, &b->params, sizeof *it) : NULL;
    if (!it) return -1;
    *it = (param_item){e->expr, value, def, tok_pos(&t)};
    return 0;
}

static int st_parameters(mbuild *b, const ch_token *kw)
{
    (void)kw;
    return for_items(b, param_item_fn);
}

/* "NAME =" of define and integral: the name is checked, not declared. */
static int name_equals(mbuild *b, ch_token *t, const char *what)
{
    if (expect_name(b, t, what) || check_new_name(b, t)) return -1;
    return ch_parse_expect(&b->p, CH_TOK_EQUALS, "'='");
}

static int st_define(mbuild *b, const ch_token *kw)
{
    (void)kw;
    ch_token t;
    char name[NAME_BUF];
    if (name_equals(b, &t, "a name")) return -1;
    tok_name(&t, name);
    b->cur_define = name;
    const ch_expr *v = parse_expr_as(b, R_ANY, NULL);
    b->cur_define = NULL;
    entry *e = v ? declare(b, &t, N_DEFINE) : NULL;
    ch_named_expr *d = e ? vec_push(b, &b->defines, sizeof *d) : NULL;
    if (!d) return -1;
    e->expr = v;
    e->has_vel = b->used_vel;
    e->is_const = !b->used_var;
    *d = (ch_named_expr){e->name, v, tok_pos(&t)};
    return 0;
}

static int st_lagrangian(mbuild *b, const ch_token *kw)
{
    b->m->lagrangian = parse_expr_as(b, R_ANY, NULL);
    b->m->lagrangian_pos = tok_pos(kw);
    return b->m->lagrangian ? 0 : -1;
}

/* lhs [= rhs] as lhs - rhs. */
static const ch_expr *parse_equation(mbuild *b)
{
    const ch_expr *g = parse_expr_as(b, R_ANY, NULL);
    if (!g || b->p.tok.kind != CH_TOK_EQUALS) return g;
    ch_token eq = b->p.tok;
    if (ch_parse_advance(&b->p)) return NULL;
    const ch_expr *rhs = parse_expr_as(b, R_ANY, NULL);
    return rhs ? ch_parse_check(&b->p, &eq, ch_sub(b->ctx, g, rhs)) : NULL;
}

static int st_constraint(mbuild *b, const ch_token *kw)
{
    const ch_expr *g = parse_equation(b);
    constraint_item *c = g ? vec_push(b, &b->constraints, sizeof *c) : NULL;
    if (!c) return -1;
    c->orig = g;
    c->pos = tok_pos(kw);
    c->holonomic = !ch_has_sym_kind(g, CH_SYM_VEL);
    c->vel = c->holonomic ? ch_parse_check(&b->p, kw, ch_diff_t(b->ctx, g))
                          : g;
    if (!c->vel) return -1;
    if (!ch_has_sym_kind(c->vel, CH_SYM_VEL))
        return ch_parse_fail(&b->p, kw, CH_ERR_MODEL,
                             "constraint does not restrict the motion (no "
                             "coordinate or velocity in it)");
    return 0;
}

static int st_force(mbuild *b, const ch_token *kw)
{
    ch_token t = b->p.tok;
    if (t.kind != CH_TOK_IDENT)
        return expect_name(b, &t, "a coordinate name");
    int i = lookup_coord(b, &t, "force on a non-coordinate ", "");
    if (i < 0) return -1;
    if (t.primes)
        return fail_tok(b, &t, "force on a non-coordinate ", "");
    if (b->m->force_pos[i].line)
        return ch_parse_fail(&b->p, &t, CH_ERR_MODEL,
                             "duplicate force on '%s' (first at %d:%d)",
                             ch_sym_of(b->m->q[i])->name, b->m->force_pos[i].line,
                             b->m->force_pos[i].col);
    if (ch_parse_advance(&b->p) || ch_parse_expect(&b->p, CH_TOK_EQUALS, "'='"))
        return -1;
    const ch_expr *f = parse_expr_as(b, R_ANY, NULL);
    if (!f) return -1;
    b->m->force[i] = f;
    b->m->force_pos[i] = tok_pos(kw);
    return 0;
}

static int dependent_item_fn(mbuild *b)
{
    ch_token t = b->p.tok;
    if (t.kind != CH_TOK_IDENT || t.primes != 1)
        return fail_tok(b, &t, "expected a velocity such as x', found ", "");
    int i = lookup_coord(b, &t, "dependent velocity of a non-coordinate ",
                         "");
    if (i < 0) return -1;
    const int *dep = b->dependent.v;
    for (size_t j = 0; j < b->dependent.n; j++)
        if (dep[j] == i)
            return fail_tok(b, &t, "duplicate dependent velocity ", "");
    int *slot = vec_push(b, &b->dependent, sizeof *slot);
    if (!slot) return -1;
    *slot = i;
    return ch_parse_advance(&b->p);
}

static int st_dependent(mbuild *b, const ch_token *kw)
{
    b->m->dependent_pos = tok_pos(kw);
    return for_items(b, dependent_item_fn);
}

static int initial_item_fn(mbuild *b)
{
    ch_token t = b->p.tok;
    if (t.kind != CH_TOK_IDENT)
        return expect_name(b, &t, "a coordinate or velocity name");
    if (!table_find(&b->names, t.text, t.len)) /* not even a later name */
        return fail_tok(b, &t, "bad initial name ", ": not a coordinate");
    int i = lookup_coord(b, &t, "bad initial name ", ": not a coordinate");
    if (i < 0) return -1;
    if (t.primes > 1)
        return fail_tok(b, &t, "bad initial name ",
                        ": only coordinates and velocities have initial "
                        "values");
    int dup = t.primes ? b->m->qt0_given[i] : b->m->q0_given[i];
    if (dup) return fail_tok(b, &t, "duplicate initial value for ", "");
    if (ch_parse_advance(&b->p)
        || ch_parse_expect(&b->p, CH_TOK_EQUALS, "'=' and a value"))
        return -1;
    double v;
    if (!parse_value(b, &t, "an initial value", &v)) return -1;
    if (t.primes) {
        b->m->qt0[i] = v;
        b->m->qt0_given[i] = 1;
    } else {
        b->m->q0[i] = v;
        b->m->q0_given[i] = 1;
    }
    return 0;
}

static int st_initial(mbuild *b, const ch_token *kw)
{
    b->m->initial_pos = tok_pos(kw);
    return for_items(b, initial_item_fn);
}

/* An integral becomes a CSV column of `run` (SPEC §2) beside E, phiN,
 * lambdaN, R_COORD, y_COORD and gN: its name must not collide with those. */
static int csv_column_name(const char *s)
{
    size_t digits;
    if (strcmp(s, "E") == 0 || strncmp(s, "R_", 2) == 0 || strncmp(s, "y_", 2) == 0)
        return 1;
    if (strncmp(s, "phi", 3) == 0) s += 3;
    else if (strncmp(s, "lambda", 6) == 0) s += 6;
    else if (s[0] == 'g') s += 1;
    else return 0;
    digits = strspn(s, "0123456789");
    return digits > 0 && s[digits] == 0;
}

static int st_integral(mbuild *b, const ch_token *kw)
{
    (void)kw;
    ch_token t;
    char name[NAME_BUF];
    if (expect_name(b, &t, "an integral name")) return -1;
    tok_name(&t, name);
    if (csv_column_name(name))
        return ch_parse_fail(&b->p, &t, CH_ERR_MODEL,
                             "integral name '%s' collides with a CSV column "
                             "of run (E, phiN, lambdaN, R_q, y_q, gN)", name);
    if (check_new_name(b, &t) || ch_parse_expect(&b->p, CH_TOK_EQUALS, "'='"))
        return -1;
    const ch_expr *v = parse_expr_as(b, R_ANY, NULL);
    entry *e = v ? declare(b, &t, N_INTEGRAL) : NULL;
    ch_named_expr *it = e ? vec_push(b, &b->integrals, sizeof *it) : NULL;
    if (!it) return -1;
    *it = (ch_named_expr){e->name, v, tok_pos(&t)};
    return 0;
}

/* `event NAME = EXPR [stop]`: EXPR may use t, coordinates and velocities;
 * its name is a CSV-free name of its own (events are rows, not columns). */
static int st_event(mbuild *b, const ch_token *kw)
{
    (void)kw;
    ch_token t;
    if (expect_name(b, &t, "an event name") || check_new_name(b, &t)
        || ch_parse_expect(&b->p, CH_TOK_EQUALS, "'='"))
        return -1;
    const ch_expr *v = parse_expr_as(b, R_ANY, NULL);
    entry *e = v ? declare(b, &t, N_EVENT) : NULL;
    ch_named_expr *ev = e ? vec_push(b, &b->events, sizeof *ev) : NULL;
    int *stop = ev ? vec_push(b, &b->event_stop, sizeof *stop) : NULL;
    if (!stop) return -1;
    *ev = (ch_named_expr){e->name, v, tok_pos(&t)};
    *stop = 0;
    const ch_token *w = &b->p.tok;
    if (w->kind != CH_TOK_IDENT) return 0;
    if (w->primes || w->len != 4 || memcmp(w->text, "stop", 4) != 0)
        return fail_tok(b, w, "expected 'stop' or the end of the statement after "
                              "the event's expression, found ", "");
    *stop = 1;
    return ch_parse_advance(&b->p);
}

/* One "q = EXPR" of the field being parsed (the last in b->fields). */
static int field_item_fn(mbuild *b)
{
    ch_field *f = (ch_field *)b->fields.v + b->fields.n - 1;
    ch_token t = b->p.tok;
    if (t.kind != CH_TOK_IDENT)
        return expect_name(b, &t, "a coordinate name");
    int i = lookup_coord(b, &t, "field component for a non-coordinate ",
                         "");
    if (i < 0) return -1;
    if (t.primes)
        return fail_tok(b, &t, "field component for a non-coordinate ", "");
    if (b->comp_given[i])
        return ch_parse_fail(&b->p, &t, CH_ERR_MODEL,
                             "duplicate component '%s' in field '%.*s'",
                             ch_sym_of(b->m->q[i])->name, (int)b->field_name.len,
                             b->field_name.text);
    b->comp_given[i] = 1;
    if (ch_parse_advance(&b->p) || ch_parse_expect(&b->p, CH_TOK_EQUALS, "'='"))
        return -1;
    const ch_expr *v = parse_expr_as(b, R_NO_VEL, "a field component");
    if (!v) return -1;
    f->comp[i] = v;
    return 0;
}

static int st_field(mbuild *b, const ch_token *kw)
{
    (void)kw;
    ch_token t;
    if (expect_name(b, &t, "a field name") || check_new_name(b, &t)
        || ch_parse_expect(&b->p, CH_TOK_COLON, "':' after the field name"))
        return -1;
    ch_field *f = vec_push(b, &b->fields, sizeof *f);
    if (!f) return -1;
    f->pos = tok_pos(&t);
    b->field_name = t;
    size_t n = b->m->n;
    if (n && !ALLOC_N(f->comp, n)) return oom(b);
    for (size_t i = 0; i < n; i++) f->comp[i] = ch_zero(b->ctx);
    if (n) memset(b->comp_given, 0, n);
    if (for_items(b, field_item_fn)) return -1;
    entry *e = declare(b, &t, N_FIELD);
    if (!e) return -1;
    f->name = e->name;
    return 0;
}

/* ---- the statement loop ------------------------------------------------- */

typedef int (*stmt_fn)(mbuild *, const ch_token *kw);

static const struct {
    const char *kw;
    int once;
    stmt_fn fn;
} stmts[ST_COUNT] = {
    [ST_MODEL] = {"model", 1, st_model},
    [ST_COORDINATES] = {"coordinates", 1, st_coordinates},
    [ST_PARAMETERS] = {"parameters", 0, st_parameters},
    [ST_DEFINE] = {"define", 0, st_define},
    [ST_LAGRANGIAN] = {"lagrangian", 1, st_lagrangian},
    [ST_CONSTRAINT] = {"constraint", 0, st_constraint},
    [ST_FORCE] = {"force", 0, st_force},
    [ST_DEPENDENT] = {"dependent", 1, st_dependent},
    [ST_INITIAL] = {"initial", 1, st_initial},
    [ST_INTEGRAL] = {"integral", 0, st_integral},
    [ST_FIELD] = {"field", 0, st_field},
    [ST_EVENT] = {"event", 0, st_event},
};

static int stmt_lookup(const ch_token *t)
{
    if (t->kind != CH_TOK_IDENT || t->primes) return -1;
    for (int i = 0; i < ST_COUNT; i++)
        if (strlen(stmts[i].kw) == t->len
            && memcmp(stmts[i].kw, t->text, t->len) == 0)
            return i;
    return -1;
}

static int statement(mbuild *b)
{
    ch_token kw = b->p.tok;
    int s = stmt_lookup(&kw);
    if (s < 0 && kw.kind == CH_TOK_IDENT && !kw.primes)
        return fail_tok(b, &kw, "unknown statement ", "");
    if (s < 0)
        return fail_tok(b, &kw, "expected a statement keyword, found ", "");
    if (stmts[s].once && b->seen[s].line)
        return ch_parse_fail(&b->p, &kw, CH_ERR_MODEL,
                             "statement '%s' repeated (first at %d:%d)",
                             stmts[s].kw, b->seen[s].line, b->seen[s].col);
    if (!b->seen[s].line) b->seen[s] = tok_pos(&kw);
    if (ch_parse_advance(&b->p) || stmts[s].fn(b, &kw)) return -1;
    return ch_parse_end_statement(&b->p);
}

/* The name token t declares in statement kind s (t is the pos-th token
 * of the statement, prev the one before), or NULL. */
static const ch_token *declared_name(int s, int pos, const ch_token *t,
                                     const ch_token *prev, name_kind *kind)
{
    switch (s) {
    case ST_COORDINATES:
        *kind = N_COORD;
        return pos > 0 && t->kind == CH_TOK_IDENT ? t : NULL;
    case ST_PARAMETERS:
        *kind = N_PARAM;
        return t->kind == CH_TOK_EQUALS && prev->kind == CH_TOK_IDENT ? prev
                                                                      : NULL;
    case ST_DEFINE: *kind = N_DEFINE; break;
    case ST_INTEGRAL: *kind = N_INTEGRAL; break;
    case ST_FIELD: *kind = N_FIELD; break;
    case ST_EVENT: *kind = N_EVENT; break;
    default: return NULL;
    }
    return pos == 1 && t->kind == CH_TOK_IDENT ? t : NULL;
}

/* Records where names are declared, so that using one too early gets a
 * precise message. Stops quietly at a lexical error: the real pass will
 * report it in order. */
static void prescan(mbuild *b, const char *file, const char *src, size_t len)
{
    ch_lexer lx;
    ch_token t, prev = {0};
    int s = -1, pos = 0; /* statement kind, token number in it */
    ch_lex_init(&lx, file, src, len);
    while (!ch_lex_next(&lx, &t) && t.kind != CH_TOK_EOF) {
        if (t.kind == CH_TOK_NEWLINE) {
            pos = 0;
            continue;
        }
        if (pos == 0) s = stmt_lookup(&t);
        name_kind kind;
        const ch_token *name = declared_name(s, pos, &t, &prev, &kind);
        if (name && !name->primes
            && !table_find(&b->names, name->text, name->len)) {
            entry *e = table_add(b, name->text, name->len);
            if (!e) return;
            e->kind = kind;
            e->pos = tok_pos(name);
        }
        prev = t;
        pos++;
    }
}

/* ---- whole-model checks and assembly ------------------------------------ */

/* An error at the end of the file (for what is missing). */
static int fail_at_end(mbuild *b, const char *msg)
{
    ch_token end = b->p.tok; /* EOF after a successful loop */
    return ch_parse_fail(&b->p, &end, CH_ERR_MODEL, "%s", msg);
}

/* y_Q is the Hamiltonian momentum of coordinate Q (SPEC §3): no declared
 * name may take it, or ch_symbol would hand the mechanics our symbol. */
static int check_momentum_names(mbuild *b)
{
    for (size_t i = 0; i < b->m->n; i++) {
        char y[NAME_BUF];
        const char *q = ch_sym_of(b->m->q[i])->name;
        snprintf(y, sizeof y, "y_%s", q);
        entry *e = table_find(&b->names, y, strlen(y));
        if (e && e->defined) {
            ch_token at = pos_token(e->pos);
            return ch_parse_fail(&b->p, &at, CH_ERR_MODEL,
                                 "reserved name '%s' (the Hamiltonian "
                                 "momentum of coordinate '%s')",
                                 y, q);
        }
    }
    return 0;
}

static int check_counts(mbuild *b)
{
    ch_model *m = b->m;
    if (!b->seen[ST_COORDINATES].line)
        return fail_at_end(b, "missing 'coordinates' statement");
    if (!b->seen[ST_LAGRANGIAN].line)
        return fail_at_end(b, "missing 'lagrangian' statement");
    size_t k = b->constraints.n;
    if (k >= m->n) {
        const constraint_item *c = (const constraint_item *)b->constraints.v;
        ch_token at = pos_token(c[m->n - 1].pos);
        return ch_parse_fail(&b->p, &at, CH_ERR_MODEL,
                             "constraint count >= n: %zu constraint%s for "
                             "%zu coordinate%s",
                             k, k == 1 ? "" : "s", m->n, m->n == 1 ? "" : "s");
    }
    if (b->seen[ST_DEPENDENT].line && b->dependent.n != k) {
        ch_token at = pos_token(m->dependent_pos);
        return ch_parse_fail(&b->p, &at, CH_ERR_MODEL,
                             "dependent names %zu velocit%s but there %s %zu "
                             "constraint%s",
                             b->dependent.n, b->dependent.n == 1 ? "y" : "ies",
                             k == 1 ? "is" : "are", k, k == 1 ? "" : "s");
    }
    return check_momentum_names(b);
}

static int assemble(mbuild *b)
{
    ch_model *m = b->m;
    size_t np = m->np = b->params.n, k = m->k = b->constraints.n;
    if (np && (!ALLOC_N(m->param, np) || !ALLOC_N(m->param_value, np)
               || !ALLOC_N(m->param_default, np) || !ALLOC_N(m->param_pos, np)))
        return oom(b);
    for (size_t i = 0; i < np; i++) {
        const param_item *it = (const param_item *)b->params.v + i;
        m->param[i] = it->sym;
        m->param_value[i] = it->value;
        m->param_default[i] = it->def;
        m->param_pos[i] = it->pos;
    }
    if (k && (!ALLOC_N(m->constraint, k) || !ALLOC_N(m->constraint_orig, k)
              || !ALLOC_N(m->holonomic, k) || !ALLOC_N(m->constraint_pos, k)))
        return oom(b);
    for (size_t i = 0; i < k; i++) {
        const constraint_item *c = (const constraint_item *)b->constraints.v + i;
        m->constraint[i] = c->vel;
        m->constraint_orig[i] = c->orig;
        m->holonomic[i] = c->holonomic;
        m->constraint_pos[i] = c->pos;
    }
    m->ndefines = b->defines.n;
    m->defines = vec_to_arena(b, &b->defines, sizeof *m->defines);
    m->nintegrals = b->integrals.n;
    m->integrals = vec_to_arena(b, &b->integrals, sizeof *m->integrals);
    m->nevents = b->events.n;
    m->events = vec_to_arena(b, &b->events, sizeof *m->events);
    m->event_stop = vec_to_arena(b, &b->event_stop, sizeof *m->event_stop);
    m->nfields = b->fields.n;
    m->fields = vec_to_arena(b, &b->fields, sizeof *m->fields);
    m->ndep = b->dependent.n;
    m->dependent = vec_to_arena(b, &b->dependent, sizeof *m->dependent);
    return b->p.failed ? -1 : 0;
}

/* The default model name from the file's stem, made a C identifier:
 * bytes outside [A-Za-z0-9_] become '_', a stem not starting with a letter
 * gets "m_" in front, an empty one is "model", a C keyword gets "_model"
 * appended, and the result is cut to CH_MAX_IDENT_LEN. */
static void stem_name(const char *file, char out[NAME_BUF])
{
    const char *base = file ? file : "";
    for (const char *s = base; *s; s++)
        if (*s == '/' || *s == '\\') base = s + 1;
    size_t n = strlen(base);
    const char *dot = strrchr(base, '.');
    if (dot && dot != base) n = (size_t)(dot - base);
    char buf[CH_MAX_IDENT_LEN + 1];
    size_t j = 0;
    for (size_t i = 0; i < n && j < CH_MAX_IDENT_LEN; i++) {
        unsigned char c = (unsigned char)base[i];
        buf[j++] = (isalnum_ascii(c) || c == '_') ? (char)c : '_';
    }
    buf[j] = 0;
    if (j == 0)
        snprintf(out, NAME_BUF, "model");
    else if (!isalpha_ascii((unsigned char)buf[0]))
        snprintf(out, NAME_BUF, "m_%.*s", CH_MAX_IDENT_LEN - 2, buf);
    else if (is_c_keyword(buf))
        snprintf(out, NAME_BUF, "%s_model", buf);
    else
        snprintf(out, NAME_BUF, "%s", buf);
}

static int finish(mbuild *b, const char *file)
{
    if (check_counts(b) || assemble(b)) return -1;
    ch_model *m = b->m;
    m->file = ch_ctx_strdup(b->ctx, file ? file : "");
    if (!m->name) {
        char name[NAME_BUF];
        stem_name(file, name);
        m->name = ch_ctx_strdup(b->ctx, name);
    }
    return m->file && m->name ? 0 : oom(b);
}

static void builder_free(mbuild *b)
{
    free(b->names.slot);
    vec *v[] = {&b->coords, &b->params, &b->defines, &b->constraints,
                &b->integrals, &b->fields, &b->dependent,
                &b->events, &b->event_stop};
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) free(v[i]->v);
    free(b->comp_given);
}

static int parse_model(mbuild *b, const char *file, const char *text,
                       size_t len, ch_error *err)
{
    prescan(b, file, text, len);
    if (ch_parse_init(&b->p, b->ctx, file, text, len, err)) return -1;
    b->p.resolve = resolver;
    b->p.resolve_data = b;
    b->m = ch_ctx_alloc(b->ctx, sizeof *b->m);
    if (!b->m) return oom(b);
    b->m->t = make_symbol(b, "t", CH_SYM_TIME, NULL, 0, -1, (ch_pos){0, 0});
    if (!b->m->t) return -1;
    ch_symbol_set_dot(b->ctx, b->m->t, ch_one(b->ctx));
    while (b->p.tok.kind != CH_TOK_EOF)
        if (statement(b)) return -1;
    return finish(b, file);
}

int ch_model_parse(ch_ctx *ctx, const char *file, const char *text,
                   size_t len, ch_model **out, ch_error *err)
{
    ch_error local;
    if (!err) err = &local;
    ch_error_clear(err);
    *out = NULL;
    if (len > CH_MAX_FILE_BYTES)
        return ch_error_set(err, CH_ERR_LIMIT, file, 0, 0,
                            "file too large (more than %u bytes)",
                            CH_MAX_FILE_BYTES);
    ch_ctx_clear_error(ctx); /* so a failing constructor reports its own cause */
    mbuild b;
    memset(&b, 0, sizeof b);
    b.ctx = ctx;
    int rc = parse_model(&b, file, text, len, err);
    builder_free(&b);
    if (rc) return err->code != CH_OK ? err->code : CH_ERR_MODEL;
    *out = b.m;
    return 0;
}

/* Reads at most one byte past the size limit (enough for the parser to
 * reject the file) into a malloc'd buffer. 0 or a ch_status. */
static int read_limited(FILE *f, char **text, size_t *len)
{
    size_t cap = 0, limit = (size_t)CH_MAX_FILE_BYTES + 1;
    for (;;) {
        if (*len == cap) {
            if (cap == limit) return 0;
            cap = cap ? 2 * cap : 1 << 16;
            if (cap > limit) cap = limit;
            char *t = realloc(*text, cap);
            if (!t) return CH_ERR_MEMORY;
            *text = t;
        }
        size_t got = fread(*text + *len, 1, cap - *len, f);
        *len += got;
        if (got == 0) return ferror(f) ? CH_ERR_IO : 0;
    }
}

int ch_model_read(const char *path, char **text, size_t *len, ch_error *err)
{
    *text = NULL;
    *len = 0;
    /* Opened without blocking and checked before reading: a FIFO or a
     * device would block or never end. */
    int fd = open(path, O_RDONLY | O_NONBLOCK);
    struct stat st;
    if (fd < 0)
        return ch_error_set(err, CH_ERR_IO, path, 0, 0, "cannot open: %s",
                            strerror(errno));
    if (fstat(fd, &st) != 0) {
        int e = errno;
        close(fd);
        return ch_error_set(err, CH_ERR_IO, path, 0, 0, "cannot read: %s", strerror(e));
    }
    if (!S_ISREG(st.st_mode)) {
        int dir = S_ISDIR(st.st_mode);
        close(fd);
        return ch_error_set(err, CH_ERR_IO, path, 0, 0, "cannot read: %s",
                            dir ? "a directory, not a model file" : "not a regular file");
    }
    int flags = fcntl(fd, F_GETFL);
    FILE *f = flags < 0 || fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) < 0 ? NULL
                                                                        : fdopen(fd, "rb");
    if (!f) {
        int e = errno;
        close(fd);
        return ch_error_set(err, CH_ERR_IO, path, 0, 0, "cannot open: %s", strerror(e));
    }
    int rc = read_limited(f, text, len);
    fclose(f);
    if (rc == CH_ERR_MEMORY)
        ch_error_set(err, rc, path, 0, 0, "out of memory");
    else if (rc)
        ch_error_set(err, rc, path, 0, 0, "cannot read: %s", strerror(errno));
    if (rc) {
        free(*text);
        *text = NULL;
    }
    return rc;
}

int ch_model_load(ch_ctx *ctx, const char *path, ch_model **out,
                  ch_error *err)
{
    *out = NULL;
    char *text;
    size_t len;
    int rc = ch_model_read(path, &text, &len, err);
    if (rc == 0)
        rc = ch_model_parse(ctx, path, text, len, out, err);
    free(text);
    return rc;
}

/* ---- statements by position ------------------------------------------ */

static int pos_is(ch_pos p, int line, int col)
{
    return p.line == line && p.col == col && line > 0;
}

static int named_at(const char *kw, const ch_named_expr *v, size_t n,
                    int line, int col, char *buf, size_t size)
{
    for (size_t i = 0; i < n; i++)
        if (pos_is(v[i].pos, line, col)) {
            snprintf(buf, size, "%s %s", kw, v[i].name);
            return 1;
        }
    return 0;
}

int ch_model_statement_at(const ch_model *m, int line, int col, char *buf,
                          size_t size)
{
    if (size) buf[0] = 0;
    if (!m || !size) return 0;
    if (pos_is(m->lagrangian_pos, line, col))
        return snprintf(buf, size, "lagrangian"), 1;
    if (pos_is(m->dependent_pos, line, col))
        return snprintf(buf, size, "dependent"), 1;
    if (pos_is(m->initial_pos, line, col))
        return snprintf(buf, size, "initial"), 1;
    for (size_t i = 0; i < m->k; i++)
        if (pos_is(m->constraint_pos[i], line, col))
            return snprintf(buf, size, "constraint %zu", i + 1), 1;
    for (size_t i = 0; i < m->n; i++)
        if (m->force_pos && pos_is(m->force_pos[i], line, col))
            return snprintf(buf, size, "force on %s", ch_sym_of(m->q[i])->name), 1;
    if (named_at("define", m->defines, m->ndefines, line, col, buf, size)
        || named_at("integral", m->integrals, m->nintegrals, line, col, buf,
                    size)
        || named_at("event", m->events, m->nevents, line, col, buf, size))
        return 1;
    for (size_t i = 0; i < m->nfields; i++)
        if (pos_is(m->fields[i].pos, line, col))
            return snprintf(buf, size, "field %s", m->fields[i].name), 1;
    return 0;
}
