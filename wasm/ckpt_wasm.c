/* The WebAssembly surface: thin shims over the public API for the JS package (js/wasm.js).
 * Sources, sinks and progress listeners are JS objects named by small integers; their callbacks
 * are JS imports. 64-bit values (offsets, sizes, slots, steps) cross as wasm i64, which JS sees
 * as BigInt: nothing exact travels through a double. Errors live in a ckpt_error the caller owns
 * (one per JS handle): no global state here.
 *
 * size_t is 32 bits in wasm: every size computed here is checked before an allocation. */
#include "ckptscope.h"
#include "internal.h"

#include <stdlib.h>
#include <string.h>

#define IMPORT(name) __attribute__((import_module("env"), import_name(#name)))

IMPORT(ckpt_js_read) size_t ckpt_js_read(int source, uint64_t offset, void *buf, size_t n);
IMPORT(ckpt_js_write) int ckpt_js_write(int sink, const void *buf, size_t n);
IMPORT(ckpt_js_progress) int ckpt_js_progress(int token, uint64_t done, uint64_t total);

static size_t source_read(void *ctx, uint64_t offset, void *buf, size_t n)
{
    return ckpt_js_read((int)(intptr_t)ctx, offset, buf, n);
}

static ckpt_source make_source(int id, uint64_t size)
{
    return (ckpt_source){(void *)(intptr_t)id, source_read, size};
}

static int sink_write(void *ctx, const void *buf, size_t n) { return ckpt_js_write((int)(intptr_t)ctx, buf, n); }

static int progress(void *ctx, uint64_t done, uint64_t total) { return ckpt_js_progress((int)(intptr_t)ctx, done, total); }

#define PROGRESS(token) ((token) ? progress : NULL), (void *)(intptr_t)(token)

/* A size in wasm memory: count * elem bytes, or 0 (and no allocation) when it would not fit. */
static void *alloc_array(uint64_t count, size_t elem)
{
    uint64_t bytes;
    if (ckpt_mul_overflows(count, elem, &bytes) || bytes > SIZE_MAX - 16) return NULL;
    return malloc(bytes ? (size_t)bytes : 1);
}

/* ---- errors: one per JS handle ---- */

ckpt_error *w_error_new(void)
{
    ckpt_error *err = calloc(1, sizeof *err);
    if (err) ckpt_error_clear(err);
    return err;
}

void w_error_free(ckpt_error *err)
{
    ckpt_error_clear(err);
    free(err);
}

/* ---- schemas ---- */

/* map: NULL for no map; entries CKPT_NONE for none. */
ckpt_schema *w_schema_new(size_t n, const uint64_t *ranks, const uint64_t *dims, size_t flag_count, const uint8_t *flags,
                          const uint64_t *map, size_t map_count)
{
    return ckpt_schema_new(n, ranks, dims, flag_count, flags, map, map_count);
}

/* The tags into out (n u64). */
void w_schema_tags(const ckpt_schema *s, uint64_t *out)
{
    size_t n = ckpt_schema_count(s);
    for (size_t i = 0; i < n; i++) out[i] = ckpt_schema_tag(s, i);
}

/* ---- layouts: a destination, or one side of a diff ---- */

/* config: NULL, or {kind, beta1, beta2, epsilon, weightDecay} bit patterns (copied). The schema
 * must outlive the layout. NULL when schema is NULL or out of memory. */
typedef struct w_layout {
    ckpt_expected exp;
    ckpt_config config;
} w_layout;

w_layout *w_layout_new(const ckpt_schema *schema, int dtype, const uint64_t *config, int keeps_random_counter, int family)
{
    if (!schema) return NULL;
    w_layout *l = calloc(1, sizeof *l);
    if (!l) return NULL;
    if (config) l->config = (ckpt_config){config[0], config[1], config[2], config[3], config[4]};
    l->exp = (ckpt_expected){schema, dtype, config ? &l->config : NULL, keeps_random_counter, family};
    return l;
}

/* An open file's layout (points into the file: free the layout first). NULL with err set when the
 * file broke before its layout was complete. */
w_layout *w_layout_of_file(const ckpt_file *f, ckpt_error *err)
{
    w_layout *l = calloc(1, sizeof *l);
    if (!l) {
        ckpt_error_clear(err);
        err->code = CKPT_E_NO_MEMORY;
        return NULL;
    }
    if (ckpt_file_layout(f, &l->exp, err)) {
        free(l);
        return NULL;
    }
    if (l->exp.config) {
        l->config = *l->exp.config;
        l->exp.config = &l->config;
    }
    return l;
}

void w_layout_free(w_layout *l) { free(l); }

