/* Opening a DCP checkpoint (format.md 12.1, 12.3, 12.5): a folder laid out as one source
 * (containers/bundle.h), a lone `.metadata`, or a lone `.distcp`. The checks run in 12.5's order;
 * every failure is listed with its facts, the first error is the report's. Each record is read
 * as a torch.save file of its own through a byte window of its data file: nothing outside the
 * window, nothing called. */
#include "families/dcp/dcp.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

static int shape_text(strbuf *sb, const uint64_t *dims, uint32_t rank)
{
    sb->len = 0;
    if (sb->data) sb->data[0] = 0;
    ckpt_shape_print(sb, dims, rank);
    return sb->failed ? CKPT_E_NO_MEMORY : 0;
}

static bool same_dims(const uint64_t *a, uint32_t ra, const uint64_t *b, uint32_t rb)
{
    return ra == rb && (!ra || !memcmp(a, b, ra * sizeof *a));
}

/* 6-8: each storage entry matched to its chunk or bytes item by (fqn, offsets) */
static int match_storage(ckpt_dcp *d, ckpt_report *rep)
{
    if (!dcp_sort_keys(d)) return ckpt_fail_oom(&rep->error);
    int rc = 0;
    strbuf sh = {0};
    /* 7 and 8 are found while matching; 6 after. The texts come in 12.5's order. */
    size_t *dup = calloc(d->storages_len ? d->storages_len : 1, sizeof *dup);
    if (!dup) rc = ckpt_fail_oom(&rep->error);
    for (size_t s = 0; !rc && s < d->storages_len; s++) {
        dcp_storage *st = &d->storages[s];
        dup[s] = 0;
        size_t k = dcp_find_key(d, st->fqn, strlen(st->fqn));
        if (k == DCP_NONE || dcp_key_meta(d, k) != st->meta) continue;
        dcp_key *key = &d->keys[k];
        if (key->kind == DCP_BYTES && !st->has_offsets) {
            if (key->storage != DCP_NONE) dup[s] = 1;
            else {
                key->storage = s;
                st->key = k;
            }
            continue;
        }
        if (key->kind != DCP_TENSOR || !st->has_offsets) continue;
        for (size_t j = key->chunks; j < key->chunks + key->chunks_len; j++) {
            dcp_chunk *ch = &d->chunks[j];
            if (!same_dims(d->pool + ch->offsets, ch->orank, d->pool + st->offsets, st->rank)) continue;
            if (ch->storage != DCP_NONE) dup[s] = 1;
            else {
                ch->storage = s;
                st->key = k;
                st->chunk = j;
            }
            break;
        }
    }
    /* 6 */
    for (size_t k = 0; !rc && k < d->keys_len; k++) {
        const dcp_key *key = &d->keys[k];
        if (key->kind == DCP_BYTES && key->storage == DCP_NONE)
            rc = dcp_diag_add(d, rep, 6, CKPT_E_DCP_STORAGE, key->name, NULL, CKPT_NONE, "DCP: %s: no storage entry",
                              key->name);
        for (size_t j = key->chunks; !rc && key->kind == DCP_TENSOR && j < key->chunks + key->chunks_len; j++) {
            const dcp_chunk *ch = &d->chunks[j];
            if (ch->storage != DCP_NONE) continue;
            rc = shape_text(&sh, d->pool + ch->offsets, ch->orank);
            if (!rc)
                rc = dcp_diag_add(d, rep, 6, CKPT_E_DCP_STORAGE, key->name, NULL, CKPT_NONE,
                                  "DCP: %s: chunk at %s has no storage entry", key->name, sh.data);
        }
    }
    /* 7 */
    for (size_t s = 0; !rc && s < d->storages_len; s++) {
        if (!dup[s]) continue;
        const dcp_storage *st = &d->storages[s];
        d->storages[s].bad = true;
        rc = shape_text(&sh, st->has_offsets ? d->pool + st->offsets : NULL, st->has_offsets ? st->rank : 0);
        if (!rc)
            rc = dcp_diag_add(d, rep, 7, CKPT_E_DCP_STORAGE, st->fqn, dcp_storage_file(st), st->offset,
                              "DCP: storage_data lists %s at %s twice", st->fqn, sh.data);
    }
    /* 8 */
    for (size_t s = 0; !rc && s < d->storages_len; s++) {
        const dcp_storage *st = &d->storages[s];
        if (st->key != DCP_NONE || dup[s]) continue;
        d->storages[s].bad = true;
        rc = shape_text(&sh, st->has_offsets ? d->pool + st->offsets : NULL, st->has_offsets ? st->rank : 0);
        if (!rc)
            rc = dcp_diag_add(d, rep, 8, 0, st->fqn, dcp_storage_file(st), st->offset,
                              "DCP: storage_data names %s at %s, which state_dict_metadata has no chunk for", st->fqn,
                              sh.data);
    }
    if (sh.failed && !rc) rc = ckpt_fail_oom(&rep->error);
    sb_free(&sh);
    free(dup);
    return rc;
}

