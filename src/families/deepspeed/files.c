/* What each file of a tag folder holds (format.md 11.2): an optimizer partition (ZeRO-1/2,
 * BF16_Optimizer, ZeRO-3) or model states, recognised by their content, their required keys and
 * types checked (11.5.7) and their flat tensors (11.5.18). */
#include "families/deepspeed/deepspeed.h"

#include <stdio.h>
#include <stdlib.h>

const char *const ds_key_names[DS_KEYS] = {"exp_avg", "exp_avg_sq", "max_exp_avg_sq", "fp32"};

const char *ds_kind_name(ds_kind k)
{
    static const char *const names[] = {"?", "ZeRO-1", "ZeRO-2", "ZeRO-3", "BF16_Optimizer"};
    return names[k];
}

static size_t model_at(const ckpt_torch *t, const char *path)
{
    for (size_t k = 0; k < t->models_len; k++)
        if (!strcmp(t->models[k].path, path)) return k;
    return DS_NONE;
}

static size_t optimizer_at(const ckpt_torch *t, const char *path)
{
    for (size_t k = 0; k < t->optimizers_len; k++)
        if (!strcmp(t->optimizers[k].path, path)) return k;
    return DS_NONE;
}

/* "DS: {file}: no {key}" */
static int no_key(ckpt_ds *ds, ckpt_report *rep, const ds_file *f, const char *key)
{
    return ds_fail(ds, rep, CKPT_E_DS_KEY, "%s: no %s", f->name, key);
}

/* A required key of dict `at` (path `in` + "." + key): its node, or CKPT_PNIL with the failure
 * listed (*bad set). */
static size_t required(ckpt_ds *ds, ckpt_report *rep, const ds_file *f, size_t at, const char *in, const char *key,
                       bool *bad, int *rc)
{
    size_t v = ds_get(ds_tree_of(f), at, key);
    if (v == CKPT_PNIL) {
        char path[160];
        snprintf(path, sizeof path, "%s%s%s", in, *in ? "." : "", key);
        *rc = no_key(ds, rep, f, path);
        *bad = true;
    }
    return v;
}

/* 11.5.18: a flat tensor is 1-D with stride 1 */
static int flat_of(ckpt_ds *ds, ckpt_report *rep, ds_file *f, size_t node, const char *path, ds_flat *out, bool *bad)
{
    ds_tree c = ds_tree_of(f);
    out->tensor = DS_NONE;
    size_t x = ds_tensor(c, node);
    if (x == DS_NONE) {
        *bad = true;
        return ds_fail_type(ds, rep, f, path, node, "a tensor");
    }
    const ckpt_torch_tensor *tx = &f->t->tensors[x];
    const uint64_t *size = ckpt_torch_size(f->t, x), *stride = ckpt_torch_stride(f->t, x);
    if (tx->rank != 1 || (tx->count > 1 && stride[0] != 1)) {
        strbuf sb = {0};
        ckpt_shape_print(&sb, size, tx->rank);
        sb_puts(&sb, ", stride ");
        if (tx->rank == 1) sb_printf(&sb, "%llu", (unsigned long long)stride[0]);
        else {
            sb_putc(&sb, '(');
            for (uint32_t j = 0; j < tx->rank; j++)
                sb_printf(&sb, j ? ", %llu" : "%llu", (unsigned long long)stride[j]);
            sb_puts(&sb, tx->rank == 1 ? ",)" : ")");
        }
        if (sb.failed) return ckpt_fail_oom(&rep->error);
        int rc = ds_fail(ds, rep, CKPT_E_DS_LAYOUT, "%s: %s is not a flat tensor (%s)", f->name, path, sb.data);
        sb_free(&sb);
        *bad = true;
        return rc;
    }
    out->tensor = x;
    out->count = tx->count;
    out->dtype = ckpt_torch_dtype(tx->dtype);
    out->at = f->base + tx->at;
    return 0;
}

/* A number from a 0-d (or one-element) tensor or a Python number: a step. */
static int number_or_tensor(const ckpt_ds *ds, const ds_file *f, size_t node, bool *has, double *x, ckpt_error *err)
{
    ds_tree c = ds_tree_of(f);
    *has = false;
    if (ds_number(c, node, x) && ds_node(c, node)->kind != CKPT_PK_BOOL) {
        *has = true;
        return 0;
    }
    size_t t = ds_tensor(c, node);
    if (t == DS_NONE || f->t->tensors[t].count != 1) return 0;
    const ckpt_torch_tensor *tx = &f->t->tensors[t];
    int dtype = ckpt_torch_dtype(tx->dtype);
    if (!ckpt_dtype_has_stats(dtype)) return 0;
    uint8_t b[8];
    TRY(ckpt_read_at(ds->src, f->base + tx->at, b, tx->width, "a step", err));
    ckpt_dtype_widen(dtype, b, 1, x);
    *has = true;
    return 0;
}

