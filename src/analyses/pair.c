/* Pairing an optimizer checkpoint with its model-state file (format.md 6): TorchLean builds the
 * ParameterSchema from the same ordered parameter list it saves as state, so slot i of one is
 * tensor i of the other. Every failure is listed in check order (the first is the verdict); tied
 * slots' saved values are compared bit for bit in streamed chunks, never whole. The one pairing
 * rule: `check --state` and the viewer (ckpt_pair) and health (ckpt_health_json) all ask it.
 * The check is structural: one state file holds one step, so the values of the optimizer's
 * moments and of the parameters are never compared (CKPT_PAIR_NOTE says so where it prints). */
#include "analyses/analyses.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHUNK_ELEMENTS (64 * 1024)

static bool add_failure(ckpt_pair_result *res, int code, uint64_t slot, uint64_t offset, uint64_t length, strbuf *text)
{
    if (text->failed) return false;
    ckpt_error *f = realloc(res->failures, (res->failures_len + 1) * sizeof *f);
    if (!f) return false;
    res->failures = f;
    ckpt_error *e = &f[res->failures_len++];
    memset(e, 0, sizeof *e);
    ckpt_fail_at(e, NULL, code, offset, length, slot, "%s", text->data);
    sb_free(text);
    return e->message != NULL;
}

static bool add_warning(ckpt_pair_result *res, strbuf *text)
{
    if (text->failed) return false;
    char **w = realloc(res->warnings, (res->warnings_len + 1) * sizeof *w);
    if (!w) return false;
    res->warnings = w;
    w[res->warnings_len++] = sb_take(text);
    return w[res->warnings_len - 1] != NULL;
}

typedef struct progress {
    ckpt_progress_fn fn;
    void *ctx;
    uint64_t done, total;
} progress;

static int advance(progress *p, uint64_t bytes, ckpt_error *err)
{
    p->done += bytes;
    if (p->fn && p->fn(p->ctx, p->done, p->total))
        return ckpt_fail(err, NULL, CKPT_E_CANCELLED, CKPT_NONE, 0, "pairing cancelled");
    return 0;
}

/* NaN and infinities of a tensor whose values were read whole for a tie (step 4's warnings
 * come only from values read anyway). */
typedef struct nonfinite {
    bool known;
    uint64_t nan, inf;
} nonfinite;

static void count_nonfinite(const uint8_t *p, size_t n, unsigned width, uint64_t *nan, uint64_t *inf)
{
    for (size_t j = 0; j < n; j++) {
        double x;
        if (width == 8) {
            memcpy(&x, p + 8 * j, 8);
        } else {
            float f;
            memcpy(&f, p + sizeof f * j, sizeof f);
            x = f;
        }
        *nan += isnan(x);
        *inf += isinf(x);
    }
}

/* The first element where tensors a and b differ bit for bit, or CKPT_NONE; when they do not,
 * *seen holds the NaN and infinities of their (equal) values. */
static int first_difference(const ckpt_source *src, const ckpt_tensor_info *a, const ckpt_tensor_info *b,
                            unsigned width, uint8_t *buf, progress *pr, uint64_t *where, nonfinite *seen,
                            ckpt_error *err)
{
    *where = CKPT_NONE;
    *seen = (nonfinite){false, 0, 0};
    uint8_t *x = buf, *y = buf + (size_t)CHUNK_ELEMENTS * width;
    /* two slots on one storage (a torch.save model's tied lm_head and wte) are the same bytes:
     * read once, for the NaN and infinities only */
    const bool one_storage = a->data_offset == b->data_offset;
    for (uint64_t k = 0; k < a->count; k += CHUNK_ELEMENTS) {
        size_t n = a->count - k < CHUNK_ELEMENTS ? (size_t)(a->count - k) : CHUNK_ELEMENTS;
        TRY(ckpt_read_at(src, a->data_offset + width * k, x, n * width, "the state file", err));
        if (!one_storage) TRY(ckpt_read_at(src, b->data_offset + width * k, y, n * width, "the state file", err));
        if (!one_storage && memcmp(x, y, n * width) != 0) {
            size_t j = 0;
            while (memcmp(x + j * width, y + j * width, width) == 0) j++;
            *where = k + j;
            return 0;
        }
        count_nonfinite(x, n, width, &seen->nan, &seen->inf);
        TRY(advance(pr, 2 * (uint64_t)n * width, err));
    }
    seen->known = true;
    return 0;
}

