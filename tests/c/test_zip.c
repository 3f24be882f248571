/* The zip layer (src/zip.c): a zip as torch.save writes it (ZIP64 extras on every entry, a ZIP64
 * end record, local extra fields padding the data to 64 bytes), with a prefix, with members in
 * another order; hostile central directories refused with their texts and offsets; and the
 * writer's zips read back by the reader. */
#include "containers/zip.h"
#include "testutil.h"

/* ---- a zip builder that writes fields literally ---- */

typedef struct zbuf {
    uint8_t *d;
    size_t len, cap;
} zbuf;

static void zput(zbuf *b, const void *p, size_t n)
{
    if (b->len + n > b->cap) {
        b->cap = (b->len + n) * 2 + 64;
        b->d = realloc(b->d, b->cap);
    }
    memcpy(b->d + b->len, p, n);
    b->len += n;
}
static void z16(zbuf *b, unsigned v)
{
    uint8_t p[2] = {(uint8_t)v, (uint8_t)(v >> 8)};
    zput(b, p, 2);
}
static void z32(zbuf *b, uint32_t v)
{
    uint8_t p[4];
    for (int k = 0; k < 4; k++) p[k] = (uint8_t)(v >> (8 * k));
    zput(b, p, 4);
}
static void z64(zbuf *b, uint64_t v)
{
    z32(b, (uint32_t)v);
    z32(b, (uint32_t)(v >> 32));
}
static void set32(uint8_t *p, uint32_t v)
{
    for (int k = 0; k < 4; k++) p[k] = (uint8_t)(v >> (8 * k));
}

typedef struct zm {
    const char *name;
    const char *data;
    unsigned method;
} zm;

#define ZMAX 8
typedef struct zopts {
    size_t prefix;       /* bytes of 'x' before the zip */
    bool zip64;          /* ZIP64 extras on every entry, a ZIP64 end record and its locator */
    bool pad64;          /* torch: a local extra field pads each member's data to 64 bytes */
    const size_t *order; /* the members' order in the file (the directory keeps theirs) */
} zopts;

typedef struct zbuilt {
    zbuf b;
    size_t local_at[ZMAX], data_at[ZMAX], entry_at[ZMAX]; /* absolute */
    size_t cd_at, end64_at, loc_at, end_at;
} zbuilt;

