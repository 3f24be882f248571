/* The core describing itself to a caller across a boundary (the WebAssembly module's JS):
 * the family table, the dtypes, every ckpt_code by name, the flag constants, and the layouts
 * (offsets and sizes, as this build lays them out) of the structs that caller reads and
 * writes. The JS binding (js/binding.js) reads ckpt_abi_json once at instantiation, so no JS
 * file states a width, a code, a stride or a magic. Also the flattened views of a file that
 * such a caller reads (columns, entry and tensor references, packed statistics). */
#include "core/core.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/* ---- the description ---- */

#define CODE(name)                                                                                                     \
    {                                                                                                                  \
        CKPT_E_##name, #name                                                                                           \
    }
static const struct {
    int code;
    const char *name;
} codes[] = {
    {CKPT_OK, "OK"},
    CODE(TRUNCATED),
    CODE(TRAILING_BYTES),
    CODE(VALUE_TOO_LARGE),
    CODE(MALFORMED_IN_MEMORY_SCHEMA),
    CODE(MALFORMED_EXPECTED_SCHEMA),
    CODE(PARAMETER_COUNT_MISMATCH),
    CODE(RANK_MISMATCH),
    CODE(SHAPE_MISMATCH),
    CODE(ELEMENT_COUNT_MISMATCH),
    CODE(INVALID_REQUIRES_GRAD_FLAG),
    CODE(REQUIRES_GRAD_MISMATCH),
    CODE(STORAGE_ALIAS_MISMATCH),
    CODE(UNSUPPORTED_FAMILY),
    CODE(VERSION2_CANNOT_SHARE),
    CODE(UNSUPPORTED_VERSION),
    CODE(UNSUPPORTED_DTYPE),
    CODE(DTYPE_DIFFERS),
    CODE(INVALID_OPTIMIZER_TAG),
    CODE(INVALID_BETA1),
    CODE(INVALID_BETA2),
    CODE(INVALID_EPSILON),
    CODE(ADAM_WEIGHT_DECAY),
    CODE(ADAMW_WEIGHT_DECAY),
    CODE(INVALID_COUNTER_FLAG),
    CODE(CONFIG_DIFFERS),
    CODE(ENTRY_COUNT_MISMATCH),
    CODE(DUPLICATE_ID),
    CODE(INVALID_ID),
    CODE(NOT_OWNER),
    CODE(ZERO_STEP),
    CODE(MOMENT_SIZE_MISMATCH),
    CODE(INVALID_PAYLOAD),
    CODE(NO_COUNTER_REFERENCE),
    CODE(MALFORMED_SHARING_MAP),
    CODE(IO),
    CODE(NO_MEMORY),
    CODE(CANCELLED),
    CODE(VERSION_CANNOT_REPRESENT),
    CODE(INVALID_ARGUMENT),
    CODE(FROZEN_SLOT),
    CODE(NO_SUCH_SLOT),
    CODE(TENSOR_COUNT_MISMATCH),
    CODE(STATE_SHAPE_MISMATCH),
    CODE(STATE_ELEMENT_COUNT_MISMATCH),
    CODE(PAIR_COUNT),
    CODE(PAIR_SHAPE),
    CODE(PAIR_TIED_VALUES),
    CODE(NOT_READABLE),
    CODE(WRONG_FAMILY),
    CODE(CONVERSION_LOSES),
    CODE(ZIP_NOT_FOUND),
    CODE(ZIP_MALFORMED),
    CODE(ZIP_UNSUPPORTED),
    CODE(PICKLE_MALFORMED),
    CODE(PICKLE_OPCODE),
    CODE(SAFETENSORS_HEADER),
    CODE(SAFETENSORS_TENSOR),
    CODE(SAFETENSORS_SIZE),
    CODE(SAFETENSORS_LAYOUT),
    CODE(TORCH_NOT_CHECKPOINT),
    CODE(TORCH_UNSUPPORTED),
    CODE(TORCH_STORAGE),
    CODE(TORCH_TENSOR_BOUNDS),
    CODE(TORCH_STEP),
    CODE(TORCH_MALFORMED),
    CODE(TRAINER_FILE),
    CODE(TORCH_UNPLACED),
    CODE(TORCH_COUNT),
    CODE(TORCH_NAMED),
    CODE(TORCH_NO_PAIR),
    CODE(TORCH_UNTRAINED),
    CODE(TORCH_MODELS_DIFFER),
    CODE(FOLDER_BUNDLE),
    CODE(DS_FOLDER),
    CODE(DS_KEY),
    CODE(DS_SAVES),
    CODE(DS_UNSUPPORTED),
    CODE(DS_LAYOUT),
    CODE(DS_STEP),
    CODE(DS_NAMES),
    CODE(DS_PAIR_MODEL),
    CODE(DS_PAIR_ORDER),
    CODE(DS_PAIR_WORLD),
    CODE(DCP_FOLDER),
    CODE(DCP_METADATA),
    CODE(DCP_STORAGE),
    CODE(DCP_RECORD),
    CODE(DCP_CHUNKS),
    CODE(DCP_STATE),
    CODE(BY_NAME),
};
#undef CODE

