/* The torch object model over the zip and pickle layers (torch_objects.h; FORMAT.md 10.1-10.3). */
#include "families/pytorch/objects.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

enum { CAP_ST, CAP_TE, CAP_DI, CAP_NA, CAP_MO, CAP_OP, CAP_GR, CAP_EN, CAP_IN, CAP_SR };

typedef struct tctx {
    ckpt_torch *t;
    const ckpt_source *src;
    ckpt_error *err;
    const char *member; /* the object pickle's name in texts */
    ckpt_zip *zip;
    size_t *hash; /* storages by key: open addressing, CKPT_TORCH_NONE empty */
    size_t hash_cap;
    uint8_t *seen; /* containers expanded by the search */
    strbuf path;
    uint64_t base;  /* the object pickle's node offsets + base: bytes of the file */
    uint64_t spent; /* values copied out of the tree (and string bytes / 8): see charge */
} tctx;

static bool grow(void **arr, size_t *cap, size_t need, size_t size)
{
    if (need <= *cap) return true;
    size_t n = *cap ? *cap : 8;
    while (n < need) {
        if (n > SIZE_MAX / 2 / size) return false;
        n *= 2;
    }
    void *p = realloc(*arr, n * size);
    if (!p) return false;
    *arr = p;
    *cap = n;
    return true;
}
#define PUSH(t, arr, len, capk) grow((void **)&(t)->arr, &(t)->caps[capk], (t)->len + 1, sizeof *(t)->arr)

static const ckpt_pnode *N(const tctx *c, size_t k) { return ckpt_pickle_node(c->t->pickle, k); }
static const char *span(const tctx *c, const ckpt_pnode *n) { return (const char *)c->t->pickle->data + n->at; }

static bool str_is(const tctx *c, size_t k, const char *s)
{
    if (k == CKPT_PNIL) return false;
    const ckpt_pnode *n = N(c, k);
    size_t l = strlen(s);
    return n->kind == CKPT_PK_STR && !(n->flags & CKPT_PF_TEXT) && n->len == l && !memcmp(span(c, n), s, l);
}

/* A JSON string of bytes (a NUL escaped too). */
static void j_span(strbuf *sb, const char *s, size_t n)
{
    sb_putc(sb, '"');
    for (size_t k = 0; k < n; k++) {
        unsigned char ch = (unsigned char)s[k];
        if (ch == '"' || ch == '\\') sb_printf(sb, "\\%c", ch);
        else if (ch < 0x20 || ch == 0x7f) sb_printf(sb, "\\u%04x", ch);
        else sb_putc(sb, (char)ch);
    }
    sb_putc(sb, '"');
}

/* A copy of bytes as a C string, a NUL byte replaced by U+FFFD. */
static char *dup_span(const char *s, size_t n)
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

static char *path_dup(tctx *c) { return dup_span(c->path.data ? c->path.data : "", c->path.len); }

static int fail_malformed(tctx *c, const ckpt_pnode *n, const char *reason)
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
static int charge(tctx *c, const ckpt_pnode *at, uint64_t units)
{
    c->spent += units;
    if (c->spent <= (uint64_t)c->t->pickle->len + 64) return 0;
    return fail_malformed(c, at, "values shared through the memo more often than the pickle's bytes allow");
}

/* ---- the path of a value, cut at CKPT_TORCH_MAX_PATH bytes ---- */

static size_t path_push_key(tctx *c, size_t key)
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

static size_t path_push_index(tctx *c, size_t j)
{
    size_t mark = c->path.len;
    if (c->path.len < CKPT_TORCH_MAX_PATH) sb_printf(&c->path, "[%zu]", j);
    return mark;
}

static void path_pop(tctx *c, size_t mark)
{
    c->path.len = mark;
    if (c->path.data) c->path.data[mark] = 0;
}

/* ---- dicts: DICT, and REDUCE of collections.OrderedDict (BUILD over it) ---- */

static ckpt_pname global_of(const tctx *c, size_t k, const char **dtype)
{
    if (dtype) *dtype = NULL;
    if (k == CKPT_PNIL) return CKPT_PN_OPAQUE;
    const ckpt_pnode *g = N(c, k);
    if (g->kind != CKPT_PK_GLOBAL) return CKPT_PN_OPAQUE;
    const char *d = (const char *)c->t->pickle->data;
    return ckpt_pickle_known(d + g->at, g->len, d + g->at2, g->len2, dtype);
}

/* The cells of dict k: up to two lists (an OrderedDict's and the BUILD over it). */
static bool dict_cells(const tctx *c, size_t k, uint32_t first[2])
{
    first[0] = first[1] = CKPT_PNIL;
    const ckpt_pnode *n = N(c, k);
    if (n->kind == CKPT_PK_DICT) {
        first[0] = n->first;
        return true;
    }
    if (n->kind == CKPT_PK_REDUCE && global_of(c, n->a, NULL) == CKPT_PN_ORDERED_DICT) {
        first[0] = n->first;
        return true;
    }
    if (n->kind == CKPT_PK_BUILD && n->a != CKPT_PNIL) {
        const ckpt_pnode *o = N(c, n->a);
        if (o->kind == CKPT_PK_REDUCE && global_of(c, o->a, NULL) == CKPT_PN_ORDERED_DICT) {
            first[0] = o->first;
            first[1] = n->first;
            return true;
        }
    }
    return false;
}

/* Iterate key/value pairs of a dict: *cell is the position, start with CKPT_PNIL and list 0. */
typedef struct dict_it {
    const tctx *c;
    uint32_t lists[2];
    int list;
    uint32_t cell;
} dict_it;

static bool dict_begin(dict_it *it, const tctx *c, size_t k)
{
    it->c = c;
    it->list = 0;
    if (!dict_cells(c, k, it->lists)) return false;
    it->cell = it->lists[0];
    return true;
}

static bool dict_next(dict_it *it, size_t *key, size_t *value)
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

static size_t dict_get(const tctx *c, size_t k, const char *name)
{
    dict_it it;
    size_t key, value;
    if (!dict_begin(&it, c, k)) return CKPT_PNIL;
    while (dict_next(&it, &key, &value))
        if (str_is(c, key, name)) return value;
    return CKPT_PNIL;
}

static bool is_dict(const tctx *c, size_t k)
{
    uint32_t f[2];
    return k != CKPT_PNIL && dict_cells(c, k, f);
}

static bool is_seq(const tctx *c, size_t k)
{
    if (k == CKPT_PNIL) return false;
    uint8_t kind = N(c, k)->kind;
    return kind == CKPT_PK_LIST || kind == CKPT_PK_TUPLE;
}

static bool number_of(const tctx *c, size_t k, double *x)
{
    if (k == CKPT_PNIL) return false;
    const ckpt_pnode *n = N(c, k);
    if (n->kind == CKPT_PK_INT) *x = (double)n->i;
    else if (n->kind == CKPT_PK_FLOAT) *x = n->f;
    else if (n->kind == CKPT_PK_BOOL) *x = n->truth;
    else return false;
    return true;
}

/* ---- storages ---- */

static uint64_t hash_bytes(const char *s, size_t n)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t k = 0; k < n; k++) h = (h ^ (unsigned char)s[k]) * 1099511628211ull;
    return h;
}

static size_t storage_find(const tctx *c, const char *key, size_t n)
{
    if (!c->hash_cap) return CKPT_TORCH_NONE;
    for (size_t h = (size_t)hash_bytes(key, n) & (c->hash_cap - 1);; h = (h + 1) & (c->hash_cap - 1)) {
        size_t s = c->hash[h];
        if (s == CKPT_TORCH_NONE) return CKPT_TORCH_NONE;
        const char *k = c->t->storages[s].key;
        if (strlen(k) == n && !memcmp(k, key, n)) return s;
    }
}

