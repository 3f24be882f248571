/* The search (format.md 10.3): optimizer and model state dicts, depth first in insertion order, and
 * the tensors outside them. */
#include "families/pytorch/values.h"

#include <math.h>
#include <stdio.h>

/* ---- the search (format.md 10.3) ---- */

static bool is_int_list(const tctx *c, size_t k)
{
    if (!torch_is_seq(c, k)) return false;
    const ckpt_pickle *p = c->t->pickle;
    for (uint32_t cell = N(c, k)->first; cell != CKPT_PNIL; cell = p->cells[cell].next)
        if (N(c, p->cells[cell].node)->kind != CKPT_PK_INT) return false;
    return true;
}

static bool is_str_list(const tctx *c, size_t k)
{
    if (!torch_is_seq(c, k)) return false;
    const ckpt_pickle *p = c->t->pickle;
    for (uint32_t cell = N(c, k)->first; cell != CKPT_PNIL; cell = p->cells[cell].next)
        if (N(c, p->cells[cell].node)->kind != CKPT_PK_STR) return false;
    return true;
}

/* seen[k]: SEEN once the torch_search expanded node k, VALID once k passed as an optimizer's state dict
 * or group (a value the memo shares is checked once), NAMED when it passed keyed by names */
enum { SEEN = 1, VALID = 2, NAMED = 4 };

/* An optimizer state dict (format.md 10.3): `state` keyed by ints and groups' `params` lists of
 * ints, or (FSDP's, name-keyed) `state` keyed by str and `params` lists of str; never a mix. */
static bool is_optimizer(tctx *c, size_t k, bool *named)
{
    size_t state = torch_dict_get(c, k, "state"), groups = torch_dict_get(c, k, "param_groups");
    if (!torch_is_dict(c, state) || !torch_is_seq(c, groups) || N(c, groups)->kind != CKPT_PK_LIST) return false;
    int keyed = -1; /* 0 ids, 1 names, -1 not known yet (no key, no param) */
    if (c->seen[state] & VALID) keyed = (c->seen[state] & NAMED) ? 1 : 0;
    else {
        dict_it it;
        size_t key, value;
        torch_dict_begin(&it, c, state);
        bool any = false;
        while (torch_dict_next(&it, &key, &value)) {
            int kind = N(c, key)->kind == CKPT_PK_INT ? 0 : N(c, key)->kind == CKPT_PK_STR ? 1 : 2;
            if (kind == 2 || (any && kind != keyed) || !torch_is_dict(c, value)) return false;
            keyed = kind;
            any = true;
        }
        c->seen[state] |= VALID | (keyed == 1 ? NAMED : 0);
        if (!any) keyed = -1;
    }
    const ckpt_pickle *p = c->t->pickle;
    for (uint32_t cell = N(c, groups)->first; cell != CKPT_PNIL; cell = p->cells[cell].next) {
        size_t g = p->cells[cell].node;
        if (!torch_is_dict(c, g)) return false;
        size_t params = torch_dict_get(c, g, "params");
        if (!torch_is_seq(c, params)) return false;
        if (!N(c, params)->count) continue;
        int kind = is_int_list(c, params) ? 0 : is_str_list(c, params) ? 1 : 2;
        if (kind == 2 || (keyed >= 0 && kind != keyed)) return false;
        keyed = kind;
    }
    *named = keyed == 1;
    return true;
}

/* The position of the last '.' in s[0..n), or SIZE_MAX. */
static size_t last_dot(const char *s, size_t n)
{
    for (size_t k = n; k > 0; k--)
        if (s[k - 1] == '.') return k - 1;
    return SIZE_MAX;
}

/* Form F (torch's flatten_optimizer_state_dict; docs/pytorch.md): a dict of str keys, each `state.{fqn}.{key}` or
 * `param_groups.{fqn}.{key}`, at least one of them `state.`. */
static bool has_prefix(const tctx *c, size_t key, const char *pre)
{
    const ckpt_pnode *n = N(c, key);
    size_t l = strlen(pre);
    if (n->kind != CKPT_PK_STR || (n->flags & CKPT_PF_TEXT) || n->len <= l || memcmp(span(c, n), pre, l)) return false;
    const char *rest = span(c, n) + l;
    size_t rl = n->len - l;
    size_t dot = last_dot(rest, rl);
    return dot != SIZE_MAX && dot > 0 && dot + 1 < rl; /* a non-empty fqn and key */
}

static bool is_flat_optimizer(const tctx *c, size_t k)
{
    dict_it it;
    size_t key, value;
    if (!torch_dict_begin(&it, c, k)) return false;
    bool state = false;
    while (torch_dict_next(&it, &key, &value)) {
        bool st = has_prefix(c, key, "state.");
        if (!st && !has_prefix(c, key, "param_groups.")) return false;
        state = state || st;
    }
    return state;
}

