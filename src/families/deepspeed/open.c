/* Opening a DeepSpeed checkpoint (format.md 11.1, 11.5): a tag folder read as one source
 * (containers/bundle.h) or one of its files alone. The checks run in 11.5's order; the first
 * error is the report's, and every failure is listed. */
#include "families/deepspeed/deepspeed.h"

#include <stdio.h>
#include <stdlib.h>

void ds_free(ckpt_ds *ds)
{
    if (!ds) return;
    for (size_t k = 0; k < ds->files_len; k++) {
        ds_file *f = &ds->files[k];
        free(f->name);
        ckpt_torch_free(f->t);
        free(f->partitions);
        free(f->ds_version);
        free(f->osd_version_text);
        free(f->groups);
    }
    free(ds->files);
    for (size_t k = 0; k < ds->params_len; k++) {
        free(ds->params[k].name);
        for (int j = 0; j < DS_KEYS; j++) ckpt_stats_free(ds->params[k].stats[j]);
    }
    free(ds->params);
    free(ds->groups);
    free(ds->frags);
    free(ds->items);
    free(ds->spans);
    free(ds->optim);
    for (size_t k = 0; k < ds->failures_len; k++) ckpt_error_clear(&ds->failures[k]);
    free(ds->failures);
    for (size_t k = 0; k < ds->slot_count; k++) free(ds->slot_names[k]);
    free(ds->slot_names);
    free(ds->param_of_slot);
    free(ds->configs);
    free(ds->has_config);
    free(ds->ugroups);
    free(ds->note);
    free(ds->root);
    free(ds->dir);
    free(ds->tag);
    free(ds);
}

static char *dup(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d) memcpy(d, s, n);
    return d;
}

static char *join(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    bool slash = la && a[la - 1] != '/';
    char *d = malloc(la + slash + lb + 1);
    if (!d) return NULL;
    memcpy(d, a, la);
    if (slash) d[la] = '/';
    memcpy(d + la + slash, b, lb + 1);
    return d;
}

/* ---- peeking before the checks that need it (no failure listed) ---- */

static uint64_t peek_partitions(const ds_file *f)
{
    if (!f->t) return 0;
    ds_tree c = ds_tree_of(f);
    size_t pc = ds_get(c, ds_get(c, c.p->root, "optimizer_state_dict"), "partition_count");
    int64_t v;
    if (ds_int(c, pc, &v) && v > 0 && v <= DS_MAX_WORLD) return (uint64_t)v;
    if (ds_is_seq(c, pc) && ds_int(c, ds_item(c, pc, 0), &v) && v > 0 && v <= DS_MAX_WORLD) return (uint64_t)v;
    return 0;
}

static int peek_stage(const ds_file *f)
{
    if (!f->t) return -1;
    ds_tree c = ds_tree_of(f);
    size_t osd = ds_get(c, c.p->root, "optimizer_state_dict");
    if (ds_get(c, osd, "fp32_flat_groups") != CKPT_PNIL) return 3;
    return ds_zero_stage(c, ds_get(c, osd, "zero_stage"));
}

static int peek_bf16(const ds_file *f)
{
    if (!f->t) return -1;
    ds_tree c = ds_tree_of(f);
    size_t cfg = ds_get(c, c.p->root, "ds_config");
    size_t b = ds_get(c, ds_get(c, cfg, "bf16"), "enabled");
    if (b == CKPT_PNIL) b = ds_get(c, ds_get(c, cfg, "bfloat16"), "enabled");
    return b != CKPT_PNIL && ds_node(c, b)->kind == CKPT_PK_BOOL ? ds_node(c, b)->truth : -1;
}

/* ---- the torch object model of each file ---- */

static int open_torch(ckpt_ds *ds, ds_file *f, ckpt_error *fail)
{
    ckpt_window w;
    ckpt_source s;
    ckpt_source_window(&s, &w, ds->src, f->base, f->size);
    return ckpt_torch_open(&s, f->name, &f->t, fail);
}

/* ---- checks of several files (11.5.8-14) ---- */

static const ds_file *file0(const ckpt_ds *ds)
{
    for (uint64_t r = 0; r < ds->W; r++)
        if (ds->optim[r] != DS_NONE && ds->files[ds->optim[r]].read) return &ds->files[ds->optim[r]];
    return NULL;
}

