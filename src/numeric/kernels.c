/* The element loops of health and runs (numeric.h). Both are lane-wise in blocks of LANES
 * (lanes.h); each is inlined once per moment width into a function of its own, called through a
 * pointer. */
#include "numeric/numeric.h"
#include "numeric/lanes.h"

#include <float.h>
#include <math.h>
#include <string.h>

#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF /* no fused multiply-add: every build gives the same bits */
#endif

/* ======== health: the moments and the parameters of one chunk ======== */

#define MARGIN 1e-3 /* relative slack of the consistency bound (health.c) */

/* The element loops. Elements go in blocks of LANES (lanes.h): every block, whatever its contents,
 * is computed lane-wise and branch-free, with its non-finite elements (and, for the moments, a
 * negative v) masked out of the sums, maxima and counts; only a block holding one is then read
 * again, element by element, to count what it holds. The sums add element j of a chunk into lane
 * j % LANES and the lanes in one fixed tree at the chunk's end (chunks start every
 * CKPT_HEALTH_CHUNK elements from the slot's start), so health, a run and any number of workers
 * give the same bits in every build; counts and maxima are exact whatever the order.
 *
 * The moments' consistency bound |m| > c sqrt(max(v, floor)) (1 + MARGIN) needs a second square
 * root per element. The step's own root d = sqrt(v inv2) gives it to within a few units of 2^-53
 * (sqrt(v) = d / sqrt(inv2)), so a block is decided from d when every element is either below
 * the estimate less 2^-40 of it or above it plus 2^-40; a block with an element in between (or
 * out of the range where that error bound holds) takes the bound's own root, as written.
 *
 * The loops are written once and inlined into one function per width (`wide` a constant there).
 * A chunk is a function call of its own (not inlined into the slot's loop) because V8 moves a
 * WebAssembly function to its optimizing tier only on a later call: a loop over a whole 32 MiB
 * slot would run in the baseline tier to its end. They are called through pointers
 * (kernel.moments_chunk, kernel.params_chunk): Binaryen inlines a function with one call site
 * whatever the C says, and cannot inline an indirect call. */
#define SCREEN 0x1p-40   /* the relative band around the estimated bound taken as undecided */
#define SCREEN_K 0x1p200 /* the estimate is taken when inv2 <= 2^200 and 2^-200 <= c1 <= 2^200 */

/* What a chunk gathers: sums per lane (element j in lane j % LANES); counts and maxima in any
 * lane (a count is minus the sum of its masks). */
typedef struct moments_acc {
    v2d sq[2], max;
    v2i finite, never, inconsistent;
} moments_acc;

/* A chunk's constants. */
typedef struct moments_consts {
    double inv1, inv2, eps, floor, c, margin;
    bool check;  /* c > 0: the bound exists */
    bool screen; /* ... and its estimate from d holds to a few units of 2^-53 */
    double c1;   /* c (1 + MARGIN) / sqrt(inv2): the bound is about c1 d */
} moments_consts;

static inline double element(const uint8_t *p, size_t j, bool wide)
{
    return wide ? ((const double *)(const void *)p)[j] : ((const float *)(const void *)p)[j];
}

/* The non-finite values and negative v of a block's bad lanes, counted as the rules say. The
 * vectors come by value: a local whose address a call takes lives in memory in the hot loop. */
static NOINLINE void count_bad_moments(v2d m0, v2d m1, v2d v0, v2d v1, v2i bad0, v2i bad1, ckpt_health_moments *h)
{
    const v2d m[2] = {m0, m1}, v[2] = {v0, v1};
    const v2i bad[2] = {bad0, bad1};
    for (int l = 0; l < LANES; l++) {
        if (!bad[l >> 1][l & 1]) continue;
        double x = m[l >> 1][l & 1], y = v[l >> 1][l & 1];
        if (isnan(x)) h->nan++;
        else if (isinf(x)) h->inf++;
        if (isnan(y)) h->nan++;
        else if (isinf(y)) h->inf++;
        else if (y < 0) h->v_negative++;
    }
}

