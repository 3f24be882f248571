/* The DeepSpeed family's report members (docs/report.md, docs/deepspeed.md): an optimizer
 * report's (the schema of 11.4, an entry per trainable owner), then "deepspeed": the kind, the
 * world size, the files, the groups with their configuration and paddings, per entry its name,
 * group, shape, step and fragments, and the failures of 11.5 in order. */
#include "families/deepspeed/deepspeed.h"

static void j_opt_double(strbuf *sb, bool has, double x)
{
    if (has) j_double(sb, x);
    else sb_puts(sb, "null");
}

static void j_group_config(strbuf *sb, const ckpt_ds *ds, const ds_file *f, size_t g)
{
    const ckpt_torch_group *gr = NULL;
    if (ds->universal && g < ds->ugroups_len) gr = &ds->ugroups[g];
    else if (f && f->t && f->optimizer != DS_NONE && g < f->t->optimizers[f->optimizer].groups_len)
        gr = &f->t->groups[f->t->optimizers[f->optimizer].groups + g];
    unsigned has = gr ? gr->has : 0;
    sb_puts(sb, "\"lr\":");
    j_opt_double(sb, has & CKPT_TG_LR, gr ? gr->lr : 0);
    sb_puts(sb, ",\"betas\":");
    if (has & CKPT_TG_BETAS) {
        sb_putc(sb, '[');
        j_double(sb, gr->beta1);
        sb_putc(sb, ',');
        j_double(sb, gr->beta2);
        sb_putc(sb, ']');
    } else sb_puts(sb, "null");
    sb_puts(sb, ",\"eps\":");
    j_opt_double(sb, has & CKPT_TG_EPS, gr ? gr->eps : 0);
    sb_puts(sb, ",\"weightDecay\":");
    j_opt_double(sb, has & CKPT_TG_WEIGHT_DECAY, gr ? gr->weight_decay : 0);
    sb_printf(sb, ",\"amsgrad\":%s", !(has & CKPT_TG_AMSGRAD) ? "null" : gr->amsgrad ? "true" : "false");
}

static void j_stats_or_null(strbuf *sb, const ckpt_stats *s)
{
    if (s) j_stats(sb, s);
    else sb_puts(sb, "null");
}

static void j_files(strbuf *sb, const ckpt_ds *ds)
{
    static const char *const roles[] = {"other", "model", "model", "optimizer", "refused", "state", "optimizer"};
    sb_puts(sb, ",\"files\":[");
    for (size_t k = 0; k < ds->files_len; k++) {
        const ds_file *f = &ds->files[k];
        sb_puts(sb, k ? ",{\"name\":" : "{\"name\":");
        j_string(sb, f->name);
        sb_puts(sb, ",\"rank\":");
        j_slot(sb, f->is.rank);
        sb_printf(sb, ",\"role\":\"%s\",\"size\":", roles[f->is.role]);
        j_slot(sb, f->size);
        sb_printf(sb, ",\"stale\":%s,\"weightsOnly\":", f->stale ? "true" : "false");
        if (f->t) {
            sb_puts(sb, ckpt_torch_weights_only(f->t) ? "true" : "false");
            sb_puts(sb, ",\"refused\":");
            ckpt_torch_globals_json(sb, f->t, true);
        } else sb_puts(sb, "null,\"refused\":null");
        sb_puts(sb, ",\"dsVersion\":");
        if (f->ds_version) j_string(sb, f->ds_version);
        else sb_puts(sb, "null");
        sb_putc(sb, '}');
    }
    sb_putc(sb, ']');
}

