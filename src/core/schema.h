/* The parameter schema in memory (format.md 3, the seed; schema.c). Private to src/. */
#ifndef CKPT_CORE_SCHEMA_H
#define CKPT_CORE_SCHEMA_H

#include "base/base.h"

/* ---- schema.c (format.md 3) ---- */
struct ckpt_schema {
    size_t n; /* shapes */
    size_t flag_count;
    size_t map_count;
    bool has_map;
    uint64_t *dim_start; /* n + 1 offsets into dims */
    uint64_t *dims;      /* a slot's size is their product, computed when asked (no array of them) */
    uint8_t *requires_grad;
    uint64_t *map;        /* has_map: map_count representatives */
    size_t cap, dims_cap; /* capacities while a reader appends */
    /* derived, computed once (derive) */
    bool derived;
    bool well_formed, has_aliases;
    uint64_t state_count, trainable_count;
};
ckpt_schema *ckpt_schema_empty(void);
/* Capacity for this many slots and dims (callers bound them by the bytes left). */
bool ckpt_schema_reserve(ckpt_schema *s, size_t slots, size_t dims);
/* Append a slot, then its dims. Returns false when out of memory. */
bool ckpt_schema_push_slot(ckpt_schema *s);
bool ckpt_schema_push_dim(ckpt_schema *s, uint64_t dim);
bool ckpt_schema_push_flag(ckpt_schema *s, bool trainable);
bool ckpt_schema_set_map(ckpt_schema *s, const uint64_t *map, size_t count);
/* The format.md 5 sharing-map diagnostic for the first broken slot; 0 when well formed.
 * tag_offset: where the tags start (each slot's offset is tag_offset + 8 i), or CKPT_NONE. */
int ckpt_schema_check_sharing(const ckpt_schema *s, const char *prefix, uint64_t tag_offset, ckpt_error *err);
/* The elements of a well-formed schema's slots, by what they are (format.md 3): `owned` those of
 * the representative slots (each storage the optimizer updates, once: what
 * `sum(p.numel() for p in model.parameters() if p.requires_grad)` counts), `tied` those of the
 * slots sharing an earlier slot's storage, `frozen` those of the slots with no optimizer state
 * (frozen parameters or buffers). False, the counts untouched, when the schema is not well
 * formed or a size or a sum reaches 2^64. */
bool ckpt_schema_element_counts(const ckpt_schema *s, uint64_t *owned, uint64_t *tied, uint64_t *frozen);
/* "#[2, 3]" of slot i */
void ckpt_schema_print_shape(strbuf *sb, const ckpt_schema *s, size_t i);
/* Slot i's shape as JSON: [2,3] */
static inline void j_shape(strbuf *sb, const ckpt_schema *s, size_t i)
{
    j_dims(sb, ckpt_schema_dims(s, i), ckpt_schema_rank(s, i));
}

#endif
