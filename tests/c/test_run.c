/* Checkpoints of one run (docs/runs.md, src/run.c): one slot of 70001 elements trained by the
 * Adam recurrence as a float32 (or float64) kernel computes it, saved at chosen steps; the core
 * must find true pairs continuous (k = 1 and k > 1), give back the gradient of a k = 1 pair, and
 * catch a backwards step, a changed value at one step, a moment pushed just past the bound and
 * a checkpoint of another run, each with its exact text. */
#include "core/core.h" /* a family wrapped with a configuration per slot */
#include "minijson.h"
#include "testutil.h"

#include <float.h>
#include <math.h>
#include <string.h>

#define N_EL 70001 /* past one chunk of the pass (65536 elements) */
#define MAX_SAVES 8

static double beta1 = 0.9, beta2 = 0.999;

/* A deterministic gradient stream (xorshift), roughly normal, scaled by `scale`. */
static uint64_t rng_state;
static double gaussian(void)
{
    double s = 0;
    for (int k = 0; k < 12; k++) {
        rng_state ^= rng_state << 13, rng_state ^= rng_state >> 7, rng_state ^= rng_state << 17;
        s += (double)(rng_state >> 11) / 9007199254740992.0;
    }
    return s - 6;
}

typedef struct saved {
    uint64_t step;
    ckpt_buffer buf;
} saved;

/* Train `steps` steps from seed; save at the steps listed (0-terminated). The last step's
 * gradient goes to last_g (may be NULL). */
static size_t train(int dtype, uint64_t seed, const uint64_t *saves, saved *out, double *last_g)
{
    rng_state = seed;
    static float m32[N_EL], v32[N_EL];
    static double m64[N_EL], v64[N_EL];
    memset(m32, 0, sizeof m32), memset(v32, 0, sizeof v32), memset(m64, 0, sizeof m64), memset(v64, 0, sizeof v64);
    const float b1f = (float)beta1, b2f = (float)beta2, omb1f = (float)(1 - beta1), omb2f = (float)(1 - beta2);
    size_t n = 0;
    uint64_t last = 0;
    for (size_t k = 0; saves[k]; k++) last = saves[k];
    for (uint64_t t = 1; t <= last; t++) {
        for (size_t j = 0; j < N_EL; j++) {
            double g = gaussian() * (j % 7 == 0 ? 1e-3 : 0.1);
            if (j == 5) g = 0; /* an element that never gets a gradient */
            if (last_g) last_g[j] = dtype == CKPT_FLOAT32 ? (double)(float)g : g;
            if (dtype == CKPT_FLOAT32) {
                float gf = (float)g;
                m32[j] = b1f * m32[j] + omb1f * gf;
                v32[j] = b2f * v32[j] + omb2f * (gf * gf);
            } else {
                m64[j] = beta1 * m64[j] + (1 - beta1) * g;
                v64[j] = beta2 * v64[j] + (1 - beta2) * (g * g);
            }
        }
        bool save = false;
        for (size_t k = 0; saves[k]; k++) save |= saves[k] == t;
        if (!save) continue;
        ckpt_schema *s = schema_of(1, (uint64_t[]){1, N_EL}, (uint8_t[]){1}, NULL);
        unsigned w = dtype == CKPT_FLOAT32 ? 4 : 8;
        const void *m = dtype == CKPT_FLOAT32 ? (const void *)m32 : (const void *)m64;
        const void *v = dtype == CKPT_FLOAT32 ? (const void *)v32 : (const void *)v64;
        ckpt_entry_in e = {0, t, N_EL, m, v, N_EL * w, N_EL * w};
        ckpt_config c = {CKPT_ADAM, ckpt_bits_from_double(beta1), ckpt_bits_from_double(beta2),
                         ckpt_bits_from_double(1e-8), 0};
        ckpt_write_desc d = {s, dtype, c, false, 0, &e, 1, 0};
        ckpt_sink sink;
        ckpt_error err = {0};
        ckpt_error_clear(&err);
        ckpt_sink_buffer(&sink, &out[n].buf);
        CHECK(ckpt_write(&d, &sink, &err) == 0);
        out[n++].step = t;
        ckpt_schema_free(s);
    }
    return n;
}

typedef struct opened {
    ckpt_memory mem[MAX_SAVES];
    ckpt_source src[MAX_SAVES];
    const ckpt_file *files[MAX_SAVES];
} opened;

/* The run JSON of these buffers, in this order. */
static jvalue *run_of(ckpt_buffer *const *bufs, size_t n)
{
    opened o;
    for (size_t k = 0; k < n; k++) {
        ckpt_source_memory(&o.src[k], &o.mem[k], bufs[k]->data, bufs[k]->len);
        o.files[k] = ckpt_open(&o.src[k], NULL);
    }
    ckpt_error err = {0};
    ckpt_error_clear(&err);
    char *json = ckpt_run_json(o.files, NULL, n, NULL, &err);
    CHECK(json != NULL);
    jvalue *v = json ? json_parse(json) : NULL;
    CHECK(v != NULL);
    free(json);
    for (size_t k = 0; k < n; k++) ckpt_close((ckpt_file *)o.files[k]);
    return v;
}

static const jvalue *pair_slot(const jvalue *run, size_t p)
{
    const jvalue *pairs = json_get(run, "pairs");
    return json_get(pairs->items[p], "slots")->items[0];
}

