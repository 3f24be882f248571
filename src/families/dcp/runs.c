/* A tensor's runs (format.md 12.3): each chunk's record read through its own offset, the
 * chunk's first j dims giving one run of L = prod_{d>=j} s_d elements per index, where j is the
 * smallest dim past which the chunk spans the whole tensor; the runs of all chunks in order of
 * global start, tiling [0, prod G) exactly. Statistics, health and export read a slot's moments
 * and values run after run, never a tensor assembled; a slot without optimizer state whose values
 * equal an earlier owner's bit for bit (same shape and dtype) is its alias (12.4's ties). */
#include "families/dcp/dcp.h"

#include <stdlib.h>

/* at most this many runs per tensor (a column-sharded tensor has one per row and chunk) */
#define DCP_MAX_RUNS ((uint64_t)1 << 24)

typedef struct run {
    uint64_t start; /* global element */
    uint64_t at;    /* byte in the source */
    uint64_t count;
} run;

static int by_start(const void *a, const void *b)
{
    const run *x = a, *y = b;
    return x->start < y->start ? -1 : x->start > y->start;
}

/* dcp.h: key's runs as spans in element order, its dtype; false when they cannot be read (a record not
 * read, not row-major, of another dtype, or runs that do not tile the tensor) */
bool dcp_key_spans(const ckpt_dcp *d, size_t k, ckpt_span **out, size_t *n, int *dtype)
{
    const dcp_key *key = &d->keys[k];
    *out = NULL;
    *n = 0;
    if (key->kind != DCP_TENSOR) return false;
    const uint64_t *G = d->pool + key->dims;
    const uint32_t rank = key->rank;
    uint64_t S[DCP_MAX_RANK], total = 1, runs = 0;
    if (!ckpt_shape_size(G, rank, &total)) return false;
    for (uint32_t q = rank; q-- > 0;) S[q] = q + 1 < rank ? S[q + 1] * G[q + 1] : 1;
    int dt = -2;
    /* count the runs first: memory bounded before anything is allocated */
    for (size_t j = key->chunks; j < key->chunks + key->chunks_len; j++) {
        const dcp_chunk *ch = &d->chunks[j];
        if (ch->storage == DCP_NONE) return false;
        const dcp_storage *st = &d->storages[ch->storage];
        if (!st->t || st->bad || st->tensor == DCP_NONE || !st->t->tensors[st->tensor].contiguous) return false;
        int t = ckpt_torch_dtype(st->t->tensors[st->tensor].dtype);
        if (t < 0 || (dt != -2 && t != dt)) return false;
        dt = t;
        const uint64_t *s = d->pool + ch->sizes;
        uint64_t vol;
        if (!ckpt_shape_size(s, rank, &vol)) return false;
        if (!vol) continue;
        uint32_t jd = rank;
        while (jd > 0 && s[jd - 1] == G[jd - 1]) jd--;
        if (jd > 0) jd--; /* dims past jd are whole; jd itself is the run's partial dim */
        uint64_t r = 1;
        for (uint32_t q = 0; q < jd; q++) r *= s[q]; /* bounded by vol */
        runs += r;
        if (runs > DCP_MAX_RUNS) return false;
    }
    if (dt < 0) return false;
    run *rs = malloc((runs ? runs : 1) * sizeof *rs);
    if (!rs) return false;
    size_t m = 0;
    for (size_t j = key->chunks; j < key->chunks + key->chunks_len; j++) {
        const dcp_chunk *ch = &d->chunks[j];
        const dcp_storage *st = &d->storages[ch->storage];
        const ckpt_torch_tensor *tt = &st->t->tensors[st->tensor];
        const uint64_t *s = d->pool + ch->sizes, *c = d->pool + ch->offsets;
        uint64_t vol;
        ckpt_shape_size(s, rank, &vol);
        if (!vol) continue;
        uint32_t jd = rank;
        while (jd > 0 && s[jd - 1] == G[jd - 1]) jd--;
        if (jd > 0) jd--;
        uint64_t L = 1, t[DCP_MAX_RANK];
        for (uint32_t q = jd; q < rank; q++) L *= s[q];
        for (uint32_t q = rank; q-- > 0;) t[q] = q + 1 < rank ? t[q + 1] * s[q + 1] : 1;
        const uint64_t D = d->files[st->file].base + st->offset + tt->at, w = tt->width;
        uint64_t idx[DCP_MAX_RANK] = {0}, count = 1;
        for (uint32_t q = 0; q < jd; q++) count *= s[q];
        for (uint64_t r = 0; r < count; r++) {
            uint64_t start = rank ? c[jd] * S[jd] : 0, el = 0;
            for (uint32_t q = 0; q < jd; q++) {
                start += (c[q] + idx[q]) * S[q];
                el += idx[q] * t[q];
            }
            rs[m++] = (run){start, D + el * w, L};
            for (uint32_t q = jd; q-- > 0;) { /* the next index, row-major */
                if (++idx[q] < s[q]) break;
                idx[q] = 0;
            }
        }
    }
    qsort(rs, m, sizeof *rs, by_start);
    uint64_t at = 0;
    bool tiles = true;
    for (size_t r = 0; r < m && tiles; r++) {
        tiles = rs[r].start == at;
        at += rs[r].count;
    }
    ckpt_span *sp = tiles && at == total ? malloc((m ? m : 1) * sizeof *sp) : NULL;
    if (sp)
        for (size_t r = 0; r < m; r++) sp[r] = (ckpt_span){rs[r].at, rs[r].count};
    free(rs);
    if (!sp) return false;
    *out = sp;
    *n = m;
    *dtype = dt;
    return true;
}

