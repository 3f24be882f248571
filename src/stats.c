/* Moment statistics in one pass: min, max, sum and sum of squares over finite values; NaN,
 * infinity, zero and negative counts; a histogram of floor(log2|x|). NaN and infinities are
 * counted, never propagated into the sums.
 *
 * Speed: the kernels are written with GCC/Clang vector extensions: one portable source that
 * compiles to SSE natively and to WebAssembly SIMD with -msimd128, and to scalar code without
 * it; min and max use the targets' own instructions where they have them. Every operation is
 * lane-wise IEEE arithmetic in a fixed order, so all builds give bit-identical results. Sums
 * and sums of squares run in double for both dtypes (a float32 square overflows past 1.8e19).
 *
 * Each block is swept twice while it is in cache: first a histogram of the sign and exponent
 * fields (a table increment per element, spread over several tables to avoid store-to-load
 * stalls), which also says whether the block holds any NaN or infinity; then the vector pass,
 * a lean one for the usual block with none, a masked one otherwise. Negative counts come from
 * the histogram's sign half on the lean path. Subnormals, whose log2 needs their mantissa, are
 * binned in a rare scalar fix-up. */
#include "internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#if defined(__SSE2__)
#include <emmintrin.h>
#elif defined(__wasm_simd128__)
#include <wasm_simd128.h>
#endif

#define HIST_BIAS 1074            /* floor(log2|x|) of the smallest float64 subnormal is -1074 */
#define BLOCK ((size_t)1 << 16)   /* elements per block: in cache for the second sweep */

typedef float v4f __attribute__((vector_size(16)));
typedef float v2f __attribute__((vector_size(8)));
typedef int32_t v4i __attribute__((vector_size(16)));
typedef uint32_t v4u __attribute__((vector_size(16)));
typedef double v2d __attribute__((vector_size(16)));
typedef int64_t v2i __attribute__((vector_size(16)));
typedef uint64_t v2u __attribute__((vector_size(16)));

void ckpt_stats_begin(ckpt_stats_acc *a)
{
    memset(a, 0, sizeof *a);
    a->min = INFINITY;
    a->max = -INFINITY;
}

static int bit_length(uint64_t v) { return 64 - __builtin_clzll(v); }

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

static inline v2d min2(v2d x, v2d acc)
{
#if defined(__SSE2__)
    return (v2d)_mm_min_pd((__m128d)x, (__m128d)acc);
#elif defined(__wasm_simd128__)
    return (v2d)wasm_f64x2_pmin((v128_t)acc, (v128_t)x);
#else
    return (v2d)SELECT(x < acc, (v2i)x, (v2i)acc);
#endif
}

static inline v2d max2(v2d x, v2d acc)
{
#if defined(__SSE2__)
    return (v2d)_mm_max_pd((__m128d)x, (__m128d)acc);
#elif defined(__wasm_simd128__)
    return (v2d)wasm_f64x2_pmax((v128_t)acc, (v128_t)x);
#else
    return (v2d)SELECT(x > acc, (v2i)x, (v2i)acc);
#endif
}

/* ---- float32 ---- */

typedef struct acc4 {
    v2d sum_lo, sum_hi, sq_lo, sq_hi;
    v4f mn, mx;
    v4i nan, inf, zero, neg;   /* minus the count: masks are -1 */
} acc4;

static void acc4_begin(acc4 *A)
{
    memset(A, 0, sizeof *A);
    const v4f inf = {INFINITY, INFINITY, INFINITY, INFINITY};
    A->mn = inf;
    A->mx = -inf;
}

static inline void sums4(acc4 *A, v4f v)
{
    v2f vl, vh;
    memcpy(&vl, &v, 8);
    memcpy(&vh, (const char *)&v + 8, 8);
    v2d dl = __builtin_convertvector(vl, v2d), dh = __builtin_convertvector(vh, v2d);
    A->sum_lo += dl;
    A->sum_hi += dh;
    A->sq_lo += dl * dl;
    A->sq_hi += dh * dh;
}

/* A block with no NaN or infinity: every value is finite. */
static inline void lean4(acc4 *A, const uint8_t *p)
{
    v4i b;
    memcpy(&b, p, 16);
    v4f f = (v4f)b;
    sums4(A, f);
    A->mn = min4(f, A->mn);
    A->mx = max4(f, A->mx);
    A->zero += ((v4u)b << 1) == 0;
}

