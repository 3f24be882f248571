/* TorchLean's configuration validation (format.md 4, "Configuration validation"; format.md 8's
 * epsilon rules): the reference's texts, with TLADAMF's prefix. */
#include "families/tladamf/tladamf.h"

#include <math.h>

static uint64_t at(uint64_t base, uint64_t delta) { return base == CKPT_NONE ? CKPT_NONE : base + delta; }

/* Epsilon by a reader's rule (format.md 8): 1e-50 is positive as a double (E64), 0 as a float
 * (E32); ED takes the moments' dtype, which holds epsilon at run time. */
static bool epsilon_ok(double epsilon, ckpt_dtype dtype, int rule)
{
    double eps = rule == CKPT_EPSILON_E64 || (rule == CKPT_EPSILON_ED && dtype == CKPT_FLOAT64)
                     ? epsilon
                     : (double)(float)epsilon;
    return isfinite(eps) && eps > 0.0;
}

static const char *epsilon_text(ckpt_dtype dtype, int rule)
{
    if (rule == CKPT_EPSILON_E64) return "`epsilon` must be finite and positive";
    if (rule == CKPT_EPSILON_E32) return "`epsilon` must remain finite and positive in float32";
    return dtype == CKPT_FLOAT64
               ? "`epsilon` must remain finite and positive in Runtime.Autograd.LibTorch.Dtype.float64"
               : "`epsilon` must remain finite and positive in Runtime.Autograd.LibTorch.Dtype.float32";
}

/* kind_offset: where the kind field starts in the file, or CKPT_NONE for in-memory configs. */
int ckpt_config_validate_at(const ckpt_config *c, ckpt_dtype dtype, uint64_t kind_offset, ckpt_error *err)
{
    return ckpt_config_validate_rule(c, dtype, CKPT_EPSILON_ED, kind_offset, err);
}

int ckpt_config_validate_rule(const ckpt_config *c, ckpt_dtype dtype, int epsilon_rule, uint64_t kind_offset,
                              ckpt_error *err)
{
    const char *F = CKPT_TLADAMF_PREFIX;
    if (c->kind > 1)
        return ckpt_fail(err, F, CKPT_E_INVALID_OPTIMIZER_TAG, kind_offset, 8, "invalid optimizer tag %llu",
                         (unsigned long long)c->kind);
    double beta1 = ckpt_double_from_bits(c->beta1), beta2 = ckpt_double_from_bits(c->beta2);
    double epsilon = ckpt_double_from_bits(c->epsilon), wd = ckpt_double_from_bits(c->weight_decay);
    /* NaN fails every comparison, so these reject it; -0.0 >= 0 holds and passes. */
    if (!(isfinite(beta1) && beta1 >= 0.0 && beta1 < 1.0))
        return ckpt_fail(err, F, CKPT_E_INVALID_BETA1, at(kind_offset, 8), 8,
                         "`beta1` must be finite and lie in [0, 1)");
    if (!(isfinite(beta2) && beta2 >= 0.0 && beta2 < 1.0))
        return ckpt_fail(err, F, CKPT_E_INVALID_BETA2, at(kind_offset, 16), 8,
                         "`beta2` must be finite and lie in [0, 1)");
    if (!epsilon_ok(epsilon, dtype, epsilon_rule))
        return ckpt_fail(err, F, CKPT_E_INVALID_EPSILON, at(kind_offset, 24), 8, "%s",
                         epsilon_text(dtype, epsilon_rule));
    if (c->kind == CKPT_ADAM && wd != 0.0) /* -0.0 == 0.0; NaN != 0.0 */
        return ckpt_fail(err, F, CKPT_E_ADAM_WEIGHT_DECAY, at(kind_offset, 32), 8,
                         "Adam checkpoints must have zero weight decay");
    if (c->kind == CKPT_ADAMW && !(isfinite(wd) && wd >= 0.0))
        return ckpt_fail(err, F, CKPT_E_ADAMW_WEIGHT_DECAY, at(kind_offset, 32), 8,
                         "AdamW weight decay must be finite and nonnegative");
    return 0;
}

int ckpt_config_validate(const ckpt_config *c, ckpt_dtype dtype, ckpt_error *err)
{
    int rc = ckpt_config_validate_at(c, dtype, CKPT_NONE, err);
    if (rc && err) err->subject = CKPT_SUBJECT_EXPECTED; /* an in-memory config: the caller's */
    return rc;
}
