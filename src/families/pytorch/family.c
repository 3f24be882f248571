/* The PyTorch family (format.md 10): torch.save files, a zip archive (any prefix) or the legacy
 * format's pickles, read as data by the torch object model (objects.h) and presented
 * through the front door. Nothing a file names is called.
 *
 * Opening reads the zip's central directory, the object's pickle and each record's local header
 * (a legacy file: its pickles and the storages' headers), no tensor's data; statistics read the
 * moments of the first optimizer state dict (exp_avg, exp_avg_sq, max_exp_avg_sq) through the
 * dtype table. The report has the container, the optimizer with its groups and its entries by
 * index, the model state dicts, and torch.load(weights_only=True)'s verdict. This module is the
 * family's probe, reader and descriptor; its report members are json.c, its pairing with a model
 * pair.c. */
#include "families/pytorch/json.h"
#include "families/pytorch/pair.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern const ckpt_family ckpt_family_pytorch; /* the descriptor, at the end */

static void free_names(char **names, size_t n)
{
    for (size_t k = 0; names && k < n; k++) free(names[k]);
    free(names);
}

static void tf_free(ckpt_report *rep)
{
    tf_data *d = rep->family_data;
    if (!d) return;
    if (d->t && d->stats && d->t->optimizers_len)
        for (size_t k = 0; k < 3 * d->t->optimizers[0].entries_len; k++) ckpt_stats_free(d->stats[k]);
    free(d->stats);
    free(d->model_tensor);
    free(d->idx);
    ckpt_binding_free(&d->binding);
    free(d->positional);
    free_names(d->slot_names, d->slot_count);
    free(d->group_of_slot);
    free(d->configs);
    free(d->entry_of);
    for (size_t k = 0; d->vmax && k < d->slot_count; k++) ckpt_stats_free(d->vmax[k]);
    free(d->vmax);
    free(d->undecided);
    free(d->known);
    ckpt_torch_free(d->t);
    free(d);
}

/* A zip whose first member sits in a folder (torch.save writes "{prefix}/data.pkl", ...: a
 * NumPy .npz's members have none), or a pickle whose first object is the legacy magic number
 * 0x1950a86a20f9469cfc6c (protocol 2, LONG1 of 10 bytes). */
static bool tf_probe(const ckpt_family *f, const uint8_t *head, size_t n, uint64_t size)
{
    (void)f;
    (void)size;
    static const uint8_t legacy[] = {0x80, 0x02, 0x8a, 0x0a, 0x6c, 0xfc, 0x9c,
                                     0x46, 0xf9, 0x20, 0x6a, 0xa8, 0x50, 0x19};
    if (n >= sizeof legacy && !memcmp(head, legacy, sizeof legacy)) return true;
    if (n < 30 || memcmp(head, "PK\x03\x04", 4)) return false;
    size_t len = (size_t)head[26] | (size_t)head[27] << 8;
    for (size_t k = 0; k < len && 30 + k < n; k++)
        if (head[30 + k] == '/') return true;
    return false;
}

/* A torch.save zip met where another family was expected (its first member, whatever the prefix) */
static const char *tf_hint(const uint8_t *head, size_t n)
{
    bool zip = n >= 4 && !memcmp(head, "PK\x03\x04", 4);
    return zip && (ckpt_zip_first_member_ends(head, n, "data.pkl") ||
                   ckpt_zip_first_member_ends(head, n, ".data/version") ||
                   ckpt_zip_first_member_ends(head, n, "/version"))
               ? "this is a PyTorch file (torch.save's zip archive), not a TorchLean checkpoint: ckptscope inspect "
                 "reads it"
               : NULL;
}

/* Statistics of tensor k (contiguous, of a dtype with statistics), else none. */
static int scan_tensor(ckpt_parse *p, const ckpt_torch *t, size_t k, ckpt_stats **out)
{
    if (k == CKPT_TORCH_NONE) return 0;
    const ckpt_torch_tensor *x = &t->tensors[k];
    int dtype = ckpt_torch_dtype(x->dtype);
    if (!x->contiguous || !ckpt_dtype_has_stats(dtype)) return 0;
    p->r->pos = x->at;
    return ckpt_scan_payload_dtype(p->r, &p->scan, x->count, dtype, out, p->err);
}

