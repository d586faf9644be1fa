/* compile.c — emit, JIT and bind one form (see compile.h). */
#include "jit/compile.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jit/driver.h"

void ch_compile_default_prefix(const char *model_name, ch_form f, char *buf,
                               size_t size)
{
    int n = snprintf(buf, size, "%s_%s", model_name, ch_form_name(f));
    if (n < 0 || (size_t)n >= size || !ch_driver_prefix_ok(buf))
        snprintf(buf, size, "model_%s", ch_form_name(f));
}

const ch_compiled *ch_compiled_of(const chrt_system *s)
{
    return (const ch_compiled *)(const void *)((const char *)s - offsetof(ch_compiled, sys));
}

/* The plain PREFIX_rhs and PREFIX_energy (ch_compiled.rhs, .energy). */
static int bind_plain(ch_compiled *c, ch_error *err)
{
    char rn[96], en_name[96];
    snprintf(rn, sizeof rn, "%s_rhs", c->prefix);
    snprintf(en_name, sizeof en_name, "%s_energy", c->prefix);
    void *rhs = ch_jit_symbol(c->jit, rn), *en = ch_jit_symbol(c->jit, en_name);
    if (!rhs || !en)
        return ch_error_set(err, CH_ERR_MODEL, NULL, 0, 0,
                            "compiled code lacks the symbol '%s'", rhs ? en_name : rn);
    /* object pointer to function pointer: copy the representation (POSIX dlsym) */
    memcpy(&c->rhs, &rhs, sizeof c->rhs);
    memcpy(&c->energy, &en, sizeof c->energy);
    return 0;
}

int ch_compile_form(ch_ctx *ctx, const ch_mechanics *d, ch_form form,
                    const char *prefix, ch_compiler cc, ch_compiled **out,
                    ch_error *err)
{
    return ch_compile_chart(ctx, d, form, prefix, NULL, cc, out, err);
}

int ch_compile_chart(ch_ctx *ctx, const ch_mechanics *d, ch_form form,
                     const char *prefix, const ch_chart_cols *cols, ch_compiler cc,
                     ch_compiled **out, ch_error *err)
{
    *out = NULL;
    ch_compiled *c = calloc(1, sizeof *c);
    if (!c) return ch_error_set(err, CH_ERR_MEMORY, NULL, 0, 0, "out of memory");
    if (!prefix)
        ch_compile_default_prefix(d->model->name, form, c->prefix, sizeof c->prefix);
    else if (ch_driver_prefix_ok(prefix))
        snprintf(c->prefix, sizeof c->prefix, "%s", prefix);
    else {
        free(c);
        return ch_error_set(err, CH_ERR_USAGE, NULL, 0, 0,
                            "prefix '%s' is not a C identifier", prefix);
    }
    ch_buf h, src, unit;
    ch_buf_init(&h);
    ch_buf_init(&src);
    ch_buf_init(&unit);
    int rc = ch_emit_c_chart(ctx, d, form, c->prefix, NULL, cols, ch_driver_math_prelude(),
                             &h, &src, NULL, err);
    if (!rc) {
        ch_driver_jit_unit(c->prefix, src.s, &unit);
        if (h.oom || src.oom || unit.oom)
            rc = ch_error_set(err, CH_ERR_MEMORY, NULL, 0, 0, "out of memory");
    }
    if (!rc) rc = ch_jit_compile(unit.s, cc, &c->jit, err);
    if (!rc) rc = ch_driver_bind(c->jit, c->prefix, &c->sys, err);
    if (!rc) rc = bind_plain(c, err);
    ch_buf_free(&h);
    ch_buf_free(&src);
    ch_buf_free(&unit);
    if (rc) {
        ch_compiled_free(c);
        return rc;
    }
    *out = c;
    return 0;
}

void ch_compiled_free(ch_compiled *c)
{
    if (!c) return;
    ch_jit_free(c->jit);
    free(c);
}
