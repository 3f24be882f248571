/* ParameterSchema (format.md 3, the seed): shapes in module order, trainability flags and an
 * optional storage-sharing map; the seed's queries; write, writeRepresentatives, readAndCheck
 * and readAndCheckRepresentatives; and the sharing-map diagnosis of format.md 5. */
#include "core/internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- building ---- */

ckpt_schema *ckpt_schema_empty(void)
{
    ckpt_schema *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    s->dim_start = calloc(1, sizeof *s->dim_start);
    if (!s->dim_start) {
        free(s);
        return NULL;
    }
    return s;
}

void ckpt_schema_free(ckpt_schema *s)
{
    if (!s) return;
    free(s->dim_start);
    free(s->dims);
    free(s->requires_grad);
    free(s->map);
    free(s);
}

static bool grow(void **p, size_t elem, size_t need, size_t *cap)
{
    if (need <= *cap) return true;
    size_t c = *cap ? *cap : 16;
    while (c < need) {
        if (c > SIZE_MAX / 2 / elem) return false;
        c *= 2;
    }
    void *q = realloc(*p, c * elem);
    if (!q) return false;
    ckpt_advise_large(q, c * elem);
    *p = q;
    *cap = c;
    return true;
}

/* Per-slot arrays share one capacity. A failed realloc leaves the old arrays valid. */
static bool grow_slots(ckpt_schema *s, size_t need)
{
    if (need <= s->cap) return true;
    size_t c = s->cap ? s->cap : 16;
    while (c < need) {
        if (c > SIZE_MAX / 4 / sizeof(uint64_t)) return false;
        c *= 2;
    }
    void *p;
    if (!(p = realloc(s->requires_grad, c))) return false;
    s->requires_grad = p;
    if (!(p = realloc(s->dim_start, (c + 1) * sizeof *s->dim_start))) return false;
    s->dim_start = p;
    ckpt_advise_large(p, (c + 1) * sizeof *s->dim_start);
    s->cap = c;
    return true;
}

bool ckpt_schema_reserve(ckpt_schema *s, size_t slots, size_t dims)
{
    return grow_slots(s, slots) && grow((void **)&s->dims, sizeof *s->dims, dims, &s->dims_cap);
}

/* Dims arrive one by one (push_dim): nothing is ever allocated by a count read from a file
 * beyond what the bytes left can hold (ckpt_schema_reserve's callers bound it). */
bool ckpt_schema_push_slot(ckpt_schema *s)
{
    if (s->n == SIZE_MAX - 1 || !grow_slots(s, s->n + 1)) return false;
    s->derived = false;
    s->dim_start[s->n + 1] = s->dim_start[s->n];
    s->n++;
    return true;
}

bool ckpt_schema_push_dim(ckpt_schema *s, uint64_t dim)
{
    size_t len = (size_t)s->dim_start[s->n];
    if (!grow((void **)&s->dims, sizeof *s->dims, len + 1, &s->dims_cap)) return false;
    s->dims[len] = dim;
    s->dim_start[s->n] = len + 1;
    return true;
}

bool ckpt_schema_push_flag(ckpt_schema *s, bool trainable)
{
    if (!grow_slots(s, s->flag_count + 1)) return false;
    s->requires_grad[s->flag_count++] = trainable;
    s->derived = false;
    return true;
}

bool ckpt_schema_set_map(ckpt_schema *s, const uint64_t *map, size_t count)
{
    uint64_t *m = malloc((count ? count : 1) * sizeof *m);
    if (!m) return false;
    if (count) memcpy(m, map, count * sizeof *m);
    free(s->map);
    s->map = m;
    s->map_count = count;
    s->has_map = true;
    s->derived = false;
    return true;
}

