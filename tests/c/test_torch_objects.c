/* The torch object model (src/families/pytorch/objects.h) on real torch.save files made at test time by
 * tests/c/torch_objects_seeds.py (torch through /usr/bin/python3): what the native reader finds
 * (optimizers and their groups and entries, model state dicts, ties by storage identity, the
 * weights-only verdict) equals what torch.load found, written beside each file as FILE.expected;
 * a pickle naming os.system is read and nothing runs; truncated files, a storage shorter than it
 * declares and a view past its storage give their exact texts. Usage: test_torch_objects DIR */
#include "minijson.h"
#include "testutil.h"
#include "families/pytorch/objects.h"

#include <unistd.h>

static const char *dir;

static uint8_t *slurp(const char *name, size_t *len) { return read_file_in(dir, name, len); }

static int open_bytes(const uint8_t *d, size_t len, const char *name, ckpt_torch **t, ckpt_error *err)
{
    ckpt_memory mem;
    ckpt_source src;
    ckpt_source_memory(&src, &mem, d, len);
    ckpt_error_clear(err);
    return ckpt_torch_open(&src, name, t, err);
}

/* The report JSON that ships (ckpt_inspect's, the family's json_body), parsed. */
static jvalue *shipped_json(const uint8_t *d, size_t len)
{
    ckpt_memory mem;
    ckpt_source src;
    ckpt_source_memory(&src, &mem, d, len);
    ckpt_report *rep = ckpt_inspect(&src, NULL);
    CHECK(rep != NULL);
    if (!rep) return NULL;
    char *js = ckpt_report_json(rep);
    jvalue *v = js ? json_parse(js) : NULL;
    free(js);
    ckpt_report_free(rep);
    return v;
}

static void put_num(strbuf *sb, double x) { j_double(sb, x); }
static void put_opt(strbuf *sb, bool has, double x)
{
    if (has) j_double(sb, x);
    else sb_putc(sb, '-');
}
static const char *flag(bool has, bool x) { return has ? (x ? "true" : "false") : "-"; }

static void put_shape(strbuf *sb, const ckpt_torch *t, size_t k)
{
    const uint64_t *s = ckpt_torch_size(t, k);
    for (uint32_t d = 0; d < t->tensors[k].rank; d++) sb_printf(sb, d ? ",%llu" : "%llu", (unsigned long long)s[d]);
}

