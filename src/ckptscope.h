/* ckptscope: TorchLean optimizer checkpoints (the TLADAMF family and its ParameterSchema).
 *
 * The one public header. The byte format and every diagnostic text are specified in
 * FORMAT.md; section numbers below refer to it. The library does no I/O of its own: every
 * read goes through a ckpt_source and every write through a ckpt_sink supplied by the caller.
 *
 * Ownership: functions named *_new return objects the caller frees with the matching *_free;
 * *_free(NULL) is a no-op. A ckpt_error filled by any function owns its strings and is emptied
 * with ckpt_error_clear. */
#ifndef CKPTSCOPE_H
#define CKPTSCOPE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* "no slot": an absent representative, and an unknown size or offset. A tag read from a file
 * is at most 2^64 - 1, so a representative (tag - 1) never equals CKPT_NONE. */
#define CKPT_NONE UINT64_MAX

/* ---- Errors ---------------------------------------------------------------------------- */

/* Stable codes: never renumbered; new ones are appended. */
typedef enum ckpt_code {
    CKPT_OK = 0,
    CKPT_E_TRUNCATED = 1,                   /* truncated checkpoint (wanted n bytes, got k) */
    CKPT_E_TRAILING_BYTES = 2,
    CKPT_E_VALUE_TOO_LARGE = 3,             /* metadata value does not fit in 64 bits */
    CKPT_E_MALFORMED_IN_MEMORY_SCHEMA = 4,
    CKPT_E_MALFORMED_EXPECTED_SCHEMA = 5,
    CKPT_E_PARAMETER_COUNT_MISMATCH = 6,
    CKPT_E_RANK_MISMATCH = 7,
    CKPT_E_SHAPE_MISMATCH = 8,
    CKPT_E_ELEMENT_COUNT_MISMATCH = 9,
    CKPT_E_INVALID_REQUIRES_GRAD_FLAG = 10,
    CKPT_E_REQUIRES_GRAD_MISMATCH = 11,
    CKPT_E_STORAGE_ALIAS_MISMATCH = 12,
    CKPT_E_UNSUPPORTED_FAMILY = 13,
    CKPT_E_VERSION2_CANNOT_SHARE = 14,
    CKPT_E_UNSUPPORTED_VERSION = 15,
    CKPT_E_UNSUPPORTED_DTYPE = 16,
    CKPT_E_DTYPE_DIFFERS = 17,
    CKPT_E_INVALID_OPTIMIZER_TAG = 18,
    CKPT_E_INVALID_BETA1 = 19,
    CKPT_E_INVALID_BETA2 = 20,
    CKPT_E_INVALID_EPSILON = 21,
    CKPT_E_ADAM_WEIGHT_DECAY = 22,
    CKPT_E_ADAMW_WEIGHT_DECAY = 23,
    CKPT_E_INVALID_COUNTER_FLAG = 24,
    CKPT_E_CONFIG_DIFFERS = 25,
    CKPT_E_ENTRY_COUNT_MISMATCH = 26,
    CKPT_E_DUPLICATE_ID = 27,
    CKPT_E_INVALID_ID = 28,
    CKPT_E_NOT_OWNER = 29,
    CKPT_E_ZERO_STEP = 30,
    CKPT_E_MOMENT_SIZE_MISMATCH = 31,
    CKPT_E_INVALID_PAYLOAD = 32,
    CKPT_E_NO_COUNTER_REFERENCE = 33,
    CKPT_E_MALFORMED_SHARING_MAP = 34,      /* ckptscope's own rule, FORMAT.md 5 */
    CKPT_E_IO = 35,                         /* the source or sink reported a failure */
    CKPT_E_NO_MEMORY = 36,
    CKPT_E_CANCELLED = 37,                  /* a progress callback asked to stop */
    CKPT_E_VERSION_CANNOT_REPRESENT = 38,   /* a forced writer version cannot hold the content */
    CKPT_E_INVALID_ARGUMENT = 39
} ckpt_code;

/* An error: a stable code, the reference diagnostic text, and the byte offset where the
 * offending field starts (CKPT_NONE for errors about in-memory input). `hint` is an optional
 * second sentence for people (what the data looks like instead); it never replaces the text.
 * Zero-initialise before first use; ckpt_error_clear frees the strings and resets it. */
typedef struct ckpt_error {
    int code;
    uint64_t offset;
    char *message;
    char *hint;
} ckpt_error;

void ckpt_error_clear(ckpt_error *err);

/* ---- Handles (FORMAT.md 1) ------------------------------------------------------------- */

#define CKPT_READ_ERROR SIZE_MAX

