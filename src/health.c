/* Training health (docs/health.md): Adam's next step per slot, from the moments of the slot's
 * owner and (when a model-state file is given) the slot's own parameters, at step t + 1:
 *   m^ = m / (1 - beta1^(t+1)),  v^ = v / (1 - beta2^(t+1)),  u = m^ / (sqrt(v^) + eps)
 * in binary64: u is the step per unit learning rate. Per slot: rms and max of |u| over finite
 * u, the parameter's rms/max/NaN/inf, the update-to-weight ratio lr * rms(u) / rms(theta), the
 * elements that never received a gradient (v = 0), and the elements whose moments no gradient
 * history can produce: with beta1^2 < beta2, |m| <= c * sqrt(v) for
 *   c = (1 - beta1) / sqrt((1 - beta2)(1 - beta1^2 / beta2))
 * (Cauchy-Schwarz over the two recurrences), checked with a 1e-3 margin for rounding, and with v
 * taken as at least the dtype's smallest normal: tiny gradients underflow in v (g^2) before
 * they do in m (g), and the bound still holds with v at that floor.
 * One streamed pass over m, v and theta together (three cursors over two files), in chunks:
 * bounded memory, progress, cancel. */
#include "internal.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHUNK 16384                 /* elements per cursor per step */
#define MARGIN 1e-3                 /* relative slack of the consistency bound */
#define RATIO_HIGH 1e-2             /* the flag range of the update-to-weight ratio */
#define RATIO_LOW 1e-5

typedef struct slot_health {
    uint64_t count;
    /* moments (the owner's entry) */
    bool has_update;
    double u_sum_sq, u_max;
    uint64_t u_finite, moment_nan, moment_inf, v_negative, never_updated, inconsistent;
    /* parameters (the slot's tensor) */
    bool has_param;
    double p_sum_sq, p_max;
    uint64_t p_finite, p_nan, p_inf;
} slot_health;

typedef struct pass {
    const ckpt_source *opt_src, *state_src;
    unsigned width;
    double beta1, beta2, eps, c;    /* c: 0 when there is no bound (beta1^2 >= beta2) */
    double v_floor;                 /* the smallest normal of the moments' dtype */
    ckpt_progress_fn progress;
    void *progress_ctx;
    uint64_t done, total;
    ckpt_error *err;
    uint8_t *m, *v;                 /* CHUNK * width each */
    float *theta;                   /* CHUNK */
    void (*moments_chunk)(const struct pass *, size_t, double, double, struct slot_health *);
    void (*params_chunk)(const struct pass *, size_t, struct slot_health *);
} pass;

/* n bytes at offset, all of them (the files were parsed: a short read means they changed). */
static int read_at(const ckpt_source *src, uint64_t offset, void *buf, size_t n, ckpt_error *err)
{
    size_t got = src->read(src->ctx, offset, buf, n);
    if (got == CKPT_READ_ERROR || got != n)
        return ckpt_fail(err, NULL, CKPT_E_IO, offset, 0, "could not read the source at byte %llu", (unsigned long long)offset);
    return 0;
}

/* The moments' part of one chunk: n elements of m and v as stored (float or double). One
 * function per width so the compiler sees plain arrays; the rare non-finite or negative
 * elements leave the arithmetic through a branch that is almost never taken. A chunk is a
 * function call of its own (not inlined into the slot's loop) because V8 moves a WebAssembly
 * function to its optimizing tier only on a later call: a loop over a whole 32 MiB slot would
 * run in the baseline tier to its end (the health pass in the CLI: 1.8 s, 1.15 s once warm).
 * They are called through pointers (pass.moments_chunk, pass.params_chunk): Binaryen inlines a
 * function with one call site whatever the C says, and cannot inline an indirect call. */
