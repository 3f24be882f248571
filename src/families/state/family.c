/* The model-state families TLSF32B and TLPF32B (format.md 6): one layout (state.c), two
 * descriptors that differ in their magic, versions and texts. */
#include "families/state/state.h"

static const struct ckpt_family_impl tlsf32b_impl = {
    CKPT_STATE_IMPL,
    .count_mismatch = "checkpoint state-tensor count mismatch",
    .trailing = "trailing bytes after final state tensor",
    .pretty = ckpt_shape_print_list,
};

static const struct ckpt_family_impl tlpf32b_impl = {
    CKPT_STATE_IMPL,
    .count_mismatch = "checkpoint parameter count mismatch",
    .trailing = "trailing bytes after final parameter",
    .pretty = ckpt_shape_print_nested,
};

const ckpt_family ckpt_family_tlsf32b = {
    CKPT_FAMILY_TLSF32B, "TLSF32B",    "TorchLean float32 state checkpoint", "StateIO", 1, 1, CKPT_ROLE_MODEL,
    CKPT_FLOAT32,        &tlsf32b_impl};
const ckpt_family ckpt_family_tlpf32b = {
    CKPT_FAMILY_TLPF32B, "TLPF32B",    "TorchLean float32 parameter checkpoint", "ParamIO", 2, 2, CKPT_ROLE_MODEL,
    CKPT_FLOAT32,        &tlpf32b_impl};
