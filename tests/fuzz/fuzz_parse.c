/* fuzz_parse.c — libFuzzer harness for the model parser (lexer, parser,
 * model checks): every input must give either a model or a positioned
 * error, never a crash, a sanitizer report, a leak or a hang. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "lang/model.h"

/* A failing parse must say where and why: an empty message or a code
 * outside the model/limit/memory range would be a bug in the parser. */
static void check_error(int rc, const ch_error *err)
{
    if (!rc) return;
    if (err->msg[0] == 0) __builtin_trap();
    if (err->code != CH_ERR_MODEL && err->code != CH_ERR_LIMIT
        && err->code != CH_ERR_MEMORY)
        __builtin_trap();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ch_ctx *ctx = ch_ctx_new();
    if (!ctx) return 0;
    ch_model *m = NULL;
    ch_error err;
    ch_error_clear(&err);
    int rc = ch_model_parse(ctx, "fuzz.nh", (const char *)data, size, &m,
                            &err);
    check_error(rc, &err);
    if (!rc && !m) __builtin_trap();
    ch_ctx_free(ctx);
    return 0;
}
