/* DeepSpeed ZeRO checkpoints (format.md 11): what a tag folder's files hold, read as data through
 * the torch object model (families/pytorch/objects.h), nothing called. Private to src/: the
 * family's files share it, and the layers above (conversions, pairing, runs) may build on it.
 *
 * The model: a checkpoint (ckpt_ds) is its files (ds_file: one optimizer partition or one
 * model-states file each), its groups (ds_group: per rank, the flat tensors of each state key and
 * the masters), its trainable owners (ds_param: the group they lie in, their offset in it) and the
 * schema of 11.4. A parameter's state for a key is a list of at most W fragments (ckpt_ds_fragments:
 * file, byte offset, element count), never a flat buffer. */
#ifndef CKPT_DEEPSPEED_H
#define CKPT_DEEPSPEED_H

#include "core/core.h"
#include "containers/bundle.h"
#include "families/pytorch/objects.h"

#define DS_PREFIX "DeepSpeed"
#define DS_NONE SIZE_MAX
/* the largest data-parallel world size read (a partition_count past it is refused) */
#define DS_MAX_WORLD ((int64_t)1 << 20)
/* missing ranks listed at most (the first is the verdict) */
#define DS_MAX_LISTED 64

/* ---- names (names.c): what a file of a tag folder is, by its name (11.1's table) ---- */
typedef enum ds_role {
    DS_ROLE_NONE = 0,
    DS_ROLE_MODEL,   /* mp_rank_{mp}_model_states.pt */
    DS_ROLE_ZMODEL,  /* zero_pp_rank_{r}_mp_rank_{mp}_model_states.pt (ZeRO-3) */
    DS_ROLE_OPTIM,   /* [bf16_|fp16_]zero_pp_rank_{r}_mp_rank_{mp}[_]optim_states.pt */
    DS_ROLE_REFUSED, /* layer_*, expp_rank_*, *expert_*, or an mp rank other than 00 */
    DS_ROLE_USTATE,  /* a universal checkpoint's zero/{name}/{file} (11.7) */
    DS_ROLE_UOPT,    /* a universal checkpoint's zero/optimizer_state.pt */
} ds_role;
enum { DS_PLAIN = 0, DS_BF16 = 1, DS_FP16 = 2 };

typedef struct ds_name {
    ds_role role;
    uint64_t rank; /* DS_ROLE_ZMODEL, DS_ROLE_OPTIM; CKPT_NONE otherwise */
    int prefix;    /* DS_PLAIN, DS_BF16, DS_FP16 (optimizer files) */
} ds_name;
/* The name's role (a file name, no folder; n bytes). */
ds_name ds_name_of(const char *name, size_t n);
/* The rank a zip record prefix names (zero_pp_rank_{r}_), CKPT_NONE when none. */
uint64_t ds_rank_in(const char *name);

/* ---- the folder (names.c): which tag to read and which files (11.1, 11.5.1-2) ---- */
enum { DS_FOLDER_NONE = 0, DS_FOLDER_TAG, DS_FOLDER_SAVE_DIR };
#define DS_LATEST_MAX 1024 /* the bytes of a latest file read: a tag is a folder's name */

typedef struct ds_listing {
    const char *const *names; /* relative to the folder: "latest", "global_step2/", "global_step2/x.pt" */
    const uint64_t *sizes;    /* CKPT_NONE for a folder */
    size_t n;
    /* the texts of latest and latest_universal (NULL: not known yet), their lengths */
    const char *latest, *latest_universal;
    size_t latest_len, latest_universal_len;
} ds_listing;

typedef struct ds_plan {
    int kind;                         /* DS_FOLDER_* */
    bool need_latest, need_universal; /* the texts are needed first */
    bool has_latest, has_universal;
    char *tag;      /* the tag read (save_dir), NULL for a tag folder */
    bool missing;   /* the tag's folder is not in the listing (11.5.1) */
    bool guessed;   /* no latest: the tag folder with the largest number (11.5.2) */
    bool universal; /* the tag folder is a universal checkpoint (11.7): it holds zero/ and no partition */
    size_t *files;  /* the listing's entries of the tag folder's DeepSpeed files, in listing order */
    size_t files_len;
} ds_plan;
/* 0 or CKPT_E_NO_MEMORY; plan_free frees what it holds. */
int ds_plan_make(const ds_listing *l, ds_plan *p, ckpt_error *err);
void ds_plan_free(ds_plan *p);