int ds_number_or_tensor(const ckpt_ds *ds, const ds_file *f, size_t node, bool *has, double *x, ckpt_error *err)
{
    return number_or_tensor(ds, f, node, has, x, err);
}

/* ---- an optimizer partition ---- */

static int read_partition_count(ckpt_ds *ds, ckpt_report *rep, ds_file *f, size_t node)
{
    ds_tree c = ds_tree_of(f);
    int64_t v;
    if (ds_int(c, node, &v) && v > 0 && v <= DS_MAX_WORLD) {
        f->W = (uint64_t)v;
        return 0;
    }
    if (ds_node(c, node)->kind != CKPT_PK_LIST || !ds_len(c, node))
        return ds_fail_type(ds, rep, f, "optimizer_state_dict.partition_count", node, "an int or a list of ints");
    size_t n = ds_len(c, node);
    if (!(f->partitions = calloc(n, sizeof *f->partitions))) return ckpt_fail_oom(&rep->error);
    f->partition_list = true;
    for (size_t j = 0; j < n; j++) {
        if (!ds_int(c, ds_item(c, node, j), &v) || v <= 0)
            return ds_fail_type(ds, rep, f, "optimizer_state_dict.partition_count", node, "an int or a list of ints");
        f->partitions[f->partitions_len++] = (uint64_t)v;
    }
    f->W = f->partitions[0];
    if (f->W > DS_MAX_WORLD)
        return ds_fail_type(ds, rep, f, "optimizer_state_dict.partition_count", node,
                            "a world size of at most 1048576");
    for (size_t j = 1; j < n; j++)
        if (f->partitions[j] != f->W) {
            strbuf sb = {0};
            ds_value_text(&sb, c, node);
            if (sb.failed) return ckpt_fail_oom(&rep->error);
            int rc = ds_fail(ds, rep, CKPT_E_DS_UNSUPPORTED,
                             "parameter groups partitioned over different world sizes (%s): expert (MoE) groups are "
                             "not supported",
                             sb.data);
            sb_free(&sb);
            return rc;
        }
    return 0;
}

/* The flat state of group g (its entry of the base optimizer, or an elastic dict): moments, step. */
static int read_state(ckpt_ds *ds, ckpt_report *rep, ds_file *f, ds_fgroup *g, const ckpt_torch_optimizer *o,
                      int64_t id, const char *in, bool *bad)
{
    const ckpt_torch *t = f->t;
    for (size_t e = o->entries; e < o->entries + o->entries_len; e++) {
        const ckpt_torch_entry *en = &t->entries[e];
        if (en->index != id) continue;
        g->has_state = en->exp_avg != CKPT_TORCH_NONE || en->has_step || en->other_len;
        g->has_step = en->has_step;
        g->step = en->step;
        const size_t tensors[3] = {en->exp_avg, en->exp_avg_sq, en->max_exp_avg_sq};
        for (int k = 0; k < 3; k++) {
            if (tensors[k] == CKPT_TORCH_NONE) continue;
            char path[200];
            snprintf(path, sizeof path, "%s.state[%lld].%s", in, (long long)id, ds_key_names[k]);
            /* the entry's tensor node: found again through the tree for the flat check */
            const ckpt_torch_tensor *tx = &t->tensors[tensors[k]];
            const uint64_t *stride = ckpt_torch_stride(t, tensors[k]);
            if (tx->rank != 1 || (tx->count > 1 && stride[0] != 1)) {
                strbuf sb = {0};
                ckpt_shape_print(&sb, ckpt_torch_size(t, tensors[k]), tx->rank);
                sb_puts(&sb, ", stride ");
                if (tx->rank == 1) sb_printf(&sb, "%llu", (unsigned long long)stride[0]);
                else {
                    sb_putc(&sb, '(');
                    for (uint32_t j = 0; j < tx->rank; j++)
                        sb_printf(&sb, j ? ", %llu" : "%llu", (unsigned long long)stride[j]);
                    sb_putc(&sb, ')');
                }
                if (sb.failed) return ckpt_fail_oom(&rep->error);
                int rc = ds_fail(ds, rep, CKPT_E_DS_LAYOUT, "%s: %s is not a flat tensor (%s)", f->name, path, sb.data);
                sb_free(&sb);
                *bad = true;
                TRY(rc);
                continue;
            }
            g->flat[k] = (ds_flat){tensors[k], tx->count, ckpt_torch_dtype(tx->dtype), f->base + tx->at};
        }
        return 0;
    }
    return 0;
}

