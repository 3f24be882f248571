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
#include "containers/pickle_write.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A float32 holds every integer up to 2^24; from there a step is a float64 (exact to 2^53). */
#define F32_EXACT (UINT64_C(1) << 24)
#define F64_EXACT (UINT64_C(1) << 53)

/* _rebuild_tensor_v2(('storage', torch.{Float,Double}Storage, key, 'cpu', numel) as a persistent
 * id, 0, size, stride, False, OrderedDict()): a contiguous tensor filling its storage. */
static void p_tensor(strbuf *sb, bool f64, uint64_t key, uint64_t numel, const uint64_t *size, const uint64_t *stride,
                     size_t rank)
{
    char k[24];
    snprintf(k, sizeof k, "%llu", (unsigned long long)key);
    ckpt_pw_global(sb, "torch._utils", "_rebuild_tensor_v2");
    ckpt_pw_op(sb, CKPT_OP_MARK);
    ckpt_pw_op(sb, CKPT_OP_MARK);
    ckpt_pw_str(sb, "storage");
    ckpt_pw_global(sb, "torch", f64 ? "DoubleStorage" : "FloatStorage");
    ckpt_pw_str(sb, k);
    ckpt_pw_str(sb, "cpu");
    ckpt_pw_uint(sb, numel);
    ckpt_pw_op(sb, CKPT_OP_TUPLE);
    ckpt_pw_op(sb, CKPT_OP_BINPERSID);
    ckpt_pw_uint(sb, 0);
    ckpt_pw_uint_tuple(sb, size, rank);
    ckpt_pw_uint_tuple(sb, stride, rank);
    ckpt_pw_bool(sb, false);
    ckpt_pw_global(sb, "collections", "OrderedDict");
    ckpt_pw_op(sb, CKPT_OP_EMPTY_TUPLE);
    ckpt_pw_op(sb, CKPT_OP_REDUCE);
    ckpt_pw_op(sb, CKPT_OP_TUPLE);
    ckpt_pw_op(sb, CKPT_OP_REDUCE);
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
    ckpt_pw_op(sb, CKPT_OP_EMPTY_DICT);
    ckpt_pw_op(sb, CKPT_OP_MARK);
    ckpt_pw_str(sb, "lr");
    ckpt_pw_float_bits(sb, ckpt_bits_from_double(lr));
    ckpt_pw_str(sb, "betas");
    ckpt_pw_float_bits(sb, c->beta1);
    ckpt_pw_float_bits(sb, c->beta2);
    ckpt_pw_op(sb, CKPT_OP_TUPLE2);
    ckpt_pw_str(sb, "eps");
    ckpt_pw_float_bits(sb, c->epsilon);
    ckpt_pw_str(sb, "weight_decay");
    ckpt_pw_float_bits(sb, c->weight_decay);
    ckpt_pw_str(sb, "amsgrad");
    ckpt_pw_bool(sb, false);
    /* the keys and order of torch's Adam and AdamW groups (torch 1.13) */
    if (adamw) {
        ckpt_pw_str(sb, "foreach");
        ckpt_pw_op(sb, CKPT_OP_NONE);
        ckpt_pw_str(sb, "maximize");
        ckpt_pw_bool(sb, false);
        ckpt_pw_str(sb, "capturable");
        ckpt_pw_bool(sb, false);
    } else {
        ckpt_pw_str(sb, "maximize");
        ckpt_pw_bool(sb, false);
        ckpt_pw_str(sb, "foreach");
        ckpt_pw_op(sb, CKPT_OP_NONE);
        ckpt_pw_str(sb, "capturable");
        ckpt_pw_bool(sb, false);
        ckpt_pw_str(sb, "differentiable");
        ckpt_pw_bool(sb, false);
        ckpt_pw_str(sb, "fused");
        ckpt_pw_bool(sb, false);
    }
    /* the kind, as torch's Adam names it (decoupled: AdamW): readers of the file (ckptscope's
     * own, format.md 10.3) tell Adam from AdamW by it; torch 1.13 keeps it unused */
    ckpt_pw_str(sb, "decoupled_weight_decay");
    ckpt_pw_bool(sb, adamw);
    ckpt_pw_str(sb, "params");
    ckpt_pw_op(sb, CKPT_OP_EMPTY_LIST);
    if (params) {
        ckpt_pw_op(sb, CKPT_OP_MARK);
        for (size_t k = 0; k < params; k++) ckpt_pw_uint(sb, k);
        ckpt_pw_op(sb, CKPT_OP_APPENDS);
    }
    ckpt_pw_op(sb, CKPT_OP_SETITEMS);
}

static int plan_pickle(plan *p, double lr, ckpt_error *err)
{
    const ckpt_schema *s = p->rep->schema;
    bool f64 = p->rep->dtype == CKPT_FLOAT64;
    strbuf *sb = &p->pickle;
    ckpt_pw_proto(sb, 2);
    ckpt_pw_op(sb, CKPT_OP_EMPTY_DICT);
    ckpt_pw_op(sb, CKPT_OP_MARK);
    ckpt_pw_str(sb, "state");
    ckpt_pw_op(sb, CKPT_OP_EMPTY_DICT);
    if (p->len) ckpt_pw_op(sb, CKPT_OP_MARK);
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
        ckpt_pw_uint(sb, k);
        ckpt_pw_op(sb, CKPT_OP_EMPTY_DICT);
        ckpt_pw_op(sb, CKPT_OP_MARK);
        ckpt_pw_str(sb, "step");
        p_tensor(sb, o->step >= F32_EXACT, 3 * k, 1, NULL, NULL, 0);
        ckpt_pw_str(sb, "exp_avg");
        p_tensor(sb, f64, 3 * k + 1, o->count, dims, stride, rank);
        ckpt_pw_str(sb, "exp_avg_sq");
        p_tensor(sb, f64, 3 * k + 2, o->count, dims, stride, rank);
        ckpt_pw_op(sb, CKPT_OP_SETITEMS);
        free(stride);
    }
    if (p->len) ckpt_pw_op(sb, CKPT_OP_SETITEMS);
    ckpt_pw_str(sb, "param_groups");
    ckpt_pw_op(sb, CKPT_OP_EMPTY_LIST);
    p_group(sb, &p->rep->config, lr, p->len);
    ckpt_pw_op(sb, CKPT_OP_APPEND); /* the one group */
    ckpt_pw_op(sb, CKPT_OP_SETITEMS);
    ckpt_pw_op(sb, CKPT_OP_STOP);
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

static int write_zip(const plan *p, const ckpt_file *in, const ckpt_torch_options *o, const ckpt_sink *out,
                     ckpt_error *err)
{
    const char *prefix = ckpt_pw_archive_prefix(o->prefix);
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