static bool hash_insert(tctx *c, size_t s)
{
    if (2 * (c->t->storages_len + 1) > c->hash_cap) {
        size_t cap = c->hash_cap ? 2 * c->hash_cap : 64;
        size_t *h = malloc(cap * sizeof *h);
        if (!h) return false;
        for (size_t k = 0; k < cap; k++) h[k] = CKPT_TORCH_NONE;
        free(c->hash);
        c->hash = h;
        c->hash_cap = cap;
        for (size_t k = 0; k < c->t->storages_len; k++) {
            if (k == s) continue;
            const char *key = c->t->storages[k].key;
            size_t x = (size_t)hash_bytes(key, strlen(key)) & (cap - 1);
            while (h[x] != CKPT_TORCH_NONE) x = (x + 1) & (cap - 1);
            h[x] = k;
        }
    }
    const char *key = c->t->storages[s].key;
    size_t x = (size_t)hash_bytes(key, strlen(key)) & (c->hash_cap - 1);
    while (c->hash[x] != CKPT_TORCH_NONE) x = (x + 1) & (c->hash_cap - 1);
    c->hash[x] = s;
    return true;
}

static unsigned dtype_width(const char *d)
{
    static const struct {
        const char *name;
        unsigned width;
    } w[] = {{"float64", 8}, {"float32", 4}, {"float16", 2}, {"bfloat16", 2}, {"int64", 8},
             {"int32", 4},   {"int16", 2},   {"int8", 1},    {"uint8", 1},    {"bool", 1}};
    for (size_t k = 0; d && k < sizeof w / sizeof w[0]; k++)
        if (!strcmp(d, w[k].name)) return w[k].width;
    return 0;
}

/* The persistent id of PERSID node k: its storage (created on first sight). */
static int storage_of(tctx *c, size_t k, size_t *out)
{
    ckpt_torch *t = c->t;
    if (t->tensor_of_node[k] != CKPT_TORCH_NONE) {
        *out = t->tensor_of_node[k];
        return 0;
    }
    const ckpt_pnode *pn = N(c, k);
    size_t id = pn->a;
    if (pn->kind != CKPT_PK_PERSID || id == CKPT_PNIL || N(c, id)->kind != CKPT_PK_TUPLE ||
        (N(c, id)->count != 5 && N(c, id)->count != 6))
        return fail_malformed(c, pn, "a persistent id that is not ('storage', type, key, location, numel)");
    const ckpt_pickle *p = t->pickle;
    size_t f[6] = {CKPT_PNIL, CKPT_PNIL, CKPT_PNIL, CKPT_PNIL, CKPT_PNIL, CKPT_PNIL};
    size_t j = 0;
    for (uint32_t cell = N(c, id)->first; cell != CKPT_PNIL && j < 6; cell = p->cells[cell].next)
        f[j++] = p->cells[cell].node;
    const ckpt_pnode *key = N(c, f[2]), *numel = N(c, f[4]);
    if (!str_is(c, f[0], "storage") || key->kind != CKPT_PK_STR || numel->kind != CKPT_PK_INT || numel->i < 0)
        return fail_malformed(c, pn, "a persistent id that is not ('storage', type, key, location, numel)");
    if (f[5] != CKPT_PNIL && N(c, f[5])->kind != CKPT_PK_NONE)
        return ckpt_fail(c->err, "PyTorch", CKPT_E_TORCH_UNSUPPORTED, CKPT_NONE, 0,
                         "storage views of files before PyTorch 1.0 are not read");
    size_t s = storage_find(c, span(c, key), key->len);
    if (s == CKPT_TORCH_NONE) {
        const char *dtype;
        ckpt_pname st = global_of(c, f[1], &dtype);
        if (st == CKPT_PN_UNTYPED_STORAGE) dtype = "uint8";
        unsigned width = dtype_width(dtype);
        if ((st != CKPT_PN_STORAGE && st != CKPT_PN_UNTYPED_STORAGE) || !width) {
            strbuf ks = {0}, ts = {0};
            j_span(&ks, span(c, key), key->len);
            const ckpt_pnode *g = N(c, f[1]);
            if (g->kind == CKPT_PK_GLOBAL) {
                strbuf nm = {0};
                sb_put(&nm, (const char *)p->data + g->at, g->len);
                sb_putc(&nm, '.');
                sb_put(&nm, (const char *)p->data + g->at2, g->len2);
                j_span(&ts, nm.data ? nm.data : "", nm.len);
                sb_free(&nm);
            } else sb_puts(&ts, "(not a name)");
            int rc = ckpt_fail(c->err, "PyTorch", CKPT_E_TORCH_UNSUPPORTED, CKPT_NONE, 0,
                               "storage %s has type %s, which is not read", ks.data ? ks.data : "\"\"",
                               ts.data ? ts.data : "\"\"");
            sb_free(&ks);
            sb_free(&ts);
            return rc;
        }
        if (memchr(span(c, key), 0, key->len)) return fail_malformed(c, pn, "a storage key holding a NUL byte");
        if ((uint64_t)numel->i > UINT64_MAX / width)
            return fail_malformed(c, pn, "a storage whose byte count passes 2^64");
        if (!PUSH(t, storages, storages_len, CAP_ST)) return ckpt_fail_oom(c->err);
        ckpt_torch_storage *sg = &t->storages[t->storages_len];
        sg->key = dup_span(span(c, key), key->len);
        if (!sg->key) return ckpt_fail_oom(c->err);
        sg->dtype = dtype;
        sg->width = width;
        sg->numel = (uint64_t)numel->i;
        sg->at = CKPT_NONE;
        sg->bytes = CKPT_NONE;
        s = t->storages_len++;
        if (!hash_insert(c, s)) return ckpt_fail_oom(c->err);
    }
    t->tensor_of_node[k] = s;
    *out = s;
    return 0;
}

static int fail_storage_size(tctx *c, const ckpt_torch_storage *s, uint64_t holds)
{
    strbuf ks = {0};
    j_string(&ks, s->key);
    int rc = ckpt_fail(c->err, "PyTorch", CKPT_E_TORCH_STORAGE, s->at, 0,
                       "storage %s declares %llu bytes but its record holds %llu", ks.data ? ks.data : "\"\"",
                       (unsigned long long)(s->numel * s->width), (unsigned long long)holds);
    sb_free(&ks);
    return rc;
}

/* Every persistent id's storage, and its record found and checked. */
static int storages_zip(tctx *c)
{
    ckpt_torch *t = c->t;
    for (size_t k = 0; k < t->pickle->nodes_len; k++)
        if (N(c, k)->kind == CKPT_PK_PERSID) {
            size_t s;
            TRY(storage_of(c, k, &s));
        }
    size_t *member = malloc((t->storages_len ? t->storages_len : 1) * sizeof *member);
    if (!member) return ckpt_fail_oom(c->err);
    for (size_t s = 0; s < t->storages_len; s++) member[s] = CKPT_TORCH_NONE;
    size_t pl = strlen(t->prefix);
    for (size_t m = 0; m < c->zip->count; m++) {
        const ckpt_zip_member *zm = &c->zip->members[m];
        if (zm->name_len > pl + 6 && !memcmp(zm->name, t->prefix, pl) && !memcmp(zm->name + pl, "/data/", 6)) {
            t->records++;
            size_t s = storage_find(c, zm->name + pl + 6, zm->name_len - pl - 6);
            if (s != CKPT_TORCH_NONE && member[s] == CKPT_TORCH_NONE) member[s] = m;
        }
    }
    int rc = 0;
    for (size_t s = 0; s < t->storages_len && !rc; s++) {
        ckpt_torch_storage *sg = &t->storages[s];
        if (member[s] == CKPT_TORCH_NONE) {
            strbuf ks = {0}, ms = {0}, mn = {0};
            j_string(&ks, sg->key);
            sb_printf(&mn, "%s/data/%s", t->prefix, sg->key);
            j_string(&ms, mn.data ? mn.data : "");
            rc = ckpt_fail(c->err, "PyTorch", CKPT_E_TORCH_STORAGE, CKPT_NONE, 0,
                           "storage %s has no record %s in this zip", ks.data ? ks.data : "\"\"",
                           ms.data ? ms.data : "\"\"");
            sb_free(&ks);
            sb_free(&ms);
            sb_free(&mn);
            break;
        }
        rc = ckpt_zip_resolve(c->zip, member[s], c->err);
        if (rc) break;
        const ckpt_zip_member *zm = &c->zip->members[member[s]];
        sg->at = zm->data_offset;
        sg->bytes = zm->uncompressed;
        if (zm->uncompressed != sg->numel * sg->width) rc = fail_storage_size(c, sg, zm->uncompressed);
    }
    free(member);
    return rc;
}

