/* Errors: a stable code, the reference text (FORMAT.md) and the byte offset. */
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Used when even the message cannot be allocated; never freed. */
static char oom_text[] = "out of memory";

void ckpt_error_clear(ckpt_error *err)
{
    if (!err) return;
    if (err->message != oom_text) free(err->message);
    free(err->hint);
    err->code = CKPT_OK;
    err->offset = CKPT_NONE;
    err->message = NULL;
    err->hint = NULL;
}

int ckpt_fail(ckpt_error *err, int code, uint64_t offset, const char *fmt, ...)
{
    if (!err) return code;
    ckpt_error_clear(err);
    err->code = code;
    err->offset = offset;
    strbuf sb = {0};
    sb_puts(&sb, CKPT_FAMILY);
    va_list ap;
    va_start(ap, fmt);
    va_list ap2;
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n >= 0) {
        size_t need = sb.len + (size_t)n + 1;
        char *p = realloc(sb.data, need);
        if (p) {
            vsnprintf(p + sb.len, (size_t)n + 1, fmt, ap2);
            sb.data = p;
            sb.len += (size_t)n;
        } else {
            sb.failed = true;
        }
    }
    va_end(ap2);
    if (sb.failed || !sb.data) {
        sb_free(&sb);
        err->message = oom_text;
    } else {
        err->message = sb.data;
    }
    return code;
}

int ckpt_fail_oom(ckpt_error *err)
{
    if (!err) return CKPT_E_NO_MEMORY;
    ckpt_error_clear(err);
    err->code = CKPT_E_NO_MEMORY;
    err->message = oom_text;
    return CKPT_E_NO_MEMORY;
}

void ckpt_set_hint(ckpt_error *err, const char *hint)
{
    if (!err) return;
    free(err->hint);
    size_t n = strlen(hint);
    err->hint = malloc(n + 1);
    if (err->hint) memcpy(err->hint, hint, n + 1);
}