static void build(zbuilt *z, const zm *ms, size_t n, zopts o)
{
    memset(z, 0, sizeof *z);
    zbuf *b = &z->b;
    for (size_t k = 0; k < o.prefix; k++) zput(b, "x", 1);
    size_t base = o.prefix;
    for (size_t j = 0; j < n; j++) {
        size_t k = o.order ? o.order[j] : j;
        const zm *m = &ms[k];
        size_t nlen = strlen(m->name), dlen = strlen(m->data);
        z->local_at[k] = b->len;
        z32(b, 0x04034b50);
        z16(b, 45);
        z16(b, 0x0008);
        z16(b, (unsigned)m->method);
        z32(b, 0);
        z32(b, 0); /* torch writes the CRC and sizes in the descriptor */
        z32(b, 0);
        z32(b, 0);
        z16(b, (unsigned)nlen);
        size_t pad = 0;
        if (o.pad64) {
            size_t at = b->len - base + 2 + nlen + 4; /* the data after a 4-byte extra header */
            pad = (64 - at % 64) % 64;
        }
        z16(b, o.pad64 ? (unsigned)(4 + pad) : 0);
        zput(b, m->name, nlen);
        if (o.pad64) {
            z16(b, 0x4246); /* "FB" */
            z16(b, (unsigned)pad);
            for (size_t q = 0; q < pad; q++) zput(b, "Z", 1);
        }
        z->data_at[k] = b->len;
        zput(b, m->data, dlen);
        z32(b, 0x08074b50);
        z32(b, 0);
        z32(b, (uint32_t)dlen);
        z32(b, (uint32_t)dlen);
    }
    z->cd_at = b->len;
    for (size_t k = 0; k < n; k++) {
        const zm *m = &ms[k];
        size_t nlen = strlen(m->name), dlen = strlen(m->data);
        z->entry_at[k] = b->len;
        z32(b, 0x02014b50);
        z16(b, 45);
        z16(b, 45);
        z16(b, 0x0008);
        z16(b, (unsigned)m->method);
        z32(b, 0);
        z32(b, 0);
        z32(b, o.zip64 ? 0xffffffffu : (uint32_t)dlen);
        z32(b, o.zip64 ? 0xffffffffu : (uint32_t)dlen);
        z16(b, (unsigned)nlen);
        z16(b, o.zip64 ? 28 : 0);
        z16(b, 0);
        z16(b, 0);
        z16(b, 0);
        z32(b, 0);
        z32(b, o.zip64 ? 0xffffffffu : (uint32_t)(z->local_at[k] - base));
        zput(b, m->name, nlen);
        if (o.zip64) {
            z16(b, 1);
            z16(b, 24);
            z64(b, dlen);
            z64(b, dlen);
            z64(b, z->local_at[k] - base);
        }
    }
    size_t cd_size = b->len - z->cd_at;
    if (o.zip64) {
        z->end64_at = b->len;
        z32(b, 0x06064b50);
        z64(b, 44);
        z16(b, 45);
        z16(b, 45);
        z32(b, 0);
        z32(b, 0);
        z64(b, n);
        z64(b, n);
        z64(b, cd_size);
        z64(b, z->cd_at - base);
        z->loc_at = b->len;
        z32(b, 0x07064b50);
        z32(b, 0);
        z64(b, z->end64_at - base);
        z32(b, 1);
    }
    z->end_at = b->len;
    z32(b, 0x06054b50);
    z16(b, 0);
    z16(b, 0);
    z16(b, o.zip64 ? 0xffff : (unsigned)n);
    z16(b, o.zip64 ? 0xffff : (unsigned)n);
    z32(b, o.zip64 ? 0xffffffffu : (uint32_t)cd_size);
    z32(b, o.zip64 ? 0xffffffffu : (uint32_t)(z->cd_at - base));
    z16(b, 0);
}

/* ---- reading ---- */

typedef struct opened {
    ckpt_memory mem;
    ckpt_source src;
    ckpt_zip *zip;
    ckpt_error err;
    int rc;
} opened;

static void open_bytes(opened *o, const void *d, size_t len)
{
    memset(o, 0, sizeof *o);
    ckpt_error_clear(&o->err);
    ckpt_source_memory(&o->src, &o->mem, d, len);
    o->rc = ckpt_zip_open(&o->src, &o->zip, &o->err);
}

static void close_opened(opened *o)
{
    ckpt_zip_free(o->zip);
    ckpt_error_clear(&o->err);
}

/* A member's bytes through its windowed source, as a NUL-terminated string. */
static char *member_text(ckpt_zip *z, size_t k)
{
    ckpt_source s;
    ckpt_window w;
    ckpt_error err = {0};
    ckpt_error_clear(&err);
    if (ckpt_zip_member_source(z, k, &s, &w, &err)) {
        fprintf(stderr, "  %s\n", err.message);
        ckpt_error_clear(&err);
        return NULL;
    }
    char *t = calloc((size_t)s.size + 2, 1);
    size_t got = s.read(s.ctx, 0, t, (size_t)s.size + 1); /* one byte more than the window: not given */
    CHECK(got == s.size);
    return t;
}

static const zm torch_members[] = {
    {"archive/data.pkl", "\x80\x02}q\x00.", 0},    {"archive/byteorder", "little", 0},
    {"archive/data/0", "0123456789abcdef", 0},     {"archive/version", "3\n", 0},
    {"archive/.data/serialization_id", "1234", 0},
};
#define NT (sizeof torch_members / sizeof torch_members[0])

