/* The PyTorch family's report data, shared by its reader (family.c), its report members (json.c)
 * and its pairing with a model (pair.c). Private to the family. */
#ifndef CKPT_TORCH_DATA_H
#define CKPT_TORCH_DATA_H

#include "core/core.h"
#include "families/state/state.h"
#include "families/pytorch/globals.h"
#include "families/pytorch/objects.h"
#include "families/pytorch/schema.h"

#include <stdlib.h>
#include <string.h>

/* A slot the training code does not train, by what is known: given as frozen (or listed so by
 * the optimizer's own files), or a buffer (saved as a plain tensor beside Parameters). */
enum { TF_KNOWN_FROZEN = 1, TF_KNOWN_BUFFER = 2, TF_KNOWN_TIE = 4 /* not an owner: its owner tells */ };

typedef struct tf_data {
    ckpt_torch *t;
    ckpt_stats **stats;   /* per entry of the first optimizer: exp_avg, exp_avg_sq, max_exp_avg_sq */
    size_t *model_tensor; /* the report's tensor i (the model state dict's) -> t->tensors */
    /* paired with a model (format.md 10.4): the indices in group order, where each went, and
     * what PyTorch's positional pairing would do */
    ckpt_bind_index *idx;
    size_t idx_len;
    ckpt_binding binding;
    bool tried;            /* a pairing was tried (the binding says how it went) */
    bool positional_known; /* one group: PyTorch's positional pairing is known */
    uint64_t *positional;  /* per index: the slot load_state_dict would give it, CKPT_NONE */
    char **slot_names;     /* the pair's slots (a bound report's) */
    size_t slot_count;
    uint64_t *group_of_slot;
    ckpt_config *configs; /* per group of the first optimizer */
    size_t *entry_of;     /* the report's entry k -> t->entries */
    ckpt_stats **vmax;    /* the report's entry k: max_exp_avg_sq's statistics (amsgrad) */
    uint8_t *undecided;   /* per slot of a model without order: its shape does not decide it */
    uint8_t *known;       /* per slot: TF_KNOWN_* (untrained by what the caller or the files say; a tie) */
    bool unordered_model; /* paired by name with a model that keeps no module order (safetensors, no names) */
    bool kind_given;      /* the caller gave the kind (ckpt_set_kind) */
    ckpt_torch_kind own;  /* then: the kind the file itself says */
} tf_data;

static inline char *ckpt_torch_dup(const char *s)
{
    size_t n = strlen(s) + 1;
    char *c = malloc(n);
    if (c) memcpy(c, s, n);
    return c;
}

#endif
