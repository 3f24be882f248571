/* The model-state layout (format.md 6): TLSF32B, TLPF32B, and any family of their layout (magic,
 * version, tensor count, tensors of the descriptor's element dtype): a build's extra family of
 * that layout takes CKPT_STATE_IMPL and adds its texts. */
#ifndef CKPT_STATE_H
#define CKPT_STATE_H

#include "core/core.h"

/* state.c: the reader and the item accessors */
int ckpt_state_parse(ckpt_parse *p);
size_t ckpt_state_item_count(const ckpt_report *rep);
ckpt_item ckpt_state_item(ckpt_report *rep, size_t k);
/* An impl's members for a family of the state layout; the family adds its texts (count_mismatch,
 * trailing, pretty). */
#define CKPT_STATE_IMPL                                                                                                \
    .parse = ckpt_state_parse, .payloads = 1, .item_count = ckpt_state_item_count, .item = ckpt_state_item,            \
    .unhealthy = ckpt_tensor_unhealthy, .json_body = ckpt_report_json_model, .holds = "model tensors",                 \
    .hint_not = "optimizer state", .count_at = CKPT_MAGIC_LEN + 8

#endif
