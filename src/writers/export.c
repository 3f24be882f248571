/* Export (docs/export.md): an optimizer checkpoint's moments, or a model-state file's tensors,
 * as safetensors or as NumPy's .npz (a stored zip of .npy files), bit for bit and streamed: the
 * payloads go from the source to the sink a chunk at a time, so a 20 GB checkpoint exports in
 * flat memory. Moments are named as PyTorch's Adam names them, {name}.exp_avg and
 * {name}.exp_avg_sq (and amsgrad's {name}.max_exp_avg_sq), once per owner slot (a tied slot
 * shares its owner's); state tensors are {name}. The metadata (family, version, dtype, config,
 * groups, steps per name, representatives, names) is JSON text in safetensors' __metadata__ and
 * in a 0-d string array __metadata__.npy.
 *
 * safetensors: u64 header length N, N bytes of JSON {name: {dtype, shape, data_offsets}},
 * then the data, offsets relative to its start, contiguous.
 * .npz: a zip (containers/zip.c's writer) of .npy files (containers/npy.c's headers). */
#include "core/core.h"
#include "containers/npy.h"
#include "containers/zip.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define COPY_CHUNK (1024 * 1024)

/* ---- what is exported ---- */

typedef struct item {
    char *name;      /* the member or tensor name */
    uint64_t offset; /* in the source */
    uint64_t count;  /* elements */
    unsigned width;  /* bytes per element: ckpt_dtype_width of its dtype */
    size_t slot;     /* its shape is this slot's */
    int dtype;       /* its ckpt_dtype, kept in the export (BF16 stays BF16) */
    unsigned part;   /* an optimizer entry's payload: 0 exp_avg, 1 exp_avg_sq, 2 max_exp_avg_sq (3: masters) */
    /* its elements' runs in the source, in order (a DeepSpeed parameter's fragments; the report
     * owns them), NULL: count elements from offset */
    const ckpt_span *spans;
    size_t spans_len;
} item;

typedef struct plan {
    const ckpt_report *rep;
    item *items;
    size_t len;
    char *metadata;          /* JSON text */
    uint64_t data_bytes;     /* all payloads */
    const char **file_names; /* a state file's own tensor names, the default names (not owned) */
} plan;

static void plan_free(plan *p)
{
    for (size_t k = 0; k < p->len; k++) free(p->items[k].name);
    free(p->items);
    free(p->metadata);
    free(p->file_names);
}

static char *name_with(const char *base, const char *suffix)
{
    size_t a = strlen(base), b = strlen(suffix);
    char *s = malloc(a + b + 1);
    if (!s) return NULL;
    memcpy(s, base, a);
    memcpy(s + a, suffix, b + 1);
    return s;
}

/* The slot's name: the caller's, the file's own (a DeepSpeed module's parameter names), or
 * slot{i}. */
static void slot_name(const ckpt_report *rep, const ckpt_export_options *o, size_t i, char *buf, size_t cap,
                      const char **out)
{
    if (o->names) {
        *out = o->names[i];
        return;
    }
    const char *own = rep->family && rep->family->impl->slot_name ? rep->family->impl->slot_name(rep, i) : NULL;
    if (own) {
        *out = own;
        return;
    }
    snprintf(buf, cap, "slot%zu", i);
    *out = buf;
}

enum { NPZ_NAME_MAX = 65535 - 19 }; /* 19: strlen(".max_exp_avg_sq.npy"), the longest suffix written */

/* A byte a member name of an .npz does not hold as it is: a path separator (/, \), a drive's
 * colon, the escape itself (%), a control character. Written %XX (two upper-case hex digits), as
 * a URL is: a name is one file name wherever the archive is unpacked ("../../x" stays in its
 * folder, "/etc/x" is not absolute), and urllib.parse.unquote gives the name back. */
static bool npz_escaped(unsigned char ch)
{
    return ch == '/' || ch == '\\' || ch == ':' || ch == '%' || ch < 0x20 || ch == 0x7f;
}

static size_t npz_name_len(const char *name)
{
    size_t n = 0;
    for (const unsigned char *q = (const unsigned char *)name; *q; q++) n += npz_escaped(*q) ? 3 : 1;
    return n;
}

static void npz_name(strbuf *sb, const char *name)
{
    for (const unsigned char *q = (const unsigned char *)name; *q; q++)
        if (npz_escaped(*q)) sb_printf(sb, "%%%02X", *q);
        else sb_putc(sb, (char)*q);
}

