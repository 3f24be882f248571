/* DeepSpeed to a consolidated torch.optim state dict and its fp32 model (format.md 11.8): two
 * torch.save zips, laid out as torch_write.c lays one out ({prefix}/data.pkl, byteorder, one
 * {prefix}/data/{key} per storage, version; data 64-byte aligned).
 *
 * The optimizer: {'state': {id: {the flat state's keys in stored order}}, 'param_groups': [{the
 * stored group's keys but params, then 'params': [ids]}]}, ids numbered as torch numbers them
 * (group after group in stored order, within a group the names of param_shapes[g], ZeRO-3 of its
 * sub-groups in order). The model: an OrderedDict in module order, trainable owners their masters,
 * an alias its owner's storage, frozen parameters and floating buffers widened exactly to float32,
 * other buffers as stored.
 *
 * A plan lists the storages and, for each, its runs: byte ranges of the tag folder's files (the
 * fragments of 11.3), copied or widened chunk by chunk; the pickle is built in memory (it grows
 * with the parameters, not their elements). The same plans give the two files as sources read
 * on demand (torch_zip_virtual.h), which the TorchLean conversion reads as the two-step path
 * reads the files it wrote. */
#include "families/deepspeed/deepspeed.h"
#include "containers/zip.h"
#include "containers/pickle_write.h"
#include "base/json_write.h"
#include "writers/torch_zip_virtual.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define F32_EXACT (UINT64_C(1) << 24)
#define F64_EXACT (UINT64_C(1) << 53)
#define CHUNK 4096

/* ---- the plan ---- */

/* A model key: its storage and shape (for a safetensors header); an alias shares its owner's. */
typedef struct model_key {
    const char *name;
    size_t storage;
    const uint64_t *dims;
    size_t rank;
    bool alias;
} model_key;

typedef struct plan {
    tz_plan z; /* the storages, their runs and the pickle */
    const ckpt_ds *ds;
    model_key *keys;
    size_t keys_len;
    const ckpt_report *rep;
} plan;

static void plan_free(plan *p)
{
    free(p->keys);
    tz_plan_free(&p->z);
}

/* ---- the checks every conversion makes first ---- */

static const ds_file *rank0(const ckpt_ds *ds)
{
    return ds->optim && ds->optim[0] != DS_NONE ? &ds->files[ds->optim[0]] : NULL;
}

/* rank 0's base optimizer: its state and param_groups nodes */
static bool base_of(const ckpt_ds *ds, size_t *state, size_t *pgs)
{
    const ds_file *f = rank0(ds);
    if (!f || !f->read || f->elastic) return false;
    ds_tree c = ds_tree_of(f);
    size_t osd = ds_get(c, f->root, "optimizer_state_dict");
    size_t base = ds_get(c, osd, ds->kind == DS_ZERO3 ? "optimizer_state_dict" : "base_optimizer_state");
    *state = ds_get(c, base, "state");
    *pgs = ds_get(c, base, "param_groups");
    return *pgs != CKPT_PNIL && ds_is_seq(c, *pgs);
}

int ckpt_ds_consolidate_check(const ckpt_file *in, ckpt_error *err)
{
    const ckpt_report *rep = in ? ckpt_file_report(in) : NULL;
    if (!rep) return ckpt_fail(err, NULL, CKPT_E_INVALID_ARGUMENT, CKPT_NONE, 0, "invalid arguments to convert");
    const ckpt_ds *ds = ckpt_ds_of(rep);
    if (!ds)
        return ckpt_fail(err, NULL, CKPT_E_WRONG_FAMILY, CKPT_NONE, 0, "this is not a DeepSpeed checkpoint folder");
    if (rep->error.code) return ckpt_error_copy(err, &rep->error); /* its own failure, with its text */
    if (ds->lone)
        return ckpt_fail(err, DS_PREFIX, CKPT_E_INVALID_ARGUMENT, CKPT_NONE, 0,
                         "one file of a checkpoint is not converted: give its folder %s", ds->dir ? ds->dir : "");
    size_t state, pgs;
    if (!ds->layout_ok || ds->model == DS_NONE || !rep->schema || !base_of(ds, &state, &pgs))
        return ckpt_fail(err, DS_PREFIX, CKPT_E_INVALID_ARGUMENT, CKPT_NONE, 0,
                         "an elastic checkpoint keeps no param_groups: it is not converted");
    ds_tree c = ds_tree_of(rank0(ds));
    for (size_t g = 0; g < ds_len(c, pgs); g++) {
        size_t bc = ds_get(c, ds_item(c, pgs, g), "bias_correction");
        const ckpt_pnode *n = bc == CKPT_PNIL ? NULL : ds_node(c, bc);
        if (n && ((n->kind == CKPT_PK_BOOL && !n->truth) || (n->kind == CKPT_PK_INT && n->i == 0)))
            return ckpt_fail(err, DS_PREFIX, CKPT_E_CONVERSION_LOSES, CKPT_NONE, 0,
                             "group %zu has bias_correction False: no torch.optim or TorchLean Adam skips bias "
                             "correction",
                             g);
    }
    return 0;
}