/* ---- the data files ---- */

/* r of __{r}_{n}.distcp, CKPT_NONE otherwise */
static uint64_t rank_of(const char *name)
{
    if (strncmp(name, "__", 2)) return CKPT_NONE;
    const char *s = name + 2;
    uint64_t r = 0;
    size_t k = 0;
    for (; s[k] >= '0' && s[k] <= '9'; k++) {
        if (r > (UINT64_MAX - 9) / 10) return CKPT_NONE;
        r = r * 10 + (uint64_t)(s[k] - '0');
    }
    if (!k || s[k] != '_') return CKPT_NONE;
    s += k + 1;
    for (k = 0; s[k] >= '0' && s[k] <= '9'; k++) {
    }
    return k && !strcmp(s + k, ".distcp") ? r : CKPT_NONE;
}

/* a plain file name inside the folder: no separator, not "." or "..", not empty */
static bool plain_name(const char *p)
{
    return *p && !strchr(p, '/') && !strchr(p, '\\') && strcmp(p, ".") && strcmp(p, "..");
}

static int by_name(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* The files the storage entries name, in name order; 9 for a path that is not a plain name. */
static int list_files(ckpt_dcp *d, ckpt_report *rep, const char *dir)
{
    char **names = malloc((d->storages_len ? d->storages_len : 1) * sizeof *names);
    if (!names) return ckpt_fail_oom(&rep->error);
    size_t n = 0;
    int rc = 0;
    for (size_t s = 0; !rc && s < d->storages_len; s++) {
        dcp_storage *st = &d->storages[s];
        if (!plain_name(st->path)) {
            st->bad = true;
            const char *where = d->metas[st->meta].where ? d->metas[st->meta].where : dir;
            rc = dcp_diag_add(d, rep, 9, CKPT_E_DCP_FOLDER, st->fqn, st->path, CKPT_NONE,
                              "DCP: the storage entry of %s names %s, which is not a file name inside %s", st->fqn,
                              st->path, where);
            continue;
        }
        names[n++] = (char *)dcp_storage_file(st);
    }
    if (!rc) qsort(names, n, sizeof *names, by_name);
    size_t m = 0;
    for (size_t k = 0; k < n; k++)
        if (!m || strcmp(names[m - 1], names[k])) names[m++] = names[k];
    if (!rc && !(d->files = calloc(m ? m : 1, sizeof *d->files))) rc = ckpt_fail_oom(&rep->error);
    for (size_t k = 0; !rc && k < m; k++) {
        dcp_file *f = &d->files[d->files_len++];
        f->base = f->size = CKPT_NONE;
        f->first = DCP_NONE;
        const char *base = strrchr(names[k], '/'); /* a joined index's file: inside its folder */
        f->rank = rank_of(base ? base + 1 : names[k]);
        if (!(f->name = dcp_dup(names[k]))) rc = ckpt_fail_oom(&rep->error);
    }
    free(names);
    /* each entry's file: a binary search of the sorted names */
    for (size_t s = 0; !rc && s < d->storages_len; s++) {
        dcp_storage *st = &d->storages[s];
        if (!plain_name(st->path)) continue;
        size_t lo = 0, hi = d->files_len;
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            int c = strcmp(d->files[mid].name, dcp_storage_file(st));
            if (!c) {
                lo = mid;
                break;
            }
            if (c < 0) lo = mid + 1;
            else hi = mid;
        }
        st->file = lo;
        dcp_file *f = &d->files[lo];
        if (!f->items++) f->first = s;
    }
    return rc;
}

static const dcp_storage **sort_storages;
static int by_offset(const void *a, const void *b)
{
    const dcp_storage *x = *(const dcp_storage *const *)a, *y = *(const dcp_storage *const *)b;
    if (x->file != y->file) return x->file < y->file ? -1 : 1;
    if (x->offset != y->offset) return x->offset < y->offset ? -1 : 1;
    return x < y ? -1 : x > y;
}

