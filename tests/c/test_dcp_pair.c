/* A DCP folder paired with the model it will be loaded into (format.md 12.8): torch 1.13's folder
 * (tests/fixtures/dcp-torch113) against the models dcp_pair_models.py wrote from its own model
 * part (torch.save state dicts, a safetensors file, the names alone), each verdict's failures by
 * code and exact text, in 12.8's order, and the note. */
#include "ds_folder.h"
#include "minijson.h"
#include "testutil.h"

static const char *fixture; /* tests/fixtures/dcp-torch113 */
static const char *models;  /* what dcp_pair_models.py wrote */

#define PASS_TEXT "DCP: the model pairs with this checkpoint by name: same names, shapes and ties"

typedef struct want {
    const char *model;     /* a file in models, or NULL: names.json as --names */
    const char *frozen[3]; /* names given as frozen (NULL-ended), none: not given */
    bool pairs;
    const char *failures[6]; /* NULL-ended */
    const char *warnings[2];
    const char *note;
} want;

static ckpt_file *open_bytes(const unsigned char *b, size_t len, ckpt_memory *mem)
{
    ckpt_source src;
    ckpt_source_memory(&src, mem, b, len);
    return ckpt_open(&src, NULL);
}

static char *path_in(const char *dir, const char *name)
{
    static char buf[4096];
    snprintf(buf, sizeof buf, "%s/%s", dir, name);
    return buf;
}

static void check_pair(const want *w)
{
    size_t dlen = 0, mlen = 0;
    unsigned char *db = dcp_folder_bytes(fixture, "ckpt", &dlen, NULL), *mb = NULL;
    CHECK(db != NULL);
    if (!db) return;
    static ckpt_memory dmem, mmem;
    ckpt_file *opt = open_bytes(db, dlen, &dmem), *model = NULL;
    ckpt_pair_options o = {0};
    jvalue *names = NULL;
    const char **list = NULL;
    if (w->model) {
        mb = ds_file_bytes(path_in(models, w->model), &mlen);
        CHECK(mb != NULL);
        if (mb) model = open_bytes(mb, mlen, &mmem);
    } else {
        char *text = json_read_file(path_in(models, "names.json"));
        names = text ? json_parse(text) : NULL;
        free(text);
        CHECK(names != NULL);
        list = calloc(names ? names->len + 1 : 1, sizeof *list);
        for (size_t k = 0; names && k < names->len; k++) list[k] = names->items[k]->text;
        o.names = list;
        o.name_count = names ? names->len : 0;
    }
    size_t nf = 0;
    while (nf < 3 && w->frozen[nf]) nf++;
    if (nf) {
        o.frozen = w->frozen;
        o.frozen_count = nf;
    }
    ckpt_pair_result *r = ckpt_pair_with(opt, model, &o, NULL, NULL);
    CHECK(r != NULL);
    if (r) {
        CHECK(r->error.code == 0);
        CHECK(r->pairs == w->pairs);
        size_t n = 0;
        while (w->failures[n]) n++;
        CHECK(r->failures_len == n);
        for (size_t k = 0; k < r->failures_len && k < n; k++) {
            CHECK(r->failures[k].code == CKPT_E_BY_NAME);
            CHECK_STR(r->failures[k].message, w->failures[k]);
        }
        n = 0;
        while (w->warnings[n]) n++;
        CHECK(r->warnings_len == n);
        for (size_t k = 0; k < r->warnings_len && k < n; k++) CHECK_STR(r->warnings[k], w->warnings[k]);
        CHECK_STR(r->note, w->note);
        char *json = ckpt_pair_json(r);
        jvalue *parsed = json ? json_parse(json) : NULL;
        CHECK(parsed != NULL);
        json_free(parsed);
        free(json);
        ckpt_pair_result_free(r);
    }
    free(list);
    json_free(names);
    if (model) ckpt_close(model);
    ckpt_close(opt);
    free(mb);
    free(db);
}

