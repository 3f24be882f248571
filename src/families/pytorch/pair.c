/* A PyTorch optimizer paired with its model (format.md 10.4): the model's slots gathered from
 * whatever file holds it (a torch.save state dict, with ties by storage identity; a safetensors
 * file, ordered by names), the indices placed on them (schema.c), and the optimizer's
 * report made the pair's: a schema of slots, entries by slot, per-slot configurations. Also the
 * pairing's JSON and the one configuration a conversion to TorchLean writes. */
#include "families/pytorch/pair.h"
#include "core/pair_result.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool is_buffer_name(const char *name)
{
    static const char *const suffixes[] = {"running_mean", "running_var", "num_batches_tracked"};
    size_t n = strlen(name);
    for (size_t k = 0; k < 3; k++) {
        size_t m = strlen(suffixes[k]);
        if (n >= m && !strcmp(name + n - m, suffixes[k]) && (n == m || name[n - m - 1] == '.')) return true;
    }
    return false;
}

static bool is_floating(int dtype)
{
    return dtype == CKPT_FLOAT32 || dtype == CKPT_FLOAT64 || dtype == CKPT_FLOAT16 || dtype == CKPT_BFLOAT16;
}

/* Files that cannot be paired at all (not a verdict): the pair's error, about index (or -1). */
static int fail_pair(ckpt_pair_result *res, int64_t index, const char *text)
{
    ckpt_fail(&res->error, "PyTorch", CKPT_E_TORCH_NO_PAIR, CKPT_NONE, 0, "%s", text ? text : "");
    if (!text) return ckpt_fail_oom(&res->error);
    if (index >= 0) res->error.index = (uint64_t)index;
    return res->error.code;
}

/* The same, with the text "index {i}{what}{value}{after}" (value and after may be NULL). */
static int fail_index(ckpt_pair_result *res, int64_t index, const char *what, const char *value, const char *after)
{
    strbuf sb = {0};
    sb_printf(&sb, "index %lld%s%s%s", (long long)index, what, value ? value : "", after ? after : "");
    int rc = fail_pair(res, index, sb.failed ? NULL : sb.data);
    sb_free(&sb);
    return rc;
}

typedef struct bind_in {
    ckpt_bind_slot *slots;
    size_t n;
    size_t *view;    /* slot i -> the model report's tensor */
    uint8_t *buffer; /* slot i is known to be a buffer (saved as a plain tensor beside Parameters) */
    bool shape_only;
    bool ordered_by_names;
} bind_in;

static void bind_in_free(bind_in *in)
{
    free(in->slots);
    free(in->view);
    free(in->buffer);
}

/* The model's slots, in model order: its floating tensors less BatchNorm's buffers; ties by
 * storage identity when the model is a torch.save state dict. */
static int gather_slots(const ckpt_report *rm, bool torch, const char *const *names, size_t name_count,
                        bool param_names, bind_in *in, ckpt_pair_result *res)
{
    size_t nt = rm->tensors_len;
    size_t *order = malloc((nt ? nt : 1) * sizeof *order);
    in->slots = calloc(nt ? nt : 1, sizeof *in->slots);
    in->view = malloc((nt ? nt : 1) * sizeof *in->view);
    in->buffer = calloc(nt ? nt : 1, 1);
    if (!order || !in->slots || !in->view || !in->buffer) {
        free(order);
        return ckpt_fail_oom(&res->error);
    }
    size_t k = 0;
    bool unordered = rm->family && rm->family->impl->unordered;
    if (unordered && names) {
        /* the model's names in order; names the file lacks (dropped tied copies) are skipped */
        uint8_t *taken = calloc(nt ? nt : 1, 1);
        if (!taken) {
            free(order);
            return ckpt_fail_oom(&res->error);
        }
        for (size_t j = 0; j < name_count; j++)
            for (size_t i = 0; i < nt; i++)
                if (!taken[i] && rm->tensors[i].name && !strcmp(rm->tensors[i].name, names[j])) {
                    taken[i] = 1;
                    order[k++] = i;
                    break;
                }
        for (size_t i = 0; i < nt; i++)
            if (!taken[i]) order[k++] = i;
        free(taken);
        in->ordered_by_names = true;
    } else {
        for (size_t i = 0; i < nt; i++) order[k++] = i;
    }
    in->shape_only = unordered && !names && !param_names;
    const tf_data *md = torch ? rm->family_data : NULL;
    /* a dict that holds Parameters (state_dict(keep_vars=True)) tells its buffers apart: they
     * are the plain tensors beside them */
    bool parameters = false;
    for (size_t i = 0; md && i < nt && !parameters; i++) parameters = md->t->tensors[md->model_tensor[i]].parameter;
    for (size_t j = 0; j < nt; j++) {
        size_t i = order[j];
        const ckpt_tensor_info *ti = &rm->tensors[i];
        const char *name = ti->name ? ti->name : (names && i < name_count ? names[i] : NULL);
        if (!is_floating(ti->dtype) || (name && is_buffer_name(name))) continue;
        ckpt_bind_slot *sl = &in->slots[in->n];
        sl->name = name ? name : "";
        sl->rank = (uint32_t)ckpt_schema_rank(rm->schema, i);
        sl->dims = ckpt_schema_dims(rm->schema, i);
        sl->tie = CKPT_NONE;
        for (size_t q = 0; md && q < in->n && sl->tie == CKPT_NONE; q++)
            if (ckpt_torch_same(md->t, md->model_tensor[in->view[q]], md->model_tensor[i]))
                sl->tie = in->slots[q].tie == CKPT_NONE ? q : in->slots[q].tie;
        in->buffer[in->n] = parameters && !md->t->tensors[md->model_tensor[i]].parameter;
        in->view[in->n++] = i;
    }
    free(order);
    return 0;
}

/* The names given as frozen (and the family's own list) onto the slots: a tie's owner is frozen
 * when any of its names is (one storage), and its ties with it. A name the model does not have
 * is refused; one of a tensor that is no slot (a BatchNorm buffer, integers) is no parameter. */
