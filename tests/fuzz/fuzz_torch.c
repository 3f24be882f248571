/* libFuzzer target: the torch object model (src/torch_objects.c). The input is a file (any
 * bytes): a torch.save zip or a legacy file. A file that reads must keep every promise of the
 * reader: each storage's record holds exactly numel x width bytes and lies in the file, each
 * tensor's first element lies in its storage, at most one tensor and one storage per pickle node,
 * and the JSON rendering, the names and the weights-only warning are built. Every diagnostic must be one of its code's
 * templates. */
#include "oracle.h"
#include "torch_objects.h"

#include <stdlib.h>

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
    ckpt_torch_json(&sb, t);
    ckpt_torch_globals_json(&sb, t, true);
    ckpt_torch_weights_only_warning(&sb, t);
    sb_free(&sb);
    ckpt_torch_free(t);
    return 0;
}