static void check_torch_zip(const zbuilt *z, size_t prefix, bool pad64)
{
    opened o;
    open_bytes(&o, z->b.d, z->b.len);
    CHECK(o.rc == 0);
    if (o.rc) {
        fprintf(stderr, "  %s\n", o.err.message);
        return;
    }
    CHECK(o.zip->start == prefix);
    CHECK(o.zip->count == NT);
    CHECK(o.zip->cd_offset == z->cd_at);
    for (size_t k = 0; k < NT; k++) {
        const ckpt_zip_member *m = &o.zip->members[k];
        CHECK_STR(m->name, torch_members[k].name);
        CHECK(m->method == 0 && m->compressed == strlen(torch_members[k].data) && m->uncompressed == m->compressed);
        CHECK(m->local_offset == z->local_at[k]);
        CHECK(m->data_offset == CKPT_NONE); /* not read until asked */
        char *t = member_text(o.zip, k);
        CHECK_STR(t, torch_members[k].data);
        free(t);
        CHECK(m->data_offset == z->data_at[k]);
        if (pad64) CHECK((m->data_offset - prefix) % 64 == 0);
    }
    CHECK(ckpt_zip_find(o.zip, "archive/data/0") == &o.zip->members[2]);
    CHECK(ckpt_zip_find(o.zip, "archive/data") == NULL);
    close_opened(&o);
}

static void test_torch_zip(void)
{
    zbuilt z;
    build(&z, torch_members, NT, (zopts){0, true, true, NULL});
    check_torch_zip(&z, 0, true);
    opened o;
    open_bytes(&o, z.b.d, z.b.len);
    CHECK(o.rc == 0 && o.zip->zip64 && o.zip->end_offset == z.end_at);
    close_opened(&o);
    free(z.b.d);
    /* without ZIP64, without padding */
    build(&z, torch_members, NT, (zopts){0, false, false, NULL});
    check_torch_zip(&z, 0, false);
    free(z.b.d);
}

static void test_prefix(void)
{
    zbuilt z;
    build(&z, torch_members, NT, (zopts){1000, true, true, NULL});
    check_torch_zip(&z, 1000, true);
    free(z.b.d);
    build(&z, torch_members, NT, (zopts){3, false, false, NULL});
    check_torch_zip(&z, 3, false);
    free(z.b.d);
}

static void test_member_order(void)
{
    static const size_t orders[][NT] = {{4, 3, 2, 1, 0}, {2, 0, 4, 1, 3}, {1, 2, 3, 4, 0}};
    for (size_t q = 0; q < 3; q++) {
        zbuilt z;
        build(&z, torch_members, NT, (zopts){0, true, true, orders[q]});
        check_torch_zip(&z, 0, true);
        free(z.b.d);
    }
}

/* ---- hostile central directories ---- */

typedef void (*mutate_fn)(zbuilt *z);

static void expect(const zbuilt *z, size_t len, int code, const char *text, uint64_t offset)
{
    opened o;
    open_bytes(&o, z->b.d, len);
    CHECK(o.rc == code);
    CHECK(o.zip == NULL);
    CHECK_STR(o.err.message, text);
    CHECK(o.err.offset == offset);
    close_opened(&o);
}

/* Opens, then fails resolving member k. */
static void expect_member(const zbuilt *z, size_t k, int code, const char *text, uint64_t offset)
{
    opened o;
    open_bytes(&o, z->b.d, z->b.len);
    CHECK(o.rc == 0);
    if (o.rc) return;
    ckpt_error err = {0};
    ckpt_error_clear(&err);
    CHECK(ckpt_zip_resolve(o.zip, k, &err) == code);
    CHECK_STR(err.message, text);
    CHECK(err.offset == offset);
    ckpt_error_clear(&err);
    close_opened(&o);
}