/* A copy of a file's own diagnostic, as the pair's error. */
static int pair_files(ckpt_pair_result *res, const ckpt_file *opt, const ckpt_file *state, progress *pr)
{
    const ckpt_report *ro = ckpt_file_report(opt), *rs = ckpt_file_report(state);
    ckpt_error *err = &res->error;
    /* files of known families in the wrong roles (swapped) first; then an invalid file (a
     * truncated one included): it never pairs, its own diagnostic is the answer */
    if (ro->family) TRY(ckpt_require_role(ro, CKPT_ROLE_OPTIMIZER, err));
    if (rs->family) TRY(ckpt_require_role(rs, CKPT_ROLE_MODEL, err));
    if (ro->error.code || rs->error.code) {
        res->invalid = ro->error.code ? CKPT_PAIR_INVALID_OPTIMIZER : CKPT_PAIR_INVALID_STATE;
        return ckpt_error_copy(err, ro->error.code ? &ro->error : &rs->error);
    }
    TRY(ckpt_require_role(ro, CKPT_ROLE_OPTIMIZER, err));
    TRY(ckpt_require_role(rs, CKPT_ROLE_MODEL, err));
    const ckpt_schema *so = ro->schema, *ss = rs->schema;
    size_t n = ckpt_schema_count(so), c = ckpt_schema_count(ss), both = n < c ? n : c;
    const unsigned width = ckpt_dtype_width(rs->dtype);
    strbuf sb = {0};

    /* 1. the count */
    if (c != n) {
        sb_printf(&sb, "state file has %zu tensors, the optimizer checkpoint has %zu parameter slots", c, n);
        if (!add_failure(res, CKPT_E_PAIR_COUNT, CKPT_NONE, rs->schema_offset, 8, &sb)) return ckpt_fail_oom(err);
    }
    /* 2. every slot's shape */
    uint8_t *shape_ok = malloc(both ? both : 1);
    nonfinite *seen = calloc(both ? both : 1, sizeof *seen);
    if (!shape_ok || !seen) {
        free(shape_ok);
        free(seen);
        return ckpt_fail_oom(err);
    }
    int rc = 0;
    for (size_t i = 0; i < both && !rc; i++) {
        shape_ok[i] = ckpt_schema_same_shape(so, i, ss, i);
        if (shape_ok[i]) continue;
        sb_printf(&sb, "parameter %zu: state shape ", i);
        ckpt_shape_print_list(&sb, ckpt_schema_dims(ss, i), ckpt_schema_rank(ss, i));
        sb_puts(&sb, " differs from the optimizer's ");
        ckpt_schema_print_shape(&sb, so, i);
        if (!add_failure(res, CKPT_E_PAIR_SHAPE, i, rs->tensors[i].offset, 8 * (ckpt_schema_rank(ss, i) + 1), &sb))
            rc = ckpt_fail_oom(err);
    }
    /* what the tie pass will read, for progress */
    pr->total = 0;
    for (size_t i = 0; i < both; i++) {
        uint64_t r = ckpt_schema_representative(so, i);
        if (r != CKPT_NONE && r != i && r < both && shape_ok[i] && shape_ok[r])
            pr->total += 2 * width * rs->tensors[i].count;
    }
    /* 3. tied slots hold one storage: their saved values must be bit-identical */
    uint8_t *buf = rc ? NULL : malloc(2 * (size_t)CHUNK_ELEMENTS * width);
    if (!rc && !buf) rc = ckpt_fail_oom(err);
    for (size_t i = 0; i < both && !rc; i++) {
        uint64_t r = ckpt_schema_representative(so, i), k;
        if (r == CKPT_NONE || r == i || r >= both || !shape_ok[i] || !shape_ok[r] ||
            !ckpt_dtype_in_layouts(rs->dtype)) /* the tie check reads float32 or float64 values */
            continue;
        nonfinite tie;
        if ((rc = first_difference(ckpt_file_source(state), &rs->tensors[i], &rs->tensors[r], width, buf, pr, &k, &tie,
                                   err)))
            break;
        if (tie.known) seen[i] = seen[r] = tie;
        if (k == CKPT_NONE) continue;
        sb_printf(&sb, "parameter %zu is tied to parameter %llu but their saved values differ (first at element %llu)",
                  i, (unsigned long long)r, (unsigned long long)k);
        if (!add_failure(res, CKPT_E_PAIR_TIED_VALUES, i, rs->tensors[i].data_offset + width * k, width, &sb))
            rc = ckpt_fail_oom(err);
    }
    free(buf);
    free(shape_ok);
    /* 4. warnings: NaN or infinities in a tensor, when its values were read anyway (the state
     * file's statistics, or a tie above); the verdict reads nothing more for them */
    for (size_t i = 0; i < both && !rc; i++) {
        const ckpt_stats *st = rs->tensors[i].values;
        nonfinite v = st ? (nonfinite){true, st->nan, st->inf} : seen[i];
        if (!v.known || !(v.nan || v.inf)) continue;
        bool frozen = ckpt_schema_representative(so, i) == CKPT_NONE;
        sb_printf(&sb, "parameter %zu%s: its saved values hold %llu NaN and %llu infinite values%s", i,
                  frozen ? " (frozen)" : "", (unsigned long long)v.nan, (unsigned long long)v.inf,
                  frozen ? "" : "; the next optimizer step carries them into its moments");
        if (!add_warning(res, &sb)) rc = ckpt_fail_oom(err);
    }
    free(seen);
    sb_free(&sb);
    return rc;
}