/* The legacy storages: for each key of the list, a u64 element count and the elements. */
static int storages_legacy(tctx *c, const ckpt_pickle *keys, uint64_t at)
{
    ckpt_torch *t = c->t;
    for (size_t k = 0; k < t->pickle->nodes_len; k++)
        if (N(c, k)->kind == CKPT_PK_PERSID) {
            size_t s;
            TRY(storage_of(c, k, &s));
        }
    const ckpt_pnode *root = ckpt_pickle_node(keys, keys->root);
    if (root->kind != CKPT_PK_LIST && root->kind != CKPT_PK_TUPLE)
        return ckpt_fail(c->err, "PyTorch", CKPT_E_TORCH_MALFORMED, CKPT_NONE, 0,
                         "malformed checkpoint: the fifth pickle is not the list of storage keys");
    for (uint32_t cell = root->first; cell != CKPT_PNIL; cell = keys->cells[cell].next) {
        const ckpt_pnode *kn = ckpt_pickle_node(keys, keys->cells[cell].node);
        if (kn->kind != CKPT_PK_STR)
            return ckpt_fail(c->err, "PyTorch", CKPT_E_TORCH_MALFORMED, CKPT_NONE, 0,
                             "malformed checkpoint: a storage key that is not a string");
        t->records++;
        size_t s = storage_find(c, (const char *)keys->data + kn->at, kn->len);
        strbuf ks = {0};
        j_span(&ks, (const char *)keys->data + kn->at, kn->len);
        if (s == CKPT_TORCH_NONE) {
            int rc = ckpt_fail(c->err, "PyTorch", CKPT_E_TORCH_MALFORMED, CKPT_NONE, 0,
                               "malformed checkpoint: storage key %s names no storage of the object",
                               ks.data ? ks.data : "\"\"");
            sb_free(&ks);
            return rc;
        }
        sb_free(&ks);
        ckpt_torch_storage *sg = &t->storages[s];
        uint64_t left = c->src->size > at ? c->src->size - at : 0;
        sg->at = at + 8;
        if (left < 8) return fail_storage_size(c, sg, 0);
        uint8_t b[8];
        TRY(ckpt_read_at(c->src, at, b, 8, "a storage's element count", c->err));
        uint64_t count = 0;
        for (int j = 7; j >= 0; j--) count = count << 8 | b[j];
        uint64_t want = count > (left - 8) / sg->width ? left - 8 : count * sg->width;
        sg->bytes = want;
        if (count != sg->numel || want != count * sg->width) return fail_storage_size(c, sg, want);
        at += 8 + want;
    }
    for (size_t s = 0; s < t->storages_len; s++)
        if (t->storages[s].bytes == CKPT_NONE) {
            strbuf ks = {0};
            j_string(&ks, t->storages[s].key);
            int rc = ckpt_fail(c->err, "PyTorch", CKPT_E_TORCH_STORAGE, CKPT_NONE, 0,
                               "storage %s is not in the file's list of storages", ks.data ? ks.data : "\"\"");
            sb_free(&ks);
            return rc;
        }
    return 0;
}

/* ---- tensors ---- */

static int tuple_ints(tctx *c, size_t k, const ckpt_pnode *at, uint64_t *out, uint32_t *rank, bool *negative)
{
    if (!is_seq(c, k)) return fail_malformed(c, at, "a tensor's size or stride that is not a tuple");
    const ckpt_pickle *p = c->t->pickle;
    uint32_t r = 0;
    for (uint32_t cell = N(c, k)->first; cell != CKPT_PNIL; cell = p->cells[cell].next) {
        const ckpt_pnode *x = N(c, p->cells[cell].node);
        if (x->kind != CKPT_PK_INT) return fail_malformed(c, at, "a tensor's size or stride that is not integers");
        if (x->i < 0) *negative = true;
        if (out) out[r] = (uint64_t)x->i;
        r++;
    }
    *rank = r;
    return 0;
}

static int fail_reach(tctx *c, const ckpt_torch_storage *s, const char *e)
{
    strbuf ps = {0}, ks = {0};
    j_span(&ps, c->path.data ? c->path.data : "", c->path.len);
    j_string(&ks, s->key);
    int rc = ckpt_fail(c->err, "PyTorch", CKPT_E_TORCH_TENSOR_BOUNDS, s->at, 0,
                       "tensor %s reaches element %s of storage %s, which holds %llu", ps.data ? ps.data : "\"\"", e,
                       ks.data ? ks.data : "\"\"", (unsigned long long)s->numel);
    sb_free(&ps);
    sb_free(&ks);
    return rc;
}

/* _rebuild_tensor(_v2, _v3)(storage, storage_offset, size, stride, ...) with its arguments at args. */
static int rebuild(tctx *c, ckpt_pname how, const ckpt_pnode *at, size_t args, size_t *out)
{
    ckpt_torch *t = c->t;
    if (!is_seq(c, args)) return fail_malformed(c, at, "a tensor rebuilt from arguments that are not a tuple");
    const ckpt_pickle *p = t->pickle;
    size_t a[7] = {CKPT_PNIL, CKPT_PNIL, CKPT_PNIL, CKPT_PNIL, CKPT_PNIL, CKPT_PNIL, CKPT_PNIL};
    size_t j = 0;
    for (uint32_t cell = N(c, args)->first; cell != CKPT_PNIL && j < 7; cell = p->cells[cell].next)
        a[j++] = p->cells[cell].node;
    if (j < 4 || (how == CKPT_PN_REBUILD_TENSOR_V3 && j < 7))
        return fail_malformed(c, at, "a tensor rebuilt from too few arguments");
    if (N(c, a[0])->kind != CKPT_PK_PERSID)
        return fail_malformed(c, at, "a tensor whose storage is not a persistent id");
    size_t s;
    TRY(storage_of(c, a[0], &s));
    const ckpt_pnode *off = N(c, a[1]);
    if (off->kind != CKPT_PK_INT) return fail_malformed(c, at, "a tensor whose storage offset is not an integer");
    uint32_t rank, rank2;
    bool negative = off->i < 0;
    TRY(tuple_ints(c, a[2], at, NULL, &rank, &negative));
    TRY(tuple_ints(c, a[3], at, NULL, &rank2, &negative));
    if (rank != rank2) return fail_malformed(c, at, "a tensor whose size and stride differ in length");
    const char *dtype = t->storages[s].dtype;
    unsigned width = t->storages[s].width;
    if (how == CKPT_PN_REBUILD_TENSOR_V3) {
        if (global_of(c, a[6], &dtype) != CKPT_PN_DTYPE || !(width = dtype_width(dtype)))
            return fail_malformed(c, at, "a tensor whose dtype is not read");
    }
    TRY(charge(c, at, 1 + 2 * (uint64_t)rank));
    /* one more than needed: the pool exists even for 0-d tensors */
    if (!grow((void **)&t->dims, &t->caps[CAP_DI], t->dims_len + 2 * (size_t)rank + 1, sizeof *t->dims))
        return ckpt_fail_oom(c->err);
    uint64_t *size = t->dims + t->dims_len, *stride = size + rank;
    TRY(tuple_ints(c, a[2], at, size, &rank, &negative));
    TRY(tuple_ints(c, a[3], at, stride, &rank, &negative));
    const ckpt_torch_storage *sg = &t->storages[s];
    /* the storage in the tensor's elements (v3 over an UntypedStorage counts bytes) */
    uint64_t holds = sg->numel * sg->width / width;
    if (negative) { /* the element reached, signed: offset + sum (size_d - 1) stride_d */
        int64_t e = off->i;
        bool wide = false;
        for (uint32_t d = 0; d < rank; d++) {
            int64_t step;
            if (__builtin_mul_overflow((int64_t)size[d] - 1, (int64_t)stride[d], &step) ||
                __builtin_add_overflow(e, step, &e))
                wide = true;
        }
        char text[32];
        if (wide) snprintf(text, sizeof text, "%s", "(past 64 bits)");
        else snprintf(text, sizeof text, "%lld", (long long)e);
        return fail_reach(c, sg, text);
    }
    /* the last element reached: offset + sum (size_d - 1) stride_d, saturated at 2^64 - 1 (past
     * any storage) */
    uint64_t last = (uint64_t)off->i, count = 1, expect = 1;
    bool empty = false, contiguous = true, expect_ok = true;
    for (uint32_t d = rank; d-- > 0;) {
        if (!size[d]) empty = true;
        else {
            uint64_t span = size[d] - 1;
            uint64_t step = stride[d] && span > UINT64_MAX / stride[d] ? UINT64_MAX : span * stride[d];
            last = last > UINT64_MAX - step ? UINT64_MAX : last + step;
        }
        if (size[d] != 1 && (!expect_ok || stride[d] != expect)) contiguous = false;
        if (size[d] && expect > UINT64_MAX / size[d]) expect_ok = false;
        else expect *= size[d];
        count = size[d] && count > UINT64_MAX / size[d] ? UINT64_MAX : count * size[d];
    }
    if (empty) {
        last = (uint64_t)off->i;
        count = 0;
    }
    if ((!empty && last >= holds) || (empty && last > holds)) {
        char e[32];
        snprintf(e, sizeof e, "%llu", (unsigned long long)last);
        return fail_reach(c, sg, e);
    }
    if (!PUSH(t, tensors, tensors_len, CAP_TE)) return ckpt_fail_oom(c->err);
    ckpt_torch_tensor *x = &t->tensors[t->tensors_len];
    x->storage = s;
    x->dtype = dtype;
    x->width = width;
    x->offset = (uint64_t)off->i;
    x->at = sg->at + x->offset * width;
    x->dims = t->dims_len;
    x->rank = rank;
    x->contiguous = contiguous;
    x->parameter = false;
    x->count = count;
    t->dims_len += 2 * (size_t)rank;
    *out = t->tensors_len++;
    return 0;
}

