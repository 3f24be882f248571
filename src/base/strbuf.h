/* Growable NUL-terminated text (strbuf.c). Private to src/. */
#ifndef CKPT_STRBUF_H
#define CKPT_STRBUF_H

#include "base/common.h"

/* ---- strbuf.c: growable NUL-terminated text ---- */
typedef struct strbuf {
    char *data;
    size_t len, cap;
    bool failed; /* an allocation failed; the content is incomplete */
} strbuf;
void sb_put_slow(strbuf *sb, const char *s, size_t n);
void sb_puts(strbuf *sb, const char *s);
void sb_printf(strbuf *sb, const char *fmt, ...) CKPT_PRINTF(2, 3);
void sb_free(strbuf *sb);
char *sb_take(strbuf *sb);                 /* the text (caller frees), or NULL when an allocation failed */
bool sb_reserve(strbuf *sb, size_t extra); /* room for extra more bytes (and the NUL) */
/* A string literal: its length is known at compile time (the JSON writer's hot loops). */
#define sb_lit(sb, s) sb_put((sb), (s), sizeof(s) - 1)
/* Append n bytes. Inline with a byte loop for short pieces (numbers, punctuation): a report of a
 * million slots makes tens of millions of them, and a call to memcpy costs more than the copy. */
static inline void sb_put(strbuf *sb, const char *s, size_t n)
{
    if (n > 16 || sb->len + n + 1 > sb->cap) {
        sb_put_slow(sb, s, n);
        return;
    }
    char *d = sb->data + sb->len;
    for (size_t k = 0; k < n; k++) d[k] = s[k];
    d[n] = '\0';
    sb->len += n;
}

/* One byte; the hot loops of the report write millions. */
static inline void sb_putc(strbuf *sb, char c)
{
    if (sb->len + 2 > sb->cap && !sb_reserve(sb, 1)) return;
    sb->data[sb->len++] = c;
    sb->data[sb->len] = '\0';
}

#endif
