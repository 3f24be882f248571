/* A universal checkpoint (format.md 11.7: ds_to_universal's output) read as a DeepSpeed checkpoint:
 * the schema of 11.4 from the copied model states, each owner's fp32, exp_avg, exp_avg_sq and step
 * from zero/{name}/, each tensor one fragment (the file, its data offset, its element count), the
 * groups' configurations from zero/optimizer_state.pt's param_groups, and 11.7's checks. */
#include "families/deepspeed/deepspeed.h"

#include <stdio.h>
#include <stdlib.h>

/* the files of zero/{name}/, in 11.7's order; ukey of each */
static const char *const ufiles[] = {"fp32.pt", "exp_avg.pt", "exp_avg_sq.pt", "step.pt"};
static const int ukeys[] = {DS_FP32, DS_EXP_AVG, DS_EXP_AVG_SQ, DS_KEYS};

size_t ds_universal_fragments(const ckpt_ds *ds, size_t param, int key, ds_frag_at *out)
{
    const ds_param *p = &ds->params[param];
    size_t k = key == DS_FP32 ? 0 : key == DS_EXP_AVG ? 1 : key == DS_EXP_AVG_SQ ? 2 : 4;
    if (k > 2 || p->ufile[k] == DS_NONE) return 0;
    const ds_file *f = &ds->files[p->ufile[k]];
    if (!f->groups_len) return 0;
    const ds_flat *fl = &f->groups[0].flat[key];
    if (fl->tensor == DS_NONE) return 0;
    if (out) out[0] = (ds_frag_at){p->ufile[k], 0, 0, fl->count, fl->at, fl->at - f->base, fl->dtype};
    return 1;
}

static char *dup_n(const char *s, size_t n)
{
    char *d = malloc(n + 1);
    if (d) {
        memcpy(d, s, n);
        d[n] = 0;
    }
    return d;
}

static int open_file(ckpt_ds *ds, ds_file *f, ckpt_error *fail)
{
    ckpt_window w;
    ckpt_source s;
    ckpt_source_window(&s, &w, ds->src, f->base, f->size);
    return ckpt_torch_open(&s, f->name, &f->t, fail);
}

/* A file's own failure (not a torch.save zip, a malformed pickle), listed with its name. */
static int opened_failure(ckpt_ds *ds, ckpt_report *rep, ds_file *f, ckpt_error *e)
{
    strbuf hint = {0};
    sb_printf(&hint, "the file is %s", f->name);
    if (!hint.failed) ckpt_set_hint(e, hint.data);
    sb_free(&hint);
    return ds_push_failure(ds, rep, e);
}

static void shape_text(strbuf *sb, const uint64_t *dims, uint32_t rank)
{
    sb_puts(sb, "#[");
    for (uint32_t j = 0; j < rank && j < 8; j++) sb_printf(sb, j ? ", %llu" : "%llu", (unsigned long long)dims[j]);
    sb_putc(sb, ']');
}

/* zero/{name}/{file}: the tensor file of param p for key (fp32, exp_avg, exp_avg_sq): a dict with
 * 'param' (a bare tensor read as one, with a warning), its shape param_shapes' unless the dict says
 * vocab_tensor; a contiguous tensor is one fragment. */
