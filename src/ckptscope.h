/* ckptscope: TorchLean checkpoints, inside out. The optimizer family TLADAMF with its
 * ParameterSchema, and the model-state families TLSF32B and TLPF32B.
 *
 * The one public header. The byte format and every diagnostic text are specified in
 * docs/format.md; section numbers below refer to it. The library does no I/O of its own: every
 * read goes through a ckpt_source and every write through a ckpt_sink supplied by the caller.
 *
 * Ownership: functions named *_new / *_open return objects the caller frees with the matching
 * *_free / *_close; those accept NULL and then do nothing. A ckpt_error filled by any function
 * owns its strings and is emptied with ckpt_error_clear. Strings returned as `char *` are
 * malloc'ed and freed by the caller with free(). */
#ifndef CKPTSCOPE_H
#define CKPTSCOPE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* "none": an absent representative or slot, and an unknown size or offset. A tag read from a
 * file is at most 2^64 - 1, so a representative (tag - 1) never equals CKPT_NONE. */
#define CKPT_NONE UINT64_MAX

/* ---- Errors ---------------------------------------------------------------------------- */

/* Stable codes: never renumbered; new ones are appended. Each names one diagnostic template
 * (docs/format.md lists them); the prefix of the text says which family's reader spoke. */
typedef enum ckpt_code {
    CKPT_OK = 0,
    CKPT_E_TRUNCATED = 1,                  /* P: truncated checkpoint (wanted n bytes, got k) */
    CKPT_E_TRAILING_BYTES = 2,             /* P: trailing bytes after final state entry / tensor / parameter */
    CKPT_E_VALUE_TOO_LARGE = 3,            /* metadata value does not fit in 64 bits: n */
    CKPT_E_MALFORMED_IN_MEMORY_SCHEMA = 4, /* the destination (or what is written) is not well formed */
    CKPT_E_MALFORMED_EXPECTED_SCHEMA = 5,  /* readAndCheck's own first check */
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
    CKPT_E_CONFIG_DIFFERS = 25, /* error.config_diff says which fields */
    CKPT_E_ENTRY_COUNT_MISMATCH = 26,
    CKPT_E_DUPLICATE_ID = 27,
    CKPT_E_INVALID_ID = 28,
    CKPT_E_NOT_OWNER = 29,
    CKPT_E_ZERO_STEP = 30,
    CKPT_E_MOMENT_SIZE_MISMATCH = 31,
    CKPT_E_INVALID_PAYLOAD = 32,
    CKPT_E_NO_COUNTER_REFERENCE = 33,
    CKPT_E_MALFORMED_SHARING_MAP = 34, /* ckptscope's own rule, format.md 5 */
    CKPT_E_IO = 35,                    /* the source or sink reported a failure */
    CKPT_E_NO_MEMORY = 36,
    CKPT_E_CANCELLED = 37,                /* a progress callback asked to stop */
    CKPT_E_VERSION_CANNOT_REPRESENT = 38, /* a forced writer version cannot hold the content */
    CKPT_E_INVALID_ARGUMENT = 39,         /* a caller's argument is out of range or NULL */
    CKPT_E_FROZEN_SLOT = 40,              /* parameter i is frozen: it has no optimizer state */
    CKPT_E_NO_SUCH_SLOT = 41,             /* no parameter i: the file has n slots */
    CKPT_E_TENSOR_COUNT_MISMATCH = 42,    /* StateIO/ParamIO count mismatch (format.md 6) */
    CKPT_E_STATE_SHAPE_MISMATCH = 43,     /* P: checkpoint shape mismatch (file=[..], expected=[..]) */
    CKPT_E_STATE_ELEMENT_COUNT_MISMATCH = 44,
    CKPT_E_PAIR_COUNT = 45, /* pairing (format.md 6): tensor count vs slot count */
    CKPT_E_PAIR_SHAPE = 46,
    CKPT_E_PAIR_TIED_VALUES = 47,
    CKPT_E_NOT_READABLE = 48,       /* the file is invalid before the part asked for */
    CKPT_E_WRONG_FAMILY = 49,       /* an optimizer-only request on a state file, or back */
    CKPT_E_CONVERSION_LOSES = 50,   /* convert: the target loses or invents something; the text names the option */
    CKPT_E_ZIP_NOT_FOUND = 51,      /* zip: no end-of-central-directory record (not a zip) */
    CKPT_E_ZIP_MALFORMED = 52,      /* zip: malformed archive at byte n: the reason */
    CKPT_E_ZIP_UNSUPPORTED = 53,    /* zip: a compressed or encrypted member, a multi-disk archive */
    CKPT_E_PICKLE_MALFORMED = 54,   /* P: malformed pickle at byte o of member: the reason */
    CKPT_E_PICKLE_OPCODE = 55,      /* P: unsupported pickle opcode 0xhh at byte o of member */
    CKPT_E_SAFETENSORS_HEADER = 56, /* safetensors: the header's length, JSON or metadata (format.md 10.1) */
    CKPT_E_SAFETENSORS_TENSOR = 57, /* safetensors: a tensor's entry (dtype, shape, data_offsets) */
    CKPT_E_SAFETENSORS_SIZE = 58,   /* safetensors: a tensor's bytes differ from its shape times its dtype's width */
    CKPT_E_SAFETENSORS_LAYOUT = 59, /* safetensors: the tensors leave a gap, overlap, or miss the data's end */
    /* the torch object model (families/pytorch/) */
    CKPT_E_TORCH_NOT_CHECKPOINT = 60, /* P: no data.pkl, a TorchScript archive, no torch.save magic */
    CKPT_E_TORCH_UNSUPPORTED = 61,    /* P: big-endian, a compressed member, a storage type not read */
    CKPT_E_TORCH_STORAGE = 62,        /* P: storage {key} declares n bytes but its record holds m */
    CKPT_E_TORCH_TENSOR_BOUNDS = 63,  /* P: tensor {path} reaches element e of storage {key}, which holds n */
    CKPT_E_TORCH_STEP = 64,           /* P: index i: step s is not a step count */
    CKPT_E_TORCH_MALFORMED = 65,      /* P: malformed checkpoint at byte o of member: the reason */
    CKPT_E_TRAINER_FILE = 66,         /* a Trainer folder's file does not hold what the Trainer writes */
    /* a PyTorch optimizer and its model (format.md 10.4) */
    CKPT_E_TORCH_UNPLACED = 67, /* P: optimizer index i holds exp_avg #[..], but no parameter of that shape lies ... */
    CKPT_E_TORCH_COUNT = 68,    /* P: the optimizer has n parameters with state, the model m parameters */
    CKPT_E_TORCH_NAMED = 69,    /* P: optimizer index i is {name} in param_names, which the model does not have */
    CKPT_E_TORCH_NO_PAIR = 70,  /* P: the files hold no optimizer, no model, or moments not laid out as one */
    /* a folder read as one source (src/containers/bundle.h) */
    CKPT_E_FOLDER_BUNDLE = 71, /* folder: malformed folder listing at byte n: the reason */
    /* DeepSpeed ZeRO checkpoints (format.md 11.5) */
    CKPT_E_DS_FOLDER = 72, /* DS: the folder and its files: latest, bf16_ and plain files, a missing file or rank */
    CKPT_E_DS_KEY = 73,    /* DS: {file}: no {key}, or {key} is {found}, expected {type} */
    CKPT_E_DS_SAVES = 74,  /* DS: files of different saves, kinds, partition counts, groups */
    CKPT_E_DS_UNSUPPORTED = 75, /* DS: pipeline-parallel, expert (MoE) and tensor-parallel checkpoints */
    CKPT_E_DS_LAYOUT = 76,      /* DS: a flat tensor's length or padding is not the layout's */
    CKPT_E_DS_STEP = 77,        /* DS: a group's step differs across ranks */
    CKPT_E_DS_NAMES = 78,       /* DS: param_shapes, the module, shapes and shared_params disagree */
    /* a PyTorch optimizer and its model, continued (format.md 10.4) */
    CKPT_E_TORCH_UNTRAINED = 79, /* P: {names} hold no optimizer state: pairs only if the training code trains none */
    CKPT_E_TORCH_MODELS_DIFFER = 80, /* P: the optimizer's own (training-time) model and the model given differ */
    /* DeepSpeed pairing with the model the user will load into (format.md 11.6) */
    CKPT_E_DS_PAIR_MODEL = 81, /* DS: the new model's names, shapes or ties are not the checkpoint's */
    CKPT_E_DS_PAIR_ORDER = 82, /* DS: group {g} position {k}: DeepSpeed would load a's moments and masters into b */
    CKPT_E_DS_PAIR_WORLD = 83, /* DS: the checkpoint has {W} partitions; DeepSpeed refuses to load it on {N} */
    /* PyTorch Distributed Checkpoint folders (format.md 12.5) */
    CKPT_E_DCP_FOLDER = 84,   /* DCP: no .metadata, a path outside the folder, a missing data file (1, 9, 10) */
    CKPT_E_DCP_METADATA = 85, /* DCP: .metadata is no Metadata, or a field is missing or of another type (2, 3) */
    CKPT_E_DCP_STORAGE = 86,  /* DCP: storage entries: missing, twice, past a file's end, overlapping (6-13) */
    CKPT_E_DCP_RECORD = 87,   /* DCP: a record is no torch.save file, no tensor, or not its chunk's size (14-16) */
    CKPT_E_DCP_CHUNKS = 88,   /* DCP: chunks outside their tensor, overlapping, not covering it (19-21) */
    CKPT_E_DCP_STATE = 89,    /* DCP: the optimizer part against the model part: names, shapes, steps, groups (22-25) */
    /* a name-keyed optimizer (FSDP, docs/pytorch.md) paired with its model by name */
    CKPT_E_BY_NAME = 90 /* DCP: names, shapes, ties or requires grad of the model and the checkpoint differ */
} ckpt_code;

/* Which input an error is about: the file read (the usual case) or the expected layout (the
 * destination), e.g. a malformed layout JSON. */
enum { CKPT_SUBJECT_FILE = 0, CKPT_SUBJECT_EXPECTED = 1 };

/* The optimizer configuration: the four hyperparameters as raw binary64 bit patterns. */
typedef struct ckpt_config {
    uint64_t kind;
    uint64_t beta1, beta2, epsilon, weight_decay;
} ckpt_config;

