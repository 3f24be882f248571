/* The model-state families TLSF32B and TLPF32B (format.md 6), and any family of their layout
 * (magic, version, count, tensors of the descriptor's element dtype): reading (inspection, and
 * load against expected shapes, in the reference order with the reference texts) and the
 * writer. The header's texts carry the family's name, the
 * rest its prefix (StateIO / ParamIO); what differs between the families is their descriptor's
 * (family.c). Texts name no index: the slot is reported beside them. */
#include "families/state/state.h"

#include <stdlib.h>

/* ---- the items: one per tensor, its values ---- */

size_t ckpt_state_item_count(const ckpt_report *rep) { return rep->tensors_len; }

ckpt_item ckpt_state_item(ckpt_report *rep, size_t k)
{
    ckpt_tensor_info *t = &rep->tensors[k];
    return (ckpt_item){
        k, t->count, 1, {{"", t->dtype, t->data_offset, t->count, NULL, &t->values, NULL, 0}}, &t->unhealthy};
}

static int oom_at(ckpt_error *err, uint64_t offset, uint64_t i, uint64_t count)
{
    return ckpt_fail_at(err, NULL, CKPT_E_NO_MEMORY, offset, 8, i,
                        "out of memory at tensor %llu of the %llu the file declares", (unsigned long long)i,
                        (unsigned long long)count);
}

/* Step 4 for one tensor: rank, dims and count are read first; then the shape and the count are
 * compared (with the expected shapes, or the file's own dims when inspecting); then the payload. */
static int read_tensor(ckpt_parse *p, uint64_t i, uint64_t declared)
{
    ckpt_reader *r = p->r;
    ckpt_error *err = p->err;
    ckpt_schema *file = p->rep->schema;
    const ckpt_schema *expected = p->exp ? p->exp->schema : NULL;
    const char *P = p->family->prefix;
    const unsigned width = ckpt_dtype_width(p->family->element_dtype);
    ckpt_tensor_info info = {0};
    info.dtype = p->family->element_dtype;
    uint64_t rank, v;
    info.offset = r->pos;
    TRY(ckpt_read_u64(r, &rank, err));
    if (!ckpt_schema_push_slot(file)) return oom_at(err, info.offset, i, declared);
    /* dims past the bytes left are read (for the reader's own truncation diagnostic), not kept */
    uint64_t left = ckpt_reader_bytes_left(r);
    bool keep = left == CKPT_NONE || rank <= left / 8;
    for (uint64_t k = 0; k < rank; k++) {
        TRY(ckpt_read_u64(r, &v, err));
        if (keep && !ckpt_schema_push_dim(file, v)) return oom_at(err, info.offset, i, declared);
    }
    uint64_t count_at = r->pos;
    TRY(ckpt_read_u64(r, &info.count, err));

    const ckpt_schema *ref = expected ? expected : file;
    if (expected && !ckpt_schema_same_shape(file, (size_t)i, expected, (size_t)i)) {
        strbuf a = {0}, b = {0};
        ckpt_shape_print_list(&a, ckpt_schema_dims(file, (size_t)i), rank);
        ckpt_shape_print_list(&b, ckpt_schema_dims(expected, (size_t)i), ckpt_schema_rank(expected, (size_t)i));
        if (a.failed || b.failed) ckpt_fail_oom(err);
        else
            ckpt_fail_at(err, P, CKPT_E_STATE_SHAPE_MISMATCH, info.offset, 8 * (rank + 1), i,
                         "checkpoint shape mismatch (file=%s, expected=%s)", a.data, b.data);
        sb_free(&a);
        sb_free(&b);
        return err->code;
    }
    bool too_big;
    uint64_t size = ckpt_schema_size(ref, (size_t)i, &too_big);
    if (too_big || info.count != size) {
        strbuf pretty = {0}, want = {0};
        p->family->impl->pretty(&pretty, ckpt_schema_dims(ref, (size_t)i), ckpt_schema_rank(ref, (size_t)i));
        ckpt_shape_size_print(&want, ckpt_schema_dims(ref, (size_t)i), ckpt_schema_rank(ref, (size_t)i));
        if (pretty.failed || want.failed) ckpt_fail_oom(err);
        else
            ckpt_fail_at(err, P, CKPT_E_STATE_ELEMENT_COUNT_MISMATCH, count_at, 8, i,
                         "checkpoint element count mismatch for %s (file=%llu, expected=%s)", pretty.data,
                         (unsigned long long)info.count, want.data);
        sb_free(&pretty);
        sb_free(&want);
        return err->code;
    }

    info.data_offset = r->pos;
    if (p->flags & CKPT_INSPECT_STATS) {
        TRY(ckpt_scan_payload(r, &p->scan, info.count, width, &info.values, err));
        info.unhealthy = ckpt_tensor_unhealthy(info.values, NULL);
    } else {
        TRY(ckpt_skip_payload(r, info.count, width, err));
    }
    if (!ckpt_report_push_tensor(p->rep, &info)) {
        ckpt_stats_free(info.values);
        return oom_at(err, info.offset, i, declared);
    }
    return 0;
}

