/* print.h — expressions as text, LaTeX and SymPy (C is codegen/cse.h's).
 *
 * Display order is the printer's own (numbers last in sums, symbols by
 * kind, declared index and name, then by structure), independent of the
 * DAG's internal order, and deterministic. Parentheses are minimal.
 *
 * Symbol names come from ch_sym: text writes q' and q'' for velocities and
 * accelerations, LaTeX \dot{q} and \ddot{q}, SymPy the SPEC §3 names (q_t,
 * q_tt), or the caller's namer's text. */
#ifndef CH_PRINT_H
#define CH_PRINT_H

#include "core/buf.h"
#include "core/expr.h"

typedef enum {
    CH_STYLE_TEXT,
    CH_STYLE_LATEX,
    CH_STYLE_SYMPY
} ch_style;

void ch_print(ch_buf *out, const ch_expr *e, ch_style style);

/* A printer kept across calls: the order of the terms of every sum and
 * product it has printed is remembered, so printing many expressions that
 * share subexpressions (the entries of a derivation) sorts each once.
 * NULL when out of memory (ch_printer_free accepts NULL). */
typedef struct ch_printer ch_printer;
ch_printer *ch_printer_new(ch_style style);
void ch_printer_put(ch_printer *p, ch_buf *out, const ch_expr *e);
void ch_printer_free(ch_printer *p);
/* The SymPy style's names: namer(data, s) (ch_c_namer, expr.h) returns
 * the text of symbol s, or NULL for its own name. */
void ch_printer_set_namer(ch_printer *p, ch_c_namer namer, void *data);

/* A JSON string literal ("..." with escapes, control bytes as \u00XX). */
void ch_print_json_string(ch_buf *out, const char *s);

/* Whether the n bytes s[0..n) need no escape in a JSON string. */
int ch_print_json_plain(const char *s, size_t n);

/* A LaTeX name for a model identifier: greek letters as \alpha, trailing
 * digits or _suffix as subscripts, multi-letter names in \mathrm. */
void ch_print_latex_name(ch_buf *out, const char *name);

#endif