/* Would the trainer load this source into the layout? The report of the load as JSON without
 * its bulk arrays (the verdict, the header, the warnings). */
char *w_check(int source, uint64_t size, const w_layout *layout)
{
    if (!layout) return NULL;
    ckpt_source src = make_source(source, size);
    ckpt_report *rep = ckpt_load(&src, &layout->exp);
    if (!rep) return NULL;
    char *json = ckpt_report_json_opts(rep, CKPT_JSON_NO_BULK);
    ckpt_report_free(rep);
    return json;
}

char *w_diff(const w_layout *a, const w_layout *b)
{
    if (!a || !b) return NULL;
    return ckpt_diff_json(&a->exp, &b->exp);
}

/* ---- open files ---- */

ckpt_file *w_open(int source, uint64_t size, unsigned flags, int progress_token)
{
    ckpt_source src = make_source(source, size);
    ckpt_inspect_options opt = {flags, PROGRESS(progress_token)};
    return ckpt_open(&src, &opt);
}

char *w_file_report_json(const ckpt_file *f, unsigned opts) { return ckpt_report_json_opts(ckpt_file_report(f), opts); }

int w_file_report_write(const ckpt_file *f, int sink, ckpt_error *err)
{
    ckpt_sink out = {(void *)(intptr_t)sink, sink_write};
    return ckpt_report_json_write(ckpt_file_report(f), &out, err);
}

int w_file_error_code(const ckpt_file *f) { return ckpt_file_report(f)->error.code; }

/* The report's bulk arrays as columns, for callers that would rather not parse a million slots of
 * JSON (the viewer). The struct is read by js/wasm.js field by field (all 32-bit): keep in step.
 * Pointers into the report stay valid until ckpt_close; the allocated ones until w_columns_free. */
typedef struct w_columns {
    uint32_t n, flag_count, dims_len, entries_len, tensors_len, has_map, complete;
    const uint64_t *dim_start;     /* n + 1 */
    const uint64_t *dims;          /* dims_len */
    const uint64_t *sizes;         /* n */
    const uint8_t *too_big;        /* n: the size is >= 2^64 */
    const uint8_t *flags;          /* flag_count */
    uint64_t *reps;                /* n when complete: representative?(i), CKPT_NONE for none */
    uint8_t *broken;               /* n when complete: the sharing rule rejects the slot */
    uint64_t *entries;             /* 6 per entry: id, step, count, offset, m offset, v offset */
    uint64_t *tensors;             /* 3 per tensor: count, offset, data offset */
} w_columns;

void w_columns_free(w_columns *c)
{
    if (!c) return;
    free(c->reps);
    free(c->broken);
    free(c->entries);
    free(c->tensors);
    free(c);
}

w_columns *w_columns_new(const ckpt_file *f)
{
    const ckpt_report *rep = ckpt_file_report(f);
    const ckpt_schema *s = rep->schema;
    w_columns *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    if (s) {
        size_t n = ckpt_schema_count(s);
        c->n = (uint32_t)n;   /* its arrays are in this memory: n < 2^32 */
        c->flag_count = (uint32_t)ckpt_schema_flag_count(s);
        c->dims_len = (uint32_t)s->dim_start[n];
        c->has_map = ckpt_schema_has_map(s);
        c->complete = rep->schema_complete;
        c->dim_start = s->dim_start;
        c->dims = s->dims;
        c->sizes = s->sizes;
        c->too_big = s->size_too_big;
        c->flags = s->requires_grad;
        if (rep->schema_complete) {
            if (!(c->reps = alloc_array(n, sizeof *c->reps)) || !(c->broken = alloc_array(n, 1))) goto fail;
            for (size_t i = 0; i < n; i++) c->reps[i] = ckpt_schema_representative(s, i);
            ckpt_schema_mark_sharing_faults(s, c->broken);
        }
    }
    c->entries_len = (uint32_t)rep->entries_len;
    if (!(c->entries = alloc_array((uint64_t)rep->entries_len * 6, sizeof *c->entries))) goto fail;
    for (size_t k = 0; k < rep->entries_len; k++) {
        const ckpt_entry_info *e = &rep->entries[k];
        uint64_t *row = c->entries + 6 * k;
        row[0] = e->id, row[1] = e->step, row[2] = e->count, row[3] = e->offset, row[4] = e->m_offset, row[5] = e->v_offset;
    }
    c->tensors_len = (uint32_t)rep->tensors_len;
    if (!(c->tensors = alloc_array((uint64_t)rep->tensors_len * 3, sizeof *c->tensors))) goto fail;
    for (size_t k = 0; k < rep->tensors_len; k++) {
        const ckpt_tensor_info *t = &rep->tensors[k];
        c->tensors[3 * k] = t->count, c->tensors[3 * k + 1] = t->offset, c->tensors[3 * k + 2] = t->data_offset;
    }
    return c;
fail:
    w_columns_free(c);
    return NULL;
}

