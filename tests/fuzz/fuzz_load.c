/* libFuzzer target: load against an expected layout taken from the input. The first byte
 * gives the slot count (0..15); each slot takes a byte (rank 0..2, trainable, tied-to-previous
 * bits) and its dims one byte each; then a byte for the destination's dtype/config/counter
 * choices. The rest is the checkpoint (of any family: a state file loads against the shapes).
 * Malformed destinations are fine: the loader must say so ("malformed in-memory parameter
 * schema"). Every diagnostic must be one of its code's templates. */
#include "ckptscope.h"
#include "oracle.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    size_t at = 0;
    if (size < 2) return 0;
    size_t n = data[at++] % 16;
    uint64_t ranks[16], dims[16 * 2], map[16];
    uint8_t flags[16];
    size_t d = 0;
    bool has_map = false;
    for (size_t i = 0; i < n; i++) {
        if (at >= size) return 0;
        uint8_t b = data[at++];
        ranks[i] = b % 3;
        flags[i] = (b >> 2) & 1;
        map[i] = flags[i] ? ((b >> 3) & 1 && i ? (uint64_t)((b >> 4) % i) : i) : CKPT_NONE;
        if ((b >> 3) & 1) has_map = true;
        for (uint64_t k = 0; k < ranks[i]; k++) {
            if (at >= size) return 0;
            dims[d++] = data[at++] % 5;
        }
    }
    if (at >= size) return 0;
    uint8_t choice = data[at++];
    ckpt_schema *s = ckpt_schema_new(n, ranks, dims, n, flags, has_map ? map : NULL, n);
    if (!s) abort();
    ckpt_config c = {(choice >> 2) & 1, ckpt_bits_from_double(0.9), ckpt_bits_from_double(0.999),
                     ckpt_bits_from_double(1e-8), 0};
    int reader = (choice >> 5) % 7; /* 0 (v2-v5) or one of the six readers (format.md 8) */
    ckpt_expected exp = {
        s, (int)(choice % 3) - 1, (choice >> 3) & 1 ? &c : NULL, (int)((choice >> 4) % 3) - 1, CKPT_FAMILY_ANY, reader};
    ckpt_memory mem;
    ckpt_source src;
    ckpt_source_memory(&src, &mem, data + at, size - at);
    ckpt_report *rep = ckpt_load(&src, &exp);
    if (!rep) abort();
    oracle_check(&rep->error);
    /* A file that loads is also a valid file to inspect, with the same layout; and the reader
     * that loaded it says, without a destination, that it reads it. */
    if (rep->error.code == 0) {
        ckpt_report *ins = ckpt_inspect(&src, NULL);
        if (!ins || !ins->tladamf.readers) abort();
        if (reader && !ins->tladamf.readers[reader - 1].reads) abort();
        if (!reader && (ins->error.code || !ins->schema || ckpt_schema_count(ins->schema) != n)) abort();
        ckpt_report_free(ins);
    }
    char *json = ckpt_report_json(rep);
    free(json);
    ckpt_report_free(rep);
    ckpt_schema_free(s);
    return 0;
}
