/* buf.c — growable NUL-terminated text buffer with sticky allocation failure.
 *
 * The invariant is that once anything was appended, s[len] == '\0' and
 * len < cap. After an allocation failure the contents written so far stay
 * valid but incomplete; oom tells the caller not to trust them. */
#include "core/buf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void ch_buf_init(ch_buf *b)
{
    b->s = NULL;
    b->len = b->cap = 0;
    b->oom = 0;
}

void ch_buf_free(ch_buf *b)
{
    free(b->s);
    ch_buf_init(b);
}

/* A reused buffer starts a new text, so its failure flag starts afresh too;
 * callers check oom before they reset. */
void ch_buf_reset(ch_buf *b)
{
    b->len = 0;
    b->oom = 0;
    if (b->s) b->s[0] = '\0';
}

/* Makes room for `extra` more bytes plus the terminator. 0, or -1 (and oom
 * set) when the buffer can no longer grow. */
static int buf_reserve(ch_buf *b, size_t extra)
{
    if (b->oom) return -1;
    if (extra >= (size_t)-1 - b->len) goto fail;
    size_t need = b->len + extra + 1;
    if (need <= b->cap) return 0;
    size_t cap = b->cap ? b->cap : 64;
    while (cap < need) {
        if (cap > (size_t)-1 / 2) {
            cap = need;
            break;
        }
        cap *= 2;
    }
    char *s = realloc(b->s, cap);
    if (!s) goto fail;
    b->s = s;
    b->cap = cap;
    return 0;
fail:
    b->oom = 1;
    return -1;
}

void ch_buf_putn(ch_buf *b, const char *s, size_t n)
{
    if (buf_reserve(b, n)) return;
    if (n) memcpy(b->s + b->len, s, n);
    b->len += n;
    b->s[b->len] = '\0';
}

void ch_buf_put(ch_buf *b, const char *s)
{
    ch_buf_putn(b, s, strlen(s));
}

void ch_buf_putc(ch_buf *b, char c)
{
    ch_buf_putn(b, &c, 1);
}

void ch_buf_printf(ch_buf *b, const char *fmt, ...)
{
    va_list ap;
    if (b->oom) return;
    /* First try to format into the free space; retry once with the exact
     * size vsnprintf reported. */
    size_t avail = b->cap > b->len ? b->cap - b->len : 0;
    va_start(ap, fmt);
    int n = vsnprintf(avail ? b->s + b->len : NULL, avail, fmt, ap);
    va_end(ap);
    if (n < 0) {
        b->oom = 1; /* an encoding error: the text cannot be produced */
        return;
    }
    if ((size_t)n >= avail) {
        if (buf_reserve(b, (size_t)n)) return;
        va_start(ap, fmt);
        vsnprintf(b->s + b->len, (size_t)n + 1, fmt, ap);
        va_end(ap);
    }
    b->len += (size_t)n;
}

/* An incomplete text (oom) is never handed out as if it were complete: the
 * caller gets NULL. An untouched buffer gives a fresh empty string. */
char *ch_buf_take(ch_buf *b)
{
    char *s = b->s;
    if (b->oom) {
        free(s);
        s = NULL;
    } else if (!s) {
        s = calloc(1, 1);
    }
    ch_buf_init(b);
    return s;
}

void ch_str_append(char *buf, size_t size, const char *fmt, ...)
{
    size_t used = strlen(buf);
    if (used + 1 >= size) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf + used, size - used, fmt, ap);
    va_end(ap);
}
