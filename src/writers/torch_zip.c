/* A torch.save zip built from a plan: storages whose bytes are runs of a source (torch_zip.h),
 * laid out as torch_write.c lays one out ({prefix}/data.pkl, byteorder, one {prefix}/data/{key}
 * per storage, version; data 64-byte aligned). */
#include "writers/torch_zip.h"
#include "containers/zip.h"
#include "containers/pickle_write.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void tz_plan_free(tz_plan *p)
{
    free(p->st);
    free(p->runs);
    sb_free(&p->pickle);
}

static const struct {
    int dtype;
    const char *cls;
} STORAGES[] = {
    {CKPT_FLOAT32, "FloatStorage"},     {CKPT_FLOAT64, "DoubleStorage"}, {CKPT_FLOAT16, "HalfStorage"},
    {CKPT_BFLOAT16, "BFloat16Storage"}, {CKPT_INT64, "LongStorage"},     {CKPT_INT32, "IntStorage"},
    {CKPT_INT16, "ShortStorage"},       {CKPT_INT8, "CharStorage"},      {CKPT_UINT8, "ByteStorage"},
    {CKPT_BOOL, "BoolStorage"},
};

const char *tz_class_of(int dtype)
{
    for (size_t k = 0; k < sizeof STORAGES / sizeof *STORAGES; k++)
        if (STORAGES[k].dtype == dtype) return STORAGES[k].cls;
    return NULL;
}

int tz_widened(int dtype) { return dtype == CKPT_FLOAT16 || dtype == CKPT_BFLOAT16 ? CKPT_FLOAT32 : dtype; }

size_t tz_new_storage(tz_plan *p, int dtype, uint64_t numel)
{
    uint64_t bytes;
    if (ckpt_mul_overflows(numel, ckpt_dtype_width(dtype), &bytes)) return SIZE_MAX;
    if (p->st_len == p->st_cap) {
        size_t cap = p->st_cap ? 2 * p->st_cap : 16;
        tz_storage *s = realloc(p->st, cap * sizeof *s);
        if (!s) return SIZE_MAX;
        p->st = s, p->st_cap = cap;
    }
    p->st[p->st_len] = (tz_storage){tz_class_of(dtype), dtype, numel, p->runs_len, 0, false, {0}, bytes};
    return p->st_len++;
}

int tz_add_run(tz_plan *p, size_t s, uint64_t at, uint64_t count, int dtype)
{
    if (!count) return 0;
    if (p->runs_len == p->runs_cap) {
        size_t cap = p->runs_cap ? 2 * p->runs_cap : 64;
        tz_run *r = realloc(p->runs, cap * sizeof *r);
        if (!r) return ckpt_fail_oom(p->err);
        p->runs = r, p->runs_cap = cap;
    }
    p->runs[p->runs_len++] = (tz_run){at, count, dtype};
    p->st[s].len++;
    return 0;
}

int tz_tensor(tz_plan *p, size_t key, const uint64_t *dims, size_t rank)
{
    strbuf *sb = &p->pickle;
    const tz_storage *s = &p->st[key];
    uint64_t stride[8], acc = 1;
    if (rank > 8)
        return ckpt_fail(p->err, p->prefix, CKPT_E_INVALID_ARGUMENT, CKPT_NONE, 0, "a tensor of more than 8 dims");
    for (size_t d = rank; d-- > 0;) {
        stride[d] = acc;
        acc *= dims[d] ? dims[d] : 1; /* bounded: the tensor's element count was checked */
    }
    char k[24];
    snprintf(k, sizeof k, "%zu", key);
    ckpt_pw_global(sb, "torch._utils", "_rebuild_tensor_v2");
    ckpt_pw_op(sb, CKPT_OP_MARK);
    ckpt_pw_op(sb, CKPT_OP_MARK);
    ckpt_pw_str(sb, "storage");
    ckpt_pw_global(sb, "torch", s->cls);
    ckpt_pw_str(sb, k);
    ckpt_pw_str(sb, "cpu");
    ckpt_pw_int(sb, (int64_t)s->numel);
    ckpt_pw_op(sb, CKPT_OP_TUPLE);
    ckpt_pw_op(sb, CKPT_OP_BINPERSID);
    ckpt_pw_int(sb, 0);
    ckpt_pw_uint_tuple(sb, dims, rank);
    ckpt_pw_uint_tuple(sb, stride, rank);
    ckpt_pw_op(sb, CKPT_OP_NEWFALSE);
    ckpt_pw_global(sb, "collections", "OrderedDict");
    ckpt_pw_op(sb, CKPT_OP_EMPTY_TUPLE);
    ckpt_pw_op(sb, CKPT_OP_REDUCE);
    ckpt_pw_op(sb, CKPT_OP_TUPLE);
    ckpt_pw_op(sb, CKPT_OP_REDUCE);
    return 0;
}