ckpt_schema *ckpt_schema_new(size_t shape_count, const uint64_t *ranks, const uint64_t *dims, size_t flag_count,
                             const uint8_t *requires_grad, const uint64_t *representatives, size_t map_count)
{
    ckpt_schema *s = ckpt_schema_empty();
    if (!s) return NULL;
    uint64_t d = 0;
    for (size_t i = 0; i < shape_count; i++) {
        if (!ckpt_schema_push_slot(s)) goto fail;
        for (uint64_t k = 0; k < ranks[i]; k++)
            if (!ckpt_schema_push_dim(s, dims[d++])) goto fail;
    }
    for (size_t i = 0; i < flag_count; i++)
        if (!ckpt_schema_push_flag(s, requires_grad[i] != 0)) goto fail;
    if (representatives && !ckpt_schema_set_map(s, representatives, map_count)) goto fail;
    return s;
fail:
    ckpt_schema_free(s);
    return NULL;
}

/* ---- the seed's queries ---- */

size_t ckpt_schema_count(const ckpt_schema *s) { return s->n; }
uint64_t ckpt_schema_rank(const ckpt_schema *s, size_t i) { return s->dim_start[i + 1] - s->dim_start[i]; }
const uint64_t *ckpt_schema_dims(const ckpt_schema *s, size_t i) { return s->dims ? s->dims + s->dim_start[i] : NULL; }
bool ckpt_schema_has_map(const ckpt_schema *s) { return s->has_map; }

/* Computed, not stored: a million slots' sizes were 9 MB written once and read rarely. Past
 * 2^64 the value is the product as it wrapped, as it was when sizes were kept. */
uint64_t ckpt_schema_size(const ckpt_schema *s, size_t i, bool *too_big)
{
    uint64_t size;
    bool fits = ckpt_shape_size(ckpt_schema_dims(s, i), ckpt_schema_rank(s, i), &size);
    if (too_big) *too_big = !fits;
    return size;
}

void ckpt_schema_size_decimal(const ckpt_schema *s, size_t i, char *buf, size_t cap)
{
    strbuf sb = {0};
    ckpt_shape_size_print(&sb, ckpt_schema_dims(s, i), ckpt_schema_rank(s, i));
    if (cap) {
        size_t n = sb.failed || !sb.data ? 0 : sb.len;
        if (n >= cap) n = cap - 1;
        if (n) memcpy(buf, sb.data, n);
        buf[n] = '\0';
    }
    sb_free(&sb);
}

size_t ckpt_schema_flag_count(const ckpt_schema *s) { return s->flag_count; }

bool ckpt_schema_requires_grad(const ckpt_schema *s, size_t i) { return i < s->flag_count && s->requires_grad[i]; }

bool ckpt_schema_same_shape(const ckpt_schema *a, size_t i, const ckpt_schema *b, size_t j)
{
    return ckpt_shape_equal(ckpt_schema_dims(a, i), ckpt_schema_rank(a, i), ckpt_schema_dims(b, j),
                            ckpt_schema_rank(b, j));
}

uint64_t ckpt_schema_representative(const ckpt_schema *s, uint64_t i)
{
    if (s->has_map) return i < s->map_count ? s->map[i] : CKPT_NONE;
    return i < s->flag_count && s->requires_grad[i] ? i : CKPT_NONE;
}

/* The first rule of format.md 5 that slot i breaks, in the order of that list. */
static ckpt_sharing_fault sharing_fault(const ckpt_schema *s, size_t i)
{
    uint64_t r = ckpt_schema_representative(s, i);
    bool trainable = ckpt_schema_requires_grad(s, i);
    if (r == i && trainable) return CKPT_SHARING_OK; /* an owner: most slots; nothing to compare */
    if (r == CKPT_NONE) return trainable ? CKPT_SHARING_TRAINABLE_HAS_NONE : CKPT_SHARING_OK;
    if (!trainable) return CKPT_SHARING_FROZEN_HAS_REPRESENTATIVE;
    if (r >= s->n) return CKPT_SHARING_OUT_OF_RANGE;
    if (r > i) return CKPT_SHARING_FOLLOWS;
    if (!ckpt_schema_requires_grad(s, (size_t)r)) return CKPT_SHARING_FROZEN_REPRESENTATIVE;
    if (!ckpt_schema_same_shape(s, (size_t)r, s, i)) return CKPT_SHARING_DIFFERENT_SHAPE;
    if (ckpt_schema_representative(s, r) != r) return CKPT_SHARING_ALIAS_OF_ALIAS;
    return CKPT_SHARING_OK;
}

