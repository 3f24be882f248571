/* Shapes (format.md 2): element counts in checked arithmetic, printing as #[2, 3] (the
 * ParameterSchema's texts), [2, 3] and dim 2 (dim 3 (scalar)) (the state families' texts), and
 * the full decimal of a product past 2^64 for diagnostics. */
#include "base/shape.h"

#include <stdlib.h>
#include <string.h>

bool ckpt_shape_size(const uint64_t *dims, uint64_t rank, uint64_t *out)
{
    uint64_t p = 1;
    bool too_big = false;
    for (uint64_t k = 0; k < rank; k++) {
        if (dims[k] == 0) {
            *out = 0;
            return true; /* any zero dim gives 0, whatever came before */
        }
        if (!too_big && ckpt_mul_overflows(p, dims[k], &p)) too_big = true;
    }
    *out = p;
    return !too_big;
}

bool ckpt_shape_equal(const uint64_t *a, uint64_t ra, const uint64_t *b, uint64_t rb)
{
    if (ra != rb) return false;
    for (uint64_t k = 0; k < ra; k++) /* ranks are small: a loop beats a memcmp call */
        if (a[k] != b[k]) return false;
    return true;
}

/* A hostile file can hold millions of dims in one shape; past this many a text says how many
 * instead of listing them (no real model comes near). */
#define MAX_PRINTED_DIMS 4096

void ckpt_shape_print_list(strbuf *sb, const uint64_t *dims, uint64_t rank)
{
    sb_puts(sb, "[");
    for (uint64_t k = 0; k < rank && k < MAX_PRINTED_DIMS; k++)
        sb_printf(sb, k ? ", %llu" : "%llu", (unsigned long long)dims[k]);
    if (rank > MAX_PRINTED_DIMS) sb_printf(sb, ", ... (%llu dims in all)", (unsigned long long)rank);
    sb_puts(sb, "]");
}

void ckpt_shape_print(strbuf *sb, const uint64_t *dims, uint64_t rank)
{
    sb_puts(sb, "#");
    ckpt_shape_print_list(sb, dims, rank);
}

void ckpt_shape_print_nested(strbuf *sb, const uint64_t *dims, uint64_t rank)
{
    uint64_t shown = rank < MAX_PRINTED_DIMS ? rank : MAX_PRINTED_DIMS;
    for (uint64_t k = 0; k < shown; k++) sb_printf(sb, "dim %llu (", (unsigned long long)dims[k]);
    if (rank > shown) sb_printf(sb, "... (%llu dims in all)", (unsigned long long)rank);
    else sb_puts(sb, "scalar");
    for (uint64_t k = 0; k < shown; k++) sb_puts(sb, ")");
}

/* Unbounded naturals in base 10^9, least significant limb first. */
typedef struct bignum {
    uint32_t *limb;
    size_t len, cap;
    bool failed;
} bignum;

#define BASE 1000000000u
/* A hostile file can declare a rank in the millions; exact decimals that long would cost
 * quadratic time, so past this many limbs (~10^4 digits) we stop and say so. */
#define MAX_LIMBS 1200

static void big_mul_small(bignum *b, uint64_t k) /* k <= 2^32 */
{
    uint64_t carry = 0;
    for (size_t i = 0; i < b->len; i++) {
        uint64_t t = (uint64_t)b->limb[i] * k + carry;
        b->limb[i] = (uint32_t)(t % BASE);
        carry = t / BASE;
    }
    while (carry) {
        if (b->len == b->cap) {
            size_t cap = b->cap ? b->cap * 2 : 8;
            uint32_t *p = realloc(b->limb, cap * sizeof *p);
            if (!p) {
                b->failed = true;
                return;
            }
            b->limb = p;
            b->cap = cap;
        }
        b->limb[b->len++] = (uint32_t)(carry % BASE);
        carry /= BASE;
    }
    while (b->len > 1 && b->limb[b->len - 1] == 0) b->len--;
}

static bool big_copy(bignum *dst, const bignum *src)
{
    dst->limb = malloc((src->cap ? src->cap : 1) * sizeof *dst->limb);
    if (!dst->limb) return false;
    memcpy(dst->limb, src->limb, src->len * sizeof *dst->limb);
    dst->len = src->len;
    dst->cap = src->cap ? src->cap : 1;
    dst->failed = false;
    return true;
}

static void big_add(bignum *a, const bignum *b)
{
    uint32_t carry = 0;
    for (size_t i = 0; i < b->len || carry; i++) {
        if (i == a->len) {
            if (a->len == a->cap) {
                size_t cap = a->cap ? a->cap * 2 : 8;
                uint32_t *p = realloc(a->limb, cap * sizeof *p);
                if (!p) {
                    a->failed = true;
                    return;
                }
                a->limb = p;
                a->cap = cap;
            }
            a->limb[a->len++] = 0;
        }
        uint32_t t = a->limb[i] + carry + (i < b->len ? b->limb[i] : 0);
        carry = t >= BASE;
        a->limb[i] = carry ? t - BASE : t;
    }
}

/* b *= d for any u64 d: b * lo + (b * hi) * 2^32. */
static void big_mul_u64(bignum *b, uint64_t d)
{
    uint64_t hi = d >> 32, lo = d & 0xffffffffu;
    if (hi == 0) {
        big_mul_small(b, lo);
        return;
    }
    bignum h;
    if (!big_copy(&h, b)) {
        b->failed = true;
        return;
    }
    big_mul_small(&h, hi);
    big_mul_small(&h, 65536);
    big_mul_small(&h, 65536);
    big_mul_small(b, lo);
    big_add(b, &h);
    b->failed |= h.failed;
    free(h.limb);
}

static void big_print(strbuf *sb, const bignum *b)
{
    sb_printf(sb, "%u", b->limb[b->len - 1]);
    for (size_t i = b->len - 1; i-- > 0;) sb_printf(sb, "%09u", b->limb[i]);
}

void ckpt_shape_size_print(strbuf *sb, const uint64_t *dims, uint64_t rank)
{
    uint64_t small;
    if (ckpt_shape_size(dims, rank, &small)) {
        sb_printf(sb, "%llu", (unsigned long long)small);
        return;
    }
    bignum b = {0};
    b.limb = malloc(8 * sizeof *b.limb);
    if (!b.limb) {
        sb->failed = true;
        return;
    }
    b.cap = 8;
    b.len = 1;
    b.limb[0] = 1;
    for (uint64_t k = 0; k < rank && !b.failed; k++) {
        if (b.len > MAX_LIMBS) break;
        big_mul_u64(&b, dims[k]);
    }
    if (b.failed) sb->failed = true;
    else if (b.len > MAX_LIMBS) sb_puts(sb, "(a number of more than 10000 digits)");
    else big_print(sb, &b);
    free(b.limb);
}

void ckpt_u64_product_print(strbuf *sb, uint64_t a, uint64_t b)
{
    uint64_t dims[2] = {a, b};
    ckpt_shape_size_print(sb, dims, 2);
}
