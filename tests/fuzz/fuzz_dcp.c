/* libFuzzer target: PyTorch Distributed Checkpoint folders (src/families/dcp/), several files read
 * as one source. The input is a folder: records [name length: 1 byte][name][size: 4 bytes LE]
 * [bytes], each a file at the folder's top (".metadata", "__0_0.distcp"; a size past the input's
 * end takes what is left). The folder is laid out as the JS package lays it out
 * (js/folder-bundle.js): its listing, the core's plan (ckpt_dcp_folder_json), then the core's
 * header and each member's bytes at the offset the plan gives. The bundle is opened, with and
 * without statistics, and the report must keep its promises: every diagnostic with a code is one
 * of its code's templates (the report's error its first); every storage entry's file is one of
 * the files; every run of every item lies inside the source, the runs of a payload adding up to
 * its entry's elements; each entry a slot with state; the schema well formed, each owner its own
 * representative and each tie an earlier owner; and the report serialises. Every diagnostic (the
 * plan's, the report's error) must be one of its code's templates. */
#include "oracle.h"
#include "base/json_read.h"
#include "families/dcp/dcp.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_FILES 16

typedef struct file {
    char name[256];
    const uint8_t *data;
    uint64_t size;
} file;

static void jstr(strbuf *sb, const char *s)
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

static char *listing_json(const file *fs, size_t n)
{
    strbuf sb = {0};
    sb_puts(&sb, "{\"root\":\"fuzz\",\"entries\":[");
    for (size_t k = 0; k < n; k++) {
        sb_puts(&sb, k ? ",{\"name\":" : "{\"name\":");
        jstr(&sb, fs[k].name);
        sb_printf(&sb, ",\"size\":%llu}", (unsigned long long)fs[k].size);
    }
    sb_puts(&sb, "]}");
    return sb_take(&sb);
}

static void check_bound(const ckpt_report *rep, uint64_t size)
{
    const ckpt_dcp *d = ckpt_dcp_of(rep);
    if (!d) return;
    bool first = true;
    for (size_t k = 0; k < d->diags_len; k++) {
        const dcp_diag *g = &d->diags[k];
        if (!g->text) abort();
        if (!g->code) continue;
        ckpt_error e = {0};
        ckpt_error_clear(&e);
        e.code = g->code;
        e.message = g->text;
        oracle_check(&e);
        /* the report's error is the first error */
        if (first && (rep->error.code != g->code || !rep->error.message || strcmp(rep->error.message, g->text)))
            abort();
        first = false;
    }
    for (size_t s = 0; s < d->storages_len; s++)
        if (d->storages[s].file != DCP_NONE && d->storages[s].file >= d->files_len) abort();
    for (size_t f = 0; f < d->files_len; f++)
        if (d->files[f].base != CKPT_NONE && (d->files[f].base > size || d->files[f].size > size - d->files[f].base))
            abort();
    if (d->items_len && d->items_len != rep->entries_len) abort();
    for (size_t k = 0; k < d->items_len; k++) {
        const dcp_item *it = &d->items[k];
        const ckpt_entry_info *e = &rep->entries[k];
        if (e->id >= d->slots_len || !d->slots[e->id].trainable) abort();
        for (int q = 0; q < DCP_PAYLOADS; q++) {
            if (!it->spans[q]) continue;
            unsigned w = ckpt_dtype_width(it->dtype[q]);
            uint64_t total = 0;
            for (size_t j = 0; j < it->len[q]; j++) {
                const ckpt_span *sp = &it->spans[q][j];
                if (!w || sp->count > (size - sp->offset) / w || sp->offset > size) abort();
                total += sp->count;
            }
            if (total != e->count) abort();
        }
    }
    const ckpt_schema *s = rep->schema;
    if (!s) return;
    if (ckpt_schema_count(s) != d->slots_len) abort();
    if (!ckpt_schema_is_well_formed(s)) abort();
    for (size_t i = 0; i < d->slots_len; i++) {
        uint64_t r = ckpt_schema_representative(s, i);
        if (d->slots[i].trainable && r != i) abort();
        if (!d->slots[i].trainable && r != CKPT_NONE && (r >= i || !d->slots[r].trainable)) abort();
    }
}

static void open_bundle(const file *fs, size_t n, const char *answer)
{
    ckpt_jdoc doc = {0};
    size_t at;
    const char *why;
    if (ckpt_json_parse(answer, strlen(answer), 8, &doc, &at, &why)) abort(); /* the core writes JSON */
    const ckpt_jv *root = &doc.v[0];
    const ckpt_jv *members = ckpt_jv_get(&doc, root, "members");
    const ckpt_jv *header = ckpt_jv_get(&doc, root, "header");
    const ckpt_jv *total = ckpt_jv_get(&doc, root, "size");
    if (!members) goto done; /* no DCP folder */
    if (!header || !total || !total->is_u64 || header->kind != CKPT_JV_ARRAY || members->kind != CKPT_JV_ARRAY) abort();
    if (total->u > ((uint64_t)64 << 20)) goto done;
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
        if (off->u < end || off->u > total->u || sz->u > total->u - off->u) abort();
        const file *f = NULL;
        for (size_t k = 0; k < n && !f; k++)
            if (!strcmp(fs[k].name, ckpt_jv_str(&doc, name))) f = &fs[k];
        if (!f || f->size != sz->u) abort();
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
        check_bound(rep, total->u);
        char *json = ckpt_report_json(rep);
        if (!json) abort();
        free(json);
        ckpt_close(cf);
    }
    free(bytes);
done:
    ckpt_jdoc_free(&doc);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    file fs[MAX_FILES];
    size_t n = 0, i = 0;
    while (i < size && n < MAX_FILES) {
        size_t nl = data[i++];
        if (!nl || nl > size - i) break;
        memcpy(fs[n].name, data + i, nl);
        fs[n].name[nl] = 0;
        i += nl;
        /* a name as a listing gives it: printable, at the folder's top, once */
        for (size_t k = 0; k < nl; k++)
            if (fs[n].name[k] < 0x20 || fs[n].name[k] >= 0x7f || fs[n].name[k] == '/') fs[n].name[k] = '_';
        bool dup = false;
        for (size_t k = 0; k < n && !dup; k++) dup = !strcmp(fs[k].name, fs[n].name);
        uint32_t len = 0;
        for (int b = 0; b < 4; b++) len |= (uint32_t)(i < size ? data[i++] : 0) << (8 * b);
        fs[n].data = data + i;
        fs[n].size = len < size - i ? len : size - i;
        i += (size_t)fs[n].size;
        if (!dup) n++;
    }
    if (!n) return 0;
    ckpt_error err = {0};
    ckpt_error_clear(&err);
    char *listing = listing_json(fs, n);
    if (!listing) abort();
    char *answer = ckpt_dcp_folder_json(listing, strlen(listing), &err);
    free(listing);
    oracle_check(&err);
    ckpt_error_clear(&err);
    if (!answer) return 0;
    open_bundle(fs, n, answer);
    free(answer);
    return 0;
}
