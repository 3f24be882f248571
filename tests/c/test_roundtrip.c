/* write -> inspect -> load round trips for every version and dtype, the writer's version
 * choice and save checks, scalars and zero-size shapes, extreme u64 values, and the JSON
 * report. */
#include "testutil.h"

#include <math.h>

#define N CKPT_NONE

/* Write d into a fresh buffer, checking that the writer accepts it; the caller frees it. */
static ckpt_buffer write_ok(const ckpt_write_desc *d)
{
    ckpt_buffer buf;
    ckpt_sink sink;
    ckpt_sink_buffer(&sink, &buf);
    ckpt_error err = {0};
    CHECK(ckpt_write(d, &sink, &err) == 0);
    if (err.code) fprintf(stderr, "[%s] writer: %s\n", t_current, err.message);
    ckpt_error_clear(&err);
    return buf;
}

static ckpt_config adam(void)
{
    return (ckpt_config){CKPT_ADAM, ckpt_bits_from_double(0.9), ckpt_bits_from_double(0.999),
                         ckpt_bits_from_double(1e-8), 0};
}

/* A layout with a scalar, a zero-size slot, a frozen slot and a tied pair:
 *   0: [] trainable, 1: [0, 4] trainable, 2: [3] frozen, 3: [2, 2] trainable, 4: [2, 2] alias of 3 */
static ckpt_schema *layout(bool tied)
{
    uint64_t map[] = {0, 1, N, 3, tied ? 3 : 4};
    return schema_of(5, (uint64_t[]){0, 2, 0, 4, 1, 3, 2, 2, 2, 2, 2, 2}, (uint8_t[]){1, 1, 0, 1, 1},
                     tied ? map : NULL);
}

typedef struct moments {
    double m64[4], v64[4];
    float m32[4], v32[4];
} moments;

static size_t fill_entries(const ckpt_schema *s, int dtype, ckpt_entry_in *out, moments *mo, uint64_t step)
{
    size_t k = 0;
    /* Given in descending order: the writer sorts them. */
    for (size_t i = ckpt_schema_count(s); i-- > 0;) {
        if (!ckpt_schema_is_representative(s, i)) continue;
        bool big;
        uint64_t count = ckpt_schema_size(s, i, &big);
        moments *x = &mo[i];
        for (int j = 0; j < 4; j++) {
            x->m64[j] = (j % 2 ? -1.0 : 1.0) * (double)(i + 1) / (j + 3);
            x->v64[j] = (double)(i + j) / 7.0;
            x->m32[j] = (float)x->m64[j];
            x->v32[j] = (float)x->v64[j];
        }
        if (i == 0) { /* keep special values in the scalar */
            x->m64[0] = -0.0;
            x->m32[0] = -0.0f;
            x->v64[0] = 4.9406564584124654e-324; /* the smallest subnormal */
            x->v32[0] = 1.4e-45f;
        }
        unsigned w = dtype == CKPT_FLOAT64 ? 8 : 4;
        out[k++] = (ckpt_entry_in){i,
                                   step + i,
                                   count,
                                   dtype == CKPT_FLOAT64 ? (void *)x->m64 : (void *)x->m32,
                                   dtype == CKPT_FLOAT64 ? (void *)x->v64 : (void *)x->v32,
                                   count * w,
                                   count * w};
    }
    return k;
}