static int read_elastic(ckpt_ds *ds, ckpt_report *rep, ds_file *f, size_t osd, size_t base, bool *bad)
{
    ds_tree c = ds_tree_of(f);
    f->elastic = true;
    size_t G = ds_len(c, base);
    if (!(f->groups = calloc(G ? G : 1, sizeof *f->groups))) return ckpt_fail_oom(&rep->error);
    f->groups_len = G;
    bool has_shared = false;
    double shared = 0;
    TRY(number_or_tensor(ds, f, ds_get(c, osd, "base_optimizer_state_step"), &has_shared, &shared, &rep->error));
    for (size_t g = 0; g < G; g++) {
        ds_fgroup *fg = &f->groups[g];
        for (int k = 0; k < DS_KEYS; k++) fg->flat[k].tensor = DS_NONE;
        fg->pg_node = fg->mappings = DS_NONE;
        size_t d = ds_item(c, base, g);
        char path[160];
        if (!ds_is_dict(c, d)) {
            snprintf(path, sizeof path, "optimizer_state_dict.base_optimizer_state[%zu]", g);
            TRY(ds_fail_type(ds, rep, f, path, d, "a dict"));
            *bad = true;
            continue;
        }
        fg->has_state = ds_len(c, d) > 0;
        for (int k = 0; k < 3; k++) {
            size_t v = ds_get(c, d, ds_key_names[k]);
            if (v == CKPT_PNIL) continue;
            snprintf(path, sizeof path, "optimizer_state_dict.base_optimizer_state[%zu].%s", g, ds_key_names[k]);
            TRY(flat_of(ds, rep, f, v, path, &fg->flat[k], bad));
        }
        size_t st = ds_get(c, d, "step");
        if (st != CKPT_PNIL) TRY(number_or_tensor(ds, f, st, &fg->has_step, &fg->step, &rep->error));
        else if (has_shared) fg->has_step = true, fg->step = shared;
    }
    f->param_groups = G;
    return 0;
}