/* For CKPT_E_CONFIG_DIFFERS: both sides, so a person can be told which fields differ. */
typedef struct ckpt_config_diff {
    bool present;
    int file_dtype, expected_dtype;
    ckpt_config file, expected;
} ckpt_config_diff;

/* An error: a stable code, the reference diagnostic text, the byte offset where the offending
 * field starts and its length in bytes (for a hex view), the slot or tensor it is about, and an
 * optional hint: a second sentence for people (what the data looks like instead, which slot of
 * a layout breaks the rules); the hint never replaces the reference text.
 * Zero-initialise, then ckpt_error_clear before first use (it sets offset and slot to none). */
typedef struct ckpt_error {
    int code;
    uint64_t offset; /* CKPT_NONE for errors about in-memory input */
    uint64_t length; /* 0 when not known */
    uint64_t slot;   /* CKPT_NONE when the error is about no slot */
    uint64_t index;  /* the optimizer's index it is about (PyTorch, format.md 10.4), CKPT_NONE for none */
    int subject;     /* CKPT_SUBJECT_* */
    char *message;
    char *hint;
    ckpt_config_diff config_diff;
} ckpt_error;

void ckpt_error_clear(ckpt_error *err);

/* ---- Handles (format.md 1) ------------------------------------------------------------- */

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
 * outlive the reader. Returns NULL when out of memory. Diagnostics it gives carry the
 * TLADAMF prefix. */
typedef struct ckpt_reader ckpt_reader;
ckpt_reader *ckpt_reader_new(const ckpt_source *src);
void ckpt_reader_free(ckpt_reader *r);
uint64_t ckpt_reader_offset(const ckpt_reader *r); /* position of the next byte */

/* Progress of a scan: bytes of this scan done so far, and in all (CKPT_NONE when unknown).
 * Return nonzero to stop (the result is then CKPT_E_CANCELLED). */
typedef int (*ckpt_progress_fn)(void *ctx, uint64_t done, uint64_t total);

/* ---- File families (docs/format.md 4 and 6) --------------------------------------------- */

typedef enum ckpt_family_id {
    CKPT_FAMILY_ANY = 0,         /* for a destination: whatever the file's magic says */
    CKPT_FAMILY_TLADAMF = 1,     /* optimizer state: Adam/AdamW moments and the ParameterSchema */
    CKPT_FAMILY_TLSF32B = 2,     /* model state: parameters and persistent buffers, float32 */
    CKPT_FAMILY_TLPF32B = 3,     /* older model state: parameters, float32 */
    CKPT_FAMILY_SAFETENSORS = 4, /* model state: a safetensors file (format.md 10.1) */
    CKPT_FAMILY_PYTORCH = 5,     /* optimizer state: a torch.save file, zip or legacy (format.md 10) */
    CKPT_FAMILY_DEEPSPEED = 6,   /* a DeepSpeed ZeRO checkpoint: a tag folder, or one of its files (format.md 11) */
    CKPT_FAMILY_DCP = 7 /* a PyTorch Distributed Checkpoint: a folder, its .metadata or a .distcp (format.md 12) */
} ckpt_family_id;

/* What a family's files hold: optimizer state (moments per parameter), model state (tensors), or
 * both (a file of a family that saves the two together). A mask of these bits. */
typedef enum ckpt_role { CKPT_ROLE_OPTIMIZER = 1, CKPT_ROLE_MODEL = 2 } ckpt_role;

/* What identifies a family and how its diagnostics read. The public fields describe it; how it
 * is read (its reader, what its items are, its own texts) is the private `impl` (src/core/impl.h). */
typedef struct ckpt_family {
    int id;             /* ckpt_family_id (or a build's extra family: docs/architecture.md) */
    const char *magic;  /* the 7 magic bytes, also its short name: "TLADAMF" */
    const char *name;   /* "CUDA Adam checkpoint": the header's texts (magic, version) */
    const char *prefix; /* the texts after the header: "CUDA Adam checkpoint", "StateIO" */
    uint64_t version_min, version_max;
    unsigned role;                       /* what it holds: CKPT_ROLE_* bits (optimizer state, model state, both) */
    int element_dtype;                   /* ckpt_dtype of the stored values; CKPT_DTYPE_ANY: each file's header
                                          * says (TLADAMF: float32, or v5's dtype field) */
    const struct ckpt_family_impl *impl; /* private */
} ckpt_family;

const ckpt_family *ckpt_family_get(int id); /* NULL for an unknown id */
/* Does family f (NULL: none) hold `role` (a CKPT_ROLE_* bit)? */
bool ckpt_family_has_role(const ckpt_family *f, unsigned role);
const ckpt_family *ckpt_family_of_magic(const uint8_t magic[7]); /* NULL when none matches */
/* Every family this build reads, in table order: ckpt_family_at(k) for k < ckpt_family_count(). */
size_t ckpt_family_count(void);
const ckpt_family *ckpt_family_at(size_t k); /* NULL past the end */

/* ---- ParameterSchema (format.md 3, the seed) -------------------------------------------- */

typedef struct ckpt_schema ckpt_schema;

/* Build a schema from arrays (copied). `ranks` has shape_count entries and `dims` their sum,
 * outermost dim first. `requires_grad` has flag_count entries (0 frozen, nonzero trainable).
 * `representatives` is NULL for an absent map, else map_count entries, CKPT_NONE for none.
 * The counts may differ: isWellFormed then says false, as the seed does. A schema with no
 * flags and no map is a list of shapes (what a model-state file holds). Returns NULL only when
 * out of memory or when the ranks' sum overflows. */
ckpt_schema *ckpt_schema_new(size_t shape_count, const uint64_t *ranks, const uint64_t *dims, size_t flag_count,
                             const uint8_t *requires_grad, const uint64_t *representatives, size_t map_count);
void ckpt_schema_free(ckpt_schema *s);

size_t ckpt_schema_count(const ckpt_schema *s); /* number of shapes, n */
uint64_t ckpt_schema_rank(const ckpt_schema *s, size_t i);
const uint64_t *ckpt_schema_dims(const ckpt_schema *s, size_t i); /* rank entries */
/* The element count of slot i; *too_big (may be NULL) is set when the product is >= 2^64, and
 * then the value returned is meaningless: such a size never matches a stored u64. */
uint64_t ckpt_schema_size(const ckpt_schema *s, size_t i, bool *too_big);
/* The element count in full decimal, into buf (cap bytes, NUL-terminated, truncated to fit). */
void ckpt_schema_size_decimal(const ckpt_schema *s, size_t i, char *buf, size_t cap);
bool ckpt_schema_requires_grad(const ckpt_schema *s, size_t i); /* false past the flags */
size_t ckpt_schema_flag_count(const ckpt_schema *s);            /* flags held (may differ from n) */
bool ckpt_schema_has_map(const ckpt_schema *s);
bool ckpt_schema_same_shape(const ckpt_schema *a, size_t i, const ckpt_schema *b, size_t j);

/* The seed's queries. An index past the slots is "none" / false. */
uint64_t ckpt_schema_representative(const ckpt_schema *s, uint64_t i); /* CKPT_NONE for none */
bool ckpt_schema_is_well_formed(const ckpt_schema *s);
bool ckpt_schema_is_representative(const ckpt_schema *s, uint64_t i);
uint64_t ckpt_schema_optimizer_state_count(const ckpt_schema *s);
uint64_t ckpt_schema_trainable_count(const ckpt_schema *s);
bool ckpt_schema_has_aliases(const ckpt_schema *s);
/* The stored tag of writeRepresentatives: 0 for a frozen slot, representative + 1 otherwise. */
uint64_t ckpt_schema_tag(const ckpt_schema *s, size_t i);

/* The first slot that breaks the sharing rules, and why (format.md 5). Returns the slot, or
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
/* Per slot, whether the sharing rule rejects it (1) or not (0): every broken slot, not only the
 * first, for a viewer that must draw them as broken. out has ckpt_schema_count(s) bytes.
 * Returns the number of broken slots. */
uint64_t ckpt_schema_mark_sharing_faults(const ckpt_schema *s, uint8_t *out);
/* Why the schema is not well formed, in words: "3 shapes but 2 requiresGrad flags" or
 * "parameter 2: representative 0 has a different shape". NULL when it is well formed or out of
 * memory; *slot (may be NULL) gets the slot, or CKPT_NONE for a length mismatch. */
char *ckpt_schema_explain(const ckpt_schema *s, uint64_t *slot);

/* write / writeRepresentatives / readAndCheck / readAndCheckRepresentatives (TLADAMF's
 * texts). Return 0 or an error code (also stored in err). */
int ckpt_schema_write(const ckpt_schema *s, const ckpt_sink *out, ckpt_error *err);
int ckpt_schema_write_representatives(const ckpt_schema *s, const ckpt_sink *out, ckpt_error *err);
int ckpt_schema_read_and_check(ckpt_reader *r, const ckpt_schema *expected, ckpt_error *err);
int ckpt_schema_read_and_check_representatives(ckpt_reader *r, const ckpt_schema *expected, ckpt_error *err);

/* ---- The optimizer configuration (format.md 4) ----------------------------------------- */

/* The one dtype table (dtype.c). float32 and float64 are the dtypes of TorchLean's files (moments,
 * layouts); the others are the element types of other families' tensors (safetensors). */
typedef enum ckpt_dtype {
    CKPT_FLOAT32 = 0,
    CKPT_FLOAT64 = 1,
    CKPT_FLOAT16 = 2,
    CKPT_BFLOAT16 = 3,
    CKPT_INT64 = 4,
    CKPT_INT32 = 5,
    CKPT_INT16 = 6,
    CKPT_INT8 = 7,
    CKPT_UINT8 = 8,
    CKPT_BOOL = 9,
    CKPT_FLOAT8_E4M3 = 10, /* listed, no statistics */
    CKPT_FLOAT8_E5M2 = 11, /* listed, no statistics */
    CKPT_DTYPE_COUNT = 12,
    CKPT_DTYPE_ANY = -1
} ckpt_dtype;
/* Bytes per element (4, 8, 2, 1) and the name ("float32", "bfloat16", "int64") of a dtype; 0 and
 * NULL for anything else. */
unsigned ckpt_dtype_width(int dtype);
const char *ckpt_dtype_name(int dtype);
/* Its name in a safetensors header ("F32", "BF16"), and its NumPy type string ("<f4", "|b1"):
 * NULL for bfloat16 and the float8 types, which NumPy does not have. */