/* The lanes whose elements the rules compute with: m finite, v finite and not negative. */
static inline v2i usable(v2d m, v2d v)
{
    const v2d inf = splat2(INFINITY);
    return lt2(abs2(m), inf) & le2(splat2(0), v) & lt2(v, inf);
}

/* The consistency bound over a block's lanes `use` (masks): their elements with |m| beyond it,
 * as a count mask. Decided from the estimate c1 d (within a few units of 2^-53 of the bound where
 * v > floor, and at most the bound c sqrt(floor) (1 + MARGIN) where v <= floor): |m| at or below
 * it less 2^-40 of it is within; above it plus 2^-40 (v > floor) beyond; else undecided, and
 * then, for the whole block, its own root decides, as the rule is written. An infinite estimate
 * (float64 moments: v inv2 overflows) decides nothing. */
static inline ALWAYS_INLINE v2i beyond_bound(const moments_consts *K, const v2d m[2], const v2d v[2], const v2d d[2],
                                             const v2i use[2], bool wide)
{
    const v2d inf = splat2(INFINITY);
    v2i beyond[2], undecided = {0, 0};
    if (K->screen)
        for (int q = 0; q < 2; q++) {
            v2d am = abs2(m[q]), est = d[q] * K->c1;
            v2i within = le2(am, est * (1 - SCREEN));
            if (wide) within &= lt2(est, inf);
            beyond[q] = lt2(est * (1 + SCREEN), am) & lt2(splat2(K->floor), v[q]);
            undecided |= ~(within | beyond[q]) & use[q];
        }
    if (!K->screen || any2(undecided))
        for (int q = 0; q < 2; q++) {
            v2d vf = select2(lt2(splat2(K->floor), v[q]), v[q], splat2(K->floor));
            beyond[q] = lt2(K->c * sqrt2(vf) * K->margin, abs2(m[q]));
        }
    return (beyond[0] & use[0]) + (beyond[1] & use[1]);
}

/* One block of LANES elements, `good` the lanes to compute with: a block that moments_fast
 * leaves (a NaN, an infinity or a negative v among its elements), and the tail. */
static inline ALWAYS_INLINE void moments_block(const moments_consts *K, const v2d mr[2], const v2d vr[2],
                                               const v2i good[2], moments_acc *a, bool wide)
{
    const v2d inf = splat2(INFINITY);
    v2d m[2], v[2], d[2], u[2];
    for (int q = 0; q < 2; q++) {
        m[q] = keep2(good[q], mr[q]); /* a lane left out computes with m = v = 0, and adds nothing */
        v[q] = keep2(good[q], vr[q]);
        d[q] = sqrt2(v[q] * K->inv2);
        u[q] = abs2((m[q] * K->inv1) / (d[q] + K->eps));
    }
    v2i finite[2];
    for (int q = 0; q < 2; q++) {
        finite[q] = lt2(u[q], inf) & good[q];
        u[q] = keep2(finite[q], u[q]);
        a->sq[q] += u[q] * u[q];
    }
    a->max = max2(max2(u[0], u[1]), a->max);
    a->finite += finite[0] + finite[1];
    a->never += (eq2(v[0], splat2(0)) & good[0]) + (eq2(v[1], splat2(0)) & good[1]);
    if (K->check) a->inconsistent += beyond_bound(K, m, v, d, good, wide);
}

/* The usual block, all of whose elements the rules compute with: false, with nothing gathered,
 * when one is not (its step or v inv2 is not finite: a NaN, an infinity or a negative v among
 * them, or a finite one whose arithmetic overflows); the masked block then takes it. */
