/* The torch object model (open.c, tensors.c, search.c, globals.c): what a torch.save file holds, read as data over the
 * zip and pickle layers. Nothing here is public API and nothing a file names is called.
 *
 * ckpt_torch_open reads the container (format.md 10.1: a torch.save zip under any prefix, or the
 * legacy format's five pickles and its storages), interprets the tensors and storages of the
 * object's pickle (10.2), checks every storage's record and every tensor's reach, and searches
 * the object (10.3) for optimizer state dicts and model state dicts, depth first in insertion
 * order. Memory is bounded by the pickle's bytes: at most one tensor per pickle node, one storage
 * per persistent id, paths cut at CKPT_TORCH_MAX_PATH bytes. */
#ifndef CKPT_TORCH_OBJECTS_H
#define CKPT_TORCH_OBJECTS_H

#include "containers/zip.h"
#include "families/pytorch/globals.h"

#define CKPT_TORCH_MAX_PATH 4096
#define CKPT_TORCH_NONE SIZE_MAX

typedef struct ckpt_torch_storage {
    char *key;         /* data/{key} (NUL-free: a key holding a NUL byte is refused) */
    const char *dtype; /* torch's name: "float32", "bfloat16", ...; "uint8" for UntypedStorage */
    unsigned width;    /* bytes per element */
    uint64_t numel;    /* as the persistent id declares it */
    uint64_t at;       /* absolute: the record's first byte in the file */
    uint64_t bytes;    /* the record's length: numel * width once checked */
} ckpt_torch_storage;

typedef struct ckpt_torch_tensor {
    size_t storage;    /* index into storages */
    const char *dtype; /* the tensor's dtype (v3's dtype over an UntypedStorage) */
    unsigned width;    /* bytes per element */
    uint64_t offset;   /* the storage offset, in elements */
    uint64_t at;       /* absolute: the byte of its first element in the file */
    size_t dims;       /* index into the dims pool: rank sizes, then rank strides */
    uint32_t rank;
    bool contiguous; /* row-major without gaps */
    bool parameter;  /* rebuilt by _rebuild_parameter(_with_state) */
    uint64_t count;  /* elements: the product of the sizes */
} ckpt_torch_tensor;

typedef struct ckpt_torch_named {
    char *name;    /* a model tensor's key, an optimizer state's name */
    size_t tensor; /* CKPT_TORCH_NONE: a number (value) */
    double value;
} ckpt_torch_named;

typedef struct ckpt_torch_model {
    char *path;
    size_t first, count; /* into named */
} ckpt_torch_model;

enum {
    CKPT_TG_LR = 1,
    CKPT_TG_BETAS = 2,
    CKPT_TG_EPS = 4,
    CKPT_TG_WEIGHT_DECAY = 8,
    CKPT_TG_AMSGRAD = 16,
    CKPT_TG_MAXIMIZE = 32,
    CKPT_TG_DECOUPLED = 64,
    CKPT_TG_PARAM_NAMES = 128,
};

/* A key and its value as stored (a group's keys, an entry's state), for a writer that writes them
 * again: the key a span of the pickle's bytes, the value a node of its tree. */
typedef struct ckpt_torch_kv {
    uint32_t key_at, key_len;
    size_t value;
} ckpt_torch_kv;

typedef struct ckpt_torch_group {
    unsigned has;      /* CKPT_TG_* */
    size_t kv, kv_len; /* its keys as stored, `params` left out (form F: its first member's) */
    double lr, beta1, beta2, eps, weight_decay;
    bool amsgrad, maximize, decoupled;
    size_t params, params_len; /* into ints */
    size_t names, names_len;   /* into strings */
} ckpt_torch_group;

typedef struct ckpt_torch_entry {
    int64_t index; /* a name-keyed optimizer's: its position in the stored order (groups' lists, then state) */
    size_t name;   /* into strings: the FQN a name-keyed optimizer keys it by; CKPT_TORCH_NONE for ids */
    size_t group;  /* CKPT_TORCH_NONE: no group lists it */
    bool has_step;
    double step;
    size_t exp_avg, exp_avg_sq, max_exp_avg_sq; /* tensors, CKPT_TORCH_NONE when absent */
    size_t other, other_len;                    /* the other state, into named */
    size_t kv, kv_len;                          /* its state as stored, into kvs */
} ckpt_torch_entry;

typedef enum ckpt_torch_kind {
    CKPT_TORCH_KIND_UNKNOWN = 0,
    CKPT_TORCH_KIND_ADAM,
    CKPT_TORCH_KIND_ADAMW
} ckpt_torch_kind;

/* How an optimizer state dict keys its parameters (format.md 10.3; FSDP's names: docs/pytorch.md): by torch.optim's
 * ids, by FQN (FSDP's full_optim_state_dict, get_optimizer_state_dict), or in form F's flat keys
 * (`state.{fqn}.{key}`, `param_groups.{fqn}.{key}`). Name-keyed groups list their FQNs in
 * `names` (and position numbers in `params`). */