/* 10-13: missing files, ranges past an end, overlapping records, stream transforms */
static int check_ranges(ckpt_dcp *d, ckpt_report *rep)
{
    int rc = 0;
    for (size_t k = 0; !rc && k < d->files_len; k++) {
        const dcp_file *f = &d->files[k];
        if (f->size != CKPT_NONE) continue;
        const char *first = f->first != DCP_NONE ? d->storages[f->first].fqn : "";
        rc = dcp_diag_add(d, rep, 10, CKPT_E_DCP_FOLDER, first, f->name, CKPT_NONE,
                          "DCP: %s is missing: it holds %zu records (the first: %s)", f->name, f->items, first);
    }
    for (size_t s = 0; !rc && s < d->storages_len; s++) {
        dcp_storage *st = &d->storages[s];
        if (st->file == DCP_NONE || d->files[st->file].size == CKPT_NONE) continue;
        const dcp_file *f = &d->files[st->file];
        uint64_t end;
        bool over = ckpt_add_overflows(st->offset, st->length, &end);
        if (over || end > f->size) {
            st->bad = true;
            rc = dcp_diag_add(d, rep, 11, CKPT_E_DCP_STORAGE, st->fqn, f->name, st->offset,
                              "DCP: %s: bytes %llu..%llu of %s lie past its end (%llu bytes)", st->fqn,
                              (unsigned long long)st->offset, (unsigned long long)(over ? UINT64_MAX : end), f->name,
                              (unsigned long long)f->size);
        }
    }
    if (!rc && d->storages_len) {
        const dcp_storage **o = malloc(d->storages_len * sizeof *o);
        if (!o) return ckpt_fail_oom(&rep->error);
        size_t n = 0;
        for (size_t s = 0; s < d->storages_len; s++)
            if (d->storages[s].file != DCP_NONE && d->storages[s].length) o[n++] = &d->storages[s];
        sort_storages = o;
        qsort(o, n, sizeof *o, by_offset);
        for (size_t k = 1; !rc && k < n; k++) {
            const dcp_storage *a = o[k - 1], *b = o[k];
            if (a->file != b->file || a->offset + a->length <= b->offset) continue;
            if (a->offset > UINT64_MAX - a->length) continue; /* 11 said it */
            d->storages[(size_t)(a - d->storages)].bad = d->storages[(size_t)(b - d->storages)].bad = true;
            rc = dcp_diag_add(d, rep, 12, CKPT_E_DCP_STORAGE, a->fqn, d->files[a->file].name, b->offset,
                              "DCP: %s: the records of %s and %s overlap at byte %llu", d->files[a->file].name, a->fqn,
                              b->fqn, (unsigned long long)b->offset);
        }
        free(o);
    }
    for (size_t s = 0; !rc && s < d->storages_len; s++) {
        dcp_storage *st = &d->storages[s];
        if (!st->transforms) continue;
        st->bad = true;
        rc = dcp_diag_add(d, rep, 13, CKPT_E_DCP_STORAGE, st->fqn, dcp_storage_file(st), st->offset,
                          "DCP: %s: stored through %s; ckptscope undoes no stream transform", st->fqn, st->transforms);
    }
    return rc;
}

/* ---- the records (12.3, 14-18) ---- */

static bool refused_name(const char *m, size_t ml, const char *n, size_t nl)
{
    return !ckpt_torch_weights_only_global(m, ml, n, nl);
}

/* what a record holds, for 15 */
static void record_found(strbuf *sb, const ckpt_torch *t)
{
    const ckpt_pnode *n = ckpt_pickle_node(t->pickle, t->pickle->root);
    static const char *const kinds[] = {"None",      "a bool",    "an int",    "an int",         "a float", "a str",
                                        "bytes",     "a tuple",   "a list",    "a dict",         "a set",   "an object",
                                        "an object", "an object", "an object", "a persistent id"};
    sb_puts(sb, n->kind < sizeof kinds / sizeof kinds[0] ? kinds[n->kind] : "an object");
}

