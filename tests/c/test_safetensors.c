/* The safetensors family (format.md 10.1): valid files of every dtype (tensors, names, dtypes,
 * statistics widened exactly), every violation with its exact text, code and tensor, and the
 * bytes read to open one (the header only). */
#include "testutil.h"

#include <math.h>

/* A file: the u64 header length, the header, then the data. */
static bytes *st_file(const char *header, const void *data, size_t data_len)
{
    bytes *b = b_new();
    b_u64(b, strlen(header));
    b_raw(b, header, strlen(header));
    if (data_len) b_raw(b, data, data_len);
    return b;
}

static ckpt_report *st_inspect(const char *header, const void *data, size_t data_len, unsigned flags)
{
    bytes *b = st_file(header, data, data_len);
    ckpt_report *rep = inspect_bytes(b->data, b->len, flags);
    b_free(b);
    return rep;
}

static void every_dtype_reads(void)
{
    static const struct {
        const char *st, *name;
        unsigned width;
    } dt[] = {
        {"F64", "float64", 8}, {"F32", "float32", 4}, {"F16", "float16", 2},         {"BF16", "bfloat16", 2},
        {"I64", "int64", 8},   {"I32", "int32", 4},   {"I16", "int16", 2},           {"I8", "int8", 1},
        {"U8", "uint8", 1},    {"BOOL", "bool", 1},   {"F8_E4M3", "float8_e4m3", 1}, {"F8_E5M2", "float8_e5m2", 1}};
    for (size_t k = 0; k < sizeof dt / sizeof dt[0]; k++) {
        char header[256];
        snprintf(header, sizeof header, "{\"w\":{\"dtype\":\"%s\",\"shape\":[2,3],\"data_offsets\":[0,%u]}}", dt[k].st,
                 6 * dt[k].width);
        uint8_t data[48] = {0};
        ckpt_report *rep = st_inspect(header, data, 6 * dt[k].width, CKPT_INSPECT_STATS);
        CHECK(rep->error.code == 0 && rep->family->id == CKPT_FAMILY_SAFETENSORS && rep->tensors_len == 1);
        CHECK(rep->tensors[0].dtype == ckpt_dtype_of_safetensors_name(dt[k].st) && rep->tensors[0].count == 6);
        CHECK_STR(ckpt_dtype_name(rep->dtype), dt[k].name);
        CHECK_STR(rep->tensors[0].name, "w");
        CHECK(rep->tensors[0].data_offset == 8 + strlen(header));
        CHECK(ckpt_dtype_width(rep->tensors[0].dtype) == dt[k].width);
        /* statistics for all but the float8 types: six zeros */
        bool stats = strncmp(dt[k].st, "F8", 2) != 0;
        CHECK(stats ? rep->tensors[0].values && rep->tensors[0].values->zero == 6 : rep->tensors[0].values == NULL);
        ckpt_report_free(rep);
    }
}

/* bfloat16 and float16 widen exactly: the statistics are those of the exact values. */
static void half_statistics_are_exact(void)
{
    /* bf16: 1.0 (0x3f80), -2.5 (0xc020), 2^-133 (0x0001, the smallest subnormal), +inf (0x7f80),
     * NaN (0x7fc0), 0 */
    const uint16_t bf[] = {0x3f80, 0xc020, 0x0001, 0x7f80, 0x7fc0, 0x0000};
    ckpt_report *rep = st_inspect("{\"b\":{\"dtype\":\"BF16\",\"shape\":[6],\"data_offsets\":[0,12]}}", bf, sizeof bf,
                                  CKPT_INSPECT_STATS);
    const ckpt_stats *s = rep->tensors[0].values;
    CHECK(rep->error.code == 0 && s);
    if (s) {
        CHECK(s->count == 6 && s->finite == 4 && s->nan == 1 && s->inf == 1 && s->zero == 1 && s->negative == 1);
        CHECK(s->min == -2.5 && s->max == 1.0);
        CHECK(s->sum == 1.0 - 2.5 + 0x1p-133);
        CHECK(s->sum_squares == 1.0 + 6.25 + 0x1p-266);
    }
    CHECK(rep->tensors[0].unhealthy == 2);
    ckpt_report_free(rep);
    /* f16: 1.0 (0x3c00), -65504 (0xfbff), 2^-24 (0x0001), 0.5 (0x3800) */
    const uint16_t h[] = {0x3c00, 0xfbff, 0x0001, 0x3800};
    rep = st_inspect("{\"h\":{\"dtype\":\"F16\",\"shape\":[2,2],\"data_offsets\":[0,8]}}", h, sizeof h,
                     CKPT_INSPECT_STATS);
    s = rep->tensors[0].values;
    CHECK(rep->error.code == 0 && s);
    if (s) {
        CHECK(s->min == -65504.0 && s->max == 1.0 && s->sum == 1.0 - 65504.0 + 0x1p-24 + 0.5);
        CHECK(s->hist_log2_min == -24);
    }
    ckpt_report_free(rep);
}

