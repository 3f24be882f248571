/* The report's JSON form (docs/report.md), built whole or streamed into a sink in pieces so that
 * a million slots never need a 50 MB string. The common members and the shapes of an optimizer
 * report and of a model-state report are here; a family adds its own members (json_body). */
#include "core/report_json.h"

#include <stdlib.h>

/* ---- JSON ---- */

/* A text being built, flushed to a sink (when there is one) whenever it grows past a chunk. */
typedef struct ckpt_jw {
    strbuf sb;
    const ckpt_sink *out;
    ckpt_error *err;
    int rc;
} jw;

strbuf *ckpt_jw_text(ckpt_jw *w) { return &w->sb; }

#define JW_CHUNK (1024 * 1024) /* a sink call per megabyte: each is a call into JS in wasm */

static void jw_flush(jw *w, bool always)
{
    if (!w->out || w->rc || (!always && w->sb.len < JW_CHUNK)) return;
    if (w->sb.failed) {
        w->rc = ckpt_fail_oom(w->err);
        return;
    }
    if (w->sb.len) w->rc = ckpt_sink_bytes(w->out, w->sb.data, w->sb.len, w->err);
    w->sb.len = 0;
}

static void j_schema_arrays(jw *w, const ckpt_schema *s, bool complete)
{
    strbuf *sb = &w->sb;
    size_t n = ckpt_schema_count(s);
    sb_lit(sb, "\"shapes\":[");
    for (size_t i = 0; i < n; i++) {
        if (i) sb_putc(sb, ',');
        j_shape(sb, s, i);
        jw_flush(w, false);
    }
    sb_lit(sb, "],\"sizes\":[");
    for (size_t i = 0; i < n; i++) {
        if (i) sb_putc(sb, ',');
        bool too_big;
        uint64_t size = ckpt_schema_size(s, i, &too_big);
        if (!too_big) j_u64(sb, size);
        else {
            sb_puts(sb, "\"");
            ckpt_shape_size_print(sb, ckpt_schema_dims(s, i), ckpt_schema_rank(s, i));
            sb_puts(sb, "\"");
        }
        jw_flush(w, false);
    }
    sb_lit(sb, "],\"requiresGrad\":[");
    size_t flags = ckpt_schema_flag_count(s);
    for (size_t i = 0; i < flags; i++) {
        if (i) sb_putc(sb, ',');
        if (ckpt_schema_requires_grad(s, i)) sb_lit(sb, "true");
        else sb_lit(sb, "false");
        jw_flush(w, false);
    }
    /* The stored map (null when the file keeps none), then representative?(i) for every slot. */
    for (int pass = 0; pass < 2; pass++) {
        sb_puts(sb, pass == 0 ? "],\"representatives\":" : ",\"effectiveRepresentatives\":");
        if ((pass == 0 && !ckpt_schema_has_map(s)) || !complete) {
            sb_puts(sb, "null");
            if (pass == 1) sb_puts(sb, "");
            continue;
        }
        sb_putc(sb, '[');
        for (size_t i = 0; i < n; i++) {
            if (i) sb_putc(sb, ',');
            j_slot(sb, ckpt_schema_representative(s, i));
            jw_flush(w, false);
        }
        sb_putc(sb, ']');
    }
}

/* "wellFormed":…,"optimizerStateCount":…,"trainableCount":…,"hasAliases":…,"elementCounts":{…} */
static void j_schema_facts(strbuf *sb, const ckpt_schema *s)
{
    sb_printf(sb, "\"wellFormed\":%s,\"optimizerStateCount\":", ckpt_schema_is_well_formed(s) ? "true" : "false");
    j_u64(sb, ckpt_schema_optimizer_state_count(s));
    sb_puts(sb, ",\"trainableCount\":");
    j_u64(sb, ckpt_schema_trainable_count(s));
    sb_printf(sb, ",\"hasAliases\":%s", ckpt_schema_has_aliases(s) ? "true" : "false");
    uint64_t owned, tied, frozen;
    if (!ckpt_schema_element_counts(s, &owned, &tied, &frozen)) {
        sb_puts(sb, ",\"elementCounts\":null");
        return;
    }
    sb_puts(sb, ",\"elementCounts\":{\"owned\":");
    j_u64(sb, owned);
    sb_puts(sb, ",\"tied\":");
    j_u64(sb, tied);
    sb_puts(sb, ",\"frozen\":");
    j_u64(sb, frozen);
    sb_puts(sb, "}");
}

