/* The element loops of health (health.c) and runs (run.c): the per-chunk accumulation of a
 * slot's moments and parameters, and the steps of one consecutive pair. The callers keep the
 * planning, the passes and the JSON; these take a chunk of stored values and add to the slot's
 * accumulator. Lane-wise (lanes.h), without contraction: every build gives the same bits. */
#ifndef CKPT_KERNELS_H
#define CKPT_KERNELS_H

#include "core/internal.h"

/* ---- health: one chunk of a slot (ckpt_health_kernel's moments_chunk and params_chunk) ---- */
void ckpt_kernel_moments32(const ckpt_health_kernel *k, const uint8_t *m, const uint8_t *v, size_t n,
                           ckpt_health_moments *h);
void ckpt_kernel_moments64(const ckpt_health_kernel *k, const uint8_t *m, const uint8_t *v, size_t n,
                           ckpt_health_moments *h);
void ckpt_kernel_params32(const uint8_t *theta, size_t n, ckpt_health_param *h);
void ckpt_kernel_params64(const uint8_t *theta, size_t n, ckpt_health_param *h);

/* ---- runs: one chunk of one pair's slot ---- */

/* One slot of one pair: its constants and what the pass gathers. */
typedef struct ckpt_steps_slot {
    bool active;    /* compared element by element (k >= 0) */
    bool backwards; /* tB < tA */
    uint64_t k;     /* |tB - tA| */
    double b1k, b2k, omb1, ck, u, nu;
    double inv1, inv2, eps, wd; /* the lr's direction at tB */
    bool gradient, lr;
    uint64_t broken, first, count;
    uint64_t weigh; /* elements where A weighs (the power's count) */
    double worst;
    uint64_t g_finite, g_nonfinite, g_zero;
    double g_sum_sq, g_max; /* of dm over the elements whose g is finite */
    double g_limit;         /* the largest |dm| whose g = dm / (1 - b1) is finite */
    double dd, td, tt;      /* <d,d>, <dtheta,d>, <dtheta,dtheta> */
    double bb;              /* <theta_B,theta_B> */
    double theta_u;         /* the unit roundoff of theta's dtype */
} ckpt_steps_slot;

/* One file's chunk: its moments as stored, its parameters in binary64 (read when the pair's
 * slot has a learning rate). */
typedef struct ckpt_steps_in {
    const uint8_t *raw_m, *raw_v;
    const double *theta;
} ckpt_steps_in;

/* k = 1: Δm = (1 - b1) g, so the step's gradient is Δm / (1 - b1). */
static inline double gradient_of(double dm, double omb1) { return dm / omb1; }

/* Elements [0, n) of the chunk, `base` its first element's index in the slot (a multiple of
 * CKPT_HEALTH_CHUNK), k >= 1, moments of 4 or 8 bytes. */
void ckpt_kernel_steps32(ckpt_steps_slot *s, const ckpt_steps_in *a, const ckpt_steps_in *b, size_t n, uint64_t base);
void ckpt_kernel_steps64(ckpt_steps_slot *s, const ckpt_steps_in *a, const ckpt_steps_in *b, size_t n, uint64_t base);

#endif
