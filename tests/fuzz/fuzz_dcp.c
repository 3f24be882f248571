/* libFuzzer target: PyTorch Distributed Checkpoint folders (src/families/dcp/), several files read
 * as one source. The input is a folder: records [name length: 1 byte][name][size: 4 bytes LE]
 * [bytes], each a file at the folder's top (".metadata", "__0_0.distcp"; a size past the input's
 * end takes what is left). The folder is laid out as the JS package lays it out (folder.c): its
 * listing, the core's plan (ckpt_dcp_folder_json), then the core's header and each member's bytes
 * at the offset the plan gives. The bundle is opened, with and without statistics, and the report
 * must keep its promises: every diagnostic with a code is one
 * of its code's templates (the report's error its first); every storage entry's file is one of
 * the files; every run of every item lies inside the source, the runs of a payload adding up to
 * its entry's elements; each entry a slot with state; the schema well formed, each owner its own
 * representative and each tie an earlier owner; and the report serialises. Every diagnostic (the
 * plan's, the report's error) must be one of its code's templates. */
#include "folder.h"
#include "oracle.h"
#include "families/dcp/dcp.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_FILES 16

static char *listing_json(const fuzz_file *fs, size_t n)
{
    strbuf sb = {0};
    fuzz_listing_entries(&sb, fs, n);
    sb_putc(&sb, '}');
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

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_file fs[MAX_FILES];
    size_t n = fuzz_folder_files(data, size, fs, MAX_FILES, false);
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
    fuzz_open_bundle(fs, n, answer, check_bound);
    free(answer);
    return 0;
}
