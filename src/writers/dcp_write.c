/* A PyTorch optimizer.pt and its model written as a DCP folder (DCP's conversion the other way round,
 * docs/distributed.md "Writing a DCP folder":
 * what torch's torch_save_to_dcp would save of {'model': model_state_dict, 'optim': osd}, osd keyed
 * by FQN as get_optimizer_state_dict keys it), one rank:
 *
 *   model.{fqn}                      a tensor key per model tensor, in the model file's order
 *   optim.state.{fqn}.{key}          a tensor key per state tensor (step a 0-d tensor), a bytes
 *                                    item per other value, ids in the file's state order
 *   optim.param_groups.{g}.{key}     a bytes item per group value, `params` the group's FQNs
 *
 * (DCP's nested form, one key per group value). The optimizer's ids are placed on the model's
 * names by the pairing of format.md 10.4
 * (ckpt_pair_named, the pairing `check --state` gives); a pair that fails is refused with its
 * first failure.
 *
 * __0_0.distcp is the records back to back, as _FileSystemWriter's one file of a rank: the bytes
 * items first, then the tensors, each a torch.save zip of its own (prefix "archive", data 64-byte
 * aligned from the record's start, offsets counted from it), the payloads streamed from the input
 * files. Then .metadata (a protocol 4 pickle of DCP's dataclasses, built in memory: it grows with
 * the keys, not the elements), into a second sink: the caller writes it last, through a temporary
 * renamed, as DCP's finish does. Two forms: torch >= 2.4 (the >= 2.3 class paths, planner_data,
 * storage_meta, version "1.0.0") and torch 1.13 (its _shard classes, planner_data None). */
#include "core/core.h"
#include "containers/zip.h"
#include "containers/pickle_write.h"
#include "families/deepspeed/deepspeed.h"
#include "families/pytorch/data.h"
#include "base/json_write.h"
#include "writers/dcp_write.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DCP "DCP"
#define DATA_FILE "__0_0.distcp"
#define NOT_WRITTEN CKPT_E_CONVERSION_LOSES, CKPT_NONE, 0

/* torch's names of a dtype and of its typed storage class */
static const struct {
    int dtype;
    const char *name, *storage;
} TORCH_DTYPES[] = {
    {CKPT_FLOAT32, "float32", "FloatStorage"}, {CKPT_FLOAT64, "float64", "DoubleStorage"},
    {CKPT_FLOAT16, "float16", "HalfStorage"},  {CKPT_BFLOAT16, "bfloat16", "BFloat16Storage"},
    {CKPT_INT64, "int64", "LongStorage"},      {CKPT_INT32, "int32", "IntStorage"},
    {CKPT_INT16, "int16", "ShortStorage"},     {CKPT_INT8, "int8", "CharStorage"},
    {CKPT_UINT8, "uint8", "ByteStorage"},      {CKPT_BOOL, "bool", "BoolStorage"},
};

static int torch_dtype_at(int dtype)
{
    for (size_t k = 0; k < sizeof TORCH_DTYPES / sizeof *TORCH_DTYPES; k++)
        if (TORCH_DTYPES[k].dtype == dtype) return (int)k;
    return -1;
}

/* ---- .metadata ---- */

typedef struct classes {
    const char *meta, *fs, *props, *mem; /* modules */
    const char *mem_name;                /* the memory-format enum */
} classes;

static const classes CLASSES_2 = {"torch.distributed.checkpoint.metadata", "torch.distributed.checkpoint.filesystem",
                                  "torch.distributed.checkpoint.metadata", "torch.distributed.checkpoint.metadata",
                                  "_MEM_FORMAT_ENCODING"};
static const classes CLASSES_113 = {"torch.distributed._shard.checkpoint.metadata",
                                    "torch.distributed._shard.checkpoint.filesystem",
                                    "torch.distributed._shard.sharded_tensor.metadata",
                                    "torch.distributed._shard.sharded_tensor.metadata", "MEM_FORMAT_ENCODING"};

/* The globals named so far, each memoized once (MEMOIZE after its STACK_GLOBAL, BINGET after):
 * as Python's pickler writes a class it met before. */
typedef struct mctx {
    const classes *k;
    struct {
        const char *module, *name;
    } memo[32];
    unsigned n;
} mctx;

