/* error.c — filling and formatting ch_error.
 *
 * Messages are truncated to fit ch_error.msg; truncation never splits a
 * UTF-8 sequence, so a message can always be written out as valid UTF-8
 * (JSON output, terminals). */
#include "core/error.h"

#include <stdio.h>
#include <string.h>

void ch_error_clear(ch_error *err)
{
    if (!err) return;
    err->code = CH_OK;
    err->file = NULL;
    err->line = err->col = 0;
    err->msg[0] = '\0';
}

/* Cuts a trailing incomplete UTF-8 sequence off s (length len). */
static void trim_partial_utf8(char *s, size_t len)
{
    size_t i = len, cont = 0;
    while (i > 0 && ((unsigned char)s[i - 1] & 0xC0) == 0x80 && cont < 3) {
        i--;
        cont++;
    }
    if (i == 0) return;
    unsigned char lead = (unsigned char)s[i - 1];
    size_t want = lead >= 0xF0 ? 3 : lead >= 0xE0 ? 2 : lead >= 0xC0 ? 1 : 0;
    if (lead >= 0xC0 && cont < want) s[i - 1] = '\0';
}

ch_status ch_error_set(ch_error *err, ch_status code, const char *file,
                       int line, int col, const char *fmt, ...)
{
    if (!err) return code;
    /* Format into a local copy first: the arguments may point into err->msg
     * (re-wrapping an earlier message). */
    char tmp[sizeof err->msg];
    tmp[0] = '\0';
    if (fmt) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
        va_end(ap);
        if (n < 0) tmp[0] = '\0';
        else if ((size_t)n >= sizeof tmp) trim_partial_utf8(tmp, sizeof tmp - 1);
    }
    memcpy(err->msg, tmp, sizeof tmp);
    err->code = code;
    err->file = file;
    err->line = line > 0 ? line : 0;
    err->col = line > 0 && col > 0 ? col : 0;
    return code;
}

void ch_error_format(const ch_error *err, char *buf, unsigned long size)
{
    if (buf && size && !err) {
        snprintf(buf, size, "error: unknown error");
        return;
    }
    ch_diag_format(err, "error", buf, size);
}

/* Position parts are written only when known: "f:3:7: ", "f:3: ", "f: ",
 * "3:7: " or nothing; a column without a line means nothing. */
void ch_diag_format(const ch_error *err, const char *kind, char *buf, unsigned long size)
{
    if (!buf || size == 0 || !err) return;
    char pos[64];
    pos[0] = '\0';
    if (err->line > 0 && err->col > 0)
        snprintf(pos, sizeof pos, "%d:%d", err->line, err->col);
    else if (err->line > 0)
        snprintf(pos, sizeof pos, "%d", err->line);
    const char *file = err->file && err->file[0] ? err->file : NULL;
    if (file && pos[0])
        snprintf(buf, size, "%s:%s: %s: %s", file, pos, kind, err->msg);
    else if (file)
        snprintf(buf, size, "%s: %s: %s", file, kind, err->msg);
    else if (pos[0])
        snprintf(buf, size, "%s: %s: %s", pos, kind, err->msg);
    else
        snprintf(buf, size, "%s: %s", kind, err->msg);
}