static int mark_frozen(const ckpt_report *rm, bind_in *in, const char *const *frozen, size_t frozen_count,
                       const char *model_label, ckpt_pair_result *res)
{
    for (size_t k = 0; k < frozen_count; k++) {
        bool found = false;
        for (size_t i = 0; i < rm->tensors_len && !found; i++)
            found = rm->tensors[i].name && !strcmp(rm->tensors[i].name, frozen[k]);
        if (!found) {
            strbuf sb = {0};
            sb_printf(&sb, "--frozen names %s, which %s does not have", frozen[k], model_label);
            int rc = fail_pair(res, -1, sb.failed ? NULL : sb.data);
            res->error.code = CKPT_E_INVALID_ARGUMENT;
            sb_free(&sb);
            return rc;
        }
        for (size_t q = 0; q < in->n; q++) {
            if (strcmp(in->slots[q].name, frozen[k])) continue;
            uint64_t owner = in->slots[q].tie == CKPT_NONE ? q : in->slots[q].tie;
            in->slots[owner].frozen = true;
        }
    }
    for (size_t q = 0; q < in->n; q++)
        if (in->slots[q].tie != CKPT_NONE) in->slots[q].frozen = in->slots[in->slots[q].tie].frozen;
    return 0;
}

/* The slots of a torch.save model (format.md 10.4) in model order: view[k] is the report's tensor
 * of slot k, ties[k] the earlier slot of its storage or CKPT_NONE. For a TorchLean optimizer
 * paired with such a model. */
int ckpt_torch_model_slots(const ckpt_report *rm, size_t **view, uint64_t **ties, size_t *len, ckpt_error *err)
{
    ckpt_pair_result res = {0};
    ckpt_error_clear(&res.error);
    bind_in in = {0};
    *view = NULL;
    *ties = NULL;
    *len = 0;
    if (gather_slots(rm, true, NULL, 0, false, &in, &res)) {
        bind_in_free(&in);
        int code = res.error.code;
        ckpt_error_move(err, &res.error);
        return code;
    }
    uint64_t *t = malloc((in.n ? in.n : 1) * sizeof *t);
    if (!t) {
        bind_in_free(&in);
        return ckpt_fail_oom(err);
    }
    for (size_t k = 0; k < in.n; k++) t[k] = in.slots[k].tie;
    *view = in.view;
    in.view = NULL;
    *ties = t;
    *len = in.n;
    bind_in_free(&in);
    return 0;
}

/* The optimizer's indices in the order of its groups' params. */
static void index_state(const ckpt_torch *t, ckpt_bind_index *x)
{
    const ckpt_torch_optimizer *o = &t->optimizers[0];
    for (size_t e = 0; e < o->entries_len; e++) {
        const ckpt_torch_entry *en = &t->entries[o->entries + e];
        if (en->index != x->index) continue;
        size_t lead = en->exp_avg != CKPT_TORCH_NONE ? en->exp_avg : en->exp_avg_sq;
        for (size_t q = 0; lead == CKPT_TORCH_NONE && q < en->other_len; q++) lead = t->named[en->other + q].tensor;
        if (lead != CKPT_TORCH_NONE) {
            x->has_state = true;
            x->rank = t->tensors[lead].rank;
            x->dims = ckpt_torch_size(t, lead);
        }
        return;
    }
}

/* The optimizer's indices in the order of its groups' params; a name-keyed optimizer's by their
 * FQNs, then the names with state that no group lists (group SIZE_MAX). */
static int gather_indices(tf_data *d, bool *param_names, ckpt_pair_result *res)
{
    const ckpt_torch *t = d->t;
    const ckpt_torch_optimizer *o = &t->optimizers[0];
    const bool named = o->keying != CKPT_TORCH_KEYED_IDS;
    size_t total = 0;
    *param_names = o->groups_len > 0;
    for (size_t g = 0; g < o->groups_len; g++) {
        const ckpt_torch_group *gr = &t->groups[o->groups + g];
        total += gr->params_len;
        *param_names = *param_names && (gr->has & CKPT_TG_PARAM_NAMES) && gr->names_len == gr->params_len;
    }
    if (named) {
        *param_names = false;
        for (size_t e = 0; e < o->entries_len; e++) total += t->entries[o->entries + e].group == CKPT_TORCH_NONE;
    }
    if (!(d->idx = calloc(total ? total : 1, sizeof *d->idx))) return ckpt_fail_oom(&res->error);
    for (size_t g = 0; g < o->groups_len; g++) {
        const ckpt_torch_group *gr = &t->groups[o->groups + g];
        for (size_t j = 0; j < gr->params_len; j++) {
            ckpt_bind_index *x = &d->idx[d->idx_len++];
            x->index = t->ints[gr->params + j];
            x->group = g;
            x->name = *param_names || named ? t->strings[gr->names + j] : NULL;
            index_state(t, x);
        }
    }
    for (size_t e = 0; named && e < o->entries_len; e++) {
        const ckpt_torch_entry *en = &t->entries[o->entries + e];
        if (en->group != CKPT_TORCH_NONE) continue;
        ckpt_bind_index *x = &d->idx[d->idx_len++];
        x->index = en->index;
        x->group = SIZE_MAX;
        x->name = t->strings[en->name];
        index_state(t, x);
    }
    return 0;
}

static const ckpt_torch_entry *entry_of_index(const ckpt_torch *t, int64_t index)
{
    const ckpt_torch_optimizer *o = &t->optimizers[0];
    for (size_t e = 0; e < o->entries_len; e++)
        if (t->entries[o->entries + e].index == index) return &t->entries[o->entries + e];
    return NULL;
}

static void config_of_group(ckpt_config *c, const ckpt_torch_group *gr, ckpt_torch_kind kind)
{
    c->kind = kind == CKPT_TORCH_KIND_ADAMW ? CKPT_ADAMW : CKPT_ADAM;
    c->beta1 = ckpt_bits_from_double(gr->beta1);
    c->beta2 = ckpt_bits_from_double(gr->beta2);
    c->epsilon = ckpt_bits_from_double(gr->eps);
    c->weight_decay = ckpt_bits_from_double(gr->weight_decay);
}

/* The optimizer's report becomes the pair's: the slots' schema (trainable where an index went,
 * ties to their representative), one entry per placed index with state, in slot order, the
 * groups' configurations per slot. */
