/* The WebAssembly surface: thin shims over the public API (ckptscope.h only) for the JS package,
 * whose one module js/binding.js states every signature here; the structs it reads and their
 * layouts come from ckpt_abi_json (src/abi.c), not from this file.
 * Sources, sinks and progress listeners are JS objects named by small integers; their callbacks
 * are JS imports. 64-bit values (offsets, sizes, slots, steps) cross as wasm i64, which JS sees
 * as BigInt: nothing exact travels through a double. Errors live in a ckpt_error the caller owns
 * (one per JS handle): no global state here.
 *
 * size_t is 32 bits in wasm: every size computed here is checked before an allocation. */
#include "ckptscope.h"

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

static ckpt_source make_source(int id, uint64_t size) { return (ckpt_source){(void *)(intptr_t)id, source_read, size}; }

static int sink_write(void *ctx, const void *buf, size_t n) { return ckpt_js_write((int)(intptr_t)ctx, buf, n); }

static int progress(void *ctx, uint64_t done, uint64_t total)
{
    return ckpt_js_progress((int)(intptr_t)ctx, done, total);
}

#define PROGRESS(token) ((token) ? progress : NULL), (void *)(intptr_t)(token)

/* A size in wasm memory: count * elem bytes, or NULL (and no allocation) when it would not fit. */
static void *alloc_array(uint64_t count, size_t elem)
{
    uint64_t bytes;
    if (__builtin_mul_overflow(count, (uint64_t)elem, &bytes) || bytes > SIZE_MAX - 16) return NULL;
    return malloc(bytes ? (size_t)bytes : 1);
}

/* The self-description the binding reads once (malloc'ed JSON). */
char *w_abi(void) { return ckpt_abi_json(); }

/* ---- errors: one per JS handle ---- */

ckpt_error *w_error_new(void)
{
    ckpt_error *err = calloc(1, sizeof *err);
    if (err) ckpt_error_clear(err);
    return err;
}

/* A layout's or a description's value past 2^64 - 1 (decimal): the caller's input at fault. */
int w_value_too_large(ckpt_error *err, const char *decimal)
{
    int rc = ckpt_fail_value_too_large(err, CKPT_NONE, decimal);
    err->subject = CKPT_SUBJECT_EXPECTED;
    return rc;
}

void w_error_free(ckpt_error *err)
{
    ckpt_error_clear(err);
    free(err);
}

/* ---- schemas ---- */

/* map: NULL for no map; entries CKPT_NONE for none. */
ckpt_schema *w_schema_new(size_t n, const uint64_t *ranks, const uint64_t *dims, size_t flag_count,
                          const uint8_t *flags, const uint64_t *map, size_t map_count)
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

/* config: NULL, or a ckpt_config (copied). The schema must outlive the layout. NULL when schema
 * is NULL or out of memory. */
typedef struct w_layout {
    ckpt_expected exp;
    ckpt_config config;
    const ckpt_file *file; /* the open file it is of (its slot names), NULL for a layout of its own */
} w_layout;

w_layout *w_layout_new(const ckpt_schema *schema, int dtype, const ckpt_config *config, int keeps_random_counter,
                       int family)
{
    if (!schema) return NULL;
    w_layout *l = calloc(1, sizeof *l);
    if (!l) return NULL;
    if (config) l->config = *config;
    l->exp =
        (ckpt_expected){schema, dtype, config ? &l->config : NULL, keeps_random_counter, family, CKPT_READER_DEFAULT};
    return l;
}

/* Which TorchLean reader loads into the layout (format.md 8): ckpt_reader_by_name's id. */
int w_layout_set_reader(w_layout *l, int reader)
{
    if (!l || !ckpt_reader_rule_get(reader)) return CKPT_E_INVALID_ARGUMENT;
    l->exp.reader = reader;
    return 0;
}

/* An open file's layout (points into the file: free the layout first). NULL with err set when the
 * file broke before its layout was complete. */
