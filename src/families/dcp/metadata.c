/* `.metadata` read as data (format.md 12.1-12.2): a pickled Metadata whose classes are opaque
 * objects (NEWOBJ then BUILD with the instance's __dict__, TensorProperties' tuple), never
 * called. The index it gives: the keys of state_dict_metadata (a tensor's dtype, size and
 * chunks, or a bytes item), the storage entries in pickle order (matched by (fqn, offsets) in
 * open.c), planner_data's presence, storage_meta and version. Checks 12.5.2-5. */
#include "families/dcp/dcp.h"

#include <stdio.h>
#include <stdlib.h>

static const char *const MOD_NEW = "torch.distributed.checkpoint.metadata";
static const char *const MOD_OLD = "torch.distributed._shard.checkpoint.metadata";
static const char *const FS_NEW = "torch.distributed.checkpoint.filesystem";
static const char *const FS_OLD = "torch.distributed._shard.checkpoint.filesystem";
static const char *const ST_MOD = "torch.distributed._shard.sharded_tensor.metadata";

typedef struct mctx {
    ckpt_dcp *d;
    ckpt_report *rep;
    const ckpt_pickle *p;
    bool old_properties; /* a TensorProperties of torch 2.0-2.2's path */
    size_t meta;         /* the index read */
    const char *file;    /* its .metadata as texts name it: ".metadata", "optimizer_0/.metadata" */
} mctx;

static const ckpt_pnode *nd(const mctx *c, size_t k) { return ckpt_pickle_node(c->p, k); }

static bool is_dict(const mctx *c, size_t k) { return k != CKPT_PNIL && nd(c, k)->kind == CKPT_PK_DICT; }

static bool span_is(const mctx *c, uint32_t at, uint32_t len, const char *s)
{
    size_t l = strlen(s);
    return len == l && !memcmp(c->p->data + at, s, l);
}

static bool global_is(const mctx *c, size_t k, const char *module, const char *name)
{
    if (k == CKPT_PNIL || nd(c, k)->kind != CKPT_PK_GLOBAL) return false;
    const ckpt_pnode *g = nd(c, k);
    return span_is(c, g->at, g->len, module) && span_is(c, g->at2, g->len2, name);
}

/* An object pickled through copyreg.__newobj__: its class and its BUILD state (CKPT_PNIL: none). */
static bool object_of(const mctx *c, size_t k, size_t *cls, size_t *state)
{
    *cls = *state = CKPT_PNIL;
    if (k == CKPT_PNIL) return false;
    const ckpt_pnode *n = nd(c, k);
    if (n->kind == CKPT_PK_BUILD && n->a != CKPT_PNIL && nd(c, n->a)->kind == CKPT_PK_NEWOBJ) {
        *cls = nd(c, n->a)->a;
        *state = n->b;
        return *cls != CKPT_PNIL;
    }
    if (n->kind == CKPT_PK_NEWOBJ) {
        *cls = n->a;
        return *cls != CKPT_PNIL;
    }
    return false;
}

/* An object of class `name` in module a or b (b may be NULL) */
static bool object_is(const mctx *c, size_t k, const char *a, const char *b, const char *name, size_t *state,
                      const char **which)
{
    size_t cls;
    if (!object_of(c, k, &cls, state)) return false;
    if (global_is(c, cls, a, name)) {
        if (which) *which = a;
        return true;
    }
    if (b && global_is(c, cls, b, name)) {
        if (which) *which = b;
        return true;
    }
    return false;
}

static bool str_of(const mctx *c, size_t k, const char **s, size_t *n)
{
    if (k == CKPT_PNIL || nd(c, k)->kind != CKPT_PK_STR || (nd(c, k)->flags & CKPT_PF_TEXT)) return false;
    *s = (const char *)c->p->data + nd(c, k)->at;
    *n = nd(c, k)->len;
    return true;
}

static char *str_dup(const mctx *c, size_t k)
{
    const char *s;
    size_t n;
    if (!str_of(c, k, &s, &n) || memchr(s, 0, n)) return NULL;
    char *t = malloc(n + 1);
    if (t) {
        memcpy(t, s, n);
        t[n] = 0;
    }
    return t;
}

static bool int_of(const mctx *c, size_t k, int64_t *v)
{
    if (k == CKPT_PNIL || nd(c, k)->kind != CKPT_PK_INT) return false;
    *v = nd(c, k)->i;
    return true;
}