static int install(ckpt_report *ro, tf_data *d, const bind_in *in, ckpt_pair_result *res)
{
    const ckpt_torch *t = d->t;
    const ckpt_torch_optimizer *o = &t->optimizers[0];
    size_t n = in->n;
    uint64_t *ranks = malloc((n ? n : 1) * sizeof *ranks), *reps = malloc((n ? n : 1) * sizeof *reps);
    uint8_t *rg = calloc(n ? n : 1, 1);
    size_t dims_len = 0;
    for (size_t i = 0; i < n; i++) dims_len += in->slots[i].rank;
    uint64_t *dims = malloc((dims_len ? dims_len : 1) * sizeof *dims);
    size_t *index_at = malloc((n ? n : 1) * sizeof *index_at);
    d->group_of_slot = malloc((n ? n : 1) * sizeof *d->group_of_slot);
    d->configs = calloc(o->groups_len ? o->groups_len : 1, sizeof *d->configs);
    d->slot_names = calloc(n ? n : 1, sizeof *d->slot_names);
    int rc = ranks && reps && rg && dims && index_at && d->group_of_slot && d->configs && d->slot_names
                 ? 0
                 : ckpt_fail_oom(&res->error);
    if (rc) goto done;
    d->slot_count = n;
    for (size_t g = 0; g < o->groups_len; g++) config_of_group(&d->configs[g], &t->groups[o->groups + g], o->kind);
    size_t at = 0;
    for (size_t i = 0; i < n; i++) {
        ranks[i] = in->slots[i].rank;
        memcpy(dims + at, in->slots[i].dims, in->slots[i].rank * sizeof *dims);
        at += in->slots[i].rank;
        index_at[i] = SIZE_MAX;
        d->group_of_slot[i] = 0;
        if (!(d->slot_names[i] = ckpt_torch_dup(in->slots[i].name))) {
            rc = ckpt_fail_oom(&res->error);
            goto done;
        }
    }
    for (size_t j = 0; j < d->idx_len; j++) {
        uint64_t s = d->binding.slot_of[j];
        if (s == CKPT_NONE) continue;
        index_at[s] = j;
        /* an index without state yet (no step reached it) has no moments to hold: its slot reads
         * as frozen, as TorchLean's schema has an entry for every trainable owner */
        rg[s] = d->idx[j].has_state;
        d->group_of_slot[s] = d->idx[j].group;
    }
    for (size_t i = 0; i < n; i++) {
        uint64_t tie = in->slots[i].tie;
        if (tie != CKPT_NONE) {
            rg[i] = rg[tie];
            d->group_of_slot[i] = d->group_of_slot[tie];
        }
        reps[i] = !rg[i] ? CKPT_NONE : tie != CKPT_NONE ? tie : i;
    }
    ckpt_schema *schema = ckpt_schema_new(n, ranks, dims, n, rg, reps, n);
    if (!schema) {
        rc = ckpt_fail_oom(&res->error);
        goto done;
    }
    /* the entries: Adam's moments, contiguous, of one dtype */
    size_t entries = 0;
    for (size_t i = 0; i < n; i++) entries += index_at[i] != SIZE_MAX && d->idx[index_at[i]].has_state;
    ckpt_entry_info *list = calloc(entries ? entries : 1, sizeof *list);
    d->entry_of = malloc((entries ? entries : 1) * sizeof *d->entry_of);
    d->vmax = calloc(n ? n : 1, sizeof *d->vmax);
    if (!list || !d->entry_of || !d->vmax) {
        free(list);
        ckpt_schema_free(schema);
        rc = ckpt_fail_oom(&res->error);
        goto done;
    }
    int dtype = CKPT_DTYPE_ANY;
    size_t k = 0;
    for (size_t i = 0; !rc && i < n; i++) {
        if (index_at[i] == SIZE_MAX || !d->idx[index_at[i]].has_state) continue;
        const ckpt_bind_index *x = &d->idx[index_at[i]];
        const ckpt_torch_entry *e = entry_of_index(t, x->index);
        if (e->exp_avg == CKPT_TORCH_NONE || e->exp_avg_sq == CKPT_TORCH_NONE) {
            rc = fail_index(res, x->index, " holds no exp_avg and exp_avg_sq: not Adam's state", NULL, NULL);
            break;
        }
        const ckpt_torch_tensor *m = &t->tensors[e->exp_avg], *v = &t->tensors[e->exp_avg_sq];
        int dm = ckpt_torch_dtype(m->dtype), dv = ckpt_torch_dtype(v->dtype);
        if (!m->contiguous || !v->contiguous || m->count != v->count) {
            rc = fail_index(res, x->index, ": exp_avg and exp_avg_sq are not laid out as one contiguous shape", NULL,
                            NULL);
            break;
        }
        if (dm != dv || !is_floating(dm) || (dtype != CKPT_DTYPE_ANY && dm != dtype)) {
            rc = fail_index(res, x->index, ": moments of ", m->dtype, " where the others are of another dtype");
            break;
        }
        dtype = dm;
        if (e->has_step && !(e->step < 18446744073709551616.0)) { /* 2^64: a step count is a u64 */
            strbuf st = {0};
            j_double(&st, e->step);
            rc = fail_index(res, x->index, ": step ", st.data, " does not fit in 64 bits");
            sb_free(&st);
            break;
        }
        ckpt_entry_info *ei = &list[k];
        ei->id = i;
        ei->step = e->has_step ? (uint64_t)e->step : 0;
        ei->count = m->count;
        ei->offset = ei->m_offset = m->at;
        ei->v_offset = v->at;
        size_t ek = (size_t)(e - t->entries) - o->entries;
        if (d->stats) { /* the statistics read on open move to the entry */
            ei->m = d->stats[3 * ek], d->stats[3 * ek] = NULL;
            ei->v = d->stats[3 * ek + 1], d->stats[3 * ek + 1] = NULL;
            d->vmax[k] = d->stats[3 * ek + 2], d->stats[3 * ek + 2] = NULL;
            if (ei->m && ei->v) ei->unhealthy = ckpt_entry_unhealthy(ei->m, ei->v);
        }
        d->entry_of[k++] = (size_t)(e - t->entries);
    }
    if (rc) {
        for (size_t q = 0; q < k; q++) ckpt_stats_free(list[q].m), ckpt_stats_free(list[q].v);
        free(list);
        ckpt_schema_free(schema);
        goto done;
    }
    /* the report is the pair's: its own model's tensors (if any) are the model file's to show */
    for (size_t q = 0; q < ro->tensors_len; q++) {
        ckpt_stats_free(ro->tensors[q].values);
        free(ro->tensors[q].name);
    }
    free(ro->tensors);
    ro->tensors = NULL;
    ro->tensors_len = ro->tensors_cap = 0;
    ckpt_schema_free(ro->schema);
    ro->schema = schema;
    ro->schema_declared_count = n;
    ro->schema_complete = true;
    ro->entries = list;
    ro->entries_len = ro->entries_cap = k;
    ro->has_entry_count = true;
    ro->entry_count = k;
    ro->dtype = dtype == CKPT_DTYPE_ANY ? CKPT_FLOAT32 : dtype;
    ro->has_config = o->groups_len > 0;
    if (ro->has_config) ro->config = d->configs[0];
    ro->slots_bound = true;
done:
    free(ranks);
    free(reps);
    free(rg);
    free(dims);
    free(index_at);
    return rc;
}

