/* Moment statistics in one pass: min, max, sum and sum of squares over finite values; NaN,
 * infinity, zero and negative counts; a histogram of floor(log2|x|). NaN and infinities are
 * counted, never propagated into the sums.
 *
 * Speed: each block of a call (256 KiB, so it stays in cache) is swept once by a fused loop
 * that builds a histogram of the sign and exponent fields (a table increment per element,
 * spread over TABLES tables so that a repeated bin seldom waits on the previous store) and,
 * in vector lanes, sums, sums of squares, minimum and maximum. Every count comes from that
 * histogram; only a block whose histogram shows subnormals, NaN or infinities is read again,
 * by a fix-up loop that skips groups without any, and one with zeros by a zero count. Float32
 * has two fused loops: float sums for blocks of ordinary values, masked double sums for the
 * rest (see below); the loop the last block needed runs first, and if the histogram says the
 * block needs the other one, that one runs too, while the block is in cache. Float64 has one
 * fused loop and redoes its sums masked in a block holding NaN or infinities.
 *
 * Bits: the vectors are GCC/Clang vector extensions, one source that compiles to SSE natively,
 * to WebAssembly SIMD with -msimd128 and to scalar code without it. Every build does the same
 * lane-wise IEEE operations in the same order (lane l of a block takes elements LANES g + l,
 * lanes merge in order, tails and short calls go element by element in double) and no FMA, so
 * all give bit-identical results (tests/js/stats.test.mjs checks native against both wasm
 * builds). A block's path depends on its contents only; which loop is tried first changes the
 * speed, never the bits. The histogram and counts are exact integers, so how they are
 * gathered is free.
 *
 * Float32 sums: the fused loop sums x and x*x in float over runs of RUN32 values per lane and
 * carries each run into double. That is accurate only while the squares stay normal floats,
 * so a block takes this path only when all its nonzero values have |x| in [2^-63, 2^60)
 * (read from its histogram); other blocks are summed in double, exactly as float64 is. Error
 * bound of the float path: a run of at most 32 float additions errs by at most 31 u (u =
 * 2^-24) times the sum of its terms' magnitudes, a square's rounding adds u, and the double
 * carries and merges add at most n/1024 roundings of 2^-53, so for n < 2^40 values
 * |sum - exact| <= 2^-18 sum|x| and |sum_squares - exact| <= 2^-18 sum x^2
 * (tests/c/test_stats.c checks both). */
#include "numeric/numeric.h"
#include "numeric/lanes.h" /* v2d, v2i, v4f, v2f and their min2, max2: health.c's and run.c's too */

#include <math.h>
#include <stdlib.h>
#include <string.h>

#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#endif

#define HIST_BIAS 1074                   /* floor(log2|x|) of the smallest float64 subnormal */
#define BLOCK_BYTES ((size_t)256 * 1024) /* stays in cache for a fix-up sweep */
#define LANES32 8                        /* float32: lane l takes elements 8 g + l */
#define LANES64 4                        /* float64: lane l takes elements 4 g + l */
#define RUN32 32                         /* float32 values per lane summed in float */
#define TABLES 8                         /* histogram tables, used in turn */
#define SMALL 256                        /* calls shorter than this go element by element */
/* Biased float32 exponents whose squares, RUN32 at a time, stay normal: |x| in [2^-63, 2^60). */
#define SAFE32_LO (127 - 63)
#define SAFE32_HI (127 + 59)
/* Float64 histogram tables live for a call, cleared and merged at most every SEGMENT64 values
 * (their 32-bit counters must not wrap); 2 x 4096 bins are too many to merge per block. */
#define TABLES64 2
#define SEGMENT64 ((size_t)1 << 30)

typedef int32_t v4i __attribute__((vector_size(16)));
typedef uint32_t v4u __attribute__((vector_size(16)));
typedef uint64_t v2u __attribute__((vector_size(16)));

void ckpt_stats_begin(ckpt_stats_acc *a)
{
    memset(a, 0, sizeof *a);
    a->min = INFINITY;
    a->max = -INFINITY;
}

static int bit_length(uint64_t v) { return 64 - __builtin_clzll(v); }

static uint32_t load32(const uint8_t *p)
{
    uint32_t b;
    memcpy(&b, p, 4);
    return b;
}