static int cross_checks(ckpt_ds *ds, ckpt_report *rep)
{
    const ds_file *f0 = file0(ds);
    if (!f0) return 0;
    /* 8: the versions of one save */
    for (size_t k = 0; k < ds->files_len; k++) {
        const ds_file *f = &ds->files[k];
        if (f == f0 || !f->read || f->stale || !f->ds_version || !f0->ds_version) continue;
        if (strcmp(f->ds_version, f0->ds_version))
            TRY(ds_fail(ds, rep, CKPT_E_DS_SAVES, "%s was saved by DeepSpeed %s, %s by %s", f->name, f->ds_version,
                        f0->name, f0->ds_version));
    }
    /* 9, 10 */
    for (uint64_t r = 0; r < ds->W; r++) {
        const ds_file *f = ds->optim[r] == DS_NONE ? NULL : &ds->files[ds->optim[r]];
        if (!f || f == f0 || !f->read) continue;
        if (f->kind != f0->kind)
            TRY(ds_fail(ds, rep, CKPT_E_DS_SAVES, "%s is %s, %s is %s", f->name, ds_kind_name(f->kind), f0->name,
                        ds_kind_name(f0->kind)));
        if (f->W != f0->W)
            TRY(ds_fail(ds, rep, CKPT_E_DS_SAVES, "%s has partition_count %llu, %s has %llu", f->name,
                        (unsigned long long)f->W, f0->name, (unsigned long long)f0->W));
    }
    /* 11 */
    const ds_file *m = ds->model == DS_NONE ? NULL : &ds->files[ds->model];
    if (m && m->read && m->has_dp && m->dp_world_size != f0->W)
        TRY(ds_fail(ds, rep, CKPT_E_DS_SAVES,
                    "the model states say dp_world_size %llu, the optimizer files partition_count %llu",
                    (unsigned long long)m->dp_world_size, (unsigned long long)f0->W));
    return 0;
}

static int refusals(ckpt_ds *ds, ckpt_report *rep)
{
    /* 12: pipeline, MoE and tensor parallelism (by name, and mp_world_size) */
    for (size_t k = 0; k < ds->files_len; k++) {
        const ds_file *f = &ds->files[k];
        bool mp = f->read && f->has_mp && f->mp_world_size != 1;
        if (f->is.role == DS_ROLE_REFUSED || mp)
            TRY(ds_fail(ds, rep, CKPT_E_DS_UNSUPPORTED,
                        "%s: pipeline-parallel, expert (MoE) and tensor-parallel checkpoints are not supported",
                        f->name));
    }
    return 0;
}

/* The param_groups list of a partition's base optimizer. */
static size_t param_groups_of(const ds_file *f)
{
    ds_tree c = ds_tree_of(f);
    size_t osd = ds_get(c, f->root, "optimizer_state_dict");
    size_t base = ds_get(c, osd, f->kind == DS_ZERO3 ? "optimizer_state_dict" : "base_optimizer_state");
    return ds_is_dict(c, base) ? ds_get(c, base, "param_groups") : CKPT_PNIL;
}