static inline ALWAYS_INLINE bool moments_fast(const moments_consts *K, const v2d m[2], const v2d v[2], moments_acc *a,
                                              bool wide)
{
    const v2d inf = splat2(INFINITY);
    v2d d[2], u[2], vi[2];
    for (int q = 0; q < 2; q++) {
        vi[q] = v[q] * K->inv2;
        d[q] = sqrt2(vi[q]); /* NaN for a negative v */
        u[q] = abs2((m[q] * K->inv1) / (d[q] + K->eps));
    }
    if (!all2(lt2(u[0], inf) & lt2(u[1], inf) & lt2(abs2(vi[0]), inf) & lt2(abs2(vi[1]), inf))) return false;
    for (int q = 0; q < 2; q++) a->sq[q] += u[q] * u[q];
    a->max = max2(max2(u[0], u[1]), a->max);
    a->finite += ALL2 + ALL2;
    a->never += eq2(v[0], splat2(0)) + eq2(v[1], splat2(0));
    if (K->check) a->inconsistent += beyond_bound(K, m, v, d, (const v2i[2]){ALL2, ALL2}, wide);
    return true;
}

static inline ALWAYS_INLINE void moments_span(const ckpt_health_kernel *k, const uint8_t *pm, const uint8_t *pv,
                                              size_t n, ckpt_health_moments *h, bool wide)
{
    moments_consts K = {h->inv1, h->inv2, k->eps, k->v_floor, k->c, 1 + MARGIN, k->c > 0, false, 0};
    K.c1 = K.c * K.margin / sqrt(K.inv2);
    /* v >= the smallest normal and inv2 >= 1 keep v inv2 normal; c1 within 2^-200..2^200 keeps
     * c1 d normal (d >= 2^-511), and finite for float32 moments */
    K.screen = K.check && K.inv2 >= 1 && K.inv2 <= SCREEN_K && K.c1 >= 1 / SCREEN_K && K.c1 <= SCREEN_K;
    moments_acc a;
    memset(&a, 0, sizeof a);
    a.max = splat2(h->u_max);
    size_t full = n - n % LANES;
    for (size_t j = 0; j < full; j += LANES) {
        v2d m[2], v[2];
        load4(pm, j, wide, m);
        load4(pv, j, wide, v);
        if (moments_fast(&K, m, v, &a, wide)) continue;
        const v2i ok[2] = {usable(m[0], v[0]), usable(m[1], v[1])};
        count_bad_moments(m[0], m[1], v[0], v[1], ~ok[0], ~ok[1], h);
        moments_block(&K, m, v, ok, &a, wide);
    }
    if (full < n) { /* the tail, as a block with its missing lanes left out */
        v2d m[2] = {{0}}, v[2] = {{0}};
        v2i valid[2] = {{0}};
        for (size_t j = full; j < n; j++) {
            size_t l = j - full;
            m[l >> 1][l & 1] = element(pm, j, wide);
            v[l >> 1][l & 1] = element(pv, j, wide);
            valid[l >> 1][l & 1] = -1;
        }
        const v2i ok[2] = {usable(m[0], v[0]), usable(m[1], v[1])};
        const v2i good[2] = {ok[0] & valid[0], ok[1] & valid[1]};
        count_bad_moments(m[0], m[1], v[0], v[1], valid[0] & ~ok[0], valid[1] & ~ok[1], h);
        moments_block(&K, m, v, good, &a, wide);
    }
    h->u_sum_sq += sum4(a.sq);
    h->u_max = max_of2(a.max);
    h->u_finite += count2(a.finite);
    h->never_updated += count2(a.never);
    h->inconsistent += count2(a.inconsistent);
}

NOINLINE void ckpt_kernel_moments32(const ckpt_health_kernel *k, const uint8_t *m, const uint8_t *v, size_t n,
                                    ckpt_health_moments *h)
{
    moments_span(k, m, v, n, h, false);
}

NOINLINE void ckpt_kernel_moments64(const ckpt_health_kernel *k, const uint8_t *m, const uint8_t *v, size_t n,
                                    ckpt_health_moments *h)
{
    moments_span(k, m, v, n, h, true);
}