static uint64_t load64(const uint8_t *p)
{
    uint64_t b;
    memcpy(&b, p, 8);
    return b;
}

/* Where mask lanes are set take a, else b (bitwise, so it works on any lane type). */
#define SELECT(mask, a, b) (((mask) & (a)) | (~(mask) & (b)))

/* Lane-wise (x < acc ? x : acc) and (x > acc ? x : acc), the same on every target. */
static inline v4f min4(v4f x, v4f acc)
{
#if defined(__SSE2__)
    return (v4f)_mm_min_ps((__m128)x, (__m128)acc);
#elif defined(__wasm_simd128__)
    return (v4f)wasm_f32x4_pmin((v128_t)acc, (v128_t)x);
#else
    return (v4f)SELECT(x < acc, (v4i)x, (v4i)acc);
#endif
}

static inline v4f max4(v4f x, v4f acc)
{
#if defined(__SSE2__)
    return (v4f)_mm_max_ps((__m128)x, (__m128)acc);
#elif defined(__wasm_simd128__)
    return (v4f)wasm_f32x4_pmax((v128_t)acc, (v128_t)x);
#else
    return (v4f)SELECT(x > acc, (v4i)x, (v4i)acc);
#endif
}

/* Is any lane set? */
static inline bool any4(v4i m)
{
#if defined(__SSE2__)
    return _mm_movemask_epi8((__m128i)m) != 0;
#elif defined(__wasm_simd128__)
    return wasm_v128_any_true((v128_t)m);
#else
    return m[0] | m[1] | m[2] | m[3];
#endif
}

static inline v2d lo2d(v4f v)
{
    v2f h;
    memcpy(&h, &v, 8);
    return __builtin_convertvector(h, v2d);
}

static inline v2d hi2d(v4f v)
{
    v2f h;
    memcpy(&h, (const char *)&v + 8, 8);
    return __builtin_convertvector(h, v2d);
}

/* ---- shared by both dtypes ---- */

/* A block's vector part, per lane; every build merges the lanes in this order. */
typedef struct lanes {
    double sum[LANES32], sq[LANES32], mn[LANES32], mx[LANES32];
} lanes;

static void merge_lanes(ckpt_stats_acc *a, const lanes *L, int n)
{
    for (int l = 0; l < n; l++) {
        a->sum += L->sum[l];
        a->sum_squares += L->sq[l];
        if (L->mn[l] < a->min) a->min = L->mn[l];
        if (L->mx[l] > a->max) a->max = L->mx[l];
    }
}

/* One value in double (a float32 square is exact): block tails and short calls. */
static void one_value(ckpt_stats_acc *a, double x)
{
    if (isnan(x)) {
        a->nan++;
        return;
    }
    a->negative += x < 0;
    if (isinf(x)) {
        a->inf++;
        return;
    }
    a->sum += x;
    a->sum_squares += x * x;
    if (x < a->min) a->min = x;
    if (x > a->max) a->max = x;
    if (x == 0) {
        a->zero++;
        return;
    }
    uint64_t b; /* floor(log2|x|) from the bits: ilogb is a call per value */
    memcpy(&b, &x, 8);
    int e = (int)((b >> 52) & 0x7ff);
    a->hist[(e ? e - 1023 : bit_length(b & 0xfffffffffffffull) - 1 - 1074) + HIST_BIAS]++;
}

/* Values k in [from, n) one by one; the payload may be unaligned (it is read in place). */
static void values32(ckpt_stats_acc *a, const uint8_t *p, size_t from, size_t n)
{
    for (size_t k = from; k < n; k++) {
        float x;
        memcpy(&x, p + 4 * k, 4);
        one_value(a, x);
    }
}

static void values64(ckpt_stats_acc *a, const uint8_t *p, size_t from, size_t n)
{
    for (size_t k = from; k < n; k++) {
        double x;
        memcpy(&x, p + 8 * k, 8);
        one_value(a, x);
    }
}

/* ---- float32 ---- */

