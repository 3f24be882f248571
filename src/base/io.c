/* Handles and framing (format.md 1): a buffered reader over a caller's source, exact reads
 * with the reference truncation text, u64 little-endian fields, payload skipping and
 * streaming, and the writer's sinks. */
#include "base/io.h"
#include "base/error.h"
#include "base/shape.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define HEADER_BUFFER (1024 * 1024) /* sequential reads grow to this; each source read is a call into JS in wasm */
#define STREAM_CHUNK (1024 * 1024)
#define FIRST_READAHEAD 4096 /* the preamble and the start of the schema */
/* After a payload is skipped by position the next record is a header alone in a sea of skipped
 * bytes: read its size (an entry's 24 bytes, a rank-2 tensor's 32), not into the payload behind
 * it. A longer header costs one more read, of twice that. */
#define COLD_READAHEAD 32
/* A payload of at most this many bytes past the buffered ones (a slot of up to 5 float32
 * elements: m and v) is a record in a run of tiny ones: the reads go on growing through them
 * (one read per 64 KiB of records, not a read per record: 500,000 of them for a million tiny
 * slots), each record costing its header and these few payload bytes. */
#define TINY_PAYLOAD 40
#define RUN_READAHEAD (64 * 1024)

void ckpt_put_u64le(uint8_t *p, uint64_t v)
{
    for (int k = 0; k < 8; k++) p[k] = (uint8_t)(v >> (8 * k));
}

/* ---- sources ---- */

static size_t memory_read(void *ctx, uint64_t offset, void *buf, size_t n)
{
    const ckpt_memory *m = ctx;
    if (offset >= m->len) return 0;
    size_t avail = m->len - (size_t)offset;
    if (n > avail) n = avail;
    memcpy(buf, m->data + offset, n);
    return n;
}

void ckpt_source_memory(ckpt_source *src, ckpt_memory *mem, const void *data, size_t len)
{
    mem->data = data;
    mem->len = len;
    src->ctx = mem;
    src->read = memory_read;
    src->size = len;
}

/* ---- sinks ---- */

static int buffer_write(void *ctx, const void *p, size_t n)
{
    ckpt_buffer *b = ctx;
    if (n > SIZE_MAX - b->len) return -1;
    if (b->len + n > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->len + n) cap = cap > SIZE_MAX / 2 ? b->len + n : cap * 2;
        uint8_t *q = realloc(b->data, cap);
        if (!q) return -1;
        b->data = q;
        b->cap = cap;
    }
    if (n) memcpy(b->data + b->len, p, n);
    b->len += n;
    return 0;
}

void ckpt_sink_buffer(ckpt_sink *sink, ckpt_buffer *buf)
{
    memset(buf, 0, sizeof *buf);
    sink->ctx = buf;
    sink->write = buffer_write;
}

void ckpt_buffer_free(ckpt_buffer *buf)
{
    if (!buf) return;
    free(buf->data);
    memset(buf, 0, sizeof *buf);
}

int ckpt_sink_bytes(const ckpt_sink *out, const void *p, size_t n, ckpt_error *err)
{
    if (out->write(out->ctx, p, n) != 0)
        return ckpt_fail(err, NULL, CKPT_E_IO, CKPT_NONE, 0, "could not write the output");
    return 0;
}

int ckpt_sink_u64(const ckpt_sink *out, uint64_t v, ckpt_error *err)
{
    uint8_t b[8];
    ckpt_put_u64le(b, v);
    return ckpt_sink_bytes(out, b, 8, err);
}

/* ---- the reader ---- */

ckpt_reader *ckpt_reader_with_prefix(const ckpt_source *src, const char *prefix)
{
    ckpt_reader *r = calloc(1, sizeof *r);
    if (!r) return NULL;
    r->buf = malloc(HEADER_BUFFER);
    if (!r->buf) {
        free(r);
        return NULL;
    }
    r->src = src;
    r->prefix = prefix;
    r->buf_cap = HEADER_BUFFER;
    r->readahead = FIRST_READAHEAD;
    r->growth_cap = HEADER_BUFFER;
    return r;
}

void ckpt_reader_free(ckpt_reader *r)
{
    if (!r) return;
    free(r->buf);
    free(r);
}

uint64_t ckpt_reader_offset(const ckpt_reader *r) { return r->pos; }

static size_t buffered(const ckpt_reader *r)
{
    if (r->pos < r->buf_pos || r->pos - r->buf_pos >= r->buf_len) return 0;
    return (size_t)(r->buf_pos + r->buf_len - r->pos);
}

