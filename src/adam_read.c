/* Reading the TLADAMF family (FORMAT.md 4 and 5): one straight-line parser for both entry
 * points. With a destination (ckpt_load) it makes the trainer's checks in the reference
 * order; without one (ckpt_inspect) it treats the file's own schema as expected and adds the
 * inspection rules of FORMAT.md 5. Either way the report keeps everything read before an
 * error. */
#include "internal.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct parse {
    ckpt_reader *r;
    const ckpt_expected *exp;          /* NULL when inspecting */
    unsigned flags;
    ckpt_progress_fn progress;
    void *progress_ctx;
    ckpt_report *rep;
    ckpt_error *err;
    size_t entries_cap;
} parse;

#define TRY(expr)                                                                                  \
    do {                                                                                           \
        int rc_ = (expr);                                                                          \
        if (rc_) return rc_;                                                                       \
    } while (0)

/* ---- friendly hints for what is not a TLADAMF file (the reference text stays first) ---- */

static bool starts_with(const uint8_t *p, size_t n, const char *s)
{
    size_t k = strlen(s);
    return n >= k && memcmp(p, s, k) == 0;
}

/* The first bytes are still in the reader's buffer (its first refill starts at 0): no second
 * read, which a pipe could not serve. */
static void hint_for_foreign(const ckpt_reader *r, ckpt_error *err)
{
    const uint8_t *head = r->buf;
    size_t n = r->buf_pos == 0 ? (r->buf_len < 64 ? r->buf_len : 64) : 0;
    if (r->buf_pos != 0) return;
    if (n == 0) {
        ckpt_set_hint(err, "the file is empty");
        return;
    }
    /* FORMAT.md 6: the related families, named with their version and tensor count. */
    static const struct {
        const char *magic, *name;
    } related[] = {{"TLSF32B", "state"}, {"TLPF32B", "parameter"}};
    for (size_t k = 0; k < sizeof related / sizeof related[0]; k++) {
        if (!starts_with(head, n, related[k].magic)) continue;
        char text[256], detail[96] = "";
        if (n >= 23)
            snprintf(detail, sizeof detail, ", version %llu, %llu tensors", (unsigned long long)ckpt_get_u64le(head + 7),
                     (unsigned long long)ckpt_get_u64le(head + 15));
        snprintf(text, sizeof text,
                 "this is a TorchLean float32 %s checkpoint (%s%s), not optimizer state; ckptscope does not read that family yet",
                 related[k].name, related[k].magic, detail);
        ckpt_set_hint(err, text);
        return;
    }
    if (starts_with(head, n, "version https://git-lfs")) {
        ckpt_set_hint(err, "this is a Git LFS pointer file, not the checkpoint itself: fetch the real file "
                           "(git lfs pull)");
        return;
    }
    size_t k = 0;
    while (k < n && (head[k] == ' ' || head[k] == '\t' || head[k] == '\r' || head[k] == '\n')) k++;
    if (k < n && head[k] == '<') {
        ckpt_set_hint(err, "this looks like an HTML or XML page (a failed download?), not a checkpoint");
        return;
    }
    if (k < n && (head[k] == '{' || head[k] == '[')) {
        ckpt_set_hint(err, "this looks like JSON text (a layout description?), not a checkpoint");
        return;
    }
    size_t text = 0;
    for (size_t i = 0; i < n; i++) text += isprint(head[i]) || isspace(head[i]);
    if (text == n) ckpt_set_hint(err, "this looks like a text file, not a checkpoint");
}

/* ---- entries and statistics ---- */

static bool push_entry(parse *p, const ckpt_entry_info *e)
{
    ckpt_report *rep = p->rep;
    if (rep->entries_len == p->entries_cap) {
        size_t cap = p->entries_cap ? p->entries_cap * 2 : 16;
        ckpt_entry_info *q = realloc(rep->entries, cap * sizeof *q);
        if (!q) return false;
        rep->entries = q;
        p->entries_cap = cap;
    }
    rep->entries[rep->entries_len++] = *e;
    return true;
}