w_layout *w_layout_of_file(const ckpt_file *f, ckpt_error *err)
{
    w_layout *l = calloc(1, sizeof *l);
    if (!l) {
        ckpt_error_set_oom(err);
        return NULL;
    }
    if (ckpt_file_layout(f, &l->exp, err)) {
        free(l);
        return NULL;
    }
    l->file = f;
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
    return ckpt_diff_files_json(&a->exp, a->file, &b->exp, b->file);
}

/* ---- open files ---- */

ckpt_file *w_open(int source, uint64_t size, unsigned flags, int progress_token, const char *name)
{
    ckpt_source src = make_source(source, size);
    ckpt_inspect_options opt = {flags, PROGRESS(progress_token)};
    return ckpt_open_named(&src, &opt, name);
}

char *w_file_report_json(const ckpt_file *f, unsigned opts) { return ckpt_report_json_opts(ckpt_file_report(f), opts); }

int w_file_report_write(const ckpt_file *f, int sink, ckpt_error *err)
{
    ckpt_sink out = {(void *)(intptr_t)sink, sink_write};
    return ckpt_report_json_write(ckpt_file_report(f), &out, err);
}

int w_file_error_code(const ckpt_file *f) { return ckpt_file_report(f)->error.code; }

/* The report's bulk arrays as columns (ckpt_columns, laid out as ckpt_abi_json says). */
ckpt_columns *w_columns_new(const ckpt_file *f) { return ckpt_columns_new(f); }

void w_columns_free(ckpt_columns *c) { ckpt_columns_free(c); }

/* The entry holding slot's moments, into out (a ckpt_entry_ref). */
int w_file_entry(const ckpt_file *f, uint64_t slot, ckpt_entry_ref *out, ckpt_error *err)
{
    return ckpt_file_entry_ref(f, slot, out, err);
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
    if (!json) ckpt_error_set_oom(err);
    return json;
}

/* The tensor's count and where its values start, into out (a ckpt_tensor_ref). */
int w_file_tensor(const ckpt_file *f, uint64_t i, ckpt_tensor_ref *out, ckpt_error *err)
{
    return ckpt_file_tensor_ref(f, i, out, err);
}

int w_file_read_tensor(const ckpt_file *f, uint64_t i, float *out, ckpt_error *err)
{
    return ckpt_file_read_tensor(f, i, out, err);
}

char *w_file_tensor_stats(const ckpt_file *f, uint64_t i, int progress_token, ckpt_error *err)
{
    ckpt_stats *values;
    if (ckpt_file_tensor_stats(f, i, PROGRESS(progress_token), &values, err)) return NULL;
    char *json = ckpt_stats_json(values);
    ckpt_stats_free(values);
    if (!json) ckpt_error_set_oom(err);
    return json;
}

/* ---- statistics gathered apart, by workers ---- */

size_t w_file_item_count(const ckpt_file *f)
{
    const ckpt_report *rep = ckpt_file_report(f);
    return ckpt_family_has_role(rep->family, CKPT_ROLE_OPTIMIZER) ? rep->entries_len : rep->tensors_len;
}

/* The bytes item k's statistics read (its payloads), CKPT_NONE when there is no item k. */
uint64_t w_file_item_bytes(const ckpt_file *f, size_t k) { return ckpt_file_item_bytes(f, k); }

/* Item k's statistics as packed words (ckpt_packed_stats, then the words), NULL with err. */
uint64_t *w_file_item_stats_packed(const ckpt_file *f, size_t k, int progress_token, ckpt_error *err)
{
    return ckpt_file_item_stats_packed(f, k, PROGRESS(progress_token), err);
}

/* Attach the words w_file_item_stats_packed made (n of them) to item k of another instance. */
int w_file_attach_packed(ckpt_file *f, size_t k, const uint64_t *words, size_t n, ckpt_error *err)
{
    return ckpt_file_attach_packed(f, k, words, n, err);
}

char *w_pair(const ckpt_file *opt, const ckpt_file *state, int progress_token)
{
    ckpt_pair_result *r = ckpt_pair(opt, state, PROGRESS(progress_token));
    if (!r) return NULL;
    char *json = ckpt_pair_json(r);
    ckpt_pair_result_free(r);
    return json;
}

