/* The TLADAMF family's descriptor (format.md 4): TorchLean's CUDA Adam checkpoint, its items
 * (a moment entry each: m and v), and what the front door and the layers above ask of it. */
#include "families/tladamf/tladamf.h"

static size_t adam_item_count(const ckpt_report *rep) { return rep->entries_len; }

static ckpt_item adam_item(ckpt_report *rep, size_t k)
{
    ckpt_entry_info *e = &rep->entries[k];
    return (ckpt_item){e->id,
                       e->count,
                       2,
                       {{"exp_avg", rep->dtype, e->m_offset, e->count, NULL, &e->m, NULL, 0},
                        {"exp_avg_sq", rep->dtype, e->v_offset, e->count, NULL, &e->v, NULL, 0}},
                       &e->unhealthy};
}

/* format.md 4 step 1: the destination is checked before a byte is read */
static int adam_check_expected(const ckpt_expected *exp, ckpt_error *err)
{
    return ckpt_schema_is_well_formed(exp->schema) ? 0 : ckpt_fail_malformed_destination(err, exp->schema);
}

static const struct ckpt_family_impl adam_impl = {
    .parse = ckpt_adam_parse,
    .check_expected = adam_check_expected,
    .payloads = 2,
    .item_count = adam_item_count,
    .item = adam_item,
    .unhealthy = ckpt_entry_unhealthy,
    .json_body = ckpt_report_json_optimizer,
    .json_readers = j_readers,
    .release = ckpt_readers_free,
    .judge = ckpt_readers_judge,
    .holds = "optimizer state",
    .hint_not = "a model-state file",
};

const ckpt_family ckpt_family_tladamf = {
    CKPT_FAMILY_TLADAMF, "TLADAMF", "CUDA Adam checkpoint", CKPT_TLADAMF_PREFIX, 2, 5, CKPT_ROLE_OPTIMIZER,
    CKPT_DTYPE_ANY,      &adam_impl};