static void test_hostile(void)
{
    zbuilt z;
    char want[512];
    /* not a zip; cut short */
    static const char junk[] = "this is not a zip file at all, only text";
    opened o;
    open_bytes(&o, junk, sizeof junk - 1);
    CHECK(o.rc == CKPT_E_ZIP_NOT_FOUND);
    CHECK_STR(o.err.message, "zip: no end-of-central-directory record in the last 40 bytes of the file");
    close_opened(&o);
    build(&z, torch_members, NT, (zopts){0, true, true, NULL});
    snprintf(want, sizeof want, "zip: no end-of-central-directory record in the last %zu bytes of the file",
             z.b.len - 1);
    expect(&z, z.b.len - 1, CKPT_E_ZIP_NOT_FOUND, want, CKPT_NONE);
    /* a count beyond the bytes: 2^40 entries in a directory of a few hundred bytes */
    size_t cd_size = z.end64_at - z.cd_at;
    uint8_t *e64 = z.b.d + z.end64_at;
    set32(e64 + 24, 0), set32(e64 + 28, 256), set32(e64 + 32, 0), set32(e64 + 36, 256);
    snprintf(want, sizeof want,
             "zip: malformed archive at byte %zu: 1099511627776 entries cannot fit in a central directory of %zu bytes",
             z.end64_at + 32, cd_size);
    expect(&z, z.b.len, CKPT_E_ZIP_MALFORMED, want, z.end64_at + 32);
    free(z.b.d);
    /* the ZIP64 end record says another count on this disk */
    build(&z, torch_members, NT, (zopts){0, true, true, NULL});
    set32(z.b.d + z.end64_at + 24, 4);
    snprintf(want, sizeof want,
             "zip: malformed archive at byte %zu: the end record counts 4 entries on this disk but 5 in all",
             z.end64_at + 24);
    expect(&z, z.b.len, CKPT_E_ZIP_MALFORMED, want, z.end64_at + 24);
    free(z.b.d);
    /* ZIP64 with wrong sizes: the directory larger than what lies before the end record */
    build(&z, torch_members, NT, (zopts){0, true, true, NULL});
    set32(z.b.d + z.end64_at + 40, 0x10000000);
    snprintf(want, sizeof want,
             "zip: malformed archive at byte %zu: the central directory (268435456 bytes at byte %zu of the zip) does "
             "not fit before its end record at byte %zu",
             z.end64_at + 40, z.cd_at, z.end64_at);
    expect(&z, z.b.len, CKPT_E_ZIP_MALFORMED, want, z.end64_at + 40);
    free(z.b.d);
    /* an offset past the end (classic end record) */
    build(&z, torch_members, NT, (zopts){0, false, false, NULL});
    set32(z.b.d + z.end_at + 16, 0x7fffffff);
    snprintf(want, sizeof want,
             "zip: malformed archive at byte %zu: the central directory (%zu bytes at byte 2147483647 of the zip) does "
             "not fit before its end record at byte %zu",
             z.end_at + 12, z.end_at - z.cd_at, z.end_at);
    expect(&z, z.b.len, CKPT_E_ZIP_MALFORMED, want, z.end_at + 12);
    free(z.b.d);
    /* the ZIP64 locator points where no record is */
    build(&z, torch_members, NT, (zopts){0, true, true, NULL});
    z.b.d[z.end64_at] = 'Q';
    snprintf(want, sizeof want,
             "zip: malformed archive at byte %zu: the ZIP64 locator points at byte %zu, where no ZIP64 end record is",
             z.loc_at + 8, z.end64_at);
    expect(&z, z.b.len, CKPT_E_ZIP_MALFORMED, want, z.loc_at + 8);
    free(z.b.d);
    /* a ZIP64 extra field too short for what its entry leaves to it */
    build(&z, torch_members, NT, (zopts){0, true, true, NULL});
    size_t x = z.entry_at[1] + 46 + strlen(torch_members[1].name);
    z.b.d[x + 2] = 8;
    snprintf(want, sizeof want,
             "zip: malformed archive at byte %zu: entry 1's ZIP64 extra field holds 8 bytes where its sizes and "
             "offset need 24",
             x);
    expect(&z, z.b.len, CKPT_E_ZIP_MALFORMED, want, x);
    free(z.b.d);
    /* extra fields overrunning their length */
    build(&z, torch_members, NT, (zopts){0, true, true, NULL});
    z.b.d[x + 2] = 30;
    snprintf(want, sizeof want, "zip: malformed archive at byte %zu: entry 1's extra fields overrun their length", x);
    expect(&z, z.b.len, CKPT_E_ZIP_MALFORMED, want, x);
    free(z.b.d);
    /* a name holding a NUL */
    build(&z, torch_members, NT, (zopts){0, true, true, NULL});
    z.b.d[z.entry_at[2] + 46 + 7] = 0;
    snprintf(want, sizeof want, "zip: malformed archive at byte %zu: entry 2's name holds a NUL byte",
             z.entry_at[2] + 46);
    expect(&z, z.b.len, CKPT_E_ZIP_MALFORMED, want, z.entry_at[2] + 46);
    free(z.b.d);
    /* overlapping members: entry 3 at entry 2's local header */
    build(&z, torch_members, NT, (zopts){0, true, true, NULL});
    size_t x3 = z.entry_at[3] + 46 + strlen(torch_members[3].name);
    set32(z.b.d + x3 + 20, (uint32_t)z.local_at[2]);
    snprintf(want, sizeof want,
             "zip: malformed archive at byte %zu: entries 2 and 3 overlap (local headers at bytes %zu and %zu)",
             z.entry_at[2], z.local_at[2], z.local_at[2]);
    expect(&z, z.b.len, CKPT_E_ZIP_MALFORMED, want, z.entry_at[2]);
    /* a local offset past the directory */
    set32(z.b.d + x3 + 20, (uint32_t)z.end_at);
    snprintf(want, sizeof want,
             "zip: malformed archive at byte %zu: entry 3's local header offset %zu lies past the central directory",
             z.entry_at[3] + 42, z.end_at);
    expect(&z, z.b.len, CKPT_E_ZIP_MALFORMED, want, z.entry_at[3] + 42);
    free(z.b.d);
    /* a loop: the directory's offset pointing back into the members (at a local header) */
    build(&z, torch_members, NT, (zopts){0, false, false, NULL});
    set32(z.b.d + z.end_at + 16, (uint32_t)z.local_at[0]);
    set32(z.b.d + z.end_at + 12, (uint32_t)(z.end_at - z.local_at[0]));
    snprintf(want, sizeof want, "zip: malformed archive at byte %zu: entry 0 has no central header signature",
             z.local_at[0]);
    expect(&z, z.b.len, CKPT_E_ZIP_MALFORMED, want, z.local_at[0]);
    free(z.b.d);
    /* an entry reaching past the directory: a name length of 65535 */
    build(&z, torch_members, NT, (zopts){0, false, false, NULL});
    z.b.d[z.entry_at[4] + 28] = 0xff, z.b.d[z.entry_at[4] + 29] = 0xff;
    snprintf(want, sizeof want, "zip: malformed archive at byte %zu: entry 4 reaches past the central directory",
             z.entry_at[4]);
    expect(&z, z.b.len, CKPT_E_ZIP_MALFORMED, want, z.entry_at[4]);
    free(z.b.d);
    /* the last member reaching into the directory */
    build(&z, torch_members, NT, (zopts){0, false, false, NULL});
    set32(z.b.d + z.entry_at[4] + 20, 4000), set32(z.b.d + z.entry_at[4] + 24, 4000);
    snprintf(want, sizeof want,
             "zip: malformed archive at byte %zu: entry 4 (4000 bytes at byte %zu) reaches into the central directory "
             "at byte %zu",
             z.entry_at[4], z.local_at[4], z.cd_at);
    expect(&z, z.b.len, CKPT_E_ZIP_MALFORMED, want, z.entry_at[4]);
    /* stored with sizes that differ */
    set32(z.b.d + z.entry_at[4] + 20, 4);
    snprintf(want, sizeof want,
             "zip: malformed archive at byte %zu: entry 4 is stored but its sizes differ (4 and 4000)",
             z.entry_at[4] + 20);
    expect(&z, z.b.len, CKPT_E_ZIP_MALFORMED, want, z.entry_at[4] + 20);
    free(z.b.d);
    /* a multi-disk archive */
    build(&z, torch_members, NT, (zopts){0, false, false, NULL});
    z.b.d[z.end_at + 4] = 1;
    expect(&z, z.b.len, CKPT_E_ZIP_UNSUPPORTED, "zip: a multi-disk archive is not supported", z.end_at + 4);
    free(z.b.d);
}

