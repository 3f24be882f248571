/* The safetensors family (format.md 10.1): a model-state file of another shape than TorchLean's.
 * A u64 little-endian header length N (at most 100,000,000), N bytes of UTF-8 JSON
 * {name: {"dtype", "shape", "data_offsets": [begin, end]}, "__metadata__": {str: str}?}, then
 * the data: offsets relative to its start, the tensors without gaps or overlaps covering it
 * exactly, end - begin = product(shape) x the dtype's width. Every violation is refused with a
 * "safetensors: ..." text naming the tensor (its index in header order is error.slot).
 *
 * Opening reads the header only (8 + N bytes, nothing of the data; statistics read the data).
 * The tensors are the report's, in header order, each with its name and dtype; the schema holds
 * their shapes, as a state file's does. This module is the whole family: the probe, the reader,
 * its report members and its descriptor. */
#include "families/state/state.h"
#include "base/json_read.h"

#include <stdio.h>
#include <stdlib.h>

#define P "safetensors"
#define HEADER_MAX 100000000ull
/* The header is three levels deep (root, tensor, shape); a little room for metadata that breaks
 * the rules (and is refused) without recursion that a hostile header could deepen. */
#define DEPTH_MAX 16

typedef struct st_data {
    uint64_t header_length;
    char *metadata; /* the __metadata__ object as JSON, or NULL when absent */
} st_data;

static void st_free(ckpt_report *rep)
{
    st_data *d = rep->family_data;
    if (!d) return;
    free(d->metadata);
    free(d);
}

/* u64 N, then the JSON object's "{". N may be anything from 2 (too large, or past the file's
 * end: refused with its own text, as safetensors itself refuses it); eight bytes of text are no
 * length (a text file whose ninth character is "{"): TorchLean's magics come first in the table. */
static bool st_probe(const ckpt_family *f, const uint8_t *head, size_t n, uint64_t size)
{
    (void)f;
    (void)size;
    if (n < 9 || head[8] != '{' || ckpt_get_u64le(head) < 2) return false;
    for (size_t k = 0; k < 8; k++)
        if (head[k] < 0x20 || head[k] > 0x7e) return true;
    return false;
}

static const char *st_hint(const uint8_t *head, size_t n)
{
    return st_probe(NULL, head, n, CKPT_NONE) ? "this is a safetensors file, a model state: ckptscope inspect reads it"
                                              : NULL;
}

/* A name as a JSON string, for the texts ("model.embed.weight" with its quotes). */
static void quoted(strbuf *sb, const char *name) { j_string(sb, name); }

static int fail_named(ckpt_error *err, int code, uint64_t offset, uint64_t slot, const char *name, const char *fmt,
                      const char *detail)
{
    strbuf sb = {0};
    quoted(&sb, name);
    if (sb.failed) return ckpt_fail_oom(err);
    int rc = ckpt_fail_at(err, P, code, offset, 0, slot, fmt, sb.data, detail);
    sb_free(&sb);
    return rc;
}

/* Read the header's N bytes: those the front door's first read holds come from the reader's
 * buffer, the rest straight from the source (a refill would read ahead into the data). */
static int read_header(ckpt_reader *r, uint64_t n, char *out, ckpt_error *err)
{
    uint64_t have = 0;
    if (r->buf_pos == 0 && r->buf_len > 8) {
        have = r->buf_len - 8 < n ? r->buf_len - 8 : n;
        memcpy(out, r->buf + 8, (size_t)have);
    }
    while (have < n) {
        size_t got = r->src->read(r->src->ctx, 8 + have, out + have, (size_t)(n - have));
        if (got == CKPT_READ_ERROR)
            return ckpt_fail(err, NULL, CKPT_E_IO, 8 + have, 0, "could not read the header at byte %llu",
                             (unsigned long long)(8 + have));
        if (got == 0)
            return ckpt_fail(err, P, CKPT_E_TRUNCATED, 8, have, "truncated checkpoint (wanted %llu bytes, got %llu)",
                             (unsigned long long)n, (unsigned long long)have);
        have += got;
    }
    return 0;
}