/* The summary torch_objects_seeds.py writes from torch.load's objects. */
static void summary(strbuf *sb, const ckpt_torch *t)
{
    for (size_t o = 0; o < t->optimizers_len; o++) {
        const ckpt_torch_optimizer *op = &t->optimizers[o];
        sb_printf(sb, "optimizer %s\n", op->path);
        for (size_t g = 0; g < op->groups_len; g++) {
            const ckpt_torch_group *gr = &t->groups[op->groups + g];
            sb_printf(sb, "group %zu lr=", g);
            put_opt(sb, gr->has & CKPT_TG_LR, gr->lr);
            sb_puts(sb, " betas=");
            if (gr->has & CKPT_TG_BETAS) {
                put_num(sb, gr->beta1);
                sb_putc(sb, ',');
                put_num(sb, gr->beta2);
            } else sb_putc(sb, '-');
            sb_puts(sb, " eps=");
            put_opt(sb, gr->has & CKPT_TG_EPS, gr->eps);
            sb_puts(sb, " wd=");
            put_opt(sb, gr->has & CKPT_TG_WEIGHT_DECAY, gr->weight_decay);
            sb_printf(sb, " amsgrad=%s maximize=%s params=", flag(gr->has & CKPT_TG_AMSGRAD, gr->amsgrad),
                      flag(gr->has & CKPT_TG_MAXIMIZE, gr->maximize));
            for (size_t j = 0; j < gr->params_len; j++)
                sb_printf(sb, j ? ",%lld" : "%lld", (long long)t->ints[gr->params + j]);
            sb_putc(sb, '\n');
        }
        for (size_t k = 0; k < op->entries_len; k++) {
            const ckpt_torch_entry *e = &t->entries[op->entries + k];
            sb_printf(sb, "entry %lld group=", (long long)e->index);
            if (e->group == CKPT_TORCH_NONE) sb_putc(sb, '-');
            else sb_printf(sb, "%zu", e->group);
            sb_puts(sb, " step=");
            put_opt(sb, e->has_step, e->step);
            sb_puts(sb, " shape=");
            /* the moments' shape, or the first other state tensor's */
            size_t lead = e->exp_avg;
            for (size_t j = 0; j < e->other_len && lead == CKPT_TORCH_NONE; j++) lead = t->named[e->other + j].tensor;
            CHECK(lead != CKPT_TORCH_NONE && (e->exp_avg == CKPT_TORCH_NONE) == (e->exp_avg_sq == CKPT_TORCH_NONE));
            if (lead == CKPT_TORCH_NONE) continue;
            put_shape(sb, t, lead);
            sb_printf(sb, " dtype=%s max=%s other=", t->tensors[lead].dtype,
                      e->max_exp_avg_sq != CKPT_TORCH_NONE ? "yes" : "no");
            for (size_t j = 0; j < e->other_len; j++) sb_printf(sb, j ? ",%s" : "%s", t->named[e->other + j].name);
            sb_puts(sb, e->other_len ? "\n" : "-\n");
        }
    }
    for (size_t m = 0; m < t->models_len; m++) {
        const ckpt_torch_model *md = &t->models[m];
        sb_printf(sb, "model %s\n", md->path);
        for (size_t j = 0; j < md->count; j++) {
            const ckpt_torch_named *nm = &t->named[md->first + j];
            sb_printf(sb, "tensor %s shape=", nm->name);
            put_shape(sb, t, nm->tensor);
            sb_printf(sb, " dtype=%s tie=", t->tensors[nm->tensor].dtype);
            const char *tie = "-";
            for (size_t i = 0; i < j; i++)
                if (ckpt_torch_same(t, t->named[md->first + i].tensor, nm->tensor)) {
                    tie = t->named[md->first + i].name;
                    break;
                }
            sb_printf(sb, "%s\n", tie);
        }
    }
    /* torch 1.13's verdict, as torch_objects_seeds.py writes torch.load's */
    const ckpt_pickle *in = NULL;
    const ckpt_wo_refusal *r = ckpt_torch_wo_refusal(t, CKPT_TV_1_13, &in);
    if (!r) sb_puts(sb, "weightsOnly113 takes\n");
    else {
        sb_printf(sb, "weightsOnly113 %s %llu ", ckpt_pickle_op_name(r->op), (unsigned long long)r->at);
        ckpt_torch_wo_reason(sb, in, r, CKPT_TV_1_13);
        sb_putc(sb, '\n');
    }
}

/* Every element a tensor claims lies in its storage's record, read through the file. */
static void check_tensors(const ckpt_torch *t, size_t len)
{
    for (size_t k = 0; k < t->tensors_len; k++) {
        const ckpt_torch_tensor *x = &t->tensors[k];
        const ckpt_torch_storage *s = &t->storages[x->storage];
        CHECK(s->bytes == s->numel * s->width);
        CHECK(s->at + s->bytes <= len);
        CHECK(x->at == s->at + x->offset * x->width);
        CHECK(!x->count || x->at + x->width <= s->at + s->bytes);
    }
}

static ckpt_torch *open_file(const char *name, uint8_t **data, size_t *len)
{
    *data = slurp(name, len);
    CHECK(*data != NULL);
    if (!*data) return NULL;
    ckpt_torch *t = NULL;
    ckpt_error err = {0};
    int rc = open_bytes(*data, *len, name, &t, &err);
    CHECK(rc == 0);
    if (rc) fprintf(stderr, "  %s: %s\n", name, err.message);
    ckpt_error_clear(&err);
    return t;
}

static void compare(const char *name)
{
    uint8_t *d;
    size_t len;
    ckpt_torch *t = open_file(name, &d, &len);
    if (t) {
        strbuf got = {0};
        summary(&got, t);
        char want_name[256];
        snprintf(want_name, sizeof want_name, "%s.expected", name);
        size_t wl;
        char *want = (char *)slurp(want_name, &wl);
        CHECK(want != NULL);
        if (want) CHECK_STR(got.data, want);
        free(want);
        sb_free(&got);
        check_tensors(t, len);
        jvalue *v = shipped_json(d, len);
        CHECK(v != NULL);
        if (v) {
            const jvalue *c = json_get(v, "container");
            CHECK(json_u64(json_get(c, "records")) == t->records);
            CHECK(t->records == t->storages_len);
        }
        json_free(v);
        ckpt_torch_free(t);
    }
    free(d);
}

