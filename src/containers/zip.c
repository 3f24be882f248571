/* The zip layer (zip.h): the central directory and ZIP64 read through a source, members as
 * windowed sources; the writer of stored members (.npz export). APPNOTE.TXT 4.3 is the format:
 *   local header  PK\3\4 (30 bytes + name + extra), the data, a data descriptor (bit 3)
 *   central entry PK\1\2 (46 bytes + name + extra + comment)
 *   ZIP64 end     PK\6\6 (56 bytes and more), its locator PK\6\7 (20 bytes)
 *   end record    PK\5\6 (22 bytes + comment), the last thing in the file. */
#include "containers/zip.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SIG_LOCAL 0x04034b50u
#define SIG_CENTRAL 0x02014b50u
#define SIG_END 0x06054b50u
#define SIG_END64 0x06064b50u
#define SIG_LOCATOR 0x07064b50u
#define SIG_DESCRIPTOR 0x08074b50u
#define END_LEN 22
#define END64_LEN 56
#define LOCATOR_LEN 20
#define CENTRAL_LEN 46
#define LOCAL_LEN 30
#define MAX_COMMENT 65535
#define U32_MAX 0xffffffffu
#define U16_MAX 0xffffu

static unsigned get16(const uint8_t *p) { return (unsigned)p[0] | (unsigned)p[1] << 8; }
static uint32_t get32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static void put16(uint8_t *p, unsigned v) { p[0] = (uint8_t)v, p[1] = (uint8_t)(v >> 8); }
static void put32(uint8_t *p, uint32_t v)
{
    for (int k = 0; k < 4; k++) p[k] = (uint8_t)(v >> (8 * k));
}

/* ---- texts ---- */

/* "zip: malformed archive at byte {n}: {reason}" */
static int malformed_text(ckpt_error *err, uint64_t at, uint64_t length, const char *reason)
{
    return ckpt_fail(err, "zip", CKPT_E_ZIP_MALFORMED, at, length, "malformed archive at byte %llu: %s",
                     (unsigned long long)at, reason);
}

