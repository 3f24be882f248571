/* The open file: a source parsed once, its report kept, and the slot a caller names resolved to
 * what holds its data (a tied slot's optimizer history is its representative's entry). */
#include "core/file.h"
#include "core/family.h"
#include "core/report.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct ckpt_file {
    ckpt_source src;
    ckpt_report *rep;
    size_t *item_of_slot; /* the item whose slot is i, SIZE_MAX when not read (ckpt_item_of_slot) */
    size_t attached;      /* items given statistics by ckpt_file_attach_stats */
};

ckpt_file *ckpt_open(const ckpt_source *src, const ckpt_inspect_options *opt)
{
    return ckpt_open_named(src, opt, NULL);
}

ckpt_file *ckpt_open_named(const ckpt_source *src, const ckpt_inspect_options *opt, const char *name)
{
    ckpt_file *f = calloc(1, sizeof *f);
    if (!f) return NULL;
    f->src = *src;
    if (!(f->rep = ckpt_parse_file_named(&f->src, NULL, opt, CKPT_READER_DEFAULT, name))) {
        free(f);
        return NULL;
    }
    if (f->rep->family && f->rep->schema_complete && !(f->item_of_slot = ckpt_item_of_slot(f->rep))) {
        ckpt_close(f);
        return NULL;
    }
    return f;
}

size_t *ckpt_item_of_slot(const ckpt_report *rep)
{
    size_t n = ckpt_schema_count(rep->schema), items = ckpt_report_item_count(rep);
    size_t *map = malloc((n ? n : 1) * sizeof *map);
    if (!map) return NULL;
    for (size_t i = 0; i < n; i++) map[i] = SIZE_MAX;
    for (size_t k = 0; k < items; k++) map[ckpt_report_item(rep, k).slot] = k; /* slots < n: checked by the readers */
    return map;
}

int ckpt_progress_held(void *hold, uint64_t done, uint64_t total)
{
    const ckpt_progress_hold *h = hold;
    (void)done, (void)total;
    return h->fn && h->fn(h->ctx, 0, h->total);
}

/* ---- an item's payloads, read again through the source ---- */

static int read_moments(const ckpt_source *src, const ckpt_report *rep, const ckpt_entry_info *e, void *m, void *v,
                        ckpt_error *err)
{
    uint64_t bytes;
    if (ckpt_mul_overflows(e->count, ckpt_dtype_width(rep->dtype), &bytes) || bytes > SIZE_MAX / 2)
        return ckpt_fail_at(err, NULL, CKPT_E_NO_MEMORY, e->offset, 24, e->id,
                            "parameter %llu's moments are too large to copy into memory at once",
                            (unsigned long long)e->id);
    ckpt_reader *r = ckpt_reader_with_prefix(src, rep->family->prefix);
    if (!r) return ckpt_fail_oom(err);
    r->pos = e->m_offset;
    int rc = ckpt_read_exact(r, m, (size_t)bytes, err);
    r->pos = e->v_offset;
    if (!rc) rc = ckpt_read_exact(r, v, (size_t)bytes, err);
    ckpt_reader_free(r);
    return rc;
}

static int moment_stats(const ckpt_source *src, const ckpt_report *rep, const ckpt_entry_info *e,
                        ckpt_progress_fn progress, void *progress_ctx, ckpt_stats **m, ckpt_stats **v, ckpt_error *err)
{
    *m = *v = NULL;
    unsigned width = ckpt_dtype_width(rep->dtype);
    ckpt_reader *r = ckpt_reader_with_prefix(src, rep->family->prefix);
    if (!r) return ckpt_fail_oom(err);
    /* progress over these two payloads only */
    ckpt_scan scan = {progress, progress_ctx, e->m_offset, 2 * e->count * width, 0};
    r->pos = e->m_offset;
    int rc = ckpt_scan_payload(r, &scan, e->count, width, m, err);
    r->pos = e->v_offset;
    if (!rc) rc = ckpt_scan_payload(r, &scan, e->count, width, v, err);
    if (rc) {
        ckpt_stats_free(*m);
        ckpt_stats_free(*v);
        *m = *v = NULL;
    }
    ckpt_reader_free(r);
    return rc;
}

