/* A DeepSpeed checkpoint's failures and warnings (format.md 11.5): every failure is listed, the
 * first is the report's error; a warning is a report warning with DeepSpeed's prefix. The checks
 * of every other file of this folder record through these. */
#include "families/deepspeed/deepspeed.h"

#include <stdio.h>
#include <stdlib.h>

static char *vtext(const char *fmt, va_list ap)
{
    va_list aq;
    va_copy(aq, ap);
    int n = vsnprintf(NULL, 0, fmt, aq);
    va_end(aq);
    if (n < 0) return NULL;
    char *s = malloc((size_t)n + 1);
    if (s) vsnprintf(s, (size_t)n + 1, fmt, ap);
    return s;
}

int ds_push_failure(ckpt_ds *ds, ckpt_report *rep, const ckpt_error *e)
{
    ckpt_error *q = realloc(ds->failures, (ds->failures_len + 1) * sizeof *q);
    if (!q) return ckpt_fail_oom(&rep->error);
    ds->failures = q;
    ckpt_error *d = &q[ds->failures_len];
    memset(d, 0, sizeof *d);
    ckpt_error_clear(d);
    if (ckpt_error_copy(d, e) == CKPT_E_NO_MEMORY && e->code != CKPT_E_NO_MEMORY) return ckpt_fail_oom(&rep->error);
    ds->failures_len++;
    if (!rep->error.code) ckpt_error_copy(&rep->error, e);
    return 0;
}

int ds_fail(ckpt_ds *ds, ckpt_report *rep, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *text = vtext(fmt, ap);
    va_end(ap);
    if (!text) return ckpt_fail_oom(&rep->error);
    ckpt_error e = {0};
    ckpt_error_clear(&e);
    ckpt_fail(&e, DS_PREFIX, code, CKPT_NONE, 0, "%s", text);
    free(text);
    int rc = e.code == CKPT_E_NO_MEMORY ? ckpt_fail_oom(&rep->error) : ds_push_failure(ds, rep, &e);
    ckpt_error_clear(&e);
    return rc;
}

int ds_warn(ckpt_report *rep, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *text = vtext(fmt, ap);
    va_end(ap);
    size_t n = text ? strlen(text) : 0, pl = strlen(DS_PREFIX ": ");
    char *w = text ? malloc(pl + n + 1) : NULL;
    char **list = w ? realloc(rep->warnings, (rep->warnings_len + 1) * sizeof *list) : NULL;
    if (!list) {
        free(text);
        free(w);
        return ckpt_fail_oom(&rep->error);
    }
    memcpy(w, DS_PREFIX ": ", pl);
    memcpy(w + pl, text, n + 1);
    free(text);
    rep->warnings = list;
    rep->warnings[rep->warnings_len++] = w;
    return 0;
}

bool ds_failed(const ckpt_ds *ds) { return ds->failures_len > 0; }

int ds_fail_type(ckpt_ds *ds, ckpt_report *rep, const ds_file *f, const char *key, size_t node, const char *expected)
{
    strbuf found = {0};
    ds_type_text(&found, ds_tree_of(f), node);
    if (found.failed) return ckpt_fail_oom(&rep->error);
    int rc = ds_fail(ds, rep, CKPT_E_DS_KEY, "%s: %s is %s, expected %s", f->name, key, found.data, expected);
    sb_free(&found);
    return rc;
}
