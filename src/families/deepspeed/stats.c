/* Statistics of each trainable owner's state (format.md 11.3, 5): exp_avg, exp_avg_sq,
 * max_exp_avg_sq and the fp32 masters, each streamed fragment by fragment in rank order (the
 * order of the parameter's elements), never gathered into a buffer. */
#include "families/deepspeed/deepspeed.h"

#include <stdlib.h>

typedef struct acc_ctx {
    ckpt_stats_acc acc;
    int dtype;
    unsigned width;
    ckpt_scan *scan;
    uint64_t done; /* bytes of the scan so far */
    ckpt_error *err;
    /* the masters' rounding check beside their statistics (mdtype < 0: none) */
    const ckpt_source *src;
    int mdtype;
    unsigned mwidth;
    uint64_t mat;    /* the module tensor's first byte in the source */
    uint64_t at;     /* elements of the parameter so far */
    uint64_t first;  /* the first that differs, CKPT_NONE */
    uint8_t *module; /* a chunk of the module's values */
    size_t module_cap;
} acc_ctx;

static bool same_bits(int dtype, uint32_t master, const uint8_t *module);

/* The module's values of the masters in `data` against them, until one differs. */
static int compare_chunk(acc_ctx *c, const void *data, size_t elements)
{
    size_t need = elements * c->mwidth;
    if (need > c->module_cap) {
        uint8_t *p = realloc(c->module, need);
        if (!p) return ckpt_fail_oom(c->err);
        c->module = p;
        c->module_cap = need;
    }
    TRY(ckpt_read_at(c->src, c->mat + (uint64_t)c->mwidth * c->at, c->module, need, "the module", c->err));
    const uint8_t *a = data;
    for (size_t i = 0; i < elements; i++) {
        uint32_t u;
        memcpy(&u, a + 4 * i, 4);
        if (!same_bits(c->mdtype, u, c->module + (size_t)c->mwidth * i)) {
            c->first = c->at + i;
            break;
        }
    }
    return 0;
}

static int on_chunk(void *ctx, const void *data, size_t elements)
{
    acc_ctx *c = ctx;
    ckpt_stats_dtype(&c->acc, c->dtype, data, elements);
    if (c->mdtype >= 0 && c->first == CKPT_NONE) TRY(compare_chunk(c, data, elements));
    c->at += elements;
    c->done += (uint64_t)elements * c->width;
    ckpt_scan *s = c->scan;
    if (s->progress && s->progress(s->progress_ctx, c->done, s->total))
        return ckpt_fail(c->err, NULL, CKPT_E_CANCELLED, CKPT_NONE, 0, "statistics scan cancelled");
    return 0;
}

static const ckpt_torch_tensor *module_tensor(const ckpt_ds *ds, size_t k, int *dtype);