static int is_model(tctx *c, size_t k, bool *yes)
{
    dict_it it;
    size_t key, value, x;
    *yes = false;
    if (!torch_dict_begin(&it, c, k)) return 0;
    size_t n = 0;
    while (torch_dict_next(&it, &key, &value)) {
        if (N(c, key)->kind != CKPT_PK_STR) return 0;
        size_t mark = torch_path_push_key(c, key);
        int rc = torch_tensor_of(c, value, &x);
        torch_path_pop(c, mark);
        TRY(rc);
        if (x == CKPT_TORCH_NONE) return 0;
        n++;
    }
    *yes = n > 0;
    return 0;
}

static int add_named(tctx *c, const char *s, size_t len, size_t tensor, double value)
{
    ckpt_torch *t = c->t;
    TRY(torch_charge(c, N(c, c->t->pickle->root), 1 + len / 8));
    if (!PUSH(t, named, named_len, CAP_NA)) return ckpt_fail_oom(c->err);
    ckpt_torch_named *nm = &t->named[t->named_len];
    nm->name = torch_dup_span(s, len);
    if (!nm->name) return ckpt_fail_oom(c->err);
    nm->tensor = tensor;
    nm->value = value;
    t->named_len++;
    return 0;
}

static int add_model(tctx *c, size_t k)
{
    ckpt_torch *t = c->t;
    if (!PUSH(t, models, models_len, CAP_MO)) return ckpt_fail_oom(c->err);
    TRY(torch_charge(c, N(c, k), 1 + c->path.len / 8));
    ckpt_torch_model *m = &t->models[t->models_len];
    m->path = torch_path_dup(c);
    if (!m->path) return ckpt_fail_oom(c->err);
    m->first = t->named_len;
    m->count = 0;
    t->models_len++;
    dict_it it;
    size_t key, value, x;
    torch_dict_begin(&it, c, k);
    while (torch_dict_next(&it, &key, &value)) {
        TRY(torch_tensor_of(c, value, &x));
        TRY(add_named(c, span(c, N(c, key)), N(c, key)->len, x, 0));
        t->models[t->models_len - 1].count++;
    }
    return 0;
}

typedef struct idx_group {
    int64_t index;
    size_t group;
} idx_group;

static int cmp_idx(const void *a, const void *b)
{
    const idx_group *x = a, *y = b;
    if (x->index != y->index) return x->index < y->index ? -1 : 1;
    return x->group < y->group ? -1 : x->group > y->group;
}

/* `label` names the entry in texts: "index {i}", or a name-keyed optimizer's FQN. */
static int read_step(tctx *c, const char *label, size_t v, double *step)
{
    ckpt_torch *t = c->t;
    size_t x;
    TRY(torch_tensor_of(c, v, &x));
    double s;
    if (x != CKPT_TORCH_NONE) {
        const ckpt_torch_tensor *tx = &t->tensors[x];
        bool f32 = !strcmp(tx->dtype, "float32"), f64 = !strcmp(tx->dtype, "float64");
        if ((!f32 && !f64) || tx->count != 1)
            return ckpt_fail(c->err, "PyTorch", CKPT_E_TORCH_STEP, tx->at, 0,
                             "%s: step is a tensor of %llu elements of \"%s\", not a step count", label,
                             (unsigned long long)tx->count, tx->dtype);
        uint8_t b[8];
        TRY(ckpt_read_at(c->src, tx->at, b, tx->width, "a step", c->err));
        if (f32) {
            float f;
            memcpy(&f, b, 4);
            s = f;
        } else memcpy(&s, b, 8);
    } else if (!torch_number_of(c, v, &s) || N(c, v)->kind == CKPT_PK_BOOL) {
        return ckpt_fail(c->err, "PyTorch", CKPT_E_TORCH_STEP, CKPT_NONE, 0,
                         "%s: step is neither a number nor a tensor, not a step count", label);
    }
    if (!(s >= 0) || !isfinite(s) || s != floor(s)) {
        strbuf w = {0};
        if (isnan(s)) sb_puts(&w, "nan");
        else if (isinf(s)) sb_puts(&w, s > 0 ? "inf" : "-inf");
        else j_double(&w, s);
        int rc = ckpt_fail(c->err, "PyTorch", CKPT_E_TORCH_STEP, CKPT_NONE, 0, "%s: step %s is not a step count", label,
                           w.data ? w.data : "");
        sb_free(&w);
        return rc;
    }
    *step = s;
    return 0;
}

/* A group's values (format.md 10.3) through `get`: a group dict's key, or form F's
 * `param_groups.{fqn}.{key}` of its first member. */
typedef size_t (*group_get)(const tctx *c, const void *at, const char *key);

