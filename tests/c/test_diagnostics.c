/* One test per diagnostic text of FORMAT.md 1, 3, 4 and 5, each on a file built to trigger it,
 * checking the exact text and the byte offset. The model file (v3, float32, Adam):
 *   slots [p=2x3, p (alias of 0), q=3], tags [1, 1, 3], entries 0 and 2.
 * Offsets: config kind 15, beta1 23, beta2 31, epsilon 39, weight decay 47; schema count 55;
 * slot 0 rank 63, dims 71/79, size 87, flag 95; slot 1 rank 103 .. flag 135; slot 2 rank 143,
 * dim 151, size 159, flag 167; tags 175/183/191; entry count 199; entry 0 at 207 (payloads
 * 231, 255); entry 1 at 279 (step 287, count 295, m 303, v 315); end 327. */
#include "testutil.h"

#include <math.h>

#define N CKPT_NONE
static const uint64_t P[] = {2, 3}, Qd[] = {3};

static bytes *model(uint64_t version, int dtype, long long counter)
{
    bytes *b = b_new();
    unsigned w = dtype == CKPT_FLOAT64 ? 8 : 4;
    b_header(b, version, dtype, CKPT_ADAM, 0.0, counter);
    b_u64(b, 3);
    b_slot(b, 2, P, 6, 1);
    b_slot(b, 2, P, 6, 1);
    b_slot(b, 1, Qd, 3, 1);
    if (version >= 3) {
        b_u64(b, 1);
        b_u64(b, 1);
        b_u64(b, 3);
    }
    b_u64(b, 2);
    b_entry(b, 0, 5, 6, w, 0.5, 0.25);
    b_entry(b, 2, 5, 3, w, -0.5, 0.125);
    return b;
}

static void patch(bytes *b, size_t offset, uint64_t v)
{
    for (int k = 0; k < 8; k++) b->data[offset + k] = (unsigned char)(v >> (8 * k));
}

static ckpt_schema *model_schema(void)
{
    return schema_of(3, (uint64_t[]){2, 2, 3, 2, 2, 3, 1, 3}, (uint8_t[]){1, 1, 1}, (uint64_t[]){0, 0, 2});
}

static void inspect_expect(bytes *b, const char *msg, uint64_t offset)
{
    ckpt_report *rep = inspect_bytes(b->data, b->len, 0);
    CHECK_ERROR(rep, msg, offset);
    ckpt_report_free(rep);
}

static void load_expect(bytes *b, const ckpt_expected *exp, const char *msg, uint64_t offset)
{
    ckpt_report *rep = load_bytes(b->data, b->len, exp);
    CHECK_ERROR(rep, msg, offset);
    ckpt_report_free(rep);
}

static void model_is_valid(void)
{
    bytes *b = model(3, CKPT_FLOAT32, -1);
    CHECK(b->len == 327);
    ckpt_report *rep = inspect_bytes(b->data, b->len, 0);
    CHECK_ERROR(rep, NULL, N);
    CHECK(rep->version == 3 && rep->entries_len == 2 && rep->entries[1].offset == 279);
    CHECK(rep->warnings_len == 1);
    if (rep->warnings_len)
        CHECK_STR(rep->warnings[0], F "legacy checkpoint has no random counter; stochastic training cannot be resumed exactly");
    ckpt_report_free(rep);
    ckpt_schema *s = model_schema();
    ckpt_expected exp = {s, CKPT_FLOAT32, NULL, -1};
    rep = load_bytes(b->data, b->len, &exp);
    CHECK_ERROR(rep, NULL, N);
    CHECK(rep->warnings_len == 0);  /* the destination's counter status is unknown */
    ckpt_report_free(rep);
    ckpt_schema_free(s);
    b_free(b);
}

/* FORMAT.md 1 */
static void truncated_magic(void)
{
    bytes *b = b_new();
    b_raw(b, "TLAD", 4);
    inspect_expect(b, F "truncated checkpoint (wanted 7 bytes, got 4)", 0);
    b_free(b);
}

