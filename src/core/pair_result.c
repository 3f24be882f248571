/* A pairing's result grown one failure or warning at a time (pair_result.h). */
#include "core/pair_result.h"

#include <stdlib.h>
#include <string.h>

bool ckpt_pair_add_failure(ckpt_pair_result *res, const char *prefix, int code, uint64_t slot, uint64_t index,
                           strbuf *text)
{
    if (text->failed) return false;
    ckpt_error *f = realloc(res->failures, (res->failures_len + 1) * sizeof *f);
    if (!f) return false;
    res->failures = f;
    ckpt_error *e = &f[res->failures_len];
    memset(e, 0, sizeof *e);
    ckpt_error_clear(e);
    ckpt_fail_at(e, prefix, code, CKPT_NONE, 0, slot, "%s", text->data);
    if (index != CKPT_NONE) e->index = index;
    sb_free(text);
    if (!e->message) return false;
    res->failures_len++;
    return true;
}

bool ckpt_pair_add_warning(ckpt_pair_result *res, strbuf *text)
{
    if (text->failed) return false;
    char **w = realloc(res->warnings, (res->warnings_len + 1) * sizeof *w);
    if (!w) return false;
    res->warnings = w;
    w[res->warnings_len] = sb_take(text);
    return w[res->warnings_len++] != NULL;
}
