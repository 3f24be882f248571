/* Conversion (format.md 8 "Conversion"): the state of a valid TLADAMF file rewritten as another
 * version with the reference writer's layout (format.md 4: header, schema, tags from v3, entries
 * by ascending id), payloads streamed in chunks. What a version cannot hold without loss is
 * refused with a text naming the option that allows it. */
#include "families/tladamf/tladamf.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LOSES CKPT_E_CONVERSION_LOSES, CKPT_NONE, 0

/* One loss version v would make, and the option that allows it: the first is the error, every
 * one is named in its hint (all at once, not one run at a time). */
typedef struct losses {
    ckpt_error *err;
    unsigned n;
    strbuf options;
} losses;

static void lose(losses *l, const char *option, const char *fmt, unsigned long long v)
{
    if (l->n++ == 0) ckpt_fail(l->err, NULL, LOSES, fmt, v);
    sb_printf(&l->options, "%s%s", l->n > 1 ? " " : "", option);
}

/* May the file's state be written as version v with these options? */
static int allowed(const ckpt_report *rep, uint64_t v, const ckpt_convert_options *o, ckpt_error *err)
{
    unsigned long long uv = v;
    bool counter = rep->tladamf.counter_state == 1 || o->supply_random_counter;
    if (v < 2 || v > 5)
        return ckpt_fail(err, NULL, CKPT_E_INVALID_ARGUMENT, CKPT_NONE, 0,
                         "cannot convert to version %llu; expected 2 through 5", uv);
    losses l = {err, 0, {0}};
    if (rep->dtype == CKPT_FLOAT64 && !o->round_to_float32 && v != 5)
        lose(&l, "--round-to-float32",
             "version %llu cannot hold float64 moments: --round-to-float32 rounds them (the largest relative "
             "error is reported)",
             uv);
    if (counter && v < 4 && !o->drop_random_counter)
        lose(&l, "--drop-random-counter",
             "version %llu cannot hold the random counter: --drop-random-counter drops it (stochastic training "
             "then cannot resume exactly)",
             uv);
    if (!counter && v == 4)
        lose(&l, "--random-counter N",
             "version %llu always holds a random counter and the file has none: --random-counter N supplies one", uv);
    if (v == 2 && !o->untie && ckpt_schema_has_aliases(rep->schema))
        lose(&l, "--untie",
             "version %llu cannot hold tied parameters: --untie gives every alias its own copy of its owner's "
             "moments and step (loadable only where the model's weights are untied too)",
             uv);
    if (l.n > 1 && err && !l.options.failed) {
        strbuf hint = {0};
        sb_printf(&hint, "version %llu needs all of: %s", uv, l.options.data);
        if (!hint.failed) ckpt_set_hint(err, hint.data);
        sb_free(&hint);
    }
    sb_free(&l.options);
    return l.n ? CKPT_E_CONVERSION_LOSES : 0;
}