ckpt_pair_result *ckpt_pair(const ckpt_file *opt, const ckpt_file *state, ckpt_progress_fn progress, void *progress_ctx)
{
    ckpt_pair_result *res = calloc(1, sizeof *res);
    if (!res) return NULL;
    ckpt_error_clear(&res->error);
    struct progress pr = {progress, progress_ctx, 0, 0};
    pair_files(res, opt, state, &pr);
    res->pairs = !res->error.code && res->failures_len == 0;
    return res;
}

void ckpt_pair_result_free(ckpt_pair_result *r)
{
    if (!r) return;
    for (size_t k = 0; k < r->failures_len; k++) ckpt_error_clear(&r->failures[k]);
    free(r->failures);
    for (size_t k = 0; k < r->warnings_len; k++) free(r->warnings[k]);
    free(r->warnings);
    ckpt_error_clear(&r->error);
    free(r->pytorch);
    free(r->note);
    free(r);
}

/* ---- a state file that keeps no module order, ordered for pairing (format.md 10.4) ---- */

static int by_name(const void *a, const void *b)
{
    const ckpt_tensor_info *x = *(ckpt_tensor_info *const *)a, *y = *(ckpt_tensor_info *const *)b;
    return strcmp(x->name, y->name);
}

static int reorder(ckpt_file *f, const size_t *order, ckpt_error *err)
{
    return ckpt_file_view_tensors(f, order, ckpt_file_report(f)->tensors_len, err);
}

/* An optimizer whose slots come from its model (format.md 10.4), bound by its family: both
 * reports become the pair's slots, for good (the handles are the pair's from then on). */