static int tensor_file(ckpt_ds *ds, ckpt_report *rep, ds_file *f, const ds_param *p, int key)
{
    ds_tree c = ds_tree_of(f);
    size_t root = c.p->root, node = root;
    bool vocab = false;
    if (ds_tensor(c, root) != DS_NONE)
        TRY(ds_warn(rep, "universal: %s is a bare tensor; DeepSpeed's load_universal expects a dict with 'param'",
                    f->name));
    else if (!ds_is_dict(c, root)) return ds_fail_type(ds, rep, f, "the file", root, "a dict");
    else {
        node = ds_get(c, root, "param");
        if (node == CKPT_PNIL) return ds_fail(ds, rep, CKPT_E_DS_KEY, "%s: no param", f->name);
        size_t v = ds_get(c, root, "vocab_tensor");
        vocab = v != CKPT_PNIL && ds_node(c, v)->kind == CKPT_PK_BOOL && ds_node(c, v)->truth;
    }
    size_t x = ds_tensor(c, node);
    if (x == DS_NONE) return ds_fail_type(ds, rep, f, "param", node, "a tensor");
    const ckpt_torch_tensor *tx = &f->t->tensors[x];
    const uint64_t *dims = ckpt_torch_size(f->t, x);
    bool same = !p->too_deep && tx->rank == p->rank_dims;
    for (uint32_t j = 0; same && j < tx->rank; j++) same = dims[j] == p->dims[j];
    if (!same && !vocab) {
        strbuf a = {0}, b = {0};
        shape_text(&a, dims, tx->rank);
        shape_text(&b, p->dims, p->rank_dims);
        int rc = a.failed || b.failed
                     ? ckpt_fail_oom(&rep->error)
                     : ds_fail(ds, rep, CKPT_E_DS_NAMES, "universal: %s holds %s, param_shapes says %s", f->name,
                               a.data, b.data);
        sb_free(&a);
        sb_free(&b);
        return rc;
    }
    if (!tx->contiguous)
        return ds_fail(ds, rep, CKPT_E_DS_LAYOUT, "universal: %s: param is not a contiguous tensor", f->name);
    /* a vocabulary tensor cut to its original rows is no fragment of the parameter's shape */
    if (!same) return 0;
    f->groups[0].flat[key] = (ds_flat){x, tx->count, ckpt_torch_dtype(tx->dtype), f->base + tx->at};
    return 0;
}

/* optimizer_state.pt: the kind (zero_stage: ZeRO-1/2; none: BF16_Optimizer), the world size it
 * names (partition_count), the groups' configurations (param_groups) */
static int optimizer_state(ckpt_ds *ds, ckpt_report *rep, ds_file *f)
{
    ds_tree c = ds_tree_of(f);
    size_t root = c.p->root;
    if (!ds_is_dict(c, root)) {
        return ds_fail_type(ds, rep, f, "the file", root, "a dict");
    }
    f->root = root;
    size_t zs = ds_get(c, root, "zero_stage");
    int stage = zs == CKPT_PNIL ? 0 : ds_zero_stage(c, zs);
    ds->kind = stage == 1 ? DS_ZERO1 : stage == 2 ? DS_ZERO2 : stage == 3 ? DS_ZERO3 : DS_BF16_OPTIMIZER;
    f->kind = ds->kind;
    size_t pc = ds_get(c, root, "partition_count");
    int64_t w = 0;
    if (ds_int(c, pc, &w) || (ds_is_seq(c, pc) && ds_int(c, ds_item(c, pc, 0), &w))) f->W = w > 0 ? (uint64_t)w : 0;
    const char *v;
    size_t vl;
    if (ds_str(c, ds_get(c, root, "ds_version"), &v, &vl) && !(f->ds_version = dup_n(v, vl)))
        return ckpt_fail_oom(&rep->error);
    size_t pgs = ds_get(c, root, "param_groups");
    if (pgs == CKPT_PNIL) return ds_fail(ds, rep, CKPT_E_DS_KEY, "%s: no param_groups", f->name);
    if (!ds_is_seq(c, pgs)) {
        return ds_fail_type(ds, rep, f, "param_groups", pgs, "a list");
    }
    size_t G = ds_len(c, pgs);
    if (!(ds->ugroups = calloc(G ? G : 1, sizeof *ds->ugroups))) return ckpt_fail_oom(&rep->error);
    ds->ugroups_len = G;
    for (size_t g = 0; g < G; g++) {
        size_t d = ds_item(c, pgs, g);
        ckpt_torch_group *gr = &ds->ugroups[g];
        double x;
        if (ds_number(c, ds_get(c, d, "lr"), &x)) gr->lr = x, gr->has |= CKPT_TG_LR;
        size_t b = ds_get(c, d, "betas");
        double b1, b2;
        if (ds_is_seq(c, b) && ds_len(c, b) == 2 && ds_number(c, ds_item(c, b, 0), &b1) &&
            ds_number(c, ds_item(c, b, 1), &b2))
            gr->beta1 = b1, gr->beta2 = b2, gr->has |= CKPT_TG_BETAS;
        if (ds_number(c, ds_get(c, d, "eps"), &x)) gr->eps = x, gr->has |= CKPT_TG_EPS;
        if (ds_number(c, ds_get(c, d, "weight_decay"), &x)) gr->weight_decay = x, gr->has |= CKPT_TG_WEIGHT_DECAY;
        size_t a = ds_get(c, d, "amsgrad");
        if (a != CKPT_PNIL && ds_node(c, a)->kind == CKPT_PK_BOOL)
            gr->amsgrad = ds_node(c, a)->truth, gr->has |= CKPT_TG_AMSGRAD;
        size_t dw = ds_get(c, d, "decoupled_weight_decay");
        if (dw != CKPT_PNIL && ds_node(c, dw)->kind == CKPT_PK_BOOL)
            gr->decoupled = ds_node(c, dw)->truth, gr->has |= CKPT_TG_DECOUPLED;
    }
    return 0;
}

