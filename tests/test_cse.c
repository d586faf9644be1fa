/* test_cse.c — the algebraic passes of the straight-line program builder
 * (gen/codegen/cse.h): common factors pulled out of sums, greedy factoring, shared
 * sub-products and prefix sums lower the operation count, and the program
 * still evaluates to the expressions (compiled in memory with libtcc and
 * compared with ch_eval_d at random points, on hand-made and on random
 * expressions). The output is deterministic: two builds are identical,
 * and a program taken from a cache is the one a build gives. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "core/buf.h"
#include "codegen/cse.h"
#include "codegen/emit_red.h"
#include "core/eval.h"
#include "core/expr.h"
#include "core/factor.h"
#include "jit/jit.h"
#include "randexpr.h"

#define NS 8 /* symbols x[0..NS) */

static const char *namer(void *data, const ch_sym *s)
{
    static const char *const txt[NS] = {"x[0]", "x[1]", "x[2]", "x[3]",
                                        "x[4]", "x[5]", "x[6]", "x[7]"};
    (void)data;
    return s->kind == CH_SYM_COORD && s->index >= 0 && s->index < NS ? txt[s->index] : NULL;
}

static double total(const ch_opcount *c) { return c->add + c->mul + c->div + c->call; }

/* Compiles prog as f(x, o) and compares it with the DAG at `points` random
 * points (relative tolerance tol; non-finite reference values skipped).
 * Returns the number of mismatches (or 1000 when it does not compile). */
static int compare(ch_ctx *ctx, const ch_expr *const *e, size_t n, const ch_cse_prog *prog,
                   const ch_expr *const *sym, rx_rng *r, int points, double tol)
{
    ch_buf src;
    ch_buf_init(&src);
    ch_buf_put(&src, "#include <math.h>\nvoid f(const double *x, double *o)\n{\n");
    ch_buf_put(&src, prog->body.s ? prog->body.s : "");
    for (size_t i = 0; i < n; i++) ch_buf_printf(&src, "    o[%zu] = %s;\n", i, prog->ref[i]);
    ch_buf_put(&src, "}\n");
    ch_jit *j = NULL;
    ch_error err;
    ch_error_clear(&err);
    int bad = 0;
    if (ch_jit_compile(src.s, CH_COMPILER_TCC, &j, &err)) {
        fprintf(stderr, "does not compile: %s\n%s", err.msg, src.s);
        ch_buf_free(&src);
        return 1000;
    }
    void (*f)(const double *, double *) = (void (*)(const double *, double *))ch_jit_symbol(j, "f");
    double *symval = calloc(ch_ctx_nsyms(ctx) + 1, sizeof *symval);
    double *want = malloc(n * sizeof *want), *got = malloc(n * sizeof *got);
    double x[NS];
    for (int k = 0; f && symval && want && got && k < points; k++) {
        for (int i = 0; i < NS; i++) {
            x[i] = rx_point(r, 0);
            symval[ch_sym_of(sym[i])->sid] = x[i];
        }
        ch_eval_d_many(ctx, n, e, symval, want);
        f(x, got);
        for (size_t i = 0; i < n; i++) {
            if (!isfinite(want[i])) continue;
            double scale = fabs(want[i]) > 1 ? fabs(want[i]) : 1;
            if (!(fabs(got[i] - want[i]) <= tol * scale)) {
                if (bad < 3) fprintf(stderr, "output %zu: %.17g, want %.17g\n", i, got[i], want[i]);
                bad++;
            }
        }
    }
    if (!f) bad = 1000;
    free(symval);
    free(want);
    free(got);
    ch_jit_free(j);
    ch_buf_free(&src);
    return bad;
}

typedef struct {
    ch_ctx *ctx;
    const ch_expr *x[NS];
    rx_rng r;
} fixture;

static void setup(fixture *t)
{
    t->ctx = ch_ctx_new();
    for (int i = 0; i < NS; i++) {
        char name[8];
        snprintf(name, sizeof name, "x%d", i);
        t->x[i] = ch_symbol(t->ctx, name, CH_SYM_COORD, NULL, 0, i);
    }
    t->r.s = 12345;
}