typedef struct named {
    const char *name; /* "" for a missing one (reported as empty) */
    size_t slot;
} named;

static int by_name(const void *a, const void *b)
{
    const named *x = a, *y = b;
    int c = strcmp(x->name, y->name);
    return c ? c : (x->slot > y->slot) - (x->slot < y->slot);
}

/* One name per slot, none empty or reserved, no two alike; the first failing slot in slot order
 * is reported, with the first earlier slot of the same name. Sorted, not compared pairwise: a
 * million names check in a second, not hours. */
static int check_names(const ckpt_export_options *o, size_t n, ckpt_error *err)
{
    if (!o->names) return 0;
    if (o->name_count != n)
        return ckpt_fail(err, NULL, CKPT_E_INVALID_ARGUMENT, CKPT_NONE, 0,
                         "%zu names for %zu slots: give one name per slot", o->name_count, n);
    named *order = malloc((n ? n : 1) * sizeof *order);
    size_t *first = malloc((n ? n : 1) * sizeof *first);
    if (!order || !first) {
        free(order);
        free(first);
        return ckpt_fail_oom(err);
    }
    for (size_t i = 0; i < n; i++) order[i] = (named){o->names[i] ? o->names[i] : "", i};
    qsort(order, n, sizeof *order, by_name);
    /* first[i]: the smallest slot with slot i's name (i itself when it is the first) */
    for (size_t k = 0; k < n; k++)
        first[order[k].slot] =
            k && !strcmp(order[k].name, order[k - 1].name) ? first[order[k - 1].slot] : order[k].slot;
    int rc = 0;
    for (size_t i = 0; i < n && !rc; i++) {
        const char *s = o->names[i];
        if (!s || !*s || !strcmp(s, "__metadata__"))
            rc = ckpt_fail_at(err, NULL, CKPT_E_INVALID_ARGUMENT, CKPT_NONE, 0, i,
                              "name %zu is %s: every slot needs a name of its own", i,
                              !s || !*s ? "empty" : "__metadata__ (reserved)");
        /* a zip member name's length is 16 bits: the name, then .exp_avg_sq.npy at most */
        else if (o->format == CKPT_EXPORT_NPZ && npz_name_len(s) > NPZ_NAME_MAX)
            rc = ckpt_fail_at(
                err, NULL, CKPT_E_INVALID_ARGUMENT, CKPT_NONE, 0, i,
                "name %zu is %zu bytes long: an .npz name has at most %d bytes (a zip member name is at most 65535)", i,
                npz_name_len(s), NPZ_NAME_MAX);
        else if (first[i] != i)
            rc = ckpt_fail_at(err, NULL, CKPT_E_INVALID_ARGUMENT, CKPT_NONE, 0, i,
                              "slots %zu and %zu have the same name", first[i], i);
    }
    free(order);
    free(first);
    return rc;
}

/* The slots to export, as one flag per slot (NULL: all of them). Slots past n are not there. */
static int wanted_slots(const ckpt_export_options *o, size_t n, bool **out, ckpt_error *err)
{
    *out = NULL;
    if (!o->slots) return 0;
    if (!(*out = calloc(n ? n : 1, sizeof **out))) return ckpt_fail_oom(err);
    for (size_t q = 0; q < o->slot_count; q++)
        if (o->slots[q] < n) (*out)[o->slots[q]] = true;
    return 0;
}

/* The owners exported, keyed by their configuration: one parameter group each (ckpt_config_of_slot
 * gives every slot of a group the same one). */
typedef struct owner_key {
    uintptr_t config;
    size_t at; /* among the owners, in slot order */
} owner_key;

static int by_config(const void *a, const void *b)
{
    const owner_key *x = a, *y = b;
    if (x->config != y->config) return x->config < y->config ? -1 : 1;
    return (x->at > y->at) - (x->at < y->at);
}

typedef struct group_run {
    size_t first;      /* its first owner */
    size_t start, len; /* its keys */
} group_run;

static int by_first(const void *a, const void *b)
{
    const group_run *x = a, *y = b;
    return (x->first > y->first) - (x->first < y->first);
}

/* The metadata's "config" and "groups" (docs/export.md): the exported owners' parameter groups,
 * in the order of their first owner, each its configuration, learning rate (null where the file
 * stores none) and owners' names; "config" the configuration they all share, null when the groups
 * differ. The kind is null where the file does not say it. Sorted, not compared pairwise: a
 * million owners in one pass. */
