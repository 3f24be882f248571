/* Pairing an optimizer checkpoint with its model-state file (format.md 6): TorchLean builds the
 * ParameterSchema from the same ordered parameter list it saves as state, so slot i of one is
 * tensor i of the other. Every failure is listed in check order (the first is the verdict); tied
 * slots' saved values are compared bit for bit in streamed chunks, never whole. */
#include "internal.h"

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

/* Read n elements of 4 bytes at offset; a short read is the file changing under us. */
static int read_at(const ckpt_source *src, uint64_t offset, uint32_t *out, size_t n, ckpt_error *err)
{
    size_t got = src->read(src->ctx, offset, out, 4 * n);
    if (got == CKPT_READ_ERROR || got != 4 * n)
        return ckpt_fail(err, NULL, CKPT_E_IO, offset, 0, "could not read the state file at byte %llu", (unsigned long long)offset);
    return 0;
}

typedef struct progress {
    ckpt_progress_fn fn;
    void *ctx;
    uint64_t done, total;
} progress;

static int advance(progress *p, uint64_t bytes, ckpt_error *err)
{
    p->done += bytes;
    if (p->fn && p->fn(p->ctx, p->done, p->total)) return ckpt_fail(err, NULL, CKPT_E_CANCELLED, CKPT_NONE, 0, "pairing cancelled");
    return 0;
}

/* The first element where tensors a and b differ bit for bit, or CKPT_NONE. */
static int first_difference(const ckpt_source *src, const ckpt_tensor_info *a, const ckpt_tensor_info *b, uint32_t *buf,
                            progress *pr, uint64_t *where, ckpt_error *err)
{
    *where = CKPT_NONE;
    uint32_t *x = buf, *y = buf + CHUNK_ELEMENTS;
    for (uint64_t k = 0; k < a->count; k += CHUNK_ELEMENTS) {
        size_t n = a->count - k < CHUNK_ELEMENTS ? (size_t)(a->count - k) : CHUNK_ELEMENTS;
        TRY(read_at(src, a->data_offset + 4 * k, x, n, err));
        TRY(read_at(src, b->data_offset + 4 * k, y, n, err));
        if (memcmp(x, y, 4 * n) != 0) {
            size_t j = 0;
            while (x[j] == y[j]) j++;
            *where = k + j;
            return 0;
        }
        TRY(advance(pr, 8 * (uint64_t)n, err));
    }
    return 0;
}