static int malformed(ckpt_error *err, uint64_t at, uint64_t length, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;
static int malformed(ckpt_error *err, uint64_t at, uint64_t length, const char *fmt, ...)
{
    char reason[256]; /* numbers only: the names go through member_fail */
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(reason, sizeof reason, fmt, ap);
    va_end(ap);
    return malformed_text(err, at, length, reason);
}

/* A text about a member: "member {name}{after}", the name a JSON string (names are bytes from
 * the file: quoted and escaped). */
static int member_fail(ckpt_error *err, int code, uint64_t at, uint64_t length, const ckpt_zip_member *m,
                       const char *after)
{
    strbuf sb = {0};
    sb_puts(&sb, "member ");
    j_string(&sb, m->name);
    sb_puts(&sb, after);
    if (sb.failed) {
        sb_free(&sb);
        return ckpt_fail_oom(err);
    }
    int rc = code == CKPT_E_ZIP_MALFORMED ? malformed_text(err, at, length, sb.data)
                                          : ckpt_fail(err, "zip", code, at, length, "%s", sb.data);
    sb_free(&sb);
    return rc;
}

/* ---- windows ---- */

static size_t window_read(void *ctx, uint64_t offset, void *buf, size_t n)
{
    const ckpt_window *w = ctx;
    if (offset >= w->length) return 0;
    if (n > w->length - offset) n = (size_t)(w->length - offset);
    return w->src->read(w->src->ctx, w->offset + offset, buf, n);
}

void ckpt_source_window(ckpt_source *out, ckpt_window *w, const ckpt_source *src, uint64_t offset, uint64_t length)
{
    w->src = src;
    w->offset = offset;
    w->length = length;
    out->ctx = w;
    out->read = window_read;
    out->size = length;
}

/* ---- the central directory ---- */

/* A cursor over the central directory: holds [pos, pos + len) of the file. */
#define CURSOR_CAP (256 * 1024) /* an entry is at most 46 + 3 * 65535 bytes */
typedef struct cursor {
    const ckpt_source *src;
    uint8_t *buf;
    uint64_t pos;
    size_t len;
    uint64_t end; /* the directory's end: nothing past it is read */
} cursor;

/* Make [at, at + n) held; n <= CURSOR_CAP and at + n <= c->end (the caller checked). */
static int cursor_need(cursor *c, uint64_t at, size_t n, ckpt_error *err)
{
    if (at >= c->pos && at + n <= c->pos + c->len) return 0;
    uint64_t want = c->end - at < CURSOR_CAP ? c->end - at : CURSOR_CAP;
    c->len = 0;
    TRY(ckpt_read_at(c->src, at, c->buf, (size_t)want, "the zip's central directory", err));
    c->pos = at;
    c->len = (size_t)want;
    (void)n;
    return 0;
}

static const uint8_t *cursor_at(const cursor *c, uint64_t at) { return c->buf + (at - c->pos); }

typedef struct end_record {
    uint64_t at;    /* absolute */
    uint64_t count; /* entries */
    uint64_t cd_size, cd_offset;
    bool zip64;
    uint64_t record64_at;
    uint64_t locator_target; /* the offset the ZIP64 locator states, CKPT_NONE without a locator */
    uint64_t last_signature; /* the last PK\5\6 with an end record's 22 bytes after it */
    uint64_t *earlier;       /* the other PK\5\6 signatures in the tail, before `at`, descending */
    size_t earlier_len;
    bool earlier_pending; /* the tail was not searched (the fixed-size end held the record) */
} end_record;

/* The signatures PK\5\6 of buf[0, below), descending, as absolute offsets (base: buf's). */
static int collect_earlier(const uint8_t *buf, size_t below, uint64_t base, end_record *e, ckpt_error *err)
{
    size_t sigs = 0;
    for (size_t k = below; k-- > 0;)
        if (get32(buf + k) == SIG_END) sigs++;
    if (!sigs) return 0;
    if (!(e->earlier = malloc(sigs * sizeof *e->earlier))) return ckpt_fail_oom(err);
    for (size_t k = below; k-- > 0;)
        if (get32(buf + k) == SIG_END) e->earlier[e->earlier_len++] = base + k;
    return 0;
}

/* The last END_LEN + MAX_COMMENT bytes of the file (all of it when shorter), malloc'd. */
static int read_tail(const ckpt_source *src, uint8_t **out, uint64_t *len, ckpt_error *err)
{
    uint64_t size = src->size, tail = size < END_LEN + MAX_COMMENT ? size : END_LEN + MAX_COMMENT;
    uint8_t *buf = malloc(tail ? (size_t)tail : 1);
    if (!buf) return ckpt_fail_oom(err);
    int rc = ckpt_read_at(src, size - tail, buf, (size_t)tail, "the zip's end record", err);
    if (rc) {
        free(buf);
        return rc;
    }
    *out = buf;
    *len = tail;
    return 0;
}

/* The end record: the last PK\5\6 whose comment ends the file, else the last whose comment fits.
 * Also noted: the last signature of all (what a reader that ignores the comment's length takes,
 * as torch's miniz does) and the signatures before the one taken, for the caller to place.
 * The fixed-size end is read first (the 22-byte end record, the ZIP64 locator and record before
 * it: FIXED_END bytes): a zip without a comment is found there, and then nothing before the
 * record can be a later signature. Only when the last 22 bytes are no end record without a
 * comment are the last 64 KiB searched; the earlier signatures are then known at once, else
 * looked for when something comes before the first member (place_earlier). */
#define FIXED_END (END64_LEN + LOCATOR_LEN + END_LEN)
static int find_end(const ckpt_source *src, end_record *e, ckpt_error *err)
{
    uint64_t size = src->size;
    if (size == CKPT_NONE)
        return ckpt_fail(err, "zip", CKPT_E_ZIP_NOT_FOUND, CKPT_NONE, 0,
                         "the size of the source is unknown: a zip is read from its end");
    if (size < END_LEN)
        return ckpt_fail(err, "zip", CKPT_E_ZIP_NOT_FOUND, 0, 0,
                         "no end-of-central-directory record in the last %llu bytes of the file",
                         (unsigned long long)size);
    uint64_t tail = size < FIXED_END ? size : FIXED_END;
    uint8_t *buf = malloc((size_t)tail);
    if (!buf) return ckpt_fail_oom(err);
    int rc = ckpt_read_at(src, size - tail, buf, (size_t)tail, "the zip's end record", err);
    if (rc) {
        free(buf);
        return rc;
    }
    size_t found = SIZE_MAX, last = SIZE_MAX;
    if (get32(buf + tail - END_LEN) == SIG_END && get16(buf + tail - 2) == 0) {
        found = last = (size_t)tail - END_LEN;
        e->earlier_pending = true;
    } else {
        free(buf);
        if ((rc = read_tail(src, &buf, &tail, err))) return rc;
        size_t fits = SIZE_MAX;
        for (size_t k = (size_t)tail - END_LEN + 1; k-- > 0;) {
            if (get32(buf + k) != SIG_END) continue;
            if (last == SIZE_MAX) last = k;
            size_t comment = get16(buf + k + 20);
            if (found == SIZE_MAX && k + END_LEN + comment == tail) found = k;
            if (fits == SIZE_MAX && k + END_LEN + comment <= tail) fits = k;
        }
        if (found == SIZE_MAX) found = fits;
        if (found == SIZE_MAX) {
            free(buf);
            return ckpt_fail(err, "zip", CKPT_E_ZIP_NOT_FOUND, CKPT_NONE, 0,
                             "no end-of-central-directory record in the last %llu bytes of the file",
                             (unsigned long long)tail);
        }
        /* the signatures before the one taken: at most one per 4 bytes of the tail */
        if ((rc = collect_earlier(buf, found, size - tail, e, err))) {
            free(buf);
            return rc;
        }
    }
    const uint8_t *p = buf + found;
    e->at = size - tail + found;
    e->last_signature = size - tail + last;
    e->locator_target = CKPT_NONE;
    unsigned disk = get16(p + 4), cd_disk = get16(p + 6);
    uint64_t here = get16(p + 8), all = get16(p + 10);
    e->count = all;
    e->cd_size = get32(p + 12);
    e->cd_offset = get32(p + 16);
    e->zip64 = false;
    /* the ZIP64 locator, just before the end record */
    bool locator = found >= LOCATOR_LEN && get32(p - LOCATOR_LEN) == SIG_LOCATOR;
    uint64_t loc_at = e->at - LOCATOR_LEN, record_rel = 0;
    unsigned loc_disks = 1;
    if (locator) {
        record_rel = ckpt_get_u64le(p - LOCATOR_LEN + 8);
        loc_disks = (unsigned)get32(p - LOCATOR_LEN + 16);
        e->locator_target = record_rel;
    }
    /* the ZIP64 end record just before the locator, when the buffer holds it */
    uint8_t r[END64_LEN];
    bool held = locator && found >= LOCATOR_LEN + END64_LEN;
    if (held) memcpy(r, p - LOCATOR_LEN - END64_LEN, END64_LEN);
    free(buf);
    if (disk != 0 || cd_disk != 0 || (locator && loc_disks > 1))
        return ckpt_fail(err, "zip", CKPT_E_ZIP_UNSUPPORTED, e->at + 4, 4, "a multi-disk archive is not supported");
    if (!locator) {
        if (here != all)
            return malformed(err, e->at + 8, 4, "the end record counts %llu entries on this disk but %llu in all",
                             (unsigned long long)here, (unsigned long long)all);
        return 0;
    }
    /* the ZIP64 end record: just before the locator (a prefix moves it from where the locator
     * says), else where the locator says */
    uint64_t at = CKPT_NONE;
    if (loc_at >= END64_LEN) {
        if (!held) TRY(ckpt_read_at(src, loc_at - END64_LEN, r, END64_LEN, "the zip's ZIP64 end record", err));
        if (get32(r) == SIG_END64) at = loc_at - END64_LEN;
    }
    if (at == CKPT_NONE && loc_at >= END64_LEN && record_rel <= loc_at - END64_LEN) {
        TRY(ckpt_read_at(src, record_rel, r, END64_LEN, "the zip's ZIP64 end record", err));
        if (get32(r) == SIG_END64) at = record_rel;
    }
    if (at == CKPT_NONE)
        return malformed(err, loc_at + 8, 8, "the ZIP64 locator points at byte %llu, where no ZIP64 end record is",
                         (unsigned long long)record_rel);
    uint64_t record_size = ckpt_get_u64le(r + 4);
    if (record_size < END64_LEN - 12 || record_size > loc_at - at - 12)
        return malformed(err, at + 4, 8, "the ZIP64 end record's size %llu is not between 44 and %llu",
                         (unsigned long long)record_size, (unsigned long long)(loc_at - at - 12));
    if (get32(r + 16) != 0 || get32(r + 20) != 0)
        return ckpt_fail(err, "zip", CKPT_E_ZIP_UNSUPPORTED, at + 16, 4, "a multi-disk archive is not supported");
    here = ckpt_get_u64le(r + 24);
    all = ckpt_get_u64le(r + 32);
    if (here != all)
        return malformed(err, at + 24, 8, "the end record counts %llu entries on this disk but %llu in all",
                         (unsigned long long)here, (unsigned long long)all);
    e->count = all;
    e->cd_size = ckpt_get_u64le(r + 40);
    e->cd_offset = ckpt_get_u64le(r + 48);
    e->zip64 = true;
    e->record64_at = at;
    return 0;
}

/* The ZIP64 extended information of a central entry: the fields whose 32-bit values are all
 * ones, in order (uncompressed, compressed, local header offset). */
static int read_extras(const uint8_t *x, size_t len, uint64_t at, size_t index, ckpt_zip_member *m, bool want_u,
                       bool want_c, bool want_o, ckpt_error *err)
{
    size_t k = 0;
    while (k < len) {
        if (len - k < 4) return malformed(err, at + k, len - k, "entry %zu's extra fields overrun their length", index);
        unsigned id = get16(x + k), n = get16(x + k + 2);
        if (n > len - k - 4)
            return malformed(err, at + k, len - k, "entry %zu's extra fields overrun their length", index);
        if (id == 0x0001) {
            size_t need = 8 * ((size_t)want_u + want_c + want_o);
            if (n < need)
                return malformed(err, at + k, 4 + n,
                                 "entry %zu's ZIP64 extra field holds %u bytes where its sizes and offset need %zu",
                                 index, n, need);
            const uint8_t *q = x + k + 4;
            if (want_u) m->uncompressed = ckpt_get_u64le(q), q += 8;
            if (want_c) m->compressed = ckpt_get_u64le(q), q += 8;
            if (want_o) m->local_offset = ckpt_get_u64le(q);
            return 0;
        }
        k += 4 + n;
    }
    if (want_u || want_c || want_o)
        return malformed(err, at, len,
                         "entry %zu's ZIP64 extra field holds %u bytes where its sizes and offset need %zu", index, 0u,
                         8 * ((size_t)want_u + want_c + want_o));
    return 0;
}

typedef struct placed {
    uint64_t local_offset;
    size_t k;
} placed;

static int by_local(const void *a, const void *b)
{
    const placed *x = a, *y = b;
    if (x->local_offset != y->local_offset) return x->local_offset < y->local_offset ? -1 : 1;
    return (x->k > y->k) - (x->k < y->k);
}

/* Members do not overlap: sorted by local offset, each starts after the previous one's local
 * header (its fixed part and name, as the central entry gives the name) and stored data; each
 * member's limit is the next one's start (the directory for the last). */
static int check_layout(ckpt_zip *z, ckpt_error *err)
{
    size_t n = z->count;
    z->first_local = CKPT_NONE;
    if (!n) return 0;
    placed *order = malloc(n * sizeof *order);
    if (!order) return ckpt_fail_oom(err);
    for (size_t k = 0; k < n; k++) order[k] = (placed){z->members[k].local_offset, k};
    qsort(order, n, sizeof *order, by_local);
    z->first_local = z->members[order[0].k].local_offset;
    int rc = 0;
    for (size_t j = 0; j < n && !rc; j++) {
        ckpt_zip_member *m = &z->members[order[j].k];
        uint64_t next = j + 1 < n ? z->members[order[j + 1].k].local_offset : z->cd_offset;
        m->limit = next;
        uint64_t least = m->local_offset + LOCAL_LEN + m->name_len; /* no overflow: offsets < 2^63 checked */
        if (least > next || m->compressed > next - least) {
            if (j + 1 < n)
                rc = malformed(err, m->entry_offset, CENTRAL_LEN,
                               "entries %zu and %zu overlap (local headers at bytes %llu and %llu)", order[j].k,
                               order[j + 1].k, (unsigned long long)m->local_offset, (unsigned long long)next);
            else
                rc = malformed(err, m->entry_offset, CENTRAL_LEN,
                               "entry %zu (%llu bytes at byte %llu) reaches into the central directory at byte %llu",
                               order[j].k, (unsigned long long)m->compressed, (unsigned long long)m->local_offset,
                               (unsigned long long)z->cd_offset);
        }
    }
    free(order);
    return rc;
}

/* What lies before the first member: the nearest end-record signature there (the tail holds the
 * candidates), another archive's. One inside a member's data is that member's business. */
static int place_earlier(ckpt_zip *z, end_record *e, ckpt_error *err)
{
    uint64_t first = z->first_local != CKPT_NONE ? z->first_local : z->cd_offset;
    z->other_end = CKPT_NONE;
    if (e->earlier_pending && first >= END_LEN) {
        /* bytes before the first member: the tail's signatures before the record, as a search
         * of the tail would have found them */
        uint8_t *buf = NULL;
        uint64_t tail = 0;
        TRY(read_tail(z->src, &buf, &tail, err));
        int rc = collect_earlier(buf, (size_t)(e->at - (z->src->size - tail)), z->src->size - tail, e, err);
        free(buf);
        if (rc) return rc;
    }
    for (size_t k = 0; k < e->earlier_len && z->other_end == CKPT_NONE; k++)
        if (e->earlier[k] + END_LEN <= first) z->other_end = e->earlier[k];
    return 0;
}

static int read_directory(ckpt_zip *z, end_record *e, ckpt_error *err)
{
    uint64_t size = z->src->size;
    /* where the directory ends: the ZIP64 end record, else the end record */
    uint64_t cd_end = e->zip64 ? e->record64_at : e->at;
    if (e->cd_size > cd_end || e->cd_offset > cd_end - e->cd_size)
        return malformed(err, e->zip64 ? e->record64_at + 40 : e->at + 12, e->zip64 ? 16 : 8,
                         "the central directory (%llu bytes at byte %llu of the zip) does not fit before its end "
                         "record at byte %llu",
                         (unsigned long long)e->cd_size, (unsigned long long)e->cd_offset, (unsigned long long)cd_end);
    z->start = cd_end - e->cd_size - e->cd_offset;
    z->cd_offset = z->start + e->cd_offset;
    z->cd_size = e->cd_size;
    z->end_offset = e->at;
    z->zip64 = e->zip64;
    z->record64_at = e->zip64 ? e->record64_at : CKPT_NONE;
    z->locator_target = e->locator_target;
    z->last_end_signature = e->last_signature;
    if (e->count > e->cd_size / CENTRAL_LEN)
        return malformed(err, e->zip64 ? e->record64_at + 32 : e->at + 10, e->zip64 ? 8 : 2,
                         "%llu entries cannot fit in a central directory of %llu bytes", (unsigned long long)e->count,
                         (unsigned long long)e->cd_size);
    (void)size;
    cursor c = {z->src, malloc(CURSOR_CAP), 0, 0, z->cd_offset + z->cd_size};
    if (!c.buf) return ckpt_fail_oom(err);
    /* the entries and their names grow as they are read (each entry has its 46 bytes in the file) */
    size_t cap = e->count < 1024 ? (size_t)e->count : 1024, names_cap = 4096, names_len = 0;
    z->members = malloc((cap ? cap : 1) * sizeof *z->members);
    z->names = malloc(names_cap);
    int rc = 0;
    if (!z->members || !z->names) rc = ckpt_fail_oom(err);
    /* offsets of names into z->names while it may move */
    uint64_t at = z->cd_offset;
    for (uint64_t k = 0; k < e->count && !rc; k++) {
        size_t index = (size_t)k;
        if (c.end - at < CENTRAL_LEN) {
            rc = malformed(err, at, c.end - at, "entry %zu reaches past the central directory", index);
            break;
        }
        if ((rc = cursor_need(&c, at, CENTRAL_LEN, err))) break;
        const uint8_t *h = cursor_at(&c, at);
        if (get32(h) != SIG_CENTRAL) {
            rc = malformed(err, at, 4, "entry %zu has no central header signature", index);
            break;
        }
        size_t nlen = get16(h + 28), xlen = get16(h + 30), clen = get16(h + 32);
        size_t total = CENTRAL_LEN + nlen + xlen + clen;
        if (c.end - at < total) {
            rc = malformed(err, at, c.end - at, "entry %zu reaches past the central directory", index);
            break;
        }
        if ((rc = cursor_need(&c, at, total, err))) break;
        h = cursor_at(&c, at);
        if (z->count == cap) {
            size_t ncap = cap * 2 > e->count ? (size_t)e->count : cap * 2;
            ckpt_zip_member *p = realloc(z->members, ncap * sizeof *p);
            if (!p) {
                rc = ckpt_fail_oom(err);
                break;
            }
            z->members = p;
            cap = ncap;
        }
        ckpt_zip_member *m = &z->members[z->count];
        memset(m, 0, sizeof *m);
        m->flags = get16(h + 8);
        m->method = get16(h + 10);
        m->crc = get32(h + 16);
        m->compressed = get32(h + 20);
        m->uncompressed = get32(h + 24);
        unsigned disk = get16(h + 34);
        m->local_offset = get32(h + 42);
        m->entry_offset = at;
        m->data_offset = CKPT_NONE;
        m->name_len = nlen;
        if (memchr(h + CENTRAL_LEN, 0, nlen)) {
            rc = malformed(err, at + CENTRAL_LEN, nlen, "entry %zu's name holds a NUL byte", index);
            break;
        }
        if ((rc = read_extras(h + CENTRAL_LEN + nlen, xlen, at + CENTRAL_LEN + nlen, index, m,
                              m->uncompressed == U32_MAX, m->compressed == U32_MAX, m->local_offset == U32_MAX, err)))
            break;
        if (disk != 0 && disk != U16_MAX) {
            rc = ckpt_fail(err, "zip", CKPT_E_ZIP_UNSUPPORTED, at + 34, 2, "a multi-disk archive is not supported");
            break;
        }
        /* its place: within the zip, before the directory */
        if (m->local_offset >= e->cd_offset) {
            rc = malformed(err, at + 42, 4, "entry %zu's local header offset %llu lies past the central directory",
                           index, (unsigned long long)m->local_offset);
            break;
        }
        m->local_offset += z->start;
        if (m->method == 0 && m->compressed != m->uncompressed) {
            rc = malformed(err, at + 20, 8, "entry %zu is stored but its sizes differ (%llu and %llu)", index,
                           (unsigned long long)m->compressed, (unsigned long long)m->uncompressed);
            break;
        }
        if (names_len + nlen + 1 > names_cap) {
            size_t ncap = names_cap;
            while (ncap < names_len + nlen + 1) ncap *= 2;
            char *p = realloc(z->names, ncap);
            if (!p) {
                rc = ckpt_fail_oom(err);
                break;
            }
            z->names = p;
            names_cap = ncap;
        }
        memcpy(z->names + names_len, h + CENTRAL_LEN, nlen);
        z->names[names_len + nlen] = '\0';
        m->name = (const char *)(uintptr_t)names_len; /* an offset until the names stop moving */
        names_len += nlen + 1;
        z->count++;
        at += total;
    }
    free(c.buf);
    for (size_t k = 0; k < z->count; k++) z->members[k].name = z->names + (uintptr_t)z->members[k].name;
    if (!rc) rc = check_layout(z, err);
    if (!rc) rc = place_earlier(z, e, err);
    return rc;
}

int ckpt_zip_open(const ckpt_source *src, ckpt_zip **out, ckpt_error *err)
{
    *out = NULL;
    ckpt_zip *z = calloc(1, sizeof *z);
    if (!z) return ckpt_fail_oom(err);
    z->src = src;
    end_record e = {0};
    int rc = find_end(src, &e, err);
    if (!rc) rc = read_directory(z, &e, err);
    free(e.earlier);
    if (rc) {
        ckpt_zip_free(z);
        return rc;
    }
    *out = z;
    return 0;
}

void ckpt_zip_free(ckpt_zip *z)
{
    if (!z) return;
    free(z->members);
    free(z->names);
    free(z);
}

const ckpt_zip_member *ckpt_zip_find(const ckpt_zip *z, const char *name)
{
    size_t n = strlen(name);
    for (size_t k = 0; k < z->count; k++)
        if (z->members[k].name_len == n && !memcmp(z->members[k].name, name, n)) return &z->members[k];
    return NULL;
}

static int lower(int c) { return c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c; }

static bool same_nocase(const char *a, size_t an, const char *b, size_t bn)
{
    if (an != bn) return false;
    for (size_t k = 0; k < an; k++)
        if (lower((unsigned char)a[k]) != lower((unsigned char)b[k])) return false;
    return true;
}

const ckpt_zip_member *ckpt_zip_find_nocase(const ckpt_zip *z, const char *name)
{
    size_t n = strlen(name);
    for (size_t k = 0; k < z->count; k++)
        if (same_nocase(z->members[k].name, z->members[k].name_len, name, n)) return &z->members[k];
    return NULL;
}

/* qsort has no context: the zip and the comparison's kind for the one sort in progress */
typedef struct named {
    const ckpt_zip_member *m;
    size_t k;
    bool nocase;
} named;

static int by_name(const void *pa, const void *pb)
{
    const named *x = pa, *y = pb;
    size_t n = x->m->name_len < y->m->name_len ? x->m->name_len : y->m->name_len;
    for (size_t j = 0; j < n; j++) {
        int a = (unsigned char)x->m->name[j], b = (unsigned char)y->m->name[j];
        if (x->nocase) a = lower(a), b = lower(b);
        if (a != b) return a < b ? -1 : 1;
    }
    if (x->m->name_len != y->m->name_len) return x->m->name_len < y->m->name_len ? -1 : 1;
    return (x->k > y->k) - (x->k < y->k);
}

int ckpt_zip_duplicate(const ckpt_zip *z, bool nocase, size_t *a, size_t *b, ckpt_error *err)
{
    *a = *b = SIZE_MAX;
    if (z->count < 2) return 0;
    named *v = malloc(z->count * sizeof *v);
    if (!v) return ckpt_fail_oom(err);
    for (size_t k = 0; k < z->count; k++) v[k] = (named){&z->members[k], k, nocase};
    qsort(v, z->count, sizeof *v, by_name);
    /* sorted by name, then index: a run of equal names starts with its first member */
    for (size_t j = 1, run = 0; j < z->count; j++) {
        named x = v[j];
        x.k = v[run].k; /* compare the names alone */
        if (by_name(&v[run], &x) != 0) {
            run = j;
            continue;
        }
        if (j == run + 1 && v[j].k < *b) *a = v[run].k, *b = v[j].k;
    }
    free(v);
    return 0;
}

int ckpt_zip_resolve(ckpt_zip *z, size_t k, ckpt_error *err)
{
    ckpt_zip_member *m = &z->members[k];
    if (m->data_offset != CKPT_NONE) return 0;
    if (m->flags & 1) return member_fail(err, CKPT_E_ZIP_UNSUPPORTED, m->entry_offset + 8, 2, m, " is encrypted");
    if (m->method != 0) {
        char after[96];
        snprintf(after, sizeof after, " is compressed (method %u): only stored members are read", m->method);
        return member_fail(err, CKPT_E_ZIP_UNSUPPORTED, m->entry_offset + 10, 2, m, after);
    }
    uint8_t h[LOCAL_LEN];
    /* its fixed part and name lie before the limit (check_layout) */
    TRY(ckpt_read_at(z->src, m->local_offset, h, LOCAL_LEN, "a zip member's local header", err));
    if (get32(h) != SIG_LOCAL)
        return member_fail(err, CKPT_E_ZIP_MALFORMED, m->local_offset, 4, m, " has no local header signature");
    size_t nlen = get16(h + 26), xlen = get16(h + 28);
    uint64_t data = m->local_offset + LOCAL_LEN + nlen + xlen;
    if (nlen != m->name_len)
        return member_fail(err, CKPT_E_ZIP_MALFORMED, m->local_offset + 26, 2, m, "'s local header gives another name");
    if (data > m->limit || m->compressed > m->limit - data) {
        char after[160];
        snprintf(after, sizeof after, "'s data (%llu bytes at byte %llu) reaches past byte %llu",
                 (unsigned long long)m->compressed, (unsigned long long)data, (unsigned long long)m->limit);
        return member_fail(err, CKPT_E_ZIP_MALFORMED, m->local_offset + 28, 2, m, after);
    }
    if (nlen) {
        char *name = malloc(nlen);
        if (!name) return ckpt_fail_oom(err);
        int rc = ckpt_read_at(z->src, m->local_offset + LOCAL_LEN, name, nlen, "a zip member's local header", err);
        bool same = !rc && !memcmp(name, m->name, nlen);
        free(name);
        TRY(rc);
        if (!same)
            return member_fail(err, CKPT_E_ZIP_MALFORMED, m->local_offset + LOCAL_LEN, nlen, m,
                               "'s local header gives another name");
    }
    m->data_offset = data;
    return 0;
}

int ckpt_zip_member_source(ckpt_zip *z, size_t k, ckpt_source *out, ckpt_window *w, ckpt_error *err)
{
    TRY(ckpt_zip_resolve(z, k, err));
    ckpt_source_window(out, w, z->src, z->members[k].data_offset, z->members[k].compressed);
    return 0;
}

/* ---- CRC-32 ---- */

static uint32_t crc_table[8][256];

static void crc_init(void)
{
    if (crc_table[0][1]) return;
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++) c = c & 1 ? 0xedb88320u ^ (c >> 1) : c >> 1;
        crc_table[0][i] = c;
    }
    for (uint32_t i = 0; i < 256; i++)
        for (int t = 1; t < 8; t++)
            crc_table[t][i] = (crc_table[t - 1][i] >> 8) ^ crc_table[0][crc_table[t - 1][i] & 0xff];
}