/* Members that open but cannot be read in place, or whose local header disagrees. */
static void test_hostile_members(void)
{
    zm ms[NT];
    memcpy(ms, torch_members, sizeof ms);
    ms[2].method = 8;
    zbuilt z;
    build(&z, ms, NT, (zopts){0, true, true, NULL});
    expect_member(&z, 2, CKPT_E_ZIP_UNSUPPORTED,
                  "zip: member \"archive/data/0\" is compressed (method 8): only stored members are read",
                  z.entry_at[2] + 10);
    free(z.b.d);
    build(&z, torch_members, NT, (zopts){0, true, true, NULL});
    z.b.d[z.entry_at[1] + 8] |= 1;
    expect_member(&z, 1, CKPT_E_ZIP_UNSUPPORTED, "zip: member \"archive/byteorder\" is encrypted", z.entry_at[1] + 8);
    z.b.d[z.local_at[0]] = 'Q';
    char want[256];
    snprintf(want, sizeof want,
             "zip: malformed archive at byte %zu: member \"archive/data.pkl\" has no local header signature",
             z.local_at[0]);
    expect_member(&z, 0, CKPT_E_ZIP_MALFORMED, want, z.local_at[0]);
    z.b.d[z.local_at[3] + 30 + 8] = 'V';
    snprintf(want, sizeof want,
             "zip: malformed archive at byte %zu: member \"archive/version\"'s local header gives another name",
             z.local_at[3] + 30);
    expect_member(&z, 3, CKPT_E_ZIP_MALFORMED, want, z.local_at[3] + 30);
    /* a local extra field that moves the data past the next member */
    z.b.d[z.local_at[2] + 29] = 0x40;
    uint64_t data = z.local_at[2] + 30 + strlen(torch_members[2].name) + (z.b.d[z.local_at[2] + 28] | 0x4000);
    snprintf(
        want, sizeof want,
        "zip: malformed archive at byte %zu: member \"archive/data/0\"'s data (16 bytes at byte %llu) reaches past "
        "byte %zu",
        z.local_at[2] + 28, (unsigned long long)data, z.local_at[3]);
    expect_member(&z, 2, CKPT_E_ZIP_MALFORMED, want, z.local_at[2] + 28);
    free(z.b.d);
}

