/* Pairing a DCP folder with the model the user will load into (format.md 12.8). DCP loads by
 * name (`load`, `set_state_dict`), so order is not compared: names, then shapes, then ties (the
 * model's by storage identity against 12.4's ties by equal values), then requires grad when the
 * frozen names are given; every failure listed, the first the verdict. The model is a torch.save
 * state dict (names, shapes, ties), a safetensors file (names, shapes) or its names alone. */
#include "families/dcp/dcp.h"
#include "core/impl.h"
#include "core/new_model.h"
#include "core/pair_result.h"

#include <stdlib.h>
#include <string.h>

static bool add_failure(ckpt_pair_result *res, size_t slot, strbuf *sb)
{
    return ckpt_pair_add_failure(res, DCP_PREFIX, CKPT_E_BY_NAME, slot == DCP_NONE ? CKPT_NONE : (uint64_t)slot,
                                 CKPT_NONE, sb);
}

/* The checkpoint's model part: its tensor keys, each with its slot (DCP_NONE: not a slot). */
typedef struct ckpt_side {
    const ckpt_dcp *d;
    size_t *keys, *slot_of;
    size_t n;
    ckpt_name_index by;
} ckpt_side;

static const char *side_name(const ckpt_side *c, size_t i) { return c->d->keys[c->keys[i]].fqn; }

static bool side_make(const ckpt_dcp *d, ckpt_side *c)
{
    memset(c, 0, sizeof *c);
    c->d = d;
    size_t cap = d->keys_len ? d->keys_len : 1;
    c->keys = malloc(cap * sizeof *c->keys);
    c->slot_of = malloc(cap * sizeof *c->slot_of);
    const char **names = malloc(cap * sizeof *names);
    size_t *slot_of_key = malloc(cap * sizeof *slot_of_key);
    bool ok = c->keys && c->slot_of && names && slot_of_key;
    for (size_t k = 0; ok && k < d->keys_len; k++) slot_of_key[k] = DCP_NONE;
    for (size_t s = 0; ok && s < d->slots_len; s++) slot_of_key[d->slots[s].key] = s;
    for (size_t k = 0; ok && k < d->keys_len; k++) {
        if (d->keys[k].part != DCP_PART_MODEL || d->keys[k].kind != DCP_TENSOR) continue;
        c->slot_of[c->n] = slot_of_key[k];
        names[c->n] = d->keys[k].fqn;
        c->keys[c->n++] = k;
    }
    ok = ok && ckpt_name_index_make(&c->by, names, c->n);
    free(names);
    free(slot_of_key);
    return ok;
}

static void side_free(ckpt_side *c)
{
    free(c->keys);
    free(c->slot_of);
    free(c->by.v);
}

/* A slot's owner in the checkpoint (12.4's tie by equal values), NULL */
static const char *ckpt_owner(const ckpt_dcp *d, size_t s)
{
    if (s == DCP_NONE) return NULL;
    size_t r = d->slots[s].representative;
    return r != DCP_NONE && r < d->slots_len ? d->keys[d->slots[r].key].fqn : NULL;
}

/* 1. names, both ways: the model's missing ones first (DCP's strict load fails on them); a
 * safetensors file's dropped tied copy is not reported (10.4) */
static bool check_names(const ckpt_side *c, const ckpt_new_model *m, bool safetensors, ckpt_pair_result *res)
{
    for (size_t k = 0; k < m->n; k++) {
        if (ckpt_name_index_find(&c->by, m->names[k]) != CKPT_NAME_NONE) continue;
        strbuf sb = {0};
        sb_printf(&sb, "%s is in the model, not in the checkpoint", m->names[k]);
        if (!add_failure(res, DCP_NONE, &sb)) return false;
    }
    for (size_t i = 0; i < c->n; i++) {
        const char *name = side_name(c, i);
        if (ckpt_name_index_find(&m->by, name) != CKPT_NAME_NONE) continue;
        const char *owner = ckpt_owner(c->d, c->slot_of[i]);
        if (safetensors && owner && ckpt_name_index_find(&m->by, owner) != CKPT_NAME_NONE) continue;
        strbuf sb = {0};
        sb_printf(&sb, "%s is in the checkpoint, not in the model", name);
        if (!add_failure(res, c->slot_of[i], &sb)) return false;
    }
    return true;
}

/* 2. shapes, in the checkpoint's order */
static bool check_shapes(const ckpt_side *c, const ckpt_new_model *m, ckpt_pair_result *res)
{
    for (size_t i = 0; i < c->n; i++) {
        size_t k = ckpt_name_index_find(&m->by, side_name(c, i));
        if (k == CKPT_NAME_NONE || !m->rm->schema || m->tensor_of[k] >= ckpt_schema_count(m->rm->schema)) continue;
        const dcp_key *key = &c->d->keys[c->keys[i]];
        const uint64_t *a = c->d->pool + key->dims, *b = ckpt_schema_dims(m->rm->schema, m->tensor_of[k]);
        uint64_t rb = ckpt_schema_rank(m->rm->schema, m->tensor_of[k]);
        if (ckpt_shape_equal(a, key->rank, b, rb)) continue;
        strbuf sb = {0};
        sb_printf(&sb, "%s is ", key->fqn);
        ckpt_shape_print(&sb, a, key->rank);
        sb_puts(&sb, " in the checkpoint, ");
        ckpt_shape_print(&sb, b, rb);
        sb_puts(&sb, " in the model");
        if (!add_failure(res, c->slot_of[i], &sb)) return false;
    }
    return true;
}

