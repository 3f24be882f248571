/* Private declarations shared by the modules of src/. Nothing here is public API. */
#ifndef CKPT_INTERNAL_H
#define CKPT_INTERNAL_H

#include "ckptscope.h"

#include <math.h>
#include <stdarg.h>
#include <string.h>

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "ckptscope reads payloads in place and needs a little-endian host"
#endif

#define CKPT_MAGIC_LEN 7
/* The bytes the front door hands each family's probe (at most). */
#define CKPT_PROBE_HEAD 64
/* The TLADAMF prefix, for the writer and the schema functions, which only that family has: its
 * descriptor's (family.c). */
#define CKPT_ADAM_PREFIX (ckpt_family_get(CKPT_FAMILY_TLADAMF)->prefix)

/* A hot loop kept out of line: WebAssembly engines optimise a function on a later call, so a
 * loop that must not run in the baseline tier is a function called often (src/health.c). */
#if defined(__GNUC__) || defined(__clang__)
#define NOINLINE __attribute__((noinline))
#define ALWAYS_INLINE __attribute__((always_inline))
#else
#define NOINLINE
#define ALWAYS_INLINE
#endif

#define TRY(expr)                                                                                                      \
    do {                                                                                                               \
        int rc_ = (expr);                                                                                              \
        if (rc_) return rc_;                                                                                           \
    } while (0)

/* ---- error.c ---- */
/* Set err: code, where (offset and length of the offending field, the slot it is about), and
 * the text "prefix: " + printf(fmt) (no prefix when prefix is NULL: the library's own texts).
 * Returns code. */
int ckpt_fail_at(ckpt_error *err, const char *prefix, int code, uint64_t offset, uint64_t length, uint64_t slot,
                 const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 7, 8)))
#endif
    ;
/* The common case: a field of `length` bytes, no slot. */
int ckpt_fail(ckpt_error *err, const char *prefix, int code, uint64_t offset, uint64_t length, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 6, 7)))
#endif
    ;
int ckpt_fail_oom(ckpt_error *err);
void ckpt_set_hint(ckpt_error *err, const char *hint);
void ckpt_error_move(ckpt_error *dst, ckpt_error *src); /* dst takes src's strings; src is cleared */