/* The flag and enum constants a caller passes or meets. */
#define CONST(name)                                                                                                    \
    {                                                                                                                  \
#name, CKPT_##name                                                                                             \
    }
static const struct {
    const char *name;
    long long value;
} constants[] = {
    CONST(INSPECT_STATS), CONST(JSON_NO_BULK),   CONST(EXPORT_SAFETENSORS),
    CONST(EXPORT_NPZ),    CONST(NPY_M),          CONST(NPY_V),
    CONST(NPY_VALUES),    CONST(SUBJECT_FILE),   CONST(SUBJECT_EXPECTED),
    CONST(FAMILY_ANY),    CONST(DTYPE_ANY),      CONST(ADAM),
    CONST(ADAMW),         CONST(ROLE_OPTIMIZER), CONST(ROLE_MODEL),
};
#undef CONST

/* A struct's layout: name, size, and its fields (JS names) with offset and size. */
typedef struct field_desc {
    const char *name;
    size_t offset, size;
} field_desc;

#define FIELD(type, member, js)                                                                                        \
    {                                                                                                                  \
        js, offsetof(type, member), sizeof(((type *)0)->member)                                                        \
    }
static const field_desc columns_fields[] = {
    FIELD(ckpt_columns, n, "n"),
    FIELD(ckpt_columns, flag_count, "flagCount"),
    FIELD(ckpt_columns, dims_len, "dimsLen"),
    FIELD(ckpt_columns, entries_len, "entriesLen"),
    FIELD(ckpt_columns, tensors_len, "tensorsLen"),
    FIELD(ckpt_columns, has_map, "hasMap"),
    FIELD(ckpt_columns, complete, "complete"),
    FIELD(ckpt_columns, dim_start, "dimStart"),
    FIELD(ckpt_columns, dims, "dims"),
    FIELD(ckpt_columns, sizes, "sizes"),
    FIELD(ckpt_columns, too_big, "tooBig"),
    FIELD(ckpt_columns, flags, "flags"),
    FIELD(ckpt_columns, reps, "reps"),
    FIELD(ckpt_columns, broken, "broken"),
    FIELD(ckpt_columns, entries, "entries"),
    FIELD(ckpt_columns, tensors, "tensors"),
};
static const field_desc entry_row_fields[] = {
    FIELD(ckpt_entry_row, id, "id"),
    FIELD(ckpt_entry_row, step, "step"),
    FIELD(ckpt_entry_row, count, "count"),
    FIELD(ckpt_entry_row, offset, "offset"),
    FIELD(ckpt_entry_row, m_offset, "mOffset"),
    FIELD(ckpt_entry_row, v_offset, "vOffset"),
};
static const field_desc tensor_row_fields[] = {
    FIELD(ckpt_tensor_row, count, "count"),
    FIELD(ckpt_tensor_row, offset, "offset"),
    FIELD(ckpt_tensor_row, data_offset, "dataOffset"),
};
static const field_desc entry_ref_fields[] = {
    FIELD(ckpt_entry_ref, owner, "owner"),   FIELD(ckpt_entry_ref, id, "id"),
    FIELD(ckpt_entry_ref, step, "step"),     FIELD(ckpt_entry_ref, count, "count"),
    FIELD(ckpt_entry_ref, offset, "offset"), FIELD(ckpt_entry_ref, m_bytes, "mBytes"),
};
static const field_desc tensor_ref_fields[] = {
    FIELD(ckpt_tensor_ref, count, "count"),
    FIELD(ckpt_tensor_ref, data_offset, "dataOffset"),
};
static const field_desc entry_meta_fields[] = {
    FIELD(ckpt_entry_meta, id, "id"),          FIELD(ckpt_entry_meta, step, "step"),
    FIELD(ckpt_entry_meta, count, "count"),    FIELD(ckpt_entry_meta, m_bytes, "mBytes"),
    FIELD(ckpt_entry_meta, v_bytes, "vBytes"),
};
static const field_desc packed_fields[] = {
    FIELD(ckpt_packed_stats, a_words, "aWords"),
    FIELD(ckpt_packed_stats, b_words, "bWords"),
};
static const field_desc config_fields[] = {
    FIELD(ckpt_config, kind, "kind"),
    FIELD(ckpt_config, beta1, "beta1"),
    FIELD(ckpt_config, beta2, "beta2"),
    FIELD(ckpt_config, epsilon, "epsilon"),
    FIELD(ckpt_config, weight_decay, "weightDecay"),
};
#undef FIELD