static ckpt_pair_result *bind_slots(ckpt_file *opt, ckpt_file *model, const ckpt_pair_options *o)
{
    ckpt_report *ro = ckpt_file_report_mut(opt), *rm = ckpt_file_report_mut(model);
    ckpt_pair_result *r = calloc(1, sizeof *r);
    if (!r) return NULL;
    ckpt_error_clear(&r->error);
    size_t *view = NULL, len = 0;
    if (ro->error.code || rm->error.code) {
        bool bad_opt = ro->error.code != 0;
        ckpt_error_copy(&r->error, bad_opt ? &ro->error : &rm->error);
        r->invalid = bad_opt ? CKPT_PAIR_INVALID_OPTIMIZER : CKPT_PAIR_INVALID_STATE;
        return r;
    }
    const ckpt_report *trained = o->trained ? ckpt_file_report(o->trained) : NULL;
    if (trained && trained->error.code) { /* the optimizer's own model is invalid: its diagnostic */
        ckpt_error_copy(&r->error, &trained->error);
        return r;
    }
    if (ro->family->impl->bind(ro, rm, o, trained, &view, &len, r)) return r;
    if (view) {
        if (!ckpt_file_view_tensors(model, view, len, &r->error) && !ckpt_file_refresh_items(opt, &r->error)) {
            rm->slots_bound = true;
            /* the slots' one dtype, as a state file's (several: none) */
            int dtype = len ? rm->tensors[0].dtype : CKPT_DTYPE_ANY;
            for (size_t i = 1; i < len; i++)
                if (rm->tensors[i].dtype != dtype) dtype = CKPT_DTYPE_ANY;
            rm->dtype = dtype;
        }
        free(view);
    }
    r->pairs = !r->failures_len && (!r->error.code || r->cannot_tell);
    return r;
}

/* A TorchLean optimizer's model given as a torch.save state dict: its slots (format.md 10.4)
 * become the model report's tensors, as a TLSF32B file's are; *ties per slot (the earlier slot
 * of its storage, CKPT_NONE), for the ties' comparison after the pairing. */
static int model_slots(ckpt_file *model, uint64_t **ties, size_t *n, ckpt_error *err)
{
    ckpt_report *rm = ckpt_file_report_mut(model);
    size_t *view = NULL;
    TRY(rm->family->impl->model_slots(rm, &view, ties, n, err));
    int rc = ckpt_file_view_tensors(model, view, *n, err);
    free(view);
    if (rc) {
        free(*ties);
        *ties = NULL;
        return rc;
    }
    rm->slots_bound = true;
    int dtype = *n ? rm->tensors[0].dtype : CKPT_DTYPE_ANY;
    for (size_t i = 1; i < *n; i++)
        if (rm->tensors[i].dtype != dtype) dtype = CKPT_DTYPE_ANY;
    rm->dtype = dtype;
    return 0;
}

/* The optimizer's ties (its schema's representatives) against the model's storages: the
 * trainer builds the map from storage identity (format.md 7), so each trainable slot's
 * representative is the earlier slot of its storage, or itself. */
static bool compare_ties(ckpt_pair_result *r, const ckpt_schema *so, const ckpt_report *rm, const uint64_t *ties,
                         size_t n)
{
    if (ckpt_schema_count(so) != n) return true; /* the count's failure says it */
    for (size_t i = 0; i < n; i++) {
        if (!ckpt_schema_requires_grad(so, i)) continue;
        uint64_t want = ties[i] == CKPT_NONE ? i : ties[i], have = ckpt_schema_representative(so, i);
        if (want == have) continue;
        strbuf sb = {0};
        const char *name = rm->tensors[i].name ? rm->tensors[i].name : "";
        bool model_ties = want != i;
        uint64_t other = model_ties ? want : have;
        sb_printf(&sb, "parameter %zu (%s) is tied to parameter %llu (%s) in %s, not in %s", i, name,
                  (unsigned long long)other, other < n && rm->tensors[other].name ? rm->tensors[other].name : "",
                  model_ties ? "the model" : "the optimizer's schema",
                  model_ties ? "the optimizer's schema" : "the model");
        if (!add_failure(r, CKPT_E_TORCH_MODELS_DIFFER, i, CKPT_NONE, 0, &sb)) return false;
    }
    return true;
}