static int group_metadata(strbuf *meta, const ckpt_report *rep, const ckpt_export_options *o, const size_t *owners,
                          size_t k)
{
    owner_key *keys = malloc((k ? k : 1) * sizeof *keys);
    group_run *runs = malloc((k ? k : 1) * sizeof *runs);
    if (!keys || !runs) {
        free(keys);
        free(runs);
        return -1;
    }
    for (size_t q = 0; q < k; q++) keys[q] = (owner_key){(uintptr_t)ckpt_config_of_slot(rep, owners[q]), q};
    qsort(keys, k, sizeof *keys, by_config);
    size_t g = 0;
    for (size_t q = 0; q < k; q++) {
        if (q && keys[q].config == keys[q - 1].config) runs[g - 1].len++;
        else runs[g++] = (group_run){keys[q].at, q, 1};
    }
    qsort(runs, g, sizeof *runs, by_first);
    const bool known = !ckpt_kind_unknown(rep);
#define RUN_CONFIG(j) ((const ckpt_config *)keys[runs[j].start].config)
    /* a group whose configuration the file does not keep (a DeepSpeed elastic checkpoint's):
     * "config" null, the group's object its lr and names only */
    bool same = g == 0 || RUN_CONFIG(0) != NULL;
    for (size_t j = 1; j < g; j++)
        same = same && RUN_CONFIG(j) && !ckpt_config_differences(RUN_CONFIG(0), rep->dtype, RUN_CONFIG(j), rep->dtype);
    strbuf c = {0};
    if (!g) j_config_as(&c, &rep->config, known);
    else if (same) j_config_as(&c, RUN_CONFIG(0), known);
    else sb_puts(&c, "null");
    sb_puts(meta, ",\"config\":");
    j_string(meta, c.failed ? "" : c.data);
    c.len = 0;
    char buf[32];
    sb_puts(&c, "[");
    for (size_t j = 0; j < g; j++) {
        if (j) sb_puts(&c, ",");
        if (RUN_CONFIG(j)) {
            j_config_as(&c, RUN_CONFIG(j), known);
            if (!c.failed) c.len--; /* the object goes on: its closing brace */
            sb_puts(&c, ",");
        } else sb_puts(&c, "{");
        double lr = ckpt_lr_of_slot(rep, owners[runs[j].first]);
        sb_puts(&c, "\"lr\":");
        j_num_or_null(&c, !isnan(lr), lr);
        sb_puts(&c, ",\"names\":[");
        for (size_t q = runs[j].start; q < runs[j].start + runs[j].len; q++) {
            const char *name;
            slot_name(rep, o, owners[keys[q].at], buf, sizeof buf, &name);
            if (q > runs[j].start) sb_puts(&c, ",");
            j_string(&c, name);
        }
        sb_puts(&c, "]}");
    }
#undef RUN_CONFIG
    sb_puts(&c, "]");
    sb_puts(meta, ",\"groups\":");
    j_string(meta, c.failed ? "" : c.data);
    bool failed = c.failed;
    sb_free(&c);
    free(keys);
    free(runs);
    return failed ? -1 : 0;
}

