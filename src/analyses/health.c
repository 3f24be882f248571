/* Training health (docs/health.md): Adam's next step per slot, from the moments of the slot's
 * owner and (when a model-state file is given) the slot's own parameters, at step t + 1:
 *   m^ = m / (1 - beta1^(t+1)),  v^ = v / (1 - beta2^(t+1)),  u = m^ / (sqrt(v^) + eps)
 * in binary64: u is the step per unit learning rate. Per slot: rms and max of |u| over finite
 * u, the parameter's rms/max/NaN/inf, the update-to-weight ratio lr * rms(u) / rms(theta)
 * (flagged outside a band, as warnings: a heuristic; the other flags are failures), the elements
 * that never received a gradient (v = 0), and the elements whose moments no gradient history
 * can produce: with beta1^2 < beta2, |m| <= c * sqrt(v) for
 *   c = (1 - beta1) / sqrt((1 - beta2)(1 - beta1^2 / beta2))
 * (Cauchy-Schwarz over the two recurrences), checked with a 1e-3 margin for rounding, and with v
 * taken as at least the dtype's smallest normal: tiny gradients underflow in v (g^2) before
 * they do in m (g), and the bound still holds with v at that floor.
 * One streamed pass over m, v and theta together (three cursors over two files), in chunks:
 * bounded memory, progress, cancel. The per-chunk accumulation and the flags are also run.c's
^ * (analyses.h): a run feeds them the chunks of its continuity pass. */
#include "analyses/analyses.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHUNK CKPT_HEALTH_CHUNK /* elements per cursor per step */

#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF /* no fused multiply-add: every build gives the same bits */
#endif
/* The element loops (the per-chunk accumulation) are kernels.c's. */

typedef ckpt_ratio_band band;

typedef struct pass {
    const ckpt_source *opt_src, *state_src;
    ckpt_health_kernel k;
    ckpt_progress_fn progress;
    void *progress_ctx;
    uint64_t done, total;
    ckpt_error *err;
    uint8_t *m, *v; /* CHUNK * width each */
    uint8_t *theta; /* CHUNK * state_width */
    /* no state file: the parameters are the optimizer's own fp32 master weights (a DeepSpeed
     * checkpoint's), its items' unnamed payloads */
    bool own_theta;
} pass;

void ckpt_health_feed_moments(const ckpt_health_kernel *k, const uint8_t *m, const uint8_t *v, size_t n,
                              ckpt_health_moments *h)
{
    for (size_t at = 0; at < n; at += CHUNK)
        k->moments_chunk(k, m + at * k->width, v + at * k->width, n - at < CHUNK ? n - at : CHUNK, h);
}

void ckpt_health_feed_params(const ckpt_health_kernel *k, const uint8_t *theta, size_t n, ckpt_health_param *h)
{
    for (size_t at = 0; at < n; at += CHUNK)
        k->params_chunk(theta + at * k->state_width, n - at < CHUNK ? n - at : CHUNK, h);
}

/* The constants of one configuration: betas, epsilon, the consistency bound's c. */
static void kernel_config(ckpt_health_kernel *k, int dtype, const ckpt_config *cfg)
{
    k->beta1 = ckpt_double_from_bits(cfg->beta1);
    k->beta2 = ckpt_double_from_bits(cfg->beta2);
    k->eps = ckpt_double_from_bits(cfg->epsilon);
    if (dtype == CKPT_FLOAT32) k->eps = (float)k->eps; /* the moments' dtype holds epsilon at run time */
    k->c = k->beta1 * k->beta1 < k->beta2 ? (1 - k->beta1) / sqrt((1 - k->beta2) * (1 - k->beta1 * k->beta1 / k->beta2))
                                          : 0;
}

