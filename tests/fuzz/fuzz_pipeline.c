/* fuzz_pipeline.c — libFuzzer harness for parse -> derive -> emit of the
 * three forms (nothing is compiled or executed). The context's node
 * budget cuts legitimately exponential derivations off with a clean
 * CH_ERR_LIMIT, so that only real hangs reach libFuzzer's timeout. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "mech/mechanics.h"
#include "codegen/emit_c.h"
#include "lang/model.h"

#define FUZZ_NODE_LIMIT 200000

static void emit_forms(ch_ctx *ctx, const ch_mechanics *d)
{
    for (int f = 0; f < 3; f++) {
        ch_buf h, c;
        ch_error err;
        ch_buf_init(&h);
        ch_buf_init(&c);
        ch_error_clear(&err);
        int rc = ch_emit_c(ctx, d, (ch_form)f, NULL, &h, &c, &err);
        /* A form that exists must come with text; one that does not, with
         * a reason. */
        if (rc && err.msg[0] == 0) __builtin_trap();
        if (!rc && !h.oom && !c.oom && (!h.len || !c.len)) __builtin_trap();
        ch_buf_free(&h);
        ch_buf_free(&c);
        ch_ctx_clear_error(ctx);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ch_ctx *ctx = ch_ctx_new();
    if (!ctx) return 0;
    ch_ctx_set_node_limit(ctx, FUZZ_NODE_LIMIT);
    ch_model *m = NULL;
    ch_mechanics *d = NULL;
    ch_error err;
    ch_error_clear(&err);
    if (!ch_model_parse(ctx, "fuzz.nh", (const char *)data, size, &m, &err)
        && !ch_mechanics_derive(ctx, m, &d, &err)) {
        if (!d) __builtin_trap();
        emit_forms(ctx, d);
    } else if (err.msg[0] == 0) {
        __builtin_trap();
    }
    ch_ctx_free(ctx);
    return 0;
}
