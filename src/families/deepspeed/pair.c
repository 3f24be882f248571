/* Pairing a DeepSpeed checkpoint with the model the user will load into (format.md 11.6).
 * DeepSpeed loads the module by name but the optimizer by position: rank r's saved flat
 * partition goes to rank r's new one, whose layout the new code's groups define. The new model
 * is a torch.save state dict (names, order, shapes, ties by storage), a safetensors file (names
 * and shapes, no order) or its names alone (names, order). Checked in order: names, shapes,
 * ties, each group's order, the world size; every failure listed, the first the verdict. */
#include "families/deepspeed/deepspeed.h"
#include "core/new_model.h"

#include <stdlib.h>
#include <string.h>

static bool add_failure(ckpt_pair_result *res, int code, size_t slot, strbuf *sb)
{
    if (sb->failed) return false;
    ckpt_error *f = realloc(res->failures, (res->failures_len + 1) * sizeof *f);
    if (!f) return false;
    res->failures = f;
    ckpt_error *e = &f[res->failures_len++];
    memset(e, 0, sizeof *e);
    ckpt_fail_at(e, NULL, code, CKPT_NONE, 0, slot == DS_NONE ? CKPT_NONE : (uint64_t)slot, "%s%s", DS_PREFIX ": ",
                 sb->data);
    sb_free(sb);
    /* format.md 11.6's error.index: the checkpoint slot of the failing name */
    if (slot != DS_NONE) e->index = (uint64_t)slot;
    return e->message != NULL;
}

static bool add_warning(ckpt_pair_result *res, const char *text)
{
    char **w = realloc(res->warnings, (res->warnings_len + 1) * sizeof *w);
    if (!w) return false;
    res->warnings = w;
    strbuf sb = {0};
    sb_printf(&sb, "%s: %s", DS_PREFIX, text);
    w[res->warnings_len++] = sb_take(&sb);
    return w[res->warnings_len - 1] != NULL;
}

/* The checkpoint's module keys in order, each with its shape. */
typedef struct ckpt_side {
    const ds_file *f;
    const ckpt_torch_model *md;
    ckpt_name_index slots;  /* ds->slot_names */
    ckpt_name_index params; /* ds->params' names */
} ckpt_side;

static const char *module_name(const ckpt_side *c, size_t i) { return c->f->t->named[c->md->first + i].name; }

/* Module key i's shape: a slot's the schema's (ZeRO-3: param_shapes), a buffer's its tensor's. */
static void module_shape(const ckpt_report *ro, const ckpt_side *c, size_t i, const uint64_t **dims, uint64_t *rank)
{
    size_t s = ckpt_name_index_find(&c->slots, module_name(c, i));
    if (s != DS_NONE) {
        *dims = ckpt_schema_dims(ro->schema, s);
        *rank = ckpt_schema_rank(ro->schema, s);
        return;
    }
    size_t t = c->f->t->named[c->md->first + i].tensor;
    *dims = ckpt_torch_size(c->f->t, t);
    *rank = c->f->t->tensors[t].rank;
}

/* 1. names, both ways */
static bool check_names(const ckpt_ds *ds, const ckpt_report *ro, const ckpt_side *c, const ckpt_new_model *m,
                        ckpt_pair_result *res, bool safetensors)
{
    size_t n = c->md->count;
    for (size_t i = 0; i < n; i++) {
        const char *name = module_name(c, i);
        if (ckpt_name_index_find(&m->by, name) != DS_NONE) continue;
        size_t s = ckpt_name_index_find(&c->slots, name);
        if (safetensors && s != DS_NONE) { /* a dropped tied copy: an alias whose owner it holds */
            uint64_t r = ckpt_schema_representative(ro->schema, s);
            if (r != CKPT_NONE && r != s && r < ds->slot_count &&
                ckpt_name_index_find(&m->by, ds->slot_names[r]) != DS_NONE)
                continue;
        }
        strbuf sb = {0};
        sb_printf(&sb, "%s is in the checkpoint, not in the new model", name);
        if (!add_failure(res, CKPT_E_DS_PAIR_MODEL, s, &sb)) return false;
    }
    ckpt_name_index ck;
    const char **cn = malloc((n ? n : 1) * sizeof *cn);
    if (!cn) return false;
    for (size_t i = 0; i < n; i++) cn[i] = module_name(c, i);
    bool ok = ckpt_name_index_make(&ck, cn, n);
    for (size_t k = 0; ok && k < m->n; k++) {
        if (ckpt_name_index_find(&ck, m->names[k]) != DS_NONE) continue;
        strbuf sb = {0};
        sb_printf(&sb, "%s is in the new model, not in the checkpoint", m->names[k]);
        ok = add_failure(res, CKPT_E_DS_PAIR_MODEL, DS_NONE, &sb);
    }
    free(ck.v);
    free(cn);
    return ok;
}

