/* Checkpoints of one run (docs/runs.md): continuity of each consecutive pair per slot, the
 * gradient of a one-step pair, and with the model-state files the learning rate of that step.
 *
 * Per owner slot, with A at step tA and B at tB = tA + k, from the stored values in binary64:
 *   dm = m_B - b1^k m_A,  dv = v_B - b2^k v_A,  c_k = (1-b1)/sqrt(1-b2) * sqrt(sum_{i<k} rho^i),
 * rho = b1^2/b2, b and 1-b each the stored binary64 rounded once to the moments' dtype; an
 * element breaks when dv < -tv or |dm| > c_k sqrt(max(dv,0) + tv) + tm (the tolerances of
 * docs/runs.md). k = 1: g = dm / (1-b1); lr = -<dtheta,d>/<d,d>, d = m^_B/(sqrt(v^_B)+eps)
 * (+ wd theta_A for AdamW), bias corrections at tB.
 *
 * One pass over every file at once: for each slot, chunk by chunk, each file's payload chunk is
 * read once and serves both pairs it belongs to and the file's own health (health.c's
 * accumulation, fed the same chunks). Memory: a few chunks per file, and per file one health
 * accumulator per slot. */
#include "internal.h"
#include "lanes.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Multiples of health's chunk, so that each file's health sums add in health's own order. */
#define CHUNK CKPT_HEALTH_CHUNK           /* elements per file per step, many files */
#define CHUNK_FEW (4 * CKPT_HEALTH_CHUNK) /* the same for a few files (fewer, larger reads) */
#define FEW_FILES 16

#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF /* no fused multiply-add: every build gives the same bits */
#endif

/* One file of the run and its buffers for the current chunk. */
typedef struct run_file {
    const ckpt_file *file;
    const ckpt_report *rep; /* NULL when not an optimizer checkpoint */
    const ckpt_source *src;
    const ckpt_report *state; /* its model-state file, NULL when not given or not usable */
    const ckpt_source *state_src;
    ckpt_error state_error; /* why a state file given cannot be used at all */
    bool readable;          /* valid through its last entry */
    unsigned width, state_width;
    uint8_t *raw_m, *raw_v;   /* chunk * width, as stored */
    uint8_t *raw_theta;       /* chunk * state_width */
    double *theta;            /* the parameters' chunk in binary64 */
    const ckpt_entry_info *e; /* the current slot's entry, NULL when not read this slot */
    bool read_theta;          /* its parameters are read this slot (health) */
    bool widen_theta;         /* ... and go into a learning rate */
    ckpt_health_kernel hk;
    ckpt_health_slot *health; /* one per slot: its owner's moments, its own parameters */
} run_file;

/* One slot of one pair: its constants and what the pass gathers. */
typedef struct slot_acc {
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
} slot_acc;

/* One consecutive pair. */
typedef struct run_pair {
    bool comparable;                 /* both readable, one configuration, one layout */
    bool lr;                         /* both state files usable */
    char *config_diff, *layout_diff; /* JSON arrays, NULL when equal (or not compared) */
    strbuf verdict;                  /* the first reason the pair is not continuous */
    strbuf weak;                     /* the first slot that cannot tell, while none can */
    strbuf slots;                    /* the slots' JSON items */
    size_t slot_items;
    bool continuous;
    bool tells;                       /* a slot of the pair can tell (its power is 1% or more) */
    bool weighed;                     /* a slot of the pair has a power */
    uint64_t weigh, elements;         /* the pair's power: weigh / elements */
    double b1, b2, omb1, omb2, u, nu; /* the configuration in the moments' dtype */
    double theta_u;                   /* the unit roundoff of B's parameters' dtype */
    bool adamw;
    double eps, wd;
} run_pair;

typedef struct run {
    run_file *files;
    run_pair *pairs;
    size_t n;
    size_t chunk; /* elements per file per step: memory is n * chunk * 32 bytes */
    ckpt_progress_fn progress;
    void *progress_ctx;
    double residual_limit; /* the learning-rate residual that breaks a pair */
    uint64_t done, total;
    ckpt_error *err;
    /* the element loops by moment width (float, double), called through pointers: Binaryen
     * inlines a function with one call site into its caller, and V8 optimizes a WebAssembly
     * function only on a later call, so a loop inlined into the one call of the pass would run
     * in the baseline tier to its end (see health.c) */
    void (*steps_chunk[2])(struct slot_acc *, const run_file *, const run_file *, size_t, uint64_t);
} run;

static int read_at(const ckpt_source *src, uint64_t offset, void *buf, size_t n, ckpt_error *err)
{
    size_t got = src->read(src->ctx, offset, buf, n);
    if (got == CKPT_READ_ERROR || got != n)
        return ckpt_fail(err, NULL, CKPT_E_IO, offset, 0, "could not read the source at byte %llu",
                         (unsigned long long)offset);
    return 0;
}

static void widen(const uint8_t *raw, unsigned width, double *out, size_t n)
{
    if (width == 8) {
        memcpy(out, raw, n * 8);
        return;
    }
    const float *f = (const float *)(const void *)raw;
    for (size_t j = 0; j < n; j++) out[j] = f[j];
}

/* ---- one pair's configuration ---- */

/* The value the moments' dtype holds: a float32 kernel rounds each constant once. */
static double in_dtype(double x, int dtype) { return dtype == CKPT_FLOAT32 ? (double)(float)x : x; }

static void pair_config(run_pair *p, const ckpt_report *r)
{
    double b1 = ckpt_double_from_bits(r->config.beta1), b2 = ckpt_double_from_bits(r->config.beta2);
    p->b1 = in_dtype(b1, r->dtype);
    p->b2 = in_dtype(b2, r->dtype);
    p->omb1 = in_dtype(1.0 - b1, r->dtype);
    p->omb2 = in_dtype(1.0 - b2, r->dtype);
    p->u = r->dtype == CKPT_FLOAT64 ? 0x1p-53 : 0x1p-24;
    p->nu = r->dtype == CKPT_FLOAT64 ? DBL_MIN : FLT_MIN;
    p->adamw = r->config.kind == CKPT_ADAMW;
    p->eps = in_dtype(ckpt_double_from_bits(r->config.epsilon), r->dtype);
    p->wd = ckpt_double_from_bits(r->config.weight_decay);
}

/* c_k = (1-b1)/sqrt(1-b2) * sqrt(sum_{i=0..k-1} rho^i): infinite when no bound exists (b2 = 0
 * with k > 1, or a sum that overflows), and then nothing is checked. */
static double c_k(const run_pair *p, uint64_t k)
{
    double sum;
    if (k == 1) sum = 1;
    else {
        double rho = p->b1 * p->b1 / p->b2;
        if (!isfinite(rho)) sum = INFINITY;
        else if (rho == 1) sum = (double)k;
        else sum = (1 - pow(rho, (double)k)) / (1 - rho);
    }
    return p->omb1 / sqrt(p->omb2) * sqrt(sum);
}

