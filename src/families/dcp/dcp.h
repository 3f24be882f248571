/* PyTorch Distributed Checkpoint folders (format.md 12.1-12.5): the index `.metadata` read as
 * data (metadata.c), the folder's data files and every chunk's record opened as a torch.save file
 * through a byte window (open.c, over families/pytorch/objects.h), the model and optimizer parts
 * (parts.c), the report members (json.c) and the family (family.c). Private to src/.
 *
 * The model: an index (keys of state_dict_metadata, each a tensor with chunks or a bytes item;
 * storage entries, each a byte range of a data file), the data files, and the diagnostics of
 * 12.5 in order, each with its facts. Nothing a file names is called. */
#ifndef CKPT_DCP_H
#define CKPT_DCP_H

#include "core/core.h"
#include "containers/bundle.h"
#include "families/pytorch/objects.h"

#define DCP_PREFIX "DCP"
#define DCP_NONE SIZE_MAX
/* the dims of a shape read (a rank past it is 12.5.3's type failure) */
#define DCP_MAX_RANK 32

typedef enum { DCP_TENSOR = 1, DCP_BYTES = 2 } dcp_kind;
typedef enum { DCP_PART_OTHER = 0, DCP_PART_MODEL, DCP_PART_OPTIM } dcp_part;
typedef enum { DCP_CLASSES_113 = 0, DCP_CLASSES_20, DCP_CLASSES_23 } dcp_classes;
typedef enum { DCP_FORM_NONE = 0, DCP_FORM_N, DCP_FORM_N23, DCP_FORM_F, DCP_FORM_I } dcp_form;
/* the state keys an entry reports (others are kept as keys) */
enum { DCP_EXP_AVG = 0, DCP_EXP_AVG_SQ, DCP_MAX_EXP_AVG_SQ, DCP_STEP, DCP_STATE_KEYS };

/* One key of state_dict_metadata. */
typedef struct dcp_key {
    char *name;
    dcp_kind kind;
    int dtype;        /* ckpt_dtype, -1 when not one ckptscope holds */
    char *dtype_name; /* torch's ("float32"), NULL when unread */
    size_t dims;      /* into pool: rank sizes */
    uint32_t rank;
    size_t chunks, chunks_len; /* into chunks */
    size_t storage;            /* a bytes item's storage entry, DCP_NONE */
    uint64_t at;               /* the pickle offset of its value (for texts) */
    /* what it is (parts.c) */
    dcp_part part;
    const char *fqn; /* into name: the model FQN, or an optimizer key's FQN (or index) */
    size_t fqn_len;
    const char *skey; /* an optimizer state key ("exp_avg"), a group key ("lr"), NULL */
    bool group_key;   /* a param_groups key */
    size_t group;     /* its group number (form N), DCP_NONE */
} dcp_key;

/* One chunk: a box of its key's tensor. */
typedef struct dcp_chunk {
    size_t key;
    size_t offsets, sizes; /* into pool, as read */
    uint32_t orank, srank; /* their ranks as read (the key's, unless 12.5.19) */
    size_t storage;        /* DCP_NONE: no storage entry (12.5.6) */
} dcp_chunk;

/* One storage entry of storage_data: (fqn, offsets) -> a byte range of a data file. */
typedef struct dcp_storage {
    char *fqn;
    bool has_offsets;
    size_t offsets; /* into pool */
    uint32_t rank;
    char *path;  /* relative_path as written */
    size_t file; /* into files, DCP_NONE when the path is not a plain name */
    uint64_t offset, length;
    char *transforms; /* transform_descriptors, joined, or NULL */
    size_t key;       /* its key, DCP_NONE */
    size_t chunk;     /* its chunk, DCP_NONE (a bytes item, or none) */
    /* its record (open.c), read when the file is here */
    ckpt_torch *t;
    size_t tensor; /* the record's tensor, DCP_NONE */
    bool bad;      /* a check failed on it: its values are not read */
    size_t meta;   /* the index that lists it (into metas) */
    char *name;    /* its data file inside the source: the index's folder and path, NULL: path itself */
} dcp_storage;

/* its data file's name inside the source */
static inline const char *dcp_storage_file(const dcp_storage *st) { return st->name ? st->name : st->path; }

/* A data file .metadata names. */
typedef struct dcp_file {
    char *name;
    uint64_t base; /* where its bytes start in the source (CKPT_NONE: not here) */
    uint64_t size; /* CKPT_NONE when missing */
    uint64_t rank; /* r of __{r}_{n}.distcp, CKPT_NONE otherwise */
    size_t items;  /* storage entries naming it */
    size_t first;  /* the first of them (its fqn in 12.5.10) */
} dcp_file;