static void read_group(const tctx *c, ckpt_torch_group *gr, group_get get, const void *at)
{
    const ckpt_pickle *p = c->t->pickle;
    double x;
    if (torch_number_of(c, get(c, at, "lr"), &x)) gr->has |= CKPT_TG_LR, gr->lr = x;
    if (torch_number_of(c, get(c, at, "eps"), &x)) gr->has |= CKPT_TG_EPS, gr->eps = x;
    if (torch_number_of(c, get(c, at, "weight_decay"), &x)) gr->has |= CKPT_TG_WEIGHT_DECAY, gr->weight_decay = x;
    size_t b = get(c, at, "betas");
    if (torch_is_seq(c, b) && N(c, b)->count == 2 && torch_number_of(c, ckpt_pickle_item(p, b, 0), &gr->beta1) &&
        torch_number_of(c, ckpt_pickle_item(p, b, 1), &gr->beta2))
        gr->has |= CKPT_TG_BETAS;
    static const struct {
        const char *name;
        unsigned bit;
    } flags[] = {
        {"amsgrad", CKPT_TG_AMSGRAD}, {"maximize", CKPT_TG_MAXIMIZE}, {"decoupled_weight_decay", CKPT_TG_DECOUPLED}};
    for (size_t f = 0; f < 3; f++) {
        size_t v = get(c, at, flags[f].name);
        if (v == CKPT_PNIL || N(c, v)->kind != CKPT_PK_BOOL) continue;
        gr->has |= flags[f].bit;
        bool on = N(c, v)->truth;
        if (f == 0) gr->amsgrad = on;
        else if (f == 1) gr->maximize = on;
        else gr->decoupled = on;
    }
}

static size_t group_dict_get(const tctx *c, const void *at, const char *key)
{
    return torch_dict_get(c, *(const size_t *)at, key);
}

static int push_string(tctx *c, const ckpt_pnode *charge, const char *s, size_t len, size_t *at)
{
    ckpt_torch *t = c->t;
    TRY(torch_charge(c, charge, 1 + len / 8));
    if (!ckpt_grow((void **)&t->strings, &t->caps[CAP_SR], t->strings_len + 1, sizeof *t->strings))
        return ckpt_fail_oom(c->err);
    if (!(t->strings[t->strings_len] = torch_dup_span(s, len))) return ckpt_fail_oom(c->err);
    *at = t->strings_len++;
    return 0;
}

static int push_int(tctx *c, const ckpt_pnode *charge, int64_t v)
{
    ckpt_torch *t = c->t;
    if (!ckpt_grow((void **)&t->ints, &t->caps[CAP_IN], t->ints_len + 1, sizeof *t->ints)) return ckpt_fail_oom(c->err);
    TRY(torch_charge(c, charge, 1));
    t->ints[t->ints_len++] = v;
    return 0;
}

/* A key (len bytes at s, inside the pickle's bytes) and its value node, as stored. */
static int push_kv(tctx *c, const ckpt_pnode *charge, const char *s, size_t len, size_t value)
{
    ckpt_torch *t = c->t;
    TRY(torch_charge(c, charge, 1));
    if (!PUSH(t, kvs, kvs_len, CAP_KV)) return ckpt_fail_oom(c->err);
    t->kvs[t->kvs_len++] = (ckpt_torch_kv){(uint32_t)(s - (const char *)t->pickle->data), (uint32_t)len, value};
    return 0;
}

static int begin_optimizer(tctx *c, size_t k, ckpt_torch_keying keying, size_t *oi)
{
    ckpt_torch *t = c->t;
    if (!PUSH(t, optimizers, optimizers_len, CAP_OP)) return ckpt_fail_oom(c->err);
    TRY(torch_charge(c, N(c, k), 1 + c->path.len / 8));
    ckpt_torch_optimizer *o = &t->optimizers[t->optimizers_len];
    memset(o, 0, sizeof *o);
    o->path = torch_path_dup(c);
    if (!o->path) return ckpt_fail_oom(c->err);
    o->keying = keying;
    o->groups = t->groups_len;
    o->entries = t->entries_len;
    *oi = t->optimizers_len++;
    return 0;
}

static int begin_group(tctx *c, const ckpt_pnode *charge, uint64_t units, ckpt_torch_group **out)
{
    ckpt_torch *t = c->t;
    TRY(torch_charge(c, charge, units));
    if (!PUSH(t, groups, groups_len, CAP_GR)) return ckpt_fail_oom(c->err);
    ckpt_torch_group *gr = &t->groups[t->groups_len];
    memset(gr, 0, sizeof *gr);
    gr->params = t->ints_len;
    gr->names = t->strings_len;
    *out = gr;
    return 0;
}

/* kind: the groups' decoupled_weight_decay, when all have it and agree */
static void decide_kind(ckpt_torch *t, ckpt_torch_optimizer *o)
{
    unsigned yes = 0, no = 0;
    for (size_t g = o->groups; g < o->groups + o->groups_len; g++)
        if (t->groups[g].has & CKPT_TG_DECOUPLED) {
            if (t->groups[g].decoupled) yes++;
            else no++;
        }
    o->kind = o->groups_len && yes == o->groups_len  ? CKPT_TORCH_KIND_ADAMW
              : o->groups_len && no == o->groups_len ? CKPT_TORCH_KIND_ADAM
                                                     : CKPT_TORCH_KIND_UNKNOWN;
}

