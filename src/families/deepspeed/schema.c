/* The checkpoint's ParameterSchema (format.md 11.4), from rank 0's model states: the slots (the
 * module's floating tensors that are not persistent buffers), trainable ones (named in
 * param_shapes, or tied to one that is), their shapes, and the ties of shared_params; with the
 * checks of names, shapes and ties (11.5.23-28). */
#include "families/deepspeed/deepspeed.h"

#include <stdio.h>
#include <stdlib.h>

typedef struct slot_info {
    size_t named; /* into t->named (the module's entry) */
    size_t param; /* the param it owns, DS_NONE */
    size_t owner; /* an alias's owner slot, DS_NONE */
    bool trainable;
    const uint64_t *dims;
    uint32_t rank;
    bool shaped; /* a shape was saved (ZeRO-3: 11.5.26) */
    uint64_t own_dims[8];
} slot_info;

static const ckpt_torch_named *module_entry(const ds_file *m, size_t k)
{
    return &m->t->named[m->t->models[m->module].first + k];
}

typedef struct entry_name {
    const char *name;
    size_t k;
} entry_name;

static int by_name_then_place(const void *a, const void *b)
{
    const entry_name *x = a, *y = b;
    int c = strcmp(x->name, y->name);
    return c ? c : (x->k > y->k) - (x->k < y->k);
}

/* For each module entry k: the entry whose value Python's dict holds at k's place (the last
 * setting of its key) when k is its key's first setting, else DS_NONE. 0 or -1 (no memory). */
static int entries_last(const ds_file *m, size_t *last)
{
    const ckpt_torch_model *md = &m->t->models[m->module];
    entry_name *en = malloc((md->count ? md->count : 1) * sizeof *en);
    if (!en) return -1;
    for (size_t k = 0; k < md->count; k++) en[k] = (entry_name){m->t->named[md->first + k].name, k};
    qsort(en, md->count, sizeof *en, by_name_then_place);
    for (size_t i = 0, j; i < md->count; i = j) {
        for (j = i + 1; j < md->count && !strcmp(en[j].name, en[i].name); j++) last[en[j].k] = DS_NONE;
        last[en[i].k] = en[j - 1].k;
    }
    free(en);
    return 0;
}

/* The module's entry of that name: the last, as Python's dict keeps the last value of a key the
 * pickle sets twice. */
static size_t module_find(const ds_file *m, const char *name)
{
    const ckpt_torch_model *md = &m->t->models[m->module];
    for (size_t k = md->count; k-- > 0;)
        if (!strcmp(m->t->named[md->first + k].name, name)) return k;
    return DS_NONE;
}

static bool is_buffer(const ds_file *m, const char *name)
{
    ds_tree c = ds_tree_of(m);
    for (size_t j = 0; m->buffer_names != CKPT_PNIL && j < ds_len(c, m->buffer_names); j++)
        if (ds_str_is(c, ds_item(c, m->buffer_names, j), name)) return true;
    return false;
}

static size_t param_find(const ckpt_ds *ds, const char *name)
{
    for (size_t k = 0; k < ds->params_len; k++)
        if (!strcmp(ds->params[k].name, name)) return k;
    return DS_NONE;
}

static void shape_text(strbuf *sb, const uint64_t *dims, uint32_t rank) { ckpt_shape_print(sb, dims, rank); }

