/* Writing the TLADAMF family (format.md 4, "Which version a writer chooses" and the save checks):
 * every check runs before the first byte goes to the sink, so a failed save writes nothing. */
#include "families/tladamf/tladamf.h"

#include <stdlib.h>
#include <string.h>

uint64_t ckpt_write_version(const ckpt_write_desc *d)
{
    if (d->dtype == CKPT_FLOAT64) return 5;
    if (d->has_random_counter) return 4;
    if (d->schema && ckpt_schema_has_aliases(d->schema)) return 3;
    return 2;
}

static int cmp_entry(const void *a, const void *b)
{
    uint64_t x = (*(const ckpt_entry_in *const *)a)->id, y = (*(const ckpt_entry_in *const *)b)->id;
    return x < y ? -1 : x > y;
}

#define F CKPT_TLADAMF_PREFIX
#define NO CKPT_NONE, 0 /* in-memory input: no offset, no field length */

static int check_version(const ckpt_write_desc *d, uint64_t version, ckpt_error *err)
{
    const int e = CKPT_E_VERSION_CANNOT_REPRESENT;
    unsigned long long v = version;
    const ckpt_family *f = &ckpt_family_tladamf;
    if (version < f->version_min || version > f->version_max)
        return ckpt_fail(err, F, e, NO, "cannot write format version %llu; expected %llu through %llu", v,
                         (unsigned long long)f->version_min, (unsigned long long)f->version_max);
    if (d->dtype == CKPT_FLOAT64 && version != 5)
        return ckpt_fail(err, F, e, NO, "format version %llu cannot hold float64 moments (only version 5 can)", v);
    if (d->has_random_counter && version < 4)
        return ckpt_fail(err, F, e, NO, "format version %llu cannot hold a random counter (versions 4 and 5 can)", v);
    if (!d->has_random_counter && version == 4)
        return ckpt_fail(err, F, e, NO, "format version 4 always holds a random counter, and none was given");
    if (version == 2 && ckpt_schema_has_aliases(d->schema))
        return ckpt_fail(err, F, e, NO,
                         "format version 2 cannot hold shared parameter histories (versions 3 to 5 can)");
    return 0;
}

/* The save checks of docs/format.md 4, in order, over entries sorted by id. */
static int check_entries(const ckpt_write_desc *d, const ckpt_entry_in **sorted, ckpt_error *err)
{
    const ckpt_schema *s = d->schema;
    uint64_t owners = ckpt_schema_optimizer_state_count(s), width = d->dtype == CKPT_FLOAT64 ? 8 : 4;
    if (d->entry_count != owners)
        return ckpt_fail(err, F, CKPT_E_ENTRY_COUNT_MISMATCH, NO, "expected %llu moment entries, got %llu",
                         (unsigned long long)owners, (unsigned long long)d->entry_count);
    for (size_t k = 0; k < d->entry_count; k++) {
        const ckpt_entry_in *e = sorted[k];
        unsigned long long id = e->id;
        ckpt_entry_check check = {e->id,     e->step,   e->count,  k > 0 && sorted[k - 1]->id == e->id,
                                  CKPT_NONE, CKPT_NONE, CKPT_NONE, false};
        TRY(ckpt_adam_check_entry(s, ckpt_reader_rule_get(CKPT_READER_DEFAULT), &check, err));
        uint64_t bytes;
        if (ckpt_mul_overflows(e->count, width, &bytes) || e->m_bytes != bytes || e->v_bytes != bytes ||
            (bytes && (!e->m || !e->v)) || bytes > SIZE_MAX)
            return ckpt_fail_at(err, F, CKPT_E_INVALID_PAYLOAD, NO, e->id, "invalid moment payload for parameter %llu",
                                id);
    }
    return 0;
}

