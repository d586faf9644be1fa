/* compile.h — one form of a derived model compiled in process and bound to
 * the runtime's system struct (runtime/simulate.h).
 *
 * The single path from the mechanics of a model to callable code (emit → one JIT
 * translation unit → compile → bind), shared by `chetaev run` and the
 * public library API (chetaev.h) so that both run the same bytes. A
 * ch_compiled owns its JIT memory and its prefix; the bound struct points
 * into both, so it lives exactly as long as the ch_compiled. Nothing in it
 * refers to the context or the mechanics it was made from. */
#ifndef CH_COMPILE_H
#define CH_COMPILE_H

#include <stddef.h>

#include "mech/mechanics.h"
#include "codegen/emit_c.h"
#include "core/error.h"
#include "jit/jit.h"
#include "runtime/simulate.h"

typedef struct ch_compiled {
    ch_jit *jit;
    chrt_system sys;   /* bound to the compiled symbols */
    char prefix[72];   /* the C prefix of the symbols (sys.name) */
    /* PREFIX_rhs and PREFIX_energy: Newton from the model's initial state
     * (no vs), the functions of the C API (ch_system_rhs) */
    int (*rhs)(double t, const double *x, const double *p, double *dxdt);
    double (*energy)(double t, const double *x, const double *p);
} ch_compiled;

/* The ch_compiled whose sys is s (every chrt_system of a compiled form,
 * also a chart's, is one). */
const ch_compiled *ch_compiled_of(const chrt_system *s);

/* MODEL_FORM, or model_FORM when the model name does not make a C
 * identifier of at most 64 characters. */
void ch_compile_default_prefix(const char *model_name, ch_form f, char *buf,
                               size_t size);

/* Emits the form (prefix NULL: the default prefix), compiles it with the
 * given compiler and binds the symbols. Returns 0, or nonzero with err
 * filled: the emitter's errors (CH_ERR_MODEL when the form does not exist
 * for the model), compiler errors, CH_ERR_USAGE for a prefix that is not a
 * C identifier, CH_ERR_MEMORY. */
int ch_compile_form(ch_ctx *ctx, const ch_mechanics *d, ch_form form,
                    const char *prefix, ch_compiler cc, ch_compiled **out,
                    ch_error *err);

/* ch_compile_form with the hamilton form's momentum columns of another
 * chart (emit_c.h, ch_emit_c_chart; NULL: its own). */
int ch_compile_chart(ch_ctx *ctx, const ch_mechanics *d, ch_form form,
                     const char *prefix, const ch_chart_cols *cols, ch_compiler cc,
                     ch_compiled **out, ch_error *err);

void ch_compiled_free(ch_compiled *c);

#endif