typedef struct scan {
    parse *p;
    ckpt_stats_acc acc;
    unsigned width;
    uint64_t done_at;      /* file offset reached */
} scan;

static int scan_chunk(void *ctx, const void *data, size_t elements)
{
    scan *s = ctx;
    if (s->width == 8) ckpt_stats_f64(&s->acc, data, elements);
    else ckpt_stats_f32(&s->acc, data, elements);
    s->done_at += (uint64_t)elements * s->width;
    parse *p = s->p;
    if (p->progress && p->progress(p->progress_ctx, s->done_at, p->r->src->size))
        return ckpt_fail(p->err, CKPT_E_CANCELLED, s->done_at, "statistics scan cancelled");
    return 0;
}

/* Read one payload: statistics when asked for (returned in *out), else skip it. */
static int payload(parse *p, uint64_t count, unsigned width, ckpt_stats **out)
{
    *out = NULL;
    if (!(p->flags & CKPT_INSPECT_STATS)) return ckpt_skip_payload(p->r, count, width, p->err);
    scan *s = malloc(sizeof *s);
    if (!s) return ckpt_fail_oom(p->err);
    s->p = p;
    s->width = width;
    s->done_at = p->r->pos;
    ckpt_stats_begin(&s->acc);
    int rc = ckpt_stream_payload(p->r, count, width, scan_chunk, s, p->err);
    if (!rc && !(*out = ckpt_stats_finish(&s->acc))) rc = ckpt_fail_oom(p->err);
    free(s);
    return rc;
}

static void warn_unhealthy(parse *p, uint64_t id, const ckpt_entry_info *e)
{
    const ckpt_stats *m = e->m, *v = e->v;
    if (m && (m->nan || m->inf))
        ckpt_report_warn(p->rep, CKPT_FAMILY "parameter %llu: m holds %llu NaN and %llu infinite values",
                         (unsigned long long)id, (unsigned long long)m->nan, (unsigned long long)m->inf);
    if (v && (v->nan || v->inf))
        ckpt_report_warn(p->rep, CKPT_FAMILY "parameter %llu: v holds %llu NaN and %llu infinite values",
                         (unsigned long long)id, (unsigned long long)v->nan, (unsigned long long)v->inf);
    if (v && v->negative)
        ckpt_report_warn(p->rep, CKPT_FAMILY "parameter %llu: v holds %llu negative values (a second moment is never negative)",
                         (unsigned long long)id, (unsigned long long)v->negative);
}

static const char legacy_warning[] =
    CKPT_FAMILY "legacy checkpoint has no random counter; stochastic training cannot be resumed exactly";

/* ---- the parser, in the order of FORMAT.md 4 ---- */

