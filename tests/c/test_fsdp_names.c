/* Name-keyed optimizer files (docs/pytorch.md) and their pairing by name, on files made at
 * test time by tests/c/fsdp_names_seeds.py: the search finds them keyed by names, in form F and
 * nested as dcp_to_torch_save writes them; the pair's checks in order with their exact texts; and
 * the TorchLean conversion through the pair equals, byte for byte, the one of the Adam's own
 * id-keyed state dict with the same model (ids in module order). Usage: test_fsdp_names SEEDS_OUT */
#include "ds_folder.h"
#include "minijson.h"
#include "testutil.h"

static const char *dir;

typedef struct opened {
    unsigned char *bytes;
    ckpt_memory mem;
    ckpt_source src;
    ckpt_file *f;
} opened;

static void open_seed(opened *o, const char *name)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    size_t len = 0;
    o->bytes = ds_file_bytes(path, &len);
    CHECK(o->bytes != NULL);
    ckpt_source_memory(&o->src, &o->mem, o->bytes, len);
    o->f = ckpt_open(&o->src, NULL);
    CHECK(o->f && !ckpt_file_report(o->f)->error.code);
}

static void close_seed(opened *o)
{
    ckpt_close(o->f);
    free(o->bytes);
}

static jvalue *report_of(const opened *o)
{
    char *j = ckpt_report_json(ckpt_file_report(o->f));
    jvalue *v = json_parse(j);
    free(j);
    CHECK(v != NULL);
    return v;
}

static void test_search(void)
{
    opened o;
    open_seed(&o, "names.pt");
    jvalue *r = report_of(&o);
    const jvalue *opt = json_get(r, "optimizer");
    CHECK_STR(json_get(opt, "keying")->text, "names");
    const jvalue *groups = json_get(opt, "groups");
    CHECK(groups && groups->len == 1);
    const jvalue *params = json_get(groups->items[0], "params");
    static const char *const fsdp[] = {"emb.weight",          "norm.weight",       "norm.bias",
                                       "blocks.0.lin.weight", "blocks.0.lin.bias", "blocks.1.lin.weight",
                                       "blocks.1.lin.bias"};
    CHECK(params && params->len == 7);
    for (size_t k = 0; params && k < params->len && k < 7; k++) CHECK_STR(params->items[k]->text, fsdp[k]);
    const jvalue *entries = json_get(r, "entries");
    CHECK(entries && entries->len == 7);
    for (size_t k = 0; entries && k < entries->len && k < 7; k++) {
        CHECK_STR(json_get(entries->items[k], "name")->text, fsdp[k]);
        CHECK(json_u64(json_get(entries->items[k], "index")) == k); /* the stored order */
        CHECK(json_double(json_get(entries->items[k], "step")) == 2);
    }
    json_free(r);
    close_seed(&o);

    /* an id-keyed file says so, its entries unnamed */
    open_seed(&o, "ids.pt");
    r = report_of(&o);
    CHECK_STR(json_get(json_get(r, "optimizer"), "keying")->text, "ids");
    CHECK(json_is_null(json_get(json_get(r, "entries")->items[0], "name")));
    json_free(r);
    close_seed(&o);

    /* form F: two groups formed from equal values, with the note */
    open_seed(&o, "flat.pt");
    const ckpt_report *rep = ckpt_file_report(o.f);
    r = report_of(&o);
    opt = json_get(r, "optimizer");
    CHECK_STR(json_get(opt, "keying")->text, "flat");
    groups = json_get(opt, "groups");
    CHECK(groups && groups->len == 2);
    if (groups && groups->len == 2) {
        CHECK(json_double(json_get(groups->items[0], "weightDecay")) == 0.1);
        CHECK(json_double(json_get(groups->items[1], "lr")) == 5e-3);
        CHECK(json_get(groups->items[0], "params")->len == 3);
        CHECK_STR(json_get(groups->items[1], "params")->items[0]->text, "norm.weight");
    }
    CHECK(json_is_null(json_get(opt, "kind"))); /* torch 1.13's AdamW saves no decoupled_weight_decay */
    CHECK(json_get(r, "entries")->len == 7);
    CHECK(rep->warnings_len >= 1);
    if (rep->warnings_len)
        CHECK_STR(rep->warnings[rep->warnings_len - 1],
                  "DCP: the flattened optimizer state keeps no group boundaries: parameters with equal hyperparameters "
                  "form one group (2 groups)");
    json_free(r);
    close_seed(&o);

    /* state keys interleaved across parameters: one entry per name, in the order of its first key */
    open_seed(&o, "flat-interleaved.pt");
    r = report_of(&o);
    entries = json_get(r, "entries");
    CHECK(entries && entries->len == 7);
    static const char *const fsdp2[] = {"emb.weight", "blocks.0.lin.weight", "blocks.1.lin.weight", "norm.weight",
                                        "norm.bias",  "blocks.0.lin.bias",   "blocks.1.lin.bias"};
    for (size_t k = 0; entries && k < entries->len && k < 7; k++) {
        CHECK_STR(json_get(entries->items[k], "name")->text, fsdp2[k]);
        CHECK(json_double(json_get(entries->items[k], "step")) == 3);
        CHECK(!json_is_null(json_get(entries->items[k], "shape")));
    }
    json_free(r);
    close_seed(&o);

    /* nested as dcp_to_torch_save writes it: the model and the optimizer found by their paths */
    open_seed(&o, "nested.pt");
    r = report_of(&o);
    CHECK_STR(json_get(json_get(r, "optimizer"), "path")->text, "optimizer");
    CHECK_STR(json_get(json_get(r, "optimizer"), "keying")->text, "names");
    CHECK_STR(json_get(r, "model")->text, "model");
    json_free(r);
    close_seed(&o);

    /* a step that is no count names the FQN */
    char path[1024];
    snprintf(path, sizeof path, "%s/bad-step.pt", dir);
    size_t len = 0;
    unsigned char *b = ds_file_bytes(path, &len);
    ckpt_memory mem;
    ckpt_source src;
    ckpt_source_memory(&src, &mem, b, len);
    ckpt_file *f = ckpt_open(&src, NULL);
    CHECK(ckpt_file_report(f)->error.code == CKPT_E_TORCH_STEP);
    CHECK_STR(ckpt_file_report(f)->error.message, "PyTorch: blocks.0.lin.bias: step 1.5 is not a step count");
    ckpt_close(f);
    free(b);
}