static void report_json(void)
{
    const float v[] = {1, 2, 3};
    const int32_t n[] = {7};
    ckpt_report *rep = st_inspect("{\"__metadata__\":{\"format\":\"pt\"},\"b\":{\"dtype\":\"I32\",\"shape\":[],"
                                  "\"data_offsets\":[12,16]},\"a.weight\":{\"dtype\":\"F32\",\"shape\":[3],"
                                  "\"data_offsets\":[0,12]}}",
                                  (const uint8_t[]){0}, 0, 0);
    CHECK(rep->error.code == CKPT_E_SAFETENSORS_LAYOUT); /* no data */
    ckpt_report_free(rep);
    uint8_t data[16];
    memcpy(data, v, 12);
    memcpy(data + 12, n, 4);
    const char *header = "{\"__metadata__\":{\"format\":\"pt\"},\"b\":{\"dtype\":\"I32\",\"shape\":[],"
                         "\"data_offsets\":[12,16]},\"a.weight\":{\"dtype\":\"F32\",\"shape\":[3],"
                         "\"data_offsets\":[0,12]}}";
    rep = st_inspect(header, data, sizeof data, 0);
    CHECK(rep->error.code == 0 && rep->tensors_len == 2 && rep->dtype == CKPT_DTYPE_ANY);
    /* TLADAMF's extension stays as the front door set it: no counter read, no tags, no readers */
    CHECK(rep->tladamf.counter_state == -1 && rep->tladamf.tags_offset == CKPT_NONE && !rep->tladamf.readers);
    CHECK(!rep->has_config);
    char *json = ckpt_report_json(rep);
    char want[1024];
    size_t hl = strlen(header);
    snprintf(
        want, sizeof want,
        "{\"ok\":true,\"family\":\"safetensors\",\"name\":\"safetensors file\",\"kind\":\"state\",\"version\":null,"
        "\"size\":%zu,\"statistics\":false,\"dtype\":null,\"tensorCount\":2,\"offsets\":{\"tensors\":8},"
        "\"tensors\":[{\"name\":\"b\",\"dtype\":\"int32\",\"shape\":[],\"count\":1,\"offset\":%zu,\"dataOffset\":%zu},"
        "{\"name\":\"a.weight\",\"dtype\":\"float32\",\"shape\":[3],\"count\":3,\"offset\":%zu,\"dataOffset\":%zu}],"
        "\"container\":{\"format\":\"safetensors\",\"headerLength\":%zu,\"metadata\":{\"format\":\"pt\"}},"
        "\"warnings\":[],\"error\":null,\"readers\":null}",
        8 + hl + 16, 8 + (size_t)(strstr(header, "\"b\"") - header), 8 + hl + 12,
        8 + (size_t)(strstr(header, "\"a.weight\"") - header), 8 + hl, hl);
    CHECK_STR(json, want);
    free(json);
    ckpt_report_free(rep);
}

typedef struct violation {
    const char *header;
    size_t data_len;
    int code;
    const char *message;
    uint64_t slot;
} violation;