/* The same with ckpt_pair_with's options: the state file ordered by the model's names first
 * (names NULL: by shape, for a family that keeps no module order), the names given as frozen,
 * the optimizer's own (training-time) model (NULL: none), the labels the texts use and the world
 * size a DeepSpeed checkpoint will be loaded on (0: not given); state NULL: the names alone. */
char *w_pair_with(ckpt_file *opt, ckpt_file *state, const char *const *names, size_t name_count,
                  const char *const *frozen, size_t frozen_count, const ckpt_file *trained, const char *trained_label,
                  const char *model_label, double world_size, int progress_token)
{
    ckpt_pair_options o = {names,   name_count,    frozen,      frozen_count,
                           trained, trained_label, model_label, (uint64_t)world_size};
    ckpt_pair_result *r = ckpt_pair_with(opt, state, &o, PROGRESS(progress_token));
    if (!r) return NULL;
    char *json = ckpt_pair_json(r);
    ckpt_pair_result_free(r);
    return json;
}

/* The health pass over slots [first, first + count) (count CKPT_NONE: to the end); lr NaN for
 * none; state NULL without a model-state file; band 0: the default ratio band, else [low, high].
 * JSON, or NULL with err set. */
char *w_health(const ckpt_file *opt, const ckpt_file *state, double lr, int band, double low, double high,
               uint64_t first, uint64_t count, int progress_token, ckpt_error *err)
{
    ckpt_health_options o = {lr, first, count, PROGRESS(progress_token), band != 0, low, high};
    return ckpt_health_json(opt, state, &o, err);
}

/* Is [low, high] a ratio band? 0, or CKPT_E_INVALID_ARGUMENT with the reason in err. */
int w_health_ratio_band(double low, double high, ckpt_error *err) { return ckpt_health_ratio_band(low, high, err); }

/* TorchLean to PyTorch into a JS sink (ckpt_convert_to_torch): state NULL for none; lr read when
 * has_lr; prefix NULL or UTF-8 in wasm memory. 0, or the code with err set. */
int w_convert_torch(const ckpt_file *f, ckpt_file *state, int has_lr, double lr, const char *prefix, int sink,
                    int progress_token, ckpt_error *err)
{
    ckpt_torch_options o = {has_lr != 0, lr, prefix, PROGRESS(progress_token)};
    ckpt_sink out = {(void *)(intptr_t)sink, sink_write};
    return ckpt_convert_to_torch(f, state, &o, &out, err);
}

/* A name-keyed PyTorch optimizer, paired with its model, as a consolidated torch.optim state dict
 * keyed by ids into a JS sink (ckpt_convert_to_ids): stored nonzero keeps each group's stored
 * order; prefix NULL or UTF-8 in wasm memory. 0, or the code with err set. */
int w_convert_ids(const ckpt_file *f, int stored, const char *prefix, int sink, int progress_token, ckpt_error *err)
{
    ckpt_ids_options o = {stored != 0, prefix, PROGRESS(progress_token)};
    ckpt_sink out = {(void *)(intptr_t)sink, sink_write};
    return ckpt_convert_to_ids(f, &o, &out, err);
}

/* That conversion's warnings (ckpt_convert_to_ids_warnings): a JSON array of texts, or NULL
 * with err set. */
char *w_convert_ids_warnings(const ckpt_file *f, int stored, ckpt_error *err)
{
    ckpt_ids_options o = {stored != 0, NULL, NULL, NULL};
    return ckpt_convert_to_ids_warnings(f, &o, err);
}

/* The options of a conversion to TLADAMF, as w_convert, w_ds_convert and w_dcp_convert take them (format.md 8
 * "Conversion"; the PyTorch options of 10.6). */
static ckpt_convert_options convert_options(uint64_t version, int oldest, int reader, int supply_counter,
                                            uint64_t counter, int drop_counter, int untie, int round_to_float32,
                                            int progress_token, int kind, int has_weight_decay, double weight_decay,
                                            int has_betas, double beta1, double beta2, int has_eps, double eps,
                                            int drop_amsgrad)
{
    return (ckpt_convert_options){version,
                                  oldest != 0,
                                  reader,
                                  supply_counter != 0,
                                  counter,
                                  drop_counter != 0,
                                  untie != 0,
                                  round_to_float32 != 0,
                                  PROGRESS(progress_token),
                                  kind,
                                  has_weight_decay != 0,
                                  has_betas != 0,
                                  has_eps != 0,
                                  weight_decay,
                                  beta1,
                                  beta2,
                                  eps,
                                  drop_amsgrad != 0};
}

