/* The values of a DeepSpeed file's pickle (format.md 11.1-11.2), read as data over the torch
 * object model: dicts (DICT, an OrderedDict's REDUCE and the BUILD over it), strings, numbers,
 * shapes, tensors, and DeepSpeed's own names (ZeroStageEnum, fragment_address, LossScaler), each
 * read as the data it pickles. Nothing a file names is called. */
#include "families/deepspeed/deepspeed.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const ckpt_pnode *ds_node(ds_tree c, size_t k) { return ckpt_pickle_node(c.p, k); }

static bool global_is(ds_tree c, size_t k, const char *module, const char *name)
{
    if (k == CKPT_PNIL) return false;
    const ckpt_pnode *g = ds_node(c, k);
    if (g->kind != CKPT_PK_GLOBAL) return false;
    const char *d = (const char *)c.p->data;
    size_t ml = strlen(module), nl = strlen(name);
    return g->len == ml && !memcmp(d + g->at, module, ml) && g->len2 == nl && !memcmp(d + g->at2, name, nl);
}

static bool is_builtins(ds_tree c, size_t k, const char *name)
{
    return global_is(c, k, "builtins", name) || global_is(c, k, "__builtin__", name);
}

static bool ordered_dict(ds_tree c, size_t k)
{
    const ckpt_pnode *n = ds_node(c, k);
    if (n->kind != CKPT_PK_REDUCE || n->a == CKPT_PNIL) return false;
    const ckpt_pnode *g = ds_node(c, n->a);
    if (g->kind != CKPT_PK_GLOBAL) return false;
    const char *d = (const char *)c.p->data;
    return ckpt_torch_known(d + g->at, g->len, d + g->at2, g->len2, NULL) == CKPT_PN_ORDERED_DICT;
}

static bool dict_cells(ds_tree c, size_t k, uint32_t first[2])
{
    first[0] = first[1] = CKPT_PNIL;
    if (k == CKPT_PNIL) return false;
    const ckpt_pnode *n = ds_node(c, k);
    if (n->kind == CKPT_PK_DICT || ordered_dict(c, k)) {
        first[0] = n->first;
        return true;
    }
    if (n->kind == CKPT_PK_BUILD && n->a != CKPT_PNIL && ordered_dict(c, n->a)) {
        first[0] = ds_node(c, n->a)->first;
        first[1] = n->first;
        return true;
    }
    return false;
}

bool ds_is_dict(ds_tree c, size_t k)
{
    uint32_t f[2];
    return dict_cells(c, k, f);
}

bool ds_is_seq(ds_tree c, size_t k)
{
    if (k == CKPT_PNIL) return false;
    uint8_t kind = ds_node(c, k)->kind;
    return kind == CKPT_PK_LIST || kind == CKPT_PK_TUPLE;
}

bool ds_dict_begin(ds_tree c, size_t k, ds_dict_it *it)
{
    it->list = 0;
    if (!dict_cells(c, k, it->lists)) return false;
    it->cell = it->lists[0];
    return true;
}

bool ds_dict_next(ds_tree c, ds_dict_it *it, size_t *key, size_t *value)
{
    for (;;) {
        if (it->cell == CKPT_PNIL) {
            if (it->list == 1) return false;
            it->list = 1;
            it->cell = it->lists[1];
            continue;
        }
        uint32_t kc = it->cell, vc = c.p->cells[kc].next;
        if (vc == CKPT_PNIL) return false;
        *key = c.p->cells[kc].node;
        *value = c.p->cells[vc].node;
        it->cell = c.p->cells[vc].next;
        return true;
    }
}

size_t ds_get(ds_tree c, size_t dict, const char *key)
{
    ds_dict_it it;
    size_t k, v, found = CKPT_PNIL;
    if (!ds_dict_begin(c, dict, &it)) return CKPT_PNIL;
    while (ds_dict_next(c, &it, &k, &v))
        if (ds_str_is(c, k, key)) found = v; /* the last, as a dict keeps it */
    return found;
}

size_t ds_item(ds_tree c, size_t seq, size_t j) { return ckpt_pickle_item(c.p, seq, j); }

size_t ds_len(ds_tree c, size_t k)
{
    if (ds_is_seq(c, k)) return ds_node(c, k)->count;
    ds_dict_it it;
    size_t n = 0, a, b;
    if (!ds_dict_begin(c, k, &it)) return 0;
    while (ds_dict_next(c, &it, &a, &b)) n++;
    return n;
}