/* ---- the element loops ---- */

/* The moments are compared from their stored width (element()); parameters, rarer, widened. */

/* k = 1: Δm = (1 - b1) g, so the step's gradient is Δm / (1 - b1). */
static inline double gradient_of(double dm, double omb1) { return dm / omb1; }

/* k >= 1: the continuity bound, and for k = 1 the gradient's sums and the lr's. Elements
 * holding NaN or infinity are health's to flag, not judged (the gradient still counts them).
 *
 * Speed: the bound is c_k sqrt(X) + tm (X = max(dv, 0) + tv), and tm = tm0 + km c_k sqrt(v_B)
 * with tm0 = km (|m_B| + b1^k |m_A|). Without a square root, e = |dm| - tm0 decides most
 * elements: e <= 0 or e^2 <= c_k^2 X is within the bound; e^2 > c_k^2 (1 + km)(X + km v_B) is
 * beyond it (Cauchy-Schwarz: sqrt(X) + km sqrt(v_B) <= sqrt((1 + km)(X + km v_B))); likewise
 * for a new worst ratio. Only the elements in between take the roots, as written. The squared
 * tests err by a few units of 2^-53, so a verdict can differ from the rooted one only for an
 * element that close to the bound. The gradient's sums are of dm (g = dm / (1 - b1), divided
 * once at the end).
 *
 * The elements go in blocks of LANES (lanes.h), computed lane-wise and branch-free with the
 * elements each part does not take masked out; a block leaves the vectors only for an element
 * that needs the roots (then that element, as written) or that breaks the bound (counted in
 * order, for the first). Sums add element j into lane j % LANES and the lanes in one fixed tree
 * every CKPT_HEALTH_CHUNK elements from the slot's start, whatever the run's chunk; the worst
 * ratio is kept per lane, its largest taken at the end. The loop is inlined once per moment
 * width, as health's is. */

/* A pair's constants in one chunk. */
typedef struct steps_consts {
    double kv, km, b1k, b2k, ck, ck2, ck2_1km, nu, g_limit, inv1, inv2, eps, wd;
    bool gradient, lr;
} steps_consts;

/* What the blocks gather: sums per lane; counts as minus the sum of their masks, in any lane. */
typedef struct steps_sums {
    v2d g_sq[2], dd[2], td[2], tt[2], bb[2], g_max, worst[2];
    v2i g_finite, g_zero, g_nonfinite, weigh;
} steps_sums;

/* A block's lanes that need the roots, and what the roots decide for them. */
typedef struct roots {
    v2d worst[2];
    v2i out[2];
} roots;

/* The bound and the worst ratio as written, for the lanes in `need`. Everything comes by value: a
 * local whose address a call takes lives in memory in the hot loop. */
static NOINLINE roots steps_roots(const steps_consts *K, v2d w0, v2d w1, v2i out0, v2i out1, v2d ma0, v2d ma1, v2d mb0,
                                  v2d mb1, v2d vb0, v2d vb1, v2d adm0, v2d adm1, v2d x0, v2d x1, v2i need0, v2i need1)
{
    roots r = {{w0, w1}, {out0, out1}};
    const v2d ma[2] = {ma0, ma1}, mb[2] = {mb0, mb1}, vb[2] = {vb0, vb1}, adm[2] = {adm0, adm1}, x[2] = {x0, x1};
    const v2i need[2] = {need0, need1};
    for (int l = 0; l < LANES; l++) {
        int q = l >> 1, i = l & 1;
        if (!need[q][i]) continue;
        double a = adm[q][i], w = r.worst[q][i];
        double tm = K->km * (K->ck * sqrt(vb[q][i]) + fabs(mb[q][i]) + K->b1k * fabs(ma[q][i]));
        double bound = K->ck * sqrt(x[q][i]) + tm;
        if (a > w * bound && isfinite(bound) && bound > 0) r.worst[q][i] = a / bound; /* one division per new maximum */
        r.out[q][i] = a > bound ? -1 : 0;
    }
    return r;
}

/* The broken elements of a block, in order: the first of the slot is the first met. */
static NOINLINE void steps_broken(slot_acc *s, v2i broken0, v2i broken1, uint64_t at)
{
    const v2i broken[2] = {broken0, broken1};
    for (int l = 0; l < LANES; l++)
        if (broken[l >> 1][l & 1]) {
            if (!s->broken) s->first = at + (uint64_t)l;
            s->broken++;
        }
}

/* The elements j .. j + 3 of the four moment buffers. */
typedef struct block_in {
    v2d ma[2], va[2], mb[2], vb[2];
} block_in;

static inline ALWAYS_INLINE void block_load(block_in *in, const uint8_t *pma, const uint8_t *pva, const uint8_t *pmb,
                                            const uint8_t *pvb, size_t j, bool wide)
{
    load4(pma, j, wide, in->ma);
    load4(pva, j, wide, in->va);
    load4(pmb, j, wide, in->mb);
    load4(pvb, j, wide, in->vb);
}

/* Are all four values of every lane finite (the bound leaves NaN and infinities to health)? When
 * dm = m_B - b1^k m_A and tv's kv (v_B + b2^k v_A) + nu are finite, m_A, m_B, v_A and v_B are
 * (an infinite or NaN value makes them infinite or NaN; kv > 0); the block's own arithmetic
 * answers for the usual block, and a finite one that overflows goes the masked way, as exact. */
static inline ALWAYS_INLINE bool block_all_finite(const steps_consts *K, const block_in *in)
{
    const v2d inf = splat2(INFINITY);
    v2i fine = ALL2;
    for (int q = 0; q < 2; q++)
        fine &= lt2(abs2(in->mb[q] - K->b1k * in->ma[q]), inf) &
                lt2(abs2(K->kv * (in->vb[q] + K->b2k * in->va[q]) + K->nu), inf);
    return all2(fine);
}

/* The lanes whose four values are all finite. */
static inline void block_finite(const block_in *in, v2i finite[2])
{
    const v2d inf = splat2(INFINITY);
    for (int q = 0; q < 2; q++)
        finite[q] = lt2(abs2(in->ma[q]), inf) & lt2(abs2(in->va[q]), inf) & lt2(abs2(in->mb[q]), inf) &
                    lt2(abs2(in->vb[q]), inf);
}

/* One block of LANES elements, element j of the buffers; `valid`: the lanes that hold elements,
 * `ok`: those the bound takes (all of them in the usual block: the masks then fold away); `at`:
 * the slot's index of element j. */