int ds_stats(ckpt_ds *ds, ckpt_report *rep, ckpt_scan *scan, ckpt_error *err)
{
    (void)rep;
    if (!ds->layout_ok) return 0;
    ckpt_reader *r = ckpt_reader_with_prefix(ds->src, DS_PREFIX);
    acc_ctx *c = malloc(sizeof *c); /* the histogram: 17 KB, not on a wasm stack */
    ds_frag_at *frags = malloc((size_t)(ds->W ? ds->W : 1) * sizeof *frags);
    if (!r || !c || !frags) {
        ckpt_reader_free(r);
        free(c);
        free(frags);
        return ckpt_fail_oom(err);
    }
    /* the bytes in all, for progress */
    uint64_t total = 0;
    for (size_t k = 0; k < ds->params_len; k++)
        for (int key = 0; key < DS_KEYS; key++) {
            size_t n = ckpt_ds_fragments(ds, k, key, frags);
            for (size_t j = 0; j < n; j++) total += frags[j].count * ckpt_dtype_width(frags[j].dtype);
        }
    scan->total = total;
    c->scan = scan;
    c->done = 0;
    c->err = err;
    c->src = ds->src;
    c->module = NULL;
    c->module_cap = 0;
    int rc = 0;
    for (size_t k = 0; !rc && k < ds->params_len; k++) {
        ds_param *p = &ds->params[k];
        for (int key = 0; !rc && key < DS_KEYS; key++) {
            if (!ckpt_ds_has_key(ds, k, key)) continue;
            size_t n = ckpt_ds_fragments(ds, k, key, frags);
            bool one = ckpt_dtype_has_stats(frags[0].dtype);
            for (size_t j = 1; j < n; j++) one &= frags[j].dtype == frags[0].dtype;
            if (!one) continue; /* one dtype per key: a mixed one has no statistics */
            ckpt_stats_begin(&c->acc);
            c->dtype = frags[0].dtype;
            c->width = ckpt_dtype_width(c->dtype);
            /* the masters, float32 in every fragment: the module's values compared as they pass
             * (ds_rounding reads them again otherwise) */
            const ckpt_torch_tensor *x = NULL;
            c->mdtype = -1;
            if (key == DS_FP32 && c->dtype == CKPT_FLOAT32 && n == p->frags_len &&
                (x = module_tensor(ds, k, &c->mdtype))) {
                c->mwidth = ckpt_dtype_width(c->mdtype);
                c->mat = ds->files[ds->model].base + x->at;
            } else c->mdtype = -1;
            c->at = 0;
            c->first = CKPT_NONE;
            for (size_t j = 0; !rc && j < n; j++) {
                r->pos = frags[j].at;
                rc = ckpt_stream_payload(r, frags[j].count, c->width, on_chunk, c, err);
            }
            if (!rc && c->mdtype >= 0) {
                p->rounded = true;
                p->rounded_first = c->first;
            }
            if (!rc && !(p->stats[key] = ckpt_stats_finish(&c->acc))) rc = ckpt_fail_oom(err);
        }
    }
    ckpt_reader_free(r);
    free(c->module);
    free(c);
    free(frags);
    return rc;
}

/* ---- 11.5.30: the module's weights are the masters rounded to its dtype ---- */

/* float32 to bfloat16 and to float16, rounding to nearest even (torch's .to()) */
static uint16_t to_bf16(uint32_t u)
{
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40); /* NaN stays NaN */
    return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

static uint16_t to_f16(uint32_t u)
{
    uint32_t sign = (u >> 16) & 0x8000u, a = u & 0x7fffffffu;
    if (a > 0x7f800000u) return (uint16_t)(sign | 0x7e00u);
    if (a >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u); /* rounds past 65504: infinity */
    if (a < 0x38800000u) {                                   /* a subnormal half, or zero */
        if (a < 0x33000000u) return (uint16_t)sign;
        uint32_t m = (a & 0x7fffffu) | 0x800000u;
        int shift = 126 - (int)(a >> 23); /* the value is m * 2^-(shift + 24 - 24): 14 .. 24 bits to drop */
        uint32_t q = m >> shift, rest = m & ((1u << shift) - 1), half = 1u << (shift - 1);
        if (rest > half || (rest == half && (q & 1))) q++;
        return (uint16_t)(sign | q);
    }
    uint32_t h = ((a >> 13) - (112u << 10)), rest = a & 0x1fffu;
    if (rest > 0x1000u || (rest == 0x1000u && (h & 1))) h++;
    return (uint16_t)(sign | h);
}

static bool same_bits(int dtype, uint32_t master, const uint8_t *module)
{
    if (dtype == CKPT_FLOAT32) {
        uint32_t m;
        memcpy(&m, module, 4);
        return m == master || (((m & 0x7fffffffu) > 0x7f800000u) && ((master & 0x7fffffffu) > 0x7f800000u));
    }
    uint16_t m = (uint16_t)(module[0] | module[1] << 8), r = dtype == CKPT_BFLOAT16 ? to_bf16(master) : to_f16(master);
    bool nan_m = dtype == CKPT_BFLOAT16 ? (m & 0x7fffu) > 0x7f80u : (m & 0x7fffu) > 0x7c00u;
    return m == r || (nan_m && (master & 0x7fffffffu) > 0x7f800000u);
}