static int parse_file(parse *p)
{
    ckpt_reader *r = p->r;
    ckpt_report *rep = p->rep;
    ckpt_error *err = p->err;
    const ckpt_expected *exp = p->exp;
    const ckpt_schema *expected = exp ? exp->schema : NULL;
    uint64_t at, v;

    /* 1. the destination itself */
    if (expected && !ckpt_schema_is_well_formed(expected))
        return ckpt_fail(err, CKPT_E_MALFORMED_IN_MEMORY_SCHEMA, CKPT_NONE, "malformed in-memory parameter schema");

    /* 2. magic */
    uint8_t magic[CKPT_MAGIC_LEN];
    if (ckpt_read_exact(r, magic, sizeof magic, err)) {
        if (err->code == CKPT_E_TRUNCATED) hint_for_foreign(r, err);
        return err->code;
    }
    if (memcmp(magic, CKPT_MAGIC, CKPT_MAGIC_LEN) != 0) {
        ckpt_fail(err, CKPT_E_UNSUPPORTED_FAMILY, 0, "unsupported checkpoint family");
        hint_for_foreign(r, err);
        return err->code;
    }
    rep->magic_ok = true;

    /* 3. version */
    at = r->pos;
    uint64_t version;
    TRY(ckpt_read_u64(r, &version, err));
    rep->has_version = true;
    rep->version = version;
    if (expected && version == 2 && ckpt_schema_has_aliases(expected))
        return ckpt_fail(err, CKPT_E_VERSION2_CANNOT_SHARE, at, "version 2 cannot restore shared parameter histories");
    if (version < 2 || version > 5) {
        ckpt_fail(err, CKPT_E_UNSUPPORTED_VERSION, at, "unsupported format version %llu; expected 2 through 5",
                  (unsigned long long)version);
        ckpt_set_hint(err, version > 5 && version < 1000
                               ? "this file may come from a newer TorchLean; ckptscope reads versions 2 through 5"
                               : "the version field holds an implausible value: the file is corrupted or not a TLADAMF checkpoint");
        return err->code;
    }

    /* 4. moment dtype (v5 only; earlier versions are float32) */
    int dtype = CKPT_FLOAT32;
    if (version == 5) {
        at = r->pos;
        TRY(ckpt_read_u64(r, &v, err));
        if (v > 1) return ckpt_fail(err, CKPT_E_UNSUPPORTED_DTYPE, at, "unsupported moment dtype");
        dtype = (int)v;
        if (exp && exp->dtype != CKPT_DTYPE_ANY && exp->dtype != dtype)
            return ckpt_fail(err, CKPT_E_DTYPE_DIFFERS, at, "moment dtype differs from the destination");
    }
    rep->dtype = dtype;

    /* 5. configuration: the tag, then all four floats, then validation */
    uint64_t kind_at = r->pos;
    ckpt_config c;
    TRY(ckpt_read_u64(r, &c.kind, err));
    if (c.kind > 1) return ckpt_fail(err, CKPT_E_INVALID_OPTIMIZER_TAG, kind_at, "invalid optimizer tag %llu", (unsigned long long)c.kind);
    TRY(ckpt_read_u64(r, &c.beta1, err));
    TRY(ckpt_read_u64(r, &c.beta2, err));
    TRY(ckpt_read_u64(r, &c.epsilon, err));
    TRY(ckpt_read_u64(r, &c.weight_decay, err));
    rep->has_config = true;
    rep->config = c;
    TRY(ckpt_config_validate_at(&c, dtype, kind_at, err));

    /* 6. random counter: always in v4, behind a flag in v5, never in v2/v3 */
    bool has_counter = version == 4;
    uint64_t counter_at = r->pos;
    if (version == 5) {
        TRY(ckpt_read_u64(r, &v, err));
        if (v > 1) return ckpt_fail(err, CKPT_E_INVALID_COUNTER_FLAG, counter_at, "invalid random-counter flag");
        has_counter = v == 1;
    }
    if (has_counter) TRY(ckpt_read_u64(r, &rep->random_counter, err));
    rep->counter_state = has_counter;
    if (!exp && !has_counter) ckpt_report_warn(rep, "%s", legacy_warning);

    /* 7. the destination's own configuration */
    if (exp && exp->config &&
        !ckpt_config_same(exp->config, exp->dtype == CKPT_DTYPE_ANY ? dtype : exp->dtype, &c, dtype))
        return ckpt_fail(err, CKPT_E_CONFIG_DIFFERS, kind_at, "checkpoint belongs to a different optimizer configuration");

    /* 8. the parameter schema, then (v >= 3) the sharing tags */
    if (!(rep->schema = ckpt_schema_empty())) return ckpt_fail_oom(err);
    TRY(ckpt_schema_read(r, expected, rep->schema, &rep->schema_declared_count, err));
    if (version >= 3) {
        uint64_t tags_at = r->pos;
        TRY(ckpt_schema_read_tags(r, expected, rep->schema, err));
        rep->schema_complete = true;
        if (!exp) TRY(ckpt_schema_check_sharing(rep->schema, tags_at, err));
    } else {
        rep->schema_complete = true;   /* v2: the implied map, always well formed */
    }
    const ckpt_schema *layout = expected ? expected : rep->schema;
    size_t n = ckpt_schema_count(layout);

    /* 9. entry count */
    at = r->pos;
    uint64_t entry_count, owners = ckpt_schema_optimizer_state_count(layout);
    TRY(ckpt_read_u64(r, &entry_count, err));
    rep->has_entry_count = true;
    rep->entry_count = entry_count;
    if (entry_count != owners)
        return ckpt_fail(err, CKPT_E_ENTRY_COUNT_MISMATCH, at, "expected %llu moment entries, got %llu",
                         (unsigned long long)owners, (unsigned long long)entry_count);

    /* 10. entries, in any order; ids are checked before the payloads are touched */
    unsigned width = dtype == CKPT_FLOAT64 ? 8 : 4;
    uint8_t *seen = calloc(n / 8 + 1, 1);
    if (!seen) return ckpt_fail_oom(err);
    int rc = 0;
    bool ascending = true;
    uint64_t previous = 0;
    for (uint64_t e = 0; e < entry_count && !rc; e++) {
        ckpt_entry_info info = {0};
        uint64_t step_at, count_at;
        info.offset = r->pos;
        if ((rc = ckpt_read_u64(r, &info.id, err))) break;
        step_at = r->pos;
        if ((rc = ckpt_read_u64(r, &info.step, err))) break;
        count_at = r->pos;
        if ((rc = ckpt_read_u64(r, &info.count, err))) break;
        uint64_t id = info.id;
        if (id < n && (seen[id / 8] >> (id % 8)) & 1)
            rc = ckpt_fail(err, CKPT_E_DUPLICATE_ID, info.offset, "duplicate parameter id %llu", (unsigned long long)id);
        else if (id >= n)
            rc = ckpt_fail(err, CKPT_E_INVALID_ID, info.offset, "invalid parameter id %llu", (unsigned long long)id);
        else if (!ckpt_schema_is_representative(layout, id))
            rc = ckpt_fail(err, CKPT_E_NOT_OWNER, info.offset, "parameter %llu does not own optimizer state", (unsigned long long)id);
        else if (info.step == 0)
            rc = ckpt_fail(err, CKPT_E_ZERO_STEP, step_at, "zero step counter for parameter %llu", (unsigned long long)id);
        else {
            bool too_big;
            uint64_t size = ckpt_schema_size(layout, (size_t)id, &too_big);
            if (too_big || info.count != size) {
                char expected_size[64];
                ckpt_schema_size_decimal(layout, (size_t)id, expected_size, sizeof expected_size);
                rc = ckpt_fail(err, CKPT_E_MOMENT_SIZE_MISMATCH, count_at, "moment-size mismatch for parameter %llu (file=%llu, expected=%s)",
                               (unsigned long long)id, (unsigned long long)info.count, expected_size);
            }
        }
        if (rc) break;
        seen[id / 8] |= (uint8_t)(1u << (id % 8));
        if (!exp && ascending && e > 0 && id < previous) {
            ascending = false;
            ckpt_report_warn(rep, CKPT_FAMILY "moment entries are not in ascending id order (the reference writer sorts them)");
        }
        previous = id;
        if ((rc = payload(p, info.count, width, &info.m))) break;
        if ((rc = payload(p, info.count, width, &info.v))) {
            ckpt_stats_free(info.m);
            break;
        }
        if (!push_entry(p, &info)) {
            ckpt_stats_free(info.m);
            ckpt_stats_free(info.v);
            rc = ckpt_fail_oom(err);
            break;
        }
        if (!exp) warn_unhealthy(p, id, &info);
    }
    free(seen);
    if (rc) return rc;

    /* 11. nothing may follow the last entry */
    int more = ckpt_reader_has_more(r, err);
    if (more < 0) return err->code;
    if (more) return ckpt_fail(err, CKPT_E_TRAILING_BYTES, r->pos, "trailing bytes after final state entry");

    /* 12. the random counter against the destination */
    if (exp && has_counter && exp->keeps_random_counter == 0)
        return ckpt_fail(err, CKPT_E_NO_COUNTER_REFERENCE, counter_at, "destination has no random-counter reference");
    if (exp && !has_counter && exp->keeps_random_counter == 1) ckpt_report_warn(rep, "%s", legacy_warning);
    return 0;
}

