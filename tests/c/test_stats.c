/* The statistics kernel (src/stats.c) against a naive reference, called directly: counts,
 * extremes and the histogram exactly; sums within the bound the kernel documents,
 * |error| <= 2^-18 sum|x| and 2^-18 sum x^2. Inputs cover every class of value (NaN with
 * either sign, +-inf, +-0, subnormals, values at the edges of the float32 fast path's range,
 * values whose squares overflow), lengths around the vector, run and block widths, and a
 * payload fed in several calls. */
#include "testutil.h"
#include "numeric/numeric.h"

#include <math.h>

#define BOUND 0x1p-18

typedef struct ref {
    uint64_t count, nan, inf, zero, neg, hist[2100];
    double mn, mx, sum, sq, abs_sum;
} ref;

static void ref_begin(ref *r)
{
    memset(r, 0, sizeof *r);
    r->mn = INFINITY;
    r->mx = -INFINITY;
}

static void ref_add(ref *r, double x)
{
    r->count++;
    if (isnan(x)) {
        r->nan++;
        return;
    }
    if (isinf(x)) {
        r->inf++;
        r->neg += x < 0;
        return;
    }
    if (x < r->mn) r->mn = x;
    if (x > r->mx) r->mx = x;
    r->sum += x;
    r->sq += x * x;
    r->abs_sum += fabs(x);
    if (x == 0) {
        r->zero++;
        return;
    }
    r->neg += x < 0;
    int e;
    frexp(x, &e);
    r->hist[e - 1 + 1074]++;
}

static void compare(const ckpt_stats_acc *a, const ref *r, const char *what, size_t n)
{
    ckpt_stats *s = ckpt_stats_finish(a);
    CHECK(s != NULL);
    if (!s) return;
    int before = t_failures;
    CHECK(s->count == r->count && s->nan == r->nan && s->inf == r->inf && s->zero == r->zero);
    CHECK(s->negative == r->neg && s->finite == r->count - r->nan - r->inf);
    CHECK(s->min == r->mn && s->max == r->mx);
    if (isfinite(r->abs_sum)) CHECK(fabs(s->sum - r->sum) <= BOUND * r->abs_sum); /* else it overflows */
    if (isinf(r->sq)) CHECK(s->sum_squares == r->sq);
    else CHECK(fabs(s->sum_squares - r->sq) <= BOUND * r->sq);
    uint64_t total = 0;
    for (uint32_t b = 0; b < s->hist_len; b++) {
        int32_t at = s->hist_log2_min + 1074 + (int32_t)b;
        CHECK(at >= 0 && at < 2100 && s->hist[b] == r->hist[at]);
        total += s->hist[b];
    }
    uint64_t want = 0;
    for (int b = 0; b < 2100; b++) want += r->hist[b];
    CHECK(total == want);
    if (t_failures != before)
        fprintf(stderr, "  [%s, n = %zu] sum %.17g vs %.17g, squares %.17g vs %.17g\n", what, n, s->sum, r->sum,
                s->sum_squares, r->sq);
    ckpt_stats_free(s);
}

/* ---- inputs ---- */

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint64_t next(void) /* xorshift64* */
{
    rng ^= rng >> 12;
    rng ^= rng << 25;
    rng ^= rng >> 27;
    return rng * 2685821657736338717ull;
}

static double uniform(void) { return (double)(next() >> 11) * 0x1p-53; }

static float bits32(uint32_t b)
{
    float f;
    memcpy(&f, &b, 4);
    return f;
}

static double bits64(uint64_t b)
{
    double d;
    memcpy(&d, &b, 8);
    return d;
}

enum { RANDOM_BITS, ADAM_LIKE, SQUARES, TINY, HUGE_VALUES, ZEROS, CONSTANT, EDGES, KINDS };
static const char *kind_names[KINDS] = {"random bits",          "adam-like", "squares",    "tiny", "huge",
                                        "zeros and subnormals", "constant",  "range edges"};