/* Builds, checks the values, returns the program (caller frees). */
static int build(fixture *t, size_t n, const ch_expr *const *e, ch_cse_prog *p)
{
    ch_error err;
    ch_error_clear(&err);
    int rc = ch_cse_build(t->ctx, n, e, namer, NULL, "w", "    ", p, &err);
    CHECK_MSG(rc == 0, "%s", err.msg);
    if (rc) return rc;
    int bad = compare(t->ctx, e, n, p, t->x, &t->r, 20, 1e-12);
    CHECK_MSG(bad == 0, "%d mismatches in\n%s", bad, p->body.s ? p->body.s : "");
    return 0;
}

/* 3*a*b*x2 + 3*a*b*x3 + ... : the common monomial 3*a*b comes out once. */
static void test_common_factor(void)
{
    fixture t;
    setup(&t);
    ch_ctx *ctx = t.ctx;
    const ch_expr *ab3 = ch_mul(ctx, ch_num_si(ctx, 3), ch_mul(ctx, t.x[0], t.x[1]));
    const ch_expr *terms[6];
    for (int i = 0; i < 6; i++) terms[i] = ch_mul(ctx, ab3, t.x[2 + i]);
    const ch_expr *e = ch_add_n(ctx, 6, terms);
    ch_cse_prog p;
    if (build(&t, 1, &e, &p) == 0) {
        /* naive: 5 adds and 3 muls per term (23 ops); factored: 5 + 3 */
        CHECK_MSG(p.after.add == 5 && p.after.mul <= 3, "%.0f add %.0f mul",
                  p.after.add, p.after.mul);
        CHECK(total(&p.after) < total(&p.before));
    }
    ch_cse_prog_free(&p);
    ch_ctx_free(ctx);
}

/* a*x + a*y + b*x + b*z + a*b: greedy factoring by the most frequent
 * factor, recursively; the value is unchanged. */
static void test_greedy(void)
{
    fixture t;
    setup(&t);
    ch_ctx *ctx = t.ctx;
    const ch_expr *a = t.x[0], *b = t.x[1], *x = t.x[2], *y = t.x[3], *z = t.x[4];
    const ch_expr *terms[] = {ch_mul(ctx, a, x), ch_mul(ctx, a, y), ch_mul(ctx, b, x),
                              ch_mul(ctx, b, z), ch_mul(ctx, a, b),
                              ch_mul(ctx, ch_num_si(ctx, 5), ch_mul(ctx, a, z))};
    const ch_expr *e = ch_add_n(ctx, 6, terms);
    ch_cse_prog p;
    if (build(&t, 1, &e, &p) == 0) {
        /* naive: 5 adds, 7 muls; factored by a then b: at most 4 muls */
        CHECK_MSG(p.after.add == 5 && p.after.mul <= 4, "%.0f add %.0f mul\n%s",
                  p.after.add, p.after.mul, p.body.s);
    }
    ch_cse_prog_free(&p);
    /* equal numeric coefficients are a common factor too */
    const ch_expr *terms2[] = {ch_mul(ctx, ch_num_frac(ctx, 7, 3), x),
                               ch_mul(ctx, ch_num_frac(ctx, -7, 3), y),
                               ch_mul(ctx, ch_num_frac(ctx, 7, 3), z)};
    e = ch_add_n(ctx, 3, terms2);
    if (build(&t, 1, &e, &p) == 0)
        CHECK_MSG(p.after.add == 2 && p.after.mul == 1, "%.0f add %.0f mul\n%s",
                  p.after.add, p.after.mul, p.body.s);
    ch_cse_prog_free(&p);
    ch_ctx_free(ctx);
}

/* -(a*u) - a*(b - c - u): factoring by a leaves -u - (b - c - u), whose
 * inner sum is used only there; spliced in, u cancels: a*(c - b). */
static void test_splice(void)
{
    fixture t;
    setup(&t);
    ch_ctx *ctx = t.ctx;
    const ch_expr *a = t.x[0], *b = t.x[1], *c = t.x[2], *u = t.x[3];
    const ch_expr *inner = ch_sub(ctx, ch_sub(ctx, b, c), u);
    const ch_expr *e = ch_sub(ctx, ch_neg(ctx, ch_mul(ctx, a, u)), ch_mul(ctx, a, inner));
    ch_cse_prog p;
    if (build(&t, 1, &e, &p) == 0)
        CHECK_MSG(p.after.add == 1 && p.after.mul == 1, "%.0f add %.0f mul\n%s",
                  p.after.add, p.after.mul, p.body.s);
    ch_cse_prog_free(&p);
    ch_ctx_free(ctx);
}