/* Slicing by 8. */
uint32_t ckpt_crc32(uint32_t crc, const void *data, size_t n)
{
    crc_init();
    const uint8_t *p = data;
    crc = ~crc;
    while (n >= 8) {
        uint32_t a, b;
        memcpy(&a, p, 4);
        memcpy(&b, p + 4, 4);
        a ^= crc;
        crc = crc_table[7][a & 0xff] ^ crc_table[6][(a >> 8) & 0xff] ^ crc_table[5][(a >> 16) & 0xff] ^
              crc_table[4][a >> 24] ^ crc_table[3][b & 0xff] ^ crc_table[2][(b >> 8) & 0xff] ^
              crc_table[1][(b >> 16) & 0xff] ^ crc_table[0][b >> 24];
        p += 8;
        n -= 8;
    }
    while (n--) crc = crc_table[0][(crc ^ *p++) & 0xff] ^ (crc >> 8);
    return ~crc;
}

/* ---- writing (stored members, data descriptors, ZIP64 past 4 GiB) ---- */

void ckpt_zip_writer_init(ckpt_zip_writer *w, const ckpt_sink *out, ckpt_error *err)
{
    memset(w, 0, sizeof *w);
    w->out = out;
    w->err = err;
}

void ckpt_zip_writer_free(ckpt_zip_writer *w)
{
    for (size_t k = 0; k < w->len; k++) free(w->members[k].name);
    free(w->members);
    w->members = NULL;
    w->len = w->cap = 0;
}

