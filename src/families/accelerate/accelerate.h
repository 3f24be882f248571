/* Accelerate's save_state folders (docs/distributed.md, "Accelerate folders"): the family folder's shared header. Its
 * public functions are declared in ckptscope.h ("Accelerate folders"). */
#ifndef CKPT_FAMILIES_ACCELERATE_H
#define CKPT_FAMILIES_ACCELERATE_H

#include "core/core.h"

/* Accelerate's FSDP SHARDED_STATE_DICT folders (format.md 12.7; utils/fsdp_utils.py
 * save_fsdp_model, save_fsdp_optimizer): pytorch_model_fsdp_{i} (a DCP folder of {"model": ...})
 * and optimizer_{i} ({"optimizer": ...}). Is `name` (no '/') one? *i and *model set. */
bool ckpt_accelerate_dcp_folder(const char *name, uint64_t *i, bool *model);
/* The name of pair i's model folder (model) or optimizer folder, into buf (n bytes). */
void ckpt_accelerate_dcp_name(char *buf, size_t n, uint64_t i, bool model);

#endif
