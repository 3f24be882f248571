/* A name-keyed PyTorch optimizer (FSDP's, docs/pytorch.md) as a consolidated torch.optim state
 * dict keyed by ids, once paired with its model by name: {'state': {id: {its state as
 * stored}}, 'param_groups': [{the group's keys as stored but params, then 'params': [ids]}]}.
 * Ids as torch numbers them (optimizer.py state_dict: group after group, consecutive from 0);
 * names do not tell the live list order, so each group's names take module order (the pair's
 * slots), or the stored list with --group-order stored. Tensors are copied whole in their stored
 * dtype, each its own storage; other values are written again as Python's pickler writes them
 * (floats bit for bit, tuples as tuples). The zip is laid out as torch_write.c lays one out. */
#include "families/pytorch/data.h"
#include "containers/zip.h"
#include "containers/pickle_write.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum {
    P_MARK = '(',
    P_STOP = '.',
    P_BINFLOAT = 'G',
    P_BININT = 'J',
    P_BININT1 = 'K',
    P_BININT2 = 'M',
    P_BINPERSID = 'Q',
    P_REDUCE = 'R',
    P_BINUNICODE = 'X',
    P_APPENDS = 'e',
    P_GLOBAL = 'c',
    P_EMPTY_DICT = '}',
    P_EMPTY_LIST = ']',
    P_EMPTY_TUPLE = ')',
    P_NONE = 'N',
    P_SETITEMS = 'u',
    P_TUPLE = 't',
    P_PROTO = 0x80,
    P_TUPLE1 = 0x85,
    P_TUPLE2 = 0x86,
    P_TUPLE3 = 0x87,
    P_NEWTRUE = 0x88,
    P_NEWFALSE = 0x89,
    P_LONG1 = 0x8a,
};

static void op(strbuf *sb, int code) { sb_putc(sb, (char)code); }

static void p_int(strbuf *sb, int64_t v)
{
    uint8_t b[10];
    if (v >= 0 && v < 256) {
        b[0] = P_BININT1, b[1] = (uint8_t)v;
        sb_put(sb, (const char *)b, 2);
    } else if (v >= 0 && v < 65536) {
        b[0] = P_BININT2, b[1] = (uint8_t)v, b[2] = (uint8_t)(v >> 8);
        sb_put(sb, (const char *)b, 3);
    } else if (v >= -(INT64_C(1) << 31) && v < (INT64_C(1) << 31)) {
        b[0] = P_BININT;
        for (int k = 0; k < 4; k++) b[1 + k] = (uint8_t)((uint64_t)v >> (8 * k));
        sb_put(sb, (const char *)b, 5);
    } else { /* LONG1: eight bytes of two's complement hold any int64 */
        b[0] = P_LONG1, b[1] = 8;
        for (int k = 0; k < 8; k++) b[2 + k] = (uint8_t)((uint64_t)v >> (8 * k));
        sb_put(sb, (const char *)b, 10);
    }
}

static void p_strn(strbuf *sb, const char *s, size_t n)
{
    uint8_t b[5] = {P_BINUNICODE, (uint8_t)n, (uint8_t)(n >> 8), (uint8_t)(n >> 16), (uint8_t)(n >> 24)};
    sb_put(sb, (const char *)b, 5);
    sb_put(sb, s, n);
}

static void p_str(strbuf *sb, const char *s) { p_strn(sb, s, strlen(s)); }

static void p_global(strbuf *sb, const char *module, const char *name)
{
    op(sb, P_GLOBAL);
    sb_puts(sb, module);
    sb_putc(sb, '\n');
    sb_puts(sb, name);
    sb_putc(sb, '\n');
}

static void p_uint_tuple(strbuf *sb, const uint64_t *v, size_t n)
{
    if (n == 0) return op(sb, P_EMPTY_TUPLE);
    if (n > 3) op(sb, P_MARK);
    for (size_t k = 0; k < n; k++) p_int(sb, (int64_t)v[k]);
    op(sb, n == 1 ? P_TUPLE1 : n == 2 ? P_TUPLE2 : n == 3 ? P_TUPLE3 : P_TUPLE);
}

