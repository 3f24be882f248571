/* The DeepSpeed family (format.md 11): a ZeRO checkpoint's tag folder read as one source
 * (containers/bundle.h: the JS package lays a folder out with ckpt_deepspeed_folder_json), or one
 * of its files alone (a torch.save zip whose record prefix is one of DeepSpeed's names: an
 * optimizer partition, model states). A file of such a name whose content is not DeepSpeed's is
 * read by the PyTorch family, as it would be without this one. The report is an optimizer's: the
 * schema of 11.4, an entry per trainable owner, and "deepspeed" (json.c). */
#include "families/deepspeed/deepspeed.h"

#include <stdlib.h>

extern const ckpt_family ckpt_family_deepspeed;
extern const ckpt_family ckpt_family_pytorch;

const ckpt_ds *ckpt_ds_of(const ckpt_report *rep)
{
    return rep && rep->family == &ckpt_family_deepspeed ? rep->family_data : NULL;
}

/* A folder's source, or a torch.save zip whose first record's prefix (the file's name when
 * DeepSpeed saved it; a head holds its first 34 bytes) is one of 11.1's names. */
static bool ds_probe(const ckpt_family *f, const uint8_t *head, size_t n, uint64_t size)
{
    (void)f;
    (void)size;
    if (ckpt_bundle_probe(head, n, DS_PREFIX)) return true;
    if (n < 30 || memcmp(head, "PK\x03\x04", 4)) return false;
    static const char *const stems[] = {
        "zero_pp_rank_", "bf16_zero_pp_rank_", "fp16_zero_pp_rank_", "mp_rank_", "layer_", "expp_rank_", "expert_"};
    size_t len = (size_t)head[26] | (size_t)head[27] << 8, seen = n - 30 < len ? n - 30 : len;
    for (size_t k = 0; k < sizeof stems / sizeof stems[0]; k++) {
        size_t l = strlen(stems[k]);
        if (seen >= l && !memcmp(head + 30, stems[k], l)) return true;
    }
    return false;
}

static void ds_release(ckpt_report *rep)
{
    ds_free(rep->family_data);
    rep->family_data = NULL;
}

/* A lone model-states file's module: the report's tensors (a model-state file's). */
static int module_tensors(ckpt_report *rep, const ds_file *f)
{
    rep->schema_complete = true;
    if (!(rep->schema = ckpt_schema_empty())) return ckpt_fail_oom(&rep->error);
    if (f->module == DS_NONE) return 0;
    const ckpt_torch *t = f->t;
    const ckpt_torch_model *md = &t->models[f->module];
    if (!(rep->tensors = calloc(md->count ? md->count : 1, sizeof *rep->tensors))) return ckpt_fail_oom(&rep->error);
    rep->tensors_cap = md->count;
    for (size_t i = 0; i < md->count; i++) {
        const ckpt_torch_named *nm = &t->named[md->first + i];
        const ckpt_torch_tensor *x = &t->tensors[nm->tensor];
        ckpt_tensor_info *ti = &rep->tensors[rep->tensors_len++];
        ti->count = x->count;
        ti->offset = ti->data_offset = x->at;
        ti->dtype = ckpt_torch_dtype(x->dtype);
        size_t l = strlen(nm->name) + 1;
        if (!(ti->name = malloc(l))) return ckpt_fail_oom(&rep->error);
        memcpy(ti->name, nm->name, l);
        const uint64_t *dims = ckpt_torch_size(t, nm->tensor);
        bool ok = ckpt_schema_push_slot(rep->schema);
        for (uint32_t j = 0; ok && j < x->rank; j++) ok = ckpt_schema_push_dim(rep->schema, dims[j]);
        if (!ok) return ckpt_fail_oom(&rep->error);
    }
    rep->schema_declared_count = rep->tensors_len;
    return 0;
}

/* An entry per trainable owner that has a slot: its slot, step, count and where its first
 * fragment of exp_avg lies (its statistics are the fragments', json.c gives the fragments). */
