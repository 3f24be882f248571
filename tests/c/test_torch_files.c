/* The layers on real torch.save files (made by tests/c/torch_seeds.py at test time): the zip
 * reader lists a torch.save zip's members as Python's zipfile does, the pickle reader finds in
 * its data.pkl the persistent ids Python's unpickler meets, in the same order, and the names
 * torch writes; the legacy format's five pickles in a row and its storages after them. The
 * facts Python saw are in DIR/facts.txt. Then --kind on such files (ckpt_set_kind). Usage:
 * test_torch_files DIR */
#include "containers/pickle.h"
#include "core/impl.h"
#include "families/pytorch/globals.h"
#include "minijson.h"
#include "testutil.h"
#include "containers/zip.h"

static const char *dir;

static uint8_t *slurp(const char *name, size_t *len) { return read_file_in(dir, name, len); }

/* Python's facts, the lines starting with `tag ` */
static char *facts(const char *tag)
{
    size_t n;
    char *all = (char *)slurp("facts.txt", &n);
    strbuf sb = {0};
    size_t tl = strlen(tag);
    for (char *line = all; line && *line;) {
        char *end = strchr(line, '\n');
        size_t len = end ? (size_t)(end - line) : strlen(line);
        if (len > tl && !memcmp(line, tag, tl) && line[tl] == ' ') {
            sb_put(&sb, line, len);
            sb_putc(&sb, '\n');
        }
        line = end ? end + 1 : NULL;
    }
    free(all);
    if (!sb.data) sb_puts(&sb, "");
    return sb_take(&sb);
}

static void put_span(strbuf *sb, const ckpt_pickle *p, const ckpt_pnode *n)
{
    sb_put(sb, (const char *)p->data + n->at, (size_t)n->len);
}

/* A persistent id ('storage', storage type, key, location, numel[, view metadata]) as text. */
static void put_pid(strbuf *sb, const ckpt_pickle *p, size_t pid)
{
    const ckpt_pnode *t = ckpt_pickle_node(p, pid);
    CHECK(t->kind == CKPT_PK_TUPLE && (t->count == 5 || t->count == 6));
    for (size_t j = 0; j < t->count; j++) {
        const ckpt_pnode *x = ckpt_pickle_node(p, ckpt_pickle_item(p, pid, j));
        if (j) sb_putc(sb, ' ');
        if (x->kind == CKPT_PK_STR) put_span(sb, p, x);
        else if (x->kind == CKPT_PK_INT) sb_printf(sb, "%lld", (long long)x->i);
        else if (x->kind == CKPT_PK_NONE) sb_puts(sb, "None");
        else if (x->kind == CKPT_PK_GLOBAL) {
            put_span(sb, p, x);
            sb_putc(sb, '.');
            sb_put(sb, (const char *)p->data + x->at2, (size_t)x->len2);
        } else sb_puts(sb, "?");
    }
}

static int64_t pid_numel(const ckpt_pickle *p, size_t pid)
{
    return ckpt_pickle_node(p, ckpt_pickle_item(p, pid, 4))->i;
}