static int read_tensor(const ckpt_source *src, const ckpt_report *rep, const ckpt_tensor_info *t, void *out,
                       ckpt_error *err)
{
    uint64_t bytes;
    if (ckpt_mul_overflows(t->count, ckpt_dtype_width(t->dtype), &bytes) || bytes > SIZE_MAX / 2)
        return ckpt_fail(err, NULL, CKPT_E_NO_MEMORY, t->data_offset, 0,
                         "the tensor is too large to copy into memory at once");
    ckpt_reader *r = ckpt_reader_with_prefix(src, rep->family->prefix);
    if (!r) return ckpt_fail_oom(err);
    r->pos = t->data_offset;
    int rc = ckpt_read_exact(r, out, (size_t)bytes, err);
    ckpt_reader_free(r);
    return rc;
}

static int tensor_stats(const ckpt_source *src, const ckpt_report *rep, const ckpt_tensor_info *t,
                        ckpt_progress_fn progress, void *progress_ctx, ckpt_stats **values, ckpt_error *err)
{
    ckpt_reader *r = ckpt_reader_with_prefix(src, rep->family->prefix);
    if (!r) return ckpt_fail_oom(err);
    const unsigned width = ckpt_dtype_width(t->dtype);
    if (!ckpt_dtype_has_stats(t->dtype)) {
        ckpt_reader_free(r);
        return ckpt_fail(err, NULL, CKPT_E_INVALID_ARGUMENT, CKPT_NONE, 0, "%s values have no statistics",
                         ckpt_dtype_name(t->dtype));
    }
    ckpt_scan scan = {progress, progress_ctx, t->data_offset, width * t->count, 0};
    r->pos = t->data_offset;
    int rc = ckpt_scan_payload_dtype(r, &scan, t->count, t->dtype, values, err);
    ckpt_reader_free(r);
    return rc;
}

void ckpt_close(ckpt_file *f)
{
    if (!f) return;
    ckpt_report_free(f->rep);
    free(f->item_of_slot);
    free(f);
}

const ckpt_report *ckpt_file_report(const ckpt_file *f) { return f->rep; }
const ckpt_source *ckpt_file_source(const ckpt_file *f) { return &f->src; }

/* A request for what the file's family does not hold (`wanted`: "optimizer state", "model
 * tensors"). */
static int wrong_family(const ckpt_report *rep, ckpt_error *err, const char *wanted)
{
    if (!rep->family)
        return ckpt_fail(err, NULL, CKPT_E_NOT_READABLE, CKPT_NONE, 0, "the file is not a TorchLean checkpoint");
    return ckpt_fail(err, NULL, CKPT_E_WRONG_FAMILY, CKPT_NONE, 0, "this is a %s (%s): it holds %s, not %s",
                     rep->family->name, rep->family->magic, rep->family->impl->holds, wanted);
}