/* 3. ties: 12.4's owner in the checkpoint against the earlier tensor of its storage in the
 * model; a model tie the checkpoint saves different values for names the first element */
static int check_ties(const ckpt_side *c, const ckpt_new_model *m, ckpt_pair_result *res)
{
    const ckpt_dcp *d = c->d;
    for (size_t i = 0; i < c->n; i++) {
        const char *name = side_name(c, i);
        size_t k = ckpt_name_index_find(&m->by, name), s = c->slot_of[i];
        if (k == CKPT_NAME_NONE) continue;
        const char *had = ckpt_owner(d, s);
        const size_t o = m->owner[m->tensor_of[k]];
        const char *has = o != CKPT_NAME_NONE ? m->rm->tensors[o].name : NULL;
        if ((!had && !has) || (had && has && !strcmp(had, has))) continue;
        strbuf sb = {0};
        if (had) {
            sb_printf(&sb, "%s is tied to %s in the checkpoint, not in the model", name, had);
            if (!add_failure(res, s, &sb)) return ckpt_fail_oom(&res->error);
        }
        if (!has) continue;
        /* the model ties them: do the checkpoint's two keys hold the same values? */
        size_t j = ckpt_name_index_find(&c->by, has);
        uint64_t first = 0;
        int same = j == CKPT_NAME_NONE ? 2 : dcp_first_difference(d, c->keys[j], c->keys[i], &first, &res->error);
        if (same < 0) return res->error.code ? res->error.code : CKPT_E_IO;
        if (same == 0)
            sb_printf(
                &sb, "%s is tied to %s in the model, but the checkpoint saves different values (first at element %llu)",
                name, has, (unsigned long long)first);
        else sb_printf(&sb, "%s is tied to %s in the model, not in the checkpoint", name, has);
        if (!add_failure(res, s, &sb)) return ckpt_fail_oom(&res->error);
    }
    return 0;
}

/* 4. requires grad, when the names the training code does not train are given */
static bool check_grad(const ckpt_side *c, const ckpt_new_model *m, const ckpt_pair_options *o, ckpt_pair_result *res)
{
    ckpt_name_index frozen;
    if (!ckpt_name_index_make(&frozen, o->frozen, o->frozen_count)) return false;
    bool ok = true;
    for (size_t i = 0; ok && i < c->n; i++) {
        const char *name = side_name(c, i);
        size_t s = c->slot_of[i];
        if (s == DCP_NONE || ckpt_name_index_find(&m->by, name) == CKPT_NAME_NONE) continue;
        const dcp_slot *sl = &c->d->slots[s];
        const bool is_frozen = ckpt_name_index_find(&frozen, name) != CKPT_NAME_NONE;
        strbuf sb = {0};
        if (is_frozen && sl->trainable) {
            sb_printf(&sb, "%s: %s is frozen in the model but has optimizer state in the checkpoint", DCP_PREFIX, name);
            ok = ckpt_pair_add_warning(res, &sb);
        } else if (!is_frozen && !sl->trainable && sl->representative == DCP_NONE) {
            sb_printf(&sb, "%s requires grad in the model but has no optimizer state in the checkpoint", name);
            ok = add_failure(res, s, &sb);
        }
    }
    free(frozen.v);
    return ok;
}

/* What the verdict compared: 12.8's passing text names names, shapes and ties */
static char *compared(const ckpt_new_model *m, bool grad, bool pass)
{
    const char *what[4];
    size_t n = 0;
    what[n++] = "names";
    if (m->rm) what[n++] = "shapes";
    if (m->has_ties) what[n++] = "ties";
    if (grad) what[n++] = "requires grad";
    strbuf sb = {0};
    sb_printf(&sb, "%s: %s", DCP_PREFIX,
              pass ? "the model pairs with this checkpoint by name: same " : "compared with the model by name: ");
    for (size_t k = 0; k < n; k++) sb_printf(&sb, "%s%s", k == 0 ? "" : k + 1 == n ? " and " : ", ", what[k]);
    return sb_take(&sb);
}

int ckpt_dcp_pair_new_model(const ckpt_report *ro, const ckpt_report *rm, const ckpt_pair_options *o,
                            ckpt_pair_result *res)
{
    const ckpt_dcp *d = ckpt_dcp_of(ro);
    if (!d || d->lone_metadata || d->lone_distcp)
        return ckpt_fail(&res->error, NULL, CKPT_E_INVALID_ARGUMENT, CKPT_NONE, 0,
                         "%s: pairing with a model reads the checkpoint folder: open the folder, not one of its files",
                         DCP_PREFIX);
    ckpt_new_model m;
    ckpt_side c;
    int rc = ckpt_new_model_make(rm, o, &m, &res->error);
    if (!rc && !side_make(d, &c)) rc = ckpt_fail_oom(&res->error);
    else if (rc) memset(&c, 0, sizeof c);
    const bool safetensors = rm && rm->family && rm->family->impl->unordered;
    const bool grad = o->frozen != NULL;
    if (!rc && !check_names(&c, &m, safetensors, res)) rc = ckpt_fail_oom(&res->error);
    if (!rc && rm && !check_shapes(&c, &m, res)) rc = ckpt_fail_oom(&res->error);
    if (!rc && m.has_ties) rc = check_ties(&c, &m, res);
    if (!rc && grad && !check_grad(&c, &m, o, res)) rc = ckpt_fail_oom(&res->error);
    if (!rc && !(res->note = compared(&m, grad, res->failures_len == 0))) rc = ckpt_fail_oom(&res->error);
    side_free(&c);
    ckpt_new_model_free(&m);
    return rc;
}