/* A DeepSpeed folder as a universal checkpoint (ckpt_universal_plan and the rest): the plan, or
 * NULL with err set; its JSON (NULL: out of memory); file `index` of it into a JS sink, 0 or the
 * code; the plan freed. */
ckpt_universal *w_universal_plan(const ckpt_file *f, ckpt_error *err) { return ckpt_universal_plan(f, err); }

char *w_universal_json(const ckpt_universal *u) { return ckpt_universal_plan_json(u); }

int w_universal_write(const ckpt_universal *u, uint64_t index, int sink, ckpt_error *err)
{
    ckpt_sink out = {(void *)(intptr_t)sink, sink_write};
    return ckpt_universal_write(u, index, &out, err);
}

void w_universal_free(ckpt_universal *u) { ckpt_universal_free(u); }

/* DeepSpeed to a consolidated torch.save file into a JS sink (ckpt_ds_consolidate): which
 * CKPT_DS_OPTIMIZER or CKPT_DS_MODEL; prefix NULL or UTF-8. 0, or the code with err set. */
int w_ds_consolidate(const ckpt_file *f, int which, const char *prefix, int sink, int progress_token, ckpt_error *err)
{
    ckpt_ds_consolidate_options o = {which, prefix, PROGRESS(progress_token)};
    ckpt_sink out = {(void *)(intptr_t)sink, sink_write};
    return ckpt_ds_consolidate(f, &o, &out, err);
}

/* A DCP folder to a consolidated torch.save file into a JS sink (ckpt_dcp_consolidate): which
 * CKPT_DS_OPTIMIZER or CKPT_DS_MODEL; prefix NULL or UTF-8. 0, or the code with err set. */
int w_dcp_consolidate(const ckpt_file *f, int which, const char *prefix, int sink, int progress_token, ckpt_error *err)
{
    ckpt_ds_consolidate_options o = {which, prefix, PROGRESS(progress_token)};
    ckpt_sink out = {(void *)(intptr_t)sink, sink_write};
    return ckpt_dcp_consolidate(f, &o, &out, err);
}

/* Its warnings (ckpt_dcp_consolidate_warnings): a JSON array of texts, or NULL out of memory. */
char *w_dcp_consolidate_warnings(const ckpt_file *f) { return ckpt_dcp_consolidate_warnings(f); }

/* A PyTorch optimizer file and its model written as a DCP folder (ckpt_dcp_write): torch113 nonzero
 * for torch 1.13's form; checkpoint_id and save_id NULL or UTF-8; the data file's bytes into one
 * JS sink, then .metadata's into another. The result's JSON, or NULL with err set. */
char *w_dcp_write(ckpt_file *opt, ckpt_file *model, int torch113, const char *checkpoint_id, const char *save_id,
                  int data_sink, int metadata_sink, int progress_token, ckpt_error *err)
{
    ckpt_dcp_write_options o = {torch113 != 0, checkpoint_id, save_id, PROGRESS(progress_token)};
    ckpt_sink data = {(void *)(intptr_t)data_sink, sink_write}, meta = {(void *)(intptr_t)metadata_sink, sink_write};
    ckpt_dcp_write_result res;
    if (ckpt_dcp_write(opt, model, &o, &data, &meta, &res, err)) return NULL;
    char *json = ckpt_dcp_write_result_json(&res);
    if (!json) ckpt_error_set_oom(err);
    return json;
}

/* A DeepSpeed conversion's warnings (ckpt_ds_consolidate_warnings): a JSON array of texts, or
 * NULL when out of memory. */
char *w_ds_consolidate_warnings(const ckpt_file *f) { return ckpt_ds_consolidate_warnings(f); }

/* A folder to TorchLean through its consolidated pair (ckpt_ds_convert, ckpt_dcp_convert), the
 * options as w_convert's; frozen: NULL or frozen_count UTF-8 names. The result JSON, with
 * "pairError" when the pair holds only if the slots without state are not trained; or NULL with
 * err set. */
