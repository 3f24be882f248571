/* Payloads read for statistics: streamed through the kernel of stats.c in whole elements, with
 * progress reported relative to the scan (bytes of this scan, not file offsets), so a caller
 * never needs to know where payloads sit to draw a progress bar. */
#include "numeric/numeric.h"

#include <stdlib.h>

typedef struct chunk_ctx {
    ckpt_scan *scan;
    ckpt_stats_acc acc;
    int dtype;
    unsigned width;
    uint64_t at; /* file offset reached */
    ckpt_error *err;
} chunk_ctx;

static int on_chunk(void *ctx, const void *data, size_t elements)
{
    chunk_ctx *c = ctx;
    ckpt_stats_dtype(&c->acc, c->dtype, data, elements);
    c->at += (uint64_t)elements * c->width;
    ckpt_scan *s = c->scan;
    if (s->progress && s->progress(s->progress_ctx, c->at - s->start, s->total))
        return ckpt_fail(c->err, NULL, CKPT_E_CANCELLED, c->at, 0, "statistics scan cancelled");
    return 0;
}

int ckpt_scan_payload(ckpt_reader *r, ckpt_scan *scan, uint64_t count, unsigned width, ckpt_stats **out,
                      ckpt_error *err)
{
    return ckpt_scan_payload_dtype(r, scan, count, width == 8 ? CKPT_FLOAT64 : CKPT_FLOAT32, out, err);
}

int ckpt_scan_payload_dtype(ckpt_reader *r, ckpt_scan *scan, uint64_t count, int dtype, ckpt_stats **out,
                            ckpt_error *err)
{
    const unsigned width = ckpt_dtype_width(dtype);
    *out = NULL;
    chunk_ctx *c = malloc(sizeof *c); /* the histogram makes it 17 KB: not on a wasm stack */
    if (!c) return ckpt_fail_oom(err);
    c->scan = scan;
    c->dtype = dtype;
    c->width = width;
    c->at = r->pos;
    c->err = err;
    ckpt_stats_begin(&c->acc);
    int rc = ckpt_stream_payload(r, count, width, on_chunk, c, err);
    if (!rc && !(*out = ckpt_stats_finish(&c->acc))) rc = ckpt_fail_oom(err);
    free(c);
    return rc;
}

typedef struct spans_ctx {
    ckpt_scan *scan;
    ckpt_stats_acc acc;
    int dtype;
    unsigned width;
    ckpt_error *err;
} spans_ctx;

static int on_span_chunk(void *ctx, const void *data, size_t elements)
{
    spans_ctx *c = ctx;
    ckpt_stats_dtype(&c->acc, c->dtype, data, elements);
    ckpt_scan *s = c->scan;
    s->done += (uint64_t)elements * c->width;
    if (s->progress && s->progress(s->progress_ctx, s->done, s->total))
        return ckpt_fail(c->err, NULL, CKPT_E_CANCELLED, CKPT_NONE, 0, "statistics scan cancelled");
    return 0;
}

int ckpt_scan_spans(ckpt_reader *r, ckpt_scan *scan, const ckpt_span *spans, size_t n, int dtype, ckpt_stats **out,
                    ckpt_error *err)
{
    *out = NULL;
    spans_ctx *c = malloc(sizeof *c); /* the histogram makes it 17 KB: not on a wasm stack */
    if (!c) return ckpt_fail_oom(err);
    c->scan = scan;
    c->dtype = dtype;
    c->width = ckpt_dtype_width(dtype);
    c->err = err;
    ckpt_stats_begin(&c->acc);
    int rc = 0;
    for (size_t j = 0; j < n && !rc; j++) {
        r->pos = spans[j].offset;
        rc = ckpt_stream_payload(r, spans[j].count, c->width, on_span_chunk, c, err);
    }
    if (!rc && !(*out = ckpt_stats_finish(&c->acc))) rc = ckpt_fail_oom(err);
    free(c);
    return rc;
}