/* Rows r_i = sum_{j<i} v_j (cos q_j sin q_i - sin q_j cos q_i), the bias
 * of a chain of constraints: the terms are products with a small sum
 * among their factors. ch_factor_sums with distributing takes sin q_i
 * and cos q_i out of each row, leaving partial sums shared between rows
 * (a few operations a row); without, no factor is common; both keep the
 * values. */
static void test_factor_distribute(void)
{
    fixture t;
    setup(&t);
    ch_ctx *ctx = t.ctx;
    enum { R = 4 }; /* angles x0..x3, velocities x4..x7 */
    const ch_expr *sn[R], *cs[R], *row[R - 1];
    for (int i = 0; i < R; i++) {
        sn[i] = ch_fun1(ctx, CH_F_SIN, t.x[i]);
        cs[i] = ch_fun1(ctx, CH_F_COS, t.x[i]);
    }
    for (int i = 1; i < R; i++) {
        const ch_expr *terms[R];
        for (int j = 0; j < i; j++) {
            const ch_expr *d = ch_sub(ctx, ch_mul(ctx, cs[j], sn[i]), ch_mul(ctx, sn[j], cs[i]));
            terms[j] = ch_mul(ctx, t.x[R + j], d);
        }
        row[i - 1] = ch_add_n(ctx, (size_t)i, terms);
    }
    ch_cse_prog p[3];
    const ch_expr **fac[2] = {ch_factor_sums(ctx, R - 1, row, CH_DIST_NONE),
                              ch_factor_sums(ctx, R - 1, row, CH_DIST_ONE)};
    CHECK(fac[0] != NULL && fac[1] != NULL);
    if (!fac[0] || !fac[1]) {
        ch_ctx_free(ctx);
        return;
    }
    int ok = build(&t, R - 1, row, &p[0]) == 0;
    ok &= build(&t, R - 1, fac[0], &p[1]) == 0;
    ok &= build(&t, R - 1, fac[1], &p[2]) == 0;
    if (ok) {
        /* the factored rows keep the values of the rows (compare() checks
         * each program against its own outputs; these check across) */
        double symval[64] = {0}, want[R], got[R];
        for (int i = 0; i < NS; i++) symval[ch_sym_of(t.x[i])->sid] = 0.3 + 0.17 * i;
        ch_eval_d_many(ctx, R - 1, row, symval, want);
        ch_eval_d_many(ctx, R - 1, fac[1], symval, got);
        for (int i = 0; i < R - 1; i++) CHECK(fabs(got[i] - want[i]) <= 1e-13);
        CHECK_MSG(total(&p[2].after) < total(&p[0].after) &&
                      total(&p[2].after) < total(&p[1].after),
                  "distributed %g, plain %g, factored %g\n%s", total(&p[2].after),
                  total(&p[0].after), total(&p[1].after), p[2].body.s);
    }
    for (int i = 0; i < 3; i++) ch_cse_prog_free(&p[i]);
    ch_ctx_free(ctx);
}

/* ch_factor_sums takes out first the factor most terms share, the
 * oldest on ties, counting only the terms not yet grouped: in
 * a u + a v + a w + b u + b v + c u (a, b, c, u, v, w made in this
 * order) a and u are in three terms, a is older; of the rest b u + b v
 * + c u, b and u in two, b older: a (u + v + w) + b (u + v) + c u. Had
 * u kept its first count, or won the tie: u (a + b + c) + ... */