#define STRUCT(js, type, fields)                                                                                       \
    {                                                                                                                  \
        js, sizeof(type), fields, sizeof fields / sizeof fields[0]                                                     \
    }
static const struct {
    const char *name;
    size_t size;
    const field_desc *fields;
    size_t count;
} structs[] = {
    STRUCT("columns", ckpt_columns, columns_fields),         STRUCT("entryRow", ckpt_entry_row, entry_row_fields),
    STRUCT("tensorRow", ckpt_tensor_row, tensor_row_fields), STRUCT("entryRef", ckpt_entry_ref, entry_ref_fields),
    STRUCT("tensorRef", ckpt_tensor_ref, tensor_ref_fields), STRUCT("entryMeta", ckpt_entry_meta, entry_meta_fields),
    STRUCT("packedStats", ckpt_packed_stats, packed_fields), STRUCT("config", ckpt_config, config_fields),
};
#undef STRUCT

#define COUNT(a) (sizeof(a) / sizeof(a)[0])

static const struct {
    int id;
    const char *name, *extension;
} export_formats[] = {{CKPT_EXPORT_SAFETENSORS, "safetensors", ".safetensors"}, {CKPT_EXPORT_NPZ, "npz", ".npz"}};

static void j_key(strbuf *sb, const char *key)
{
    j_string(sb, key);
    sb_putc(sb, ':');
}

static void j_dtype(strbuf *sb, int dtype)
{
    const char *name = ckpt_dtype_name(dtype);
    if (name) j_string(sb, name);
    else sb_lit(sb, "null");
}