static int make_plan(const ckpt_file *f, const ckpt_export_options *o, plan *p, ckpt_error *err)
{
    const ckpt_report *rep = ckpt_file_report(f);
    memset(p, 0, sizeof *p);
    p->rep = rep;
    if (!rep->family)
        return ckpt_fail(err, NULL, CKPT_E_NOT_READABLE, CKPT_NONE, 0, "the file is not a TorchLean checkpoint");
    const struct ckpt_family_impl *impl = rep->family->impl;
    bool optimizer = ((impl->role_of ? impl->role_of(rep) : rep->family->role) & CKPT_ROLE_OPTIMIZER) != 0;
    /* a model's state dict (torch.save) exports its tensors as they are: which of them are slots
     * is its pairing's question, not the export's; a DeepSpeed folder reads its items */
    if (optimizer || !impl->bind || impl->unread) TRY(ckpt_require_items(rep, err));
    if (rep->error.code)
        return ckpt_fail(err, NULL, CKPT_E_NOT_READABLE, CKPT_NONE, 0, "cannot export: the file is invalid");
    const ckpt_schema *s = rep->schema;
    size_t n = ckpt_schema_count(s);
    TRY(check_names(o, n, err));
    /* a state file that names its tensors (safetensors, a torch.save state dict): its names are
     * the default, as torch and safetensors load them */
    ckpt_export_options own;
    bool named_tensors = !optimizer && !o->names && rep->tensors_len == n && n;
    for (size_t i = 0; named_tensors && i < n; i++) named_tensors = rep->tensors[i].name != NULL;
    if (named_tensors) {
        if (!(p->file_names = malloc(n * sizeof *p->file_names))) return ckpt_fail_oom(err);
        for (size_t i = 0; i < n; i++) p->file_names[i] = rep->tensors[i].name;
        own = *o;
        own.names = p->file_names;
        own.name_count = n;
        o = &own;
    }
    size_t cap = optimizer ? CKPT_MAX_PAYLOADS * rep->entries_len : rep->tensors_len;
    bool *wanted;
    TRY(wanted_slots(o, n > rep->tensors_len ? n : rep->tensors_len, &wanted, err));
    size_t *owners = NULL;
    p->items = calloc(cap ? cap : 1, sizeof *p->items);
    if (!p->items || (optimizer && !(owners = malloc((rep->entries_len ? rep->entries_len : 1) * sizeof *owners)))) {
        free(wanted);
        return ckpt_fail_oom(err);
    }
    strbuf meta = {0}, steps = {0}, what = {0};
    sb_puts(&meta, "{\"family\":");
    j_string(&meta, rep->family->magic);
    sb_printf(&meta, ",\"version\":\"%llu\"", (unsigned long long)rep->version);
    char buf[32];
    if (optimizer) {
        sb_printf(&meta, ",\"dtype\":\"%s\"", ckpt_dtype_name(rep->dtype));
        /* entries in slot order (the file's order is the writer's, sorted by id); each with every
         * payload its family has (amsgrad's max_exp_avg_sq too) */
        size_t k = 0;
        bool masters = false;
        sb_puts(&steps, "{");
        for (size_t i = 0; i < n; i++) {
            if (ckpt_schema_representative(s, i) != i) continue;
            if (wanted && !wanted[i]) continue;
            const ckpt_entry_info *e;
            ckpt_error none = {0};
            ckpt_error_clear(&none);
            int missing = ckpt_file_entry(f, i, &e, NULL, &none); /* file.c's slot -> entry map */
            ckpt_error_clear(&none);
            if (missing || k == rep->entries_len) continue;
            const char *name;
            slot_name(rep, o, i, buf, sizeof buf, &name);
            const ckpt_item it = ckpt_report_item(rep, (size_t)(e - rep->entries));
            for (unsigned q = 0; q < it.payloads; q++) {
                const ckpt_payload *x = &it.payload[q];
                char suffix[32];
                /* a payload of values (a DeepSpeed parameter's fp32 master weights) is {name} */
                snprintf(suffix, sizeof suffix, "%s%s", *x->name ? "." : "", x->name);
                unsigned w = ckpt_dtype_width(x->dtype);
                item *m = &p->items[p->len++];
                *m = (item){name_with(name, suffix), x->offset, x->count, w, i, x->dtype, q, x->spans, x->spans_len};
                if (!m->name) goto oom;
                p->data_bytes += x->count * w;
                /* what each tensor is, said when an entry holds values beside its moments */
                sb_puts(&what, what.len ? "," : "{");
                j_string(&what, m->name);
                sb_puts(&what, ":");
                j_string(&what, *x->name ? x->name : "fp32 master weights");
                masters |= !*x->name;
            }
            if (k) sb_puts(&steps, ",");
            owners[k++] = i;
            j_string(&steps, name);
            sb_puts(&steps, ":");
            j_u64(&steps, e->step);
        }
        sb_puts(&steps, "}");
        if (group_metadata(&meta, rep, o, owners, k)) goto oom;
        if (masters) {
            sb_puts(&what, "}");
            sb_puts(&meta, ",\"tensors\":");
            j_string(&meta, what.failed ? "" : what.data);
            if (what.failed) meta.failed = true;
        }
        sb_puts(&meta, ",\"steps\":");
        j_string(&meta, steps.failed ? "" : steps.data);
        sb_puts(&meta, ",\"representatives\":");
        strbuf r = {0};
        sb_puts(&r, "[");
        for (size_t i = 0; i < n; i++) {
            if (i) sb_puts(&r, ",");
            j_slot(&r, ckpt_schema_representative(s, i));
        }
        sb_puts(&r, "]");
        j_string(&meta, r.failed ? "" : r.data);
        sb_free(&r);
    } else {
        for (size_t i = 0; i < rep->tensors_len; i++) {
            if (wanted && !wanted[i]) continue;
            const char *name;
            slot_name(rep, o, i, buf, sizeof buf, &name);
            item *t = &p->items[p->len++];
            *t = (item){name_with(name, ""),
                        rep->tensors[i].data_offset,
                        rep->tensors[i].count,
                        ckpt_dtype_width(rep->tensors[i].dtype),
                        i,
                        rep->tensors[i].dtype,
                        0,
                        NULL,
                        0};
            if (!t->name) goto oom;
            p->data_bytes += t->width * t->count;
        }
    }
    sb_puts(&meta, ",\"names\":");
    strbuf names = {0};
    sb_puts(&names, "[");
    for (size_t i = 0; i < n; i++) {
        const char *name;
        slot_name(rep, o, i, buf, sizeof buf, &name);
        if (i) sb_puts(&names, ",");
        j_string(&names, name);
    }
    sb_puts(&names, "]");
    j_string(&meta, names.failed ? "" : names.data);
    sb_free(&names);
    /* .npz: the names written otherwise (npz_name), member name -> name */
    strbuf renamed = {0};
    for (size_t i = 0; o->format == CKPT_EXPORT_NPZ && i < n; i++) {
        const char *name;
        slot_name(rep, o, i, buf, sizeof buf, &name);
        if (npz_name_len(name) == strlen(name)) continue;
        sb_puts(&renamed, renamed.len ? "," : "{");
        strbuf member = {0};
        npz_name(&member, name);
        j_string(&renamed, member.failed ? "" : member.data);
        sb_free(&member);
        sb_putc(&renamed, ':');
        j_string(&renamed, name);
    }
    if (renamed.len) {
        sb_puts(&renamed, "}");
        sb_puts(&meta, ",\"npzNames\":");
        j_string(&meta, renamed.failed ? "" : renamed.data);
    }
    if (renamed.failed) meta.failed = true;
    sb_free(&renamed);
    sb_puts(&meta, "}");
    sb_free(&steps);
    sb_free(&what);
    free(wanted);
    free(owners);
    wanted = NULL;
    if (meta.failed) goto oom_meta;
    p->metadata = sb_take(&meta);
    return 0;
oom:
    free(wanted);
    free(owners);
    sb_free(&steps);
    sb_free(&what);
oom_meta:
    sb_free(&meta);
    return ckpt_fail_oom(err);
}