static int shape_differs(ckpt_ds *ds, ckpt_report *rep, const char *name, const char *key, const uint64_t *a,
                         uint32_t ra, const uint64_t *b, uint32_t rb)
{
    if (ra == rb && !memcmp(a, b, ra * sizeof *a)) return 0;
    strbuf x = {0}, y = {0};
    shape_text(&x, a, ra);
    shape_text(&y, b, rb);
    int rc = x.failed || y.failed
                 ? ckpt_fail_oom(&rep->error)
                 : ds_fail(ds, rep, CKPT_E_DS_NAMES, "%s: %s says %s, the module saves %s", name, key, x.data, y.data);
    sb_free(&x);
    sb_free(&y);
    return rc;
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

/* 11.5.28's text */
static int tie_fails(ckpt_ds *ds, ckpt_report *rep, const char *alias, const char *owner, const char *fmt, ...)
    CKPT_PRINTF(5, 6);
static int tie_fails(ckpt_ds *ds, ckpt_report *rep, const char *alias, const char *owner, const char *fmt, ...)
{
    char why[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    return ds_fail(ds, rep, CKPT_E_DS_NAMES, "shared_params ties %s to %s, but %s", alias, owner, why);
}

int ds_schema(ckpt_ds *ds, ckpt_report *rep)
{
    if (ds->model == DS_NONE) return 0;
    const ds_file *m = &ds->files[ds->model];
    if (!m->read || m->module == DS_NONE) return 0;
    ds_tree c = ds_tree_of(m);
    const ckpt_torch *t = m->t;
    const bool z3 = ds->kind == DS_ZERO3;
    /* 11.5.23, 24: param_shapes' names */
    for (size_t k = 0; k < ds->params_len; k++) {
        const ds_param *p = &ds->params[k];
        bool twice = false;
        for (size_t j = 0; j < k && !twice; j++) twice = !strcmp(ds->params[j].name, p->name);
        if (twice) TRY(ds_fail(ds, rep, CKPT_E_DS_NAMES, "param_shapes names %s twice", p->name));
        else if (module_find(m, p->name) == DS_NONE)
            TRY(ds_fail(ds, rep, CKPT_E_DS_NAMES, "param_shapes names %s, which the module does not save", p->name));
    }
    /* the slots: a key the pickle sets twice is one entry of Python's dict, at its first place,
     * holding its last value */
    const ckpt_torch_model *md = &t->models[m->module];
    slot_info *si = calloc(md->count ? md->count : 1, sizeof *si);
    size_t *last = calloc(md->count ? md->count : 1, sizeof *last);
    if (!si || !last || entries_last(m, last)) {
        free(si);
        free(last);
        return ckpt_fail_oom(&rep->error);
    }
    size_t n = 0;
    for (size_t k = 0; k < md->count; k++) {
        if (last[k] == DS_NONE) continue; /* a later setting of an earlier key */
        const size_t e = last[k];
        const ckpt_torch_named *nm = module_entry(m, e);
        if (nm->tensor == CKPT_TORCH_NONE || !ckpt_dtype_is_float(ckpt_torch_dtype(t->tensors[nm->tensor].dtype)) ||
            is_buffer(m, nm->name))
            continue;
        si[n].named = e;
        si[n].param = param_find(ds, nm->name);
        si[n].owner = DS_NONE;
        si[n].trainable = si[n].param != DS_NONE;
        si[n].dims = ckpt_torch_size(t, nm->tensor);
        si[n].rank = t->tensors[nm->tensor].rank;
        n++;
    }
    free(last);
    int rc = 0;
    /* 11.5.28: the ties, alias -> owner */
    if (m->shared_params != CKPT_PNIL) {
        ds_dict_it it;
        size_t key, value;
        ds_dict_begin(c, m->shared_params, &it);
        while (!rc && ds_dict_next(c, &it, &key, &value)) {
            const char *as, *os;
            size_t al, ol;
            ds_str(c, key, &as, &al);
            ds_str(c, value, &os, &ol);
            char *alias = dup_n(as, al), *owner = dup_n(os, ol);
            if (!alias || !owner) {
                free(alias);
                free(owner);
                rc = ckpt_fail_oom(&rep->error);
                break;
            }
            size_t a = DS_NONE, o = DS_NONE;
            for (size_t j = 0; j < n; j++) {
                if (!strcmp(module_entry(m, si[j].named)->name, alias)) a = j;
                if (!strcmp(module_entry(m, si[j].named)->name, owner)) o = j;
            }
            /* ties to another alias: owner is itself a key of shared_params */
            size_t o2 = ds_get(c, m->shared_params, owner);
            const char *o2s;
            size_t o2l;
            if (a == DS_NONE) rc = tie_fails(ds, rep, alias, owner, "%s is not in the module", alias);
            else if (o == DS_NONE) rc = tie_fails(ds, rep, alias, owner, "%s is not in the module", owner);
            else if (o > a) rc = tie_fails(ds, rep, alias, owner, "%s follows it", owner);
            else if (o2 != CKPT_PNIL && ds_str(c, o2, &o2s, &o2l))
                rc = tie_fails(ds, rep, alias, owner, "%s is itself tied to %.*s", owner, (int)o2l, o2s);
            else if (si[a].param != DS_NONE) rc = tie_fails(ds, rep, alias, owner, "%s is in param_shapes too", alias);
            else {
                const uint64_t *da = si[a].dims, *dob = si[o].dims;
                uint32_t ra = si[a].rank, ro = si[o].rank;
                if (z3 && si[o].param != DS_NONE) {
                    dob = ds->params[si[o].param].dims;
                    ro = ds->params[si[o].param].rank_dims;
                    da = dob, ra = ro; /* ZeRO-3 placeholders: the alias takes its owner's shape */
                }
                size_t ta = module_entry(m, si[a].named)->tensor, to = module_entry(m, si[o].named)->tensor;
                if (ra != ro || memcmp(da, dob, ra * sizeof *da)) {
                    strbuf x = {0}, y = {0};
                    shape_text(&x, da, ra);
                    shape_text(&y, dob, ro);
                    rc = x.failed || y.failed
                             ? ckpt_fail_oom(&rep->error)
                             : tie_fails(ds, rep, alias, owner, "their shapes differ (%s and %s)", x.data, y.data);
                    sb_free(&x);
                    sb_free(&y);
                } else if (!z3 && !ckpt_torch_same(t, ta, to))
                    rc = tie_fails(ds, rep, alias, owner, "the module saves them apart");
                else {
                    si[a].owner = o;
                    si[a].trainable = si[o].trainable;
                }
            }
            free(alias);
            free(owner);
        }
    }
    /* shapes (11.4), with 11.5.25 and 26 */
    for (size_t j = 0; !rc && j < n; j++) {
        const char *name = module_entry(m, si[j].named)->name;
        if (si[j].param != DS_NONE) {
            const ds_param *p = &ds->params[si[j].param];
            if (z3) {
                si[j].dims = p->dims;
                si[j].rank = p->rank_dims;
            } else rc = shape_differs(ds, rep, name, "param_shapes", p->dims, p->rank_dims, si[j].dims, si[j].rank);
            continue;
        }
        if (si[j].owner != DS_NONE) {
            if (z3) si[j].dims = si[si[j].owner].dims, si[j].rank = si[si[j].owner].rank;
            continue;
        }
        size_t fs = m->frozen_shapes == CKPT_PNIL ? CKPT_PNIL : ds_get(c, m->frozen_shapes, name);
        uint32_t r = 0;
        bool deep;
        if (fs != CKPT_PNIL && ds_shape(c, fs, si[j].own_dims, 8, &r, &deep)) {
            if (z3) {
                si[j].dims = si[j].own_dims;
                si[j].rank = r;
                si[j].shaped = true;
            } else rc = shape_differs(ds, rep, name, "frozen_param_shapes", si[j].own_dims, r, si[j].dims, si[j].rank);
        } else if (z3)
            rc = ds_fail(ds, rep, CKPT_E_DS_NAMES,
                         "%s: no shape saved (neither param_shapes nor frozen_param_shapes names it)", name);
    }
    /* 11.5.27: ZeRO-3 frozen fragments, ceil(n / W) elements on every rank */
    for (size_t j = 0; !rc && z3 && j < n; j++) {
        if (si[j].trainable || si[j].owner != DS_NONE || !si[j].shaped) continue;
        const char *name = module_entry(m, si[j].named)->name;
        uint64_t count = 1;
        for (uint32_t d = 0; d < si[j].rank; d++) count *= si[j].dims[d];
        uint64_t q = count / ds->W + (count % ds->W != 0);
        for (size_t k = 0; !rc && k < ds->files_len; k++) {
            const ds_file *f = &ds->files[k];
            if (f->is.role != DS_ROLE_ZMODEL || !f->read || f->stale) continue;
            uint64_t h = 0;
            if (f->frozen_model != DS_NONE) {
                const ckpt_torch_model *fm = &f->t->models[f->frozen_model];
                for (size_t e = 0; e < fm->count; e++) {
                    const ckpt_torch_named *nm = &f->t->named[fm->first + e];
                    if (!strcmp(nm->name, name) && nm->tensor != CKPT_TORCH_NONE) h = f->t->tensors[nm->tensor].count;
                }
            }
            if (h != q)
                rc = ds_fail(ds, rep, CKPT_E_DS_NAMES,
                             "frozen parameter %s: rank %llu's fragment holds %llu elements, expected %llu", name,
                             (unsigned long long)f->is.rank, (unsigned long long)h, (unsigned long long)q);
        }
    }
    /* the schema: shapes, flags, representatives */
    uint64_t *ranks = calloc(n ? n : 1, sizeof *ranks), *reps = calloc(n ? n : 1, sizeof *reps);
    uint8_t *flags = calloc(n ? n : 1, 1);
    size_t dims_n = 0;
    for (size_t j = 0; j < n; j++) dims_n += si[j].rank;
    uint64_t *dims = calloc(dims_n ? dims_n : 1, sizeof *dims);
    ds->slot_names = calloc(n ? n : 1, sizeof *ds->slot_names);
    ds->param_of_slot = calloc(n ? n : 1, sizeof *ds->param_of_slot);
    if (!rc && (!ranks || !reps || !flags || !dims || !ds->slot_names || !ds->param_of_slot))
        rc = ckpt_fail_oom(&rep->error);
    size_t at = 0;
    for (size_t j = 0; !rc && j < n; j++) {
        ranks[j] = si[j].rank;
        memcpy(dims + at, si[j].dims, si[j].rank * sizeof *dims);
        at += si[j].rank;
        flags[j] = si[j].trainable;
        reps[j] = !si[j].trainable ? CKPT_NONE : si[j].owner != DS_NONE ? si[j].owner : j;
        ds->param_of_slot[j] = si[j].param;
        if (si[j].param != DS_NONE) ds->params[si[j].param].slot = j;
        if (!(ds->slot_names[j] =
                  dup_n(module_entry(m, si[j].named)->name, strlen(module_entry(m, si[j].named)->name))))
            rc = ckpt_fail_oom(&rep->error);
        ds->slot_count = j + 1;
    }
    if (!rc) {
        rep->schema = ckpt_schema_new(n, ranks, dims, n, flags, reps, n);
        if (!rep->schema) rc = ckpt_fail_oom(&rep->error);
        else {
            rep->schema_complete = true;
            rep->schema_declared_count = n;
        }
    }
    free(ranks);
    free(reps);
    free(flags);
    free(dims);
    free(si);
    return rc;
}
