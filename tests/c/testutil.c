#include "testutil.h"

#include <stdarg.h>

int t_failures, t_checks;
const char *t_current = "";

int run_tests(const test_case *cases, size_t n)
{
    int passed = 0, failed = 0;
    for (size_t k = 0; k < n; k++) {
        int before = t_failures;
        t_current = cases[k].name;
        cases[k].fn();
        if (t_failures == before) passed++;
        else {
            failed++;
            fprintf(stderr, "FAIL %s\n", cases[k].name);
        }
    }
    printf("%d checks\n%d passed, %d failed\n", t_checks, passed, failed);
    return failed ? 1 : 0;
}

bytes *b_new(void)
{
    bytes *b = calloc(1, sizeof *b);
    if (!b) abort();
    return b;
}

void b_free(bytes *b)
{
    if (!b) return;
    free(b->data);
    free(b);
}

void b_raw(bytes *b, const void *p, size_t n)
{
    if (b->len + n > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->len + n) cap *= 2;
        b->data = realloc(b->data, cap);
        if (!b->data) abort();
        b->cap = cap;
    }
    if (b->nfields < MAX_FIELDS) b->fields[b->nfields++] = (field){b->len, n};
    if (n) memcpy(b->data + b->len, p, n);
    b->len += n;
}

void b_u64(bytes *b, uint64_t v)
{
    unsigned char x[8];
    for (int k = 0; k < 8; k++) x[k] = (unsigned char)(v >> (8 * k));
    b_raw(b, x, 8);
}

void b_f64(bytes *b, double x) { b_u64(b, ckpt_bits_from_double(x)); }

void b_payload(bytes *b, uint64_t count, unsigned width, double value)
{
    size_t n = (size_t)count * width;
    unsigned char *p = malloc(n ? n : 1);
    if (!p) abort();
    for (uint64_t k = 0; k < count; k++) {
        if (width == 8) memcpy(p + 8 * k, &value, 8);
        else {
            float f = (float)value;
            memcpy(p + 4 * k, &f, 4);
        }
    }
    b_raw(b, p, n);
    free(p);
}

void b_header(bytes *b, uint64_t version, int dtype, uint64_t kind, double wd, long long counter)
{
    b_raw(b, "TLADAMF", 7);
    b_u64(b, version);
    if (version == 5) b_u64(b, (uint64_t)dtype);
    b_u64(b, kind);
    b_f64(b, 0.9);
    b_f64(b, 0.999);
    b_f64(b, 1e-8);
    b_f64(b, wd);
    if (version == 5) b_u64(b, counter >= 0);
    if (version == 4 || (version == 5 && counter >= 0)) b_u64(b, (uint64_t)counter);
}

void b_slot(bytes *b, uint64_t rank, const uint64_t *dims, uint64_t size, uint64_t flag)
{
    b_u64(b, rank);
    for (uint64_t k = 0; k < rank; k++) b_u64(b, dims[k]);
    b_u64(b, size);
    b_u64(b, flag);
}

void b_entry(bytes *b, uint64_t id, uint64_t step, uint64_t count, unsigned width, double m_value, double v_value)
{
    b_u64(b, id);
    b_u64(b, step);
    b_u64(b, count);
    b_payload(b, count, width, m_value);
    b_payload(b, count, width, v_value);
}

/* Run the library on an exact-size heap copy, so ASan sees any read past the data. */
static ckpt_report *on_copy(const void *data, size_t len, const ckpt_inspect_options *opt, const ckpt_expected *exp)
{
    unsigned char *copy = malloc(len ? len : 1);
    if (!copy) abort();
    if (len) memcpy(copy, data, len);
    ckpt_memory mem;
    ckpt_source src;
    ckpt_source_memory(&src, &mem, copy, len);
    ckpt_report *rep = exp ? ckpt_load(&src, exp) : ckpt_inspect(&src, opt);
    free(copy);
    if (!rep) abort();
    return rep;
}

ckpt_report *inspect_bytes(const void *data, size_t len, unsigned flags)
{
    ckpt_inspect_options opt = {flags, NULL, NULL};
    return on_copy(data, len, &opt, NULL);
}

ckpt_report *load_bytes(const void *data, size_t len, const ckpt_expected *exp)
{
    return on_copy(data, len, NULL, exp);
}

ckpt_schema *schema_of(size_t n, const uint64_t *words, const uint8_t *flags, const uint64_t *map)
{
    uint64_t ranks[256], dims[1024];
    size_t w = 0, d = 0;
    for (size_t i = 0; i < n; i++) {
        ranks[i] = words[w++];
        for (uint64_t k = 0; k < ranks[i]; k++) dims[d++] = words[w++];
    }
    ckpt_schema *s = ckpt_schema_new(n, ranks, dims, flags ? n : 0, flags, map, map ? n : 0);
    if (!s) abort();
    return s;
}

void check_error(const ckpt_report *rep, const char *message, uint64_t offset)
{
    if (!message) {
        CHECK_STR(rep->error.code ? rep->error.message : "(no error)", "(no error)");
        return;
    }
    CHECK_STR(rep->error.message, message);
    t_checks++;
    if (rep->error.offset != offset) {
        t_failures++;
        fprintf(stderr, "[%s] offset %llu, want %llu\n", t_current, (unsigned long long)rep->error.offset,
                (unsigned long long)offset);
    }
}

size_t byte_counter_read(void *ctx, uint64_t offset, void *buf, size_t n)
{
    byte_counter *c = ctx;
    size_t got = c->inner.read(c->inner.ctx, offset, buf, n);
    if (got != CKPT_READ_ERROR) c->bytes += got;
    return got;
}

uint8_t *read_file_in(const char *dir, const char *name, size_t *len)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *d = malloc((size_t)n + 1);
    *len = fread(d, 1, (size_t)n, f);
    d[*len] = 0;
    fclose(f);
    return d;
}
