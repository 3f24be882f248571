/* Checkpoints of one run (docs/runs.md): continuity of each consecutive pair per slot, the
 * gradient of a one-step pair, and with the model-state files the learning rate of that step.
 *
 * Per owner slot, with A at step tA and B at tB = tA + k, from the stored values in binary64:
 *   dm = m_B - b1^k m_A,  dv = v_B - b2^k v_A,  c_k = (1-b1)/sqrt(1-b2) * sqrt(sum_{i<k} rho^i),
 * rho = b1^2/b2, b and 1-b each the stored binary64 rounded once to the moments' dtype; an
 * element breaks when dv < -tv or |dm| > c_k sqrt(max(dv,0) + tv) + tm (the tolerances of
 * docs/runs.md), or when dm or dv overflows from finite values. k = 1: g = dm / (1-b1);
 * lr = -<dtheta,d>/<d,d>, d = m^_B/(sqrt(v^_B)+eps) (+ wd theta_A for AdamW), bias corrections
 * at tB.
 *
 * One pass over every file at once: for each slot, chunk by chunk, each file's payload chunk is
 * read once and serves both pairs it belongs to and the file's own health (health.c's
 * accumulation, fed the same chunks). Memory: a few chunks per file, and per file one health
 * accumulator per slot. */
#include "analyses/analyses.h"

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
    ckpt_item it;             /* its item: the moments' payloads (a DeepSpeed parameter's fragments) */
    /* no state file: the parameters are the optimizer's own fp32 master weights (a DeepSpeed
     * checkpoint's, its items' unnamed payloads), as health reads them */
    bool own_theta;
    const ckpt_payload *theta_payload; /* the current slot's master weights, NULL: none */
    bool read_theta;                   /* its parameters are read this slot (health) */
    bool widen_theta;                  /* ... and go into a learning rate */
    ckpt_health_kernel hk;
    ckpt_health_slot *health; /* one per slot: its owner's moments, its own parameters */
} run_file;

typedef ckpt_steps_slot slot_acc; /* one slot of one pair (numeric.h) */

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
    uint64_t verdict_slot;            /* the slot the verdict is about, CKPT_NONE when none */
    uint64_t weak_slot;               /* the slot of `weak` */
    bool weighed;                     /* a slot of the pair has a power */
    uint64_t weigh, elements;         /* the pair's power: weigh / elements */
    uint64_t telling;                 /* weighing elements in the slots that can tell */
    uint64_t weak_slots;              /* slots that cannot tell (power below 1%) */
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
     * in the baseline tier to its end (see kernels.c) */
    void (*steps_chunk[2])(slot_acc *, const ckpt_steps_in *, const ckpt_steps_in *, size_t, uint64_t);
} run;

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