static void truncated_u64_and_payload(void)
{
    bytes *b = model(3, CKPT_FLOAT32, -1);
    b->len = 60;
    inspect_expect(b, F "truncated checkpoint (wanted 8 bytes, got 5)", 55);
    b->len = 320;
    inspect_expect(b, F "truncated checkpoint (wanted 12 bytes, got 5)", 315);
    b_free(b);
}

static void trailing_bytes(void)
{
    bytes *b = model(3, CKPT_FLOAT32, -1);
    b_raw(b, "x", 1);
    inspect_expect(b, F "trailing bytes after final state entry", 327);
    ckpt_schema *s = model_schema();
    ckpt_expected exp = {s, CKPT_DTYPE_ANY, NULL, -1};
    load_expect(b, &exp, F "trailing bytes after final state entry", 327);
    ckpt_schema_free(s);
    b_free(b);
}

static void value_too_large_on_write(void)
{
    ckpt_schema *s = ckpt_schema_new(1, (uint64_t[]){2}, (uint64_t[]){1ull << 32, 1ull << 32}, 1, (uint8_t[]){0}, NULL, 0);
    ckpt_write_desc d = {s, CKPT_FLOAT32, {0, ckpt_bits_from_double(0.9), ckpt_bits_from_double(0.999), ckpt_bits_from_double(1e-8), 0},
                         false, 0, NULL, 0, 0};
    ckpt_buffer buf;
    ckpt_sink sink;
    ckpt_sink_buffer(&sink, &buf);
    ckpt_error err = {0};
    CHECK(ckpt_write(&d, &sink, &err) == CKPT_E_VALUE_TOO_LARGE);
    CHECK_STR(err.message, F "metadata value does not fit in 64 bits: 18446744073709551616");
    CHECK(buf.len == 0);
    ckpt_error_clear(&err);
    ckpt_buffer_free(&buf);
    ckpt_schema_free(s);
}

/* FORMAT.md 3, through the load path */
static void malformed_in_memory_on_load(void)
{
    bytes *b = model(3, CKPT_FLOAT32, -1);
    ckpt_schema *bad = schema_of(3, (uint64_t[]){2, 2, 3, 2, 2, 3, 1, 3}, (uint8_t[]){1, 1, 1}, (uint64_t[]){0, 2, 2});
    ckpt_expected exp = {bad, CKPT_DTYPE_ANY, NULL, -1};
    load_expect(b, &exp, F "malformed in-memory parameter schema", N);
    ckpt_schema_free(bad);
    b_free(b);
}

static void parameter_count_mismatch(void)
{
    bytes *b = model(3, CKPT_FLOAT32, -1);
    ckpt_schema *s = schema_of(2, (uint64_t[]){2, 2, 3, 2, 2, 3}, (uint8_t[]){1, 1}, (uint64_t[]){0, 0});
    ckpt_expected exp = {s, CKPT_DTYPE_ANY, NULL, -1};
    load_expect(b, &exp, F "parameter count mismatch (file=3, expected=2)", 55);
    ckpt_schema_free(s);
    b_free(b);
}

static void rank_mismatch_before_dims(void)
{
    bytes *b = model(3, CKPT_FLOAT32, -1);
    ckpt_schema *s = schema_of(3, (uint64_t[]){2, 2, 3, 2, 2, 3, 2, 1, 3}, (uint8_t[]){1, 1, 1}, (uint64_t[]){0, 0, 2});
    ckpt_expected exp = {s, CKPT_DTYPE_ANY, NULL, -1};
    load_expect(b, &exp, F "rank mismatch for parameter 2 (file=1, expected=2)", 143);
    b->len = 151;   /* cut right after the rank: the dims are never read */
    load_expect(b, &exp, F "rank mismatch for parameter 2 (file=1, expected=2)", 143);
    ckpt_schema_free(s);
    b_free(b);
}

static void shape_mismatch(void)
{
    bytes *b = model(3, CKPT_FLOAT32, -1);
    ckpt_schema *s = schema_of(3, (uint64_t[]){2, 3, 2, 2, 3, 2, 1, 3}, (uint8_t[]){1, 1, 1}, (uint64_t[]){0, 0, 2});
    ckpt_expected exp = {s, CKPT_DTYPE_ANY, NULL, -1};
    load_expect(b, &exp, F "shape mismatch for parameter 0 (file=#[2, 3], expected=#[3, 2])", 71);
    ckpt_schema_free(s);
    s = schema_of(3, (uint64_t[]){2, 2, 3, 2, 2, 3, 1, 4}, (uint8_t[]){1, 1, 1}, (uint64_t[]){0, 0, 2});
    exp.schema = s;
    load_expect(b, &exp, F "shape mismatch for parameter 2 (file=#[3], expected=#[4])", 151);
    ckpt_schema_free(s);
    b_free(b);
}