static void test_pairs(void)
{
    static const want w = {"model.pt", {NULL}, true, {NULL}, {NULL}, PASS_TEXT};
    check_pair(&w);
}

static void test_reordered(void)
{
    static const want w = {"reordered.pt", {NULL}, true, {NULL}, {NULL}, PASS_TEXT};
    check_pair(&w);
}

static void test_names_alone(void)
{
    static const want w = {NULL,   {NULL}, true,
                           {NULL}, {NULL}, "DCP: the model pairs with this checkpoint by name: same names"};
    check_pair(&w);
}

static void test_safetensors(void)
{
    static const want w = {"model.safetensors",
                           {NULL},
                           true,
                           {NULL},
                           {NULL},
                           "DCP: the model pairs with this checkpoint by name: same names and shapes"};
    check_pair(&w);
}

static void test_missing(void)
{
    static const want w = {"missing.pt",
                           {NULL},
                           false,
                           {"DCP: extra.bias is in the model, not in the checkpoint",
                            "DCP: l2.bias is in the checkpoint, not in the model", NULL},
                           {NULL},
                           "DCP: compared with the model by name: names, shapes and ties"};
    check_pair(&w);
}

static void test_shapes(void)
{
    static const want w = {"shapes.pt",
                           {NULL},
                           false,
                           {"DCP: l1.bias is #[7] in the checkpoint, #[8] in the model",
                            "DCP: l2.weight is #[6, 7] in the checkpoint, #[7, 6] in the model", NULL},
                           {NULL},
                           "DCP: compared with the model by name: names, shapes and ties"};
    check_pair(&w);
}

/* the model ties ln.bias to ln.weight and frozen.bias to l2.bias; the folder saves each pair's own
 * values, first different at the element dcp_pair_models.py found */
static void test_ties(void)
{
    char *text = json_read_file(path_in(models, "firsts.json"));
    jvalue *firsts = text ? json_parse(text) : NULL;
    free(text);
    CHECK(firsts != NULL);
    if (!firsts) return;
    char a[200], b[200];
    snprintf(a, sizeof a,
             "DCP: ln.bias is tied to ln.weight in the model, but the checkpoint saves different values (first at "
             "element %llu)",
             (unsigned long long)json_u64(json_get(firsts, "ln.bias")));
    snprintf(b, sizeof b,
             "DCP: frozen.bias is tied to l2.bias in the model, but the checkpoint saves different values (first at "
             "element %llu)",
             (unsigned long long)json_u64(json_get(firsts, "frozen.bias")));
    want w = {"tied.pt",    {NULL}, false,
              {a, b, NULL}, {NULL}, "DCP: compared with the model by name: names, shapes and ties"};
    check_pair(&w);
    json_free(firsts);
}

/* frozen names given: frozen.* have no state (as the folder says), l1.bias frozen has state (a
 * warning); not giving frozen.weight, which has no state, is a failure */
static void test_requires_grad(void)
{
    static const want w = {
        "model.pt",
        {"frozen.bias", "l1.bias", NULL},
        false,
        {"DCP: frozen.weight requires grad in the model but has no optimizer state in the checkpoint", NULL},
        {"DCP: l1.bias is frozen in the model but has optimizer state in the checkpoint", NULL},
        "DCP: compared with the model by name: names, shapes, ties and requires grad"};
    check_pair(&w);
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: test_dcp_pair FIXTURE MODELS\n");
        return 2;
    }
    fixture = argv[1];
    models = argv[2];
    static const test_case cases[] = {
        {"the folder's own model part pairs", test_pairs},
        {"a reordered model pairs (DCP loads by name)", test_reordered},
        {"the names alone", test_names_alone},
        {"a safetensors file: names and shapes", test_safetensors},
        {"1. names, both ways", test_missing},
        {"2. shapes", test_shapes},
        {"3. ties by storage against the saved values", test_ties},
        {"4. requires grad, with frozen names", test_requires_grad},
    };
    return RUN_ALL(cases);
}