static inline ALWAYS_INLINE void steps_block(const steps_consts *K, steps_sums *S, slot_acc *s, const block_in *in,
                                             const double *tha, const double *thb, size_t j, const v2i valid[2],
                                             const v2i ok[2], uint64_t at)
{
    const v2d inf = splat2(INFINITY), zero = splat2(0);
    v2d ma[2], va[2], mb[2], vb[2], dm[2], adm[2];
    for (int q = 0; q < 2; q++) {
        ma[q] = in->ma[q], va[q] = in->va[q], mb[q] = in->mb[q], vb[q] = in->vb[q];
        dm[q] = mb[q] - K->b1k * ma[q];
        adm[q] = abs2(dm[q]);
    }
    if (K->gradient) {
        v2i g[2];
        for (int q = 0; q < 2; q++) {
            g[q] = le2(adm[q], splat2(K->g_limit)) & valid[q]; /* false for NaN */
            v2d x = keep2(g[q], dm[q]);
            S->g_sq[q] += x * x;
        }
        S->g_max = max2(max2(keep2(g[0], adm[0]), keep2(g[1], adm[1])), S->g_max);
        S->g_finite += g[0] + g[1];
        S->g_nonfinite += (valid[0] & ~g[0]) + (valid[1] & ~g[1]);
        S->g_zero += (eq2(dm[0], zero) & g[0]) + (eq2(dm[1], zero) & g[1]);
    }
    v2d dv[2], tv[2], x[2];
    v2i out[2], need[2];
    for (int q = 0; q < 2; q++) { /* a lane not ok computes with zeros, and counts nothing */
        ma[q] = keep2(ok[q], ma[q]), va[q] = keep2(ok[q], va[q]), mb[q] = keep2(ok[q], mb[q]);
        vb[q] = keep2(ok[q], vb[q]), adm[q] = keep2(ok[q], adm[q]);
        dv[q] = vb[q] - K->b2k * va[q];
        tv[q] = K->kv * (vb[q] + K->b2k * va[q]) + K->nu;
        x[q] = keep2(lt2(zero, dv[q]), dv[q]) + tv[q];
        v2d cx = K->ck2 * x[q], w = S->worst[q];
        v2d tm0 = K->km * (abs2(mb[q]) + K->b1k * abs2(ma[q]));
        v2d e = adm[q] - tm0, ew = adm[q] - w * tm0;
        out[q] = lt2(zero, e) & lt2(cx, e * e);                   /* perhaps beyond the bound */
        v2i candidate = lt2(zero, ew) & lt2(w * w * cx, ew * ew); /* perhaps a new worst */
        need[q] = ((out[q] & le2(e * e, K->ck2_1km * (x[q] + K->km * vb[q]))) | candidate) & ok[q];
    }
    if (any2(need[0] | need[1])) {
        roots r = steps_roots(K, S->worst[0], S->worst[1], out[0], out[1], ma[0], ma[1], mb[0], mb[1], vb[0], vb[1],
                              adm[0], adm[1], x[0], x[1], need[0], need[1]);
        S->worst[0] = r.worst[0], S->worst[1] = r.worst[1];
        out[0] = r.out[0], out[1] = r.out[1];
    }
    /* A weighs: b2^k v_A > (v_B + tv) / 10, or b1^k |m_A| > (c_k sqrt(v_B + tv) + tm) / 10 (a
     * lane not ok holds zeros: b2^k 0 > nu / 10 is false, and so is 0 > c_k sqrt(nu) / 10) */
    const v2d ten = splat2(10);
    v2d vt[2];
    v2i weighs[2];
    for (int q = 0; q < 2; q++) {
        vt[q] = vb[q] + tv[q];
        weighs[q] = lt2(vt[q] / ten, K->b2k * va[q]);
    }
    /* the moments' test (two roots) only for a block where v alone does not settle every lane */
    if (!all2((weighs[0] | ~ok[0]) & (weighs[1] | ~ok[1])))
        for (int q = 0; q < 2; q++) {
            v2d bma = K->b1k * abs2(ma[q]);
            v2d tm = K->km * (K->ck * sqrt2(vb[q]) + abs2(mb[q]) + bma);
            weighs[q] |= lt2((K->ck * sqrt2(vt[q]) + tm) / ten, bma);
        }
    S->weigh += (weighs[0] & ok[0]) + (weighs[1] & ok[1]);
    v2i broken[2];
    for (int q = 0; q < 2; q++) broken[q] = (lt2(dv[q], -tv[q]) | out[q]) & ok[q];
    if (any2(broken[0] | broken[1])) steps_broken(s, broken[0], broken[1], at);
    if (!K->lr) return;
    for (int q = 0; q < 2; q++) {
        v2d ta, tb;
        memcpy(&ta, tha + j + 2 * q, 16);
        memcpy(&tb, thb + j + 2 * q, 16);
        v2d d = mb[q] * K->inv1 / (sqrt2(vb[q] * K->inv2) + K->eps);
        if (K->wd != 0) d += K->wd * ta;
        v2d t = tb - ta;
        v2i fin = lt2(abs2(d), inf) & lt2(abs2(t), inf) & ok[q];
        d = keep2(fin, d), t = keep2(fin, t);
        S->dd[q] += d * d;
        S->td[q] += t * d;
        S->tt[q] += t * t;
        v2d bth = keep2(fin, tb);
        S->bb[q] += bth * bth;
    }
}

/* Elements [from, to) of the chunk (from a multiple of LANES); `base` is the chunk's first. */
static inline ALWAYS_INLINE void steps_run(const steps_consts *K, steps_sums *S, slot_acc *s, const run_file *a,
                                           const run_file *b, size_t from, size_t to, uint64_t base, bool wide)
{
    const v2i all[2] = {ALL2, ALL2};
    size_t full = from + (to - from) / LANES * LANES;
    for (size_t j = from; j < full; j += LANES) {
        block_in in;
        block_load(&in, a->raw_m, a->raw_v, b->raw_m, b->raw_v, j, wide);
        if (block_all_finite(K, &in)) {
            steps_block(K, S, s, &in, a->theta, b->theta, j, all, all, base + j);
            continue;
        }
        v2i finite[2];
        block_finite(&in, finite);
        steps_block(K, S, s, &in, a->theta, b->theta, j, all, finite, base + j);
    }
    if (full == to) return;
    /* the tail, as a block with its missing lanes left out */
    const unsigned w = wide ? 8 : 4;
    uint8_t raw[4][LANES * 8] = {{0}};
    double th[2][LANES] = {{0}};
    v2i valid[2] = {{0}};
    for (size_t k = full; k < to; k++) {
        size_t l = k - full;
        memcpy(raw[0] + l * w, a->raw_m + k * w, w);
        memcpy(raw[1] + l * w, a->raw_v + k * w, w);
        memcpy(raw[2] + l * w, b->raw_m + k * w, w);
        memcpy(raw[3] + l * w, b->raw_v + k * w, w);
        if (K->lr) th[0][l] = a->theta[k], th[1][l] = b->theta[k];
        valid[l >> 1][l & 1] = -1;
    }
    block_in in;
    block_load(&in, raw[0], raw[1], raw[2], raw[3], 0, wide);
    v2i ok[2];
    block_finite(&in, ok);
    ok[0] &= valid[0], ok[1] &= valid[1];
    steps_block(K, S, s, &in, th[0], th[1], 0, valid, ok, base + full);
}