/* the folder's entry zero/{name}/{file} (name and file without a slash), else false */
static bool split_name(const char *path, const char **name, size_t *nl, const char **file)
{
    if (strncmp(path, "zero/", 5)) return false;
    const char *s = path + 5, *slash = strchr(s, '/');
    if (!slash || slash == s || !slash[1] || strchr(slash + 1, '/')) return false;
    *name = s;
    *nl = (size_t)(slash - s);
    *file = slash + 1;
    return true;
}

static size_t param_named(const ckpt_ds *ds, const char *s, size_t n)
{
    for (size_t k = 0; k < ds->params_len; k++)
        if (strlen(ds->params[k].name) == n && !memcmp(ds->params[k].name, s, n)) return k;
    return DS_NONE;
}

/* The params of param_shapes, group by group (a universal folder keeps one file per owner). */
static int params(ckpt_ds *ds, ckpt_report *rep)
{
    const ds_file *m = &ds->files[ds->model];
    ds_tree c = ds_tree_of(m);
    size_t G = ds_len(c, m->param_shapes);
    if (!(ds->groups = calloc(G ? G : 1, sizeof *ds->groups))) return ckpt_fail_oom(&rep->error);
    ds->groups_len = G;
    size_t total = 0;
    for (size_t g = 0; g < G; g++) total += ds_len(c, ds_item(c, m->param_shapes, g));
    if (!(ds->params = calloc(total ? total : 1, sizeof *ds->params))) return ckpt_fail_oom(&rep->error);
    if (!(ds->frags = calloc(total ? total : 1, sizeof *ds->frags))) return ckpt_fail_oom(&rep->error);
    ds->frags_cap = total;
    for (size_t g = 0; g < G; g++) {
        ds_group *gr = &ds->groups[g];
        gr->group = g;
        gr->first = ds->params_len;
        ds_dict_it it;
        size_t key, value;
        ds_dict_begin(c, ds_item(c, m->param_shapes, g), &it);
        while (ds_dict_next(c, &it, &key, &value)) {
            ds_param *p = &ds->params[ds->params_len++];
            const char *s;
            size_t n;
            ds_str(c, key, &s, &n);
            if (!(p->name = dup_n(s, n))) return ckpt_fail_oom(&rep->error);
            p->slot = DS_NONE;
            p->group = p->flat = g;
            for (int j = 0; j <= DS_KEYS; j++) p->ufile[j] = DS_NONE;
            ds_shape(c, value, p->dims, 8, &p->rank_dims, &p->too_deep);
            uint64_t count = 1;
            bool over = p->too_deep;
            for (uint32_t j = 0; j < p->rank_dims && j < 8; j++) over |= ckpt_mul_overflows(count, p->dims[j], &count);
            if (over)
                return ds_fail(ds, rep, CKPT_E_DS_NAMES, "%s: param_shapes gives it more than 2^64 elements", p->name);
            p->count = count;
            gr->numel += count;
            /* one fragment: rank 0, the whole tensor (its file is fp32.pt's, filled below) */
            p->frags = ds->frags_len;
            p->frags_len = 1;
            ds->frags[ds->frags_len++] = (ds_frag){DS_NONE, 0, 0, count};
        }
        gr->count = ds->params_len - gr->first;
    }
    return 0;
}