static int begin_entry(tctx *c, size_t oi, const ckpt_pnode *charge, int64_t index, size_t name, size_t group,
                       size_t *ei)
{
    ckpt_torch *t = c->t;
    TRY(torch_charge(c, charge, 1 + (uint64_t)charge->count)); /* and its state */
    if (!PUSH(t, entries, entries_len, CAP_EN)) return ckpt_fail_oom(c->err);
    ckpt_torch_entry *e = &t->entries[t->entries_len];
    memset(e, 0, sizeof *e);
    e->index = index;
    e->name = name;
    e->group = group;
    e->exp_avg = e->exp_avg_sq = e->max_exp_avg_sq = CKPT_TORCH_NONE;
    e->other = t->named_len;
    e->kv = t->kvs_len;
    *ei = t->entries_len++;
    t->optimizers[oi].entries_len++;
    return 0;
}

/* One state value of entry ei, its key `key` (len bytes): the step, a moment, or another state
 * listed by name. A name-keyed entry's other state comes in order, so `other` stays a run. */
static int put_state(tctx *c, size_t ei, const char *key, size_t len, size_t v)
{
    ckpt_torch *t = c->t;
    ckpt_torch_entry *e = &t->entries[ei];
    if (len == 4 && !memcmp(key, "step", 4)) {
        char label[32];
        const char *l = label;
        if (e->name != CKPT_TORCH_NONE) l = t->strings[e->name];
        else snprintf(label, sizeof label, "index %lld", (long long)e->index);
        double st = 0;
        TRY(read_step(c, l, v, &st));
        t->entries[ei].has_step = true;
        t->entries[ei].step = st;
        return 0;
    }
    size_t x = CKPT_TORCH_NONE;
    TRY(torch_tensor_of(c, v, &x));
#define IS(s) (len == sizeof s - 1 && !memcmp(key, s, len))
    size_t *slot = IS("exp_avg")          ? &t->entries[ei].exp_avg
                   : IS("exp_avg_sq")     ? &t->entries[ei].exp_avg_sq
                   : IS("max_exp_avg_sq") ? &t->entries[ei].max_exp_avg_sq
                                          : NULL;
#undef IS
    double num = 0;
    if (slot && x != CKPT_TORCH_NONE) *slot = x;
    else if (x != CKPT_TORCH_NONE || torch_number_of(c, v, &num)) {
        TRY(add_named(c, key, len, x, num));
        t->entries[ei].other_len++;
    }
    return 0;
}

/* A name -> its position in the groups' lists (the first listing) and its group. */
typedef struct name_at {
    const char *s;
    size_t len;
    int64_t pos;
    size_t group;
} name_at;

static int cmp_name_at(const void *a, const void *b)
{
    const name_at *x = a, *y = b;
    size_t m = x->len < y->len ? x->len : y->len;
    int r = memcmp(x->s, y->s, m);
    if (r) return r;
    if (x->len != y->len) return x->len < y->len ? -1 : 1;
    return x->pos < y->pos ? -1 : x->pos > y->pos;
}

static const name_at *find_name(const name_at *v, size_t n, const char *s, size_t len)
{
    size_t lo = 0, hi = n;
    name_at key = {s, len, INT64_MIN, 0};
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (cmp_name_at(&v[mid], &key) < 0) lo = mid + 1;
        else hi = mid;
    }
    return lo < n && v[lo].len == len && !memcmp(v[lo].s, s, len) ? &v[lo] : NULL;
}