static void test_factor_greedy_order(void)
{
    fixture t;
    setup(&t);
    ch_ctx *ctx = t.ctx;
    const ch_expr *a = t.x[0], *b = t.x[1], *c = t.x[2], *u = t.x[3], *v = t.x[4], *w = t.x[5];
    const ch_expr *terms[] = {ch_mul(ctx, a, u), ch_mul(ctx, a, v), ch_mul(ctx, a, w),
                              ch_mul(ctx, b, u), ch_mul(ctx, b, v), ch_mul(ctx, c, u)};
    const ch_expr *sum = ch_add_n(ctx, 6, terms);
    const ch_expr *const *fac = ch_factor_sums(ctx, 1, &sum, CH_DIST_NONE);
    CHECK(fac != NULL);
    const ch_expr *uvw[] = {u, v, w};
    const ch_expr *want[] = {ch_mul(ctx, a, ch_add_n(ctx, 3, uvw)),
                             ch_mul(ctx, b, ch_add(ctx, u, v)), ch_mul(ctx, c, u)};
    if (fac) CHECK(fac[0] == ch_add_n(ctx, 3, want));
    ch_ctx_free(ctx);
}

/* Rows r_i = sum_{j >= i} (R - j) a_j and y times them: the weighted
 * tails of the rows of a chain's mass matrix. The terms with a
 * coefficient are shared like unit ones, so the rows are built one from
 * the next (an addition and a product a row). Where a row is a factor
 * (y r_i) the expression core writes its sum with the first coefficient
 * 1, so that no two rows have a term in common; scaled to a unit last
 * coefficient, which all rows share, they are the tails again. */
static void test_weighted_tails(void)
{
    fixture t;
    setup(&t);
    ch_ctx *ctx = t.ctx;
    enum { R = 7 }; /* a_j = x0..x6, y = x7 */
    const ch_expr *row[R], *yrow[R];
    for (int i = 0; i < R; i++) {
        const ch_expr *terms[R];
        for (int j = i; j < R; j++) terms[j - i] = ch_scale_si(ctx, R - j, t.x[j]);
        row[i] = ch_add_n(ctx, (size_t)(R - i), terms);
        yrow[i] = ch_mul(ctx, t.x[R], row[i]);
    }
    ch_cse_prog p;
    if (build(&t, R, row, &p) == 0)
        CHECK_MSG(p.after.add <= R - 1 && p.after.mul <= R - 1, "%.0f add %.0f mul\n%s",
                  p.after.add, p.after.mul, p.body.s);
    ch_cse_prog_free(&p);
    if (build(&t, R, yrow, &p) == 0)
        CHECK_MSG(p.after.add <= R - 1 && p.after.mul <= 3 * R, "%.0f add %.0f mul\n%s",
                  p.after.add, p.after.mul, p.body.s);
    ch_cse_prog_free(&p);
    ch_ctx_free(ctx);
}

/* Products sharing factors across outputs, and prefix sums. */
static void test_sharing(void)
{
    fixture t;
    setup(&t);
    ch_ctx *ctx = t.ctx;
    const ch_expr *abc = ch_mul(ctx, t.x[0], ch_mul(ctx, t.x[1], t.x[2]));
    const ch_expr *e[5];
    for (int i = 0; i < 5; i++) e[i] = ch_mul(ctx, abc, t.x[3 + i]);
    ch_cse_prog p;
    if (build(&t, 5, e, &p) == 0) /* naive 15 muls: a*b*c once, then one each */
        CHECK_MSG(p.after.mul <= 7, "%.0f mul\n%s", p.after.mul, p.body.s);
    ch_cse_prog_free(&p);
    /* S_k = x0 + ... + xk and -(x0 + ... + xk) + 2: each one addition more */
    const ch_expr *s[7], *sum = t.x[0];
    for (int k = 1; k < NS; k++) {
        sum = ch_add(ctx, sum, t.x[k]);
        s[k - 1] = k % 2 ? sum : ch_sub(ctx, ch_num_si(ctx, 2), sum);
    }
    if (build(&t, 7, s, &p) == 0) /* naive 1 + 2 + ... + 7 (+ 3 constants) */
        CHECK_MSG(p.after.add <= 7 + 3, "%.0f add\n%s", p.after.add, p.body.s);
    ch_cse_prog_free(&p);
    /* P_i = x0*x7 + x1 + ... + xi, each one addition from P_(i-1), while
     * other sums make x_j the more frequent the larger j (so that the
     * sharing trie, most frequent term first, orders them x6, ..., x1 and
     * shares nothing): 2j sums x_j + x0^(r+2) for each j (42 additions),
     * then at most 6 for the P_i (21 without the chain pass) */
    enum { NP = 6, NE = NP * (NP + 1) };
    const ch_expr *o[NP + NE], *pi = ch_mul(ctx, t.x[0], t.x[7]);
    size_t no = 0;
    for (int i = 1; i <= NP; i++) o[no++] = pi = ch_add(ctx, pi, t.x[i]);
    for (int j = 1, r = 0; j <= NP; j++)
        for (int q = 0; q < 2 * j; q++, r++)
            o[no++] = ch_add(ctx, t.x[j], ch_pow_si(ctx, t.x[0], r + 2));
    if (build(&t, no, o, &p) == 0)
        CHECK_MSG(p.after.add <= NE + NP, "%.0f add\n%s", p.after.add, p.body.s);
    ch_cse_prog_free(&p);
    ch_ctx_free(ctx);
}

