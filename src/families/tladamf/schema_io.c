/* The seed's schema through a file handle (format.md 3, 4): write, writeRepresentatives,
 * readAndCheck and readAndCheckRepresentatives, with TLADAMF's texts: the codec that stores a
 * ParameterSchema is TorchLean's CUDA Adam checkpoint. */
#include "families/tladamf/tladamf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

ckpt_reader *ckpt_reader_new(const ckpt_source *src) { return ckpt_reader_with_prefix(src, CKPT_TLADAMF_PREFIX); }

int ckpt_fail_malformed_destination(ckpt_error *err, const ckpt_schema *s)
{
    uint64_t slot;
    char *why = ckpt_schema_explain(s, &slot);
    ckpt_fail_at(err, CKPT_TLADAMF_PREFIX, CKPT_E_MALFORMED_IN_MEMORY_SCHEMA, CKPT_NONE, 0, slot,
                 "malformed in-memory parameter schema");
    err->subject = CKPT_SUBJECT_EXPECTED;
    if (why) ckpt_set_hint(err, why);
    free(why);
    return err->code;
}

/* ---- write / writeRepresentatives ---- */

/* Fields are gathered in a block and sent in large writes, not 8 bytes at a time. */
typedef struct block {
    uint8_t data[8192];
    size_t len;
    const ckpt_sink *out;
} block;

static int block_u64(block *b, uint64_t v, ckpt_error *err)
{
    if (b->len + 8 > sizeof b->data) {
        int rc = ckpt_sink_bytes(b->out, b->data, b->len, err);
        if (rc) return rc;
        b->len = 0;
    }
    ckpt_put_u64le(b->data + b->len, v);
    b->len += 8;
    return 0;
}

static int block_flush(block *b, ckpt_error *err) { return b->len ? ckpt_sink_bytes(b->out, b->data, b->len, err) : 0; }

int ckpt_fail_value_too_large(ckpt_error *err, uint64_t slot, const char *decimal)
{
    return ckpt_fail_at(err, CKPT_TLADAMF_PREFIX, CKPT_E_VALUE_TOO_LARGE, CKPT_NONE, 0, slot,
                        "metadata value does not fit in 64 bits: %s", decimal);
}

/* format.md 1: a size of 2^64 or more cannot be written as a u64 field. */
int ckpt_schema_check_sizes_fit(const ckpt_schema *s, ckpt_error *err)
{
    for (size_t i = 0; i < s->n; i++) {
        bool too_big;
        ckpt_schema_size(s, i, &too_big);
        if (!too_big) continue;
        strbuf sb = {0};
        ckpt_shape_size_print(&sb, ckpt_schema_dims(s, i), ckpt_schema_rank(s, i));
        if (sb.failed) ckpt_fail_oom(err);
        else ckpt_fail_value_too_large(err, i, sb.data);
        sb_free(&sb);
        return err->code;
    }
    return 0;
}

int ckpt_schema_write(const ckpt_schema *s, const ckpt_sink *out, ckpt_error *err)
{
    if (!ckpt_schema_is_well_formed(s)) return ckpt_fail_malformed_destination(err, s);
    TRY(ckpt_schema_check_sizes_fit(s, err));
    block *b = malloc(sizeof *b);
    if (!b) return ckpt_fail_oom(err);
    b->len = 0;
    b->out = out;
    int rc = block_u64(b, s->n, err);
    for (size_t i = 0; i < s->n && !rc; i++) {
        uint64_t rank = ckpt_schema_rank(s, i);
        const uint64_t *dims = ckpt_schema_dims(s, i);
        rc = block_u64(b, rank, err);
        for (uint64_t k = 0; k < rank && !rc; k++) rc = block_u64(b, dims[k], err);
        if (!rc) rc = block_u64(b, ckpt_schema_size(s, i, NULL), err);
        if (!rc) rc = block_u64(b, s->requires_grad[i] ? 1 : 0, err);
    }
    if (!rc) rc = block_flush(b, err);
    free(b);
    return rc;
}