static int entries(ckpt_report *rep, ckpt_ds *ds)
{
    ds_frag_at *frags = malloc((size_t)(ds->W ? ds->W : 1) * sizeof *frags);
    if (!frags) return ckpt_fail_oom(&rep->error);
    for (size_t k = 0; k < ds->params_len; k++) {
        ds_param *p = &ds->params[k];
        if (p->slot == DS_NONE) continue;
        const ds_group *g = &ds->groups[p->flat];
        ckpt_entry_info e = {0};
        e.id = p->slot;
        e.step = g->has_step && g->step >= 0 && g->step < 18446744073709551616.0 ? (uint64_t)g->step : 0;
        e.count = p->count;
        e.offset = e.m_offset = e.v_offset = CKPT_NONE;
        /* a moment is the parameter's where every rank that holds a fragment of it holds the
         * key (the report's `keys`): one missing on a rank is no moment of the parameter */
        if (ds->layout_ok && ckpt_ds_has_key(ds, k, DS_EXP_AVG) && ckpt_ds_fragments(ds, k, DS_EXP_AVG, frags))
            e.offset = e.m_offset = frags[0].at;
        if (ds->layout_ok && ckpt_ds_has_key(ds, k, DS_EXP_AVG_SQ) && ckpt_ds_fragments(ds, k, DS_EXP_AVG_SQ, frags))
            e.v_offset = frags[0].at;
        /* m and v: the report owns them from here */
        e.m = p->stats[DS_EXP_AVG];
        e.v = p->stats[DS_EXP_AVG_SQ];
        if (e.m && e.v) e.unhealthy = ckpt_entry_unhealthy(e.m, e.v);
        if (!ckpt_report_push_entry(rep, &e)) {
            free(frags);
            return ckpt_fail_oom(&rep->error);
        }
        p->stats[DS_EXP_AVG] = p->stats[DS_EXP_AVG_SQ] = NULL;
    }
    rep->has_entry_count = true;
    rep->entry_count = rep->entries_len;
    free(frags);
    return 0;
}

/* The items, one per entry (a parameter with a slot), when the layout is read: each key held on
 * every rank of its parameter, in one dtype, a payload whose spans are its fragments. */
static int items(ckpt_report *rep, ckpt_ds *ds)
{
    if (!ds->layout_ok || !rep->schema_complete || !rep->entries_len) return 0;
    size_t total = 0;
    for (size_t k = 0; k < ds->params_len; k++)
        if (ds->params[k].slot != DS_NONE) total += DS_KEYS * ds->params[k].frags_len;
    ds_frag_at *frags = malloc((size_t)(ds->W ? ds->W : 1) * sizeof *frags);
    ds->items = calloc(rep->entries_len, sizeof *ds->items);
    ds->spans = malloc((total ? total : 1) * sizeof *ds->spans);
    if (!frags || !ds->items || !ds->spans) {
        free(frags);
        return ckpt_fail_oom(&rep->error);
    }
    size_t at = 0, n = 0;
    for (size_t k = 0; k < ds->params_len && n < rep->entries_len; k++) {
        if (ds->params[k].slot == DS_NONE) continue;
        ds_entry_item *it = &ds->items[n++];
        it->param = k;
        for (int key = 0; key < DS_KEYS; key++) {
            it->first[key] = at;
            if (!ckpt_ds_has_key(ds, k, key)) continue;
            size_t m = ckpt_ds_fragments(ds, k, key, frags);
            bool one = m > 0 && m <= ds->params[k].frags_len;
            for (size_t j = 1; one && j < m; j++) one = frags[j].dtype == frags[0].dtype;
            if (!one) continue;
            for (size_t j = 0; j < m; j++) ds->spans[at + j] = (ckpt_span){frags[j].at, frags[j].count};
            it->len[key] = m;
            it->dtype[key] = frags[0].dtype;
            at += m;
        }
    }
    ds->items_len = n;
    free(frags);
    return 0;
}

static int ds_parse(ckpt_parse *p)
{
    ckpt_report *rep = p->rep;
    ckpt_ds *ds = calloc(1, sizeof *ds);
    if (!ds) return ckpt_fail_oom(p->err);
    rep->family_data = ds;
    rep->dtype = CKPT_FLOAT32;
    int rc = ds_open(p, ds);
    if (rc == 1) {
        /* not DeepSpeed's content: the PyTorch family reads the file */
        ds_release(rep);
        p->family = rep->family = &ckpt_family_pytorch;
        rep->dtype = ckpt_family_pytorch.element_dtype;
        p->r->prefix = ckpt_family_pytorch.name;
        return ckpt_family_pytorch.impl->parse(p);
    }
    if (rc) return rc;
    if (ds->lone && ds->files_len && ds->files[0].is.role != DS_ROLE_OPTIM) {
        rep->dtype = CKPT_DTYPE_ANY; /* each tensor has its own (a bf16 run's module) */
        return module_tensors(rep, &ds->files[0]);
    }
    if (!rep->schema) {
        if (!(rep->schema = ckpt_schema_empty())) return ckpt_fail_oom(p->err);
        rep->schema_complete = ds->lone;
    }
    if ((p->flags & CKPT_INSPECT_STATS) && ds->layout_ok && rep->schema_complete) {
        p->scan.start = 0;
        TRY(ds_stats(ds, rep, &p->scan, p->err));
        TRY(ds_rounding(ds, rep, p->err));
    }
    TRY(entries(rep, ds));
    return items(rep, ds);
}