static const char *verdict(const jvalue *run, size_t p)
{
    const jvalue *v = json_get(json_get(run, "pairs")->items[p], "verdict");
    return json_is_null(v) ? NULL : v->text;
}

static void free_saves(saved *s, size_t n)
{
    for (size_t k = 0; k < n; k++) ckpt_buffer_free(&s[k].buf);
}

static void true_runs_are_continuous(int dtype)
{
    saved s[MAX_SAVES];
    static double g[N_EL];
    size_t n = train(dtype, 7, (uint64_t[]){3, 4, 9, 10, 0}, s, g);
    CHECK(n == 4);
    jvalue *r = run_of((ckpt_buffer *[]){&s[0].buf, &s[1].buf, &s[2].buf, &s[3].buf}, 4);
    CHECK(json_get(r, "ok")->b);
    CHECK(json_is_null(json_get(r, "first")));
    const uint64_t ks[3] = {1, 5, 1};
    for (size_t p = 0; p < 3; p++) {
        const jvalue *slot = pair_slot(r, p);
        CHECK(json_u64(json_get(slot, "k")) == ks[p]);
        CHECK(json_u64(json_get(slot, "broken")) == 0);
        CHECK(json_double(json_get(slot, "worst")) <= 1);
        CHECK(verdict(r, p) == NULL);
        /* beta2 = 0.999 at k <= 5: A weighs in nearly every element; the pair's power is its slot's */
        CHECK(json_double(json_get(slot, "power")) > 0.9);
        CHECK(json_is_null(json_get(slot, "cannotTell")));
        const jvalue *pair = json_get(r, "pairs")->items[p];
        CHECK(json_get(pair, "continuous")->type == JBOOL && json_get(pair, "continuous")->b);
        CHECK(json_double(json_get(pair, "power")) == json_double(json_get(slot, "power")));
    }
    CHECK(json_u64(json_get(r, "cannotTell")) == 0);
    /* the last pair's gradient is the last step's */
    double sum = 0, max = 0;
    uint64_t zero = 0;
    for (size_t j = 0; j < N_EL; j++) sum += g[j] * g[j], max = fmax(max, fabs(g[j])), zero += g[j] == 0;
    const jvalue *grad = json_get(pair_slot(r, 2), "gradient");
    double tol = dtype == CKPT_FLOAT32 ? 1e-5 : 1e-12;
    CHECK(fabs(json_double(json_get(grad, "rms")) / sqrt(sum / N_EL) - 1) < tol);
    CHECK(fabs(json_double(json_get(grad, "maxAbs")) / max - 1) < tol);
    CHECK(json_u64(json_get(grad, "zero")) == zero);
    CHECK(json_is_null(json_get(pair_slot(r, 1), "gradient")));
    CHECK(json_is_null(json_get(pair_slot(r, 2), "lr")));
    json_free(r);
    free_saves(s, n);
}

static void float32_runs(void) { true_runs_are_continuous(CKPT_FLOAT32); }
static void float64_runs(void) { true_runs_are_continuous(CKPT_FLOAT64); }

static void backwards_and_same_step(void)
{
    saved s[MAX_SAVES];
    size_t n = train(CKPT_FLOAT32, 7, (uint64_t[]){3, 4, 0}, s, NULL);
    jvalue *r = run_of((ckpt_buffer *[]){&s[1].buf, &s[0].buf}, 2);
    CHECK_STR(verdict(r, 0), "slot 0: step 3 in B is before step 4 in A");
    CHECK(json_u64(json_get(r, "first")) == 1);
    CHECK(json_is_null(json_get(pair_slot(r, 0), "broken")));
    json_free(r);
    /* the same file twice: k = 0, bit-identical */
    r = run_of((ckpt_buffer *[]){&s[0].buf, &s[0].buf}, 2);
    CHECK(verdict(r, 0) == NULL);
    CHECK(json_u64(json_get(pair_slot(r, 0), "k")) == 0);
    json_free(r);
    /* one v element's last bit changed at the same step */
    ckpt_buffer copy = {0};
    copy.data = malloc(s[0].buf.len), copy.len = copy.cap = s[0].buf.len;
    memcpy(copy.data, s[0].buf.data, copy.len);
    copy.data[copy.len - 4 * (N_EL - 66000)] ^= 1;
    r = run_of((ckpt_buffer *[]){&s[0].buf, &copy}, 2);
    CHECK_STR(verdict(r, 0), "slot 0: both at step 3, but the moments differ (first at element 66000)");
    CHECK(json_u64(json_get(pair_slot(r, 0), "broken")) == 1);
    json_free(r);
    ckpt_buffer_free(&copy);
    free_saves(s, n);
}