uint64_t ckpt_schema_find_sharing_fault(const ckpt_schema *s, ckpt_sharing_fault *fault)
{
    for (size_t i = 0; i < s->n; i++) {
        ckpt_sharing_fault f = sharing_fault(s, i);
        if (f != CKPT_SHARING_OK) {
            if (fault) *fault = f;
            return i;
        }
    }
    if (fault) *fault = CKPT_SHARING_OK;
    return CKPT_NONE;
}

uint64_t ckpt_schema_mark_sharing_faults(const ckpt_schema *s, uint8_t *out)
{
    if (ckpt_schema_is_well_formed(s)) { /* computed once: no slot to mark */
        memset(out, 0, s->n);
        return 0;
    }
    uint64_t broken = 0;
    for (size_t i = 0; i < s->n; i++) broken += out[i] = sharing_fault(s, i) != CKPT_SHARING_OK;
    return broken;
}

/* The reason texts of format.md 5, after "...at parameter {i}: ". */
static void sharing_reason(strbuf *sb, const ckpt_schema *s, size_t i, ckpt_sharing_fault f)
{
    unsigned long long r = ckpt_schema_representative(s, i);
    switch (f) {
        case CKPT_SHARING_FROZEN_HAS_REPRESENTATIVE:
            sb_printf(sb, "frozen parameter has representative %llu", r);
            break;
        case CKPT_SHARING_TRAINABLE_HAS_NONE: sb_puts(sb, "trainable parameter has no representative"); break;
        case CKPT_SHARING_OUT_OF_RANGE: sb_printf(sb, "representative %llu is out of range", r); break;
        case CKPT_SHARING_FOLLOWS: sb_printf(sb, "representative %llu follows it", r); break;
        case CKPT_SHARING_FROZEN_REPRESENTATIVE: sb_printf(sb, "representative %llu is frozen", r); break;
        case CKPT_SHARING_DIFFERENT_SHAPE: sb_printf(sb, "representative %llu has a different shape", r); break;
        case CKPT_SHARING_ALIAS_OF_ALIAS: {
            uint64_t s2 = ckpt_schema_representative(s, r);
            if (s2 == CKPT_NONE) sb_printf(sb, "representative %llu is an alias of none", r);
            else sb_printf(sb, "representative %llu is an alias of %llu", r, (unsigned long long)s2);
            break;
        }
        case CKPT_SHARING_OK: break;
    }
}

char *ckpt_schema_explain(const ckpt_schema *s, uint64_t *slot)
{
    if (slot) *slot = CKPT_NONE;
    if (ckpt_schema_is_well_formed(s)) return NULL;
    strbuf sb = {0};
    if (s->flag_count == 0 && s->n > 0)
        sb_printf(&sb,
                  "%zu shape%s and no requiresGrad flags: a list of shapes (what a model-state file holds) is not an "
                  "optimizer layout",
                  s->n, s->n == 1 ? "" : "s");
    else if (s->flag_count != s->n)
        sb_printf(&sb, "%zu shape%s but %zu requiresGrad flag%s", s->n, s->n == 1 ? "" : "s", s->flag_count,
                  s->flag_count == 1 ? "" : "s");
    else if (s->has_map && s->map_count != s->n)
        sb_printf(&sb, "%zu shape%s but %zu representative%s", s->n, s->n == 1 ? "" : "s", s->map_count,
                  s->map_count == 1 ? "" : "s");
    else {
        ckpt_sharing_fault f;
        uint64_t i = ckpt_schema_find_sharing_fault(s, &f);
        if (slot) *slot = i;
        sb_printf(&sb, "parameter %llu: ", (unsigned long long)i);
        sharing_reason(&sb, s, (size_t)i, f);
    }
    return sb_take(&sb);
}