static void element_count_mismatch(void)
{
    bytes *b = model(3, CKPT_FLOAT32, -1);
    patch(b, 159, 4);
    ckpt_schema *s = model_schema();
    ckpt_expected exp = {s, CKPT_DTYPE_ANY, NULL, -1};
    load_expect(b, &exp, F "element count mismatch for parameter 2 (file=4, expected=3)", 159);
    inspect_expect(b, F "element count mismatch for parameter 2 (file=4, expected=3)", 159);
    ckpt_schema_free(s);
    b_free(b);
    /* Inspection: the product of the file's own dims, in full even past 2^64. */
    b = b_new();
    b_header(b, 2, 0, CKPT_ADAM, 0.0, -1);
    b_u64(b, 1);
    b_slot(b, 2, (uint64_t[]){1ull << 63, 4}, 0, 0);
    inspect_expect(b, F "element count mismatch for parameter 0 (file=0, expected=36893488147419103232)", 87);
    b_free(b);
}

static void invalid_flag(void)
{
    bytes *b = model(3, CKPT_FLOAT32, -1);
    patch(b, 135, 2);
    inspect_expect(b, F "invalid `requiresGrad` flag 2", 135);
    ckpt_schema *s = model_schema();
    ckpt_expected exp = {s, CKPT_DTYPE_ANY, NULL, -1};
    load_expect(b, &exp, F "invalid `requiresGrad` flag 2", 135);
    ckpt_schema_free(s);
    b_free(b);
}

static void requires_grad_mismatch(void)
{
    bytes *b = model(3, CKPT_FLOAT32, -1);
    ckpt_schema *s = schema_of(3, (uint64_t[]){2, 2, 3, 2, 2, 3, 1, 3}, (uint8_t[]){1, 1, 0}, (uint64_t[]){0, 0, N});
    ckpt_expected exp = {s, CKPT_DTYPE_ANY, NULL, -1};
    load_expect(b, &exp, F "`requiresGrad` mismatch for parameter 2", 167);
    ckpt_schema_free(s);
    b_free(b);
}

static void storage_alias_mismatch(void)
{
    bytes *b = model(3, CKPT_FLOAT32, -1);
    ckpt_schema *s = schema_of(3, (uint64_t[]){2, 2, 3, 2, 2, 3, 1, 3}, (uint8_t[]){1, 1, 1}, NULL);
    ckpt_expected exp = {s, CKPT_DTYPE_ANY, NULL, -1};
    load_expect(b, &exp, F "storage alias mismatch for parameter 1", 183);
    ckpt_schema_free(s);
    b_free(b);
}

/* FORMAT.md 4 */
static void unsupported_family(void)
{
    bytes *b = model(3, CKPT_FLOAT32, -1);
    b->data[0] = 'X';
    inspect_expect(b, F "unsupported checkpoint family", 0);
    b_free(b);
}

static void version2_cannot_share(void)
{
    bytes *b = model(2, CKPT_FLOAT32, -1);
    ckpt_schema *s = model_schema();
    ckpt_expected exp = {s, CKPT_DTYPE_ANY, NULL, -1};
    load_expect(b, &exp, F "version 2 cannot restore shared parameter histories", 7);
    ckpt_schema_free(s);
    b_free(b);
}

static void unsupported_version(void)
{
    uint64_t versions[] = {0, 1, 6, UINT64_MAX};
    const char *texts[] = {F "unsupported format version 0; expected 2 through 5", F "unsupported format version 1; expected 2 through 5",
                           F "unsupported format version 6; expected 2 through 5",
                           F "unsupported format version 18446744073709551615; expected 2 through 5"};
    for (int k = 0; k < 4; k++) {
        bytes *b = model(3, CKPT_FLOAT32, -1);
        patch(b, 7, versions[k]);
        inspect_expect(b, texts[k], 7);
        b_free(b);
    }
}