/* order: by names (each found once; the rest after, in file order), or by the optimizer's
 * shapes (slot by slot, the first tensor of its shape not yet taken; the rest after). */
static int order_tensors(ckpt_file *state, const ckpt_report *ro, const char *const *names, size_t name_count,
                         size_t **out, ckpt_error *err)
{
    ckpt_report *rs = ckpt_file_report_mut(state);
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
    size_t n = ckpt_file_report(state)->tensors_len;
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
    ckpt_pair_options o = {0};
    o.names = names;
    o.name_count = name_count;
    return ckpt_pair_with(opt, state, &o, progress, progress_ctx);
}

/* A PyTorch optimizer with its model: the family binds the slots, then the pair's slots are
 * checked as a TorchLean pair is: counts, shapes, tied values. A condition the files cannot
 * tell stays the verdict when those pass. */
static ckpt_pair_result *pair_bound(ckpt_file *opt, ckpt_file *state, const ckpt_pair_options *o,
                                    ckpt_progress_fn progress, void *progress_ctx)
{
    {
        ckpt_pair_result *b = bind_slots(opt, state, o);
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
            r->note = b->note;
            b->note = NULL;
            if (b->cannot_tell && r->pairs) { /* the checks passed: the condition is the verdict */
                r->pairs = false;
                r->cannot_tell = true;
                ckpt_error_move(&r->error, &b->error);
            }
        }
        ckpt_pair_result_free(b);
        return r;
    }
}

/* A TorchLean optimizer with a torch.save model: the model's slots, the pairing of format.md 6,
 * then the ties. */
static ckpt_pair_result *pair_torch_model(ckpt_file *opt, ckpt_file *state, ckpt_progress_fn progress,
                                          void *progress_ctx)
{
    uint64_t *ties = NULL;
    size_t n = 0;
    ckpt_error err = {0};
    ckpt_error_clear(&err);
    const ckpt_report *ro = ckpt_file_report(opt), *rs = ckpt_file_report(state);
    if (ro->error.code || rs->error.code || model_slots(state, &ties, &n, &err)) {
        ckpt_pair_result *r = calloc(1, sizeof *r);
        if (!r) return NULL;
        ckpt_error_clear(&r->error);
        if (ro->error.code || rs->error.code) { /* an invalid file never pairs: its own diagnostic */
            r->invalid = ro->error.code ? CKPT_PAIR_INVALID_OPTIMIZER : CKPT_PAIR_INVALID_STATE;
            ckpt_error_copy(&r->error, ro->error.code ? &ro->error : &rs->error);
        } else {
            ckpt_error_move(&r->error, &err);
        }
        ckpt_error_clear(&err);
        return r;
    }
    ckpt_pair_result *r = ckpt_pair(opt, state, progress, progress_ctx);
    if (r && ties && !r->error.code) {
        if (!compare_ties(r, ro->schema, ckpt_file_report(state), ties, n)) {
            ckpt_pair_result_free(r);
            r = NULL;
        } else {
            r->pairs = !r->failures_len;
        }
    }
    free(ties);
    return r;
}

/* A family that pairs by its own rule with the model the user will load into (DeepSpeed,
 * format.md 11.6); state NULL: the model's names alone. An invalid file never pairs. */
static ckpt_pair_result *pair_by_family(ckpt_file *opt, ckpt_file *state, const ckpt_pair_options *o)
{
    const ckpt_report *ro = ckpt_file_report(opt), *rm = state ? ckpt_file_report(state) : NULL;
    ckpt_pair_result *r = calloc(1, sizeof *r);
    if (!r) return NULL;
    ckpt_error_clear(&r->error);
    /* the new model's file: any that holds a model (its names, shapes and ties are compared,
     * never bound as slots) */
    if (rm && rm->family && !ckpt_family_has_role(rm->family, CKPT_ROLE_MODEL) &&
        ckpt_require_role(rm, CKPT_ROLE_MODEL, &r->error))
        return r;
    if (ro->error.code || (rm && rm->error.code)) {
        r->invalid = ro->error.code ? CKPT_PAIR_INVALID_OPTIMIZER : CKPT_PAIR_INVALID_STATE;
        ckpt_error_copy(&r->error, ro->error.code ? &ro->error : &rm->error);
        return r;
    }
    if (ro->family->impl->pair_new_model(ro, rm, o, r)) return r;
    r->pairs = !r->failures_len;
    return r;
}