static void test_adamw(void)
{
    compare("adamw.pt");
    compare("adamw-legacy.pt");
    /* the zip's details */
    uint8_t *d;
    size_t len;
    ckpt_torch *t = open_file("adamw.pt", &d, &len);
    if (t) {
        CHECK(!t->legacy && !strcmp(t->prefix, "adamw"));
        CHECK(t->optimizers_len == 1 &&
              t->optimizers[0].kind == CKPT_TORCH_KIND_UNKNOWN); /* 1.13 writes no decoupled_weight_decay */
        CHECK(t->models_len == 0 && t->model == CKPT_TORCH_NONE);
        for (size_t k = 0; k < t->tensors_len; k++) CHECK(t->tensors[k].at % 64 == 0); /* torch aligns records */
        ckpt_torch_free(t);
    }
    free(d);
}

static void test_amsgrad(void) { compare("amsgrad.pt"); }

static void test_other_optimizers(void)
{
    compare("sgd.pt");
    compare("decoupled.pt");
    compare("mixed-kind.pt");
    uint8_t *d;
    size_t len;
    ckpt_torch *t = open_file("decoupled.pt", &d, &len);
    if (t) {
        CHECK(t->optimizers[0].kind == CKPT_TORCH_KIND_ADAMW);
        const ckpt_torch_group *g = &t->groups[1];
        CHECK((g->has & CKPT_TG_PARAM_NAMES) && g->names_len == 2 && !strcmp(t->strings[g->names + 1], "2.bias"));
        jvalue *v = shipped_json(d, len);
        const jvalue *o = json_get(v, "optimizer");
        const jvalue *kind = json_get(o, "kind"), *groups = json_get(o, "groups");
        CHECK(kind && kind->type == JSTR && !strcmp(kind->text, "adamw"));
        CHECK(groups && groups->type == JARR && groups->len == 2);
        const jvalue *names = groups && groups->len == 2 ? json_get(groups->items[1], "paramNames") : NULL;
        CHECK(names && names->type == JARR && names->len == 2 && !strcmp(names->items[0]->text, "0.bias") &&
              !strcmp(names->items[1]->text, "2.bias"));
        json_free(v);
        ckpt_torch_free(t);
    }
    free(d);
    t = open_file("mixed-kind.pt", &d, &len);
    if (t) CHECK(t->optimizers[0].kind == CKPT_TORCH_KIND_UNKNOWN);
    ckpt_torch_free(t);
    free(d);
    t = open_file("sgd.pt", &d, &len);
    if (t) CHECK(t->optimizers[0].kind == CKPT_TORCH_KIND_UNKNOWN && !t->entries[0].has_step);
    ckpt_torch_free(t);
    free(d);
}

static void test_model(void)
{
    compare("model.pt");
    compare("model-legacy.bin");
    compare("both.pt");
}

static void test_lightning(void)
{
    compare("lightning.ckpt");
    uint8_t *d;
    size_t len;
    ckpt_torch *t = open_file("lightning.ckpt", &d, &len);
    if (t) {
        strbuf g = {0};
        ckpt_torch_pickle_globals_json(&g, t->pickle, true);
        CHECK_STR(g.data, "[\"__main__.HParams\"]"); /* the dataclass: data, not run */
        sb_free(&g);
        ckpt_torch_free(t);
    }
    free(d);
}