/* Random expressions: the program evaluates to them, never costs more than
 * the trees, and two builds are byte-identical. */
static void test_random(void)
{
    fixture t;
    setup(&t);
    ch_ctx *ctx = t.ctx;
    rx_rng g = {2024};
    int ok = 0;
    for (int round = 0; round < 60; round++) {
        const ch_expr *e[6];
        int n = 1 + rx_int(&g, 6);
        for (int i = 0; i < n; i++) {
            /* sums of products with shared factors, as derivations make */
            const ch_expr *terms[8];
            int nt = 1 + rx_int(&g, 8);
            for (int k = 0; k < nt; k++) {
                const ch_expr *m = rx_expr(ctx, &g, t.x, NS, 2);
                int nf = rx_int(&g, 4);
                for (int f = 0; f < nf; f++) m = ch_mul(ctx, m, t.x[rx_int(&g, 4)]);
                terms[k] = m;
            }
            e[i] = ch_add_n(ctx, (size_t)nt, terms);
        }
        ch_cse_prog p, q;
        ch_error err;
        ch_error_clear(&err);
        int rc = ch_cse_build(ctx, (size_t)n, e, namer, NULL, "w", "    ", &p, &err);
        CHECK_MSG(rc == 0, "%s", err.msg);
        if (rc) continue;
        rc = ch_cse_build(ctx, (size_t)n, e, namer, NULL, "w", "    ", &q, &err);
        CHECK(rc == 0 && strcmp(p.body.s ? p.body.s : "", q.body.s ? q.body.s : "") == 0);
        int bad = compare(ctx, e, (size_t)n, &p, t.x, &t.r, 10, 1e-9);
        CHECK_MSG(bad == 0, "round %d: %d mismatches in\n%s", round, bad, p.body.s);
        CHECK_MSG(total(&p.after) <= total(&p.before), "round %d: %.0f > %.0f", round,
                  total(&p.after), total(&p.before));
        ok += bad == 0;
        ch_cse_prog_free(&p);
        ch_cse_prog_free(&q);
    }
    CHECK(ok == 60);
    ch_ctx_free(ctx);
}

static const char *namer_y(void *data, const ch_sym *s)
{
    static const char *const txt[NS] = {"y[0]", "y[1]", "y[2]", "y[3]",
                                        "y[4]", "y[5]", "y[6]", "y[7]"};
    (void)data;
    return s->kind == CH_SYM_COORD && s->index >= 0 && s->index < NS ? txt[s->index] : NULL;
}

static int same_prog(const ch_cse_prog *p, const ch_cse_prog *q)
{
    if (strcmp(p->body.s ? p->body.s : "", q->body.s ? q->body.s : "") != 0 || p->n != q->n ||
        p->ntemps != q->ntemps || memcmp(&p->before, &q->before, sizeof p->before) != 0 ||
        memcmp(&p->after, &q->after, sizeof p->after) != 0)
        return 0;
    for (size_t i = 0; i < p->n; i++)
        if (strcmp(p->ref[i], q->ref[i]) != 0) return 0;
    return 1;
}

/* Through a cache: the first build is the plain one, asking again gives
 * the same program and makes no node, while other names or another stem
 * give another program (the plain one for them). */