/* One tensor's entry: dtype, shape and data_offsets, checked, into the report. */
typedef struct st_tensor {
    uint64_t begin, end;
    size_t index;
} st_tensor;

static int read_entry(ckpt_parse *p, const ckpt_jdoc *doc, const ckpt_jv *key, const ckpt_jv *v, size_t i,
                      uint64_t data_start, st_tensor *out)
{
    ckpt_report *rep = p->rep;
    ckpt_error *err = p->err;
    const char *name = ckpt_jv_str(doc, key);
    const uint64_t at = 8 + key->at;
    const int T = CKPT_E_SAFETENSORS_TENSOR;
    /* a name is a C string from here on (texts, export, the names of --names) */
    if (strlen(name) != key->len) return fail_named(err, T, at, i, name, "tensor %s has a name holding \\u0000%s", "");
    if (v->kind != CKPT_JV_OBJECT) return fail_named(err, T, 8 + v->at, i, name, "tensor %s is not an object%s", "");
    /* each field once: safetensors' serde refuses a duplicate field (which one a reader takes is
     * its own affair) */
    static const char *const fields[] = {"dtype", "shape", "data_offsets"};
    for (size_t f = 0; f < 3; f++) {
        const ckpt_jv *seen = NULL;
        for (const ckpt_jv *k = ckpt_jv_first(doc, v); k; k = ckpt_jv_next(doc, ckpt_jv_next(doc, k))) {
            if (strcmp(ckpt_jv_str(doc, k), fields[f]) || strlen(fields[f]) != k->len) continue;
            if (seen) {
                char detail[32];
                snprintf(detail, sizeof detail, "\"%s\"", fields[f]);
                return fail_named(err, T, 8 + k->at, i, name, "tensor %s has %s twice", detail);
            }
            seen = k;
        }
    }
    const ckpt_jv *dt = ckpt_jv_get(doc, v, "dtype"), *shape = ckpt_jv_get(doc, v, "shape"),
                  *offs = ckpt_jv_get(doc, v, "data_offsets");
    if (!dt || dt->kind != CKPT_JV_STRING)
        return fail_named(err, T, 8 + v->at, i, name, "tensor %s has no dtype%s", "");
    int dtype = ckpt_dtype_of_safetensors_name(ckpt_jv_str(doc, dt));
    if (dtype < 0) {
        strbuf d = {0};
        j_string(&d, ckpt_jv_str(doc, dt));
        int rc = d.failed ? ckpt_fail_oom(err)
                          : fail_named(err, T, 8 + dt->at, i, name, "tensor %s has an unknown dtype %s", d.data);
        sb_free(&d);
        return rc;
    }
    if (!shape || shape->kind != CKPT_JV_ARRAY)
        return fail_named(err, T, 8 + v->at, i, name, "tensor %s has no shape%s", "");
    for (const ckpt_jv *d = ckpt_jv_first(doc, shape); d; d = ckpt_jv_next(doc, d))
        if (d->kind != CKPT_JV_NUMBER || !d->is_u64)
            return fail_named(err, T, 8 + d->at, i, name,
                              "tensor %s has a shape that is not a list of integers from 0%s", "");
    /* the element count and the byte count as safetensors computes them: dimension by dimension,
     * then the width, each product within 64 bits ([2^32, 2^32, 0] overflows before its zero) */
    uint64_t product = 1;
    bool over = false;
    for (const ckpt_jv *d = ckpt_jv_first(doc, shape); d && !over; d = ckpt_jv_next(doc, d))
        over = ckpt_mul_overflows(product, d->u, &product);
    if (over || ckpt_mul_overflows(product, ckpt_dtype_width(dtype), &product)) {
        strbuf qn = {0}, st = {0};
        quoted(&qn, name);
        sb_putc(&st, '[');
        for (const ckpt_jv *d = ckpt_jv_first(doc, shape); d; d = ckpt_jv_next(doc, d))
            sb_printf(&st, d == ckpt_jv_first(doc, shape) ? "%llu" : ", %llu", (unsigned long long)d->u);
        sb_putc(&st, ']');
        int rc = qn.failed || st.failed
                     ? ckpt_fail_oom(err)
                     : ckpt_fail_at(err, P, CKPT_E_SAFETENSORS_SIZE, 8 + shape->at, 0, i,
                                    "tensor %s has shape %s of %s, whose size passes 2^64 - 1 bytes as safetensors "
                                    "multiplies it (dimension by dimension, then the width)",
                                    qn.data, st.data, ckpt_dtype_safetensors_name(dtype));
        sb_free(&qn);
        sb_free(&st);
        return rc;
    }
    const ckpt_jv *b = offs && offs->kind == CKPT_JV_ARRAY ? ckpt_jv_first(doc, offs) : NULL;
    const ckpt_jv *e = b ? ckpt_jv_next(doc, b) : NULL;
    if (!offs) return fail_named(err, T, 8 + v->at, i, name, "tensor %s has no data_offsets%s", "");
    if (offs->len != 2 || b->kind != CKPT_JV_NUMBER || !b->is_u64 || e->kind != CKPT_JV_NUMBER || !e->is_u64 ||
        b->u > e->u)
        return fail_named(err, T, 8 + offs->at, i, name,
                          "tensor %s has data_offsets that are not [begin, end] with begin <= end%s", "");
    if (e->u > UINT64_MAX - data_start)
        return fail_named(err, T, 8 + offs->at, i, name, "tensor %s has data_offsets past 2^64 bytes%s", "");

    /* into the report: the shape as a slot, the tensor with its name and dtype */
    if (!ckpt_schema_push_slot(rep->schema)) return ckpt_fail_oom(err);
    for (const ckpt_jv *d = ckpt_jv_first(doc, shape); d; d = ckpt_jv_next(doc, d))
        if (!ckpt_schema_push_dim(rep->schema, d->u)) return ckpt_fail_oom(err);
    ckpt_tensor_info t = {0};
    t.dtype = dtype;
    t.offset = at;
    t.data_offset = data_start + b->u; /* the offsets are below 2^64 - data_start: checked by the caller's sizes */
    bool too_big;
    uint64_t count = ckpt_schema_size(rep->schema, i, &too_big), bytes;
    const unsigned width = ckpt_dtype_width(dtype);
    if (too_big || ckpt_mul_overflows(count, width, &bytes) || bytes != e->u - b->u) {
        strbuf qn = {0}, shape_text = {0}, n = {0};
        quoted(&qn, name);
        ckpt_shape_print_list(&shape_text, ckpt_schema_dims(rep->schema, i), ckpt_schema_rank(rep->schema, i));
        ckpt_shape_size_print(&n, ckpt_schema_dims(rep->schema, i), ckpt_schema_rank(rep->schema, i));
        int rc;
        if (qn.failed || shape_text.failed || n.failed) rc = ckpt_fail_oom(err);
        else
            rc = ckpt_fail_at(err, P, CKPT_E_SAFETENSORS_SIZE, 8 + offs->at, 0, i,
                              "tensor %s holds %llu bytes (data_offsets [%llu, %llu]), but shape %s of %s needs %s "
                              "elements of %u bytes",
                              qn.data, (unsigned long long)(e->u - b->u), (unsigned long long)b->u,
                              (unsigned long long)e->u, shape_text.data, ckpt_dtype_safetensors_name(dtype), n.data,
                              width);
        sb_free(&qn);
        sb_free(&shape_text);
        sb_free(&n);
        return rc;
    }
    t.count = count;
    if (!(t.name = malloc(key->len + 1))) return ckpt_fail_oom(err);
    memcpy(t.name, name, key->len + 1);
    if (!ckpt_report_push_tensor(rep, &t)) {
        free(t.name);
        return ckpt_fail_oom(err);
    }
    *out = (st_tensor){b->u, e->u, i};
    return 0;
}