/* 14: every param_groups entry but params, as rank 0's */
static int group_configs(ckpt_ds *ds, ckpt_report *rep)
{
    const ds_file *f0 = ds->optim[0] == DS_NONE ? NULL : &ds->files[ds->optim[0]];
    if (!f0 || !f0->read) return 0;
    ds_tree c0 = ds_tree_of(f0);
    size_t l0 = param_groups_of(f0);
    for (uint64_t r = 1; r < ds->W; r++) {
        const ds_file *f = ds->optim[r] == DS_NONE ? NULL : &ds->files[ds->optim[r]];
        if (!f || !f->read || f->kind != f0->kind) continue;
        ds_tree c = ds_tree_of(f);
        size_t l = param_groups_of(f);
        size_t G = ds_len(c, l) < ds_len(c0, l0) ? ds_len(c, l) : ds_len(c0, l0);
        for (size_t g = 0; g < G; g++) {
            size_t a = ds_item(c, l, g), b = ds_item(c0, l0, g);
            /* rank 0's keys in order, then those only this rank has */
            for (int pass = 0; pass < 2; pass++) {
                ds_tree cx = pass ? c : c0;
                ds_dict_it it;
                size_t key, value;
                if (!ds_dict_begin(cx, pass ? a : b, &it)) continue;
                while (ds_dict_next(cx, &it, &key, &value)) {
                    const char *ks;
                    size_t kl;
                    if (!ds_str(cx, key, &ks, &kl) || (kl == 6 && !memcmp(ks, "params", 6))) continue;
                    char *name = malloc(kl + 1);
                    if (!name) return ckpt_fail_oom(&rep->error);
                    memcpy(name, ks, kl);
                    name[kl] = 0;
                    size_t va = ds_get(c, a, name), vb = ds_get(c0, b, name);
                    if (pass && vb != CKPT_PNIL) {
                        free(name);
                        continue;
                    }
                    strbuf x = {0}, y = {0};
                    ds_value_text(&x, c, va);
                    ds_value_text(&y, c0, vb);
                    int rc = 0;
                    if (x.failed || y.failed) rc = ckpt_fail_oom(&rep->error);
                    else if (strcmp(x.data, y.data))
                        rc = ds_fail(ds, rep, CKPT_E_DS_SAVES, "%s: group %zu's %s is %s, rank 0's is %s", f->name, g,
                                     name, x.data, y.data);
                    sb_free(&x);
                    sb_free(&y);
                    free(name);
                    TRY(rc);
                }
            }
        }
    }
    return 0;
}

/* 31: ds_version */
static bool version_below(const char *v, int a, int b, int c)
{
    int x = 0, y = 0, z = 0;
    if (sscanf(v, "%d.%d.%d", &x, &y, &z) < 1) return false;
    return x != a ? x < a : y != b ? y < b : z < c;
}

/* 31: the ds_version ZeRO-1/2's and BF16_Optimizer's load reads (stage_1_and_2.py
 * _load_global_state, bf16_optimizer.py: optimizer_state_dict's, absent or empty refused) */
static int version_warnings(ckpt_ds *ds, ckpt_report *rep)
{
    const ds_file *f0 = ds->lone ? &ds->files[0] : file0(ds);
    for (size_t k = 0; k < ds->files_len; k++) {
        const ds_file *f = &ds->files[k];
        if (!f->read || f->stale || f->is.role != DS_ROLE_OPTIM || f->kind == DS_ZERO3) continue;
        if (!f->osd_version) TRY(ds_warn(rep, "%s: empty ds_version: DeepSpeed's load refuses it", f->name));
        else if (f == f0 && f->kind == DS_ZERO1 && version_below(f->osd_version_text, 0, 3, 17))
            TRY(ds_warn(rep, "ds_version %s is below 0.3.17: DeepSpeed's ZeRO-1 load refuses it", f->osd_version_text));
    }
    return 0;
}

static int elastic_warning(ckpt_ds *ds, ckpt_report *rep)
{
    const ds_file *f0 = file0(ds);
    if (f0 && f0->elastic)
        return ds_warn(rep, "an elastic checkpoint keeps no param_groups: lr, betas, eps and weight decay are not in "
                            "the file");
    return 0;
}

/* ---- the groups' configurations (11.4) ---- */