static void store_lanes32(lanes *L, const v2d s[4], const v2d q[4], v4f mn0, v4f mn1, v4f mx0, v4f mx1)
{
    for (int l = 0; l < LANES32; l++) {
        L->sum[l] = s[l / 2][l % 2];
        L->sq[l] = q[l / 2][l % 2];
        L->mn[l] = l < 4 ? mn0[l] : mn1[l - 4];
        L->mx[l] = l < 4 ? mx0[l] : mx1[l - 4];
    }
}

/* Histogram tables of sign and exponent, zero between blocks. 16-bit counters: a table takes
 * every TABLES-th value of a block, so a bin counts at most BLOCK_BYTES / 4 / TABLES = 8192 before
 * take_bins32 folds it into 64-bit totals (and half the size stays in L1 better). In wasm they
 * sit at a fixed address below the static data, which the build reserves (CKPT_WASM_TABLES,
 * wasm/CMakeLists.txt): the compiler then folds table and address into each load's and store's
 * offset immediate and V8 emits no add per increment (a table the linker places costs one:
 * neither clang 14 nor binaryen folds an address >= 1024 into the offset). Elsewhere static,
 * thread-local for native callers' threads. */
#if defined(__wasm__) && defined(CKPT_WASM_TABLES)
#define hist32 ((uint16_t(*)[512])(uintptr_t)(CKPT_WASM_TABLES))
#else
static _Thread_local uint16_t hist32[TABLES][512];
#endif
_Static_assert(BLOCK_BYTES / 4 / TABLES <= UINT16_MAX, "a block's counts must fit the 16-bit tables");

/* The fused loop: histogram of sign and exponent, float sums carried into double every RUN32
 * groups, extremes. Valid for blocks the float path may take (the caller checks the histogram). */
static void sweep32_float(const uint8_t *p, size_t groups, lanes *L)
{
    const v4f inf = {INFINITY, INFINITY, INFINITY, INFINITY};
    v4f mn0 = inf, mn1 = inf, mx0 = -inf, mx1 = -inf;
    v2d s[4] = {0}, q[4] = {0};
    for (size_t g = 0; g < groups;) {
        size_t end = groups - g < RUN32 ? groups : g + RUN32;
        v4f s0 = {0}, s1 = {0}, q0 = {0}, q1 = {0};
        for (; g < end; g++) {
            const uint8_t *e = p + 32 * g;
            v4f x0, x1;
            memcpy(&x0, e, 16);
            memcpy(&x1, e + 16, 16);
            s0 += x0;
            s1 += x1;
            q0 += x0 * x0;
            q1 += x1 * x1;
            mn0 = min4(x0, mn0);
            mn1 = min4(x1, mn1);
            mx0 = max4(x0, mx0);
            mx1 = max4(x1, mx1);
            for (int k = 0; k < LANES32; k++) hist32[k % TABLES][load32(e + 4 * k) >> 23]++;
        }
        s[0] += lo2d(s0), s[1] += hi2d(s0), s[2] += lo2d(s1), s[3] += hi2d(s1);
        q[0] += lo2d(q0), q[1] += hi2d(q0), q[2] += lo2d(q1), q[3] += hi2d(q1);
    }
    store_lanes32(L, s, q, mn0, mn1, mx0, mx1);
}

/* The other fused loop, for blocks the float path can't take: the same histogram, and sums in
 * double over the finite values only, in the same lanes. */
static void sweep32_double(const uint8_t *p, size_t groups, lanes *L)
{
    const v4f inf = {INFINITY, INFINITY, INFINITY, INFINITY};
    v4f mn[2] = {inf, inf}, mx[2] = {-inf, -inf};
    v2d s[4] = {0}, q[4] = {0};
    for (size_t g = 0; g < groups; g++) {
        const uint8_t *e = p + 32 * g;
        for (int k = 0; k < 2; k++) {
            v4i b;
            memcpy(&b, e + 16 * k, 16);
            v4i finite = ((b >> 23) & 0xff) != 0xff;
            v4f x = (v4f)(b & finite); /* non-finite lanes add 0 */
            v2d lo = lo2d(x), hi = hi2d(x);
            s[2 * k] += lo;
            s[2 * k + 1] += hi;
            q[2 * k] += lo * lo;
            q[2 * k + 1] += hi * hi;
            mn[k] = (v4f)SELECT(finite, (v4i)min4(x, mn[k]), (v4i)mn[k]);
            mx[k] = (v4f)SELECT(finite, (v4i)max4(x, mx[k]), (v4i)mx[k]);
        }
        for (int k = 0; k < LANES32; k++) hist32[k % TABLES][load32(e + 4 * k) >> 23]++;
    }
    store_lanes32(L, s, q, mn[0], mn[1], mx[0], mx[1]);
}