/* k = 1 is an equality: an m of B pushed 1e-4 of its step further breaks; one ulp does not */
static void the_bound_is_tight(void)
{
    saved s[MAX_SAVES];
    size_t n = train(CKPT_FLOAT64, 11, (uint64_t[]){3, 4, 0}, s, NULL);
    uint8_t *mA = s[0].buf.data + s[0].buf.len - 16 * N_EL, *mB = s[1].buf.data + s[1].buf.len - 16 * N_EL;
    double xa, x, x69000;
    memcpy(&x69000, mB + 8 * 69000, 8);
    memcpy(&xa, mA + 8 * 40, 8);
    memcpy(&x, mB + 8 * 40, 8);
    double dm = x - beta1 * xa;
    double pushed = x + copysign(1e-4 * fabs(dm), dm);
    memcpy(mB + 8 * 40, &pushed, 8);
    memcpy(mB + 8 * 69000, &pushed, 8); /* and one in the second chunk: 2 elements */
    jvalue *r = run_of((ckpt_buffer *[]){&s[0].buf, &s[1].buf}, 2);
    CHECK_STR(verdict(r, 0), "slot 0: 2 elements cannot come from Adam steps 3\u21924 (first at element 40)");
    json_free(r);
    pushed = nextafter(x, x + dm);
    memcpy(mB + 8 * 40, &pushed, 8);
    memcpy(mB + 8 * 69000, &x69000, 8);
    r = run_of((ckpt_buffer *[]){&s[0].buf, &s[1].buf}, 2);
    CHECK(verdict(r, 0) == NULL);
    json_free(r);
    free_saves(s, n);
}

/* float64 moments near the largest double: Δm = m_B - b1 m_A overflows for m of opposite signs
 * (element 40, and 69000 in the second chunk), Δv = v_B - b2 v_A for a negative v_A (element 41):
 * no finite v bounds an infinite step, so each breaks the pair; a large Δm that stays finite
 * (element 42, both m near the maximum with one sign) is judged as usual. */
static void an_overflowing_step_is_broken(void)
{
    saved s[MAX_SAVES];
    size_t n = train(CKPT_FLOAT64, 11, (uint64_t[]){3, 4, 0}, s, NULL);
    jvalue *r = run_of((ckpt_buffer *[]){&s[0].buf, &s[1].buf}, 2);
    CHECK(verdict(r, 0) == NULL);
    json_free(r);
    uint8_t *mA = s[0].buf.data + s[0].buf.len - 16 * N_EL, *mB = s[1].buf.data + s[1].buf.len - 16 * N_EL;
    uint8_t *vA = mA + 8 * N_EL, *vB = mB + 8 * N_EL;
    const double big = 1.7e308, minus = -1.7e308;
    memcpy(mA + 8 * 40, &big, 8), memcpy(mB + 8 * 40, &minus, 8);
    memcpy(mA + 8 * 69000, &minus, 8), memcpy(mB + 8 * 69000, &big, 8);
    r = run_of((ckpt_buffer *[]){&s[0].buf, &s[1].buf}, 2);
    CHECK_STR(verdict(r, 0), "slot 0: 2 elements cannot come from Adam steps 3\u21924 (first at element 40)");
    CHECK(json_u64(json_get(pair_slot(r, 0), "broken")) == 2);
    json_free(r);
    memcpy(vA + 8 * 41, &minus, 8), memcpy(vB + 8 * 41, &big, 8);
    r = run_of((ckpt_buffer *[]){&s[0].buf, &s[1].buf}, 2);
    CHECK_STR(verdict(r, 0), "slot 0: 3 elements cannot come from Adam steps 3\u21924 (first at element 40)");
    json_free(r);
    free_saves(s, n);
}

/* A family that keeps a configuration per slot (parameter groups): TLADAMF's reports, wrapped,
 * with slot 0 in a group of beta1 = 0.5 (`per_slot`: else the report's own config). */
static bool per_slot;
static ckpt_config group_config;
static const ckpt_config *group_of_slot(const ckpt_report *rep, uint64_t slot)
{
    return per_slot && slot == 0 ? &group_config : &rep->config;
}

static char *with_groups(const ckpt_file *const *files, size_t n, bool health)
{
    static struct ckpt_family_impl impl;
    static ckpt_family family;
    const ckpt_family *own = ckpt_file_report(files[0])->family;
    impl = *own->impl, impl.config_of_slot = group_of_slot;
    family = *own, family.impl = &impl;
    for (size_t k = 0; k < n; k++) ((ckpt_report *)ckpt_file_report(files[k]))->family = &family;
    group_config = ckpt_file_report(files[0])->config;
    group_config.beta1 = ckpt_bits_from_double(0.5);
    ckpt_error err = {0};
    ckpt_error_clear(&err);
    char *json = health ? ckpt_health_json(files[n - 1], NULL, NULL, &err) : ckpt_run_json(files, NULL, n, NULL, &err);
    CHECK(json != NULL);
    for (size_t k = 0; k < n; k++) ((ckpt_report *)ckpt_file_report(files[k]))->family = own;
    return json;
}

/* health and a run take each slot's configuration from the family (ckpt_config_of_slot), not
 * the report's one: the same JSON when the family gives the report's config for every slot,
 * another when slot 0's group has another beta1 (the pair then breaks). */
