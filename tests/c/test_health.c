/* The health pass's flags and their severity, and the ratio band: the default band, a band
 * given, and every refusal of a band, with their exact texts (docs/health.md). */
#include "minijson.h"
#include "testutil.h"

#include <math.h>

/* Four slots of 4 elements, one Adam entry each at a late step (bias corrections ~1), m = 1e-3,
 * v = 1e-6: u ~ 1 everywhere. The parameters make the ratios at lr 1e-3: slot 0 ~1e-3 (in the
 * band), slot 1 ~1e-1 (above), slot 2 ~1e-6 (below), slot 3 holds a NaN. */
enum { SLOTS = 4, N = 4 };

typedef struct pair_files {
    bytes *opt;
    ckpt_buffer state;
    ckpt_memory mem[2];
    ckpt_source src[2];
    ckpt_file *f[2];
} pair_files;

static void open_pair(pair_files *p)
{
    p->opt = b_new();
    b_header(p->opt, 2, 0, CKPT_ADAM, 0.0, -1);
    b_u64(p->opt, SLOTS);
    for (int i = 0; i < SLOTS; i++) b_slot(p->opt, 1, (uint64_t[]){N}, N, 1);
    b_u64(p->opt, SLOTS);
    for (uint64_t i = 0; i < SLOTS; i++) b_entry(p->opt, i, 1000000, N, 4, 1e-3, 1e-6);

    static float theta[SLOTS][N];
    const float scale[SLOTS] = {1.0f, 1e-2f, 1e3f, 1.0f};
    for (int i = 0; i < SLOTS; i++)
        for (int k = 0; k < N; k++) theta[i][k] = scale[i];
    theta[3][2] = NAN;
    ckpt_schema *shapes = schema_of(SLOTS, (uint64_t[]){1, N, 1, N, 1, N, 1, N}, NULL, NULL);
    const void *values[SLOTS] = {theta[0], theta[1], theta[2], theta[3]};
    uint64_t lens[SLOTS] = {sizeof theta[0], sizeof theta[1], sizeof theta[2], sizeof theta[3]};
    ckpt_sink sink;
    ckpt_error err = {0};
    ckpt_error_clear(&err);
    ckpt_sink_buffer(&sink, &p->state);
    CHECK(ckpt_state_write(CKPT_FAMILY_TLSF32B, shapes, values, lens, &sink, &err) == 0);
    ckpt_schema_free(shapes);

    ckpt_source_memory(&p->src[0], &p->mem[0], p->opt->data, p->opt->len);
    ckpt_source_memory(&p->src[1], &p->mem[1], p->state.data, p->state.len);
    for (int k = 0; k < 2; k++) p->f[k] = ckpt_open(&p->src[k], NULL);
    CHECK(p->f[0] && p->f[1]);
}

static void close_pair(pair_files *p)
{
    for (int k = 0; k < 2; k++) ckpt_close(p->f[k]);
    b_free(p->opt);
    ckpt_buffer_free(&p->state);
}

/* The health JSON at lr 1e-3 with the band given (or the default when given is false). */
static jvalue *health_of(pair_files *p, bool given, double low, double high)
{
    ckpt_error err = {0};
    ckpt_error_clear(&err);
    ckpt_health_options o = {1e-3, 0, CKPT_NONE, NULL, NULL, given, low, high};
    char *json = ckpt_health_json(p->f[0], p->f[1], &o, &err);
    CHECK(json != NULL);
    if (!json) fprintf(stderr, "  %s\n", err.message);
    jvalue *h = json ? json_parse(json) : NULL;
    free(json);
    ckpt_error_clear(&err);
    return h;
}

/* The flags as "slot flag severity|message" lines joined by newlines, for exact comparison. */
static void flags_text(const jvalue *h, char *out, size_t cap)
{
    const jvalue *flags = json_get(h, "flags");
    size_t at = 0;
    out[0] = '\0';
    for (size_t k = 0; flags && k < flags->len && at < cap; k++) {
        const jvalue *f = flags->items[k];
        at += (size_t)snprintf(out + at, cap - at, "%llu %s %s|%s\n", (unsigned long long)json_u64(json_get(f, "slot")),
                               json_get(f, "flag")->text, json_get(f, "severity")->text, json_get(f, "message")->text);
    }
}

/* The ratio of slot i, as the messages print it. */
static void ratio_text(const jvalue *h, size_t i, char out[32])
{
    snprintf(out, 32, "%.3g", json_double(json_get(json_get(h, "slots")->items[i], "ratio")));
}

