/* A consolidated torch.save file as a source read on demand (torch_zip_virtual.h): the zip is
 * written once through a recording sink that keeps every byte but the storages' data, and notes
 * where each storage's data falls; a read then copies kept bytes or streams the storage's runs. */
#include "writers/torch_zip_virtual.h"

#include <stdlib.h>
#include <string.h>

/* The file's bytes but the storages' data are kept; a storage's data is read from its runs. */
typedef struct seg {
    uint64_t at, len; /* in the file */
    size_t storage;   /* SIZE_MAX: kept bytes, at `kept` */
    uint64_t kept;
} seg;

struct tz_virtual {
    tz_plan z;
    ckpt_reader *r;
    seg *segs;
    size_t segs_len, segs_cap;
    ckpt_buffer kept;
    ckpt_sink kept_sink;
    uint64_t size;
    size_t storage; /* while recording: the storage whose data flows, SIZE_MAX none */
    ckpt_source src;
};

static bool push_seg(tz_virtual *v, seg s)
{
    seg *last = v->segs_len ? &v->segs[v->segs_len - 1] : NULL;
    if (last && last->storage == s.storage && last->at + last->len == s.at) {
        last->len += s.len; /* one run on */
        return true;
    }
    if (v->segs_len == v->segs_cap) {
        size_t cap = v->segs_cap ? 2 * v->segs_cap : 64;
        seg *g = realloc(v->segs, cap * sizeof *g);
        if (!g) return false;
        v->segs = g, v->segs_cap = cap;
    }
    v->segs[v->segs_len++] = s;
    return true;
}

/* The recording sink: a storage's data counted, everything else kept. */
static int record(void *ctx, const void *buf, size_t n)
{
    tz_virtual *v = ctx;
    if (v->storage != SIZE_MAX) {
        if (!push_seg(v, (seg){v->size, n, v->storage, 0})) return -1;
    } else {
        uint64_t before = v->kept.len;
        if (v->kept_sink.write(v->kept_sink.ctx, buf, n) || !push_seg(v, (seg){v->size, n, SIZE_MAX, before}))
            return -1;
    }
    v->size += n;
    return 0;
}

static void mark_storage(void *ctx, size_t storage) { ((tz_virtual *)ctx)->storage = storage; }

/* Bytes [lo, hi) of a storage's data, copied to dst as they stream by. */
typedef struct cut {
    uint8_t *dst;
    uint64_t pos, lo, hi;
} cut;

static int copy_cut(void *ctx, const void *data, size_t n)
{
    cut *c = ctx;
    uint64_t a = c->pos > c->lo ? c->pos : c->lo, b = c->pos + n < c->hi ? c->pos + n : c->hi;
    if (a < b) memcpy(c->dst + (a - c->lo), (const uint8_t *)data + (a - c->pos), (size_t)(b - a));
    c->pos += n;
    return 0;
}

static size_t virtual_read(void *ctx, uint64_t offset, void *buf, size_t n)
{
    tz_virtual *v = ctx;
    uint8_t *out = buf;
    size_t done = 0;
    size_t lo = 0, hi = v->segs_len;
    while (hi - lo > 1) { /* the segment holding offset */
        size_t mid = lo + (hi - lo) / 2;
        if (v->segs[mid].at <= offset) lo = mid;
        else hi = mid;
    }
    for (size_t k = lo; k < v->segs_len && done < n; k++) {
        const seg *s = &v->segs[k];
        uint64_t at = offset + done;
        if (at < s->at || at >= s->at + s->len) continue;
        uint64_t skip = at - s->at;
        size_t take = (size_t)(s->len - skip < n - done ? s->len - skip : n - done);
        if (s->storage == SIZE_MAX) memcpy(out + done, v->kept.data + s->kept + skip, take);
        else {
            const tz_storage *st = &v->z.st[s->storage];
            unsigned w = ckpt_dtype_width(st->dtype);
            uint64_t first = skip / w, last = (skip + take + w - 1) / w;
            cut c = {out + done, first * w, skip, skip + take};
            ckpt_error e = {0};
            ckpt_error_clear(&e);
            tz_emit em = {copy_cut, &c, -1, &e};
            int rc = tz_storage_bytes(&v->z, v->r, s->storage, first, last - first, &em);
            ckpt_error_clear(&e);
            if (rc) return CKPT_READ_ERROR;
        }
        done += take;
    }
    return done;
}

void tz_virtual_free(tz_virtual *v)
{
    if (!v) return;
    tz_plan_free(&v->z);
    ckpt_reader_free(v->r);
    free(v->segs);
    ckpt_buffer_free(&v->kept);
    free(v);
}

tz_virtual *tz_virtual_new(tz_plan *p, const ckpt_source *src, const char *zip_prefix, ckpt_error *err)
{
    tz_virtual *v = calloc(1, sizeof *v);
    if (!v) {
        tz_plan_free(p);
        *p = (tz_plan){0};
        return ckpt_fail_oom(err), NULL;
    }
    v->z = *p;
    *p = (tz_plan){0};
    v->z.err = NULL; /* the plan is made: reads report through their own */
    v->storage = SIZE_MAX;
    ckpt_sink_buffer(&v->kept_sink, &v->kept);
    int rc = (v->r = ckpt_reader_with_prefix(src, v->z.prefix)) ? 0 : ckpt_fail_oom(err);
    ckpt_sink rec = {v, record};
    if (!rc) rc = tz_write_zip(&v->z, src, zip_prefix, NULL, NULL, &rec, mark_storage, v, err);
    if (rc) {
        if (!err || !err->code) ckpt_fail_oom(err);
        tz_virtual_free(v);
        return NULL;
    }
    v->src = (ckpt_source){v, virtual_read, v->size};
    return v;
}

const ckpt_source *tz_virtual_source(const tz_virtual *v) { return &v->src; }