const char *ckpt_dtype_safetensors_name(int dtype);
const char *ckpt_dtype_numpy_name(int dtype);
/* The dtype of a safetensors name ("BF16"), or -1. */
int ckpt_dtype_of_safetensors_name(const char *name);
/* Whether the layouts of TorchLean's families name it (float32, float64). */
bool ckpt_dtype_in_layouts(int dtype);
/* Whether statistics are computed for it: every dtype but the float8 types. Its values widen to
 * double exactly (int64 beyond 2^53 rounds to the nearest double). */
bool ckpt_dtype_has_stats(int dtype);
bool ckpt_dtype_is_float(int dtype);
/* Its kind as NumPy's letter: 'f' floating, 'i' signed, 'u' unsigned, 'b' bool; 0 for none. */
char ckpt_dtype_kind(int dtype);
/* n elements of dtype at p (little-endian, as stored) widened to double into out. */
void ckpt_dtype_widen(int dtype, const void *p, size_t n, double *out);
typedef enum ckpt_kind { CKPT_ADAM = 0, CKPT_ADAMW = 1 } ckpt_kind;
/* "adam", "adamw" (the layout JSON's and the CLI's word); NULL for another value. */
const char *ckpt_kind_name(uint64_t kind);

uint64_t ckpt_bits_from_double(double x);
double ckpt_double_from_bits(uint64_t bits);
/* Configuration validation for moments of `dtype`. Returns 0 or the error code. */
int ckpt_config_validate(const ckpt_config *c, ckpt_dtype dtype, ckpt_error *err);
/* Bit-for-bit equality of dtype, kind and the four patterns. */
bool ckpt_config_same(const ckpt_config *a, ckpt_dtype da, const ckpt_config *b, ckpt_dtype db);
/* Which of dtype, kind, beta1, beta2, epsilon, weightDecay differ bit for bit: a mask of
 * CKPT_CONFIG_* bits (0: the same). */
enum {
    CKPT_CONFIG_DTYPE = 1,
    CKPT_CONFIG_KIND = 2,
    CKPT_CONFIG_BETA1 = 4,
    CKPT_CONFIG_BETA2 = 8,
    CKPT_CONFIG_EPSILON = 16,
    CKPT_CONFIG_WEIGHT_DECAY = 32
};
unsigned ckpt_config_differences(const ckpt_config *a, int da, const ckpt_config *b, int db);

/* ---- Statistics ------------------------------------------------------------------------ */

/* Statistics of one payload (docs/report.md "stats"); min..sum_squares over finite values.
 * The histogram counts finite nonzero values by floor(log2|x|), from hist_log2_min for
 * hist_len bins (hist is NULL when hist_len is 0). */
typedef struct ckpt_stats {
    uint64_t count, finite, nan, inf, zero, negative;
    double min, max, sum, sum_squares;
    int32_t hist_log2_min;
    uint32_t hist_len;
    uint64_t *hist;
} ckpt_stats;

/* The one rule of an unhealthy moment entry: how many of its elements are NaN or infinite in m
 * or v, or negative in v (a second moment is never negative). */
uint64_t ckpt_entry_unhealthy(const ckpt_stats *m, const ckpt_stats *v);

/* ---- Reports --------------------------------------------------------------------------- */

/* One stored moment entry (TLADAMF). `offset` is where its id field starts. m and v are NULL
 * until statistics are computed; `unhealthy` then counts NaN and infinities in m and v and
 * negative values in v (a second moment is never negative). */
typedef struct ckpt_entry_info {
    uint64_t id, step, count, offset;
    uint64_t m_offset, v_offset; /* where the payloads start */
    ckpt_stats *m, *v;
    uint64_t unhealthy;
} ckpt_entry_info;

/* One stored tensor (TLSF32B / TLPF32B): its shape is slot i of the report's schema. `offset`
 * is where its rank field starts, `data_offset` where its values start. */
typedef struct ckpt_tensor_info {
    uint64_t count, offset, data_offset;
    ckpt_stats *values;
    uint64_t unhealthy; /* NaN and infinities, with statistics */
    int dtype;          /* its ckpt_dtype (a safetensors file's tensors each have their own) */
    char *name;         /* its name when the file stores names (safetensors), else NULL */
} ckpt_tensor_info;

/* Everything read from one file. Fields not reached before an error keep their "absent"
 * values: family NULL, has_version false, dtype -1, has_config false, schema NULL or partial
 * (schema_complete false), entries and tensors only those read, offsets CKPT_NONE. */
typedef struct ckpt_report {
    const ckpt_family *family; /* NULL when the magic was not read or matches none */
    uint64_t size;             /* bytes in the source, CKPT_NONE when unknown */
    bool has_version;
    uint64_t version; /* as read, even when unsupported */
    bool statistics;  /* payloads were scanned (entries' and tensors' stats set) */
    int dtype;        /* ckpt_dtype of the stored values (moments, tensors), -1 when not read */
    /* an optimizer family's config (TLADAMF's header, a torch.save file's first group) */
    bool has_config;
    ckpt_config config;
    /* TLADAMF's extension of the report, filled by its reader only: other families leave it as
     * the front door set it (no counter read, no tags, no readers); their JSON omits these
     * members or gives null (json_body decides), and `readers` is null */
    struct ckpt_tladamf_report {
        int counter_state; /* -1 not read yet, 0 absent, 1 present */
        uint64_t random_counter;
        uint64_t tags_offset; /* where the representative tags start (v >= 3) */
        /* per TorchLean reader (index ckpt_reader_id - 1), whether it can read the file at all
         * and, if not, its first diagnostic; NULL until an inspection asks the readers */
        struct ckpt_reader_verdict *readers;
    } tladamf;
    /* the layout: a TLADAMF file's ParameterSchema, or a state file's tensor shapes (no flags,
     * no map); NULL before its count is read */
    ckpt_schema *schema;
    uint64_t schema_declared_count;
    bool schema_complete;    /* every slot and (v >= 3) every tag read */
    uint64_t schema_offset;  /* where the slot count (tensor count) starts */
    uint64_t entries_offset; /* where the entry count starts */
    bool has_entry_count;
    uint64_t entry_count; /* as declared */
    ckpt_entry_info *entries;
    size_t entries_len, entries_cap;
    /* the model-state families */
    ckpt_tensor_info *tensors;
    size_t tensors_len, tensors_cap;
    char **warnings;
    size_t warnings_len;
    ckpt_error error; /* code 0 when the file is valid / would load */
    /* what only this file's family reads (a safetensors file's header length and metadata),
     * owned by the family (freed by its impl) */
    void *family_data;
    /* a family whose slots come from its model (PyTorch) has been paired with one (format.md
     * 10.4): its schema, entries (optimizer) or tensors (model) are the pair's slots */
    bool slots_bound;
} ckpt_report;

void ckpt_report_free(ckpt_report *rep);

enum { CKPT_INSPECT_STATS = 1 };

typedef struct ckpt_inspect_options {
    unsigned flags;            /* CKPT_INSPECT_*; 0 skips payloads */
    ckpt_progress_fn progress; /* may be NULL */
    void *progress_ctx;
} ckpt_inspect_options;

/* Inspect without an expected layout (format.md 5 and 6): the family comes from the magic.
 * Returns a report (NULL only when out of memory) whose error says why the file is invalid;
 * everything read before is kept. opt may be NULL. */
ckpt_report *ckpt_inspect(const ckpt_source *src, const ckpt_inspect_options *opt);

/* A destination to load into (format.md 4, "Loading into an expected layout", and 6), and
 * also what `diff` compares: a layout. */
typedef struct ckpt_expected {
    const ckpt_schema *schema; /* required; for a state file only its shapes matter */
    int dtype;                 /* destination moment dtype, CKPT_DTYPE_ANY: not checked */
    const ckpt_config *config; /* NULL: the destination has no configuration yet */
    int keeps_random_counter;  /* 1 yes, 0 no, -1 unknown: step 12 not checked */
    int family;                /* ckpt_family_id the destination reads; ANY: the file's */
    int reader;                /* ckpt_reader_id: which TorchLean reader loads it; 0: v2-v5 */
} ckpt_expected;

/* Would the trainer load this file into `exp`? The report's error is the trainer's first
 * diagnostic (code 0: it loads); warnings hold the legacy-counter warning. */
ckpt_report *ckpt_load(const ckpt_source *src, const ckpt_expected *exp);

/* ---- TorchLean's public readers of TLADAMF (format.md 8) ---------------------------------- */

/* Lean projects pin a TorchLean commit, so trainers run different readers of one format. Each is
 * a row of data (ckpt_reader_rule): which versions it reads and how its checks differ. */
typedef enum ckpt_reader_id {
    CKPT_READER_DEFAULT = 0, /* v2-v5, the newest (format.md 4) */
    CKPT_READER_V2 = 1,
    CKPT_READER_V2_LISTS = 2,
    CKPT_READER_V2_V3 = 3,
    CKPT_READER_V2_V4 = 4,
    CKPT_READER_V2_V4_F32 = 5,
    CKPT_READER_V2_V5 = 6,
    CKPT_READER_COUNT = 6 /* the named readers: ids 1..CKPT_READER_COUNT */
} ckpt_reader_id;

/* How a reader validates epsilon: E64 the binary64 value itself, E32 rounded to binary32, ED
 * rounded to the moments' dtype (each with its own text). */
typedef enum ckpt_epsilon_rule { CKPT_EPSILON_E64 = 0, CKPT_EPSILON_E32 = 1, CKPT_EPSILON_ED = 2 } ckpt_epsilon_rule;

typedef struct ckpt_reader_rule {
    int id;                 /* ckpt_reader_id (never 0) */
    const char *name;       /* "v2-v4" */
    uint64_t version_max;   /* reads versions 2..version_max */
    const char *versions;   /* as its version text says them: "2, 3, or 4" */
    int epsilon;            /* ckpt_epsilon_rule */
    bool config_after_file; /* the destination's config compared after the whole file (else before the schema) */
    bool trainable_count;   /* entries counted by trainableCount, a frozen slot's entry is
                             * "state exists for frozen parameter {id}" (else optimizerStateCount,
                             * "parameter {id} does not own optimizer state") */
    bool counter;           /* applies the random-counter destination rule and legacy warning */
    bool list_shapes;       /* a shape mismatch prints Lean lists [2, 3], not #[2, 3] */
    bool ties;              /* knows storage sharing (else a tied destination is seen untied) */
    bool float64;           /* reads the v5 dtype field: float64 moments and destinations */
    const char *source;     /* the public TorchLean source it follows */
} ckpt_reader_rule;