/* The model's names in module order (names.json), for a safetensors model. */
static const char *const module_names[] = {
    "pos",         "emb.weight", "blocks.0.lin.weight", "blocks.0.lin.bias", "blocks.1.lin.weight", "blocks.1.lin.bias",
    "norm.weight", "norm.bias",  "head.weight"};
static bool with_names;

/* Pair `opt` with `model` (with_names: the model's names given). */
static ckpt_pair_result *pair(const char *opt, const char *model, const char *const *frozen, size_t nf, opened *o,
                              opened *m)
{
    open_seed(o, opt);
    open_seed(m, model);
    ckpt_pair_options po = {0};
    po.frozen = frozen;
    po.frozen_count = nf;
    if (with_names) po.names = module_names, po.name_count = 9;
    return ckpt_pair_with(o->f, m->f, &po, NULL, NULL);
}

static void expect_failures(ckpt_pair_result *r, const char *const *want, size_t n)
{
    CHECK(!r->pairs);
    CHECK(r->failures_len == n);
    for (size_t k = 0; k < n && k < r->failures_len; k++) {
        CHECK(r->failures[k].code == CKPT_E_BY_NAME);
        CHECK_STR(r->failures[k].message, want[k]);
    }
}

static void test_pair(void)
{
    opened o, m;
    ckpt_pair_result *r = pair("names.pt", "model.pt", NULL, 0, &o, &m);
    CHECK(r->pairs && !r->failures_len && !r->cannot_tell);
    CHECK_STR(r->note, "DCP: the model pairs with this checkpoint by name: same names, shapes and ties");
    const ckpt_report *rep = ckpt_file_report(o.f);
    CHECK(rep->slots_bound && rep->entries_len == 7);
    /* slots in module order: pos (frozen), emb.weight, ... head.weight (emb.weight's tie) */
    CHECK(rep->schema && ckpt_schema_count(rep->schema) == 9);
    if (rep->schema && ckpt_schema_count(rep->schema) == 9) {
        CHECK(!ckpt_schema_requires_grad(rep->schema, 0));
        CHECK(ckpt_schema_requires_grad(rep->schema, 1));
        CHECK(ckpt_schema_representative(rep->schema, 8) == 1);
    }
    ckpt_pair_result_free(r);
    close_seed(&o);
    close_seed(&m);

    /* the flat form and the nested file pair the same way */
    r = pair("flat.pt", "model2.pt", NULL, 0, &o, &m);
    CHECK(r->pairs);
    ckpt_pair_result_free(r);
    close_seed(&o);
    close_seed(&m);

    /* names, then shapes: every failure listed */
    r = pair("names.pt", "renamed.pt", NULL, 0, &o, &m);
    static const char *const renamed[] = {
        "DCP: blocks.1.lin.weight is in the checkpoint, not in the model",
        "DCP: blocks.1.lin.bias is in the checkpoint, not in the model",
        "DCP: norm.weight is #[4] in the checkpoint, #[5] in the model",
    };
    expect_failures(r, renamed, 3);
    ckpt_pair_result_free(r);
    close_seed(&o);
    close_seed(&m);

    /* ties: state under a name the model ties */
    r = pair("tiedstate.pt", "model.pt", NULL, 0, &o, &m);
    static const char *const tied[] = {"DCP: head.weight is tied to emb.weight in the model, not in the checkpoint"};
    expect_failures(r, tied, 1);
    ckpt_pair_result_free(r);
    close_seed(&o);
    close_seed(&m);

    /* requires grad: given what is frozen, a trainable slot without state fails; a frozen one
     * with state is dropped with a warning */
    static const char *const frozen[] = {"pos", "norm.bias"};
    r = pair("names.pt", "model.pt", frozen, 2, &o, &m);
    CHECK(r->pairs && r->warnings_len == 1);
    if (r->warnings_len)
        CHECK_STR(r->warnings[0], "DCP: norm.bias is frozen in the model but has optimizer state in the checkpoint");
    ckpt_pair_result_free(r);
    close_seed(&o);
    close_seed(&m);
    static const char *const only_emb[] = {"emb.weight"};
    r = pair("names.pt", "model.pt", only_emb, 1, &o, &m);
    static const char *const grad[] = {
        "DCP: pos requires grad in the model but has no optimizer state in the checkpoint"};
    expect_failures(r, grad, 1);
    CHECK(r->warnings_len == 1);
    ckpt_pair_result_free(r);
    close_seed(&o);
    close_seed(&m);
}

