/* The PyTorch family's report members (json.h): the container, the optimizers with their groups,
 * the model state dicts, torch.load(weights_only=True)'s verdict, the pairing, the slots' names,
 * and the entries: by index as saved, or once paired by slot, each with its index. */
#include "families/pytorch/json.h"
#include "families/pytorch/pair.h"

static void j_opt_number(strbuf *sb, const char *name, bool has, double x)
{
    sb_printf(sb, ",\"%s\":", name);
    if (has) j_double(sb, x);
    else sb_puts(sb, "null");
}

static void j_opt_bool(strbuf *sb, const char *name, bool has, bool x)
{
    sb_printf(sb, ",\"%s\":%s", name, has ? (x ? "true" : "false") : "null");
}

/* One parameter group as JSON: {lr, betas, eps, weightDecay, amsgrad, maximize, params,
 * paramNames}, null for what the file does not hold. */
static void group_json(strbuf *sb, const ckpt_torch *t, const ckpt_torch_group *gr, bool named)
{
    sb_puts(sb, "{\"lr\":");
    if (gr->has & CKPT_TG_LR) j_double(sb, gr->lr);
    else sb_puts(sb, "null");
    sb_puts(sb, ",\"betas\":");
    if (gr->has & CKPT_TG_BETAS) {
        sb_putc(sb, '[');
        j_double(sb, gr->beta1);
        sb_putc(sb, ',');
        j_double(sb, gr->beta2);
        sb_putc(sb, ']');
    } else sb_puts(sb, "null");
    j_opt_number(sb, "eps", gr->has & CKPT_TG_EPS, gr->eps);
    j_opt_number(sb, "weightDecay", gr->has & CKPT_TG_WEIGHT_DECAY, gr->weight_decay);
    j_opt_bool(sb, "amsgrad", gr->has & CKPT_TG_AMSGRAD, gr->amsgrad);
    j_opt_bool(sb, "maximize", gr->has & CKPT_TG_MAXIMIZE, gr->maximize);
    sb_puts(sb, ",\"params\":[");
    for (size_t j = 0; j < gr->params_len; j++) {
        if (j) sb_putc(sb, ',');
        if (named) j_string(sb, t->strings[gr->names + j]); /* a name-keyed group lists FQNs */
        else sb_printf(sb, "%lld", (long long)t->ints[gr->params + j]);
    }
    sb_puts(sb, "],\"paramNames\":");
    if (gr->has & CKPT_TG_PARAM_NAMES) {
        sb_putc(sb, '[');
        for (size_t j = 0; j < gr->names_len; j++) {
            if (j) sb_putc(sb, ',');
            j_string(sb, t->strings[gr->names + j]);
        }
        sb_putc(sb, ']');
    } else sb_puts(sb, "null");
    sb_putc(sb, '}');
}

static void j_num(strbuf *sb, const char *key, bool has, double x)
{
    sb_printf(sb, ",\"%s\":", key);
    if (has) j_double(sb, x);
    else sb_puts(sb, "null");
}

static void j_entry(strbuf *sb, const ckpt_torch *t, const ckpt_torch_entry *e, ckpt_stats *const *st)
{
    const size_t lead = e->exp_avg != CKPT_TORCH_NONE                                  ? e->exp_avg
                        : e->exp_avg_sq != CKPT_TORCH_NONE                             ? e->exp_avg_sq
                        : e->other_len && t->named[e->other].tensor != CKPT_TORCH_NONE ? t->named[e->other].tensor
                                                                                       : CKPT_TORCH_NONE;
    sb_printf(sb, "{\"index\":%lld,\"id\":%lld,\"name\":", (long long)e->index, (long long)e->index);
    if (e->name != CKPT_TORCH_NONE) j_string(sb, t->strings[e->name]);
    else sb_puts(sb, "null");
    sb_puts(sb, ",\"group\":");
    if (e->group == CKPT_TORCH_NONE) sb_puts(sb, "null");
    else j_u64(sb, e->group);
    sb_puts(sb, ",\"shape\":");
    if (lead != CKPT_TORCH_NONE) j_dims(sb, ckpt_torch_size(t, lead), t->tensors[lead].rank);
    else sb_puts(sb, "null");
    sb_puts(sb, ",\"dtype\":");
    if (lead != CKPT_TORCH_NONE) j_string(sb, t->tensors[lead].dtype);
    else sb_puts(sb, "null");
    j_num(sb, "step", e->has_step, e->step);
    sb_puts(sb, ",\"count\":");
    if (lead != CKPT_TORCH_NONE) j_u64(sb, t->tensors[lead].count);
    else sb_puts(sb, "null");
    sb_puts(sb, ",\"offset\":");
    if (lead != CKPT_TORCH_NONE) j_u64(sb, t->tensors[lead].at);
    else sb_puts(sb, "null");
    if (st) {
        static const char *const keys[] = {"m", "v", "vmax"};
        for (int j = 0; j < 3; j++) {
            if (j == 2 && e->max_exp_avg_sq == CKPT_TORCH_NONE) continue;
            sb_printf(sb, ",\"%s\":", keys[j]);
            if (st[j]) j_stats(sb, st[j]);
            else sb_puts(sb, "null");
        }
    }
    sb_puts(sb, ",\"other\":[");
    for (size_t j = 0; j < e->other_len; j++) {
        if (j) sb_putc(sb, ',');
        j_string(sb, t->named[e->other + j].name);
    }
    sb_puts(sb, "]}");
}