/* Names appear once: sorted copies of the name pointers, neighbours compared. */
static int cmp_name(const void *a, const void *b)
{
    const ckpt_tensor_info *x = *(ckpt_tensor_info *const *)a, *y = *(ckpt_tensor_info *const *)b;
    int c = strcmp(x->name, y->name);
    return c ? c : (x < y ? -1 : x > y);
}

static int cmp_begin(const void *a, const void *b)
{
    const st_tensor *x = a, *y = b;
    if (x->begin != y->begin) return x->begin < y->begin ? -1 : 1;
    if (x->end != y->end) return x->end < y->end ? -1 : 1;
    return x->index < y->index ? -1 : x->index > y->index;
}

static int check_names(ckpt_report *rep, ckpt_error *err)
{
    size_t n = rep->tensors_len;
    if (n < 2) return 0;
    ckpt_tensor_info **by = malloc(n * sizeof *by);
    if (!by) return ckpt_fail_oom(err);
    for (size_t k = 0; k < n; k++) by[k] = &rep->tensors[k];
    qsort(by, n, sizeof *by, cmp_name);
    int rc = 0;
    for (size_t k = 1; k < n && !rc; k++)
        if (!strcmp(by[k]->name, by[k - 1]->name))
            rc = fail_named(err, CKPT_E_SAFETENSORS_TENSOR, by[k]->offset, (uint64_t)(by[k] - rep->tensors),
                            by[k]->name, "tensor %s appears twice in the header%s", "");
    free(by);
    return rc;
}