/* The entry holding slot's moments: out = {owner, id, step, count, offset, byte length of m}. */
int w_file_entry(const ckpt_file *f, uint64_t slot, uint64_t *out, ckpt_error *err)
{
    const ckpt_entry_info *e;
    uint64_t owner;
    int rc = ckpt_file_entry(f, slot, &e, &owner, err);
    if (rc) return rc;
    uint64_t bytes;
    if (ckpt_mul_overflows(e->count, ckpt_width(ckpt_file_report(f)->dtype), &bytes)) bytes = CKPT_NONE;
    out[0] = owner, out[1] = e->id, out[2] = e->step, out[3] = e->count, out[4] = e->offset, out[5] = bytes;
    return 0;
}

int w_file_read_moments(const ckpt_file *f, uint64_t slot, void *m, void *v, ckpt_error *err)
{
    return ckpt_file_read_moments(f, slot, m, v, err);
}

/* {"slot","owner","id","step","count","offset","m","v","unhealthy"}, or NULL with err set. */
char *w_file_moment_stats(const ckpt_file *f, uint64_t slot, int progress_token, ckpt_error *err)
{
    ckpt_stats *m, *v;
    if (ckpt_file_moment_stats(f, slot, PROGRESS(progress_token), &m, &v, err)) return NULL;
    const ckpt_entry_info *e;
    uint64_t owner;
    ckpt_file_entry(f, slot, &e, &owner, err);
    char *json = ckpt_entry_stats_json(e, slot, m, v);
    ckpt_stats_free(m);
    ckpt_stats_free(v);
    if (!json) ckpt_fail_oom(err);
    return json;
}

/* The tensor's count (out[0]) and data offset (out[1]). */
int w_file_tensor(const ckpt_file *f, uint64_t i, uint64_t *out, ckpt_error *err)
{
    const ckpt_tensor_info *t;
    int rc = ckpt_file_tensor(f, i, &t, err);
    if (rc) return rc;
    out[0] = t->count, out[1] = t->data_offset;
    return 0;
}

int w_file_read_tensor(const ckpt_file *f, uint64_t i, float *out, ckpt_error *err) { return ckpt_file_read_tensor(f, i, out, err); }

char *w_file_tensor_stats(const ckpt_file *f, uint64_t i, int progress_token, ckpt_error *err)
{
    ckpt_stats *values;
    if (ckpt_file_tensor_stats(f, i, PROGRESS(progress_token), &values, err)) return NULL;
    char *json = ckpt_stats_json(values);
    ckpt_stats_free(values);
    if (!json) ckpt_fail_oom(err);
    return json;
}

/* ---- statistics gathered apart, by workers ---- */

size_t w_file_item_count(const ckpt_file *f)
{
    const ckpt_report *rep = ckpt_file_report(f);
    return rep->family && rep->family->optimizer ? rep->entries_len : rep->tensors_len;
}

/* Item k's statistics packed as u64 words {len a, len b, a..., b...} (malloc'ed), NULL with err. */
uint64_t *w_file_item_stats_packed(const ckpt_file *f, size_t k, int progress_token, ckpt_error *err)
{
    ckpt_stats *a, *b;
    if (ckpt_file_item_stats(f, k, PROGRESS(progress_token), &a, &b, err)) return NULL;
    size_t la = ckpt_stats_pack_len(a), lb = b ? ckpt_stats_pack_len(b) : 0;
    uint64_t *out = alloc_array(2 + (uint64_t)la + lb, sizeof *out);
    if (out) {
        out[0] = la, out[1] = lb;
        ckpt_stats_pack(a, out + 2);
        if (b) ckpt_stats_pack(b, out + 2 + la);
    } else {
        ckpt_fail_oom(err);
    }
    ckpt_stats_free(a);
    ckpt_stats_free(b);
    return out;
}

/* Attach the words w_file_item_stats_packed made (n of them) to item k of another instance. */
int w_file_attach_packed(ckpt_file *f, size_t k, const uint64_t *words, size_t n, ckpt_error *err)
{
    if (n < 2 || words[0] > n - 2 || words[1] > n - 2 - words[0])
        return ckpt_fail(err, NULL, CKPT_E_INVALID_ARGUMENT, CKPT_NONE, 0, "invalid packed statistics");
    ckpt_stats *a = ckpt_stats_unpack(words + 2, (size_t)words[0]);
    ckpt_stats *b = words[1] ? ckpt_stats_unpack(words + 2 + words[0], (size_t)words[1]) : NULL;
    if (!a || (words[1] && !b)) {
        ckpt_stats_free(a);
        ckpt_stats_free(b);
        return ckpt_fail(err, NULL, CKPT_E_INVALID_ARGUMENT, CKPT_NONE, 0, "invalid packed statistics");
    }
    return ckpt_file_attach_stats(f, k, a, b, err);
}