static ckpt_report *run(const ckpt_source *src, const ckpt_expected *exp, const ckpt_inspect_options *opt)
{
    ckpt_report *rep = calloc(1, sizeof *rep);
    if (!rep) return NULL;
    rep->size = src->size;
    rep->dtype = -1;
    rep->counter_state = -1;
    rep->error.offset = CKPT_NONE;
    parse p = {0};
    p.exp = exp;
    p.rep = rep;
    p.err = &rep->error;
    if (opt) {
        p.flags = opt->flags;
        p.progress = opt->progress;
        p.progress_ctx = opt->progress_ctx;
    }
    if (!(p.r = ckpt_reader_new(src))) {
        ckpt_fail_oom(p.err);
        return rep;
    }
    parse_file(&p);
    ckpt_reader_free(p.r);
    return rep;
}

ckpt_report *ckpt_inspect(const ckpt_source *src, const ckpt_inspect_options *opt) { return run(src, NULL, opt); }

ckpt_report *ckpt_load(const ckpt_source *src, const ckpt_expected *exp) { return run(src, exp, NULL); }

static const ckpt_entry_info *find_entry(const ckpt_report *rep, uint64_t id)
{
    for (size_t k = 0; k < rep->entries_len; k++)
        if (rep->entries[k].id == id) return &rep->entries[k];
    return NULL;
}