static inline ALWAYS_INLINE void steps_span(slot_acc *s, const run_file *a, const run_file *b, size_t n, uint64_t base,
                                            bool wide)
{
    steps_consts K = {0};
    K.kv = 2.0 * ((double)s->k + 1.0) * s->u, K.km = 4.0 * ((double)s->k + 1.0) * s->u;
    K.b1k = s->b1k, K.b2k = s->b2k, K.ck = s->ck, K.ck2 = s->ck * s->ck, K.ck2_1km = K.ck2 * (1 + K.km);
    K.nu = s->nu, K.g_limit = s->g_limit, K.inv1 = s->inv1, K.inv2 = s->inv2, K.eps = s->eps, K.wd = s->wd;
    K.gradient = s->gradient, K.lr = s->lr;
    steps_sums S;
    memset(&S, 0, sizeof S);
    S.g_max = splat2(s->g_max);
    S.worst[0] = S.worst[1] = splat2(s->worst);
    for (size_t from = 0; from < n; from += CKPT_HEALTH_CHUNK) {
        size_t to = n - from < CKPT_HEALTH_CHUNK ? n : from + CKPT_HEALTH_CHUNK;
        for (int q = 0; q < 2; q++) S.g_sq[q] = S.dd[q] = S.td[q] = S.tt[q] = S.bb[q] = splat2(0);
        steps_run(&K, &S, s, a, b, from, to, base, wide);
        s->g_sum_sq += sum4(S.g_sq);
        s->dd += sum4(S.dd);
        s->td += sum4(S.td);
        s->tt += sum4(S.tt);
        s->bb += sum4(S.bb);
    }
    s->g_max = max_of2(S.g_max);
    s->worst = max_of2(max2(S.worst[0], S.worst[1]));
    s->g_finite += count2(S.g_finite);
    s->g_zero += count2(S.g_zero);
    s->g_nonfinite += count2(S.g_nonfinite);
    s->weigh += count2(S.weigh);
}

static NOINLINE void steps_chunk32(slot_acc *s, const run_file *a, const run_file *b, size_t n, uint64_t base)
{
    steps_span(s, a, b, n, base, false);
}

static NOINLINE void steps_chunk64(slot_acc *s, const run_file *a, const run_file *b, size_t n, uint64_t base)
{
    steps_span(s, a, b, n, base, true);
}

/* ---- the pass ---- */

static bool is_owner(const ckpt_report *r, uint64_t s)
{
    return s < ckpt_schema_count(r->schema) && ckpt_schema_representative(r->schema, s) == s;
}

/* The slot's size in a readable file, 0 when the file has no slot s. */
static uint64_t slot_size(const run_file *rf, uint64_t s)
{
    const ckpt_schema *sc = rf->rep->schema;
    return s < ckpt_schema_count(sc) ? ckpt_schema_size(sc, (size_t)s, NULL) : 0;
}

/* Set up slot s: what each file reads (its owner entry's moments, its parameters: health's),
 * and every comparable pair's k, its constants and what it compares; return the bytes the
 * slot's pass reads. */
static uint64_t plan_slot(run *r, uint64_t s, slot_acc *acc)
{
    for (size_t f = 0; f < r->n; f++) {
        run_file *rf = &r->files[f];
        rf->e = NULL, rf->read_theta = rf->widen_theta = false;
        if (!rf->readable || s >= ckpt_schema_count(rf->rep->schema)) continue;
        ckpt_error ignored = {0};
        ckpt_error_clear(&ignored);
        /* the file is valid through its entries: an owner's entry is there */
        if (is_owner(rf->rep, s) && ckpt_file_entry(rf->file, s, &rf->e, NULL, &ignored)) rf->e = NULL;
        ckpt_error_clear(&ignored);
        rf->read_theta = rf->state != NULL;
    }
    for (size_t p = 0; p + 1 < r->n; p++) {
        slot_acc *a = &acc[p];
        memset(a, 0, sizeof *a);
        a->first = CKPT_NONE;
        const run_pair *pp = &r->pairs[p];
        run_file *fa = &r->files[p], *fb = &r->files[p + 1];
        /* one layout: both files own slot s or neither does */
        if (!pp->comparable || !fa->e || !fb->e) continue;
        const ckpt_entry_info *ea = fa->e, *eb = fb->e;
        a->count = ea->count;
        a->backwards = eb->step < ea->step;
        a->k = a->backwards ? ea->step - eb->step : eb->step - ea->step;
        if (a->backwards) continue;
        a->active = true;
        if (a->k == 0) continue;
        double k = (double)a->k;
        a->b1k = pow(pp->b1, k);
        a->b2k = pow(pp->b2, k);
        a->omb1 = pp->omb1;
        a->ck = c_k(pp, a->k);
        a->u = pp->u;
        a->nu = pp->nu;
        a->gradient = a->k == 1;
        a->g_limit = DBL_MAX * pp->omb1;
        a->lr = a->k == 1 && pp->lr;
        if (a->lr) {
            double tb = (double)eb->step;
            a->inv1 = 1.0 / (1.0 - pow(pp->b1, tb));
            a->inv2 = 1.0 / (1.0 - pow(pp->b2, tb));
            a->eps = pp->eps;
            a->wd = pp->adamw ? pp->wd : 0;
            a->theta_u = pp->theta_u;
            fa->widen_theta = fb->widen_theta = true;
        }
    }
    uint64_t bytes = 0;
    for (size_t f = 0; f < r->n; f++) {
        const run_file *rf = &r->files[f];
        if (rf->e) bytes += 2 * rf->e->count * rf->width;
        if (rf->read_theta) bytes += slot_size(rf, s) * rf->state_width;
    }
    return bytes;
}

/* Start slot s of each file's health: its owner's moments when it owns them (a tied slot's are
 * its owner's, joined at the end), its parameters when a state file is used. */
static void begin_health(run *r, uint64_t s)
{
    for (size_t f = 0; f < r->n; f++) {
        run_file *rf = &r->files[f];
        if (!rf->readable || s >= ckpt_schema_count(rf->rep->schema)) continue;
        ckpt_health_slot *h = &rf->health[s];
        memset(h, 0, sizeof *h);
        h->count = slot_size(rf, s);
        ckpt_health_moments_begin(&rf->hk, rf->e, &h->mo);
        h->pa.present = rf->read_theta;
    }
}

