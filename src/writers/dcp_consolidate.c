/* A DCP folder to a consolidated torch.optim state dict and its model (format.md 12.8): two
 * torch.save zips (torch_zip.c), each tensor whole in its stored dtype and its own storage, its
 * bytes streamed from the folder's records (12.3's runs), never gathered in memory.
 *
 * The optimizer: {'state': {id: {its state keys in planner order}}, 'param_groups': [{the
 * group's keys in stored order but params, then 'params': [ids]}]}; ids as torch numbers them,
 * group after group in stored order, each group's names in module order (the slots' order). The
 * model: an OrderedDict of the model part in module order, an alias (12.4's ties) its owner's
 * storage. Only a folder without errors, whose module order is trusted, is converted. The same
 * plans, read on demand (torch_zip_virtual.h), take a folder to TorchLean in one step. */
#include "families/dcp/dcp.h"
#include "containers/pickle_write.h"
#include "writers/torch_zip_virtual.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct plan {
    tz_plan z;
    const ckpt_dcp *d;
    size_t *order;   /* the keys in stored order: planner_data's, then the rest in metadata order */
    size_t *storage; /* per key: its storage in z, SIZE_MAX none yet */
    size_t *id_slot; /* id -> slot */
    size_t ids;
    char **warnings;
    size_t warnings_len;
} plan;

static void plan_free(plan *p)
{
    tz_plan_free(&p->z);
    free(p->order);
    free(p->storage);
    free(p->id_slot);
    for (size_t k = 0; k < p->warnings_len; k++) free(p->warnings[k]);
    free(p->warnings);
}

static const char *dir_of(const ckpt_dcp *d) { return d->root ? d->root : "."; }

static int refuse(plan *p, const char *fmt, const char *a)
{
    return ckpt_fail(p->z.err, NULL, CKPT_E_CONVERSION_LOSES, CKPT_NONE, 0, fmt, a);
}

/* ---- what every conversion checks first (12.8's refusals) ---- */

static int check(plan *p, const ckpt_file *in, ckpt_error *err)
{
    const ckpt_report *rep = in ? ckpt_file_report(in) : NULL;
    const ckpt_dcp *d = rep ? ckpt_dcp_of(rep) : NULL;
    if (!d) return ckpt_fail(err, NULL, CKPT_E_INVALID_ARGUMENT, CKPT_NONE, 0, "convert: not a DCP folder");
    if (rep->error.code) return ckpt_error_copy(err, &rep->error); /* its own failure, with its text */
    p->d = d;
    if (d->lone_metadata || d->lone_distcp)
        return refuse(p, "DCP: %s is one file of a DCP folder: give the folder to convert it", dir_of(d));
    if (d->counts[DCP_PART_OPTIM] && !d->counts[DCP_PART_MODEL])
        return refuse(p,
                      "DCP: %s holds optimizer state but no model part: give --state MODEL (a torch.save state dict, "
                      "a safetensors file or the model's DCP folder)",
                      dir_of(d));
    if (!d->planner_data && d->classes != DCP_CLASSES_113)
        return refuse(
            p, "DCP: %s keeps no module order (no planner_data): give --names NAMES.json to number the parameters",
            dir_of(d));
    if (d->form == DCP_FORM_I)
        return refuse(p, "DCP: %s keys its optimizer state by index: convert it as a torch.save file (10.4)",
                      dir_of(d));
    for (size_t s = 0; s < d->slots_len; s++) {
        const dcp_slot *sl = &d->slots[s];
        if (!sl->trainable && sl->representative == DCP_NONE && !sl->values_read)
            return refuse(p,
                          "DCP: %s has no optimizer state and its values cannot be compared: tied or frozen is "
                          "unknown (give --state MODEL)",
                          d->keys[sl->key].fqn);
    }
    return 0;
}

