/* Conversion (format.md 8 "Conversion"): every lossless path round-trips (convert, read back,
 * the same state: config bits, layout, counter, steps, moments bit for bit); every lossy path
 * is refused with the text naming its option, and allowed with it. */
#include "testutil.h"

#include <math.h>

typedef struct file {
    ckpt_buffer buf;
    ckpt_memory mem;
    ckpt_source src;
    ckpt_file *f;
} file;

static void file_open(file *x)
{
    ckpt_source_memory(&x->src, &x->mem, x->buf.data, x->buf.len);
    x->f = ckpt_open(&x->src, NULL);
}

static void file_close(file *x)
{
    ckpt_close(x->f);
    ckpt_buffer_free(&x->buf);
}

/* [frozen p, p, q, p] (slot 3 tied to 1) or, untied, [frozen p, p, q, r]; moments per slot. */
static void make(file *x, bool tied, int dtype, bool counter, uint64_t version, double big)
{
    const uint64_t shapes[] = {1, 2, 1, 2, 1, 3, 1, 2};
    const uint8_t flags[] = {0, 1, 1, 1};
    const uint64_t map[] = {CKPT_NONE, 1, 2, tied ? 1 : 3};
    ckpt_schema *s = schema_of(4, shapes, flags, map);
    double m64[3] = {0.1, -2.5, big}, v64[3] = {0.01, 3.0, 1e-7};
    float m32[3], v32[3];
    for (int k = 0; k < 3; k++) m32[k] = (float)m64[k], v32[k] = (float)v64[k];
    const void *m = dtype == CKPT_FLOAT64 ? (const void *)m64 : m32,
               *v = dtype == CKPT_FLOAT64 ? (const void *)v64 : v32;
    unsigned w = dtype == CKPT_FLOAT64 ? 8 : 4;
    ckpt_entry_in e[3] = {{1, 7, 2, m, v, 2 * w, 2 * w}, {2, 9, 3, m, v, 3 * w, 3 * w}, {3, 4, 2, v, m, 2 * w, 2 * w}};
    ckpt_config c = {CKPT_ADAMW, ckpt_bits_from_double(0.9), ckpt_bits_from_double(0.95), ckpt_bits_from_double(1e-8),
                     ckpt_bits_from_double(0.01)};
    ckpt_write_desc d = {s, dtype, c, counter, 41, e, tied ? 2 : 3, version};
    ckpt_sink sink;
    memset(&x->buf, 0, sizeof x->buf);
    ckpt_sink_buffer(&sink, &x->buf);
    ckpt_error err = {0};
    ckpt_error_clear(&err);
    CHECK(ckpt_write(&d, &sink, &err) == 0);
    if (err.code) fprintf(stderr, "write: %s\n", err.message);
    ckpt_error_clear(&err);
    ckpt_schema_free(s);
    file_open(x);
}

static int convert(file *in, const ckpt_convert_options *o, file *out, ckpt_convert_result *res, ckpt_error *err)
{
    ckpt_sink sink;
    memset(&out->buf, 0, sizeof out->buf);
    ckpt_sink_buffer(&sink, &out->buf);
    ckpt_error_clear(err);
    int rc = ckpt_convert(in->f, o, &sink, res, err);
    file_open(out);
    return rc;
}

/* The same state: config bits, shapes and flags, each trainable slot's effective owner (or,
 * untied, its own copy of the owner's step and moments), counter as expected, moments bit for
 * bit (or rounded, for float64 in and float32 out). */