/* The slot's chunks, every file read once: each chunk feeds the file's health and the pairs. */
static int pass_slot(run *r, uint64_t s, slot_acc *acc)
{
    uint64_t count = 0;
    for (size_t f = 0; f < r->n; f++)
        if ((r->files[f].e || r->files[f].read_theta) && slot_size(&r->files[f], s) > count)
            count = slot_size(&r->files[f], s);
    const size_t chunk = r->chunk;
    for (uint64_t base = 0; base < count; base += chunk) {
        for (size_t f = 0; f < r->n; f++) {
            run_file *rf = &r->files[f];
            if (!rf->e && !rf->read_theta) continue;
            uint64_t len = slot_size(rf, s);
            if (base >= len) continue;
            size_t n = len - base < chunk ? (size_t)(len - base) : chunk;
            ckpt_health_slot *h = &rf->health[s];
            unsigned w = rf->width, tw = rf->state_width;
            if (rf->e) {
                TRY(read_at(rf->src, rf->e->m_offset + base * w, rf->raw_m, n * w, r->err));
                TRY(read_at(rf->src, rf->e->v_offset + base * w, rf->raw_v, n * w, r->err));
                ckpt_health_feed_moments(&rf->hk, rf->raw_m, rf->raw_v, n, &h->mo);
            }
            if (rf->read_theta) {
                TRY(read_at(rf->state_src, rf->state->tensors[s].data_offset + tw * base, rf->raw_theta, tw * n,
                            r->err));
                ckpt_health_feed_params(&rf->hk, rf->raw_theta, n, &h->pa);
                if (rf->widen_theta) widen(rf->raw_theta, tw, rf->theta, n);
            }
            r->done += (uint64_t)n * ((rf->e ? 2 * w : 0) + (rf->read_theta ? tw : 0));
        }
        for (size_t p = 0; p + 1 < r->n; p++) {
            slot_acc *a = &acc[p];
            if (!a->active || base >= a->count) continue;
            uint64_t left = a->count - base;
            size_t n = left < chunk ? (size_t)left : chunk;
            const run_file *fa = &r->files[p], *fb = &r->files[p + 1];
            if (a->k == 0) {
                size_t w = fa->width;
                if (!memcmp(fa->raw_m, fb->raw_m, n * w) && !memcmp(fa->raw_v, fb->raw_v, n * w)) continue;
                for (size_t j = 0; j < n; j++) {
                    if (!memcmp(fa->raw_m + j * w, fb->raw_m + j * w, w) &&
                        !memcmp(fa->raw_v + j * w, fb->raw_v + j * w, w))
                        continue;
                    if (!a->broken) a->first = base + j;
                    a->broken++;
                }
            } else r->steps_chunk[fa->width == 8](a, fa, fb, n, base);
        }
        if (r->progress && r->progress(r->progress_ctx, r->done, r->total))
            return ckpt_fail(r->err, NULL, CKPT_E_CANCELLED, CKPT_NONE, 0, "run pass cancelled");
    }
    return 0;
}

/* ---- the report ---- */

static void j_num_or_null(strbuf *sb, bool present, double x)
{
    if (present) j_double(sb, x);
    else sb_lit(sb, "null");
}

/* The slot's JSON item, and the pair's verdict when this is its first broken slot; its power
 * joins the pair's. */
static void slot_json(run_pair *pp, uint64_t s, const ckpt_entry_info *ea, const ckpt_entry_info *eb, const slot_acc *a,
                      double residual_limit)
{
    strbuf *sb = &pp->slots;
    unsigned long long us = s, ta = ea->step, tb = eb->step;
    /* lr = -<dtheta,d>/<d,d>; residual |dtheta + lr d| / |dtheta| = sqrt(tt - td^2/dd) / sqrt(tt) */
    bool has_lr = a->lr && a->dd > 0, has_residual = has_lr && a->tt > 0;
    double lr = has_lr && a->td != 0 ? -a->td / a->dd : 0;
    double res2 = has_lr ? a->tt - a->td * a->td / a->dd : 0;
    double residual = has_residual ? sqrt(res2 > 0 ? res2 : 0) / sqrt(a->tt) : 0;
    /* what rounding theta to its dtype alone can leave: 10 u |theta_B| / |dtheta| */
    double rounding = has_residual ? 10 * a->theta_u * sqrt(a->bb) / sqrt(a->tt) : 0;
    /* the power: the share of elements where A weighs (k = 0: the bits themselves, all of it) */
    bool has_power = a->active && a->count > 0;
    uint64_t weigh = a->k == 0 ? a->count : a->weigh;
    double power = has_power ? (double)weigh / (double)a->count : 0;
    strbuf msg = {0}, weak = {0};
    if (a->backwards) sb_printf(&msg, "slot %llu: step %llu in B is before step %llu in A", us, tb, ta);
    else if (a->k == 0 && a->broken)
        sb_printf(&msg, "slot %llu: both at step %llu, but the moments differ (first at element %llu)", us, ta,
                  (unsigned long long)a->first);
    else if (a->broken)
        sb_printf(&msg, "slot %llu: %llu elements cannot come from Adam steps %llu\u2192%llu (first at element %llu)",
                  us, (unsigned long long)a->broken, ta, tb, (unsigned long long)a->first);
    else if (has_residual && residual > residual_limit && residual > rounding)
        sb_printf(&msg, "slot %llu: the weights did not move as one Adam step at one learning rate (residual %.3g)", us,
                  residual);
    bool broken = msg.len > 0;
    if (has_power && power < 0.01)
        sb_printf(&weak,
                  "slot %llu: steps %llu\u2192%llu are too far apart to tell (\u03b2"
                  "1^k = %.3g, \u03b2"
                  "2^k = %.3g)",
                  us, ta, tb, a->b1k, a->b2k);
    sb_puts(sb, pp->slot_items++ ? ",{\"slot\":" : "{\"slot\":");
    j_u64(sb, s);
    sb_puts(sb, ",\"stepA\":");
    j_u64(sb, ea->step);
    sb_puts(sb, ",\"stepB\":");
    j_u64(sb, eb->step);
    sb_puts(sb, ",\"k\":");
    /* a JSON number up to 2^53 - 1 in size, a decimal string beyond (as j_u64 does) */
    bool exact = a->k <= (1ULL << 53) - 1;
    sb_printf(sb, exact ? "%s%llu" : "\"%s%llu\"", a->backwards ? "-" : "", (unsigned long long)a->k);
    sb_puts(sb, ",\"broken\":");
    if (a->backwards) sb_lit(sb, "null");
    else j_u64(sb, a->broken);
    sb_puts(sb, ",\"firstBroken\":");
    j_slot(sb, a->broken ? a->first : CKPT_NONE);
    sb_puts(sb, ",\"worst\":");
    j_num_or_null(sb, a->active && a->k >= 1, a->worst);
    sb_puts(sb, ",\"power\":");
    j_num_or_null(sb, has_power, power);
    sb_puts(sb, ",\"message\":");
    if (broken) j_string(sb, msg.failed ? "" : msg.data);
    else sb_lit(sb, "null");
    sb_puts(sb, ",\"cannotTell\":");
    if (weak.len) j_string(sb, weak.failed ? "" : weak.data);
    else sb_lit(sb, "null");
    sb_puts(sb, ",\"gradient\":");
    if (a->gradient) {
        sb_puts(sb, "{\"rms\":");
        j_num_or_null(sb, a->g_finite > 0, a->g_finite ? sqrt(a->g_sum_sq / (double)a->g_finite) / a->omb1 : 0);
        sb_puts(sb, ",\"maxAbs\":");
        j_num_or_null(sb, a->g_finite > 0, a->g_max / a->omb1);
        sb_puts(sb, ",\"nonFinite\":");
        j_u64(sb, a->g_nonfinite);
        sb_puts(sb, ",\"zero\":");
        j_u64(sb, a->g_zero);
        sb_puts(sb, "}");
    } else sb_lit(sb, "null");
    sb_puts(sb, ",\"lr\":");
    j_num_or_null(sb, has_lr, lr);
    sb_puts(sb, ",\"lrResidual\":");
    j_num_or_null(sb, has_residual, residual);
    sb_puts(sb, "}");
    if (broken && pp->continuous) {
        pp->continuous = false;
        sb_puts(&pp->verdict, msg.data);
    }
    if (has_power) {
        pp->weighed = true;
        pp->weigh += weigh, pp->elements += a->count;
        if (!weak.len) pp->tells = true;
        else if (!pp->weak.len) sb_puts(&pp->weak, weak.failed ? "" : weak.data);
    }
    sb_free(&msg);
    sb_free(&weak);
}