static void default_band(void)
{
    pair_files p;
    open_pair(&p);
    jvalue *h = health_of(&p, false, 0, 0);
    CHECK(h != NULL);
    if (h) {
        const jvalue *b = json_get(h, "ratioBand");
        CHECK(b && b->len == 2 && json_double(b->items[0]) == 1e-5 && json_double(b->items[1]) == 1e-2);
        char got[2048], want[2048], r1[32], r2[32];
        flags_text(h, got, sizeof got);
        ratio_text(h, 1, r1);
        ratio_text(h, 2, r2);
        snprintf(want, sizeof want,
                 "1 ratioHigh warning|parameter 1: update-to-weight ratio %s is above 1e-2 at lr 0.001\n"
                 "2 ratioLow warning|parameter 2: update-to-weight ratio %s is below 1e-5 at lr 0.001\n"
                 "3 parameterNonFinite failure|parameter 3: its values hold 1 NaN and 0 infinite values\n",
                 r1, r2);
        CHECK_STR(got, want);
        /* the ratios are where the comment says: the flags above are the band's, not chance */
        const jvalue *slots = json_get(h, "slots");
        double r[3];
        for (int i = 0; i < 3; i++) r[i] = json_double(json_get(slots->items[i], "ratio"));
        CHECK(fabs(r[0] / 1e-3 - 1) < 1e-3 && fabs(r[1] / 1e-1 - 1) < 1e-3 && fabs(r[2] / 1e-6 - 1) < 1e-3);
    }
    json_free(h);
    close_pair(&p);
}

static void band_given(void)
{
    pair_files p;
    open_pair(&p);
    /* wide: no ratio flag, the failure stays */
    jvalue *h = health_of(&p, true, 1e-7, 0.5);
    if (h) {
        const jvalue *b = json_get(h, "ratioBand");
        CHECK(b && b->len == 2 && json_double(b->items[0]) == 1e-7 && json_double(b->items[1]) == 0.5);
        char got[2048];
        flags_text(h, got, sizeof got);
        CHECK_STR(got, "3 parameterNonFinite failure|parameter 3: its values hold 1 NaN and 0 infinite values\n");
    }
    json_free(h);
    /* no lower bound, a tight upper one: slots 0, 1 and 3 above it, in the bound's own digits */
    h = health_of(&p, true, 0, 2.5e-4);
    if (h) {
        char got[2048], want[2048], r0[32], r1[32], r3[32];
        flags_text(h, got, sizeof got);
        ratio_text(h, 0, r0);
        ratio_text(h, 1, r1);
        ratio_text(h, 3, r3);
        snprintf(want, sizeof want,
                 "0 ratioHigh warning|parameter 0: update-to-weight ratio %s is above 2.5e-4 at lr 0.001\n"
                 "1 ratioHigh warning|parameter 1: update-to-weight ratio %s is above 2.5e-4 at lr 0.001\n"
                 "3 parameterNonFinite failure|parameter 3: its values hold 1 NaN and 0 infinite values\n"
                 "3 ratioHigh warning|parameter 3: update-to-weight ratio %s is above 2.5e-4 at lr 0.001\n",
                 r0, r1, r3);
        CHECK_STR(got, want);
        /* a slot's own list names its flags */
        const jvalue *own = json_get(json_get(h, "slots")->items[0], "flags");
        CHECK(own && own->len == 1 && strcmp(own->items[0]->text, "ratioHigh") == 0);
    }
    json_free(h);
    close_pair(&p);
}

/* Every band that is not one: refused before the pass, with its reason. */
static void bands_refused(void)
{
    static const struct {
        double low, high;
        const char *message;
    } bad[] = {
        {1e-2, 1e-5, "the ratio band LO,HI needs LO below HI, got 1e-2,1e-5"},
        {1e-3, 1e-3, "the ratio band LO,HI needs LO below HI, got 1e-3,1e-3"},
        {-1e-5, 1e-2, "the ratio band LO,HI takes numbers >= 0 (a ratio is never negative), got -1e-5,1e-2"},
        {0, -1, "the ratio band LO,HI takes numbers >= 0 (a ratio is never negative), got 0,-1e0"},
        {NAN, 1e-2, "the ratio band LO,HI takes finite numbers, got NaN,1e-2"},
        {1e-5, INFINITY, "the ratio band LO,HI takes finite numbers, got 1e-5,inf"},
    };
    pair_files p;
    open_pair(&p);
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        ckpt_error err = {0};
        ckpt_error_clear(&err);
        CHECK(ckpt_health_ratio_band(bad[k].low, bad[k].high, &err) == CKPT_E_INVALID_ARGUMENT);
        CHECK_STR(err.message, bad[k].message);
        ckpt_error_clear(&err);
        ckpt_health_options o = {1e-3, 0, CKPT_NONE, NULL, NULL, true, bad[k].low, bad[k].high};
        char *json = ckpt_health_json(p.f[0], p.f[1], &o, &err);
        CHECK(json == NULL && err.code == CKPT_E_INVALID_ARGUMENT);
        CHECK_STR(err.message, bad[k].message);
        free(json);
        ckpt_error_clear(&err);
    }
    ckpt_error err = {0};
    ckpt_error_clear(&err);
    CHECK(ckpt_health_ratio_band(0, 1e-2, &err) == 0 && err.code == 0);
    CHECK(ckpt_health_ratio_band(CKPT_RATIO_LOW, CKPT_RATIO_HIGH, &err) == 0 && err.code == 0);
    close_pair(&p);
}

int main(void)
{
    static const test_case cases[] = {
        {"the default band: ratio flags are warnings, NaN a failure", default_band},
        {"a band given: its bounds in the texts and the JSON", band_given},
        {"a band that is not one is refused", bands_refused},
    };
    return RUN_ALL(cases);
}