static float value32(int kind, size_t k)
{
    switch (kind) {
        case RANDOM_BITS: return bits32((uint32_t)next());
        case ADAM_LIKE: return (float)((uniform() - 0.5) * pow(10.0, (double)(k % 12) - 8));
        case SQUARES: {
            double u = uniform();
            return (float)(u * u * 1e-6);
        }
        case TINY: return (float)((uniform() - 0.5) * 1e-25);       /* squares below the float range */
        case HUGE_VALUES: return (float)((uniform() - 0.5) * 1e30); /* squares above it */
        case ZEROS: return next() % 5 ? (next() & 1 ? 0.0f : -0.0f) : bits32((uint32_t)next() & 0x807fffffu);
        case CONSTANT: return 1.5f;
        default: { /* the float path's range is |x| in [2^-63, 2^60) */
            static const float edges[] = {0x1.fffffep59f, -0x1.fffffep59f, 0x1p60f,         -0x1p60f,
                                          0x1p-63f,       -0x1p-63f,       0x1.fffffep-64f, 1.0f,
                                          -1.0f,          0x1p-126f,       0x1p-149f};
            return edges[next() % (sizeof edges / sizeof edges[0])];
        }
    }
}

static double value64(int kind, size_t k)
{
    switch (kind) {
        case RANDOM_BITS: return bits64(next());
        case ADAM_LIKE: return (uniform() - 0.5) * pow(10.0, (double)(k % 40) - 30);
        case SQUARES: {
            double u = uniform();
            return u * u * 1e-6;
        }
        case TINY: return (uniform() - 0.5) * 1e-300;
        case HUGE_VALUES: return (uniform() - 0.5) * 1e300; /* squares overflow double: inf */
        case ZEROS: return next() % 5 ? (next() & 1 ? 0.0 : -0.0) : bits64(next() & 0x800fffffffffffffull);
        case CONSTANT: return 1.5;
        default: {
            static const double edges[] = {0x1p60, -0x1p1023, 0x1p-1074, -0x1p-1022, 1.0, -1.0, 0.0};
            return edges[next() % (sizeof edges / sizeof edges[0])];
        }
    }
}

/* A few special values at random places: NaN of either sign, +-inf, +-0, subnormals. */
static void sprinkle32(float *x, size_t n)
{
    static const uint32_t specials[] = {0x7fc00000u, 0xffc00001u, 0x7f800000u, 0xff800000u,
                                        0x00000000u, 0x80000000u, 0x00000001u, 0x807fffffu};
    for (size_t k = 0; k < 8 && n; k++) x[next() % n] = bits32(specials[next() % 8]);
}

static void sprinkle64(double *x, size_t n)
{
    static const uint64_t specials[] = {0x7ff8000000000000ull,
                                        0xfff0000000000001ull,
                                        0x7ff0000000000000ull,
                                        0xfff0000000000000ull,
                                        0,
                                        0x8000000000000000ull,
                                        1,
                                        0x800fffffffffffffull};
    for (size_t k = 0; k < 8 && n; k++) x[next() % n] = bits64(specials[next() % 8]);
}

/* Lengths around the vector widths (8 and 4), the short-call cut (256), the float runs (8 x 32)
 * and the blocks (65536 and 32768 values). */
static const size_t lengths[] = {0,   1,    5,     8,     9,     63,    64,    65,          255,
                                 257, 1000, 32767, 32769, 65535, 65536, 65537, 131072 + 13, 200003};

static void against_reference(void)
{
    size_t cap = 200003;
    float *x32 = malloc(cap * sizeof *x32);
    double *x64 = malloc(cap * sizeof *x64);
    ref *r = malloc(sizeof *r);
    ckpt_stats_acc *a = malloc(sizeof *a);
    if (!x32 || !x64 || !r || !a) abort();
    for (int kind = 0; kind < KINDS; kind++) {
        for (size_t li = 0; li < sizeof lengths / sizeof lengths[0]; li++) {
            size_t n = lengths[li];
            for (int sprinkled = 0; sprinkled < 2; sprinkled++) {
                for (size_t k = 0; k < n; k++) x32[k] = value32(kind, k), x64[k] = value64(kind, k);
                if (sprinkled) sprinkle32(x32, n), sprinkle64(x64, n);

                ref_begin(r);
                for (size_t k = 0; k < n; k++) ref_add(r, x32[k]);
                ckpt_stats_begin(a);
                ckpt_stats_f32(a, x32, n);
                compare(a, r, kind_names[kind], n);

                ref_begin(r);
                for (size_t k = 0; k < n; k++) ref_add(r, x64[k]);
                ckpt_stats_begin(a);
                ckpt_stats_f64(a, x64, n);
                compare(a, r, kind_names[kind], n);
            }
        }
    }
    free(x32);
    free(x64);
    free(r);
    free(a);
}

