/* ParameterSchema (FORMAT.md 3, the seed): shapes in module order, trainability flags and an
 * optional storage-sharing map; the seed's queries; write, writeRepresentatives, readAndCheck
 * and readAndCheckRepresentatives; and the sharing-map diagnosis of FORMAT.md 5. */
#include "internal.h"

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
    free(s->sizes);
    free(s->size_too_big);
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
    if (!(p = realloc(s->sizes, c * sizeof *s->sizes))) return false;
    s->sizes = p;
    if (!(p = realloc(s->size_too_big, c))) return false;
    s->size_too_big = p;
    if (!(p = realloc(s->requires_grad, c))) return false;
    s->requires_grad = p;
    if (!(p = realloc(s->dim_start, (c + 1) * sizeof *s->dim_start))) return false;
    s->dim_start = p;
    s->cap = c;
    return true;
}

bool ckpt_schema_push_slot(ckpt_schema *s, uint64_t rank)
{
    (void)rank;  /* dims arrive one by one: never allocate by a count read from a file */
    if (s->n == SIZE_MAX - 1 || !grow_slots(s, s->n + 1)) return false;
    s->derived = false;
    s->dim_start[s->n + 1] = s->dim_start[s->n];
    s->sizes[s->n] = 1;
    s->size_too_big[s->n] = 0;
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

void ckpt_schema_end_slot(ckpt_schema *s)
{
    size_t i = s->n - 1;
    uint64_t size;
    bool fits = ckpt_shape_size(ckpt_schema_dims(s, i), ckpt_schema_rank(s, i), &size);
    s->sizes[i] = size;
    s->size_too_big[i] = !fits;
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

ckpt_schema *ckpt_schema_new(size_t shape_count, const uint64_t *ranks, const uint64_t *dims,
                             size_t flag_count, const uint8_t *requires_grad,
                             const uint64_t *representatives, size_t map_count)
{
    ckpt_schema *s = ckpt_schema_empty();
    if (!s) return NULL;
    uint64_t d = 0;
    for (size_t i = 0; i < shape_count; i++) {
        if (!ckpt_schema_push_slot(s, ranks[i])) goto fail;
        for (uint64_t k = 0; k < ranks[i]; k++)
            if (!ckpt_schema_push_dim(s, dims[d++])) goto fail;
        ckpt_schema_end_slot(s);
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

uint64_t ckpt_schema_size(const ckpt_schema *s, size_t i, bool *too_big)
{
    if (too_big) *too_big = s->size_too_big[i];
    return s->sizes[i];
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

bool ckpt_schema_requires_grad(const ckpt_schema *s, size_t i)
{
    return i < s->flag_count && s->requires_grad[i];
}

uint64_t ckpt_schema_representative(const ckpt_schema *s, uint64_t i)
{
    if (s->has_map) return i < s->map_count ? s->map[i] : CKPT_NONE;
    return i < s->flag_count && s->requires_grad[i] ? i : CKPT_NONE;
}

static bool same_shape_across(const ckpt_schema *s, size_t a, const ckpt_schema *t)
{
    return ckpt_shape_equal(ckpt_schema_dims(s, a), ckpt_schema_rank(s, a), ckpt_schema_dims(t, a),
                            ckpt_schema_rank(t, a));
}

static bool same_shape(const ckpt_schema *s, size_t a, size_t b)
{
    return ckpt_shape_equal(ckpt_schema_dims(s, a), ckpt_schema_rank(s, a), ckpt_schema_dims(s, b),
                            ckpt_schema_rank(s, b));
}

uint64_t ckpt_schema_find_sharing_fault(const ckpt_schema *s, ckpt_sharing_fault *fault)
{
    for (size_t i = 0; i < s->n; i++) {
        uint64_t r = ckpt_schema_representative(s, i);
        bool trainable = ckpt_schema_requires_grad(s, i);
        ckpt_sharing_fault f = CKPT_SHARING_OK;
        if (r == CKPT_NONE) {
            if (trainable) f = CKPT_SHARING_TRAINABLE_HAS_NONE;
        } else if (!trainable) f = CKPT_SHARING_FROZEN_HAS_REPRESENTATIVE;
        else if (r >= s->n) f = CKPT_SHARING_OUT_OF_RANGE;
        else if (r > i) f = CKPT_SHARING_FOLLOWS;
        else if (!ckpt_schema_requires_grad(s, (size_t)r)) f = CKPT_SHARING_FROZEN_REPRESENTATIVE;
        else if (!same_shape(s, (size_t)r, i)) f = CKPT_SHARING_DIFFERENT_SHAPE;
        else if (ckpt_schema_representative(s, r) != r) f = CKPT_SHARING_ALIAS_OF_ALIAS;
        if (f != CKPT_SHARING_OK) {
            if (fault) *fault = f;
            return i;
        }
    }
    if (fault) *fault = CKPT_SHARING_OK;
    return CKPT_NONE;
}

static void derive(const ckpt_schema *cs)
{
    ckpt_schema *s = (ckpt_schema *)cs;  /* a cache of pure functions of the fields */
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

int ckpt_schema_write(const ckpt_schema *s, const ckpt_sink *out, ckpt_error *err)
{
    if (!ckpt_schema_is_well_formed(s))
        return ckpt_fail(err, CKPT_E_MALFORMED_IN_MEMORY_SCHEMA, CKPT_NONE, "malformed in-memory parameter schema");
    for (size_t i = 0; i < s->n; i++) {
        if (s->size_too_big[i]) {
            strbuf sb = {0};
            ckpt_shape_size_print(&sb, ckpt_schema_dims(s, i), ckpt_schema_rank(s, i));
            ckpt_fail(err, CKPT_E_VALUE_TOO_LARGE, CKPT_NONE, "metadata value does not fit in 64 bits: %s",
                      sb.failed ? "?" : sb.data);
            sb_free(&sb);
            return CKPT_E_VALUE_TOO_LARGE;
        }
    }
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
        if (!rc) rc = block_u64(b, s->sizes[i], err);
        if (!rc) rc = block_u64(b, s->requires_grad[i] ? 1 : 0, err);
    }
    if (!rc) rc = block_flush(b, err);
    free(b);
    return rc;
}

int ckpt_schema_write_representatives(const ckpt_schema *s, const ckpt_sink *out, ckpt_error *err)
{
    if (!ckpt_schema_is_well_formed(s))
        return ckpt_fail(err, CKPT_E_MALFORMED_IN_MEMORY_SCHEMA, CKPT_NONE, "malformed in-memory parameter schema");
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

static int shape_mismatch(ckpt_error *err, uint64_t offset, size_t i, const ckpt_schema *file,
                          const ckpt_schema *expected)
{
    strbuf a = {0}, b = {0};
    ckpt_shape_print(&a, ckpt_schema_dims(file, i), ckpt_schema_rank(file, i));
    ckpt_shape_print(&b, ckpt_schema_dims(expected, i), ckpt_schema_rank(expected, i));
    if (a.failed || b.failed) ckpt_fail_oom(err);
    else ckpt_fail(err, CKPT_E_SHAPE_MISMATCH, offset, "shape mismatch for parameter %zu (file=%s, expected=%s)", i,
                   a.data, b.data);
    sb_free(&a);
    sb_free(&b);
    return err->code;
}

static int count_mismatch(ckpt_error *err, uint64_t offset, size_t i, uint64_t stored, const ckpt_schema *dims_of,
                          size_t j)
{
    strbuf sb = {0};
    ckpt_shape_size_print(&sb, ckpt_schema_dims(dims_of, j), ckpt_schema_rank(dims_of, j));
    if (sb.failed) ckpt_fail_oom(err);
    else ckpt_fail(err, CKPT_E_ELEMENT_COUNT_MISMATCH, offset, "element count mismatch for parameter %zu (file=%llu, expected=%s)",
                   i, (unsigned long long)stored, sb.data);
    sb_free(&sb);
    return err->code;
}

int ckpt_schema_read(ckpt_reader *r, const ckpt_schema *expected, ckpt_schema *file,
                     uint64_t *declared_count, ckpt_error *err)
{
    uint64_t at = r->pos, count;
    int rc = ckpt_read_u64(r, &count, err);
    if (rc) return rc;
    *declared_count = count;
    if (expected && count != expected->n)
        return ckpt_fail(err, CKPT_E_PARAMETER_COUNT_MISMATCH, at, "parameter count mismatch (file=%llu, expected=%zu)",
                         (unsigned long long)count, expected->n);
    /* The loop is bounded by the data: a slot is at least 24 bytes, and a short read ends it. */
    for (uint64_t i = 0; i < count; i++) {
        uint64_t rank, v;
        at = r->pos;
        if ((rc = ckpt_read_u64(r, &rank, err))) return rc;
        if (expected && rank != ckpt_schema_rank(expected, (size_t)i))
            return ckpt_fail(err, CKPT_E_RANK_MISMATCH, at, "rank mismatch for parameter %llu (file=%llu, expected=%llu)",
                             (unsigned long long)i, (unsigned long long)rank,
                             (unsigned long long)ckpt_schema_rank(expected, (size_t)i));
        if (!ckpt_schema_push_slot(file, rank)) return ckpt_fail_oom(err);
        at = r->pos;
        for (uint64_t k = 0; k < rank; k++) {
            if ((rc = ckpt_read_u64(r, &v, err))) return rc;
            if (!ckpt_schema_push_dim(file, v)) return ckpt_fail_oom(err);
        }
        ckpt_schema_end_slot(file);
        if (expected && !same_shape_across(file, (size_t)i, expected))
            return shape_mismatch(err, at, (size_t)i, file, expected);
        at = r->pos;
        if ((rc = ckpt_read_u64(r, &v, err))) return rc;
        /* Against a destination the stored size must be the destination's; without one it must
         * be the product of the file's own dims (FORMAT.md 5). */
        const ckpt_schema *ref = expected ? expected : file;
        if (ref->size_too_big[i] || v != ref->sizes[i]) return count_mismatch(err, at, (size_t)i, v, ref, (size_t)i);
        at = r->pos;
        if ((rc = ckpt_read_u64(r, &v, err))) return rc;
        if (v > 1) return ckpt_fail(err, CKPT_E_INVALID_REQUIRES_GRAD_FLAG, at, "invalid `requiresGrad` flag %llu", (unsigned long long)v);
        if (!ckpt_schema_push_flag(file, v == 1)) return ckpt_fail_oom(err);
        if (expected && (v == 1) != ckpt_schema_requires_grad(expected, (size_t)i))
            return ckpt_fail(err, CKPT_E_REQUIRES_GRAD_MISMATCH, at, "`requiresGrad` mismatch for parameter %llu", (unsigned long long)i);
    }
    return 0;
}

int ckpt_schema_read_tags(ckpt_reader *r, const ckpt_schema *expected, ckpt_schema *file, ckpt_error *err)
{
    size_t n = expected ? expected->n : file->n;
    uint64_t *map = malloc((n ? n : 1) * sizeof *map);
    if (!map) return ckpt_fail_oom(err);
    int rc = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t at = r->pos, tag;
        if ((rc = ckpt_read_u64(r, &tag, err))) break;
        if (expected && tag != ckpt_schema_tag(expected, i)) {
            rc = ckpt_fail(err, CKPT_E_STORAGE_ALIAS_MISMATCH, at, "storage alias mismatch for parameter %zu", i);
            break;
        }
        map[i] = tag == 0 ? CKPT_NONE : tag - 1;
    }
    if (!rc && file && !ckpt_schema_set_map(file, map, n)) rc = ckpt_fail_oom(err);
    free(map);
    return rc;
}

int ckpt_schema_check_sharing(const ckpt_schema *s, uint64_t tag_offset, ckpt_error *err)
{
    ckpt_sharing_fault f;
    uint64_t i = ckpt_schema_find_sharing_fault(s, &f);
    if (i == CKPT_NONE) return 0;
    uint64_t r = ckpt_schema_representative(s, i);
    uint64_t at = tag_offset == CKPT_NONE ? CKPT_NONE : tag_offset + 8 * i;
    const char *head = "malformed storage sharing map at parameter";
    unsigned long long ui = i, ur = r;
    switch (f) {
    case CKPT_SHARING_FROZEN_HAS_REPRESENTATIVE:
        return ckpt_fail(err, CKPT_E_MALFORMED_SHARING_MAP, at, "%s %llu: frozen parameter has representative %llu", head, ui, ur);
    case CKPT_SHARING_TRAINABLE_HAS_NONE:
        return ckpt_fail(err, CKPT_E_MALFORMED_SHARING_MAP, at, "%s %llu: trainable parameter has no representative", head, ui);
    case CKPT_SHARING_OUT_OF_RANGE:
        return ckpt_fail(err, CKPT_E_MALFORMED_SHARING_MAP, at, "%s %llu: representative %llu is out of range", head, ui, ur);
    case CKPT_SHARING_FOLLOWS:
        return ckpt_fail(err, CKPT_E_MALFORMED_SHARING_MAP, at, "%s %llu: representative %llu follows it", head, ui, ur);
    case CKPT_SHARING_FROZEN_REPRESENTATIVE:
        return ckpt_fail(err, CKPT_E_MALFORMED_SHARING_MAP, at, "%s %llu: representative %llu is frozen", head, ui, ur);
    case CKPT_SHARING_DIFFERENT_SHAPE:
        return ckpt_fail(err, CKPT_E_MALFORMED_SHARING_MAP, at, "%s %llu: representative %llu has a different shape", head, ui, ur);
    case CKPT_SHARING_ALIAS_OF_ALIAS: {
        uint64_t s2 = ckpt_schema_representative(s, r);
        if (s2 == CKPT_NONE)
            return ckpt_fail(err, CKPT_E_MALFORMED_SHARING_MAP, at, "%s %llu: representative %llu is an alias of none", head, ui, ur);
        return ckpt_fail(err, CKPT_E_MALFORMED_SHARING_MAP, at, "%s %llu: representative %llu is an alias of %llu", head, ui, ur,
                         (unsigned long long)s2);
    }
    case CKPT_SHARING_OK: break;
    }
    return 0;
}

/* ---- the public readers: readAndCheck and readAndCheckRepresentatives ---- */

int ckpt_schema_read_and_check(ckpt_reader *r, const ckpt_schema *expected, ckpt_error *err)
{
    if (!ckpt_schema_is_well_formed(expected))
        return ckpt_fail(err, CKPT_E_MALFORMED_EXPECTED_SCHEMA, CKPT_NONE, "malformed expected parameter schema");
    ckpt_schema *file = ckpt_schema_empty();
    if (!file) return ckpt_fail_oom(err);
    uint64_t declared;
    int rc = ckpt_schema_read(r, expected, file, &declared, err);
    ckpt_schema_free(file);
    return rc;
}

int ckpt_schema_read_and_check_representatives(ckpt_reader *r, const ckpt_schema *expected, ckpt_error *err)
{
    if (!ckpt_schema_is_well_formed(expected))
        return ckpt_fail(err, CKPT_E_MALFORMED_EXPECTED_SCHEMA, CKPT_NONE, "malformed expected parameter schema");
    return ckpt_schema_read_tags(r, expected, NULL, err);
}
