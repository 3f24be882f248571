/* libFuzzer target: DeepSpeed ZeRO folders (src/families/deepspeed/), several files read as one
 * source. The input is a folder: records [name length: 1 byte][name][size: 4 bytes LE][bytes],
 * each a file by its path in the folder ("latest", "global_step2/zero_pp_rank_0_…pt"; a size
 * past the input's end takes what is left). The folder is laid out as the JS package lays it out
 * (js/folder-bundle.js): its listing (each subfolder named before its files), the core's plan
 * (ckpt_deepspeed_folder_json, asked again with `latest`'s text when it asks for it), then the
 * core's header and each member's bytes at the offset the plan gives. The bundle is opened and the
 * bound report must keep its promises: once its lengths are checked, every fragment of every
 * parameter's state lies inside its file (and every file inside the source), in rank order, on a rank of the world
 * size, the fragments of a key every rank holds summing to the parameter's elements when the lengths were checked; each
 * owner's entry has its m and v exactly where every rank holds them; the schema is well formed, its slots the model
 * states' names, each trainable owner's slot its own representative, each tie pointing at an owner, and the report
 * serialises. Every diagnostic (the plan's, the report's error, every failure) must be one of its code's templates. */
#include "folder.h"
#include "oracle.h"
#include "base/json_read.h"
#include "families/deepspeed/deepspeed.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_FILES 24

/* The listing as the package sends it: each file once, a subfolder ("sub/") before its first
 * file; the texts of `latest` and `latest_universal` when `texts`. */
static char *listing_json(const fuzz_file *fs, size_t n, bool texts, size_t limit)
{
    strbuf sb = {0};
    fuzz_listing_entries(&sb, fs, n);
    if (texts) {
        bool any = false;
        for (size_t k = 0; k < n; k++) {
            if (strcmp(fs[k].name, "latest") && strcmp(fs[k].name, "latest_universal")) continue;
            char text[DS_LATEST_MAX + 1];
            size_t l = fs[k].size < limit ? (size_t)fs[k].size : limit;
            /* the package decodes the bytes as UTF-8 text (JSON.stringify writes valid UTF-8):
             * here a byte past ASCII is '?' and a NUL ends the text */
            size_t j = 0;
            for (; j < l && j < DS_LATEST_MAX && fs[k].data[j]; j++)
                text[j] = fs[k].data[j] < 0x80 ? (char)fs[k].data[j] : '?';
            text[j] = 0;
            sb_puts(&sb, any ? "," : ",\"texts\":{");
            fuzz_json_string(&sb, fs[k].name);
            sb_putc(&sb, ':');
            fuzz_json_string(&sb, text);
            any = true;
        }
        if (any) sb_putc(&sb, '}');
    }
    sb_putc(&sb, '}');
    return sb_take(&sb);
}

/* The core's answer to the listing; NULL with err set. */
static char *ask(const fuzz_file *fs, size_t n, bool texts, size_t limit, ckpt_error *err)
{
    char *listing = listing_json(fs, n, texts, limit);
    if (!listing) abort();
    char *answer = ckpt_deepspeed_folder_json(listing, strlen(listing), err);
    free(listing);
    return answer;
}