static int open_record(ckpt_dcp *d, ckpt_report *rep, dcp_storage *st)
{
    const dcp_file *f = &d->files[st->file];
    ckpt_window w;
    ckpt_source s;
    ckpt_source_window(&s, &w, d->src, f->base + st->offset, st->length);
    ckpt_error e = {0};
    ckpt_error_clear(&e);
    int code = ckpt_torch_open(&s, "archive", &st->t, &e);
    uint64_t end = st->offset + st->length;
    if (code == CKPT_E_NO_MEMORY) {
        ckpt_error_clear(&e);
        return ckpt_fail_oom(&rep->error);
    }
    if (code) {
        st->bad = true;
        int rc =
            dcp_diag_add(d, rep, 14, CKPT_E_DCP_RECORD, st->fqn, f->name, st->offset,
                         "DCP: %s: bytes %llu..%llu of %s are not a torch.save record: %s", st->fqn,
                         (unsigned long long)st->offset, (unsigned long long)end, f->name, e.message ? e.message : "");
        ckpt_error_clear(&e);
        return rc;
    }
    const dcp_key *key = &d->keys[st->key];
    const ckpt_torch *t = st->t;
    if (key->kind == DCP_BYTES) {
        /* 18 */
        strbuf names = {0};
        ckpt_pickle_globals(&names, t->pickle, refused_name, ", ");
        int rc = names.failed ? ckpt_fail_oom(&rep->error)
                 : names.len  ? dcp_diag_add(d, rep, 18, 0, st->fqn, f->name, st->offset,
                                             "DCP: %s: the record at byte %llu of %s names Python callables that DCP's "
                                              "load runs (bytes items load with weights_only=False): %s",
                                             st->fqn, (unsigned long long)st->offset, f->name, names.data)
                              : 0;
        sb_free(&names);
        return rc;
    }
    /* the record is torch.save of one tensor: the object itself */
    size_t x = DCP_NONE;
    if (t->loose_len == 1 && !t->named[t->loose[0]].name[0] && t->named[t->loose[0]].tensor != CKPT_TORCH_NONE &&
        !t->optimizers_len && t->model == CKPT_TORCH_NONE)
        x = t->named[t->loose[0]].tensor;
    if (x == DCP_NONE) {
        st->bad = true;
        strbuf found = {0};
        record_found(&found, t);
        int rc = found.failed ? ckpt_fail_oom(&rep->error)
                              : dcp_diag_add(d, rep, 15, CKPT_E_DCP_RECORD, st->fqn, f->name, st->offset,
                                             "DCP: %s: the record at byte %llu of %s holds %s, not a tensor", st->fqn,
                                             (unsigned long long)st->offset, f->name, found.data);
        sb_free(&found);
        return rc;
    }
    st->tensor = x;
    const dcp_chunk *ch = &d->chunks[st->chunk];
    const ckpt_torch_tensor *tt = &t->tensors[x];
    if (!same_dims(ckpt_torch_size(t, x), tt->rank, d->pool + ch->sizes, ch->srank)) {
        st->bad = true;
        strbuf a = {0}, b = {0};
        ckpt_shape_print(&a, ckpt_torch_size(t, x), tt->rank);
        ckpt_shape_print(&b, d->pool + ch->sizes, ch->srank);
        int rc = a.failed || b.failed ? ckpt_fail_oom(&rep->error)
                                      : dcp_diag_add(d, rep, 16, CKPT_E_DCP_RECORD, st->fqn, f->name, st->offset,
                                                     "DCP: %s: the record at byte %llu of %s holds %s, its chunk is %s",
                                                     st->fqn, (unsigned long long)st->offset, f->name, a.data, b.data);
        sb_free(&a);
        sb_free(&b);
        return rc;
    }
    if (key->dtype_name && strcmp(tt->dtype, key->dtype_name))
        return dcp_diag_add(d, rep, 17, 0, st->fqn, f->name, st->offset,
                            "DCP: %s: the record at byte %llu of %s holds %s, the metadata says %s", st->fqn,
                            (unsigned long long)st->offset, f->name, tt->dtype, key->dtype_name);
    return 0;
}

static int read_records(ckpt_dcp *d, ckpt_report *rep)
{
    for (size_t s = 0; s < d->storages_len; s++) {
        dcp_storage *st = &d->storages[s];
        if (st->bad || st->key == DCP_NONE || st->file == DCP_NONE || d->files[st->file].base == CKPT_NONE) continue;
        TRY(open_record(d, rep, st));
    }
    return 0;
}

/* ---- the chunks (19-21): the metadata alone ---- */

