/* TorchLean to PyTorch (format.md 10.1, 10.2; design "Between PyTorch and TorchLean"): the state
 * of a valid TLADAMF file written as the torch.save zip of an Adam/AdamW optimizer's state_dict,
 *   {'state': {i: {'step', 'exp_avg', 'exp_avg_sq'}}, 'param_groups': [{..., 'params': [0..n-1]}]}
 * index i the i-th owner slot in slot order (what Adam(p for p in model.parameters() if
 * p.requires_grad) numbers: a tied alias is one parameter, a frozen slot none).
 *
 * The zip is laid out as torch.save lays it out: {prefix}/data.pkl first, then byteorder, one
 * {prefix}/data/{key} per storage in the pickle's order, {prefix}/version last; every member's
 * data 64-byte aligned (torch pads the local header's extra field). The pickle (protocol 2) names
 * only what torch.load(weights_only=True) allows: collections.OrderedDict,
 * torch._utils._rebuild_tensor_v2, torch.FloatStorage and torch.DoubleStorage. Floats are
 * BINFLOAT, so lr, betas, eps and weight_decay keep their exact bits. The pickle is built in
 * memory (it grows with the slots, not the moments); the moments are copied chunk by chunk. */
#include "core/core.h"
#include "containers/zip.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A float32 holds every integer up to 2^24; from there a step is a float64 (exact to 2^53). */
#define F32_EXACT (UINT64_C(1) << 24)
#define F64_EXACT (UINT64_C(1) << 53)

/* ---- the pickle's opcodes (protocol 2) ---- */

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

static void p_int(strbuf *sb, uint64_t v)
{
    uint8_t b[10];
    if (v < 256) {
        b[0] = P_BININT1, b[1] = (uint8_t)v;
        sb_put(sb, (const char *)b, 2);
    } else if (v < 65536) {
        b[0] = P_BININT2, b[1] = (uint8_t)v, b[2] = (uint8_t)(v >> 8);
        sb_put(sb, (const char *)b, 3);
    } else if (v < UINT64_C(0x80000000)) {
        b[0] = P_BININT;
        for (int k = 0; k < 4; k++) b[1 + k] = (uint8_t)(v >> (8 * k));
        sb_put(sb, (const char *)b, 5);
    } else { /* LONG1: little-endian two's complement, a zero byte on top keeps it positive */
        unsigned n = 0;
        for (uint64_t x = v; x; x >>= 8) n++;
        if (v >> (8 * n - 1)) n++;
        b[0] = P_LONG1, b[1] = (uint8_t)n;
        for (unsigned k = 0; k < n; k++) b[2 + k] = k < 8 ? (uint8_t)(v >> (8 * k)) : 0;
        sb_put(sb, (const char *)b, 2 + n);
    }
}

/* BINFLOAT: the binary64 bits, big-endian. */
static void p_float_bits(strbuf *sb, uint64_t bits)
{
    uint8_t b[9];
    b[0] = P_BINFLOAT;
    for (int k = 0; k < 8; k++) b[1 + k] = (uint8_t)(bits >> (56 - 8 * k));
    sb_put(sb, (const char *)b, 9);
}

static void p_str(strbuf *sb, const char *s)
{
    size_t n = strlen(s);
    uint8_t b[5] = {P_BINUNICODE, (uint8_t)n, (uint8_t)(n >> 8), (uint8_t)(n >> 16), (uint8_t)(n >> 24)};
    sb_put(sb, (const char *)b, 5);
    sb_put(sb, s, n);
}

static void p_global(strbuf *sb, const char *module, const char *name)
{
    op(sb, P_GLOBAL);
    sb_puts(sb, module);
    sb_putc(sb, '\n');
    sb_puts(sb, name);
    sb_putc(sb, '\n');
}

static void p_bool(strbuf *sb, bool v) { op(sb, v ? P_NEWTRUE : P_NEWFALSE); }

/* A tuple of ints, as Python's pickler writes one of that length. */
static void p_int_tuple(strbuf *sb, const uint64_t *v, size_t n)
{
    if (n == 0) return op(sb, P_EMPTY_TUPLE);
    if (n > 3) op(sb, P_MARK);
    for (size_t k = 0; k < n; k++) p_int(sb, v[k]);
    op(sb, n == 1 ? P_TUPLE1 : n == 2 ? P_TUPLE2 : n == 3 ? P_TUPLE3 : P_TUPLE);
}

/* _rebuild_tensor_v2(('storage', torch.{Float,Double}Storage, key, 'cpu', numel) as a persistent
 * id, 0, size, stride, False, OrderedDict()): a contiguous tensor filling its storage. */
