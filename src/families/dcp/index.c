/* The index in memory (dcp.h) and what every step of the reading shares: its memory, its
 * diagnostics (each with its check's number and facts; the first error is the report's) and its
 * lookups of keys by name. The steps (metadata.c, open.c, parts.c, runs.c) call down to this
 * file, never to one another's helpers. */
#include "families/dcp/dcp.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

char *dcp_dup(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d) memcpy(d, s, n);
    return d;
}

/* ---- diagnostics ---- */

bool dcp_failed(const ckpt_dcp *d)
{
    for (size_t k = 0; k < d->diags_len; k++)
        if (d->diags[k].code) return true;
    return false;
}

int dcp_diag_add(ckpt_dcp *d, ckpt_report *rep, int check, int code, const char *fqn, const char *file, uint64_t offset,
                 const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    va_list aq;
    va_copy(aq, ap);
    int n = vsnprintf(NULL, 0, fmt, aq);
    va_end(aq);
    char *text = n < 0 ? NULL : malloc((size_t)n + 1);
    if (text) vsnprintf(text, (size_t)n + 1, fmt, ap);
    va_end(ap);
    dcp_diag *q = text ? realloc(d->diags, (d->diags_len + 1) * sizeof *q) : NULL;
    if (!q) {
        free(text);
        return ckpt_fail_oom(&rep->error);
    }
    d->diags = q;
    dcp_diag *g = &q[d->diags_len++];
    *g = (dcp_diag){check, code, text, fqn ? dcp_dup(fqn) : NULL, file ? dcp_dup(file) : NULL, offset};
    if ((fqn && !g->fqn) || (file && !g->file)) return ckpt_fail_oom(&rep->error);
    if (!code) {
        /* a warning is the report's too */
        return ckpt_report_warn(rep, "%s", text) ? 0 : ckpt_fail_oom(&rep->error);
    }
    if (!rep->error.code) {
        /* the text is the diagnostic's whole (it carries its own prefix) */
        ckpt_fail(&rep->error, NULL, code, offset, 0, "%s", text);
    }
    return 0;
}

/* ---- memory ---- */

void dcp_items_free(ckpt_dcp *d)
{
    for (size_t k = 0; k < d->items_len; k++)
        for (int q = 0; q < DCP_PAYLOADS; q++) {
            free(d->items[k].spans[q]);
            ckpt_stats_free(d->items[k].stats[q]);
        }
    free(d->items);
    d->items = NULL;
    d->items_len = 0;
}

void dcp_free(ckpt_dcp *d)
{
    if (!d) return;
    free(d->root);
    for (size_t m = 0; m < d->metas_len; m++) {
        free(d->metas[m].dir);
        free(d->metas[m].where);
        free(d->metas[m].name);
        free(d->metas[m].bytes);
        ckpt_pickle_free(d->metas[m].pickle);
    }
    free(d->version);
    for (size_t k = 0; k < d->keys_len; k++) {
        free(d->keys[k].name);
        free(d->keys[k].dtype_name);
    }
    free(d->keys);
    free(d->sorted);
    free(d->chunks);
    for (size_t k = 0; k < d->storages_len; k++) {
        free(d->storages[k].fqn);
        free(d->storages[k].path);
        free(d->storages[k].name);
        free(d->storages[k].transforms);
        ckpt_torch_free(d->storages[k].t);
    }
    free(d->storages);
    free(d->pool);
    for (size_t k = 0; k < d->files_len; k++) free(d->files[k].name);
    free(d->files);
    for (size_t k = 0; k < d->strays_len; k++) free(d->strays[k]);
    free(d->strays);
    free(d->slots);
    dcp_items_free(d);
    free(d->groups);
    free(d->configs);
    free(d->has_config);
    for (size_t k = 0; k < d->names_len; k++) free(d->names[k]);
    free(d->names);
    for (size_t k = 0; k < d->diags_len; k++) {
        free(d->diags[k].text);
        free(d->diags[k].fqn);
        free(d->diags[k].file);
    }
    free(d->diags);
    free(d->note);
    ckpt_torch_free(d->record);
    free(d);
}

/* ---- names sorted for lookups ---- */

static const ckpt_dcp *sort_ctx;
static int by_key_name(const void *a, const void *b)
{
    return strcmp(sort_ctx->keys[*(const size_t *)a].name, sort_ctx->keys[*(const size_t *)b].name);
}

/* span s[0, n) against a NUL-terminated name */
static int cmp_span(const char *name, const char *s, size_t n)
{
    int c = strncmp(name, s, n);
    return c ? c : name[n] ? 1 : 0;
}

bool dcp_sort_keys(ckpt_dcp *d)
{
    size_t *sorted = malloc((d->keys_len ? d->keys_len : 1) * sizeof *sorted);
    if (!sorted) return false;
    for (size_t k = 0; k < d->keys_len; k++) sorted[k] = k;
    sort_ctx = d;
    qsort(sorted, d->keys_len, sizeof *sorted, by_key_name);
    free(d->sorted);
    d->sorted = sorted;
    return true;
}

size_t dcp_find_key(const ckpt_dcp *d, const char *name, size_t n)
{
    size_t lo = 0, hi = d->sorted ? d->keys_len : 0;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = cmp_span(d->keys[d->sorted[mid]].name, name, n);
        if (!c) {
            /* the first of equal names (a pickle dict keeps one; a crafted one may not) */
            while (mid > lo && !cmp_span(d->keys[d->sorted[mid - 1]].name, name, n)) mid--;
            return d->sorted[mid];
        }
        if (c < 0) lo = mid + 1;
        else hi = mid;
    }
    return DCP_NONE;
}

size_t *dcp_planner_keys(const ckpt_dcp *d, size_t *n)
{
    *n = 0;
    uint8_t *placed = calloc(d->keys_len ? d->keys_len : 1, 1);
    size_t *out = malloc((d->keys_len ? d->keys_len : 1) * sizeof *out);
    if (!placed || !out) {
        free(placed);
        free(out);
        return NULL;
    }
    for (size_t m = 0; m < d->metas_len; m++) {
        const ckpt_pickle *p = d->metas[m].pickle;
        if (d->metas[m].planner == CKPT_PNIL) continue;
        for (uint32_t c = ckpt_pickle_node(p, d->metas[m].planner)->first; c != CKPT_PNIL;) {
            uint32_t vc = p->cells[c].next;
            const ckpt_pnode *kn = ckpt_pickle_node(p, p->cells[c].node);
            c = vc == CKPT_PNIL ? CKPT_PNIL : p->cells[vc].next;
            if (kn->kind != CKPT_PK_STR) continue;
            size_t k = dcp_find_key(d, (const char *)p->data + kn->at, kn->len);
            if (k == DCP_NONE || placed[k]) continue;
            placed[k] = 1;
            out[(*n)++] = k;
        }
    }
    free(placed);
    return out;
}

size_t dcp_key_meta(const ckpt_dcp *d, size_t k)
{
    size_t m = 0;
    while (m + 1 < d->metas_len && k >= d->metas[m + 1].keys_from) m++;
    return m;
}

void dcp_meta_counts(const ckpt_dcp *d, size_t m, size_t counts[3])
{
    counts[0] = counts[1] = counts[2] = 0;
    size_t end = m + 1 < d->metas_len ? d->metas[m + 1].keys_from : d->keys_len;
    for (size_t k = d->metas[m].keys_from; k < end; k++) counts[d->keys[k].part]++;
}