/* The pair's constants from A's configuration `c` (the report's, or slot s's: plan_slot). */
static void pair_config(run_pair *p, const ckpt_report *r, const ckpt_config *c)
{
    double b1 = ckpt_double_from_bits(c->beta1), b2 = ckpt_double_from_bits(c->beta2);
    p->b1 = in_dtype(b1, r->dtype);
    p->b2 = in_dtype(b2, r->dtype);
    p->omb1 = in_dtype(1.0 - b1, r->dtype);
    p->omb2 = in_dtype(1.0 - b2, r->dtype);
    p->u = r->dtype == CKPT_FLOAT64 ? 0x1p-53 : 0x1p-24;
    p->nu = r->dtype == CKPT_FLOAT64 ? DBL_MIN : FLT_MIN;
    p->adamw = c->kind == CKPT_ADAMW;
    p->eps = in_dtype(ckpt_double_from_bits(c->epsilon), r->dtype);
    p->wd = ckpt_double_from_bits(c->weight_decay);
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
        /* the file is valid through its entries: an owner's entry is there (a tied slot's is its
         * owner's: its master weights are the owner's, as health reads them) */
        const ckpt_entry_info *owner = NULL;
        rf->theta_payload = NULL;
        if (ckpt_file_entry(rf->file, s, &owner, NULL, &ignored)) owner = NULL;
        ckpt_error_clear(&ignored);
        if (owner) {
            rf->it = ckpt_report_item(rf->rep, (size_t)(owner - rf->rep->entries));
            for (size_t q = 0; rf->own_theta && q < rf->it.payloads; q++)
                if (!*rf->it.payload[q].name) rf->theta_payload = &rf->it.payload[q];
            /* an entry saved before its first step holds no moments (a DeepSpeed group's) */
            if (is_owner(rf->rep, s) && rf->it.payloads >= 2 && !strcmp(rf->it.payload[0].name, "exp_avg"))
                rf->e = owner;
        }
        rf->read_theta = rf->state != NULL || rf->theta_payload != NULL;
    }
    for (size_t p = 0; p + 1 < r->n; p++) {
        slot_acc *a = &acc[p];
        memset(a, 0, sizeof *a);
        a->first = CKPT_NONE;
        const run_pair *pair = &r->pairs[p];
        run_file *fa = &r->files[p], *fb = &r->files[p + 1];
        /* one layout: both files own slot s or neither does */
        if (!pair->comparable || !fa->e || !fb->e) continue;
        /* the slot's configuration (one for every slot when the family keeps one) */
        run_pair slot_cfg = *pair;
        const ckpt_config *cfg = ckpt_config_of_slot(fa->rep, s);
        if (cfg) pair_config(&slot_cfg, fa->rep, cfg);
        const run_pair *pp = &slot_cfg;
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
        ckpt_health_kernel_slot(&rf->hk, rf->rep, s);
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
                TRY(ckpt_payload_read(rf->src, &rf->it.payload[0], base, n, rf->raw_m, r->err));
                TRY(ckpt_payload_read(rf->src, &rf->it.payload[1], base, n, rf->raw_v, r->err));
                ckpt_health_feed_moments(&rf->hk, rf->raw_m, rf->raw_v, n, &h->mo);
            }
            if (rf->read_theta) {
                if (rf->theta_payload)
                    TRY(ckpt_payload_read(rf->src, rf->theta_payload, base, n, rf->raw_theta, r->err));
                else
                    TRY(ckpt_read_at(rf->state_src, rf->state->tensors[s].data_offset + tw * base, rf->raw_theta,
                                     tw * n, "the source", r->err));
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
            } else {
                const ckpt_steps_in ia = {fa->raw_m, fa->raw_v, fa->theta}, ib = {fb->raw_m, fb->raw_v, fb->theta};
                r->steps_chunk[fa->width == 8](a, &ia, &ib, n, base);
            }
        }
        if (r->progress && r->progress(r->progress_ctx, r->done, r->total))
            return ckpt_fail(r->err, NULL, CKPT_E_CANCELLED, CKPT_NONE, 0, "run pass cancelled");
    }
    return 0;
}

/* ---- the report ---- */

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
        pp->verdict_slot = s;
        sb_puts(&pp->verdict, msg.data);
    }
    if (has_power) {
        pp->weighed = true;
        pp->weigh += weigh, pp->elements += a->count;
        if (!weak.len) pp->telling += weigh;
        else {
            pp->weak_slots++;
            if (!pp->weak.len) {
                pp->weak_slot = s;
                sb_puts(&pp->weak, weak.failed ? "" : weak.data);
            }
        }
    }
    sb_free(&msg);
    sb_free(&weak);
}

static const char *name_of(const ckpt_report *r, uint64_t s) { return ckpt_slot_name(r, s); }

static bool has_name(const ckpt_report *r, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (!strcmp(name_of(r, i), name)) return true;
    return false;
}

/* Two files whose slots are named (DeepSpeed's, by the module): the first name or shape that
 * differs, in those names (`sb` empty when names and shapes agree, or a file names none).
 * O(slots). */
