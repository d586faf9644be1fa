/* repl.h — `chetaev repl MODEL`: an interactive session on one model.
 *
 * The model is loaded, derived and its form JIT-compiled once; commands
 * then change parameters and initial values (taking effect through the
 * parameter array of the emitted code, without recompiling), integrate,
 * show derived quantities, audit, plot, emit and reload. Each form is
 * compiled at most once per loaded model (the `info` command prints how
 * many compilations happened). A failing command prints a message on the
 * error stream and the session goes on; end of input or `quit` ends it.
 *
 * Part of the chetaev program, not of the library: it is built on the
 * public API (chetaev.h) alone, and talks to the user only through the
 * streams the caller passes; it never exits. */
#ifndef CH_REPL_H
#define CH_REPL_H

#include <stdio.h>

typedef struct {
    FILE *in, *out, *err;
    int prompt;             /* print a prompt before each line (a terminal) */
    const char *form;       /* initial form, NULL: reduced */
    const char *compiler;   /* "tcc" (NULL) or "cc" */
    size_t max_nodes;       /* expression node budget of a derivation, 0: none */
} ch_repl_options;

/* Runs the session. Returns 0 when it ended normally, 1 when a command
 * of a session without prompt (a script on stdin) failed, or the exit
 * code of SPEC §2 when the model could not be loaded or compiled at the
 * start (1 model, 2 usage). */
int ch_repl_run(const char *path, const ch_repl_options *o);

/* The text of the `help` command. */
const char *ch_repl_help(void);

#endif