static void a_configuration_per_slot(void)
{
    saved s[MAX_SAVES];
    size_t n = train(CKPT_FLOAT64, 11, (uint64_t[]){3, 4, 0}, s, NULL);
    opened o;
    for (size_t k = 0; k < n; k++) {
        ckpt_source_memory(&o.src[k], &o.mem[k], s[k].buf.data, s[k].buf.len);
        o.files[k] = ckpt_open(&o.src[k], NULL);
    }
    ckpt_error err = {0};
    ckpt_error_clear(&err);
    char *run_plain = ckpt_run_json(o.files, NULL, 2, NULL, &err),
         *health_plain = ckpt_health_json(o.files[1], NULL, NULL, &err);
    per_slot = false;
    char *run_same = with_groups(o.files, 2, false), *health_same = with_groups(o.files, 2, true);
    per_slot = true;
    char *run_group = with_groups(o.files, 2, false), *health_group = with_groups(o.files, 2, true);
    per_slot = false;
    CHECK_STR(run_same, run_plain);
    CHECK_STR(health_same, health_plain);
    CHECK(health_group && health_plain && strcmp(health_group, health_plain) != 0);
    jvalue *r = run_group ? json_parse(run_group) : NULL;
    CHECK(r != NULL);
    if (r) {
        const jvalue *slot = pair_slot(r, 0);
        uint64_t broken = json_u64(json_get(slot, "broken"));
        CHECK(broken > 0); /* none under the report's beta1 = 0.9: run_plain */
        char want[160];
        snprintf(want, sizeof want,
                 "slot 0: %llu elements cannot come from Adam steps 3\u21924 (first at element %llu)",
                 (unsigned long long)broken, (unsigned long long)json_u64(json_get(slot, "firstBroken")));
        CHECK_STR(verdict(r, 0), want);
        json_free(r);
    }
    free(run_plain), free(health_plain), free(run_same), free(health_same), free(run_group), free(health_group);
    for (size_t k = 0; k < n; k++) ckpt_close((ckpt_file *)o.files[k]);
    free_saves(s, n);
}

static void another_run(void)
{
    saved a[MAX_SAVES], b[MAX_SAVES];
    size_t na = train(CKPT_FLOAT32, 7, (uint64_t[]){3, 0}, a, NULL);
    size_t nb = train(CKPT_FLOAT32, 8, (uint64_t[]){5, 0}, b, NULL);
    jvalue *r = run_of((ckpt_buffer *[]){&a[0].buf, &b[0].buf}, 2);
    const jvalue *slot = pair_slot(r, 0);
    uint64_t broken = json_u64(json_get(slot, "broken")), first = json_u64(json_get(slot, "firstBroken"));
    CHECK(broken > 0);
    char want[160];
    snprintf(want, sizeof want, "slot 0: %llu elements cannot come from Adam steps 3\u21925 (first at element %llu)",
             (unsigned long long)broken, (unsigned long long)first);
    CHECK_STR(verdict(r, 0), want);
    json_free(r);
    free_saves(a, na);
    free_saves(b, nb);
}

/* beta2 = 0.95 at k = 100 (beta2^k ~ 0.006): B's own moments satisfy the bound whatever A held, so
 * a checkpoint of another seed passes it; the pair cannot tell, and says so: neither continuous
 * nor broken, and the run is not all clear. */
static void too_far_apart_to_tell(void)
{
    saved a[MAX_SAVES], b[MAX_SAVES];
    beta2 = 0.95;
    size_t na = train(CKPT_FLOAT32, 7, (uint64_t[]){100, 0}, a, NULL);
    size_t nb = train(CKPT_FLOAT32, 8, (uint64_t[]){200, 0}, b, NULL);
    beta2 = 0.999;
    jvalue *r = run_of((ckpt_buffer *[]){&a[0].buf, &b[0].buf}, 2);
    const jvalue *pair = json_get(r, "pairs")->items[0], *slot = pair_slot(r, 0);
    CHECK(json_u64(json_get(slot, "broken")) == 0);
    CHECK(json_double(json_get(slot, "power")) < 0.01);
    const char *text = "slot 0: steps 100\u2192200 are too far apart to tell (\u03b2"
                       "1^k = 2.66e-05, \u03b2"
                       "2^k = 0.00592)";
    CHECK_STR(json_get(slot, "cannotTell")->text, text);
    CHECK(json_is_null(json_get(slot, "message")));
    CHECK(json_is_null(json_get(pair, "continuous")));
    CHECK_STR(verdict(r, 0), text);
    CHECK(json_u64(json_get(pair, "verdictSlot")) == 0);
    CHECK(json_u64(json_get(pair, "slotsCannotTell")) == 1);
    CHECK(json_double(json_get(pair, "power")) == json_double(json_get(slot, "power")));
    CHECK(!json_get(r, "ok")->b);
    CHECK(json_is_null(json_get(r, "first"))); /* nothing breaks */
    CHECK(json_u64(json_get(r, "cannotTell")) == 1);
    json_free(r);
    free_saves(a, na);
    free_saves(b, nb);
}

/* A checkpoint at `step` of two slots: slot 0 the N_EL moments of a one-slot checkpoint `one`
 * (train's), slot 1 `n` elements (at most 64) of which the first `weighing` have v = 84.4 at A
 * (that is, 0.5 after beta2^100 with beta2 = 0.95) and v = 1 at B, the rest v = 0 at A and 1 at B,
 * every m 0: A weighs in exactly those elements at k = 100, and nothing breaks. */