static void test_cache(void)
{
    fixture t;
    setup(&t);
    ch_ctx *ctx = t.ctx;
    rx_rng g = {77};
    ch_cse_cache *cache = ch_cse_cache_new();
    CHECK(cache != NULL);
    for (int round = 0; cache && round < 20; round++) {
        const ch_expr *e[4];
        int n = 1 + rx_int(&g, 4);
        for (int i = 0; i < n; i++) {
            const ch_expr *terms[4];
            for (int k = 0; k < 4; k++)
                terms[k] = ch_mul(ctx, rx_expr(ctx, &g, t.x, NS, 2), t.x[rx_int(&g, NS)]);
            /* a denominator shared by two products: the CSE makes nodes */
            const ch_expr *d = ch_add(ctx, t.x[0], ch_mul(ctx, t.x[1], t.x[2]));
            terms[0] = ch_div(ctx, terms[0], d);
            terms[1] = ch_div(ctx, terms[1], d);
            e[i] = ch_add_n(ctx, 4, terms);
        }
        ch_cse_prog plain, first, again, other, other_plain, stem, stem_plain;
        ch_error err;
        ch_error_clear(&err);
        int rc = ch_cse_build(ctx, (size_t)n, e, namer, NULL, "w", "    ", &plain, &err);
        rc |= ch_cse_build_cached(ctx, cache, (size_t)n, e, namer, NULL, "w", "    ", &first, &err);
        size_t nodes = ch_ctx_nnodes(ctx);
        rc |= ch_cse_build_cached(ctx, cache, (size_t)n, e, namer, NULL, "w", "    ", &again, &err);
        CHECK(ch_ctx_nnodes(ctx) == nodes);
        rc |= ch_cse_build_cached(ctx, cache, (size_t)n, e, namer_y, NULL, "w", "    ", &other,
                                  &err);
        rc |= ch_cse_build(ctx, (size_t)n, e, namer_y, NULL, "w", "    ", &other_plain, &err);
        rc |= ch_cse_build_cached(ctx, cache, (size_t)n, e, namer, NULL, "u", "    ", &stem, &err);
        rc |= ch_cse_build(ctx, (size_t)n, e, namer, NULL, "u", "    ", &stem_plain, &err);
        CHECK_MSG(rc == 0, "%s", err.msg);
        if (rc == 0) {
            CHECK(same_prog(&plain, &first));
            CHECK(same_prog(&plain, &again));
            CHECK(!same_prog(&plain, &other) && same_prog(&other, &other_plain));
            CHECK(!same_prog(&plain, &stem) && same_prog(&stem, &stem_plain));
        }
        ch_cse_prog_free(&plain);
        ch_cse_prog_free(&first);
        ch_cse_prog_free(&again);
        ch_cse_prog_free(&other);
        ch_cse_prog_free(&other_plain);
        ch_cse_prog_free(&stem);
        ch_cse_prog_free(&stem_plain);
    }
    ch_cse_cache_free(cache);
    ch_ctx_free(ctx);
}

/* Counts are exact up to 2^53 and written with three digits beyond, not
 * as the false digits of a huge double. */
static void test_count_print(void)
{
    ch_opcount c = {12, 9007199254740991.0, 2e21, 0};
    ch_buf b;
    ch_buf_init(&b);
    ch_opcount_print(&b, &c);
    CHECK_MSG(b.s && strcmp(b.s, "12 add, 9007199254740991 mul, 2e+21 div, 0 calls") == 0, "%s",
              b.s ? b.s : "(null)");
    ch_buf_free(&b);
}

/* The one C printer's numbers: correctly rounded doubles, never read as
 * integers, infinities and NaN as the macros of <math.h>. */
static void test_c_double(void)
{
    static const struct { double v; const char *text; } cases[] = {
        {3.0, "3.0"}, {-7.0, "-7.0"}, {0.0, "0.0"}, {100000.0, "100000.0"},
        {1.0 / 1024, "0.0009765625"}, {0.1, "0.10000000000000001"},
        {2.0 / 3.0, "0.66666666666666663"}, {1.0 / 3.0, "0.33333333333333331"},
        {1e300, "1.0000000000000001e+300"}, {4.9406564584124654e-324, "4.9406564584124654e-324"},
        {HUGE_VAL, "HUGE_VAL"}, {-HUGE_VAL, "-HUGE_VAL"}, {NAN, "NAN"},
    };
    ch_buf b;
    ch_buf_init(&b);
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        ch_buf_reset(&b);
        ch_c_double(&b, cases[i].v);
        CHECK_MSG(b.s && strcmp(b.s, cases[i].text) == 0, "%s, want %s", b.s ? b.s : "(null)",
                  cases[i].text);
    }
    ch_buf_free(&b);
}