void ckpt_health_kernel_init(ckpt_health_kernel *k, const ckpt_report *ro, const ckpt_report *rs)
{
    memset(k, 0, sizeof *k);
    k->width = ckpt_dtype_width(ro->dtype);
    k->state_width = rs ? ckpt_dtype_width(rs->dtype) : 0;
    k->moments_chunk = k->width == 8 ? ckpt_kernel_moments64 : ckpt_kernel_moments32;
    k->params_chunk = k->state_width == 8 ? ckpt_kernel_params64 : ckpt_kernel_params32;
    k->v_floor = ro->dtype == CKPT_FLOAT64 ? DBL_MIN : FLT_MIN;
    kernel_config(k, ro->dtype, &ro->config);
}

void ckpt_health_kernel_slot(ckpt_health_kernel *k, const ckpt_report *ro, uint64_t slot)
{
    const ckpt_config *c = ckpt_config_of_slot(ro, slot);
    if (c) kernel_config(k, ro->dtype, c);
}

void ckpt_health_moments_begin(const ckpt_health_kernel *k, const ckpt_entry_info *e, ckpt_health_moments *h)
{
    memset(h, 0, sizeof *h);
    h->present = e != NULL;
    if (!e) return;
    /* the bias corrections of step t + 1, applied as products */
    double t1 = (double)e->step + 1.0;
    h->inv1 = 1.0 / (1.0 - pow(k->beta1, t1));
    h->inv2 = 1.0 / (1.0 - pow(k->beta2, t1));
}

/* One slot: its owner's entry e (NULL for a frozen slot) and item (its payloads m, v, and
 * vmax: amsgrad's max_exp_avg_sq, NULL: none; the next step divides by its root, not v's, so the
 * update is measured on it; the bound and the counts stay v's), its parameters theta (a state
 * file's tensor, or the optimizer's own fp32 master weights; NULL: none), streamed together. */
static int slot_pass(pass *ps, const ckpt_entry_info *e, const ckpt_payload *mv, const ckpt_payload *vmax,
                     const ckpt_payload *theta, uint64_t count, ckpt_health_slot *h)
{
    memset(h, 0, sizeof *h);
    h->count = count;
    ckpt_health_moments_begin(&ps->k, e, &h->mo);
    ckpt_health_moments amsgrad;
    ckpt_health_moments_begin(&ps->k, e, &amsgrad);
    h->pa.present = theta != NULL;
    if (!e && !theta) return 0;
    const unsigned w = ps->k.width, tw = ps->k.state_width;
    for (uint64_t k = 0; k < count; k += CHUNK) {
        size_t n = count - k < CHUNK ? (size_t)(count - k) : CHUNK;
        if (e) {
            TRY(ckpt_payload_read(ps->opt_src, &mv[0], k, n, ps->m, ps->err));
            TRY(ckpt_payload_read(ps->opt_src, &mv[1], k, n, ps->v, ps->err));
            ckpt_health_feed_moments(&ps->k, ps->m, ps->v, n, &h->mo);
            if (vmax) {
                TRY(ckpt_payload_read(ps->opt_src, vmax, k, n, ps->v, ps->err));
                ckpt_health_feed_moments(&ps->k, ps->m, ps->v, n, &amsgrad);
            }
        }
        if (theta) {
            TRY(ckpt_payload_read(ps->own_theta ? ps->opt_src : ps->state_src, theta, k, n, ps->theta, ps->err));
            ckpt_health_feed_params(&ps->k, ps->theta, n, &h->pa);
        }
        ps->done += (uint64_t)n * ((e ? 2 * w : 0) + (theta ? tw : 0)); /* progress: m, v and theta's bytes */
        if (ps->progress && ps->progress(ps->progress_ctx, ps->done, ps->total))
            return ckpt_fail(ps->err, NULL, CKPT_E_CANCELLED, CKPT_NONE, 0, "health pass cancelled");
    }
    if (vmax) {
        h->mo.u_sum_sq = amsgrad.u_sum_sq;
        h->mo.u_max = amsgrad.u_max;
        h->mo.u_finite = amsgrad.u_finite;
    }
    return 0;
}

/* Where a slot's flags go: counted always; with `global`, its items
 * ,{"slot","flag","severity","message"} and the slot's own list of names in `slot_names`. */
typedef struct flags_out {
    strbuf *global, *slot_names;
    size_t count, warnings;
} flags_out;