/* The keys in stored order: planner_data's walk, then keys it does not name in metadata order. */
static int stored_order(plan *p)
{
    const ckpt_dcp *d = p->d;
    uint8_t *placed = calloc(d->keys_len ? d->keys_len : 1, 1);
    p->order = malloc((d->keys_len ? d->keys_len : 1) * sizeof *p->order);
    p->storage = malloc((d->keys_len ? d->keys_len : 1) * sizeof *p->storage);
    if (!placed || !p->order || !p->storage) {
        free(placed);
        return ckpt_fail_oom(p->z.err);
    }
    size_t n = 0, *walk = dcp_planner_keys(d, &n);
    if (!walk) {
        free(placed);
        return ckpt_fail_oom(p->z.err);
    }
    for (size_t j = 0; j < n; j++) {
        placed[walk[j]] = 1;
        p->order[j] = walk[j];
    }
    free(walk);
    for (size_t k = 0; k < d->keys_len; k++)
        if (!placed[k]) p->order[n++] = k;
    for (size_t k = 0; k < d->keys_len; k++) p->storage[k] = SIZE_MAX;
    free(placed);
    return 0;
}

/* ---- values ---- */

/* A tensor key whole in its own storage (or the storage it already has: an alias's owner). */
static int p_tensor_key(plan *p, size_t k)
{
    const ckpt_dcp *d = p->d;
    const dcp_key *key = &d->keys[k];
    if (p->storage[k] == SIZE_MAX) {
        ckpt_span *sp;
        size_t n;
        int dtype;
        if (!dcp_key_spans(d, k, &sp, &n, &dtype))
            return refuse(p, "DCP: %s: its records do not hold the tensor whole in one dtype: not converted",
                          key->name);
        uint64_t numel = 0;
        for (size_t j = 0; j < n; j++) numel += sp[j].count; /* they tile the tensor: its element count */
        size_t s = tz_class_of(dtype) ? tz_new_storage(&p->z, dtype, numel) : SIZE_MAX;
        int rc = 0;
        if (!tz_class_of(dtype)) rc = refuse(p, "DCP: %s is of a dtype torch.save has no storage class for", key->name);
        else if (s == SIZE_MAX) rc = ckpt_fail_oom(p->z.err);
        for (size_t j = 0; !rc && j < n; j++) rc = tz_add_run(&p->z, s, sp[j].offset, sp[j].count, dtype);
        free(sp);
        TRY(rc);
        p->storage[k] = s;
    }
    return tz_tensor(&p->z, p->storage[k], d->pool + key->dims, key->rank);
}

/* A key's value: a tensor whole, or a bytes item's value as its record holds it. */
static int p_key_value(plan *p, size_t k)
{
    const ckpt_dcp *d = p->d;
    const dcp_key *key = &d->keys[k];
    if (key->kind == DCP_TENSOR) return p_tensor_key(p, k);
    const dcp_storage *st = key->storage == DCP_NONE ? NULL : &d->storages[key->storage];
    if (!st || !st->t || st->bad || st->tensor != DCP_NONE ||
        !tz_value(&p->z.pickle, st->t->pickle, st->t->pickle->root, 0))
        return refuse(p, "DCP: %s holds a value ckptscope does not write again: not converted", key->name);
    return 0;
}

/* ---- the optimizer ---- */

static size_t slot_of_name(const ckpt_dcp *d, const char *name)
{
    for (size_t s = 0; s < d->slots_len; s++)
        if (!strcmp(d->keys[d->slots[s].key].fqn, name)) return s;
    return DCP_NONE;
}

static int warn(plan *p, strbuf *sb)
{
    char *w = sb_take(sb);
    char **q = w ? realloc(p->warnings, (p->warnings_len + 1) * sizeof *q) : NULL;
    if (!q) {
        free(w);
        return ckpt_fail_oom(p->z.err);
    }
    p->warnings = q;
    p->warnings[p->warnings_len++] = w;
    return 0;
}

/* Ids: group after group in stored order, each group's slots in module order; a stored params
 * list in another order is warned about, once per group (its first pair the other way round). */