/* The row of reader `id` (0 gives v2-v5), NULL for an unknown id. */
const ckpt_reader_rule *ckpt_reader_rule_get(int id);
/* The id of the reader named `name` ("v2-lists"), or -1. */
int ckpt_reader_by_name(const char *name);
/* The readers' names in id order as a JSON array ["v2", ..., "v2-v5"] (caller frees). */
char *ckpt_reader_names_json(void);

/* One reader's verdict on a file without a destination (format.md 8 "Without a destination"). */
typedef struct ckpt_reader_verdict {
    bool reads;
    ckpt_error error; /* code 0 when it reads the file */
} ckpt_reader_verdict;

/* The readers' verdicts as JSON {"v2": {"reads": bool, "error": null | {...}}, ...}, or "null"
 * when the report has none (a model-state file, a load). */
char *ckpt_readers_json(const ckpt_report *rep);

/* ---- The open file: a handle that parses once (sql.js's Database, h5wasm's File) ------- */

typedef struct ckpt_file ckpt_file;

/* Parse `src` (as ckpt_inspect) and keep the report and a copy of the source struct for later
 * reads: the source's ctx must stay valid until ckpt_close. NULL only when out of memory; an
 * invalid file opens too (its report says why). */
ckpt_file *ckpt_open(const ckpt_source *src, const ckpt_inspect_options *opt);

/* ckpt_open with the file's name or path as the caller knows it (NULL: none): a fact a family
 * may state, never opened (a DCP data file's note names the file and its folder, format.md
 * 12.1). The name is read during the call only. */
ckpt_file *ckpt_open_named(const ckpt_source *src, const ckpt_inspect_options *opt, const char *name);
void ckpt_close(ckpt_file *f);
const ckpt_report *ckpt_file_report(const ckpt_file *f);
const ckpt_source *ckpt_file_source(const ckpt_file *f);

/* The moment entry that holds slot `slot`'s optimizer history: its own, or its
 * representative's for a tied slot (*owner says which). Errors: CKPT_E_NO_SUCH_SLOT,
 * CKPT_E_FROZEN_SLOT, CKPT_E_WRONG_FAMILY, CKPT_E_NOT_READABLE (the file broke before). */
int ckpt_file_entry(const ckpt_file *f, uint64_t slot, const ckpt_entry_info **entry, uint64_t *owner, ckpt_error *err);
/* Copy that entry's m and v, count * width bytes each as stored, into m and v. */
int ckpt_file_read_moments(const ckpt_file *f, uint64_t slot, void *m, void *v, ckpt_error *err);
/* Statistics of that entry's m and v (streamed, bounded memory); the caller frees *m and *v
 * with ckpt_stats_free. Progress is relative to these two payloads. Statistics the entry already
 * has (opened with them, or attached) are copied, not read again; so for the three below. */
int ckpt_file_moment_stats(const ckpt_file *f, uint64_t slot, ckpt_progress_fn progress, void *progress_ctx,
                           ckpt_stats **m, ckpt_stats **v, ckpt_error *err);
/* A state file's tensor i: its info, its values copied as stored (count * ckpt_dtype_width of
 * the report's dtype bytes), its statistics. */
int ckpt_file_tensor(const ckpt_file *f, uint64_t i, const ckpt_tensor_info **tensor, ckpt_error *err);
int ckpt_file_read_tensor(const ckpt_file *f, uint64_t i, void *out, ckpt_error *err);
int ckpt_file_tensor_stats(const ckpt_file *f, uint64_t i, ckpt_progress_fn progress, void *progress_ctx,
                           ckpt_stats **values, ckpt_error *err);
/* The file as a layout (for ckpt_load's destination, ckpt_diff_json): its schema, dtype,
 * configuration and counter status. Fails (CKPT_E_NOT_READABLE) when the file broke before its
 * layout was complete. The layout points into the file: valid until ckpt_close. */
int ckpt_file_layout(const ckpt_file *f, ckpt_expected *layout, ckpt_error *err);

void ckpt_stats_free(ckpt_stats *s);

/* ---- Statistics gathered apart (workers, each with an instance of the library) ----------- */

/* The items of a file are its entries (optimizer) or its tensors (state). The statistics of item
 * k, read through the file: entry k's m into *a and v into *b, or tensor k's values into *a (*b
 * NULL). The caller frees them (or attaches them, below). */
int ckpt_file_item_stats(const ckpt_file *f, size_t k, ckpt_progress_fn progress, void *progress_ctx, ckpt_stats **a,
                         ckpt_stats **b, ckpt_error *err);
/* The bytes ckpt_file_item_stats reads for item k (its payloads), CKPT_NONE when there is no
 * item k: what a progress bar over items split among workers counts to. */
uint64_t ckpt_file_item_bytes(const ckpt_file *f, size_t k);
/* Statistics as u64 words, to cross to another instance: ckpt_stats_pack_len(s) words. */
size_t ckpt_stats_pack_len(const ckpt_stats *s);
void ckpt_stats_pack(const ckpt_stats *s, uint64_t *out);
/* NULL when the words are not statistics (a length that does not add up). */
ckpt_stats *ckpt_stats_unpack(const uint64_t *in, size_t len);
/* Give item k its statistics (the file takes them, and frees them on a failure too); statistics
 * of another count of elements than the item's are refused (CKPT_E_INVALID_ARGUMENT). Once every
 * item has them the report is what ckpt_inspect with CKPT_INSPECT_STATS gives: the statistics
 * flag set, the payload warnings in file order. */
int ckpt_file_attach_stats(ckpt_file *f, size_t k, ckpt_stats *a, ckpt_stats *b, ckpt_error *err);

/* ---- Pairing an optimizer checkpoint with its model-state file (format.md 6) ------------ */

typedef struct ckpt_pair_result {
    bool pairs;           /* no failure, and nothing left that the files cannot tell */
    bool cannot_tell;     /* no failure, but the pair holds only if slots without optimizer state are
                           * not trained (error says which, code CKPT_E_TORCH_UNTRAINED) */
    ckpt_error *failures; /* in check order, the first is the verdict; offsets are in the
                           * state file, slot is CKPT_NONE for the count */
    size_t failures_len;
    char **warnings;
    size_t warnings_len;
    ckpt_error error; /* a reason pairing could not be done at all (I/O, cancel, files in the
                       * wrong roles), or an invalid file's own diagnostic (see invalid) */
    int invalid;      /* CKPT_PAIR_INVALID_*: the invalid file (it never pairs), else 0 */
    char *pytorch;    /* a PyTorch optimizer's placement on its model (format.md 10.4) as the JSON
                       * of the report's "pairing", or NULL */
    char *note;       /* what the verdict compared and what not, when it is not CKPT_PAIR_NOTE; NULL */
} ckpt_pair_result;

enum { CKPT_PAIR_INVALID_OPTIMIZER = 1, CKPT_PAIR_INVALID_STATE = 2 };

/* What a pair verdict does not say, in the product's words (the JSON's "note"): pairing is
 * structural, one state file holds one step. */
#define CKPT_PAIR_NOTE                                                                                                 \
    "same slots, same shapes, same ties; the values are not compared: `run` with both steps' state files compares "    \
    "them"

/* Pairing a model-state file that keeps no module order (safetensors: its writer sorts tensors
 * by dtype and name) by the model's names (format.md 10.4): its tensors are put in the order of
 * `names` (the model's state-dict keys in order; names the file lacks, such as dropped tied
 * copies, are skipped; its tensors not named follow in file order), then paired as
 * ckpt_pair pairs. Without names (NULL), such a file is ordered by shape alone (slot by slot, the
 * first tensor of its shape not yet taken) and the result's first warning says so. A state file
 * of a family that keeps its order (TLSF32B) is paired as it is (names then only label slots).
 * The state file keeps its own order (it is put back after pairing). NULL only when out of memory. */
ckpt_pair_result *ckpt_pair_named(ckpt_file *opt, ckpt_file *state, const char *const *names, size_t name_count,
                                  ckpt_progress_fn progress, void *progress_ctx);

/* What a pairing may be told beside the two files (format.md 10.4); zero-initialised: nothing. */
typedef struct ckpt_pair_options {
    const char *const *names; /* the model's state-dict keys in order (ckpt_pair_named), or NULL */
    size_t name_count;
    /* names of the model's tensors the training code does not train (frozen parameters, or
     * buffers): no optimizer index is placed on them, and a slot without optimizer state that
     * is one of them leaves nothing untold. A name the model does not have is refused */
    const char *const *frozen;
    size_t frozen_count;
    /* the model the optimizer was saved with (the model file of its own Trainer checkpoint
     * folder), compared with `state` first, by names, shapes and ties; NULL: none */
    const ckpt_file *trained;
    const char *trained_label; /* how the texts name it ("checkpoint-20's model"); NULL: "the training-time model" */
    const char *model_label;   /* how the texts name `state` ("untied.bin"); NULL: "the model" */
    /* a DeepSpeed checkpoint (format.md 11.6): the data-parallel world size it will be loaded on;
     * 0: not given. With `names` and no state file (NULL), the new model is its names alone */
    uint64_t world_size;
} ckpt_pair_options;

/* ckpt_pair_named with the options above (o may be NULL). A TorchLean optimizer (TLADAMF) pairs
 * with a torch.save model too: the model's slots (format.md 10.4) are its tensors, and the
 * optimizer's ties must be the model's storage ties. NULL only when out of memory. */
ckpt_pair_result *ckpt_pair_with(ckpt_file *opt, ckpt_file *state, const ckpt_pair_options *o,
                                 ckpt_progress_fn progress, void *progress_ctx);

/* The kind of an optimizer whose files do not say it, CKPT_ADAM or CKPT_ADAMW: a PyTorch file
 * without decoupled_weight_decay (format.md 10.3), a DeepSpeed checkpoint whose ds_config names
 * no optimizer and whose groups save no decoupled_weight_decay (11.4), a DCP folder whose groups
 * save none (12.4: it keeps no optimizer class). Its groups'
 * configurations (health's decay term, a run's learning rate) take it, and the report's JSON says
 * it was given (a DeepSpeed or DCP report's "kindGiven"); call it before pairing. 0, or
 * CKPT_E_INVALID_ARGUMENT when the files say another kind (a TLADAMF file's header, a group's
 * decoupled_weight_decay, ds_config.optimizer) or hold no optimizer. */
