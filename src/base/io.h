/* The buffered reader, reads at an offset, and sinks (format.md 1; io.c). Private to src/. */
#ifndef CKPT_IO_H
#define CKPT_IO_H

#include "base/common.h"

/* ---- io.c: the buffered reader and u64 framing (format.md 1) ---- */
struct ckpt_reader {
    const ckpt_source *src;
    const char *prefix; /* the family's text prefix for truncation diagnostics */
    uint64_t pos;       /* absolute offset of the next byte */
    uint8_t *buf;       /* holds [buf_pos, buf_pos + buf_len) of the source */
    size_t buf_len, buf_cap;
    uint64_t buf_pos;
    size_t readahead;  /* next refill size: small after a skip, doubling when sequential */
    size_t growth_cap; /* the read-ahead's limit: the buffer in the schema, RUN_READAHEAD among payloads */
    bool run;          /* the last skip was a tiny payload: the reads go on as a run */
};
/* A reader whose truncation texts speak with prefix (a family's; NULL: the library's own). */
ckpt_reader *ckpt_reader_with_prefix(const ckpt_source *src, const char *prefix);
int ckpt_read_exact(ckpt_reader *r, void *dst, size_t n, ckpt_error *err);
/* Inline: every field of every record goes through it (a call per field was 5% of a parse). */
static inline uint64_t ckpt_get_u64le(const uint8_t *p)
{
    uint64_t v;
    memcpy(&v, p, 8); /* little-endian hosts only (checked above) */
    return v;
}
/* A u64 field: inline when the buffer holds it (a million-slot schema reads millions). */
static inline int ckpt_read_u64(ckpt_reader *r, uint64_t *out, ckpt_error *err)
{
    if (r->pos >= r->buf_pos && r->pos - r->buf_pos + 8 <= r->buf_len) {
        *out = ckpt_get_u64le(r->buf + (r->pos - r->buf_pos));
        r->pos += 8;
        return 0;
    }
    uint8_t b[8];
    int rc = ckpt_read_exact(r, b, 8, err);
    if (!rc) *out = ckpt_get_u64le(b);
    return rc;
}
/* Skip a payload of count * width bytes (truncation reported as for a read of that size). */
int ckpt_skip_payload(ckpt_reader *r, uint64_t count, unsigned width, ckpt_error *err);
/* Stream a payload of count * width bytes through fn in whole elements. */
typedef int (*ckpt_chunk_fn)(void *ctx, const void *data, size_t elements);
int ckpt_stream_payload(ckpt_reader *r, uint64_t count, unsigned width, ckpt_chunk_fn fn, void *ctx, ckpt_error *err);
/* Bytes from the reader's position to the end of the source, CKPT_NONE when the size is unknown. */
uint64_t ckpt_reader_bytes_left(const ckpt_reader *r);
/* After the last record: is there at least one more byte? (-1 on I/O error) */
int ckpt_reader_has_more(ckpt_reader *r, ckpt_error *err);
/* The first bytes of the source when the reader still holds them (its first refill starts at
 * 0): for recognising foreign files without a second read, which a pipe could not serve. */
size_t ckpt_reader_head(const ckpt_reader *r, const uint8_t **head);
/* n bytes at offset of a source already parsed, all of them: a short read means the file changed
 * (CKPT_E_IO "could not read {what} at byte {n}"). */
int ckpt_read_at(const ckpt_source *src, uint64_t offset, void *buf, size_t n, const char *what, ckpt_error *err);
int ckpt_sink_u64(const ckpt_sink *out, uint64_t v, ckpt_error *err);
int ckpt_sink_bytes(const ckpt_sink *out, const void *p, size_t n, ckpt_error *err);
void ckpt_put_u64le(uint8_t *p, uint64_t v);

#endif