static void same_state(const file *a, const file *b, bool untied, int counter)
{
    const ckpt_report *ra = ckpt_file_report(a->f), *rb = ckpt_file_report(b->f);
    CHECK(rb->error.code == 0);
    if (rb->error.code) {
        fprintf(stderr, "  converted file: %s\n", rb->error.message);
        return;
    }
    CHECK(memcmp(&ra->config, &rb->config, sizeof ra->config) == 0);
    CHECK(rb->tladamf.counter_state == (counter >= 0));
    if (counter >= 0) CHECK(rb->tladamf.random_counter == (uint64_t)counter);
    size_t n = ckpt_schema_count(ra->schema);
    CHECK(ckpt_schema_count(rb->schema) == n);
    for (size_t i = 0; i < n; i++) {
        CHECK(ckpt_schema_same_shape(ra->schema, i, rb->schema, i));
        CHECK(ckpt_schema_requires_grad(ra->schema, i) == ckpt_schema_requires_grad(rb->schema, i));
        uint64_t want =
            untied && ckpt_schema_requires_grad(ra->schema, i) ? i : ckpt_schema_representative(ra->schema, i);
        CHECK(ckpt_schema_representative(rb->schema, i) == want);
        if (!ckpt_schema_requires_grad(ra->schema, i)) continue;
        const ckpt_entry_info *ea = NULL, *eb = NULL;
        uint64_t oa, ob;
        ckpt_error err = {0};
        ckpt_error_clear(&err);
        bool both = ckpt_file_entry(a->f, i, &ea, &oa, &err) == 0 && ckpt_file_entry(b->f, i, &eb, &ob, &err) == 0;
        CHECK(both);
        if (!both) {
            ckpt_error_clear(&err);
            continue;
        }
        CHECK(ea->step == eb->step && ea->count == eb->count);
        unsigned wa = ra->dtype == CKPT_FLOAT64 ? 8 : 4, wb = rb->dtype == CKPT_FLOAT64 ? 8 : 4;
        uint8_t ma[64], va[64], mb[64], vb[64];
        CHECK(ckpt_file_read_moments(a->f, i, ma, va, &err) == 0 && ckpt_file_read_moments(b->f, i, mb, vb, &err) == 0);
        for (uint64_t k = 0; k < ea->count; k++) {
            if (wa == wb) {
                CHECK(memcmp(ma + k * wa, mb + k * wb, wa) == 0 && memcmp(va + k * wa, vb + k * wb, wa) == 0);
            } else { /* rounded */
                double x, y;
                float fx, fy;
                memcpy(&x, ma + 8 * k, 8), memcpy(&y, va + 8 * k, 8), memcpy(&fx, mb + 4 * k, 4),
                    memcpy(&fy, vb + 4 * k, 4);
                CHECK(fx == (float)x && fy == (float)y);
            }
        }
        ckpt_error_clear(&err);
    }
}

static void path(bool tied, int dtype, bool counter, uint64_t from, ckpt_convert_options o, uint64_t want_version,
                 bool untied, int want_counter)
{
    file in, out;
    make(&in, tied, dtype, counter, from, 1.5);
    CHECK(ckpt_file_report(in.f)->version == from);
    ckpt_convert_result res;
    ckpt_error err = {0};
    int rc = convert(&in, &o, &out, &res, &err);
    CHECK(rc == 0);
    if (rc) fprintf(stderr, "  v%llu: %s\n", (unsigned long long)from, err.message);
    CHECK(res.version == want_version);
    CHECK(ckpt_file_report(out.f)->version == want_version);
    if (!rc) same_state(&in, &out, untied, want_counter);
    ckpt_error_clear(&err);
    file_close(&in);
    file_close(&out);
}

static ckpt_convert_options to(uint64_t v) { return (ckpt_convert_options){.version = v}; }

static void test_lossless(void)
{
    path(false, CKPT_FLOAT32, false, 2, to(3), 3, false, -1); /* identity tags */
    path(false, CKPT_FLOAT32, false, 2, to(5), 5, false, -1); /* flag 0 */
    path(true, CKPT_FLOAT32, false, 3, to(5), 5, false, -1);
    path(true, CKPT_FLOAT32, true, 4, to(5), 5, false, 41); /* flag 1, same counter */
    path(true, CKPT_FLOAT32, true, 5, to(4), 4, false, 41);
    path(true, CKPT_FLOAT32, false, 5, to(3), 3, false, -1);
    path(false, CKPT_FLOAT32, false, 5, to(2), 2, false, -1);
    path(false, CKPT_FLOAT32, false, 3, to(2), 2, false, -1);
    path(true, CKPT_FLOAT32, false, 3, to(3), 3, false, -1); /* the same version: a rewrite */
}

static void test_oldest_and_for(void)
{
    path(false, CKPT_FLOAT32, false, 5, (ckpt_convert_options){.oldest = true}, 2, false, -1);
    path(true, CKPT_FLOAT32, false, 5, (ckpt_convert_options){.oldest = true}, 3, false, -1);
    path(true, CKPT_FLOAT32, true, 5, (ckpt_convert_options){.oldest = true}, 4, false, 41);
    path(true, CKPT_FLOAT64, false, 5, (ckpt_convert_options){.oldest = true}, 5, false, -1);
    path(true, CKPT_FLOAT32, true, 5, (ckpt_convert_options){.reader = CKPT_READER_V2_V4}, 4, false, 41);
    path(true, CKPT_FLOAT32, false, 5, (ckpt_convert_options){.reader = CKPT_READER_V2_V4}, 3, false, -1);
    path(false, CKPT_FLOAT32, false, 5, (ckpt_convert_options){.reader = CKPT_READER_V2}, 2, false, -1);
    path(true, CKPT_FLOAT32, false, 3, (ckpt_convert_options){.reader = CKPT_READER_V2_V5}, 5, false, -1);
}