static int keep_slot_names(tf_data *d, const bind_in *in, ckpt_pair_result *res)
{
    if (!(d->slot_names = calloc(in->n ? in->n : 1, sizeof *d->slot_names))) return ckpt_fail_oom(&res->error);
    d->slot_count = in->n;
    for (size_t i = 0; i < in->n; i++)
        if (!(d->slot_names[i] = ckpt_torch_dup(in->slots[i].name))) return ckpt_fail_oom(&res->error);
    return 0;
}

/* A failure of the pair (prefixed "PyTorch: "), about a slot and an index (CKPT_NONE / -1). */
static bool push_failure(ckpt_pair_result *res, int code, uint64_t slot, int64_t index, strbuf *text)
{
    return ckpt_pair_add_failure(res, "PyTorch", code, slot, index >= 0 ? (uint64_t)index : CKPT_NONE, text);
}

/* "a", "a and b", "a, b and c"; past 8 names, the first 8 "and {n} more". */
static void name_list(strbuf *sb, const char *const *names, size_t n)
{
    size_t shown = n > 8 ? 8 : n;
    for (size_t k = 0; k < shown; k++) {
        if (k) sb_puts(sb, k + 1 == shown && shown == n ? " and " : ", ");
        sb_puts(sb, names[k]);
    }
    if (shown < n) sb_printf(sb, " and %zu more", n - shown);
}

typedef struct named {
    const char *name;
    size_t slot;
} named;

static int cmp_named(const void *a, const void *b)
{
    return strcmp(((const named *)a)->name, ((const named *)b)->name);
}

/* The slots of `in` sorted by name, for find_slot; NULL when out of memory. */
static named *sort_names(const bind_in *in)
{
    named *v = malloc((in->n ? in->n : 1) * sizeof *v);
    if (!v) return NULL;
    for (size_t q = 0; q < in->n; q++) v[q] = (named){in->slots[q].name, q};
    qsort(v, in->n, sizeof *v, cmp_named);
    return v;
}

/* The slot named `name` (a binary search of sort_names's array), or SIZE_MAX. */
static size_t find_slot(const named *sorted, size_t n, const char *name)
{
    named key = {name, 0};
    const named *hit = n ? bsearch(&key, sorted, n, sizeof *sorted, cmp_named) : NULL;
    return hit ? hit->slot : SIZE_MAX;
}

/* The optimizer's own model (the one its Trainer folder holds: the model it was saved with)
 * against the model given, by names, shapes and ties, before any index is placed (format.md
 * 10.4). Each difference is a failure; a tied copy that a file keeping no module order leaves
 * out (save_pretrained) is no difference. *ties: both files keep ties, so they were compared. */
static int compare_models(const ckpt_report *ref, const ckpt_report *rm, bool rm_torch, const char *rl, const char *ml,
                          bool *ties, ckpt_pair_result *res)
{
    bool ref_torch = ref->family && ref->family->id == CKPT_FAMILY_PYTORCH;
    bool ref_drops = ref->family && ref->family->impl->unordered, rm_drops = rm->family && rm->family->impl->unordered;
    *ties = ref_torch && rm_torch;
    bind_in a = {0}, b = {0};
    int rc = gather_slots(ref, ref_torch, NULL, 0, true, &a, res);
    if (!rc) rc = gather_slots(rm, rm_torch, NULL, 0, true, &b, res);
    named *sa = rc ? NULL : sort_names(&a), *sb_ = rc ? NULL : sort_names(&b);
    if (!rc && (!sa || !sb_)) rc = ckpt_fail_oom(&res->error);
    for (size_t q = 0; !rc && q < a.n; q++) {
        const ckpt_bind_slot *x = &a.slots[q];
        size_t j = find_slot(sb_, b.n, x->name);
        strbuf t = {0};
        if (j == SIZE_MAX) {
            if (x->tie != CKPT_NONE && rm_drops) continue; /* a tied copy the file leaves out */
            sb_printf(&t, "%s is in %s, not in %s", x->name, rl, ml);
            if (!push_failure(res, CKPT_E_TORCH_MODELS_DIFFER, CKPT_NONE, -1, &t)) rc = ckpt_fail_oom(&res->error);
            continue;
        }
        const ckpt_bind_slot *y = &b.slots[j];
        if (x->rank != y->rank || memcmp(x->dims, y->dims, x->rank * sizeof *x->dims)) {
            sb_printf(&t, "%s is ", x->name);
            ckpt_shape_print_list(&t, y->dims, y->rank);
            sb_printf(&t, " in %s, ", ml);
            ckpt_shape_print_list(&t, x->dims, x->rank);
            sb_printf(&t, " in %s", rl);
            if (!push_failure(res, CKPT_E_TORCH_MODELS_DIFFER, j, -1, &t)) rc = ckpt_fail_oom(&res->error);
            continue;
        }
        const char *ta = x->tie != CKPT_NONE ? a.slots[x->tie].name : NULL;
        const char *tb = y->tie != CKPT_NONE ? b.slots[y->tie].name : NULL;
        if (*ties && ta && (!tb || strcmp(ta, tb))) {
            sb_printf(&t, "%s is tied to %s in %s, not in %s", x->name, ta, rl, ml);
            if (!push_failure(res, CKPT_E_TORCH_MODELS_DIFFER, j, -1, &t)) rc = ckpt_fail_oom(&res->error);
        }
    }
    for (size_t j = 0; !rc && j < b.n; j++) {
        const ckpt_bind_slot *y = &b.slots[j];
        size_t q = find_slot(sa, a.n, y->name);
        strbuf t = {0};
        if (q == SIZE_MAX) {
            if (y->tie != CKPT_NONE && ref_drops) continue;
            sb_printf(&t, "%s is in %s, not in %s", y->name, ml, rl);
            if (!push_failure(res, CKPT_E_TORCH_MODELS_DIFFER, j, -1, &t)) rc = ckpt_fail_oom(&res->error);
            continue;
        }
        const ckpt_bind_slot *x = &a.slots[q];
        const char *ta = x->tie != CKPT_NONE ? a.slots[x->tie].name : NULL;
        const char *tb = y->tie != CKPT_NONE ? b.slots[y->tie].name : NULL;
        bool same_shape = x->rank == y->rank && !memcmp(x->dims, y->dims, x->rank * sizeof *x->dims);
        if (*ties && same_shape && tb && (!ta || strcmp(ta, tb))) {
            sb_printf(&t, "%s is tied to %s in %s, not in %s", y->name, tb, ml, rl);
            if (!push_failure(res, CKPT_E_TORCH_MODELS_DIFFER, j, -1, &t)) rc = ckpt_fail_oom(&res->error);
        }
    }
    free(sa);
    free(sb_);
    bind_in_free(&a);
    bind_in_free(&b);
    return rc;
}