/* Any block: non-finite lanes are counted and masked out of sums and extremes. */
static inline void masked4(acc4 *A, const uint8_t *p)
{
    v4i b;
    memcpy(&b, p, 16);
    v4f f = (v4f)b;
    v4i special = ((b >> 23) & 0xff) == 0xff;
    v4i nan = special & ((b & 0x7fffff) != 0);
    v4i zero = ((v4u)b << 1) == 0;
    v4i finite = ~special;
    sums4(A, (v4f)((v4i)f & finite));                /* non-finite lanes add 0 */
    A->mn = (v4f)SELECT(finite, (v4i)min4(f, A->mn), (v4i)A->mn);
    A->mx = (v4f)SELECT(finite, (v4i)max4(f, A->mx), (v4i)A->mx);
    A->nan += nan;
    A->inf += special & ~nan;
    A->zero += zero;
    A->neg += (b < 0) & ~zero & ~nan;
}

static void merge4(ckpt_stats_acc *a, const acc4 *A, int lanes, uint64_t *zeros)
{
    for (int l = 0; l < lanes; l++) {
        a->sum += l < 2 ? A->sum_lo[l] : A->sum_hi[l - 2];
        a->sum_squares += l < 2 ? A->sq_lo[l] : A->sq_hi[l - 2];
        if (A->mn[l] < a->min) a->min = A->mn[l];
        if (A->mx[l] > a->max) a->max = A->mx[l];
        a->nan -= (uint64_t)(int64_t)A->nan[l];
        a->inf -= (uint64_t)(int64_t)A->inf[l];
        a->negative -= (uint64_t)(int64_t)A->neg[l];
        *zeros -= (uint64_t)(int64_t)A->zero[l];
    }
}

static void block_f32(ckpt_stats_acc *a, const uint8_t *p, size_t n)
{
    /* Sweep 1: sign and exponent, 512 bins, four tables. */
    uint32_t h[4][512];
    memset(h, 0, sizeof h);
    size_t j = 0;
    for (; j + 4 <= n; j += 4) {
        uint32_t b[4];
        memcpy(b, p + 4 * j, 16);
        h[0][b[0] >> 23]++;
        h[1][b[1] >> 23]++;
        h[2][b[2] >> 23]++;
        h[3][b[3] >> 23]++;
    }
    for (; j < n; j++) {
        uint32_t b;
        memcpy(&b, p + 4 * j, 4);
        h[0][b >> 23]++;
    }
    uint64_t bins[512];
    for (int i = 0; i < 512; i++) bins[i] = (uint64_t)h[0][i] + h[1][i] + h[2][i] + h[3][i];
    bool lean = bins[255] + bins[511] == 0;

    /* Sweep 2: sums, extremes and counts; the lean pass where nothing is non-finite. */
    acc4 A[2];
    acc4_begin(&A[0]);
    acc4_begin(&A[1]);
    size_t k = 0;
    if (lean) {
        for (; k + 8 <= n; k += 8) {   /* two accumulator sets hide latency */
            lean4(&A[0], p + 4 * k);
            lean4(&A[1], p + 4 * k + 16);
        }
    } else {
        for (; k + 8 <= n; k += 8) {
            masked4(&A[0], p + 4 * k);
            masked4(&A[1], p + 4 * k + 16);
        }
    }
    uint64_t zeros = 0;
    merge4(a, &A[0], 4, &zeros);
    merge4(a, &A[1], 4, &zeros);
    for (; k < n; k++) {   /* the tail, one lane at a time through the masked step */
        uint8_t one[16] = {0};
        memcpy(one, p + 4 * k, 4);
        acc4 T;
        acc4_begin(&T);
        masked4(&T, one);
        merge4(a, &T, 1, &zeros);
        if (lean) a->negative += (uint64_t)(int64_t)T.neg[0];   /* counted below from the bins */
    }
    a->zero += zeros;

    /* The histogram; on the lean pass, negatives from the sign half. */
    for (int e = 1; e < 255; e++) a->hist[e - 127 + HIST_BIAS] += bins[e] + bins[256 + e];
    if (lean)
        for (int e = 1; e < 255; e++) a->negative += bins[256 + e];
    /* Exponent 0 holds zeros and subnormals; only subnormals belong in the histogram. */
    if (bins[0] + bins[256] > zeros) {
        for (size_t i = 0; i < n; i++) {
            uint32_t b;
            memcpy(&b, p + 4 * i, 4);
            uint32_t mant = b & 0x7fffff;
            if (((b >> 23) & 0xff) != 0 || !mant) continue;
            a->hist[bit_length(mant) - 1 - 149 + HIST_BIAS]++;
            if (lean) a->negative += b >> 31;
        }
    }
}

void ckpt_stats_f32(ckpt_stats_acc *a, const float *x, size_t n)
{
    const uint8_t *p = (const uint8_t *)x;
    for (size_t k = 0; k < n; k += BLOCK) block_f32(a, p + 4 * k, n - k < BLOCK ? n - k : BLOCK);
    a->count += n;
}

/* ---- float64 ---- */

typedef struct acc2 {
    v2d sum, sq, mn, mx;
    v2i nan, inf, zero, neg;
} acc2;

static void acc2_begin(acc2 *A)
{
    memset(A, 0, sizeof *A);
    const v2d inf = {INFINITY, INFINITY};
    A->mn = inf;
    A->mx = -inf;
}