/* TorchLean through the pair: the same bytes as the id-keyed Adam's own state dict gives. */
static void convert_pair(const char *opt, const char *model, ckpt_buffer *out, int *rc)
{
    opened o, m;
    ckpt_pair_result *r = pair(opt, model, NULL, 0, &o, &m);
    CHECK(r->pairs || r->cannot_tell);
    ckpt_pair_result_free(r);
    ckpt_sink sink;
    ckpt_sink_buffer(&sink, out);
    ckpt_convert_options co = {0};
    co.kind = CKPT_ADAM + 1;
    co.oldest = true;
    ckpt_error err = {0};
    ckpt_error_clear(&err);
    *rc = ckpt_convert(o.f, &co, &sink, NULL, &err);
    if (*rc) fprintf(stderr, "convert %s: %s\n", opt, err.message ? err.message : "");
    ckpt_error_clear(&err);
    close_seed(&o);
    close_seed(&m);
}

static void test_convert(void)
{
    ckpt_buffer a = {0}, b = {0};
    int ra, rb;
    convert_pair("names.pt", "model.pt", &a, &ra);
    convert_pair("ids.pt", "model.pt", &b, &rb);
    CHECK(!ra && !rb);
    CHECK(a.len > 0 && a.len == b.len && !memcmp(a.data, b.data, a.len));
    free(a.data);
    free(b.data);
}

/* --to ids: the consolidated id-keyed file written to OUT/{name}, for tests/c/fsdp_ids_check.py
 * (torch loads it, compares it with the Adam's own state_dict and steps on); the warnings. */
static int file_sink(void *ctx, const void *buf, size_t n) { return fwrite(buf, 1, n, ctx) == n ? 0 : -1; }

static void write_ids(const char *opt, const char *model, const char *out, bool stored, const char *const *warn,
                      size_t nw)
{
    t_current = out;
    opened o, m;
    ckpt_pair_result *r = pair(opt, model, NULL, 0, &o, &m);
    CHECK(r->pairs);
    ckpt_pair_result_free(r);
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, out);
    FILE *fp = fopen(path, "wb");
    CHECK(fp != NULL);
    ckpt_sink sink = {fp, file_sink};
    ckpt_ids_options io = {0};
    io.group_order_stored = stored;
    io.prefix = "optimizer";
    ckpt_error err = {0};
    ckpt_error_clear(&err);
    CHECK(ckpt_convert_to_ids(o.f, &io, &sink, &err) == 0);
    if (err.message) fprintf(stderr, "%s: %s\n", out, err.message);
    fclose(fp);
    char *w = ckpt_convert_to_ids_warnings(o.f, &io, &err);
    jvalue *wj = w ? json_parse(w) : NULL;
    CHECK(wj && wj->len == nw);
    for (size_t k = 0; wj && k < nw && k < wj->len; k++) CHECK_STR(wj->items[k]->text, warn[k]);
    json_free(wj);
    free(w);
    ckpt_error_clear(&err);
    close_seed(&o);
    close_seed(&m);
}

