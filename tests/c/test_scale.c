/* The Llama-7B-like layout (docs/performance.md "Big files", tests/js/llama.mjs) through a counting source:
 * a virtual file of its headers and, between them, payloads of zeros that are never stored
 * (54 GB costs nothing). Opening reads the headers only (64 KiB + 64 bytes per slot and entry);
 * statistics read every payload byte exactly once (a 1/64 scale file, counted byte by byte). */
#include "testutil.h"

#include <stdint.h>

#define LAYERS 32
#define MAX_SEGMENTS 1024

typedef struct segment {
    uint64_t start, len;
    bool payload; /* zeros; else header bytes at heads + head_at */
    size_t head_at;
} segment;

typedef struct vfile {
    segment seg[MAX_SEGMENTS];
    size_t nseg;
    uint8_t *heads; /* every header's bytes, back to back */
    size_t heads_len, heads_cap, heads_done;
    uint64_t size;
    size_t slots, records;
    uint64_t first_payload;               /* where the first payload starts */
    uint64_t bytes, reads, payload_bytes; /* what was read */
    uint64_t late_big_reads;              /* reads past the first payload longer than a record header */
    uint8_t *times;                       /* reads of each byte, when counted byte by byte (small files) */
} vfile;

static void put(vfile *f, uint64_t v)
{
    if (f->heads_len + 8 > f->heads_cap) {
        f->heads_cap = f->heads_cap ? 2 * f->heads_cap : 4096;
        f->heads = realloc(f->heads, f->heads_cap);
    }
    for (int k = 0; k < 8; k++) f->heads[f->heads_len++] = (uint8_t)(v >> (8 * k));
}

/* The magic: one u64 put, then its last byte dropped (7 bytes). */
static void put_magic(vfile *f, const char *magic)
{
    uint64_t v = 0;
    for (int k = 0; k < 7; k++) v |= (uint64_t)(uint8_t)magic[k] << (8 * k);
    put(f, v);
    f->heads_len--;
}

/* The header bytes put since the last call become a segment, then a payload of zeros. */
static void header_then_payload(vfile *f, uint64_t payload)
{
    size_t len = f->heads_len - f->heads_done;
    f->seg[f->nseg++] = (segment){f->size, len, false, f->heads_done};
    f->size += len;
    f->heads_done = f->heads_len;
    if (payload) {
        if (!f->first_payload) f->first_payload = f->size;
        f->seg[f->nseg++] = (segment){f->size, payload, true, 0};
        f->size += payload;
    }
}

static size_t counting_read(void *ctx, uint64_t offset, void *buf, size_t n)
{
    vfile *f = ctx;
    if (offset >= f->size) return 0;
    if (n > f->size - offset) n = (size_t)(f->size - offset);
    f->reads++;
    f->bytes += n;
    if (offset > f->first_payload && n > 32) f->late_big_reads++;
    uint8_t *out = buf;
    size_t lo = 0, hi = f->nseg; /* the segment holding offset */
    while (hi - lo > 1) {
        size_t mid = (lo + hi) / 2;
        if (f->seg[mid].start <= offset) lo = mid;
        else hi = mid;
    }
    for (size_t done = 0, k = lo; done < n; k++) {
        const segment *s = &f->seg[k];
        uint64_t at = offset + done - s->start;
        size_t take = s->len - at < n - done ? (size_t)(s->len - at) : n - done;
        if (s->payload) {
            memset(out + done, 0, take);
            f->payload_bytes += take;
        } else {
            memcpy(out + done, f->heads + s->head_at + at, take);
        }
        done += take;
    }
    if (f->times)
        for (size_t k = 0; k < n; k++) f->times[offset + k]++;
    return n;
}

typedef struct shape {
    uint64_t rank, dims[2];
} shape;

static size_t llama_shapes(shape *out, uint64_t scale)
{
#define D(x) (((x) + scale - 1) / scale)
    size_t n = 0;
    out[n++] = (shape){2, {D(32000), D(4096)}};
    for (int l = 0; l < LAYERS; l++) {
        for (int k = 0; k < 4; k++) out[n++] = (shape){2, {D(4096), D(4096)}};
        out[n++] = (shape){2, {D(11008), D(4096)}};
        out[n++] = (shape){2, {D(11008), D(4096)}};
        out[n++] = (shape){2, {D(4096), D(11008)}};
        out[n++] = (shape){1, {D(4096), 0}};
        out[n++] = (shape){1, {D(4096), 0}};
    }
    out[n++] = (shape){1, {D(4096), 0}};
    out[n++] = (shape){2, {D(32000), D(4096)}};
    return n;
#undef D
}

static uint64_t count_of(const shape *s) { return s->rank == 1 ? s->dims[0] : s->dims[0] * s->dims[1]; }