/* ---- the writer, read back ---- */

/* What other readers would take instead: the last end-record signature, the locator's target,
 * the first member's place, an end record before it; names equal with or without case. */
static void test_other_readers(void)
{
    zbuilt z;
    build(&z, torch_members, NT, (zopts){0, true, true, NULL});
    opened o;
    open_bytes(&o, z.b.d, z.b.len);
    CHECK(o.rc == 0);
    if (!o.rc) {
        CHECK(o.zip->last_end_signature == z.end_at && o.zip->end_offset == z.end_at);
        CHECK(o.zip->record64_at == z.end64_at && o.zip->locator_target == z.end64_at);
        CHECK(o.zip->first_local == 0 && o.zip->other_end == CKPT_NONE);
        size_t a, b;
        ckpt_error err = {0};
        ckpt_error_clear(&err);
        CHECK(ckpt_zip_duplicate(o.zip, true, &a, &b, &err) == 0 && a == SIZE_MAX && b == SIZE_MAX);
        CHECK(ckpt_zip_find_nocase(o.zip, "ARCHIVE/Data.PKL") == &o.zip->members[0]);
        CHECK(ckpt_zip_find(o.zip, "ARCHIVE/Data.PKL") == NULL);
    }
    close_opened(&o);
    free(z.b.d);
    /* a prefix: the zip starts past it, the first member with it */
    build(&z, torch_members, NT, (zopts){100, false, false, NULL});
    open_bytes(&o, z.b.d, z.b.len);
    CHECK(o.rc == 0 && o.zip->start == 100 && o.zip->first_local == 100 && o.zip->locator_target == CKPT_NONE &&
          o.zip->record64_at == CKPT_NONE);
    close_opened(&o);
    free(z.b.d);
    /* a zip after another: the other's end record is before the first member */
    zbuilt y;
    build(&y, torch_members, 2, (zopts){0, false, false, NULL});
    build(&z, torch_members, NT, (zopts){y.b.len, false, false, NULL});
    memcpy(z.b.d, y.b.d, y.b.len);
    /* its offsets from byte 0 of the file */
    for (size_t k = 0; k < NT; k++) set32(z.b.d + z.entry_at[k] + 42, (uint32_t)z.local_at[k]);
    set32(z.b.d + z.end_at + 16, (uint32_t)z.cd_at);
    open_bytes(&o, z.b.d, z.b.len);
    CHECK(o.rc == 0 && o.zip->start == 0 && o.zip->first_local == y.b.len && o.zip->other_end == y.end_at);
    close_opened(&o);
    free(y.b.d);
    free(z.b.d);
    /* an end record in the comment of the end record, its own comment past the end */
    build(&z, torch_members, NT, (zopts){0, false, false, NULL});
    size_t end_at = z.end_at;
    z.b.len -= 2;
    z16(&z.b, 22);
    z32(&z.b, 0x06054b50);
    z16(&z.b, 0), z16(&z.b, 0), z16(&z.b, 1), z16(&z.b, 1), z32(&z.b, 0), z32(&z.b, 0), z16(&z.b, 9);
    open_bytes(&o, z.b.d, z.b.len);
    CHECK(o.rc == 0 && o.zip->end_offset == end_at && o.zip->last_end_signature == end_at + 22);
    close_opened(&o);
    free(z.b.d);
    /* the same name twice, and once more but for case */
    static const zm twice[] = {{"a/x", "1", 0}, {"a/y", "2", 0}, {"a/X", "3", 0}, {"a/y", "4", 0}};
    build(&z, twice, 4, (zopts){0, false, false, NULL});
    open_bytes(&o, z.b.d, z.b.len);
    CHECK(o.rc == 0);
    if (!o.rc) {
        size_t a, b;
        ckpt_error err = {0};
        ckpt_error_clear(&err);
        CHECK(ckpt_zip_duplicate(o.zip, true, &a, &b, &err) == 0 && a == 0 && b == 2);
        CHECK(ckpt_zip_duplicate(o.zip, false, &a, &b, &err) == 0 && a == 1 && b == 3);
    }
    close_opened(&o);
    free(z.b.d);
}