int ckpt_file_entry(const ckpt_file *f, uint64_t slot, const ckpt_entry_info **entry, uint64_t *owner, ckpt_error *err)
{
    const ckpt_report *rep = f->rep;
    *entry = NULL;
    if (owner) *owner = CKPT_NONE;
    if (!ckpt_family_has_role(rep->family, CKPT_ROLE_OPTIMIZER)) return wrong_family(rep, err, "optimizer state");
    unsigned long long us = slot;
    if (!rep->schema_complete)
        return ckpt_fail_at(err, NULL, CKPT_E_NOT_READABLE, CKPT_NONE, 0, slot,
                            "parameter %llu cannot be read: the file is invalid before its parameter schema ends", us);
    /* a family whose slots come from its model (PyTorch): none before the pairing */
    if (rep->family->impl->bind && !rep->slots_bound)
        return ckpt_fail(err, NULL, CKPT_E_NO_SUCH_SLOT, CKPT_NONE, 0,
                         "no parameter %llu yet: a %s has no slots of its own until it is paired with the model it "
                         "belongs to (pair(optimizer, model), or --state MODEL); then each slot is a parameter of the "
                         "model",
                         us, rep->family->name);
    const ckpt_schema *s = rep->schema;
    size_t n = ckpt_schema_count(s);
    if (slot >= n)
        return ckpt_fail(err, NULL, CKPT_E_NO_SUCH_SLOT, CKPT_NONE, 0, "no parameter %llu: the file has %zu slot%s", us,
                         n, n == 1 ? "" : "s");
    uint64_t r = ckpt_schema_representative(s, slot);
    if (r == CKPT_NONE)
        return ckpt_fail_at(err, NULL, CKPT_E_FROZEN_SLOT, CKPT_NONE, 0, slot,
                            "parameter %llu is frozen: it has no optimizer state", us);
    if (r >= n || f->item_of_slot[r] == SIZE_MAX)
        return ckpt_fail_at(err, NULL, CKPT_E_NOT_READABLE, CKPT_NONE, 0, slot,
                            "parameter %llu's optimizer entry was not read: the file is invalid before it", us);
    *entry = &rep->entries[f->item_of_slot[r]];
    if (owner) *owner = r;
    return 0;
}

/* An item in fragments holds exp_avg and exp_avg_sq unless its group was saved before its first
 * step (a DeepSpeed group's). */
static int has_moments(const ckpt_item *it, uint64_t slot, ckpt_error *err)
{
    if (it->payloads >= 2 && !strcmp(it->payload[0].name, "exp_avg") && !strcmp(it->payload[1].name, "exp_avg_sq"))
        return 0;
    return ckpt_fail_at(err, NULL, CKPT_E_NOT_READABLE, CKPT_NONE, 0, slot,
                        "parameter %llu has no moments: its group was saved before its first step",
                        (unsigned long long)slot);
}

int ckpt_file_read_moments(const ckpt_file *f, uint64_t slot, void *m, void *v, ckpt_error *err)
{
    const ckpt_entry_info *e;
    TRY(ckpt_file_entry(f, slot, &e, NULL, err));
    /* moments in several runs of the source (a DeepSpeed parameter's fragments): read run by run */
    ckpt_item it = ckpt_report_item(f->rep, (size_t)(e - f->rep->entries));
    if (it.payloads >= 1 && it.payload[0].spans) {
        TRY(has_moments(&it, slot, err));
        uint64_t bytes;
        if (ckpt_mul_overflows(e->count, ckpt_dtype_width(f->rep->dtype), &bytes) || bytes > SIZE_MAX / 2)
            return ckpt_fail_at(err, NULL, CKPT_E_NO_MEMORY, e->offset, 24, e->id,
                                "parameter %llu's moments are too large to copy into memory at once",
                                (unsigned long long)e->id);
        TRY(ckpt_payload_read(&f->src, &it.payload[0], 0, (size_t)e->count, m, err));
        return ckpt_payload_read(&f->src, &it.payload[1], 0, (size_t)e->count, v, err);
    }
    return read_moments(&f->src, f->rep, e, m, v, err);
}

/* Copies of statistics already attached to an item (an open with statistics, a pass run
 * elsewhere): asked again, they are given without reading the payloads again. 0, or -1 out of
 * memory. */
static ckpt_stats *copy_of(const ckpt_stats *s)
{
    size_t n = ckpt_stats_pack_len(s);
    uint64_t *words = malloc(n * sizeof *words);
    if (!words) return NULL;
    ckpt_stats_pack(s, words);
    ckpt_stats *c = ckpt_stats_unpack(words, n);
    free(words);
    return c;
}

