/* The PyTorch family (format.md 10): torch.save files, a zip archive (any prefix) or the legacy
 * format's pickles, read as data by the torch object model (torch_objects.c) and presented
 * through the front door. Nothing a file names is called.
 *
 * Opening reads the zip's central directory, the object's pickle and each record's local header
 * (a legacy file: its pickles and the storages' headers), no tensor's data; statistics read the
 * moments of the first optimizer state dict (exp_avg, exp_avg_sq, max_exp_avg_sq) through the
 * dtype table. The report has the container, the optimizer with its groups and its entries by
 * index, the model state dicts, and torch.load(weights_only=True)'s verdict. This module is the
 * whole family: the probe, the reader, its report members and its descriptor. */
#include "internal.h"
#include "torch_objects.h"

#include <stdlib.h>
#include <string.h>

typedef struct tf_data {
    ckpt_torch *t;
    ckpt_stats **stats; /* per entry of the first optimizer: exp_avg, exp_avg_sq, max_exp_avg_sq */
} tf_data;

static void tf_free(void *p)
{
    tf_data *d = p;
    if (d->t && d->stats && d->t->optimizers_len)
        for (size_t k = 0; k < 3 * d->t->optimizers[0].entries_len; k++) ckpt_stats_free(d->stats[k]);
    free(d->stats);
    ckpt_torch_free(d->t);
    free(d);
}

/* A zip whose first member sits in a folder (torch.save writes "{prefix}/data.pkl", ...: a
 * NumPy .npz's members have none), or a pickle whose first object is the legacy magic number
 * 0x1950a86a20f9469cfc6c (protocol 2, LONG1 of 10 bytes). */
static bool tf_probe(const ckpt_family *f, const uint8_t *head, size_t n, uint64_t size)
{
    (void)f;
    (void)size;
    static const uint8_t legacy[] = {0x80, 0x02, 0x8a, 0x0a, 0x6c, 0xfc, 0x9c,
                                     0x46, 0xf9, 0x20, 0x6a, 0xa8, 0x50, 0x19};
    if (n >= sizeof legacy && !memcmp(head, legacy, sizeof legacy)) return true;
    if (n < 30 || memcmp(head, "PK\x03\x04", 4)) return false;
    size_t len = (size_t)head[26] | (size_t)head[27] << 8;
    for (size_t k = 0; k < len && 30 + k < n; k++)
        if (head[30 + k] == '/') return true;
    return false;
}

static int dtype_of(const char *torch_name)
{
    for (int d = 0; d < CKPT_DTYPE_COUNT; d++)
        if (ckpt_dtype_name(d) && !strcmp(ckpt_dtype_name(d), torch_name)) return d;
    return -1;
}

/* Statistics of tensor k (contiguous, of a dtype with statistics), else none. */
static int scan_tensor(ckpt_parse *p, const ckpt_torch *t, size_t k, ckpt_stats **out)
{
    if (k == CKPT_TORCH_NONE) return 0;
    const ckpt_torch_tensor *x = &t->tensors[k];
    int dtype = dtype_of(x->dtype);
    if (!x->contiguous || !ckpt_dtype_has_stats(dtype)) return 0;
    p->r->pos = x->at;
    return ckpt_scan_payload_dtype(p->r, &p->scan, x->count, dtype, out, p->err);
}

static int tf_parse(ckpt_parse *p)
{
    ckpt_report *rep = p->rep;
    tf_data *d = calloc(1, sizeof *d);
    if (!d) return ckpt_fail_oom(p->err);
    rep->family_data = d;
    rep->dtype = CKPT_DTYPE_ANY;
    TRY(ckpt_torch_open(p->r->src, "file", &d->t, p->err));
    /* no slots until a model is paired: an empty schema, so what asks for slots finds none */
    if (!(rep->schema = ckpt_schema_empty())) return ckpt_fail_oom(p->err);
    rep->schema_complete = true;
    const ckpt_torch *t = d->t;
    strbuf w = {0};
    ckpt_torch_weights_only_warning(&w, t);
    if (w.failed || (w.len && !ckpt_report_warn(rep, "%s", w.data))) {
        sb_free(&w);
        return ckpt_fail_oom(p->err);
    }
    sb_free(&w);
    if (!(p->flags & CKPT_INSPECT_STATS) || !t->optimizers_len) return 0;
    const ckpt_torch_optimizer *o = &t->optimizers[0];
    if (!(d->stats = calloc(3 * o->entries_len + 1, sizeof *d->stats))) return ckpt_fail_oom(p->err);
    p->scan.start = 0;
    p->scan.total = rep->size;
    for (size_t k = 0; k < o->entries_len; k++) {
        const ckpt_torch_entry *e = &t->entries[o->entries + k];
        TRY(scan_tensor(p, t, e->exp_avg, &d->stats[3 * k]));
        TRY(scan_tensor(p, t, e->exp_avg_sq, &d->stats[3 * k + 1]));
        TRY(scan_tensor(p, t, e->max_exp_avg_sq, &d->stats[3 * k + 2]));
    }
    return 0;
}