static void unsupported_dtype_and_differs(void)
{
    bytes *b = model(5, CKPT_FLOAT64, -1);
    ckpt_report *rep = inspect_bytes(b->data, b->len, 0);
    CHECK_ERROR(rep, NULL, N);
    ckpt_report_free(rep);
    ckpt_schema *s = model_schema();
    ckpt_expected exp = {s, CKPT_FLOAT32, NULL, -1};
    load_expect(b, &exp, F "moment dtype differs from the destination", 15);
    exp.dtype = CKPT_FLOAT64;
    load_expect(b, &exp, NULL, N);
    patch(b, 15, 2);
    inspect_expect(b, F "unsupported moment dtype", 15);
    ckpt_schema_free(s);
    b_free(b);
}

static void invalid_optimizer_tag(void)
{
    bytes *b = model(3, CKPT_FLOAT32, -1);
    patch(b, 15, 2);
    inspect_expect(b, F "invalid optimizer tag 2", 15);
    b->len = 23;  /* checked before the floats are read */
    inspect_expect(b, F "invalid optimizer tag 2", 15);
    b_free(b);
}

static void config_rules(void)
{
    struct {
        int version, dtype;
        uint64_t kind;
        size_t field;     /* 0 beta1 .. 3 weight decay */
        double value;
        const char *text; /* NULL: valid */
    } cases[] = {
        {3, 0, 0, 0, NAN, F "`beta1` must be finite and lie in [0, 1)"},
        {3, 0, 0, 0, 1.0, F "`beta1` must be finite and lie in [0, 1)"},
        {3, 0, 0, 0, INFINITY, F "`beta1` must be finite and lie in [0, 1)"},
        {3, 0, 0, 0, -0.1, F "`beta1` must be finite and lie in [0, 1)"},
        {3, 0, 0, 0, -0.0, NULL},
        {3, 0, 0, 1, -INFINITY, F "`beta2` must be finite and lie in [0, 1)"},
        {3, 0, 0, 1, 0.0, NULL},
        {3, 0, 0, 2, 1e-50, F "`epsilon` must remain finite and positive in Runtime.Autograd.LibTorch.Dtype.float32"},
        {3, 0, 0, 2, 1e300, F "`epsilon` must remain finite and positive in Runtime.Autograd.LibTorch.Dtype.float32"},
        {3, 0, 0, 2, 0.0, F "`epsilon` must remain finite and positive in Runtime.Autograd.LibTorch.Dtype.float32"},
        {5, 1, 0, 2, 1e-50, NULL},
        {5, 1, 0, 2, -1e-8, F "`epsilon` must remain finite and positive in Runtime.Autograd.LibTorch.Dtype.float64"},
        {5, 1, 0, 2, NAN, F "`epsilon` must remain finite and positive in Runtime.Autograd.LibTorch.Dtype.float64"},
        {3, 0, 0, 3, 0.01, F "Adam checkpoints must have zero weight decay"},
        {3, 0, 0, 3, NAN, F "Adam checkpoints must have zero weight decay"},
        {3, 0, 0, 3, -0.0, NULL},
        {3, 0, 1, 3, -1.0, F "AdamW weight decay must be finite and nonnegative"},
        {3, 0, 1, 3, NAN, F "AdamW weight decay must be finite and nonnegative"},
        {3, 0, 1, 3, INFINITY, F "AdamW weight decay must be finite and nonnegative"},
        {3, 0, 1, 3, 0.01, NULL},
        {3, 0, 1, 3, -0.0, NULL},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        bytes *b = model((uint64_t)cases[k].version, cases[k].dtype, -1);
        size_t kind_at = cases[k].version == 5 ? 23 : 15;
        patch(b, kind_at, cases[k].kind);
        patch(b, kind_at + 8 + 8 * cases[k].field, ckpt_bits_from_double(cases[k].value));
        inspect_expect(b, cases[k].text, cases[k].text ? kind_at + 8 + 8 * cases[k].field : N);
        b_free(b);
    }
}

