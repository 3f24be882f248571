/* The health pass's flags and their severity, and the ratio band: the default band, a band
 * given, and every refusal of a band, with their exact texts (docs/health.md). */
#include "minijson.h"
#include "testutil.h"

#include <float.h>
#include <math.h>
#include <string.h>

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

/* ---- the element loops: blocks of lanes and the elements they leave to the rules as written ---- */

/* Slot 0: LONG elements (three chunks of 16384 and a tail that is not a whole block of four),
 * m and v of a healthy run, with in the middle of a chunk NaN, infinities and a negative v, and
 * elements that the estimated bound leaves undecided (|m| at the bound, v at or below the
 * floor with m nonzero, subnormal v). Slot 1: 3 elements, shorter than one block. */
enum { LONG = 2 * 16384 + 4099, SHORT = 3 };

static float lm[LONG], lv[LONG], lt[LONG], sm[SHORT], sv[SHORT], st[SHORT];

/* The rules of docs/health.md, element by element, in element order: the reference. */
typedef struct reference {
    double u_sum_sq, u_max, p_sum_sq, p_max;
    uint64_t u_finite, nan, inf, negative, never, inconsistent, p_finite, p_nan, p_inf;
} reference;

static void reference_of(const float *m, const float *v, const float *theta, size_t n, double inv1, double inv2,
                         reference *r)
{
    const double c = 0.1 / sqrt((1 - 0.999) * (1 - 0.9 * 0.9 / 0.999)), eps = (float)1e-8, floor = FLT_MIN;
    memset(r, 0, sizeof *r);
    for (size_t j = 0; j < n; j++) {
        double x = theta[j];
        if (isfinite(x)) r->p_sum_sq += x * x, r->p_max = fmax(r->p_max, fabs(x)), r->p_finite++;
        else if (isnan(x)) r->p_nan++;
        else r->p_inf++;
        double a = m[j], b = v[j];
        if (!isfinite(a) || !isfinite(b) || b < 0) {
            r->nan += (isnan(a) != 0) + (isnan(b) != 0);
            r->inf += (isinf(a) != 0) + (isinf(b) != 0); /* isinf may give -1 for -infinity */
            r->negative += b < 0;
            continue;
        }
        r->never += b == 0;
        r->inconsistent += fabs(a) > c * sqrt(b > floor ? b : floor) * (1 + 1e-3);
        double u = fabs((a * inv1) / (sqrt(b * inv2) + eps));
        if (!isfinite(u)) continue;
        r->u_sum_sq += u * u, r->u_max = fmax(r->u_max, u), r->u_finite++;
    }
}

static void fill_slots(void)
{
    const double c = 0.1 / sqrt((1 - 0.999) * (1 - 0.9 * 0.9 / 0.999));
    uint32_t seed = 12345;
    for (size_t j = 0; j < LONG; j++) {
        seed = seed * 1664525u + 1013904223u;
        double r = (double)(seed >> 8) / (1 << 24); /* [0, 1) */
        lm[j] = (float)((r - 0.5) * 2e-2);
        lv[j] = (float)((double)lm[j] * lm[j] * (0.05 + 3 * r) + 1e-9);
        lt[j] = (float)((0.5 - r) * 0.1);
    }
    lm[5] = 0, lv[5] = 0;                   /* never updated */
    lm[6] = 1e-30f, lv[6] = 0;              /* never updated, within the bound at the floor */
    lm[7] = 1e-10f, lv[7] = 0;              /* never updated, beyond the bound at the floor */
    lm[30001] = 1e-25f, lv[30001] = 1e-40f; /* a subnormal v: the floor's bound */
    lm[100] = 0.5f, lv[100] = 1e-4f;        /* beyond */
    /* |m| within 2^-42 of the bound (a v whose bound is that close to a float): the estimated
     * bound leaves it undecided, the bound as written decides; and the next float above it */
    float v = 1e-4f, m = 0;
    for (int k = 0; k < 10000000; k++, v = nextafterf(v, 1.0f)) {
        double b = c * sqrt(v) * (1 + 1e-3);
        m = (float)b;
        if (fabs(m - b) < b * 0x1p-42) break;
    }
    CHECK(fabs(m - c * sqrt(v) * (1 + 1e-3)) < m * 0x1p-42);
    lv[20000] = v, lm[20000] = m;
    lv[20001] = v, lm[20001] = nextafterf(m, 1.0f);
    lm[18000] = NAN;
    lv[18001] = INFINITY;
    lv[18002] = -1e-6f;
    lm[18003] = -INFINITY, lv[18003] = NAN;
    lt[10] = INFINITY, lt[LONG - 2] = NAN;
    lm[LONG - 1] = 0.5f, lv[LONG - 1] = 1e-4f; /* beyond, in the tail */
    const float m1[SHORT] = {1e-3f, NAN, 2e-3f}, v1[SHORT] = {1e-6f, 1e-6f, 4e-6f},
                t1[SHORT] = {0.5f, -INFINITY, 0.25f};
    memcpy(sm, m1, sizeof sm), memcpy(sv, v1, sizeof sv), memcpy(st, t1, sizeof st);
}

