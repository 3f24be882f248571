/* The report: ownership, warnings, and its JSON form (DESIGN.md "JSON report"). Integers are
 * JSON numbers up to 2^53 - 1 and decimal strings beyond; doubles print in the shortest form
 * that reads back bit for bit; non-finite values print as the strings "NaN", "Infinity". */
#include "internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void ckpt_report_free(ckpt_report *rep)
{
    if (!rep) return;
    ckpt_schema_free(rep->schema);
    for (size_t k = 0; k < rep->entries_len; k++) {
        ckpt_stats_free(rep->entries[k].m);
        ckpt_stats_free(rep->entries[k].v);
    }
    free(rep->entries);
    for (size_t k = 0; k < rep->warnings_len; k++) free(rep->warnings[k]);
    free(rep->warnings);
    ckpt_error_clear(&rep->error);
    free(rep);
}

bool ckpt_report_warn(ckpt_report *rep, const char *fmt, ...)
{
    char text[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    if (n < 0) return false;
    char **w = realloc(rep->warnings, (rep->warnings_len + 1) * sizeof *w);
    if (!w) return false;
    rep->warnings = w;
    size_t len = strlen(text);
    if (!(w[rep->warnings_len] = malloc(len + 1))) return false;
    memcpy(w[rep->warnings_len++], text, len + 1);
    return true;
}

/* ---- JSON ---- */

#define SAFE_INTEGER 9007199254740991ull   /* 2^53 - 1 */

/* Decimal digits without printf: reports of a million slots print millions of integers. */
static void j_u64(strbuf *sb, uint64_t v)
{
    char buf[24];
    char *end = buf + sizeof buf, *p = end;
    bool quoted = v > SAFE_INTEGER;
    if (quoted) *--p = '"';
    do {
        *--p = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    if (quoted) *--p = '"';
    sb_put(sb, p, (size_t)(end - p));
}

static void j_double(strbuf *sb, double x)
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
    for (int prec = 1; prec <= 17; prec++) {   /* the shortest text that reads back exactly */
        snprintf(buf, sizeof buf, "%.*g", prec, x);
        if (strtod(buf, NULL) == x) break;
    }
    if (x == 0 && signbit(x)) strcpy(buf, "-0");
    sb_puts(sb, buf);
}

static void j_string(strbuf *sb, const char *s)
{
    sb_puts(sb, "\"");
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\') sb_printf(sb, "\\%c", *p);
        else if (*p < 0x20) sb_printf(sb, "\\u%04x", *p);
        else sb_put(sb, (const char *)p, 1);
    }
    sb_puts(sb, "\"");
}

/* ,"key":value for an integer field */
static void j_key_u64(strbuf *sb, const char *key, uint64_t v)
{
    sb_printf(sb, ",\"%s\":", key);
    j_u64(sb, v);
}

static void j_bits(strbuf *sb, uint64_t b) { sb_printf(sb, "\"0x%016llx\"", (unsigned long long)b); }

static void j_stats(strbuf *sb, const ckpt_stats *s)
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
    j_key_u64(sb, "nan", s->nan);
    j_key_u64(sb, "inf", s->inf);
    j_key_u64(sb, "zero", s->zero);
    j_key_u64(sb, "negative", s->negative);
    sb_printf(sb, ",\"histogram\":{\"log2Min\":%d,\"counts\":[", (int)s->hist_log2_min);
    for (uint32_t k = 0; k < s->hist_len; k++) {
        if (k) sb_puts(sb, ",");
        j_u64(sb, s->hist[k]);
    }
    sb_puts(sb, "]}}");
}