static void test_evil(void)
{
    char ran[4096];
    snprintf(ran, sizeof ran, "%s/ran", dir);
    unlink(ran);
    uint8_t *d;
    size_t len;
    ckpt_torch *t = open_file("evil.pt", &d, &len);
    if (t) {
        CHECK(!ckpt_torch_pickle_weights_only(t->pickle));
        strbuf w = {0};
        ckpt_torch_pickle_weights_only_warning(&w, t->pickle);
        CHECK_STR(
            w.data,
            "PyTorch: the file names Python callables that torch.load(weights_only=True) refuses: \"posix.system\"");
        sb_free(&w);
        CHECK(t->models_len == 1 && !strcmp(t->models[0].path, "model") && t->models[0].count == 7);
        jvalue *v = shipped_json(d, len);
        const jvalue *wo = json_get(v, "weightsOnly"), *refused = json_get(v, "refused");
        CHECK(wo && wo->type == JBOOL && !wo->b);
        CHECK(refused && refused->type == JARR && refused->len == 1 &&
              !strcmp(refused->items[0]->text, "posix.system"));
        json_free(v);
        ckpt_torch_free(t);
    }
    CHECK(access(ran, F_OK) != 0); /* nothing ran */
    free(d);
    /* in a legacy file, a name in any of the five pickles counts */
    t = open_file("legacy-sysinfo.pt", &d, &len);
    if (t) {
        CHECK(ckpt_torch_pickle_weights_only(t->pickle) && !ckpt_torch_weights_only(t));
        strbuf w = {0};
        ckpt_torch_weights_only_warning(&w, t);
        CHECK_STR(
            w.data,
            "PyTorch: the file names Python callables that torch.load(weights_only=True) refuses: \"posix.system\"");
        sb_free(&w);
        ckpt_torch_globals_json(&w, t, false);
        CHECK_STR(w.data, "[\"posix.system\",\"torch._utils._rebuild_tensor_v2\",\"torch.FloatStorage\",\"collections."
                          "OrderedDict\"]");
        sb_free(&w);
        CHECK(t->optimizers_len == 1 && t->entries_len == 4);
        ckpt_torch_free(t);
    }
    free(d);
}

static void expect_fail(const char *name, int code, const char *text)
{
    size_t len;
    uint8_t *d = slurp(name, &len);
    CHECK(d != NULL);
    if (!d) return;
    ckpt_torch *t = NULL;
    ckpt_error err = {0};
    CHECK(open_bytes(d, len, name, &t, &err) == code);
    CHECK(t == NULL);
    CHECK_STR(err.message, text);
    ckpt_error_clear(&err);
    free(d);
}

static void test_handmade(void)
{
    expect_fail("short-storage.pt", CKPT_E_TORCH_STORAGE,
                "PyTorch: storage \"0\" declares 16 bytes but its record holds 12");
    expect_fail("view-past.pt", CKPT_E_TORCH_TENSOR_BOUNDS,
                "PyTorch: tensor \"w\" reaches element 6 of storage \"0\", which holds 4");
    uint8_t *d;
    size_t len;
    ckpt_torch *t = open_file("fine.pt", &d, &len);
    if (t) {
        CHECK(t->models_len == 1 && t->models[0].count == 2);
        CHECK(t->tensors_len == 2 && !t->tensors[0].contiguous && t->tensors[1].contiguous);
        CHECK(t->tensors[0].count == 2 && t->tensors[1].count == 1 && t->tensors[1].rank == 0);
        check_tensors(t, len);
        ckpt_torch_free(t);
    }
    free(d);
}

static void test_containers(void)
{
    expect_fail("script.pt", CKPT_E_TORCH_NOT_CHECKPOINT,
                "PyTorch: a TorchScript archive (torch.jit.save): it holds a program, not a checkpoint");
    expect_fail("compressed.pt", CKPT_E_TORCH_UNSUPPORTED,
                "PyTorch: member \"model/data/0\" is compressed (method 8); torch.save stores members uncompressed");
    expect_fail("big.pt", CKPT_E_TORCH_UNSUPPORTED,
                "PyTorch: big-endian checkpoint (byteorder \"big\") is not supported");
    expect_fail("no-pickle.pt", CKPT_E_TORCH_NOT_CHECKPOINT, "PyTorch: no data.pkl in this zip: not a torch.save file");
    expect_fail("no-record.pt", CKPT_E_TORCH_STORAGE,
                "PyTorch: storage \"0\" has no record \"model/data/0\" in this zip");
    /* "little" is read as torch writes it; Python's zipfile aligns nothing, and needs no alignment */
    uint8_t *d;
    size_t len;
    ckpt_torch *t = open_file("little.pt", &d, &len);
    if (t) {
        CHECK(t->models_len == 1 && t->models[0].count == 7 && !strcmp(t->prefix, "model"));
        check_tensors(t, len);
        ckpt_torch_free(t);
    }
    free(d);
}