/* ---- the optimizer ---- */

static size_t state_of(ds_tree c, size_t state, int64_t id)
{
    ds_dict_it it;
    size_t k, v, found = CKPT_PNIL;
    int64_t x;
    if (state == CKPT_PNIL || !ds_dict_begin(c, state, &it)) return CKPT_PNIL;
    while (ds_dict_next(c, &it, &k, &v))
        if (ds_int(c, k, &x) && x == id) found = v;
    return found;
}

static int key_index(const char *s, size_t n)
{
    for (int k = 0; k < DS_FP32; k++)
        if (strlen(ds_key_names[k]) == n && !memcmp(ds_key_names[k], s, n)) return k;
    return -1;
}

/* The step as the base optimizer saved it: a tensor copied as stored, a number a 0-d float32
 * tensor (float64 from 2^24 on). */
static int step_storage(plan *p, const ds_file *f, size_t v, size_t *key, const uint64_t **dims, size_t *rank)
{
    ds_tree c = ds_tree_of(f);
    size_t t = ds_tensor(c, v);
    if (t != DS_NONE) {
        const ckpt_torch_tensor *x = &f->t->tensors[t];
        int dtype = ckpt_torch_dtype(x->dtype);
        if (dtype < 0 || !tz_class_of(dtype) || !x->contiguous || x->count != 1)
            return ckpt_fail(p->z.err, DS_PREFIX, CKPT_E_INVALID_ARGUMENT, CKPT_NONE, 0,
                             "%s: a step that is not a one-element tensor: not converted", f->name);
        size_t s = tz_new_storage(&p->z, dtype, 1);
        if (s == SIZE_MAX) return ckpt_fail_oom(p->z.err);
        TRY(tz_add_run(&p->z, s, f->base + x->at, 1, dtype));
        *key = s, *dims = ckpt_torch_size(f->t, t), *rank = x->rank;
        return 0;
    }
    double step;
    if (!ds_number(c, v, &step) || !(step >= 0) || step != floor(step) || step >= (double)F64_EXACT)
        return ckpt_fail(p->z.err, DS_PREFIX, CKPT_E_INVALID_ARGUMENT, CKPT_NONE, 0,
                         "%s: a step that is not a step count: not converted", f->name);
    bool wide = step >= (double)F32_EXACT;
    size_t s = tz_new_storage(&p->z, wide ? CKPT_FLOAT64 : CKPT_FLOAT32, 1);
    if (s == SIZE_MAX) return ckpt_fail_oom(p->z.err);
    p->z.st[s].literal = true;
    if (wide) memcpy(p->z.st[s].lit, &step, 8);
    else {
        float x = (float)step;
        memcpy(p->z.st[s].lit, &x, 4);
    }
    *key = s, *dims = NULL, *rank = 0;
    return 0;
}

/* The flat groups of group g, in order (ZeRO-1/2, BF16_Optimizer: g itself). */
static bool in_group(const ckpt_ds *ds, size_t s, size_t g)
{
    return ds->kind == DS_ZERO3 ? ds->groups[s].group == g : s == g;
}

/* zero_optimization.round_robin_gradients of the model states' ds_config (ZeRO-1/2): each
 * group's param_shapes is then the round-robin permutation of the training code's order */
static bool round_robin(const ckpt_ds *ds)
{
    if (ds->kind == DS_ZERO3 || ds->model == DS_NONE) return false;
    const ds_file *m = &ds->files[ds->model];
    ds_tree c = ds_tree_of(m);
    size_t z = ds_get(c, ds_get(c, m->root, "ds_config"), "zero_optimization");
    size_t rr = z == CKPT_PNIL ? CKPT_PNIL : ds_get(c, z, "round_robin_gradients");
    const ckpt_pnode *n = rr == CKPT_PNIL ? NULL : ds_node(c, rr);
    return n && n->kind == CKPT_PK_BOOL && n->truth;
}