/* torch's storage class of a dtype ("float32" -> FloatStorage), NULL when torch.save has none here */
static const char *storage_class(const char *dtype)
{
    static const char *const map[][2] = {{"float64", "DoubleStorage"}, {"float32", "FloatStorage"},
                                         {"float16", "HalfStorage"},   {"bfloat16", "BFloat16Storage"},
                                         {"int64", "LongStorage"},     {"int32", "IntStorage"},
                                         {"int16", "ShortStorage"},    {"int8", "CharStorage"},
                                         {"uint8", "ByteStorage"},     {"bool", "BoolStorage"}};
    for (size_t k = 0; k < sizeof map / sizeof map[0]; k++)
        if (!strcmp(map[k][0], dtype)) return map[k][1];
    return NULL;
}

typedef struct plan {
    const ckpt_torch *t;
    const tf_data *d;
    const ckpt_ids_options *o;
    int64_t *id_of; /* per pair index (d->idx): its id, -1 none */
    size_t *by_id;  /* id -> pair index */
    size_t ids;
    size_t *groups;   /* the groups in the order written: stored; form F's by first member in module order */
    size_t *storages; /* storage key -> the optimizer's tensor */
    size_t storages_len, storages_cap;
    strbuf pk;
    ckpt_error *err;
} plan;

static int loses(plan *p, const char *fmt, const char *a, const char *b)
{
    return ckpt_fail(p->err, NULL, CKPT_E_CONVERSION_LOSES, CKPT_NONE, 0, fmt, a, b);
}

/* _rebuild_tensor_v2(('storage', torch.{X}Storage, key, 'cpu', numel), 0, size, stride, False,
 * OrderedDict()): the tensor whole in its own storage, row-major. */
static int p_tensor(plan *p, size_t x, const char *key, const char *fqn)
{
    const ckpt_torch_tensor *tx = &p->t->tensors[x];
    const char *cls = storage_class(tx->dtype);
    if (!cls || !tx->contiguous)
        return loses(p, "%s of %s is a tensor ckptscope does not write again (not contiguous, or of no storage class)",
                     key, fqn);
    if (!ckpt_grow((void **)&p->storages, &p->storages_cap, p->storages_len + 1, sizeof *p->storages))
        return ckpt_fail_oom(p->err);
    char k[24];
    snprintf(k, sizeof k, "%zu", p->storages_len);
    p->storages[p->storages_len++] = x;
    uint64_t stride[64];
    const uint64_t *size = ckpt_torch_size(p->t, x);
    if (tx->rank > 64) return loses(p, "%s of %s has more than 64 dimensions", key, fqn);
    uint64_t acc = 1; /* row-major strides (its elements fill its storage) */
    for (uint32_t d = tx->rank; d-- > 0;) {
        stride[d] = acc;
        if (ckpt_mul_overflows(acc, size[d] ? size[d] : 1, &acc)) return loses(p, "%s of %s is too large", key, fqn);
    }
    strbuf *sb = &p->pk;
    p_global(sb, "torch._utils", "_rebuild_tensor_v2");
    op(sb, P_MARK);
    op(sb, P_MARK);
    p_str(sb, "storage");
    p_global(sb, "torch", cls);
    p_str(sb, k);
    p_str(sb, "cpu");
    p_int(sb, (int64_t)tx->count);
    op(sb, P_TUPLE);
    op(sb, P_BINPERSID);
    p_int(sb, 0);
    p_uint_tuple(sb, size, tx->rank);
    p_uint_tuple(sb, stride, tx->rank);
    op(sb, P_NEWFALSE);
    p_global(sb, "collections", "OrderedDict");
    op(sb, P_EMPTY_TUPLE);
    op(sb, P_REDUCE);
    op(sb, P_TUPLE);
    op(sb, P_REDUCE);
    return 0;
}

/* A stored value again: a tensor (its own storage), None, bools, ints, floats (their bits), str,
 * tuples and lists of them; anything else is refused, naming it. */