static uint64_t zeros32(const uint8_t *p, size_t n)
{
    uint32_t z = 0;
    for (size_t k = 0; k < n; k++) z += (load32(p + 4 * k) << 1) == 0;
    return z;
}

/* Values with exponent field 0 or all ones: subnormals binned, NaN and infinities counted.
 * Groups of 8 holding none (the usual case) are skipped on a vector test. */
static void fixup32(ckpt_stats_acc *a, const uint8_t *p, size_t groups)
{
    for (size_t g = 0; g < groups; g++) {
        v4i b0, b1;
        memcpy(&b0, p + 32 * g, 16);
        memcpy(&b1, p + 32 * g + 16, 16);
        v4i e0 = (b0 >> 23) & 0xff, e1 = (b1 >> 23) & 0xff;
        v4i hit =
            (e0 == 0xff) | (e1 == 0xff) | ((e0 == 0) & (((v4u)b0 << 1) != 0)) | ((e1 == 0) & (((v4u)b1 << 1) != 0));
        if (!any4(hit)) continue;
        for (int k = 0; k < LANES32; k++) {
            uint32_t b = load32(p + 32 * g + 4 * k), e = (b >> 23) & 0xff, mant = b & 0x7fffff;
            if (e == 0xff) {
                if (mant) {
                    a->nan++;
                } else {
                    a->inf++;
                    a->negative += b >> 31;
                }
            } else if (e == 0 && mant) {
                a->hist[bit_length(mant) - 1 - 149 + HIST_BIAS]++;
                a->negative += b >> 31;
            }
        }
    }
}

/* Sum the tables into bins and leave them zero for the next block. */
static void take_bins32(uint32_t bins[512])
{
    memset(bins, 0, 512 * sizeof *bins);
    for (int t = 0; t < TABLES; t++) {
        for (int i = 0; i < 512; i++) bins[i] += hist32[t][i];
        memset(hist32[t], 0, sizeof hist32[t]);
    }
}

/* Which fused loop the last block needed: the next one most likely needs the same. Only the
 * speed depends on it; a block's results depend on its contents alone. */
static _Thread_local bool last_float = true;

static void block_f32(ckpt_stats_acc *a, const uint8_t *p, size_t n)
{
    size_t groups = n / LANES32, m = groups * LANES32;
    lanes L;
    bool ran_float = last_float;
    (ran_float ? sweep32_float : sweep32_double)(p, groups, &L);
    uint32_t bins[512]; /* a block has fewer than 2^32 values */
    take_bins32(bins);
    uint64_t special = bins[255] + bins[511], exp0 = bins[0] + bins[256];
    uint64_t zeros = exp0 ? zeros32(p, m) : 0;
    uint64_t unsafe = special + (exp0 - zeros), negative = 0; /* non-finite, subnormal */
    for (int e = 1; e < 255; e++) {
        uint64_t c = (uint64_t)bins[e] + bins[256 + e];
        a->hist[e - 127 + HIST_BIAS] += c;
        negative += bins[256 + e];
        if (e < SAFE32_LO || e > SAFE32_HI) unsafe += c;
    }
    a->negative += negative;
    last_float = !unsafe;
    if (last_float != ran_float) { /* the other loop gives this block's sums */
        (last_float ? sweep32_float : sweep32_double)(p, groups, &L);
        take_bins32(bins); /* the same counts again */
    }
    merge_lanes(a, &L, LANES32);
    if (special || exp0 > zeros) fixup32(a, p, groups);
    a->zero += zeros;
    values32(a, p, m, n);
}

void ckpt_stats_f32(ckpt_stats_acc *a, const float *x, size_t n)
{
    const uint8_t *p = (const uint8_t *)x;
    a->count += n;
    if (n < SMALL) {
        values32(a, p, 0, n);
        return;
    }
    const size_t block = BLOCK_BYTES / 4;
    for (size_t k = 0; k < n; k += block) block_f32(a, p + 4 * k, n - k < block ? n - k : block);
}