/* A diagnostic of 12.5: its check's number, code (0: a warning), text and facts. */
typedef struct dcp_diag {
    int check;
    int code;
    char *text;
    char *fqn;  /* NULL when about none */
    char *file; /* NULL when about none */
    uint64_t offset;
} dcp_diag;

/* A parameter group (12.4). */
typedef struct dcp_group {
    bool has_lr, has_betas, has_eps, has_wd;
    double lr, beta1, beta2, eps, wd;
    bool has_dwd, dwd;            /* decoupled_weight_decay: AdamW or Adam, where torch's Adam saves it */
    size_t first_name, names_len; /* into names: its params */
    bool has_params;              /* its params were read (their record is here) */
} dcp_group;

/* A slot: a model tensor key (12.4). */
typedef struct dcp_slot {
    size_t key;
    size_t state[DCP_STATE_KEYS]; /* its optimizer keys, DCP_NONE */
    bool trainable;
    size_t group; /* DCP_NONE */
    bool has_step;
    double step;
    size_t representative; /* an earlier owner whose values it equals (12.4's ties), DCP_NONE */
    bool values_read;      /* its values were compared: without a representative, it is frozen */
} dcp_slot;

/* An entry's payloads (runs.c): exp_avg, exp_avg_sq, max_exp_avg_sq, the parameter's values,
 * each the spans of its runs in element order (NULL: not readable) */
#define DCP_PAYLOADS 4
typedef struct dcp_item {
    ckpt_span *spans[DCP_PAYLOADS];
    size_t len[DCP_PAYLOADS];
    int dtype[DCP_PAYLOADS];
    ckpt_stats *stats[DCP_PAYLOADS];
} dcp_item;

/* One `.metadata` read. A folder holds one; Accelerate's FSDP save (format.md 12.7) is two
 * folders of one checkpoint, optimizer_{i}/ and pytorch_model_fsdp_{i}/, whose indices are read
 * into one: their keys, chunks and storage entries side by side, each data file named by its
 * folder inside the source ("optimizer_0/__0_0.distcp"). */
typedef struct dcp_meta {
    char *dir;   /* its folder inside the source: "" (the source's own), "pytorch_model_fsdp_0/" */
    char *where; /* that folder as texts name it ("ckpt/pytorch_model_fsdp_0"; the root for "") */
    char *name;  /* and as the note names it ("pytorch_model_fsdp_0", "../pytorch_model_fsdp_0"; the
                    root's last name for "") */
    uint8_t *bytes;
    ckpt_pickle *pickle;
    size_t planner;   /* planner_data's dict node, CKPT_PNIL */
    size_t keys_from; /* its first key */
} dcp_meta;
#define DCP_MAX_METAS 2

typedef struct ckpt_dcp {
    const ckpt_source *src;
    bool lone_metadata, lone_distcp;
    char *root; /* the folder's name, or NULL */
    /* the .metadata files read (one, or Accelerate's two) */
    dcp_meta metas[DCP_MAX_METAS];
    size_t metas_len;
    bool meta_ok; /* every one read as a Metadata (12.5.2-3 passed) */
    dcp_classes classes;
    char *version;     /* NULL: unversioned (the first index's) */
    bool planner_data; /* every index keeps planner_data */
    bool storage_meta;
    dcp_key *keys;
    size_t keys_len;
    size_t *sorted; /* the keys by name (open.c), for lookups */
    dcp_chunk *chunks;
    size_t chunks_len;
    dcp_storage *storages;
    size_t storages_len;
    uint64_t *pool;
    size_t pool_len;
    dcp_file *files;
    size_t files_len;
    char **strays;
    size_t strays_len;
    /* the parts */
    dcp_form form;
    size_t counts[3]; /* keys per dcp_part */
    dcp_slot *slots;
    size_t slots_len;
    dcp_group *groups;
    size_t groups_len;
    ckpt_config *configs; /* per group (family.c) */
    bool *has_config;     /* its betas and eps are stored */
    int kind_given;       /* the caller's kind (ckpt_set_kind): -1 none, CKPT_ADAM, CKPT_ADAMW */
    char **names;         /* the groups' params */
    size_t names_len;
    /* the diagnostics, in 12.5's order */
    dcp_diag *diags;
    size_t diags_len;
    char *note;
    dcp_item *items; /* one per entry (a slot with state) */
    size_t items_len;
    /* a lone .distcp: its last record's window */
    uint64_t record_at, record_len;
    ckpt_torch *record;
    /* private: capacities */
    size_t caps[8];
} ckpt_dcp;

