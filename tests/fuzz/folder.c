#include "folder.h"
#include "oracle.h"
#include "base/json_read.h"

#include <stdlib.h>
#include <string.h>

size_t fuzz_folder_files(const uint8_t *data, size_t size, fuzz_file *fs, size_t max, bool subfolders)
{
    size_t n = 0, i = 0;
    while (i < size && n < max) {
        size_t nl = data[i++];
        if (!nl || nl > size - i) break;
        memcpy(fs[n].name, data + i, nl);
        fs[n].name[nl] = 0;
        i += nl;
        for (size_t k = 0; k < nl; k++)
            if (fs[n].name[k] < 0x20 || fs[n].name[k] >= 0x7f || (!subfolders && fs[n].name[k] == '/'))
                fs[n].name[k] = '_';
        const char *slash = strchr(fs[n].name, '/');
        bool dup = slash && (slash == fs[n].name || !slash[1] || strchr(slash + 1, '/'));
        for (size_t k = 0; k < n && !dup; k++) dup = !strcmp(fs[k].name, fs[n].name);
        uint32_t len = 0;
        for (int b = 0; b < 4; b++) len |= (uint32_t)(i < size ? data[i++] : 0) << (8 * b);
        fs[n].data = data + i;
        fs[n].size = len < size - i ? len : size - i;
        i += (size_t)fs[n].size;
        if (!dup) n++;
    }
    return n;
}

void fuzz_json_string(strbuf *sb, const char *s)
{
    sb_putc(sb, '"');
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') sb_printf(sb, "\\%c", c);
        else if (c < 0x20) sb_printf(sb, "\\u%04x", c);
        else sb_putc(sb, (char)c);
    }
    sb_putc(sb, '"');
}

void fuzz_listing_entries(strbuf *sb, const fuzz_file *fs, size_t n)
{
    sb_puts(sb, "{\"root\":\"fuzz\",\"entries\":[");
    bool first = true;
    for (size_t k = 0; k < n; k++) {
        const char *slash = strchr(fs[k].name, '/');
        if (slash) {
            bool seen = false;
            size_t dl = (size_t)(slash - fs[k].name) + 1;
            for (size_t j = 0; j < k && !seen; j++) seen = !strncmp(fs[j].name, fs[k].name, dl);
            if (!seen) {
                char dir[256];
                memcpy(dir, fs[k].name, dl);
                dir[dl] = 0;
                sb_puts(sb, first ? "{\"name\":" : ",{\"name\":");
                fuzz_json_string(sb, dir);
                sb_puts(sb, ",\"size\":null}");
                first = false;
            }
        }
        sb_puts(sb, first ? "{\"name\":" : ",{\"name\":");
        fuzz_json_string(sb, fs[k].name);
        sb_printf(sb, ",\"size\":%llu}", (unsigned long long)fs[k].size);
        first = false;
    }
    sb_putc(sb, ']');
}

void fuzz_open_bundle(const fuzz_file *fs, size_t n, const char *answer,
                      void (*check)(const ckpt_report *rep, uint64_t size))
{
    ckpt_jdoc doc = {0};
    size_t at;
    const char *why;
    if (ckpt_json_parse(answer, strlen(answer), 8, &doc, &at, &why)) abort(); /* the core writes JSON */
    const ckpt_jv *root = &doc.v[0];
    const ckpt_jv *members = ckpt_jv_get(&doc, root, "members");
    const ckpt_jv *header = ckpt_jv_get(&doc, root, "header");
    const ckpt_jv *total = ckpt_jv_get(&doc, root, "size");
    if (!members) goto done; /* no folder of the family, or nothing to read */
    if (!header || !total || !total->is_u64 || header->kind != CKPT_JV_ARRAY || members->kind != CKPT_JV_ARRAY) abort();
    if (total->u > ((uint64_t)64 << 20)) goto done; /* listed sizes are the files' own: never past the input */
    uint8_t *bytes = calloc(total->u ? (size_t)total->u : 1, 1);
    if (!bytes) abort();
    size_t h = 0;
    for (const ckpt_jv *b = ckpt_jv_first(&doc, header); b; b = ckpt_jv_next(&doc, b), h++) {
        if (!b->is_u64 || b->u > 255 || h >= total->u) abort();
        bytes[h] = (uint8_t)b->u;
    }
    uint64_t end = h;
    for (const ckpt_jv *m = ckpt_jv_first(&doc, members); m; m = ckpt_jv_next(&doc, m)) {
        const ckpt_jv *name = ckpt_jv_get(&doc, m, "name"), *off = ckpt_jv_get(&doc, m, "offset"),
                      *sz = ckpt_jv_get(&doc, m, "size");
        if (!name || name->kind != CKPT_JV_STRING || !off || !off->is_u64 || !sz || !sz->is_u64) abort();
        /* members back to back after the header, in the listing's order, inside the source */
        if (off->u < end || off->u > total->u || sz->u > total->u - off->u) abort();
        const fuzz_file *f = NULL;
        for (size_t k = 0; k < n && !f; k++)
            if (!strcmp(fs[k].name, ckpt_jv_str(&doc, name))) f = &fs[k];
        if (!f || f->size != sz->u) abort(); /* a member is a file of the listing, at its size */
        memcpy(bytes + off->u, f->data, (size_t)f->size);
        end = off->u + sz->u;
    }
    if (end != total->u) abort();
    ckpt_memory mem;
    ckpt_source src;
    ckpt_source_memory(&src, &mem, bytes, (size_t)total->u);
    for (unsigned flags = 0; flags <= CKPT_INSPECT_STATS; flags++) {
        ckpt_inspect_options opt = {flags, NULL, NULL};
        ckpt_file *cf = ckpt_open(&src, &opt);
        if (!cf) abort();
        const ckpt_report *rep = ckpt_file_report(cf);
        oracle_check(&rep->error);
        check(rep, total->u);
        char *json = ckpt_report_json(rep);
        if (!json) abort();
        free(json);
        ckpt_close(cf);
    }
    free(bytes);
done:
    ckpt_jdoc_free(&doc);
}
