/* The JSON writer shared by the report, pairing, diff and errors (docs/report.md). Integers are
 * JSON numbers up to 2^53 - 1 and decimal strings beyond; doubles print in the shortest form
 * that reads back bit for bit; non-finite values print as the strings "NaN", "Infinity". */
#include "base/json_write.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SAFE_INTEGER 9007199254740991ull /* 2^53 - 1 */

/* Decimal digits without printf: reports of a million slots print millions of integers. */
/* Two digits per division: reports are mostly numbers (a million slots: ~10 million of them). */
static const char DIGIT_PAIRS[201] = "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
                                     "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
                                     "8081828384858687888990919293949596979899";

void j_u64(strbuf *sb, uint64_t v)
{
    if (v < 10) { /* most counts, ranks, flags and small dims */
        sb_putc(sb, (char)('0' + v));
        return;
    }
    char buf[24];
    char *end = buf + sizeof buf, *p = end;
    bool quoted = v > SAFE_INTEGER;
    if (quoted) *--p = '"';
    while (v > UINT32_MAX) {
        unsigned r = (unsigned)(v % 100);
        v /= 100;
        p -= 2;
        memcpy(p, DIGIT_PAIRS + 2 * r, 2);
    }
    uint32_t u = (uint32_t)v; /* 32-bit division from here: the common case entirely */
    while (u >= 100) {
        unsigned r = u % 100;
        u /= 100;
        p -= 2;
        memcpy(p, DIGIT_PAIRS + 2 * r, 2);
    }
    if (u >= 10) {
        p -= 2;
        memcpy(p, DIGIT_PAIRS + 2 * u, 2);
    } else {
        *--p = (char)('0' + u);
    }
    if (quoted) *--p = '"';
    sb_put(sb, p, (size_t)(end - p));
}

void j_slot(strbuf *sb, uint64_t slot)
{
    if (slot == CKPT_NONE) sb_lit(sb, "null");
    else j_u64(sb, slot);
}

void j_num_or_null(strbuf *sb, bool present, double x)
{
    if (present) j_double(sb, x);
    else sb_lit(sb, "null");
}

void j_double(strbuf *sb, double x)
{
    if (isnan(x)) {
        sb_puts(sb, "\"NaN\"");
        return;
    }
    if (isinf(x)) {
        sb_puts(sb, x > 0 ? "\"Infinity\"" : "\"-Infinity\"");
        return;
    }
    char buf[40];
    for (int prec = 1; prec <= 17; prec++) { /* the shortest text that reads back exactly */
        snprintf(buf, sizeof buf, "%.*g", prec, x);
        if (strtod(buf, NULL) == x) break;
    }
    if (x == 0 && signbit(x)) strcpy(buf, "-0");
    sb_puts(sb, buf);
}

void j_string_n(strbuf *sb, const char *s, size_t n)
{
    sb_puts(sb, "\"");
    for (size_t k = 0; k < n; k++) {
        unsigned char ch = (unsigned char)s[k];
        if (ch == '"' || ch == '\\') sb_printf(sb, "\\%c", ch);
        else if (ch < 0x20 || ch == 0x7f) sb_printf(sb, "\\u%04x", ch);
        else sb_put(sb, s + k, 1);
    }
    sb_puts(sb, "\"");
}

void j_string(strbuf *sb, const char *s) { j_string_n(sb, s, strlen(s)); }

void j_bits(strbuf *sb, uint64_t b) { sb_printf(sb, "\"0x%016llx\"", (unsigned long long)b); }

void j_stats(strbuf *sb, const ckpt_stats *s)
{
    if (!s) {
        sb_puts(sb, "null");
        return;
    }
    sb_puts(sb, "{\"count\":");
    j_u64(sb, s->count);
    uint64_t finite = s->finite;
    const char *names[4] = {"min", "max", "mean", "rms"};
    double values[4] = {s->min, s->max, finite ? s->sum / (double)finite : 0,
                        finite ? sqrt(s->sum_squares / (double)finite) : 0};
    for (int k = 0; k < 4; k++) {
        sb_printf(sb, ",\"%s\":", names[k]);
        if (finite) j_double(sb, values[k]);
        else sb_puts(sb, "null");
    }
    const char *counts[4] = {"nan", "inf", "zero", "negative"};
    uint64_t cv[4] = {s->nan, s->inf, s->zero, s->negative};
    for (int k = 0; k < 4; k++) {
        sb_printf(sb, ",\"%s\":", counts[k]);
        j_u64(sb, cv[k]);
    }
    sb_printf(sb, ",\"histogram\":{\"log2Min\":%d,\"counts\":[", (int)s->hist_log2_min);
    for (uint32_t k = 0; k < s->hist_len; k++) {
        if (k) sb_puts(sb, ",");
        j_u64(sb, s->hist[k]);
    }
    sb_puts(sb, "]}}");
}

void j_dims(strbuf *sb, const uint64_t *dims, uint64_t rank)
{
    sb_putc(sb, '[');
    for (uint64_t k = 0; k < rank; k++) {
        if (k) sb_putc(sb, ',');
        j_u64(sb, dims[k]);
    }
    sb_putc(sb, ']');
}

char *ckpt_stats_json(const ckpt_stats *s)
{
    strbuf sb = {0};
    j_stats(&sb, s);
    return sb_take(&sb);
}