/* ---- the files (files.c, 11.2) ---- */
typedef enum ds_kind { DS_KIND_NONE = 0, DS_ZERO1, DS_ZERO2, DS_ZERO3, DS_BF16_OPTIMIZER } ds_kind;
const char *ds_kind_name(ds_kind k); /* "ZeRO-1", ..., "BF16_Optimizer" */

/* The state keys a flat group holds, and the masters. */
enum { DS_EXP_AVG = 0, DS_EXP_AVG_SQ, DS_MAX_EXP_AVG_SQ, DS_FP32, DS_KEYS };
extern const char *const ds_key_names[DS_KEYS]; /* "exp_avg", "exp_avg_sq", "max_exp_avg_sq", "fp32" */

/* One flat tensor of a partition: a group's (ZeRO-3: a sub-group's) state for one key. */
typedef struct ds_flat {
    size_t tensor; /* into the file's t->tensors, DS_NONE when absent */
    uint64_t count;
    int dtype;
    uint64_t at; /* absolute: its first element's byte in the source */
} ds_flat;

/* One group (ZeRO-3: sub-group) of one partition. */
typedef struct ds_fgroup {
    ds_flat flat[DS_KEYS];
    bool has_state; /* the flat state holds anything (11.5.33) */
    bool has_step;
    double step;
    uint64_t padding; /* group_paddings[g] (ZeRO-1/2, BF16_Optimizer) */
    bool has_padding;
    size_t group;    /* ZeRO-3: the group whose params lists the sub-group's id */
    size_t pg_node;  /* its param_groups dict (DS_NONE: none) */
    size_t mappings; /* param_slice_mappings[g]'s dict node (DS_NONE: none) */
} ds_fgroup;

typedef struct ds_file {
    char *name;    /* its name in the tag folder */
    ds_name is;    /* what its name says */
    uint64_t base; /* where its bytes start in the source */
    uint64_t size;
    ckpt_torch *t; /* NULL until read, or when it failed */
    bool stale;    /* a rank past W (11.5.6): not read */
    bool read;     /* read and recognised */
    /* an optimizer partition */
    ds_kind kind;
    uint64_t W;           /* partition_count (the list's first) */
    bool partition_list;  /* a list (ZeRO-1/2, BF16_Optimizer) */
    uint64_t *partitions; /* the list's entries */
    size_t partitions_len;
    char *ds_version; /* NULL when absent: the root's (else optimizer_state_dict's) */
    /* optimizer_state_dict.ds_version, what ZeRO-1/2's and BF16_Optimizer's load asserts: 0
     * absent or empty, 1 present (its text) */
    int osd_version;
    char *osd_version_text;
    size_t optimizer; /* the base optimizer in t->optimizers, DS_NONE */
    ds_fgroup *groups;
    size_t groups_len;   /* flat groups (ZeRO-3: sub-groups) */
    size_t param_groups; /* the base optimizer's param_groups count */
    size_t flat_count;   /* single_partition_of_fp32_groups' (fp32_flat_groups') length */
    bool layout_ok;      /* its groups match param_shapes (11.5.13): its flat tensors are read */
    bool elastic;
    /* model states: their nodes (CKPT_PNIL when absent or None) */
    size_t module; /* its module in t->models, DS_NONE */
    size_t root;   /* the root dict's node */
    size_t buffer_names, param_shapes, shared_params, frozen_shapes, frozen_frags;
    size_t frozen_model;  /* frozen_param_fragments in t->models, DS_NONE */
    bool holds_optimizer; /* its optimizer is a state dict (ZeRO disabled, no bf16) */
    bool has_dp, has_mp, has_global, has_skipped;
    uint64_t dp_world_size, mp_world_size, global_steps, skipped_steps;
    int config_bf16;  /* ds_config.bf16.enabled: -1 unsaid, 0, 1 */
    int config_stage; /* ds_config.zero_optimization.stage, -1 unsaid */
    /* a universal state file (universal.c): the key it holds (DS_KEYS: step), its parameter */
    int ukey;
    size_t uparam;
} ds_file;

