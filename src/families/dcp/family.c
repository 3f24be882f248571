/* The DCP family (format.md 12): a PyTorch Distributed Checkpoint folder read as one source
 * (containers/bundle.h: the JS package lays a folder out with ckpt_dcp_folder_json), a lone
 * `.metadata` (its index), or a lone `.distcp` (torch.save records back to back: the note and
 * its last record). A file whose first record is torch.save's to a buffer but holds one record,
 * or whose zip is not records back to back, is a torch.save file: the PyTorch family reads it
 * (with 12.1's note when its name is a data file's). The report is an optimizer's: the schema of
 * 12.4, an entry per slot with optimizer state, and "dcp" (json.c). */
#include "families/dcp/dcp.h"

#include <math.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

extern const ckpt_family ckpt_family_dcp;
extern const ckpt_family ckpt_family_pytorch;

const ckpt_dcp *ckpt_dcp_of(const ckpt_report *rep)
{
    return rep && rep->family == &ckpt_family_dcp ? rep->family_data : NULL;
}

/* A folder's source, a pickled Metadata, or a zip whose first member is in torch.save's folder
 * for a buffer ("archive/", as DCP's _write_item writes every record). */
static bool dcp_probe(const ckpt_family *f, const uint8_t *head, size_t n, uint64_t size)
{
    (void)f;
    (void)size;
    if (ckpt_bundle_probe(head, n, DCP_PREFIX)) return true;
    if (dcp_metadata_head(head, n)) return true;
    if (n < 38 || memcmp(head, "PK\x03\x04", 4)) return false;
    size_t len = (size_t)head[26] | (size_t)head[27] << 8;
    return len >= 8 && !memcmp(head + 30, "archive/", 8);
}

static void dcp_release(ckpt_report *rep)
{
    dcp_free(rep->family_data);
    rep->family_data = NULL;
}

/* The schema (12.4): the slots' shapes, trainable = has state, each owner its own
 * representative, an alias (values equal to an earlier owner's) its owner; a slot without state
 * is "frozen or tied" until values are compared, and gets none. An entry per slot with state. */
static int schema(ckpt_report *rep, const ckpt_dcp *d)
{
    if (!(rep->schema = ckpt_schema_empty())) return ckpt_fail_oom(&rep->error);
    rep->schema_complete = d->meta_ok;
    uint64_t *map = malloc((d->slots_len ? d->slots_len : 1) * sizeof *map);
    if (!map) return ckpt_fail_oom(&rep->error);
    bool ok = true;
    int dtype = -2;
    for (size_t s = 0; ok && s < d->slots_len; s++) {
        const dcp_key *k = &d->keys[d->slots[s].key];
        ok = ckpt_schema_push_slot(rep->schema);
        for (uint32_t j = 0; ok && j < k->rank; j++) ok = ckpt_schema_push_dim(rep->schema, d->pool[k->dims + j]);
        map[s] = d->slots[s].trainable                    ? s
                 : d->slots[s].representative != DCP_NONE ? d->slots[s].representative
                                                          : CKPT_NONE;
    }
    /* an alias is trainable through its owner (format.md 3) */
    for (size_t s = 0; ok && s < d->slots_len; s++)
        ok = ckpt_schema_push_flag(rep->schema, d->slots[s].trainable || d->slots[s].representative != DCP_NONE);
    if (ok) ok = ckpt_schema_set_map(rep->schema, map, d->slots_len);
    free(map);
    if (!ok) return ckpt_fail_oom(&rep->error);
    rep->schema_declared_count = d->slots_len;
    for (size_t s = 0; s < d->slots_len; s++) {
        const dcp_slot *sl = &d->slots[s];
        if (!sl->trainable) continue;
        ckpt_entry_info e = {0};
        e.id = s;
        e.step = sl->has_step && sl->step < 18446744073709551616.0 ? (uint64_t)sl->step : 0;
        const dcp_key *k = &d->keys[sl->key];
        bool big = !ckpt_shape_size(d->pool + k->dims, k->rank, &e.count);
        if (big) e.count = 0;
        /* the moments lie in chunks across files (dcp.entries[].state) */
        e.offset = e.m_offset = e.v_offset = CKPT_NONE;
        for (int q = DCP_EXP_AVG; q <= DCP_EXP_AVG_SQ; q++) {
            size_t m = sl->state[q];
            if (m == DCP_NONE) continue;
            int dt = d->keys[m].dtype;
            dtype = dtype == -2 ? dt : dtype == dt ? dtype : CKPT_DTYPE_ANY;
        }
        if (!ckpt_report_push_entry(rep, &e)) return ckpt_fail_oom(&rep->error);
    }
    rep->has_entry_count = true;
    rep->entry_count = rep->entries_len;
    rep->dtype = dtype == -2 ? CKPT_DTYPE_ANY : dtype;
    return 0;
}