/* optimizer k; given: its kind is the caller's (ckpt_set_kind), the file says none */
static void j_optimizer(strbuf *sb, const ckpt_torch *t, size_t k, bool given)
{
    static const char *const kinds[] = {"null", "\"adam\"", "\"adamw\""};
    static const char *const keyings[] = {"ids", "names", "flat"};
    const ckpt_torch_optimizer *o = &t->optimizers[k];
    sb_puts(sb, "{\"path\":");
    j_string(sb, o->path);
    sb_printf(sb, ",\"kind\":%s,\"keying\":\"%s\",\"groups\":[", kinds[o->kind], keyings[o->keying]);
    for (size_t g = 0; g < o->groups_len; g++) {
        if (g) sb_putc(sb, ',');
        group_json(sb, t, &t->groups[o->groups + g], o->keying != CKPT_TORCH_KEYED_IDS);
    }
    sb_printf(sb, "],\"entryCount\":%zu,\"kindGiven\":%s}", o->entries_len, given ? "true" : "false");
}

/* A paired report's entry k (slot e->id): the optimizer's index it came from and what the index
 * holds (json.h), beside the slot's members; with statistics, amsgrad's vmax. */
static void j_paired_entry(strbuf *sb, const ckpt_report *rep, size_t k)
{
    const tf_data *d = rep->family_data;
    const ckpt_torch *t = d->t;
    const ckpt_entry_info *ei = &rep->entries[k];
    const ckpt_torch_entry *e = &t->entries[d->entry_of[k]];
    sb_printf(sb, ",\"index\":%lld,\"name\":", (long long)e->index);
    if (ei->id < d->slot_count) j_string(sb, d->slot_names[ei->id]);
    else sb_puts(sb, "null");
    sb_puts(sb, ",\"group\":");
    if (e->group == CKPT_TORCH_NONE) sb_puts(sb, "null");
    else j_u64(sb, e->group);
    sb_puts(sb, ",\"shape\":");
    j_shape(sb, rep->schema, ei->id);
    sb_puts(sb, ",\"dtype\":");
    j_string(sb, t->tensors[e->exp_avg].dtype);
    if (ei->m && ei->v && e->max_exp_avg_sq != CKPT_TORCH_NONE) {
        sb_puts(sb, ",\"vmax\":");
        if (d->vmax[k]) j_stats(sb, d->vmax[k]);
        else sb_puts(sb, "null");
    }
    sb_puts(sb, ",\"other\":[");
    for (size_t j = 0; j < e->other_len; j++) {
        if (j) sb_putc(sb, ',');
        j_string(sb, t->named[e->other + j].name);
    }
    sb_putc(sb, ']');
}