#define MOMENTS_CHUNK(NAME, T)                                                                         static NOINLINE void NAME(const pass *ps, size_t n, double inv1, double inv2, slot_health *h)      {                                                                                                      const T *mm = (const T *)ps->m, *vv = (const T *)ps->v;                                           const double c = ps->c, floor = ps->v_floor, eps = ps->eps;                                        double sum_sq = 0, max = h->u_max;                                                                 uint64_t finite = 0, never = 0, inconsistent = 0;                                                  for (size_t j = 0; j < n; j++) {                                                                       double m = mm[j], v = vv[j];                                                                       if (!isfinite(m) || !isfinite(v) || v < 0) {                                                           if (isnan(m)) h->moment_nan++;                                                                     else if (isinf(m)) h->moment_inf++;                                                                if (isnan(v)) h->moment_nan++;                                                                     else if (isinf(v)) h->moment_inf++;                                                                else if (v < 0) h->v_negative++;                                                                   continue;                                                                                      }                                                                                                  never += v == 0;                                                                                   inconsistent += c > 0 && fabs(m) > c * sqrt(v > floor ? v : floor) * (1 + MARGIN);                 double u = (m * inv1) / (sqrt(v * inv2) + eps);                                                    if (!isfinite(u)) continue;                                                                        double a = fabs(u);                                                                                sum_sq += a * a;                                                                                   if (a > max) max = a;                                                                              finite++;                                                                                      }                                                                                                  h->u_sum_sq += sum_sq;                                                                             h->u_max = max;                                                                                    h->u_finite += finite;                                                                             h->never_updated += never;                                                                         h->inconsistent += inconsistent;                                                               }
MOMENTS_CHUNK(moments_chunk32, float)
MOMENTS_CHUNK(moments_chunk64, double)

/* The parameters' part of one chunk (a call of its own for the same reason). */
static NOINLINE void params_chunk(const pass *ps, size_t n, slot_health *h)
{
    double sum_sq = 0, max = h->p_max;
    uint64_t finite = 0;
    for (size_t j = 0; j < n; j++) {
        double x = ps->theta[j];
        if (!isfinite(x)) {
            if (isnan(x)) h->p_nan++;
            else h->p_inf++;
            continue;
        }
        double a = fabs(x);
        sum_sq += a * a;
        if (a > max) max = a;
        finite++;
    }
    h->p_sum_sq += sum_sq;
    h->p_max = max;
    h->p_finite += finite;
}

/* One slot: its owner's entry e (NULL for a frozen slot), its tensor t (NULL without a state
 * file), streamed together. */
static int slot_pass(pass *ps, const ckpt_entry_info *e, const ckpt_tensor_info *t, uint64_t count, slot_health *h)
{
    memset(h, 0, sizeof *h);
    h->count = count;
    h->has_update = e != NULL;
    h->has_param = t != NULL;
    if (!e && !t) return 0;
    /* the bias corrections of step t + 1, applied as products */
    double inv1 = 0, inv2 = 0;
    if (e) {
        double t1 = (double)e->step + 1.0;
        inv1 = 1.0 / (1.0 - pow(ps->beta1, t1));
        inv2 = 1.0 / (1.0 - pow(ps->beta2, t1));
    }
    const unsigned w = ps->width;
    for (uint64_t k = 0; k < count; k += CHUNK) {
        size_t n = count - k < CHUNK ? (size_t)(count - k) : CHUNK;
        if (e) {
            TRY(read_at(ps->opt_src, e->m_offset + k * w, ps->m, n * w, ps->err));
            TRY(read_at(ps->opt_src, e->v_offset + k * w, ps->v, n * w, ps->err));
            ps->moments_chunk(ps, n, inv1, inv2, h);
        }
        if (t) {
            TRY(read_at(ps->state_src, t->data_offset + 4 * k, ps->theta, 4 * n, ps->err));
            ps->params_chunk(ps, n, h);
        }
        ps->done += (uint64_t)n * ((e ? 2 * w : 0) + (t ? 4 : 0));
        if (ps->progress && ps->progress(ps->progress_ctx, ps->done, ps->total))
            return ckpt_fail(ps->err, NULL, CKPT_E_CANCELLED, CKPT_NONE, 0, "health pass cancelled");
    }
    return 0;
}

