/* The model and optimizer parts of a DCP index (format.md 12.2, 12.4): which keys are the
 * optimizer's (its root P followed by `state` or `param_groups` keys), the form of those keys
 * (N, N23, F, I), the model part (`model.{fqn}`, `app.model.{fqn}` or bare FQNs) and its slots,
 * each slot's state keys and group, the groups' hyperparameters read from their records (bytes
 * items), and checks 22-27 and 30. Slots without state are "frozen or tied" until values are
 * compared: they get no representative here. */
#include "families/dcp/dcp.h"
#include "families/pytorch/schema.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

static bool seg_is(const char *s, size_t n, const char *w)
{
    size_t l = strlen(w);
    return n == l && !memcmp(s, w, l);
}

static bool all_digits(const char *s, size_t n)
{
    if (!n) return false;
    for (size_t k = 0; k < n; k++)
        if (s[k] < '0' || s[k] > '9') return false;
    return true;
}

/* Where the optimizer's keys begin in `name`: the offset of a `state.` or `param_groups` segment
 * (at 0 or after a dot), SIZE_MAX when none. want_groups: only `param_groups`. */
static size_t opt_segment(const char *name, bool want_groups)
{
    size_t n = strlen(name);
    for (size_t k = 0; k < n; k++) {
        if (k && name[k - 1] != '.') continue;
        if (!strncmp(name + k, "param_groups", 12) && (name[k + 12] == '.' || !name[k + 12])) return k;
        if (!want_groups && !strncmp(name + k, "state.", 6)) return k;
    }
    return SIZE_MAX;
}

/* ---- the values of records ---- */

/* A record's value as a number: a bytes item's int or float, or a one-element tensor's. */
static bool record_number(const ckpt_dcp *d, const dcp_storage *st, double *out)
{
    if (!st || !st->t || st->bad) return false;
    const ckpt_torch *t = st->t;
    if (st->tensor == DCP_NONE) {
        const ckpt_pnode *n = ckpt_pickle_node(t->pickle, t->pickle->root);
        if (n->kind == CKPT_PK_INT) *out = (double)n->i;
        else if (n->kind == CKPT_PK_FLOAT) *out = n->f;
        else return false;
        return true;
    }
    const ckpt_torch_tensor *x = &t->tensors[st->tensor];
    if (x->count != 1) return false;
    uint8_t b[8];
    int dt = ckpt_torch_dtype(x->dtype);
    unsigned w = ckpt_dtype_width(dt);
    if (!w || w > 8) return false;
    uint64_t at = d->files[st->file].base + st->offset + x->at;
    ckpt_error e = {0};
    ckpt_error_clear(&e);
    if (ckpt_read_at(d->src, at, b, w, "record", &e)) {
        ckpt_error_clear(&e);
        return false;
    }
    uint64_t u = 0;
    for (unsigned k = 0; k < w; k++) u |= (uint64_t)b[k] << (8 * k);
    switch (dt) {
        case CKPT_FLOAT32: {
            float f;
            uint32_t v = (uint32_t)u;
            memcpy(&f, &v, 4);
            *out = f;
            return true;
        }
        case CKPT_FLOAT64: memcpy(out, &u, 8); return true;
        case CKPT_INT64: *out = (double)(int64_t)u; return true;
        case CKPT_INT32: *out = (double)(int32_t)(uint32_t)u; return true;
        default: return false;
    }
}

static const dcp_storage *storage_of(const ckpt_dcp *d, size_t key)
{
    const dcp_key *k = &d->keys[key];
    if (k->kind == DCP_BYTES) return k->storage == DCP_NONE ? NULL : &d->storages[k->storage];
    if (k->chunks_len != 1 || d->chunks[k->chunks].storage == DCP_NONE) return NULL;
    return &d->storages[d->chunks[k->chunks].storage];
}

/* The record's root node as a list of str (a group's params), into d->names */
static bool record_names(ckpt_dcp *d, const dcp_storage *st, size_t node, size_t *first, size_t *len)
{
    *first = d->names_len;
    *len = 0;
    if (!st || !st->t || st->bad) return false;
    const ckpt_pickle *p = st->t->pickle;
    const ckpt_pnode *n = ckpt_pickle_node(p, node);
    if (n->kind != CKPT_PK_LIST && n->kind != CKPT_PK_TUPLE) return false;
    for (uint32_t c = n->first; c != CKPT_PNIL; c = p->cells[c].next) {
        const ckpt_pnode *s = ckpt_pickle_node(p, p->cells[c].node);
        char *q = NULL;
        if (s->kind == CKPT_PK_STR && !(s->flags & CKPT_PF_TEXT) && !memchr(p->data + s->at, 0, s->len)) {
            q = malloc(s->len + 1);
            if (q) {
                memcpy(q, p->data + s->at, s->len);
                q[s->len] = 0;
            }
        } else if (s->kind == CKPT_PK_INT) {
            char buf[24];
            snprintf(buf, sizeof buf, "%lld", (long long)s->i);
            q = dcp_dup(buf);
        } else continue;
        char **g = q ? realloc(d->names, (d->names_len + 1) * sizeof *g) : NULL;
        if (!g) {
            free(q);
            return false;
        }
        d->names = g;
        d->names[d->names_len++] = q;
        (*len)++;
    }
    return true;
}