/* ---- reading a span list in order ---- */

typedef struct span_reader {
    const ckpt_source *src;
    const ckpt_span *sp;
    size_t n, k;
    uint64_t used; /* elements of sp[k] read */
    unsigned width;
} span_reader;

/* up to `want` elements into buf; how many (0 at the end), or SIZE_MAX on a read error */
static size_t span_read(span_reader *r, uint8_t *buf, size_t want, ckpt_error *err)
{
    while (r->k < r->n && r->used == r->sp[r->k].count) r->k++, r->used = 0;
    if (r->k == r->n) return 0;
    uint64_t left = r->sp[r->k].count - r->used;
    size_t got = left < want ? (size_t)left : want;
    if (ckpt_read_at(r->src, r->sp[r->k].offset + r->used * r->width, buf, got * r->width, "a record", err))
        return SIZE_MAX;
    r->used += got;
    return got;
}

/* Do two span lists of one dtype hold the same bits? 1 yes, 0 no (*first: the first element that
 * differs), negative: an error */
static int same_values(const ckpt_source *src, const ckpt_span *a, size_t na, const ckpt_span *b, size_t nb,
                       unsigned width, uint64_t *first, ckpt_error *err)
{
    enum { CHUNK = 4096 };
    uint8_t *x = malloc((size_t)CHUNK * width), *y = malloc((size_t)CHUNK * width);
    if (!x || !y) {
        free(x);
        free(y);
        return ckpt_fail_oom(err) ? -1 : -1;
    }
    span_reader ra = {src, a, na, 0, 0, width}, rb = {src, b, nb, 0, 0, width};
    size_t ha = 0, hb = 0, pa = 0, pb = 0; /* held and consumed in x and y */
    int same = 1;
    uint64_t done = 0; /* elements compared equal */
    for (;;) {
        if (pa == ha) {
            ha = span_read(&ra, x, CHUNK, err);
            pa = 0;
        }
        if (pb == hb) {
            hb = span_read(&rb, y, CHUNK, err);
            pb = 0;
        }
        if (ha == SIZE_MAX || hb == SIZE_MAX) {
            same = -1;
            break;
        }
        if (!ha || !hb) {
            same = !ha && !hb;
            if (!same) *first = done;
            break;
        }
        size_t n = ha - pa < hb - pb ? ha - pa : hb - pb;
        if (memcmp(x + pa * width, y + pb * width, n * width)) {
            size_t j = 0;
            while (!memcmp(x + (pa + j) * width, y + (pb + j) * width, width)) j++;
            *first = done + j;
            same = 0;
            break;
        }
        pa += n;
        pb += n;
        done += n;
    }
    free(x);
    free(y);
    return same;
}