static int number(plan *p)
{
    const ckpt_dcp *d = p->d;
    if (!(p->id_slot = malloc((d->slots_len ? d->slots_len : 1) * sizeof *p->id_slot))) return ckpt_fail_oom(p->z.err);
    for (size_t g = 0; g < d->groups_len; g++) {
        for (size_t s = 0; s < d->slots_len; s++)
            if (d->slots[s].group == g) p->id_slot[p->ids++] = s;
        if (d->form == DCP_FORM_F) continue; /* F's lists are module order */
        const dcp_group *gr = &d->groups[g];
        size_t prev = DCP_NONE;
        const char *prev_name = NULL;
        for (size_t j = 0; j < gr->names_len; j++) {
            const char *name = d->names[gr->first_name + j];
            size_t s = slot_of_name(d, name);
            if (s == DCP_NONE) continue;
            if (prev != DCP_NONE && s < prev) {
                strbuf sb = {0};
                sb_printf(&sb,
                          "DCP: group %zu lists %s before %s, the module the other way round: numbered in module order "
                          "(--group-order stored keeps the list)",
                          g, prev_name, name);
                TRY(warn(p, &sb));
                break;
            }
            prev = s, prev_name = name;
        }
    }
    return 0;
}

static bool fqn_is(const dcp_key *key, const char *fqn)
{
    return key->fqn && key->fqn_len == strlen(fqn) && !memcmp(key->fqn, fqn, key->fqn_len);
}

/* group g's keys but params, in stored order, and their values */
static int p_group_keys(plan *p, size_t g)
{
    const ckpt_dcp *d = p->d;
    strbuf *sb = &p->z.pickle;
    if (d->form == DCP_FORM_N23) { /* the one list's dict g, its keys as stored */
        for (size_t k = 0; k < d->keys_len; k++) {
            const dcp_key *key = &d->keys[k];
            if (!key->group_key || key->skey) continue;
            const dcp_storage *st = key->storage == DCP_NONE ? NULL : &d->storages[key->storage];
            const ckpt_pickle *pk = st && st->t ? st->t->pickle : NULL;
            const ckpt_pnode *list = pk ? ckpt_pickle_node(pk, pk->root) : NULL;
            uint32_t c = list && list->kind == CKPT_PK_LIST ? list->first : CKPT_PNIL;
            for (size_t j = 0; j < g && c != CKPT_PNIL; j++) c = pk->cells[c].next;
            const ckpt_pnode *dict = c == CKPT_PNIL ? NULL : ckpt_pickle_node(pk, pk->cells[c].node);
            if (!dict || dict->kind != CKPT_PK_DICT) break;
            for (uint32_t e = dict->first; e != CKPT_PNIL;) {
                uint32_t vc = pk->cells[e].next;
                if (vc == CKPT_PNIL) break;
                size_t kn = pk->cells[e].node, vn = pk->cells[vc].node;
                const ckpt_pnode *kp = ckpt_pickle_node(pk, kn);
                e = pk->cells[vc].next;
                if (kp->kind == CKPT_PK_STR && kp->len == 6 && !memcmp(pk->data + kp->at, "params", 6)) continue;
                if (!tz_value(sb, pk, kn, 0) || !tz_value(sb, pk, vn, 0))
                    return refuse(p, "DCP: %s holds a group value ckptscope does not write again: not converted",
                                  key->name);
            }
            return 0;
        }
        return refuse(p, "DCP: %s: its parameter groups cannot be read: not converted", dir_of(d));
    }
    /* N: param_groups.{g}.*; F: the first member's param_groups.{fqn}.* */
    const char *first = d->form == DCP_FORM_F && d->groups[g].names_len ? d->names[d->groups[g].first_name] : NULL;
    for (size_t j = 0; j < d->keys_len; j++) {
        size_t k = p->order[j];
        const dcp_key *key = &d->keys[k];
        if (!key->group_key || !key->skey || !strcmp(key->skey, "params")) continue;
        if (d->form == DCP_FORM_F ? !first || !fqn_is(key, first) : key->group != g) continue;
        ckpt_pw_str(sb, key->skey);
        TRY(p_key_value(p, k));
    }
    return 0;
}