static int check_chunks(ckpt_dcp *d, ckpt_report *rep)
{
    strbuf a = {0}, b = {0}, g = {0};
    int rc = 0;
    for (size_t k = 0; !rc && k < d->keys_len; k++) {
        const dcp_key *key = &d->keys[k];
        if (key->kind != DCP_TENSOR) continue;
        const uint64_t *G = d->pool + key->dims;
        bool ok = true;
        /* 19 */
        for (size_t j = key->chunks; !rc && j < key->chunks + key->chunks_len; j++) {
            const dcp_chunk *ch = &d->chunks[j];
            const uint64_t *o = d->pool + ch->offsets, *s = d->pool + ch->sizes;
            bool in = ch->orank == key->rank && ch->srank == key->rank;
            for (uint32_t q = 0; in && q < key->rank; q++)
                in = o[q] <= (uint64_t)INT64_MAX && s[q] <= (uint64_t)INT64_MAX && o[q] <= G[q] && s[q] <= G[q] - o[q];
            if (in) continue;
            ok = false;
            /* negative values print as read */
            a.len = b.len = g.len = 0;
            sb_puts(&a, "#[");
            for (uint32_t q = 0; q < ch->orank; q++) sb_printf(&a, q ? ", %lld" : "%lld", (long long)(int64_t)o[q]);
            sb_puts(&a, "]");
            sb_puts(&b, "#[");
            for (uint32_t q = 0; q < ch->srank; q++) sb_printf(&b, q ? ", %lld" : "%lld", (long long)(int64_t)s[q]);
            sb_puts(&b, "]");
            ckpt_shape_print(&g, G, key->rank);
            rc = a.failed || b.failed || g.failed
                     ? ckpt_fail_oom(&rep->error)
                     : dcp_diag_add(d, rep, 19, CKPT_E_DCP_CHUNKS, key->name, NULL, CKPT_NONE,
                                    "DCP: %s: chunk at %s of size %s lies outside %s", key->name, a.data, b.data,
                                    g.data);
        }
        if (rc || !ok) continue;
        /* 20: an intersection of positive volume */
        for (size_t i = key->chunks; !rc && ok && i < key->chunks + key->chunks_len; i++)
            for (size_t j = i + 1; !rc && ok && j < key->chunks + key->chunks_len; j++) {
                const uint64_t *oi = d->pool + d->chunks[i].offsets, *si = d->pool + d->chunks[i].sizes;
                const uint64_t *oj = d->pool + d->chunks[j].offsets, *sj = d->pool + d->chunks[j].sizes;
                bool meet = true;
                for (uint32_t q = 0; meet && q < key->rank; q++) meet = oi[q] < oj[q] + sj[q] && oj[q] < oi[q] + si[q];
                if (!meet) continue;
                ok = false;
                if (shape_text(&a, oi, key->rank) || shape_text(&b, oj, key->rank)) rc = ckpt_fail_oom(&rep->error);
                else
                    rc = dcp_diag_add(d, rep, 20, CKPT_E_DCP_CHUNKS, key->name, NULL, CKPT_NONE,
                                      "DCP: %s: chunks at %s and %s overlap", key->name, a.data, b.data);
            }
        if (rc || !ok) continue;
        /* 21: disjoint boxes inside the tensor: their volumes add up */
        uint64_t n = 1, cover = 0;
        bool big = !ckpt_shape_size(G, key->rank, &n);
        for (size_t j = key->chunks; !big && j < key->chunks + key->chunks_len; j++) {
            uint64_t v;
            big = !ckpt_shape_size(d->pool + d->chunks[j].sizes, key->rank, &v) || ckpt_add_overflows(cover, v, &cover);
        }
        if (!big && cover != n)
            rc = dcp_diag_add(d, rep, 21, CKPT_E_DCP_CHUNKS, key->name, NULL, CKPT_NONE,
                              "DCP: %s: its chunks cover %llu of %llu elements", key->name, (unsigned long long)cover,
                              (unsigned long long)n);
    }
    sb_free(&a);
    sb_free(&b);
    sb_free(&g);
    return rc;
}

/* ---- a folder ---- */

static bool ends_with(const char *s, const char *t)
{
    size_t a = strlen(s), b = strlen(t);
    return a >= b && !strcmp(s + a - b, t);
}

/* index m's .metadata, `size` bytes at `at` of the source */
static int read_meta_bytes(ckpt_dcp *d, ckpt_report *rep, size_t m, uint64_t at, uint64_t size)
{
    dcp_meta *me = &d->metas[m];
    if (size > CKPT_PICKLE_MAX_LEN) {
        d->meta_ok = false;
        return dcp_diag_add(d, rep, 2, CKPT_E_DCP_METADATA, NULL, ".metadata", CKPT_NONE,
                            "DCP: %s.metadata holds %llu bytes, not a DCP Metadata", me->dir ? me->dir : "",
                            (unsigned long long)size);
    }
    if (!(me->bytes = malloc(size ? (size_t)size : 1))) return ckpt_fail_oom(&rep->error);
    TRY(ckpt_read_at(d->src, at, me->bytes, (size_t)size, ".metadata", &rep->error));
    return dcp_read_metadata(d, rep, m, (size_t)size);
}

/* The checks after .metadata, in 12.5's order: storage entries, files, records, chunks, parts. */
static int checks(ckpt_dcp *d, ckpt_report *rep, const char *dir, bool here)
{
    TRY(match_storage(d, rep));
    TRY(list_files(d, rep, dir));
    if (here) {
        TRY(check_ranges(d, rep));
        TRY(read_records(d, rep));
    }
    TRY(check_chunks(d, rep));
    return dcp_parts(d, rep);
}

/* The source's folders that hold an index, in the listing's order: its top, or the folders
 * ckpt_dcp_folder_json laid out for Accelerate's FSDP save (format.md 12.7: optimizer_{i}/ with
 * pytorch_model_fsdp_{i}/, or ../pytorch_model_fsdp_{i}/ beside optimizer_{i}/): each folder of an
 * included .metadata, .metadata.tmp or .distcp file. */