/* Flat group fs's params in the order their ids take: param_shapes' order, or, stored in
 * round-robin order, the module's (their slots'). Returns whether that differs from the stored one. */
static bool id_order(const ckpt_ds *ds, size_t fs, bool rr, size_t *order)
{
    const ds_group *gr = &ds->groups[fs];
    bool moved = false;
    for (size_t k = 0; k < gr->count; k++) order[k] = gr->first + k;
    for (size_t k = 1; rr && k < gr->count; k++) /* insertion sort by slot: a group is short */
        for (size_t j = k; j > 0 && ds->params[order[j - 1]].slot > ds->params[order[j]].slot; j--) {
            size_t t = order[j];
            order[j] = order[j - 1], order[j - 1] = t;
            moved = true;
        }
    return moved;
}

char *ckpt_ds_consolidate_warnings(const ckpt_file *in)
{
    strbuf sb = {0};
    sb_putc(&sb, '[');
    const ckpt_report *rep = in ? ckpt_file_report(in) : NULL;
    const ckpt_ds *ds = rep ? ckpt_ds_of(rep) : NULL;
    bool rr = ds && !rep->error.code && ds->layout_ok && round_robin(ds), first = true;
    size_t most = 0;
    for (size_t fs = 0; rr && fs < ds->groups_len; fs++)
        if (ds->groups[fs].count > most) most = ds->groups[fs].count;
    size_t *order = rr ? malloc((most ? most : 1) * sizeof *order) : NULL;
    if (rr && !order) sb.failed = true;
    for (size_t fs = 0; order && fs < ds->groups_len; fs++) {
        if (!id_order(ds, fs, true, order)) continue;
        char text[160];
        snprintf(text, sizeof text, "%s: group %zu is stored in round-robin order; numbered in module order", DS_PREFIX,
                 fs);
        if (!first) sb_putc(&sb, ',');
        first = false;
        j_string(&sb, text);
    }
    free(order);
    sb_putc(&sb, ']');
    return sb_take(&sb);
}