bool tz_value(strbuf *sb, const ckpt_pickle *pk, size_t k, int depth)
{
    const ckpt_pnode *n = ckpt_pickle_node(pk, k);
    if (!n || depth > 32) return false;
    switch (n->kind) {
        case CKPT_PK_NONE: ckpt_pw_op(sb, CKPT_OP_NONE); return true;
        case CKPT_PK_BOOL: ckpt_pw_op(sb, n->truth ? CKPT_OP_NEWTRUE : CKPT_OP_NEWFALSE); return true;
        case CKPT_PK_INT: ckpt_pw_int(sb, n->i); return true;
        case CKPT_PK_FLOAT: ckpt_pw_float(sb, n->f); return true;
        case CKPT_PK_BIGINT: {
            if ((n->flags & CKPT_PF_TEXT) || n->len > 255) return false;
            uint8_t b[2] = {CKPT_OP_LONG1, (uint8_t)n->len};
            sb_put(sb, (const char *)b, 2);
            sb_put(sb, (const char *)pk->data + n->at, n->len);
            return true;
        }
        case CKPT_PK_STR:
            if (n->flags & CKPT_PF_TEXT) return false;
            ckpt_pw_strn(sb, (const char *)pk->data + n->at, n->len);
            return true;
        case CKPT_PK_TUPLE:
        case CKPT_PK_LIST: {
            bool tuple = n->kind == CKPT_PK_TUPLE;
            if (tuple && n->count == 0) return ckpt_pw_op(sb, CKPT_OP_EMPTY_TUPLE), true;
            if (!tuple) ckpt_pw_op(sb, CKPT_OP_EMPTY_LIST);
            if (!tuple || n->count > 3) ckpt_pw_op(sb, CKPT_OP_MARK);
            for (uint32_t cell = n->first; cell != CKPT_PNIL; cell = pk->cells[cell].next)
                if (!tz_value(sb, pk, pk->cells[cell].node, depth + 1)) return false;
            if (tuple)
                ckpt_pw_op(sb, n->count == 1   ? CKPT_OP_TUPLE1
                               : n->count == 2 ? CKPT_OP_TUPLE2
                               : n->count == 3 ? CKPT_OP_TUPLE3
                                               : CKPT_OP_TUPLE);
            else ckpt_pw_op(sb, CKPT_OP_APPENDS);
            return true;
        }
        default: return false;
    }
}

/* ---- the storages' bytes ---- */

static int on_chunk(void *ctx, const void *data, size_t elements)
{
    tz_emit *e = ctx;
    if (e->widen < 0) return e->bytes(e->ctx, data, elements);
    const uint8_t *p = data;
    for (size_t k = 0; k < elements;) {
        size_t n = elements - k < 1024 ? elements - k : 1024;
        double wide[1024];
        float buf[1024];
        ckpt_dtype_widen(e->widen, p + 2 * k, n, wide);
        for (size_t j = 0; j < n; j++) buf[j] = (float)wide[j];
        TRY(e->bytes(e->ctx, buf, n * 4));
        k += n;
    }
    return 0;
}