static int index_dirs(ckpt_dcp *d, ckpt_report *rep, const ckpt_bundle *b)
{
    /* the root's last name ("ckpt/optimizer_0/": optimizer_0) */
    size_t rl = strlen(d->root);
    while (rl > 1 && d->root[rl - 1] == '/') rl--;
    size_t rb = rl;
    while (rb > 0 && d->root[rb - 1] != '/') rb--;
    for (size_t k = 0; k < b->count; k++) {
        const ckpt_bundle_entry *e = &b->entries[k];
        const char *sep = strrchr(e->name, '/');
        if (e->offset == CKPT_NONE || !dcp_folder_file(sep ? sep + 1 : e->name)) continue;
        size_t dl = sep ? (size_t)(sep - e->name) + 1 : 0;
        bool seen = false;
        for (size_t m = 0; m < d->metas_len && !seen; m++)
            seen = strlen(d->metas[m].dir) == dl && !strncmp(d->metas[m].dir, e->name, dl);
        if (seen || d->metas_len == DCP_MAX_METAS) continue;
        dcp_meta *me = &d->metas[d->metas_len++];
        strbuf dir = {0}, where = {0}, name = {0};
        sb_printf(&dir, "%.*s", (int)dl, e->name);
        if (dl) {
            sb_printf(&where, "%s/%.*s", d->root, (int)dl - 1, e->name);
            sb_printf(&name, "%.*s", (int)dl - 1, e->name);
        } else {
            sb_puts(&where, d->root);
            sb_printf(&name, "%.*s", (int)(rl - rb), d->root + rb);
        }
        me->planner = CKPT_PNIL;
        me->dir = sb_take(&dir);
        me->where = sb_take(&where);
        me->name = sb_take(&name);
        if (!me->dir || !me->where || !me->name) return ckpt_fail_oom(&rep->error);
    }
    return 0;
}

/* 12.5.1 for each folder: its .metadata is there (else the save did not finish) */
static int metadata_there(ckpt_dcp *d, ckpt_report *rep, const ckpt_bundle *b, const ckpt_bundle_entry **metas,
                          bool *missing)
{
    int rc = 0;
    *missing = false;
    for (size_t m = 0; !rc && m < d->metas_len; m++) {
        const dcp_meta *me = &d->metas[m];
        strbuf nm = {0};
        sb_printf(&nm, "%s.metadata", me->dir);
        if (nm.failed) return ckpt_fail_oom(&rep->error);
        metas[m] = ckpt_bundle_find(b, nm.data);
        sb_free(&nm);
        if (metas[m] && metas[m]->offset != CKPT_NONE) continue;
        size_t n = 0, dl = strlen(me->dir);
        for (size_t k = 0; k < b->count; k++) {
            const char *e = b->entries[k].name;
            n += !strncmp(e, me->dir, dl) && !strchr(e + dl, '/') && ends_with(e, ".distcp");
        }
        rc = dcp_diag_add(d, rep, 1, CKPT_E_DCP_FOLDER, NULL, NULL, CKPT_NONE,
                          "DCP: %s has %zu data files but no .metadata: the save did not finish (DCP writes "
                          ".metadata last)",
                          me->where, n);
        *missing = true;
    }
    return rc;
}

/* Two indices read as one: a key in both would be two values for one name (DCP's load of each
 * folder takes each key from its own) */
static int keys_once(ckpt_dcp *d, ckpt_report *rep)
{
    if (!dcp_sort_keys(d)) return ckpt_fail_oom(&rep->error);
    for (size_t j = 1; j < d->keys_len; j++) {
        size_t a = d->sorted[j - 1], b = d->sorted[j];
        if (strcmp(d->keys[a].name, d->keys[b].name) || dcp_key_meta(d, a) == dcp_key_meta(d, b)) continue;
        d->meta_ok = false;
        size_t ma = dcp_key_meta(d, a), mb = dcp_key_meta(d, b);
        return dcp_diag_add(d, rep, 3, CKPT_E_DCP_METADATA, d->keys[a].name, NULL, CKPT_NONE,
                            "DCP: %s is a key of both %s and %s: read as one checkpoint, each key is in one of them",
                            d->keys[a].name, d->metas[ma < mb ? ma : mb].where, d->metas[ma < mb ? mb : ma].where);
    }
    return 0;
}

/* The note on two folders read as one: which part came from which folder */
static int joined_note(ckpt_dcp *d, ckpt_report *rep)
{
    strbuf note = {0};
    sb_puts(&note, "DCP: one checkpoint of two DCP folders:");
    static const char *const parts[] = {NULL, "model", "optimizer"};
    bool first = true;
    for (int q = DCP_PART_MODEL; q <= DCP_PART_OPTIM; q++)
        for (size_t m = 0; m < d->metas_len; m++) {
            size_t counts[3];
            dcp_meta_counts(d, m, counts);
            if (!counts[q]) continue;
            sb_printf(&note, "%s the %s part from %s", first ? "" : ",", parts[q], d->metas[m].name);
            first = false;
        }
    if (d->note) sb_printf(&note, "; %s", d->note);
    char *text = sb_take(&note);
    if (!text) return ckpt_fail_oom(&rep->error);
    free(d->note);
    d->note = text;
    return 0;
}