/* The optimizer file (v2, or v3 with lm_head tied to the embedding) or the TLSF32B state file. */
static vfile *llama(bool state, bool tied, uint64_t scale)
{
    vfile *f = calloc(1, sizeof *f);
    shape s[300];
    size_t n = llama_shapes(s, scale);
    f->slots = n;
    if (state) {
        put_magic(f, "TLSF32B");
        put(f, 1);
        put(f, n);
        for (size_t i = 0; i < n; i++) {
            put(f, s[i].rank);
            for (uint64_t k = 0; k < s[i].rank; k++) put(f, s[i].dims[k]);
            put(f, count_of(&s[i]));
            header_then_payload(f, 4 * count_of(&s[i]));
        }
        f->records = n;
        return f;
    }
    put_magic(f, "TLADAMF");
    put(f, tied ? 3 : 2);
    put(f, 1);                     /* AdamW */
    put(f, 0x3FECCCCCCCCCCCCDull); /* 0.9 */
    put(f, 0x3FEE666666666666ull); /* 0.95 */
    put(f, 0x3E45798EE2308C3Aull); /* 1e-8 */
    put(f, 0x3FB999999999999Aull); /* 0.1 */
    put(f, n);
    for (size_t i = 0; i < n; i++) {
        put(f, s[i].rank);
        for (uint64_t k = 0; k < s[i].rank; k++) put(f, s[i].dims[k]);
        put(f, count_of(&s[i]));
        put(f, 1);
    }
    if (tied)
        for (size_t i = 0; i < n; i++) put(f, i == n - 1 ? 1 : i + 1);
    f->records = tied ? n - 1 : n;
    put(f, f->records);
    for (size_t i = 0; i < f->records; i++) {
        put(f, i);
        put(f, 1000);
        put(f, count_of(&s[i]));
        header_then_payload(f, 8 * count_of(&s[i]));
    }
    return f;
}

static void vfile_free(vfile *f)
{
    free(f->heads);
    free(f->times);
    free(f);
}

static uint64_t bound(const vfile *f) { return 65536 + 64 * (uint64_t)(f->slots + f->records); }

static void check_open(bool state, bool tied)
{
    vfile *f = llama(state, tied, 1);
    ckpt_source src = {f, counting_read, f->size};
    ckpt_report *rep = ckpt_inspect(&src, NULL);
    CHECK(rep && rep->error.code == 0);
    CHECK(rep && ckpt_schema_count(rep->schema) == 291);
    CHECK(rep && (state ? rep->tensors_len : rep->entries_len) == f->records);
    CHECK(f->size > (state ? 26000000000ull : 52000000000ull));
    CHECK(f->bytes <= bound(f));
    CHECK(f->reads <= f->records + 8);
    /* the schema's last read-ahead may run into the first payload; after it, every read is a
     * record header's size (32 bytes: an entry's 24 and 8 bytes of its payload at most) */
    CHECK(f->late_big_reads == 0);
    CHECK(f->payload_bytes <= 16384 + 8 * f->records);
    printf("  %s: %llu bytes in %llu reads (%llu of them payload bytes), bound %llu\n",
           state  ? "state"
           : tied ? "optimizer, tied"
                  : "optimizer",
           (unsigned long long)f->bytes, (unsigned long long)f->reads, (unsigned long long)f->payload_bytes,
           (unsigned long long)bound(f));
    ckpt_report_free(rep);
    vfile_free(f);
}

static void test_open_optimizer(void) { check_open(false, false); }
static void test_open_tied(void) { check_open(false, true); }
static void test_open_state(void) { check_open(true, false); }

/* Every payload byte read once by statistics; header bytes within the opening bound. */
static void check_stats_once(bool state)
{
    vfile *f = llama(state, !state, 64);
    f->times = calloc(f->size, 1);
    ckpt_source src = {f, counting_read, f->size};
    ckpt_inspect_options opt = {CKPT_INSPECT_STATS, NULL, NULL};
    ckpt_report *rep = ckpt_inspect(&src, &opt);
    CHECK(rep && rep->error.code == 0 && rep->statistics);
    uint64_t once = 0, other = 0, header_reads = 0;
    for (size_t k = 0; k < f->nseg; k++) {
        const segment *s = &f->seg[k];
        for (uint64_t b = s->start; b < s->start + s->len; b++) {
            if (!s->payload) header_reads += f->times[b];
            else if (f->times[b] == 1) once++;
            else other++;
        }
    }
    CHECK(other == 0);
    CHECK(once > 0);
    CHECK(header_reads <= bound(f));
    ckpt_report_free(rep);
    vfile_free(f);
}

static void test_stats_once_optimizer(void) { check_stats_once(false); }
static void test_stats_once_state(void) { check_stats_once(true); }

int main(void)
{
    test_case cases[] = {
        {"opening the 7B-like optimizer file reads its headers only", test_open_optimizer},
        {"opening the tied 7B-like optimizer file reads its headers only", test_open_tied},
        {"opening the 7B-like state file reads its headers only", test_open_state},
        {"statistics read every payload byte of an optimizer file once", test_stats_once_optimizer},
        {"statistics read every payload byte of a state file once", test_stats_once_state},
    };
    return RUN_ALL(cases);
}