ckpt_pair_result *ckpt_pair_with(ckpt_file *opt, ckpt_file *state, const ckpt_pair_options *options,
                                 ckpt_progress_fn progress, void *progress_ctx)
{
    ckpt_pair_options none = {0};
    const ckpt_pair_options *o = options ? options : &none;
    const char *const *names = o->names;
    size_t name_count = o->name_count;
    const ckpt_report *ro = opt ? ckpt_file_report(opt) : NULL;
    if (ro && ro->family && ro->family->impl->pair_new_model && (state || names)) return pair_by_family(opt, state, o);
    if (ro && state && ro->family && ro->family->impl->bind && !ro->slots_bound)
        return pair_bound(opt, state, o, progress, progress_ctx);
    const ckpt_report *rm = state ? ckpt_file_report(state) : NULL;
    if (ro && rm && ckpt_family_has_role(ro->family, CKPT_ROLE_OPTIMIZER) && !ro->family->impl->bind && rm->family &&
        rm->family->impl->model_slots && !rm->slots_bound && ckpt_family_has_role(rm->family, CKPT_ROLE_MODEL) &&
        rm->tensors_len)
        return pair_torch_model(opt, state, progress, progress_ctx);
    const ckpt_report *rs = state ? ckpt_file_report(state) : NULL;
    const struct ckpt_family_impl *impl = rs && rs->family ? rs->family->impl : NULL;
    bool named = names && rs && rs->tensors_len && rs->tensors[0].name;
    bool unordered = impl && impl->unordered && rs->schema_complete && rs->tensors_len == ckpt_schema_count(rs->schema);
    size_t *order = NULL;
    ckpt_error err = {0};
    ckpt_error_clear(&err);
    if (unordered && ro && ckpt_family_has_role(ro->family, CKPT_ROLE_OPTIMIZER) && ro->schema_complete) {
        if (order_tensors(state, ro, named ? names : NULL, name_count, &order, &err)) {
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

char *ckpt_pair_json(const ckpt_pair_result *r)
{
    strbuf sb = {0};
    static const char *const invalid[] = {"null", "\"optimizer\"", "\"state\""};
    /* pairs: null when the files cannot tell (error says on what the pair holds) */
    sb_printf(&sb, "{\"ok\":%s,\"pairs\":%s,\"invalid\":%s,\"note\":", r->pairs ? "true" : "false",
              r->pairs         ? "true"
              : r->cannot_tell ? "null"
                               : "false",
              invalid[r->invalid]);
    j_string(&sb, r->note ? r->note : CKPT_PAIR_NOTE);
    sb_puts(&sb, ",\"failures\":[");
    for (size_t k = 0; k < r->failures_len; k++) {
        if (k) sb_puts(&sb, ",");
        j_error(&sb, &r->failures[k]);
    }
    sb_puts(&sb, "],\"warnings\":[");
    for (size_t k = 0; k < r->warnings_len; k++) {
        if (k) sb_puts(&sb, ",");
        j_string(&sb, r->warnings[k]);
    }
    sb_puts(&sb, "],\"error\":");
    j_error(&sb, r->error.code || !r->failures_len ? &r->error : &r->failures[0]);
    if (r->pytorch) { /* a PyTorch optimizer's placement on its model */
        sb_puts(&sb, ",\"pytorch\":");
        sb_puts(&sb, r->pytorch);
    }
    sb_puts(&sb, "}");
    return sb_take(&sb);
}