static int copies(ckpt_stats *const *have[2], unsigned n, ckpt_stats **out[2], ckpt_error *err)
{
    for (unsigned q = 0; q < n; q++) {
        if ((*out[q] = copy_of(*have[q]))) continue;
        for (unsigned p = 0; p < q; p++) {
            ckpt_stats_free(*out[p]);
            *out[p] = NULL;
        }
        return ckpt_fail_oom(err);
    }
    return 0;
}

int ckpt_file_moment_stats(const ckpt_file *f, uint64_t slot, ckpt_progress_fn progress, void *progress_ctx,
                           ckpt_stats **m, ckpt_stats **v, ckpt_error *err)
{
    const ckpt_entry_info *e;
    *m = *v = NULL;
    TRY(ckpt_file_entry(f, slot, &e, NULL, err));
    if (e->m && e->v) return copies((ckpt_stats *const *[2]){&e->m, &e->v}, 2, (ckpt_stats * *[2]){m, v}, err);
    /* moments in several runs of the source (a DeepSpeed parameter's fragments): its item's */
    size_t k = (size_t)(e - f->rep->entries);
    ckpt_item it = ckpt_report_item(f->rep, k);
    if (it.payloads >= 1 && it.payload[0].spans) {
        TRY(has_moments(&it, slot, err));
        return ckpt_file_item_stats(f, k, progress, progress_ctx, m, v, err);
    }
    return moment_stats(&f->src, f->rep, e, progress, progress_ctx, m, v, err);
}

int ckpt_file_tensor(const ckpt_file *f, uint64_t i, const ckpt_tensor_info **tensor, ckpt_error *err)
{
    const ckpt_report *rep = f->rep;
    *tensor = NULL;
    if (!ckpt_family_has_role(rep->family, CKPT_ROLE_MODEL)) return wrong_family(rep, err, "model tensors");
    unsigned long long ui = i;
    if (rep->schema_complete && i >= rep->tensors_len)
        return ckpt_fail(err, NULL, CKPT_E_NO_SUCH_SLOT, CKPT_NONE, 0, "no tensor %llu: the file has %zu tensor%s", ui,
                         rep->tensors_len, rep->tensors_len == 1 ? "" : "s");
    if (i >= rep->tensors_len)
        return ckpt_fail_at(err, NULL, CKPT_E_NOT_READABLE, CKPT_NONE, 0, i,
                            "tensor %llu was not read: the file is invalid before it", ui);
    *tensor = &rep->tensors[i];
    return 0;
}

int ckpt_file_read_tensor(const ckpt_file *f, uint64_t i, void *out, ckpt_error *err)
{
    const ckpt_tensor_info *t;
    TRY(ckpt_file_tensor(f, i, &t, err));
    return read_tensor(&f->src, f->rep, t, out, err);
}

int ckpt_file_tensor_stats(const ckpt_file *f, uint64_t i, ckpt_progress_fn progress, void *progress_ctx,
                           ckpt_stats **values, ckpt_error *err)
{
    const ckpt_tensor_info *t;
    *values = NULL;
    TRY(ckpt_file_tensor(f, i, &t, err));
    if (t->values) return copies((ckpt_stats *const *[2]){&t->values, NULL}, 1, (ckpt_stats * *[2]){values, NULL}, err);
    return tensor_stats(&f->src, f->rep, t, progress, progress_ctx, values, err);
}

int ckpt_file_layout(const ckpt_file *f, ckpt_expected *layout, ckpt_error *err)
{
    const ckpt_report *rep = f->rep;
    TRY(ckpt_require_items(rep, err));
    if (!rep->family || !rep->schema_complete)
        return ckpt_fail(err, NULL, CKPT_E_NOT_READABLE, CKPT_NONE, 0,
                         "the file is invalid before its layout is complete");
    /* the moments' dtype, the configuration and the counter are an optimizer header's: a layout
     * without one states none of them */
    bool opt = rep->has_config;
    *layout = (ckpt_expected){rep->schema,
                              opt ? rep->dtype : CKPT_DTYPE_ANY,
                              opt ? &rep->config : NULL,
                              opt ? rep->tladamf.counter_state : -1,
                              CKPT_FAMILY_ANY,
                              CKPT_READER_DEFAULT};
    return 0;
}