int ckpt_schema_write_representatives(const ckpt_schema *s, const ckpt_sink *out, ckpt_error *err)
{
    if (!ckpt_schema_is_well_formed(s)) return ckpt_fail_malformed_destination(err, s);
    block *b = malloc(sizeof *b);
    if (!b) return ckpt_fail_oom(err);
    b->len = 0;
    b->out = out;
    int rc = 0;
    for (size_t i = 0; i < s->n && !rc; i++) rc = block_u64(b, ckpt_schema_tag(s, i), err);
    if (!rc) rc = block_flush(b, err);
    free(b);
    return rc;
}

/* ---- reading ---- */

static int shape_mismatch(const ckpt_reader *r, ckpt_error *err, uint64_t offset, size_t i, const ckpt_schema *file,
                          const ckpt_schema *expected)
{
    strbuf a = {0}, b = {0};
    ckpt_schema_print_shape(&a, file, i);
    ckpt_schema_print_shape(&b, expected, i);
    if (a.failed || b.failed) ckpt_fail_oom(err);
    else
        ckpt_fail_at(err, r->prefix, CKPT_E_SHAPE_MISMATCH, offset, 8 * ckpt_schema_rank(file, i), i,
                     "shape mismatch for parameter %zu (file=%s, expected=%s)", i, a.data, b.data);
    sb_free(&a);
    sb_free(&b);
    return err->code;
}

static int count_mismatch(const ckpt_reader *r, ckpt_error *err, uint64_t offset, size_t i, uint64_t stored,
                          const ckpt_schema *dims_of)
{
    strbuf sb = {0};
    ckpt_shape_size_print(&sb, ckpt_schema_dims(dims_of, i), ckpt_schema_rank(dims_of, i));
    if (sb.failed) ckpt_fail_oom(err);
    else
        ckpt_fail_at(err, r->prefix, CKPT_E_ELEMENT_COUNT_MISMATCH, offset, 8, i,
                     "element count mismatch for parameter %zu (file=%llu, expected=%s)", i, (unsigned long long)stored,
                     sb.data);
    sb_free(&sb);
    return err->code;
}

/* Out of memory while a file's own counts grow an array: say where. */
static int oom_at(ckpt_error *err, uint64_t offset, uint64_t i, uint64_t count)
{
    return ckpt_fail_at(err, NULL, CKPT_E_NO_MEMORY, offset, 8, i,
                        "out of memory at parameter %llu of the %llu the file declares", (unsigned long long)i,
                        (unsigned long long)count);
}

static int read_slot(ckpt_reader *r, const ckpt_schema *expected, ckpt_schema *file, uint64_t i, uint64_t count,
                     ckpt_error *err);

int ckpt_schema_read(ckpt_reader *r, const ckpt_schema *expected, ckpt_schema *file, uint64_t *declared_count,
                     ckpt_error *err)
{
    uint64_t at = r->pos, count;
    TRY(ckpt_read_u64(r, &count, err));
    *declared_count = count;
    if (expected && count != expected->n)
        return ckpt_fail(err, r->prefix, CKPT_E_PARAMETER_COUNT_MISMATCH, at, 8,
                         "parameter count mismatch (file=%llu, expected=%zu)", (unsigned long long)count, expected->n);
    /* Room for the slots the remaining bytes can hold (24 bytes each at least; one dim of 8 more
     * for most), so a million slots grow no array a million times. Never more than the data. */
    uint64_t left = ckpt_reader_bytes_left(r);
    if (left != CKPT_NONE) {
        uint64_t slots = count < left / 24 ? count : left / 24, dims = count < left / 32 ? count : left / 32;
        if (slots < SIZE_MAX / 16 && !ckpt_schema_reserve(file, (size_t)slots, (size_t)dims))
            return oom_at(err, at, 0, count);
    }
    /* The loop is bounded by the data: a slot is at least 24 bytes, and a short read ends it. */
    for (uint64_t i = 0; i < count; i++) {
        int rc = read_slot(r, expected, file, i, count, err);
        if (rc) {
            if (err->slot == CKPT_NONE && rc == CKPT_E_TRUNCATED) err->slot = i; /* the slot the file cut short */
            return rc;
        }
    }
    return 0;
}