static void every_violation_is_refused(void)
{
    const violation v[] = {
        {"{\"a\":1}", 0, CKPT_E_SAFETENSORS_TENSOR, "safetensors: tensor \"a\" is not an object", 0},
        {"{\"a\":{\"shape\":[1],\"data_offsets\":[0,4]}}", 4, CKPT_E_SAFETENSORS_TENSOR,
         "safetensors: tensor \"a\" has no dtype", 0},
        {"{\"a\":{\"dtype\":\"F31\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4, CKPT_E_SAFETENSORS_TENSOR,
         "safetensors: tensor \"a\" has an unknown dtype \"F31\"", 0},
        {"{\"a\":{\"dtype\":\"F32\",\"data_offsets\":[0,4]}}", 4, CKPT_E_SAFETENSORS_TENSOR,
         "safetensors: tensor \"a\" has no shape", 0},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[-1],\"data_offsets\":[0,4]}}", 4, CKPT_E_SAFETENSORS_TENSOR,
         "safetensors: tensor \"a\" has a shape that is not a list of integers from 0", 0},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1.5],\"data_offsets\":[0,4]}}", 4, CKPT_E_SAFETENSORS_TENSOR,
         "safetensors: tensor \"a\" has a shape that is not a list of integers from 0", 0},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1]}}", 4, CKPT_E_SAFETENSORS_TENSOR,
         "safetensors: tensor \"a\" has no data_offsets", 0},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,0]}}", 4, CKPT_E_SAFETENSORS_TENSOR,
         "safetensors: tensor \"a\" has data_offsets that are not [begin, end] with begin <= end", 0},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0]}}", 4, CKPT_E_SAFETENSORS_TENSOR,
         "safetensors: tensor \"a\" has data_offsets that are not [begin, end] with begin <= end", 0},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,18446744073709551615]}}", 4,
         CKPT_E_SAFETENSORS_TENSOR, "safetensors: tensor \"a\" has data_offsets past 2^64 bytes", 0},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},\"a\":{\"dtype\":\"F32\",\"shape\":[1],"
         "\"data_offsets\":[4,8]}}",
         8, CKPT_E_SAFETENSORS_TENSOR, "safetensors: tensor \"a\" appears twice in the header", 1},
        {"{\"a\\u0000b\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4, CKPT_E_SAFETENSORS_TENSOR,
         "safetensors: tensor \"a\" has a name holding \\u0000", 0},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2,3],\"data_offsets\":[0,20]}}", 20, CKPT_E_SAFETENSORS_SIZE,
         "safetensors: tensor \"a\" holds 20 bytes (data_offsets [0, 20]), but shape [2, 3] of F32 needs 6 elements "
         "of 4 bytes",
         0},
        {"{\"a\":{\"dtype\":\"BF16\",\"shape\":[4294967296,4294967296],\"data_offsets\":[0,2]}}", 2,
         CKPT_E_SAFETENSORS_SIZE,
         "safetensors: tensor \"a\" has shape [4294967296, 4294967296] of BF16, whose size passes 2^64 - 1 bytes as "
         "safetensors multiplies it (dimension by dimension, then the width)",
         0},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}", 8, CKPT_E_SAFETENSORS_LAYOUT,
         "safetensors: the data before tensor \"a\" has bytes of no tensor (0 to 4)", 0},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},\"b\":{\"dtype\":\"F32\",\"shape\":[1],"
         "\"data_offsets\":[8,12]}}",
         12, CKPT_E_SAFETENSORS_LAYOUT, "safetensors: the data before tensor \"b\" has bytes of no tensor (4 to 8)", 1},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},\"b\":{\"dtype\":\"F32\",\"shape\":[1],"
         "\"data_offsets\":[4,8]}}",
         8, CKPT_E_SAFETENSORS_LAYOUT, "safetensors: tensor \"b\" overlaps tensor \"a\"", 1},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 6, CKPT_E_SAFETENSORS_LAYOUT,
         "safetensors: the data after tensor \"a\" has bytes of no tensor (4 to 6)", 0},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", 4, CKPT_E_SAFETENSORS_LAYOUT,
         "safetensors: tensor \"a\" ends past the data's end (the data holds 4 bytes)", 0},
        {"{}", 3, CKPT_E_SAFETENSORS_LAYOUT, "safetensors: the data has bytes of no tensor (0 to 3)", CKPT_NONE},
        {"{\"__metadata__\":{\"a\":1}}", 0, CKPT_E_SAFETENSORS_HEADER,
         "safetensors: __metadata__ is not an object of strings", CKPT_NONE},
        {"{\"__metadata__\":[]}", 0, CKPT_E_SAFETENSORS_HEADER, "safetensors: __metadata__ is not an object of strings",
         CKPT_NONE},
        {"{\"a\":{\"dtype\":\"F32\",}}", 0, CKPT_E_SAFETENSORS_HEADER,
         "safetensors: the header is not JSON (at byte 20 of the header: an object key is not a string)", CKPT_NONE},
        {"{\"a\":\"\xff\"}", 0, CKPT_E_SAFETENSORS_HEADER,
         "safetensors: the header is not JSON (at byte 6 of the header: not UTF-8)", CKPT_NONE},
        {"{\"a\":\"\\ud800\"}", 0, CKPT_E_SAFETENSORS_HEADER,
         "safetensors: the header is not JSON (at byte 12 of the header: a lone high surrogate)", CKPT_NONE},
        {"{} x", 0, CKPT_E_SAFETENSORS_HEADER,
         "safetensors: the header is not JSON (at byte 3 of the header: characters after the value)", CKPT_NONE},
        {"{\"a\":[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]}", 0, CKPT_E_SAFETENSORS_HEADER,
         "safetensors: the header is not JSON (at byte 21 of the header: nested too deeply)", CKPT_NONE},
    };
    for (size_t k = 0; k < sizeof v / sizeof v[0]; k++) {
        uint8_t data[32] = {0};
        ckpt_report *rep = st_inspect(v[k].header, data, v[k].data_len, 0);
        char where[64];
        snprintf(where, sizeof where, "violation %zu", k);
        const char *saved = t_current;
        t_current = where;
        CHECK(rep->error.code == v[k].code);
        CHECK_STR(rep->error.message, v[k].message);
        CHECK(rep->error.slot == v[k].slot);
        t_current = saved;
        ckpt_report_free(rep);
    }
    /* the header length: past the limit, and past the file */
    bytes *b = b_new();
    b_u64(b, 100000001);
    b_raw(b, "{}", 2);
    ckpt_report *rep = inspect_bytes(b->data, b->len, 0);
    CHECK(rep->error.code == CKPT_E_SAFETENSORS_HEADER && rep->error.offset == 0);
    CHECK_STR(rep->error.message, "safetensors: header length 100000001 exceeds 100000000 bytes");
    ckpt_report_free(rep);
    b_free(b);
    b = b_new();
    b_u64(b, 40);
    b_raw(b, "{\"a\":", 5);
    rep = inspect_bytes(b->data, b->len, 0);
    CHECK(rep->error.code == CKPT_E_TRUNCATED && rep->family && rep->family->id == CKPT_FAMILY_SAFETENSORS);
    CHECK_STR(rep->error.message, "safetensors: truncated checkpoint (wanted 40 bytes, got 5)");
    ckpt_report_free(rep);
    b_free(b);
}