/* The preferred model state dict's tensors as the report's tensors and its schema of shapes. */
static int model_tensors(ckpt_report *rep, tf_data *d, ckpt_error *err)
{
    const ckpt_torch *t = d->t;
    rep->schema_complete = true;
    if (!(rep->schema = ckpt_schema_empty())) return ckpt_fail_oom(err);
    if (t->model == CKPT_TORCH_NONE) return 0;
    const ckpt_torch_model *md = &t->models[t->model];
    rep->tensors = calloc(md->count ? md->count : 1, sizeof *rep->tensors);
    d->model_tensor = malloc((md->count ? md->count : 1) * sizeof *d->model_tensor);
    if (!rep->tensors || !d->model_tensor) return ckpt_fail_oom(err);
    rep->tensors_cap = md->count;
    for (size_t i = 0; i < md->count; i++) {
        const ckpt_torch_named *nm = &t->named[md->first + i];
        const ckpt_torch_tensor *x = &t->tensors[nm->tensor];
        ckpt_tensor_info *ti = &rep->tensors[rep->tensors_len];
        ti->count = x->count;
        ti->offset = ti->data_offset = x->at;
        ti->dtype = ckpt_torch_dtype(x->dtype);
        if (!(ti->name = ckpt_torch_dup(nm->name))) return ckpt_fail_oom(err);
        d->model_tensor[rep->tensors_len++] = nm->tensor;
        const uint64_t *dims = ckpt_torch_size(t, nm->tensor);
        bool ok = ckpt_schema_push_slot(rep->schema);
        for (uint32_t j = 0; ok && j < x->rank; j++) ok = ckpt_schema_push_dim(rep->schema, dims[j]);
        if (!ok) return ckpt_fail_oom(err);
    }
    rep->schema_declared_count = rep->tensors_len;
    return 0;
}

static int tf_parse(ckpt_parse *p)
{
    ckpt_report *rep = p->rep;
    tf_data *d = calloc(1, sizeof *d);
    if (!d) return ckpt_fail_oom(p->err);
    rep->family_data = d;
    rep->dtype = CKPT_DTYPE_ANY;
    TRY(ckpt_torch_open(p->r->src, "file", &d->t, p->err));
    /* the model state dict's tensors are the report's tensors, as a model-state file's; an
     * optimizer has no slots of its own until it is paired with its model (format.md 10.4) */
    TRY(model_tensors(rep, d, p->err));
    const ckpt_torch *t = d->t;
    if (t->container_warning && !ckpt_report_warn(rep, "%s", t->container_warning)) return ckpt_fail_oom(p->err);
    strbuf w = {0};
    ckpt_torch_weights_only_warning(&w, t);
    if (w.failed || (w.len && !ckpt_report_warn(rep, "%s", w.data))) {
        sb_free(&w);
        return ckpt_fail_oom(p->err);
    }
    sb_free(&w);
    if (t->optimizers_len && t->optimizers[0].keying == CKPT_TORCH_KEYED_FLAT &&
        !ckpt_report_warn(rep,
                          "DCP: the flattened optimizer state keeps no group boundaries: parameters with equal "
                          "hyperparameters form one group (%zu groups)",
                          t->optimizers[0].groups_len))
        return ckpt_fail_oom(p->err);
    if (!(p->flags & CKPT_INSPECT_STATS)) return 0;
    p->scan.start = 0;
    p->scan.total = rep->size;
    for (size_t i = 0; i < rep->tensors_len; i++) TRY(scan_tensor(p, t, d->model_tensor[i], &rep->tensors[i].values));
    if (!t->optimizers_len) return 0;
    const ckpt_torch_optimizer *o = &t->optimizers[0];
    if (!(d->stats = calloc(3 * o->entries_len + 1, sizeof *d->stats))) return ckpt_fail_oom(p->err);
    for (size_t k = 0; k < o->entries_len; k++) {
        const ckpt_torch_entry *e = &t->entries[o->entries + k];
        TRY(scan_tensor(p, t, e->exp_avg, &d->stats[3 * k]));
        TRY(scan_tensor(p, t, e->exp_avg_sq, &d->stats[3 * k + 1]));
        TRY(scan_tensor(p, t, e->max_exp_avg_sq, &d->stats[3 * k + 2]));
    }
    return 0;
}

static size_t tf_item_count(const ckpt_report *rep) { return rep->entries_len ? rep->entries_len : rep->tensors_len; }

/* A paired optimizer's item is a slot's moments (and amsgrad's max_exp_avg_sq); otherwise a
 * model tensor's values. */
static ckpt_item tf_item(ckpt_report *rep, size_t k)
{
    if (!rep->entries_len) return ckpt_state_item(rep, k);
    tf_data *d = rep->family_data;
    ckpt_entry_info *e = &rep->entries[k];
    ckpt_item it = {e->id,
                    e->count,
                    2,
                    {{"exp_avg", rep->dtype, e->m_offset, e->count, NULL, &e->m, NULL, 0},
                     {"exp_avg_sq", rep->dtype, e->v_offset, e->count, NULL, &e->v, NULL, 0}},
                    &e->unhealthy};
    size_t vm = d->t->entries[d->entry_of[k]].max_exp_avg_sq;
    if (vm != CKPT_TORCH_NONE && d->t->tensors[vm].contiguous && d->t->tensors[vm].count == e->count &&
        ckpt_torch_dtype(d->t->tensors[vm].dtype) == rep->dtype)
        it.payload[it.payloads++] =
            (ckpt_payload){"max_exp_avg_sq", rep->dtype, d->t->tensors[vm].at, e->count, NULL, &d->vmax[k], NULL, 0};
    return it;
}