/* ---- the checkpoint ---- */
typedef struct ds_frag {
    size_t file;    /* into ds->files */
    uint64_t rank;  /* the partition's rank */
    uint64_t start; /* the element of the rank's flat tensor where it starts */
    uint64_t count;
} ds_frag;

typedef struct ds_param {
    char *name;
    size_t slot;     /* its slot in the schema, DS_NONE when the module has no such name */
    size_t group;    /* the group (ZeRO-3: of its sub-group) */
    size_t flat;     /* the flat group (ZeRO-3: sub-group) it lies in */
    uint64_t offset; /* its first element in the flat group (ZeRO-3: in each rank's sub-group) */
    uint64_t count;
    uint64_t dims[8]; /* its shape as param_shapes saves it */
    uint32_t rank_dims;
    bool too_deep;           /* more than 8 dims */
    size_t frags, frags_len; /* into ds->frags */
    /* statistics (with CKPT_INSPECT_STATS): per key, NULL when absent */
    ckpt_stats *stats[DS_KEYS];
    /* a universal checkpoint's files of it: fp32, exp_avg, exp_avg_sq, step (DS_NONE: none) */
    size_t ufile[DS_KEYS + 1];
    /* the rounding check (11.5.30) done while the statistics streamed the masters: its first
     * element that differs, CKPT_NONE for none */
    bool rounded;
    uint64_t rounded_first;
} ds_param;

/* A flat group: ZeRO-1/2 and BF16_Optimizer a parameter group, ZeRO-3 a sub-group. */
typedef struct ds_group {
    size_t group;               /* the parameter group it belongs to (ZeRO-3), else its own index */
    size_t first, count;        /* its params, in ds->params */
    uint64_t numel;             /* N_g: its parameters' elements (ZeRO-3: the partitions' sum, per rank) */
    uint64_t padding, per_rank; /* pad_g, P_g (ZeRO-1/2, BF16_Optimizer) */
    bool has_step;
    double step; /* rank 0's */
} ds_group;

typedef struct ckpt_ds {
    bool lone;  /* one file opened alone (no folder) */
    char *root; /* the folder's name as given */
    char *dir;  /* the tag folder ({dir}) */
    char *tag;
    ds_kind kind;
    uint64_t W;
    bool bf16; /* the optimizer files read are bf16_zero_pp_rank_* */
    ds_file *files;
    size_t files_len;
    size_t model;     /* the reference model states (rank 0's), DS_NONE */
    size_t *optim;    /* the optimizer file of rank r, DS_NONE when missing; W entries */
    ds_group *groups; /* the flat groups, in param_shapes' order */
    size_t groups_len;
    size_t param_groups; /* parameter groups (rank 0's param_groups) */
    bool layout_ok;      /* every length is 11.3's: fragments may be read */
    ds_param *params;
    size_t params_len;
    ds_frag *frags;
    size_t frags_len, frags_cap;
    /* the failures of 11.5 in order (the first is the report's error) */
    ckpt_error *failures;
    size_t failures_len;
    char *note;
    uint64_t lone_rank;
    /* the schema's slots: their names, and the param that owns each (DS_NONE) */
    char **slot_names;
    size_t slot_count;
    size_t *param_of_slot;
    ckpt_config *configs; /* per group */
    bool *has_config;
    int kind_said;       /* ds_config.optimizer, else the groups' decoupled_weight_decay: -1 unsaid, CKPT_ADAM,
                            CKPT_ADAMW */
    bool kind_by_groups; /* kind_said is the groups' (a client optimizer: no ds_config.optimizer) */
    int kind_given;      /* the caller's kind where ds_config says none (ckpt_set_kind): -1 none */
    const ckpt_source *src;
    /* the report's items (family.c), one per entry, in entry order: a parameter's keys as
     * payloads whose spans are its fragments (none when the layout is not read) */
    struct ds_entry_item *items;
    size_t items_len;
    ckpt_span *spans;
    /* a universal checkpoint (11.7, universal.c): its zero/optimizer_state.pt (DS_NONE) and
     * that file's param_groups as the groups' configurations */
    bool universal;
    size_t ustate;
    ckpt_torch_group *ugroups;
    size_t ugroups_len;
} ckpt_ds;