/* The value of `key` in a plain dict, CKPT_PNIL when absent */
static size_t dict_get(const mctx *c, size_t k, const char *key)
{
    if (k == CKPT_PNIL || nd(c, k)->kind != CKPT_PK_DICT) return CKPT_PNIL;
    for (uint32_t cell = nd(c, k)->first; cell != CKPT_PNIL;) {
        uint32_t kn = c->p->cells[cell].node, vc = c->p->cells[cell].next;
        if (vc == CKPT_PNIL) break;
        const char *s;
        size_t n;
        if (str_of(c, kn, &s, &n) && n == strlen(key) && !memcmp(s, key, n)) return c->p->cells[vc].node;
        cell = c->p->cells[vc].next;
    }
    return CKPT_PNIL;
}

/* torch.Size: REDUCE of torch.Size with one tuple of ints */
static bool size_of(const mctx *c, size_t k, uint64_t *dims, uint32_t *rank)
{
    if (k == CKPT_PNIL || nd(c, k)->kind != CKPT_PK_REDUCE || !global_is(c, nd(c, k)->a, "torch", "Size")) return false;
    size_t args = nd(c, k)->b;
    if (args == CKPT_PNIL || nd(c, args)->kind != CKPT_PK_TUPLE || nd(c, args)->count != 1) return false;
    size_t t = ckpt_pickle_item(c->p, args, 0);
    if (t == CKPT_PNIL || (nd(c, t)->kind != CKPT_PK_TUPLE && nd(c, t)->kind != CKPT_PK_LIST)) return false;
    if (nd(c, t)->count > DCP_MAX_RANK) return false;
    uint32_t r = 0;
    for (uint32_t cell = nd(c, t)->first; cell != CKPT_PNIL; cell = c->p->cells[cell].next) {
        int64_t v;
        if (!int_of(c, c->p->cells[cell].node, &v)) return false;
        dims[r++] = (uint64_t)v; /* a negative value is kept as read: 12.5.19 says it */
    }
    *rank = r;
    return true;
}

/* What a value is, for "{found}" */
static void found_text(strbuf *sb, const mctx *c, size_t k)
{
    if (k == CKPT_PNIL) {
        sb_puts(sb, "nothing");
        return;
    }
    const ckpt_pnode *n = nd(c, k);
    static const char *const kinds[] = {"None",  "a bool",  "an int", "an int",         "a float", "a str",
                                        "bytes", "a tuple", "a list", "a dict",         "a set",   NULL,
                                        NULL,    NULL,      NULL,     "a persistent id"};
    size_t cls, st;
    if (object_of(c, k, &cls, &st) && nd(c, cls)->kind == CKPT_PK_GLOBAL) {
        const ckpt_pnode *g = nd(c, cls);
        sb_printf(sb, "a %.*s.%.*s", (int)g->len, (const char *)c->p->data + g->at, (int)g->len2,
                  (const char *)c->p->data + g->at2);
        if (!is_dict(c, st)) sb_puts(sb, " without its fields"); /* NEWOBJ with no BUILD, or a BUILD of no dict */
        return;
    }
    if (n->kind == CKPT_PK_GLOBAL) {
        sb_printf(sb, "%.*s.%.*s", (int)n->len, (const char *)c->p->data + n->at, (int)n->len2,
                  (const char *)c->p->data + n->at2);
        return;
    }
    if ((n->kind == CKPT_PK_REDUCE || n->kind == CKPT_PK_BUILD || n->kind == CKPT_PK_NEWOBJ) && n->a != CKPT_PNIL &&
        nd(c, n->a)->kind == CKPT_PK_GLOBAL) {
        const ckpt_pnode *g = nd(c, n->a);
        sb_printf(sb, "a %.*s.%.*s", (int)g->len, (const char *)c->p->data + g->at, (int)g->len2,
                  (const char *)c->p->data + g->at2);
        return;
    }
    sb_puts(sb, n->kind < sizeof kinds / sizeof kinds[0] && kinds[n->kind] ? kinds[n->kind] : "an object");
}