int tz_storage_bytes(const tz_plan *p, ckpt_reader *r, size_t s, uint64_t from, uint64_t count, tz_emit *e)
{
    const tz_storage *st = &p->st[s];
    unsigned w = ckpt_dtype_width(st->dtype);
    if (st->literal) return e->bytes(e->ctx, st->lit + from * w, (size_t)(count * w));
    uint64_t at = 0;
    for (size_t k = st->runs; k < st->runs + st->len && count; k++) {
        const tz_run *ru = &p->runs[k];
        if (from >= at + ru->count) {
            at += ru->count;
            continue;
        }
        uint64_t skip = from - at, n = ru->count - skip < count ? ru->count - skip : count;
        unsigned sw = ckpt_dtype_width(ru->dtype);
        e->widen = ru->dtype != st->dtype ? ru->dtype : -1;
        r->pos = ru->at + skip * sw;
        /* copies stream bytes (width 1); widening streams elements */
        if (e->widen < 0) TRY(ckpt_stream_payload(r, n * sw, 1, on_chunk, e, e->err));
        else TRY(ckpt_stream_payload(r, n, sw, on_chunk, e, e->err));
        from += n, count -= n;
        at += ru->count;
    }
    return 0;
}

/* ---- the zip ---- */

typedef struct zip_out {
    ckpt_zip_writer *zw;
    ckpt_progress_fn progress;
    void *progress_ctx;
    uint64_t done;
    ckpt_error *err;
} zip_out;

static int to_zip(void *ctx, const void *data, size_t n)
{
    zip_out *z = ctx;
    TRY(ckpt_zip_write(z->zw, data, n));
    z->done += n;
    if (z->progress && z->progress(z->progress_ctx, z->done, CKPT_NONE))
        return ckpt_fail(z->err, NULL, CKPT_E_CANCELLED, CKPT_NONE, 0, "convert cancelled");
    return 0;
}

static int member(ckpt_zip_writer *zw, const char *prefix, const char *name, const void *data, size_t n)
{
    char path[128];
    snprintf(path, sizeof path, "%s/%s", prefix, name);
    TRY(ckpt_zip_begin(zw, path));
    TRY(ckpt_zip_write(zw, data, n));
    return ckpt_zip_end(zw);
}

int tz_write_zip(const tz_plan *p, const ckpt_source *src, const char *zip_prefix, ckpt_progress_fn progress,
                 void *progress_ctx, const ckpt_sink *out, tz_mark_fn mark, void *mark_ctx, ckpt_error *err)
{
    const char *prefix = ckpt_pw_archive_prefix(zip_prefix);
    ckpt_zip_writer zw;
    ckpt_zip_writer_init(&zw, out, err);
    zw.align = 64;
    ckpt_reader *r = ckpt_reader_with_prefix(src, p->prefix);
    if (!r) {
        ckpt_zip_writer_free(&zw);
        return ckpt_fail_oom(err);
    }
    zip_out z = {&zw, progress, progress_ctx, 0, err};
    tz_emit e = {to_zip, &z, -1, err};
    int rc = member(&zw, prefix, "data.pkl", p->pickle.data, p->pickle.len);
    if (!rc) rc = member(&zw, prefix, "byteorder", "little", 6);
    for (size_t s = 0; s < p->st_len && !rc; s++) {
        char name[160];
        snprintf(name, sizeof name, "%s/data/%zu", prefix, s);
        rc = ckpt_zip_begin(&zw, name);
        if (!rc && mark) mark(mark_ctx, s);
        if (!rc) rc = tz_storage_bytes(p, r, s, 0, p->st[s].numel, &e);
        if (mark) mark(mark_ctx, SIZE_MAX);
        if (!rc) rc = ckpt_zip_end(&zw);
    }
    if (!rc) rc = member(&zw, prefix, "version", "3\n", 2);
    if (!rc) rc = ckpt_zip_finish(&zw);
    ckpt_reader_free(r);
    ckpt_zip_writer_free(&zw);
    return rc;
}