/* ---- copying payloads ---- */

typedef struct copier {
    const ckpt_source *src;
    const ckpt_sink *out;
    uint8_t *buf;
    ckpt_zip_writer *zip; /* the member being written (.npz), or NULL: straight to out */
    ckpt_progress_fn progress;
    void *progress_ctx;
    uint64_t done, total;
    ckpt_error *err;
    /* Small payloads that lie together in the source (a million slots of 4 elements: m, v, the
     * next entry's 24-byte header, its m...) are read together: one read for a run of them, not
     * one per payload. `items` is the plan (NULL for one payload), `at` the item being copied;
     * buf holds [win_pos, win_pos + win_len) of the source while win_len is nonzero. */
    const item *items;
    size_t len, at;
    uint64_t win_pos;
    size_t win_len;
} copier;

static int emit(copier *c, const void *p, size_t n)
{
    if (c->zip) return ckpt_zip_write(c->zip, p, n);
    return ckpt_sink_bytes(c->out, p, n, c->err);
}

#define RUN_GAP 64 /* at most this between two payloads read together (an entry's header) */

/* Where a run of the plan's payloads from item `at` on ends: the next ones start at most RUN_GAP
 * bytes after the previous end, and all fit in one chunk. */
static uint64_t run_end(const copier *c, uint64_t offset, uint64_t bytes)
{
    uint64_t end = offset + bytes;
    if (!c->items) return end;
    for (size_t j = c->at + 1; j < c->len; j++) {
        const item *it = &c->items[j];
        uint64_t next = it->offset + it->count * it->width;
        if (it->spans || it->offset < end || it->offset - end > RUN_GAP || next - offset > COPY_CHUNK) break;
        end = next;
    }
    return end;
}

static int read_fully(copier *c, uint64_t offset, size_t n)
{
    size_t got = c->src->read(c->src->ctx, offset, c->buf, n);
    if (got == CKPT_READ_ERROR || got != n)
        return ckpt_fail(c->err, NULL, CKPT_E_IO, offset, 0, "could not read the source at byte %llu",
                         (unsigned long long)offset);
    return 0;
}