/* 12.5.3: "no {key}" (node CKPT_PNIL) or "{key} is {found}, expected {type}" */
static int bad_field(mctx *c, const char *path, size_t node, const char *expected)
{
    strbuf f = {0};
    if (node != CKPT_PNIL) found_text(&f, c, node);
    int rc = f.failed ? ckpt_fail_oom(&c->rep->error)
             : node == CKPT_PNIL
                 ? dcp_diag_add(c->d, c->rep, 3, CKPT_E_DCP_METADATA, NULL, c->file, CKPT_NONE, "DCP: %s: no %s",
                                c->file, path)
                 : dcp_diag_add(c->d, c->rep, 3, CKPT_E_DCP_METADATA, NULL, c->file, nd(c, node)->offset,
                                "DCP: %s: %s is %s, expected %s", c->file, path, f.data, expected);
    sb_free(&f);
    return rc ? rc : 1;
}

static bool grow(void **arr, size_t *cap, size_t len, size_t elem) { return ckpt_grow(arr, cap, len + 1, elem); }

bool dcp_pool_push(ckpt_dcp *d, const uint64_t *v, uint32_t n, size_t *at)
{
    if (!ckpt_grow((void **)&d->pool, &d->caps[0], d->pool_len + n + 1, sizeof *d->pool)) return false;
    *at = d->pool_len;
    if (n) memcpy(d->pool + d->pool_len, v, n * sizeof *v);
    d->pool_len += n;
    return true;
}

/* TensorProperties: a 5-tuple (its __getstate__), its dtype a GLOBAL torch.{name} */
static int read_properties(mctx *c, size_t k, dcp_key *key, const char *path)
{
    size_t st;
    const char *which = NULL;
    strbuf p = {0};
    sb_printf(&p, "%s.properties", path);
    if (p.failed) return ckpt_fail_oom(&c->rep->error);
    int rc = 0;
    if (!object_is(c, k, MOD_NEW, ST_MOD, "TensorProperties", &st, &which))
        rc = bad_field(c, p.data, k, "a TensorProperties");
    else if (st == CKPT_PNIL || nd(c, st)->kind != CKPT_PK_TUPLE || nd(c, st)->count < 1)
        rc = bad_field(c, p.data, st, "a tuple");
    else {
        if (which == ST_MOD) c->old_properties = true;
        size_t g = ckpt_pickle_item(c->p, st, 0);
        const ckpt_pnode *gn = g == CKPT_PNIL ? NULL : nd(c, g);
        const char *dt = NULL;
        if (gn && gn->kind == CKPT_PK_GLOBAL &&
            ckpt_torch_known((const char *)c->p->data + gn->at, gn->len, (const char *)c->p->data + gn->at2, gn->len2,
                             &dt) == CKPT_PN_DTYPE) {
            key->dtype_name = malloc(gn->len2 + 1);
            if (!key->dtype_name) rc = ckpt_fail_oom(&c->rep->error);
            else {
                memcpy(key->dtype_name, c->p->data + gn->at2, gn->len2);
                key->dtype_name[gn->len2] = 0;
                key->dtype = dt ? ckpt_torch_dtype(dt) : -1;
            }
        } else {
            sb_puts(&p, "[0]");
            rc = p.failed ? ckpt_fail_oom(&c->rep->error) : bad_field(c, p.data, g, "a torch dtype");
        }
    }
    sb_free(&p);
    return rc;
}