static int plan_optimizer(plan *p)
{
    const ckpt_dcp *d = p->d;
    TRY(number(p));
    strbuf *sb = &p->z.pickle;
    ckpt_pw_proto(sb, 2);
    ckpt_pw_op(sb, CKPT_OP_EMPTY_DICT);
    ckpt_pw_op(sb, CKPT_OP_MARK);
    ckpt_pw_str(sb, "state");
    ckpt_pw_op(sb, CKPT_OP_EMPTY_DICT);
    bool any = false;
    for (size_t id = 0; id < p->ids; id++) {
        const dcp_slot *sl = &d->slots[p->id_slot[id]];
        if (!sl->trainable) continue; /* a name in a group without state: an id, no state entry */
        if (!any) ckpt_pw_op(sb, CKPT_OP_MARK);
        any = true;
        const char *fqn = d->keys[sl->key].fqn;
        ckpt_pw_int(sb, (int64_t)id);
        ckpt_pw_op(sb, CKPT_OP_EMPTY_DICT);
        ckpt_pw_op(sb, CKPT_OP_MARK);
        for (size_t j = 0; j < d->keys_len; j++) {
            size_t k = p->order[j];
            const dcp_key *key = &d->keys[k];
            if (key->part != DCP_PART_OPTIM || key->group_key || !key->skey || !fqn_is(key, fqn)) continue;
            ckpt_pw_str(sb, key->skey);
            TRY(p_key_value(p, k));
        }
        ckpt_pw_op(sb, CKPT_OP_SETITEMS);
    }
    if (any) ckpt_pw_op(sb, CKPT_OP_SETITEMS);
    ckpt_pw_str(sb, "param_groups");
    ckpt_pw_op(sb, CKPT_OP_EMPTY_LIST);
    size_t id = 0;
    for (size_t g = 0; g < d->groups_len; g++) {
        ckpt_pw_op(sb, CKPT_OP_EMPTY_DICT);
        ckpt_pw_op(sb, CKPT_OP_MARK);
        TRY(p_group_keys(p, g));
        ckpt_pw_str(sb, "params");
        ckpt_pw_op(sb, CKPT_OP_EMPTY_LIST);
        size_t from = id;
        while (id < p->ids && d->slots[p->id_slot[id]].group == g) id++;
        if (id > from) {
            ckpt_pw_op(sb, CKPT_OP_MARK);
            for (size_t j = from; j < id; j++) ckpt_pw_int(sb, (int64_t)j);
            ckpt_pw_op(sb, CKPT_OP_APPENDS);
        }
        ckpt_pw_op(sb, CKPT_OP_SETITEMS);
        ckpt_pw_op(sb, CKPT_OP_APPEND);
    }
    ckpt_pw_op(sb, CKPT_OP_SETITEMS);
    ckpt_pw_op(sb, CKPT_OP_STOP);
    return sb->failed ? ckpt_fail_oom(p->z.err) : 0;
}

/* ---- the model ---- */