static void test_ids(void)
{
    static const char *const one[] = {"DCP: group 0 lists norm.bias before blocks.0.lin.weight, the module the other "
                                      "way round: numbered in module order (--group-order stored keeps the list)"};
    write_ids("names.pt", "model.pt", "names-ids.pt", false, one, 1);
    static const char *const stored[] = {
        "DCP: group 0 lists norm.bias before blocks.0.lin.weight, the module the other way round: numbered as "
        "listed (--group-order stored)"};
    write_ids("names.pt", "model.pt", "names-stored-ids.pt", true, stored, 1);
    static const char *const two[] = {
        "DCP: group 1 lists norm.bias before blocks.0.lin.bias, the module the other way round: numbered in module "
        "order (--group-order stored keeps the list)"};
    write_ids("names2.pt", "model2.pt", "names2-ids.pt", false, two, 1);
    write_ids("flat.pt", "model2.pt", "flat-ids.pt", false, two, 1);
    /* form F's groups by their first member in module order, whatever the keys' order */
    write_ids("flat-reversed.pt", "model2.pt", "flat-reversed-ids.pt", false, two, 1);
    write_ids("nested.pt", "model.pt", "nested-ids.pt", false, one, 1);
    /* a safetensors model pairs by name; its names give the module order */
    with_names = true;
    write_ids("names.pt", "model.safetensors", "safetensors-ids.pt", false, one, 1);
    with_names = false;

    /* an id-keyed optimizer is refused, saying why */
    opened o, m;
    ckpt_pair_result *r = pair("ids.pt", "model.pt", NULL, 0, &o, &m);
    ckpt_pair_result_free(r);
    ckpt_buffer b = {0};
    ckpt_sink sink;
    ckpt_sink_buffer(&sink, &b);
    ckpt_error err = {0};
    ckpt_error_clear(&err);
    CHECK(ckpt_convert_to_ids(o.f, NULL, &sink, &err) == CKPT_E_INVALID_ARGUMENT);
    CHECK_STR(err.message, "--to ids converts an optimizer keyed by parameter names (FSDP's); this one is keyed by "
                           "ids already");
    ckpt_error_clear(&err);
    ckpt_buffer_free(&b);
    close_seed(&o);
    close_seed(&m);
}

/* A safetensors model keeps no module order: it pairs by name, but no positional output is
 * written from it without its names. */
static void test_unordered(void)
{
    opened o, m;
    ckpt_pair_result *r = pair("names.pt", "model.safetensors", NULL, 0, &o, &m);
    CHECK(r->pairs && !r->failures_len);
    ckpt_pair_result_free(r);
    ckpt_buffer b = {0};
    ckpt_sink sink;
    ckpt_sink_buffer(&sink, &b);
    ckpt_error err = {0};
    ckpt_error_clear(&err);
    CHECK(ckpt_convert_to_ids(o.f, NULL, &sink, &err) == CKPT_E_INVALID_ARGUMENT);
    CHECK_STR(err.message, "DCP: the model keeps no module order: give --names NAMES.json to number the parameters");
    ckpt_error_clear(&err);
    ckpt_convert_options co = {0};
    co.kind = CKPT_ADAM + 1;
    co.oldest = true;
    CHECK(ckpt_convert(o.f, &co, &sink, NULL, &err) == CKPT_E_INVALID_ARGUMENT);
    CHECK_STR(err.message, "DCP: the model keeps no module order: give --names NAMES.json to order the slots");
    ckpt_error_clear(&err);
    ckpt_buffer_free(&b);
    close_seed(&o);
    close_seed(&m);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: test_fsdp_names SEEDS_OUT\n");
        return 2;
    }
    dir = argv[1];
    static const test_case cases[] = {{"search", test_search},
                                      {"pair", test_pair},
                                      {"convert", test_convert},
                                      {"ids", test_ids},
                                      {"unordered", test_unordered}};
    return RUN_ALL(cases);
}