/* One payload fed in calls of uneven sizes (as the reader does at chunk and buffer edges). */
static void in_several_calls(void)
{
    enum { N = 300007 };
    static const size_t cuts[] = {1, 3, 64, 7, 1000, 70001, 63, 65536, 8, 255, 256, 100};
    float *x32 = malloc(N * sizeof *x32);
    double *x64 = malloc(N * sizeof *x64);
    ref *r32 = malloc(sizeof *r32), *r64 = malloc(sizeof *r64);
    ckpt_stats_acc *a32 = malloc(sizeof *a32), *a64 = malloc(sizeof *a64);
    if (!x32 || !x64 || !r32 || !r64 || !a32 || !a64) abort();
    ref_begin(r32);
    ref_begin(r64);
    for (size_t k = 0; k < N; k++) {
        int kind = (int)(k / 40000) % KINDS;
        x32[k] = value32(kind, k);
        x64[k] = value64(kind, k);
    }
    sprinkle32(x32, N);
    sprinkle64(x64, N);
    for (size_t k = 0; k < N; k++) ref_add(r32, x32[k]), ref_add(r64, x64[k]);
    ckpt_stats_begin(a32);
    ckpt_stats_begin(a64);
    for (size_t k = 0, c = 0; k < N; c++) {
        size_t len = cuts[c % (sizeof cuts / sizeof cuts[0])];
        if (len > N - k) len = N - k;
        ckpt_stats_f32(a32, x32 + k, len);
        ckpt_stats_f64(a64, x64 + k, len);
        k += len;
    }
    compare(a32, r32, "float32 in several calls", N);
    compare(a64, r64, "float64 in several calls", N);
    free(x32);
    free(x64);
    free(r32);
    free(r64);
    free(a32);
    free(a64);
}

/* The float32 fast path must not lose accuracy at the edges of its range: squares of values
 * just under 2^60, summed 32 to a lane, stay finite; values under 2^-63 leave the path. */
static void float_path_edges(void)
{
    enum { N = 4096 };
    static float x[N];
    ref r;
    ckpt_stats_acc *a = malloc(sizeof *a);
    if (!a) abort();
    const float cases[] = {0x1.fffffep59f, 0x1p-63f, 0x1.fffffep-64f, 0x1p60f};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        ref_begin(&r);
        for (size_t k = 0; k < N; k++) {
            x[k] = k % 2 ? cases[c] : -cases[c];
            ref_add(&r, x[k]);
        }
        ckpt_stats_begin(a);
        ckpt_stats_f32(a, x, N);
        compare(a, &r, "float32 range edges", N);
        CHECK(isfinite(a->sum_squares));
    }
    free(a);
}

/* The kernel guesses each block's path from the block before (even across calls); a wrong
 * guess costs a second sweep, never different bits. Prime it both ways, then compare. */
static void independent_of_the_previous_call(void)
{
    enum { N = 3 * 65536 + 77 };
    float *x = malloc(N * sizeof *x), *prime = malloc(65536 * sizeof *prime);
    ckpt_stats_acc *a = malloc(sizeof *a), *b = malloc(sizeof *b), *scratch = malloc(sizeof *scratch);
    if (!x || !prime || !a || !b || !scratch) abort();
    for (int kind = 0; kind < KINDS; kind++) {
        for (size_t k = 0; k < N; k++) x[k] = value32((int)(k / 65536 + kind) % KINDS, k);
        ckpt_stats_acc *out[2] = {a, b};
        for (int run = 0; run < 2; run++) {
            for (size_t k = 0; k < 65536; k++) prime[k] = run ? value32(TINY, k) : value32(ADAM_LIKE, k);
            ckpt_stats_begin(scratch);
            ckpt_stats_f32(scratch, prime, 65536);
            ckpt_stats_begin(out[run]);
            ckpt_stats_f32(out[run], x, N);
        }
        CHECK(memcmp(a, b, sizeof *a) == 0);
    }
    free(x);
    free(prime);
    free(a);
    free(b);
    free(scratch);
}

static const test_case cases[] = {
    {"results independent of the previous call", independent_of_the_previous_call},
    {"statistics kernel against a naive reference", against_reference},
    {"one payload in calls of uneven sizes", in_several_calls},
    {"float32 fast path at the edges of its range", float_path_edges},
};

int main(void) { return RUN_ALL(cases); }
