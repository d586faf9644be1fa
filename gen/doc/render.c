/* render.c — a derivation in text, LaTeX, SymPy and JSON (SPEC §2-§3).
 *
 * One walk over the selected entries per format; each format has a writer
 * for the entry kinds. Expressions go through print.c; names of the model
 * reach the output only as identifiers already checked by the parser, and
 * are escaped for the format where that matters (JSON strings, LaTeX).
 * A model symbol whose name SymPy reads as something else (I, E, N, S,
 * Integer, lambda: sympy_names.h) is written NAME_ in the expressions of
 * the SymPy and JSON formats, which say so ("renamed"). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "doc/derive.h"
#include "core/version.h"
#include "doc/print.h"
#include "doc/sympy_names.h"


/* One printer per call, so that shared subexpressions of the entries are
 * ordered for display once (print.h). With a sink, the text goes there
 * whenever the buffer holds DRAIN_AT bytes. */
/* The symbols renamed for SymPy, in the order of the context's table. */
typedef struct {
    const ch_sym **sym;
    char **name;
    size_t n;
} renames;

typedef struct {
    ch_buf *out;
    const ch_derivation *d;
    ch_printer *pr;
    FILE *sink;
    renames rn;
} writer;

static int cmp_name(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static int sympy_reserved(const char *name)
{
    return bsearch(&name, ch_sympy_names, sizeof ch_sympy_names / sizeof ch_sympy_names[0],
                   sizeof ch_sympy_names[0], cmp_name) != NULL;
}

static int name_taken(const ch_ctx *ctx, const renames *r, const char *name)
{
    if (sympy_reserved(name)) return 1;
    for (uint32_t i = 0; i < ch_ctx_nsyms(ctx); i++)
        if (ch_ctx_sym(ctx, i)->name && !strcmp(ch_ctx_sym(ctx, i)->name, name)) return 1;
    for (size_t i = 0; i < r->n; i++)
        if (!strcmp(r->name[i], name)) return 1;
    return 0;
}

static void renames_free(renames *r)
{
    for (size_t i = 0; i < r->n; i++) free(r->name[i]);
    free(r->name);
    free(r->sym);
    memset(r, 0, sizeof *r);
}

/* NAME_ (one more _ while that is taken) for every reserved name; 0, or
 * -1 out of memory. */
static int renames_build(renames *r, const ch_ctx *ctx)
{
    memset(r, 0, sizeof *r);
    uint32_t ns = ch_ctx_nsyms(ctx);
    for (uint32_t i = 0; i < ns; i++) {
        const ch_sym *s = ch_ctx_sym(ctx, i);
        if (s->kind == CH_SYM_PI || !s->name || !sympy_reserved(s->name)) continue;
        if (!r->sym) {
            r->sym = calloc(ns, sizeof *r->sym);
            r->name = calloc(ns, sizeof *r->name);
            if (!r->sym || !r->name) return renames_free(r), -1;
        }
        size_t len = strlen(s->name), k = 1;
        char *nm = NULL;
        do {
            free(nm);
            if (!(nm = malloc(len + k + 1))) return renames_free(r), -1;
            memcpy(nm, s->name, len);
            memset(nm + len, '_', k);
            nm[len + k++] = 0;
        } while (name_taken(ctx, r, nm));
        r->sym[r->n] = s;
        r->name[r->n++] = nm;
    }
    return 0;
}

static const char *renames_namer(void *data, const ch_sym *s)
{
    const renames *r = data;
    for (size_t i = 0; i < r->n; i++)
        if (r->sym[i] == s) return r->name[i];
    return NULL;
}

#define DRAIN_AT 65536

static void drain(const writer *w)
{
    ch_buf *o = w->out;
    if (!w->sink || o->len < DRAIN_AT || o->oom) return;
    fwrite(o->s, 1, o->len, w->sink); /* errors: ferror at the end */
    ch_buf_reset(o);
}

/* Derived quantities of large models can be DAGs whose tree is
 * astronomically large (shared subexpressions printed again and again).
 * Beyond this many tree nodes an expression is not written out: text and
 * LaTeX say so, JSON and SymPy give null/None. emit writes such quantities
 * with shared temporaries instead. The note gives no size of the DAG:
 * counting it walks the whole DAG of every such entry, and on the
 * n-trailer those walks grew as N^3 (the 200-trailer's text derive spent
 * half its time on them). A model of n coordinates may print
 * PRINT_PER_N2 n^2 nodes an entry when that is more: L and E of the
 * n-trailer are sums over pairs of bodies (the 200-trailer's: 240 000 and
 * 400 000 nodes), while the entries refused grow exponentially (alpha of
 * the n-trailer doubles per axle). */
#define PRINT_MAX_TREE 200000
#define PRINT_PER_N2 16

static size_t print_cap(const writer *w)
{
    size_t n = w->d->model->n;
    return n * n > PRINT_MAX_TREE / PRINT_PER_N2 ? PRINT_PER_N2 * n * n : PRINT_MAX_TREE;
}

static int printable(const writer *w, const ch_expr *e)
{
    size_t cap = print_cap(w);
    return ch_tree_size(w->d->ctx, e, cap + 1) <= cap;
}

static void put_expr(const writer *w, const ch_expr *e, ch_style style)
{
    ch_buf *o = w->out;
    if (printable(w, e)) {
        ch_printer_put(w->pr, o, e);
        drain(w);
        return;
    }
    const char *fmt = style == CH_STYLE_LATEX
                          ? "\\text{(too large to print: over %zu terms written out; see emit)}"
                          : "(too large to print: over %zu terms written out; see emit)";
    ch_buf_printf(o, fmt, print_cap(w));
}

static const char *verdict_word(int v)
{
    return v == 1 ? "true" : v == 0 ? "false" : "unknown";
}

/* ---- text --------------------------------------------------------------- */

static void text_label(ch_buf *o, const ch_entry *e, size_t i, size_t j)
{
    ch_buf_put(o, e->symbol ? e->symbol : e->key);
    if (e->kind == CH_ENTRY_VECTOR)
        ch_buf_printf(o, "_%s", e->row_labels ? e->row_labels[i] : "?");
    else if (e->kind == CH_ENTRY_MATRIX)
        ch_buf_printf(o, "[%s,%s]", e->row_labels[i], e->col_labels[j]);
}

static void text_entry(const writer *w, const ch_entry *e)
{
    ch_buf *o = w->out;
    ch_buf_printf(o, "\n== %s", e->title);
    if (e->ref) ch_buf_printf(o, "  [%s]", e->ref);
    ch_buf_put(o, " ==\n");
    switch (e->kind) {
    case CH_ENTRY_NULL:
        ch_buf_printf(o, "  (none: %s)\n", e->note);
        break;
    case CH_ENTRY_NAME:
        ch_buf_printf(o, "  %s\n", e->names[0]);
        break;
    case CH_ENTRY_NAMES:
        ch_buf_put(o, " ");
        for (size_t i = 0; i < e->rows; i++) {
            const ch_expr *s = ch_symbol_find(w->d->ctx, e->names[i]);
            ch_buf_put(o, " ");
            if (s)
                put_expr(w, s, CH_STYLE_TEXT);
            else
                ch_buf_put(o, e->names[i]);
            if (i + 1 < e->rows) ch_buf_put(o, ",");
        }
        ch_buf_put(o, "\n");
        break;
    case CH_ENTRY_PARAMS:
        for (size_t i = 0; i < e->rows; i++) {
            ch_buf_printf(o, "  %s = ", e->names[i]);
            put_expr(w, e->e[i], CH_STYLE_TEXT);
            ch_buf_put(o, "\n");
        }
        if (!e->rows) ch_buf_put(o, "  (none)\n");
        break;
    case CH_ENTRY_EXPR:
        ch_buf_printf(o, "  %s = ", e->symbol ? e->symbol : e->key);
        put_expr(w, e->e[0], CH_STYLE_TEXT);
        ch_buf_put(o, "\n");
        break;
    case CH_ENTRY_VECTOR:
    case CH_ENTRY_MATRIX: {
        size_t zeros = 0;
        for (size_t i = 0; i < e->rows; i++)
            for (size_t j = 0; j < e->cols; j++) {
                const ch_expr *x = e->e[i * e->cols + j];
                if (ch_is_zero(x) && e->kind == CH_ENTRY_MATRIX) {
                    zeros++;
                    continue;
                }
                ch_buf_put(o, "  ");
                text_label(o, e, i, j);
                ch_buf_put(o, " = ");
                put_expr(w, x, CH_STYLE_TEXT);
                ch_buf_put(o, "\n");
            }
        if (zeros) ch_buf_printf(o, "  (the %zu entries not listed are 0)\n", zeros);
        break;
    }
    case CH_ENTRY_DEGREES:
        for (size_t i = 0; i < e->rows; i++) {
            ch_buf_printf(o, "  phi_%s: ", e->row_labels[i]);
            if (e->e[i]) {
                ch_buf_put(o, "homogeneous of degree ");
                put_expr(w, e->e[i], CH_STYLE_TEXT);
                ch_buf_put(o, "\n");
            } else {
                ch_buf_put(o, "not homogeneous\n");
            }
        }
        break;
    case CH_ENTRY_VERDICT:
        ch_buf_printf(o, "  %s\n", verdict_word(e->verdict));
        break;
    case CH_ENTRY_OBJECT:
        for (size_t i = 0; i < e->rows; i++) {
            ch_buf_printf(o, "  %s' = ", e->row_labels[i]);
            put_expr(w, e->e[i], CH_STYLE_TEXT);
            ch_buf_put(o, "\n");
        }
        break;
    case CH_ENTRY_PH:
        for (size_t i = 0; i < e->rows; i++) {
            ch_buf_printf(o, "  %s' = ", e->row_labels[i]);
            put_expr(w, e->e[i], CH_STYLE_TEXT);
            ch_buf_printf(o, "\n  y_%s' = ", e->row_labels[i]);
            put_expr(w, e->e2[i], CH_STYLE_TEXT);
            ch_buf_put(o, "\n");
        }
        break;
    }
    if (e->note && e->kind != CH_ENTRY_NULL) ch_buf_printf(o, "  (%s)\n", e->note);
}

static void write_text(writer *w, size_t n, const ch_entry *const *sel)
{
    const ch_model *m = w->d->model;
    ch_buf_printf(w->out, "Derivation of model %s by chetaev %s\n", m->name,
                  CH_VERSION);
    ch_buf_put(w->out, "Notation: q' is dq/dt, q'' is d2q/dt2; references are "
                       "to the seed papers (see THEORY).\n");
    for (size_t i = 0; i < n; i++) text_entry(w, sel[i]);
}

/* ---- LaTeX -------------------------------------------------------------- */

static void latex_escape(ch_buf *o, const char *s)
{
    for (; *s; s++) {
        if (strchr("_&%$#{}", *s)) ch_buf_putc(o, '\\');
        if (*s == '\\' || *s == '~' || *s == '^') {
            ch_buf_put(o, "\\textbackslash{}");
            continue;
        }
        ch_buf_putc(o, *s);
    }
}

static void latex_label(ch_buf *o, const ch_entry *e, size_t i, size_t j)
{
    static const struct { const char *sym, *tex; } map[] = {
        {"p", "p"}, {"M", "M"}, {"E", "E"}, {"Q", "Q"}, {"phi", "\\varphi"},
        {"G", "G"}, {"c", "c"}, {"R", "R"}, {"L", "L"}, {"L*", "L^{*}"},
        {"E*", "E^{*}"}, {"M*", "M^{*}"}, {"y*", "y^{*}"}, {"H*", "H^{*}"},
        {"lambda", "\\lambda"}, {"p*", "p^{*}"}, {"alpha_bar", "\\bar{\\alpha}"},
        {"B", "B"}, {"dE/dt", "\\frac{dE}{dt}"}, {"eq", "\\mathcal{E}^{*}"}};
    const char *tex = NULL;
    for (size_t k = 0; e->symbol && k < sizeof map / sizeof map[0]; k++)
        if (strcmp(map[k].sym, e->symbol) == 0) tex = map[k].tex;
    if (tex)
        ch_buf_put(o, tex);
    else {
        ch_buf_put(o, "\\mathrm{");
        latex_escape(o, e->key);
        ch_buf_put(o, "}");
    }
    if (e->kind == CH_ENTRY_VECTOR && e->row_labels) {
        ch_buf_put(o, "_{");
        ch_print_latex_name(o, e->row_labels[i]);
        ch_buf_put(o, "}");
    } else if (e->kind == CH_ENTRY_MATRIX) {
        ch_buf_put(o, "_{");
        ch_print_latex_name(o, e->row_labels[i]);
        ch_buf_put(o, ",\\,");
        ch_print_latex_name(o, e->col_labels[j]);
        ch_buf_put(o, "}");
    }
}

/* Names of symbols (coordinates, velocities, dependent velocities) as
 * the symbols themselves, so that x_t shows as \dot{x}. */
static void latex_names(const writer *w, const ch_entry *e)
{
    ch_buf *o = w->out;
    ch_buf_put(o, "$");
    for (size_t i = 0; i < e->rows; i++) {
        if (i) ch_buf_put(o, ",\\ ");
        const ch_expr *s = ch_symbol_find(w->d->ctx, e->names[i]);
        if (s)
            put_expr(w, s, CH_STYLE_LATEX);
        else
            ch_print_latex_name(o, e->names[i]);
    }
    ch_buf_put(o, "$\n");
}

static void latex_entry(const writer *w, const ch_entry *e)
{
    ch_buf *o = w->out;
    ch_buf_put(o, "\n\\section*{");
    ch_buf_put(o, e->latex_title);
    if (e->ref) ch_buf_printf(o, " \\normalfont\\small(%s)", e->ref);
    ch_buf_put(o, "}\n");
    switch (e->kind) {
    case CH_ENTRY_NULL:
        ch_buf_put(o, "None: ");
        latex_escape(o, e->note);
        ch_buf_put(o, ".\n");
        break;
    case CH_ENTRY_NAME:
        ch_buf_put(o, "\\texttt{");
        latex_escape(o, e->names[0]);
        ch_buf_put(o, "}\n");
        break;
    case CH_ENTRY_NAMES:
        latex_names(w, e);
        break;
    case CH_ENTRY_PARAMS:
        if (!e->rows) ch_buf_put(o, "None.\n");
        for (size_t i = 0; i < e->rows; i++) {
            ch_buf_put(o, i ? ",\\quad $" : "$");
            ch_print_latex_name(o, e->names[i]);
            ch_buf_put(o, " = ");
            put_expr(w, e->e[i], CH_STYLE_LATEX);
            ch_buf_put(o, "$");
        }
        ch_buf_put(o, "\n");
        break;
    case CH_ENTRY_EXPR:
        ch_buf_put(o, "\\begin{align*}\n");
        latex_label(o, e, 0, 0);
        ch_buf_put(o, " &= ");
        put_expr(w, e->e[0], CH_STYLE_LATEX);
        ch_buf_put(o, "\n\\end{align*}\n");
        break;
    case CH_ENTRY_VECTOR:
    case CH_ENTRY_MATRIX: {
        size_t zeros = 0, shown = 0;
        ch_buf_put(o, "\\begin{align*}\n");
        for (size_t i = 0; i < e->rows; i++)
            for (size_t j = 0; j < e->cols; j++) {
                const ch_expr *x = e->e[i * e->cols + j];
                if (ch_is_zero(x) && e->kind == CH_ENTRY_MATRIX) {
                    zeros++;
                    continue;
                }
                if (shown++) ch_buf_put(o, " \\\\\n");
                latex_label(o, e, i, j);
                ch_buf_put(o, " &= ");
                put_expr(w, x, CH_STYLE_LATEX);
            }
        if (!shown) ch_buf_put(o, "0");
        ch_buf_put(o, "\n\\end{align*}\n");
        if (zeros) ch_buf_printf(o, "The %zu entries not listed are $0$.\n", zeros);
        break;
    }
    case CH_ENTRY_DEGREES:
        for (size_t i = 0; i < e->rows; i++) {
            ch_buf_printf(o, "%s$\\varphi_{%s}$: ", i ? "\\\\\n" : "", e->row_labels[i]);
            if (e->e[i]) {
                ch_buf_put(o, "homogeneous of degree $");
                put_expr(w, e->e[i], CH_STYLE_LATEX);
                ch_buf_put(o, "$");
            } else {
                ch_buf_put(o, "not homogeneous");
            }
        }
        ch_buf_put(o, "\n");
        break;
    case CH_ENTRY_VERDICT:
        ch_buf_printf(o, "\\textbf{%s}\n", verdict_word(e->verdict));
        break;
    case CH_ENTRY_OBJECT:
    case CH_ENTRY_PH:
        ch_buf_put(o, "\\begin{align*}\n");
        for (size_t i = 0; i < e->rows; i++) {
            if (i) ch_buf_put(o, " \\\\\n");
            ch_buf_put(o, "\\dot{");
            ch_print_latex_name(o, e->row_labels[i]);
            ch_buf_put(o, "} &= ");
            put_expr(w, e->e[i], CH_STYLE_LATEX);
            if (e->kind != CH_ENTRY_PH) continue;
            ch_buf_put(o, " \\\\\n\\dot{y}^{*}_{");
            ch_print_latex_name(o, e->row_labels[i]);
            ch_buf_put(o, "} &= ");
            put_expr(w, e->e2[i], CH_STYLE_LATEX);
        }
        ch_buf_put(o, "\n\\end{align*}\n");
        break;
    }
    if (e->note && e->kind != CH_ENTRY_NULL) {
        ch_buf_put(o, "\\par\\noindent ");
        latex_escape(o, e->note);
        ch_buf_put(o, ".\n");
    }
}

static void write_latex(writer *w, size_t n, const ch_entry *const *sel)
{
    ch_buf *o = w->out;
    ch_buf_put(o, "\\documentclass[11pt]{article}\n"
                  "\\usepackage{amsmath}\n"
                  "\\usepackage[margin=2cm]{geometry}\n"
                  "\\allowdisplaybreaks\n"
                  "\\begin{document}\n"
                  "\\begin{center}\\Large Derivation of model \\texttt{");
    latex_escape(o, w->d->model->name);
    ch_buf_printf(o, "}\\\\[2pt]\\normalsize by chetaev %s\\end{center}\n",
                  CH_VERSION);
    for (size_t i = 0; i < n; i++) latex_entry(w, sel[i]);
    ch_buf_put(o, "\n\\end{document}\n");
}

/* ---- SymPy -------------------------------------------------------------- */

static void py_string(ch_buf *o, const char *s)
{
    ch_print_json_string(o, s); /* a JSON string is a valid Python literal */
}

static void py_expr(const writer *w, const ch_expr *e)
{
    ch_buf *o = w->out;
    if (!printable(w, e)) {
        ch_buf_put(o, "None");
        return;
    }
    ch_buf_put(o, "_e(\"");
    ch_printer_put(w->pr, o, e);
    ch_buf_put(o, "\")");
    drain(w);
}

/* ---- JSON --------------------------------------------------------------- */

static void json_expr(const writer *w, const ch_expr *e)
{
    ch_buf *o = w->out;
    if (!printable(w, e)) {
        ch_buf_put(o, "null");
        return;
    }
    /* Printed in place: expression text has nothing to escape (names are
     * identifiers), which the check below confirms before it is kept. */
    size_t start = o->len;
    ch_buf_putc(o, '"');
    ch_printer_put(w->pr, o, e);
    if (!o->oom && !ch_print_json_plain(o->s + start + 1, o->len - start - 1)) {
        char *text = malloc(o->len - start);
        if (!text) {
            o->oom = 1;
            return;
        }
        memcpy(text, o->s + start + 1, o->len - start - 1);
        text[o->len - start - 1] = '\0';
        o->len = start;
        ch_print_json_string(o, text);
        free(text);
    } else {
        ch_buf_putc(o, '"');
    }
    drain(w);
}

/* A rational as a JSON number (exact for integers), NULL as null. */
static void json_number(ch_buf *o, const ch_expr *e)
{
    if (!e || e->kind != CH_NUM)
        ch_buf_put(o, "null");
    else if (fmpz_is_one(fmpq_denref(e->num)) && fmpz_fits_si(fmpq_numref(e->num)))
        ch_buf_printf(o, "%ld", (long)fmpz_get_si(fmpq_numref(e->num)));
    else
        ch_buf_printf(o, "%.17g", ch_fmpq_to_double(e->num));
}

/* ---- SPEC §3 values in Python and JSON syntax --------------------------- */

/* The two machine formats differ only in these words and in how an
 * expression or a parameter default is written. */
struct syntax {
    const char *null, *yes, *no, *unknown;
    const char *mat_open, *mat_close, *row_sep;
    void (*expr)(const writer *, const ch_expr *);
    void (*string)(ch_buf *, const char *);
    void (*param)(const writer *, const ch_entry *, size_t);
};

static void py_param(const writer *w, const ch_entry *e, size_t i)
{
    py_expr(w, e->e[i]); /* exact: _e("1/5") */
}

static void json_param(const writer *w, const ch_entry *e, size_t i)
{
    (void)e;
    double v = w->d->model->param_default[i];
    if (isfinite(v))
        ch_buf_printf(w->out, "%.17g", v);
    else
        ch_buf_put(w->out, "null");
}

static void json_degree(ch_buf *o, const ch_expr *e) { json_number(o, e); }

static const struct syntax python = {
    "None", "True", "False", "\"unknown\"", "Matrix([", "])", ",\n    ",
    py_expr, py_string, py_param};
static const struct syntax json = {
    "null", "true", "false", "\"unknown\"", "[", "]", ", ",
    json_expr, ch_print_json_string, json_param};

/* "[a, b, ...]": n expressions (NULL written as null) separated by sep. */
static void list(const writer *w, size_t n, const ch_expr *const *x,
                 const struct syntax *sx, const char *sep)
{
    ch_buf *o = w->out;
    ch_buf_put(o, "[");
    for (size_t i = 0; i < n; i++) {
        if (i) ch_buf_put(o, sep);
        if (x[i])
            sx->expr(w, x[i]);
        else
            ch_buf_put(o, sx->null);
    }
    ch_buf_put(o, "]");
}

static void write_value(const writer *w, const ch_entry *e,
                        const struct syntax *sx)
{
    ch_buf *o = w->out;
    switch (e->kind) {
    case CH_ENTRY_NULL: ch_buf_put(o, sx->null); break;
    case CH_ENTRY_NAME: sx->string(o, e->names[0]); break;
    case CH_ENTRY_NAMES:
        ch_buf_put(o, "[");
        for (size_t i = 0; i < e->rows; i++) {
            if (i) ch_buf_put(o, ", ");
            sx->string(o, e->names[i]);
        }
        ch_buf_put(o, "]");
        break;
    case CH_ENTRY_PARAMS:
    case CH_ENTRY_OBJECT:
        ch_buf_put(o, "{");
        for (size_t i = 0; i < e->rows; i++) {
            if (i) ch_buf_put(o, ", ");
            sx->string(o, e->names[i]);
            ch_buf_put(o, ": ");
            if (e->kind == CH_ENTRY_PARAMS)
                sx->param(w, e, i);
            else
                sx->expr(w, e->e[i]);
        }
        ch_buf_put(o, "}");
        break;
    case CH_ENTRY_EXPR: sx->expr(w, e->e[0]); break;
    case CH_ENTRY_VECTOR: list(w, e->rows, e->e, sx, sx->row_sep); break;
    case CH_ENTRY_MATRIX:
        ch_buf_put(o, sx->mat_open);
        for (size_t i = 0; i < e->rows; i++) {
            if (i) ch_buf_put(o, sx->row_sep);
            list(w, e->cols, e->e + i * e->cols, sx, ", ");
        }
        ch_buf_put(o, sx->mat_close);
        break;
    case CH_ENTRY_DEGREES:
        if (sx == &json) {
            ch_buf_put(o, "[");
            for (size_t i = 0; i < e->rows; i++) {
                if (i) ch_buf_put(o, ", ");
                json_degree(o, e->e[i]);
            }
            ch_buf_put(o, "]");
        } else {
            list(w, e->rows, e->e, sx, ", ");
        }
        break;
    case CH_ENTRY_VERDICT:
        ch_buf_put(o, e->verdict == 1 ? sx->yes : e->verdict == 0 ? sx->no : sx->unknown);
        break;
    case CH_ENTRY_PH:
        ch_buf_put(o, "{");
        sx->string(o, "q_t");
        ch_buf_put(o, ": ");
        list(w, e->rows, e->e, sx, ", ");
        ch_buf_put(o, ", ");
        sx->string(o, "y_t");
        ch_buf_put(o, ": ");
        list(w, e->rows, e->e2, sx, ", ");
        ch_buf_put(o, "}");
        break;
    }
}

static void write_sympy(writer *w, size_t n, const ch_entry *const *sel)
{
    ch_buf *o = w->out;
    ch_buf_printf(o, "#!/usr/bin/env python3\n"
                     "# SymPy rebuild of the derivation of model %s, written by "
                     "chetaev %s.\n"
                     "# Each SPEC section is a variable; run it to print them.\n"
                     "from sympy import Symbol, Matrix\n"
                     "from sympy.parsing.sympy_parser import parse_expr\n\n"
                     "_symbols = {name: Symbol(name) for name in [",
                  w->d->model->name, CH_VERSION);
    const ch_ctx *ctx = w->d->ctx;
    for (uint32_t i = 0, first = 1; i < ch_ctx_nsyms(ctx); i++) {
        const ch_sym *s = ch_ctx_sym(ctx, i);
        if (s->kind == CH_SYM_PI || renames_namer(&w->rn, s)) continue;
        if (!first) ch_buf_put(o, ", ");
        first = 0;
        py_string(o, s->name);
    }
    ch_buf_put(o, "]}\n");
    if (w->rn.n) {
        ch_buf_put(o, "# model symbols whose names SymPy reserves, written NAME_ in the\n"
                      "# expressions below: still the symbols of those names\n"
                      "_symbols.update({");
        for (size_t i = 0; i < w->rn.n; i++) {
            ch_buf_put(o, i ? ", " : "");
            py_string(o, w->rn.name[i]);
            ch_buf_put(o, ": Symbol(");
            py_string(o, w->rn.sym[i]->name);
            ch_buf_put(o, ")");
        }
        ch_buf_put(o, "})\n");
    }
    ch_buf_put(o, "\n\ndef _e(text):\n"
                  "    return parse_expr(text, local_dict=_symbols)\n\n\n");
    for (size_t i = 0; i < n; i++) {
        ch_buf_printf(o, "%s = ", sel[i]->key);
        write_value(w, sel[i], &python);
        ch_buf_put(o, "\n");
    }
    ch_buf_put(o, "\nif __name__ == \"__main__\":\n    for _name in [");
    for (size_t i = 0; i < n; i++)
        ch_buf_printf(o, "%s\"%s\"", i ? ", " : "", sel[i]->key);
    ch_buf_put(o, "]:\n        print(_name, \"=\", globals()[_name])\n");
}

static void write_json(writer *w, size_t n, const ch_entry *const *sel)
{
    ch_buf *o = w->out;
    ch_buf_put(o, "{");
    if (w->rn.n) { /* the names the expressions use for reserved ones */
        ch_buf_put(o, "\n  \"renamed\": {");
        for (size_t i = 0; i < w->rn.n; i++) {
            ch_buf_put(o, i ? ", " : "");
            ch_print_json_string(o, w->rn.sym[i]->name);
            ch_buf_put(o, ": ");
            ch_print_json_string(o, w->rn.name[i]);
        }
        ch_buf_put(o, "}");
    }
    for (size_t i = 0; i < n; i++) {
        ch_buf_put(o, i || w->rn.n ? ",\n  " : "\n  ");
        ch_print_json_string(o, sel[i]->key);
        ch_buf_put(o, ": ");
        write_value(w, sel[i], &json);
    }
    ch_buf_put(o, "\n}\n");
}

/* ---- selection and dispatch -------------------------------------------- */

static int write_all(ch_buf *out, FILE *sink, const ch_derivation *d,
                     ch_format fmt, size_t nonly, const char *const *only,
                     ch_error *err)
{
    const ch_entry **sel = calloc(d->n, sizeof *sel);
    if (!sel) return ch_error_set(err, CH_ERR_MEMORY, NULL, 0, 0, "out of memory");
    size_t n = 0;
    for (size_t k = 0; k < nonly; k++)
        if (!ch_derivation_find(d, only[k])) {
            ch_buf keys;
            ch_buf_init(&keys);
            for (size_t i = 0; i < d->n; i++)
                ch_buf_printf(&keys, "%s%s", i ? ", " : "", d->entry[i].key);
            ch_error_set(err, CH_ERR_USAGE, NULL, 0, 0,
                         "unknown section '%.64s' for --only; sections are: %s",
                         only[k], keys.s ? keys.s : "");
            ch_buf_free(&keys);
            free(sel);
            return CH_ERR_USAGE;
        }
    for (size_t i = 0; i < d->n; i++)
        if (ch_derivation_selected(d, i, fmt, nonly, only)) sel[n++] = &d->entry[i];
    writer w = {out, d, ch_printer_new(fmt == CH_FORMAT_TEXT    ? CH_STYLE_TEXT
                                       : fmt == CH_FORMAT_LATEX ? CH_STYLE_LATEX
                                                                : CH_STYLE_SYMPY),
                sink, {NULL, NULL, 0}};
    int sympy = fmt == CH_FORMAT_SYMPY || fmt == CH_FORMAT_JSON;
    if (!w.pr || (sympy && renames_build(&w.rn, d->ctx))) {
        ch_printer_free(w.pr);
        free(sel);
        return ch_error_set(err, CH_ERR_MEMORY, NULL, 0, 0, "out of memory");
    }
    if (w.rn.n) ch_printer_set_namer(w.pr, renames_namer, &w.rn);
    switch (fmt) {
    case CH_FORMAT_TEXT: write_text(&w, n, sel); break;
    case CH_FORMAT_LATEX: write_latex(&w, n, sel); break;
    case CH_FORMAT_SYMPY: write_sympy(&w, n, sel); break;
    case CH_FORMAT_JSON: write_json(&w, n, sel); break;
    }
    ch_printer_free(w.pr);
    renames_free(&w.rn);
    free(sel);
    if (out->oom) return ch_error_set(err, CH_ERR_MEMORY, NULL, 0, 0, "out of memory");
    return 0;
}

int ch_derivation_write(ch_buf *out, const ch_derivation *d, ch_format fmt,
                        size_t nonly, const char *const *only, ch_error *err)
{
    return write_all(out, NULL, d, fmt, nonly, only, err);
}

int ch_derivation_fwrite(FILE *f, const ch_derivation *d, ch_format fmt,
                         size_t nonly, const char *const *only, ch_error *err)
{
    ch_buf out;
    ch_buf_init(&out);
    int rc = write_all(&out, f, d, fmt, nonly, only, err);
    if (!rc && out.len) fwrite(out.s, 1, out.len, f);
    ch_buf_free(&out);
    if (!rc && (fflush(f) || ferror(f)))
        rc = ch_error_set(err, CH_ERR_IO, NULL, 0, 0, "cannot write the output");
    return rc;
}