static int plan_optimizer(plan *p)
{
    const ckpt_ds *ds = p->ds;
    const ds_file *f = rank0(ds);
    ds_tree c = ds_tree_of(f);
    size_t state, pgs;
    base_of(ds, &state, &pgs);
    size_t G = ds_len(c, pgs);
    /* flat group s's id in the base optimizer: group by group, params in order (ZeRO-1/2: the first) */
    int64_t *ids = calloc(ds->groups_len ? ds->groups_len : 1, sizeof *ids);
    if (!ids) return ckpt_fail_oom(p->z.err);
    size_t s = 0;
    for (size_t g = 0; g < G; g++) {
        size_t params = ds_get(c, ds_item(c, pgs, g), "params");
        size_t n = ds_len(c, params);
        if (ds->kind != DS_ZERO3 && n > 1) n = 1;
        for (size_t j = 0; j < n && s < ds->groups_len; j++) ds_int(c, ds_item(c, params, j), &ids[s++]);
    }
    strbuf *sb = &p->z.pickle;
    ckpt_pw_proto(sb, 2);
    ckpt_pw_op(sb, CKPT_OP_EMPTY_DICT);
    ckpt_pw_op(sb, CKPT_OP_MARK);
    ckpt_pw_str(sb, "state");
    ckpt_pw_op(sb, CKPT_OP_EMPTY_DICT);
    ckpt_pw_op(sb, CKPT_OP_MARK);
    int rc = 0;
    int64_t id = 0;
    ds_frag_at *frags = malloc((size_t)(ds->W ? ds->W : 1) * sizeof *frags);
    size_t most = 0;
    for (size_t fs = 0; fs < ds->groups_len; fs++)
        if (ds->groups[fs].count > most) most = ds->groups[fs].count;
    size_t *order = malloc((most ? most : 1) * sizeof *order);
    const bool rr = round_robin(ds);
    if (!frags || !order) rc = ckpt_fail_oom(p->z.err);
    for (size_t g = 0; !rc && g < G; g++)
        for (size_t fs = 0; !rc && fs < ds->groups_len; fs++) {
            if (!in_group(ds, fs, g)) continue;
            const ds_group *gr = &ds->groups[fs];
            size_t st = state_of(c, state, ids[fs]);
            id_order(ds, fs, rr, order);
            for (size_t k = 0; !rc && k < gr->count; k++, id++) {
                const size_t q = order[k];
                const ds_param *pa = &ds->params[q];
                if (st == CKPT_PNIL || !ds_len(c, st)) continue; /* no state: before the first step */
                ckpt_pw_int(sb, id);
                ckpt_pw_op(sb, CKPT_OP_EMPTY_DICT);
                ckpt_pw_op(sb, CKPT_OP_MARK);
                ds_dict_it it;
                size_t k, v;
                ds_dict_begin(c, st, &it);
                while (!rc && ds_dict_next(c, &it, &k, &v)) {
                    const char *name;
                    size_t nl;
                    if (!ds_str(c, k, &name, &nl)) {
                        rc = ckpt_fail(p->z.err, DS_PREFIX, CKPT_E_INVALID_ARGUMENT, CKPT_NONE, 0,
                                       "group %zu: a state key that is not a str: not converted", g);
                        break;
                    }
                    ckpt_pw_strn(sb, name, nl);
                    int key = key_index(name, nl);
                    if (nl == 4 && !memcmp(name, "step", 4)) {
                        size_t sk = 0, rank = 0;
                        const uint64_t *dims = NULL;
                        rc = step_storage(p, f, v, &sk, &dims, &rank);
                        if (!rc) rc = tz_tensor(&p->z, sk, dims, rank);
                    } else if (key >= 0) {
                        size_t n = ckpt_ds_fragments(ds, q, key, frags);
                        int dtype = n ? frags[0].dtype : CKPT_FLOAT32;
                        for (size_t j = 1; j < n; j++)
                            if (frags[j].dtype != dtype) dtype = -1;
                        if (n != pa->frags_len || dtype < 0 || !tz_class_of(dtype)) {
                            rc = ckpt_fail(p->z.err, DS_PREFIX, CKPT_E_INVALID_ARGUMENT, CKPT_NONE, 0,
                                           "%s: its %.*s is not held whole by its fragments: not converted", pa->name,
                                           (int)nl, name);
                            break;
                        }
                        size_t sk = tz_new_storage(&p->z, dtype, pa->count);
                        if (sk == SIZE_MAX) rc = ckpt_fail_oom(p->z.err);
                        for (size_t j = 0; !rc && j < n; j++)
                            rc = tz_add_run(&p->z, sk, frags[j].at, frags[j].count, dtype);
                        if (!rc) rc = tz_tensor(&p->z, sk, pa->dims, pa->rank_dims);
                    } else if (ds_tensor(c, v) != DS_NONE || !tz_value(sb, c.p, v, 0)) {
                        rc = ckpt_fail(p->z.err, DS_PREFIX, CKPT_E_INVALID_ARGUMENT, CKPT_NONE, 0,
                                       "group %zu: state key %.*s holds a value the conversion does not know: not "
                                       "converted",
                                       g, (int)nl, name);
                    }
                }
                ckpt_pw_op(sb, CKPT_OP_SETITEMS);
            }
        }
    ckpt_pw_op(sb, CKPT_OP_SETITEMS);
    ckpt_pw_str(sb, "param_groups");
    ckpt_pw_op(sb, CKPT_OP_EMPTY_LIST);
    id = 0;
    for (size_t g = 0; !rc && g < G; g++) {
        size_t pg = ds_item(c, pgs, g);
        ckpt_pw_op(sb, CKPT_OP_EMPTY_DICT);
        ckpt_pw_op(sb, CKPT_OP_MARK);
        ds_dict_it it;
        size_t k, v;
        ds_dict_begin(c, pg, &it);
        while (!rc && ds_dict_next(c, &it, &k, &v)) {
            if (ds_str_is(c, k, "params")) continue;
            const char *name;
            size_t nl;
            if (!ds_str(c, k, &name, &nl)) {
                rc = ckpt_fail(p->z.err, DS_PREFIX, CKPT_E_INVALID_ARGUMENT, CKPT_NONE, 0,
                               "group %zu: a key that is not a str: not converted", g);
                break;
            }
            ckpt_pw_strn(sb, name, nl);
            if (!tz_value(sb, c.p, v, 0))
                rc = ckpt_fail(p->z.err, DS_PREFIX, CKPT_E_INVALID_ARGUMENT, CKPT_NONE, 0,
                               "group %zu: %.*s holds a value the conversion does not know: not converted", g, (int)nl,
                               name);
        }
        ckpt_pw_str(sb, "params");
        ckpt_pw_op(sb, CKPT_OP_EMPTY_LIST);
        size_t count = 0;
        for (size_t fs = 0; fs < ds->groups_len; fs++)
            if (in_group(ds, fs, g)) count += ds->groups[fs].count;
        if (count) {
            ckpt_pw_op(sb, CKPT_OP_MARK);
            for (size_t j = 0; j < count; j++) ckpt_pw_int(sb, id++);
            ckpt_pw_op(sb, CKPT_OP_APPENDS);
        }
        ckpt_pw_op(sb, CKPT_OP_SETITEMS);
        ckpt_pw_op(sb, CKPT_OP_APPEND);
    }
    ckpt_pw_op(sb, CKPT_OP_SETITEMS);
    ckpt_pw_op(sb, CKPT_OP_STOP);
    free(ids);
    free(frags);
    free(order);
    if (!rc && sb->failed) rc = ckpt_fail_oom(p->z.err);
    return rc;
}