static int p_value(plan *p, size_t k, const char *key, const char *fqn, int depth)
{
    const ckpt_pickle *pk = p->t->pickle;
    if (k < pk->nodes_len && p->t->tensor_of_node[k] != CKPT_TORCH_NONE)
        return p_tensor(p, p->t->tensor_of_node[k], key, fqn);
    const ckpt_pnode *n = ckpt_pickle_node(pk, k);
    strbuf *sb = &p->pk;
    if (!n || depth > 32) return loses(p, "%s of %s is nested too deep to write again", key, fqn);
    switch (n->kind) {
        case CKPT_PK_NONE: op(sb, P_NONE); return 0;
        case CKPT_PK_BOOL: op(sb, n->truth ? P_NEWTRUE : P_NEWFALSE); return 0;
        case CKPT_PK_INT: p_int(sb, n->i); return 0;
        case CKPT_PK_FLOAT: {
            uint64_t bits;
            memcpy(&bits, &n->f, 8);
            uint8_t b[9] = {P_BINFLOAT};
            for (int q = 0; q < 8; q++) b[1 + q] = (uint8_t)(bits >> (56 - 8 * q));
            sb_put(sb, (const char *)b, 9);
            return 0;
        }
        case CKPT_PK_BIGINT:
            if ((n->flags & CKPT_PF_TEXT) || n->len > 255) break;
            op(sb, P_LONG1);
            sb_putc(sb, (char)n->len);
            sb_put(sb, (const char *)pk->data + n->at, n->len);
            return 0;
        case CKPT_PK_STR:
            if (n->flags & CKPT_PF_TEXT) break;
            p_strn(sb, (const char *)pk->data + n->at, n->len);
            return 0;
        case CKPT_PK_TUPLE:
        case CKPT_PK_LIST: {
            bool tuple = n->kind == CKPT_PK_TUPLE;
            if (tuple && n->count == 0) return op(sb, P_EMPTY_TUPLE), 0;
            if (!tuple) op(sb, P_EMPTY_LIST);
            if (!tuple || n->count > 3) op(sb, P_MARK);
            for (uint32_t cell = n->first; cell != CKPT_PNIL; cell = pk->cells[cell].next)
                TRY(p_value(p, pk->cells[cell].node, key, fqn, depth + 1));
            if (tuple) op(sb, n->count == 1 ? P_TUPLE1 : n->count == 2 ? P_TUPLE2 : n->count == 3 ? P_TUPLE3 : P_TUPLE);
            else op(sb, P_APPENDS);
            return 0;
        }
        default: break;
    }
    return loses(p, "%s of %s is a Python object ckptscope does not write again", key, fqn);
}

/* The keys and values as stored (the caller writes the MARK and SETITEMS around them). */
static int p_kvs(plan *p, size_t first, size_t len, const char *fqn)
{
    const ckpt_torch *t = p->t;
    for (size_t k = 0; k < len; k++) {
        const ckpt_torch_kv *kv = &t->kvs[first + k];
        const char *key = (const char *)t->pickle->data + kv->key_at;
        char name[64];
        snprintf(name, sizeof name, "%.*s", (int)(kv->key_len < 60 ? kv->key_len : 60), key);
        p_strn(&p->pk, key, kv->key_len);
        TRY(p_value(p, kv->value, name, fqn, 0));
    }
    return 0;
}

static const ckpt_torch_entry *entry_of(const ckpt_torch *t, int64_t index)
{
    const ckpt_torch_optimizer *o = &t->optimizers[0];
    for (size_t e = 0; e < o->entries_len; e++)
        if (t->entries[o->entries + e].index == index) return &t->entries[o->entries + e];
    return NULL;
}

/* The pair indices listed by groups, in the groups' stored order (gather_indices' order). */
static size_t listed(const ckpt_torch *t)
{
    const ckpt_torch_optimizer *o = &t->optimizers[0];
    size_t n = 0;
    for (size_t g = 0; g < o->groups_len; g++) n += t->groups[o->groups + g].params_len;
    return n;
}

typedef struct slot_at {
    uint64_t slot;
    size_t j; /* the pair index */
} slot_at;