static int configs(ckpt_ds *ds, ckpt_report *rep)
{
    const ds_file *f0 = file0(ds);
    const ds_file *m = ds->model == DS_NONE ? NULL : &ds->files[ds->model];
    if (!f0) return 0;
    size_t G = f0->optimizer == DS_NONE ? f0->groups_len : f0->t->optimizers[f0->optimizer].groups_len;
    ds->param_groups = G;
    ds->configs = calloc(G ? G : 1, sizeof *ds->configs);
    ds->has_config = calloc(G ? G : 1, sizeof *ds->has_config);
    if (!ds->configs || !ds->has_config) return ckpt_fail_oom(&rep->error);
    ds_kind_from_config(ds, m && m->t ? m : f0,
                        f0->optimizer == DS_NONE ? NULL : &f0->t->groups[f0->t->optimizers[f0->optimizer].groups],
                        f0->optimizer == DS_NONE ? 0 : G);
    for (size_t g = 0; g < G && f0->optimizer != DS_NONE; g++) {
        const ckpt_torch_group *gr = &f0->t->groups[f0->t->optimizers[f0->optimizer].groups + g];
        if ((gr->has & (CKPT_TG_BETAS | CKPT_TG_EPS)) != (CKPT_TG_BETAS | CKPT_TG_EPS)) continue;
        ds->configs[g] =
            (ckpt_config){ds->kind_said == CKPT_ADAMW ? CKPT_ADAMW : CKPT_ADAM, ckpt_bits_from_double(gr->beta1),
                          ckpt_bits_from_double(gr->beta2), ckpt_bits_from_double(gr->eps),
                          ckpt_bits_from_double(gr->has & CKPT_TG_WEIGHT_DECAY ? gr->weight_decay : 0)};
        ds->has_config[g] = true;
    }
    return 0;
}

/* ---- a folder ---- */

static int read_text(const ckpt_ds *ds, const ckpt_bundle_entry *e, char **out, size_t *len, ckpt_error *err)
{
    *out = NULL;
    *len = 0;
    if (!e || e->offset == CKPT_NONE) return 0;
    size_t n = e->size > DS_LATEST_MAX ? DS_LATEST_MAX : (size_t)e->size;
    char *t = malloc(n + 1);
    if (!t) return ckpt_fail_oom(err);
    int rc = ckpt_read_at(ds->src, e->offset, t, n, e->name, err);
    if (rc) {
        free(t);
        return rc;
    }
    t[n] = 0;
    *out = t;
    *len = n;
    return 0;
}