/* Can B be compared with A element by element? Sets the verdict when not. */
static int compare_layouts(run *r, size_t p, ckpt_error *err)
{
    run_pair *pp = &r->pairs[p];
    const run_file *fa = &r->files[p], *fb = &r->files[p + 1];
    for (int side = 0; side < 2; side++) {
        const run_file *f = side ? fb : fa;
        if (f->readable) continue;
        pp->continuous = false;
        if (!f->rep) sb_printf(&pp->verdict, "file %zu is not an optimizer checkpoint", p + side);
        else
            sb_printf(&pp->verdict, "file %zu is invalid: %s", p + side,
                      f->rep->error.message ? f->rep->error.message : "");
        return 0;
    }
    ckpt_expected la, lb;
    TRY(ckpt_file_layout(fa->file, &la, err));
    TRY(ckpt_file_layout(fb->file, &lb, err));
    /* the configuration first: another configuration is another run */
    ckpt_expected ca = {NULL, la.dtype, la.config, -1, CKPT_FAMILY_ANY, CKPT_READER_DEFAULT},
                  cb = {NULL, lb.dtype, lb.config, -1, CKPT_FAMILY_ANY, CKPT_READER_DEFAULT};
    char *first;
    if (ckpt_diff_first(&ca, &cb, &pp->config_diff, &first)) return ckpt_fail_oom(err);
    if (!first) {
        free(pp->config_diff);
        pp->config_diff = NULL;
        ckpt_expected sa = {la.schema, CKPT_DTYPE_ANY, NULL, -1, CKPT_FAMILY_ANY, CKPT_READER_DEFAULT},
                      sb = {lb.schema, CKPT_DTYPE_ANY, NULL, -1, CKPT_FAMILY_ANY, CKPT_READER_DEFAULT};
        if (ckpt_diff_first(&sa, &sb, &pp->layout_diff, &first)) return ckpt_fail_oom(err);
        if (!first) {
            free(pp->layout_diff);
            pp->layout_diff = NULL;
        }
    }
    if (first) {
        pp->continuous = false;
        sb_puts(&pp->verdict, first);
        free(first);
        return 0;
    }
    pp->comparable = true;
    pp->lr = fa->state && fb->state;
    pair_config(pp, fa->rep);
    if (pp->lr) pp->theta_u = fb->state->dtype == CKPT_FLOAT64 ? 0x1p-53 : 0x1p-24;
    return 0;
}

static void free_run(run *r)
{
    for (size_t f = 0; f < r->n; f++) {
        run_file *rf = &r->files[f];
        free(rf->raw_m);
        free(rf->raw_v);
        free(rf->raw_theta);
        free(rf->theta);
        free(rf->health);
        ckpt_error_clear(&rf->state_error);
    }
    for (size_t p = 0; p + 1 < r->n; p++) {
        free(r->pairs[p].config_diff);
        free(r->pairs[p].layout_diff);
        sb_free(&r->pairs[p].verdict);
        sb_free(&r->pairs[p].weak);
        sb_free(&r->pairs[p].slots);
    }
    free(r->files);
    free(r->pairs);
}

/* Progress while the state files pair: nothing of the pass is done yet (its size is not known
 * before), but a cancel is honoured. */
static int pairing_progress(void *ctx, uint64_t done, uint64_t total)
{
    const run *r = ctx;
    (void)done, (void)total;
    return r->progress && r->progress(r->progress_ctx, 0, 0);
}

/* File f's model-state file, used when health would use it (it pairs); another family or an
 * invalid file is the file's stateError, a failure to read one the run's. */
static int use_state(run *r, run_file *rf, const ckpt_file *state)
{
    bool pairs;
    ckpt_error why = {0};
    ckpt_error_clear(&why);
    ckpt_error_clear(&rf->state_error);
    int rc = ckpt_health_state(rf->file, state, pairing_progress, r, &pairs, &why, &rf->state_error);
    if (rc) {
        ckpt_error_clear(&why);
        int code = rf->state_error.code;
        if (code == CKPT_E_WRONG_FAMILY || code == CKPT_E_NOT_READABLE) return 0;
        ckpt_error_move(r->err, &rf->state_error);
        return -1;
    }
    if (pairs) {
        rf->state = ckpt_file_report(state);
        rf->state_src = ckpt_file_source(state);
        rf->state_width = ckpt_width(rf->state->dtype);
    } else if (why.code) {
        ckpt_error_move(&rf->state_error, &why); /* why it does not pair: the file's stateError */
    }
    ckpt_error_clear(&why);
    return 0;
}

static int setup(run *r, const ckpt_file *const *opt, const ckpt_file *const *state)
{
    r->chunk = r->n <= FEW_FILES ? CHUNK_FEW : CHUNK;
    r->steps_chunk[0] = steps_chunk32;
    r->steps_chunk[1] = steps_chunk64;
    for (size_t f = 0; f < r->n; f++) {
        run_file *rf = &r->files[f];
        const ckpt_report *rep = ckpt_file_report(opt[f]);
        rf->file = opt[f];
        rf->src = ckpt_file_source(opt[f]);
        ckpt_error_clear(&rf->state_error);
        if (!ckpt_family_has_role(rep->family, CKPT_ROLE_OPTIMIZER)) continue;
        rf->rep = rep;
        rf->readable = rep->error.code == 0;
        if (!rf->readable) continue;
        rf->width = ckpt_width(rep->dtype);
        if (state && state[f]) TRY(use_state(r, rf, state[f]));
        ckpt_health_kernel_init(&rf->hk, rep, rf->state);
        size_t c = r->chunk, slots = ckpt_schema_count(rep->schema);
        rf->raw_m = malloc(c * 8);
        rf->raw_v = malloc(c * 8);
        rf->raw_theta = malloc(c * 8);
        rf->theta = malloc(c * sizeof(double));
        rf->health = calloc(slots ? slots : 1, sizeof *rf->health);
        if (!rf->raw_m || !rf->raw_v || !rf->raw_theta || !rf->theta || !rf->health) return ckpt_fail_oom(r->err);
    }
    for (size_t p = 0; p + 1 < r->n; p++) {
        r->pairs[p].continuous = true;
        TRY(compare_layouts(r, p, r->err));
    }
    return 0;
}

