/* Moment statistics in one pass: min, max, sum and sum of squares over finite values; NaN,
 * infinity, zero and negative counts; a histogram of floor(log2|x|). NaN and infinities are
 * counted, never propagated into the sums. */
#include "internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define HIST_BIAS 1074   /* floor(log2|x|) of the smallest float64 subnormal is -1074 */

void ckpt_stats_begin(ckpt_stats_acc *a)
{
    memset(a, 0, sizeof *a);
    a->min = INFINITY;
    a->max = -INFINITY;
}

static int bit_length(uint64_t v) { return 64 - __builtin_clzll(v); }

void ckpt_stats_f32(ckpt_stats_acc *a, const float *x, size_t n)
{
    const uint8_t *p = (const uint8_t *)x;
    for (size_t k = 0; k < n; k++) {
        uint32_t bits;
        memcpy(&bits, p + 4 * k, 4);
        uint32_t e = (bits >> 23) & 0xff, mant = bits & 0x7fffff;
        float f;
        memcpy(&f, &bits, 4);
        if (e == 0xff) {
            if (mant) a->nan++;
            else {
                a->inf++;
                if (bits >> 31) a->negative++;
            }
            continue;
        }
        if (f == 0.0f) {
            a->zero++;
            if (0.0 < a->min) a->min = 0.0;
            if (0.0 > a->max) a->max = 0.0;
            continue;
        }
        double d = f;
        if (d < a->min) a->min = d;
        if (d > a->max) a->max = d;
        a->sum += d;
        a->sum_squares += d * d;
        a->negative += bits >> 31;
        int lg = e ? (int)e - 127 : bit_length(mant) - 1 - 149;
        a->hist[lg + HIST_BIAS]++;
    }
    a->count += n;
}

void ckpt_stats_f64(ckpt_stats_acc *a, const double *x, size_t n)
{
    const uint8_t *p = (const uint8_t *)x;
    for (size_t k = 0; k < n; k++) {
        uint64_t bits;
        memcpy(&bits, p + 8 * k, 8);
        uint64_t e = (bits >> 52) & 0x7ff, mant = bits & 0xfffffffffffffull;
        double d;
        memcpy(&d, &bits, 8);
        if (e == 0x7ff) {
            if (mant) a->nan++;
            else {
                a->inf++;
                if (bits >> 63) a->negative++;
            }
            continue;
        }
        if (d == 0.0) {
            a->zero++;
            if (0.0 < a->min) a->min = 0.0;
            if (0.0 > a->max) a->max = 0.0;
            continue;
        }
        if (d < a->min) a->min = d;
        if (d > a->max) a->max = d;
        a->sum += d;
        a->sum_squares += d * d;
        a->negative += bits >> 63;
        int lg = e ? (int)e - 1023 : bit_length(mant) - 1 - 1074;
        a->hist[lg + HIST_BIAS]++;
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