char *ckpt_abi_json(void)
{
    strbuf sb = {0};
    sb_lit(&sb, "{\"families\":[");
    for (size_t k = 0; k < ckpt_family_count(); k++) {
        const ckpt_family *f = ckpt_family_at(k);
        if (k) sb_putc(&sb, ',');
        sb_printf(&sb, "{\"id\":%d,", f->id);
        j_key(&sb, "magic"), j_string(&sb, f->magic), sb_putc(&sb, ',');
        j_key(&sb, "name"), j_string(&sb, f->name), sb_putc(&sb, ',');
        j_key(&sb, "prefix"), j_string(&sb, f->prefix), sb_putc(&sb, ',');
        j_key(&sb, "versionMin"), j_u64(&sb, f->version_min), sb_putc(&sb, ',');
        j_key(&sb, "versionMax"), j_u64(&sb, f->version_max), sb_putc(&sb, ',');
        sb_printf(&sb, "\"kind\":\"%s\",", f->role & CKPT_ROLE_OPTIMIZER ? "optimizer" : "state");
        sb_printf(&sb, "\"role\":%u,", f->role);
        /* a magic of 7 bytes that the front door compares, or a name whose files a probe knows */
        sb_printf(&sb, "\"fixedMagic\":%s,", f->impl->probe ? "false" : "true");
        j_key(&sb, "elementDtype"), j_dtype(&sb, f->element_dtype), sb_putc(&sb, '}');
    }
    sb_lit(&sb, "],\"dtypes\":[");
    /* "dtypes": the ones TorchLean's layouts name; "tensorDtypes": the whole table */
    for (int d = 0, k = 0; d < CKPT_DTYPE_COUNT; d++) {
        if (!ckpt_dtype_in_layouts(d)) continue;
        if (k++) sb_putc(&sb, ',');
        sb_printf(&sb, "{\"id\":%d,\"name\":\"%s\",\"width\":%u}", d, ckpt_dtype_name(d), ckpt_dtype_width(d));
    }
    sb_lit(&sb, "],\"tensorDtypes\":[");
    for (int d = 0; d < CKPT_DTYPE_COUNT; d++) {
        if (d) sb_putc(&sb, ',');
        sb_printf(&sb, "{\"id\":%d,\"name\":\"%s\",\"width\":%u,\"kind\":\"%c\",\"stats\":%s,", d, ckpt_dtype_name(d),
                  ckpt_dtype_width(d), ckpt_dtype_kind(d), ckpt_dtype_has_stats(d) ? "true" : "false");
        j_key(&sb, "safetensors"), j_string(&sb, ckpt_dtype_safetensors_name(d)), sb_putc(&sb, ',');
        j_key(&sb, "numpy");
        if (ckpt_dtype_numpy_name(d)) j_string(&sb, ckpt_dtype_numpy_name(d));
        else sb_lit(&sb, "null");
        sb_putc(&sb, '}');
    }
    /* the optimizer kinds by their word (the layout JSON's, the CLI's --kind) */
    sb_lit(&sb, "],\"kinds\":[");
    for (int k = CKPT_ADAM; k <= CKPT_ADAMW; k++)
        sb_printf(&sb, "%s{\"id\":%d,\"name\":\"%s\"}", k ? "," : "", k, ckpt_kind_name(k));
    /* export's formats, chosen by the output's extension */
    sb_lit(&sb, "],\"exportFormats\":[");
    for (size_t k = 0; k < COUNT(export_formats); k++)
        sb_printf(&sb, "%s{\"id\":%d,\"name\":\"%s\",\"extension\":\"%s\"}", k ? "," : "", export_formats[k].id,
                  export_formats[k].name, export_formats[k].extension);
    sb_lit(&sb, "],\"codes\":{");
    for (size_t k = 0; k < COUNT(codes); k++) sb_printf(&sb, "%s\"%s\":%d", k ? "," : "", codes[k].name, codes[k].code);
    sb_lit(&sb, "},\"constants\":{");
    for (size_t k = 0; k < COUNT(constants); k++)
        sb_printf(&sb, "%s\"%s\":%lld", k ? "," : "", constants[k].name, constants[k].value);
    /* 2^64 - 1 does not fit a JSON number a reader keeps exact: a decimal string. */
    sb_lit(&sb, ",\"NONE\":");
    j_u64(&sb, CKPT_NONE);
    sb_printf(&sb, "},\"pointerSize\":%zu,\"structs\":{", sizeof(void *));
    for (size_t k = 0; k < COUNT(structs); k++) {
        sb_printf(&sb, "%s\"%s\":{\"size\":%zu,\"fields\":{", k ? "," : "", structs[k].name, structs[k].size);
        for (size_t j = 0; j < structs[k].count; j++) {
            const field_desc *fd = &structs[k].fields[j];
            sb_printf(&sb, "%s\"%s\":{\"offset\":%zu,\"size\":%zu}", j ? "," : "", fd->name, fd->offset, fd->size);
        }
        sb_lit(&sb, "}}");
    }
    sb_lit(&sb, "}}");
    return sb_take(&sb);
}