static uint64_t tf_unhealthy(const ckpt_stats *a, const ckpt_stats *b)
{
    return b ? ckpt_entry_unhealthy(a, b) : ckpt_tensor_unhealthy(a, b);
}

/* A paired report is the pair's optimizer (its entries) or its model (its tensors); else the
 * file holds an optimizer when it has one. */
static unsigned tf_role_of(const ckpt_report *rep)
{
    const tf_data *d = rep->family_data;
    if (rep->slots_bound) return rep->tensors_len ? CKPT_ROLE_MODEL : CKPT_ROLE_OPTIMIZER;
    return d && d->t && d->t->optimizers_len ? CKPT_ROLE_OPTIMIZER : CKPT_ROLE_MODEL;
}

static double tf_lr_of_slot(const ckpt_report *rep, uint64_t slot)
{
    const tf_data *d = rep->family_data;
    if (!rep->slots_bound || !d || !d->configs || slot >= d->slot_count) return NAN;
    const ckpt_torch_group *gr = &d->t->groups[d->t->optimizers[0].groups + d->group_of_slot[slot]];
    return gr->has & CKPT_TG_LR ? gr->lr : NAN;
}

static bool tf_kind_unknown(const ckpt_report *rep)
{
    const tf_data *d = rep->family_data;
    return d && d->t && d->t->optimizers_len && d->t->optimizers[0].kind == CKPT_TORCH_KIND_UNKNOWN;
}

static const ckpt_config *tf_config_of_slot(const ckpt_report *rep, uint64_t slot)
{
    const tf_data *d = rep->family_data;
    if (!rep->slots_bound || !d || !d->configs || slot >= d->slot_count) return NULL;
    return &d->configs[d->group_of_slot[slot]];
}

/* The kind a PyTorch optimizer's file does not say (format.md 10.3: torch 1.13's AdamW writes no
 * decoupled_weight_decay), given by the caller: the groups' configurations take it, before the
 * pairing or after. A file that says its kind keeps it: another one is refused, naming --kind. */
static int tf_set_kind(ckpt_report *rep, ckpt_kind kind, ckpt_error *err)
{
    static const char *const said[] = {"Adam", "AdamW"};
    tf_data *d = rep->family_data;
    if (!d || !d->t || !d->t->optimizers_len)
        return ckpt_fail(err, NULL, CKPT_E_INVALID_ARGUMENT, CKPT_NONE, 0, "%s", CKPT_KIND_NO_OPTIMIZER);
    ckpt_torch_optimizer *o = &d->t->optimizers[0];
    ckpt_torch_kind want = kind == CKPT_ADAMW ? CKPT_TORCH_KIND_ADAMW : CKPT_TORCH_KIND_ADAM;
    if (!d->kind_given) d->own = o->kind;
    d->kind_given = true;
    if (d->own != CKPT_TORCH_KIND_UNKNOWN && d->own != want)
        return ckpt_fail(err, NULL, CKPT_E_INVALID_ARGUMENT, CKPT_NONE, 0,
                         "--kind %s contradicts the file: its param_groups say decoupled_weight_decay %s (%s)",
                         ckpt_kind_name(kind), d->own == CKPT_TORCH_KIND_ADAMW ? "True" : "False",
                         said[d->own == CKPT_TORCH_KIND_ADAMW]);
    o->kind = want;
    for (size_t g = 0; d->configs && g < o->groups_len; g++) d->configs[g].kind = kind;
    return 0;
}

static int tf_bind(ckpt_report *ro, const ckpt_report *rm, const ckpt_pair_options *o, const ckpt_report *trained,
                   size_t **view, size_t *view_len, ckpt_pair_result *res)
{
    return ckpt_torch_bind(ro, rm, rm->family == &ckpt_family_pytorch, o, trained, view, view_len, res);
}

static const struct ckpt_family_impl torch_impl = {
    .probe = tf_probe,
    .parse = tf_parse,
    .payloads = 3,
    .item_count = tf_item_count,
    .item = tf_item,
    .config_of_slot = tf_config_of_slot,
    .role_of = tf_role_of,
    .lr_of_slot = tf_lr_of_slot,
    .convert_config = ckpt_torch_convert_config,
    .kind_unknown = tf_kind_unknown,
    .set_kind = tf_set_kind,
    .unhealthy = tf_unhealthy,
    .json_body = ckpt_torch_report_json,
    .release = tf_free,
    .hint = tf_hint,
    .bind = tf_bind,
    .model_slots = ckpt_torch_model_slots,
    .holds = "optimizer state and model tensors",
    .hint_not = "a model-state file",
};

const ckpt_family ckpt_family_pytorch = {
    CKPT_FAMILY_PYTORCH, "PyTorch",  "torch.save file", "PyTorch", 0, 0, CKPT_ROLE_OPTIMIZER | CKPT_ROLE_MODEL,
    CKPT_DTYPE_ANY,      &torch_impl};