static int read_partition(ckpt_ds *ds, ckpt_report *rep, ds_file *f)
{
    ds_tree c = ds_tree_of(f);
    int rc = 0;
    bool bad = false;
    size_t osd = required(ds, rep, f, f->root, "", "optimizer_state_dict", &bad, &rc);
    TRY(rc);
    if (bad) return 0;
    if (!ds_is_dict(c, osd)) return ds_fail_type(ds, rep, f, "optimizer_state_dict", osd, "a dict");
    size_t v = ds_get(c, f->root, "ds_version");
    const char *s;
    size_t n;
    if (v == CKPT_PNIL) v = ds_get(c, osd, "ds_version");
    if (ds_str(c, v, &s, &n)) {
        if (!(f->ds_version = malloc(n + 1))) return ckpt_fail_oom(&rep->error);
        memcpy(f->ds_version, s, n);
        f->ds_version[n] = 0;
    }
    const char *os;
    size_t on;
    if (ds_str(c, ds_get(c, osd, "ds_version"), &os, &on) && on) {
        f->osd_version = 1;
        if (!(f->osd_version_text = malloc(on + 1))) return ckpt_fail_oom(&rep->error);
        memcpy(f->osd_version_text, os, on);
        f->osd_version_text[on] = 0;
    }
    size_t stage_node = ds_get(c, osd, "zero_stage");
    int stage = ds_zero_stage(c, stage_node);
    bool zero3 = ds_get(c, osd, "fp32_flat_groups") != CKPT_PNIL || stage == 3;
    if (stage_node != CKPT_PNIL && stage < 0) {
        TRY(ds_fail_type(ds, rep, f, "optimizer_state_dict.zero_stage", stage_node, "a ZeroStageEnum"));
        bad = true;
    }
    const char *base_key = zero3 ? "optimizer_state_dict" : "base_optimizer_state";
    const char *flat_key = zero3 ? "fp32_flat_groups" : "single_partition_of_fp32_groups";
    if (!zero3 && stage_node == CKPT_PNIL && ds_get(c, osd, "base_optimizer_state") != CKPT_PNIL &&
        ds_get(c, osd, "single_partition_of_fp32_groups") != CKPT_PNIL)
        f->kind = DS_BF16_OPTIMIZER;
    else {
        size_t z = required(ds, rep, f, osd, "optimizer_state_dict", "zero_stage", &bad, &rc);
        TRY(rc);
        if (z != CKPT_PNIL && stage >= 1) f->kind = stage == 1 ? DS_ZERO1 : stage == 2 ? DS_ZERO2 : DS_ZERO3;
        else if (z != CKPT_PNIL && stage == 0) {
            TRY(ds_fail_type(ds, rep, f, "optimizer_state_dict.zero_stage", z, "stage 1, 2 or 3"));
            bad = true;
        }
    }
    size_t base = required(ds, rep, f, osd, "optimizer_state_dict", base_key, &bad, &rc);
    TRY(rc);
    size_t flats = required(ds, rep, f, osd, "optimizer_state_dict", flat_key, &bad, &rc);
    TRY(rc);
    size_t pc = required(ds, rep, f, osd, "optimizer_state_dict", "partition_count", &bad, &rc);
    TRY(rc);
    if (pc != CKPT_PNIL) {
        size_t before = ds->failures_len;
        TRY(read_partition_count(ds, rep, f, pc));
        if (ds->failures_len != before) bad = true; /* no world size: the file is read no further */
    }
    if (bad || base == CKPT_PNIL || flats == CKPT_PNIL) return 0;
    char in[96];
    snprintf(in, sizeof in, "optimizer_state_dict.%s", base_key);
    if (ds_node(c, flats)->kind != CKPT_PK_LIST) {
        char key[96];
        snprintf(key, sizeof key, "optimizer_state_dict.%s", flat_key);
        return ds_fail_type(ds, rep, f, key, flats, "a list of tensors");
    }
    size_t nflat = ds_len(c, flats);
    f->flat_count = nflat;
    if (!zero3 && ds_node(c, base)->kind == CKPT_PK_LIST) TRY(read_elastic(ds, rep, f, osd, base, &bad));
    else {
        f->optimizer = optimizer_at(f->t, in);
        if (f->optimizer == DS_NONE)
            return ds_fail_type(ds, rep, f, in, base, "a torch.optim state_dict (state and param_groups)");
        const ckpt_torch_optimizer *o = &f->t->optimizers[f->optimizer];
        const ckpt_torch *t = f->t;
        f->param_groups = o->groups_len;
        /* ZeRO-1/2: one flat parameter per group; ZeRO-3: the ids of every group, in group order */
        size_t count = 0;
        for (size_t g = 0; g < o->groups_len; g++) count += zero3 ? t->groups[o->groups + g].params_len : 1;
        if (!(f->groups = calloc(count ? count : 1, sizeof *f->groups))) return ckpt_fail_oom(&rep->error);
        size_t pgs = ds_get(c, base, "param_groups");
        for (size_t g = 0; g < o->groups_len; g++) {
            const ckpt_torch_group *gr = &t->groups[o->groups + g];
            if (!zero3 && gr->params_len != 1) {
                char key[160];
                snprintf(key, sizeof key, "%s.param_groups[%zu].params", in, g);
                TRY(ds_fail(ds, rep, CKPT_E_DS_KEY, "%s: %s holds %zu parameters, expected one flat parameter", f->name,
                            key, gr->params_len));
                bad = true;
            }
            size_t ids = zero3 ? gr->params_len : gr->params_len ? 1 : 0;
            for (size_t j = 0; j < ids; j++) {
                ds_fgroup *fg = &f->groups[f->groups_len++];
                for (int k = 0; k < DS_KEYS; k++) fg->flat[k].tensor = DS_NONE;
                fg->group = g;
                fg->pg_node = ds_item(c, pgs, g);
                fg->mappings = DS_NONE;
                TRY(read_state(ds, rep, f, fg, o, t->ints[gr->params + j], in, &bad));
            }
        }
    }
    /* the masters */
    for (size_t g = 0; g < f->groups_len && g < nflat; g++) {
        char key[96];
        snprintf(key, sizeof key, "optimizer_state_dict.%s[%zu]", flat_key, g);
        TRY(flat_of(ds, rep, f, ds_item(c, flats, g), key, &f->groups[g].flat[DS_FP32], &bad));
    }
    /* group_paddings, param_slice_mappings (ZeRO-1/2, BF16_Optimizer) */
    size_t pads = ds_get(c, osd, "group_paddings");
    if (pads != CKPT_PNIL && ds_node(c, pads)->kind == CKPT_PK_LIST)
        for (size_t g = 0; g < f->groups_len && g < ds_len(c, pads); g++) {
            int64_t p;
            if (ds_int(c, ds_item(c, pads, g), &p) && p >= 0) {
                f->groups[g].padding = (uint64_t)p;
                f->groups[g].has_padding = true;
            }
        }
    size_t maps = ds_get(c, osd, "param_slice_mappings");
    if (maps != CKPT_PNIL && ds_is_seq(c, maps))
        for (size_t g = 0; g < f->groups_len && g < ds_len(c, maps); g++)
            if (ds_is_dict(c, ds_item(c, maps, g))) f->groups[g].mappings = ds_item(c, maps, g);
    f->read = !bad;
    return 0;
}