static int add_optimizer(tctx *c, size_t k, bool named)
{
    ckpt_torch *t = c->t;
    const ckpt_pickle *p = t->pickle;
    size_t oi;
    TRY(begin_optimizer(c, k, named ? CKPT_TORCH_KEYED_NAMES : CKPT_TORCH_KEYED_IDS, &oi));
    /* groups */
    size_t groups = torch_dict_get(c, k, "param_groups"), pairs = 0;
    int64_t pos = 0;
    for (uint32_t cell = N(c, groups)->first; cell != CKPT_PNIL; cell = p->cells[cell].next) {
        size_t g = p->cells[cell].node;
        ckpt_torch_group *gr = NULL;
        TRY(begin_group(c, N(c, g), 1 + (uint64_t)N(c, g)->count, &gr)); /* and its keys, looked up below */
        read_group(c, gr, group_dict_get, &g);
        gr->kv = t->kvs_len;
        {
            dict_it gi;
            size_t gk, gv;
            torch_dict_begin(&gi, c, g);
            while (torch_dict_next(&gi, &gk, &gv)) {
                const ckpt_pnode *kn = N(c, gk);
                if (kn->kind != CKPT_PK_STR || torch_str_is(c, gk, "params")) continue;
                TRY(push_kv(c, N(c, g), span(c, kn), kn->len, gv));
                t->groups[t->groups_len].kv_len++;
            }
        }
        gr = &t->groups[t->groups_len];
        size_t params = torch_dict_get(c, g, "params");
        for (uint32_t pc = N(c, params)->first; pc != CKPT_PNIL; pc = p->cells[pc].next) {
            const ckpt_pnode *v = N(c, p->cells[pc].node);
            if (named) {
                size_t at;
                TRY(push_string(c, N(c, params), span(c, v), v->len, &at));
                t->groups[t->groups_len].names_len++;
            }
            TRY(push_int(c, N(c, params), named ? pos++ : v->i));
            t->groups[t->groups_len].params_len++;
        }
        gr = &t->groups[t->groups_len];
        pairs += gr->params_len;
        size_t names = torch_dict_get(c, g, "param_names");
        if (!named && torch_is_seq(c, names)) {
            gr->has |= CKPT_TG_PARAM_NAMES;
            for (uint32_t nc = N(c, names)->first; nc != CKPT_PNIL; nc = p->cells[nc].next) {
                const ckpt_pnode *s = N(c, p->cells[nc].node);
                size_t at;
                TRY(push_string(c, N(c, names), s->kind == CKPT_PK_STR ? span(c, s) : "",
                                s->kind == CKPT_PK_STR ? s->len : 0, &at));
                t->groups[t->groups_len].names_len++;
            }
        }
        t->groups_len++;
        t->optimizers[oi].groups_len++;
    }
    ckpt_torch_optimizer *o = &t->optimizers[oi];
    decide_kind(t, o);
    /* index (or name) -> group */
    idx_group *map = named ? NULL : malloc((pairs ? pairs : 1) * sizeof *map);
    name_at *nmap = named ? malloc((pairs ? pairs : 1) * sizeof *nmap) : NULL;
    if (!map && !nmap) return ckpt_fail_oom(c->err);
    size_t mlen = 0;
    for (size_t g = 0; g < o->groups_len; g++) {
        const ckpt_torch_group *gr = &t->groups[o->groups + g];
        for (size_t j = 0; j < gr->params_len; j++, mlen++) {
            if (named) {
                const char *s = t->strings[gr->names + j];
                nmap[mlen] = (name_at){s, strlen(s), t->ints[gr->params + j], g};
            } else map[mlen] = (idx_group){t->ints[gr->params + j], g};
        }
    }
    if (named) qsort(nmap, mlen, sizeof *nmap, cmp_name_at);
    else qsort(map, mlen, sizeof *map, cmp_idx);
    /* the state */
    size_t state = torch_dict_get(c, k, "state");
    dict_it it;
    size_t key, value;
    torch_dict_begin(&it, c, state);
    int rc = 0;
    while (!rc && torch_dict_next(&it, &key, &value)) {
        size_t mark = torch_path_push_key(c, key);
        const ckpt_pnode *kn = N(c, key);
        int64_t index = kn->i;
        size_t group = CKPT_TORCH_NONE, name = CKPT_TORCH_NONE;
        if (named) {
            const name_at *hit = find_name(nmap, mlen, span(c, kn), kn->len);
            if (hit) index = hit->pos, group = hit->group;
            else index = pos++; /* listed by no group: numbered after the groups' */
            rc = push_string(c, kn, span(c, kn), kn->len, &name);
        } else {
            size_t lo = 0, hi = mlen;
            while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                if (map[mid].index < index) lo = mid + 1;
                else hi = mid;
            }
            if (lo < mlen && map[lo].index == index) group = map[lo].group;
        }
        size_t ei = 0;
        if (!rc) rc = begin_entry(c, oi, N(c, value), index, name, group, &ei);
        dict_it si;
        size_t sk, sv;
        if (!rc) torch_dict_begin(&si, c, value);
        while (!rc && torch_dict_next(&si, &sk, &sv)) {
            const ckpt_pnode *skn = N(c, sk);
            if (skn->kind != CKPT_PK_STR) continue;
            size_t m2 = torch_path_push_key(c, sk);
            rc = put_state(c, ei, span(c, skn), skn->len, sv);
            torch_path_pop(c, m2);
            if (!rc) rc = push_kv(c, skn, span(c, skn), skn->len, sv);
            if (!rc) t->entries[ei].kv_len++;
        }
        torch_path_pop(c, mark);
    }
    free(map);
    free(nmap);
    return rc;
}

/* ---- form F: flat keys (torch's flatten_optimizer_state_dict; docs/pytorch.md) ---- */

/* One `param_groups.{fqn}.{key}` value. */
typedef struct flat_gv {
    const char *fqn, *key;
    size_t fqn_len, key_len;
    size_t value; /* node */
    size_t pos;   /* in the dict */
    size_t key_node;
} flat_gv;

static int cmp_gv(const void *a, const void *b)
{
    const flat_gv *x = a, *y = b;
    size_t m = x->fqn_len < y->fqn_len ? x->fqn_len : y->fqn_len;
    int r = memcmp(x->fqn, y->fqn, m);
    if (r) return r;
    if (x->fqn_len != y->fqn_len) return x->fqn_len < y->fqn_len ? -1 : 1;
    return x->pos < y->pos ? -1 : x->pos > y->pos;
}

