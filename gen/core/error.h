/* error.h — how every library call reports failure.
 *
 * The library never prints and never exits: a failing call returns a
 * nonzero status (or NULL) and fills a ch_error. The CLI maps codes to the
 * exit codes of SPEC §2. Positions are 1-based; 0 means "no position". */
#ifndef CH_ERROR_H
#define CH_ERROR_H

#include <stdarg.h>

typedef enum {
    CH_OK = 0,
    CH_ERR_MODEL = 1,  /* invalid model: exit code 1 */
    CH_ERR_USAGE = 2,  /* bad command line: exit code 2 */
    CH_ERR_NUMERIC = 3,/* numerical failure during a run: exit code 3 */
    CH_ERR_LIMIT = 4,  /* a resource limit was hit (reported as a model error) */
    CH_ERR_MEMORY = 5, /* out of memory */
    CH_ERR_IO = 6,     /* file could not be read or written */
    CH_ERR_MATH = 7    /* undefined operation while deriving (1/0, ...) */
} ch_status;

typedef struct ch_error {
    ch_status code;
    const char *file; /* not owned; may be NULL */
    int line, col;
    char msg[512];
} ch_error;

void ch_error_clear(ch_error *err);
/* Fills err (if not NULL) and returns code. */
ch_status ch_error_set(ch_error *err, ch_status code, const char *file,
                       int line, int col, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 6, 7)))
#endif
    ;
/* "FILE:LINE:COL: error: MSG" (parts without value omitted) into buf. */
void ch_error_format(const ch_error *err, char *buf, unsigned long size);
/* The same with another word than "error" ("warning": a diagnostic in
 * err's message and position that does not stop anything). */
void ch_diag_format(const ch_error *err, const char *kind, char *buf,
                    unsigned long size);

#endif