static uint64_t max_step(const ckpt_report *rep)
{
    uint64_t m = 0;
    for (size_t k = 0; k < rep->entries_len; k++)
        if (rep->entries[k].step > m) m = rep->entries[k].step;
    return m;
}

static int cmp_double(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

/* A readable file's health summary: the flags health raises on its slots, how many of them are
 * warnings (the ratio band's: they do not break the run), and the median of their
 * update-to-weight ratios (NAN when no slot has one). */
static int file_health(const run_file *rf, double lr, ckpt_ratio_band band, uint64_t *flags, uint64_t *warnings,
                       double *median, ckpt_error *err)
{
    const ckpt_schema *sc = rf->rep->schema;
    size_t n = ckpt_schema_count(sc), k = 0;
    double *ratios = malloc((n ? n : 1) * sizeof *ratios);
    if (!ratios) return ckpt_fail_oom(err);
    *flags = *warnings = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t owner = ckpt_schema_representative(sc, i);
        ckpt_health_slot h = rf->health[i];
        if (owner != CKPT_NONE && owner < n) h.mo = rf->health[owner].mo; /* a tied slot's moments are its owner's */
        double ratio;
        size_t slot_warnings;
        *flags += ckpt_health_slot_flags(&h, i, owner, lr, band.low, band.high, &ratio, &slot_warnings);
        *warnings += slot_warnings;
        if (isfinite(ratio)) ratios[k++] = ratio;
    }
    qsort(ratios, k, sizeof *ratios, cmp_double);
    *median = !k ? NAN : k % 2 ? ratios[k / 2] : (ratios[k / 2 - 1] + ratios[k / 2]) / 2;
    free(ratios);
    return 0;
}

static char *run_json(run *r, double lr, ckpt_ratio_band band, ckpt_error *err)
{
    strbuf sb = {0};
    uint64_t first = CKPT_NONE;
    sb_putc(&sb, '{');
    ckpt_health_band_json(&sb, band);
    sb_puts(&sb, ",\"files\":[");
    for (size_t f = 0; f < r->n; f++) {
        const run_file *rf = &r->files[f];
        uint64_t flags = 0, warnings = 0;
        double median = NAN;
        if (rf->readable && file_health(rf, lr, band, &flags, &warnings, &median, err)) {
            sb_free(&sb);
            return NULL;
        }
        if ((!rf->readable || flags > warnings) && first == CKPT_NONE) first = f;
        if (f) sb_putc(&sb, ',');
        sb_printf(&sb, "{\"index\":%zu,\"ok\":%s,\"step\":", f, rf->readable ? "true" : "false");
        if (rf->readable) j_u64(&sb, max_step(rf->rep));
        else sb_lit(&sb, "null");
        sb_printf(&sb, ",\"stateUsed\":%s,\"stateError\":", rf->state ? "true" : "false");
        if (rf->state_error.code) j_string(&sb, rf->state_error.message ? rf->state_error.message : "");
        else sb_lit(&sb, "null");
        sb_puts(&sb, ",\"health\":");
        if (rf->readable) {
            sb_puts(&sb, "{\"flags\":");
            j_u64(&sb, flags);
            sb_puts(&sb, ",\"warnings\":");
            j_u64(&sb, warnings);
            sb_puts(&sb, ",\"ratio\":");
            j_num_or_null(&sb, !isnan(median), median);
            sb_putc(&sb, '}');
        } else sb_lit(&sb, "null");
        sb_puts(&sb, ",\"error\":");
        if (rf->rep) j_error(&sb, &rf->rep->error);
        else sb_lit(&sb, "null");
        sb_putc(&sb, '}');
    }
    sb_puts(&sb, "],\"pairs\":[");
    size_t cannot_tell = 0;
    for (size_t p = 0; p + 1 < r->n; p++) {
        const run_pair *pp = &r->pairs[p];
        if (!pp->continuous && (first == CKPT_NONE || p + 1 < first)) first = p + 1;
        /* none of its slots can tell: neither continuous nor broken */
        bool weak = pp->continuous && pp->weighed && !pp->tells;
        cannot_tell += weak;
        if (p) sb_putc(&sb, ',');
        sb_printf(&sb, "{\"a\":%zu,\"b\":%zu,\"continuous\":%s,\"verdict\":", p, p + 1,
                  weak             ? "null"
                  : pp->continuous ? "true"
                                   : "false");
        if (weak) j_string(&sb, pp->weak.failed || !pp->weak.data ? "" : pp->weak.data);
        else if (pp->continuous) sb_lit(&sb, "null");
        else j_string(&sb, pp->verdict.failed || !pp->verdict.data ? "" : pp->verdict.data);
        sb_puts(&sb, ",\"power\":");
        j_num_or_null(&sb, pp->elements > 0, pp->elements ? (double)pp->weigh / (double)pp->elements : 0);
        sb_puts(&sb, ",\"configDiff\":");
        sb_puts(&sb, pp->config_diff ? pp->config_diff : "null");
        sb_puts(&sb, ",\"layoutDiff\":");
        sb_puts(&sb, pp->layout_diff ? pp->layout_diff : "null");
        sb_puts(&sb, ",\"slots\":[");
        if (pp->slots.data) sb_puts(&sb, pp->slots.data);
        if (pp->slots.failed) sb.failed = true;
        sb_puts(&sb, "]}");
    }
    sb_printf(&sb, "],\"ok\":%s,\"cannotTell\":%zu,\"first\":", first == CKPT_NONE && !cannot_tell ? "true" : "false",
              cannot_tell);
    j_slot(&sb, first);
    sb_putc(&sb, '}');
    char *json = sb_take(&sb);
    if (!json) ckpt_fail_oom(err);
    return json;
}