static void j_num_or_null(strbuf *sb, bool present, double x)
{
    if (present) j_double(sb, x);
    else sb_puts(sb, "null");
}

typedef struct flags_out {
    strbuf *global;                 /* ,{"slot","flag","message"} items */
    size_t count;
} flags_out;

static void flag(flags_out *f, strbuf *slot_flags, uint64_t slot, const char *name, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 5, 6)))
#endif
    ;

static void flag(flags_out *f, strbuf *slot_flags, uint64_t slot, const char *name, const char *fmt, ...)
{
    char text[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    sb_printf(slot_flags, "%s\"%s\"", slot_flags->len ? "," : "", name);
    sb_printf(f->global, "%s{\"slot\":", f->count++ ? "," : "");
    j_u64(f->global, slot);
    sb_printf(f->global, ",\"flag\":\"%s\",\"message\":", name);
    j_string(f->global, text);
    sb_puts(f->global, "}");
}

/* The slot's JSON and its flags. */
static void slot_json(strbuf *sb, flags_out *fo, uint64_t slot, uint64_t owner, bool trainable, const ckpt_entry_info *e,
                      const slot_health *h, double lr, double weight_decay, bool adamw)
{
    unsigned long long us = slot;
    strbuf sf = {0};
    double u_rms = h->u_finite ? sqrt(h->u_sum_sq / (double)h->u_finite) : 0;
    double p_rms = h->p_finite ? sqrt(h->p_sum_sq / (double)h->p_finite) : 0;
    bool has_lr = !isnan(lr);
    bool has_ratio = has_lr && h->has_update && h->has_param && p_rms > 0;
    double ratio = has_ratio ? lr * u_rms / p_rms : 0;
    if (h->has_param && (h->p_nan || h->p_inf))
        flag(fo, &sf, slot, "parameterNonFinite", "parameter %llu: its values hold %llu NaN and %llu infinite values", us,
             (unsigned long long)h->p_nan, (unsigned long long)h->p_inf);
    if (h->has_update && owner == slot && (h->moment_nan || h->moment_inf))
        flag(fo, &sf, slot, "momentsNonFinite", "parameter %llu: its moments hold %llu NaN and %llu infinite values", us,
             (unsigned long long)h->moment_nan, (unsigned long long)h->moment_inf);
    if (h->has_update && owner == slot && h->v_negative)
        flag(fo, &sf, slot, "negativeV", "parameter %llu: its second moment holds %llu negative value%s", us,
             (unsigned long long)h->v_negative, h->v_negative == 1 ? "" : "s");
    if (h->has_update && owner == slot && h->inconsistent)
        flag(fo, &sf, slot, "inconsistent",
             "parameter %llu: %llu element%s with |m| beyond what any gradient history gives for these betas: corrupted moments, or betas that are not the ones they were built with",
             us, (unsigned long long)h->inconsistent, h->inconsistent == 1 ? "" : "s");
    if (has_ratio && ratio > RATIO_HIGH)
        flag(fo, &sf, slot, "ratioHigh", "parameter %llu: update-to-weight ratio %.3g is above 1e-2 at lr %g", us, ratio, lr);
    if (has_ratio && ratio < RATIO_LOW)
        flag(fo, &sf, slot, "ratioLow", "parameter %llu: update-to-weight ratio %.3g is below 1e-5 at lr %g", us, ratio, lr);

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
    if (h->has_param) {
        sb_puts(sb, "{\"rms\":");
        j_num_or_null(sb, h->p_finite > 0, p_rms);
        sb_puts(sb, ",\"maxAbs\":");
        j_num_or_null(sb, h->p_finite > 0, h->p_max);
        sb_puts(sb, ",\"nan\":");
        j_u64(sb, h->p_nan);
        sb_puts(sb, ",\"inf\":");
        j_u64(sb, h->p_inf);
        sb_puts(sb, "}");
    } else sb_puts(sb, "null");
    sb_puts(sb, ",\"update\":");
    if (h->has_update) {
        sb_puts(sb, "{\"rms\":");
        j_num_or_null(sb, h->u_finite > 0, u_rms);
        sb_puts(sb, ",\"maxAbs\":");
        j_num_or_null(sb, h->u_finite > 0, h->u_max);
        sb_puts(sb, "}");
    } else sb_puts(sb, "null");
    sb_puts(sb, ",\"ratio\":");
    j_num_or_null(sb, has_ratio, ratio);
    sb_puts(sb, ",\"decay\":");
    j_num_or_null(sb, has_lr && h->has_update, adamw ? lr * weight_decay : 0);
    sb_puts(sb, ",\"neverUpdated\":");
    j_u64(sb, h->has_update ? h->never_updated : 0);
    sb_puts(sb, ",\"inconsistent\":");
    j_u64(sb, h->has_update ? h->inconsistent : 0);
    sb_puts(sb, ",\"nonFinite\":");
    j_u64(sb, h->has_update ? h->moment_nan + h->moment_inf : 0);
    sb_printf(sb, ",\"flags\":[%s]}", sf.data ? sf.data : "");
    sb_free(&sf);
}

/* Pairing's cheap part (format.md 6 steps 1-2): the first failure, or 0. */
static int pairs_by_shape(const ckpt_schema *so, const ckpt_report *rs, ckpt_error *err)
{
    size_t n = ckpt_schema_count(so), c = ckpt_schema_count(rs->schema);
    if (c != n)
        return ckpt_fail(err, NULL, CKPT_E_PAIR_COUNT, rs->schema_offset, 8, "state file has %zu tensors, the optimizer checkpoint has %zu parameter slots",
                         c, n);
    for (size_t i = 0; i < n; i++) {
        if (ckpt_schema_same_shape(so, i, rs->schema, i)) continue;
        strbuf sb = {0};
        sb_printf(&sb, "parameter %zu: state shape ", i);
        ckpt_shape_print_list(&sb, ckpt_schema_dims(rs->schema, i), ckpt_schema_rank(rs->schema, i));
        sb_puts(&sb, " differs from the optimizer's ");
        ckpt_schema_print_shape(&sb, so, i);
        if (sb.failed) ckpt_fail_oom(err);
        else ckpt_fail_at(err, NULL, CKPT_E_PAIR_SHAPE, rs->tensors[i].offset, 8 * (ckpt_schema_rank(rs->schema, i) + 1), i, "%s", sb.data);
        sb_free(&sb);
        return err->code;
    }
    return 0;
}

char *ckpt_health_json(const ckpt_file *opt, const ckpt_file *state, const ckpt_health_options *o, ckpt_error *err)
{
    const ckpt_report *ro = ckpt_file_report(opt), *rs = state ? ckpt_file_report(state) : NULL;
    if (!ro->family || !ro->family->optimizer) {
        ckpt_fail(err, NULL, CKPT_E_WRONG_FAMILY, CKPT_NONE, 0, "the first file is not an optimizer checkpoint (TLADAMF)");
        return NULL;
    }
    if (rs && (!rs->family || rs->family->optimizer)) {
        ckpt_fail(err, NULL, CKPT_E_WRONG_FAMILY, CKPT_NONE, 0, "the second file is not a model-state file (TLSF32B or TLPF32B)");
        return NULL;
    }
    if (ro->error.code || (rs && rs->error.code)) {
        /* every entry and tensor must be there: health reads them all */
        ckpt_fail(err, NULL, CKPT_E_NOT_READABLE, CKPT_NONE, 0, "cannot compute health: the %s is invalid",
                  ro->error.code ? "optimizer checkpoint" : "state file");
        return NULL;
    }
    const ckpt_schema *s = ro->schema;
    size_t n = ckpt_schema_count(s);
    ckpt_error pair_err = {0};
    ckpt_error_clear(&pair_err);
    bool pairs = !rs || pairs_by_shape(s, rs, &pair_err) == 0;
    uint64_t first = o && o->first_slot < n ? o->first_slot : o ? n : 0;
    uint64_t last = o && o->slot_count < n - first ? first + o->slot_count : n;
    double lr = o ? o->lr : NAN;

    pass ps = {0};
    ps.opt_src = ckpt_file_source(opt);
    ps.state_src = rs && pairs ? ckpt_file_source(state) : NULL;
    ps.width = ckpt_width(ro->dtype);
    ps.moments_chunk = ps.width == 8 ? moments_chunk64 : moments_chunk32;
    ps.params_chunk = params_chunk;
    ps.beta1 = ckpt_double_from_bits(ro->config.beta1);
    ps.beta2 = ckpt_double_from_bits(ro->config.beta2);
    ps.eps = ckpt_double_from_bits(ro->config.epsilon);
    if (ro->dtype == CKPT_FLOAT32) ps.eps = (float)ps.eps;   /* the moments' dtype holds epsilon at run time */
    ps.v_floor = ro->dtype == CKPT_FLOAT64 ? DBL_MIN : FLT_MIN;
    ps.c = ps.beta1 * ps.beta1 < ps.beta2
               ? (1 - ps.beta1) / sqrt((1 - ps.beta2) * (1 - ps.beta1 * ps.beta1 / ps.beta2)) : 0;
    ps.progress = o ? o->progress : NULL;
    ps.progress_ctx = o ? o->progress_ctx : NULL;
    ps.err = err;
    double weight_decay = ckpt_double_from_bits(ro->config.weight_decay);
    bool adamw = ro->config.kind == CKPT_ADAMW;

    /* the entry of each owner, and the bytes the pass will read (for progress) */
    size_t *entry_of = malloc((n ? n : 1) * sizeof *entry_of);
    if (!entry_of) {
        ckpt_fail_oom(err);
        return NULL;
    }
    for (size_t i = 0; i < n; i++) entry_of[i] = SIZE_MAX;
    for (size_t k = 0; k < ro->entries_len; k++) entry_of[ro->entries[k].id] = k;
    for (uint64_t i = first; i < last; i++) {
        uint64_t r = ckpt_schema_representative(s, i);
        uint64_t count = ckpt_schema_size(s, (size_t)i, NULL);
        if (r != CKPT_NONE) ps.total += 2 * count * ps.width;
        if (ps.state_src) ps.total += 4 * count;
    }
    ps.m = malloc(CHUNK * ps.width);
    ps.v = malloc(CHUNK * ps.width);
    ps.theta = malloc(CHUNK * sizeof *ps.theta);
    strbuf sb = {0}, fl = {0};
    flags_out fo = {&fl, 0};
    int rc = ps.m && ps.v && ps.theta ? 0 : ckpt_fail_oom(err);
    /* a state file of another model: its parameters are not this checkpoint's (ok false, the
     * first pairing failure as the error); the moments' health is still computed */
    sb_printf(&sb, "{\"ok\":%s,\"pairs\":%s,\"lr\":", pairs ? "true" : "false", pairs ? "true" : "false");
    j_num_or_null(&sb, !isnan(lr), lr);
    sb_puts(&sb, ",\"c\":");
    j_num_or_null(&sb, ps.c > 0, ps.c);
    sb_puts(&sb, ",\"first\":");
    j_u64(&sb, first);
    sb_puts(&sb, ",\"slots\":[");
    for (uint64_t i = first; i < last && !rc; i++) {
        uint64_t r = ckpt_schema_representative(s, i);
        const ckpt_entry_info *e = r != CKPT_NONE ? &ro->entries[entry_of[r]] : NULL;
        const ckpt_tensor_info *t = ps.state_src ? &rs->tensors[i] : NULL;
        slot_health h;
        if ((rc = slot_pass(&ps, e, t, ckpt_schema_size(s, (size_t)i, NULL), &h))) break;
        if (i > first) sb_puts(&sb, ",");
        slot_json(&sb, &fo, i, r, ckpt_schema_requires_grad(s, (size_t)i), e, &h, lr, weight_decay, adamw);
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