static int read_tensor(mctx *c, size_t st, dcp_key *key, size_t kidx)
{
    ckpt_dcp *d = c->d;
    strbuf path = {0};
    sb_printf(&path, "state_dict_metadata[%s]", key->name);
    if (path.failed) return ckpt_fail_oom(&c->rep->error);
    int rc = 0;
    uint64_t dims[DCP_MAX_RANK];
    uint32_t rank = 0;
    size_t props = dict_get(c, st, "properties"), size = dict_get(c, st, "size"), chunks = dict_get(c, st, "chunks");
    strbuf sub = {0};
    if (st == CKPT_PNIL || nd(c, st)->kind != CKPT_PK_DICT) rc = bad_field(c, path.data, st, "a dict");
    if (!rc) rc = read_properties(c, props, key, path.data);
    if (!rc) {
        sb_printf(&sub, "%s.size", path.data);
        if (sub.failed) rc = ckpt_fail_oom(&c->rep->error);
        else if (!size_of(c, size, dims, &rank)) rc = bad_field(c, sub.data, size, "a torch.Size");
        else if (!dcp_pool_push(d, dims, rank, &key->dims)) rc = ckpt_fail_oom(&c->rep->error);
        key->rank = rank;
    }
    if (!rc && (chunks == CKPT_PNIL || nd(c, chunks)->kind != CKPT_PK_LIST)) {
        sub.len = 0;
        sb_printf(&sub, "%s.chunks", path.data);
        rc = sub.failed ? ckpt_fail_oom(&c->rep->error) : bad_field(c, sub.data, chunks, "a list");
    }
    key->chunks = d->chunks_len;
    uint32_t j = 0;
    for (uint32_t cell = rc ? CKPT_PNIL : nd(c, chunks)->first; cell != CKPT_PNIL && !rc;
         cell = c->p->cells[cell].next, j++) {
        size_t ch = c->p->cells[cell].node, cst;
        uint64_t o[DCP_MAX_RANK], s[DCP_MAX_RANK];
        uint32_t ro = 0, rs = 0;
        sub.len = 0;
        sb_printf(&sub, "%s.chunks[%u]", path.data, j);
        if (sub.failed) rc = ckpt_fail_oom(&c->rep->error);
        else if (!object_is(c, ch, MOD_NEW, MOD_OLD, "ChunkStorageMetadata", &cst, NULL))
            rc = bad_field(c, sub.data, ch, "a ChunkStorageMetadata");
        else {
            size_t on = dict_get(c, cst, "offsets"), sn = dict_get(c, cst, "sizes");
            size_t l = sub.len;
            if (!size_of(c, on, o, &ro)) {
                sb_puts(&sub, ".offsets");
                rc = sub.failed ? ckpt_fail_oom(&c->rep->error) : bad_field(c, sub.data, on, "a torch.Size");
            } else if (!size_of(c, sn, s, &rs)) {
                sub.len = l;
                sb_puts(&sub, ".sizes");
                rc = sub.failed ? ckpt_fail_oom(&c->rep->error) : bad_field(c, sub.data, sn, "a torch.Size");
            }
        }
        if (rc) break;
        if (!grow((void **)&d->chunks, &d->caps[1], d->chunks_len, sizeof *d->chunks))
            return sb_free(&path), sb_free(&sub), ckpt_fail_oom(&c->rep->error);
        dcp_chunk *k = &d->chunks[d->chunks_len];
        k->key = kidx;
        k->storage = DCP_NONE;
        /* as read: a rank other than the tensor's is 12.5.19's */
        k->orank = ro;
        k->srank = rs;
        if (!dcp_pool_push(d, o, ro, &k->offsets) || !dcp_pool_push(d, s, rs, &k->sizes))
            return sb_free(&path), sb_free(&sub), ckpt_fail_oom(&c->rep->error);
        d->chunks_len++;
        key->chunks_len++;
    }
    sb_free(&sub);
    sb_free(&path);
    return rc;
}

static int read_keys(mctx *c, size_t sdm)
{
    ckpt_dcp *d = c->d;
    if (sdm == CKPT_PNIL || nd(c, sdm)->kind != CKPT_PK_DICT) return bad_field(c, "state_dict_metadata", sdm, "a dict");
    for (uint32_t cell = nd(c, sdm)->first; cell != CKPT_PNIL;) {
        uint32_t vc = c->p->cells[cell].next;
        if (vc == CKPT_PNIL) break;
        size_t kn = c->p->cells[cell].node, vn = c->p->cells[vc].node;
        cell = c->p->cells[vc].next;
        char *name = str_dup(c, kn);
        if (!name) {
            if (kn != CKPT_PNIL && nd(c, kn)->kind == CKPT_PK_STR) return ckpt_fail_oom(&c->rep->error);
            return bad_field(c, "state_dict_metadata's key", kn, "a str");
        }
        if (!grow((void **)&d->keys, &d->caps[2], d->keys_len, sizeof *d->keys)) {
            free(name);
            return ckpt_fail_oom(&c->rep->error);
        }
        size_t kidx = d->keys_len++;
        dcp_key *key = &d->keys[kidx];
        memset(key, 0, sizeof *key);
        key->name = name;
        key->dtype = -1;
        key->storage = key->group = DCP_NONE;
        key->at = nd(c, vn == CKPT_PNIL ? kn : vn)->offset;
        size_t st;
        if (object_is(c, vn, MOD_NEW, MOD_OLD, "BytesStorageMetadata", &st, NULL)) {
            key->kind = DCP_BYTES;
            continue;
        }
        if (!object_is(c, vn, MOD_NEW, MOD_OLD, "TensorStorageMetadata", &st, NULL)) {
            strbuf p = {0};
            sb_printf(&p, "state_dict_metadata[%s]", name);
            int rc = p.failed ? ckpt_fail_oom(&c->rep->error)
                              : bad_field(c, p.data, vn, "a TensorStorageMetadata or BytesStorageMetadata");
            sb_free(&p);
            return rc;
        }
        key->kind = DCP_TENSOR;
        TRY(read_tensor(c, st, &d->keys[kidx], kidx));
    }
    return 0;
}