/* The data, in the order of the offsets: no gap, no overlap, the end at the data's end (when the
 * file's size is known). */
static int check_layout(ckpt_report *rep, st_tensor *t, size_t n, uint64_t data_start, ckpt_error *err)
{
    qsort(t, n, sizeof *t, cmp_begin);
    const int L = CKPT_E_SAFETENSORS_LAYOUT;
    uint64_t reached = 0;
    for (size_t k = 0; k < n; k++) {
        const char *name = rep->tensors[t[k].index].name;
        uint64_t at = rep->tensors[t[k].index].offset;
        if (t[k].begin > reached) {
            char detail[64];
            snprintf(detail, sizeof detail, "%llu to %llu", (unsigned long long)reached,
                     (unsigned long long)t[k].begin);
            return fail_named(err, L, data_start + reached, t[k].index, name,
                              "the data before tensor %s has bytes of no tensor (%s)", detail);
        }
        if (t[k].begin < reached) {
            strbuf prev = {0};
            quoted(&prev, rep->tensors[t[k - 1].index].name);
            int rc = prev.failed ? ckpt_fail_oom(err)
                                 : fail_named(err, L, at, t[k].index, name, "tensor %s overlaps tensor %s", prev.data);
            sb_free(&prev);
            return rc;
        }
        reached = t[k].end;
    }
    if (rep->size == CKPT_NONE) return 0;
    uint64_t data = rep->size - data_start;
    if (reached > data) {
        const char *name = rep->tensors[t[n - 1].index].name;
        char detail[64];
        snprintf(detail, sizeof detail, "%llu bytes", (unsigned long long)data);
        return fail_named(err, L, rep->tensors[t[n - 1].index].offset, t[n - 1].index, name,
                          "tensor %s ends past the data's end (the data holds %s)", detail);
    }
    if (reached < data) {
        if (!n)
            return ckpt_fail(err, P, L, data_start, data, "the data has bytes of no tensor (0 to %llu)",
                             (unsigned long long)data);
        char detail[64];
        snprintf(detail, sizeof detail, "%llu to %llu", (unsigned long long)reached, (unsigned long long)data);
        return fail_named(err, L, data_start + reached, t[n - 1].index, rep->tensors[t[n - 1].index].name,
                          "the data after tensor %s has bytes of no tensor (%s)", detail);
    }
    return 0;
}