static bool node_number(const ckpt_pickle *p, size_t k, double *out)
{
    if (k == CKPT_PNIL) return false;
    const ckpt_pnode *n = ckpt_pickle_node(p, k);
    if (n->kind == CKPT_PK_INT) *out = (double)n->i;
    else if (n->kind == CKPT_PK_FLOAT) *out = n->f;
    else return false;
    return true;
}

int dcp_kind_said(const ckpt_dcp *d)
{
    int said = -1;
    for (size_t g = 0; g < d->groups_len; g++) {
        int k = d->groups[g].dwd ? CKPT_ADAMW : CKPT_ADAM;
        if (!d->groups[g].has_dwd || (g && k != said)) return -1;
        said = k;
    }
    return said;
}

/* A group's key read from a value node of a record's pickle */
static void group_value(dcp_group *g, const char *key, size_t klen, const ckpt_pickle *p, size_t v)
{
    double x;
    if (seg_is(key, klen, "lr") && node_number(p, v, &x)) g->has_lr = true, g->lr = x;
    else if (seg_is(key, klen, "eps") && node_number(p, v, &x)) g->has_eps = true, g->eps = x;
    else if (seg_is(key, klen, "weight_decay") && node_number(p, v, &x)) g->has_wd = true, g->wd = x;
    else if (seg_is(key, klen, "decoupled_weight_decay") && v != CKPT_PNIL &&
             ckpt_pickle_node(p, v)->kind == CKPT_PK_BOOL)
        g->has_dwd = true, g->dwd = ckpt_pickle_node(p, v)->truth;
    else if (seg_is(key, klen, "betas") && v != CKPT_PNIL) {
        const ckpt_pnode *n = ckpt_pickle_node(p, v);
        double a, b;
        if ((n->kind == CKPT_PK_TUPLE || n->kind == CKPT_PK_LIST) && n->count == 2 &&
            node_number(p, ckpt_pickle_item(p, v, 0), &a) && node_number(p, ckpt_pickle_item(p, v, 1), &b))
            g->has_betas = true, g->beta1 = a, g->beta2 = b;
    }
}

/* ---- slots by FQN ---- */

typedef struct slot_index {
    const ckpt_dcp *d;
    size_t *sorted; /* slot indices by FQN */
} slot_index;

static const char *slot_fqn(const ckpt_dcp *d, size_t s) { return d->keys[d->slots[s].key].fqn; }

static const ckpt_dcp *cmp_d;
static int by_fqn(const void *a, const void *b)
{
    return strcmp(slot_fqn(cmp_d, *(const size_t *)a), slot_fqn(cmp_d, *(const size_t *)b));
}

static int cmp_span(const char *s, const char *f, size_t n)
{
    int c = strncmp(s, f, n);
    return c ? c : s[n] ? 1 : 0;
}

static size_t find_slot(const slot_index *x, const char *f, size_t n)
{
    size_t lo = 0, hi = x->d->slots_len;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = cmp_span(slot_fqn(x->d, x->sorted[mid]), f, n);
        if (!c) return x->sorted[mid];
        if (c < 0) lo = mid + 1;
        else hi = mid;
    }
    return DCP_NONE;
}

static bool floating(int dtype)
{
    return dtype == CKPT_FLOAT32 || dtype == CKPT_FLOAT64 || dtype == CKPT_FLOAT16 || dtype == CKPT_BFLOAT16 ||
           dtype == CKPT_FLOAT8_E4M3 || dtype == CKPT_FLOAT8_E5M2;
}

static bool batchnorm_buffer(const char *fqn)
{
    const char *s = strrchr(fqn, '.');
    s = s ? s + 1 : fqn;
    return !strcmp(s, "running_mean") || !strcmp(s, "running_var") || !strcmp(s, "num_batches_tracked");
}

static int state_index(const char *k, size_t n)
{
    if (seg_is(k, n, "exp_avg")) return DCP_EXP_AVG;
    if (seg_is(k, n, "exp_avg_sq")) return DCP_EXP_AVG_SQ;
    if (seg_is(k, n, "max_exp_avg_sq")) return DCP_MAX_EXP_AVG_SQ;
    if (seg_is(k, n, "step")) return DCP_STEP;
    return -1;
}

