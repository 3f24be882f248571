/* The model the user will load into, as a family's pairing by name sees it (DeepSpeed's 11.6,
 * DCP's 12.8): its names, in its order when it keeps one, each name's shape (a file's) and tie
 * (a torch.save file's storages), and a lookup by name. Private to src/. */
#ifndef CKPT_NEW_MODEL_H
#define CKPT_NEW_MODEL_H

#include "core/core.h"

#define CKPT_NAME_NONE SIZE_MAX

/* A name and where it came from, for lookups by name. */
typedef struct ckpt_named_at {
    const char *name;
    size_t at;
} ckpt_named_at;

typedef struct ckpt_name_index {
    ckpt_named_at *v;
    size_t n;
} ckpt_name_index;

/* names (n, NULL ones left out) sorted for lookups; false when out of memory */
bool ckpt_name_index_make(ckpt_name_index *x, const char *const *names, size_t n);
/* where name is (its first entry), CKPT_NAME_NONE */
size_t ckpt_name_index_find(const ckpt_name_index *x, const char *name);

typedef struct ckpt_new_model {
    const char **names; /* in its order (when ordered) */
    size_t n;
    bool ordered;
    const ckpt_report *rm; /* shapes: tensor k's (NULL: names alone) */
    size_t *tensor_of;     /* name k's tensor in rm */
    bool has_ties;
    size_t *owner; /* name k's tie: the name index of the earlier tensor of its storage, CKPT_NAME_NONE */
    ckpt_name_index by;
} ckpt_new_model;

/* The new model from its file rm (names in file order; ties from a torch.save layout's storages),
 * or from the names given (rm NULL); names given order a file that keeps no module order. */
int ckpt_new_model_make(const ckpt_report *rm, const ckpt_pair_options *o, ckpt_new_model *m, ckpt_error *err);
void ckpt_new_model_free(ckpt_new_model *m);

#endif
