/* The numeric layer, private to src/: statistics of stored values (stats.c), payloads scanned
 * for them (scan.c), their packed form (pack.c), and the element loops of health and runs
 * (kernels.c). Lane-wise (lanes.h), without contraction: every build gives the same bits. */
#ifndef CKPT_NUMERIC_H
#define CKPT_NUMERIC_H

#include "base/base.h"

/* ---- stats.c ---- */
typedef struct ckpt_stats_acc {
    uint64_t count, nan, inf, zero, negative;
    double min, max, sum, sum_squares;
    uint64_t hist[2100]; /* by floor(log2|x|) + 1074, covers float64 subnormals */
} ckpt_stats_acc;
void ckpt_stats_begin(ckpt_stats_acc *a);
void ckpt_stats_f32(ckpt_stats_acc *a, const float *x, size_t n);
void ckpt_stats_f64(ckpt_stats_acc *a, const double *x, size_t n);
/* n elements of any dtype with statistics (ckpt_dtype_has_stats), as stored. */
void ckpt_stats_dtype(ckpt_stats_acc *a, int dtype, const void *x, size_t n);
ckpt_stats *ckpt_stats_finish(const ckpt_stats_acc *a); /* NULL when out of memory */

/* ---- scan.c: payloads read for statistics, with progress relative to the scan ---- */
typedef struct ckpt_scan {
    ckpt_progress_fn progress; /* may be NULL */
    void *progress_ctx;
    uint64_t start, total; /* file offset where the scan began; its bytes in all */
    uint64_t done;         /* bytes scanned before the current payload */
} ckpt_scan;
/* Statistics of a payload of count elements of width 4 or 8 at the reader's position (the
 * reader moves past it). *out is NULL on error. */
int ckpt_scan_payload(ckpt_reader *r, ckpt_scan *scan, uint64_t count, unsigned width, ckpt_stats **out,
                      ckpt_error *err);
/* The same for count elements of any dtype with statistics. */
int ckpt_scan_payload_dtype(ckpt_reader *r, ckpt_scan *scan, uint64_t count, int dtype, ckpt_stats **out,
                            ckpt_error *err);
/* A run of a payload's elements in the source: its first element's byte, its element count. A
 * payload whose elements lie in several runs (a DeepSpeed parameter's fragments, one per rank) is
 * a list of them, in element order. */
typedef struct ckpt_span {
    uint64_t offset, count;
} ckpt_span;
/* Statistics of the n runs of dtype together (one payload); progress counts their bytes from
 * scan->done on (scan->done moves past them). *out is NULL on error. */
int ckpt_scan_spans(ckpt_reader *r, ckpt_scan *scan, const ckpt_span *spans, size_t n, int dtype, ckpt_stats **out,
                    ckpt_error *err);

/* ---- kernels.c: the element loops of health (analyses/health.c) and runs (analyses/run.c) ----
 * The callers keep the planning, the passes and the JSON; these take a chunk of stored values
 * and add to the slot's accumulator. */

/* Health's accumulators of one slot: its owner's moments (a tied slot's are its owner's) and its
 * own parameters. */
typedef struct ckpt_health_moments {
    bool present;      /* the slot has an owner entry (not frozen) */
    double inv1, inv2; /* the bias corrections of step t + 1, as products */
    double u_sum_sq, u_max;
    uint64_t u_finite, nan, inf, v_negative, never_updated, inconsistent;
} ckpt_health_moments;

typedef struct ckpt_health_param {
    bool present; /* the slot's tensor of a state file that pairs */
    double sum_sq, max;
    uint64_t finite, nan, inf;
} ckpt_health_param;

/* One slot: its owner's moments (a tied slot's are its owner's) and its own parameters. */
typedef struct ckpt_health_slot {
    uint64_t count;
    ckpt_health_moments mo;
    ckpt_health_param pa;
} ckpt_health_slot;

/* The constants of one optimizer checkpoint's pass and its chunk loops (one per width). */
typedef struct ckpt_health_kernel {
    unsigned width, state_width; /* bytes per element of the moments, of the parameters */
    double beta1, beta2, eps, c; /* c: 0 when there is no bound (beta1^2 >= beta2) */
    double v_floor;              /* the smallest normal of the moments' dtype */
    void (*moments_chunk)(const struct ckpt_health_kernel *, const uint8_t *m, const uint8_t *v, size_t n,
                          ckpt_health_moments *h);
    void (*params_chunk)(const uint8_t *theta, size_t n, ckpt_health_param *h);
} ckpt_health_kernel;

/* The elements health and runs feed the kernels at a time, from a slot's start: sums added in
 * the same order whoever feeds them give the same bits. */
#define CKPT_HEALTH_CHUNK 16384

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