static void test_zip_file(void)
{
    size_t len;
    uint8_t *d = slurp("optimizer.pt", &len);
    CHECK(d != NULL);
    if (!d) return;
    ckpt_memory mem;
    ckpt_source src;
    ckpt_source_memory(&src, &mem, d, len);
    ckpt_zip *z;
    ckpt_error err = {0};
    ckpt_error_clear(&err);
    CHECK(ckpt_zip_open(&src, &z, &err) == 0);
    if (!z) {
        fprintf(stderr, "  %s\n", err.message);
        free(d);
        return;
    }
    strbuf got = {0};
    for (size_t k = 0; k < z->count; k++) {
        const ckpt_zip_member *m = &z->members[k];
        sb_printf(&got, "member %s %u %llu\n", m->name, m->method, (unsigned long long)m->uncompressed);
        CHECK(ckpt_zip_resolve(z, k, &err) == 0);
        CHECK(m->data_offset % 64 == 0); /* torch aligns every member's data */
    }
    char *want = facts("member");
    CHECK_STR(got.data, want);
    free(want);
    sb_free(&got);
    /* data.pkl, read through its window */
    const char *slash = strchr(z->members[0].name, '/');
    CHECK(slash != NULL);
    char name[256];
    snprintf(name, sizeof name, "%.*s/data.pkl", (int)(slash - z->members[0].name), z->members[0].name);
    const ckpt_zip_member *pm = ckpt_zip_find(z, name);
    CHECK(pm != NULL);
    if (pm) {
        ckpt_source ps;
        ckpt_window w;
        CHECK(ckpt_zip_member_source(z, (size_t)(pm - z->members), &ps, &w, &err) == 0);
        uint8_t *pk = malloc((size_t)ps.size);
        CHECK(ps.read(ps.ctx, 0, pk, (size_t)ps.size) == ps.size);
        ckpt_pickle *p;
        CHECK(ckpt_pickle_read(pk, (size_t)ps.size, "PyTorch", name, 0, pm->data_offset, &p, &err) == 0);
        if (p) {
            CHECK(p->protocol == 2 && p->end == ps.size);
            strbuf g = {0};
            ckpt_pickle_globals_json(&g, p, NULL);
            CHECK(strstr(g.data, "\"torch._utils._rebuild_tensor_v2\"") != NULL);
            CHECK(strstr(g.data, "\"collections.OrderedDict\"") != NULL);
            CHECK(strstr(g.data, "\"torch.FloatStorage\"") != NULL);
            sb_free(&g);
            CHECK(ckpt_torch_pickle_weights_only(p)); /* torch.save's own output */
            strbuf pids = {0};
            size_t n = 0;
            for (size_t k = 0; k < p->nodes_len; k++) {
                const ckpt_pnode *x = ckpt_pickle_node(p, k);
                if (x->kind != CKPT_PK_PERSID) continue;
                sb_puts(&pids, "persid ");
                put_pid(&pids, p, x->a);
                sb_putc(&pids, '\n');
                /* the storage's record holds numel float32 elements */
                char key[300];
                const ckpt_pnode *kn = ckpt_pickle_node(p, ckpt_pickle_item(p, x->a, 2));
                snprintf(key, sizeof key, "%.*s/data/%.*s", (int)(slash - z->members[0].name), z->members[0].name,
                         (int)kn->len, (const char *)p->data + kn->at);
                const ckpt_zip_member *sm = ckpt_zip_find(z, key);
                CHECK(sm && sm->uncompressed == 4 * (uint64_t)pid_numel(p, x->a));
                n++;
            }
            want = facts("persid");
            CHECK_STR(pids.data, want);
            free(want);
            CHECK(n == z->count - 2); /* every member but data.pkl and version is a storage */
            sb_free(&pids);
            ckpt_pickle_free(p);
        } else fprintf(stderr, "  %s\n", err.message);
        free(pk);
    }
    ckpt_error_clear(&err);
    ckpt_zip_free(z);
    free(d);
}

static void test_legacy_file(void)
{
    size_t len;
    uint8_t *d = slurp("optimizer-legacy.pt", &len);
    CHECK(d != NULL);
    if (!d) return;
    /* not a zip */
    ckpt_memory mem;
    ckpt_source src;
    ckpt_source_memory(&src, &mem, d, len);
    ckpt_zip *z;
    ckpt_error err = {0};
    ckpt_error_clear(&err);
    CHECK(ckpt_zip_open(&src, &z, &err) == CKPT_E_ZIP_NOT_FOUND);
    ckpt_error_clear(&err);
    ckpt_pickle *ps[5] = {0};
    size_t at = 0;
    for (int k = 0; k < 5; k++) {
        CHECK(ckpt_pickle_read(d + at, len - at, "PyTorch", "optimizer-legacy.pt", at, at, &ps[k], &err) == 0);
        if (!ps[k]) {
            fprintf(stderr, "  %s\n", err.message);
            break;
        }
        at += ps[k]->end;
    }
    if (ps[4]) {
        strbuf got = {0};
        /* (1) the magic number, a LONG1 of 10 bytes, little-endian */
        const ckpt_pnode *m = ckpt_pickle_node(ps[0], ps[0]->root);
        CHECK(m->kind == CKPT_PK_BIGINT && m->len == 10);
        sb_puts(&got, "legacy magic 0x");
        for (uint64_t j = m->len; j-- > 0;) sb_printf(&got, "%02x", ps[0]->data[m->at + j]);
        /* (2) the protocol version */
        sb_printf(&got, " protocol %lld\n", (long long)ckpt_pickle_node(ps[1], ps[1]->root)->i);
        /* (3) sys_info: a dict */
        CHECK(ckpt_pickle_node(ps[2], ps[2]->root)->kind == CKPT_PK_DICT);
        /* (5) the storage keys */
        sb_printf(&got, "legacy pickles-end %zu keys", at);
        const ckpt_pnode *keys = ckpt_pickle_node(ps[4], ps[4]->root);
        CHECK(keys->kind == CKPT_PK_LIST);
        for (size_t j = 0; j < keys->count; j++) {
            sb_putc(&got, ' ');
            put_span(&got, ps[4], ckpt_pickle_node(ps[4], ckpt_pickle_item(ps[4], ps[4]->root, j)));
        }
        sb_putc(&got, '\n');
        char *want = facts("legacy");
        CHECK_STR(got.data, want);
        free(want);
        sb_free(&got);
        /* (4) the object's persistent ids, six fields */
        strbuf pids = {0};
        for (size_t k = 0; k < ps[3]->nodes_len; k++) {
            const ckpt_pnode *x = ckpt_pickle_node(ps[3], k);
            if (x->kind != CKPT_PK_PERSID) continue;
            sb_puts(&pids, "legacy-persid ");
            put_pid(&pids, ps[3], x->a);
            sb_putc(&pids, '\n');
        }
        want = facts("legacy-persid");
        CHECK_STR(pids.data, want);
        free(want);
        sb_free(&pids);
        /* then for each key a u64 element count and that many float32 elements, to the end */
        for (size_t j = 0; j < keys->count && at + 8 <= len; j++) {
            uint64_t count;
            memcpy(&count, d + at, 8);
            at += 8 + 4 * count;
        }
        CHECK(at == len);
    }
    for (int k = 0; k < 5; k++) ckpt_pickle_free(ps[k]);
    ckpt_error_clear(&err);
    free(d);
}