/* The header, format.md 4 fields 1-6: magic, version, (v5) dtype, config, (v5) flag, counter. */
int ckpt_adam_write_header(uint64_t version, int dtype, const ckpt_config *c, bool has_counter, uint64_t counter,
                           const ckpt_sink *out, ckpt_error *err)
{
    uint8_t head[8 * 9 + CKPT_MAGIC_LEN];
    size_t n = 0;
    memcpy(head, ckpt_family_tladamf.magic, CKPT_MAGIC_LEN);
    n += CKPT_MAGIC_LEN;
#define PUT(x) (ckpt_put_u64le(head + n, (x)), n += 8)
    PUT(version);
    if (version == 5) PUT((uint64_t)dtype);
    PUT(c->kind);
    PUT(c->beta1);
    PUT(c->beta2);
    PUT(c->epsilon);
    PUT(c->weight_decay);
    if (version == 5) PUT(has_counter ? 1 : 0);
    if (has_counter) PUT(counter);
#undef PUT
    return ckpt_sink_bytes(out, head, n, err);
}

static int write_all(const ckpt_write_desc *d, uint64_t version, const ckpt_entry_in **sorted, const ckpt_sink *out,
                     ckpt_error *err)
{
    int rc = ckpt_adam_write_header(version, d->dtype, &d->config, d->has_random_counter, d->random_counter, out, err);
    if (!rc) rc = ckpt_schema_write(d->schema, out, err);
    if (!rc && version >= 3) rc = ckpt_schema_write_representatives(d->schema, out, err);
    if (!rc) rc = ckpt_sink_u64(out, d->entry_count, err);
    for (size_t k = 0; k < d->entry_count && !rc; k++) {
        const ckpt_entry_in *e = sorted[k];
        uint8_t rec[24];
        ckpt_put_u64le(rec, e->id);
        ckpt_put_u64le(rec + 8, e->step);
        ckpt_put_u64le(rec + 16, e->count);
        rc = ckpt_sink_bytes(out, rec, sizeof rec, err);
        if (!rc && e->m_bytes) rc = ckpt_sink_bytes(out, e->m, (size_t)e->m_bytes, err);
        if (!rc && e->v_bytes) rc = ckpt_sink_bytes(out, e->v, (size_t)e->v_bytes, err);
    }
    return rc;
}

/* Every save check of format.md 4, in order, before a byte is written. */
static int check_all(const ckpt_write_desc *d, uint64_t version, const ckpt_entry_in **sorted, ckpt_error *err)
{
    TRY(check_version(d, version, err));
    TRY(ckpt_config_validate(&d->config, d->dtype, err));
    TRY(check_entries(d, sorted, err));
    return ckpt_schema_check_sizes_fit(d->schema, err);
}

int ckpt_write(const ckpt_write_desc *d, const ckpt_sink *out, ckpt_error *err)
{
    if (!d || !d->schema || !out || (d->dtype != CKPT_FLOAT32 && d->dtype != CKPT_FLOAT64) ||
        (d->entry_count && !d->entries))
        return ckpt_fail(err, NULL, CKPT_E_INVALID_ARGUMENT, NO, "invalid arguments to the checkpoint writer");
    const ckpt_schema *s = d->schema;
    if (!ckpt_schema_is_well_formed(s)) return ckpt_fail_malformed_destination(err, s);
    uint64_t version = d->version ? d->version : ckpt_write_version(d);
    const ckpt_entry_in **sorted = malloc((d->entry_count ? d->entry_count : 1) * sizeof *sorted);
    if (!sorted) return ckpt_fail_oom(err);
    for (size_t k = 0; k < d->entry_count; k++) sorted[k] = &d->entries[k];
    qsort(sorted, d->entry_count, sizeof *sorted, cmp_entry);
    int rc = check_all(d, version, sorted, err);
    if (rc && err) err->subject = CKPT_SUBJECT_EXPECTED; /* the description is at fault, not a file */
    if (!rc) rc = write_all(d, version, sorted, out, err);
    free(sorted);
    return rc;
}
