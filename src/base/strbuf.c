/* A growable text buffer for diagnostics and JSON. An allocation failure sets `failed` and
 * later appends do nothing, so callers check once at the end. */
#include "base/strbuf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool sb_reserve(strbuf *sb, size_t extra)
{
    if (sb->failed) return false;
    if (extra > SIZE_MAX - sb->len - 1) {
        sb->failed = true;
        return false;
    }
    size_t need = sb->len + extra + 1;
    if (need <= sb->cap) return true;
    size_t cap = sb->cap ? sb->cap : 64;
    while (cap < need) cap = cap > SIZE_MAX / 2 ? need : cap * 2;
    char *p = realloc(sb->data, cap);
    if (!p) {
        sb->failed = true;
        return false;
    }
    sb->data = p;
    sb->cap = cap;
    return true;
}

void sb_put_slow(strbuf *sb, const char *s, size_t n)
{
    if (sb->len + n + 1 > sb->cap && !sb_reserve(sb, n)) return;
    memcpy(sb->data + sb->len, s, n);
    sb->len += n;
    sb->data[sb->len] = '\0';
}

void sb_puts(strbuf *sb, const char *s) { sb_put(sb, s, strlen(s)); }

void sb_printf(strbuf *sb, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char small[128];
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n < 0) {
        sb->failed = true;
        return;
    }
    if ((size_t)n < sizeof small) {
        sb_put(sb, small, (size_t)n);
        return;
    }
    if (!sb_reserve(sb, (size_t)n)) return;
    va_start(ap, fmt);
    vsnprintf(sb->data + sb->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    sb->len += (size_t)n;
}

void sb_free(strbuf *sb)
{
    free(sb->data);
    sb->data = NULL;
    sb->len = sb->cap = 0;
    sb->failed = false;
}

char *sb_take(strbuf *sb)
{
    if (!sb->failed && !sb->data) sb_put(sb, "", 0); /* an empty text is still a text */
    if (sb->failed || !sb->data) {
        sb_free(sb);
        return NULL;
    }
    char *p = sb->data;
    sb->data = NULL;
    sb->len = sb->cap = 0;
    return p;
}