void ckpt_torch_report_json(ckpt_jw *w, const ckpt_report *rep, bool bulk)
{
    strbuf *sb = ckpt_jw_text(w);
    const tf_data *d = rep->family_data;
    const ckpt_torch *t = d ? d->t : NULL;
    const bool optimizer_slots = rep->slots_bound && !rep->tensors_len;
    if (optimizer_slots) {
        /* paired with its model: the schema of a TLADAMF file and its entries, slot by slot, each
         * with its optimizer index, name, group, shape, dtype (and vmax) */
        ckpt_report_json_optimizer_more(w, rep, bulk, j_paired_entry);
        sb = ckpt_jw_text(w);
    } else {
        /* TLADAMF's members that a PyTorch file has not; its model state dict's tensors */
        sb_puts(sb,
                ",\"config\":null,\"randomCounter\":null,\"hasRandomCounter\":null,\"schema\":null,\"slotCount\":null");
        ckpt_report_json_model(w, rep, bulk);
        sb = ckpt_jw_text(w);
    }
    if (!t) {
        sb_puts(sb, ",\"container\":null,\"optimizer\":null,\"otherOptimizers\":[],\"models\":[],\"otherTensors\":[],"
                    "\"epoch\":null,\"globalStep\":null,\"model\":null,"
                    "\"weightsOnly\":null,\"weightsOnlyBy\":[],\"globals\":[],\"refused\":[],\"needsModel\":null,"
                    "\"pairing\":null,\"names\":null");
        if (!optimizer_slots) sb_puts(sb, ",\"entryCount\":null,\"entries\":[]");
        return;
    }
    sb_printf(sb, ",\"container\":{\"format\":\"%s\",\"prefix\":", t->legacy ? "legacy" : "zip");
    if (t->legacy) sb_puts(sb, "null");
    else j_string(sb, t->prefix);
    sb_puts(sb, ",\"records\":");
    j_u64(sb, t->records);
    sb_puts(sb, "},\"optimizer\":");
    if (t->optimizers_len) j_optimizer(sb, t, 0, d->kind_given && d->own == CKPT_TORCH_KIND_UNKNOWN);
    else sb_puts(sb, "null");
    sb_puts(sb, ",\"otherOptimizers\":[");
    for (size_t k = 1; k < t->optimizers_len; k++) {
        if (k > 1) sb_putc(sb, ',');
        j_optimizer(sb, t, k, false);
    }
    sb_puts(sb, "],\"models\":[");
    for (size_t m = 0; m < t->models_len; m++) {
        const ckpt_torch_model *md = &t->models[m];
        sb_puts(sb, m ? ",{\"path\":" : "{\"path\":");
        j_string(sb, md->path);
        sb_puts(sb, ",\"tensors\":[");
        for (size_t j = 0; j < md->count; j++) {
            const ckpt_torch_named *nm = &t->named[md->first + j];
            sb_puts(sb, j ? ",{\"name\":" : "{\"name\":");
            j_string(sb, nm->name);
            sb_puts(sb, ",\"shape\":");
            j_dims(sb, ckpt_torch_size(t, nm->tensor), t->tensors[nm->tensor].rank);
            sb_puts(sb, ",\"dtype\":");
            j_string(sb, t->tensors[nm->tensor].dtype);
            sb_puts(sb, ",\"count\":");
            j_u64(sb, t->tensors[nm->tensor].count);
            sb_puts(sb, ",\"offset\":");
            j_u64(sb, t->tensors[nm->tensor].at);
            sb_putc(sb, '}');
        }
        sb_puts(sb, "]}");
    }
    sb_puts(sb, "],\"otherTensors\":[");
    for (size_t j = 0; j < t->loose_len; j++) {
        const ckpt_torch_named *nm = &t->named[t->loose[j]];
        sb_puts(sb, j ? ",{\"path\":" : "{\"path\":");
        j_string(sb, nm->name);
        sb_puts(sb, ",\"shape\":");
        j_dims(sb, ckpt_torch_size(t, nm->tensor), t->tensors[nm->tensor].rank);
        sb_puts(sb, ",\"dtype\":");
        j_string(sb, t->tensors[nm->tensor].dtype);
        sb_puts(sb, ",\"count\":");
        j_u64(sb, t->tensors[nm->tensor].count);
        sb_puts(sb, ",\"offset\":");
        j_u64(sb, t->tensors[nm->tensor].at);
        sb_putc(sb, '}');
    }
    sb_puts(sb, "],\"epoch\":");
    if (t->has_epoch) sb_printf(sb, "%lld", (long long)t->epoch);
    else sb_puts(sb, "null");
    sb_puts(sb, ",\"globalStep\":");
    if (t->has_global_step) sb_printf(sb, "%lld", (long long)t->global_step);
    else sb_puts(sb, "null");
    sb_puts(sb, ",\"model\":");
    if (t->model == CKPT_TORCH_NONE) sb_puts(sb, "null");
    else j_string(sb, t->models[t->model].path);
    sb_printf(sb, ",\"weightsOnly\":%s,\"weightsOnlyBy\":", ckpt_torch_weights_only(t) ? "true" : "false");
    ckpt_torch_weights_only_json(sb, t);
    sb_puts(sb, ",\"globals\":");
    ckpt_torch_globals_json(sb, t, false);
    sb_puts(sb, ",\"refused\":");
    ckpt_torch_globals_json(sb, t, true);
    sb_printf(sb, ",\"needsModel\":%s,\"pairing\":", rep->slots_bound ? "false" : "true");
    ckpt_torch_pairing_json(sb, d, rep);
    /* the slots' names, once a model gave them */
    sb_puts(sb, ",\"names\":");
    if (rep->slots_bound && d->slot_names) {
        sb_putc(sb, '[');
        for (size_t i = 0; i < d->slot_count; i++) {
            if (i) sb_putc(sb, ',');
            j_string(sb, d->slot_names[i]);
        }
        sb_putc(sb, ']');
    } else sb_puts(sb, "null");
    if (optimizer_slots) return;
    /* unpaired: the optimizer's entries by index, as saved */
    sb_puts(sb, ",\"entryCount\":");
    if (t->optimizers_len) j_u64(sb, t->optimizers[0].entries_len);
    else sb_puts(sb, "null");
    sb_puts(sb, ",\"entries\":[");
    if (t->optimizers_len) { /* listed without the bulk arrays too: the columns hold none */
        const ckpt_torch_optimizer *o = &t->optimizers[0];
        for (size_t k = 0; k < o->entries_len; k++) {
            if (k) sb_putc(sb, ',');
            j_entry(sb, t, &t->entries[o->entries + k], d->stats ? d->stats + 3 * k : NULL);
        }
    }
    sb_puts(sb, "]");
}
