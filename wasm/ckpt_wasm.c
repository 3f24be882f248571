/* The WebAssembly surface: thin shims over the public API for the JS package (js/wasm.js).
 * Sources and sinks are JS objects named by small integers; their callbacks are JS imports.
 * 64-bit values cross as doubles (exact below 2^53: offsets, sizes, counts) or as u64 arrays
 * in wasm memory (dims, tags, bit patterns), so no i64 appears in an import or export. */
#include "ckptscope.h"

#include <stdlib.h>
#include <string.h>

#define IMPORT(name) __attribute__((import_module("env"), import_name(#name)))

IMPORT(ckpt_js_read) size_t ckpt_js_read(int source, double offset, void *buf, size_t n);
IMPORT(ckpt_js_write) int ckpt_js_write(int sink, const void *buf, size_t n);
IMPORT(ckpt_js_progress) int ckpt_js_progress(int token, double done, double total);

static size_t source_read(void *ctx, uint64_t offset, void *buf, size_t n)
{
    return ckpt_js_read((int)(intptr_t)ctx, (double)offset, buf, n);
}

static void make_source(ckpt_source *src, int id, double size)
{
    src->ctx = (void *)(intptr_t)id;
    src->read = source_read;
    src->size = size < 0 ? CKPT_NONE : (uint64_t)size;
}

static int sink_write(void *ctx, const void *buf, size_t n) { return ckpt_js_write((int)(intptr_t)ctx, buf, n); }

static int progress(void *ctx, uint64_t done, uint64_t total)
{
    return ckpt_js_progress((int)(intptr_t)ctx, (double)done, total == CKPT_NONE ? -1.0 : (double)total);
}

/* ---- schemas ---- */

/* map: NULL for no map; entries CKPT_NONE for none. */
ckpt_schema *w_schema_new(size_t n, const uint64_t *ranks, const uint64_t *dims, size_t flag_count,
                          const uint8_t *flags, const uint64_t *map, size_t map_count)
{
    return ckpt_schema_new(n, ranks, dims, flag_count, flags, map, map_count);
}

double w_schema_representative(const ckpt_schema *s, double i)
{
    uint64_t r = ckpt_schema_representative(s, (uint64_t)i);
    return r == CKPT_NONE ? -1.0 : (double)r;
}

double w_schema_optimizer_state_count(const ckpt_schema *s) { return (double)ckpt_schema_optimizer_state_count(s); }
double w_schema_trainable_count(const ckpt_schema *s) { return (double)ckpt_schema_trainable_count(s); }

void w_schema_tags(const ckpt_schema *s, uint64_t *out)
{
    size_t n = ckpt_schema_count(s);
    for (size_t i = 0; i < n; i++) out[i] = ckpt_schema_tag(s, i);
}

/* ---- reports ---- */

ckpt_report *w_inspect(int source, double size, unsigned flags, int progress_token)
{
    ckpt_source src;
    make_source(&src, source, size);
    ckpt_inspect_options opt = {flags, progress_token ? progress : NULL, (void *)(intptr_t)progress_token};
    return ckpt_inspect(&src, &opt);
}

/* config: NULL, or {kind, beta1, beta2, epsilon, weightDecay} as u64 bit patterns. */
ckpt_report *w_load(int source, double size, const ckpt_schema *expected, int dtype, const uint64_t *config,
                    int keeps_random_counter)
{
    ckpt_source src;
    make_source(&src, source, size);
    ckpt_config c;
    if (config) c = (ckpt_config){config[0], config[1], config[2], config[3], config[4]};
    ckpt_expected exp = {expected, dtype, config ? &c : NULL, keeps_random_counter};
    return ckpt_load(&src, &exp);
}

char *w_report_json(const ckpt_report *rep) { return ckpt_report_json(rep); }
const ckpt_schema *w_report_schema(const ckpt_report *rep) { return rep->schema_complete ? rep->schema : NULL; }
int w_report_error_code(const ckpt_report *rep) { return rep->error.code; }

/* ---- errors ---- */

static ckpt_error last_error;

char *w_error_json(void) { return ckpt_error_json(&last_error); }

void w_error_clear(void) { ckpt_error_clear(&last_error); }

int w_read_moments(int source, double size, const ckpt_report *rep, double id, void *m, void *v)
{
    ckpt_source src;
    make_source(&src, source, size);
    return ckpt_read_moments(&src, rep, (uint64_t)id, m, v, &last_error);
}

/* ---- writing ---- */

/* meta: per entry {id, step, count, m bytes, v bytes}; payloads: per entry {m, v} pointers in
 * wasm memory. config: {kind, beta1, beta2, epsilon, weightDecay} bit patterns; counter: NULL
 * for none; version 0 for the reference writer's choice. */