static int by_slot(const void *a, const void *b)
{
    const slot_at *x = a, *y = b;
    return x->slot < y->slot ? -1 : x->slot > y->slot;
}

static int by_slot_then_j(const void *a, const void *b)
{
    const slot_at *x = a, *y = b;
    if (x->slot != y->slot) return x->slot < y->slot ? -1 : 1;
    return x->j < y->j ? -1 : x->j > y->j;
}

/* Each group's placed names, numbered group after group: in module order (the pair's slots), or
 * as stored. The warnings say where a stored list goes against module order. */
static int number(plan *p, char ***warnings, size_t *warnings_len)
{
    const ckpt_torch *t = p->t;
    const tf_data *d = p->d;
    const ckpt_torch_optimizer *o = &t->optimizers[0];
    size_t n = d->idx_len;
    p->id_of = malloc((n ? n : 1) * sizeof *p->id_of);
    p->by_id = malloc((n ? n : 1) * sizeof *p->by_id);
    size_t *list = malloc((n ? n : 1) * sizeof *list);
    slot_at *sorted = malloc((n ? n : 1) * sizeof *sorted);
    if (!p->id_of || !p->by_id || !list || !sorted) {
        free(list);
        free(sorted);
        return ckpt_fail_oom(p->err);
    }
    for (size_t j = 0; j < n; j++) p->id_of[j] = -1;
    size_t ng = o->groups_len, end = listed(t);
    size_t *start = malloc((ng + 1) * sizeof *start);
    slot_at *firsts = malloc((ng ? ng : 1) * sizeof *firsts);
    p->groups = malloc((ng ? ng : 1) * sizeof *p->groups);
    if (!start || !firsts || !p->groups) {
        free(start), free(firsts), free(list), free(sorted);
        return ckpt_fail_oom(p->err);
    }
    /* each group's span of the pair's indices, and its first member in module order */
    start[0] = 0;
    for (size_t g = 0; g < ng; g++) {
        start[g + 1] = start[g] + t->groups[o->groups + g].params_len;
        firsts[g] = (slot_at){CKPT_NONE, g};
        for (size_t j = start[g]; j < start[g + 1] && j < end; j++)
            if (d->binding.slot_of[j] < firsts[g].slot) firsts[g].slot = d->binding.slot_of[j];
    }
    /* form F keeps no group order: its groups by their first member in module order (stable) */
    if (o->keying == CKPT_TORCH_KEYED_FLAT) qsort(firsts, ng, sizeof *firsts, by_slot_then_j);
    for (size_t q = 0; q < ng; q++) p->groups[q] = firsts[q].j;
    free(firsts);
    for (size_t q = 0; q < ng; q++) {
        size_t g = p->groups[q], len = 0;
        for (size_t j = start[g]; j < start[g + 1] && j < end; j++)
            if (d->binding.slot_of[j] != CKPT_NONE) list[len++] = j;
        /* the first pair the stored list holds against module order */
        for (size_t k = 1; warnings && k < len; k++) {
            if (d->binding.slot_of[list[k - 1]] < d->binding.slot_of[list[k]]) continue;
            strbuf w = {0};
            sb_printf(&w, "DCP: group %zu lists %s before %s, the module the other way round: %s", q,
                      d->idx[list[k - 1]].name, d->idx[list[k]].name,
                      p->o->group_order_stored ? "numbered as listed (--group-order stored)"
                                               : "numbered in module order (--group-order stored keeps the list)");
            char **grown = realloc(*warnings, (*warnings_len + 1) * sizeof *grown);
            if (!grown || w.failed) {
                sb_free(&w);
                free(list);
                free(sorted);
                free(start);
                return ckpt_fail_oom(p->err);
            }
            *warnings = grown;
            grown[(*warnings_len)++] = sb_take(&w);
            break;
        }
        if (!p->o->group_order_stored) {
            for (size_t k = 0; k < len; k++) sorted[k] = (slot_at){d->binding.slot_of[list[k]], list[k]};
            qsort(sorted, len, sizeof *sorted, by_slot);
            for (size_t k = 0; k < len; k++) list[k] = sorted[k].j;
        }
        for (size_t k = 0; k < len; k++) {
            p->id_of[list[k]] = (int64_t)p->ids;
            p->by_id[p->ids++] = list[k];
        }
    }
    free(list);
    free(sorted);
    free(start);
    return 0;
}