static void test_writer_round_trip(void)
{
    CHECK(ckpt_crc32(0, "123456789", 9) == 0xcbf43926u);
    CHECK(ckpt_crc32(ckpt_crc32(0, "1234", 4), "56789", 5) == 0xcbf43926u);
    ckpt_buffer buf;
    ckpt_sink sink;
    ckpt_sink_buffer(&sink, &buf);
    ckpt_error err = {0};
    ckpt_error_clear(&err);
    ckpt_zip_writer w;
    ckpt_zip_writer_init(&w, &sink, &err);
    static const char *names[] = {"a.npy", "empty", "dir/b.npy"};
    static const char *datas[] = {"hello", "", "world, in two pieces"};
    int rc = 0;
    for (int k = 0; k < 3 && !rc; k++) {
        rc = ckpt_zip_begin(&w, names[k]);
        size_t n = strlen(datas[k]);
        if (!rc) rc = ckpt_zip_write(&w, datas[k], n / 2);
        if (!rc) rc = ckpt_zip_write(&w, datas[k] + n / 2, n - n / 2);
        if (!rc) rc = ckpt_zip_end(&w);
    }
    if (!rc) rc = ckpt_zip_finish(&w);
    CHECK(rc == 0);
    ckpt_zip_writer_free(&w);
    opened o;
    open_bytes(&o, buf.data, buf.len);
    CHECK(o.rc == 0);
    if (!o.rc) {
        CHECK(o.zip->count == 3 && !o.zip->zip64 && o.zip->start == 0);
        for (size_t k = 0; k < 3 && k < o.zip->count; k++) {
            CHECK_STR(o.zip->members[k].name, names[k]);
            CHECK(o.zip->members[k].crc == ckpt_crc32(0, datas[k], strlen(datas[k])));
            CHECK(o.zip->members[k].flags == 0x0808);
            char *t = member_text(o.zip, k);
            CHECK_STR(t, datas[k]);
            free(t);
        }
    }
    close_opened(&o);
    ckpt_buffer_free(&buf);
    /* 70,000 members: past the 16-bit count, so the writer adds the ZIP64 end record */
    ckpt_sink_buffer(&sink, &buf);
    ckpt_zip_writer_init(&w, &sink, &err);
    for (unsigned k = 0; k < 70000 && !rc; k++) {
        char name[32], data[32];
        snprintf(name, sizeof name, "m%u", k);
        snprintf(data, sizeof data, "%u", k * 7);
        rc = ckpt_zip_begin(&w, name);
        if (!rc) rc = ckpt_zip_write(&w, data, strlen(data));
        if (!rc) rc = ckpt_zip_end(&w);
    }
    if (!rc) rc = ckpt_zip_finish(&w);
    CHECK(rc == 0);
    ckpt_zip_writer_free(&w);
    open_bytes(&o, buf.data, buf.len);
    CHECK(o.rc == 0);
    if (!o.rc) {
        CHECK(o.zip->count == 70000 && o.zip->zip64);
        char *t = member_text(o.zip, 69999);
        CHECK_STR(t, "489993");
        free(t);
        CHECK_STR(o.zip->members[12345].name, "m12345");
    }
    close_opened(&o);
    /* with a prefix before it */
    ckpt_buffer pre;
    ckpt_sink_buffer(&sink, &pre);
    CHECK(sink.write(sink.ctx, "#!/bin/sh\nexit 0\n", 17) == 0);
    CHECK(sink.write(sink.ctx, buf.data, buf.len) == 0);
    open_bytes(&o, pre.data, pre.len);
    CHECK(o.rc == 0 && o.zip && o.zip->start == 17);
    if (!o.rc) {
        char *t = member_text(o.zip, 3);
        CHECK_STR(t, "21");
        free(t);
    }
    close_opened(&o);
    ckpt_buffer_free(&pre);
    ckpt_buffer_free(&buf);
    ckpt_error_clear(&err);
}