/* ---- the fp32 model ---- */

static size_t slot_named(const ckpt_ds *ds, const char *name)
{
    for (size_t j = 0; j < ds->slot_count; j++)
        if (!strcmp(ds->slot_names[j], name)) return j;
    return DS_NONE;
}

/* A module tensor's elements as one run (it must be contiguous). */
static int module_run(plan *p, const ds_file *f, size_t t, const char *name, size_t *key)
{
    const ckpt_torch_tensor *x = &f->t->tensors[t];
    int dtype = ckpt_torch_dtype(x->dtype);
    if (dtype < 0 || !tz_class_of(dtype) || !x->contiguous)
        return ckpt_fail(p->z.err, DS_PREFIX, CKPT_E_INVALID_ARGUMENT, CKPT_NONE, 0,
                         "%s: the module saves it %s: not converted", name,
                         x->contiguous ? "in a dtype the conversion does not write" : "not contiguous");
    size_t s = tz_new_storage(&p->z, tz_widened(dtype), x->count);
    if (s == SIZE_MAX) return ckpt_fail_oom(p->z.err);
    TRY(tz_add_run(&p->z, s, f->base + x->at, x->count, dtype));
    *key = s;
    return 0;
}

/* ZeRO-3: a frozen parameter's fragments, ceil(n / W) elements per rank, the first n */
static int frozen_runs(plan *p, const char *name, uint64_t n, size_t *key)
{
    const ckpt_ds *ds = p->ds;
    uint64_t q = ds->W ? n / ds->W + (n % ds->W != 0) : 0;
    int dtype = -1;
    size_t s = DS_NONE;
    for (uint64_t r = 0; r < ds->W; r++) {
        uint64_t lo = r * q, c = lo >= n ? 0 : n - lo < q ? n - lo : q;
        const ckpt_torch_tensor *x = NULL;
        const ds_file *f = NULL;
        for (size_t k = 0; k < ds->files_len && !x; k++) {
            f = &ds->files[k];
            if (f->is.role != DS_ROLE_ZMODEL || f->is.rank != r || !f->read || f->stale || f->frozen_model == DS_NONE)
                continue;
            const ckpt_torch_model *fm = &f->t->models[f->frozen_model];
            for (size_t e = fm->count; e-- > 0;) {
                const ckpt_torch_named *nm = &f->t->named[fm->first + e];
                if (!strcmp(nm->name, name) && nm->tensor != CKPT_TORCH_NONE) {
                    x = &f->t->tensors[nm->tensor];
                    break;
                }
            }
        }
        if (!x || !x->contiguous || x->count < c || (dtype >= 0 && ckpt_torch_dtype(x->dtype) != dtype))
            return ckpt_fail(p->z.err, DS_PREFIX, CKPT_E_INVALID_ARGUMENT, CKPT_NONE, 0,
                             "frozen parameter %s: rank %llu's fragment is not read: not converted", name,
                             (unsigned long long)r);
        dtype = ckpt_torch_dtype(x->dtype);
        if (s == DS_NONE) {
            if (dtype < 0 || !tz_class_of(dtype))
                return ckpt_fail(p->z.err, DS_PREFIX, CKPT_E_INVALID_ARGUMENT, CKPT_NONE, 0,
                                 "frozen parameter %s: a dtype the conversion does not write", name);
            if ((s = tz_new_storage(&p->z, tz_widened(dtype), n)) == SIZE_MAX) return ckpt_fail_oom(p->z.err);
        }
        TRY(tz_add_run(&p->z, s, f->base + x->at, c, dtype));
    }
    if (s == DS_NONE && (s = tz_new_storage(&p->z, CKPT_FLOAT32, 0)) == SIZE_MAX) return ckpt_fail_oom(p->z.err);
    *key = s;
    return 0;
}