/* The usual slot, all in the reader's buffer with room in the arrays, read in one go: the
 * record is taken only when every check passes; anything else (an error to report, a rank past
 * 8, a record across a buffer refill) goes the field-by-field way of read_slot, from the same
 * position. A million slots spend most of their time here. */
static bool read_slot_fast(ckpt_reader *r, const ckpt_schema *expected, ckpt_schema *file, uint64_t i)
{
    if (r->pos < r->buf_pos || r->pos - r->buf_pos + 32 > r->buf_len) return false;
    const uint8_t *p = r->buf + (r->pos - r->buf_pos);
    uint64_t rank = ckpt_get_u64le(p);
    size_t len = (size_t)file->dim_start[file->n];
    if (rank > 8 || r->pos - r->buf_pos + 8 * (3 + rank) > r->buf_len || file->n + 1 > file->cap ||
        file->flag_count + 1 > file->cap || len + rank > file->dims_cap)
        return false;
    uint64_t size = 1, product;
    for (uint64_t k = 0; k < rank; k++) {
        uint64_t d = ckpt_get_u64le(p + 8 + 8 * k);
        file->dims[len + k] = d;
        if (ckpt_mul_overflows(size, d, &product)) return false; /* past 2^64: the careful way */
        size = product;
    }
    uint64_t stored = ckpt_get_u64le(p + 8 + 8 * rank), flag = ckpt_get_u64le(p + 16 + 8 * rank);
    if (stored != size || flag > 1) return false;
    /* the same shape as the destination's (below) has the same size: no need to compare sizes */
    if (expected && (rank != ckpt_schema_rank(expected, (size_t)i) ||
                     (flag == 1) != ckpt_schema_requires_grad(expected, (size_t)i) ||
                     !ckpt_shape_equal(file->dims + len, rank, ckpt_schema_dims(expected, (size_t)i), rank)))
        return false;
    file->dim_start[file->n + 1] = len + rank;
    file->n++;
    file->requires_grad[file->flag_count++] = (uint8_t)flag;
    file->derived = false;
    r->pos += 8 * (3 + rank);
    return true;
}

/* One slot of readAndCheck: rank, dims, size, flag, each compared as soon as it is read. */
static int read_slot(ckpt_reader *r, const ckpt_schema *expected, ckpt_schema *file, uint64_t i, uint64_t count,
                     ckpt_error *err)
{
    if (read_slot_fast(r, expected, file, i)) return 0;
    uint64_t rank, v, at = r->pos;
    TRY(ckpt_read_u64(r, &rank, err));
    if (expected && rank != ckpt_schema_rank(expected, (size_t)i))
        return ckpt_fail_at(err, r->prefix, CKPT_E_RANK_MISMATCH, at, 8, i,
                            "rank mismatch for parameter %llu (file=%llu, expected=%llu)", (unsigned long long)i,
                            (unsigned long long)rank, (unsigned long long)ckpt_schema_rank(expected, (size_t)i));
    if (!ckpt_schema_push_slot(file)) return oom_at(err, at, i, count);
    uint64_t dims_at = r->pos;
    /* More dims than the bytes left can hold: the file ends inside them. They are read (the
     * truncation diagnostic is the reader's own) but not kept: memory stays bounded by the
     * bytes left, as slot counts are, whatever rank a file declares. */
    uint64_t left = ckpt_reader_bytes_left(r);
    bool keep = left == CKPT_NONE || rank <= left / 8;
    for (uint64_t k = 0; k < rank; k++) {
        TRY(ckpt_read_u64(r, &v, err));
        if (keep && !ckpt_schema_push_dim(file, v)) return oom_at(err, dims_at, i, count);
    }
    if (expected && !ckpt_schema_same_shape(file, (size_t)i, expected, (size_t)i))
        return shape_mismatch(r, err, dims_at, (size_t)i, file, expected);
    at = r->pos;
    TRY(ckpt_read_u64(r, &v, err));
    /* Against a destination the stored size must be the destination's; without one it must
     * be the product of the file's own dims (format.md 5). */
    const ckpt_schema *ref = expected ? expected : file;
    bool too_big;
    uint64_t size = ckpt_schema_size(ref, (size_t)i, &too_big);
    if (too_big || v != size) return count_mismatch(r, err, at, (size_t)i, v, ref);
    at = r->pos;
    TRY(ckpt_read_u64(r, &v, err));
    if (v > 1)
        return ckpt_fail_at(err, r->prefix, CKPT_E_INVALID_REQUIRES_GRAD_FLAG, at, 8, i,
                            "invalid `requiresGrad` flag %llu", (unsigned long long)v);
    if (!ckpt_schema_push_flag(file, v == 1)) return oom_at(err, at, i, count);
    if (expected && (v == 1) != ckpt_schema_requires_grad(expected, (size_t)i))
        return ckpt_fail_at(err, r->prefix, CKPT_E_REQUIRES_GRAD_MISMATCH, at, 8, i,
                            "`requiresGrad` mismatch for parameter %llu", (unsigned long long)i);
    return 0;
}