/* Two values equal as stored, floats bit for bit (form F's groups), depth bounded. */
static bool same_value(const tctx *c, size_t a, size_t b, unsigned depth)
{
    if (a == b) return true;
    if (a == CKPT_PNIL || b == CKPT_PNIL || depth > 8) return false;
    const ckpt_pnode *x = N(c, a), *y = N(c, b);
    if (x->kind != y->kind) return false;
    switch (x->kind) {
        case CKPT_PK_NONE: return true;
        case CKPT_PK_BOOL: return x->truth == y->truth;
        case CKPT_PK_INT: return x->i == y->i;
        case CKPT_PK_FLOAT: return !memcmp(&x->f, &y->f, sizeof x->f);
        case CKPT_PK_STR:
        case CKPT_PK_BYTES:
        case CKPT_PK_BIGINT: return x->len == y->len && x->flags == y->flags && !memcmp(span(c, x), span(c, y), x->len);
        case CKPT_PK_TUPLE:
        case CKPT_PK_LIST: {
            if (x->count != y->count) return false;
            const ckpt_pickle *p = c->t->pickle;
            for (uint32_t i = x->first, j = y->first; i != CKPT_PNIL && j != CKPT_PNIL;
                 i = p->cells[i].next, j = p->cells[j].next)
                if (!same_value(c, p->cells[i].node, p->cells[j].node, depth + 1)) return false;
            return true;
        }
        default: return false; /* another object: equal only as the same node */
    }
}

static uint64_t value_hash(const tctx *c, size_t a, unsigned depth)
{
    if (a == CKPT_PNIL || depth > 8) return 0;
    const ckpt_pnode *x = N(c, a);
    uint64_t h = 0x9e3779b97f4a7c15ull * (x->kind + 1u);
    switch (x->kind) {
        case CKPT_PK_BOOL: return h ^ x->truth;
        case CKPT_PK_INT: return h ^ (uint64_t)x->i;
        case CKPT_PK_FLOAT: {
            uint64_t bits;
            memcpy(&bits, &x->f, sizeof bits);
            return h ^ bits;
        }
        case CKPT_PK_STR:
        case CKPT_PK_BYTES:
        case CKPT_PK_BIGINT: return h ^ torch_hash_bytes(span(c, x), x->len);
        case CKPT_PK_TUPLE:
        case CKPT_PK_LIST: {
            const ckpt_pickle *p = c->t->pickle;
            for (uint32_t i = x->first; i != CKPT_PNIL; i = p->cells[i].next)
                h = (h ^ value_hash(c, p->cells[i].node, depth + 1)) * 1099511628211ull;
            return h;
        }
        case CKPT_PK_NONE: return h;
        default: return h ^ a; /* by identity, as same_value compares it */
    }
}

/* The group values of one FQN: a run [first, first + len) of the sorted flat_gv array. */
typedef struct flat_fqn {
    size_t first, len;
    size_t pos; /* its first key's place in the dict */
    uint64_t hash;
    size_t group; /* its group, once formed */
} flat_fqn;

static bool same_groups(const tctx *c, const flat_gv *gv, const flat_fqn *a, const flat_fqn *b)
{
    if (a->len != b->len || a->hash != b->hash) return false;
    for (size_t i = 0; i < a->len; i++) {
        const flat_gv *x = &gv[a->first + i];
        bool found = false;
        for (size_t j = 0; j < b->len && !found; j++) {
            const flat_gv *y = &gv[b->first + j];
            found =
                x->key_len == y->key_len && !memcmp(x->key, y->key, x->key_len) && same_value(c, x->value, y->value, 0);
        }
        if (!found) return false;
    }
    return true;
}

static int cmp_fqn_pos(const void *a, const void *b)
{
    const flat_fqn *x = a, *y = b;
    return x->pos < y->pos ? -1 : x->pos > y->pos;
}

typedef struct hash_pos {
    uint64_t hash;
    size_t fqn; /* into the fqns, ordered by first place */
} hash_pos;

static int cmp_hash_pos(const void *a, const void *b)
{
    const hash_pos *x = a, *y = b;
    if (x->hash != y->hash) return x->hash < y->hash ? -1 : 1;
    return x->fqn < y->fqn ? -1 : x->fqn > y->fqn;
}

typedef struct flat_get_at {
    const flat_gv *gv;
    const flat_fqn *f;
} flat_get_at;

static size_t flat_get(const tctx *c, const void *at, const char *key)
{
    (void)c;
    const flat_get_at *g = at;
    size_t l = strlen(key);
    for (size_t i = 0; i < g->f->len; i++) {
        const flat_gv *x = &g->gv[g->f->first + i];
        if (x->key_len == l && !memcmp(x->key, key, l)) return x->value;
    }
    return CKPT_PNIL;
}

/* Form F: entries from `state.{fqn}.{key}` in dict order (one entry per FQN, at its first key);
 * groups the largest sets of FQNs with equal group values, in order of their first member in the
 * dict (the pairing puts them in module order). */
