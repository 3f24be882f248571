/* Statistics as u64 words, so that instances of the library in separate workers (each with its
 * own memory) can gather statistics apart and one of them attach them to its report:
 *   count finite nan inf zero negative, min max sum sum_squares (binary64 bits),
 *   hist_log2_min (two's complement), hist_len, hist[hist_len]. */
#include "numeric/numeric.h"

#include <stdlib.h>
#include <string.h>

#define HEAD 12

size_t ckpt_stats_pack_len(const ckpt_stats *s) { return HEAD + s->hist_len; }

void ckpt_stats_pack(const ckpt_stats *s, uint64_t *out)
{
    const uint64_t head[HEAD] = {s->count,
                                 s->finite,
                                 s->nan,
                                 s->inf,
                                 s->zero,
                                 s->negative,
                                 ckpt_bits_from_double(s->min),
                                 ckpt_bits_from_double(s->max),
                                 ckpt_bits_from_double(s->sum),
                                 ckpt_bits_from_double(s->sum_squares),
                                 (uint64_t)(int64_t)s->hist_log2_min,
                                 s->hist_len};
    memcpy(out, head, sizeof head);
    if (s->hist_len) memcpy(out + HEAD, s->hist, s->hist_len * sizeof *out);
}

ckpt_stats *ckpt_stats_unpack(const uint64_t *in, size_t len)
{
    if (len < HEAD || in[11] != len - HEAD || in[11] > 4096) return NULL;
    ckpt_stats *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    s->count = in[0], s->finite = in[1], s->nan = in[2], s->inf = in[3], s->zero = in[4], s->negative = in[5];
    s->min = ckpt_double_from_bits(in[6]);
    s->max = ckpt_double_from_bits(in[7]);
    s->sum = ckpt_double_from_bits(in[8]);
    s->sum_squares = ckpt_double_from_bits(in[9]);
    s->hist_log2_min = (int32_t)(int64_t)in[10];
    s->hist_len = (uint32_t)in[11];
    if (s->hist_len) {
        if (!(s->hist = malloc(s->hist_len * sizeof *s->hist))) {
            free(s);
            return NULL;
        }
        memcpy(s->hist, in + HEAD, s->hist_len * sizeof *s->hist);
    }
    return s;
}