/* 2. shapes, in checkpoint order */
static bool check_shapes(const ckpt_report *ro, const ckpt_side *c, const ckpt_new_model *m, ckpt_pair_result *res)
{
    for (size_t i = 0; i < c->md->count; i++) {
        const char *name = module_name(c, i);
        size_t k = ckpt_name_index_find(&m->by, name);
        if (k == DS_NONE) continue;
        const uint64_t *a, *b = ckpt_schema_dims(m->rm->schema, m->tensor_of[k]);
        uint64_t ra, rb = ckpt_schema_rank(m->rm->schema, m->tensor_of[k]);
        module_shape(ro, c, i, &a, &ra);
        if (ckpt_shape_equal(a, ra, b, rb)) continue;
        strbuf sb = {0};
        sb_printf(&sb, "%s is ", name);
        ckpt_shape_print(&sb, a, ra);
        sb_puts(&sb, " in the checkpoint, ");
        ckpt_shape_print(&sb, b, rb);
        sb_puts(&sb, " in the new model");
        if (!add_failure(res, CKPT_E_DS_PAIR_MODEL, ckpt_name_index_find(&c->slots, name), &sb)) return false;
    }
    return true;
}

/* 3. ties (torch.save layouts): a trainable slot's owner in the checkpoint (shared_params)
 * against the earlier tensor of its storage in the new model */
static bool check_ties(const ckpt_ds *ds, const ckpt_report *ro, const ckpt_side *c, const ckpt_new_model *m,
                       ckpt_pair_result *res)
{
    for (size_t i = 0; i < c->md->count; i++) {
        const char *name = module_name(c, i);
        size_t s = ckpt_name_index_find(&c->slots, name), k = ckpt_name_index_find(&m->by, name);
        if (s == DS_NONE || k == DS_NONE || !ckpt_schema_requires_grad(ro->schema, s)) continue;
        uint64_t r = ckpt_schema_representative(ro->schema, s);
        const char *had = r != CKPT_NONE && r != s && r < ds->slot_count ? ds->slot_names[r] : NULL;
        const char *has = m->owner[m->tensor_of[k]] != DS_NONE ? m->rm->tensors[m->owner[m->tensor_of[k]]].name : NULL;
        if ((!had && !has) || (had && has && !strcmp(had, has))) continue;
        strbuf sb = {0};
        if (had) {
            sb_printf(&sb, "%s is tied to %s in the checkpoint, not in the new model", name, had);
            if (!add_failure(res, CKPT_E_DS_PAIR_MODEL, s, &sb)) return false;
        }
        if (has) {
            sb_printf(&sb, "%s is tied to %s in the new model, not in the checkpoint", name, has);
            if (!add_failure(res, CKPT_E_DS_PAIR_MODEL, s, &sb)) return false;
        }
    }
    return true;
}

/* 4. order, per group: param_shapes[g] (ZeRO-3: g's sub-groups in order) against the group's
 * names in the new model's order, both of the names the two have */
static bool check_order(const ckpt_ds *ds, const ckpt_side *c, const ckpt_new_model *m, ckpt_pair_result *res)
{
    size_t n = ds->params_len;
    size_t *a = malloc((n ? n : 1) * sizeof *a), *b = malloc((n ? n : 1) * sizeof *b);
    bool ok = a && b;
    size_t groups = 0;
    for (size_t p = 0; p < n; p++)
        if (ds->params[p].group + 1 > groups) groups = ds->params[p].group + 1;
    for (size_t g = 0; ok && g < groups; g++) {
        size_t na = 0, nb = 0;
        for (size_t p = 0; p < n; p++)
            if (ds->params[p].group == g && ckpt_name_index_find(&m->by, ds->params[p].name) != DS_NONE) a[na++] = p;
        for (size_t k = 0; k < m->n && nb < n; k++) {
            size_t p = ckpt_name_index_find(&c->params, m->names[k]);
            if (p != DS_NONE && ds->params[p].group == g && ckpt_name_index_find(&m->by, m->names[k]) == k) b[nb++] = p;
        }
        for (size_t k = 0; k < na && k < nb; k++) {
            if (a[k] == b[k]) continue;
            strbuf sb = {0};
            sb_printf(&sb, "group %zu position %zu: DeepSpeed would load %s's moments and master weights into %s", g, k,
                      ds->params[a[k]].name, ds->params[b[k]].name);
            ok = add_failure(res, CKPT_E_DS_PAIR_ORDER, ds->params[a[k]].slot, &sb);
            break;
        }
    }
    free(a);
    free(b);
    return ok;
}