static int pair_files(ckpt_pair_result *res, const ckpt_file *opt, const ckpt_file *state, progress *pr)
{
    const ckpt_report *ro = ckpt_file_report(opt), *rs = ckpt_file_report(state);
    ckpt_error *err = &res->error;
    if (!ro->family || !ro->family->optimizer)
        return ckpt_fail(err, NULL, CKPT_E_WRONG_FAMILY, CKPT_NONE, 0, "the first file is not an optimizer checkpoint (TLADAMF)");
    if (!rs->family || rs->family->optimizer)
        return ckpt_fail(err, NULL, CKPT_E_WRONG_FAMILY, CKPT_NONE, 0, "the second file is not a model-state file (TLSF32B or TLPF32B)");
    if (!ro->schema_complete)
        return ckpt_fail(err, NULL, CKPT_E_NOT_READABLE, CKPT_NONE, 0,
                         "cannot pair: the optimizer checkpoint is invalid before its parameter schema ends");
    if (!rs->schema_complete)
        return ckpt_fail(err, NULL, CKPT_E_NOT_READABLE, CKPT_NONE, 0, "cannot pair: the state file is invalid before its last tensor");
    const ckpt_schema *so = ro->schema, *ss = rs->schema;
    size_t n = ckpt_schema_count(so), c = ckpt_schema_count(ss), both = n < c ? n : c;
    strbuf sb = {0};

    /* 1. the count */
    if (c != n) {
        sb_printf(&sb, "state file has %zu tensors, the optimizer checkpoint has %zu parameter slots", c, n);
        if (!add_failure(res, CKPT_E_PAIR_COUNT, CKPT_NONE, rs->schema_offset, 8, &sb)) return ckpt_fail_oom(err);
    }
    /* 2. every slot's shape */
    uint8_t *shape_ok = malloc(both ? both : 1);
    if (!shape_ok) return ckpt_fail_oom(err);
    for (size_t i = 0; i < both; i++) {
        shape_ok[i] = ckpt_schema_same_shape(so, i, ss, i);
        if (shape_ok[i]) continue;
        sb_printf(&sb, "parameter %zu: state shape ", i);
        ckpt_shape_print_list(&sb, ckpt_schema_dims(ss, i), ckpt_schema_rank(ss, i));
        sb_puts(&sb, " differs from the optimizer's ");
        ckpt_schema_print_shape(&sb, so, i);
        if (!add_failure(res, CKPT_E_PAIR_SHAPE, i, rs->tensors[i].offset, 8 * (ckpt_schema_rank(ss, i) + 1), &sb)) {
            free(shape_ok);
            return ckpt_fail_oom(err);
        }
    }
    /* what the streamed passes will read, for progress */
    pr->total = 0;
    for (size_t i = 0; i < both; i++) {
        uint64_t r = ckpt_schema_representative(so, i);
        if (r != CKPT_NONE && r != i && r < both && shape_ok[i] && shape_ok[r]) pr->total += 8 * rs->tensors[i].count;
        if (!rs->statistics) pr->total += 4 * rs->tensors[i].count;
    }
    /* 3. tied slots hold one storage: their saved values must be bit-identical */
    uint32_t *buf = malloc(2 * CHUNK_ELEMENTS * sizeof *buf);
    int rc = buf ? 0 : ckpt_fail_oom(err);
    for (size_t i = 0; i < both && !rc; i++) {
        uint64_t r = ckpt_schema_representative(so, i), k;
        if (r == CKPT_NONE || r == i || r >= both || !shape_ok[i] || !shape_ok[r]) continue;
        if ((rc = first_difference(ckpt_file_source(state), &rs->tensors[i], &rs->tensors[r], buf, pr, &k, err))) break;
        if (k == CKPT_NONE) continue;
        sb_printf(&sb, "parameter %zu is tied to parameter %llu but their saved values differ (first at element %llu)", i,
                  (unsigned long long)r, (unsigned long long)k);
        if (!add_failure(res, CKPT_E_PAIR_TIED_VALUES, i, rs->tensors[i].data_offset + 4 * k, 4, &sb)) rc = ckpt_fail_oom(err);
    }
    free(buf);
    free(shape_ok);
    /* 4. warnings: NaN or infinities in a tensor (statistics of the state file, or a scan now) */
    for (size_t i = 0; i < both && !rc; i++) {
        const ckpt_tensor_info *t = &rs->tensors[i];
        ckpt_stats *scanned = NULL;
        const ckpt_stats *st = t->values;
        if (!st) {
            if ((rc = ckpt_state_tensor_stats(ckpt_file_source(state), rs, t, NULL, NULL, &scanned, err))) break;
            st = scanned;
            if ((rc = advance(pr, 4 * t->count, err))) {
                ckpt_stats_free(scanned);
                break;
            }
        }
        if (st->nan || st->inf) {
            bool frozen = ckpt_schema_representative(so, i) == CKPT_NONE;
            sb_printf(&sb, "parameter %zu%s: its saved values hold %llu NaN and %llu infinite values%s", i, frozen ? " (frozen)" : "",
                      (unsigned long long)st->nan, (unsigned long long)st->inf,
                      frozen ? "" : "; the next optimizer step carries them into its moments");
            if (!add_warning(res, &sb)) rc = ckpt_fail_oom(err);
        }
        ckpt_stats_free(scanned);
    }
    /* 5. a file broken past its layout still says whether the two belong together, but it would
     * not load: said beside the verdict, with its own diagnostic */
    const ckpt_report *broken[2] = {ro, rs};
    const char *what[2] = {"the optimizer checkpoint", "the state file"};
    for (int f = 0; f < 2 && !rc; f++) {
        if (!broken[f]->error.code) continue;
        sb_printf(&sb, "%s is invalid past its layout and would not load: %s (byte %llu)", what[f], broken[f]->error.message,
                  (unsigned long long)broken[f]->error.offset);
        if (!add_warning(res, &sb)) rc = ckpt_fail_oom(err);
    }
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
    free(r);
}

char *ckpt_pair_json(const ckpt_pair_result *r)
{
    strbuf sb = {0};
    sb_printf(&sb, "{\"ok\":%s,\"pairs\":%s,\"failures\":[", r->pairs ? "true" : "false", r->pairs ? "true" : "false");
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
    sb_puts(&sb, "}");
    return sb_take(&sb);
}