static inline void lean2(acc2 *A, const uint8_t *p)
{
    v2i b;
    memcpy(&b, p, 16);
    v2d d = (v2d)b;
    A->sum += d;
    A->sq += d * d;
    A->mn = min2(d, A->mn);
    A->mx = max2(d, A->mx);
    A->zero += ((v2u)b << 1) == 0;
}

static inline void masked2(acc2 *A, const uint8_t *p)
{
    v2i b;
    memcpy(&b, p, 16);
    v2d d = (v2d)b;
    v2i special = ((b >> 52) & 0x7ff) == 0x7ff;
    v2i nan = special & ((b & 0xfffffffffffffll) != 0);
    v2i zero = ((v2u)b << 1) == 0;
    v2i finite = ~special;
    v2d v = (v2d)((v2i)d & finite);
    A->sum += v;
    A->sq += v * v;
    A->mn = (v2d)SELECT(finite, (v2i)min2(d, A->mn), (v2i)A->mn);
    A->mx = (v2d)SELECT(finite, (v2i)max2(d, A->mx), (v2i)A->mx);
    A->nan += nan;
    A->inf += special & ~nan;
    A->zero += zero;
    A->neg += (b < 0) & ~zero & ~nan;
}

static void merge2(ckpt_stats_acc *a, const acc2 *A, int lanes, uint64_t *zeros)
{
    for (int l = 0; l < lanes; l++) {
        a->sum += A->sum[l];
        a->sum_squares += A->sq[l];
        if (A->mn[l] < a->min) a->min = A->mn[l];
        if (A->mx[l] > a->max) a->max = A->mx[l];
        a->nan -= (uint64_t)A->nan[l];
        a->inf -= (uint64_t)A->inf[l];
        a->negative -= (uint64_t)A->neg[l];
        *zeros -= (uint64_t)A->zero[l];
    }
}

static void block_f64(ckpt_stats_acc *a, const uint8_t *p, size_t n)
{
    static _Thread_local uint32_t h[2][4096];   /* sign and exponent: 12 bits */
    memset(h, 0, sizeof h);
    size_t j = 0;
    for (; j + 2 <= n; j += 2) {
        uint64_t b[2];
        memcpy(b, p + 8 * j, 16);
        h[0][b[0] >> 52]++;
        h[1][b[1] >> 52]++;
    }
    for (; j < n; j++) {
        uint64_t b;
        memcpy(&b, p + 8 * j, 8);
        h[0][b >> 52]++;
    }
    bool lean = (uint64_t)h[0][2047] + h[1][2047] + h[0][4095] + h[1][4095] == 0;

    acc2 A[2];
    acc2_begin(&A[0]);
    acc2_begin(&A[1]);
    size_t k = 0;
    if (lean) {
        for (; k + 4 <= n; k += 4) {
            lean2(&A[0], p + 8 * k);
            lean2(&A[1], p + 8 * k + 16);
        }
    } else {
        for (; k + 4 <= n; k += 4) {
            masked2(&A[0], p + 8 * k);
            masked2(&A[1], p + 8 * k + 16);
        }
    }
    uint64_t zeros = 0;
    merge2(a, &A[0], 2, &zeros);
    merge2(a, &A[1], 2, &zeros);
    for (; k < n; k++) {
        uint8_t one[16] = {0};
        memcpy(one, p + 8 * k, 8);
        acc2 T;
        acc2_begin(&T);
        masked2(&T, one);
        merge2(a, &T, 1, &zeros);
        if (lean) a->negative += (uint64_t)T.neg[0];
    }
    a->zero += zeros;

    for (int e = 1; e < 2047; e++) {
        uint64_t neg = (uint64_t)h[0][2048 + e] + h[1][2048 + e];
        a->hist[e - 1023 + HIST_BIAS] += (uint64_t)h[0][e] + h[1][e] + neg;
        if (lean) a->negative += neg;
    }
    if ((uint64_t)h[0][0] + h[1][0] + h[0][2048] + h[1][2048] > zeros) {
        for (size_t i = 0; i < n; i++) {
            uint64_t b;
            memcpy(&b, p + 8 * i, 8);
            uint64_t mant = b & 0xfffffffffffffull;
            if (((b >> 52) & 0x7ff) != 0 || !mant) continue;
            a->hist[bit_length(mant) - 1 - 1074 + HIST_BIAS]++;
            if (lean) a->negative += b >> 63;
        }
    }
}

void ckpt_stats_f64(ckpt_stats_acc *a, const double *x, size_t n)
{
    const uint8_t *p = (const uint8_t *)x;
    for (size_t k = 0; k < n; k += BLOCK) block_f64(a, p + 8 * k, n - k < BLOCK ? n - k : BLOCK);
    a->count += n;
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