/* a folder's parameter groups: configuration, names, paddings per rank, flat size */
static void j_groups(strbuf *sb, const ckpt_ds *ds)
{
    const ds_file *f0 = ds_rank_file(ds, 0);
    sb_puts(sb, ",\"groups\":[");
    for (size_t g = 0; g < ds->param_groups; g++) {
        sb_puts(sb, g ? ",{" : "{");
        j_group_config(sb, ds, f0, g);
        sb_puts(sb, ",\"params\":[");
        bool first = true;
        uint64_t flat = 0;
        bool has_step = false;
        double step = 0;
        for (size_t s = 0; s < ds->groups_len; s++) {
            const ds_group *gr = &ds->groups[s];
            if (gr->group != g) continue;
            if (!has_step && gr->has_step) has_step = true, step = gr->step;
            flat += ds->kind == DS_ZERO3 ? gr->numel * ds->W : gr->numel + gr->padding;
            for (size_t k = gr->first; k < gr->first + gr->count; k++) {
                if (!first) sb_putc(sb, ',');
                first = false;
                j_string(sb, ds->params[k].name);
            }
        }
        sb_puts(sb, "],\"paddings\":[");
        for (uint64_t r = 0; r < ds->W && ds->kind != DS_ZERO3; r++) {
            const ds_file *f = ds_rank_file(ds, r);
            if (r) sb_putc(sb, ',');
            if (f && f->layout_ok && g < f->groups_len && f->groups[g].has_padding) j_u64(sb, f->groups[g].padding);
            else sb_puts(sb, "null");
        }
        sb_puts(sb, "],\"flatSize\":");
        j_u64(sb, flat);
        sb_puts(sb, ",\"step\":");
        j_opt_double(sb, has_step, step);
        sb_putc(sb, '}');
    }
    sb_putc(sb, ']');
    if (ds->kind != DS_ZERO3) return;
    sb_puts(sb, ",\"subGroups\":[");
    for (size_t s = 0; s < ds->groups_len; s++) {
        const ds_group *gr = &ds->groups[s];
        sb_printf(sb, "%s{\"group\":%zu,\"params\":%zu,\"partition\":", s ? "," : "", gr->group, gr->count);
        j_u64(sb, gr->numel);
        sb_puts(sb, ",\"step\":");
        j_opt_double(sb, gr->has_step, gr->step);
        sb_putc(sb, '}');
    }
    sb_putc(sb, ']');
}

/* one file alone: its own groups (ZeRO-3: sub-groups), their flat lengths and steps */
static void j_lone_groups(strbuf *sb, const ckpt_ds *ds)
{
    const ds_file *f = &ds->files[0];
    sb_puts(sb, ",\"groups\":[");
    for (size_t g = 0; f->is.role == DS_ROLE_OPTIM && g < f->groups_len; g++) {
        const ds_fgroup *fg = &f->groups[g];
        sb_puts(sb, g ? ",{" : "{");
        j_group_config(sb, ds, f, f->kind == DS_ZERO3 ? fg->group : g);
        sb_puts(sb, ",\"params\":null,\"paddings\":[");
        if (fg->has_padding) j_u64(sb, fg->padding);
        else sb_puts(sb, "null");
        sb_puts(sb, "],\"flatSize\":");
        if (fg->flat[DS_EXP_AVG].tensor != DS_NONE) j_u64(sb, fg->flat[DS_EXP_AVG].count);
        else if (fg->flat[DS_FP32].tensor != DS_NONE) j_u64(sb, fg->flat[DS_FP32].count);
        else sb_puts(sb, "null");
        sb_puts(sb, ",\"lengths\":{");
        for (int k = 0; k < DS_KEYS; k++) {
            sb_printf(sb, "%s\"%s\":", k ? "," : "", ds_key_names[k]);
            if (fg->flat[k].tensor != DS_NONE) j_u64(sb, fg->flat[k].count);
            else sb_puts(sb, "null");
        }
        sb_puts(sb, "},\"step\":");
        j_opt_double(sb, fg->has_step, fg->step);
        sb_putc(sb, '}');
    }
    sb_putc(sb, ']');
}

/* per trainable owner: its name, group, shape, step, fragments (rank, start, count, file) and
 * the keys it has, with statistics of m, v, vmax and the masters */