#define CHUNK 4096

/* The module's tensor of parameter k when the rounding check applies to it (ZeRO-1/2 and
 * BF16_Optimizer, a contiguous float32, bfloat16 or float16 tensor of its size), else NULL. */
static const ckpt_torch_tensor *module_tensor(const ckpt_ds *ds, size_t k, int *dtype)
{
    if (!ds->layout_ok || ds->kind == DS_ZERO3 || ds->model == DS_NONE) return NULL;
    const ds_file *m = &ds->files[ds->model];
    if (!m->read || m->module == DS_NONE) return NULL;
    const ckpt_torch *t = m->t;
    const ckpt_torch_model *md = &t->models[m->module];
    const ds_param *p = &ds->params[k];
    const ckpt_torch_tensor *x = NULL;
    /* the module's value of that name: its last setting, as Python's dict keeps it */
    for (size_t e = md->count; e-- > 0;)
        if (!strcmp(t->named[md->first + e].name, p->name)) {
            if (t->named[md->first + e].tensor != CKPT_TORCH_NONE) x = &t->tensors[t->named[md->first + e].tensor];
            break;
        }
    *dtype = x ? ckpt_torch_dtype(x->dtype) : -1;
    if (!x || !x->contiguous || x->count != p->count ||
        (*dtype != CKPT_FLOAT32 && *dtype != CKPT_BFLOAT16 && *dtype != CKPT_FLOAT16))
        return NULL;
    return x;
}

int ds_rounding(ckpt_ds *ds, ckpt_report *rep, ckpt_error *err)
{
    if (!ds->layout_ok || ds->kind == DS_ZERO3 || ds->model == DS_NONE) return 0;
    const ds_file *m = &ds->files[ds->model];
    if (!m->read || m->module == DS_NONE) return 0;
    ds_frag_at *frags = malloc((size_t)(ds->W ? ds->W : 1) * sizeof *frags);
    uint8_t *a = malloc(4 * CHUNK), *b = malloc(4 * CHUNK);
    int rc = frags && a && b ? 0 : ckpt_fail_oom(err);
    for (size_t k = 0; !rc && k < ds->params_len; k++) {
        const ds_param *p = &ds->params[k];
        int dtype;
        const ckpt_torch_tensor *x = module_tensor(ds, k, &dtype);
        if (!x) continue;
        size_t n = ckpt_ds_fragments(ds, k, DS_FP32, frags);
        if (n != p->frags_len) continue;
        unsigned w = ckpt_dtype_width(dtype);
        uint64_t at = 0, first = p->rounded ? p->rounded_first : CKPT_NONE;
        for (size_t j = 0; !rc && !p->rounded && j < n && first == CKPT_NONE; j++) {
            if (frags[j].dtype != CKPT_FLOAT32) break;
            for (uint64_t off = 0; !rc && off < frags[j].count && first == CKPT_NONE; off += CHUNK) {
                size_t c = (size_t)(frags[j].count - off < CHUNK ? frags[j].count - off : CHUNK);
                rc = ckpt_read_at(ds->src, frags[j].at + 4 * off, a, 4 * c, "the master weights", err);
                if (!rc) rc = ckpt_read_at(ds->src, m->base + x->at + (uint64_t)w * at, b, w * c, "the module", err);
                for (size_t i = 0; !rc && i < c; i++) {
                    uint32_t u;
                    memcpy(&u, a + 4 * i, 4);
                    if (!same_bits(dtype, u, b + (size_t)w * i)) {
                        first = at + i;
                        break;
                    }
                }
                at += c;
            }
        }
        if (!rc && first != CKPT_NONE)
            rc = ds_warn(rep,
                         "%s: the module's weights are not the master weights rounded to %s (first at element %llu)",
                         p->name, ckpt_dtype_name(dtype), (unsigned long long)first);
    }
    free(frags);
    free(a);
    free(b);
    return rc;
}