char *w_pair(const ckpt_file *opt, const ckpt_file *state, int progress_token)
{
    ckpt_pair_result *r = ckpt_pair(opt, state, PROGRESS(progress_token));
    if (!r) return NULL;
    char *json = ckpt_pair_json(r);
    ckpt_pair_result_free(r);
    return json;
}

/* The health pass over slots [first, first + count) (count CKPT_NONE: to the end); lr NaN for
 * none; state NULL without a model-state file. JSON, or NULL with err set. */
char *w_health(const ckpt_file *opt, const ckpt_file *state, double lr, uint64_t first, uint64_t count, int progress_token,
               ckpt_error *err)
{
    ckpt_health_options o = {lr, first, count, PROGRESS(progress_token)};
    return ckpt_health_json(opt, state, &o, err);
}

/* Export into a JS sink. names: NULL, or name_count pointers to NUL-terminated UTF-8 in wasm
 * memory; slots: NULL or slot_count u64. */
int w_export(const ckpt_file *f, int format, const char *const *names, size_t name_count, const uint64_t *slots,
             size_t slot_count, int sink, int progress_token, ckpt_error *err)
{
    ckpt_export_options o = {format, names, name_count, slots, slot_count, PROGRESS(progress_token)};
    ckpt_sink out = {(void *)(intptr_t)sink, sink_write};
    return ckpt_export(f, &o, &out, err);
}

int w_export_npy(const ckpt_file *f, uint64_t slot, int what, int sink, ckpt_error *err)
{
    ckpt_sink out = {(void *)(intptr_t)sink, sink_write};
    return ckpt_export_npy(f, slot, what, &out, err);
}

/* ---- writing ---- */

/* meta: per entry {id, step, count, m bytes, v bytes}; payloads: per entry {m, v} pointers in
 * wasm memory. config: {kind, beta1, beta2, epsilon, weightDecay} bit patterns; counter: NULL
 * for none; version 0 for the reference writer's choice. */
int w_write(const ckpt_schema *s, int dtype, const uint64_t *config, const uint64_t *counter, const uint64_t *meta,
            void *const *payloads, size_t entry_count, uint64_t version, int sink, ckpt_error *err)
{
    ckpt_entry_in *entries = alloc_array(entry_count, sizeof *entries);
    if (!entries) return ckpt_fail_oom(err);
    for (size_t k = 0; k < entry_count; k++) {
        const uint64_t *e = meta + 5 * k;
        entries[k] = (ckpt_entry_in){e[0], e[1], e[2], payloads[2 * k], payloads[2 * k + 1], e[3], e[4]};
    }
    ckpt_write_desc d = {s, dtype, {config[0], config[1], config[2], config[3], config[4]}, counter != NULL,
                         counter ? *counter : 0, entries, entry_count, version};
    ckpt_sink out = {(void *)(intptr_t)sink, sink_write};
    int rc = ckpt_write(&d, &out, err);
    free(entries);
    return rc;
}

int w_state_write(int family, const ckpt_schema *shapes, const void *const *values, const uint64_t *value_bytes, int sink,
                  ckpt_error *err)
{
    ckpt_sink out = {(void *)(intptr_t)sink, sink_write};
    return ckpt_state_write(family, shapes, values, value_bytes, &out, err);
}

/* ---- runs ---- */

/* n open optimizer files and their state files (entries 0 for none) as arrays of pointers in
 * wasm memory; lr: the health ratios' learning rate, NaN for none. JSON, or NULL with err set. */
char *w_run(const ckpt_file *const *opts, const ckpt_file *const *states, size_t n, double lr, int progress_token,
            ckpt_error *err)
{
    ckpt_run_options o = {PROGRESS(progress_token), lr};
    return ckpt_run_json(opts, states, n, &o, err);
}

/* The k = 1 gradient of the pair a → b into a JS sink (names and slots as for w_export). */
int w_run_export_gradient(const ckpt_file *a, const ckpt_file *b, int format, const char *const *names, size_t name_count,
                          const uint64_t *slots, size_t slot_count, int sink, int progress_token, ckpt_error *err)
{
    ckpt_export_options o = {format, names, name_count, slots, slot_count, PROGRESS(progress_token)};
    ckpt_sink out = {(void *)(intptr_t)sink, sink_write};
    return ckpt_run_export_gradient(a, b, &o, &out, err);
}
