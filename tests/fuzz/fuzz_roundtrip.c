/* libFuzzer target: a description built from the input is written; whenever the writer
 * accepts it, inspection accepts the bytes and gives back the layout, the config, the counter
 * and the moments bit for bit, and loading into the same layout succeeds. */
#include "ckptscope.h"
#include "oracle.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    size_t at = 0;
#define NEXT() (at < size ? data[at++] : 0)
    size_t n = NEXT() % 9;
    uint64_t ranks[8], dims[16], map[8];
    uint8_t flags[8];
    size_t d = 0;
    for (size_t i = 0; i < n; i++) {
        uint8_t b = NEXT();
        ranks[i] = b % 3;
        flags[i] = (b >> 2) & 1;
        for (uint64_t k = 0; k < ranks[i]; k++) dims[d++] = NEXT() % 4;
        /* tie to an earlier owner of the same shape when asked and possible */
        map[i] = flags[i] ? i : CKPT_NONE;
        if (flags[i] && (b >> 3) & 1) {
            for (size_t r = 0, dr = 0; r < i; dr += ranks[r], r++) {
                size_t di = d - ranks[i];
                if (map[r] == r && ranks[r] == ranks[i] && memcmp(dims + dr, dims + di, ranks[i] * 8) == 0) {
                    map[i] = r;
                    break;
                }
            }
        }
    }
    uint8_t choice = NEXT();
    int dtype = choice & 1;
    bool counter = (choice >> 1) & 1;
    ckpt_schema *s = ckpt_schema_new(n, ranks, dims, n, flags, map, n);
    if (!s) abort();
    unsigned width = dtype ? 8 : 4;
    ckpt_entry_in entries[8];
    uint8_t *payload = malloc(8 * 2 * 64 * 8 + 1);
    size_t ne = 0, p = 0;
    for (size_t i = 0; i < n; i++) {
        if (!ckpt_schema_is_representative(s, i)) continue;
        uint64_t count = ckpt_schema_size(s, i, NULL);
        uint8_t *m = payload + p;
        for (uint64_t k = 0; k < 2 * count * width; k++) payload[p++] = NEXT();
        entries[ne++] = (ckpt_entry_in){i, 1 + NEXT(), count, m, m + count * width, count * width, count * width};
    }
    ckpt_config c = {(choice >> 2) & 1, ckpt_bits_from_double(0.9), ckpt_bits_from_double(0.999),
                     ckpt_bits_from_double(1e-8), 0};
    ckpt_write_desc desc = {
        s, dtype, c, counter, (uint64_t)choice * 0x0101010101010101ull, entries, ne, (choice >> 4) % 6};
    ckpt_buffer buf;
    ckpt_sink sink;
    ckpt_sink_buffer(&sink, &buf);
    ckpt_error err = {0};
    if (ckpt_write(&desc, &sink, &err) == 0) {
        ckpt_memory mem;
        ckpt_source src;
        ckpt_source_memory(&src, &mem, buf.data, buf.len);
        ckpt_report *rep = ckpt_inspect(&src, NULL);
        if (rep->error.code || rep->dtype != dtype || rep->tladamf.counter_state != (int)counter) abort();
        if (!ckpt_config_same(&rep->config, rep->dtype, &c, dtype)) abort();
        if (rep->entries_len != ne || ckpt_schema_count(rep->schema) != n) abort();
        for (size_t i = 0; i < n; i++)
            if (ckpt_schema_representative(rep->schema, i) != ckpt_schema_representative(s, i)) abort();
        for (size_t k = 0; k < ne; k++) {
            const ckpt_entry_in *e = NULL;
            for (size_t j = 0; j < ne; j++)
                if (entries[j].id == rep->entries[k].id) e = &entries[j];
            if (!e || rep->entries[k].step != e->step) abort();
            uint8_t mm[64 * 8], vv[64 * 8];
            ckpt_file *f = ckpt_open(&src, NULL);
            int rc = ckpt_file_read_moments(f, e->id, mm, vv, &err);
            ckpt_close(f);
            if (rc) abort();
            if (memcmp(mm, e->m, e->m_bytes) || memcmp(vv, e->v, e->v_bytes)) abort();
        }
        ckpt_expected exp = {s, dtype, &c, counter, CKPT_FAMILY_ANY, CKPT_READER_DEFAULT};
        ckpt_report *loaded = ckpt_load(&src, &exp);
        if (loaded->error.code) abort();
        ckpt_report_free(loaded);
        ckpt_report_free(rep);
    } else {
        oracle_check(&err);
    }
    ckpt_error_clear(&err);
    ckpt_buffer_free(&buf);
    free(payload);
    ckpt_schema_free(s);
    return 0;
}