/* ---- the items, statistics and ties ---- */

int dcp_items(ckpt_dcp *d, ckpt_report *rep)
{
    if (!rep->entries_len) return 0;
    if (!(d->items = calloc(rep->entries_len, sizeof *d->items))) return ckpt_fail_oom(&rep->error);
    d->items_len = rep->entries_len;
    for (size_t k = 0; k < rep->entries_len; k++) {
        dcp_item *it = &d->items[k];
        const dcp_slot *sl = &d->slots[rep->entries[k].id];
        const size_t keys[DCP_PAYLOADS] = {sl->state[DCP_EXP_AVG], sl->state[DCP_EXP_AVG_SQ],
                                           sl->state[DCP_MAX_EXP_AVG_SQ], sl->key};
        for (int q = 0; q < DCP_PAYLOADS; q++)
            if (keys[q] != DCP_NONE && !dcp_key_spans(d, keys[q], &it->spans[q], &it->len[q], &it->dtype[q]))
                it->spans[q] = NULL, it->len[q] = 0;
        /* where its moments start, for the report's entry */
        if (it->spans[0]) rep->entries[k].offset = rep->entries[k].m_offset = it->spans[0][0].offset;
        if (it->spans[1]) rep->entries[k].v_offset = it->spans[1][0].offset;
    }
    return 0;
}

/* an item by where its first payload scanned starts in the folder */
typedef struct item_at {
    uint64_t at;
    size_t k;
} item_at;

static int by_place(const void *a, const void *b)
{
    const item_at *x = a, *y = b;
    if (x->at != y->at) return x->at < y->at ? -1 : 1;
    return x->k < y->k ? -1 : x->k > y->k;
}

/* The payloads of item k that statistics read: m and v where it has both (the report's), else the
 * parameter's values (the item's only payload); max_exp_avg_sq and the values of an item with
 * moments are in no report (a bf16 model's values would cost more than both moments). */
static void scanned(const dcp_item *it, int *first, int *end)
{
    const bool moments = it->spans[0] && it->spans[1];
    *first = moments ? 0 : DCP_PAYLOADS - 1;
    *end = moments ? 2 : DCP_PAYLOADS;
}