/* What opening reads, counted through the source: the fixed-size end (the 22-byte end record,
 * the ZIP64 locator and record before it: 98 bytes) and the central directory; the last 64 KiB
 * are searched only for a comment, or for what lies before the first member. */
typedef struct counted {
    ckpt_source inner;
    uint64_t bytes, reads;
} counted;

static size_t counted_read(void *ctx, uint64_t offset, void *buf, size_t n)
{
    counted *c = ctx;
    size_t got = c->inner.read(c->inner.ctx, offset, buf, n);
    if (got != CKPT_READ_ERROR) c->bytes += got, c->reads++;
    return got;
}

static uint64_t bytes_to_open(const zbuilt *z, int *rc)
{
    ckpt_memory mem;
    counted c = {0};
    ckpt_source_memory(&c.inner, &mem, z->b.d, z->b.len);
    ckpt_source src = {&c, counted_read, z->b.len};
    ckpt_zip *zip = NULL;
    ckpt_error err = {0};
    ckpt_error_clear(&err);
    *rc = ckpt_zip_open(&src, &zip, &err);
    ckpt_zip_free(zip);
    ckpt_error_clear(&err);
    return c.bytes;
}

static void test_bytes_read(void)
{
    zbuilt z;
    int rc;
    build(&z, torch_members, NT, (zopts){0, true, true, NULL});
    CHECK(bytes_to_open(&z, &rc) == 98 + (z.end64_at - z.cd_at) && rc == 0);
    free(z.b.d);
    build(&z, torch_members, NT, (zopts){0, false, false, NULL});
    CHECK(bytes_to_open(&z, &rc) == 98 + (z.end_at - z.cd_at) && rc == 0);
    free(z.b.d);
    /* a comment: the fixed-size end is no end record, the whole (short) file is searched */
    build(&z, torch_members, NT, (zopts){0, false, false, NULL});
    z.b.len -= 2;
    z16(&z.b, 3);
    zput(&z.b, "abc", 3);
    CHECK(bytes_to_open(&z, &rc) == 98 + z.b.len + (z.end_at - z.cd_at) && rc == 0);
    free(z.b.d);
    /* bytes before the first member: the tail is searched for another archive's end record */
    build(&z, torch_members, NT, (zopts){100, false, false, NULL});
    CHECK(bytes_to_open(&z, &rc) == 98 + (z.end_at - z.cd_at) + z.b.len && rc == 0);
    free(z.b.d);
}

int main(void)
{
    static const test_case cases[] = {
        {"torch zip", test_torch_zip},
        {"prefix", test_prefix},
        {"member order", test_member_order},
        {"hostile directories", test_hostile},
        {"hostile members", test_hostile_members},
        {"what other readers take", test_other_readers},
        {"writer round trip", test_writer_round_trip},
        {"bytes read to open", test_bytes_read},
    };
    return RUN_ALL(cases);
}
