/* The schema of a PyTorch optimizer and its model (format.md 10.4): which of the model's slots
 * each optimizer index is, decided from shapes, group order and names alone (schema.c).
 * The inputs are plain arrays, whatever file holds the model (a torch.save state dict, a
 * safetensors file); the PyTorch family (pair.c) gathers them and installs the result. */
#ifndef CKPT_TORCH_SCHEMA_H
#define CKPT_TORCH_SCHEMA_H

#include "core/core.h"

/* What torch's Optimizer.load_state_dict says when a saved group holds another number of
 * parameters than the optimizer's (torch/optim/optimizer.py, the same text from 1.x to 2.x). */
#define CKPT_TORCH_GROUP_SIZE                                                                                          \
    "loaded state dict contains a parameter group that doesn't match the size of optimizer's group"

/* One slot of the model, in model order. */
typedef struct ckpt_bind_slot {
    const char *name;
    uint32_t rank;
    const uint64_t *dims;
    uint64_t tie; /* the earlier slot of the same storage, offset, shape and stride, CKPT_NONE */
    bool frozen;  /* the training code does not train it (said by the caller): no index goes here */
} ckpt_bind_slot;

/* One optimizer index, in the order of its groups' `params`. */
typedef struct ckpt_bind_index {
    int64_t index;
    size_t group;
    bool has_state;       /* a state entry with a moment (its shape below) */
    uint32_t rank;        /* the shape of exp_avg (or of the entry's first tensor) */
    const uint64_t *dims; /* NULL: no tensor in its state, any shape fits */
    const char *name;     /* its param_names entry, NULL when the group has none */
} ckpt_bind_index;

typedef struct ckpt_binding {
    uint64_t *slot_of;    /* per index: its slot, CKPT_NONE when unplaced (the failure says) */
    ckpt_error *failures; /* the first is the verdict: unplaced (the first of each group that does
                           * not fit; the groups after it are placed still), a count, a name */
    size_t failures_len;
    char **warnings; /* the ambiguities, in index order */
    size_t warnings_len;
} ckpt_binding;

/* Map k indices onto n slots (a frozen slot takes none; an owner's frozen flag holds for its
 * ties). `by_shape`: the slots keep no module order (a safetensors file
 * without names): every index is placed on a slot of its shape, and a slot is attributed only
 * when its shape decides it (*undecided per slot, may be NULL). 0, or CKPT_E_NO_MEMORY. */
int ckpt_bind_map(const ckpt_bind_slot *slots, size_t n, const ckpt_bind_index *idx, size_t k, bool by_shape,
                  ckpt_binding *out, uint8_t *undecided);
void ckpt_binding_free(ckpt_binding *b);

#endif
