/* libFuzzer target: the model-state families and pairing. The input is a state file (any bytes):
 * it is inspected, loaded against the shapes of a fixed optimizer checkpoint (the family the
 * destination reads chosen by the first byte), paired with that checkpoint, and given to the
 * health pass beside it. Every diagnostic must be one of its code's templates; a state file
 * that pairs must also load against the checkpoint's shapes. */
#include "ckptscope.h"
#include "oracle.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static ckpt_buffer opt_bytes;
static ckpt_schema *opt_schema;

/* [p = 2x3, p tied to 0, q = 3]: what a mutated state file must pair with. */
static void make_optimizer(void)
{
    if (opt_schema) return;
    uint64_t ranks[] = {2, 2, 1}, dims[] = {2, 3, 2, 3, 3}, map[] = {0, 0, 2};
    uint8_t flags[] = {1, 1, 1};
    opt_schema = ckpt_schema_new(3, ranks, dims, 3, flags, map, 3);
    float m0[6] = {0.1f, -0.2f, 0.3f, 0, 1e-3f, 2}, v0[6] = {0.01f, 0.04f, 0.09f, 0, 1e-6f, 4}, m2[3] = {1, 2, 3},
          v2[3] = {1, 4, 9};
    ckpt_entry_in e[2] = {{0, 10, 6, m0, v0, 24, 24}, {2, 10, 3, m2, v2, 12, 12}};
    ckpt_write_desc d = {
        opt_schema,
        CKPT_FLOAT32,
        {CKPT_ADAM, ckpt_bits_from_double(0.9), ckpt_bits_from_double(0.999), ckpt_bits_from_double(1e-8), 0},
        false,
        0,
        e,
        2,
        0};
    ckpt_sink sink;
    ckpt_sink_buffer(&sink, &opt_bytes);
    ckpt_error err = {0};
    if (ckpt_write(&d, &sink, &err)) abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    make_optimizer();
    if (size < 1) return 0;
    int family = CKPT_FAMILY_ANY + data[0] % 4; /* ANY, TLADAMF, TLSF32B, TLPF32B */
    ckpt_memory mem, omem;
    ckpt_source src, osrc;
    ckpt_source_memory(&src, &mem, data + 1, size - 1);
    ckpt_source_memory(&osrc, &omem, opt_bytes.data, opt_bytes.len);

    ckpt_expected exp = {opt_schema, CKPT_DTYPE_ANY, NULL, -1, family, CKPT_READER_DEFAULT};
    ckpt_report *loaded = ckpt_load(&src, &exp);
    if (!loaded) abort();
    oracle_check(&loaded->error);

    ckpt_inspect_options opt = {CKPT_INSPECT_STATS, NULL, NULL};
    ckpt_file *state = ckpt_open(&src, &opt), *optimizer = ckpt_open(&osrc, NULL);
    if (!state || !optimizer) abort();
    oracle_check(&ckpt_file_report(state)->error);
    char *json = ckpt_report_json(ckpt_file_report(state));
    if (!json) abort();
    free(json);

    ckpt_pair_result *r = ckpt_pair(optimizer, state, NULL, NULL);
    if (!r) abort();
    oracle_check(&r->error);
    for (size_t k = 0; k < r->failures_len; k++) oracle_check(&r->failures[k]);
    /* a valid state file that pairs has the optimizer's shapes: read as its own family, it
     * loads against them (an invalid file never pairs) */
    const ckpt_report *srep = ckpt_file_report(state);
    const ckpt_family *own = srep->family;
    if (r->pairs && !srep->error.code && (family == CKPT_FAMILY_ANY || (own && family == own->id)) &&
        loaded->error.code)
        abort();
    if (r->pairs && (srep->error.code || ckpt_file_report(optimizer)->error.code)) abort();
    if (r->invalid == CKPT_PAIR_INVALID_STATE && !srep->error.code) abort();
    json = ckpt_pair_json(r);
    if (!json) abort();
    free(json);
    ckpt_pair_result_free(r);

    ckpt_error err = {0};
    ckpt_error_clear(&err);
    ckpt_health_options ho = {1e-3, 0, CKPT_NONE, NULL, NULL, false, 0, 0};
    json = ckpt_health_json(optimizer, state, &ho, &err);
    oracle_check(&err);
    free(json);
    ckpt_error_clear(&err);

    ckpt_report_free(loaded);
    ckpt_close(state);
    ckpt_close(optimizer);
    return 0;
}