static void m_global(strbuf *sb, mctx *c, const char *module, const char *name)
{
    for (unsigned j = 0; j < c->n; j++)
        if (!strcmp(c->memo[j].module, module) && !strcmp(c->memo[j].name, name)) {
            uint8_t b[2] = {CKPT_OP_BINGET, (uint8_t)j};
            sb_put(sb, (const char *)b, 2);
            return;
        }
    ckpt_pw_stack_global(sb, module, name);
    if (c->n == sizeof c->memo / sizeof *c->memo) return; /* more than this file names: not memoized */
    ckpt_pw_op(sb, CKPT_OP_MEMOIZE);
    c->memo[c->n].module = module;
    c->memo[c->n].name = name;
    c->n++;
}

static void m_str(strbuf *sb, const char *s) { ckpt_pw_str4(sb, s, strlen(s)); }

/* A dataclass as copyreg.__newobj__ pickles it: the class, an empty tuple, NEWOBJ. */
static void m_new(strbuf *sb, mctx *c, const char *module, const char *name)
{
    m_global(sb, c, module, name);
    ckpt_pw_op(sb, CKPT_OP_EMPTY_TUPLE);
    ckpt_pw_op(sb, CKPT_OP_NEWOBJ);
}

/* torch.Size(dims): REDUCE of a tuple. */
static void m_size(strbuf *sb, mctx *c, const uint64_t *dims, size_t rank, bool zeros)
{
    m_global(sb, c, "torch", "Size");
    ckpt_pw_tuple_begin(sb, rank);
    for (size_t d = 0; d < rank; d++) ckpt_pw_uint(sb, zeros ? 0 : dims[d]);
    ckpt_pw_tuple_end(sb, rank);
    ckpt_pw_op(sb, CKPT_OP_TUPLE1);
    ckpt_pw_op(sb, CKPT_OP_REDUCE);
}

/* TensorProperties' __getstate__: (dtype, layout, requires_grad, memory format, pin_memory). */
static void m_properties(strbuf *sb, mctx *c, const char *dtype)
{
    m_new(sb, c, c->k->props, "TensorProperties");
    ckpt_pw_op(sb, CKPT_OP_MARK);
    m_global(sb, c, "torch", dtype);
    m_global(sb, c, "torch.serialization", "_get_layout");
    m_str(sb, "torch.strided");
    ckpt_pw_op(sb, CKPT_OP_TUPLE1);
    ckpt_pw_op(sb, CKPT_OP_REDUCE);
    ckpt_pw_bool(sb, false);
    /* Enum.__reduce_ex__ (CPython 3.11): getattr(enum class, member name) */
    m_global(sb, c, "builtins", "getattr");
    m_global(sb, c, c->k->mem, c->k->mem_name);
    m_str(sb, "TORCH_CONTIGUOUS_FORMAT");
    ckpt_pw_op(sb, CKPT_OP_TUPLE2);
    ckpt_pw_op(sb, CKPT_OP_REDUCE);
    ckpt_pw_bool(sb, false);
    ckpt_pw_op(sb, CKPT_OP_TUPLE);
    ckpt_pw_op(sb, CKPT_OP_BUILD);
}

static bool m_storage_metadata(strbuf *sb, mctx *c, const ckpt_dcp_item *it)
{
    if (!it->tensor) {
        m_new(sb, c, c->k->meta, "BytesStorageMetadata"); /* an empty __dict__: no BUILD */
        return true;
    }
    int t = torch_dtype_at(it->dtype);
    if (t < 0) return false;
    m_new(sb, c, c->k->meta, "TensorStorageMetadata");
    ckpt_pw_op(sb, CKPT_OP_EMPTY_DICT);
    ckpt_pw_op(sb, CKPT_OP_MARK);
    m_str(sb, "properties");
    m_properties(sb, c, TORCH_DTYPES[t].name);
    m_str(sb, "size");
    m_size(sb, c, it->dims, it->rank, false);
    m_str(sb, "chunks");
    ckpt_pw_op(sb, CKPT_OP_EMPTY_LIST);
    m_new(sb, c, c->k->meta, "ChunkStorageMetadata");
    ckpt_pw_op(sb, CKPT_OP_EMPTY_DICT);
    ckpt_pw_op(sb, CKPT_OP_MARK);
    m_str(sb, "offsets");
    m_size(sb, c, it->dims, it->rank, true);
    m_str(sb, "sizes");
    m_size(sb, c, it->dims, it->rank, false);
    ckpt_pw_op(sb, CKPT_OP_SETITEMS);
    ckpt_pw_op(sb, CKPT_OP_BUILD);
    ckpt_pw_op(sb, CKPT_OP_APPEND); /* one chunk */
    ckpt_pw_op(sb, CKPT_OP_SETITEMS);
    ckpt_pw_op(sb, CKPT_OP_BUILD);
    return true;
}