typedef int (*pair_convert_fn)(const ckpt_file *, const ckpt_convert_options *, const char *const *, size_t,
                               const ckpt_sink *, ckpt_convert_result *, char **, ckpt_error *);

static char *pair_convert(pair_convert_fn fn, const ckpt_file *f, const ckpt_convert_options *o,
                          const char *const *frozen, size_t frozen_count, int sink, ckpt_error *err)
{
    ckpt_sink out = {(void *)(intptr_t)sink, sink_write};
    ckpt_convert_result res;
    char *note = NULL;
    if (fn(f, o, frozen, frozen_count, &out, &res, &note, err)) return NULL;
    char *json = ckpt_convert_result_json(&res, note);
    free(note);
    if (!json) ckpt_error_set_oom(err);
    return json;
}

char *w_ds_convert(const ckpt_file *f, uint64_t version, int oldest, int reader, int supply_counter, uint64_t counter,
                   int drop_counter, int untie, int round_to_float32, int sink, int progress_token, ckpt_error *err,
                   int kind, int has_weight_decay, double weight_decay, int has_betas, double beta1, double beta2,
                   int has_eps, double eps, int drop_amsgrad, const char *const *frozen, size_t frozen_count)
{
    ckpt_convert_options o = convert_options(version, oldest, reader, supply_counter, counter, drop_counter, untie,
                                             round_to_float32, progress_token, kind, has_weight_decay, weight_decay,
                                             has_betas, beta1, beta2, has_eps, eps, drop_amsgrad);
    return pair_convert(ckpt_ds_convert, f, &o, frozen, frozen_count, sink, err);
}