static size_t ds_item_count(const ckpt_report *rep)
{
    const ckpt_ds *ds = ckpt_ds_of(rep);
    return ds ? ds->items_len : 0;
}

/* Item k: entry k's parameter, its exp_avg and exp_avg_sq (both or neither), max_exp_avg_sq and
 * fp32 master weights (a payload of values) where held, each a payload whose spans are its
 * fragments (statistics: the entry's m and v, the parameter's others). */
static ckpt_item ds_report_item(ckpt_report *rep, size_t k)
{
    ckpt_ds *ds = rep->family_data;
    const ds_entry_item *d = &ds->items[k];
    ds_param *p = &ds->params[d->param];
    ckpt_entry_info *e = &rep->entries[k];
    ckpt_item it = {.slot = e->id, .count = p->count, .unhealthy = &e->unhealthy};
    static const char *const names[DS_KEYS] = {"exp_avg", "exp_avg_sq", "max_exp_avg_sq", ""};
    ckpt_stats **stats[DS_KEYS] = {&e->m, &e->v, &p->stats[DS_MAX_EXP_AVG_SQ], &p->stats[DS_FP32]};
    bool moments = d->len[DS_EXP_AVG] && d->len[DS_EXP_AVG_SQ];
    for (int key = moments ? 0 : DS_MAX_EXP_AVG_SQ; key < DS_KEYS; key++) {
        if (!d->len[key] || (key == DS_MAX_EXP_AVG_SQ && !moments)) continue;
        const ckpt_span *sp = &ds->spans[d->first[key]];
        it.payload[it.payloads++] =
            (ckpt_payload){names[key], d->dtype[key], sp[0].offset, p->count, NULL, stats[key], sp, d->len[key]};
    }
    return it;
}

/* A folder: its items are its parameters' state once its layout is read (one that fails a check
 * is refused as invalid); a file alone holds a partition of them. */
static bool ds_items_whole(const ckpt_report *rep)
{
    const ckpt_ds *ds = ckpt_ds_of(rep);
    return ds && !ds->lone && (ds->layout_ok || ds_failed(ds));
}

static const char *ds_slot_name(const ckpt_report *rep, uint64_t slot)
{
    const ckpt_ds *ds = ckpt_ds_of(rep);
    return ds && slot < ds->slot_count ? ds->slot_names[slot] : NULL;
}

static uint64_t ds_unhealthy(const ckpt_stats *a, const ckpt_stats *b)
{
    return b ? ckpt_entry_unhealthy(a, b) : ckpt_tensor_unhealthy(a, b);
}

static size_t group_of_slot(const ckpt_ds *ds, uint64_t slot)
{
    if (!ds || !ds->param_of_slot || slot >= ds->slot_count) return DS_NONE;
    size_t p = ds->param_of_slot[slot];
    if (p == DS_NONE) {
        /* an alias: its owner's */
        return DS_NONE;
    }
    return ds->params[p].group;
}

static const ckpt_config *ds_config_of_slot(const ckpt_report *rep, uint64_t slot)
{
    const ckpt_ds *ds = ckpt_ds_of(rep);
    if (rep->schema && slot < ckpt_schema_count(rep->schema)) {
        uint64_t r = ckpt_schema_representative(rep->schema, slot);
        if (r != CKPT_NONE) slot = r;
    }
    size_t g = group_of_slot(ds, slot);
    return g != DS_NONE && g < ds->param_groups && ds->has_config[g] ? &ds->configs[g] : NULL;
}