static void two_slots(const ckpt_buffer *one, uint64_t step, bool is_a, size_t n, size_t weighing, ckpt_buffer *out)
{
    const uint8_t *mv = one->data + one->len - 8 * N_EL;
    float m1[64] = {0}, v1[64];
    for (size_t j = 0; j < n; j++) v1[j] = !is_a ? 1.0f : j < weighing ? 84.4f : 0.0f;
    ckpt_schema *s = schema_of(2, (uint64_t[]){1, N_EL, 1, n}, (uint8_t[]){1, 1}, NULL);
    ckpt_entry_in e[2] = {{0, step, N_EL, mv, mv + 4 * N_EL, 4 * N_EL, 4 * N_EL}, {1, step, n, m1, v1, 4 * n, 4 * n}};
    ckpt_config c = {CKPT_ADAM, ckpt_bits_from_double(0.9), ckpt_bits_from_double(0.95), ckpt_bits_from_double(1e-8),
                     0};
    ckpt_write_desc d = {s, CKPT_FLOAT32, c, false, 0, e, 2, 0};
    ckpt_sink sink;
    ckpt_error err = {0};
    ckpt_error_clear(&err);
    ckpt_sink_buffer(&sink, out);
    CHECK(ckpt_write(&d, &sink, &err) == 0);
    ckpt_schema_free(s);
}

/* Another seed's checkpoint at k = 100 with beta2 = 0.95, beside a small slot of 24 elements in
 * which A weighs once (power 1/24, above 1%): a few weighing elements prove nothing, so the pair
 * cannot tell, and says how many elements could; 64 weighing elements make it continuous. */
static void a_small_slot_cannot_tell_for_the_pair(void)
{
    saved a[MAX_SAVES], b[MAX_SAVES];
    beta2 = 0.95;
    size_t na = train(CKPT_FLOAT32, 7, (uint64_t[]){100, 0}, a, NULL);
    size_t nb = train(CKPT_FLOAT32, 8, (uint64_t[]){200, 0}, b, NULL);
    beta2 = 0.999;
    const size_t sizes[3][2] = {{24, 1}, {64, 63}, {64, 64}};
    for (size_t t = 0; t < 3; t++) {
        ckpt_buffer fa = {0}, fb = {0};
        two_slots(&a[0].buf, 100, true, sizes[t][0], sizes[t][1], &fa);
        two_slots(&b[0].buf, 200, false, sizes[t][0], sizes[t][1], &fb);
        jvalue *r = run_of((ckpt_buffer *[]){&fa, &fb}, 2);
        const jvalue *pair = json_get(r, "pairs")->items[0], *slots = json_get(pair, "slots");
        CHECK(slots->len == 2);
        CHECK(json_u64(json_get(slots->items[0], "broken")) == 0);
        CHECK(json_u64(json_get(slots->items[1], "broken")) == 0);
        CHECK(json_double(json_get(slots->items[0], "power")) < 0.01); /* the other seed's slot */
        CHECK_STR(json_get(slots->items[0], "cannotTell")->text,
                  "slot 0: steps 100\u2192200 are too far apart to tell (\u03b2"
                  "1^k = 2.66e-05, \u03b2"
                  "2^k = 0.00592)");
        CHECK(json_double(json_get(slots->items[1], "power")) == (double)sizes[t][1] / (double)sizes[t][0]);
        CHECK(json_is_null(json_get(slots->items[1], "cannotTell")));
        CHECK(json_u64(json_get(pair, "slotsCannotTell")) == 1);
        CHECK(json_is_null(json_get(pair, "verdictSlot")));
        CHECK(json_is_null(json_get(r, "first")));
        if (sizes[t][1] < 64) {
            char want[96];
            snprintf(want, sizeof want, "steps 100\u2192200: only %zu elements can tell (64 needed)", sizes[t][1]);
            CHECK(json_is_null(json_get(pair, "continuous")));
            CHECK_STR(verdict(r, 0), want);
            CHECK(!json_get(r, "ok")->b);
            CHECK(json_u64(json_get(r, "cannotTell")) == 1);
        } else {
            CHECK(json_get(pair, "continuous")->b);
            CHECK(verdict(r, 0) == NULL);
            CHECK(json_get(r, "ok")->b);
            CHECK(json_u64(json_get(r, "cannotTell")) == 0);
        }
        json_free(r);
        ckpt_buffer_free(&fa);
        ckpt_buffer_free(&fb);
    }
    free_saves(a, na);
    free_saves(b, nb);
}

/* The power's count, element by element as FORMAT's rule is written (binary64, beta and 1 - beta
 * rounded once to float32), against the kernel's blocks of lanes: usual blocks, blocks holding a
 * NaN or an infinity (the masked way: those elements are not judged, and count as not weighing),
 * and the tail of 70001 = 4 * 17500 + 1. At beta2 = 0.95 and k = 50 A weighs in some elements
 * and not in others. */
