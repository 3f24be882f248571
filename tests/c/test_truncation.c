/* Every prefix of a valid v3 and v5 file is rejected with the exact truncation text: the size
 * of the read that came up short and how many of its bytes were there, at the offset where
 * that field starts. Run on sources of known and unknown size, with and without statistics,
 * and through the load path. Exact-size heap copies let ASan catch any read past the data. */
#include "testutil.h"

#define N CKPT_NONE

static bytes *v3_file(void)
{
    bytes *b = b_new();
    b_header(b, 3, 0, CKPT_ADAMW, 0.01, -1);
    b_u64(b, 4);
    b_slot(b, 2, (uint64_t[]){2, 3}, 6, 1);
    b_slot(b, 0, NULL, 1, 0);
    b_slot(b, 2, (uint64_t[]){2, 3}, 6, 1);
    b_slot(b, 1, (uint64_t[]){0}, 0, 1);
    b_u64(b, 1);
    b_u64(b, 0);
    b_u64(b, 1);
    b_u64(b, 4);
    b_u64(b, 2);
    b_entry(b, 0, 3, 6, 4, 0.5, 0.25);
    b_entry(b, 3, 3, 0, 4, 0, 0);
    return b;
}

static bytes *v5_file(void)
{
    bytes *b = b_new();
    b_header(b, 5, 1, CKPT_ADAM, 0.0, 99);
    b_u64(b, 2);
    b_slot(b, 0, NULL, 1, 1);
    b_slot(b, 1, (uint64_t[]){5}, 5, 1);
    b_u64(b, 1);
    b_u64(b, 2);
    b_u64(b, 2);
    b_entry(b, 1, 8, 5, 8, 0.5, 0.25);
    b_entry(b, 0, 8, 1, 8, 0.5, 0.25);
    return b;
}

typedef struct unknown_size {
    ckpt_memory mem;
} unknown_size;

static size_t read_unknown(void *ctx, uint64_t offset, void *buf, size_t n)
{
    ckpt_memory *m = ctx;
    if (offset >= m->len) return 0;
    if (n > m->len - offset) n = m->len - (size_t)offset;
    memcpy(buf, m->data + offset, n);
    return n;
}

static void sweep(bytes *b, const ckpt_schema *layout)
{
    for (size_t cut = 0; cut < b->len; cut++) {
        const field *f = NULL;
        for (size_t k = 0; k < b->nfields && !f; k++)
            if (b->fields[k].offset + b->fields[k].len > cut) f = &b->fields[k];
        char want[128];
        snprintf(want, sizeof want, F "truncated checkpoint (wanted %zu bytes, got %zu)", f->len, cut - f->offset);
        for (unsigned flags = 0; flags <= CKPT_INSPECT_STATS; flags++) {
            ckpt_report *rep = inspect_bytes(b->data, cut, flags);
            CHECK_ERROR(rep, want, f->offset);
            ckpt_report_free(rep);
        }
        /* Unknown size: payloads must be read to be skipped. */
        unsigned char *copy = malloc(cut ? cut : 1);
        memcpy(copy, b->data, cut);
        ckpt_memory mem = {copy, cut};
        ckpt_source src = {&mem, read_unknown, CKPT_NONE};
        ckpt_report *rep = ckpt_inspect(&src, NULL);
        CHECK_ERROR(rep, want, f->offset);
        ckpt_report_free(rep);
        free(copy);
        ckpt_expected exp = {layout, CKPT_DTYPE_ANY, NULL, -1, CKPT_FAMILY_ANY, CKPT_READER_DEFAULT};
        rep = load_bytes(b->data, cut, &exp);
        CHECK_ERROR(rep, want, f->offset);
        ckpt_report_free(rep);
    }
}

static void v3_prefixes(void)
{
    bytes *b = v3_file();
    ckpt_report *rep = inspect_bytes(b->data, b->len, 0);
    CHECK_ERROR(rep, NULL, N);
    ckpt_report_free(rep);
    ckpt_schema *s =
        schema_of(4, (uint64_t[]){2, 2, 3, 0, 2, 2, 3, 1, 0}, (uint8_t[]){1, 0, 1, 1}, (uint64_t[]){0, N, 0, 3});
    sweep(b, s);
    ckpt_schema_free(s);
    b_free(b);
}

static void v5_prefixes(void)
{
    bytes *b = v5_file();
    ckpt_report *rep = inspect_bytes(b->data, b->len, CKPT_INSPECT_STATS);
    CHECK_ERROR(rep, NULL, N);
    ckpt_report_free(rep);
    ckpt_schema *s = schema_of(2, (uint64_t[]){0, 1, 5}, (uint8_t[]){1, 1}, NULL);
    sweep(b, s);
    ckpt_schema_free(s);
    b_free(b);
}

static const test_case cases[] = {
    {"every prefix of a v3 file", v3_prefixes},
    {"every prefix of a v5 file", v5_prefixes},
};

int main(void) { return RUN_ALL(cases); }