static void j_entries(strbuf *sb, const ckpt_ds *ds, const ckpt_report *rep, bool bulk)
{
    sb_puts(sb, ",\"entries\":[");
    bool first = true;
    for (size_t k = 0; bulk && k < ds->params_len; k++) {
        const ds_param *p = &ds->params[k];
        if (!first) sb_putc(sb, ',');
        first = false;
        sb_puts(sb, "{\"slot\":");
        j_slot(sb, p->slot == DS_NONE ? CKPT_NONE : p->slot);
        sb_puts(sb, ",\"name\":");
        j_string(sb, p->name);
        sb_printf(sb, ",\"group\":%zu", p->group);
        if (ds->kind == DS_ZERO3) sb_printf(sb, ",\"subGroup\":%zu", p->flat);
        sb_puts(sb, ",\"shape\":");
        j_dims(sb, p->dims, p->rank_dims < 8 ? p->rank_dims : 8);
        sb_puts(sb, ",\"count\":");
        j_u64(sb, p->count);
        sb_puts(sb, ",\"offset\":");
        j_u64(sb, p->offset);
        const ds_group *gr = &ds->groups[p->flat];
        sb_puts(sb, ",\"step\":");
        j_opt_double(sb, gr->has_step, gr->step);
        sb_puts(sb, ",\"fragments\":[");
        for (size_t j = 0; j < p->frags_len; j++) {
            const ds_frag *fr = &ds->frags[p->frags + j];
            sb_printf(sb, "%s{\"rank\":", j ? "," : "");
            j_u64(sb, fr->rank);
            sb_puts(sb, ",\"start\":");
            j_u64(sb, fr->start);
            sb_puts(sb, ",\"count\":");
            j_u64(sb, fr->count);
            sb_puts(sb, ",\"file\":");
            if (fr->file != DS_NONE) j_string(sb, ds->files[fr->file].name);
            else sb_puts(sb, "null");
            sb_putc(sb, '}');
        }
        sb_puts(sb, "],\"keys\":[");
        bool fk = true;
        for (int key = 0; ds->layout_ok && key < DS_KEYS; key++)
            if (ckpt_ds_has_key(ds, k, key)) {
                sb_printf(sb, "%s\"%s\"", fk ? "" : ",", ds_key_names[key]);
                fk = false;
            }
        sb_putc(sb, ']');
        if (rep->statistics) {
            static const char *const names[DS_KEYS] = {"m", "v", "vmax", "master"};
            for (int key = 0; key < DS_KEYS; key++) {
                sb_printf(sb, ",\"%s\":", names[key]);
                j_stats_or_null(sb, p->stats[key]);
            }
        }
        sb_putc(sb, '}');
    }
    sb_putc(sb, ']');
}