static int folder(ckpt_parse *p, ckpt_dcp *d)
{
    ckpt_report *rep = p->rep;
    ckpt_bundle *b = NULL;
    TRY(ckpt_bundle_open(d->src, &b, p->err));
    int rc = 0;
    const ckpt_bundle_entry *metas[DCP_MAX_METAS] = {0};
    if (!(d->root = dcp_dup(b->root))) rc = ckpt_fail_oom(&rep->error);
    if (!rc) rc = index_dirs(d, rep, b);
    if (!rc && !d->metas_len) {
        /* a bundle laid out without any of a DCP folder's files: its top */
        rc = dcp_diag_add(d, rep, 1, CKPT_E_DCP_FOLDER, NULL, NULL, CKPT_NONE,
                          "DCP: %s has 0 data files but no .metadata: the save did not finish (DCP writes "
                          ".metadata last)",
                          d->root);
        ckpt_bundle_free(b);
        return rc;
    }
    bool missing = false;
    if (!rc) rc = metadata_there(d, rep, b, metas, &missing);
    if (rc || missing) {
        ckpt_bundle_free(b);
        return rc;
    }
    for (size_t m = 0; !rc && m < d->metas_len; m++) rc = read_meta_bytes(d, rep, m, metas[m]->offset, metas[m]->size);
    if (!rc && d->meta_ok && d->metas_len > 1) rc = keys_once(d, rep);
    if (!rc && d->meta_ok) {
        rc = match_storage(d, rep);
        if (!rc) rc = list_files(d, rep, d->root);
        /* each file here: where its bytes are */
        for (size_t k = 0; !rc && k < d->files_len; k++) {
            const ckpt_bundle_entry *e = ckpt_bundle_find(b, d->files[k].name);
            if (e && e->offset != CKPT_NONE && e->size != CKPT_NONE) {
                d->files[k].base = e->offset;
                d->files[k].size = e->size;
            }
        }
        if (!rc) rc = check_ranges(d, rep);
        if (!rc) rc = read_records(d, rep);
        if (!rc) rc = check_chunks(d, rep);
        if (!rc) rc = dcp_parts(d, rep);
        if (!rc && d->metas_len > 1) rc = joined_note(d, rep);
    }
    /* the strays: files laid out in an index's folder that are neither its .metadata nor named by it */
    for (size_t k = 0; !rc && k < b->count; k++) {
        const ckpt_bundle_entry *e = &b->entries[k];
        if (e->offset == CKPT_NONE || e->size == CKPT_NONE) continue;
        bool inside = false;
        for (size_t m = 0; m < d->metas_len && !inside; m++) {
            size_t dl = strlen(d->metas[m].dir);
            inside = !strncmp(e->name, d->metas[m].dir, dl) && !strchr(e->name + dl, '/') &&
                     strcmp(e->name + dl, ".metadata");
        }
        if (!inside) continue;
        bool named = false;
        for (size_t f = 0; f < d->files_len && !named; f++) named = !strcmp(d->files[f].name, e->name);
        if (named) continue;
        char **q = realloc(d->strays, (d->strays_len + 1) * sizeof *q);
        if (!q || !(q[d->strays_len] = dcp_dup(e->name))) {
            if (q) d->strays = q;
            rc = ckpt_fail_oom(&rep->error);
            break;
        }
        d->strays = q;
        d->strays_len++;
    }
    ckpt_bundle_free(b);
    return rc;
}

/* ---- a lone .metadata ---- */

static int lone_metadata(ckpt_parse *p, ckpt_dcp *d)
{
    ckpt_report *rep = p->rep;
    d->lone_metadata = true;
    if (d->src->size == CKPT_NONE)
        return ckpt_fail(&rep->error, DCP_PREFIX, CKPT_E_DCP_METADATA, CKPT_NONE, 0,
                         ".metadata of unknown size: ckptscope reads it from a file");
    d->metas_len = 1;
    if (!(d->metas[0].dir = dcp_dup(""))) return ckpt_fail_oom(&rep->error);
    TRY(read_meta_bytes(d, rep, 0, 0, d->src->size));
    if (!d->meta_ok) return 0;
    TRY(checks(d, rep, ".", false));
    if (!d->files_len) return 0;
    strbuf note = {0};
    sb_printf(&note,
              "DCP: this is the index of a distributed checkpoint; its data is in %zu files (%s%s) that are not here",
              d->files_len, d->files[0].name, d->files_len > 1 ? ", …" : "");
    if (!(d->note = sb_take(&note))) return ckpt_fail_oom(&rep->error);
    return 0;
}

/* ---- a lone .distcp: 1 when it is one record or not records back to back (section 10's) ---- */