/* The slots the sharing rule rejects (format.md 5): a viewer draws them as broken. */
static void j_broken_slots(strbuf *sb, const ckpt_schema *s)
{
    if (ckpt_schema_is_well_formed(s)) {
        sb_lit(sb, "[]");
        return;
    }
    sb_puts(sb, "[");
    size_t n = ckpt_schema_count(s);
    uint8_t *marks = malloc(n ? n : 1);
    if (!marks) {
        sb->failed = true;
        return;
    }
    ckpt_schema_mark_sharing_faults(s, marks);
    bool first = true;
    for (size_t i = 0; i < n; i++) {
        if (!marks[i]) continue;
        if (!first) sb_puts(sb, ",");
        j_u64(sb, i);
        first = false;
    }
    free(marks);
    sb_puts(sb, "]");
}

static void j_entry_fields(strbuf *sb, const ckpt_entry_info *e, const ckpt_stats *m, const ckpt_stats *v)
{
    sb_lit(sb, "\"id\":");
    j_u64(sb, e->id);
    sb_lit(sb, ",\"step\":");
    j_u64(sb, e->step);
    sb_lit(sb, ",\"count\":");
    j_u64(sb, e->count);
    sb_lit(sb, ",\"offset\":");
    j_u64(sb, e->offset);
    if (m && v) {
        sb_puts(sb, ",\"m\":");
        j_stats(sb, m);
        sb_puts(sb, ",\"v\":");
        j_stats(sb, v);
        sb_puts(sb, ",\"unhealthy\":");
        j_u64(sb, ckpt_entry_unhealthy(m, v));
    }
}

static void j_offset_field(strbuf *sb, const char *key, uint64_t v, bool first)
{
    sb_printf(sb, "%s\"%s\":", first ? "" : ",", key);
    j_slot(sb, v);
}

/* The members of an optimizer report (a family's json_body, or its first part) */
void ckpt_report_json_optimizer(jw *w, const ckpt_report *rep, bool bulk)
{
    ckpt_report_json_optimizer_more(w, rep, bulk, NULL);
}