static void power_counts_element_by_element(void)
{
    saved s[MAX_SAVES];
    beta2 = 0.95;
    size_t n = train(CKPT_FLOAT32, 9, (uint64_t[]){50, 100, 0}, s, NULL);
    beta2 = 0.999;
    static float mA[N_EL], vA[N_EL], mB[N_EL], vB[N_EL];
    uint8_t *pa = s[0].buf.data + s[0].buf.len - 8 * N_EL, *pb = s[1].buf.data + s[1].buf.len - 8 * N_EL;
    memcpy(mA, pa, sizeof mA), memcpy(vA, pa + sizeof mA, sizeof vA);
    memcpy(mB, pb, sizeof mB), memcpy(vB, pb + sizeof mB, sizeof vB);
    mA[1001] = NAN, vB[40002] = INFINITY, mB[N_EL - 1] = -INFINITY, vA[3] = NAN;
    memcpy(pa, mA, sizeof mA), memcpy(pa + sizeof mA, vA, sizeof vA);
    memcpy(pb, mB, sizeof mB), memcpy(pb + sizeof mB, vB, sizeof vB);
    const double b1 = (float)0.9, b2 = (float)0.95, omb1 = (float)(1 - 0.9), omb2 = (float)(1 - 0.95);
    const double k = 50, b1k = pow(b1, k), b2k = pow(b2, k), rho = b1 * b1 / b2;
    const double ck = omb1 / sqrt(omb2) * sqrt((1 - pow(rho, k)) / (1 - rho)), u = 0x1p-24;
    const double kv = 2.0 * (k + 1.0) * u, km = 4.0 * (k + 1.0) * u;
    uint64_t weigh = 0;
    for (size_t j = 0; j < N_EL; j++) {
        double ma = mA[j], va = vA[j], mb = mB[j], vb = vB[j];
        if (!isfinite(ma) || !isfinite(va) || !isfinite(mb) || !isfinite(vb)) continue;
        double tv = kv * (vb + b2k * va) + FLT_MIN, vt = vb + tv, bma = b1k * fabs(ma);
        double tm = km * (ck * sqrt(vb) + fabs(mb) + bma);
        weigh += vt / 10 < b2k * va || (ck * sqrt(vt) + tm) / 10 < bma;
    }
    CHECK(weigh > N_EL / 20 && weigh < N_EL - N_EL / 20); /* some, not all */
    jvalue *r = run_of((ckpt_buffer *[]){&s[0].buf, &s[1].buf}, 2);
    const jvalue *slot = pair_slot(r, 0);
    CHECK(json_u64(json_get(slot, "k")) == 50);
    CHECK(json_u64(json_get(slot, "broken")) == 0);
    double power = json_double(json_get(slot, "power"));
    CHECK(power == (double)weigh / N_EL);
    CHECK(json_get(json_get(r, "pairs")->items[0], "continuous")->b);
    json_free(r);
    free_saves(s, n);
}

static void another_configuration(void)
{
    saved a[MAX_SAVES], b[MAX_SAVES];
    size_t na = train(CKPT_FLOAT32, 7, (uint64_t[]){3, 0}, a, NULL);
    beta2 = 0.99;
    size_t nb = train(CKPT_FLOAT32, 7, (uint64_t[]){4, 0}, b, NULL);
    beta2 = 0.999;
    jvalue *r = run_of((ckpt_buffer *[]){&a[0].buf, &b[0].buf}, 2);
    CHECK_STR(verdict(r, 0), "beta2: 0.999 vs 0.99 (bits 0x3feff7ced916872b vs 0x3fefae147ae147ae)");
    CHECK(json_get(json_get(r, "pairs")->items[0], "slots")->len == 0);
    json_free(r);
    free_saves(a, na);
    free_saves(b, nb);
}

static void an_invalid_file(void)
{
    saved a[MAX_SAVES];
    size_t na = train(CKPT_FLOAT32, 7, (uint64_t[]){3, 4, 0}, a, NULL);
    a[1].buf.len -= 1;
    jvalue *r = run_of((ckpt_buffer *[]){&a[0].buf, &a[1].buf}, 2);
    CHECK_STR(verdict(r, 0),
              "file 1 is invalid: CUDA Adam checkpoint: truncated checkpoint (wanted 280004 bytes, got 280003)");
    CHECK(json_u64(json_get(r, "first")) == 1);
    json_free(r);
    a[1].buf.len += 1;
    free_saves(a, na);
}

/* The k = 1 gradient exported as safetensors: slot0.grad, float32, the step's gradient */
static void gradient_export(void)
{
    saved s[MAX_SAVES];
    static double g[N_EL];
    size_t n = train(CKPT_FLOAT32, 5, (uint64_t[]){6, 7, 0}, s, g);
    ckpt_memory mem[2];
    ckpt_source src[2];
    ckpt_file *f[2];
    for (int k = 0; k < 2; k++) {
        ckpt_source_memory(&src[k], &mem[k], s[k].buf.data, s[k].buf.len);
        f[k] = ckpt_open(&src[k], NULL);
    }
    ckpt_buffer out = {0};
    ckpt_sink sink;
    ckpt_sink_buffer(&sink, &out);
    ckpt_error err = {0};
    ckpt_error_clear(&err);
    ckpt_export_options o = {CKPT_EXPORT_SAFETENSORS, NULL, 0, NULL, 0, NULL, NULL};
    CHECK(ckpt_run_export_gradient(f[0], f[1], &o, &sink, &err) == 0);
    uint64_t hlen = 0;
    memcpy(&hlen, out.data, 8);
    char *header = calloc(1, hlen + 1);
    memcpy(header, out.data + 8, hlen);
    jvalue *h = json_parse(header);
    const jvalue *t = json_get(h, "slot0.grad");
    CHECK(t != NULL);
    CHECK_STR(json_get(t, "dtype")->text, "F32");
    CHECK(json_is_null(json_get(h, "slot0.exp_avg")));
    const float *data =
        (const float *)(const void *)(out.data + 8 + hlen + json_u64(json_get(t, "data_offsets")->items[0]));
    /* float32 rounding of m_A and m_B: an error of a few ulps of m, against g's own scale */
    double worst = 0, sum = 0;
    for (size_t j = 0; j < N_EL; j++) sum += g[j] * g[j];
    double g_rms = sqrt(sum / N_EL);
    for (size_t j = 0; j < N_EL; j++)
        if (g[j] != 0) worst = fmax(worst, fabs(data[j] - g[j]) / g_rms);
        else CHECK(data[j] == 0);
    CHECK(worst < 1e-5);
    json_free(h);
    free(header);
    ckpt_buffer_free(&out);
    /* the pair backwards: no gradient, said so */
    ckpt_sink_buffer(&sink, &out);
    CHECK(ckpt_run_export_gradient(f[1], f[0], &o, &sink, &err) == CKPT_E_INVALID_ARGUMENT);
    CHECK_STR(err.message, "no slot is one Adam step from A to B: the gradient comes back from a one-step pair only");
    ckpt_error_clear(&err);
    ckpt_buffer_free(&out);
    for (int k = 0; k < 2; k++) ckpt_close(f[k]);
    free_saves(s, n);
}

