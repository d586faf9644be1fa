/* jit.h — compiling emitted C in process.
 *
 * CH_COMPILER_TCC compiles with libtcc in memory (no temporary files; tcc's
 * error output is captured through tcc_set_error_func into the ch_error).
 * CH_COMPILER_CC runs the system compiler (cc -O2 -shared -fPIC) in a
 * private temporary directory, loads the result with dlopen and removes
 * the directory. */
#ifndef CH_JIT_H
#define CH_JIT_H

#include "error.h"

typedef enum { CH_COMPILER_TCC, CH_COMPILER_CC } ch_compiler;

typedef struct ch_jit ch_jit;

/* Compiles one C99 translation unit (depending only on <math.h>). */
int ch_jit_compile(const char *source, ch_compiler which, ch_jit **out,
                   ch_error *err);
/* Address of a global symbol of the compiled code, or NULL. */
void *ch_jit_symbol(ch_jit *j, const char *name);
void ch_jit_free(ch_jit *j);

#endif