char *w_dcp_convert(const ckpt_file *f, uint64_t version, int oldest, int reader, int supply_counter, uint64_t counter,
                    int drop_counter, int untie, int round_to_float32, int sink, int progress_token, ckpt_error *err,
                    int kind, int has_weight_decay, double weight_decay, int has_betas, double beta1, double beta2,
                    int has_eps, double eps, int drop_amsgrad, const char *const *frozen, size_t frozen_count)
{
    ckpt_convert_options o = convert_options(version, oldest, reader, supply_counter, counter, drop_counter, untie,
                                             round_to_float32, progress_token, kind, has_weight_decay, weight_decay,
                                             has_betas, beta1, beta2, has_eps, eps, drop_amsgrad);
    return pair_convert(ckpt_dcp_convert, f, &o, frozen, frozen_count, sink, err);
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

/* meta: a ckpt_entry_meta per entry; payloads: per entry {m, v} pointers in wasm memory.
 * config: a ckpt_config; counter: NULL for none; version 0 for the reference writer's choice. */
int w_write(const ckpt_schema *s, int dtype, const ckpt_config *config, const uint64_t *counter,
            const ckpt_entry_meta *meta, void *const *payloads, size_t entry_count, uint64_t version, int sink,
            ckpt_error *err)
{
    ckpt_entry_in *entries = alloc_array(entry_count, sizeof *entries);
    if (!entries) return ckpt_error_set_oom(err);
    for (size_t k = 0; k < entry_count; k++) {
        const ckpt_entry_meta *e = &meta[k];
        entries[k] =
            (ckpt_entry_in){e->id, e->step, e->count, payloads[2 * k], payloads[2 * k + 1], e->m_bytes, e->v_bytes};
    }
    ckpt_write_desc d = {s, dtype, *config, counter != NULL, counter ? *counter : 0, entries, entry_count, version};
    ckpt_sink out = {(void *)(intptr_t)sink, sink_write};
    int rc = ckpt_write(&d, &out, err);
    free(entries);
    return rc;
}

int w_state_write(int family, const ckpt_schema *shapes, const void *const *values, const uint64_t *value_bytes,
                  int sink, ckpt_error *err)
{
    ckpt_sink out = {(void *)(intptr_t)sink, sink_write};
    return ckpt_state_write(family, shapes, values, value_bytes, &out, err);
}

/* ---- runs ---- */

/* n open optimizer files and their state files (entries 0 for none) as arrays of pointers in
 * wasm memory; lr: the health ratios' learning rate, NaN for none; residual_limit: NaN for the
 * default. JSON, or NULL with err set. */
char *w_run(const ckpt_file *const *opts, const ckpt_file *const *states, size_t n, double lr, int band, double low,
            double high, double residual_limit, int progress_token, ckpt_error *err)
{
    ckpt_run_options o = {PROGRESS(progress_token), lr, band != 0, low, high, residual_limit};
    return ckpt_run_json(opts, states, n, &o, err);
}

/* The k = 1 gradient of the pair a → b into a JS sink (names and slots as for w_export). */
int w_run_export_gradient(const ckpt_file *a, const ckpt_file *b, int format, const char *const *names,
                          size_t name_count, const uint64_t *slots, size_t slot_count, int sink, int progress_token,
                          ckpt_error *err)
{
    ckpt_export_options o = {format, names, name_count, slots, slot_count, PROGRESS(progress_token)};
    ckpt_sink out = {(void *)(intptr_t)sink, sink_write};
    return ckpt_run_export_gradient(a, b, &o, &out, err);
}

/* Convert an open TLADAMF file into a JS sink (format.md 8 "Conversion"). version: 2..5, or 0
 * with oldest (1) or reader (an id); counter < 0: none supplied. The result as JSON
 * {"version","dtype","rounded","maxRelativeError"}, NULL with err set on failure. */
char *w_convert(const ckpt_file *f, uint64_t version, int oldest, int reader, int supply_counter, uint64_t counter,
                int drop_counter, int untie, int round_to_float32, int sink, int progress_token, ckpt_error *err,
                int kind, int has_weight_decay, double weight_decay, int has_betas, double beta1, double beta2,
                int has_eps, double eps, int drop_amsgrad)
{
    ckpt_convert_options o = convert_options(version, oldest, reader, supply_counter, counter, drop_counter, untie,
                                             round_to_float32, progress_token, kind, has_weight_decay, weight_decay,
                                             has_betas, beta1, beta2, has_eps, eps, drop_amsgrad);
    ckpt_sink out = {(void *)(intptr_t)sink, sink_write};
    ckpt_convert_result res;
    if (ckpt_convert(f, &o, &out, &res, err)) return NULL;
    char *json = ckpt_convert_result_json(&res, NULL);
    if (!json) ckpt_error_set_oom(err);
    return json;
}

/* ---- Hugging Face Trainer folders ---- */

/* training_args.bin and trainer_state.json read from a JS source, as JSON (ckpt_training_args_json,
 * ckpt_trainer_state_json), or NULL with err set. */
char *w_training_args(int source, uint64_t size, ckpt_error *err)
{
    ckpt_source src = make_source(source, size);
    ckpt_training_args a;
    if (ckpt_training_args_read(&src, "training_args.bin", &a, err)) return NULL;
    char *json = ckpt_training_args_json(&a);
    ckpt_training_args_free(&a);
    if (!json) ckpt_error_set_oom(err);
    return json;
}

char *w_trainer_state(int source, uint64_t size, ckpt_error *err)
{
    ckpt_source src = make_source(source, size);
    ckpt_trainer_state s;
    if (ckpt_trainer_state_read(&src, &s, err)) return NULL;
    char *json = ckpt_trainer_state_json(&s);
    ckpt_trainer_state_free(&s);
    if (!json) ckpt_error_set_oom(err);
    return json;
}

/* ---- Accelerate folders ---- */

/* random_states_{p}.pkl read from a JS source (`name` names it in texts), as JSON
 * (ckpt_accelerate_random_states_json), or NULL with err set. */
char *w_accelerate_random_states(int source, uint64_t size, const char *name, ckpt_error *err)
{
    ckpt_source src = make_source(source, size);
    ckpt_accelerate_random_states s;
    if (ckpt_accelerate_random_states_read(&src, name, &s, err)) return NULL;
    char *json = ckpt_accelerate_random_states_json(&s);
    ckpt_accelerate_random_states_free(&s);
    if (!json) ckpt_error_set_oom(err);
    return json;
}