/* The flags of a health JSON, how many of them are warnings, and the median of its slots' ratios
 * (NAN when none). */
static void health_summary(const ckpt_file *opt, const ckpt_file *state, double lr, const double *band, size_t *flags,
                           size_t *warnings, double *median)
{
    ckpt_error err = {0};
    ckpt_error_clear(&err);
    ckpt_health_options o = {lr, 0, CKPT_NONE, NULL, NULL, band != NULL, band ? band[0] : 0, band ? band[1] : 0};
    char *json = ckpt_health_json(opt, state, &o, &err);
    CHECK(json != NULL);
    jvalue *h = json ? json_parse(json) : NULL;
    free(json);
    *flags = h ? json_get(h, "flags")->len : 0;
    *warnings = 0;
    for (size_t k = 0; k < *flags; k++)
        *warnings += strcmp(json_get(json_get(h, "flags")->items[k], "severity")->text, "warning") == 0;
    /* one slot: its ratio is the median */
    const jvalue *ratio = h ? json_get(json_get(h, "slots")->items[0], "ratio") : NULL;
    *median = ratio && !json_is_null(ratio) ? json_double(ratio) : NAN;
    json_free(h);
}

/* ckpt_run_json reads each payload once: every moment and every parameter byte of every file,
 * once, for the pairs and the files' health together; and the health summary is health's. */
static void each_payload_read_once(void)
{
    saved s[MAX_SAVES];
    size_t n = train(CKPT_FLOAT32, 7, (uint64_t[]){3, 4, 9, 0}, s, NULL);
    CHECK(n == 3);
    static float theta[N_EL];
    ckpt_buffer state_buf[3];
    ckpt_schema *shape = schema_of(1, (uint64_t[]){1, N_EL}, NULL, NULL);
    for (size_t f = 0; f < n; f++) {
        for (size_t j = 0; j < N_EL; j++) theta[j] = 0.05f * (float)((j % 13) + 1) + 0.001f * (float)f;
        const void *values[1] = {theta};
        uint64_t lens[1] = {sizeof theta};
        ckpt_sink sink;
        ckpt_error err = {0};
        ckpt_error_clear(&err);
        ckpt_sink_buffer(&sink, &state_buf[f]);
        CHECK(ckpt_state_write(CKPT_FAMILY_TLSF32B, shape, values, lens, &sink, &err) == 0);
    }
    ckpt_schema_free(shape);
    ckpt_memory mem[6];
    byte_counter count[6];
    const ckpt_file *opts[3], *states[3];
    for (size_t k = 0; k < 6; k++) {
        ckpt_buffer *b = k < 3 ? &s[k].buf : &state_buf[k - 3];
        ckpt_source_memory(&count[k].inner, &mem[k], b->data, b->len);
        count[k].bytes = 0;
        ckpt_source src = {&count[k], byte_counter_read, b->len};
        const ckpt_file *file = ckpt_open(&src, NULL);
        CHECK(file != NULL);
        if (k < 3) opts[k] = file;
        else states[k - 3] = file;
    }
    /* at 1e-3 the ratio is in the default band; at 1e-12 below it: one flag per file; at 1e-3
     * with a band above the ratio, below that band: one flag per file too (health's, to the word) */
    const double high_band[2] = {0.5, 1};
    for (int t = 0; t < 3; t++) {
        double lr = t == 1 ? 1e-12 : 1e-3;
        const double *band = t == 2 ? high_band : NULL;
        for (size_t k = 0; k < 6; k++) count[k].bytes = 0;
        ckpt_error err = {0};
        ckpt_error_clear(&err);
        /* these parameters are not trained by the moments: no residual limit (tested apart) */
        ckpt_run_options o = {NULL, NULL, lr, band != NULL, band ? band[0] : 0, band ? band[1] : 0, INFINITY};
        char *json = ckpt_run_json(opts, states, n, &o, &err);
        CHECK(json != NULL);
        for (size_t f = 0; f < n; f++) {
            CHECK(count[f].bytes == 2 * 4 * (uint64_t)N_EL); /* m and v, once */
            CHECK(count[3 + f].bytes == 4 * (uint64_t)N_EL); /* theta, once */
        }
        jvalue *r = json ? json_parse(json) : NULL;
        free(json);
        CHECK(r != NULL);
        for (size_t f = 0; r && f < n; f++) {
            const jvalue *file = json_get(r, "files")->items[f];
            CHECK(json_get(file, "stateUsed")->b);
            CHECK(json_is_null(json_get(file, "stateError")));
            const jvalue *h = json_get(file, "health");
            size_t flags, warnings;
            double median;
            health_summary(opts[f], states[f], lr, band, &flags, &warnings, &median);
            CHECK(json_u64(json_get(h, "flags")) == flags);
            CHECK(json_u64(json_get(h, "warnings")) == warnings);
            CHECK(!isnan(median) && json_double(json_get(h, "ratio")) == median); /* the same bits */
            if (t) CHECK(flags == 1 && warnings == 1);                            /* ratioLow: a warning */
            else CHECK(flags == 0);
        }
        /* the band used, stated; a ratio warning does not break the run */
        const jvalue *b = r ? json_get(r, "ratioBand") : NULL;
        CHECK(b && b->len == 2 && json_double(b->items[0]) == (band ? band[0] : CKPT_RATIO_LOW) &&
              json_double(b->items[1]) == (band ? band[1] : CKPT_RATIO_HIGH));
        if (t) CHECK(r && json_is_null(json_get(r, "first")) && json_get(r, "ok")->b);
        json_free(r);
    }
    /* a band that is none: health's refusal, word for word, before any byte is read */
    ckpt_error err = {0};
    ckpt_error_clear(&err);
    for (size_t k = 0; k < 6; k++) count[k].bytes = 0;
    ckpt_run_options upside_down = {NULL, NULL, 1e-3, true, 1e-2, 1e-5, 0};
    CHECK(ckpt_run_json(opts, states, n, &upside_down, &err) == NULL);
    CHECK(err.code == CKPT_E_INVALID_ARGUMENT && err.message &&
          strcmp(err.message, "the ratio band LO,HI needs LO below HI, got 1e-2,1e-5") == 0);
    for (size_t k = 0; k < 6; k++) CHECK(count[k].bytes == 0);
    ckpt_error_clear(&err);
    for (size_t k = 0; k < 6; k++) ckpt_close((ckpt_file *)(k < 3 ? opts[k] : states[k - 3]));
    for (size_t f = 0; f < n; f++) ckpt_buffer_free(&state_buf[f]);
    free_saves(s, n);
}