bool ds_str(ds_tree c, size_t k, const char **s, size_t *n)
{
    if (k == CKPT_PNIL) return false;
    const ckpt_pnode *x = ds_node(c, k);
    if (x->kind != CKPT_PK_STR || (x->flags & CKPT_PF_TEXT)) return false;
    *s = (const char *)c.p->data + x->at;
    *n = x->len;
    return true;
}

bool ds_str_is(ds_tree c, size_t k, const char *s)
{
    const char *v;
    size_t n;
    return ds_str(c, k, &v, &n) && n == strlen(s) && !memcmp(v, s, n);
}

bool ds_int(ds_tree c, size_t k, int64_t *v)
{
    if (k == CKPT_PNIL || ds_node(c, k)->kind != CKPT_PK_INT) return false;
    *v = ds_node(c, k)->i;
    return true;
}

bool ds_number(ds_tree c, size_t k, double *x)
{
    if (k == CKPT_PNIL) return false;
    const ckpt_pnode *n = ds_node(c, k);
    if (n->kind == CKPT_PK_INT) *x = (double)n->i;
    else if (n->kind == CKPT_PK_FLOAT) *x = n->f;
    else if (n->kind == CKPT_PK_BOOL) *x = n->truth;
    else return false;
    return true;
}

size_t ds_tensor(ds_tree c, size_t k)
{
    if (k == CKPT_PNIL || k >= c.p->nodes_len) return DS_NONE;
    const ckpt_pnode *n = ds_node(c, k);
    /* the object model maps rebuilt tensors by node (persistent ids map to storages there) */
    if (n->kind == CKPT_PK_PERSID) return DS_NONE;
    size_t x = c.t->tensor_of_node[k];
    return x == CKPT_TORCH_NONE ? DS_NONE : x;
}

bool ds_shape(ds_tree c, size_t k, uint64_t *dims, uint32_t cap, uint32_t *rank, bool *too_deep)
{
    *rank = 0;
    *too_deep = false;
    if (k == CKPT_PNIL) return false;
    const ckpt_pnode *n = ds_node(c, k);
    size_t seq = k;
    if (n->kind == CKPT_PK_REDUCE) {
        const ckpt_pnode *g = n->a == CKPT_PNIL ? NULL : ds_node(c, n->a);
        const char *d = (const char *)c.p->data;
        if (!g || g->kind != CKPT_PK_GLOBAL ||
            ckpt_torch_known(d + g->at, g->len, d + g->at2, g->len2, NULL) != CKPT_PN_SIZE)
            return false;
        if (n->b == CKPT_PNIL || ds_node(c, n->b)->kind != CKPT_PK_TUPLE || ds_node(c, n->b)->count != 1) return false;
        seq = ds_item(c, n->b, 0);
    }
    if (!ds_is_seq(c, seq)) return false;
    const ckpt_pnode *s = ds_node(c, seq);
    uint32_t j = 0;
    for (uint32_t cell = s->first; cell != CKPT_PNIL; cell = c.p->cells[cell].next, j++) {
        int64_t v;
        if (!ds_int(c, c.p->cells[cell].node, &v) || v < 0) return false;
        if (j < cap) dims[j] = (uint64_t)v;
        else *too_deep = true;
    }
    *rank = j;
    return true;
}

/* "a deepspeed.x.Y" for an object of a class, from its GLOBAL */
static bool class_text(strbuf *sb, ds_tree c, size_t k)
{
    const ckpt_pnode *n = ds_node(c, k);
    size_t obj = k;
    if (n->kind == CKPT_PK_BUILD) obj = n->a;
    if (obj == CKPT_PNIL) return false;
    const ckpt_pnode *o = ds_node(c, obj);
    if ((o->kind != CKPT_PK_REDUCE && o->kind != CKPT_PK_NEWOBJ) || o->a == CKPT_PNIL) return false;
    const ckpt_pnode *g = ds_node(c, o->a);
    if (g->kind != CKPT_PK_GLOBAL) return false;
    const char *d = (const char *)c.p->data;
    sb_puts(sb, "a ");
    sb_put(sb, d + g->at, g->len);
    sb_putc(sb, '.');
    sb_put(sb, d + g->at2, g->len2);
    return true;
}

