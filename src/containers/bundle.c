/* A folder as one source (bundle.h): the header that names a folder's entries and where the
 * bytes of the files included lie, its writer (for the caller that lays the bytes out) and its
 * reader. It knows nothing of checkpoints: a family says which files it wants. */
#include "containers/bundle.h"

#include <stdlib.h>

#define FIXED 40 /* magic, version, family, header length, count */

static void put_u32(uint8_t *p, uint32_t v)
{
    for (int k = 0; k < 4; k++) p[k] = (uint8_t)(v >> (8 * k));
}

static uint32_t get_u32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

int ckpt_bundle_header(const char *family, const char *root, const char *const *names, const uint64_t *sizes,
                       const uint8_t *include, size_t n, ckpt_buffer *out, uint64_t *offsets, ckpt_error *err)
{
    memset(out, 0, sizeof *out);
    if (!family || strlen(family) > CKPT_BUNDLE_FAMILY_LEN || !root || (n && (!names || !sizes || !include)))
        return ckpt_fail(err, NULL, CKPT_E_INVALID_ARGUMENT, CKPT_NONE, 0, "invalid arguments to ckpt_bundle_header");
    uint64_t len = FIXED + 4 + (uint64_t)strlen(root);
    for (size_t k = 0; k < n; k++) {
        size_t l = names[k] ? strlen(names[k]) : 0;
        if (!l || l > UINT32_MAX || (include[k] && sizes[k] == CKPT_NONE))
            return ckpt_fail(err, NULL, CKPT_E_INVALID_ARGUMENT, CKPT_NONE, 0,
                             "entry %zu of a folder: a name, and a size for a file included", k);
        len += 20 + (uint64_t)l;
    }
    if (len > CKPT_BUNDLE_MAX_HEADER || strlen(root) > UINT32_MAX)
        return ckpt_fail(err, NULL, CKPT_E_INVALID_ARGUMENT, CKPT_NONE, 0,
                         "a folder of more entries than one source's header holds");
    uint8_t *h = calloc((size_t)len, 1);
    if (!h) return ckpt_fail_oom(err);
    memcpy(h, CKPT_BUNDLE_MAGIC, 7);
    h[7] = 1;
    memcpy(h + 8, family, strlen(family));
    ckpt_put_u64le(h + 24, len);
    ckpt_put_u64le(h + 32, n);
    size_t at = FIXED;
    put_u32(h + at, (uint32_t)strlen(root));
    memcpy(h + at + 4, root, strlen(root));
    at += 4 + strlen(root);
    uint64_t data = len;
    for (size_t k = 0; k < n; k++) {
        uint64_t off = CKPT_NONE;
        if (include[k]) {
            off = data;
            if (ckpt_add_overflows(data, sizes[k], &data)) {
                free(h);
                return ckpt_fail(err, NULL, CKPT_E_INVALID_ARGUMENT, CKPT_NONE, 0, "a folder of more bytes than 2^64");
            }
        }
        if (offsets) offsets[k] = off;
        ckpt_put_u64le(h + at, off);
        ckpt_put_u64le(h + at + 8, sizes[k]);
        size_t l = strlen(names[k]);
        put_u32(h + at + 16, (uint32_t)l);
        memcpy(h + at + 20, names[k], l);
        at += 20 + l;
    }
    out->data = h;
    out->len = out->cap = (size_t)len;
    return 0;
}

bool ckpt_bundle_probe(const uint8_t *head, size_t n, const char *family)
{
    size_t fl = strlen(family);
    if (n < 24 || memcmp(head, CKPT_BUNDLE_MAGIC, 7) || head[7] != 1) return false;
    if (memcmp(head + 8, family, fl)) return false;
    for (size_t k = fl; k < CKPT_BUNDLE_FAMILY_LEN; k++)
        if (head[8 + k]) return false;
    return true;
}

static int fail(ckpt_error *err, uint64_t at, const char *why)
{
    return ckpt_fail(err, "folder", CKPT_E_FOLDER_BUNDLE, at, 0, "malformed folder listing at byte %llu: %s",
                     (unsigned long long)at, why);
}