/* A byte source. `read` copies up to n bytes starting at `offset` into buf and returns how many
 * it copied; fewer than n only at the end of the data; CKPT_READ_ERROR on an I/O failure.
 * `size` is the total size in bytes, or CKPT_NONE when unknown (then skipping a payload reads
 * it). The library never holds more than one chunk of a source in memory. */
typedef struct ckpt_source {
    void *ctx;
    size_t (*read)(void *ctx, uint64_t offset, void *buf, size_t n);
    uint64_t size;
} ckpt_source;

/* A source over bytes in memory. `mem` must outlive the source; nothing is copied. */
typedef struct ckpt_memory {
    const uint8_t *data;
    size_t len;
} ckpt_memory;
void ckpt_source_memory(ckpt_source *src, ckpt_memory *mem, const void *data, size_t len);

/* A byte sink: `write` appends n bytes and returns 0, or nonzero on failure. */
typedef struct ckpt_sink {
    void *ctx;
    int (*write)(void *ctx, const void *buf, size_t n);
} ckpt_sink;

/* A growable in-memory sink. Free the bytes with ckpt_buffer_free. */
typedef struct ckpt_buffer {
    uint8_t *data;
    size_t len, cap;
} ckpt_buffer;
void ckpt_sink_buffer(ckpt_sink *sink, ckpt_buffer *buf);
void ckpt_buffer_free(ckpt_buffer *buf);

/* A buffered reader over a source: what readAndCheck and friends read from. The source must
 * outlive the reader. Returns NULL when out of memory. */
typedef struct ckpt_reader ckpt_reader;
ckpt_reader *ckpt_reader_new(const ckpt_source *src);
void ckpt_reader_free(ckpt_reader *r);
uint64_t ckpt_reader_offset(const ckpt_reader *r);   /* position of the next byte */

/* ---- ParameterSchema (FORMAT.md 3, the seed) -------------------------------------------- */

typedef struct ckpt_schema ckpt_schema;

/* Build a schema from arrays (copied). `ranks` has shape_count entries and `dims` their sum,
 * outermost dim first. `requires_grad` has flag_count entries (0 frozen, nonzero trainable).
 * `representatives` is NULL for an absent map, else map_count entries, CKPT_NONE for none.
 * The counts may differ: isWellFormed then says false, as the seed does. Returns NULL only
 * when out of memory or when the ranks' sum overflows. */
ckpt_schema *ckpt_schema_new(size_t shape_count, const uint64_t *ranks, const uint64_t *dims,
                             size_t flag_count, const uint8_t *requires_grad,
                             const uint64_t *representatives, size_t map_count);
void ckpt_schema_free(ckpt_schema *s);

size_t ckpt_schema_count(const ckpt_schema *s);            /* number of shapes, n */
uint64_t ckpt_schema_rank(const ckpt_schema *s, size_t i);
const uint64_t *ckpt_schema_dims(const ckpt_schema *s, size_t i);   /* rank entries */
/* The element count of slot i; *too_big (may be NULL) is set when the product is >= 2^64, and
 * then the value returned is meaningless: such a size never matches a stored u64. */
uint64_t ckpt_schema_size(const ckpt_schema *s, size_t i, bool *too_big);
/* The element count in full decimal, into buf (cap bytes, NUL-terminated, truncated to fit). */
void ckpt_schema_size_decimal(const ckpt_schema *s, size_t i, char *buf, size_t cap);
bool ckpt_schema_requires_grad(const ckpt_schema *s, size_t i);   /* false past the flags */
size_t ckpt_schema_flag_count(const ckpt_schema *s);                /* flags held (may differ from n) */
bool ckpt_schema_has_map(const ckpt_schema *s);

/* The seed's queries. */
uint64_t ckpt_schema_representative(const ckpt_schema *s, uint64_t i);  /* CKPT_NONE for none */
bool ckpt_schema_is_well_formed(const ckpt_schema *s);
bool ckpt_schema_is_representative(const ckpt_schema *s, uint64_t i);
uint64_t ckpt_schema_optimizer_state_count(const ckpt_schema *s);
uint64_t ckpt_schema_trainable_count(const ckpt_schema *s);
bool ckpt_schema_has_aliases(const ckpt_schema *s);
/* The stored tag of writeRepresentatives: 0 for a frozen slot, representative + 1 otherwise. */
uint64_t ckpt_schema_tag(const ckpt_schema *s, size_t i);

/* The first slot that breaks the sharing rules, and why (FORMAT.md 5). Returns the slot, or
 * CKPT_NONE when the map (explicit or implied) is well formed. Lengths are not checked here. */