int ckpt_fail_malformed_destination(ckpt_error *err, const ckpt_schema *s)
{
    uint64_t slot;
    char *why = ckpt_schema_explain(s, &slot);
    ckpt_fail_at(err, CKPT_ADAM_PREFIX, CKPT_E_MALFORMED_IN_MEMORY_SCHEMA, CKPT_NONE, 0, slot,
                 "malformed in-memory parameter schema");
    err->subject = CKPT_SUBJECT_EXPECTED;
    if (why) ckpt_set_hint(err, why);
    free(why);
    return err->code;
}

void ckpt_schema_print_shape(strbuf *sb, const ckpt_schema *s, size_t i)
{
    ckpt_shape_print(sb, ckpt_schema_dims(s, i), ckpt_schema_rank(s, i));
}

static void derive(const ckpt_schema *cs)
{
    ckpt_schema *s = (ckpt_schema *)cs; /* a cache of pure functions of the fields */
    if (s->derived) return;
    s->well_formed = s->n == s->flag_count && (!s->has_map || s->map_count == s->n) &&
                     ckpt_schema_find_sharing_fault(s, NULL) == CKPT_NONE;
    s->state_count = s->trainable_count = 0;
    s->has_aliases = false;
    for (size_t i = 0; i < s->n; i++) {
        uint64_t r = ckpt_schema_representative(s, i);
        if (r == i) s->state_count++;
        else if (r != CKPT_NONE) s->has_aliases = true;
    }
    for (size_t i = 0; i < s->flag_count; i++) s->trainable_count += s->requires_grad[i] != 0;
    s->derived = true;
}

bool ckpt_schema_is_well_formed(const ckpt_schema *s) { return derive(s), s->well_formed; }
bool ckpt_schema_is_representative(const ckpt_schema *s, uint64_t i) { return ckpt_schema_representative(s, i) == i; }
uint64_t ckpt_schema_optimizer_state_count(const ckpt_schema *s) { return derive(s), s->state_count; }
uint64_t ckpt_schema_trainable_count(const ckpt_schema *s) { return derive(s), s->trainable_count; }
bool ckpt_schema_has_aliases(const ckpt_schema *s) { return derive(s), s->has_aliases; }

uint64_t ckpt_schema_tag(const ckpt_schema *s, size_t i)
{
    uint64_t r = ckpt_schema_representative(s, i);
    return r == CKPT_NONE ? 0 : r + 1;
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
    return ckpt_fail_at(err, CKPT_ADAM_PREFIX, CKPT_E_VALUE_TOO_LARGE, CKPT_NONE, 0, slot,
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

int ckpt_schema_check_sharing(const ckpt_schema *s, const char *prefix, uint64_t tag_offset, ckpt_error *err)
{
    if (ckpt_schema_is_well_formed(s)) return 0; /* the one scan, cached; a fault is rare */
    ckpt_sharing_fault f;
    uint64_t i = ckpt_schema_find_sharing_fault(s, &f);
    if (i == CKPT_NONE) return 0;
    strbuf why = {0};
    sharing_reason(&why, s, (size_t)i, f);
    if (why.failed) ckpt_fail_oom(err);
    else
        ckpt_fail_at(err, prefix, CKPT_E_MALFORMED_SHARING_MAP,
                     tag_offset == CKPT_NONE ? CKPT_NONE : tag_offset + 8 * i, 8, i,
                     "malformed storage sharing map at parameter %llu: %s", (unsigned long long)i, why.data);
    sb_free(&why);
    return err->code;
}

/* ---- the public readers: readAndCheck and readAndCheckRepresentatives ---- */

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
