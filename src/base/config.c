/* The optimizer configuration as values (format.md 4's fields): raw binary64 bit patterns,
 * compared bit for bit, and their JSON. The reference's validation of them, with its texts, is
 * TLADAMF's (families/tladamf/validate.c). */
#include "base/config.h"
#include "base/json_write.h"

#include <string.h>

uint64_t ckpt_bits_from_double(double x)
{
    uint64_t b;
    memcpy(&b, &x, sizeof b);
    return b;
}

double ckpt_double_from_bits(uint64_t bits)
{
    double x;
    memcpy(&x, &bits, sizeof x);
    return x;
}

unsigned ckpt_config_differences(const ckpt_config *a, int da, const ckpt_config *b, int db)
{
    return (da != db ? CKPT_CONFIG_DTYPE : 0) | (a->kind != b->kind ? CKPT_CONFIG_KIND : 0) |
           (a->beta1 != b->beta1 ? CKPT_CONFIG_BETA1 : 0) | (a->beta2 != b->beta2 ? CKPT_CONFIG_BETA2 : 0) |
           (a->epsilon != b->epsilon ? CKPT_CONFIG_EPSILON : 0) |
           (a->weight_decay != b->weight_decay ? CKPT_CONFIG_WEIGHT_DECAY : 0);
}

bool ckpt_config_same(const ckpt_config *a, ckpt_dtype da, const ckpt_config *b, ckpt_dtype db)
{
    return ckpt_config_differences(a, da, b, db) == 0;
}

const char *ckpt_kind_name(uint64_t kind) { return kind == CKPT_ADAMW ? "adamw" : kind == CKPT_ADAM ? "adam" : NULL; }

static const char *const config_fields[4] = {"beta1", "beta2", "epsilon", "weightDecay"};

static uint64_t config_word(const ckpt_config *c, int k)
{
    const uint64_t w[4] = {c->beta1, c->beta2, c->epsilon, c->weight_decay};
    return w[k];
}

static const char *kind_name(uint64_t kind)
{
    const char *name = ckpt_kind_name(kind);
    return name ? name : "invalid";
}
static const char *dtype_name(int dtype)
{
    return dtype == CKPT_FLOAT64 ? "float64" : dtype == CKPT_FLOAT32 ? "float32" : "any";
}

void j_config(strbuf *sb, const ckpt_config *c) { j_config_as(sb, c, true); }

void j_config_as(strbuf *sb, const ckpt_config *c, bool kind_known)
{
    if (kind_known) sb_printf(sb, "{\"kind\":\"%s\"", kind_name(c->kind));
    else sb_puts(sb, "{\"kind\":null");
    for (int k = 0; k < 4; k++) {
        sb_printf(sb, ",\"%s\":", config_fields[k]);
        j_double(sb, ckpt_double_from_bits(config_word(c, k)));
    }
    sb_puts(sb, ",\"bits\":{");
    for (int k = 0; k < 4; k++) {
        sb_printf(sb, "%s\"%s\":", k ? "," : "", config_fields[k]);
        j_bits(sb, config_word(c, k));
    }
    sb_puts(sb, "}}");
}

/* [{"field","file","expected","fileBits"?,"expectedBits"?}] for the fields that differ. */
void j_config_diff(strbuf *sb, const ckpt_config_diff *d)
{
    unsigned mask = ckpt_config_differences(&d->file, d->file_dtype, &d->expected, d->expected_dtype);
    bool first = true;
    sb_puts(sb, "[");
    if (mask & CKPT_CONFIG_DTYPE) {
        sb_printf(sb, "{\"field\":\"dtype\",\"file\":\"%s\",\"expected\":\"%s\"}", dtype_name(d->file_dtype),
                  dtype_name(d->expected_dtype));
        first = false;
    }
    if (mask & CKPT_CONFIG_KIND) {
        sb_printf(sb, "%s{\"field\":\"kind\",\"file\":\"%s\",\"expected\":\"%s\"}", first ? "" : ",",
                  kind_name(d->file.kind), kind_name(d->expected.kind));
        first = false;
    }
    for (int k = 0; k < 4; k++) {
        if (!(mask & (CKPT_CONFIG_BETA1 << k))) continue;
        sb_printf(sb, "%s{\"field\":\"%s\",\"file\":", first ? "" : ",", config_fields[k]);
        j_double(sb, ckpt_double_from_bits(config_word(&d->file, k)));
        sb_puts(sb, ",\"expected\":");
        j_double(sb, ckpt_double_from_bits(config_word(&d->expected, k)));
        sb_puts(sb, ",\"fileBits\":");
        j_bits(sb, config_word(&d->file, k));
        sb_puts(sb, ",\"expectedBits\":");
        j_bits(sb, config_word(&d->expected, k));
        sb_puts(sb, "}");
        first = false;
    }
    sb_puts(sb, "]");
}