static int plan_model(plan *p)
{
    const ckpt_dcp *d = p->d;
    strbuf *sb = &p->z.pickle;
    ckpt_pw_proto(sb, 2);
    ckpt_pw_global(sb, "collections", "OrderedDict");
    ckpt_pw_op(sb, CKPT_OP_EMPTY_TUPLE);
    ckpt_pw_op(sb, CKPT_OP_REDUCE);
    if (d->counts[DCP_PART_MODEL]) ckpt_pw_op(sb, CKPT_OP_MARK);
    for (size_t j = 0; j < d->keys_len; j++) {
        size_t k = p->order[j];
        const dcp_key *key = &d->keys[k];
        if (key->part != DCP_PART_MODEL) continue;
        /* an alias: its owner's storage, so the tie is one storage again */
        size_t owner = k;
        for (size_t s = 0; s < d->slots_len; s++)
            if (d->slots[s].key == k && d->slots[s].representative != DCP_NONE)
                owner = d->slots[d->slots[s].representative].key;
        ckpt_pw_strn(sb, key->fqn, key->fqn_len);
        /* the owner comes first (module order): its storage is made */
        if (owner != k && p->storage[owner] != SIZE_MAX)
            TRY(tz_tensor(&p->z, p->storage[owner], d->pool + key->dims, key->rank));
        else TRY(p_key_value(p, k));
    }
    if (d->counts[DCP_PART_MODEL]) ckpt_pw_op(sb, CKPT_OP_SETITEMS);
    ckpt_pw_op(sb, CKPT_OP_STOP);
    return sb->failed ? ckpt_fail_oom(p->z.err) : 0;
}

/* ---- the entry points ---- */

static int make_plan(plan *p, const ckpt_file *in, int which, ckpt_error *err)
{
    *p = (plan){0};
    p->z.err = err;
    p->z.prefix = DCP_PREFIX;
    TRY(check(p, in, err));
    TRY(stored_order(p));
    if (which == CKPT_DS_OPTIMIZER) return plan_optimizer(p);
    if (which == CKPT_DS_MODEL) return plan_model(p);
    return ckpt_fail(err, NULL, CKPT_E_INVALID_ARGUMENT, CKPT_NONE, 0,
                     "convert writes a DCP folder's optimizer or its model as torch.save files");
}

int ckpt_dcp_consolidate(const ckpt_file *in, const ckpt_ds_consolidate_options *o, const ckpt_sink *out,
                         ckpt_error *err)
{
    if (!in || !o || !out)
        return ckpt_fail(err, NULL, CKPT_E_INVALID_ARGUMENT, CKPT_NONE, 0, "invalid arguments to convert");
    plan p;
    int rc = make_plan(&p, in, o->which, err);
    if (!rc) rc = tz_write_zip(&p.z, p.d->src, o->prefix, o->progress, o->progress_ctx, out, NULL, NULL, err);
    plan_free(&p);
    return rc;
}

char *ckpt_dcp_consolidate_warnings(const ckpt_file *in)
{
    ckpt_error err = {0};
    plan p;
    strbuf sb = {0};
    sb_putc(&sb, '[');
    if (!make_plan(&p, in, CKPT_DS_OPTIMIZER, &err))
        for (size_t k = 0; k < p.warnings_len; k++) {
            if (k) sb_putc(&sb, ',');
            j_string(&sb, p.warnings[k]);
        }
    sb_putc(&sb, ']');
    plan_free(&p);
    ckpt_error_clear(&err);
    return sb_take(&sb);
}

/* ---- DCP to TorchLean through the pair ---- */

int ckpt_dcp_convert(const ckpt_file *in, const ckpt_convert_options *o, const char *const *frozen, size_t frozen_count,
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
    /* no names given: the slots 12.4 knows are frozen (no state, no owner whose values they equal) */
    const ckpt_dcp *d = po.d;
    const char **own = NULL;
    size_t own_len = 0;
    if (!frozen) {
        if (!(own = malloc((d->slots_len ? d->slots_len : 1) * sizeof *own))) rc = ckpt_fail_oom(err);
        for (size_t s = 0; !rc && s < d->slots_len; s++)
            if (!d->slots[s].trainable && d->slots[s].representative == DCP_NONE)
                own[own_len++] = d->keys[d->slots[s].key].fqn;
        frozen = own, frozen_count = own_len;
    }
    if (!rc) rc = tz_convert_pair(&po.z, &pm.z, d->src, frozen, frozen_count, o, out, res, note, err);
    free(own);
    plan_free(&pm);
    plan_free(&po);
    return rc;
}