char *ckpt_run_json(const ckpt_file *const *opt, const ckpt_file *const *state, size_t n, const ckpt_run_options *o,
                    ckpt_error *err)
{
    run r = {0};
    r.n = n;
    r.err = err;
    r.progress = o ? o->progress : NULL;
    r.progress_ctx = o ? o->progress_ctx : NULL;
    r.residual_limit = o && o->residual_limit > 0 ? o->residual_limit : CKPT_RESIDUAL_LIMIT;
    double lr = o && o->lr > 0 ? o->lr : NAN;
    ckpt_ratio_band band;
    if (ckpt_health_band(o && o->ratio_band, o ? o->ratio_low : 0, o ? o->ratio_high : 0, &band, err)) return NULL;
    r.files = calloc(n ? n : 1, sizeof *r.files);
    r.pairs = calloc(n ? n : 1, sizeof *r.pairs);
    slot_acc *acc = calloc(n ? n : 1, sizeof *acc);
    int rc = r.files && r.pairs && acc ? setup(&r, opt, state) : ckpt_fail_oom(err);
    /* every slot of any readable file */
    uint64_t slots = 0;
    for (size_t f = 0; f < n && !rc; f++)
        if (r.files[f].readable && ckpt_schema_count(r.files[f].rep->schema) > slots)
            slots = ckpt_schema_count(r.files[f].rep->schema);
    for (uint64_t s = 0; s < slots && !rc; s++) r.total += plan_slot(&r, s, acc);
    for (uint64_t s = 0; s < slots && !rc; s++) {
        plan_slot(&r, s, acc);
        begin_health(&r, s);
        if ((rc = pass_slot(&r, s, acc))) break;
        for (size_t p = 0; p + 1 < n; p++) {
            run_pair *pp = &r.pairs[p];
            const run_file *fa = &r.files[p], *fb = &r.files[p + 1];
            if (pp->comparable && fa->e && fb->e) slot_json(pp, s, fa->e, fb->e, &acc[p], r.residual_limit);
        }
    }
    char *json = rc ? NULL : run_json(&r, lr, band, err);
    free(acc);
    if (r.files && r.pairs) free_run(&r);
    else {
        free(r.files);
        free(r.pairs);
    }
    return json;
}

/* ---- the gradient of a one-step pair, exported ---- */

/* A source whose bytes at B's m offsets are the gradients of those entries' elements: the
 * exporter's writers stream it as they stream a payload. */
typedef struct grad_source {
    const ckpt_file *a, *b;
    const ckpt_report *rb;
    double b1, omb1;
    unsigned width;
    uint8_t *raw_a, *raw_b; /* CHUNK_FEW * width */
    double *ma, *mb;
} grad_source;

static size_t grad_read(void *ctx, uint64_t offset, void *buf, size_t n)
{
    grad_source *g = ctx;
    const unsigned w = g->width;
    /* the entry of B whose m holds offset (entries are in file order: ascending offsets) */
    size_t lo = 0, hi = g->rb->entries_len;
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if (g->rb->entries[mid].m_offset <= offset) lo = mid;
        else hi = mid;
    }
    const ckpt_entry_info *eb = hi ? &g->rb->entries[lo] : NULL, *ea;
    ckpt_error err = {0};
    ckpt_error_clear(&err);
    if (!eb || offset < eb->m_offset || (offset - eb->m_offset) % w || n % w ||
        (offset - eb->m_offset) / w + n / w > eb->count || ckpt_file_entry(g->a, eb->id, &ea, NULL, &err)) {
        ckpt_error_clear(&err);
        return CKPT_READ_ERROR;
    }
    uint64_t first = (offset - eb->m_offset) / w;
    size_t total = n / w;
    for (size_t done = 0; done < total;) {
        size_t k = total - done < CHUNK_FEW ? total - done : CHUNK_FEW;
        uint64_t at = (first + done) * w;
        if (read_at(ckpt_file_source(g->a), ea->m_offset + at, g->raw_a, k * w, &err) ||
            read_at(ckpt_file_source(g->b), eb->m_offset + at, g->raw_b, k * w, &err)) {
            ckpt_error_clear(&err);
            return CKPT_READ_ERROR;
        }
        widen(g->raw_a, w, g->ma, k);
        widen(g->raw_b, w, g->mb, k);
        uint8_t *dst = (uint8_t *)buf + done * w;
        for (size_t j = 0; j < k; j++) {
            double x = gradient_of(g->mb[j] - g->b1 * g->ma[j], g->omb1);
            if (w == 8) memcpy(dst + 8 * j, &x, 8);
            else {
                float f = (float)x;
                memcpy(dst + 4 * j, &f, 4);
            }
        }
        done += k;
    }
    return n;
}

int ckpt_run_export_gradient(const ckpt_file *a, const ckpt_file *b, const ckpt_export_options *o, const ckpt_sink *out,
                             ckpt_error *err)
{
    if (!a || !b || !o || !out)
        return ckpt_fail(err, NULL, CKPT_E_INVALID_ARGUMENT, CKPT_NONE, 0, "invalid arguments to the exporter");
    const ckpt_file *files[2] = {a, b};
    run r = {0};
    r.n = 2;
    r.err = err;
    r.files = calloc(2, sizeof *r.files);
    r.pairs = calloc(2, sizeof *r.pairs);
    int rc = r.files && r.pairs ? setup(&r, files, NULL) : ckpt_fail_oom(err);
    if (!rc && !r.pairs[0].comparable)
        rc = ckpt_fail(err, NULL, CKPT_E_INVALID_ARGUMENT, CKPT_NONE, 0, "no gradient: B does not continue A (%s)",
                       r.pairs[0].verdict.data ? r.pairs[0].verdict.data : "");
    /* the owner slots one Adam step apart, of those asked for */
    const ckpt_report *ra = rc ? NULL : ckpt_file_report(a), *rb = rc ? NULL : ckpt_file_report(b);
    uint64_t *slots = rc ? NULL : malloc((rb->entries_len ? rb->entries_len : 1) * sizeof *slots);
    size_t count = 0;
    if (!rc && !slots) rc = ckpt_fail_oom(err);
    for (size_t k = 0; !rc && k < rb->entries_len; k++) {
        const ckpt_entry_info *eb = &rb->entries[k], *ea;
        if (ckpt_file_entry(a, eb->id, &ea, NULL, err)) {
            rc = err->code;
            break;
        }
        bool wanted = !o->slots;
        for (size_t q = 0; o->slots && q < o->slot_count; q++) wanted |= o->slots[q] == eb->id;
        if (wanted && eb->step > ea->step && eb->step - ea->step == 1) slots[count++] = eb->id;
    }
    if (!rc && !count)
        rc = ckpt_fail(err, NULL, CKPT_E_INVALID_ARGUMENT, CKPT_NONE, 0,
                       "no slot is one Adam step from A to B: the gradient comes back from a one-step pair only");
    if (!rc) {
        grad_source g = {a, b, rb, r.pairs[0].b1, r.pairs[0].omb1, ckpt_width(ra->dtype), NULL, NULL, NULL, NULL};
        g.raw_a = malloc(CHUNK_FEW * 8), g.raw_b = malloc(CHUNK_FEW * 8);
        g.ma = malloc(CHUNK_FEW * sizeof(double)), g.mb = malloc(CHUNK_FEW * sizeof(double));
        ckpt_source src = {&g, grad_read, CKPT_NONE};
        ckpt_export_options with = *o;
        with.slots = slots, with.slot_count = count;
        rc = g.raw_a && g.raw_b && g.ma && g.mb ? ckpt_export_computed(b, &src, ".grad", &with, out, err)
                                                : ckpt_fail_oom(err);
        free(g.raw_a), free(g.raw_b), free(g.ma), free(g.mb);
    }
    free(slots);
    if (r.files && r.pairs) free_run(&r);
    else free(r.files), free(r.pairs);
    return rc;
}
