/* The open file: a source parsed once, its report kept, and the slot a caller names resolved to
 * what holds its data (a tied slot's optimizer history is its representative's entry). */
#include "core/internal.h"

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
    ckpt_file *f = calloc(1, sizeof *f);
    if (!f) return NULL;
    f->src = *src;
    if (!(f->rep = ckpt_parse_file(&f->src, NULL, opt))) {
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

int ckpt_read_at(const ckpt_source *src, uint64_t offset, void *buf, size_t n, const char *what, ckpt_error *err)
{
    size_t got = src->read(src->ctx, offset, buf, n);
    if (got == CKPT_READ_ERROR || got != n)
        return ckpt_fail(err, NULL, CKPT_E_IO, offset, 0, "could not read %s at byte %llu", what,
                         (unsigned long long)offset);
    return 0;
}

int ckpt_progress_held(void *hold, uint64_t done, uint64_t total)
{
    const ckpt_progress_hold *h = hold;
    (void)done, (void)total;
    return h->fn && h->fn(h->ctx, 0, h->total);
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

int ckpt_file_read_moments(const ckpt_file *f, uint64_t slot, void *m, void *v, ckpt_error *err)
{
    const ckpt_entry_info *e;
    TRY(ckpt_file_entry(f, slot, &e, NULL, err));
    return ckpt_adam_read_moments(&f->src, f->rep, e, m, v, err);
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
    return ckpt_adam_moment_stats(&f->src, f->rep, e, progress, progress_ctx, m, v, err);
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
    return ckpt_state_read_tensor(&f->src, f->rep, t, out, err);
}

int ckpt_file_tensor_stats(const ckpt_file *f, uint64_t i, ckpt_progress_fn progress, void *progress_ctx,
                           ckpt_stats **values, ckpt_error *err)
{
    const ckpt_tensor_info *t;
    *values = NULL;
    TRY(ckpt_file_tensor(f, i, &t, err));
    if (t->values) return copies((ckpt_stats *const *[2]){&t->values, NULL}, 1, (ckpt_stats * *[2]){values, NULL}, err);
    return ckpt_state_tensor_stats(&f->src, f->rep, t, progress, progress_ctx, values, err);
}

int ckpt_file_layout(const ckpt_file *f, ckpt_expected *layout, ckpt_error *err)
{
    const ckpt_report *rep = f->rep;
    TRY(ckpt_require_schema(rep, err));
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
        r->pos = it.payload[q].offset;
        rc = ckpt_scan_payload_dtype(r, &scan, it.payload[q].count, it.payload[q].dtype, out[q], err);
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

/* ---- a state file that keeps no module order, ordered for pairing (format.md 10.4) ---- */

static int by_name(const void *a, const void *b)
{
    const ckpt_tensor_info *x = *(ckpt_tensor_info *const *)a, *y = *(ckpt_tensor_info *const *)b;
    return strcmp(x->name, y->name);
}

/* The state file's tensors (and its schema's slots) in the order `order` gives: order[k] is the
 * tensor that becomes tensor k (each once, all of them). */
/* The file's tensors become order[0..k) of them (a permutation, or the slots of a pairing: the
 * others are dropped). */
static int view_tensors(ckpt_file *f, const size_t *order, size_t k, ckpt_error *err)
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
    size_t *map = ckpt_item_of_slot(rep);
    if (!map) return ckpt_fail_oom(err);
    free(f->item_of_slot);
    f->item_of_slot = map;
    return 0;
}

static int reorder(ckpt_file *f, const size_t *order, ckpt_error *err)
{
    return view_tensors(f, order, f->rep->tensors_len, err);
}

/* A PyTorch optimizer paired with its model (format.md 10.4): both reports become the pair's
 * slots, for good (the handles are the pair's from then on). */
static ckpt_pair_result *bind_torch(ckpt_file *opt, ckpt_file *model, const char *const *names, size_t name_count)
{
    ckpt_pair_result *r = calloc(1, sizeof *r);
    if (!r) return NULL;
    ckpt_error_clear(&r->error);
    size_t *view = NULL, len = 0;
    if (opt->rep->error.code || model->rep->error.code) {
        bool bad_opt = opt->rep->error.code != 0;
        ckpt_error_copy(&r->error, bad_opt ? &opt->rep->error : &model->rep->error);
        r->invalid = bad_opt ? CKPT_PAIR_INVALID_OPTIMIZER : CKPT_PAIR_INVALID_STATE;
        return r;
    }
    if (ckpt_torch_bind(opt->rep, model->rep, names, name_count, &view, &len, r)) return r;
    if (view) {
        size_t *map = ckpt_item_of_slot(opt->rep);
        if (!map || view_tensors(model, view, len, &r->error)) {
            free(map);
            if (!r->error.code) ckpt_fail_oom(&r->error);
        } else {
            free(opt->item_of_slot);
            opt->item_of_slot = map;
            model->rep->slots_bound = true;
            /* the slots' one dtype, as a state file's (several: none) */
            int dtype = len ? model->rep->tensors[0].dtype : CKPT_DTYPE_ANY;
            for (size_t i = 1; i < len; i++)
                if (model->rep->tensors[i].dtype != dtype) dtype = CKPT_DTYPE_ANY;
            model->rep->dtype = dtype;
        }
        free(view);
    }
    r->pairs = !r->failures_len && !r->error.code;
    return r;
}

/* order: by names (each found once; the rest after, in file order), or by the optimizer's
 * shapes (slot by slot, the first tensor of its shape not yet taken; the rest after). */
static int order_tensors(ckpt_file *state, const ckpt_report *ro, const char *const *names, size_t name_count,
                         size_t **out, ckpt_error *err)
{
    ckpt_report *rs = state->rep;
    size_t n = rs->tensors_len, k = 0;
    size_t *order = malloc((n ? n : 1) * sizeof *order);
    uint8_t *taken = calloc(n ? n : 1, 1);
    ckpt_tensor_info **sorted = names ? malloc((n ? n : 1) * sizeof *sorted) : NULL;
    int rc = 0;
    if (!order || !taken || (names && !sorted)) rc = ckpt_fail_oom(err);
    if (!rc && names) {
        for (size_t j = 0; j < n; j++) sorted[j] = &rs->tensors[j];
        qsort(sorted, n, sizeof *sorted, by_name);
        for (size_t j = 0; j < name_count; j++) {
            ckpt_tensor_info key = {0}, *kp = &key;
            key.name = (char *)names[j];
            ckpt_tensor_info **hit = n ? bsearch(&kp, sorted, n, sizeof *sorted, by_name) : NULL;
            if (!hit) continue; /* a name the file lacks (a dropped tied copy): skipped */
            size_t at = (size_t)(*hit - rs->tensors);
            if (taken[at]) continue;
            taken[at] = 1;
            order[k++] = at;
        }
    } else if (!rc && ro && ro->schema) {
        for (size_t i = 0; i < ckpt_schema_count(ro->schema); i++)
            for (size_t j = 0; j < n; j++)
                if (!taken[j] && ckpt_schema_same_shape(ro->schema, i, rs->schema, j)) {
                    taken[j] = 1;
                    order[k++] = j;
                    break;
                }
    }
    for (size_t j = 0; !rc && j < n; j++)
        if (!taken[j]) order[k++] = j;
    if (!rc) rc = reorder(state, order, err);
    if (rc) free(order);
    else *out = order;
    free(taken);
    free(sorted);
    return rc;
}

/* Back to the file's order: order[k] became tensor k. */
static int restore(ckpt_file *state, size_t *order, ckpt_error *err)
{
    size_t n = state->rep->tensors_len;
    size_t *inverse = malloc((n ? n : 1) * sizeof *inverse);
    if (!inverse) return ckpt_fail_oom(err);
    for (size_t k = 0; k < n; k++) inverse[order[k]] = k;
    int rc = reorder(state, inverse, err);
    free(inverse);
    return rc;
}

ckpt_pair_result *ckpt_pair_named(ckpt_file *opt, ckpt_file *state, const char *const *names, size_t name_count,
                                  ckpt_progress_fn progress, void *progress_ctx)
{
    if (opt && state && opt->rep->family && opt->rep->family->impl->slots_from_model && !opt->rep->slots_bound) {
        ckpt_pair_result *b = bind_torch(opt, state, names, name_count);
        if (!b || !b->pairs) return b;
        /* the pair's slots, checked as a TorchLean pair is: counts, shapes, tied values */
        ckpt_pair_result *r = ckpt_pair(opt, state, progress, progress_ctx);
        if (r && b->warnings_len) {
            char **w = realloc(r->warnings, (r->warnings_len + b->warnings_len) * sizeof *w);
            if (!w) {
                ckpt_pair_result_free(r);
                ckpt_pair_result_free(b);
                return NULL;
            }
            memmove(w + b->warnings_len, w, r->warnings_len * sizeof *w);
            memcpy(w, b->warnings, b->warnings_len * sizeof *w);
            r->warnings = w;
            r->warnings_len += b->warnings_len;
            b->warnings_len = 0;
        }
        if (r) {
            r->pytorch = b->pytorch;
            b->pytorch = NULL;
        }
        ckpt_pair_result_free(b);
        return r;
    }
    const ckpt_report *rs = state ? state->rep : NULL;
    const struct ckpt_family_impl *impl = rs && rs->family ? rs->family->impl : NULL;
    bool named = names && rs && rs->tensors_len && rs->tensors[0].name;
    bool unordered = impl && impl->unordered && rs->schema_complete && rs->tensors_len == ckpt_schema_count(rs->schema);
    size_t *order = NULL;
    ckpt_error err = {0};
    ckpt_error_clear(&err);
    if (unordered && opt && ckpt_family_has_role(opt->rep->family, CKPT_ROLE_OPTIMIZER) && opt->rep->schema_complete) {
        if (order_tensors(state, opt->rep, named ? names : NULL, name_count, &order, &err)) {
            ckpt_pair_result *r = calloc(1, sizeof *r);
            if (r) ckpt_error_move(&r->error, &err);
            ckpt_error_clear(&err);
            return r;
        }
    } else {
        unordered = false;
    }
    ckpt_pair_result *r = ckpt_pair(opt, state, progress, progress_ctx);
    if (order) {
        if (restore(state, order, &err)) {
            ckpt_error_clear(&err);
            ckpt_pair_result_free(r);
            r = NULL;
        }
        free(order);
    }
    if (!r || !unordered || named) return r;
    /* ordered by shape alone: the warning first */
    size_t len = strlen(rs->family->prefix) + 2 + strlen(impl->unordered) + 1;
    char *w = malloc(len), **list = realloc(r->warnings, (r->warnings_len + 1) * sizeof *list);
    if (list) r->warnings = list;
    if (!w || !list) {
        free(w);
        ckpt_pair_result_free(r);
        return NULL;
    }
    snprintf(w, len, "%s: %s", rs->family->prefix, impl->unordered);
    memmove(list + 1, list, r->warnings_len * sizeof *list);
    list[0] = w;
    r->warnings_len++;
    return r;
}
