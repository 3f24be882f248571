/* Opening a torch.save file (format.md 10.1): the zip's members or the legacy format's five
 * pickles, then its storages, tensors and state dicts. */
#include "families/pytorch/values.h"

#include <stdio.h>

/* ---- containers ---- */

static int fail_container(ckpt_error *err, int code, const char *text)
{
    return ckpt_fail(err, "PyTorch", code, CKPT_NONE, 0, "%s", text);
}

static int read_member(ckpt_zip *z, size_t k, uint8_t **out, size_t *len, ckpt_error *err)
{
    ckpt_source ms;
    ckpt_window w;
    TRY(ckpt_zip_member_source(z, k, &ms, &w, err));
    if (ms.size > CKPT_PICKLE_MAX_LEN)
        return ckpt_fail(err, "PyTorch", CKPT_E_TORCH_UNSUPPORTED, CKPT_NONE, 0,
                         "a pickle of more than 4 GiB is not read");
    uint8_t *d = malloc(ms.size ? (size_t)ms.size : 1);
    if (!d) return ckpt_fail_oom(err);
    int rc = ckpt_read_at(&ms, 0, d, (size_t)ms.size, z->members[k].name, err);
    if (rc) {
        free(d);
        return rc;
    }
    *out = d;
    *len = (size_t)ms.size;
    return 0;
}

static int open_zip(tctx *c)
{
    ckpt_torch *t = c->t;
    TRY(ckpt_zip_open(c->src, &c->zip, c->err));
    ckpt_zip *z = c->zip;
    size_t pkl = CKPT_TORCH_NONE;
    for (size_t k = 0; k < z->count && pkl == CKPT_TORCH_NONE; k++) {
        const char *nm = z->members[k].name, *slash = strchr(nm, '/');
        if (slash && !strcmp(slash, "/data.pkl")) pkl = k;
    }
    if (pkl == CKPT_TORCH_NONE) {
        /* TorchScript without data.pkl (older torch.jit.save) still has constants.pkl */
        for (size_t k = 0; k < z->count; k++) {
            const char *slash = strchr(z->members[k].name, '/');
            if (slash && !strcmp(slash, "/constants.pkl"))
                return fail_container(c->err, CKPT_E_TORCH_NOT_CHECKPOINT,
                                      "a TorchScript archive (torch.jit.save): it holds a program, not a checkpoint");
        }
        return fail_container(c->err, CKPT_E_TORCH_NOT_CHECKPOINT, "no data.pkl in this zip: not a torch.save file");
    }
    const char *nm = z->members[pkl].name;
    size_t pl = (size_t)(strchr(nm, '/') - nm);
    t->prefix = torch_dup_span(nm, pl);
    if (!t->prefix) return ckpt_fail_oom(c->err);
    strbuf probe = {0};
    sb_printf(&probe, "%s/constants.pkl", t->prefix);
    const ckpt_zip_member *cm = probe.data ? ckpt_zip_find(z, probe.data) : NULL;
    sb_free(&probe);
    if (cm)
        return fail_container(c->err, CKPT_E_TORCH_NOT_CHECKPOINT,
                              "a TorchScript archive (torch.jit.save): it holds a program, not a checkpoint");
    for (size_t k = 0; k < z->count; k++)
        if (z->members[k].method != 0) {
            strbuf ms = {0};
            j_string(&ms, z->members[k].name);
            int rc = ckpt_fail(c->err, "PyTorch", CKPT_E_TORCH_UNSUPPORTED, z->members[k].entry_offset + 10, 2,
                               "member %s is compressed (method %u); torch.save stores members uncompressed",
                               ms.data ? ms.data : "\"\"", z->members[k].method);
            sb_free(&ms);
            return rc;
        }
    strbuf bo = {0};
    sb_printf(&bo, "%s/byteorder", t->prefix);
    const ckpt_zip_member *bm = bo.data ? ckpt_zip_find(z, bo.data) : NULL;
    sb_free(&bo);
    if (bm) {
        size_t k = (size_t)(bm - z->members);
        if (bm->uncompressed <= 16) {
            uint8_t *d;
            size_t len;
            TRY(read_member(z, k, &d, &len, c->err));
            bool big = len == 3 && !memcmp(d, "big", 3);
            free(d);
            if (big)
                return fail_container(c->err, CKPT_E_TORCH_UNSUPPORTED,
                                      "big-endian checkpoint (byteorder \"big\") is not supported");
        }
    }
    size_t len;
    TRY(read_member(z, pkl, &t->pickle_bytes, &len, c->err));
    memset(&t->wo[0], 0, sizeof t->wo[0]);
    t->wo_len = 1;
    TRY(ckpt_pickle_read_observed(t->pickle_bytes, len, "PyTorch", nm, 0, z->members[pkl].data_offset,
                                  ckpt_torch_wo_observe, &t->wo[0], &t->pickle, c->err));
    if (!(t->member = torch_dup_span(nm, strlen(nm)))) return ckpt_fail_oom(c->err);
    c->member = t->member;
    c->base = z->members[pkl].data_offset;
    return 0;
}