static int shape_diag(ckpt_dcp *d, ckpt_report *rep, const char *fqn, size_t fl, const char *skey, const dcp_key *a,
                      const dcp_key *b, const char *other)
{
    strbuf x = {0}, y = {0}, f = {0};
    ckpt_shape_print(&x, d->pool + a->dims, a->rank);
    ckpt_shape_print(&y, d->pool + b->dims, b->rank);
    sb_printf(&f, "%.*s", (int)fl, fqn);
    int rc = x.failed || y.failed || f.failed
                 ? ckpt_fail_oom(&rep->error)
                 : dcp_diag_add(d, rep, 23, CKPT_E_DCP_STATE, f.data, NULL, CKPT_NONE, "DCP: %s: %s is %s, %s is %s",
                                f.data, skey, x.data, other, y.data);
    sb_free(&x);
    sb_free(&y);
    sb_free(&f);
    return rc;
}

/* the shortest text that reads back (1.5, 1e-05, nan, inf) */
static void num_text(char *buf, size_t n, double x)
{
    if (isnan(x)) {
        snprintf(buf, n, "nan");
        return;
    }
    if (isinf(x)) {
        snprintf(buf, n, x < 0 ? "-inf" : "inf");
        return;
    }
    for (int p = 1; p <= 17; p++) {
        snprintf(buf, n, "%.*g", p, x);
        if (strtod(buf, NULL) == x) return;
    }
}

/* ---- form I: optimizer ids placed on the model's slots as 10.4 places them ---- */

/* an optimizer id: its number, group, and state keys (DCP_NONE each) */
typedef struct form_i_id {
    int64_t id;
    size_t group;
    size_t state[DCP_STATE_KEYS];
    size_t first_key; /* any of its state keys (a tensor's gives the shape), DCP_NONE */
} form_i_id;

static int by_id(const void *a, const void *b)
{
    int64_t x = ((const form_i_id *)a)->id, y = ((const form_i_id *)b)->id;
    return (x > y) - (x < y);
}

static size_t find_id(const form_i_id *ids, size_t n, int64_t id)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (ids[mid].id == id) return mid;
        if (ids[mid].id < id) lo = mid + 1;
        else hi = mid;
    }
    return DCP_NONE;
}

/* a key's id: the decimal number of its FQN segment (form I), -1 when none fits in 18 digits */
static int64_t id_of(const dcp_key *key)
{
    if (!key->fqn || !all_digits(key->fqn, key->fqn_len) || key->fqn_len > 18) return -1;
    int64_t v = 0;
    for (size_t k = 0; k < key->fqn_len; k++) v = v * 10 + (key->fqn[k] - '0');
    return v;
}

/* The ids of the state keys, in the order of the groups' `params` (param_groups.{g}.params, read
 * where its record is here; ids no group lists follow, ascending), placed on the model part's
 * slots by 10.4's positional rule (ckpt_bind_map); each placed id's state keys become its slot's.
 * The rule's failures are errors and its ambiguities warnings, in its own words (12.5.22). */