/* group g's configuration when it stores betas and eps (weight_decay 0 when it stores none) */
static bool group_config(const ckpt_dcp *d, size_t g, ckpt_config *c)
{
    if (g == DCP_NONE || g >= d->groups_len) return false;
    const dcp_group *gr = &d->groups[g];
    if (!gr->has_betas || !gr->has_eps) return false;
    c->kind = CKPT_ADAM; /* until the groups or the caller say the kind (dcp_kind_said, --kind) */
    c->beta1 = ckpt_bits_from_double(gr->beta1);
    c->beta2 = ckpt_bits_from_double(gr->beta2);
    c->epsilon = ckpt_bits_from_double(gr->eps);
    c->weight_decay = ckpt_bits_from_double(gr->has_wd ? gr->wd : 0.0);
    return true;
}

static int dcp_parse(ckpt_parse *p)
{
    ckpt_report *rep = p->rep;
    ckpt_dcp *d = calloc(1, sizeof *d);
    if (!d) return ckpt_fail_oom(p->err);
    rep->family_data = d;
    d->kind_given = -1;
    rep->dtype = CKPT_DTYPE_ANY;
    int rc = dcp_open(p, d);
    if (rc == 1) {
        /* one torch.save record: section 10's file */
        dcp_release(rep);
        p->family = rep->family = &ckpt_family_pytorch;
        rep->dtype = ckpt_family_pytorch.element_dtype;
        p->r->prefix = ckpt_family_pytorch.name;
        rc = ckpt_family_pytorch.impl->parse(p);
        /* one record named as DCP names its data files (one per item): 12.1's note, as a warning */
        if (dcp_distcp_name(p->name)) {
            char *note = dcp_distcp_note(p->name);
            bool ok = note && ckpt_report_warn(rep, "%s", note);
            free(note);
            if (!ok) return ckpt_fail_oom(&rep->error);
        }
        return rc;
    }
    if (rc) return rc;
    if (!d->meta_ok) return rep->error.code;
    /* a folder whose records are read: the ties by values first (they make the schema; comparing
     * stops at the first differing element), and with statistics the moments */
    const bool readable = !dcp_failed(d) && !d->lone_metadata && !d->lone_distcp;
    const bool values = (p->flags & CKPT_INSPECT_STATS) && readable;
    if (readable) TRY(dcp_ties(d, rep));
    TRY(schema(rep, d));
    /* each group's configuration; the report's is the first group's */
    if (d->groups_len) {
        d->configs = calloc(d->groups_len, sizeof *d->configs);
        d->has_config = calloc(d->groups_len, sizeof *d->has_config);
        if (!d->configs || !d->has_config) return ckpt_fail_oom(p->err);
        const int said = dcp_kind_said(d);
        for (size_t g = 0; g < d->groups_len; g++) {
            d->has_config[g] = group_config(d, g, &d->configs[g]);
            if (said >= 0) d->configs[g].kind = (uint64_t)said;
        }
        if ((rep->has_config = d->has_config[0])) rep->config = d->configs[0];
    }
    if (!dcp_failed(d) && !d->lone_metadata) TRY(dcp_items(d, rep));
    if (values) {
        p->scan.start = 0;
        TRY(dcp_stats(d, rep, p->r, &p->scan, p->err));
    }
    return rep->error.code;
}

static size_t dcp_item_count(const ckpt_report *rep)
{
    const ckpt_dcp *d = ckpt_dcp_of(rep);
    return d ? d->items_len : 0;
}