/* What the passing verdict compared: "same names, shapes, ties and order in every group". */
static char *compared(const ckpt_new_model *m, bool pass)
{
    const char *what[4];
    size_t n = 0;
    what[n++] = "names";
    if (m->rm) what[n++] = "shapes";
    if (m->has_ties) what[n++] = "ties";
    if (m->ordered) what[n++] = "order";
    strbuf sb = {0};
    sb_printf(&sb, "%s: %s", DS_PREFIX,
              pass ? "the new model pairs with this checkpoint as DeepSpeed pairs it: same "
                   : "compared with the new model as DeepSpeed pairs it: ");
    for (size_t k = 0; k < n; k++) sb_printf(&sb, "%s%s", k == 0 ? "" : k + 1 == n ? " and " : ", ", what[k]);
    if (m->ordered) sb_puts(&sb, " in every group");
    return sb_take(&sb);
}

int ckpt_ds_pair_new_model(const ckpt_report *ro, const ckpt_report *rm, const ckpt_pair_options *o,
                           ckpt_pair_result *res)
{
    const ckpt_ds *ds = ckpt_ds_of(ro);
    if (!ds || ds->lone || ds->model == DS_NONE || ds->files[ds->model].module == DS_NONE || !ro->schema)
        return ckpt_fail(&res->error, NULL, CKPT_E_INVALID_ARGUMENT, CKPT_NONE, 0,
                         "%s: pairing with a model reads the tag folder: open the folder, not one of its files",
                         DS_PREFIX);
    ckpt_new_model m;
    ckpt_side c = {0};
    c.f = &ds->files[ds->model];
    c.md = &c.f->t->models[c.f->module];
    int rc = ckpt_new_model_make(rm, o, &m, &res->error);
    const char **pn = rc ? NULL : malloc((ds->params_len ? ds->params_len : 1) * sizeof *pn);
    if (!rc && !pn) rc = ckpt_fail_oom(&res->error);
    for (size_t p = 0; !rc && p < ds->params_len; p++) pn[p] = ds->params[p].name;
    if (!rc && (!ckpt_name_index_make(&c.slots, (const char *const *)ds->slot_names, ds->slot_count) ||
                !ckpt_name_index_make(&c.params, pn, ds->params_len)))
        rc = ckpt_fail_oom(&res->error);
    const bool safetensors = rm && !o->names && !m.ordered;
    if (!rc && !check_names(ds, ro, &c, &m, res, rm && rm->family && rm->family->impl->unordered))
        rc = ckpt_fail_oom(&res->error);
    if (!rc && rm && !check_shapes(ro, &c, &m, res)) rc = ckpt_fail_oom(&res->error);
    if (!rc && m.has_ties && !check_ties(ds, ro, &c, &m, res)) rc = ckpt_fail_oom(&res->error);
    if (!rc && safetensors &&
        !add_warning(res, "model.safetensors keeps no module order: the order DeepSpeed pairs by is not checked (give "
                          "--names NAMES.json or a torch.save state dict)"))
        rc = ckpt_fail_oom(&res->error);
    if (!rc && m.ordered && !check_order(ds, &c, &m, res)) rc = ckpt_fail_oom(&res->error);
    if (!rc && o->world_size && o->world_size != ds->W) {
        strbuf sb = {0};
        sb_printf(&sb, "the checkpoint has %llu partitions; DeepSpeed refuses to load it on %llu",
                  (unsigned long long)ds->W, (unsigned long long)o->world_size);
        if (!add_failure(res, CKPT_E_DS_PAIR_WORLD, DS_NONE, &sb)) rc = ckpt_fail_oom(&res->error);
    }
    if (!rc) {
        bool repairable = res->failures_len > 0 && ds->kind != DS_ZERO3;
        for (size_t k = 0; k < res->failures_len; k++)
            if (res->failures[k].code == CKPT_E_DS_PAIR_MODEL) repairable = false;
        if (repairable) {
            strbuf sb = {0};
            sb_printf(&sb,
                      "%s: only the order or the world size differs: a universal checkpoint (ds_to_universal) loads by "
                      "name on any world size, without retraining",
                      DS_PREFIX);
            res->note = sb_take(&sb);
        } else {
            res->note = compared(&m, res->failures_len == 0);
        }
        if (!res->note) rc = ckpt_fail_oom(&res->error);
    }
    free(pn);
    free(c.slots.v);
    free(c.params.v);
    ckpt_new_model_free(&m);
    return rc;
}