int ckpt_state_parse(ckpt_parse *p)
{
    ckpt_reader *r = p->r;
    ckpt_report *rep = p->rep;
    ckpt_error *err = p->err;
    const ckpt_family *f = p->family;
    const struct ckpt_family_impl *t = f->impl;
    const ckpt_schema *expected = p->exp ? p->exp->schema : NULL;

    /* 2. version (still the header: the family's name speaks) */
    uint64_t at = r->pos, version;
    TRY(ckpt_read_u64(r, &version, err));
    rep->has_version = true;
    rep->version = version;
    if (version < f->version_min || version > f->version_max)
        return ckpt_fail(err, f->name, CKPT_E_UNSUPPORTED_VERSION, at, 8,
                         "unsupported format version %llu; expected %llu", (unsigned long long)version,
                         (unsigned long long)f->version_min);

    /* 3. tensor count; the prefix from here on */
    r->prefix = f->prefix;
    if (!(rep->schema = ckpt_schema_empty())) return ckpt_fail_oom(err);
    at = rep->schema_offset = r->pos;
    uint64_t count;
    TRY(ckpt_read_u64(r, &count, err));
    rep->schema_declared_count = count;
    if (expected && count != ckpt_schema_count(expected))
        return ckpt_fail(err, f->prefix, CKPT_E_TENSOR_COUNT_MISMATCH, at, 8, "%s (file=%llu, expected=%zu)",
                         t->count_mismatch, (unsigned long long)count, ckpt_schema_count(expected));

    /* 4. the tensors; a short read ends the loop, whatever the count claims */
    p->scan.start = r->pos;
    p->scan.total = r->src->size == CKPT_NONE ? CKPT_NONE : r->src->size - r->pos;
    for (uint64_t i = 0; i < count; i++) {
        int rc = read_tensor(p, i, count);
        if (rc) {
            /* a field cut short, or memory that ran out, belongs to the tensor being read */
            if (err->slot == CKPT_NONE && (rc == CKPT_E_TRUNCATED || rc == CKPT_E_NO_MEMORY)) err->slot = i;
            ckpt_drop_layout_if_oom(rep);
            return rc;
        }
    }
    rep->schema_complete = true;

    /* 5. nothing may follow the last tensor */
    int more = ckpt_reader_has_more(r, err);
    if (more < 0) return err->code;
    if (more) {
        uint64_t extra = r->src->size == CKPT_NONE ? 1 : r->src->size - r->pos;
        return ckpt_fail(err, f->prefix, CKPT_E_TRAILING_BYTES, r->pos, extra, "%s", t->trailing);
    }
    return 0;
}

/* ---- one tensor through an open file ---- */

/* ---- the writer ---- */

int ckpt_state_write(int family, const ckpt_schema *shapes, const void *const *values, const uint64_t *value_bytes,
                     const ckpt_sink *out, ckpt_error *err)
{
    const ckpt_family *f = ckpt_family_get(family);
    if (!f || f->impl->parse != ckpt_state_parse || !shapes || !out)
        return ckpt_fail(err, NULL, CKPT_E_INVALID_ARGUMENT, CKPT_NONE, 0, "invalid arguments to the state writer");
    const unsigned width = ckpt_dtype_width(f->element_dtype);
    size_t n = ckpt_schema_count(shapes);
    /* every check before the first byte */
    for (size_t i = 0; i < n; i++) {
        bool too_big;
        uint64_t size = ckpt_schema_size(shapes, i, &too_big), bytes;
        if (too_big || ckpt_mul_overflows(size, width, &bytes) || value_bytes[i] != bytes || (bytes && !values[i])) {
            strbuf sb = {0};
            ckpt_shape_size_print(&sb, ckpt_schema_dims(shapes, i), ckpt_schema_rank(shapes, i));
            if (sb.failed) ckpt_fail_oom(err);
            else
                ckpt_fail_at(err, f->prefix, CKPT_E_INVALID_PAYLOAD, CKPT_NONE, 0, i,
                             "invalid values for tensor %zu (%llu bytes for a shape of %s elements)", i,
                             (unsigned long long)value_bytes[i], sb.data);
            sb_free(&sb);
            err->subject = CKPT_SUBJECT_EXPECTED;
            return err->code;
        }
    }
    uint8_t head[CKPT_MAGIC_LEN + 16];
    for (int k = 0; k < CKPT_MAGIC_LEN; k++) head[k] = (uint8_t)f->magic[k];
    ckpt_put_u64le(head + CKPT_MAGIC_LEN, f->version_min);
    ckpt_put_u64le(head + CKPT_MAGIC_LEN + 8, n);
    TRY(ckpt_sink_bytes(out, head, sizeof head, err));
    for (size_t i = 0; i < n; i++) {
        uint64_t rank = ckpt_schema_rank(shapes, i);
        const uint64_t *dims = ckpt_schema_dims(shapes, i);
        TRY(ckpt_sink_u64(out, rank, err));
        for (uint64_t k = 0; k < rank; k++) TRY(ckpt_sink_u64(out, dims[k], err));
        TRY(ckpt_sink_u64(out, ckpt_schema_size(shapes, i, NULL), err));
        if (value_bytes[i]) TRY(ckpt_sink_bytes(out, values[i], (size_t)value_bytes[i], err));
    }
    return 0;
}