/* MetadataIndex(fqn, offset) as its __init__ sets it: fqn, index (None), then offset for a
 * tensor's chunk only; _StorageInfo: relative_path, offset, length (its __getstate__ drops
 * transform_descriptors when None). */
static void m_storage_entry(strbuf *sb, mctx *c, const ckpt_dcp_item *it)
{
    m_new(sb, c, c->k->meta, "MetadataIndex");
    ckpt_pw_op(sb, CKPT_OP_EMPTY_DICT);
    ckpt_pw_op(sb, CKPT_OP_MARK);
    m_str(sb, "fqn");
    m_str(sb, it->fqn);
    m_str(sb, "index");
    ckpt_pw_none(sb);
    if (it->tensor) {
        m_str(sb, "offset");
        m_size(sb, c, it->dims, it->rank, true);
    }
    ckpt_pw_op(sb, CKPT_OP_SETITEMS);
    ckpt_pw_op(sb, CKPT_OP_BUILD);
    m_new(sb, c, c->k->fs, "_StorageInfo");
    ckpt_pw_op(sb, CKPT_OP_EMPTY_DICT);
    ckpt_pw_op(sb, CKPT_OP_MARK);
    m_str(sb, "relative_path");
    m_str(sb, it->file);
    m_str(sb, "offset");
    ckpt_pw_uint(sb, it->offset);
    m_str(sb, "length");
    ckpt_pw_uint(sb, it->length);
    ckpt_pw_op(sb, CKPT_OP_SETITEMS);
    ckpt_pw_op(sb, CKPT_OP_BUILD);
}

/* A dict's items: one SETITEM, more MARK ... SETITEMS (Python's batches). */
static void m_dict_begin(strbuf *sb, size_t n)
{
    ckpt_pw_op(sb, CKPT_OP_EMPTY_DICT);
    if (n > 1) ckpt_pw_op(sb, CKPT_OP_MARK);
}

static void m_dict_end(strbuf *sb, size_t n)
{
    if (n) ckpt_pw_op(sb, n == 1 ? CKPT_OP_SETITEM : CKPT_OP_SETITEMS);
}

/* pathlib.PosixPath's __reduce__: the class and its parts ('/', 'a', 'b'). */
static void m_posix_path(strbuf *sb, mctx *c, const char *path)
{
    m_global(sb, c, "pathlib", "PosixPath");
    size_t parts = path[0] == '/';
    for (const char *s = path; *s;) {
        while (*s == '/') s++;
        if (!*s) break;
        parts++;
        while (*s && *s != '/') s++;
    }
    ckpt_pw_tuple_begin(sb, parts);
    if (path[0] == '/') m_str(sb, "/");
    for (const char *s = path; *s;) {
        while (*s == '/') s++;
        if (!*s) break;
        const char *e = s;
        while (*e && *e != '/') e++;
        ckpt_pw_str4(sb, s, (size_t)(e - s));
        s = e;
    }
    ckpt_pw_tuple_end(sb, parts);
    ckpt_pw_op(sb, CKPT_OP_REDUCE);
}

static int by_record(const void *a, const void *b)
{
    const ckpt_dcp_item *x = *(const ckpt_dcp_item *const *)a, *y = *(const ckpt_dcp_item *const *)b;
    int f = strcmp(x->file, y->file);
    if (f) return f;
    return x->offset < y->offset ? -1 : x->offset > y->offset;
}

