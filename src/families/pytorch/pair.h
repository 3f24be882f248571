/* The PyTorch family's pairing with a model (pair.c; format.md 10.4). Private to the family. */
#ifndef CKPT_TORCH_PAIR_H
#define CKPT_TORCH_PAIR_H

#include "families/pytorch/data.h"

/* Pair a PyTorch optimizer's report with its model's: the family's bind. `torch_model`: the
 * model's report is a torch.save file's (its ties are known by storage identity). */
int ckpt_torch_bind(ckpt_report *ro, const ckpt_report *rm, bool torch_model, const ckpt_pair_options *o,
                    const ckpt_report *trained, size_t **view, size_t *view_len, ckpt_pair_result *res);
/* The slots of a torch.save model (format.md 10.4): the family's model_slots. */
int ckpt_torch_model_slots(const ckpt_report *rm, size_t **view, uint64_t **ties, size_t *len, ckpt_error *err);
/* The pairing's JSON (the report's "pairing", a pair result's "pytorch"). */
void ckpt_torch_pairing_json(strbuf *sb, const tf_data *d, const ckpt_report *rep);
/* The one configuration a TLADAMF file of the paired optimizer holds, or the loss (convert). */
int ckpt_torch_convert_config(const ckpt_report *rep, const ckpt_convert_options *o, ckpt_config *out, ckpt_error *err);

#endif