int ckpt_convert_plan(const ckpt_file *in, const ckpt_convert_options *o, ckpt_convert_result *res, ckpt_error *err)
{
    const ckpt_report *rep = in ? ckpt_file_report(in) : NULL;
    if (!rep || !o || !res)
        return ckpt_fail(err, NULL, CKPT_E_INVALID_ARGUMENT, CKPT_NONE, 0, "invalid arguments to convert");
    const struct ckpt_family_impl *impl = rep->family ? rep->family->impl : NULL;
    if (rep->family && rep->family->id != CKPT_FAMILY_TLADAMF && !(impl->convert_config && !rep->error.code))
        return ckpt_fail(err, NULL, CKPT_E_WRONG_FAMILY, CKPT_NONE, 0,
                         "this is a %s (%s): only optimizer checkpoints are converted", rep->family->name,
                         rep->family->magic);
    if (rep->error.code || !rep->family)
        return ckpt_fail(err, NULL, CKPT_E_NOT_READABLE, CKPT_NONE, 0, "cannot convert: the file is invalid");
    TRY(ckpt_require_schema(rep, err));
    bool torch_options = o->kind || o->has_weight_decay || o->has_betas || o->has_eps || o->drop_amsgrad;
    if (torch_options && !impl->convert_config)
        return ckpt_fail(err, NULL, CKPT_E_INVALID_ARGUMENT, CKPT_NONE, 0,
                         "--kind, --weight-decay, --betas, --eps and --drop-amsgrad go with a PyTorch optimizer: "
                         "this file holds one configuration of its own");
    ckpt_config config = rep->config;
    if (impl->convert_config) TRY(impl->convert_config(rep, o, &config, err));
    if (o->supply_random_counter && rep->tladamf.counter_state == 1)
        return ckpt_fail(err, NULL, CKPT_E_INVALID_ARGUMENT, CKPT_NONE, 0,
                         "--random-counter supplies a counter to a file without one: this file has %llu",
                         (unsigned long long)rep->tladamf.random_counter);
    *res = (ckpt_convert_result){0,
                                 rep->dtype == CKPT_FLOAT64 && !o->round_to_float32 ? CKPT_FLOAT64 : CKPT_FLOAT32,
                                 rep->dtype == CKPT_FLOAT64 && o->round_to_float32,
                                 0.0,
                                 config,
                                 rep->dtype == CKPT_FLOAT16 || rep->dtype == CKPT_BFLOAT16};
    if (o->version) {
        TRY(allowed(rep, o->version, o, err));
        res->version = o->version;
        return 0;
    }
    if (o->oldest) {
        for (uint64_t v = 2; v <= 5; v++)
            if (!allowed(rep, v, o, NULL)) return res->version = v, 0;
        return allowed(rep, 5, o, err);
    }
    const ckpt_reader_rule *rule = o->reader ? ckpt_reader_rule_get(o->reader) : NULL;
    if (!rule)
        return ckpt_fail(err, NULL, CKPT_E_INVALID_ARGUMENT, CKPT_NONE, 0,
                         "convert needs a version, oldest, or a reader");
    for (uint64_t v = rule->version_max; v >= 2; v--)
        if (!allowed(rep, v, o, NULL)) return res->version = v, 0;
    return allowed(rep, rule->version_max, o, err);
}

/* ---- the payloads, chunk by chunk ---- */

typedef struct copy {
    const ckpt_sink *out;
    ckpt_error *err;
    bool narrow; /* float64 in, float32 out */
    int widen;   /* float16 or bfloat16 in (its dtype), float32 out: exact; -1 none */
    ckpt_convert_result *res;
    uint64_t id, at;   /* the entry's id, the element index of the chunk */
    const char *which; /* "m" or "v" */
} copy;

static int copy_chunk(void *ctx, const void *data, size_t elements)
{
    copy *c = ctx;
    if (c->widen >= 0) { /* every float16 and bfloat16 value is a float32 value */
        const uint8_t *p = data;
        for (size_t k = 0; k < elements;) {
            size_t n = elements - k < 1024 ? elements - k : 1024;
            double wide[1024];
            float buf[1024];
            ckpt_dtype_widen(c->widen, p + 2 * k, n, wide);
            for (size_t j = 0; j < n; j++) buf[j] = (float)wide[j];
            TRY(ckpt_sink_bytes(c->out, buf, n * 4, c->err));
            k += n;
        }
        return 0;
    }
    if (!c->narrow) return ckpt_sink_bytes(c->out, data, elements * ckpt_dtype_width(c->res->dtype), c->err);
    float buf[1024];
    const uint8_t *p = data;
    for (size_t k = 0; k < elements;) {
        size_t n = elements - k < 1024 ? elements - k : 1024;
        for (size_t j = 0; j < n; j++) {
            double x;
            memcpy(&x, p + 8 * (k + j), 8); /* the chunk need not be aligned */
            float f = (float)x;
            if (isinf(f) && isfinite(x)) {
                char value[96];
                snprintf(value, sizeof value, "the value is %.17g; float32 ends near 3.4028235e38", x);
                ckpt_fail_at(c->err, NULL, CKPT_E_CONVERSION_LOSES, CKPT_NONE, 0, c->id,
                             "parameter %llu: %s element %llu becomes infinite in float32: it cannot be rounded",
                             (unsigned long long)c->id, c->which, (unsigned long long)(c->at + k + j));
                ckpt_set_hint(c->err, value);
                return c->err->code;
            }
            if (x != 0.0 && isfinite(x)) {
                double rel = fabs(((double)f - x) / x);
                if (rel > c->res->max_relative_error) c->res->max_relative_error = rel;
            }
            buf[j] = f;
        }
        TRY(ckpt_sink_bytes(c->out, buf, n * 4, c->err));
        k += n;
    }
    c->at += elements;
    return 0;
}