bool ckpt_dcp_metadata(const ckpt_dcp_item *items, size_t n, const ckpt_dcp_meta_options *o, strbuf *sb)
{
    mctx ctx = {o->torch113 ? &CLASSES_113 : &CLASSES_2, {{0}}, 0}, *c = &ctx;
    const ckpt_dcp_item **order = malloc((n ? n : 1) * sizeof *order);
    if (!order) return false;
    for (size_t k = 0; k < n; k++) order[k] = &items[k];
    qsort(order, n, sizeof *order, by_record);
    bool ok = true;
    ckpt_pw_proto(sb, 4);
    m_new(sb, c, c->k->meta, "Metadata");
    ckpt_pw_op(sb, CKPT_OP_EMPTY_DICT);
    ckpt_pw_op(sb, CKPT_OP_MARK);
    m_str(sb, "state_dict_metadata");
    m_dict_begin(sb, n);
    for (size_t k = 0; k < n && ok; k++) {
        m_str(sb, items[k].fqn);
        ok = m_storage_metadata(sb, c, &items[k]);
    }
    m_dict_end(sb, n);
    m_str(sb, "planner_data");
    if (o->torch113) ckpt_pw_none(sb);
    else {
        m_dict_begin(sb, n);
        for (size_t k = 0; k < n; k++) {
            m_str(sb, items[k].fqn);
            ckpt_pw_tuple_begin(sb, items[k].path_len);
            for (unsigned j = 0; j < items[k].path_len; j++) {
                const ckpt_dcp_part *p = &items[k].path[j];
                if (p->s) m_str(sb, p->s);
                else ckpt_pw_int(sb, p->i);
            }
            ckpt_pw_tuple_end(sb, items[k].path_len);
        }
        m_dict_end(sb, n);
    }
    m_str(sb, "storage_data");
    m_dict_begin(sb, n);
    for (size_t k = 0; k < n; k++) m_storage_entry(sb, c, order[k]);
    m_dict_end(sb, n);
    if (!o->torch113) {
        m_str(sb, "storage_meta");
        m_new(sb, c, c->k->meta, "StorageMeta");
        ckpt_pw_op(sb, CKPT_OP_EMPTY_DICT);
        ckpt_pw_op(sb, CKPT_OP_MARK);
        m_str(sb, "checkpoint_id");
        if (o->checkpoint_id && o->checkpoint_id[0]) m_posix_path(sb, c, o->checkpoint_id);
        else ckpt_pw_none(sb);
        m_str(sb, "save_id");
        if (o->save_id) m_str(sb, o->save_id);
        else ckpt_pw_none(sb);
        m_str(sb, "load_id");
        ckpt_pw_none(sb);
        m_str(sb, "modules");
        ckpt_pw_op(sb, CKPT_OP_EMPTY_LIST);
        ckpt_pw_op(sb, CKPT_OP_SETITEMS);
        ckpt_pw_op(sb, CKPT_OP_BUILD);
        m_str(sb, "version");
        m_str(sb, "1.0.0");
    }
    ckpt_pw_op(sb, CKPT_OP_SETITEMS);
    ckpt_pw_op(sb, CKPT_OP_BUILD);
    ckpt_pw_op(sb, CKPT_OP_STOP);
    free(order);
    return ok && !sb->failed;
}

/* ---- the plan: every key, what it holds and where it comes from ---- */

typedef struct key {
    ckpt_dcp_item it;
    char *name;            /* it.fqn, owned */
    const ckpt_file *from; /* a tensor's file */
    uint64_t at, count;    /* a tensor's elements: bytes at..at + count * width of `from` */
    strbuf value;          /* a bytes item's pickled value */
} key;

typedef struct plan {
    key *keys;
    size_t len, cap;
    ckpt_error *err;
    bool torch113;
} plan;

static void plan_free(plan *p)
{
    for (size_t k = 0; k < p->len; k++) {
        free(p->keys[k].name);
        sb_free(&p->keys[k].value);
    }
    free(p->keys);
}

/* A new key named by sb's text (taken). NULL when out of memory. */
static key *add_key(plan *p, strbuf *name)
{
    char *text = sb_take(name);
    if (!text || !ckpt_grow((void **)&p->keys, &p->cap, p->len + 1, sizeof *p->keys)) {
        free(text);
        return NULL;
    }
    key *k = &p->keys[p->len++];
    memset(k, 0, sizeof *k);
    k->name = text;
    k->it.fqn = text;
    k->it.file = DATA_FILE;
    return k;
}

static void set_path(key *k, const char *a, const char *b, const char *c, int64_t ci, const char *d)
{
    k->it.path[0] = (ckpt_dcp_part){a, 0};
    k->it.path[1] = (ckpt_dcp_part){b, 0};
    k->it.path_len = 2;
    if (c || d) k->it.path[k->it.path_len++] = (ckpt_dcp_part){c, ci};
    if (d) k->it.path[k->it.path_len++] = (ckpt_dcp_part){d, 0};
}

/* A tensor key: the tensor x of file f, written whole. */
static int tensor_key(plan *p, key *k, const ckpt_file *f, const ckpt_torch *t, size_t x)
{
    const ckpt_torch_tensor *tx = &t->tensors[x];
    int dtype = ckpt_torch_dtype(tx->dtype);
    if (torch_dtype_at(dtype) < 0)
        return ckpt_fail(p->err, DCP, NOT_WRITTEN, "%s is a tensor of %s, which ckptscope does not write", k->name,
                         tx->dtype);
    if (!tx->contiguous)
        return ckpt_fail(p->err, DCP, NOT_WRITTEN,
                         "%s is a tensor whose elements are not contiguous in its storage, which ckptscope does not "
                         "write",
                         k->name);
    k->it.tensor = true;
    k->it.dtype = dtype;
    k->it.rank = tx->rank;
    k->it.dims = ckpt_torch_size(t, x);
    k->from = f;
    k->at = tx->at;
    k->count = tx->count;
    return 0;
}