/* Node k as a tensor: *out its index, CKPT_TORCH_NONE when k is not one. A BUILD or a parameter
 * wraps an earlier node: at most CKPT_PICKLE_MAX_DEPTH of them are unwrapped. */
static int tensor_at(tctx *c, size_t k, size_t *out, unsigned depth)
{
    ckpt_torch *t = c->t;
    *out = CKPT_TORCH_NONE;
    /* the map holds a PERSID node's storage, not a tensor */
    if (k == CKPT_PNIL || depth > CKPT_PICKLE_MAX_DEPTH || N(c, k)->kind == CKPT_PK_PERSID) return 0;
    if (t->tensor_of_node[k] != CKPT_TORCH_NONE) {
        *out = t->tensor_of_node[k];
        return 0;
    }
    const ckpt_pnode *n = N(c, k);
    if (n->kind == CKPT_PK_BUILD) {
        TRY(tensor_at(c, n->a, out, depth + 1));
    } else if (n->kind == CKPT_PK_REDUCE) {
        ckpt_pname how = global_of(c, n->a, NULL);
        switch (how) {
            case CKPT_PN_REBUILD_TENSOR:
            case CKPT_PN_REBUILD_TENSOR_V2:
            case CKPT_PN_REBUILD_TENSOR_V3: TRY(rebuild(c, how, n, n->b, out)); break;
            case CKPT_PN_REBUILD_PARAMETER:
            case CKPT_PN_REBUILD_PARAMETER_WITH_STATE: {
                size_t data = is_seq(c, n->b) ? ckpt_pickle_item(t->pickle, n->b, 0) : CKPT_PNIL;
                if (data == CKPT_PNIL) return fail_malformed(c, n, "a parameter rebuilt from no tensor");
                TRY(tensor_at(c, data, out, depth + 1));
                if (*out == CKPT_TORCH_NONE) return fail_malformed(c, n, "a parameter rebuilt from no tensor");
                t->tensors[*out].parameter = true;
                break;
            }
            case CKPT_PN_REBUILD_FROM_TYPE_V2: {
                /* (func, new_type, args, state): the tensor is func(*args) */
                size_t func = is_seq(c, n->b) ? ckpt_pickle_item(t->pickle, n->b, 0) : CKPT_PNIL;
                size_t args = is_seq(c, n->b) ? ckpt_pickle_item(t->pickle, n->b, 2) : CKPT_PNIL;
                ckpt_pname inner = global_of(c, func, NULL);
                if (inner != CKPT_PN_REBUILD_TENSOR && inner != CKPT_PN_REBUILD_TENSOR_V2 &&
                    inner != CKPT_PN_REBUILD_TENSOR_V3)
                    return fail_malformed(c, n, "_rebuild_from_type_v2 of a function that rebuilds no tensor");
                TRY(rebuild(c, inner, n, args, out));
                break;
            }
            default: break;
        }
    }
    if (*out != CKPT_TORCH_NONE) t->tensor_of_node[k] = *out;
    return 0;
}

static int tensor_of(tctx *c, size_t k, size_t *out) { return tensor_at(c, k, out, 0); }

/* ---- the search (FORMAT.md 10.3) ---- */

static bool is_int_list(const tctx *c, size_t k)
{
    if (!is_seq(c, k)) return false;
    const ckpt_pickle *p = c->t->pickle;
    for (uint32_t cell = N(c, k)->first; cell != CKPT_PNIL; cell = p->cells[cell].next)
        if (N(c, p->cells[cell].node)->kind != CKPT_PK_INT) return false;
    return true;
}

/* seen[k]: SEEN once the search expanded node k, VALID once k passed as an optimizer's state dict
 * or group (a value the memo shares is checked once) */
enum { SEEN = 1, VALID = 2 };

static bool is_optimizer(tctx *c, size_t k)
{
    size_t state = dict_get(c, k, "state"), groups = dict_get(c, k, "param_groups");
    if (!is_dict(c, state) || !is_seq(c, groups) || N(c, groups)->kind != CKPT_PK_LIST) return false;
    if (!(c->seen[state] & VALID)) {
        dict_it it;
        size_t key, value;
        dict_begin(&it, c, state);
        while (dict_next(&it, &key, &value))
            if (N(c, key)->kind != CKPT_PK_INT || !is_dict(c, value)) return false;
        c->seen[state] |= VALID;
    }
    const ckpt_pickle *p = c->t->pickle;
    for (uint32_t cell = N(c, groups)->first; cell != CKPT_PNIL; cell = p->cells[cell].next) {
        size_t g = p->cells[cell].node;
        if (c->seen[g] & VALID) continue;
        if (!is_dict(c, g) || !is_int_list(c, dict_get(c, g, "params"))) return false;
        c->seen[g] |= VALID;
    }
    return true;
}

