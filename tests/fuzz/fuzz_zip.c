/* libFuzzer target: the zip layer (src/zip.c). The input is a file (any bytes): its central
 * directory is read; every member is resolved and read through its windowed source, which must
 * hold exactly its central directory size and never reach past the file; a member that reads is
 * given to the pickle reader too (a zip's data.pkl). Every diagnostic must be one of its code's
 * templates. */
#include "oracle.h"
#include "containers/pickle.h"
#include "containers/zip.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ckpt_memory mem;
    ckpt_source src;
    ckpt_source_memory(&src, &mem, data, size);
    ckpt_zip *z = NULL;
    ckpt_error err = {0};
    ckpt_error_clear(&err);
    int rc = ckpt_zip_open(&src, &z, &err);
    oracle_check(&err);
    if (rc) {
        if (z || !err.code) abort();
        ckpt_error_clear(&err);
        return 0;
    }
    for (size_t k = 0; k < z->count; k++) {
        ckpt_source m;
        ckpt_window w;
        ckpt_error_clear(&err);
        if (ckpt_zip_member_source(z, k, &m, &w, &err)) {
            oracle_check(&err);
            continue;
        }
        const ckpt_zip_member *zm = &z->members[k];
        /* the member lies in the file, before the next one and the directory */
        if (zm->data_offset > size || m.size > size - zm->data_offset || zm->data_offset + m.size > z->cd_offset)
            abort();
        uint8_t *buf = malloc((size_t)m.size + 1);
        size_t got = m.read(m.ctx, 0, buf, (size_t)m.size + 1);
        if (got != m.size || memcmp(buf, data + zm->data_offset, got)) abort();
        ckpt_pickle *p = NULL;
        ckpt_error_clear(&err);
        if (ckpt_pickle_read(buf, got, "PyTorch", zm->name, 0, zm->data_offset, &p, &err) == 0) ckpt_pickle_free(p);
        else oracle_check(&err);
        free(buf);
    }
    ckpt_error_clear(&err);
    ckpt_zip_free(z);
    return 0;
}
