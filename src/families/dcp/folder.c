/* What a folder is to DCP (format.md 12.1), from its listing: a DCP folder holds `.metadata`
 * (or, unfinished, `.metadata.tmp`) or `.distcp` data files at its top. Its source is every file
 * at its top (the data files .metadata names are among them; the others are strays), laid out
 * after a bundle header for the family "DCP" (containers/bundle.h). */
#include "families/dcp/dcp.h"

#include <stdlib.h>

static bool dcp_name(const char *n)
{
    size_t l = strlen(n);
    return !strcmp(n, ".metadata") || !strcmp(n, ".metadata.tmp") || (l > 7 && !strcmp(n + l - 7, ".distcp"));
}

static const char *jstr(const ckpt_jdoc *d, const ckpt_jv *v)
{
    if (!v || v->kind != CKPT_JV_STRING) return NULL;
    const char *s = ckpt_jv_str(d, v);
    return strlen(s) == v->len ? s : NULL; /* a NUL byte in a name: refused */
}

char *ckpt_dcp_folder_json(const char *listing, size_t len, ckpt_error *err)
{
    ckpt_jdoc doc = {0};
    size_t at;
    const char *why;
    char *out = NULL;
    const char **names = NULL;
    uint64_t *sizes = NULL, *offsets = NULL;
    uint8_t *include = NULL;
    strbuf sb = {0};
    ckpt_buffer header = {0};
    int rc = ckpt_json_parse(listing, len, 8, &doc, &at, &why);
    if (rc == -2) {
        ckpt_fail_oom(err);
        goto done;
    }
    const ckpt_jv *root = rc ? NULL : &doc.v[0];
    const ckpt_jv *name = root && root->kind == CKPT_JV_OBJECT ? ckpt_jv_get(&doc, root, "root") : NULL;
    const ckpt_jv *entries = name ? ckpt_jv_get(&doc, root, "entries") : NULL;
    if (!jstr(&doc, name) || !entries || entries->kind != CKPT_JV_ARRAY) {
        ckpt_fail(err, NULL, CKPT_E_INVALID_ARGUMENT, CKPT_NONE, 0,
                  "a folder's listing is {\"root\", \"entries\": [{\"name\", \"size\"}]}");
        goto done;
    }
    size_t n = entries->len;
    names = calloc(n ? n : 1, sizeof *names);
    sizes = calloc(n ? n : 1, sizeof *sizes);
    include = calloc(n ? n : 1, 1);
    offsets = calloc(n ? n : 1, sizeof *offsets);
    if (!names || !sizes || !include || !offsets) {
        ckpt_fail_oom(err);
        goto done;
    }
    size_t k = 0;
    bool dcp = false;
    for (const ckpt_jv *e = ckpt_jv_first(&doc, entries); e; e = ckpt_jv_next(&doc, e), k++) {
        const ckpt_jv *sz = e->kind == CKPT_JV_OBJECT ? ckpt_jv_get(&doc, e, "size") : NULL;
        names[k] = e->kind == CKPT_JV_OBJECT ? jstr(&doc, ckpt_jv_get(&doc, e, "name")) : NULL;
        sizes[k] = CKPT_NONE;
        bool size_ok = !sz || sz->kind == CKPT_JV_NULL || (sz->kind == CKPT_JV_NUMBER && sz->is_u64);
        if (sz && sz->kind == CKPT_JV_NUMBER && sz->is_u64) sizes[k] = sz->u;
        if (!names[k] || !*names[k] || names[k][0] == '/' || !size_ok) {
            ckpt_fail(err, NULL, CKPT_E_INVALID_ARGUMENT, CKPT_NONE, 0,
                      "entry %zu of a folder's listing is not {\"name\": a relative path, \"size\": bytes or null}", k);
            goto done;
        }
        /* the folder's own files: every one at its top */
        include[k] = sizes[k] != CKPT_NONE && !strchr(names[k], '/');
        if (include[k] && dcp_name(names[k])) dcp = true;
    }
    if (!dcp) {
        sb_puts(&sb, "{\"family\":null,\"read\":[]}");
        goto take;
    }
    if (ckpt_bundle_header(DCP_PREFIX, jstr(&doc, name), names, sizes, include, n, &header, offsets, err)) goto done;
    sb_printf(&sb, "{\"family\":\"%s\",\"read\":[],\"tag\":null,\"members\":[", DCP_PREFIX);
    bool first = true;
    uint64_t total = header.len;
    for (size_t j = 0; j < n; j++) {
        if (!include[j]) continue;
        sb_puts(&sb, first ? "{\"name\":" : ",{\"name\":");
        first = false;
        j_string(&sb, names[j]);
        sb_puts(&sb, ",\"offset\":");
        j_u64(&sb, offsets[j]);
        sb_puts(&sb, ",\"size\":");
        j_u64(&sb, sizes[j]);
        sb_putc(&sb, '}');
        total = offsets[j] + sizes[j];
    }
    sb_puts(&sb, "],\"size\":");
    j_u64(&sb, total);
    sb_puts(&sb, ",\"header\":[");
    for (size_t j = 0; j < header.len; j++) sb_printf(&sb, j ? ",%u" : "%u", header.data[j]);
    sb_puts(&sb, "]}");
take:
    if (!(out = sb_take(&sb))) ckpt_fail_oom(err);
done:
    sb_free(&sb);
    ckpt_buffer_free(&header);
    free(names);
    free(sizes);
    free(include);
    free(offsets);
    ckpt_jdoc_free(&doc);
    return out;
}