/* Item k: entry k's slot, its exp_avg and exp_avg_sq (both or neither), max_exp_avg_sq and the
 * parameter's values where readable, each a payload whose spans are its runs */
static ckpt_item dcp_report_item(ckpt_report *rep, size_t k)
{
    ckpt_dcp *d = rep->family_data;
    dcp_item *di = &d->items[k];
    ckpt_entry_info *e = &rep->entries[k];
    ckpt_item it = {.slot = e->id, .count = e->count, .unhealthy = &e->unhealthy};
    static const char *const names[DCP_PAYLOADS] = {"exp_avg", "exp_avg_sq", "max_exp_avg_sq", ""};
    ckpt_stats **stats[DCP_PAYLOADS] = {&e->m, &e->v, &di->stats[2], &di->stats[3]};
    bool moments = di->spans[0] && di->spans[1];
    for (int q = moments ? 0 : 3; q < DCP_PAYLOADS; q++) {
        if (!di->spans[q] || (q == 2 && !moments)) continue;
        it.payload[it.payloads++] = (ckpt_payload){names[q], di->dtype[q], di->spans[q][0].offset, e->count,
                                                   NULL,     stats[q],     di->spans[q],           di->len[q]};
    }
    return it;
}

static size_t group_of_slot(const ckpt_report *rep, const ckpt_dcp *d, uint64_t slot)
{
    if (!d || slot >= d->slots_len) return DCP_NONE;
    uint64_t r = rep->schema ? ckpt_schema_representative(rep->schema, slot) : CKPT_NONE;
    return d->slots[r != CKPT_NONE && r < d->slots_len ? r : slot].group;
}

static const ckpt_config *dcp_config_of_slot(const ckpt_report *rep, uint64_t slot)
{
    const ckpt_dcp *d = ckpt_dcp_of(rep);
    size_t g = group_of_slot(rep, d, slot);
    return g != DCP_NONE && g < d->groups_len && d->configs && d->has_config[g] ? &d->configs[g] : NULL;
}

static double dcp_lr_of_slot(const ckpt_report *rep, uint64_t slot)
{
    const ckpt_dcp *d = ckpt_dcp_of(rep);
    size_t g = group_of_slot(rep, d, slot);
    return g != DCP_NONE && g < d->groups_len && d->groups[g].has_lr ? d->groups[g].lr : NAN;
}

/* DCP keeps no optimizer class: Adam or AdamW is unknown unless every group saves
 * decoupled_weight_decay, or the caller gives it */
static bool dcp_kind_unknown(const ckpt_report *rep)
{
    const ckpt_dcp *d = ckpt_dcp_of(rep);
    return !d || (d->kind_given < 0 && dcp_kind_said(d) < 0);
}

/* The caller's kind: the one the groups say is kept (another is refused, as a PyTorch file's);
 * else every group's configuration takes it */
static int dcp_set_kind(ckpt_report *rep, ckpt_kind kind, ckpt_error *err)
{
    static const char *const said_name[] = {"Adam", "AdamW"};
    ckpt_dcp *d = rep->family_data;
    if (!d || !d->groups_len)
        return ckpt_fail(err, NULL, CKPT_E_INVALID_ARGUMENT, CKPT_NONE, 0, "%s", CKPT_KIND_NO_OPTIMIZER);
    const int said = dcp_kind_said(d);
    if (said >= 0) {
        if (said == (int)kind) return 0;
        return ckpt_fail(err, NULL, CKPT_E_INVALID_ARGUMENT, CKPT_NONE, 0,
                         "--kind %s contradicts the folder: its param_groups say decoupled_weight_decay %s (%s)",
                         ckpt_kind_name(kind), said == CKPT_ADAMW ? "True" : "False", said_name[said == CKPT_ADAMW]);
    }
    d->kind_given = (int)kind;
    for (size_t g = 0; d->configs && g < d->groups_len; g++) d->configs[g].kind = kind;
    if (rep->has_config) rep->config.kind = kind;
    return 0;
}

/* A folder without errors whose every slot with state has its group's configuration: its items
 * hold each slot's state in runs (without betas and eps, health cannot tell) */
