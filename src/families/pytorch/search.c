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

/* seen[k]: SEEN once the torch_search expanded node k, VALID once k passed as an optimizer's state dict
 * or group (a value the memo shares is checked once) */
enum { SEEN = 1, VALID = 2 };

static bool is_optimizer(tctx *c, size_t k)
{
    size_t state = torch_dict_get(c, k, "state"), groups = torch_dict_get(c, k, "param_groups");
    if (!torch_is_dict(c, state) || !torch_is_seq(c, groups) || N(c, groups)->kind != CKPT_PK_LIST) return false;
    if (!(c->seen[state] & VALID)) {
        dict_it it;
        size_t key, value;
        torch_dict_begin(&it, c, state);
        while (torch_dict_next(&it, &key, &value))
            if (N(c, key)->kind != CKPT_PK_INT || !torch_is_dict(c, value)) return false;
        c->seen[state] |= VALID;
    }
    const ckpt_pickle *p = c->t->pickle;
    for (uint32_t cell = N(c, groups)->first; cell != CKPT_PNIL; cell = p->cells[cell].next) {
        size_t g = p->cells[cell].node;
        if (c->seen[g] & VALID) continue;
        if (!torch_is_dict(c, g) || !is_int_list(c, torch_dict_get(c, g, "params"))) return false;
        c->seen[g] |= VALID;
    }
    return true;
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

static int read_step(tctx *c, int64_t index, size_t v, double *step)
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
                             "index %lld: step is a tensor of %llu elements of \"%s\", not a step count",
                             (long long)index, (unsigned long long)tx->count, tx->dtype);
        uint8_t b[8];
        TRY(ckpt_read_at(c->src, tx->at, b, tx->width, "a step", c->err));
        if (f32) {
            float f;
            memcpy(&f, b, 4);
            s = f;
        } else memcpy(&s, b, 8);
    } else if (!torch_number_of(c, v, &s) || N(c, v)->kind == CKPT_PK_BOOL) {
        return ckpt_fail(c->err, "PyTorch", CKPT_E_TORCH_STEP, CKPT_NONE, 0,
                         "index %lld: step is neither a number nor a tensor, not a step count", (long long)index);
    }
    if (!(s >= 0) || !isfinite(s) || s != floor(s)) {
        strbuf w = {0};
        if (isnan(s)) sb_puts(&w, "nan");
        else if (isinf(s)) sb_puts(&w, s > 0 ? "inf" : "-inf");
        else j_double(&w, s);
        int rc = ckpt_fail(c->err, "PyTorch", CKPT_E_TORCH_STEP, CKPT_NONE, 0,
                           "index %lld: step %s is not a step count", (long long)index, w.data ? w.data : "");
        sb_free(&w);
        return rc;
    }
    *step = s;
    return 0;
}