static void check_slot(const jvalue *slot, const reference *r)
{
    const jvalue *u = json_get(slot, "update"), *p = json_get(slot, "param");
    CHECK(json_u64(json_get(slot, "neverUpdated")) == r->never);
    CHECK(json_u64(json_get(slot, "inconsistent")) == r->inconsistent);
    CHECK(json_u64(json_get(slot, "nonFinite")) == r->nan + r->inf);
    CHECK(json_double(json_get(u, "maxAbs")) == r->u_max);
    double rms = sqrt(r->u_sum_sq / (double)r->u_finite);
    CHECK(fabs(json_double(json_get(u, "rms")) / rms - 1) < 1e-12);
    CHECK(json_double(json_get(p, "maxAbs")) == r->p_max);
    CHECK(fabs(json_double(json_get(p, "rms")) / sqrt(r->p_sum_sq / (double)r->p_finite) - 1) < 1e-12);
    CHECK(json_u64(json_get(p, "nan")) == r->p_nan && json_u64(json_get(p, "inf")) == r->p_inf);
}

static void blocks_and_fallback(void)
{
    fill_slots();
    const uint64_t step = 1000;
    bytes *opt = b_new();
    b_header(opt, 2, 0, CKPT_ADAM, 0.0, -1);
    b_u64(opt, 2);
    b_slot(opt, 1, (uint64_t[]){LONG}, LONG, 1);
    b_slot(opt, 1, (uint64_t[]){SHORT}, SHORT, 1);
    b_u64(opt, 2);
    const float *ms[2] = {lm, sm}, *vs[2] = {lv, sv};
    const uint64_t counts[2] = {LONG, SHORT};
    for (uint64_t i = 0; i < 2; i++) {
        b_u64(opt, i), b_u64(opt, step), b_u64(opt, counts[i]);
        b_raw(opt, ms[i], counts[i] * 4);
        b_raw(opt, vs[i], counts[i] * 4);
    }
    ckpt_schema *shapes = schema_of(2, (uint64_t[]){1, LONG, 1, SHORT}, NULL, NULL);
    const void *values[2] = {lt, st};
    uint64_t lens[2] = {sizeof lt, sizeof st};
    ckpt_buffer state;
    ckpt_sink sink;
    ckpt_error err = {0};
    ckpt_error_clear(&err);
    ckpt_sink_buffer(&sink, &state);
    CHECK(ckpt_state_write(CKPT_FAMILY_TLSF32B, shapes, values, lens, &sink, &err) == 0);
    ckpt_schema_free(shapes);
    ckpt_memory mem[2];
    ckpt_source src[2];
    ckpt_source_memory(&src[0], &mem[0], opt->data, opt->len);
    ckpt_source_memory(&src[1], &mem[1], state.data, state.len);
    ckpt_file *f[2] = {ckpt_open(&src[0], NULL), ckpt_open(&src[1], NULL)};
    CHECK(f[0] && f[1]);
    char *json = f[0] && f[1] ? ckpt_health_json(f[0], f[1], NULL, &err) : NULL;
    CHECK(json != NULL);
    jvalue *h = json ? json_parse(json) : NULL;
    if (h) {
        double inv1 = 1.0 / (1.0 - pow(0.9, (double)step + 1)), inv2 = 1.0 / (1.0 - pow(0.999, (double)step + 1));
        reference r[2];
        reference_of(lm, lv, lt, LONG, inv1, inv2, &r[0]);
        reference_of(sm, sv, st, SHORT, inv1, inv2, &r[1]);
        /* the cases are there: each path of the loops is taken */
        CHECK(r[0].nan == 2 && r[0].inf == 2 && r[0].negative == 1 && r[0].never == 3 && r[1].nan == 1);
        CHECK(r[0].inconsistent == 4 || r[0].inconsistent == 5); /* 7, 100, 20001, the last; 20000 as rounding has it */
        for (int i = 0; i < 2; i++) check_slot(json_get(h, "slots")->items[i], &r[i]);
        char got[2048];
        flags_text(h, got, sizeof got);
        char want[2048];
        snprintf(want, sizeof want,
                 "0 parameterNonFinite failure|parameter 0: its values hold 1 NaN and 1 infinite values\n"
                 "0 momentsNonFinite failure|parameter 0: its moments hold 2 NaN and 2 infinite values\n"
                 "0 negativeV failure|parameter 0: its second moment holds 1 negative value\n"
                 "0 inconsistent failure|parameter 0: %llu elements with |m| beyond what any gradient history gives "
                 "for these betas: corrupted moments, or betas that are not the ones they were built with\n"
                 "1 parameterNonFinite failure|parameter 1: its values hold 0 NaN and 1 infinite values\n"
                 "1 momentsNonFinite failure|parameter 1: its moments hold 1 NaN and 0 infinite values\n",
                 (unsigned long long)r[0].inconsistent);
        CHECK_STR(got, want);
    }
    json_free(h);
    free(json);
    ckpt_error_clear(&err);
    for (int k = 0; k < 2; k++) ckpt_close(f[k]);
    b_free(opt);
    ckpt_buffer_free(&state);
}

int main(void)
{
    static const test_case cases[] = {
        {"the default band: ratio flags are warnings, NaN a failure", default_band},
        {"a band given: its bounds in the texts and the JSON", band_given},
        {"a band that is not one is refused", bands_refused},
        {"blocks of lanes and the rare elements in one slot: counts exact, sums as element by element",
         blocks_and_fallback},
    };
    return RUN_ALL(cases);
}