typedef enum ckpt_sharing_fault {
    CKPT_SHARING_OK = 0,
    CKPT_SHARING_FROZEN_HAS_REPRESENTATIVE,
    CKPT_SHARING_TRAINABLE_HAS_NONE,
    CKPT_SHARING_OUT_OF_RANGE,
    CKPT_SHARING_FOLLOWS,
    CKPT_SHARING_FROZEN_REPRESENTATIVE,
    CKPT_SHARING_DIFFERENT_SHAPE,
    CKPT_SHARING_ALIAS_OF_ALIAS
} ckpt_sharing_fault;
uint64_t ckpt_schema_find_sharing_fault(const ckpt_schema *s, ckpt_sharing_fault *fault);

/* write / writeRepresentatives / readAndCheck / readAndCheckRepresentatives. Return 0 or an
 * error code (also stored in err). */
int ckpt_schema_write(const ckpt_schema *s, const ckpt_sink *out, ckpt_error *err);
int ckpt_schema_write_representatives(const ckpt_schema *s, const ckpt_sink *out, ckpt_error *err);
int ckpt_schema_read_and_check(ckpt_reader *r, const ckpt_schema *expected, ckpt_error *err);
int ckpt_schema_read_and_check_representatives(ckpt_reader *r, const ckpt_schema *expected,
                                               ckpt_error *err);

/* ---- The TLADAMF family (FORMAT.md 4) --------------------------------------------------- */

typedef enum ckpt_dtype { CKPT_FLOAT32 = 0, CKPT_FLOAT64 = 1, CKPT_DTYPE_ANY = -1 } ckpt_dtype;
typedef enum ckpt_kind { CKPT_ADAM = 0, CKPT_ADAMW = 1 } ckpt_kind;

/* The optimizer configuration: the four hyperparameters as raw binary64 bit patterns. */
typedef struct ckpt_config {
    uint64_t kind;
    uint64_t beta1, beta2, epsilon, weight_decay;
} ckpt_config;

uint64_t ckpt_bits_from_double(double x);
double ckpt_double_from_bits(uint64_t bits);
/* Config validation for moments of `dtype` (FORMAT.md 4). Returns 0 or the error code. */
int ckpt_config_validate(const ckpt_config *c, ckpt_dtype dtype, ckpt_error *err);
/* Bit-for-bit equality of dtype, kind and the four patterns. */
bool ckpt_config_same(const ckpt_config *a, ckpt_dtype da, const ckpt_config *b, ckpt_dtype db);

/* Moment statistics over one payload (DESIGN.md "stats"); min..sum_squares over finite
 * values. The histogram counts finite nonzero values by floor(log2|x|), from hist_log2_min
 * for hist_len bins (hist is NULL when hist_len is 0). */
typedef struct ckpt_stats {
    uint64_t count, finite, nan, inf, zero, negative;
    double min, max, sum, sum_squares;
    int32_t hist_log2_min;
    uint32_t hist_len;
    uint64_t *hist;
} ckpt_stats;

/* One stored moment entry, as indexed by inspect. `offset` is where its id field starts; m
 * starts 24 bytes later and v count * width bytes after m. m and v are NULL without stats. */
typedef struct ckpt_entry_info {
    uint64_t id, step, count, offset;
    ckpt_stats *m, *v;
} ckpt_entry_info;

/* Everything read from one file. Fields not reached before an error keep their "absent"
 * values: has_version false, dtype -1, has_config false, schema NULL or partial (schema_complete
 * false), entries only those read. */
typedef struct ckpt_report {
    uint64_t size;                 /* bytes in the source, CKPT_NONE when unknown */
    bool magic_ok;                 /* the family magic was read and matched */
    bool has_version;
    uint64_t version;              /* as read, even when unsupported */
    int dtype;                     /* ckpt_dtype, -1 when not read */
    bool has_config;
    ckpt_config config;
    int counter_state;             /* -1 not read yet, 0 absent, 1 present */
    uint64_t random_counter;
    ckpt_schema *schema;           /* the file's own layout, NULL before its count is read */
    uint64_t schema_declared_count;
    bool schema_complete;          /* every slot and (v >= 3) every tag read */
    bool has_entry_count;
    uint64_t entry_count;          /* as declared */
    ckpt_entry_info *entries;
    size_t entries_len;
    char **warnings;
    size_t warnings_len;
    ckpt_error error;              /* code 0 when the file is valid / would load */
} ckpt_report;

void ckpt_report_free(ckpt_report *rep);

/* Progress during a statistics scan: bytes scanned so far and in all. Return nonzero to stop
 * (the result is then CKPT_E_CANCELLED). */