static int plan_model(plan *p)
{
    const ckpt_ds *ds = p->ds;
    const ds_file *m = &ds->files[ds->model];
    const ckpt_torch *t = m->t;
    const ckpt_torch_model *md = &t->models[m->module];
    const ckpt_schema *schema = p->rep->schema;
    size_t *key_of_slot = malloc((ds->slot_count ? ds->slot_count : 1) * sizeof *key_of_slot);
    p->keys = malloc((md->count ? md->count : 1) * sizeof *p->keys);
    ds_frag_at *frags = malloc((size_t)(ds->W ? ds->W : 1) * sizeof *frags);
    int rc = key_of_slot && frags && p->keys ? 0 : ckpt_fail_oom(p->z.err);
    for (size_t j = 0; j < ds->slot_count && key_of_slot; j++) key_of_slot[j] = DS_NONE;
    strbuf *sb = &p->z.pickle;
    ckpt_pw_proto(sb, 2);
    ckpt_pw_global(sb, "collections", "OrderedDict");
    ckpt_pw_op(sb, CKPT_OP_EMPTY_TUPLE);
    ckpt_pw_op(sb, CKPT_OP_REDUCE);
    if (md->count) ckpt_pw_op(sb, CKPT_OP_MARK);
    for (size_t e = 0; !rc && e < md->count; e++) {
        const char *name = t->named[md->first + e].name;
        bool earlier = false;
        for (size_t j = 0; j < e && !earlier; j++) earlier = !strcmp(t->named[md->first + j].name, name);
        if (earlier) continue; /* a dict holds a key once, at its first place */
        size_t last = e;       /* ... with its last value */
        for (size_t j = e + 1; j < md->count; j++)
            if (!strcmp(t->named[md->first + j].name, name)) last = j;
        size_t tensor = t->named[md->first + last].tensor;
        if (tensor == CKPT_TORCH_NONE) {
            rc = ckpt_fail(p->z.err, DS_PREFIX, CKPT_E_INVALID_ARGUMENT, CKPT_NONE, 0,
                           "%s: the module saves a value that is not a tensor: not converted", name);
            break;
        }
        ckpt_pw_str(sb, name);
        size_t j = slot_named(ds, name), key = DS_NONE;
        const uint64_t *dims;
        size_t rank;
        if (j == DS_NONE) { /* a buffer, or a tensor that is not floating: as stored, 16-bit floats widened */
            rc = module_run(p, m, tensor, name, &key);
            dims = ckpt_torch_size(t, tensor);
            rank = t->tensors[tensor].rank;
        } else {
            dims = ckpt_schema_dims(schema, j);
            rank = (size_t)ckpt_schema_rank(schema, j);
            uint64_t r = ckpt_schema_representative(schema, j);
            size_t pa = ds->param_of_slot[j];
            if (r != CKPT_NONE && r != j) key = key_of_slot[r]; /* an alias: its owner's storage */
            else if (r != CKPT_NONE && pa != DS_NONE) {         /* a trainable owner: its masters */
                const ds_param *q = &ds->params[pa];
                size_t n = ckpt_ds_fragments(ds, pa, DS_FP32, frags);
                int dtype = n ? frags[0].dtype : CKPT_FLOAT32;
                for (size_t k = 1; k < n; k++)
                    if (frags[k].dtype != dtype) dtype = -1;
                if (n != q->frags_len || dtype < 0 || !tz_class_of(dtype))
                    rc = ckpt_fail(p->z.err, DS_PREFIX, CKPT_E_INVALID_ARGUMENT, CKPT_NONE, 0,
                                   "%s: its master weights are not held whole by its fragments: not converted", name);
                else if ((key = tz_new_storage(&p->z, tz_widened(dtype), q->count)) == SIZE_MAX)
                    rc = ckpt_fail_oom(p->z.err);
                for (size_t k = 0; !rc && k < n; k++) rc = tz_add_run(&p->z, key, frags[k].at, frags[k].count, dtype);
            } else if (ds->kind == DS_ZERO3) { /* frozen: its fragments in every rank's model states */
                bool big = false;
                rc = frozen_runs(p, name, ckpt_schema_size(schema, j, &big), &key);
            } else rc = module_run(p, m, tensor, name, &key);
            if (!rc && key == DS_NONE)
                rc = ckpt_fail(p->z.err, DS_PREFIX, CKPT_E_INVALID_ARGUMENT, CKPT_NONE, 0,
                               "%s: tied to a parameter that has no weights: not converted", name);
            if (!rc) key_of_slot[j] = key;
        }
        if (!rc) rc = tz_tensor(&p->z, key, dims, rank);
        if (!rc) {
            uint64_t r = j == DS_NONE ? CKPT_NONE : ckpt_schema_representative(schema, j);
            p->keys[p->keys_len++] = (model_key){name, key, dims, rank, r != CKPT_NONE && r != j};
        }
    }
    if (md->count) ckpt_pw_op(sb, CKPT_OP_SETITEMS);
    ckpt_pw_op(sb, CKPT_OP_STOP);
    free(key_of_slot);
    free(frags);
    if (!rc && sb->failed) rc = ckpt_fail_oom(p->z.err);
    return rc;
}