static void every_version_and_dtype(void)
{
    struct {
        int dtype;
        bool counter, tied;
        uint64_t forced, want_version;
    } cases[] = {
        {CKPT_FLOAT32, false, false, 0, 2}, {CKPT_FLOAT32, false, true, 0, 3},  {CKPT_FLOAT32, true, false, 0, 4},
        {CKPT_FLOAT32, true, true, 0, 4},   {CKPT_FLOAT64, false, false, 0, 5}, {CKPT_FLOAT64, true, true, 0, 5},
        {CKPT_FLOAT32, false, false, 3, 3}, {CKPT_FLOAT32, false, false, 5, 5}, {CKPT_FLOAT32, true, true, 5, 5},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        ckpt_schema *s = layout(cases[c].tied);
        moments mo[5];
        ckpt_entry_in entries[5];
        size_t ne = fill_entries(s, cases[c].dtype, entries, mo, 10);
        ckpt_write_desc d = {s, cases[c].dtype, adam(), cases[c].counter, 12345, entries, ne, cases[c].forced};
        CHECK(ckpt_write_version(&d) == (cases[c].forced ? ckpt_write_version(&d) : cases[c].want_version));
        ckpt_buffer buf = write_ok(&d);
        ckpt_error err = {0};
        ckpt_report *rep = inspect_bytes(buf.data, buf.len, CKPT_INSPECT_STATS);
        CHECK_ERROR(rep, NULL, N);
        CHECK(rep->version == cases[c].want_version);
        CHECK(rep->dtype == cases[c].dtype);
        CHECK(rep->tladamf.counter_state == (int)cases[c].counter);
        CHECK(!cases[c].counter || rep->tladamf.random_counter == 12345);
        CHECK(ckpt_config_same(&rep->config, rep->dtype, &d.config, d.dtype));
        CHECK(rep->schema && ckpt_schema_count(rep->schema) == 5);
        for (size_t i = 0; rep->schema && i < 5; i++)
            CHECK(ckpt_schema_representative(rep->schema, i) == ckpt_schema_representative(s, i) ||
                  (!cases[c].tied && cases[c].want_version >= 3));
        CHECK(rep->entries_len == ne);
        for (size_t k = 1; k < rep->entries_len; k++) CHECK(rep->entries[k - 1].id < rep->entries[k].id);
        /* Moments come back bit for bit. */
        for (size_t k = 0; k < rep->entries_len; k++) {
            uint64_t id = rep->entries[k].id;
            CHECK(rep->entries[k].step == 10 + id);
            uint8_t m[32], v[32];
            ckpt_memory mem;
            ckpt_source src;
            ckpt_source_memory(&src, &mem, buf.data, buf.len);
            ckpt_file *f = ckpt_open(&src, NULL);
            CHECK(ckpt_file_read_moments(f, id, m, v, &err) == 0);
            ckpt_close(f);
            size_t bytes = (size_t)rep->entries[k].count * (cases[c].dtype == CKPT_FLOAT64 ? 8 : 4);
            const void *wm = cases[c].dtype == CKPT_FLOAT64 ? (void *)mo[id].m64 : (void *)mo[id].m32;
            const void *wv = cases[c].dtype == CKPT_FLOAT64 ? (void *)mo[id].v64 : (void *)mo[id].v32;
            CHECK(memcmp(m, wm, bytes) == 0 && memcmp(v, wv, bytes) == 0);
        }
        /* And the trainer would load it into the layout it came from. */
        ckpt_expected exp = {s, cases[c].dtype, &d.config, cases[c].counter, CKPT_FAMILY_ANY, CKPT_READER_DEFAULT};
        ckpt_report *loaded = load_bytes(buf.data, buf.len, &exp);
        CHECK_ERROR(loaded, NULL, N);
        ckpt_report_free(loaded);
        ckpt_report_free(rep);
        ckpt_buffer_free(&buf);
        ckpt_error_clear(&err);
        ckpt_schema_free(s);
    }
}

