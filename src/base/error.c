/* Errors: a stable code, the reference text (docs/format.md), where the offending field is
 * (offset and length) and which slot it is about. */
#include "base/error.h"
#include "base/config.h"
#include "base/json_write.h"

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
    memset(err, 0, sizeof *err);
    err->offset = CKPT_NONE;
    err->slot = CKPT_NONE;
    err->index = CKPT_NONE;
}

static int fail_v(ckpt_error *err, const char *prefix, int code, uint64_t offset, uint64_t length, uint64_t slot,
                  const char *fmt, va_list ap)
{
    ckpt_error_clear(err);
    err->code = code;
    err->offset = offset;
    err->length = offset == CKPT_NONE ? 0 : length;
    err->slot = slot;
    strbuf sb = {0};
    if (prefix) {
        sb_puts(&sb, prefix);
        sb_puts(&sb, ": ");
    }
    va_list ap2;
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap);
    if (n >= 0 && !sb.failed) {
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
    err->message = sb.failed || !sb.data ? oom_text : sb.data;
    if (err->message == oom_text) sb_free(&sb);
    return code;
}

int ckpt_fail_at(ckpt_error *err, const char *prefix, int code, uint64_t offset, uint64_t length, uint64_t slot,
                 const char *fmt, ...)
{
    if (!err) return code;
    va_list ap;
    va_start(ap, fmt);
    fail_v(err, prefix, code, offset, length, slot, fmt, ap);
    va_end(ap);
    return code;
}

int ckpt_fail(ckpt_error *err, const char *prefix, int code, uint64_t offset, uint64_t length, const char *fmt, ...)
{
    if (!err) return code;
    va_list ap;
    va_start(ap, fmt);
    fail_v(err, prefix, code, offset, length, CKPT_NONE, fmt, ap);
    va_end(ap);
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

void ckpt_error_move(ckpt_error *dst, ckpt_error *src)
{
    ckpt_error_clear(dst);
    *dst = *src;
    memset(src, 0, sizeof *src);
    ckpt_error_clear(src);
}

int ckpt_error_copy(ckpt_error *dst, const ckpt_error *src)
{
    ckpt_fail_at(dst, NULL, src->code, src->offset, src->length, src->slot, "%s", src->message);
    if (src->hint) {
        ckpt_set_hint(dst, src->hint);
        if (!dst->hint) return ckpt_fail_oom(dst);
    }
    dst->subject = src->subject;
    dst->index = src->index;
    dst->config_diff = src->config_diff;
    return dst->code;
}

void j_error(strbuf *sb, const ckpt_error *err)
{
    if (!err->code) {
        sb_puts(sb, "null");
        return;
    }
    sb_printf(sb, "{\"code\":%d,\"message\":", err->code);
    j_string(sb, err->message ? err->message : "");
    sb_puts(sb, ",\"offset\":");
    j_slot(sb, err->offset);
    sb_puts(sb, ",\"length\":");
    j_u64(sb, err->length);
    sb_puts(sb, ",\"slot\":");
    j_slot(sb, err->slot);
    sb_printf(sb, ",\"subject\":\"%s\",\"hint\":", err->subject == CKPT_SUBJECT_EXPECTED ? "expected" : "file");
    if (err->hint) j_string(sb, err->hint);
    else sb_puts(sb, "null");
    if (err->index != CKPT_NONE) {
        sb_puts(sb, ",\"index\":");
        j_u64(sb, err->index);
    }
    if (err->config_diff.present) {
        sb_puts(sb, ",\"configDiff\":");
        j_config_diff(sb, &err->config_diff);
    }
    sb_puts(sb, "}");
}

char *ckpt_error_json(const ckpt_error *err)
{
    strbuf sb = {0};
    j_error(&sb, err);
    return sb_take(&sb);
}