/* The owner slots no index reached that the files do not say are untrained: neither given as
 * frozen (nor listed so by the optimizer's own files) nor known buffers. With a complete list of
 * the frozen (`complete`), they are trained: torch refuses the state (a failure); else the pair
 * holds only if the training code trains none of them: it cannot tell (res->cannot_tell, the
 * condition in res->error). */
static int untold(const tf_data *d, const bind_in *in, bool complete, ckpt_pair_result *res)
{
    uint8_t *reached = calloc(in->n ? in->n : 1, 1);
    const char **names = malloc((in->n ? in->n : 1) * sizeof *names);
    if (!reached || !names) {
        free(reached);
        free(names);
        return ckpt_fail_oom(&res->error);
    }
    for (size_t j = 0; j < d->idx_len; j++)
        if (d->binding.slot_of[j] != CKPT_NONE) reached[d->binding.slot_of[j]] = 1;
    size_t n = 0;
    uint64_t first = CKPT_NONE;
    for (size_t q = 0; q < in->n; q++) {
        if (in->slots[q].tie != CKPT_NONE || reached[q] || in->slots[q].frozen || in->buffer[q]) continue;
        if (first == CKPT_NONE) first = q;
        names[n++] = in->slots[q].name;
    }
    int rc = 0;
    if (n) {
        const bool one = n == 1;
        strbuf t = {0};
        name_list(&t, names, n);
        if (complete) {
            sb_printf(&t,
                      " %s no optimizer state, and the optimizer's files do not list %s as frozen: torch's "
                      "load_state_dict refuses this state (" CKPT_TORCH_GROUP_SIZE ")",
                      one ? "has" : "have", one ? "it" : "them");
            if (!push_failure(res, CKPT_E_TORCH_UNTRAINED, first, -1, &t)) rc = ckpt_fail_oom(&res->error);
        } else {
            sb_printf(&t, " %s no optimizer state: the pair holds only if the training code does not train %s (%s: ",
                      one ? "has" : "have", one ? "it" : "them",
                      one ? "a frozen parameter, or a buffer" : "frozen parameters, or buffers");
            if (n <= 8) {
                sb_puts(&t, "--frozen ");
                for (size_t k = 0; k < n; k++) sb_printf(&t, "%s%s", k ? "," : "", names[k]);
                sb_puts(&t, " says so");
            } else {
                sb_puts(&t, "--frozen NAME[,NAME...] says which");
            }
            sb_printf(&t, "); if it trains %s, torch's load_state_dict refuses this state (" CKPT_TORCH_GROUP_SIZE ")",
                      one ? "it" : "them");
            if (t.failed) rc = ckpt_fail_oom(&res->error);
            else {
                ckpt_fail_at(&res->error, "PyTorch", CKPT_E_TORCH_UNTRAINED, CKPT_NONE, 0, first, "%s", t.data);
                res->cannot_tell = res->error.message != NULL;
                if (!res->error.message) rc = ckpt_fail_oom(&res->error);
            }
            sb_free(&t);
        }
    }
    free(reached);
    free(names);
    return rc;
}

/* What the verdict compared, and what not: an optimizer saves no ties, so only a model it was
 * saved with tells them. */
static char *pair_note(const ckpt_pair_options *o, bool compared, bool ties)
{
    strbuf sb = {0};
    sb_puts(&sb, "same shapes, index by index; ");
    if (!compared) sb_puts(&sb, "ties not compared (an optimizer saves none)");
    else if (ties)
        sb_printf(&sb, "the same names, shapes and ties as %s",
                  o->trained_label ? o->trained_label : "the training-time model");
    else
        sb_printf(&sb, "the same names and shapes as %s (ties not compared: a safetensors file keeps none)",
                  o->trained_label ? o->trained_label : "the training-time model");
    sb_puts(&sb, "; the values are not compared: `run` with both steps' state files compares them");
    return sb_take(&sb);
}

/* ---- by name: a name-keyed optimizer (docs/pytorch.md) and its model ---- */

static bool push_by_name(ckpt_pair_result *res, uint64_t slot, strbuf *text)
{
    return ckpt_pair_add_failure(res, "DCP", CKPT_E_BY_NAME, slot, CKPT_NONE, text);
}

/* The checks by name in order, every failure listed: names, shapes, ties, requires grad. Each FQN
 * is the model state dict key of that name; trainable is having state; a state under a tied
 * name is the checkpoint not knowing the tie. Given frozen names (complete, as a layout's
 * requiresGrad is), a slot neither frozen nor a buffer must have state. Then the slots the
 * names reached, for install. */