static void writer_save_checks(void)
{
    ckpt_schema *s = layout(true);
    moments mo[5];
    ckpt_entry_in entries[5];
    size_t ne = fill_entries(s, CKPT_FLOAT32, entries, mo, 1);
    ckpt_buffer buf;
    ckpt_sink sink;
    ckpt_sink_buffer(&sink, &buf);
    ckpt_error err = {0};
    ckpt_write_desc d = {s, CKPT_FLOAT32, adam(), false, 0, entries, ne, 0};
    struct {
        void (*mutate)(ckpt_write_desc *, ckpt_entry_in *);
        const char *text;
    } cases[] = {{NULL, NULL}};
    (void)cases;
    /* counts */
    d.entry_count = ne - 1;
    CHECK(ckpt_write(&d, &sink, &err) == CKPT_E_ENTRY_COUNT_MISMATCH);
    CHECK_STR(err.message, F "expected 3 moment entries, got 2");
    d.entry_count = ne;
    ckpt_entry_in saved = entries[0]; /* id 3 (descending order) */
    entries[0].id = 9;
    CHECK(ckpt_write(&d, &sink, &err) == CKPT_E_INVALID_ID);
    CHECK_STR(err.message, F "invalid parameter id 9");
    entries[0].id = 4;
    CHECK(ckpt_write(&d, &sink, &err) == CKPT_E_NOT_OWNER);
    CHECK_STR(err.message, F "parameter 4 does not own optimizer state");
    entries[0].id = 2;
    CHECK(ckpt_write(&d, &sink, &err) == CKPT_E_NOT_OWNER);
    CHECK_STR(err.message, F "parameter 2 does not own optimizer state");
    entries[0] = saved;
    entries[0].step = 0;
    CHECK(ckpt_write(&d, &sink, &err) == CKPT_E_ZERO_STEP);
    CHECK_STR(err.message, F "zero step counter for parameter 3");
    CHECK(err.slot == 3 && err.offset == N && err.subject == CKPT_SUBJECT_EXPECTED);
    entries[0] = saved;
    entries[0].count = 3;
    CHECK(ckpt_write(&d, &sink, &err) == CKPT_E_MOMENT_SIZE_MISMATCH);
    CHECK_STR(err.message, F "moment-size mismatch for parameter 3");
    entries[0] = saved;
    entries[0].v_bytes = 12;
    CHECK(ckpt_write(&d, &sink, &err) == CKPT_E_INVALID_PAYLOAD);
    CHECK_STR(err.message, F "invalid moment payload for parameter 3");
    entries[0] = saved;
    d.config.beta1 = ckpt_bits_from_double(1.5);
    CHECK(ckpt_write(&d, &sink, &err) == CKPT_E_INVALID_BETA1);
    CHECK_STR(err.message, F "`beta1` must be finite and lie in [0, 1)");
    d.config = adam();
    d.config.kind = 7;
    CHECK(ckpt_write(&d, &sink, &err) == CKPT_E_INVALID_OPTIMIZER_TAG);
    CHECK_STR(err.message, F "invalid optimizer tag 7");
    d.config = adam();
    /* Forced versions that cannot hold the content. */
    d.version = 2;
    CHECK(ckpt_write(&d, &sink, &err) == CKPT_E_VERSION_CANNOT_REPRESENT);
    CHECK_STR(err.message, F "format version 2 cannot hold shared parameter histories (versions 3 to 5 can)");
    d.version = 4;
    CHECK(ckpt_write(&d, &sink, &err) == CKPT_E_VERSION_CANNOT_REPRESENT);
    d.version = 9;
    CHECK(ckpt_write(&d, &sink, &err) == CKPT_E_VERSION_CANNOT_REPRESENT);
    d.version = 0;
    d.dtype = CKPT_FLOAT64;
    d.version = 3;
    CHECK(ckpt_write(&d, &sink, &err) == CKPT_E_VERSION_CANNOT_REPRESENT);
    CHECK_STR(err.message, F "format version 3 cannot hold float64 moments (only version 5 can)");
    CHECK(buf.len == 0); /* nothing was written by any failed save */
    /* A malformed schema comes first of all. */
    ckpt_schema *bad = schema_of(2, (uint64_t[]){0, 0}, (uint8_t[]){1, 1}, (uint64_t[]){1, 1});
    ckpt_write_desc db = {bad, CKPT_FLOAT32, adam(), false, 0, NULL, 0, 0};
    db.config.beta1 = ckpt_bits_from_double(NAN);
    CHECK(ckpt_write(&db, &sink, &err) == CKPT_E_MALFORMED_IN_MEMORY_SCHEMA);
    CHECK_STR(err.message, F "malformed in-memory parameter schema");
    /* beside the reference text: the slot and the reason, and that the input is at fault */
    CHECK(err.slot == 0 && err.subject == CKPT_SUBJECT_EXPECTED && err.offset == N);
    CHECK_STR(err.hint, "parameter 0: representative 1 follows it");
    ckpt_schema_free(bad);
    /* format.md 1: a size of 2^64 cannot be written as a u64 field */
    ckpt_schema *huge =
        ckpt_schema_new(1, (uint64_t[]){2}, (uint64_t[]){1ull << 32, 1ull << 32}, 1, (uint8_t[]){0}, NULL, 0);
    ckpt_write_desc dh = {huge, CKPT_FLOAT32, adam(), false, 0, NULL, 0, 0};
    CHECK(ckpt_write(&dh, &sink, &err) == CKPT_E_VALUE_TOO_LARGE);
    CHECK_STR(err.message, F "metadata value does not fit in 64 bits: 18446744073709551616");
    CHECK(err.slot == 0 && err.subject == CKPT_SUBJECT_EXPECTED);
    CHECK(buf.len == 0);
    ckpt_schema_free(huge);
    ckpt_error_clear(&err);
    ckpt_buffer_free(&buf);
    ckpt_schema_free(s);
}