/* ---- strbuf.c: growable NUL-terminated text ---- */
typedef struct strbuf {
    char *data;
    size_t len, cap;
    bool failed; /* an allocation failed; the content is incomplete */
} strbuf;
void sb_put_slow(strbuf *sb, const char *s, size_t n);
void sb_puts(strbuf *sb, const char *s);
void sb_printf(strbuf *sb, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
void sb_free(strbuf *sb);
char *sb_take(strbuf *sb);                 /* the text (caller frees), or NULL when an allocation failed */
bool sb_reserve(strbuf *sb, size_t extra); /* room for extra more bytes (and the NUL) */
/* A string literal: its length is known at compile time (the JSON writer's hot loops). */
#define sb_lit(sb, s) sb_put((sb), (s), sizeof(s) - 1)
/* One byte; the hot loops of the report write millions. */
/* Append n bytes. Inline with a byte loop for short pieces (numbers, punctuation): a report of a
 * million slots makes tens of millions of them, and a call to memcpy costs more than the copy. */
static inline void sb_put(strbuf *sb, const char *s, size_t n)
{
    if (n > 16 || sb->len + n + 1 > sb->cap) {
        sb_put_slow(sb, s, n);
        return;
    }
    char *d = sb->data + sb->len;
    for (size_t k = 0; k < n; k++) d[k] = s[k];
    d[n] = '\0';
    sb->len += n;
}

static inline void sb_putc(strbuf *sb, char c)
{
    if (sb->len + 2 > sb->cap && !sb_reserve(sb, 1)) return;
    sb->data[sb->len++] = c;
    sb->data[sb->len] = '\0';
}

/* ---- checked arithmetic ---- */
static inline bool ckpt_mul_overflows(uint64_t a, uint64_t b, uint64_t *out)
{
    return __builtin_mul_overflow(a, b, out);
}
static inline bool ckpt_add_overflows(uint64_t a, uint64_t b, uint64_t *out)
{
    return __builtin_add_overflow(a, b, out);
}

/* ---- shape.c (format.md 2) ---- */
/* Product of dims; returns false (and *out unspecified) when it is >= 2^64. Any 0 gives 0. */
bool ckpt_shape_size(const uint64_t *dims, uint64_t rank, uint64_t *out);
/* "#[2, 3]" (ParameterSchema texts) and "[2, 3]" (Lean lists, the state families' texts) */
void ckpt_shape_print(strbuf *sb, const uint64_t *dims, uint64_t rank);
void ckpt_shape_print_list(strbuf *sb, const uint64_t *dims, uint64_t rank);
/* TLPF32B's nested form: "dim 2 (dim 3 (scalar))"; a scalar is "scalar". */
void ckpt_shape_print_nested(strbuf *sb, const uint64_t *dims, uint64_t rank);
/* The product of dims in full decimal, however large. */
void ckpt_shape_size_print(strbuf *sb, const uint64_t *dims, uint64_t rank);
/* a * b in full decimal (a payload's byte length: count * width). */
void ckpt_u64_product_print(strbuf *sb, uint64_t a, uint64_t b);
bool ckpt_shape_equal(const uint64_t *a, uint64_t ra, const uint64_t *b, uint64_t rb);

/* ---- io.c: the buffered reader and u64 framing (format.md 1) ---- */
struct ckpt_reader {
    const ckpt_source *src;
    const char *prefix; /* the family's text prefix for truncation diagnostics */
    uint64_t pos;       /* absolute offset of the next byte */
    uint8_t *buf;       /* holds [buf_pos, buf_pos + buf_len) of the source */
    size_t buf_len, buf_cap;
    uint64_t buf_pos;
    size_t readahead;  /* next refill size: small after a skip, doubling when sequential */
    size_t growth_cap; /* the read-ahead's limit: the buffer in the schema, RUN_READAHEAD among payloads */
    bool run;          /* the last skip was a tiny payload: the reads go on as a run */
};
ckpt_reader *ckpt_reader_with_prefix(const ckpt_source *src, const char *prefix);
int ckpt_read_exact(ckpt_reader *r, void *dst, size_t n, ckpt_error *err);
/* Inline: every field of every record goes through it (a call per field was 5% of a parse). */
static inline uint64_t ckpt_get_u64le(const uint8_t *p)
{
    uint64_t v;
    memcpy(&v, p, 8); /* little-endian hosts only (checked above) */
    return v;
}
/* A u64 field: inline when the buffer holds it (a million-slot schema reads millions). */
static inline int ckpt_read_u64(ckpt_reader *r, uint64_t *out, ckpt_error *err)
{
    if (r->pos >= r->buf_pos && r->pos - r->buf_pos + 8 <= r->buf_len) {
        *out = ckpt_get_u64le(r->buf + (r->pos - r->buf_pos));
        r->pos += 8;
        return 0;
    }
    uint8_t b[8];
    int rc = ckpt_read_exact(r, b, 8, err);
    if (!rc) *out = ckpt_get_u64le(b);
    return rc;
}
/* Skip a payload of count * width bytes (truncation reported as for a read of that size). */
int ckpt_skip_payload(ckpt_reader *r, uint64_t count, unsigned width, ckpt_error *err);
/* Stream a payload of count * width bytes through fn in whole elements. */
typedef int (*ckpt_chunk_fn)(void *ctx, const void *data, size_t elements);
int ckpt_stream_payload(ckpt_reader *r, uint64_t count, unsigned width, ckpt_chunk_fn fn, void *ctx, ckpt_error *err);
/* Bytes from the reader's position to the end of the source, CKPT_NONE when the size is unknown. */
uint64_t ckpt_reader_bytes_left(const ckpt_reader *r);
/* After the last record: is there at least one more byte? (-1 on I/O error) */
int ckpt_reader_has_more(ckpt_reader *r, ckpt_error *err);
/* The first bytes of the source when the reader still holds them (its first refill starts at
 * 0): for recognising foreign files without a second read, which a pipe could not serve. */
size_t ckpt_reader_head(const ckpt_reader *r, const uint8_t **head);
int ckpt_sink_u64(const ckpt_sink *out, uint64_t v, ckpt_error *err);
int ckpt_sink_bytes(const ckpt_sink *out, const void *p, size_t n, ckpt_error *err);
void ckpt_put_u64le(uint8_t *p, uint64_t v);

/* ---- schema.c (format.md 3) ---- */
struct ckpt_schema {
    size_t n; /* shapes */
    size_t flag_count;
    size_t map_count;
    bool has_map;
    uint64_t *dim_start; /* n + 1 offsets into dims */
    uint64_t *dims;      /* a slot's size is their product, computed when asked (no array of them) */
    uint8_t *requires_grad;
    uint64_t *map;        /* has_map: map_count representatives */
    size_t cap, dims_cap; /* capacities while a reader appends */
    /* derived, computed once (derive) */
    bool derived;
    bool well_formed, has_aliases;
    uint64_t state_count, trainable_count;
};
ckpt_schema *ckpt_schema_empty(void);
/* Capacity for this many slots and dims (callers bound them by the bytes left). */
bool ckpt_schema_reserve(ckpt_schema *s, size_t slots, size_t dims);
/* Append a slot, then its dims. Returns false when out of memory. */
bool ckpt_schema_push_slot(ckpt_schema *s);
bool ckpt_schema_push_dim(ckpt_schema *s, uint64_t dim);
bool ckpt_schema_push_flag(ckpt_schema *s, bool trainable);
bool ckpt_schema_set_map(ckpt_schema *s, const uint64_t *map, size_t count);
/* Read the schema into `file` (a fresh empty schema), comparing with `expected` when it is
 * not NULL (readAndCheck), else checking sizes against products (format.md 5). */
int ckpt_schema_read(ckpt_reader *r, const ckpt_schema *expected, ckpt_schema *file, uint64_t *declared_count,
                     ckpt_error *err);
/* Read the n tags; compare with expected's tags when given; set file's map from them. */
int ckpt_schema_read_tags(ckpt_reader *r, const ckpt_schema *expected, ckpt_schema *file, ckpt_error *err);
/* The format.md 5 sharing-map diagnostic for the first broken slot; 0 when well formed.
 * tag_offset: where the tags start (each slot's offset is tag_offset + 8 i), or CKPT_NONE. */
int ckpt_schema_check_sharing(const ckpt_schema *s, const char *prefix, uint64_t tag_offset, ckpt_error *err);
/* "#[2, 3]" of slot i */
void ckpt_schema_print_shape(strbuf *sb, const ckpt_schema *s, size_t i);
/* format.md 1: every size must fit in a u64 field to be written (CKPT_E_VALUE_TOO_LARGE). */
int ckpt_schema_check_sizes_fit(const ckpt_schema *s, ckpt_error *err);
/* The malformed-destination error (format.md 4 step 1), with the slot and reason as its hint. */
int ckpt_fail_malformed_destination(ckpt_error *err, const ckpt_schema *s);

/* ---- config.c ---- */
int ckpt_config_validate_at(const ckpt_config *c, ckpt_dtype dtype, uint64_t kind_offset, ckpt_error *err);

/* Validation with a reader's epsilon rule (format.md 8: E64, E32, ED). */
int ckpt_config_validate_rule(const ckpt_config *c, ckpt_dtype dtype, int epsilon_rule, uint64_t kind_offset,
                              ckpt_error *err);

/* ---- readers.c: TorchLean's readers (format.md 8) ---- */
/* The texts that differ by reader, each written once. */
int ckpt_reader_fail_version(ckpt_error *err, const ckpt_reader_rule *rule, uint64_t offset, uint64_t version);
int ckpt_reader_fail_not_owner(ckpt_error *err, const ckpt_reader_rule *rule, uint64_t offset, uint64_t length,
                               uint64_t id);
/* Does the entry's slot own optimizer state, as this reader decides it? */
bool ckpt_reader_owns(const ckpt_reader_rule *rule, const ckpt_schema *layout, uint64_t id);
uint64_t ckpt_reader_entry_count(const ckpt_reader_rule *rule, const ckpt_schema *layout);
/* A reader without storage sharing sees a tied destination untied: every trainable slot its
 * own owner. NULL when out of memory. */
ckpt_schema *ckpt_schema_untied(const ckpt_schema *s);
/* A shape-mismatch error reworded with Lean lists (the v2-lists reader's schema holds lists). */
void ckpt_reader_list_shapes(ckpt_error *err, const ckpt_schema *file, const ckpt_schema *expected);
/* After an inspection: every reader's verdict, into rep->tladamf.readers (one parse, and a second only
 * when the first stopped at an epsilon that an older reader accepts). */
void ckpt_readers_judge(const ckpt_source *src, ckpt_report *rep);
void ckpt_readers_free(ckpt_report *rep);
void j_readers(strbuf *sb, const ckpt_report *rep);

/* ---- adam_entries.c: the entry checks of reading and writing, in one place ---- */
typedef struct ckpt_entry_check {
    uint64_t id, step, count;
    bool duplicate;                    /* the id was seen before */
    uint64_t id_at, step_at, count_at; /* field offsets, CKPT_NONE for in-memory input */
    bool on_read;                      /* the reader's texts: the size mismatch says both sizes */
} ckpt_entry_check;
/* adam_write.c: the header fields 1-6 of format.md 4, for the writer and convert. */
int ckpt_adam_write_header(uint64_t version, int dtype, const ckpt_config *c, bool has_counter, uint64_t counter,
                           const ckpt_sink *out, ckpt_error *err);
int ckpt_adam_check_entry(const ckpt_schema *layout, const ckpt_reader_rule *rule, const ckpt_entry_check *e,
                          ckpt_error *err);

/* ---- stats.c ---- */
typedef struct ckpt_stats_acc {
    uint64_t count, nan, inf, zero, negative;
    double min, max, sum, sum_squares;
    uint64_t hist[2100]; /* by floor(log2|x|) + 1074, covers float64 subnormals */
} ckpt_stats_acc;
void ckpt_stats_begin(ckpt_stats_acc *a);
void ckpt_stats_f32(ckpt_stats_acc *a, const float *x, size_t n);
void ckpt_stats_f64(ckpt_stats_acc *a, const double *x, size_t n);
/* n elements of any dtype with statistics (ckpt_dtype_has_stats), as stored. */
void ckpt_stats_dtype(ckpt_stats_acc *a, int dtype, const void *x, size_t n);
ckpt_stats *ckpt_stats_finish(const ckpt_stats_acc *a); /* NULL when out of memory */

/* ---- scan.c: payloads read for statistics, with progress relative to the scan ---- */
typedef struct ckpt_scan {
    ckpt_progress_fn progress; /* may be NULL */
    void *progress_ctx;
    uint64_t start, total; /* file offset where the scan began; its bytes in all */
    uint64_t done;         /* bytes scanned before the current payload */
} ckpt_scan;
/* Statistics of a payload of count elements of width 4 or 8 at the reader's position (the
 * reader moves past it). *out is NULL on error. */
int ckpt_scan_payload(ckpt_reader *r, ckpt_scan *scan, uint64_t count, unsigned width, ckpt_stats **out,
                      ckpt_error *err);
/* The same for count elements of any dtype with statistics. */
int ckpt_scan_payload_dtype(ckpt_reader *r, ckpt_scan *scan, uint64_t count, int dtype, ckpt_stats **out,
                            ckpt_error *err);

/* ---- family.c: descriptors and the front door ---- */
/* One parse run, as the family readers see it. */
typedef struct ckpt_parse {
    ckpt_reader *r;
    const ckpt_family *family;
    const ckpt_expected *exp; /* NULL when inspecting */
    unsigned flags;           /* CKPT_INSPECT_* */
    ckpt_scan scan;
    ckpt_report *rep;
    ckpt_error *err;
    const ckpt_reader_rule *rule; /* the TorchLean reader whose checks apply (never NULL for TLADAMF) */
} ckpt_parse;
/* One typed payload of an item: exp_avg, exp_avg_sq, max_exp_avg_sq, or a tensor's values. */
#define CKPT_MAX_PAYLOADS 3
typedef struct ckpt_payload {
    const char *name;       /* "exp_avg", "exp_avg_sq", "max_exp_avg_sq"; "" for a tensor's values */
    int dtype;              /* its ckpt_dtype (the dtype table gives its width) */
    uint64_t offset, count; /* where its elements start, how many */
    const int64_t *strides; /* per dim of the slot's shape, in elements; NULL: contiguous, outermost first */
    ckpt_stats **stats;     /* where its statistics are kept (NULL until computed) */
} ckpt_payload;
/* An item: one unit of a file's payloads (TLADAMF: a moment entry, its m and v; the state
 * families: a tensor, its values), as file.c sees it whatever the family. */
typedef struct ckpt_item {
    uint64_t slot;   /* the slot whose shape its payloads have */
    uint64_t count;  /* elements per payload */
    size_t payloads; /* payload[0 .. payloads) */
    ckpt_payload payload[CKPT_MAX_PAYLOADS];
    uint64_t *unhealthy; /* the record's count of unhealthy elements */
} ckpt_item;

typedef struct ckpt_jw ckpt_jw; /* report.c's JSON writer */

/* Everything that makes a family read the way it does, beside its public descriptor. A family
 * is a descriptor with one of these (family.c, or a module of a build's extra families). */
struct ckpt_family_impl {
    /* Is this a file of family f? head: its first n bytes (n <= CKPT_PROBE_HEAD, fewer when the
     * file is shorter), size: its size or CKPT_NONE. NULL: the descriptor's fixed 7-byte magic
     * (ckpt_probe_magic). */
    bool (*probe)(const ckpt_family *f, const uint8_t *head, size_t n, uint64_t size);
    int (*parse)(ckpt_parse *p); /* called once the probe said yes (the reader is past the first 7 bytes) */
    /* the items: each a list of typed payloads */
    unsigned payloads; /* per item, at most: 2 (m, v) or 1 (values) */
    size_t (*item_count)(const ckpt_report *rep);
    ckpt_item (*item)(ckpt_report *rep, size_t k);
    /* slot i's optimizer configuration (optimizer families; NULL: the report's one config) */
    const ckpt_config *(*config_of_slot)(const ckpt_report *rep, uint64_t slot);
    uint64_t (*unhealthy)(const ckpt_stats *a, const ckpt_stats *b);
    /* the report JSON's family-specific members (report.c) */
    void (*json_body)(ckpt_jw *w, const ckpt_report *rep, bool bulk);
    void (*free_data)(void *family_data); /* frees the report's family_data; NULL: it has none */
    /* after an inspection by the default reader: the family's own verdicts (TLADAMF: every
     * TorchLean reader's, format.md 8); NULL: none */
    void (*judge)(const ckpt_source *src, ckpt_report *rep);
    /* a family whose files keep no module order (pairing then orders them, file.c): the warning
     * of a pair ordered by shape alone, after the prefix; NULL: its files keep the model's order */
    const char *unordered;
    /* slot i's learning rate when the file stores one (a PyTorch group's lr: the next step's),
     * NAN otherwise; NULL: the family stores none (TorchLean's) */
    double (*lr_of_slot)(const ckpt_report *rep, uint64_t slot);
    /* convert: the one configuration a TLADAMF file of this file's state holds, or the loss it
     * would make (CKPT_E_CONVERSION_LOSES naming the option); NULL: the report's config */
    int (*convert_config)(const ckpt_report *rep, const ckpt_convert_options *o, ckpt_config *out, ckpt_error *err);
    /* the file does not say whether its optimizer is Adam or AdamW (format.md 10.3: a PyTorch
     * optimizer without decoupled_weight_decay, until given one): its config's kind is a guess;
     * NULL: the family always says */
    bool (*kind_unknown)(const ckpt_report *rep);
    /* what this file holds when its family holds either (CKPT_ROLE_*: a torch.save file may hold
     * an optimizer, a model, or both); NULL: the descriptor's role */
    unsigned (*role_of)(const ckpt_report *rep);
    /* its slots come from the model it belongs to (PyTorch, format.md 10.4): no parameter schema of
     * its own, so nothing that needs one (layouts, pairing, health, runs, export) reads it yet */
    bool slots_from_model;
    /* texts */
    const char *holds;          /* "optimizer state", "model tensors" */
    const char *hint_not;       /* a hint's "this is a ..., not {hint_not}" (families with a magic) */
    const char *count_mismatch; /* a state family's tensor-count text: ... (file={c}, expected={n}) */
    const char *trailing;       /* a state family's trailing-bytes text */
    void (*pretty)(strbuf *sb, const uint64_t *dims, uint64_t rank); /* the element-count text's shape */
    /* the header: where its item count field is, when at a fixed offset (else 0; hints.c) */
    uint64_t count_at;
};
/* The default probe: head begins with the descriptor's magic. */
bool ckpt_probe_magic(const ckpt_family *f, const uint8_t *head, size_t n, uint64_t size);
/* The state families' reader and item accessors (state.c), for the descriptors of family.c and
 * of extra families of the same layout. */
size_t ckpt_state_item_count(const ckpt_report *rep);
ckpt_item ckpt_state_item(ckpt_report *rep, size_t k);
uint64_t ckpt_state_unhealthy(const ckpt_stats *a, const ckpt_stats *b);
/* An impl's members for a family of the state layout (magic, version, tensor count, tensors of
 * the descriptor's element dtype); the family adds its texts (count_mismatch, trailing, pretty). */
#define CKPT_STATE_IMPL                                                                                                \
    .parse = ckpt_state_parse, .payloads = 1, .item_count = ckpt_state_item_count, .item = ckpt_state_item,            \
    .unhealthy = ckpt_state_unhealthy, .json_body = ckpt_report_json_state, .holds = "model tensors",                  \
    .hint_not = "optimizer state", .count_at = CKPT_MAGIC_LEN + 8
/* The report JSON's family-specific members (report.c) */
void ckpt_report_json_adam(ckpt_jw *w, const ckpt_report *rep, bool bulk);
void ckpt_report_json_state(ckpt_jw *w, const ckpt_report *rep, bool bulk);
/* The writer's text, for a family's json_body that adds members of its own. */
strbuf *ckpt_jw_text(ckpt_jw *w);
/* A family's item k of a report (k < its item count) */
static inline ckpt_item ckpt_report_item(const ckpt_report *rep, size_t k)
{
    return rep->family->impl->item((ckpt_report *)rep, k);
}
/* Slot i's optimizer configuration (NULL: a file without one), whatever the family keeps. */
static inline const ckpt_config *ckpt_config_of_slot(const ckpt_report *rep, uint64_t slot)
{
    if (!rep->family || !ckpt_family_has_role(rep->family, CKPT_ROLE_OPTIMIZER)) return NULL;
    if (rep->family->impl->config_of_slot) return rep->family->impl->config_of_slot(rep, slot);
    return rep->has_config ? &rep->config : NULL;
}
/* Slot i's stored learning rate, NAN when the file stores none. */
static inline double ckpt_lr_of_slot(const ckpt_report *rep, uint64_t slot)
{
    return rep->family && rep->family->impl->lr_of_slot ? rep->family->impl->lr_of_slot(rep, slot) : (double)NAN;
}
/* Is the file's optimizer kind (Adam or AdamW) unknown? */
static inline bool ckpt_kind_unknown(const ckpt_report *rep)
{
    return rep->family && rep->family->impl->kind_unknown && rep->family->impl->kind_unknown(rep);
}
static inline size_t ckpt_report_item_count(const ckpt_report *rep)
{
    return rep->family ? rep->family->impl->item_count(rep) : 0;
}
/* The role checks of pairing and health: the first file holds optimizer state
 * (CKPT_ROLE_OPTIMIZER), the second model tensors (CKPT_ROLE_MODEL); else CKPT_E_WRONG_FAMILY.
 * One place for those texts; the families they name come from the table. */
int ckpt_require_role(const ckpt_report *rep, unsigned role, ckpt_error *err);
/* CKPT_E_WRONG_FAMILY when rep's family has no parameter schema of its own (slots_from_model). */
int ckpt_require_schema(const ckpt_report *rep, ckpt_error *err);
/* dst becomes a copy of src (its text, hint, fields); returns dst's code. */
int ckpt_error_copy(ckpt_error *dst, const ckpt_error *src);
/* Pair a PyTorch optimizer's report with its model's (format.md 10.4; torch_family.c): on a
 * placement that fits, ro becomes the pair's optimizer (slots, entries by slot, per-slot
 * configs) and *view lists the model's tensors that are the slots, in slot order (the caller
 * makes them the model report's tensors); failures and warnings go to res. 0, or the error in
 * res->error (no optimizer, no model, moments that are not Adam's). */
int ckpt_torch_bind(ckpt_report *ro, const ckpt_report *rm, const char *const *names, size_t name_count, size_t **view,
                    size_t *view_len, ckpt_pair_result *res);
/* n bytes at offset of a source already parsed, all of them: a short read means the file changed
 * (CKPT_E_IO "could not read {what} at byte {n}"). */
int ckpt_read_at(const ckpt_source *src, uint64_t offset, void *buf, size_t n, const char *what, ckpt_error *err);

/* A progress callback held at nothing done while a first stage (the state files' pairing) runs:
 * it reports (0, total) to the held callback, so a cancel is honoured. */
typedef struct ckpt_progress_hold {
    ckpt_progress_fn fn; /* may be NULL */
    void *ctx;
    uint64_t total;
} ckpt_progress_hold;
int ckpt_progress_held(void *hold, uint64_t done, uint64_t total);
/* The slot -> item map of a report whose layout is complete: map[i] is the item whose slot is i
 * (a tied slot's data is its representative's item), SIZE_MAX when none was read. NULL when out
 * of memory. The caller frees it. */
size_t *ckpt_item_of_slot(const ckpt_report *rep);

/* The readers, called after the magic matched (the reader is past it). */
int ckpt_adam_parse(ckpt_parse *p);                                               /* adam_header.c */
int ckpt_adam_parse_entries(ckpt_parse *p, const ckpt_schema *layout, int dtype); /* adam_entries.c */
int ckpt_state_parse(ckpt_parse *p);                                              /* state.c */
extern const ckpt_family ckpt_family_pytorch;                                     /* torch_family.c */
extern const ckpt_family ckpt_family_safetensors;                                 /* safetensors.c */
/* One entry's or tensor's payloads, read again through the source of a parsed report. */
int ckpt_adam_read_moments(const ckpt_source *src, const ckpt_report *rep, const ckpt_entry_info *e, void *m, void *v,
                           ckpt_error *err);
int ckpt_adam_moment_stats(const ckpt_source *src, const ckpt_report *rep, const ckpt_entry_info *e,
                           ckpt_progress_fn progress, void *progress_ctx, ckpt_stats **m, ckpt_stats **v,
                           ckpt_error *err);
int ckpt_state_read_tensor(const ckpt_source *src, const ckpt_report *rep, const ckpt_tensor_info *t, void *out,
                           ckpt_error *err);
int ckpt_state_tensor_stats(const ckpt_source *src, const ckpt_report *rep, const ckpt_tensor_info *t,
                            ckpt_progress_fn progress, void *progress_ctx, ckpt_stats **values, ckpt_error *err);
/* The front door of ckpt_inspect/ckpt_load/ckpt_open: a fresh report. */
ckpt_report *ckpt_parse_file(const ckpt_source *src, const ckpt_expected *exp, const ckpt_inspect_options *opt);
/* The same with a TorchLean reader's checks (format.md 8); an inspection by the default reader
 * also gives every reader's verdict. */
ckpt_report *ckpt_parse_file_reader(const ckpt_source *src, const ckpt_expected *exp, const ckpt_inspect_options *opt,
                                    int reader);

/* ---- hints.c: what a file that is not the expected family looks like ---- */
void ckpt_hint_foreign(const ckpt_reader *r, ckpt_error *err);

/* ---- bigmem.c ---- */
/* Advise the system that the array at p (bytes long, just allocated, not yet written) is large
 * and filled whole: huge pages where the platform has them. */
void ckpt_advise_large(void *p, size_t bytes);

/* ---- report.c ---- */
bool ckpt_report_warn(ckpt_report *rep, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
bool ckpt_report_push_entry(ckpt_report *rep, const ckpt_entry_info *e);
bool ckpt_report_push_tensor(ckpt_report *rep, const ckpt_tensor_info *t);
/* Capacity for this many entries (callers bound it by the bytes left: 24 at least each). */
bool ckpt_report_reserve_entries(ckpt_report *rep, size_t count);
/* Out of memory while a file's counts grew its layout: the partial layout is dropped, so that
 * memory is left to report the error (a layout of 100 million slots read so far is no use to
 * anyone, and its JSON could not be built). */
void ckpt_drop_layout_if_oom(ckpt_report *rep);
/* The warnings of the payloads scanned (NaN, infinities, negative second moments), in file order. */
void ckpt_report_warn_payloads(ckpt_report *rep);
/* Bytes per moment element (4 or 8): the one dtype table's (family.c, ckpt_dtype_width). */
static inline unsigned ckpt_width(int dtype) { return ckpt_dtype_width(dtype); }

/* ---- json.c: the JSON writer shared by report, pair, diff ---- */
void j_u64(strbuf *sb, uint64_t v);  /* a number up to 2^53 - 1, a decimal string beyond */
void j_double(strbuf *sb, double x); /* shortest exact form; "NaN", "Infinity" as strings */
void j_string(strbuf *sb, const char *s);
void j_bits(strbuf *sb, uint64_t b);                    /* "0x3feccccccccccccd" */
void j_slot(strbuf *sb, uint64_t slot);                 /* a u64, or null for CKPT_NONE */
void j_num_or_null(strbuf *sb, bool present, double x); /* j_double(x), or null when not present */
void j_stats(strbuf *sb, const ckpt_stats *s);
void j_config(strbuf *sb, const ckpt_config *c);
void j_error(strbuf *sb, const ckpt_error *err);
void j_shape(strbuf *sb, const ckpt_schema *s, size_t i);

/* ---- health.c: the next Adam step of one slot, fed chunk by chunk (docs/health.md) ----
 * ckpt_health_json streams a slot's chunks through these; a run (run.c) feeds them the chunks
 * its continuity pass reads anyway, so every payload is read once. The rules (the bound, the
 * flags, the ratio) stay in health.c. */
typedef struct ckpt_health_moments {
    bool present;      /* the slot has an owner entry (not frozen) */
    double inv1, inv2; /* the bias corrections of step t + 1, as products */
    double u_sum_sq, u_max;
    uint64_t u_finite, nan, inf, v_negative, never_updated, inconsistent;
} ckpt_health_moments;

typedef struct ckpt_health_param {
    bool present; /* the slot's tensor of a state file that pairs */
    double sum_sq, max;
    uint64_t finite, nan, inf;
} ckpt_health_param;

/* One slot: its owner's moments (a tied slot's are its owner's) and its own parameters. */
typedef struct ckpt_health_slot {
    uint64_t count;
    ckpt_health_moments mo;
    ckpt_health_param pa;
} ckpt_health_slot;

/* The constants of one optimizer checkpoint's pass and its chunk loops (one per width). */
typedef struct ckpt_health_kernel {
    unsigned width, state_width; /* bytes per element of the moments, of the parameters */
    double beta1, beta2, eps, c; /* c: 0 when there is no bound (beta1^2 >= beta2) */
    double v_floor;              /* the smallest normal of the moments' dtype */
    void (*moments_chunk)(const struct ckpt_health_kernel *, const uint8_t *m, const uint8_t *v, size_t n,
                          ckpt_health_moments *h);
    void (*params_chunk)(const uint8_t *theta, size_t n, ckpt_health_param *h);
} ckpt_health_kernel;

/* opt: a valid optimizer checkpoint's report; state: its model-state file's, NULL for none. */
void ckpt_health_kernel_init(ckpt_health_kernel *k, const ckpt_report *opt, const ckpt_report *state);
/* Take slot s's configuration (ckpt_config_of_slot; the report's when the family keeps none). */
void ckpt_health_kernel_slot(ckpt_health_kernel *k, const ckpt_report *opt, uint64_t s);
/* Start the moments of the owner entry e (NULL: a frozen slot, nothing to feed). */
void ckpt_health_moments_begin(const ckpt_health_kernel *k, const ckpt_entry_info *e, ckpt_health_moments *h);
/* n elements of m and v (k->width bytes each, as stored); of theta (k->state_width bytes). Fed
 * in pieces of CKPT_HEALTH_CHUNK elements from the slot's start, the sums are added in the same
 * order as ckpt_health_json adds them: the same bits. */
#define CKPT_HEALTH_CHUNK 16384
void ckpt_health_feed_moments(const ckpt_health_kernel *k, const uint8_t *m, const uint8_t *v, size_t n,
                              ckpt_health_moments *h);
void ckpt_health_feed_params(const ckpt_health_kernel *k, const uint8_t *theta, size_t n, ckpt_health_param *h);
/* The flags health raises on slot `slot` whose owner is `owner` (CKPT_NONE when frozen), as
 * ckpt_health_json words them, with the ratio band [ratio_low, ratio_high] (checked by the
 * caller: ckpt_health_ratio_band); its update-to-weight ratio at lr (NAN: none) in *ratio, NAN
 * when it has none; how many of the flags are warnings in *warnings. */
size_t ckpt_health_slot_flags(const ckpt_health_slot *h, uint64_t slot, uint64_t owner, double lr, double ratio_low,
                              double ratio_high, double *ratio, size_t *warnings);
/* The flag band of the update-to-weight ratio (a heuristic, so its flags are warnings): the one
 * given (given true: [low, high], checked by ckpt_health_ratio_band) or the default
 * [CKPT_RATIO_LOW, CKPT_RATIO_HIGH]; 0, or -1 with err set for a band that is none. The JSON
 * of health and of a run states it as "ratioBand":[lo,hi] (ckpt_health_band_json). */
typedef struct ckpt_ratio_band {
    double low, high;
} ckpt_ratio_band;
int ckpt_health_band(bool given, double low, double high, ckpt_ratio_band *b, ckpt_error *err);
void ckpt_health_band_json(strbuf *sb, ckpt_ratio_band b);
/* Whether the model-state file `state` gives health (and a run) the parameters of `opt`, a
 * valid optimizer checkpoint: 0 with *pairs (when not, its first pairing failure in *why);
 * -1 with err set when it cannot be used at all (another family, invalid) or pairing could not
 * run (cancelled, I/O, no memory). */
int ckpt_health_state(const ckpt_file *opt, const ckpt_file *state, ckpt_progress_fn progress, void *progress_ctx,
                      bool *pairs, ckpt_error *why, ckpt_error *err);

#endif