/* A recovered learning rate against the logged one: within 1% of the larger agrees */
static void logged_learning_rates(void)
{
    CHECK(ckpt_logged_lr_agrees(0.0091, 0.0091) == 1);
    CHECK(ckpt_logged_lr_agrees(0.00910005, 0.0091) == 1);
    CHECK(ckpt_logged_lr_agrees(0.0091, 0.0182) == 0);
    CHECK(ckpt_logged_lr_agrees(0.0099, 0.01) == 1);
    CHECK(ckpt_logged_lr_agrees(0.0098, 0.01) == 0);
    CHECK(ckpt_logged_lr_agrees(0, 0) == 1);
    CHECK(ckpt_logged_lr_agrees(NAN, 0.01) == -1);
    CHECK(ckpt_logged_lr_agrees(0.01, INFINITY) == -1);
}

/* --kind on a file that says its kind (a TLADAMF header): the same is taken, another refused */
static void a_kind_the_file_says(void)
{
    saved s[MAX_SAVES];
    size_t n = train(CKPT_FLOAT32, 3, (uint64_t[]){2, 0}, s, NULL);
    ckpt_memory mem;
    ckpt_source src;
    ckpt_source_memory(&src, &mem, s[0].buf.data, s[0].buf.len);
    ckpt_file *f = ckpt_open(&src, NULL);
    CHECK(f != NULL);
    const ckpt_report *rep = ckpt_file_report(f);
    CHECK(rep->has_config);
    ckpt_kind own = rep->config.kind, other = own == CKPT_ADAMW ? CKPT_ADAM : CKPT_ADAMW;
    ckpt_error err = {0};
    ckpt_error_clear(&err);
    CHECK(ckpt_set_kind(f, own, &err) == 0);
    CHECK(ckpt_set_kind(f, other, &err) == CKPT_E_INVALID_ARGUMENT);
    CHECK_STR(err.message, own == CKPT_ADAMW ? "--kind adam contradicts the file: its optimizer is AdamW"
                                             : "--kind adamw contradicts the file: its optimizer is Adam");
    ckpt_error_clear(&err);
    ckpt_close(f);
    free_saves(s, n);
}

int main(void)
{
    static const test_case cases[] = {
        {"float32 runs", float32_runs},
        {"float64 runs", float64_runs},
        {"backwards and same step", backwards_and_same_step},
        {"the bound is tight", the_bound_is_tight},
        {"an overflowing step is broken", an_overflowing_step_is_broken},
        {"a configuration per slot", a_configuration_per_slot},
        {"another run", another_run},
        {"too far apart to tell", too_far_apart_to_tell},
        {"a small slot cannot tell for the pair", a_small_slot_cannot_tell_for_the_pair},
        {"the power counted element by element", power_counts_element_by_element},
        {"another configuration", another_configuration},
        {"an invalid file", an_invalid_file},
        {"gradient export", gradient_export},
        {"each payload read once", each_payload_read_once},
        {"logged learning rates", logged_learning_rates},
        {"a kind the file says", a_kind_the_file_says},
    };
    return RUN_ALL(cases);
}