static void extreme_u64_values(void)
{
    uint64_t values[] = {1ull << 53, (1ull << 53) - 1, UINT64_MAX};
    for (int k = 0; k < 3; k++) {
        ckpt_schema *s = schema_of(1, (uint64_t[]){0}, (uint8_t[]){1}, NULL);
        float m = 1, v = 2;
        ckpt_entry_in e = {0, values[k], 1, &m, &v, 4, 4};
        ckpt_write_desc d = {s, CKPT_FLOAT32, adam(), true, values[k], &e, 1, 0};
        ckpt_buffer buf = write_ok(&d);
        ckpt_report *rep = inspect_bytes(buf.data, buf.len, 0);
        CHECK_ERROR(rep, NULL, N);
        CHECK(rep->tladamf.random_counter == values[k] && rep->entries_len == 1 && rep->entries[0].step == values[k]);
        char *json = ckpt_report_json(rep);
        char want[64];
        snprintf(want, sizeof want,
                 values[k] > (1ull << 53) - 1 ? "\"randomCounter\":\"%llu\"" : "\"randomCounter\":%llu",
                 (unsigned long long)values[k]);
        CHECK(json && strstr(json, want));
        snprintf(want, sizeof want, values[k] > (1ull << 53) - 1 ? "\"step\":\"%llu\"" : "\"step\":%llu",
                 (unsigned long long)values[k]);
        CHECK(json && strstr(json, want));
        free(json);
        ckpt_report_free(rep);
        ckpt_buffer_free(&buf);
        ckpt_schema_free(s);
    }
}