/* The library's own text: no family prefix. */
static int io_error(ckpt_error *err, uint64_t offset)
{
    return ckpt_fail(err, NULL, CKPT_E_IO, offset, 0, "could not read the source at byte %llu",
                     (unsigned long long)offset);
}

/* The field is the `got` bytes that are there: a hex view marks them up to the end. */
/* The truncation as a hint for people: how many bytes short, at least (what follows the cut
 * field is missing too). The fact is the core's; no caller computes it. */
static void truncation_hint(ckpt_error *err, uint64_t short_by)
{
    char text[128];
    snprintf(text, sizeof text, "the file ends at least %llu byte%s early: an incomplete copy or download?",
             (unsigned long long)short_by, short_by == 1 ? "" : "s");
    ckpt_set_hint(err, text);
}

static int truncated(const ckpt_reader *r, ckpt_error *err, uint64_t offset, uint64_t wanted, uint64_t got)
{
    ckpt_fail(err, r->prefix, CKPT_E_TRUNCATED, offset, got, "truncated checkpoint (wanted %llu bytes, got %llu)",
              (unsigned long long)wanted, (unsigned long long)got);
    if (err && err->code == CKPT_E_TRUNCATED && wanted > got) truncation_hint(err, wanted - got);
    return CKPT_E_TRUNCATED;
}

/* A payload's truncation: its byte length in full decimal, even past 2^64. */
static int truncated_payload(const ckpt_reader *r, ckpt_error *err, uint64_t offset, uint64_t count, unsigned width,
                             uint64_t got)
{
    strbuf sb = {0};
    ckpt_u64_product_print(&sb, count, width);
    if (sb.failed) ckpt_fail_oom(err);
    else {
        ckpt_fail(err, r->prefix, CKPT_E_TRUNCATED, offset, got, "truncated checkpoint (wanted %s bytes, got %llu)",
                  sb.data, (unsigned long long)got);
        if (count <= UINT64_MAX / width && count * width > got) truncation_hint(err, count * width - got);
    }
    sb_free(&sb);
    return err->code;
}

/* Refill the buffer at pos with at least `need` bytes if the source has them; returns the
 * bytes now buffered (fewer than need only at the end of data), or CKPT_READ_ERROR. */
static size_t refill(ckpt_reader *r, size_t need)
{
    size_t want = r->readahead > need ? r->readahead : need;
    if (want > r->buf_cap) want = r->buf_cap;
    if (r->src->size != CKPT_NONE) {
        uint64_t left = r->pos < r->src->size ? r->src->size - r->pos : 0;
        if (want > left) want = left > need ? (size_t)left : need;
    }
    /* The read-ahead grows only while the reads follow each other (a schema, a run of records
     * with small payloads): reads that follow a skip stay the size of a header. */
    bool sequential = r->buf_len && (r->pos == r->buf_pos + r->buf_len || r->run);
    r->run = false;
    r->buf_pos = r->pos;
    r->buf_len = 0;
    size_t got = want ? r->src->read(r->src->ctx, r->pos, r->buf, want) : 0;
    if (got == CKPT_READ_ERROR || got > want) return CKPT_READ_ERROR;
    r->buf_len = got;
    if (sequential && r->readahead < r->growth_cap) r->readahead *= 2;
    return got;
}

int ckpt_read_exact(ckpt_reader *r, void *dst, size_t n, ckpt_error *err)
{
    uint64_t start = r->pos;
    uint8_t *out = dst;
    size_t done = 0;
    while (done < n) {
        size_t avail = buffered(r);
        if (avail == 0) {
            size_t need = n - done;
            if (need >= r->buf_cap) { /* a big read goes straight to the caller */
                size_t got = r->src->read(r->src->ctx, r->pos, out + done, need);
                if (got == CKPT_READ_ERROR || got > need) return io_error(err, r->pos);
                done += got;
                r->pos += got;
                if (got < need) return truncated(r, err, start, n, done);
                continue;
            }
            avail = refill(r, need);
            if (avail == CKPT_READ_ERROR) return io_error(err, r->pos);
            if (avail == 0) return truncated(r, err, start, n, done);
        }
        size_t take = avail < n - done ? avail : n - done;
        memcpy(out + done, r->buf + (r->pos - r->buf_pos), take);
        done += take;
        r->pos += take;
    }
    return 0;
}