static void p_tensor(strbuf *sb, bool f64, uint64_t key, uint64_t numel, const uint64_t *size, const uint64_t *stride,
                     size_t rank)
{
    char k[24];
    snprintf(k, sizeof k, "%llu", (unsigned long long)key);
    p_global(sb, "torch._utils", "_rebuild_tensor_v2");
    op(sb, P_MARK);
    op(sb, P_MARK);
    p_str(sb, "storage");
    p_global(sb, "torch", f64 ? "DoubleStorage" : "FloatStorage");
    p_str(sb, k);
    p_str(sb, "cpu");
    p_int(sb, numel);
    op(sb, P_TUPLE);
    op(sb, P_BINPERSID);
    p_int(sb, 0);
    p_int_tuple(sb, size, rank);
    p_int_tuple(sb, stride, rank);
    p_bool(sb, false);
    p_global(sb, "collections", "OrderedDict");
    op(sb, P_EMPTY_TUPLE);
    op(sb, P_REDUCE);
    op(sb, P_TUPLE);
    op(sb, P_REDUCE);
}

/* ---- the plan: the owner slots and their storages ---- */

typedef struct owner {
    uint64_t slot, step, count;
    uint64_t m_offset, v_offset;
} owner;

typedef struct plan {
    const ckpt_report *rep;
    owner *owners;
    size_t len;
    strbuf pickle;
} plan;

static void plan_free(plan *p)
{
    free(p->owners);
    sb_free(&p->pickle);
}

static int plan_owners(plan *p, const ckpt_file *in, ckpt_error *err)
{
    const ckpt_schema *s = p->rep->schema;
    size_t n = ckpt_schema_count(s);
    uint64_t want = ckpt_schema_optimizer_state_count(s);
    if (want > n) want = n;
    p->owners = calloc(want ? (size_t)want : 1, sizeof *p->owners);
    if (!p->owners) return ckpt_fail_oom(err);
    for (size_t i = 0; i < n && p->len < want; i++) {
        if (!ckpt_schema_is_representative(s, i)) continue;
        const ckpt_entry_info *e;
        uint64_t holder;
        TRY(ckpt_file_entry(in, i, &e, &holder, err));
        if (e->step >= F64_EXACT)
            return ckpt_fail_at(err, NULL, CKPT_E_CONVERSION_LOSES, CKPT_NONE, 0, i,
                                "parameter %llu: step %llu has no exact float64, and torch keeps the step as one",
                                (unsigned long long)i, (unsigned long long)e->step);
        p->owners[p->len++] = (owner){i, e->step, e->count, e->m_offset, e->v_offset};
    }
    return 0;
}

/* Contiguous strides, as torch computes them (a zero-sized dim counts as one). */
static int strides_of(const uint64_t *dims, size_t rank, uint64_t *stride, ckpt_error *err)
{
    uint64_t acc = 1;
    for (size_t d = rank; d-- > 0;) {
        stride[d] = acc;
        uint64_t dim = dims[d] ? dims[d] : 1;
        if (acc > UINT64_MAX / dim)
            return ckpt_fail(err, NULL, CKPT_E_INVALID_ARGUMENT, CKPT_NONE, 0, "a shape too large for torch");
        acc *= dim;
    }
    return 0;
}

static void p_group(strbuf *sb, const ckpt_config *c, double lr, size_t params)
{
    bool adamw = c->kind == CKPT_ADAMW;
    op(sb, P_EMPTY_DICT);
    op(sb, P_MARK);
    p_str(sb, "lr");
    p_float_bits(sb, ckpt_bits_from_double(lr));
    p_str(sb, "betas");
    p_float_bits(sb, c->beta1);
    p_float_bits(sb, c->beta2);
    op(sb, P_TUPLE2);
    p_str(sb, "eps");
    p_float_bits(sb, c->epsilon);
    p_str(sb, "weight_decay");
    p_float_bits(sb, c->weight_decay);
    p_str(sb, "amsgrad");
    p_bool(sb, false);
    /* the keys and order of torch's Adam and AdamW groups (torch 1.13) */
    if (adamw) {
        p_str(sb, "foreach");
        op(sb, P_NONE);
        p_str(sb, "maximize");
        p_bool(sb, false);
        p_str(sb, "capturable");
        p_bool(sb, false);
    } else {
        p_str(sb, "maximize");
        p_bool(sb, false);
        p_str(sb, "foreach");
        op(sb, P_NONE);
        p_str(sb, "capturable");
        p_bool(sb, false);
        p_str(sb, "differentiable");
        p_bool(sb, false);
        p_str(sb, "fused");
        p_bool(sb, false);
    }
    /* the kind, as torch's Adam names it (decoupled: AdamW): readers of the file (ckptscope's
     * own, format.md 10.3) tell Adam from AdamW by it; torch 1.13 keeps it unused */
    p_str(sb, "decoupled_weight_decay");
    p_bool(sb, adamw);
    p_str(sb, "params");
    op(sb, P_EMPTY_LIST);
    if (params) {
        op(sb, P_MARK);
        for (size_t k = 0; k < params; k++) p_int(sb, k);
        op(sb, P_APPENDS);
    }
    op(sb, P_SETITEMS);
}