static int check(const ckpt_file *in, const tf_data **d, ckpt_error *err)
{
    const ckpt_report *rep = in ? ckpt_file_report(in) : NULL;
    if (!rep) return ckpt_fail(err, NULL, CKPT_E_INVALID_ARGUMENT, CKPT_NONE, 0, "invalid arguments to convert");
    if (!rep->family || rep->family->id != CKPT_FAMILY_PYTORCH || !rep->family_data)
        return ckpt_fail(err, NULL, CKPT_E_WRONG_FAMILY, CKPT_NONE, 0, "this is not a PyTorch optimizer");
    if (rep->error.code) return ckpt_error_copy(err, &rep->error);
    *d = rep->family_data;
    const ckpt_torch *t = (*d)->t;
    if (!t->optimizers_len || t->optimizers[0].keying == CKPT_TORCH_KEYED_IDS)
        return ckpt_fail(err, NULL, CKPT_E_INVALID_ARGUMENT, CKPT_NONE, 0,
                         "--to ids converts an optimizer keyed by parameter names (FSDP's); this one is keyed by ids "
                         "already");
    if (!rep->slots_bound)
        return ckpt_fail(err, NULL, CKPT_E_INVALID_ARGUMENT, CKPT_NONE, 0,
                         "the optimizer must pair with its model first: its ids follow the model's module order "
                         "(--state MODEL)");
    if ((*d)->unordered_model)
        return ckpt_fail(err, "DCP", CKPT_E_INVALID_ARGUMENT, CKPT_NONE, 0,
                         "the model keeps no module order: give --names NAMES.json to number the parameters");
    return 0;
}

static int build(plan *p, char ***warnings, size_t *warnings_len)
{
    const ckpt_torch *t = p->t;
    const ckpt_torch_optimizer *o = &t->optimizers[0];
    TRY(number(p, warnings, warnings_len));
    strbuf *sb = &p->pk;
    op(sb, P_PROTO);
    sb_putc(sb, 2);
    op(sb, P_EMPTY_DICT);
    op(sb, P_MARK);
    p_str(sb, "state");
    op(sb, P_EMPTY_DICT);
    op(sb, P_MARK);
    for (size_t id = 0; id < p->ids; id++) {
        const ckpt_bind_index *x = &p->d->idx[p->by_id[id]];
        const ckpt_torch_entry *e = entry_of(t, x->index);
        if (!e) continue; /* listed by a group, without state: an id, no entry */
        p_int(sb, (int64_t)id);
        op(sb, P_EMPTY_DICT);
        op(sb, P_MARK);
        TRY(p_kvs(p, e->kv, e->kv_len, x->name));
        op(sb, P_SETITEMS);
    }
    op(sb, P_SETITEMS);
    p_str(sb, "param_groups");
    op(sb, P_EMPTY_LIST);
    op(sb, P_MARK);
    const size_t end = listed(t);
    for (size_t q = 0; q < o->groups_len; q++) {
        size_t g = p->groups[q];
        const ckpt_torch_group *gr = &t->groups[o->groups + g];
        char what[32];
        snprintf(what, sizeof what, "group %zu", g);
        op(sb, P_EMPTY_DICT);
        op(sb, P_MARK);
        TRY(p_kvs(p, gr->kv, gr->kv_len, what));
        p_str(sb, "params");
        op(sb, P_EMPTY_LIST);
        op(sb, P_MARK);
        for (size_t id = 0; id < p->ids; id++)
            if (p->d->idx[p->by_id[id]].group == g && p->by_id[id] < end) p_int(sb, (int64_t)id);
        op(sb, P_APPENDS);
        op(sb, P_SETITEMS);
    }
    op(sb, P_APPENDS);
    op(sb, P_SETITEMS);
    op(sb, P_STOP);
    return sb->failed ? ckpt_fail_oom(p->err) : 0;
}

