/* libFuzzer target: the torch object model (src/families/pytorch/objects.h). The input is a file (any
 * bytes): a torch.save zip or a legacy file. A file that reads must keep every promise of the
 * reader: each storage's record holds exactly numel x width bytes and lies in the file, each
 * tensor's first element lies in its storage, at most one tensor and one storage per pickle node,
 * and the JSON rendering, the names and the weights-only warning are built. The file is then
 * paired with itself, as a file holding both is (format.md 10.4): a pair that fits must give a
 * well-formed schema whose entries are the trainable owners, each payload inside the file, and
 * its health and export must run. Every diagnostic must be one of its code's templates. */
#include "oracle.h"
#include "families/pytorch/objects.h"

#include <stdlib.h>

static int discard(void *ctx, const void *p, size_t n)
{
    (void)ctx, (void)p, (void)n;
    return 0;
}

/* Pair the file with itself: two handles, as the CLI opens a file holding both. */
static void pair_with_itself(const ckpt_source *src, uint64_t size)
{
    ckpt_file *o = ckpt_open(src, NULL), *m = ckpt_open(src, NULL);
    if (!o || !m) abort();
    ckpt_pair_result *r = ckpt_pair_named(o, m, NULL, 0, NULL, NULL);
    if (!r) abort();
    for (size_t k = 0; k < r->failures_len; k++) oracle_check(&r->failures[k]);
    oracle_check(&r->error);
    const ckpt_report *rep = ckpt_file_report(o);
    if (r->pairs) {
        if (!rep->slots_bound || !ckpt_schema_is_well_formed(rep->schema)) abort();
        if (rep->entries_len > ckpt_schema_optimizer_state_count(rep->schema)) abort();
        unsigned w = ckpt_dtype_width(rep->dtype);
        for (size_t k = 0; k < rep->entries_len; k++) {
            const ckpt_entry_info *e = &rep->entries[k];
            if (!ckpt_schema_is_representative(rep->schema, e->id)) abort();
            if (e->m_offset > size || e->count * w > size - e->m_offset) abort();
            if (e->v_offset > size || e->count * w > size - e->v_offset) abort();
        }
        ckpt_error err = {0};
        ckpt_error_clear(&err);
        char *h = ckpt_health_json(o, m, NULL, &err);
        oracle_check(&err);
        free(h);
        ckpt_error_clear(&err);
        ckpt_export_options eo = {0};
        eo.format = CKPT_EXPORT_SAFETENSORS;
        ckpt_sink sink = {NULL, discard};
        ckpt_export(o, &eo, &sink, &err);
        oracle_check(&err);
        ckpt_error_clear(&err);
    }
    char *j = ckpt_report_json(rep);
    if (!j) abort();
    free(j);
    ckpt_pair_result_free(r);
    ckpt_close(o);
    ckpt_close(m);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ckpt_memory mem;
    ckpt_source src;
    ckpt_source_memory(&src, &mem, data, size);
    ckpt_torch *t = NULL;
    ckpt_error err = {0};
    ckpt_error_clear(&err);
    int rc = ckpt_torch_open(&src, "fuzz.pt", &t, &err);
    oracle_check(&err);
    ckpt_error_clear(&err);
    if (rc) {
        if (t) abort();
        return 0;
    }
    if (t->tensors_len > t->pickle->nodes_len || t->storages_len > t->pickle->nodes_len) abort();
    for (size_t s = 0; s < t->storages_len; s++) {
        const ckpt_torch_storage *sg = &t->storages[s];
        if (sg->bytes != sg->numel * sg->width || sg->at > size || sg->bytes > size - sg->at) abort();
    }
    for (size_t k = 0; k < t->tensors_len; k++) {
        const ckpt_torch_tensor *x = &t->tensors[k];
        const ckpt_torch_storage *sg = &t->storages[x->storage];
        if (x->count && (x->at < sg->at || x->at + x->width > sg->at + sg->bytes)) abort();
        for (size_t j = 0; j < k && j < 8; j++) (void)ckpt_torch_same(t, j, k);
    }
    for (size_t e = 0; e < t->entries_len; e++)
        if (t->entries[e].has_step && !(t->entries[e].step >= 0)) abort();
    strbuf sb = {0};
    ckpt_torch_globals_json(&sb, t, true);
    ckpt_torch_weights_only_warning(&sb, t);
    sb_free(&sb);
    ckpt_torch_free(t);
    pair_with_itself(&src, size);
    return 0;
}