static void json_report(void)
{
    ckpt_schema *s = layout(true);
    moments mo[5];
    ckpt_entry_in entries[5];
    size_t ne = fill_entries(s, CKPT_FLOAT32, entries, mo, 1);
    ckpt_write_desc d = {s, CKPT_FLOAT32, adam(), true, 17, entries, ne, 0};
    ckpt_buffer buf = write_ok(&d);
    ckpt_report *rep = inspect_bytes(buf.data, buf.len, CKPT_INSPECT_STATS);
    char *json = ckpt_report_json(rep);
    const char *fragments[] = {
        "{\"ok\":true,\"family\":\"TLADAMF\",\"name\":\"CUDA Adam "
        "checkpoint\",\"kind\":\"optimizer\",\"version\":4,\"size\":407,\"statistics\":true,",
        "\"dtype\":\"float32\",\"config\":{\"kind\":\"adam\",\"beta1\":0.9,\"beta2\":0.999,\"epsilon\":1e-08,"
        "\"weightDecay\":0,"
        "\"bits\":{\"beta1\":\"0x3feccccccccccccd\",\"beta2\":\"0x3feff7ced916872b\",\"epsilon\":"
        "\"0x3e45798ee2308c3a\",\"weightDecay\":\"0x0000000000000000\"}},\"kindUnknown\":false,"
        "\"randomCounter\":17,\"hasRandomCounter\":true",
        "\"schema\":{\"shapes\":[[],[0,4],[3],[2,2],[2,2]],\"sizes\":[1,0,3,4,4],\"requiresGrad\":[true,true,false,"
        "true,true],"
        "\"representatives\":[0,1,null,3,3],\"effectiveRepresentatives\":[0,1,null,3,3],\"brokenSlots\":[]}",
        "\"wellFormed\":true,\"optimizerStateCount\":3,\"trainableCount\":4,\"hasAliases\":true,"
        "\"elementCounts\":{\"owned\":5,\"tied\":4,\"frozen\":3},"
        "\"offsets\":{\"schema\":63,\"tags\":247,\"entries\":287},\"entryCount\":3",
        "\"unhealthy\":0}",
        "{\"id\":0,\"step\":1,\"count\":1,\"offset\":",
        "\"m\":{\"count\":1,\"min\":-0,\"max\":-0,\"mean\":0,\"rms\":0,\"nan\":0,\"inf\":0,\"zero\":1,\"negative\":0,"
        "\"histogram\":{\"log2Min\":0,\"counts\":[]}}",
        "\"v\":{\"count\":1,\"min\":1.401298464324817e-45,",
        "\"histogram\":{\"log2Min\":-149,\"counts\":[1]}",
        "\"warnings\":[],\"error\":null,\"readers\":{\"v2\":{\"reads\":false,",
        "\"v2-v4\":{\"reads\":true,\"error\":null},\"v2-v4-f32\":{\"reads\":true,\"error\":null},\"v2-v5\":{\"reads\":"
        "true,\"error\":null}}}",
    };
    for (size_t k = 0; k < sizeof fragments / sizeof fragments[0]; k++) {
        bool found = json && strstr(json, fragments[k]);
        CHECK(found);
        if (!found) fprintf(stderr, "missing %s\nin %s\n", fragments[k], json);
    }
    free(json);
    ckpt_report_free(rep);
    /* A broken file: fields read before the error are present, the rest null. */
    buf.data[7] = 9;
    rep = inspect_bytes(buf.data, buf.len, 0);
    json = ckpt_report_json(rep);
    CHECK(json && strstr(json, "{\"ok\":false,\"family\":\"TLADAMF\",\"name\":\"CUDA Adam "
                               "checkpoint\",\"kind\":\"optimizer\",\"version\":9,"));
    CHECK(json && strstr(json, "\"config\":null,\"kindUnknown\":null,\"randomCounter\":null,\"hasRandomCounter\":null,"
                               "\"schema\":null,"));
    CHECK(json &&
          strstr(json, "\"error\":{\"code\":15,\"message\":\"CUDA Adam checkpoint: unsupported format version 9; "
                       "expected 2 through 5\",\"offset\":7,\"length\":8,\"slot\":null,\"subject\":\"file\","));
    free(json);
    ckpt_report_free(rep);
    ckpt_buffer_free(&buf);
    ckpt_schema_free(s);
}

static void worked_examples_on_disk(void)
{
    /* [p, q, p] written, loaded into [p, q, q]: same entry count and keys, rejected by the tags. */
    ckpt_schema *pqp = schema_of(3, (uint64_t[]){1, 2, 1, 2, 1, 2}, (uint8_t[]){1, 1, 1}, (uint64_t[]){0, 1, 0});
    ckpt_schema *pqq = schema_of(3, (uint64_t[]){1, 2, 1, 2, 1, 2}, (uint8_t[]){1, 1, 1}, (uint64_t[]){0, 1, 1});
    float z[2] = {0, 0};
    ckpt_entry_in e[2] = {{0, 1, 2, z, z, 8, 8}, {1, 1, 2, z, z, 8, 8}};
    ckpt_write_desc d = {pqp, CKPT_FLOAT32, adam(), false, 0, e, 2, 0};
    ckpt_buffer buf = write_ok(&d);
    ckpt_expected exp = {pqq, CKPT_FLOAT32, NULL, -1, CKPT_FAMILY_ANY, CKPT_READER_DEFAULT};
    ckpt_report *rep = load_bytes(buf.data, buf.len, &exp);
    CHECK_ERROR(rep, F "storage alias mismatch for parameter 2", 55 + 8 + 3 * 32 + 16);
    ckpt_report_free(rep);
    exp.schema = pqp;
    rep = load_bytes(buf.data, buf.len, &exp);
    CHECK_ERROR(rep, NULL, N);
    ckpt_report_free(rep);
    ckpt_buffer_free(&buf);
    ckpt_schema_free(pqp);
    ckpt_schema_free(pqq);
}

/* The vectorised statistics kernel against a naive reference: counts, extremes and the
 * histogram exactly, sums to rounding. */