static int bind_names(tf_data *d, const bind_in *in, bool frozen_given, ckpt_pair_result *res)
{
    named *sorted = sort_names(in);
    uint8_t *reached = calloc(in->n ? in->n : 1, 1);
    if (!sorted || !reached || !(d->binding.slot_of = malloc((d->idx_len ? d->idx_len : 1) * sizeof(uint64_t)))) {
        free(sorted);
        free(reached);
        return ckpt_fail_oom(&res->error);
    }
    int rc = 0;
    for (size_t j = 0; j < d->idx_len; j++) d->binding.slot_of[j] = CKPT_NONE;
    /* 1. names */
    for (size_t j = 0; !rc && j < d->idx_len; j++) {
        size_t q = find_slot(sorted, in->n, d->idx[j].name);
        if (q != SIZE_MAX) continue;
        strbuf t = {0};
        sb_printf(&t, "%s is in the checkpoint, not in the model", d->idx[j].name);
        if (!push_by_name(res, CKPT_NONE, &t)) rc = ckpt_fail_oom(&res->error);
    }
    /* 2. shapes */
    for (size_t j = 0; !rc && j < d->idx_len; j++) {
        const ckpt_bind_index *x = &d->idx[j];
        size_t q = find_slot(sorted, in->n, x->name);
        if (q == SIZE_MAX || !x->dims) continue;
        const ckpt_bind_slot *sl = &in->slots[q];
        if (x->rank == sl->rank && !memcmp(x->dims, sl->dims, x->rank * sizeof *x->dims)) continue;
        strbuf t = {0};
        sb_printf(&t, "%s is ", x->name);
        ckpt_shape_print(&t, x->dims, x->rank);
        sb_puts(&t, " in the checkpoint, ");
        ckpt_shape_print(&t, sl->dims, sl->rank);
        sb_puts(&t, " in the model");
        if (!push_by_name(res, q, &t)) rc = ckpt_fail_oom(&res->error);
    }
    /* 3. ties: the optimizer keys a shared parameter once, under its first name */
    for (size_t j = 0; !rc && j < d->idx_len; j++) {
        size_t q = find_slot(sorted, in->n, d->idx[j].name);
        if (q == SIZE_MAX || in->slots[q].tie == CKPT_NONE) continue;
        strbuf t = {0};
        sb_printf(&t, "%s is tied to %s in the model, not in the checkpoint", d->idx[j].name,
                  in->slots[in->slots[q].tie].name);
        if (!push_by_name(res, q, &t)) rc = ckpt_fail_oom(&res->error);
    }
    /* 4. requires grad */
    for (size_t j = 0; !rc && j < d->idx_len; j++) {
        size_t q = find_slot(sorted, in->n, d->idx[j].name);
        if (q == SIZE_MAX) continue;
        reached[q] = 1;
        if (!in->slots[q].frozen || !d->idx[j].has_state) continue;
        strbuf t = {0};
        sb_printf(&t, "DCP: %s is frozen in the model but has optimizer state in the checkpoint", d->idx[j].name);
        if (!ckpt_pair_add_warning(res, &t)) rc = ckpt_fail_oom(&res->error);
    }
    for (size_t q = 0; !rc && frozen_given && q < in->n; q++) {
        if (reached[q] || in->slots[q].tie != CKPT_NONE || in->slots[q].frozen || in->buffer[q]) continue;
        strbuf t = {0};
        sb_printf(&t, "%s requires grad in the model but has no optimizer state in the checkpoint", in->slots[q].name);
        if (!push_by_name(res, q, &t)) rc = ckpt_fail_oom(&res->error);
    }
    /* a name no group lists: its hyperparameters are unknown (the first group's are taken) */
    for (size_t j = 0; !rc && j < d->idx_len; j++) {
        if (d->idx[j].group != SIZE_MAX) continue;
        strbuf t = {0};
        sb_printf(&t, "DCP: %s has optimizer state but no parameter group lists it", d->idx[j].name);
        if (!ckpt_pair_add_warning(res, &t)) rc = ckpt_fail_oom(&res->error);
        d->idx[j].group = 0;
    }
    /* the placement; a frozen slot's state is dropped, as a load drops it (a warning above) */
    for (size_t j = 0; !rc && !res->failures_len && j < d->idx_len; j++) {
        size_t q = find_slot(sorted, in->n, d->idx[j].name);
        if (!in->slots[q].frozen) d->binding.slot_of[j] = q;
    }
    free(sorted);
    free(reached);
    return rc;
}

int ckpt_torch_bind(ckpt_report *ro, const ckpt_report *rm, bool torch_model, const ckpt_pair_options *o,
                    const ckpt_report *trained, size_t **view, size_t *view_len, ckpt_pair_result *res)
{
    tf_data *d = ro->family_data;
    *view = NULL;
    *view_len = 0;
    if (!d || !d->t || d->tried)
        return ckpt_fail(&res->error, NULL, CKPT_E_INVALID_ARGUMENT, CKPT_NONE, 0,
                         "this PyTorch file was paired with a model already: open it again to pair it with another");
    if (!d->t->optimizers_len)
        return fail_pair(res, -1, "the first file holds no optimizer state dict (a dict with state and param_groups)");
    if (!rm->tensors_len)
        return fail_pair(res, -1, "the model file holds no model state dict (a dict of names to tensors)");
    d->tried = true;
    const char *model_label = o->model_label ? o->model_label : "the model";
    /* the optimizer's own files may list what is frozen (a family whose files do: DeepSpeed's
     * frozen_param_shapes); such a list is complete */
    size_t own_n = 0;
    const char *const *own = ro->family->impl->frozen_names ? ro->family->impl->frozen_names(ro, &own_n) : NULL;
    bool param_names, ties = false;
    bind_in in = {0};
    int rc = trained ? compare_models(trained, rm, torch_model,
                                      o->trained_label ? o->trained_label : "the training-time model", model_label,
                                      &ties, res)
                     : 0;
    if (!rc) rc = gather_indices(d, &param_names, res);
    if (!rc) rc = gather_slots(rm, torch_model, o->names, o->name_count, param_names, &in, res);
    if (!rc) rc = mark_frozen(rm, &in, o->frozen, o->frozen_count, model_label, res);
    if (!rc) rc = mark_frozen(rm, &in, own, own_n, "the model", res);
    if (!rc && !(d->known = calloc(in.n ? in.n : 1, 1))) rc = ckpt_fail_oom(&res->error);
    for (size_t q = 0; !rc && q < in.n; q++)
        d->known[q] = (uint8_t)((in.slots[q].frozen ? TF_KNOWN_FROZEN : 0) | (in.buffer[q] ? TF_KNOWN_BUFFER : 0) |
                                (in.slots[q].tie != CKPT_NONE ? TF_KNOWN_TIE : 0));
    const bool by_name = d->t->optimizers[0].keying != CKPT_TORCH_KEYED_IDS;
    uint8_t *undecided = rc ? NULL : calloc(in.n ? in.n : 1, 1);
    if (!rc && !undecided) rc = ckpt_fail_oom(&res->error);
    if (!rc && by_name) {
        rc = bind_names(d, &in, o->frozen_count > 0 || own, res);
        d->unordered_model = in.shape_only; /* names pair it; only positional outputs need the order */
        in.shape_only = false;
    } else if (!rc && ckpt_bind_map(in.slots, in.n, d->idx, d->idx_len, in.shape_only, &d->binding, undecided))
        rc = ckpt_fail_oom(&res->error);
    /* PyTorch's own pairing: the k-th index <-> the k-th parameter of the optimizer the training
     * code builds again. One group of every parameter (Adam(model.parameters())) numbers them in
     * model order, ties once; a filtered group or several groups are built again by code the
     * files do not hold (positional stays unknown) */
    if (!rc && !(d->positional = malloc((d->idx_len ? d->idx_len : 1) * sizeof *d->positional)))
        rc = ckpt_fail_oom(&res->error);
    size_t owners = 0;
    for (size_t q = 0; !rc && q < in.n; q++) owners += in.slots[q].tie == CKPT_NONE;
    d->positional_known = !rc && !by_name && d->t->optimizers[0].groups_len == 1 && d->idx_len == owners;
    for (size_t j = 0, q = 0; !rc && j < d->idx_len; j++) {
        while (q < in.n && in.slots[q].tie != CKPT_NONE) q++;
        d->positional[j] = d->positional_known && q < in.n ? q++ : CKPT_NONE;
    }
    if (!rc && in.shape_only) {
        char **w = realloc(res->warnings, (res->warnings_len + 1) * sizeof *w);
        if (w) res->warnings = w;
        char *one =
            w ? ckpt_torch_dup("PyTorch: model.safetensors keeps no module order: same-shaped parameters cannot be "
                               "told apart (give --names NAMES.json, a pytorch_model.bin, or save param_names)")
              : NULL;
        if (!one) rc = ckpt_fail_oom(&res->error);
        else res->warnings[res->warnings_len++] = one;
        d->undecided = undecided; /* the slots the shapes do not decide: named by no index */
        undecided = NULL;
    }
    for (size_t k = 0; !rc && k < d->binding.warnings_len; k++) {
        char **w = realloc(res->warnings, (res->warnings_len + 1) * sizeof *w);
        if (!w) rc = ckpt_fail_oom(&res->error);
        else {
            res->warnings = w;
            if (!(w[res->warnings_len] = ckpt_torch_dup(d->binding.warnings[k]))) rc = ckpt_fail_oom(&res->error);
            else res->warnings_len++;
        }
    }
    /* with every index placed: the slots without state must be known untrained; with a complete
     * frozen list that is a failure of its own (before the failures are copied), else the
     * condition of a pair the files cannot tell, once the pair's slots are installed */
    if (!rc && own && !by_name && !d->binding.failures_len && !res->failures_len) rc = untold(d, &in, true, res);
    if (!rc && (d->binding.failures_len || res->failures_len)) {
        size_t before = res->failures_len;
        ckpt_error *f = realloc(res->failures, (before + d->binding.failures_len + 1) * sizeof *f);
        if (!f) rc = ckpt_fail_oom(&res->error);
        else res->failures = f;
        for (size_t k = 0; !rc && k < d->binding.failures_len; k++) {
            const ckpt_error *b = &d->binding.failures[k];
            ckpt_error *e = &res->failures[res->failures_len];
            memset(e, 0, sizeof *e);
            ckpt_error_clear(e);
            ckpt_fail_at(e, NULL, b->code, CKPT_NONE, 0, CKPT_NONE, "%s", b->message);
            e->index = b->index;
            if (!e->message) rc = ckpt_fail_oom(&res->error);
            else res->failures_len++;
        }
        /* the slots are still the model's, for the report's names and positional pairing */
        if (!rc) rc = keep_slot_names(d, &in, res);
    } else if (!rc) {
        rc = install(ro, d, &in, res);
        if (!rc && !own && !by_name) rc = untold(d, &in, false, res); /* by name: trainable is having state */
        if (!rc) {
            *view = in.view;
            *view_len = in.n;
            in.view = NULL;
        }
    }
    if (!rc && by_name) {
        /* passing: the by-name text; else what was compared */
        if (!(res->note = ckpt_torch_dup(
                  res->failures_len
                      ? "by name: names, shapes, ties and requires grad; order is not compared (the "
                        "checkpoint loads by name)"
                      : "DCP: the model pairs with this checkpoint by name: same names, shapes and ties")))
            rc = ckpt_fail_oom(&res->error);
    } else if (!rc && !(res->note = pair_note(o, trained != NULL, ties))) rc = ckpt_fail_oom(&res->error);
    if (!rc) {
        strbuf sb = {0};
        ckpt_torch_pairing_json(&sb, d, ro);
        if (sb.failed) rc = ckpt_fail_oom(&res->error);
        else res->pytorch = sb_take(&sb);
    }
    free(undecided);
    bind_in_free(&in);
    return rc;
}