/* An opcode that changes a tensor torch has rebuilt (globals.h, ckpt_wo): torch.load would hold
 * other values than the storage record ckptscope reads, so the file is not read. */
static int torch_changes_tensor(tctx *c)
{
    const ckpt_torch *t = c->t;
    for (size_t k = 0; k < t->wo_len; k++) {
        const ckpt_wo *w = &t->wo[k];
        if (!w->changes_op) continue;
        strbuf name = {0};
        j_string(&name, t->member);
        uint64_t at = t->legacy ? w->changes_at : c->base + w->changes_at;
        int rc;
        if (w->changes_op == CKPT_OP_BUILD)
            rc = ckpt_fail(c->err, "PyTorch", CKPT_E_TORCH_UNSUPPORTED, at, 1,
                           "BUILD at byte %llu of %s sets the state of a tensor torch.load has rebuilt "
                           "(Tensor.set_): torch.load gives it other values than its storage record holds; "
                           "ckptscope does not read such a file",
                           (unsigned long long)w->changes_at, name.failed ? "\"\"" : name.data);
        else
            rc = ckpt_fail(c->err, "PyTorch", CKPT_E_TORCH_UNSUPPORTED, at, 1,
                           "%s at byte %llu of %s assigns into a tensor torch.load has rebuilt: torch.load gives "
                           "it other values than its storage record holds (with weights_only=True too in torch "
                           "1.13 and 2.6; 2.14 refuses the file); ckptscope does not read such a file",
                           ckpt_pickle_op_name(w->changes_op), (unsigned long long)w->changes_at,
                           name.failed ? "\"\"" : name.data);
        sb_free(&name);
        return rc;
    }
    return 0;
}

static const uint8_t legacy_magic[10] = {0x6c, 0xfc, 0x9c, 0x46, 0xf9, 0x20, 0x6a, 0xa8, 0x50, 0x19};

/* The five pickles from the start of the file, read into a buffer grown until they fit. */
static int open_legacy(tctx *c, const char *name, uint64_t *storages_at)
{
    ckpt_torch *t = c->t;
    uint64_t size = c->src->size;
    size_t cap = size < (1u << 16) ? (size_t)size : 1u << 16;
    t->prefix = torch_dup_span("", 0);
    if (!t->prefix) return ckpt_fail_oom(c->err);
    for (;;) {
        uint8_t *d = realloc(t->legacy_bytes, cap ? cap : 1);
        if (!d) return ckpt_fail_oom(c->err);
        t->legacy_bytes = d;
        TRY(ckpt_read_at(c->src, 0, d, cap, "the pickles", c->err));
        ckpt_pickle *ps[5] = {0};
        size_t at = 0;
        int rc = 0;
        memset(t->wo, 0, sizeof t->wo);
        t->wo_len = 5;
        for (int k = 0; k < 5 && !rc; k++) {
            rc = ckpt_pickle_read_observed(d + at, cap - at, "PyTorch", name, at, at, ckpt_torch_wo_observe, &t->wo[k],
                                           &ps[k], c->err);
            if (!rc) at += ps[k]->end;
        }
        if (rc && (rc == CKPT_E_PICKLE_MALFORMED || rc == CKPT_E_PICKLE_OPCODE) && cap < size &&
            cap < CKPT_PICKLE_MAX_LEN) {
            for (int k = 0; k < 5; k++) ckpt_pickle_free(ps[k]);
            ckpt_error_clear(c->err);
            cap = size - cap < cap ? (size_t)size : 2 * cap; /* the pickles may reach further: read more */
            if (cap > CKPT_PICKLE_MAX_LEN) cap = CKPT_PICKLE_MAX_LEN;
            continue;
        }
        if (rc) {
            for (int k = 0; k < 5; k++) ckpt_pickle_free(ps[k]);
            return rc;
        }
        t->legacy_pickles[0] = ps[0];
        t->legacy_pickles[1] = ps[1];
        t->legacy_pickles[2] = ps[2];
        t->pickle = ps[3];
        t->legacy_pickles[3] = ps[4];
        const ckpt_pnode *m = ckpt_pickle_node(ps[0], ps[0]->root);
        if (m->kind != CKPT_PK_BIGINT || (m->flags & CKPT_PF_TEXT) || m->len != 10 ||
            memcmp(ps[0]->data + m->at, legacy_magic, 10))
            return fail_container(c->err, CKPT_E_TORCH_NOT_CHECKPOINT,
                                  "the first pickle is not torch.save's magic number: not a torch.save file");
        const ckpt_pnode *v = ckpt_pickle_node(ps[1], ps[1]->root);
        if (v->kind != CKPT_PK_INT || v->i != 1001)
            return fail_container(c->err, CKPT_E_TORCH_UNSUPPORTED,
                                  "a legacy torch.save file of another protocol version than 1001");
        if (!(t->member = torch_dup_span(name, strlen(name)))) return ckpt_fail_oom(c->err);
        c->member = t->member;
        /* sys_info: little_endian */
        tctx ci = *c;
        ckpt_torch tmp = *t;
        tmp.pickle = ps[2];
        ci.t = &tmp;
        size_t le = torch_is_dict(&ci, ps[2]->root) ? torch_dict_get(&ci, ps[2]->root, "little_endian") : CKPT_PNIL;
        if (le != CKPT_PNIL && ckpt_pickle_node(ps[2], le)->kind == CKPT_PK_BOOL && !ckpt_pickle_node(ps[2], le)->truth)
            return fail_container(c->err, CKPT_E_TORCH_UNSUPPORTED,
                                  "big-endian checkpoint (sys_info little_endian False) is not supported");
        *storages_at = at;
        return 0;
    }
}