typedef enum ckpt_torch_keying {
    CKPT_TORCH_KEYED_IDS = 0,
    CKPT_TORCH_KEYED_NAMES,
    CKPT_TORCH_KEYED_FLAT
} ckpt_torch_keying;

typedef struct ckpt_torch_optimizer {
    char *path;
    ckpt_torch_kind kind;
    ckpt_torch_keying keying;
    size_t groups, groups_len;   /* into groups */
    size_t entries, entries_len; /* into entries */
} ckpt_torch_optimizer;

typedef struct ckpt_torch {
    bool legacy;
    char *prefix;        /* the zip's prefix ("" for legacy) */
    uint64_t records;    /* storage records: data/ members, or the legacy list's keys */
    ckpt_pickle *pickle; /* the object's */
    uint64_t pickle_at;  /* the file's byte of the object pickle's offset 0 (a node's offset + pickle_at) */
    uint8_t *pickle_bytes;
    ckpt_pickle *legacy_pickles[4]; /* the legacy format's others (magic, protocol, sys_info, keys) */
    uint8_t *legacy_bytes;
    char *member; /* the object pickle's name in texts: {prefix}/data.pkl, or the legacy file's */
    /* torch.load(weights_only=True) per version over each pickle, in file order: a zip's one, a
     * legacy file's five (globals.h) */
    ckpt_wo wo[5];
    size_t wo_len;
    char *container_warning; /* bytes the zip's directory does not describe (format.md 10.1), or NULL */
    ckpt_torch_storage *storages;
    size_t storages_len;
    ckpt_torch_tensor *tensors;
    size_t tensors_len;
    uint64_t *dims;
    size_t dims_len;
    ckpt_torch_named *named;
    size_t named_len;
    ckpt_torch_model *models;
    size_t models_len;
    size_t model; /* the model state dict (10.3's preference), CKPT_TORCH_NONE when none */
    ckpt_torch_optimizer *optimizers;
    size_t optimizers_len;
    ckpt_torch_group *groups;
    size_t groups_len;
    ckpt_torch_entry *entries;
    size_t entries_len;
    int64_t *ints;
    size_t ints_len;
    char **strings;
    size_t strings_len;
    ckpt_torch_kv *kvs; /* groups' and entries' keys as stored */
    size_t kvs_len;
    /* the tensors found outside every optimizer and model state dict (a bare tensor, a list of
     * them, a dict that also holds numbers), each once, in search order: into named, its name
     * the tensor's path ("" for the object itself) */
    size_t *loose;
    size_t loose_len;
    /* the object's own training progress, when it is a dict with these integers (Lightning's
     * "epoch" and "global_step") */
    bool has_epoch, has_global_step;
    int64_t epoch, global_step;
    /* private: capacities and the node -> tensor map */
    size_t caps[12];
    size_t *tensor_of_node;
} ckpt_torch;

/* Read src (`name` names it in texts: the legacy pickles' member). 0 with *out set
 * (ckpt_torch_free), or a code with err set and *out NULL. */
int ckpt_torch_open(const ckpt_source *src, const char *name, ckpt_torch **out, ckpt_error *err);
void ckpt_torch_free(ckpt_torch *t);

/* Tensor k's sizes and strides. */
static inline const uint64_t *ckpt_torch_size(const ckpt_torch *t, size_t k) { return t->dims + t->tensors[k].dims; }
static inline const uint64_t *ckpt_torch_stride(const ckpt_torch *t, size_t k)
{
    return t->dims + t->tensors[k].dims + t->tensors[k].rank;
}
/* Storage identity (format.md 10.4's ties): same storage, offset, sizes and strides. */
bool ckpt_torch_same(const ckpt_torch *t, size_t a, size_t b);

/* torch.load(weights_only=True) over all the file's pickles (a legacy file's five): whether the
 * newest torch version ckptscope has read (2.14, where weights_only=True is the default since
 * 2.6) takes the file; the first refusal of version v (CKPT_TV_*;
 * NULL when it takes the file) and the pickle it is in; the verdicts as the report's JSON array
 * (format.md 10.2); the names the pickles use (each once, in file order; only those the newest
 * version read refuses when `refused`), and the warning "PyTorch: the file names Python
 * callables that torch.load(weights_only=True) refuses: {names}" (nothing when none is
 * refused). */
bool ckpt_torch_weights_only(const ckpt_torch *t);
const ckpt_wo_refusal *ckpt_torch_wo_refusal(const ckpt_torch *t, int v, const ckpt_pickle **in);
void ckpt_torch_weights_only_json(strbuf *sb, const ckpt_torch *t);
void ckpt_torch_globals_json(strbuf *sb, const ckpt_torch *t, bool refused);
void ckpt_torch_weights_only_warning(strbuf *sb, const ckpt_torch *t);

#endif