/* Opening reads 8 + N bytes and nothing of the data, once the header is longer than the front
 * door's first read (4096 bytes: it reads that much of a smaller file). */
static void opening_reads_the_header_only(void)
{
    size_t tensors = 300;
    char *header = malloc(tensors * 80 + 16);
    size_t len = 0;
    header[len++] = '{';
    for (size_t k = 0; k < tensors; k++)
        len += (size_t)sprintf(header + len,
                               "%s\"layer.%zu.weight\":{\"dtype\":\"F32\",\"shape\":[256],\"data_offsets\":[%zu,%zu]}",
                               k ? "," : "", k, k * 1024, (k + 1) * 1024);
    header[len++] = '}';
    header[len] = '\0';
    size_t data_len = tensors * 1024;
    uint8_t *data = calloc(1, data_len);
    bytes *b = st_file(header, data, data_len);
    ckpt_memory mem;
    byte_counter bc = {{0}, 0};
    ckpt_source_memory(&bc.inner, &mem, b->data, b->len);
    ckpt_source src = {&bc, byte_counter_read, b->len};
    ckpt_file *f = ckpt_open(&src, NULL);
    const ckpt_report *rep = ckpt_file_report(f);
    CHECK(rep->error.code == 0 && rep->tensors_len == tensors && len > 4096);
    CHECK(bc.bytes == 8 + len);
    /* a tensor read afterwards reads its bytes */
    const ckpt_tensor_info *t;
    ckpt_error err = {0};
    ckpt_error_clear(&err);
    CHECK(ckpt_file_tensor(f, 299, &t, &err) == 0 && t->data_offset == 8 + len + 299 * 1024);
    ckpt_close(f);
    b_free(b);
    free(data);
    free(header);
}