static int copy_payload(copier *c, uint64_t offset, uint64_t bytes);

/* An item's bytes: its runs one after the other (a fragment is read alone), or its one run. */
static int copy_item(copier *c, const item *it)
{
    if (!it->spans) return copy_payload(c, it->offset, it->count * it->width);
    const item *items = c->items;
    c->items = NULL;
    c->win_len = 0;
    int rc = 0;
    for (size_t j = 0; j < it->spans_len && !rc; j++) {
        rc = copy_payload(c, it->spans[j].offset, it->spans[j].count * it->width);
        c->win_len = 0;
    }
    c->items = items;
    return rc;
}

static int copy_payload(copier *c, uint64_t offset, uint64_t bytes)
{
    bool held = c->win_len && offset >= c->win_pos && bytes <= c->win_len && offset - c->win_pos <= c->win_len - bytes;
    if (!held && bytes < COPY_CHUNK) {
        uint64_t end = run_end(c, offset, bytes);
        c->win_len = 0;
        TRY(read_fully(c, offset, (size_t)(end - offset)));
        c->win_pos = offset;
        c->win_len = (size_t)(end - offset);
        held = true;
    }
    if (held) {
        TRY(emit(c, c->buf + (offset - c->win_pos), (size_t)bytes));
        c->done += bytes;
        if (c->progress && c->progress(c->progress_ctx, c->done, c->total))
            return ckpt_fail(c->err, NULL, CKPT_E_CANCELLED, CKPT_NONE, 0, "export cancelled");
        return 0;
    }
    c->win_len = 0; /* buf is the chunk now */
    for (uint64_t done = 0; done < bytes;) {
        size_t n = bytes - done < COPY_CHUNK ? (size_t)(bytes - done) : COPY_CHUNK;
        size_t got = c->src->read(c->src->ctx, offset + done, c->buf, n);
        if (got == CKPT_READ_ERROR || got != n)
            return ckpt_fail(c->err, NULL, CKPT_E_IO, offset + done, 0, "could not read the source at byte %llu",
                             (unsigned long long)(offset + done));
        TRY(emit(c, c->buf, n));
        done += n;
        c->done += n;
        if (c->progress && c->progress(c->progress_ctx, c->done, c->total))
            return ckpt_fail(c->err, NULL, CKPT_E_CANCELLED, CKPT_NONE, 0, "export cancelled");
    }
    return 0;
}

/* ---- safetensors ---- */

static int write_safetensors(const plan *p, copier *c)
{
    const ckpt_schema *s = p->rep->schema;
    strbuf h = {0};
    /* __metadata__ holds strings only: the metadata object's values are strings (JSON text where
     * they are structured) */
    sb_puts(&h, "{\"__metadata__\":");
    sb_puts(&h, p->metadata);
    uint64_t at = 0;
    for (size_t k = 0; k < p->len; k++) {
        const item *it = &p->items[k];
        sb_puts(&h, ",");
        j_string(&h, it->name);
        sb_printf(&h, ":{\"dtype\":\"%s\",\"shape\":", ckpt_dtype_safetensors_name(it->dtype));
        j_shape(&h, s, it->slot);
        sb_puts(&h, ",\"data_offsets\":[");
        j_u64(&h, at);
        sb_puts(&h, ",");
        at += it->count * it->width;
        j_u64(&h, at);
        sb_puts(&h, "]}");
    }
    sb_puts(&h, "}");
    while (!h.failed && (8 + h.len) % 8) sb_puts(&h, " "); /* the data starts 8-aligned */
    if (h.failed) {
        sb_free(&h);
        return ckpt_fail_oom(c->err);
    }
    uint8_t len[8];
    ckpt_put_u64le(len, h.len);
    int rc = emit(c, len, 8);
    if (!rc) rc = emit(c, h.data, h.len);
    sb_free(&h);
    for (size_t k = 0; k < p->len && !rc; k++) {
        c->at = k;
        rc = copy_item(c, &p->items[k]);
    }
    return rc;
}

/* A member: the head bytes (the .npy header) and a payload from the source or inline. */
static int npz_member(ckpt_zip_writer *z, copier *c, const char *name, const strbuf *head, const item *it,
                      uint64_t bytes, const void *inline_data)
{
    TRY(ckpt_zip_begin(z, name));
    c->zip = z;
    int rc = emit(c, head->data, head->len);
    if (!rc) rc = inline_data ? emit(c, inline_data, (size_t)bytes) : copy_item(c, it);
    c->zip = NULL;
    return rc ? rc : ckpt_zip_end(z);
}