int w_write(const ckpt_schema *s, int dtype, const uint64_t *config, const uint64_t *counter, const uint64_t *meta,
            void *const *payloads, size_t entry_count, double version, int sink)
{
    ckpt_entry_in *entries = calloc(entry_count ? entry_count : 1, sizeof *entries);
    if (!entries) return CKPT_E_NO_MEMORY;
    for (size_t k = 0; k < entry_count; k++) {
        const uint64_t *e = meta + 5 * k;
        entries[k] = (ckpt_entry_in){e[0], e[1], e[2], payloads[2 * k], payloads[2 * k + 1], e[3], e[4]};
    }
    ckpt_write_desc d = {s, dtype, {config[0], config[1], config[2], config[3], config[4]}, counter != NULL,
                         counter ? *counter : 0, entries, entry_count, (uint64_t)version};
    ckpt_sink out = {(void *)(intptr_t)sink, sink_write};
    int rc = ckpt_write(&d, &out, &last_error);
    free(entries);
    return rc;
}

char *w_schema_json(const ckpt_schema *s) { return ckpt_schema_json(s); }

/* {"id", "m", "v"} statistics of one entry, or NULL with the error in w_error_json. */
char *w_entry_stats(int source, double size, const ckpt_report *rep, double id, int progress_token)
{
    ckpt_source src;
    make_source(&src, source, size);
    ckpt_error_clear(&last_error);
    return ckpt_entry_stats_json(&src, rep, (uint64_t)id, progress_token ? progress : NULL,
                                 (void *)(intptr_t)progress_token, &last_error);
}

char *w_report_json_opts(const ckpt_report *rep, unsigned opts) { return ckpt_report_json_opts(rep, opts); }

/* The report's bulk arrays as doubles in one malloc'ed block, so a million slots cross to JS
 * without a 50 MB JSON string (js/api.js readReport). Layout:
 *   [0] n  [1] flags held  [2] dims  [3] entries  [4] has map  [5] map complete
 *   then ranks[n], dims[..], sizes[n], flags[..], representatives[n] (if complete; -1 none),
 *   entries[4 * entries] (id, step, count, offset).
 * Returns NULL when there is no schema, or any value is 2^53 or more (not exact as a double):
 * the caller then uses the JSON. */
double *w_report_columns(const ckpt_report *rep)
{
    const ckpt_schema *s = rep->schema;
    if (!s) return NULL;
    const double limit = 9007199254740992.0;   /* 2^53 */
    size_t n = ckpt_schema_count(s), flags = ckpt_schema_flag_count(s), dims = 0;
    for (size_t i = 0; i < n; i++) dims += (size_t)ckpt_schema_rank(s, i);
    bool complete = rep->schema_complete;
    size_t total = 6 + n + dims + n + flags + (complete ? n : 0) + 4 * rep->entries_len;
    double *out = malloc(total * sizeof *out);
    if (!out) return NULL;
    double *p = out;
    *p++ = (double)n;
    *p++ = (double)flags;
    *p++ = (double)dims;
    *p++ = (double)rep->entries_len;
    *p++ = ckpt_schema_has_map(s);
    *p++ = complete;
    for (size_t i = 0; i < n; i++) *p++ = (double)ckpt_schema_rank(s, i);
    for (size_t i = 0; i < n; i++) {
        const uint64_t *d = ckpt_schema_dims(s, i);
        for (uint64_t k = 0; k < ckpt_schema_rank(s, i); k++) {
            if ((double)d[k] >= limit) goto inexact;
            *p++ = (double)d[k];
        }
    }
    for (size_t i = 0; i < n; i++) {
        bool too_big;
        uint64_t size = ckpt_schema_size(s, i, &too_big);
        if (too_big || (double)size >= limit) goto inexact;
        *p++ = (double)size;
    }
    for (size_t i = 0; i < flags; i++) *p++ = ckpt_schema_requires_grad(s, i);
    if (complete) {
        for (size_t i = 0; i < n; i++) {
            uint64_t r = ckpt_schema_representative(s, i);
            if (r != CKPT_NONE && (double)r >= limit) goto inexact;
            *p++ = r == CKPT_NONE ? -1.0 : (double)r;
        }
    }
    for (size_t k = 0; k < rep->entries_len; k++) {
        const ckpt_entry_info *e = &rep->entries[k];
        uint64_t v[4] = {e->id, e->step, e->count, e->offset};
        for (int j = 0; j < 4; j++) {
            if ((double)v[j] >= limit) goto inexact;
            *p++ = (double)v[j];
        }
    }
    return out;
inexact:
    free(out);
    return NULL;
}