/* A bytes item: the value at node v of the file's pickle, written again. */
static int bytes_key(plan *p, key *k, const ckpt_pickle *pk, size_t v)
{
    ckpt_pw_proto(&k->value, 2);
    if (!ckpt_pw_value(&k->value, pk, v, 0))
        return ckpt_fail(p->err, DCP, NOT_WRITTEN,
                         "%s holds a value ckptscope does not write back (an object or a tensor inside a value)",
                         k->name);
    ckpt_pw_op(&k->value, CKPT_OP_STOP);
    return k->value.failed ? ckpt_fail_oom(p->err) : 0;
}

static int plan_model(plan *p, const ckpt_file *model, const ckpt_torch *t)
{
    if (t->model == CKPT_TORCH_NONE)
        return ckpt_fail(p->err, DCP, CKPT_E_INVALID_ARGUMENT, CKPT_NONE, 0,
                         "the model file holds no model state dict (a dict of names to tensors)");
    const ckpt_torch_model *m = &t->models[t->model];
    for (size_t j = 0; j < m->count; j++) {
        const ckpt_torch_named *nm = &t->named[m->first + j];
        strbuf name = {0};
        sb_printf(&name, "model.%s", nm->name);
        key *k = add_key(p, &name);
        if (!k) return ckpt_fail_oom(p->err);
        set_path(k, "model", nm->name, NULL, 0, NULL);
        if (nm->tensor == CKPT_TORCH_NONE)
            return ckpt_fail(p->err, DCP, NOT_WRITTEN, "%s is a number, not a tensor: ckptscope writes model tensors",
                             k->name);
        TRY(tensor_key(p, k, model, t, nm->tensor));
    }
    return 0;
}

/* The optimizer's dict in the file's pickle: the object itself, or a value of its top-level dict. */
static size_t optimizer_node(ds_tree c, const ckpt_torch_optimizer *o)
{
    if (!o->path || !o->path[0]) return c.p->root;
    if (strpbrk(o->path, ".[")) return CKPT_PNIL;
    return ds_get(c, c.p->root, o->path);
}

/* The FQN of an optimizer id: where the pairing placed it. */
static const char *fqn_of(const tf_data *d, int64_t id)
{
    for (size_t j = 0; j < d->idx_len; j++) {
        if (d->idx[j].index != id) continue;
        uint64_t s = d->binding.slot_of ? d->binding.slot_of[j] : CKPT_NONE;
        return s != CKPT_NONE && s < d->slot_count ? d->slot_names[s] : NULL;
    }
    return NULL;
}

static int plan_state(plan *p, const ckpt_file *opt, const tf_data *d, ds_tree c, size_t state)
{
    ds_dict_it it, si;
    size_t ik, iv, sk, sv;
    if (!ds_dict_begin(c, state, &it)) return 0;
    while (ds_dict_next(c, &it, &ik, &iv)) {
        int64_t id;
        const char *fqn = ds_int(c, ik, &id) ? fqn_of(d, id) : NULL;
        if (!fqn)
            return ckpt_fail(p->err, DCP, CKPT_E_INVALID_ARGUMENT, CKPT_NONE, 0,
                             "optimizer state at byte %llu names no parameter of the model: no group lists its id",
                             (unsigned long long)(ds_node(c, ik)->offset + d->t->pickle_at));
        if (!ds_dict_begin(c, iv, &si))
            return ckpt_fail(p->err, DCP, NOT_WRITTEN, "the state of %s is not a dict", fqn);
        while (ds_dict_next(c, &si, &sk, &sv)) {
            const char *s;
            size_t n;
            if (!ds_str(c, sk, &s, &n))
                return ckpt_fail(p->err, DCP, NOT_WRITTEN, "the state of %s has a key that is not a str", fqn);
            strbuf name = {0};
            sb_printf(&name, "optim.state.%s.", fqn);
            sb_put(&name, s, n);
            key *k = add_key(p, &name);
            if (!k) return ckpt_fail_oom(p->err);
            set_path(k, "optim", "state", fqn, 0, k->name + strlen(k->name) - n);
            size_t x = ds_tensor(c, sv);
            TRY(x != DS_NONE ? tensor_key(p, k, opt, d->t, x) : bytes_key(p, k, c.p, sv));
        }
    }
    return 0;
}

