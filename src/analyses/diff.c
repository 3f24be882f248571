/* Every difference between two layouts (a checkpoint's, a state file's shapes, or a layout
 * JSON): slot count, ranks, shapes, sizes, trainability, sharing, dtype, configuration and
 * random-counter status. What one side does not state is not compared. */
#include "analyses/analyses.h"

#include <stdlib.h>

typedef struct differ {
    strbuf *sb;
    size_t count;
    char *first; /* the first difference's message (ckpt_diff_first_message) */
} differ;

/* Opens {"field","slot","a": ... the caller writes a, then b via mid(), then ends with text. */
static void open_diff(differ *d, const char *field, uint64_t slot)
{
    sb_printf(d->sb, "%s{\"field\":\"%s\",\"slot\":", d->count++ ? "," : "", field);
    j_slot(d->sb, slot);
    sb_puts(d->sb, ",\"a\":");
}

/* The closing "text" (the difference in words) and "message" (with the slot named). */
static void close_diff(differ *d, uint64_t slot, strbuf *text)
{
    sb_puts(d->sb, ",\"text\":");
    j_string(d->sb, text->failed || !text->data ? "" : text->data);
    sb_puts(d->sb, ",\"message\":");
    strbuf m = {0};
    if (slot != CKPT_NONE) sb_printf(&m, "parameter %llu: ", (unsigned long long)slot);
    sb_puts(&m, text->failed || !text->data ? "" : text->data);
    j_string(d->sb, m.failed ? "" : m.data);
    if (!d->first && !m.failed) d->first = sb_take(&m);
    sb_free(&m);
    sb_puts(d->sb, "}");
    text->len = 0;
    if (text->data) text->data[0] = '\0';
}

static bool has_flags(const ckpt_schema *s)
{
    return ckpt_schema_flag_count(s) == ckpt_schema_count(s) && ckpt_schema_count(s) > 0;
}

static void size_value(strbuf *sb, const ckpt_schema *s, size_t i)
{
    bool too_big;
    uint64_t v = ckpt_schema_size(s, i, &too_big);
    if (!too_big) {
        j_u64(sb, v);
        return;
    }
    sb_puts(sb, "\"");
    ckpt_shape_size_print(sb, ckpt_schema_dims(s, i), ckpt_schema_rank(s, i));
    sb_puts(sb, "\"");
}

static void rep_text(strbuf *sb, uint64_t r)
{
    if (r == CKPT_NONE) sb_puts(sb, "none");
    else sb_printf(sb, "%llu", (unsigned long long)r);
}

static void slots(differ *d, const ckpt_schema *a, const ckpt_schema *b, strbuf *t)
{
    size_t na = ckpt_schema_count(a), nb = ckpt_schema_count(b), both = na < nb ? na : nb;
    bool flags = has_flags(a) && has_flags(b);
    if (na != nb) {
        open_diff(d, "count", CKPT_NONE);
        j_u64(d->sb, na);
        sb_puts(d->sb, ",\"b\":");
        j_u64(d->sb, nb);
        sb_printf(t, "parameter count: %zu vs %zu", na, nb);
        close_diff(d, CKPT_NONE, t);
    }
    for (size_t i = 0; i < both; i++) {
        uint64_t ra = ckpt_schema_rank(a, i), rb = ckpt_schema_rank(b, i);
        if (ra != rb) {
            open_diff(d, "rank", i);
            j_u64(d->sb, ra);
            sb_puts(d->sb, ",\"b\":");
            j_u64(d->sb, rb);
            sb_printf(t, "rank %llu vs %llu", (unsigned long long)ra, (unsigned long long)rb);
            close_diff(d, i, t);
        }
        if (!ckpt_schema_same_shape(a, i, b, i)) {
            open_diff(d, "shape", i);
            j_shape(d->sb, a, i);
            sb_puts(d->sb, ",\"b\":");
            j_shape(d->sb, b, i);
            sb_puts(t, "shape ");
            ckpt_schema_print_shape(t, a, i);
            sb_puts(t, " vs ");
            ckpt_schema_print_shape(t, b, i);
            close_diff(d, i, t);
            bool big_a, big_b;
            uint64_t sa = ckpt_schema_size(a, i, &big_a), sbz = ckpt_schema_size(b, i, &big_b);
            if (big_a != big_b || sa != sbz || big_a) {
                open_diff(d, "size", i);
                size_value(d->sb, a, i);
                sb_puts(d->sb, ",\"b\":");
                size_value(d->sb, b, i);
                sb_puts(t, "size ");
                ckpt_shape_size_print(t, ckpt_schema_dims(a, i), ra);
                sb_puts(t, " vs ");
                ckpt_shape_size_print(t, ckpt_schema_dims(b, i), rb);
                close_diff(d, i, t);
            }
        }
        if (!flags) continue;
        bool ga = ckpt_schema_requires_grad(a, i), gb = ckpt_schema_requires_grad(b, i);
        if (ga != gb) {
            open_diff(d, "requiresGrad", i);
            sb_puts(d->sb, ga ? "true,\"b\":" : "false,\"b\":");
            sb_puts(d->sb, gb ? "true" : "false");
            sb_printf(t, "%s vs %s", ga ? "trainable" : "frozen", gb ? "trainable" : "frozen");
            close_diff(d, i, t);
        }
        uint64_t pa = ckpt_schema_representative(a, i), pb = ckpt_schema_representative(b, i);
        if (pa != pb) {
            open_diff(d, "representative", i);
            j_slot(d->sb, pa);
            sb_puts(d->sb, ",\"b\":");
            j_slot(d->sb, pb);
            sb_puts(t, "representative ");
            rep_text(t, pa);
            sb_puts(t, " vs ");
            rep_text(t, pb);
            close_diff(d, i, t);
        }
    }
    for (size_t i = both; i < na || i < nb; i++) {
        bool first = i < na;
        const ckpt_schema *s = first ? a : b;
        open_diff(d, "slot", i);
        if (first) j_shape(d->sb, a, i);
        else sb_puts(d->sb, "null");
        sb_puts(d->sb, ",\"b\":");
        if (!first) j_shape(d->sb, b, i);
        else sb_puts(d->sb, "null");
        ckpt_schema_print_shape(t, s, i);
        sb_printf(t, " only in the %s", first ? "first" : "second");
        close_diff(d, i, t);
    }
}