/* ---- model states ---- */

static int config_of(ds_file *f, size_t cfg)
{
    ds_tree c = ds_tree_of(f);
    f->config_bf16 = f->config_stage = -1;
    if (!ds_is_dict(c, cfg)) return 0;
    size_t b = ds_get(c, ds_get(c, cfg, "bf16"), "enabled");
    if (b == CKPT_PNIL) b = ds_get(c, ds_get(c, cfg, "bfloat16"), "enabled");
    if (b != CKPT_PNIL && ds_node(c, b)->kind == CKPT_PK_BOOL) f->config_bf16 = ds_node(c, b)->truth;
    int64_t st;
    if (ds_int(c, ds_get(c, ds_get(c, cfg, "zero_optimization"), "stage"), &st) && st >= 0 && st <= 3)
        f->config_stage = (int)st;
    return 0;
}

static bool int_field(ds_tree c, size_t root, const char *key, uint64_t *v)
{
    int64_t x;
    if (!ds_int(c, ds_get(c, root, key), &x) || x < 0) return false;
    *v = (uint64_t)x;
    return true;
}

static int read_model_states(ckpt_ds *ds, ckpt_report *rep, ds_file *f)
{
    ds_tree c = ds_tree_of(f);
    int rc = 0;
    bool bad = false;
    size_t module = required(ds, rep, f, f->root, "", "module", &bad, &rc);
    TRY(rc);
    size_t buffers = required(ds, rep, f, f->root, "", "buffer_names", &bad, &rc);
    TRY(rc);
    size_t shapes = required(ds, rep, f, f->root, "", "param_shapes", &bad, &rc);
    TRY(rc);
    if (module != CKPT_PNIL) {
        f->module = model_at(f->t, "module");
        if (f->module == DS_NONE && ds_len(c, module)) {
            TRY(ds_fail_type(ds, rep, f, "module", module, "a dict of names to tensors"));
            bad = true;
        }
    }
    if (buffers != CKPT_PNIL) {
        bool ok = ds_node(c, buffers)->kind == CKPT_PK_LIST;
        for (size_t j = 0; ok && j < ds_len(c, buffers); j++)
            ok = ds_node(c, ds_item(c, buffers, j))->kind == CKPT_PK_STR;
        if (!ok) {
            TRY(ds_fail_type(ds, rep, f, "buffer_names", buffers, "a list of str"));
            bad = true;
        } else f->buffer_names = buffers;
    }
    if (shapes != CKPT_PNIL) {
        bool ok = ds_node(c, shapes)->kind == CKPT_PK_LIST;
        for (size_t j = 0; ok && j < ds_len(c, shapes); j++) {
            size_t d = ds_item(c, shapes, j), key, value;
            ds_dict_it it;
            ok = ds_dict_begin(c, d, &it);
            while (ok && ds_dict_next(c, &it, &key, &value)) {
                uint64_t dims[8];
                uint32_t r;
                bool deep;
                ok = ds_node(c, key)->kind == CKPT_PK_STR && ds_shape(c, value, dims, 8, &r, &deep);
            }
        }
        if (!ok) {
            TRY(ds_fail_type(ds, rep, f, "param_shapes", shapes, "a list of dicts of names to shapes"));
            bad = true;
        } else f->param_shapes = shapes;
    }
    size_t shared = ds_get(c, f->root, "shared_params");
    if (shared != CKPT_PNIL && ds_node(c, shared)->kind != CKPT_PK_NONE) {
        bool ok = ds_is_dict(c, shared);
        ds_dict_it it;
        size_t key, value;
        if (ok) ds_dict_begin(c, shared, &it);
        while (ok && ds_dict_next(c, &it, &key, &value))
            ok = ds_node(c, key)->kind == CKPT_PK_STR && ds_node(c, value)->kind == CKPT_PK_STR;
        if (!ok) {
            TRY(ds_fail_type(ds, rep, f, "shared_params", shared, "a dict of str to str"));
            bad = true;
        } else f->shared_params = shared;
    }
    size_t fs = ds_get(c, f->root, "frozen_param_shapes");
    if (fs != CKPT_PNIL && ds_node(c, fs)->kind != CKPT_PK_NONE) {
        bool ok = ds_is_dict(c, fs);
        ds_dict_it it;
        size_t key, value;
        if (ok) ds_dict_begin(c, fs, &it);
        while (ok && ds_dict_next(c, &it, &key, &value)) {
            uint64_t dims[8];
            uint32_t r;
            bool deep;
            ok = ds_node(c, key)->kind == CKPT_PK_STR && ds_shape(c, value, dims, 8, &r, &deep);
        }
        if (!ok) {
            TRY(ds_fail_type(ds, rep, f, "frozen_param_shapes", fs, "a dict of names to shapes"));
            bad = true;
        } else f->frozen_shapes = fs;
    }
    size_t ff = ds_get(c, f->root, "frozen_param_fragments");
    if (ff != CKPT_PNIL && ds_node(c, ff)->kind != CKPT_PK_NONE) {
        f->frozen_model = model_at(f->t, "frozen_param_fragments");
        if (f->frozen_model == DS_NONE && ds_len(c, ff)) {
            TRY(ds_fail_type(ds, rep, f, "frozen_param_fragments", ff, "a dict of names to tensors"));
            bad = true;
        } else f->frozen_frags = ff;
    }
    size_t opt = ds_get(c, f->root, "optimizer");
    f->holds_optimizer = opt != CKPT_PNIL && ds_node(c, opt)->kind != CKPT_PK_NONE;
    f->has_dp = int_field(c, f->root, "dp_world_size", &f->dp_world_size);
    f->has_mp = int_field(c, f->root, "mp_world_size", &f->mp_world_size);
    f->has_global = int_field(c, f->root, "global_steps", &f->global_steps);
    f->has_skipped = int_field(c, f->root, "skipped_steps", &f->skipped_steps);
    TRY(config_of(f, ds_get(c, f->root, "ds_config")));
    size_t v = ds_get(c, f->root, "ds_version");
    const char *s;
    size_t n;
    if (ds_str(c, v, &s, &n)) {
        if (!(f->ds_version = malloc(n + 1))) return ckpt_fail_oom(&rep->error);
        memcpy(f->ds_version, s, n);
        f->ds_version[n] = 0;
    }
    f->read = !bad;
    return 0;
}