static int out_bytes(ckpt_zip_writer *w, const void *p, size_t n)
{
    TRY(ckpt_sink_bytes(w->out, p, n, w->err));
    w->at += n;
    return 0;
}

int ckpt_zip_begin(ckpt_zip_writer *w, const char *name)
{
    size_t nlen = strlen(name);
    if (w->open || nlen > U16_MAX)
        return ckpt_fail(w->err, NULL, CKPT_E_INVALID_ARGUMENT, CKPT_NONE, 0, "invalid arguments to the zip writer");
    if (w->len == w->cap) {
        size_t ncap = w->cap ? 2 * w->cap : 16;
        ckpt_zip_written *p = realloc(w->members, ncap * sizeof *p);
        if (!p) return ckpt_fail_oom(w->err);
        w->members = p;
        w->cap = ncap;
    }
    ckpt_zip_written *m = &w->members[w->len];
    if (!(m->name = malloc(nlen + 1))) return ckpt_fail_oom(w->err);
    memcpy(m->name, name, nlen + 1);
    w->len++;
    m->local_offset = w->at;
    m->size = 0;
    m->crc = 0;
    uint8_t lh[LOCAL_LEN];
    put32(lh, SIG_LOCAL);
    put16(lh + 4, 45);          /* version needed: 4.5 (ZIP64) */
    put16(lh + 6, 0x0808);      /* bit 3: sizes and CRC in the data descriptor; bit 11: UTF-8 names */
    put16(lh + 8, 0);           /* stored */
    put32(lh + 10, 0x00210000); /* 1980-01-01 00:00 */
    put32(lh + 14, 0);
    put32(lh + 18, 0);
    put32(lh + 22, 0);
    /* the padding field's length: the data starts past the header, the name and the field */
    size_t pad = 0, elen = 0;
    if (w->align) {
        uint64_t start = w->at + LOCAL_LEN + nlen + 4;
        pad = (size_t)((w->align - start % w->align) % w->align);
        elen = 4 + pad;
    }
    put16(lh + 26, (unsigned)nlen);
    put16(lh + 28, (unsigned)elen);
    TRY(out_bytes(w, lh, sizeof lh));
    TRY(out_bytes(w, name, nlen));
    if (elen) {
        uint8_t field[4 + 256];
        if (pad > 256)
            return ckpt_fail(w->err, NULL, CKPT_E_INVALID_ARGUMENT, CKPT_NONE, 0,
                             "invalid arguments to the zip writer");
        field[0] = 'F', field[1] = 'B';
        put16(field + 2, (unsigned)pad);
        memset(field + 4, 'Z', pad);
        TRY(out_bytes(w, field, elen));
    }
    w->open = true;
    w->crc = 0;
    w->size = 0;
    return 0;
}