int dcp_stats(ckpt_dcp *d, ckpt_report *rep, ckpt_reader *r, ckpt_scan *scan, ckpt_error *err)
{
    /* read in the order the records lie in the files (each rank's file holds them in its plan's
     * order, not the schema's), so that every file is read front to back; the results do not
     * depend on the order */
    item_at *order = malloc((d->items_len ? d->items_len : 1) * sizeof *order);
    if (!order) return ckpt_fail_oom(err);
    for (size_t k = 0; k < d->items_len; k++) {
        int q, end;
        scanned(&d->items[k], &q, &end);
        order[k] = (item_at){d->items[k].spans[q] ? d->items[k].spans[q][0].offset : UINT64_MAX, k};
    }
    qsort(order, d->items_len, sizeof *order, by_place);
    /* progress over the payloads read, not the folder: the bar ends at 100% */
    scan->done = scan->total = 0;
    for (size_t k = 0; k < d->items_len; k++) {
        const dcp_item *it = &d->items[k];
        int q, end;
        for (scanned(it, &q, &end); q < end; q++)
            if (it->spans[q] && ckpt_dtype_has_stats(it->dtype[q]))
                for (size_t j = 0; j < it->len[q]; j++)
                    scan->total += it->spans[q][j].count * ckpt_dtype_width(it->dtype[q]);
    }
    int rc = 0;
    for (size_t j = 0; j < d->items_len && !rc; j++) {
        dcp_item *it = &d->items[order[j].k];
        int q, end;
        for (scanned(it, &q, &end); q < end && !rc; q++) {
            if (!it->spans[q] || !ckpt_dtype_has_stats(it->dtype[q])) continue;
            scan->start = 0;
            rc = ckpt_scan_spans(r, scan, it->spans[q], it->len[q], it->dtype[q], &it->stats[q], err);
        }
    }
    free(order);
    if (rc) return rc;
    for (size_t k = 0; k < d->items_len; k++) {
        dcp_item *it = &d->items[k];
        ckpt_entry_info *e = &rep->entries[k];
        if (it->stats[0] && it->stats[1]) {
            /* m and v: the report owns them from here */
            e->m = it->stats[0];
            e->v = it->stats[1];
            it->stats[0] = it->stats[1] = NULL;
            e->unhealthy = ckpt_entry_unhealthy(e->m, e->v);
            /* 28: the state get_optimizer_state_dict makes by stepping once at lr 0 */
            const dcp_slot *sl = &d->slots[e->id];
            if (sl->has_step && sl->step == 1 && e->m->zero == e->m->count && e->v->zero == e->v->count)
                TRY(dcp_diag_add(d, rep, 28, 0, d->keys[sl->key].fqn, NULL, CKPT_NONE,
                                 "DCP: %s: step 1 and all-zero moments: the state get_optimizer_state_dict creates "
                                 "for an optimizer that never stepped",
                                 d->keys[sl->key].fqn));
        }
    }
    return 0;
}

int dcp_ties(ckpt_dcp *d, ckpt_report *rep)
{
    for (size_t s = 0; s < d->slots_len; s++) {
        dcp_slot *sl = &d->slots[s];
        if (sl->trainable) continue;
        const dcp_key *k = &d->keys[sl->key];
        ckpt_span *a = NULL;
        size_t na = 0;
        int dta;
        bool read = false;
        for (size_t o = 0; o < s && sl->representative == DCP_NONE; o++) {
            const dcp_slot *ow = &d->slots[o];
            const dcp_key *ko = &d->keys[ow->key];
            if (!ow->trainable || ko->dtype != k->dtype || ko->rank != k->rank ||
                (k->rank && memcmp(d->pool + ko->dims, d->pool + k->dims, k->rank * sizeof(uint64_t))))
                continue;
            if (!read) {
                read = true;
                if (!dcp_key_spans(d, sl->key, &a, &na, &dta)) break;
            }
            ckpt_span *b;
            size_t nb;
            int dtb;
            if (!dcp_key_spans(d, ow->key, &b, &nb, &dtb)) continue;
            uint64_t first;
            int same = dta == dtb ? same_values(d->src, a, na, b, nb, ckpt_dtype_width(dta), &first, &rep->error) : 0;
            free(b);
            if (same < 0) {
                free(a);
                return rep->error.code ? rep->error.code : CKPT_E_IO;
            }
            if (same) sl->representative = o;
        }
        /* compared with every candidate, or none to compare with: frozen unless tied */
        if ((read && a) || !read) sl->values_read = true;
        free(a);
    }
    return 0;
}

int dcp_first_difference(const ckpt_dcp *d, size_t ka, size_t kb, uint64_t *first, ckpt_error *err)
{
    const dcp_key *x = &d->keys[ka], *y = &d->keys[kb];
    if (x->rank != y->rank || (x->rank && memcmp(d->pool + x->dims, d->pool + y->dims, x->rank * sizeof(uint64_t))))
        return 2;
    ckpt_span *a = NULL, *b = NULL;
    size_t na, nb;
    int dta, dtb;
    int rc = 2;
    if (dcp_key_spans(d, ka, &a, &na, &dta) && dcp_key_spans(d, kb, &b, &nb, &dtb) && dta == dtb)
        rc = same_values(d->src, a, na, b, nb, ckpt_dtype_width(dta), first, err);
    free(a);
    free(b);
    return rc < 0 ? -1 : rc;
}