static int plan_groups(plan *p, const tf_data *d, ds_tree c, size_t groups)
{
    size_t ng = ds_len(c, groups);
    for (size_t g = 0; g < ng; g++) {
        size_t gd = ds_item(c, groups, g), gk, gv;
        ds_dict_it it;
        if (!ds_dict_begin(c, gd, &it))
            return ckpt_fail(p->err, DCP, NOT_WRITTEN, "parameter group %zu is not a dict", g);
        while (ds_dict_next(c, &it, &gk, &gv)) {
            const char *s;
            size_t n;
            if (!ds_str(c, gk, &s, &n))
                return ckpt_fail(p->err, DCP, NOT_WRITTEN, "parameter group %zu has a key that is not a str", g);
            strbuf name = {0};
            sb_printf(&name, "optim.param_groups.%zu.", g);
            sb_put(&name, s, n);
            key *k = add_key(p, &name);
            if (!k) return ckpt_fail_oom(p->err);
            set_path(k, "optim", "param_groups", NULL, (int64_t)g, k->name + strlen(k->name) - n);
            if (!(n == 6 && !memcmp(s, "params", 6))) {
                TRY(bytes_key(p, k, c.p, gv));
                continue;
            }
            /* params: the group's FQNs, in the group's order */
            size_t np = ds_is_seq(c, gv) ? ds_len(c, gv) : 0;
            strbuf *sb = &k->value;
            ckpt_pw_proto(sb, 2);
            ckpt_pw_op(sb, CKPT_OP_EMPTY_LIST);
            if (np > 1) ckpt_pw_op(sb, CKPT_OP_MARK);
            for (size_t j = 0; j < np; j++) {
                int64_t id;
                const char *fqn = ds_int(c, ds_item(c, gv, j), &id) ? fqn_of(d, id) : NULL;
                if (!fqn)
                    return ckpt_fail(p->err, DCP, CKPT_E_INVALID_ARGUMENT, CKPT_NONE, 0,
                                     "parameter group %zu: its parameter %zu names no parameter of the model", g, j);
                ckpt_pw_str(sb, fqn);
            }
            if (np) ckpt_pw_op(sb, np == 1 ? CKPT_OP_APPEND : CKPT_OP_APPENDS);
            ckpt_pw_op(sb, CKPT_OP_STOP);
            if (sb->failed) return ckpt_fail_oom(p->err);
        }
    }
    return 0;
}

static int plan_optimizer(plan *p, const ckpt_file *opt, const tf_data *d)
{
    const ckpt_torch *t = d->t;
    ds_tree c = {(ckpt_torch *)t, t->pickle};
    size_t o = optimizer_node(c, &t->optimizers[0]);
    if (o == CKPT_PNIL)
        return ckpt_fail(p->err, DCP, NOT_WRITTEN,
                         "the optimizer state dict lies at %s, inside another value: ckptscope writes one at the top "
                         "of the file or under a top-level key",
                         t->optimizers[0].path);
    TRY(plan_state(p, opt, d, c, ds_get(c, o, "state")));
    return plan_groups(p, d, c, ds_get(c, o, "param_groups"));
}

/* ---- the records ---- */

typedef struct counter {
    const ckpt_sink *out;
    uint64_t at;
} counter;

static int count_write(void *ctx, const void *buf, size_t n)
{
    counter *c = ctx;
    int rc = c->out->write(c->out->ctx, buf, n);
    if (!rc) c->at += n;
    return rc;
}

typedef struct copier {
    ckpt_zip_writer *zw;
    const ckpt_dcp_write_options *o;
    ckpt_error *err;
    uint64_t *done;
} copier;

static int copy_chunk(void *ctx, const void *data, size_t elements)
{
    copier *c = ctx;
    TRY(ckpt_zip_write(c->zw, data, elements)); /* width 1: elements are bytes */
    *c->done += elements;
    if (c->o->progress && c->o->progress(c->o->progress_ctx, *c->done, CKPT_NONE))
        return ckpt_fail(c->err, NULL, CKPT_E_CANCELLED, CKPT_NONE, 0, "convert cancelled");
    return 0;
}

static int member(ckpt_zip_writer *zw, const char *name, const void *data, size_t n)
{
    TRY(ckpt_zip_begin(zw, name));
    TRY(ckpt_zip_write(zw, data, n));
    return ckpt_zip_end(zw);
}

/* The tensor's data.pkl: _rebuild_tensor_v2(('storage', torch.{cls}, '0', 'cpu', numel), 0,
 * size, stride, False, OrderedDict()), a contiguous tensor filling its storage. */