/* The pairing with the model: each index in group order with the slot it is and the one
 * PyTorch's positional pairing gives it; the slots not in the optimizer. */
void ckpt_torch_pairing_json(strbuf *sb, const tf_data *d, const ckpt_report *rep)
{
    if (!d->tried) {
        sb_puts(sb, "null");
        return;
    }
    const ckpt_torch *t = d->t;
    sb_printf(sb, "{\"paired\":%s,\"indices\":[", rep->slots_bound ? "true" : "false");
    bool differs = false;
    for (size_t j = 0; j < d->idx_len; j++) {
        const ckpt_bind_index *x = &d->idx[j];
        uint64_t s = d->binding.slot_of ? d->binding.slot_of[j] : CKPT_NONE, ps = d->positional[j];
        if (j) sb_putc(sb, ',');
        sb_printf(sb, "{\"index\":%lld,\"group\":%zu,\"slot\":", (long long)x->index, x->group);
        j_slot(sb, s);
        sb_puts(sb, ",\"name\":");
        bool decided = !(d->undecided && s != CKPT_NONE && d->undecided[s]);
        if (s != CKPT_NONE && s < d->slot_count && decided) j_string(sb, d->slot_names[s]);
        else sb_puts(sb, "null");
        sb_printf(sb, ",\"decided\":%s", decided ? "true" : "false");
        sb_puts(sb, ",\"positionalSlot\":");
        j_slot(sb, ps);
        sb_puts(sb, ",\"positionalName\":");
        if (ps != CKPT_NONE && ps < d->slot_count) j_string(sb, d->slot_names[ps]);
        else sb_puts(sb, "null");
        sb_puts(sb, ",\"shape\":");
        const ckpt_torch_entry *e = entry_of_index(t, x->index);
        if (x->dims) {
            sb_putc(sb, '[');
            for (uint32_t q = 0; q < x->rank; q++) {
                if (q) sb_putc(sb, ',');
                j_u64(sb, x->dims[q]);
            }
            sb_putc(sb, ']');
        } else sb_puts(sb, "null");
        sb_puts(sb, ",\"dtype\":");
        if (e && e->exp_avg != CKPT_TORCH_NONE) j_string(sb, t->tensors[e->exp_avg].dtype);
        else sb_puts(sb, "null");
        sb_puts(sb, ",\"step\":");
        j_num_or_null(sb, e && e->has_step, e ? e->step : 0);
        sb_putc(sb, '}');
        differs = differs || s != ps;
    }
    sb_printf(sb, "],\"byName\":%s,\"positionalKnown\":%s,\"positionalDiffers\":",
              t->optimizers[0].keying != CKPT_TORCH_KEYED_IDS ? "true" : "false",
              d->positional_known ? "true" : "false");
    sb_puts(sb, !d->positional_known ? "null" : differs ? "true" : "false");
    sb_printf(sb, ",\"groups\":%zu,\"slots\":[", t->optimizers[0].groups_len);
    for (size_t i = 0; i < d->slot_count; i++) {
        if (i) sb_putc(sb, ',');
        j_string(sb, d->slot_names[i]);
    }
    /* the slots no index reaches (a tie is reached through its representative); of them, the
     * owners the files do not say are untrained (neither given as frozen nor known buffers); by
     * name, a parameter without state is untrained (docs/pytorch.md) */
    const bool by_name = t->optimizers[0].keying != CKPT_TORCH_KEYED_IDS;
    for (int list = 0; list < 2; list++) {
        sb_puts(sb, list ? "],\"untold\":[" : "],\"notInOptimizer\":[");
        if (!rep->slots_bound) continue;
        uint8_t *reached = calloc(d->slot_count ? d->slot_count : 1, 1);
        for (size_t j = 0; reached && j < d->idx_len; j++)
            if (d->binding.slot_of[j] != CKPT_NONE) reached[d->binding.slot_of[j]] = 1;
        for (size_t i = 0, k = 0; reached && i < d->slot_count; i++) {
            uint64_t r = ckpt_schema_representative(rep->schema, i);
            if (reached[i] || (r != CKPT_NONE && reached[r])) continue;
            if (list && (d->known[i] || by_name)) continue; /* known untrained, or a tie (its owner is listed) */
            if (k++) sb_putc(sb, ',');
            j_string(sb, d->slot_names[i]);
        }
        if (!reached) sb->failed = true;
        free(reached);
    }
    sb_puts(sb, "]}");
}