static bool dcp_items_whole(const ckpt_report *rep)
{
    const ckpt_dcp *d = ckpt_dcp_of(rep);
    if (!d || !d->items_len || dcp_failed(d)) return false;
    for (size_t k = 0; k < rep->entries_len; k++)
        if (!dcp_config_of_slot(rep, rep->entries[k].id)) return false;
    return true;
}

static uint64_t dcp_unhealthy(const ckpt_stats *a, const ckpt_stats *b)
{
    return b ? ckpt_entry_unhealthy(a, b) : ckpt_tensor_unhealthy(a, b);
}

static const char *dcp_slot_name(const ckpt_report *rep, uint64_t slot)
{
    const ckpt_dcp *d = ckpt_dcp_of(rep);
    return d && slot < d->slots_len ? d->keys[d->slots[slot].key].fqn : NULL;
}

/* A readable folder whose trained tensor's group keeps no betas or eps (torch 1.13 saves a group's
 * lr and betas only): the group, and the keys it keeps */
static int dcp_why_not_whole(const ckpt_report *rep, ckpt_error *err)
{
    const ckpt_dcp *d = ckpt_dcp_of(rep);
    if (!d || !d->items_len || dcp_failed(d)) return 0;
    for (size_t k = 0; k < rep->entries_len; k++) {
        uint64_t slot = rep->entries[k].id;
        if (dcp_config_of_slot(rep, slot)) continue;
        size_t g = group_of_slot(rep, d, slot);
        const char *name = dcp_slot_name(rep, slot);
        if (g == DCP_NONE || g >= d->groups_len) {
            return ckpt_fail(err, NULL, CKPT_E_WRONG_FAMILY, CKPT_NONE, 0,
                             "DCP: parameter %" PRIu64 " (%s) is in no parameter group: health, export, run and "
                             "diff read each trained tensor with its group's betas and eps",
                             slot, name ? name : "?");
        }
        const dcp_group *gr = &d->groups[g];
        const char *keys[4];
        size_t n = 0;
        if (gr->has_lr) keys[n++] = "lr";
        if (gr->has_betas) keys[n++] = "betas";
        if (gr->has_eps) keys[n++] = "eps";
        if (gr->has_wd) keys[n++] = "weight_decay";
        char kept[64] = "none of its settings";
        for (size_t j = 0, at = 0; j < n; j++)
            at += (size_t)snprintf(kept + at, sizeof kept - at, "%s%s", j ? ", " : "", keys[j]);
        return ckpt_fail(err, NULL, CKPT_E_WRONG_FAMILY, CKPT_NONE, 0,
                         "DCP: parameter group %zu keeps no %s (it keeps %s): health, export, run and diff "
                         "read each trained tensor with its group's betas and eps",
                         g,
                         !gr->has_betas && !gr->has_eps ? "betas and no eps"
                         : gr->has_betas                ? "eps"
                                                        : "betas",
                         kept);
    }
    return 0;
}

static const struct ckpt_family_impl dcp_impl = {
    .probe = dcp_probe,
    .parse = dcp_parse,
    .payloads = 2,
    .item_count = dcp_item_count,
    .item = dcp_report_item,
    .unhealthy = dcp_unhealthy,
    .json_body = dcp_report_json,
    .release = dcp_release,
    .unread = "a distributed checkpoint's state lies in chunks across its files: inspect and check read it, health, "
              "export, run and diff read its folder, convert its consolidated pair; pairing does not read it yet",
    .items_whole = dcp_items_whole,
    .why_not_whole = dcp_why_not_whole,
    .config_of_slot = dcp_config_of_slot,
    .lr_of_slot = dcp_lr_of_slot,
    .kind_unknown = dcp_kind_unknown,
    .set_kind = dcp_set_kind,
    .slot_name = dcp_slot_name,
    .pair_new_model = ckpt_dcp_pair_new_model,
    .holds = "a distributed checkpoint's model and optimizer state",
    .hint_not = "a TorchLean checkpoint",
};

const ckpt_family ckpt_family_dcp = {
    CKPT_FAMILY_DCP, "DCP",    "PyTorch Distributed Checkpoint", DCP_PREFIX, 0, 0, CKPT_ROLE_OPTIMIZER,
    CKPT_DTYPE_ANY,  &dcp_impl};