void ckpt_torch_free(ckpt_torch *t)
{
    if (!t) return;
    free(t->prefix);
    ckpt_pickle_free(t->pickle);
    free(t->pickle_bytes);
    for (int k = 0; k < 4; k++) ckpt_pickle_free(t->legacy_pickles[k]);
    free(t->legacy_bytes);
    free(t->member);
    for (size_t k = 0; k < t->storages_len; k++) free(t->storages[k].key);
    free(t->storages);
    free(t->tensors);
    free(t->dims);
    for (size_t k = 0; k < t->named_len; k++) free(t->named[k].name);
    free(t->named);
    for (size_t k = 0; k < t->models_len; k++) free(t->models[k].path);
    free(t->models);
    for (size_t k = 0; k < t->optimizers_len; k++) free(t->optimizers[k].path);
    free(t->optimizers);
    free(t->groups);
    free(t->entries);
    free(t->ints);
    for (size_t k = 0; k < t->strings_len; k++) free(t->strings[k]);
    free(t->strings);
    free(t->loose);
    free(t->tensor_of_node);
    free(t);
}

/* The object's "epoch" and "global_step" integers, when it is a dict holding them (Lightning). */
static void read_progress(tctx *c)
{
    ckpt_torch *t = c->t;
    size_t root = t->pickle->root;
    if (!torch_is_dict(c, root)) return;
    size_t e = torch_dict_get(c, root, "epoch"), g = torch_dict_get(c, root, "global_step");
    if ((t->has_epoch = e != CKPT_PNIL && N(c, e)->kind == CKPT_PK_INT)) t->epoch = N(c, e)->i;
    if ((t->has_global_step = g != CKPT_PNIL && N(c, g)->kind == CKPT_PK_INT)) t->global_step = N(c, g)->i;
}

int ckpt_torch_open(const ckpt_source *src, const char *name, ckpt_torch **out, ckpt_error *err)
{
    *out = NULL;
    ckpt_torch *t = calloc(1, sizeof *t);
    if (!t) return ckpt_fail_oom(err);
    t->model = CKPT_TORCH_NONE;
    tctx c = {t, src, err, name, NULL, NULL, 0, NULL, {0}, 0, 0};
    uint8_t head[4] = {0};
    size_t got = src->read(src->ctx, 0, head, src->size < 4 ? (size_t)src->size : 4);
    int rc;
    uint64_t storages_at = 0;
    if (got == 4 && !memcmp(head, "PK\x03\x04", 4)) rc = open_zip(&c);
    else if (got >= 1 && head[0] == 0x80) {
        t->legacy = true;
        rc = open_legacy(&c, name, &storages_at);
    } else rc = fail_container(err, CKPT_E_TORCH_NOT_CHECKPOINT, "neither a zip nor a pickle: not a torch.save file");
    if (!rc) rc = torch_changes_tensor(&c);
    if (!rc) {
        t->tensor_of_node = malloc((t->pickle->nodes_len ? t->pickle->nodes_len : 1) * sizeof *t->tensor_of_node);
        c.seen = calloc(t->pickle->nodes_len ? t->pickle->nodes_len : 1, 1);
        if (!t->tensor_of_node || !c.seen) rc = ckpt_fail_oom(err);
        else
            for (size_t k = 0; k < t->pickle->nodes_len; k++) t->tensor_of_node[k] = CKPT_TORCH_NONE;
    }
    if (!rc) rc = t->legacy ? torch_storages_legacy(&c, t->legacy_pickles[3], storages_at) : torch_storages_zip(&c);
    if (!rc) {
        sb_puts(&c.path, "");
        rc = torch_search(&c, t->pickle->root, 0);
        if (!rc && c.path.failed) rc = ckpt_fail_oom(err);
        if (!rc) read_progress(&c);
    }
    if (!rc && t->models_len) t->model = 0;
    t->pickle_at = c.base;
    ckpt_zip_free(c.zip);
    free(c.hash);
    free(c.seen);
    sb_free(&c.path);
    if (rc) {
        ckpt_torch_free(t);
        return rc;
    }
    *out = t;
    return 0;
}

bool ckpt_torch_same(const ckpt_torch *t, size_t a, size_t b)
{
    const ckpt_torch_tensor *x = &t->tensors[a], *y = &t->tensors[b];
    if (x->storage != y->storage || x->offset != y->offset || x->rank != y->rank || strcmp(x->dtype, y->dtype))
        return false;
    return !memcmp(t->dims + x->dims, t->dims + y->dims, 2 * (size_t)x->rank * sizeof *t->dims);
}