/* __metadata__: an object of strings, kept as its JSON for the report. */
static int read_metadata(const ckpt_jdoc *doc, const ckpt_jv *v, st_data *d, ckpt_error *err)
{
    if (d->metadata)
        return ckpt_fail(err, P, CKPT_E_SAFETENSORS_HEADER, 8 + v->at, 0, "__metadata__ appears twice in the header");
    if (v->kind != CKPT_JV_OBJECT)
        return ckpt_fail(err, P, CKPT_E_SAFETENSORS_HEADER, 8 + v->at, 0, "__metadata__ is not an object of strings");
    strbuf sb = {0};
    sb_putc(&sb, '{');
    for (const ckpt_jv *k = ckpt_jv_first(doc, v); k; k = ckpt_jv_next(doc, ckpt_jv_next(doc, k))) {
        const ckpt_jv *val = ckpt_jv_next(doc, k);
        if (val->kind != CKPT_JV_STRING) {
            sb_free(&sb);
            return ckpt_fail(err, P, CKPT_E_SAFETENSORS_HEADER, 8 + val->at, 0,
                             "__metadata__ is not an object of strings");
        }
        if (sb.len > 1) sb_putc(&sb, ',');
        j_string(&sb, ckpt_jv_str(doc, k));
        sb_putc(&sb, ':');
        j_string(&sb, ckpt_jv_str(doc, val));
    }
    sb_putc(&sb, '}');
    if (!(d->metadata = sb_take(&sb))) return ckpt_fail_oom(err);
    return 0;
}

/* Statistics of every tensor whose dtype has them, in data order (one sweep of the data). */
static int scan_tensors(ckpt_parse *p, const st_tensor *t, size_t n)
{
    ckpt_report *rep = p->rep;
    for (size_t k = 0; k < n; k++) {
        ckpt_tensor_info *ti = &rep->tensors[t[k].index];
        if (!ckpt_dtype_has_stats(ti->dtype)) continue;
        p->r->pos = ti->data_offset;
        TRY(ckpt_scan_payload_dtype(p->r, &p->scan, ti->count, ti->dtype, &ti->values, p->err));
        ti->unhealthy = ckpt_tensor_unhealthy(ti->values, NULL);
    }
    return 0;
}

