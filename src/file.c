/* The open file: a source parsed once, its report kept, and the slot a caller names resolved to
 * what holds its data (a tied slot's optimizer history is its representative's entry). */
#include "internal.h"

#include <stdlib.h>

struct ckpt_file {
    ckpt_source src;
    ckpt_report *rep;
    size_t *entry_of_slot;     /* TLADAMF: index into rep->entries, SIZE_MAX when not read */
    size_t attached;           /* items given statistics by ckpt_file_attach_stats */
};

ckpt_file *ckpt_open(const ckpt_source *src, const ckpt_inspect_options *opt)
{
    ckpt_file *f = calloc(1, sizeof *f);
    if (!f) return NULL;
    f->src = *src;
    if (!(f->rep = ckpt_run(&f->src, NULL, opt))) {
        free(f);
        return NULL;
    }
    const ckpt_report *rep = f->rep;
    if (rep->family && rep->family->optimizer && rep->schema_complete) {
        size_t n = ckpt_schema_count(rep->schema);
        if (!(f->entry_of_slot = malloc((n ? n : 1) * sizeof *f->entry_of_slot))) {
            ckpt_close(f);
            return NULL;
        }
        for (size_t i = 0; i < n; i++) f->entry_of_slot[i] = SIZE_MAX;
        for (size_t k = 0; k < rep->entries_len; k++) f->entry_of_slot[rep->entries[k].id] = k;   /* ids < n: checked */
    }
    return f;
}

void ckpt_close(ckpt_file *f)
{
    if (!f) return;
    ckpt_report_free(f->rep);
    free(f->entry_of_slot);
    free(f);
}

const ckpt_report *ckpt_file_report(const ckpt_file *f) { return f->rep; }
const ckpt_source *ckpt_file_source(const ckpt_file *f) { return &f->src; }

static int wrong_family(const ckpt_report *rep, ckpt_error *err, bool want_optimizer)
{
    if (!rep->family)
        return ckpt_fail(err, NULL, CKPT_E_NOT_READABLE, CKPT_NONE, 0, "the file is not a TorchLean checkpoint");
    return ckpt_fail(err, NULL, CKPT_E_WRONG_FAMILY, CKPT_NONE, 0, "this is a %s (%s): it holds %s", rep->family->name,
                     rep->family->magic, want_optimizer ? "model tensors, not optimizer state" : "optimizer state, not model tensors");
}

int ckpt_file_entry(const ckpt_file *f, uint64_t slot, const ckpt_entry_info **entry, uint64_t *owner, ckpt_error *err)
{
    const ckpt_report *rep = f->rep;
    *entry = NULL;
    if (owner) *owner = CKPT_NONE;
    if (!rep->family || !rep->family->optimizer) return wrong_family(rep, err, true);
    unsigned long long us = slot;
    if (!rep->schema_complete)
        return ckpt_fail_at(err, NULL, CKPT_E_NOT_READABLE, CKPT_NONE, 0, slot,
                            "parameter %llu cannot be read: the file is invalid before its parameter schema ends", us);
    const ckpt_schema *s = rep->schema;
    size_t n = ckpt_schema_count(s);
    if (slot >= n)
        return ckpt_fail(err, NULL, CKPT_E_NO_SUCH_SLOT, CKPT_NONE, 0, "no parameter %llu: the file has %zu slot%s", us, n, n == 1 ? "" : "s");
    uint64_t r = ckpt_schema_representative(s, slot);
    if (r == CKPT_NONE)
        return ckpt_fail_at(err, NULL, CKPT_E_FROZEN_SLOT, CKPT_NONE, 0, slot, "parameter %llu is frozen: it has no optimizer state", us);
    if (r >= n || f->entry_of_slot[r] == SIZE_MAX)
        return ckpt_fail_at(err, NULL, CKPT_E_NOT_READABLE, CKPT_NONE, 0, slot,
                            "parameter %llu's optimizer entry was not read: the file is invalid before it", us);
    *entry = &rep->entries[f->entry_of_slot[r]];
    if (owner) *owner = r;
    return 0;
}

int ckpt_file_read_moments(const ckpt_file *f, uint64_t slot, void *m, void *v, ckpt_error *err)
{
    const ckpt_entry_info *e;
    TRY(ckpt_file_entry(f, slot, &e, NULL, err));
    return ckpt_adam_read_moments(&f->src, f->rep, e, m, v, err);
}

int ckpt_file_moment_stats(const ckpt_file *f, uint64_t slot, ckpt_progress_fn progress, void *progress_ctx, ckpt_stats **m,
                           ckpt_stats **v, ckpt_error *err)
{
    const ckpt_entry_info *e;
    *m = *v = NULL;
    TRY(ckpt_file_entry(f, slot, &e, NULL, err));
    return ckpt_adam_moment_stats(&f->src, f->rep, e, progress, progress_ctx, m, v, err);
}