int ds_universal(ckpt_parse *p, ckpt_ds *ds)
{
    ckpt_report *rep = p->rep;
    ds->W = 1;
    ds->ustate = DS_NONE;
    /* the files: model states, optimizer_state.pt, zero/{name}/{file} */
    for (size_t k = 0; k < ds->files_len; k++) {
        ds_file *f = &ds->files[k];
        f->ukey = -1;
        f->uparam = DS_NONE;
        if (f->is.role == DS_ROLE_MODEL && !strchr(f->name, '/')) {
            if (ds->model == DS_NONE) ds->model = k;
        } else if (!strcmp(f->name, "zero/optimizer_state.pt")) {
            f->is.role = DS_ROLE_UOPT;
            ds->ustate = k;
        } else f->is = (ds_name){strncmp(f->name, "zero/", 5) ? f->is.role : DS_ROLE_USTATE, CKPT_NONE, DS_PLAIN};
    }
    if (ds->model == DS_NONE)
        return ds_fail(ds, rep, CKPT_E_DS_FOLDER,
                       "%s has no mp_rank_00_model_states.pt: it holds the parameter names "
                       "and shapes",
                       ds->dir);
    ckpt_error e = {0};
    ckpt_error_clear(&e);
    ds_file *m = &ds->files[ds->model];
    int code = open_file(ds, m, &e);
    if (code == CKPT_E_NO_MEMORY) return ckpt_fail_oom(p->err);
    if (code) {
        int rc = opened_failure(ds, rep, m, &e);
        ckpt_error_clear(&e);
        return rc;
    }
    TRY(ds_read_file(ds, rep, m));
    if (ds_failed(ds)) return 0;
    if (ds->ustate == DS_NONE) TRY(ds_fail(ds, rep, CKPT_E_DS_FOLDER, "universal: no zero/optimizer_state.pt"));
    else {
        ds_file *f = &ds->files[ds->ustate];
        code = open_file(ds, f, &e);
        if (code == CKPT_E_NO_MEMORY) return ckpt_fail_oom(p->err);
        if (code) TRY(opened_failure(ds, rep, f, &e));
        else {
            TRY(optimizer_state(ds, rep, f));
            f->read = true;
        }
        ckpt_error_clear(&e);
    }
    TRY(params(ds, rep));
    /* each owner's four files */
    for (size_t k = 0; k < ds->files_len; k++) {
        ds_file *f = &ds->files[k];
        const char *nm, *file;
        size_t nl;
        if (f->is.role != DS_ROLE_USTATE || !split_name(f->name, &nm, &nl, &file)) continue;
        size_t pk = param_named(ds, nm, nl);
        for (int j = 0; pk != DS_NONE && j < 4; j++)
            if (!strcmp(file, ufiles[j])) {
                f->uparam = pk;
                f->ukey = ukeys[j];
                ds->params[pk].ufile[j] = k;
            }
    }
    if (ds->ustate != DS_NONE && ds->files[ds->ustate].read && ds->ugroups_len != ds->groups_len)
        TRY(ds_fail(ds, rep, CKPT_E_DS_SAVES, "universal: optimizer_state.pt has %zu param_groups, param_shapes %zu",
                    ds->ugroups_len, ds->groups_len));
    for (size_t k = 0; k < ds->params_len; k++) {
        ds_param *pr = &ds->params[k];
        for (int j = 0; j < 4; j++) {
            if (pr->ufile[j] == DS_NONE) {
                TRY(ds_fail(ds, rep, CKPT_E_DS_FOLDER, "universal: %s has no %s", pr->name, ufiles[j]));
                continue;
            }
            ds_file *f = &ds->files[pr->ufile[j]];
            code = open_file(ds, f, &e);
            if (code == CKPT_E_NO_MEMORY) return ckpt_fail_oom(p->err);
            if (code) {
                TRY(opened_failure(ds, rep, f, &e));
                ckpt_error_clear(&e);
                continue;
            }
            f->read = true;
            if (!(f->groups = calloc(1, sizeof *f->groups))) return ckpt_fail_oom(p->err);
            f->groups_len = 1;
            for (int key = 0; key < DS_KEYS; key++) f->groups[0].flat[key].tensor = DS_NONE;
            if (ukeys[j] != DS_KEYS) {
                TRY(tensor_file(ds, rep, f, pr, ukeys[j]));
                if (j == 0) ds->frags[pr->frags].file = pr->ufile[j];
            } else {
                ds_tree c = ds_tree_of(f);
                TRY(ds_number_or_tensor(ds, f, c.p->root, &f->groups[0].has_step, &f->groups[0].step, p->err));
            }
        }
    }
    /* the steps of a group: its first owner's, every other's equal (DeepSpeed asserts it) */
    for (size_t g = 0; g < ds->groups_len; g++) {
        ds_group *gr = &ds->groups[g];
        size_t first = DS_NONE;
        for (size_t k = gr->first; k < gr->first + gr->count; k++) {
            size_t sf = ds->params[k].ufile[3];
            if (sf == DS_NONE || !ds->files[sf].groups_len || !ds->files[sf].groups[0].has_step) continue;
            double s = ds->files[sf].groups[0].step;
            if (first == DS_NONE) {
                first = k;
                gr->has_step = true;
                gr->step = s;
            } else if (s != gr->step) {
                strbuf a = {0}, b = {0};
                ds_num_text(&a, s);
                ds_num_text(&b, gr->step);
                int rc = a.failed || b.failed
                             ? ckpt_fail_oom(&rep->error)
                             : ds_fail(ds, rep, CKPT_E_DS_STEP, "universal: group %zu: %s is at step %s, %s at %s", g,
                                       ds->params[k].name, a.data, ds->params[first].name, b.data);
                sb_free(&a);
                sb_free(&b);
                TRY(rc);
            }
        }
    }
    /* what DeepSpeed's load does not expect in zero/ */
    for (size_t k = 0; k < ds->files_len; k++) {
        ds_file *f = &ds->files[k];
        const char *nm, *file;
        size_t nl;
        if (f->is.role != DS_ROLE_USTATE || !split_name(f->name, &nm, &nl, &file)) continue;
        if (param_named(ds, nm, nl) == DS_NONE) {
            bool told = false;
            for (size_t j = 0; j < k && !told; j++) {
                const char *n2, *f2;
                size_t l2;
                told = ds->files[j].is.role == DS_ROLE_USTATE && split_name(ds->files[j].name, &n2, &l2, &f2) &&
                       l2 == nl && !memcmp(n2, nm, nl);
            }
            if (!told) TRY(ds_warn(rep, "universal: zero/%.*s is no parameter of param_shapes", (int)nl, nm));
        } else if (f->ukey < 0)
            TRY(ds_warn(rep, "universal: %s is not one of fp32.pt, exp_avg.pt, exp_avg_sq.pt, step.pt", f->name));
    }
    TRY(ds_schema(ds, rep));
    /* the groups' configurations: optimizer_state.pt's param_groups */
    ds->param_groups = ds->ugroups_len;
    ds->configs = calloc(ds->ugroups_len ? ds->ugroups_len : 1, sizeof *ds->configs);
    ds->has_config = calloc(ds->ugroups_len ? ds->ugroups_len : 1, sizeof *ds->has_config);
    if (!ds->configs || !ds->has_config) return ckpt_fail_oom(&rep->error);
    ds_kind_from_config(ds, m, ds->ugroups, ds->ugroups_len);
    for (size_t g = 0; g < ds->ugroups_len; g++) {
        const ckpt_torch_group *gr = &ds->ugroups[g];
        if ((gr->has & (CKPT_TG_BETAS | CKPT_TG_EPS)) != (CKPT_TG_BETAS | CKPT_TG_EPS)) continue;
        ds->configs[g] =
            (ckpt_config){ds->kind_said == CKPT_ADAMW ? CKPT_ADAMW : CKPT_ADAM, ckpt_bits_from_double(gr->beta1),
                          ckpt_bits_from_double(gr->beta2), ckpt_bits_from_double(gr->eps),
                          ckpt_bits_from_double(gr->has & CKPT_TG_WEIGHT_DECAY ? gr->weight_decay : 0)};
        ds->has_config[g] = true;
    }
    ds->layout_ok = !ds_failed(ds);
    return 0;
}