/* A flag's severity: a failure says the state is broken; a warning, that a heuristic fired. */
enum { FAILURE, WARNING };

static void flag(flags_out *f, uint64_t slot, const char *name, int severity, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 5, 6)))
#endif
    ;

static void flag(flags_out *f, uint64_t slot, const char *name, int severity, const char *fmt, ...)
{
    f->count++;
    if (severity == WARNING) f->warnings++;
    if (!f->global) return;
    char text[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    sb_printf(f->slot_names, "%s\"%s\"", f->slot_names->len ? "," : "", name);
    sb_printf(f->global, "%s{\"slot\":", f->global->len ? "," : "");
    j_u64(f->global, slot);
    sb_printf(f->global, ",\"flag\":\"%s\",\"severity\":\"%s\",\"message\":", name,
              severity == WARNING ? "warning" : "failure");
    j_string(f->global, text);
    sb_puts(f->global, "}");
}

static double update_rms(const ckpt_health_slot *h)
{
    return h->mo.u_finite ? sqrt(h->mo.u_sum_sq / (double)h->mo.u_finite) : 0;
}
static double param_rms(const ckpt_health_slot *h)
{
    return h->pa.finite ? sqrt(h->pa.sum_sq / (double)h->pa.finite) : 0;
}

/* The slot's update-to-weight ratio lr * rms(u) / rms(theta); NAN when it has none. */
static double slot_ratio(const ckpt_health_slot *h, double lr)
{
    double p_rms = param_rms(h);
    return !isnan(lr) && h->mo.present && h->pa.present && p_rms > 0 ? lr * update_rms(h) / p_rms : NAN;
}

/* A bound of the band as its texts write it: the shortest decimal that reads back as x, in
 * the form 1e-2, 2.5e-4 (the same in every libc: no %g choice between 0.01 and 1e-02). */
static void band_text(char out[48], double x)
{
    if (x == 0 || !isfinite(x)) {
        snprintf(out, 48, "%s", x == 0 ? "0" : isnan(x) ? "NaN" : x > 0 ? "inf" : "-inf");
        return;
    }
    char digits[32];
    for (int p = 0; p <= 17; p++) {
        snprintf(digits, sizeof digits, "%.*e", p, x);
        if (strtod(digits, NULL) == x) break;
    }
    char *e = strchr(digits, 'e');
    int exponent = atoi(e + 1);
    *e = '\0';
    snprintf(out, 48, "%se%d", digits, exponent);
}

int ckpt_health_ratio_band(double low, double high, ckpt_error *err)
{
    char lo[48], hi[48];
    band_text(lo, low);
    band_text(hi, high);
    if (!isfinite(low) || !isfinite(high))
        return ckpt_fail(err, NULL, CKPT_E_INVALID_ARGUMENT, CKPT_NONE, 0,
                         "the ratio band LO,HI takes finite numbers, got %s,%s", lo, hi);
    if (low < 0 || high < 0)
        return ckpt_fail(err, NULL, CKPT_E_INVALID_ARGUMENT, CKPT_NONE, 0,
                         "the ratio band LO,HI takes numbers >= 0 (a ratio is never negative), got %s,%s", lo, hi);
    if (low >= high)
        return ckpt_fail(err, NULL, CKPT_E_INVALID_ARGUMENT, CKPT_NONE, 0,
                         "the ratio band LO,HI needs LO below HI, got %s,%s", lo, hi);
    return 0;
}

/* The rules of the flags, in their order (docs/health.md). */
static void slot_flags(flags_out *fo, const ckpt_health_slot *h, uint64_t slot, uint64_t owner, double lr, double ratio,
                       band b)
{
    unsigned long long us = slot;
    const ckpt_health_moments *mo = &h->mo;
    bool owns = mo->present && owner == slot;
    if (h->pa.present && (h->pa.nan || h->pa.inf))
        flag(fo, slot, "parameterNonFinite", FAILURE,
             "parameter %llu: its values hold %llu NaN and %llu infinite values", us, (unsigned long long)h->pa.nan,
             (unsigned long long)h->pa.inf);
    if (owns && (mo->nan || mo->inf))
        flag(fo, slot, "momentsNonFinite", FAILURE,
             "parameter %llu: its moments hold %llu NaN and %llu infinite values", us, (unsigned long long)mo->nan,
             (unsigned long long)mo->inf);
    if (owns && mo->v_negative)
        flag(fo, slot, "negativeV", FAILURE, "parameter %llu: its second moment holds %llu negative value%s", us,
             (unsigned long long)mo->v_negative, mo->v_negative == 1 ? "" : "s");
    if (owns && mo->inconsistent)
        flag(fo, slot, "inconsistent", FAILURE,
             "parameter %llu: %llu element%s with |m| beyond what any gradient history gives for these betas: "
             "corrupted moments, or betas that are not the ones they were built with",
             us, (unsigned long long)mo->inconsistent, mo->inconsistent == 1 ? "" : "s");
    /* a tied slot is its owner's parameter (the pair checked their values alike), so its ratio is
     * its owner's: the ratio flags are said once, on the owner, as the moment flags are */
    if (owner != CKPT_NONE && owner != slot) return;
    char bound[48];
    if (!isnan(ratio) && ratio > b.high) {
        band_text(bound, b.high);
        flag(fo, slot, "ratioHigh", WARNING, "parameter %llu: update-to-weight ratio %.3g is above %s at lr %g", us,
             ratio, bound, lr);
    }
    if (!isnan(ratio) && ratio < b.low) {
        band_text(bound, b.low);
        flag(fo, slot, "ratioLow", WARNING, "parameter %llu: update-to-weight ratio %.3g is below %s at lr %g", us,
             ratio, bound, lr);
    }
}

int ckpt_health_band(bool given, double low, double high, ckpt_ratio_band *b, ckpt_error *err)
{
    *b = given ? (band){low, high} : (band){CKPT_RATIO_LOW, CKPT_RATIO_HIGH};
    return ckpt_health_ratio_band(b->low, b->high, err);
}

void ckpt_health_band_json(strbuf *sb, ckpt_ratio_band b)
{
    sb_puts(sb, "\"ratioBand\":[");
    j_double(sb, b.low);
    sb_putc(sb, ',');
    j_double(sb, b.high);
    sb_putc(sb, ']');
}

size_t ckpt_health_slot_flags(const ckpt_health_slot *h, uint64_t slot, uint64_t owner, double lr, double ratio_low,
                              double ratio_high, double *ratio, size_t *warnings)
{
    flags_out fo = {NULL, NULL, 0, 0};
    *ratio = slot_ratio(h, lr);
    slot_flags(&fo, h, slot, owner, lr, *ratio, (band){ratio_low, ratio_high});
    *warnings = fo.warnings;
    return fo.count;
}

/* The slot's JSON and its flags. */
static void slot_json(strbuf *sb, strbuf *flags, uint64_t slot, uint64_t owner, bool trainable,
                      const ckpt_entry_info *e, const ckpt_health_slot *h, double lr, band b, double weight_decay,
                      bool adamw)
{
    strbuf sf = {0};
    flags_out fo = {flags, &sf, 0, 0};
    double u_rms = update_rms(h), p_rms = param_rms(h), ratio = slot_ratio(h, lr);
    bool has_lr = !isnan(lr);
    slot_flags(&fo, h, slot, owner, lr, ratio, b);

    sb_puts(sb, "{\"slot\":");
    j_u64(sb, slot);
    sb_puts(sb, ",\"owner\":");
    j_slot(sb, owner);
    sb_printf(sb, ",\"trainable\":%s,\"count\":", trainable ? "true" : "false");
    j_u64(sb, h->count);
    sb_puts(sb, ",\"step\":");
    if (e) j_u64(sb, e->step);
    else sb_puts(sb, "null");
    sb_puts(sb, ",\"param\":");
    if (h->pa.present) {
        sb_puts(sb, "{\"rms\":");
        j_num_or_null(sb, h->pa.finite > 0, p_rms);
        sb_puts(sb, ",\"maxAbs\":");
        j_num_or_null(sb, h->pa.finite > 0, h->pa.max);
        sb_puts(sb, ",\"nan\":");
        j_u64(sb, h->pa.nan);
        sb_puts(sb, ",\"inf\":");
        j_u64(sb, h->pa.inf);
        sb_puts(sb, "}");
    } else sb_puts(sb, "null");
    sb_puts(sb, ",\"update\":");
    if (h->mo.present) {
        sb_puts(sb, "{\"rms\":");
        j_num_or_null(sb, h->mo.u_finite > 0, u_rms);
        sb_puts(sb, ",\"maxAbs\":");
        j_num_or_null(sb, h->mo.u_finite > 0, h->mo.u_max);
        sb_puts(sb, "}");
    } else sb_puts(sb, "null");
    sb_puts(sb, ",\"ratio\":");
    j_num_or_null(sb, !isnan(ratio), ratio);
    sb_puts(sb, ",\"decay\":");
    j_num_or_null(sb, has_lr && h->mo.present, adamw ? lr * weight_decay : 0);
    sb_puts(sb, ",\"neverUpdated\":");
    j_u64(sb, h->mo.present ? h->mo.never_updated : 0);
    sb_puts(sb, ",\"inconsistent\":");
    j_u64(sb, h->mo.present ? h->mo.inconsistent : 0);
    sb_puts(sb, ",\"nonFinite\":");
    j_u64(sb, h->mo.present ? h->mo.nan + h->mo.inf : 0);
    sb_printf(sb, ",\"flags\":[%s]}", sf.data ? sf.data : "");
    sb_free(&sf);
}

/* The bytes the pass will read for slots [first, last), for progress. */
static uint64_t pass_total(const pass *ps, const ckpt_schema *s, uint64_t first, uint64_t last)
{
    uint64_t total = 0;
    for (uint64_t i = first; i < last; i++) {
        uint64_t count = ckpt_schema_size(s, (size_t)i, NULL);
        if (ckpt_schema_representative(s, i) != CKPT_NONE) total += 2 * count * ps->k.width;
        if (ps->state_src || (ps->own_theta && ckpt_schema_representative(s, i) != CKPT_NONE))
            total += count * ps->k.state_width;
    }
    return total;
}

/* Can health read these files whole? Their roles, then their validity. */
static int readable(const ckpt_report *ro, const ckpt_report *rs, ckpt_error *err)
{
    /* a file cut before its magic has no family: it is invalid, not of the wrong role (as pairing) */
    /* an optimizer whose items hold all of its state (a DeepSpeed folder) is read through them */
    bool whole = ro->family && ro->family->impl->items_whole && ro->family->impl->items_whole(ro);
    /* one that reads its items but is not whole says why (ckpt_require_items) */
    bool items = ro->family && ro->family->impl->items_whole;
    if ((ro->family && !whole && items && ckpt_require_items(ro, err)) ||
        (ro->family && !whole && !items && ckpt_require_role(ro, CKPT_ROLE_OPTIMIZER, err)) ||
        (rs && rs->family && ckpt_require_role(rs, CKPT_ROLE_MODEL, err)))
        return -1;
    if (ro->error.code || (rs && rs->error.code)) /* every entry and tensor must be there: health reads them all */
        return ckpt_fail(err, NULL, CKPT_E_NOT_READABLE, CKPT_NONE, 0, "cannot compute health: the %s is invalid",
                         ro->error.code ? "optimizer checkpoint" : "state file");
    /* the parameters' kernels read float32 and float64 (another dtype's state is not used) */
    if (rs && !ckpt_dtype_in_layouts(rs->dtype))
        return ckpt_fail(err, NULL, CKPT_E_INVALID_ARGUMENT, CKPT_NONE, 0,
                         "cannot compute health: the state file's tensors are %s, not float32 or float64",
                         ckpt_dtype_name(rs->dtype) ? ckpt_dtype_name(rs->dtype) : "of several dtypes");
    return 0;
}

int ckpt_health_state(const ckpt_file *opt, const ckpt_file *state, ckpt_progress_fn progress, void *progress_ctx,
                      bool *pairs, ckpt_error *why, ckpt_error *err)
{
    *pairs = false;
    if (readable(ckpt_file_report(opt), ckpt_file_report(state), err)) return -1;
    /* the pairing verdict, pairing's own (format.md 6): a state file of another model has
     * parameters that are not this checkpoint's */
    ckpt_pair_result *pr = ckpt_pair(opt, state, progress, progress_ctx);
    if (!pr) return ckpt_fail_oom(err);
    if (pr->error.code) {
        ckpt_error_move(err, &pr->error); /* cancelled, the file changed, out of memory */
        ckpt_pair_result_free(pr);
        return -1;
    }
    *pairs = pr->pairs;
    if (!*pairs) ckpt_error_move(why, &pr->failures[0]);
    ckpt_pair_result_free(pr);
    return 0;
}

char *ckpt_health_json(const ckpt_file *opt, const ckpt_file *state, const ckpt_health_options *o, ckpt_error *err)
{
    const ckpt_report *ro = ckpt_file_report(opt), *rs = state ? ckpt_file_report(state) : NULL;
    band b;
    if (ckpt_health_band(o && o->ratio_band, o ? o->ratio_low : 0, o ? o->ratio_high : 0, &b, err) ||
        readable(ro, rs, err))
        return NULL;
    const ckpt_schema *s = ro->schema;
    size_t n = ckpt_schema_count(s);
    uint64_t first = o && o->first_slot < n ? o->first_slot : o ? n : 0;
    uint64_t last = o && o->slot_count < n - first ? first + o->slot_count : n;
    double lr = o ? o->lr : NAN;
    /* without one given: the file's own (a PyTorch group's lr is the next step's), when every
     * slot has the same; else per slot below */
    bool stored = false;
    if (isnan(lr)) {
        double one = NAN;
        bool same = true;
        for (size_t i = 0; i < n && same; i++) {
            if (!ckpt_schema_requires_grad(s, i)) continue;
            double x = ckpt_lr_of_slot(ro, i);
            if (isnan(x) || (!isnan(one) && x != one)) same = false;
            one = x;
        }
        stored = !isnan(one);
        if (same) lr = one;
    }

    pass ps = {0};
    ps.opt_src = ckpt_file_source(opt);
    ps.state_src = rs ? ckpt_file_source(state) : NULL;
    ckpt_health_kernel_init(&ps.k, ro, rs);
    if (!rs && ckpt_report_item_count(ro)) {
        /* the optimizer's own fp32 master weights, when its items hold them */
        ckpt_item it0 = ckpt_report_item(ro, 0);
        for (size_t q = 0; q < it0.payloads; q++)
            if (!*it0.payload[q].name && it0.payload[q].dtype == CKPT_FLOAT32) ps.own_theta = true;
        if (ps.own_theta) {
            ps.k.state_width = 4;
            ps.k.params_chunk = ckpt_kernel_params32;
        }
    }
    ps.progress = o ? o->progress : NULL;
    ps.progress_ctx = o ? o->progress_ctx : NULL;
    ps.err = err;
    ps.total = pass_total(&ps, s, first, last);

    /* a state file that does not pair: ok false, the first pairing failure as the error; the
     * moments' health is still computed */
    ckpt_error pair_err = {0};
    ckpt_error_clear(&pair_err);
    bool pairs = true;
    /* progress while pairing runs first: nothing of the health pass is done yet */
    ckpt_progress_hold hold = {ps.progress, ps.progress_ctx, ps.total};
    if (rs && ckpt_health_state(opt, state, ckpt_progress_held, &hold, &pairs, &pair_err, err)) return NULL;
    if (!pairs) {
        ps.state_src = NULL;
        ps.total = pass_total(&ps, s, first, last);
    }

    /* the entry of each owner */
    size_t *entry_of = ckpt_item_of_slot(ro);
    if (!entry_of) {
        ckpt_error_clear(&pair_err);
        ckpt_fail_oom(err);
        return NULL;
    }
    ps.m = malloc(CHUNK * ps.k.width);
    ps.v = malloc(CHUNK * ps.k.width);
    ps.theta = malloc(CHUNK * (ps.k.state_width ? ps.k.state_width : 1));
    strbuf sb = {0}, fl = {0};
    int rc = ps.m && ps.v && ps.theta ? 0 : ckpt_fail_oom(err);
    sb_printf(&sb, "{\"ok\":%s,\"pairs\":%s,\"lr\":", pairs ? "true" : "false", pairs ? "true" : "false");
    j_num_or_null(&sb, !isnan(lr), lr);
    if (stored) sb_puts(&sb, ",\"lrFrom\":\"file\"");
    sb_putc(&sb, ',');
    ckpt_health_band_json(&sb, b);
    sb_puts(&sb, ",\"c\":");
    j_num_or_null(&sb, ps.k.c > 0, ps.k.c);
    sb_puts(&sb, ",\"first\":");
    j_u64(&sb, first);
    sb_puts(&sb, ",\"slots\":[");
    for (uint64_t i = first; i < last && !rc; i++) {
        uint64_t r = ckpt_schema_representative(s, i);
        const ckpt_entry_info *e = r != CKPT_NONE ? &ro->entries[entry_of[r]] : NULL;
        const ckpt_tensor_info *t = ps.state_src ? &rs->tensors[i] : NULL;
        ckpt_payload tp; /* a state file's tensor as a payload */
        if (t) tp = (ckpt_payload){"", rs->tensors[i].dtype, t->data_offset, t->count, NULL, NULL, NULL, 0};
        /* the configuration of the slot whose moments these are (its owner's) */
        uint64_t cs = r != CKPT_NONE ? r : i;
        ckpt_health_kernel_slot(&ps.k, ro, cs);
        const ckpt_config *cfg = ckpt_config_of_slot(ro, cs);
        if (!cfg) cfg = &ro->config;
        double weight_decay = ckpt_double_from_bits(cfg->weight_decay);
        bool adamw = cfg->kind == CKPT_ADAMW;
        ckpt_health_slot h;
        const ckpt_payload *vmax = NULL, *theta = t ? &tp : NULL;
        ckpt_item it = {0};
        if (e) {
            it = ckpt_report_item(ro, entry_of[r]);
            for (size_t q = 2; q < it.payloads; q++)
                if (!strcmp(it.payload[q].name, "max_exp_avg_sq")) vmax = &it.payload[q];
            /* the owner's master weights (a tied slot's are its owner's) */
            for (size_t q = 0; ps.own_theta && q < it.payloads; q++)
                if (!*it.payload[q].name) theta = &it.payload[q];
            /* an entry saved before its first step holds no moments (a DeepSpeed group's) */
            if (it.payloads < 2 || strcmp(it.payload[0].name, "exp_avg")) e = NULL;
        }
        if ((rc = slot_pass(&ps, e, it.payload, vmax, theta, ckpt_schema_size(s, (size_t)i, NULL), &h))) break;
        if (i > first) sb_puts(&sb, ",");
        double slot_lr = isnan(lr) && stored ? ckpt_lr_of_slot(ro, cs) : lr;
        slot_json(&sb, &fl, i, r, ckpt_schema_requires_grad(s, (size_t)i), e, &h, slot_lr, b, weight_decay, adamw);
    }
    sb_puts(&sb, "],\"flags\":[");
    if (fl.data) sb_puts(&sb, fl.data);
    sb_puts(&sb, "],\"error\":");
    j_error(&sb, &pair_err);
    sb_puts(&sb, "}");
    free(entry_of);
    free(ps.m);
    free(ps.v);
    free(ps.theta);
    sb_free(&fl);
    ckpt_error_clear(&pair_err);
    if (rc) {
        sb_free(&sb);
        return NULL;
    }
    char *json = sb_take(&sb);
    if (!json) ckpt_fail_oom(err);
    return json;
}