/* Rank r's optimizer file, NULL when it has none. */
static inline const ds_file *ds_rank_file(const ckpt_ds *ds, uint64_t r)
{
    return ds->optim && r < ds->W && ds->optim[r] != DS_NONE ? &ds->files[ds->optim[r]] : NULL;
}

/* An item: param's keys, each a run spans[first[key] .. + len[key]) (len 0: not held). */
typedef struct ds_entry_item {
    size_t param;
    size_t first[DS_KEYS], len[DS_KEYS];
    int dtype[DS_KEYS];
} ds_entry_item;

/* One fragment of parameter p's state for key (DS_EXP_AVG .. DS_FP32), in rank order: the file
 * (ds->files[f.file]), the byte offset of its first element in the source and in that file, its
 * element count and dtype. Returns the fragments' count (at most W); `out` may be NULL. */
typedef struct ds_frag_at {
    size_t file;
    uint64_t rank, start, count;
    uint64_t at;      /* absolute, in the source */
    uint64_t file_at; /* in the file */
    int dtype;
} ds_frag_at;
size_t ckpt_ds_fragments(const ckpt_ds *ds, size_t param, int key, ds_frag_at *out);
/* The param's fragments exist for key on every rank that holds one. */
bool ckpt_ds_has_key(const ckpt_ds *ds, size_t param, int key);

/* ---- reading ---- */
/* A report's checkpoint (its family_data), NULL for another family. */
const ckpt_ds *ckpt_ds_of(const ckpt_report *rep);

/* files.c: file f's content read (its torch object model open), failures listed; 0 or
 * CKPT_E_NO_MEMORY / CKPT_E_IO. */
int ds_read_file(ckpt_ds *ds, ckpt_report *rep, ds_file *f);
/* A file's fields before it is read: nothing found (DS_NONE, CKPT_PNIL, -1). */
void ds_file_init(ds_file *f);
bool ds_is_partition(const ds_file *f);
bool ds_is_model_states(const ds_file *f);
/* layout.c: the param_shapes walk and 11.5.13; the lengths and paddings (11.5.15-17) and
 * param_slice_mappings (19); the steps across ranks (20); the warnings of 21, 22 and 33 */
int ds_walk(ckpt_ds *ds, ckpt_report *rep);
int ds_lengths(ckpt_ds *ds, ckpt_report *rep);
int ds_steps(ckpt_ds *ds, ckpt_report *rep);
int ds_step_warnings(ckpt_ds *ds, ckpt_report *rep);
/* schema.c */
int ds_schema(ckpt_ds *ds, ckpt_report *rep);
/* stats.c: statistics of every owner's keys from its fragments; 11.5.30 (the module's weights
 * against the masters rounded to its dtype: ZeRO-1/2, BF16_Optimizer), values read anyway */
int ds_stats(ckpt_ds *ds, ckpt_report *rep, ckpt_scan *scan, ckpt_error *err);
int ds_rounding(ckpt_ds *ds, ckpt_report *rep, ckpt_error *err);
/* pair.c: pairing with the model the user will load into (format.md 11.6), the family's
 * pair_new_model */
int ckpt_ds_pair_new_model(const ckpt_report *ro, const ckpt_report *rm, const ckpt_pair_options *o,
                           ckpt_pair_result *res);
/* universal.c: a universal checkpoint's tag folder (11.7), its files listed by open.c */
int ds_universal(ckpt_parse *p, ckpt_ds *ds);
size_t ds_universal_fragments(const ckpt_ds *ds, size_t param, int key, ds_frag_at *out);
/* files.c: a step, from a 0-d (or one-element) tensor or a Python number */
int ds_number_or_tensor(const ckpt_ds *ds, const ds_file *f, size_t node, bool *has, double *x, ckpt_error *err);
/* pick.c: a number as the texts print it (an integer without a point, else its shortest form);
 * the optimizer's kind ds_config says (11.4), else (a client optimizer) its groups g[0..n) by
 * decoupled_weight_decay (10.3): ds->kind_said */