int ckpt_skip_payload(ckpt_reader *r, uint64_t count, unsigned width, ckpt_error *err)
{
    uint64_t start = r->pos, bytes;
    bool too_big = ckpt_mul_overflows(count, width, &bytes);
    if (r->src->size != CKPT_NONE) {
        uint64_t left = r->pos < r->src->size ? r->src->size - r->pos : 0;
        if (too_big || bytes > left) {
            r->pos += left;
            return truncated_payload(r, err, start, count, width, left);
        }
        r->pos += bytes;
        /* Skipped by position, never read. A payload that ends past the buffered bytes puts the
         * next header alone: read it small. One that ends inside them was read already (the
         * read-ahead of a run of small records), and the run may go on. */
        uint64_t end = r->buf_pos + r->buf_len;
        r->growth_cap = RUN_READAHEAD;
        if (r->pos > end) {
            r->run = r->pos - end <= TINY_PAYLOAD;
            if (!r->run) r->readahead = COLD_READAHEAD;
            else if (r->readahead > RUN_READAHEAD) r->readahead = RUN_READAHEAD;
        }
        return 0;
    }
    /* Unknown size: the bytes must be read to be skipped. */
    uint64_t left = too_big ? UINT64_MAX : bytes, done = 0;
    while (done < left || too_big) {
        size_t avail = buffered(r);
        if (!avail) {
            avail = refill(r, 1);
            if (avail == CKPT_READ_ERROR) return io_error(err, r->pos);
            if (!avail) break;
        }
        uint64_t take = left - done < avail ? left - done : avail;
        r->pos += take;
        done += take;
    }
    if (too_big || done < bytes) return truncated_payload(r, err, start, count, width, done);
    return 0;
}

int ckpt_stream_payload(ckpt_reader *r, uint64_t count, unsigned width, ckpt_chunk_fn fn, void *ctx, ckpt_error *err)
{
    uint64_t start = r->pos, bytes;
    if (ckpt_mul_overflows(count, width, &bytes) ||
        (r->src->size != CKPT_NONE && (r->pos > r->src->size || bytes > r->src->size - r->pos)))
        return ckpt_skip_payload(r, count, width, err); /* reports the truncation */
    if (buffered(r) >= bytes) {                         /* small payloads: straight from the header buffer */
        int rc = fn(ctx, r->buf + (r->pos - r->buf_pos), (size_t)count);
        r->pos += bytes;
        return rc;
    }
    uint8_t *chunk = malloc(STREAM_CHUNK);
    if (!chunk) return ckpt_fail_oom(err);
    uint64_t done = 0;
    int rc = 0;
    while (done < bytes) {
        size_t want = bytes - done < STREAM_CHUNK ? (size_t)(bytes - done) : STREAM_CHUNK;
        /* What the buffer holds first: a pipe cannot be asked for those bytes again. */
        size_t have = buffered(r);
        if (have > want) have = want;
        if (have) memcpy(chunk, r->buf + (r->pos - r->buf_pos), have);
        r->pos += have;
        if (have < want) {
            size_t got = r->src->read(r->src->ctx, r->pos, chunk + have, want - have);
            if (got == CKPT_READ_ERROR || got > want - have) {
                rc = io_error(err, r->pos);
                break;
            }
            r->pos += got;
            have += got;
        }
        size_t whole = have / width;
        if (whole && (rc = fn(ctx, chunk, whole)) != 0) break;
        done += (uint64_t)whole * width;
        if (have < want) { /* the data ended inside the payload */
            rc = truncated(r, err, start, bytes, done + have % width);
            break;
        }
    }
    free(chunk);
    if (!rc) r->readahead = COLD_READAHEAD;
    return rc;
}

uint64_t ckpt_reader_bytes_left(const ckpt_reader *r)
{
    if (r->src->size == CKPT_NONE) return CKPT_NONE;
    return r->pos < r->src->size ? r->src->size - r->pos : 0;
}

int ckpt_reader_has_more(ckpt_reader *r, ckpt_error *err)
{
    if (buffered(r)) return 1;
    if (r->src->size != CKPT_NONE) return r->pos < r->src->size;
    size_t got = refill(r, 1);
    if (got == CKPT_READ_ERROR) return io_error(err, r->pos), -1;
    return got > 0;
}

size_t ckpt_reader_head(const ckpt_reader *r, const uint8_t **head)
{
    *head = r->buf;
    if (r->buf_pos != 0) return 0;
    return r->buf_len < 64 ? r->buf_len : 64;
}

int ckpt_read_at(const ckpt_source *src, uint64_t offset, void *buf, size_t n, const char *what, ckpt_error *err)
{
    size_t got = src->read(src->ctx, offset, buf, n);
    if (got == CKPT_READ_ERROR || got != n)
        return ckpt_fail(err, NULL, CKPT_E_IO, offset, 0, "could not read %s at byte %llu", what,
                         (unsigned long long)offset);
    return 0;
}