static void test_tensor_kinds(void)
{
    compare("params.pt");
    uint8_t *d;
    size_t len;
    ckpt_torch *t = open_file("params.pt", &d, &len);
    if (t) {
        const ckpt_torch_tensor *w = &t->tensors[t->named[t->models[0].first].tensor];
        size_t vk = t->named[t->models[0].first + 1].tensor;
        const ckpt_torch_tensor *v = &t->tensors[vk];
        CHECK(w->parameter && w->contiguous && !v->parameter);
        CHECK(!v->contiguous && v->offset == 1 && ckpt_torch_stride(t, vk)[0] == 4 &&
              t->storages[v->storage].numel == 12);
        /* the element at v's offset: 1.0 of arange(12) */
        float x;
        memcpy(&x, d + v->at, 4);
        CHECK(x == 1.0f);
        ckpt_torch_free(t);
    }
    free(d);
    /* a subclass: _rebuild_from_type_v2 around _rebuild_tensor_v2 */
    t = open_file("subclass.pt", &d, &len);
    if (t) {
        CHECK(t->models_len == 1 && t->models[0].count == 1 && t->tensors_len == 1);
        CHECK(t->tensors[0].rank == 1 && ckpt_torch_size(t, 0)[0] == 3 && !strcmp(t->tensors[0].dtype, "float32"));
        CHECK(!ckpt_torch_pickle_weights_only(t->pickle)); /* it names __main__.Sub */
        ckpt_torch_free(t);
    }
    free(d);
    /* _rebuild_tensor_v3 over an UntypedStorage of 12 bytes: float16 [2, 3] */
    t = open_file("v3.pt", &d, &len);
    if (t) {
        CHECK(t->tensors_len == 1 && !strcmp(t->tensors[0].dtype, "float16") && t->tensors[0].width == 2);
        CHECK(t->storages_len == 1 && t->storages[0].numel == 12 && t->storages[0].width == 1);
        CHECK(t->tensors[0].count == 6 && t->tensors[0].contiguous);
        check_tensors(t, len);
        ckpt_torch_free(t);
    }
    free(d);
}

/* what the memo shares is copied at most as often as the pickle's bytes allow */
static void test_shared(void)
{
    size_t n;
    char *want = (char *)slurp("shared-size.pt.error", &n);
    CHECK(want != NULL);
    if (want) expect_fail("shared-size.pt", CKPT_E_TORCH_MALFORMED, want);
    free(want);
}

static void test_steps(void)
{
    expect_fail("bad-step.pt", CKPT_E_TORCH_STEP, "PyTorch: index 1: step 1.5 is not a step count");
    compare("int-step.pt"); /* a Python int beside step tensors */
}

/* Every prefix of a file fails with its exact text (zip: no end record; legacy: the pickle, or
 * the first storage record cut short), never crashes. */
static void truncations(const char *name)
{
    uint8_t *d;
    size_t len;
    ckpt_torch *full = open_file(name, &d, &len);
    if (!full) {
        free(d);
        return;
    }
    uint64_t pickles_end = UINT64_MAX;
    for (size_t s = 0; s < full->storages_len; s++)
        if (full->storages[s].at - 8 < pickles_end) pickles_end = full->storages[s].at - 8;
    for (size_t cut = 0; cut < len; cut++) {
        ckpt_torch *t = NULL;
        ckpt_error err = {0};
        uint8_t *copy = malloc(cut ? cut : 1); /* exactly cut bytes: ASan sees any read past them */
        memcpy(copy, d, cut);
        int rc = open_bytes(copy, cut, name, &t, &err);
        CHECK(rc != 0 && t == NULL && err.message != NULL);
        char want[256];
        if (!full->legacy && cut >= 4) {
            snprintf(want, sizeof want, "zip: no end-of-central-directory record in the last %zu bytes of the file",
                     cut < 65557 ? cut : (size_t)65557);
            CHECK_STR(err.message, want);
        } else if (full->legacy && cut >= pickles_end) {
            /* the first record (in file order) that the cut reaches into */
            const ckpt_torch_storage *hit = NULL;
            for (size_t s = 0; s < full->storages_len; s++) {
                const ckpt_torch_storage *sg = &full->storages[s];
                if (sg->at + sg->bytes > cut && (!hit || sg->at < hit->at)) hit = sg;
            }
            CHECK(hit != NULL);
            if (hit) {
                snprintf(want, sizeof want, "PyTorch: storage \"%s\" declares %llu bytes but its record holds %llu",
                         hit->key, (unsigned long long)hit->bytes,
                         (unsigned long long)(cut > hit->at ? cut - hit->at : 0));
                CHECK_STR(err.message, want);
                CHECK(rc == CKPT_E_TORCH_STORAGE);
            }
        } else if (full->legacy && cut > 0) {
            CHECK(rc == CKPT_E_PICKLE_MALFORMED);
            if (rc != CKPT_E_PICKLE_MALFORMED) fprintf(stderr, "  cut %zu: %s\n", cut, err.message);
        }
        if (t_failures > 20) cut = len; /* one broken rule, not thousands of lines */
        ckpt_error_clear(&err);
        free(copy);
    }
    ckpt_torch_free(full);
    free(d);
}