int ckpt_set_kind(ckpt_file *f, ckpt_kind kind, ckpt_error *err);

/* Pair `opt` (TLADAMF) with `state` (TLSF32B/TLPF32B). Both must be valid (else result->error
 * is the invalid file's own diagnostic, result->invalid says which). Reads tied tensors and every tensor's
 * values in streamed chunks. Returns NULL only when out of memory. */
ckpt_pair_result *ckpt_pair(const ckpt_file *opt, const ckpt_file *state, ckpt_progress_fn progress,
                            void *progress_ctx);
void ckpt_pair_result_free(ckpt_pair_result *r);
char *ckpt_pair_json(const ckpt_pair_result *r);

/* ---- Training health (docs/health.md) ------------------------------------------------------ */

typedef struct ckpt_health_options {
    double lr;                 /* the learning rate, NAN when not given (no ratios) */
    uint64_t first_slot;       /* slots [first_slot, first_slot + slot_count): a range, for */
    uint64_t slot_count;       /* splitting the pass across workers; CKPT_NONE: to the end */
    ckpt_progress_fn progress; /* bytes of this pass; may be NULL */
    void *progress_ctx;
    bool ratio_band;              /* the flag band of the update-to-weight ratio is given; false: */
    double ratio_low, ratio_high; /* CKPT_RATIO_LOW..CKPT_RATIO_HIGH. Ratios outside it are flagged */
} ckpt_health_options;

/* The default band of the update-to-weight ratio (healthy training sits near 1e-3). */
#define CKPT_RATIO_LOW 1e-5
#define CKPT_RATIO_HIGH 1e-2

/* Is [low, high] a ratio band: finite, 0 <= low < high? 0, or CKPT_E_INVALID_ARGUMENT with the
 * reason in err (ckpt_health_json checks the same). */
int ckpt_health_ratio_band(double low, double high, ckpt_error *err);

/* The next Adam step per slot, as JSON {"ok","pairs","lr","ratioBand":[low,high],"c","first",
 * "slots":[...],"flags":[{"slot","flag","severity","message"}],"error"} (docs/health.md); a
 * flag's severity is "failure" (NaN/inf, negative v, inconsistent moments) or "warning" (the
 * ratio band, a heuristic). `state` may be NULL (then no parameters, no ratios); a state file
 * that does not pair (count, shapes) is not used and its first failure is the error. Both files
 * must be valid (CKPT_E_NOT_READABLE otherwise); a band given must be one
 * (ckpt_health_ratio_band). NULL with err set on failure; o may be NULL (every slot, no lr). */
char *ckpt_health_json(const ckpt_file *opt, const ckpt_file *state, const ckpt_health_options *o, ckpt_error *err);

/* ---- Export (docs/export.md) --------------------------------------------------------------- */

enum { CKPT_EXPORT_SAFETENSORS = 1, CKPT_EXPORT_NPZ = 2 };

typedef struct ckpt_export_options {
    int format;               /* CKPT_EXPORT_* */
    const char *const *names; /* one per slot (tensor), unique, or NULL for slot{i} */
    size_t name_count;
    const uint64_t *slots; /* export only these slots (their owners' moments), or NULL */
    size_t slot_count;
    ckpt_progress_fn progress; /* payload bytes copied; may be NULL */
    void *progress_ctx;
} ckpt_export_options;

/* An optimizer file's moments ({name}.exp_avg, {name}.exp_avg_sq for each owner slot; a DeepSpeed
 * folder's also {name}, the fp32 master weights, each read from its fragments) or a state file's
 * tensors ({name}), bit for bit, with the metadata, as safetensors or .npz, streamed into
 * out. The file must be valid (CKPT_E_NOT_READABLE otherwise); names are checked (one per slot,
 * unique, not empty). */
int ckpt_export(const ckpt_file *f, const ckpt_export_options *o, const ckpt_sink *out, ckpt_error *err);

/* One payload as a .npy: a slot's m or v (its owner's, for a tied slot) or a state tensor. */
enum { CKPT_NPY_M = 0, CKPT_NPY_V = 1, CKPT_NPY_VALUES = 2 };
int ckpt_export_npy(const ckpt_file *f, uint64_t slot, int what, const ckpt_sink *out, ckpt_error *err);

/* ---- Writing ---------------------------------------------------------------------------- */

/* What to write (the reference writer's input). Each entry's payloads hold count * width
 * bytes, width 4 or 8 by dtype. */
typedef struct ckpt_entry_in {
    uint64_t id, step, count;
    const void *m, *v;
    uint64_t m_bytes, v_bytes;
} ckpt_entry_in;

typedef struct ckpt_write_desc {
    const ckpt_schema *schema;
    int dtype; /* CKPT_FLOAT32 or CKPT_FLOAT64 */
    ckpt_config config;
    bool has_random_counter;
    uint64_t random_counter;
    const ckpt_entry_in *entries;
    size_t entry_count;
    uint64_t version; /* 0: the reference writer's choice; 2..5: forced */
} ckpt_write_desc;

/* The version the reference writer picks for this description (format.md 4). */
uint64_t ckpt_write_version(const ckpt_write_desc *d);
/* Check everything (the save checks, in order), then write. Nothing is written when a check
 * fails. Returns 0 or the error code. */
int ckpt_write(const ckpt_write_desc *d, const ckpt_sink *out, ckpt_error *err);

/* A model-state file (format.md 6): `family` TLSF32B or TLPF32B, the shapes of `shapes` (its
 * flags and map are ignored), and per tensor count * width bytes of the family's element dtype
 * (little-endian float32) in values[i] (value_bytes[i] bytes). Checks every length before the
 * first byte. */
int ckpt_state_write(int family, const ckpt_schema *shapes, const void *const *values, const uint64_t *value_bytes,
                     const ckpt_sink *out, ckpt_error *err);

/* ---- Conversion (format.md 8 "Conversion") ------------------------------------------------ */

/* The same state rewritten as another version with the writer's layout (format.md 4). Lossless
 * paths need no option; anything that loses or invents something is refused (CKPT_E_CONVERSION_LOSES)
 * with a text naming the option that allows it. Zero-initialise; exactly one of version, oldest,
 * reader says the target. */
typedef struct ckpt_convert_options {
    uint64_t version;           /* 2..5 */
    bool oldest;                /* the lowest version that loses nothing */
    int reader;                 /* ckpt_reader_id: the newest version that reader reads, losing nothing */
    bool supply_random_counter; /* --random-counter N: a counter for a file without one */
    uint64_t random_counter;
    bool drop_random_counter;  /* --drop-random-counter */
    bool untie;                /* --untie: every alias its own copy of its owner's moments and step */
    bool round_to_float32;     /* --round-to-float32: float64 moments rounded to float32 */
    ckpt_progress_fn progress; /* payload bytes copied; may be NULL */
    void *progress_ctx;
    /* a PyTorch optimizer paired with its model: TorchLean's file holds one configuration */
    int kind;                                  /* 0: as the file says; 1 + CKPT_ADAM or 1 + CKPT_ADAMW: --kind */
    bool has_weight_decay, has_betas, has_eps; /* --weight-decay X, --betas B1,B2, --eps X: one for */
    double weight_decay, beta1, beta2, eps;    /* every group */
    bool drop_amsgrad;                         /* --drop-amsgrad: amsgrad's max_exp_avg_sq is not written */
} ckpt_convert_options;

typedef struct ckpt_convert_result {
    uint64_t version;          /* the version written (or that would be) */
    int dtype;                 /* its moment dtype */
    bool rounded;              /* float64 moments were rounded to float32 */
    double max_relative_error; /* the largest |float32(x) - x| / |x| over nonzero x, when rounded */
    ckpt_config config;        /* the configuration written */
    bool widened;              /* float16 / bfloat16 moments widened to float32 (exactly) */
} ckpt_convert_result;

/* Which version the options give for the open file `in` (no byte written); 0 or the error. */
int ckpt_convert_plan(const ckpt_file *in, const ckpt_convert_options *o, ckpt_convert_result *res, ckpt_error *err);
/* Stream the converted file into out (bounded memory: payloads are copied in chunks). `in` must
 * be a valid TLADAMF file. Returns 0 or the error code; res (may be NULL) says what was written.
 * On a failure part of the file may have been written: write to a temporary, as the CLI does. */
int ckpt_convert(const ckpt_file *in, const ckpt_convert_options *o, const ckpt_sink *out, ckpt_convert_result *res,
                 ckpt_error *err);
/* A result as JSON {"version","dtype","rounded","maxRelativeError"} (caller frees), NULL when out of
 * memory. untrained_note: NULL, or the text of a pair that holds only if its slots without state
 * are not trained (ckpt_ds_convert's note), given as "pairError" with CKPT_E_TORCH_UNTRAINED. */
char *ckpt_convert_result_json(const ckpt_convert_result *res, const char *untrained_note);

/* TorchLean to PyTorch (writers/torch_write.c): the state of a valid TLADAMF file as the torch.save
 * zip of an Adam/AdamW optimizer's state_dict (format.md 10.1, 10.2), which
 * `optimizer.load_state_dict(torch.load(OUT))` resumes: index i is the i-th owner slot in slot
 * order, `step` a 0-d float32 tensor (float64 from 2^24 on), the moments bit for bit in the
 * file's dtype and shaped as their slots, one parameter group of the file's config with `lr`
 * from the options (TorchLean does not store it). Payloads are copied in chunks. */
typedef struct ckpt_torch_options {
    bool has_lr; /* without it the conversion is refused, naming --lr */
    double lr;
    const char *prefix;        /* the zip's folder (torch.save uses the file's stem); NULL or not a
                                * plain name ([A-Za-z0-9_-], 1 to 64 bytes): "archive" */
    ckpt_progress_fn progress; /* payload bytes copied; may be NULL */
    void *progress_ctx;
} ckpt_torch_options;

/* Stream the torch.save file into out. With `state` (a model-state file; may be NULL) the pair
 * is checked first, as ckpt_pair_named does without names, and a pair that fails is refused
 * with its first failure. Returns 0 or the error code; on a failure part of the file may have
 * been written: write to a temporary. */