/* The seed `name` opened (its bytes in *d, freed by the caller after ckpt_close) */
static ckpt_file *open_seed(const char *name, uint8_t **d, ckpt_memory *mem, ckpt_source *src)
{
    size_t len = 0;
    *d = slurp(name, &len);
    CHECK(*d != NULL);
    if (!*d) return NULL;
    ckpt_source_memory(src, mem, *d, len);
    ckpt_file *f = ckpt_open(src, NULL);
    CHECK(f != NULL);
    return f;
}

/* The report's optimizer member `key`: its text, "true"/"false" or "null" */
static void check_optimizer_member(const ckpt_report *rep, const char *key, const char *want)
{
    char *json = ckpt_report_json(rep);
    jvalue *j = json ? json_parse(json) : NULL;
    const jvalue *v = json_get(json_get(j, "optimizer"), key);
    CHECK(v != NULL);
    const char *got = !v ? NULL : json_is_null(v) ? "null" : v->type == JBOOL ? (v->b ? "true" : "false") : v->text;
    CHECK_STR(got, want);
    json_free(j);
    free(json);
}

/* --kind on a PyTorch file (ckpt_set_kind, the family's set_kind): torch 1.13's Adam says no
 * kind, so the given one is taken and the JSON says it was given; a file whose groups say
 * decoupled_weight_decay keeps its kind, another is refused naming --kind */
static void test_given_kind(void)
{
    uint8_t *d;
    ckpt_memory mem;
    ckpt_source src;
    ckpt_error err = {0};
    ckpt_error_clear(&err);
    ckpt_file *f = open_seed("optimizer.pt", &d, &mem, &src);
    if (f) {
        const ckpt_report *rep = ckpt_file_report(f);
        CHECK(ckpt_kind_unknown(rep));
        check_optimizer_member(rep, "kind", "null");
        check_optimizer_member(rep, "kindGiven", "false");
        CHECK(ckpt_set_kind(f, CKPT_ADAMW, &err) == 0);
        CHECK(!ckpt_kind_unknown(rep));
        check_optimizer_member(rep, "kind", "adamw");
        check_optimizer_member(rep, "kindGiven", "true");
        CHECK(ckpt_set_kind(f, (ckpt_kind)2, &err) == CKPT_E_INVALID_ARGUMENT);
        CHECK_STR(err.message, "the kind is adam or adamw");
        ckpt_error_clear(&err);
        ckpt_close(f);
    }
    free(d);
    f = open_seed("optimizer-said.pt", &d, &mem, &src);
    if (f) {
        const ckpt_report *rep = ckpt_file_report(f);
        CHECK(!ckpt_kind_unknown(rep));
        check_optimizer_member(rep, "kind", "adam");
        CHECK(ckpt_set_kind(f, CKPT_ADAM, &err) == 0);
        check_optimizer_member(rep, "kindGiven", "false");
        CHECK(ckpt_set_kind(f, CKPT_ADAMW, &err) == CKPT_E_INVALID_ARGUMENT);
        CHECK_STR(err.message,
                  "--kind adamw contradicts the file: its param_groups say decoupled_weight_decay False (Adam)");
        ckpt_error_clear(&err);
        check_optimizer_member(rep, "kind", "adam");
        ckpt_close(f);
    }
    free(d);
}

int main(int argc, char **argv)
{
    if (argc != 2) return fprintf(stderr, "usage: test_torch_files DIR\n"), 2;
    dir = argv[1];
    static const test_case cases[] = {{"torch.save zip", test_zip_file},
                                      {"legacy torch.save", test_legacy_file},
                                      {"a kind given where the file says none", test_given_kind}};
    return RUN_ALL(cases);
}
