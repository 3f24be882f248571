/* libFuzzer target: the safetensors family (format.md 10.1) and the bounded JSON reader under
 * it. The input is a file (any bytes): it is inspected with statistics, each tensor read and
 * its statistics computed through the open file, the report written as JSON, exported, and
 * paired (by shape, and by its own names) with a fixed optimizer checkpoint. Every diagnostic
 * must be one of its code's templates; a valid file must export as safetensors. */
#include "ckptscope.h"
#include "oracle.h"

#include <stdlib.h>
#include <string.h>

static ckpt_buffer opt_bytes;

/* [2x3, 3]: what a mutated file pairs with. */
static void make_optimizer(void)
{
    if (opt_bytes.data) return;
    uint64_t ranks[] = {2, 1}, dims[] = {2, 3, 3};
    uint8_t flags[] = {1, 1};
    ckpt_schema *s = ckpt_schema_new(2, ranks, dims, 2, flags, NULL, 0);
    float m0[6] = {0}, v0[6] = {0}, m1[3] = {0}, v1[3] = {0};
    ckpt_entry_in e[2] = {{0, 1, 6, m0, v0, 24, 24}, {1, 1, 3, m1, v1, 12, 12}};
    ckpt_write_desc d = {
        s,
        CKPT_FLOAT32,
        {CKPT_ADAM, ckpt_bits_from_double(0.9), ckpt_bits_from_double(0.999), ckpt_bits_from_double(1e-8), 0},
        false,
        0,
        e,
        2,
        2};
    ckpt_sink sink;
    ckpt_sink_buffer(&sink, &opt_bytes);
    ckpt_error err = {0};
    if (ckpt_write(&d, &sink, &err)) abort();
    ckpt_schema_free(s);
}

static int discard(void *ctx, const void *p, size_t n)
{
    (void)ctx, (void)p, (void)n;
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    make_optimizer();
    ckpt_memory mem, omem;
    ckpt_source src, osrc;
    ckpt_source_memory(&src, &mem, data, size);
    ckpt_source_memory(&osrc, &omem, opt_bytes.data, opt_bytes.len);
    ckpt_inspect_options opt = {CKPT_INSPECT_STATS, NULL, NULL};
    ckpt_file *f = ckpt_open(&src, &opt), *o = ckpt_open(&osrc, NULL);
    if (!f || !o) abort();
    const ckpt_report *rep = ckpt_file_report(f);
    oracle_check(&rep->error);
    char *json = ckpt_report_json(rep);
    if (!json) abort();
    free(json);
    ckpt_error err = {0};
    ckpt_error_clear(&err);
    bool valid = rep->error.code == 0 && rep->family && rep->family->id == CKPT_FAMILY_SAFETENSORS;
    for (size_t k = 0; valid && k < rep->tensors_len && k < 8; k++) {
        ckpt_stats *a = NULL;
        if (ckpt_file_tensor_stats(f, k, NULL, NULL, &a, &err)) oracle_check(&err);
        ckpt_stats_free(a);
        ckpt_error_clear(&err);
    }
    if (valid) {
        ckpt_sink sink = {NULL, discard};
        ckpt_export_options eo = {CKPT_EXPORT_SAFETENSORS, NULL, 0, NULL, 0, NULL, NULL};
        if (ckpt_export(f, &eo, &sink, &err)) abort(); /* a valid file always exports as safetensors */
        ckpt_error_clear(&err);
        eo.format = CKPT_EXPORT_NPZ;
        if (ckpt_export(f, &eo, &sink, &err)) oracle_check(&err); /* bfloat16 and float8 have no NumPy dtype */
        ckpt_error_clear(&err);
    }
    /* pairing: by shape, then by the file's own names */
    ckpt_pair_result *r = ckpt_pair_named(o, f, NULL, 0, NULL, NULL);
    if (!r) abort();
    for (size_t k = 0; k < r->failures_len; k++) oracle_check(&r->failures[k]);
    ckpt_pair_result_free(r);
    if (valid && rep->tensors_len) {
        const char **names = malloc(rep->tensors_len * sizeof *names);
        if (!names) abort();
        for (size_t k = 0; k < rep->tensors_len; k++) names[rep->tensors_len - 1 - k] = rep->tensors[k].name;
        r = ckpt_pair_named(o, f, names, rep->tensors_len, NULL, NULL);
        if (!r) abort();
        ckpt_pair_result_free(r);
        free(names);
    }
    ckpt_close(f);
    ckpt_close(o);
    return 0;
}