void ckpt_report_json_optimizer_more(jw *w, const ckpt_report *rep, bool bulk, ckpt_entry_json_fn more)
{
    strbuf *sb = &w->sb;
    sb_puts(sb, ",\"config\":");
    if (rep->has_config) j_config(sb, &rep->config);
    else sb_puts(sb, "null");
    /* the files do not say Adam or AdamW (and no kind was given): config.kind is Adam's, read as
     * no decay term, not a fact; null when neither the kind nor a configuration was read */
    sb_printf(sb, ",\"kindUnknown\":%s", ckpt_kind_unknown(rep) ? "true" : rep->has_config ? "false" : "null");
    sb_puts(sb, ",\"randomCounter\":");
    if (rep->tladamf.counter_state == 1) j_u64(sb, rep->tladamf.random_counter);
    else sb_puts(sb, "null");
    sb_printf(sb, ",\"hasRandomCounter\":%s",
              rep->tladamf.counter_state < 0 ? "null"
              : rep->tladamf.counter_state   ? "true"
                                             : "false");
    sb_puts(sb, ",\"schema\":");
    const ckpt_schema *s = rep->schema;
    if (!s) sb_puts(sb, "null");
    else {
        sb_puts(sb, "{");
        if (bulk) j_schema_arrays(w, s, rep->schema_complete);
        else
            sb_puts(sb, "\"shapes\":[],\"sizes\":[],\"requiresGrad\":[],\"representatives\":null,"
                        "\"effectiveRepresentatives\":null");
        sb_puts(sb, ",\"brokenSlots\":");
        if (rep->schema_complete) j_broken_slots(sb, s);
        else sb_puts(sb, "null");
        sb_puts(sb, "}");
    }
    sb_puts(sb, ",\"slotCount\":");
    if (s) j_u64(sb, ckpt_schema_count(s));
    else sb_puts(sb, "null");
    sb_puts(sb, ",");
    if (s && rep->schema_complete) j_schema_facts(sb, s);
    else
        sb_puts(sb, "\"wellFormed\":null,\"optimizerStateCount\":null,\"trainableCount\":null,\"hasAliases\":null,"
                    "\"elementCounts\":null");
    sb_puts(sb, ",\"offsets\":{");
    j_offset_field(sb, "schema", rep->schema_offset, true);
    j_offset_field(sb, "tags", rep->tladamf.tags_offset, false);
    j_offset_field(sb, "entries", rep->entries_offset, false);
    sb_puts(sb, "},\"entryCount\":");
    if (rep->has_entry_count) j_u64(sb, rep->entry_count);
    else sb_puts(sb, "null");
    sb_puts(sb, ",\"entries\":[");
    for (size_t k = 0; (bulk || more) && k < rep->entries_len; k++) {
        const ckpt_entry_info *e = &rep->entries[k];
        if (k) sb_putc(sb, ',');
        sb_putc(sb, '{');
        j_entry_fields(sb, e, e->m, e->v);
        if (more) more(sb, rep, k);
        sb_putc(sb, '}');
        jw_flush(w, false);
    }
    sb_puts(sb, "]");
}

/* The members of a model-state report (a family's json_body, or its first part) */
void ckpt_report_json_model(jw *w, const ckpt_report *rep, bool bulk)
{
    strbuf *sb = &w->sb;
    sb_puts(sb, ",\"tensorCount\":");
    if (rep->schema) j_u64(sb, rep->schema_declared_count);
    else sb_puts(sb, "null");
    sb_puts(sb, ",\"offsets\":{");
    j_offset_field(sb, "tensors", rep->schema_offset, true);
    sb_puts(sb, "},\"tensors\":[");
    /* a family that stores a name and a dtype per tensor (safetensors) lists them even without
     * the bulk arrays: the columns hold neither */
    const bool names = rep->tensors_len && rep->tensors[0].name;
    for (size_t k = 0; (bulk || names) && k < rep->tensors_len; k++) {
        const ckpt_tensor_info *t = &rep->tensors[k];
        sb_puts(sb, k ? ",{" : "{");
        if (names) {
            sb_puts(sb, "\"name\":");
            j_string(sb, t->name ? t->name : "");
            sb_puts(sb, ",\"dtype\":");
            if (ckpt_dtype_name(t->dtype)) j_string(sb, ckpt_dtype_name(t->dtype));
            else sb_puts(sb, "null");
            if (!bulk) {
                sb_putc(sb, '}');
                continue;
            }
            sb_putc(sb, ',');
        }
        sb_puts(sb, "\"shape\":");
        j_shape(sb, rep->schema, k);
        sb_puts(sb, ",\"count\":");
        j_u64(sb, t->count);
        sb_puts(sb, ",\"offset\":");
        j_u64(sb, t->offset);
        sb_puts(sb, ",\"dataOffset\":");
        j_u64(sb, t->data_offset);
        if (t->values) {
            sb_puts(sb, ",\"values\":");
            j_stats(sb, t->values);
            sb_puts(sb, ",\"unhealthy\":");
            j_u64(sb, t->unhealthy);
        }
        sb_puts(sb, "}");
        jw_flush(w, false);
    }
    sb_puts(sb, "]");
}