typedef int (*ckpt_progress_fn)(void *ctx, uint64_t done, uint64_t total);

enum { CKPT_INSPECT_STATS = 1 };

typedef struct ckpt_inspect_options {
    unsigned flags;                /* CKPT_INSPECT_*; 0 skips payloads */
    ckpt_progress_fn progress;     /* may be NULL */
    void *progress_ctx;
} ckpt_inspect_options;

/* Inspect without an expected layout (FORMAT.md 5). Returns a report (NULL only when out of
 * memory) whose error says why the file is invalid; everything read before is kept. */
ckpt_report *ckpt_inspect(const ckpt_source *src, const ckpt_inspect_options *opt);

/* Copy the moments of entry `id` (as indexed in `rep`, a report of this same source) into m and
 * v, each count * width bytes as stored. Returns 0, CKPT_E_INVALID_ID when the report indexes
 * no such entry, or a read error. */
int ckpt_read_moments(const ckpt_source *src, const ckpt_report *rep, uint64_t id, void *m, void *v,
                      ckpt_error *err);

/* Statistics of one entry's m and v (as indexed in `rep`, a report of this same source), as
 * JSON {"id", "m": stats, "v": stats} (DESIGN.md "stats"); malloc'ed, caller frees. NULL with
 * err set when the entry is not indexed, the data cannot be read, or progress cancelled. */
char *ckpt_entry_stats_json(const ckpt_source *src, const ckpt_report *rep, uint64_t id,
                            ckpt_progress_fn progress, void *progress_ctx, ckpt_error *err);

/* A destination to load into (FORMAT.md 4, "Load against an expected layout"). */
typedef struct ckpt_expected {
    const ckpt_schema *schema;     /* required */
    int dtype;                     /* destination moment dtype, CKPT_DTYPE_ANY: not checked */
    const ckpt_config *config;     /* NULL: the destination has no configuration yet */
    int keeps_random_counter;      /* 1 yes, 0 no, -1 unknown: step 12 not checked */
} ckpt_expected;

/* Would the trainer load this file into `exp`? The report's error is the trainer's first
 * diagnostic (code 0: it loads); warnings hold the legacy-counter warning. */
ckpt_report *ckpt_load(const ckpt_source *src, const ckpt_expected *exp);

/* What to write (the reference writer's input). Each entry's payloads hold count * width
 * bytes, width 4 or 8 by dtype. */
typedef struct ckpt_entry_in {
    uint64_t id, step, count;
    const void *m, *v;
    uint64_t m_bytes, v_bytes;
} ckpt_entry_in;

typedef struct ckpt_write_desc {
    const ckpt_schema *schema;
    int dtype;                      /* CKPT_FLOAT32 or CKPT_FLOAT64 */
    ckpt_config config;
    bool has_random_counter;
    uint64_t random_counter;
    const ckpt_entry_in *entries;
    size_t entry_count;
    uint64_t version;               /* 0: the reference writer's choice; 2..5: forced */
} ckpt_write_desc;

/* The version the reference writer picks for this description (FORMAT.md 4). */
uint64_t ckpt_write_version(const ckpt_write_desc *d);
/* Check everything (the save checks, in order), then write. Nothing is written when a check
 * fails. Returns 0 or the error code. */
int ckpt_write(const ckpt_write_desc *d, const ckpt_sink *out, ckpt_error *err);

/* ---- Reports as JSON (DESIGN.md "JSON report") ----------------------------------------- */

/* The report as a NUL-terminated JSON string (malloc'ed; caller frees), NULL when out of
 * memory. */
char *ckpt_report_json(const ckpt_report *rep);
/* The same JSON with some bulk arrays left empty for a caller that takes them another way:
 * CKPT_JSON_NO_SCHEMA_ARRAYS empties schema.shapes/sizes/requiresGrad and the two
 * representative arrays; CKPT_JSON_NO_ENTRIES empties "entries". */
enum { CKPT_JSON_NO_SCHEMA_ARRAYS = 1, CKPT_JSON_NO_ENTRIES = 2 };
char *ckpt_report_json_opts(const ckpt_report *rep, unsigned opts);
/* A schema as JSON: shapes, sizes, requiresGrad, representatives (the map, or null),
 * effectiveRepresentatives (representative?(i) for each slot), tags, wellFormed,
 * optimizerStateCount, trainableCount, hasAliases. Caller frees; NULL when out of memory. */
char *ckpt_schema_json(const ckpt_schema *s);
/* An error as JSON: {"code", "message", "offset" (null when none), "hint"}. Caller frees. */
char *ckpt_error_json(const ckpt_error *err);

#ifdef __cplusplus
}
#endif
#endif