static int map_form_i(ckpt_dcp *d, ckpt_report *rep)
{
    size_t n = 0;
    for (size_t k = 0; k < d->keys_len; k++)
        n += d->keys[k].part == DCP_PART_OPTIM && !d->keys[k].group_key && id_of(&d->keys[k]) >= 0;
    form_i_id *ids = calloc(n ? n : 1, sizeof *ids);
    ckpt_bind_index *idx = calloc(n ? n : 1, sizeof *idx);
    ckpt_bind_slot *slots = calloc(d->slots_len ? d->slots_len : 1, sizeof *slots);
    size_t *order = calloc(n ? n : 1, sizeof *order);
    uint8_t *taken = calloc(n ? n : 1, 1);
    int rc = 0;
    if (!ids || !idx || !slots || !order || !taken) rc = ckpt_fail_oom(&rep->error);
    /* the distinct ids, sorted; then each key to its id */
    size_t m = 0;
    for (size_t k = 0; !rc && k < d->keys_len; k++) {
        const dcp_key *key = &d->keys[k];
        int64_t id = key->part == DCP_PART_OPTIM && !key->group_key ? id_of(key) : -1;
        if (id >= 0) ids[m++] = (form_i_id){id, DCP_NONE, {DCP_NONE, DCP_NONE, DCP_NONE, DCP_NONE}, DCP_NONE};
    }
    if (!rc) qsort(ids, m, sizeof *ids, by_id);
    size_t u = 0;
    for (size_t k = 0; k < m; k++)
        if (!u || ids[u - 1].id != ids[k].id) ids[u++] = ids[k];
    m = u;
    for (size_t k = 0; !rc && k < d->keys_len; k++) {
        const dcp_key *key = &d->keys[k];
        int64_t id = key->part == DCP_PART_OPTIM && !key->group_key ? id_of(key) : -1;
        size_t j = id >= 0 ? find_id(ids, m, id) : DCP_NONE;
        if (j == DCP_NONE) continue;
        int q = state_index(key->skey, strlen(key->skey));
        if (q >= 0 && ids[j].state[q] == DCP_NONE) ids[j].state[q] = k;
        /* the shape 10.4 places by: exp_avg's, else any state tensor's but step's */
        if (key->kind == DCP_TENSOR && q != DCP_STEP && (ids[j].first_key == DCP_NONE || q == DCP_EXP_AVG))
            ids[j].first_key = k;
    }
    /* the groups' order: each group's params, group after group */
    size_t placed = 0;
    for (size_t g = 0; !rc; g++) {
        size_t pk = DCP_NONE;
        for (size_t k = 0; k < d->keys_len && pk == DCP_NONE; k++)
            if (d->keys[k].group_key && d->keys[k].group == g && d->keys[k].skey && !strcmp(d->keys[k].skey, "params"))
                pk = k;
        if (pk == DCP_NONE) break;
        const dcp_storage *st = storage_of(d, pk);
        if (!st || !st->t || st->bad) continue;
        const ckpt_pickle *p = st->t->pickle;
        const ckpt_pnode *list = ckpt_pickle_node(p, p->root);
        if (list->kind != CKPT_PK_LIST && list->kind != CKPT_PK_TUPLE) continue;
        for (uint32_t c = list->first; c != CKPT_PNIL; c = p->cells[c].next) {
            const ckpt_pnode *v = ckpt_pickle_node(p, p->cells[c].node);
            size_t j = v->kind == CKPT_PK_INT ? find_id(ids, m, v->i) : DCP_NONE;
            if (j == DCP_NONE || taken[j]) continue;
            taken[j] = 1;
            ids[j].group = g;
            order[placed++] = j;
        }
    }
    for (size_t j = 0; !rc && j < m; j++)
        if (!taken[j]) order[placed++] = j;
    for (size_t r = 0; !rc && r < m; r++) {
        const form_i_id *x = &ids[order[r]];
        const dcp_key *t = x->first_key == DCP_NONE ? NULL : &d->keys[x->first_key];
        idx[r] = (ckpt_bind_index){x->id,           x->group == DCP_NONE ? 0 : x->group, t != NULL,
                                   t ? t->rank : 0, t ? d->pool + t->dims : NULL,        NULL};
    }
    for (size_t s = 0; !rc && s < d->slots_len; s++) {
        const dcp_key *key = &d->keys[d->slots[s].key];
        slots[s] = (ckpt_bind_slot){key->fqn, key->rank, d->pool + key->dims, CKPT_NONE, false};
    }
    ckpt_binding b = {0};
    if (!rc && ckpt_bind_map(slots, d->slots_len, idx, m, false, &b, NULL)) rc = ckpt_fail_oom(&rep->error);
    for (size_t r = 0; !rc && r < m; r++) {
        uint64_t s = b.slot_of[r];
        if (s == CKPT_NONE || s >= d->slots_len) continue;
        const form_i_id *x = &ids[order[r]];
        d->slots[s].trainable = true;
        if (x->group != DCP_NONE) d->slots[s].group = x->group;
        for (int q = 0; q < DCP_STATE_KEYS; q++)
            if (x->state[q] != DCP_NONE) d->slots[s].state[q] = x->state[q];
    }
    for (size_t f = 0; !rc && f < b.failures_len; f++)
        rc = dcp_diag_add(d, rep, 22, CKPT_E_DCP_STATE, NULL, NULL, CKPT_NONE, "%s", b.failures[f].message);
    for (size_t w = 0; !rc && w < b.warnings_len; w++)
        rc = dcp_diag_add(d, rep, 22, 0, NULL, NULL, CKPT_NONE, "%s", b.warnings[w]);
    ckpt_binding_free(&b);
    free(ids);
    free(idx);
    free(slots);
    free(order);
    free(taken);
    return rc;
}