void ds_type_text(strbuf *sb, ds_tree c, size_t k)
{
    if (k == CKPT_PNIL) {
        sb_puts(sb, "nothing");
        return;
    }
    if (ds_tensor(c, k) != DS_NONE) {
        sb_puts(sb, "a tensor");
        return;
    }
    if (ds_is_dict(c, k)) {
        sb_puts(sb, "a dict");
        return;
    }
    switch (ds_node(c, k)->kind) {
        case CKPT_PK_NONE: sb_puts(sb, "None"); return;
        case CKPT_PK_BOOL: sb_puts(sb, "a bool"); return;
        case CKPT_PK_INT:
        case CKPT_PK_BIGINT: sb_puts(sb, "an int"); return;
        case CKPT_PK_FLOAT: sb_puts(sb, "a float"); return;
        case CKPT_PK_STR: sb_puts(sb, "a str"); return;
        case CKPT_PK_BYTES: sb_puts(sb, "bytes"); return;
        case CKPT_PK_TUPLE: sb_puts(sb, "a tuple"); return;
        case CKPT_PK_LIST: sb_puts(sb, "a list"); return;
        case CKPT_PK_SET: sb_puts(sb, "a set"); return;
        default:
            if (!class_text(sb, c, k)) sb_puts(sb, "an object");
    }
}

static void number_text(strbuf *sb, double x)
{
    /* Python's repr: a float always shows a point or an exponent */
    if (isnan(x)) sb_puts(sb, "nan");
    else if (isinf(x)) sb_puts(sb, x > 0 ? "inf" : "-inf");
    else {
        char buf[40];
        for (int prec = 1; prec <= 17; prec++) {
            snprintf(buf, sizeof buf, "%.*g", prec, x);
            if (strtod(buf, NULL) == x) break;
        }
        /* %g's exponent form is Python's but for its sign and padding: 1e-08 both */
        sb_puts(sb, buf);
        if (!strpbrk(buf, ".en")) sb_puts(sb, ".0");
    }
}

void ds_value_text(strbuf *sb, ds_tree c, size_t k)
{
    if (k == CKPT_PNIL) {
        sb_puts(sb, "nothing");
        return;
    }
    const ckpt_pnode *n = ds_node(c, k);
    switch (n->kind) {
        case CKPT_PK_NONE: sb_puts(sb, "None"); return;
        case CKPT_PK_BOOL: sb_puts(sb, n->truth ? "True" : "False"); return;
        case CKPT_PK_INT: sb_printf(sb, "%lld", (long long)n->i); return;
        case CKPT_PK_FLOAT: number_text(sb, n->f); return;
        case CKPT_PK_STR:
            if (!(n->flags & CKPT_PF_TEXT)) {
                sb_putc(sb, '\'');
                sb_put(sb, (const char *)c.p->data + n->at, n->len);
                sb_putc(sb, '\'');
                return;
            }
            break;
        case CKPT_PK_TUPLE:
        case CKPT_PK_LIST: {
            sb_putc(sb, n->kind == CKPT_PK_TUPLE ? '(' : '[');
            uint32_t j = 0;
            for (uint32_t cell = n->first; cell != CKPT_PNIL; cell = c.p->cells[cell].next, j++) {
                if (j) sb_puts(sb, ", ");
                if (j >= 64) {
                    sb_puts(sb, "...");
                    break;
                }
                const ckpt_pnode *x = ds_node(c, c.p->cells[cell].node);
                if (x->kind == CKPT_PK_TUPLE || x->kind == CKPT_PK_LIST) ds_type_text(sb, c, c.p->cells[cell].node);
                else ds_value_text(sb, c, c.p->cells[cell].node);
            }
            if (n->kind == CKPT_PK_TUPLE && j == 1) sb_putc(sb, ',');
            sb_putc(sb, n->kind == CKPT_PK_TUPLE ? ')' : ']');
            return;
        }
        default: break;
    }
    ds_type_text(sb, c, k);
}

/* ---- DeepSpeed's names (format.md 11.1), as data ---- */

#define ZERO_CONFIG "deepspeed.runtime.zero.config"

