/* buf.h — a growable text buffer for printers and emitters.
 *
 * Allocation failure is sticky: the buffer stops growing, sets oom, and
 * every later append is a no-op, so callers check once at the end. */
#ifndef CH_BUF_H
#define CH_BUF_H

#include <stddef.h>

typedef struct ch_buf {
    char *s;     /* always NUL-terminated once anything was appended */
    size_t len, cap;
    int oom;
} ch_buf;

void ch_buf_init(ch_buf *b);
void ch_buf_free(ch_buf *b);
void ch_buf_reset(ch_buf *b); /* len = 0, keeps memory */
void ch_buf_put(ch_buf *b, const char *s);
void ch_buf_putn(ch_buf *b, const char *s, size_t n);
void ch_buf_putc(ch_buf *b, char c);
void ch_buf_printf(ch_buf *b, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
/* Appends formatted text to the NUL-terminated string in buf[size],
 * truncating silently (for short fixed-size messages). */
void ch_str_append(char *buf, size_t size, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* Detaches the string (caller frees); the buffer is left empty. */
char *ch_buf_take(ch_buf *b);

#endif