static void stats_against_reference(void)
{
    enum { COUNT = 4099 };
    static float m32[COUNT], v32[COUNT];
    static double m64[COUNT], v64[COUNT];
    uint32_t seed = 7;
    for (int k = 0; k < COUNT; k++) {
        seed = seed * 1664525u + 1013904223u;
        uint32_t bits = seed;
        memcpy(&m32[k], &bits, 4);
        /* float64: wide magnitudes, but squares that stay finite */
        m64[k] = ((double)seed / 4294967296.0 - 0.5) * pow(10.0, (double)(k % 300) - 150.0);
        v32[k] = (float)(k % 7) - 3.0f;
        v64[k] = (double)(k % 5) * 1e-310; /* subnormals and zeros */
    }
    float specials32[] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, 1e-45f, -1e-40f};
    memcpy(m32 + 11, specials32, sizeof specials32);
    v32[5] = -1e-40f; /* a negative subnormal on the lean (all finite) path */
    v32[6] = -0.0f;
    double specials64[] = {0.0, -0.0, INFINITY, -INFINITY, NAN, 5e-324, -1e-310};
    memcpy(m64 + 3001, specials64, sizeof specials64);
    for (int dtype = 0; dtype < 2; dtype++) {
        ckpt_schema *s = schema_of(1, (uint64_t[]){1, COUNT}, (uint8_t[]){1}, NULL);
        unsigned w = dtype ? 8 : 4;
        ckpt_entry_in e = {0,
                           1,
                           COUNT,
                           dtype ? (void *)m64 : (void *)m32,
                           dtype ? (void *)v64 : (void *)v32,
                           (uint64_t)COUNT * w,
                           (uint64_t)COUNT * w};
        ckpt_write_desc d = {s, dtype, adam(), false, 0, &e, 1, 0};
        ckpt_buffer buf = write_ok(&d);
        ckpt_report *rep = inspect_bytes(buf.data, buf.len, CKPT_INSPECT_STATS);
        CHECK(rep->entries_len == 1);
        for (int which = 0; which < 2 && rep->entries_len == 1; which++) {
            const ckpt_stats *st = which ? rep->entries[0].v : rep->entries[0].m;
            uint64_t nan = 0, inf = 0, zero = 0, neg = 0, hist[2100] = {0};
            double mn = INFINITY, mx = -INFINITY, sum = 0, sq = 0;
            for (int k = 0; k < COUNT; k++) {
                double x = dtype ? (which ? v64[k] : m64[k]) : (which ? v32[k] : m32[k]);
                if (isnan(x)) {
                    nan++;
                    continue;
                }
                if (isinf(x)) {
                    inf++;
                    neg += x < 0;
                    continue;
                }
                if (x < mn) mn = x;
                if (x > mx) mx = x;
                sum += x;
                sq += x * x;
                if (x == 0) {
                    zero++;
                    continue;
                }
                neg += x < 0;
                int e;
                frexp(x, &e);
                hist[e - 1 + 1074]++;
            }
            CHECK(st->nan == nan && st->inf == inf && st->zero == zero && st->negative == neg);
            CHECK(st->min == mn && st->max == mx);
            CHECK(fabs(st->sum - sum) <= 1e-5 * (fabs(sum) + sqrt(sq)));
            CHECK(fabs(st->sum_squares - sq) <= 1e-5 * sq);
            for (uint32_t b = 0; b < st->hist_len; b++)
                CHECK(st->hist[b] == hist[st->hist_log2_min + 1074 + (int32_t)b]);
            uint64_t counted = 0, want = 0;
            for (uint32_t b = 0; b < st->hist_len; b++) counted += st->hist[b];
            for (int b = 0; b < 2100; b++) want += hist[b];
            CHECK(counted == want);
        }
        ckpt_report_free(rep);
        ckpt_buffer_free(&buf);
        ckpt_schema_free(s);
    }
}

static const test_case cases[] = {
    {"statistics against a naive reference", stats_against_reference},
    {"every version and dtype", every_version_and_dtype},
    {"writer save checks", writer_save_checks},
    {"u64 at 2^53 and 2^64-1", extreme_u64_values},
    {"JSON report", json_report},
    {"worked examples on disk", worked_examples_on_disk},
};

int main(void) { return RUN_ALL(cases); }