static int st_parse(ckpt_parse *p)
{
    ckpt_reader *r = p->r;
    ckpt_report *rep = p->rep;
    ckpt_error *err = p->err;
    const uint8_t *head;
    ckpt_reader_head(r, &head); /* the probe saw its first 9 bytes */
    uint64_t n = ckpt_get_u64le(head);
    st_data *d = calloc(1, sizeof *d);
    if (!d) return ckpt_fail_oom(err);
    rep->family_data = d;
    d->header_length = n;
    if (n > HEADER_MAX)
        return ckpt_fail(err, P, CKPT_E_SAFETENSORS_HEADER, 0, 8, "header length %llu exceeds 100000000 bytes",
                         (unsigned long long)n);
    if (rep->size != CKPT_NONE && n > rep->size - 8)
        return ckpt_fail(err, P, CKPT_E_TRUNCATED, 8, rep->size - 8,
                         "truncated checkpoint (wanted %llu bytes, got %llu)", (unsigned long long)n,
                         (unsigned long long)(rep->size - 8));
    char *text = malloc((size_t)n);
    if (!text) return ckpt_fail_oom(err);
    int rc = read_header(r, n, text, err);
    ckpt_jdoc doc;
    size_t at = 0;
    const char *why = NULL;
    if (!rc) {
        int jr = ckpt_json_parse(text, (size_t)n, DEPTH_MAX, &doc, &at, &why);
        if (jr == -2) rc = ckpt_fail_oom(err);
        else if (jr)
            rc = ckpt_fail(err, P, CKPT_E_SAFETENSORS_HEADER, 8 + at, 0,
                           "the header is not JSON (at byte %llu of the header: %s)", (unsigned long long)at, why);
        else if (doc.v[0].kind != CKPT_JV_OBJECT)
            rc = ckpt_fail(err, P, CKPT_E_SAFETENSORS_HEADER, 8, 0, "the header is not a JSON object");
    } else {
        memset(&doc, 0, sizeof doc);
    }
    free(text);
    st_tensor *t = NULL;
    size_t count = 0;
    if (!rc) {
        const uint64_t data_start = 8 + n;
        rep->schema_offset = 8;
        if (!(rep->schema = ckpt_schema_empty()) || !(t = malloc((doc.v[0].len ? doc.v[0].len : 1) * sizeof *t)))
            rc = ckpt_fail_oom(err);
        for (const ckpt_jv *k = rc ? NULL : ckpt_jv_first(&doc, &doc.v[0]); k && !rc;
             k = ckpt_jv_next(&doc, ckpt_jv_next(&doc, k))) {
            const ckpt_jv *v = ckpt_jv_next(&doc, k);
            if (!strcmp(ckpt_jv_str(&doc, k), "__metadata__")) rc = read_metadata(&doc, v, d, err);
            else if (!(rc = read_entry(p, &doc, k, v, count, data_start, &t[count]))) count++;
        }
        rep->schema_declared_count = count;
        if (!rc) rc = check_names(rep, err);
        if (!rc) {
            rep->schema_complete = true;
            /* the file's dtype: its tensors', when they all share one */
            rep->dtype = count ? rep->tensors[0].dtype : CKPT_DTYPE_ANY;
            for (size_t k = 1; k < count; k++)
                if (rep->tensors[k].dtype != rep->dtype) rep->dtype = CKPT_DTYPE_ANY;
            rc = check_layout(rep, t, count, data_start, err);
        }
        if (!rc && (p->flags & CKPT_INSPECT_STATS)) {
            p->scan.start = data_start;
            p->scan.total = rep->size == CKPT_NONE ? CKPT_NONE : rep->size - data_start;
            rc = scan_tensors(p, t, count);
        }
    }
    if (rc && err->slot == CKPT_NONE && rc == CKPT_E_NO_MEMORY) ckpt_drop_layout_if_oom(rep);
    free(t);
    ckpt_jdoc_free(&doc);
    return rc;
}

/* The report's members: a state file's, with the container. */
static void st_json(ckpt_jw *w, const ckpt_report *rep, bool bulk)
{
    ckpt_report_json_model(w, rep, bulk);
    strbuf *sb = ckpt_jw_text(w);
    const st_data *d = rep->family_data;
    sb_puts(sb, ",\"container\":{\"format\":\"safetensors\",\"headerLength\":");
    if (d) j_u64(sb, d->header_length);
    else sb_puts(sb, "null");
    sb_puts(sb, ",\"metadata\":");
    sb_puts(sb, d && d->metadata ? d->metadata : "null");
    sb_putc(sb, '}');
}

static const struct ckpt_family_impl safetensors_impl = {
    .probe = st_probe,
    .parse = st_parse,
    .payloads = 1,
    .item_count = ckpt_state_item_count,
    .item = ckpt_state_item,
    .unhealthy = ckpt_tensor_unhealthy,
    .json_body = st_json,
    .release = st_free,
    .hint = st_hint,
    .unordered = "model.safetensors keeps no module order: same-shaped parameters cannot be told apart (give "
                 "--names NAMES.json)",
    .holds = "model tensors",
    /* no hint_not: a family without a magic is named by hints.c's foreign_format */
};

const ckpt_family ckpt_family_safetensors = {
    CKPT_FAMILY_SAFETENSORS, "safetensors",  "safetensors file", "safetensors", 0, 0,
    CKPT_ROLE_MODEL,         CKPT_DTYPE_ANY, &safetensors_impl};