static int read_storage(mctx *c, size_t sd)
{
    ckpt_dcp *d = c->d;
    if (sd == CKPT_PNIL || nd(c, sd)->kind != CKPT_PK_DICT) return bad_field(c, "storage_data", sd, "a dict");
    size_t j = 0;
    for (uint32_t cell = nd(c, sd)->first; cell != CKPT_PNIL; j++) {
        uint32_t vc = c->p->cells[cell].next;
        if (vc == CKPT_PNIL) break;
        size_t kn = c->p->cells[cell].node, vn = c->p->cells[vc].node;
        cell = c->p->cells[vc].next;
        char path[64];
        snprintf(path, sizeof path, "storage_data[%zu]", j);
        size_t ks, vs;
        if (!object_is(c, kn, MOD_NEW, MOD_OLD, "MetadataIndex", &ks, NULL) || !is_dict(c, ks)) {
            char kp[80];
            snprintf(kp, sizeof kp, "%s's key", path);
            return bad_field(c, kp, kn, "a MetadataIndex");
        }
        if (!object_is(c, vn, FS_NEW, FS_OLD, "_StorageInfo", &vs, NULL) || !is_dict(c, vs))
            return bad_field(c, path, vn, "a _StorageInfo");
        if (!grow((void **)&d->storages, &d->caps[3], d->storages_len, sizeof *d->storages))
            return ckpt_fail_oom(&c->rep->error);
        dcp_storage *s = &d->storages[d->storages_len];
        memset(s, 0, sizeof *s);
        s->file = s->key = s->chunk = s->tensor = DCP_NONE;
        size_t fq = dict_get(c, ks, "fqn"), off = dict_get(c, ks, "offset");
        size_t rp = dict_get(c, vs, "relative_path"), of = dict_get(c, vs, "offset"), ln = dict_get(c, vs, "length");
        size_t td = dict_get(c, vs, "transform_descriptors");
        char sub[96];
        int64_t o, l;
        if (!(s->fqn = str_dup(c, fq))) {
            if (fq != CKPT_PNIL && nd(c, fq)->kind == CKPT_PK_STR) return ckpt_fail_oom(&c->rep->error);
            snprintf(sub, sizeof sub, "%s.fqn", path);
            return bad_field(c, sub, fq, "a str");
        }
        d->storages_len++;
        if (off != CKPT_PNIL && nd(c, off)->kind != CKPT_PK_NONE) {
            uint64_t dims[DCP_MAX_RANK];
            if (!size_of(c, off, dims, &s->rank)) {
                snprintf(sub, sizeof sub, "%s.offset", path);
                return bad_field(c, sub, off, "a torch.Size");
            }
            s->has_offsets = true;
            if (!dcp_pool_push(d, dims, s->rank, &s->offsets)) return ckpt_fail_oom(&c->rep->error);
        }
        s->meta = c->meta;
        if (!(s->path = str_dup(c, rp))) {
            if (rp != CKPT_PNIL && nd(c, rp)->kind == CKPT_PK_STR) return ckpt_fail_oom(&c->rep->error);
            snprintf(sub, sizeof sub, "%s.relative_path", path);
            return bad_field(c, sub, rp, "a str");
        }
        /* a joined index's file: inside its folder */
        const char *dir = d->metas[c->meta].dir;
        if (dir && *dir) {
            strbuf nm = {0};
            sb_printf(&nm, "%s%s", dir, s->path);
            if (!(s->name = sb_take(&nm))) return ckpt_fail_oom(&c->rep->error);
        }
        if (!int_of(c, of, &o) || o < 0) {
            snprintf(sub, sizeof sub, "%s.offset", path);
            return bad_field(c, sub, of, "an int at least 0");
        }
        if (!int_of(c, ln, &l) || l < 0) {
            snprintf(sub, sizeof sub, "%s.length", path);
            return bad_field(c, sub, ln, "an int at least 0");
        }
        s->offset = (uint64_t)o;
        s->length = (uint64_t)l;
        if (td != CKPT_PNIL && nd(c, td)->kind != CKPT_PK_NONE) {
            /* the descriptors' names, joined (12.5.13) */
            strbuf t = {0};
            if (nd(c, td)->kind == CKPT_PK_LIST || nd(c, td)->kind == CKPT_PK_TUPLE) {
                bool first = true;
                for (uint32_t q = nd(c, td)->first; q != CKPT_PNIL; q = c->p->cells[q].next) {
                    const char *x;
                    size_t xn;
                    if (!first) sb_puts(&t, ", ");
                    first = false;
                    if (str_of(c, c->p->cells[q].node, &x, &xn)) sb_printf(&t, "%.*s", (int)xn, x);
                    else found_text(&t, c, c->p->cells[q].node);
                }
            } else found_text(&t, c, td);
            if (!t.len) sb_puts(&t, "[]");
            if (!(s->transforms = sb_take(&t))) return ckpt_fail_oom(&c->rep->error);
        }
    }
    return 0;
}