int ckpt_file_tensor(const ckpt_file *f, uint64_t i, const ckpt_tensor_info **tensor, ckpt_error *err)
{
    const ckpt_report *rep = f->rep;
    *tensor = NULL;
    if (!rep->family || rep->family->optimizer) return wrong_family(rep, err, false);
    unsigned long long ui = i;
    if (rep->schema_complete && i >= rep->tensors_len)
        return ckpt_fail(err, NULL, CKPT_E_NO_SUCH_SLOT, CKPT_NONE, 0, "no tensor %llu: the file has %zu tensor%s", ui, rep->tensors_len,
                         rep->tensors_len == 1 ? "" : "s");
    if (i >= rep->tensors_len)
        return ckpt_fail_at(err, NULL, CKPT_E_NOT_READABLE, CKPT_NONE, 0, i, "tensor %llu was not read: the file is invalid before it", ui);
    *tensor = &rep->tensors[i];
    return 0;
}

int ckpt_file_read_tensor(const ckpt_file *f, uint64_t i, float *out, ckpt_error *err)
{
    const ckpt_tensor_info *t;
    TRY(ckpt_file_tensor(f, i, &t, err));
    return ckpt_state_read_tensor(&f->src, f->rep, t, out, err);
}

int ckpt_file_tensor_stats(const ckpt_file *f, uint64_t i, ckpt_progress_fn progress, void *progress_ctx, ckpt_stats **values,
                           ckpt_error *err)
{
    const ckpt_tensor_info *t;
    *values = NULL;
    TRY(ckpt_file_tensor(f, i, &t, err));
    return ckpt_state_tensor_stats(&f->src, f->rep, t, progress, progress_ctx, values, err);
}

int ckpt_file_layout(const ckpt_file *f, ckpt_expected *layout, ckpt_error *err)
{
    const ckpt_report *rep = f->rep;
    if (!rep->family || !rep->schema_complete)
        return ckpt_fail(err, NULL, CKPT_E_NOT_READABLE, CKPT_NONE, 0, "the file is invalid before its layout is complete");
    bool opt = rep->family->optimizer;
    *layout = (ckpt_expected){rep->schema, opt ? rep->dtype : CKPT_DTYPE_ANY, opt ? &rep->config : NULL,
                              opt ? rep->counter_state : -1, CKPT_FAMILY_ANY, CKPT_READER_DEFAULT};
    return 0;
}

/* ---- statistics gathered apart ---- */

static size_t item_count(const ckpt_report *rep) { return rep->family && rep->family->optimizer ? rep->entries_len : rep->tensors_len; }

int ckpt_file_item_stats(const ckpt_file *f, size_t k, ckpt_progress_fn progress, void *progress_ctx, ckpt_stats **a, ckpt_stats **b,
                         ckpt_error *err)
{
    const ckpt_report *rep = f->rep;
    *a = *b = NULL;
    if (!rep->family) return wrong_family(rep, err, true);
    if (k >= item_count(rep))
        return ckpt_fail(err, NULL, CKPT_E_INVALID_ARGUMENT, CKPT_NONE, 0, "no item %zu: the file has %zu", k, item_count(rep));
    if (rep->family->optimizer) return ckpt_adam_moment_stats(&f->src, rep, &rep->entries[k], progress, progress_ctx, a, b, err);
    return ckpt_state_tensor_stats(&f->src, rep, &rep->tensors[k], progress, progress_ctx, a, err);
}

int ckpt_file_attach_stats(ckpt_file *f, size_t k, ckpt_stats *a, ckpt_stats *b, ckpt_error *err)
{
    ckpt_report *rep = f->rep;
    bool optimizer = rep->family && rep->family->optimizer;
    if (k >= item_count(rep) || !a || (optimizer && !b) || (!optimizer && b)) {
        ckpt_stats_free(a);
        ckpt_stats_free(b);
        return ckpt_fail(err, NULL, CKPT_E_INVALID_ARGUMENT, CKPT_NONE, 0, "invalid arguments to ckpt_file_attach_stats");
    }
    if (optimizer) {
        ckpt_entry_info *e = &rep->entries[k];
        if (!e->m) f->attached++;
        ckpt_stats_free(e->m);
        ckpt_stats_free(e->v);
        e->m = a, e->v = b;
        e->unhealthy = ckpt_entry_unhealthy(a, b);
    } else {
        ckpt_tensor_info *t = &rep->tensors[k];
        if (!t->values) f->attached++;
        ckpt_stats_free(t->values);
        t->values = a;
        t->unhealthy = a->nan + a->inf;
    }
    if (f->attached == item_count(rep) && !rep->statistics) {
        rep->statistics = true;
        ckpt_report_warn_payloads(rep);
    }
    return 0;
}