int ckpt_convert_to_torch(const ckpt_file *in, ckpt_file *state, const ckpt_torch_options *o, const ckpt_sink *out,
                          ckpt_error *err);

/* A name-keyed PyTorch optimizer (FSDP's, docs/pytorch.md) as a consolidated torch.optim state
 * dict keyed by ids (writers/torch_ids.c): `in` paired with its model by name first
 * (ckpt_pair_with; a model that keeps no module order needs its names). Ids group after group,
 * each group's names in module order, or as stored with group_order_stored. Returns 0 or the
 * code with err set (CKPT_E_CONVERSION_LOSES naming a value it does not write again); on a
 * failure part of the file may have been written: write to a temporary. */
typedef struct ckpt_ids_options {
    bool group_order_stored;   /* --group-order stored: each group's ids in its stored list's order */
    const char *prefix;        /* the zip's folder (the file's stem); NULL or not a plain name: "archive" */
    ckpt_progress_fn progress; /* payload bytes copied; may be NULL */
    void *progress_ctx;
} ckpt_ids_options;
int ckpt_convert_to_ids(const ckpt_file *in, const ckpt_ids_options *o, const ckpt_sink *out, ckpt_error *err);
/* That conversion's warnings as a JSON array of texts ("DCP: group {g} lists {a} before {b}, ..."),
 * NULL with err set when it is refused. */
char *ckpt_convert_to_ids_warnings(const ckpt_file *in, const ckpt_ids_options *o, ckpt_error *err);

/* A DeepSpeed ZeRO-1/2 or BF16_Optimizer folder as a universal checkpoint (writers/universal.c,
 * format.md 11.7). The plan (NULL with err set: a refusal of 11.7, or an invalid checkpoint) names
 * the files, decided once; its JSON, {"files": [paths in the UTAG folder], "warnings": [texts],
 * "tag"} (malloc'ed, NULL when out of memory); file `index` of that list written into out (a
 * torch.save zip, or the model states' bytes). The plan reads `in`: free it before closing in. The
 * caller writes the files into a sibling folder renamed when complete, latest_universal last. */
typedef struct ckpt_universal ckpt_universal;
ckpt_universal *ckpt_universal_plan(const ckpt_file *in, ckpt_error *err);
char *ckpt_universal_plan_json(const ckpt_universal *u);
int ckpt_universal_write(const ckpt_universal *u, uint64_t index, const ckpt_sink *out, ckpt_error *err);
void ckpt_universal_free(ckpt_universal *u);

/* DeepSpeed to a consolidated torch.optim state dict and its fp32 model (format.md 11.8): `in` a
 * valid DeepSpeed folder (its 11.5 checks without error). `which` says the file written:
 * CKPT_DS_OPTIMIZER, {'state', 'param_groups'} as Optimizer.state_dict() returns it, ids numbered
 * as torch numbers them; CKPT_DS_MODEL, the fp32 model's torch.save state dict in module order;
 * CKPT_DS_MODEL_SAFETENSORS, the same tensors as a safetensors file (a tied alias left out).
 * Payloads are streamed from the fragments. 0 or the error code; on a failure part of the file
 * may have been written: write to a temporary. */
enum { CKPT_DS_OPTIMIZER = 1, CKPT_DS_MODEL = 2, CKPT_DS_MODEL_SAFETENSORS = 3 };
typedef struct ckpt_ds_consolidate_options {
    int which;
    const char *prefix; /* the zip's folder, as ckpt_torch_options' */
    ckpt_progress_fn progress;
    void *progress_ctx;
} ckpt_ds_consolidate_options;
int ckpt_ds_consolidate(const ckpt_file *in, const ckpt_ds_consolidate_options *o, const ckpt_sink *out,
                        ckpt_error *err);
/* The warnings of a DeepSpeed conversion (format.md 11.8: a group stored in round-robin order is
 * numbered in module order) as a JSON array of texts; malloc'ed, NULL when out of memory. */
char *ckpt_ds_consolidate_warnings(const ckpt_file *in);
/* What every DeepSpeed conversion refuses first (an invalid folder, one file alone, an elastic
 * checkpoint, FusedAdam's bias_correction False): 0 or the error. */
int ckpt_ds_consolidate_check(const ckpt_file *in, ckpt_error *err);
/* DeepSpeed to TorchLean (TLADAMF): the consolidated pair, read on demand (never written), paired
 * as ckpt_pair_with pairs them (frozen: the names given; NULL: the checkpoint's frozen parameters
 * and buffers, which 11.4 knows) and converted by
 * ckpt_convert with `o`: the bytes of the two-step path. A pair that fails is refused with its
 * first failure; *cannot_tell (may be NULL) is set when the pair holds only if the slots without
 * optimizer state are not trained, and `note` (may be NULL) then receives the text (malloc'ed). */
int ckpt_ds_convert(const ckpt_file *in, const ckpt_convert_options *o, const char *const *frozen, size_t frozen_count,
                    const ckpt_sink *out, ckpt_convert_result *res, char **note, ckpt_error *err);

/* A DCP folder to a consolidated torch.optim state dict and its model (format.md 12.8): `in` a
 * DCP folder without errors whose module order is trusted; o->which CKPT_DS_OPTIMIZER ({'state',
 * 'param_groups'}, ids group after group in stored order, each group's names in module order) or
 * CKPT_DS_MODEL (the model part's torch.save state dict in module order, an alias its owner's
 * storage). Payloads are streamed from the records. 0 or the error code (12.8's refusals); on a
 * failure part of the file may have been written: write to a temporary. */
int ckpt_dcp_consolidate(const ckpt_file *in, const ckpt_ds_consolidate_options *o, const ckpt_sink *out,
                         ckpt_error *err);
/* Its warnings (12.8: a group's stored list in another order than the module's) as a JSON array
 * of texts; malloc'ed, NULL when out of memory. */
char *ckpt_dcp_consolidate_warnings(const ckpt_file *in);
/* DCP to TorchLean (TLADAMF, format.md 12.8): the consolidated pair of ckpt_dcp_consolidate, read
 * on demand (never written), paired as ckpt_pair_with pairs them (frozen: the names given; NULL:
 * the slots 12.4 knows are frozen) and converted by ckpt_convert with `o`: the bytes of the
 * two-step path. ckpt_dcp_consolidate's refusals first, then the pair's first failure and the
 * conversion's; `note` (may be NULL) receives the text of a pair that holds only if the slots
 * without optimizer state are not trained (malloc'ed). */
int ckpt_dcp_convert(const ckpt_file *in, const ckpt_convert_options *o, const char *const *frozen, size_t frozen_count,
                     const ckpt_sink *out, ckpt_convert_result *res, char **note, ckpt_error *err);

/* A PyTorch optimizer file and its model written as a DCP folder (writers/dcp_write.c; DCP's
 * conversion the other way round, docs/distributed.md): keys model.{fqn} and optim.state.{fqn}.{key},
 * optim.param_groups.{g}.{key} (DCP's nested form), one rank. `opt` a torch.save file holding an
 * optimizer state dict, `model` the model's torch.save state dict: the pair is checked first as
 * ckpt_pair_named checks it (its ids are placed on the model's names), a pair that fails is
 * refused with its first failure. The records of __0_0.distcp are streamed into `data` (payloads
 * in chunks), then the .metadata pickle into `metadata`: the caller writes that file last, through
 * a temporary renamed (DCP's finish). 0 or the error code. */
typedef struct ckpt_dcp_write_options {
    bool torch113;             /* torch 1.13's _shard form; false: torch >= 2.4's */
    const char *checkpoint_id; /* StorageMeta.checkpoint_id: the folder's absolute path, or NULL */
    const char *save_id;       /* StorageMeta.save_id (a UUID), or NULL */
    ckpt_progress_fn progress; /* payload bytes copied; may be NULL */
    void *progress_ctx;
} ckpt_dcp_write_options;
typedef struct ckpt_dcp_write_result {
    uint64_t keys;        /* state_dict_metadata's */
    uint64_t model_keys;  /* model.{fqn} */
    uint64_t tensors;     /* tensor keys (each one record of one chunk) */
    uint64_t bytes_items; /* pickled values */
    uint64_t data_bytes;  /* __0_0.distcp's size */
} ckpt_dcp_write_result;
int ckpt_dcp_write(ckpt_file *opt, ckpt_file *model, const ckpt_dcp_write_options *o, const ckpt_sink *data,
                   const ckpt_sink *metadata, ckpt_dcp_write_result *res, ckpt_error *err);
/* A result as JSON {"keys","modelKeys","tensors","bytesItems","dataBytes","dataFile"} (caller
 * frees), NULL when out of memory. */
char *ckpt_dcp_write_result_json(const ckpt_dcp_write_result *res);

/* ---- JSON (docs/report.md) --------------------------------------------------------------- */

/* The report as a NUL-terminated JSON string (malloc'ed; caller frees), NULL when out of
 * memory. */
char *ckpt_report_json(const ckpt_report *rep);
/* The same JSON with the bulk arrays left empty for a caller that takes them as columns:
 * schema.shapes/sizes/requiresGrad and the two representative arrays, entries, tensors. */
enum { CKPT_JSON_NO_BULK = 1 };
char *ckpt_report_json_opts(const ckpt_report *rep, unsigned opts);
/* Stream the full report JSON into a sink in pieces (bounded memory for a million slots). */
int ckpt_report_json_write(const ckpt_report *rep, const ckpt_sink *out, ckpt_error *err);
/* One entry (with its statistics when given) as {"slot","owner","id","step","count","offset",
 * "m","v","unhealthy"}. m, v may be NULL. */
char *ckpt_entry_stats_json(const ckpt_entry_info *e, uint64_t slot, const ckpt_stats *m, const ckpt_stats *v);
/* One statistics object, or "null". */
char *ckpt_stats_json(const ckpt_stats *s);
/* A schema as JSON: shapes, sizes, requiresGrad, representatives (the map, or null),
 * effectiveRepresentatives, tags, wellFormed, optimizerStateCount, trainableCount,
 * hasAliases, and when not well formed `problem` {"slot", "reason"}. */
char *ckpt_schema_json(const ckpt_schema *s);
/* An error as JSON: {"code","message","offset","length","slot","subject","hint","configDiff"},
 * or "null" when err->code is 0. */