/* 12.5.5: the names beyond DCP's own */
static bool foreign(const char *m, size_t ml, const char *n, size_t nl)
{
#define IS(s) (strlen(s) == ml && !memcmp(m, s, ml))
#define NAME(s) (strlen(s) == nl && !memcmp(n, s, nl))
    static const char *const meta[] = {
        "Metadata",      "TensorStorageMetadata", "ChunkStorageMetadata", "BytesStorageMetadata",
        "MetadataIndex", "StorageMeta",           "TensorProperties",     "_MEM_FORMAT_ENCODING"};
    if (IS(MOD_NEW) || IS(MOD_OLD))
        for (size_t k = 0; k < sizeof meta / sizeof meta[0]; k++)
            if (NAME(meta[k])) return false;
    if ((IS(FS_NEW) || IS(FS_OLD)) && NAME("_StorageInfo")) return false;
    if (IS(ST_MOD) && (NAME("TensorProperties") || NAME("MEM_FORMAT_ENCODING"))) return false;
    if (IS("torch") && NAME("Size")) return false;
    const char *dt;
    if (IS("torch") && ckpt_torch_known(m, ml, n, nl, &dt) == CKPT_PN_DTYPE) return false;
    if (IS("torch.serialization") && NAME("_get_layout")) return false;
    if (IS("builtins") && NAME("getattr")) return false;
    if (IS("pathlib") &&
        (NAME("PosixPath") || NAME("WindowsPath") || NAME("PurePosixPath") || NAME("PureWindowsPath") || NAME("Path")))
        return false;
    return true;
#undef IS
#undef NAME
}

bool dcp_metadata_head(const uint8_t *head, size_t n)
{
    if (n < 2 || head[0] != CKPT_OP_PROTO || head[1] < 2 || head[1] > 5) return false;
    static const char needle[] = "torch.distributed.";
    size_t l = sizeof needle - 1;
    /* the first GLOBAL's module is the Metadata's: within the first opcodes */
    for (size_t k = 2; k + l <= n; k++)
        if (!memcmp(head + k, needle, l)) return true;
    return false;
}