/* Which way the tie differs, as `diff` says it (a tag is the representative + 1, 0 frozen). */
static void alias_hint(ckpt_error *err, uint64_t file_tag, uint64_t expected_tag)
{
    char a[24] = "none", b[24] = "none", text[160];
    if (file_tag) snprintf(a, sizeof a, "%llu", (unsigned long long)(file_tag - 1));
    if (expected_tag) snprintf(b, sizeof b, "%llu", (unsigned long long)(expected_tag - 1));
    snprintf(text, sizeof text,
             "representative %s in the file, %s in the layout; `ckptscope diff` lists every difference", a, b);
    ckpt_set_hint(err, text);
}

int ckpt_schema_read_tags(ckpt_reader *r, const ckpt_schema *expected, ckpt_schema *file, ckpt_error *err)
{
    size_t n = expected ? expected->n : file->n;
    /* Read straight into the map the file's schema keeps (a million slots: no second copy);
     * a check against the destination alone keeps none. */
    uint64_t *map = NULL;
    if (file && !(map = malloc((n ? n : 1) * sizeof *map))) return ckpt_fail_oom(err);
    ckpt_advise_large(map, n * sizeof *map);
    int rc = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t at = r->pos, tag;
        if ((rc = ckpt_read_u64(r, &tag, err))) {
            err->slot = i;
            break;
        }
        if (expected && tag != ckpt_schema_tag(expected, i)) {
            rc = ckpt_fail_at(err, r->prefix, CKPT_E_STORAGE_ALIAS_MISMATCH, at, 8, i,
                              "storage alias mismatch for parameter %zu", i);
            alias_hint(err, tag, ckpt_schema_tag(expected, i));
            break;
        }
        if (map) map[i] = tag == 0 ? CKPT_NONE : tag - 1;
    }
    if (rc || !file) {
        free(map);
        return rc;
    }
    free(file->map);
    file->map = map;
    file->map_count = n;
    file->has_map = true;
    file->derived = false;
    return 0;
}

static int malformed_expected(const ckpt_reader *r, const ckpt_schema *expected, ckpt_error *err)
{
    uint64_t slot;
    char *why = ckpt_schema_explain(expected, &slot);
    ckpt_fail_at(err, r->prefix, CKPT_E_MALFORMED_EXPECTED_SCHEMA, CKPT_NONE, 0, slot,
                 "malformed expected parameter schema");
    err->subject = CKPT_SUBJECT_EXPECTED;
    if (why) ckpt_set_hint(err, why);
    free(why);
    return err->code;
}

int ckpt_schema_read_and_check(ckpt_reader *r, const ckpt_schema *expected, ckpt_error *err)
{
    if (!ckpt_schema_is_well_formed(expected)) return malformed_expected(r, expected, err);
    ckpt_schema *file = ckpt_schema_empty();
    if (!file) return ckpt_fail_oom(err);
    uint64_t declared;
    int rc = ckpt_schema_read(r, expected, file, &declared, err);
    ckpt_schema_free(file);
    return rc;
}

int ckpt_schema_read_and_check_representatives(ckpt_reader *r, const ckpt_schema *expected, ckpt_error *err)
{
    if (!ckpt_schema_is_well_formed(expected)) return malformed_expected(r, expected, err);
    return ckpt_schema_read_tags(r, expected, NULL, err);
}