static int add_flat_optimizer(tctx *c, size_t k)
{
    ckpt_torch *t = c->t;
    size_t oi;
    TRY(begin_optimizer(c, k, CKPT_TORCH_KEYED_FLAT, &oi));
    size_t total = 0; /* the keys: a bound on the FQNs and their group values */
    {
        dict_it it;
        size_t key, value;
        torch_dict_begin(&it, c, k);
        while (torch_dict_next(&it, &key, &value)) total++;
    }
    flat_gv *gv = malloc((total ? total : 1) * sizeof *gv);
    flat_gv *sv = malloc((total ? total : 1) * sizeof *sv);
    flat_fqn *fq = malloc((total ? total : 1) * sizeof *fq);
    hash_pos *hp = malloc((total ? total : 1) * sizeof *hp);
    int rc = gv && sv && fq && hp ? 0 : ckpt_fail_oom(c->err);
    size_t ng = 0, ns = 0, nf = 0;
    /* the keys split: state values and group values, each with its place in the dict */
    dict_it it;
    size_t key, value, pos = 0;
    if (!rc) torch_dict_begin(&it, c, k);
    while (!rc && torch_dict_next(&it, &key, &value)) {
        const ckpt_pnode *kn = N(c, key);
        bool st = has_prefix(c, key, "state.");
        size_t skip = st ? 6 : 13;
        const char *rest = span(c, kn) + skip;
        size_t rl = kn->len - skip, dot = last_dot(rest, rl);
        flat_gv x = {rest, rest + dot + 1, dot, rl - dot - 1, value, pos++, key};
        if (st) sv[ns++] = x;
        else gv[ng++] = x;
    }
    /* the entries: one per FQN, in the order of its first state key, its keys in dict order
     * (a sort by FQN, then by place: memory and time grow with the keys, not their square) */
    if (!rc) qsort(sv, ns, sizeof *sv, cmp_gv);
    for (size_t i = 0; !rc && i < ns;) {
        size_t j = i + 1;
        while (j < ns && sv[j].fqn_len == sv[i].fqn_len && !memcmp(sv[j].fqn, sv[i].fqn, sv[i].fqn_len)) j++;
        fq[nf++] = (flat_fqn){i, j - i, sv[i].pos, 0, CKPT_TORCH_NONE};
        i = j;
    }
    if (!rc) qsort(fq, nf, sizeof *fq, cmp_fqn_pos);
    for (size_t f = 0; !rc && f < nf; f++) {
        const flat_gv *first = &sv[fq[f].first];
        size_t name, ei = 0;
        rc = push_string(c, N(c, first->key_node), first->fqn, first->fqn_len, &name);
        if (!rc) rc = begin_entry(c, oi, N(c, first->key_node), (int64_t)f, name, CKPT_TORCH_NONE, &ei);
        for (size_t q = 0; !rc && q < fq[f].len; q++) {
            const flat_gv *x = &sv[fq[f].first + q];
            size_t mark = torch_path_push_key(c, x->key_node);
            rc = put_state(c, ei, x->key, x->key_len, x->value);
            torch_path_pop(c, mark);
            if (!rc) rc = push_kv(c, N(c, x->key_node), x->key, x->key_len, x->value);
            if (!rc) t->entries[ei].kv_len++;
        }
    }
    nf = 0;
    /* the FQNs of the group values, each a run of the sorted array */
    if (!rc) qsort(gv, ng, sizeof *gv, cmp_gv);
    for (size_t i = 0; !rc && i < ng;) {
        size_t j = i + 1, first_pos = gv[i].pos;
        while (j < ng && gv[j].fqn_len == gv[i].fqn_len && !memcmp(gv[j].fqn, gv[i].fqn, gv[i].fqn_len)) {
            if (gv[j].pos < first_pos) first_pos = gv[j].pos;
            j++;
        }
        uint64_t h = 0;
        for (size_t q = i; q < j; q++) /* order-free: a sum over the keys */
            h += (torch_hash_bytes(gv[q].key, gv[q].key_len) * 31) ^ value_hash(c, gv[q].value, 0);
        fq[nf++] = (flat_fqn){i, j - i, first_pos, h, CKPT_TORCH_NONE};
        i = j;
    }
    if (!rc) qsort(fq, nf, sizeof *fq, cmp_fqn_pos);
    for (size_t i = 0; !rc && i < nf; i++) hp[i] = (hash_pos){fq[i].hash, i};
    if (!rc) qsort(hp, nf, sizeof *hp, cmp_hash_pos);
    /* each FQN joins the group of the earliest FQN of equal values, else begins one */
    size_t groups = 0;
    for (size_t i = 0; !rc && i < nf; i++) {
        size_t lo = 0, hi = nf;
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            if (hp[mid].hash < fq[i].hash) lo = mid + 1;
            else hi = mid;
        }
        for (size_t q = lo; q < nf && hp[q].hash == fq[i].hash && hp[q].fqn < i && fq[i].group == CKPT_TORCH_NONE;
             q++) {
            const flat_fqn *r = &fq[hp[q].fqn];
            if (r->group != CKPT_TORCH_NONE && same_groups(c, gv, &fq[i], r)) fq[i].group = r->group;
        }
        if (fq[i].group != CKPT_TORCH_NONE) continue;
        fq[i].group = groups++;
        ckpt_torch_group *gr = NULL;
        rc = begin_group(c, N(c, k), 1 + fq[i].len, &gr);
        if (rc) break;
        flat_get_at at = {gv, &fq[i]};
        read_group(c, gr, flat_get, &at);
        gr->kv = t->kvs_len;
        for (size_t q = 0; !rc && q < fq[i].len; q++) {
            const flat_gv *x = &gv[fq[i].first + q];
            rc = push_kv(c, N(c, k), x->key, x->key_len, x->value);
            if (!rc) t->groups[t->groups_len].kv_len++;
        }
        if (rc) break;
        t->groups_len++;
        t->optimizers[oi].groups_len++;
    }
    /* each group's FQNs, in the dict's order: positions numbered group after group */
    int64_t number = 0;
    for (size_t g = 0; !rc && g < groups; g++) {
        ckpt_torch_group *gr = &t->groups[t->optimizers[oi].groups + g];
        gr->params = t->ints_len;
        gr->names = t->strings_len;
        for (size_t i = 0; !rc && i < nf; i++) {
            if (fq[i].group != g) continue;
            const flat_gv *x = &gv[fq[i].first];
            size_t at;
            rc = push_string(c, N(c, k), x->fqn, x->fqn_len, &at);
            if (!rc) rc = push_int(c, N(c, k), number++);
            if (!rc) gr->params_len++, gr->names_len++;
        }
    }
    /* entries onto their groups and positions */
    ckpt_torch_optimizer *o = &t->optimizers[oi];
    name_at *nmap = rc ? NULL : malloc((nf ? nf : 1) * sizeof *nmap);
    if (!rc && !nmap) rc = ckpt_fail_oom(c->err);
    size_t mlen = 0;
    for (size_t g = 0; !rc && g < o->groups_len; g++) {
        const ckpt_torch_group *gr = &t->groups[o->groups + g];
        for (size_t j = 0; j < gr->names_len; j++) {
            const char *nm = t->strings[gr->names + j];
            nmap[mlen++] = (name_at){nm, strlen(nm), t->ints[gr->params + j], g};
        }
    }
    if (!rc) qsort(nmap, mlen, sizeof *nmap, cmp_name_at);
    for (size_t e = o->entries; !rc && e < o->entries + o->entries_len; e++) {
        ckpt_torch_entry *en = &t->entries[e];
        const char *nm = t->strings[en->name];
        const name_at *hit = find_name(nmap, mlen, nm, strlen(nm));
        if (hit) en->index = hit->pos, en->group = hit->group;
        else en->index = number++;
    }
    free(nmap);
    if (!rc) decide_kind(t, o);
    free(gv);
    free(sv);
    free(fq);
    free(hp);
    return rc;
}