/* ---- the zip ---- */

/* ---- the fp32 model as safetensors ---- */

static const char *st_dtype(int dtype)
{
    switch (dtype) {
        case CKPT_FLOAT32: return "F32";
        case CKPT_FLOAT64: return "F64";
        case CKPT_FLOAT16: return "F16";
        case CKPT_BFLOAT16: return "BF16";
        case CKPT_INT64: return "I64";
        case CKPT_INT32: return "I32";
        case CKPT_INT16: return "I16";
        case CKPT_INT8: return "I8";
        case CKPT_UINT8: return "U8";
        case CKPT_BOOL: return "BOOL";
        default: return NULL;
    }
}

typedef struct sink_out {
    const ckpt_sink *out;
    const ckpt_ds_consolidate_options *o;
    uint64_t done;
    ckpt_error *err;
} sink_out;

static int to_sink(void *ctx, const void *data, size_t n)
{
    sink_out *z = ctx;
    TRY(ckpt_sink_bytes(z->out, data, n, z->err));
    z->done += n;
    if (z->o && z->o->progress && z->o->progress(z->o->progress_ctx, z->done, CKPT_NONE))
        return ckpt_fail(z->err, NULL, CKPT_E_CANCELLED, CKPT_NONE, 0, "convert cancelled");
    return 0;
}

/* The header (module order; a tied alias left out, as safetensors keeps one copy of shared
 * storage), padded with spaces to 8 bytes, then each storage's bytes in order. */
static int write_safetensors(const plan *p, const ckpt_ds_consolidate_options *o, const ckpt_sink *out, ckpt_error *err)
{
    strbuf h = {0};
    uint64_t at = 0;
    sb_putc(&h, '{');
    bool first = true;
    for (size_t k = 0; k < p->keys_len; k++) {
        const model_key *mk = &p->keys[k];
        if (mk->alias) continue;
        const tz_storage *st = &p->z.st[mk->storage];
        if (!st_dtype(st->dtype)) {
            sb_free(&h);
            return ckpt_fail(err, DS_PREFIX, CKPT_E_INVALID_ARGUMENT, CKPT_NONE, 0,
                             "%s: a dtype safetensors does not hold", mk->name);
        }
        if (!first) sb_putc(&h, ',');
        first = false;
        j_string(&h, mk->name);
        sb_printf(&h, ":{\"dtype\":\"%s\",\"shape\":", st_dtype(st->dtype));
        j_dims(&h, mk->dims, mk->rank);
        sb_printf(&h, ",\"data_offsets\":[%llu,%llu]}", (unsigned long long)at, (unsigned long long)(at + st->bytes));
        at += st->bytes;
    }
    sb_printf(&h, "%s\"__metadata__\":{\"format\":\"pt\"}}", first ? "" : ",");
    while (!h.failed && h.len % 8) sb_putc(&h, ' ');
    if (h.failed) {
        sb_free(&h);
        return ckpt_fail_oom(err);
    }
    uint8_t len[8];
    ckpt_put_u64le(len, h.len);
    int rc = ckpt_sink_bytes(out, len, 8, err);
    if (!rc) rc = ckpt_sink_bytes(out, h.data, h.len, err);
    sb_free(&h);
    ckpt_reader *r = rc ? NULL : ckpt_reader_with_prefix(p->ds->src, DS_PREFIX);
    if (!rc && !r) rc = ckpt_fail_oom(err);
    sink_out z = {out, o, 0, err};
    tz_emit e = {to_sink, &z, -1, err};
    for (size_t k = 0; !rc && k < p->keys_len; k++)
        if (!p->keys[k].alias)
            rc = tz_storage_bytes(&p->z, r, p->keys[k].storage, 0, p->z.st[p->keys[k].storage].numel, &e);
    ckpt_reader_free(r);
    return rc;
}