static void j_report(jw *w, const ckpt_report *rep, bool bulk)
{
    strbuf *sb = &w->sb;
    const ckpt_family *f = rep->family;
    sb_printf(sb, "{\"ok\":%s,\"family\":", rep->error.code ? "false" : "true");
    if (f) {
        j_string(sb, f->magic);
        sb_puts(sb, ",\"name\":");
        j_string(sb, f->name);
        unsigned role = f->impl->role_of ? f->impl->role_of(rep) : f->role;
        sb_printf(sb, ",\"kind\":\"%s\"", role & CKPT_ROLE_OPTIMIZER ? "optimizer" : "state");
    } else {
        sb_puts(sb, "null,\"name\":null,\"kind\":null");
    }
    sb_puts(sb, ",\"version\":");
    if (rep->has_version) j_u64(sb, rep->version);
    else sb_puts(sb, "null");
    sb_puts(sb, ",\"size\":");
    j_slot(sb, rep->size);
    sb_printf(sb, ",\"statistics\":%s", rep->statistics ? "true" : "false");
    sb_puts(sb, ",\"dtype\":");
    if (ckpt_dtype_name(rep->dtype)) j_string(sb, ckpt_dtype_name(rep->dtype));
    else sb_puts(sb, "null");
    /* the family's own members; a file whose magic matches none reads as the optimizer's, all
     * null (docs/report.md) */
    (f ? f->impl->json_body : ckpt_report_json_optimizer)(w, rep, bulk);
    sb_puts(sb, ",\"warnings\":[");
    for (size_t k = 0; k < rep->warnings_len; k++) {
        if (k) sb_puts(sb, ",");
        j_string(sb, rep->warnings[k]);
    }
    sb_puts(sb, "],\"error\":");
    j_error(sb, &rep->error);
    sb_puts(sb, ",\"readers\":");
    if (f && f->impl->json_readers) f->impl->json_readers(sb, rep);
    else sb_puts(sb, "null");
    sb_puts(sb, "}");
}

char *ckpt_report_json_opts(const ckpt_report *rep, unsigned opts)
{
    jw w = {0};
    j_report(&w, rep, !(opts & CKPT_JSON_NO_BULK));
    return sb_take(&w.sb);
}

char *ckpt_report_json(const ckpt_report *rep) { return ckpt_report_json_opts(rep, 0); }

int ckpt_report_json_write(const ckpt_report *rep, const ckpt_sink *out, ckpt_error *err)
{
    jw w = {{0}, out, err, 0};
    j_report(&w, rep, true);
    sb_puts(&w.sb, "\n");
    jw_flush(&w, true);
    sb_free(&w.sb);
    return w.rc;
}

char *ckpt_entry_stats_json(const ckpt_entry_info *e, uint64_t slot, const ckpt_stats *m, const ckpt_stats *v)
{
    strbuf sb = {0};
    sb_puts(&sb, "{\"slot\":");
    j_u64(&sb, slot);
    sb_puts(&sb, ",\"owner\":");
    j_u64(&sb, e->id);
    sb_puts(&sb, ",");
    j_entry_fields(&sb, e, m, v);
    sb_puts(&sb, "}");
    return sb_take(&sb);
}

char *ckpt_schema_json(const ckpt_schema *s)
{
    jw w = {0};
    strbuf *sb = &w.sb;
    sb_puts(sb, "{");
    j_schema_arrays(&w, s, true);
    sb_puts(sb, ",\"tags\":[");
    for (size_t i = 0; i < ckpt_schema_count(s); i++) {
        if (i) sb_puts(sb, ",");
        j_u64(sb, ckpt_schema_tag(s, i));
    }
    sb_puts(sb, "],");
    j_schema_facts(sb, s);
    uint64_t slot;
    char *why = ckpt_schema_explain(s, &slot);
    if (why) {
        sb_puts(sb, ",\"problem\":{\"slot\":");
        j_slot(sb, slot);
        sb_puts(sb, ",\"reason\":");
        j_string(sb, why);
        sb_puts(sb, "}");
        free(why);
    }
    sb_puts(sb, "}");
    return sb_take(sb);
}