static uint32_t le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* Where the torch.save record that ends at byte `end` starts (format.md 12.1: b = the directory's
 * end, its ZIP64 record when there, less the directory's size and stated offset), or CKPT_NONE
 * when no end record of torch.save's (22 bytes, no comment) ends there. */
static int record_before(const ckpt_source *src, uint64_t end, uint64_t *start, ckpt_error *err)
{
    enum { END = 22, LOCATOR = 20, RECORD64 = 56 };
    uint8_t e[END], l[LOCATOR], r[RECORD64];
    *start = CKPT_NONE;
    if (end < END) return 0;
    uint64_t at = end - END;
    TRY(ckpt_read_at(src, at, e, END, "an end record", err));
    if (le32(e) != 0x06054b50u || e[20] || e[21]) return 0;
    uint64_t cd_end = at, cd_size = le32(e + 12), cd_offset = le32(e + 16);
    if (at >= LOCATOR + RECORD64) {
        TRY(ckpt_read_at(src, at - LOCATOR, l, LOCATOR, "a ZIP64 locator", err));
        if (le32(l) == 0x07064b50u) {
            cd_end = at - LOCATOR - RECORD64;
            TRY(ckpt_read_at(src, cd_end, r, RECORD64, "a ZIP64 end record", err));
            if (le32(r) != 0x06064b50u) return 0;
            cd_size = ckpt_get_u64le(r + 40);
            cd_offset = ckpt_get_u64le(r + 48);
            /* the locator points at that record, counted from the record's start */
            if (cd_offset > UINT64_MAX - cd_size || ckpt_get_u64le(l + 8) != cd_offset + cd_size) return 0;
        }
    }
    if (cd_size > cd_end || cd_offset > cd_end - cd_size) return 0;
    *start = cd_end - cd_size - cd_offset;
    return 0;
}

/* The last record's start when the file is torch.save records back to back: each record's end
 * record ends where the next one starts and the first starts at byte 0 (CKPT_NONE otherwise:
 * one record, or a zip whose readers disagree, section 10's). */
static int last_record(const ckpt_source *src, uint64_t *last, ckpt_error *err)
{
    *last = CKPT_NONE;
    if (src->size == CKPT_NONE) return 0;
    uint64_t b;
    TRY(record_before(src, src->size, &b, err));
    if (b == CKPT_NONE || b == 0) return 0;
    /* each step goes back by 22 bytes or more: the walk ends */
    for (uint64_t at = b; at;) {
        TRY(record_before(src, at, &at, err));
        if (at == CKPT_NONE) return 0;
    }
    *last = b;
    return 0;
}

/* the file's name and folder from the name the caller gave (NULL: none) */
static void name_parts(const char *name, const char **file, char **dir)
{
    *file = NULL;
    *dir = NULL;
    if (!name || !*name) return;
    const char *slash = strrchr(name, '/');
    *file = slash ? slash + 1 : name;
    if (!slash) return;
    size_t n = slash == name ? 1 : (size_t)(slash - name);
    if ((*dir = malloc(n + 1))) {
        memcpy(*dir, name, n);
        (*dir)[n] = 0;
    }
}

char *dcp_distcp_note(const char *name)
{
    const char *file;
    char *dir;
    name_parts(name, &file, &dir);
    strbuf note = {0};
    sb_printf(&note,
              "DCP: %s is a data file of a distributed checkpoint: torch.save records back to back, found only "
              "through the folder's .metadata; open %s",
              file && *file ? file : "this file", dir ? dir : "its folder");
    free(dir);
    return sb_take(&note);
}

bool dcp_distcp_name(const char *name)
{
    const char *file, *slash = name ? strrchr(name, '/') : NULL;
    file = slash ? slash + 1 : name;
    return file && rank_of(file) != CKPT_NONE;
}

static int lone_distcp(ckpt_parse *p, ckpt_dcp *d)
{
    ckpt_report *rep = p->rep;
    uint64_t b;
    TRY(last_record(d->src, &b, &rep->error));
    if (b == CKPT_NONE) return 1;
    d->lone_distcp = true;
    d->record_at = b;
    d->record_len = d->src->size - b;
    /* the last record, read as section 10 reads a file: on its window */
    ckpt_window w;
    ckpt_source s;
    ckpt_source_window(&s, &w, d->src, d->record_at, d->record_len);
    ckpt_error e = {0};
    ckpt_error_clear(&e);
    int code = ckpt_torch_open(&s, "archive", &d->record, &e);
    ckpt_error_clear(&e);
    if (code == CKPT_E_NO_MEMORY) return ckpt_fail_oom(&rep->error);
    d->note = dcp_distcp_note(p->name);
    return d->note ? 0 : ckpt_fail_oom(&rep->error);
}

int dcp_open(ckpt_parse *p, ckpt_dcp *d)
{
    d->src = p->r->src;
    const uint8_t *head;
    size_t n = ckpt_reader_head(p->r, &head);
    if (ckpt_bundle_probe(head, n, DCP_PREFIX)) return folder(p, d);
    if (dcp_metadata_head(head, n)) return lone_metadata(p, d);
    return lone_distcp(p, d);
}
