/* model.h — a checked model: symbols, expressions and source positions.
 *
 * ch_model_parse turns the text of a *.nh file (SPEC §1) into a ch_model
 * whose expressions live in the given context. All checks that need no
 * mechanics happen here (names, defines, counts, the statements' syntax);
 * the mechanics modules report their own errors (degenerate Lagrangian,
 * inadmissible constraints, bad `dependent` choice) at the positions kept
 * in ch_model. The model and everything it points to is arena memory of the
 * context: it lives until ch_ctx_free.
 *
 * Symbols: coordinates are CH_SYM_COORD named by the model name, with
 * index = declared position; their velocities NAME_t (CH_SYM_VEL, base
 * NAME, order 1) and accelerations NAME_tt (order 2), dot chain set;
 * parameters CH_SYM_PARAM; time "t" (CH_SYM_TIME, dot 1); pi. */
#ifndef CH_MODEL_H
#define CH_MODEL_H

#include "core/error.h"
#include "core/expr.h"

typedef struct {
    int line, col; /* 1-based start of the statement's keyword, or of the
                      item (e.g. a coordinate name) where that is sharper */
} ch_pos;

typedef struct {
    const char *name;
    const ch_expr *expr;
    ch_pos pos;
} ch_named_expr;

typedef struct {
    const char *name;
    const ch_expr **comp; /* n components, 0 where unlisted */
    ch_pos pos;
} ch_field;

typedef struct ch_model {
    const char *name;      /* `model` or the file stem; a C identifier */
    const char *file;      /* path as given, for error messages */
    ch_pos name_pos;

    size_t n;              /* coordinates */
    const ch_expr **q, **qt, **qtt; /* symbol nodes, n each */
    ch_pos *q_pos;
    const ch_expr *t;      /* the time symbol */

    size_t np;             /* parameters, in declared order */
    const ch_expr **param; /* symbol nodes */
    const ch_expr **param_value; /* exact default (a constant expression) */
    double *param_default; /* correctly rounded value of param_value */
    ch_pos *param_pos;

    size_t ndefines;
    ch_named_expr *defines; /* as written, already expanded in later uses */

    const ch_expr *lagrangian;
    ch_pos lagrangian_pos;

    size_t k;               /* constraints */
    const ch_expr **constraint;      /* velocity level: phi_nu(t,q,q_t) */
    const ch_expr **constraint_orig; /* as written (lhs - rhs) */
    int *holonomic;         /* 1: written without velocities, differentiated */
    ch_pos *constraint_pos;

    const ch_expr **force;  /* n entries; 0 where no `force` statement */
    ch_pos *force_pos;      /* line 0 where none */

    size_t ndep;            /* 0 when no `dependent` statement */
    int *dependent;         /* coordinate indices of the dependent velocities */
    ch_pos dependent_pos;

    double *q0, *qt0;       /* initial state, 0 where not given */
    int *q0_given;          /* 1 where the coordinate was given in `initial` */
    int *qt0_given;         /* 1 where the velocity was given in `initial` */
    ch_pos initial_pos;

    size_t nintegrals;
    ch_named_expr *integrals;
    size_t nevents;         /* `event NAME = EXPR [stop]` */
    ch_named_expr *events;  /* g(t, q, q_t): its zero crossings are events */
    int *event_stop;        /* 1: the run ends at the event */
    size_t nfields;
    ch_field *fields;
} ch_model;

/* Parses and checks a model. `file` is used in messages and for the
 * default model name (its stem). Returns 0, or nonzero with err filled
 * (code CH_ERR_MODEL or CH_ERR_LIMIT, position of the offending token). */
int ch_model_parse(ch_ctx *ctx, const char *file, const char *text,
                   size_t len, ch_model **out, ch_error *err);

/* The file's bytes (at most CH_MAX_FILE_BYTES) into *text (malloc'ed,
 * not NUL-terminated; the caller frees it), or CH_ERR_IO / CH_ERR_MEMORY. */
int ch_model_read(const char *path, char **text, size_t *len, ch_error *err);

/* Reads the file (CH_ERR_IO when it cannot) and parses it. */
int ch_model_load(ch_ctx *ctx, const char *path, ch_model **out,
                  ch_error *err);

/* A short name of the statement at (line, col), the position the model
 * keeps for it (its keyword, or the declared name for define, integral
 * and field), e.g. "lagrangian", "constraint 2", "force on x", "define v",
 * into buf; 0 when no statement starts there (buf is then ""). */
int ch_model_statement_at(const ch_model *m, int line, int col, char *buf,
                          size_t size);

/* Limits applied by the parser. */
#define CH_MAX_FILE_BYTES   (4u << 20) /* 4 MiB */
#define CH_MAX_IDENT_LEN    64
#define CH_MAX_COORDS       1000
#define CH_MAX_NESTING      200

#endif
