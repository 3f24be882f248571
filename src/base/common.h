/* What every module of src/ starts from: the public header, the host it needs, TRY, and checked
 * arithmetic. Private to src/. */
#ifndef CKPT_COMMON_H
#define CKPT_COMMON_H

#include "ckptscope.h"

#include <math.h>
#include <stdarg.h>
#include <string.h>

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "ckptscope reads payloads in place and needs a little-endian host"
#endif

/* A hot loop kept out of line: WebAssembly engines optimise a function on a later call, so a
 * loop that must not run in the baseline tier is a function called often (analyses/health.c). */
#if defined(__GNUC__) || defined(__clang__)
#define NOINLINE __attribute__((noinline))
#define ALWAYS_INLINE __attribute__((always_inline))
#else
#define NOINLINE
#define ALWAYS_INLINE
#endif

#define TRY(expr)                                                                                                      \
    do {                                                                                                               \
        int rc_ = (expr);                                                                                              \
        if (rc_) return rc_;                                                                                           \
    } while (0)

#if defined(__GNUC__)
#define CKPT_PRINTF(fmt, args) __attribute__((format(printf, fmt, args)))
#else
#define CKPT_PRINTF(fmt, args)
#endif

/* ---- checked arithmetic ---- */
static inline bool ckpt_mul_overflows(uint64_t a, uint64_t b, uint64_t *out)
{
    return __builtin_mul_overflow(a, b, out);
}
static inline bool ckpt_add_overflows(uint64_t a, uint64_t b, uint64_t *out)
{
    return __builtin_add_overflow(a, b, out);
}

#endif
