/* The values every step of reading torch's objects reads (values.h). */
#include "families/pytorch/values.h"

#include <stdio.h>

bool torch_str_is(const tctx *c, size_t k, const char *s)
{
    if (k == CKPT_PNIL) return false;
    const ckpt_pnode *n = N(c, k);
    size_t l = strlen(s);
    return n->kind == CKPT_PK_STR && !(n->flags & CKPT_PF_TEXT) && n->len == l && !memcmp(span(c, n), s, l);
}

/* A copy of bytes as a C string, a NUL byte replaced by U+FFFD. */
char *torch_dup_span(const char *s, size_t n)
{
    size_t z = 0;
    for (size_t k = 0; k < n; k++) z += !s[k];
    char *d = malloc(n + 2 * z + 1);
    if (!d) return NULL;
    size_t o = 0;
    for (size_t k = 0; k < n; k++) {
        if (s[k]) d[o++] = s[k];
        else memcpy(d + o, "\xef\xbf\xbd", 3), o += 3;
    }
    d[o] = 0;
    return d;
}

char *torch_path_dup(tctx *c) { return torch_dup_span(c->path.data ? c->path.data : "", c->path.len); }

int torch_fail_malformed(tctx *c, const ckpt_pnode *n, const char *reason)
{
    strbuf name = {0};
    j_string(&name, c->member);
    int rc = ckpt_fail(c->err, "PyTorch", CKPT_E_TORCH_MALFORMED, c->base + n->offset, 1,
                       "malformed checkpoint at byte %llu of %s: %s", (unsigned long long)n->offset,
                       name.failed ? "\"\"" : name.data, reason);
    sb_free(&name);
    return rc;
}

/* The memo lets a pickle name one value many times for a few bytes each: a size tuple shared by
 * many tensors, a state dict by many optimizers, a long key by many dicts. What is copied out of
 * the tree is charged here, one unit per value and one per 8 bytes of text, and is at most the
 * pickle's length (a file without such sharing spends at most about half its bytes). */
int torch_charge(tctx *c, const ckpt_pnode *at, uint64_t units)
{
    c->spent += units;
    if (c->spent <= (uint64_t)c->t->pickle->len + 64) return 0;
    return torch_fail_malformed(c, at, "values shared through the memo more often than the pickle's bytes allow");
}

/* ---- the path of a value, cut at CKPT_TORCH_MAX_PATH bytes ---- */

size_t torch_path_push_key(tctx *c, size_t key)
{
    size_t mark = c->path.len;
    if (c->path.len >= CKPT_TORCH_MAX_PATH) return mark;
    const ckpt_pnode *n = N(c, key);
    if (n->kind == CKPT_PK_INT) sb_printf(&c->path, "[%lld]", (long long)n->i);
    else if (n->kind == CKPT_PK_STR) {
        if (c->path.len) sb_putc(&c->path, '.');
        size_t room = CKPT_TORCH_MAX_PATH - c->path.len;
        sb_put(&c->path, span(c, n), n->len < room ? n->len : room);
    } else sb_puts(&c->path, "[?]");
    return mark;
}

size_t torch_path_push_index(tctx *c, size_t j)
{
    size_t mark = c->path.len;
    if (c->path.len < CKPT_TORCH_MAX_PATH) sb_printf(&c->path, "[%zu]", j);
    return mark;
}

void torch_path_pop(tctx *c, size_t mark)
{
    c->path.len = mark;
    if (c->path.data) c->path.data[mark] = 0;
}

/* ---- dicts: DICT, and REDUCE of collections.OrderedDict (BUILD over it) ---- */

ckpt_pname torch_global_of(const tctx *c, size_t k, const char **dtype)
{
    if (dtype) *dtype = NULL;
    if (k == CKPT_PNIL) return CKPT_PN_OPAQUE;
    const ckpt_pnode *g = N(c, k);
    if (g->kind != CKPT_PK_GLOBAL) return CKPT_PN_OPAQUE;
    const char *d = (const char *)c->t->pickle->data;
    return ckpt_torch_known(d + g->at, g->len, d + g->at2, g->len2, dtype);
}

/* The cells of dict k: up to two lists (an OrderedDict's and the BUILD over it). */
bool torch_dict_cells(const tctx *c, size_t k, uint32_t first[2])
{
    first[0] = first[1] = CKPT_PNIL;
    const ckpt_pnode *n = N(c, k);
    if (n->kind == CKPT_PK_DICT) {
        first[0] = n->first;
        return true;
    }
    if (n->kind == CKPT_PK_REDUCE && torch_global_of(c, n->a, NULL) == CKPT_PN_ORDERED_DICT) {
        first[0] = n->first;
        return true;
    }
    if (n->kind == CKPT_PK_BUILD && n->a != CKPT_PNIL) {
        const ckpt_pnode *o = N(c, n->a);
        if (o->kind == CKPT_PK_REDUCE && torch_global_of(c, o->a, NULL) == CKPT_PN_ORDERED_DICT) {
            first[0] = o->first;
            first[1] = n->first;
            return true;
        }
    }
    return false;
}

/* Iterate key/value pairs of a dict: *cell is the position, start with CKPT_PNIL and list 0. */
bool torch_dict_begin(dict_it *it, const tctx *c, size_t k)
{
    it->c = c;
    it->list = 0;
    if (!torch_dict_cells(c, k, it->lists)) return false;
    it->cell = it->lists[0];
    return true;
}

bool torch_dict_next(dict_it *it, size_t *key, size_t *value)
{
    const ckpt_pickle *p = it->c->t->pickle;
    for (;;) {
        if (it->cell == CKPT_PNIL) {
            if (it->list == 1) return false;
            it->list = 1;
            it->cell = it->lists[1];
            continue;
        }
        uint32_t kc = it->cell, vc = p->cells[kc].next;
        if (vc == CKPT_PNIL) return false; /* the reader keeps pairs whole */
        *key = p->cells[kc].node;
        *value = p->cells[vc].node;
        it->cell = p->cells[vc].next;
        return true;
    }
}

size_t torch_dict_get(const tctx *c, size_t k, const char *name)
{
    dict_it it;
    size_t key, value;
    if (!torch_dict_begin(&it, c, k)) return CKPT_PNIL;
    while (torch_dict_next(&it, &key, &value))
        if (torch_str_is(c, key, name)) return value;
    return CKPT_PNIL;
}

bool torch_is_dict(const tctx *c, size_t k)
{
    uint32_t f[2];
    return k != CKPT_PNIL && torch_dict_cells(c, k, f);
}

bool torch_is_seq(const tctx *c, size_t k)
{
    if (k == CKPT_PNIL) return false;
    uint8_t kind = N(c, k)->kind;
    return kind == CKPT_PK_LIST || kind == CKPT_PK_TUPLE;
}

bool torch_number_of(const tctx *c, size_t k, double *x)
{
    if (k == CKPT_PNIL) return false;
    const ckpt_pnode *n = N(c, k);
    if (n->kind == CKPT_PK_INT) *x = (double)n->i;
    else if (n->kind == CKPT_PK_FLOAT) *x = n->f;
    else if (n->kind == CKPT_PK_BOOL) *x = n->truth;
    else return false;
    return true;
}

uint64_t torch_hash_bytes(const char *s, size_t n)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t k = 0; k < n; k++) h = (h ^ (unsigned char)s[k]) * 1099511628211ull;
    return h;
}
