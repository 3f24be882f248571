/* A test-only fourth family, added the way any family is added (docs/architecture.md, "Adding a
 * family"): this module and a line of the build (tests/c/CMakeLists.txt), nothing in src/.
 * TLSF64B is a float64 model state: the state layout (magic, version, tensor count, tensors)
 * with 8-byte elements, so its reader is the state reader driven by this descriptor. */
#include "family_tlsf64b.h"
#include "families/state/state.h"

static const struct ckpt_family_impl tlsf64b_impl = {
    CKPT_STATE_IMPL,
    .count_mismatch = "checkpoint state-tensor count mismatch",
    .trailing = "trailing bytes after final state tensor",
    .pretty = ckpt_shape_print_list,
};

const ckpt_family ckpt_family_tlsf64b = {
    CKPT_FAMILY_TLSF64B, "TLSF64B",    "TorchLean float64 state checkpoint", "StateIO", 1, 1, CKPT_ROLE_MODEL,
    CKPT_FLOAT64,        &tlsf64b_impl};