/* ---- the report's members ---- */

static void j_dims(strbuf *sb, const ckpt_torch *t, size_t k)
{
    const uint64_t *d = ckpt_torch_size(t, k);
    sb_putc(sb, '[');
    for (uint32_t j = 0; j < t->tensors[k].rank; j++) {
        if (j) sb_putc(sb, ',');
        j_u64(sb, d[j]);
    }
    sb_putc(sb, ']');
}

static void j_num(strbuf *sb, const char *key, bool has, double x)
{
    sb_printf(sb, ",\"%s\":", key);
    if (has) j_double(sb, x);
    else sb_puts(sb, "null");
}

static void j_entry(strbuf *sb, const ckpt_torch *t, const ckpt_torch_entry *e, ckpt_stats *const *st)
{
    const size_t lead = e->exp_avg != CKPT_TORCH_NONE                                  ? e->exp_avg
                        : e->exp_avg_sq != CKPT_TORCH_NONE                             ? e->exp_avg_sq
                        : e->other_len && t->named[e->other].tensor != CKPT_TORCH_NONE ? t->named[e->other].tensor
                                                                                       : CKPT_TORCH_NONE;
    sb_printf(sb, "{\"index\":%lld,\"id\":%lld,\"group\":", (long long)e->index, (long long)e->index);
    if (e->group == CKPT_TORCH_NONE) sb_puts(sb, "null");
    else j_u64(sb, e->group);
    sb_puts(sb, ",\"shape\":");
    if (lead != CKPT_TORCH_NONE) j_dims(sb, t, lead);
    else sb_puts(sb, "null");
    sb_puts(sb, ",\"dtype\":");
    if (lead != CKPT_TORCH_NONE) j_string(sb, t->tensors[lead].dtype);
    else sb_puts(sb, "null");
    j_num(sb, "step", e->has_step, e->step);
    sb_puts(sb, ",\"count\":");
    if (lead != CKPT_TORCH_NONE) j_u64(sb, t->tensors[lead].count);
    else sb_puts(sb, "null");
    sb_puts(sb, ",\"offset\":");
    if (lead != CKPT_TORCH_NONE) j_u64(sb, t->tensors[lead].at);
    else sb_puts(sb, "null");
    if (st) {
        static const char *const keys[] = {"m", "v", "vmax"};
        for (int j = 0; j < 3; j++) {
            if (j == 2 && e->max_exp_avg_sq == CKPT_TORCH_NONE) continue;
            sb_printf(sb, ",\"%s\":", keys[j]);
            if (st[j]) j_stats(sb, st[j]);
            else sb_puts(sb, "null");
        }
    }
    sb_puts(sb, ",\"other\":[");
    for (size_t j = 0; j < e->other_len; j++) {
        if (j) sb_putc(sb, ',');
        j_string(sb, t->named[e->other + j].name);
    }
    sb_puts(sb, "]}");
}

static void j_optimizer(strbuf *sb, const ckpt_torch *t, size_t k, ckpt_stats *const *stats)
{
    static const char *const kinds[] = {"null", "\"adam\"", "\"adamw\""};
    const ckpt_torch_optimizer *o = &t->optimizers[k];
    sb_puts(sb, "{\"path\":");
    j_string(sb, o->path);
    sb_printf(sb, ",\"kind\":%s,\"groups\":[", kinds[o->kind]);
    for (size_t g = 0; g < o->groups_len; g++) {
        if (g) sb_putc(sb, ',');
        ckpt_torch_group_json(sb, t, &t->groups[o->groups + g], false);
    }
    sb_printf(sb, "],\"entryCount\":%zu}", o->entries_len);
    (void)stats;
}