static void plan_free(plan *p)
{
    free(p->id_of);
    free(p->by_id);
    free(p->groups);
    free(p->storages);
    sb_free(&p->pk);
}

static int member(ckpt_zip_writer *zw, const char *prefix, const char *name, const void *data, size_t n)
{
    char path[160];
    snprintf(path, sizeof path, "%s/%s", prefix, name);
    TRY(ckpt_zip_begin(zw, path));
    TRY(ckpt_zip_write(zw, data, n));
    return ckpt_zip_end(zw);
}

int ckpt_convert_to_ids(const ckpt_file *in, const ckpt_ids_options *o, const ckpt_sink *out, ckpt_error *err)
{
    const tf_data *d = NULL;
    TRY(check(in, &d, err));
    static const ckpt_ids_options none = {0};
    plan p = {d->t, d, o ? o : &none, NULL, NULL, 0, NULL, NULL, 0, 0, {0}, err};
    int rc = build(&p, NULL, NULL);
    if (rc) {
        plan_free(&p);
        return rc;
    }
    const char *prefix = ckpt_pw_archive_prefix(p.o->prefix);
    ckpt_zip_writer zw;
    ckpt_zip_writer_init(&zw, out, err);
    zw.align = 64;
    const ckpt_source *src = ckpt_file_source(in);
    uint8_t *buf = malloc(1 << 16);
    if (!buf) rc = ckpt_fail_oom(err);
    if (!rc) rc = member(&zw, prefix, "data.pkl", p.pk.data, p.pk.len);
    if (!rc) rc = member(&zw, prefix, "byteorder", "little", 6);
    uint64_t done = 0;
    for (size_t k = 0; !rc && k < p.storages_len; k++) {
        const ckpt_torch_tensor *tx = &d->t->tensors[p.storages[k]];
        char name[180];
        snprintf(name, sizeof name, "%s/data/%zu", prefix, k);
        uint64_t bytes = tx->count * tx->width; /* the file holds them: the reader checked the reach */
        rc = ckpt_zip_begin(&zw, name);
        for (uint64_t at = 0; !rc && at < bytes;) {
            size_t n = bytes - at < (1 << 16) ? (size_t)(bytes - at) : (size_t)1 << 16;
            rc = ckpt_read_at(src, tx->at + at, buf, n, "a tensor", err);
            if (!rc) rc = ckpt_zip_write(&zw, buf, n);
            at += n;
        }
        if (!rc) rc = ckpt_zip_end(&zw);
        done += bytes;
        if (!rc && p.o->progress && p.o->progress(p.o->progress_ctx, done, CKPT_NONE))
            rc = ckpt_fail(err, NULL, CKPT_E_CANCELLED, CKPT_NONE, 0, "convert cancelled");
    }
    if (!rc) rc = member(&zw, prefix, "version", "3\n", 2);
    if (!rc) rc = ckpt_zip_finish(&zw);
    ckpt_zip_writer_free(&zw);
    free(buf);
    plan_free(&p);
    return rc;
}

char *ckpt_convert_to_ids_warnings(const ckpt_file *in, const ckpt_ids_options *o, ckpt_error *err)
{
    const tf_data *d = NULL;
    if (check(in, &d, err)) return NULL;
    static const ckpt_ids_options none = {0};
    plan p = {d->t, d, o ? o : &none, NULL, NULL, 0, NULL, NULL, 0, 0, {0}, err};
    char **w = NULL;
    size_t wl = 0;
    int rc = number(&p, &w, &wl);
    strbuf sb = {0};
    if (!rc) {
        sb_putc(&sb, '[');
        for (size_t k = 0; k < wl; k++) {
            if (k) sb_putc(&sb, ',');
            j_string(&sb, w[k]);
        }
        sb_putc(&sb, ']');
        if (sb.failed) ckpt_fail_oom(err);
    }
    for (size_t k = 0; k < wl; k++) free(w[k]);
    free(w);
    plan_free(&p);
    return rc ? NULL : sb_take(&sb);
}
