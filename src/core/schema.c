/* ParameterSchema (format.md 3, the seed) in memory: shapes in module order, trainability flags
 * and an optional storage-sharing map; the seed's queries, and the sharing-map diagnosis of
 * format.md 5. Its bytes (write, readAndCheck) are TLADAMF's: families/tladamf/schema_io.c. */
#include "core/schema.h"

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
    return grow_slots(s, slots) && ckpt_grow((void **)&s->dims, &s->dims_cap, dims, sizeof *s->dims);
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
    if (!ckpt_grow((void **)&s->dims, &s->dims_cap, len + 1, sizeof *s->dims)) return false;
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

bool ckpt_schema_element_counts(const ckpt_schema *s, uint64_t *owned, uint64_t *tied, uint64_t *frozen)
{
    if (!ckpt_schema_is_well_formed(s)) return false;
    uint64_t sums[3] = {0, 0, 0}; /* owned, tied, frozen */
    for (size_t i = 0; i < s->n; i++) {
        bool too_big;
        uint64_t size = ckpt_schema_size(s, i, &too_big);
        uint64_t r = ckpt_schema_representative(s, i);
        uint64_t *sum = &sums[r == CKPT_NONE ? 2 : r == i ? 0 : 1];
        if (too_big || size > UINT64_MAX - *sum) return false;
        *sum += size;
    }
    *owned = sums[0];
    *tied = sums[1];
    *frozen = sums[2];
    return true;
}

uint64_t ckpt_schema_tag(const ckpt_schema *s, size_t i)
{
    uint64_t r = ckpt_schema_representative(s, i);
    return r == CKPT_NONE ? 0 : r + 1;
}