static void invalid_counter_flag(void)
{
    bytes *b = model(5, CKPT_FLOAT32, 7);
    patch(b, 63, 2);
    inspect_expect(b, F "invalid random-counter flag", 63);
    b_free(b);
}

static void different_configuration(void)
{
    bytes *b = model(3, CKPT_FLOAT32, -1);
    ckpt_schema *s = model_schema();
    ckpt_config c = {0, ckpt_bits_from_double(0.9), ckpt_bits_from_double(0.999), ckpt_bits_from_double(1e-8), 0};
    ckpt_expected exp = {s, CKPT_FLOAT32, &c, -1};
    load_expect(b, &exp, NULL, N);
    c.weight_decay = ckpt_bits_from_double(-0.0);   /* bit for bit: -0.0 is not +0.0 */
    load_expect(b, &exp, F "checkpoint belongs to a different optimizer configuration", 15);
    c.weight_decay = 0;
    c.beta1 = ckpt_bits_from_double(0.8);
    load_expect(b, &exp, F "checkpoint belongs to a different optimizer configuration", 15);
    ckpt_schema_free(s);
    b_free(b);
}

static void entry_count_mismatch(void)
{
    bytes *b = model(3, CKPT_FLOAT32, -1);
    patch(b, 199, 3);
    inspect_expect(b, F "expected 2 moment entries, got 3", 199);
    b_free(b);
}

static void entry_checks(void)
{
    struct {
        size_t at;
        uint64_t value;
        const char *text;
        uint64_t offset;
    } cases[] = {
        {279, 0, F "duplicate parameter id 0", 279},
        {279, 3, F "invalid parameter id 3", 279},
        {279, UINT64_MAX, F "invalid parameter id 18446744073709551615", 279},
        {279, 1, F "parameter 1 does not own optimizer state", 279},
        {287, 0, F "zero step counter for parameter 2", 287},
        {295, 4, F "moment-size mismatch for parameter 2 (file=4, expected=3)", 295},
    };
    ckpt_schema *s = model_schema();
    ckpt_expected exp = {s, CKPT_DTYPE_ANY, NULL, -1};
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        bytes *b = model(3, CKPT_FLOAT32, -1);
        patch(b, cases[k].at, cases[k].value);
        inspect_expect(b, cases[k].text, cases[k].offset);
        load_expect(b, &exp, cases[k].text, cases[k].offset);
        b_free(b);
    }
    ckpt_schema_free(s);
    /* A frozen slot owns no state either. */
    bytes *b = b_new();
    b_header(b, 2, 0, CKPT_ADAM, 0.0, -1);
    b_u64(b, 2);
    b_slot(b, 1, Qd, 3, 0);
    b_slot(b, 1, Qd, 3, 1);
    b_u64(b, 1);
    b_entry(b, 0, 1, 3, 4, 0, 0);
    inspect_expect(b, F "parameter 0 does not own optimizer state", 135);
    b_free(b);
}

static void counter_against_destination(void)
{
    bytes *b = model(4, CKPT_FLOAT32, 17);
    ckpt_schema *s = model_schema();
    ckpt_expected exp = {s, CKPT_FLOAT32, NULL, 0};
    load_expect(b, &exp, F "destination has no random-counter reference", 55);
    exp.keeps_random_counter = 1;
    load_expect(b, &exp, NULL, N);
    b_free(b);
    b = model(3, CKPT_FLOAT32, -1);
    ckpt_report *rep = load_bytes(b->data, b->len, &exp);
    CHECK_ERROR(rep, NULL, N);
    CHECK(rep->warnings_len == 1);
    if (rep->warnings_len)
        CHECK_STR(rep->warnings[0], F "legacy checkpoint has no random counter; stochastic training cannot be resumed exactly");
    ckpt_report_free(rep);
    ckpt_schema_free(s);
    b_free(b);
}