static int is_model(tctx *c, size_t k, bool *yes)
{
    dict_it it;
    size_t key, value, x;
    *yes = false;
    if (!dict_begin(&it, c, k)) return 0;
    size_t n = 0;
    while (dict_next(&it, &key, &value)) {
        if (N(c, key)->kind != CKPT_PK_STR) return 0;
        size_t mark = path_push_key(c, key);
        int rc = tensor_of(c, value, &x);
        path_pop(c, mark);
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
    TRY(charge(c, N(c, c->t->pickle->root), 1 + len / 8));
    if (!PUSH(t, named, named_len, CAP_NA)) return ckpt_fail_oom(c->err);
    ckpt_torch_named *nm = &t->named[t->named_len];
    nm->name = dup_span(s, len);
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
    TRY(charge(c, N(c, k), 1 + c->path.len / 8));
    ckpt_torch_model *m = &t->models[t->models_len];
    m->path = path_dup(c);
    if (!m->path) return ckpt_fail_oom(c->err);
    m->first = t->named_len;
    m->count = 0;
    t->models_len++;
    dict_it it;
    size_t key, value, x;
    dict_begin(&it, c, k);
    while (dict_next(&it, &key, &value)) {
        TRY(tensor_of(c, value, &x));
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
    TRY(tensor_of(c, v, &x));
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
    } else if (!number_of(c, v, &s) || N(c, v)->kind == CKPT_PK_BOOL) {
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
    TRY(charge(c, N(c, k), 1 + c->path.len / 8));
    ckpt_torch_optimizer *o = &t->optimizers[t->optimizers_len];
    o->path = path_dup(c);
    if (!o->path) return ckpt_fail_oom(c->err);
    o->groups = t->groups_len;
    o->groups_len = 0;
    o->entries = t->entries_len;
    o->entries_len = 0;
    size_t oi = t->optimizers_len++;
    /* groups */
    size_t groups = dict_get(c, k, "param_groups"), pairs = 0;
    for (uint32_t cell = N(c, groups)->first; cell != CKPT_PNIL; cell = p->cells[cell].next) {
        size_t g = p->cells[cell].node;
        TRY(charge(c, N(c, g), 1 + (uint64_t)N(c, g)->count)); /* and its keys, looked up below */
        if (!PUSH(t, groups, groups_len, CAP_GR)) return ckpt_fail_oom(c->err);
        ckpt_torch_group *gr = &t->groups[t->groups_len];
        memset(gr, 0, sizeof *gr);
        double x;
        if (number_of(c, dict_get(c, g, "lr"), &x)) gr->has |= CKPT_TG_LR, gr->lr = x;
        if (number_of(c, dict_get(c, g, "eps"), &x)) gr->has |= CKPT_TG_EPS, gr->eps = x;
        if (number_of(c, dict_get(c, g, "weight_decay"), &x)) gr->has |= CKPT_TG_WEIGHT_DECAY, gr->weight_decay = x;
        size_t b = dict_get(c, g, "betas");
        if (is_seq(c, b) && N(c, b)->count == 2 && number_of(c, ckpt_pickle_item(p, b, 0), &gr->beta1) &&
            number_of(c, ckpt_pickle_item(p, b, 1), &gr->beta2))
            gr->has |= CKPT_TG_BETAS;
        static const struct {
            const char *name;
            unsigned bit;
        } flags[] = {{"amsgrad", CKPT_TG_AMSGRAD},
                     {"maximize", CKPT_TG_MAXIMIZE},
                     {"decoupled_weight_decay", CKPT_TG_DECOUPLED}};
        for (size_t f = 0; f < 3; f++) {
            size_t v = dict_get(c, g, flags[f].name);
            if (v == CKPT_PNIL || N(c, v)->kind != CKPT_PK_BOOL) continue;
            gr->has |= flags[f].bit;
            bool on = N(c, v)->truth;
            if (f == 0) gr->amsgrad = on;
            else if (f == 1) gr->maximize = on;
            else gr->decoupled = on;
        }
        gr->params = t->ints_len;
        size_t params = dict_get(c, g, "params");
        for (uint32_t pc = N(c, params)->first; pc != CKPT_PNIL; pc = p->cells[pc].next) {
            if (!grow((void **)&t->ints, &t->caps[CAP_IN], t->ints_len + 1, sizeof *t->ints))
                return ckpt_fail_oom(c->err);
            TRY(charge(c, N(c, params), 1));
            t->ints[t->ints_len++] = N(c, p->cells[pc].node)->i;
            gr->params_len++;
        }
        pairs += gr->params_len;
        size_t names = dict_get(c, g, "param_names");
        if (is_seq(c, names)) {
            gr->has |= CKPT_TG_PARAM_NAMES;
            gr->names = t->strings_len;
            for (uint32_t nc = N(c, names)->first; nc != CKPT_PNIL; nc = p->cells[nc].next) {
                const ckpt_pnode *s = N(c, p->cells[nc].node);
                TRY(charge(c, N(c, names), 1 + s->len / 8));
                if (!grow((void **)&t->strings, &t->caps[CAP_SR], t->strings_len + 1, sizeof *t->strings))
                    return ckpt_fail_oom(c->err);
                t->strings[t->strings_len] = s->kind == CKPT_PK_STR ? dup_span(span(c, s), s->len) : dup_span("", 0);
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
    size_t state = dict_get(c, k, "state");
    dict_it it;
    size_t key, value;
    dict_begin(&it, c, state);
    int rc = 0;
    while (!rc && dict_next(&it, &key, &value)) {
        size_t mark = path_push_key(c, key);
        if ((rc = charge(c, N(c, value), 1 + (uint64_t)N(c, value)->count))) break; /* and its state */
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
        dict_begin(&si, c, value);
        while (!rc && dict_next(&si, &sk, &sv)) {
            const ckpt_pnode *kn = N(c, sk);
            if (kn->kind != CKPT_PK_STR) continue;
            size_t m2 = path_push_key(c, sk);
            size_t x = CKPT_TORCH_NONE;
            if (str_is(c, sk, "step")) {
                double st = 0;
                rc = read_step(c, t->entries[ei].index, sv, &st);
                t->entries[ei].has_step = true;
                t->entries[ei].step = st;
            } else if (!(rc = tensor_of(c, sv, &x))) {
                size_t *slot = str_is(c, sk, "exp_avg")          ? &t->entries[ei].exp_avg
                               : str_is(c, sk, "exp_avg_sq")     ? &t->entries[ei].exp_avg_sq
                               : str_is(c, sk, "max_exp_avg_sq") ? &t->entries[ei].max_exp_avg_sq
                                                                 : NULL;
                double num = 0;
                if (slot && x != CKPT_TORCH_NONE) *slot = x;
                else if (x != CKPT_TORCH_NONE || number_of(c, sv, &num)) {
                    rc = add_named(c, span(c, kn), kn->len, x, num);
                    if (!rc) t->entries[ei].other_len++;
                }
            }
            path_pop(c, m2);
        }
        path_pop(c, mark);
    }
    free(map);
    return rc;
}

static int search(tctx *c, size_t k, unsigned depth)
{
    if (k == CKPT_PNIL || depth >= CKPT_PICKLE_MAX_DEPTH) return 0;
    const ckpt_pnode *n = N(c, k);
    if (n->kind < CKPT_PK_TUPLE) return 0;
    size_t x;
    TRY(tensor_of(c, k, &x));
    if (x != CKPT_TORCH_NONE || (c->seen[k] & SEEN)) return 0;
    c->seen[k] |= SEEN;
    const ckpt_pickle *p = c->t->pickle;
    if (is_dict(c, k)) {
        if (is_optimizer(c, k)) return add_optimizer(c, k);
        bool model;
        TRY(is_model(c, k, &model));
        if (model) return add_model(c, k);
        dict_it it;
        size_t key, value;
        dict_begin(&it, c, k);
        while (dict_next(&it, &key, &value)) {
            size_t mark = path_push_key(c, key);
            int rc = search(c, value, depth + 1);
            path_pop(c, mark);
            TRY(rc);
        }
        return 0;
    }
    if (n->kind == CKPT_PK_PERSID) return 0;
    size_t j = 0;
    bool indexed = n->kind == CKPT_PK_LIST || n->kind == CKPT_PK_TUPLE;
    if (!indexed) { /* an opaque object: its arguments and state, on the same path */
        TRY(search(c, n->b, depth + 1));
        TRY(search(c, n->c, depth + 1));
        if (n->kind == CKPT_PK_BUILD) TRY(search(c, n->a, depth + 1));
    }
    for (uint32_t cell = n->first; cell != CKPT_PNIL; cell = p->cells[cell].next, j++) {
        size_t mark = indexed ? path_push_index(c, j) : c->path.len;
        int rc = search(c, p->cells[cell].node, depth + 1);
        path_pop(c, mark);
        TRY(rc);
    }
    return 0;
}

/* ---- containers ---- */

static int fail_container(ckpt_error *err, int code, const char *text)
{
    return ckpt_fail(err, "PyTorch", code, CKPT_NONE, 0, "%s", text);
}

static int read_member(ckpt_zip *z, size_t k, uint8_t **out, size_t *len, ckpt_error *err)
{
    ckpt_source ms;
    ckpt_window w;
    TRY(ckpt_zip_member_source(z, k, &ms, &w, err));
    if (ms.size > CKPT_PICKLE_MAX_LEN)
        return ckpt_fail(err, "PyTorch", CKPT_E_TORCH_UNSUPPORTED, CKPT_NONE, 0,
                         "a pickle of more than 4 GiB is not read");
    uint8_t *d = malloc(ms.size ? (size_t)ms.size : 1);
    if (!d) return ckpt_fail_oom(err);
    int rc = ckpt_read_at(&ms, 0, d, (size_t)ms.size, z->members[k].name, err);
    if (rc) {
        free(d);
        return rc;
    }
    *out = d;
    *len = (size_t)ms.size;
    return 0;
}

static int open_zip(tctx *c)
{
    ckpt_torch *t = c->t;
    TRY(ckpt_zip_open(c->src, &c->zip, c->err));
    ckpt_zip *z = c->zip;
    size_t pkl = CKPT_TORCH_NONE;
    for (size_t k = 0; k < z->count && pkl == CKPT_TORCH_NONE; k++) {
        const char *nm = z->members[k].name, *slash = strchr(nm, '/');
        if (slash && !strcmp(slash, "/data.pkl")) pkl = k;
    }
    if (pkl == CKPT_TORCH_NONE) {
        /* TorchScript without data.pkl (older torch.jit.save) still has constants.pkl */
        for (size_t k = 0; k < z->count; k++) {
            const char *slash = strchr(z->members[k].name, '/');
            if (slash && !strcmp(slash, "/constants.pkl"))
                return fail_container(c->err, CKPT_E_TORCH_NOT_CHECKPOINT,
                                      "a TorchScript archive (torch.jit.save): it holds a program, not a checkpoint");
        }
        return fail_container(c->err, CKPT_E_TORCH_NOT_CHECKPOINT, "no data.pkl in this zip: not a torch.save file");
    }
    const char *nm = z->members[pkl].name;
    size_t pl = (size_t)(strchr(nm, '/') - nm);
    t->prefix = dup_span(nm, pl);
    if (!t->prefix) return ckpt_fail_oom(c->err);
    strbuf probe = {0};
    sb_printf(&probe, "%s/constants.pkl", t->prefix);
    const ckpt_zip_member *cm = probe.data ? ckpt_zip_find(z, probe.data) : NULL;
    sb_free(&probe);
    if (cm)
        return fail_container(c->err, CKPT_E_TORCH_NOT_CHECKPOINT,
                              "a TorchScript archive (torch.jit.save): it holds a program, not a checkpoint");
    for (size_t k = 0; k < z->count; k++)
        if (z->members[k].method != 0) {
            strbuf ms = {0};
            j_string(&ms, z->members[k].name);
            int rc = ckpt_fail(c->err, "PyTorch", CKPT_E_TORCH_UNSUPPORTED, z->members[k].entry_offset + 10, 2,
                               "member %s is compressed (method %u); torch.save stores members uncompressed",
                               ms.data ? ms.data : "\"\"", z->members[k].method);
            sb_free(&ms);
            return rc;
        }
    strbuf bo = {0};
    sb_printf(&bo, "%s/byteorder", t->prefix);
    const ckpt_zip_member *bm = bo.data ? ckpt_zip_find(z, bo.data) : NULL;
    sb_free(&bo);
    if (bm) {
        size_t k = (size_t)(bm - z->members);
        if (bm->uncompressed <= 16) {
            uint8_t *d;
            size_t len;
            TRY(read_member(z, k, &d, &len, c->err));
            bool big = len == 3 && !memcmp(d, "big", 3);
            free(d);
            if (big)
                return fail_container(c->err, CKPT_E_TORCH_UNSUPPORTED,
                                      "big-endian checkpoint (byteorder \"big\") is not supported");
        }
    }
    size_t len;
    TRY(read_member(z, pkl, &t->pickle_bytes, &len, c->err));
    TRY(ckpt_pickle_read(t->pickle_bytes, len, nm, 0, z->members[pkl].data_offset, &t->pickle, c->err));
    c->member = nm;
    c->base = z->members[pkl].data_offset;
    return 0;
}

static const uint8_t legacy_magic[10] = {0x6c, 0xfc, 0x9c, 0x46, 0xf9, 0x20, 0x6a, 0xa8, 0x50, 0x19};

/* The five pickles from the start of the file, read into a buffer grown until they fit. */
static int open_legacy(tctx *c, const char *name, uint64_t *storages_at)
{
    ckpt_torch *t = c->t;
    uint64_t size = c->src->size;
    size_t cap = size < (1u << 16) ? (size_t)size : 1u << 16;
    t->prefix = dup_span("", 0);
    if (!t->prefix) return ckpt_fail_oom(c->err);
    for (;;) {
        uint8_t *d = realloc(t->legacy_bytes, cap ? cap : 1);
        if (!d) return ckpt_fail_oom(c->err);
        t->legacy_bytes = d;
        TRY(ckpt_read_at(c->src, 0, d, cap, "the pickles", c->err));
        ckpt_pickle *ps[5] = {0};
        size_t at = 0;
        int rc = 0;
        for (int k = 0; k < 5 && !rc; k++) {
            rc = ckpt_pickle_read(d + at, cap - at, name, at, at, &ps[k], c->err);
            if (!rc) at += ps[k]->end;
        }
        if (rc && (rc == CKPT_E_PICKLE_MALFORMED || rc == CKPT_E_PICKLE_OPCODE) && cap < size &&
            cap < CKPT_PICKLE_MAX_LEN) {
            for (int k = 0; k < 5; k++) ckpt_pickle_free(ps[k]);
            ckpt_error_clear(c->err);
            cap = size - cap < cap ? (size_t)size : 2 * cap; /* the pickles may reach further: read more */
            if (cap > CKPT_PICKLE_MAX_LEN) cap = CKPT_PICKLE_MAX_LEN;
            continue;
        }
        if (rc) {
            for (int k = 0; k < 5; k++) ckpt_pickle_free(ps[k]);
            return rc;
        }
        t->legacy_pickles[0] = ps[0];
        t->legacy_pickles[1] = ps[1];
        t->legacy_pickles[2] = ps[2];
        t->pickle = ps[3];
        t->legacy_pickles[3] = ps[4];
        const ckpt_pnode *m = ckpt_pickle_node(ps[0], ps[0]->root);
        if (m->kind != CKPT_PK_BIGINT || (m->flags & CKPT_PF_TEXT) || m->len != 10 ||
            memcmp(ps[0]->data + m->at, legacy_magic, 10))
            return fail_container(c->err, CKPT_E_TORCH_NOT_CHECKPOINT,
                                  "the first pickle is not torch.save's magic number: not a torch.save file");
        const ckpt_pnode *v = ckpt_pickle_node(ps[1], ps[1]->root);
        if (v->kind != CKPT_PK_INT || v->i != 1001)
            return fail_container(c->err, CKPT_E_TORCH_UNSUPPORTED,
                                  "a legacy torch.save file of another protocol version than 1001");
        c->member = name;
        /* sys_info: little_endian */
        tctx ci = *c;
        ckpt_torch tmp = *t;
        tmp.pickle = ps[2];
        ci.t = &tmp;
        size_t le = is_dict(&ci, ps[2]->root) ? dict_get(&ci, ps[2]->root, "little_endian") : CKPT_PNIL;
        if (le != CKPT_PNIL && ckpt_pickle_node(ps[2], le)->kind == CKPT_PK_BOOL && !ckpt_pickle_node(ps[2], le)->truth)
            return fail_container(c->err, CKPT_E_TORCH_UNSUPPORTED,
                                  "big-endian checkpoint (sys_info little_endian False) is not supported");
        *storages_at = at;
        return 0;
    }
}

void ckpt_torch_free(ckpt_torch *t)
{
    if (!t) return;
    free(t->prefix);
    ckpt_pickle_free(t->pickle);
    free(t->pickle_bytes);
    for (int k = 0; k < 4; k++) ckpt_pickle_free(t->legacy_pickles[k]);
    free(t->legacy_bytes);
    for (size_t k = 0; k < t->storages_len; k++) free(t->storages[k].key);
    free(t->storages);
    free(t->tensors);
    free(t->dims);
    for (size_t k = 0; k < t->named_len; k++) free(t->named[k].name);
    free(t->named);
    for (size_t k = 0; k < t->models_len; k++) free(t->models[k].path);
    free(t->models);
    for (size_t k = 0; k < t->optimizers_len; k++) free(t->optimizers[k].path);
    free(t->optimizers);
    free(t->groups);
    free(t->entries);
    free(t->ints);
    for (size_t k = 0; k < t->strings_len; k++) free(t->strings[k]);
    free(t->strings);
    free(t->tensor_of_node);
    free(t);
}

int ckpt_torch_open(const ckpt_source *src, const char *name, ckpt_torch **out, ckpt_error *err)
{
    *out = NULL;
    ckpt_torch *t = calloc(1, sizeof *t);
    if (!t) return ckpt_fail_oom(err);
    t->model = CKPT_TORCH_NONE;
    tctx c = {t, src, err, name, NULL, NULL, 0, NULL, {0}, 0, 0};
    uint8_t head[4] = {0};
    size_t got = src->read(src->ctx, 0, head, src->size < 4 ? (size_t)src->size : 4);
    int rc;
    uint64_t storages_at = 0;
    if (got == 4 && !memcmp(head, "PK\x03\x04", 4)) rc = open_zip(&c);
    else if (got >= 1 && head[0] == 0x80) {
        t->legacy = true;
        rc = open_legacy(&c, name, &storages_at);
    } else rc = fail_container(err, CKPT_E_TORCH_NOT_CHECKPOINT, "neither a zip nor a pickle: not a torch.save file");
    if (!rc) {
        t->tensor_of_node = malloc((t->pickle->nodes_len ? t->pickle->nodes_len : 1) * sizeof *t->tensor_of_node);
        c.seen = calloc(t->pickle->nodes_len ? t->pickle->nodes_len : 1, 1);
        if (!t->tensor_of_node || !c.seen) rc = ckpt_fail_oom(err);
        else
            for (size_t k = 0; k < t->pickle->nodes_len; k++) t->tensor_of_node[k] = CKPT_TORCH_NONE;
    }
    if (!rc) rc = t->legacy ? storages_legacy(&c, t->legacy_pickles[3], storages_at) : storages_zip(&c);
    if (!rc) {
        sb_puts(&c.path, "");
        rc = search(&c, t->pickle->root, 0);
        if (!rc && c.path.failed) rc = ckpt_fail_oom(err);
    }
    if (!rc && t->models_len) t->model = 0;
    t->pickle_at = c.base;
    ckpt_zip_free(c.zip);
    free(c.hash);
    free(c.seen);
    sb_free(&c.path);
    if (rc) {
        ckpt_torch_free(t);
        return rc;
    }
    *out = t;
    return 0;
}

bool ckpt_torch_same(const ckpt_torch *t, size_t a, size_t b)
{
    const ckpt_torch_tensor *x = &t->tensors[a], *y = &t->tensors[b];
    if (x->storage != y->storage || x->offset != y->offset || x->rank != y->rank || strcmp(x->dtype, y->dtype))
        return false;
    return !memcmp(t->dims + x->dims, t->dims + y->dims, 2 * (size_t)x->rank * sizeof *t->dims);
}

/* ---- weights_only over all the file's pickles (a legacy file has five) ---- */

static size_t pickles_of(const ckpt_torch *t, const ckpt_pickle *out[5])
{
    size_t n = 0;
    if (t->legacy)
        for (int k = 0; k < 3; k++) out[n++] = t->legacy_pickles[k];
    out[n++] = t->pickle;
    if (t->legacy) out[n++] = t->legacy_pickles[3];
    return n;
}

bool ckpt_torch_weights_only(const ckpt_torch *t)
{
    const ckpt_pickle *ps[5];
    size_t n = pickles_of(t, ps);
    for (size_t k = 0; k < n; k++)
        if (!ckpt_pickle_weights_only(ps[k])) return false;
    return true;
}

/* The pickles' names as JSON strings, each once, in file order, joined by sep. */
static void globals_merged(strbuf *sb, const ckpt_torch *t, bool refused, const char *sep)
{
    const ckpt_pickle *ps[5];
    size_t n = pickles_of(t, ps);
    strbuf all = {0};
    size_t *spans = NULL, count = 0, cap = 0; /* start, length pairs of the names kept */
    size_t *table = NULL, tcap = 0;
    bool first = true;
    for (size_t k = 0; k < n; k++) {
        strbuf one = {0};
        ckpt_pickle_globals_json(&one, ps[k], refused);
        if (one.failed) sb->failed = true;
        /* ["a","b"]: the strings, escapes kept */
        for (size_t i = 0; one.data && i < one.len; i++) {
            if (one.data[i] != '"') continue;
            size_t j = i + 1;
            while (j < one.len && one.data[j] != '"') j += one.data[j] == '\\' ? 2 : 1;
            if (j >= one.len) break;
            const char *e = one.data + i;
            size_t elen = j + 1 - i;
            i = j;
            if (2 * (count + 1) > tcap) {
                size_t nc = tcap ? 2 * tcap : 64;
                size_t *nt = malloc(nc * sizeof *nt);
                if (!nt) {
                    sb->failed = true;
                    break;
                }
                for (size_t x = 0; x < nc; x++) nt[x] = SIZE_MAX;
                for (size_t q = 0; q < count; q++) {
                    size_t h = (size_t)hash_bytes(all.data + spans[2 * q], spans[2 * q + 1]) & (nc - 1);
                    while (nt[h] != SIZE_MAX) h = (h + 1) & (nc - 1);
                    nt[h] = q;
                }
                free(table);
                table = nt;
                tcap = nc;
            }
            size_t h = (size_t)hash_bytes(e, elen) & (tcap - 1);
            bool dup = false;
            for (; table[h] != SIZE_MAX; h = (h + 1) & (tcap - 1))
                if (spans[2 * table[h] + 1] == elen && !memcmp(all.data + spans[2 * table[h]], e, elen)) {
                    dup = true;
                    break;
                }
            if (dup) continue;
            if (!grow((void **)&spans, &cap, 2 * (count + 1), sizeof *spans)) {
                sb->failed = true;
                break;
            }
            spans[2 * count] = all.len;
            spans[2 * count + 1] = elen;
            sb_put(&all, e, elen);
            table[h] = count++;
            if (!first) sb_puts(sb, sep);
            sb_put(sb, e, elen);
            first = false;
        }
        sb_free(&one);
    }
    if (all.failed) sb->failed = true;
    sb_free(&all);
    free(spans);
    free(table);
}

void ckpt_torch_globals_json(strbuf *sb, const ckpt_torch *t, bool refused)
{
    sb_putc(sb, '[');
    globals_merged(sb, t, refused, ",");
    sb_putc(sb, ']');
}

void ckpt_torch_weights_only_warning(strbuf *sb, const ckpt_torch *t)
{
    strbuf names = {0};
    globals_merged(&names, t, true, ", ");
    if (names.len) {
        sb_puts(sb, "PyTorch: the file names Python callables that torch.load(weights_only=True) refuses: ");
        sb_put(sb, names.data, names.len);
    }
    if (names.failed) sb->failed = true;
    sb_free(&names);
}

/* ---- JSON ---- */

static void j_tensor(strbuf *sb, const ckpt_torch *t, size_t k)
{
    if (k == CKPT_TORCH_NONE) {
        sb_puts(sb, "null");
        return;
    }
    const ckpt_torch_tensor *x = &t->tensors[k];
    sb_puts(sb, "{\"shape\":");
    j_dims(sb, ckpt_torch_size(t, k), x->rank);
    sb_puts(sb, ",\"stride\":");
    j_dims(sb, ckpt_torch_stride(t, k), x->rank);
    sb_printf(sb, ",\"dtype\":\"%s\",\"storage\":", x->dtype);
    j_string(sb, t->storages[x->storage].key);
    sb_puts(sb, ",\"storageOffset\":");
    j_u64(sb, x->offset);
    sb_puts(sb, ",\"offset\":");
    j_u64(sb, x->at);
    sb_printf(sb, ",\"contiguous\":%s}", x->contiguous ? "true" : "false");
}

static void j_opt_number(strbuf *sb, const char *name, bool has, double x)
{
    sb_printf(sb, ",\"%s\":", name);
    if (has) j_double(sb, x);
    else sb_puts(sb, "null");
}

static void j_opt_bool(strbuf *sb, const char *name, bool has, bool x)
{
    sb_printf(sb, ",\"%s\":%s", name, has ? (x ? "true" : "false") : "null");
}

/* One parameter group as JSON: {lr, betas, eps, weightDecay, amsgrad, maximize,
 * [decoupledWeightDecay,] params, paramNames}, null for what the file does not hold. */
void ckpt_torch_group_json(strbuf *sb, const ckpt_torch *t, const ckpt_torch_group *gr, bool decoupled)
{
    sb_puts(sb, "{\"lr\":");
    if (gr->has & CKPT_TG_LR) j_double(sb, gr->lr);
    else sb_puts(sb, "null");
    sb_puts(sb, ",\"betas\":");
    if (gr->has & CKPT_TG_BETAS) {
        sb_putc(sb, '[');
        j_double(sb, gr->beta1);
        sb_putc(sb, ',');
        j_double(sb, gr->beta2);
        sb_putc(sb, ']');
    } else sb_puts(sb, "null");
    j_opt_number(sb, "eps", gr->has & CKPT_TG_EPS, gr->eps);
    j_opt_number(sb, "weightDecay", gr->has & CKPT_TG_WEIGHT_DECAY, gr->weight_decay);
    j_opt_bool(sb, "amsgrad", gr->has & CKPT_TG_AMSGRAD, gr->amsgrad);
    j_opt_bool(sb, "maximize", gr->has & CKPT_TG_MAXIMIZE, gr->maximize);
    if (decoupled) j_opt_bool(sb, "decoupledWeightDecay", gr->has & CKPT_TG_DECOUPLED, gr->decoupled);
    sb_puts(sb, ",\"params\":[");
    for (size_t j = 0; j < gr->params_len; j++) sb_printf(sb, j ? ",%lld" : "%lld", (long long)t->ints[gr->params + j]);
    sb_puts(sb, "],\"paramNames\":");
    if (gr->has & CKPT_TG_PARAM_NAMES) {
        sb_putc(sb, '[');
        for (size_t j = 0; j < gr->names_len; j++) {
            if (j) sb_putc(sb, ',');
            j_string(sb, t->strings[gr->names + j]);
        }
        sb_putc(sb, ']');
    } else sb_puts(sb, "null");
    sb_putc(sb, '}');
}

static void j_optimizer(strbuf *sb, const ckpt_torch *t, const ckpt_torch_optimizer *o)
{
    static const char *const kinds[] = {"null", "\"adam\"", "\"adamw\""};
    sb_puts(sb, "{\"path\":");
    j_string(sb, o->path);
    sb_printf(sb, ",\"kind\":%s,\"groups\":[", kinds[o->kind]);
    for (size_t g = 0; g < o->groups_len; g++) {
        const ckpt_torch_group *gr = &t->groups[o->groups + g];
        if (g) sb_putc(sb, ',');
        ckpt_torch_group_json(sb, t, gr, true);
    }
    sb_puts(sb, "],\"entries\":[");
    for (size_t k = 0; k < o->entries_len; k++) {
        const ckpt_torch_entry *e = &t->entries[o->entries + k];
        size_t lead = e->exp_avg != CKPT_TORCH_NONE                                  ? e->exp_avg
                      : e->other_len && t->named[e->other].tensor != CKPT_TORCH_NONE ? t->named[e->other].tensor
                                                                                     : CKPT_TORCH_NONE;
        sb_printf(sb, "%s{\"index\":%lld,\"group\":", k ? "," : "", (long long)e->index);
        if (e->group == CKPT_TORCH_NONE) sb_puts(sb, "null");
        else j_u64(sb, e->group);
        sb_puts(sb, ",\"step\":");
        if (e->has_step) j_double(sb, e->step);
        else sb_puts(sb, "null");
        sb_puts(sb, ",\"shape\":");
        if (lead != CKPT_TORCH_NONE) j_dims(sb, ckpt_torch_size(t, lead), t->tensors[lead].rank);
        else sb_puts(sb, "null");
        sb_puts(sb, ",\"dtype\":");
        if (lead != CKPT_TORCH_NONE) sb_printf(sb, "\"%s\"", t->tensors[lead].dtype);
        else sb_puts(sb, "null");
        sb_puts(sb, ",\"expAvg\":");
        j_tensor(sb, t, e->exp_avg);
        sb_puts(sb, ",\"expAvgSq\":");
        j_tensor(sb, t, e->exp_avg_sq);
        sb_puts(sb, ",\"maxExpAvgSq\":");
        j_tensor(sb, t, e->max_exp_avg_sq);
        sb_puts(sb, ",\"other\":[");
        for (size_t j = 0; j < e->other_len; j++) {
            const ckpt_torch_named *nm = &t->named[e->other + j];
            sb_puts(sb, j ? ",{\"name\":" : "{\"name\":");
            j_string(sb, nm->name);
            if (nm->tensor != CKPT_TORCH_NONE) {
                sb_puts(sb, ",\"tensor\":");
                j_tensor(sb, t, nm->tensor);
            } else {
                sb_puts(sb, ",\"value\":");
                j_double(sb, nm->value);
            }
            sb_putc(sb, '}');
        }
        sb_puts(sb, "]}");
    }
    sb_puts(sb, "]}");
}

void ckpt_torch_json(strbuf *sb, const ckpt_torch *t)
{
    sb_printf(sb, "{\"container\":{\"format\":\"%s\",\"prefix\":", t->legacy ? "legacy" : "zip");
    if (t->legacy) sb_puts(sb, "null");
    else j_string(sb, t->prefix);
    sb_puts(sb, ",\"records\":");
    j_u64(sb, t->records);
    sb_puts(sb, "},\"optimizer\":");
    if (t->optimizers_len) j_optimizer(sb, t, &t->optimizers[0]);
    else sb_puts(sb, "null");
    sb_puts(sb, ",\"otherOptimizers\":[");
    for (size_t k = 1; k < t->optimizers_len; k++) {
        if (k > 1) sb_putc(sb, ',');
        j_optimizer(sb, t, &t->optimizers[k]);
    }
    sb_puts(sb, "],\"models\":[");
    for (size_t m = 0; m < t->models_len; m++) {
        const ckpt_torch_model *md = &t->models[m];
        sb_puts(sb, m ? ",{\"path\":" : "{\"path\":");
        j_string(sb, md->path);
        sb_puts(sb, ",\"tensors\":[");
        for (size_t j = 0; j < md->count; j++) {
            const ckpt_torch_named *nm = &t->named[md->first + j];
            const ckpt_torch_tensor *x = &t->tensors[nm->tensor];
            sb_puts(sb, j ? ",{\"name\":" : "{\"name\":");
            j_string(sb, nm->name);
            sb_puts(sb, ",\"shape\":");
            j_dims(sb, ckpt_torch_size(t, nm->tensor), x->rank);
            sb_printf(sb, ",\"dtype\":\"%s\",\"storage\":", x->dtype);
            j_string(sb, t->storages[x->storage].key);
            sb_puts(sb, ",\"offset\":");
            j_u64(sb, x->at);
            sb_puts(sb, ",\"tie\":");
            /* the first earlier tensor of this model with the same storage identity */
            size_t tie = CKPT_TORCH_NONE;
            for (size_t i = 0; i < j && tie == CKPT_TORCH_NONE; i++)
                if (ckpt_torch_same(t, t->named[md->first + i].tensor, nm->tensor)) tie = i;
            if (tie == CKPT_TORCH_NONE) sb_puts(sb, "null");
            else j_string(sb, t->named[md->first + tie].name);
            sb_putc(sb, '}');
        }
        sb_puts(sb, "]}");
    }
    sb_puts(sb, "],\"model\":");
    if (t->model == CKPT_TORCH_NONE) sb_puts(sb, "null");
    else j_string(sb, t->models[t->model].path);
    sb_puts(sb, ",\"storages\":[");
    for (size_t s = 0; s < t->storages_len; s++) {
        const ckpt_torch_storage *sg = &t->storages[s];
        sb_puts(sb, s ? ",{\"key\":" : "{\"key\":");
        j_string(sb, sg->key);
        sb_printf(sb, ",\"dtype\":\"%s\",\"numel\":", sg->dtype);
        j_u64(sb, sg->numel);
        sb_puts(sb, ",\"offset\":");
        j_u64(sb, sg->at);
        sb_putc(sb, '}');
    }
    sb_printf(sb, "],\"weightsOnly\":%s,\"globals\":", ckpt_torch_weights_only(t) ? "true" : "false");
    ckpt_torch_globals_json(sb, t, false);
    sb_puts(sb, ",\"warnings\":[");
    strbuf w = {0};
    ckpt_torch_weights_only_warning(&w, t);
    if (w.len) j_string(sb, w.data);
    if (w.failed) sb->failed = true;
    sb_free(&w);
    sb_puts(sb, "]}");
}