static void test_truncated(void)
{
    truncations("adamw.pt");
    truncations("adamw-legacy.pt");
    truncations("model-legacy.bin");
}

static void test_not_torch(void)
{
    ckpt_torch *t;
    ckpt_error err = {0};
    CHECK(open_bytes((const uint8_t *)"TLADAMF", 7, "x", &t, &err) == CKPT_E_TORCH_NOT_CHECKPOINT);
    CHECK_STR(err.message, "PyTorch: neither a zip nor a pickle: not a torch.save file");
    ckpt_error_clear(&err);
}

/* The verdict of each version read on a hand-written pickle: where it stops and its reason; and
 * where the two bounds of 2.0 to 2.5 stop (globals.h: the least and the most any release there
 * takes). */
typedef struct wo_case {
    const char *what, *pickle;
    size_t len;
    const char *want[CKPT_TV_COUNT]; /* "OPCODE BYTE REASON" (a bound: "OPCODE BYTE"), or "takes" */
} wo_case;

static void wo_judge(const wo_case *c)
{
    ckpt_wo w = {0};
    ckpt_pickle *p = NULL;
    ckpt_error err = {0};
    int rc = ckpt_pickle_read_observed((const uint8_t *)c->pickle, c->len, "PyTorch", "archive/data.pkl", 0, CKPT_NONE,
                                       ckpt_torch_wo_observe, &w, &p, &err);
    t_current = c->what;
    CHECK(rc == 0);
    for (int v = 0; v < CKPT_TV_COUNT && !rc; v++) {
        strbuf got = {0};
        const ckpt_wo_refusal *r = &w.by[v];
        bool bound = v == CKPT_TV_2_0_LEAST || v == CKPT_TV_2_5_MOST;
        if (!r->check) sb_puts(&got, "takes");
        else {
            sb_printf(&got, "%s %llu", ckpt_pickle_op_name(r->op), (unsigned long long)r->at);
            if (!bound) {
                sb_putc(&got, ' ');
                ckpt_torch_wo_reason(&got, p, r, v);
            }
        }
        CHECK_STR(got.data, c->want[v]);
        sb_free(&got);
    }
    ckpt_pickle_free(p);
    ckpt_error_clear(&err);
}
#define WO(what, lit, a, b, c, least, most)                                                                            \
    {                                                                                                                  \
        what, lit, sizeof lit - 1, { a, b, c, least, most }                                                            \
    }