/* The promises of the bound report of a DeepSpeed bundle of `size` bytes. */
static void check_bound(const ckpt_report *rep, uint64_t size)
{
    const ckpt_ds *ds = ckpt_ds_of(rep);
    if (!ds) return; /* the header named DeepSpeed, but the front door refused it: its error was checked */
    for (size_t k = 0; k < ds->failures_len; k++) oracle_check(&ds->failures[k]);
    for (size_t k = 0; k < ds->files_len; k++) {
        const ds_file *f = &ds->files[k];
        if (f->base > size || f->size > size - f->base) abort();
    }
    /* every fragment inside its file, in rank order, on a rank of W: what the core reads once every
     * length is 11.3's (layout_ok); before that the fragments are only listed, never read */
    for (size_t p = 0; ds->layout_ok && p < ds->params_len; p++) {
        const ds_param *pa = &ds->params[p];
        if (pa->frags_len && (pa->frags > ds->frags_len || pa->frags_len > ds->frags_len - pa->frags)) abort();
        for (int key = 0; key < DS_KEYS; key++) {
            size_t n = ckpt_ds_fragments(ds, p, key, NULL);
            if (!n) continue;
            if (n > ds->W) abort();
            ds_frag_at *at = malloc(n * sizeof *at);
            if (!at) abort();
            if (ckpt_ds_fragments(ds, p, key, at) != n) abort();
            uint64_t total = 0;
            for (size_t j = 0; j < n; j++) {
                if (at[j].file >= ds->files_len || at[j].rank >= ds->W) abort();
                if (j && at[j].rank <= at[j - 1].rank) abort();
                const ds_file *f = &ds->files[at[j].file];
                unsigned w = ckpt_dtype_width(at[j].dtype);
                if (!w || at[j].count > UINT64_MAX / w) abort();
                uint64_t bytes = at[j].count * w;
                if (at[j].file_at > f->size || bytes > f->size - at[j].file_at) abort();
                if (at[j].at != f->base + at[j].file_at) abort();
                total += at[j].count;
            }
            /* a key every rank of the parameter holds (the report's `keys`) covers it whole */
            if (ds->layout_ok && ckpt_ds_has_key(ds, p, key) && total != pa->count) abort();
            free(at);
        }
    }
    /* each trainable owner's entry: its m and v where every rank holds them, else none */
    for (size_t k = 0; k < rep->entries_len; k++) {
        const ckpt_entry_info *e = &rep->entries[k];
        size_t p = e->id < ds->slot_count && ds->param_of_slot ? ds->param_of_slot[e->id] : DS_NONE;
        if (p == DS_NONE) abort();
        bool m = ds->layout_ok && ckpt_ds_has_key(ds, p, DS_EXP_AVG),
             v = ds->layout_ok && ckpt_ds_has_key(ds, p, DS_EXP_AVG_SQ);
        if ((e->m_offset != CKPT_NONE) != m || (e->v_offset != CKPT_NONE) != v) abort();
        if (e->m_offset != CKPT_NONE && e->m_offset >= size) abort();
        if (e->v_offset != CKPT_NONE && e->v_offset >= size) abort();
    }
    /* the schema: well formed, its slots the model states' names, owners and ties consistent */
    const ckpt_schema *s = rep->schema;
    if (!s) return;
    size_t slots = ckpt_schema_count(s);
    if (!ckpt_schema_is_well_formed(s) && rep->error.code == 0) abort();
    if (ds->slot_count != slots) abort();
    for (size_t i = 0; i < slots; i++) {
        if (!ds->slot_names || !ds->slot_names[i]) abort();
        size_t p = ds->param_of_slot ? ds->param_of_slot[i] : DS_NONE;
        uint64_t r = ckpt_schema_representative(s, i);
        if (p != DS_NONE) {
            if (p >= ds->params_len || ds->params[p].slot != i) abort();
            if (!ckpt_schema_requires_grad(s, i) || r != i) abort();
        }
        if (r == CKPT_NONE) continue;
        if (r >= slots) abort();
        /* a tie points at an owner (its own representative) that is trainable */
        if (ckpt_schema_is_well_formed(s) &&
            (ckpt_schema_representative(s, r) != r || !ckpt_schema_requires_grad(s, r)))
            abort();
    }
}

/* Lay the folder out as the plan says and open it. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_file fs[MAX_FILES];
    size_t n = fuzz_folder_files(data, size, fs, MAX_FILES, true);
    if (!n) return 0;
    ckpt_error err = {0};
    ckpt_error_clear(&err);
    char *answer = ask(fs, n, false, 0, &err);
    oracle_check(&err);
    ckpt_error_clear(&err);
    if (!answer) return 0;
    /* asked for latest's text: ask again with it */
    ckpt_jdoc doc = {0};
    size_t at;
    const char *why;
    if (ckpt_json_parse(answer, strlen(answer), 8, &doc, &at, &why)) abort();
    const ckpt_jv *read = ckpt_jv_get(&doc, &doc.v[0], "read");
    const ckpt_jv *limit = ckpt_jv_get(&doc, &doc.v[0], "readLimit");
    bool again = read && read->kind == CKPT_JV_ARRAY && read->len;
    size_t lim = limit && limit->is_u64 ? (size_t)limit->u : 0;
    ckpt_jdoc_free(&doc);
    if (again) {
        free(answer);
        answer = ask(fs, n, true, lim, &err);
        oracle_check(&err);
        ckpt_error_clear(&err);
        if (!answer) return 0;
    }
    fuzz_open_bundle(fs, n, answer, check_bound);
    free(answer);
    return 0;
}