char *ckpt_entry_stats_json(const ckpt_source *src, const ckpt_report *rep, uint64_t id, ckpt_progress_fn progress,
                            void *progress_ctx, ckpt_error *err)
{
    const ckpt_entry_info *e = find_entry(rep, id);
    if (!e) {
        ckpt_fail(err, CKPT_E_INVALID_ID, CKPT_NONE, "invalid parameter id %llu", (unsigned long long)id);
        return NULL;
    }
    parse p = {0};
    p.flags = CKPT_INSPECT_STATS;
    p.progress = progress;
    p.progress_ctx = progress_ctx;
    p.err = err;
    if (!(p.r = ckpt_reader_new(src))) {
        ckpt_fail_oom(err);
        return NULL;
    }
    p.r->pos = e->offset + 24;
    unsigned width = rep->dtype == CKPT_FLOAT64 ? 8 : 4;
    ckpt_entry_info out = *e;
    out.m = out.v = NULL;
    char *json = NULL;
    if (!payload(&p, e->count, width, &out.m) && !payload(&p, e->count, width, &out.v))
        json = ckpt_entry_json(&out);
    if (!json && !err->code) ckpt_fail_oom(err);
    ckpt_stats_free(out.m);
    ckpt_stats_free(out.v);
    ckpt_reader_free(p.r);
    return json;
}

int ckpt_read_moments(const ckpt_source *src, const ckpt_report *rep, uint64_t id, void *m, void *v, ckpt_error *err)
{
    const ckpt_entry_info *e = find_entry(rep, id);
    if (!e) return ckpt_fail(err, CKPT_E_INVALID_ID, CKPT_NONE, "invalid parameter id %llu", (unsigned long long)id);
    uint64_t width = rep->dtype == CKPT_FLOAT64 ? 8 : 4, bytes;
    if (ckpt_mul_overflows(e->count, width, &bytes) || bytes > SIZE_MAX / 2)
        return ckpt_fail(err, CKPT_E_NO_MEMORY, CKPT_NONE, "entry %llu is too large to copy into memory", (unsigned long long)id);
    ckpt_reader *r = ckpt_reader_new(src);
    if (!r) return ckpt_fail_oom(err);
    r->pos = e->offset + 24;
    int rc = ckpt_read_exact(r, m, (size_t)bytes, err);
    if (!rc) rc = ckpt_read_exact(r, v, (size_t)bytes, err);
    ckpt_reader_free(r);
    return rc;
}
