/* jit.h — compiling emitted C in process.
 *
 * CH_COMPILER_TCC compiles with libtcc in memory (no temporary files; tcc's
 * error output is captured through tcc_set_error_func into the ch_error).
 * CH_COMPILER_CC runs the system compiler (cc -O2 -shared -fPIC) in a
 * private temporary directory, loads the result with dlopen and removes
 * the directory. */
#ifndef CH_JIT_H
#define CH_JIT_H

#include "core/error.h"

typedef enum { CH_COMPILER_TCC, CH_COMPILER_CC } ch_compiler;

typedef struct ch_jit ch_jit;

/* The functions of <math.h> emitted code calls (the model language's and
 * the solvers'), each with its declaration: the emitted source declares
 * them (ch_driver_math_prelude) and ch_jit_compile hands tcc this process's, so
 * that one list says both. */
#define CH_JIT_MATH_FNS(X) \
    X(sin, "double sin(double)") X(cos, "double cos(double)") \
    X(tan, "double tan(double)") X(asin, "double asin(double)") \
    X(acos, "double acos(double)") X(atan, "double atan(double)") \
    X(atan2, "double atan2(double, double)") X(sinh, "double sinh(double)") \
    X(cosh, "double cosh(double)") X(tanh, "double tanh(double)") \
    X(exp, "double exp(double)") X(log, "double log(double)") \
    X(fabs, "double fabs(double)") X(sqrt, "double sqrt(double)") \
    X(cbrt, "double cbrt(double)") X(pow, "double pow(double, double)")

/* Compiles one C99 translation unit (depending only on <math.h>). */
int ch_jit_compile(const char *source, ch_compiler which, ch_jit **out,
                   ch_error *err);
/* Address of a global symbol of the compiled code, or NULL. */
void *ch_jit_symbol(ch_jit *j, const char *name);
void ch_jit_free(ch_jit *j);

#endif