/* "group 0: 0.1, group 1: 0" for a field of the groups */
static void group_values(strbuf *sb, const ckpt_torch *t, const ckpt_torch_optimizer *o, int field)
{
    for (size_t g = 0; g < o->groups_len; g++) {
        const ckpt_torch_group *gr = &t->groups[o->groups + g];
        sb_printf(sb, "%sgroup %zu: ", g ? ", " : "", g);
        if (field == 0) j_double(sb, gr->weight_decay);
        else if (field == 2) j_double(sb, gr->eps);
        else {
            j_double(sb, gr->beta1);
            sb_puts(sb, " ");
            j_double(sb, gr->beta2);
        }
    }
}

static int loses(ckpt_error *err, strbuf *sb)
{
    if (sb->failed) return ckpt_fail_oom(err);
    ckpt_fail(err, NULL, CKPT_E_CONVERSION_LOSES, CKPT_NONE, 0, "%s", sb->data);
    sb_free(sb);
    return err->code;
}

/* TorchLean's file holds one configuration: the groups must agree (or an option chooses one),
 * the kind be known, and no moment be one TorchLean's Adam has not (amsgrad's third). */
int ckpt_torch_convert_config(const ckpt_report *rep, const ckpt_convert_options *o, ckpt_config *out, ckpt_error *err)
{
    const tf_data *d = rep->family_data;
    const ckpt_torch *t = d->t;
    const ckpt_torch_optimizer *op = &t->optimizers[0];
    /* a model alone, consolidated: an optimizer of no groups has no configuration to write */
    if (!op->groups_len)
        return ckpt_fail(err, NULL, CKPT_E_CONVERSION_LOSES, CKPT_NONE, 0,
                         "the optimizer has no parameter groups: TorchLean's file has no configuration to take");
    const ckpt_torch_group *g0 = &t->groups[op->groups];
    /* paired by name with a model that keeps no module order: TorchLean's slots need that order */
    if (d->unordered_model)
        return ckpt_fail(err, "DCP", CKPT_E_INVALID_ARGUMENT, CKPT_NONE, 0,
                         "the model keeps no module order: give --names NAMES.json to order the slots");
    strbuf sb = {0};
    bool amsgrad = false, maximize = false, wd = true, betas = true, eps = true;
    for (size_t g = 0; g < op->groups_len; g++) {
        const ckpt_torch_group *gr = &t->groups[op->groups + g];
        amsgrad = amsgrad || gr->amsgrad;
        maximize = maximize || gr->maximize;
        wd = wd && gr->weight_decay == g0->weight_decay;
        betas = betas && gr->beta1 == g0->beta1 && gr->beta2 == g0->beta2;
        eps = eps && gr->eps == g0->eps;
    }
    if (maximize) {
        sb_puts(&sb, "a group maximizes (maximize=True): TorchLean's Adam minimizes, and no option converts it");
        return loses(err, &sb);
    }
    /* every option the conversion needs, named at once (each text in turn, "; " between) */
    if (amsgrad && !o->drop_amsgrad)
        sb_puts(&sb, "amsgrad's max_exp_avg_sq has no place in TorchLean's Adam: --drop-amsgrad leaves it out "
                     "(the next steps then divide by the second moment, not its running maximum)");
    static const char *const what[] = {"weight decays", "betas", "epsilons"};
    static const char *const option[] = {"--weight-decay X", "--betas B1,B2", "--eps X"};
    const bool agree[] = {wd || o->has_weight_decay, betas || o->has_betas, eps || o->has_eps};
    for (int f = 0; f < 3; f++) {
        if (agree[f]) continue;
        sb_printf(&sb, "%sthe groups' %s differ (", sb.len ? "; " : "", what[f]);
        group_values(&sb, t, op, f);
        sb_printf(&sb, "): TorchLean's file holds one configuration: %s gives every slot one", option[f]);
    }
    int kind = op->kind == CKPT_TORCH_KIND_ADAMW ? CKPT_ADAMW : op->kind == CKPT_TORCH_KIND_ADAM ? CKPT_ADAM : -1;
    if (o->kind && kind >= 0 && o->kind - 1 != kind && !sb.len)
        return ckpt_fail(err, NULL, CKPT_E_INVALID_ARGUMENT, CKPT_NONE, 0,
                         "--kind %s contradicts the file, whose groups say %s", ckpt_kind_name((uint64_t)o->kind - 1),
                         ckpt_kind_name((uint64_t)kind));
    if (o->kind) kind = o->kind - 1;
    if (kind < 0)
        sb_printf(&sb,
                  "%sthe file does not say whether its optimizer is Adam or AdamW (its groups have no "
                  "decoupled_weight_decay): --kind adam|adamw says it",
                  sb.len ? "; " : "");
    if (sb.len || sb.failed) return loses(err, &sb);
    config_of_group(out, g0, kind == CKPT_ADAMW ? CKPT_TORCH_KIND_ADAMW : CKPT_TORCH_KIND_ADAM);
    if (o->has_weight_decay) out->weight_decay = ckpt_bits_from_double(o->weight_decay);
    if (o->has_betas) out->beta1 = ckpt_bits_from_double(o->beta1), out->beta2 = ckpt_bits_from_double(o->beta2);
    if (o->has_eps) out->epsilon = ckpt_bits_from_double(o->eps);
    return ckpt_config_validate(out, rep->dtype == CKPT_FLOAT64 ? CKPT_FLOAT64 : CKPT_FLOAT32, err);
}
