/* Moment statistics in one pass: min, max, sum and sum of squares over finite values; NaN,
 * infinity, zero and negative counts; a histogram of floor(log2|x|). NaN and infinities are
 * counted, never propagated into the sums.
 *
 * Speed: the kernels are written with GCC/Clang vector extensions: one portable source that
 * compiles to SSE natively and to WebAssembly SIMD with -msimd128, and to scalar code without
 * it. Every operation is lane-wise IEEE arithmetic in a fixed order, so all builds give
 * bit-identical results. Sums and sums of squares run in double for both dtypes (a float32
 * square overflows past 1.8e19). The histogram counts the raw exponent field (a table increment per element, spread
 * over four tables to avoid store-to-load stalls); subnormals, whose log2 needs their
 * mantissa, are binned in a rare scalar fix-up. */
#include "internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define HIST_BIAS 1074   /* floor(log2|x|) of the smallest float64 subnormal is -1074 */
#define BLOCK 1024       /* float32 elements per lane between merges of the lane counters */

typedef float v4f __attribute__((vector_size(16)));
typedef float v2f __attribute__((vector_size(8)));
typedef int32_t v4i __attribute__((vector_size(16)));
typedef double v2d __attribute__((vector_size(16)));
typedef int64_t v2i __attribute__((vector_size(16)));

void ckpt_stats_begin(ckpt_stats_acc *a)
{
    memset(a, 0, sizeof *a);
    a->min = INFINITY;
    a->max = -INFINITY;
}

static int bit_length(uint64_t v) { return 64 - __builtin_clzll(v); }

/* Where mask lanes are set take a, else b (bitwise, so it works on any lane type). */
#define SELECT(mask, a, b) (((mask) & (a)) | (~(mask) & (b)))

/* ---- float32 ---- */

typedef struct acc4 {
    v2d sum_lo, sum_hi, sq_lo, sq_hi;
    v4f mn, mx;
    v4i nan, inf, zero, neg;   /* minus the count: masks are -1 */
} acc4;

static inline void step4(acc4 *A, const uint8_t *p)
{
    v4i b;
    memcpy(&b, p, 16);
    v4f f = (v4f)b;
    v4i e = (b >> 23) & 0xff;
    v4i special = e == 0xff;
    v4i mant = b & 0x7fffff;
    v4i nan = special & (mant != 0);
    v4i zero = (b & 0x7fffffff) == 0;
    v4i finite = ~special;
    v4f v = (v4f)((v4i)f & finite);                  /* non-finite lanes add 0 */
    v2f vl, vh;
    memcpy(&vl, &v, 8);
    memcpy(&vh, (const char *)&v + 8, 8);
    v2d dl = __builtin_convertvector(vl, v2d), dh = __builtin_convertvector(vh, v2d);
    A->sum_lo += dl;
    A->sum_hi += dh;
    A->sq_lo += dl * dl;
    A->sq_hi += dh * dh;
    v4i lo = (f < A->mn) & finite, hi = (f > A->mx) & finite;
    A->mn = (v4f)SELECT(lo, (v4i)f, (v4i)A->mn);
    A->mx = (v4f)SELECT(hi, (v4i)f, (v4i)A->mx);
    A->nan += nan;
    A->inf += special & ~nan;
    A->zero += zero;
    A->neg += (b < 0) & ~zero & ~nan;
}

static void hist_f32(ckpt_stats_acc *a, const uint8_t *p, size_t n, uint64_t zeros)
{
    uint32_t h[4][256];
    memset(h, 0, sizeof h);
    size_t j = 0;
    for (; j + 4 <= n; j += 4) {
        uint32_t b[4];
        memcpy(b, p + 4 * j, 16);
        h[0][(b[0] >> 23) & 0xff]++;
        h[1][(b[1] >> 23) & 0xff]++;
        h[2][(b[2] >> 23) & 0xff]++;
        h[3][(b[3] >> 23) & 0xff]++;
    }
    for (; j < n; j++) {
        uint32_t b;
        memcpy(&b, p + 4 * j, 4);
        h[0][(b >> 23) & 0xff]++;
    }
    for (int e = 1; e < 255; e++) a->hist[e - 127 + HIST_BIAS] += (uint64_t)h[0][e] + h[1][e] + h[2][e] + h[3][e];
    /* Exponent 0 holds zeros and subnormals; only subnormals belong in the histogram. */
    if ((uint64_t)h[0][0] + h[1][0] + h[2][0] + h[3][0] > zeros) {
        for (size_t i = 0; i < n; i++) {
            uint32_t b;
            memcpy(&b, p + 4 * i, 4);
            uint32_t mant = b & 0x7fffff;
            if (((b >> 23) & 0xff) == 0 && mant) a->hist[bit_length(mant) - 1 - 149 + HIST_BIAS]++;
        }
    }
}

