/* Storages and tensors (format.md 10.2): each persistent id a storage record checked against the
 * container, each rebuild call a tensor whose reach is checked against its storage. */
#include "families/pytorch/values.h"

#include <stdio.h>

/* ---- storages ---- */

static size_t storage_find(const tctx *c, const char *key, size_t n)
{
    if (!c->hash_cap) return CKPT_TORCH_NONE;
    for (size_t h = (size_t)torch_hash_bytes(key, n) & (c->hash_cap - 1);; h = (h + 1) & (c->hash_cap - 1)) {
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
            size_t x = (size_t)torch_hash_bytes(key, strlen(key)) & (cap - 1);
            while (h[x] != CKPT_TORCH_NONE) x = (x + 1) & (cap - 1);
            h[x] = k;
        }
    }
    const char *key = c->t->storages[s].key;
    size_t x = (size_t)torch_hash_bytes(key, strlen(key)) & (c->hash_cap - 1);
    while (c->hash[x] != CKPT_TORCH_NONE) x = (x + 1) & (c->hash_cap - 1);
    c->hash[x] = s;
    return true;
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
        return torch_fail_malformed(c, pn, "a persistent id that is not ('storage', type, key, location, numel)");
    const ckpt_pickle *p = t->pickle;
    size_t f[6] = {CKPT_PNIL, CKPT_PNIL, CKPT_PNIL, CKPT_PNIL, CKPT_PNIL, CKPT_PNIL};
    size_t j = 0;
    for (uint32_t cell = N(c, id)->first; cell != CKPT_PNIL && j < 6; cell = p->cells[cell].next)
        f[j++] = p->cells[cell].node;
    const ckpt_pnode *key = N(c, f[2]), *numel = N(c, f[4]);
    if (!torch_str_is(c, f[0], "storage") || key->kind != CKPT_PK_STR || numel->kind != CKPT_PK_INT || numel->i < 0)
        return torch_fail_malformed(c, pn, "a persistent id that is not ('storage', type, key, location, numel)");
    if (f[5] != CKPT_PNIL && N(c, f[5])->kind != CKPT_PK_NONE)
        return ckpt_fail(c->err, "PyTorch", CKPT_E_TORCH_UNSUPPORTED, CKPT_NONE, 0,
                         "storage views of files before PyTorch 1.0 are not read");
    size_t s = storage_find(c, span(c, key), key->len);
    if (s == CKPT_TORCH_NONE) {
        const char *dtype = NULL;
        ckpt_pname st = torch_global_of(c, f[1], &dtype);
        if (st == CKPT_PN_UNTYPED_STORAGE) dtype = "uint8";
        unsigned width =
            dtype ? ckpt_dtype_width(ckpt_torch_dtype(dtype)) : 0; /* a name that is no storage type: none */
        if ((st != CKPT_PN_STORAGE && st != CKPT_PN_UNTYPED_STORAGE) || !width) {
            strbuf ks = {0}, ts = {0};
            j_string_n(&ks, span(c, key), key->len);
            const ckpt_pnode *g = N(c, f[1]);
            if (g->kind == CKPT_PK_GLOBAL) {
                strbuf nm = {0};
                sb_put(&nm, (const char *)p->data + g->at, g->len);
                sb_putc(&nm, '.');
                sb_put(&nm, (const char *)p->data + g->at2, g->len2);
                j_string_n(&ts, nm.data ? nm.data : "", nm.len);
                sb_free(&nm);
            } else sb_puts(&ts, "(not a name)");
            int rc = ckpt_fail(c->err, "PyTorch", CKPT_E_TORCH_UNSUPPORTED, CKPT_NONE, 0,
                               "storage %s has type %s, which is not read", ks.data ? ks.data : "\"\"",
                               ts.data ? ts.data : "\"\"");
            sb_free(&ks);
            sb_free(&ts);
            return rc;
        }
        if (memchr(span(c, key), 0, key->len)) return torch_fail_malformed(c, pn, "a storage key holding a NUL byte");
        if ((uint64_t)numel->i > UINT64_MAX / width)
            return torch_fail_malformed(c, pn, "a storage whose byte count passes 2^64");
        if (!PUSH(t, storages, storages_len, CAP_ST)) return ckpt_fail_oom(c->err);
        ckpt_torch_storage *sg = &t->storages[t->storages_len];
        sg->key = torch_dup_span(span(c, key), key->len);
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
int torch_storages_zip(tctx *c)
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
int torch_storages_legacy(tctx *c, const ckpt_pickle *keys, uint64_t at)
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
        j_string_n(&ks, (const char *)keys->data + kn->at, kn->len);
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
    if (!torch_is_seq(c, k)) return torch_fail_malformed(c, at, "a tensor's size or stride that is not a tuple");
    const ckpt_pickle *p = c->t->pickle;
    uint32_t r = 0;
    for (uint32_t cell = N(c, k)->first; cell != CKPT_PNIL; cell = p->cells[cell].next) {
        const ckpt_pnode *x = N(c, p->cells[cell].node);
        if (x->kind != CKPT_PK_INT)
            return torch_fail_malformed(c, at, "a tensor's size or stride that is not integers");
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
    j_string_n(&ps, c->path.data ? c->path.data : "", c->path.len);
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
    if (!torch_is_seq(c, args))
        return torch_fail_malformed(c, at, "a tensor rebuilt from arguments that are not a tuple");
    const ckpt_pickle *p = t->pickle;
    size_t a[7] = {CKPT_PNIL, CKPT_PNIL, CKPT_PNIL, CKPT_PNIL, CKPT_PNIL, CKPT_PNIL, CKPT_PNIL};
    size_t j = 0;
    for (uint32_t cell = N(c, args)->first; cell != CKPT_PNIL && j < 7; cell = p->cells[cell].next)
        a[j++] = p->cells[cell].node;
    if (j < 4 || (how == CKPT_PN_REBUILD_TENSOR_V3 && j < 7))
        return torch_fail_malformed(c, at, "a tensor rebuilt from too few arguments");
    if (N(c, a[0])->kind != CKPT_PK_PERSID)
        return torch_fail_malformed(c, at, "a tensor whose storage is not a persistent id");
    size_t s;
    TRY(storage_of(c, a[0], &s));
    const ckpt_pnode *off = N(c, a[1]);
    if (off->kind != CKPT_PK_INT) return torch_fail_malformed(c, at, "a tensor whose storage offset is not an integer");
    uint32_t rank, rank2;
    bool negative = off->i < 0;
    TRY(tuple_ints(c, a[2], at, NULL, &rank, &negative));
    TRY(tuple_ints(c, a[3], at, NULL, &rank2, &negative));
    if (rank != rank2) return torch_fail_malformed(c, at, "a tensor whose size and stride differ in length");
    const char *dtype = t->storages[s].dtype;
    unsigned width = t->storages[s].width;
    if (how == CKPT_PN_REBUILD_TENSOR_V3) {
        if (torch_global_of(c, a[6], &dtype) != CKPT_PN_DTYPE || !(width = ckpt_dtype_width(ckpt_torch_dtype(dtype))))
            return torch_fail_malformed(c, at, "a tensor whose dtype is not read");
    }
    TRY(torch_charge(c, at, 1 + 2 * (uint64_t)rank));
    /* one more than needed: the pool exists even for 0-d tensors */
    if (!ckpt_grow((void **)&t->dims, &t->caps[CAP_DI], t->dims_len + 2 * (size_t)rank + 1, sizeof *t->dims))
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

/* Node k as a tensor: *out its index, CKPT_TORCH_NONE when k is not one. A parameter wraps an
 * earlier node: at most CKPT_PICKLE_MAX_DEPTH of them are unwrapped. A BUILD is never a tensor:
 * BUILD on a tensor gives it other values (Tensor.set_), and such a file is refused when it is
 * read (open.c). */
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
    if (n->kind == CKPT_PK_REDUCE) {
        ckpt_pname how = torch_global_of(c, n->a, NULL);
        switch (how) {
            case CKPT_PN_REBUILD_TENSOR:
            case CKPT_PN_REBUILD_TENSOR_V2:
            case CKPT_PN_REBUILD_TENSOR_V3: TRY(rebuild(c, how, n, n->b, out)); break;
            case CKPT_PN_REBUILD_PARAMETER:
            case CKPT_PN_REBUILD_PARAMETER_WITH_STATE: {
                size_t data = torch_is_seq(c, n->b) ? ckpt_pickle_item(t->pickle, n->b, 0) : CKPT_PNIL;
                if (data == CKPT_PNIL) return torch_fail_malformed(c, n, "a parameter rebuilt from no tensor");
                TRY(tensor_at(c, data, out, depth + 1));
                if (*out == CKPT_TORCH_NONE) return torch_fail_malformed(c, n, "a parameter rebuilt from no tensor");
                t->tensors[*out].parameter = true;
                break;
            }
            case CKPT_PN_REBUILD_FROM_TYPE_V2: {
                /* (func, new_type, args, state): the tensor is func(*args) */
                size_t func = torch_is_seq(c, n->b) ? ckpt_pickle_item(t->pickle, n->b, 0) : CKPT_PNIL;
                size_t args = torch_is_seq(c, n->b) ? ckpt_pickle_item(t->pickle, n->b, 2) : CKPT_PNIL;
                ckpt_pname inner = torch_global_of(c, func, NULL);
                if (inner != CKPT_PN_REBUILD_TENSOR && inner != CKPT_PN_REBUILD_TENSOR_V2 &&
                    inner != CKPT_PN_REBUILD_TENSOR_V3)
                    return torch_fail_malformed(c, n, "_rebuild_from_type_v2 of a function that rebuilds no tensor");
                TRY(rebuild(c, inner, n, args, out));
                break;
            }
            default: break;
        }
    }
    if (*out != CKPT_TORCH_NONE) t->tensor_of_node[k] = *out;
    return 0;
}

int torch_tensor_of(tctx *c, size_t k, size_t *out) { return tensor_at(c, k, out, 0); }