/* Symbols reach the text only through the namer: one it refuses fails the
 * build naming the symbol; pi is a literal; a constant beyond double is an
 * error, never HUGE_VAL in a kernel; a chain deeper than any recursion
 * would take builds; signs never double up. */
static void test_c_text(void)
{
    fixture t;
    setup(&t);
    ch_ctx *ctx = t.ctx;
    const ch_expr *x = t.x[0], *y = t.x[1];
    const ch_expr *hidden = ch_symbol(ctx, "hidden", CH_SYM_PARAM, NULL, 0, 0);
    ch_cse_prog p;
    ch_error err;
    ch_error_clear(&err);
    const ch_expr *e = ch_add(ctx, ch_mul(ctx, ch_num_si(ctx, 2), x), ch_fun1(ctx, CH_F_SIN, hidden));
    CHECK(ch_cse_build(ctx, 1, &e, namer, NULL, "w", "    ", &p, &err) != 0);
    CHECK_MSG(err.code == CH_ERR_MODEL && strstr(err.msg, "hidden"), "%s", err.msg);
    ch_cse_prog_free(&p);
    e = ch_mul(ctx, ch_num_si(ctx, 2), ch_pi(ctx));
    ch_error_clear(&err);
    CHECK(ch_cse_build(ctx, 1, &e, namer, NULL, "w", "    ", &p, &err) == 0);
    CHECK_MSG(p.body.s && strstr(p.body.s, "2.0*3.1415926535897931"), "%s",
              p.body.s ? p.body.s : "(null)");
    ch_cse_prog_free(&p);
    e = ch_mul(ctx, ch_num_decimal(ctx, "1e400", 5), x);
    ch_error_clear(&err);
    CHECK(ch_cse_build(ctx, 1, &e, namer, NULL, "w", "    ", &p, &err) != 0);
    CHECK_MSG(err.code != CH_OK && strstr(err.msg, "double"), "%s", err.msg);
    ch_cse_prog_free(&p);
    e = x;
    for (int i = 0; i < 5000 && e; i++) e = ch_fun1(ctx, i % 2 ? CH_F_SIN : CH_F_ATAN, e);
    ch_error_clear(&err);
    CHECK(e && ch_cse_build(ctx, 1, &e, namer, NULL, "w", "    ", &p, &err) == 0);
    CHECK(p.ntemps == 5000);
    ch_cse_prog_free(&p);
    const ch_expr *m1 = ch_num_si(ctx, -1);
#define NEG(a) ch_mul(ctx, m1, (a))
    const ch_expr *tricky[] = {
        NEG(ch_pow(ctx, x, ch_num_si(ctx, -2))),
        ch_sub(ctx, ch_num_si(ctx, 0), ch_mul(ctx, ch_num_frac(ctx, -1, 2), NEG(x))),
        NEG(ch_fun1(ctx, CH_F_COS, NEG(x))),
        ch_sub(ctx, NEG(x), NEG(NEG(y))),
        ch_mul(ctx, NEG(x), ch_pow(ctx, NEG(y), ch_num_frac(ctx, -1, 2))),
    };
#undef NEG
    for (size_t i = 0; i < sizeof tricky / sizeof *tricky; i++) {
        ch_error_clear(&err);
        CHECK(ch_cse_build(ctx, 1, tricky + i, namer, NULL, "w", "    ", &p, &err) == 0);
        ch_buf all;
        ch_buf_init(&all);
        ch_buf_put(&all, p.body.s ? p.body.s : "");
        ch_buf_put(&all, p.ref[0] ? p.ref[0] : "");
        CHECK_MSG(all.s && !strstr(all.s, "--") && !strstr(all.s, "- -") && !strstr(all.s, "+ -") &&
                      !strstr(all.s, "*-") && !strstr(all.s, "/-"),
                  "%s", all.s ? all.s : "(null)");
        CHECK(compare(ctx, tricky + i, 1, &p, t.x, &t.r, 5, 1e-12) == 0);
        ch_buf_free(&all);
        ch_cse_prog_free(&p);
    }
    ch_ctx_free(ctx);
}