static int tensor_pickle(const key *k, strbuf *sb, ckpt_error *err)
{
    uint64_t *stride = malloc((k->it.rank ? k->it.rank : 1) * sizeof *stride), acc = 1;
    if (!stride) return ckpt_fail_oom(err);
    for (size_t d = k->it.rank; d-- > 0;) {
        stride[d] = acc;
        uint64_t dim = k->it.dims[d] ? k->it.dims[d] : 1;
        acc = acc > UINT64_MAX / dim ? UINT64_MAX : acc * dim; /* the file's tensor was checked */
    }
    ckpt_pw_proto(sb, 2);
    ckpt_pw_global(sb, "torch._utils", "_rebuild_tensor_v2");
    ckpt_pw_op(sb, CKPT_OP_MARK);
    ckpt_pw_op(sb, CKPT_OP_MARK);
    ckpt_pw_str(sb, "storage");
    ckpt_pw_global(sb, "torch", TORCH_DTYPES[torch_dtype_at(k->it.dtype)].storage);
    ckpt_pw_str(sb, "0");
    ckpt_pw_str(sb, "cpu");
    ckpt_pw_uint(sb, k->count);
    ckpt_pw_op(sb, CKPT_OP_TUPLE);
    ckpt_pw_op(sb, CKPT_OP_BINPERSID);
    ckpt_pw_int(sb, 0);
    ckpt_pw_uint_tuple(sb, k->it.dims, k->it.rank);
    ckpt_pw_uint_tuple(sb, stride, k->it.rank);
    ckpt_pw_bool(sb, false);
    ckpt_pw_global(sb, "collections", "OrderedDict");
    ckpt_pw_op(sb, CKPT_OP_EMPTY_TUPLE);
    ckpt_pw_op(sb, CKPT_OP_REDUCE);
    ckpt_pw_op(sb, CKPT_OP_TUPLE);
    ckpt_pw_op(sb, CKPT_OP_REDUCE);
    ckpt_pw_op(sb, CKPT_OP_STOP);
    free(stride);
    return sb->failed ? ckpt_fail_oom(err) : 0;
}

/* One record: torch.save of the key's value, as its own zip from byte `out->at`. torch 1.13
 * writes no byteorder member; later versions write it after data.pkl. */
static int record(plan *p, key *k, counter *out, const ckpt_dcp_write_options *o, uint64_t *done)
{
    ckpt_sink sink = {out, count_write};
    ckpt_zip_writer zw;
    ckpt_zip_writer_init(&zw, &sink, p->err);
    zw.align = 64;
    k->it.offset = out->at;
    strbuf pk = {0};
    int rc = k->it.tensor ? tensor_pickle(k, &pk, p->err) : 0;
    const strbuf *pickle = k->it.tensor ? &pk : &k->value;
    if (!rc) rc = member(&zw, "archive/data.pkl", pickle->data, pickle->len);
    if (!rc && !p->torch113) rc = member(&zw, "archive/byteorder", "little", 6);
    if (!rc && k->it.tensor) {
        ckpt_reader *r = ckpt_reader_with_prefix(ckpt_file_source(k->from), "PyTorch");
        if (!r) rc = ckpt_fail_oom(p->err);
        if (!rc) rc = ckpt_zip_begin(&zw, "archive/data/0");
        if (!rc) {
            copier c = {&zw, o, p->err, done};
            r->pos = k->at;
            /* count * width fits: the file holds the tensor */
            rc = ckpt_stream_payload(r, k->count * ckpt_dtype_width(k->it.dtype), 1, copy_chunk, &c, p->err);
        }
        if (!rc) rc = ckpt_zip_end(&zw);
        ckpt_reader_free(r);
    }
    if (!rc) rc = member(&zw, "archive/version", "3\n", 2);
    if (!rc) rc = ckpt_zip_finish(&zw);
    k->it.length = out->at - k->it.offset;
    sb_free(&pk);
    ckpt_zip_writer_free(&zw);
    return rc;
}

/* ---- the conversion ---- */

static int check_pair(ckpt_file *opt, ckpt_file *model, const ckpt_dcp_write_options *o, ckpt_error *err)
{
    ckpt_pair_result *r = ckpt_pair_named(opt, model, NULL, 0, o->progress, o->progress_ctx);
    if (!r) return ckpt_fail_oom(err);
    int rc = 0;
    /* a pair that holds only if the slots without state are not trained is written: DCP keys by
     * name, and such a slot simply has no optimizer.state key */
    if (r->error.code && !r->cannot_tell) {
        rc = r->error.code;
        ckpt_error_move(err, &r->error);
    } else if (r->failures_len) {
        rc = r->failures[0].code;
        ckpt_error_move(err, &r->failures[0]);
        if (!err->hint)
            ckpt_set_hint(err, "convert places the optimizer's ids on the model's names as `check --state` pairs "
                               "them: give the model the optimizer was saved with");
    }
    ckpt_pair_result_free(r);
    return rc;
}