static int add_optimizer(tctx *c, size_t k)
{
    ckpt_torch *t = c->t;
    const ckpt_pickle *p = t->pickle;
    if (!PUSH(t, optimizers, optimizers_len, CAP_OP)) return ckpt_fail_oom(c->err);
    TRY(torch_charge(c, N(c, k), 1 + c->path.len / 8));
    ckpt_torch_optimizer *o = &t->optimizers[t->optimizers_len];
    o->path = torch_path_dup(c);
    if (!o->path) return ckpt_fail_oom(c->err);
    o->groups = t->groups_len;
    o->groups_len = 0;
    o->entries = t->entries_len;
    o->entries_len = 0;
    size_t oi = t->optimizers_len++;
    /* groups */
    size_t groups = torch_dict_get(c, k, "param_groups"), pairs = 0;
    for (uint32_t cell = N(c, groups)->first; cell != CKPT_PNIL; cell = p->cells[cell].next) {
        size_t g = p->cells[cell].node;
        TRY(torch_charge(c, N(c, g), 1 + (uint64_t)N(c, g)->count)); /* and its keys, looked up below */
        if (!PUSH(t, groups, groups_len, CAP_GR)) return ckpt_fail_oom(c->err);
        ckpt_torch_group *gr = &t->groups[t->groups_len];
        memset(gr, 0, sizeof *gr);
        double x;
        if (torch_number_of(c, torch_dict_get(c, g, "lr"), &x)) gr->has |= CKPT_TG_LR, gr->lr = x;
        if (torch_number_of(c, torch_dict_get(c, g, "eps"), &x)) gr->has |= CKPT_TG_EPS, gr->eps = x;
        if (torch_number_of(c, torch_dict_get(c, g, "weight_decay"), &x))
            gr->has |= CKPT_TG_WEIGHT_DECAY, gr->weight_decay = x;
        size_t b = torch_dict_get(c, g, "betas");
        if (torch_is_seq(c, b) && N(c, b)->count == 2 && torch_number_of(c, ckpt_pickle_item(p, b, 0), &gr->beta1) &&
            torch_number_of(c, ckpt_pickle_item(p, b, 1), &gr->beta2))
            gr->has |= CKPT_TG_BETAS;
        static const struct {
            const char *name;
            unsigned bit;
        } flags[] = {{"amsgrad", CKPT_TG_AMSGRAD},
                     {"maximize", CKPT_TG_MAXIMIZE},
                     {"decoupled_weight_decay", CKPT_TG_DECOUPLED}};
        for (size_t f = 0; f < 3; f++) {
            size_t v = torch_dict_get(c, g, flags[f].name);
            if (v == CKPT_PNIL || N(c, v)->kind != CKPT_PK_BOOL) continue;
            gr->has |= flags[f].bit;
            bool on = N(c, v)->truth;
            if (f == 0) gr->amsgrad = on;
            else if (f == 1) gr->maximize = on;
            else gr->decoupled = on;
        }
        gr->params = t->ints_len;
        size_t params = torch_dict_get(c, g, "params");
        for (uint32_t pc = N(c, params)->first; pc != CKPT_PNIL; pc = p->cells[pc].next) {
            if (!ckpt_grow((void **)&t->ints, &t->caps[CAP_IN], t->ints_len + 1, sizeof *t->ints))
                return ckpt_fail_oom(c->err);
            TRY(torch_charge(c, N(c, params), 1));
            t->ints[t->ints_len++] = N(c, p->cells[pc].node)->i;
            gr->params_len++;
        }
        pairs += gr->params_len;
        size_t names = torch_dict_get(c, g, "param_names");
        if (torch_is_seq(c, names)) {
            gr->has |= CKPT_TG_PARAM_NAMES;
            gr->names = t->strings_len;
            for (uint32_t nc = N(c, names)->first; nc != CKPT_PNIL; nc = p->cells[nc].next) {
                const ckpt_pnode *s = N(c, p->cells[nc].node);
                TRY(torch_charge(c, N(c, names), 1 + s->len / 8));
                if (!ckpt_grow((void **)&t->strings, &t->caps[CAP_SR], t->strings_len + 1, sizeof *t->strings))
                    return ckpt_fail_oom(c->err);
                t->strings[t->strings_len] =
                    s->kind == CKPT_PK_STR ? torch_dup_span(span(c, s), s->len) : torch_dup_span("", 0);
                if (!t->strings[t->strings_len]) return ckpt_fail_oom(c->err);
                t->strings_len++;
                gr->names_len++;
            }
        }
        t->groups_len++;
        t->optimizers[oi].groups_len++;
    }
    /* kind: the groups' decoupled_weight_decay, when all have it and agree */
    o = &t->optimizers[oi];
    unsigned yes = 0, no = 0;
    for (size_t g = o->groups; g < o->groups + o->groups_len; g++)
        if (t->groups[g].has & CKPT_TG_DECOUPLED) {
            if (t->groups[g].decoupled) yes++;
            else no++;
        }
    o->kind = o->groups_len && yes == o->groups_len  ? CKPT_TORCH_KIND_ADAMW
              : o->groups_len && no == o->groups_len ? CKPT_TORCH_KIND_ADAM
                                                     : CKPT_TORCH_KIND_UNKNOWN;
    /* index -> group */
    idx_group *map = malloc((pairs ? pairs : 1) * sizeof *map);
    if (!map) return ckpt_fail_oom(c->err);
    size_t mlen = 0;
    for (size_t g = 0; g < o->groups_len; g++) {
        const ckpt_torch_group *gr = &t->groups[o->groups + g];
        for (size_t j = 0; j < gr->params_len; j++) map[mlen++] = (idx_group){t->ints[gr->params + j], g};
    }
    qsort(map, mlen, sizeof *map, cmp_idx);
    /* the state */
    size_t state = torch_dict_get(c, k, "state");
    dict_it it;
    size_t key, value;
    torch_dict_begin(&it, c, state);
    int rc = 0;
    while (!rc && torch_dict_next(&it, &key, &value)) {
        size_t mark = torch_path_push_key(c, key);
        if ((rc = torch_charge(c, N(c, value), 1 + (uint64_t)N(c, value)->count))) break; /* and its state */
        if (!PUSH(t, entries, entries_len, CAP_EN)) {
            rc = ckpt_fail_oom(c->err);
            break;
        }
        ckpt_torch_entry *e = &t->entries[t->entries_len];
        memset(e, 0, sizeof *e);
        e->index = N(c, key)->i;
        e->group = CKPT_TORCH_NONE;
        e->exp_avg = e->exp_avg_sq = e->max_exp_avg_sq = CKPT_TORCH_NONE;
        e->other = t->named_len;
        size_t lo = 0, hi = mlen;
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            if (map[mid].index < e->index) lo = mid + 1;
            else hi = mid;
        }
        if (lo < mlen && map[lo].index == e->index) e->group = map[lo].group;
        size_t ei = t->entries_len++;
        t->optimizers[oi].entries_len++;
        dict_it si;
        size_t sk, sv;
        torch_dict_begin(&si, c, value);
        while (!rc && torch_dict_next(&si, &sk, &sv)) {
            const ckpt_pnode *kn = N(c, sk);
            if (kn->kind != CKPT_PK_STR) continue;
            size_t m2 = torch_path_push_key(c, sk);
            size_t x = CKPT_TORCH_NONE;
            if (torch_str_is(c, sk, "step")) {
                double st = 0;
                rc = read_step(c, t->entries[ei].index, sv, &st);
                t->entries[ei].has_step = true;
                t->entries[ei].step = st;
            } else if (!(rc = torch_tensor_of(c, sv, &x))) {
                size_t *slot = torch_str_is(c, sk, "exp_avg")          ? &t->entries[ei].exp_avg
                               : torch_str_is(c, sk, "exp_avg_sq")     ? &t->entries[ei].exp_avg_sq
                               : torch_str_is(c, sk, "max_exp_avg_sq") ? &t->entries[ei].max_exp_avg_sq
                                                                       : NULL;
                double num = 0;
                if (slot && x != CKPT_TORCH_NONE) *slot = x;
                else if (x != CKPT_TORCH_NONE || torch_number_of(c, sv, &num)) {
                    rc = add_named(c, span(c, kn), kn->len, x, num);
                    if (!rc) t->entries[ei].other_len++;
                }
            }
            torch_path_pop(c, m2);
        }
        torch_path_pop(c, mark);
    }
    free(map);
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
        if (is_optimizer(c, k)) return add_optimizer(c, k);
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
