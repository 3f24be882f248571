/* Reading the TLADAMF family (format.md 4 steps 9-11, and 5): the moment entries, their
 * payloads (skipped, or scanned for statistics), the end of the file. */
#include "families/tladamf/tladamf.h"

#include <stdlib.h>

/* One payload: statistics when asked for, else skipped (never read). */
static int payload(ckpt_parse *p, uint64_t count, unsigned width, ckpt_stats **out)
{
    *out = NULL;
    if (!(p->flags & CKPT_INSPECT_STATS)) return ckpt_skip_payload(p->r, count, width, p->err);
    return ckpt_scan_payload(p->r, &p->scan, count, width, out, p->err);
}

/* The entry checks, in the reference order, for the reader (format.md 4 step 10, 8) and the
 * writer (format.md 4 save checks) alike: duplicate, id in range, owner, step, size. */
int ckpt_adam_check_entry(const ckpt_schema *layout, const ckpt_reader_rule *rule, const ckpt_entry_check *e,
                          ckpt_error *err)
{
    const char *F = CKPT_TLADAMF_PREFIX;
    unsigned long long uid = e->id;
    uint64_t len = e->on_read ? 8 : 0, slot = e->id < ckpt_schema_count(layout) ? e->id : CKPT_NONE;
    if (e->duplicate)
        return ckpt_fail_at(err, F, CKPT_E_DUPLICATE_ID, e->id_at, len, e->id, "duplicate parameter id %llu", uid);
    if (slot == CKPT_NONE) return ckpt_fail(err, F, CKPT_E_INVALID_ID, e->id_at, len, "invalid parameter id %llu", uid);
    if (!ckpt_reader_owns(rule, layout, e->id)) return ckpt_reader_fail_not_owner(err, rule, e->id_at, len, e->id);
    if (e->step == 0)
        return ckpt_fail_at(err, F, CKPT_E_ZERO_STEP, e->step_at, len, e->id, "zero step counter for parameter %llu",
                            uid);
    bool too_big;
    uint64_t size = ckpt_schema_size(layout, (size_t)e->id, &too_big);
    if (!too_big && e->count == size) return 0;
    if (!e->on_read) /* the writer's text has no sizes (format.md 4) */
        return ckpt_fail_at(err, F, CKPT_E_MOMENT_SIZE_MISMATCH, e->count_at, len, e->id,
                            "moment-size mismatch for parameter %llu", uid);
    char expected_size[64];
    ckpt_schema_size_decimal(layout, (size_t)e->id, expected_size, sizeof expected_size);
    return ckpt_fail_at(err, F, CKPT_E_MOMENT_SIZE_MISMATCH, e->count_at, len, e->id,
                        "moment-size mismatch for parameter %llu (file=%llu, expected=%s)", uid,
                        (unsigned long long)e->count, expected_size);
}

int ckpt_adam_parse_entries(ckpt_parse *p, const ckpt_schema *layout, int dtype, const ckpt_reader_rule *rule)
{
    ckpt_reader *r = p->r;
    ckpt_report *rep = p->rep;
    ckpt_error *err = p->err;
    const char *F = p->family->prefix;
    size_t n = ckpt_schema_count(layout);

    /* 9. entry count (optimizerStateCount; trainableCount for the oldest readers) */
    uint64_t at = rep->entries_offset = r->pos;
    uint64_t entry_count, owners = ckpt_reader_entry_count(rule, layout);
    TRY(ckpt_read_u64(r, &entry_count, err));
    rep->has_entry_count = true;
    rep->entry_count = entry_count;
    if (entry_count != owners)
        return ckpt_fail(err, F, CKPT_E_ENTRY_COUNT_MISMATCH, at, 8, "expected %llu moment entries, got %llu",
                         (unsigned long long)owners, (unsigned long long)entry_count);

    /* 10. entries, in any order; ids are checked before the payloads are touched */
    unsigned width = ckpt_dtype_width(dtype);
    uint64_t left = ckpt_reader_bytes_left(r); /* room for what the bytes left can hold */
    if (left != CKPT_NONE &&
        !ckpt_report_reserve_entries(rep, (size_t)(entry_count < left / 24 ? entry_count : left / 24)))
        return ckpt_fail_oom(err);
    p->scan.start = r->pos;
    p->scan.total = r->src->size == CKPT_NONE ? CKPT_NONE : r->src->size - r->pos;
    uint8_t *seen = calloc(n / 8 + 1, 1);
    if (!seen) return ckpt_fail_oom(err);
    int rc = 0;
    bool ascending = true;
    uint64_t previous = 0;
    for (uint64_t e = 0; e < entry_count && !rc; e++) {
        ckpt_entry_info info = {0};
        info.offset = r->pos;
        if ((rc = ckpt_read_u64(r, &info.id, err))) break;
        uint64_t id = info.id, slot = id < n ? id : CKPT_NONE;
        uint64_t step_at = r->pos;
        if ((rc = ckpt_read_u64(r, &info.step, err))) {
            err->slot = slot;
            break;
        }
        uint64_t count_at = r->pos;
        if ((rc = ckpt_read_u64(r, &info.count, err))) {
            err->slot = slot; /* a field the file cut short belongs to the entry being read */
            break;
        }
        ckpt_entry_check check = {id,          info.step, info.count, id < n && (seen[id / 8] >> (id % 8)) & 1,
                                  info.offset, step_at,   count_at,   true};
        rc = ckpt_adam_check_entry(layout, rule, &check, err);
        if (rc) break;
        seen[id / 8] |= (uint8_t)(1u << (id % 8));
        if (!p->exp && ascending && e > 0 && id < previous) {
            ascending = false;
            ckpt_report_warn(rep, "%s: moment entries are not in ascending id order (the reference writer sorts them)",
                             F);
        }
        previous = id;
        info.m_offset = r->pos;
        if ((rc = payload(p, info.count, width, &info.m))) {
            err->slot = slot;
            break;
        }
        info.v_offset = r->pos;
        if ((rc = payload(p, info.count, width, &info.v))) {
            err->slot = slot;
            ckpt_stats_free(info.m);
            break;
        }
        if (info.m) info.unhealthy = ckpt_entry_unhealthy(info.m, info.v);
        if (!ckpt_report_push_entry(rep, &info)) {
            ckpt_stats_free(info.m);
            ckpt_stats_free(info.v);
            rc = ckpt_fail_oom(err);
            break;
        }
    }
    free(seen);
    if (rc) return rc;

    /* 11. nothing may follow the last entry */
    int more = ckpt_reader_has_more(r, err);
    if (more < 0) return err->code;
    if (more) {
        uint64_t extra = r->src->size == CKPT_NONE ? 1 : r->src->size - r->pos;
        return ckpt_fail(err, F, CKPT_E_TRAILING_BYTES, r->pos, extra, "trailing bytes after final state entry");
    }
    return 0;
}
