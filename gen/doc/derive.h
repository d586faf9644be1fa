/* derive.h — the derivation of a model as a document: an ordered list of
 * entries, one per SPEC §3 key, showing the mechanics of the model
 * (mech/mechanics.h), and its output in the four formats of `chetaev
 * derive`. The document derives no mechanics.
 *
 * The derivation owns nothing itself: expressions and arrays live in the
 * context. Entries that do not apply (or are not derived yet) are kept with
 * kind CH_ENTRY_NULL so that every format lists every key. */
#ifndef CH_DERIVE_H
#define CH_DERIVE_H

#include "core/buf.h"
#include "mech/mechanics.h"

typedef enum {
    CH_ENTRY_NULL,   /* JSON null */
    CH_ENTRY_NAME,   /* a string (model name) */
    CH_ENTRY_NAMES,  /* list of strings */
    CH_ENTRY_PARAMS, /* parameter names with default values */
    CH_ENTRY_EXPR,   /* one expression */
    CH_ENTRY_VECTOR, /* rows expressions */
    CH_ENTRY_MATRIX, /* rows x cols expressions */
    CH_ENTRY_DEGREES,/* rows numbers (NUM nodes) or NULL: homogeneity */
    CH_ENTRY_VERDICT,/* true / false / "unknown" (verdict), reason in note */
    CH_ENTRY_OBJECT, /* rows (names[i]: e[i]) pairs */
    CH_ENTRY_PH      /* {"q_t": e[0..rows), "y_t": e2[0..rows)} */
} ch_entry_kind;

typedef struct {
    const char *key;    /* SPEC §3 key */
    const char *title;  /* heading in text */
    const char *latex_title; /* heading in LaTeX (LaTeX source) */
    const char *ref;    /* equation in the seeds ("000 eq. 31") or NULL */
    ch_entry_kind kind;
    size_t rows, cols;
    const ch_expr *const *e;
    const char *const *names;
    /* Labels of vector entries / matrix rows and columns, e.g. coordinate
     * names; NULL for plain indices. */
    const char *const *row_labels, *const *col_labels;
    const char *symbol;       /* display symbol: "p", "M", "E", ... */
    const char *note;         /* why an entry is null, or a verdict's reason */
    const ch_expr *const *e2; /* CH_ENTRY_PH: the y_t column */
    int verdict;              /* CH_ENTRY_VERDICT: 1, 0, -1 (unknown) */
    int display_only;         /* text and LaTeX only: not a SPEC §3 key */
    int tidy;                 /* e (and e2) are as derived: ch_derivation_prepare */
    unsigned deferred;        /* the ch_mech_part it shows, derived on request */
} ch_entry;

typedef struct ch_derivation {
    ch_ctx *ctx;
    const ch_model *model;
    ch_mechanics *mech; /* what the entries show */
    size_t n;
    ch_entry *entry;
} ch_derivation;

/* The document of the mechanics of a model: one entry per key, showing the
 * expressions the mechanics built (not copies). */
int ch_derivation_of(ch_mechanics *mech, ch_derivation **out, ch_error *err);

typedef enum {
    CH_FORMAT_TEXT, CH_FORMAT_LATEX, CH_FORMAT_SYMPY, CH_FORMAT_JSON
} ch_format;

/* Prepares the entries a call of ch_derivation_write with the same
 * arguments prints (nonly == 0: all; unknown keys are ignored): asks the
 * mechanics for the parts it derives only on request (E_i, explicit
 * multipliers, the identity test: ch_mechanics_complete) and rewrites expressions into their display form,
 * the shortest printed of the expression, its expansion and its rational
 * normal form, under node budgets, and, for a Lagrangian quadratic in the
 * velocities, of the momenta, E_i and energy by velocity monomials with
 * the displayed mass matrix as coefficients (mech/collect.h). Only for
 * printing: it costs more than the derivation of a large model. 0, or -1
 * when out of memory. */
int ch_derivation_prepare(ch_derivation *d, ch_format fmt, size_t nonly,
                          const char *const *only);

/* Whether entry i is printed by ch_derivation_write with these arguments. */
int ch_derivation_selected(const ch_derivation *d, size_t i, ch_format fmt,
                           size_t nonly, const char *const *only);

/* The entry with this key, or NULL. */
const ch_entry *ch_derivation_find(const ch_derivation *d, const char *key);

/* Writes the derivation; `only` is a list of keys (NULL: all). Unknown keys
 * are a usage error (CH_ERR_USAGE) naming the key and the valid ones. */
int ch_derivation_write(ch_buf *out, const ch_derivation *d, ch_format fmt,
                        size_t nonly, const char *const *only, ch_error *err);

/* The same text written to f as it is produced (the JSON of a large model
 * is megabytes: a buffer of all of it costs more in page faults than the
 * printing). A write error is CH_ERR_IO. */
int ch_derivation_fwrite(FILE *f, const ch_derivation *d, ch_format fmt,
                         size_t nonly, const char *const *only, ch_error *err);

#endif