int ckpt_zip_write(ckpt_zip_writer *w, const void *p, size_t n)
{
    w->crc = ckpt_crc32(w->crc, p, n);
    w->size += n;
    return out_bytes(w, p, n);
}

int ckpt_zip_end(ckpt_zip_writer *w)
{
    ckpt_zip_written *m = &w->members[w->len - 1];
    w->open = false;
    m->crc = w->crc;
    m->size = w->size;
    /* the descriptor: 8-byte sizes (ZIP64 form) when the member passes 4 GiB */
    uint8_t dd[24];
    put32(dd, SIG_DESCRIPTOR);
    put32(dd + 4, m->crc);
    size_t ddlen;
    if (m->size >= U32_MAX) {
        ckpt_put_u64le(dd + 8, m->size);
        ckpt_put_u64le(dd + 16, m->size);
        ddlen = 24;
    } else {
        put32(dd + 8, (uint32_t)m->size);
        put32(dd + 12, (uint32_t)m->size);
        ddlen = 16;
    }
    return out_bytes(w, dd, ddlen);
}

int ckpt_zip_finish(ckpt_zip_writer *w)
{
    uint64_t cd_start = w->at;
    for (size_t k = 0; k < w->len; k++) {
        const ckpt_zip_written *m = &w->members[k];
        size_t nlen = strlen(m->name);
        bool big = m->size >= U32_MAX || m->local_offset >= U32_MAX;
        uint8_t ch[CENTRAL_LEN], extra[28];
        size_t elen = 0;
        if (big) { /* ZIP64 extended information: uncompressed, compressed, local offset */
            put16(extra, 0x0001);
            put16(extra + 2, 24);
            ckpt_put_u64le(extra + 4, m->size);
            ckpt_put_u64le(extra + 12, m->size);
            ckpt_put_u64le(extra + 20, m->local_offset);
            elen = 28;
        }
        put32(ch, SIG_CENTRAL);
        put16(ch + 4, 45);
        put16(ch + 6, 45);
        put16(ch + 8, 0x0808);
        put16(ch + 10, 0);
        put32(ch + 12, 0x00210000);
        put32(ch + 16, m->crc);
        put32(ch + 20, big ? U32_MAX : (uint32_t)m->size);
        put32(ch + 24, big ? U32_MAX : (uint32_t)m->size);
        put16(ch + 28, (unsigned)nlen);
        put16(ch + 30, (unsigned)elen);
        put16(ch + 32, 0);
        put16(ch + 34, 0);
        put16(ch + 36, 0);
        put32(ch + 38, 0);
        put32(ch + 42, big ? U32_MAX : (uint32_t)m->local_offset);
        TRY(out_bytes(w, ch, sizeof ch));
        TRY(out_bytes(w, m->name, nlen));
        if (elen) TRY(out_bytes(w, extra, elen));
    }
    uint64_t cd_size = w->at - cd_start;
    bool zip64 = w->len >= U16_MAX || cd_start >= U32_MAX || cd_size >= U32_MAX;
    if (zip64) {
        uint8_t r[END64_LEN], loc[LOCATOR_LEN];
        uint64_t record_at = w->at;
        put32(r, SIG_END64);
        ckpt_put_u64le(r + 4, 44);
        put16(r + 12, 45);
        put16(r + 14, 45);
        put32(r + 16, 0);
        put32(r + 20, 0);
        ckpt_put_u64le(r + 24, w->len);
        ckpt_put_u64le(r + 32, w->len);
        ckpt_put_u64le(r + 40, cd_size);
        ckpt_put_u64le(r + 48, cd_start);
        TRY(out_bytes(w, r, sizeof r));
        put32(loc, SIG_LOCATOR);
        put32(loc + 4, 0);
        ckpt_put_u64le(loc + 8, record_at);
        put32(loc + 16, 1);
        TRY(out_bytes(w, loc, sizeof loc));
    }
    uint8_t e[END_LEN];
    put32(e, SIG_END);
    put16(e + 4, 0);
    put16(e + 6, 0);
    put16(e + 8, zip64 ? U16_MAX : (unsigned)w->len);
    put16(e + 10, zip64 ? U16_MAX : (unsigned)w->len);
    put32(e + 12, zip64 ? U32_MAX : (uint32_t)cd_size);
    put32(e + 16, zip64 ? U32_MAX : (uint32_t)cd_start);
    put16(e + 20, 0);
    return out_bytes(w, e, sizeof e);
}

bool ckpt_zip_first_member_ends(const uint8_t *head, size_t n, const char *suffix)
{
    if (n < 30) return false;
    size_t len = (size_t)head[26] | (size_t)head[27] << 8, k = strlen(suffix);
    if (n < 30 + len || len < k) return false;
    return memcmp(head + 30 + len - k, suffix, k) == 0;
}