int ckpt_bundle_open(const ckpt_source *src, ckpt_bundle **out, ckpt_error *err)
{
    *out = NULL;
    uint8_t fixed[FIXED];
    if (src->size != CKPT_NONE && src->size < FIXED) return fail(err, 0, "shorter than its header");
    TRY(ckpt_read_at(src, 0, fixed, FIXED, "the folder's listing", err));
    if (memcmp(fixed, CKPT_BUNDLE_MAGIC, 7) || fixed[7] != 1) return fail(err, 0, "not a folder listing of version 1");
    uint64_t len = ckpt_get_u64le(fixed + 24), n = ckpt_get_u64le(fixed + 32);
    if (len < FIXED + 4 || len > CKPT_BUNDLE_MAX_HEADER || (src->size != CKPT_NONE && len > src->size))
        return fail(err, 24, "a header length past the source");
    if (n > (len - FIXED - 4) / 20) return fail(err, 32, "more entries than the header holds");
    ckpt_bundle *b = calloc(1, sizeof *b);
    uint8_t *h = malloc((size_t)len);
    if (!b || !h) {
        free(b);
        free(h);
        return ckpt_fail_oom(err);
    }
    b->src = src;
    b->header_len = len;
    memcpy(b->family, fixed + 8, CKPT_BUNDLE_FAMILY_LEN);
    int rc = ckpt_read_at(src, 0, h, (size_t)len, "the folder's listing", err);
    /* the names' bytes with a NUL each: at most the header's length */
    if (!rc && (!(b->names = malloc((size_t)len)) || !(b->entries = calloc(n ? (size_t)n : 1, sizeof *b->entries))))
        rc = ckpt_fail_oom(err);
    size_t at = FIXED, pool = 0;
    if (!rc) {
        uint32_t rl = get_u32(h + at);
        if (rl > len - at - 4) rc = fail(err, at, "the folder's name runs past the header");
        else {
            b->root = b->names;
            memcpy(b->names, h + at + 4, rl);
            b->names[rl] = 0;
            if (memchr(b->root, 0, rl)) rc = fail(err, at + 4, "a name holding a NUL byte");
            pool = rl + 1;
            at += 4 + rl;
        }
    }
    for (uint64_t k = 0; !rc && k < n; k++) {
        if (len - at < 20) {
            rc = fail(err, at, "an entry runs past the header");
            break;
        }
        uint64_t off = ckpt_get_u64le(h + at), size = ckpt_get_u64le(h + at + 8);
        uint32_t l = get_u32(h + at + 16);
        if (l == 0 || l > len - at - 20) {
            rc = fail(err, at + 16, "an entry's name runs past the header");
            break;
        }
        if (memchr(h + at + 20, 0, l)) {
            rc = fail(err, at + 20, "a name holding a NUL byte");
            break;
        }
        uint64_t end;
        if (off != CKPT_NONE && (off < len || size == CKPT_NONE || ckpt_add_overflows(off, size, &end) ||
                                 (src->size != CKPT_NONE && end > src->size))) {
            rc = fail(err, at, "an entry whose bytes lie outside the source");
            break;
        }
        ckpt_bundle_entry *e = &b->entries[b->count++];
        e->name = b->names + pool;
        memcpy(b->names + pool, h + at + 20, l);
        b->names[pool + l] = 0;
        pool += l + 1;
        e->offset = off;
        e->size = size;
        at += 20 + l;
    }
    free(h);
    if (rc) {
        ckpt_bundle_free(b);
        return rc;
    }
    *out = b;
    return 0;
}

void ckpt_bundle_free(ckpt_bundle *b)
{
    if (!b) return;
    free(b->names);
    free(b->entries);
    free(b);
}

const ckpt_bundle_entry *ckpt_bundle_find(const ckpt_bundle *b, const char *name)
{
    for (size_t k = 0; k < b->count; k++)
        if (!strcmp(b->entries[k].name, name)) return &b->entries[k];
    return NULL;
}

void ckpt_bundle_member_source(const ckpt_bundle *b, size_t k, ckpt_source *out, ckpt_window *w)
{
    ckpt_source_window(out, w, b->src, b->entries[k].offset, b->entries[k].size);
}

/* ---- a folder's listing, and the answer's source ---- */

static const char *listing_str(const ckpt_jdoc *d, const ckpt_jv *v)
{
    if (!v || v->kind != CKPT_JV_STRING) return NULL;
    const char *s = ckpt_jv_str(d, v);
    return strlen(s) == v->len ? s : NULL; /* a NUL byte in a name: refused */
}