static void named_layout(const ckpt_report *ra, const ckpt_report *rb, size_t p, strbuf *sb)
{
    size_t na = ckpt_schema_count(ra->schema), nb = ckpt_schema_count(rb->schema);
    for (size_t i = 0; i < na; i++)
        if (!name_of(ra, i)) return;
    for (size_t i = 0; i < nb; i++)
        if (!name_of(rb, i)) return;
    size_t n = na < nb ? na : nb, i = 0;
    while (i < n && !strcmp(name_of(ra, i), name_of(rb, i))) i++;
    if (i < n || na != nb) {
        const char *a = i < na ? name_of(ra, i) : NULL, *b = i < nb ? name_of(rb, i) : NULL;
        if (a && !has_name(rb, nb, a)) sb_printf(sb, "%s is in file %zu, not in file %zu", a, p, p + 1);
        else if (b && !has_name(ra, na, b)) sb_printf(sb, "%s is in file %zu, not in file %zu", b, p + 1, p);
        else sb_printf(sb, "slot %zu is %s in file %zu, %s in file %zu: another module order", i, a, p, b, p + 1);
        return;
    }
    for (i = 0; i < n; i++) {
        uint64_t ra_dims = ckpt_schema_rank(ra->schema, i), rb_dims = ckpt_schema_rank(rb->schema, i);
        if (ra_dims == rb_dims && !memcmp(ckpt_schema_dims(ra->schema, i), ckpt_schema_dims(rb->schema, i),
                                          (size_t)ra_dims * sizeof(uint64_t)))
            continue;
        sb_printf(sb, "%s is ", name_of(ra, i));
        ckpt_schema_print_shape(sb, ra->schema, i);
        sb_printf(sb, " in file %zu, ", p);
        ckpt_schema_print_shape(sb, rb->schema, i);
        sb_printf(sb, " in file %zu", p + 1);
        return;
    }
    return;
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
        /* a layout of named slots: the first difference in its names (the schema's diff, whose
         * texts number the slots, stays in layoutDiff) */
        strbuf named = {0};
        if (pp->layout_diff) named_layout(fa->rep, fb->rep, p, &named);
        if (named.failed) {
            free(first);
            return ckpt_fail_oom(err);
        }
        sb_puts(&pp->verdict, named.len ? named.data : first);
        sb_free(&named);
        free(first);
        return 0;
    }
    pp->comparable = true;
    /* the learning rate's d has AdamW's decay term or not: none while the kind is unknown */
    pp->lr = (fa->state || fa->own_theta) && (fb->state || fb->own_theta) && !ckpt_kind_unknown(fa->rep) &&
             !ckpt_kind_unknown(fb->rep);
    pair_config(pp, fa->rep, &fa->rep->config);
    if (pp->lr) pp->theta_u = fb->state && fb->state->dtype == CKPT_FLOAT64 ? 0x1p-53 : 0x1p-24;
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

/* File f's model-state file, used when health would use it (it pairs); another family or an
 * invalid file is the file's stateError, a failure to read one the run's. */
static int use_state(run *r, run_file *rf, const ckpt_file *state)
{
    bool pairs;
    ckpt_error why = {0};
    ckpt_error_clear(&why);
    ckpt_error_clear(&rf->state_error);
    /* progress while the state files pair: nothing of the pass is done yet (its size is not known
     * before) */
    ckpt_progress_hold hold = {r->progress, r->progress_ctx, 0};
    int rc = ckpt_health_state(rf->file, state, ckpt_progress_held, &hold, &pairs, &why, &rf->state_error);
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
        rf->state_width = ckpt_dtype_width(rf->state->dtype);
    } else if (why.code) {
        ckpt_error_move(&rf->state_error, &why); /* why it does not pair: the file's stateError */
    }
    ckpt_error_clear(&why);
    return 0;
}