static void refused(bool tied, int dtype, bool counter, uint64_t from, ckpt_convert_options o, const char *message)
{
    file in, out;
    make(&in, tied, dtype, counter, from, 1.5);
    ckpt_convert_result res;
    ckpt_error err = {0};
    CHECK(convert(&in, &o, &out, &res, &err) == CKPT_E_CONVERSION_LOSES);
    CHECK_STR(err.message ? err.message : "", message);
    ckpt_error_clear(&err);
    file_close(&in);
    file_close(&out);
}

static void test_refusals_and_options(void)
{
    refused(false, CKPT_FLOAT32, false, 2, to(4),
            "version 4 always holds a random counter and the file has none: --random-counter N supplies one");
    refused(true, CKPT_FLOAT32, true, 4, to(3),
            "version 3 cannot hold the random counter: --drop-random-counter drops it (stochastic training then cannot "
            "resume exactly)");
    refused(true, CKPT_FLOAT32, false, 3, to(2),
            "version 2 cannot hold tied parameters: --untie gives every alias its own copy of its owner's moments and "
            "step (loadable only where the model's weights are untied too)");
    refused(true, CKPT_FLOAT64, false, 5, to(4),
            "version 4 cannot hold float64 moments: --round-to-float32 rounds them (the largest relative error is "
            "reported)");
    refused(true, CKPT_FLOAT64, false, 5, (ckpt_convert_options){.reader = CKPT_READER_V2_V4},
            "version 4 cannot hold float64 moments: --round-to-float32 rounds them (the largest relative error is "
            "reported)");
    path(false, CKPT_FLOAT32, false, 2,
         (ckpt_convert_options){.version = 4, .supply_random_counter = true, .random_counter = 7}, 4, false, 7);
    path(true, CKPT_FLOAT32, true, 4, (ckpt_convert_options){.version = 3, .drop_random_counter = true}, 3, false, -1);
    path(true, CKPT_FLOAT32, false, 3, (ckpt_convert_options){.version = 2, .untie = true}, 2, true, -1);
    path(true, CKPT_FLOAT64, false, 5, (ckpt_convert_options){.version = 3, .round_to_float32 = true}, 3, false, -1);
}

static void test_rounding(void)
{
    file in, out;
    make(&in, true, CKPT_FLOAT64, false, 5, 1.5);
    ckpt_convert_result res;
    ckpt_error err = {0};
    CHECK(convert(&in, &(ckpt_convert_options){.version = 3, .round_to_float32 = true}, &out, &res, &err) == 0);
    CHECK(res.rounded && res.dtype == CKPT_FLOAT32);
    /* the worst of the values the entries hold: |float(x) - x| / |x| */
    const double values[] = {0.1, -2.5, 1.5, 0.01, 3.0, 1e-7};
    double worst = 0;
    for (int k = 0; k < 6; k++) worst = fmax(worst, fabs(((double)(float)values[k] - values[k]) / values[k]));
    CHECK(worst > 0 && res.max_relative_error == worst);
    file_close(&in);
    file_close(&out);
    make(&in, true, CKPT_FLOAT64, false, 5, 1e300);
    CHECK(convert(&in, &(ckpt_convert_options){.version = 3, .round_to_float32 = true}, &out, &res, &err) ==
          CKPT_E_CONVERSION_LOSES);
    CHECK_STR(err.message ? err.message : "",
              "parameter 2: m element 2 becomes infinite in float32: it cannot be rounded");
    ckpt_error_clear(&err);
    file_close(&in);
    file_close(&out);
}

static void test_invalid_input(void)
{
    file in, out;
    make(&in, true, CKPT_FLOAT32, false, 3, 1.5);
    in.buf.len -= 1; /* truncated: the file is invalid */
    ckpt_close(in.f);
    file_open(&in);
    ckpt_convert_result res;
    ckpt_error err = {0};
    CHECK(convert(&in, &(ckpt_convert_options){.version = 5}, &out, &res, &err) == CKPT_E_NOT_READABLE);
    CHECK(out.buf.len == 0); /* nothing written */
    ckpt_error_clear(&err);
    file_close(&in);
    file_close(&out);
}

int main(void)
{
    static const test_case cases[] = {
        {"lossless paths round-trip", test_lossless},
        {"oldest and --for", test_oldest_and_for},
        {"refusals name their option; the option allows it", test_refusals_and_options},
        {"rounding to float32", test_rounding},
        {"an invalid input", test_invalid_input},
    };
    return RUN_ALL(cases);
}