/* An optimizer checkpoint of slots [2, 3], [3], [3], each with an entry. */
static ckpt_buffer optimizer_of_three(void)
{
    uint64_t ranks[] = {2, 1, 1}, dims[] = {2, 3, 3, 3};
    uint8_t flags[] = {1, 1, 1};
    ckpt_schema *s = ckpt_schema_new(3, ranks, dims, 3, flags, NULL, 0);
    float z[6] = {0};
    ckpt_entry_in e[3] = {{0, 1, 6, z, z, 24, 24}, {1, 1, 3, z, z, 12, 12}, {2, 1, 3, z, z, 12, 12}};
    ckpt_write_desc d = {
        s,
        CKPT_FLOAT32,
        {CKPT_ADAM, ckpt_bits_from_double(0.9), ckpt_bits_from_double(0.999), ckpt_bits_from_double(1e-8), 0},
        false,
        0,
        e,
        3,
        2};
    ckpt_buffer buf;
    ckpt_sink sink;
    ckpt_sink_buffer(&sink, &buf);
    ckpt_error err = {0};
    CHECK(ckpt_write(&d, &sink, &err) == 0);
    ckpt_schema_free(s);
    return buf;
}

/* Pairing by the model's names (format.md 10.4), by shape alone with the warning, and the file
 * put back in its own order. */
static void pairs_by_names(void)
{
    ckpt_buffer ob = optimizer_of_three();
    uint8_t data[48] = {0};
    bytes *b = st_file("{\"a.bias\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[0,12]},\"a.weight\":{\"dtype\":"
                       "\"F32\",\"shape\":[2,3],\"data_offsets\":[12,36]},\"b.bias\":{\"dtype\":\"F32\",\"shape\":[3],"
                       "\"data_offsets\":[36,48]}}",
                       data, sizeof data);
    ckpt_memory om, sm;
    ckpt_source os, ss;
    ckpt_source_memory(&os, &om, ob.data, ob.len);
    ckpt_source_memory(&ss, &sm, b->data, b->len);
    ckpt_file *o = ckpt_open(&os, NULL), *s = ckpt_open(&ss, NULL);
    /* as it is, positionally: slot 0 is a.bias */
    ckpt_pair_result *r = ckpt_pair(o, s, NULL, NULL);
    CHECK(!r->pairs && r->failures_len == 2);
    CHECK_STR(r->failures[0].message, "parameter 0: state shape [3] differs from the optimizer's #[2, 3]");
    ckpt_pair_result_free(r);
    /* by names; a name the file lacks is skipped */
    const char *names[] = {"a.weight", "lm_head.weight", "b.bias", "a.bias"};
    r = ckpt_pair_named(o, s, names, 4, NULL, NULL);
    CHECK(r->pairs && r->warnings_len == 0);
    ckpt_pair_result_free(r);
    const char *wrong[] = {"a.bias", "a.weight", "b.bias"};
    r = ckpt_pair_named(o, s, wrong, 3, NULL, NULL);
    CHECK(!r->pairs && r->failures_len == 2);
    ckpt_pair_result_free(r);
    /* by shape alone, with the warning */
    r = ckpt_pair_named(o, s, NULL, 0, NULL, NULL);
    CHECK(r->pairs && r->warnings_len == 1);
    CHECK_STR(r->warnings[0], "safetensors: model.safetensors keeps no module order: same-shaped parameters cannot be "
                              "told apart (give --names NAMES.json)");
    ckpt_pair_result_free(r);
    /* the file keeps its own order */
    CHECK_STR(ckpt_file_report(s)->tensors[0].name, "a.bias");
    CHECK(ckpt_schema_rank(ckpt_file_report(s)->schema, 1) == 2);
    ckpt_close(o);
    ckpt_close(s);
    b_free(b);
    ckpt_buffer_free(&ob);
}

int main(void)
{
    static const test_case cases[] = {
        {"every dtype reads", every_dtype_reads},
        {"bfloat16 and float16 statistics are exact", half_statistics_are_exact},
        {"the report and its JSON", report_json},
        {"every violation is refused", every_violation_is_refused},
        {"opening reads the header only", opening_reads_the_header_only},
        {"it pairs by the model's names, or by shape with a warning", pairs_by_names},
    };
    return RUN_ALL(cases);
}