void ckpt_stats_f32(ckpt_stats_acc *a, const float *x, size_t n)
{
    const uint8_t *p = (const uint8_t *)x;
    const v4f inf = {INFINITY, INFINITY, INFINITY, INFINITY};
    acc4 A[2];
    uint64_t zeros = 0;
    size_t k = 0;
    while (k < n) {
        size_t end = n - k > 8 * BLOCK ? k + 8 * BLOCK : n;
        for (int s = 0; s < 2; s++) {
            memset(&A[s], 0, sizeof A[s]);
            A[s].mn = inf;
            A[s].mx = -inf;
        }
        for (; k + 8 <= end; k += 8) {   /* two independent accumulator sets hide latency */
            step4(&A[0], p + 4 * k);
            step4(&A[1], p + 4 * k + 16);
        }
        for (; k < end; k++) {           /* the tail, one lane at a time through the same code */
            uint8_t one[16] = {0};
            memcpy(one, p + 4 * k, 4);
            acc4 T;
            memset(&T, 0, sizeof T);
            T.mn = inf;
            T.mx = -inf;
            step4(&T, one);
            /* lanes 1..3 held +0.0: count only lane 0 */
            a->sum += T.sum_lo[0];
            a->sum_squares += T.sq_lo[0];
            if (T.mn[0] < a->min) a->min = T.mn[0];
            if (T.mx[0] > a->max) a->max = T.mx[0];
            a->nan -= T.nan[0];
            a->inf -= T.inf[0];
            a->zero -= T.zero[0];
            zeros -= T.zero[0];
            a->negative -= T.neg[0];
        }
        for (int s = 0; s < 2; s++) {
            for (int l = 0; l < 4; l++) {
                a->sum += l < 2 ? A[s].sum_lo[l] : A[s].sum_hi[l - 2];
                a->sum_squares += l < 2 ? A[s].sq_lo[l] : A[s].sq_hi[l - 2];
                if (A[s].mn[l] < a->min) a->min = A[s].mn[l];
                if (A[s].mx[l] > a->max) a->max = A[s].mx[l];
                a->nan -= A[s].nan[l];
                a->inf -= A[s].inf[l];
                a->zero -= A[s].zero[l];
                zeros -= A[s].zero[l];
                a->negative -= A[s].neg[l];
            }
        }
    }
    hist_f32(a, p, n, zeros);
    a->count += n;
}

/* ---- float64 ---- */

typedef struct acc2 {
    v2d sum, sq, mn, mx;
    v2i nan, inf, zero, neg;
} acc2;

static inline void step2(acc2 *A, const uint8_t *p)
{
    v2i b;
    memcpy(&b, p, 16);
    v2d d = (v2d)b;
    v2i e = (b >> 52) & 0x7ff;
    v2i special = e == 0x7ff;
    v2i mant = b & 0xfffffffffffffll;
    v2i nan = special & (mant != 0);
    v2i zero = (b & 0x7fffffffffffffffll) == 0;
    v2i finite = ~special;
    v2d v = (v2d)((v2i)d & finite);
    A->sum += v;
    A->sq += v * v;
    v2i lo = (d < A->mn) & finite, hi = (d > A->mx) & finite;
    A->mn = (v2d)SELECT(lo, (v2i)d, (v2i)A->mn);
    A->mx = (v2d)SELECT(hi, (v2i)d, (v2i)A->mx);
    A->nan += nan;
    A->inf += special & ~nan;
    A->zero += zero;
    A->neg += (b < 0) & ~zero & ~nan;
}

static void merge2(ckpt_stats_acc *a, const acc2 *A, uint64_t *zeros, int lanes)
{
    for (int l = 0; l < lanes; l++) {
        a->sum += A->sum[l];
        a->sum_squares += A->sq[l];
        if (A->mn[l] < a->min) a->min = A->mn[l];
        if (A->mx[l] > a->max) a->max = A->mx[l];
        a->nan -= (uint64_t)A->nan[l];
        a->inf -= (uint64_t)A->inf[l];
        a->zero -= (uint64_t)A->zero[l];
        *zeros -= (uint64_t)A->zero[l];
        a->negative -= (uint64_t)A->neg[l];
    }
}

void ckpt_stats_f64(ckpt_stats_acc *a, const double *x, size_t n)
{
    const uint8_t *p = (const uint8_t *)x;
    const v2d inf = {INFINITY, INFINITY};
    acc2 A[2];
    for (int s = 0; s < 2; s++) {
        memset(&A[s], 0, sizeof A[s]);
        A[s].mn = inf;
        A[s].mx = -inf;
    }
    size_t k = 0;
    for (; k + 4 <= n; k += 4) {
        step2(&A[0], p + 8 * k);
        step2(&A[1], p + 8 * k + 16);
    }
    uint64_t zeros = 0;
    merge2(a, &A[0], &zeros, 2);
    merge2(a, &A[1], &zeros, 2);
    for (; k < n; k++) {
        uint8_t one[16] = {0};
        memcpy(one, p + 8 * k, 8);
        acc2 T;
        memset(&T, 0, sizeof T);
        T.mn = inf;
        T.mx = -inf;
        step2(&T, one);
        merge2(a, &T, &zeros, 1);
    }

    static _Thread_local uint32_t h[2][2048];
    memset(h, 0, sizeof h);
    size_t j = 0;
    for (; j + 2 <= n; j += 2) {
        uint64_t b[2];
        memcpy(b, p + 8 * j, 16);
        h[0][(b[0] >> 52) & 0x7ff]++;
        h[1][(b[1] >> 52) & 0x7ff]++;
    }
    for (; j < n; j++) {
        uint64_t b;
        memcpy(&b, p + 8 * j, 8);
        h[0][(b >> 52) & 0x7ff]++;
    }
    for (int e = 1; e < 2047; e++) a->hist[e - 1023 + HIST_BIAS] += (uint64_t)h[0][e] + h[1][e];
    if ((uint64_t)h[0][0] + h[1][0] > zeros) {
        for (size_t i = 0; i < n; i++) {
            uint64_t b;
            memcpy(&b, p + 8 * i, 8);
            uint64_t mant = b & 0xfffffffffffffull;
            if (((b >> 52) & 0x7ff) == 0 && mant) a->hist[bit_length(mant) - 1 - 1074 + HIST_BIAS]++;
        }
    }
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
