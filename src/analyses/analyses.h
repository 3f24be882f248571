/* The analyses, private to src/: pairing (pair.c), diff (diff.c), health (health.c) and runs
 * (run.c), over open files of any family. */
#ifndef CKPT_ANALYSES_H
#define CKPT_ANALYSES_H

#include "core/core.h"

/* ---- health.c: the next Adam step of one slot, fed chunk by chunk (docs/health.md) ----
 * ckpt_health_json streams a slot's chunks through these; a run (run.c) feeds them the chunks
 * its continuity pass reads anyway, so every payload is read once. The rules (the bound, the
 * flags, the ratio) stay in health.c; the loops are numeric/kernels.c. */
/* opt: a valid optimizer checkpoint's report; state: its model-state file's, NULL for none. */
void ckpt_health_kernel_init(ckpt_health_kernel *k, const ckpt_report *opt, const ckpt_report *state);
/* Take slot s's configuration (ckpt_config_of_slot; the report's when the family keeps none). */
void ckpt_health_kernel_slot(ckpt_health_kernel *k, const ckpt_report *opt, uint64_t s);
/* Start the moments of the owner entry e (NULL: a frozen slot, nothing to feed). */
void ckpt_health_moments_begin(const ckpt_health_kernel *k, const ckpt_entry_info *e, ckpt_health_moments *h);
/* n elements of m and v (k->width bytes each, as stored); of theta (k->state_width bytes). Fed
 * in pieces of CKPT_HEALTH_CHUNK elements from the slot's start, the sums are added in the same
 * order as ckpt_health_json adds them: the same bits. */
#define CKPT_HEALTH_CHUNK 16384
void ckpt_health_feed_moments(const ckpt_health_kernel *k, const uint8_t *m, const uint8_t *v, size_t n,
                              ckpt_health_moments *h);
void ckpt_health_feed_params(const ckpt_health_kernel *k, const uint8_t *theta, size_t n, ckpt_health_param *h);
/* The flags health raises on slot `slot` whose owner is `owner` (CKPT_NONE when frozen), as
 * ckpt_health_json words them, with the ratio band [ratio_low, ratio_high] (checked by the
 * caller: ckpt_health_ratio_band); its update-to-weight ratio at lr (NAN: none) in *ratio, NAN
 * when it has none; how many of the flags are warnings in *warnings. */
size_t ckpt_health_slot_flags(const ckpt_health_slot *h, uint64_t slot, uint64_t owner, double lr, double ratio_low,
                              double ratio_high, double *ratio, size_t *warnings);
/* The flag band of the update-to-weight ratio (a heuristic, so its flags are warnings): the one
 * given (given true: [low, high], checked by ckpt_health_ratio_band) or the default
 * [CKPT_RATIO_LOW, CKPT_RATIO_HIGH]; 0, or -1 with err set for a band that is none. The JSON
 * of health and of a run states it as "ratioBand":[lo,hi] (ckpt_health_band_json). */
typedef struct ckpt_ratio_band {
    double low, high;
} ckpt_ratio_band;
int ckpt_health_band(bool given, double low, double high, ckpt_ratio_band *b, ckpt_error *err);
void ckpt_health_band_json(strbuf *sb, ckpt_ratio_band b);
/* Whether the model-state file `state` gives health (and a run) the parameters of `opt`, a
 * valid optimizer checkpoint: 0 with *pairs (when not, its first pairing failure in *why);
 * -1 with err set when it cannot be used at all (another family, invalid) or pairing could not
 * run (cancelled, I/O, no memory). */
int ckpt_health_state(const ckpt_file *opt, const ckpt_file *state, ckpt_progress_fn progress, void *progress_ctx,
                      bool *pairs, ckpt_error *why, ckpt_error *err);

/* ---- run.c ---- */
/* Whether B continues A as a run's pair does (one layout, one configuration); then the β1 and
 * 1 - β1 the gradient of one step comes back with (in the moments' dtype). */
int ckpt_run_one_pair(const ckpt_file *a, const ckpt_file *b, double *b1, double *omb1, ckpt_error *err);

#endif