static int plan_pickle(plan *p, double lr, ckpt_error *err)
{
    const ckpt_schema *s = p->rep->schema;
    bool f64 = p->rep->dtype == CKPT_FLOAT64;
    strbuf *sb = &p->pickle;
    uint8_t proto[2] = {P_PROTO, 2};
    sb_put(sb, (const char *)proto, 2);
    op(sb, P_EMPTY_DICT);
    op(sb, P_MARK);
    p_str(sb, "state");
    op(sb, P_EMPTY_DICT);
    if (p->len) op(sb, P_MARK);
    for (size_t k = 0; k < p->len && !sb->failed; k++) {
        const owner *o = &p->owners[k];
        size_t rank = (size_t)ckpt_schema_rank(s, o->slot);
        const uint64_t *dims = ckpt_schema_dims(s, o->slot);
        uint64_t *stride = malloc((rank ? rank : 1) * sizeof *stride);
        if (!stride) return ckpt_fail_oom(err);
        int rc = strides_of(dims, rank, stride, err);
        if (rc) {
            free(stride);
            return rc;
        }
        p_int(sb, k);
        op(sb, P_EMPTY_DICT);
        op(sb, P_MARK);
        p_str(sb, "step");
        p_tensor(sb, o->step >= F32_EXACT, 3 * k, 1, NULL, NULL, 0);
        p_str(sb, "exp_avg");
        p_tensor(sb, f64, 3 * k + 1, o->count, dims, stride, rank);
        p_str(sb, "exp_avg_sq");
        p_tensor(sb, f64, 3 * k + 2, o->count, dims, stride, rank);
        op(sb, P_SETITEMS);
        free(stride);
    }
    if (p->len) op(sb, P_SETITEMS);
    p_str(sb, "param_groups");
    op(sb, P_EMPTY_LIST);
    p_group(sb, &p->rep->config, lr, p->len);
    sb_putc(sb, 'a'); /* APPEND: the one group */
    op(sb, P_SETITEMS);
    op(sb, P_STOP);
    return sb->failed ? ckpt_fail_oom(err) : 0;
}

/* ---- the zip ---- */

typedef struct copier {
    ckpt_zip_writer *zw;
    const ckpt_torch_options *o;
    ckpt_error *err;
    uint64_t done;
} copier;

static int copy_chunk(void *ctx, const void *data, size_t elements)
{
    copier *c = ctx;
    return ckpt_zip_write(c->zw, data, elements); /* width 1: elements are bytes */
}

static int member(ckpt_zip_writer *zw, const char *prefix, const char *name, const void *data, size_t n)
{
    char path[128];
    snprintf(path, sizeof path, "%s/%s", prefix, name);
    TRY(ckpt_zip_begin(zw, path));
    TRY(ckpt_zip_write(zw, data, n));
    return ckpt_zip_end(zw);
}

static int payload(copier *c, ckpt_reader *r, const char *prefix, uint64_t key, uint64_t offset, uint64_t bytes)
{
    char name[48];
    snprintf(name, sizeof name, "%s/data/%llu", prefix, (unsigned long long)key);
    TRY(ckpt_zip_begin(c->zw, name));
    r->pos = offset;
    TRY(ckpt_stream_payload(r, bytes, 1, copy_chunk, c, c->err));
    TRY(ckpt_zip_end(c->zw));
    c->done += bytes;
    if (c->o->progress && c->o->progress(c->o->progress_ctx, c->done, CKPT_NONE))
        return ckpt_fail(c->err, NULL, CKPT_E_CANCELLED, CKPT_NONE, 0, "convert cancelled");
    return 0;
}

static bool plain_name(const char *s)
{
    size_t n = s ? strlen(s) : 0;
    if (n == 0 || n > 64) return false;
    for (size_t k = 0; k < n; k++) {
        char ch = s[k];
        if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '_' ||
              ch == '-'))
            return false;
    }
    return true;
}