static int write_npz(const plan *p, copier *c)
{
    ckpt_zip_writer z;
    ckpt_zip_writer_init(&z, c->out, c->err);
    int rc = 0;
    for (size_t k = 0; k < p->len && !rc; k++) {
        const item *it = &p->items[k];
        strbuf head = {0}, name = {0};
        npz_name(&name, it->name);
        sb_puts(&name, ".npy");
        c->at = k;
        if (!ckpt_npy_header(&head, ckpt_dtype_numpy_name(it->dtype), ckpt_schema_dims(p->rep->schema, it->slot),
                             ckpt_schema_rank(p->rep->schema, it->slot)) ||
            name.failed)
            rc = ckpt_fail_oom(c->err);
        else rc = npz_member(&z, c, name.data, &head, it, it->count * it->width, NULL);
        sb_free(&head);
        sb_free(&name);
    }
    if (!rc) { /* the metadata: a 0-d array of one string */
        size_t n = 0;
        uint32_t *u = ckpt_utf32(p->metadata, &n);
        strbuf head = {0};
        char descr[32];
        snprintf(descr, sizeof descr, "<U%zu", n ? n : 1);
        if (!u || !ckpt_npy_header(&head, descr, NULL, 0)) rc = ckpt_fail_oom(c->err);
        else
            rc = npz_member(&z, c, "__metadata__.npy", &head, NULL, 4 * (n ? n : 1),
                            n ? (const void *)u : (const void *)"\0\0\0");
        sb_free(&head);
        free(u);
    }
    if (!rc) rc = ckpt_zip_finish(&z);
    ckpt_zip_writer_free(&z);
    return rc;
}

int ckpt_export(const ckpt_file *f, const ckpt_export_options *o, const ckpt_sink *out, ckpt_error *err)
{
    if (!f || !o || !out || (o->format != CKPT_EXPORT_SAFETENSORS && o->format != CKPT_EXPORT_NPZ))
        return ckpt_fail(err, NULL, CKPT_E_INVALID_ARGUMENT, CKPT_NONE, 0, "invalid arguments to the exporter");
    plan p;
    int rc = make_plan(f, o, &p, err);
    /* .npz holds the dtypes NumPy has: refused before the first byte (bfloat16, float8) */
    for (size_t k = 0; !rc && o->format == CKPT_EXPORT_NPZ && k < p.len; k++)
        if (!ckpt_dtype_numpy_name(p.items[k].dtype))
            rc = ckpt_fail(err, NULL, CKPT_E_INVALID_ARGUMENT, CKPT_NONE, 0,
                           "%s has no NumPy dtype: export the file as safetensors", ckpt_dtype_name(p.items[k].dtype));
    if (rc) {
        plan_free(&p);
        return rc;
    }
    copier c = {ckpt_file_source(f),
                out,
                malloc(COPY_CHUNK),
                NULL,
                o->progress,
                o->progress_ctx,
                0,
                p.data_bytes,
                err,
                p.items,
                p.len,
                0,
                0,
                0};
    if (!c.buf) rc = ckpt_fail_oom(err);
    else rc = o->format == CKPT_EXPORT_SAFETENSORS ? write_safetensors(&p, &c) : write_npz(&p, &c);
    free(c.buf);
    plan_free(&p);
    return rc;
}