/* ---- the flattened views ---- */

/* count * elem bytes, or NULL (no allocation) when that does not fit in memory. */
static void *alloc_array(uint64_t count, size_t elem)
{
    uint64_t bytes;
    if (ckpt_mul_overflows(count, elem, &bytes) || bytes > SIZE_MAX - 16) return NULL;
    return malloc(bytes ? (size_t)bytes : 1);
}

/* The columns and whether reps is their own copy (else the schema's stored map, shared). */
typedef struct columns_owned {
    ckpt_columns c;
    bool own_reps;
    uint64_t *sizes; /* the schema computes sizes when asked: the columns hold them */
    uint8_t *too_big;
} columns_owned;

void ckpt_columns_free(ckpt_columns *c)
{
    if (!c) return;
    columns_owned *owned = (columns_owned *)c;
    if (owned->own_reps) free(c->reps);
    free(owned->sizes);
    free(owned->too_big);
    free(c->broken);
    free(c->entries);
    free(c->tensors);
    free(c);
}

ckpt_columns *ckpt_columns_new(const ckpt_file *f)
{
    const ckpt_report *rep = ckpt_file_report(f);
    const ckpt_schema *s = rep->schema;
    if ((s && s->n > UINT32_MAX) || rep->entries_len > UINT32_MAX || rep->tensors_len > UINT32_MAX) return NULL;
    columns_owned *owned = calloc(1, sizeof *owned);
    if (!owned) return NULL;
    ckpt_columns *c = &owned->c;
    if (s) {
        size_t n = s->n;
        c->n = (uint32_t)n;
        c->flag_count = (uint32_t)s->flag_count;
        c->dims_len = (uint32_t)s->dim_start[n];
        c->has_map = s->has_map;
        c->complete = rep->schema_complete;
        c->dim_start = s->dim_start;
        c->dims = s->dims;
        if (!(owned->sizes = alloc_array(n, sizeof *owned->sizes)) || !(owned->too_big = alloc_array(n, 1))) goto fail;
        for (size_t i = 0; i < n; i++) {
            bool too_big;
            owned->sizes[i] = ckpt_schema_size(s, i, &too_big);
            owned->too_big[i] = too_big;
        }
        c->sizes = owned->sizes;
        c->too_big = owned->too_big;
        c->flags = s->requires_grad;
        if (rep->schema_complete) {
            /* a stored map of every slot is representative?(i) itself: shared, not copied */
            if (s->has_map && s->map_count == n) c->reps = s->map;
            else {
                owned->own_reps = true;
                if (!(c->reps = alloc_array(n, sizeof *c->reps))) goto fail;
                for (size_t i = 0; i < n; i++) c->reps[i] = ckpt_schema_representative(s, i);
            }
            if (!(c->broken = alloc_array(n, 1))) goto fail;
            ckpt_schema_mark_sharing_faults(s, c->broken);
        }
    }
    c->entries_len = (uint32_t)rep->entries_len;
    if (!(c->entries = alloc_array(rep->entries_len, sizeof *c->entries))) goto fail;
    for (size_t k = 0; k < rep->entries_len; k++) {
        const ckpt_entry_info *e = &rep->entries[k];
        c->entries[k] = (ckpt_entry_row){e->id, e->step, e->count, e->offset, e->m_offset, e->v_offset};
    }
    c->tensors_len = (uint32_t)rep->tensors_len;
    if (!(c->tensors = alloc_array(rep->tensors_len, sizeof *c->tensors))) goto fail;
    for (size_t k = 0; k < rep->tensors_len; k++) {
        const ckpt_tensor_info *t = &rep->tensors[k];
        c->tensors[k] = (ckpt_tensor_row){t->count, t->offset, t->data_offset};
    }
    return c;
fail:
    ckpt_columns_free(c);
    return NULL;
}