static void test_weights_only_versions(void)
{
    /* torch 1.13's verdict equals torch.load's (torch_objects_seeds.py, weights_only_line) */
    static const char *const real[] = {"wo-build-dict.pt", "wo-newobj-odict.pt", "wo-append-odict.pt",
                                       "wo-counter.pt",    "wo-reduce-none.pt",  "wo-order.pt"};
    for (size_t k = 0; k < sizeof real / sizeof real[0]; k++) compare(real[k]);
    const char *const adv26 = "was not an allowed global by default. Please use "
                              "`torch.serialization.add_safe_globals([eval])` or the "
                              "`torch.serialization.safe_globals([eval])` context manager to allowlist this global "
                              "if you trust this class/function.";
    char g26[512], g214[512];
    snprintf(g26, sizeof g26, "GLOBAL 2 Unsupported global: GLOBAL builtins.eval %s", adv26);
    snprintf(g214, sizeof g214, "GLOBAL 2 Unsupported global: GLOBAL eval %s", adv26);
    const wo_case cases[] = {
        WO("BINFLOAT", "\x80\x02G?\xf0\x00\x00\x00\x00\x00\x00.", "BINFLOAT 2 Unsupported operand 71", "takes", "takes",
           "takes", "takes"),
        WO("a float first, then os.system",
           "\x80\x02(G?\xf0\x00\x00\x00\x00\x00\x00"
           "cposix\nsystem\nt.",
           "BINFLOAT 3 Unsupported operand 71",
           "GLOBAL 12 Trying to load unsupported GLOBAL posix.system whose module posix is blocked.",
           "GLOBAL 12 Trying to load unsupported GLOBAL posix.system whose module posix is blocked.", "GLOBAL 12",
           "GLOBAL 12"),
        WO("builtins.eval",
           "\x80\x02"
           "cbuiltins\neval\n.",
           "GLOBAL 2 Unsupported class builtins.eval", g26, g214, "GLOBAL 2", "GLOBAL 2"),
        WO("Python 2's __builtin__.set",
           "\x80\x02"
           "c__builtin__\nset\n.",
           "GLOBAL 2 Unsupported class __builtin__.set", "takes", "takes", "GLOBAL 2", "takes"),
        WO("SETITEM into a torch.Size",
           "\x80\x02"
           "ctorch\nSize\n(K\x02tRK\x00K\x01s.",
           "SETITEM 23 'torch.Size' object does not support item assignment",
           "SETITEM 23 'torch.Size' object does not support item assignment",
           "SETITEM 23 Can only SETITEM for dict, collections.OrderedDict, collections.Counter, but got <class "
           "'torch.Size'>",
           "SETITEM 23", "SETITEM 23"),
        WO("SETITEM into a set",
           "\x80\x02"
           "cbuiltins\nset\n)RK\x00K\x01s.",
           "GLOBAL 2 Unsupported class builtins.set", "SETITEM 22 'set' object does not support item assignment",
           "SETITEM 22 Can only SETITEM for dict, collections.OrderedDict, collections.Counter, but got <class 'set'>",
           "GLOBAL 2", "SETITEM 22"),
        WO("APPENDS onto an OrderedDict",
           "\x80\x02"
           "ccollections\nOrderedDict\n)R(Ne.",
           "APPENDS 31 Can only extend lists, but got <class 'collections.OrderedDict'>",
           "APPENDS 31 Can only extend lists, but got <class 'collections.OrderedDict'>",
           "APPENDS 31 Can only append to lists, but got <class 'collections.OrderedDict'>", "APPENDS 31",
           "APPENDS 31"),
        WO("BUILD on a dict", "\x80\x02}}b.",
           "BUILD 4 Can only build Tensor, parameter or dict objects, but got <class 'dict'>",
           "BUILD 4 Can only build Tensor, Parameter, OrderedDict or types allowlisted via `add_safe_globals`, but got "
           "<class 'dict'>",
           "BUILD 4 Can only build Tensor, Parameter, OrderedDict or types allowlisted via `add_safe_globals`, but got "
           "<class 'dict'>",
           "BUILD 4", "BUILD 4"),
        WO("BUILD on a Counter",
           "\x80\x02"
           "ccollections\nCounter\n)R}b.",
           "GLOBAL 2 Unsupported class collections.Counter", "takes", "takes", "GLOBAL 2", "takes"),
        WO("NEWOBJ of OrderedDict",
           "\x80\x02"
           "ccollections\nOrderedDict\n)\x81.",
           "NEWOBJ 28 Trying to instantiate unsupported class <class 'collections.OrderedDict'>", "takes", "takes",
           "NEWOBJ 28", "takes"),
        WO("NEWOBJ of a function",
           "\x80\x02"
           "ctorch._utils\n_rebuild_tensor\n)\x81.",
           "NEWOBJ 33 Trying to instantiate unsupported class (the function torch._utils._rebuild_tensor)",
           "NEWOBJ 33 'function' object has no attribute '__new__'",
           "NEWOBJ 33 'function' object has no attribute '__new__'", "NEWOBJ 33", "NEWOBJ 33"),
        WO("REDUCE of a dict", "\x80\x02})R.", "REDUCE 4 Trying to call reduce for unrecognized function (a dict)",
           "REDUCE 4 Trying to call reduce for unrecognized function (a dict)",
           "REDUCE 4 Trying to call reduce for unrecognized function (a dict)", "REDUCE 4", "REDUCE 4"),
        WO("a DTensor",
           "\x80\x02"
           "ctorch.distributed.tensor\nDTensor\n.",
           "GLOBAL 2 Unsupported class torch.distributed.tensor.DTensor",
           "GLOBAL 2 ``torch.distributed.tensor`` must be imported to load DTensors",
           "GLOBAL 2 ``torch.distributed.tensor`` must be imported to load DTensors", "GLOBAL 2", "GLOBAL 2"),
        WO("bfloat16 and uint4",
           "\x80\x02"
           "ctorch\nbfloat16\nctorch\nuint4\n\x86.",
           "GLOBAL 2 Unsupported class torch.bfloat16",
           "GLOBAL 18 Unsupported global: GLOBAL torch.uint4 was not an allowed global by default. Please use "
           "`torch.serialization.add_safe_globals([uint4])` or the `torch.serialization.safe_globals([uint4])` "
           "context manager to allowlist this global if you trust this class/function.",
           "takes", "GLOBAL 2", "GLOBAL 18"),
        WO("protocol 4's SHORT_BINUNICODE",
           "\x80\x04\x8c\x01"
           "a.",
           "SHORT_BINUNICODE 2 Unsupported operand 140", "SHORT_BINUNICODE 2 Unsupported operand 140",
           "SHORT_BINUNICODE 2 Unsupported operand 140", "SHORT_BINUNICODE 2", "SHORT_BINUNICODE 2"),
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) wo_judge(&cases[k]);
}