int ckpt_export_npy(const ckpt_file *f, uint64_t slot, int what, const ckpt_sink *out, ckpt_error *err)
{
    const ckpt_report *rep = ckpt_file_report(f);
    uint64_t offset, count;
    unsigned width;
    size_t shape_slot;
    int dtype = rep->dtype;
    item run = {0};
    if (what == CKPT_NPY_VALUES) {
        const ckpt_tensor_info *t;
        TRY(ckpt_file_tensor(f, slot, &t, err));
        dtype = t->dtype;
        offset = t->data_offset, count = t->count, width = ckpt_dtype_width(dtype), shape_slot = (size_t)slot;
    } else if (what == CKPT_NPY_M || what == CKPT_NPY_V) {
        const ckpt_entry_info *e;
        /* a family whose state lies in fragments: read through its items, of a valid file only */
        if (rep->family && rep->family->impl->unread) {
            TRY(ckpt_require_items(rep, err));
            if (rep->error.code || ckpt_report_item_count(rep) != rep->entries_len)
                return ckpt_fail(err, NULL, CKPT_E_NOT_READABLE, CKPT_NONE, 0, "cannot export: the file is invalid");
        }
        TRY(ckpt_file_entry(f, slot, &e, NULL, err));
        offset = what == CKPT_NPY_M ? e->m_offset : e->v_offset, count = e->count, width = ckpt_dtype_width(rep->dtype);
        shape_slot = (size_t)e->id;
        if (ckpt_report_item_count(rep) == rep->entries_len) { /* its fragments, where it lies in several */
            ckpt_item it = ckpt_report_item(rep, (size_t)(e - rep->entries));
            const ckpt_payload *x = &it.payload[what == CKPT_NPY_M ? 0 : 1];
            if (it.payloads >= 2) run.spans = x->spans, run.spans_len = x->spans_len;
        }
    } else {
        return ckpt_fail(err, NULL, CKPT_E_INVALID_ARGUMENT, CKPT_NONE, 0, "invalid arguments to the exporter");
    }
    if (!ckpt_dtype_numpy_name(dtype))
        return ckpt_fail(err, NULL, CKPT_E_INVALID_ARGUMENT, CKPT_NONE, 0,
                         "%s has no NumPy dtype: export the file as safetensors", ckpt_dtype_name(dtype));
    strbuf head = {0};
    if (!ckpt_npy_header(&head, ckpt_dtype_numpy_name(dtype), ckpt_schema_dims(rep->schema, shape_slot),
                         ckpt_schema_rank(rep->schema, shape_slot))) {
        sb_free(&head);
        return ckpt_fail_oom(err);
    }
    copier c = {
        ckpt_file_source(f), out, malloc(COPY_CHUNK), NULL, NULL, NULL, 0, count * width, err, NULL, 0, 0, 0, 0};
    int rc = c.buf ? emit(&c, head.data, head.len) : ckpt_fail_oom(err);
    run.offset = offset, run.count = count, run.width = width;
    if (!rc) rc = copy_item(&c, &run);
    free(c.buf);
    sb_free(&head);
    return rc;
}

/* ---- computed tensors beside a checkpoint (writers/gradient.c) ---- */

int ckpt_export_computed(const ckpt_file *f, const ckpt_source *values, const char *suffix,
                         const ckpt_export_options *o, const ckpt_sink *out, ckpt_error *err)
{
    if (!f || !values || !suffix || !o || !out ||
        (o->format != CKPT_EXPORT_SAFETENSORS && o->format != CKPT_EXPORT_NPZ))
        return ckpt_fail(err, NULL, CKPT_E_INVALID_ARGUMENT, CKPT_NONE, 0, "invalid arguments to the exporter");
    const ckpt_report *rep = ckpt_file_report(f);
    if (rep->family && !ckpt_family_has_role(rep->family, CKPT_ROLE_OPTIMIZER))
        return ckpt_fail(err, NULL, CKPT_E_WRONG_FAMILY, CKPT_NONE, 0,
                         "computed tensors go beside an optimizer checkpoint's moments");
    plan p;
    int rc = make_plan(f, o, &p, err);
    if (rc) {
        plan_free(&p);
        return rc;
    }
    /* the first moment's items (exp_avg, per entry), renamed; their bytes are read from
     * `values` at m's offsets */
    size_t kept = 0;
    bool oom = false;
    p.data_bytes = 0;
    for (size_t k = 0; k < p.len; k++) {
        item it = p.items[k];
        if (it.part == 0) {
            it.name[strlen(it.name) - strlen(".exp_avg")] = '\0';
            char *name = name_with(it.name, suffix);
            oom |= !name;
            free(it.name);
            it.name = name;
            p.items[kept++] = it;
            p.data_bytes += it.count * it.width;
        } else free(it.name);
    }
    p.len = kept;
    if (oom) {
        plan_free(&p);
        return ckpt_fail_oom(err);
    }
    copier c = {values, out, malloc(COPY_CHUNK), NULL, o->progress, o->progress_ctx, 0, p.data_bytes, err, NULL, 0, 0,
                0,      0};
    if (!c.buf) rc = ckpt_fail_oom(err);
    else rc = o->format == CKPT_EXPORT_SAFETENSORS ? write_safetensors(&p, &c) : write_npz(&p, &c);
    free(c.buf);
    plan_free(&p);
    return rc;
}