int ckpt_file_entry_ref(const ckpt_file *f, uint64_t slot, ckpt_entry_ref *out, ckpt_error *err)
{
    const ckpt_entry_info *e;
    uint64_t owner;
    TRY(ckpt_file_entry(f, slot, &e, &owner, err));
    uint64_t bytes;
    if (ckpt_mul_overflows(e->count, ckpt_dtype_width(ckpt_file_report(f)->dtype), &bytes)) bytes = CKPT_NONE;
    *out = (ckpt_entry_ref){owner, e->id, e->step, e->count, e->offset, bytes};
    return 0;
}

int ckpt_file_tensor_ref(const ckpt_file *f, uint64_t i, ckpt_tensor_ref *out, ckpt_error *err)
{
    const ckpt_tensor_info *t;
    TRY(ckpt_file_tensor(f, i, &t, err));
    *out = (ckpt_tensor_ref){t->count, t->data_offset};
    return 0;
}

enum { PACKED_HEADER_WORDS = sizeof(ckpt_packed_stats) / sizeof(uint64_t) };

uint64_t *ckpt_file_item_stats_packed(const ckpt_file *f, size_t k, ckpt_progress_fn progress, void *progress_ctx,
                                      ckpt_error *err)
{
    ckpt_stats *a, *b;
    if (ckpt_file_item_stats(f, k, progress, progress_ctx, &a, &b, err)) return NULL;
    size_t la = ckpt_stats_pack_len(a), lb = b ? ckpt_stats_pack_len(b) : 0;
    uint64_t *out = alloc_array(PACKED_HEADER_WORDS + (uint64_t)la + lb, sizeof *out);
    if (out) {
        ckpt_packed_stats head = {la, lb};
        memcpy(out, &head, sizeof head);
        ckpt_stats_pack(a, out + PACKED_HEADER_WORDS);
        if (b) ckpt_stats_pack(b, out + PACKED_HEADER_WORDS + la);
    } else {
        ckpt_fail_oom(err);
    }
    ckpt_stats_free(a);
    ckpt_stats_free(b);
    return out;
}

int ckpt_file_attach_packed(ckpt_file *f, size_t k, const uint64_t *words, size_t n, ckpt_error *err)
{
    ckpt_packed_stats head;
    if (n < PACKED_HEADER_WORDS) goto invalid;
    memcpy(&head, words, sizeof head);
    size_t body = n - PACKED_HEADER_WORDS;
    if (head.a_words > body || head.b_words > body - head.a_words) goto invalid;
    const uint64_t *in = words + PACKED_HEADER_WORDS;
    ckpt_stats *a = ckpt_stats_unpack(in, (size_t)head.a_words);
    ckpt_stats *b = head.b_words ? ckpt_stats_unpack(in + head.a_words, (size_t)head.b_words) : NULL;
    if (!a || (head.b_words && !b)) {
        ckpt_stats_free(a);
        ckpt_stats_free(b);
        goto invalid;
    }
    return ckpt_file_attach_stats(f, k, a, b, err);
invalid:
    return ckpt_fail(err, NULL, CKPT_E_INVALID_ARGUMENT, CKPT_NONE, 0, "invalid packed statistics");
}

int ckpt_error_set_oom(ckpt_error *err) { return ckpt_fail_oom(err); }