int dcp_parts(ckpt_dcp *d, ckpt_report *rep)
{
    /* the optimizer's root P: the prefix of the first param_groups key, else of the first state key */
    const char *P = NULL;
    size_t pl = 0;
    for (int pass = 0; pass < 2 && !P; pass++)
        for (size_t k = 0; k < d->keys_len && !P; k++) {
            size_t at = opt_segment(d->keys[k].name, pass == 0);
            if (at != SIZE_MAX) P = d->keys[k].name, pl = at;
        }
    /* classify: optimizer keys, then the model prefix among the rest */
    bool form_f = false, form_n = false, form_n23 = false, form_i = false;
    for (size_t k = 0; P && k < d->keys_len; k++) {
        dcp_key *key = &d->keys[k];
        const char *s = key->name;
        if (strncmp(s, P, pl)) continue;
        s += pl;
        size_t n = strlen(s);
        if (!strncmp(s, "state.", 6) && n > 6) {
            const char *rest = s + 6, *dot = strrchr(rest, '.');
            if (!dot || dot == rest) continue;
            key->part = DCP_PART_OPTIM;
            key->fqn = rest;
            key->fqn_len = (size_t)(dot - rest);
            key->skey = dot + 1;
            if (all_digits(rest, key->fqn_len)) form_i = true;
        } else if (!strcmp(s, "param_groups")) {
            key->part = DCP_PART_OPTIM;
            key->group_key = true;
            form_n23 = true;
        } else if (!strncmp(s, "param_groups.", 13) && n > 13) {
            const char *rest = s + 13, *dot = strrchr(rest, '.');
            if (!dot || dot == rest) continue;
            key->part = DCP_PART_OPTIM;
            key->group_key = true;
            key->skey = dot + 1;
            size_t gl = (size_t)(dot - rest);
            if (all_digits(rest, gl) && gl < 10) {
                key->group = (size_t)strtoul(rest, NULL, 10);
                form_n = true;
            } else {
                key->fqn = rest;
                key->fqn_len = gl;
                form_f = true;
            }
        }
    }
    d->form = form_i     ? DCP_FORM_I
              : form_f   ? DCP_FORM_F
              : form_n23 ? DCP_FORM_N23
              : form_n   ? DCP_FORM_N
              : P        ? DCP_FORM_N
                         : DCP_FORM_NONE;
    /* the model prefix: "model." or "app.model." when every other tensor key has it, else none */
    static const char *const prefixes[] = {"model.", "app.model."};
    const char *M = "";
    for (size_t q = 0; q < 2 && !*M; q++) {
        bool all = true, any = false;
        for (size_t k = 0; k < d->keys_len && all; k++) {
            const dcp_key *key = &d->keys[k];
            if (key->part == DCP_PART_OPTIM || key->kind != DCP_TENSOR) continue;
            any = true;
            all = !strncmp(key->name, prefixes[q], strlen(prefixes[q]));
        }
        if (all && any) M = prefixes[q];
    }
    size_t ml = strlen(M);
    for (size_t k = 0; k < d->keys_len; k++) {
        dcp_key *key = &d->keys[k];
        if (key->part == DCP_PART_OPTIM) continue;
        if (ml ? !strncmp(key->name, M, ml) : key->kind == DCP_TENSOR) {
            key->part = DCP_PART_MODEL;
            key->fqn = key->name + ml;
            key->fqn_len = strlen(key->fqn);
        }
    }
    for (size_t k = 0; k < d->keys_len; k++) d->counts[d->keys[k].part]++;

    /* the slots: the model part's floating tensors but BatchNorm's buffers, in the metadata's
     * order (planner_data's when kept: its keys follow the saved dict's walk) */
    if (!(d->slots = calloc(d->keys_len ? d->keys_len : 1, sizeof *d->slots))) return ckpt_fail_oom(&rep->error);
    uint8_t *placed = calloc(d->keys_len ? d->keys_len : 1, 1);
    if (!placed) return ckpt_fail_oom(&rep->error);
    size_t walked;
    size_t *walk = dcp_planner_keys(d, &walked);
    if (!walk) {
        free(placed);
        return ckpt_fail_oom(&rep->error);
    }
    for (size_t j = 0; j < walked; j++) {
        size_t k = walk[j];
        placed[k] = 1;
        const dcp_key *key = &d->keys[k];
        if (key->part == DCP_PART_MODEL && key->kind == DCP_TENSOR && floating(key->dtype) &&
            !batchnorm_buffer(key->fqn))
            d->slots[d->slots_len++].key = k;
    }
    free(walk);
    for (size_t k = 0; k < d->keys_len; k++) {
        const dcp_key *key = &d->keys[k];
        if (placed[k] || key->part != DCP_PART_MODEL || key->kind != DCP_TENSOR || !floating(key->dtype) ||
            batchnorm_buffer(key->fqn))
            continue;
        d->slots[d->slots_len++].key = k;
    }
    free(placed);
    for (size_t s = 0; s < d->slots_len; s++) {
        dcp_slot *sl = &d->slots[s];
        sl->group = sl->representative = DCP_NONE;
        for (int q = 0; q < DCP_STATE_KEYS; q++) sl->state[q] = DCP_NONE;
    }
    slot_index x = {d, malloc((d->slots_len ? d->slots_len : 1) * sizeof(size_t))};
    if (!x.sorted) return ckpt_fail_oom(&rep->error);
    for (size_t s = 0; s < d->slots_len; s++) x.sorted[s] = s;
    cmp_d = d;
    qsort(x.sorted, d->slots_len, sizeof *x.sorted, by_fqn);

    int rc = 0;
    const bool model = d->counts[DCP_PART_MODEL] > 0;
    /* form I: its ids placed by position (10.4) */
    if (d->form == DCP_FORM_I && model) rc = map_form_i(d, rep);
    /* 22: optimizer state for an FQN the model part lacks; each state key to its slot */
    const char *said = NULL;
    size_t said_len = 0;
    for (size_t k = 0; !rc && k < d->keys_len; k++) {
        dcp_key *key = &d->keys[k];
        if (key->part != DCP_PART_OPTIM || key->group_key || !key->fqn || d->form == DCP_FORM_I) continue;
        size_t s = find_slot(&x, key->fqn, key->fqn_len);
        if (s == DCP_NONE) {
            if (!model || (said && said_len == key->fqn_len && !memcmp(said, key->fqn, said_len))) continue;
            said = key->fqn;
            said_len = key->fqn_len;
            char *f = malloc(key->fqn_len + 1);
            if (!f) {
                rc = ckpt_fail_oom(&rep->error);
                break;
            }
            memcpy(f, key->fqn, key->fqn_len);
            f[key->fqn_len] = 0;
            rc = dcp_diag_add(d, rep, 22, CKPT_E_DCP_STATE, f, NULL, CKPT_NONE,
                              "DCP: optimizer state for %s, which the model part does not hold", f);
            free(f);
            continue;
        }
        int q = state_index(key->skey, strlen(key->skey));
        d->slots[s].trainable = true;
        if (q >= 0 && d->slots[s].state[q] == DCP_NONE) d->slots[s].state[q] = k;
    }
    /* 23: the moments' shapes */
    for (size_t s = 0; !rc && s < d->slots_len; s++) {
        const dcp_slot *sl = &d->slots[s];
        const dcp_key *pk = &d->keys[sl->key];
        for (int q = DCP_EXP_AVG; !rc && q <= DCP_MAX_EXP_AVG_SQ; q++) {
            if (sl->state[q] == DCP_NONE) continue;
            const dcp_key *m = &d->keys[sl->state[q]];
            if (m->kind == DCP_TENSOR &&
                (m->rank != pk->rank || (m->rank && memcmp(d->pool + m->dims, d->pool + pk->dims, m->rank * 8))))
                rc = shape_diag(d, rep, pk->fqn, pk->fqn_len, m->skey, m, pk, "the parameter");
        }
    }
    if (!rc && !model) {
        /* without a model part: exp_avg_sq against exp_avg, per FQN */
        for (size_t k = 0; !rc && k < d->keys_len; k++) {
            const dcp_key *v = &d->keys[k];
            if (v->part != DCP_PART_OPTIM || v->group_key || !v->skey || strcmp(v->skey, "exp_avg_sq")) continue;
            /* its exp_avg: the same key but its last segment */
            size_t j = dcp_find_key(d, v->name, (size_t)(v->skey - v->name) + 7);
            const dcp_key *m = j == DCP_NONE ? NULL : &d->keys[j];
            if (m && m->kind == DCP_TENSOR && v->kind == DCP_TENSOR &&
                (m->rank != v->rank || (m->rank && memcmp(d->pool + m->dims, d->pool + v->dims, m->rank * 8))))
                rc = shape_diag(d, rep, v->fqn, v->fqn_len, "exp_avg_sq", v, m, "exp_avg");
        }
    }
    /* 24: steps */
    for (size_t s = 0; !rc && s < d->slots_len; s++) {
        dcp_slot *sl = &d->slots[s];
        if (sl->state[DCP_STEP] == DCP_NONE) continue;
        double v;
        if (!record_number(d, storage_of(d, sl->state[DCP_STEP]), &v)) continue;
        if (!isfinite(v) || v < 0 || v != floor(v)) {
            char b[48];
            num_text(b, sizeof b, v);
            rc = dcp_diag_add(d, rep, 24, CKPT_E_DCP_STATE, slot_fqn(d, s), NULL, CKPT_NONE,
                              "DCP: %s: step %s is not a step count", slot_fqn(d, s), b);
            continue;
        }
        sl->has_step = true;
        sl->step = v;
    }
    /* the groups: N's param_groups.{g}.*, N23's one list, F's per-FQN values (equal ones form
     * a group) */
    size_t ng = 0;
    const bool numbered = d->form == DCP_FORM_N || d->form == DCP_FORM_I; /* param_groups.{g}.{key} */
    for (size_t k = 0; numbered && k < d->keys_len; k++)
        if (d->keys[k].group_key && d->keys[k].group != DCP_NONE && d->keys[k].group + 1 > ng)
            ng = d->keys[k].group + 1;
    if (!rc && numbered && ng) {
        if (!(d->groups = calloc(ng, sizeof *d->groups))) rc = ckpt_fail_oom(&rep->error);
        else d->groups_len = ng;
        for (size_t k = 0; !rc && k < d->keys_len; k++) {
            const dcp_key *key = &d->keys[k];
            if (!key->group_key || key->group == DCP_NONE) continue;
            dcp_group *g = &d->groups[key->group];
            const dcp_storage *st = storage_of(d, k);
            if (!strcmp(key->skey, "params")) {
                if (st && st->t)
                    g->has_params = record_names(d, st, st->t->pickle->root, &g->first_name, &g->names_len);
            } else if (st && st->t && !st->bad && st->tensor == DCP_NONE)
                group_value(g, key->skey, strlen(key->skey), st->t->pickle, st->t->pickle->root);
            else {
                double v;
                if (record_number(d, st, &v)) {
                    if (!strcmp(key->skey, "lr")) g->has_lr = true, g->lr = v;
                    else if (!strcmp(key->skey, "eps")) g->has_eps = true, g->eps = v;
                    else if (!strcmp(key->skey, "weight_decay")) g->has_wd = true, g->wd = v;
                }
            }
        }
    } else if (!rc && d->form == DCP_FORM_N23) {
        for (size_t k = 0; k < d->keys_len && !rc; k++) {
            const dcp_key *key = &d->keys[k];
            if (!key->group_key || key->skey) continue;
            const dcp_storage *st = storage_of(d, k);
            if (!st || !st->t || st->bad) break;
            const ckpt_pickle *p = st->t->pickle;
            const ckpt_pnode *list = ckpt_pickle_node(p, p->root);
            if (list->kind != CKPT_PK_LIST) break;
            if (!(d->groups = calloc(list->count ? list->count : 1, sizeof *d->groups))) {
                rc = ckpt_fail_oom(&rep->error);
                break;
            }
            for (uint32_t c = list->first; c != CKPT_PNIL; c = p->cells[c].next) {
                dcp_group *g = &d->groups[d->groups_len++];
                const ckpt_pnode *dict = ckpt_pickle_node(p, p->cells[c].node);
                if (dict->kind != CKPT_PK_DICT) continue;
                for (uint32_t e = dict->first; e != CKPT_PNIL;) {
                    uint32_t vc = p->cells[e].next;
                    if (vc == CKPT_PNIL) break;
                    const ckpt_pnode *kn = ckpt_pickle_node(p, p->cells[e].node);
                    size_t vn = p->cells[vc].node;
                    e = p->cells[vc].next;
                    if (kn->kind != CKPT_PK_STR) continue;
                    const char *ks = (const char *)p->data + kn->at;
                    if (seg_is(ks, kn->len, "params"))
                        g->has_params = record_names(d, st, vn, &g->first_name, &g->names_len);
                    else group_value(g, ks, kn->len, p, vn);
                }
            }
        }
    } else if (!rc && d->form == DCP_FORM_F) {
        /* each slot's own values, then groups of equal values in module order */
        dcp_group *own = calloc(d->slots_len ? d->slots_len : 1, sizeof *own);
        bool *has = calloc(d->slots_len ? d->slots_len : 1, sizeof *has);
        if (!own || !has) rc = ckpt_fail_oom(&rep->error);
        for (size_t k = 0; !rc && k < d->keys_len; k++) {
            const dcp_key *key = &d->keys[k];
            if (!key->group_key || !key->fqn) continue;
            size_t s = find_slot(&x, key->fqn, key->fqn_len);
            if (s == DCP_NONE) continue;
            const dcp_storage *st = storage_of(d, k);
            has[s] = true;
            if (st && st->t && !st->bad && st->tensor == DCP_NONE)
                group_value(&own[s], key->skey, strlen(key->skey), st->t->pickle, st->t->pickle->root);
        }
        if (!rc && !(d->groups = calloc(d->slots_len ? d->slots_len : 1, sizeof *d->groups)))
            rc = ckpt_fail_oom(&rep->error);
        for (size_t s = 0; !rc && s < d->slots_len; s++) {
            if (!has[s]) continue;
            size_t g = 0;
            for (; g < d->groups_len; g++) {
                const dcp_group *a = &d->groups[g], *b = &own[s];
                if (a->has_lr == b->has_lr && a->lr == b->lr && a->has_betas == b->has_betas && a->beta1 == b->beta1 &&
                    a->beta2 == b->beta2 && a->has_eps == b->has_eps && a->eps == b->eps && a->has_wd == b->has_wd &&
                    a->wd == b->wd && a->has_dwd == b->has_dwd && a->dwd == b->dwd)
                    break;
            }
            if (g == d->groups_len) {
                d->groups[g] = own[s];
                d->groups[g].first_name = d->names_len;
                d->groups[g].names_len = 0;
                d->groups[g].has_params = true;
                d->groups_len++;
            }
            d->slots[s].group = g;
        }
        free(own);
        free(has);
        if (!rc) {
            strbuf note = {0};
            sb_printf(&note,
                      "DCP: the flattened optimizer state keeps no group boundaries: parameters with equal "
                      "hyperparameters form one group (%zu groups)",
                      d->groups_len);
            if (!(d->note = sb_take(&note))) rc = ckpt_fail_oom(&rep->error);
        }
    }
    /* each slot's group from the groups' params (N, N23); 25 */
    for (size_t g = 0; !rc && d->form != DCP_FORM_F && g < d->groups_len; g++)
        for (size_t j = 0; !rc && j < d->groups[g].names_len; j++) {
            const char *f = d->names[d->groups[g].first_name + j];
            size_t s = find_slot(&x, f, strlen(f));
            if (s == DCP_NONE) continue;
            if (d->slots[s].group != DCP_NONE && d->slots[s].group != g)
                rc = dcp_diag_add(d, rep, 25, CKPT_E_DCP_STATE, f, NULL, CKPT_NONE,
                                  "DCP: %s is listed in parameter groups %zu and %zu", f, d->slots[s].group, g);
            else d->slots[s].group = g;
        }
    /* F: the groups' names in module order */
    if (!rc && d->form == DCP_FORM_F) {
        size_t total = 0;
        for (size_t s = 0; s < d->slots_len; s++) total += d->slots[s].group != DCP_NONE;
        char **q = realloc(d->names, (d->names_len + total + 1) * sizeof *q);
        if (!q) rc = ckpt_fail_oom(&rep->error);
        else d->names = q;
        for (size_t g = 0; !rc && g < d->groups_len; g++) {
            d->groups[g].first_name = d->names_len;
            for (size_t s = 0; !rc && s < d->slots_len; s++) {
                if (d->slots[s].group != g) continue;
                if (!(d->names[d->names_len] = dcp_dup(slot_fqn(d, s)))) rc = ckpt_fail_oom(&rep->error);
                else d->names_len++, d->groups[g].names_len++;
            }
        }
    }
    /* 26: state, but no group lists it (N, N23, F) when every group's params were read */
    bool listed = d->groups_len > 0;
    for (size_t g = 0; g < d->groups_len; g++) listed = listed && d->groups[g].has_params;
    for (size_t s = 0; !rc && listed && s < d->slots_len; s++)
        if (d->slots[s].trainable && d->slots[s].group == DCP_NONE)
            rc = dcp_diag_add(d, rep, 26, 0, slot_fqn(d, s), NULL, CKPT_NONE,
                              "DCP: %s has optimizer state but no parameter group lists it", slot_fqn(d, s));
    /* 27: a group's steps */
    for (size_t g = 0; !rc && g < d->groups_len; g++) {
        size_t first = DCP_NONE;
        for (size_t s = 0; !rc && s < d->slots_len; s++) {
            const dcp_slot *sl = &d->slots[s];
            if (sl->group != g || !sl->has_step) continue;
            if (first == DCP_NONE) {
                first = s;
                continue;
            }
            if (sl->step == d->slots[first].step) continue;
            char a[48], b[48];
            num_text(a, sizeof a, sl->step);
            num_text(b, sizeof b, d->slots[first].step);
            rc = dcp_diag_add(d, rep, 27, 0, slot_fqn(d, s), NULL, CKPT_NONE,
                              "DCP: group %zu: %s is at step %s, %s at step %s", g, slot_fqn(d, s), a,
                              slot_fqn(d, first), b);
        }
    }
    /* 30: named by the (first) folder whose index keeps none */
    const char *without = d->root ? d->root : ".";
    for (size_t m = d->metas_len; m-- > 0;)
        if (d->metas[m].planner == CKPT_PNIL && d->metas[m].where) without = d->metas[m].where;
    if (!rc && !d->planner_data && d->classes != DCP_CLASSES_113 && d->slots_len)
        rc = dcp_diag_add(d, rep, 30, 0, NULL, NULL, CKPT_NONE,
                          "DCP: %s keeps no planner_data: slots follow the metadata's key order, which is module order "
                          "only when one rank wrote every unsharded item (give --names NAMES.json)",
                          without);
    free(x.sorted);
    return rc;
}