int ds_zero_stage(ds_tree c, size_t k)
{
    static const char *const members[] = {"disabled", "optimizer_states", "gradients", "weights"};
    int64_t v;
    if (ds_int(c, k, &v)) return v >= 0 && v <= 3 ? (int)v : -1;
    if (k == CKPT_PNIL) return -1;
    const ckpt_pnode *n = ds_node(c, k);
    if (n->kind != CKPT_PK_REDUCE || n->b == CKPT_PNIL || ds_node(c, n->b)->kind != CKPT_PK_TUPLE) return -1;
    /* Python >= 3.11: getattr(ZeroStageEnum, 'gradients') */
    if (is_builtins(c, n->a, "getattr")) {
        if (ds_node(c, n->b)->count != 2 || !global_is(c, ds_item(c, n->b, 0), ZERO_CONFIG, "ZeroStageEnum")) return -1;
        for (int s = 0; s < 4; s++)
            if (ds_str_is(c, ds_item(c, n->b, 1), members[s])) return s;
        return -1;
    }
    /* Python <= 3.10: ZeroStageEnum(2) */
    if (global_is(c, n->a, ZERO_CONFIG, "ZeroStageEnum") && ds_node(c, n->b)->count == 1 &&
        ds_int(c, ds_item(c, n->b, 0), &v) && v >= 0 && v <= 3)
        return (int)v;
    return -1;
}

size_t ds_object_state(ds_tree c, size_t k, const char *module, const char *name)
{
    if (k == CKPT_PNIL) return CKPT_PNIL;
    const ckpt_pnode *n = ds_node(c, k);
    if (n->kind != CKPT_PK_BUILD || n->a == CKPT_PNIL) return CKPT_PNIL;
    const ckpt_pnode *o = ds_node(c, n->a);
    if ((o->kind != CKPT_PK_NEWOBJ && o->kind != CKPT_PK_REDUCE) || !global_is(c, o->a, module, name)) return CKPT_PNIL;
    return n->b;
}

bool ds_fragment_address(ds_tree c, size_t k, uint64_t *start, uint64_t *numel)
{
    size_t st = ds_object_state(c, k, "deepspeed.utils.tensor_fragment", "fragment_address");
    if (st == CKPT_PNIL) st = ds_object_state(c, k, "deepspeed.runtime.bf16_optimizer", "fragment_address");
    int64_t s, n;
    if (!ds_is_dict(c, st) || !ds_int(c, ds_get(c, st, "start"), &s) || !ds_int(c, ds_get(c, st, "numel"), &n) ||
        s < 0 || n < 0)
        return false;
    *start = (uint64_t)s;
    *numel = (uint64_t)n;
    return true;
}

void ds_num_text(strbuf *sb, double x)
{
    if (x == floor(x) && fabs(x) < 9.2e18) sb_printf(sb, "%.0f", x);
    else {
        char buf[40];
        for (int prec = 1; prec <= 17; prec++) {
            snprintf(buf, sizeof buf, "%.*g", prec, x);
            if (strtod(buf, NULL) == x) break;
        }
        sb_puts(sb, buf);
    }
}

/* the kind: ds_config.optimizer.type (engine.py: Adam is AdamW unless adam_w_mode is false); without
 * an optimizer section, 10.3's rule: every group's decoupled_weight_decay, all one kind */
void ds_kind_from_config(ckpt_ds *ds, const ds_file *cf, const ckpt_torch_group *g, size_t n)
{
    ds->kind_said = -1;
    ds->kind_by_groups = false;
    ds_tree c = ds_tree_of(cf);
    size_t opt = ds_get(c, ds_get(c, cf->root, "ds_config"), "optimizer");
    const char *ts;
    size_t tl;
    if (ds_is_dict(c, opt) && ds_str(c, ds_get(c, opt, "type"), &ts, &tl)) {
        char low[16] = {0};
        for (size_t j = 0; j < tl && j < 15; j++) low[j] = (char)(ts[j] >= 'A' && ts[j] <= 'Z' ? ts[j] + 32 : ts[j]);
        size_t mode = ds_get(c, ds_get(c, opt, "params"), "adam_w_mode");
        bool off = mode != CKPT_PNIL && ds_node(c, mode)->kind == CKPT_PK_BOOL && !ds_node(c, mode)->truth;
        if (tl < 15 && !strcmp(low, "adamw")) ds->kind_said = CKPT_ADAMW;
        else if (tl < 15 && !strcmp(low, "adam")) ds->kind_said = off ? CKPT_ADAM : CKPT_ADAMW;
        return;
    }
    size_t yes = 0, no = 0;
    for (size_t k = 0; k < n; k++)
        if (g[k].has & CKPT_TG_DECOUPLED) g[k].decoupled ? yes++ : no++;
    if (n && (yes == n || no == n)) ds->kind_said = yes == n ? CKPT_ADAMW : CKPT_ADAM, ds->kind_by_groups = true;
}