/* ---- statistics gathered apart ---- */

int ckpt_file_item_stats(const ckpt_file *f, size_t k, ckpt_progress_fn progress, void *progress_ctx, ckpt_stats **a,
                         ckpt_stats **b, ckpt_error *err)
{
    const ckpt_report *rep = f->rep;
    *a = *b = NULL;
    if (!rep->family) return wrong_family(rep, err, "optimizer state");
    size_t items = ckpt_report_item_count(rep);
    if (k >= items)
        return ckpt_fail(err, NULL, CKPT_E_INVALID_ARGUMENT, CKPT_NONE, 0, "no item %zu: the file has %zu", k, items);
    ckpt_item it = ckpt_report_item(rep, k);
    const unsigned payloads = it.payloads < 2 ? (unsigned)it.payloads : 2;
    ckpt_stats **out[2] = {a, b};
    if (*it.payload[0].stats)
        return copies((ckpt_stats *const *[2]){it.payload[0].stats, it.payload[1].stats}, payloads, out, err);
    if (!ckpt_dtype_has_stats(it.payload[0].dtype))
        return ckpt_fail(err, NULL, CKPT_E_INVALID_ARGUMENT, CKPT_NONE, 0, "%s values have no statistics",
                         ckpt_dtype_name(it.payload[0].dtype));
    ckpt_reader *r = ckpt_reader_with_prefix(&f->src, rep->family->prefix);
    if (!r) return ckpt_fail_oom(err);
    /* progress over the item's payloads together (they follow each other in the file) */
    ckpt_scan scan = {progress, progress_ctx, it.payload[0].offset, ckpt_file_item_bytes(f, k), 0};
    int rc = 0;
    for (unsigned q = 0; q < payloads && !rc; q++) {
        const ckpt_payload *x = &it.payload[q];
        if (x->spans) { /* fragments: progress by bytes scanned (their offsets are not in order) */
            scan.start = 0;
            rc = ckpt_scan_spans(r, &scan, x->spans, x->spans_len, x->dtype, out[q], err);
            continue;
        }
        r->pos = x->offset;
        rc = ckpt_scan_payload_dtype(r, &scan, x->count, x->dtype, out[q], err);
    }
    ckpt_reader_free(r);
    if (rc) {
        ckpt_stats_free(*a);
        ckpt_stats_free(*b);
        *a = *b = NULL;
    }
    return rc;
}

uint64_t ckpt_file_item_bytes(const ckpt_file *f, size_t k)
{
    const ckpt_report *rep = f->rep;
    if (!rep->family || k >= ckpt_report_item_count(rep)) return CKPT_NONE;
    ckpt_item it = ckpt_report_item(rep, k);
    /* a read item's payloads are in the file: their size fits 64 bits */
    uint64_t bytes = 0;
    for (size_t q = 0; q < it.payloads; q++) bytes += ckpt_dtype_width(it.payload[q].dtype) * it.payload[q].count;
    return bytes;
}