static void j_schema(strbuf *sb, const ckpt_schema *s, bool complete, bool arrays)
{
    if (!arrays) {
        sb_puts(sb, "{\"shapes\":[],\"sizes\":[],\"requiresGrad\":[],\"representatives\":null,\"effectiveRepresentatives\":null}");
        return;
    }
    size_t n = ckpt_schema_count(s);
    sb_puts(sb, "{\"shapes\":[");
    for (size_t i = 0; i < n; i++) {
        sb_puts(sb, i ? ",[" : "[");
        uint64_t rank = ckpt_schema_rank(s, i);
        const uint64_t *dims = ckpt_schema_dims(s, i);
        for (uint64_t k = 0; k < rank; k++) {
            if (k) sb_puts(sb, ",");
            j_u64(sb, dims[k]);
        }
        sb_puts(sb, "]");
    }
    sb_puts(sb, "],\"sizes\":[");
    for (size_t i = 0; i < n; i++) {
        if (i) sb_puts(sb, ",");
        bool too_big;
        uint64_t size = ckpt_schema_size(s, i, &too_big);
        if (!too_big) j_u64(sb, size);
        else {
            sb_puts(sb, "\"");
            ckpt_shape_size_print(sb, ckpt_schema_dims(s, i), ckpt_schema_rank(s, i));
            sb_puts(sb, "\"");
        }
    }
    sb_puts(sb, "],\"requiresGrad\":[");
    for (size_t i = 0; i < s->flag_count; i++) sb_puts(sb, i ? (s->requires_grad[i] ? ",true" : ",false") : (s->requires_grad[i] ? "true" : "false"));
    sb_puts(sb, "],\"representatives\":");
    /* The stored map (null when the file keeps none), then representative?(i) for every slot. */
    for (int pass = 0; pass < 2; pass++) {
        if (pass == 0 && !ckpt_schema_has_map(s)) {
            sb_puts(sb, "null,\"effectiveRepresentatives\":");
            continue;
        }
        if (pass == 1 && !complete) {
            sb_puts(sb, "null");
            break;
        }
        sb_puts(sb, "[");
        for (size_t i = 0; i < n; i++) {
            if (i) sb_puts(sb, ",");
            uint64_t r = ckpt_schema_representative(s, i);
            if (r == CKPT_NONE) sb_puts(sb, "null");
            else j_u64(sb, r);
        }
        sb_puts(sb, pass == 0 ? "],\"effectiveRepresentatives\":" : "]");
    }
    sb_puts(sb, "}");
}

static void j_entry(strbuf *sb, const ckpt_entry_info *e)
{
    sb_puts(sb, "{\"id\":");
    j_u64(sb, e->id);
    j_key_u64(sb, "step", e->step);
    j_key_u64(sb, "count", e->count);
    j_key_u64(sb, "offset", e->offset);
    if (e->m || e->v) {
        sb_puts(sb, ",\"m\":");
        j_stats(sb, e->m);
        sb_puts(sb, ",\"v\":");
        j_stats(sb, e->v);
    }
    sb_puts(sb, "}");
}

static char *finish(strbuf *sb);

char *ckpt_entry_json(const ckpt_entry_info *e)
{
    strbuf sb = {0};
    j_entry(&sb, e);
    return finish(&sb);
}

static void j_error(strbuf *sb, const ckpt_error *err)
{
    sb_printf(sb, "{\"code\":%d,\"message\":", err->code);
    j_string(sb, err->message ? err->message : "");
    sb_puts(sb, ",\"offset\":");
    if (err->offset != CKPT_NONE) j_u64(sb, err->offset);
    else sb_puts(sb, "null");
    sb_puts(sb, ",\"hint\":");
    if (err->hint) j_string(sb, err->hint);
    else sb_puts(sb, "null");
    sb_puts(sb, "}");
}

static void j_schema_facts(strbuf *sb, const ckpt_schema *s)
{
    sb_printf(sb, "\"wellFormed\":%s,\"optimizerStateCount\":", ckpt_schema_is_well_formed(s) ? "true" : "false");
    j_u64(sb, ckpt_schema_optimizer_state_count(s));
    sb_puts(sb, ",\"trainableCount\":");
    j_u64(sb, ckpt_schema_trainable_count(s));
    sb_printf(sb, ",\"hasAliases\":%s", ckpt_schema_has_aliases(s) ? "true" : "false");
}

static char *finish(strbuf *sb)
{
    if (sb->failed) {
        sb_free(sb);
        return NULL;
    }
    return sb->data;
}

char *ckpt_schema_json(const ckpt_schema *s)
{
    strbuf sb = {0};
    j_schema(&sb, s, true, true);
    sb.len--;   /* reopen the object */
    sb_puts(&sb, ",\"tags\":[");
    for (size_t i = 0; i < ckpt_schema_count(s); i++) {
        if (i) sb_puts(&sb, ",");
        j_u64(&sb, ckpt_schema_tag(s, i));
    }
    sb_puts(&sb, "],");
    j_schema_facts(&sb, s);
    sb_puts(&sb, "}");
    return finish(&sb);
}