char *ckpt_error_json(const ckpt_error *err);
/* Every difference between two layouts (docs/cli.md "diff") as a JSON array of
 * {"field","slot"?,"a","b","message"}; fields a layout does not state (dtype, config, counter,
 * flags of a state file's shapes) are not compared. */
char *ckpt_diff_json(const ckpt_expected *a, const ckpt_expected *b);

/* The same, each layout with the open file it is of (ckpt_file_layout), or NULL for a layout of
 * its own. When both files name their slots (DeepSpeed's module names, DCP's FQNs) and the names
 * differ, the slots are compared by name: {"field": "name", "slot": null, "a": name or null, "b":
 * name or null, "aSlot", "bSlot"} for each name one side holds alone ("{name} only in the
 * first"), {"field": "order", ...} for the first place the names both hold part ("another order:
 * slot {i} is {a} in the first, slot {j} is {b} in the second"), and each name both hold compared
 * as by position, about A's slot (sharing by the owners' names: "representative {a} vs {b}"). A
 * file whose optimizer kind is unknown (DCP's, a DeepSpeed ds_config naming none) has its Adam or
 * AdamW not compared. */
char *ckpt_diff_files_json(const ckpt_expected *a, const ckpt_file *fa, const ckpt_expected *b, const ckpt_file *fb);

/* The same differences, and the first one's message ("parameter 2: shape #[2] vs #[3]") in
 * *first (NULL when there is none; the caller frees both). CKPT_E_NO_MEMORY or 0. */
int ckpt_diff_first(const ckpt_expected *a, const ckpt_expected *b, char **json, char **first);

/* ---- Checkpoints of one run (docs/runs.md) --------------------------------------------- */

typedef struct ckpt_run_options {
    ckpt_progress_fn progress; /* bytes of the pass; may be NULL */
    void *progress_ctx;
    double lr;                    /* the learning rate of the health ratios; 0 or NAN: none */
    bool ratio_band;              /* the flag band of the ratios is given (as for health); false: */
    double ratio_low, ratio_high; /* CKPT_RATIO_LOW..CKPT_RATIO_HIGH */
    double residual_limit;        /* the k = 1 learning-rate residual that breaks a pair (when also
                                     above theta's rounding); 0 or NAN: CKPT_RESIDUAL_LIMIT */
} ckpt_run_options;

#define CKPT_RESIDUAL_LIMIT 0.1

/* The weighing elements the slots that can tell must hold for a pair to be continuous (a few
 * prove nothing: another run's element passes the bound about half the time). */
#define CKPT_RUN_TELLING 64

/* A recovered learning rate (a k = 1 pair's, per slot) against the one the Trainer logged at A's
 * step (trainer_state.json's log_history, format.md 10.5): they agree when they differ by at most
 * CKPT_LOGGED_LR_TOLERANCE of the larger. 1 agree, 0 differ, -1 cannot tell (either not finite). */
#define CKPT_LOGGED_LR_TOLERANCE 0.01
int ckpt_logged_lr_agrees(double lr, double logged);

/* n optimizer checkpoints of one run, in run order, each with its model-state file or NULL in
 * state (state itself may be NULL: none). A state file is used (for the health of its file's
 * parameters and for the learning rates) when it pairs with its checkpoint (ckpt_pair); one of
 * another family or invalid is that file's "stateError". Every consecutive pair's continuity
 * per owner slot, the k = 1 gradient and learning rate, and each file's health summary
 * (ckpt_health_json's flags, the median ratio), in one pass that reads each payload once (the
 * files stream side by side, a few chunks per file in memory), as JSON {"files":[{"index","ok",
 * "step","kindUnknown","stateUsed","stateError","health":{"flags","ratio"}|null,"error"}], "pairs":[{"a","b",
 * "continuous","verdict","verdictSlot","slotsCannotTell","power","configDiff","layoutDiff","slots":
 * [{"slot","stepA","stepB","k","broken","firstBroken","worst","power","message","cannotTell",
 * "gradient","lr","lrResidual"}]}], "ok", "cannotTell", "first"}. A slot whose power is below 1%
 * cannot tell; a pair nothing breaks whose slots that can tell hold fewer than CKPT_RUN_TELLING
 * weighing elements (none when no slot can) is neither continuous nor broken ("continuous": null,
 * counted in "cannotTell"; "ok" is false). A pair's "verdictSlot" is the slot its verdict is about
 * (null when the verdict is no slot's), its "slotsCannotTell" how many of its slots cannot tell. A k = 1
 * learning-rate residual above o->residual_limit breaks its pair. A file that is not a valid
 * optimizer checkpoint makes its pairs not continuous. NULL with err set
 * on an I/O error, cancellation or no memory; o may be NULL. */
char *ckpt_run_json(const ckpt_file *const *opt, const ckpt_file *const *state, size_t n, const ckpt_run_options *o,
                    ckpt_error *err);

/* The gradient of a one-step pair (B one Adam step after A, per slot) as {name}.grad tensors,
 * g = (m_B - beta1 m_A) / (1 - beta1) per element in the moments' dtype, one per owner slot
 * whose steps differ by exactly 1 (of o->slots when given), with B's metadata, streamed as
 * ckpt_export streams. Fails (CKPT_E_INVALID_ARGUMENT) when B does not continue A's
 * configuration and layout or no slot is one step apart. */
int ckpt_run_export_gradient(const ckpt_file *a, const ckpt_file *b, const ckpt_export_options *o, const ckpt_sink *out,
                             ckpt_error *err);
/* Export: for each exported owner entry of f, one tensor {name}{suffix} whose bytes are read from
 * `values` at the entry's m offset (count * width bytes). For values derived from the moments. */
int ckpt_export_computed(const ckpt_file *f, const ckpt_source *values, const char *suffix,
                         const ckpt_export_options *o, const ckpt_sink *out, ckpt_error *err);

/* ---- The core describing itself (abi.c) --------------------------------------------------
 * The family table, the dtypes, the codes, the flag constants and the layouts of the structs a
 * caller across a boundary (the WebAssembly module's JS) reads, so that caller states none of
 * them. */

/* One row per entry / tensor of a file's report: the fields of ckpt_entry_info and
 * ckpt_tensor_info a viewer draws, without pointers. */
typedef struct ckpt_entry_row {
    uint64_t id, step, count, offset, m_offset, v_offset;
} ckpt_entry_row;
typedef struct ckpt_tensor_row {
    uint64_t count, offset, data_offset;
} ckpt_tensor_row;

/* A file's per-slot arrays as columns, for a caller that would rather not parse a million slots
 * of JSON. Read-only. dim_start, dims and flags (and reps when the file stores a map of every
 * slot) point into the file's report (valid until ckpt_close); the rest is owned by the columns
 * (ckpt_columns_free). reps and broken are NULL unless complete. */
typedef struct ckpt_columns {
    uint32_t n, flag_count, dims_len, entries_len, tensors_len, has_map, complete;
    const uint64_t *dim_start; /* n + 1 */
    const uint64_t *dims;      /* dims_len */
    const uint64_t *sizes;     /* n */
    const uint8_t *too_big;    /* n: the size is >= 2^64 */
    const uint8_t *flags;      /* flag_count */
    uint64_t *reps;            /* n: representative?(i), CKPT_NONE for none */
    uint8_t *broken;           /* n: the sharing rule rejects the slot */
    ckpt_entry_row *entries;   /* entries_len */
    ckpt_tensor_row *tensors;  /* tensors_len */
} ckpt_columns;

/* NULL when out of memory (or when a count does not fit 32 bits). */
ckpt_columns *ckpt_columns_new(const ckpt_file *f);
void ckpt_columns_free(ckpt_columns *c);

/* Where slot's moments are (ckpt_file_entry, flattened): m_bytes is the byte length of m (and
 * of v), CKPT_NONE when it does not fit 64 bits. */
typedef struct ckpt_entry_ref {
    uint64_t owner, id, step, count, offset, m_bytes;
} ckpt_entry_ref;
int ckpt_file_entry_ref(const ckpt_file *f, uint64_t slot, ckpt_entry_ref *out, ckpt_error *err);

/* A tensor's element count and where its values start (ckpt_file_tensor, flattened). */
typedef struct ckpt_tensor_ref {
    uint64_t count, data_offset;
} ckpt_tensor_ref;
int ckpt_file_tensor_ref(const ckpt_file *f, uint64_t i, ckpt_tensor_ref *out, ckpt_error *err);

/* What the reference writer takes per entry when the payloads travel apart (a pointer table). */
typedef struct ckpt_entry_meta {
    uint64_t id, step, count, m_bytes, v_bytes;
} ckpt_entry_meta;

/* Item k's statistics as u64 words: this header, then a_words of a, then b_words of b (b_words 0
 * without a second array). The caller frees the words. NULL with err set. */
typedef struct ckpt_packed_stats {
    uint64_t a_words, b_words;
} ckpt_packed_stats;
uint64_t *ckpt_file_item_stats_packed(const ckpt_file *f, size_t k, ckpt_progress_fn progress, void *progress_ctx,
                                      ckpt_error *err);
/* Attach words (n of them) made by ckpt_file_item_stats_packed, maybe by another instance. */
int ckpt_file_attach_packed(ckpt_file *f, size_t k, const uint64_t *words, size_t n, ckpt_error *err);

/* Set err to out of memory; returns CKPT_E_NO_MEMORY. */
int ckpt_error_set_oom(ckpt_error *err);
/* A value past 2^64 - 1 (in decimal), of slot (CKPT_NONE: of none): the reference writer's own
 * error (format.md 1), for a caller whose input cannot cross as a u64. Returns the code. */
int ckpt_fail_value_too_large(ckpt_error *err, uint64_t slot, const char *decimal);

/* Everything above, and every ckpt_code by name, as one JSON object (docs/api.md "The ABI"):
 * {"families","dtypes","codes","constants","structs"}; each struct {size, fields: {name:
 * {offset, size}}} in this build's sizes (pointers are 4 bytes in wasm32). malloc'ed; NULL when
 * out of memory. */
char *ckpt_abi_json(void);

/* ---- Hugging Face Trainer folders (format.md 10.3, 10.5) ---------------------------------- */

/* What training_args.bin (a torch.save of a TrainingArguments dataclass, zip or legacy) holds,
 * read as data: nothing it names runs. `kind` is CKPT_TRAINING_KIND_ADAMW when optim starts with
 * "adamw" (transformers' OptimizerNames adamw_*), else CKPT_TRAINING_KIND_UNKNOWN. */
