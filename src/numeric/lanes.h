/* Two binary64 lanes for the element loops of kernels.c (health, runs) and stats.c's binary64
 * lanes: GCC/Clang vector extensions that compile to SSE2 natively (the x86-64 baseline, no
 * -march), to WebAssembly SIMD128 with -msimd128 and to scalar code without it. Every build does
 * the same IEEE operations lane by lane (no FMA: the files that include this turn contraction
 * off), so all give the same bits. Element j of a block of LANES goes to lane j % LANES: the
 * order in which sums add is fixed by the element's index, whatever the build. */
#ifndef CKPT_LANES_H
#define CKPT_LANES_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#if defined(__SSE2__)
#include <emmintrin.h>
#elif defined(__wasm_simd128__)
#include <wasm_simd128.h>
#endif

#define LANES 4 /* elements per block: two vectors of two lanes */

typedef double v2d __attribute__((vector_size(16)));
typedef int64_t v2i __attribute__((vector_size(16))); /* comparison masks: all ones or zero */
typedef float v4f __attribute__((vector_size(16)));
typedef float v2f __attribute__((vector_size(8)));

static inline v2d sqrt2(v2d x)
{
#if defined(__SSE2__)
    return (v2d)_mm_sqrt_pd((__m128d)x);
#elif defined(__wasm_simd128__)
    return (v2d)wasm_f64x2_sqrt((v128_t)x);
#else
    return (v2d){sqrt(x[0]), sqrt(x[1])};
#endif
}

/* Is any lane of the mask set? */
static inline bool any2(v2i m)
{
#if defined(__SSE2__)
    return _mm_movemask_pd((__m128d)m) != 0;
#elif defined(__wasm_simd128__)
    return wasm_v128_any_true((v128_t)m);
#else
    return (m[0] | m[1]) != 0;
#endif
}

/* Are all lanes of the mask set? */
static inline bool all2(v2i m)
{
#if defined(__SSE2__)
    return _mm_movemask_pd((__m128d)m) == 3;
#elif defined(__wasm_simd128__)
    return wasm_i64x2_all_true((v128_t)m);
#else
    return (m[0] & m[1]) != 0;
#endif
}

/* Lane-wise x < acc ? x : acc and x > acc ? x : acc, the same on every target (with a NaN in x,
 * acc: the callers mask NaN lanes out first, or keep the accumulator where x is not finite). */
static inline v2d min2(v2d x, v2d acc)
{
#if defined(__SSE2__)
    return (v2d)_mm_min_pd((__m128d)x, (__m128d)acc);
#elif defined(__wasm_simd128__)
    return (v2d)wasm_f64x2_pmin((v128_t)acc, (v128_t)x);
#else
    return (v2d){x[0] < acc[0] ? x[0] : acc[0], x[1] < acc[1] ? x[1] : acc[1]};
#endif
}

static inline v2d max2(v2d x, v2d acc)
{
#if defined(__SSE2__)
    return (v2d)_mm_max_pd((__m128d)x, (__m128d)acc);
#elif defined(__wasm_simd128__)
    return (v2d)wasm_f64x2_pmax((v128_t)acc, (v128_t)x);
#else
    return (v2d){x[0] > acc[0] ? x[0] : acc[0], x[1] > acc[1] ? x[1] : acc[1]};
#endif
}

/* Lane-wise comparisons as masks. Natively and in wasm through the intrinsics: GCC turns a mask
 * it sees come from a vector comparison, once used in `&`, into scalar selects through
 * general-purpose registers (a select it cannot expand for 64-bit lanes with SSE2 alone). */
#if defined(__SSE2__)
#define CMP2(name, op, intrinsic)                                                                                      \
    static inline v2i name(v2d a, v2d b) { return (v2i)intrinsic((__m128d)a, (__m128d)b); }
#define CMP2_LT _mm_cmplt_pd
#define CMP2_LE _mm_cmple_pd
#define CMP2_EQ _mm_cmpeq_pd
#elif defined(__wasm_simd128__)
#define CMP2(name, op, intrinsic)                                                                                      \
    static inline v2i name(v2d a, v2d b) { return (v2i)intrinsic((v128_t)a, (v128_t)b); }
#define CMP2_LT wasm_f64x2_lt
#define CMP2_LE wasm_f64x2_le
#define CMP2_EQ wasm_f64x2_eq
#else
#define CMP2(name, op, intrinsic)                                                                                      \
    static inline v2i name(v2d a, v2d b) { return (v2i)(a op b); }
#endif
CMP2(lt2, <, CMP2_LT)
CMP2(le2, <=, CMP2_LE)
CMP2(eq2, ==, CMP2_EQ)
#undef CMP2

static inline v2d abs2(v2d x) { return (v2d)((v2i)x & (v2i){INT64_MAX, INT64_MAX}); }

/* x where the mask is set, +0 elsewhere: an excluded lane adds nothing to a sum of values >= 0. */
static inline v2d keep2(v2i mask, v2d x) { return (v2d)(mask & (v2i)x); }

/* a where the mask is set, b elsewhere. */
static inline v2d select2(v2i mask, v2d a, v2d b) { return (v2d)((mask & (v2i)a) | (~mask & (v2i)b)); }

static inline v2d splat2(double x) { return (v2d){x, x}; }

/* Elements j .. j + 3 of a payload of float32 (wide false) or float64 values, in binary64; the
 * payload may be unaligned. */
static inline __attribute__((always_inline)) void load4(const uint8_t *p, size_t j, bool wide, v2d out[2])
{
    if (wide) {
        memcpy(&out[0], p + 8 * j, 16);
        memcpy(&out[1], p + 8 * j + 16, 16);
        return;
    }
#if defined(__SSE2__)
    __m128 f = _mm_loadu_ps((const float *)(const void *)(p + 4 * j));
    out[0] = (v2d)_mm_cvtps_pd(f);
    out[1] = (v2d)_mm_cvtps_pd(_mm_movehl_ps(f, f));
#elif defined(__wasm_simd128__)
    v128_t f = wasm_v128_load(p + 4 * j);
    out[0] = (v2d)wasm_f64x2_promote_low_f32x4(f);
    out[1] = (v2d)wasm_f64x2_promote_low_f32x4(wasm_i64x2_shuffle(f, f, 1, 1));
#else
    float f[4];
    memcpy(f, p + 4 * j, 16);
    out[0] = (v2d){f[0], f[1]};
    out[1] = (v2d){f[2], f[3]};
#endif
}

/* The sum of four lanes in one fixed tree. */
static inline double sum4(const v2d s[2]) { return (s[0][0] + s[0][1]) + (s[1][0] + s[1][1]); }

/* A count kept as minus the sum of masks, in two lanes. */
static inline uint64_t count2(v2i c) { return 0 - (uint64_t)(c[0] + c[1]); }

static inline double max_of2(v2d x) { return x[1] > x[0] ? x[1] : x[0]; }

static const v2i ALL2 = {-1, -1}; /* every lane */

#endif