char *ckpt_error_json(const ckpt_error *err)
{
    strbuf sb = {0};
    if (err->code) j_error(&sb, err);
    else sb_puts(&sb, "null");
    return finish(&sb);
}

char *ckpt_report_json(const ckpt_report *rep) { return ckpt_report_json_opts(rep, 0); }

char *ckpt_report_json_opts(const ckpt_report *rep, unsigned opts)
{
    strbuf sb = {0};
    bool family = rep->magic_ok;
    sb_printf(&sb, "{\"ok\":%s,\"family\":%s,\"name\":%s,\"version\":", rep->error.code ? "false" : "true",
              family ? "\"TLADAMF\"" : "null", family ? "\"CUDA Adam checkpoint\"" : "null");
    if (rep->has_version) j_u64(&sb, rep->version);
    else sb_puts(&sb, "null");
    sb_puts(&sb, ",\"size\":");
    if (rep->size != CKPT_NONE) j_u64(&sb, rep->size);
    else sb_puts(&sb, "null");
    sb_puts(&sb, ",\"dtype\":");
    sb_puts(&sb, rep->dtype == CKPT_FLOAT32 ? "\"float32\"" : rep->dtype == CKPT_FLOAT64 ? "\"float64\"" : "null");
    sb_puts(&sb, ",\"config\":");
    if (rep->has_config) {
        const ckpt_config *c = &rep->config;
        sb_printf(&sb, "{\"kind\":\"%s\",\"beta1\":", c->kind == CKPT_ADAMW ? "adamw" : "adam");
        j_double(&sb, ckpt_double_from_bits(c->beta1));
        sb_puts(&sb, ",\"beta2\":");
        j_double(&sb, ckpt_double_from_bits(c->beta2));
        sb_puts(&sb, ",\"epsilon\":");
        j_double(&sb, ckpt_double_from_bits(c->epsilon));
        sb_puts(&sb, ",\"weightDecay\":");
        j_double(&sb, ckpt_double_from_bits(c->weight_decay));
        sb_puts(&sb, ",\"bits\":{\"beta1\":");
        j_bits(&sb, c->beta1);
        sb_puts(&sb, ",\"beta2\":");
        j_bits(&sb, c->beta2);
        sb_puts(&sb, ",\"epsilon\":");
        j_bits(&sb, c->epsilon);
        sb_puts(&sb, ",\"weightDecay\":");
        j_bits(&sb, c->weight_decay);
        sb_puts(&sb, "}}");
    } else {
        sb_puts(&sb, "null");
    }
    sb_puts(&sb, ",\"randomCounter\":");
    if (rep->counter_state == 1) j_u64(&sb, rep->random_counter);
    else sb_puts(&sb, "null");
    sb_printf(&sb, ",\"hasRandomCounter\":%s", rep->counter_state < 0 ? "null" : rep->counter_state ? "true" : "false");
    sb_puts(&sb, ",\"schema\":");
    if (rep->schema) j_schema(&sb, rep->schema, rep->schema_complete, !(opts & CKPT_JSON_NO_SCHEMA_ARRAYS));
    else sb_puts(&sb, "null");
    if (rep->schema && rep->schema_complete) {
        sb_puts(&sb, ",");
        j_schema_facts(&sb, rep->schema);
    } else {
        sb_puts(&sb, ",\"wellFormed\":null,\"optimizerStateCount\":null,\"trainableCount\":null,\"hasAliases\":null");
    }
    sb_puts(&sb, ",\"entryCount\":");
    if (rep->has_entry_count) j_u64(&sb, rep->entry_count);
    else sb_puts(&sb, "null");
    sb_puts(&sb, ",\"entries\":[");
    for (size_t k = 0; k < rep->entries_len && !(opts & CKPT_JSON_NO_ENTRIES); k++) {
        if (k) sb_puts(&sb, ",");
        j_entry(&sb, &rep->entries[k]);
    }
    sb_puts(&sb, "],\"warnings\":[");
    for (size_t k = 0; k < rep->warnings_len; k++) {
        if (k) sb_puts(&sb, ",");
        j_string(&sb, rep->warnings[k]);
    }
    sb_puts(&sb, "],\"error\":");
    if (rep->error.code) j_error(&sb, &rep->error);
    else sb_puts(&sb, "null");
    sb_puts(&sb, "}");
    return finish(&sb);
}