static const char *base_name(const char *path)
{
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

static int folder(ckpt_parse *p, ckpt_ds *ds)
{
    ckpt_report *rep = p->rep;
    ckpt_bundle *b = NULL;
    TRY(ckpt_bundle_open(ds->src, &b, p->err));
    int rc = 0;
    ds_plan plan = {0};
    const char **names = calloc(b->count ? b->count : 1, sizeof *names);
    uint64_t *sizes = calloc(b->count ? b->count : 1, sizeof *sizes);
    char *latest = NULL, *universal = NULL;
    size_t ll = 0, ul = 0;
    if (!names || !sizes || !(ds->root = dup(b->root))) rc = ckpt_fail_oom(p->err);
    for (size_t k = 0; !rc && k < b->count; k++) {
        names[k] = b->entries[k].name;
        sizes[k] = b->entries[k].size;
    }
    if (!rc) rc = read_text(ds, ckpt_bundle_find(b, "latest"), &latest, &ll, p->err);
    if (!rc) rc = read_text(ds, ckpt_bundle_find(b, "latest_universal"), &universal, &ul, p->err);
    ds_listing l = {names, sizes, b->count, latest, universal, ll, ul};
    if (!rc) rc = ds_plan_make(&l, &plan, p->err);
    if (rc) goto done;
    const char *save_dir = ds->root, *which = plan.has_latest ? "latest" : "latest_universal";
    if (plan.kind == DS_FOLDER_NONE) {
        rc = ds_fail(ds, rep, CKPT_E_DS_FOLDER, "%s holds no tag folder: no latest file and no DeepSpeed file",
                     save_dir);
        goto done;
    }
    if (plan.need_latest || plan.need_universal) {
        rc = ds_fail(ds, rep, CKPT_E_DS_FOLDER, "%s: %s is not in the folder's source", save_dir, which);
        goto done;
    }
    /* 11.5.1, 2 */
    if (plan.missing) {
        /* an empty tag (latest holds only whitespace) is written "", else the text says nothing */
        const char *tag = *plan.tag ? plan.tag : "\"\"";
        rc = ds_fail(ds, rep, CKPT_E_DS_FOLDER, "%s names %s, but %s has no folder %s", which, tag, save_dir, tag);
        goto done;
    }
    ds->universal = plan.universal;
    if (plan.guessed &&
        (rc = ds_warn(rep,
                      "%s has no latest file: DeepSpeed's load_checkpoint() without a tag loads nothing; reading %s",
                      save_dir, plan.tag)))
        goto done;
    if (plan.tag && !(ds->tag = dup(plan.tag))) rc = ckpt_fail_oom(p->err);
    if (!rc && !(ds->dir = plan.tag ? join(ds->root, plan.tag) : dup(ds->root))) rc = ckpt_fail_oom(p->err);
    if (!rc && !(ds->files = calloc(plan.files_len ? plan.files_len : 1, sizeof *ds->files)))
        rc = ckpt_fail_oom(p->err);
    for (size_t j = 0; !rc && j < plan.files_len; j++) {
        const ckpt_bundle_entry *e = &b->entries[plan.files[j]];
        if (e->offset == CKPT_NONE) continue; /* listed, not laid out: as if absent */
        ds_file *f = &ds->files[ds->files_len++];
        ds_file_init(f);
        /* a universal checkpoint's zero/ files are named by their path in the tag folder */
        size_t skip = plan.tag ? strlen(plan.tag) + 1 : 0;
        const char *nm = ds->universal && strlen(e->name) > skip ? e->name + skip : base_name(e->name);
        if (!(f->name = dup(nm))) rc = ckpt_fail_oom(p->err);
        f->is = ds_name_of(f->name, f->name ? strlen(f->name) : 0);
        f->base = e->offset;
        f->size = e->size;
    }
done:
    free(names);
    free(sizes);
    free(latest);
    free(universal);
    ds_plan_free(&plan);
    ckpt_bundle_free(b);
    return rc;
}

/* The checks of a tag folder's files, in 11.5's order. */
static int tag_checks(ckpt_parse *p, ckpt_ds *ds)
{
    ckpt_report *rep = p->rep;
    /* every file's object model (its own failures listed at 11.5.7's place) */
    ckpt_error *opened = calloc(ds->files_len ? ds->files_len : 1, sizeof *opened);
    if (!opened) return ckpt_fail_oom(p->err);
    int rc = 0;
    for (size_t k = 0; k < ds->files_len && !rc; k++) {
        ckpt_error_clear(&opened[k]);
        if (ds->files[k].is.role == DS_ROLE_REFUSED) continue;
        int code = open_torch(ds, &ds->files[k], &opened[k]);
        if (code == CKPT_E_NO_MEMORY) rc = ckpt_fail_oom(p->err);
    }
    /* 3: bf16_ and plain partitions in one tag */
    bool bf16 = false, plain = false;
    size_t m0 = DS_NONE, z0 = DS_NONE;
    bool zmodels = false;
    for (size_t k = 0; k < ds->files_len; k++) {
        const ds_file *f = &ds->files[k];
        if (f->is.role == DS_ROLE_OPTIM) *(f->is.prefix == DS_BF16 ? &bf16 : &plain) = true;
        if (f->is.role == DS_ROLE_MODEL) m0 = k;
        if (f->is.role == DS_ROLE_ZMODEL) {
            zmodels = true;
            if (f->is.rank == 0) z0 = k;
        }
    }
    int use = bf16 && !plain ? DS_BF16 : DS_PLAIN;
    if (!rc && bf16 && plain) {
        size_t mk = z0 != DS_NONE ? z0 : m0;
        int says = mk == DS_NONE ? -1 : peek_bf16(&ds->files[mk]);
        if (says < 0) {
            rc = ds_fail(ds, rep, CKPT_E_DS_FOLDER,
                         "%s holds both bf16_zero_pp_rank_* and zero_pp_rank_* files, and the model states do not say "
                         "which save is current",
                         ds->dir);
            goto done;
        }
        use = says ? DS_BF16 : DS_PLAIN;
        rc = ds_warn(rep,
                     "%s holds both bf16_zero_pp_rank_* and zero_pp_rank_* files; the model states say bf16 is %s, so "
                     "the %s* files are stale",
                     ds->dir, says ? "on" : "off", says ? "zero_pp_rank_" : "bf16_zero_pp_rank_");
        for (size_t k = 0; k < ds->files_len; k++)
            if (ds->files[k].is.role == DS_ROLE_OPTIM && (ds->files[k].is.prefix == DS_BF16) != (use == DS_BF16))
                ds->files[k].stale = true;
    }
    ds->bf16 = use == DS_BF16;
    /* W: rank 0's partition_count (the lowest rank's), else the model states' dp_world_size */
    uint64_t lowest = CKPT_NONE, top = 0;
    size_t lowest_k = DS_NONE;
    for (size_t k = 0; k < ds->files_len; k++) {
        const ds_file *f = &ds->files[k];
        if (f->is.role != DS_ROLE_OPTIM || f->stale) continue;
        if (f->is.rank < lowest && f->t) lowest = f->is.rank, lowest_k = k;
        if (f->is.rank + 1 > top) top = f->is.rank + 1;
    }
    ds->W = lowest_k != DS_NONE ? peek_partitions(&ds->files[lowest_k]) : 0;
    if (!ds->W && m0 != DS_NONE && ds->files[m0].t) {
        ds_tree c = ds_tree_of(&ds->files[m0]);
        int64_t v;
        if (ds_int(c, ds_get(c, c.p->root, "dp_world_size"), &v) && v > 0 && v <= DS_MAX_WORLD) ds->W = (uint64_t)v;
    }
    if (!ds->W) ds->W = top && top <= DS_MAX_WORLD ? top : 1;
    bool z3 = zmodels || (lowest_k != DS_NONE && peek_stage(&ds->files[lowest_k]) == 3);
    /* 4: the model states */
    const char *mname = z3 ? "zero_pp_rank_0_mp_rank_00_model_states.pt" : "mp_rank_00_model_states.pt";
    ds->model = z3 ? z0 : m0;
    if (!rc && ds->model == DS_NONE)
        rc =
            ds_fail(ds, rep, CKPT_E_DS_FOLDER, "%s has no %s: it holds the parameter names and shapes", ds->dir, mname);
    /* 5, 6: ranks */
    if (!rc && !(ds->optim = malloc((size_t)ds->W * sizeof *ds->optim))) rc = ckpt_fail_oom(p->err);
    for (uint64_t r = 0; !rc && r < ds->W; r++) ds->optim[r] = DS_NONE;
    size_t *zm = NULL;
    if (!rc && z3 && !(zm = malloc((size_t)ds->W * sizeof *zm))) rc = ckpt_fail_oom(p->err);
    for (uint64_t r = 0; !rc && zm && r < ds->W; r++) zm[r] = DS_NONE;
    for (size_t k = 0; !rc && k < ds->files_len; k++) {
        ds_file *f = &ds->files[k];
        if ((f->is.role != DS_ROLE_OPTIM || f->stale) && f->is.role != DS_ROLE_ZMODEL) continue;
        if (f->is.rank >= ds->W) {
            f->stale = true;
            rc = ds_warn(rep,
                         "%s is rank %llu, but the checkpoint has %llu partitions: a stale file from an earlier save "
                         "(zero_to_fp32 counts it and fails)",
                         f->name, (unsigned long long)f->is.rank, (unsigned long long)ds->W);
            continue;
        }
        if (f->is.role == DS_ROLE_OPTIM) ds->optim[f->is.rank] = k;
        else if (zm) zm[f->is.rank] = k;
    }
    /* each missing file is listed, up to DS_MAX_LISTED of them (a hostile partition_count) */
    size_t listed = 0;
    for (uint64_t r = 0; !rc && r < ds->W && listed < DS_MAX_LISTED; r++) {
        char name[96];
        listed += (ds->optim[r] == DS_NONE) + (zm && zm[r] == DS_NONE && r > 0);
        if (ds->optim[r] == DS_NONE) {
            snprintf(name, sizeof name, "%szero_pp_rank_%llu_mp_rank_00_optim_states.pt", ds->bf16 ? "bf16_" : "",
                     (unsigned long long)r);
            rc = ds_fail(ds, rep, CKPT_E_DS_FOLDER, "rank %llu of %llu is missing: no %s", (unsigned long long)r,
                         (unsigned long long)ds->W, name);
        }
        if (!rc && zm && zm[r] == DS_NONE && r > 0) {
            snprintf(name, sizeof name, "zero_pp_rank_%llu_mp_rank_00_model_states.pt", (unsigned long long)r);
            rc = ds_fail(ds, rep, CKPT_E_DS_FOLDER, "rank %llu of %llu is missing: no %s", (unsigned long long)r,
                         (unsigned long long)ds->W, name);
        }
    }
    free(zm);
    /* 7, 18: each file's keys, types and flat tensors */
    for (size_t k = 0; !rc && k < ds->files_len; k++) {
        ds_file *f = &ds->files[k];
        if (f->stale || f->is.role == DS_ROLE_REFUSED) continue;
        if (opened[k].code) {
            strbuf hint = {0};
            sb_printf(&hint, "the file is %s", f->name);
            if (!hint.failed) ckpt_set_hint(&opened[k], hint.data);
            sb_free(&hint);
            rc = ds_push_failure(ds, rep, &opened[k]);
            continue;
        }
        rc = ds_read_file(ds, rep, f);
    }
    if (!rc) rc = cross_checks(ds, rep);
    if (!rc) rc = refusals(ds, rep);
    const ds_file *f0 = file0(ds);
    if (f0) ds->kind = f0->kind;
    if (!rc && f0 && ds->model != DS_NONE && ds->files[ds->model].read) rc = ds_walk(ds, rep);
    if (!rc) rc = group_configs(ds, rep);
    if (!rc) rc = ds_lengths(ds, rep);
    if (!rc) rc = ds_steps(ds, rep);
    if (!rc) rc = ds_schema(ds, rep);
    if (!rc) rc = configs(ds, rep);
    if (!rc) rc = ds_step_warnings(ds, rep);
    if (!rc) rc = version_warnings(ds, rep);
    if (!rc) rc = elastic_warning(ds, rep);
done:
    for (size_t k = 0; k < ds->files_len; k++) ckpt_error_clear(&opened[k]);
    free(opened);
    return rc;
}

/* ---- one file alone ---- */

/* 1: not DeepSpeed's (the PyTorch family reads it); 0 or an error otherwise */
static int lone(ckpt_parse *p, ckpt_ds *ds)
{
    ckpt_report *rep = p->rep;
    ds->lone = true;
    ckpt_error quiet = {0};
    ckpt_error_clear(&quiet);
    ckpt_torch *t = NULL;
    int code = ckpt_torch_open(ds->src, "file", &t, &quiet);
    ckpt_error_clear(&quiet);
    if (code) return code == CKPT_E_NO_MEMORY ? ckpt_fail_oom(p->err) : 1;
    if (!(ds->files = calloc(1, sizeof *ds->files))) {
        ckpt_torch_free(t);
        return ckpt_fail_oom(p->err);
    }
    ds_file *f = &ds->files[0];
    ds->files_len = 1;
    ds_file_init(f);
    f->t = t;
    f->size = ds->src->size;
    strbuf name = {0};
    sb_printf(&name, "%s.pt", t->legacy || !*t->prefix ? "the file" : t->prefix);
    if (!(f->name = sb_take(&name))) return ckpt_fail_oom(p->err);
    f->is = ds_name_of(f->name, strlen(f->name));
    f->is.rank = ds_rank_in(f->name);
    if (ds_is_partition(f)) f->is.role = DS_ROLE_OPTIM;
    else if (ds_is_model_states(f)) f->is.role = f->is.role == DS_ROLE_ZMODEL ? DS_ROLE_ZMODEL : DS_ROLE_MODEL;
    else return 1;
    f->root = t->pickle->root;
    if (f->is.role != DS_ROLE_OPTIM) {
        ds_tree c = ds_tree_of(f);
        size_t opt = ds_get(c, f->root, "optimizer");
        if (opt != CKPT_PNIL && ds_node(c, opt)->kind != CKPT_PK_NONE) return 1; /* ZeRO disabled: section 10 */
    }
    /* torch.load(weights_only=True) refuses DeepSpeed's classes (format.md 10.2's warning) */
    strbuf w = {0};
    ckpt_torch_weights_only_warning(&w, t);
    bool warned = !w.failed && (!w.len || ckpt_report_warn(rep, "%s", w.data));
    sb_free(&w);
    if (!warned) return ckpt_fail_oom(p->err);
    TRY(ds_read_file(ds, rep, f));
    ds->lone_rank = f->is.rank;
    ds->kind = f->kind;
    ds->W = f->W;
    char rank[24];
    if (f->is.rank == CKPT_NONE) snprintf(rank, sizeof rank, "?");
    else snprintf(rank, sizeof rank, "%llu", (unsigned long long)f->is.rank);
    strbuf note = {0};
    if (f->is.role == DS_ROLE_OPTIM) {
        sb_printf(&note,
                  DS_PREFIX
                  ": this file is partition %s of %llu of a DeepSpeed %s optimizer: each parameter's state is "
                  "split across the %llu files of its folder; open its folder",
                  rank, (unsigned long long)f->W, ds_kind_name(f->kind), (unsigned long long)f->W);
        /* 11.5.21 within the file, 31 */
        if (f->read && f->groups_len) {
            ds->groups_len = 0;
            const ds_fgroup *g0 = &f->groups[0];
            for (size_t g = 1; g < f->groups_len; g++)
                if (f->groups[g].has_step && g0->has_step && f->groups[g].step != g0->step) {
                    strbuf a = {0}, b = {0};
                    ds_num_text(&a, f->groups[g].step);
                    ds_num_text(&b, g0->step);
                    const char *what = f->kind == DS_ZERO3 ? "sub-group" : "group";
                    int rc = a.failed || b.failed
                                 ? ckpt_fail_oom(p->err)
                                 : ds_warn(rep, "%s %zu is at step %s, %s 0 at step %s", what, g, a.data, what, b.data);
                    sb_free(&a);
                    sb_free(&b);
                    TRY(rc);
                }
        }
        TRY(version_warnings(ds, rep));
        if (f->elastic)
            TRY(ds_warn(rep, "an elastic checkpoint keeps no param_groups: lr, betas, eps and weight decay are not in "
                             "the file"));
    } else {
        /* ZeRO-3's placeholders: a trainable parameter of 0 elements whose shape has more */
        bool placeholders = false;
        if (f->read && f->module != DS_NONE) {
            ds_tree c = ds_tree_of(f);
            const ckpt_torch_model *md = &t->models[f->module];
            for (size_t j = 0; j < ds_len(c, f->param_shapes) && !placeholders; j++) {
                ds_dict_it it;
                size_t key, value;
                ds_dict_begin(c, ds_item(c, f->param_shapes, j), &it);
                while (ds_dict_next(c, &it, &key, &value) && !placeholders) {
                    uint64_t dims[8];
                    uint32_t r;
                    bool deep;
                    uint64_t n = 1;
                    ds_shape(c, value, dims, 8, &r, &deep);
                    for (uint32_t d = 0; d < r && d < 8; d++) n *= dims[d];
                    for (size_t e = 0; e < md->count; e++) {
                        const ckpt_torch_named *nm = &t->named[md->first + e];
                        if (ds_str_is(c, key, nm->name) && nm->tensor != CKPT_TORCH_NONE && n &&
                            !t->tensors[nm->tensor].count)
                            placeholders = true;
                    }
                }
            }
        }
        if (placeholders)
            sb_printf(&note,
                      DS_PREFIX ": %s holds ZeRO-3 placeholders (0 elements per parameter): the weights are in the "
                                "optimizer partitions; open its folder",
                      f->name);
        else
            sb_printf(&note,
                      DS_PREFIX ": %s is the model states of a DeepSpeed checkpoint (the module, the parameters' names "
                                "and shapes): the optimizer state is in the partition files of its folder; open its "
                                "folder",
                      f->name);
    }
    if (!(ds->note = sb_take(&note))) return ckpt_fail_oom(p->err);
    return 0;
}

int ds_open(ckpt_parse *p, ckpt_ds *ds)
{
    ds->src = p->r->src;
    ds->model = DS_NONE;
    ds->kind_said = -1;
    ds->kind_given = -1;
    const uint8_t *head;
    size_t n = ckpt_reader_head(p->r, &head);
    if (ckpt_bundle_probe(head, n, DS_PREFIX)) {
        TRY(folder(p, ds));
        if (ds_failed(ds) || !ds->files_len) return 0;
        return ds->universal ? ds_universal(p, ds) : tag_checks(p, ds);
    }
    return lone(p, ds);
}
