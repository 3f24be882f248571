/* libFuzzer target: inspect any bytes, with and without statistics, through a source of known
 * size and one of unknown size; the report must serialise and its error carry a reference
 * text. Crashes, leaks, over-reads and undefined behaviour are the sanitizers' to find. */
#include "ckptscope.h"

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
    if (rep->error.code && (!rep->error.message || strncmp(rep->error.message, "CUDA Adam checkpoint: ", 22) != 0)) abort();
    char *json = ckpt_report_json(rep);
    if (!json) abort();
    free(json);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ckpt_memory mem;
    ckpt_source src;
    ckpt_source_memory(&src, &mem, data, size);
    for (unsigned flags = 0; flags <= CKPT_INSPECT_STATS; flags++) {
        ckpt_inspect_options opt = {flags, NULL, NULL};
        ckpt_report *rep = ckpt_inspect(&src, &opt);
        check_report(rep);
        ckpt_report_free(rep);
    }
    ckpt_memory mem2 = {data, size};
    ckpt_source unknown = {&mem2, read_unknown, CKPT_NONE};
    ckpt_report *rep = ckpt_inspect(&unknown, NULL);
    check_report(rep);
    ckpt_report_free(rep);
    return 0;
}