static int copy_payload(ckpt_reader *r, uint64_t offset, uint64_t count, copy *c)
{
    r->pos = offset;
    c->at = 0;
    unsigned width = c->widen >= 0 ? 2 : ckpt_dtype_width(c->narrow ? CKPT_FLOAT64 : c->res->dtype);
    return ckpt_stream_payload(r, count, width, copy_chunk, c, c->err);
}

int ckpt_convert(const ckpt_file *in, const ckpt_convert_options *o, const ckpt_sink *out, ckpt_convert_result *res,
                 ckpt_error *err)
{
    ckpt_convert_result local;
    if (!res) res = &local;
    if (!out) return ckpt_fail(err, NULL, CKPT_E_INVALID_ARGUMENT, CKPT_NONE, 0, "invalid arguments to convert");
    TRY(ckpt_convert_plan(in, o, res, err));
    const ckpt_report *rep = ckpt_file_report(in);
    uint64_t v = res->version;
    bool counter = v >= 4 && (rep->tladamf.counter_state == 1 || o->supply_random_counter);
    uint64_t counter_value = rep->tladamf.counter_state == 1 ? rep->tladamf.random_counter : o->random_counter;
    ckpt_schema *untied = o->untie ? ckpt_schema_untied(rep->schema) : NULL;
    if (o->untie && !untied) return ckpt_fail_oom(err);
    const ckpt_schema *layout = untied ? untied : rep->schema;
    ckpt_reader *r = ckpt_reader_with_prefix(ckpt_file_source(in), rep->family->prefix);
    if (!r) {
        ckpt_schema_free(untied);
        return ckpt_fail_oom(err);
    }
    copy c = {out, err, res->rounded, res->widened ? rep->dtype : -1, res, 0, 0, "m"};
    int rc = ckpt_adam_write_header(v, res->dtype, &res->config, counter, counter_value, out, err);
    if (!rc) rc = ckpt_schema_write(layout, out, err);
    if (!rc && v >= 3) rc = ckpt_schema_write_representatives(layout, out, err);
    if (!rc) rc = ckpt_sink_u64(out, ckpt_schema_optimizer_state_count(layout), err);
    uint64_t done = 0;
    size_t n = ckpt_schema_count(layout);
    for (size_t i = 0; i < n && !rc; i++) {
        if (!ckpt_schema_is_representative(layout, i)) continue;
        const ckpt_entry_info *e;
        uint64_t owner; /* an untied alias takes its owner's moments and step */
        if ((rc = ckpt_file_entry(in, i, &e, &owner, err))) break;
        uint8_t rec[24];
        ckpt_put_u64le(rec, i);
        ckpt_put_u64le(rec + 8, e->step);
        ckpt_put_u64le(rec + 16, e->count);
        c.id = i;
        if ((rc = ckpt_sink_bytes(out, rec, sizeof rec, err))) break;
        c.which = "m";
        if ((rc = copy_payload(r, e->m_offset, e->count, &c))) break;
        c.which = "v";
        if ((rc = copy_payload(r, e->v_offset, e->count, &c))) break;
        done += 2 * e->count * ckpt_dtype_width(rep->dtype);
        if (o->progress && o->progress(o->progress_ctx, done, CKPT_NONE))
            rc = ckpt_fail(err, NULL, CKPT_E_CANCELLED, CKPT_NONE, 0, "convert cancelled");
    }
    ckpt_reader_free(r);
    ckpt_schema_free(untied);
    return rc;
}

char *ckpt_convert_result_json(const ckpt_convert_result *res, const char *untrained_note)
{
    strbuf sb = {0};
    sb_printf(&sb, "{\"version\":%llu,\"dtype\":\"%s\",\"rounded\":%s,\"maxRelativeError\":",
              (unsigned long long)res->version, ckpt_dtype_name(res->dtype), res->rounded ? "true" : "false");
    j_double(&sb, res->max_relative_error);
    if (res->widened) sb_puts(&sb, ",\"widened\":true"); /* float16 / bfloat16 moments, exactly */
    if (untrained_note) {                                /* as ckpt_pair_json's "error" */
        ckpt_error e;
        ckpt_error_clear(&e);
        e.code = CKPT_E_TORCH_UNTRAINED;
        e.message = (char *)untrained_note;
        char *ej = ckpt_error_json(&e);
        if (!ej) {
            sb_free(&sb);
            return NULL;
        }
        sb_puts(&sb, ",\"pairError\":");
        sb_puts(&sb, ej);
        free(ej);
    }
    sb_putc(&sb, '}');
    return sb_take(&sb);
}