static double ds_lr_of_slot(const ckpt_report *rep, uint64_t slot)
{
    const ckpt_ds *ds = ckpt_ds_of(rep);
    if (rep->schema && slot < ckpt_schema_count(rep->schema)) {
        uint64_t r = ckpt_schema_representative(rep->schema, slot);
        if (r != CKPT_NONE) slot = r;
    }
    size_t g = group_of_slot(ds, slot);
    if (g != DS_NONE && ds->universal)
        return g < ds->ugroups_len && ds->ugroups[g].has & CKPT_TG_LR ? ds->ugroups[g].lr : NAN;
    if (g == DS_NONE || !ds->optim || ds->optim[0] == DS_NONE) return NAN;
    const ds_file *f = &ds->files[ds->optim[0]];
    if (f->optimizer == DS_NONE || g >= f->t->optimizers[f->optimizer].groups_len) return NAN;
    const ckpt_torch_group *gr = &f->t->groups[f->t->optimizers[f->optimizer].groups + g];
    return gr->has & CKPT_TG_LR ? gr->lr : NAN;
}

static bool ds_kind_unknown(const ckpt_report *rep)
{
    const ckpt_ds *ds = ckpt_ds_of(rep);
    return ds && ds->kind_said < 0 && ds->kind_given < 0;
}

/* The caller's kind: the one ds_config or the groups say is kept (another is refused);
 * else the groups' configurations take it */
static int ds_set_kind(ckpt_report *rep, ckpt_kind kind, ckpt_error *err)
{
    static const char *const said[] = {"Adam", "AdamW"};
    ckpt_ds *ds = rep->family_data;
    if (!ds || !ds->param_groups)
        return ckpt_fail(err, NULL, CKPT_E_INVALID_ARGUMENT, CKPT_NONE, 0, "%s", CKPT_KIND_NO_OPTIMIZER);
    if (ds->kind_said >= 0) {
        if (ds->kind_said == (int)kind) return 0;
        if (ds->kind_by_groups)
            return ckpt_fail(
                err, NULL, CKPT_E_INVALID_ARGUMENT, CKPT_NONE, 0,
                "--kind %s contradicts the checkpoint: its param_groups say decoupled_weight_decay %s (%s)",
                ckpt_kind_name(kind), ds->kind_said == CKPT_ADAMW ? "True" : "False",
                said[ds->kind_said == CKPT_ADAMW]);
        return ckpt_fail(err, NULL, CKPT_E_INVALID_ARGUMENT, CKPT_NONE, 0,
                         "--kind %s contradicts the checkpoint: its ds_config.optimizer is %s", ckpt_kind_name(kind),
                         said[ds->kind_said == CKPT_ADAMW]);
    }
    ds->kind_given = (int)kind;
    for (size_t g = 0; ds->configs && g < ds->param_groups; g++) ds->configs[g].kind = kind;
    return 0;
}

static unsigned ds_role_of(const ckpt_report *rep)
{
    const ckpt_ds *ds = ckpt_ds_of(rep);
    return ds && ds->lone && ds->files_len && ds->files[0].is.role != DS_ROLE_OPTIM ? CKPT_ROLE_MODEL
                                                                                    : CKPT_ROLE_OPTIMIZER;
}

static const struct ckpt_family_impl deepspeed_impl = {
    .probe = ds_probe,
    .parse = ds_parse,
    .payloads = 2,
    .item_count = ds_item_count,
    .item = ds_report_item,
    .config_of_slot = ds_config_of_slot,
    .lr_of_slot = ds_lr_of_slot,
    .kind_unknown = ds_kind_unknown,
    .set_kind = ds_set_kind,
    .role_of = ds_role_of,
    .unhealthy = ds_unhealthy,
    .json_body = ds_report_json,
    .release = ds_release,
    .pair_new_model = ckpt_ds_pair_new_model,
    .unread = "a DeepSpeed ZeRO checkpoint's state lies in fragments across its files: inspect and check read it, "
              "check pairs it with a model, health, export, run, diff and convert read its folder",
    .items_whole = ds_items_whole,
    .slot_name = ds_slot_name,
    .holds = "a DeepSpeed ZeRO checkpoint's optimizer state",
    .hint_not = "a TorchLean checkpoint",
};

const ckpt_family ckpt_family_deepspeed = {
    CKPT_FAMILY_DEEPSPEED, "DeepSpeed",    "DeepSpeed ZeRO checkpoint", DS_PREFIX, 0, 0, CKPT_ROLE_OPTIMIZER,
    CKPT_FLOAT32,          &deepspeed_impl};