bool ds_is_partition(const ds_file *f)
{
    ds_tree c = ds_tree_of(f);
    size_t osd = ds_get(c, c.p->root, "optimizer_state_dict");
    if (!ds_is_dict(c, osd) || ds_get(c, osd, "partition_count") == CKPT_PNIL) return false;
    return (ds_get(c, osd, "base_optimizer_state") != CKPT_PNIL &&
            ds_get(c, osd, "single_partition_of_fp32_groups") != CKPT_PNIL) ||
           (ds_get(c, osd, "optimizer_state_dict") != CKPT_PNIL && ds_get(c, osd, "fp32_flat_groups") != CKPT_PNIL);
}

bool ds_is_model_states(const ds_file *f)
{
    ds_tree c = ds_tree_of(f);
    size_t r = c.p->root;
    return ds_get(c, r, "module") != CKPT_PNIL && ds_get(c, r, "param_shapes") != CKPT_PNIL &&
           ds_get(c, r, "buffer_names") != CKPT_PNIL;
}

void ds_file_init(ds_file *f)
{
    f->module = f->frozen_model = f->optimizer = DS_NONE;
    f->root = f->buffer_names = f->param_shapes = f->shared_params = f->frozen_shapes = f->frozen_frags = CKPT_PNIL;
    f->config_bf16 = f->config_stage = -1;
}

int ds_read_file(ckpt_ds *ds, ckpt_report *rep, ds_file *f)
{
    ds_file_init(f);
    f->root = f->t->pickle->root;
    if (!ds_is_dict(ds_tree_of(f), f->root)) return ds_fail_type(ds, rep, f, "the file", f->root, "a dict");
    if (f->is.role == DS_ROLE_OPTIM) return read_partition(ds, rep, f);
    return read_model_states(ds, rep, f);
}