static int write_zip(const plan *p, const ckpt_file *in, const ckpt_torch_options *o, const ckpt_sink *out,
                     ckpt_error *err)
{
    const char *prefix = plain_name(o->prefix) ? o->prefix : "archive";
    unsigned width = ckpt_dtype_width(p->rep->dtype);
    ckpt_zip_writer zw;
    ckpt_zip_writer_init(&zw, out, err);
    zw.align = 64;
    ckpt_reader *r = ckpt_reader_with_prefix(ckpt_file_source(in), p->rep->family->prefix);
    if (!r) return ckpt_fail_oom(err);
    copier c = {&zw, o, err, 0};
    int rc = member(&zw, prefix, "data.pkl", p->pickle.data, p->pickle.len);
    if (!rc) rc = member(&zw, prefix, "byteorder", "little", 6);
    for (size_t k = 0; k < p->len && !rc; k++) {
        const owner *w = &p->owners[k];
        uint8_t step[8];
        if (w->step >= F32_EXACT) {
            uint64_t bits = ckpt_bits_from_double((double)w->step);
            ckpt_put_u64le(step, bits);
        } else {
            float f = (float)w->step;
            uint32_t bits;
            memcpy(&bits, &f, 4);
            for (int b = 0; b < 4; b++) step[b] = (uint8_t)(bits >> (8 * b));
        }
        char name[48];
        snprintf(name, sizeof name, "data/%llu", (unsigned long long)(3 * k));
        rc = member(&zw, prefix, name, step, w->step >= F32_EXACT ? 8 : 4);
        /* count * width fits: the file holds both payloads */
        if (!rc) rc = payload(&c, r, prefix, 3 * k + 1, w->m_offset, w->count * width);
        if (!rc) rc = payload(&c, r, prefix, 3 * k + 2, w->v_offset, w->count * width);
    }
    if (!rc) rc = member(&zw, prefix, "version", "3\n", 2);
    if (!rc) rc = ckpt_zip_finish(&zw);
    ckpt_reader_free(r);
    ckpt_zip_writer_free(&zw);
    return rc;
}

/* ---- the pairing with --state ---- */

static int check_pair(const ckpt_file *in, ckpt_file *state, const ckpt_torch_options *o, ckpt_error *err)
{
    /* in is a TLADAMF file (checked first): pairing reads it and changes nothing of it */
    ckpt_pair_result *r = ckpt_pair_named((ckpt_file *)in, state, NULL, 0, o->progress, o->progress_ctx);
    if (!r) return ckpt_fail_oom(err);
    int rc = 0;
    if (r->failures_len) {
        rc = r->failures[0].code;
        ckpt_error_move(err, &r->failures[0]);
        if (!err->hint)
            ckpt_set_hint(err, "convert checks the pair as `check --state` does: give the model-state file of this "
                               "checkpoint, or leave --state out");
    } else if (r->error.code) {
        rc = r->error.code;
        ckpt_error_move(err, &r->error);
    }
    ckpt_pair_result_free(r);
    return rc;
}

int ckpt_convert_to_torch(const ckpt_file *in, ckpt_file *state, const ckpt_torch_options *o, const ckpt_sink *out,
                          ckpt_error *err)
{
    const ckpt_report *rep = in ? ckpt_file_report(in) : NULL;
    if (!rep || !o || !out)
        return ckpt_fail(err, NULL, CKPT_E_INVALID_ARGUMENT, CKPT_NONE, 0, "invalid arguments to convert");
    if (rep->family && rep->family->id != CKPT_FAMILY_TLADAMF)
        return ckpt_fail(err, NULL, CKPT_E_WRONG_FAMILY, CKPT_NONE, 0,
                         "this is a %s (%s): only optimizer checkpoints are converted", rep->family->name,
                         rep->family->magic);
    if (rep->error.code || !rep->family)
        return ckpt_fail(err, NULL, CKPT_E_NOT_READABLE, CKPT_NONE, 0, "cannot convert: the file is invalid");
    if (!o->has_lr)
        return ckpt_fail(err, NULL, CKPT_E_INVALID_ARGUMENT, CKPT_NONE, 0,
                         "a PyTorch optimizer file holds the learning rate and TorchLean does not store it: give "
                         "it with --lr X");
    if (!isfinite(o->lr) || o->lr < 0.0)
        return ckpt_fail(err, NULL, CKPT_E_INVALID_ARGUMENT, CKPT_NONE, 0,
                         "--lr must be finite and nonnegative (torch refuses a negative learning rate)");
    if (state) TRY(check_pair(in, state, o, err));
    plan p = {rep, NULL, 0, {0}};
    int rc = plan_owners(&p, in, err);
    if (!rc) rc = plan_pickle(&p, o->lr, err);
    if (!rc) rc = write_zip(&p, in, o, out, err);
    plan_free(&p);
    return rc;
}