/* The program as data (ch_cse_build_data) says what the text says: each
 * statement's line defines w<j> and names the statements and symbols its
 * operands are, each an earlier statement; a call is a line with a
 * function; each output is its text's statement or symbol. A plain build
 * has no data. */
static void test_prog_data(void)
{
    fixture t;
    setup(&t);
    ch_ctx *ctx = t.ctx;
    rx_rng g = {77};
    for (int round = 0; round < 40; round++) {
        const ch_expr *e[4];
        int n = 1 + rx_int(&g, 4);
        for (int i = 0; i < n; i++) e[i] = rx_expr(ctx, &g, t.x, NS, 3);
        ch_cse_prog p, q;
        ch_error err;
        ch_error_clear(&err);
        int rc = ch_cse_build_data(ctx, (size_t)n, e, namer, NULL, "w", "    ", &p, &err);
        CHECK_MSG(rc == 0, "%s", err.msg);
        if (rc) continue;
        CHECK(ch_cse_build(ctx, (size_t)n, e, namer, NULL, "w", "    ", &q, &err) == 0);
        CHECK(q.line == NULL && q.arg == NULL && q.out == NULL);
        CHECK(!strcmp(p.body.s ? p.body.s : "", q.body.s ? q.body.s : ""));
        ch_cse_prog_free(&q);
        CHECK(p.line && p.line[p.ntemps] == p.body.len);
        for (size_t j = 0; p.line && j < p.ntemps; j++) {
            char line[4096], want[64], *eq;
            size_t len = p.line[j + 1] - p.line[j];
            if (len >= sizeof line) continue;
            memcpy(line, p.body.s + p.line[j], len);
            line[len] = '\0';
            snprintf(want, sizeof want, "    const double w%zu = ", j);
            CHECK_MSG(!strncmp(line, want, strlen(want)), "line %zu: %s", j, line);
            eq = line + strlen(want);
            for (size_t a = p.arg_at[j]; a < p.arg_at[j + 1]; a++) {
                const ch_cse_arg *arg = &p.arg[a];
                if (arg->stmt != CH_CSE_NONE) {
                    snprintf(want, sizeof want, "w%u", (unsigned)arg->stmt);
                    CHECK_MSG(arg->stmt < j && strstr(eq, want), "line %zu: %s lacks %s", j,
                              line, want);
                } else if (arg->sym) {
                    CHECK_MSG(strstr(eq, namer(NULL, arg->sym)) != NULL, "line %zu: %s", j, line);
                }
            }
            int call = 0;
            for (const char *c = strchr(eq, '('); c && !call; c = strchr(c + 1, '('))
                call = c > eq && ((c[-1] >= 'a' && c[-1] <= 'z') || (c[-1] >= '0' && c[-1] <= '9'));
            CHECK_MSG(call == p.call[j], "line %zu: %s", j, line);
        }
        for (int i = 0; p.out && i < n; i++) {
            char want[32];
            if (p.out[i].stmt != CH_CSE_NONE)
                snprintf(want, sizeof want, "w%u", (unsigned)p.out[i].stmt);
            else
                snprintf(want, sizeof want, "%s", p.out[i].sym ? namer(NULL, p.out[i].sym)
                                                                 : p.ref[i]);
            CHECK_MSG(!strcmp(p.ref[i], want), "output %d: %s, data %s", i, p.ref[i], want);
        }
        ch_cse_prog_free(&p);
    }
    ch_ctx_free(ctx);
}

int main(void)
{
    RUN(test_common_factor);
    RUN(test_greedy);
    RUN(test_splice);
    RUN(test_factor_distribute);
    RUN(test_factor_greedy_order);
    RUN(test_weighted_tails);
    RUN(test_sharing);
    RUN(test_random);
    RUN(test_cache);
    RUN(test_count_print);
    RUN(test_c_double);
    RUN(test_c_text);
    RUN(test_prog_data);
    return check_summary("cse");
}
