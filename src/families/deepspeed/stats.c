/* Statistics of each trainable owner's state (format.md 11.3, 5): exp_avg, exp_avg_sq,
 * max_exp_avg_sq and the fp32 masters, each streamed fragment by fragment in rank order (the
 * order of the parameter's elements), never gathered into a buffer. */
#include "families/deepspeed/deepspeed.h"

#include <stdlib.h>

typedef struct acc_ctx {
    ckpt_stats_acc acc;
    int dtype;
    unsigned width;
    ckpt_scan *scan;
    uint64_t done; /* bytes of the scan so far */
    ckpt_error *err;
} acc_ctx;

static int on_chunk(void *ctx, const void *data, size_t elements)
{
    acc_ctx *c = ctx;
    ckpt_stats_dtype(&c->acc, c->dtype, data, elements);
    c->done += (uint64_t)elements * c->width;
    ckpt_scan *s = c->scan;
    if (s->progress && s->progress(s->progress_ctx, c->done, s->total))
        return ckpt_fail(c->err, NULL, CKPT_E_CANCELLED, CKPT_NONE, 0, "statistics scan cancelled");
    return 0;
}

int ds_stats(ckpt_ds *ds, ckpt_report *rep, ckpt_scan *scan, ckpt_error *err)
{
    (void)rep;
    if (!ds->layout_ok) return 0;
    ckpt_reader *r = ckpt_reader_with_prefix(ds->src, DS_PREFIX);
    acc_ctx *c = malloc(sizeof *c); /* the histogram: 17 KB, not on a wasm stack */
    ds_frag_at *frags = malloc((size_t)(ds->W ? ds->W : 1) * sizeof *frags);
    if (!r || !c || !frags) {
        ckpt_reader_free(r);
        free(c);
        free(frags);
        return ckpt_fail_oom(err);
    }
    /* the bytes in all, for progress */
    uint64_t total = 0;
    for (size_t k = 0; k < ds->params_len; k++)
        for (int key = 0; key < DS_KEYS; key++) {
            size_t n = ckpt_ds_fragments(ds, k, key, frags);
            for (size_t j = 0; j < n; j++) total += frags[j].count * ckpt_dtype_width(frags[j].dtype);
        }
    scan->total = total;
    c->scan = scan;
    c->done = 0;
    c->err = err;
    int rc = 0;
    for (size_t k = 0; !rc && k < ds->params_len; k++) {
        ds_param *p = &ds->params[k];
        for (int key = 0; !rc && key < DS_KEYS; key++) {
            if (!ckpt_ds_has_key(ds, k, key)) continue;
            size_t n = ckpt_ds_fragments(ds, k, key, frags);
            bool one = ckpt_dtype_has_stats(frags[0].dtype);
            for (size_t j = 1; j < n; j++) one &= frags[j].dtype == frags[0].dtype;
            if (!one) continue; /* one dtype per key: a mixed one has no statistics */
            ckpt_stats_begin(&c->acc);
            c->dtype = frags[0].dtype;
            c->width = ckpt_dtype_width(c->dtype);
            for (size_t j = 0; !rc && j < n; j++) {
                r->pos = frags[j].at;
                rc = ckpt_stream_payload(r, frags[j].count, c->width, on_chunk, c, err);
            }
            if (!rc && !(p->stats[key] = ckpt_stats_finish(&c->acc))) rc = ckpt_fail_oom(err);
        }
    }
    ckpt_reader_free(r);
    free(c);
    free(frags);
    return rc;
}