void ds_report_json(ckpt_jw *w, const ckpt_report *rep, bool bulk)
{
    const ckpt_ds *ds = ckpt_ds_of(rep);
    const bool model = ds && ds->lone && ds->files_len && ds->files[0].is.role != DS_ROLE_OPTIM;
    if (model) {
        strbuf *sb = ckpt_jw_text(w);
        sb_puts(sb,
                ",\"config\":null,\"randomCounter\":null,\"hasRandomCounter\":null,\"schema\":null,\"slotCount\":null");
        ckpt_report_json_model(w, rep, bulk);
    } else ckpt_report_json_optimizer(w, rep, bulk);
    strbuf *sb = ckpt_jw_text(w);
    /* the slots' names (the module's), as a paired PyTorch report names its slots */
    sb_puts(sb, ",\"names\":");
    if (ds && !model && ds->slot_count) {
        sb_putc(sb, '[');
        for (size_t k = 0; k < ds->slot_count; k++) {
            if (k) sb_putc(sb, ',');
            j_string(sb, ds->slot_names[k]);
        }
        sb_putc(sb, ']');
    } else sb_puts(sb, "null");
    if (!ds) {
        sb_puts(sb, ",\"deepspeed\":null");
        return;
    }
    const ds_file *m = ds->model == DS_NONE ? NULL : &ds->files[ds->model];
    const ds_file *f0 = ds->lone ? &ds->files[0] : ds_rank_file(ds, 0);
    sb_puts(sb, ",\"deepspeed\":{\"kind\":");
    if (ds->kind) j_string(sb, ds_kind_name(ds->kind));
    else sb_puts(sb, "null");
    sb_puts(sb, ",\"stage\":");
    if (ds->kind && ds->kind != DS_BF16_OPTIMIZER) j_u64(sb, ds->kind == DS_ZERO1 ? 1 : ds->kind == DS_ZERO2 ? 2 : 3);
    else sb_puts(sb, "null");
    const ds_file *cfg = m ? m : f0;
    sb_puts(sb, ",\"configStage\":");
    if (cfg && cfg->config_stage >= 0) j_u64(sb, (uint64_t)cfg->config_stage);
    else sb_puts(sb, "null");
    sb_puts(sb, ",\"worldSize\":");
    if (ds->W && !ds->universal) j_u64(sb, ds->W);
    else sb_puts(sb, "null");
    sb_printf(sb, ",\"bf16\":%s,\"universal\":%s", ds->bf16 ? "true" : "false", ds->universal ? "true" : "false");
    /* the module's dtype: bfloat16 in a bf16 run, the moments and masters float32 in every run */
    sb_puts(sb, ",\"dtype\":");
    const char *mdt = NULL;
    if (m && m->t && m->module != DS_NONE && m->t->models[m->module].count) {
        const ckpt_torch_model *md = &m->t->models[m->module];
        for (size_t k = 0; k < md->count && !mdt; k++) {
            const ckpt_torch_named *nm = &m->t->named[md->first + k];
            if (nm->tensor != CKPT_TORCH_NONE && ds->param_of_slot)
                for (size_t s = 0; s < ds->slot_count && !mdt; s++)
                    if (!strcmp(ds->slot_names[s], nm->name))
                        mdt = ckpt_dtype_name(ckpt_torch_dtype(m->t->tensors[nm->tensor].dtype));
        }
    }
    if (mdt) j_string(sb, mdt);
    else sb_puts(sb, "null");
    sb_puts(sb, ",\"dsVersion\":");
    if (f0 && f0->ds_version) j_string(sb, f0->ds_version);
    else if (m && m->ds_version) j_string(sb, m->ds_version);
    else sb_puts(sb, "null");
    sb_printf(sb, ",\"lone\":%s,\"rank\":", ds->lone ? "true" : "false");
    j_slot(sb, ds->lone ? ds->lone_rank : CKPT_NONE);
    sb_puts(sb, ",\"note\":");
    if (ds->note) j_string(sb, ds->note);
    else sb_puts(sb, "null");
    sb_puts(sb, ",\"root\":");
    if (ds->root) j_string(sb, ds->root);
    else sb_puts(sb, "null");
    sb_puts(sb, ",\"tag\":");
    if (ds->tag) j_string(sb, ds->tag);
    else sb_puts(sb, "null");
    sb_puts(sb, ",\"dir\":");
    if (ds->dir) j_string(sb, ds->dir);
    else sb_puts(sb, "null");
    sb_puts(sb, ",\"optimizerKind\":");
    sb_puts(sb, ds->kind_said == CKPT_ADAM ? "\"adam\"" : ds->kind_said == CKPT_ADAMW ? "\"adamw\"" : "null");
    sb_puts(sb, ",\"kindSaidBy\":");
    sb_puts(sb, ds->kind_said < 0 ? "null" : ds->kind_by_groups ? "\"param_groups\"" : "\"ds_config\"");
    sb_puts(sb, ",\"kindGiven\":");
    sb_puts(sb, ds->kind_given == CKPT_ADAM ? "\"adam\"" : ds->kind_given == CKPT_ADAMW ? "\"adamw\"" : "null");
    sb_puts(sb, ",\"slots\":[");
    for (size_t k = 0; k < ds->slot_count; k++) {
        if (k) sb_putc(sb, ',');
        j_string(sb, ds->slot_names[k]);
    }
    sb_putc(sb, ']');
    j_files(sb, ds);
    if (ds->lone) j_lone_groups(sb, ds);
    else j_groups(sb, ds);
    const ds_file *steps = m ? m : NULL;
    sb_puts(sb, ",\"globalSteps\":");
    if (steps && steps->has_global) j_u64(sb, steps->global_steps);
    else sb_puts(sb, "null");
    sb_puts(sb, ",\"skippedSteps\":");
    if (steps && steps->has_skipped) j_u64(sb, steps->skipped_steps);
    else sb_puts(sb, "null");
    j_entries(sb, ds, rep, true);
    sb_puts(sb, ",\"failures\":[");
    for (size_t k = 0; k < ds->failures_len; k++) {
        if (k) sb_putc(sb, ',');
        j_error(sb, &ds->failures[k]);
    }
    sb_puts(sb, "]}");
    (void)bulk;
}