/* The parameters' part of one chunk (a call of its own for the same reason). */
static NOINLINE void count_bad_params(v2d x0, v2d x1, v2i bad0, v2i bad1, ckpt_health_param *h)
{
    const v2d x[2] = {x0, x1};
    const v2i bad[2] = {bad0, bad1};
    for (int l = 0; l < LANES; l++)
        if (bad[l >> 1][l & 1]) {
            if (isnan(x[l >> 1][l & 1])) h->nan++;
            else h->inf++;
        }
}

static inline ALWAYS_INLINE void params_block(const v2d xr[2], const v2i valid[2], v2d sq[2], v2d *max, v2i *finite,
                                              ckpt_health_param *h)
{
    const v2d inf = splat2(INFINITY);
    v2i good[2], bad[2];
    v2d x[2];
    for (int q = 0; q < 2; q++) {
        v2i ok = lt2(abs2(xr[q]), inf);
        good[q] = ok & valid[q];
        bad[q] = valid[q] & ~ok;
        x[q] = keep2(good[q], abs2(xr[q]));
        sq[q] += x[q] * x[q];
    }
    if (any2(bad[0] | bad[1])) count_bad_params(xr[0], xr[1], bad[0], bad[1], h);
    *max = max2(max2(x[0], x[1]), *max);
    *finite += good[0] + good[1];
}

static inline ALWAYS_INLINE void params_span(const uint8_t *theta, size_t n, ckpt_health_param *h, bool wide)
{
    v2d sq[2] = {{0}}, max = splat2(h->max);
    v2i finite = {0, 0};
    const v2i all[2] = {ALL2, ALL2};
    size_t full = n - n % LANES;
    for (size_t j = 0; j < full; j += LANES) {
        v2d x[2];
        load4(theta, j, wide, x);
        params_block(x, all, sq, &max, &finite, h);
    }
    if (full < n) {
        v2d x[2] = {{0}};
        v2i valid[2] = {{0}};
        for (size_t j = full; j < n; j++) {
            size_t l = j - full;
            x[l >> 1][l & 1] = element(theta, j, wide);
            valid[l >> 1][l & 1] = -1;
        }
        params_block(x, valid, sq, &max, &finite, h);
    }
    h->sum_sq += sum4(sq);
    h->max = max_of2(max);
    h->finite += count2(finite);
}

NOINLINE void ckpt_kernel_params32(const uint8_t *theta, size_t n, ckpt_health_param *h)
{
    params_span(theta, n, h, false);
}

NOINLINE void ckpt_kernel_params64(const uint8_t *theta, size_t n, ckpt_health_param *h)
{
    params_span(theta, n, h, true);
}

/* ======== runs: the steps of one pair ======== */

typedef ckpt_steps_slot slot_acc;
/* ---- the element loops ---- */

/* The moments are compared from their stored width (element()); parameters, rarer, widened. */

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
    /* a step that overflows from finite values (Δm or Δv infinite) is no step: no finite v bounds it */
    v2i broken[2];
    for (int q = 0; q < 2; q++)
        broken[q] = (lt2(dv[q], -tv[q]) | out[q] | ~(lt2(adm[q], inf) & lt2(abs2(dv[q]), inf))) & ok[q];
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
static inline ALWAYS_INLINE void steps_run(const steps_consts *K, steps_sums *S, slot_acc *s, const ckpt_steps_in *a,
                                           const ckpt_steps_in *b, size_t from, size_t to, uint64_t base, bool wide)
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

static inline ALWAYS_INLINE void steps_span(slot_acc *s, const ckpt_steps_in *a, const ckpt_steps_in *b, size_t n,
                                            uint64_t base, bool wide)
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

NOINLINE void ckpt_kernel_steps32(slot_acc *s, const ckpt_steps_in *a, const ckpt_steps_in *b, size_t n, uint64_t base)
{
    steps_span(s, a, b, n, base, false);
}

NOINLINE void ckpt_kernel_steps64(slot_acc *s, const ckpt_steps_in *a, const ckpt_steps_in *b, size_t n, uint64_t base)
{
    steps_span(s, a, b, n, base, true);
}
