/* The report: ownership, what a file's records add to it, its warnings, and what counts as
 * unhealthy in an item's statistics. Its JSON is report_json.c. */
#include "core/report.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void ckpt_report_free(ckpt_report *rep)
{
    if (!rep) return;
    if (rep->family && rep->family->impl->release) rep->family->impl->release(rep);
    ckpt_schema_free(rep->schema);
    for (size_t k = 0; k < rep->entries_len; k++) {
        ckpt_stats_free(rep->entries[k].m);
        ckpt_stats_free(rep->entries[k].v);
    }
    free(rep->entries);
    for (size_t k = 0; k < rep->tensors_len; k++) {
        ckpt_stats_free(rep->tensors[k].values);
        free(rep->tensors[k].name);
    }
    free(rep->tensors);
    for (size_t k = 0; k < rep->warnings_len; k++) free(rep->warnings[k]);
    free(rep->warnings);
    ckpt_error_clear(&rep->error);
    free(rep);
}

bool ckpt_report_warn(ckpt_report *rep, const char *fmt, ...)
{
    char text[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    if (n < 0) return false;
    char **w = realloc(rep->warnings, (rep->warnings_len + 1) * sizeof *w);
    if (!w) return false;
    rep->warnings = w;
    size_t len = strlen(text);
    if (!(w[rep->warnings_len] = malloc(len + 1))) return false;
    memcpy(w[rep->warnings_len++], text, len + 1);
    return true;
}

bool ckpt_report_push_entry(ckpt_report *rep, const ckpt_entry_info *e)
{
    if (!ckpt_grow((void **)&rep->entries, &rep->entries_cap, rep->entries_len + 1, sizeof *e)) return false;
    rep->entries[rep->entries_len++] = *e;
    return true;
}

bool ckpt_report_reserve_entries(ckpt_report *rep, size_t count)
{
    if (count <= rep->entries_cap) return true;
    if (count > SIZE_MAX / sizeof *rep->entries) return false;
    ckpt_entry_info *q = realloc(rep->entries, count * sizeof *q);
    if (!q) return false;
    ckpt_advise_large(q, count * sizeof *q);
    rep->entries = q;
    rep->entries_cap = count;
    return true;
}

bool ckpt_report_push_tensor(ckpt_report *rep, const ckpt_tensor_info *t)
{
    if (!ckpt_grow((void **)&rep->tensors, &rep->tensors_cap, rep->tensors_len + 1, sizeof *t)) return false;
    rep->tensors[rep->tensors_len++] = *t;
    return true;
}

/* Inspection's payload warnings (format.md 5), after the file's other warnings, in file order:
 * counted by the statistics, never guessed. One place for a scan in one pass and for statistics
 * gathered by workers (ckpt_file_attach_stats, once every item has them). */
void ckpt_report_warn_payloads(ckpt_report *rep)
{
    if (!rep->family) return;
    const char *P = rep->family->prefix;
    for (size_t k = 0; k < rep->entries_len; k++) {
        const ckpt_entry_info *e = &rep->entries[k];
        const ckpt_stats *m = e->m, *v = e->v;
        unsigned long long id = e->id;
        if (!m || !v) continue;
        if (m->nan || m->inf)
            ckpt_report_warn(rep, "%s: parameter %llu: m holds %llu NaN and %llu infinite values", P, id,
                             (unsigned long long)m->nan, (unsigned long long)m->inf);
        if (v->nan || v->inf)
            ckpt_report_warn(rep, "%s: parameter %llu: v holds %llu NaN and %llu infinite values", P, id,
                             (unsigned long long)v->nan, (unsigned long long)v->inf);
        if (v->negative)
            ckpt_report_warn(rep,
                             "%s: parameter %llu: v holds %llu negative value%s (a second moment is never negative)", P,
                             id, (unsigned long long)v->negative, v->negative == 1 ? "" : "s");
    }
    for (size_t k = 0; k < rep->tensors_len; k++) {
        const ckpt_stats *t = rep->tensors[k].values;
        if (t && (t->nan || t->inf))
            ckpt_report_warn(rep, "%s: tensor %zu holds %llu NaN and %llu infinite values", P, k,
                             (unsigned long long)t->nan, (unsigned long long)t->inf);
    }
}

void ckpt_drop_layout_if_oom(ckpt_report *rep)
{
    if (rep->error.code != CKPT_E_NO_MEMORY || !rep->schema) return;
    ckpt_schema_free(rep->schema);
    rep->schema = NULL;
    for (size_t k = 0; k < rep->tensors_len; k++) {
        ckpt_stats_free(rep->tensors[k].values);
        free(rep->tensors[k].name);
    }
    free(rep->tensors);
    rep->tensors = NULL;
    rep->tensors_len = rep->tensors_cap = 0;
}

uint64_t ckpt_entry_unhealthy(const ckpt_stats *m, const ckpt_stats *v)
{
    return m->nan + m->inf + v->nan + v->inf + v->negative;
}

uint64_t ckpt_tensor_unhealthy(const ckpt_stats *a, const ckpt_stats *b)
{
    (void)b;
    return a->nan + a->inf;
}