const ckpt_dcp *ckpt_dcp_of(const ckpt_report *rep);
void dcp_free(ckpt_dcp *d);

/* metadata.c: read index m's .metadata (its bytes, n) as data into d's index, after the keys and
 * storage entries of the indices before it; checks 2-5. 0, or CKPT_E_NO_MEMORY; a failed check
 * is a diagnostic (d->meta_ok false). */
int dcp_read_metadata(ckpt_dcp *d, ckpt_report *rep, size_t m, size_t n);
/* The keys planner_data names, each once, index after index, in its order (malloc'ed, *n of
 * them; NULL when out of memory): the walk of each saved dict (12.4). */
size_t *dcp_planner_keys(const ckpt_dcp *d, size_t *n);
/* Is head (n bytes) the start of a pickled Metadata? */
bool dcp_metadata_head(const uint8_t *head, size_t n);

/* open.c: the folder, a lone .metadata or .distcp; every check in 12.5's order. */
int dcp_open(ckpt_parse *p, ckpt_dcp *d);
/* 12.1's note on a data file opened alone, naming the file and its folder from the name the
 * caller gave (NULL: "this file", "its folder"); NULL when out of memory */
char *dcp_distcp_note(const char *name);
/* folder.c: whether a file name is one of a DCP folder's own (.metadata, .metadata.tmp, *.distcp) */
bool dcp_folder_file(const char *name);

/* whether the name given ends in a data file's name, __{r}_{n}.distcp */
bool dcp_distcp_name(const char *name);

/* parts.c: the model and optimizer parts, the form, the slots, the groups (12.2, 12.4), and
 * checks 22-27 and 30. */
int dcp_parts(ckpt_dcp *d, ckpt_report *rep);

/* runs.c: each entry's payloads as runs (12.3), their statistics, and the ties by equal values
 * (12.4) of the slots without state */
int dcp_items(ckpt_dcp *d, ckpt_report *rep);
int dcp_stats(ckpt_dcp *d, ckpt_report *rep, ckpt_reader *r, ckpt_scan *scan, ckpt_error *err);
int dcp_ties(ckpt_dcp *d, ckpt_report *rep);
/* key k's runs (12.3) as spans of the source in element order (malloc'ed), and its dtype; false
 * when they cannot be read or do not tile the tensor */
bool dcp_key_spans(const ckpt_dcp *d, size_t k, ckpt_span **out, size_t *n, int *dtype);
/* Do keys ka and kb hold the same bits? 1 yes, 0 no (*first: the first element that differs),
 * 2 cannot tell (shapes or dtypes differ, or their runs cannot be read), -1 a read error (err) */
int dcp_first_difference(const ckpt_dcp *d, size_t ka, size_t kb, uint64_t *first, ckpt_error *err);

/* pair.c: the pairing with the model the user will load into (12.8): the family's pair_new_model */
int ckpt_dcp_pair_new_model(const ckpt_report *ro, const ckpt_report *rm, const ckpt_pair_options *o,
                            ckpt_pair_result *res);

/* json.c: the report's members */
void dcp_report_json(ckpt_jw *w, const ckpt_report *rep, bool bulk);

/* index.c: the index's memory, diagnostics and lookups by name */
void dcp_items_free(ckpt_dcp *d);
/* the index that lists key k (into metas), and how many of index m's keys are of each part */
size_t dcp_key_meta(const ckpt_dcp *d, size_t k);
void dcp_meta_counts(const ckpt_dcp *d, size_t m, size_t counts[3]);
/* the keys sorted by name (d->sorted), for dcp_find_key; false when out of memory */
bool dcp_sort_keys(ckpt_dcp *d);
/* the key of that name (n bytes), DCP_NONE; once the keys are sorted */
size_t dcp_find_key(const ckpt_dcp *d, const char *name, size_t n);
/* diagnostics: an error of that code, or a warning (code 0), with its facts; the
 * first error is the report's. 0 or CKPT_E_NO_MEMORY. */
int dcp_diag_add(ckpt_dcp *d, ckpt_report *rep, int check, int code, const char *fqn, const char *file, uint64_t offset,
                 const char *fmt, ...) CKPT_PRINTF(8, 9);
/* Adam or AdamW as the groups say it (decoupled_weight_decay in every group, all one kind, format.md
 * 12.4 by 10.3's rule): CKPT_ADAM, CKPT_ADAMW, or -1 */
int dcp_kind_said(const ckpt_dcp *d);
bool dcp_failed(const ckpt_dcp *d);

/* pool and growth */
bool dcp_pool_push(ckpt_dcp *d, const uint64_t *v, uint32_t n, size_t *at);
char *dcp_dup(const char *s);

#endif