/* FORMAT.md 5: the sharing map, each reason, at the offending tag. */
static void sharing_map_reasons(void)
{
    struct {
        uint8_t flags[3];
        uint64_t tags[3];
        const char *text;
        uint64_t slot;
    } cases[] = {
        {{0, 1, 1}, {1, 2, 3}, F "malformed storage sharing map at parameter 0: frozen parameter has representative 0", 0},
        {{1, 1, 1}, {1, 0, 3}, F "malformed storage sharing map at parameter 1: trainable parameter has no representative", 1},
        {{1, 1, 1}, {1, 1, 9}, F "malformed storage sharing map at parameter 2: representative 8 is out of range", 2},
        {{1, 1, 1}, {2, 2, 3}, F "malformed storage sharing map at parameter 0: representative 1 follows it", 0},
        {{0, 1, 1}, {0, 1, 3}, F "malformed storage sharing map at parameter 1: representative 0 is frozen", 1},
        {{1, 1, 1}, {1, 2, 1}, F "malformed storage sharing map at parameter 2: representative 0 has a different shape", 2},
        {{1, 1, 1}, {1, 2, 2}, F "malformed storage sharing map at parameter 2: representative 1 has a different shape", 2},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        bytes *b = b_new();
        b_header(b, 3, 0, CKPT_ADAM, 0.0, -1);
        b_u64(b, 3);
        b_slot(b, 2, P, 6, cases[k].flags[0]);
        b_slot(b, 2, P, 6, cases[k].flags[1]);
        b_slot(b, 1, Qd, 3, cases[k].flags[2]);
        for (int i = 0; i < 3; i++) b_u64(b, cases[k].tags[i]);
        inspect_expect(b, cases[k].text, 175 + 8 * cases[k].slot);
        b_free(b);
    }
    /* A chain 2 -> 1 -> 0 among three equal shapes. */
    bytes *b = b_new();
    b_header(b, 3, 0, CKPT_ADAM, 0.0, -1);
    b_u64(b, 3);
    for (int i = 0; i < 3; i++) b_slot(b, 1, Qd, 3, 1);
    b_u64(b, 1);
    b_u64(b, 1);
    b_u64(b, 2);
    inspect_expect(b, F "malformed storage sharing map at parameter 2: representative 1 is an alias of 0", 55 + 8 + 3 * 32 + 16);
    b_free(b);
}

static void inspection_warnings(void)
{
    bytes *b = b_new();
    b_header(b, 4, 0, CKPT_ADAMW, 0.01, 3);
    b_u64(b, 2);
    b_slot(b, 1, Qd, 3, 1);
    b_slot(b, 1, Qd, 3, 1);
    b_u64(b, 1);
    b_u64(b, 2);
    b_u64(b, 2);
    b_entry(b, 1, 2, 3, 4, NAN, -1.0);
    b_entry(b, 0, 2, 3, 4, 0.5, INFINITY);
    ckpt_report *rep = inspect_bytes(b->data, b->len, CKPT_INSPECT_STATS);
    CHECK_ERROR(rep, NULL, N);
    const char *want[] = {F "parameter 1: m holds 3 NaN and 0 infinite values",
                          F "parameter 1: v holds 3 negative values (a second moment is never negative)",
                          F "moment entries are not in ascending id order (the reference writer sorts them)",
                          F "parameter 0: v holds 0 NaN and 3 infinite values"};
    CHECK(rep->warnings_len == 4);
    for (size_t k = 0; k < 4 && k < rep->warnings_len; k++) CHECK_STR(rep->warnings[k], want[k]);
    ckpt_report_free(rep);
    /* Without statistics the payloads are skipped: no payload warnings. */
    rep = inspect_bytes(b->data, b->len, 0);
    CHECK(rep->warnings_len == 1);
    ckpt_report_free(rep);
    b_free(b);
}