static bool is_torch(const ckpt_file *f)
{
    const ckpt_report *rep = f ? ckpt_file_report(f) : NULL;
    return rep && rep->family && rep->family->id == CKPT_FAMILY_PYTORCH && rep->family_data;
}

int ckpt_dcp_write(ckpt_file *opt, ckpt_file *model, const ckpt_dcp_write_options *o, const ckpt_sink *data,
                   const ckpt_sink *metadata, ckpt_dcp_write_result *res, ckpt_error *err)
{
    if (res) memset(res, 0, sizeof *res);
    if (!opt || !model || !o || !data || !metadata)
        return ckpt_fail(err, NULL, CKPT_E_INVALID_ARGUMENT, CKPT_NONE, 0, "invalid arguments to convert");
    const ckpt_report *ro = ckpt_file_report(opt), *rm = ckpt_file_report(model);
    if (!is_torch(opt) || !((const tf_data *)ro->family_data)->t->optimizers_len)
        return ckpt_fail(err, DCP, CKPT_E_WRONG_FAMILY, CKPT_NONE, 0,
                         "a DCP folder is written from a PyTorch optimizer file (optimizer.pt, a torch.save file "
                         "holding an optimizer state dict)");
    if (!is_torch(model))
        return ckpt_fail(err, DCP, CKPT_E_WRONG_FAMILY, CKPT_NONE, 0,
                         "--state must be the model's torch.save state dict (pytorch_model.bin, model.pt): its "
                         "names key the DCP folder");
    if (ro->error.code || rm->error.code)
        return ckpt_fail(err, NULL, CKPT_E_NOT_READABLE, CKPT_NONE, 0, "cannot convert: the %s file is invalid",
                         ro->error.code ? "optimizer" : "model");
    TRY(check_pair(opt, model, o, err));
    const tf_data *d = ro->family_data;
    plan p = {NULL, 0, 0, err, o->torch113};
    int rc = plan_model(&p, model, ((const tf_data *)rm->family_data)->t);
    if (!rc) rc = plan_optimizer(&p, opt, d);
    /* the records: the bytes items first, then the tensors (_write_files_from_queue) */
    counter out = {data, 0};
    uint64_t done = 0;
    for (int pass = 0; pass < 2 && !rc; pass++)
        for (size_t k = 0; k < p.len && !rc; k++)
            if (p.keys[k].it.tensor == (pass == 1)) rc = record(&p, &p.keys[k], &out, o, &done);
    strbuf meta = {0};
    if (!rc) {
        ckpt_dcp_item *items = malloc((p.len ? p.len : 1) * sizeof *items);
        if (!items) rc = ckpt_fail_oom(err);
        for (size_t k = 0; !rc && k < p.len; k++) items[k] = p.keys[k].it;
        ckpt_dcp_meta_options mo = {o->torch113, o->checkpoint_id, o->save_id};
        if (!rc && !ckpt_dcp_metadata(items, p.len, &mo, &meta)) rc = ckpt_fail_oom(err);
        free(items);
    }
    if (!rc) rc = metadata->write(metadata->ctx, meta.data, meta.len);
    for (size_t k = 0; !rc && res && k < p.len; k++) {
        res->keys++;
        res->model_keys += !strncmp(p.keys[k].name, "model.", 6);
        res->tensors += p.keys[k].it.tensor;
        res->bytes_items += !p.keys[k].it.tensor;
    }
    if (!rc && res) res->data_bytes = out.at;
    if (rc && !err->code) ckpt_fail(err, NULL, rc, CKPT_NONE, 0, "could not write the DCP folder");
    sb_free(&meta);
    plan_free(&p);
    return rc;
}

char *ckpt_dcp_write_result_json(const ckpt_dcp_write_result *res)
{
    strbuf sb = {0};
    sb_puts(&sb, "{\"keys\":");
    j_u64(&sb, res->keys);
    sb_puts(&sb, ",\"modelKeys\":");
    j_u64(&sb, res->model_keys);
    sb_puts(&sb, ",\"tensors\":");
    j_u64(&sb, res->tensors);
    sb_puts(&sb, ",\"bytesItems\":");
    j_u64(&sb, res->bytes_items);
    sb_puts(&sb, ",\"dataBytes\":");
    j_u64(&sb, res->data_bytes);
    sb_puts(&sb, ",\"dataFile\":");
    j_string(&sb, DATA_FILE);
    sb_putc(&sb, '}');
    return sb_take(&sb);
}
