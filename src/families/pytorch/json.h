/* The PyTorch family's report members (json.c). Private to the family. */
#ifndef CKPT_TORCH_JSON_H
#define CKPT_TORCH_JSON_H

#include "families/pytorch/data.h"

/* The family's json_body hook: TLADAMF's members a PyTorch file has not, or its paired slots,
 * then the container, optimizers, models, weights_only, pairing and entries. */
void ckpt_torch_report_json(ckpt_jw *w, const ckpt_report *rep, bool bulk);

#endif