static void tf_json(ckpt_jw *w, const ckpt_report *rep, bool bulk)
{
    (void)bulk;
    strbuf *sb = ckpt_jw_text(w);
    const tf_data *d = rep->family_data;
    const ckpt_torch *t = d ? d->t : NULL;
    /* TLADAMF's members that a PyTorch file has not */
    sb_puts(sb, ",\"config\":null,\"randomCounter\":null,\"hasRandomCounter\":null,\"schema\":null,\"slotCount\":null");
    if (!t) {
        sb_puts(sb, ",\"container\":null,\"optimizer\":null,\"otherOptimizers\":[],\"models\":[],\"model\":null,"
                    "\"weightsOnly\":null,\"globals\":[],\"refused\":[],\"entryCount\":null,\"entries\":[]");
        return;
    }
    sb_printf(sb, ",\"container\":{\"format\":\"%s\",\"prefix\":", t->legacy ? "legacy" : "zip");
    if (t->legacy) sb_puts(sb, "null");
    else j_string(sb, t->prefix);
    sb_puts(sb, ",\"records\":");
    j_u64(sb, t->records);
    sb_puts(sb, "},\"optimizer\":");
    if (t->optimizers_len) j_optimizer(sb, t, 0, NULL);
    else sb_puts(sb, "null");
    sb_puts(sb, ",\"otherOptimizers\":[");
    for (size_t k = 1; k < t->optimizers_len; k++) {
        if (k > 1) sb_putc(sb, ',');
        j_optimizer(sb, t, k, NULL);
    }
    sb_puts(sb, "],\"models\":[");
    for (size_t m = 0; m < t->models_len; m++) {
        const ckpt_torch_model *md = &t->models[m];
        sb_puts(sb, m ? ",{\"path\":" : "{\"path\":");
        j_string(sb, md->path);
        sb_puts(sb, ",\"tensors\":[");
        for (size_t j = 0; j < md->count; j++) {
            const ckpt_torch_named *nm = &t->named[md->first + j];
            sb_puts(sb, j ? ",{\"name\":" : "{\"name\":");
            j_string(sb, nm->name);
            sb_puts(sb, ",\"shape\":");
            j_dims(sb, t, nm->tensor);
            sb_puts(sb, ",\"dtype\":");
            j_string(sb, t->tensors[nm->tensor].dtype);
            sb_puts(sb, ",\"count\":");
            j_u64(sb, t->tensors[nm->tensor].count);
            sb_puts(sb, ",\"offset\":");
            j_u64(sb, t->tensors[nm->tensor].at);
            sb_putc(sb, '}');
        }
        sb_puts(sb, "]}");
    }
    sb_puts(sb, "],\"model\":");
    if (t->model == CKPT_TORCH_NONE) sb_puts(sb, "null");
    else j_string(sb, t->models[t->model].path);
    sb_printf(sb, ",\"weightsOnly\":%s,\"globals\":", ckpt_torch_weights_only(t) ? "true" : "false");
    ckpt_torch_globals_json(sb, t, false);
    sb_puts(sb, ",\"refused\":");
    ckpt_torch_globals_json(sb, t, true);
    sb_puts(sb, ",\"entryCount\":");
    if (t->optimizers_len) j_u64(sb, t->optimizers[0].entries_len);
    else sb_puts(sb, "null");
    sb_puts(sb, ",\"entries\":[");
    if (t->optimizers_len) { /* listed without the bulk arrays too: the columns hold none */
        const ckpt_torch_optimizer *o = &t->optimizers[0];
        for (size_t k = 0; k < o->entries_len; k++) {
            if (k) sb_putc(sb, ',');
            j_entry(sb, t, &t->entries[o->entries + k], d->stats ? d->stats + 3 * k : NULL);
        }
    }
    sb_puts(sb, "]");
}

static size_t tf_item_count(const ckpt_report *rep)
{
    (void)rep;
    return 0;
}

static const struct ckpt_family_impl torch_impl = {
    .probe = tf_probe,
    .parse = tf_parse,
    .payloads = 3,
    .item_count = tf_item_count,
    .json_body = tf_json,
    .free_data = tf_free,
    .slots_from_model = true,
    .holds = "optimizer state",
    .hint_not = "a model-state file",
};

const ckpt_family ckpt_family_pytorch = {CKPT_FAMILY_PYTORCH, "PyTorch",      "torch.save file", "PyTorch", 0, 0,
                                         CKPT_ROLE_OPTIMIZER, CKPT_DTYPE_ANY, &torch_impl};