void ds_num_text(strbuf *sb, double x);
void ds_kind_from_config(ckpt_ds *ds, const ds_file *cf, const ckpt_torch_group *g, size_t n);
/* json.c */
void ds_report_json(ckpt_jw *w, const ckpt_report *rep, bool bulk);
/* open.c */
int ds_open(ckpt_parse *p, ckpt_ds *ds);
void ds_free(ckpt_ds *ds);
/* failures.c */
/* A failure of 11.5 (an error): listed, and the report's error when it is the first. Returns 0
 * (the checks go on) or CKPT_E_NO_MEMORY. */
int ds_fail(ckpt_ds *ds, ckpt_report *rep, int code, const char *fmt, ...) CKPT_PRINTF(4, 5);
/* A warning of 11.5. */
int ds_warn(ckpt_report *rep, const char *fmt, ...) CKPT_PRINTF(2, 3);
bool ds_failed(const ckpt_ds *ds); /* an error was found */
/* A failure already made (a file's own error, with its hint) listed as ds_fail lists its own. */
int ds_push_failure(ckpt_ds *ds, ckpt_report *rep, const ckpt_error *e);
/* "DS: {file}: {key} is {found}, expected {type}" (11.2), {found} the node's type in words. */
int ds_fail_type(ckpt_ds *ds, ckpt_report *rep, const ds_file *f, const char *key, size_t node, const char *expected);

/* pick.c: values of the pickle's tree (a file's) */
typedef struct ds_tree {
    const ckpt_torch *t;
    const ckpt_pickle *p;
} ds_tree;
static inline ds_tree ds_tree_of(const ds_file *f) { return (ds_tree){f->t, f->t->pickle}; }
const ckpt_pnode *ds_node(ds_tree c, size_t k);
bool ds_is_dict(ds_tree c, size_t k);
bool ds_is_seq(ds_tree c, size_t k);
size_t ds_get(ds_tree c, size_t dict, const char *key); /* CKPT_PNIL when absent */
size_t ds_item(ds_tree c, size_t seq, size_t j);
size_t ds_len(ds_tree c, size_t k); /* a sequence's or a dict's items */
/* Iterate a dict: *cell starts at 0; false at the end. */
typedef struct ds_dict_it {
    uint32_t lists[2];
    int list;
    uint32_t cell;
} ds_dict_it;
bool ds_dict_begin(ds_tree c, size_t k, ds_dict_it *it);
bool ds_dict_next(ds_tree c, ds_dict_it *it, size_t *key, size_t *value);
bool ds_str(ds_tree c, size_t k, const char **s, size_t *n);
bool ds_str_is(ds_tree c, size_t k, const char *s);
bool ds_int(ds_tree c, size_t k, int64_t *v);
bool ds_number(ds_tree c, size_t k, double *x); /* an int, a float or a bool */
size_t ds_tensor(ds_tree c, size_t k);          /* its tensor, DS_NONE */
/* A shape: torch.Size((…)), a tuple or a list of ints; false otherwise. */
bool ds_shape(ds_tree c, size_t k, uint64_t *dims, uint32_t cap, uint32_t *rank, bool *too_deep);
/* The node's type in words, as 11.2's "{key} is {found}" says it: "None", "an int", "a str", ... */
void ds_type_text(strbuf *sb, ds_tree c, size_t k);
/* A value as Python prints it (numbers, bools, None, str, tuples and lists of them); other
 * values as their type. For 11.5.14's comparison and text. */
void ds_value_text(strbuf *sb, ds_tree c, size_t k);
/* DeepSpeed's names, as data (format.md 11.1): a ZeroStageEnum (either pickled form, or an int):
 * its stage, -1 when the node is none of these. */
int ds_zero_stage(ds_tree c, size_t k);
/* A fragment_address object's (start, numel), false when the node is none. */
bool ds_fragment_address(ds_tree c, size_t k, uint64_t *start, uint64_t *numel);
/* Is node k an object of that DeepSpeed class (NEWOBJ/REDUCE, BUILD over it)? Its BUILD state. */
size_t ds_object_state(ds_tree c, size_t k, const char *module, const char *name);

#endif