static void hostile_counts(void)
{
    /* 2^40 slots in a 100-byte file: truncation at once, memory bounded by the data. */
    bytes *b = b_new();
    b_header(b, 2, 0, CKPT_ADAM, 0.0, -1);
    b_u64(b, 1ull << 40);
    b_u64(b, 1);
    b_u64(b, 4);
    b_u64(b, 4);
    b_u64(b, 1);
    b_raw(b, "abcde", 5);
    CHECK(b->len == 100);
    inspect_expect(b, F "truncated checkpoint (wanted 8 bytes, got 5)", 95);
    b_free(b);
    /* rank 2^40 */
    b = b_new();
    b_header(b, 2, 0, CKPT_ADAM, 0.0, -1);
    b_u64(b, 1);
    b_u64(b, 1ull << 40);
    b_u64(b, 2);
    b_u64(b, 2);
    b_u64(b, 2);
    b_raw(b, "abcde", 5);
    CHECK(b->len == 100);
    inspect_expect(b, F "truncated checkpoint (wanted 8 bytes, got 5)", 95);
    b_free(b);
    /* An entry claiming 2^62 elements against a matching huge frozen-free shape. */
    b = b_new();
    b_header(b, 2, 0, CKPT_ADAM, 0.0, -1);
    b_u64(b, 1);
    b_slot(b, 1, (uint64_t[]){1ull << 62}, 1ull << 62, 1);
    b_u64(b, 1);
    b_u64(b, 0);
    b_u64(b, 1);
    b_u64(b, 1ull << 62);
    inspect_expect(b, F "truncated checkpoint (wanted 18446744073709551616 bytes, got 0)", b->len);
    b_free(b);
}

static void foreign_hints(void)
{
    struct {
        const char *data;
        const char *text;
        const char *hint;
    } cases[] = {
        {"", F "truncated checkpoint (wanted 7 bytes, got 0)", "the file is empty"},
        {"version https://git-lfs.github.com/spec/v1\noid sha256:abc\nsize 12\n", F "unsupported checkpoint family",
         "this is a Git LFS pointer file, not the checkpoint itself: fetch the real file (git lfs pull)"},
        {"<!DOCTYPE html><html>", F "unsupported checkpoint family", "this looks like an HTML or XML page (a failed download?), not a checkpoint"},
        {"{\"shapes\": []}", F "unsupported checkpoint family", "this looks like JSON text (a layout description?), not a checkpoint"},
        {"TLSF32B\x01\0\0\0\0\0\0\0\x0c\0\0\0\0\0\0\0", F "unsupported checkpoint family",
         "this is a TorchLean float32 state checkpoint (TLSF32B, version 1, 12 tensors), not optimizer state; ckptscope does not read that family yet"},
        {"TLPF32B\x02", F "unsupported checkpoint family",
         "this is a TorchLean float32 parameter checkpoint (TLPF32B), not optimizer state; ckptscope does not read that family yet"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        size_t len = strncmp(cases[k].data, "TLSF32B", 7) == 0 ? 23 : strlen(cases[k].data);
        ckpt_report *rep = inspect_bytes(cases[k].data, len, 0);
        CHECK_ERROR(rep, cases[k].text, 0);
        CHECK_STR(rep->error.hint, cases[k].hint);
        ckpt_report_free(rep);
    }
}

static const test_case cases[] = {
    {"the model file is valid", model_is_valid},
    {"truncated magic", truncated_magic},
    {"truncated u64 and payload", truncated_u64_and_payload},
    {"trailing bytes", trailing_bytes},
    {"metadata value does not fit", value_too_large_on_write},
    {"malformed in-memory schema on load", malformed_in_memory_on_load},
    {"parameter count mismatch", parameter_count_mismatch},
    {"rank mismatch before dims", rank_mismatch_before_dims},
    {"shape mismatch", shape_mismatch},
    {"element count mismatch", element_count_mismatch},
    {"invalid requiresGrad flag", invalid_flag},
    {"requiresGrad mismatch", requires_grad_mismatch},
    {"storage alias mismatch", storage_alias_mismatch},
    {"unsupported family", unsupported_family},
    {"version 2 cannot share", version2_cannot_share},
    {"unsupported version", unsupported_version},
    {"dtype: unsupported, differs", unsupported_dtype_and_differs},
    {"invalid optimizer tag", invalid_optimizer_tag},
    {"config validation", config_rules},
    {"invalid random-counter flag", invalid_counter_flag},
    {"different configuration", different_configuration},
    {"entry count mismatch", entry_count_mismatch},
    {"entry checks", entry_checks},
    {"random counter vs destination", counter_against_destination},
    {"sharing map reasons", sharing_map_reasons},
    {"inspection warnings", inspection_warnings},
    {"hostile counts", hostile_counts},
    {"foreign files", foreign_hints},
};

int main(void) { return RUN_ALL(cases); }