/* ---- float64 ---- */

static void store_lanes64(lanes *L, v2d s0, v2d s1, v2d q0, v2d q1, v2d mn0, v2d mn1, v2d mx0, v2d mx1)
{
    for (int l = 0; l < 2; l++) {
        L->sum[l] = s0[l], L->sum[l + 2] = s1[l];
        L->sq[l] = q0[l], L->sq[l + 2] = q1[l];
        L->mn[l] = mn0[l], L->mn[l + 2] = mn1[l];
        L->mx[l] = mx0[l], L->mx[l + 2] = mx1[l];
    }
}

static _Thread_local uint32_t hist64[TABLES64][4096];

/* The fused loop: histogram of sign and exponent, sums and extremes in double. Valid for blocks
 * without NaN or infinities (the caller checks the histogram). */
static void sweep64(const uint8_t *p, size_t groups, lanes *L)
{
    const v2d inf = {INFINITY, INFINITY};
    v2d s0 = {0}, s1 = {0}, q0 = {0}, q1 = {0}, mn0 = inf, mn1 = inf, mx0 = -inf, mx1 = -inf;
    for (size_t g = 0; g < groups; g++) {
        const uint8_t *e = p + 32 * g;
        v2d x0, x1;
        memcpy(&x0, e, 16);
        memcpy(&x1, e + 16, 16);
        s0 += x0;
        s1 += x1;
        q0 += x0 * x0;
        q1 += x1 * x1;
        mn0 = min2(x0, mn0);
        mn1 = min2(x1, mn1);
        mx0 = max2(x0, mx0);
        mx1 = max2(x1, mx1);
        for (int k = 0; k < LANES64; k++) hist64[k % TABLES64][load64(e + 8 * k) >> 52]++;
    }
    store_lanes64(L, s0, s1, q0, q1, mn0, mn1, mx0, mx1);
}

/* Sums and extremes over the finite values only, the same lanes: blocks with NaN or infinities. */
static void exact64(const uint8_t *p, size_t groups, lanes *L)
{
    const v2d inf = {INFINITY, INFINITY};
    v2d s[2] = {{0}, {0}}, q[2] = {{0}, {0}}, mn[2] = {inf, inf}, mx[2] = {-inf, -inf};
    for (size_t g = 0; g < groups; g++) {
        for (int k = 0; k < 2; k++) {
            v2i b;
            memcpy(&b, p + 32 * g + 16 * k, 16);
            v2i finite = ((b >> 52) & 0x7ff) != 0x7ff;
            v2d x = (v2d)(b & finite);
            s[k] += x;
            q[k] += x * x;
            mn[k] = (v2d)SELECT(finite, (v2i)min2(x, mn[k]), (v2i)mn[k]);
            mx[k] = (v2d)SELECT(finite, (v2i)max2(x, mx[k]), (v2i)mx[k]);
        }
    }
    store_lanes64(L, s[0], s[1], q[0], q[1], mn[0], mn[1], mx[0], mx[1]);
}

static uint64_t zeros64(const uint8_t *p, size_t n)
{
    uint32_t z = 0;
    for (size_t k = 0; k < n; k++) z += (load64(p + 8 * k) << 1) == 0;
    return z;
}

/* As fixup32. */
static void fixup64(ckpt_stats_acc *a, const uint8_t *p, size_t groups)
{
    for (size_t g = 0; g < groups; g++) {
        v2i b0, b1;
        memcpy(&b0, p + 32 * g, 16);
        memcpy(&b1, p + 32 * g + 16, 16);
        v2i e0 = (b0 >> 52) & 0x7ff, e1 = (b1 >> 52) & 0x7ff;
        v2i hit =
            (e0 == 0x7ff) | (e1 == 0x7ff) | ((e0 == 0) & (((v2u)b0 << 1) != 0)) | ((e1 == 0) & (((v2u)b1 << 1) != 0));
        if (!any4((v4i)hit)) continue;
        for (int k = 0; k < LANES64; k++) {
            uint64_t b = load64(p + 32 * g + 8 * k), e = (b >> 52) & 0x7ff;
            uint64_t mant = b & 0xfffffffffffffull;
            if (e == 0x7ff) {
                if (mant) {
                    a->nan++;
                } else {
                    a->inf++;
                    a->negative += b >> 63;
                }
            } else if (e == 0 && mant) {
                a->hist[bit_length(mant) - 1 - 1074 + HIST_BIAS]++;
                a->negative += b >> 63;
            }
        }
    }
}