static int make_plan(plan *p, const ckpt_file *in, int which, ckpt_error *err)
{
    *p = (plan){0};
    p->z.err = err;
    p->z.prefix = DS_PREFIX;
    TRY(ckpt_ds_consolidate_check(in, err));
    p->rep = ckpt_file_report(in);
    p->ds = ckpt_ds_of(p->rep);
    if (which == CKPT_DS_OPTIMIZER) return plan_optimizer(p);
    if (which == CKPT_DS_MODEL || which == CKPT_DS_MODEL_SAFETENSORS) return plan_model(p);
    return ckpt_fail(err, NULL, CKPT_E_INVALID_ARGUMENT, CKPT_NONE, 0, "convert writes the optimizer or the model");
}

int ckpt_ds_consolidate(const ckpt_file *in, const ckpt_ds_consolidate_options *o, const ckpt_sink *out,
                        ckpt_error *err)
{
    if (!in || !o || !out)
        return ckpt_fail(err, NULL, CKPT_E_INVALID_ARGUMENT, CKPT_NONE, 0, "invalid arguments to convert");
    plan p;
    int rc = make_plan(&p, in, o->which, err);
    if (!rc)
        rc = o->which == CKPT_DS_MODEL_SAFETENSORS
                 ? write_safetensors(&p, o, out, err)
                 : tz_write_zip(&p.z, p.ds->src, o->prefix, o->progress, o->progress_ctx, out, NULL, NULL, err);
    plan_free(&p);
    return rc;
}

/* ---- DeepSpeed to TorchLean through the pair ---- */

int ckpt_ds_convert(const ckpt_file *in, const ckpt_convert_options *o, const char *const *frozen, size_t frozen_count,
                    const ckpt_sink *out, ckpt_convert_result *res, char **note, ckpt_error *err)
{
    if (note) *note = NULL;
    if (!in || !o || !out)
        return ckpt_fail(err, NULL, CKPT_E_INVALID_ARGUMENT, CKPT_NONE, 0, "invalid arguments to convert");
    plan po, pm;
    int rc = make_plan(&po, in, CKPT_DS_OPTIMIZER, err);
    if (rc) {
        plan_free(&po);
        return rc;
    }
    if ((rc = make_plan(&pm, in, CKPT_DS_MODEL, err))) {
        plan_free(&pm);
        plan_free(&po);
        return rc;
    }
    /* no names given: the checkpoint's own, its frozen parameters and buffers (11.4 knows them) */
    const char **own = NULL;
    size_t own_len = 0;
    if (!frozen) {
        const ckpt_ds *ds = po.ds;
        const ds_file *m = &ds->files[ds->model];
        const ckpt_torch_model *md = &m->t->models[m->module];
        if (!(own = malloc((md->count ? md->count : 1) * sizeof *own))) rc = ckpt_fail_oom(err);
        for (size_t e = 0; !rc && e < md->count; e++) {
            const char *name = m->t->named[md->first + e].name;
            size_t j = slot_named(ds, name);
            bool seen = false;
            for (size_t k = 0; k < own_len && !seen; k++) seen = !strcmp(own[k], name);
            if (!seen && (j == DS_NONE || !ckpt_schema_requires_grad(po.rep->schema, j))) own[own_len++] = name;
        }
        frozen = own, frozen_count = own_len;
    }
    if (!rc) rc = tz_convert_pair(&po.z, &pm.z, po.ds->src, frozen, frozen_count, o, out, res, note, err);
    free(own);
    plan_free(&pm);
    plan_free(&po);
    return rc;
}
