/* libFuzzer target: inspect any bytes (any family), with and without statistics, through a
 * source of known size and one of unknown size; the report must serialise and every diagnostic
 * be one of its code's templates. A file that opens valid is then used as a user would: every
 * slot's entry and statistics, its tensors, the health pass, an export into a sink that drops
 * the bytes. Crashes, leaks, over-reads and undefined behaviour are the sanitizers' to find. */
#include "ckptscope.h"
#include "oracle.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static size_t read_unknown(void *ctx, uint64_t offset, void *buf, size_t n)
{
    const ckpt_memory *m = ctx;
    if (offset >= m->len) return 0;
    if (n > m->len - offset) n = m->len - (size_t)offset;
    memcpy(buf, m->data + offset, n);
    return n;
}

static void check_report(const ckpt_report *rep)
{
    if (!rep) abort();
    oracle_check(&rep->error);
    /* every reader's verdict is a template of its code too (format.md 8); the newest reader's is the report's */
    for (int k = 0; rep->tladamf.readers && k < CKPT_READER_COUNT; k++) {
        oracle_check(&rep->tladamf.readers[k].error);
        if (rep->tladamf.readers[k].reads != (rep->tladamf.readers[k].error.code == 0)) abort();
    }
    if (rep->tladamf.readers && rep->tladamf.readers[CKPT_READER_V2_V5 - 1].error.code != rep->error.code) abort();
    char *json = ckpt_report_json(rep);
    if (!json) abort();
    free(json);
}

static int discard(void *ctx, const void *buf, size_t n)
{
    (void)ctx, (void)buf, (void)n;
    return 0;
}

/* A valid file, used through its handle; every error must be a template of its code. */
static void use(const ckpt_file *f)
{
    const ckpt_report *rep = ckpt_file_report(f);
    ckpt_error err = {0};
    ckpt_error_clear(&err);
    size_t n = rep->schema ? ckpt_schema_count(rep->schema) : 0;
    for (uint64_t slot = 0; slot < n + 1 && slot < 8; slot++) {
        ckpt_stats *a = NULL, *b = NULL;
        if (ckpt_family_has_role(rep->family, CKPT_ROLE_OPTIMIZER))
            ckpt_file_moment_stats(f, slot, NULL, NULL, &a, &b, &err);
        else ckpt_file_tensor_stats(f, slot, NULL, NULL, &a, &err);
        ckpt_stats_free(a);
        ckpt_stats_free(b);
        ckpt_error_clear(&err);
    }
    ckpt_sink sink = {NULL, discard};
    /* a PyTorch file's slots come from its model: what needs a schema refuses it, code 49 */
    const bool no_schema = rep->family && rep->family->id == CKPT_FAMILY_PYTORCH;
    for (int format = CKPT_EXPORT_SAFETENSORS; format <= CKPT_EXPORT_NPZ; format++) {
        ckpt_export_options o = {format, NULL, 0, NULL, 0, NULL, NULL};
        /* a valid file always exports (.npz: but for dtypes NumPy lacks, bfloat16 and float8) */
        if (ckpt_export(f, &o, &sink, &err) && !(format == CKPT_EXPORT_NPZ && err.code == CKPT_E_INVALID_ARGUMENT) &&
            !(no_schema && err.code == CKPT_E_WRONG_FAMILY))
            abort();
        ckpt_error_clear(&err);
    }
    if (ckpt_family_has_role(rep->family, CKPT_ROLE_OPTIMIZER)) {
        ckpt_health_options o = {1e-3, 0, CKPT_NONE, NULL, NULL, false, 0, 0};
        char *json = ckpt_health_json(f, NULL, &o, &err);
        if (!json && !(no_schema && err.code == CKPT_E_WRONG_FAMILY)) abort();
        free(json);
    }
    ckpt_error_clear(&err);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ckpt_memory mem;
    ckpt_source src;
    ckpt_source_memory(&src, &mem, data, size);
    for (unsigned flags = 0; flags <= CKPT_INSPECT_STATS; flags++) {
        ckpt_inspect_options opt = {flags, NULL, NULL};
        ckpt_file *f = ckpt_open(&src, &opt);
        if (!f) abort();
        check_report(ckpt_file_report(f));
        if (flags && ckpt_file_report(f)->error.code == 0) use(f);
        ckpt_close(f);
    }
    ckpt_memory mem2 = {data, size};
    ckpt_source unknown = {&mem2, read_unknown, CKPT_NONE};
    ckpt_report *rep = ckpt_inspect(&unknown, NULL);
    check_report(rep);
    ckpt_report_free(rep);
    return 0;
}