int ckpt_file_attach_stats(ckpt_file *f, size_t k, ckpt_stats *a, ckpt_stats *b, ckpt_error *err)
{
    ckpt_report *rep = f->rep;
    size_t items = ckpt_report_item_count(rep);
    /* the payloads ckpt_file_item_stats gives statistics of: the first two (a PyTorch item's
     * max_exp_avg_sq, a third, has none apart) */
    size_t held = k < items ? ckpt_report_item(rep, k).payloads : 0;
    unsigned payloads = held < 2 ? (unsigned)held : 2;
    /* statistics of another item (a file changed under a pass run elsewhere) are refused */
    if (k >= items || !a || (payloads == 2) != (b != NULL) || a->count != ckpt_report_item(rep, k).count ||
        (b && b->count != a->count)) {
        ckpt_stats_free(a);
        ckpt_stats_free(b);
        return ckpt_fail(err, NULL, CKPT_E_INVALID_ARGUMENT, CKPT_NONE, 0,
                         "invalid arguments to ckpt_file_attach_stats");
    }
    ckpt_item it = ckpt_report_item(rep, k);
    ckpt_stats *given[2] = {a, b};
    if (!*it.payload[0].stats) f->attached++;
    for (unsigned q = 0; q < payloads; q++) {
        ckpt_stats_free(*it.payload[q].stats);
        *it.payload[q].stats = given[q];
    }
    *it.unhealthy = rep->family->impl->unhealthy(a, b);
    if (f->attached == items && !rep->statistics) {
        rep->statistics = true;
        ckpt_report_warn_payloads(rep);
    }
    return 0;
}

int ckpt_payload_read(const ckpt_source *src, const ckpt_payload *x, uint64_t first, size_t n, void *out,
                      ckpt_error *err)
{
    const unsigned w = ckpt_dtype_width(x->dtype);
    if (!x->spans) return ckpt_read_at(src, x->offset + first * w, out, n * w, "the source", err);
    uint8_t *o = out;
    uint64_t start = 0; /* the span's first element in the payload */
    for (size_t j = 0; j < x->spans_len && n; j++) {
        const ckpt_span *sp = &x->spans[j];
        if (first >= start + sp->count) {
            start += sp->count;
            continue;
        }
        uint64_t in = first - start, take = sp->count - in < n ? sp->count - in : n;
        TRY(ckpt_read_at(src, sp->offset + in * w, o, (size_t)take * w, "the source", err));
        o += take * w;
        first += take;
        n -= (size_t)take;
        start += sp->count;
    }
    if (n)
        return ckpt_fail(err, NULL, CKPT_E_INVALID_ARGUMENT, CKPT_NONE, 0, "elements past the payload's %llu",
                         (unsigned long long)start);
    return 0;
}

/* ---- slots bound by pairing (analyses/pair.c) ---- */

ckpt_report *ckpt_file_report_mut(ckpt_file *f) { return f->rep; }

int ckpt_file_refresh_items(ckpt_file *f, ckpt_error *err)
{
    size_t *map = ckpt_item_of_slot(f->rep);
    if (!map) return ckpt_fail_oom(err);
    free(f->item_of_slot);
    f->item_of_slot = map;
    return 0;
}

int ckpt_file_view_tensors(ckpt_file *f, const size_t *order, size_t k, ckpt_error *err)
{
    ckpt_report *rep = f->rep;
    size_t n = rep->tensors_len;
    ckpt_tensor_info *t = malloc((k ? k : 1) * sizeof *t);
    uint8_t *kept = calloc(n ? n : 1, 1);
    ckpt_schema *s = ckpt_schema_empty();
    bool ok = t && s && kept;
    for (size_t j = 0; ok && j < k; j++) {
        t[j] = rep->tensors[order[j]];
        kept[order[j]] = 1;
        ok = ckpt_schema_push_slot(s);
        const uint64_t *dims = ckpt_schema_dims(rep->schema, order[j]);
        for (uint64_t d = 0; ok && d < ckpt_schema_rank(rep->schema, order[j]); d++)
            ok = ckpt_schema_push_dim(s, dims[d]);
    }
    if (!ok) {
        free(t);
        free(kept);
        ckpt_schema_free(s);
        return ckpt_fail_oom(err);
    }
    for (size_t j = 0; j < n; j++)
        if (!kept[j]) {
            ckpt_stats_free(rep->tensors[j].values);
            free(rep->tensors[j].name);
        }
    free(kept);
    free(rep->tensors);
    rep->tensors = t;
    rep->tensors_len = rep->tensors_cap = k;
    ckpt_schema_free(rep->schema);
    rep->schema = s;
    rep->schema_declared_count = k;
    return ckpt_file_refresh_items(f, err);
}