void ckpt_listing_free(ckpt_listing *l)
{
    free(l->names);
    free(l->sizes);
    ckpt_jdoc_free(&l->doc);
    memset(l, 0, sizeof *l);
}

int ckpt_listing_read(const char *listing, size_t len, const char *form, ckpt_listing *out, ckpt_error *err)
{
    memset(out, 0, sizeof *out);
    size_t at;
    const char *why;
    int rc = ckpt_json_parse(listing, len, 8, &out->doc, &at, &why);
    if (rc == -2) return ckpt_fail_oom(err);
    const ckpt_jv *top = rc ? NULL : &out->doc.v[0];
    const ckpt_jv *name = top && top->kind == CKPT_JV_OBJECT ? ckpt_jv_get(&out->doc, top, "root") : NULL;
    const ckpt_jv *entries = name ? ckpt_jv_get(&out->doc, top, "entries") : NULL;
    out->root = listing_str(&out->doc, name);
    if (!out->root || !entries || entries->kind != CKPT_JV_ARRAY)
        return ckpt_fail(err, NULL, CKPT_E_INVALID_ARGUMENT, CKPT_NONE, 0, "a folder's listing is %s", form);
    out->top = top;
    size_t n = entries->len;
    out->names = calloc(n ? n : 1, sizeof *out->names);
    out->sizes = calloc(n ? n : 1, sizeof *out->sizes);
    if (!out->names || !out->sizes) return ckpt_fail_oom(err);
    size_t k = 0;
    for (const ckpt_jv *e = ckpt_jv_first(&out->doc, entries); e; e = ckpt_jv_next(&out->doc, e), k++) {
        const ckpt_jv *sz = e->kind == CKPT_JV_OBJECT ? ckpt_jv_get(&out->doc, e, "size") : NULL;
        const char *nm = e->kind == CKPT_JV_OBJECT ? listing_str(&out->doc, ckpt_jv_get(&out->doc, e, "name")) : NULL;
        bool size_ok = !sz || sz->kind == CKPT_JV_NULL || (sz->kind == CKPT_JV_NUMBER && sz->is_u64);
        out->names[k] = nm;
        out->sizes[k] = sz && sz->kind == CKPT_JV_NUMBER && sz->is_u64 ? sz->u : CKPT_NONE;
        if (!nm || !*nm || nm[0] == '/' || !size_ok)
            return ckpt_fail(
                err, NULL, CKPT_E_INVALID_ARGUMENT, CKPT_NONE, 0,
                "entry %zu of a folder's listing is not {\"name\": a relative path, \"size\": bytes or null}", k);
    }
    out->count = n;
    return 0;
}

int ckpt_listing_members_json(const ckpt_listing *l, const char *family, const uint8_t *include, strbuf *sb,
                              ckpt_error *err)
{
    ckpt_buffer header = {0};
    uint64_t *offsets = calloc(l->count ? l->count : 1, sizeof *offsets);
    if (!offsets) return ckpt_fail_oom(err);
    int rc = ckpt_bundle_header(family, l->root, l->names, l->sizes, include, l->count, &header, offsets, err);
    if (rc) goto done;
    sb_puts(sb, ",\"members\":[");
    bool first = true;
    uint64_t total = header.len;
    for (size_t j = 0; j < l->count; j++) {
        if (!include[j]) continue;
        sb_puts(sb, first ? "{\"name\":" : ",{\"name\":");
        first = false;
        j_string(sb, l->names[j]);
        sb_puts(sb, ",\"offset\":");
        j_u64(sb, offsets[j]);
        sb_puts(sb, ",\"size\":");
        j_u64(sb, l->sizes[j]);
        sb_putc(sb, '}');
        total = offsets[j] + l->sizes[j];
    }
    sb_puts(sb, "],\"size\":");
    j_u64(sb, total);
    sb_puts(sb, ",\"header\":[");
    for (size_t j = 0; j < header.len; j++) sb_printf(sb, j ? ",%u" : "%u", header.data[j]);
    sb_putc(sb, ']');
done:
    ckpt_buffer_free(&header);
    free(offsets);
    return rc;
}