int torch_search(tctx *c, size_t k, unsigned depth)
{
    if (k == CKPT_PNIL || depth >= CKPT_PICKLE_MAX_DEPTH) return 0;
    const ckpt_pnode *n = N(c, k);
    if (n->kind < CKPT_PK_TUPLE) return 0;
    size_t x;
    TRY(torch_tensor_of(c, k, &x));
    if (c->seen[k] & SEEN) return 0;
    c->seen[k] |= SEEN;
    if (x != CKPT_TORCH_NONE) { /* a tensor of no state dict: listed with its path */
        ckpt_torch *t = c->t;
        if (!PUSH(t, loose, loose_len, CAP_LO)) return ckpt_fail_oom(c->err);
        t->loose[t->loose_len] = t->named_len;
        TRY(add_named(c, c->path.data ? c->path.data : "", c->path.len, x, 0));
        t->loose_len++;
        return 0;
    }
    const ckpt_pickle *p = c->t->pickle;
    if (torch_is_dict(c, k)) {
        bool named;
        if (is_optimizer(c, k, &named)) return add_optimizer(c, k, named);
        if (is_flat_optimizer(c, k)) return add_flat_optimizer(c, k);
        bool model;
        TRY(is_model(c, k, &model));
        if (model) return add_model(c, k);
        dict_it it;
        size_t key, value;
        torch_dict_begin(&it, c, k);
        while (torch_dict_next(&it, &key, &value)) {
            size_t mark = torch_path_push_key(c, key);
            int rc = torch_search(c, value, depth + 1);
            torch_path_pop(c, mark);
            TRY(rc);
        }
        return 0;
    }
    if (n->kind == CKPT_PK_PERSID) return 0;
    size_t j = 0;
    bool indexed = n->kind == CKPT_PK_LIST || n->kind == CKPT_PK_TUPLE;
    if (!indexed) { /* an opaque object: its arguments and state, on the same path */
        TRY(torch_search(c, n->b, depth + 1));
        TRY(torch_search(c, n->c, depth + 1));
        if (n->kind == CKPT_PK_BUILD) TRY(torch_search(c, n->a, depth + 1));
    }
    for (uint32_t cell = n->first; cell != CKPT_PNIL; cell = p->cells[cell].next, j++) {
        size_t mark = indexed ? torch_path_push_index(c, j) : c->path.len;
        int rc = torch_search(c, p->cells[cell].node, depth + 1);
        torch_path_pop(c, mark);
        TRY(rc);
    }
    return 0;
}