int dcp_read_metadata(ckpt_dcp *d, ckpt_report *rep, size_t m, size_t n)
{
    dcp_meta *me = &d->metas[m];
    me->planner = CKPT_PNIL;
    me->keys_from = d->keys_len;
    strbuf label = {0};
    sb_printf(&label, "%s.metadata", me->dir ? me->dir : "");
    if (label.failed) return ckpt_fail_oom(&rep->error);
    const bool first = m == 0;
    bool ok = false;
    ckpt_error perr = {0};
    ckpt_error_clear(&perr);
    int code = ckpt_pickle_read(me->bytes, n, DCP_PREFIX, label.data, 0, 0, &me->pickle, &perr);
    if (code) {
        int rc = code == CKPT_E_NO_MEMORY ? ckpt_fail_oom(&rep->error)
                                          : dcp_diag_add(d, rep, 2, code, NULL, label.data, perr.offset, "%s",
                                                         perr.message ? perr.message : "");
        ckpt_error_clear(&perr);
        d->meta_ok = false;
        sb_free(&label);
        return rc;
    }
    mctx c = {d, rep, me->pickle, false, m, label.data};
    size_t root = me->pickle->root, st;
    const char *which = NULL;
    /* 5 comes with the index: the names are known once the pickle is read */
    strbuf names = {0};
    ckpt_pickle_globals(&names, me->pickle, foreign, ", ");
    if (names.failed) return sb_free(&names), sb_free(&label), ckpt_fail_oom(&rep->error);
    if (!object_is(&c, root, MOD_NEW, MOD_OLD, "Metadata", &st, &which)) {
        strbuf f = {0};
        found_text(&f, &c, root);
        int rc = f.failed ? ckpt_fail_oom(&rep->error)
                          : dcp_diag_add(d, rep, 2, CKPT_E_DCP_METADATA, NULL, label.data, nd(&c, root)->offset,
                                         "DCP: %s holds %s, not a DCP Metadata", label.data, f.data);
        sb_free(&f);
        sb_free(&names);
        sb_free(&label);
        d->meta_ok = false;
        return rc;
    }
    int rc = 0;
    if (st == CKPT_PNIL || nd(&c, st)->kind != CKPT_PK_DICT) rc = bad_field(&c, "Metadata", st, "a dict");
    if (!rc) rc = read_keys(&c, dict_get(&c, st, "state_dict_metadata"));
    if (!rc) rc = read_storage(&c, dict_get(&c, st, "storage_data"));
    size_t pd = rc ? CKPT_PNIL : dict_get(&c, st, "planner_data");
    bool planner = false;
    if (!rc && pd != CKPT_PNIL && nd(&c, pd)->kind != CKPT_PK_NONE) {
        if (nd(&c, pd)->kind != CKPT_PK_DICT) rc = bad_field(&c, "planner_data", pd, "a dict or None");
        else {
            planner = true;
            me->planner = pd;
        }
    }
    d->planner_data = planner && (first || d->planner_data);
    size_t sm = rc ? CKPT_PNIL : dict_get(&c, st, "storage_meta");
    if (!rc && sm != CKPT_PNIL && nd(&c, sm)->kind != CKPT_PK_NONE) {
        size_t ss;
        if (!object_is(&c, sm, MOD_NEW, NULL, "StorageMeta", &ss, NULL))
            rc = bad_field(&c, "storage_meta", sm, "a StorageMeta or None");
        else d->storage_meta = true;
    }
    char *version = NULL;
    size_t v = rc ? CKPT_PNIL : dict_get(&c, st, "version");
    if (!rc && v != CKPT_PNIL && nd(&c, v)->kind != CKPT_PK_NONE) {
        if (!(version = str_dup(&c, v))) {
            if (nd(&c, v)->kind == CKPT_PK_STR) rc = ckpt_fail_oom(&rep->error);
            else rc = bad_field(&c, "version", v, "a str or None");
        }
    }
    d->classes = which == MOD_OLD ? DCP_CLASSES_113 : c.old_properties ? DCP_CLASSES_20 : DCP_CLASSES_23;
    if (rc > 0) rc = 0; /* a check failed: a diagnostic, the index as far as read */
    else if (!rc) ok = true;
    d->meta_ok = ok && (first || d->meta_ok);
    /* 4 */
    if (!rc && version && strcmp(version, "1.0.0"))
        rc = dcp_diag_add(d, rep, 4, 0, NULL, label.data, CKPT_NONE,
                          "DCP: %s has version %s; ckptscope reads version 1.0.0 and unversioned metadata", label.data,
                          version);
    if (first) d->version = version;
    else free(version);
    /* 5 */
    if (!rc && names.len)
        rc = dcp_diag_add(d, rep, 5, 0, NULL, label.data, CKPT_NONE,
                          "DCP: %s names Python callables that pickle.load runs, beyond DCP's own classes: %s",
                          label.data, names.data);
    sb_free(&names);
    sb_free(&label);
    return rc;
}