/* A pickle that changes a tensor torch has rebuilt: torch 1.13 with weights_only=True loads other
 * values than the record (FILE.expected, from torch.load); ckptscope refuses the file. */
static void changed(const char *name, const char *text)
{
    char en[256];
    snprintf(en, sizeof en, "%s.expected", name);
    size_t l;
    char *e = (char *)slurp(en, &l);
    CHECK(e != NULL);
    if (!e) return;
    char op[16];
    unsigned long long at = 0;
    char loads[64];
    CHECK(sscanf(e, "%15s %llu loads w=%63s", op, &at, loads) == 3);
    CHECK(strcmp(loads, "[1.0,") != 0); /* torch's values are not the record's 1, 2 */
    char want[1024];
    snprintf(want, sizeof want, text, op, at);
    expect_fail(name, CKPT_E_TORCH_UNSUPPORTED, want);
    free(e);
}

static void test_changed_tensors(void)
{
    changed("wo-setitem-tensor.pt",
            "PyTorch: %s at byte %llu of \"archive/data.pkl\" assigns into a tensor torch.load has rebuilt: torch.load "
            "gives it other values than its storage record holds (with weights_only=True too in torch 1.13 and 2.6; "
            "2.14 refuses the file); ckptscope does not read such a file");
    changed("wo-build-tensor.pt",
            "PyTorch: %s at byte %llu of \"archive/data.pkl\" sets the state of a tensor torch.load has rebuilt "
            "(Tensor.set_): torch.load gives it other values than its storage record holds; ckptscope does not read "
            "such a file");
}

int main(int argc, char **argv)
{
    if (argc != 2) return fprintf(stderr, "usage: test_torch_objects DIR\n"), 2;
    dir = argv[1];
    static const test_case cases[] = {
        {"AdamW in two groups, zip and legacy", test_adamw},
        {"amsgrad: max_exp_avg_sq", test_amsgrad},
        {"SGD's state by name; decoupled_weight_decay and param_names", test_other_optimizers},
        {"model state dicts: a tie, BatchNorm buffers, both in one dict", test_model},
        {"a Lightning-like bfloat16 checkpoint", test_lightning},
        {"a pickle naming os.system: read, not run", test_evil},
        {"a storage shorter than declared, a view past its storage", test_handmade},
        {"containers torch.save does not write", test_containers},
        {"parameters, a view, a subclass, _rebuild_tensor_v3", test_tensor_kinds},
        {"steps", test_steps},
        {"values shared through the memo", test_shared},
        {"truncated files", test_truncated},
        {"not a torch.save file", test_not_torch},
        {"weights_only per torch version", test_weights_only_versions},
        {"a pickle that changes a rebuilt tensor", test_changed_tensors},
    };
    return RUN_ALL(cases);
}