/* Sum of the table counts of one bin, both signs. */
static uint64_t bin64(int e)
{
    uint64_t c = 0;
    for (int t = 0; t < TABLES64; t++) c += (uint64_t)hist64[t][e] + hist64[t][2048 + e];
    return c;
}

static void block_f64(ckpt_stats_acc *a, const uint8_t *p, size_t n)
{
    size_t groups = n / LANES64, m = groups * LANES64;
    uint64_t special = bin64(2047), exp0 = bin64(0); /* the counts before this block */
    lanes L;
    sweep64(p, groups, &L);
    special = bin64(2047) - special;
    exp0 = bin64(0) - exp0;
    uint64_t zeros = exp0 ? zeros64(p, m) : 0;
    if (special) exact64(p, groups, &L);
    merge_lanes(a, &L, LANES64);
    if (special || exp0 > zeros) fixup64(a, p, groups);
    a->zero += zeros;
    values64(a, p, m, n);
}

void ckpt_stats_f64(ckpt_stats_acc *a, const double *x, size_t n)
{
    const uint8_t *p = (const uint8_t *)x;
    a->count += n;
    if (n < SMALL) {
        values64(a, p, 0, n);
        return;
    }
    const size_t block = BLOCK_BYTES / 8;
    for (size_t s = 0; s < n; s += SEGMENT64) {
        size_t len = n - s < SEGMENT64 ? n - s : SEGMENT64;
        memset(hist64, 0, sizeof hist64);
        for (size_t k = 0; k < len; k += block) block_f64(a, p + 8 * (s + k), len - k < block ? len - k : block);
        for (int e = 1; e < 2047; e++) {
            a->hist[e - 1023 + HIST_BIAS] += bin64(e);
            for (int t = 0; t < TABLES64; t++) a->negative += hist64[t][2048 + e];
        }
    }
}

ckpt_stats *ckpt_stats_finish(const ckpt_stats_acc *a)
{
    ckpt_stats *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    s->count = a->count;
    s->nan = a->nan;
    s->inf = a->inf;
    s->zero = a->zero;
    s->negative = a->negative;
    s->finite = a->count - a->nan - a->inf;
    s->min = a->min;
    s->max = a->max;
    s->sum = a->sum;
    s->sum_squares = a->sum_squares;
    size_t lo = 0, hi = sizeof a->hist / sizeof a->hist[0];
    while (lo < hi && !a->hist[lo]) lo++;
    while (hi > lo && !a->hist[hi - 1]) hi--;
    if (hi > lo) {
        s->hist = malloc((hi - lo) * sizeof *s->hist);
        if (!s->hist) {
            free(s);
            return NULL;
        }
        memcpy(s->hist, a->hist + lo, (hi - lo) * sizeof *s->hist);
        s->hist_log2_min = (int32_t)lo - HIST_BIAS;
        s->hist_len = (uint32_t)(hi - lo);
    }
    return s;
}

void ckpt_stats_free(ckpt_stats *s)
{
    if (!s) return;
    free(s->hist);
    free(s);
}

/* Any other dtype of the table: widened to double exactly (dtype.c), then the float64 kernel. */
void ckpt_stats_dtype(ckpt_stats_acc *a, int dtype, const void *x, size_t n)
{
    if (dtype == CKPT_FLOAT32) {
        ckpt_stats_f32(a, x, n);
        return;
    }
    if (dtype == CKPT_FLOAT64) {
        ckpt_stats_f64(a, x, n);
        return;
    }
    double wide[1024];
    const unsigned width = ckpt_dtype_width(dtype);
    const uint8_t *p = x;
    for (size_t done = 0; done < n;) {
        size_t k = n - done < 1024 ? n - done : 1024;
        ckpt_dtype_widen(dtype, p + done * width, k, wide);
        ckpt_stats_f64(a, wide, k);
        done += k;
    }
}