static int setup(run *r, const ckpt_file *const *opt, const ckpt_file *const *state)
{
    r->chunk = r->n <= FEW_FILES ? CHUNK_FEW : CHUNK;
    r->steps_chunk[0] = ckpt_kernel_steps32;
    r->steps_chunk[1] = ckpt_kernel_steps64;
    for (size_t f = 0; f < r->n; f++) {
        run_file *rf = &r->files[f];
        const ckpt_report *rep = ckpt_file_report(opt[f]);
        rf->file = opt[f];
        rf->src = ckpt_file_source(opt[f]);
        ckpt_error_clear(&rf->state_error);
        if (!ckpt_family_has_role(rep->family, CKPT_ROLE_OPTIMIZER)) continue;
        TRY(ckpt_require_items(rep, r->err));
        rf->rep = rep;
        rf->readable = rep->error.code == 0;
        if (!rf->readable) continue;
        rf->width = ckpt_dtype_width(rep->dtype);
        if (state && state[f]) TRY(use_state(r, rf, state[f]));
        ckpt_health_kernel_init(&rf->hk, rep, rf->state);
        if (!rf->state && ckpt_report_item_count(rep)) {
            /* the optimizer's own fp32 master weights, when its items hold them (health's rule) */
            ckpt_item it0 = ckpt_report_item(rep, 0);
            for (size_t q = 0; q < it0.payloads; q++)
                if (!*it0.payload[q].name && it0.payload[q].dtype == CKPT_FLOAT32) rf->own_theta = true;
            if (rf->own_theta) {
                rf->state_width = rf->hk.state_width = 4;
                rf->hk.params_chunk = ckpt_kernel_params32;
            }
        }
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
        r->pairs[p].verdict_slot = r->pairs[p].weak_slot = CKPT_NONE;
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
        /* the optimizer's own master weights at its groups' stored learning rate, as health reads
         * them, unless one is given */
        double slot_lr = !isnan(lr) || !rf->own_theta ? lr : ckpt_lr_of_slot(rf->rep, owner != CKPT_NONE ? owner : i);
        *flags += ckpt_health_slot_flags(&h, i, owner, slot_lr, band.low, band.high, &ratio, &slot_warnings);
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
        /* Adam or AdamW unknown (a DeepSpeed ds_config naming none, DCP's): no learning rate */
        sb_printf(&sb, ",\"kindUnknown\":%s", ckpt_kind_unknown(ckpt_file_report(rf->file)) ? "true" : "false");
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
        /* too few weighing elements in the slots that can tell (none when no slot can): neither
         * continuous nor broken; the first weak slot's text when no slot can tell */
        bool weak = pp->continuous && pp->weighed && pp->telling < CKPT_RUN_TELLING;
        bool weak_slot = weak && pp->telling == 0;
        cannot_tell += weak;
        if (p) sb_putc(&sb, ',');
        sb_printf(&sb, "{\"a\":%zu,\"b\":%zu,\"continuous\":%s,\"verdict\":", p, p + 1,
                  weak             ? "null"
                  : pp->continuous ? "true"
                                   : "false");
        if (weak_slot) j_string(&sb, pp->weak.failed || !pp->weak.data ? "" : pp->weak.data);
        else if (weak) {
            strbuf few = {0};
            sb_printf(&few, "steps %llu\u2192%llu: only %llu elements can tell (%d needed)",
                      (unsigned long long)max_step(r->files[p].rep), (unsigned long long)max_step(r->files[p + 1].rep),
                      (unsigned long long)pp->telling, CKPT_RUN_TELLING);
            j_string(&sb, few.failed || !few.data ? "" : few.data);
            sb.failed |= few.failed;
            sb_free(&few);
        } else if (pp->continuous) sb_lit(&sb, "null");
        else j_string(&sb, pp->verdict.failed || !pp->verdict.data ? "" : pp->verdict.data);
        sb_puts(&sb, ",\"verdictSlot\":");
        j_slot(&sb, weak_slot ? pp->weak_slot : weak || pp->continuous ? CKPT_NONE : pp->verdict_slot);
        sb_puts(&sb, ",\"slotsCannotTell\":");
        j_u64(&sb, pp->weak_slots);
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

/* ---- one pair, for the gradient's export (writers/gradient.c) ---- */

int ckpt_run_one_pair(const ckpt_file *a, const ckpt_file *b, double *b1, double *omb1, ckpt_error *err)
{
    const ckpt_file *files[2] = {a, b};
    /* the gradient is written from payloads in one run each (not a DeepSpeed parameter's fragments) */
    TRY(ckpt_require_schema(ckpt_file_report(a), err));
    TRY(ckpt_require_schema(ckpt_file_report(b), err));
    run r = {0};
    r.n = 2;
    r.err = err;
    r.files = calloc(2, sizeof *r.files);
    r.pairs = calloc(2, sizeof *r.pairs);
    int rc = r.files && r.pairs ? setup(&r, files, NULL) : ckpt_fail_oom(err);
    if (!rc && !r.pairs[0].comparable)
        rc = ckpt_fail(err, NULL, CKPT_E_INVALID_ARGUMENT, CKPT_NONE, 0, "no gradient: B does not continue A (%s)",
                       r.pairs[0].verdict.data ? r.pairs[0].verdict.data : "");
    if (!rc) *b1 = r.pairs[0].b1, *omb1 = r.pairs[0].omb1;
    if (r.files && r.pairs) free_run(&r);
    else free(r.files), free(r.pairs);
    return rc;
}

int ckpt_logged_lr_agrees(double lr, double logged)
{
    if (!isfinite(lr) || !isfinite(logged)) return -1;
    double larger = fmax(fabs(lr), fabs(logged));
    return fabs(lr - logged) <= CKPT_LOGGED_LR_TOLERANCE * larger;
}