enum { CKPT_TRAINING_KIND_UNKNOWN = 0, CKPT_TRAINING_KIND_ADAMW = 1 };
enum {
    CKPT_TA_LEARNING_RATE = 1,
    CKPT_TA_WEIGHT_DECAY = 2,
    CKPT_TA_ADAM_BETA1 = 4,
    CKPT_TA_ADAM_BETA2 = 8,
    CKPT_TA_ADAM_EPSILON = 16,
};
typedef struct ckpt_training_args {
    char *class_name; /* "module.name" of the pickled class; NULL for a plain dict */
    char *optim;      /* the optim field's text (an OptimizerNames enum's value); NULL when absent */
    int kind;         /* CKPT_TRAINING_KIND_* */
    unsigned has;     /* CKPT_TA_*: which numbers the file holds */
    double learning_rate, weight_decay, adam_beta1, adam_beta2, adam_epsilon;
} ckpt_training_args;

/* Read src; `name` names it in texts ("training_args.bin"). 0 with *out filled (free it with
 * ckpt_training_args_free), or the torch.save reader's code, or CKPT_E_TRAINER_FILE (the object
 * is no dataclass with its fields as state, or a field has another type), err set. */
int ckpt_training_args_read(const ckpt_source *src, const char *name, ckpt_training_args *out, ckpt_error *err);
void ckpt_training_args_free(ckpt_training_args *a);
/* {"class","optim","kind": "adamw"|null,"learningRate","weightDecay","adamBeta1","adamBeta2",
 * "adamEpsilon"} (null when absent); malloc'ed, NULL when out of memory. */
char *ckpt_training_args_json(const ckpt_training_args *a);

/* trainer_state.json: global_step and the learning rates log_history logged, each at its step
 * (the logs without one skipped), ordered by step; exact as written. Python's NaN and Infinity
 * are read as numbers. At most CKPT_TRAINER_STATE_MAX bytes and CKPT_TRAINER_JSON_VALUES values
 * are read (a Trainer's text has about one value per 12 bytes; the bound keeps a hostile text's
 * parse to some 250 MB). */
#define CKPT_TRAINER_STATE_MAX ((uint64_t)32 << 20)
#define CKPT_TRAINER_JSON_VALUES (CKPT_TRAINER_STATE_MAX / 8)
typedef struct ckpt_trainer_lr {
    uint64_t step;
    double learning_rate;
} ckpt_trainer_lr;
typedef struct ckpt_trainer_state {
    bool has_global_step;
    uint64_t global_step;
    ckpt_trainer_lr *lrs; /* by step; of equal steps, the one logged last only */
    size_t lrs_len;
} ckpt_trainer_state;
int ckpt_trainer_state_read(const ckpt_source *src, ckpt_trainer_state *out, ckpt_error *err);
void ckpt_trainer_state_free(ckpt_trainer_state *s);
/* The learning rate logged at `step`: true with *lr set, false when none was. */
bool ckpt_trainer_state_lr_at(const ckpt_trainer_state *s, uint64_t step, double *lr);
/* {"globalStep": n|null, "learningRates": [{"step","learningRate"}...]}; NULL when out of memory. */
char *ckpt_trainer_state_json(const ckpt_trainer_state *s);

/* Which log_history entry holds the learning rate of the update from step a to step b = a + 1
 * (format.md 10.5), by the transformers that wrote the folder: config.json's
 * "transformers_version". Before 4.51 the Trainer logged after lr_scheduler.step(), so the entry
 * at a holds the rate of the next update; 4.51 and later log the rate the update used, at b.
 * CKPT_LR_LOGGED_UNKNOWN when the text is not a JSON object with a version MAJOR.MINOR[...]. */
enum { CKPT_LR_LOGGED_UNKNOWN = 0, CKPT_LR_LOGGED_AT_A = 1, CKPT_LR_LOGGED_AT_B = 2 };
int ckpt_trainer_lr_logged_at(const void *config_json, size_t len);

/* What each file of a checkpoint-N/ folder is, by its name (a table): the names given (file
 * names, no folders) as JSON {"optimizer","model","modelIndex","trainerState","trainingArgs",
 * "scheduler","config"}, each a name or null. A model is pytorch_model.bin, else model.safetensors, else
 * the index of a sharded one (modelIndex: pytorch_model.bin.index.json, else
 * model.safetensors.index.json). NULL when out of memory. */
char *ckpt_trainer_folder_json(const char *const *names, size_t n);
/* The shards a sharded model's index (JSON text: {"weight_map": {tensor: shard}}) names, each
 * once, sorted, as a JSON array of names; NULL with err set (CKPT_E_TRAINER_FILE: not such an
 * index, or a shard that is not a plain file name). `name` names the index in texts. */
char *ckpt_model_index_shards_json(const void *text, size_t len, const char *name, ckpt_error *err);
/* An output folder's checkpoint-{N} entries among names, by N (numeric; equal N by name), as
 * JSON [{"name","step"}]; other names are left out. NULL when out of memory. */
char *ckpt_trainer_checkpoints_json(const char *const *names, size_t n);

/* ---- A folder as one source; DeepSpeed ZeRO checkpoints (format.md 11) ------------------ */

/* A folder read as one source (src/containers/bundle.h, docs/deepspeed.md): the header naming its
 * entries names[0..n) (relative to the folder: "latest", "global_step2/", "global_step2/x.pt"),
 * their sizes (CKPT_NONE for a folder) and which are included; `root` is the folder's name as the
 * user gave it, `family` the family it is for. Writes the header's bytes into *out (free them with
 * ckpt_buffer_free) and, when offsets is not NULL, offsets[k]: where entry k's bytes go in the
 * source (CKPT_NONE for an entry not included); the caller lays the files' bytes out there. */
int ckpt_bundle_header(const char *family, const char *root, const char *const *names, const uint64_t *sizes,
                       const uint8_t *include, size_t n, ckpt_buffer *out, uint64_t *offsets, ckpt_error *err);

/* What a folder is to DeepSpeed (format.md 11.1), from its listing as JSON text: {"root": the
 * folder's name, "entries": [{"name": relative path, "size": bytes, or null for a folder}] (its
 * files and its subfolders' files), "texts": {"latest": its text, "latest_universal": ...}}. The
 * answer: {"family": null, "read": []} (no DeepSpeed checkpoint), {"family", "read": [names], "readLimit"} (read those
 * files' texts, at most readLimit bytes each, and ask again with them), or {"family", "read": [],
 * "tag", "members": [{"name", "offset", "size"}], "size", "header": [bytes]}: the source to open
 * is the header at 0 and each member's bytes at its offset (ckpt_bundle_header's layout). NULL
 * with err set (CKPT_E_INVALID_ARGUMENT: not such a listing; CKPT_E_NO_MEMORY). */
char *ckpt_deepspeed_folder_json(const char *listing, size_t len, ckpt_error *err);

/* ---- PyTorch Distributed Checkpoint folders (format.md 12) ------------------------------ */

/* What a folder is to DCP (format.md 12.1), from its listing as ckpt_deepspeed_folder_json takes
 * it ({"root", "entries": [{"name", "size"}]}): {"family": null, "read": []} when its top holds no
 * .metadata, .metadata.tmp or .distcp file, else {"family": "DCP", "read": [], "tag": null,
 * "members": [{"name", "offset", "size"}], "size", "header": [bytes]}: every file at its top laid
 * out after the bundle header. NULL with err set (CKPT_E_INVALID_ARGUMENT, CKPT_E_NO_MEMORY). */
char *ckpt_dcp_folder_json(const char *listing, size_t len, ckpt_error *err);

/* The DCP folders of a folder (torchtitan's checkpoint/ of step-{N}/), from its listing as
 * ckpt_dcp_folder_json takes it: the folders at its top that ckpt_dcp_folder_json takes for DCP
 * folders, in format.md 9's run order (the last number of the name: step-10 after step-9; those
 * without one after them, by name), as a JSON array of their names ([] when none). NULL with err
 * set (CKPT_E_INVALID_ARGUMENT, CKPT_E_NO_MEMORY). */
char *ckpt_dcp_run_json(const char *listing, size_t len, ckpt_error *err);

/* ---- Accelerate folders (docs/distributed.md, "Accelerate folders") ------------------------ */

/* What each entry of an Accelerate save_state folder is, by its name: the names given (files, and
 * subfolders ending in '/') as JSON {"accelerate": whether a name only Accelerate writes is among
 * them, "distributed": "fsdp" | "deepspeed" | null, "files": [{"name", "role" (null: not
 * Accelerate's), "index", "process", "rank"}], "pairs": [{"index", "model", "modelForm",
 * "optimizer", "optimizerForm", "reader": "pytorch" | "deepspeed" | "dcp" | null, "note"}]}:
 * optimizer i with model i, by i; `reader` is what reads the pair (section 10's pair of files,
 * section 11's tag folder, the DCP folders opened), `note` says in words why this folder's pair is
 * not read as files (null when it is). NULL when out of memory. */
char *ckpt_accelerate_folder_json(const char *const *names, size_t n);
/* A project's checkpoints/ folder's checkpoint_{k} entries among names, by k, as JSON
 * [{"name", "iteration"}]; other names are left out. NULL when out of memory. */
char *ckpt_accelerate_checkpoints_json(const char *const *names, size_t n);

/* random_states_{p}.pkl read as data: Accelerate's `step` (has_step false when the file saves
 * none) and the dict's keys (the first 64, as a JSON array). */
typedef struct ckpt_accelerate_random_states {
    bool has_step;
    uint64_t step;
    size_t key_count;
    char *keys_json;
} ckpt_accelerate_random_states;
/* 0 with *out filled (ckpt_accelerate_random_states_free), or the torch.save reader's code, or
 * CKPT_E_TRAINER_FILE (not a dict, or a step that is no count), err set. `name` names it in texts. */
int ckpt_accelerate_random_states_read(const ckpt_source *src, const char *name, ckpt_accelerate_random_states *out,
                                       ckpt_error *err);
void ckpt_accelerate_random_states_free(ckpt_accelerate_random_states *s);
/* {"step": n | null, "keys": [...], "keyCount"}; NULL when out of memory. */
char *ckpt_accelerate_random_states_json(const ckpt_accelerate_random_states *s);

#ifdef __cplusplus
}
#endif
#endif