static const char *dtype_text(int dtype) { return dtype == CKPT_FLOAT64 ? "float64" : "float32"; }

static void config(differ *d, const ckpt_config *a, const ckpt_config *b, strbuf *t)
{
    if (a->kind != b->kind) {
        const char *ka = ckpt_kind_name(a->kind == CKPT_ADAMW ? CKPT_ADAMW : CKPT_ADAM),
                   *kb = ckpt_kind_name(b->kind == CKPT_ADAMW ? CKPT_ADAMW : CKPT_ADAM);
        open_diff(d, "config.kind", CKPT_NONE);
        sb_printf(d->sb, "\"%s\",\"b\":\"%s\"", ka, kb);
        sb_printf(t, "optimizer: %s vs %s", ka, kb);
        close_diff(d, CKPT_NONE, t);
    }
    static const char *const names[4] = {"beta1", "beta2", "epsilon", "weightDecay"};
    const uint64_t wa[4] = {a->beta1, a->beta2, a->epsilon, a->weight_decay};
    const uint64_t wb[4] = {b->beta1, b->beta2, b->epsilon, b->weight_decay};
    for (int k = 0; k < 4; k++) {
        if (wa[k] == wb[k]) continue;
        strbuf va = {0}, vb = {0};
        j_double(&va, ckpt_double_from_bits(wa[k]));
        j_double(&vb, ckpt_double_from_bits(wb[k]));
        sb_printf(d->sb, "%s{\"field\":\"config.%s\",\"slot\":null,\"a\":%s,\"b\":%s,\"aBits\":", d->count++ ? "," : "",
                  names[k], va.failed ? "null" : va.data, vb.failed ? "null" : vb.data);
        j_bits(d->sb, wa[k]);
        sb_puts(d->sb, ",\"bBits\":");
        j_bits(d->sb, wb[k]);
        /* decoded values first; the bit patterns tell apart what prints alike (-0 and 0) */
        sb_printf(t, "%s: %s vs %s (bits 0x%016llx vs 0x%016llx)", names[k], va.failed ? "?" : va.data,
                  vb.failed ? "?" : vb.data, (unsigned long long)wa[k], (unsigned long long)wb[k]);
        sb_free(&va);
        sb_free(&vb);
        close_diff(d, CKPT_NONE, t);
    }
}

static char *diff_json(const ckpt_expected *a, const ckpt_expected *b, char **first);

char *ckpt_diff_json(const ckpt_expected *a, const ckpt_expected *b) { return diff_json(a, b, NULL); }

int ckpt_diff_first(const ckpt_expected *a, const ckpt_expected *b, char **json, char **first)
{
    *first = NULL;
    *json = diff_json(a, b, first);
    if (*json) return 0;
    free(*first);
    *first = NULL;
    return CKPT_E_NO_MEMORY;
}

static char *diff_json(const ckpt_expected *a, const ckpt_expected *b, char **first)
{
    strbuf sb = {0}, t = {0};
    differ d = {&sb, 0, NULL};
    sb_puts(&sb, "[");
    if (a->schema && b->schema) slots(&d, a->schema, b->schema, &t);
    if (a->dtype != CKPT_DTYPE_ANY && b->dtype != CKPT_DTYPE_ANY && a->dtype != b->dtype) {
        open_diff(&d, "dtype", CKPT_NONE);
        sb_printf(&sb, "\"%s\",\"b\":\"%s\"", dtype_text(a->dtype), dtype_text(b->dtype));
        sb_printf(&t, "moment dtype: %s vs %s", dtype_text(a->dtype), dtype_text(b->dtype));
        close_diff(&d, CKPT_NONE, &t);
    }
    if (a->config && b->config) config(&d, a->config, b->config, &t);
    int ca = a->keeps_random_counter, cb = b->keeps_random_counter;
    if (ca >= 0 && cb >= 0 && ca != cb) {
        open_diff(&d, "randomCounter", CKPT_NONE);
        sb_printf(&sb, "%s,\"b\":%s", ca ? "true" : "false", cb ? "true" : "false");
        sb_printf(&t, "random counter: %s vs %s", ca ? "kept" : "none", cb ? "kept" : "none");
        close_diff(&d, CKPT_NONE, &t);
    }
    sb_puts(&sb, "]");
    bool failed = t.failed;
    sb_free(&t);
    if (failed) sb.failed = true;
    if (first) *first = d.first;
    else free(d.first);
    return sb_take(&sb);
}
